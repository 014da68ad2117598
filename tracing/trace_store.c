/* trace_store.c: a ring buffer of records; slot of seq s is (head + (s - first_seq)) % cap.
 * The capture path (append, evict) wraps indexes with a compare instead of `%` (a division),
 * and releases evicted records without zeroing slots it overwrites next. */
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
};

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
    free(st);
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
    size_t next = wrap(st, st->head, 1);
    if (st->count > 1 && st->ring[next].borrows) {
        /* The next record borrows this one's uri and wire: it owns them from now on. */
        st->ring[next].borrows = 0;
        trace_peer_unref(&r->peer);
    } else {
        release_held(r); /* the slot is dead: overwritten by a later append */
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
    static const trace_record zero;
    rec->borrows = 0;
    st->ring[wrap(st, st->head, st->count)] = *rec;
    *rec = zero; /* vector moves; a memset() of the struct compiles to a slow `rep stos` */
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
    if (newest->wire != wire || newest->uri != uri || newest->pc_ns != pc_ns || !wire) {
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

size_t trace_store_limit(const trace_store *st)
{
    return st->limit;
}

uint64_t trace_store_max_bytes(const trace_store *st)
{
    return st->max_bytes;
}
