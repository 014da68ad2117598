/* fuzz_wire.c: the wire capture (tracing/trace_wire.h) on arbitrary bytes: the router captures
 * what a client sends before its parser has checked it, so the capturer's scan and the decoder
 * must take any stream. Input: byte 0 picks the framing (WebSocket or RawSocket) of two streams
 * (connection 1's reads and writes), byte 1 the small ring's size; then chunks, each a length
 * octet (0-255) and that many bytes, going to the two streams in turn. Every chunk is captured
 * into a small ring (which drops and loses) and into one that holds everything.
 * Properties: never crashes or leaks; each ring's walk hands out every seq from its oldest held
 * one to its next one exactly once, in order; the decoder never finds more messages in a chunk
 * than the capturer counted; both rings count the same seqs; and every message the small ring
 * gives back whole is, byte for byte, the message of the same seq in the ring that holds all. */
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
    size_t off = 2;
    for (int k = 0; off < size; k ^= 1) {
        size_t n = data[off++];
        n = n < size - off ? n : size - off;
        trace_wire_time t = {.ts_ns = off, .wall_ns = off};
        uint64_t a = trace_wire_capture(small, &ss[k], t, data + off, n);
        uint64_t b = trace_wire_capture(all, &sa[k], t, data + off, n);
        FUZZ_CHECK(a == b); /* the same scan, the same seqs */
        off += n;
    }
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
    seen_fini(&ws);
    seen_fini(&wa);
    trace_wire_free(small);
    trace_wire_free(all);
    return 0;
}
