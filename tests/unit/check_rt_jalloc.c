/* check_rt_jalloc.c: jansson's allocator in the router process: free lists of small blocks. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "rt_jalloc.h"
#include "wamp_buf.h"

START_TEST(test_small_blocks_recycled_per_size)
{
    rt_jalloc_install();
    rt_jalloc_trim();
    void *a = rt_jalloc_malloc(40);
    ck_assert_ptr_nonnull(a);
    memset(a, 0xab, 40);
    rt_jalloc_free(a);
    ck_assert_uint_eq(rt_jalloc_kept(), 1);
    /* Another size class does not take it; the same class (25-40 bytes) does. */
    void *b = rt_jalloc_malloc(20);
    ck_assert_ptr_ne(b, a);
    ck_assert_uint_eq(rt_jalloc_kept(), 1);
    void *c = rt_jalloc_malloc(33);
    ck_assert_ptr_eq(c, a);
    ck_assert_uint_eq(rt_jalloc_kept(), 0);
    memset(c, 0xcd, 40); /* the whole class size is usable */
    rt_jalloc_free(b);
    rt_jalloc_free(c);
    rt_jalloc_free(NULL);
    ck_assert_uint_eq(rt_jalloc_kept(), 2);
    rt_jalloc_trim();
    ck_assert_uint_eq(rt_jalloc_kept(), 0);
}

END_TEST

START_TEST(test_alignment_and_sizes)
{
    rt_jalloc_install();
    void *p[RT_JALLOC_MAX_SMALL + 64];
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
        p[i] = rt_jalloc_malloc(i);
        ck_assert_ptr_nonnull(p[i]);
        ck_assert_uint_eq((uintptr_t)p[i] % 16, 0);
        memset(p[i], (int)i, i);
    }
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
        for (size_t j = 0; j < i; j++) {
            ck_assert_uint_eq(((unsigned char *)p[i])[j], (unsigned char)i);
        }
        rt_jalloc_free(p[i]);
    }
    /* Sizes 1..RT_JALLOC_MAX_SMALL are kept at least. */
    ck_assert_uint_ge(rt_jalloc_kept(), RT_JALLOC_MAX_SMALL);
    rt_jalloc_trim();
    ck_assert_uint_eq(rt_jalloc_kept(), 0);
    /* A large block goes back to malloc. */
    void *big = rt_jalloc_malloc(4 * RT_JALLOC_MAX_SMALL);
    ck_assert_ptr_nonnull(big);
    rt_jalloc_free(big);
    ck_assert_uint_eq(rt_jalloc_kept(), 0);
}

END_TEST

START_TEST(test_lists_are_bounded)
{
    rt_jalloc_install();
    rt_jalloc_trim();

    enum {
        N = RT_JALLOC_KEEP + 50
    };

    void **p = malloc(N * sizeof(*p));
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < N; i++) {
        p[i] = rt_jalloc_malloc(24);
        ck_assert_ptr_nonnull(p[i]);
    }
    for (size_t i = 0; i < N; i++) {
        rt_jalloc_free(p[i]);
    }
    ck_assert_uint_eq(rt_jalloc_kept(), RT_JALLOC_KEEP);
    free(p);
    rt_jalloc_trim();
}

END_TEST

static void *other_thread(void *block)
{
    /* Not the owner: plain malloc/free, the lists untouched (a block of the owner's included). */
    void *q = rt_jalloc_malloc(32);
    rt_jalloc_free(q);
    rt_jalloc_free(block);
    rt_jalloc_trim(); /* a no-op off the owner thread */
    return q ? block : NULL;
}

START_TEST(test_other_threads_bypass_the_lists)
{
    rt_jalloc_install();
    rt_jalloc_trim();
    void *kept = rt_jalloc_malloc(64);
    rt_jalloc_free(kept);
    ck_assert_uint_eq(rt_jalloc_kept(), 1);
    void *block = rt_jalloc_malloc(32);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, other_thread, block), 0);
    void *ret = NULL;
    ck_assert_int_eq(pthread_join(t, &ret), 0);
    ck_assert_ptr_eq(ret, block);
    ck_assert_uint_eq(rt_jalloc_kept(), 1);
    ck_assert_ptr_eq(rt_jalloc_malloc(64), kept);
    rt_jalloc_free(kept);
    rt_jalloc_trim();
}

END_TEST

START_TEST(test_jansson_values_use_it)
{
    rt_jalloc_install();
    rt_jalloc_trim();
    json_t *v = json_pack("[i, I, {s:s, s:[]}, s]", 48, (json_int_t)1 << 53, "disclose_me", "x",
                          "list", "com.example.procedure");
    ck_assert_ptr_nonnull(v);
    char *text = json_dumps(v, JSON_COMPACT);
    ck_assert_str_eq(text, "[48,9007199254740992,{\"disclose_me\":\"x\",\"list\":[]},"
                           "\"com.example.procedure\"]");
    free(text); /* json_dumps uses jansson's allocator: released with its free function */
    json_decref(v);
    size_t kept = rt_jalloc_kept();
    ck_assert_uint_gt(kept, 5);
    /* The same tree again is built from the lists. */
    v = json_pack("[i, I, {s:s, s:[]}, s]", 48, (json_int_t)1 << 53, "disclose_me", "x", "list",
                  "com.example.procedure");
    ck_assert_uint_lt(rt_jalloc_kept(), kept);
    json_decref(v);
    ck_assert_uint_eq(rt_jalloc_kept(), kept);
    rt_jalloc_trim();
}

END_TEST

START_TEST(test_message_buffers_use_it)
{
    rt_jalloc_install();
    rt_jalloc_trim();
    wamp_buf *b = wamp_buf_new(100);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(wamp_buf_append(&b, "abc", 3, SIZE_MAX), WAMP_OK);
    wamp_buf *first = b;
    wamp_buf_unref(&b);
    ck_assert_uint_eq(rt_jalloc_kept(), 1);
    /* The next buffer of that size is the same block; growing it reallocates it. */
    b = wamp_buf_new(100);
    ck_assert_ptr_eq(b, first);
    ck_assert_uint_eq(rt_jalloc_kept(), 0);
    static unsigned char big[8192];
    memset(big, 'x', sizeof(big));
    ck_assert_int_eq(wamp_buf_append(&b, big, sizeof(big), SIZE_MAX), WAMP_OK);
    ck_assert_uint_eq(wamp_buf_len(b), sizeof(big));
    ck_assert_uint_eq(wamp_buf_cdata(b)[sizeof(big) - 1], 'x');
    wamp_buf_unref(&b);
    ck_assert_uint_eq(rt_jalloc_kept(), 0); /* too large to keep */
    rt_jalloc_trim();
}

END_TEST

static Suite *rt_jalloc_suite(void)
{
    Suite *s = suite_create("rt_jalloc");
    TCase *tc = tcase_create("jalloc");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_small_blocks_recycled_per_size);
    tcase_add_test(tc, test_alignment_and_sizes);
    tcase_add_test(tc, test_lists_are_bounded);
    tcase_add_test(tc, test_other_threads_bypass_the_lists);
    tcase_add_test(tc, test_jansson_values_use_it);
    tcase_add_test(tc, test_message_buffers_use_it);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_jalloc_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
