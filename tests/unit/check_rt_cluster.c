/* check_rt_cluster.c: cluster membership over the fake bus (tests/support/fake_cluster.c):
 * joining, the node list, a duplicate id refused, kill -9 expiry through the fake clock, link
 * down/up and re-announce, lost messages, clean leave; and the fake link's own request/reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_clock.h"
#include "fake_cluster.h"
#include "rt_cluster.h"

#define HB_MS  1000
#define TTL_MS 4000

typedef struct node {
    rt_cluster *c;
    fake_link *l;
} node;

static fake_clock clk;
static fake_bus *bus;
static node nodes[4];

static void setup(void)
{
    clk.now_us = 1000000;
    bus = fake_bus_new(&clk);
    ck_assert_ptr_nonnull(bus);
    memset(nodes, 0, sizeof(nodes));
}

static void teardown(void)
{
    fake_bus_free(bus);
    for (size_t i = 0; i < 4; i++) {
        rt_cluster_free(nodes[i].c);
    }
}

/* Node i with id and instance, its link attached (connecting: not up yet). */
static node *start(size_t i, const char *id, uint64_t instance)
{
    node *n = &nodes[i];
    n->c = fake_cluster_member_new(bus, &clk, id, instance, HB_MS, TTL_MS, 500, &n->l);
    ck_assert_ptr_nonnull(n->c);
    return n;
}

/* kill -9: the link and the member vanish without a leave. */
static void kill_node(node *n)
{
    fake_link_free(n->l);
    rt_cluster_free(n->c);
    n->l = NULL;
    n->c = NULL;
}

/* Advances the clock by ms in 100 ms ticks, running every live node and the bus. */
static void run_ms(uint64_t ms)
{
    fake_bus_run(bus);
    for (uint64_t t = 0; t < ms; t += 100) {
        fake_clock_advance_ms(&clk, 100);
        for (size_t i = 0; i < 4; i++) {
            if (nodes[i].c) {
                rt_cluster_tick(nodes[i].c);
            }
        }
        fake_bus_run(bus);
    }
}

/* The node list of n as "a,b,c". */
static const char *list_of(const node *n)
{
    static char buf[256];
    buf[0] = '\0';
    for (size_t i = 0; i < rt_cluster_node_count(n->c); i++) {
        if (i) {
            strcat(buf, ",");
        }
        strcat(buf, rt_cluster_node_at(n->c, i));
    }
    return buf;
}

/* Nodes a and b, joined, each seeing both. */
static void two_joined(node **a, node **b)
{
    *a = start(0, "a", 1);
    *b = start(1, "b", 2);
    fake_link_set_up((*a)->l, true);
    fake_link_set_up((*b)->l, true);
    run_ms(100);
    ck_assert_str_eq(list_of(*a), "a,b");
    ck_assert_str_eq(list_of(*b), "a,b");
}

START_TEST(test_nodes_join_and_see_each_other)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    ck_assert_str_eq(list_of(a), "a");
    ck_assert_int_eq(rt_cluster_member_state_get(a->c), RT_CLUSTER_MEMBER_OFFLINE);
    fake_link_set_up(a->l, true);
    fake_bus_run(bus);
    ck_assert_int_eq(rt_cluster_member_state_get(a->c), RT_CLUSTER_MEMBER_JOINED);
    ck_assert(rt_cluster_is_settled(a->c));
    ck_assert_str_eq(list_of(a), "a");
    fake_link_set_up(b->l, true);
    /* b's join announcement makes a read the list at once: no heartbeat needed. */
    fake_bus_run(bus);
    ck_assert_str_eq(list_of(b), "a,b");
    ck_assert_str_eq(list_of(a), "a,b");
    rt_cluster_link_stats st;
    rt_cluster_link_stats_get(a->c, &st);
    ck_assert_int_eq(st.state, RT_CLUSTER_LINK_UP);
    ck_assert_uint_gt(st.msgs_out, 0);
    ck_assert_uint_gt(st.msgs_in, 0);
}

END_TEST

START_TEST(test_duplicate_id_refused_while_owner_lives)
{
    node *a = start(0, "a", 1);
    fake_link_set_up(a->l, true);
    run_ms(500);
    node *dup = start(1, "a", 99);
    fake_link_set_up(dup->l, true);
    /* The live owner keeps writing its key: the duplicate never gets it. */
    run_ms(TTL_MS);
    ck_assert_int_eq(rt_cluster_member_state_get(dup->c), RT_CLUSTER_MEMBER_JOINING);
    ck_assert(!rt_cluster_is_settled(dup->c));
    run_ms(3 * HB_MS);
    ck_assert(rt_cluster_is_refused(dup->c));
    ck_assert(rt_cluster_is_settled(dup->c));
    ck_assert_int_eq(rt_cluster_member_state_get(a->c), RT_CLUSTER_MEMBER_JOINED);
    ck_assert_str_eq(list_of(a), "a");
    /* The refused node stays out, also when its link comes back. */
    fake_link_set_up(dup->l, false);
    run_ms(100);
    fake_link_set_up(dup->l, true);
    run_ms(2 * HB_MS);
    ck_assert(rt_cluster_is_refused(dup->c));
}

END_TEST

START_TEST(test_killed_node_expires_from_the_list)
{
    node *a, *b;
    two_joined(&a, &b);
    kill_node(b);
    run_ms(TTL_MS - 1000);
    ck_assert_str_eq(list_of(a), "a,b"); /* the key lives until its TTL */
    /* Gone at the second listing after its key expired (the fake bus expires a key exactly
     * node_ttl after its last write; NATS checks expiry about once a second, hence the
     * documented node_ttl + 3 heartbeats). */
    run_ms(1000 + 2 * HB_MS);
    ck_assert_str_eq(list_of(a), "a");
}

END_TEST

START_TEST(test_restart_after_kill_takes_over_the_expired_key)
{
    node *a = start(0, "a", 1);
    fake_link_set_up(a->l, true);
    run_ms(500);
    kill_node(a);
    /* The same id restarted at once (new instance): waits for the old key to expire, then
     * joins instead of being refused. */
    a = start(0, "a", 2);
    fake_link_set_up(a->l, true);
    run_ms(TTL_MS + HB_MS);
    ck_assert_int_eq(rt_cluster_member_state_get(a->c), RT_CLUSTER_MEMBER_JOINED);
}

END_TEST

static void count_tick(void *arg)
{
    (*(int *)arg)++;
}

START_TEST(test_on_tick_callbacks)
{
    node *a = start(0, "a", 1);
    int first = 0, second = 0;
    ck_assert_int_eq(rt_cluster_add_on_tick(a->c, count_tick, &first), WAMP_OK);
    ck_assert_int_eq(rt_cluster_add_on_tick(a->c, count_tick, &second), WAMP_OK);
    /* Every tick, also while the link is not up. */
    run_ms(300);
    ck_assert_int_eq(first, 3);
    ck_assert_int_eq(second, 3);
    rt_cluster_remove_on_tick(a->c, count_tick, &first);
    rt_cluster_remove_on_tick(a->c, count_tick, &first); /* not held: nothing happens */
    fake_link_set_up(a->l, true);
    run_ms(200);
    ck_assert_int_eq(first, 3);
    ck_assert_int_ge(second, 5);
    /* At most RT_CLUSTER_ON_JOINED_MAX. */
    int more[RT_CLUSTER_ON_JOINED_MAX];
    for (int i = 0; i < RT_CLUSTER_ON_JOINED_MAX - 1; i++) {
        ck_assert_int_eq(rt_cluster_add_on_tick(a->c, count_tick, &more[i]), WAMP_OK);
    }
    ck_assert_int_eq(rt_cluster_add_on_tick(a->c, count_tick, &first), WAMP_ETOOBIG);
}

END_TEST

START_TEST(test_link_down_up_reannounces)
{
    node *a, *b;
    two_joined(&a, &b);
    fake_link_set_up(a->l, false);
    run_ms(100);
    ck_assert_int_eq(rt_cluster_member_state_get(a->c), RT_CLUSTER_MEMBER_OFFLINE);
    ck_assert_str_eq(list_of(a), "a"); /* down: only itself */
    rt_cluster_link_stats st;
    rt_cluster_link_stats_get(a->c, &st);
    ck_assert_int_eq(st.state, RT_CLUSTER_LINK_DOWN);
    /* The bus still holds a's key (not expired): a takes it over as its own instance. */
    fake_link_set_up(a->l, true);
    run_ms(100);
    ck_assert_int_eq(rt_cluster_member_state_get(a->c), RT_CLUSTER_MEMBER_JOINED);
    ck_assert_str_eq(list_of(a), "a,b");
    rt_cluster_link_stats_get(a->c, &st);
    ck_assert_uint_eq(st.reconnects, 1);
    /* Down longer than the TTL: b drops a, a re-creates its key when back, b sees it again. */
    fake_link_set_up(a->l, false);
    run_ms(TTL_MS + 2 * HB_MS);
    ck_assert_str_eq(list_of(b), "b");
    fake_link_set_up(a->l, true);
    run_ms(100);
    ck_assert_str_eq(list_of(b), "a,b");
    ck_assert_str_eq(list_of(a), "a,b");
}

END_TEST

/* What rt_cluster_add_on_node_joined() reported, as "b,b,...", a join learnt from a heartbeat
 * marked with "~" ("b~"). */
static char joins_seen[256];

static void on_node_joined(void *arg, const char *node_id, bool announced)
{
    (void)arg;
    if (joins_seen[0]) {
        strcat(joins_seen, ",");
    }
    strcat(joins_seen, node_id);
    if (!announced) {
        strcat(joins_seen, "~");
    }
}

/* Another node's joins are reported (the first one, and again after its link came back), this
 * node's own are not; announcements that name no valid node (a NUL inside, too long, a bad
 * token) are none, and are read within their bounds. */
START_TEST(test_node_joined_reported)
{
    joins_seen[0] = '\0';
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    ck_assert_int_eq(rt_cluster_add_on_node_joined(a->c, on_node_joined, NULL), WAMP_OK);
    fake_link_set_up(a->l, true);
    run_ms(100);
    ck_assert_str_eq(joins_seen, "");
    fake_link_set_up(b->l, true);
    run_ms(100);
    ck_assert_str_eq(joins_seen, "b");
    fake_link_set_up(b->l, false);
    run_ms(HB_MS);
    fake_link_set_up(b->l, true);
    run_ms(100);
    ck_assert_str_eq(joins_seen, "b,b");
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    char data[4000];
    memset(data, 'x', sizeof(data));
    data[0] = 'b';
    data[1] = '\0'; /* "b", a NUL, then 3998 octets */
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.nodes.changed", NULL, data, sizeof(data)),
                     WAMP_OK);
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.nodes.changed", NULL, data, 70), WAMP_OK);
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.nodes.changed", NULL, "b.c", 3), WAMP_OK);
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.nodes.changed", NULL, "left:b", 6), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_str_eq(joins_seen, "b,b");
    ck_assert_str_eq(list_of(a), "a,b");
    rt_cluster_remove_on_node_joined(a->c, on_node_joined, NULL);
    fake_link_set_up(b->l, false);
    run_ms(HB_MS);
    fake_link_set_up(b->l, true);
    run_ms(100);
    ck_assert_str_eq(joins_seen, "b,b"); /* removed */
}

END_TEST

/* A join whose announcement is lost is reported from the node's heartbeat reading: at once from
 * the reading sent right behind the announcement, else at the next heartbeat; a new process in
 * place of a killed one likewise. Each join once: an announcement that comes after the reading
 * told of it is no news, nor is a reading after the announcement. Readings from a node of an
 * earlier version (no join) and readings that are not valid change nothing. */
START_TEST(test_join_heard_from_heartbeat)
{
    joins_seen[0] = '\0';
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    ck_assert_int_eq(rt_cluster_add_on_node_joined(a->c, on_node_joined, NULL), WAMP_OK);
    fake_link_set_up(a->l, true);
    fake_link_set_up(b->l, true);
    run_ms(HB_MS + 100); /* a has heard one of b's heartbeats since it listed b */
    ck_assert_str_eq(list_of(a), "a,b");
    ck_assert_str_eq(joins_seen, "b");
    /* b's link flaps; its announcement is lost, the reading behind it is not. */
    fake_link_set_up(b->l, false);
    run_ms(HB_MS);
    ck_assert_str_eq(list_of(a), "a,b");
    fake_link_drop(b->l, 1); /* its announcement */
    fake_link_set_up(b->l, true);
    run_ms(100);
    ck_assert_str_eq(joins_seen, "b,b~");
    run_ms(2 * HB_MS);
    ck_assert_str_eq(joins_seen, "b,b~"); /* once */
    /* Again, the reading behind the announcement lost too: the next heartbeat tells. */
    fake_link_set_up(b->l, false);
    run_ms(HB_MS);
    fake_link_drop(b->l, 2); /* its announcement and the reading behind it */
    fake_link_set_up(b->l, true);
    run_ms(100);
    ck_assert_uint_eq(fake_bus_dropped(bus), 3);
    ck_assert_str_eq(joins_seen, "b,b~");
    run_ms(HB_MS);
    ck_assert_str_eq(joins_seen, "b,b~,b~");
    /* The reading first, the announcement after it: one report. The fake bus delivers in order,
     * so the two are sent by hand: b's next join as b would send it. */
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    const char *reading = "b 5 0000000000000002.4", *ann = "b 0000000000000002.4";
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.clock", NULL, reading, strlen(reading)),
                     WAMP_OK);
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.nodes.changed", NULL, ann, strlen(ann)),
                     WAMP_OK);
    fake_bus_run(bus);
    ck_assert_str_eq(joins_seen, "b,b~,b~,b~");
    /* Readings of an earlier version, and ones that are not valid: nothing. */
    static const char *const odd[] = {"b 5",
                                      "b 5 0000000000000002",
                                      "b 5 000000000000000G.5",
                                      "b 5 0000000000000002.",
                                      "b 5 0000000000000002.99999999999999999999",
                                      "b 5 0000000000000002.6 x",
                                      "b 5 00000000000000002.6"};
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.clock", NULL, odd[i], strlen(odd[i])),
                         WAMP_OK);
    }
    fake_bus_run(bus);
    ck_assert_str_eq(joins_seen, "b,b~,b~,b~");
    /* b's own readings (join 4 is not what b has) are news again: a join other than the last. */
    run_ms(HB_MS);
    ck_assert_str_eq(joins_seen, "b,b~,b~,b~,b~");
    /* A new process in place of b, killed: both of its join messages lost; it joins once its
     * old key expired, before a's list missed b. */
    kill_node(b);
    b = start(1, "b", 3);
    fake_link_drop(b->l, 2);
    fake_link_set_up(b->l, true);
    bool missed = false;
    for (int t = 0; t < 100 && rt_cluster_member_state_get(b->c) != RT_CLUSTER_MEMBER_JOINED; t++) {
        run_ms(100);
        missed |= !rt_cluster_has_node(a->c, "b");
    }
    ck_assert_int_eq(rt_cluster_member_state_get(b->c), RT_CLUSTER_MEMBER_JOINED);
    ck_assert(!missed);
    ck_assert_uint_eq(fake_bus_dropped(bus), 5);
    ck_assert_str_eq(joins_seen, "b,b~,b~,b~,b~");
    run_ms(HB_MS);
    ck_assert_str_eq(joins_seen, "b,b~,b~,b~,b~,b~");
    rt_cluster_remove_on_node_joined(a->c, on_node_joined, NULL);
}

END_TEST

START_TEST(test_lost_announcement_caught_by_heartbeat)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    fake_link_set_up(a->l, true);
    run_ms(100);
    fake_bus_drop(bus, 1); /* b's "nodes.changed" */
    fake_link_set_up(b->l, true);
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_bus_dropped(bus), 1);
    ck_assert_str_eq(list_of(a), "a");
    run_ms(HB_MS);
    ck_assert_str_eq(list_of(a), "a,b");
}

END_TEST

START_TEST(test_torn_listing_keeps_the_list)
{
    node *a, *b;
    two_joined(&a, &b);
    fake_bus_tear_keys(bus, 2); /* each node's next listing: one node twice, the other missing */
    run_ms(HB_MS);
    ck_assert_str_eq(list_of(a), "a,b");
    ck_assert_str_eq(list_of(b), "a,b");
    ck_assert(rt_cluster_has_node(a->c, "b"));
    /* A real leave is still seen. */
    rt_cluster_leave(b->c);
    fake_bus_run(bus);
    ck_assert_str_eq(list_of(a), "a");
}

END_TEST

START_TEST(test_short_listing_keeps_the_node)
{
    node *a, *b;
    two_joined(&a, &b);
    /* Each node's next listing lacks one key without repeating another: nobody leaves. */
    fake_bus_short_keys(bus, 2);
    run_ms(HB_MS);
    ck_assert_str_eq(list_of(a), "a,b");
    ck_assert_str_eq(list_of(b), "a,b");
    /* A whole listing again: the mark is gone, so one more short listing drops nobody. */
    run_ms(HB_MS);
    fake_bus_short_keys(bus, 2);
    run_ms(HB_MS);
    ck_assert_str_eq(list_of(a), "a,b");
    ck_assert_str_eq(list_of(b), "a,b");
    /* Two short listings in a row for each node: the one missing twice goes. */
    run_ms(HB_MS);
    fake_bus_short_keys(bus, 4);
    run_ms(2 * HB_MS);
    ck_assert_uint_eq(rt_cluster_node_count(a->c) + rt_cluster_node_count(b->c), 3);
    ck_assert(rt_cluster_has_node(a->c, "a"));
    ck_assert(rt_cluster_has_node(b->c, "b"));
    /* ... and comes back with the next whole listing (its key never went). */
    run_ms(HB_MS);
    ck_assert_str_eq(list_of(a), "a,b");
    ck_assert_str_eq(list_of(b), "a,b");
}

END_TEST

START_TEST(test_clean_leave_is_seen_at_once)
{
    node *a, *b;
    two_joined(&a, &b);
    rt_cluster_leave(b->c);
    ck_assert(rt_cluster_is_leaving(b->c));
    fake_bus_run(bus); /* no tick: the announcement after the delete does it */
    ck_assert(!rt_cluster_is_leaving(b->c));
    ck_assert_str_eq(list_of(a), "a");
    /* A left node does not join again. */
    run_ms(2 * HB_MS);
    ck_assert_int_eq(rt_cluster_member_state_get(b->c), RT_CLUSTER_MEMBER_OFFLINE);
    ck_assert_str_eq(list_of(a), "a");
}

END_TEST

START_TEST(test_token_rule)
{
    ck_assert(rt_cluster_token_is_valid("node-1_A"));
    ck_assert(!rt_cluster_token_is_valid(""));
    ck_assert(!rt_cluster_token_is_valid(NULL));
    ck_assert(!rt_cluster_token_is_valid("a.b"));
    ck_assert(!rt_cluster_token_is_valid("a*"));
    ck_assert(!rt_cluster_token_is_valid("a b"));
    char long_id[RT_CLUSTER_TOKEN_MAX + 2];
    memset(long_id, 'x', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    ck_assert(!rt_cluster_token_is_valid(long_id));
    long_id[RT_CLUSTER_TOKEN_MAX] = '\0';
    ck_assert(rt_cluster_token_is_valid(long_id));
}

END_TEST

/* ---- The fake link's request/reply, as the NATS adapter must behave -------------------------- */

typedef struct reply_box {
    int calls;
    wamp_err err;
    char data[256];
} reply_box;

static void on_reply(void *arg, wamp_err err, const void *data, size_t len)
{
    reply_box *r = arg;
    r->calls++;
    r->err = err;
    snprintf(r->data, sizeof(r->data), "%.*s", (int)len, (const char *)data);
}

START_TEST(test_info_request_reply_and_errors)
{
    node *a = start(0, "a", 0xab);
    node *b = start(1, "b", 2);
    fake_link_set_up(a->l, true);
    fake_link_set_up(b->l, true);
    run_ms(100);
    reply_box r = {0};
    ck_assert_int_eq(fake_link_ops.request(b->l, "wsc.node.a.info", "", 0, 500, on_reply, &r),
                     WAMP_OK);
    ck_assert_int_eq(r.calls, 0); /* never from inside the op */
    fake_bus_run(bus);
    ck_assert_int_eq(r.calls, 1);
    ck_assert_int_eq(r.err, WAMP_OK);
    ck_assert_ptr_nonnull(strstr(r.data, "\"instance\":\"00000000000000ab\""));
    ck_assert_ptr_nonnull(strstr(r.data, "\"version\":\"9.9\""));

    memset(&r, 0, sizeof(r));
    fake_link_ops.request(b->l, "wsc.node.nobody.info", "", 0, 500, on_reply, &r);
    fake_bus_run(bus);
    ck_assert_int_eq(r.calls, 1);
    ck_assert_int_eq(r.err, WAMP_ENOTFOUND);

    memset(&r, 0, sizeof(r));
    fake_bus_drop(bus, 1);
    fake_link_ops.request(b->l, "wsc.node.a.info", "", 0, 500, on_reply, &r);
    run_ms(400);
    ck_assert_int_eq(r.calls, 0);
    run_ms(200);
    ck_assert_int_eq(r.calls, 1);
    ck_assert_int_eq(r.err, WAMP_EIO);

    memset(&r, 0, sizeof(r));
    fake_bus_drop(bus, 1);
    fake_link_ops.request(b->l, "wsc.node.a.info", "", 0, 500, on_reply, &r);
    fake_link_set_up(b->l, false);
    fake_bus_run(bus);
    ck_assert_int_eq(r.calls, 1);
    ck_assert_int_eq(r.err, WAMP_ECLOSED);
    ck_assert_int_eq(fake_link_ops.publish(b->l, "wsc.x", NULL, "", 0), WAMP_ECLOSED);
}

END_TEST

typedef struct msg_box {
    int calls;
    char subject[64];
} msg_box;

static void on_msg(void *arg, const char *subject, const char *reply, const void *data, size_t len)
{
    (void)reply;
    (void)data;
    (void)len;
    msg_box *m = arg;
    m->calls++;
    snprintf(m->subject, sizeof(m->subject), "%s", subject);
}

START_TEST(test_wildcards_and_queue_groups)
{
    fake_link *l1 = fake_link_new(bus, NULL);
    fake_link *l2 = fake_link_new(bus, NULL);
    fake_link_set_up(l1, true);
    fake_link_set_up(l2, true);
    fake_bus_run(bus);
    msg_box star = {0}, gt = {0}, q1 = {0}, q2 = {0};
    uint64_t s_star, s_gt, s_q1, s_q2;
    ck_assert_int_eq(fake_link_ops.subscribe(l1, "x.*.z", NULL, on_msg, &star, &s_star), WAMP_OK);
    ck_assert_int_eq(fake_link_ops.subscribe(l1, "x.>", NULL, on_msg, &gt, &s_gt), WAMP_OK);
    ck_assert_int_eq(fake_link_ops.subscribe(l1, "q", "g", on_msg, &q1, &s_q1), WAMP_OK);
    ck_assert_int_eq(fake_link_ops.subscribe(l2, "q", "g", on_msg, &q2, &s_q2), WAMP_OK);
    fake_link_ops.publish(l2, "x.y.z", NULL, "1", 1);
    fake_link_ops.publish(l2, "x.y.z.w", NULL, "1", 1);
    fake_link_ops.publish(l2, "x", NULL, "1", 1);
    fake_link_ops.publish(l2, "q", NULL, "1", 1);
    fake_bus_run(bus);
    ck_assert_int_eq(star.calls, 1);
    ck_assert_int_eq(gt.calls, 2);
    ck_assert_str_eq(gt.subject, "x.y.z.w");
    ck_assert_int_eq(q1.calls + q2.calls, 1); /* one member of the group */
    fake_link_ops.unsubscribe(l1, s_gt);
    fake_link_ops.publish(l2, "x.y.z", NULL, "1", 1);
    fake_bus_run(bus);
    ck_assert_int_eq(gt.calls, 2);
    ck_assert_int_eq(star.calls, 2);
}

END_TEST

static Suite *rt_cluster_suite(void)
{
    Suite *s = suite_create("rt_cluster");
    TCase *tc = tcase_create("membership");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_nodes_join_and_see_each_other);
    tcase_add_test(tc, test_duplicate_id_refused_while_owner_lives);
    tcase_add_test(tc, test_killed_node_expires_from_the_list);
    tcase_add_test(tc, test_restart_after_kill_takes_over_the_expired_key);
    tcase_add_test(tc, test_link_down_up_reannounces);
    tcase_add_test(tc, test_lost_announcement_caught_by_heartbeat);
    tcase_add_test(tc, test_node_joined_reported);
    tcase_add_test(tc, test_join_heard_from_heartbeat);
    tcase_add_test(tc, test_torn_listing_keeps_the_list);
    tcase_add_test(tc, test_short_listing_keeps_the_node);
    tcase_add_test(tc, test_clean_leave_is_seen_at_once);
    tcase_add_test(tc, test_token_rule);
    suite_add_tcase(s, tc);
    TCase *fk = tcase_create("fake_link");
    tcase_add_checked_fixture(fk, setup, teardown);
    tcase_set_timeout(fk, 10);
    tcase_add_test(fk, test_info_request_reply_and_errors);
    tcase_add_test(fk, test_wildcards_and_queue_groups);
    tcase_add_test(fk, test_on_tick_callbacks);
    suite_add_tcase(s, fk);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_cluster_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
