/* check_rt_cluster_clock.c: the other nodes' wall clock offsets
 * (router/cluster/rt_cluster_clock.h): the estimate is the largest difference of a node's last
 * beats (a delayed beat never makes a node look further ahead), a node over the bound is logged
 * once until it is back within it, a node that left is forgotten; and over the fake bus, members
 * whose wall clocks are apart learn each other's offsets from their heartbeats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_clock.h"
#include "fake_cluster.h"
#include "log_capture.h"
#include "rt_cluster.h"
#include "rt_cluster_clock.h"

#define S  1000000000ll  /* ns, for offsets */
#define SU 1000000000ull /* ns, for clock readings */
#define T0 (1795700000ull * SU)

/* Node i's offset as the watch holds it (and that it is node id). */
static int64_t offset_of(const rt_cluster_clock *k, size_t i, const char *id)
{
    int64_t ns;
    ck_assert_str_eq(rt_cluster_clock_node(k, i, &ns), id);
    return ns;
}

static bool not_c(void *arg, const char *node)
{
    (void)arg;
    return strcmp(node, "c") != 0;
}

START_TEST(test_offsets_and_the_log)
{
    log_capture lc;
    log_capture_begin(&lc);
    rt_cluster_clock *k = rt_cluster_clock_new("wsc", 1000);
    ck_assert_ptr_nonnull(k);
    /* b is 5 s ahead: its beats arrive 1 to 300 ms after they were sent. The first (100 ms on
     * the way) is logged at once: 4.9 s. */
    ck_assert(rt_cluster_clock_heard(k, "b", T0 + 5 * SU, T0 + SU / 10));
    ck_assert_int_eq(offset_of(k, 0, "b"), 5 * S - S / 10);
    ck_assert(rt_cluster_clock_heard(k, "b", T0 + 6 * SU, T0 + SU + SU / 1000));
    ck_assert(rt_cluster_clock_heard(k, "b", T0 + 7 * SU, T0 + 2 * SU + 3 * SU / 10));
    ck_assert_int_eq(offset_of(k, 0, "b"), 5 * S - S / 1000); /* the least delayed beat */
    /* c is 2 s behind. */
    ck_assert(rt_cluster_clock_heard(k, "c", T0, T0 + 2 * SU));
    ck_assert_int_eq(offset_of(k, 1, "c"), -2 * S);
    ck_assert_uint_eq(rt_cluster_clock_count(k), 2);
    /* b's clock is set right: once its window holds only new beats, it is within the bound. */
    for (int i = 0; i < RT_CLUSTER_CLOCK_WINDOW; i++) {
        uint64_t at = T0 + (10 + (uint64_t)i) * SU;
        ck_assert(rt_cluster_clock_heard(k, "b", at, at + SU / 100));
        if (i < RT_CLUSTER_CLOCK_WINDOW - 1) {
            ck_assert_int_gt(offset_of(k, 0, "b"), S); /* an older beat still counts */
        }
    }
    ck_assert_int_eq(offset_of(k, 0, "b"), -S / 100);
    /* c leaves the node list: forgotten. */
    rt_cluster_clock_prune(k, not_c, NULL);
    ck_assert_uint_eq(rt_cluster_clock_count(k), 1);
    ck_assert_int_eq(offset_of(k, 0, "b"), -S / 100);
    rt_cluster_clock_free(k);
    /* A bound of 0: nothing is logged. Readings at the ends of the range are clamped. */
    k = rt_cluster_clock_new("quiet", 0);
    ck_assert(rt_cluster_clock_heard(k, "b", T0 + 3600 * SU, T0));
    ck_assert(rt_cluster_clock_heard(k, "c", UINT64_MAX, 0));
    ck_assert(rt_cluster_clock_heard(k, "d", 0, UINT64_MAX));
    ck_assert_int_eq(offset_of(k, 1, "c"), INT64_MAX);
    ck_assert_int_eq(offset_of(k, 2, "d"), -INT64_MAX);
    rt_cluster_clock_free(k);
    char *log = log_capture_end(&lc);
    ck_assert_uint_eq(log_count_lines(log, "node b's wall clock is 4.900 s ahead of this node's "
                                           "(over max_clock_offset 1.000 s)"),
                      1);
    ck_assert_uint_eq(log_count_lines(log, "node c's wall clock is 2.000 s behind this node's"), 1);
    ck_assert_uint_eq(log_count_lines(log, "node b's wall clock is within 1.000 s of this node's "
                                           "again"),
                      1);
    ck_assert_uint_eq(log_count_lines(log, "wall clock"), 3);
    ck_assert_uint_eq(log_count_lines(log, "cluster quiet"), 0);
    free(log);
}

END_TEST

static fake_clock clk;

/* A node's wall clock: the fake monotonic clock from T0, plus the node's offset (*ctx, ns). */
static uint64_t wall_of(void *ctx)
{
    return T0 + clk.now_us * 1000u + (uint64_t) * (const int64_t *)ctx;
}

START_TEST(test_members_learn_each_others_offsets)
{
    clk.now_us = 1000000;
    fake_bus *bus = fake_bus_new(&clk);
    static int64_t off[3] = {0, 3 * S, -S / 2};
    static const char *const ids[] = {"a", "b", "c"};
    rt_cluster *c[3];
    fake_link *l[3];
    for (int i = 0; i < 3; i++) {
        c[i] = fake_cluster_member_new_clocked(bus, &clk, ids[i], (uint64_t)i + 1, wall_of, &off[i],
                                               1000, &l[i]);
        ck_assert_ptr_nonnull(c[i]);
        fake_link_set_up(l[i], true);
    }
    log_capture lc;
    log_capture_begin(&lc);
    /* Joined, and two heartbeats (1 s each) later. */
    for (int t = 0; t < 30; t++) {
        fake_clock_advance_ms(&clk, 100);
        for (int i = 0; i < 3; i++) {
            rt_cluster_tick(c[i]);
        }
        fake_bus_run(bus);
    }
    char *log = log_capture_end(&lc);
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(rt_cluster_node_count(c[i]), 3);
        ck_assert_uint_eq(rt_cluster_clock_offset_count(c[i]), 2);
        for (size_t j = 0; j < 2; j++) {
            int64_t ns;
            const char *id = rt_cluster_clock_offset_at(c[i], j, &ns);
            int other = id[0] - 'a';
            ck_assert_int_ne(other, i);
            /* The fake bus delivers at once: the offsets exactly. */
            ck_assert_int_eq(ns, off[other] - off[i]);
        }
    }
    /* Over 1 s apart: a and b (3 s), b and c (3.5 s), each said by both; a and c (0.5 s)
     * are within it. */
    ck_assert_uint_eq(log_count_lines(log, "node b's wall clock is 3.000 s ahead of"), 1);
    ck_assert_uint_eq(log_count_lines(log, "node b's wall clock is 3.500 s ahead of"), 1);
    ck_assert_uint_eq(log_count_lines(log, "node a's wall clock is 3.000 s behind"), 1);
    ck_assert_uint_eq(log_count_lines(log, "node c's wall clock is 3.500 s behind"), 1);
    ck_assert_uint_eq(log_count_lines(log, "wall clock"), 4);
    free(log);
    /* Four readings that are not valid (one line: rate-limited) and one of a node not in the
     * list: no offset changes. */
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    log_capture_begin(&lc);
    static const char *const bad[] = {"b", "b x", "b 1 2", "", "z 5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.clock", NULL, bad[i], strlen(bad[i])),
                         WAMP_OK);
    }
    fake_bus_run(bus);
    log = log_capture_end(&lc);
    ck_assert_uint_eq(log_count_lines(log, "ignoring a heartbeat reading that is not valid"), 1);
    free(log);
    ck_assert_uint_eq(rt_cluster_clock_offset_count(c[0]), 2);
    int64_t ns;
    (void)rt_cluster_clock_offset_at(c[0], 0, &ns);
    ck_assert_int_eq(ns, 3 * S);
    fake_link_free(raw);
    /* c leaves: the others forget it. */
    rt_cluster_leave(c[2]);
    for (int t = 0; t < 20; t++) {
        fake_clock_advance_ms(&clk, 100);
        for (int i = 0; i < 2; i++) {
            rt_cluster_tick(c[i]);
        }
        fake_bus_run(bus);
    }
    ck_assert_uint_eq(rt_cluster_node_count(c[0]), 2);
    ck_assert_uint_eq(rt_cluster_clock_offset_count(c[0]), 1);
    fake_bus_free(bus);
    for (int i = 0; i < 3; i++) {
        rt_cluster_free(c[i]);
    }
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rt_cluster_clock");
    TCase *tc = tcase_create("clock");
    tcase_add_test(tc, test_offsets_and_the_log);
    tcase_add_test(tc, test_members_learn_each_others_offsets);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
