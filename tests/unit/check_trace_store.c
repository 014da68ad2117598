/* check_trace_store.c: the bounded ring of records: seqs, count and byte limits, drops, paging. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "alloc_count.h"
#include "trace_record.h"
#include "trace_store.h"

/* A wamp_buf of len bytes, 'x' each. */
static wamp_buf *buf_of(size_t len)
{
    wamp_buf *b = wamp_buf_new(len);
    ck_assert_ptr_nonnull(b);
    memset(wamp_buf_reserve(&b, len), 'x', len);
    wamp_buf_commit(b, len);
    return b;
}

/* A record carrying `len` wire bytes (NULL wire for 0) and pc_ns = tag, to recognise it. */
static trace_record rec_of(size_t len, uint64_t tag)
{
    trace_record r;
    memset(&r, 0, sizeof(r));
    r.pc_ns = tag;
    r.dir = TRACE_RX;
    if (len) {
        r.wire = buf_of(len);
        r.wire_ser = WAMP_SER_JSON;
    }
    return r;
}

static void append(trace_store *st, size_t len, uint64_t tag)
{
    trace_record r = rec_of(len, tag);
    uint64_t expect = trace_store_next_seq(st);
    ck_assert_uint_eq(trace_store_append_take(st, &r), expect);
    ck_assert_ptr_null(r.wire); /* consumed */
}

/* The sum of the lengths of the bytes the records held keep. */
static uint64_t held_len(const trace_store *st)
{
    uint64_t sum = 0;
    for (uint64_t s = trace_store_first_seq(st); s < trace_store_next_seq(st); s++) {
        size_t len = 0;
        (void)trace_record_data(trace_store_get(st, s, &(trace_record){0}), &len);
        sum += len;
    }
    return sum;
}

/* A store holds at most TRACE_STORE_HOLD_MAX (4 GiB) whatever its max_bytes allows (mgmt/README.md,
 * trace_options max_bytes): sent messages over TRACE_STORE_COPY_MAX are held as references on the
 * router's buffers, outside the ring, so only the budget bounds them. Beyond, the oldest records
 * are dropped and counted, as at the budget. (One 16 MiB buffer stands for distinct messages.) */
START_TEST(test_held_bytes_bounded_whatever_the_budget)
{
    uint64_t tib = (uint64_t)1 << 40;
    trace_store *st = trace_store_new(100000, tib);
    size_t len = (size_t)16 << 20;
    wamp_buf *wire = buf_of(len);
    uint64_t cost = len + TRACE_RECORD_OVERHEAD;
    for (uint64_t i = 0; i < 300; i++) {
        trace_rec_view v = {.pc_ns = i,
                            .wire = wire,
                            .dir = TRACE_TX,
                            .msg_type = 36,
                            .wire_ser = WAMP_SER_JSON};
        ck_assert_uint_eq(trace_store_append_view(st, &v), i);
        ck_assert_uint_le(trace_store_bytes(st), TRACE_STORE_HOLD_MAX);
    }
    size_t fit = (size_t)(TRACE_STORE_HOLD_MAX / cost);
    ck_assert_uint_eq(trace_store_records(st), fit);
    ck_assert_uint_eq(trace_store_bytes(st), fit * cost);
    ck_assert_uint_eq(trace_store_dropped(st), 300 - fit);
    ck_assert_uint_eq(trace_store_first_seq(st), 300 - fit);
    ck_assert_uint_eq(trace_store_get(st, 300 - fit, &(trace_record){0})->pc_ns, 300 - fit);
    ck_assert_uint_eq(trace_store_max_bytes(st), TRACE_STORE_HOLD_MAX); /* (the budget in effect) */
    trace_store_free(st);
    /* A budget under the bound is kept as it is. */
    st = trace_store_new(10, 1024);
    ck_assert_uint_eq(trace_store_max_bytes(st), 1024);
    trace_store_free(st);
    wamp_buf_unref(&wire);
}

END_TEST

/* Appends the message wire (a sent message: copied when small, referenced when larger than
 * TRACE_STORE_COPY_MAX) with peer, uri (NULL: none), pc_ns and flags, as the capture path does
 * (trace_store_append_view()), under key; returns its seq. */
static uint64_t append_msg(trace_store *st, const wamp_buf *wire, trace_peer *peer, trace_str *uri,
                           uint64_t pc_ns, uint8_t flags, uint64_t key)
{
    static const uint8_t corr[TRACE_UUID_LEN] = {7};
    trace_rec_view v = {.pc_ns = pc_ns,
                        .peer = peer,
                        .uri = uri,
                        .corr = corr,
                        .wire = wire,
                        .dir = TRACE_TX,
                        .msg_type = 36,
                        .wire_ser = WAMP_SER_JSON,
                        .flags = flags,
                        .key = key};
    return trace_store_append_view(st, &v);
}

/* The received bytes of record seq: len (1..MIXED_MAX) bytes of a pattern seeded by seq. */
#define MIXED_MAX 300

static size_t mixed_bytes(uint64_t seq, unsigned char *out)
{
    size_t len = 1 + (size_t)((seq * 7919u) % MIXED_MAX);
    for (size_t i = 0; i < len; i++) {
        out[i] = (unsigned char)(seq * 31u + i);
    }
    return len;
}

/* Every record held has its own bytes, intact, and the budget adds up. */
static void check_mixed(const trace_store *st)
{
    unsigned char want[MIXED_MAX];
    uint64_t sum = 0;
    for (uint64_t s = trace_store_first_seq(st); s < trace_store_next_seq(st); s++) {
        const trace_record *r = trace_store_get(st, s, &(trace_record){0});
        ck_assert_ptr_nonnull(r);
        size_t n = mixed_bytes(s, want), len;
        const void *data = trace_record_data(r, &len);
        ck_assert_uint_eq(len, n);
        ck_assert_mem_eq(data, want, n);
        sum += n + TRACE_RECORD_OVERHEAD;
    }
    ck_assert_uint_eq(trace_store_bytes(st), sum);
}

/* Appends records seq from..to - 1 with mixed_bytes() each (received bytes, copied). */
static void append_mixed_rx(trace_store *st, uint64_t from, uint64_t to)
{
    unsigned char in[MIXED_MAX];
    for (uint64_t i = from; i < to; i++) {
        trace_record r;
        memset(&r, 0, sizeof(r));
        r.dir = TRACE_RX;
        r.len = (uint32_t)mixed_bytes(i, in);
        r.bytes = in;
        ck_assert_uint_eq(trace_store_append_take(st, &r), i);
    }
}

START_TEST(test_received_bytes_copied_into_the_byte_ring)
{
    /* Records of mixed sizes through a store limited by count (the copies wrap around the byte
     * ring, which is rebuilt larger as it fills), then by bytes; the caller's bytes are
     * borrowed only for the call. */
    trace_store *st = trace_store_new(40, 1 << 20);
    unsigned char in[MIXED_MAX];
    for (uint64_t i = 0; i < 2000; i++) {
        trace_record r;
        memset(&r, 0, sizeof(r));
        r.dir = TRACE_RX;
        r.wire_ser = WAMP_SER_JSON;
        r.len = (uint32_t)mixed_bytes(i, in);
        r.bytes = in;
        ck_assert_uint_eq(trace_store_append_take(st, &r), i);
        ck_assert_ptr_null(r.bytes); /* consumed */
        memset(in, 0xee, sizeof(in));
        check_mixed(st);
    }
    ck_assert_uint_eq(trace_store_records(st), 40);
    ck_assert_uint_eq(trace_store_dropped(st), 2000 - 40);
    trace_store_free(st);
    /* A byte budget of about ten records: evictions by bytes free the ring's oldest copies. */
    st = trace_store_new(1000, 10 * (MIXED_MAX / 2 + TRACE_RECORD_OVERHEAD));
    for (uint64_t i = 0; i < 500; i++) {
        append_mixed_rx(st, i, i + 1);
        check_mixed(st);
        ck_assert_uint_le(trace_store_bytes(st), trace_store_max_bytes(st));
    }
    ck_assert_uint_eq(trace_store_dropped(st) + trace_store_records(st), 500);
    trace_store_free(st);
}

END_TEST

START_TEST(test_byte_ring_shrinks_after_a_burst)
{
    /* In a full store, a burst of large received messages grows the ring; once small ones
     * replace them, the ring is rebuilt small when its write end comes around, their bytes
     * intact. */
    trace_store *st = trace_store_new(20, (uint64_t)1 << 30);
    append_mixed_rx(st, 0, 20);
    static unsigned char big[100000];
    memset(big, 'b', sizeof(big));
    for (uint64_t i = 20; i < 40; i++) {
        trace_record r;
        memset(&r, 0, sizeof(r));
        r.bytes = big;
        r.len = sizeof(big);
        ck_assert_uint_eq(trace_store_append_take(st, &r), i);
    }
    size_t burst = trace_store_alloc_bytes(st);
    ck_assert_uint_ge(burst, 20 * sizeof(big));
    uint64_t seq = 40;
    for (; seq < 200000 && trace_store_alloc_bytes(st) >= burst / 8; seq++) {
        append_mixed_rx(st, seq, seq + 1);
    }
    ck_assert_uint_lt(trace_store_alloc_bytes(st), burst / 8);
    append_mixed_rx(st, seq, seq + 20); /* the last large ones go too */
    ck_assert_uint_ge(trace_store_first_seq(st), 40);
    check_mixed(st);
    trace_store_free(st);
}

END_TEST

/* What a store of at most 8,192 index slots takes once its ring is fitted: 1.25 times the cost it
 * counts (which covers every entry's header and bytes), rounded up to a page, and its index. */
static size_t fitted_max(const trace_store *st)
{
    return 5 * trace_store_bytes(st) / 4 + 4096 + 8192 * sizeof(uint32_t);
}

START_TEST(test_ring_fitted_when_full)
{
    /* While it fills, the ring grows to 2 to 4 times what it holds. Once full (at its limit, or
     * its budget evicting), it is fitted to what it holds (1.25 times, to a page) right away,
     * not at its first wrap: a recorder that filled and then takes little keeps no more. Its
     * cost counts every entry's header and bytes, so it bounds what the ring holds. */
    trace_store *st = trace_store_new(5000, UINT64_MAX);
    append_mixed_rx(st, 0, 4999);
    ck_assert_uint_gt(trace_store_alloc_bytes(st),
                      3 * trace_store_bytes(st) / 2 + 8192 * sizeof(uint32_t));
    append_mixed_rx(st, 4999, 5000); /* full */
    ck_assert_uint_le(trace_store_alloc_bytes(st), fitted_max(st));
    check_mixed(st);
    append_mixed_rx(st, 5000, 6000); /* evicting: stays fitted */
    ck_assert_uint_le(trace_store_alloc_bytes(st), fitted_max(st));
    check_mixed(st);
    trace_store_free(st);
    /* Full by its budget first: the same once the budget evicts. */
    st = trace_store_new(100000, 3000 * (MIXED_MAX / 2 + TRACE_RECORD_OVERHEAD));
    uint64_t n = 0;
    while (trace_store_dropped(st) == 0) {
        append_mixed_rx(st, n, n + 1);
        n++;
    }
    ck_assert_uint_le(trace_store_alloc_bytes(st), fitted_max(st));
    check_mixed(st);
    trace_store_free(st);
}

END_TEST

START_TEST(test_seq_from_zero_without_gaps)
{
    trace_store *st = trace_store_new(100, 1 << 20);
    ck_assert_uint_eq(trace_store_first_seq(st), 0);
    ck_assert_uint_eq(trace_store_next_seq(st), 0);
    ck_assert_uint_eq(trace_store_records(st), 0);
    ck_assert_ptr_null(trace_store_get(st, 0, &(trace_record){0}));
    for (uint64_t i = 0; i < 50; i++) {
        trace_record r = rec_of(10, 1000 + i);
        ck_assert_uint_eq(trace_store_append_take(st, &r), i);
    }
    ck_assert_uint_eq(trace_store_records(st), 50);
    ck_assert_uint_eq(trace_store_next_seq(st), 50);
    ck_assert_uint_eq(trace_store_dropped(st), 0);
    ck_assert_uint_eq(trace_store_bytes(st), 50 * (10 + TRACE_RECORD_OVERHEAD));
    for (uint64_t i = 0; i < 50; i++) {
        const trace_record *r = trace_store_get(st, i, &(trace_record){0});
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->seq, i);
        ck_assert_uint_eq(r->pc_ns, 1000 + i);
    }
    ck_assert_ptr_null(trace_store_get(st, 50, &(trace_record){0}));
    ck_assert_ptr_null(trace_store_get(st, UINT64_MAX, &(trace_record){0}));
    trace_store_free(st);
    trace_store_free(NULL);
    ck_assert_ptr_null(trace_store_new(0, 1000)); /* limit 0 is refused */
}

END_TEST

START_TEST(test_count_limit_drops_oldest)
{
    trace_store *st = trace_store_new(5, 1 << 20);
    for (uint64_t i = 0; i < 12; i++) {
        append(st, 1, i);
    }
    ck_assert_uint_eq(trace_store_records(st), 5);
    ck_assert_uint_eq(trace_store_first_seq(st), 7);
    ck_assert_uint_eq(trace_store_next_seq(st), 12);
    ck_assert_uint_eq(trace_store_dropped(st), 7);
    ck_assert_uint_eq(trace_store_bytes(st), 5 * (1 + TRACE_RECORD_OVERHEAD));
    ck_assert_ptr_null(trace_store_get(st, 6, &(trace_record){0}));
    for (uint64_t s = 7; s < 12; s++) {
        ck_assert_uint_eq(trace_store_get(st, s, &(trace_record){0})->pc_ns, s);
    }
    trace_store_free(st);
}

END_TEST

START_TEST(test_byte_limit_drops_oldest)
{
    /* Each record costs 100 + overhead; the budget holds 4 of them, not 5. */
    const uint64_t cost = 100 + TRACE_RECORD_OVERHEAD;
    trace_store *st = trace_store_new(1000, 4 * cost + cost / 2);
    for (uint64_t i = 0; i < 4; i++) {
        append(st, 100, i);
    }
    ck_assert_uint_eq(trace_store_dropped(st), 0);
    ck_assert_uint_eq(trace_store_bytes(st), 4 * cost);
    append(st, 100, 4);
    ck_assert_uint_eq(trace_store_records(st), 4);
    ck_assert_uint_eq(trace_store_dropped(st), 1);
    ck_assert_uint_eq(trace_store_first_seq(st), 1);
    ck_assert_uint_eq(trace_store_bytes(st), 4 * cost);
    /* A big record evicts as many old ones as it needs. */
    append(st, 300, 5);
    ck_assert_uint_eq(trace_store_first_seq(st), 3);
    ck_assert_uint_eq(trace_store_records(st), 3);
    ck_assert_uint_eq(trace_store_dropped(st), 3);
    ck_assert_uint_eq(trace_store_bytes(st), 2 * cost + 300 + TRACE_RECORD_OVERHEAD);
    ck_assert(trace_store_bytes(st) <= trace_store_max_bytes(st));
    /* Records without bytes count the overhead only. */
    append(st, 0, 6);
    ck_assert_uint_eq(trace_store_dropped(st), 3);
    ck_assert_uint_eq(trace_store_bytes(st), 2 * cost + 300 + 2 * TRACE_RECORD_OVERHEAD);
    trace_store_free(st);
}

END_TEST

START_TEST(test_record_over_budget_alone)
{
    trace_store *st = trace_store_new(100, 1024);
    append(st, 10, 0);
    append(st, 10, 1);
    /* Larger than the whole budget: dropped, and (seqs held stay contiguous) so is all older. */
    append(st, 2000, 2);
    ck_assert_uint_eq(trace_store_records(st), 0);
    ck_assert_uint_eq(trace_store_first_seq(st), 3);
    ck_assert_uint_eq(trace_store_next_seq(st), 3);
    ck_assert_uint_eq(trace_store_dropped(st), 3);
    ck_assert_uint_eq(trace_store_bytes(st), 0);
    append(st, 10, 3);
    ck_assert_uint_eq(trace_store_get(st, 3, &(trace_record){0})->pc_ns, 3);
    ck_assert_uint_eq(trace_store_first_seq(st), 3);
    trace_store_free(st);
}

END_TEST

START_TEST(test_references_released_on_drop_and_free)
{
    wamp_buf *shared = wamp_buf_new_copy("[16,1,{},\"a\"]", 13);
    trace_store *st = trace_store_new(3, 1 << 20);
    for (int i = 0; i < 5; i++) {
        trace_record r;
        memset(&r, 0, sizeof(r));
        r.wire = wamp_buf_ref(shared);
        trace_store_append_take(st, &r);
    }
    /* 3 held by the store + ours; the two dropped records released theirs. */
    ck_assert_uint_eq(wamp_buf_refs(shared), 4);
    trace_store_free(st);
    ck_assert_uint_eq(wamp_buf_refs(shared), 1);
    wamp_buf_unref(&shared);
}

END_TEST

/* A full store evicts one record per append: every evicted record releases its peer, URI and
 * wire (shared objects, as the hub makes them), across many wraps of the ring, and the
 * consumed record comes back with no pointers (the documented contract of append_take). */
START_TEST(test_eviction_releases_every_reference)
{
    trace_peer *peer = trace_peer_new(7, "realm1", "alice", "user");
    trace_str *uri = trace_str_new("com.example.topic");
    wamp_buf *wire = wamp_buf_new_copy("[36,1,2,{}]", 11);
    trace_store *st = trace_store_new(5, 1 << 20);
    for (uint64_t i = 0; i < 1000; i++) {
        trace_record r = rec_of(i % 3 ? 0 : 1 + i % 50, i); /* some own their wire bytes */
        r.peer = trace_peer_ref(peer);
        r.uri = i % 2 ? trace_str_ref(uri) : trace_str_new("own.uri");
        if (!r.wire) {
            r.wire = wamp_buf_ref(wire);
        }
        r.flags = TRACE_CORR_HAS;
        memset(r.corr, 0xab, sizeof(r.corr));
        ck_assert_uint_eq(trace_store_append_take(st, &r), i);
        ck_assert_ptr_null(r.peer);
        ck_assert_ptr_null(r.uri);
        ck_assert_ptr_null(r.wire);
        ck_assert_ptr_null(r.bytes);
        uint64_t held = i + 1 < 5 ? i + 1 : 5;
        ck_assert_uint_eq(trace_store_records(st), held);
        ck_assert_uint_eq(trace_peer_refs(peer), 1 + held);
        const trace_record *newest = trace_store_get(st, i, &(trace_record){0});
        ck_assert_uint_eq(newest->pc_ns, i);
        ck_assert_uint_eq(newest->seq, i);
        ck_assert_uint_eq(newest->corr[15], 0xab);
    }
    /* The last five: seqs 995..999; odd ones share uri, those not multiple of 3 share wire. */
    ck_assert_uint_eq(trace_str_refs(uri), 1 + 3);
    ck_assert_uint_eq(wamp_buf_refs(wire), 1 + 3);
    trace_store_free(st);
    ck_assert_uint_eq(trace_peer_refs(peer), 1);
    ck_assert_uint_eq(trace_str_refs(uri), 1);
    ck_assert_uint_eq(wamp_buf_refs(wire), 1);
    trace_peer_unref(&peer);
    trace_str_unref(&uri);
    wamp_buf_unref(&wire);
}

END_TEST

/* A reference on each of peers[0..n) for trace_store_append_repeats() to take; returns peers. */
static trace_peer *const *given(trace_peer *const *peers, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        (void)trace_peer_ref(peers[i]);
    }
    return peers;
}

/* n peers of one user, session ids first, first + 1, ... (references of their own). */
static void peers_new(trace_peer **peers, size_t n, uint64_t first)
{
    for (size_t i = 0; i < n; i++) {
        peers[i] = trace_peer_new(first + i, "realm1", "alice", "user");
    }
}

/* After the store that held them is freed: nothing holds peers[0..n) any more (nor uri, nor
 * wire when given); each released. */
static void released(trace_peer **peers, size_t n, trace_str **uri, wamp_buf **wire)
{
    if (wire) {
        ck_assert_uint_eq(wamp_buf_refs(*wire), 1);
        wamp_buf_unref(wire);
    }
    ck_assert_uint_eq(trace_str_refs(*uri), 1);
    trace_str_unref(uri);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(trace_peer_refs(peers[i]), 1);
        trace_peer_unref(&peers[i]);
    }
}

/* A fan-out's repeats share the newest record's message entry (uri and wire: a large message,
 * referenced): one reference on them for the whole run, released with the run's last record
 * held, across ring wraps; each repeat holds its own peer and flags, and reads back like a
 * copy. */
START_TEST(test_repeat_shares_message)
{
    trace_peer *peers[3];
    peers_new(peers, 3, 10);
    trace_str *uri = trace_str_new("com.example.topic");
    const size_t wlen = TRACE_STORE_COPY_MAX + 1;
    wamp_buf *wire = buf_of(wlen);
    trace_store *st = trace_store_new(4, 1 << 20);
    ck_assert_uint_eq(append_msg(st, wire, peers[0], uri, 77, TRACE_CORR_HAS, 1), 0);
    trace_peer *run[10];
    for (size_t i = 0; i < 10; i++) {
        run[i] = peers[(i + 1) % 3]; /* seq s has peers[s % 3] */
    }
    /* One by one (each the last of its batch), then the rest in one batch ending the action. */
    for (size_t b = 0; b < 10; b++) {
        size_t n = b < 3 ? 1 : 7;
        uint8_t last = (uint8_t)(TRACE_CORR_HAS | (b + n == 10 ? TRACE_CORR_LAST : 0));
        ck_assert_uint_eq(trace_store_append_repeats(st, 1, uri, 77, given(run + b, n), n,
                                                     TRACE_CORR_HAS, last),
                          n);
        b += n - 1;
        uint64_t newest = b + 1;
        ck_assert_uint_eq(trace_store_next_seq(st), newest + 1);
        uint64_t held = newest + 1 < 4 ? newest + 1 : 4;
        ck_assert_uint_eq(trace_store_records(st), held);
        ck_assert_uint_eq(trace_store_bytes(st), held * (wlen + TRACE_RECORD_OVERHEAD));
        /* One reference for the whole run, in its one message entry. */
        ck_assert_uint_eq(trace_store_messages(st), 1);
        ck_assert_uint_eq(wamp_buf_refs(wire), 2);
        ck_assert_uint_eq(trace_str_refs(uri), 2);
        for (uint64_t s = trace_store_first_seq(st); s <= newest; s++) {
            const trace_record *h = trace_store_get(st, s, &(trace_record){0});
            ck_assert_uint_eq(h->seq, s);
            ck_assert_ptr_eq(h->peer, peers[s % 3]);
            ck_assert_ptr_eq(h->wire, wire);
            ck_assert_ptr_eq(h->uri, uri);
            ck_assert_uint_eq(h->pc_ns, 77);
            ck_assert_uint_eq(h->msg_type, 36);
            ck_assert_uint_eq(h->flags, TRACE_CORR_HAS | (s == 10 ? TRACE_CORR_LAST : 0));
        }
    }
    ck_assert_uint_eq(trace_store_dropped(st), 7);
    /* Only the newest record is a template: after another message, no repeat of this one. */
    append(st, 5, 78);
    ck_assert_uint_eq(trace_store_append_repeats(st, 1, uri, 77, peers, 1, 0, 0), 0);
    ck_assert_uint_eq(trace_store_append_repeats(st, 0, NULL, 78, peers, 1, 0, 0), 0);
    ck_assert_uint_eq(trace_store_next_seq(st), 12);
    ck_assert_uint_eq(wamp_buf_refs(wire), 2); /* seqs 9 and 10 still held */
    trace_store_free(st);
    released(peers, 3, &uri, &wire);
}

END_TEST

/* A small sent message is copied like received bytes (the caller's buffer only borrowed): its
 * fan-out's repeats share that one copy, which stays valid while any of them is held: through
 * evictions of the record that made it, rebuilds of the ring (other messages growing it)
 * and wraps. */
START_TEST(test_repeat_shares_copied_bytes)
{
    trace_peer *peer = trace_peer_new(10, "realm1", "alice", "user");
    trace_store *st = trace_store_new(6, 1 << 20);
    for (uint64_t round = 0; round < 40; round++) {
        /* A message of its own bytes, 20..(20 + 39 * 97) long: later ones outgrow the ring. */
        size_t len = 20 + (size_t)round * 97;
        wamp_buf *wire = wamp_buf_new(len);
        unsigned char *d = wamp_buf_reserve(&wire, len);
        for (size_t i = 0; i < len; i++) {
            d[i] = (unsigned char)(round * 31 + i);
        }
        wamp_buf_commit(wire, len);
        uint64_t first = append_msg(st, wire, peer, NULL, 100 + round, 0, round + 1);
        /* Another message's key is not the message. */
        ck_assert_uint_eq(
                trace_store_append_repeats(st, round + 2, NULL, 100 + round, &peer, 1, 0, 0), 0);
        trace_peer *run[] = {peer, peer, peer, peer};
        size_t n = 1 + round % 4;
        ck_assert_uint_eq(trace_store_append_repeats(st, round + 1, NULL, 100 + round,
                                                     given(run, n), n, 0, 0),
                          n);
        ck_assert_uint_eq(wamp_buf_refs(wire), 1); /* copied: no reference taken */
        const void *copy = NULL;
        for (uint64_t s = trace_store_first_seq(st); s < trace_store_next_seq(st); s++) {
            const trace_record *h = trace_store_get(st, s, &(trace_record){0});
            size_t hl = 0;
            const unsigned char *hd = trace_record_data(h, &hl);
            ck_assert_ptr_null(h->wire);
            uint64_t tag = h->pc_ns - 100;
            ck_assert_uint_eq(hl, 20 + tag * 97);
            for (size_t i = 0; i < hl; i++) {
                ck_assert_uint_eq(hd[i], (unsigned char)(tag * 31 + i));
            }
            if (s >= first) {
                ck_assert_ptr_ne(hd, wamp_buf_cdata(wire));
                ck_assert(!copy || copy == hd); /* one copy for the message and its repeats */
                copy = hd;
            }
        }
        /* The buffer may go now: the store holds its own copy. */
        wamp_buf_unref(&wire);
        ck_assert_uint_eq(trace_store_bytes(st),
                          trace_store_records(st) * TRACE_RECORD_OVERHEAD + held_len(st));
    }
    trace_store_free(st);
    ck_assert_uint_eq(trace_peer_refs(peer), 1);
    trace_peer_unref(&peer);
}

END_TEST

/* A repeat that would have to evict its template (limit 1, or a byte budget that holds one
 * record) is refused after the evictions that leave the template held; the message's key,
 * pc_ns and uri identify the template. */
START_TEST(test_repeat_refused_without_template)
{
    trace_peer *peer = trace_peer_new(10, "realm1", "alice", "user");
    const size_t wlen = TRACE_STORE_COPY_MAX + 1;
    wamp_buf *wire = buf_of(wlen);
    trace_store *one = trace_store_new(1, 1 << 20);
    ck_assert_uint_eq(trace_store_append_repeats(one, 9, NULL, 5, &peer, 1, 0, 0), 0); /* empty */
    append_msg(one, wire, NULL, NULL, 5, 0, 9);
    ck_assert_uint_eq(trace_store_append_repeats(one, 9, NULL, 6, &peer, 1, 0, 0), 0); /* pc */
    ck_assert_uint_eq(trace_store_append_repeats(one, 8, NULL, 5, &peer, 1, 0, 0), 0); /* key */
    ck_assert_uint_eq(trace_store_append_repeats(one, 9, NULL, 5, &peer, 1, 0, 0), 0); /* limit */
    ck_assert_uint_eq(trace_store_records(one), 1);
    ck_assert_uint_eq(trace_store_dropped(one), 0);
    ck_assert_uint_eq(trace_store_next_seq(one), 1);
    trace_store_free(one);
    /* Room for the template and a 3-byte record, not for two templates: the small one goes,
     * then the repeat is refused (the caller appends a copy, which evicts the template). */
    uint64_t cost = wlen + TRACE_RECORD_OVERHEAD;
    trace_store *tight = trace_store_new(10, cost + 3 + TRACE_RECORD_OVERHEAD);
    append(tight, 3, 1);
    append_msg(tight, wire, NULL, NULL, 5, 0, 9);
    trace_peer *two[] = {peer, peer};
    ck_assert_uint_eq(trace_store_append_repeats(tight, 9, NULL, 5, two, 2, 0, 0), 0);
    ck_assert_uint_eq(trace_store_records(tight), 1);
    ck_assert_uint_eq(trace_store_dropped(tight), 1);
    ck_assert_uint_eq(trace_store_get(tight, 1, &(trace_record){0})->pc_ns, 5);
    ck_assert_uint_eq(trace_peer_refs(peer), 1);
    ck_assert_uint_eq(wamp_buf_refs(wire), 2);
    trace_store_free(tight);
    ck_assert_uint_eq(wamp_buf_refs(wire), 1);
    trace_peer_unref(&peer);
    wamp_buf_unref(&wire);
}

END_TEST

/* Appends seq's received bytes (mixed_bytes()) as the capture path does, with peer; returns its
 * seq. */
static uint64_t append_mixed(trace_store *st, trace_peer *peer)
{
    unsigned char in[MIXED_MAX];
    uint64_t seq = trace_store_next_seq(st);
    trace_rec_view v = {.pc_ns = seq, .peer = peer, .dir = TRACE_RX, .wire_ser = WAMP_SER_JSON};
    v.len = mixed_bytes(seq, in);
    v.bytes = in;
    ck_assert_uint_eq(trace_store_append_view(st, &v), seq);
    return seq;
}

/* A fan-out's message stays held while any of its seqs is: messages appended to a full store
 * evict its seqs one by one (its own first, then each repeat), each dropping its peer only, and
 * the last one releases the message (its reference on the buffer); a rebuild of the ring while
 * the fan-out is partly evicted moves its entries and keeps every record readable. */
START_TEST(test_fanout_evicted_seq_by_seq)
{
    trace_peer *peers[4];
    peers_new(peers, 4, 20);
    trace_str *uri = trace_str_new("com.example.topic");
    wamp_buf *wire = buf_of(TRACE_STORE_COPY_MAX + 1); /* referenced, not copied */
    trace_store *st = trace_store_new(8, 1 << 20);
    ck_assert_uint_eq(append_msg(st, wire, peers[0], uri, 5, TRACE_CORR_HAS, 1), 0);
    trace_peer *run[5] = {peers[1], peers[2], peers[3], peers[0], peers[1]};
    ck_assert_uint_eq(trace_store_append_repeats(st, 1, uri, 5, given(run, 5), 5, TRACE_CORR_HAS,
                                                 TRACE_CORR_HAS | TRACE_CORR_LAST),
                      5);
    append_mixed(st, peers[2]); /* seqs 6, 7: the store is full */
    append_mixed(st, peers[3]);
    ck_assert_uint_eq(trace_store_records(st), 8);
    ck_assert_uint_eq(trace_store_messages(st), 3);
    ck_assert_uint_eq(trace_peer_refs(peers[0]), 3);
    static unsigned char big[50000]; /* received: copied into its entry */
    memset(big, 'b', sizeof(big));
    for (uint64_t k = 0; k < 6; k++) {
        if (k == 3) {
            /* Larger than the ring has room for: rebuilt, the fan-out half evicted. */
            trace_record r;
            memset(&r, 0, sizeof(r));
            r.peer = trace_peer_ref(peers[0]);
            r.bytes = big;
            r.len = sizeof(big);
            ck_assert_uint_eq(trace_store_append_take(st, &r), 8 + k);
        } else {
            append_mixed(st, peers[0]);
        }
        /* Seq k is gone; the fan-out's seqs k + 1 .. 5 are held and read as before. */
        ck_assert_uint_eq(trace_store_first_seq(st), k + 1);
        ck_assert_uint_eq(wamp_buf_refs(wire), k < 5 ? 2 : 1);
        ck_assert_uint_eq(trace_str_refs(uri), k < 5 ? 2 : 1);
        ck_assert_uint_eq(trace_store_messages(st), (k < 5 ? 1u : 0u) + 2 + k + 1);
        for (uint64_t s = k + 1; s <= 5; s++) {
            const trace_record *h = trace_store_get(st, s, &(trace_record){0});
            ck_assert_ptr_eq(h->peer, run[s - 1]);
            ck_assert_ptr_eq(h->wire, wire);
            ck_assert_ptr_eq(h->uri, uri);
            ck_assert_uint_eq(h->pc_ns, 5);
            ck_assert_uint_eq(h->flags, TRACE_CORR_HAS | (s == 5 ? TRACE_CORR_LAST : 0));
        }
        const trace_record *n = trace_store_get(st, 8 + k, &(trace_record){0});
        ck_assert_ptr_eq(n->peer, peers[0]);
        unsigned char want[MIXED_MAX];
        size_t len, wlen = k == 3 ? sizeof(big) : mixed_bytes(8 + k, want);
        const void *data = trace_record_data(n, &len);
        ck_assert_uint_eq(len, wlen);
        ck_assert_mem_eq(data, k == 3 ? big : want, k == 3 ? 64 : wlen);
    }
    ck_assert_uint_eq(trace_store_bytes(st),
                      trace_store_records(st) * TRACE_RECORD_OVERHEAD + held_len(st));
    trace_store_free(st);
    released(peers, 4, &uri, &wire);
}

END_TEST

#if ALLOC_COUNT_EVERY_MALLOC
/* Steps of a mixed load into st: received messages of 1..MIXED_MAX bytes, and every few steps a
 * sent one (one of wires[0..7), copied) followed by a fan-out of 1..7 further receivers. Returns
 * how many appends did not go as they should (no assertion inside: Check's allocate). */
static size_t mixed_load(trace_store *st, trace_peer *const *peers, trace_str *uri,
                         wamp_buf *const *wires, uint64_t from, uint64_t steps)
{
    unsigned char in[MIXED_MAX];
    size_t bad = 0;
    for (uint64_t i = from; i < from + steps; i++) {
        uint64_t seq = trace_store_next_seq(st);
        if (i % 5) {
            trace_rec_view v = {.pc_ns = seq, .peer = peers[i % 3], .dir = TRACE_RX};
            v.len = mixed_bytes(seq, in);
            v.bytes = in;
            bad += trace_store_append_view(st, &v) != seq;
            continue;
        }
        bad += append_msg(st, wires[i % 7], peers[0], uri, i, 0, i + 1) != seq;
        trace_peer *run[7] = {peers[1], peers[2], peers[0], peers[1], peers[2], peers[0], peers[1]};
        size_t n = 1 + i % 7;
        bad += trace_store_append_repeats(st, i + 1, uri, i, given(run, n), n, 0, 0) != n;
    }
    return bad;
}

/* A full store that has come around its ring allocates nothing per record: appends evict
 * (messages alone, fan-outs' seqs, their last ones), fan-outs replace the oldest, the ring
 * wraps. (Registered where the counter sees every malloc.) */
START_TEST(test_steady_state_allocates_nothing)
{
    alloc_count_install();
    trace_peer *peers[3];
    peers_new(peers, 3, 30);
    trace_str *uri = trace_str_new("com.example.topic");
    wamp_buf *wires[7];
    for (size_t i = 0; i < 7; i++) {
        wires[i] = buf_of(10 + i * 40);
    }
    trace_store *st = trace_store_new(500, UINT64_MAX);
    size_t before = alloc_count_mallocs();
    mixed_load(st, peers, uri, wires, 0, 20000);          /* fills, grows, comes down to size */
    ck_assert_uint_gt(alloc_count_mallocs() - before, 0); /* the counter sees the store's */
    before = alloc_count_mallocs();
    size_t bad = mixed_load(st, peers, uri, wires, 20000, 20000);
    ck_assert_uint_eq(alloc_count_mallocs() - before, 0);
    ck_assert_uint_eq(bad, 0);
    ck_assert_uint_eq(trace_store_records(st), 500);
    ck_assert_uint_eq(trace_store_bytes(st),
                      trace_store_records(st) * TRACE_RECORD_OVERHEAD + held_len(st));
    trace_store_free(st);
    for (size_t i = 0; i < 7; i++) {
        ck_assert_uint_eq(wamp_buf_refs(wires[i]), 1); /* copied: no reference kept */
        wamp_buf_unref(&wires[i]);
    }
    released(peers, 3, &uri, NULL);
}

END_TEST
#endif

START_TEST(test_ring_growth_and_wraparound)
{
    /* limit 1000: the ring grows 64, 128, ... 1000 and then wraps many times. */
    trace_store *st = trace_store_new(1000, UINT64_MAX);
    for (uint64_t i = 0; i < 5321; i++) {
        append(st, 0, i * 3);
        if (i % 97 == 0) {
            uint64_t first = trace_store_first_seq(st);
            for (uint64_t s = first; s <= i; s++) {
                ck_assert_uint_eq(trace_store_get(st, s, &(trace_record){0})->pc_ns, s * 3);
            }
        }
    }
    ck_assert_uint_eq(trace_store_records(st), 1000);
    ck_assert_uint_eq(trace_store_first_seq(st), 4321);
    ck_assert_uint_eq(trace_store_dropped(st), 4321);
    for (uint64_t s = 4321; s < 5321; s++) {
        ck_assert_uint_eq(trace_store_get(st, s, &(trace_record){0})->seq, s);
        ck_assert_uint_eq(trace_store_get(st, s, &(trace_record){0})->pc_ns, s * 3);
    }
    trace_store_free(st);
}

END_TEST

START_TEST(test_range_bounds_and_limit)
{
    trace_store *st = trace_store_new(100, 1 << 20);
    for (uint64_t i = 0; i < 10; i++) {
        append(st, 1, i);
    }
    uint64_t first, count;
    ck_assert(trace_store_range(st, 0, TRACE_SEQ_NONE, 100, &first, &count));
    ck_assert_uint_eq(first, 0);
    ck_assert_uint_eq(count, 10);
    ck_assert(trace_store_range(st, 3, 5, 100, &first, &count)); /* inclusive bounds */
    ck_assert_uint_eq(first, 3);
    ck_assert_uint_eq(count, 3);
    ck_assert(trace_store_range(st, 3, TRACE_SEQ_NONE, 4, &first, &count)); /* limit */
    ck_assert_uint_eq(first, 3);
    ck_assert_uint_eq(count, 4);
    ck_assert(trace_store_range(st, 9, 9, 1, &first, &count));
    ck_assert_uint_eq(count, 1);
    ck_assert(trace_store_range(st, 8, 1000, 100, &first, &count)); /* to beyond the newest */
    ck_assert_uint_eq(count, 2);
    ck_assert(!trace_store_range(st, 10, TRACE_SEQ_NONE, 100, &first, &count)); /* after end */
    ck_assert_uint_eq(count, 0);
    ck_assert(!trace_store_range(st, 5, 4, 100, &first, &count));            /* to < from */
    ck_assert(!trace_store_range(st, 0, TRACE_SEQ_NONE, 0, &first, &count)); /* limit 0 */
    trace_store_free(st);
    /* An empty store has an empty page. */
    st = trace_store_new(10, 1 << 20);
    ck_assert(!trace_store_range(st, 0, TRACE_SEQ_NONE, 10, &first, &count));
    trace_store_free(st);
}

END_TEST

START_TEST(test_paging_across_drops)
{
    trace_store *st = trace_store_new(10, 1 << 20);
    for (uint64_t i = 0; i < 25; i++) {
        append(st, 1, i);
    }
    /* from_seq older than the retention: the page starts at first_seq. */
    uint64_t first, count;
    ck_assert(trace_store_range(st, 0, TRACE_SEQ_NONE, 3, &first, &count));
    ck_assert_uint_eq(first, 15);
    ck_assert_uint_eq(count, 3);
    /* A client paging from 0 (next from = last seq + 1) sees each held seq once, in order. */
    uint64_t from = 0, expect = 15, pages = 0;
    while (trace_store_range(st, from, TRACE_SEQ_NONE, 3, &first, &count)) {
        for (uint64_t s = first; s < first + count; s++) {
            ck_assert_uint_eq(trace_store_get(st, s, &(trace_record){0})->seq, expect++);
        }
        from = first + count;
        pages++;
        /* Traffic continues between pages: more drops, still contiguous and in order. */
        if (pages == 2) {
            for (int k = 0; k < 4; k++) {
                append(st, 1, 25 + (uint64_t)k);
            }
            expect = from > trace_store_first_seq(st) ? from : trace_store_first_seq(st);
        }
    }
    ck_assert_uint_eq(expect, 29);
    ck_assert_uint_eq(trace_store_next_seq(st), 29);
    trace_store_free(st);
}

END_TEST

/* trace_store_skip(): a seq for a record kept elsewhere (a persisted trace's files). The store
 * holds nothing of it; records still held are dropped first, so held seqs stay contiguous. */
START_TEST(test_skip_gives_seqs_without_holding)
{
    trace_store *st = trace_store_new(10, 1 << 20);
    ck_assert_uint_eq(trace_store_skip(st), 0);
    ck_assert_uint_eq(trace_store_skip(st), 1);
    ck_assert_uint_eq(trace_store_records(st), 0);
    ck_assert_uint_eq(trace_store_dropped(st), 0);
    ck_assert_uint_eq(trace_store_first_seq(st), 2);
    ck_assert_uint_eq(trace_store_next_seq(st), 2);
    append(st, 4, 7);
    append(st, 4, 8);
    ck_assert_ptr_nonnull(trace_store_get(st, 3, &(trace_record){0}));
    ck_assert_uint_eq(trace_store_skip(st), 4);
    ck_assert_uint_eq(trace_store_records(st), 0);
    ck_assert_uint_eq(trace_store_dropped(st), 2);
    ck_assert_uint_eq(trace_store_bytes(st), 0);
    ck_assert_ptr_null(trace_store_get(st, 3, &(trace_record){0}));
    append(st, 4, 9);
    ck_assert_uint_eq(trace_store_get(st, 5, &(trace_record){0})->pc_ns, 9);
    trace_store_free(st);
}

END_TEST

static Suite *trace_store_suite(void)
{
    Suite *s = suite_create("trace_store");
    TCase *tc = tcase_create("store");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_seq_from_zero_without_gaps);
    tcase_add_test(tc, test_count_limit_drops_oldest);
    tcase_add_test(tc, test_byte_limit_drops_oldest);
    tcase_add_test(tc, test_record_over_budget_alone);
    tcase_add_test(tc, test_held_bytes_bounded_whatever_the_budget);
    tcase_add_test(tc, test_references_released_on_drop_and_free);
    tcase_add_test(tc, test_eviction_releases_every_reference);
    tcase_add_test(tc, test_repeat_shares_message);
    tcase_add_test(tc, test_repeat_shares_copied_bytes);
    tcase_add_test(tc, test_repeat_refused_without_template);
    tcase_add_test(tc, test_fanout_evicted_seq_by_seq);
#if ALLOC_COUNT_EVERY_MALLOC
    tcase_add_test(tc, test_steady_state_allocates_nothing);
#endif
    tcase_add_test(tc, test_ring_growth_and_wraparound);
    tcase_add_test(tc, test_received_bytes_copied_into_the_byte_ring);
    tcase_add_test(tc, test_byte_ring_shrinks_after_a_burst);
    tcase_add_test(tc, test_ring_fitted_when_full);
    tcase_add_test(tc, test_range_bounds_and_limit);
    tcase_add_test(tc, test_paging_across_drops);
    tcase_add_test(tc, test_skip_gives_seqs_without_holding);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trace_store_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
