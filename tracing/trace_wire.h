/* trace_wire.h: the wire capture: connections' transport bytes, in the chunks they were read and
 * written in, kept in one ring of bytes; and its decoder, which turns what the ring holds back
 * into messages, each with the seq it was captured under.
 *
 * What it is for: a recorder whose cost on the message path is one append per read or write of
 * a connection (a header and one copy of the bytes, whatever number of messages they carry),
 * leaving every per-message step (the frames, the message's type and fields) to whoever reads.
 * A chunk is what the transport adapter read from or wrote to one connection at once, after TLS
 * and from the first octet after the opening handshake: WebSocket frames (RFC 6455, masked from
 * the client, unmasked from the server; no extension: the router negotiates none) or RawSocket
 * frames (a 4-octet prefix: type and 24-bit length). The capturer says, per chunk, how many data
 * messages end in it (nmsg: it framed or parsed them, it knows) and where its first frame starts
 * (lead), which is what lets the decoder pick up a stream whose earlier chunks the ring let go.
 *
 * Seqs: every message gets one, in the order the chunks were appended and, within a chunk, in
 * stream order: a chunk's messages are first_seq .. first_seq + nmsg - 1, where first_seq is the
 * capture's next seq when it was appended. The ring keeps the newest chunks that fit in its
 * capacity; a chunk that makes room drops the oldest whole chunks (their messages count as
 * dropped). Held messages are those of held chunks; one that began in a chunk no longer held (or
 * in one too large to keep, kept as a gap) is lost: the decoder reports it, by seq, as such, and
 * never hands out part of a message.
 *
 * Ownership: the capture owns its ring and copies what it is given. Decoding allocates its own
 * state and frees it before it returns. Service thread only. */
#ifndef TRACE_WIRE_H
#define TRACE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_record.h"
#include "wamp_err.h"

typedef enum trace_wire_framing {
    TRACE_WIRE_WEBSOCKET = 1,
    TRACE_WIRE_RAWSOCKET = 2,
    /* Not bytes of the wire: a fact the router notes about a connection (trace_wire_fact()),
     * kept in the ring among its traffic. No stream, no seq. */
    TRACE_WIRE_FACT = 3,
    /* Not bytes of the wire either: one whole message as the router handled it, for what no
     * transport frames (trace_wire_message()): a session without a connection's bytes (the
     * HTTP bridge's), a message the router dropped instead of writing it, a connection event.
     * One seq; no stream. */
    TRACE_WIRE_MESSAGE = 4
} trace_wire_framing;

/* What a TRACE_WIRE_MESSAGE chunk holds (its note): the low 8 bits one of these, and for
 * TRACE_WIRE_NOTE_DROPPED the reason's code (the router's own numbering) in bits 8..15 and the
 * message's WAMP code in bits 16..23 (for one dropped before it was encoded: no bytes). */
enum {
    TRACE_WIRE_NOTE_MESSAGE = 0,    /* a message received or sent */
    TRACE_WIRE_NOTE_DROPPED = 1,    /* a message the router did not send */
    TRACE_WIRE_NOTE_CONNECTION = 2, /* a connection event: a JSON object of text (no conn) */
};

/* trace_wire_chunk.lead when no frame starts in the chunk (it lies inside one frame). */
#define TRACE_WIRE_NO_START UINT32_MAX

/* Bytes of a chunk's header in the ring (its bytes follow, padded to 8). */
#define TRACE_WIRE_CHUNK_HEADER 48

/* The smallest ring (bytes). */
#define TRACE_WIRE_MIN_CAP 4096

/* What the capturer says of one chunk. */
typedef struct trace_wire_chunk {
    uint64_t conn;    /* the connection (nonzero); one stream per connection and direction */
    uint64_t ts_ns;   /* when it was read or written: a monotonic clock's reading */
    uint64_t wall_ns; /* ... and the wall clock's (ns since the epoch) */
    uint32_t lead;    /* octets at its start that continue a frame begun in an earlier chunk of
                       * the stream (0: a frame starts at its first octet), or TRACE_WIRE_NO_START */
    uint32_t nmsg;    /* data messages whose last octet is in it */
    uint8_t dir;      /* TRACE_RX (read from the connection) or TRACE_TX (written to it) */
    uint8_t framing;  /* trace_wire_framing */
    uint8_t ser;      /* wamp_ser of the connection's messages */
} trace_wire_chunk;

typedef struct trace_wire trace_wire;

/* A capture whose ring holds cap bytes (at least TRACE_WIRE_MIN_CAP; rounded up to 8), allocated
 * now. NULL without memory. */
trace_wire *trace_wire_new(size_t cap);
void trace_wire_free(trace_wire *w); /* NULL-safe */

/* Appends the chunk c of n bytes at p (n may be 0), dropping the oldest chunks to make room.
 * A chunk too large for the ring keeps its header alone: a gap in its stream, its messages lost.
 * Returns the seq of its first message. Never fails. */
uint64_t trace_wire_append(trace_wire *w, const trace_wire_chunk *c, const void *p, size_t n);

/* The seq the next message will get; the oldest seq of a held chunk (next seq: none held). */
uint64_t trace_wire_next_seq(const trace_wire *w);
uint64_t trace_wire_first_seq(const trace_wire *w);
/* Chunks ever appended (facts and message chunks included): the next one's index. */
uint64_t trace_wire_appended(const trace_wire *w);
/* Messages of chunks dropped to make room (seqs below first_seq), and chunks held. */
uint64_t trace_wire_dropped(const trace_wire *w);
size_t trace_wire_chunks(const trace_wire *w);
/* Bytes of the ring in use (headers, bytes and padding of held chunks), and its size. */
size_t trace_wire_used(const trace_wire *w);
size_t trace_wire_capacity(const trace_wire *w);

/* The capturer's side of one stream (a connection's reads, or its writes): which it is, and where
 * its frames are. trace_wire_capture() follows the frame headers through the bytes (not the
 * payloads: their lengths are in the headers) to say where each chunk's first frame starts and
 * how many messages end in it. Caller storage (one per connection and direction, next to the
 * connection), set up by trace_wire_stream_init() at the first octet after the handshake. */
typedef struct trace_wire_stream {
    uint64_t conn;
    uint64_t need;   /* payload octets of the current frame still to come */
    uint8_t hdr[14]; /* a frame header split between chunks, so far */
    uint8_t hdr_have;
    uint8_t dir, framing, ser;
    bool in_payload;
    bool ends_msg; /* the current frame is a message's last */
    /* The index of its last chunk (trace_wire_appended() - 1 then; set by the capture calls): a
     * fact about the message being handled names the chunk it came in by it. */
    uint64_t last_chunk;
} trace_wire_stream;

void trace_wire_stream_init(trace_wire_stream *st, uint64_t conn, uint8_t dir, uint8_t framing,
                            uint8_t ser);

/* When a chunk was read or written: a monotonic clock's reading and the wall clock's. */
typedef struct trace_wire_time {
    uint64_t ts_ns, wall_ns;
} trace_wire_time;

/* Appends n bytes at p that stream st read or wrote (the next ones of its stream, in order) as a
 * chunk at time t: trace_wire_append() with its lead and nmsg found by following st's frames.
 * Returns the seq of its first message. */
uint64_t trace_wire_capture(trace_wire *w, trace_wire_stream *st, trace_wire_time t, const void *p,
                            size_t n);

/* trace_wire_capture() of n bytes the caller framed itself: nmsg whole messages, each one data
 * frame with FIN set, from p[0] on (a writer's batch of small messages), so that nothing needs
 * following. Where st is inside a frame it follows the frames after all. */
uint64_t trace_wire_capture_whole(trace_wire *w, trace_wire_stream *st, trace_wire_time t,
                                  const void *p, size_t n, uint32_t nmsg);

/* Appends a fact of n bytes at p about connection conn at time t (a chunk of TRACE_WIRE_FACT
 * framing, without seqs): what the reader cannot find in the bytes, e.g. the session that joined
 * on a connection. Dropped with the traffic around it. */
void trace_wire_fact(trace_wire *w, uint64_t conn, trace_wire_time t, const void *p, size_t n);

/* A piece of a fact's bytes (trace_wire_fact_parts()). */
typedef struct trace_wire_part {
    const void *p;
    size_t n;
} trace_wire_part;

/* trace_wire_fact() of the n_parts pieces one after the other, written straight into the ring:
 * a fact made of fields needs no buffer of its own. */
void trace_wire_fact_parts(trace_wire *w, uint64_t conn, trace_wire_time t,
                           const trace_wire_part *parts, size_t n_parts);

/* Appends one whole message of n bytes at p (a TRACE_WIRE_MESSAGE chunk: no framing), of
 * connection conn (0: none), direction dir and serializer ser, at time t, with note (see the
 * notes above). Returns its seq. */
uint64_t trace_wire_message(trace_wire *w, uint64_t conn, uint8_t dir, uint8_t ser,
                            trace_wire_time t, uint32_t note, const void *p, size_t n);

/* One message as decoded: borrowed, valid during the callback only. */
typedef struct trace_wire_msg {
    uint64_t seq;
    uint64_t conn;
    uint64_t ts_ns;   /* of the chunk its last octet came in */
    uint64_t wall_ns; /* (its wall clock) */
    uint8_t dir;
    uint8_t ser;
    const unsigned char *data; /* unmasked, its frames joined */
    size_t len;
    uint32_t note;  /* a TRACE_WIRE_MESSAGE chunk's note; TRACE_WIRE_NOTE_MESSAGE otherwise */
    uint64_t chunk; /* the index of the chunk its last octet came in (trace_wire_appended()) */
} trace_wire_msg;

/* Called for each message (msg) or each lost seq (msg NULL, seq given); false stops the walk. */
typedef bool (*trace_wire_fn)(void *ctx, uint64_t seq, const trace_wire_msg *msg);

typedef struct trace_wire_walk {
    uint64_t first_seq; /* the oldest held seq when the walk began */
    uint64_t next_seq;  /* the next seq when the walk began */
    uint64_t messages;  /* messages handed to fn */
    uint64_t lost;      /* lost seqs handed to fn */
    uint64_t mismatch;  /* messages decoded beyond a chunk's nmsg (not handed out) */
    uint64_t skipped;   /* trace_wire_reader_next(): seqs let go before the reader reached them */
} trace_wire_walk;

/* Decodes the held chunks, oldest first, and calls fn for every seq from from_seq on, in seq
 * order: the message, or NULL when it is lost. *out (may be NULL) is filled either way.
 * WAMP_ENOMEM: the decoder's state could not grow (fn saw a prefix of the seqs). */
wamp_err trace_wire_decode(const trace_wire *w, uint64_t from_seq, trace_wire_fn fn, void *ctx,
                           trace_wire_walk *out);

/* A held fact (trace_wire_fact()): its connection and bytes (borrowed for the call). early: the
 * pass over every held fact before the walk (so that what a connection carried before its
 * first fact can be told from it too); else the walk has come to it, after the messages
 * before it and before those after it. */
typedef void (*trace_wire_fact_fn)(void *ctx, uint64_t conn, const void *p, size_t n, bool early);

/* trace_wire_decode() that also hands the held facts to fact (ctx for both): every one early,
 * then each again in its place in the walk. */
wamp_err trace_wire_decode_facts(const trace_wire *w, uint64_t from_seq, trace_wire_fn fn,
                                 trace_wire_fact_fn fact, void *ctx, trace_wire_walk *out);

/* An incremental reader: it decodes each chunk once, whatever number of times it is called,
 * keeping its streams' parse states between calls. Each call hands out the messages of the
 * chunks appended since the last (at the first call, of every held chunk), every seq from where
 * the last call stopped (seq 0 at first), in order (message or lost), and their facts (those
 * among the new chunks early, then each in its place). When the ring let chunks go before the
 * reader reached them, their seqs are counted in walk.skipped (not handed out) and the streams
 * are picked up at their next frame starts, as the stateless decoder picks up a stream whose
 * earlier chunks are gone. A callback's false stops the handing out; the reader is past those
 * chunks all the same. NULL without memory. Service thread only; the reader belongs to one capture.
 */
typedef struct trace_wire_reader trace_wire_reader;
trace_wire_reader *trace_wire_reader_new(void);
void trace_wire_reader_free(trace_wire_reader *r); /* NULL-safe */
/* WAMP_ENOMEM: the walk ended early (the rest of its chunks are lost to the reader). */
wamp_err trace_wire_reader_next(trace_wire_reader *r, const trace_wire *w, trace_wire_fn fn,
                                trace_wire_fact_fn fact, void *ctx, trace_wire_walk *out);
/* The seq the reader hands out next (the capture's next seq after a call). */
uint64_t trace_wire_reader_next_seq(const trace_wire_reader *r);
/* The bytes the reader's streams hold for the messages they join: a stream keeps at most 64 KiB
 * between messages (a larger buffer is freed once its message is done). */
size_t trace_wire_reader_buffered(const trace_wire_reader *r);

#endif /* TRACE_WIRE_H */
