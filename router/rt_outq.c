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
    q->droppable_count = 0;
    q->droppable_bytes = 0;
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
    rt_outq_entry *nr = malloc(ncap * sizeof(*nr));
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

/* Would count entries holding bytes take one more message of len bytes? */
static bool caps_allow(const rt_outq *q, size_t count, size_t bytes, size_t len)
{
    return count == 0 ||
           (count < q->max_count && len <= q->max_bytes && bytes <= q->max_bytes - len);
}

bool rt_outq_fits(const rt_outq *q, size_t len)
{
    return caps_allow(q, q->count, q->bytes, len);
}

bool rt_outq_can_make_room(const rt_outq *q, size_t len)
{
    size_t n = q->droppable_count, b = q->droppable_bytes;
    if (q->count && q->ring[q->head].droppable) {
        n--; /* the head stays */
        b -= wamp_buf_len(q->ring[q->head].buf);
    }
    return caps_allow(q, q->count - n, q->bytes - b, len);
}

wamp_err rt_outq_push(rt_outq *q, wamp_buf *buf, bool droppable)
{
    size_t len = wamp_buf_len(buf);
    if (!rt_outq_fits(q, len)) {
        return WAMP_ETOOBIG;
    }
    if (q->count == q->cap) {
        wamp_err err = outq_grow(q);
        if (err != WAMP_OK) {
            return err;
        }
    }
    rt_outq_entry *e = &q->ring[(q->head + q->count) & (q->cap - 1)];
    e->buf = wamp_buf_ref(buf);
    e->droppable = droppable;
    q->count++;
    q->bytes += len;
    if (droppable) {
        q->droppable_count++;
        q->droppable_bytes += len;
    }
    return WAMP_OK;
}

/* Accounting of entry e leaving the queue (its reference is handled by the caller). */
static void forget(rt_outq *q, const rt_outq_entry *e)
{
    size_t len = wamp_buf_len(e->buf);
    q->bytes -= len;
    if (e->droppable) {
        q->droppable_count--;
        q->droppable_bytes -= len;
    }
}

wamp_buf *rt_outq_take_droppable(rt_outq *q)
{
    size_t mask = q->cap - 1;
    if (q->count < 2 || q->droppable_count == 0) {
        return NULL;
    }
    size_t i = 1;
    while (i < q->count && !q->ring[(q->head + i) & mask].droppable) {
        i++;
    }
    if (i == q->count) {
        return NULL; /* only the head is droppable */
    }
    rt_outq_entry victim = q->ring[(q->head + i) & mask];
    forget(q, &victim);
    /* Close the gap from the head's side: entries 0..i-1 move one slot towards the tail (the
     * head entry keeps its buffer, so a transport half-way through it is not disturbed). In
     * the usual flood the victim is entry 1: one move. */
    for (size_t j = i; j > 0; j--) {
        q->ring[(q->head + j) & mask] = q->ring[(q->head + j - 1) & mask];
    }
    q->head = (q->head + 1) & mask;
    q->count--;
    return victim.buf;
}

wamp_buf *rt_outq_at(const rt_outq *q, size_t i)
{
    return i < q->count ? q->ring[(q->head + i) & (q->cap - 1)].buf : NULL;
}

wamp_buf *rt_outq_peek(const rt_outq *q)
{
    return q->count ? q->ring[q->head].buf : NULL;
}

void rt_outq_pop(rt_outq *q)
{
    if (!q->count) {
        return;
    }
    rt_outq_entry *e = &q->ring[q->head];
    forget(q, e);
    wamp_buf_unref(&e->buf);
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
        rt_outq_entry *e = &q->ring[(q->head + q->count - 1) & (q->cap - 1)];
        forget(q, e);
        wamp_buf_unref(&e->buf);
        q->count--;
    }
}
