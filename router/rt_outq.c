/* rt_outq.c: ring buffer of buffer references that doubles when full and is freed when it
 * drains, so idle sessions hold no ring at all. */
#include "rt_outq.h"

#include <stdlib.h>

void rt_outq_init(rt_outq *q, size_t max_bytes, size_t max_count)
{
    q->ring = NULL;
    q->cap = 0;
    q->head = 0;
    q->count = 0;
    q->bytes = 0;
    q->max_bytes = max_bytes;
    q->max_count = max_count;
}

void rt_outq_fini(rt_outq *q)
{
    while (q->count) {
        rt_outq_pop(q);
    }
    free(q->ring);
    q->ring = NULL;
    q->cap = 0;
}

static wamp_err outq_grow(rt_outq *q)
{
    size_t ncap = q->cap ? q->cap * 2 : 8;
    wamp_buf **nr = malloc(ncap * sizeof(*nr));
    if (!nr) {
        return WAMP_ENOMEM;
    }
    for (size_t i = 0; i < q->count; i++) {
        nr[i] = q->ring[(q->head + i) & (q->cap - 1)];
    }
    free(q->ring);
    q->ring = nr;
    q->cap = ncap;
    q->head = 0;
    return WAMP_OK;
}

wamp_err rt_outq_push(rt_outq *q, wamp_buf *buf)
{
    size_t len = wamp_buf_len(buf);
    if (q->count > 0 &&
        (q->count >= q->max_count || len > q->max_bytes || q->bytes > q->max_bytes - len)) {
        return WAMP_ETOOBIG;
    }
    if (q->count == q->cap) {
        wamp_err err = outq_grow(q);
        if (err != WAMP_OK) {
            return err;
        }
    }
    q->ring[(q->head + q->count) & (q->cap - 1)] = wamp_buf_ref(buf);
    q->count++;
    q->bytes += len;
    return WAMP_OK;
}

wamp_buf *rt_outq_peek(const rt_outq *q)
{
    return q->count ? q->ring[q->head] : NULL;
}

void rt_outq_pop(rt_outq *q)
{
    if (!q->count) {
        return;
    }
    wamp_buf *b = q->ring[q->head];
    q->bytes -= wamp_buf_len(b);
    wamp_buf_unref(&b);
    q->head = (q->head + 1) & (q->cap - 1);
    q->count--;
    if (q->count == 0) {
        /* Idle sessions keep no ring: a burst's ring is released as soon as it drains. */
        if (q->cap > 64) {
            free(q->ring);
            q->ring = NULL;
            q->cap = 0;
        }
        q->head = 0;
    }
}

void rt_outq_drop_all_but_head(rt_outq *q)
{
    while (q->count > 1) {
        size_t last = (q->head + q->count - 1) & (q->cap - 1);
        q->bytes -= wamp_buf_len(q->ring[last]);
        wamp_buf_unref(&q->ring[last]);
        q->count--;
    }
}
