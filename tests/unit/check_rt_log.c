/* check_rt_log.c: level parsing, the threshold, the exact line format on stderr (text and JSON,
 * with the JSON escaping of what peers send), rate limiting (stderr captured with log_capture). */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "log_capture.h"
#include "rt_log.h"
#include "rt_router.h"
#include "test_router.h"

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        n += *s == '\n';
    }
    return n;
}

/* "2026-11-22T03:20:38.123Z " */
static bool is_timestamp(const char *s)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ ";
    for (size_t i = 0; i < sizeof(shape) - 1; i++) {
        bool ok = shape[i] == 'd' ? (s[i] >= '0' && s[i] <= '9') : s[i] == shape[i];
        if (!ok) {
            return false;
        }
    }
    return true;
}

START_TEST(test_level_parse)
{
    rt_log_level lv = RT_LOG_LEVEL_ERR;
    ck_assert(rt_log_level_parse("error", &lv));
    ck_assert_int_eq(lv, RT_LOG_LEVEL_ERR);
    ck_assert(rt_log_level_parse("warn", &lv));
    ck_assert_int_eq(lv, RT_LOG_LEVEL_WARN);
    ck_assert(rt_log_level_parse("info", &lv));
    ck_assert_int_eq(lv, RT_LOG_LEVEL_INFO);
    ck_assert(rt_log_level_parse("debug", &lv));
    ck_assert_int_eq(lv, RT_LOG_LEVEL_DEBUG);
    lv = RT_LOG_LEVEL_ERR;
    ck_assert(rt_log_level_parse("trace", &lv));
    ck_assert_int_eq(lv, RT_LOG_LEVEL_TRACE);
    ck_assert(rt_log_level_parse("INFO", &lv));
    ck_assert_int_eq(lv, RT_LOG_LEVEL_INFO);

    lv = RT_LOG_LEVEL_WARN;
    ck_assert(!rt_log_level_parse("verbose", &lv));
    ck_assert(!rt_log_level_parse("", &lv));
    ck_assert(!rt_log_level_parse("info ", &lv));
    ck_assert(!rt_log_level_parse(NULL, &lv));
    ck_assert_int_eq(lv, RT_LOG_LEVEL_WARN); /* unchanged on failure */
    ck_assert(rt_log_level_parse("debug", NULL));
}

END_TEST

START_TEST(test_set_get_level)
{
    ck_assert_int_eq(rt_log_get_level(), RT_LOG_LEVEL_INFO); /* the default */
    rt_log_set_level(RT_LOG_LEVEL_DEBUG);
    ck_assert_int_eq(rt_log_get_level(), RT_LOG_LEVEL_DEBUG);
    rt_log_set_level(RT_LOG_LEVEL_ERR);
    ck_assert_int_eq(rt_log_get_level(), RT_LOG_LEVEL_ERR);
    rt_log_set_level(RT_LOG_LEVEL_INFO);
}

END_TEST

START_TEST(test_line_format)
{
    log_capture c;
    rt_log_set_level(RT_LOG_LEVEL_DEBUG);
    log_capture_begin(&c);
    RT_LOG_INFO(123456, "joined realm %s", "realm1");
    RT_LOG_WARN(0, "no session here");
    RT_LOG_ERR(UINT64_C(9007199254740992), "big id");
    RT_LOG_DEBUG(7, "debug %d", 42);
    rt_log(RT_LOG_LEVEL_INFO, 0, "already terminated\n");
    char *out = log_capture_end(&c);
    rt_log_set_level(RT_LOG_LEVEL_INFO);

    ck_assert_uint_eq(count_lines(out), 5);
    const char *want[] = {
            "INFO  [session 123456] joined realm realm1\n",
            "WARN  no session here\n",
            "ERROR [session 9007199254740992] big id\n",
            "DEBUG [session 7] debug 42\n",
            "INFO  already terminated\n",
    };
    const char *line = out;
    for (size_t i = 0; i < 5; i++) {
        ck_assert_msg(is_timestamp(line), "line %zu: %s", i, line);
        const char *rest = line + 25;
        ck_assert_msg(strncmp(rest, want[i], strlen(want[i])) == 0, "line %zu: %s", i, line);
        line = strchr(line, '\n') + 1;
    }
    free(out);
}

END_TEST

START_TEST(test_threshold)
{
    log_capture c;
    int evaluated = 0;

    rt_log_set_level(RT_LOG_LEVEL_WARN);
    log_capture_begin(&c);
    RT_LOG_ERR(1, "e");
    RT_LOG_WARN(1, "w");
    RT_LOG_INFO(1, "i");
    RT_LOG_DEBUG(1, "d %d", ++evaluated);
    char *out = log_capture_end(&c);
    ck_assert_uint_eq(count_lines(out), 2);
    ck_assert_ptr_nonnull(strstr(out, "ERROR [session 1] e\n"));
    ck_assert_ptr_nonnull(strstr(out, "WARN  [session 1] w\n"));
    ck_assert_ptr_null(strstr(out, "INFO"));
    /* RT_LOG_DEBUG does not even evaluate its arguments below the threshold. */
    ck_assert_int_eq(evaluated, 0);
    free(out);

    rt_log_set_level(RT_LOG_LEVEL_ERR);
    log_capture_begin(&c);
    RT_LOG_WARN(0, "w");
    RT_LOG_INFO(0, "i");
    RT_LOG_ERR(0, "e");
    out = log_capture_end(&c);
    ck_assert_uint_eq(count_lines(out), 1);
    ck_assert_ptr_nonnull(strstr(out, "ERROR e\n"));
    free(out);

    rt_log_set_level(RT_LOG_LEVEL_INFO);
    log_capture_begin(&c);
    RT_LOG_INFO(0, "i");
    RT_LOG_DEBUG(0, "d %d", ++evaluated);
    out = log_capture_end(&c);
    ck_assert_uint_eq(count_lines(out), 1);
    ck_assert_int_eq(evaluated, 0);
    free(out);

    rt_log_set_level(RT_LOG_LEVEL_DEBUG);
    log_capture_begin(&c);
    RT_LOG_DEBUG(0, "d %d", ++evaluated);
    out = log_capture_end(&c);
    ck_assert_uint_eq(count_lines(out), 1);
    ck_assert_int_eq(evaluated, 1);
    free(out);
    rt_log_set_level(RT_LOG_LEVEL_INFO);
}

END_TEST

/* The call sites of the rate-limited tests: each function is one site, fed n lines. */
static void flood_site(uint64_t now_us, int n)
{
    for (int i = 0; i < n; i++) {
        RT_LOG_INFO_LIMITED(now_us, "test flood", 5, "refused %d", i);
    }
}

static void other_site(uint64_t now_us, int n)
{
    for (int i = 0; i < n; i++) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, now_us, "other flood", 0, "other %d", i);
    }
}

static void burst_site(uint64_t now_us, int n)
{
    for (int i = 0; i < n; i++) {
        RT_LOG_LIMITED_N(3u, RT_LOG_LEVEL_INFO, now_us, "burst flood", 0, "burst %d", i);
    }
}

#define T0  UINT64_C(5000000000)
#define SEC UINT64_C(1000000)

/* 10,000 lines from one site: the first written, then one summary with the count when the
 * interval is over; a flood that goes on gets a summary per interval; after a quiet interval
 * the next line is written again. */
START_TEST(test_limited_line_then_summary)
{
    log_capture c;
    log_capture_begin(&c);
    flood_site(T0, 10000);
    other_site(T0, 2);
    rt_log_tick(T0 + 10 * SEC - 1); /* not over yet */
    char *out = log_capture_end(&c);
    ck_assert_uint_eq(log_count_lines(out, "refused "), 1);
    ck_assert_ptr_nonnull(strstr(out, "INFO  [session 5] refused 0\n"));
    ck_assert_uint_eq(log_count_lines(out, "WARN  other "), 1);
    ck_assert_uint_eq(log_count_lines(out, "(rate-limited)"), 0);
    free(out);

    log_capture_begin(&c);
    rt_log_tick(T0 + 10 * SEC);
    out = log_capture_end(&c);
    size_t n = 0;
    ck_assert_uint_eq(log_summarized(out, "test flood", &n), 9999);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(log_summarized(out, "other flood", &n), 1);
    ck_assert_ptr_nonnull(strstr(out, "WARN  (rate-limited) 1 more lines like \"other flood\" in "
                                      "the last 10.0 s\n"));
    ck_assert_uint_eq(log_count_lines(out, "(rate-limited)"), 2);
    free(out);

    /* The flood goes on: counted from the summary on, one summary an interval. */
    log_capture_begin(&c);
    flood_site(T0 + 12 * SEC, 500);
    rt_log_tick(T0 + 19 * SEC);
    rt_log_tick(T0 + 20 * SEC);
    out = log_capture_end(&c);
    ck_assert_uint_eq(log_count_lines(out, "refused "), 0);
    ck_assert_uint_eq(log_summarized(out, "test flood", &n), 500);
    ck_assert_uint_eq(n, 1);
    free(out);

    /* Quiet for an interval: reset; the next line is written at once. */
    log_capture_begin(&c);
    rt_log_tick(T0 + 30 * SEC);
    flood_site(T0 + 31 * SEC, 1);
    out = log_capture_end(&c);
    ck_assert_uint_eq(log_count_lines(out, "refused 0"), 1);
    ck_assert_uint_eq(log_count_lines(out, "(rate-limited)"), 0);
    free(out);
}

END_TEST

/* Without a tick, the site's next line after its interval writes the summary; a burst of 3
 * lines is written before counting starts; rt_log_flush() writes what is left; nothing is
 * counted or evaluated below the threshold. */
START_TEST(test_limited_without_tick_burst_flush)
{
    log_capture c;
    log_capture_begin(&c);
    other_site(T0, 4);
    other_site(T0 + 10 * SEC, 1); /* summary of 3, and this one counted for the next */
    burst_site(T0, 10);
    rt_log_flush(T0 + 11 * SEC);
    char *out = log_capture_end(&c);
    size_t n = 0;
    ck_assert_uint_eq(log_count_lines(out, "WARN  other "), 1);
    ck_assert_uint_eq(log_summarized(out, "other flood", &n), 4);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(log_count_lines(out, "INFO  burst "), 3);
    ck_assert_uint_eq(log_summarized(out, "burst flood", &n), 7);
    ck_assert_uint_eq(n, 1);
    free(out);

    rt_log_set_level(RT_LOG_LEVEL_WARN);
    int evaluated = 0;
    log_capture_begin(&c);
    for (int i = 0; i < 5; i++) {
        RT_LOG_INFO_LIMITED(T0 + (uint64_t)++evaluated, "hidden", 0, "hidden");
    }
    rt_log_flush(T0 + 100 * SEC);
    out = log_capture_end(&c);
    rt_log_set_level(RT_LOG_LEVEL_INFO);
    ck_assert_int_eq(evaluated, 0);
    ck_assert_uint_eq(log_count_lines(out, "hidden"), 0);
    free(out);
}

END_TEST

/* Messages longer than the internal line buffer are printed whole, on one line. */
START_TEST(test_long_message)
{
    enum {
        LONG = 10000
    };

    char *msg = malloc(LONG + 1);
    ck_assert_ptr_nonnull(msg);
    memset(msg, 'm', LONG);
    msg[LONG] = '\0';
    log_capture c;
    log_capture_begin(&c);
    RT_LOG_INFO(5, "<%s>", msg);
    char *out = log_capture_end(&c);
    ck_assert_uint_eq(count_lines(out), 1);
    const char *open = strstr(out, "INFO  [session 5] <");
    ck_assert_ptr_nonnull(open);
    ck_assert_uint_eq(strlen(open), strlen("INFO  [session 5] <") + LONG + 2);
    ck_assert_str_eq(out + strlen(out) - 3, "m>\n");
    free(out);
    free(msg);
}

END_TEST

/* RT_ASSERT logs file:line whatever the threshold, then aborts. The test runs in its own
 * process (CK_FORK) and expects SIGABRT; the message itself goes to the captured stderr of that
 * process, so this only checks that a true condition does nothing and a false one aborts. */
START_TEST(test_assert_passes)
{
    log_capture c;
    log_capture_begin(&c);
    RT_ASSERT(1 + 1 == 2);
    char *out = log_capture_end(&c);
    ck_assert_str_eq(out, "");
    free(out);
}

END_TEST

START_TEST(test_assert_aborts)
{
    rt_log_set_level(RT_LOG_LEVEL_ERR);
    RT_ASSERT(1 + 1 == 3);
}

END_TEST

/* The assertion line itself, captured in a child process. */
START_TEST(test_assert_message)
{
    char path[] = "/tmp/check_rt_log_assert_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd, STDERR_FILENO);
        rt_log_set_level(RT_LOG_LEVEL_ERR);
        RT_ASSERT(sizeof(int) == 1);
        _exit(0); /* not reached */
    }
    close(fd);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[512] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
    fclose(f);
    unlink(path);
    ck_assert_msg(is_timestamp(line), "%s", line);
    ck_assert_msg(strstr(line, "ERROR assertion failed: sizeof(int) == 1 (") != NULL, "%s", line);
    ck_assert_msg(strstr(line, "check_rt_log.c:") != NULL, "%s", line);
}

END_TEST

/* Refused handshakes (rt_router_refused_handshake()): every one counted per reason; the first
 * RT_LOG_BURST_CONN get their line with peer, reason and detail, the rest only a count, logged as
 * one summary by the tick once the interval is over. */
START_TEST(test_refused_handshakes_rate_limited)
{
    test_router t;
    test_router_init(&t);
    fake_clock_advance_ms(&t.clock, 5000);
    log_capture c;
    log_capture_begin(&c);
    rt_router_refused_handshake(t.rt, RT_REFUSAL_SUBPROTOCOL, "ws1", "10.0.0.1:4000",
                                "offered wamp.2.ubjson");
    rt_router_refused_handshake(t.rt, RT_REFUSAL_REQUEST, "ws1", NULL, NULL);
    /* TLS failures count against a limit of their own (a scanner hides no other refusal). */
    for (unsigned i = 0; i < RT_LOG_BURST_CONN + 2; i++) {
        rt_router_refused_handshake(t.rt, RT_REFUSAL_TLS, "wss1", "10.0.0.3:4002", "http request");
    }
    for (unsigned i = 0; i < RT_LOG_BURST_CONN + 3; i++) {
        rt_router_refused_handshake(t.rt, RT_REFUSAL_PATH, "ws1", "10.0.0.2:4001", NULL);
    }
    fake_clock_advance_ms(&t.clock, 500);
    rt_router_tick(t.rt); /* within the interval: no summary yet */
    char *mid = log_capture_end(&c);
    ck_assert_uint_eq(count_lines(mid), 2 * RT_LOG_BURST_CONN);
    ck_assert_ptr_nonnull(strstr(
            mid, "TLS handshake from 10.0.0.3:4002 failed on listener wss1: http request\n"));
    ck_assert_ptr_nonnull(strstr(mid, "WebSocket handshake from 10.0.0.1:4000 refused by listener "
                                      "ws1 (subprotocol): offered wamp.2.ubjson"));
    ck_assert_ptr_nonnull(strstr(mid, "handshake from ? refused by listener ws1 (request)\n"));
    free(mid);
    log_capture_begin(&c);
    fake_clock_advance_ms(&t.clock, RT_LOG_SUMMARY_INTERVAL_US / 1000u);
    rt_router_tick(t.rt);
    rt_router_tick(t.rt); /* once only */
    char *sum = log_capture_end(&c);
    ck_assert_uint_eq(count_lines(sum), 2);
    ck_assert_ptr_nonnull(
            strstr(sum, "(rate-limited) 5 more lines like \"WebSocket handshake refused\""));
    ck_assert_ptr_nonnull(strstr(sum, "(rate-limited) 2 more lines like \"TLS handshake failed\""));
    free(sum);
    const rt_router_stats *st = rt_router_stats_get(t.rt);
    ck_assert_uint_eq(st->handshakes_refused[RT_REFUSAL_SUBPROTOCOL], 1);
    ck_assert_uint_eq(st->handshakes_refused[RT_REFUSAL_PATH], RT_LOG_BURST_CONN + 3);
    ck_assert_uint_eq(st->handshakes_refused[RT_REFUSAL_REQUEST], 1);
    ck_assert_uint_eq(st->handshakes_refused[RT_REFUSAL_TLS], RT_LOG_BURST_CONN + 2);
    test_router_fini(&t);
}

END_TEST

/* rt_log_json_escape() of len bytes of in must give want (and return its length). */
static void expect_escape(const char *in, size_t len, const char *want)
{
    char out[256];
    size_t n = rt_log_json_escape(in, len, out, sizeof(out));
    ck_assert_msg(strcmp(out, want) == 0, "escape gave \"%s\", want \"%s\"", out, want);
    ck_assert_uint_eq(n, strlen(want));
}

START_TEST(test_json_escape)
{
    expect_escape("abc", 3, "abc");
    expect_escape("", 0, "");
    expect_escape("a\"b\\c", 5, "a\\\"b\\\\c");
    expect_escape("\x01\n\t\r\x1f\x7f", 6, "\\u0001\\n\\t\\r\\u001f\\u007f");
    expect_escape("a\0b", 3, "a\\u0000b");
    /* Valid UTF-8 passes as it is: 2, 3 and 4 bytes. */
    expect_escape("\xc3\xa9\xe6\x97\xa5\xf0\x9f\x8e\x89", 9,
                  "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x8e\x89");
    /* Every byte that is not part of valid UTF-8 becomes U+FFFD. */
    expect_escape("a\xff"
                  "b",
                  3, "a\\ufffdb");
    expect_escape("\x80", 1, "\\ufffd");   /* lone continuation */
    expect_escape("a\xc3", 2, "a\\ufffd"); /* cut sequence */
    expect_escape("\xc3"
                  "a",
                  2, "\\ufffda");                                         /* bad continuation */
    expect_escape("\xc0\xaf", 2, "\\ufffd\\ufffd");                       /* overlong '/' */
    expect_escape("\xe0\x80\xaf", 3, "\\ufffd\\ufffd\\ufffd");            /* overlong, 3 bytes */
    expect_escape("\xed\xa0\x80", 3, "\\ufffd\\ufffd\\ufffd");            /* UTF-16 surrogate */
    expect_escape("\xf4\x90\x80\x80", 4, "\\ufffd\\ufffd\\ufffd\\ufffd"); /* > U+10FFFF */
    expect_escape("\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf");             /* U+10FFFF itself */
    /* Code points a terminal acts on: C1 controls (U+009B is CSI) and bidirectional overrides
     * and isolates are escaped too; their neighbours pass. */
    expect_escape("\xc2\x9b"
                  "31m\xc2\xa0\xe2\x80\xae\xe2\x81\xa9\xe2\x80\xaf",
                  16, "\\u009b31m\xc2\xa0\\u202e\\u2069\xe2\x80\xaf");
}

END_TEST

START_TEST(test_json_escape_cut)
{
    char out[5];
    /* Like snprintf: the whole length back, as much as fits written, NUL-terminated. */
    ck_assert_uint_eq(rt_log_json_escape("ab\"cd", 5, out, sizeof(out)), 6);
    ck_assert_str_eq(out, "ab\\\"");
    ck_assert_uint_eq(rt_log_json_escape("abc", 3, NULL, 0), 3);
}

END_TEST

static int lookup_ctx;

static bool lookup(void *ctx, uint64_t sid, rt_log_session_info *out)
{
    ck_assert_ptr_eq(ctx, &lookup_ctx);
    if (sid != 77) {
        return false;
    }
    out->realm = "realm\"1";
    out->peer = "127.0.0.1:5000";
    return true;
}

/* The next line of text as a JSON object (owned). */
static json_t *next_json(const char **text)
{
    const char *nl = strchr(*text, '\n');
    ck_assert_ptr_nonnull(nl);
    json_error_t e;
    json_t *o = json_loadb(*text, (size_t)(nl - *text), 0, &e);
    ck_assert_msg(o && json_is_object(o), "not a JSON object (%s): %.*s", e.text, (int)(nl - *text),
                  *text);
    *text = nl + 1;
    return o;
}

START_TEST(test_json_lines)
{
    log_capture c;
    rt_log_set_output(RT_LOG_FORMAT_JSON, RT_LOG_TARGET_STDERR);
    rt_log_set_session_lookup(lookup, &lookup_ctx);
    rt_log_set_level(RT_LOG_LEVEL_TRACE);
    log_capture_begin(&c);
    RT_LOG_INFO(77, "uri %s from peer", "bad\xff\"\n\x01");
    RT_LOG_WARN(0, "no session\n");
    rt_log_field f[] = {{.key = "type", .str = "CALL"},
                        {.key = "bytes", .num = 42},
                        {.key = "realm", .str = "given"}};
    rt_log_ev(RT_LOG_LEVEL_TRACE, 77, f, 3, "rx %s", "CALL");
    RT_LOG_DEBUG(5, "unknown session");
    char *out = log_capture_end(&c);
    rt_log_set_output(RT_LOG_FORMAT_TEXT, RT_LOG_TARGET_STDERR);
    rt_log_set_session_lookup(NULL, NULL);

    ck_assert_uint_eq(count_lines(out), 4);
    const char *p = out;
    json_t *o = next_json(&p);
    const char *ts = json_string_value(json_object_get(o, "ts"));
    ck_assert_ptr_nonnull(ts);
    /* RFC 3339, UTC, microseconds: 2026-11-22T03:20:38.123456Z */
    ck_assert_uint_eq(strlen(ts), 27);
    ck_assert(ts[4] == '-' && ts[10] == 'T' && ts[19] == '.' && ts[26] == 'Z');
    ck_assert_str_eq(json_string_value(json_object_get(o, "level")), "info");
    ck_assert_str_eq(json_string_value(json_object_get(o, "msg")),
                     "uri bad\xef\xbf\xbd\"\n\x01 from peer");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "session")), 77);
    ck_assert_str_eq(json_string_value(json_object_get(o, "realm")), "realm\"1");
    ck_assert_str_eq(json_string_value(json_object_get(o, "peer")), "127.0.0.1:5000");
    json_decref(o);

    o = next_json(&p);
    ck_assert_str_eq(json_string_value(json_object_get(o, "level")), "warn");
    ck_assert_str_eq(json_string_value(json_object_get(o, "msg")), "no session");
    ck_assert_ptr_null(json_object_get(o, "session"));
    json_decref(o);

    o = next_json(&p);
    ck_assert_str_eq(json_string_value(json_object_get(o, "level")), "trace");
    ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "CALL");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "bytes")), 42);
    /* The call site's field wins over the lookup's, and no key comes twice. */
    ck_assert_str_eq(json_string_value(json_object_get(o, "realm")), "given");
    ck_assert_uint_eq(json_object_size(o), 8); /* ts level msg session peer type bytes realm */
    json_decref(o);

    o = next_json(&p);
    ck_assert_str_eq(json_string_value(json_object_get(o, "level")), "debug");
    ck_assert_int_eq(json_integer_value(json_object_get(o, "session")), 5);
    ck_assert_ptr_null(json_object_get(o, "realm"));
    json_decref(o);
    free(out);
}

END_TEST

START_TEST(test_text_fields_and_trace_level)
{
    log_capture c;
    rt_log_set_level(RT_LOG_LEVEL_DEBUG);
    log_capture_begin(&c);
    rt_log_field f[] = {{.key = "type", .str = "CALL"}, {.key = "bytes", .num = 42}};
    rt_log_ev(RT_LOG_LEVEL_TRACE, 7, f, 2, "rx CALL"); /* above debug: not written */
    rt_log_ev(RT_LOG_LEVEL_DEBUG, 7, f, 2, "rx CALL");
    rt_log_set_level(RT_LOG_LEVEL_TRACE);
    rt_log_ev(RT_LOG_LEVEL_TRACE, 0, f, 1, "tx %s", "RESULT");
    RT_LOG_DEBUG(0, "debug shows at trace");
    char *out = log_capture_end(&c);
    rt_log_set_level(RT_LOG_LEVEL_INFO);
    ck_assert_uint_eq(count_lines(out), 3);
    ck_assert_msg(strstr(out, "DEBUG [session 7] rx CALL type=CALL bytes=42\n"), "%s", out);
    ck_assert_msg(strstr(out, "TRACE tx RESULT type=CALL\n"), "%s", out);
    ck_assert_msg(strstr(out, "DEBUG debug shows at trace\n"), "%s", out);
    free(out);
}

END_TEST

/* Text lines: what a peer sends (a GOODBYE reason, a URI, an authid) cannot write escape
 * sequences to the operator's terminal, nor break a line, nor put invalid UTF-8 in the log:
 * control characters (C0, DEL, C1), bidirectional controls and bytes of no valid UTF-8
 * sequence are written as escapes. */
START_TEST(test_text_peer_strings_escaped)
{
    log_capture c;
    log_capture_begin(&c);
    RT_LOG_INFO(5, "GOODBYE (%s): leaving",
                "a\x1b[2J\xc2\x9b"
                "31m\xe2\x80\xae"
                "b\xff\x01\tc\xc3\xa9\\");
    rt_log_field f[] = {{.key = "authid", .str = "\x1b]0;title\x07\x7f"}};
    rt_log_ev(RT_LOG_LEVEL_INFO, 0, f, 1, "joined");
    char *out = log_capture_end(&c);
    ck_assert_uint_eq(count_lines(out), 2);
    ck_assert_msg(strstr(out, "INFO  [session 5] GOODBYE "
                              "(a\\x1b[2J\\u009b31m\\u202eb\\xff\\x01\\x09c\xc3\xa9\\): leaving\n"),
                  "%s", out);
    ck_assert_msg(strstr(out, "INFO  joined authid=\\x1b]0;title\\x07\\x7f\n"), "%s", out);
    for (const unsigned char *u = (const unsigned char *)out; *u; u++) {
        ck_assert_msg(*u >= 0x20 || *u == '\n', "control byte 0x%02x in %s", *u, out);
    }
    free(out);
}

END_TEST

START_TEST(test_output_names)
{
    rt_log_format f = RT_LOG_FORMAT_TEXT;
    rt_log_target t = RT_LOG_TARGET_STDERR;
    ck_assert(rt_log_format_parse("json", &f) && f == RT_LOG_FORMAT_JSON);
    ck_assert(rt_log_format_parse("text", &f) && f == RT_LOG_FORMAT_TEXT);
    ck_assert(!rt_log_format_parse("JSONL", &f) && !rt_log_format_parse(NULL, &f));
    ck_assert(rt_log_target_parse("syslog", &t) && t == RT_LOG_TARGET_SYSLOG);
    ck_assert(rt_log_target_parse("stderr", &t) && t == RT_LOG_TARGET_STDERR);
    ck_assert(!rt_log_target_parse("journald", &t));
    ck_assert_str_eq(rt_log_level_name(RT_LOG_LEVEL_TRACE), "trace");
    ck_assert_str_eq(rt_log_level_name(RT_LOG_LEVEL_WARN), "warn");
}

END_TEST

static Suite *rt_log_suite(void)
{
    Suite *s = suite_create("rt_log");
    TCase *tc = tcase_create("log");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_level_parse);
    tcase_add_test(tc, test_set_get_level);
    tcase_add_test(tc, test_line_format);
    tcase_add_test(tc, test_threshold);
    tcase_add_test(tc, test_long_message);
    tcase_add_test(tc, test_limited_line_then_summary);
    tcase_add_test(tc, test_limited_without_tick_burst_flush);
    tcase_add_test(tc, test_assert_passes);
    tcase_add_test(tc, test_assert_message);
    tcase_add_test(tc, test_refused_handshakes_rate_limited);
    tcase_add_test(tc, test_json_escape);
    tcase_add_test(tc, test_json_escape_cut);
    tcase_add_test(tc, test_json_lines);
    tcase_add_test(tc, test_text_fields_and_trace_level);
    tcase_add_test(tc, test_text_peer_strings_escaped);
    tcase_add_test(tc, test_output_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("assert_abort");
    tcase_set_timeout(tc, 10);
    tcase_add_test_raise_signal(tc, test_assert_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_log_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
