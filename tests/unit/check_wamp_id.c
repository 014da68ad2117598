/* check_wamp_id.c: random global-scope IDs, counters and their wrap, ID range checks. */
#include <stdint.h>
#include <stdlib.h>

#include <check.h>
#include <sodium.h>

#include "wamp_id.h"
#include "wamp_types.h"

#define DRAWS 20000

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

START_TEST(test_random_range_and_spread)
{
    uint64_t *v = malloc(DRAWS * sizeof(*v));
    ck_assert_ptr_nonnull(v);
    size_t high = 0;
    size_t odd = 0;
    for (size_t i = 0; i < DRAWS; i++) {
        v[i] = wamp_id_random();
        ck_assert_uint_ge(v[i], 1);
        ck_assert_uint_le(v[i], WAMP_ID_MAX);
        high += v[i] > WAMP_ID_MAX / 2;
        odd += v[i] & 1;
    }
    /* Uniform over 53 bits: about half in the upper half, about half odd (the bounds are
     * dozens of standard deviations wide), and no repeats (P(collision) ~ 2e-8). */
    ck_assert_uint_gt(high, DRAWS / 4);
    ck_assert_uint_lt(high, DRAWS * 3 / 4);
    ck_assert_uint_gt(odd, DRAWS / 4);
    ck_assert_uint_lt(odd, DRAWS * 3 / 4);
    qsort(v, DRAWS, sizeof(*v), cmp_u64);
    for (size_t i = 1; i < DRAWS; i++) {
        ck_assert_uint_ne(v[i - 1], v[i]);
    }
    free(v);
}

END_TEST

START_TEST(test_idgen_sequence)
{
    wamp_idgen g = {0};
    ck_assert_uint_eq(wamp_idgen_next(&g), 1);
    ck_assert_uint_eq(wamp_idgen_next(&g), 2);
    ck_assert_uint_eq(wamp_idgen_next(&g), 3);
    ck_assert_uint_eq(g.last, 3);
}

END_TEST

START_TEST(test_idgen_wraps_to_one)
{
    wamp_idgen g = {.last = WAMP_ID_MAX - 1};
    ck_assert_uint_eq(wamp_idgen_next(&g), WAMP_ID_MAX);
    ck_assert_uint_eq(wamp_idgen_next(&g), 1);
    ck_assert_uint_eq(wamp_idgen_next(&g), 2);
}

END_TEST

START_TEST(test_id_is_valid)
{
    ck_assert(!wamp_id_is_valid(0));
    ck_assert(!wamp_id_is_valid(-1));
    ck_assert(!wamp_id_is_valid(INT64_MIN));
    ck_assert(wamp_id_is_valid(1));
    ck_assert(wamp_id_is_valid(2));
    ck_assert(wamp_id_is_valid((int64_t)WAMP_ID_MAX));
    ck_assert(!wamp_id_is_valid((int64_t)WAMP_ID_MAX + 1));
    ck_assert(!wamp_id_is_valid(INT64_MAX));
}

END_TEST

static Suite *wamp_id_suite(void)
{
    Suite *s = suite_create("wamp_id");
    TCase *tc = tcase_create("id");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_random_range_and_spread);
    tcase_add_test(tc, test_idgen_sequence);
    tcase_add_test(tc, test_idgen_wraps_to_one);
    tcase_add_test(tc, test_id_is_valid);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (sodium_init() < 0) {
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(wamp_id_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
