/* check_rt_cluster_table.c: the replicated table over the fake bus (tests/support/fake_cluster.c):
 * snapshots on join, deltas, a lost delta repaired by the beat, chunked snapshots, a restarted
 * node replacing its old entries, kill -9, clean leave, link down past hold_ms, limits and
 * messages that are not valid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_clock.h"
#include "fake_cluster.h"
#include "rt_cluster.h"
#include "rt_cluster_table.h"

#define HB_MS   1000
#define TTL_MS  4000
#define N_NODES 3

typedef struct node {
    rt_cluster *c;
    fake_link *l;
    rt_cluster_table *t;
    char changes[4096]; /* "node:key=value;" and "node:key-;" as the callback saw them */
} node;

static fake_clock clk;
static fake_bus *bus;
static node nodes[N_NODES];

static void on_change(void *arg, const char *node_id, const char *key, const char *value)
{
    node *n = arg;
    size_t o = strlen(n->changes);
    if (value) {
        snprintf(n->changes + o, sizeof(n->changes) - o, "%s:%s=%s;", node_id, key, value);
    } else {
        snprintf(n->changes + o, sizeof(n->changes) - o, "%s:%s-;", node_id, key);
    }
}

static void setup(void)
{
    clk.now_us = 1000000;
    bus = fake_bus_new(&clk);
    ck_assert_ptr_nonnull(bus);
    memset(nodes, 0, sizeof(nodes));
}

static void free_node(node *n)
{
    rt_cluster_table_free(n->t);
    rt_cluster_free(n->c);
    n->t = NULL;
    n->c = NULL;
    n->l = NULL;
}

static void teardown(void)
{
    for (size_t i = 0; i < N_NODES; i++) {
        rt_cluster_table_free(nodes[i].t); /* before the links it subscribed on */
        nodes[i].t = NULL;
    }
    fake_bus_free(bus);
    for (size_t i = 0; i < N_NODES; i++) {
        free_node(&nodes[i]);
    }
}

static rt_cluster_table_options table_opts(node *n, uint64_t instance, size_t max_msg)
{
    rt_cluster_table_options o = {.table = "subs",
                                  .ops = &fake_link_ops,
                                  .link = n->l,
                                  .instance = instance,
                                  .beat_ms = HB_MS,
                                  .hold_ms = TTL_MS,
                                  .max_message_bytes = max_msg,
                                  .max_entries = 100,
                                  .clock = fake_clock_now,
                                  .clock_ctx = &clk};
    return o;
}

/* Node i with id and instance, its link attached (connecting) and its table made. */
static node *start_with(size_t i, const char *id, uint64_t instance, size_t max_msg)
{
    node *n = &nodes[i];
    n->changes[0] = '\0';
    n->c = fake_cluster_member_new(bus, &clk, id, instance, HB_MS, TTL_MS, 500, &n->l);
    ck_assert_ptr_nonnull(n->c);
    rt_cluster_table_options to = table_opts(n, instance, max_msg);
    ck_assert_int_eq(rt_cluster_table_new(n->c, &to, on_change, n, &n->t), WAMP_OK);
    return n;
}

static node *start(size_t i, const char *id, uint64_t instance)
{
    return start_with(i, id, instance, 65536);
}

/* kill -9: the node vanishes without a word (its table sends nothing when freed). */
static void kill_node(node *n)
{
    rt_cluster_table_free(n->t);
    n->t = NULL;
    fake_link_free(n->l);
    free_node(n);
}

/* Advances the clock by ms in 100 ms ticks, running every live node and the bus. */
static void run_ms(uint64_t ms)
{
    fake_bus_run(bus);
    for (uint64_t t = 0; t < ms; t += 100) {
        fake_clock_advance_ms(&clk, 100);
        for (size_t i = 0; i < N_NODES; i++) {
            if (nodes[i].c) {
                rt_cluster_tick(nodes[i].c);
                rt_cluster_table_tick(nodes[i].t);
            }
        }
        fake_bus_run(bus);
    }
}

static void up(node *n)
{
    fake_link_set_up(n->l, true);
    fake_bus_run(bus);
}

/* "key=value" of node_id's entries as n holds them, sorted, comma-separated. */
typedef struct acc {
    char *items[256];
    size_t n;
} acc;

static void collect(void *arg, const char *node_id, const char *key, const char *value)
{
    (void)node_id;
    acc *a = arg;
    char buf[512];
    snprintf(buf, sizeof(buf), "%s=%s", key, value);
    ck_assert_uint_lt(a->n, 256);
    a->items[a->n++] = strdup(buf);
}

static int cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static const char *held(const node *n, const char *node_id)
{
    static char buf[8192];
    acc a = {.n = 0};
    rt_cluster_table_foreach(n->t, node_id, collect, &a);
    qsort(a.items, a.n, sizeof(char *), cmp);
    buf[0] = '\0';
    for (size_t i = 0; i < a.n; i++) {
        if (i) {
            strcat(buf, ",");
        }
        strcat(buf, a.items[i]);
        free(a.items[i]);
    }
    return buf;
}

START_TEST(test_snapshots_on_join_both_ways)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    ck_assert_int_eq(rt_cluster_table_put(a->t, "k1", "v1"), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "k2", "v2"), WAMP_OK);
    up(a);
    ck_assert_str_eq(held(a, "b"), "");
    up(b);
    ck_assert_str_eq(held(b, "a"), "k1=v1");
    ck_assert_str_eq(held(a, "b"), "k2=v2");
    ck_assert_str_eq(b->changes, "a:k1=v1;");
    ck_assert_str_eq(a->changes, "b:k2=v2;");
    ck_assert_str_eq(rt_cluster_table_get(a->t, "b", "k2"), "v2");
    ck_assert_str_eq(rt_cluster_table_get(a->t, "a", "k1"), "v1");
    ck_assert_ptr_null(rt_cluster_table_get(a->t, "b", "k1"));
    ck_assert_ptr_null(rt_cluster_table_get(a->t, "zz", "k1"));
    ck_assert_uint_eq(rt_cluster_table_count(a->t, "a"), 1);
    ck_assert_uint_eq(rt_cluster_table_count(a->t, "b"), 1);
    /* A third node gets both, and both get its. */
    node *c = start(2, "c", 3);
    ck_assert_int_eq(rt_cluster_table_put(c->t, "k3", "v3"), WAMP_OK);
    up(c);
    ck_assert_str_eq(held(c, "a"), "k1=v1");
    ck_assert_str_eq(held(c, "b"), "k2=v2");
    ck_assert_str_eq(held(a, "c"), "k3=v3");
    ck_assert_str_eq(held(b, "c"), "k3=v3");
    ck_assert_str_eq(held(a, NULL), "k2=v2,k3=v3");
    /* Stable: beats change nothing. */
    a->changes[0] = '\0';
    run_ms(3000);
    ck_assert_str_eq(a->changes, "");
    rt_cluster_table_stats st;
    rt_cluster_table_stats_get(a->t, &st);
    ck_assert_uint_eq(st.entries_remote, 2);
    ck_assert_uint_eq(st.syncs, 0);
    ck_assert_uint_eq(st.bad, 0);
}

END_TEST

START_TEST(test_deltas_put_change_remove)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    up(a);
    up(b);
    ck_assert_int_eq(rt_cluster_table_put(a->t, "x", "1"), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_str_eq(held(b, "a"), "x=1");
    ck_assert_int_eq(rt_cluster_table_put(a->t, "x", "1"), WAMP_OK); /* same value: nothing */
    ck_assert_int_eq(rt_cluster_table_put(a->t, "x", "2"), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_put(a->t, "y", "3"), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_str_eq(held(b, "a"), "x=2,y=3");
    ck_assert_int_eq(rt_cluster_table_remove(a->t, "x"), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_remove(a->t, "x"), WAMP_ENOTFOUND);
    fake_bus_run(bus);
    ck_assert_str_eq(held(b, "a"), "y=3");
    ck_assert_str_eq(b->changes, "a:x=1;a:x=2;a:y=3;a:x-;");
    run_ms(2000);
    rt_cluster_table_stats st;
    rt_cluster_table_stats_get(b->t, &st);
    ck_assert_uint_eq(st.syncs, 0);
}

END_TEST

START_TEST(test_lost_delta_repaired_by_the_beat)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    up(a);
    up(b);
    ck_assert_int_eq(rt_cluster_table_put(a->t, "x", "1"), WAMP_OK);
    fake_bus_run(bus);
    fake_bus_drop(bus, 1);
    ck_assert_int_eq(rt_cluster_table_remove(a->t, "x"), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_put(a->t, "z", "9"), WAMP_OK); /* a gap: asks for a sync */
    fake_bus_run(bus);
    ck_assert_str_eq(held(b, "a"), "z=9");
    fake_bus_drop(bus, 1);
    ck_assert_int_eq(rt_cluster_table_put(a->t, "w", "5"), WAMP_OK); /* lost, nothing follows */
    fake_bus_run(bus);
    ck_assert_str_eq(held(b, "a"), "z=9");
    run_ms(HB_MS + 200); /* the beat shows b is behind */
    ck_assert_str_eq(held(b, "a"), "w=5,z=9");
    rt_cluster_table_stats st;
    rt_cluster_table_stats_get(b->t, &st);
    ck_assert_uint_eq(st.syncs, 2);
}

END_TEST

START_TEST(test_large_snapshot_in_chunks)
{
    node *a = start_with(0, "a", 1, 1024);
    node *b = start_with(1, "b", 2, 1024);
    char key[32], val[64];
    for (int i = 0; i < 60; i++) {
        snprintf(key, sizeof(key), "key%02d", i);
        snprintf(val, sizeof(val), "value-%02d-%s", i, "padding-padding");
        ck_assert_int_eq(rt_cluster_table_put(a->t, key, val), WAMP_OK);
    }
    up(a);
    up(b);
    ck_assert_uint_eq(rt_cluster_table_count(b->t, "a"), 60);
    ck_assert_str_eq(rt_cluster_table_get(b->t, "a", "key59"), "value-59-padding-padding");
    /* An entry that cannot fit one message is refused. */
    char big[1024];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ck_assert_int_eq(rt_cluster_table_put(a->t, "big", big), WAMP_ETOOBIG);
    ck_assert_ptr_null(rt_cluster_table_get(a->t, "a", "big"));
    /* c's join announcement (and the heartbeat reading behind it) and snapshot are lost: nobody
     * sends it theirs, until a's beat makes c ask for it. */
    node *c = start_with(2, "c", 3, 1024);
    fake_bus_drop(bus, 3);
    fake_link_set_up(c->l, true);
    fake_bus_run(bus);
    ck_assert_uint_eq(rt_cluster_table_count(c->t, "a"), 0);
    run_ms(HB_MS + 200);
    ck_assert_uint_eq(rt_cluster_table_count(c->t, "a"), 60);
    ck_assert_str_eq(rt_cluster_table_get(c->t, "a", "key00"), "value-00-padding-padding");
}

END_TEST

START_TEST(test_restarted_node_replaces_its_old_entries)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    up(a);
    up(b);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "old", "1"), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "both", "1"), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_str_eq(held(a, "b"), "both=1,old=1");
    kill_node(b);
    /* Restarted at once: it joins when the old key expired; its snapshot replaces the old. */
    b = start(1, "b", 22);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "both", "1"), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "new", "2"), WAMP_OK);
    a->changes[0] = '\0';
    fake_link_set_up(b->l, true);
    run_ms(TTL_MS + 3 * HB_MS);
    ck_assert_int_eq(rt_cluster_member_state_get(b->c), RT_CLUSTER_MEMBER_JOINED);
    ck_assert_str_eq(held(a, "b"), "both=1,new=2");
    ck_assert_ptr_nonnull(strstr(a->changes, "b:old-;"));
    ck_assert_ptr_nonnull(strstr(a->changes, "b:new=2;"));
}

END_TEST

START_TEST(test_killed_node_dropped_within_ttl)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    node *c = start(2, "c", 3);
    up(a);
    up(b);
    up(c);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "x", "1"), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_put(c->t, "y", "2"), WAMP_OK);
    run_ms(2 * HB_MS);
    ck_assert_str_eq(held(a, NULL), "x=1,y=2");
    a->changes[0] = '\0';
    kill_node(b);
    run_ms(TTL_MS - 500);
    ck_assert_str_eq(held(a, "b"), "x=1"); /* not before its key expired */
    run_ms(2 * HB_MS + 500);
    ck_assert_str_eq(held(a, "b"), "");
    ck_assert_str_eq(held(a, NULL), "y=2");
    ck_assert_str_eq(held(c, NULL), "");
    ck_assert_str_eq(a->changes, "b:x-;");
    ck_assert_uint_eq(rt_cluster_table_count(a->t, "b"), 0);
}

END_TEST

START_TEST(test_clean_leave_drops_at_once)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    up(a);
    up(b);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "x", "1"), WAMP_OK);
    run_ms(HB_MS + 100); /* a sees b in its list */
    rt_cluster_leave(b->c);
    fake_bus_run(bus);
    run_ms(100);
    ck_assert_str_eq(held(a, "b"), "");
}

END_TEST

START_TEST(test_link_down_holds_then_drops_then_resyncs)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    up(a);
    up(b);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "x", "1"), WAMP_OK);
    run_ms(HB_MS + 100);
    /* A short outage keeps what a holds. */
    fake_link_set_up(a->l, false);
    run_ms(TTL_MS / 2);
    ck_assert_str_eq(held(a, "b"), "x=1");
    fake_link_set_up(a->l, true);
    run_ms(HB_MS);
    ck_assert_str_eq(held(a, "b"), "x=1");
    /* A long one drops it; b's changes meanwhile arrive with the re-join's snapshots. */
    fake_link_set_up(a->l, false);
    ck_assert_int_eq(rt_cluster_table_put(a->t, "mine", "1"), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_put(b->t, "y", "2"), WAMP_OK);
    run_ms(TTL_MS + 200);
    ck_assert_str_eq(held(a, "b"), "");
    ck_assert_str_eq(held(b, "a"), "");
    fake_link_set_up(a->l, true);
    run_ms(HB_MS * 2);
    ck_assert_str_eq(held(a, "b"), "x=1,y=2");
    ck_assert_str_eq(held(b, "a"), "mine=1");
}

END_TEST

START_TEST(test_limits_and_bad_messages)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    up(a);
    up(b);
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        ck_assert_int_eq(rt_cluster_table_put(a->t, key, ""), WAMP_OK);
    }
    ck_assert_int_eq(rt_cluster_table_put(a->t, "one-more", ""), WAMP_ETOOBIG);
    ck_assert_int_eq(rt_cluster_table_put(a->t, "k5", "changed"), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(rt_cluster_table_count(b->t, "a"), 100);

    /* A raw link sends what no node would. */
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    static const char *const bad[] = {
            "not json",
            "[1,2]",
            "{\"op\":\"put\",\"n\":\"bad id!\",\"i\":\"1\",\"s\":1,\"k\":\"a\",\"v\":\"b\"}",
            "{\"op\":\"put\",\"n\":\"z\",\"i\":\"1\",\"s\":-1,\"k\":\"a\",\"v\":\"b\"}",
            "{\"op\":\"snap\",\"n\":\"z\",\"i\":\"1\",\"s\":0,\"c\":0,\"e\":7}",
            "{\"op\":\"what\",\"n\":\"z\",\"i\":\"1\",\"s\":0}",
            "{\"op\":\"snap\",\"n\":\"z\",\"i\":\"1\",\"s\":0,\"c\":0,\"last\":true,"
            "\"e\":[[\"k\"],[1,2]]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.tbl.subs", NULL, bad[i], strlen(bad[i])),
                         WAMP_OK);
    }
    fake_bus_run(bus);
    rt_cluster_table_stats st;
    rt_cluster_table_stats_get(b->t, &st);
    ck_assert_uint_eq(st.bad, 8);
    ck_assert_uint_eq(rt_cluster_table_count(b->t, "a"), 100);
    ck_assert_uint_eq(rt_cluster_table_count(b->t, "z"), 0);
    /* Node z never shows up in the list: dropped after hold_ms. */
    run_ms(TTL_MS + 200);
    ck_assert_str_eq(held(b, NULL), held(b, "a"));

    rt_cluster_table_options o = table_opts(a, 1, 65536);
    rt_cluster_table *t2 = NULL;
    o.table = "bad.name";
    ck_assert_int_eq(rt_cluster_table_new(a->c, &o, NULL, NULL, &t2), WAMP_EINVAL);
    o.table = "ok";
    o.max_entries = 0;
    ck_assert_int_eq(rt_cluster_table_new(a->c, &o, NULL, NULL, &t2), WAMP_EINVAL);
    ck_assert_ptr_null(t2);
}

END_TEST

START_TEST(test_table_made_after_join_sends_at_once)
{
    node *a = start(0, "a", 1);
    node *b = start(1, "b", 2);
    up(a);
    up(b);
    rt_cluster_table_options oa = table_opts(a, 1, 65536);
    rt_cluster_table_options ob = table_opts(b, 2, 65536);
    oa.table = ob.table = "regs";
    rt_cluster_table *ta = NULL, *tb = NULL;
    ck_assert_int_eq(rt_cluster_table_new(b->c, &ob, NULL, NULL, &tb), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_new(a->c, &oa, NULL, NULL, &ta), WAMP_OK);
    ck_assert_int_eq(rt_cluster_table_put(ta, "p", "q"), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_str_eq(rt_cluster_table_get(tb, "a", "p"), "q");
    ck_assert_ptr_null(rt_cluster_table_get(b->t, "a", "p")); /* tables are apart */
    rt_cluster_table_free(ta);
    rt_cluster_table_free(tb);
}

END_TEST

static Suite *rt_cluster_table_suite(void)
{
    Suite *s = suite_create("rt_cluster_table");
    TCase *tc = tcase_create("table");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_snapshots_on_join_both_ways);
    tcase_add_test(tc, test_deltas_put_change_remove);
    tcase_add_test(tc, test_lost_delta_repaired_by_the_beat);
    tcase_add_test(tc, test_large_snapshot_in_chunks);
    tcase_add_test(tc, test_restarted_node_replaces_its_old_entries);
    tcase_add_test(tc, test_killed_node_dropped_within_ttl);
    tcase_add_test(tc, test_clean_leave_drops_at_once);
    tcase_add_test(tc, test_link_down_holds_then_drops_then_resyncs);
    tcase_add_test(tc, test_limits_and_bad_messages);
    tcase_add_test(tc, test_table_made_after_join_sends_at_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_cluster_table_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
