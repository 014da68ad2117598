/* check_rt_bridge.c: the HTTP bridge without a socket: the checks before the body, the body ->
 * the PUBLISH or CALL, and the router's answer -> the HTTP answer, with Crossbar's texts. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rt_bridge.h"
#include "wamp_types.h"

static const rt_web_path publisher = {
        .prefix = "/pub",
        .kind = RT_WEB_PUBLISHER,
        .post_body_limit = 100,
};

static const rt_web_path caller = {
        .prefix = "/call",
        .kind = RT_WEB_CALLER,
        .post_body_limit = 100,
        .call_timeout_ms = 60000,
};

/* The body of a: parsed, for exact comparisons. */
static json_t *body_of(const rt_bridge_answer *a)
{
    json_t *v = json_loadb(a->body, a->len, 0, NULL);
    ck_assert_ptr_nonnull(v);
    return v;
}

/* a is a denial with status and error text error (Crossbar's body: empty args and kwargs). */
static void assert_denied(rt_bridge_answer *a, unsigned status, const char *error)
{
    ck_assert_uint_eq(a->status, status);
    json_t *want = json_pack("{s:s, s:[], s:{}}", "error", error, "args", "kwargs");
    json_t *got = body_of(a);
    ck_assert_msg(json_equal(want, got), "got %s", a->body);
    json_decref(want);
    json_decref(got);
    rt_bridge_answer_fini(a);
}

static bool check(const rt_web_path *w, const char *method, const char *ct, int64_t len, bool tls,
                  rt_bridge_answer *deny)
{
    rt_bridge_req req = {.method = method, .content_type = ct, .content_length = len, .tls = tls};
    bool proceed = true;
    ck_assert_int_eq(rt_bridge_check(w, &req, &proceed, deny), WAMP_OK);
    return proceed;
}

START_TEST(test_check_before_the_body)
{
    rt_bridge_answer a = {0};
    ck_assert(check(&publisher, "POST", NULL, -1, false, &a));
    ck_assert(check(&publisher, "PUT", "application/json", 100, false, &a));
    ck_assert(check(&publisher, "POST", "Application/JSON ; charset=UTF-8", 5, false, &a));
    ck_assert(check(&publisher, "POST", "application/json;charset=utf8", 5, false, &a));
    ck_assert(!check(&publisher, "GET", NULL, -1, false, &a));
    assert_denied(&a, 405,
                  "Method not accepted by the REST bridge. (GET not allowed, only POST, PUT)");
    ck_assert(!check(&publisher, "POST", "text/plain", 5, false, &a));
    assert_denied(&a, 400,
                  "Non-accepted content type. (must be one of 'application/json', not "
                  "'text/plain')");
    ck_assert(!check(&publisher, "POST", "application/json; charset=latin-1", 5, false, &a));
    assert_denied(&a, 400, "Non-accepted request encoding, must be UTF-8.");
    ck_assert(!check(&publisher, "POST", "application/json", 101, false, &a));
    assert_denied(&a, 413, "Request too long. (101 is longer than accepted 100)");
    rt_web_path tls_only = publisher;
    tls_only.require_tls = true;
    ck_assert(check(&tls_only, "POST", NULL, 5, true, &a));
    ck_assert(!check(&tls_only, "POST", NULL, 5, false, &a));
    assert_denied(&a, 400, "Malformed request to the REST bridge.");
    rt_cidr nets[2] = {{.family = RT_IP_V4, .addr = {10, 0, 0, 0}, .prefix = 8},
                       {.family = RT_IP_V6, .addr = {0x20, 0x01, 0x0d, 0xb8}, .prefix = 32}};
    rt_web_path by_ip = publisher;
    by_ip.require_ip = nets;
    by_ip.n_require_ip = 2;
    rt_bridge_req req = {.method = "POST", .content_length = -1};
    bool proceed = false;
    static const char *const ok_peers[] = {"10.1.2.3:5555", "[2001:db8::1]:80",
                                           "[::ffff:10.9.9.9]:1"};
    for (size_t i = 0; i < 3; i++) {
        req.peer_addr = ok_peers[i];
        ck_assert_int_eq(rt_bridge_check(&by_ip, &req, &proceed, &a), WAMP_OK);
        ck_assert_msg(proceed, "%s refused", ok_peers[i]);
    }
    static const char *const bad_peers[] = {"127.0.0.1:5555", "[2001:db9::1]:80", "", NULL};
    for (size_t i = 0; i < 4; i++) {
        req.peer_addr = bad_peers[i];
        ck_assert_int_eq(rt_bridge_check(&by_ip, &req, &proceed, &a), WAMP_OK);
        ck_assert(!proceed);
        assert_denied(&a, 400, "Request denied based on IP address.");
    }
}

END_TEST

/* The message the body becomes, parsed; NULL with *deny set for a refused body. */
static json_t *message(const rt_web_path *w, const char *body, rt_bridge_answer *deny)
{
    char *msg = NULL;
    size_t len = 0;
    ck_assert_int_eq(
            rt_bridge_message(w, (const unsigned char *)body, strlen(body), 7, &msg, &len, deny),
            WAMP_OK);
    if (!msg) {
        return NULL;
    }
    json_t *v = json_loadb(msg, len, 0, NULL);
    free(msg);
    ck_assert_ptr_nonnull(v);
    return v;
}

static void assert_message(const rt_web_path *w, const char *body, const char *want_text)
{
    rt_bridge_answer a = {0};
    json_t *got = message(w, body, &a);
    ck_assert_msg(got, "refused: %s", a.body ? a.body : "");
    json_t *want = json_loads(want_text, 0, NULL);
    ck_assert_ptr_nonnull(want);
    char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_msg(json_equal(want, got), "got %s", g);
    free(g);
    json_decref(want);
    json_decref(got);
}

START_TEST(test_publish_message)
{
    assert_message(&publisher, "{\"topic\": \"com.x\"}",
                   "[16, 7, {\"acknowledge\": true}, \"com.x\"]");
    assert_message(&publisher,
                   "{\"topic\": \"com.x\", \"args\": [1, \"\\u00e9\"], \"kwargs\": {\"k\": null}}",
                   "[16, 7, {\"acknowledge\": true}, \"com.x\", [1, \"\\u00e9\"], {\"k\": null}]");
    /* kwargs without args: an empty args list in front. Empty args/kwargs count as absent. */
    assert_message(&publisher, "{\"topic\": \"com.x\", \"args\": [], \"kwargs\": {\"a\": 1}}",
                   "[16, 7, {\"acknowledge\": true}, \"com.x\", [], {\"a\": 1}]");
    assert_message(&publisher, "{\"topic\": \"com.x\", \"args\": null, \"kwargs\": {}}",
                   "[16, 7, {\"acknowledge\": true}, \"com.x\"]");
    /* The options Crossbar passes on, and no others; acknowledge is always set. */
    assert_message(&publisher,
                   "{\"topic\": \"com.x\", \"options\": {\"exclude\": [5], \"eligible_authrole\": "
                   "\"r\", \"retain\": true, \"acknowledge\": false, \"x_other\": 1}}",
                   "[16, 7, {\"acknowledge\": true, \"exclude\": [5], \"eligible_authrole\": "
                   "\"r\", \"retain\": true}, \"com.x\"]");
}

END_TEST

START_TEST(test_call_message_timeout)
{
    assert_message(&caller, "{\"procedure\": \"com.p\", \"args\": [1, 2]}",
                   "[48, 7, {\"timeout\": 60000}, \"com.p\", [1, 2]]");
    assert_message(&caller, "{\"procedure\": \"com.p\", \"options\": {\"timeout\": 1500}}",
                   "[48, 7, {\"timeout\": 1500}, \"com.p\"]");
    /* 0 ("no timeout" in WAMP) still waits no longer than the path's default. */
    assert_message(&caller, "{\"procedure\": \"com.p\", \"options\": {\"timeout\": 0}}",
                   "[48, 7, {\"timeout\": 60000}, \"com.p\"]");
    rt_web_path unbounded = caller;
    unbounded.call_timeout_ms = 0;
    assert_message(&unbounded, "{\"procedure\": \"com.p\"}", "[48, 7, {}, \"com.p\"]");
    rt_bridge_answer a = {0};
    ck_assert_ptr_null(
            message(&caller, "{\"procedure\": \"com.p\", \"options\": {\"timeout\": -1}}", &a));
    assert_denied(&a, 400,
                  "Request body was valid JSON, but not well formed (options.timeout must be a "
                  "non-negative integer, ms).");
}

END_TEST

START_TEST(test_bad_bodies)
{
    static const struct {
        const rt_web_path *w;
        const char *body;
        const char *error;
    } cases[] = {
            {&publisher, "{\"topic\": \"a\"", "Request body was invalid JSON."},
            {&publisher, "", "Request body was invalid JSON."},
            {&publisher, "\"\xff\"", "Non-decodable request body, was not UTF-8."},
            {&publisher, "[1]",
             "Request body was valid JSON, but not well formed (must be a dict)."},
            {&publisher, "{\"args\": [1]}",
             "Request body was valid JSON, but not well formed (missing key 'topic')."},
            {&caller, "{\"topic\": \"x\"}",
             "Request body was valid JSON, but not well formed (missing key 'procedure')."},
            {&publisher, "{\"topic\": 5}",
             "Request body was valid JSON, but not well formed ('topic' must be a string)."},
            {&publisher, "{\"topic\": \"a\", \"args\": {\"x\": 1}}",
             "Request body was valid JSON, but not well formed ('args' must be a list)."},
            {&publisher, "{\"topic\": \"a\", \"kwargs\": [1]}",
             "Request body was valid JSON, but not well formed ('kwargs' must be a dict)."},
            {&publisher, "{\"topic\": \"a\", \"options\": 3}",
             "Request body was valid JSON, but not well formed ('options' must be a dict)."},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rt_bridge_answer a = {0};
        ck_assert_msg(!message(cases[i].w, cases[i].body, &a), "case %zu accepted", i);
        assert_denied(&a, 400, cases[i].error);
    }
}

END_TEST

/* The answer to request 7 that the router's message text gives, or NULL for none. */
static char *answer(const char *msg_text, unsigned *status)
{
    json_t *m = json_loads(msg_text, 0, NULL);
    ck_assert_ptr_nonnull(m);
    rt_bridge_answer a = {0};
    bool is = true;
    ck_assert_int_eq(rt_bridge_answer_of(m, 7, &is, &a), WAMP_OK);
    json_decref(m);
    if (!is) {
        ck_assert_ptr_null(a.body);
        return NULL;
    }
    *status = a.status;
    json_t *v = body_of(&a);
    rt_bridge_answer_fini(&a);
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(v);
    return s;
}

static void assert_answer(const char *msg_text, const char *want)
{
    unsigned status = 0;
    char *got = answer(msg_text, &status);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(status, 200);
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(test_answers)
{
    unsigned status = 0;
    assert_answer("[17, 7, 123456789]", "{\"id\":123456789}");
    /* RESULT as autobahn's call() result, written by Crossbar's caller. */
    assert_answer("[50, 7, {}]", "{\"args\":[null]}");
    assert_answer("[50, 7, {}, [5]]", "{\"args\":[5]}");
    assert_answer("[50, 7, {}, [[1, 2]]]", "{\"args\":[[1,2]]}");
    assert_answer("[50, 7, {}, [1, 2]]", "{\"args\":[1,2]}");
    assert_answer("[50, 7, {}, [], {\"a\": 1}]", "{\"kwargs\":{\"a\":1}}");
    assert_answer("[50, 7, {}, [1], {\"a\": 1}]", "{\"args\":[1],\"kwargs\":{\"a\":1}}");
    /* ERROR: 200 with the error URI, as Crossbar answers an ApplicationError. */
    assert_answer("[8, 48, 7, {}, \"com.err\", [\"no\"], {\"k\": 1}]",
                  "{\"args\":[\"no\"],\"error\":\"com.err\",\"kwargs\":{\"k\":1}}");
    assert_answer("[8, 16, 7, {}, \"wamp.error.not_authorized\"]",
                  "{\"args\":[],\"error\":\"wamp.error.not_authorized\",\"kwargs\":{}}");
    /* Not an answer to request 7. */
    ck_assert_ptr_null(answer("[2, 99, {}]", &status));
    ck_assert_ptr_null(answer("[17, 8, 1]", &status));
    ck_assert_ptr_null(answer("[8, 48, 8, {}, \"x\"]", &status));
    ck_assert_ptr_null(answer("[2, 5, {}]", &status));
    /* The router ends the request's session: 503 with its reason. */
    char *got = answer("[3, {\"message\": \"limit reached\"}, \"wampscope.error.limit_reached\"]",
                       &status);
    ck_assert_uint_eq(status, 503);
    ck_assert_str_eq(got, "{\"args\":[\"limit reached\"],\"error\":\"wampscope.error.limit_"
                          "reached\",\"kwargs\":{}}");
    free(got);
    got = answer("[6, {}, \"wamp.close.system_shutdown\"]", &status);
    ck_assert_uint_eq(status, 503);
    ck_assert_str_eq(got, "{\"args\":[],\"error\":\"wamp.close.system_shutdown\",\"kwargs\":{}}");
    free(got);
}

END_TEST

START_TEST(test_parse_timestamp)
{
    int64_t ms = 0;
    ck_assert(rt_bridge_parse_timestamp("1970-01-01T00:00:00.0Z", &ms));
    ck_assert_int_eq(ms, 0);
    ck_assert(rt_bridge_parse_timestamp("2011-10-14T16:59:51.123Z", &ms));
    ck_assert_int_eq(ms, 1318611591123);
    ck_assert(rt_bridge_parse_timestamp("2024-02-29T23:59:59.999999Z", &ms));
    ck_assert_int_eq(ms, 1709251199999);
    static const char *const bad[] = {
            "2011-10-14T16:59:51Z",    "2011-10-14T16:59:51.Z",
            "2011-10-14 16:59:51.1Z",  "2011-10-14T16:59:51.1234567Z",
            "2011-10-14T16:59:51.1",   "2011-13-14T16:59:51.1Z",
            "2023-02-29T16:59:51.1Z",  "2011-10-14T24:00:00.1Z",
            "2011-10-14T16:59:51.1Zx", "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(!rt_bridge_parse_timestamp(bad[i], &ms), "accepted %s", bad[i]);
    }
}

END_TEST

static const rt_web_path signed_pub = {
        .prefix = "/signed",
        .kind = RT_WEB_PUBLISHER,
        .post_body_limit = 100,
        .sign_key = "foobar",
        .sign_secret = "secret",
        .timestamp_delta_secs = 10,
};

/* 2011-10-14T16:59:51.123Z */
#define NOW_MS    1318611591123
#define SIGNATURE "SwbWYN1_HZLzW2o2cwyGQOd3-UOXmQKBJJ1SQGEryk0="

static bool verify(const rt_web_path *w, const rt_bridge_sig *q, const char *body,
                   rt_bridge_answer *deny)
{
    bool ok = false;
    ck_assert_int_eq(
            rt_bridge_verify(w, q, (const unsigned char *)body, strlen(body), NOW_MS, &ok, deny),
            WAMP_OK);
    return ok;
}

START_TEST(test_signed_requests)
{
    /* The signature of Crossbar's scheme for these arguments and body (computed with Python:
     * base64.urlsafe_b64encode(hmac.new(b"secret", b"foobar" + ts + b"1" + b"77" + body,
     * hashlib.sha256).digest())). */
    const char *body = "{\"topic\": \"com.x\"}";
    rt_bridge_sig q = {.key = "foobar",
                       .timestamp = "2011-10-14T16:59:50.000Z",
                       .seq = "1",
                       .nonce = "77",
                       .signature = SIGNATURE};
    rt_bridge_answer a = {0};
    ck_assert(verify(&signed_pub, &q, body, &a));
    ck_assert(!verify(&signed_pub, &q, "{\"topic\": \"com.y\"}", &a));
    assert_denied(&a, 401, "REST bridge signature secret not valid.");
    rt_bridge_sig k = q;
    k.key = "other";
    ck_assert(!verify(&signed_pub, &k, body, &a));
    assert_denied(&a, 401, "REST bridge signature key not valid.");
    rt_bridge_sig t = q;
    t.timestamp = "2011-10-14T16:59:30.000Z";
    ck_assert(!verify(&signed_pub, &t, body, &a));
    assert_denied(&a, 400, "Request expired, too old timestamp.");
    t.timestamp = "yesterday";
    ck_assert(!verify(&signed_pub, &t, body, &a));
    assert_denied(&a, 400,
                  "REST bridge signature was invalid (invalid timestamp 'yesterday' (must be "
                  "UTC/ISO-8601, e.g. '2011-10-14T16:59:51.123Z')).");
    rt_bridge_sig n = q;
    n.nonce = "x1";
    ck_assert(!verify(&signed_pub, &n, body, &a));
    assert_denied(&a, 400,
                  "REST bridge signature was invalid (invalid nonce 'x1' (must be an integer)).");
    rt_bridge_sig m = q;
    m.seq = NULL;
    ck_assert(!verify(&signed_pub, &m, body, &a));
    assert_denied(&a, 400,
                  "REST bridge signature was invalid (missing mandatory field - 'seq' field "
                  "missing).");
    m = q;
    m.signature = NULL;
    ck_assert(!verify(&signed_pub, &m, body, &a));
    assert_denied(&a, 400,
                  "REST bridge signature was invalid (missing mandatory field - 'signature' "
                  "field missing).");
    /* An unsigned path takes unsigned requests, but still checks a given timestamp. */
    rt_bridge_sig none = {0};
    ck_assert(verify(&publisher, &none, body, &a));
    rt_web_path unsigned_pub = publisher;
    unsigned_pub.timestamp_delta_secs = 10;
    ck_assert(!verify(&unsigned_pub, &t, body, &a));
    rt_bridge_answer_fini(&a);
}

END_TEST

static Suite *rt_bridge_suite(void)
{
    Suite *s = suite_create("rt_bridge");
    TCase *tc = tcase_create("pure");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_check_before_the_body);
    tcase_add_test(tc, test_publish_message);
    tcase_add_test(tc, test_call_message_timeout);
    tcase_add_test(tc, test_bad_bodies);
    tcase_add_test(tc, test_answers);
    tcase_add_test(tc, test_parse_timestamp);
    tcase_add_test(tc, test_signed_requests);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_bridge_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
