/* check_rt_http1.c: HTTP/1.1 request heads: request lines (origin, absolute and asterisk
 * form, versions), every refusal of rt_http1.h with its status class, the head size and field
 * count limits (431), incomplete heads at every length, token lists, joined fields, body
 * length, keep-alive and octets after the head (a body or pipelined requests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rt_http1.h"

static bool str_is(rt_http1_str s, const char *want)
{
    return s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

static wamp_err parse(const char *head, rt_http1_req *req, const char **why)
{
    return rt_http1_parse(head, strlen(head), 8192, req, why);
}

/* Parses head and expects err; an error comes with a reason. */
static void expect(const char *head, wamp_err err)
{
    rt_http1_req req;
    const char *why = NULL;
    wamp_err got = parse(head, &req, &why);
    ck_assert_msg(got == err, "%s: got %d, want %d (%s)", head, got, err, why ? why : "-");
    if (err != WAMP_OK && err != WAMP_EAGAIN) {
        ck_assert_ptr_nonnull(why);
        ck_assert_uint_gt(strlen(why), 0);
    }
}

static const char UPGRADE[] = "GET /ws?x=1 HTTP/1.1\r\n"
                              "Host: 127.0.0.1:8080\r\n"
                              "Upgrade: websocket\r\n"
                              "Connection: keep-alive, Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Protocol: wamp.2.cbor.batched, wamp.2.cbor\r\n"
                              "Sec-WebSocket-Protocol:   wamp.2.json \t\r\n"
                              "Sec-WebSocket-Version: 13\r\n"
                              "\r\n";

START_TEST(test_upgrade_request)
{
    rt_http1_req req;
    const char *why;
    ck_assert_int_eq(parse(UPGRADE, &req, &why), WAMP_OK);
    ck_assert(str_is(req.method, "GET"));
    ck_assert(str_is(req.target, "/ws?x=1"));
    ck_assert(str_is(req.path, "/ws"));
    ck_assert(str_is(req.query, "x=1"));
    ck_assert_uint_eq(req.minor, 1);
    ck_assert_uint_eq(req.n_fields, 7);
    ck_assert_uint_eq(req.head_len, strlen(UPGRADE));
    ck_assert(str_is(req.fields[0].name, "Host"));
    ck_assert(str_is(req.fields[0].value, "127.0.0.1:8080"));
    const rt_http1_field *f = rt_http1_field_get(&req, "sec-websocket-key");
    ck_assert_ptr_nonnull(f);
    ck_assert(str_is(f->value, "dGhlIHNhbXBsZSBub25jZQ=="));
    ck_assert_ptr_null(rt_http1_field_get(&req, "origin"));
    ck_assert_uint_eq(rt_http1_field_count(&req, "SEC-WEBSOCKET-PROTOCOL"), 2);
    ck_assert_uint_eq(rt_http1_field_count(&req, "origin"), 0);
    ck_assert(rt_http1_has_token(&req, "connection", "upgrade"));
    ck_assert(rt_http1_has_token(&req, "Connection", "KEEP-ALIVE"));
    ck_assert(!rt_http1_has_token(&req, "connection", "close"));
    ck_assert(!rt_http1_has_token(&req, "connection", "upgrad"));
    ck_assert(rt_http1_has_token(&req, "upgrade", "WebSocket"));
    ck_assert(rt_http1_has_token(&req, "sec-websocket-protocol", "wamp.2.json"));
    ck_assert(!rt_http1_has_token(&req, "sec-websocket-protocol", "wamp.2"));
    ck_assert(rt_http1_keep_alive(&req));
}

END_TEST

START_TEST(test_every_prefix_is_incomplete)
{
    size_t n = strlen(UPGRADE);
    for (size_t len = 0; len < n; len++) {
        rt_http1_req req;
        const char *why;
        ck_assert_msg(rt_http1_parse(UPGRADE, len, 8192, &req, &why) == WAMP_EAGAIN, "len %zu",
                      len);
    }
}

END_TEST

START_TEST(test_request_lines)
{
    rt_http1_req req;
    const char *why;
    ck_assert_int_eq(parse("OPTIONS * HTTP/1.1\r\n\r\n", &req, &why), WAMP_OK);
    ck_assert(str_is(req.target, "*"));
    ck_assert(str_is(req.path, "*"));
    ck_assert_int_eq(parse("GET http://example.com:8080/a/b?c HTTP/1.1\r\n\r\n", &req, &why),
                     WAMP_OK);
    ck_assert(str_is(req.target, "http://example.com:8080/a/b?c"));
    ck_assert(str_is(req.path, "/a/b"));
    ck_assert(str_is(req.query, "c"));
    ck_assert_int_eq(parse("GET http://example.com HTTP/1.1\r\n\r\n", &req, &why), WAMP_OK);
    ck_assert_uint_eq(req.path.len, 0);
    ck_assert_int_eq(parse("GET /a/b HTTP/1.0\r\n\r\n", &req, &why), WAMP_OK);
    ck_assert_uint_eq(req.minor, 0);
    ck_assert(str_is(req.path, "/a/b"));
    ck_assert_uint_eq(req.query.len, 0);
    ck_assert_int_eq(parse("GET /? HTTP/1.1\r\n\r\n", &req, &why), WAMP_OK);
    ck_assert(str_is(req.path, "/"));
    ck_assert_uint_eq(req.query.len, 0);
    /* Leading empty lines are skipped and count in head_len; bare LF line ends are taken. */
    ck_assert_int_eq(parse("\r\n\nGET / HTTP/1.1\nHost: a\n\n", &req, &why), WAMP_OK);
    ck_assert_uint_eq(req.head_len, 27);
    ck_assert(str_is(req.fields[0].value, "a"));
    /* Method tokens other than the usual ones. */
    ck_assert_int_eq(parse("M-SEARCH /x HTTP/1.1\r\n\r\n", &req, &why), WAMP_OK);
    ck_assert(str_is(req.method, "M-SEARCH"));
}

END_TEST

START_TEST(test_refused_request_lines)
{
    expect("GET / HTTP/1.2\r\n\r\n", WAMP_EPROTO);
    expect("GET / HTTP/2.0\r\n\r\n", WAMP_EPROTO);
    expect("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", WAMP_EPROTO);
    expect("GET / http/1.1\r\n\r\n", WAMP_EPROTO);
    expect("GET / HTTP/1.1 \r\n\r\n", WAMP_EPROTO);
    expect("GET /\r\n\r\n", WAMP_EPROTO);
    expect("GET\r\n\r\n", WAMP_EPROTO);
    expect("GET  / HTTP/1.1\r\n\r\n", WAMP_EPROTO);
    expect(" GET / HTTP/1.1\r\n\r\n", WAMP_EPROTO);
    expect("G(T / HTTP/1.1\r\n\r\n", WAMP_EPROTO);
    expect("GET /a\x01 HTTP/1.1\r\n\r\n", WAMP_EPROTO);
    expect("GET /a\x7f HTTP/1.1\r\n\r\n", WAMP_EPROTO);
    expect("GET /a\tb HTTP/1.1\r\n\r\n", WAMP_EPROTO);
    expect("GET /a b HTTP/1.1\r\n\r\n", WAMP_EPROTO);
    /* A bare CR anywhere, also before the line is complete. */
    expect("GET / HTTP/1.1\rX\r\n\r\n", WAMP_EPROTO);
    expect("GET /\r HTTP/1.1", WAMP_EPROTO);
    expect("\r\r\nGET / HTTP/1.1\r\n\r\n", WAMP_EPROTO);
    /* A trailing CR may still be followed by its LF. */
    expect("GET / HTTP/1.1\r", WAMP_EAGAIN);
    expect("GE", WAMP_EAGAIN);
    /* A method that can never be a token is refused at once, before any line end: a TLS
     * ClientHello on a plain listener, a RawSocket handshake on an HTTP one. */
    static const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    rt_http1_req req;
    const char *why;
    ck_assert_int_eq(rt_http1_parse(hello, sizeof(hello) - 1, 8192, &req, &why), WAMP_EPROTO);
    ck_assert_int_eq(rt_http1_parse("\x7f\xf1\x00\x00", 4, 8192, &req, &why), WAMP_EPROTO);
    ck_assert_int_eq(rt_http1_parse("\r\nG", 3, 8192, &req, &why), WAMP_EAGAIN);
}

END_TEST

START_TEST(test_refused_fields)
{
    expect("GET / HTTP/1.1\r\nHost : a\r\n\r\n", WAMP_EPROTO);      /* space before colon */
    expect("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", WAMP_EPROTO);     /* tab before colon */
    expect("GET / HTTP/1.1\r\nHost: a\r\n b\r\n\r\n", WAMP_EPROTO); /* obs-fold */
    expect("GET / HTTP/1.1\r\nHost: a\r\n\tb\r\n\r\n", WAMP_EPROTO);
    expect("GET / HTTP/1.1\r\nNo colon here\r\n\r\n", WAMP_EPROTO);
    expect("GET / HTTP/1.1\r\n: empty name\r\n\r\n", WAMP_EPROTO);
    expect("GET / HTTP/1.1\r\nBad(name): x\r\n\r\n", WAMP_EPROTO);
    expect("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", WAMP_EPROTO);
    /* NUL inside a value (strlen would stop there: build it by hand). */
    static const char nul[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
    rt_http1_req req;
    const char *why;
    ck_assert_int_eq(rt_http1_parse(nul, sizeof(nul) - 1, 8192, &req, &why), WAMP_EPROTO);
    /* An invalid line is refused before the head is complete. */
    expect("GET / HTTP/1.1\r\nHost : a\r\n", WAMP_EPROTO);
    /* Empty values and values with inner whitespace are fine. */
    ck_assert_int_eq(parse("GET / HTTP/1.1\r\nX:\r\nY: \t \r\nZ: a  b\r\n\r\n", &req, &why),
                     WAMP_OK);
    ck_assert_uint_eq(req.fields[0].value.len, 0);
    ck_assert_uint_eq(req.fields[1].value.len, 0);
    ck_assert(str_is(req.fields[2].value, "a  b"));
}

END_TEST

START_TEST(test_content_length_rules)
{
    rt_http1_req req;
    const char *why;
    uint64_t len = 99;
    ck_assert_int_eq(parse("GET / HTTP/1.1\r\n\r\n", &req, &why), WAMP_OK);
    ck_assert_int_eq(rt_http1_body_length(&req, &len), WAMP_OK);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(parse("POST /p HTTP/1.1\r\nContent-Length: 42\r\n\r\n", &req, &why), WAMP_OK);
    ck_assert_int_eq(rt_http1_body_length(&req, &len), WAMP_OK);
    ck_assert_uint_eq(len, 42);
    ck_assert_int_eq(
            parse("POST /p HTTP/1.1\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n", &req, &why),
            WAMP_OK);
    ck_assert_int_eq(rt_http1_body_length(&req, &len), WAMP_OK);
    ck_assert_uint_eq(len, 7);
    ck_assert_int_eq(
            parse("POST /p HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n", &req, &why),
            WAMP_OK);
    ck_assert_int_eq(rt_http1_body_length(&req, &len), WAMP_OK);
    ck_assert_uint_eq(len, UINT64_MAX);
    expect("POST /p HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n", WAMP_EPROTO);
    expect("POST /p HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 8\r\n\r\n", WAMP_EPROTO);
    expect("POST /p HTTP/1.1\r\nContent-Length: 7, 7\r\n\r\n", WAMP_EPROTO);
    expect("POST /p HTTP/1.1\r\nContent-Length: -1\r\n\r\n", WAMP_EPROTO);
    expect("POST /p HTTP/1.1\r\nContent-Length: +1\r\n\r\n", WAMP_EPROTO);
    expect("POST /p HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", WAMP_EPROTO);
    expect("POST /p HTTP/1.1\r\nContent-Length:\r\n\r\n", WAMP_EPROTO);
    expect("POST /p HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
           WAMP_EPROTO);
    expect("POST /p HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", WAMP_EPROTO);
    /* Transfer-Encoding alone parses; its body length is not supported (411). */
    ck_assert_int_eq(parse("POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", &req, &why),
                     WAMP_OK);
    ck_assert_int_eq(rt_http1_body_length(&req, &len), WAMP_EINVAL);
}

END_TEST

START_TEST(test_limits_431)
{
    rt_http1_req req;
    const char *why = NULL;
    const char *h = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"; /* 27 octets */
    ck_assert_int_eq(rt_http1_parse(h, 27, 27, &req, &why), WAMP_OK);
    ck_assert_int_eq(rt_http1_parse(h, 27, 26, &req, &why), WAMP_ETOOBIG);
    ck_assert_ptr_nonnull(why);
    /* Incomplete: more is wanted below the limit, refused at it. */
    ck_assert_int_eq(rt_http1_parse(h, 20, 21, &req, &why), WAMP_EAGAIN);
    ck_assert_int_eq(rt_http1_parse(h, 20, 20, &req, &why), WAMP_ETOOBIG);
    /* One line longer than the limit, no LF yet. */
    char big[9000];
    memcpy(big, "GET /", 5);
    memset(big + 5, 'a', sizeof(big) - 5);
    ck_assert_int_eq(rt_http1_parse(big, sizeof(big), 8192, &req, &why), WAMP_ETOOBIG);
    /* RT_HTTP1_MAX_FIELDS fields pass, one more is 431. */
    char *many = malloc(64 + 16 * (RT_HTTP1_MAX_FIELDS + 1));
    size_t n = (size_t)sprintf(many, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < RT_HTTP1_MAX_FIELDS; i++) {
        n += (size_t)sprintf(many + n, "X-%02d: v\r\n", i);
    }
    strcpy(many + n, "\r\n");
    ck_assert_int_eq(rt_http1_parse(many, n + 2, 8192, &req, &why), WAMP_OK);
    ck_assert_uint_eq(req.n_fields, RT_HTTP1_MAX_FIELDS);
    n += (size_t)sprintf(many + n, "X-xx: v\r\n\r\n");
    why = NULL;
    ck_assert_int_eq(rt_http1_parse(many, n, 8192, &req, &why), WAMP_ETOOBIG);
    ck_assert_str_eq(why, "too many header fields");
    free(many);
}

END_TEST

START_TEST(test_join)
{
    rt_http1_req req;
    const char *why;
    const char *h = "GET / HTTP/1.1\r\n"
                    "Sec-WebSocket-Protocol: wamp.2.cbor, wamp.2.msgpack\r\n"
                    "X: 1\r\n"
                    "sec-websocket-protocol:\r\n"
                    "SEC-WEBSOCKET-PROTOCOL: wamp.2.json\r\n\r\n";
    ck_assert_int_eq(parse(h, &req, &why), WAMP_OK);
    char out[64];
    const char *want = "wamp.2.cbor, wamp.2.msgpack, wamp.2.json";
    ck_assert_uint_eq(rt_http1_join(&req, "sec-websocket-protocol", out, sizeof(out)),
                      strlen(want));
    ck_assert_str_eq(out, want);
    /* Too small: the needed length, a NUL-terminated prefix. */
    char small[10];
    ck_assert_uint_eq(rt_http1_join(&req, "sec-websocket-protocol", small, sizeof(small)),
                      strlen(want));
    ck_assert_str_eq(small, "wamp.2.cb");
    /* Exactly fits (length + NUL). */
    char exact[41];
    ck_assert_uint_eq(rt_http1_join(&req, "sec-websocket-protocol", exact, sizeof(exact)), 40);
    ck_assert_str_eq(exact, want);
    ck_assert_uint_eq(rt_http1_join(&req, "sec-websocket-protocol", NULL, 0), 40);
    ck_assert_uint_eq(rt_http1_join(&req, "origin", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "");
    /* An offer of any length (Autobahn|Python's default is about 137 octets). */
    char longh[4096];
    size_t n = (size_t)sprintf(longh, "GET /ws HTTP/1.1\r\nSec-WebSocket-Protocol: ");
    for (int i = 0; i < 100; i++) {
        n += (size_t)sprintf(longh + n, "%swamp.2.x%d", i ? ", " : "", i);
    }
    n += (size_t)sprintf(longh + n, "\r\n\r\n");
    ck_assert_int_eq(rt_http1_parse(longh, n, 8192, &req, &why), WAMP_OK);
    char joined[4096];
    size_t jl = rt_http1_join(&req, "sec-websocket-protocol", joined, sizeof(joined));
    ck_assert_uint_gt(jl, 1000);
    ck_assert(rt_http1_has_token(&req, "sec-websocket-protocol", "wamp.2.x99"));
}

END_TEST

START_TEST(test_keep_alive)
{
    static const struct {
        const char *head;
        bool keep;
    } v[] = {
            {"GET / HTTP/1.1\r\n\r\n", true},
            {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
            {"GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n", false},
            {"GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false},
            {"GET / HTTP/1.0\r\n\r\n", false},
            {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
            {"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false},
    };

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        rt_http1_req req;
        const char *why;
        ck_assert_int_eq(parse(v[i].head, &req, &why), WAMP_OK);
        ck_assert_msg(rt_http1_keep_alive(&req) == v[i].keep, "%s", v[i].head);
    }
}

END_TEST

START_TEST(test_bytes_after_head)
{
    /* A body, then a pipelined second request: each head ends where it says. */
    const char *two = "POST /call HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
                      "GET /next HTTP/1.1\r\nHost: x\r\n\r\nGET /third";
    rt_http1_req req;
    const char *why;
    size_t len = strlen(two);
    ck_assert_int_eq(rt_http1_parse(two, len, 8192, &req, &why), WAMP_OK);
    uint64_t body;
    ck_assert_int_eq(rt_http1_body_length(&req, &body), WAMP_OK);
    ck_assert_uint_eq(body, 5);
    ck_assert_mem_eq(two + req.head_len, "hello", 5);
    size_t off = req.head_len + 5;
    ck_assert_int_eq(rt_http1_parse(two + off, len - off, 8192, &req, &why), WAMP_OK);
    ck_assert(str_is(req.path, "/next"));
    off += req.head_len;
    ck_assert_int_eq(rt_http1_parse(two + off, len - off, 8192, &req, &why), WAMP_EAGAIN);
    /* A RawSocket or WebSocket frame right after an upgrade head is not part of the head. */
    char up[256];
    size_t n = (size_t)sprintf(up, "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n");
    memcpy(up + n, "\x81\x85\x01\x02\x03\x04\r\n\r\n", 10);
    ck_assert_int_eq(rt_http1_parse(up, n + 10, 8192, &req, &why), WAMP_OK);
    ck_assert_uint_eq(req.head_len, n);
}

END_TEST

START_TEST(test_dates)
{
    char d[RT_HTTP1_DATE_MAX];
    rt_http1_date(784111777, d); /* RFC 9110's example */
    ck_assert_str_eq(d, "Sun, 06 Nov 1994 08:49:37 GMT");
    rt_http1_date(0, d);
    ck_assert_str_eq(d, "Thu, 01 Jan 1970 00:00:00 GMT");
    rt_http1_date(1798761599, d); /* the last second of 2026 */
    ck_assert_str_eq(d, "Thu, 31 Dec 2026 23:59:59 GMT");
    rt_http1_date(253402300799, d); /* the last second a four-digit year holds */
    ck_assert_str_eq(d, "Fri, 31 Dec 9999 23:59:59 GMT");
    rt_http1_date(253402300800, d);
    ck_assert_str_eq(d, "");
    rt_http1_date(-1, d);
    ck_assert_str_eq(d, "Wed, 31 Dec 1969 23:59:59 GMT");
    rt_http1_date(-2208988801, d); /* 1899: before what HTTP dates are meant for */
    ck_assert_str_eq(d, "");
}

END_TEST

START_TEST(test_reason_phrases)
{
    ck_assert_str_eq(rt_http1_reason(101), "Switching Protocols");
    ck_assert_str_eq(rt_http1_reason(200), "OK");
    ck_assert_str_eq(rt_http1_reason(400), "Bad Request");
    ck_assert_str_eq(rt_http1_reason(404), "Not Found");
    ck_assert_str_eq(rt_http1_reason(411), "Length Required");
    ck_assert_str_eq(rt_http1_reason(431), "Request Header Fields Too Large");
    ck_assert_str_eq(rt_http1_reason(503), "Service Unavailable");
    ck_assert_str_eq(rt_http1_reason(299), "Unknown");
}

END_TEST

static Suite *rt_http1_suite(void)
{
    Suite *s = suite_create("rt_http1");
    TCase *tc = tcase_create("http1");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_upgrade_request);
    tcase_add_test(tc, test_every_prefix_is_incomplete);
    tcase_add_test(tc, test_request_lines);
    tcase_add_test(tc, test_refused_request_lines);
    tcase_add_test(tc, test_refused_fields);
    tcase_add_test(tc, test_content_length_rules);
    tcase_add_test(tc, test_limits_431);
    tcase_add_test(tc, test_join);
    tcase_add_test(tc, test_keep_alive);
    tcase_add_test(tc, test_bytes_after_head);
    tcase_add_test(tc, test_reason_phrases);
    tcase_add_test(tc, test_dates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_http1_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
