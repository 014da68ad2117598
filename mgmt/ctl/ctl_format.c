/* ctl_format.c: see ctl_format.h. */
#include "ctl_format.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wamp_ws.h"

#define SGR_RESET "\033[0m"
#define SGR_BOLD  "\033[1m"
#define SGR_RED   "\033[31m"
#define SGR_GREEN "\033[32m"
#define SGR_YEL   "\033[33m"
#define SGR_CYAN  "\033[36m"
#define SGR_FAIL  "\033[1;31m"

/* One table column. width: its full width (the last column's: its minimum when fitting);
 * min < width: shrinkable to min; drop k > 0: the k-th column a narrow table leaves out. */
typedef struct col {
    const char *name;
    int width;
    int min;
    int drop;
    bool right;
} col;

#define MAX_COLS 10

static const col record_cols[] = {
        {"SEQ", 6, 6, 0, true},     {"TIME", 12, 12, 0, false}, {"DIR", 3, 3, 0, false},
        {"TYPE", 12, 12, 0, false}, {"REALM", 10, 6, 1, false}, {"SESSION", 16, 16, 3, false},
        {"URI", 32, 12, 0, false},  {"CORR", 10, 10, 2, false}, {"MSG", 20, 20, 0, false},
};

static const col action_cols[] = {
        {"SEQ", 6, 6, 0, true},           {"TIME", 12, 12, 0, false},
        {"ACTION", 11, 11, 0, false},     {"REALM", 10, 6, 1, false},
        {"ORIGINATOR", 16, 16, 2, false}, {"URI", 32, 12, 0, false},
        {"RESP", 4, 4, 3, true},          {"SUCCESS", 7, 7, 0, false},
        {"DURATION", 12, 12, 4, false},   {"ERROR", 20, 20, 0, false},
};

static const col trace_cols[] = {
        {"ID", 20, 10, 0, false},     {"STATUS", 8, 8, 0, false},    {"RECORDS", 10, 10, 0, true},
        {"DROPPED", 10, 10, 0, true}, {"STARTED", 24, 24, 1, false}, {"RUNTIME", 10, 10, 0, true},
};

#define NCOLS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Column widths for st: w[i] = -1 for a dropped column; the last column's 0 = unlimited. A
 * right-aligned last column (a number) is never flexible: it keeps its width. */
static void fit(const col *cols, int n, const ctl_style *st, int *w)
{
    int maxdrop = 0;
    for (int i = 0; i < n; i++) {
        maxdrop = cols[i].drop > maxdrop ? cols[i].drop : maxdrop;
    }
    if (st->columns <= 0) {
        for (int i = 0; i < n - 1; i++) {
            w[i] = cols[i].width;
        }
        w[n - 1] = cols[n - 1].right ? cols[n - 1].width : st->msg_width > 0 ? st->msg_width : 0;
        return;
    }
    int last_min = cols[n - 1].width;
    for (int k = 0;; k++) {
        int full = 0, least = 0, kept = 0;
        for (int i = 0; i < n - 1; i++) {
            w[i] = cols[i].drop && cols[i].drop <= k ? -1 : cols[i].width;
            if (w[i] >= 0) {
                full += cols[i].width;
                least += cols[i].min;
                kept++;
            }
        }
        int room = st->columns - kept; /* one space after every kept column but the last */
        if (room - full >= last_min) {
            w[n - 1] = cols[n - 1].right ? last_min : room - full;
            return;
        }
        if (room - least >= last_min || k >= maxdrop) {
            int slack = room - least - last_min;
            for (int i = 0; i < n - 1; i++) {
                if (w[i] < 0) {
                    continue;
                }
                w[i] = cols[i].min;
                int add = cols[i].width - cols[i].min;
                add = add < slack ? add : (slack > 0 ? slack : 0);
                w[i] += add;
                slack -= add;
            }
            w[n - 1] = last_min + (slack > 0 ? slack : 0);
            return;
        }
    }
}

/* Characters (UTF-8 code points) in s. */
static size_t chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        n += ((unsigned char)*s & 0xC0) != 0x80;
    }
    return n;
}

/* Bytes of s that hold its first n characters. */
static size_t prefix_bytes(const char *s, size_t n)
{
    size_t i = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (n == 0) {
                break;
            }
            n--;
        }
    }
    return i;
}

/* Writes len bytes of s with control characters (C0, DEL, C1) and bidirectional controls as
 * '?': text from the wire never drives the terminal. */
static void put_clean(FILE *out, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len; i++) {
        unsigned cp;
        size_t k = wamp_utf8_term_control(u + i, len - i, &cp);
        if (k) {
            fputc('?', out);
            i += k - 1;
            continue;
        }
        fputc(u[i] < 0x20 || u[i] == 0x7f ? '?' : u[i], out);
    }
}

void ctl_format_vclean(FILE *out, const char *fmt, va_list ap)
{
    char stack[1024];
    char *text = stack;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(stack, sizeof(stack), fmt, ap);
    if (n >= (int)sizeof(stack)) {
        size_t cap = n < 65536 ? (size_t)n + 1 : 65536;
        text = malloc(cap);
        if (text) {
            n = vsnprintf(text, cap, fmt, ap2);
            n = n < (int)cap ? n : (int)cap - 1;
        } else {
            text = stack;
            n = (int)sizeof(stack) - 1;
        }
    }
    va_end(ap2);
    if (n > 0) {
        put_clean(out, text, (size_t)n);
    }
    if (text != stack) {
        free(text);
    }
}

void ctl_format_clean(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctl_format_vclean(out, fmt, ap);
    va_end(ap);
}

/* Writes JSON text (jansson's, which escapes C0 controls) with the code points
 * wamp_utf8_term_control() finds escaped as \uXXXX too: the same JSON, and nothing in it drives the
 * terminal. They can only be inside strings, where the escape means the same. */
static bool put_json_text(FILE *out, const char *text)
{
    const unsigned char *u = (const unsigned char *)text;
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        unsigned cp;
        size_t k = wamp_utf8_term_control(u + i, n - i, &cp);
        if (k ? fprintf(out, "\\u%04x", cp) < 0 : fputc(u[i], out) == EOF) {
            return false;
        }
        i += k ? k - 1 : 0;
    }
    return true;
}

/* One cell: s in width w (0: whole, no padding), cut with "..." when longer (and may_cut),
 * padded unless it is the last; sgr (may be NULL) colours the text, not the padding. */
static void put_cell(FILE *out, const ctl_style *st, const char *s, int w, bool may_cut, bool right,
                     bool last, const char *sgr)
{
    size_t n = chars(s);
    size_t keep = n, len = strlen(s);
    bool cut = may_cut && w > 0 && n > (size_t)w;
    if (cut) {
        keep = w > 3 ? (size_t)w - 3 : (size_t)w;
        len = prefix_bytes(s, keep);
    }
    int pad = w > 0 && !cut && (size_t)w > n ? w - (int)n : 0;
    if (right) {
        fprintf(out, "%*s", pad, "");
    }
    if (sgr && st->color) {
        fputs(sgr, out);
    }
    put_clean(out, s, len);
    if (cut && w > 3) {
        fputs("...", out);
    }
    if (sgr && st->color) {
        fputs(SGR_RESET, out);
    }
    if (!right && !last) {
        fprintf(out, "%*s", pad, "");
    }
}

/* One line of a table: text[i] in column i (sgr[i] its colour, NULL: none). */
static void put_row(FILE *out, const ctl_style *st, const col *cols, int n, const char *const *text,
                    const char *const *sgr)
{
    int w[MAX_COLS];
    fit(cols, n, st, w);
    bool first = true;
    for (int i = 0; i < n; i++) {
        if (w[i] < 0) {
            continue;
        }
        if (!first) {
            fputc(' ', out);
        }
        first = false;
        /* Full width (columns 0): only the last column is ever cut. */
        put_cell(out, st, text[i], w[i], st->columns > 0 || i == n - 1, cols[i].right, i == n - 1,
                 sgr ? sgr[i] : NULL);
    }
    fputc('\n', out);
}

static void put_header(FILE *out, const ctl_style *st, const col *cols, int n)
{
    const char *text[MAX_COLS], *sgr[MAX_COLS];
    for (int i = 0; i < n; i++) {
        text[i] = cols[i].name;
        sgr[i] = SGR_BOLD;
    }
    put_row(out, st, cols, n, text, sgr);
}

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : dflt;
}

static long long int_of(const json_t *obj, const char *key)
{
    return (long long)json_integer_value(json_object_get(obj, key));
}

/* --- Shortest floats and JSON text ------------------------------------------------------------ */

char *ctl_format_real(char *buf, size_t n, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "null"); /* JSON has no NaN or infinity (jansson never holds them) */
        return buf;
    }
    /* %g writes an exponent when the precision is below the integer digits (100 at precision 1
     * is "1e+02"): up to 17 digits, start with that many. */
    double mag = fabs(v);
    int p0 = mag >= 1.0 && mag < 1e17 ? (int)floor(log10(mag)) + 1 : 1;
    for (int p = p0 > 17 ? 17 : p0; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v) {
            break;
        }
    }
    if (!strpbrk(buf, ".eE")) {
        size_t len = strlen(buf);
        snprintf(buf + len, n > len ? n - len : 0, ".0");
    }
    return buf;
}

static bool put_json(FILE *out, const json_t *v, bool pretty, int depth);

static bool put_indent(FILE *out, bool pretty, int depth)
{
    return !pretty || fprintf(out, "\n%*s", depth * 2, "") >= 0;
}

/* A JSON string (jansson's escaping). */
static bool put_string(FILE *out, const char *s, size_t len)
{
    json_t *str = json_stringn_nocheck(s, len);
    char *text = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
    json_decref(str);
    bool ok = text && put_json_text(out, text);
    free(text);
    return ok;
}

static bool put_json(FILE *out, const json_t *v, bool pretty, int depth)
{
    char num[40];
    size_t i;
    const char *key;
    json_t *item;
    bool ok = true;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        if (json_object_size(v) == 0) {
            return fputs("{}", out) >= 0;
        }
        ok = fputc('{', out) != EOF;
        i = 0;
        json_object_foreach((json_t *)v, key, item)
        {
            ok = ok && (i++ == 0 || fputc(',', out) != EOF) && put_indent(out, pretty, depth + 1) &&
                 put_string(out, key, strlen(key)) && fputs(pretty ? ": " : ":", out) >= 0 &&
                 put_json(out, item, pretty, depth + 1);
        }
        return ok && put_indent(out, pretty, depth) && fputc('}', out) != EOF;
    case JSON_ARRAY:
        if (json_array_size(v) == 0) {
            return fputs("[]", out) >= 0;
        }
        ok = fputc('[', out) != EOF;
        json_array_foreach(v, i, item)
        {
            ok = ok && (i == 0 || fputc(',', out) != EOF) && put_indent(out, pretty, depth + 1) &&
                 put_json(out, item, pretty, depth + 1);
        }
        return ok && put_indent(out, pretty, depth) && fputc(']', out) != EOF;
    case JSON_STRING:
        return put_string(out, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) >= 0;
    case JSON_REAL:
        return fputs(ctl_format_real(num, sizeof(num), json_real_value(v)), out) >= 0;
    case JSON_TRUE:
        return fputs("true", out) >= 0;
    case JSON_FALSE:
        return fputs("false", out) >= 0;
    default:
        return fputs("null", out) >= 0;
    }
}

char *ctl_format_json(const json_t *v, bool pretty)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        return NULL;
    }
    bool ok = put_json(f, v ? v : json_null(), pretty, 0);
    if (fclose(f) != 0 || !ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* --- Traces and metadata -------------------------------------------------------------------- */

static void trace_row(FILE *out, const ctl_style *st, const col *cols, const json_t *meta)
{
    char records[24], dropped[24], runtime[48];
    snprintf(records, sizeof(records), "%lld", int_of(meta, "records"));
    snprintf(dropped, sizeof(dropped), "%lld", int_of(meta, "dropped"));
    snprintf(runtime, sizeof(runtime), "%.1fs",
             json_number_value(json_object_get(meta, "runtime")));
    const char *status = str_or(meta, "status", "?");
    const char *text[] = {str_or(meta, "id", "?"),      status, records, dropped,
                          str_or(meta, "started", "-"), runtime};
    const char *sgr[] = {NULL, strcmp(status, "running") == 0 ? SGR_GREEN : NULL, NULL, NULL, NULL,
                         NULL};
    put_row(out, st, cols, NCOLS(trace_cols), text, sgr);
}

void ctl_format_traces(FILE *out, const ctl_style *st, const json_t *metas)
{
    /* The ID column as wide as the longest id (at least the header's 20), cut only when the
     * table would not fit otherwise. */
    col cols[NCOLS(trace_cols)];
    memcpy(cols, trace_cols, sizeof(cols));
    size_t i;
    json_t *m;
    json_array_foreach(metas, i, m)
    {
        size_t n = chars(str_or(m, "id", "?"));
        cols[0].width = n > (size_t)cols[0].width && n < 1000 ? (int)n : cols[0].width;
    }
    put_header(out, st, cols, NCOLS(trace_cols));
    json_array_foreach(metas, i, m)
    {
        trace_row(out, st, cols, m);
    }
}

void ctl_format_meta(FILE *out, const json_t *meta)
{
    static const char *const keys[] = {
            "id",          "node_id",       "worker_id",      "status",   "started",
            "ended",       "runtime",       "first_seq",      "next_seq", "records",
            "dropped",     "lost",          "durable_to_seq", "gaps",     "bytes",
            "stop_reason", "persistent_id", "options"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(meta, keys[i]);
        char *s = NULL;
        /* Keys of some traces alone: lost, the flight recorder read from the wire capture's;
         * durable_to_seq and gaps, a persisted trace's. */
        if (!v && (strcmp(keys[i], "lost") == 0 || strcmp(keys[i], "durable_to_seq") == 0 ||
                   strcmp(keys[i], "gaps") == 0)) {
            continue;
        }
        if (json_is_string(v)) {
            fprintf(out, "%-14s ", keys[i]);
            put_clean(out, json_string_value(v), strlen(json_string_value(v)));
            fputc('\n', out);
            continue;
        }
        if (!v || json_is_null(v)) {
            fprintf(out, "%-14s -\n", keys[i]);
            continue;
        }
        s = ctl_format_json(v, false);
        fprintf(out, "%-14s %s\n", keys[i], s ? s : "?");
        free(s);
    }
}

/* --- Records -------------------------------------------------------------------------------- */

/* The columns src (n of them, SEQ first) with SEQ as wide as st->seq_width asks, in dst. */
static const col *seq_cols(const col *src, int n, const ctl_style *st, col *dst)
{
    memcpy(dst, src, (size_t)n * sizeof(*dst));
    if (st->seq_width > dst[0].width) {
        dst[0].width = dst[0].min = st->seq_width;
    }
    return dst;
}

void ctl_format_fit_seq_to(ctl_style *st, long long seq)
{
    char text[24];
    int n = snprintf(text, sizeof(text), "%lld", seq);
    st->seq_width = n > st->seq_width ? n : st->seq_width;
}

void ctl_format_fit_seq(ctl_style *st, const json_t *records)
{
    size_t i;
    json_t *r;
    json_array_foreach(records, i, r)
    {
        ctl_format_fit_seq_to(st, int_of(r, "seq"));
    }
}

void ctl_format_records_header(FILE *out, const ctl_style *st)
{
    col cols[NCOLS(record_cols)];
    put_header(out, st, seq_cols(record_cols, NCOLS(record_cols), st, cols), NCOLS(record_cols));
}

/* The record's ts as the UTC time of day with milliseconds ("-" if it has none). */
static void time_of_day(const json_t *rec, char when[16])
{
    double ts = json_number_value(json_object_get(rec, "ts"));
    time_t secs = (time_t)ts;
    struct tm tm;
    snprintf(when, 16, "-");
    if (gmtime_r(&secs, &tm)) {
        int ms = (int)((ts - (double)secs) * 1000.0);
        snprintf(when, 16, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ms < 0     ? 0
                 : ms > 999 ? 999
                            : ms);
    }
}

bool ctl_format_is_action(const json_t *rec)
{
    return json_is_string(json_object_get(rec, "action"));
}

void ctl_format_actions_header(FILE *out, const ctl_style *st)
{
    col cols[NCOLS(action_cols)];
    put_header(out, st, seq_cols(action_cols, NCOLS(action_cols), st, cols), NCOLS(action_cols));
}

static void action_row(FILE *out, const ctl_style *st, const json_t *rec)
{
    char seq[24], when[16], session[24] = "-", resp[24], dur[48] = "-";
    snprintf(seq, sizeof(seq), "%lld", int_of(rec, "seq"));
    time_of_day(rec, when);
    json_t *sid = json_object_get(json_object_get(rec, "originator"), "session_id");
    if (json_is_integer(sid)) {
        snprintf(session, sizeof(session), "%lld", (long long)json_integer_value(sid));
    }
    snprintf(resp, sizeof(resp), "%zu", json_array_size(json_object_get(rec, "responders")));
    json_t *d = json_object_get(rec, "duration");
    if (json_is_number(d)) {
        snprintf(dur, sizeof(dur), "%.3f ms", json_number_value(d) * 1000.0);
    }
    json_t *ok = json_object_get(rec, "success");
    bool failed = json_is_false(ok);
    /* The last column, as an Error record's message leads with its error URI. */
    const char *err = json_string_value(json_object_get(rec, "error"));
    const char *text[] = {seq,
                          when,
                          str_or(rec, "action", "?"),
                          str_or(rec, "realm", "-"),
                          session,
                          str_or(rec, "uri", "-"),
                          resp,
                          json_is_true(ok) ? "yes"
                          : failed         ? "NO"
                                           : "-",
                          dur,
                          err ? err : "-"};
    const char *sgr[] = {NULL, NULL, failed ? SGR_RED : NULL,  NULL, NULL,
                         NULL, NULL, failed ? SGR_FAIL : NULL, NULL, err ? SGR_RED : NULL};
    col cols[NCOLS(action_cols)];
    put_row(out, st, seq_cols(action_cols, NCOLS(action_cols), st, cols), NCOLS(action_cols), text,
            sgr);
}

/* The error URI an Error (msg[4]) or Abort (msg[2]) record carries, NULL for other records. */
static const char *error_uri(const json_t *rec)
{
    const char *type = str_or(rec, "msg_type", "");
    const json_t *msg = json_object_get(rec, "msg");
    if (strcmp(type, "Error") == 0) {
        return json_string_value(json_array_get(msg, 4));
    }
    if (strcmp(type, "Abort") == 0) {
        return json_string_value(json_array_get(msg, 2));
    }
    return NULL;
}

void ctl_format_record_row(FILE *out, const ctl_style *st, const json_t *rec)
{
    if (ctl_format_is_action(rec)) {
        action_row(out, st, rec);
        return;
    }
    char seq[24], when[16], corr[16] = "-", session[24] = "-", dir[8];
    snprintf(seq, sizeof(seq), "%lld", int_of(rec, "seq"));
    time_of_day(rec, when);
    const char *c = json_string_value(json_object_get(rec, "correlation"));
    if (c) {
        /* The last 8 hex digits: the router's correlation ids share their first half. */
        size_t n = strlen(c);
        snprintf(corr, sizeof(corr), "%.8s %s%s", n > 8 ? c + n - 8 : c,
                 json_is_true(json_object_get(rec, "correlation_is_anchor")) ? "A" : "",
                 json_is_true(json_object_get(rec, "correlation_is_last")) ? "L" : "");
    }
    json_t *sid = json_object_get(rec, "session_id");
    if (json_is_integer(sid)) {
        snprintf(session, sizeof(session), "%lld", (long long)json_integer_value(sid));
    }
    const char *d = str_or(rec, "direction", "-");
    bool dropped = json_object_get(rec, "dropped") != NULL;
    snprintf(dir, sizeof(dir), "%.3s%s", d, dropped ? "!" : "");
    const char *err = error_uri(rec);
    char *json = ctl_format_json(json_object_get(rec, "msg"), false);
    char *msg = NULL;
    if (json && err) {
        size_t len = strlen(err) + 1 + strlen(json) + 1;
        msg = malloc(len);
        if (msg) {
            snprintf(msg, len, "%s %s", err, json);
        }
    }
    const char *type = str_or(rec, "msg_type", "?");
    const char *dir_sgr = dropped                ? SGR_YEL
                          : strcmp(d, "rx") == 0 ? SGR_CYAN
                          : strcmp(d, "tx") == 0 ? SGR_GREEN
                                                 : NULL;
    const char *text[] = {seq,
                          when,
                          dir,
                          type,
                          str_or(rec, "realm", "-"),
                          session,
                          str_or(rec, "uri", "-"),
                          corr,
                          msg    ? msg
                          : json ? json
                                 : "null"};
    const char *sgr[] = {NULL, NULL, dir_sgr, err ? SGR_RED : NULL, NULL,
                         NULL, NULL, NULL,    err ? SGR_RED : NULL};
    col cols[NCOLS(record_cols)];
    put_row(out, st, seq_cols(record_cols, NCOLS(record_cols), st, cols), NCOLS(record_cols), text,
            sgr);
    free(json);
    free(msg);
}

/* --- Stats ---------------------------------------------------------------------------------- */

/* get_worker's gauges (what the router holds now); every other stat is a counter. */
static bool is_gauge(const char *key)
{
    static const char *const gauges[] = {"sessions", "queued_messages", "queued_bytes",
                                         "subscriptions", "registrations", "pending_calls",
                                         "retained_events",
                                         /* stats.cluster's */
                                         "nodes", "live_interested_nodes"};
    for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
        if (strcmp(key, gauges[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* The stats tables' first column: a name at least this wide, wider (up to 128) when a name of
 * the table is: of the numbers in o, the gauges (which 1), the counters (0), or all (-1). */
static int name_width(const json_t *o, int which)
{
    int w = 28;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        size_t n = strlen(key);
        if (json_is_number(v) && (which < 0 || is_gauge(key) == which) && n > (size_t)w) {
            w = n < 128 ? (int)n : 128;
        }
    }
    return w;
}

/* A stats table's head: the name column w wide, then the value's, then rest. */
static void stats_head(FILE *out, const ctl_style *st, int w, const char *name, const char *value,
                       const char *rest)
{
    if (st->color) {
        fputs(SGR_BOLD, out);
    }
    fprintf(out, "%-*s %14s%s", w, name, value, rest);
    fputs(st->color ? SGR_RESET "\n" : "\n", out);
}

static void stats_section(FILE *out, const ctl_style *st, const json_t *stats, const json_t *prev,
                          double elapsed_s, bool gauges)
{
    bool rates = !gauges && prev && elapsed_s > 0;
    int w = name_width(stats, gauges);
    stats_head(out, st, w, gauges ? "NOW" : "SINCE START", gauges ? "VALUE" : "TOTAL",
               rates ? "     RATE/s" : "");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)stats, key, v)
    {
        if (is_gauge(key) != gauges || !json_is_number(v)) {
            continue;
        }
        char num[40];
        if (json_is_integer(v)) {
            snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        } else {
            ctl_format_real(num, sizeof(num), json_real_value(v));
        }
        fprintf(out, "%-*s %14s", w, key, num);
        json_t *was = json_object_get(prev, key);
        if (rates && json_is_number(was)) {
            double r = (json_number_value(v) - json_number_value(was)) / elapsed_s;
            bool busy = r > 0 && !gauges;
            fprintf(out, " %s%10.1f%s", busy && st->color ? SGR_GREEN : "", r,
                    busy && st->color ? SGR_RESET : "");
        }
        fputc('\n', out);
    }
}

/* stats.cluster (a node of a cluster): the link's state, its gauges and counters as the
 * router's, then how far each other node's wall clock is from this node's. */
static void stats_cluster(FILE *out, const ctl_style *st, const json_t *cl, const json_t *prev,
                          double elapsed_s)
{
    char line[128];
    snprintf(line, sizeof(line), "cluster link %s", str_or(cl, "state", "?"));
    fputc('\n', out);
    put_cell(out, st, line, st->columns, true, false, true, SGR_BOLD);
    fputc('\n', out);
    stats_section(out, st, cl, prev, elapsed_s, true);
    fputc('\n', out);
    stats_section(out, st, cl, prev, elapsed_s, false);
    const json_t *offsets = json_object_get(cl, "clock_offsets");
    if (json_object_size(offsets) == 0) {
        return;
    }
    int w = name_width(offsets, -1);
    fputc('\n', out);
    stats_head(out, st, w, "CLOCK OF NODE", "OFFSET (s)", "");
    const char *node;
    json_t *v;
    json_object_foreach((json_t *)offsets, node, v)
    {
        fprintf(out, "%-*s %+14.6f\n", w, node, json_number_value(v));
    }
}

void ctl_format_stats(FILE *out, const ctl_style *st, const char *node, const json_t *worker,
                      const json_t *prev, double elapsed_s)
{
    double up = json_number_value(json_object_get(worker, "uptime"));
    long long s = (long long)up;
    char line[512], realms[256] = "";
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(worker, "realms"), i, r)
    {
        size_t len = strlen(realms);
        snprintf(realms + len, sizeof(realms) - len, "%s%s", i ? ", " : "",
                 json_string_value(r) ? json_string_value(r) : "?");
    }
    snprintf(line, sizeof(line),
             "worker %s on node %s, pid %lld, up %lldd %02lldh %02lldm %02llds, realms: %s",
             str_or(worker, "id", "?"), node ? node : "?", int_of(worker, "pid"), s / 86400,
             s / 3600 % 24, s / 60 % 60, s % 60, *realms ? realms : "-");
    put_cell(out, st, line, st->columns, true, false, true, SGR_BOLD);
    fputc('\n', out);
    const json_t *stats = json_object_get(worker, "stats");
    const json_t *prev_stats = json_object_get(prev, "stats");
    stats_section(out, st, stats, prev_stats, elapsed_s, true);
    fputc('\n', out);
    stats_section(out, st, stats, prev_stats, elapsed_s, false);
    const json_t *cl = json_object_get(stats, "cluster");
    if (json_is_object(cl)) {
        stats_cluster(out, st, cl, json_object_get(prev_stats, "cluster"), elapsed_s);
    }
}
