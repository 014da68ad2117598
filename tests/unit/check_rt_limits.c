/* check_rt_limits.c: wampscope.limits on sessions (total, per realm) and per session (pending
 * calls, subscriptions, registrations): the refusal (ABORT / ERROR
 * wampscope.error.limit_reached, counted in the stats), and the capacity coming back when
 * what counted goes away (unsubscribe, unregister, answer, timeout, leave). */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_transport.h"
#include "rt_router.h"
#include "test_router.h"

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

static Suite *limits_suite(void)
{
    Suite *s = suite_create("rt_limits");
    TCase *tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_sessions_per_realm_and_total);
    tcase_add_test(tc, test_subscriptions_per_session);
    tcase_add_test(tc, test_registrations_per_session);
    tcase_add_test(tc, test_pending_calls_per_session);
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
