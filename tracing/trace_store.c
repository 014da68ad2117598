/* trace_store.c: a ring buffer of records; slot of seq s is (head + (s - first_seq)) % cap.
 * The capture path (append, evict) wraps indexes with a compare instead of `%` (a division),
 * and releases evicted records without zeroing slots it overwrites next.
 *
 * The bytes of received messages (trace_record.bytes) live in a second ring, of bytes: each
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
     * around from 0 when wrapped; bused bytes in nlive copies. */
    unsigned char *bring;
    size_t bcap;
    size_t bhead;
    size_t btail;
    size_t bend;
    size_t bused;
    size_t nlive;
    bool bwrapped;
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
    if (--st->nlive == 0) {
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
    if (!st->bwrapped && st->bhead >= len && st->nlive) {
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
    for (size_t i = 0; i < st->count; i++) {
        trace_record *r = &st->ring[(st->head + i) % st->cap];
        if (r->bytes) {
            memcpy(nb + off, r->bytes, r->len);
            r->bytes = nb + off;
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

/* Prefetch distances, in records ahead of the oldest (see trace_store_append_take()). */
#define PREFETCH_OBJECTS 8
#define PREFETCH_SLOTS   24

static void drop_oldest(trace_store *st)
{
    trace_record *r = &st->ring[st->head];
    st->bytes -= r->cost;
    if (r->bytes) {
        bytes_release(st, r);
    }
    size_t next = wrap(st, st->head, 1);
    /* The oldest record never borrows. Its references are dropped in place (the slot is dead:
     * overwritten by a later append), unless the next record borrows its uri and wire: that
     * one owns them from now on. */
    trace_peer_unref(&r->peer);
    if (st->count > 1 && st->ring[next].borrows) {
        st->ring[next].borrows = 0;
    } else {
        trace_str_unref(&r->uri);
        wamp_buf_unref(&r->wire);
    }
    st->head = next;
    st->count--;
    st->first_seq++;
    st->dropped++;
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

/* Copies rec's borrowed bytes into the byte ring and points rec at the copy. Without memory
 * to rebuild the ring, drops the oldest records until the copy fits; false if nothing is left
 * to drop and it still does not. */
static bool copy_bytes(trace_store *st, trace_record *rec)
{
    if (!st->bwrapped && st->bcap - st->btail < rec->len && st->bcap > STORE_BYTES_INITIAL &&
        st->bcap / 8 > st->bused + rec->len) {
        /* About to wrap around a ring far larger than what it holds (a burst of large messages
         * grew it): rebuilt smaller, once a round at most. Without memory it stays as it is. */
        (void)bytes_rebuild(st, rec->len);
    }
    size_t off = bytes_place(st, rec->len);
    while (off == SIZE_MAX) {
        if (!bytes_rebuild(st, rec->len)) {
            if (st->count == 0) {
                return false;
            }
            drop_oldest(st);
        }
        off = bytes_place(st, rec->len);
    }
    memcpy(st->bring + off, rec->bytes, rec->len);
    rec->bytes = st->bring + off;
    st->bused += rec->len;
    st->nlive++;
    return true;
}

uint64_t trace_store_append_take(trace_store *st, trace_record *rec)
{
    uint64_t seq = st->first_seq + st->count;
    size_t full_cost = trace_record_cost(rec);
    uint32_t cost = full_cost > STORE_COST_MAX ? STORE_COST_MAX : (uint32_t)full_cost;
    rec->seq = seq;
    rec->cost = cost & STORE_COST_MAX; /* no-op: says the bit-field holds it */
    if (st->dropped && st->count > PREFETCH_SLOTS) {
        /* A store that evicts keeps evicting: each append releases the oldest record, whose
         * slot and the objects it references (the wire buffer, the action's URI; the peer is per
         * session and stays warm) were last touched a whole ring ago and are out of cache. In
         * profiles of the router's capture path the refcount decrements on them were the
         * largest cost. Requesting them a few appends early overlaps those misses with the work
         * between appends: the slot first, then, once it has arrived, what it points to. A
         * prefetch never faults (NULL is harmless). Written out here, not in a helper: GCC
         * deems a function of nothing but prefetches pure and deletes the call. */
        const trace_record *soon = &st->ring[wrap(st, st->head, PREFETCH_OBJECTS)];
        __builtin_prefetch(soon->wire, 0, 3);
        __builtin_prefetch(soon->uri, 0, 3);
        /* Both cache lines of the slot: a 96-byte slot straddles two every other time. */
        const char *slot = (const char *)&st->ring[wrap(st, st->head, PREFETCH_SLOTS)];
        __builtin_prefetch(slot, 0, 3);
        __builtin_prefetch(slot + sizeof(trace_record) - 1, 0, 3);
    }
    if (cost > st->max_bytes) {
        /* Alone over the byte budget: everything older goes too (the budget cannot hold it
         * together with anything), then it is dropped itself. */
        while (st->count) {
            drop_oldest(st);
        }
        trace_record_fini(rec);
        st->first_seq++;
        st->dropped++;
        return seq;
    }
    while (st->count && st->bytes + cost > st->max_bytes) {
        drop_oldest(st);
    }
    if (st->count == st->limit) {
        drop_oldest(st);
    }
    if (st->count == st->cap && (st->cap == st->limit || !grow(st))) {
        if (st->count == 0) {
            /* No ring at all and no memory for one. */
            trace_record_fini(rec);
            st->first_seq++;
            st->dropped++;
            return seq;
        }
        drop_oldest(st);
    }
    if (rec->bytes && !rec->wire && !copy_bytes(st, rec)) {
        trace_record_fini(rec); /* no memory for its bytes, even with nothing else held */
        st->first_seq++;
        st->dropped++;
        return seq;
    }
    rec->borrows = 0;
    st->ring[wrap(st, st->head, st->count)] = *rec;
    /* Its references and bytes moved into the slot (the rest of *rec may stay). */
    rec->peer = NULL;
    rec->uri = NULL;
    rec->wire = NULL;
    rec->bytes = NULL;
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

size_t trace_store_append_repeats(trace_store *st, const wamp_buf *wire, const trace_str *uri,
                                  uint64_t pc_ns, trace_peer *const *peers, size_t n, uint8_t flags,
                                  uint8_t last_flags)
{
    if (st->count == 0 || n == 0) {
        return 0;
    }
    const trace_record *newest = &st->ring[wrap(st, st->head, st->count - 1)];
    if (newest->wire != wire || newest->uri != uri || newest->pc_ns != pc_ns || !wire ||
        newest->bytes) {
        return 0;
    }
    trace_record r = *newest;
    r.flags = flags;
    r.borrows = 1;
    size_t k = 0;
    for (; k < n; k++) {
        /* The same evictions as trace_store_append_take() of a record of the same cost, as
         * long as the newest record (the one to borrow from) stays held. */
        while (st->bytes + r.cost > st->max_bytes) {
            if (!evict_for_repeat(st)) {
                return k;
            }
        }
        if (st->count == st->limit && !evict_for_repeat(st)) {
            return k;
        }
        if (st->count == st->cap && (st->cap == st->limit || !grow(st)) && !evict_for_repeat(st)) {
            return k;
        }
        r.seq = st->first_seq + st->count;
        r.peer = trace_peer_ref(peers[k]);
        if (k == n - 1) {
            r.flags = last_flags;
        }
        st->ring[wrap(st, st->head, st->count)] = r;
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
