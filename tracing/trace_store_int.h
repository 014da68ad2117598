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

/* store_ent.word of a repeat entry has this bit set (a message entry's, its size, is even). */
#define STORE_REP_BIT 1u

/* The head of every entry in the ring (8-byte aligned), and the whole of a repeat entry. */
typedef struct store_ent {
    /* A message entry: its size in bytes (header and bytes, a multiple of 8). A repeat entry:
     * the offset / 8 of its message entry, shifted left by one, with STORE_REP_BIT. */
    uint32_t word;
    /* (Message entries:) these three and flags in trace_rec_view's order, copied at once. */
    uint8_t dir;
    uint8_t msg_type;
    uint8_t wire_ser;
    uint8_t flags;    /* TRACE_CORR_* of its seq */
    trace_peer *peer; /* reference; NULL once its seq is dropped */
} store_ent;

_Static_assert(offsetof(store_ent, flags) == offsetof(store_ent, dir) + 3 &&
                       offsetof(trace_rec_view, msg_type) == offsetof(trace_rec_view, dir) + 1 &&
                       offsetof(trace_rec_view, wire_ser) == offsetof(trace_rec_view, dir) + 2 &&
                       offsetof(trace_rec_view, flags) == offsetof(trace_rec_view, dir) + 3,
               "dir, msg_type, wire_ser, flags: one copy");

static inline bool store_ent_is_rep(const store_ent *e)
{
    return e->word & STORE_REP_BIT;
}

/* The offset of a repeat entry's message entry. */
static inline size_t store_rep_moff(const store_ent *e)
{
    return (size_t)(e->word >> 1) << 3;
}

/* The word of a repeat entry of the message entry at moff. */
static inline uint32_t store_rep_word(size_t moff)
{
    return (uint32_t)((moff >> 3) << 1) | STORE_REP_BIT;
}

/* Bytes of the entry e. */
static inline size_t store_ent_size(const store_ent *e)
{
    return store_ent_is_rep(e) ? sizeof(store_ent) : e->word;
}

/* A message entry: one seq's record, and the message its repeats share. The bytes it keeps
 * (len of them) follow it in the ring, padded to 8. What an eviction reads comes first. */
typedef struct store_msg {
    store_ent h;
    trace_str *uri; /* reference */
    wamp_buf *wire; /* reference */
    uint32_t cost;  /* what each of its seqs counts against max_bytes */
    uint32_t nrep;  /* repeat entries after it */
    uint32_t len;   /* of the bytes that follow */
    const char *dropped;
    uint64_t pc_ns;
    uint64_t ts_ns;
    uint32_t ser_bytes[WAMP_SER_COUNT];
    uint8_t corr[TRACE_UUID_LEN];
} store_msg;

_Static_assert(sizeof(store_ent) == 16 && sizeof(store_msg) % 8 == 0, "entries stay 8-aligned");
/* A record's entry and its index slot fit in what it counts against max_bytes, whatever the
 * padding of its bytes (the budget bounds the ring's live bytes). */
_Static_assert(sizeof(store_msg) + 7 + sizeof(uint32_t) <= TRACE_RECORD_OVERHEAD,
               "a message entry fits in TRACE_RECORD_OVERHEAD");

struct trace_store {
    /* The ring: rcap bytes (a multiple of 4096, or 0 before the first append); live entries from
     * rhead to rtail, through rend and around from 0 when wrapped (an entry never wraps: one
     * that does not fit before the end starts at the front, and the end's rest is skipped). */
    unsigned char *ring;
    size_t rcap;
    size_t rhead; /* the oldest message entry: the oldest held seq's message */
    size_t rtail;
    size_t rend;
    bool wrapped;
    /* The index: the offset / 8 of seq s's entry is idx[s & imask]; imask + 1 (a power of two,
     * 0 before the first append) >= count. */
    uint32_t *idx;
    size_t imask;
    size_t count; /* held seqs: [first_seq, first_seq + count) */
    size_t limit;
    uint64_t max_bytes;
    uint64_t first_seq;
    uint64_t dropped;
    uint64_t bytes;
    size_t mcount; /* message entries held */
    size_t hgone;  /* seqs of the oldest message already dropped (its own, then its repeats) */
    size_t newest; /* offset of the newest message entry (count > 0) */
    /* The key of the newest message (trace_rec_view.key; 0: none): a fan-out's repeats of that
     * message follow it (trace_store_append_repeats()). */
    uint64_t key;
};

/* Bytes of a message entry keeping len bytes. */
static inline size_t store_msg_size(size_t len)
{
    return sizeof(store_msg) + ((len + 7) & ~(size_t)7);
}

/* Spare bytes allocated past the ring's capacity, so that a prefetch of the lines just after
 * an entry at the ring's end (store_prefetch_lines(), at most 4 lines from within the ring)
 * stays within the allocation. */
#define STORE_RING_SPARE 256

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

/* A store that evicts keeps evicting: each append reads the oldest entry's header (its size,
 * its cost, the references it drops) and writes the new entry at the write end, lines last
 * touched about a round of the ring ago and, in a ring larger than the L2 cache (the flight
 * recorder's of JSON calls: about 1.9 MB), out of it. So an append that evicted requests, for
 * the next one, the header of the entry that is oldest now (nhead: its first 40 bytes, which
 * may cross into the next line) and, for the next entry, the line two past the new write end
 * (wend; the lines before it are the entry being written now, or were requested by the append
 * before). Exactly these lines: a fixed distance ahead of both ends (the earlier design) fetched
 * one line per record at some offset of the ring, while a JSON record spans three, and hid
 * nothing. store_prefetch_lines() requests the lines lines from off on, to read; the evictions
 * of a fan-out's seqs use it too (trace_store.c). Inline, not functions of their own: GCC deems
 * a function of nothing but prefetches pure and deletes the call. */
static inline __attribute__((always_inline)) void store_prefetch_lines(const unsigned char *ring,
                                                                       size_t off, int lines)
{
    for (int i = 0; i < lines; i++) {
        __builtin_prefetch(ring + off + 64 * (size_t)i, 0, 3);
    }
}

static inline __attribute__((always_inline)) void store_prefetch_next(const unsigned char *ring,
                                                                      size_t nhead, size_t wend)
{
    store_prefetch_lines(ring, nhead, 2);
    __builtin_prefetch(ring + wend + 128, 1, 3);
}

/* Writes the message entry m (size bytes, its one seq's peer and flags) of v's parts: peer, uri
 * and wire references the entry now owns, len bytes kept (copied after it by the caller). */
static inline __attribute__((always_inline)) void
store_msg_fill(store_msg *m, const trace_rec_view *v, size_t size, trace_peer *peer, trace_str *uri,
               wamp_buf *wire, uint32_t len, uint32_t cost)
{
    m->h.word = (uint32_t)size;
    memcpy(&m->h.dir, (const unsigned char *)v + offsetof(trace_rec_view, dir), 4);
    m->h.peer = peer;
    m->uri = uri;
    m->wire = wire;
    m->cost = cost;
    m->nrep = 0;
    m->len = len;
    m->dropped = v->dropped;
    m->pc_ns = v->pc_ns;
    m->ts_ns = v->ts_ns;
    memcpy(m->ser_bytes, v->ser_bytes, sizeof(m->ser_bytes));
    if (v->flags & TRACE_CORR_HAS) {
        memcpy(m->corr, v->corr, TRACE_UUID_LEN);
    } else {
        memset(m->corr, 0, TRACE_UUID_LEN);
    }
}

/* The steady appends' last step, a record in place of the oldest: the counts (first_seq and
 * dropped one more, bytes and key as given) and the new message entry at tail (size bytes: v's
 * parts with references of its own on the peer and URI, then len bytes of src). The caller
 * writes its seq afterwards: a store through a uint64_t pointer may alias the store's fields. */
static inline __attribute__((always_inline)) void
store_put_steady(trace_store *st, unsigned char *ring, size_t tail, size_t size, uint64_t bytes,
                 uint64_t key, const trace_rec_view *v, const void *src, size_t len, uint32_t cost)
{
    st->rtail = tail + size;
    st->newest = tail;
    st->first_seq++;
    st->dropped++;
    st->bytes = bytes;
    st->key = key;
    store_msg *n = (store_msg *)(void *)(ring + tail);
    store_msg_fill(n, v, size, v->peer ? trace_peer_ref(v->peer) : NULL,
                   v->uri ? trace_str_ref(v->uri) : NULL, NULL, (uint32_t)len, cost);
    copy_small((unsigned char *)(n + 1), src, len);
}

/* What a record keeping len bytes (at most TRACE_STORE_COPY_MAX) counts against max_bytes. */
static inline uint32_t store_cost_small(size_t len)
{
    return (uint32_t)len + TRACE_RECORD_OVERHEAD;
}

/* The steady appends' first condition: the store full at its limit (each append evicts) and a
 * message of len bytes small enough to be copied into its entry (1 to TRACE_STORE_COPY_MAX). */
static inline bool store_steady_len(const trace_store *st, size_t len)
{
    return st->count == st->limit && len - 1 < TRACE_STORE_COPY_MAX; /* (len 0 wraps) */
}

/* trace_store_append_view()'s steady state, which is every append of a flight recorder that has
 * run a while: the store full at its limit, so the append evicts the oldest record; that record
 * a message without repeats, so its entry at the ring's read end goes with it; a small message,
 * copied into its entry, which fits at the write end once the oldest is gone (without wrapping);
 * the budget holding the record in place of the oldest. Every condition is tested before
 * anything changes, the positions read once into locals (a store through the entry may alias the
 * store's own fields). false: nothing done, the general way (trace_store_append_general())
 * appends it. */
static inline __attribute__((always_inline)) bool
trace_store_append_steady(trace_store *st, const trace_rec_view *v, const void *src, size_t len,
                          uint64_t *seq)
{
    if (!store_steady_len(st, len)) {
        return false;
    }
    size_t count = st->count;
    unsigned char *ring = st->ring;
    size_t head = st->rhead, tail = st->rtail, rcap = st->rcap;
    bool wrapped = st->wrapped;
    store_msg *m = (store_msg *)(void *)(ring + head); /* the oldest message */
    size_t nhead = head + m->h.word;
    uint32_t cost = store_cost_small(len);
    uint64_t bytes = st->bytes - m->cost + cost;
    size_t size = store_msg_size(len);
    /* Room at the write end once the oldest is gone: up to the end, or (wrapped) up to the
     * next entry; the read end reaching the skipped rest of the ring is left to the general
     * way. */
    size_t room = (wrapped ? nhead : rcap) - tail;
    if (m->nrep != 0 || bytes > st->max_bytes || room < size || (wrapped && nhead == st->rend)) {
        return false;
    }
    trace_peer *old_peer = m->h.peer;
    trace_str *old_uri = m->uri;
    wamp_buf *old_wire = m->wire;
    uint64_t s = st->first_seq + count;
    uint32_t *slot = &st->idx[s & st->imask];
    uint64_t key = v->key;
    trace_peer_unref(&old_peer);
    trace_str_unref(&old_uri);
    wamp_buf_unref(&old_wire);
    st->rhead = nhead;
    *slot = (uint32_t)(tail >> 3);
    store_prefetch_next(ring, nhead, tail + size);
    store_put_steady(st, ring, tail, size, bytes, key, v, src, len, cost);
    *seq = s;
    return true;
}

/* trace_store_append_view() where trace_store_append_steady() declined the record: the general
 * append (trace_store.c). */
uint64_t trace_store_append_general(trace_store *st, const trace_rec_view *v);

#endif /* TRACE_STORE_INT_H */
