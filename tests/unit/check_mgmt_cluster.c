/* check_mgmt_cluster.c: the management API across two nodes over the fake bus
 * (tests/support/fake_cluster.c): list_nodes, procedures forwarded to the other node and answered
 * asynchronously (results and errors with their URIs), a node that is not a member, a timeout
 * through lost messages and the fake clock, a caller leaving before the answer, and the link's
 * figures in get_worker; node_id "*" (one call on every node, answered with a map of their results
 * or errors, a silent node as a timeout entry); the merged reading of a cluster-wide trace
 * (mgmt_merge_pages(): cut where a node could still write, never held back when bounded by
 * to_seq, also with the records' clock an hour ahead of the nodes'). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_cluster.h"
#include "fake_transport.h"
#include "mgmt_api.h"
#include "mgmt_merge.h"
#include "rt_cluster.h"
#include "test_router.h"
#include "trace.h"
#include "trace_hub.h"

#define TIMEOUT_MS 500

/* One node: a router with the management API on a cluster member over a fake link. Node B runs
 * on node A's clock, which the bus uses too. */
typedef struct node {
    test_router t;
    mgmt_api *m;
    rt_cluster *c;
    fake_link *l;
} node;

static node A, B;
static fake_bus *bus;
static fake_conn *C; /* the management client, on node A */
static int64_t next_req;

/* cluster.max_pending_bytes of every node: live events to one node are bounded by an eighth. */
#define PENDING_BYTES 32768
static rt_cluster_config cluster_cfg = {.max_pending_bytes = PENDING_BYTES};

static void node_start(node *n, char *id, fake_clock *clock, uint64_t instance)
{
    test_router_init(&n->t);
    rt_router_free(n->t.rt);
    n->t.cfg.node_id = id;
    n->t.cfg.cluster = &cluster_cfg;
    n->t.cfg.mgmt_enabled = true;
    n->t.cfg.mgmt_realm = "mgmt";
    n->t.cfg.tracing_max_traces = 3;
    n->t.rt = rt_router_new(&n->t.cfg, fake_clock_now, clock);
    ck_assert_ptr_nonnull(n->t.rt);
    ck_assert_int_eq(mgmt_api_new(n->t.rt, 1700000000000000000ULL, &n->m), WAMP_OK);
    n->c = fake_cluster_member_new(bus, clock, id, instance, 1000, 4000, TIMEOUT_MS, &n->l);
    ck_assert_ptr_nonnull(n->c);
    ck_assert_int_eq(mgmt_api_set_cluster(n->m, n->c), WAMP_OK);
    ck_assert_int_eq(mgmt_api_set_cluster(n->m, n->c), WAMP_EEXIST);
    fake_link_set_up(n->l, true);
    fake_bus_run(bus);
}

/* Teardown order of main(): stop serving, free the link, then the API and the member. */
static void node_stop(node *n)
{
    if (n->m) {
        (void)mgmt_api_set_cluster(n->m, NULL);
    }
    fake_link_free(n->l);
    mgmt_api_free(n->m);
    rt_cluster_free(n->c);
    if (n->t.rt) {
        test_router_fini(&n->t);
    }
    memset(n, 0, sizeof(*n));
}

static void setup(void)
{
    memset(&A, 0, sizeof(A));
    memset(&B, 0, sizeof(B));
    A.t.clock.now_us = 1000000;
    bus = fake_bus_new(&A.t.clock);
    ck_assert_ptr_nonnull(bus);
    node_start(&A, "A", &A.t.clock, 1);
    node_start(&B, "B", &A.t.clock, 2);
    fake_bus_run(bus);
    ck_assert_int_eq((int)rt_cluster_node_count(A.c), 2);
    C = fake_conn_new(A.t.rt, WAMP_SER_JSON);
    fake_conn_join(C, "mgmt");
    next_req = 1;
}

static void teardown(void)
{
    fake_conn_free(C);
    node_stop(&B);
    node_stop(&A);
    fake_bus_free(bus);
}

/* Sends CALL crossbarfabriccenter.<proc>(args) on C; returns its request id. */
static int64_t send_call(const char *proc, const char *args)
{
    int64_t req = next_req++;
    fake_conn_send(C, "[48, %lld, {}, \"crossbarfabriccenter.%s\", %s]", (long long)req, proc,
                   args);
    return req;
}

/* The answer to req once the bus has delivered everything (owned). */
static json_t *answer(int64_t req)
{
    fake_bus_run(bus);
    json_t *m = fake_conn_next(C);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0) == WAMP_MSG_ERROR ? fake_msg_int(m, 2) : fake_msg_int(m, 1),
                     req);
    return m;
}

static json_t *call(const char *proc, const char *args)
{
    return answer(send_call(proc, args));
}

static json_t *result(json_t *m)
{
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_RESULT);
    return json_array_get(json_array_get(m, 3), 0);
}

/* Asserts m is ERROR uri whose message contains text; frees m. */
static void expect_error(json_t *m, const char *uri, const char *text)
{
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    ck_assert_str_eq(fake_msg_str(m, 4), uri);
    const char *msg = json_string_value(json_array_get(json_array_get(m, 5), 0));
    ck_assert_ptr_nonnull(msg);
    ck_assert_msg(strstr(msg, text) != NULL, "\"%s\" lacks \"%s\"", msg, text);
    json_decref(m);
}

START_TEST(test_list_nodes_lists_every_live_node)
{
    json_t *m = call("list_nodes", "[]");
    json_t *ids = result(m);
    ck_assert_int_eq((int)json_array_size(ids), 2);
    ck_assert_str_eq(json_string_value(json_array_get(ids, 0)), "A");
    ck_assert_str_eq(json_string_value(json_array_get(ids, 1)), "B");
    json_decref(m);
}

END_TEST

START_TEST(test_worker_of_the_other_node)
{
    /* The answer waits for the bus: nothing is sent before the reply arrives. */
    int64_t req = send_call("list_workers", "[\"B\"]");
    ck_assert_int_eq((int)fake_conn_pending(C), 0);
    json_t *m = answer(req);
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "router1");
    json_decref(m);
    m = call("get_worker", "[\"B\", \"router1\"]");
    json_t *w = result(m);
    ck_assert_str_eq(json_string_value(json_object_get(w, "type")), "router");
    json_t *cl = json_object_get(json_object_get(w, "stats"), "cluster");
    ck_assert_str_eq(json_string_value(json_object_get(cl, "state")), "up");
    ck_assert_int_eq((int)json_integer_value(json_object_get(cl, "nodes")), 2);
    ck_assert_int_gt((int)json_integer_value(json_object_get(cl, "messages_in")), 0);
    /* B's own session count: A's management client is not there. */
    ck_assert_int_eq(
            (int)json_integer_value(json_object_get(json_object_get(w, "stats"), "sessions")), 0);
    json_decref(m);
    /* Errors of the other node keep their URI. */
    expect_error(call("get_worker", "[\"B\", \"router9\"]"), MGMT_ERROR_NO_SUCH_WORKER, "router9");
    /* A CALL to this node is still answered at once while another one is on the bus. */
    req = send_call("get_worker", "[\"B\", \"router1\"]");
    json_t *mine = call("list_workers", "[\"A\"]");
    ck_assert_str_eq(json_string_value(json_array_get(result(mine), 0)), "router1");
    json_decref(mine);
    json_decref(answer(req));
}

END_TEST

START_TEST(test_trace_on_the_other_node)
{
    json_t *m = call("start_trace", "[\"B\", \"router1\", \"tb\", {\"msg_types\": [\"Call\"]}]");
    ck_assert_str_eq(json_string_value(json_object_get(result(m), "status")), "running");
    json_decref(m);
    /* It runs on B, not on A. */
    m = call("list_traces", "[\"B\", \"router1\"]");
    ck_assert_int_eq((int)json_array_size(result(m)), 1);
    json_decref(m);
    m = call("list_traces", "[\"A\", \"router1\"]");
    ck_assert_int_eq((int)json_array_size(result(m)), 0);
    json_decref(m);
    /* Traffic on B. */
    fake_conn *app = fake_conn_new_joined(B.t.rt, WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(app, "[48, 1, {}, \"com.nobody\", [1, \"x\"]]");
    fake_conn_free(app);
    m = call("get_trace_data", "[\"B\", \"router1\", \"tb\", 0, null, 10]");
    json_t *recs = result(m);
    ck_assert_int_eq((int)json_array_size(recs), 1);
    json_t *r0 = json_array_get(recs, 0);
    ck_assert_str_eq(json_string_value(json_object_get(r0, "msg_type")), "Call");
    ck_assert_str_eq(json_string_value(json_object_get(r0, "uri")), "com.nobody");
    json_decref(m);
    expect_error(call("start_trace", "[\"B\", \"router1\", \"tb\"]"), MGMT_ERROR_ALREADY_RUNNING,
                 "tb");
    expect_error(call("start_trace", "[\"B\", \"router1\", null, {\"bogus\": 1}]"),
                 MGMT_ERROR_INVALID_CONFIGURATION, "bogus");
    m = call("mark_trace", "[\"B\", \"router1\", \"tb\", \"deploy\"]");
    ck_assert_int_eq((int)json_integer_value(result(m)), 1);
    json_decref(m);
    m = call("stop_trace", "[\"B\", \"router1\", \"tb\"]");
    ck_assert_str_eq(json_string_value(json_object_get(result(m), "status")), "stopped");
    json_decref(m);
    m = call("delete_trace", "[\"B\", \"router1\", \"tb\"]");
    ck_assert(json_is_null(result(m)));
    json_decref(m);
    expect_error(call("get_trace", "[\"B\", \"router1\", \"tb\"]"), MGMT_ERROR_NO_SUCH_OBJECT,
                 "tb");
}

END_TEST

START_TEST(test_node_not_in_the_cluster)
{
    expect_error(call("get_worker", "[\"Z\", \"router1\"]"), MGMT_ERROR_NO_SUCH_OBJECT, "\"Z\"");
    expect_error(call("list_traces", "[\"Z\", \"router1\"]"), MGMT_ERROR_NO_SUCH_OBJECT, "\"Z\"");
}

END_TEST

START_TEST(test_node_that_does_not_answer)
{
    fake_bus_drop(bus, 1); /* the request is lost */
    int64_t req = send_call("get_worker", "[\"B\", \"router1\"]");
    fake_bus_run(bus);
    ck_assert_int_eq((int)fake_conn_pending(C), 0);
    fake_clock_advance_ms(&A.t.clock, TIMEOUT_MS - 100);
    fake_bus_run(bus);
    ck_assert_int_eq((int)fake_conn_pending(C), 0);
    fake_clock_advance_ms(&A.t.clock, 200);
    expect_error(answer(req), "wamp.error.timeout", "\"B\" did not answer within 500 ms");
    ck_assert_int_eq((int)fake_bus_dropped(bus), 1);
}

END_TEST

START_TEST(test_caller_gone_before_the_answer)
{
    (void)send_call("get_worker", "[\"B\", \"router1\"]");
    fake_conn_free(C);
    C = NULL;
    fake_bus_run(bus); /* the late answer is dropped */
    /* A new management session is served as usual. */
    C = fake_conn_new(A.t.rt, WAMP_SER_JSON);
    fake_conn_join(C, "mgmt");
    json_t *m = call("list_workers", "[\"B\"]");
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "router1");
    json_decref(m);
}

END_TEST

START_TEST(test_pending_forward_at_teardown)
{
    /* A forward in flight when the node stops: freed without an answer, no leak. */
    (void)send_call("get_worker", "[\"B\", \"router1\"]");
    (void)send_call("list_workers", "[\"B\"]");
}

END_TEST

START_TEST(test_without_cluster_link_up)
{
    /* A's link goes down: the list is A alone and B is unknown. */
    fake_link_set_up(A.l, false);
    fake_bus_run(bus);
    json_t *m = call("list_nodes", "[]");
    ck_assert_int_eq((int)json_array_size(result(m)), 1);
    json_decref(m);
    expect_error(call("get_worker", "[\"B\", \"router1\"]"), MGMT_ERROR_NO_SUCH_OBJECT, "\"B\"");
    m = call("get_worker", "[\"A\", \"router1\"]");
    json_t *cl = json_object_get(json_object_get(result(m), "stats"), "cluster");
    ck_assert_str_eq(json_string_value(json_object_get(cl, "state")), "down");
    json_decref(m);
}

END_TEST

START_TEST(test_forwarded_answer_traced_with_its_call)
{
    /* A trace of the management realm on A: the RESULT sent when B's reply arrives belongs to
     * the CALL's action (same correlation) and completes it. */
    trace *tr = test_router_start_trace(&A.t, "tm", "{\"realms\": [\"mgmt\"]}");
    int64_t req = send_call("list_workers", "[\"B\"]");
    fake_conn_send(C, "[48, 99, {}, \"crossbarfabriccenter.list_workers\", [\"A\"]]");
    json_decref(fake_conn_next(C)); /* the local call, answered meanwhile */
    json_decref(answer(req));
    json_t *recs = test_router_records(tr);
    const char *call_corr = NULL, *result_corr = NULL;
    bool result_last = false, call_last = true;
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        const char *type = json_string_value(json_object_get(r, "msg_type"));
        json_t *msg = json_object_get(r, "msg");
        if (strcmp(type, "Call") == 0 && json_integer_value(json_array_get(msg, 1)) == req) {
            call_corr = json_string_value(json_object_get(r, "correlation"));
            call_last = json_is_true(json_object_get(r, "correlation_is_last"));
        } else if (strcmp(type, "Result") == 0 &&
                   json_integer_value(json_array_get(msg, 1)) == req) {
            result_corr = json_string_value(json_object_get(r, "correlation"));
            result_last = json_is_true(json_object_get(r, "correlation_is_last"));
        }
    }
    ck_assert_ptr_nonnull(call_corr);
    ck_assert_ptr_nonnull(result_corr);
    ck_assert_str_eq(call_corr, result_corr);
    ck_assert(!call_last);
    ck_assert(result_last);
    json_decref(recs);
}

END_TEST

/* What a raw request to B's management subject got back. */
typedef struct raw_reply {
    bool called;
    wamp_err err;
    char text[512];
} raw_reply;

static void on_raw_reply(void *arg, wamp_err err, const void *data, size_t len)
{
    raw_reply *r = arg;
    r->called = true;
    r->err = err;
    snprintf(r->text, sizeof(r->text), "%.*s", (int)len, (const char *)data);
}

static raw_reply raw_request_to(fake_link *l, const char *subject, const char *text)
{
    raw_reply r = {0};
    ck_assert_int_eq(
            fake_link_ops.request(l, subject, text, strlen(text), TIMEOUT_MS, on_raw_reply, &r),
            WAMP_OK);
    fake_bus_run(bus);
    fake_clock_advance_ms(&A.t.clock, TIMEOUT_MS + 100);
    fake_bus_run(bus);
    ck_assert(r.called);
    return r;
}

static raw_reply raw_request(fake_link *l, const char *text)
{
    return raw_request_to(l, "wsc.node.B.mgmt", text);
}

START_TEST(test_bad_requests_on_the_bus)
{
    /* Another client of the bus (no core) sends B's management subject what it likes. */
    fake_link *l = fake_link_new(bus, NULL);
    fake_link_set_up(l, true);
    fake_bus_run(bus);
    /* Not JSON, or not a request: ignored (the asker times out), B goes on. */
    ck_assert_int_eq(raw_request(l, "\x01garbage").err, WAMP_EIO);
    ck_assert_int_eq(raw_request(l, "{\"procedure\": \"get_worker\", \"args\": 5}").err, WAMP_EIO);
    ck_assert_int_eq(raw_request(l, "{\"procedure\": \"list_nodes\", \"args\": [], "
                                    "\"kwargs\": {}, \"max_message_size\": -1}")
                             .err,
                     WAMP_EIO);
    /* An unknown procedure: answered with an error. */
    raw_reply r = raw_request(l, "{\"procedure\": \"reboot\", \"args\": [], \"kwargs\": {}, "
                                 "\"max_message_size\": 0}");
    ck_assert_int_eq(r.err, WAMP_OK);
    ck_assert_ptr_nonnull(strstr(r.text, "\"error\":\"wamp.error.no_such_procedure\""));
    /* A well-formed one is answered, without a caller identity too. */
    r = raw_request(l, "{\"procedure\": \"list_workers\", \"args\": [\"B\"], \"kwargs\": {}, "
                       "\"max_message_size\": 0}");
    ck_assert_int_eq(r.err, WAMP_OK);
    ck_assert_str_eq(r.text, "{\"args\":[[\"router1\"]]}");
    fake_link_free(l);
    /* The management client on A is served as before. */
    json_t *m = call("list_workers", "[\"B\"]");
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "router1");
    json_decref(m);
}

END_TEST

/* Asserts that entry e of a node_id "*" map is {"error": uri, "args": [message containing text]}.
 */
static void expect_entry_error(json_t *e, const char *uri, const char *text)
{
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(json_string_value(json_object_get(e, "error")), uri);
    const char *msg = json_string_value(json_array_get(json_object_get(e, "args"), 0));
    ck_assert_ptr_nonnull(msg);
    ck_assert_msg(strstr(msg, text) != NULL, "\"%s\" lacks \"%s\"", msg, text);
}

START_TEST(test_trace_on_every_node)
{
    /* One CALL, one deferred answer: the map of both nodes' results, one trace id for both. */
    int64_t req =
            send_call("start_trace", "[\"*\", \"router1\", null, {\"msg_types\": [\"Call\"]}]");
    ck_assert_int_eq((int)fake_conn_pending(C), 0);
    json_t *m = answer(req);
    json_t *map = result(m);
    ck_assert_int_eq((int)json_object_size(map), 2);
    const char *id = json_string_value(json_object_get(json_object_get(map, "A"), "id"));
    ck_assert_ptr_nonnull(id);
    ck_assert_msg(strncmp(id, "cluster-", 8) == 0, "%s", id);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(map, "B"), "id")), id);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(map, "B"), "status")),
                     "running");
    char tid[64], args[160];
    snprintf(tid, sizeof(tid), "%s", id);
    json_decref(m);
    /* It runs on both nodes. */
    m = call("list_traces", "[\"B\", \"router1\"]");
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), tid);
    json_decref(m);
    m = call("list_traces", "[\"A\", \"router1\"]");
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), tid);
    json_decref(m);
    /* Errors are entries of the map, with their URI. */
    snprintf(args, sizeof(args), "[\"*\", \"router1\", \"%s\"]", tid);
    m = call("start_trace", args);
    map = result(m);
    expect_entry_error(json_object_get(map, "A"), MGMT_ERROR_ALREADY_RUNNING, tid);
    expect_entry_error(json_object_get(map, "B"), MGMT_ERROR_ALREADY_RUNNING, tid);
    json_decref(m);
    /* mark_trace by keyword: every node's seq. */
    snprintf(args, sizeof(args),
             "[], {\"node_id\": \"*\", \"worker_id\": \"router1\", "
             "\"trace_id\": \"%s\", \"name\": \"deploy\"}",
             tid);
    m = call("mark_trace", args);
    map = result(m);
    /* The first record of each node's trace (no Call on either). */
    ck_assert(json_is_integer(json_object_get(map, "A")));
    ck_assert_int_eq((int)json_integer_value(json_object_get(map, "A")), 0);
    ck_assert(json_is_integer(json_object_get(map, "B")));
    ck_assert_int_eq((int)json_integer_value(json_object_get(map, "B")), 0);
    json_decref(m);
    snprintf(args, sizeof(args), "[\"*\", \"router1\", \"%s\"]", tid);
    m = call("delete_trace", args);
    expect_entry_error(json_object_get(result(m), "B"), MGMT_ERROR_NOT_STOPPED, tid);
    json_decref(m);
    m = call("stop_trace", args);
    map = result(m);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(map, "A"), "status")),
                     "stopped");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(map, "B"), "status")),
                     "stopped");
    json_decref(m);
    m = call("delete_trace", args);
    map = result(m);
    ck_assert_int_eq((int)json_object_size(map), 2);
    ck_assert(json_is_null(json_object_get(map, "A")));
    ck_assert(json_is_null(json_object_get(map, "B")));
    json_decref(m);
    m = call("list_traces", "[\"B\", \"router1\"]");
    ck_assert_int_eq((int)json_array_size(result(m)), 0);
    json_decref(m);
    /* Reading: list_traces and get_trace with "*" answer every node's too. */
    m = call("list_traces", "[\"*\", \"router1\"]");
    map = result(m);
    ck_assert_int_eq((int)json_array_size(json_object_get(map, "A")), 0);
    ck_assert_int_eq((int)json_array_size(json_object_get(map, "B")), 0);
    json_decref(m);
    snprintf(args, sizeof(args), "[\"*\", \"router1\", \"%s\"]", tid);
    m = call("get_trace", args);
    expect_entry_error(json_object_get(result(m), "B"), MGMT_ERROR_NO_SUCH_OBJECT, tid);
    json_decref(m);
    /* "*" is not a node for the other procedures. */
    expect_error(call("list_workers", "[\"*\"]"), MGMT_ERROR_NO_SUCH_OBJECT, "\"*\"");
}

END_TEST

START_TEST(test_every_node_with_one_silent)
{
    /* B's request is lost: the answer waits for the timeout, then names B's timeout. */
    fake_bus_drop(bus, 1);
    int64_t req = send_call("start_trace", "[\"*\", \"router1\", \"tt\"]");
    fake_bus_run(bus);
    ck_assert_int_eq((int)fake_conn_pending(C), 0);
    fake_clock_advance_ms(&A.t.clock, TIMEOUT_MS + 100);
    json_t *m = answer(req);
    json_t *map = result(m);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(map, "A"), "status")),
                     "running");
    expect_entry_error(json_object_get(map, "B"), "wamp.error.timeout",
                       "\"B\" did not answer within 500 ms");
    json_decref(m);
    /* A fan-out in flight at teardown is freed without an answer. */
    (void)send_call("stop_trace", "[\"*\", \"router1\", \"tt\"]");
}

END_TEST

START_TEST(test_every_node_with_the_link_down)
{
    /* The link down: "*" is this node alone, answered at once. */
    fake_link_set_up(A.l, false);
    fake_bus_run(bus);
    json_t *m = call("start_trace", "[\"*\", \"router1\", \"solo\"]");
    json_t *map = result(m);
    ck_assert_int_eq((int)json_object_size(map), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(map, "A"), "id")), "solo");
    json_decref(m);
}

END_TEST

START_TEST(test_joiner_starts_the_cluster_wide_traces)
{
    json_t *m = call("start_trace", "[\"*\", \"router1\", \"cw\", {\"msg_types\": [\"Call\"]}]");
    ck_assert_int_eq((int)json_object_size(result(m)), 2);
    json_decref(m);
    /* A trace of A alone is not cluster-wide. */
    json_decref(call("start_trace", "[\"A\", \"router1\", \"mine\"]"));
    /* Node C joins while cw runs: it starts cw with the same options, and only cw. */
    node N3;
    memset(&N3, 0, sizeof(N3));
    node_start(&N3, "C", &A.t.clock, 3);
    fake_bus_run(bus);
    ck_assert_int_eq((int)rt_cluster_node_count(A.c), 3);
    m = call("list_traces", "[\"C\", \"router1\"]");
    ck_assert_int_eq((int)json_array_size(result(m)), 1);
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "cw");
    json_decref(m);
    m = call("get_trace", "[\"C\", \"router1\", \"cw\"]");
    json_t *opts = json_object_get(result(m), "options");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(opts, "msg_types"), 0)),
                     "Call");
    json_decref(m);
    /* stop_trace "*" reaches C too; a node joining after the stop does not start it. */
    m = call("stop_trace", "[\"*\", \"router1\", \"cw\"]");
    ck_assert_int_eq((int)json_object_size(result(m)), 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(result(m), "C"), "status")),
                     "stopped");
    json_decref(m);
    node N4;
    memset(&N4, 0, sizeof(N4));
    node_start(&N4, "D", &A.t.clock, 4);
    fake_bus_run(bus);
    m = call("list_traces", "[\"D\", \"router1\"]");
    ck_assert_int_eq((int)json_array_size(result(m)), 0);
    json_decref(m);
    /* A restarted cluster-wide trace reaches a node that rejoins after its link came back. */
    json_decref(call("delete_trace", "[\"*\", \"router1\", \"cw\"]"));
    fake_link_set_up(N4.l, false);
    fake_bus_run(bus);
    m = call("start_trace", "[\"*\", \"router1\", \"cw\"]");
    ck_assert_int_eq((int)json_object_size(result(m)), 4);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(result(m), "D"), "error"));
    json_decref(m);
    fake_link_set_up(N4.l, true);
    fake_bus_run(bus);
    m = call("list_traces", "[\"D\", \"router1\"]");
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "cw");
    json_decref(m);
    node_stop(&N4);
    node_stop(&N3);
}

END_TEST

/* Node ids of a merged page's records, as "A0 B0 A1" (node id and seq). */
static void page_str(const json_t *recs, char *out, size_t size)
{
    size_t i, len = 0;
    json_t *r;
    out[0] = '\0';
    json_array_foreach(recs, i, r)
    {
        len += (size_t)snprintf(out + len, size - len, "%s%s%lld", i ? " " : "",
                                json_string_value(json_object_get(r, "node_id")),
                                (long long)json_integer_value(json_object_get(r, "seq")));
    }
}

/* mgmt_merge_pages() on pages given as JSON text, read up to to (JSON text, NULL: no bound);
 * the records as page_str(), and *next. */
static void merge_to(const char *pages, const char *from, const char *to, size_t limit, char *out,
                     size_t size, json_t **next)
{
    json_t *p = json_loads(pages, 0, NULL);
    json_t *f = json_loads(from, JSON_DECODE_ANY, NULL);
    json_t *t = to ? json_loads(to, JSON_DECODE_ANY, NULL) : NULL;
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(f);
    ck_assert(!to || t);
    json_t *m = mgmt_merge_pages(p, f, t, limit);
    ck_assert_ptr_nonnull(m);
    page_str(json_object_get(m, "records"), out, size);
    *next = json_incref(json_object_get(m, "next"));
    json_decref(m);
    json_decref(p);
    json_decref(f);
    json_decref(t);
}

static void merge(const char *pages, const char *from, size_t limit, char *out, size_t size,
                  json_t **next)
{
    merge_to(pages, from, NULL, limit, out, size, next);
}

START_TEST(test_merge_cuts_where_a_node_could_still_write)
{
    char got[256];
    json_t *next;
    /* B's clock is behind (now 4): A's record at ts 5 waits, B's records before 4 go. */
    merge("{\"A\": {\"records\": [{\"seq\": 0, \"ts\": 1}, {\"seq\": 1, \"ts\": 5}], \"now\": 10,"
          " \"running\": true},"
          " \"B\": {\"records\": [{\"seq\": 0, \"ts\": 2}, {\"seq\": 1, \"ts\": 3}], \"now\": 4,"
          " \"running\": true}}",
          "0", 10, got, sizeof(got), &next);
    ck_assert_str_eq(got, "A0 B0 B1");
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "A")), 1);
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "B")), 2);
    json_decref(next);
    /* A record B writes later at ts 4.5 still comes before A's ts 5: nothing twice, none lost. */
    merge("{\"A\": {\"records\": [{\"seq\": 1, \"ts\": 5}], \"now\": 10, \"running\": true},"
          " \"B\": {\"records\": [{\"seq\": 2, \"ts\": 4.5}], \"now\": 6, \"running\": true}}",
          "{\"A\": 1, \"B\": 2}", 10, got, sizeof(got), &next);
    ck_assert_str_eq(got, "B2 A1");
    json_decref(next);
    /* Full pages: cut at the smallest last key; the limit counts the merged records. */
    merge("{\"A\": {\"records\": [{\"seq\": 0, \"ts\": 1}, {\"seq\": 1, \"ts\": 5}], \"now\": 10,"
          " \"running\": false},"
          " \"B\": {\"records\": [{\"seq\": 0, \"ts\": 2}, {\"seq\": 1, \"ts\": 3}], \"now\": 10,"
          " \"running\": false}}",
          "0", 2, got, sizeof(got), &next);
    ck_assert_str_eq(got, "A0 B0");
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "A")), 1);
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "B")), 1);
    json_decref(next);
    /* Ties by node id, then seq; a gap item sorts at the record before it; stopped and read to
     * the end: no cut; a node's error keeps its cursor, a node not asked keeps its own. */
    merge("{\"B\": {\"records\": [{\"seq\": 0, \"ts\": 1}], \"now\": 9, \"running\": false},"
          " \"A\": {\"records\": [{\"seq\": 3, \"ts\": 1}, {\"seq\": 7, \"kind\": \"gap\"},"
          " {\"seq\": 8, \"ts\": 20}], \"now\": 9, \"running\": false},"
          " \"C\": {\"error\": \"wamp.error.timeout\", \"args\": [\"late\"]}}",
          "{\"A\": 3, \"C\": 4, \"Z\": 9}", 10, got, sizeof(got), &next);
    ck_assert_str_eq(got, "A3 A7 B0 A8");
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "A")), 9);
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "B")), 1);
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "C")), 4);
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "Z")), 9);
    json_decref(next);
    /* A malformed page: NULL (the caller answers an error). */
    json_t *p = json_loads("{\"A\": {\"records\": 5, \"now\": 1}}", 0, NULL);
    json_t *zero = json_integer(0);
    ck_assert_ptr_null(mgmt_merge_pages(p, zero, NULL, 10));
    json_decref(zero);
    json_decref(p);
}

END_TEST

/* Node B's page read by a node whose clock is behind B's. */
#define SKEWED_PAGES                                                                   \
    "{\"A\": {\"records\": [{\"seq\": 0, \"ts\": 1}], \"now\": 4, \"running\": true}," \
    " \"B\": {\"records\": [{\"seq\": 0, \"ts\": 2}, {\"seq\": 1, \"ts\": 6},"         \
    " {\"seq\": 2, \"ts\": 7}, {\"seq\": 3, \"ts\": 8}], \"now\": 9, \"running\": true}}"

START_TEST(test_merge_bounded_is_never_held_back)
{
    char got[256];
    json_t *next;
    /* A's clock is behind B's (A reads at 4, B's records are at 6 to 8): unbounded, B's newer
     * records wait for A's clock, however long, and a page can be empty while they wait. */
    merge(SKEWED_PAGES, "0", 10, got, sizeof(got), &next);
    ck_assert_str_eq(got, "A0 B0");
    json_decref(next);
    merge("{\"A\": {\"records\": [], \"now\": 4, \"running\": true},"
          " \"B\": {\"records\": [{\"seq\": 1, \"ts\": 6}, {\"seq\": 2, \"ts\": 7}], \"now\": 9,"
          " \"running\": true}}",
          "{\"A\": 1, \"B\": 1}", 10, got, sizeof(got), &next);
    ck_assert_str_eq(got, "");
    json_decref(next);
    /* Bounded to what each node held (A up to 0, B up to 2): nothing more of either can come,
     * so nothing waits; B's item past its bound is left unread. */
    merge_to(SKEWED_PAGES, "0", "{\"A\": 0, \"B\": 2}", 10, got, sizeof(got), &next);
    ck_assert_str_eq(got, "A0 B0 B1 B2");
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "A")), 1);
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "B")), 3);
    json_decref(next);
    /* One bound for every node; a node missing from the map: none of it (a node that ignored
     * the bound answered its page all the same). */
    merge_to(SKEWED_PAGES, "0", "1", 10, got, sizeof(got), &next);
    ck_assert_str_eq(got, "A0 B0 B1");
    json_decref(next);
    merge_to(SKEWED_PAGES, "0", "{\"B\": 3}", 10, got, sizeof(got), &next);
    ck_assert_str_eq(got, "B0 B1 B2 B3");
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "A")), 0);
    json_decref(next);
    /* A full page of a node that ignored the bound (an older one): what is past it is left
     * unread, and the cursor stays at the bound. */
    merge_to(SKEWED_PAGES, "0", "{\"A\": 0, \"B\": 1}", 4, got, sizeof(got), &next);
    ck_assert_str_eq(got, "A0 B0 B1");
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "B")), 2);
    json_decref(next);
}

END_TEST

/* One page of get_trace_data "*" from *next (replaced by the page's next): its records
 * appended to all (page_str() form), their Call arguments to xs; the page's record count. */
static size_t merged_page(json_t **next, size_t limit, char *all, size_t all_size, int *xs,
                          int *n_x)
{
    char *from = json_dumps(*next, JSON_COMPACT);
    char args[256], got[256];
    snprintf(args, sizeof(args), "[\"*\", \"router1\", \"mr\", %s, null, %zu]", from, limit);
    free(from);
    json_t *m = call("get_trace_data", args);
    json_t *v = result(m);
    ck_assert_int_eq((int)json_object_size(json_object_get(v, "errors")), 0);
    json_t *recs = json_object_get(v, "records");
    size_t n = json_array_size(recs), i;
    ck_assert_int_le((int)n, (int)limit);
    json_t *r, *prev = NULL;
    json_array_foreach(recs, i, r)
    {
        /* In (ts, node id, seq) order within the page. */
        if (prev) {
            double t0 = json_number_value(json_object_get(prev, "ts"));
            double t1 = json_number_value(json_object_get(r, "ts"));
            int c = strcmp(json_string_value(json_object_get(prev, "node_id")),
                           json_string_value(json_object_get(r, "node_id")));
            ck_assert(t0 < t1 || (t0 == t1 && c <= 0));
        }
        prev = r;
        ck_assert_int_lt(*n_x, 8);
        xs[(*n_x)++] = (int)json_integer_value(
                json_array_get(json_array_get(json_object_get(r, "msg"), 4), 0));
    }
    page_str(recs, got, sizeof(got));
    if (*all && *got) {
        strncat(all, " ", all_size - strlen(all) - 1);
    }
    strncat(all, got, all_size - strlen(all) - 1);
    json_decref(*next);
    *next = json_incref(json_object_get(v, "next"));
    json_decref(m);
    return n;
}

START_TEST(test_merged_reading_tiles_every_node)
{
    json_decref(call("start_trace", "[\"*\", \"router1\", \"mr\", {\"msg_types\": [\"Call\"]}]"));
    fake_conn *on_a = fake_conn_new_joined(A.t.rt, WAMP_SER_JSON, "realm1");
    fake_conn *on_b = fake_conn_new_joined(B.t.rt, WAMP_SER_JSON, "realm1");
    for (int i = 1; i <= 5; i++) {
        fake_clock_advance_ms(&A.t.clock, 1000);
        fake_conn_send(i % 2 ? on_a : on_b, "[48, %d, {}, \"com.nobody\", [%d]]", i, i);
    }
    /* Read while it runs, 2 at a time, each page from the last page's next; one more Call on B
     * meanwhile. The routers' wall offsets follow the real clock while the fake one jumps, so
     * records may wait for a later page, but none comes twice and none is lost. */
    json_t *next = json_object();
    char all[512] = "";
    int xs[8], n_x = 0;
    for (int page = 0; page < 5; page++) {
        (void)merged_page(&next, 2, all, sizeof(all), xs, &n_x);
        if (page == 2) {
            fake_clock_advance_ms(&A.t.clock, 1000);
            fake_conn_send(on_b, "[48, 6, {}, \"com.nobody\", [6]]");
        }
    }
    /* Once stopped everywhere, nothing is held back: read until a page is empty. */
    json_decref(call("stop_trace", "[\"*\", \"router1\", \"mr\"]"));
    int pages = 0;
    while (merged_page(&next, 2, all, sizeof(all), xs, &n_x) > 0) {
        ck_assert_int_lt(++pages, 10);
    }
    /* Each node's records once, in seq order. */
    char per_node[2][64] = {"", ""};
    for (char *tok = strtok(all, " "); tok; tok = strtok(NULL, " ")) {
        char *d = per_node[tok[0] == 'B'];
        strncat(d, tok, sizeof(per_node[0]) - strlen(d) - 2);
        strcat(d, " ");
    }
    ck_assert_str_eq(per_node[0], "A0 A1 A2 ");
    ck_assert_str_eq(per_node[1], "B0 B1 B2 ");
    ck_assert_int_eq(n_x, 6);
    int seen = 0;
    for (int i = 0; i < n_x; i++) {
        seen |= 1 << xs[i];
    }
    ck_assert_int_eq(seen, 0x7e);
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "A")), 3);
    ck_assert_int_eq((int)json_integer_value(json_object_get(next, "B")), 3);
    json_decref(next);
    fake_conn_free(on_a);
    fake_conn_free(on_b);
    expect_error(call("get_trace_data", "[\"*\", \"router1\", \"mr\", 0, -2]"),
                 "wamp.error.invalid_argument", "to_seq");
    expect_error(call("get_trace_data", "[\"*\", \"router1\", \"mr\", 0, {\"A\": \"5\"}]"),
                 "wamp.error.invalid_argument", "to_seq");
    expect_error(call("get_trace_data", "[\"*\", \"router1\", \"mr\", {\"A\": -1}]"),
                 "wamp.error.invalid_argument", "from_seq");
    /* A node without the trace is an error entry; the others' records still come. */
    json_decref(call("delete_trace", "[\"B\", \"router1\", \"mr\"]"));
    json_t *m = call("get_trace_data", "[\"*\", \"router1\", \"mr\"]");
    json_t *v = result(m);
    ck_assert_int_eq((int)json_array_size(json_object_get(v, "records")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(json_object_get(v, "errors"), "B"), "error")),
                     MGMT_ERROR_NO_SUCH_OBJECT);
    json_decref(m);
}

END_TEST

/* The seqs of a merged page's records, as page_str(). */
static void merged_str(const char *args, char *out, size_t size)
{
    json_t *m = call("get_trace_data", args);
    page_str(json_object_get(result(m), "records"), out, size);
    json_decref(m);
}

START_TEST(test_bounded_merged_reading_with_a_clock_ahead)
{
    json_decref(call("start_trace", "[\"*\", \"router1\", \"sk\", {\"msg_types\": [\"Call\"]}]"));
    fake_conn *on_a = fake_conn_new_joined(A.t.rt, WAMP_SER_JSON, "realm1");
    fake_conn *on_b = fake_conn_new_joined(B.t.rt, WAMP_SER_JSON, "realm1");
    /* The routers' wall offsets were taken from the real clock; the fake one now jumps an hour
     * with no tick between: the records' ts are an hour ahead of the nodes' wall clocks, as on
     * a node whose clock is ahead of another's. */
    fake_clock_advance_ms(&A.t.clock, 3600 * 1000);
    for (int i = 1; i <= 4; i++) {
        fake_clock_advance_ms(&A.t.clock, 1000);
        fake_conn_send(i % 2 ? on_a : on_b, "[48, %d, {}, \"com.nobody\", [%d]]", i, i);
    }
    char got[128];
    /* Unbounded, every record waits for the clocks: the page is empty while the trace runs. */
    merged_str("[\"*\", \"router1\", \"sk\", 0, null, 10]", got, sizeof(got));
    ck_assert_str_eq(got, "");
    /* Bounded to what each node held (get_trace "*": next_seq), nothing waits. */
    json_t *m = call("get_trace", "[\"*\", \"router1\", \"sk\"]");
    json_t *held = result(m);
    ck_assert_int_eq(
            (int)json_integer_value(json_object_get(json_object_get(held, "A"), "next_seq")), 2);
    ck_assert_int_eq(
            (int)json_integer_value(json_object_get(json_object_get(held, "B"), "next_seq")), 2);
    json_decref(m);
    merged_str("[\"*\", \"router1\", \"sk\", 0, {\"A\": 1, \"B\": 1}, 10]", got, sizeof(got));
    ck_assert_str_eq(got, "A0 B0 A1 B1");
    /* A bound reached on one node: the other's records still come, from their cursor. */
    merged_str("[\"*\", \"router1\", \"sk\", {\"A\": 2, \"B\": 1}, {\"A\": 1, \"B\": 1}, 10]", got,
               sizeof(got));
    ck_assert_str_eq(got, "B1");
    /* A node the map leaves out is not read. */
    merged_str("[\"*\", \"router1\", \"sk\", 0, {\"B\": 1}, 10]", got, sizeof(got));
    ck_assert_str_eq(got, "B0 B1");
    fake_conn_free(on_a);
    fake_conn_free(on_b);
    json_decref(call("stop_trace", "[\"*\", \"router1\", \"sk\"]"));
    json_decref(call("delete_trace", "[\"*\", \"router1\", \"sk\"]"));
}

END_TEST

/* A live_* counter of node_id's get_worker (through A). */
static json_int_t live_stat(const char *node_id, const char *key)
{
    char args[64];
    snprintf(args, sizeof(args), "[\"%s\", \"router1\"]", node_id);
    json_t *m = call("get_worker", args);
    json_int_t v = json_integer_value(
            json_object_get(json_object_get(json_object_get(result(m), "stats"), "cluster"), key));
    json_decref(m);
    return v;
}

/* Every message C got, until none is left: the EVENTs' args (owned array). */
static json_t *events_of_c(void)
{
    json_t *evs = json_array();
    json_t *m;
    while ((m = fake_conn_next(C))) {
        if (fake_msg_int(m, 0) == WAMP_MSG_EVENT) {
            json_array_append(evs, json_array_get(m, 4));
        }
        json_decref(m);
    }
    return evs;
}

/* A's cluster tick once the live topics' 100 ms check is due, and the bus. */
static void tick_a(void)
{
    fake_clock_advance_ms(&A.t.clock, 100);
    rt_cluster_tick(A.c);
    fake_bus_run(bus);
}

/* B's next batch period (its trace's batching_period is 10 ms), the bus, and what C got. */
static json_t *events_of_b_batch(void)
{
    fake_clock_advance_ms(&A.t.clock, 20);
    rt_router_tick(B.t.rt);
    fake_bus_run(bus);
    return events_of_c();
}

START_TEST(test_live_topics_of_the_other_node)
{
    /* Nobody listens on A: B sends nothing. */
    json_decref(call("start_trace", "[\"B\", \"router1\", \"quiet\"]"));
    tick_a();
    ck_assert_int_eq((int)live_stat("B", "live_interested_nodes"), 0);
    ck_assert_int_eq((int)live_stat("B", "live_forwarded"), 0);
    /* A subscriber to each topic on A: A's next tick tells B. */
    int64_t sub_ids[3];
    static const char *const topics[] = {"on_trace_started", "on_trace_data", "on_trace_stopped"};
    for (int i = 0; i < 3; i++) {
        fake_conn_send(C, "[32, %d, {}, \"crossbarfabriccenter.remote.tracing.%s\"]", 900 + i,
                       topics[i]);
        json_t *m = fake_conn_next(C);
        ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
        sub_ids[i] = fake_msg_int(m, 2);
        json_decref(m);
    }
    tick_a();
    ck_assert_int_eq((int)live_stat("B", "live_interested_nodes"), 1);
    /* on_trace_started of B's trace, naming B. */
    send_call("start_trace", "[\"B\", \"router1\", \"lv\", {\"batching_period\": 10}]");
    fake_bus_run(bus);
    json_t *evs = events_of_c();
    ck_assert_int_eq((int)json_array_size(evs), 1);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(evs, 0), 0)), "B");
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(evs, 0), 2)), "lv");
    json_decref(evs);
    /* on_trace_data: B's batch with its marker. */
    json_decref(call("mark_trace", "[\"B\", \"router1\", \"lv\", \"m1\"]"));
    evs = events_of_b_batch();
    ck_assert_int_ge((int)json_array_size(evs), 1);
    json_t *data = json_array_get(evs, json_array_size(evs) - 1);
    ck_assert_str_eq(json_string_value(json_array_get(data, 0)), "B");
    json_t *recs = json_array_get(data, 4);
    json_t *last = json_array_get(recs, json_array_size(recs) - 1);
    ck_assert_str_eq(json_string_value(json_object_get(last, "msg_type")), "Marker");
    json_decref(evs);
    /* on_trace_stopped. */
    json_decref(call("stop_trace", "[\"B\", \"router1\", \"lv\"]"));
    evs = events_of_b_batch();
    ck_assert_int_ge((int)json_array_size(evs), 1);
    json_t *st = json_array_get(evs, json_array_size(evs) - 1);
    ck_assert_str_eq(json_string_value(json_array_get(st, 0)), "B");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(st, 3), "status")),
                     "stopped");
    json_decref(evs);
    ck_assert_int_ge((int)live_stat("B", "live_forwarded"), 3);
    ck_assert_int_ge((int)live_stat("A", "live_received"), 3);
    ck_assert_int_eq((int)live_stat("B", "live_dropped"), 0);
    /* The last subscriber gone: A withdraws at its next tick, and B sends nothing more. */
    for (int i = 0; i < 3; i++) {
        fake_conn_send(C, "[34, %d, %lld]", 910 + i, (long long)sub_ids[i]);
        json_decref(fake_conn_next(C));
    }
    tick_a();
    ck_assert_int_eq((int)live_stat("B", "live_interested_nodes"), 0);
}

END_TEST

START_TEST(test_live_interest_expires)
{
    fake_conn_send(C, "[32, 900, {}, \"crossbarfabriccenter.remote.tracing.on_trace_data\"]");
    json_decref(fake_conn_next(C));
    tick_a();
    ck_assert_int_eq((int)live_stat("B", "live_interested_nodes"), 1);
    /* A renews within the lease: still held. */
    fake_clock_advance_ms(&A.t.clock, 2000);
    rt_cluster_tick(A.c);
    rt_cluster_tick(B.c);
    fake_bus_run(bus);
    fake_clock_advance_ms(&A.t.clock, 2000);
    rt_cluster_tick(B.c);
    ck_assert_int_eq((int)live_stat("B", "live_interested_nodes"), 1);
    /* A silent (its messages lost) beyond the lease: B forgets it. */
    fake_clock_advance_ms(&A.t.clock, 1100);
    rt_cluster_tick(B.c);
    ck_assert_int_eq((int)live_stat("B", "live_interested_nodes"), 0);
}

END_TEST

START_TEST(test_live_events_bounded_per_node)
{
    fake_conn_send(C, "[32, 900, {}, \"crossbarfabriccenter.remote.tracing.on_trace_data\"]");
    json_decref(fake_conn_next(C));
    tick_a();
    json_decref(call("start_trace", "[\"B\", \"router1\", \"ov\", {\"batching_period\": 10}]"));
    /* Batches of B while A does not acknowledge (the bus does not run): beyond an eighth of
     * max_pending_bytes unacknowledged, B drops them and counts them. */
    char big[600];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    trace *t = trace_hub_find(rt_router_trace_hub(B.t.rt), "ov");
    ck_assert_ptr_nonnull(t);
    for (int i = 0; i < 20; i++) {
        json_t *meta = json_pack("{s:s}", "pad", big);
        uint64_t seq;
        ck_assert_int_eq(trace_mark(t, "m", meta, rt_router_now_us(B.t.rt) * 1000u,
                                    rt_router_wall_ns(B.t.rt), &seq),
                         WAMP_OK);
        json_decref(meta);
        fake_clock_advance_ms(&A.t.clock, 20);
        rt_router_tick(B.t.rt);
    }
    /* The events sent reach C once the bus runs (and A acknowledges them). */
    fake_bus_run(bus);
    json_t *evs = events_of_c();
    json_int_t dropped = live_stat("B", "live_dropped");
    json_int_t forwarded = live_stat("B", "live_forwarded");
    ck_assert_int_eq((int)json_array_size(evs), (int)forwarded);
    json_decref(evs);
    ck_assert_int_gt((int)dropped, 0);
    ck_assert_int_gt((int)forwarded, 0);
    ck_assert_int_lt((int)(forwarded * 700), PENDING_BYTES / 8 + 700);
    ck_assert_int_eq((int)(dropped + forwarded), 20);
    /* Acknowledged: the bound is free again. */
    json_decref(call("mark_trace", "[\"B\", \"router1\", \"ov\", \"after\"]"));
    evs = events_of_b_batch();
    ck_assert_int_eq((int)json_array_size(evs), 1);
    json_decref(evs);
    ck_assert_int_eq((int)live_stat("B", "live_forwarded"), (int)forwarded + 1);
    ck_assert_int_eq((int)live_stat("B", "live_dropped"), (int)dropped);
}

END_TEST

START_TEST(test_bad_live_messages_on_the_bus)
{
    fake_conn_send(C, "[32, 900, {}, \"crossbarfabriccenter.remote.tracing.on_trace_started\"]");
    json_decref(fake_conn_next(C));
    fake_link *l = fake_link_new(bus, NULL);
    fake_link_set_up(l, true);
    fake_bus_run(bus);
    /* Acknowledged, and without effect: not JSON, an interest of B in itself (its events would
     * come back to it), a mask out of range, a bad node id, an unknown topic, args not a list. */
    static const char *const bad[] = {
            "\x01garbage",
            "{\"node_id\": \"B\", \"interest\": 7}",
            "{\"node_id\": \"Z\", \"interest\": 99}",
            "{\"node_id\": \"a.b\", \"interest\": 1}",
            "{\"topic\": \"on_reboot\", \"args\": []}",
            "{\"topic\": \"on_trace_started\", \"args\": 5}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        raw_reply r = raw_request_to(l, "wsc.node.B.mgmt-live", bad[i]);
        ck_assert_int_eq(r.err, WAMP_OK);
        ck_assert_str_eq(r.text, "{}");
    }
    ck_assert_int_eq((int)live_stat("B", "live_interested_nodes"), 0);
    ck_assert_int_eq((int)live_stat("B", "live_received"), 0);
    /* A well-formed event is published on A's management realm as it came. */
    raw_reply r =
            raw_request_to(l, "wsc.node.A.mgmt-live",
                           "{\"topic\": \"on_trace_started\", \"args\": [\"B\", \"w\", \"t\"]}");
    ck_assert_str_eq(r.text, "{}");
    json_t *evs = events_of_c();
    ck_assert_int_eq((int)json_array_size(evs), 1);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(evs, 0), 2)), "t");
    json_decref(evs);
    fake_link_free(l);
}

END_TEST

static Suite *mgmt_cluster_suite(void)
{
    Suite *s = suite_create("mgmt_cluster");
    TCase *tc = tcase_create("forward");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_list_nodes_lists_every_live_node);
    tcase_add_test(tc, test_worker_of_the_other_node);
    tcase_add_test(tc, test_trace_on_the_other_node);
    tcase_add_test(tc, test_node_not_in_the_cluster);
    tcase_add_test(tc, test_node_that_does_not_answer);
    tcase_add_test(tc, test_caller_gone_before_the_answer);
    tcase_add_test(tc, test_pending_forward_at_teardown);
    tcase_add_test(tc, test_without_cluster_link_up);
    tcase_add_test(tc, test_bad_requests_on_the_bus);
    tcase_add_test(tc, test_forwarded_answer_traced_with_its_call);
    tcase_add_test(tc, test_trace_on_every_node);
    tcase_add_test(tc, test_every_node_with_one_silent);
    tcase_add_test(tc, test_every_node_with_the_link_down);
    tcase_add_test(tc, test_joiner_starts_the_cluster_wide_traces);
    tcase_add_test(tc, test_merged_reading_tiles_every_node);
    tcase_add_test(tc, test_merge_cuts_where_a_node_could_still_write);
    tcase_add_test(tc, test_merge_bounded_is_never_held_back);
    tcase_add_test(tc, test_bounded_merged_reading_with_a_clock_ahead);
    tcase_add_test(tc, test_live_topics_of_the_other_node);
    tcase_add_test(tc, test_live_interest_expires);
    tcase_add_test(tc, test_live_events_bounded_per_node);
    tcase_add_test(tc, test_bad_live_messages_on_the_bus);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(mgmt_cluster_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
