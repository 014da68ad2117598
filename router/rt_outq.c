/* rt_outq.c: ring buffer of buffer references that doubles when full and is freed when it
 * drains, so idle sessions hold no ring at all. Entries taken out of the middle
 * (rt_outq_take_droppable) leave an empty slot behind instead of moving the others; pops step
 * over empty slots, and the ring is compacted when they outnumber the entries. */
#include "rt_outq.h"

#include <stdlib.h>

#include "rt_log.h"

void rt_outq_init(rt_outq *q, size_t max_bytes, size_t max_count)
{
    q->ring = NULL;
    q->cap = 0;
    q->head = 0;
    q->slots = 0;
    q->count = 0;
    q->bytes = 0;
    q->max_bytes = max_bytes;
    q->max_count = max_count;
    q->droppable_count = 0;
    q->droppable_bytes = 0;
    q->scan_from = 0;
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

static rt_outq_entry *slot_at(const rt_outq *q, size_t i)
{
    return &q->ring[(q->head + i) & (q->cap - 1)];
}

/* Copies the entries, oldest first and without the empty slots, into a new ring of ncap slots
 * (at least q->count). */
static wamp_err outq_repack(rt_outq *q, size_t ncap)
{
    rt_outq_entry *nr = malloc(ncap * sizeof(*nr));
    if (!nr) {
        return WAMP_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < q->slots; i++) {
        rt_outq_entry *e = slot_at(q, i);
        if (e->buf) {
            nr[n++] = *e;
        }
    }
    free(q->ring);
    q->ring = nr;
    q->cap = ncap;
    q->head = 0;
    q->slots = n;
    q->scan_from = 0;
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
    if (q->slots == q->cap) {
        wamp_err err = outq_repack(q, q->cap ? q->cap * 2 : 8);
        if (err != WAMP_OK) {
            return err;
        }
    }
    rt_outq_entry *e = slot_at(q, q->slots);
    e->buf = wamp_buf_ref(buf);
    e->droppable = droppable;
    q->slots++;
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
    q->count--;
    if (e->droppable) {
        q->droppable_count--;
        q->droppable_bytes -= len;
    }
}

wamp_buf *rt_outq_take_droppable(rt_outq *q)
{
    size_t others = q->droppable_count - (q->count && q->ring[q->head].droppable ? 1 : 0);
    if (others == 0) {
        return NULL;
    }
    size_t i = q->scan_from > 1 ? q->scan_from : 1;
    while (i < q->slots && !(slot_at(q, i)->buf && slot_at(q, i)->droppable)) {
        i++;
    }
    RT_ASSERT(i < q->slots); /* droppable_count says there is one */
    rt_outq_entry *e = slot_at(q, i);
    wamp_buf *taken = e->buf;
    forget(q, e);
    e->buf = NULL;
    e->droppable = false;
    q->scan_from = i + 1;
    while (q->slots > 1 && !slot_at(q, q->slots - 1)->buf) {
        q->slots--; /* empty slots at the tail are free again */
    }
    if (q->scan_from > q->slots) {
        /* The next push goes into a reclaimed slot: the search must not start past it. */
        q->scan_from = q->slots;
    }
    if (q->slots - q->count > q->count + 8) {
        /* More empty slots than entries: compact (amortized over the drops that made them).
         * Out of memory: the ring stays as it is, still correct. */
        (void)outq_repack(q, q->cap);
    }
    return taken;
}

wamp_buf *rt_outq_slot(const rt_outq *q, size_t i)
{
    return i < q->slots ? slot_at(q, i)->buf : NULL;
}

wamp_buf *rt_outq_peek(const rt_outq *q)
{
    return q->count ? q->ring[q->head].buf : NULL;
}

size_t rt_outq_peek_n(const rt_outq *q, wamp_buf **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < q->slots && n < max; i++) {
        wamp_buf *b = slot_at(q, i)->buf;
        if (b) {
            out[n++] = b;
        }
    }
    return n;
}

/* The slot at head is done with: step to the next entry, over empty slots. */
static void advance(rt_outq *q)
{
    do {
        q->head = (q->head + 1) & (q->cap - 1);
        q->slots--;
        q->scan_from = q->scan_from ? q->scan_from - 1 : 0;
    } while (q->slots && !q->ring[q->head].buf);
}

void rt_outq_pop(rt_outq *q)
{
    if (!q->count) {
        return;
    }
    rt_outq_entry *e = &q->ring[q->head];
    forget(q, e);
    wamp_buf_unref(&e->buf);
    advance(q);
    if (q->count == 0) {
        /* Idle sessions keep no ring: a burst's ring is released as soon as it drains. */
        if (q->cap > 64) {
            free(q->ring);
            q->ring = NULL;
            q->cap = 0;
        }
        q->head = 0;
        q->slots = 0;
        q->scan_from = 0;
    }
}

void rt_outq_drop_all_but_head(rt_outq *q)
{
    while (q->slots > 1) {
        rt_outq_entry *e = slot_at(q, q->slots - 1);
        if (e->buf) {
            forget(q, e);
            wamp_buf_unref(&e->buf);
        }
        q->slots--;
    }
    q->scan_from = 0;
}
