/* check_rt_trace.c: the router core feeding the tracing hub: records on rx and tx, correlation
 * chains (mgmt/README.md "Correlation"), action URIs, serializations, management realm exclusion
 * and protected mode. Records are read back through trace_render, as the management API does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "alloc_count.h"
#include "fake_transport.h"
#include "rt_broker.h"
#include "rt_dealer.h"
#include "rt_realm.h"
#include "test_router.h"
#include "tmp_dir.h"
#include "trace_hub.h"
#include "trace_render.h"
#include "trace_store.h"

static test_router T;

static void setup(void)
{
    test_router_init(&T);
}

static void teardown(void)
{
    test_router_fini(&T);
}

static fake_conn *joined(wamp_ser ser, const char *realm)
{
    return fake_conn_new_joined(T.rt, ser, realm);
}

/* Takes the INVOCATION callee received; returns its request id. */
static long long next_invocation(fake_conn *callee)
{
    json_t *inv = fake_conn_next(callee);
    ck_assert_ptr_nonnull(inv);
    ck_assert_int_eq(fake_msg_int(inv, 0), WAMP_MSG_INVOCATION);
    long long id = (long long)fake_msg_int(inv, 1);
    json_decref(inv);
    return id;
}

/* Starts trace id with options given as JSON text (NULL = defaults). */
static trace *start(const char *id, const char *options)
{
    return test_router_start_trace(&T, id, options);
}

/* Every record of t rendered (owned array). */
static json_t *records(trace *t)
{
    return test_router_records(t);
}

static const char *str(const json_t *rec, const char *key)
{
    return json_string_value(json_object_get(rec, key));
}

static bool flag(const json_t *rec, const char *key)
{
    return json_is_true(json_object_get(rec, key));
}

static void expect_record(const json_t *rec, const char *dir, const char *type, const char *uri)
{
    ck_assert_str_eq(str(rec, "direction"), dir);
    ck_assert_str_eq(str(rec, "msg_type"), type);
    if (uri) {
        ck_assert_str_eq(str(rec, "uri"), uri);
    } else {
        ck_assert(json_is_null(json_object_get(rec, "uri")));
    }
}

START_TEST(test_no_trace_no_records)
{
    trace_hub *hub = rt_router_trace_hub(T.rt);
    ck_assert(!trace_hub_is_active(hub));
    fake_conn *c = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(c, "[32, 1, {}, \"com.t\"]");
    fake_conn_clear(c);
    trace *t = start("late", NULL);
    ck_assert(trace_hub_is_active(hub));
    ck_assert_uint_eq(trace_store_records(trace_get_store(t)), 0);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_call_chain)
{
    fake_conn *callee = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.math.add\"]");
    fake_conn_clear(callee);
    trace *t = start("calls", NULL);
    fake_conn_send(caller, "[48, 7, {}, \"com.math.add\", [2, 3]]");
    fake_conn_send(callee, "[70, %lld, {}, [5]]", next_invocation(callee));
    fake_conn_clear(caller);

    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 4);
    expect_record(json_array_get(r, 0), "rx", "Call", "com.math.add");
    expect_record(json_array_get(r, 1), "tx", "Invocation", "com.math.add");
    expect_record(json_array_get(r, 2), "rx", "Yield", "com.math.add");
    expect_record(json_array_get(r, 3), "tx", "Result", "com.math.add");
    const char *corr = str(json_array_get(r, 0), "correlation");
    ck_assert_ptr_nonnull(corr);
    ck_assert_int_eq((int)strlen(corr), 36);
    for (size_t i = 0; i < 4; i++) {
        json_t *rec = json_array_get(r, i);
        ck_assert_int_eq(json_integer_value(json_object_get(rec, "seq")), (json_int_t)i);
        ck_assert_str_eq(str(rec, "correlation"), corr);
        ck_assert(flag(rec, "correlation_is_anchor") == (i == 0));
        ck_assert(flag(rec, "correlation_is_last") == (i == 3));
        ck_assert_str_eq(str(rec, "realm"), "realm1");
    }
    /* Sessions and serializations: the CALL came from the JSON caller, INVOCATION went to the
     * msgpack callee. */
    ck_assert_uint_eq(
            (uint64_t)json_integer_value(json_object_get(json_array_get(r, 0), "session_id")),
            rt_session_id(caller->s));
    ck_assert_uint_eq(
            (uint64_t)json_integer_value(json_object_get(json_array_get(r, 1), "session_id")),
            rt_session_id(callee->s));
    json_t *ser1 = json_object_get(json_array_get(r, 1), "serializations");
    ck_assert(json_integer_value(json_object_get(ser1, "msgpack")) > 0);
    ck_assert_ptr_null(json_object_get(ser1, "json"));
    /* msg is the message as sent/received. */
    json_t *msg = json_object_get(json_array_get(r, 3), "msg");
    ck_assert_int_eq(json_integer_value(json_array_get(msg, 0)), WAMP_MSG_RESULT);
    ck_assert_int_eq(json_integer_value(json_array_get(msg, 1)), 7);
    json_decref(r);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* Every record carries its own action's URI while a session's actions alternate between URIs of
 * the same and of different lengths (each session keeps its last action's URI for the next one:
 * a stale one must never be taken), two callers interleaved. */
START_TEST(test_action_uris_alternate)
{
    static const char *const procs[] = {"com.a",           "com.b", "com.a",
                                        "com.longer.name", "com.b", "com.a"};
    const size_t n = sizeof(procs) / sizeof(procs[0]);
    fake_conn *callee = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *callers[2] = {joined(WAMP_SER_JSON, "realm1"), joined(WAMP_SER_MSGPACK, "realm1")};
    fake_conn_send(callee, "[64, 1, {}, \"com.a\"]");
    fake_conn_send(callee, "[64, 2, {}, \"com.b\"]");
    fake_conn_send(callee, "[64, 3, {}, \"com.longer.name\"]");
    fake_conn_clear(callee);
    trace *t = start("uris", NULL);
    for (size_t i = 0; i < n; i++) {
        fake_conn *caller = callers[i % 2];
        fake_conn_send(caller, "[48, %zu, {}, \"%s\", []]", i + 1, procs[(i * 5) % n]);
        fake_conn_send(callee, "[70, %lld, {}, []]", next_invocation(callee));
        fake_conn_clear(caller);
    }
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 4 * n);
    static const char *const types[] = {"Call", "Invocation", "Yield", "Result"};
    for (size_t i = 0; i < 4 * n; i++) {
        expect_record(json_array_get(r, i), i % 2 ? "tx" : "rx", types[i % 4],
                      procs[((i / 4) * 5) % n]);
    }
    json_decref(r);
    fake_conn_free(callee);
    fake_conn_free(callers[0]);
    fake_conn_free(callers[1]);
}

END_TEST

START_TEST(test_call_error_and_callee_leaving)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.p\"]");
    fake_conn_clear(callee);
    trace *t = start(NULL, NULL);
    ck_assert_str_eq(trace_id(t), "trace1");
    /* An application error. */
    fake_conn_send(caller, "[48, 1, {}, \"com.p\"]");
    fake_conn_send(callee, "[8, 68, %lld, {}, \"com.example.oops\"]", next_invocation(callee));
    /* A call the callee never answers: it leaves. */
    fake_conn_send(caller, "[48, 2, {}, \"com.p\"]");
    fake_conn_clear(callee);
    fake_conn_disconnect(callee);
    fake_conn_clear(caller);

    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 7);
    expect_record(json_array_get(r, 2), "rx", "Error", "com.p");
    expect_record(json_array_get(r, 3), "tx", "Error", "com.p");
    ck_assert_str_eq(str(json_array_get(r, 3), "correlation"),
                     str(json_array_get(r, 0), "correlation"));
    ck_assert(flag(json_array_get(r, 3), "correlation_is_last"));
    /* Second call: CALL, INVOCATION, then the canceled ERROR with the same correlation. */
    expect_record(json_array_get(r, 4), "rx", "Call", "com.p");
    expect_record(json_array_get(r, 6), "tx", "Error", "com.p");
    ck_assert_str_eq(str(json_array_get(r, 6), "correlation"),
                     str(json_array_get(r, 4), "correlation"));
    ck_assert_str_ne(str(json_array_get(r, 4), "correlation"),
                     str(json_array_get(r, 0), "correlation"));
    ck_assert(flag(json_array_get(r, 6), "correlation_is_last"));
    json_t *msg = json_object_get(json_array_get(r, 6), "msg");
    ck_assert_str_eq(json_string_value(json_array_get(msg, 4)), WAMP_ERROR_CANCELED);
    json_decref(r);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* PUBLISH from a JSON session to n subscribers (alternating JSON / msgpack) with ack. */
static void publish_case(int n, bool ack)
{
    fake_conn *subs[4];
    for (int i = 0; i < n; i++) {
        subs[i] = joined(i % 2 ? WAMP_SER_MSGPACK : WAMP_SER_JSON, "realm1");
        fake_conn_send(subs[i], "[32, 1, {}, \"com.news\"]");
        fake_conn_clear(subs[i]);
    }
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    trace *t = start("pub", NULL);
    fake_conn_send(pub, "[16, 3, {\"acknowledge\": %s}, \"com.news\", [\"x\"]]",
                   ack ? "true" : "false");
    json_t *r = records(t);
    size_t expect = 1 + (size_t)n + (ack ? 1 : 0);
    ck_assert_uint_eq(json_array_size(r), expect);
    expect_record(json_array_get(r, 0), "rx", "Publish", "com.news");
    ck_assert(flag(json_array_get(r, 0), "correlation_is_anchor"));
    ck_assert(flag(json_array_get(r, 0), "correlation_is_last") == (n == 0 && !ack));
    for (size_t i = 1; i < expect; i++) {
        json_t *rec = json_array_get(r, i);
        expect_record(rec, "tx", i <= (size_t)n ? "Event" : "Published", "com.news");
        ck_assert_str_eq(str(rec, "correlation"), str(json_array_get(r, 0), "correlation"));
        ck_assert(flag(rec, "correlation_is_last") == (i == expect - 1));
        if (i <= (size_t)n && n > 1) {
            /* Receivers of both serializers: every EVENT record shows both sizes. */
            json_t *ser = json_object_get(rec, "serializations");
            ck_assert(json_integer_value(json_object_get(ser, "json")) > 0);
            ck_assert(json_integer_value(json_object_get(ser, "msgpack")) > 0);
        }
    }
    json_decref(r);
    for (int i = 0; i < n; i++) {
        fake_conn_free(subs[i]);
    }
    fake_conn_free(pub);
}

START_TEST(test_publish_chains)
{
    publish_case(0, false);
    test_router_fini(&T);
    test_router_init(&T);
    publish_case(1, false);
    test_router_fini(&T);
    test_router_init(&T);
    publish_case(3, false);
    test_router_fini(&T);
    test_router_init(&T);
    publish_case(3, true);
}

END_TEST

/* A PUBLISH reaching pattern subscriptions through black/white lists: every EVENT record has
 * the concrete topic as uri, the last EVENT completes the action, and a PUBLISH whose receivers
 * are all excluded is its own last record. */
START_TEST(test_publish_chain_over_patterns_and_filters)
{
    fake_conn *p = joined(WAMP_SER_JSON, "realm1");
    fake_conn *w = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *x = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(p, "[32, 1, {\"match\": \"prefix\"}, \"com.news\"]");
    fake_conn_send(w, "[32, 1, {\"match\": \"wildcard\"}, \"com..sport\"]");
    fake_conn_send(x, "[32, 1, {}, \"com.news.sport\"]");
    fake_conn_clear(p);
    fake_conn_clear(w);
    fake_conn_clear(x);
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    trace *t = start("pat", NULL);
    /* x (exact, delivered first) is excluded: the wildcard EVENT is the last one. */
    fake_conn_send(pub, "[16, 3, {\"exclude\": [%llu]}, \"com.news.sport\", [\"x\"]]",
                   (unsigned long long)rt_session_id(x->s));
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 3);
    expect_record(json_array_get(r, 0), "rx", "Publish", "com.news.sport");
    ck_assert(!flag(json_array_get(r, 0), "correlation_is_last"));
    for (size_t i = 1; i < 3; i++) {
        json_t *rec = json_array_get(r, i);
        expect_record(rec, "tx", "Event", "com.news.sport");
        ck_assert_str_eq(str(rec, "correlation"), str(json_array_get(r, 0), "correlation"));
        ck_assert(flag(rec, "correlation_is_last") == (i == 2));
    }
    ck_assert_uint_eq(fake_conn_pending(x), 0);
    ck_assert_uint_eq(fake_conn_pending(p), 1);
    ck_assert_uint_eq(fake_conn_pending(w), 1);
    json_decref(r);
    /* Nobody eligible: the PUBLISH record itself is the last. */
    fake_conn_send(pub, "[16, 4, {\"eligible\": [1]}, \"com.news.sport\", [\"y\"]]");
    r = records(t);
    ck_assert_uint_eq(json_array_size(r), 4);
    expect_record(json_array_get(r, 3), "rx", "Publish", "com.news.sport");
    ck_assert(flag(json_array_get(r, 3), "correlation_is_last"));
    json_decref(r);
    fake_conn_free(p);
    fake_conn_free(w);
    fake_conn_free(x);
    fake_conn_free(pub);
}

END_TEST

/* A PUBLISH's record waits for whether anything follows it: the flag comes from what is sent,
 * not from who subscribes. A PUBLISH refused without acknowledge has subscribers but nothing
 * follows: it is its own last record (asking the broker for receivers said otherwise). A trace
 * that keeps only PUBLISH messages still learns that EVENTs followed. */
START_TEST(test_publish_last_from_what_follows)
{
    fake_conn *sub = joined(WAMP_SER_JSON, "locked");
    fake_conn_send(sub, "[32, 1, {}, \"com.open.news\"]");
    ck_assert_uint_eq(fake_conn_pending(sub), 1); /* SUBSCRIBED: allowed */
    fake_conn_clear(sub);
    fake_conn *pub = joined(WAMP_SER_JSON, "locked");
    trace *t = start("refused", NULL);
    fake_conn_send(pub, "[16, 3, {}, \"com.open.news\", [\"x\"]]"); /* publish not allowed */
    ck_assert_uint_eq(fake_conn_pending(sub), 0);
    ck_assert_uint_eq(fake_conn_pending(pub), 0);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 1);
    expect_record(json_array_get(r, 0), "rx", "Publish", "com.open.news");
    ck_assert(flag(json_array_get(r, 0), "correlation_is_anchor"));
    ck_assert(flag(json_array_get(r, 0), "correlation_is_last"));
    json_decref(r);
    /* Allowed (com.open.exact), to one subscriber, with a trace that keeps only PUBLISH. */
    fake_conn_send(sub, "[32, 2, {}, \"com.open.exact\"]");
    fake_conn_clear(sub);
    trace *only = start("only-publish", "{\"msg_types\": [\"Publish\"]}");
    fake_conn_send(pub, "[16, 4, {}, \"com.open.exact\", [\"y\"]]");
    ck_assert_uint_eq(fake_conn_pending(sub), 1);
    r = records(only);
    ck_assert_uint_eq(json_array_size(r), 1);
    expect_record(json_array_get(r, 0), "rx", "Publish", "com.open.exact");
    ck_assert(!flag(json_array_get(r, 0), "correlation_is_last"));
    json_decref(r);
    /* The trace keeping everything (after the SUBSCRIBE and SUBSCRIBED): the PUBLISH before
     * its EVENT, which completes it. */
    r = records(t);
    ck_assert_uint_eq(json_array_size(r), 5);
    expect_record(json_array_get(r, 3), "rx", "Publish", "com.open.exact");
    ck_assert(!flag(json_array_get(r, 3), "correlation_is_last"));
    expect_record(json_array_get(r, 4), "tx", "Event", "com.open.exact");
    ck_assert(flag(json_array_get(r, 4), "correlation_is_last"));
    ck_assert_str_eq(str(json_array_get(r, 4), "correlation"),
                     str(json_array_get(r, 3), "correlation"));
    json_decref(r);
    fake_conn_free(sub);
    fake_conn_free(pub);
}

END_TEST

/* SUBSCRIBE with get_retained: the retained EVENTs follow SUBSCRIBED in the same action, and the
 * last of them completes it. */
START_TEST(test_subscribe_with_retained_events_chain)
{
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(pub, "[16, 1, {\"retain\": true}, \"com.ret.a\", [1]]");
    fake_conn_send(pub, "[16, 2, {\"retain\": true}, \"com.ret.b\", [2]]");
    fake_conn *c = joined(WAMP_SER_MSGPACK, "realm1");
    trace *t = start("ret", NULL);
    fake_conn_send(c, "[32, 3, {\"match\": \"prefix\", \"get_retained\": true}, \"com.ret.\"]");
    fake_conn_send(c, "[32, 4, {\"get_retained\": true}, \"com.ret.none\"]");
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 6);
    expect_record(json_array_get(r, 0), "rx", "Subscribe", "com.ret.");
    expect_record(json_array_get(r, 1), "tx", "Subscribed", "com.ret.");
    expect_record(json_array_get(r, 2), "tx", "Event", "com.ret.");
    expect_record(json_array_get(r, 3), "tx", "Event", "com.ret.");
    for (size_t i = 1; i < 4; i++) {
        ck_assert_str_eq(str(json_array_get(r, i), "correlation"),
                         str(json_array_get(r, 0), "correlation"));
        ck_assert(flag(json_array_get(r, i), "correlation_is_last") == (i == 3));
    }
    /* Nothing retained: SUBSCRIBED completes it. */
    expect_record(json_array_get(r, 5), "tx", "Subscribed", "com.ret.none");
    ck_assert(flag(json_array_get(r, 5), "correlation_is_last"));
    json_decref(r);
    fake_conn_free(pub);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_subscribe_unsubscribe_and_session_open)
{
    trace *t = start("subs", NULL);
    fake_conn *c = joined(WAMP_SER_JSON, "realm2");
    fake_conn_send(c, "[32, 1, {}, \"com.t\"]");
    json_t *m = fake_conn_next(c);
    fake_conn_send(c, "[34, 2, %lld]", (long long)fake_msg_int(m, 2));
    json_decref(m);
    fake_conn_clear(c);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 6);
    expect_record(json_array_get(r, 0), "rx", "Hello", NULL);
    ck_assert_str_eq(str(json_array_get(r, 0), "realm"), "realm2");
    expect_record(json_array_get(r, 1), "tx", "Welcome", NULL);
    ck_assert(flag(json_array_get(r, 1), "correlation_is_last"));
    ck_assert_str_eq(str(json_array_get(r, 1), "correlation"),
                     str(json_array_get(r, 0), "correlation"));
    expect_record(json_array_get(r, 2), "rx", "Subscribe", "com.t");
    expect_record(json_array_get(r, 3), "tx", "Subscribed", "com.t");
    ck_assert(flag(json_array_get(r, 3), "correlation_is_last"));
    expect_record(json_array_get(r, 4), "rx", "Unsubscribe", "com.t");
    expect_record(json_array_get(r, 5), "tx", "Unsubscribed", "com.t");
    ck_assert_str_eq(str(json_array_get(r, 5), "correlation"),
                     str(json_array_get(r, 4), "correlation"));
    json_decref(r);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_filters_and_concurrent_traces)
{
    trace *calls = start("calls", "{\"uris\": [{\"uri\": \"com.rpc.\", \"match\": \"prefix\"}]}");
    trace *rx_pub = start("pubs", "{\"msg_types\": [\"Publish\"], \"direction\": \"rx\"}");
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(a, "[64, 1, {}, \"com.rpc.echo\"]");
    fake_conn_clear(a);
    fake_conn_send(b, "[48, 1, {}, \"com.rpc.echo\", [1]]");
    fake_conn_send(a, "[70, %lld, {}, [1]]", next_invocation(a));
    fake_conn_send(b, "[16, 2, {}, \"com.news\"]");
    fake_conn_send(b, "[48, 3, {}, \"com.other\"]");
    fake_conn_clear(a);
    fake_conn_clear(b);
    json_t *r = records(calls);
    ck_assert_uint_eq(json_array_size(r), 6); /* REGISTER, REGISTERED, CALL ... RESULT */
    for (size_t i = 0; i < json_array_size(r); i++) {
        ck_assert_str_eq(str(json_array_get(r, i), "uri"), "com.rpc.echo");
    }
    json_decref(r);
    r = records(rx_pub);
    ck_assert_uint_eq(json_array_size(r), 1);
    expect_record(json_array_get(r, 0), "rx", "Publish", "com.news");
    json_decref(r);
    fake_conn_free(a);
    fake_conn_free(b);
}

END_TEST

START_TEST(test_management_realm)
{
    T.cfg.mgmt_enabled = true;
    T.cfg.mgmt_realm = "mgmt";
    test_router_fini(&T); /* rebuild with the management realm (keeps cfg) */
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    trace *all = start("all", NULL);
    trace *with_mgmt = start("with_mgmt", "{\"realms\": [\"mgmt\"]}");
    /* Loopback: joins as admin. */
    fake_conn *local = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_send(local, "[1, \"mgmt\", {\"roles\": {\"caller\": {}}}]");
    json_t *w = fake_conn_next(local);
    ck_assert_int_eq(fake_msg_int(w, 0), WAMP_MSG_WELCOME);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(w, 2), "authrole")), "admin");
    json_decref(w);
    /* Not loopback: refused. */
    rt_peer far;
    memset(&far, 0, sizeof(far));
    strcpy(far.addr, "192.0.2.7:4000");
    fake_conn *remote = fake_conn_new_peer(T.rt, WAMP_SER_JSON, &far);
    fake_conn_send(remote, "[1, \"mgmt\", {\"roles\": {\"caller\": {}}}]");
    fake_expect_abort(remote, WAMP_ERROR_NOT_AUTHORIZED);
    /* The management realm's messages are in the trace that names it only. */
    ck_assert_uint_eq(trace_store_records(trace_get_store(all)), 0);
    ck_assert_uint_ge(trace_store_records(trace_get_store(with_mgmt)), 4);
    fake_conn_free(local);
    fake_conn_free(remote);
}

END_TEST

/* The same with one trace alone (the flight recorder's way: the hub's fast path): nothing of the
 * management realm, before or after the join, and every message of another realm. */
START_TEST(test_management_realm_fast_path)
{
    T.cfg.mgmt_enabled = true;
    T.cfg.mgmt_realm = "mgmt";
    test_router_fini(&T);
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    trace *all = start("all", NULL);
    ck_assert(trace_hub_fast_ready(rt_router_trace_hub(T.rt)));
    fake_conn *local = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(local, "mgmt");
    fake_conn_send(local, "[48, 1, {}, \"com.example.nothing\"]");
    json_decref(fake_conn_next(local)); /* its ERROR */
    fake_conn_send(local, "[32, 2, {}, \"com.example.t\"]");
    json_decref(fake_conn_next(local)); /* SUBSCRIBED */
    ck_assert_uint_eq(trace_store_records(trace_get_store(all)), 0);
    fake_conn *other = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(other, "realm1");
    size_t joined = trace_store_records(trace_get_store(all)); /* HELLO, WELCOME, meta events */
    ck_assert_uint_ge(joined, 2);
    fake_conn_send(other, "[32, 2, {}, \"com.example.t\"]");
    json_decref(fake_conn_next(other));
    ck_assert_uint_eq(trace_store_records(trace_get_store(all)), joined + 2);
    fake_conn_free(local);
    fake_conn_free(other);
}

END_TEST

/* A handshake an adapter refused: counted per reason, and a connection record in the traces
 * that keep everything (not in a filtered one). */
START_TEST(test_refused_handshake_recorded)
{
    trace *all = start("all", NULL);
    trace *calls = start("calls", "{\"msg_types\": [\"Call\"]}");
    rt_router_refused_handshake(T.rt, RT_REFUSAL_SUBPROTOCOL, "ws1", "10.0.0.1:4000",
                                "offered wamp.2.cbor");
    rt_router_refused_handshake(T.rt, RT_REFUSAL_PATH, "ws1", NULL, NULL);
    rt_router_refused_handshake(T.rt, RT_REFUSAL_COUNT, "ws1", NULL, NULL); /* ignored */
    const rt_router_stats *st = rt_router_stats_get(T.rt);
    ck_assert_uint_eq(st->handshakes_refused[RT_REFUSAL_SUBPROTOCOL], 1);
    ck_assert_uint_eq(st->handshakes_refused[RT_REFUSAL_PATH], 1);
    ck_assert_uint_eq(st->handshakes_refused[RT_REFUSAL_REQUEST], 0);
    ck_assert_uint_eq(trace_store_records(trace_get_store(calls)), 0);
    json_t *r = records(all);
    ck_assert_uint_eq(json_array_size(r), 2);
    json_t *a = json_array_get(r, 0);
    ck_assert_str_eq(str(a, "msg_type"), "Connection");
    ck_assert(json_is_null(json_object_get(a, "direction")));
    json_t *want =
            json_pack("{s:s, s:s, s:s, s:s, s:s}", "event", "refused", "reason", "subprotocol",
                      "transport", "ws1", "peer", "10.0.0.1:4000", "detail", "offered wamp.2.cbor");
    ck_assert(json_equal(json_object_get(a, "msg"), want));
    json_decref(want);
    /* Unknown peer and no detail: left out. */
    want = json_pack("{s:s, s:s, s:s}", "event", "refused", "reason", "path", "transport", "ws1");
    ck_assert(json_equal(json_object_get(json_array_get(r, 1), "msg"), want));
    json_decref(want);
    json_decref(r);
    /* Connections refused by a limit too (reason "limit"). */
    rt_router_refused_connection(T.rt, "rs1", "10.0.0.3:4001", "its maximum of 2 connections");
    rt_router_refused_connection(T.rt, "rs1", "", NULL);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->connection_refusals, 2);
    r = records(all);
    ck_assert_uint_eq(json_array_size(r), 4);
    want = json_pack("{s:s, s:s, s:s, s:s, s:s}", "event", "refused", "reason", "limit",
                     "transport", "rs1", "peer", "10.0.0.3:4001", "detail",
                     "its maximum of 2 connections");
    ck_assert(json_equal(json_object_get(json_array_get(r, 2), "msg"), want));
    json_decref(want);
    want = json_pack("{s:s, s:s, s:s, s:s}", "event", "refused", "reason", "limit", "transport",
                     "rs1", "detail", "limits.rawsocket_min_length");
    ck_assert(json_equal(json_object_get(json_array_get(r, 3), "msg"), want));
    json_decref(want);
    json_decref(r);
    ck_assert_str_eq(rt_refusal_name(RT_REFUSAL_REQUEST), "request");
    ck_assert_str_eq(rt_refusal_name(RT_REFUSAL_TLS), "tls");
    ck_assert_str_eq(rt_refusal_name(RT_REFUSAL_COUNT), "?");
    /* A failed TLS handshake: reason "tls", OpenSSL's reason as the detail. */
    rt_router_refused_handshake(T.rt, RT_REFUSAL_TLS, "wss1", "10.0.0.4:4002", "http request");
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->handshakes_refused[RT_REFUSAL_TLS], 1);
    r = records(all);
    ck_assert_uint_eq(json_array_size(r), 5);
    want = json_pack("{s:s, s:s, s:s, s:s, s:s}", "event", "refused", "reason", "tls", "transport",
                     "wss1", "peer", "10.0.0.4:4002", "detail", "http request");
    ck_assert(json_equal(json_object_get(json_array_get(r, 4), "msg"), want));
    json_decref(want);
    json_decref(r);
}

END_TEST

/* wampscope.tracing.flight_recorder: the router starts "flight-recorder" itself, with the
 * configured options, outside max_traces; its records strip the payload. */
START_TEST(test_flight_recorder_started_by_router)
{
    json_t *fo = json_pack("{s:i, s:b}", "limit", 10000, "trace_app_payload", 0);
    T.cfg.tracing_flight_recorder = fo;
    T.cfg.tracing_max_traces = 1;
    test_router_fini(&T); /* rebuild with the flight recorder (keeps cfg) */
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
    trace_hub *hub = rt_router_trace_hub(T.rt);
    ck_assert(trace_hub_is_active(hub));
    ck_assert_uint_eq(trace_hub_count(hub), 1);
    trace *fr = trace_hub_find(hub, RT_FLIGHT_RECORDER_ID);
    ck_assert_ptr_nonnull(fr);
    ck_assert(trace_is_running(fr));
    ck_assert_uint_eq(trace_get_options(fr)->limit, 10000);
    ck_assert(!trace_get_options(fr)->trace_app_payload);
    /* max_traces 1: the user's own trace still starts. */
    trace *mine = start(NULL, NULL);
    fake_conn *c = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(c, "[16, 1, {\"acknowledge\": true}, \"com.fr.topic\", [1, 2], {\"k\": 3}]");
    json_t *r = records(fr);
    /* HELLO, WELCOME, PUBLISH, PUBLISHED. */
    ck_assert_uint_eq(json_array_size(r), 4);
    json_t *pub = json_array_get(r, 2);
    expect_record(pub, "rx", "Publish", "com.fr.topic");
    ck_assert_uint_eq(json_array_size(json_object_get(pub, "msg")), 4); /* no args/kwargs */
    json_decref(r);
    r = records(mine); /* the same messages, the payload kept */
    ck_assert_uint_eq(json_array_size(r), 4);
    ck_assert_uint_eq(json_array_size(json_object_get(json_array_get(r, 2), "msg")), 6);
    json_decref(r);
    fake_conn_free(c);
    test_router_fini(&T);
    T.rt = NULL;
    T.cfg.tracing_flight_recorder = NULL;
    json_decref(fo);
}

END_TEST

/* A joined session whose callee role announces call_canceling. */
static fake_conn *joined_canceling(void)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    json_decref(fake_conn_welcome(c, "[1, \"realm1\", {\"roles\": {\"callee\": {\"features\": "
                                     "{\"call_canceling\": true}}}}]"));
    return c;
}

/* Asserts records [from, to) of r all carry the correlation of record `from`, that none but
 * `last` (-1 = none) is marked last, and that they name uri. */
static void expect_chain(const json_t *r, size_t from, size_t to, long last, const char *uri)
{
    const char *corr = str(json_array_get(r, from), "correlation");
    ck_assert_ptr_nonnull(corr);
    for (size_t i = from; i < to; i++) {
        json_t *rec = json_array_get(r, i);
        ck_assert_str_eq(str(rec, "correlation"), corr);
        ck_assert_msg(flag(rec, "correlation_is_last") == ((long)i == last),
                      "record %zu: correlation_is_last", i);
        ck_assert_str_eq(str(rec, "uri"), uri);
    }
}

/* A call is freed as soon as its caller stops waiting (CANCEL skip, caller gone), yet the
 * callee's late answer is still recorded in the call's chain (the dealer's ring of abandoned
 * traced calls), and the ring forgets the oldest: 300 later abandoned calls push the first out. */
START_TEST(test_late_answers_keep_their_correlation)
{
    fake_conn *callee = joined_canceling();
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.late\"]");
    fake_conn_clear(callee);
    trace *t = start("late_answers", NULL);
    fake_conn_send(caller, "[48, 1, {}, \"com.late\"]");
    long long first = next_invocation(callee);
    fake_conn_send(caller, "[49, 1, {\"mode\": \"skip\"}]");
    fake_conn_clear(caller);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    fake_conn_send(callee, "[70, %lld, {}, [\"late\"]]", first);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 5); /* CALL, INVOCATION, CANCEL, ERROR, YIELD */
    expect_record(json_array_get(r, 4), "rx", "Yield", "com.late");
    expect_chain(r, 0, 5, 3, "com.late");
    json_decref(r);
    /* 300 more abandoned calls: the first one's entry is gone, its answer has no chain. */
    for (int i = 2; i < 302; i++) {
        fake_conn_send(caller, "[48, %d, {}, \"com.late\"]", i);
        fake_conn_send(caller, "[49, %d, {\"mode\": \"skip\"}]", i);
        fake_conn_clear(caller);
        fake_conn_clear(callee);
    }
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    fake_conn_send(callee, "[70, %lld, {}, [\"later\"]]", first);
    r = records(t);
    json_t *last = json_array_get(r, json_array_size(r) - 1);
    expect_record(last, "rx", "Yield", NULL);
    ck_assert_ptr_null(str(last, "correlation"));
    json_decref(r);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

START_TEST(test_advanced_call_chains)
{
    fake_conn *callee = joined_canceling();
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(callee, "[64, 1, {\"match\": \"prefix\"}, \"com.adv.\"]");
    fake_conn_clear(callee);
    trace *t = start("adv", NULL);

    /* Progressive: CALL, INVOCATION, YIELD(progress), RESULT(progress), YIELD, RESULT; only the
     * final RESULT is last; every record names the called URI. */
    fake_conn_send(caller, "[48, 1, {\"receive_progress\": true}, \"com.adv.prog\"]");
    long long id = next_invocation(callee);
    fake_conn_send(callee, "[70, %lld, {\"progress\": true}, [1]]", id);
    fake_conn_send(callee, "[70, %lld, {}, [2]]", id);
    fake_conn_clear(caller);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 6);
    expect_record(json_array_get(r, 3), "tx", "Result", "com.adv.prog");
    expect_chain(r, 0, 6, 5, "com.adv.prog");
    json_decref(r);

    /* Cancel killnowait: CANCEL, INTERRUPT, ERROR (last) in the call's chain. */
    fake_conn_send(caller, "[48, 2, {}, \"com.adv.cancel\"]");
    fake_conn_clear(callee);
    fake_conn_send(caller, "[49, 2, {\"mode\": \"killnowait\"}]");
    fake_conn_clear(caller);
    fake_conn_clear(callee);
    r = records(t);
    ck_assert_uint_eq(json_array_size(r), 11);
    expect_record(json_array_get(r, 8), "rx", "Cancel", "com.adv.cancel");
    expect_record(json_array_get(r, 9), "tx", "Interrupt", "com.adv.cancel");
    expect_record(json_array_get(r, 10), "tx", "Error", "com.adv.cancel");
    expect_chain(r, 6, 11, 10, "com.adv.cancel");
    json_decref(r);

    /* Timeout: INTERRUPT and ERROR (last) from the tick, in the call's chain. */
    fake_conn_send(caller, "[48, 3, {\"timeout\": 100}, \"com.adv.slow\"]");
    fake_conn_clear(callee);
    fake_clock_advance_ms(&T.clock, 100);
    rt_router_tick(T.rt);
    fake_conn_clear(caller);
    fake_conn_clear(callee);
    r = records(t);
    ck_assert_uint_eq(json_array_size(r), 15);
    expect_record(json_array_get(r, 13), "tx", "Interrupt", "com.adv.slow");
    expect_record(json_array_get(r, 14), "tx", "Error", "com.adv.slow");
    ck_assert_str_eq(
            json_string_value(json_array_get(json_object_get(json_array_get(r, 14), "msg"), 4)),
            WAMP_ERROR_TIMEOUT);
    expect_chain(r, 11, 15, 14, "com.adv.slow");
    json_decref(r);

    /* Cancel kill: the callee's ERROR ends the chain. */
    fake_conn_send(caller, "[48, 4, {}, \"com.adv.kill\"]");
    id = next_invocation(callee);
    fake_conn_send(caller, "[49, 4, {\"mode\": \"kill\"}]");
    fake_conn_clear(callee);
    fake_conn_send(callee, "[8, 68, %lld, {}, \"wamp.error.canceled\"]", id);
    fake_conn_clear(caller);
    r = records(t);
    ck_assert_uint_eq(json_array_size(r), 21);
    expect_record(json_array_get(r, 18), "tx", "Interrupt", "com.adv.kill");
    expect_record(json_array_get(r, 20), "tx", "Error", "com.adv.kill");
    expect_chain(r, 15, 21, 20, "com.adv.kill");
    json_decref(r);

    /* The caller leaving: the INTERRUPT to the callee closes the chain. */
    fake_conn_send(caller, "[48, 5, {}, \"com.adv.orphan\"]");
    fake_conn_clear(callee);
    fake_conn_free(caller);
    fake_conn_clear(callee);
    r = records(t);
    size_t n = json_array_size(r);
    json_t *intr = NULL;
    for (size_t i = 21; i < n; i++) {
        if (strcmp(str(json_array_get(r, i), "msg_type"), "Interrupt") == 0) {
            intr = json_array_get(r, i);
        }
    }
    ck_assert_ptr_nonnull(intr);
    ck_assert_str_eq(str(intr, "correlation"), str(json_array_get(r, 21), "correlation"));
    ck_assert(flag(intr, "correlation_is_last"));
    ck_assert_str_eq(str(intr, "uri"), "com.adv.orphan");
    json_decref(r);
    fake_conn_free(callee);
}

END_TEST

/* n CALL -> INVOCATION -> YIELD -> RESULT round trips; returns the allocations they made. */
static size_t round_trips(fake_conn *caller, fake_conn *callee, int n)
{
    size_t before = alloc_count_best();
    for (int i = 0; i < n; i++) {
        fake_conn_send(caller, "[48, %d, {}, \"com.p\", [%d]]", i + 1, i);
        fake_conn_send(callee, "[70, %lld, {}, [%d]]", next_invocation(callee), i);
        json_t *res = fake_conn_next(caller);
        ck_assert_int_eq(fake_msg_int(res, 0), WAMP_MSG_RESULT);
        json_decref(res);
    }
    return alloc_count_best() - before;
}

START_TEST(test_idle_tracing_allocates_nothing)
{
    alloc_count_install();
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.p\"]");
    fake_conn_clear(callee);
    (void)round_trips(caller, callee, 50); /* warm-up: hash maps and rings at their size */
    size_t never_traced = round_trips(caller, callee, 50);
    ck_assert_uint_gt(never_traced, 0); /* the counter sees the routing's own allocations */
    /* A trace that ran and stopped leaves the hub idle: the same traffic costs the same. */
    trace *t = start("brief", NULL);
    size_t traced = round_trips(caller, callee, 50);
    ck_assert_uint_eq(trace_store_records(trace_get_store(t)), 200);
#if ALLOC_COUNT_EVERY_MALLOC
    ck_assert_uint_gt(traced, never_traced); /* the counter sees tracing's own allocations */
#else
    (void)traced; /* jansson's count alone need not show the trace's own allocations */
#endif
    ck_assert_int_eq(trace_hub_stop(rt_router_trace_hub(T.rt), "brief", 2, 2, NULL), WAMP_OK);
    ck_assert_int_eq(trace_hub_delete(rt_router_trace_hub(T.rt), "brief"), WAMP_OK);
    size_t after_trace = round_trips(caller, callee, 50);
    ck_assert_uint_eq(after_trace, never_traced);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* A router-local procedure that lets time pass while it runs. */
static wamp_err slow_proc(void *ctx, rt_session *caller, const json_t *args, const json_t *kwargs,
                          rt_local_reply *reply)
{
    (void)caller;
    (void)args;
    (void)kwargs;
    fake_clock_advance_ms(ctx, 5);
    reply->args = json_pack("[s]", "done");
    return reply->args ? WAMP_OK : WAMP_ENOMEM;
}

static double pc_of(const json_t *rec)
{
    return json_real_value(json_object_get(rec, "pc"));
}

/* A session of realm1 joined a second after the start, where "com.slow" (slow_proc()) is
 * registered. */
static fake_conn *slow_caller(void)
{
    ck_assert_int_eq(rt_dealer_register_local(rt_realm_dealer(rt_router_find_realm(T.rt, "realm1")),
                                              "com.slow", slow_proc, &T.clock),
                     WAMP_OK);
    fake_clock_advance_ms(&T.clock, 1000);
    return joined(WAMP_SER_JSON, "realm1");
}

/* The records of one received message share one clock reading (the CALL and the RESULT it
 * caused at once, although 5 ms passed inside); the next message reads the clock again, and so
 * does a message sent outside any received one (an EVENT the router publishes itself). */
START_TEST(test_one_clock_reading_per_message)
{
    fake_conn *c = slow_caller();
    fake_conn_send(c, "[32, 9, {}, \"com.tick\"]");
    trace *t = start("t", "{\"msg_types\": [\"Call\", \"Result\", \"Event\"]}");
    fake_conn_send(c, "[48, 1, {}, \"com.slow\"]");
    fake_conn_send(c, "[48, 2, {}, \"com.slow\"]");
    fake_conn_clear(c);
    fake_clock_advance_ms(&T.clock, 2000);
    ck_assert_int_eq(rt_broker_publish_local(rt_realm_broker(rt_router_find_realm(T.rt, "realm1")),
                                             "com.tick", NULL, NULL),
                     WAMP_OK);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 5);
    expect_record(json_array_get(r, 0), "rx", "Call", "com.slow");
    expect_record(json_array_get(r, 1), "tx", "Result", "com.slow");
    ck_assert(pc_of(json_array_get(r, 0)) == pc_of(json_array_get(r, 1)));
    /* The second CALL came after the first's 5 ms. */
    ck_assert(pc_of(json_array_get(r, 2)) >= pc_of(json_array_get(r, 1)) + 0.005 - 1e-9);
    ck_assert(pc_of(json_array_get(r, 2)) == pc_of(json_array_get(r, 3)));
    expect_record(json_array_get(r, 4), "tx", "Event", NULL);
    ck_assert(pc_of(json_array_get(r, 4)) >= pc_of(json_array_get(r, 3)) + 1.9);
    json_decref(r);
    fake_conn_free(c);
}

END_TEST

/* The messages of one read from a connection (between rt_router_read_begin() and _end(), as the
 * transports hand them over) and what they cause share one clock reading, although 10 ms pass
 * inside; a message after the read reads the clock again, and so does one outside any read. */
START_TEST(test_one_clock_reading_per_read)
{
    fake_conn *c = slow_caller();
    trace *t = start("t", "{\"msg_types\": [\"Call\", \"Result\"]}");
    rt_router_read_begin(T.rt);
    fake_conn_send(c, "[48, 1, {}, \"com.slow\"]");
    fake_conn_send(c, "[48, 2, {}, \"com.slow\"]");
    rt_router_read_end(T.rt);
    fake_conn_send(c, "[48, 3, {}, \"com.slow\"]");
    fake_conn_send(c, "[48, 4, {}, \"com.slow\"]");
    fake_conn_clear(c);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 8);
    for (size_t i = 0; i < 8; i++) {
        expect_record(json_array_get(r, i), i % 2 ? "tx" : "rx", i % 2 ? "Result" : "Call",
                      "com.slow");
    }
    double read_pc = pc_of(json_array_get(r, 0));
    for (size_t i = 1; i < 4; i++) {
        ck_assert(pc_of(json_array_get(r, i)) == read_pc);
    }
    /* After the read: the clock read again (the two slow calls' 10 ms later), then per message. */
    ck_assert(pc_of(json_array_get(r, 4)) >= read_pc + 0.010 - 1e-9);
    ck_assert(pc_of(json_array_get(r, 5)) == pc_of(json_array_get(r, 4)));
    ck_assert(pc_of(json_array_get(r, 6)) >= pc_of(json_array_get(r, 5)) + 0.005 - 1e-9);
    json_decref(r);
    fake_conn_free(c);
}

END_TEST

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether the kernel keeps time with the TSC (the trace clock then uses it). */
static bool kernel_clock_is_tsc(void)
{
    char name[32] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    bool tsc = f && fgets(name, sizeof(name), f) && strcmp(name, "tsc\n") == 0;
    if (f) {
        fclose(f);
    }
    return tsc;
}

/* With the router's own clock (none injected), records carry CLOCK_MONOTONIC time: each one
 * between readings taken just before and after its message, never going back, across the
 * ticks that re-anchor the trace clock; in nanoseconds where the kernel's clock is the TSC (the
 * router's own clock has microseconds). */
START_TEST(test_trace_clock_is_monotonic_time)
{
    rt_router_free(T.rt);
    T.rt = rt_router_new(&T.cfg, NULL, NULL);
    ck_assert_ptr_nonnull(T.rt);
    fake_conn *c = joined(WAMP_SER_JSON, "realm1");
    trace *t = start("t", "{\"msg_types\": [\"Publish\"]}");

    enum {
        N = 60
    };

    uint64_t before[N], after[N];
    for (int k = 0; k < N; k++) {
        if (k % 20 == 10) {
            /* Past the 10 ms a new anchor needs: the tick measures the counter's scale. */
            struct timespec pause = {0, 12 * 1000 * 1000};
            nanosleep(&pause, NULL);
            rt_router_tick(T.rt);
        }
        before[k] = mono_ns();
        fake_conn_send(c, "[16, %d, {}, \"com.tick\"]", k + 1);
        after[k] = mono_ns();
    }
    const trace_store *st = trace_get_store(t);
    ck_assert_uint_eq(trace_records(t), N);
    bool sub_us = false;
    uint64_t prev = 0;
    for (int k = 0; k < N; k++) {
        const trace_record *r =
                trace_store_get(st, trace_first_seq(t) + (uint64_t)k, &(trace_record){0});
        ck_assert_ptr_nonnull(r);
        /* The scale is extrapolated over at most a tick: 5 us of slack either way. */
        ck_assert_msg(r->pc_ns + 5000 >= before[k] && r->pc_ns <= after[k] + 5000,
                      "record %d: pc %llu outside [%llu, %llu]", k, (unsigned long long)r->pc_ns,
                      (unsigned long long)before[k], (unsigned long long)after[k]);
        ck_assert_uint_ge(r->pc_ns, prev);
        prev = r->pc_ns;
        sub_us = sub_us || r->pc_ns % 1000 != 0;
    }
    if (kernel_clock_is_tsc()) {
        ck_assert_msg(sub_us, "nanoseconds from the TSC");
    }
    fake_conn_free(c);
}

END_TEST

/* SIGTERM: traces keep recording through the grace period, so the GOODBYEs the router sends
 * (each its own completed action) and the peers' replies are in them; the end of the shutdown
 * stops them with stop_reason "shutdown". */
START_TEST(test_shutdown_goodbyes_recorded)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_MSGPACK, "realm2");
    trace *t = start("t", NULL);
    rt_router_begin_shutdown(T.rt);
    ck_assert(trace_is_running(t));
    fake_conn_send(a, "[6, {}, \"wamp.close.goodbye_and_out\"]");
    fake_conn_clear(a);
    fake_conn_clear(b);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 3);
    const char *corr[2];
    for (size_t i = 0; i < 2; i++) {
        json_t *rec = json_array_get(r, i);
        expect_record(rec, "tx", "Goodbye", NULL);
        ck_assert_str_eq(str(rec, "realm"), i ? "realm2" : "realm1");
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(rec, "msg"), 2)),
                         WAMP_CLOSE_SYSTEM_SHUTDOWN);
        corr[i] = str(rec, "correlation");
        ck_assert_ptr_nonnull(corr[i]);
        ck_assert(!flag(rec, "correlation_is_anchor"));
        ck_assert(flag(rec, "correlation_is_last"));
    }
    ck_assert_str_ne(corr[0], corr[1]);
    expect_record(json_array_get(r, 2), "rx", "Goodbye", NULL);
    ck_assert_str_eq(str(json_array_get(r, 2), "realm"), "realm1");
    json_decref(r);
    rt_router_end_shutdown(T.rt);
    ck_assert(!trace_is_running(t));
    ck_assert_int_eq(trace_get_stop_reason(t), TRACE_STOP_SHUTDOWN);
    rt_router_end_shutdown(T.rt); /* idempotent */
    ck_assert_int_eq(trace_get_stop_reason(t), TRACE_STOP_SHUTDOWN);
    fake_conn_free(a);
    fake_conn_free(b);
}

END_TEST

/* --- Persisted traces record what in-memory traces record ---------------------------------- */

/* Replaces, in v (recursively), every integer of at least 2^20 (session, publication, request
 * and registration ids: random, different in every run) and every string seen as an authid or
 * a correlation by its order of first appearance in map (an object: text -> ordinal). */
static json_t *ordinal(json_t *map, const char *key)
{
    json_t *o = json_object_get(map, key);
    if (!o) {
        o = json_integer((json_int_t)json_object_size(map));
        json_object_set_new(map, key, o);
    }
    return json_incref(o);
}

/* What x becomes (a new reference), or NULL when it stays (and is walked into). */
static json_t *normalized_leaf(json_t *map, const json_t *x)
{
    if (json_is_integer(x) && json_integer_value(x) >= (1 << 20)) {
        char key[32];
        snprintf(key, sizeof(key), "i%lld", (long long)json_integer_value(x));
        return ordinal(map, key);
    }
    if (json_is_string(x) && json_object_get(map, json_string_value(x))) {
        return ordinal(map, json_string_value(x));
    }
    return NULL;
}

static void normalize_value(json_t *map, json_t *v)
{
    size_t i;
    const char *k;
    json_t *x, *n;
    void *tmp;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            if ((n = normalized_leaf(map, x))) {
                json_array_set_new(v, i, n);
            } else {
                normalize_value(map, x);
            }
        }
    } else if (json_is_object(v)) {
        json_object_foreach_safe(v, tmp, k, x)
        {
            if ((n = normalized_leaf(map, x))) {
                json_object_set_new(v, k, n);
            } else {
                normalize_value(map, x);
            }
        }
    }
}

/* The records of a run with what differs between runs (ids, authids, correlations, the wall
 * clock) replaced by what stays: the order in which they first appear. */
static json_t *normalized(json_t *recs)
{
    json_t *map = json_object();
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        const char *keys[] = {"authid", "correlation"};
        for (size_t k = 0; k < 2; k++) {
            const char *v = str(r, keys[k]);
            if (v) {
                json_decref(ordinal(map, v));
            }
        }
    }
    json_array_foreach(recs, i, r)
    {
        json_object_del(r, "ts");
        /* Sizes vary with the ids' digits: which serializers were used is what stays. */
        json_t *ser = json_object_get(r, "serializations");
        const char *k;
        json_t *v;
        json_object_foreach(ser, k, v)
        {
            json_object_set(ser, k, json_true());
        }
        normalize_value(map, r);
    }
    json_decref(map);
    return recs;
}

/* Traffic that exercises every way a message reaches a trace: sessions joining (records before
 * the join have no peer object yet), one EVENT fanned out to JSON and MessagePack subscribers,
 * a slow subscriber whose oldest queued EVENTs are dropped, acknowledged publications with an
 * excluded receiver, calls and their answers, an unsubscribe, a session leaving. */
static void mixed_traffic(fake_conn **late)
{
    fake_conn *s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = joined(i == 1 ? WAMP_SER_MSGPACK : WAMP_SER_JSON, "realm1");
        fake_conn_send(s[i], "[32, 1, {}, \"com.flood\"]");
        fake_conn_clear(s[i]);
    }
    fake_conn *pub = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.math.add\"]");
    fake_conn_clear(callee);
    *late = fake_conn_new(T.rt, WAMP_SER_JSON); /* joins while traces run */
    fake_conn_join(*late, "realm1");
    fake_conn_send(*late, "[32, 1, {}, \"com.flood\"]");
    for (int i = 0; i < 130; i++) {
        /* s[3] never reads: past 100 queued messages its oldest EVENTs are dropped. */
        fake_conn_send(pub, "[16, %d, {}, \"com.flood\", [%d], {\"k\": \"v\"}]", i + 1, i);
        if (i % 10 == 0) {
            fake_conn_send(pub,
                           "[16, %d, {\"acknowledge\": true, \"exclude\": [%llu]}, \"com.flood\"]",
                           1000 + i, (unsigned long long)rt_session_id(s[0]->s));
            fake_conn_send(s[2], "[48, %d, {}, \"com.math.add\", [%d, 1]]", i + 1, i);
            fake_conn_send(callee, "[70, %lld, {}, [%d]]", next_invocation(callee), i + 1);
        }
        for (int k = 0; k < 3; k++) {
            fake_conn_clear(s[k]);
        }
        fake_conn_clear(*late);
        fake_conn_clear(pub);
    }
    fake_conn_send(s[1], "[34, 2, %lld]", 1LL); /* unsubscribe (subscription ids: small) */
    fake_conn_send(s[1], "[6, {}, \"wamp.close.close_realm\"]");
    for (int i = 0; i < 4; i++) {
        fake_conn_free(s[i]);
    }
    fake_conn_free(pub);
    fake_conn_free(callee);
}

/* A fresh router whose slow consumers lose their oldest EVENTs; persisted traces go to dir. */
static void fresh_router(const char *dir)
{
    test_router_fini(&T);
    T.cfg.limits.slow_consumer = RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
    trace_persist_config pc = {.data_dir = dir};
    ck_assert_int_eq(trace_hub_set_persist(rt_router_trace_hub(T.rt), &pc), WAMP_OK);
}

/* Runs mixed_traffic() under the traces named by ids with options opts (n of them, started
 * after the first sessions joined; "SUB1" in an option stands for the session id of the second
 * session joined) and returns each one's normalized records in out[]. */
static void capture(const char *dir, size_t n, const char *const *opts, json_t **out)
{
    fresh_router(dir);
    trace *t[4];
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "t%zu", i);
        t[i] = start(id, opts[i]);
    }
    fake_conn *late = NULL;
    mixed_traffic(&late);
    for (size_t i = 0; i < n; i++) {
        out[i] = normalized(records(t[i]));
    }
    fake_conn_free(late);
}

static void assert_same_records(json_t *a, json_t *b)
{
    ck_assert_uint_gt(json_array_size(a), 0);
    ck_assert_uint_eq(json_array_size(a), json_array_size(b));
    for (size_t i = 0; i < json_array_size(a); i++) {
        if (!json_equal(json_array_get(a, i), json_array_get(b, i))) {
            char *x = json_dumps(json_array_get(a, i), JSON_SORT_KEYS);
            char *y = json_dumps(json_array_get(b, i), JSON_SORT_KEYS);
            ck_abort_msg("record %zu differs:\n  %s\n  %s", i, x, y);
        }
    }
}

/* A persisted trace records, and reads back, exactly what an in-memory trace with the same
 * options records on the usual path, whichever capture path it takes: straight from the
 * capture input, the fan-out's repeats (every running trace blind to the peer), or the record
 * path (a filter that reads the peer); and so do in-memory traces on the repeat path. */
START_TEST(test_persisted_records_equal_memory)
{
    char dir[256];
    tmp_dir_make(dir, sizeof(dir), "check_rt_trace");
    static const char *const mem[] = {NULL, "{\"msg_types\": [\"Event\", \"Publish\"]}",
                                      "{\"authroles\": [\"anonymous\"], \"direction\": \"tx\"}"};
    json_t *want[3];
    capture(dir, 3, mem, want);
    /* The slow subscriber's drops and the fan-outs are there. */
    size_t dropped = 0, events = 0;
    for (size_t i = 0; i < json_array_size(want[0]); i++) {
        json_t *r = json_array_get(want[0], i);
        dropped += json_object_get(r, "dropped") != NULL;
        events += strcmp(str(r, "msg_type"), "Event") == 0;
    }
    ck_assert_uint_gt(dropped, 10);
    ck_assert_uint_gt(events, 500);

    json_t *got[3];
    /* (The reference above took the usual path: a trace reading the peer ran.) In-memory traces
     * blind to the peer: the repeat path, records copied with the next receiver's peer. */
    capture(dir, 2, mem, got);
    assert_same_records(want[0], got[0]);
    assert_same_records(want[1], got[1]);
    json_decref(got[0]);
    json_decref(got[1]);
    /* Alone, keeping everything: the repeat path. */
    static const char *const p1[] = {"{\"persist\": true}"};
    capture(dir, 1, p1, got);
    assert_same_records(want[0], got[0]);
    json_decref(got[0]);
    /* Two persisted traces blind to the peer: the repeat path feeds both. */
    static const char *const p2[] = {
            "{\"persist\": true}", "{\"persist\": true, \"msg_types\": [\"Event\", \"Publish\"]}"};
    capture(dir, 2, p2, got);
    assert_same_records(want[0], got[0]);
    assert_same_records(want[1], got[1]);
    json_decref(got[0]);
    json_decref(got[1]);
    /* A filter that reads the peer, and an in-memory trace beside a persisted one. */
    static const char *const p3[] = {
            "{\"persist\": true}", "{\"msg_types\": [\"Event\", \"Publish\"]}",
            "{\"persist\": true, \"authroles\": [\"anonymous\"], \"direction\": \"tx\"}"};
    capture(dir, 3, p3, got);
    for (size_t i = 0; i < 3; i++) {
        assert_same_records(want[i], got[i]);
        json_decref(got[i]);
        json_decref(want[i]);
    }
    tmp_dir_remove(dir);
}

END_TEST

static Suite *rt_trace_suite(void)
{
    Suite *s = suite_create("rt_trace");
    TCase *tc = tcase_create("trace");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_no_trace_no_records);
    tcase_add_test(tc, test_call_chain);
    tcase_add_test(tc, test_action_uris_alternate);
    tcase_add_test(tc, test_advanced_call_chains);
    tcase_add_test(tc, test_late_answers_keep_their_correlation);
    tcase_add_test(tc, test_call_error_and_callee_leaving);
    tcase_add_test(tc, test_publish_chains);
    tcase_add_test(tc, test_publish_chain_over_patterns_and_filters);
    tcase_add_test(tc, test_publish_last_from_what_follows);
    tcase_add_test(tc, test_subscribe_with_retained_events_chain);
    tcase_add_test(tc, test_subscribe_unsubscribe_and_session_open);
    tcase_add_test(tc, test_filters_and_concurrent_traces);
    tcase_add_test(tc, test_management_realm);
    tcase_add_test(tc, test_management_realm_fast_path);
    tcase_add_test(tc, test_flight_recorder_started_by_router);
    tcase_add_test(tc, test_refused_handshake_recorded);
    tcase_add_test(tc, test_idle_tracing_allocates_nothing);
    tcase_add_test(tc, test_one_clock_reading_per_message);
    tcase_add_test(tc, test_one_clock_reading_per_read);
    tcase_add_test(tc, test_trace_clock_is_monotonic_time);
    tcase_add_test(tc, test_shutdown_goodbyes_recorded);
    tcase_add_test(tc, test_persisted_records_equal_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_trace_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
