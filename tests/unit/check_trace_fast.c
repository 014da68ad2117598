/* check_trace_fast.c: the hub's fast path (trace_hub_record_fast()) records exactly what the
 * general path (trace_hub_match() + trace_hub_record_matched()) records: a property test over
 * random message sequences, fed the way the router feeds them (the fast path first, the general
 * path for what it declines) to one hub and through the general path alone to another. The same
 * test checks a fan-out's repeats (trace_hub_repeat(): seq entries sharing one message in a store)
 * against a record of its own for every receiver. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "tmp_dir.h"
#include "trace.h"
#include "trace_hub.h"
#include "trace_record.h"
#include "trace_render.h"
#include "trace_store.h"
#include "trace_strip.h"
#include "wamp_buf.h"
#include "wamp_codec.h"
#include "wamp_types.h"

#define PC0     ((uint64_t)5000000000u)
#define TS0     ((uint64_t)1700000000000000000u)
#define N_PEERS 5

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (uint32_t)((rng_state >> 33) % n);
}

/* One side of the comparison: a hub with one trace, and the action URI slot the router keeps. */
typedef struct side {
    char dir[256]; /* a persisted trace's data directory ("" for none) */
    trace_hub *hub;
    trace *t;
    trace_str *slot;
    bool fast;   /* fed the way the router feeds it: the fast path first */
    bool repeat; /* a fan-out's further receivers as repeats (trace_hub_repeat()) */
    size_t fast_taken;
} side;

static void side_init(side *sd, const char *opts, bool fast, bool repeat)
{
    memset(sd, 0, sizeof(*sd));
    sd->hub = trace_hub_new(4, "mgmt");
    ck_assert_ptr_nonnull(sd->hub);
    if (strstr(opts, "\"persist\": true")) {
        tmp_dir_make(sd->dir, sizeof(sd->dir), "check_trace_fast");
        trace_persist_config pc = {.data_dir = sd->dir};
        ck_assert_int_eq(trace_hub_set_persist(sd->hub, &pc), WAMP_OK);
    }
    json_t *j = json_loads(opts, 0, NULL);
    ck_assert_ptr_nonnull(j);
    char why[200] = "";
    ck_assert_int_eq(trace_hub_start(sd->hub, "fr", j, PC0, TS0, &sd->t, why, sizeof(why)),
                     WAMP_OK);
    json_decref(j);
    sd->fast = fast;
    sd->repeat = repeat;
}

/* A message as the router has it. */
typedef struct msg {
    trace_dir dir;
    int type;
    const char *realm;
    trace_peer *peer;
    uint64_t session_id;
    const char *uri; /* the action's */
    const uint8_t *corr;
    bool anchor;
    bool last;
    wamp_ser ser;
    wamp_buf *wire;    /* tx */
    const void *bytes; /* rx */
    size_t len;
    json_t *json; /* what the router passes: NULL for a sent message it encoded from fields */
    uint32_t ser_bytes[WAMP_SER_COUNT];
    const char *dropped;
    uint64_t pc_ns;
} msg;

static void record_general(side *sd, const msg *m)
{
    trace_ctx c = {.direction = m->dir,
                   .msg_type = m->type,
                   .session_id = m->session_id,
                   .realm = m->realm,
                   .authid = "alice",
                   .authrole = "user",
                   .uri = m->uri,
                   .correlation = m->corr,
                   .correlation_is_anchor = m->anchor};
    if (trace_hub_match(sd->hub, &c) == 0) {
        return;
    }
    trace_input in = {.pc_ns = m->pc_ns,
                      .ts_ns = m->pc_ns + TS0,
                      .peer = m->peer,
                      .uri_slot = &sd->slot,
                      .correlation = m->corr,
                      .correlation_is_anchor = m->anchor,
                      .correlation_is_last = m->last,
                      .ser = m->ser,
                      .wire = m->wire,
                      .bytes = m->bytes,
                      .len = m->len,
                      .msg = m->json,
                      .dropped = m->dropped};
    for (int i = 0; i < WAMP_SER_COUNT; i++) {
        in.ser_bytes[i] = m->ser_bytes[i];
    }
    (void)trace_hub_record_matched(sd->hub, &c, &in);
}

static void record(side *sd, const msg *m)
{
    if (sd->fast && trace_hub_fast_ready(sd->hub)) {
        if (trace_hub_is_mgmt_realm(sd->hub, m->realm)) {
            /* As the router: the management realm's messages are none of the fast trace's. */
            sd->fast_taken++;
            return;
        }
        trace_fast f;
        memset(&f, 0, sizeof(f));
        if (!sd->slot && m->uri) { /* the action's URI, as the router makes it */
            sd->slot = trace_hub_uri(sd->hub, m->uri, strlen(m->uri));
        }
        trace_rec_view *v = &f.v;
        v->pc_ns = m->pc_ns;
        v->ts_ns = m->pc_ns + TS0;
        v->peer = m->peer;
        v->uri = sd->slot;
        v->dropped = m->dropped;
        if (m->corr) {
            v->corr = m->corr;
            v->flags = (uint8_t)(TRACE_CORR_HAS | (m->anchor ? TRACE_CORR_ANCHOR : 0) |
                                 (m->last ? TRACE_CORR_LAST : 0));
        }
        v->wire = m->wire;
        v->bytes = m->bytes;
        v->len = m->len;
        v->dir = (uint8_t)m->dir;
        v->msg_type = (uint8_t)m->type;
        v->wire_ser = (uint8_t)m->ser;
        memcpy(v->ser_bytes, m->ser_bytes, sizeof(v->ser_bytes));
        if (trace_hub_record_fast(sd->hub, &f)) {
            sd->fast_taken++;
            return;
        }
    }
    record_general(sd, m);
}

/* The message array of type with a string payload of plen octets (none for SUBSCRIBE). */
static json_t *message_of(int type, uint32_t id, size_t plen)
{
    char *p = malloc(plen + 1);
    ck_assert_ptr_nonnull(p);
    memset(p, 'a' + (int)(id % 26), plen);
    p[plen] = '\0';
    json_t *args = json_pack("[s]", p);
    free(p);
    json_t *j = NULL;
    switch (type) {
    case WAMP_MSG_PUBLISH:
        j = json_pack("[i,i,{},s,o]", type, id, "com.example.topic", args);
        break;
    case WAMP_MSG_EVENT:
        j = json_pack("[i,i,i,{},o]", type, 7, id, args);
        break;
    case WAMP_MSG_CALL:
        j = json_pack("[i,i,{},s,o]", type, id, "com.example.proc", args);
        break;
    case WAMP_MSG_INVOCATION:
        j = json_pack("[i,i,i,{},o]", type, id, 9, args);
        break;
    case WAMP_MSG_YIELD:
    case WAMP_MSG_RESULT:
        j = json_pack("[i,i,{},o]", type, id, args);
        break;
    case WAMP_MSG_ERROR:
        j = json_pack("[i,i,i,{},s,o]", type, WAMP_MSG_CALL, id, "wamp.error.oops", args);
        break;
    case WAMP_MSG_SUBSCRIBE:
        json_decref(args);
        j = json_pack("[i,i,{},s]", type, id, "com.example.topic");
        break;
    case WAMP_MSG_CHALLENGE:
        json_decref(args);
        j = json_pack("[i,s,{s:s}]", type, "wampcra", "challenge", "secret");
        break;
    default: /* AUTHENTICATE */
        json_decref(args);
        j = json_pack("[i,s,{}]", type, "signature");
        break;
    }
    ck_assert_ptr_nonnull(j);
    return j;
}

static const int rx_types[] = {WAMP_MSG_PUBLISH,   WAMP_MSG_CALL,  WAMP_MSG_YIELD,
                               WAMP_MSG_SUBSCRIBE, WAMP_MSG_ERROR, WAMP_MSG_AUTHENTICATE};
static const int tx_types[] = {WAMP_MSG_EVENT, WAMP_MSG_INVOCATION, WAMP_MSG_RESULT, WAMP_MSG_ERROR,
                               WAMP_MSG_CHALLENGE};

/* Both stores hold the same seqs, drops and bytes. */
static void assert_same_counts(const side *a, const side *b)
{
    const trace_store *sa = trace_get_store(a->t), *sb = trace_get_store(b->t);
    ck_assert_uint_eq(trace_store_first_seq(sa), trace_store_first_seq(sb));
    ck_assert_uint_eq(trace_store_next_seq(sa), trace_store_next_seq(sb));
    ck_assert_uint_eq(trace_store_dropped(sa), trace_store_dropped(sb));
    ck_assert_uint_eq(trace_store_bytes(sa), trace_store_bytes(sb));
}

/* Both stores hold the same records: every field, bytes by content, URIs by text; in the same
 * message entries unless one side does without repeats. */
static void assert_same(const side *a, const side *b)
{
    const trace_store *sa = trace_get_store(a->t), *sb = trace_get_store(b->t);
    assert_same_counts(a, b);
    if (a->repeat == b->repeat) {
        ck_assert_uint_eq(trace_store_messages(sa), trace_store_messages(sb));
    }
    for (uint64_t s = trace_store_first_seq(sa); s < trace_store_next_seq(sa); s++) {
        trace_record ra, rb;
        ck_assert_ptr_nonnull(trace_store_get(sa, s, &ra));
        ck_assert_ptr_nonnull(trace_store_get(sb, s, &rb));
        ck_assert_uint_eq(ra.pc_ns, rb.pc_ns);
        ck_assert_uint_eq(ra.ts_ns, rb.ts_ns);
        ck_assert_ptr_eq(ra.peer, rb.peer);
        ck_assert(!ra.uri == !rb.uri);
        if (ra.uri) {
            ck_assert_str_eq(trace_str_get(ra.uri), trace_str_get(rb.uri));
        }
        ck_assert_ptr_eq(ra.dropped, rb.dropped);
        ck_assert_mem_eq(ra.ser_bytes, rb.ser_bytes, sizeof(ra.ser_bytes));
        ck_assert_uint_eq(ra.flags, rb.flags);
        if (ra.flags & TRACE_CORR_HAS) {
            ck_assert_mem_eq(ra.corr, rb.corr, TRACE_UUID_LEN);
        }
        ck_assert_uint_eq(ra.dir, rb.dir);
        ck_assert_uint_eq(ra.msg_type, rb.msg_type);
        ck_assert_uint_eq(ra.wire_ser, rb.wire_ser);
        size_t la, lb;
        const void *da = trace_record_data(&ra, &la);
        const void *db = trace_record_data(&rb, &lb);
        ck_assert_uint_eq(la, lb);
        ck_assert(!da == !db);
        if (la) {
            ck_assert_mem_eq(da, db, la);
            /* A CHALLENGE's secret is never kept, whether the router built a list or not. */
            ck_assert_ptr_null(memmem(da, la, "secret", 6));
        }
    }
}

/* Runs n random messages with seed and trace options opts through side a (the router's way) and
 * side b: through the general path alone (general: true), or the router's way without repeats. */
static void run(uint64_t seed, const char *opts, size_t n, bool general)
{
    rng_state = seed;
    side a, b;
    side_init(&a, opts, true, true);
    side_init(&b, opts, !general, general);
    trace_peer *peers[N_PEERS];
    for (int i = 0; i < N_PEERS; i++) {
        peers[i] = trace_peer_new(100 + (uint64_t)i, "realm1", "alice", "user");
    }
    uint8_t corr[TRACE_UUID_LEN] = {0};
    bool corr_set = false;
    const char *uris[] = {"com.example.a", "com.example.b", NULL};
    const char *uri = NULL;
    uint64_t pc = 1000;
    size_t repeats = 0;
    for (size_t i = 0; i < n; i++) {
        /* A new action now and then: its URI slot starts empty on both sides. */
        if (rnd(4) == 0) {
            trace_str_unref(&a.slot);
            trace_str_unref(&b.slot);
            corr_set = rnd(4) != 0;
            corr[0] = (uint8_t)i;
            corr[1] = (uint8_t)(i >> 8);
            uri = uris[rnd(3)];
        }
        pc += 1 + rnd(3) / 2; /* messages of one instant share a clock reading */
        msg m = {.dir = rnd(2) ? TRACE_RX : TRACE_TX,
                 .realm = rnd(10) ? "realm1" : "mgmt",
                 .uri = uri,
                 .corr = corr_set ? corr : NULL,
                 .anchor = corr_set && rnd(5) == 0,
                 .last = corr_set && rnd(5) == 0,
                 .ser = (wamp_ser)(1 + rnd(3)),
                 .pc_ns = pc};
        size_t who = rnd(N_PEERS);
        m.peer = peers[who];
        m.session_id = 100 + who;
        m.type = m.dir == TRACE_RX ? rx_types[rnd(6)] : tx_types[rnd(5)];
        m.anchor = m.anchor && m.dir == TRACE_RX; /* as the router: only a received anchor */
        size_t plen = rnd(8) == 0 ? 2000 + rnd(3000) : rnd(60);
        m.json = message_of(m.type, (uint32_t)i + 1, plen);
        wamp_buf *enc = NULL;
        ck_assert_int_eq(wamp_codec_encode(m.ser, m.json, &enc), WAMP_OK);
        json_t *built = m.json;
        if (m.dir == TRACE_TX && rnd(2)) {
            m.json = NULL; /* encoded without a jansson list (CHALLENGEs too: decoded to redact) */
        }
        if (m.dir == TRACE_TX) {
            m.wire = enc;
            m.dropped = rnd(8) == 0 ? "queue_full" : NULL;
            if (rnd(2)) {
                m.ser_bytes[m.ser] = (uint32_t)wamp_buf_len(enc);
                m.ser_bytes[1 + (m.ser % 3)] = 1 + rnd(500);
            }
        } else {
            m.bytes = wamp_buf_cdata(enc);
            m.len = wamp_buf_len(enc);
        }
        record(&a, &m);
        record(&b, &m);
        /* A fan-out: the same EVENT to further sessions, as the router repeats it. */
        if (m.type == WAMP_MSG_EVENT && !m.dropped && rnd(2)) {
            size_t k = rnd(12);
            for (size_t r = 0; r < k; r++) {
                bool last = corr_set && r + 1 == k && rnd(3) == 0;
                trace_peer *p = peers[rnd(N_PEERS)];
                msg again = m;
                again.peer = p;
                again.last = last;
                bool ra = trace_hub_repeat(a.hub, m.wire, p, m.corr, m.pc_ns, last);
                if (b.repeat) {
                    ck_assert_int_eq(trace_hub_repeat(b.hub, m.wire, p, m.corr, m.pc_ns, last), ra);
                }
                if (!ra) {
                    record(&a, &again);
                }
                if (!ra || !b.repeat) {
                    record(&b, &again);
                }
                repeats += ra;
                if (rnd(4) == 0) {
                    /* Appended now, not only by the next message recorded. */
                    trace_hub_flush(a.hub);
                    trace_hub_flush(b.hub);
                }
            }
            if (!a.dir[0]) {
                /* The same evictions at every step, not only the same records in the end. */
                trace_hub_flush(a.hub);
                trace_hub_flush(b.hub);
                assert_same_counts(&a, &b);
            }
        }
        json_decref(built);
        wamp_buf_unref(&enc);
    }
    trace_hub_flush(a.hub);
    trace_hub_flush(b.hub);
    /* The fast path did serve (and declined some: large messages, secrets). */
    ck_assert_uint_gt(a.fast_taken, n / 2);
    ck_assert_uint_lt(a.fast_taken, n);
    ck_assert_uint_gt(repeats, 0);
    if (!a.dir[0]) {
        assert_same(&a, &b);
    }
    /* What a management client reads: the same records, persisted or not. */
    json_t *ra = trace_render_records(a.t, 0, TRACE_SEQ_NONE, 100000);
    json_t *rb = trace_render_records(b.t, 0, TRACE_SEQ_NONE, 100000);
    ck_assert_uint_gt(json_array_size(ra), 5);
    ck_assert(json_equal(ra, rb));
    json_decref(ra);
    json_decref(rb);
    trace_str_unref(&a.slot);
    trace_str_unref(&b.slot);
    trace_hub_free(a.hub);
    trace_hub_free(b.hub);
    for (side *sd = &a; sd; sd = sd == &a ? &b : NULL) {
        if (sd->dir[0]) {
            tmp_dir_remove(sd->dir);
        }
    }
    for (int i = 0; i < N_PEERS; i++) {
        ck_assert_uint_eq(trace_peer_refs(peers[i]), 1);
        trace_peer_unref(&peers[i]);
    }
}

/* The flight recorder's options: no payload (large messages stripped by the general path). */
START_TEST(test_fast_equals_general_without_payload)
{
    for (uint64_t seed = 1; seed <= 6; seed++) {
        run(seed, "{\"trace_app_payload\": false}", 3000, true);
    }
}

END_TEST

/* A trace of everything with payload, in a small store that evicts (limit and byte budget). */
START_TEST(test_fast_equals_general_evicting)
{
    for (uint64_t seed = 10; seed <= 15; seed++) {
        run(seed, "{\"trace_app_payload\": true, \"limit\": 97, \"max_bytes\": 60000}", 3000, true);
    }
}

END_TEST

/* A persisted trace of everything (the fast path encodes into its write buffer). */
START_TEST(test_fast_equals_general_persisted)
{
    for (uint64_t seed = 20; seed <= 22; seed++) {
        run(seed, "{\"persist\": true, \"trace_app_payload\": false}", 2000, true);
    }
}

END_TEST

/* A fan-out's repeats hold what a record of its own per receiver holds: the same seqs, records,
 * drops and bytes, in stores that evict by count and by bytes (messages of different sizes, so
 * that a run of repeats stops part-way where the budget does not hold the next one), in one so
 * small that a fan-out outgrows it (repeats that would evict their own message), in one that
 * keeps no payload, and persisted (a full record of a CBOR message read back with its CBOR size,
 * as its repeats are). */
START_TEST(test_repeats_equal_records)
{
    static const char *const opts[] = {
            "{\"trace_app_payload\": true, \"limit\": 97, \"max_bytes\": 60000}",
            "{\"trace_app_payload\": true, \"limit\": 7, \"max_bytes\": 12000}",
            "{\"trace_app_payload\": true, \"limit\": 500, \"max_bytes\": 9000}",
            "{\"trace_app_payload\": false, \"limit\": 50}",
            "{\"persist\": true, \"trace_app_payload\": true}",
    };
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        for (uint64_t seed = 30; seed <= 32; seed++) {
            run(seed + 10 * i, opts[i], 2000, false);
        }
    }
}

END_TEST

/* Which trace the fast path serves: the only running one, keeping everything, without
 * max_records (in memory or persisted); none when another runs, when it filters, or has
 * max_records. */
START_TEST(test_fast_ready_only_for_one_keep_all_trace)
{
    trace_hub *h = trace_hub_new(4, "mgmt");
    trace *t = NULL, *u = NULL;
    ck_assert(!trace_hub_fast_ready(h));
    ck_assert_int_eq(trace_hub_start(h, "a", NULL, PC0, TS0, &t, NULL, 0), WAMP_OK);
    ck_assert(trace_hub_fast_ready(h));
    json_t *filtered = json_loads("{\"direction\": \"rx\"}", 0, NULL);
    ck_assert_int_eq(trace_hub_start(h, "b", filtered, PC0, TS0, &u, NULL, 0), WAMP_OK);
    ck_assert(!trace_hub_fast_ready(h)); /* two run */
    ck_assert_int_eq(trace_hub_stop(h, "a", PC0, TS0, NULL), WAMP_OK);
    ck_assert(!trace_hub_fast_ready(h)); /* b filters */
    ck_assert_int_eq(trace_hub_stop(h, "b", PC0, TS0, NULL), WAMP_OK);
    ck_assert_int_eq(trace_hub_delete(h, "a"), WAMP_OK);
    ck_assert_int_eq(trace_hub_delete(h, "b"), WAMP_OK);
    json_t *capped = json_loads("{\"max_records\": 10}", 0, NULL);
    ck_assert_int_eq(trace_hub_start(h, "c", capped, PC0, TS0, &t, NULL, 0), WAMP_OK);
    ck_assert(!trace_hub_fast_ready(h));
    ck_assert_int_eq(trace_hub_stop(h, "c", PC0, TS0, NULL), WAMP_OK);
    ck_assert_int_eq(trace_hub_start(h, "d", NULL, PC0, TS0, &t, NULL, 0), WAMP_OK);
    ck_assert(trace_hub_fast_ready(h)); /* c is stopped: d runs alone */
    json_decref(filtered);
    json_decref(capped);
    trace_hub_free(h);
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trace_fast");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fast_equals_general_without_payload);
    tcase_add_test(tc, test_fast_equals_general_evicting);
    tcase_add_test(tc, test_fast_equals_general_persisted);
    tcase_add_test(tc, test_repeats_equal_records);
    tcase_add_test(tc, test_fast_ready_only_for_one_keep_all_trace);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
