/* check_rt_dealer_remote.c: RPC between two and three routers joined over the fake bus
 * (tests/support/fake_cluster.c), with fake client sessions on each: a call crossing nodes with
 * its payload transcoded and its caller disclosed, one correlation on both nodes when traced,
 * payload passthru mode (ppt_*) both ways,
 * procedure_already_exists cluster-wide, a
 * shared roundrobin registration spanning the nodes, pattern precedence across nodes,
 * progressive results, the three cancel modes, call timeouts, the callee and the caller leaving,
 * the callee's node killed and the link lost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_clock.h"
#include "fake_cluster.h"
#include "fake_transport.h"
#include "rt_cluster.h"
#include "rt_dealer_remote.h"
#include "rt_metrics.h"
#include "test_router.h"

#define HB_MS  1000
#define TTL_MS 4000

typedef struct node {
    test_router tr;
    rt_cluster *c;
    fake_link *l;
    rt_dealer_remote *dr;
} node;

static fake_bus *bus;
static fake_clock bus_clock;
static node nodes[3];

static void setup(void)
{
    bus_clock.now_us = 1000000;
    bus = fake_bus_new(&bus_clock);
    ck_assert_ptr_nonnull(bus);
    memset(nodes, 0, sizeof(nodes));
}

static void node_stop(node *n)
{
    rt_dealer_remote_stop(n->dr);
    fake_link_free(n->l);
    rt_dealer_remote_free(n->dr);
    rt_cluster_free(n->c);
    n->dr = NULL;
    n->l = NULL;
    n->c = NULL;
}

static void teardown(void)
{
    for (size_t i = 0; i < 3; i++) {
        if (nodes[i].tr.rt) {
            node_stop(&nodes[i]);
            test_router_fini(&nodes[i].tr);
        }
    }
    fake_bus_free(bus);
}

static node *start(size_t i)
{
    static const char *const ids[] = {"a", "b", "c"};
    node *n = &nodes[i];
    test_router_init(&n->tr);
    n->tr.clock.now_us = bus_clock.now_us;
    n->c = fake_cluster_member_new(bus, &bus_clock, ids[i], i + 1, HB_MS, TTL_MS, 500, &n->l);
    ck_assert_ptr_nonnull(n->c);
    rt_dealer_remote_options ro = {.ops = &fake_link_ops,
                                   .link = n->l,
                                   .instance = i + 1,
                                   .beat_ms = HB_MS,
                                   .ttl_ms = TTL_MS,
                                   .max_message = 1 << 20,
                                   .max_calls = 100,
                                   .max_registrations = 100};
    ck_assert_int_eq(rt_dealer_remote_new(n->tr.rt, n->c, &ro, &n->dr), WAMP_OK);
    fake_link_set_up(n->l, true);
    fake_bus_run(bus);
    return n;
}

/* Advances every clock by ms in 100 ms ticks, running the nodes and the bus. */
static void run_ms(uint64_t ms)
{
    fake_bus_run(bus);
    for (uint64_t t = 0; t < ms; t += 100) {
        fake_clock_advance_ms(&bus_clock, 100);
        for (size_t i = 0; i < 3; i++) {
            node *n = &nodes[i];
            if (n->tr.rt) {
                fake_clock_advance_ms(&n->tr.clock, 100);
                rt_router_tick(n->tr.rt);
            }
            if (n->c) {
                rt_cluster_tick(n->c);
                rt_dealer_remote_tick(n->dr);
            }
        }
        fake_bus_run(bus);
    }
}

/* A joined session announcing call_canceling and progressive results. */
static fake_conn *client(node *n, wamp_ser ser)
{
    fake_conn *c = fake_conn_new(n->tr.rt, ser);
    json_t *w = fake_conn_welcome(c, "[1, \"realm1\", {\"roles\": {\"caller\": {}, \"callee\": "
                                     "{\"features\": {\"call_canceling\": true, "
                                     "\"progressive_call_results\": true}}}}]");
    json_decref(w);
    return c;
}

/* The next message of c, asserted to be of type; owned. */
static json_t *expect(fake_conn *c, int type)
{
    json_t *m = fake_conn_next(c);
    ck_assert_msg(m != NULL, "no message, expected type %d", type);
    ck_assert_int_eq(fake_msg_int(m, 0), type);
    return m;
}

/* REGISTER uri with options; returns the answer's type (REGISTERED 65 or ERROR 8). */
static int do_register(fake_conn *c, int req, const char *uri, const char *options)
{
    ck_assert_int_eq(fake_conn_send(c, "[64, %d, %s, \"%s\"]", req, options, uri), WAMP_OK);
    run_ms(100);
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    int type = (int)fake_msg_int(m, 0);
    json_decref(m);
    return type;
}

START_TEST(test_call_across)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee = client(a, WAMP_SER_MSGPACK);
    fake_conn *caller = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(callee, 1, "com.x.add", "{}"), 65);
    run_ms(100);
    ck_assert_int_eq(fake_conn_send(caller, "[48, 7, {\"disclose_me\": true}, \"com.x.add\", "
                                            "[2, 3], {\"k\": \"v\"}]"),
                     WAMP_OK);
    run_ms(100);
    json_t *inv = expect(callee, 68);
    uint64_t inv_id = (uint64_t)fake_msg_int(inv, 1);
    json_t *det = json_array_get(inv, 3);
    ck_assert_int_gt(json_integer_value(json_object_get(det, "caller")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(det, "caller_authrole")), "anonymous");
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(inv, 4), 1)), 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(inv, 5), "k")), "v");
    json_decref(inv);
    ck_assert_int_eq(fake_conn_send(callee, "[70, %llu, {}, [5]]", (unsigned long long)inv_id),
                     WAMP_OK);
    run_ms(100);
    json_t *res = expect(caller, 50);
    ck_assert_int_eq(fake_msg_int(res, 1), 7);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(res, 3), 0)), 5);
    json_decref(res);
    ck_assert_uint_eq(test_router_call_count(a->tr.rt, "realm1"), 0);
    /* Counted in the metrics of both nodes. */
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(rt_metrics_render(b->tr.rt, NULL, &text, &len), WAMP_OK);
    ck_assert_ptr_nonnull(strstr(text, "wampscope_cluster_calls_total{direction=\"out\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(text, "wampscope_cluster_calls_pending{direction=\"out\"} 0\n"));
    free(text);
    ck_assert_int_eq(rt_metrics_render(a->tr.rt, NULL, &text, &len), WAMP_OK);
    ck_assert_ptr_nonnull(strstr(text, "wampscope_cluster_calls_total{direction=\"in\"} 1\n"));
    free(text);
    /* An unknown procedure is still answered by the caller's node. */
    ck_assert_int_eq(fake_conn_send(caller, "[48, 8, {}, \"com.x.none\", []]"), WAMP_OK);
    fake_expect_error(caller, 48, 8, "wamp.error.no_such_procedure");
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* The correlation of record i of records r. */
static const char *corr_of(const json_t *r, size_t i)
{
    return json_string_value(json_object_get(json_array_get(r, i), "correlation"));
}

/* Traced on both nodes, a call across them is one action: the callee's node records the
 * INVOCATION and the YIELD with the correlation of the caller's CALL, and the caller's node
 * records the RESULT with it as the action's last message. */
START_TEST(test_call_across_traced)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee = client(a, WAMP_SER_MSGPACK);
    fake_conn *caller = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(callee, 1, "com.x.add", "{}"), 65);
    run_ms(100);
    trace *ta = test_router_start_trace(&a->tr, "ta", NULL);
    trace *tb = test_router_start_trace(&b->tr, "tb", NULL);
    ck_assert_int_eq(fake_conn_send(caller, "[48, 7, {}, \"com.x.add\", [2, 3]]"), WAMP_OK);
    run_ms(100);
    json_t *inv = expect(callee, 68);
    ck_assert_int_eq(
            fake_conn_send(callee, "[70, %llu, {}, [5]]", (unsigned long long)fake_msg_int(inv, 1)),
            WAMP_OK);
    json_decref(inv);
    run_ms(100);
    json_decref(expect(caller, 50));

    json_t *rb = test_router_records(tb); /* CALL in, RESULT out */
    ck_assert_uint_eq(json_array_size(rb), 2);
    const char *corr = corr_of(rb, 0);
    ck_assert_ptr_nonnull(corr);
    ck_assert_str_eq(corr_of(rb, 1), corr);
    ck_assert(json_is_true(json_object_get(json_array_get(rb, 1), "correlation_is_last")));
    json_t *ra = test_router_records(ta); /* INVOCATION out, YIELD in */
    ck_assert_uint_eq(json_array_size(ra), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ra, 0), "msg_type")),
                     "Invocation");
    ck_assert_str_eq(corr_of(ra, 0), corr);
    ck_assert_str_eq(corr_of(ra, 1), corr);
    /* Every record of the action names its procedure, on both nodes. */
    for (size_t i = 0; i < 2; i++) {
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ra, i), "uri")),
                         "com.x.add");
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rb, i), "uri")),
                         "com.x.add");
    }
    json_decref(ra);
    json_decref(rb);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* The record of records r whose msg_type is type (the first), or NULL. */
static const json_t *record_of_type(const json_t *r, const char *type)
{
    for (size_t i = 0; i < json_array_size(r); i++) {
        const json_t *rec = json_array_get(r, i);
        if (strcmp(json_string_value(json_object_get(rec, "msg_type")), type) == 0) {
            return rec;
        }
    }
    return NULL;
}

/* Traced, a REGISTER that waits for its cluster-wide claim is one action with its answer: the
 * REGISTERED sent when the claim is decided carries the REGISTER's correlation and procedure
 * and completes it, and so does the ERROR of a claim another node holds. */
START_TEST(test_register_across_traced)
{
    node *a = start(0), *b = start(1);
    trace *ta = test_router_start_trace(&a->tr, "ta", NULL);
    trace *tb = test_router_start_trace(&b->tr, "tb", NULL);
    fake_conn *callee = client(a, WAMP_SER_JSON);
    fake_conn *other = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(callee, 1, "com.x.add", "{}"), 65);
    run_ms(100);
    ck_assert_int_eq(do_register(other, 2, "com.x.add", "{}"), 8);
    static const char *const answer[] = {"Registered", "Error"};
    trace *traces[] = {ta, tb};
    for (size_t i = 0; i < 2; i++) {
        json_t *r = test_router_records(traces[i]);
        const json_t *reg = record_of_type(r, "Register"), *ans = record_of_type(r, answer[i]);
        ck_assert_ptr_nonnull(reg);
        ck_assert_ptr_nonnull(ans);
        const char *corr = json_string_value(json_object_get(reg, "correlation"));
        ck_assert_ptr_nonnull(corr);
        ck_assert_str_eq(json_string_value(json_object_get(ans, "correlation")), corr);
        ck_assert_str_eq(json_string_value(json_object_get(ans, "uri")), "com.x.add");
        ck_assert(json_is_true(json_object_get(ans, "correlation_is_last")));
        ck_assert(!json_is_true(json_object_get(reg, "correlation_is_last")));
        json_decref(r);
    }
    fake_conn_free(callee);
    fake_conn_free(other);
}

END_TEST

/* Action-level traces on both nodes: the call across them is one record, on the caller's node,
 * naming the callee's node; the callee's node (no anchor there) writes none. A local call names
 * no node. */
START_TEST(test_call_across_action_record)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee = client(a, WAMP_SER_MSGPACK);
    fake_conn *caller = client(b, WAMP_SER_JSON);
    fake_conn *local = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(callee, 1, "com.x.add", "{}"), 65);
    ck_assert_int_eq(do_register(local, 1, "com.x.here", "{}"), 65);
    run_ms(100);
    const char *opts = "{\"trace_level\": \"action\"}";
    trace *ta = test_router_start_trace(&a->tr, "ta", opts);
    trace *tb = test_router_start_trace(&b->tr, "tb", opts);
    ck_assert_int_eq(fake_conn_send(caller, "[48, 7, {}, \"com.x.add\", [2, 3]]"), WAMP_OK);
    run_ms(100);
    json_t *inv = expect(callee, 68);
    ck_assert_int_eq(
            fake_conn_send(callee, "[70, %llu, {}, [5]]", (unsigned long long)fake_msg_int(inv, 1)),
            WAMP_OK);
    json_decref(inv);
    run_ms(100);
    json_decref(expect(caller, 50));
    ck_assert_int_eq(fake_conn_send(caller, "[48, 8, {}, \"com.x.here\", []]"), WAMP_OK);
    inv = expect(local, 68);
    ck_assert_int_eq(
            fake_conn_send(local, "[70, %llu, {}, []]", (unsigned long long)fake_msg_int(inv, 1)),
            WAMP_OK);
    json_decref(inv);
    json_decref(expect(caller, 50));

    json_t *ra = test_router_records(ta);
    ck_assert_uint_eq(json_array_size(ra), 0);
    json_t *rb = test_router_records(tb);
    ck_assert_uint_eq(json_array_size(rb), 2);
    json_t *across = json_array_get(rb, 0), *here = json_array_get(rb, 1);
    ck_assert_str_eq(json_string_value(json_object_get(across, "action")), "call");
    ck_assert_str_eq(json_string_value(json_object_get(across, "uri")), "com.x.add");
    ck_assert_str_eq(json_string_value(json_object_get(across, "callee_node")), "a");
    ck_assert(json_is_true(json_object_get(across, "success")));
    ck_assert_str_eq(json_string_value(json_object_get(here, "uri")), "com.x.here");
    ck_assert(json_is_null(json_object_get(here, "callee_node")));
    ck_assert_uint_eq(json_array_size(json_object_get(here, "responders")), 1);
    json_decref(ra);
    json_decref(rb);
    fake_conn_free(callee);
    fake_conn_free(caller);
    fake_conn_free(local);
}

END_TEST

/* Payload passthru mode across nodes: the CALL's ppt_* options reach the INVOCATION on the
 * callee's node, the YIELD's and ERROR's ppt_* come back into RESULT and ERROR, the binary payload
 * exact across serializers; a callee that did not announce it gets the local answer,
 * feature_not_supported, and no INVOCATION. */
START_TEST(test_payload_passthru_across)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee =
            fake_conn_new_ppt(a->tr.rt, WAMP_SER_MSGPACK, true, "caller", "callee", "dealer");
    fake_conn *plain =
            fake_conn_new_ppt(a->tr.rt, WAMP_SER_JSON, false, "caller", "callee", "dealer");
    fake_conn *caller =
            fake_conn_new_ppt(b->tr.rt, WAMP_SER_JSON, true, "caller", "callee", "dealer");
    ck_assert_int_eq(do_register(callee, 1, "com.ppt", "{}"), 65);
    ck_assert_int_eq(do_register(plain, 1, "com.plain", "{}"), 65);
    run_ms(100);
    ck_assert_int_eq(fake_conn_send(caller, "[48, 1, {\"ppt_scheme\": \"x_test\", "
                                            "\"ppt_serializer\": \"cbor\", \"ppt_cipher\": "
                                            "\"xsalsa20poly1305\", \"ppt_keyid\": \"k1\"}, "
                                            "\"com.ppt\", [\"\\u0000AQID\"]]"),
                     WAMP_OK);
    run_ms(100);
    json_t *inv = expect(callee, 68);
    json_t *want = json_pack("[i, I, I, {s:s, s:s, s:s, s:s}, [s#]]", WAMP_MSG_INVOCATION,
                             fake_msg_int(inv, 1), fake_msg_int(inv, 2), "ppt_scheme", "x_test",
                             "ppt_serializer", "cbor", "ppt_cipher", "xsalsa20poly1305",
                             "ppt_keyid", "k1", "\0AQID", (size_t)5);
    ck_assert_msg(json_equal(inv, want), "INVOCATION differs");
    json_decref(want);
    ck_assert_int_eq(fake_conn_send(callee,
                                    "[70, %lld, {\"ppt_scheme\": \"x_test\", \"ppt_keyid\": "
                                    "\"k2\"}, [\"\\u0000BAU=\"]]",
                                    (long long)fake_msg_int(inv, 1)),
                     WAMP_OK);
    json_decref(inv);
    run_ms(100);
    json_t *res = expect(caller, 50);
    want = json_pack("[i, i, {s:s, s:s}, [s#]]", WAMP_MSG_RESULT, 1, "ppt_scheme", "x_test",
                     "ppt_keyid", "k2", "\0BAU=", (size_t)5);
    ck_assert_msg(json_equal(res, want), "RESULT differs");
    json_decref(res);
    json_decref(want);

    /* An ERROR's ppt_* details come back too. */
    ck_assert_int_eq(fake_conn_send(caller, "[48, 2, {\"ppt_scheme\": \"mqtt\"}, \"com.ppt\", "
                                            "[\"\\u0000AA==\"]]"),
                     WAMP_OK);
    run_ms(100);
    inv = expect(callee, 68);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(inv, 3), "ppt_scheme")),
                     "mqtt");
    ck_assert_int_eq(fake_conn_send(callee,
                                    "[8, 68, %lld, {\"ppt_scheme\": \"mqtt\"}, \"com.x.failed\", "
                                    "[\"\\u0000Bw==\"]]",
                                    (long long)fake_msg_int(inv, 1)),
                     WAMP_OK);
    json_decref(inv);
    run_ms(100);
    json_t *err = expect(caller, 8);
    want = json_pack("[i, i, i, {s:s}, s, [s#]]", WAMP_MSG_ERROR, WAMP_MSG_CALL, 2, "ppt_scheme",
                     "mqtt", "com.x.failed", "\0Bw==", (size_t)5);
    ck_assert_msg(json_equal(err, want), "ERROR differs");
    json_decref(err);
    json_decref(want);

    /* A callee that did not announce payload passthru mode: refused on its node. */
    ck_assert_int_eq(fake_conn_send(caller, "[48, 3, {\"ppt_scheme\": \"mqtt\"}, \"com.plain\", "
                                            "[\"\\u0000AA==\"]]"),
                     WAMP_OK);
    run_ms(100);
    fake_expect_error(caller, WAMP_MSG_CALL, 3, WAMP_ERROR_FEATURE_NOT_SUPPORTED);
    ck_assert_uint_eq(fake_conn_pending(plain), 0);
    fake_conn_free(plain);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_already_exists_across)
{
    node *a = start(0), *b = start(1);
    fake_conn *ca = client(a, WAMP_SER_JSON);
    fake_conn *cb = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(ca, 1, "com.x.one", "{}"), 65);
    ck_assert_int_eq(do_register(cb, 1, "com.x.one", "{}"), 8);
    ck_assert_int_eq(do_register(cb, 2, "com.x.one", "{\"invoke\": \"roundrobin\"}"), 8);
    /* Released when a's callee leaves: b may register it. */
    fake_conn_free(ca);
    run_ms(100);
    ck_assert_int_eq(do_register(cb, 3, "com.x.one", "{}"), 65);
    fake_conn_free(cb);
}

END_TEST

START_TEST(test_shared_roundrobin_across)
{
    node *a = start(0), *b = start(1);
    fake_conn *ca = client(a, WAMP_SER_JSON);
    fake_conn *cb = client(b, WAMP_SER_JSON);
    fake_conn *caller = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(ca, 1, "com.x.rr", "{\"invoke\": \"roundrobin\"}"), 65);
    ck_assert_int_eq(do_register(cb, 1, "com.x.rr", "{\"invoke\": \"roundrobin\"}"), 65);
    run_ms(100);
    size_t on_a = 0, on_b = 0;
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(fake_conn_send(caller, "[48, %d, {}, \"com.x.rr\", []]", 10 + i), WAMP_OK);
        run_ms(100);
        fake_conn *got = fake_conn_pending(ca) ? ca : cb;
        if (got == ca) {
            on_a++;
        } else {
            on_b++;
        }
        json_t *inv = expect(got, 68);
        ck_assert_int_eq(fake_conn_send(got, "[70, %lld, {}, []]", (long long)fake_msg_int(inv, 1)),
                         WAMP_OK);
        json_decref(inv);
        run_ms(100);
        json_decref(expect(caller, 50));
    }
    ck_assert_uint_eq(on_a, 2);
    ck_assert_uint_eq(on_b, 2);
    fake_conn_free(ca);
    fake_conn_free(cb);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_pattern_precedence_across)
{
    node *a = start(0), *b = start(1);
    fake_conn *ca = client(a, WAMP_SER_JSON);
    fake_conn *cb = client(b, WAMP_SER_JSON);
    fake_conn *caller = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(cb, 1, "com.x.", "{\"match\": \"prefix\"}"), 65);
    ck_assert_int_eq(do_register(ca, 1, "com.x.add", "{}"), 65);
    run_ms(100);
    /* a's exact registration beats b's local prefix one. */
    ck_assert_int_eq(fake_conn_send(caller, "[48, 1, {}, \"com.x.add\", []]"), WAMP_OK);
    run_ms(100);
    json_decref(expect(ca, 68));
    ck_assert_uint_eq(fake_conn_pending(cb), 0);
    /* Anything else under com.x. stays on b. */
    ck_assert_int_eq(fake_conn_send(caller, "[48, 2, {}, \"com.x.sub\", []]"), WAMP_OK);
    run_ms(100);
    json_t *inv = expect(cb, 68);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(inv, 3), "procedure")),
                     "com.x.sub");
    json_decref(inv);
    fake_conn_free(ca);
    fake_conn_free(cb);
    fake_conn_free(caller);
}

END_TEST

/* A registered callee on a and a caller on b whose CALL (request 1, options) is at the callee:
 * returns the invocation id. */
static uint64_t call_pending(node *a, node *b, fake_conn **callee, fake_conn **caller,
                             const char *options)
{
    *callee = client(a, WAMP_SER_JSON);
    *caller = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(*callee, 1, "com.x.slow", "{}"), 65);
    run_ms(100);
    ck_assert_int_eq(fake_conn_send(*caller, "[48, 1, %s, \"com.x.slow\", []]", options), WAMP_OK);
    run_ms(100);
    json_t *inv = expect(*callee, 68);
    uint64_t id = (uint64_t)fake_msg_int(inv, 1);
    json_decref(inv);
    return id;
}

START_TEST(test_progress_and_cancel_kill)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee, *caller;
    uint64_t inv = call_pending(a, b, &callee, &caller, "{\"receive_progress\": true}");
    ck_assert_int_eq(fake_conn_send(callee, "[70, %llu, {\"progress\": true}, [1]]",
                                    (unsigned long long)inv),
                     WAMP_OK);
    run_ms(100);
    json_t *r = expect(caller, 50);
    ck_assert(json_is_true(json_object_get(json_array_get(r, 2), "progress")));
    json_decref(r);
    ck_assert_int_eq(fake_conn_send(caller, "[49, 1, {\"mode\": \"kill\"}]"), WAMP_OK);
    run_ms(100);
    json_t *intr = expect(callee, 69);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(intr, 2), "mode")), "kill");
    json_decref(intr);
    ck_assert_int_eq(fake_conn_send(callee, "[8, 68, %llu, {}, \"wamp.error.canceled\"]",
                                    (unsigned long long)inv),
                     WAMP_OK);
    run_ms(100);
    fake_expect_error(caller, 48, 1, "wamp.error.canceled");
    ck_assert_uint_eq(test_router_call_count(a->tr.rt, "realm1"), 0);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* CANCEL kill, then the caller leaves before the callee answers: its node cancels killnowait,
 * and the callee's node forgets the call then (it was told to interrupt already). */
START_TEST(test_kill_then_caller_gone)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee, *caller;
    uint64_t inv = call_pending(a, b, &callee, &caller, "{}");
    ck_assert_int_eq(fake_conn_send(caller, "[49, 1, {\"mode\": \"kill\"}]"), WAMP_OK);
    run_ms(100);
    json_t *intr = expect(callee, 69);
    ck_assert_int_eq(fake_msg_int(intr, 1), (int64_t)inv);
    json_decref(intr);
    ck_assert_uint_eq(test_router_call_count(a->tr.rt, "realm1"), 1);
    fake_conn_free(caller);
    run_ms(100);
    ck_assert_uint_eq(test_router_call_count(a->tr.rt, "realm1"), 0);
    ck_assert_uint_eq(fake_conn_pending(callee), 0); /* (no second INTERRUPT) */
    fake_conn_free(callee);
}

END_TEST

START_TEST(test_cancel_killnowait_and_skip)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee, *caller;
    uint64_t inv = call_pending(a, b, &callee, &caller, "{}");
    ck_assert_int_eq(fake_conn_send(caller, "[49, 1, {\"mode\": \"killnowait\"}]"), WAMP_OK);
    fake_expect_error(caller, 48, 1, "wamp.error.canceled");
    run_ms(100);
    json_t *intr = expect(callee, 69);
    ck_assert_int_eq(fake_msg_int(intr, 1), (int64_t)inv);
    json_decref(intr);
    ck_assert_uint_eq(test_router_call_count(a->tr.rt, "realm1"), 0);
    /* skip: the caller is answered, the callee hears nothing; its late answer is dropped. */
    ck_assert_int_eq(fake_conn_send(caller, "[48, 2, {}, \"com.x.slow\", []]"), WAMP_OK);
    run_ms(100);
    json_t *inv2 = expect(callee, 68);
    ck_assert_int_eq(fake_conn_send(caller, "[49, 2, {\"mode\": \"skip\"}]"), WAMP_OK);
    fake_expect_error(caller, 48, 2, "wamp.error.canceled");
    run_ms(100);
    ck_assert_uint_eq(fake_conn_pending(callee), 0);
    ck_assert_int_eq(fake_conn_send(callee, "[70, %lld, {}, []]", (long long)fake_msg_int(inv2, 1)),
                     WAMP_OK);
    json_decref(inv2);
    run_ms(100);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_timeout_across)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee, *caller;
    uint64_t inv = call_pending(a, b, &callee, &caller, "{\"timeout\": 500}");
    run_ms(600);
    fake_expect_error(caller, 48, 1, "wamp.error.timeout");
    json_t *intr = expect(callee, 69);
    ck_assert_int_eq(fake_msg_int(intr, 1), (int64_t)inv);
    json_decref(intr);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_callee_and_caller_leave)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee, *caller;
    call_pending(a, b, &callee, &caller, "{}");
    fake_conn_free(callee);
    run_ms(100);
    fake_expect_error(caller, 48, 1, "wamp.error.canceled");
    /* The caller leaving interrupts the callee on the other node. */
    fake_conn *callee2 = client(a, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(callee2, 1, "com.x.slow2", "{}"), 65);
    run_ms(100);
    ck_assert_int_eq(fake_conn_send(caller, "[48, 2, {}, \"com.x.slow2\", []]"), WAMP_OK);
    run_ms(100);
    json_decref(expect(callee2, 68));
    fake_conn_free(caller);
    run_ms(100);
    json_t *intr = expect(callee2, 69);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(intr, 2), "mode")),
                     "killnowait");
    json_decref(intr);
    ck_assert_uint_eq(test_router_call_count(a->tr.rt, "realm1"), 0);
    fake_conn_free(callee2);
}

END_TEST

START_TEST(test_callee_node_killed)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee, *caller;
    call_pending(a, b, &callee, &caller, "{}");
    /* kill -9 of a: its link vanishes without a leave. */
    node_stop(a);
    run_ms(TTL_MS + 2 * HB_MS + 200);
    fake_expect_error(caller, 48, 1, "wamp.error.canceled");
    /* Its registration is gone from b's view, and b may take it. */
    ck_assert_int_eq(fake_conn_send(caller, "[48, 2, {}, \"com.x.slow\", []]"), WAMP_OK);
    fake_expect_error(caller, 48, 2, "wamp.error.no_such_procedure");
    ck_assert_int_eq(do_register(caller, 3, "com.x.slow", "{}"), 65);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_link_lost)
{
    node *a = start(0), *b = start(1);
    fake_conn *callee, *caller;
    call_pending(a, b, &callee, &caller, "{}");
    fake_link_set_up(b->l, false);
    run_ms(100);
    fake_expect_error(caller, 48, 1, "wamp.error.network_failure");
    /* Local routing goes on: a registration on b while the link is down works at once. */
    fake_conn *local = client(b, WAMP_SER_JSON);
    ck_assert_int_eq(do_register(local, 1, "com.x.local", "{}"), 65);
    ck_assert_int_eq(fake_conn_send(caller, "[48, 2, {}, \"com.x.local\", []]"), WAMP_OK);
    run_ms(100);
    json_decref(expect(local, 68));
    /* a's registrations vanish from b's view after node_ttl; back up, they return. */
    run_ms(TTL_MS + 2 * HB_MS + 200);
    ck_assert_int_eq(fake_conn_send(caller, "[48, 3, {}, \"com.x.slow\", []]"), WAMP_OK);
    fake_expect_error(caller, 48, 3, "wamp.error.no_such_procedure");
    /* a dropped b's call when b left its list: its callee was interrupted. */
    json_t *intr = expect(callee, 69);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(intr, 2), "mode")),
                     "killnowait");
    json_decref(intr);
    fake_link_set_up(b->l, true);
    run_ms(3 * HB_MS);
    ck_assert_int_eq(fake_conn_send(caller, "[48, 4, {}, \"com.x.slow\", []]"), WAMP_OK);
    run_ms(100);
    json_decref(expect(callee, 68));
    fake_conn_free(local);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_pending_calls_limit_across)
{
    node *a = start(0), *b = start(1);
    b->tr.cfg.limits.max_pending_calls = 1;
    fake_conn *callee, *caller;
    uint64_t inv = call_pending(a, b, &callee, &caller, "{}");
    ck_assert_int_eq(fake_conn_send(caller, "[48, 2, {}, \"com.x.slow\", []]"), WAMP_OK);
    fake_expect_error(caller, 48, 2, "wampscope.error.limit_reached");
    /* Answered: the caller may call again; canceled (killnowait) too. */
    ck_assert_int_eq(fake_conn_send(callee, "[70, %llu, {}, []]", (unsigned long long)inv),
                     WAMP_OK);
    run_ms(100);
    json_decref(expect(caller, 50));
    ck_assert_int_eq(fake_conn_send(caller, "[48, 3, {}, \"com.x.slow\", []]"), WAMP_OK);
    run_ms(100);
    json_decref(expect(callee, 68));
    ck_assert_int_eq(fake_conn_send(caller, "[49, 3, {}]"), WAMP_OK);
    fake_expect_error(caller, 48, 3, "wamp.error.canceled");
    ck_assert_int_eq(fake_conn_send(caller, "[48, 4, {}, \"com.x.slow\", []]"), WAMP_OK);
    run_ms(100);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rt_dealer_remote");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_call_across);
    tcase_add_test(tc, test_call_across_traced);
    tcase_add_test(tc, test_register_across_traced);
    tcase_add_test(tc, test_call_across_action_record);
    tcase_add_test(tc, test_payload_passthru_across);
    tcase_add_test(tc, test_already_exists_across);
    tcase_add_test(tc, test_shared_roundrobin_across);
    tcase_add_test(tc, test_pattern_precedence_across);
    tcase_add_test(tc, test_progress_and_cancel_kill);
    tcase_add_test(tc, test_cancel_killnowait_and_skip);
    tcase_add_test(tc, test_kill_then_caller_gone);
    tcase_add_test(tc, test_timeout_across);
    tcase_add_test(tc, test_callee_and_caller_leave);
    tcase_add_test(tc, test_callee_node_killed);
    tcase_add_test(tc, test_link_lost);
    tcase_add_test(tc, test_pending_calls_limit_across);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
