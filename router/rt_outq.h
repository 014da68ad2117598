/* rt_outq.h: per-session FIFO of encoded messages awaiting the transport, capped by bytes and
 * by count (rt_limits). Ownership: the queue holds one reference on every wamp_buf it contains.
 * Embedded in rt_session (init/fini). Service thread only. */
#ifndef RT_OUTQ_H
#define RT_OUTQ_H

#include <stdbool.h>
#include <stddef.h>

#include "wamp_buf.h"
#include "wamp_err.h"

typedef struct rt_outq {
    wamp_buf **ring; /* owned array of cap slots */
    size_t cap;      /* power of two, 0 while empty-never-used */
    size_t head;     /* index of the oldest entry */
    size_t count;
    size_t bytes; /* sum of wamp_buf_len of queued entries */
    size_t max_bytes;
    size_t max_count;
} rt_outq;

/* Empty queue with the given caps; allocates nothing. */
void rt_outq_init(rt_outq *q, size_t max_bytes, size_t max_count);
/* Drops every queued reference and frees the ring. */
void rt_outq_fini(rt_outq *q);
/* Takes its own reference on buf. WAMP_ETOOBIG if a cap would be exceeded; WAMP_ENOMEM;
 * the queue is unchanged after a failure. An empty queue always accepts one message of any
 * size (a single message is bounded by max_message_size instead). */
wamp_err rt_outq_push(rt_outq *q, wamp_buf *buf);
/* Borrowed: the oldest entry, valid until the next pop/fini; NULL when empty. */
wamp_buf *rt_outq_peek(const rt_outq *q);
/* Drops the oldest entry (no-op when empty). */
void rt_outq_pop(rt_outq *q);
/* Drops every entry but the oldest (which a transport may be half-way through writing). */
void rt_outq_drop_all_but_head(rt_outq *q);

#endif /* RT_OUTQ_H */
