/* trace_store.c: one ring of entries written once, and an index of seqs into it.
 *
 * A held record is an entry in the ring (trace_store_int.h): a message entry (its peer and
 * correlation flags, then the message: clocks, type, URI, correlation, sizes, and the bytes it
 * keeps, inline after the header) or, for a fan-out's further receivers
 * (trace_store_append_repeats()), a 16-byte repeat entry (peer, flags, and where its message
 * entry is). Entries are appended at the ring's write end and released from its read end, in
 * seq order; a message's repeats only ever follow the newest message, so a message and its
 * repeats are consecutive entries, and the message entry stays (its bytes with it) until the
 * last of them is dropped. The read end is always the oldest held seq's message entry; hgone
 * counts how many of its seqs are gone. The entry of seq s is at offset 8 * idx[s & imask]
 * (a power-of-two index of at least `count` slots): locating a seq is O(1), and an eviction
 * reads the oldest entry's header only.
 *
 * Both arrays start small and grow (never per record): the index doubles up to the power of two
 * that holds `limit` seqs; the ring is rebuilt, when an entry fits neither after the write end
 * nor (the end's rest skipped) at the front before the read end, 2 to 4 times what it then holds
 * plus the new entry, its entries moved to the front in order and the index (and the repeats'
 * message offsets) moved along; and when the store is full for the first time, or its ring is
 * about to wrap, while over 1.5 times that, it is rebuilt at 1.25 times (a store that filled up
 * stops at that). An entry never wraps, so its bytes are one span. */
#include "trace_store.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "trace_store_int.h"

/* First index allocation (slots), unless a smaller power of two holds limit seqs. */
#define STORE_INDEX_INITIAL 64
/* First ring allocation (bytes). */
#define STORE_RING_INITIAL 4096
/* The largest ring whose offsets / 8 fit the index's 32 bits. */
#define STORE_RING_MAX \
    ((uint64_t)(UINT32_MAX >> 1) * 8) /* (a repeat's word keeps offset / 8 << 1) */
/* The largest cost a record can note. */
#define STORE_COST_MAX 0x7fffffffu

trace_store *trace_store_new(size_t limit, uint64_t max_bytes)
{
    if (limit == 0) {
        return NULL;
    }
    trace_store *st = calloc(1, sizeof(*st));
    if (!st) {
        return NULL;
    }
    st->limit = limit;
    /* Held to the bound (trace_store.h): the large sent messages a store references lie outside
     * its ring, and only the budget bounds them. */
    st->max_bytes = max_bytes < TRACE_STORE_HOLD_MAX ? max_bytes : TRACE_STORE_HOLD_MAX;
    return st;
}

static inline store_ent *ent_at(const trace_store *st, size_t off)
{
    return (store_ent *)(void *)(st->ring + off);
}

static inline store_msg *msg_at(const trace_store *st, size_t off)
{
    return (store_msg *)(void *)(st->ring + off);
}

/* The offset of held seq s's entry. */
static inline size_t seq_off(const trace_store *st, uint64_t s)
{
    return (size_t)st->idx[s & st->imask] << 3;
}

/* Releases a message's references (its bytes go with its entry). */
static void msg_release(store_msg *m)
{
    trace_str_unref(&m->uri);
    wamp_buf_unref(&m->wire);
}

/* A ring or index of this many bytes or more is given back to the system when it is freed. */
#define STORE_TRIM_MIN ((size_t)1 << 20)

/* After a ring or index of n bytes was freed. glibc keeps a large block freed in its heap once an
 * allocation that large has raised its (dynamic) mmap threshold: the process would keep the
 * largest ring it ever had, however small its traces' rings are now (a trace of everything under
 * the soak load, tests/bench/run_soak.sh: 52 MB held for rings of 13-30). So after a large one
 * the heap's free pages go back (malloc_trim(): at a ring's rebuild, when it grows or is fitted
 * at a wrap, and at the store's end; never per record). Here, not as a fixed mmap threshold for
 * the whole process (mallopt() in main()): that would also map and unmap every large message
 * buffer, whose reuse from the heap is what glibc's moving threshold is for. */
static void store_freed(size_t n)
{
#ifdef __GLIBC__
    if (n >= STORE_TRIM_MIN) {
        (void)malloc_trim(0);
    }
#else
    (void)n;
#endif
}

void trace_store_free(trace_store *st)
{
    if (!st) {
        return;
    }
    size_t bytes = st->rcap + (st->idx ? (st->imask + 1) * sizeof(*st->idx) : 0);
    for (size_t i = 0; i < st->count; i++) {
        uint64_t s = st->first_seq + i;
        store_ent *e = ent_at(st, seq_off(st, s));
        trace_peer_unref(&e->peer);
        /* Every message held once: the oldest (its own seq may be gone), then each one whose
         * own seq is held. */
        if (i == 0) {
            msg_release(msg_at(st, st->rhead));
        } else if (!store_ent_is_rep(e)) {
            msg_release((store_msg *)(void *)e);
        }
    }
    free(st->ring);
    free(st->idx);
    free(st);
    store_freed(bytes);
}

/* The ring's bytes from the read end to the write end (the skipped rest of the end excluded). */
static size_t ring_used(const trace_store *st)
{
    return st->wrapped ? st->rend - st->rhead + st->rtail : st->rtail - st->rhead;
}

/* Drops the oldest record: its peer, and with the last seq of its message that message (its
 * references, and its entries from the ring's read end). */
static __attribute__((noinline)) void drop_oldest(trace_store *st)
{
    size_t off = seq_off(st, st->first_seq);
    store_ent *e = ent_at(st, off);
    store_msg *m = msg_at(st, st->rhead); /* the oldest seq's message is the oldest message */
    trace_peer_unref(&e->peer);
    st->bytes -= m->cost;
    st->first_seq++;
    st->dropped++;
    if (--st->count == 0) {
        msg_release(m);
        st->mcount = 0;
        st->hgone = 0;
        st->rhead = st->rtail = 0;
        st->wrapped = false;
        st->key = 0;
        return;
    }
    if (st->hgone < m->nrep) {
        st->hgone++;
        return;
    }
    /* Its last seq: the read end moves past the message's last entry, e. */
    msg_release(m);
    st->mcount--;
    st->hgone = 0;
    size_t end = off + store_ent_size(e);
    if (st->wrapped && (off < st->rhead || end == st->rend)) {
        /* Past the wrap (e at the front), or at the skipped rest of the end. */
        st->wrapped = false;
        if (end == st->rend) {
            end = 0;
        }
    }
    st->rhead = end;
}

/* The oldest record's drop where it is a message without repeats that is not the last held and
 * whose entry ends before the skipped rest of the ring (the usual one); drop_oldest() otherwise.
 * Inline where every append of a full store calls it. */
static inline __attribute__((always_inline)) void evict(trace_store *st)
{
    store_msg *m = msg_at(st, st->rhead);
    size_t end = st->rhead + m->h.word;
    if (m->nrep != 0 || st->count == 1 || (st->wrapped && end == st->rend)) {
        drop_oldest(st);
        return;
    }
    trace_peer *peer = m->h.peer;
    trace_str *uri = m->uri;
    wamp_buf *wire = m->wire;
    st->bytes -= m->cost;
    st->rhead = end;
    st->count--;
    st->mcount--;
    st->first_seq++;
    st->dropped++;
    trace_peer_unref(&peer);
    trace_str_unref(&uri);
    wamp_buf_unref(&wire);
}

/* Where an entry of sz bytes fits in the ring as it is (its offset, the write end moved past
 * it), or SIZE_MAX. */
static size_t ring_place(trace_store *st, size_t sz)
{
    /* After the write end: up to the end, or (wrapped) up to the read end. */
    if ((st->wrapped ? st->rhead : st->rcap) - st->rtail >= sz) {
        size_t off = st->rtail;
        st->rtail += sz;
        return off;
    }
    /* At the front, before the read end (the rest of the end is skipped). */
    if (!st->wrapped && st->count && st->rhead >= sz) {
        st->rend = st->rtail;
        st->wrapped = true;
        st->rtail = sz;
        return 0;
    }
    return SIZE_MAX;
}

/* Rebuilds the ring at ncap bytes (at least what it holds): its live span moved to the front of
 * a new array, the index and the repeats' message offsets with it. false (nothing changed)
 * without memory. */
static bool ring_rebuild_to(trace_store *st, size_t ncap)
{
    size_t used = ring_used(st);
    unsigned char *nr = malloc(ncap + STORE_RING_SPARE);
    if (!nr) {
        return false;
    }
    /* The span from the read end (to the skipped rest, or to the write end), then the front's. */
    size_t a = (st->wrapped ? st->rend : st->rtail) - st->rhead;
    if (used) {
        memcpy(nr, st->ring + st->rhead, a);
        memcpy(nr + a, st->ring, used - a);
    }
    /* Offset o moves to o - rhead in the first span, o + a in the second. */
    size_t head = st->rhead;
    for (size_t i = 0; i < st->count; i++) {
        uint32_t *slot = &st->idx[(st->first_seq + i) & st->imask];
        size_t o = (size_t)*slot << 3;
        size_t no = o >= head ? o - head : o + a;
        *slot = (uint32_t)(no >> 3);
        store_ent *e = (store_ent *)(void *)(nr + no);
        if (store_ent_is_rep(e)) {
            size_t mo = store_rep_moff(e);
            e->word = store_rep_word(mo >= head ? mo - head : mo + a);
        }
    }
    if (st->count) {
        st->newest = st->newest >= head ? st->newest - head : st->newest + a;
    }
    free(st->ring);
    store_freed(st->rcap);
    st->ring = nr;
    st->rcap = ncap;
    st->rhead = 0;
    st->rtail = used;
    st->wrapped = false;
    return true;
}

/* Rebuilds the ring with room for an entry of sz more bytes, 2 to 4 times what it then holds
 * plus that entry (a power of two). */
static bool ring_rebuild(trace_store *st, size_t sz)
{
    size_t need = ring_used(st) + sz;
    size_t ncap = STORE_RING_INITIAL;
    while (ncap / 2 < need) {
        if (ncap > STORE_RING_MAX / 2) {
            return false;
        }
        ncap *= 2;
    }
    return ring_rebuild_to(st, ncap);
}

/* A ring over 1.5 times what it needs (what it holds and sz more bytes) is rebuilt at 1.25 times
 * that; without memory it stays as it is. */
static void ring_fit(trace_store *st, size_t sz)
{
    size_t need = ring_used(st) + sz;
    if (st->rcap > STORE_RING_INITIAL && st->rcap / 3 > need / 2) {
        size_t ncap =
                (need + need / 4 + STORE_RING_INITIAL - 1) & ~(size_t)(STORE_RING_INITIAL - 1);
        (void)ring_rebuild_to(st, ncap);
    }
}

/* After appends to a store that had dropped nothing (filling): when it is full for the first
 * time (at its limit, or its budget evicted), the ring, grown to 2 to 4 times what it held while
 * it filled, is fitted to what it holds now. It would be at its first wrap otherwise, and until
 * then every append writes pages of it that were never touched: the memory of a store that fills
 * and then takes little more (a flight recorder holding the joins of 10,000 idle sessions) would
 * stay at up to 4 times what it holds. */
static void fit_when_full(trace_store *st, bool filling)
{
    if (filling && (st->count == st->limit || st->dropped != 0)) {
        ring_fit(st, 0);
    }
}

/* Room in the ring for an entry of sz bytes: its offset. Rebuilds the ring when it does not fit
 * (or smaller, see the top of the file); without memory for that, drops the oldest records until
 * it fits, as long as more than keep are held; SIZE_MAX where it still does not. */
static size_t ring_reserve(trace_store *st, size_t sz, size_t keep)
{
    if (!st->wrapped && st->rcap - st->rtail < sz) {
        /* About to wrap around a ring grown by a burst of large messages: once a round at
         * most. */
        ring_fit(st, sz);
    }
    size_t off = ring_place(st, sz);
    while (off == SIZE_MAX) {
        if (!ring_rebuild(st, sz)) {
            if (st->count <= keep) {
                return SIZE_MAX;
            }
            drop_oldest(st);
        }
        off = ring_place(st, sz);
    }
    return off;
}

/* Doubles the index (up to the power of two that holds limit seqs), its held slots moved. */
static bool index_grow(trace_store *st)
{
    size_t icap = st->idx ? st->imask + 1 : 0;
    size_t ncap = icap ? icap * 2 : STORE_INDEX_INITIAL;
    while (ncap / 2 >= st->limit && ncap > 1) {
        ncap /= 2; /* (a small limit) */
    }
    if (ncap <= icap || ncap > SIZE_MAX / sizeof(uint32_t)) {
        return false;
    }
    uint32_t *nidx = malloc(ncap * sizeof(*nidx));
    if (!nidx) {
        return false;
    }
    for (size_t i = 0; i < st->count; i++) {
        uint64_t s = st->first_seq + i;
        nidx[s & (ncap - 1)] = st->idx[s & st->imask];
    }
    free(st->idx);
    store_freed(icap * sizeof(*st->idx));
    st->idx = nidx;
    st->imask = ncap - 1;
    return true;
}

/* A free index slot for one more seq, growing the index when it is full (count == imask + 1 <
 * limit); without memory, drops the oldest record as long as more than keep are held. */
static bool index_room(trace_store *st, size_t keep)
{
    if (st->idx && st->count <= st->imask) {
        return true;
    }
    if (index_grow(st)) {
        return true;
    }
    if (st->count <= keep) {
        return false;
    }
    drop_oldest(st);
    return true;
}

/* Evicts what appending a record of this cost needs (budget, limit, an index that cannot grow);
 * false if the record cannot be held: alone over the budget (everything older goes too: the
 * budget cannot hold it together with anything), or no index at all and no memory for one. */
static bool make_room_slow(trace_store *st, uint32_t cost)
{
    if (cost > st->max_bytes) {
        while (st->count) {
            drop_oldest(st);
        }
        return false;
    }
    while (st->count && st->bytes + cost > st->max_bytes) {
        drop_oldest(st);
    }
    if (st->count == st->limit) {
        drop_oldest(st);
    }
    return index_room(st, 0);
}

/* Inline: a store that keeps what it can hold is usually full, and each append evicts the
 * oldest record (which evictions come first changes nothing: they are the oldest records, as
 * many as both bounds need). */
static inline bool make_room(trace_store *st, uint32_t cost)
{
    if (st->count == st->limit) {
        evict(st);
    }
    if (st->count <= st->imask && st->idx && st->bytes + cost <= st->max_bytes) {
        return true;
    }
    return make_room_slow(st, cost);
}

/* The next seq, given to a record that is dropped at once (counted); nothing is held then. */
static uint64_t drop_new(trace_store *st)
{
    uint64_t seq = st->first_seq + st->count;
    st->first_seq++;
    st->dropped++;
    st->key = 0;
    return seq;
}

static uint32_t cost_of(size_t len)
{
    size_t full = len + TRACE_RECORD_OVERHEAD;
    return full > STORE_COST_MAX ? STORE_COST_MAX : (uint32_t)full;
}

/* Appends the record of v's parts. take: v's peer, uri and wire are references that move into
 * the entry (a wire kept as it is, whatever its size), else the entry takes references of its
 * own (a wire up to TRACE_STORE_COPY_MAX copied into the entry). Either way v->bytes are
 * copied. false (nothing appended, nothing taken) when it cannot be held. */
static inline __attribute__((always_inline)) bool
append_parts(trace_store *st, const trace_rec_view *v, bool take, uint64_t *seq)
{
    /* What the record keeps: a copy of the bytes, or a reference on a buffer, or nothing. */
    size_t len;
    const void *src = trace_rec_view_data(v, &len);
    const wamp_buf *wire = v->wire && (take || len > TRACE_STORE_COPY_MAX) ? v->wire : NULL;
    src = len && !wire ? src : NULL;
    uint32_t cost = cost_of(src || wire ? len : 0);
    size_t kept = src ? len : 0;
    size_t size = store_msg_size(kept);
    bool filling = st->dropped == 0;
    if (!make_room(st, cost)) {
        *seq = drop_new(st);
        return false;
    }
    /* Usually it fits after the ring's write end as it is. */
    size_t off = st->rtail;
    if ((st->wrapped ? st->rhead : st->rcap) - off >= size) {
        st->rtail = off + size;
    } else if ((off = ring_reserve(st, size, 0)) == SIZE_MAX) {
        /* (Without memory for its entry even with nothing else held.) */
        *seq = drop_new(st);
        return false;
    }
    store_msg *m = msg_at(st, off);
    store_msg_fill(m, v, size, take || !v->peer ? v->peer : trace_peer_ref(v->peer),
                   take || !v->uri ? v->uri : trace_str_ref(v->uri),
                   take || !wire ? (wamp_buf *)(uintptr_t)wire
                                 : wamp_buf_ref((wamp_buf *)(uintptr_t)wire),
                   (uint32_t)kept, cost);
    if (!src && !wire) {
        m->h.wire_ser = 0; /* (no bytes kept) */
    }
    if (src) {
        copy_small((unsigned char *)(m + 1), src, len);
    }
    uint64_t s = st->first_seq + st->count;
    st->idx[s & st->imask] = (uint32_t)(off >> 3);
    st->count++;
    st->mcount++;
    st->bytes += cost;
    st->newest = off;
    st->key = v->key;
    *seq = s;
    fit_when_full(st, filling);
    return true;
}

uint64_t trace_store_append_take(trace_store *st, trace_record *rec)
{
    trace_rec_view v;
    trace_rec_view_of(rec, &v);
    uint64_t seq;
    if (!append_parts(st, &v, true, &seq)) {
        trace_record_fini(rec);
        return seq;
    }
    /* Its references moved into the entry (the rest of *rec may stay). */
    rec->seq = seq;
    rec->peer = NULL;
    rec->uri = NULL;
    rec->wire = NULL;
    rec->bytes = NULL;
    return seq;
}

/* trace_store_append_steady()'s counterpart where the oldest record is one of a fan-out's seqs:
 * the store full at its limit, a small message, copied, that fits at the write end once the
 * oldest is gone (without wrapping), the budget holding it in place of the oldest. The eviction
 * drops the oldest seq's peer, and when that seq is its message's last, the message (its
 * references, and its entries from the read end, unless that crosses the wrap: the general way
 * then). false: nothing done. */
static __attribute__((noinline)) bool append_steady_grouped(trace_store *st,
                                                            const trace_rec_view *v,
                                                            const void *src, size_t len,
                                                            uint64_t *seq)
{
    if (!store_steady_len(st, len)) {
        return false;
    }
    size_t count = st->count;
    unsigned char *ring = st->ring;
    size_t head = st->rhead, tail = st->rtail, hgone = st->hgone;
    store_msg *m = (store_msg *)(void *)(ring + head); /* the oldest message */
    if (m->nrep == 0) {
        return false; /* (a message alone: trace_store_append_steady() declined it) */
    }
    uint64_t f = st->first_seq;
    uint32_t *idx = st->idx;
    size_t mask = st->imask;
    size_t off = (size_t)idx[f & mask] << 3; /* the oldest seq's entry */
    const store_ent *e = ent_at(st, off);
    bool last = hgone == m->nrep;
    size_t nhead = head;
    if (last) {
        /* The read end moves past the message's last entry, e (a repeat: nrep > 0). */
        nhead = off + sizeof(store_ent);
        if (st->wrapped && (off < head || nhead == st->rend)) {
            return false;
        }
    }
    uint32_t cost = store_cost_small(len);
    uint64_t bytes = st->bytes - m->cost + cost;
    size_t size = store_msg_size(len);
    if (bytes > st->max_bytes || (st->wrapped ? nhead : st->rcap) - tail < size) {
        return false;
    }
    trace_peer *old = e->peer;
    /* The next evictions read on from here, the seqs after this one (a ring larger than the cache,
     * as a trace of everything in memory holds, misses each otherwise). */
    store_prefetch_lines(ring, off + 64, 1);
    uint64_t key = v->key;
    /* (The oldest's slot is read before the new seq's is written: the same one when the index
     * holds exactly count slots.) */
    idx[(f + count) & mask] = (uint32_t)(tail >> 3);
    trace_peer_unref(&old);
    if (last) {
        msg_release(m); /* (one message out, one in: mcount stays) */
        st->rhead = nhead;
        hgone = 0;
    } else {
        hgone++;
        st->mcount++;
    }
    st->hgone = hgone;
    store_put_steady(st, ring, tail, size, bytes, key, v, src, len, cost);
    *seq = f + count;
    return true;
}

/* trace_store_append_general() where append_steady_grouped() declined the record. */
static __attribute__((noinline)) uint64_t append_general_parts(trace_store *st,
                                                               const trace_rec_view *v)
{
    uint64_t seq;
    (void)append_parts(st, v, false, &seq);
    return seq;
}

/* A dispatcher of its own (each way out of line), so that the usual fan-out case pays for no
 * more registers than it uses. */
uint64_t trace_store_append_general(trace_store *st, const trace_rec_view *v)
{
    uint64_t seq;
    size_t len;
    const void *src = trace_rec_view_data(v, &len);
    return append_steady_grouped(st, v, src, len, &seq) ? seq : append_general_parts(st, v);
}

uint64_t trace_store_append_view(trace_store *st, const trace_rec_view *v)
{
    uint64_t seq;
    size_t len;
    const void *src = trace_rec_view_data(v, &len);
    return trace_store_append_steady(st, v, src, len, &seq) ? seq
                                                            : trace_store_append_general(st, v);
}

/* Drops the oldest record to make room for a repeat, unless it is the last one held (its message
 * is the one repeated, which goes with its last seq): false then. */
static bool evict_for_repeat(trace_store *st)
{
    if (st->count == 1) {
        return false;
    }
    evict(st);
    return true;
}

/* Appends one repeat of the newest message (its cost given) for peer (a reference that moves in)
 * with flags, after the evictions an append of a record of this cost needs (make_room(): a full
 * store's oldest first, then the budget's, then an index or ring without memory's), as long as
 * the message repeated stays held; false (nothing taken) where it would not. */
static inline __attribute__((always_inline)) bool append_repeat(trace_store *st, uint32_t cost,
                                                                trace_peer *peer, uint8_t flags)
{
    if (st->count == st->limit && !evict_for_repeat(st)) {
        return false;
    }
    while (st->bytes + cost > st->max_bytes) {
        if (!evict_for_repeat(st)) {
            return false;
        }
    }
    if (st->count > st->imask && !index_room(st, 1)) {
        return false;
    }
    size_t off;
    size_t room = (st->wrapped ? st->rhead : st->rcap) - st->rtail;
    if (room >= sizeof(store_ent)) {
        off = st->rtail;
        st->rtail = off + sizeof(store_ent);
    } else if ((off = ring_reserve(st, sizeof(store_ent), 1)) == SIZE_MAX) {
        return false;
    }
    size_t moff = st->newest; /* (after any rebuild) */
    store_ent *e = ent_at(st, off);
    *e = (store_ent){.word = store_rep_word(moff), .flags = flags, .peer = peer};
    msg_at(st, moff)->nrep++;
    uint64_t s = st->first_seq + st->count;
    st->idx[s & st->imask] = (uint32_t)(off >> 3);
    st->count++;
    st->bytes += cost;
    return true;
}

/* The oldest message's last seq, whose entry is at off, is gone: releases the message and moves
 * the read end past that entry. */
static void oldest_msg_gone(trace_store *st, size_t off)
{
    store_msg *m = msg_at(st, st->rhead);
    const store_ent *last = ent_at(st, off);
    size_t end = off + store_ent_size(last);
    if (st->wrapped && (off < st->rhead || end == st->rend)) {
        st->wrapped = false;
        if (end == st->rend) {
            end = 0;
        }
    }
    msg_release(m);
    st->mcount--;
    st->hgone = 0;
    st->rhead = end;
}

/* The steady state of trace_store_append_repeats(), in a store full at its limit: while its
 * budget holds the repeat in place of the oldest record and the ring has room for it at its
 * write end, each repeat evicts the oldest record. It goes by the oldest message: the seqs of
 * one message evicted in a row change the byte count by the same amount each, so how many the
 * budget allows is one division, and the message's release (when its last seq goes) and the
 * read end's move happen once per message, not per receiver; what is left per receiver is its
 * evicted peer, its entry and its index slot. Stops at the message repeated itself (a store that
 * holds nothing else). The repeats (of the message at moff) get flags, the n-th last_flags.
 * Returns how many of peers[0..n) it appended; the caller appends the rest the general way. */
static size_t replace_oldest(trace_store *st, size_t moff, uint32_t cost, trace_peer *const *peers,
                             size_t n, uint8_t flags, uint8_t last_flags)
{
    unsigned char *const ring = st->ring;
    uint32_t *const idx = st->idx;
    const size_t mask = st->imask, count = st->count;
    uint64_t first = st->first_seq;
    size_t tail = st->rtail, k = 0;
    /* Every repeat entry's first 8 bytes are the same: written from this one. */
    const store_ent rep = {.word = store_rep_word(moff), .flags = flags};
    while (k < n && st->rhead != moff) {
        size_t head = st->rhead;
        const store_msg *om = msg_at(st, head);
        size_t left = (size_t)om->nrep + 1 - st->hgone; /* om's seqs still held */
        size_t run = n - k < left ? n - k : left;
        if (cost > om->cost) {
            /* Within the budget as long as it does not grow past it (bytes <= max_bytes holds
             * between appends). */
            uint64_t fit = (st->max_bytes - st->bytes) / (cost - om->cost);
            run = fit < run ? (size_t)fit : run;
        }
        size_t room = ((st->wrapped ? head : st->rcap) - tail) / sizeof(store_ent);
        run = room < run ? room : run;
        if (run == 0) {
            break;
        }
        st->bytes = st->bytes - (uint64_t)run * om->cost + (uint64_t)run * cost;
        size_t off = 0;
        store_ent *e = (store_ent *)(void *)(ring + tail);
        for (size_t i = 0; i < run; i++) {
            /* The evicted seq's slot is read before the new seq's is written (the same one when
             * the index holds exactly count slots). */
            off = (size_t)idx[(first + i) & mask] << 3;
            trace_peer *old = ent_at(st, off)->peer;
            memcpy(&e[i], &rep, offsetof(store_ent, peer));
            e[i].peer = peers[k + i];
            idx[(first + count + i) & mask] = (uint32_t)((tail >> 3) + 2 * i);
            trace_peer_unref(&old);
        }
        tail += run * sizeof(store_ent);
        first += run;
        k += run;
        if (run < left) {
            st->hgone += run;
            break; /* (n reached, or the budget or the ring stops it: the general way goes on) */
        }
        oldest_msg_gone(st, off);
    }
    /* The entries the next evictions read: the oldest seq's on (in a ring larger than the
     * cache, as a trace of everything in memory holds, each is a miss otherwise). */
    store_prefetch_lines(ring, (size_t)idx[first & mask] << 3, 3);
    if (k == n) {
        /* The n-th is the newest record, written last. */
        ((store_ent *)(void *)(ring + tail - sizeof(store_ent)))->flags = last_flags;
    }
    msg_at(st, moff)->nrep += (uint32_t)k;
    st->rtail = tail;
    st->first_seq = first;
    st->dropped += k;
    return k;
}

/* trace_store_append_repeats() from peers[k] on, one by one (append_repeat()). */
static __attribute__((noinline)) size_t append_repeats_slow(trace_store *st, uint32_t cost,
                                                            trace_peer *const *peers, size_t k,
                                                            size_t n, uint8_t flags,
                                                            uint8_t last_flags)
{
    bool filling = st->dropped == 0;
    for (; k < n; k++) {
        if (!append_repeat(st, cost, peers[k], k == n - 1 ? last_flags : flags)) {
            break;
        }
    }
    fit_when_full(st, filling);
    return k;
}

size_t trace_store_append_repeats(trace_store *st, uint64_t key, const trace_str *uri,
                                  uint64_t pc_ns, trace_peer *const *peers, size_t n, uint8_t flags,
                                  uint8_t last_flags)
{
    if (st->count == 0 || n == 0 || key == 0 || st->key != key) {
        return 0;
    }
    const store_msg *nm = msg_at(st, st->newest);
    if (nm->uri != uri || nm->pc_ns != pc_ns) {
        return 0;
    }
    uint32_t cost = nm->cost;
    size_t k = 0;
    if (st->count == st->limit && st->count >= 2) {
        k = replace_oldest(st, st->newest, cost, peers, n, flags, last_flags);
        if (k == n) {
            return n;
        }
    }
    return append_repeats_slow(st, cost, peers, k, n, flags, last_flags);
}

uint64_t trace_store_skip_n(trace_store *st, uint64_t n)
{
    while (st->count) {
        drop_oldest(st);
    }
    uint64_t seq = st->first_seq;
    st->first_seq += n;
    return seq;
}

uint64_t trace_store_skip(trace_store *st)
{
    return trace_store_skip_n(st, 1);
}

void trace_store_start_at(trace_store *st, uint64_t seq)
{
    if (st->count == 0 && st->first_seq == 0 && st->dropped == 0) {
        st->first_seq = seq;
    }
}

const trace_record *trace_store_get(const trace_store *st, uint64_t seq, trace_record *out)
{
    if (seq < st->first_seq || seq - st->first_seq >= st->count) {
        return NULL;
    }
    const store_ent *e = ent_at(st, seq_off(st, seq));
    const store_msg *m = store_ent_is_rep(e) ? msg_at(st, store_rep_moff(e))
                                             : (const store_msg *)(const void *)e;
    out->seq = seq;
    out->pc_ns = m->pc_ns;
    out->ts_ns = m->ts_ns;
    out->peer = e->peer;
    out->uri = m->uri;
    out->wire = m->wire;
    out->bytes = m->len ? (const unsigned char *)(m + 1) : NULL;
    out->dropped = m->dropped;
    memcpy(out->ser_bytes, m->ser_bytes, sizeof(out->ser_bytes));
    out->len = m->len;
    memcpy(out->corr, m->corr, TRACE_UUID_LEN);
    out->dir = m->h.dir;
    out->msg_type = m->h.msg_type;
    out->wire_ser = m->h.wire_ser;
    out->flags = e->flags;
    return out;
}

bool trace_store_range(const trace_store *st, uint64_t from_seq, uint64_t to_seq, size_t limit,
                       uint64_t *first, uint64_t *count)
{
    uint64_t next = st->first_seq + st->count;
    uint64_t lo = from_seq < st->first_seq ? st->first_seq : from_seq;
    uint64_t hi = to_seq >= next ? next : to_seq + 1; /* exclusive */
    *first = lo;
    *count = 0;
    if (lo >= hi || limit == 0) {
        return false;
    }
    *count = hi - lo < limit ? hi - lo : limit;
    return true;
}

uint64_t trace_store_first_seq(const trace_store *st)
{
    return st->first_seq;
}

uint64_t trace_store_next_seq(const trace_store *st)
{
    return st->first_seq + st->count;
}

size_t trace_store_records(const trace_store *st)
{
    return st->count;
}

size_t trace_store_messages(const trace_store *st)
{
    return st->mcount;
}

uint64_t trace_store_dropped(const trace_store *st)
{
    return st->dropped;
}

uint64_t trace_store_bytes(const trace_store *st)
{
    return st->bytes;
}

size_t trace_store_alloc_bytes(const trace_store *st)
{
    return (st->ring ? st->rcap + STORE_RING_SPARE : 0) +
           (st->idx ? (st->imask + 1) * sizeof(uint32_t) : 0);
}

size_t trace_store_limit(const trace_store *st)
{
    return st->limit;
}

uint64_t trace_store_max_bytes(const trace_store *st)
{
    return st->max_bytes;
}
