/* check_trace_store_model.c: the store against a model of what it must hold.
 *
 * Random runs of appends (received bytes, small and large sent buffers, records without bytes,
 * records over the budget) and fan-out repeats go to a store and to a plain list of the records
 * the store's contract says it holds (trace_store.h: the newest ones within `limit` records and
 * `max_bytes` bytes, oldest dropped first, a repeat never evicting its own message). After every
 * step the two must agree on every held record, field by field and byte by byte, and on the seqs,
 * the drops and the bytes counted. Limits and budgets are chosen so that runs cover the store's
 * every path: growing, full at its limit (the steady state every append of a flight recorder
 * takes), over its budget, its byte ring wrapping and rebuilt, fan-outs held among single
 * messages. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "trace_record.h"
#include "trace_store.h"

/* Fails the test with the condition's text unless it holds. (Check's own ck_assert_*() report each
 * assertion passed to the runner: millions here.) */
#define EXPECT(cond, seq)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            ck_abort_msg("seq %llu: %s", (unsigned long long)(seq), #cond); \
        }                                                                   \
    } while (0)

/* One record as the model holds it. */
typedef struct model_rec {
    uint64_t seq;
    uint64_t pc_ns;
    uint64_t ts_ns;
    trace_peer *peer; /* borrowed from the run's pool */
    trace_str *uri;   /* borrowed from the run's pool */
    const char *dropped;
    unsigned char *data; /* owned copy of the bytes (NULL: none) */
    size_t len;
    uint32_t ser_bytes[WAMP_SER_COUNT];
    uint8_t corr[TRACE_UUID_LEN];
    uint8_t dir;
    uint8_t msg_type;
    uint8_t wire_ser;
    uint8_t flags;
    uint32_t cost;
    uint64_t msg; /* the message it is a record of: its own step, or its repeat's template's */
} model_rec;

typedef struct model {
    model_rec *recs; /* oldest first */
    size_t n;
    size_t cap;
    size_t limit;
    uint64_t max_bytes;
    uint64_t next_seq;
    uint64_t dropped;
    uint64_t bytes;
} model;

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (uint32_t)((rng_state >> 33) % n);
}

static void model_drop_oldest(model *m)
{
    m->bytes -= m->recs[0].cost;
    free(m->recs[0].data);
    memmove(m->recs, m->recs + 1, (m->n - 1) * sizeof(*m->recs));
    m->n--;
    m->dropped++;
}

/* Appends r (its data copied), evicting as the contract says; false if r itself is dropped. */
static void model_append(model *m, const model_rec *r)
{
    if (r->cost > m->max_bytes) {
        while (m->n) {
            model_drop_oldest(m);
        }
        m->next_seq++;
        m->dropped++;
        return;
    }
    while (m->n && (m->n >= m->limit || m->bytes + r->cost > m->max_bytes)) {
        model_drop_oldest(m);
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->recs = realloc(m->recs, m->cap * sizeof(*m->recs));
        ck_assert_ptr_nonnull(m->recs);
    }
    model_rec *d = &m->recs[m->n++];
    *d = *r;
    d->seq = m->next_seq++;
    if (r->data) {
        d->data = malloc(r->len);
        EXPECT(d->data != NULL, d->seq);
        memcpy(d->data, r->data, r->len);
    }
    m->bytes += r->cost;
}

/* A repeat of the newest record with peer and flags: as an append, except that it stops (false)
 * where an eviction would take the newest record itself (the message repeated). */
static bool model_repeat(model *m, trace_peer *peer, uint8_t flags)
{
    model_rec r = m->recs[m->n - 1];
    while (m->n >= m->limit || m->bytes + r.cost > m->max_bytes) {
        if (m->n == 1) {
            return false;
        }
        model_drop_oldest(m);
    }
    r.peer = peer;
    r.flags = flags;
    model_append(m, &r);
    return true;
}

/* Every record the store holds is the model's, and the counts agree. */
static void check_same(const trace_store *st, const model *m)
{
    EXPECT(trace_store_next_seq(st) == m->next_seq, m->next_seq);
    EXPECT(trace_store_records(st) == m->n, m->next_seq);
    size_t msgs = 0; /* (a message's records are consecutive) */
    for (size_t i = 0; i < m->n; i++) {
        msgs += i == 0 || m->recs[i].msg != m->recs[i - 1].msg;
    }
    EXPECT(trace_store_messages(st) == msgs, m->next_seq);
    EXPECT(trace_store_dropped(st) == m->dropped, m->next_seq);
    EXPECT(trace_store_bytes(st) == m->bytes, m->next_seq);
    for (size_t i = 0; i < m->n; i++) {
        const model_rec *w = &m->recs[i];
        trace_record out;
        const trace_record *h = trace_store_get(st, w->seq, &out);
        EXPECT(h != NULL, w->seq);
        EXPECT(h->seq == w->seq, w->seq);
        EXPECT(h->pc_ns == w->pc_ns, w->seq);
        EXPECT(h->ts_ns == w->ts_ns, w->seq);
        EXPECT(h->peer == w->peer, w->seq);
        EXPECT(h->uri == w->uri, w->seq);
        EXPECT(h->dropped == w->dropped, w->seq);
        EXPECT(h->dir == w->dir, w->seq);
        EXPECT(h->msg_type == w->msg_type, w->seq);
        EXPECT(h->flags == w->flags, w->seq);
        EXPECT(memcmp(h->ser_bytes, w->ser_bytes, sizeof(w->ser_bytes)) == 0, w->seq);
        EXPECT(!(w->flags & TRACE_CORR_HAS) || memcmp(h->corr, w->corr, TRACE_UUID_LEN) == 0,
               w->seq);
        size_t len;
        const void *data = trace_record_data(h, &len);
        EXPECT(len == w->len, w->seq);
        EXPECT(!w->len || h->wire_ser == w->wire_ser, w->seq);
        EXPECT(!w->len || memcmp(data, w->data, w->len) == 0, w->seq);
    }
}

#define POOL 3

/* One random run: steps appends and repeats on a store of limit records and max_bytes bytes. */
static void run(uint64_t seed, size_t limit, uint64_t max_bytes, size_t steps)
{
    rng_state = seed;
    trace_peer *peers[POOL];
    trace_str *uris[POOL];
    for (int i = 0; i < POOL; i++) {
        peers[i] = trace_peer_new(100 + (uint64_t)i, "realm1", "alice", "user");
        uris[i] = trace_str_new(i == 0 ? "com.example.a" : i == 1 ? "com.example.bb" : "t");
    }
    static const char *const drops[] = {NULL, NULL, NULL, "queue_full"};
    trace_store *st = trace_store_new(limit, max_bytes);
    model m = {.limit = limit, .max_bytes = max_bytes};
    unsigned char *src = malloc(TRACE_STORE_COPY_MAX * 2 + 64);
    ck_assert_ptr_nonnull(src);
    uint64_t key = 0, keyed = UINT64_MAX; /* the key of the newest message, if repeatable */
    for (size_t step = 0; step < steps; step++) {
        uint32_t what = rnd(100);
        if (what < 25 && keyed == m.next_seq - 1 && m.n) {
            /* A fan-out's further receivers. */
            trace_peer *run_peers[8];
            size_t n = 1 + rnd(8);
            for (size_t i = 0; i < n; i++) {
                run_peers[i] = peers[rnd(POOL)];
            }
            uint8_t flags = m.recs[m.n - 1].flags;
            uint8_t last = (uint8_t)(flags | (rnd(2) ? TRACE_CORR_LAST : 0));
            const model_rec *newest = &m.recs[m.n - 1];
            for (size_t i = 0; i < n; i++) {
                (void)trace_peer_ref(run_peers[i]); /* the store takes those it appends */
            }
            size_t k = trace_store_append_repeats(st, key, newest->uri, newest->pc_ns, run_peers, n,
                                                  flags, last);
            size_t want = 0;
            while (want < n && model_repeat(&m, run_peers[want], want == n - 1 ? last : flags)) {
                want++;
            }
            EXPECT(k == want, m.next_seq);
            for (size_t i = k; i < n; i++) {
                trace_peer *p = run_peers[i];
                trace_peer_unref(&p);
            }
            keyed = want == n ? m.next_seq - 1 : UINT64_MAX;
            check_same(st, &m);
            continue;
        }
        /* A message: sizes around the small copy, the 64-byte inline copy and the copy limit. */
        uint32_t kind = rnd(20);
        size_t len = kind == 0   ? 0
                     : kind == 1 ? TRACE_STORE_COPY_MAX + 1 + rnd(TRACE_STORE_COPY_MAX)
                     : kind < 4  ? 65 + rnd(600)
                                 : 1 + rnd(64);
        for (size_t i = 0; i < len; i++) {
            src[i] = (unsigned char)rnd(256);
        }
        bool as_wire = len && (len > TRACE_STORE_COPY_MAX || rnd(2));
        wamp_buf *wire = NULL;
        if (as_wire) {
            wire = wamp_buf_new(len);
            ck_assert_ptr_nonnull(wire);
            memcpy(wamp_buf_reserve(&wire, len), src, len);
            wamp_buf_commit(wire, len);
        }
        model_rec r = {
                .pc_ns = 1000 + step,
                .ts_ns = 5000 + step * 3,
                .peer = peers[rnd(POOL)],
                .uri = rnd(4) ? uris[rnd(POOL)] : NULL,
                .dropped = drops[rnd(4)],
                .data = len ? src : NULL,
                .len = len,
                .dir = (uint8_t)(rnd(2) ? TRACE_TX : TRACE_RX),
                .msg_type = (uint8_t)(1 + rnd(70)),
                .wire_ser = (uint8_t)(1 + rnd(3)),
                .flags = (uint8_t)(rnd(3) ? TRACE_CORR_HAS | (rnd(4) ? 0 : TRACE_CORR_ANCHOR) : 0),
                .cost = (uint32_t)(len + TRACE_RECORD_OVERHEAD),
                .msg = step};
        for (int i = 0; i < WAMP_SER_COUNT; i++) {
            r.ser_bytes[i] = rnd(5000);
        }
        for (int i = 0; i < TRACE_UUID_LEN; i++) {
            r.corr[i] = (uint8_t)rnd(256);
        }
        bool repeatable = wire && rnd(2);
        key = repeatable ? key + 1 : key;
        trace_rec_view v = {.pc_ns = r.pc_ns,
                            .ts_ns = r.ts_ns,
                            .peer = r.peer,
                            .uri = r.uri,
                            .dropped = r.dropped,
                            .corr = r.corr,
                            .wire = wire,
                            .bytes = as_wire ? NULL : r.data,
                            .len = as_wire ? 0 : len,
                            .dir = r.dir,
                            .msg_type = r.msg_type,
                            .wire_ser = r.wire_ser,
                            .flags = r.flags,
                            .key = repeatable ? key : 0};
        memcpy(v.ser_bytes, r.ser_bytes, sizeof(v.ser_bytes));
        uint64_t seq = trace_store_append_view(st, &v);
        EXPECT(seq == m.next_seq, seq);
        wamp_buf_unref(&wire); /* the store copied it or holds its own reference */
        model_append(&m, &r);
        memset(src, 0xee, len); /* the caller's bytes are only borrowed */
        keyed = repeatable && m.n && m.recs[m.n - 1].seq == m.next_seq - 1 ? m.next_seq - 1
                                                                           : UINT64_MAX;
        check_same(st, &m);
    }
    trace_store_free(st);
    for (size_t i = 0; i < m.n; i++) {
        free(m.recs[i].data);
    }
    free(m.recs);
    free(src);
    for (int i = 0; i < POOL; i++) {
        /* Every reference the store took is back. */
        ck_assert_uint_eq(trace_peer_refs(peers[i]), 1);
        ck_assert_uint_eq(trace_str_refs(uris[i]), 1);
        trace_peer_unref(&peers[i]);
        trace_str_unref(&uris[i]);
    }
}

/* Full at its limit long before its budget: the steady state, with fan-outs among the singles. */
START_TEST(test_model_limit_bound)
{
    for (uint64_t seed = 1; seed <= 6; seed++) {
        run(seed, 1 + seed * 7, UINT64_MAX, 3000);
    }
}

END_TEST

/* Within a budget that a few records fill: evictions by bytes, records over the budget alone. */
START_TEST(test_model_budget_bound)
{
    for (uint64_t seed = 11; seed <= 16; seed++) {
        run(seed, 1000, 1500 + seed * 700, 3000);
    }
}

END_TEST

/* Both bounds near each other, and the smallest stores (one and two records). */
START_TEST(test_model_both_bounds)
{
    run(21, 1, UINT64_MAX, 500);
    run(22, 2, UINT64_MAX, 500);
    run(23, 2, 400, 500);
    for (uint64_t seed = 24; seed <= 28; seed++) {
        run(seed, 10 + seed, 20 * (TRACE_RECORD_OVERHEAD + 40), 3000);
    }
}

END_TEST

static Suite *trace_store_model_suite(void)
{
    Suite *s = suite_create("trace_store_model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_model_limit_bound);
    tcase_add_test(tc, test_model_budget_bound);
    tcase_add_test(tc, test_model_both_bounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trace_store_model_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
