/* check_rt_limits.c: wampscope.limits on sessions (total, per realm) and per session (pending
 * calls, subscriptions, registrations): the refusal (ABORT / ERROR
 * wampscope.error.limit_reached, counted in the stats), and the capacity coming back when
 * what counted goes away (unsubscribe, unregister, answer, timeout, leave). */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_transport.h"
#include "log_capture.h"
#include "rt_realm.h"
#include "rt_router.h"
#include "test_router.h"
#include "trace_hub.h"
#include "trace_render.h"

#define LIMIT_URI "wampscope.error.limit_reached"

static test_router T;

/* A router whose limits are those given (0 = none). */
static void setup_limits(size_t sessions, size_t per_realm, size_t calls, size_t subs, size_t regs)
{
    test_router_init(&T);
    rt_router_free(T.rt);
    T.cfg.limits.max_sessions = sessions;
    T.cfg.limits.max_sessions_per_realm = per_realm;
    T.cfg.limits.max_pending_calls = calls;
    T.cfg.limits.max_subscriptions = subs;
    T.cfg.limits.max_registrations = regs;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
}

static void teardown(void)
{
    test_router_fini(&T);
}

static uint64_t refusals(void)
{
    return rt_router_stats_get(T.rt)->limit_refusals;
}

/* HELLO to realm; returns the reply (owned). */
static json_t *hello(fake_conn *c, const char *realm)
{
    fake_conn_send(c, "[1, \"%s\", {\"roles\": {\"caller\": {}}}]", realm);
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    return m;
}

static void expect_abort_limit(fake_conn *c, const char *realm)
{
    json_t *m = hello(c, realm);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ABORT);
    ck_assert_str_eq(fake_msg_str(m, 2), LIMIT_URI);
    const char *msg = json_string_value(json_object_get(json_array_get(m, 1), "message"));
    ck_assert_ptr_nonnull(msg);
    ck_assert_ptr_nonnull(strstr(msg, "wampscope.limits.max_sessions"));
    json_decref(m);
    ck_assert(c->close_requested || c->s == NULL);
}

START_TEST(test_sessions_per_realm_and_total)
{
    setup_limits(3, 2, 0, 0, 0);
    fake_conn *a = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn *b = fake_conn_new_joined(T.rt, WAMP_SER_MSGPACK, "realm1");
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    expect_abort_limit(c, "realm1"); /* per realm: 2 */
    ck_assert_uint_eq(refusals(), 1);
    fake_conn *d = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm2");
    fake_conn *e = fake_conn_new(T.rt, WAMP_SER_JSON);
    expect_abort_limit(e, "realm2"); /* total: 3 */
    ck_assert_uint_eq(refusals(), 2);
    /* One leaves: its place is free again. */
    fake_conn_free(a);
    fake_conn *f = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    ck_assert_uint_eq(refusals(), 2);
    fake_conn_free(b);
    fake_conn_free(c);
    fake_conn_free(d);
    fake_conn_free(e);
    fake_conn_free(f);
}

END_TEST

START_TEST(test_subscriptions_per_session)
{
    setup_limits(0, 0, 0, 2, 0);
    fake_conn *c = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn_send(c, "[32, 1, {}, \"com.a\"]");
    fake_conn_send(c, "[32, 2, {\"match\": \"prefix\"}, \"com.\"]");
    fake_conn_clear(c);
    fake_conn_send(c, "[32, 3, {}, \"com.c\"]");
    fake_expect_error(c, WAMP_MSG_SUBSCRIBE, 3, LIMIT_URI);
    ck_assert_uint_eq(refusals(), 1);
    /* Subscribing again to what it has is not a new subscription. */
    fake_conn_send(c, "[32, 4, {}, \"com.a\"]");
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    uint64_t sub_a = (uint64_t)fake_msg_int(m, 2);
    json_decref(m);
    /* Another session has its own count. */
    fake_conn *other = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn_send(other, "[32, 1, {}, \"com.c\"]");
    m = fake_conn_next(other);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    json_decref(m);
    /* Unsubscribing frees a place. */
    fake_conn_send(c, "[34, 5, %llu]", (unsigned long long)sub_a);
    fake_conn_clear(c);
    fake_conn_send(c, "[32, 6, {}, \"com.c\"]");
    m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    json_decref(m);
    fake_conn_free(other);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_registrations_per_session)
{
    setup_limits(0, 0, 0, 0, 1);
    fake_conn *c = fake_conn_new_joined(T.rt, WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(c, "[64, 1, {}, \"com.p\"]");
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_REGISTERED);
    uint64_t reg = (uint64_t)fake_msg_int(m, 2);
    json_decref(m);
    fake_conn_send(c, "[64, 2, {}, \"com.q\"]");
    fake_expect_error(c, WAMP_MSG_REGISTER, 2, LIMIT_URI);
    fake_conn_send(c, "[66, 3, %llu]", (unsigned long long)reg);
    fake_conn_clear(c);
    fake_conn_send(c, "[64, 4, {}, \"com.q\"]");
    m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_REGISTERED);
    json_decref(m);
    ck_assert_uint_eq(refusals(), 1);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_pending_calls_per_session)
{
    setup_limits(0, 0, 2, 0, 0);
    fake_conn *callee = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.slow\"]");
    fake_conn_clear(callee);
    fake_conn *caller = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn_send(caller, "[48, 1, {}, \"com.slow\"]");
    fake_conn_send(caller, "[48, 2, {\"timeout\": 1000}, \"com.slow\"]");
    fake_conn_send(caller, "[48, 3, {}, \"com.slow\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 3, LIMIT_URI);
    ck_assert_uint_eq(refusals(), 1);
    /* A call to a router-local or unknown procedure is not pending: not refused for that. */
    fake_conn_send(caller, "[48, 4, {}, \"com.nobody\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 4, "wamp.error.no_such_procedure");
    /* The callee answers the first: one place free. */
    json_t *inv = fake_conn_next(callee);
    ck_assert_int_eq(fake_msg_int(inv, 0), WAMP_MSG_INVOCATION);
    fake_conn_send(callee, "[70, %lld, {}]", (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    fake_conn_clear(callee);
    json_t *res = fake_conn_next(caller);
    ck_assert_int_eq(fake_msg_int(res, 0), WAMP_MSG_RESULT);
    json_decref(res);
    fake_conn_send(caller, "[48, 5, {}, \"com.slow\"]");
    ck_assert_uint_eq(fake_conn_pending(caller), 0); /* routed, not refused */
    /* The timed-out call frees its place too. */
    fake_clock_advance_ms(&T.clock, 1500);
    rt_router_tick(T.rt);
    fake_expect_error(caller, WAMP_MSG_CALL, 2, "wamp.error.timeout");
    fake_conn_send(caller, "[48, 6, {}, \"com.slow\"]");
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_conn_send(caller, "[48, 7, {}, \"com.slow\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 7, LIMIT_URI);
    ck_assert_uint_eq(refusals(), 2);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

/* Callers that leave with calls pending, skip-cancel them or let them time out leave nothing
 * behind: 20 rounds of 10 callers x 5 calls against a callee that never answers hold at most
 * one round's calls (max_pending_calls 5 a caller), the callee is interrupted where it can be,
 * and its late answers are dropped and counted. */
START_TEST(test_orphaned_calls_are_freed)
{
    setup_limits(0, 0, 5, 0, 0);
    fake_conn *callee = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_send(callee, "[1, \"realm1\", {\"roles\": {\"callee\": {\"features\": "
                           "{\"call_canceling\": true}}}}]");
    fake_conn_clear(callee);
    fake_conn_send(callee, "[64, 1, {}, \"com.never\"]");
    fake_conn_clear(callee);
    long long last_inv = 0;
    for (int round = 0; round < 20; round++) {
        fake_conn *callers[10];
        for (int i = 0; i < 10; i++) {
            callers[i] = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
            for (int k = 1; k <= 5; k++) {
                fake_conn_send(callers[i], "[48, %d, {}, \"com.never\"]", k);
            }
            ck_assert_uint_eq(fake_conn_pending(callers[i]), 0); /* none refused */
        }
        ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 50);
        for (int i = 0; i < 10; i++) {
            fake_conn_free(callers[i]);
        }
        ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
        /* 50 INVOCATIONs, then one INTERRUPT killnowait for each. */
        size_t interrupts = 0;
        for (json_t *m; (m = fake_conn_next(callee)); json_decref(m)) {
            if (fake_msg_int(m, 0) == WAMP_MSG_INTERRUPT) {
                interrupts++;
                last_inv = (long long)fake_msg_int(m, 1);
                ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 2), "mode")),
                                 "killnowait");
            }
        }
        ck_assert_uint_eq(interrupts, 50);
    }
    ck_assert_uint_eq(refusals(), 0);
    /* The callee's late answer finds nothing: dropped, counted. */
    fake_conn_send(callee, "[70, %lld, {}, [\"late\"]]", last_inv);
    fake_conn_send(callee, "[8, 68, %lld, {}, \"wamp.error.canceled\"]", last_inv);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->answers_dropped, 2);
    /* CANCEL skip and a timeout free the call too: a caller cannot pile up calls that way. */
    fake_conn *caller = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    for (int k = 1; k <= 40; k++) {
        fake_conn_send(caller, "[48, %d, {\"timeout\": 100}, \"com.never\"]", k);
        fake_conn_send(caller, "[49, %d, {\"mode\": \"skip\"}]", k);
        fake_expect_error(caller, WAMP_MSG_CALL, k, "wamp.error.canceled");
    }
    for (int k = 41; k <= 45; k++) {
        fake_conn_send(caller, "[48, %d, {\"timeout\": 100}, \"com.never\"]", k);
    }
    fake_clock_advance_ms(&T.clock, 200);
    rt_router_tick(T.rt);
    for (int k = 41; k <= 45; k++) {
        fake_expect_error(caller, WAMP_MSG_CALL, k, "wamp.error.timeout");
    }
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    ck_assert_uint_eq(refusals(), 0);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

/* A flood of refused requests logs one line per call site, then a summary with the count
 * when the interval (10 s, router clock) is over: 10,000 CALLs over max_pending_calls, 199
 * denied SUBSCRIBEs, 100 denied CALLs; 30 protocol violations (one a connection) log 20 lines
 * (a connection's burst) and a summary of 10. */
START_TEST(test_refusals_logged_once_then_summarised)
{
    setup_limits(0, 0, 1, 0, 0);
    fake_conn *callee = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.slow\"]");
    fake_conn *caller = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn_send(caller, "[48, 1, {}, \"com.slow\"]");
    fake_conn *locked = fake_conn_new_joined(T.rt, WAMP_SER_MSGPACK, "locked");
    log_capture c;
    log_capture_begin(&c);
    for (int i = 2; i < 10002; i++) {
        fake_conn_send(caller, "[48, %d, {}, \"com.slow\"]", i);
        if (i % 50 == 0) {
            fake_conn_clear(caller);
        }
    }
    for (int i = 1; i < 200; i++) {
        fake_conn_send(locked, "[32, %d, {}, \"com.closed\"]", i);
        if (i < 101) {
            fake_conn_send(locked, "[48, %d, {}, \"com.closed.proc\"]", i);
        }
        fake_conn_clear(locked);
    }
    for (int i = 0; i < 30; i++) {
        fake_conn *bad = fake_conn_new(T.rt, WAMP_SER_JSON);
        fake_conn_send_raw(bad, "not json", 8);
        fake_conn_free(bad);
    }
    fake_clock_advance_ms(&T.clock, 9999);
    rt_router_tick(T.rt);
    char *early = log_capture_end(&c);
    log_capture_begin(&c);
    fake_clock_advance_ms(&T.clock, 1);
    rt_router_tick(T.rt);
    char *late = log_capture_end(&c);

    ck_assert_uint_eq(refusals(), 10000);
    ck_assert_uint_eq(log_count_lines(early, "CALL refused: limit reached"), 1);
    ck_assert_uint_eq(log_count_lines(early, "SUBSCRIBE to com.closed denied"), 1);
    ck_assert_uint_eq(log_count_lines(early, "CALL of com.closed.proc denied"), 1);
    ck_assert_uint_eq(log_count_lines(early, "protocol violation from"), 20);
    ck_assert_uint_eq(log_count_lines(early, "(rate-limited)"), 0);
    size_t n = 0;
    ck_assert_uint_eq(log_summarized(late, "request refused by a limit", &n), 9999);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(log_summarized(late, "SUBSCRIBE denied", &n), 198);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(log_summarized(late, "CALL denied", &n), 99);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(log_summarized(late, "protocol violation", &n), 10);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(log_count_lines(late, "refused"), 1); /* nothing but the summaries */
    free(early);
    free(late);
    fake_conn_free(locked);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

/* --- limits.slow_consumer (the test router caps queues at 100 messages / 64 KiB) ---------- */

static void setup_policy(rt_slow_consumer_policy p)
{
    test_router_init(&T);
    rt_router_free(T.rt);
    T.cfg.limits.slow_consumer = p;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
}

static void subscribe(fake_conn *c, uint64_t req, const char *topic)
{
    fake_conn_send(c, "[32, %llu, {}, \"%s\"]", (unsigned long long)req, topic);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    json_decref(m);
}

static trace *start_trace(const char *id)
{
    trace *t = NULL;
    char why[160] = "";
    wamp_err err = trace_hub_start(rt_router_trace_hub(T.rt), id, NULL, 1, 1, &t, why, sizeof(why));
    ck_assert_msg(err == WAMP_OK, "start_trace: %s", why);
    return t;
}

static uint64_t dropped_stat(void)
{
    return rt_router_stats_get(T.rt)->events_dropped;
}

/* A subscriber that never reads under a flood keeps its connection; its oldest queued EVENTs
 * make room, never the head (which the transport may be writing); each one shows in a
 * running trace as a tx record with "dropped": "slow_consumer". */
START_TEST(test_drop_oldest_events_keeps_head)
{
    setup_policy(RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS);
    fake_conn *slow = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn *pub = fake_conn_new_joined(T.rt, WAMP_SER_MSGPACK, "realm1");
    subscribe(slow, 1, "com.flood");
    trace *t = start_trace("drops");
    for (int i = 0; i < 150; i++) {
        fake_conn_send(pub, "[16, %d, {}, \"com.flood\", [%d]]", i + 1, i);
    }
    ck_assert(!slow->close_requested);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->slow_consumer_disconnects, 0);
    ck_assert_uint_eq(dropped_stat(), 50);
    /* 0 (the head), then 51..149: 1..50 were dropped, oldest first. */
    ck_assert_uint_eq(fake_conn_pending(slow), 100);
    json_t *m = fake_conn_next(slow);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_EVENT);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(m, 4), 0)), 0);
    json_decref(m);
    for (int i = 51; i < 150; i++) {
        m = fake_conn_next(slow);
        ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(m, 4), 0)), i);
        json_decref(m);
    }
    /* The trace: 50 dropped EVENT records, for the slow session, with the topic. */
    json_t *recs = trace_render_records(t, 0, UINT64_MAX, 10000);
    ck_assert_ptr_nonnull(recs);
    size_t n = 0, i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        const char *d = json_string_value(json_object_get(r, "dropped"));
        if (!d) {
            continue;
        }
        ck_assert_str_eq(d, "slow_consumer");
        ck_assert_str_eq(json_string_value(json_object_get(r, "msg_type")), "Event");
        ck_assert_str_eq(json_string_value(json_object_get(r, "direction")), "tx");
        ck_assert_str_eq(json_string_value(json_object_get(r, "uri")), "com.flood");
        n++;
    }
    ck_assert_uint_eq(n, 50);
    json_decref(recs);
    /* Drained, the session works normally. */
    subscribe(slow, 2, "com.other");
    fake_conn_free(slow);
    fake_conn_free(pub);
}

END_TEST

/* Non-EVENTs (here SUBSCRIBED replies) filling the queue: no EVENT can make room, so the
 * session is disconnected as a slow consumer as with the "disconnect" policy. */
START_TEST(test_drop_oldest_events_disconnects_when_no_room)
{
    setup_policy(RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS);
    fake_conn *slow = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn *pub = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    subscribe(slow, 1, "com.flood");
    /* One EVENT (the head, never dropped), then 99 SUBSCRIBED: the queue is full. */
    fake_conn_send(pub, "[16, 1, {}, \"com.flood\", [0]]");
    for (int i = 0; i < 99; i++) {
        fake_conn_send(slow, "[32, %d, {}, \"com.t%d\"]", i + 2, i);
    }
    ck_assert(!slow->close_requested);
    fake_conn_send(pub, "[16, 2, {}, \"com.flood\", [1]]");
    ck_assert(slow->close_requested);
    ck_assert_int_eq(slow->close_code, 1008);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->slow_consumer_disconnects, 1);
    ck_assert_uint_eq(dropped_stat(), 0);
    fake_conn_free(slow);
    fake_conn_free(pub);
}

END_TEST

/* The only EVENT behind the head is the newest queued message: dropping it frees the queue's
 * last slot, into which the next EVENT goes; that one must be found and dropped in its turn
 * (the router aborted on it). */
START_TEST(test_drop_oldest_events_at_the_tail)
{
    setup_policy(RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS);
    fake_conn *slow = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn *pub = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    subscribe(slow, 1, "com.flood");
    /* One EVENT (the head), 98 SUBSCRIBED, one EVENT: the queue is full. */
    fake_conn_send(pub, "[16, 1, {}, \"com.flood\", [0]]");
    for (int i = 0; i < 98; i++) {
        fake_conn_send(slow, "[32, %d, {}, \"com.t%d\"]", i + 2, i);
    }
    for (int i = 1; i <= 3; i++) {
        fake_conn_send(pub, "[16, %d, {}, \"com.flood\", [%d]]", i + 1, i);
    }
    ck_assert(!slow->close_requested);
    ck_assert_uint_eq(dropped_stat(), 2);
    ck_assert_uint_eq(fake_conn_pending(slow), 100);
    json_t *last = json_array_get(slow->inbox, 99);
    ck_assert_int_eq(fake_msg_int(last, 0), WAMP_MSG_EVENT);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(last, 4), 0)), 3);
    fake_conn_free(slow);
    fake_conn_free(pub);
}

END_TEST

/* Queued EVENTs also make room for a reply: the session keeps its connection and gets it. */
START_TEST(test_drop_oldest_events_room_for_reply)
{
    setup_policy(RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS);
    fake_conn *slow = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn *pub = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    subscribe(slow, 1, "com.flood");
    for (int i = 0; i < 100; i++) {
        fake_conn_send(pub, "[16, %d, {}, \"com.flood\", [%d]]", i + 1, i);
    }
    fake_conn_send(slow, "[32, 7, {}, \"com.more\"]");
    ck_assert(!slow->close_requested);
    ck_assert_uint_eq(dropped_stat(), 1);
    ck_assert_uint_eq(fake_conn_pending(slow), 100);
    json_t *last = json_array_get(slow->inbox, 99);
    ck_assert_int_eq(fake_msg_int(last, 0), WAMP_MSG_SUBSCRIBED);
    ck_assert_int_eq(fake_msg_int(last, 1), 7);
    fake_conn_free(slow);
    fake_conn_free(pub);
}

END_TEST

/* Counts the records of t with "dropped": reason (and msg_type type, if not NULL). */
static size_t count_dropped(trace *t, const char *reason, const char *type)
{
    json_t *recs = trace_render_records(t, 0, UINT64_MAX, 10000);
    ck_assert_ptr_nonnull(recs);
    size_t n = 0, i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        const char *d = json_string_value(json_object_get(r, "dropped"));
        const char *mt = json_string_value(json_object_get(r, "msg_type"));
        n += d && strcmp(d, reason) == 0 && (!type || strcmp(mt, type) == 0);
    }
    json_decref(recs);
    return n;
}

/* The default policy is unchanged: disconnect, nothing dropped. The EVENT that did not fit is
 * traced "queue_full", and the queued messages thrown away with the connection (all but the
 * head, which may be half-written) "session_closed", counted in stats.messages_undelivered. */
START_TEST(test_disconnect_policy_default)
{
    setup_policy(RT_SLOW_CONSUMER_DISCONNECT);
    fake_conn *slow = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn *pub = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    subscribe(slow, 1, "com.flood");
    trace *t = start_trace("disconnect");
    for (int i = 0; i < 101; i++) {
        fake_conn_send(pub, "[16, %d, {}, \"com.flood\", [%d]]", i + 1, i);
    }
    ck_assert(slow->close_requested);
    ck_assert_int_eq(slow->close_code, 1008);
    ck_assert_uint_eq(dropped_stat(), 0);
    ck_assert_uint_eq(count_dropped(t, "queue_full", "Event"), 1);
    ck_assert_uint_eq(count_dropped(t, "session_closed", "Event"), 99);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->messages_undelivered, 99);
    fake_conn_free(slow);
    fake_conn_free(pub);
}

END_TEST

/* A connection that goes with messages still queued (peer gone, or limits.close_timeout ran
 * out): they are counted and traced "session_closed". */
START_TEST(test_queue_left_at_close_is_undelivered)
{
    setup_policy(RT_SLOW_CONSUMER_DISCONNECT);
    fake_conn *sub = fake_conn_new_joined(T.rt, WAMP_SER_MSGPACK, "realm1");
    fake_conn *pub = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    subscribe(sub, 1, "com.left");
    trace *t = start_trace("left");
    for (int i = 0; i < 5; i++) {
        fake_conn_send(pub, "[16, %d, {}, \"com.left\", [%d]]", i + 1, i);
    }
    fake_conn_disconnect(sub);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->messages_undelivered, 5);
    ck_assert_uint_eq(count_dropped(t, "session_closed", "Event"), 5);
    fake_conn_free(sub);
    fake_conn_free(pub);
}

END_TEST

/* limits.hello_timeout: counted in stats.hello_timeouts. */
START_TEST(test_hello_timeout_counted)
{
    setup_policy(RT_SLOW_CONSUMER_DISCONNECT);
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_clock_advance_ms(&T.clock, 1000);
    rt_router_tick(T.rt);
    ck_assert(c->close_requested);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->hello_timeouts, 1);
    fake_conn_free(c);
}

END_TEST

/* limits.max_retained_topics: an event that cannot be retained is counted (and still
 * delivered and acknowledged). */
START_TEST(test_retained_not_kept_counted)
{
    test_router_init(&T);
    rt_router_free(T.rt);
    T.cfg.limits.max_retained_topics = 1;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
    fake_conn *pub = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn_send(pub, "[16, 1, {\"retain\": true, \"acknowledge\": true}, \"com.r1\", [1]]");
    fake_conn_send(pub, "[16, 2, {\"retain\": true, \"acknowledge\": true}, \"com.r2\", [2]]");
    ck_assert_uint_eq(fake_conn_pending(pub), 2); /* both PUBLISHED */
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->events_not_retained, 1);
    fake_conn_free(pub);
}

END_TEST

/* --- Messages longer than the client can receive ------------------------------------------- */

static fake_conn *conn_with_limit(size_t max)
{
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    snprintf(peer.addr, sizeof(peer.addr), "127.0.0.1:50001");
    peer.is_loopback = true;
    peer.max_message_size = max;
    return fake_conn_new_peer(T.rt, WAMP_SER_JSON, &peer);
}

/* A WELCOME over the client's limit (a RawSocket client announcing 512 bytes): ABORT
 * wamp.error.payload_size_exceeded and close, no session joined, the WELCOME traced as
 * dropped "too_big". */
START_TEST(test_welcome_too_big_aborts)
{
    setup_policy(RT_SLOW_CONSUMER_DISCONNECT);
    trace *t = start_trace("welcome");
    fake_conn *c = conn_with_limit(512);
    fake_conn_send(c, "[1, \"realm1\", {\"roles\": {\"subscriber\": {}}}]");
    fake_expect_abort(c, "wamp.error.payload_size_exceeded");
    ck_assert_ptr_null(fake_conn_next(c));
    ck_assert(c->close_requested || c->s == NULL);
    ck_assert_uint_eq(rt_realm_member_count(rt_router_find_realm(T.rt, "realm1")), 0);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->messages_too_big, 1);
    json_t *recs = trace_render_records(t, 0, UINT64_MAX, 100);
    bool seen = false;
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        const char *d = json_string_value(json_object_get(r, "dropped"));
        if (d && strcmp(json_string_value(json_object_get(r, "msg_type")), "Welcome") == 0) {
            ck_assert_str_eq(d, "too_big");
            seen = true;
        }
    }
    ck_assert(seen);
    json_decref(recs);
    fake_conn_free(c);
    /* A client that can take it joins. */
    c = conn_with_limit(65536);
    fake_conn_join(c, "realm1");
    fake_conn_free(c);
}

END_TEST

/* Even the ABORT does not fit: the connection is closed without it. */
START_TEST(test_abort_too_big_closes)
{
    setup_policy(RT_SLOW_CONSUMER_DISCONNECT);
    fake_conn *c = conn_with_limit(40);
    fake_conn_send(c, "[1, \"realm1\", {\"roles\": {\"subscriber\": {}}}]");
    ck_assert_ptr_null(fake_conn_next(c));
    ck_assert(c->close_requested || c->s == NULL);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->messages_too_big, 2); /* WELCOME, ABORT */
    fake_conn_free(c);
    c = conn_with_limit(40);
    fake_conn_send(c, "[1, \"no.such.realm\", {\"roles\": {\"subscriber\": {}}}]");
    ck_assert_ptr_null(fake_conn_next(c));
    ck_assert(c->close_requested || c->s == NULL);
    fake_conn_free(c);
}

END_TEST

/* An EVENT over one subscriber's limit is not sent to it (dropped "too_big"); it stays
 * joined and the others get the EVENT. */
START_TEST(test_event_too_big_skips_receiver)
{
    setup_policy(RT_SLOW_CONSUMER_DISCONNECT);
    fake_conn *small = conn_with_limit(1024);
    fake_conn_join(small, "realm1");
    fake_conn *big = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    fake_conn *pub = fake_conn_new_joined(T.rt, WAMP_SER_JSON, "realm1");
    subscribe(small, 1, "com.big");
    subscribe(big, 1, "com.big");
    char payload[2001];
    memset(payload, 'x', 2000);
    payload[2000] = '\0';
    fake_conn_send(pub, "[16, 1, {}, \"com.big\", [\"%s\"]]", payload);
    ck_assert_uint_eq(fake_conn_pending(small), 0);
    ck_assert_uint_eq(fake_conn_pending(big), 1);
    ck_assert(!small->close_requested);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->messages_too_big, 1);
    fake_conn_send(pub, "[16, 2, {}, \"com.big\", [\"small\"]]");
    ck_assert_uint_eq(fake_conn_pending(small), 1);
    fake_conn_free(small);
    fake_conn_free(big);
    fake_conn_free(pub);
}

END_TEST

static Suite *limits_suite(void)
{
    Suite *s = suite_create("rt_limits");
    TCase *tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_sessions_per_realm_and_total);
    tcase_add_test(tc, test_subscriptions_per_session);
    tcase_add_test(tc, test_registrations_per_session);
    tcase_add_test(tc, test_pending_calls_per_session);
    tcase_add_test(tc, test_orphaned_calls_are_freed);
    tcase_add_test(tc, test_refusals_logged_once_then_summarised);
    tcase_add_test(tc, test_drop_oldest_events_keeps_head);
    tcase_add_test(tc, test_drop_oldest_events_disconnects_when_no_room);
    tcase_add_test(tc, test_drop_oldest_events_room_for_reply);
    tcase_add_test(tc, test_drop_oldest_events_at_the_tail);
    tcase_add_test(tc, test_disconnect_policy_default);
    tcase_add_test(tc, test_queue_left_at_close_is_undelivered);
    tcase_add_test(tc, test_hello_timeout_counted);
    tcase_add_test(tc, test_retained_not_kept_counted);
    tcase_add_test(tc, test_welcome_too_big_aborts);
    tcase_add_test(tc, test_abort_too_big_closes);
    tcase_add_test(tc, test_event_too_big_skips_receiver);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(limits_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
