/* check_trace_action.c: action-level traces (trace_level "action", mgmt/README.md "Action-level
 * traces"): the pure action tracker (anchor, follow-ups, completion, responders, success,
 * duration, the pending cap, stop), the record's rendering in every writer mode, persistence of
 * action records, and the router core driving an action trace through the hub (CALL, PUBLISH,
 * SUBSCRIBE, joins and leaves, filters evaluated on the anchor). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_transport.h"
#include "test_router.h"
#include "tmp_dir.h"
#include "trace_action.h"
#include "trace_hub.h"
#include "trace_render.h"
#include "wamp_codec.h"
#include "wamp_wr.h"

#define PC0 ((uint64_t)5000000000u)
#define TS0 ((uint64_t)1700000000000000000u)
#define MS  ((uint64_t)1000000u)

/* --- The tracker alone ------------------------------------------------------------------------ */

static void make_uuid(unsigned i, uint8_t out[TRACE_UUID_LEN])
{
    /* Distinct, and deliberately similar (only a few bytes differ) to stress the hash. */
    memset(out, 0xab, TRACE_UUID_LEN);
    out[0] = (uint8_t)i;
    out[1] = (uint8_t)(i >> 8);
    out[14] = (uint8_t)(i * 7);
}

static trace_action_msg amsg(const uint8_t *corr, bool anchor, bool last, int type, uint64_t pc,
                             trace_peer *peer, trace_str *uri)
{
    trace_action_msg m = {.corr = corr,
                          .anchor = anchor,
                          .last = last,
                          .msg_type = type,
                          .pc_ns = pc,
                          .ts_ns = pc - PC0 + TS0,
                          .peer = peer,
                          .uri = uri};
    return m;
}

static json_t *render(const trace_record *r)
{
    json_t *j = trace_render_record(r, true);
    ck_assert_ptr_nonnull(j);
    return j;
}

static json_int_t ival(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static const char *sval(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static double rval(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

START_TEST(test_tracker_call_chain)
{
    trace_action *a = trace_action_new(10);
    trace_peer *caller = trace_peer_new(11, "realm1", "alice", "user");
    trace_peer *callee = trace_peer_new(22, "realm1", "bob", "backend");
    trace_str *uri = trace_str_new("com.math.add");
    uint8_t u[TRACE_UUID_LEN];
    make_uuid(1, u);
    trace_record rec;
    memset(&rec, 0x5a, sizeof(rec));
    trace_action_msg m = amsg(u, true, false, WAMP_MSG_CALL, PC0, caller, uri);
    ck_assert(!trace_action_is_pending(a, u));
    ck_assert(!trace_action_on_message(a, &m, &rec));
    ck_assert(trace_action_is_pending(a, u));
    ck_assert_uint_eq(trace_action_pending(a), 1);
    m = amsg(u, false, false, WAMP_MSG_INVOCATION, PC0 + 1 * MS, callee, uri);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(u, false, false, WAMP_MSG_YIELD, PC0 + 3 * MS, callee, uri);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(u, false, true, WAMP_MSG_RESULT, PC0 + 4 * MS, caller, uri);
    ck_assert(trace_action_on_message(a, &m, &rec));
    ck_assert(!trace_action_is_pending(a, u));
    ck_assert_uint_eq(trace_action_pending(a), 0);
    ck_assert(trace_record_is_action(&rec));
    ck_assert_uint_eq(rec.pc_ns, PC0); /* the anchor's time */
    ck_assert_uint_eq(rec.ts_ns, TS0);
    json_t *j = render(&rec);
    ck_assert_uint_eq(json_object_size(j), 13);
    ck_assert(json_is_null(json_object_get(j, "error")));       /* a success has none */
    ck_assert(json_is_null(json_object_get(j, "callee_node"))); /* stayed on this node */
    ck_assert_str_eq(sval(j, "action"), "call");
    ck_assert_str_eq(sval(j, "uri"), "com.math.add");
    ck_assert_str_eq(sval(j, "realm"), "realm1");
    ck_assert_str_eq(sval(j, "correlation"), "0100abab-abab-abab-abab-abababab07ab");
    json_t *o = json_object_get(j, "originator");
    ck_assert_int_eq(ival(o, "session_id"), 11);
    ck_assert_str_eq(sval(o, "authid"), "alice");
    ck_assert_str_eq(sval(o, "authrole"), "user");
    json_t *rs = json_object_get(j, "responders");
    ck_assert_uint_eq(json_array_size(rs), 1); /* INVOCATION and YIELD: one callee */
    ck_assert_int_eq(ival(json_array_get(rs, 0), "session_id"), 22);
    ck_assert_str_eq(sval(json_array_get(rs, 0), "authid"), "bob");
    ck_assert_str_eq(sval(json_array_get(rs, 0), "authrole"), "backend");
    ck_assert(json_is_true(json_object_get(j, "success")));
    ck_assert(json_is_real(json_object_get(j, "duration")));
    ck_assert_double_eq_tol(rval(j, "duration"), 0.004, 1e-9);
    ck_assert_double_eq_tol(rval(j, "ts"), 1700000000.0, 1e-3);
    json_decref(j);
    trace_record_fini(&rec);
    /* A call answered from another node: the first answer naming it names the callee's node. */
    m = amsg(u, true, false, WAMP_MSG_CALL, PC0, caller, uri);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(u, false, false, WAMP_MSG_RESULT, PC0 + 1 * MS, caller, uri);
    m.callee_node = "node_b";
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(u, false, true, WAMP_MSG_RESULT, PC0 + 2 * MS, caller, uri);
    m.callee_node = "node_c";
    ck_assert(trace_action_on_message(a, &m, &rec));
    j = render(&rec);
    ck_assert_str_eq(sval(j, "callee_node"), "node_b");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "responders")), 0);
    json_decref(j);
    trace_record_fini(&rec);
    /* A message of no pending action is ignored. */
    m = amsg(u, false, true, WAMP_MSG_RESULT, PC0 + 5 * MS, caller, uri);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(NULL, true, true, WAMP_MSG_CALL, PC0, caller, uri);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    trace_str_unref(&uri);
    trace_peer_unref(&caller);
    trace_peer_unref(&callee);
    trace_action_free(a);
}

END_TEST

START_TEST(test_tracker_error_and_abort_fail)
{
    trace_action *a = trace_action_new(10);
    trace_peer *caller = trace_peer_new(11, "realm1", NULL, "anonymous");
    trace_peer *hello = trace_peer_new(33, "realm9", NULL, NULL);
    uint8_t u1[TRACE_UUID_LEN], u2[TRACE_UUID_LEN];
    make_uuid(1, u1);
    make_uuid(2, u2);
    trace_record rec;
    /* CALL to a procedure nobody registered: ERROR back to the caller, no responder. */
    trace_action_msg m = amsg(u1, true, false, WAMP_MSG_CALL, PC0, caller, NULL);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    /* HELLO refused: ABORT. */
    m = amsg(u2, true, false, WAMP_MSG_HELLO, PC0, hello, NULL);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(u1, false, true, WAMP_MSG_ERROR, PC0 + 2 * MS, caller, NULL);
    m.error = "wamp.error.no_such_procedure";
    ck_assert(trace_action_on_message(a, &m, &rec));
    json_t *j = render(&rec);
    ck_assert(json_is_false(json_object_get(j, "success")));
    ck_assert_str_eq(sval(j, "error"), "wamp.error.no_such_procedure");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "responders")), 0);
    ck_assert(json_is_null(json_object_get(j, "uri")));
    ck_assert_str_eq(sval(j, "action"), "call");
    json_decref(j);
    trace_record_fini(&rec);
    m = amsg(u2, false, true, WAMP_MSG_ABORT, PC0 + 1 * MS, hello, NULL);
    char reason[] = "wamp.error.no_such_realm";
    m.error = reason;
    ck_assert(trace_action_on_message(a, &m, &rec));
    reason[0] = 'X'; /* the tracker kept its own copy */
    j = render(&rec);
    ck_assert(json_is_false(json_object_get(j, "success")));
    ck_assert_str_eq(sval(j, "error"), "wamp.error.no_such_realm");
    ck_assert_str_eq(sval(j, "action"), "join");
    ck_assert_str_eq(sval(j, "realm"), "realm9");
    ck_assert(json_is_null(json_object_get(json_object_get(j, "originator"), "authid")));
    json_decref(j);
    trace_record_fini(&rec);
    trace_peer_unref(&caller);
    trace_peer_unref(&hello);
    trace_action_free(a);
}

END_TEST

/* A callee's ERROR and then the router's ERROR to the caller: the last URI is the action's. */
START_TEST(test_tracker_error_uri_of_the_last_error)
{
    trace_action *a = trace_action_new(10);
    trace_peer *caller = trace_peer_new(11, "realm1", NULL, NULL);
    trace_peer *callee = trace_peer_new(22, "realm1", NULL, NULL);
    uint8_t u[TRACE_UUID_LEN];
    make_uuid(3, u);
    trace_record rec;
    trace_action_msg m = amsg(u, true, false, WAMP_MSG_CALL, PC0, caller, NULL);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(u, false, false, WAMP_MSG_ERROR, PC0 + MS, callee, NULL);
    m.error = "com.example.first";
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(u, false, true, WAMP_MSG_ERROR, PC0 + 2 * MS, caller, NULL);
    m.error = "com.example.second";
    ck_assert(trace_action_on_message(a, &m, &rec));
    json_t *j = render(&rec);
    ck_assert_str_eq(sval(j, "error"), "com.example.second");
    json_decref(j);
    trace_record_fini(&rec);
    trace_peer_unref(&caller);
    trace_peer_unref(&callee);
    trace_action_free(a);
}

END_TEST

/* An action part of four elements (written before the error URI was kept, as persisted traces
 * hold it) renders with error null, one of five (before callee_node) with callee_node null; one
 * of another length renders as no action part. */
START_TEST(test_render_action_part_versions)
{
    static const char *const parts[] = {
            "[\"call\", [[9, null, null]], false, 0.5]",
            "[\"call\", [[9, null, null]], false, 0.5, \"a.b\"]",
            "[\"call\", [[9, null, null]], false]",
            "[\"call\", [[9, null, null]], false, 0.5, \"a.b\", \"node_b\"]"};
    for (int i = 0; i < 4; i++) {
        json_t *v = json_loads(parts[i], 0, NULL);
        ck_assert_ptr_nonnull(v);
        wamp_wr w;
        trace_record r;
        memset(&r, 0, sizeof(r));
        wamp_wr_init(&w, WAMP_SER_MSGPACK, 0, 0);
        wamp_wr_json(&w, v);
        ck_assert_int_eq(wamp_wr_finish_buf(&w, &r.wire), WAMP_OK);
        wamp_wr_fini(&w);
        json_decref(v);
        r.wire_ser = WAMP_SER_MSGPACK;
        r.msg_type = TRACE_MSG_ACTION;
        r.peer = trace_peer_new(11, "realm1", NULL, NULL);
        json_t *j = render(&r);
        ck_assert_uint_eq(json_object_size(j), 13);
        if (i != 2) {
            ck_assert_str_eq(sval(j, "action"), "call");
            ck_assert(json_is_false(json_object_get(j, "success")));
            ck_assert_uint_eq(json_array_size(json_object_get(j, "responders")), 1);
        } else {
            ck_assert(json_is_null(json_object_get(j, "action")));
            ck_assert(json_is_null(json_object_get(j, "success")));
        }
        if (i == 1 || i == 3) {
            ck_assert_str_eq(sval(j, "error"), "a.b");
        } else {
            ck_assert(json_is_null(json_object_get(j, "error")));
        }
        if (i == 3) {
            ck_assert_str_eq(sval(j, "callee_node"), "node_b");
        } else {
            ck_assert(json_is_null(json_object_get(j, "callee_node")));
        }
        json_decref(j);
        trace_record_fini(&r);
    }
}

END_TEST

/* A PUBLISH to many sessions, each EVENT twice (two subscriptions) and some EVENTs dropped:
 * every reached session appears once, in order, past the linear-scan size; undelivered ones
 * and the publisher do not. The originator's peer is refreshed from its own later messages. */
START_TEST(test_tracker_responders_deduplicated)
{
    enum {
        N = 300
    };

    trace_action *a = trace_action_new(10);
    trace_peer *pub = trace_peer_new(7, "realm1", NULL, NULL);
    trace_peer *pub2 = trace_peer_new(7, "realm1", "publisher", "role2");
    trace_peer *subs[N];
    for (unsigned i = 0; i < N; i++) {
        subs[i] = trace_peer_new(1000 + i, "realm1", "s", "r");
    }
    uint8_t u[TRACE_UUID_LEN];
    make_uuid(3, u);
    trace_record rec;
    trace_action_msg m = amsg(u, true, false, WAMP_MSG_PUBLISH, PC0, pub, NULL);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    for (unsigned round = 0; round < 2; round++) {
        for (unsigned i = 0; i < N; i++) {
            m = amsg(u, false, false, WAMP_MSG_EVENT, PC0 + i, subs[i], NULL);
            m.dropped = i % 10 == 9 || (round == 1 && i % 10 == 8);
            ck_assert(!trace_action_on_message(a, &m, &rec));
        }
    }
    m = amsg(u, false, true, WAMP_MSG_PUBLISHED, PC0 + 10 * MS, pub2, NULL);
    ck_assert(trace_action_on_message(a, &m, &rec));
    json_t *j = render(&rec);
    json_t *rs = json_object_get(j, "responders");
    /* Dropped in round 0 (i % 10 == 9) never delivered; i % 10 == 8 was delivered in round 0. */
    ck_assert_uint_eq(json_array_size(rs), N - N / 10);
    size_t k = 0;
    for (unsigned i = 0; i < N; i++) {
        if (i % 10 == 9) {
            continue;
        }
        ck_assert_int_eq(ival(json_array_get(rs, k), "session_id"), 1000 + i);
        k++;
    }
    json_t *o = json_object_get(j, "originator");
    ck_assert_int_eq(ival(o, "session_id"), 7);
    ck_assert_str_eq(sval(o, "authid"), "publisher");
    ck_assert(json_is_true(json_object_get(j, "success")));
    json_decref(j);
    trace_record_fini(&rec);
    for (unsigned i = 0; i < N; i++) {
        trace_peer_unref(&subs[i]);
    }
    trace_peer_unref(&pub);
    trace_peer_unref(&pub2);
    trace_action_free(a);
}

END_TEST

/* An anchor that is also the last message (a PUBLISH nobody receives or acknowledges). */
START_TEST(test_tracker_anchor_is_last)
{
    trace_action *a = trace_action_new(1);
    trace_peer *pub = trace_peer_new(7, "realm1", NULL, NULL);
    trace_str *uri = trace_str_new("com.nobody");
    uint8_t u[TRACE_UUID_LEN], v[TRACE_UUID_LEN];
    make_uuid(4, u);
    make_uuid(5, v);
    trace_record rec;
    /* One other action pending at the cap: the immediate completion must not abandon it. */
    trace_action_msg m = amsg(v, true, false, WAMP_MSG_CALL, PC0, pub, NULL);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    m = amsg(u, true, true, WAMP_MSG_PUBLISH, PC0, pub, uri);
    ck_assert(trace_action_on_message(a, &m, &rec));
    ck_assert_uint_eq(trace_action_abandoned(a), 0);
    ck_assert(trace_action_is_pending(a, v));
    ck_assert(!trace_action_is_pending(a, u));
    json_t *j = render(&rec);
    ck_assert_str_eq(sval(j, "action"), "publish");
    ck_assert_str_eq(sval(j, "uri"), "com.nobody");
    ck_assert_double_eq(rval(j, "duration"), 0.0);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "responders")), 0);
    json_decref(j);
    trace_record_fini(&rec);
    trace_str_unref(&uri);
    trace_peer_unref(&pub);
    trace_action_free(a);
}

END_TEST

/* max_pending bounds memory: the oldest pending actions are abandoned (counted); the table
 * stays consistent through growth and deletions in any order; clear discards everything. */
START_TEST(test_tracker_cap_and_clear)
{
    enum {
        CAP = 700,
        N = 1000
    };

    trace_action *a = trace_action_new(CAP);
    trace_peer *p = trace_peer_new(1, "realm1", NULL, NULL);
    trace_peer *q = trace_peer_new(2, "realm1", NULL, NULL);
    uint8_t u[TRACE_UUID_LEN];
    trace_record rec;
    for (unsigned i = 0; i < N; i++) {
        make_uuid(i, u);
        trace_action_msg m = amsg(u, true, false, WAMP_MSG_CALL, PC0 + i, p, NULL);
        ck_assert(!trace_action_on_message(a, &m, &rec));
    }
    ck_assert_uint_eq(trace_action_pending(a), CAP);
    ck_assert_uint_eq(trace_action_abandoned(a), N - CAP);
    for (unsigned i = 0; i < N; i++) {
        make_uuid(i, u);
        ck_assert_msg(trace_action_is_pending(a, u) == (i >= N - CAP), "action %u", i);
    }
    /* The first ones are gone: their completion records nothing. */
    make_uuid(0, u);
    trace_action_msg m = amsg(u, false, true, WAMP_MSG_RESULT, PC0 + N, p, NULL);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    /* Complete every third pending one (deletions scattered over the table). */
    size_t done = 0;
    for (unsigned i = N - CAP; i < N; i += 3) {
        make_uuid(i, u);
        m = amsg(u, false, false, WAMP_MSG_INVOCATION, PC0 + N, q, NULL);
        ck_assert(!trace_action_on_message(a, &m, &rec));
        m = amsg(u, false, true, WAMP_MSG_RESULT, PC0 + N + i, p, NULL);
        ck_assert(trace_action_on_message(a, &m, &rec));
        ck_assert_uint_eq(rec.pc_ns, PC0 + i);
        trace_record_fini(&rec);
        done++;
    }
    ck_assert_uint_eq(trace_action_pending(a), CAP - done);
    for (unsigned i = N - CAP; i < N; i++) {
        make_uuid(i, u);
        ck_assert_msg(trace_action_is_pending(a, u) == ((i - (N - CAP)) % 3 != 0), "action %u", i);
    }
    trace_action_clear(a);
    ck_assert_uint_eq(trace_action_pending(a), 0);
    make_uuid(N - 1, u);
    ck_assert(!trace_action_is_pending(a, u));
    m = amsg(u, false, true, WAMP_MSG_RESULT, PC0 + N, p, NULL);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    /* Usable again after clear. */
    m = amsg(u, true, false, WAMP_MSG_SUBSCRIBE, PC0, p, NULL);
    ck_assert(!trace_action_on_message(a, &m, &rec));
    ck_assert(trace_action_is_pending(a, u));
    trace_peer_unref(&p);
    trace_peer_unref(&q);
    trace_action_free(a);
}

END_TEST

START_TEST(test_action_names)
{
    ck_assert_str_eq(trace_action_name(WAMP_MSG_HELLO), "join");
    ck_assert_str_eq(trace_action_name(WAMP_MSG_GOODBYE), "leave");
    ck_assert_str_eq(trace_action_name(WAMP_MSG_CALL), "call");
    ck_assert_str_eq(trace_action_name(WAMP_MSG_PUBLISH), "publish");
    ck_assert_str_eq(trace_action_name(WAMP_MSG_SUBSCRIBE), "subscribe");
    ck_assert_str_eq(trace_action_name(WAMP_MSG_UNSUBSCRIBE), "unsubscribe");
    ck_assert_str_eq(trace_action_name(WAMP_MSG_REGISTER), "register");
    ck_assert_str_eq(trace_action_name(WAMP_MSG_UNREGISTER), "unregister");
    ck_assert_ptr_null(trace_action_name(WAMP_MSG_EVENT));
}

END_TEST

/* --- A trace through the hub (no router): rendering in every mode, persistence ---------------- */

/* Offers one message to the hub as the router would. */
static void offer(trace_hub *hub, const uint8_t *corr, bool anchor, bool last, trace_dir dir,
                  int type, uint64_t pc, uint64_t sid, const char *authid, const char *uri)
{
    trace_ctx c = {.direction = dir,
                   .msg_type = type,
                   .session_id = sid,
                   .realm = "realm1",
                   .authid = authid,
                   .authrole = "anonymous",
                   .uri = uri,
                   .correlation = corr,
                   .correlation_is_anchor = anchor};
    if (trace_hub_match(hub, &c) == 0) {
        return;
    }
    trace_input in;
    memset(&in, 0, sizeof(in));
    in.pc_ns = pc;
    in.ts_ns = pc - PC0 + TS0;
    in.correlation = corr;
    in.correlation_is_anchor = anchor;
    in.correlation_is_last = last;
    in.ser = WAMP_SER_JSON;
    /* An ERROR carries its URI (the hub reads it from the message). */
    json_t *msg = type == WAMP_MSG_ERROR ? json_pack("[iiI{}s]", WAMP_MSG_ERROR, WAMP_MSG_CALL,
                                                     (json_int_t)1, "wamp.error.no_such_procedure")
                                         : NULL;
    in.msg = msg;
    (void)trace_hub_record_matched(hub, &c, &in);
    json_decref(msg);
}

/* Two calls (one answered, one refused) and a publish to two subscribers. */
static void offer_traffic(trace_hub *hub)
{
    uint8_t u[3][TRACE_UUID_LEN];
    for (unsigned i = 0; i < 3; i++) {
        make_uuid(100 + i, u[i]);
    }
    offer(hub, u[0], true, false, TRACE_RX, WAMP_MSG_CALL, PC0, 1, "alice", "com.add");
    offer(hub, u[0], false, false, TRACE_TX, WAMP_MSG_INVOCATION, PC0 + MS, 2, "bob", "com.add");
    offer(hub, u[1], true, false, TRACE_RX, WAMP_MSG_CALL, PC0 + MS, 1, "alice", "com.none");
    offer(hub, u[1], false, true, TRACE_TX, WAMP_MSG_ERROR, PC0 + MS, 1, "alice", "com.none");
    offer(hub, u[0], false, false, TRACE_RX, WAMP_MSG_YIELD, PC0 + 2 * MS, 2, "bob", "com.add");
    offer(hub, u[0], false, true, TRACE_TX, WAMP_MSG_RESULT, PC0 + 2 * MS, 1, "alice", "com.add");
    offer(hub, u[2], true, false, TRACE_RX, WAMP_MSG_PUBLISH, PC0 + 3 * MS, 1, "alice", "com.t");
    offer(hub, u[2], false, false, TRACE_TX, WAMP_MSG_EVENT, PC0 + 3 * MS, 2, "bob", "com.t");
    offer(hub, u[2], false, true, TRACE_TX, WAMP_MSG_EVENT, PC0 + 5 * MS, 3, "carol", "com.t");
}

static trace *start_on(trace_hub *hub, const char *id, const char *options)
{
    json_t *o = options ? json_loads(options, 0, NULL) : NULL;
    ck_assert(options == NULL || o != NULL);
    trace *t = NULL;
    char why[160] = "";
    wamp_err err = trace_hub_start(hub, id, o, PC0, TS0, &t, why, sizeof(why));
    ck_assert_msg(err == WAMP_OK, "start_trace: %s", why);
    json_decref(o);
    return t;
}

/* The page written by wamp_wr in ser, decoded. */
static json_t *page_in(const trace *t, int ser)
{
    wamp_wr w;
    wamp_buf *b = NULL;
    json_t *out = NULL;
    wamp_wr_init(&w, ser, 0, 0);
    trace_render_records_to(t, 0, TRACE_SEQ_NONE, 100, &w);
    ck_assert_int_eq(wamp_wr_finish_buf(&w, &b), WAMP_OK);
    wamp_wr_fini(&w);
    ck_assert_int_eq(
            wamp_codec_decode((wamp_ser)ser, wamp_buf_cdata(b), wamp_buf_len(b), &out, NULL, 0),
            WAMP_OK);
    wamp_buf_unref(&b);
    return out;
}

static void check_traffic_records(const json_t *r)
{
    ck_assert_uint_eq(json_array_size(r), 3);
    /* In order of completion; each with its own anchor's times. */
    const json_t *refused = json_array_get(r, 0), *add = json_array_get(r, 1),
                 *pub = json_array_get(r, 2);
    ck_assert_int_eq(ival(refused, "seq"), 0);
    ck_assert_str_eq(sval(refused, "uri"), "com.none");
    ck_assert(json_is_false(json_object_get(refused, "success")));
    ck_assert_str_eq(sval(refused, "error"), "wamp.error.no_such_procedure");
    ck_assert_int_eq(ival(add, "seq"), 1);
    ck_assert(json_is_null(json_object_get(add, "error")));
    ck_assert_str_eq(sval(add, "action"), "call");
    ck_assert(json_is_true(json_object_get(add, "success")));
    ck_assert_double_eq_tol(rval(add, "duration"), 0.002, 1e-9);
    ck_assert_double_eq_tol(rval(add, "pc"), 5.0, 1e-9);
    ck_assert_uint_eq(json_array_size(json_object_get(add, "responders")), 1);
    ck_assert_str_eq(sval(json_array_get(json_object_get(add, "responders"), 0), "authid"), "bob");
    ck_assert_str_eq(sval(pub, "action"), "publish");
    ck_assert_uint_eq(json_array_size(json_object_get(pub, "responders")), 2);
    ck_assert_str_eq(sval(json_object_get(pub, "originator"), "authid"), "alice");
    ck_assert_double_eq_tol(rval(pub, "duration"), 0.002, 1e-9);
}

START_TEST(test_hub_action_trace_renders_alike_in_every_mode)
{
    trace_hub *hub = trace_hub_new(4, "mgmt");
    trace *t = start_on(hub, "act", "{\"trace_level\": \"action\"}");
    trace *m = start_on(hub, "msg", NULL);
    trace *calls = start_on(hub, "calls",
                            "{\"trace_level\": \"action\", \"msg_types\": [\"Call\"], "
                            "\"uris\": [{\"uri\": \"com.a\", \"match\": \"prefix\"}]}");
    offer_traffic(hub);
    /* The message-level trace beside it keeps every message. */
    ck_assert_uint_eq(trace_records(m), 9);
    json_t *tree = trace_render_records(t, 0, TRACE_SEQ_NONE, 100);
    check_traffic_records(tree);
    json_t *js = page_in(t, WAMP_SER_JSON);
    json_t *mp = page_in(t, WAMP_SER_MSGPACK);
    ck_assert_msg(json_equal(tree, js), "JSON page differs from the tree");
    ck_assert_msg(json_equal(tree, mp), "MessagePack page differs from the tree");
    json_decref(js);
    json_decref(mp);
    /* Filters on the anchor only: Call to a com.a... procedure; its follow-ups (other types,
     * other sessions) are kept without the filter. */
    json_t *c = trace_render_records(calls, 0, TRACE_SEQ_NONE, 100);
    ck_assert_uint_eq(json_array_size(c), 1);
    ck_assert_str_eq(sval(json_array_get(c, 0), "uri"), "com.add");
    ck_assert_uint_eq(json_array_size(json_object_get(json_array_get(c, 0), "responders")), 1);
    json_decref(c);
    /* Stop mid-action: the pending action is discarded, nothing more recorded. */
    uint8_t u[TRACE_UUID_LEN];
    make_uuid(200, u);
    offer(hub, u, true, false, TRACE_RX, WAMP_MSG_CALL, PC0 + 9 * MS, 1, "alice", "com.add");
    ck_assert_uint_eq(trace_action_pending(trace_get_action(t)), 1);
    ck_assert_int_eq(trace_hub_stop(hub, "act", PC0 + 10 * MS, TS0, NULL), WAMP_OK);
    ck_assert_uint_eq(trace_action_pending(trace_get_action(t)), 0);
    offer(hub, u, false, true, TRACE_TX, WAMP_MSG_RESULT, PC0 + 11 * MS, 1, "alice", "com.add");
    ck_assert_uint_eq(trace_records(t), 3);
    json_decref(tree);
    trace_hub_free(hub);
}

END_TEST

/* Actions beyond the pending cap (= the trace's limit) are abandoned and counted in dropped. */
START_TEST(test_hub_pending_cap_counts_dropped)
{
    trace_hub *hub = trace_hub_new(2, NULL);
    trace *t = start_on(hub, "small", "{\"trace_level\": \"action\", \"limit\": 2}");
    uint8_t u[5][TRACE_UUID_LEN];
    for (unsigned i = 0; i < 5; i++) {
        make_uuid(300 + i, u[i]);
        offer(hub, u[i], true, false, TRACE_RX, WAMP_MSG_CALL, PC0 + i, 1, NULL, "com.p");
    }
    ck_assert_uint_eq(trace_dropped(t), 3);
    for (unsigned i = 0; i < 5; i++) {
        offer(hub, u[i], false, true, TRACE_TX, WAMP_MSG_RESULT, PC0 + 10, 1, NULL, "com.p");
    }
    ck_assert_uint_eq(trace_records(t), 2);
    ck_assert_uint_eq(trace_dropped(t), 3);
    json_t *meta = trace_render_meta(t, "n", "w", PC0 + 20);
    ck_assert_int_eq(ival(meta, "dropped"), 3);
    ck_assert_str_eq(sval(json_object_get(meta, "options"), "trace_level"), "action");
    json_decref(meta);
    trace_hub_free(hub);
}

END_TEST

static char tmpdir[256];

/* A persisted action trace reloads after a restart and renders the same records. */
START_TEST(test_persisted_action_trace_reloads)
{
    tmp_dir_make(tmpdir, sizeof(tmpdir), "check_trace_action");
    char data_dir[300];
    snprintf(data_dir, sizeof(data_dir), "%s/data", tmpdir);
    trace_persist_config cfg = {.data_dir = data_dir, .fsync = TRACE_FSYNC_INTERVAL};
    trace_hub *hub = trace_hub_new(4, "mgmt");
    ck_assert_int_eq(trace_hub_set_persist(hub, &cfg), WAMP_OK);
    trace *t = start_on(hub, "kept", "{\"trace_level\": \"action\", \"persist\": true}");
    offer_traffic(hub);
    json_t *before = trace_render_records(t, 0, TRACE_SEQ_NONE, 100);
    check_traffic_records(before);
    ck_assert_int_eq(trace_hub_stop(hub, "kept", PC0 + 100 * MS, TS0 + 100 * MS, NULL), WAMP_OK);
    trace_hub_free(hub);

    hub = trace_hub_new(4, "mgmt");
    ck_assert_int_eq(trace_hub_set_persist(hub, &cfg), WAMP_OK);
    ck_assert_uint_eq(trace_hub_load(hub), 1);
    t = trace_hub_find(hub, "kept");
    ck_assert_ptr_nonnull(t);
    ck_assert(!trace_is_running(t));
    json_t *after = trace_render_records(t, 0, TRACE_SEQ_NONE, 100);
    ck_assert_msg(json_equal(before, after), "reloaded records differ");
    json_t *mp = page_in(t, WAMP_SER_MSGPACK);
    ck_assert(json_equal(before, mp));
    json_decref(mp);
    json_decref(before);
    json_decref(after);
    trace_hub_free(hub);
    tmp_dir_remove(tmpdir);
}

END_TEST

/* --- The router core ----------------------------------------------------------------------------
 */

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

static trace *start(const char *id, const char *options)
{
    return test_router_start_trace(&T, id, options);
}

static json_t *records(trace *t)
{
    return test_router_records(t);
}

static uint64_t sid(const fake_conn *c)
{
    return rt_session_id(c->s);
}

static uint64_t orig_sid(const json_t *rec)
{
    return (uint64_t)ival(json_object_get(rec, "originator"), "session_id");
}

static uint64_t resp_sid(const json_t *rec, size_t i)
{
    return (uint64_t)ival(json_array_get(json_object_get(rec, "responders"), i), "session_id");
}

static size_t n_resp(const json_t *rec)
{
    return json_array_size(json_object_get(rec, "responders"));
}

static bool success(const json_t *rec)
{
    const json_t *v = json_object_get(rec, "success");
    ck_assert(json_is_boolean(v));
    return json_is_true(v);
}

START_TEST(test_router_call_chain_one_record)
{
    fake_conn *callee = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.math.add\"]");
    fake_conn_clear(callee);
    trace *t = start("act", "{\"trace_level\": \"action\"}");
    trace *m = start("msg", NULL);
    fake_conn_send(caller, "[48, 7, {}, \"com.math.add\", [2, 3]]");
    json_t *inv = fake_conn_next(callee);
    ck_assert_ptr_nonnull(inv);
    ck_assert_uint_eq(trace_records(t), 0); /* pending until the RESULT */
    fake_clock_advance_ms(&T.clock, 250);
    fake_conn_send(callee, "[70, %lld, {}, [5]]", (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    fake_conn_clear(caller);

    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 1);
    json_t *rec = json_array_get(r, 0);
    ck_assert_str_eq(sval(rec, "action"), "call");
    ck_assert_str_eq(sval(rec, "uri"), "com.math.add");
    ck_assert_str_eq(sval(rec, "realm"), "realm1");
    ck_assert_uint_eq(orig_sid(rec), sid(caller));
    ck_assert_uint_eq(n_resp(rec), 1);
    ck_assert_uint_eq(resp_sid(rec, 0), sid(callee));
    ck_assert(success(rec));
    ck_assert(json_is_null(json_object_get(rec, "error")));
    ck_assert_double_eq_tol(rval(rec, "duration"), 0.25, 1e-6);
    /* Same correlation and anchor time as the message-level trace's CALL record. */
    json_t *mr = records(m);
    ck_assert_uint_eq(json_array_size(mr), 4);
    ck_assert_str_eq(sval(rec, "correlation"), sval(json_array_get(mr, 0), "correlation"));
    ck_assert_double_eq_tol(rval(rec, "pc"), rval(json_array_get(mr, 0), "pc"), 1e-9);
    ck_assert_double_eq_tol(rval(json_array_get(mr, 3), "pc") - rval(rec, "pc"), 0.25, 1e-6);
    json_decref(mr);
    json_decref(r);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_router_call_no_such_procedure)
{
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    trace *t = start("act", "{\"trace_level\": \"action\"}");
    fake_conn_send(caller, "[48, 7, {}, \"com.nobody\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 7, WAMP_ERROR_NO_SUCH_PROCEDURE);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 1);
    json_t *rec = json_array_get(r, 0);
    ck_assert_str_eq(sval(rec, "action"), "call");
    ck_assert_str_eq(sval(rec, "uri"), "com.nobody");
    ck_assert(!success(rec));
    ck_assert_str_eq(sval(rec, "error"), WAMP_ERROR_NO_SUCH_PROCEDURE);
    ck_assert_uint_eq(n_resp(rec), 0);
    ck_assert_uint_eq(orig_sid(rec), sid(caller));
    ck_assert_double_eq(rval(rec, "duration"), 0.0);
    json_decref(r);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_router_publish_responders)
{
    fake_conn *s1 = joined(WAMP_SER_JSON, "realm1");
    fake_conn *s2 = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(s1, "[32, 1, {}, \"com.news\"]");
    fake_conn_send(s2, "[32, 1, {}, \"com.news\"]");
    fake_conn_send(pub, "[32, 1, {}, \"com.news\"]"); /* excluded from its own publication */
    fake_conn_clear(s1);
    fake_conn_clear(s2);
    fake_conn_clear(pub);
    trace *t = start("act", "{\"trace_level\": \"action\"}");
    /* With acknowledge, to two subscribers. */
    fake_conn_send(pub, "[16, 3, {\"acknowledge\": true}, \"com.news\", [\"x\"]]");
    /* Without acknowledge, to nobody. */
    fake_conn_send(pub, "[16, 4, {}, \"com.silence\"]");
    /* With acknowledge, to nobody: PUBLISHED completes it. */
    fake_conn_send(pub, "[16, 5, {\"acknowledge\": true}, \"com.silence\"]");
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 3);
    json_t *a = json_array_get(r, 0), *b = json_array_get(r, 1), *c = json_array_get(r, 2);
    ck_assert_str_eq(sval(a, "action"), "publish");
    ck_assert_str_eq(sval(a, "uri"), "com.news");
    ck_assert_uint_eq(orig_sid(a), sid(pub));
    ck_assert_uint_eq(n_resp(a), 2);
    ck_assert_uint_eq(resp_sid(a, 0), sid(s1));
    ck_assert_uint_eq(resp_sid(a, 1), sid(s2));
    ck_assert(success(a));
    ck_assert_str_eq(sval(b, "uri"), "com.silence");
    ck_assert_uint_eq(n_resp(b), 0);
    ck_assert(success(b));
    ck_assert_uint_eq(n_resp(c), 0);
    ck_assert(success(c));
    json_decref(r);
    /* An EVENT of another publisher's action does not reopen anything. */
    ck_assert_uint_eq(trace_action_pending(trace_get_action(t)), 0);
    fake_conn_free(s1);
    fake_conn_free(s2);
    fake_conn_free(pub);
}

END_TEST

START_TEST(test_router_subscribe_register_and_their_undo)
{
    fake_conn *c = joined(WAMP_SER_JSON, "realm1");
    trace *t = start("act", "{\"trace_level\": \"action\"}");
    fake_conn_send(c, "[32, 1, {}, \"com.topic\"]");
    json_t *subd = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(subd, 0), WAMP_MSG_SUBSCRIBED);
    fake_conn_send(c, "[34, 2, %lld]", (long long)fake_msg_int(subd, 2));
    json_decref(subd);
    fake_conn_clear(c);
    fake_conn_send(c, "[64, 3, {}, \"com.proc\"]");
    json_t *regd = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(regd, 0), WAMP_MSG_REGISTERED);
    fake_conn_send(c, "[66, 4, %lld]", (long long)fake_msg_int(regd, 2));
    json_decref(regd);
    /* Refused: subscribing with an invalid URI. */
    fake_conn_send(c, "[32, 5, {}, \"com..bad uri\"]");
    fake_conn_clear(c);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 5);
    static const char *const names[] = {"subscribe", "unsubscribe", "register", "unregister",
                                        "subscribe"};
    static const char *const uris[] = {"com.topic", "com.topic", "com.proc", "com.proc",
                                       "com..bad uri"};
    for (size_t i = 0; i < 5; i++) {
        json_t *rec = json_array_get(r, i);
        ck_assert_str_eq(sval(rec, "action"), names[i]);
        ck_assert_str_eq(sval(rec, "uri"), uris[i]);
        ck_assert_uint_eq(orig_sid(rec), sid(c));
        ck_assert_uint_eq(n_resp(rec), 0);
        ck_assert(success(rec) == (i < 4));
        ck_assert_int_eq(ival(rec, "seq"), (json_int_t)i);
    }
    json_decref(r);
    fake_conn_free(c);
}

END_TEST

/* A callee answers with an ERROR of its own: the action's error is its URI. */
START_TEST(test_router_callee_error_uri)
{
    fake_conn *callee = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.math.div\"]");
    fake_conn_clear(callee);
    trace *t = start("act", "{\"trace_level\": \"action\"}");
    fake_conn_send(caller, "[48, 7, {}, \"com.math.div\", [1, 0]]");
    json_t *inv = fake_conn_next(callee);
    ck_assert_ptr_nonnull(inv);
    fake_conn_send(callee, "[8, 68, %lld, {}, \"com.math.division_by_zero\"]",
                   (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    fake_conn_clear(caller);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 1);
    json_t *rec = json_array_get(r, 0);
    ck_assert(!success(rec));
    ck_assert_str_eq(sval(rec, "error"), "com.math.division_by_zero");
    ck_assert_uint_eq(n_resp(rec), 1);
    json_decref(r);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* Join (HELLO ... WELCOME) and leave (GOODBYE ... GOODBYE) are actions too; the join's
 * originator carries what the WELCOME made known (authrole). */
START_TEST(test_router_join_and_leave)
{
    trace *t = start("act", "{\"trace_level\": \"action\"}");
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    uint64_t id = fake_conn_join(c, "realm1");
    ck_assert_uint_ne(id, 0);
    fake_conn_send(c, "[6, {}, \"wamp.close.close_realm\"]");
    fake_conn_clear(c);
    fake_conn *bad = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_send(bad, "[1, \"no.such.realm\", {\"roles\": {\"caller\": {}}}]");
    fake_conn_clear(bad);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 3);
    json_t *join = json_array_get(r, 0), *leave = json_array_get(r, 1),
           *refused = json_array_get(r, 2);
    ck_assert_str_eq(sval(join, "action"), "join");
    ck_assert_str_eq(sval(join, "realm"), "realm1");
    ck_assert_uint_eq(orig_sid(join), id);
    ck_assert_str_eq(sval(json_object_get(join, "originator"), "authrole"), "anonymous");
    ck_assert(success(join));
    ck_assert_str_eq(sval(leave, "action"), "leave");
    ck_assert_uint_eq(orig_sid(leave), id);
    ck_assert(success(leave));
    ck_assert_str_eq(sval(refused, "action"), "join");
    ck_assert_str_eq(sval(refused, "realm"), "no.such.realm");
    ck_assert(!success(refused));
    ck_assert_str_eq(sval(refused, "error"), WAMP_ERROR_NO_SUCH_REALM);
    ck_assert(json_is_null(json_object_get(join, "error")));
    json_decref(r);
    fake_conn_free(c);
    fake_conn_free(bad);
}

END_TEST

/* Filters apply to the anchor: msg_types, uris, session_ids of the originator; the responders'
 * messages are kept whatever the filter says about them. */
START_TEST(test_router_filters_on_the_anchor)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn *other = joined(WAMP_SER_JSON, "realm2");
    fake_conn_send(callee, "[64, 1, {}, \"com.a.add\"]");
    fake_conn_send(callee, "[64, 2, {}, \"com.b.add\"]");
    fake_conn_send(callee, "[32, 3, {}, \"com.a.topic\"]");
    fake_conn_clear(callee);
    char opts[256];
    snprintf(opts, sizeof(opts),
             "{\"trace_level\": \"action\", \"msg_types\": [\"Call\"], \"uris\": [{\"uri\": "
             "\"com.a.\", \"match\": \"prefix\"}], \"session_ids\": [%llu]}",
             (unsigned long long)sid(caller));
    trace *t = start("calls", opts);
    trace *byrealm = start("realm2", "{\"trace_level\": \"action\", \"realms\": [\"realm2\"]}");
    fake_conn_send(caller, "[48, 1, {}, \"com.b.add\"]");   /* other uri */
    fake_conn_send(caller, "[16, 2, {}, \"com.a.topic\"]"); /* other type */
    fake_conn_send(caller, "[48, 3, {}, \"com.a.add\"]");   /* kept */
    fake_conn_send(other, "[48, 4, {}, \"com.a.add\"]");    /* other session and realm */
    /* The callee answers every invocation (its YIELD is not a Call, yet belongs to the kept
     * action). */
    json_t *msg;
    while ((msg = fake_conn_next(callee)) != NULL) {
        if (fake_msg_int(msg, 0) == WAMP_MSG_INVOCATION) {
            fake_conn_send(callee, "[70, %lld, {}, [1]]", (long long)fake_msg_int(msg, 1));
        }
        json_decref(msg);
    }
    fake_conn_clear(caller);
    fake_conn_clear(other);
    json_t *r = records(t);
    ck_assert_uint_eq(json_array_size(r), 1);
    json_t *rec = json_array_get(r, 0);
    ck_assert_str_eq(sval(rec, "uri"), "com.a.add");
    ck_assert_uint_eq(orig_sid(rec), sid(caller));
    ck_assert_uint_eq(n_resp(rec), 1);
    ck_assert_uint_eq(resp_sid(rec, 0), sid(callee));
    ck_assert(success(rec));
    json_decref(r);
    /* realm2 has no such procedure: the other session's call fails there. */
    r = records(byrealm);
    ck_assert_uint_eq(json_array_size(r), 1);
    ck_assert_uint_eq(orig_sid(json_array_get(r, 0)), sid(other));
    ck_assert(!success(json_array_get(r, 0)));
    json_decref(r);
    fake_conn_free(callee);
    fake_conn_free(caller);
    fake_conn_free(other);
}

END_TEST

/* A callee that never answers: the action stays pending (no record); stopping the trace
 * discards it, and the late YIELD records nothing. */
START_TEST(test_router_unanswered_call_and_stop)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.slow\"]");
    fake_conn_clear(callee);
    trace *t = start("act", "{\"trace_level\": \"action\"}");
    fake_conn_send(caller, "[48, 1, {}, \"com.slow\"]");
    json_t *inv = fake_conn_next(callee);
    ck_assert_ptr_nonnull(inv);
    ck_assert_uint_eq(trace_action_pending(trace_get_action(t)), 1);
    ck_assert_uint_eq(trace_records(t), 0);
    ck_assert_int_eq(trace_hub_stop(rt_router_trace_hub(T.rt), "act", 2, 2, NULL), WAMP_OK);
    ck_assert_uint_eq(trace_action_pending(trace_get_action(t)), 0);
    fake_conn_send(callee, "[70, %lld, {}, [5]]", (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    ck_assert_uint_eq(trace_records(t), 0);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

static Suite *trace_action_suite(void)
{
    Suite *s = suite_create("trace_action");
    TCase *tc = tcase_create("tracker");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_tracker_call_chain);
    tcase_add_test(tc, test_tracker_error_and_abort_fail);
    tcase_add_test(tc, test_tracker_error_uri_of_the_last_error);
    tcase_add_test(tc, test_render_action_part_versions);
    tcase_add_test(tc, test_tracker_responders_deduplicated);
    tcase_add_test(tc, test_tracker_anchor_is_last);
    tcase_add_test(tc, test_tracker_cap_and_clear);
    tcase_add_test(tc, test_action_names);
    suite_add_tcase(s, tc);
    tc = tcase_create("hub");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_hub_action_trace_renders_alike_in_every_mode);
    tcase_add_test(tc, test_hub_pending_cap_counts_dropped);
    tcase_add_test(tc, test_persisted_action_trace_reloads);
    suite_add_tcase(s, tc);
    tc = tcase_create("router");
    tcase_set_timeout(tc, 10);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_router_call_chain_one_record);
    tcase_add_test(tc, test_router_call_no_such_procedure);
    tcase_add_test(tc, test_router_callee_error_uri);
    tcase_add_test(tc, test_router_publish_responders);
    tcase_add_test(tc, test_router_subscribe_register_and_their_undo);
    tcase_add_test(tc, test_router_join_and_leave);
    tcase_add_test(tc, test_router_filters_on_the_anchor);
    tcase_add_test(tc, test_router_unanswered_call_and_stop);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trace_action_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
