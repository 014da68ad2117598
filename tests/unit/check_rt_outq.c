/* check_rt_outq.c: the per-session outgoing queue and the intrusive hash map. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rt_hmap.h"
#include "rt_outq.h"

static wamp_buf *buf_of(size_t len)
{
    wamp_buf *b = wamp_buf_new(len);
    ck_assert_ptr_nonnull(b);
    unsigned char *p = wamp_buf_reserve(&b, len);
    memset(p, 'a', len);
    wamp_buf_commit(b, len);
    return b;
}

START_TEST(test_fifo_order_and_refs)
{
    rt_outq q;
    rt_outq_init(&q, 1 << 20, 1000);
    wamp_buf *bufs[20];
    for (size_t i = 0; i < 20; i++) {
        bufs[i] = buf_of(i + 1);
        ck_assert_int_eq(rt_outq_push(&q, bufs[i]), WAMP_OK);
        ck_assert_uint_eq(wamp_buf_refs(bufs[i]), 2);
    }
    ck_assert_uint_eq(q.count, 20);
    ck_assert_uint_eq(q.bytes, 210);
    for (size_t i = 0; i < 20; i++) {
        ck_assert_ptr_eq(rt_outq_peek(&q), bufs[i]);
        rt_outq_pop(&q);
        ck_assert_uint_eq(wamp_buf_refs(bufs[i]), 1);
        wamp_buf_unref(&bufs[i]);
    }
    ck_assert_ptr_null(rt_outq_peek(&q));
    ck_assert_uint_eq(q.bytes, 0);
    rt_outq_pop(&q); /* harmless when empty */
    rt_outq_fini(&q);
}

END_TEST

START_TEST(test_caps)
{
    rt_outq q;
    rt_outq_init(&q, 100, 3);
    wamp_buf *big = buf_of(500);
    wamp_buf *small = buf_of(10);
    /* An empty queue takes one message of any size... */
    ck_assert_int_eq(rt_outq_push(&q, big), WAMP_OK);
    /* ...but nothing more once over the byte cap. */
    ck_assert_int_eq(rt_outq_push(&q, small), WAMP_ETOOBIG);
    ck_assert_uint_eq(q.count, 1);
    rt_outq_pop(&q);
    ck_assert_int_eq(rt_outq_push(&q, small), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, small), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, small), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, small), WAMP_ETOOBIG); /* count cap */
    ck_assert_uint_eq(wamp_buf_refs(small), 4);
    rt_outq_drop_all_but_head(&q);
    ck_assert_uint_eq(q.count, 1);
    ck_assert_uint_eq(q.bytes, 10);
    rt_outq_fini(&q);
    ck_assert_uint_eq(wamp_buf_refs(small), 1);
    wamp_buf_unref(&big);
    wamp_buf_unref(&small);
}

END_TEST

START_TEST(test_wraparound)
{
    rt_outq q;
    rt_outq_init(&q, 1 << 20, 1 << 20);
    wamp_buf *b = buf_of(1);
    size_t pushed = 0, popped = 0;
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 5; i++, pushed++) {
            ck_assert_int_eq(rt_outq_push(&q, b), WAMP_OK);
        }
        for (int i = 0; i < 3; i++, popped++) {
            rt_outq_pop(&q);
        }
        ck_assert_uint_eq(q.count, pushed - popped);
    }
    ck_assert_uint_eq(wamp_buf_refs(b), 1 + pushed - popped);
    rt_outq_fini(&q);
    ck_assert_uint_eq(wamp_buf_refs(b), 1);
    wamp_buf_unref(&b);
}

END_TEST

typedef struct item {
    uint64_t key;
    rt_hnode node;
} item;

START_TEST(test_hmap_insert_find_remove)
{
    rt_hmap m;
    rt_hmap_init(&m);
    ck_assert_ptr_null(rt_hmap_first(&m, 1));

    enum {
        N = 5000
    };

    item *items = calloc(N, sizeof(*items));
    for (uint64_t i = 0; i < N; i++) {
        items[i].key = i * 7;
        ck_assert_int_eq(rt_hmap_insert(&m, &items[i].node, rt_hash_u64(items[i].key)), WAMP_OK);
    }
    ck_assert_uint_eq(m.count, N);
    for (uint64_t i = 0; i < N; i++) {
        bool found = false;
        for (rt_hnode *n = rt_hmap_first(&m, rt_hash_u64(i * 7)); n; n = rt_hmap_next(n)) {
            found |= RT_CONTAINER_OF(n, item, node)->key == i * 7;
        }
        ck_assert(found);
    }
    size_t seen = 0;
    for (rt_hmap_iter it = rt_hmap_iter_begin(&m); it.node;) {
        item *e = RT_CONTAINER_OF(it.node, item, node);
        rt_hmap_iter_next(&m, &it);
        if (e->key % 2 == 0) {
            rt_hmap_remove(&m, &e->node);
        }
        seen++;
    }
    ck_assert_uint_eq(seen, N);
    ck_assert_uint_eq(m.count, N / 2);
    ck_assert_ptr_null(rt_hmap_first(&m, rt_hash_u64(0)));
    ck_assert_uint_ne(rt_hash_str("com.a"), rt_hash_str("com.b"));
    rt_hmap_fini(&m);
    free(items);
}

END_TEST

static Suite *rt_outq_suite(void)
{
    Suite *s = suite_create("rt_outq");
    TCase *tc = tcase_create("outq");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_fifo_order_and_refs);
    tcase_add_test(tc, test_caps);
    tcase_add_test(tc, test_wraparound);
    tcase_add_test(tc, test_hmap_insert_find_remove);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_outq_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
