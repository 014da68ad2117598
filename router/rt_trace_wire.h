/* rt_trace_wire.h: the wire capture (wampscope.tracing.wire_capture; tracing/trace_wire.h) on the
 * router's side: the transport adapters append what they read and write through it, and the
 * management API reads it back as trace records (the `get_wire_data` procedure). Service thread
 * only. */
#ifndef RT_TRACE_WIRE_H
#define RT_TRACE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_router.h"
#include "rt_session.h"
#include "trace_record.h"
#include "trace_wire.h"
#include "wamp_err.h"

/* Whether the wire capture runs, with a new connection id in *conn for a connection's two
 * streams (0 when it does not run). */
bool rt_router_wire_conn(rt_router *rt, uint64_t *conn);

/* Appends the n bytes at p (the next ones of st's stream) to the wire capture, stamped with the
 * trace clock's reading and the wall clock's (its records' pc and ts). */
void rt_router_wire_capture(rt_router *rt, trace_wire_stream *st, const void *p, size_t n);

/* Registers the wire capture's observer on rt's router-wide list when the capture runs: routed
 * calls and publications noted as facts, for the correlation of what it holds. */
wamp_err rt_trace_wire_attach(rt_router *rt);

/* s has joined its realm: on the management realm its connection is captured no further (what a
 * management client reads would otherwise be captured again as it goes out). */
void rt_trace_wire_joined(rt_session *s);

/* rt_router_wire_capture() of nmsg messages the adapter framed itself, one unfragmented data
 * frame each (trace_wire_capture_whole()). */
void rt_router_wire_capture_whole(rt_router *rt, trace_wire_stream *st, const void *p, size_t n,
                                  uint32_t nmsg);

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

#endif /* RT_TRACE_WIRE_H */
