/* check_rt_broker.c: subscriptions and EVENT fan-out over the fake transport. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "alloc_count.h"
#include "fake_transport.h"
#include "rt_broker.h"
#include "rt_realm.h"
#include "test_router.h"
#include "wamp_codec.h"
#include "wamp_uri.h"

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

/* A session's membership of a subscription is found from whichever side is shorter (the
 * subscription's members, or the session's subscriptions): both give the same answers. */
START_TEST(test_membership_found_from_either_side)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    fake_conn *c = joined(WAMP_SER_JSON, "realm1");
    int64_t t0 = subscribe(a, "com.t0");
    for (int i = 1; i < 5; i++) {
        char topic[16];
        snprintf(topic, sizeof(topic), "com.t%d", i);
        subscribe(a, topic);
    }
    ck_assert_int_eq(subscribe(b, "com.t0"), t0);
    subscribe(c, "com.t1");
    ck_assert_int_eq(subscribe(a, "com.t0"), t0);      /* again: the same, a is found a member */
    fake_conn_send(c, "[34, 2, %lld]", (long long)t0); /* c is not a member */
    fake_expect_error(c, WAMP_MSG_UNSUBSCRIBE, 2, WAMP_ERROR_NO_SUCH_SUBSCRIPTION);
    for (int i = 0; i < 2; i++) {
        fake_conn_send(a, "[34, 3, %lld]", (long long)t0);
        if (i == 0) {
            json_t *m = fake_conn_next(a);
            ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_UNSUBSCRIBED);
            json_decref(m);
        } else {
            fake_expect_error(a, WAMP_MSG_UNSUBSCRIBE, 3, WAMP_ERROR_NO_SUCH_SUBSCRIPTION);
        }
    }
    fake_conn_send(c, "[16, 4, {}, \"com.t0\", [1]]");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    json_t *ev = fake_conn_next(b);
    ck_assert_int_eq(fake_msg_int(ev, 0), WAMP_MSG_EVENT);
    json_decref(ev);
    fake_conn_send(b, "[34, 5, %lld]", (long long)t0);
    json_t *m = fake_conn_next(b);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_UNSUBSCRIBED);
    json_decref(m);
    fake_conn_send(b, "[34, 6, %lld]", (long long)t0); /* the subscription is gone */
    fake_expect_error(b, WAMP_MSG_UNSUBSCRIBE, 6, WAMP_ERROR_NO_SUCH_SUBSCRIPTION);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 4);
    fake_conn_free(a);
    fake_conn_free(b);
    fake_conn_free(c);
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
    /* Unknown options are ignored; known ones after them still count. */
    fake_conn_send(a, "[16, 6, {\"x_custom\": [1], \"acknowledge\": true}, \"com.x\"]");
    json_t *m = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_PUBLISHED);
    ck_assert_int_eq(fake_msg_int(m, 1), 6);
    json_decref(m);
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
    fake_conn_send(a, "[32, 2, {\"match\": \"fuzzy\"}, \"com\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 2, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(a, "[32, 3, {\"match\": 1}, \"com\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 3, WAMP_ERROR_INVALID_ARGUMENT);
    /* Exact topics need every component; prefixes all but the last; wildcards none. */
    fake_conn_send(a, "[32, 4, {}, \"com.x.\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 4, WAMP_ERROR_INVALID_URI);
    fake_conn_send(a, "[32, 5, {\"match\": \"prefix\"}, \"com..x\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 5, WAMP_ERROR_INVALID_URI);
    fake_conn_send(a, "[32, 6, {\"match\": \"prefix\"}, \".com\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 6, WAMP_ERROR_INVALID_URI);
    fake_conn_send(a, "[32, 7, {\"match\": \"wildcard\"}, \"com. bad.\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 7, WAMP_ERROR_INVALID_URI);
    fake_conn_send(a, "[32, 8, {\"match\": \"wildcard\"}, \"com.#.x\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 8, WAMP_ERROR_INVALID_URI);
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

/* --- Pattern-based subscriptions ------------------------------------------------------------ */

/* Drops the waiting meta events (wamp.subscription.on_create ...): catch-all patterns such as
 * prefix "" match the meta topics too. */
static void skip_meta_events(fake_conn *c)
{
    fake_conn_drain(c);
    while (json_array_size(c->inbox) > 0) {
        json_t *m = json_array_get(c->inbox, 0);
        const char *t = json_string_value(json_object_get(json_array_get(m, 3), "topic"));
        if (fake_msg_int(m, 0) != WAMP_MSG_EVENT || !t || strncmp(t, "wamp.", 5) != 0) {
            return;
        }
        json_array_remove(c->inbox, 0);
    }
}

/* SUBSCRIBE request req with options (JSON text) to topic; returns the subscription id. */
static int64_t subscribe_opts(fake_conn *c, int req, const char *options, const char *topic)
{
    skip_meta_events(c);
    fake_conn_send(c, "[32, %d, %s, \"%s\"]", req, options, topic);
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    ck_assert_int_eq(fake_msg_int(m, 1), req);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    return id;
}

static int64_t sub_prefix(fake_conn *c, const char *topic)
{
    return subscribe_opts(c, 1, "{\"match\": \"prefix\"}", topic);
}

static int64_t sub_wildcard(fake_conn *c, const char *topic)
{
    return subscribe_opts(c, 1, "{\"match\": \"wildcard\"}", topic);
}

/* Asserts the next message of c is an EVENT of subscription sub_id whose Details.topic is topic
 * (NULL: no topic key) and whose args[0] is the string arg; returns its publication id. */
static int64_t expect_event(fake_conn *c, int64_t sub_id, const char *topic, const char *arg)
{
    json_t *ev = fake_conn_next(c);
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(fake_msg_int(ev, 0), WAMP_MSG_EVENT);
    ck_assert_int_eq(fake_msg_int(ev, 1), sub_id);
    json_t *t = json_object_get(json_array_get(ev, 3), "topic");
    if (topic) {
        ck_assert_str_eq(json_string_value(t), topic);
    } else {
        ck_assert_ptr_null(t);
    }
    if (arg) {
        ck_assert_str_eq(json_string_value(json_array_get(json_array_get(ev, 4), 0)), arg);
    }
    int64_t pub = fake_msg_int(ev, 2);
    json_decref(ev);
    return pub;
}

START_TEST(test_prefix_and_wildcard_match)
{
    fake_conn *p = joined(WAMP_SER_JSON, "realm1");
    fake_conn *w = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *e = joined(WAMP_SER_JSON, "realm1");
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    int64_t ip = sub_prefix(p, "com.p");
    int64_t iw = sub_wildcard(w, "com..x");
    int64_t ie = subscribe(e, "com.p.x");
    ck_assert(ip != iw && iw != ie && ip != ie);
    /* All three match: pattern subscriptions get the concrete topic in Details.topic. */
    fake_conn_send(pub, "[16, 1, {}, \"com.p.x\", [\"a\"]]");
    expect_event(p, ip, "com.p.x", "a");
    expect_event(w, iw, "com.p.x", "a");
    expect_event(e, ie, NULL, "a");
    /* A prefix is a plain string prefix (as Crossbar and the spec define it). */
    fake_conn_send(pub, "[16, 2, {}, \"com.pq\", [\"b\"]]");
    expect_event(p, ip, "com.pq", "b");
    /* A wildcard needs the same number of components, the non-empty ones equal. */
    fake_conn_send(pub, "[16, 3, {}, \"com.q.x\", [\"c\"]]");
    expect_event(w, iw, "com.q.x", "c");
    fake_conn_send(pub, "[16, 4, {}, \"com.p.x.y\", [\"d\"]]");
    expect_event(p, ip, "com.p.x.y", "d");
    fake_conn_send(pub, "[16, 5, {}, \"org.q.x\", [\"e\"]]");
    fake_conn_send(pub, "[16, 6, {}, \"com.q.y\", [\"f\"]]");
    for (fake_conn **c = (fake_conn *[]){p, w, e, NULL}; *c; c++) {
        ck_assert_uint_eq(fake_conn_pending(*c), 0);
    }
    fake_conn_free(p);
    fake_conn_free(w);
    fake_conn_free(e);
    fake_conn_free(pub);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 0);
}

END_TEST

/* rt_broker_foreach callback: counts subscriptions, stops after reaching 101. */
static bool count_subs(const rt_subscription *sub, void *ctx)
{
    size_t *n = ctx;
    ck_assert_uint_gt(rt_subscription_subscriber_count(sub), 0);
    return ++*n != 101;
}

START_TEST(test_pattern_subscription_ids_shared_per_uri_and_policy)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    int64_t pa = sub_prefix(a, "com.t");
    int64_t pb = sub_prefix(b, "com.t");
    ck_assert_int_eq(pa, pb);
    int64_t wa = sub_wildcard(a, "com.t");
    int64_t ea = subscribe(a, "com.t");
    ck_assert(wa != pa && ea != pa && ea != wa);
    ck_assert_int_eq(sub_wildcard(b, "com.t"), wa);
    ck_assert_int_eq(sub_prefix(a, "com.t"), pa); /* again: the same subscription */
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 3);
    /* The enumeration API sees them as they are. */
    rt_broker *br = rt_realm_broker(rt_router_find_realm(T.rt, "realm1"));
    const rt_subscription *sp = rt_broker_lookup(br, "com.t", WAMP_MATCH_PREFIX);
    ck_assert_ptr_nonnull(sp);
    ck_assert_ptr_eq(rt_broker_find(br, (uint64_t)pa), sp);
    ck_assert_uint_eq(rt_subscription_id(sp), (uint64_t)pa);
    ck_assert_str_eq(rt_subscription_uri(sp), "com.t");
    ck_assert_int_eq(rt_subscription_match(sp), WAMP_MATCH_PREFIX);
    ck_assert_uint_eq(rt_subscription_subscriber_count(sp), 2);
    ck_assert_ptr_eq(rt_subscription_subscriber(sp, 0), a->s);
    ck_assert_ptr_eq(rt_subscription_subscriber(sp, 1), b->s);
    ck_assert_ptr_null(rt_broker_lookup(br, "com.t.x", WAMP_MATCH_PREFIX));
    ck_assert_uint_eq(rt_subscription_created_us(sp), T.clock.now_us);
    size_t seen = 0;
    rt_broker_foreach(br, count_subs, &seen);
    ck_assert_uint_eq(seen, 3);
    seen = 100; /* count_subs stops at 101 */
    rt_broker_foreach(br, count_subs, &seen);
    ck_assert_uint_eq(seen, 101);
    const rt_subscription *found[4];
    ck_assert_uint_eq(rt_broker_match(br, "com.t", found, 4), 3);
    ck_assert_uint_eq(rt_broker_match(br, "com.tx", found, 4), 1);
    ck_assert_ptr_eq(found[0], sp);
    fake_conn_free(a);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 2);
    fake_conn_free(b);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 0);
    ck_assert_uint_eq(rt_broker_match(br, "com.t", found, 4), 0);
}

END_TEST

START_TEST(test_one_event_per_matching_subscription)
{
    fake_conn *a = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    int64_t ids[4] = {subscribe(a, "com.a.b"), sub_prefix(a, "com.a"), sub_prefix(a, ""),
                      sub_wildcard(a, ".a.")};
    skip_meta_events(a);
    fake_conn_send(pub, "[16, 1, {\"acknowledge\": true}, \"com.a.b\", [\"x\"]]");
    json_t *ack = fake_conn_next(pub);
    int64_t publication = fake_msg_int(ack, 2);
    json_decref(ack);
    /* Exact first, then prefixes by length, then wildcards: one EVENT each, one publication. */
    ck_assert_uint_eq(fake_conn_pending(a), 4);
    ck_assert_int_eq(expect_event(a, ids[0], NULL, "x"), publication);
    ck_assert_int_eq(expect_event(a, ids[2], "com.a.b", "x"), publication);
    ck_assert_int_eq(expect_event(a, ids[1], "com.a.b", "x"), publication);
    ck_assert_int_eq(expect_event(a, ids[3], "com.a.b", "x"), publication);
    fake_conn_free(a);
    fake_conn_free(pub);
}

END_TEST

START_TEST(test_pattern_event_encoded_once_per_serializer)
{
    fake_conn *j1 = joined(WAMP_SER_JSON, "realm1");
    fake_conn *j2 = joined(WAMP_SER_JSON, "realm1");
    fake_conn *m1 = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    sub_prefix(j1, "com.shared");
    sub_prefix(j2, "com.shared");
    sub_prefix(m1, "com.shared");
    fake_conn_send(pub, "[16, 1, {\"disclose_me\": true}, \"com.shared.x\", [\"payload\"]]");
    wamp_buf *bj1 = rt_session_tx_peek(j1->s), *bj2 = rt_session_tx_peek(j2->s);
    ck_assert_ptr_nonnull(bj1);
    ck_assert_ptr_eq(bj1, bj2);
    ck_assert_uint_eq(wamp_buf_refs(bj1), 2);
    ck_assert_ptr_ne(rt_session_tx_peek(m1->s), bj1);
    fake_conn_free(j1);
    fake_conn_free(j2);
    fake_conn_free(m1);
    fake_conn_free(pub);
}

END_TEST

START_TEST(test_pattern_unsubscribe_and_leave_cleanup)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    int64_t w1 = sub_wildcard(a, "com..x");
    int64_t w2 = sub_wildcard(a, "com.y.");
    int64_t p1 = sub_prefix(a, "com.y");
    sub_wildcard(b, "com..x");
    /* Unsubscribing a's wildcard leaves b's membership (same subscription) in place. */
    fake_conn_send(a, "[34, 2, %lld]", (long long)w1);
    fake_conn_clear(a);
    fake_conn_send(pub, "[16, 1, {}, \"com.y.x\", [\"one\"]]");
    expect_event(a, p1, "com.y.x", "one"); /* prefix subscriptions come before wildcards */
    expect_event(a, w2, "com.y.x", "one");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    expect_event(b, w1, "com.y.x", "one");
    /* Gone entirely: no index entry may still match. */
    fake_conn_free(b);
    fake_conn_send(a, "[34, 3, %lld]", (long long)w2);
    fake_conn_send(a, "[34, 4, %lld]", (long long)p1);
    fake_conn_clear(a);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 0);
    fake_conn_send(pub, "[16, 2, {}, \"com.y.x\", [\"two\"]]");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    /* The same shapes again work from scratch. */
    int64_t w3 = sub_wildcard(a, "com..x");
    ck_assert_int_ne(w3, w1);
    fake_conn_send(pub, "[16, 3, {}, \"com.y.x\", [\"three\"]]");
    expect_event(a, w3, "com.y.x", "three");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    fake_conn_free(a);
    fake_conn_free(pub);
}

END_TEST

/* Many patterns of many shapes: the indexes give exactly what matching every pattern would. */
START_TEST(test_pattern_index_agrees_with_brute_force)
{
    static const char *const comps[] = {"a", "b", "c", "ab"};

    enum {
        NPAT = 120
    };

    char pats[NPAT][32];
    wamp_match pm[NPAT];
    int64_t ids[NPAT];
    fake_conn *c = joined(WAMP_SER_JSON, "realm1");
    unsigned seed = 12345;
    for (int i = 0; i < NPAT; i++) {
        seed = seed * 1103515245u + 12345u;
        int n = 1 + (int)((seed >> 16) % 4);
        pm[i] = (seed >> 8) % 2 ? WAMP_MATCH_WILDCARD : WAMP_MATCH_PREFIX;
        pats[i][0] = '\0';
        for (int k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            bool empty = pm[i] == WAMP_MATCH_WILDCARD && (seed >> 20) % 3 == 0;
            if (k > 0) {
                strcat(pats[i], ".");
            }
            if (!empty) {
                strcat(pats[i], comps[(seed >> 16) % 4]);
            }
        }
        if (pm[i] == WAMP_MATCH_PREFIX && (seed >> 12) % 3 == 0) {
            pats[i][strlen(pats[i]) - 1] = '\0'; /* cut inside a component */
            if (pats[i][0] == '\0' || pats[i][strlen(pats[i]) - 1] == '.') {
                strcat(pats[i], "a");
            }
        }
        ids[i] = subscribe_opts(c, i + 1,
                                pm[i] == WAMP_MATCH_PREFIX ? "{\"match\": \"prefix\"}"
                                                           : "{\"match\": \"wildcard\"}",
                                pats[i]);
    }
    rt_broker *br = rt_realm_broker(rt_router_find_realm(T.rt, "realm1"));
    const rt_subscription *found[NPAT];
    size_t checked = 0, total = 0;
    for (int t = 0; t < 300; t++) {
        char topic[32] = "";
        seed = seed * 1103515245u + 12345u;
        int n = 1 + (int)((seed >> 16) % 4);
        for (int k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            if (k > 0) {
                strcat(topic, ".");
            }
            strcat(topic, comps[(seed >> 16) % 4]);
        }
        size_t got = rt_broker_match(br, topic, found, NPAT);
        ck_assert_uint_le(got, NPAT);
        size_t expect = 0;
        for (int i = 0; i < NPAT; i++) {
            if (!wamp_uri_matches(pats[i], pm[i], topic)) {
                continue;
            }
            /* Patterns may repeat: the shared subscription counts once. */
            bool dup = false;
            for (int k = 0; k < i; k++) {
                dup = dup || ids[k] == ids[i];
            }
            expect += dup ? 0 : 1;
            bool seen = false;
            for (size_t k = 0; k < got; k++) {
                seen = seen || rt_subscription_id(found[k]) == (uint64_t)ids[i];
            }
            ck_assert_msg(seen, "%s (%s) should match %s", pats[i], wamp_match_name(pm[i]), topic);
        }
        ck_assert_uint_eq(got, expect);
        checked++;
        total += got;
    }
    ck_assert_uint_eq(checked, 300);
    ck_assert_uint_gt(total, 300); /* the sample is not trivially empty */
    fake_conn_free(c);
}

END_TEST

START_TEST(test_publish_local_reaches_pattern_subscriptions)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    int64_t ip = sub_prefix(a, "wampscope.");
    int64_t ie = subscribe(a, "wampscope.on_x");
    rt_broker *br = rt_realm_broker(rt_router_find_realm(T.rt, "realm1"));
    ck_assert_int_eq(rt_broker_publish_local(br, "wampscope.on_x", json_pack("[s]", "v"), NULL),
                     WAMP_OK);
    expect_event(a, ie, NULL, "v");
    expect_event(a, ip, "wampscope.on_x", "v");
    ck_assert_uint_eq(rt_broker_receiver_count(br, NULL, "wampscope.on_y", false), 1);
    fake_conn_free(a);
}

END_TEST

/* Allocations made by n PUBLISHes (pre-encoded) of pub to com.hot, whose queued EVENTs are
 * dropped without decoding. */
static size_t publish_allocs(fake_conn *pub, fake_conn **subs, int n_subs, int n)
{
    json_t *m = json_loads("[16, 1, {}, \"com.hot.topic\", [1, \"payload\"]]", 0, NULL);
    wamp_buf *wire = NULL;
    ck_assert_int_eq(wamp_codec_encode(pub->ser, m, &wire), WAMP_OK);
    json_decref(m);
    size_t before = alloc_count_best();
    for (int k = 0; k < n; k++) {
        ck_assert_int_eq(rt_session_on_message(pub->s, wamp_buf_data(wire), wamp_buf_len(wire)),
                         WAMP_OK);
        for (int i = 0; i < n_subs; i++) {
            ck_assert_ptr_nonnull(rt_session_tx_peek(subs[i]->s));
            while (rt_session_tx_peek(subs[i]->s)) {
                rt_session_tx_pop(subs[i]->s);
            }
        }
    }
    size_t used = alloc_count_best() - before;
    wamp_buf_unref(&wire);
    return used;
}

/* Pattern subscriptions that do not match cost an exact-topic PUBLISH no allocation. */
START_TEST(test_pattern_index_allocates_nothing_per_publish)
{
    alloc_count_install();
    fake_conn *subs[3];
    for (int i = 0; i < 3; i++) {
        subs[i] = joined(i == 1 ? WAMP_SER_MSGPACK : WAMP_SER_JSON, "realm1");
        subscribe(subs[i], "com.hot.topic");
    }
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    (void)publish_allocs(pub, subs, 3, 10); /* warm-up */
    size_t plain = publish_allocs(pub, subs, 3, 100);
    ck_assert_uint_gt(plain, 0); /* the counter sees the routing's own allocations */
    fake_conn *pat = joined(WAMP_SER_JSON, "realm1");
    for (int i = 0; i < 200; i++) {
        fake_conn_send(pat, "[32, %d, {\"match\": \"prefix\"}, \"com.hot.t%d\"]", i + 1, i);
        fake_conn_send(pat, "[32, %d, {\"match\": \"wildcard\"}, \"com..x%d.\"]", i + 1, i % 50);
        fake_conn_send(pat, "[32, %d, {\"match\": \"wildcard\"}, \"com.hot..x%d\"]", i + 1, i % 7);
        fake_conn_clear(pat); /* (the test router's queues hold 100 messages) */
    }
    ck_assert_uint_gt(test_router_sub_count(T.rt, "realm1"), 250);
    (void)publish_allocs(pub, subs, 3, 10);
    ck_assert_uint_eq(publish_allocs(pub, subs, 3, 100), plain);
    ck_assert_uint_eq(fake_conn_pending(pat), 0);
    for (int i = 0; i < 3; i++) {
        fake_conn_free(subs[i]);
    }
    fake_conn_free(pub);
    fake_conn_free(pat);
}

END_TEST

/* --- Black/white listing and publisher identification --------------------------------------- */

/* A router whose realm "roles" has roles "anonymous" and "guest" (both may do everything;
 * "guest" publications under "com.disclosed." are disclosed by permission), and two listeners
 * whose anonymous sessions get those roles. */
static rt_permission roles_all[] = {{.uri = "",
                                     .match = WAMP_MATCH_PREFIX,
                                     .allow_call = true,
                                     .allow_register = true,
                                     .allow_publish = true,
                                     .allow_subscribe = true}};
static rt_permission roles_guest[] = {{.uri = "",
                                       .match = WAMP_MATCH_PREFIX,
                                       .allow_call = true,
                                       .allow_register = true,
                                       .allow_publish = true,
                                       .allow_subscribe = true},
                                      {.uri = "com.disclosed.",
                                       .match = WAMP_MATCH_PREFIX,
                                       .allow_publish = true,
                                       .allow_subscribe = true,
                                       .disclose_publisher = true}};
/* "narrow": everything on exactly com.a, and under com.pub. but com.pub.secret. */
static rt_permission roles_narrow[] = {{.uri = "com.a",
                                        .match = WAMP_MATCH_EXACT,
                                        .allow_call = true,
                                        .allow_register = true,
                                        .allow_publish = true,
                                        .allow_subscribe = true},
                                       {.uri = "com.pub.",
                                        .match = WAMP_MATCH_PREFIX,
                                        .allow_call = true,
                                        .allow_register = true,
                                        .allow_publish = true,
                                        .allow_subscribe = true},
                                       {.uri = "com.pub.secret.", .match = WAMP_MATCH_PREFIX}};
static rt_role roles_roles[] = {
        {.name = "anonymous", .permissions = roles_all, .n_permissions = 1},
        {.name = "guest", .permissions = roles_guest, .n_permissions = 2},
        {.name = "narrow", .permissions = roles_narrow, .n_permissions = 3}};
static rt_realm_config roles_realm[] = {{.name = "roles", .roles = roles_roles, .n_roles = 3}};
static rt_listener roles_listeners[] = {
        {.id = "anon", .anonymous_role = "anonymous", .max_message_size = 1024 * 1024},
        {.id = "guest", .anonymous_role = "guest", .max_message_size = 1024 * 1024},
        {.id = "narrow", .anonymous_role = "narrow", .max_message_size = 1024 * 1024}};

static void roles_setup(void)
{
    test_router_init(&T);
    rt_router_free(T.rt);
    T.cfg.realms = roles_realm;
    T.cfg.n_realms = 1;
    T.cfg.listeners = roles_listeners;
    T.cfg.n_listeners = 3;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
}

/* A session on realm "roles" with role "anonymous" or "guest". */
static fake_conn *with_role(const char *listener)
{
    rt_peer peer = {.addr = "127.0.0.1:1", .is_loopback = true, .listener_id = listener};
    fake_conn *c = fake_conn_new_peer(T.rt, WAMP_SER_JSON, &peer);
    fake_conn_join(c, "roles");
    return c;
}

/* Publishes to com.l with options (JSON text) and returns which of the n sessions got the
 * EVENT, as a bit set (bit i = sessions[i]). */
static unsigned delivered(fake_conn *pub, const char *options, fake_conn **sessions, int n)
{
    fake_conn_send(pub, "[16, 1, %s, \"com.l\", [\"x\"]]", options);
    unsigned got = 0;
    for (int i = 0; i < n; i++) {
        size_t k = fake_conn_pending(sessions[i]);
        ck_assert_uint_le(k, 1);
        got |= k ? 1u << i : 0;
        fake_conn_clear(sessions[i]);
    }
    return got;
}

/* Sends text on c and asserts the answer's type. */
static void sent_answered(fake_conn *c, const char *text, int type)
{
    ck_assert_int_eq(fake_conn_send(c, "%s", text), WAMP_OK);
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), type);
    json_decref(m);
}

/* A pattern subscription or registration is authorized on its pattern's text, and then serves
 * only the URIs its session's role may subscribe to or register: an exact permission on com.a
 * does not let a prefix subscription to com.a receive com.a.secret or com.ab, nor a wildcard
 * under an allowed prefix receive a topic of a denied one; retained events alike; a CALL its
 * pattern registration covers but its role may not register finds no such procedure. A role
 * that allows everything gets everything. */
START_TEST(test_patterns_serve_only_what_the_role_may)
{
    fake_conn *pub = with_role("anon");
    fake_conn *all = with_role("anon");
    fake_conn *narrow = with_role("narrow");
    sent_answered(pub, "[16, 9, {\"retain\": true, \"acknowledge\": true}, \"com.a.secret\", [0]]",
                  WAMP_MSG_PUBLISHED);
    for (int i = 0; i < 2; i++) {
        fake_conn *c = i ? narrow : all;
        sent_answered(c, "[32, 1, {\"match\": \"prefix\", \"get_retained\": true}, \"com.a\"]",
                      WAMP_MSG_SUBSCRIBED);
        /* The retained event of com.a.secret: to the role that may, only. */
        if (c == all) {
            json_t *m = fake_conn_next(all);
            ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_EVENT);
            json_decref(m);
        }
        ck_assert_uint_eq(fake_conn_pending(c), 0);
        sent_answered(c, "[32, 2, {\"match\": \"wildcard\"}, \"com.pub..x\"]", WAMP_MSG_SUBSCRIBED);
    }

    static const struct {
        const char *topic;
        bool narrow;
    } cases[] = {{"com.a", true},
                 {"com.a.secret", false},
                 {"com.ab", false},
                 {"com.pub.y.x", true},
                 {"com.pub.secret.x", false}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fake_conn_send(pub, "[16, 1, {}, \"%s\", [1]]", cases[i].topic);
        ck_assert_msg(fake_conn_pending(all) == 1, "%s", cases[i].topic);
        ck_assert_msg(fake_conn_pending(narrow) == (cases[i].narrow ? 1 : 0), "%s", cases[i].topic);
        fake_conn_clear(all);
        fake_conn_clear(narrow);
    }
    /* Registrations. */
    sent_answered(narrow, "[64, 4, {\"match\": \"prefix\"}, \"com.a\"]", WAMP_MSG_REGISTERED);
    fake_conn_send(pub, "[48, 5, {}, \"com.a\", []]");
    json_t *m = fake_conn_next(narrow);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_INVOCATION);
    json_decref(m);
    fake_conn_send(pub, "[48, 6, {}, \"com.a.secret\", []]");
    ck_assert_uint_eq(fake_conn_pending(narrow), 0);
    fake_expect_error(pub, WAMP_MSG_CALL, 6, WAMP_ERROR_NO_SUCH_PROCEDURE);
    /* The same pattern registered by a role that may serves it all. */
    fake_conn *callee = with_role("anon");
    sent_answered(callee, "[64, 7, {\"match\": \"prefix\"}, \"com.pub.\"]", WAMP_MSG_REGISTERED);
    fake_conn_send(pub, "[48, 8, {}, \"com.pub.secret.x\", []]");
    m = fake_conn_next(callee);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_INVOCATION);
    json_decref(m);
    fake_conn_free(callee);
    fake_conn_free(narrow);
    fake_conn_free(all);
    fake_conn_free(pub);
}

END_TEST

START_TEST(test_blackwhite_listing)
{
    fake_conn *c[4] = {with_role("anon"), with_role("anon"), with_role("guest"),
                       with_role("guest")};
    for (int i = 0; i < 4; i++) {
        subscribe(c[i], "com.l");
    }
    long long id[4];
    const char *aid[4];
    for (int i = 0; i < 4; i++) {
        id[i] = (long long)rt_session_id(c[i]->s);
        aid[i] = rt_session_authid(c[i]->s);
    }
    char o[512];
    /* Publisher c[0], exclude_me default: c[0] never gets its own event. */
    ck_assert_uint_eq(delivered(c[0], "{}", c, 4), 0xe);
    snprintf(o, sizeof(o), "{\"exclude\": [%lld, 424242]}", id[1]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0xc);
    snprintf(o, sizeof(o), "{\"eligible\": [%lld, %lld]}", id[1], id[3]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0xa);
    /* eligible names the publisher, but exclude_me still applies unless false. */
    snprintf(o, sizeof(o), "{\"eligible\": [%lld, %lld]}", id[0], id[3]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0x8);
    snprintf(o, sizeof(o), "{\"eligible\": [%lld, %lld], \"exclude_me\": false}", id[0], id[3]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0x9);
    /* Combination: every eligible list must admit the receiver, no exclude list may name it. */
    snprintf(o, sizeof(o), "{\"eligible_authrole\": [\"guest\"], \"exclude\": [%lld]}", id[2]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0x8);
    snprintf(o, sizeof(o), "{\"eligible\": [%lld, %lld], \"eligible_authrole\": [\"guest\"]}",
             id[1], id[2]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0x4);
    ck_assert_uint_eq(delivered(c[0], "{\"exclude_authrole\": [\"guest\"]}", c, 4), 0x2);
    ck_assert_uint_eq(delivered(c[0], "{\"eligible_authrole\": [\"nobody\"]}", c, 4), 0);
    snprintf(o, sizeof(o), "{\"exclude_authid\": [\"%s\", \"%s\"]}", aid[1], aid[2]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0x8);
    snprintf(o, sizeof(o), "{\"eligible_authid\": [\"%s\"], \"exclude_authrole\": [\"anonymous\"]}",
             aid[3]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0x8);
    snprintf(o, sizeof(o), "{\"eligible_authid\": [\"%s\"], \"exclude_authrole\": [\"guest\"]}",
             aid[3]);
    ck_assert_uint_eq(delivered(c[0], o, c, 4), 0);
    /* An empty list restricts nothing (Crossbar). */
    ck_assert_uint_eq(delivered(c[0], "{\"eligible\": [], \"exclude_authid\": []}", c, 4), 0xe);
    /* Malformed lists are refused, with or without acknowledge. */
    static const char *const bad[] = {
            "{\"exclude\": 5}",           "{\"eligible\": [\"x\"]}",       "{\"exclude\": [-1]}",
            "{\"eligible_authid\": [1]}", "{\"exclude_authrole\": \"r\"}", "{\"disclose_me\": 1}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fake_conn_send(c[0], "[16, 9, %s, \"com.l\"]", bad[i]);
        fake_expect_error(c[0], WAMP_MSG_PUBLISH, 9, WAMP_ERROR_INVALID_ARGUMENT);
        for (int k = 1; k < 4; k++) {
            ck_assert_uint_eq(fake_conn_pending(c[k]), 0);
        }
    }
    for (int i = 0; i < 4; i++) {
        fake_conn_free(c[i]);
    }
}

END_TEST

START_TEST(test_blackwhite_listing_over_patterns_and_counts)
{
    fake_conn *a = with_role("anon"), *g = with_role("guest"), *pub = with_role("anon");
    int64_t ia = sub_prefix(a, "com.");
    int64_t ig = sub_wildcard(g, "com.");
    subscribe(g, "com.l");
    rt_broker *br = rt_realm_broker(rt_router_find_realm(T.rt, "roles"));
    const char *txt = "[16, 1, {\"exclude_authrole\": [\"guest\"]}, \"com.l\", [\"x\"]]";
    json_t *root = json_loads(txt, 0, NULL);
    wamp_msg m;
    ck_assert_int_eq(wamp_msg_parse(root, &m, NULL, 0), WAMP_OK);
    ck_assert(rt_broker_publish_has_receiver(br, pub->s, &m)); /* a */
    wamp_msg_fini(&m);
    root = json_loads("[16, 1, {\"exclude_authrole\": [\"guest\", \"anonymous\"]}, \"com.l\"]", 0,
                      NULL);
    ck_assert_int_eq(wamp_msg_parse(root, &m, NULL, 0), WAMP_OK);
    ck_assert(!rt_broker_publish_has_receiver(br, pub->s, &m)); /* a and g both excluded */
    wamp_msg_fini(&m);
    root = json_loads("[16, 1, {}, \"com.l\"]", 0, NULL);
    ck_assert_int_eq(wamp_msg_parse(root, &m, NULL, 0), WAMP_OK);
    ck_assert(rt_broker_publish_has_receiver(br, pub->s, &m));
    ck_assert(rt_broker_publish_has_receiver(br, a->s, &m)); /* g, twice */
    ck_assert(rt_broker_publish_has_receiver(br, g->s, &m)); /* a */
    wamp_msg_fini(&m);
    root = json_loads("[16, 1, {\"exclude\": \"bad\"}, \"com.l\"]", 0, NULL);
    ck_assert_int_eq(wamp_msg_parse(root, &m, NULL, 0), WAMP_OK);
    ck_assert(!rt_broker_publish_has_receiver(br, pub->s, &m)); /* refused */
    wamp_msg_fini(&m);
    ck_assert_uint_eq(rt_broker_receiver_count(br, pub->s, "com.l", true), 3);
    ck_assert_uint_eq(rt_broker_receiver_count(br, a->s, "com.l", true), 2);
    fake_conn_send(pub, "%s", txt);
    expect_event(a, ia, "com.l", "x");
    ck_assert_uint_eq(fake_conn_pending(g), 0);
    fake_conn_send(pub, "[16, 2, {\"eligible_authrole\": [\"guest\"]}, \"com.l\", [\"y\"]]");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    ck_assert_uint_eq(fake_conn_pending(g), 2);
    fake_conn_clear(g);
    (void)ig;
    fake_conn_free(a);
    fake_conn_free(g);
    fake_conn_free(pub);
}

END_TEST

/* The details dict of the next EVENT of c (owned copy). */
static json_t *next_event_details(fake_conn *c)
{
    json_t *ev = fake_conn_next(c);
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(fake_msg_int(ev, 0), WAMP_MSG_EVENT);
    json_t *d = json_incref(json_array_get(ev, 3));
    json_decref(ev);
    return d;
}

START_TEST(test_publisher_identification)
{
    fake_conn *sub = with_role("anon"), *a = with_role("anon"), *g = with_role("guest");
    subscribe(sub, "com.l");
    subscribe(sub, "com.disclosed.x");
    /* Not disclosed by default. */
    fake_conn_send(a, "[16, 1, {}, \"com.l\"]");
    json_t *d = next_event_details(sub);
    ck_assert_uint_eq(json_object_size(d), 0);
    json_decref(d);
    /* On request. */
    fake_conn_send(a, "[16, 2, {\"disclose_me\": true}, \"com.l\"]");
    d = next_event_details(sub);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "publisher")),
                     (json_int_t)rt_session_id(a->s));
    ck_assert_str_eq(json_string_value(json_object_get(d, "publisher_authid")),
                     rt_session_authid(a->s));
    ck_assert_str_eq(json_string_value(json_object_get(d, "publisher_authrole")), "anonymous");
    json_decref(d);
    /* Forced by the guest role's permission on com.disclosed.*, even with disclose_me false;
     * the same role elsewhere is not disclosed. */
    fake_conn_send(g, "[16, 3, {\"disclose_me\": false}, \"com.disclosed.x\"]");
    d = next_event_details(sub);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "publisher")),
                     (json_int_t)rt_session_id(g->s));
    ck_assert_str_eq(json_string_value(json_object_get(d, "publisher_authrole")), "guest");
    json_decref(d);
    fake_conn_send(g, "[16, 4, {}, \"com.l\"]");
    d = next_event_details(sub);
    ck_assert_ptr_null(json_object_get(d, "publisher"));
    json_decref(d);
    /* The anonymous role has no such permission. */
    fake_conn_send(a, "[16, 5, {}, \"com.disclosed.x\"]");
    d = next_event_details(sub);
    ck_assert_ptr_null(json_object_get(d, "publisher"));
    json_decref(d);
    fake_conn_free(sub);
    fake_conn_free(a);
    fake_conn_free(g);
}

END_TEST

START_TEST(test_welcome_announces_broker_features)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_send(c, "[1, \"realm1\", {\"roles\": {\"subscriber\": {}}}]");
    json_t *w = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(w, 0), WAMP_MSG_WELCOME);
    json_t *f = json_object_get(
            json_object_get(
                    json_object_get(json_object_get(json_array_get(w, 2), "roles"), "broker"),
                    "features"),
            "pattern_based_subscription");
    ck_assert(json_is_true(f));
    json_t *feats = json_object_get(
            json_object_get(json_object_get(json_array_get(w, 2), "roles"), "broker"), "features");
    ck_assert(json_is_true(json_object_get(feats, "subscriber_blackwhite_listing")));
    ck_assert(json_is_true(json_object_get(feats, "publisher_identification")));
    ck_assert(json_is_true(json_object_get(feats, "publisher_exclusion")));
    json_decref(w);
    fake_conn_free(c);
}

END_TEST

/* --- Event retention ------------------------------------------------------------------------- */

/* Asserts the next message of c is an EVENT of sub_id with Details.retained, the given
 * Details.topic (NULL: none) and args[0] arg; returns its details (owned). */
static json_t *expect_retained(fake_conn *c, int64_t sub_id, const char *topic, const char *arg)
{
    json_t *ev = fake_conn_next(c);
    ck_assert_ptr_nonnull(ev);
    ck_assert_int_eq(fake_msg_int(ev, 0), WAMP_MSG_EVENT);
    ck_assert_int_eq(fake_msg_int(ev, 1), sub_id);
    json_t *d = json_incref(json_array_get(ev, 3));
    ck_assert(json_is_true(json_object_get(d, "retained")));
    json_t *t = json_object_get(d, "topic");
    if (topic) {
        ck_assert_str_eq(json_string_value(t), topic);
    } else {
        ck_assert_ptr_null(t);
    }
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(ev, 4), 0)), arg);
    json_decref(ev);
    return d;
}

static rt_broker *broker_of(const char *realm)
{
    return rt_realm_broker(rt_router_find_realm(T.rt, realm));
}

START_TEST(test_retained_event_delivered_on_get_retained)
{
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    fake_conn *a = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *live = joined(WAMP_SER_JSON, "realm1");
    int64_t il = subscribe(live, "com.r");
    fake_conn_send(pub, "[16, 1, {\"retain\": true, \"acknowledge\": true}, \"com.r\", [\"v1\"]]");
    json_t *m = fake_conn_next(pub);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_PUBLISHED);
    json_decref(m);
    /* A live subscriber gets the event as usual, not marked retained. */
    json_t *d = next_event_details(live);
    ck_assert_ptr_null(json_object_get(d, "retained"));
    json_decref(d);
    (void)il;
    fake_conn_send(pub, "[16, 2, {\"retain\": true}, \"com.r\", [\"v2\"], {\"k\": [1, 2]}]");
    fake_conn_clear(live);
    ck_assert_uint_eq(rt_broker_retained_count(broker_of("realm1")), 1);
    /* Without get_retained: nothing but SUBSCRIBED. */
    int64_t ia = subscribe(a, "com.r");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    /* With it (subscribing again is fine): SUBSCRIBED, then the last retained event. */
    fake_conn_send(a, "[32, 7, {\"get_retained\": true}, \"com.r\"]");
    m = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    ck_assert_int_eq(fake_msg_int(m, 2), ia);
    json_decref(m);
    m = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_EVENT);
    ck_assert_int_eq(fake_msg_int(m, 1), ia);
    ck_assert(json_is_true(json_object_get(json_array_get(m, 3), "retained")));
    ck_assert_ptr_null(json_object_get(json_array_get(m, 3), "publisher"));
    json_t *kw = json_pack("{s:[i,i]}", "k", 1, 2);
    ck_assert(json_equal(json_array_get(m, 5), kw));
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(m, 4), 0)), "v2");
    json_decref(kw);
    json_decref(m);
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    /* Retained events outlive their publisher; a topic without one gives nothing. */
    fake_conn_free(pub);
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    subscribe_opts(b, 1, "{\"get_retained\": true}", "com.none");
    ck_assert_uint_eq(fake_conn_pending(b), 0);
    int64_t ib = subscribe_opts(b, 2, "{\"get_retained\": true}", "com.r");
    json_decref(expect_retained(b, ib, NULL, "v2"));
    /* Options must be booleans. */
    fake_conn_send(b, "[32, 3, {\"get_retained\": 1}, \"com.r\"]");
    fake_expect_error(b, WAMP_MSG_SUBSCRIBE, 3, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(b, "[16, 4, {\"retain\": \"yes\"}, \"com.r\", [\"v3\"]]");
    fake_expect_error(b, WAMP_MSG_PUBLISH, 4, WAMP_ERROR_INVALID_ARGUMENT);
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    fake_conn_free(a);
    fake_conn_free(b);
    fake_conn_free(live);
    /* Subscriptions are gone, the retained event stays with the realm. */
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 0);
    ck_assert_uint_eq(rt_broker_retained_count(broker_of("realm1")), 1);
}

END_TEST

START_TEST(test_retained_events_for_pattern_subscriptions)
{
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    static const char *const topics[] = {"com.r.a", "com.r.b", "com.x.a", "com.r"};
    for (int i = 0; i < 4; i++) {
        fake_conn_send(pub, "[16, %d, {\"retain\": true}, \"%s\", [\"%s\"]]", i + 1, topics[i],
                       topics[i]);
    }
    fake_conn *c = joined(WAMP_SER_MSGPACK, "realm1");
    int64_t ip = subscribe_opts(c, 1, "{\"match\": \"prefix\", \"get_retained\": true}", "com.r.");
    ck_assert_uint_eq(fake_conn_pending(c), 2);
    bool seen_a = false, seen_b = false;
    for (int i = 0; i < 2; i++) {
        json_t *ev = fake_conn_next(c);
        ck_assert_int_eq(fake_msg_int(ev, 1), ip);
        json_t *d = json_array_get(ev, 3);
        ck_assert(json_is_true(json_object_get(d, "retained")));
        const char *t = json_string_value(json_object_get(d, "topic"));
        ck_assert_str_eq(json_string_value(json_array_get(json_array_get(ev, 4), 0)), t);
        seen_a = seen_a || strcmp(t, "com.r.a") == 0;
        seen_b = seen_b || strcmp(t, "com.r.b") == 0;
        json_decref(ev);
    }
    ck_assert(seen_a && seen_b);
    int64_t iw =
            subscribe_opts(c, 2, "{\"match\": \"wildcard\", \"get_retained\": true}", "com..a");
    ck_assert_uint_eq(fake_conn_pending(c), 2);
    for (int i = 0; i < 2; i++) {
        json_t *ev = fake_conn_next(c);
        ck_assert_int_eq(fake_msg_int(ev, 1), iw);
        const char *t = json_string_value(json_object_get(json_array_get(ev, 3), "topic"));
        ck_assert(strcmp(t, "com.r.a") == 0 || strcmp(t, "com.x.a") == 0);
        json_decref(ev);
    }
    fake_conn_free(pub);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_retained_event_keeps_listing_and_disclosure)
{
    fake_conn *pub = with_role("anon"), *a = with_role("anon"), *g = with_role("guest");
    char o[256];
    snprintf(o, sizeof(o), "{\"retain\": true, \"eligible\": [%llu], \"disclose_me\": true}",
             (unsigned long long)rt_session_id(a->s));
    fake_conn_send(pub, "[16, 1, %s, \"com.l\", [\"for a\"]]", o);
    fake_conn_send(pub, "[16, 2, {\"retain\": true, \"exclude_authrole\": [\"anonymous\"]}, "
                        "\"com.m\", [\"for guests\"]]");
    int64_t ia = subscribe_opts(a, 1, "{\"get_retained\": true}", "com.l");
    json_t *d = expect_retained(a, ia, NULL, "for a");
    ck_assert_int_eq(json_integer_value(json_object_get(d, "publisher")),
                     (json_int_t)rt_session_id(pub->s));
    ck_assert_str_eq(json_string_value(json_object_get(d, "publisher_authrole")), "anonymous");
    json_decref(d);
    subscribe_opts(g, 1, "{\"get_retained\": true}", "com.l");
    ck_assert_uint_eq(fake_conn_pending(g), 0);
    subscribe_opts(a, 2, "{\"get_retained\": true}", "com.m");
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    int64_t ig = subscribe_opts(g, 2, "{\"get_retained\": true, \"match\": \"prefix\"}", "com.");
    d = expect_retained(g, ig, "com.m", "for guests");
    ck_assert_ptr_null(json_object_get(d, "publisher"));
    json_decref(d);
    ck_assert_uint_eq(fake_conn_pending(g), 0);
    fake_conn_free(pub);
    fake_conn_free(a);
    fake_conn_free(g);
}

END_TEST

/* Spec "Event Retention": a subscriber gets the most recent retained event it would have
 * received. An event retained for a few (black/white lists) does not hide the earlier one for
 * all from the others; a later event for all replaces both; a topic keeps a bounded number of
 * listed events above its event for all. */
START_TEST(test_listed_retained_event_keeps_the_one_for_all)
{
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1"), *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_MSGPACK, "realm1");
    rt_broker *br = broker_of("realm1");
    fake_conn_send(pub, "[16, 1, {\"retain\": true}, \"com.t\", [\"all\"]]");
    size_t bytes_all = rt_broker_retained_bytes(br);
    char o[128];
    snprintf(o, sizeof(o), "{\"retain\": true, \"eligible\": [%llu]}",
             (unsigned long long)rt_session_id(a->s));
    fake_conn_send(pub, "[16, 2, %s, \"com.t\", [\"a\"]]", o);
    ck_assert_uint_eq(rt_broker_retained_count(br), 1);
    size_t bytes_listed = rt_broker_retained_bytes(br) - bytes_all;
    int64_t ia = subscribe_opts(a, 1, "{\"get_retained\": true}", "com.t");
    json_decref(expect_retained(a, ia, NULL, "a"));
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    int64_t ib = subscribe_opts(b, 1, "{\"get_retained\": true}", "com.t");
    json_decref(expect_retained(b, ib, NULL, "all"));
    ck_assert_uint_eq(fake_conn_pending(b), 0);
    int64_t ip = subscribe_opts(b, 2, "{\"match\": \"prefix\", \"get_retained\": true}", "com.");
    json_decref(expect_retained(b, ip, "com.t", "all"));
    ck_assert_uint_eq(fake_conn_pending(b), 0);
    /* Many listed events: the topic keeps the newest few, and still the one for all. */
    for (int i = 0; i < 50; i++) {
        fake_conn_send(pub, "[16, 3, %s, \"com.t\", [\"a\"]]", o);
    }
    ck_assert_uint_le(rt_broker_retained_bytes(br), bytes_all + 10 * bytes_listed);
    fake_conn_clear(a);
    fake_conn_send(b, "[32, 4, {\"get_retained\": true}, \"com.t\"]");
    json_decref(fake_conn_next(b)); /* SUBSCRIBED */
    json_decref(expect_retained(b, ib, NULL, "all"));
    /* A new event for all replaces them all. */
    fake_conn_send(pub, "[16, 5, {\"retain\": true}, \"com.t\", [\"all2\"]]");
    fake_conn_clear(a);
    fake_conn_clear(b);
    ck_assert_uint_eq(rt_broker_retained_bytes(br), bytes_all + 1);
    fake_conn_send(a, "[32, 6, {\"get_retained\": true}, \"com.t\"]");
    json_decref(fake_conn_next(a)); /* SUBSCRIBED */
    json_decref(expect_retained(a, ia, NULL, "all2"));
    ck_assert_uint_eq(fake_conn_pending(a), 0);
    fake_conn_free(pub);
    fake_conn_free(a);
    fake_conn_free(b);
    ck_assert_uint_eq(rt_broker_retained_count(br), 1);
}

END_TEST

static void retain_limits_setup(void)
{
    test_router_init(&T);
    rt_router_free(T.rt);
    T.cfg.limits.max_retained_topics = 2;
    T.cfg.limits.max_retained_bytes = 64;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
}

START_TEST(test_retained_limits)
{
    fake_conn *pub = joined(WAMP_SER_JSON, "realm1");
    rt_broker *br = broker_of("realm1");
    /* "com.a" + ["x"]: 5 + 5 bytes. */
    fake_conn_send(pub, "[16, 1, {\"retain\": true}, \"com.a\", [\"x\"]]");
    ck_assert_uint_eq(rt_broker_retained_count(br), 1);
    ck_assert_uint_eq(rt_broker_retained_bytes(br), 10);
    fake_conn_send(pub, "[16, 2, {\"retain\": true}, \"com.b\", [\"y\"]]");
    ck_assert_uint_eq(rt_broker_retained_count(br), 2);
    /* A third topic is over max_retained_topics: not retained. */
    fake_conn_send(pub, "[16, 3, {\"retain\": true, \"acknowledge\": true}, \"com.c\", [\"z\"]]");
    json_t *m = fake_conn_next(pub);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_PUBLISHED); /* still published */
    json_decref(m);
    ck_assert_uint_eq(rt_broker_retained_count(br), 2);
    ck_assert_uint_eq(rt_broker_retained_bytes(br), 20);
    /* Replacing a retained topic is fine... */
    fake_conn_send(pub, "[16, 4, {\"retain\": true}, \"com.a\", [\"xx\"]]");
    ck_assert_uint_eq(rt_broker_retained_count(br), 2);
    ck_assert_uint_eq(rt_broker_retained_bytes(br), 21);
    /* ...unless the new event is over max_retained_bytes: then the topic keeps nothing. */
    fake_conn_send(pub,
                   "[16, 5, {\"retain\": true}, \"com.a\", [\"0123456789012345678901234567890123"
                   "456789012345678901234567890123456789\"]]");
    ck_assert_uint_eq(rt_broker_retained_count(br), 1);
    ck_assert_uint_eq(rt_broker_retained_bytes(br), 10);
    fake_conn *c = joined(WAMP_SER_JSON, "realm1");
    subscribe_opts(c, 1, "{\"get_retained\": true}", "com.a");
    subscribe_opts(c, 2, "{\"get_retained\": true}", "com.c");
    ck_assert_uint_eq(fake_conn_pending(c), 0);
    int64_t ib = subscribe_opts(c, 3, "{\"get_retained\": true}", "com.b");
    json_decref(expect_retained(c, ib, NULL, "y"));
    fake_conn_free(pub);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_welcome_announces_event_retention)
{
    fake_conn *c = fake_conn_new(T.rt, WAMP_SER_JSON);
    fake_conn_send(c, "[1, \"realm1\", {\"roles\": {\"subscriber\": {}}}]");
    json_t *w = fake_conn_next(c);
    json_t *feats = json_object_get(
            json_object_get(json_object_get(json_array_get(w, 2), "roles"), "broker"), "features");
    ck_assert(json_is_true(json_object_get(feats, "event_retention")));
    json_decref(w);
    fake_conn_free(c);
}

END_TEST

/* --- Payloads as bytes ------------------------------------------------------------------------ */

/* The next frame of c ends with the n bytes of tail (the payload ends a message). */
static void expect_tail(fake_conn *c, const void *tail, size_t n, const char *what)
{
    wamp_buf *b = fake_conn_next_raw(c);
    fake_assert_tail(b, tail, n, what);
    wamp_buf_unref(&b);
}

#define BYTES(s) (s), (sizeof(s) - 1)

/* The payload [2^64-1, "a\0b"], {"k\0": binary 01 02} in each serializer. */
static const char PAYLOAD_JSON[] =
        "[18446744073709551615,\"a\\u0000b\"],{\"k\\u0000\":\"\\u0000AQI=\"}]";
static const char PAYLOAD_MSGPACK[] = "\x92\xcf\xff\xff\xff\xff\xff\xff\xff\xff\xa3"
                                      "a\x00"
                                      "b\x81\xa2k\x00\xc4\x02\x01\x02";
static const char PAYLOAD_CBOR[] = "\x82\x1b\xff\xff\xff\xff\xff\xff\xff\xff\x63"
                                   "a\x00"
                                   "b\xa1\x62k\x00\x42\x01\x02";

static void expect_payload(fake_conn *c, const char *what)
{
    switch (c->ser) {
    case WAMP_SER_JSON:
        expect_tail(c, BYTES(PAYLOAD_JSON), what);
        break;
    case WAMP_SER_MSGPACK:
        expect_tail(c, BYTES(PAYLOAD_MSGPACK), what);
        break;
    case WAMP_SER_CBOR:
        expect_tail(c, BYTES(PAYLOAD_CBOR), what);
        break;
    }
}

/* A uint64 above 2^63-1, NUL in a value and in a key, and binary reach subscribers of every
 * serializer exactly (MessagePack to MessagePack byte for byte), from publishers of each, live
 * and as a retained event. */
START_TEST(test_payload_exact_across_serializers)
{
    static const wamp_ser sers[] = {WAMP_SER_JSON, WAMP_SER_MSGPACK, WAMP_SER_CBOR};
    fake_conn *subs[3];
    for (int i = 0; i < 3; i++) {
        subs[i] = joined(sers[i], "realm1");
        subscribe(subs[i], "com.exact");
    }
    fake_conn *pub = joined(WAMP_SER_MSGPACK, "realm1");
    unsigned char msg[64] = "\x96\x10\x01\x81\xa6retain\xc3\xa9"
                            "com.exact";
    size_t n = 22;
    memcpy(msg + n, PAYLOAD_MSGPACK, sizeof(PAYLOAD_MSGPACK) - 1);
    ck_assert_int_eq(fake_conn_send_raw(pub, msg, n + sizeof(PAYLOAD_MSGPACK) - 1), WAMP_OK);
    for (int i = 0; i < 3; i++) {
        expect_payload(subs[i], "from msgpack");
    }
    fake_conn *jpub = joined(WAMP_SER_JSON, "realm1");
    char text[160];
    int tn = snprintf(text, sizeof(text), "[16,2,{},\"com.exact\",%s", PAYLOAD_JSON);
    ck_assert_int_eq(fake_conn_send_raw(jpub, text, (size_t)tn), WAMP_OK);
    for (int i = 0; i < 3; i++) {
        expect_payload(subs[i], "from json");
    }
    /* The retained event (the MessagePack publication) to a late CBOR subscriber. */
    fake_conn *late = joined(WAMP_SER_CBOR, "realm1");
    fake_conn_send(late, "[32, 1, {\"get_retained\": true}, \"com.exact\"]");
    wamp_buf *subd = fake_conn_next_raw(late); /* SUBSCRIBED (CBOR array of 3: 0x83, then 33) */
    ck_assert(subd && wamp_buf_cdata(subd)[0] == 0x83 && wamp_buf_cdata(subd)[1] == 0x18 &&
              wamp_buf_cdata(subd)[2] == WAMP_MSG_SUBSCRIBED);
    wamp_buf_unref(&subd);
    expect_payload(late, "retained to cbor");
    fake_conn_free(late);
    fake_conn_free(jpub);
    fake_conn_free(pub);
    for (int i = 0; i < 3; i++) {
        fake_conn_free(subs[i]);
    }
}

END_TEST

/* A joined session whose HELLO announces payload_passthru_mode (ppt) for its roles, or not. */
static fake_conn *joined_ppt(wamp_ser ser, bool ppt)
{
    return fake_conn_new_ppt(T.rt, ser, ppt, "publisher", "subscriber", "broker");
}

/* Payload passthru mode: PUBLISH.Options.ppt_* become EVENT.Details.ppt_* (retained events
 * too), the payload untouched; bad ppt options are invalid_argument; unannounced use aborts. */
START_TEST(test_payload_passthru)
{
    fake_conn *sub = joined_ppt(WAMP_SER_MSGPACK, true);
    int64_t sid = subscribe(sub, "com.ppt");
    fake_conn *pub = joined_ppt(WAMP_SER_JSON, true);
    fake_conn_send(pub, "[16, 1, {\"ppt_scheme\": \"wamp.eth\", \"ppt_serializer\": \"cbor\", "
                        "\"ppt_cipher\": \"xsalsa20poly1305\", \"ppt_keyid\": \"0xab\", "
                        "\"retain\": true}, \"com.ppt\", [\"\\u0000AQID\"]]");
    json_t *ev = fake_conn_next(sub);
    json_t *want =
            json_pack("[i, I, I, {s:s, s:s, s:s, s:s}, [s#]]", WAMP_MSG_EVENT, (json_int_t)sid,
                      fake_msg_int(ev, 2), "ppt_scheme", "wamp.eth", "ppt_serializer", "cbor",
                      "ppt_cipher", "xsalsa20poly1305", "ppt_keyid", "0xab", "\0AQID", (size_t)5);
    ck_assert_msg(json_equal(ev, want), "EVENT differs");
    json_decref(ev);
    json_decref(want);
    fake_conn *late = joined_ppt(WAMP_SER_CBOR, true);
    fake_conn_send(late, "[32, 1, {\"get_retained\": true}, \"com.ppt\"]");
    json_decref(fake_conn_next(late));
    ev = fake_conn_next(late);
    json_t *d = json_array_get(ev, 3);
    ck_assert_str_eq(json_string_value(json_object_get(d, "ppt_scheme")), "wamp.eth");
    ck_assert_str_eq(json_string_value(json_object_get(d, "ppt_keyid")), "0xab");
    ck_assert(json_is_true(json_object_get(d, "retained")));
    json_decref(ev);

    fake_conn_send(pub, "[16, 2, {\"ppt_keyid\": \"k\", \"acknowledge\": true}, \"com.ppt\"]");
    fake_expect_error(pub, WAMP_MSG_PUBLISH, 2, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(pub, "[16, 3, {\"ppt_scheme\": \"\"}, \"com.ppt\"]");
    fake_expect_error(pub, WAMP_MSG_PUBLISH, 3, WAMP_ERROR_INVALID_ARGUMENT);
    ck_assert_uint_eq(fake_conn_pending(sub), 0);
    fake_conn *plain = joined_ppt(WAMP_SER_JSON, false);
    fake_conn_send(plain, "[16, 4, {\"ppt_scheme\": \"x_y\"}, \"com.ppt\", [\"\\u0000AA==\"]]");
    fake_expect_abort(plain, WAMP_ERROR_PROTOCOL_VIOLATION);
    ck_assert_uint_eq(fake_conn_pending(sub), 0);
    fake_conn_free(plain);
    fake_conn_free(late);
    fake_conn_free(pub);
    fake_conn_free(sub);
}

END_TEST

/* PUBLISH and SUBSCRIBE options of the wrong type (forward_for, transaction_hash, the lists)
 * or strings with NUL get ERROR invalid_argument naming the option, with or without
 * acknowledge; nothing is delivered or subscribed. */
START_TEST(test_wrongly_typed_options)
{
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(b, "[32, 1, {}, \"com.typed\"]");
    fake_conn_clear(b);
    static const char *const bad[][2] = {
            {"{\"forward_for\": \"hello\"}", "forward_for"},
            {"{\"transaction_hash\": 123, \"acknowledge\": true}", "transaction_hash"},
            {"{\"eligible_authid\": [\"joe\\u0000x\"]}", "eligible_authid"},
            {"{\"exclude_authrole\": [\"anonymous\\u0000\"]}", "exclude_authrole"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fake_conn_send(a, "[16, %zu, %s, \"com.typed\", [1]]", i + 1, bad[i][0]);
        fake_expect_error_text(a, WAMP_MSG_PUBLISH, (int64_t)i + 1, WAMP_ERROR_INVALID_ARGUMENT,
                               bad[i][1]);
        ck_assert_uint_eq(fake_conn_pending(b), 0);
    }
    size_t subs = test_router_sub_count(T.rt, "realm1");
    fake_conn_send(a, "[32, 9, {\"match\": \"prefix\\u0000x\"}, \"com.\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 9, WAMP_ERROR_INVALID_ARGUMENT);
    fake_conn_send(a, "[32, 10, {\"forward_for\": [1]}, \"com.x\"]");
    fake_expect_error(a, WAMP_MSG_SUBSCRIBE, 10, WAMP_ERROR_INVALID_ARGUMENT);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), subs);
    fake_conn_free(a);
    fake_conn_free(b);
}

END_TEST

static Suite *rt_broker_suite(void)
{
    Suite *s = suite_create("rt_broker");
    TCase *tc = tcase_create("pubsub");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_subscribers_share_subscription_id);
    tcase_add_test(tc, test_membership_found_from_either_side);
    tcase_add_test(tc, test_publish_fans_out_excluding_publisher);
    tcase_add_test(tc, test_exclude_me_false_delivers_to_publisher);
    tcase_add_test(tc, test_publish_without_ack_is_silent);
    tcase_add_test(tc, test_event_encoded_once_per_serializer);
    tcase_add_test(tc, test_unsubscribe);
    tcase_add_test(tc, test_realms_are_isolated);
    tcase_add_test(tc, test_subscribe_errors);
    tcase_add_test(tc, test_authorization);
    tcase_add_test(tc, test_slow_consumer_is_disconnected);
    tcase_add_test(tc, test_prefix_and_wildcard_match);
    tcase_add_test(tc, test_pattern_subscription_ids_shared_per_uri_and_policy);
    tcase_add_test(tc, test_one_event_per_matching_subscription);
    tcase_add_test(tc, test_pattern_event_encoded_once_per_serializer);
    tcase_add_test(tc, test_pattern_unsubscribe_and_leave_cleanup);
    tcase_add_test(tc, test_pattern_index_agrees_with_brute_force);
    tcase_add_test(tc, test_publish_local_reaches_pattern_subscriptions);
    tcase_add_test(tc, test_pattern_index_allocates_nothing_per_publish);
    tcase_add_test(tc, test_welcome_announces_broker_features);
    tcase_add_test(tc, test_payload_exact_across_serializers);
    tcase_add_test(tc, test_payload_passthru);
    tcase_add_test(tc, test_wrongly_typed_options);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("roles");
    tcase_add_checked_fixture(tr, roles_setup, teardown);
    tcase_set_timeout(tr, 10);
    tcase_add_test(tr, test_blackwhite_listing);
    tcase_add_test(tr, test_patterns_serve_only_what_the_role_may);
    tcase_add_test(tr, test_blackwhite_listing_over_patterns_and_counts);
    tcase_add_test(tr, test_publisher_identification);
    tcase_add_test(tr, test_retained_event_keeps_listing_and_disclosure);
    suite_add_tcase(s, tr);
    TCase *tt = tcase_create("retention");
    tcase_add_checked_fixture(tt, setup, teardown);
    tcase_set_timeout(tt, 10);
    tcase_add_test(tt, test_retained_event_delivered_on_get_retained);
    tcase_add_test(tt, test_retained_events_for_pattern_subscriptions);
    tcase_add_test(tt, test_listed_retained_event_keeps_the_one_for_all);
    tcase_add_test(tt, test_welcome_announces_event_retention);
    suite_add_tcase(s, tt);
    TCase *tl = tcase_create("retention_limits");
    tcase_add_checked_fixture(tl, retain_limits_setup, teardown);
    tcase_set_timeout(tl, 10);
    tcase_add_test(tl, test_retained_limits);
    suite_add_tcase(s, tl);
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
