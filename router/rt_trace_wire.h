/* rt_trace_wire.h: the wire capture (wampscope.tracing.wire_capture; tracing/trace_wire.h) on the
 * router's side: the transport adapters append what they read and write through it, and the
 * management API reads it back as trace records (the `get_wire_data` procedure). Service thread
 * only. */
#ifndef RT_TRACE_WIRE_H
#define RT_TRACE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rt_router.h"
#include "rt_session.h"
#include "trace_record.h"
#include "trace_wire.h"
#include "wamp_buf.h"
#include "wamp_err.h"

/* One connection in the wire capture: its two streams (the same connection id; 0 once it is
 * captured no further) and the octets a transport adapter writes before its first frame (the
 * opening handshake's answer), which are no frames. Made by rt_wire_conn_start() for the
 * adapter, which owns it (rt_wire_conn_free()); its session borrows it. */
typedef struct rt_wire_conn {
    trace_wire_stream rx, tx;
    size_t tx_skip;
} rt_wire_conn;

/* A new connection of session s (NULL: none) in the wire capture, of framing (trace_wire_framing)
 * and ser, whose first skip octets written are no frames; NULL when the capture does not run
 * (or without memory: the connection is not captured). */
rt_wire_conn *rt_wire_conn_start(rt_router *rt, rt_session *s, uint8_t framing, wamp_ser ser,
                                 size_t skip);
void rt_wire_conn_free(rt_wire_conn *wc); /* NULL-safe */

/* Appends the n bytes at p (the next ones of st's stream) to the wire capture, stamped with the
 * trace clock's reading and the wall clock's (its records' pc and ts). */
void rt_router_wire_capture(rt_router *rt, trace_wire_stream *st, const void *p, size_t n);
/* rt_wire_conn_tx() out of line: the octets to skip first. */
void rt_wire_conn_tx_skip(rt_router *rt, rt_wire_conn *wc, const void *p, size_t n);

/* What the adapter read (n octets at p, as they came: before any unmasking) and wrote, for a
 * connection wc of the capture; nothing when wc is NULL (one branch). */
static inline void rt_wire_conn_rx(rt_router *rt, rt_wire_conn *wc, const void *p, size_t n)
{
    if (wc) {
        rt_router_wire_capture(rt, &wc->rx, p, n);
    }
}

static inline void rt_wire_conn_tx(rt_router *rt, rt_wire_conn *wc, const void *p, size_t n)
{
    if (wc) {
        rt_wire_conn_tx_skip(rt, wc, p, n);
    }
}

/* Registers the wire capture's observers when it runs (after the realms are made): on rt's
 * router-wide list the routing reports (routed calls and publications noted as facts, for its
 * correlation), on every realm's the joins (noted as facts; a session joining the management
 * realm is captured no further, its HELLO the last of it). */
wamp_err rt_trace_wire_attach(rt_router *rt);

/* rt_wire_conn_tx() of nmsg messages the adapter framed itself, one unfragmented data frame
 * each (trace_wire_capture_whole()), after its handshake's answer. */
void rt_wire_conn_tx_whole(rt_router *rt, rt_wire_conn *wc, const void *p, size_t n, uint32_t nmsg);

/* One whole message of n bytes at p that wc's session received (dir TRACE_RX) or was sent
 * (TRACE_TX) without a transport's framing (the HTTP bridge's; trace_wire_message()); nothing
 * when wc is NULL. */
void rt_wire_conn_msg(rt_router *rt, rt_wire_conn *wc, uint8_t dir, const void *p, size_t n);

/* A message of WAMP code type that the router dropped instead of sending it to s (drop: the
 * reason, one of rt_session.c's; wire: its bytes, NULL when it was not encoded), noted in the
 * capture on s's connection. Nothing when s is not captured. */
void rt_wire_dropped(rt_session *s, int type, const wamp_buf *wire, const char *drop);

/* A connection event outside any session (rt_trace_connection()'s info, borrowed), noted in the
 * capture when it runs. */
void rt_router_wire_connection(rt_router *rt, const json_t *info);

/* One seq of rt_router_wire_read(): the record a trace would show of the captured message (rec,
 * borrowed for the call: its bytes are the message as it went over the wire, its peer the
 * session of its connection while that session is joined, else NULL), or rec NULL: seq is lost
 * (the message began before what the capture holds). Returns false to stop. */
typedef bool (*rt_wire_read_fn)(void *ctx, uint64_t seq, const trace_record *rec);

/* Reads the held messages of the wire capture from from_seq on, in seq order (trace_wire_decode())
 * and fills *out (may be NULL). WAMP_EINVAL: no wire capture runs; WAMP_ENOMEM: the walk ended
 * early. */
wamp_err rt_router_wire_read(rt_router *rt, uint64_t from_seq, rt_wire_read_fn fn, void *ctx,
                             trace_wire_walk *out);

/* A follower of the wire capture (the flight recorder's): rt_router_wire_follow() hands out, at
 * each call, the records of what the capture took in since the last one, each message decoded
 * once (trace_wire_reader), with its session and correlation as rt_router_wire_read() gives
 * them; it keeps the streams' states, the actions of its last 65,536 to 131,072 requests and the
 * joins of live connections between calls. NULL without memory. */
typedef struct rt_wire_follow rt_wire_follow;
rt_wire_follow *rt_wire_follow_new(void);
void rt_wire_follow_free(rt_wire_follow *f); /* NULL-safe */
/* Messages before from_seq are read for their actions only (not handed out, lost ones
 * neither). WAMP_EINVAL: no wire capture runs; WAMP_ENOMEM: the walk ended early.
 * out->skipped: the seqs the capture let go before f reached them (not handed out). */
wamp_err rt_router_wire_follow(rt_router *rt, rt_wire_follow *f, uint64_t from_seq,
                               rt_wire_read_fn fn, void *ctx, trace_wire_walk *out);
/* The capture's seq f hands out next (0 before its first call). */
uint64_t rt_wire_follow_next_seq(const rt_wire_follow *f);
/* Appends the routing facts gathered since the capture's last chunk (a walk does first). A
 * reader that notes the capture's seqs before it walks calls this before: the append may let the
 * oldest chunks go. */
void rt_router_wire_flush(rt_router *rt);

#endif /* RT_TRACE_WIRE_H */
