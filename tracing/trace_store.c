/* trace_store.c: a ring buffer of records; slot of seq s is (head + (s - first_seq)) % cap.
 * The capture path (append, evict) wraps indexes with a compare instead of `%` (a division),
 * and releases evicted records without zeroing slots it overwrites next.
 *
 * The bytes records keep (trace_record.bytes: received messages, sent ones up to
 * TRACE_STORE_COPY_MAX, a message without its payload) live in a second ring, of bytes: each
 * append copies them at its write end, each eviction advances its read end past the oldest
 * record's copy (records and their copies are both first in, first out). A copy never wraps:
 * one that does not fit before the end starts at the front, and the end's unused rest is
 * skipped (`bend`). When neither place fits, the ring is rebuilt, 2 to 4 times what it then
 * holds plus the new copy (which then fits after the held ones), its records' pointers moved
 * along; and when it is about to wrap while 8 times larger than that, it is rebuilt smaller. */
#include "trace_store.h"

#include <stdlib.h>
#include <string.h>

/* First ring allocation (entries), unless limit is smaller. */
#define STORE_INITIAL_CAP 64
/* The largest cost a record can note (trace_record.cost has 31 bits). */
#define STORE_COST_MAX 0x7fffffffu

struct trace_store {
    trace_record *ring; /* cap slots; the count held start at head */
    size_t cap;
    size_t head;
    size_t count;
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
    /* The key of the newest record's message (trace_rec_view.key; 0: none): a fan-out's repeats
     * of that message borrow it (trace_store_append_repeats()). */
    uint64_t key;
};

/* First byte ring allocation. */
#define STORE_BYTES_INITIAL 4096

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
    st->max_bytes = max_bytes;
    return st;
}

/* Releases the references a held record owns: its peer always, its uri and wire unless it
 * borrows them (from the record before it, released first, oldest first). */
static void release_held(trace_record *r)
{
    if (r->borrows) {
        trace_peer_unref(&r->peer);
        r->uri = NULL;
        r->wire = NULL;
        return;
    }
    trace_record_release(r);
}

void trace_store_free(trace_store *st)
{
    if (!st) {
        return;
    }
    for (size_t i = 0; i < st->count; i++) {
        release_held(&st->ring[(st->head + i) % st->cap]);
    }
    free(st->ring);
    free(st->bring);
    free(st);
}

/* Frees the byte ring's copy of the oldest held record r (the oldest copy). */
static void bytes_release(trace_store *st, const trace_record *r)
{
    st->bused -= r->len;
    if (st->bused == 0) {
        st->bhead = st->btail = 0;
        st->bwrapped = false;
        return;
    }
    st->bhead = (size_t)(r->bytes - st->bring) + r->len;
    if (st->bwrapped && st->bhead == st->bend) {
        st->bhead = 0; /* the copies before the end are gone: the rest starts at the front */
        st->bwrapped = false;
    }
}

/* Where a copy of len bytes fits in the byte ring as it is (its offset), or SIZE_MAX. */
static size_t bytes_place(trace_store *st, size_t len)
{
    /* After the tail: up to the end, or (wrapped) up to the head. */
    if ((st->bwrapped ? st->bhead : st->bcap) - st->btail >= len) {
        size_t off = st->btail;
        st->btail += len;
        return off;
    }
    /* At the front, before the head (the rest of the end is skipped). */
    if (!st->bwrapped && st->bhead >= len && st->bused) {
        st->bend = st->btail;
        st->bwrapped = true;
        st->btail = len;
        return 0;
    }
    return SIZE_MAX;
}

/* Rebuilds the byte ring with room for a copy of len more bytes (see the top of the file), 2 to
 * 4 times what it then holds (so smaller, when it held much more before): the held copies
 * moved to the front of a new array, oldest first, their records' pointers with them. false
 * (nothing changed) without memory. */
static bool bytes_rebuild(trace_store *st, size_t len)
{
    size_t ncap = STORE_BYTES_INITIAL;
    while (ncap / 2 < st->bused + len) {
        if (ncap > SIZE_MAX / 2) {
            return false;
        }
        ncap *= 2;
    }
    unsigned char *nb = malloc(ncap);
    if (!nb) {
        return false;
    }
    size_t off = 0;
    const unsigned char *moved = NULL; /* the new place of the previous record's bytes */
    for (size_t i = 0; i < st->count; i++) {
        trace_record *r = &st->ring[(st->head + i) % st->cap];
        if (r->bytes && r->borrows) {
            r->bytes = moved; /* a repeat: the copy of the record before it */
        } else if (r->bytes) {
            memcpy(nb + off, r->bytes, r->len);
            r->bytes = moved = nb + off;
            off += r->len;
        }
    }
    free(st->bring);
    st->bring = nb;
    st->bcap = ncap;
    st->bhead = 0;
    st->btail = off;
    st->bwrapped = false;
    return true;
}

/* i + n wrapped into the ring (i < cap, n <= cap). */
static size_t wrap(const trace_store *st, size_t i, size_t n)
{
    size_t j = i + n;
    return j >= st->cap ? j - st->cap : j;
}

/* Prefetch distance, in records ahead of the oldest (see prefetch_evictions()). */
#define PREFETCH_SLOTS 24

static void drop_oldest(trace_store *st)
{
    trace_record *r = &st->ring[st->head];
    st->bytes -= r->cost;
    size_t next = wrap(st, st->head, 1);
    /* The oldest record never borrows. Its references are dropped in place (the slot is dead:
     * overwritten by a later append), unless the next record borrows its uri, wire and bytes:
     * that one owns them from now on. */
    trace_peer_unref(&r->peer);
    if (st->count > 1 && st->ring[next].borrows) {
        st->ring[next].borrows = 0;
    } else {
        if (r->bytes) {
            bytes_release(st, r);
        }
        trace_str_unref(&r->uri);
        wamp_buf_unref(&r->wire);
    }
    st->head = next;
    st->count--;
    st->first_seq++;
    st->dropped++;
    if (st->count == 0) {
        st->key = 0;
    }
}

/* Doubles the ring (up to limit), moving the held records to the front of the new array. */
static bool grow(trace_store *st)
{
    size_t ncap = st->cap ? st->cap * 2 : STORE_INITIAL_CAP;
    if (ncap > st->limit || ncap < st->cap) {
        ncap = st->limit;
    }
    trace_record *ring = malloc(ncap * sizeof(*ring));
    if (!ring) {
        return false;
    }
    if (st->count) {
        size_t tail = st->cap - st->head; /* slots from head to the end of the old array */
        size_t n1 = st->count < tail ? st->count : tail;
        memcpy(ring, st->ring + st->head, n1 * sizeof(*ring));
        memcpy(ring + n1, st->ring, (st->count - n1) * sizeof(*ring));
    }
    free(st->ring);
    st->ring = ring;
    st->cap = ncap;
    st->head = 0;
    return true;
}

/* copy_bytes() when the copy does not fit after the tail. */
static const unsigned char *copy_bytes_slow(trace_store *st, const void *src, size_t len)
{
    if (!st->bwrapped && st->bcap - st->btail < len && st->bcap > STORE_BYTES_INITIAL &&
        st->bcap / 8 > st->bused + len) {
        /* About to wrap around a ring far larger than what it holds (a burst of large messages
         * grew it): rebuilt smaller, once a round at most. Without memory it stays as it is. */
        (void)bytes_rebuild(st, len);
    }
    size_t off = bytes_place(st, len);
    while (off == SIZE_MAX) {
        if (!bytes_rebuild(st, len)) {
            if (st->count == 0) {
                return NULL;
            }
            drop_oldest(st);
        }
        off = bytes_place(st, len);
    }
    memcpy(st->bring + off, src, len);
    st->bused += len;
    return st->bring + off;
}

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

/* Copies len (> 0) bytes from src into the byte ring; returns the copy. Without memory to
 * rebuild the ring, drops the oldest records until the copy fits; NULL if nothing is left to
 * drop and it still does not. Inline: the usual copy goes right after the tail. */
static inline const unsigned char *copy_bytes(trace_store *st, const void *src, size_t len)
{
    size_t end = st->bwrapped ? st->bhead : st->bcap;
    if (end - st->btail < len) {
        return copy_bytes_slow(st, src, len);
    }
    unsigned char *d = st->bring + st->btail;
    st->btail += len;
    copy_small(d, src, len);
    st->bused += len;
    return d;
}

/* A store that evicts keeps evicting: each append releases the oldest record, whose slot was
 * last touched a whole ring ago and is out of cache. Requesting it a few appends early overlaps
 * that miss with the work between appends. (What the slot points to is warm: the peer is per
 * session, the URI the hub's interned one, the bytes in the byte ring are not read; a large sent
 * message's buffer, the one cold object, is rare since small ones are copied.) A prefetch never
 * faults. Inline, not a function of its own: GCC deems a function of nothing but prefetches pure
 * and deletes the call. */
static inline __attribute__((always_inline)) void prefetch_evictions(const trace_store *st)
{
    if (st->dropped && st->count > PREFETCH_SLOTS) {
        /* Both cache lines of the slot: a 96-byte slot straddles two every other time. */
        const char *slot = (const char *)&st->ring[wrap(st, st->head, PREFETCH_SLOTS)];
        __builtin_prefetch(slot, 0, 3);
        __builtin_prefetch(slot + sizeof(trace_record) - 1, 0, 3);
    }
}

/* Evicts what appending a record of this cost needs (budget, limit, a ring that cannot grow);
 * false if the record cannot be held: alone over the budget (everything older goes too: the
 * budget cannot hold it together with anything), or no ring at all and no memory for one. */
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
    if (st->count == st->cap && (st->cap == st->limit || !grow(st))) {
        if (st->count == 0) {
            return false;
        }
        drop_oldest(st);
    }
    return true;
}

/* Inline: a store that keeps what it can hold is usually full, and each append evicts the
 * oldest record (which evictions come first changes nothing: they are the oldest records, as
 * many as both bounds need). */
static inline bool make_room(trace_store *st, uint32_t cost)
{
    if (st->count == st->cap && st->count == st->limit) {
        drop_oldest(st);
    }
    if (st->count < st->cap && st->bytes + cost <= st->max_bytes) {
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

uint64_t trace_store_append_take(trace_store *st, trace_record *rec)
{
    size_t len;
    (void)trace_record_data(rec, &len);
    uint32_t cost = cost_of(len);
    prefetch_evictions(st);
    const void *src = rec->wire ? NULL : rec->bytes;
    const unsigned char *copy = NULL;
    if (!make_room(st, cost) || (src && !(copy = copy_bytes(st, src, rec->len)))) {
        /* (Without memory for its bytes even with nothing else held.) */
        trace_record_fini(rec);
        return drop_new(st);
    }
    uint64_t seq = st->first_seq + st->count;
    rec->seq = seq;
    rec->cost = cost & STORE_COST_MAX; /* no-op: says the bit-field holds it */
    rec->borrows = 0;
    rec->bytes = copy ? copy : rec->bytes;
    st->ring[wrap(st, st->head, st->count)] = *rec;
    /* Its references and bytes moved into the slot (the rest of *rec may stay). */
    rec->peer = NULL;
    rec->uri = NULL;
    rec->wire = NULL;
    rec->bytes = NULL;
    st->key = 0;
    st->count++;
    st->bytes += cost;
    return seq;
}

uint64_t trace_store_append_view(trace_store *st, const trace_rec_view *v)
{
    /* What the record keeps: a copy of the bytes (received, or a small sent message), or a
     * reference on a large sent message's buffer, or nothing. */
    size_t len;
    const void *src = trace_rec_view_data(v, &len);
    const wamp_buf *wire = v->wire && len > TRACE_STORE_COPY_MAX ? v->wire : NULL;
    src = len && !wire ? src : NULL;
    uint32_t cost = cost_of(src || wire ? len : 0);
    prefetch_evictions(st);
    const unsigned char *copy = NULL;
    if (!make_room(st, cost) || (src && !(copy = copy_bytes(st, src, len)))) {
        return drop_new(st);
    }
    uint64_t seq = st->first_seq + st->count;
    trace_record *r = &st->ring[wrap(st, st->head, st->count)];
    r->seq = seq;
    r->pc_ns = v->pc_ns;
    r->ts_ns = v->ts_ns;
    r->peer = v->peer ? trace_peer_ref(v->peer) : NULL;
    r->uri = v->uri ? trace_str_ref(v->uri) : NULL;
    r->wire = wire ? wamp_buf_ref((wamp_buf *)(uintptr_t)wire) : NULL;
    r->bytes = copy;
    r->dropped = v->dropped;
    memcpy(r->ser_bytes, v->ser_bytes, sizeof(r->ser_bytes));
    r->len = copy ? (uint32_t)len : 0;
    r->cost = cost & STORE_COST_MAX;
    r->borrows = 0;
    if (v->flags & TRACE_CORR_HAS) {
        memcpy(r->corr, v->corr, TRACE_UUID_LEN);
    } else {
        memset(r->corr, 0, TRACE_UUID_LEN);
    }
    r->dir = v->dir;
    r->msg_type = v->msg_type;
    r->wire_ser = copy || wire ? v->wire_ser : 0;
    r->flags = v->flags;
    st->key = v->key;
    st->count++;
    st->bytes += cost;
    return seq;
}

/* Drops the oldest record to make room for a repeat, unless it is the last one held (the
 * repeat's template, which the repeat could not borrow from any more): false then. */
static bool evict_for_repeat(trace_store *st)
{
    if (st->count == 1) {
        return false;
    }
    drop_oldest(st);
    return true;
}

size_t trace_store_append_repeats(trace_store *st, uint64_t key, const trace_str *uri,
                                  uint64_t pc_ns, trace_peer *const *peers, size_t n, uint8_t flags,
                                  uint8_t last_flags)
{
    if (st->count == 0 || n == 0 || key == 0 || st->key != key) {
        return 0;
    }
    const trace_record *newest = &st->ring[wrap(st, st->head, st->count - 1)];
    if (newest->uri != uri || newest->pc_ns != pc_ns) {
        return 0;
    }
    trace_record r = *newest;
    r.flags = flags;
    r.borrows = 1;
    size_t k = 0;
    for (; k < n; k++) {
        /* The same evictions as trace_store_append_take() of a record of the same cost (the
         * usual one first: a full ring's oldest), as long as the newest record (the one to borrow
         * from) stays held. */
        if (st->count == st->limit && !evict_for_repeat(st)) {
            return k;
        }
        while (st->bytes + r.cost > st->max_bytes) {
            if (!evict_for_repeat(st)) {
                return k;
            }
        }
        if (st->count == st->cap && (st->cap == st->limit || !grow(st)) && !evict_for_repeat(st)) {
            return k;
        }
        r.seq = st->first_seq + st->count;
        r.peer = trace_peer_ref(peers[k]);
        if (k == n - 1) {
            r.flags = last_flags;
        }
        /* memcpy: a struct assignment with bit-fields was copied field by field. */
        memcpy(&st->ring[wrap(st, st->head, st->count)], &r, sizeof(r));
        st->count++;
        st->bytes += r.cost;
    }
    return k;
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

const trace_record *trace_store_get(const trace_store *st, uint64_t seq)
{
    if (seq < st->first_seq || seq - st->first_seq >= st->count) {
        return NULL;
    }
    return &st->ring[(st->head + (size_t)(seq - st->first_seq)) % st->cap];
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
    return st->cap * sizeof(trace_record) + st->bcap;
}

size_t trace_store_limit(const trace_store *st)
{
    return st->limit;
}

uint64_t trace_store_max_bytes(const trace_store *st)
{
    return st->max_bytes;
}
