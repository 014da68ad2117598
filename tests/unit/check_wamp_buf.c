/* check_wamp_buf.c: reference counting, growth, caps, sharing rules and headroom of wamp_buf. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "wamp_buf.h"

START_TEST(test_refs)
{
    wamp_buf *b = wamp_buf_new(10);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(wamp_buf_refs(b), 1);
    ck_assert_uint_eq(wamp_buf_len(b), 0);
    wamp_buf *b2 = wamp_buf_ref(b);
    ck_assert_ptr_eq(b2, b);
    ck_assert_uint_eq(wamp_buf_refs(b), 2);
    wamp_buf_unref(&b2);
    ck_assert_ptr_null(b2);
    ck_assert_uint_eq(wamp_buf_refs(b), 1);
    wamp_buf_unref(&b);
    ck_assert_ptr_null(b);
    wamp_buf_unref(&b); /* *b == NULL: no-op */
    wamp_buf_unref(NULL);
}

END_TEST

START_TEST(test_new_copy)
{
    wamp_buf *b = wamp_buf_new_copy("hello", 5);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(wamp_buf_len(b), 5);
    ck_assert_mem_eq(wamp_buf_cdata(b), "hello", 5);
    ck_assert_ptr_eq(wamp_buf_cdata(b), wamp_buf_data(b));
    wamp_buf_unref(&b);
    b = wamp_buf_new_copy(NULL, 0);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(wamp_buf_len(b), 0);
    wamp_buf_unref(&b);
}

END_TEST

START_TEST(test_append_growth)
{
    wamp_buf *b = NULL;
    static const char pat[] = "0123456";
    /* *b == NULL creates the buffer; 7000 bytes force several doublings past the first 256. */
    for (size_t i = 0; i < 1000; i++) {
        ck_assert_int_eq(wamp_buf_append(&b, pat, 7, SIZE_MAX), WAMP_OK);
        ck_assert_uint_eq(wamp_buf_len(b), (i + 1) * 7);
    }
    for (size_t i = 0; i < 1000; i++) {
        ck_assert_mem_eq(wamp_buf_cdata(b) + i * 7, pat, 7);
    }
    ck_assert_uint_eq(wamp_buf_refs(b), 1);
    /* Zero-length appends are fine and change nothing. */
    ck_assert_int_eq(wamp_buf_append(&b, NULL, 0, SIZE_MAX), WAMP_OK);
    ck_assert_uint_eq(wamp_buf_len(b), 7000);
    wamp_buf_unref(&b);
}

END_TEST

START_TEST(test_append_cap)
{
    wamp_buf *b = NULL;
    /* Over the cap before anything exists: still nothing allocated. */
    ck_assert_int_eq(wamp_buf_append(&b, "0123456789", 10, 9), WAMP_ETOOBIG);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(wamp_buf_append(&b, "0123456789", 10, 16), WAMP_OK);
    ck_assert_int_eq(wamp_buf_append(&b, "abcdefg", 7, 16), WAMP_ETOOBIG);
    ck_assert_uint_eq(wamp_buf_len(b), 10);
    ck_assert_mem_eq(wamp_buf_cdata(b), "0123456789", 10);
    ck_assert_int_eq(wamp_buf_append(&b, "abcdef", 6, 16), WAMP_OK);
    ck_assert_uint_eq(wamp_buf_len(b), 16);
    ck_assert_mem_eq(wamp_buf_cdata(b), "0123456789abcdef", 16);
    ck_assert_int_eq(wamp_buf_append(&b, "x", 1, 16), WAMP_ETOOBIG);
    ck_assert_int_eq(wamp_buf_append(&b, "x", 1, SIZE_MAX), WAMP_OK);
    wamp_buf_unref(&b);
}

END_TEST

START_TEST(test_shared_is_immutable)
{
    wamp_buf *b = wamp_buf_new_copy("abc", 3);
    wamp_buf *other = wamp_buf_ref(b);
    wamp_buf *before = b;
    ck_assert_int_eq(wamp_buf_append(&b, "d", 1, SIZE_MAX), WAMP_EINVAL);
    ck_assert_ptr_eq(b, before);
    ck_assert_ptr_null(wamp_buf_reserve(&b, 1));
    wamp_buf_clear(b);
    ck_assert_uint_eq(wamp_buf_len(b), 3);
    ck_assert_mem_eq(wamp_buf_cdata(other), "abc", 3);
    wamp_buf_unref(&other);
    /* Unshared again: appends work. */
    ck_assert_int_eq(wamp_buf_append(&b, "d", 1, SIZE_MAX), WAMP_OK);
    ck_assert_mem_eq(wamp_buf_cdata(b), "abcd", 4);
    wamp_buf_unref(&b);
}

END_TEST

START_TEST(test_headroom_writable)
{
    wamp_buf *b = wamp_buf_new_copy("payload", 7);
    /* A transport writes its frame header in front of the data. Under ASan an out-of-bounds
     * write fails here; without it, clobbered bookkeeping shows in the checks below. */
    unsigned char *hdr = wamp_buf_data(b) - WAMP_BUF_HEADROOM;
    memset(hdr, 0xab, WAMP_BUF_HEADROOM);
    ck_assert_uint_eq(wamp_buf_len(b), 7);
    ck_assert_uint_eq(wamp_buf_refs(b), 1);
    ck_assert_mem_eq(wamp_buf_cdata(b), "payload", 7);
    for (size_t i = 0; i < WAMP_BUF_HEADROOM; i++) {
        ck_assert_uint_eq(hdr[i], 0xab);
    }
    /* The headroom moves with the data when the buffer grows. */
    ck_assert_int_eq(wamp_buf_append(&b, "0123456789", 10, SIZE_MAX), WAMP_OK);
    for (size_t i = 0; i < 100; i++) {
        ck_assert_int_eq(wamp_buf_append(&b, "0123456789", 10, SIZE_MAX), WAMP_OK);
    }
    memset(wamp_buf_data(b) - WAMP_BUF_HEADROOM, 0xcd, WAMP_BUF_HEADROOM);
    ck_assert_uint_eq(wamp_buf_len(b), 1017);
    ck_assert_mem_eq(wamp_buf_cdata(b), "payload0123456789", 17);
    wamp_buf_unref(&b);
}

END_TEST

START_TEST(test_reserve_commit_clear)
{
    wamp_buf *b = NULL;
    unsigned char *p = wamp_buf_reserve(&b, 100);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_eq(p, wamp_buf_data(b));
    memset(p, 'q', 100);
    ck_assert_uint_eq(wamp_buf_len(b), 0); /* nothing counted before commit */
    wamp_buf_commit(b, 100);
    ck_assert_uint_eq(wamp_buf_len(b), 100);
    p = wamp_buf_reserve(&b, 5000);
    ck_assert_ptr_eq(p, wamp_buf_data(b) + 100);
    memset(p, 'r', 5000);
    wamp_buf_commit(b, 5000);
    ck_assert_uint_eq(wamp_buf_len(b), 5100);
    ck_assert_uint_eq(wamp_buf_data(b)[99], 'q');
    ck_assert_uint_eq(wamp_buf_data(b)[100], 'r');
    /* clear keeps the allocation: a reserve within the old size does not move the data. */
    unsigned char *data = wamp_buf_data(b);
    wamp_buf_clear(b);
    ck_assert_uint_eq(wamp_buf_len(b), 0);
    ck_assert_ptr_eq(wamp_buf_reserve(&b, 5100), data);
    wamp_buf_clear(NULL);
    wamp_buf_unref(&b);
}

END_TEST

static Suite *wamp_buf_suite(void)
{
    Suite *s = suite_create("wamp_buf");
    TCase *tc = tcase_create("buf");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_refs);
    tcase_add_test(tc, test_new_copy);
    tcase_add_test(tc, test_append_growth);
    tcase_add_test(tc, test_append_cap);
    tcase_add_test(tc, test_shared_is_immutable);
    tcase_add_test(tc, test_headroom_writable);
    tcase_add_test(tc, test_reserve_commit_clear);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_buf_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
