/* trace_render.h: records, trace metadata and live-feed periods as the JSON the management API
 * returns (../mgmt/README.md "Records", "Trace metadata", "Live data").
 * Rendering happens only when a client reads: the stored bytes are decoded here, Arguments and
 * ArgumentsKw are stripped here when trace_app_payload is false, and CHALLENGE's Extra /
 * AUTHENTICATE's Signature read "***" (they were redacted before being stored; this redacts
 * again as a safety net).
 * Ownership: every function returns a new value (one reference, the caller's), or NULL on
 * allocation failure. No state; service thread only (jansson). */
#ifndef TRACE_RENDER_H
#define TRACE_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "trace.h"
#include "trace_record.h"
#include "wamp_wr.h"

/* "2017-08-15T20:36:36.597Z": ISO-8601 UTC with milliseconds; 24 characters + NUL. */
#define TRACE_ISO_LEN 25

/* The record object: seq, pc, ts (float seconds), direction ("rx"/"tx"; null for markers),
 * msg_type ("Publish", ..., "Marker", "Unknown" for undecodable input), realm, session_id,
 * authid, authrole (null when unknown), correlation (UUID string or null),
 * correlation_is_anchor, correlation_is_last, uri (null if none), serializations
 * ({"json": n, "msgpack": m}, serializers that were used only), msg (the decoded message, null
 * if no bytes were kept or they do not decode; markers: the meta object), and "dropped" only
 * when set. app_payload false: msg loses its Arguments and ArgumentsKw. An action record
 * (TRACE_MSG_ACTION) renders as trace_action_write_record() says. */
json_t *trace_render_record(const trace_record *r, bool app_payload);
/* A gap item of the seqs from_seq..to_seq (mgmt/README.md, "Gap items"), with reason; its seq is
 * to_seq. NULL without memory. */
json_t *trace_render_gap(uint64_t from_seq, uint64_t to_seq, const char *reason);

/* The records of t with from_seq <= seq <= to_seq (TRACE_SEQ_NONE: up to the newest), oldest
 * first, at most limit (see trace_store_range()), as an array of record objects rendered with
 * t's trace_app_payload option. A persisted trace reads the seqs older than its in-memory store
 * from disk. */
json_t *trace_render_records(const trace *t, uint64_t from_seq, uint64_t to_seq, size_t limit);

/* The same array written into w (any serializer, or tree mode) without building JSON values
 * for the stored messages where w's serializer is theirs: those bytes are copied as they are
 * (get_trace_data pages go out this way). Errors are left in w (wamp_wr_error()). */
void trace_render_records_to(const trace *t, uint64_t from_seq, uint64_t to_seq, size_t limit,
                             wamp_wr *w);

/* Trace metadata: {id, node_id, worker_id, status, started, ended, runtime, options, first_seq,
 * next_seq, records, dropped, bytes, persistent_id, stop_reason}. node_id / worker_id are
 * echoed (NULL: null); ended and stop_reason are null while running; runtime in seconds up to
 * now_pc_ns (monotonic) while running; options are the effective options (defaults filled in);
 * persistent_id is the directory name of a persisted trace, null otherwise; for a persisted
 * trace, first_seq / records / dropped / bytes count what is readable from disk and memory
 * (trace_first_seq() and siblings in trace.h). */
json_t *trace_render_meta(const trace *t, const char *node_id, const char *worker_id,
                          uint64_t now_pc_ns);

/* The period argument of on_trace_data: {period, first_seq, last_seq, period_start,
 * finished_ts}, times as ISO-8601 strings like the metadata's. */
json_t *trace_render_batch(const trace_batch *b);

/* Formats a wall-clock time (ns since the epoch) as TRACE_ISO_LEN - 1 characters + NUL. */
void trace_format_iso8601(uint64_t ts_ns, char out[TRACE_ISO_LEN]);

#endif /* TRACE_RENDER_H */
