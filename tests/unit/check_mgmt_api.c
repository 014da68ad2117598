/* check_mgmt_api.c: the management procedures through the real dealer path, over the fake
 * transport: argument handling (positional and keyword), results, and every error URI. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_transport.h"
#include "mgmt_api.h"
#include "rt_dealer.h"
#include "rt_local.h"
#include "rt_realm.h"
#include "test_router.h"

static test_router T;
static mgmt_api *M;
static fake_conn *C;
static int64_t next_req;

static void setup(void)
{
    test_router_init(&T);
    rt_router_free(T.rt);
    T.cfg.mgmt_enabled = true;
    T.cfg.mgmt_realm = "mgmt";
    T.cfg.tracing_max_traces = 3;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
    ck_assert_int_eq(mgmt_api_new(T.rt, 1700000000000000000ULL, &M), WAMP_OK);
    C = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(C, "mgmt");
    next_req = 1;
}

static void teardown(void)
{
    fake_conn_free(C);
    mgmt_api_free(M);
    test_router_fini(&T);
}

/* CALLs crossbarfabriccenter.<proc> with args (JSON text of a list, or NULL) and kwargs (JSON
 * text of a dict, or NULL); returns the reply message (owned). */
static json_t *call(const char *proc, const char *args, const char *kwargs)
{
    int64_t req = next_req++;
    if (kwargs) {
        fake_conn_send(C, "[48, %lld, {}, \"crossbarfabriccenter.%s\", %s, %s]", (long long)req,
                       proc, args ? args : "[]", kwargs);
    } else if (args) {
        fake_conn_send(C, "[48, %lld, {}, \"crossbarfabriccenter.%s\", %s]", (long long)req, proc,
                       args);
    } else {
        fake_conn_send(C, "[48, %lld, {}, \"crossbarfabriccenter.%s\"]", (long long)req, proc);
    }
    json_t *m = fake_conn_next(C);
    ck_assert_ptr_nonnull(m);
    /* RESULT [50, req, ...] or ERROR [8, 48, req, ...] */
    ck_assert_int_eq(fake_msg_int(m, 0) == WAMP_MSG_ERROR ? fake_msg_int(m, 2) : fake_msg_int(m, 1),
                     req);
    return m;
}

/* The single result value of a RESULT (borrowed from m). */
static json_t *result(json_t *m)
{
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_RESULT);
    return json_array_get(json_array_get(m, 3), 0);
}

static void expect_error(const char *proc, const char *args, const char *uri)
{
    json_t *m = call(proc, args, NULL);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    ck_assert_str_eq(fake_msg_str(m, 4), uri);
    const char *msg = json_string_value(json_array_get(json_array_get(m, 5), 0));
    ck_assert_ptr_nonnull(msg);
    ck_assert_int_gt((int)strlen(msg), 0);
    ck_assert_ptr_null(strchr(msg, '\n'));
    json_decref(m);
}

START_TEST(test_nodes_and_workers)
{
    json_t *m = call("list_nodes", NULL, NULL);
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "testnode");
    json_decref(m);
    m = call("list_workers", "[\"testnode\"]", NULL);
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "router1");
    json_decref(m);
    m = call("get_worker", NULL, "{\"node_id\": \"testnode\", \"worker_id\": \"router1\"}");
    json_t *w = result(m);
    ck_assert_str_eq(json_string_value(json_object_get(w, "type")), "router");
    ck_assert_str_eq(json_string_value(json_object_get(w, "started")), "2023-11-14T22:13:20.000Z");
    ck_assert_int_eq((int)json_array_size(json_object_get(w, "realms")), 3);
    json_decref(m);
    expect_error("list_workers", "[\"other\"]", MGMT_ERROR_NO_SUCH_OBJECT);
    expect_error("get_worker", "[\"testnode\", \"router9\"]", MGMT_ERROR_NO_SUCH_WORKER);
    expect_error("list_workers", "[42]", WAMP_ERROR_INVALID_ARGUMENT);
}

END_TEST

START_TEST(test_trace_lifecycle)
{
    json_t *m = call("start_trace",
                     "[\"testnode\", \"router1\", null, {\"msg_types\": [\"Call\"]}]", NULL);
    json_t *md = result(m);
    ck_assert_str_eq(json_string_value(json_object_get(md, "id")), "trace1");
    ck_assert_str_eq(json_string_value(json_object_get(md, "status")), "running");
    json_decref(m);
    /* Traffic on realm1: one CALL (no callee: the ERROR is not a Call, so 1 record). */
    fake_conn *app = fake_conn_new(T.rt, WAMP_SER_MSGPACK);
    fake_conn_join(app, "realm1");
    fake_conn_send(app, "[48, 1, {}, \"com.nobody\"]");
    fake_conn_free(app);
    m = call("get_trace_data", NULL,
             "{\"node_id\": \"testnode\", \"worker_id\": \"router1\", \"trace_id\": \"trace1\", "
             "\"limit\": 10}");
    json_t *recs = result(m);
    ck_assert_int_eq((int)json_array_size(recs), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(recs, 0), "msg_type")),
                     "Call");
    json_decref(m);
    expect_error("start_trace", "[\"testnode\", \"router1\", \"trace1\"]",
                 MGMT_ERROR_ALREADY_RUNNING);
    expect_error("delete_trace", "[\"testnode\", \"router1\", \"trace1\"]", MGMT_ERROR_NOT_STOPPED);
    m = call("stop_trace", "[\"testnode\", \"router1\", \"trace1\"]", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(result(m), "status")), "stopped");
    json_decref(m);
    expect_error("start_trace", "[\"testnode\", \"router1\", \"trace1\"]",
                 MGMT_ERROR_ALREADY_EXISTS);
    m = call("list_traces", "[\"testnode\", \"router1\", false]", NULL);
    ck_assert_int_eq((int)json_array_size(result(m)), 0);
    json_decref(m);
    m = call("list_traces", "[\"testnode\", \"router1\"]", NULL);
    ck_assert_int_eq((int)json_array_size(result(m)), 1);
    json_decref(m);
    m = call("delete_trace", "[\"testnode\", \"router1\", \"trace1\"]", NULL);
    ck_assert(json_is_null(result(m)));
    json_decref(m);
    expect_error("get_trace", "[\"testnode\", \"router1\", \"trace1\"]", MGMT_ERROR_NO_SUCH_OBJECT);
}

END_TEST

START_TEST(test_argument_and_option_errors)
{
    json_t *m = call("start_trace", "[\"testnode\", \"router1\", \"t\"]", NULL);
    json_decref(m);
    expect_error("get_trace_data", "[\"testnode\", \"router1\", \"t\", -1]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("get_trace_data", "[\"testnode\", \"router1\", \"t\", 0, null, 0]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("get_trace_data", "[\"testnode\", \"router1\", \"t\", 0, null, 20000]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("start_trace", "[\"testnode\", \"router1\", null, {\"bogus\": 1}]",
                 MGMT_ERROR_INVALID_CONFIGURATION);
    expect_error("start_trace", "[\"testnode\", \"router1\", null, {\"persist\": 1}]",
                 MGMT_ERROR_INVALID_CONFIGURATION);
    expect_error("start_trace", "[\"testnode\", \"router1\", null, {\"limit\": 0}]",
                 MGMT_ERROR_INVALID_CONFIGURATION);
    expect_error("start_trace", "[\"testnode\", \"router1\", 5]", WAMP_ERROR_INVALID_ARGUMENT);
    /* An id out of range is an argument out of range, as one with a NUL in it: not an option. */
    expect_error("start_trace", "[\"testnode\", \"router1\", \"\"]", WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("start_trace", "[\"testnode\", \"router1\", \"a\\tb\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("start_trace", "[\"testnode\", \"router1\", \"a\\u0000b\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    /* max_traces is 3 here. */
    json_decref(call("start_trace", "[\"testnode\", \"router1\"]", NULL));
    json_decref(call("start_trace", "[\"testnode\", \"router1\"]", NULL));
    expect_error("start_trace", "[\"testnode\", \"router1\"]", MGMT_ERROR_RESOURCE_LIMIT);
}

END_TEST

/* An error naming a long non-ASCII id is cut to its buffer at a character's boundary: the
 * answer is an ERROR with valid text, not a connection closed for want of memory. */
START_TEST(test_long_non_ascii_id_in_an_error)
{
    char args[1024];
    char id[600] = "";
    for (int i = 0; i < 240; i++) {
        strcat(id, "a");
    }
    for (int i = 0; i < 10; i++) {
        strcat(id, "\xc3\xa9"); /* é */
    }
    snprintf(args, sizeof(args), "[\"testnode\", \"router1\", \"%s\"]", id);
    json_t *m = call("get_trace", args, NULL);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    const char *msg = json_string_value(json_array_get(json_array_get(m, 5), 0));
    ck_assert_ptr_nonnull(msg);
    ck_assert_uint_gt(strlen(msg), 200);
    json_decref(m);
    for (int i = 0; i < 100; i++) { /* "é" * 200: cut after any byte of the name */
        snprintf(id + strlen(id), sizeof(id) - strlen(id), "%s", "\xc3\xa9");
    }
    snprintf(args, sizeof(args), "[\"testnode\", \"router1\", \"%s\"]", id + 240);
    m = call("get_trace", args, NULL);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    json_decref(m);
}

END_TEST

/* Ids, names and node/worker ids are read with their real length: NUL inside one is an
 * invalid argument, never cut ("a\u0000b" is not trace "a"). */
START_TEST(test_nul_in_argument_strings)
{
    expect_error("start_trace", "[\"testnode\", \"router1\", \"a\\u0000b\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    json_t *m = call("list_traces", "[\"testnode\", \"router1\"]", NULL);
    ck_assert_uint_eq(json_array_size(result(m)), 0);
    json_decref(m);
    json_decref(call("start_trace", "[\"testnode\", \"router1\", \"a\"]", NULL));
    expect_error("get_trace", "[\"testnode\", \"router1\", \"a\\u0000zzz\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("stop_trace", "[\"testnode\", \"router1\", \"a\\u0000\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("get_trace_data", "[\"testnode\", \"router1\", \"a\\u0000\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("mark_trace", "[\"testnode\", \"router1\", \"a\\u0000x\", \"m\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("mark_trace", "[\"testnode\", \"router1\", \"a\", \"m\\u0000x\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("get_trace", "[\"testnode\\u0000x\", \"router1\", \"a\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("get_worker", "[\"testnode\", \"router1\\u0000\"]", WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("start_trace",
                 "[\"testnode\", \"router1\", null, {\"uris\": [\"com.a\\u0000b\"]}]",
                 MGMT_ERROR_INVALID_CONFIGURATION);
    m = call("get_trace", "[\"testnode\", \"router1\", \"a\"]", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(result(m), "id")), "a");
    json_decref(m);
}

END_TEST

START_TEST(test_live_topics)
{
    fake_conn_send(C, "[32, 900, {}, \"crossbarfabriccenter.remote.tracing.on_trace_started\"]");
    fake_conn_send(C, "[32, 901, {}, \"crossbarfabriccenter.remote.tracing.on_trace_data\"]");
    fake_conn_send(C, "[32, 902, {}, \"crossbarfabriccenter.remote.tracing.on_trace_stopped\"]");
    fake_conn_clear(C);
    fake_conn_send(C, "[48, 77, {}, \"crossbarfabriccenter.start_trace\", "
                      "[\"testnode\", \"router1\", \"live\", {\"batching_period\": 10}]]");
    /* on_trace_started is published while start_trace runs, so it arrives before the RESULT. */
    json_t *started = fake_conn_next(C);
    ck_assert_int_eq(fake_msg_int(started, 0), WAMP_MSG_EVENT);
    json_t *sa = json_array_get(started, 4);
    ck_assert_str_eq(json_string_value(json_array_get(sa, 0)), "testnode");
    ck_assert_str_eq(json_string_value(json_array_get(sa, 2)), "live");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(sa, 3), "status")),
                     "running");
    json_decref(started);
    json_t *res = fake_conn_next(C);
    ck_assert_int_eq(fake_msg_int(res, 0), WAMP_MSG_RESULT);
    ck_assert_int_eq(fake_msg_int(res, 1), 77);
    json_decref(res);
    fake_conn *app = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(app, "realm1");
    fake_clock_advance_ms(&T.clock, 20);
    rt_router_tick(T.rt);
    json_t *data = fake_conn_next(C);
    ck_assert_ptr_nonnull(data);
    ck_assert_int_eq(fake_msg_int(data, 0), WAMP_MSG_EVENT);
    json_t *a = json_array_get(data, 4);
    ck_assert_str_eq(json_string_value(json_array_get(a, 2)), "live");
    json_t *period = json_array_get(a, 3);
    ck_assert_int_eq(json_integer_value(json_object_get(period, "first_seq")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(period, "last_seq")),
                     1); /* HELLO, WELCOME */
    ck_assert_int_eq((int)json_array_size(json_array_get(a, 4)), 2);
    json_decref(data);
    json_decref(call("stop_trace", "[\"testnode\", \"router1\", \"live\"]", NULL));
    fake_clock_advance_ms(&T.clock, 20);
    rt_router_tick(T.rt);
    json_t *stopped = fake_conn_next(C);
    ck_assert_ptr_nonnull(stopped);
    ck_assert_str_eq(json_string_value(json_object_get(
                             json_array_get(json_array_get(stopped, 4), 3), "status")),
                     "stopped");
    json_decref(stopped);
    fake_conn_free(app);
}

END_TEST

START_TEST(test_mark_trace)
{
    json_decref(call("start_trace", "[\"testnode\", \"router1\", \"a\"]", NULL));
    json_decref(call("start_trace", "[\"testnode\", \"router1\", \"b\"]", NULL));
    /* One trace: the marker's seq (nothing else was recorded: 0). */
    json_t *m =
            call("mark_trace", "[\"testnode\", \"router1\", \"a\", \"step 1\", {\"k\": 7}]", NULL);
    ck_assert_int_eq(json_integer_value(result(m)), 0);
    json_decref(m);
    /* Every running trace: {trace_id: seq}; "b" is stopped first, so only "a" gets it. */
    json_decref(call("stop_trace", "[\"testnode\", \"router1\", \"b\"]", NULL));
    m = call("mark_trace", NULL,
             "{\"node_id\": \"testnode\", \"worker_id\": \"router1\", \"trace_id\": null, "
             "\"name\": \"all\"}");
    json_t *seqs = result(m);
    ck_assert_int_eq((int)json_object_size(seqs), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(seqs, "a")), 1);
    json_decref(m);
    m = call("get_trace_data", "[\"testnode\", \"router1\", \"a\"]", NULL);
    json_t *recs = result(m);
    ck_assert_int_eq((int)json_array_size(recs), 2);
    json_t *r0 = json_array_get(recs, 0);
    ck_assert_str_eq(json_string_value(json_object_get(r0, "msg_type")), "Marker");
    ck_assert_str_eq(json_string_value(json_object_get(r0, "uri")), "step 1");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r0, "msg"), "k")), 7);
    json_t *r1 = json_array_get(recs, 1);
    ck_assert_str_eq(json_string_value(json_object_get(r1, "uri")), "all");
    ck_assert_int_eq((int)json_object_size(json_object_get(r1, "msg")), 0);
    json_decref(m);
    expect_error("mark_trace", "[\"testnode\", \"router1\", \"b\", \"x\"]", MGMT_ERROR_NOT_RUNNING);
    expect_error("mark_trace", "[\"testnode\", \"router1\", \"zz\", \"x\"]",
                 MGMT_ERROR_NO_SUCH_OBJECT);
    expect_error("mark_trace", "[\"testnode\", \"router1\", \"a\", \"\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("mark_trace", "[\"testnode\", \"router1\", \"a\", \"x\", [1]]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("mark_trace", "[\"testnode\", \"router1\", 3, \"x\"]",
                 WAMP_ERROR_INVALID_ARGUMENT);
    expect_error("mark_trace", "[\"testnode\", \"router9\", \"a\", \"x\"]",
                 MGMT_ERROR_NO_SUCH_WORKER);
}

END_TEST

START_TEST(test_crossbar_aliases)
{
    json_t *m = call("mrealm.get_nodes", NULL, NULL);
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "testnode");
    json_decref(m);
    m = call("remote.node.get_workers", "[\"testnode\"]", NULL);
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "router1");
    json_decref(m);
    m = call("remote.node.get_worker", "[\"testnode\", \"router1\"]", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(result(m), "type")), "router");
    json_decref(m);
    m = call("remote.tracing.start_trace", "[\"testnode\", \"router1\", \"al\"]", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(result(m), "status")), "running");
    json_decref(m);
    m = call("remote.tracing.get_traces", "[\"testnode\", \"router1\"]", NULL);
    ck_assert_str_eq(json_string_value(json_array_get(result(m), 0)), "al");
    json_decref(m);
    m = call("remote.tracing.get_trace", "[\"testnode\", \"router1\", \"al\"]", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(result(m), "id")), "al");
    json_decref(m);
    m = call("remote.tracing.get_trace_data", "[\"testnode\", \"router1\", \"al\"]", NULL);
    ck_assert(json_is_array(result(m)));
    json_decref(m);
    m = call("remote.tracing.stop_trace", "[\"testnode\", \"router1\", \"al\"]", NULL);
    ck_assert_str_eq(json_string_value(json_object_get(result(m), "status")), "stopped");
    json_decref(m);
    expect_error("remote.tracing.get_trace", "[\"testnode\", \"router1\", \"none\"]",
                 MGMT_ERROR_NO_SUCH_OBJECT);
}

END_TEST

/* get_trace_data pages are written straight in the caller's serializer: a MessagePack and a
 * JSON management session read the same records (stored in both serializers), and a page too
 * large for the caller's transport is refused with payload_size_exceeded, not cut. */
START_TEST(test_pages_in_both_serializers_and_size_limit)
{
    json_t *m = call("start_trace", "[\"testnode\", \"router1\", \"t\"]", NULL);
    json_decref(m);
    for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_MSGPACK; ser++) {
        fake_conn *app = fake_conn_new_joined(T.rt, (wamp_ser)ser, "realm1");
        fake_conn_send(app, "[48, 1, {}, \"com.nobody\", [1, \"\\u0000AQID\", {\"k\": 2.5}]]");
        fake_conn_send(app, "[16, 2, {\"acknowledge\": true}, \"com.t\", [\"h\\u00e9\"]]");
        fake_conn_free(app);
    }
    static const char page_kw[] = "{\"node_id\": \"testnode\", \"worker_id\": \"router1\", "
                                  "\"trace_id\": \"t\", \"limit\": 100}";
    json_t *by_json = call("get_trace_data", NULL, page_kw);
    json_t *recs = result(by_json);
    /* HELLO, WELCOME, CALL, ERROR, PUBLISH, PUBLISHED (x2 serializers), GOODBYE... at least. */
    ck_assert_int_ge((int)json_array_size(recs), 12);
    fake_conn *mp = fake_conn_new_joined(T.rt, WAMP_SER_MSGPACK, "mgmt");
    fake_conn_send(mp, "[48, 5, {}, \"crossbarfabriccenter.get_trace_data\", [], %s]", page_kw);
    json_t *by_mp = fake_conn_next(mp);
    ck_assert_int_eq(fake_msg_int(by_mp, 0), WAMP_MSG_RESULT);
    json_t *mp_recs = json_array_get(json_array_get(by_mp, 3), 0);
    /* The MessagePack session's own HELLO/WELCOME and this CALL came after the JSON page. */
    ck_assert_int_ge((int)json_array_size(mp_recs), (int)json_array_size(recs));
    for (size_t i = 0; i < json_array_size(recs); i++) {
        ck_assert(json_equal(json_array_get(recs, i), json_array_get(mp_recs, i)));
    }
    /* The CALL's binary argument is binary in both (JSON convention string after decoding). */
    json_t *call_rec = NULL;
    for (size_t i = 0; i < json_array_size(recs) && !call_rec; i++) {
        json_t *r = json_array_get(recs, i);
        if (strcmp(json_string_value(json_object_get(r, "msg_type")), "Call") == 0) {
            call_rec = r;
        }
    }
    ck_assert_ptr_nonnull(call_rec);
    json_t *bin = json_array_get(json_array_get(json_object_get(call_rec, "msg"), 4), 1);
    ck_assert_uint_eq(json_string_length(bin), 5);
    ck_assert_mem_eq(json_string_value(bin), "\0AQID", 5);
    json_decref(by_json);
    json_decref(by_mp);
    fake_conn_free(mp);
    /* A transport limit of 800 bytes (WELCOME, with its feature list, must fit): the 100-record
     * page does not fit, one record does. */
    for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_MSGPACK; ser++) {
        rt_peer peer;
        memset(&peer, 0, sizeof(peer));
        snprintf(peer.addr, sizeof(peer.addr), "127.0.0.1:50001");
        peer.is_loopback = true;
        peer.max_message_size = 800;
        fake_conn *small = fake_conn_new_peer(T.rt, (wamp_ser)ser, &peer);
        fake_conn_join(small, "mgmt");
        fake_conn_send(small, "[48, 6, {}, \"crossbarfabriccenter.get_trace_data\", [], %s]",
                       page_kw);
        fake_expect_error(small, WAMP_MSG_CALL, 6, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED);
        fake_conn_send(small, "[48, 7, {}, \"crossbarfabriccenter.get_trace_data\", "
                              "[\"testnode\", \"router1\", \"t\", 0, 0, 1]]");
        json_t *one = fake_conn_next(small);
        ck_assert_int_eq(fake_msg_int(one, 0), WAMP_MSG_RESULT);
        ck_assert_int_eq((int)json_array_size(json_array_get(json_array_get(one, 3), 0)), 1);
        json_decref(one);
        fake_conn_free(small);
    }
}

END_TEST

/* get_worker's stats follow what the router holds: sessions, subscriptions, registrations,
 * queued bytes, and return to where they were when the session leaves. */
static json_int_t stat_of(const char *key)
{
    json_t *m = call("get_worker", "[\"testnode\", \"router1\"]", NULL);
    json_t *v = json_object_get(json_object_get(result(m), "stats"), key);
    ck_assert_msg(json_is_integer(v), "stats.%s", key);
    json_int_t n = json_integer_value(v);
    json_decref(m);
    return n;
}

START_TEST(test_worker_stats)
{
    json_int_t sessions = stat_of("sessions"), subs = stat_of("subscriptions");
    json_int_t regs = stat_of("registrations"), rx = stat_of("messages_rx");
    ck_assert_int_ge(sessions, 1); /* this management session */
    ck_assert_int_ge(regs, 9);     /* the management procedures themselves */
    fake_conn *app = fake_conn_new_joined(T.rt, WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(app, "[32, 1, {}, \"com.a\"]");
    fake_conn_send(app, "[32, 2, {}, \"com.b\"]");
    fake_conn_send(app, "[64, 3, {}, \"com.p\"]");
    fake_conn_clear(app);
    ck_assert_int_eq(stat_of("sessions"), sessions + 1);
    ck_assert_int_eq(stat_of("subscriptions"), subs + 2);
    ck_assert_int_eq(stat_of("registrations"), regs + 1);
    ck_assert_int_gt(stat_of("messages_rx"), rx + 4);
    /* A message left unread is counted in the queue. */
    fake_conn_send(app, "[32, 4, {}, \"com.c\"]");
    ck_assert_int_eq(stat_of("queued_messages"), 1);
    ck_assert_int_gt(stat_of("queued_bytes"), 0);
    fake_conn_free(app);
    ck_assert_int_eq(stat_of("sessions"), sessions);
    ck_assert_int_eq(stat_of("subscriptions"), subs);
    ck_assert_int_eq(stat_of("registrations"), regs);
    ck_assert_int_eq(stat_of("queued_bytes"), 0);
    ck_assert_int_eq(stat_of("pending_calls"), 0);
}

END_TEST

/* A local procedure of the management realm that mgmt_api_new() then cannot register. */
static wamp_err taken_proc(void *ctx, rt_session *caller, const json_t *args, const json_t *kwargs,
                           rt_local_reply *reply)
{
    (void)ctx;
    (void)caller;
    (void)args;
    (void)kwargs;
    return rt_local_reply_value(reply, json_string("taken"));
}

/* A registration failing part-way leaves no procedure behind pointing at the freed context
 * (under ASan, calling one of them would be a use after free). */
START_TEST(test_partial_registration_failure)
{
    test_router_init(&T);
    rt_router_free(T.rt);
    T.cfg.mgmt_enabled = true;
    T.cfg.mgmt_realm = "mgmt";
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
    rt_dealer *d = rt_realm_dealer(rt_router_find_realm(T.rt, "mgmt"));
    ck_assert_int_eq(rt_dealer_register_local(d, MGMT_PREFIX "get_trace", taken_proc, NULL),
                     WAMP_OK);
    size_t regs = rt_dealer_registration_count(d);
    mgmt_api *m = (mgmt_api *)1;
    ck_assert_int_eq(mgmt_api_new(T.rt, 0, &m), WAMP_EEXIST);
    ck_assert_ptr_null(m);
    ck_assert_uint_eq(rt_dealer_registration_count(d), regs);
    C = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(C, "mgmt");
    next_req = 1;
    /* list_nodes was registered before get_trace failed, and is gone again. */
    fake_conn_send(C, "[48, 1, {}, \"" MGMT_PREFIX "list_nodes\"]");
    fake_expect_error(C, WAMP_MSG_CALL, 1, WAMP_ERROR_NO_SUCH_PROCEDURE);
    json_t *r = call("get_trace", NULL, NULL);
    ck_assert_str_eq(json_string_value(result(r)), "taken");
    json_decref(r);
    fake_conn_free(C);
    test_router_fini(&T);
}

END_TEST

static Suite *mgmt_api_suite(void)
{
    Suite *s = suite_create("mgmt_api");
    TCase *tc = tcase_create("mgmt");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_nodes_and_workers);
    tcase_add_test(tc, test_worker_stats);
    tcase_add_test(tc, test_trace_lifecycle);
    tcase_add_test(tc, test_argument_and_option_errors);
    tcase_add_test(tc, test_nul_in_argument_strings);
    tcase_add_test(tc, test_long_non_ascii_id_in_an_error);
    tcase_add_test(tc, test_live_topics);
    tcase_add_test(tc, test_mark_trace);
    tcase_add_test(tc, test_crossbar_aliases);
    tcase_add_test(tc, test_pages_in_both_serializers_and_size_limit);
    suite_add_tcase(s, tc);
    TCase *tf = tcase_create("failure");
    tcase_set_timeout(tf, 10);
    tcase_add_test(tf, test_partial_registration_failure);
    suite_add_tcase(s, tf);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(mgmt_api_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
