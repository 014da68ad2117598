/* check_rt_cluster_meta.c: the meta API across two nodes, each a router of its own
 * (tests/support/test_router.c) with its sessions on the fake transport, linked by the fake bus:
 * sessions, subscriptions and registrations of both nodes seen from each, the merge rules, a node
 * that does not answer, a request that is not understood, and the procedures of one node back
 * once the cluster's meta API is freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_clock.h"
#include "fake_cluster.h"
#include "fake_transport.h"
#include "log_capture.h"
#include "rt_cluster.h"
#include "rt_cluster_meta.h"
#include "test_router.h"
#include "wamp_types.h"

#define N_NODES    2
#define TIMEOUT_MS 500

typedef struct node {
    test_router t;
    rt_cluster *c;
    fake_link *l;
    rt_cluster_meta *meta;
} node;

static fake_clock clk;
static fake_bus *bus;
static node nodes[N_NODES];

#define MAX_CONNS 16
static fake_conn *conns[MAX_CONNS];
static size_t n_conns;

static void start_node(size_t i)
{
    static const char *const ids[] = {"a", "b"};
    node *n = &nodes[i];
    test_router_init(&n->t);
    n->t.clock.now_us = clk.now_us;
    n->c = fake_cluster_member_new(bus, &n->t.clock, ids[i], i + 1, 1000, 4000, TIMEOUT_MS, &n->l);
    ck_assert_ptr_nonnull(n->c);
    ck_assert_int_eq(rt_cluster_meta_new(n->t.rt, n->c, &n->meta), WAMP_OK);
    fake_link_set_up(n->l, true);
    fake_bus_run(bus);
    ck_assert_int_eq(rt_cluster_member_state_get(n->c), RT_CLUSTER_MEMBER_JOINED);
}

static void run_ms(uint64_t ms)
{
    fake_bus_run(bus);
    for (uint64_t t = 0; t < ms; t += 100) {
        fake_clock_advance_ms(&clk, 100);
        for (size_t i = 0; i < N_NODES; i++) {
            fake_clock_advance_ms(&nodes[i].t.clock, 100);
            rt_cluster_tick(nodes[i].c);
        }
        fake_bus_run(bus);
    }
}

static void setup(void)
{
    clk.now_us = 1000000;
    bus = fake_bus_new(&clk);
    ck_assert_ptr_nonnull(bus);
    memset(nodes, 0, sizeof(nodes));
    n_conns = 0;
    for (size_t i = 0; i < N_NODES; i++) {
        start_node(i);
    }
    run_ms(1000); /* every node has every other in its list */
    for (size_t i = 0; i < N_NODES; i++) {
        ck_assert_uint_eq(rt_cluster_node_count(nodes[i].c), N_NODES);
    }
}

static void teardown(void)
{
    for (size_t i = 0; i < N_NODES; i++) {
        rt_cluster_meta_free(nodes[i].meta);
    }
    for (size_t i = 0; i < n_conns; i++) {
        fake_conn_free(conns[i]);
    }
    fake_bus_free(bus);
    for (size_t i = 0; i < N_NODES; i++) {
        rt_cluster_free(nodes[i].c);
        test_router_fini(&nodes[i].t);
    }
}

/* A session joined to realm1 of node i; its id in *id. */
static fake_conn *joined(size_t i, int64_t *id)
{
    ck_assert_uint_lt(n_conns, MAX_CONNS);
    fake_conn *c = fake_conn_new(nodes[i].t.rt, WAMP_SER_JSON);
    int64_t sid = (int64_t)fake_conn_join(c, "realm1");
    if (id) {
        *id = sid;
    }
    return conns[n_conns++] = c;
}

static int64_t subscribe(fake_conn *c, const char *topic, const char *opts)
{
    fake_conn_send(c, "[32, 7, %s, \"%s\"]", opts, topic);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    return id;
}

static int64_t reg(fake_conn *c, const char *proc)
{
    fake_conn_send(c, "[64, 8, {}, \"%s\"]", proc);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_REGISTERED);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    return id;
}

/* CALL procedure with the arguments (JSON list text) and runs the bus; the message answering it
 * (owned): RESULT or ERROR. */
static json_t *call(fake_conn *c, const char *procedure, const char *args)
{
    fake_conn_send(c, "[48, 99, {}, \"%s\", %s]", procedure, args);
    run_ms(0);
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    return m;
}

/* The value of the RESULT answering CALL procedure (owned). */
static json_t *result(fake_conn *c, const char *procedure, const char *args)
{
    json_t *m = call(c, procedure, args);
    ck_assert_msg(fake_msg_int(m, 0) == WAMP_MSG_RESULT, "%s: not a RESULT", procedure);
    json_t *v = json_incref(json_array_get(json_array_get(m, 3), 0));
    json_decref(m);
    ck_assert_ptr_nonnull(v);
    return v;
}

static json_int_t result_int(fake_conn *c, const char *procedure, const char *args)
{
    json_t *v = result(c, procedure, args);
    ck_assert(json_is_integer(v));
    json_int_t n = json_integer_value(v);
    json_decref(v);
    return n;
}

static bool has_id(const json_t *list, int64_t id)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        if (json_integer_value(v) == id) {
            return true;
        }
    }
    return false;
}

START_TEST(test_sessions_of_both_nodes)
{
    int64_t a1, a2, b1;
    fake_conn *ca = joined(0, &a1);
    (void)joined(0, &a2);
    fake_conn *cb = joined(1, &b1);
    for (size_t i = 0; i < N_NODES; i++) {
        fake_conn *c = i == 0 ? ca : cb;
        ck_assert_int_eq(result_int(c, "wamp.session.count", "[]"), 3);
        ck_assert_int_eq(result_int(c, "wamp.session.count", "[[\"anonymous\"]]"), 3);
        ck_assert_int_eq(result_int(c, "wamp.session.count", "[[\"nobody\"]]"), 0);
        json_t *l = result(c, "wamp.session.list", "[]");
        ck_assert_uint_eq(json_array_size(l), 3);
        ck_assert(has_id(l, a1) && has_id(l, a2) && has_id(l, b1));
        json_decref(l);
    }
    /* A session of the other node: found there. */
    char args[64];
    snprintf(args, sizeof(args), "[%lld]", (long long)b1);
    json_t *d = result(ca, "wamp.session.get", args);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "session")), b1);
    json_decref(d);
    json_t *m = call(ca, "wamp.session.get", "[12345]");
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    ck_assert_str_eq(fake_msg_str(m, 4), WAMP_ERROR_NO_SUCH_SESSION);
    json_decref(m);
    /* A bad argument is answered by this node at once. */
    fake_conn_send(ca, "[48, 98, {}, \"wamp.session.get\", [\"x\"]]");
    m = fake_conn_next(ca);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    ck_assert_str_eq(fake_msg_str(m, 4), WAMP_ERROR_INVALID_ARGUMENT);
    json_decref(m);
}

END_TEST

START_TEST(test_subscriptions_of_both_nodes)
{
    int64_t a1, b1, b2;
    fake_conn *ca = joined(0, &a1);
    fake_conn *cb1 = joined(1, &b1);
    fake_conn *cb2 = joined(1, &b2);
    /* Ids are per node (each counts from 1): b's differ from a's here. */
    (void)subscribe(cb2, "com.pad", "{}");
    int64_t ida = subscribe(ca, "com.t", "{}");
    int64_t idb = subscribe(cb1, "com.t", "{}");
    ck_assert_int_eq(subscribe(cb2, "com.t", "{}"), idb);
    int64_t idp = subscribe(cb1, "com.only", "{\"match\": \"prefix\"}");
    char args[64];

    /* Subscribers of every node, through the id of this node. */
    snprintf(args, sizeof(args), "[%lld]", (long long)ida);
    ck_assert_int_eq(result_int(ca, "wamp.subscription.count_subscribers", args), 3);
    json_t *l = result(ca, "wamp.subscription.list_subscribers", args);
    ck_assert_uint_eq(json_array_size(l), 3);
    ck_assert(has_id(l, a1) && has_id(l, b1) && has_id(l, b2));
    json_decref(l);
    /* The same from the other side, through its own id. */
    snprintf(args, sizeof(args), "[%lld]", (long long)idb);
    ck_assert_int_eq(result_int(cb1, "wamp.subscription.count_subscribers", args), 3);
    /* An id only the other node knows: that node's answer. */
    ck_assert_int_eq(result_int(ca, "wamp.subscription.count_subscribers", args), 2);
    json_t *d = result(ca, "wamp.subscription.get", args);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "id")), idb);
    ck_assert_str_eq(json_string_value(json_object_get(d, "uri")), "com.t");
    json_decref(d);

    /* Lists are unions, per match policy. */
    json_t *lists = result(ca, "wamp.subscription.list", "[]");
    json_t *exact = json_object_get(lists, "exact");
    ck_assert_uint_eq(json_array_size(exact), 3);
    ck_assert(has_id(exact, ida) && has_id(exact, idb));
    ck_assert(has_id(json_object_get(lists, "prefix"), idp));
    json_decref(lists);
    /* Only one session's: found on its node (on this node: answered at once, nobody asked). */
    snprintf(args, sizeof(args), "[%lld]", (long long)a1);
    fake_conn_send(ca, "[48, 97, {}, \"wamp.subscription.list\", %s]", args);
    json_t *m = fake_conn_next(ca);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_RESULT);
    lists = json_array_get(json_array_get(m, 3), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "exact")), 1);
    ck_assert(has_id(json_object_get(lists, "exact"), ida));
    json_decref(m);
    snprintf(args, sizeof(args), "[%lld]", (long long)b1);
    lists = result(ca, "wamp.subscription.list", args);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "exact")), 1);
    ck_assert(has_id(json_object_get(lists, "exact"), idb));
    json_decref(lists);

    /* lookup: this node's id when it has one, else another node's. */
    ck_assert_int_eq(result_int(ca, "wamp.subscription.lookup", "[\"com.t\"]"), ida);
    ck_assert_int_eq(result_int(cb1, "wamp.subscription.lookup", "[\"com.t\"]"), idb);
    ck_assert_int_eq(
            result_int(ca, "wamp.subscription.lookup", "[\"com.only\", {\"match\": \"prefix\"}]"),
            idp);
    json_t *v = result(ca, "wamp.subscription.lookup", "[\"com.none\"]");
    ck_assert(json_is_null(v));
    json_decref(v);
    /* match: every node's ids, null when none. */
    l = result(ca, "wamp.subscription.match", "[\"com.only.x\"]");
    ck_assert_uint_eq(json_array_size(l), 1);
    ck_assert(has_id(l, idp));
    json_decref(l);
    l = result(cb1, "wamp.subscription.match", "[\"com.t\"]");
    ck_assert(has_id(l, ida) && has_id(l, idb));
    json_decref(l);
    v = result(ca, "wamp.subscription.match", "[\"org.none\"]");
    ck_assert(json_is_null(v));
    json_decref(v);
}

END_TEST

START_TEST(test_registrations_of_both_nodes)
{
    int64_t a1, b1, b2;
    fake_conn *ca = joined(0, &a1);
    fake_conn *cb1 = joined(1, &b1);
    (void)joined(1, &b2);
    (void)reg(cb1, "com.pad"); /* ids are per node: a's and b's differ here */
    int64_t rb = reg(cb1, "com.p");
    int64_t ra = reg(ca, "com.q");
    json_t *lists = result(ca, "wamp.registration.list", "[]");
    json_t *exact = json_object_get(lists, "exact");
    ck_assert_uint_eq(json_array_size(exact), 3);
    ck_assert(has_id(exact, ra) && has_id(exact, rb));
    json_decref(lists);
    ck_assert_int_eq(result_int(ca, "wamp.registration.lookup", "[\"com.p\"]"), rb);
    ck_assert_int_eq(result_int(ca, "wamp.registration.match", "[\"com.p\"]"), rb);
    ck_assert_int_eq(result_int(cb1, "wamp.registration.match", "[\"com.q\"]"), ra);
    char args[64];
    snprintf(args, sizeof(args), "[%lld]", (long long)rb);
    json_t *d = result(ca, "wamp.registration.get", args);
    ck_assert_str_eq(json_string_value(json_object_get(d, "uri")), "com.p");
    json_decref(d);
    ck_assert_int_eq(result_int(ca, "wamp.registration.count_callees", args), 1);
    json_t *l = result(ca, "wamp.registration.list_callees", args);
    ck_assert_uint_eq(json_array_size(l), 1);
    ck_assert(has_id(l, b1));
    json_decref(l);
    /* Nothing anywhere: this node's error. */
    json_t *m = call(ca, "wamp.registration.get", "[777]");
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    ck_assert_str_eq(fake_msg_str(m, 4), WAMP_ERROR_NO_SUCH_REGISTRATION);
    json_decref(m);
}

END_TEST

START_TEST(test_node_not_answering_is_left_out)
{
    fake_conn *ca = joined(0, NULL);
    (void)joined(1, NULL);
    log_capture lc;
    log_capture_begin(&lc);
    fake_bus_drop(bus, 1); /* the request to b */
    fake_conn_send(ca, "[48, 99, {}, \"wamp.session.count\", []]");
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(ca), 0); /* waiting for b */
    run_ms(TIMEOUT_MS + 200);
    char *text = log_capture_end(&lc);
    json_t *m = fake_conn_next(ca);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_RESULT);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(m, 3), 0)), 1);
    json_decref(m);
    ck_assert_uint_eq(log_count_lines(text, "cluster meta: node b did not answer"), 1);
    free(text);
}

END_TEST

static void on_raw_reply(void *arg, wamp_err err, const void *data, size_t len)
{
    char *out = arg;
    ck_assert_int_eq(err, WAMP_OK);
    snprintf(out, 128, "%.*s", (int)len, (const char *)data);
}

START_TEST(test_request_not_understood)
{
    static const char *const bad[] = {
            "not json",
            "{\"realm\": \"realm1\", \"procedure\": \"wamp.session.kill_all\", \"args\": [], "
            "\"kwargs\": {}}",
            "{\"realm\": \"nope\", \"procedure\": \"wamp.session.count\", \"args\": [], "
            "\"kwargs\": {}}",
            "{\"realm\": \"realm1\", \"procedure\": \"wamp.session.count\", \"args\": 3, "
            "\"kwargs\": {}}",
    };
    fake_conn *ca = joined(0, NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char out[128] = "";
        ck_assert_int_eq(rt_cluster_request(nodes[1].c, "a", RT_CLUSTER_META_SERVICE, bad[i],
                                            strlen(bad[i]), on_raw_reply, out),
                         WAMP_OK);
        fake_bus_run(bus);
        ck_assert_msg(strstr(out, "\"error\"") != NULL, "%s -> %s", bad[i], out);
    }
    ck_assert_uint_eq(fake_conn_pending(ca), 0); /* the kill did not run: no GOODBYE */
    ck_assert_int_eq(result_int(ca, "wamp.session.count", "[]"), 1);
}

END_TEST

/* A process on the bus answering node b's meta requests with the largest count there is. */
static void on_forged_request(void *arg, const char *subject, const char *reply, const void *data,
                              size_t len)
{
    (void)subject;
    (void)data;
    (void)len;
    static const char huge[] = "{\"result\": 9223372036854775807}";
    ck_assert_int_eq(fake_link_ops.publish(arg, reply, NULL, huge, strlen(huge)), WAMP_OK);
}

START_TEST(test_sum_past_the_integer_range_is_left_out)
{
    fake_conn *ca = joined(0, NULL);
    rt_cluster_meta_free(nodes[1].meta); /* b serves no meta requests: the forger answers */
    nodes[1].meta = NULL;
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    uint64_t sub;
    ck_assert_int_eq(
            fake_link_ops.subscribe(raw, "wsc.node.b.meta", NULL, on_forged_request, raw, &sub),
            WAMP_OK);
    log_capture lc;
    log_capture_begin(&lc);
    ck_assert_int_eq(result_int(ca, "wamp.session.count", "[]"), 1);
    char *text = log_capture_end(&lc);
    ck_assert_uint_eq(log_count_lines(text, "cluster meta: node b did not answer"), 1);
    free(text);
    fake_link_free(raw);
}

END_TEST

START_TEST(test_freed_puts_local_procedures_back)
{
    fake_conn *ca = joined(0, NULL);
    (void)joined(1, NULL);
    ck_assert_int_eq(result_int(ca, "wamp.session.count", "[]"), 2);
    rt_cluster_meta_free(nodes[0].meta);
    nodes[0].meta = NULL;
    fake_conn_send(ca, "[48, 99, {}, \"wamp.session.count\", []]");
    json_t *m = fake_conn_next(ca); /* answered at once, by this node alone */
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_RESULT);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(m, 3), 0)), 1);
    json_decref(m);
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rt_cluster_meta");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_sessions_of_both_nodes);
    tcase_add_test(tc, test_subscriptions_of_both_nodes);
    tcase_add_test(tc, test_registrations_of_both_nodes);
    tcase_add_test(tc, test_node_not_answering_is_left_out);
    tcase_add_test(tc, test_request_not_understood);
    tcase_add_test(tc, test_sum_past_the_integer_range_is_left_out);
    tcase_add_test(tc, test_freed_puts_local_procedures_back);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
