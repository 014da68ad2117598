/* fuzz_wire.c: the wire capture (tracing/trace_wire.h) on arbitrary bytes: the router captures
 * what a client sends before its parser has checked it, so the capturer's scan and the decoder
 * must take any stream. Input: byte 0 picks the framing (WebSocket or RawSocket) of two streams
 * (connection 1's reads and writes), byte 1 the small ring's size; then chunks, each a length
 * octet (0-255) and that many bytes, going to the two streams in turn, every third one a whole
 * message of its own (trace_wire_message(): no frames) instead. Every chunk is captured into a
 * small ring (which drops and loses) and into one that holds everything; an incremental reader
 * (trace_wire_reader) follows the small ring, called after the chunks whose length octet is odd.
 * Properties: never crashes or leaks; each ring's walk hands out every seq from its oldest held
 * one to its next one exactly once, in order; the decoder never finds more messages in a chunk
 * than the capturer counted; both rings count the same seqs; and every message the small ring
 * gives back whole is, byte for byte, the message of the same seq in the ring that holds all; the
 * reader hands out every seq once, in order, but for those it says it skipped, and each message
 * it gives back whole is the same message too. */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "trace_record.h"
#include "trace_wire.h"

#define MAX_SEQS 4096

typedef struct seen {
    uint64_t next;                /* seq expected next */
    size_t n;                     /* seqs seen */
    unsigned char *msg[MAX_SEQS]; /* copies of whole messages by seq - first (NULL: lost) */
    size_t len[MAX_SEQS];
    uint64_t first;
} seen;

static bool on_seq(void *ctx, uint64_t seq, const trace_wire_msg *m)
{
    seen *s = ctx;
    FUZZ_CHECK(seq == s->next);
    s->next++;
    if (seq - s->first < MAX_SEQS) {
        size_t i = (size_t)(seq - s->first);
        if (m) {
            FUZZ_CHECK(m->seq == seq && m->conn == 1);
            s->msg[i] = malloc(m->len ? m->len : 1);
            FUZZ_CHECK(s->msg[i] != NULL);
            if (m->len) {
                memcpy(s->msg[i], m->data, m->len);
            }
            s->len[i] = m->len;
        }
    }
    s->n++;
    return true;
}

/* on_seq() for the reader: seqs it skipped are counted out (they come no more). */
static bool on_seq_follow(void *ctx, uint64_t seq, const trace_wire_msg *m)
{
    seen *s = ctx;
    FUZZ_CHECK(seq >= s->next);
    s->next = seq; /* (a skip: the reader's walk.skipped accounts for it) */
    return on_seq(ctx, seq, m);
}

static void walk(const trace_wire *w, seen *s)
{
    memset(s, 0, sizeof(*s));
    s->first = s->next = trace_wire_first_seq(w);
    trace_wire_walk out;
    FUZZ_CHECK(trace_wire_decode(w, 0, on_seq, s, &out) == WAMP_OK);
    FUZZ_CHECK(out.first_seq == s->first && out.next_seq == trace_wire_next_seq(w));
    FUZZ_CHECK(s->next == trace_wire_next_seq(w)); /* every held seq, once, in order */
    FUZZ_CHECK(out.messages + out.lost == s->n);
    FUZZ_CHECK(out.mismatch == 0);
}

/* The reader's calls: seqs handed out so far must continue where the last call stopped. */
typedef struct follow {
    trace_wire_reader *rd;
    seen got; /* (first = 0) */
} follow;

static void follow_call(follow *f, const trace_wire *w)
{
    trace_wire_walk out;
    uint64_t before = f->got.next;
    wamp_err err = trace_wire_reader_next(f->rd, w, on_seq_follow, NULL, &f->got, &out);
    FUZZ_CHECK(err == WAMP_OK);
    FUZZ_CHECK(f->got.next == trace_wire_next_seq(w));
    FUZZ_CHECK(out.messages + out.lost + out.skipped == f->got.next - before);
    FUZZ_CHECK(out.mismatch == 0);
    FUZZ_CHECK(trace_wire_reader_next_seq(f->rd) == trace_wire_next_seq(w));
}

static void seen_fini(seen *s)
{
    for (size_t i = 0; i < MAX_SEQS; i++) {
        free(s->msg[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    uint8_t framing = data[0] & 1 ? TRACE_WIRE_RAWSOCKET : TRACE_WIRE_WEBSOCKET;
    size_t cap = TRACE_WIRE_MIN_CAP + (size_t)data[1] * 64;
    trace_wire *small = trace_wire_new(cap), *all = trace_wire_new((size_t)1 << 22);
    FUZZ_CHECK(small && all);
    trace_wire_stream ss[2], sa[2];
    for (int d = 0; d < 2; d++) {
        trace_wire_stream_init(&ss[d], 1, d ? TRACE_TX : TRACE_RX, framing, WAMP_SER_MSGPACK);
        sa[d] = ss[d];
    }
    static follow fo;
    memset(&fo, 0, sizeof(fo));
    fo.rd = trace_wire_reader_new();
    FUZZ_CHECK(fo.rd != NULL);
    size_t off = 2;
    for (unsigned c = 0, k = 0; off < size; c++) {
        size_t n = data[off++];
        bool call = n & 1;
        n = n < size - off ? n : size - off;
        trace_wire_time t = {.ts_ns = off, .wall_ns = off};
        uint64_t a, b;
        if (c % 3 == 2) { /* a message chunk, between the streams' chunks */
            a = trace_wire_message(small, 1, TRACE_RX, WAMP_SER_JSON, t, 0, data + off, n);
            b = trace_wire_message(all, 1, TRACE_RX, WAMP_SER_JSON, t, 0, data + off, n);
            FUZZ_CHECK(a == b && trace_wire_next_seq(all) == b + 1);
        } else {
            a = trace_wire_capture(small, &ss[k], t, data + off, n);
            b = trace_wire_capture(all, &sa[k], t, data + off, n);
            FUZZ_CHECK(a == b); /* the same scan, the same seqs */
            k ^= 1;
        }
        off += n;
        if (call) {
            follow_call(&fo, small);
        }
    }
    follow_call(&fo, small);
    FUZZ_CHECK(trace_wire_next_seq(small) == trace_wire_next_seq(all));
    FUZZ_CHECK(trace_wire_dropped(all) == 0 && trace_wire_first_seq(all) == 0);
    FUZZ_CHECK(trace_wire_used(small) <= cap);
    static seen ws, wa;
    walk(small, &ws);
    walk(all, &wa);
    for (uint64_t q = ws.first; q < ws.next && q < MAX_SEQS; q++) {
        size_t i = (size_t)(q - ws.first);
        if (ws.msg[i]) { /* whole in the small ring: the same message in the whole one */
            FUZZ_CHECK(wa.msg[q] != NULL && wa.len[q] == ws.len[i]);
            FUZZ_CHECK(ws.len[i] == 0 || memcmp(wa.msg[q], ws.msg[i], ws.len[i]) == 0);
        }
    }
    for (uint64_t q = 0; q < fo.got.next && q < MAX_SEQS; q++) {
        if (fo.got.msg[q]) { /* whole to the reader: the same message in the whole ring */
            FUZZ_CHECK(wa.msg[q] != NULL && wa.len[q] == fo.got.len[q]);
            FUZZ_CHECK(fo.got.len[q] == 0 || memcmp(wa.msg[q], fo.got.msg[q], fo.got.len[q]) == 0);
        }
    }
    seen_fini(&fo.got);
    trace_wire_reader_free(fo.rd);
    seen_fini(&ws);
    seen_fini(&wa);
    trace_wire_free(small);
    trace_wire_free(all);
    return 0;
}
