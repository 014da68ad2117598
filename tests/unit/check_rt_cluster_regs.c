/* check_rt_cluster_regs.c: the cluster-wide registry over the fake bus: single registrations
 * exclusive across nodes (also when both claim at once), shared ones joined with the same policy
 * and refused with another, a released key free for another node, a killed node's key taken
 * over, registrations claimed again after the link came back, and the routing of a CALL: the
 * dealer's precedence across nodes and the policies over the callees of every node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_clock.h"
#include "fake_cluster.h"
#include "rt_cluster.h"
#include "rt_cluster_regs.h"

#define HB_MS  1000
#define TTL_MS 4000

typedef struct node {
    rt_cluster *c;
    fake_link *l;
    rt_cluster_regs *r;
    size_t n_claimed;
    wamp_err last;
    uint64_t last_request;
} node;

static fake_clock clk;
static fake_bus *bus;
static node nodes[3];

static void on_claimed(void *ctx, const rt_creg_claim *cl)
{
    node *n = ctx;
    n->n_claimed++;
    n->last = cl->err;
    n->last_request = cl->request;
}

static void setup(void)
{
    clk.now_us = 1000000;
    bus = fake_bus_new(&clk);
    ck_assert_ptr_nonnull(bus);
    memset(nodes, 0, sizeof(nodes));
}

static void teardown(void)
{
    for (size_t i = 0; i < 3; i++) {
        rt_cluster_regs_stop(nodes[i].r);
    }
    fake_bus_free(bus);
    for (size_t i = 0; i < 3; i++) {
        rt_cluster_regs_free(nodes[i].r);
        rt_cluster_free(nodes[i].c);
    }
}

/* The nodes' wall clocks (start_clocked()): the fake clock from a fixed epoch, plus each node's
 * offset in ms. */
static int64_t wall_off_ms[3];

static uint64_t wall_of(void *ctx)
{
    int64_t off = *(const int64_t *)ctx * 1000000;
    return 1795700000ull * 1000000000ull + clk.now_us * 1000u + (uint64_t)off;
}

/* Node i (its id "a", "b" or "c") with its registry, its wall clock off by off_ms and watched
 * (rt_cluster_watch_clocks()) unless off_ms is INT64_MIN. */
static node *start_clocked(size_t i, int64_t off_ms)
{
    static const char *const ids[] = {"a", "b", "c"};
    node *n = &nodes[i];
    wall_off_ms[i] = off_ms;
    n->c = off_ms == INT64_MIN
                   ? fake_cluster_member_new(bus, &clk, ids[i], i + 1, HB_MS, TTL_MS, 500, &n->l)
                   : fake_cluster_member_new_clocked(bus, &clk, ids[i], i + 1, wall_of,
                                                     &wall_off_ms[i], 1000, &n->l);
    ck_assert_ptr_nonnull(n->c);
    rt_cluster_regs_options ro = {.ops = &fake_link_ops,
                                  .link = n->l,
                                  .instance = i + 1,
                                  .beat_ms = HB_MS,
                                  .ttl_ms = TTL_MS,
                                  .max_message = 16384,
                                  .max_entries = 100,
                                  .clock = fake_clock_now,
                                  .clock_ctx = &clk};
    ck_assert_int_eq(rt_cluster_regs_new(n->c, &ro, on_claimed, n, &n->r), WAMP_OK);
    fake_link_set_up(n->l, true);
    fake_bus_run(bus);
    return n;
}

static node *start(size_t i)
{
    return start_clocked(i, INT64_MIN);
}

static void kill_node(node *n)
{
    rt_cluster_regs_stop(n->r);
    fake_link_free(n->l);
    rt_cluster_regs_free(n->r);
    rt_cluster_free(n->c);
    memset(n, 0, sizeof(*n));
}

static void run_ms(uint64_t ms)
{
    fake_bus_run(bus);
    for (uint64_t t = 0; t < ms; t += 100) {
        fake_clock_advance_ms(&clk, 100);
        for (size_t i = 0; i < 3; i++) {
            if (nodes[i].c) {
                rt_cluster_tick(nodes[i].c);
                rt_cluster_regs_tick(nodes[i].r);
            }
        }
        fake_bus_run(bus);
    }
}

/* Claims (realm1, uri, match) with invoke on n and returns the outcome. */
static wamp_err claim(node *n, const char *uri, wamp_match m, const char *invoke)
{
    size_t before = n->n_claimed;
    wamp_err e = rt_cluster_regs_claim(n->r, "realm1", uri, m, invoke, 7, 99);
    if (e != WAMP_OK) {
        return e;
    }
    fake_bus_run(bus);
    ck_assert_uint_eq(n->n_claimed, before + 1);
    ck_assert_uint_eq(n->last_request, 99);
    return n->last;
}

/* Claims and, when granted, announces n callees (registered at wall time t). */
static wamp_err reg(node *n, const char *uri, wamp_match m, const char *invoke, size_t callees,
                    uint64_t t)
{
    wamp_err e = claim(n, uri, m, invoke);
    if (e == WAMP_OK) {
        ck_assert_int_eq(rt_cluster_regs_set(n->r, "realm1", uri, m, invoke, callees, t, t),
                         WAMP_OK);
        run_ms(100);
    }
    return e;
}

/* Where a CALL of uri from n goes: "" for n itself (local: l, or none). */
static const char *route(node *n, const char *uri, const rt_creg_local *l)
{
    static const rt_creg_local none = {0};
    const char *to = rt_cluster_regs_route(n->r, "realm1", uri, l ? l : &none);
    return to ? to : "";
}

START_TEST(test_single_exclusive)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(reg(a, "com.x.add", WAMP_MATCH_EXACT, "single", 1, 1), WAMP_OK);
    ck_assert_int_eq(claim(b, "com.x.add", WAMP_MATCH_EXACT, "single"), WAMP_EEXIST);
    ck_assert_int_eq(claim(b, "com.x.add", WAMP_MATCH_EXACT, "roundrobin"), WAMP_EEXIST);
    /* Another match policy is another registration. */
    ck_assert_int_eq(claim(b, "com.x.add", WAMP_MATCH_PREFIX, "single"), WAMP_OK);
    ck_assert_str_eq(route(b, "com.x.add", NULL), "a");
    /* Released by a: b may take it at once. */
    ck_assert_int_eq(
            rt_cluster_regs_set(a->r, "realm1", "com.x.add", WAMP_MATCH_EXACT, "single", 0, 0, 0),
            WAMP_OK);
    run_ms(100);
    ck_assert_str_eq(route(b, "com.x.add", NULL), "");
    ck_assert_int_eq(reg(b, "com.x.add", WAMP_MATCH_EXACT, "single", 1, 2), WAMP_OK);
    ck_assert_str_eq(route(a, "com.x.add", NULL), "b");
}

END_TEST

START_TEST(test_single_race)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(rt_cluster_regs_claim(a->r, "realm1", "p", WAMP_MATCH_EXACT, "single", 1, 1),
                     WAMP_OK);
    ck_assert_int_eq(rt_cluster_regs_claim(b->r, "realm1", "p", WAMP_MATCH_EXACT, "single", 1, 1),
                     WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(a->n_claimed, 1);
    ck_assert_uint_eq(b->n_claimed, 1);
    ck_assert((a->last == WAMP_OK) != (b->last == WAMP_OK));
    ck_assert(a->last == WAMP_EEXIST || b->last == WAMP_EEXIST);
}

END_TEST

START_TEST(test_shared_policies)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(reg(a, "s", WAMP_MATCH_EXACT, "roundrobin", 2, 1), WAMP_OK);
    ck_assert_int_eq(claim(b, "s", WAMP_MATCH_EXACT, "random"), WAMP_EEXIST);
    ck_assert_int_eq(claim(b, "s", WAMP_MATCH_EXACT, "single"), WAMP_EEXIST);
    ck_assert_int_eq(reg(b, "s", WAMP_MATCH_EXACT, "roundrobin", 1, 2), WAMP_OK);
    /* b's caller: 1 local callee and 2 on a, in turn: b, a, a, b, a, a. */
    rt_creg_local l = {"s", WAMP_MATCH_EXACT, "roundrobin", 1, 2, 2};
    char seq[16] = "";
    for (int i = 0; i < 6; i++) {
        strcat(seq, route(b, "s", &l)[0] ? "a" : "b");
    }
    ck_assert_str_eq(seq, "baabaa");
    /* a releases its part: b's key stays (b holds it), and b alone serves. */
    ck_assert_int_eq(
            rt_cluster_regs_set(a->r, "realm1", "s", WAMP_MATCH_EXACT, "roundrobin", 0, 0, 0),
            WAMP_OK);
    run_ms(100);
    ck_assert_str_eq(route(b, "s", &l), "");
    ck_assert_int_eq(claim(a, "s", WAMP_MATCH_EXACT, "random"), WAMP_EEXIST);
}

END_TEST

START_TEST(test_first_last_random)
{
    node *a = start(0), *b = start(1), *c = start(2);
    ck_assert_int_eq(reg(a, "f", WAMP_MATCH_EXACT, "first", 1, 500), WAMP_OK);
    ck_assert_int_eq(reg(b, "f", WAMP_MATCH_EXACT, "first", 1, 300), WAMP_OK);
    rt_creg_local lc = {"f", WAMP_MATCH_EXACT, "first", 1, 700, 700};
    ck_assert_str_eq(route(c, "f", NULL), "b");
    ck_assert_int_eq(reg(c, "f", WAMP_MATCH_EXACT, "first", 1, 700), WAMP_OK);
    ck_assert_str_eq(route(c, "f", &lc), "b");
    ck_assert_int_eq(reg(a, "l", WAMP_MATCH_EXACT, "last", 1, 500), WAMP_OK);
    ck_assert_int_eq(reg(b, "l", WAMP_MATCH_EXACT, "last", 1, 300), WAMP_OK);
    rt_creg_local ll = {"l", WAMP_MATCH_EXACT, "last", 1, 100, 100};
    ck_assert_str_eq(route(c, "l", &ll), "a");
    ll.last_ms = 900;
    ck_assert_str_eq(route(c, "l", &ll), "");
    /* random reaches every node over many calls. */
    ck_assert_int_eq(reg(a, "r", WAMP_MATCH_EXACT, "random", 1, 1), WAMP_OK);
    ck_assert_int_eq(reg(b, "r", WAMP_MATCH_EXACT, "random", 1, 1), WAMP_OK);
    rt_creg_local lr = {"r", WAMP_MATCH_EXACT, "random", 1, 1, 1};
    int seen[3] = {0};
    for (int i = 0; i < 200; i++) {
        const char *to = route(c, "r", &lr);
        seen[to[0] ? to[0] - 'a' : 2]++;
    }
    ck_assert(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
}

END_TEST

START_TEST(test_first_last_on_one_clock)
{
    /* b's wall clock is 1 s behind a's and c's: its callee registered at 300 by its clock did
     * at 1300 by c's, after a's at 500. Once c has heard the nodes' clocks, first goes to a and
     * last to b, as they registered. */
    node *a = start_clocked(0, 0), *b = start_clocked(1, -1000), *c = start_clocked(2, 0);
    (void)a;
    (void)b;
    run_ms(2 * HB_MS + 100);
    int64_t ns = 0;
    ck_assert_uint_eq(rt_cluster_clock_offset_count(c->c), 2);
    for (size_t i = 0; i < 2; i++) {
        const char *id = rt_cluster_clock_offset_at(c->c, i, &ns);
        ck_assert_int_eq(ns, id[0] == 'b' ? -1000000000ll : 0);
    }
    ck_assert_int_eq(reg(a, "f", WAMP_MATCH_EXACT, "first", 1, 500), WAMP_OK);
    ck_assert_int_eq(reg(b, "f", WAMP_MATCH_EXACT, "first", 1, 300), WAMP_OK);
    ck_assert_str_eq(route(c, "f", NULL), "a");
    rt_creg_local lc = {"f", WAMP_MATCH_EXACT, "first", 1, 400, 400};
    ck_assert_int_eq(reg(c, "f", WAMP_MATCH_EXACT, "first", 1, 400), WAMP_OK);
    ck_assert_str_eq(route(c, "f", &lc), ""); /* c's own, at 400, is first */
    ck_assert_int_eq(reg(a, "l", WAMP_MATCH_EXACT, "last", 1, 500), WAMP_OK);
    ck_assert_int_eq(reg(b, "l", WAMP_MATCH_EXACT, "last", 1, 300), WAMP_OK);
    ck_assert_str_eq(route(c, "l", NULL), "b");
    /* A node c has not heard from: its reading as it is. */
    ck_assert_uint_eq(rt_cluster_wall_ms_here(c->c, "z", 300), 300);
    ck_assert_uint_eq(rt_cluster_wall_ms_here(c->c, "b", 300), 1300);
}

END_TEST

START_TEST(test_pattern_precedence)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(reg(a, "com.x.", WAMP_MATCH_PREFIX, "single", 1, 1), WAMP_OK);
    ck_assert_int_eq(reg(a, "com..add", WAMP_MATCH_WILDCARD, "single", 1, 1), WAMP_OK);
    ck_assert_str_eq(route(b, "com.x.add", NULL), "a");
    ck_assert_str_eq(route(b, "com.y.add", NULL), "a");
    ck_assert_str_eq(route(b, "org.y.add", NULL), "");
    /* b's longer prefix beats a's; a's exact beats b's prefix; a's prefix beats b's wildcard. */
    rt_creg_local lp = {"com.x.a", WAMP_MATCH_PREFIX, "single", 1, 1, 1};
    ck_assert_str_eq(route(b, "com.x.add", &lp), "");
    ck_assert_int_eq(reg(a, "com.x.add", WAMP_MATCH_EXACT, "single", 1, 1), WAMP_OK);
    ck_assert_str_eq(route(b, "com.x.add", &lp), "a");
    rt_creg_local lw = {"com.x.", WAMP_MATCH_WILDCARD, "single", 1, 1, 1};
    ck_assert_str_eq(route(b, "com.x.zz", &lw), "a");
    /* Wildcards: the more specific one wins, wherever it is. */
    rt_creg_local lw2 = {"com..", WAMP_MATCH_WILDCARD, "single", 1, 1, 1};
    ck_assert_str_eq(route(b, "com.y.add", &lw2), "a");
    rt_creg_local lw3 = {"com.y.", WAMP_MATCH_WILDCARD, "single", 1, 1, 1};
    ck_assert_str_eq(route(b, "com.y.add", &lw3), "");
    /* Another realm sees none of it. */
    rt_creg_local none = {0};
    ck_assert_ptr_null(rt_cluster_regs_route(b->r, "realm2", "com.x.add", &none));
}

END_TEST

START_TEST(test_killed_node)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(reg(a, "k", WAMP_MATCH_EXACT, "single", 1, 1), WAMP_OK);
    kill_node(a);
    /* Gone from b's list within node_ttl + two heartbeats: its registration with it, and b takes
     * the key over before it expires. */
    run_ms(TTL_MS + 2 * HB_MS + 200);
    ck_assert_str_eq(route(b, "k", NULL), "");
    ck_assert_int_eq(reg(b, "k", WAMP_MATCH_EXACT, "single", 1, 1), WAMP_OK);
    /* b keeps its key alive past the TTL by writing it again. */
    node *c = start(2);
    run_ms(3 * TTL_MS);
    ck_assert_int_eq(claim(c, "k", WAMP_MATCH_EXACT, "single"), WAMP_EEXIST);
    ck_assert_str_eq(route(c, "k", NULL), "b");
}

END_TEST

START_TEST(test_link_down_then_back)
{
    node *a = start(0), *b = start(1);
    fake_link_set_up(a->l, false);
    fake_bus_run(bus);
    /* Down: registrations are local, no claim. */
    ck_assert_int_eq(rt_cluster_regs_claim(a->r, "realm1", "d", WAMP_MATCH_EXACT, "single", 1, 1),
                     WAMP_ECLOSED);
    ck_assert_int_eq(rt_cluster_regs_set(a->r, "realm1", "d", WAMP_MATCH_EXACT, "single", 1, 1, 1),
                     WAMP_OK);
    fake_link_set_up(a->l, true);
    run_ms(2 * HB_MS);
    /* Back: a claimed its key and announced the registration. */
    ck_assert_int_eq(claim(b, "d", WAMP_MATCH_EXACT, "single"), WAMP_EEXIST);
    ck_assert_str_eq(route(b, "d", NULL), "a");
}

END_TEST

/* A claim that gets no answer from the bus while the link stays up (a request that timed out):
 * the registration serves here unclaimed, and the tick claims it, so that another node cannot
 * take a "single" procedure meanwhile for good. */
START_TEST(test_claim_without_answer_retried)
{
    node *a = start(0), *b = start(1);
    fake_bus_fail_kv(bus, 1);
    ck_assert_int_eq(claim(a, "t", WAMP_MATCH_EXACT, "single"), WAMP_ECLOSED);
    ck_assert_int_eq(rt_cluster_regs_set(a->r, "realm1", "t", WAMP_MATCH_EXACT, "single", 1, 1, 1),
                     WAMP_OK);
    run_ms(TTL_MS);
    ck_assert_int_eq(claim(b, "t", WAMP_MATCH_EXACT, "single"), WAMP_EEXIST);
    ck_assert_str_eq(route(b, "t", NULL), "a");
    /* Failing again and again, it is tried again and again, then held once the bus answers. */
    fake_bus_fail_kv(bus, 1);
    ck_assert_int_eq(claim(a, "u", WAMP_MATCH_EXACT, "single"), WAMP_ECLOSED);
    ck_assert_int_eq(rt_cluster_regs_set(a->r, "realm1", "u", WAMP_MATCH_EXACT, "single", 1, 1, 1),
                     WAMP_OK);
    fake_bus_fail_kv(bus, 3);
    run_ms(TTL_MS);
    ck_assert_int_eq(claim(b, "u", WAMP_MATCH_EXACT, "single"), WAMP_EEXIST);
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rt_cluster_regs");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_single_exclusive);
    tcase_add_test(tc, test_single_race);
    tcase_add_test(tc, test_shared_policies);
    tcase_add_test(tc, test_first_last_random);
    tcase_add_test(tc, test_first_last_on_one_clock);
    tcase_add_test(tc, test_pattern_precedence);
    tcase_add_test(tc, test_killed_node);
    tcase_add_test(tc, test_link_down_then_back);
    tcase_add_test(tc, test_claim_without_answer_retried);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
