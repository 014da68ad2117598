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
        ck_assert_int_eq(rt_outq_push(&q, bufs[i], false), WAMP_OK);
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
    ck_assert_int_eq(rt_outq_push(&q, big, false), WAMP_OK);
    /* ...but nothing more once over the byte cap. */
    ck_assert_int_eq(rt_outq_push(&q, small, false), WAMP_ETOOBIG);
    ck_assert_uint_eq(q.count, 1);
    rt_outq_pop(&q);
    ck_assert_int_eq(rt_outq_push(&q, small, false), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, small, false), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, small, false), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, small, false), WAMP_ETOOBIG); /* count cap */
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
            ck_assert_int_eq(rt_outq_push(&q, b, false), WAMP_OK);
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

/* limits.slow_consumer "drop_oldest_events": droppable entries leave oldest first, never the
 * head, with the caps' accounting kept exact. */
START_TEST(test_take_droppable)
{
    rt_outq q;
    rt_outq_init(&q, 1000, 6);
    wamp_buf *b[6];
    /* head (droppable), keep, drop1, keep, drop2, drop3 */
    const bool tag[6] = {true, false, true, false, true, true};
    for (int i = 0; i < 6; i++) {
        b[i] = buf_of((size_t)10 + (size_t)i);
        ck_assert_int_eq(rt_outq_push(&q, b[i], tag[i]), WAMP_OK);
    }
    ck_assert(!rt_outq_fits(&q, 1)); /* count cap */
    ck_assert(rt_outq_can_make_room(&q, 1));
    ck_assert_uint_eq(q.droppable_count, 4);
    wamp_buf *t = rt_outq_take_droppable(&q);
    ck_assert_ptr_eq(t, b[2]);
    wamp_buf_unref(&t);
    ck_assert(rt_outq_fits(&q, 1));
    ck_assert_uint_eq(q.count, 5);
    ck_assert_uint_eq(q.bytes, 10 + 11 + 13 + 14 + 15);
    t = rt_outq_take_droppable(&q);
    ck_assert_ptr_eq(t, b[4]);
    wamp_buf_unref(&t);
    t = rt_outq_take_droppable(&q);
    ck_assert_ptr_eq(t, b[5]);
    wamp_buf_unref(&t);
    /* Only the head is droppable now: it stays. */
    ck_assert_ptr_null(rt_outq_take_droppable(&q));
    ck_assert_uint_eq(q.droppable_count, 1);
    ck_assert_uint_eq(q.droppable_bytes, 10);
    /* The order of what is left is untouched. */
    const int left[3] = {0, 1, 3};
    for (int i = 0; i < 3; i++) {
        ck_assert_ptr_eq(rt_outq_peek(&q), b[left[i]]);
        rt_outq_pop(&q);
    }
    ck_assert_uint_eq(q.bytes, 0);
    ck_assert_uint_eq(q.droppable_count, 0);
    for (int i = 0; i < 6; i++) {
        ck_assert_uint_eq(wamp_buf_refs(b[i]), 1);
        wamp_buf_unref(&b[i]);
    }
    rt_outq_fini(&q);
}

END_TEST

/* Droppable entries behind a long run of others: each is found without walking the run again,
 * the slots they leave are reclaimed (the ring does not grow while the head never moves), and
 * the order of what is left is kept. */
START_TEST(test_take_droppable_behind_others)
{
    rt_outq q;
    rt_outq_init(&q, 1 << 30, 1200);
    wamp_buf *k = buf_of(3), *d = buf_of(5);
    for (int i = 0; i < 1000; i++) {
        ck_assert_int_eq(rt_outq_push(&q, k, false), WAMP_OK);
    }
    for (int i = 0; i < 200; i++) {
        ck_assert_int_eq(rt_outq_push(&q, d, true), WAMP_OK);
    }
    /* A flood: every new droppable entry displaces the oldest droppable one. */
    for (int i = 0; i < 100000; i++) {
        ck_assert(!rt_outq_fits(&q, 5));
        ck_assert(rt_outq_can_make_room(&q, 5));
        wamp_buf *t = rt_outq_take_droppable(&q);
        ck_assert_ptr_eq(t, d);
        wamp_buf_unref(&t);
        ck_assert_int_eq(rt_outq_push(&q, d, true), WAMP_OK);
        ck_assert_uint_le(q.slots, 2 * q.count + 9);
    }
    ck_assert_uint_le(q.cap, 4096);
    ck_assert_uint_eq(q.count, 1200);
    ck_assert_uint_eq(q.droppable_count, 200);
    ck_assert_uint_eq(q.bytes, 1000 * 3 + 200 * 5);
    for (int i = 0; i < 1200; i++) {
        ck_assert_ptr_eq(rt_outq_peek(&q), i < 1000 ? k : d);
        rt_outq_pop(&q);
    }
    ck_assert_ptr_null(rt_outq_peek(&q));
    ck_assert_uint_eq(q.bytes, 0);
    rt_outq_fini(&q);
    ck_assert_uint_eq(wamp_buf_refs(k), 1);
    ck_assert_uint_eq(wamp_buf_refs(d), 1);
    wamp_buf_unref(&k);
    wamp_buf_unref(&d);
}

END_TEST

/* Droppable entries taken from the tail free their slots; a droppable entry pushed into those
 * slots afterwards is found by the next take (a slow consumer under drop_oldest_events whose
 * queue fills again after its EVENTs were dropped). */
START_TEST(test_take_droppable_after_tail_reclaimed)
{
    rt_outq q;
    rt_outq_init(&q, 1 << 20, 10);
    wamp_buf *head = buf_of(1), *d1 = buf_of(2), *d2 = buf_of(3), *d3 = buf_of(4);
    ck_assert_int_eq(rt_outq_push(&q, head, false), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, d1, true), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, d2, true), WAMP_OK);
    wamp_buf *t = rt_outq_take_droppable(&q);
    ck_assert_ptr_eq(t, d1);
    wamp_buf_unref(&t);
    t = rt_outq_take_droppable(&q);
    ck_assert_ptr_eq(t, d2);
    wamp_buf_unref(&t);
    ck_assert_uint_eq(q.slots, 1); /* both slots reclaimed */
    ck_assert_int_eq(rt_outq_push(&q, d3, true), WAMP_OK);
    ck_assert(rt_outq_can_make_room(&q, 1));
    t = rt_outq_take_droppable(&q);
    ck_assert_ptr_eq(t, d3);
    wamp_buf_unref(&t);
    ck_assert_uint_eq(q.count, 1);
    ck_assert_uint_eq(q.droppable_count, 0);
    ck_assert_ptr_eq(rt_outq_peek(&q), head);
    rt_outq_fini(&q);
    wamp_buf_unref(&head);
    wamp_buf_unref(&d1);
    wamp_buf_unref(&d2);
    wamp_buf_unref(&d3);
}

END_TEST

/* Pops over the slots taken entries leave, the head being written meanwhile. */
START_TEST(test_pop_over_taken_slots)
{
    rt_outq q;
    rt_outq_init(&q, 1 << 20, 10);
    wamp_buf *b[6];
    for (int i = 0; i < 6; i++) {
        b[i] = buf_of((size_t)i + 1);
        ck_assert_int_eq(rt_outq_push(&q, b[i], i != 3), WAMP_OK);
    }
    /* Take 1 and 2 (3 is not droppable), leaving two empty slots after the head. */
    for (int i = 1; i <= 2; i++) {
        wamp_buf *t = rt_outq_take_droppable(&q);
        ck_assert_ptr_eq(t, b[i]);
        wamp_buf_unref(&t);
    }
    ck_assert_uint_eq(q.count, 4);
    ck_assert_ptr_null(rt_outq_slot(&q, 1));
    ck_assert_ptr_eq(rt_outq_slot(&q, 3), b[3]);
    rt_outq_pop(&q); /* 0: the next is 3, over the two empty slots */
    ck_assert_ptr_eq(rt_outq_peek(&q), b[3]);
    wamp_buf *t = rt_outq_take_droppable(&q); /* 4 (3, the head, is not droppable anyway) */
    ck_assert_ptr_eq(t, b[4]);
    wamp_buf_unref(&t);
    ck_assert_int_eq(rt_outq_push(&q, b[0], true), WAMP_OK);
    rt_outq_drop_all_but_head(&q);
    ck_assert_uint_eq(q.count, 1);
    ck_assert_uint_eq(q.slots, 1);
    ck_assert_uint_eq(q.droppable_count, 0);
    ck_assert_ptr_eq(rt_outq_peek(&q), b[3]);
    rt_outq_fini(&q);
    for (int i = 0; i < 6; i++) {
        ck_assert_uint_eq(wamp_buf_refs(b[i]), 1);
        wamp_buf_unref(&b[i]);
    }
}

END_TEST

/* rt_outq_peek_n(): the oldest entries in order, over the slots of dropped ones, at most max;
 * those after the head stay where they are when the head is popped. */
START_TEST(test_peek_n)
{
    rt_outq q;
    rt_outq_init(&q, 1 << 20, 10);
    wamp_buf *out[8];
    ck_assert_uint_eq(rt_outq_peek_n(&q, out, 8), 0);
    wamp_buf *b[6];
    for (int i = 0; i < 6; i++) {
        b[i] = buf_of((size_t)i + 1);
        ck_assert_int_eq(rt_outq_push(&q, b[i], i == 2 || i == 3), WAMP_OK);
    }
    for (int i = 2; i <= 3; i++) {
        wamp_buf *t = rt_outq_take_droppable(&q);
        ck_assert_ptr_eq(t, b[i]);
        wamp_buf_unref(&t);
    }
    ck_assert_uint_eq(rt_outq_peek_n(&q, out, 8), 4);
    ck_assert_ptr_eq(out[0], b[0]);
    ck_assert_ptr_eq(out[1], b[1]);
    ck_assert_ptr_eq(out[2], b[4]);
    ck_assert_ptr_eq(out[3], b[5]);
    ck_assert_uint_eq(rt_outq_peek_n(&q, out, 3), 3);
    ck_assert_ptr_eq(out[2], b[4]);
    rt_outq_pop(&q);
    rt_outq_pop(&q);
    ck_assert_ptr_eq(rt_outq_peek(&q), out[2]);
    ck_assert_uint_eq(rt_outq_peek_n(&q, out, 1), 1);
    ck_assert_ptr_eq(out[0], b[4]);
    rt_outq_fini(&q);
    for (int i = 0; i < 6; i++) {
        ck_assert_uint_eq(wamp_buf_refs(b[i]), 1);
        wamp_buf_unref(&b[i]);
    }
}

END_TEST

/* Non-droppable entries filling the queue: no room can be made. */
START_TEST(test_cannot_make_room)
{
    rt_outq q;
    rt_outq_init(&q, 100, 1000);
    wamp_buf *d = buf_of(30), *k = buf_of(40);
    ck_assert_int_eq(rt_outq_push(&q, k, false), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, d, true), WAMP_OK);
    ck_assert_int_eq(rt_outq_push(&q, d, true), WAMP_OK);
    ck_assert(!rt_outq_fits(&q, 40));
    ck_assert(rt_outq_can_make_room(&q, 40));
    ck_assert(!rt_outq_can_make_room(&q, 61)); /* 40 stay queued */
    /* A droppable head is not counted as room. */
    rt_outq_pop(&q);
    ck_assert_int_eq(rt_outq_push(&q, k, false), WAMP_OK);
    ck_assert(!rt_outq_can_make_room(&q, 40)); /* 30 (head) + 40 stay */
    ck_assert(rt_outq_can_make_room(&q, 30));
    rt_outq_fini(&q);
    ck_assert_uint_eq(wamp_buf_refs(d), 1);
    wamp_buf_unref(&d);
    wamp_buf_unref(&k);
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
    tcase_add_test(tc, test_take_droppable);
    tcase_add_test(tc, test_cannot_make_room);
    tcase_add_test(tc, test_take_droppable_behind_others);
    tcase_add_test(tc, test_take_droppable_after_tail_reclaimed);
    tcase_add_test(tc, test_pop_over_taken_slots);
    tcase_add_test(tc, test_peek_n);
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
