/* rt_outq.h: per-session FIFO of encoded messages awaiting the transport, capped by bytes and
 * by count (rt_limits). Each entry carries a "droppable" tag (EVENTs, for the slow-consumer
 * policy limits.slow_consumer = "drop_oldest_events"), so that the queue can make room by
 * dropping such entries oldest first without decoding anything.
 * Ownership: the queue holds one reference on every wamp_buf it contains.
 * Embedded in rt_session (init/fini). Service thread only. */
#ifndef RT_OUTQ_H
#define RT_OUTQ_H

#include <stdbool.h>
#include <stddef.h>

#include "wamp_buf.h"
#include "wamp_err.h"

typedef struct rt_outq_entry {
    wamp_buf *buf;  /* one reference; NULL: a dropped entry's slot (see rt_outq_take_droppable) */
    bool droppable; /* may be dropped to make room (an EVENT) */
} rt_outq_entry;

typedef struct rt_outq {
    rt_outq_entry *ring; /* owned array of cap slots */
    size_t cap;          /* power of two, 0 while empty-never-used */
    size_t head;         /* index of the oldest entry (never a dropped slot) */
    size_t slots;        /* slots in use from head on: the entries and the dropped slots */
    size_t count;        /* entries (messages) queued */
    size_t bytes;        /* sum of wamp_buf_len of queued entries */
    size_t max_bytes;
    size_t max_count;
    size_t droppable_count; /* entries tagged droppable (the head included) */
    size_t droppable_bytes;
    /* Slots (from head) before this one hold no droppable entry but the head: where the search
     * of rt_outq_take_droppable() resumes, so that a run of other entries is walked once. */
    size_t scan_from;
} rt_outq;

/* Empty queue with the given caps; allocates nothing. */
void rt_outq_init(rt_outq *q, size_t max_bytes, size_t max_count);
/* Drops every queued reference and frees the ring. */
void rt_outq_fini(rt_outq *q);
/* Takes its own reference on buf, tagged droppable or not. WAMP_ETOOBIG if a cap would be
 * exceeded; WAMP_ENOMEM; the queue is unchanged after a failure. An empty queue always accepts
 * one message of any size (a single message is bounded by max_message_size instead). */
wamp_err rt_outq_push(rt_outq *q, wamp_buf *buf, bool droppable);
/* true if rt_outq_push() of a len-byte message would pass the caps now. */
bool rt_outq_fits(const rt_outq *q, size_t len);
/* true if the caps would let a len-byte message in once every droppable entry but the head
 * is dropped (rt_outq_take_droppable() until rt_outq_fits()). */
bool rt_outq_can_make_room(const rt_outq *q, size_t len);
/* Removes the oldest droppable entry other than the head (which a transport may be half-way
 * through writing) and returns its reference, which the caller now owns (wamp_buf_unref);
 * NULL if there is none. Its slot stays, empty, until the head passes it or the ring is
 * compacted (when empty slots outnumber entries): amortized O(1), however many other entries
 * precede the droppable ones. */
wamp_buf *rt_outq_take_droppable(rt_outq *q);
/* Borrowed: slot i (0 = the oldest entry, up to q->slots), valid until the queue changes; NULL
 * for a dropped entry's slot or i >= q->slots. */
wamp_buf *rt_outq_slot(const rt_outq *q, size_t i);
/* Borrowed: the oldest entry, valid until the next pop/fini; NULL when empty. */
wamp_buf *rt_outq_peek(const rt_outq *q);
/* Borrowed: the oldest entries in order, at most max of them, into out; returns how many.
 * Valid until the queue changes. */
size_t rt_outq_peek_n(const rt_outq *q, wamp_buf **out, size_t max);
/* Drops the oldest entry (no-op when empty). */
void rt_outq_pop(rt_outq *q);
/* Drops every entry but the oldest (which a transport may be half-way through writing). */
void rt_outq_drop_all_but_head(rt_outq *q);

#endif /* RT_OUTQ_H */
