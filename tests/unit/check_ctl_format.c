/* check_ctl_format.c: wampscope-ctl's tables (fitted to 80 and 200 columns, with and without
 * colour), metadata lines, stats, and the shortest round-tripping floats. */
#include <float.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "ctl_format.h"

/* The row of one record: columns 0 (full width), MSG cut at width, no colour. */
static char *capture_styled(const char *json_text, const ctl_style *st, bool header)
{
    json_error_t e;
    json_t *v = json_loads(json_text, 0, &e);
    ck_assert_msg(v != NULL, "%s", e.text);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (header && ctl_format_is_action(v)) {
        ctl_format_actions_header(f, st);
    } else if (header) {
        ctl_format_records_header(f, st);
    }
    ctl_format_record_row(f, st, v);
    fclose(f);
    json_decref(v);
    return buf;
}

static char *capture_row(const char *json_text, int width)
{
    ctl_style st = {.columns = 0, .msg_width = width, .color = false};
    return capture_styled(json_text, &st, false);
}

START_TEST(test_record_row)
{
    char *row = capture_row("{\"seq\": 42, \"ts\": 1502829396.5978456, \"direction\": \"tx\","
                            "\"msg_type\": \"Event\", \"realm\": \"realm1\", \"session_id\": 77,"
                            "\"correlation\": \"d5d9bcec-a3eb-4f0e-875b-6933680bb546\","
                            "\"correlation_is_anchor\": false, \"correlation_is_last\": true,"
                            "\"uri\": \"com.example.on\", \"dropped\": \"queue_full\","
                            "\"msg\": [36, 1, 2, {}, [\"a long argument that gets cut\"]]}",
                            20);
    char seq[16], time[16], dir[8], type[16], realm[16], sess[24], uri[64], corr[16], flags[4];
    ck_assert_int_eq(sscanf(row, "%15s %15s %7s %15s %15s %23s %63s %15s %3s", seq, time, dir, type,
                            realm, sess, uri, corr, flags),
                     9);
    ck_assert_str_eq(seq, "42");
    ck_assert_str_eq(time, "20:36:36.597"); /* UTC time of day */
    ck_assert_str_eq(dir, "tx!");           /* ! = not delivered */
    ck_assert_str_eq(type, "Event");
    ck_assert_str_eq(realm, "realm1");
    ck_assert_str_eq(sess, "77");
    ck_assert_str_eq(uri, "com.example.on");
    ck_assert_str_eq(corr, "680bb546");
    ck_assert_str_eq(flags, "L");
    ck_assert_ptr_nonnull(strstr(row, "[36,1,2,{},[\"a lo...\n"));
    ck_assert_int_eq((int)strlen(strstr(row, "[36")), 20 + 1); /* width incl. "...", newline */
    free(row);
    /* A marker: no direction, session or correlation; the whole msg with width 0. */
    row = capture_row("{\"seq\": 0, \"ts\": 0.5, \"direction\": null, \"msg_type\": \"Marker\","
                      "\"realm\": null, \"session_id\": null, \"correlation\": null,"
                      "\"uri\": \"step 1\", \"msg\": {\"k\": 1}}",
                      0);
    ck_assert_ptr_nonnull(strstr(row, "00:00:00.500 -   Marker"));
    ck_assert_ptr_nonnull(strstr(row, "{\"k\":1}\n"));
    free(row);
}

END_TEST

START_TEST(test_action_row)
{
    const char *text =
            "{\"seq\": 7, \"pc\": 1.0, \"ts\": 1502829396.5978456, \"realm\": \"realm1\","
            "\"action\": \"call\", \"correlation\": \"d5d9bcec-a3eb-4f0e-875b-6933680bb546\","
            "\"uri\": \"com.example.add\", \"originator\": {\"session_id\": 77, \"authid\": \"a\","
            "\"authrole\": \"r\"}, \"responders\": [{\"session_id\": 8, \"authid\": null,"
            "\"authrole\": null}, {\"session_id\": 9, \"authid\": null, \"authrole\": null}],"
            "\"success\": false, \"duration\": 0.0123456, \"error\": \"com.example.overflow\"}";
    json_t *v = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(v);
    ck_assert(ctl_format_is_action(v));
    json_decref(v);
    char *row = capture_row(text, 20);
    char seq[16], time[16], action[16], realm[16], sess[24], uri[64], resp[8], ok[8], dur[16],
            unit[8], err[64];
    ck_assert_int_eq(sscanf(row, "%15s %15s %15s %15s %23s %63s %7s %7s %15s %7s %63s", seq, time,
                            action, realm, sess, uri, resp, ok, dur, unit, err),
                     11);
    ck_assert_str_eq(seq, "7");
    ck_assert_str_eq(time, "20:36:36.597");
    ck_assert_str_eq(action, "call");
    ck_assert_str_eq(realm, "realm1");
    ck_assert_str_eq(sess, "77"); /* the originator */
    ck_assert_str_eq(uri, "com.example.add");
    ck_assert_str_eq(resp, "2");
    ck_assert_str_eq(ok, "NO");
    ck_assert_str_eq(dur, "12.346");
    ck_assert_str_eq(unit, "ms");
    ck_assert_str_eq(err, "com.example.overflow"); /* the error URI, last */
    free(row);
    /* A long error URI is cut like a message; a success has none. */
    row = capture_row("{\"seq\": 8, \"action\": \"call\", \"success\": false, \"error\": "
                      "\"com.example.a.rather.long.error.uri\"}",
                      20);
    ck_assert_ptr_nonnull(strstr(row, " com.example.a.rat...\n"));
    free(row);
    row = capture_row("{\"seq\": 9, \"action\": \"call\", \"success\": true, \"error\": null}", 20);
    ck_assert_ptr_nonnull(strstr(row, " yes     -            -\n"));
    free(row);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ctl_style plain = {0};
    ctl_format_actions_header(f, &plain);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "ACTION"));
    ck_assert_ptr_nonnull(strstr(buf, "ORIGINATOR"));
    ck_assert_ptr_nonnull(strstr(buf, "DURATION"));
    ck_assert_ptr_nonnull(strstr(buf, "ERROR"));
    free(buf);
    /* A message record is not one. */
    v = json_loads("{\"seq\": 1, \"msg_type\": \"Call\"}", 0, NULL);
    ck_assert(!ctl_format_is_action(v));
    json_decref(v);
}

END_TEST

START_TEST(test_traces_and_meta)
{
    json_t *m =
            json_pack("{s:s, s:s, s:s, s:f, s:i, s:i, s:i, s:n, s:{s:i}}", "id", "trace1", "status",
                      "stopped", "started", "2026-01-02T03:04:05.678Z", "runtime", 12.34, "records",
                      9, "dropped", 2, "next_seq", 11, "ended", "options", "limit", 5);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ctl_style plain = {0};
    json_t *list = json_pack("[O]", m);
    ctl_format_traces(f, &plain, list);
    json_decref(list);
    ctl_format_meta(f, m);
    fclose(f);
    char *row = strchr(buf, '\n') + 1;
    char id[32], status[16], started[32], runtime[16];
    int records, dropped;
    ck_assert_int_eq(sscanf(row, "%31s %15s %d %d %31s %15s", id, status, &records, &dropped,
                            started, runtime),
                     6);
    ck_assert_str_eq(id, "trace1");
    ck_assert_str_eq(status, "stopped");
    ck_assert_int_eq(records, 9);
    ck_assert_int_eq(dropped, 2);
    ck_assert_str_eq(started, "2026-01-02T03:04:05.678Z");
    ck_assert_str_eq(runtime, "12.3s");
    ck_assert_ptr_nonnull(strstr(buf, "\nrecords        9\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\nended          -\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\nruntime        12.34\n")); /* shortest float */
    ck_assert_ptr_nonnull(strstr(buf, "\noptions        {\"limit\":5}\n"));
    ck_assert_ptr_null(strstr(buf, "\nlost")); /* (only a trace read from the wire says it) */
    ck_assert_ptr_nonnull(
            strstr(buf, " 2026-01-02T03:04:05.678Z      12.3s\n")); /* right-aligned */
    free(buf);
    /* The flight recorder read from the wire capture says what it lost. */
    json_object_set_new(m, "lost", json_integer(7));
    f = open_memstream(&buf, &len);
    ctl_format_meta(f, m);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\ndropped        2\nlost           7\n"));
    json_object_del(m, "lost");
    free(buf);
    /* A persisted trace says how far its files hold it, and its gaps. */
    json_object_set_new(m, "durable_to_seq", json_integer(10));
    json_object_set_new(
            m, "gaps",
            json_pack("[{s:i, s:i, s:s}]", "from_seq", 3, "to_seq", 4, "reason", "io_error"));
    f = open_memstream(&buf, &len);
    ctl_format_meta(f, m);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\ndropped        2\ndurable_to_seq 10\ngaps           "
                                      "[{\"from_seq\":3,\"to_seq\":4,\"reason\":\"io_error\"}]\n"));
    json_object_del(m, "durable_to_seq");
    json_object_del(m, "gaps");
    free(buf);
    /* A long id: whole when the table fits (ID as wide as it), cut at 80 columns. */
    json_object_set_new(m, "id",
                        json_string("a-trace-with-a-rather-long-name-that-goes-on-and-on"));
    list = json_pack("[O, {s:s, s:s, s:f}]", m, "id", "t2", "status", "running", "runtime", 1.0);
    for (int columns = 80; columns <= 200; columns += 120) {
        ctl_style st = {.columns = columns, .color = false};
        buf = NULL;
        f = open_memstream(&buf, &len);
        ctl_format_traces(f, &st, list);
        fclose(f);
        ck_assert_ptr_nonnull(strstr(buf, columns == 80 ? "\na-trace-wi... stopped "
                                                        : "\na-trace-with-a-rather-long-name-that-"
                                                          "goes-on-and-on stopped "));
        ck_assert_ptr_nonnull(strstr(
                buf, columns == 80 ? "\nt2            running "
                                   : "\nt2"
                                     "                                                  running "));
        for (char *p = buf; *p;) {
            char *nl = strchr(p, '\n');
            ck_assert_int_le((int)(nl - p), columns);
            p = nl + 1;
        }
        free(buf);
    }
    json_decref(list);
    json_decref(m);
}

END_TEST

/* A message record with a long URI and a long message, and an Error record. */
static const char event_rec[] =
        "{\"seq\": 12345, \"ts\": 1502829396.5978456, \"direction\": \"rx\","
        "\"msg_type\": \"Publish\", \"realm\": \"a.rather.long.realm.name\","
        "\"session_id\": 4391477441301702, \"correlation\": "
        "\"d5d9bcec-a3eb-4f0e-875b-6933680bb546\","
        "\"correlation_is_anchor\": true, \"correlation_is_last\": false,"
        "\"uri\": \"com.example.a.very.long.topic.name.that.goes.on.and.on\","
        "\"msg\": [16, 2, {\"acknowledge\": true}, \"com.example.a.very.long.topic.name\","
        "[\"an argument long enough to overflow any terminal: 0123456789012345678901234567890123456"
        "789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456"
        "789\"]]}";
static const char error_rec[] =
        "{\"seq\": 3, \"ts\": 1.0, \"direction\": \"tx\", \"msg_type\": \"Error\","
        "\"realm\": \"realm1\", \"session_id\": 77, \"correlation\": null,"
        "\"uri\": \"com.example.add\", \"dropped\": \"queue_full\","
        "\"msg\": [8, 48, 4, {}, \"wamp.error.no_such_procedure\", [\"no callee for it at all, and "
        "a long explanation that goes on past two hundred "
        "columns for sure: "
        "0123456789012345678901234567890123456789012345678901234567890123456789\"]]}";

/* Characters of a line: UTF-8 code points, escape sequences (ESC [ ... m) not counted. */
static size_t visible(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\033') {
            while (i < n && s[i] != 'm') {
                i++;
            }
            continue;
        }
        count += ((unsigned char)s[i] & 0xC0) != 0x80;
    }
    return count;
}

/* s without its escape sequences (owned). */
static char *strip_sgr(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    for (; *s; s++) {
        if (*s == '\033') {
            while (*s && *s != 'm') {
                s++;
            }
            continue;
        }
        *o++ = *s;
    }
    *o = '\0';
    return out;
}

/* No line of text is wider than width; with full, the last (a row with a long message) is
 * exactly that wide. */
static void assert_lines_width(const char *text, size_t width, bool full)
{
    int lines = 0;
    size_t last = 0;
    for (const char *p = text; *p; lines++) {
        const char *nl = strchr(p, '\n');
        ck_assert_ptr_nonnull(nl);
        last = visible(p, (size_t)(nl - p));
        ck_assert_msg(last <= width, "line %d is %zu wide, over %zu: %.*s", lines, last, width,
                      (int)(nl - p), p);
        p = nl + 1;
    }
    ck_assert_int_ge(lines, 2);
    if (full) {
        ck_assert_int_eq((long)last, (long)width);
    }
}

START_TEST(test_fit_80_columns)
{
    ctl_style st = {.columns = 80, .color = false};
    char *out = capture_styled(event_rec, &st, true);
    assert_lines_width(out, 80, true);
    /* Narrow: REALM, CORR and SESSION left out, URI and MSG cut with "...". */
    ck_assert_ptr_null(strstr(out, "REALM"));
    ck_assert_ptr_null(strstr(out, "CORR"));
    ck_assert_ptr_null(strstr(out, "SESSION"));
    ck_assert_ptr_null(strstr(out, "4391477441301702"));
    ck_assert_ptr_nonnull(strstr(out, "   SEQ TIME         DIR TYPE         URI"));
    ck_assert_ptr_nonnull(
            strstr(out, " 12345 20:36:36.597 rx  Publish      com.example.a.very.... "));
    ck_assert_ptr_nonnull(strstr(out, " [16,2,{\"acknowled...\n"));
    free(out);
    /* An action trace at 80 columns: REALM, ORIGINATOR, RESP and DURATION go, ERROR keeps 20
     * columns. */
    out = capture_styled("{\"seq\": 7, \"ts\": 1.5, \"realm\": \"realm1\", \"action\": \"call\","
                         "\"uri\": \"com.example.add\", \"originator\": {\"session_id\": 77},"
                         "\"responders\": [], \"success\": false, \"duration\": 0.5,"
                         "\"error\": \"wamp.error.no_such_procedure\"}",
                         &st, true);
    assert_lines_width(out, 80, false);
    ck_assert_ptr_null(strstr(out, "ORIGINATOR"));
    ck_assert_ptr_null(strstr(out, "DURATION"));
    ck_assert_ptr_nonnull(strstr(out, " URI                 SUCCESS ERROR\n"));
    ck_assert_ptr_nonnull(
            strstr(out, " call        com.example.add     NO      wamp.error.no_suc...\n"));
    free(out);
    /* At 200 columns every column and the whole error URI. */
    ctl_style st200 = {.columns = 200, .color = false};
    out = capture_styled("{\"seq\": 7, \"ts\": 1.5, \"realm\": \"realm1\", \"action\": \"call\","
                         "\"uri\": \"com.example.add\", \"originator\": {\"session_id\": 77},"
                         "\"responders\": [], \"success\": false, \"duration\": 0.5,"
                         "\"error\": \"wamp.error.no_such_procedure\"}",
                         &st200, true);
    assert_lines_width(out, 200, false);
    ck_assert_ptr_nonnull(strstr(out, "RESP SUCCESS DURATION     ERROR\n"));
    ck_assert_ptr_nonnull(strstr(out, " NO      500.000 ms   wamp.error.no_such_procedure\n"));
    free(out);
}

END_TEST

/* Where in the line at p (up to its newline) the text word ends; -1 when absent. */
static long end_of(const char *p, const char *word)
{
    const char *nl = strchr(p, '\n');
    const char *w = strstr(p, word);
    return w && (!nl || w < nl) ? (long)(w - p + (long)strlen(word)) : -1;
}

START_TEST(test_seq_column_fits_the_seqs)
{
    /* A busy flight recorder's seqs have seven digits and more: the SEQ column widens to the
     * largest seq shown, so that the header and every row line up (right-aligned numbers). */
    const char *recs =
            "[{\"seq\": 7, \"ts\": 1.5, \"direction\": \"rx\", \"msg_type\": \"Call\"},"
            " {\"seq\": 12345678, \"ts\": 1.5, \"direction\": \"tx\", \"msg_type\": \"Result\"}]";
    json_error_t e;
    json_t *all = json_loads(recs, 0, &e);
    ck_assert_ptr_nonnull(all);
    ctl_style st = {.columns = 0, .msg_width = 20, .color = false};
    ctl_format_fit_seq(&st, all);
    ck_assert_int_eq(st.seq_width, 8);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ctl_format_records_header(f, &st);
    ctl_format_record_row(f, &st, json_array_get(all, 0));
    ctl_format_record_row(f, &st, json_array_get(all, 1));
    fclose(f);
    const char *row1 = strchr(buf, '\n') + 1;
    const char *row2 = strchr(row1, '\n') + 1;
    ck_assert_int_eq(end_of(buf, "SEQ"), 8);
    ck_assert_int_eq(end_of(row1, "7"), 8);
    ck_assert_int_eq(end_of(row2, "12345678"), 8);
    ck_assert_int_eq(end_of(buf, "TIME"), 8 + 1 + 4);
    ck_assert_int_eq(end_of(row1, " 00:00:01.500"), 8 + 1 + 12);
    ck_assert_int_eq(end_of(row2, " 00:00:01.500"), 8 + 1 + 12);
    ck_assert_int_eq(end_of(row1, " rx"), end_of(row2, " tx"));
    free(buf);
    /* Seqs of six digits or fewer keep the column at 6. */
    ctl_style narrow = {.columns = 0, .msg_width = 20, .color = false};
    json_array_remove(all, 1);
    ctl_format_fit_seq(&narrow, all);
    ck_assert_int_le(narrow.seq_width, 6);
    json_decref(all);
}

END_TEST

START_TEST(test_fit_200_columns)
{
    ctl_style st = {.columns = 200, .color = false};
    char *out = capture_styled(event_rec, &st, true);
    assert_lines_width(out, 200, true);
    /* Wide enough for every column at its full width; only MSG is cut. */
    ck_assert_ptr_nonnull(strstr(out, "REALM      SESSION          URI"));
    ck_assert_ptr_nonnull(
            strstr(out, " 4391477441301702 com.example.a.very.long.topic... 680bb546 A "));
    ck_assert_ptr_nonnull(strstr(out, "...\n"));
    free(out);
    /* Full width (--wide): nothing cut, the whole message. */
    ctl_style wide = {.columns = 0, .msg_width = 0};
    out = capture_styled(event_rec, &wide, false);
    ck_assert_ptr_nonnull(strstr(out, "com.example.a.very.long.topic.name.that.goes.on.and.on "));
    ck_assert_ptr_nonnull(strstr(out, "3456789\"]]\n"));
    ck_assert_ptr_null(strstr(out, "..."));
    free(out);
}

END_TEST

START_TEST(test_colour)
{
    for (int columns = 80; columns <= 200; columns += 120) {
        ctl_style plain = {.columns = columns, .color = false};
        ctl_style colour = {.columns = columns, .color = true};
        for (int k = 0; k < 2; k++) {
            const char *rec = k ? error_rec : event_rec;
            char *a = capture_styled(rec, &plain, true);
            char *b = capture_styled(rec, &colour, true);
            ck_assert_ptr_null(strchr(a, '\033')); /* no colour: no escape at all */
            ck_assert_ptr_nonnull(strchr(b, '\033'));
            assert_lines_width(b, (size_t)columns, true); /* colour changes no width */
            char *stripped = strip_sgr(b);
            ck_assert_str_eq(stripped, a);
            free(stripped);
            ck_assert_ptr_nonnull(strstr(b, "\033[1mSEQ\033[0m")); /* bold header */
            if (k == 0) {
                ck_assert_ptr_nonnull(strstr(b, "\033[36mrx\033[0m")); /* rx cyan */
            } else {
                ck_assert_ptr_nonnull(strstr(b, "\033[33mtx!\033[0m"));   /* undelivered */
                ck_assert_ptr_nonnull(strstr(b, "\033[31mError\033[0m")); /* errors red */
                ck_assert_ptr_nonnull(strstr(b, "\033[31mwamp.error.no_suc"));
            }
            free(a);
            free(b);
        }
    }
    /* tx cyan never, green; a failed action's SUCCESS bold red. */
    ctl_style colour = {.columns = 200, .color = true};
    char *b = capture_styled("{\"seq\": 1, \"ts\": 1.0, \"direction\": \"tx\", \"msg_type\": "
                             "\"Result\", \"msg\": [50, 1, {}]}",
                             &colour, false);
    ck_assert_ptr_nonnull(strstr(b, "\033[32mtx\033[0m"));
    free(b);
    b = capture_styled("{\"seq\": 7, \"ts\": 1.5, \"action\": \"call\", \"success\": false,"
                       "\"error\": \"com.example.oops\"}",
                       &colour, false);
    ck_assert_ptr_nonnull(strstr(b, "\033[1;31mNO\033[0m"));
    ck_assert_ptr_nonnull(strstr(b, "\033[31mcom.example.oops\033[0m\n")); /* its error red */
    ck_assert_ptr_nonnull(strstr(b, "\033[31mcall\033[0m"));
    free(b);
}

END_TEST

START_TEST(test_error_uri_and_control_chars)
{
    char *row = capture_row(error_rec, 0);
    ck_assert_ptr_nonnull(strstr(row, " wamp.error.no_such_procedure [8,48,4,{},"));
    free(row);
    /* Even when the message is cut, the error URI shows. */
    row = capture_row(error_rec, 40);
    ck_assert_ptr_nonnull(strstr(row, " wamp.error.no_such_procedure [8,48,4,...\n"));
    free(row);
    row = capture_row("{\"seq\": 1, \"msg_type\": \"Abort\", \"direction\": \"tx\","
                      "\"msg\": [3, {\"message\": \"no\"}, \"wamp.error.not_authorized\"]}",
                      0);
    ck_assert_ptr_nonnull(strstr(row, " wamp.error.not_authorized [3,{\"message\":\"no\"},"));
    free(row);
    /* A URI with an escape sequence reaches the terminal as '?'. */
    row = capture_row("{\"seq\": 1, \"msg_type\": \"Call\", \"uri\": \"a\\u001b[2Jb\","
                      "\"realm\": \"r\\u0007\", \"msg\": [48, 1, {}, \"a\\u001b[2Jb\"]}",
                      0);
    ck_assert_ptr_null(strchr(row, '\033'));
    ck_assert_ptr_null(strchr(row, '\007'));
    ck_assert_ptr_nonnull(strstr(row, " a?[2Jb "));
    ck_assert_ptr_nonnull(strstr(row, " r? "));
    ck_assert_ptr_nonnull(strstr(row, "\"a\\u001B[2Jb\"]")); /* JSON-escaped in MSG */
    free(row);
    /* C1 controls in UTF-8 (U+009B is CSI, U+009D OSC, U+009C ST), which terminals act on as
     * they do on ESC [ and ESC ], and a bidirectional override (U+202E): '?' in the columns,
     * a \\u escape in the message's JSON. Other non-ASCII text shows as it is. */
    row = capture_row("{\"seq\": 1, \"msg_type\": \"Publish\", \"uri\": \"com.\\u009b31mred\","
                      "\"realm\": \"r\\u202e\\u00e9\", \"msg\": [16, 1, {}, \"t\", "
                      "[\"\\u009d0;T\\u009c\\u009b2J\"]]}",
                      0);
    ck_assert_ptr_null(strstr(row, "\xc2\x9b"));
    ck_assert_ptr_null(strstr(row, "\xc2\x9c"));
    ck_assert_ptr_null(strstr(row, "\xc2\x9d"));
    ck_assert_ptr_null(strstr(row, "\xe2\x80\xae"));
    ck_assert_ptr_nonnull(strstr(row, " com.?31mred "));
    ck_assert_ptr_nonnull(strstr(row, " r?\xc3\xa9 "));
    ck_assert_ptr_nonnull(strstr(row, "[\"\\u009d0;T\\u009c\\u009b2J\"]"));
    free(row);
}

END_TEST

START_TEST(test_shortest_floats)
{
    static const struct {
        double v;
        const char *text;
    } cases[] = {
            {0.1, "0.1"},
            {1.0, "1.0"},
            {-2.5, "-2.5"},
            {100.0, "100.0"},
            {8626.879202, "8626.879202"},
            {1795326157.1498864, "1795326157.1498864"},
            {0.0123456, "0.0123456"},
            {1e300, "1e+300"},
            {2.5e-05, "2.5e-05"},
            {1.0 / 3.0, "0.3333333333333333"},
            {5e-324, "5e-324"},
            {DBL_MAX, "1.7976931348623157e+308"},
    };

    char buf[40];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_str_eq(ctl_format_real(buf, sizeof(buf), cases[i].v), cases[i].text);
    }
    /* Every text reads back equal, and one digit less would not (for a spread of values). */
    double v = 1e-7;
    for (int i = 0; i < 2000; i++, v = v * 1.0137 + 1e-9 * i) {
        ctl_format_real(buf, sizeof(buf), v);
        ck_assert(strtod(buf, NULL) == v);
        char shorter[40];
        int p = 0;
        for (int d = 1; d <= 17; d++) {
            snprintf(shorter, sizeof(shorter), "%.*g", d, v);
            if (strtod(shorter, NULL) == v) {
                p = d;
                break;
            }
        }
        snprintf(shorter, sizeof(shorter), "%.*g", p, v);
        ck_assert_msg(strncmp(buf, shorter, strlen(shorter)) == 0, "%s vs %s", buf, shorter);
    }
    /* JSON text: compact and pretty, reals shortest, strings escaped, order kept. */
    json_t *j = json_loads("{\"b\": [0.1, 2.5e-05, true, null, \"x\\n\\u0000y\"], \"a\": {},"
                           "\"c\": [], \"ts\": 1795326157.1498864, \"n\": -7}",
                           JSON_ALLOW_NUL, NULL);
    ck_assert_ptr_nonnull(j);
    char *s = ctl_format_json(j, false);
    ck_assert_str_eq(s, "{\"b\":[0.1,2.5e-05,true,null,\"x\\n\\u0000y\"],\"a\":{},\"c\":[],"
                        "\"ts\":1795326157.1498864,\"n\":-7}");
    free(s);
    s = ctl_format_json(j, true);
    ck_assert_str_eq(s, "{\n  \"b\": [\n    0.1,\n    2.5e-05,\n    true,\n    null,\n"
                        "    \"x\\n\\u0000y\"\n  ],\n  \"a\": {},\n  \"c\": [],\n"
                        "  \"ts\": 1795326157.1498864,\n  \"n\": -7\n}");
    json_t *back = json_loads(s, JSON_ALLOW_NUL, NULL);
    ck_assert(json_equal(back, j));
    json_decref(back);
    free(s);
    json_decref(j);
}

END_TEST

/* What stats shows of w0, then "--", then of w1 two seconds later (plain, 80 columns); free it. */
static char *two_samples(const char *node, const json_t *w0, const json_t *w1)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ctl_style plain = {.columns = 80};
    ctl_format_stats(f, &plain, node, w0, NULL, 0);
    fputs("--\n", f);
    ctl_format_stats(f, &plain, node, w1, w0, 2.0);
    fclose(f);
    return buf;
}

START_TEST(test_stats)
{
    json_t *w0 = json_loads(
            "{\"id\": \"router1\", \"pid\": 42, \"uptime\": 93784.5, \"realms\": [\"realm1\","
            "\"mgmt\"], \"stats\": {\"sessions\": 3, \"sessions_opened\": 10, \"messages_rx\": 100,"
            "\"queued_bytes\": 0, \"brand_new_counter\": 5}}",
            0, NULL);
    json_t *w1 = json_deep_copy(w0);
    json_t *st1 = json_object_get(w1, "stats");
    json_object_set_new(st1, "messages_rx", json_integer(130));
    json_object_set_new(st1, "sessions", json_integer(4));
    char *buf = two_samples("node1", w0, w1);
    ck_assert_ptr_nonnull(strstr(buf, "worker router1 on node node1, pid 42, up 1d 02h 03m 04s, "
                                      "realms: realm1, mgmt\n"));
    char *second = strstr(buf, "--\n");
    ck_assert_ptr_nonnull(second);
    /* Gauges under NOW, counters under SINCE START (unknown keys are counters), in order. */
    const char *now = strstr(buf, "NOW"), *since = strstr(buf, "SINCE START");
    ck_assert_ptr_nonnull(now);
    ck_assert_ptr_nonnull(since);
    ck_assert(now < strstr(buf, "\nsessions ") && strstr(buf, "\nsessions ") < since);
    ck_assert(now < strstr(buf, "\nqueued_bytes ") && strstr(buf, "\nqueued_bytes ") < since);
    ck_assert(since < strstr(buf, "\nsessions_opened ") &&
              strstr(buf, "\nsessions_opened ") < strstr(buf, "\nmessages_rx ") &&
              strstr(buf, "\nmessages_rx ") < strstr(buf, "\nbrand_new_counter "));
    ck_assert(strstr(buf, "RATE/s") > second); /* no rate in the first sample */
    ck_assert_ptr_nonnull(strstr(second, "RATE/s"));
    ck_assert_ptr_nonnull(
            strstr(second, "\nmessages_rx                             130       15.0\n"));
    ck_assert_ptr_nonnull(
            strstr(second, "\nsessions_opened                          10        0.0\n"));
    ck_assert_ptr_nonnull(strstr(second, "\nsessions                                  4\n"));
    ck_assert_ptr_null(strchr(buf, '\033'));
    free(buf);
    json_decref(w0);
    json_decref(w1);
}

END_TEST

START_TEST(test_stats_names_longer_than_the_column)
{
    /* A section whose names are longer than the first column's 28 characters widens it: the
     * values stay in one column. */
    json_t *w = json_loads("{\"id\": \"r\", \"stats\": {\"handshakes_refused_subprotocol\": 2,"
                           "\"x\": 1, \"sessions\": 3}}",
                           0, NULL);
    char *buf = two_samples("n", w, w);
    const char *since = strstr(buf, "SINCE START");
    ck_assert_ptr_nonnull(since);
    ck_assert_ptr_nonnull(strstr(since, "\nhandshakes_refused_subprotocol              2"));
    ck_assert_ptr_nonnull(strstr(since, "\nx                                           1"));
    /* The gauges' section keeps its width. */
    ck_assert_ptr_nonnull(strstr(buf, "\nsessions                                  3\n"));
    free(buf);
    json_decref(w);
}

END_TEST

START_TEST(test_stats_of_a_cluster_node)
{
    json_t *w0 = json_loads(
            "{\"id\": \"router1\", \"pid\": 42, \"uptime\": 5, \"realms\": [\"realm1\"],"
            "\"stats\": {\"sessions\": 1, \"cluster\": {\"state\": \"up\", \"reconnects\": 0,"
            "\"messages_in\": 40, \"nodes\": 3, \"live_interested_nodes\": 0,"
            "\"clock_offsets\": {\"node_b\": -0.000412, \"node_c\": 5.0021}}}}",
            0, NULL);
    ck_assert_ptr_nonnull(w0);
    json_t *w1 = json_deep_copy(w0);
    json_t *cl1 = json_object_get(json_object_get(w1, "stats"), "cluster");
    json_object_set_new(cl1, "messages_in", json_integer(60));
    char *buf = two_samples("node_a", w0, w1);
    /* After the router's sections: the link's state, its gauges, its counters (with rates from
     * the second sample on), then each node's clock offset; nothing of the router's is lost. */
    char *second = strstr(buf, "--\n");
    ck_assert_ptr_nonnull(second);
    const char *link = strstr(buf, "\ncluster link up\n");
    ck_assert_ptr_nonnull(link);
    ck_assert(strstr(buf, "\nsessions ") < link);
    ck_assert(link < strstr(buf, "\nnodes                                     3\n"));
    ck_assert(strstr(link, "\nnodes ") < strstr(link, "\nmessages_in "));
    ck_assert_ptr_nonnull(
            strstr(second, "\nmessages_in                              60       10.0\n"));
    ck_assert_ptr_nonnull(strstr(link, "\nCLOCK OF NODE                    OFFSET (s)\n"));
    ck_assert_ptr_nonnull(strstr(link, "\nnode_b                            -0.000412\n"));
    ck_assert_ptr_nonnull(strstr(link, "\nnode_c                            +5.002100\n"));
    ck_assert_ptr_null(strstr(buf, "clock_offsets"));
    ck_assert_ptr_null(strstr(buf, "\nstate"));
    free(buf);
    json_decref(w0);
    json_decref(w1);
}

END_TEST

static Suite *ctl_format_suite(void)
{
    Suite *s = suite_create("ctl_format");
    TCase *tc = tcase_create("format");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_record_row);
    tcase_add_test(tc, test_action_row);
    tcase_add_test(tc, test_traces_and_meta);
    tcase_add_test(tc, test_fit_80_columns);
    tcase_add_test(tc, test_fit_200_columns);
    tcase_add_test(tc, test_seq_column_fits_the_seqs);
    tcase_add_test(tc, test_colour);
    tcase_add_test(tc, test_error_uri_and_control_chars);
    tcase_add_test(tc, test_shortest_floats);
    tcase_add_test(tc, test_stats);
    tcase_add_test(tc, test_stats_of_a_cluster_node);
    tcase_add_test(tc, test_stats_names_longer_than_the_column);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ctl_format_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
