/* check_rt_broker.c: subscriptions and EVENT fan-out over the fake transport. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_transport.h"
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

/* SUBSCRIBE request 1 to topic; returns the subscription id. */
static int64_t subscribe(fake_conn *c, const char *topic)
{
    fake_conn_send(c, "[32, 1, {}, \"%s\"]", topic);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    ck_assert_int_eq(fake_msg_int(m, 1), 1);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    return id;
}

START_TEST(test_subscribers_share_subscription_id)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_MSGPACK, "realm1");
    int64_t ia = subscribe(a, "com.example.topic");
    int64_t ib = subscribe(b, "com.example.topic");
    ck_assert_int_eq(ia, ib);
    ck_assert_int_ne(subscribe(a, "com.example.other"), ia);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 2);
    /* Subscribing twice returns the same subscription. */
    ck_assert_int_eq(subscribe(a, "com.example.topic"), ia);
    fake_conn_free(a);
    fake_conn_free(b);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 0);
}

END_TEST

START_TEST(test_publish_fans_out_excluding_publisher)
{
    fake_conn *subs[3];
    int64_t sub_id = 0;
    for (int i = 0; i < 3; i++) {
        subs[i] = joined(i == 1 ? WAMP_SER_MSGPACK : WAMP_SER_JSON, "realm1");
        sub_id = subscribe(subs[i], "com.t");
    }
    fake_conn *pub = subs[0];
    fake_conn_send(pub, "[16, 5, {\"acknowledge\": true}, \"com.t\", [1, \"two\"], {\"k\": 3.5}]");
    json_t *ack = fake_conn_next(pub);
    ck_assert_int_eq(fake_msg_int(ack, 0), WAMP_MSG_PUBLISHED);
    ck_assert_int_eq(fake_msg_int(ack, 1), 5);
    int64_t publication = fake_msg_int(ack, 2);
    json_decref(ack);
    ck_assert_ptr_null(fake_conn_next(pub)); /* exclude_me defaults to true */
    json_t *expect = json_pack("[i, I, I, {}, [i, s], {s:f}]", WAMP_MSG_EVENT, (json_int_t)sub_id,
                               (json_int_t)publication, 1, "two", "k", 3.5);
    for (int i = 1; i < 3; i++) {
        json_t *ev = fake_conn_next(subs[i]);
        ck_assert_msg(json_equal(ev, expect), "event differs");
        json_decref(ev);
        ck_assert_ptr_null(fake_conn_next(subs[i]));
    }
    json_decref(expect);
    for (int i = 0; i < 3; i++) {
        fake_conn_free(subs[i]);
    }
}

END_TEST

START_TEST(test_exclude_me_false_delivers_to_publisher)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    subscribe(a, "com.t");
    fake_conn_send(a, "[16, 2, {\"exclude_me\": false}, \"com.t\", [\"self\"]]");
    json_t *ev = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(ev, 0), WAMP_MSG_EVENT);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(ev, 4), 0)), "self");
    json_decref(ev);
    fake_conn_free(a);
}

END_TEST

START_TEST(test_publish_without_ack_is_silent)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(a, "[16, 2, {}, \"com.nobody.listens\"]");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    /* Invalid URI without acknowledge: no answer either. */
    fake_conn_send(a, "[16, 3, {}, \"com..bad\"]");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    fake_conn_send(a, "[16, 4, {\"acknowledge\": true}, \"com..bad\"]");
    fake_expect_error(a, WAMP_MSG_PUBLISH, 4, WAMP_ERROR_INVALID_URI);
    fake_conn_send(a, "[16, 5, {\"acknowledge\": 1}, \"com.x\"]");
    fake_expect_error(a, WAMP_MSG_PUBLISH, 5, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_free(a);
}

END_TEST

START_TEST(test_event_encoded_once_per_serializer)
{
    fake_conn *j1 = joined(WAMP_SER_JSON, "realm1");
    fake_conn *j2 = joined(WAMP_SER_JSON, "realm1");
    fake_conn *m1 = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *m2 = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *all[] = {j1, j2, m1, m2};
    for (int i = 0; i < 4; i++) {
        subscribe(all[i], "com.shared");
    }
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(pub, "[16, 1, {}, \"com.shared\", [\"payload\"]]");
    wamp_buf *bj1 = rt_session_tx_peek(j1->s), *bj2 = rt_session_tx_peek(j2->s);
    wamp_buf *bm1 = rt_session_tx_peek(m1->s), *bm2 = rt_session_tx_peek(m2->s);
    ck_assert_ptr_nonnull(bj1);
    ck_assert_ptr_eq(bj1, bj2);
    ck_assert_ptr_eq(bm1, bm2);
    ck_assert_ptr_ne(bj1, bm1);
    ck_assert_uint_eq(wamp_buf_refs(bj1), 2);
    ck_assert_uint_eq(wamp_buf_refs(bm1), 2);
    for (int i = 0; i < 4; i++) {
        json_t *ev = fake_conn_next(all[i]);
        ck_assert_int_eq(fake_msg_int(ev, 0), WAMP_MSG_EVENT);
        json_decref(ev);
        fake_conn_free(all[i]);
    }
    fake_conn_free(pub);
}

END_TEST

START_TEST(test_unsubscribe)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    int64_t id = subscribe(a, "com.t");
    subscribe(b, "com.t");
    fake_conn_send(a, "[34, 9, %lld]", (long long)id);
    json_t *m = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_UNSUBSCRIBED);
    ck_assert_int_eq(fake_msg_int(m, 1), 9);
    json_decref(m);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 1);
    /* Again: a is no longer subscribed. */
    fake_conn_send(a, "[34, 10, %lld]", (long long)id);
    fake_expect_error(a, WAMP_MSG_UNSUBSCRIBE, 10, WAMP_ERROR_NO_SUCH_SUBSCRIPTION);
    fake_conn_send(a, "[34, 11, 424242]");
    fake_expect_error(a, WAMP_MSG_UNSUBSCRIBE, 11, WAMP_ERROR_NO_SUCH_SUBSCRIPTION);
    /* Events now reach only b. */
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(pub, "[16, 1, {}, \"com.t\"]");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    ck_assert_uint_eq(fake_conn_pending(b), 1);
    fake_conn_send(b, "[34, 2, %lld]", (long long)id);
    fake_conn_clear(b);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 0);
    fake_conn_free(a);
    fake_conn_free(b);
    fake_conn_free(pub);
}

END_TEST

START_TEST(test_realms_are_isolated)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm2");
    subscribe(a, "com.t");
    fake_conn_send(b, "[16, 1, {}, \"com.t\"]");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    fake_conn_free(a);
    fake_conn_free(b);
}

END_TEST

START_TEST(test_subscribe_errors)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(a, "[32, 1, {}, \"com. bad\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 1, WAMP_ERROR_INVALID_URI);
    fake_conn_send(a, "[32, 2, {\"match\": \"prefix\"}, \"com\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 2, WAMP_ERROR_INVALID_ARGUMENT);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 0);
    fake_conn_free(a);
}

END_TEST

START_TEST(test_authorization)
{
    fake_conn *a = joined(WAMP_SER_JSON, "locked");
    fake_conn_send(a, "[32, 1, {}, \"com.open.news\"]");
    json_t *m = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    json_decref(m);
    fake_conn_send(a, "[32, 2, {}, \"com.closed.news\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 2, WAMP_ERROR_NOT_AUTHORIZED);
    /* Prefix permission does not allow publish; the exact one does. */
    fake_conn_send(a, "[16, 3, {\"acknowledge\": true}, \"com.open.news\"]");
    fake_expect_error(a, WAMP_MSG_PUBLISH, 3, WAMP_ERROR_NOT_AUTHORIZED);
    fake_conn_send(a, "[16, 4, {\"acknowledge\": true}, \"com.open.exact\"]");
    m = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_PUBLISHED);
    json_decref(m);
    fake_conn_free(a);
}

END_TEST

START_TEST(test_slow_consumer_is_disconnected)
{
    fake_conn *slow = joined(WAMP_SER_JSON, "realm1");
    fake_conn *fast = joined(WAMP_SER_JSON, "realm1");
    fake_conn *pub = joined(WAMP_SER_MSGPACK, "realm1");
    subscribe(slow, "com.flood");
    subscribe(fast, "com.flood");
    /* The test router caps queues at 100 messages: the slow one never reads. */
    for (int i = 0; i < 150; i++) {
        fake_conn_send(pub, "[16, %d, {}, \"com.flood\", [%d]]", i + 1, i);
        ck_assert_uint_eq(fake_conn_pending(fast), (size_t)i + 1);
    }
    ck_assert(slow->close_requested);
    ck_assert_int_eq(slow->close_code, 1008);
    ck_assert_uint_eq(rt_router_stats_get(T.rt)->slow_consumer_disconnects, 1);
    /* Only the message being written survives the drop. */
    fake_conn_drain(slow);
    ck_assert_uint_eq(json_array_size(slow->inbox), 1);
    ck_assert_ptr_null(slow->s);
    ck_assert(!fast->close_requested);
    fake_conn_free(slow);
    fake_conn_free(fast);
    fake_conn_free(pub);
}

END_TEST

static Suite *rt_broker_suite(void)
{
    Suite *s = suite_create("rt_broker");
    TCase *tc = tcase_create("pubsub");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_subscribers_share_subscription_id);
    tcase_add_test(tc, test_publish_fans_out_excluding_publisher);
    tcase_add_test(tc, test_exclude_me_false_delivers_to_publisher);
    tcase_add_test(tc, test_publish_without_ack_is_silent);
    tcase_add_test(tc, test_event_encoded_once_per_serializer);
    tcase_add_test(tc, test_unsubscribe);
    tcase_add_test(tc, test_realms_are_isolated);
    tcase_add_test(tc, test_subscribe_errors);
    tcase_add_test(tc, test_authorization);
    tcase_add_test(tc, test_slow_consumer_is_disconnected);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_broker_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
