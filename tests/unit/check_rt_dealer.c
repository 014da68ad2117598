/* check_rt_dealer.c: registrations, CALL -> INVOCATION -> YIELD/ERROR -> RESULT/ERROR, callee and
 * caller leaving, router-local procedures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_clock.h"
#include "fake_transport.h"
#include "rt_dealer.h"
#include "rt_realm.h"
#include "rt_router.h"
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
    fake_conn_send(b, "[64, 6, {\"invoke\": \"roundrobin\"}, \"com.p\"]");
    fake_expect_error(b, WAMP_MSG_REGISTER, 6, WAMP_ERROR_PROCEDURE_ALREADY_EXISTS);
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
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0); /* freed at once */
    fake_conn_send(callee, "[70, %lld, {}, [\"late\"]]", (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->answers_dropped, 1);
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
    /* Callee's transport allows big messages, caller's only 800 bytes (a WELCOME fits). */
    rt_peer small;
    memset(&small, 0, sizeof(small));
    small.max_message_size = 800;
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

/* --- Advanced profile ------------------------------------------------------------------------ */

/* A joined session whose HELLO announces callee.features.call_canceling (and progressive
 * results), as autobahn-python does. */
static fake_conn *joined_canceling(wamp_ser ser, const char *realm)
{
    fake_conn *c = fake_conn_new(T.rt, ser);
    json_decref(
            fake_conn_welcome(c,
                              "[1, \"%s\", {\"roles\": {\"caller\": {}, \"callee\": {\"features\": "
                              "{\"call_canceling\": true, \"progressive_call_results\": true}}}}]",
                              realm));
    return c;
}

static int64_t register_opts(fake_conn *c, const char *options, const char *proc)
{
    fake_conn_send(c, "[64, 100, %s, \"%s\"]", options, proc);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_REGISTERED);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    return id;
}

static const char *detail_str(const json_t *msg, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(msg, i), key));
}

/* Calls uri; asserts exactly one of callees[0..n) got the INVOCATION and returns its index;
 * answers it so no call stays pending. *procedure gets Details.procedure (or NULL). */
static int call_goes_to(fake_conn *caller, fake_conn **callees, int n, const char *uri,
                        char *procedure, size_t proc_len)
{
    fake_conn_send(caller, "[48, 1, {}, \"%s\"]", uri);
    int got = -1;
    for (int i = 0; i < n; i++) {
        json_t *inv = fake_conn_next(callees[i]);
        if (!inv) {
            continue;
        }
        ck_assert_int_eq(got, -1);
        got = i;
        ck_assert_int_eq(fake_msg_int(inv, 0), WAMP_MSG_INVOCATION);
        const char *p = detail_str(inv, 3, "procedure");
        snprintf(procedure, proc_len, "%s", p ? p : "");
        fake_conn_send(callees[i], "[70, %lld, {}]", (long long)fake_msg_int(inv, 1));
        json_decref(inv);
    }
    json_t *res = fake_conn_next(caller);
    if (got >= 0) {
        ck_assert_int_eq(fake_msg_int(res, 0), WAMP_MSG_RESULT);
    }
    json_decref(res);
    return got;
}

START_TEST(test_pattern_precedence)
{
    /* The spec's example set ("Calls matching multiple registrations"), one callee each. */
    static const struct {
        const char *match, *uri;
    } regs[] = {
            {"exact", "a1.b2.c3.d4.e55"},     {"prefix", "a1.b2.c3"},
            {"prefix", "a1.b2.c3.d4"},        {"wildcard", "a1.b2..d4.e5"},
            {"wildcard", "a1.b2.c3..e5"},     {"wildcard", "a1.b2..d4.e5..g7"},
            {"wildcard", "a1.b2..d4..f6.g7"},
    };

    fake_conn *callees[7];
    char opts[64];
    for (int i = 0; i < 7; i++) {
        callees[i] = joined(WAMP_SER_JSON, "realm1");
        snprintf(opts, sizeof(opts), "{\"match\": \"%s\"}", regs[i].match);
        register_opts(callees[i], opts, regs[i].uri);
    }
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    char proc[64];
    ck_assert_int_eq(call_goes_to(caller, callees, 7, "a1.b2.c3.d4.e55", proc, sizeof(proc)), 0);
    ck_assert_str_eq(proc, ""); /* exact: no Details.procedure */
    ck_assert_int_eq(call_goes_to(caller, callees, 7, "a1.b2.c3.d98.e74", proc, sizeof(proc)), 1);
    ck_assert_str_eq(proc, "a1.b2.c3.d98.e74");
    ck_assert_int_eq(call_goes_to(caller, callees, 7, "a1.b2.c3.d4.e325", proc, sizeof(proc)), 2);
    ck_assert_int_eq(call_goes_to(caller, callees, 7, "a1.b2.c55.d4.e5", proc, sizeof(proc)), 3);
    ck_assert_str_eq(proc, "a1.b2.c55.d4.e5");
    /* Prefix registrations 1 and 2 match "a1.b2.c3..." URIs, so the wildcard cases of the spec
     * are checked once they are gone. */
    fake_conn_free(callees[1]);
    fake_conn_free(callees[2]);
    callees[1] = joined(WAMP_SER_JSON, "realm1");
    callees[2] = joined(WAMP_SER_JSON, "realm1");
    ck_assert_int_eq(call_goes_to(caller, callees, 7, "a1.b2.c3.d4.e5", proc, sizeof(proc)), 4);
    ck_assert_int_eq(call_goes_to(caller, callees, 7, "a1.b2.c88.d4.e5.f6.g7", proc, sizeof(proc)),
                     5);
    ck_assert_str_eq(proc, "a1.b2.c88.d4.e5.f6.g7");
    ck_assert_int_eq(call_goes_to(caller, callees, 7, "a2.b2.c2.d2.e2", proc, sizeof(proc)), -1);
    fake_conn_send(caller, "[48, 2, {}, \"a2.b2.c2.d2.e2\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 2, WAMP_ERROR_NO_SUCH_PROCEDURE);
    /* Enumeration for the meta API. */
    rt_dealer *d = rt_realm_dealer(rt_router_find_realm(T.rt, "realm1"));
    uint64_t wid = rt_dealer_lookup(d, "a1.b2..d4.e5", WAMP_MATCH_WILDCARD);
    ck_assert_uint_ne(wid, 0);
    ck_assert_uint_eq(rt_dealer_lookup(d, "a1.b2..d4.e5", WAMP_MATCH_PREFIX), 0);
    ck_assert_uint_eq(rt_dealer_match(d, "a1.b2.c55.d4.e5"), wid);
    rt_reg_info info;
    ck_assert(rt_dealer_get(d, wid, &info));
    ck_assert_str_eq(info.uri, "a1.b2..d4.e5");
    ck_assert_int_eq(info.match, WAMP_MATCH_WILDCARD);
    ck_assert_str_eq(info.invoke, "single");
    uint64_t ids[2];
    ck_assert_uint_eq(rt_dealer_callees(d, wid, ids, 2), 1);
    ck_assert_uint_eq(ids[0], rt_session_id(callees[3]->s));
    for (int i = 0; i < 7; i++) {
        fake_conn_free(callees[i]);
    }
    fake_conn_free(caller);
    ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 0);
}

END_TEST

START_TEST(test_pattern_register_errors)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(a, "[64, 1, {\"match\": \"regex\"}, \"com.x\"]");
    fake_expect_error(a, WAMP_MSG_REGISTER, 1, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(a, "[64, 2, {\"invoke\": \"all\"}, \"com.x\"]");
    fake_expect_error(a, WAMP_MSG_REGISTER, 2, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(a, "[64, 3, {}, \"com..x\"]"); /* empty component only in patterns */
    fake_expect_error(a, WAMP_MSG_REGISTER, 3, WAMP_ERROR_INVALID_URI);
    /* The same URI with different match policies: separate registrations. */
    int64_t r1 = register_opts(a, "{}", "com.x");
    int64_t r2 = register_opts(a, "{\"match\": \"prefix\"}", "com.x");
    int64_t r3 = register_opts(a, "{\"match\": \"wildcard\"}", "com..x");
    ck_assert_int_ne(r1, r2);
    ck_assert_int_ne(r2, r3);
    ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 3);
    fake_conn_send(a, "[66, 4, %lld]", (long long)r2);
    json_t *m = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_UNREGISTERED);
    json_decref(m);
    ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 2);
    fake_conn_free(a);
}

END_TEST

START_TEST(test_shared_registration_policies)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    fake_conn *c = joined(WAMP_SER_MSGPACK, "realm1");
    int64_t r = register_opts(a, "{\"invoke\": \"roundrobin\"}", "com.rr");
    ck_assert_int_eq(register_opts(b, "{\"invoke\": \"roundrobin\"}", "com.rr"), r);
    /* A different policy, or joining twice, is refused. */
    fake_conn_send(c, "[64, 5, {\"invoke\": \"random\"}, \"com.rr\"]");
    fake_expect_error(c, WAMP_MSG_REGISTER, 5, WAMP_ERROR_PROCEDURE_ALREADY_EXISTS);
    fake_conn_send(c, "[64, 6, {}, \"com.rr\"]");
    fake_expect_error(c, WAMP_MSG_REGISTER, 6, WAMP_ERROR_PROCEDURE_ALREADY_EXISTS);
    fake_conn_send(a, "[64, 7, {\"invoke\": \"roundrobin\"}, \"com.rr\"]");
    fake_expect_error(a, WAMP_MSG_REGISTER, 7, WAMP_ERROR_PROCEDURE_ALREADY_EXISTS);
    ck_assert_int_eq(register_opts(c, "{\"invoke\": \"roundrobin\"}", "com.rr"), r);
    ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 1);
    /* A second single registration is refused too. */
    register_opts(a, "{}", "com.one");
    fake_conn_send(b, "[64, 8, {\"invoke\": \"single\"}, \"com.one\"]");
    fake_expect_error(b, WAMP_MSG_REGISTER, 8, WAMP_ERROR_PROCEDURE_ALREADY_EXISTS);

    /* Roundrobin: a, b, c, a, b, c. */
    fake_conn *callees[3] = {a, b, c};
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    char proc[8];
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(call_goes_to(caller, callees, 3, "com.rr", proc, sizeof(proc)), i % 3);
    }
    /* first / last: by registration order, whoever registered first or last. */
    register_opts(b, "{\"invoke\": \"first\"}", "com.first");
    register_opts(c, "{\"invoke\": \"first\"}", "com.first");
    register_opts(b, "{\"invoke\": \"last\"}", "com.last");
    register_opts(c, "{\"invoke\": \"last\"}", "com.last");
    register_opts(a, "{\"invoke\": \"last\"}", "com.last");
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(call_goes_to(caller, callees, 3, "com.first", proc, sizeof(proc)), 1);
        ck_assert_int_eq(call_goes_to(caller, callees, 3, "com.last", proc, sizeof(proc)), 0);
    }
    /* The first callee leaving: the next one is first; the registration stays. */
    fake_conn_free(b);
    callees[1] = joined(WAMP_SER_JSON, "realm1");
    ck_assert_int_eq(call_goes_to(caller, callees, 3, "com.first", proc, sizeof(proc)), 2);
    /* Unregistering the last one: the one before becomes last. */
    rt_dealer *d = rt_realm_dealer(rt_router_find_realm(T.rt, "realm1"));
    uint64_t last_id = rt_dealer_lookup(d, "com.last", WAMP_MATCH_EXACT);
    fake_conn_send(a, "[66, 9, %llu]", (unsigned long long)last_id);
    fake_conn_clear(a);
    ck_assert_int_eq(call_goes_to(caller, callees, 3, "com.last", proc, sizeof(proc)), 2);
    /* random: every call reaches one of the members, all of them over many calls. */
    register_opts(a, "{\"invoke\": \"random\"}", "com.rnd");
    register_opts(c, "{\"invoke\": \"random\"}", "com.rnd");
    int hits[3] = {0, 0, 0};
    for (int i = 0; i < 60; i++) {
        int got = call_goes_to(caller, callees, 3, "com.rnd", proc, sizeof(proc));
        ck_assert(got == 0 || got == 2);
        hits[got]++;
    }
    ck_assert_int_gt(hits[0], 0);
    ck_assert_int_gt(hits[2], 0);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    fake_conn_free(callees[0]);
    fake_conn_free(callees[1]);
    fake_conn_free(callees[2]);
    fake_conn_free(caller);
    ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 0);
}

END_TEST

/* A session's membership of a registration is found from whichever side is shorter (the
 * registration's callees, or the session's registrations): both give the same answers. */
START_TEST(test_unregister_found_from_either_side)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    int64_t rr = register_opts(a, "{\"invoke\": \"roundrobin\"}", "com.rr");
    int64_t own = register_opts(a, "{}", "com.own0");
    for (int i = 1; i < 4; i++) {
        char proc[16];
        snprintf(proc, sizeof(proc), "com.own%d", i);
        register_opts(a, "{}", proc);
    }
    ck_assert_int_eq(register_opts(b, "{\"invoke\": \"roundrobin\"}", "com.rr"), rr);
    fake_conn_send(b, "[66, 1, %lld]", (long long)own); /* b is not a callee of it */
    fake_expect_error(b, WAMP_MSG_UNREGISTER, 1, WAMP_ERROR_NO_SUCH_REGISTRATION);
    for (int i = 0; i < 2; i++) {
        fake_conn_send(a, "[66, 2, %lld]", (long long)rr);
        if (i == 0) {
            json_t *m = fake_conn_next(a);
            ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_UNREGISTERED);
            json_decref(m);
        } else {
            fake_expect_error(a, WAMP_MSG_UNREGISTER, 2, WAMP_ERROR_NO_SUCH_REGISTRATION);
        }
    }
    fake_conn *callees[2] = {a, b};
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    char proc[8];
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(call_goes_to(caller, callees, 2, "com.rr", proc, sizeof(proc)), 1);
    }
    fake_conn_send(b, "[66, 3, %lld]", (long long)rr);
    json_t *m = fake_conn_next(b);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_UNREGISTERED);
    json_decref(m);
    fake_conn_send(b, "[66, 4, %lld]", (long long)rr); /* the registration is gone */
    fake_expect_error(b, WAMP_MSG_UNREGISTER, 4, WAMP_ERROR_NO_SUCH_REGISTRATION);
    ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 4);
    fake_conn_free(a);
    fake_conn_free(b);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_progressive_results)
{
    fake_conn *callee = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    int64_t reg = do_register(callee, "com.prog");
    fake_conn_send(caller, "[48, 9, {\"receive_progress\": true}, \"com.prog\", [1]]");
    json_t *inv = expect_invocation(callee, reg);
    ck_assert(json_is_true(json_object_get(json_array_get(inv, 3), "receive_progress")));
    long long id = (long long)fake_msg_int(inv, 1);
    json_decref(inv);
    for (int i = 0; i < 2; i++) {
        fake_conn_send(callee, "[70, %lld, {\"progress\": true}, [%d]]", id, i);
        json_t *res = fake_conn_next(caller);
        json_t *expect = json_pack("[i, i, {s:b}, [i]]", WAMP_MSG_RESULT, 9, "progress", 1, i);
        ck_assert(json_equal(res, expect));
        json_decref(res);
        json_decref(expect);
        ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 1);
    }
    fake_conn_send(callee, "[70, %lld, {}, [\"done\"]]", id);
    json_t *res = fake_conn_next(caller);
    json_t *expect = json_pack("[i, i, {}, [s]]", WAMP_MSG_RESULT, 9, "done");
    ck_assert(json_equal(res, expect));
    json_decref(res);
    json_decref(expect);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);

    /* Without receive_progress: progressive YIELDs are not forwarded, the final one is. */
    fake_conn_send(caller, "[48, 10, {}, \"com.prog\"]");
    inv = expect_invocation(callee, reg);
    ck_assert_ptr_null(json_object_get(json_array_get(inv, 3), "receive_progress"));
    id = (long long)fake_msg_int(inv, 1);
    json_decref(inv);
    fake_conn_send(callee, "[70, %lld, {\"progress\": true}, [0]]", id);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_conn_send(callee, "[70, %lld, {}, [1]]", id);
    res = fake_conn_next(caller);
    ck_assert_int_eq(fake_msg_int(res, 0), WAMP_MSG_RESULT);
    ck_assert_int_eq(fake_msg_int(res, 1), 10);
    json_decref(res);

    /* An ERROR after progress ends the call; the callee leaving mid-progress cancels it. */
    fake_conn_send(caller, "[48, 11, {\"receive_progress\": true}, \"com.prog\"]");
    inv = expect_invocation(callee, reg);
    id = (long long)fake_msg_int(inv, 1);
    json_decref(inv);
    fake_conn_send(callee, "[70, %lld, {\"progress\": true}, [0]]", id);
    fake_conn_clear(caller);
    fake_conn_send(callee, "[8, 68, %lld, {}, \"com.failed\"]", id);
    fake_expect_error(caller, WAMP_MSG_CALL, 11, "com.failed");
    fake_conn_send(caller, "[48, 12, {\"receive_progress\": true}, \"com.prog\"]");
    inv = expect_invocation(callee, reg);
    fake_conn_send(callee, "[70, %lld, {\"progress\": true}, [0]]",
                   (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    fake_conn_clear(caller);
    fake_conn_free(callee);
    fake_expect_error(caller, WAMP_MSG_CALL, 12, WAMP_ERROR_CANCELED);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    fake_conn_free(caller);
}

END_TEST

/* Makes a call from caller to proc; returns the INVOCATION.Request the callee got. */
static long long start_call(fake_conn *caller, fake_conn *callee, int request, const char *opts,
                            const char *proc)
{
    fake_conn_send(caller, "[48, %d, %s, \"%s\"]", request, opts, proc);
    json_t *inv = fake_conn_next(callee);
    ck_assert_int_eq(fake_msg_int(inv, 0), WAMP_MSG_INVOCATION);
    long long id = (long long)fake_msg_int(inv, 1);
    json_decref(inv);
    return id;
}

static void expect_interrupt(fake_conn *callee, long long inv, const char *mode)
{
    json_t *m = fake_conn_next(callee);
    ck_assert_ptr_nonnull(m);
    json_t *expect = json_pack("[i, I, {s:s}]", WAMP_MSG_INTERRUPT, (json_int_t)inv, "mode", mode);
    ck_assert(json_equal(m, expect));
    json_decref(m);
    json_decref(expect);
}

START_TEST(test_shared_registration_skips_closing_callee)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    register_opts(a, "{\"invoke\": \"roundrobin\"}", "com.rr");
    register_opts(b, "{\"invoke\": \"roundrobin\"}", "com.rr");
    long long first = start_call(caller, a, 1, "{}", "com.rr"); /* a served: b is next */
    fake_conn_send(a, "[70, %lld, {}]", first);
    fake_conn_clear(caller);
    /* b breaks the protocol: closed, but its transport has not reported the close yet. */
    fake_conn_send_raw(b, "not json", 8);
    ck_assert_int_eq(rt_session_state_get(b->s), RT_SESSION_CLOSED);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    (void)start_call(caller, a, 2, "{}", "com.rr"); /* goes to a, not an ERROR */
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_conn_free(b);
    fake_conn_free(a);
    fake_expect_error(caller, WAMP_MSG_CALL, 2, WAMP_ERROR_CANCELED); /* a left with it */
    fake_conn_free(caller);
}

END_TEST

/* A closing member (its transport has not reported the close yet) is passed over the way its
 * policy would: last goes to the newest other member, roundrobin keeps taking turns. */
START_TEST(test_closing_callee_passed_over_by_policy)
{
    fake_conn *last[3], *rr[3];
    for (int i = 0; i < 3; i++) {
        last[i] = joined(WAMP_SER_JSON, "realm1");
        register_opts(last[i], "{\"invoke\": \"last\"}", "com.last");
        rr[i] = joined(WAMP_SER_JSON, "realm1");
        register_opts(rr[i], "{\"invoke\": \"roundrobin\"}", "com.rr");
    }
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    char proc[8];
    /* The closing members' queues are not read: reading them reports them closed. */
    fake_conn_send_raw(last[2], "not json", 8); /* the newest is closing */
    ck_assert_int_eq(call_goes_to(caller, last, 2, "com.last", proc, sizeof(proc)), 1);
    fake_conn_send_raw(rr[0], "not json", 8); /* roundrobin's next is closing */
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(call_goes_to(caller, rr + 1, 2, "com.rr", proc, sizeof(proc)), i % 2);
    }
    fake_conn_free(caller);
    for (int i = 0; i < 3; i++) {
        fake_conn_free(last[i]);
        fake_conn_free(rr[i]);
    }
}

END_TEST

START_TEST(test_cancel_modes)
{
    fake_conn *callee = joined_canceling(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    do_register(callee, "com.long");

    /* skip: ERROR now, nothing to the callee, its late answer dropped. */
    long long inv = start_call(caller, callee, 1, "{}", "com.long");
    fake_conn_send(caller, "[49, 1, {\"mode\": \"skip\"}]");
    fake_expect_error(caller, WAMP_MSG_CALL, 1, WAMP_ERROR_CANCELED);
    ck_assert_uint_eq(fake_conn_pending(callee), 0);
    fake_conn_send(callee, "[70, %lld, {}, [\"late\"]]", inv);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);

    /* killnowait (also the default): INTERRUPT and ERROR now, the callee's ERROR dropped. */
    for (int i = 0; i < 2; i++) {
        inv = start_call(caller, callee, 2, "{}", "com.long");
        fake_conn_send(caller, i ? "[49, 2, {}]" : "[49, 2, {\"mode\": \"killnowait\"}]");
        expect_interrupt(callee, inv, "killnowait");
        fake_expect_error(caller, WAMP_MSG_CALL, 2, WAMP_ERROR_CANCELED);
        fake_conn_send(callee, "[8, 68, %lld, {}, \"wamp.error.canceled\"]", inv);
        ck_assert_uint_eq(fake_conn_pending(caller), 0);
        ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    }

    /* kill: INTERRUPT, and the callee's answer (here ERROR) ends the call; a second CANCEL and
     * progress in between are ignored. */
    inv = start_call(caller, callee, 3, "{\"receive_progress\": true}", "com.long");
    fake_conn_send(caller, "[49, 3, {\"mode\": \"kill\"}]");
    expect_interrupt(callee, inv, "kill");
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_conn_send(caller, "[49, 3, {\"mode\": \"kill\"}]");
    ck_assert_uint_eq(fake_conn_pending(callee), 0);
    fake_conn_send(callee, "[70, %lld, {\"progress\": true}, [1]]", inv);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_conn_send(callee, "[8, 68, %lld, {}, \"wamp.error.canceled\", [\"stopped\"]]", inv);
    fake_expect_error(caller, WAMP_MSG_CALL, 3, WAMP_ERROR_CANCELED);
    /* kill racing a RESULT: the caller gets the RESULT. */
    inv = start_call(caller, callee, 4, "{}", "com.long");
    fake_conn_send(caller, "[49, 4, {\"mode\": \"kill\"}]");
    expect_interrupt(callee, inv, "kill");
    fake_conn_send(callee, "[70, %lld, {}, [\"finished\"]]", inv);
    json_t *res = fake_conn_next(caller);
    ck_assert_int_eq(fake_msg_int(res, 0), WAMP_MSG_RESULT);
    json_decref(res);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);

    /* CANCEL of a finished call: ignored. A bad mode: protocol violation. */
    fake_conn_send(caller, "[49, 4, {\"mode\": \"kill\"}]");
    ck_assert_uint_eq(fake_conn_pending(caller) + fake_conn_pending(callee), 0);
    fake_conn_send(caller, "[49, 4, {\"mode\": \"abort\"}]");
    fake_expect_abort(caller, WAMP_ERROR_PROTOCOL_VIOLATION);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

START_TEST(test_cancel_finds_its_call)
{
    /* Two callers use the same request ids; each CANCEL reaches only its own call, among many
     * pending ones. */
    fake_conn *callee = joined_canceling(WAMP_SER_JSON, "realm1");
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_MSGPACK, "realm1");
    do_register(callee, "com.long");
    long long inv_a[50], inv_b[50];
    for (int i = 0; i < 50; i++) {
        inv_a[i] = start_call(a, callee, i + 1, "{}", "com.long");
        inv_b[i] = start_call(b, callee, i + 1, "{}", "com.long");
    }
    fake_conn_send(b, "[49, 17, {\"mode\": \"killnowait\"}]");
    expect_interrupt(callee, inv_b[16], "killnowait");
    fake_expect_error(b, WAMP_MSG_CALL, 17, WAMP_ERROR_CANCELED);
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    fake_conn_send(a, "[49, 17, {\"mode\": \"killnowait\"}]");
    expect_interrupt(callee, inv_a[16], "killnowait");
    fake_expect_error(a, WAMP_MSG_CALL, 17, WAMP_ERROR_CANCELED);
    /* A's call 18 still completes normally. */
    fake_conn_send(callee, "[70, %lld, {}, [18]]", inv_a[17]);
    json_t *res = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(res, 0), WAMP_MSG_RESULT);
    ck_assert_int_eq(fake_msg_int(res, 1), 18);
    json_decref(res);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 97); /* the canceled two freed */
    fake_conn_free(a);
    fake_conn_free(b);
    fake_conn_free(callee);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
}

END_TEST

START_TEST(test_cancel_callee_without_call_canceling)
{
    /* A callee that did not announce call_canceling is never interrupted: kill acts as skip. */
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    do_register(callee, "com.long");
    const char *modes[] = {"kill", "killnowait", "skip"};
    for (int i = 0; i < 3; i++) {
        long long inv = start_call(caller, callee, 10 + i, "{}", "com.long");
        fake_conn_send(caller, "[49, %d, {\"mode\": \"%s\"}]", 10 + i, modes[i]);
        fake_expect_error(caller, WAMP_MSG_CALL, 10 + i, WAMP_ERROR_CANCELED);
        ck_assert_uint_eq(fake_conn_pending(callee), 0);
        fake_conn_send(callee, "[70, %lld, {}]", inv);
        ck_assert_uint_eq(fake_conn_pending(caller), 0);
    }
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

START_TEST(test_caller_leaving_interrupts_canceling_callee)
{
    fake_conn *callee = joined_canceling(WAMP_SER_JSON, "realm1");
    fake_conn *plain = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    do_register(callee, "com.a");
    do_register(plain, "com.b");
    long long inv = start_call(caller, callee, 1, "{}", "com.a");
    long long inv_b = start_call(caller, plain, 2, "{}", "com.b");
    fake_conn_free(caller);
    expect_interrupt(callee, inv, "killnowait");
    ck_assert_uint_eq(fake_conn_pending(plain), 0);
    fake_conn_send(callee, "[8, 68, %lld, {}, \"wamp.error.canceled\"]", inv);
    fake_conn_send(plain, "[70, %lld, {}]", inv_b);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    ck_assert_ptr_nonnull(callee->s);
    ck_assert_ptr_nonnull(plain->s);
    fake_conn_free(callee);
    fake_conn_free(plain);
}

END_TEST

START_TEST(test_leaving_with_progressive_and_canceled_calls)
{
    fake_conn *callee = joined_canceling(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *other = joined(WAMP_SER_JSON, "realm1");
    do_register(callee, "com.prog");
    /* The caller leaves mid-progress: the callee is interrupted, the call is gone at once,
     * and its later progress and final answer are dropped. */
    long long inv = start_call(caller, callee, 1, "{\"receive_progress\": true}", "com.prog");
    fake_conn_send(callee, "[70, %lld, {\"progress\": true}, [1]]", inv);
    ck_assert_uint_eq(fake_conn_pending(caller), 1);
    fake_conn_free(caller);
    expect_interrupt(callee, inv, "killnowait");
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    fake_conn_send(callee, "[70, %lld, {\"progress\": true}, [2]]", inv);
    fake_conn_send(callee, "[70, %lld, {}, [3]]", inv);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->answers_dropped, 2);
    ck_assert_ptr_nonnull(callee->s);
    /* The callee leaves while a kill is pending and after a skipped call (gone at once): the
     * killed call's caller gets canceled, the skipped one hears nothing more. */
    long long inv_kill = start_call(other, callee, 2, "{}", "com.prog");
    (void)start_call(other, callee, 3, "{}", "com.prog");
    fake_conn_send(other, "[49, 2, {\"mode\": \"kill\"}]");
    expect_interrupt(callee, inv_kill, "kill");
    fake_conn_send(other, "[49, 3, {\"mode\": \"skip\"}]");
    fake_expect_error(other, WAMP_MSG_CALL, 3, WAMP_ERROR_CANCELED);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 1);
    fake_conn_free(callee);
    fake_expect_error(other, WAMP_MSG_CALL, 2, WAMP_ERROR_CANCELED);
    ck_assert_uint_eq(fake_conn_pending(other), 0);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    /* A caller leaving after a kill: the callee is not interrupted twice. */
    fake_conn *callee2 = joined_canceling(WAMP_SER_JSON, "realm1");
    do_register(callee2, "com.prog2");
    inv = start_call(other, callee2, 4, "{}", "com.prog2");
    fake_conn_send(other, "[49, 4, {\"mode\": \"kill\"}]");
    expect_interrupt(callee2, inv, "kill");
    fake_conn_free(other);
    ck_assert_uint_eq(fake_conn_pending(callee2), 0);
    fake_conn_free(callee2);
}

END_TEST

START_TEST(test_call_timeout)
{
    fake_conn *callee = joined_canceling(WAMP_SER_JSON, "realm1");
    fake_conn *plain = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    do_register(callee, "com.slow");
    do_register(plain, "com.plain");
    long long inv = start_call(caller, callee, 1, "{\"timeout\": 500}", "com.slow");
    long long inv2 = start_call(caller, plain, 2, "{\"timeout\": 300}", "com.plain");
    (void)start_call(caller, callee, 3, "{\"timeout\": 0}", "com.slow"); /* 0 = none */
    fake_clock_advance_ms(&T.clock, 299);
    rt_router_tick(T.rt);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_clock_advance_ms(&T.clock, 1);
    rt_router_tick(T.rt);
    /* The plain callee is not interrupted; the caller gets wamp.error.timeout. */
    fake_expect_error(caller, WAMP_MSG_CALL, 2, WAMP_ERROR_TIMEOUT);
    ck_assert_uint_eq(fake_conn_pending(plain), 0);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_clock_advance_ms(&T.clock, 200);
    rt_router_tick(T.rt);
    fake_expect_error(caller, WAMP_MSG_CALL, 1, WAMP_ERROR_TIMEOUT);
    expect_interrupt(callee, inv, "killnowait");
    /* Late answers are dropped; the call without timeout stays. */
    fake_conn_send(callee, "[8, 68, %lld, {}, \"wamp.error.canceled\"]", inv);
    fake_conn_send(plain, "[70, %lld, {}]", inv2);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 1);
    fake_clock_advance_ms(&T.clock, 100000);
    rt_router_tick(T.rt);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    /* A call answered in time is not touched by its old deadline. */
    long long inv4 = start_call(caller, plain, 4, "{\"timeout\": 100}", "com.plain");
    fake_conn_send(plain, "[70, %lld, {}]", inv4);
    fake_conn_clear(caller);
    fake_clock_advance_ms(&T.clock, 200);
    rt_router_tick(T.rt);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    /* Out-of-order deadlines and the configured cap (wampscope.limits.max_call_timeout). */
    T.cfg.limits.max_call_timeout_ms = 1000;
    (void)start_call(caller, plain, 5, "{\"timeout\": 100000}", "com.plain"); /* capped: 1 s */
    (void)start_call(caller, plain, 6, "{\"timeout\": 400}", "com.plain");
    fake_clock_advance_ms(&T.clock, 400);
    rt_router_tick(T.rt);
    fake_expect_error(caller, WAMP_MSG_CALL, 6, WAMP_ERROR_TIMEOUT);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_clock_advance_ms(&T.clock, 600);
    rt_router_tick(T.rt);
    fake_expect_error(caller, WAMP_MSG_CALL, 5, WAMP_ERROR_TIMEOUT);
    /* Without a configured cap, a huge timeout is held at 2^32-1 ms (no overflow). */
    T.cfg.limits.max_call_timeout_ms = 0;
    (void)start_call(caller, plain, 10, "{\"timeout\": 9007199254740992}", "com.plain");
    fake_clock_advance_ms(&T.clock, 4294967294u);
    rt_router_tick(T.rt);
    ck_assert_uint_eq(fake_conn_pending(caller), 0);
    fake_clock_advance_ms(&T.clock, 1);
    rt_router_tick(T.rt);
    fake_expect_error(caller, WAMP_MSG_CALL, 10, WAMP_ERROR_TIMEOUT);
    /* A bad timeout is an invalid argument. */
    fake_conn_send(caller, "[48, 7, {\"timeout\": -1}, \"com.plain\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 7, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(caller, "[48, 8, {\"timeout\": \"soon\"}, \"com.plain\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 8, WAMP_ERROR_INVALID_ARGUMENT);
    /* The caller leaving with a timed call pending: nothing fires later. */
    (void)start_call(caller, plain, 9, "{\"timeout\": 100}", "com.plain");
    fake_conn_free(caller);
    fake_clock_advance_ms(&T.clock, 200);
    rt_router_tick(T.rt);
    fake_conn_free(callee);
    fake_conn_free(plain);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
}

END_TEST

/* CANCEL kill interrupted the call already; its deadline passing ends the call for the caller
 * without a second INTERRUPT, as the caller leaving does (spec "Call Timeouts": the mode is
 * killnowait, and a killnowait after a kill tells the callee nothing new). */
START_TEST(test_timeout_after_kill_interrupts_once)
{
    fake_conn *callee = joined_canceling(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    do_register(callee, "com.slow");
    long long inv = start_call(caller, callee, 1, "{\"timeout\": 500}", "com.slow");
    fake_conn_send(caller, "[49, 1, {\"mode\": \"kill\"}]");
    expect_interrupt(callee, inv, "kill");
    fake_clock_advance_ms(&T.clock, 500);
    rt_router_tick(T.rt);
    fake_expect_error(caller, WAMP_MSG_CALL, 1, WAMP_ERROR_TIMEOUT);
    ck_assert_uint_eq(fake_conn_pending(callee), 0);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

/* Deadlines in any order, some calls answered or canceled before theirs: each call times out at
 * its own deadline, in deadline order, and only the calls still pending do. */
START_TEST(test_timeouts_in_any_order)
{
    enum {
        N = 120
    };

    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    do_register(callee, "com.slow");
    long long inv[N];
    for (int i = 0; i < N; i++) {
        char opts[32];
        snprintf(opts, sizeof(opts), "{\"timeout\": %d}", ((i * 37) % N + 1) * 10);
        inv[i] = start_call(caller, callee, i + 1, opts, "com.slow");
    }
    for (int i = 0; i < N; i += 3) {
        fake_conn_send(callee, "[70, %lld, {}]", inv[i]); /* answered */
    }
    for (int i = 1; i < N; i += 7) {
        fake_conn_send(caller, "[49, %d, {\"mode\": \"skip\"}]", i + 1); /* canceled */
    }
    fake_conn_clear(caller);
    int fired = 0;
    for (int step = 1; step <= N; step++) {
        fake_clock_advance_ms(&T.clock, 10);
        rt_router_tick(T.rt);
        /* The call whose timeout is step * 10 ms: i with (i * 37) % N + 1 == step. */
        int i = 0;
        while ((i * 37) % N + 1 != step) {
            i++;
        }
        if (i % 3 == 0 || i % 7 == 1) {
            ck_assert_uint_eq(fake_conn_pending(caller), 0);
            continue;
        }
        fake_expect_error(caller, WAMP_MSG_CALL, (uint64_t)i + 1, WAMP_ERROR_TIMEOUT);
        ck_assert_uint_eq(fake_conn_pending(caller), 0);
        fired++;
    }
    ck_assert_int_gt(fired, N / 2);
    ck_assert_uint_eq(test_router_call_count(T.rt, "realm1"), 0);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

START_TEST(test_caller_identification)
{
    fake_conn *callee = joined(WAMP_SER_JSON, "locked");
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "locked");
    int64_t r1 = do_register(callee, "com.open.exact");
    int64_t r2 = do_register(callee, "com.open.disclosed.p");
    /* Not disclosed by default. */
    fake_conn_send(caller, "[48, 1, {}, \"com.open.exact\"]");
    json_t *inv = expect_invocation(callee, r1);
    ck_assert_ptr_null(json_object_get(json_array_get(inv, 3), "caller"));
    json_decref(inv);
    /* disclose_me, and the role permission's disclose.caller, disclose it. */
    for (int i = 0; i < 2; i++) {
        fake_conn_send(caller, "[48, 2, %s, \"%s\"]", i ? "{}" : "{\"disclose_me\": true}",
                       i ? "com.open.disclosed.p" : "com.open.exact");
        inv = expect_invocation(callee, i ? r2 : r1);
        json_t *det = json_array_get(inv, 3);
        ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(det, "caller")),
                          rt_session_id(caller->s));
        ck_assert_str_eq(json_string_value(json_object_get(det, "caller_authid")),
                         rt_session_authid(caller->s));
        ck_assert_str_eq(json_string_value(json_object_get(det, "caller_authrole")), "anonymous");
        json_decref(inv);
    }
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

START_TEST(test_local_procedure_with_patterns)
{
    /* A client's prefix registration does not shadow an exact router-local procedure. */
    int calls = 0;
    rt_dealer *d = rt_realm_dealer(rt_router_find_realm(T.rt, "realm1"));
    ck_assert_int_eq(rt_dealer_register_local(d, "wampscope.echo", local_echo, &calls), WAMP_OK);
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    register_opts(callee, "{\"match\": \"prefix\"}", "wampscope.");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(caller, "[48, 1, {}, \"wampscope.echo\", [1]]");
    json_t *res = fake_conn_next(caller);
    ck_assert_int_eq(fake_msg_int(res, 0), WAMP_MSG_RESULT);
    json_decref(res);
    ck_assert_int_eq(calls, 1);
    ck_assert_uint_eq(fake_conn_pending(callee), 0);
    fake_conn_send(caller, "[48, 2, {}, \"wampscope.other\"]");
    ck_assert_uint_eq(fake_conn_pending(callee), 1);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* --- Payloads as bytes ------------------------------------------------------------------------ */

/* The envelope of frame b (in ser): its request id (element 1). */
static uint64_t frame_id(wamp_ser ser, const wamp_buf *b, int type)
{
    wamp_msg m;
    char why[WAMP_WHY_LEN] = "";
    ck_assert_msg(wamp_msg_parse_bytes(ser, wamp_buf_cdata(b), wamp_buf_len(b), &m, why,
                                       sizeof(why)) == WAMP_OK,
                  "%s", why);
    ck_assert_int_eq(m.type, type);
    uint64_t id = m.id;
    wamp_msg_fini(&m);
    return id;
}

#define BYTES(s) (s), (sizeof(s) - 1)

/* A JSON caller's 2^64-1 and a NUL key reach a CBOR callee (and back) value-exact; a MessagePack
 * caller's payload reaches a MessagePack callee byte-exact. */
START_TEST(test_payload_exact_across_serializers)
{
    fake_conn *callee = joined(WAMP_SER_CBOR, "realm1");
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    do_register(callee, "com.p");
    const char call[] =
            "[48,7,{},\"com.p\",[18446744073709551615],{\"k\\u0000\":-9223372036854775808}]";
    ck_assert_int_eq(fake_conn_send_raw(caller, BYTES(call)), WAMP_OK);
    wamp_buf *inv = fake_conn_next_raw(callee);
    fake_assert_tail(inv,
                     BYTES("\x81\x1b\xff\xff\xff\xff\xff\xff\xff\xff"
                           "\xa1\x62k\x00\x3b\x7f\xff\xff\xff\xff\xff\xff\xff"),
                     "INVOCATION to cbor");
    uint64_t inv_id = frame_id(WAMP_SER_CBOR, inv, WAMP_MSG_INVOCATION);
    wamp_buf_unref(&inv);
    /* YIELD [70, inv_id, {}, [2^64-1, "a\0b"]] in CBOR. */
    unsigned char y[64];
    size_t n = 0;
    y[n++] = 0x84;
    y[n++] = 0x18;
    y[n++] = 70;
    y[n++] = 0x1b;
    for (int i = 7; i >= 0; i--) {
        y[n++] = (unsigned char)(inv_id >> (8 * i));
    }
    memcpy(y + n,
           "\xa0\x82\x1b\xff\xff\xff\xff\xff\xff\xff\xff\x63"
           "a\x00"
           "b",
           15);
    n += 15;
    ck_assert_int_eq(fake_conn_send_raw(callee, y, n), WAMP_OK);
    wamp_buf *res = fake_conn_next_raw(caller);
    fake_assert_tail(res, BYTES("{},[18446744073709551615,\"a\\u0000b\"]]"), "RESULT to json");
    wamp_buf_unref(&res);

    /* MessagePack to MessagePack: the caller's own bytes. */
    fake_conn *mcallee = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *mcaller = joined(WAMP_SER_MSGPACK, "realm1");
    do_register(mcallee, "com.m");
    const char payload[] = "\x92\xcf\xff\xff\xff\xff\xff\xff\xff\xff\xa3"
                           "a\x00"
                           "b"
                           "\x81\xa2k\x00\xc4\x02\x01\x02";
    unsigned char mcall[64] = "\x96\x30\x08\x80\xa5"
                              "com.m";
    memcpy(mcall + 10, payload, sizeof(payload) - 1);
    ck_assert_int_eq(fake_conn_send_raw(mcaller, mcall, 10 + sizeof(payload) - 1), WAMP_OK);
    inv = fake_conn_next_raw(mcallee);
    fake_assert_tail(inv, BYTES(payload), "INVOCATION msgpack");
    wamp_buf_unref(&inv);
    fake_conn_free(callee);
    fake_conn_free(caller);
    fake_conn_free(mcallee);
    fake_conn_free(mcaller);
}

END_TEST

/* Answers [length of args[0], length of the one kwargs key]. */
static wamp_err local_keylen(void *ctx, rt_session *caller, const json_t *args,
                             const json_t *kwargs, rt_local_reply *reply)
{
    (void)ctx;
    (void)caller;
    void *it = json_object_iter((json_t *)(uintptr_t)kwargs);
    reply->args = json_pack("[I, I]", (json_int_t)json_string_length(json_array_get(args, 0)),
                            (json_int_t)(it ? json_object_iter_key_len(it) : 0));
    return reply->args ? WAMP_OK : WAMP_ENOMEM;
}

/* A router procedure cannot read 2^64-1: ERROR wamp.error.invalid_argument naming it, and the
 * session goes on. */
START_TEST(test_local_procedure_unrepresentable_argument)
{
    int calls = 0;
    rt_dealer *d = rt_realm_dealer(rt_router_find_realm(T.rt, "realm1"));
    ck_assert_int_eq(rt_dealer_register_local(d, "wampscope.echo", local_echo, &calls), WAMP_OK);
    fake_conn *caller = joined(WAMP_SER_JSON, "realm1");
    const char call[] = "[48,9,{},\"wampscope.echo\",[1,{\"a\":18446744073709551615}]]";
    ck_assert_int_eq(fake_conn_send_raw(caller, BYTES(call)), WAMP_OK);
    json_t *err = fake_conn_next(caller);
    ck_assert_int_eq(fake_msg_int(err, 0), WAMP_MSG_ERROR);
    ck_assert_int_eq(fake_msg_int(err, 2), 9);
    ck_assert_str_eq(fake_msg_str(err, 4), WAMP_ERROR_INVALID_ARGUMENT);
    const char *msg = json_string_value(json_array_get(json_array_get(err, 5), 0));
    ck_assert_ptr_nonnull(strstr(msg, "18446744073709551615"));
    json_decref(err);
    ck_assert_int_eq(calls, 0);
    /* NUL in values and keys is fine for it (jansson keys with a length). */
    ck_assert_int_eq(rt_dealer_register_local(d, "wampscope.keylen", local_keylen, NULL), WAMP_OK);
    const char ok[] = "[48,10,{},\"wampscope.keylen\",[\"x\\u0000y\"],{\"k\\u0000\":2}]";
    ck_assert_int_eq(fake_conn_send_raw(caller, BYTES(ok)), WAMP_OK);
    wamp_buf *res = fake_conn_next_raw(caller);
    fake_assert_tail(res, BYTES("{},[3,2]]"), "local RESULT");
    wamp_buf_unref(&res);
    ck_assert_int_eq(calls, 0);
    fake_conn_free(caller);
}

END_TEST

/* A joined session announcing payload_passthru_mode for every role (or none when ppt false). */
static fake_conn *joined_ppt(wamp_ser ser, bool ppt)
{
    return fake_conn_new_ppt(T.rt, ser, ppt, "caller", "callee", "dealer");
}

/* Payload passthru mode: ppt_* options travel CALL -> INVOCATION and YIELD -> RESULT with the
 * payload untouched; a callee that did not announce it is refused; bad ppt options are an
 * invalid_argument; an unannounced use is a protocol violation. */
START_TEST(test_payload_passthru)
{
    fake_conn *callee = joined_ppt(WAMP_SER_MSGPACK, true);
    fake_conn *caller = joined_ppt(WAMP_SER_JSON, true);
    int64_t reg = do_register(callee, "com.ppt");
    fake_conn_send(caller, "[48, 1, {\"ppt_scheme\": \"x_test\", \"ppt_serializer\": \"cbor\", "
                           "\"ppt_cipher\": \"xsalsa20poly1305\", \"ppt_keyid\": \"k1\"}, "
                           "\"com.ppt\", [\"\\u0000AQID\"]]");
    json_t *inv = fake_conn_next(callee);
    json_t *want = json_pack("[i, I, I, {s:s, s:s, s:s, s:s}, [s#]]", WAMP_MSG_INVOCATION,
                             fake_msg_int(inv, 1), (json_int_t)reg, "ppt_scheme", "x_test",
                             "ppt_serializer", "cbor", "ppt_cipher", "xsalsa20poly1305",
                             "ppt_keyid", "k1", "\0AQID", (size_t)5);
    ck_assert_msg(json_equal(inv, want), "INVOCATION differs");
    json_decref(want);
    fake_conn_send(callee,
                   "[70, %lld, {\"ppt_scheme\": \"x_test\", \"ppt_keyid\": \"k2\"}, "
                   "[\"\\u0000BAU=\"]]",
                   (long long)fake_msg_int(inv, 1));
    json_decref(inv);
    json_t *res = fake_conn_next(caller);
    want = json_pack("[i, i, {s:s, s:s}, [s#]]", WAMP_MSG_RESULT, 1, "ppt_scheme", "x_test",
                     "ppt_keyid", "k2", "\0BAU=", (size_t)5);
    ck_assert_msg(json_equal(res, want), "RESULT differs");
    json_decref(res);
    json_decref(want);

    fake_conn_send(caller, "[48, 2, {\"ppt_serializer\": \"cbor\"}, \"com.ppt\", []]");
    fake_expect_error(caller, WAMP_MSG_CALL, 2, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(caller, "[48, 3, {\"ppt_scheme\": 1}, \"com.ppt\", []]");
    fake_expect_error(caller, WAMP_MSG_CALL, 3, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(caller, "[48, 4, {\"ppt_scheme\": \"x\", \"ppt_other\": \"y\"}, \"com.ppt\"]");
    fake_expect_error(caller, WAMP_MSG_CALL, 4, WAMP_ERROR_INVALID_ARGUMENT);

    fake_conn *plain = joined_ppt(WAMP_SER_JSON, false);
    do_register(plain, "com.plain");
    fake_conn_send(caller, "[48, 5, {\"ppt_scheme\": \"mqtt\"}, \"com.plain\", [\"\\u0000AA==\"]]");
    fake_expect_error(caller, WAMP_MSG_CALL, 5, WAMP_ERROR_FEATURE_NOT_SUPPORTED);
    ck_assert_uint_eq(fake_conn_pending(plain), 0);
    fake_conn_send(plain, "[48, 6, {\"ppt_scheme\": \"mqtt\"}, \"com.ppt\", [\"\\u0000AA==\"]]");
    fake_expect_abort(plain, WAMP_ERROR_PROTOCOL_VIOLATION);
    ck_assert_uint_eq(fake_conn_pending(callee), 0);
    fake_conn_free(plain);
    fake_conn_free(callee);
    fake_conn_free(caller);
}

END_TEST

/* Options of the wrong type, the router acting on them or not, and strings with NUL: CALL and
 * REGISTER get ERROR invalid_argument naming the option; CANCEL and YIELD (no reply to carry
 * an ERROR) are protocol violations. */
START_TEST(test_wrongly_typed_options)
{
    fake_conn *callee = joined_canceling(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    do_register(callee, "com.typed");
    fake_conn_send(caller, "[48, 1, {\"transaction_hash\": 123}, \"com.typed\"]");
    fake_expect_error_text(caller, WAMP_MSG_CALL, 1, WAMP_ERROR_INVALID_ARGUMENT,
                           "transaction_hash");
    fake_conn_send(caller, "[48, 2, {\"receive_progress\": \"yes\"}, \"com.typed\"]");
    fake_expect_error_text(caller, WAMP_MSG_CALL, 2, WAMP_ERROR_INVALID_ARGUMENT,
                           "receive_progress");
    fake_conn_send(caller, "[48, 3, {\"disclose_me\": 1}, \"com.typed\"]");
    fake_expect_error_text(caller, WAMP_MSG_CALL, 3, WAMP_ERROR_INVALID_ARGUMENT, "disclose_me");
    fake_conn_send(caller, "[48, 4, {\"forward_for\": \"hello\"}, \"com.typed\"]");
    fake_expect_error_text(caller, WAMP_MSG_CALL, 4, WAMP_ERROR_INVALID_ARGUMENT, "forward_for");
    ck_assert_uint_eq(fake_conn_pending(callee), 0); /* nothing was invoked */
    fake_conn_send(callee, "[64, 5, {\"concurrency\": \"x\"}, \"com.typed2\"]");
    fake_expect_error_text(callee, WAMP_MSG_REGISTER, 5, WAMP_ERROR_INVALID_ARGUMENT,
                           "concurrency");
    fake_conn_send(callee, "[64, 6, {\"invoke\": \"roundrobin\\u0000\"}, \"com.typed3\"]");
    fake_expect_error_text(callee, WAMP_MSG_REGISTER, 6, WAMP_ERROR_INVALID_ARGUMENT, "invoke");
    fake_conn_send(callee, "[64, 7, {\"match\": \"prefix\\u0000x\"}, \"com.typed4\"]");
    fake_expect_error_text(callee, WAMP_MSG_REGISTER, 7, WAMP_ERROR_INVALID_ARGUMENT, "match");
    ck_assert_uint_eq(test_router_reg_count(T.rt, "realm1"), 1);
    /* CANCEL mode "kill\u0000x" is not kill: a protocol violation, as any bad mode. */
    long long inv = start_call(caller, callee, 8, "{}", "com.typed");
    fake_conn_send(caller, "[49, 8, {\"mode\": \"kill\\u0000x\"}]");
    ck_assert_int_eq(rt_session_state_get(caller->s), RT_SESSION_CLOSED);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->protocol_violations, 1);
    fake_conn_free(caller);
    fake_conn_clear(callee);
    /* YIELD progress 1 is not a boolean. */
    caller = joined(WAMP_SER_JSON, "realm1");
    inv = start_call(caller, callee, 9, "{\"receive_progress\": true}", "com.typed");
    fake_conn_send(callee, "[70, %lld, {\"progress\": 1}, [1]]", inv);
    ck_assert_int_eq(rt_session_state_get(callee->s), RT_SESSION_CLOSED);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->protocol_violations, 2);
    fake_conn_free(callee);
    fake_conn_free(caller);
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
    tcase_add_test(tc, test_pattern_precedence);
    tcase_add_test(tc, test_pattern_register_errors);
    tcase_add_test(tc, test_shared_registration_policies);
    tcase_add_test(tc, test_unregister_found_from_either_side);
    tcase_add_test(tc, test_shared_registration_skips_closing_callee);
    tcase_add_test(tc, test_closing_callee_passed_over_by_policy);
    tcase_add_test(tc, test_progressive_results);
    tcase_add_test(tc, test_cancel_modes);
    tcase_add_test(tc, test_cancel_finds_its_call);
    tcase_add_test(tc, test_cancel_callee_without_call_canceling);
    tcase_add_test(tc, test_caller_leaving_interrupts_canceling_callee);
    tcase_add_test(tc, test_leaving_with_progressive_and_canceled_calls);
    tcase_add_test(tc, test_call_timeout);
    tcase_add_test(tc, test_timeout_after_kill_interrupts_once);
    tcase_add_test(tc, test_timeouts_in_any_order);
    tcase_add_test(tc, test_caller_identification);
    tcase_add_test(tc, test_local_procedure_with_patterns);
    tcase_add_test(tc, test_payload_exact_across_serializers);
    tcase_add_test(tc, test_local_procedure_unrepresentable_argument);
    tcase_add_test(tc, test_payload_passthru);
    tcase_add_test(tc, test_wrongly_typed_options);
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
