/* check_rt_session.c: the session state machine over the fake transport. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_transport.h"
#include "rt_realm.h"
#include "rt_session.h"
#include "test_router.h"
#include "wamp_codec.h"

static test_router T;

static void setup(void)
{
    test_router_init(&T);
}

static void teardown(void)
{
    test_router_fini(&T);
}

/* Asserts the next message is ABORT with reason, and that the connection was closed. */
static void expect_abort(fake_conn *c, const char *reason)
{
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ABORT);
    ck_assert_str_eq(fake_msg_str(m, 2), reason);
    json_decref(m);
    ck_assert(c->close_requested);
    ck_assert_ptr_null(c->s); /* drained, then closed like the adapter does */
}

START_TEST(test_hello_welcome_details)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    ck_assert_int_eq(fake_conn_send(c, "[1, \"realm1\", {\"roles\": {\"caller\": {}}}]"), WAMP_OK);
    ck_assert(c->want_write);
    json_t *w = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(w, 0), WAMP_MSG_WELCOME);
    ck_assert_uint_eq((uint64_t)fake_msg_int(w, 1), rt_session_id(c->s));
    ck_assert(fake_msg_int(w, 1) >= 1 && (uint64_t)fake_msg_int(w, 1) <= WAMP_ID_MAX);
    json_t *d = json_array_get(w, 2);
    ck_assert_str_eq(json_string_value(json_object_get(d, "realm")), "realm1");
    ck_assert_str_eq(json_string_value(json_object_get(d, "authrole")), "anonymous");
    ck_assert_str_eq(json_string_value(json_object_get(d, "authmethod")), "anonymous");
    ck_assert_int_eq((int)strlen(json_string_value(json_object_get(d, "authid"))), 24);
    json_t *roles = json_object_get(d, "roles");
    ck_assert(json_is_object(json_object_get(roles, "broker")));
    ck_assert(json_is_object(json_object_get(roles, "dealer")));
    ck_assert(json_is_true(json_object_get(
            json_object_get(json_object_get(roles, "broker"), "features"), "publisher_exclusion")));
    ck_assert_int_eq(rt_session_state_get(c->s), RT_SESSION_JOINED);
    ck_assert_uint_eq(rt_realm_member_count(rt_router_find_realm(T.rt, "realm1")), 1);
    json_decref(w);
    fake_conn_free(c);
    ck_assert_uint_eq(rt_realm_member_count(rt_router_find_realm(T.rt, "realm1")), 0);
    ck_assert_uint_eq(rt_router_session_count(T.rt), 0);
}

END_TEST

START_TEST(test_session_ids_differ)
{
    fake_conn *a = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn *b = fake_conn_new(T.rt, WAMP_SER_MSGPACK);
    uint64_t ia = fake_conn_join(a, "realm1");
    uint64_t ib = fake_conn_join(b, "realm1");
    ck_assert_uint_ne(ia, ib);
    ck_assert_uint_eq(rt_router_session_count(T.rt), 2);
    fake_conn_free(a);
    fake_conn_free(b);
}

END_TEST

START_TEST(test_unknown_realm_aborts)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_MSGPACK);
    fake_conn_send(c, "[1, \"nope\", {\"roles\": {\"caller\": {}}}]");
    expect_abort(c, WAMP_ERROR_NO_SUCH_REALM);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_invalid_realm_uri_aborts)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_send(c, "[1, \"realm 1\", {\"roles\": {\"caller\": {}}}]");
    expect_abort(c, WAMP_ERROR_NO_SUCH_REALM);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_hello_without_roles_is_violation)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_send(c, "[1, \"realm1\", {}]");
    expect_abort(c, WAMP_ERROR_PROTOCOL_VIOLATION);
    ck_assert_int_eq(c->close_code, 1002);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_message_before_hello_is_violation)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_send(c, "[32, 1, {}, \"com.topic\"]");
    expect_abort(c, WAMP_ERROR_PROTOCOL_VIOLATION);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->protocol_violations, 1);
    fake_conn_free(c);
}

END_TEST

/* An ABORT with Arguments and ArgumentsKw (the spec's RFC draft; xconn clients send them) is
 * the peer giving up, as a bare one is: the connection closes, no ABORT answers it, no protocol
 * violation is counted. */
START_TEST(test_abort_with_arguments_closes)
{
    static const char *const aborts[] = {"[3, {}, \"wamp.close.normal\"]",
                                         "[3, {}, \"wamp.close.normal\", [\"bye\"]]",
                                         "[3, {}, \"wamp.close.normal\", [], {\"why\": 1}]"};
    for (size_t i = 0; i < sizeof(aborts) / sizeof(aborts[0]); i++) {
        fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
        fake_conn_send(c, "%s", aborts[i]);
        ck_assert_msg(c->close_requested && c->close_code == 1000, "%s", aborts[i]);
        ck_assert_uint_eq(fake_conn_pending(c), 0);
        ck_assert_uint_eq(rt_router_stats_get(T.rt)->protocol_violations, 0);
        fake_conn_free(c);
    }
}

END_TEST

START_TEST(test_garbage_is_violation_with_reason)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(c, "realm1");
    ck_assert_int_eq(fake_conn_send_raw(c, "not json", 8), WAMP_OK);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ABORT);
    ck_assert_str_eq(fake_msg_str(m, 2), WAMP_ERROR_PROTOCOL_VIOLATION);
    ck_assert(json_is_string(json_object_get(json_array_get(m, 1), "message")));
    json_decref(m);
    ck_assert_ptr_null(c->s);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_garbage_does_not_disturb_other_sessions)
{
    fake_conn *good = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn *bad = fake_conn_new(T.rt, WAMP_SER_MSGPACK);
    fake_conn_join(good, "realm1");
    fake_conn_join(bad, "realm1");
    fake_conn_send(good, "[32, 1, {}, \"com.t\"]");
    fake_conn_clear(good);
    static const unsigned char junk[] = {0xdc, 0xff, 0xff, 0x01};
    fake_conn_send_raw(bad, junk, sizeof(junk));
    fake_conn_drain(bad);
    ck_assert_ptr_null(bad->s);
    fake_conn *pub = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(pub, "realm1");
    fake_conn_send(pub, "[16, 1, {}, \"com.t\", [1]]");
    json_t *ev = fake_conn_next(good);
    ck_assert_int_eq(fake_msg_int(ev, 0), WAMP_MSG_EVENT);
    json_decref(ev);
    fake_conn_free(good);
    fake_conn_free(bad);
    fake_conn_free(pub);
}

END_TEST

START_TEST(test_second_hello_is_violation)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(c, "realm1");
    fake_conn_send(c, "[1, \"realm1\", {\"roles\": {\"caller\": {}}}]");
    expect_abort(c, WAMP_ERROR_PROTOCOL_VIOLATION);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_router_only_messages_are_violations)
{
    static const char *msgs[] = {
            "[2, 1, {}]",
            "[4, \"ticket\", {}]",
            "[17, 1, 2]",
            "[33, 1, 2]",
            "[35, 1]",
            "[36, 1, 2, {}]",
            "[50, 1, {}]",
            "[65, 1, 2]",
            "[67, 1]",
            "[68, 1, 2, {}]",
            "[69, 1, {}]",
            "[5, \"sig\", {}]",
            "[8, 48, 1, {}, \"com.err\"]",
    };
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
        fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
        fake_conn_join(c, "realm1");
        fake_conn_send(c, "%s", msgs[i]);
        expect_abort(c, WAMP_ERROR_PROTOCOL_VIOLATION);
        fake_conn_free(c);
    }
}

END_TEST

START_TEST(test_goodbye_handshake_and_rejoin)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(c, "realm1");
    fake_conn_send(c, "[32, 1, {}, \"com.t\"]");
    fake_conn_clear(c);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 1);
    fake_conn_send(c, "[6, {}, \"wamp.close.normal\"]");
    json_t *g = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(g, 0), WAMP_MSG_GOODBYE);
    ck_assert_str_eq(fake_msg_str(g, 2), WAMP_CLOSE_GOODBYE_AND_OUT);
    json_decref(g);
    ck_assert_ptr_nonnull(c->s);
    ck_assert_int_eq(rt_session_state_get(c->s), RT_SESSION_ESTABLISHED);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 0);
    fake_conn_join(c, "realm2");
    ck_assert_str_eq(rt_realm_name(rt_session_realm(c->s)), "realm2");
    fake_conn_free(c);
}

END_TEST

START_TEST(test_hello_timeout)
{
    fake_conn *slow = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_clock_advance_ms(&T.clock, 600);
    fake_conn *later = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn *joined = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(joined, "realm1");
    fake_clock_advance_ms(&T.clock, 399);
    rt_router_tick(T.rt);
    ck_assert(!slow->close_requested);
    fake_clock_advance_ms(&T.clock, 1);
    rt_router_tick(T.rt);
    ck_assert(slow->close_requested);
    ck_assert_int_eq(slow->close_code, 1008);
    ck_assert(!later->close_requested);
    fake_clock_advance_ms(&T.clock, 600);
    rt_router_tick(T.rt);
    ck_assert(later->close_requested);
    ck_assert(!joined->close_requested);
    fake_conn_free(slow);
    fake_conn_free(later);
    fake_conn_free(joined);
}

END_TEST

START_TEST(test_shutdown_says_goodbye)
{
    fake_conn *a = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn *b = fake_conn_new(T.rt, WAMP_SER_MSGPACK);
    fake_conn *idle = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(a, "realm1");
    fake_conn_join(b, "realm2");
    ck_assert(!rt_router_shutdown_done(T.rt));
    rt_router_begin_shutdown(T.rt);
    rt_router_begin_shutdown(T.rt); /* idempotent */
    ck_assert(idle->close_requested);
    ck_assert_int_eq(idle->close_code, 1001);
    fake_conn_drain(idle);
    for (int i = 0; i < 2; i++) {
        fake_conn *c = i ? b : a;
        json_t *g = fake_conn_next(c);
        ck_assert_int_eq(fake_msg_int(g, 0), WAMP_MSG_GOODBYE);
        ck_assert_str_eq(fake_msg_str(g, 2), WAMP_CLOSE_SYSTEM_SHUTDOWN);
        json_decref(g);
        ck_assert(json_array_size(a->inbox) == 0);
    }
    /* No new sessions while shutting down. */
    ck_assert_ptr_null(rt_router_attach(T.rt, NULL, NULL, WAMP_SER_JSON, NULL));
    /* a answers GOODBYE: closed. b does not: the grace period ends it. */
    fake_conn_send(a, "[6, {}, \"wamp.close.goodbye_and_out\"]");
    fake_conn_drain(a);
    ck_assert_ptr_null(a->s);
    ck_assert(!rt_router_shutdown_done(T.rt));
    fake_clock_advance_ms(&T.clock, 500);
    ck_assert(rt_router_shutdown_done(T.rt));
    fake_conn_free(a);
    fake_conn_free(b);
    fake_conn_free(idle);
}

END_TEST

START_TEST(test_shutdown_done_when_no_sessions)
{
    fake_conn *a = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(a, "realm1");
    rt_router_begin_shutdown(T.rt);
    ck_assert(!rt_router_shutdown_done(T.rt));
    fake_conn_disconnect(a);
    ck_assert(rt_router_shutdown_done(T.rt));
    fake_conn_free(a);
}

END_TEST

START_TEST(test_closed_session_ignores_input)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_join(c, "realm1");
    fake_conn_send(c, "[99]");
    /* Violation queued ABORT and requested close; further input before the transport closes
     * is ignored. */
    ck_assert_int_eq(fake_conn_send(c, "[32, 1, {}, \"com.t\"]"), WAMP_OK);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ABORT);
    json_decref(m);
    ck_assert_ptr_null(fake_conn_next(c));
    fake_conn_free(c);
}

END_TEST

/* The bytes of value v in ser (owned). */
static wamp_buf *encoded(wamp_ser ser, json_t *v_take)
{
    wamp_buf *b = NULL;
    ck_assert_int_eq(wamp_codec_encode(ser, v_take, &b), WAMP_OK);
    json_decref(v_take);
    return b;
}

/* An envelope given by its fields encodes, in every serializer and whatever payload follows it,
 * to the very bytes of the same message built as a jansson list. */
START_TEST(test_fields_envelope_encodes_as_list)
{
    wamp_buf *args = encoded(WAMP_SER_MSGPACK, json_pack("[i,s,f]", -3, "x\u00e9", 1.5));
    wamp_buf *kwargs = encoded(WAMP_SER_MSGPACK, json_pack("{s:b,s:n}", "k", 1, "z"));
    rt_payload both = {.ser = WAMP_SER_MSGPACK,
                       .args = {wamp_buf_cdata(args), wamp_buf_len(args)},
                       .kwargs = {wamp_buf_cdata(kwargs), wamp_buf_len(kwargs)}};
    rt_payload kw_only = {.ser = WAMP_SER_MSGPACK,
                          .kwargs = {wamp_buf_cdata(kwargs), wamp_buf_len(kwargs)}};
    wamp_buf *json_args = encoded(WAMP_SER_JSON, json_pack("[s,i]", "a\"b", 1));
    rt_payload json_args_only = {.ser = WAMP_SER_JSON,
                                 .args = {wamp_buf_cdata(json_args), wamp_buf_len(json_args)}};
    const uint64_t big = (uint64_t)1 << 53;
    /* Ids of every width either encoding has. */
    static const uint64_t ids[] = {1,     127,   128,        255,        256,
                                   65535, 65536, 4294967295, 4294967296, 1000000007};
    for (wamp_ser ser = WAMP_SER_JSON; ser <= WAMP_SER_CBOR; ser++) {
        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
            for (int k = 0; k < 3; k++) {
                rt_payload *p = k == 0 ? NULL : k == 1 ? &both : &json_args_only;
                rt_encoded f, l;
                rt_encoded_init_fields(&f, WAMP_MSG_EVENT, ids[i], ids[(i + 1) % 10], NULL, p);
                rt_encoded_init_payload(
                        &l, wamp_msg_new_event(ids[i], ids[(i + 1) % 10], NULL, NULL, NULL), p);
                ck_assert_int_eq(rt_encoded_encode(&f, ser), WAMP_OK);
                ck_assert_int_eq(rt_encoded_encode(&l, ser), WAMP_OK);
                ck_assert_uint_eq(wamp_buf_len(f.buf[ser]), wamp_buf_len(l.buf[ser]));
                ck_assert_mem_eq(wamp_buf_cdata(f.buf[ser]), wamp_buf_cdata(l.buf[ser]),
                                 wamp_buf_len(l.buf[ser]));
                rt_encoded_fini(&f);
                rt_encoded_fini(&l);
            }
        }
        rt_encoded f[4], l[4];
        rt_encoded_init_fields(&f[0], WAMP_MSG_INVOCATION, big, 9, NULL, NULL);
        rt_encoded_init(&l[0], wamp_msg_new_invocation(big, 9, NULL, NULL, NULL));
        rt_encoded_init_fields(&f[1], WAMP_MSG_EVENT, 7, 300,
                               json_pack("{s:s,s:i}", "topic", "a.b", "n", 70000), &both);
        rt_encoded_init_payload(
                &l[1],
                wamp_msg_new_event(7, 300, json_pack("{s:s,s:i}", "topic", "a.b", "n", 70000), NULL,
                                   NULL),
                &both);
        rt_encoded_init_fields(&f[2], WAMP_MSG_RESULT, 3, 0, json_pack("{s:b}", "progress", 1),
                               &kw_only);
        rt_encoded_init_payload(
                &l[2], wamp_msg_new_result(3, json_pack("{s:b}", "progress", 1), NULL, NULL),
                &kw_only);
        rt_encoded_init_fields(&f[3], WAMP_MSG_RESULT, 3, 0, NULL, &kw_only);
        rt_encoded_init_payload(&l[3], wamp_msg_new_result(3, NULL, NULL, NULL), &kw_only);
        for (int i = 0; i < 4; i++) {
            ck_assert_int_eq(f[i].type, l[i].type);
            ck_assert_int_eq(rt_encoded_encode(&f[i], ser), WAMP_OK);
            ck_assert_int_eq(rt_encoded_encode(&l[i], ser), WAMP_OK);
            ck_assert_uint_eq(wamp_buf_len(f[i].buf[ser]), wamp_buf_len(l[i].buf[ser]));
            ck_assert_mem_eq(wamp_buf_cdata(f[i].buf[ser]), wamp_buf_cdata(l[i].buf[ser]),
                             wamp_buf_len(l[i].buf[ser]));
            rt_encoded_fini(&f[i]);
            rt_encoded_fini(&l[i]);
        }
    }
    wamp_buf_unref(&args);
    wamp_buf_unref(&kwargs);
    wamp_buf_unref(&json_args);
}

END_TEST

static Suite *rt_session_suite(void)
{
    Suite *s = suite_create("rt_session");
    TCase *tc = tcase_create("fsm");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_hello_welcome_details);
    tcase_add_test(tc, test_session_ids_differ);
    tcase_add_test(tc, test_unknown_realm_aborts);
    tcase_add_test(tc, test_invalid_realm_uri_aborts);
    tcase_add_test(tc, test_hello_without_roles_is_violation);
    tcase_add_test(tc, test_message_before_hello_is_violation);
    tcase_add_test(tc, test_abort_with_arguments_closes);
    tcase_add_test(tc, test_garbage_is_violation_with_reason);
    tcase_add_test(tc, test_garbage_does_not_disturb_other_sessions);
    tcase_add_test(tc, test_second_hello_is_violation);
    tcase_add_test(tc, test_router_only_messages_are_violations);
    tcase_add_test(tc, test_goodbye_handshake_and_rejoin);
    tcase_add_test(tc, test_hello_timeout);
    tcase_add_test(tc, test_shutdown_says_goodbye);
    tcase_add_test(tc, test_shutdown_done_when_no_sessions);
    tcase_add_test(tc, test_closed_session_ignores_input);
    tcase_add_test(tc, test_fields_envelope_encodes_as_list);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_session_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
