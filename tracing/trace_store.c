/* trace_store.c: two rings, of seqs and of messages, and a ring of bytes.
 *
 * A held record is a seq entry (its peer and correlation flags) pointing to a message entry (all
 * the rest: clocks, type, URI, correlation, sizes, bytes). A message sent to many receivers (a
 * fan-out's repeats, trace_store_append_repeats()) is one message entry with one seq entry per
 * receiver; every other record has a message of its own. Both rings are first in, first out and
 * in the same order: the oldest seq's message is the oldest message, released when its last seq
 * goes. The slot of seq s is (shead + (s - first_seq)) % cap; a seq entry names its message by a
 * wrapping 32-bit number (the message entry of number n is at (mhead + (n - mfirst)) % cap), so
 * that growing the rings renumbers nothing. The two rings have the same capacity: a store holds
 * at least one seq per message. The capture path (append, evict) wraps indexes with a compare
 * instead of `%` (a division), and releases evicted entries without zeroing slots it overwrites
 * next.
 *
 * The bytes messages keep (received messages, sent ones up to TRACE_STORE_COPY_MAX, a message
 * without its payload) live in the byte ring: each append copies them at its write end, each
 * release of a message advances its read end past that message's copy. A copy never wraps: one
 * that does not fit before the end starts at the front, and the end's unused rest is skipped
 * (`bend`). When neither place fits, the ring is rebuilt, 2 to 4 times what it then holds plus
 * the new copy (which then fits after the held ones), its messages' pointers moved along; and
 * when it is about to wrap while 8 times larger than that, it is rebuilt smaller. */
#include "trace_store.h"

#include <stdlib.h>
#include <string.h>

#include "trace_store_int.h"

/* First ring allocation (entries), unless limit is smaller. */
#define STORE_INITIAL_CAP 64
/* The largest cost a record can note. */
#define STORE_COST_MAX 0x7fffffffu

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

/* The message entry of number n (held). */
static inline store_msg *msg_of(const trace_store *st, uint32_t n)
{
    return &st->mring[wrap(st, st->mhead, (uint32_t)(n - st->mfirst))];
}

/* The newest message entry (mcount > 0). */
static inline store_msg *newest_msg(const trace_store *st)
{
    return &st->mring[wrap(st, st->mhead, st->mcount - 1)];
}

void trace_store_free(trace_store *st)
{
    if (!st) {
        return;
    }
    for (size_t i = 0; i < st->count; i++) {
        trace_peer_unref(&st->sring[wrap(st, st->shead, i)].peer);
    }
    for (size_t i = 0; i < st->mcount; i++) {
        store_msg *m = &st->mring[wrap(st, st->mhead, i)];
        trace_str_unref(&m->uri);
        wamp_buf_unref(&m->wire);
    }
    free(st->sring);
    free(st->mring);
    free(st->bring);
    free(st);
}

/* Frees the byte ring's copy of the oldest held message m (the oldest copy). */
static void bytes_release(trace_store *st, const store_msg *m)
{
    st->bused -= m->len;
    if (st->bused == 0) {
        st->bhead = st->btail = 0;
        st->bwrapped = false;
        return;
    }
    st->bhead = (size_t)(m->bytes - st->bring) + m->len;
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
 * moved to the front of a new array, oldest first, their messages' pointers with them. false
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
    for (size_t i = 0; i < st->mcount; i++) {
        store_msg *m = &st->mring[wrap(st, st->mhead, i)];
        if (m->bytes) {
            memcpy(nb + off, m->bytes, m->len);
            m->bytes = nb + off;
            off += m->len;
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

/* Releases what the oldest message holds and forgets it (its last seq is gone). Out of line: a
 * fan-out's message goes with the last of its seqs only. */
static __attribute__((noinline)) void msg_release_oldest(trace_store *st)
{
    store_msg *m = &st->mring[st->mhead];
    if (m->bytes) {
        bytes_release(st, m);
    }
    trace_str_unref(&m->uri);
    wamp_buf_unref(&m->wire);
    st->mhead = wrap(st, st->mhead, 1);
    st->mcount--;
    st->mfirst++;
}

/* Evicts the oldest record. Inline where every append of a full store calls it (make_room(),
 * trace_store_append_repeats()); drop_oldest() elsewhere. */
static inline __attribute__((always_inline)) void drop_oldest_inline(trace_store *st)
{
    store_seq *q = &st->sring[st->shead];
    /* The oldest seq's message is the oldest message. */
    store_msg *m = &st->mring[st->mhead];
    st->bytes -= m->cost;
    trace_peer_unref(&q->peer);
    if (--m->nseq == 0) {
        msg_release_oldest(st);
    }
    st->shead = wrap(st, st->shead, 1);
    st->count--;
    st->first_seq++;
    st->dropped++;
    if (st->count == 0) {
        st->key = 0;
    }
}

static __attribute__((noinline)) void drop_oldest(trace_store *st)
{
    drop_oldest_inline(st);
}

/* Moves the n entries of size sz starting at head of a ring of cap entries to the front of dst. */
static void unwrap_into(void *dst, const void *src, size_t sz, size_t cap, size_t head, size_t n)
{
    size_t tail = cap - head; /* slots from head to the end of the old array */
    size_t n1 = n < tail ? n : tail;
    memcpy(dst, (const char *)src + head * sz, n1 * sz);
    memcpy((char *)dst + n1 * sz, src, (n - n1) * sz);
}

/* Doubles both rings (up to limit), moving the held entries to the front of the new arrays. */
static bool grow(trace_store *st)
{
    size_t ncap = st->cap ? st->cap * 2 : STORE_INITIAL_CAP;
    if (ncap > st->limit || ncap < st->cap) {
        ncap = st->limit;
    }
    store_seq *sring = malloc(ncap * sizeof(*sring));
    store_msg *mring = malloc(ncap * sizeof(*mring));
    if (!sring || !mring) {
        free(sring);
        free(mring);
        return false;
    }
    if (st->count) {
        unwrap_into(sring, st->sring, sizeof(*sring), st->cap, st->shead, st->count);
        unwrap_into(mring, st->mring, sizeof(*mring), st->cap, st->mhead, st->mcount);
    }
    free(st->sring);
    free(st->mring);
    st->sring = sring;
    st->mring = mring;
    st->cap = ncap;
    st->shead = 0;
    st->mhead = 0;
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

/* Evicts what appending a record of this cost needs (budget, limit, rings that cannot grow);
 * false if the record cannot be held: alone over the budget (everything older goes too: the
 * budget cannot hold it together with anything), or no rings at all and no memory for them. */
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
 * many as both bounds need). A new message needs a free slot in both rings: the message ring
 * holds no more entries than the seq ring, so a free seq slot is one. */
static inline bool make_room(trace_store *st, uint32_t cost)
{
    if (st->count == st->cap && st->count == st->limit) {
        drop_oldest_inline(st);
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

/* Adds the message entry written into *newest_slot(st) (nseq 1) and its seq for peer (a reference
 * that moves in) with flags; returns the seq. */
static inline uint64_t push_msg_seq(trace_store *st, trace_peer *peer, uint8_t flags, uint32_t cost)
{
    uint64_t seq = st->first_seq + st->count;
    store_seq *q = &st->sring[wrap(st, st->shead, st->count)];
    q->peer = peer;
    q->msg = st->mfirst + (uint32_t)st->mcount;
    q->flags = flags;
    st->mcount++;
    st->count++;
    st->bytes += cost;
    return seq;
}

/* The slot the next message entry goes to (a free one: make_room() succeeded). */
static inline store_msg *next_msg_slot(const trace_store *st)
{
    return &st->mring[wrap(st, st->mhead, st->mcount)];
}

/* Appends the record of v's parts. take: v's peer, uri and wire are references that move into
 * the entries (a wire kept as it is, whatever its size), else the entries take references of
 * their own (a wire up to TRACE_STORE_COPY_MAX copied into the byte ring). Either way v->bytes
 * are copied. false (nothing appended, nothing taken) when it cannot be held. */
static inline __attribute__((always_inline)) bool
append_parts(trace_store *st, const trace_rec_view *v, bool take, uint64_t *seq)
{
    /* What the record keeps: a copy of the bytes, or a reference on a buffer, or nothing. */
    size_t len;
    const void *src = trace_rec_view_data(v, &len);
    const wamp_buf *wire = v->wire && (take || len > TRACE_STORE_COPY_MAX) ? v->wire : NULL;
    src = len && !wire ? src : NULL;
    uint32_t cost = cost_of(src || wire ? len : 0);
    const unsigned char *copy = NULL;
    if (!make_room(st, cost) || (src && !(copy = copy_bytes(st, src, len)))) {
        /* (Without memory for its bytes even with nothing else held.) */
        *seq = drop_new(st);
        return false;
    }
    store_msg_fill(next_msg_slot(st), v, take || !v->uri ? v->uri : trace_str_ref(v->uri),
                   take || !wire ? (wamp_buf *)(uintptr_t)wire
                                 : wamp_buf_ref((wamp_buf *)(uintptr_t)wire),
                   copy, copy ? (uint32_t)len : 0, cost, copy || wire ? v->wire_ser : 0);
    st->key = v->key;
    *seq = push_msg_seq(st, take || !v->peer ? v->peer : trace_peer_ref(v->peer), v->flags, cost);
    return true;
}

uint64_t trace_store_append_take(trace_store *st, trace_record *rec)
{
    trace_rec_view v;
    trace_rec_view_of(rec, &v);
    uint64_t seq;
    prefetch_evictions(st);
    if (!append_parts(st, &v, true, &seq)) {
        trace_record_fini(rec);
        return seq;
    }
    /* Its references moved into the entries (the rest of *rec may stay). */
    rec->seq = seq;
    rec->peer = NULL;
    rec->uri = NULL;
    rec->wire = NULL;
    rec->bytes = NULL;
    return seq;
}

uint64_t trace_store_append_general(trace_store *st, const trace_rec_view *v)
{
    uint64_t seq;
    prefetch_evictions(st);
    (void)append_parts(st, v, false, &seq);
    return seq;
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
    drop_oldest(st);
    return true;
}

/* The evictions an append of a record of this cost needs (make_room(): the usual one first, a
 * full ring's oldest), as long as the message repeated stays held; false where it would not. */
static bool room_for_repeat(trace_store *st, uint32_t cost)
{
    if (st->count == st->limit && !evict_for_repeat(st)) {
        return false;
    }
    while (st->bytes + cost > st->max_bytes) {
        if (!evict_for_repeat(st)) {
            return false;
        }
    }
    return st->count < st->cap || (st->cap < st->limit && grow(st)) || evict_for_repeat(st);
}

/* Writes n repeat seqs (of message no, with flags) over the n slots from q on, evicting the
 * records they held: the peers' references move in, the evicted ones are dropped. */
static inline void overwrite_seqs(store_seq *q, trace_peer *const *p, size_t n, uint32_t no,
                                  uint8_t flags)
{
    for (store_seq *end = q + n; q < end; q++, p++) {
        trace_peer *old = q->peer;
        q->peer = *p;
        q->msg = no;
        q->flags = flags;
        trace_peer_unref(&old);
    }
}

/* The steady state of trace_store_append_repeats(), in a store full at its limit and capacity
 * holding two records or more: while its budget holds the repeat in place of the oldest record,
 * each repeat evicts the oldest record and takes its slot (in a full ring the next seq's slot is
 * the oldest's). It goes by the oldest message: the seqs of one message evicted in a row change
 * the byte count by the same amount each, so how many the budget allows is one division, and
 * the message's count of seqs and the one repeated (nm, numbered no) change once per message,
 * not per receiver; what is left per receiver is its slot, in at most two runs of consecutive
 * slots (the ring wraps once at most). A message whose last record goes is released; the message
 * repeated never is (more than one record is held, and its newest stays). Returns how many of
 * peers[0..n) it appended; the caller appends the rest the general way. */
static inline size_t replace_oldest(trace_store *st, store_msg *nm, uint32_t no,
                                    trace_peer *const *peers, size_t n, uint8_t flags)
{
    const uint32_t cost = nm->cost;
    const size_t cap = st->cap;
    size_t head = st->shead;
    uint64_t bytes = st->bytes;
    size_t k = 0;
    while (k < n) {
        store_msg *om = &st->mring[st->mhead];
        size_t run = n - k;
        if (om != nm && om->nseq < run) {
            run = om->nseq; /* then the next message is the oldest */
        }
        if (run > cap) {
            run = cap; /* (only the message repeated is held: a round of the ring at a time) */
        }
        /* Each repeat in place of one of om's seqs: bytes - om->cost + cost, within the budget
         * as long as it does not grow past it (bytes <= max_bytes holds between appends). */
        if (cost > om->cost) {
            uint64_t fit = (st->max_bytes - bytes) / (cost - om->cost);
            run = fit < run ? (size_t)fit : run;
            if (run == 0) {
                break;
            }
        }
        bytes = bytes - (uint64_t)run * om->cost + (uint64_t)run * cost;
        if (om != nm) {
            nm->nseq += (uint32_t)run;
            om->nseq -= (uint32_t)run;
            if (om->nseq == 0) {
                msg_release_oldest(st); /* (it reads and advances the message ring only) */
            }
        }
        size_t first = cap - head < run ? cap - head : run; /* up to the end of the ring */
        overwrite_seqs(st->sring + head, peers + k, first, no, flags);
        if (first < run) {
            overwrite_seqs(st->sring, peers + k + first, run - first, no, flags);
        }
        k += run;
        head = head + run >= cap ? head + run - cap : head + run;
    }
    st->shead = head;
    st->bytes = bytes;
    st->first_seq += k;
    st->dropped += k;
    return k;
}

/* trace_store_append_repeats() from peers[k] on, the general way: room made for each (the
 * evictions an append needs, as long as the message repeated stays held). */
static size_t append_repeats_slow(trace_store *st, uint32_t no, trace_peer *const *peers, size_t k,
                                  size_t n, uint8_t flags, uint8_t last_flags)
{
    uint32_t cost = msg_of(st, no)->cost;
    for (; k < n; k++) {
        /* (A full ring at its limit is full at its capacity too.) */
        if ((st->count == st->cap || st->bytes + cost > st->max_bytes) &&
            !room_for_repeat(st, cost)) {
            return k;
        }
        store_seq *q = &st->sring[wrap(st, st->shead, st->count)];
        q->peer = peers[k];
        q->msg = no;
        q->flags = k == n - 1 ? last_flags : flags;
        msg_of(st, no)->nseq++; /* (room_for_repeat() may have moved it: grow()) */
        st->count++;
        st->bytes += cost;
    }
    return k;
}

size_t trace_store_append_repeats(trace_store *st, uint64_t key, const trace_str *uri,
                                  uint64_t pc_ns, trace_peer *const *peers, size_t n, uint8_t flags,
                                  uint8_t last_flags)
{
    if (st->count == 0 || n == 0 || key == 0 || st->key != key) {
        return 0;
    }
    store_msg *nm = newest_msg(st);
    if (nm->uri != uri || nm->pc_ns != pc_ns) {
        return 0;
    }
    uint32_t no = st->mfirst + (uint32_t)(st->mcount - 1);
    size_t k = 0;
    if (st->count == st->limit && st->count == st->cap && st->count >= 2) {
        k = replace_oldest(st, nm, no, peers, n, flags);
        if (k == n) {
            /* The n-th is the newest record, just before the head of the full ring. */
            st->sring[(st->shead ? st->shead : st->cap) - 1].flags = last_flags;
            return n;
        }
    }
    return append_repeats_slow(st, no, peers, k, n, flags, last_flags);
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
    const store_seq *q = &st->sring[(st->shead + (size_t)(seq - st->first_seq)) % st->cap];
    const store_msg *m = msg_of(st, q->msg);
    out->seq = seq;
    out->pc_ns = m->pc_ns;
    out->ts_ns = m->ts_ns;
    out->peer = q->peer;
    out->uri = m->uri;
    out->wire = m->wire;
    out->bytes = m->bytes;
    out->dropped = m->dropped;
    memcpy(out->ser_bytes, m->ser_bytes, sizeof(out->ser_bytes));
    out->len = m->len;
    memcpy(out->corr, m->corr, TRACE_UUID_LEN);
    out->dir = m->dir;
    out->msg_type = m->msg_type;
    out->wire_ser = m->wire_ser;
    out->flags = q->flags;
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
    return st->cap * (sizeof(store_seq) + sizeof(store_msg)) + st->bcap;
}

size_t trace_store_limit(const trace_store *st)
{
    return st->limit;
}

uint64_t trace_store_max_bytes(const trace_store *st)
{
    return st->max_bytes;
}
