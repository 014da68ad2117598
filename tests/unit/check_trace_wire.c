/* check_trace_wire.c: the wire capture (tracing/trace_wire.h). Streams of WebSocket and RawSocket
 * frames are generated (fragmented messages, control frames, masks on the received side), cut
 * into chunks at random places and interleaved as the transport adapter would append them; the
 * decoder must give back every message it can have, byte for byte under its seq, and report
 * every other seq as lost or dropped, exactly as a model of the ring computes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "trace_record.h"
#include "trace_wire.h"
#include "trace_wire_corr.h"
#include "wamp_msg.h"

/* --- A generated stream ---------------------------------------------------------------------- */

typedef struct gen_msg {
    size_t start, end; /* stream offsets: its first frame's first octet, its last frame's end */
    unsigned char *data;
    size_t len;
    uint64_t seq;
} gen_msg;

typedef struct gen_stream {
    uint64_t conn;
    uint8_t dir, framing, ser;
    unsigned char *bytes;
    size_t len, cap;
    size_t *starts; /* offsets where a frame starts, ascending */
    size_t nstarts, starts_cap;
    gen_msg *msgs;
    size_t nmsgs, msgs_cap;
    size_t cut;             /* octets already cut into chunks */
    trace_wire_stream scan; /* the capturer's state of it */
} gen_stream;

typedef struct gen_chunk {
    gen_stream *st;
    size_t start, end;
    bool gap;
} gen_chunk;

static uint64_t rng_state;

/* A chunk's time: the wall clock a fixed distance from the monotonic one. */
static trace_wire_time wt(uint64_t ts)
{
    return (trace_wire_time){.ts_ns = ts, .wall_ns = ts + 1000000};
}

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return n ? (uint32_t)(rng_state >> 33) % n : 0;
}

static void put(gen_stream *s, const void *p, size_t n)
{
    if (s->cap - s->len < n) {
        s->cap = (s->cap + n) * 2;
        s->bytes = realloc(s->bytes, s->cap);
        ck_assert_ptr_nonnull(s->bytes);
    }
    memcpy(s->bytes + s->len, p, n);
    s->len += n;
}

static void frame_start(gen_stream *s)
{
    if (s->nstarts == s->starts_cap) {
        s->starts_cap = s->starts_cap ? s->starts_cap * 2 : 64;
        s->starts = realloc(s->starts, s->starts_cap * sizeof(*s->starts));
        ck_assert_ptr_nonnull(s->starts);
    }
    s->starts[s->nstarts++] = s->len;
}

/* One frame: WebSocket (masked when received by the router) or RawSocket (op: its type). */
static void frame(gen_stream *s, uint8_t op, bool fin, const unsigned char *p, size_t n)
{
    frame_start(s);
    if (s->framing == TRACE_WIRE_RAWSOCKET) {
        unsigned char h[4] = {op, (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                              (unsigned char)n};
        put(s, h, 4);
        put(s, p, n);
        return;
    }
    unsigned char h[14];
    size_t hn = 2;
    bool masked = s->dir == TRACE_RX;
    h[0] = (unsigned char)((fin ? 0x80 : 0) | op);
    if (n < 126) {
        h[1] = (unsigned char)n;
    } else if (n < 65536) {
        h[1] = 126;
        h[2] = (unsigned char)(n >> 8);
        h[3] = (unsigned char)n;
        hn = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++) {
            h[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
        }
        hn = 10;
    }
    unsigned char mask[4] = {0};
    if (masked) {
        h[1] |= 0x80;
        for (int i = 0; i < 4; i++) {
            mask[i] = (unsigned char)rnd(256);
            h[hn++] = mask[i];
        }
    }
    put(s, h, hn);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)(p[i] ^ (masked ? mask[i & 3] : 0));
        put(s, &c, 1);
    }
}

static void control(gen_stream *s)
{
    unsigned char body[125];
    size_t n = rnd(20);
    memset(body, 'p', n);
    frame(s, s->framing == TRACE_WIRE_RAWSOCKET ? (uint8_t)(1 + rnd(2)) : (uint8_t)(9 + rnd(2)),
          true, body, n);
}

/* A message of len random octets, in 1 to 3 frames with control frames between (WebSocket). */
static void message(gen_stream *s, size_t len)
{
    if (s->nmsgs == s->msgs_cap) {
        s->msgs_cap = s->msgs_cap ? s->msgs_cap * 2 : 32;
        s->msgs = realloc(s->msgs, s->msgs_cap * sizeof(*s->msgs));
        ck_assert_ptr_nonnull(s->msgs);
    }
    gen_msg *m = &s->msgs[s->nmsgs++];
    m->data = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(m->data);
    for (size_t i = 0; i < len; i++) {
        m->data[i] = (unsigned char)rnd(256);
    }
    m->len = len;
    m->seq = UINT64_MAX;
    m->start = s->len;
    if (rnd(4) == 0) {
        control(s);
        m->start = s->len;
    }
    size_t frames = s->framing == TRACE_WIRE_WEBSOCKET ? 1 + rnd(3) : 1;
    size_t at = 0;
    for (size_t f = 0; f < frames; f++) {
        size_t n = f + 1 == frames ? len - at : rnd((uint32_t)(len - at + 1));
        uint8_t op = f ? 0 : s->framing == TRACE_WIRE_RAWSOCKET ? 0 : (uint8_t)(1 + rnd(2));
        frame(s, op, f + 1 == frames, m->data + at, n);
        at += n;
        if (f + 1 < frames && rnd(3) == 0) {
            control(s);
        }
    }
    m->end = s->len;
}

static size_t msg_len(void)
{
    switch (rnd(10)) {
    case 0:
        return 0;
    case 1:
        return 126 + rnd(400); /* a 16-bit length */
    case 2:
        return rnd(50) == 0 ? 65536 + rnd(3000) : 1000 + rnd(3000); /* a 64-bit length, rarely */
    default:
        return 1 + rnd(125);
    }
}

static void stream_free(gen_stream *s)
{
    for (size_t i = 0; i < s->nmsgs; i++) {
        free(s->msgs[i].data);
    }
    free(s->msgs);
    free(s->starts);
    free(s->bytes);
}

/* --- The capture of a scenario, and its model --------------------------------------------------
 */

typedef struct scenario {
    gen_stream st[6];
    size_t nst;
    gen_chunk *chunks;
    size_t nchunks;
    trace_wire *w;
    size_t cap;
    bool by_header; /* chunks appended with the model's lead and nmsg, not trace_wire_capture() */
    /* An incremental reader called now and then while the chunks are appended (NULL: none),
     * what it handed out, and the seqs it was told it skipped. */
    trace_wire_reader *rd;
    struct collect *rd_got;
    uint64_t rd_skipped;
} scenario;

static void reader_call(scenario *sc);

/* The capturer: the first frame start in [a, b) as a lead, and the messages ending in it. */
static void cut(scenario *sc, gen_stream *s, size_t n)
{
    size_t a = s->cut, b = a + n;
    uint32_t lead = TRACE_WIRE_NO_START;
    for (size_t i = 0; i < s->nstarts; i++) {
        if (s->starts[i] >= a && s->starts[i] < b) {
            lead = (uint32_t)(s->starts[i] - a);
            break;
        }
    }
    uint32_t nmsg = 0;
    for (size_t i = 0; i < s->nmsgs; i++) {
        if (s->msgs[i].end > a && s->msgs[i].end <= b) {
            nmsg++;
        }
    }
    uint64_t first;
    if (sc->by_header) { /* as the capturer's own header says */
        trace_wire_chunk c = {.conn = s->conn,
                              .ts_ns = 1000 + sc->nchunks,
                              .wall_ns = 1001000 + sc->nchunks,
                              .lead = lead,
                              .nmsg = nmsg,
                              .dir = s->dir,
                              .framing = s->framing,
                              .ser = s->ser};
        first = trace_wire_append(sc->w, &c, s->bytes + a, n);
    } else { /* the scan finds the same */
        if (a == 0) {
            trace_wire_stream_init(&s->scan, s->conn, s->dir, s->framing, s->ser);
        }
        first = trace_wire_capture(sc->w, &s->scan, wt(1000 + sc->nchunks), s->bytes + a, n);
    }
    ck_assert_uint_eq(trace_wire_next_seq(sc->w), first + nmsg);
    for (size_t i = 0; i < s->nmsgs; i++) {
        if (s->msgs[i].end > a && s->msgs[i].end <= b) {
            s->msgs[i].seq = first++;
        }
    }
    sc->chunks[sc->nchunks++] = (gen_chunk){
            .st = s, .start = a, .end = b, .gap = n > sc->cap - TRACE_WIRE_CHUNK_HEADER};
    s->cut = b;
    if (sc->rd && rnd(8) == 0) {
        reader_call(sc);
    }
}

/* Builds nst streams of nmsg messages each and appends them, cut into chunks of up to max_chunk
 * octets (sometimes more), streams interleaved at random, into a ring of cap. */
static void build_read(scenario *sc, trace_wire_reader *rd, struct collect *rd_got, size_t nst,
                       size_t nmsg, size_t max_chunk, size_t cap)
{
    memset(sc, 0, sizeof(*sc));
    sc->rd = rd; /* (NULL: none) */
    sc->rd_got = rd_got;
    sc->by_header = rnd(2);
    sc->nst = nst;
    sc->cap = (cap + 7) & ~(size_t)7;
    sc->w = trace_wire_new(cap);
    ck_assert_ptr_nonnull(sc->w);
    size_t total = 0;
    for (size_t i = 0; i < nst; i++) {
        gen_stream *s = &sc->st[i];
        s->conn = 100 + i / 2;
        s->dir = i % 2 ? TRACE_TX : TRACE_RX;
        s->framing = (i / 2) % 3 == 2 ? TRACE_WIRE_RAWSOCKET : TRACE_WIRE_WEBSOCKET;
        s->ser = (uint8_t)(1 + i % 3);
        for (size_t k = 0; k < nmsg; k++) {
            message(s, msg_len());
        }
        if (rnd(2)) {
            control(s);
        }
        total += s->len;
    }
    sc->chunks = calloc(total + 1, sizeof(*sc->chunks));
    ck_assert_ptr_nonnull(sc->chunks);
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < nst; i++) {
            left += sc->st[i].len > sc->st[i].cut;
        }
        if (!left) {
            break;
        }
        gen_stream *s;
        do {
            s = &sc->st[rnd((uint32_t)nst)];
        } while (s->cut == s->len);
        size_t rest = s->len - s->cut;
        /* Mostly short reads and writes; now and then a long one (a backlog), rarely one the
         * size of what is left, which may be larger than the ring. */
        size_t n = rnd(20) == 0    ? 1 + rnd(3000)
                   : rnd(200) == 0 ? rest
                                   : 1 + rnd((uint32_t)max_chunk);
        cut(sc, s, n < rest ? n : rest);
    }
}

static void build(scenario *sc, size_t nst, size_t nmsg, size_t max_chunk, size_t cap)
{
    build_read(sc, NULL, NULL, nst, nmsg, max_chunk, cap);
}

static void scenario_free(scenario *sc)
{
    for (size_t i = 0; i < sc->nst; i++) {
        stream_free(&sc->st[i]);
    }
    free(sc->chunks);
    trace_wire_free(sc->w);
}

/* Whether the decoder can have message m of s: every chunk it spans is held and kept, and its
 * stream picked up (at a held chunk's first frame start after the oldest held chunk or a gap) at
 * or before its start. */
static bool decodable(const scenario *sc, const gen_stream *s, const gen_msg *m, size_t held_from)
{
    bool synced = false;
    size_t sync_at = 0;
    for (size_t k = held_from; k < sc->nchunks; k++) {
        const gen_chunk *c = &sc->chunks[k];
        if (c->st != s) {
            continue;
        }
        if (c->start >= m->end) {
            break;
        }
        if (c->gap) {
            synced = false;
            continue;
        }
        if (!synced) {
            for (size_t i = 0; i < s->nstarts; i++) {
                if (s->starts[i] >= c->start && s->starts[i] < c->end) {
                    synced = true;
                    sync_at = s->starts[i];
                    break;
                }
            }
        }
    }
    return synced && sync_at <= m->start;
}

typedef struct got {
    uint64_t seq;
    bool lost;
    uint64_t conn, ts;
    uint8_t dir, ser;
    unsigned char *data;
    size_t len;
} got;

typedef struct collect {
    got *v;
    size_t n, cap;
    size_t stop_after; /* 0: never stop */
} collect;

static bool on_seq(void *ctx, uint64_t seq, const trace_wire_msg *m)
{
    collect *c = ctx;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->v = realloc(c->v, c->cap * sizeof(*c->v));
        ck_assert_ptr_nonnull(c->v);
    }
    got *g = &c->v[c->n++];
    memset(g, 0, sizeof(*g));
    g->seq = seq;
    g->lost = m == NULL;
    if (m) {
        ck_assert_uint_eq(m->seq, seq);
        g->conn = m->conn;
        g->ts = m->ts_ns;
        ck_assert_uint_eq(m->wall_ns, m->ts_ns + 1000000);
        g->dir = m->dir;
        g->ser = m->ser;
        g->len = m->len;
        g->data = malloc(m->len ? m->len : 1);
        ck_assert_ptr_nonnull(g->data);
        if (m->len) {
            memcpy(g->data, m->data, m->len);
        }
    }
    return !c->stop_after || c->n < c->stop_after;
}

static void reader_call(scenario *sc)
{
    trace_wire_walk walk;
    ck_assert_int_eq(trace_wire_reader_next(sc->rd, sc->w, on_seq, NULL, sc->rd_got, &walk),
                     WAMP_OK);
    sc->rd_skipped += walk.skipped;
    ck_assert_uint_eq(trace_wire_reader_next_seq(sc->rd), trace_wire_next_seq(sc->w));
}

static void collect_free(collect *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].data);
    }
    free(c->v);
}

/* Decodes sc from from_seq and checks every seq against the model. Returns the messages that
 * came back whole. */
static size_t check_decode(scenario *sc, uint64_t from_seq)
{
    size_t held_from = sc->nchunks - trace_wire_chunks(sc->w);
    uint64_t first = trace_wire_first_seq(sc->w), next = trace_wire_next_seq(sc->w);
    ck_assert_uint_eq(trace_wire_dropped(sc->w), first);
    collect c = {0};
    trace_wire_walk walk;
    ck_assert_int_eq(trace_wire_decode(sc->w, from_seq, on_seq, &c, &walk), WAMP_OK);
    ck_assert_uint_eq(walk.first_seq, first);
    ck_assert_uint_eq(walk.next_seq, next);
    ck_assert_uint_eq(walk.mismatch, 0);
    uint64_t from = from_seq > first ? from_seq : first;
    ck_assert_uint_eq(c.n, next > from ? next - from : 0); /* every seq once, in order */
    ck_assert_uint_eq(walk.messages + walk.lost, c.n);
    size_t whole = 0;
    for (size_t i = 0; i < sc->nst; i++) {
        gen_stream *s = &sc->st[i];
        for (size_t k = 0; k < s->nmsgs; k++) {
            gen_msg *m = &s->msgs[k];
            ck_assert_uint_ne(m->seq, UINT64_MAX);
            if (m->seq < from) {
                continue;
            }
            got *g = &c.v[m->seq - from];
            ck_assert_uint_eq(g->seq, m->seq);
            bool want = decodable(sc, s, m, held_from);
            ck_assert_msg(g->lost == !want, "seq %llu: lost %d, the model says %s",
                          (unsigned long long)m->seq, g->lost, want ? "whole" : "lost");
            if (want) {
                ck_assert_uint_eq(g->conn, s->conn);
                ck_assert_uint_eq(g->dir, s->dir);
                ck_assert_uint_eq(g->ser, s->ser);
                ck_assert_uint_eq(g->len, m->len);
                if (m->len) {
                    ck_assert_mem_eq(g->data, m->data, m->len);
                }
                whole++;
            }
        }
    }
    collect_free(&c);
    return whole;
}

/* --- Tests -------------------------------------------------------------------------------------
 */

/* Everything fits: every message back, whole, whatever the chunks' cuts. */
START_TEST(test_everything_held_comes_back)
{
    rng_state = 42 + (uint64_t)_i;
    scenario sc;
    build(&sc, 6, 40, 1 + rnd(300), 8u << 20);
    ck_assert_uint_eq(trace_wire_first_seq(sc.w), 0);
    ck_assert_uint_eq(trace_wire_dropped(sc.w), 0);
    size_t total = 0;
    for (size_t i = 0; i < sc.nst; i++) {
        total += sc.st[i].nmsgs;
    }
    ck_assert_uint_eq(trace_wire_next_seq(sc.w), total);
    ck_assert_uint_eq(check_decode(&sc, 0), total);
    scenario_free(&sc);
}

END_TEST

/* A small ring: the oldest chunks go; what they began is lost, never handed out in part, and
 * what the ring holds from each stream's first frame start on comes back. */
START_TEST(test_small_ring_loses_only_what_began_outside)
{
    rng_state = 1000 + (uint64_t)_i;
    scenario sc;
    build(&sc, 3 + rnd(4), 30, 1 + rnd(200), TRACE_WIRE_MIN_CAP + rnd(8000));
    ck_assert_uint_gt(trace_wire_dropped(sc.w), 0);
    ck_assert_uint_le(trace_wire_used(sc.w), sc.cap);
    (void)check_decode(&sc, 0);
    scenario_free(&sc);
}

END_TEST

/* From a seq on: the same seqs as a whole walk, from there. */
START_TEST(test_from_a_seq)
{
    rng_state = 7;
    scenario sc;
    build(&sc, 4, 50, 120, 1u << 16);
    uint64_t first = trace_wire_first_seq(sc.w), next = trace_wire_next_seq(sc.w);
    ck_assert_uint_gt(next, first + 10);
    (void)check_decode(&sc, first + (next - first) / 2);
    (void)check_decode(&sc, next - 1);
    (void)check_decode(&sc, next);
    (void)check_decode(&sc, 0);
    scenario_free(&sc);
}

END_TEST

/* A chunk larger than the ring is kept as a gap: the messages it touches are lost, and the stream
 * picks up again at the next chunk's first frame start. */
START_TEST(test_too_large_chunk_is_a_gap)
{
    trace_wire *w = trace_wire_new(TRACE_WIRE_MIN_CAP);
    ck_assert_ptr_nonnull(w);
    gen_stream s = {.conn = 9, .dir = TRACE_TX, .framing = TRACE_WIRE_WEBSOCKET, .ser = 1};
    rng_state = 3;
    message(&s, 10);   /* 0 */
    message(&s, 9000); /* 1: larger than the ring */
    message(&s, 20);   /* 2 */
    scenario sc = {.w = w, .cap = TRACE_WIRE_MIN_CAP, .nst = 1};
    sc.st[0] = s;
    sc.chunks = calloc(8, sizeof(*sc.chunks));
    ck_assert_ptr_nonnull(sc.chunks);
    gen_stream *st = &sc.st[0];
    cut(&sc, st, st->msgs[0].end);                   /* message 0 */
    cut(&sc, st, st->msgs[1].end - st->msgs[0].end); /* message 1, as one chunk: a gap */
    cut(&sc, st, st->len - st->msgs[1].end);         /* message 2 */
    ck_assert_uint_eq(trace_wire_chunks(w), 3);
    collect c = {0};
    trace_wire_walk walk;
    ck_assert_int_eq(trace_wire_decode(w, 0, on_seq, &c, &walk), WAMP_OK);
    ck_assert_uint_eq(c.n, 3);
    ck_assert(!c.v[0].lost && c.v[0].len == 10);
    ck_assert(c.v[1].lost);
    ck_assert(!c.v[2].lost && c.v[2].len == 20);
    ck_assert_mem_eq(c.v[2].data, st->msgs[2].data, 20);
    ck_assert_uint_eq(walk.lost, 1);
    collect_free(&c);
    (void)check_decode(&sc, 0);
    scenario_free(&sc);
}

END_TEST

/* The callback's false ends the walk at once. */
START_TEST(test_stop)
{
    rng_state = 11;
    scenario sc;
    build(&sc, 2, 20, 50, 1u << 20);
    collect c = {.stop_after = 5};
    trace_wire_walk walk;
    ck_assert_int_eq(trace_wire_decode(sc.w, 0, on_seq, &c, &walk), WAMP_OK);
    ck_assert_uint_eq(c.n, 5);
    ck_assert_uint_eq(walk.messages + walk.lost, 5);
    collect_free(&c);
    scenario_free(&sc);
}

END_TEST

/* The timestamp is the chunk's that holds the message's last octet; an empty capture walks
 * nothing; a chunk without messages moves no seq. */
START_TEST(test_clock_and_empty)
{
    trace_wire *w = trace_wire_new(0);
    ck_assert_ptr_nonnull(w);
    collect c = {0};
    ck_assert_int_eq(trace_wire_decode(w, 0, on_seq, &c, NULL), WAMP_OK);
    ck_assert_uint_eq(c.n, 0);
    /* "ab" as one unmasked text frame, cut after its header. */
    const unsigned char f[] = {0x81, 0x02, 'a', 'b'};
    trace_wire_chunk h = {.conn = 1,
                          .ts_ns = 5,
                          .wall_ns = 1000005,
                          .lead = 0,
                          .nmsg = 0,
                          .dir = TRACE_TX,
                          .framing = TRACE_WIRE_WEBSOCKET,
                          .ser = 1};
    ck_assert_uint_eq(trace_wire_append(w, &h, f, 2), 0);
    ck_assert_uint_eq(trace_wire_next_seq(w), 0);
    h.ts_ns = 8;
    h.wall_ns = 1000008;
    h.lead = TRACE_WIRE_NO_START;
    h.nmsg = 1;
    ck_assert_uint_eq(trace_wire_append(w, &h, f + 2, 2), 0);
    ck_assert_uint_eq(trace_wire_next_seq(w), 1);
    ck_assert_int_eq(trace_wire_decode(w, 0, on_seq, &c, NULL), WAMP_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert(!c.v[0].lost);
    ck_assert_uint_eq(c.v[0].ts, 8);
    ck_assert_uint_eq(c.v[0].len, 2);
    ck_assert_mem_eq(c.v[0].data, "ab", 2);
    collect_free(&c);
    trace_wire_free(w);
}

END_TEST

/* A writer's batch of whole one-frame messages, captured without following its frames, is held
 * and decoded as the same bytes followed would be; a batch that starts inside a frame (the rest
 * of a large message first) is followed after all. */
START_TEST(test_capture_whole)
{
    rng_state = 21;
    gen_stream s = {.conn = 4,
                    .dir = TRACE_TX,
                    .framing = (uint8_t)(_i ? TRACE_WIRE_RAWSOCKET : TRACE_WIRE_WEBSOCKET),
                    .ser = 2};
    for (int k = 0; k < 6; k++) {
        unsigned char body[40];
        memset(body, 'a' + k, sizeof(body));
        frame(&s, s.framing == TRACE_WIRE_RAWSOCKET ? 0 : 2, true, body, 10 + (size_t)k);
    }
    trace_wire *a = trace_wire_new(1u << 16), *b = trace_wire_new(1u << 16);
    ck_assert(a && b);
    trace_wire_stream sa, sb;
    trace_wire_stream_init(&sa, s.conn, s.dir, s.framing, s.ser);
    trace_wire_stream_init(&sb, s.conn, s.dir, s.framing, s.ser);
    size_t half = s.starts[3];
    /* Three whole messages, then a cut in the middle of the fourth's frame, then the rest. */
    (void)trace_wire_capture(a, &sa, wt(1), s.bytes, half);
    (void)trace_wire_capture_whole(b, &sb, wt(1), s.bytes, half, 3);
    (void)trace_wire_capture(a, &sa, wt(2), s.bytes + half, 3);
    (void)trace_wire_capture(b, &sb, wt(2), s.bytes + half, 3);
    (void)trace_wire_capture(a, &sa, wt(3), s.bytes + half + 3, s.len - half - 3);
    (void)trace_wire_capture_whole(b, &sb, wt(3), s.bytes + half + 3, s.len - half - 3, 99);
    ck_assert_uint_eq(trace_wire_next_seq(a), 6);
    ck_assert_uint_eq(trace_wire_next_seq(b), 6); /* inside a frame: followed, not 99 */
    collect ca = {0}, cb = {0};
    ck_assert_int_eq(trace_wire_decode(a, 0, on_seq, &ca, NULL), WAMP_OK);
    ck_assert_int_eq(trace_wire_decode(b, 0, on_seq, &cb, NULL), WAMP_OK);
    ck_assert_uint_eq(ca.n, 6);
    ck_assert_uint_eq(cb.n, 6);
    for (size_t i = 0; i < 6; i++) {
        ck_assert(!cb.v[i].lost);
        ck_assert_uint_eq(cb.v[i].len, 10 + i);
        ck_assert_uint_eq(cb.v[i].len, ca.v[i].len);
        ck_assert_mem_eq(cb.v[i].data, ca.v[i].data, ca.v[i].len);
    }
    collect_free(&ca);
    collect_free(&cb);
    trace_wire_free(a);
    trace_wire_free(b);
    stream_free(&s);
}

END_TEST

/* Facts: kept among the traffic without seqs, handed out once early and once in their place,
 * dropped with the oldest chunks like any. */
typedef struct fact_log {
    char ev[64][16]; /* "e:<conn>:<text>" early, "f:<conn>:<text>" in place, "m:<seq>" */
    size_t n;
} fact_log;

static void on_fact(void *ctx, uint64_t conn, const void *p, size_t n, bool early)
{
    fact_log *l = ctx;
    ck_assert_uint_lt(l->n, 64);
    snprintf(l->ev[l->n++], 16, "%c:%llu:%.*s", early ? 'e' : 'f', (unsigned long long)conn, (int)n,
             (const char *)p);
}

static bool on_msg_logged(void *ctx, uint64_t seq, const trace_wire_msg *m)
{
    fact_log *l = ctx;
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_lt(l->n, 64);
    snprintf(l->ev[l->n++], 16, "m:%llu", (unsigned long long)seq);
    return true;
}

START_TEST(test_facts)
{
    trace_wire *w = trace_wire_new(TRACE_WIRE_MIN_CAP);
    ck_assert_ptr_nonnull(w);
    trace_wire_stream st;
    trace_wire_stream_init(&st, 7, TRACE_TX, TRACE_WIRE_WEBSOCKET, 1);
    const unsigned char f[] = {0x81, 0x02, 'h', 'i'};
    (void)trace_wire_capture(w, &st, wt(1), f, sizeof(f)); /* seq 0 */
    trace_wire_fact(w, 7, wt(2), "A", 1);
    (void)trace_wire_capture(w, &st, wt(3), f, sizeof(f)); /* seq 1 */
    trace_wire_fact(w, 8, wt(4), "B", 1);
    ck_assert_uint_eq(trace_wire_next_seq(w), 2); /* facts take no seq */
    fact_log l = {0};
    ck_assert_int_eq(trace_wire_decode_facts(w, 1, on_msg_logged, on_fact, &l, NULL), WAMP_OK);
    const char *want[] = {"e:7:A", "e:8:B", "f:7:A", "m:1", "f:8:B"};
    ck_assert_uint_eq(l.n, 5);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(l.ev[i], want[i]);
    }
    /* Traffic enough to drop them: gone with it. */
    for (int i = 0; i < 200; i++) {
        (void)trace_wire_capture(w, &st, wt(10), f, sizeof(f));
    }
    memset(&l, 0, sizeof(l));
    l.n = 0;
    ck_assert_int_eq(trace_wire_decode_facts(w, trace_wire_next_seq(w) - 1, on_msg_logged, on_fact,
                                             &l, NULL),
                     WAMP_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.ev[0], "m:201");
    trace_wire_free(w);
}

END_TEST

/* Message chunks (trace_wire_message()): one seq each, in the order of the chunks around them,
 * handed out as they were given with their notes; one too large to keep is lost. */
static bool on_note(void *ctx, uint64_t seq, const trace_wire_msg *m)
{
    fact_log *l = ctx;
    ck_assert_uint_lt(l->n, 64);
    if (!m) {
        snprintf(l->ev[l->n++], 16, "%llu:lost", (unsigned long long)seq);
    } else {
        snprintf(l->ev[l->n++], 16, "%llu:%llu:%x:%.*s", (unsigned long long)seq,
                 (unsigned long long)m->conn, (unsigned)m->note, (int)(m->len < 4 ? m->len : 4),
                 (const char *)m->data);
    }
    return true;
}

START_TEST(test_message_chunks)
{
    trace_wire *w = trace_wire_new(TRACE_WIRE_MIN_CAP);
    ck_assert_ptr_nonnull(w);
    trace_wire_stream st;
    trace_wire_stream_init(&st, 7, TRACE_TX, TRACE_WIRE_WEBSOCKET, 1);
    const unsigned char f[] = {0x81, 0x02, 'h', 'i', 0x81, 0x01, 'x'};
    /* A frame cut in two around a message chunk of another connection: the stream goes on. */
    (void)trace_wire_capture(w, &st, wt(1), f, 5); /* seq 0: "hi", and the next frame's head */
    ck_assert_uint_eq(trace_wire_message(w, 3, TRACE_RX, 1, wt(2), 0, "[1]", 3), 1);
    (void)trace_wire_capture(w, &st, wt(3), f + 5, 2); /* seq 2: "x" */
    ck_assert_uint_eq(trace_wire_message(w, 7, TRACE_TX, 1, wt(4), 0x240301, "[36]", 4), 3);
    ck_assert_uint_eq(trace_wire_message(w, 0, 0, 1, wt(5), 2, "{}", 2), 4);
    static char big[TRACE_WIRE_MIN_CAP * 2];
    memset(big, 'b', sizeof(big));
    ck_assert_uint_eq(trace_wire_message(w, 3, TRACE_RX, 1, wt(6), 0, big, sizeof(big)), 5);
    ck_assert_uint_eq(trace_wire_message(w, 3, TRACE_RX, 1, wt(7), 0, "", 0), 6);
    ck_assert_uint_eq(trace_wire_next_seq(w), 7);
    fact_log l = {0};
    trace_wire_walk walk;
    ck_assert_int_eq(trace_wire_decode(w, 0, on_note, &l, &walk), WAMP_OK);
    const char *want[] = {"0:7:0:hi", "1:3:0:[1]", "2:7:0:x", "3:7:240301:[36]",
                          "4:0:2:{}", "5:lost",    "6:3:0:"};
    ck_assert_uint_eq(l.n, 7);
    for (size_t i = 0; i < 7; i++) {
        ck_assert_str_eq(l.ev[i], want[i]);
    }
    ck_assert_uint_eq(walk.lost, 1);
    ck_assert_uint_eq(walk.messages, 6);
    /* From a seq: the ones before are not handed out. */
    memset(&l, 0, sizeof(l));
    ck_assert_int_eq(trace_wire_decode(w, 3, on_note, &l, NULL), WAMP_OK);
    ck_assert_uint_eq(l.n, 4);
    ck_assert_str_eq(l.ev[0], "3:7:240301:[36]");
    trace_wire_free(w);
}

END_TEST

/* The flags and UUID trace_wire_corr_of() gives the JSON message text received (rx) or sent on
 * conn at seq. */
static uint8_t corr_of(trace_wire_corr *c, uint64_t seq, uint64_t conn, uint8_t dir,
                       const char *text, uint8_t uuid[TRACE_UUID_LEN])
{
    wamp_msg m;
    char why[WAMP_WHY_LEN];
    ck_assert_int_eq(
            wamp_msg_parse_bytes_fields(WAMP_SER_JSON, text, strlen(text), &m, why, sizeof(why)),
            WAMP_OK);
    memset(uuid, 0, TRACE_UUID_LEN);
    uint8_t f = trace_wire_corr_of(c, seq, conn, dir, &m, uuid);
    wamp_msg_fini(&m);
    return f;
}

/* Correlation from the messages' ids and the router's two routing facts. */
START_TEST(test_correlation)
{
    const uint8_t HAS = TRACE_CORR_HAS, ANCHOR = TRACE_CORR_ANCHOR, LAST = TRACE_CORR_LAST;
    trace_wire_corr *c = trace_wire_corr_new();
    ck_assert_ptr_nonnull(c);
    uint8_t u[TRACE_UUID_LEN], v[TRACE_UUID_LEN], w[TRACE_UUID_LEN];
    /* A call: CALL, the fact, INVOCATION, YIELD, a progressive RESULT, the final one. */
    ck_assert_uint_eq(corr_of(c, 10, 1, TRACE_RX, "[48,7,{},\"com.x\",[1]]", u), HAS | ANCHOR);
    ck_assert_uint_eq(u[6] >> 4, 4); /* shaped as a version 4 UUID */
    ck_assert(trace_wire_corr_call(c, 1, 7, 2, 99));
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(c)), "com.x");
    ck_assert_uint_eq(corr_of(c, 11, 2, TRACE_TX, "[68,99,5,{},[1]]", v), HAS);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(c)), "com.x"); /* the action's URI */
    ck_assert_uint_eq(corr_of(c, 12, 2, TRACE_RX, "[70,99,{},[2]]", v), HAS);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_uint_eq(corr_of(c, 13, 2, TRACE_RX, "[8,68,99,{},\"com.err\"]", v), HAS);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_uint_eq(corr_of(c, 14, 1, TRACE_TX, "[50,7,{\"progress\":true},[2]]", v), HAS);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_uint_eq(corr_of(c, 15, 1, TRACE_TX, "[50,7,{},[2]]", v), HAS | LAST);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    /* The same request id again later: another action. */
    ck_assert_uint_eq(corr_of(c, 20, 1, TRACE_RX, "[48,7,{},\"com.x\",[1]]", v), HAS | ANCHOR);
    ck_assert(memcmp(v, u, TRACE_UUID_LEN) != 0);
    ck_assert_uint_eq(corr_of(c, 21, 1, TRACE_TX, "[8,48,7,{},\"com.err\"]", w), HAS | LAST);
    ck_assert_mem_eq(w, v, TRACE_UUID_LEN);
    /* An answer whose request was not met: a UUID of its key alone, the same in another walk. */
    ck_assert_uint_eq(corr_of(c, 22, 1, TRACE_TX, "[50,8,{}]", u), HAS | LAST);
    ck_assert_ptr_null(trace_wire_corr_uri(c)); /* (nor its URI) */
    trace_wire_corr *c2 = trace_wire_corr_new();
    ck_assert_ptr_nonnull(c2);
    ck_assert_uint_eq(corr_of(c2, 5, 1, TRACE_TX, "[50,8,{}]", v), HAS | LAST);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    trace_wire_corr_free(c2);
    /* A publication: PUBLISH, the fact, its EVENTs, PUBLISHED; an EVENT of another: none. */
    ck_assert_uint_eq(corr_of(c, 30, 3, TRACE_RX, "[16,1,{},\"com.t\",[1]]", u), HAS | ANCHOR);
    ck_assert(trace_wire_corr_published(c, 3, 1, 555));
    ck_assert_uint_eq(corr_of(c, 31, 4, TRACE_TX, "[36,12,555,{},[1]]", v), HAS);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(c)), "com.t");
    ck_assert_uint_eq(corr_of(c, 32, 3, TRACE_TX, "[17,1,555]", v), HAS | LAST);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_uint_eq(corr_of(c, 33, 4, TRACE_TX, "[36,12,556,{},[1]]", v), 0);
    /* A subscription; and what belongs to no action. */
    ck_assert_uint_eq(corr_of(c, 40, 4, TRACE_RX, "[32,3,{},\"com.t\"]", u), HAS | ANCHOR);
    ck_assert_uint_eq(corr_of(c, 41, 4, TRACE_TX, "[33,3,12]", v), HAS | LAST);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_uint_eq(corr_of(c, 43, 4, TRACE_TX, "[68,1234,5,{}]", v), 0); /* no fact */
    ck_assert_uint_eq(corr_of(c, 44, 4, TRACE_TX, "[36,12,777,{},[1]]", v), 0);
    ck_assert_ptr_null(trace_wire_corr_uri(c));
    /* A session's opening: HELLO, CHALLENGE, AUTHENTICATE, WELCOME; and its closing. */
    ck_assert_uint_eq(corr_of(c, 50, 5, TRACE_RX, "[1,\"realm1\",{\"roles\":{}}]", u),
                      HAS | ANCHOR);
    ck_assert_ptr_null(trace_wire_corr_uri(c));
    ck_assert_uint_eq(corr_of(c, 51, 5, TRACE_TX, "[4,\"ticket\",{}]", v), HAS);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_uint_eq(corr_of(c, 52, 5, TRACE_RX, "[5,\"sig\",{}]", v), HAS);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_uint_eq(corr_of(c, 53, 5, TRACE_TX, "[2,77,{}]", v), HAS | LAST);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_uint_eq(corr_of(c, 54, 5, TRACE_RX, "[6,{},\"wamp.close.normal\"]", u), HAS | ANCHOR);
    ck_assert_uint_eq(corr_of(c, 55, 5, TRACE_TX, "[6,{},\"wamp.close.goodbye_and_out\"]", v),
                      HAS | LAST);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    /* The router's own GOODBYE and the client's answer: no action. */
    ck_assert_uint_eq(corr_of(c, 56, 6, TRACE_TX, "[6,{},\"wamp.close.system_shutdown\"]", v), 0);
    ck_assert_uint_eq(corr_of(c, 57, 6, TRACE_RX, "[6,{},\"wamp.close.goodbye_and_out\"]", v), 0);
    /* An ABORT answering a HELLO. */
    ck_assert_uint_eq(corr_of(c, 58, 7, TRACE_RX, "[1,\"nope\",{\"roles\":{}}]", u), HAS | ANCHOR);
    ck_assert_uint_eq(corr_of(c, 59, 7, TRACE_TX, "[3,{},\"wamp.error.no_such_realm\"]", v),
                      HAS | LAST);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    /* The client joins again on connection 5; the router's GOODBYE then ends that session, and
     * the client's answer: no action (the GOODBYEs of the session before are over). */
    ck_assert_uint_eq(corr_of(c, 60, 5, TRACE_RX, "[1,\"realm1\",{\"roles\":{}}]", u),
                      HAS | ANCHOR);
    ck_assert_uint_eq(corr_of(c, 61, 5, TRACE_TX, "[2,78,{}]", v), HAS | LAST);
    ck_assert_uint_eq(corr_of(c, 62, 5, TRACE_TX, "[6,{},\"wamp.close.killed\"]", v), 0);
    ck_assert_uint_eq(corr_of(c, 63, 5, TRACE_RX, "[6,{},\"wamp.close.goodbye_and_out\"]", v), 0);
    /* Many connections close; half of them join again before the router answers: their
     * GOODBYEs are forgotten, those of the others still found (entries removed from a crowded
     * table leave no one unreachable). */
    uint8_t bye[300][TRACE_UUID_LEN];
    for (uint64_t k = 0; k < 300; k++) {
        ck_assert_uint_eq(
                corr_of(c, 3000 + k, 100 + k, TRACE_RX, "[6,{},\"wamp.close.normal\"]", bye[k]),
                HAS | ANCHOR);
    }
    for (uint64_t k = 0; k < 300; k += 2) {
        ck_assert_uint_eq(corr_of(c, 3400 + k, 100 + k, TRACE_RX, "[1,\"realm1\",{}]", u),
                          HAS | ANCHOR);
    }
    for (uint64_t k = 0; k < 300; k++) {
        uint8_t f =
                corr_of(c, 3800 + k, 100 + k, TRACE_TX, "[6,{},\"wamp.close.goodbye_and_out\"]", v);
        if (k % 2) {
            ck_assert_uint_eq(f, HAS | LAST);
            ck_assert_mem_eq(v, bye[k], TRACE_UUID_LEN);
        } else {
            ck_assert_uint_eq(f, 0); /* the router's own now */
        }
    }
    /* Many actions: the table grows and keeps them. */
    for (uint64_t i = 0; i < 1000; i++) {
        char t[64];
        snprintf(t, sizeof(t), "[48,%llu,{},\"com.x\"]", (unsigned long long)(100 + i));
        (void)corr_of(c, 100 + i, 9, TRACE_RX, t, u);
        ck_assert(trace_wire_corr_call(c, 9, 100 + i, 10, 5000 + i));
    }
    ck_assert_uint_eq(corr_of(c, 2000, 9, TRACE_TX, "[50,100,{}]", u), HAS | LAST);
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(c)), "com.x");
    ck_assert_uint_eq(corr_of(c, 2001, 10, TRACE_TX, "[68,5000,5,{}]", v), HAS);
    ck_assert_mem_eq(v, u, TRACE_UUID_LEN);
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(c)), "com.x");
    trace_wire_corr_free(c);
}

END_TEST

/* A bounded correlation (a reader that follows the capture for good) forgets the older of its two
 * generations of actions, and keeps the newer ones. */
START_TEST(test_correlation_bounded)
{
    trace_wire_corr *c = trace_wire_corr_new();
    ck_assert_ptr_nonnull(c);
    trace_wire_corr_bound(c, 100);
    uint8_t u[TRACE_UUID_LEN], v[TRACE_UUID_LEN], first[TRACE_UUID_LEN], late[TRACE_UUID_LEN];
    for (uint64_t i = 0; i < 350; i++) {
        char t[64];
        snprintf(t, sizeof(t), "[48,%llu,{},\"com.x\"]", (unsigned long long)i + 1);
        ck_assert_uint_eq(corr_of(c, i, 1, TRACE_RX, t, u), TRACE_CORR_HAS | TRACE_CORR_ANCHOR);
        if (i == 0) {
            memcpy(first, u, TRACE_UUID_LEN);
        } else if (i == 320) {
            memcpy(late, u, TRACE_UUID_LEN);
        }
    }
    /* The newest: its answer has its UUID and URI. The first: forgotten. */
    ck_assert_uint_eq(corr_of(c, 400, 1, TRACE_TX, "[50,321,{}]", v),
                      TRACE_CORR_HAS | TRACE_CORR_LAST);
    ck_assert_mem_eq(v, late, TRACE_UUID_LEN);
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(c)), "com.x");
    ck_assert_uint_eq(corr_of(c, 401, 1, TRACE_TX, "[50,1,{}]", v),
                      TRACE_CORR_HAS | TRACE_CORR_LAST);
    ck_assert(memcmp(v, first, TRACE_UUID_LEN) != 0);
    ck_assert_ptr_null(trace_wire_corr_uri(c));
    trace_wire_corr_free(c);
    /* A routing fact whose request is in the older generation, noted as the newer one is full:
     * the rotation that makes room frees that request's entry (and its URI, the last reference
     * on it), and the invocation keeps both all the same. */
    c = trace_wire_corr_new();
    ck_assert_ptr_nonnull(c);
    trace_wire_corr_bound(c, 2);
    ck_assert_uint_eq(corr_of(c, 1, 1, TRACE_RX, "[48,7,{},\"com.a\"]", first),
                      TRACE_CORR_HAS | TRACE_CORR_ANCHOR);
    for (uint64_t id = 8; id <= 10; id++) {
        char t[64];
        snprintf(t, sizeof(t), "[48,%llu,{},\"com.b\"]", (unsigned long long)id);
        (void)corr_of(c, id, 1, TRACE_RX, t, u);
    }
    ck_assert(trace_wire_corr_call(c, 1, 7, 2, 100));
    ck_assert_uint_eq(corr_of(c, 20, 2, TRACE_RX, "[70,100,{}]", v), TRACE_CORR_HAS);
    ck_assert_mem_eq(v, first, TRACE_UUID_LEN);
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(c)), "com.a");
    trace_wire_corr_free(c);
}

END_TEST

/* A call that crosses nodes: the caller's node gives its CALL the UUID it sent along
 * (trace_wire_corr_rename()), the callee's node its INVOCATION (trace_wire_corr_invoked()), with
 * the procedure as its URI; their answers follow. */
START_TEST(test_correlation_across_nodes)
{
    const uint8_t HAS = TRACE_CORR_HAS, ANCHOR = TRACE_CORR_ANCHOR, LAST = TRACE_CORR_LAST;
    uint8_t sent[TRACE_UUID_LEN], u[TRACE_UUID_LEN];
    memset(sent, 0xab, sizeof(sent));
    trace_wire_corr *a = trace_wire_corr_new(), *b = trace_wire_corr_new();
    ck_assert(a && b);
    ck_assert_uint_eq(corr_of(a, 1, 7, TRACE_RX, "[48,5,{},\"com.x\",[1]]", u), HAS | ANCHOR);
    ck_assert(memcmp(u, sent, TRACE_UUID_LEN) != 0);
    ck_assert(trace_wire_corr_rename(a, 7, 5, sent));
    ck_assert(!trace_wire_corr_rename(a, 7, 6, sent)); /* (no such request) */
    ck_assert_uint_eq(corr_of(a, 9, 7, TRACE_TX, "[50,5,{},[2]]", u), HAS | LAST);
    ck_assert_mem_eq(u, sent, TRACE_UUID_LEN);
    ck_assert(trace_wire_corr_invoked(b, 3, 77, sent, "com.x"));
    ck_assert_uint_eq(corr_of(b, 4, 3, TRACE_TX, "[68,77,12,{},[1]]", u), HAS);
    ck_assert_mem_eq(u, sent, TRACE_UUID_LEN);
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(b)), "com.x");
    ck_assert_uint_eq(corr_of(b, 5, 3, TRACE_RX, "[70,77,{},[2]]", u), HAS);
    ck_assert_mem_eq(u, sent, TRACE_UUID_LEN);
    /* A publication of another node: its EVENTs here. */
    sent[0] = 0x11;
    ck_assert(trace_wire_corr_published_as(b, 4242, sent, "com.t"));
    ck_assert_uint_eq(corr_of(b, 6, 3, TRACE_TX, "[36,9,4242,{},[1]]", u), HAS);
    ck_assert_mem_eq(u, sent, TRACE_UUID_LEN);
    ck_assert_str_eq(trace_str_get(trace_wire_corr_uri(b)), "com.t");
    trace_wire_corr_free(a);
    trace_wire_corr_free(b);
}

END_TEST

/* The incremental reader, called at random points while the chunks are appended: every seq
 * once, in order, but for the ones it was told it skipped; every message it hands out the
 * model's message of that seq, byte for byte; with a ring that holds everything, every message
 * whole, whatever the points it was called at. */
static void check_reader(uint32_t seed, size_t cap)
{
    rng_state = seed * 2654435761u + 7;
    collect c = {0};
    trace_wire_reader *rd = trace_wire_reader_new();
    ck_assert_ptr_nonnull(rd);
    scenario sc;
    size_t nst = 2 + rnd(4), nmsg = 5 + rnd(40), max_chunk = 1 + rnd(400);
    build_read(&sc, rd, &c, nst, nmsg, max_chunk, cap);
    reader_call(&sc);
    uint64_t expect = 0, skipped = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (c.v[i].seq != expect) {
            ck_assert_uint_gt(c.v[i].seq, expect);
            skipped += c.v[i].seq - expect;
        }
        expect = c.v[i].seq + 1;
    }
    ck_assert_uint_eq(skipped, sc.rd_skipped);
    ck_assert_uint_eq(expect, trace_wire_next_seq(sc.w)); /* up to the last seq */
    ck_assert_uint_eq(c.n + skipped, expect);
    size_t whole = 0, total = 0;
    for (size_t i = 0; i < sc.nst; i++) {
        for (size_t k = 0; k < sc.st[i].nmsgs; k++) {
            const gen_msg *m = &sc.st[i].msgs[k];
            total++;
            for (size_t j = 0; j < c.n; j++) { /* (small: a linear search does) */
                if (c.v[j].seq == m->seq && !c.v[j].lost) {
                    ck_assert_uint_eq(c.v[j].len, m->len);
                    ck_assert(m->len == 0 || memcmp(c.v[j].data, m->data, m->len) == 0);
                    whole++;
                }
            }
        }
    }
    if (trace_wire_dropped(sc.w) == 0 && !sc.rd_skipped) {
        bool gaps = false;
        for (size_t k = 0; k < sc.nchunks; k++) {
            gaps = gaps || sc.chunks[k].gap;
        }
        if (!gaps) {
            ck_assert_uint_eq(whole, total); /* everything held: everything whole */
        }
    }
    collect_free(&c);
    trace_wire_reader_free(rd);
    sc.rd = NULL;
    scenario_free(&sc);
}

START_TEST(test_reader_everything_held)
{
    check_reader((uint32_t)_i, (size_t)1 << 22);
}

END_TEST

START_TEST(test_reader_small_ring)
{
    check_reader(1000u + (uint32_t)_i, 8192 + (size_t)_i * 512);
}

END_TEST

/* A RawSocket stream of conn with n messages of len octets each ('x'), one chunk per message. */
static void raw_msgs(trace_wire *w, trace_wire_stream *st, size_t n, size_t len)
{
    unsigned char *b = malloc(4 + len);
    ck_assert_ptr_nonnull(b);
    memset(b, 'x', 4 + len);
    b[0] = 0;
    b[1] = (unsigned char)(len >> 16);
    b[2] = (unsigned char)(len >> 8);
    b[3] = (unsigned char)len;
    for (size_t i = 0; i < n; i++) {
        (void)trace_wire_capture(w, st, wt(1), b, 4 + len);
    }
    free(b);
}

/* A reader whose callback stopped it is past the chunks of that call all the same: when the ring
 * then lets those go, it reads on from the chunks it has not read, handing out no seq twice. */
START_TEST(test_reader_stopped)
{
    trace_wire *w = trace_wire_new(4096);
    ck_assert_ptr_nonnull(w);
    trace_wire_stream st;
    trace_wire_stream_init(&st, 1, TRACE_RX, TRACE_WIRE_RAWSOCKET, WAMP_SER_MSGPACK);
    raw_msgs(w, &st, 16, 196);
    trace_wire_reader *rd = trace_wire_reader_new();
    ck_assert_ptr_nonnull(rd);
    collect c = {.stop_after = 2};
    ck_assert_int_eq(trace_wire_reader_next(rd, w, on_seq, NULL, &c, NULL), WAMP_OK);
    ck_assert_uint_eq(c.n, 2);
    uint64_t next = trace_wire_reader_next_seq(rd);
    ck_assert_uint_eq(next, trace_wire_next_seq(w));
    raw_msgs(w, &st, 1, 396); /* lets the oldest chunks go */
    raw_msgs(w, &st, 3, 100);
    collect d = {0};
    trace_wire_walk walk;
    ck_assert_int_eq(trace_wire_reader_next(rd, w, on_seq, NULL, &d, &walk), WAMP_OK);
    ck_assert_uint_eq(d.n, 4); /* the four new messages, and nothing before them */
    for (size_t i = 0; i < d.n; i++) {
        ck_assert_uint_eq(d.v[i].seq, next + i);
        ck_assert(!d.v[i].lost);
        ck_assert_uint_eq(d.v[i].len, i == 0 ? 396 : 100);
    }
    ck_assert_uint_eq(walk.skipped, 0);
    collect_free(&c);
    collect_free(&d);
    trace_wire_reader_free(rd);
    trace_wire_free(w);
}

END_TEST

/* A stream that joined a large message holds no more than 64 KiB for it afterwards. */
START_TEST(test_reader_buffer_shrinks)
{
    trace_wire *w = trace_wire_new((size_t)4 << 20);
    ck_assert_ptr_nonnull(w);
    trace_wire_stream st;
    trace_wire_stream_init(&st, 1, TRACE_RX, TRACE_WIRE_RAWSOCKET, WAMP_SER_MSGPACK);
    trace_wire_reader *rd = trace_wire_reader_new();
    ck_assert_ptr_nonnull(rd);
    raw_msgs(w, &st, 1, 1000000);
    collect c = {0};
    ck_assert_int_eq(trace_wire_reader_next(rd, w, on_seq, NULL, &c, NULL), WAMP_OK);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_uint_eq(c.v[0].len, 1000000);
    ck_assert_uint_le(trace_wire_reader_buffered(rd), 64 * 1024);
    raw_msgs(w, &st, 2, 10000);
    ck_assert_int_eq(trace_wire_reader_next(rd, w, on_seq, NULL, &c, NULL), WAMP_OK);
    ck_assert_uint_eq(c.n, 3);
    ck_assert_uint_gt(trace_wire_reader_buffered(rd), 0); /* (a small one is kept) */
    ck_assert_uint_le(trace_wire_reader_buffered(rd), 64 * 1024);
    collect_free(&c);
    trace_wire_reader_free(rd);
    trace_wire_free(w);
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trace_wire");
    TCase *tc = tcase_create("wire");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_everything_held_comes_back, 0, 20);
    tcase_add_loop_test(tc, test_small_ring_loses_only_what_began_outside, 0, 200);
    tcase_add_test(tc, test_from_a_seq);
    tcase_add_test(tc, test_too_large_chunk_is_a_gap);
    tcase_add_test(tc, test_stop);
    tcase_add_test(tc, test_message_chunks);
    tcase_add_test(tc, test_correlation_bounded);
    tcase_add_test(tc, test_correlation_across_nodes);
    tcase_add_loop_test(tc, test_reader_everything_held, 0, 40);
    tcase_add_loop_test(tc, test_reader_small_ring, 0, 60);
    tcase_add_test(tc, test_reader_stopped);
    tcase_add_test(tc, test_reader_buffer_shrinks);
    tcase_add_test(tc, test_clock_and_empty);
    tcase_add_loop_test(tc, test_capture_whole, 0, 2);
    tcase_add_test(tc, test_facts);
    tcase_add_test(tc, test_correlation);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
