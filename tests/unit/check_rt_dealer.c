/* check_rt_dealer.c: registrations, CALL -> INVOCATION -> YIELD/ERROR -> RESULT/ERROR, callee and
 * caller leaving, router-local procedures. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_transport.h"
#include "rt_dealer.h"
#include "rt_realm.h"
#include "test_router.h"

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

static int64_t do_register(fake_conn *c, const char *proc)
{
    fake_conn_send(c, "[64, 100, {}, \"%s\"]", proc);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_REGISTERED);
    ck_assert_int_eq(fake_msg_int(m, 1), 100);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    return id;
}

/* Takes the INVOCATION the callee received and checks its registration; returns it (owned). */
static json_t *expect_invocation(fake_conn *callee, int64_t reg)
{
    json_t *inv = fake_conn_next(callee);
    ck_assert_ptr_nonnull(inv);
    ck_assert_int_eq(fake_msg_int(inv, 0), WAMP_MSG_INVOCATION);
    ck_assert_int_eq(fake_msg_int(inv, 2), reg);
    return inv;
}

START_TEST(test_call_yield_result_both_serializers)
{
    for (int variant = 0; variant < 4; variant++) {
        fake_conn *callee = joined(variant & 1 ? WAMP_SER_MSGPACK : WAMP_SER_JSON, "realm1");
        fake_conn *caller = joined(variant & 2 ? WAMP_SER_MSGPACK : WAMP_SER_JSON, "realm1");
        int64_t reg = do_register(callee, "com.math.add");
        fake_conn_send(caller, "[48, 7, {}, \"com.math.add\", [2, 3], {\"unit\": \"m\"}]");
        json_t *inv = expect_invocation(callee, reg);
        ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(inv, 4), 1)), 3);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(inv, 5), "unit")), "m");
        int64_t inv_id = fake_msg_int(inv, 1);
        json_decref(inv);
        ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 1);
        fake_conn_send(callee, "[70, %lld, {}, [5], {\"unit\": \"m\"}]", (long long)inv_id);
        json_t *res = fake_conn_next(caller);
        json_t *expect = json_pack("[i, i, {}, [i], {s:s}]", WAMP_MSG_RESULT, 7, 5, "unit", "m");
        ck_assert(json_equal(res, expect));
        json_decref(res);
        json_decref(expect);
        ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
        fake_conn_free(callee);
        fake_conn_free(caller);
        ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 0);
    }
}

END_TEST

START_TEST(test_callee_error_reaches_caller_intact)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    int64_t reg = do_register(callee, "com.fail");
    fake_conn_send(caller, "[48, 3, {}, \"com.fail\"]");
    json_t *inv = expect_invocation(callee, reg);
    ck_assert_uint_eq(json_array_size(inv), 4); /* no args given, none sent */
    fake_conn_send(callee, "[8, 68, %lld, {}, \"com.example.oops\", [\"bad\"], {\"code\": 42}]",
                   (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    json_t *err = fake_conn_next(caller);
    json_t *expect = json_pack("[i, i, i, {}, s, [s], {s:i}]", WAMP_MSG_ERROR, WAMP_MSG_CALL, 3,
                               "com.example.oops", "bad", "code", 42);
    ck_assert(json_equal(err, expect));
    json_decref(err);
    json_decref(expect);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_no_such_procedure_and_invalid_uri)
{
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(caller, "[48, 1, {}, \"com.nobody\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 1, WAMP_ERROR_NO_SUCH_PROCEDURE);
    fake_conn_send(caller, "[48, 2, {}, \"com#bad\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 2, WAMP_ERROR_INVALID_URI);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_register_twice_fails)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    do_register(a, "com.p");
    fake_conn_send(b, "[64, 5, {}, \"com.p\"]");
    fake_expect_error(b, WAMP_MSG_REGISTER, 5, WAMP_ERROR_PROCEDURE_ALREADY_EXISTS);
    fake_conn_send(b, "[64, 6, {\"invoke\": \"roundrobin\"}, \"com.q\"]");
    fake_expect_error(b, WAMP_MSG_REGISTER, 6, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_free(a);
    /* Once a is gone the procedure is free again. */
    do_register(b, "com.p");
    fake_conn_free(b);
}

END_TEST

START_TEST(test_unregister)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *other = joined(WAMP_SER_JSON, "realm1");
    int64_t reg = do_register(callee, "com.p");
    fake_conn_send(other, "[66, 1, %lld]", (long long)reg);
    fake_expect_error(other, WAMP_MSG_UNREGISTER, 1, WAMP_ERROR_NO_SUCH_REGISTRATION);
    fake_conn_send(callee, "[66, 2, %lld]", (long long)reg);
    json_t *m = fake_conn_next(callee);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_UNREGISTERED);
    ck_assert_int_eq(fake_msg_int(m, 1), 2);
    json_decref(m);
    fake_conn_send(other, "[48, 3, {}, \"com.p\"]");
    fake_expect_error(other, WAMP_MSG_CALL, 3, WAMP_ERROR_NO_SUCH_PROCEDURE);
    fake_conn_free(callee);
    fake_conn_free(other);
}

END_TEST

START_TEST(test_callee_leaving_cancels_pending_calls)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *c1 = joined(WAMP_SER_JSON, "realm1");
    fake_conn *c2 = joined(WAMP_SER_MSGPACK, "realm1");
    do_register(callee, "com.slow");
    fake_conn_send(c1, "[48, 1, {}, \"com.slow\"]");
    fake_conn_send(c2, "[48, 2, {}, \"com.slow\"]");
    ck_assert_uint_eq(fake_conn_pending(callee), 2);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 2);
    fake_conn_disconnect(callee);
    fake_expect_error(c1, WAMP_MSG_CALL, 1, WAMP_ERROR_CANCELED);
    fake_expect_error(c2, WAMP_MSG_CALL, 2, WAMP_ERROR_CANCELED);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 0);
    fake_conn_free(callee);
    fake_conn_free(c1);
    fake_conn_free(c2);
}

END_TEST

START_TEST(test_caller_leaving_drops_result)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    int64_t reg = do_register(callee, "com.slow");
    fake_conn_send(caller, "[48, 1, {}, \"com.slow\"]");
    json_t *inv = expect_invocation(callee, reg);
    fake_conn_free(caller);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 1);
    fake_conn_send(callee, "[70, %lld, {}, [\"late\"]]", (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    ck_assert_uint_eq(fake_conn_pending(callee), 0);
    ck_assert_ptr_nonnull(callee->s); /* not a protocol violation */
    fake_conn_free(callee);
}

END_TEST

START_TEST(test_yield_from_wrong_session_ignored)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn *intruder = joined(WAMP_SER_JSON, "realm1");
    int64_t reg = do_register(callee, "com.p");
    fake_conn_send(caller, "[48, 1, {}, \"com.p\"]");
    json_t *inv = expect_invocation(callee, reg);
    long long inv_id = (long long)fake_msg_int(inv, 1);
    json_decref(inv);
    fake_conn_send(intruder, "[70, %lld, {}, [\"forged\"]]", inv_id);
    fake_conn_send(intruder, "[70, 999999, {}]");
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_conn_send(callee, "[70, %lld, {}, [\"real\"]]", inv_id);
    json_t *res = fake_conn_next(caller);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(res, 3), 0)), "real");
    json_decref(res);
    fake_conn_free(callee);
    fake_conn_free(caller);
    fake_conn_free(intruder);
}

END_TEST

static wamp_err local_echo(void *ctx, rt_session *caller, const json_t *args, const json_t *kwargs,
                           rt_local_reply *reply)
{
    int *calls = ctx;
    (*calls)++;
    ck_assert_ptr_nonnull(caller);
    if (json_array_size(args) == 0) {
        reply->error_uri = "com.example.empty";
        reply->args = json_pack("[s]", "need an argument");
        return WAMP_OK;
    }
    reply->args = json_deep_copy(args);
    reply->kwargs = json_deep_copy(kwargs);
    return WAMP_OK;
}

START_TEST(test_local_procedure)
{
    int calls = 0;
    rt_dealer *d = rt_realm_dealer(rt_router_find_realm(T.rt, "realm1"));
    ck_assert_int_eq(rt_dealer_register_local(d, "wampscope.echo", local_echo, &calls), WAMP_OK);
    ck_assert_int_eq(rt_dealer_register_local(d, "wampscope.echo", local_echo, &calls),
                     WAMP_EEXIST);
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(caller, "[48, 4, {}, \"wampscope.echo\", [\"hi\"], {\"x\": 1}]");
    json_t *res = fake_conn_next(caller);
    json_t *expect = json_pack("[i, i, {}, [s], {s:i}]", WAMP_MSG_RESULT, 4, "hi", "x", 1);
    ck_assert(json_equal(res, expect));
    json_decref(res);
    json_decref(expect);
    fake_conn_send(caller, "[48, 5, {}, \"wampscope.echo\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 5, "com.example.empty");
    ck_assert_int_eq(calls, 2);
    /* A client cannot take over a local procedure. */
    fake_conn_send(caller, "[64, 6, {}, \"wampscope.echo\"]");
    fake_expect_error(caller, WAMP_MSG_REGISTER, 6, WAMP_ERROR_PROCEDURE_ALREADY_EXISTS);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_authorization)
{
    fake_conn *a = joined(WAMP_SER_JSON, "locked");
    fake_conn_send(a, "[64, 1, {}, \"com.open.other\"]");
    fake_expect_error(a, WAMP_MSG_REGISTER, 1, WAMP_ERROR_NOT_AUTHORIZED);
    do_register(a, "com.open.exact");
    fake_conn_send(a, "[48, 2, {}, \"com.closed.x\"]");
    fake_expect_error(a, WAMP_MSG_CALL, 2, WAMP_ERROR_NOT_AUTHORIZED);
    fake_conn_send(a, "[48, 3, {}, \"com.open.missing\"]");
    fake_expect_error(a, WAMP_MSG_CALL, 3, WAMP_ERROR_NO_SUCH_PROCEDURE);
    fake_conn_free(a);
}

END_TEST

START_TEST(test_result_too_big_for_caller)
{
    /* Callee's transport allows big messages, caller's only 400 bytes. */
    rt_peer small;
    memset(&small, 0, sizeof(small));
    small.max_message_size = 400;
    fake_conn *caller = fake_conn_new_peer(T.rt, WAMP_SER_JSON, &small);
    fake_conn_join(caller, "realm1");
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    int64_t reg = do_register(callee, "com.big");
    fake_conn_send(caller, "[48, 1, {}, \"com.big\"]");
    json_t *inv = expect_invocation(callee, reg);
    char big[1000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    fake_conn_send(callee, "[70, %lld, {}, [\"%s\"]]", (long long)fake_msg_int(inv, 1), big);
    json_decref(inv);
    fake_expect_error(caller, WAMP_MSG_CALL, 1, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

static Suite *rt_dealer_suite(void)
{
    Suite *s = suite_create("rt_dealer");
    TCase *tc = tcase_create("rpc");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_call_yield_result_both_serializers);
    tcase_add_test(tc, test_callee_error_reaches_caller_intact);
    tcase_add_test(tc, test_no_such_procedure_and_invalid_uri);
    tcase_add_test(tc, test_register_twice_fails);
    tcase_add_test(tc, test_unregister);
    tcase_add_test(tc, test_callee_leaving_cancels_pending_calls);
    tcase_add_test(tc, test_caller_leaving_drops_result);
    tcase_add_test(tc, test_yield_from_wrong_session_ignored);
    tcase_add_test(tc, test_local_procedure);
    tcase_add_test(tc, test_authorization);
    tcase_add_test(tc, test_result_too_big_for_caller);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_dealer_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
