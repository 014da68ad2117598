/* trace_store_int.h: PRIVATE to tracing/: the store's layout (trace_store.c), for the inline
 * steady-state append the fast path of capture writes records with (trace_hub_capture.c,
 * trace_hub_record_fast()): the flight recorder's every record, without a call. Everything
 * else about the store stays behind trace_store.h. */
#ifndef TRACE_STORE_INT_H
#define TRACE_STORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace_record.h"
#include "trace_store.h"
#include "wamp_buf.h"

/* One held record: its peer (a reference) and flags, and the number of its message. */
typedef struct store_seq {
    trace_peer *peer;
    uint32_t msg;
    uint8_t flags;
} store_seq;

/* One message, shared by the seqs that point to it (nseq of them, oldest first). */
typedef struct store_msg {
    uint64_t pc_ns;
    uint64_t ts_ns;
    trace_str *uri;             /* reference */
    wamp_buf *wire;             /* reference */
    const unsigned char *bytes; /* the byte ring's copy */
    const char *dropped;
    uint32_t ser_bytes[WAMP_SER_COUNT];
    uint32_t len;  /* of bytes */
    uint32_t cost; /* what each of its seqs counts against max_bytes */
    uint32_t nseq;
    uint8_t corr[TRACE_UUID_LEN];
    uint8_t dir;
    uint8_t msg_type;
    uint8_t wire_ser;
} store_msg;

struct trace_store {
    store_seq *sring; /* cap slots; count held start at shead */
    store_msg *mring; /* cap slots; mcount held start at mhead, numbered from mfirst */
    size_t cap;
    size_t shead;
    size_t count;
    size_t mhead;
    size_t mcount;
    uint32_t mfirst;
    size_t limit;
    uint64_t max_bytes;
    uint64_t first_seq;
    uint64_t dropped;
    uint64_t bytes;
    /* The byte ring: bcap bytes; live copies from bhead (inclusive) to btail, through bend and
     * around from 0 when wrapped; bused bytes in copies (every copy has at least one byte:
     * bused is 0 exactly when none is live). */
    unsigned char *bring;
    size_t bcap;
    size_t bhead;
    size_t btail;
    size_t bend;
    size_t bused;
    bool bwrapped;
    /* The key of the newest message (trace_rec_view.key; 0: none): a fan-out's repeats of that
     * message point to it (trace_store_append_repeats()). */
    uint64_t key;
};

/* i + n wrapped into the rings (i < cap, n <= cap). */
static inline size_t wrap(const trace_store *st, size_t i, size_t n)
{
    size_t j = i + n;
    return j >= st->cap ? j - st->cap : j;
}

/* Prefetch distance, in entries ahead of the oldest (see prefetch_evictions()). */
#define PREFETCH_SLOTS 24

/* memcpy(d, s, n) (n > 0), without a call into the C library for the usual small message: up to
 * 64 bytes as at most two overlapping 32-byte (or smaller) moves. */
static inline void copy_small(unsigned char *d, const void *s, size_t n)
{
    const unsigned char *p = s;
    if (n >= 16 && n <= 64) {
        /* The first and last 16, then (over 32) the first and last 32: overlapping moves. */
        unsigned char a[16], b[16];
        memcpy(a, p, 16);
        memcpy(b, p + n - 16, 16);
        if (n > 32) {
            unsigned char c[16], e[16];
            memcpy(c, p + 16, 16);
            memcpy(e, p + n - 32, 16);
            memcpy(d + 16, c, 16);
            memcpy(d + n - 32, e, 16);
        }
        memcpy(d, a, 16);
        memcpy(d + n - 16, b, 16);
        return;
    }
    memcpy(d, s, n);
}

/* A store that evicts keeps evicting: each append releases the oldest record, whose entries
 * were last touched a whole ring ago and are out of cache. Requesting them a few appends early
 * overlaps those misses with the work between appends. (What they point to is warm: the peer is
 * per session, the URI the hub's interned one, the bytes in the byte ring are not read.) A
 * prefetch never faults. prefetch_ahead() requests the seq and message entries PREFETCH_SLOTS
 * after sh and mh in rings of cap > PREFETCH_SLOTS. Inline, not a function of its own: GCC
 * deems a function of nothing but prefetches pure and deletes the call. */
static inline __attribute__((always_inline)) void prefetch_ahead(const trace_store *st, size_t cap,
                                                                 size_t sh, size_t mh)
{
    size_t ps = sh + PREFETCH_SLOTS, pm = mh + PREFETCH_SLOTS;
    const char *m = (const char *)&st->mring[pm >= cap ? pm - cap : pm];
    __builtin_prefetch(&st->sring[ps >= cap ? ps - cap : ps], 0, 3);
    __builtin_prefetch(m, 1, 3);
    __builtin_prefetch(m + sizeof(store_msg) - 1, 1, 3);
}

/* prefetch_ahead() from the store's heads, in a store that evicts (holding more than the
 * prefetch distance: the entries prefetched are held ones). */
static inline __attribute__((always_inline)) void prefetch_evictions(const trace_store *st)
{
    if (st->dropped && st->count > PREFETCH_SLOTS) {
        prefetch_ahead(st, st->cap, st->shead, st->mhead);
    }
}

/* Writes the new message entry m (its one seq to come) of v's parts: uri and wire references
 * the entry now owns, bytes the byte ring's copy of len bytes (NULL: none kept). */
static inline __attribute__((always_inline)) void
store_msg_fill(store_msg *m, const trace_rec_view *v, trace_str *uri, wamp_buf *wire,
               const unsigned char *bytes, uint32_t len, uint32_t cost, uint8_t wire_ser)
{
    m->pc_ns = v->pc_ns;
    m->ts_ns = v->ts_ns;
    m->uri = uri;
    m->wire = wire;
    m->bytes = bytes;
    m->dropped = v->dropped;
    memcpy(m->ser_bytes, v->ser_bytes, sizeof(m->ser_bytes));
    m->len = len;
    m->cost = cost;
    m->nseq = 1;
    if (v->flags & TRACE_CORR_HAS) {
        memcpy(m->corr, v->corr, TRACE_UUID_LEN);
    } else {
        memset(m->corr, 0, TRACE_UUID_LEN);
    }
    m->dir = v->dir;
    m->msg_type = v->msg_type;
    m->wire_ser = wire_ser;
}

/* trace_store_append_view()'s steady state, which is every append of a flight recorder that has
 * run a while: the store full at its limit, so the append evicts the oldest record and takes its
 * seq slot (in a full ring the next seq's slot is the oldest's); the oldest message not shared
 * by another record, so it goes with it; a small message, copied, that fits after the byte
 * ring's tail; the budget holding the record in place of the oldest. Every condition is tested
 * before anything changes, the positions read once into locals (a store through a uint64_t
 * field may alias the store's own fields, so the general path reloads them at every step).
 * false: nothing done, the general way (trace_store_append_view()) appends it. */
static inline __attribute__((always_inline)) bool
trace_store_append_steady(trace_store *st, const trace_rec_view *v, const void *src, size_t len,
                          uint64_t *seq)
{
    size_t cap = st->cap;
    if (st->count != cap || cap != st->limit || len == 0 || len > TRACE_STORE_COPY_MAX) {
        return false;
    }
    size_t sh = st->shead, mh = st->mhead, mcount = st->mcount;
    if (cap > PREFETCH_SLOTS) {
        prefetch_ahead(st, cap, sh, mh);
    }
    store_seq *q = &st->sring[sh];
    store_msg *m = &st->mring[mh]; /* the oldest message: the oldest seq's */
    uint32_t cost = (uint32_t)len + TRACE_RECORD_OVERHEAD;
    uint64_t bytes = st->bytes - m->cost + cost;
    size_t bend = st->bwrapped ? st->bhead : st->bcap;
    /* (Room after the tail as it is: releasing the oldest copy can only add to it; and other
     * copies stay live, so the release does not move the tail back to the front.) */
    if (m->nseq != 1 || bytes > st->max_bytes || bend - st->btail < len || st->bused <= m->len ||
        !m->bytes) {
        return false;
    }
    /* Evict the oldest: its message (copy, URI, buffer) and its peer. */
    st->bused -= m->len;
    st->bhead = (size_t)(m->bytes - st->bring) + m->len;
    if (st->bwrapped && st->bhead == st->bend) {
        st->bhead = 0;
        st->bwrapped = false;
    }
    trace_str_unref(&m->uri);
    wamp_buf_unref(&m->wire);
    trace_peer_unref(&q->peer);
    uint32_t no = st->mfirst + (uint32_t)mcount; /* the new message's number */
    st->mfirst++;
    mh = mh + 1 == cap ? 0 : mh + 1;
    st->mhead = mh;
    /* The new message's slot: the oldest's own when no fan-out is held (mcount == cap). */
    size_t mi = mh + mcount - 1;
    m = &st->mring[mi >= cap ? mi - cap : mi];
    unsigned char *d = st->bring + st->btail;
    st->btail += len;
    st->bused += len;
    copy_small(d, src, len);
    store_msg_fill(m, v, v->uri ? trace_str_ref(v->uri) : NULL, NULL, d, (uint32_t)len, cost,
                   v->wire_ser);
    q->peer = v->peer ? trace_peer_ref(v->peer) : NULL;
    q->msg = no;
    q->flags = v->flags;
    st->shead = sh + 1 == cap ? 0 : sh + 1;
    *seq = st->first_seq + cap;
    st->first_seq++;
    st->dropped++;
    st->bytes = bytes;
    st->key = v->key;
    return true;
}

/* trace_store_append_view() where trace_store_append_steady() declined the record: the general
 * append (trace_store.c). */
uint64_t trace_store_append_general(trace_store *st, const trace_rec_view *v);

#endif /* TRACE_STORE_INT_H */
