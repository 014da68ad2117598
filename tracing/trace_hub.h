/* trace_hub.h: the registry of traces and the entry points of the router's rx/tx hooks.
 *
 * The router owns one hub (created with the router, freed after it) and, for every message a
 * session receives or is sent (router/rt_trace.c):
 *     if (trace_hub_is_active(hub)) {          // one predictable branch when nothing runs
 *         trace_ctx c = {...};                 // direction, type, session, realm, uri, ...
 *         if (trace_hub_match(hub, &c)) {      // filters only: no allocation, no JSON
 *             trace_input in = {...};          // times, peer, correlation, bytes
 *             trace_hub_record_matched(hub, &c, &in);
 *         }
 *     }
 * and, for a fan-out's next receiver, trace_hub_repeat() first. A record is built only if at
 * least one trace keeps the message: rx bytes are copied into the ring of each in-memory
 * store that keeps them; tx records take a reference on the buffer the router already encoded;
 * persisted traces encode the message straight into their write buffer. It never renders JSON.
 * trace_hub_on_message() does match and record in one call (tests and bench-capture use it).
 * Every 100 ms the router calls trace_hub_tick() (duration auto-stop, live-feed batches).
 * The management layer starts, finds, lists, stops and deletes traces here, and reads them
 * through trace.h / trace_store.h / trace_render.h.
 * Ownership: the hub owns every trace; trace pointers it returns are borrowed and stay valid
 * until trace_hub_delete() of that trace or trace_hub_free(). Service thread only. */
#ifndef TRACE_HUB_H
#define TRACE_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "trace.h"
#include "trace_filter.h"
#include "trace_record.h"
#include "wamp_buf.h"
#include "wamp_err.h"
#include "wamp_types.h"

typedef struct trace_hub trace_hub;

/* Receivers trace_hub_repeat() gathers before it appends them. */
#define TRACE_HUB_REPEAT_BATCH 64

/* The fields of the hub that callers use inline, through the functions below only. It is the
 * first member of struct trace_hub (checked in trace_hub_int.h), so trace_hub_is_active()
 * inlines to one load and one compare. */
struct trace_hub_pub {
    unsigned running; /* traces running now */
    /* The trace trace_hub_record_fast() serves, noted whenever traces are started, deleted or
     * reloaded and every tick (NULL: none qualifies): see trace_hub_fast_ready(). */
    trace *fast;

    /* The message last sent and recorded that trace_hub_repeat() records again for another
     * receiver (kept by trace_hub_capture.c), and the receivers it gathered since. */
    struct trace_hub_rep {
        wamp_buf *wire; /* a reference; NULL: nothing to repeat */
        uint64_t pc_ns; /* its clock reading */
        bool has_corr;  /* it has a correlation, corr */
        uint8_t corr[TRACE_UUID_LEN];
        size_t n_pend;                            /* receivers gathered: */
        trace_peer *pend[TRACE_HUB_REPEAT_BATCH]; /* references, in order */
    } rep;
};

/* true if at least one trace is running. hub must not be NULL. */
static inline bool trace_hub_is_active(const trace_hub *hub)
{
    return ((const struct trace_hub_pub *)(const void *)hub)->running != 0;
}

/* true if the one trace running is the hub's fast trace: a message-level trace whose filter keeps
 * everything outside the management realm, without max_records (the flight recorder as
 * configured by default, or `start all`, in memory or persisted). Every message then goes to that
 * trace alone, and the caller may hand it to trace_hub_record_fast() instead of matching it. */
static inline bool trace_hub_fast_ready(const trace_hub *hub)
{
    const struct trace_hub_pub *p = (const struct trace_hub_pub *)(const void *)hub;
    return p->fast && p->running == 1 && trace_is_running(p->fast);
}

/* The word trace_hub_is_active() reads (non-zero while a trace runs), for a caller that checks
 * it through a pointer (the router's observer list). Valid as long as hub. */
static inline const unsigned *trace_hub_active_word(const trace_hub *hub)
{
    return &((const struct trace_hub_pub *)(const void *)hub)->running;
}

/* New hub holding at most max_traces traces (running or stopped; >= 1). mgmt_realm (copied;
 * NULL = none) is the management realm, excluded from traces whose realms option does not name
 * it. NULL on allocation failure or max_traces == 0. */
trace_hub *trace_hub_new(size_t max_traces, const char *mgmt_realm);
/* Frees every trace and its records (NULL-safe). */
void trace_hub_free(trace_hub *hub);
/* Defaults of limit (records held) and max_bytes for traces started from now on whose options
 * do not set them (wampscope.tracing.default_limit / default_max_bytes). 0 keeps the built-in
 * default (TRACE_OPT_LIMIT_DEFAULT / TRACE_OPT_MAX_BYTES_DEFAULT); other values are clamped into
 * the option's range. Traces already held keep their limits. */
void trace_hub_set_defaults(trace_hub *hub, size_t limit, uint64_t max_bytes);

/* Persistence settings for traces started with persist: true from now on, and for
 * trace_hub_load() (cfg is copied, data_dir included). WAMP_ENOMEM (nothing changes). */
wamp_err trace_hub_set_persist(trace_hub *hub, const trace_persist_config *cfg);
/* Defaults of the retention options of persisted traces (wampscope.tracing.persist_max_bytes /
 * persist_max_age); 0 = built-in (1 GiB / no age limit). */
void trace_hub_set_persist_defaults(trace_hub *hub, uint64_t max_bytes, uint64_t max_age_s);

/* Log sink of the hub (NULL = silent): one line per event worth a log (a trace reloaded, a torn
 * tail cut, a trace stopped by an I/O error). error: true for problems. */
typedef void (*trace_hub_log_fn)(void *ctx, bool error, const char *line);
void trace_hub_set_log(trace_hub *hub, trace_hub_log_fn fn, void *ctx);

/* Reloads every persisted trace found in the data directory (after a restart), as stopped
 * traces (stop_reason as saved, or "crash"), oldest first, up to max_traces; directories that
 * cannot be reloaded are logged and left alone. Returns how many traces were reloaded. */
size_t trace_hub_load(trace_hub *hub);

/* Starts a trace named id (NULL: the first free name of "trace1", "trace2", ... from a counter
 * that never goes back) with options (NULL / JSON null = defaults) at (pc_ns, ts_ns).
 *   WAMP_OK:       *out = the new running trace (owned by the hub).
 *   WAMP_EINVAL:   bad options or id; why holds a one-line message naming the option ("limit:
 *                  ...") or "trace_id: ..." (mgmt: crossbar.error.invalid_configuration).
 *   WAMP_EEXIST:   a trace with that id is held; *out = that trace (borrowed):
 *                  trace_is_running(*out) ? already_running : already_exists.
 *   WAMP_ETOOBIG:  max_traces traces are held (running or stopped; the reserved one, see
 *                  trace_hub_reserve(), not counted); why says so
 *                  (mgmt: crossbar.error.resource_limit).
 *   WAMP_ENOMEM.
 * Nothing changes on failure (*out is NULL except for WAMP_EEXIST). */
wamp_err trace_hub_start(trace_hub *hub, const char *id, const json_t *options, uint64_t pc_ns,
                         uint64_t ts_ns, trace **out, char *why, size_t why_len);

/* Borrowed trace with this id, or NULL. */
trace *trace_hub_find(const trace_hub *hub, const char *id);
/* Traces held, and the i-th of them (0 = oldest; NULL if i >= count): list_traces. */
size_t trace_hub_count(const trace_hub *hub);
trace *trace_hub_at(const trace_hub *hub, size_t i);
size_t trace_hub_max_traces(const trace_hub *hub);

/* Reserves the name id for an always-on trace (the router's flight recorder), before
 * trace_hub_load() and the first trace_hub_start():
 *   - the trace named id has a slot of its own: it never counts against max_traces, and
 *     max_traces other traces may be held next to it;
 *   - trace_hub_start(id, NULL or JSON null options) starts it with options (copied; NULL =
 *     the defaults), so that it can be restarted (after stop + delete) as configured;
 *   - a persisted trace named id that trace_hub_load() finds (an earlier run's) is reloaded as
 *     "<id>.<persistent_id>", an ordinary stopped trace that counts against max_traces.
 * At most one id per hub. WAMP_EINVAL (invalid id, options not an object, or an id reserved
 * already), WAMP_ENOMEM; nothing is reserved after failure. */
wamp_err trace_hub_reserve(trace_hub *hub, const char *id, const json_t *options);

/* Stops trace id (reason "stopped"); its records stay readable. Stopping a stopped trace is
 * not an error (nothing changes). *out (if out != NULL) = the trace. WAMP_ENOTFOUND. */
wamp_err trace_hub_stop(trace_hub *hub, const char *id, uint64_t pc_ns, uint64_t ts_ns,
                        trace **out);
/* Deletes a stopped trace and its records (a persisted trace's files too). WAMP_ENOTFOUND;
 * WAMP_EDENIED if it is running (mgmt: crossbar.error.not_stopped). Nothing changes on failure. */
wamp_err trace_hub_delete(trace_hub *hub, const char *id);
/* Stops every running trace with reason "shutdown". */
void trace_hub_shutdown(trace_hub *hub, uint64_t pc_ns, uint64_t ts_ns);

/* Everything about one message beyond the filter's trace_ctx. All pointers are borrowed for the
 * duration of the call; the hub takes references or copies only if a trace keeps the message. */
typedef struct trace_input {
    uint64_t pc_ns; /* monotonic clock */
    uint64_t ts_ns; /* wall clock, ns since the epoch */
    /* The peer session's info, shared by every record of the session; each record takes a
     * reference. When NULL: if peer_slot is not NULL, the hub creates the peer from the ctx's
     * fields the first time a trace keeps a message and stores it in *peer_slot (a reference the
     * caller then owns and releases with trace_peer_unref(); later messages passing the same
     * slot reuse it), so nothing is allocated while every filter rejects; without a slot the hub
     * makes one per kept message (right for the few messages before a join). */
    trace_peer *peer;
    trace_peer **peer_slot;
    /* The action URI, shared by the action's messages; each record takes a reference. When
     * NULL and ctx->uri is not: made from ctx->uri when a trace keeps the message, lazily into
     * *uri_slot like peer_slot (the slot must belong to the action ctx->uri names), or per kept
     * message without a slot. */
    trace_str *uri;
    trace_str **uri_slot;
    const uint8_t *correlation; /* TRACE_UUID_LEN bytes, or NULL */
    bool correlation_is_anchor;
    bool correlation_is_last;
    wamp_ser ser; /* serializer of wire / bytes (tx: the receiver's) */
    /* tx: the buffer the router encoded for the wire. Records take a reference (the buffer is
     * shared and immutable; only its refcount changes). NULL if the message was dropped before
     * it was encoded. */
    const wamp_buf *wire;
    /* rx: the received bytes (used when wire is NULL); each in-memory store keeping them copies
     * them into its ring, a persisted trace into its write buffer. */
    const void *bytes;
    size_t len;
    /* The message as decoded (rx) or built (tx); NULL if the router could not decode it, or
     * (tx, with wire) when it encoded the message without building it (the hub decodes the wire
     * bytes where it must look inside). Read only for CHALLENGE/AUTHENTICATE (a redacted copy is
     * encoded and kept instead of the wire bytes: secrets are never stored) and for a tx message
     * dropped before it was encoded. Its
     * code must be the ctx's msg_type: the hub looks into it only when that says CHALLENGE,
     * AUTHENTICATE or a code it does not know. */
    const json_t *msg;
    /* bytes (without msg) were parsed by the caller as a well-formed message of the ctx's
     * msg_type, and that is not a CHALLENGE or AUTHENTICATE: kept as given, not decoded again
     * (trace_hub_feed()). */
    bool bytes_parsed;
    /* Bytes on the wire per serializer (index wamp_ser): for tx every encoding the router made
     * of this message. All 0: derived from wire / len in ser. */
    size_t ser_bytes[WAMP_SER_COUNT];
    /* A tx message that was not delivered: why ("queue_full", ...). Must be a string with static
     * storage duration (it is stored as a pointer). NULL = delivered. */
    const char *dropped;
    /* The cluster node the answer being sent came from (a cross-node call's RESULT or ERROR on
     * the caller's node), borrowed for the call; NULL otherwise. Action-level traces name it. */
    const char *callee_node;
} trace_input;

/* A message for trace_hub_record_fast(): its record's parts, as the router has them. */
typedef struct trace_fast {
    /* The record: every part borrowed for the call. peer must be set (the session's shared
     * peer info); uri the action's (trace_hub_uri()'s), NULL for none; msg_type a WAMP code the
     * router parsed or built (known); bytes (rx) or wire (tx) set; ser_bytes as trace_input's (all
     * 0: from the bytes' length in wire_ser); seq, key, env, env_len unused. */
    trace_rec_view v;
} trace_fast;

/* The fast path of recording (only while trace_hub_fast_ready()): appends f's message to the fast
 * trace exactly as trace_hub_match() + trace_hub_record_matched() would record it (the same
 * record, and kept for trace_hub_repeat() the same way), without a trace_ctx, a trace_input, a
 * filter or a list of hits. The caller hands in no message of the management realm (the fast
 * trace keeps nothing of it: trace_hub_is_mgmt_realm(), asked once per session). Returns true
 * when it recorded the message; false, having recorded nothing, for what it leaves to the
 * general path: a CHALLENGE or AUTHENTICATE (redacted there), a message larger than
 * TRACE_STRIP_MIN for a trace without payload (stripped there), no bytes. f->v is modified. */
bool trace_hub_record_fast(trace_hub *hub, trace_fast *f);

/* true if realm is the management realm the hub was made with (no trace keeps its messages). */
bool trace_hub_is_mgmt_realm(const trace_hub *hub, const char *realm);

/* A new reference on the hub's shared string for the URI text uri of len bytes (interned: the
 * records of every action with that URI share one object); NULL on allocation failure. A caller
 * that keeps it for the next action of the same URI spares the hub the lookup (the router keeps
 * each session's last one). */
trace_str *trace_hub_uri(trace_hub *hub, const char *uri, size_t len);

/* trace_hub_repeat()'s out-of-line part: appends the receivers gathered when the batch is full
 * or (last) the action's last message is among them. */
void trace_hub_repeat_end(trace_hub *hub, bool last);

/* The fast path of a fan-out: records, for the session of peer, the message last recorded
 * through trace_hub_record_matched() again, if it is certain to be that same message to the
 * same traces with only the peer changed (and, with last, the action's last message); returns
 * true then, false (nothing done) otherwise, and the caller records it the usual way. "The same
 * message": the same shared buffer (wire; the hub holds a reference, so the address stands for
 * the bytes), the same correlation (NULL: none) and clock reading (pc_ns). The caller must only
 * ask for a delivered message, and vouches that one buffer is one message with the same
 * encodings (sizes per serializer) for all its receivers; the hub cannot check either. The hub
 * keeps a message for this only when every running trace is message-level with a filter blind to
 * the peer (trace_is_peer_blind()), and it was delivered and not its action's last: an EVENT sent
 * to the next subscriber then costs no matching and no building: a byte in a persisted trace's run,
 * a copy of the previous record with this peer in an in-memory trace. peer: borrowed (referenced
 * while gathered). Inline (in the router's send path): a call and its arguments cost more than
 * these checks. */
static inline bool trace_hub_repeat(trace_hub *hub, const wamp_buf *wire, trace_peer *peer,
                                    const uint8_t *correlation, uint64_t pc_ns, bool last);

/* The buffer of the message the hub keeps for repeats (NULL: none): after recording a message
 * sent with wire, trace_hub_repeat_wire(hub) == wire says the hub kept it. */
static inline const wamp_buf *trace_hub_repeat_wire(const trace_hub *hub)
{
    return ((const struct trace_hub_pub *)(const void *)hub)->rep.wire;
}

/* trace_hub_repeat_gather() (below) for a caller that knows that a buffer the hub keeps is the
 * same message for the same action at the same clock reading (the router: only one fan-out sends
 * a buffer): only whether the hub keeps wire is checked. After true, trace_hub_repeat_close() as
 * after a gather. */
static inline bool trace_hub_repeat_push(trace_hub *hub, const wamp_buf *wire, trace_peer *peer)
{
    struct trace_hub_rep *r = &((struct trace_hub_pub *)(void *)hub)->rep;
    if (!wire || wire != r->wire || !peer) {
        return false;
    }
    r->pend[r->n_pend++] = trace_peer_ref(peer);
    return true;
}

/* trace_hub_repeat() in two steps, for a caller that knows whether the message is its action's
 * last only at some cost (the router): trace_hub_repeat_gather() is everything but last (the
 * correlation given as has_corr and, if so, its 16 bytes), and returns what trace_hub_repeat()
 * would; after true, trace_hub_repeat_close() says whether it was the last (and appends the
 * batch when it is full). */
static inline bool trace_hub_repeat_gather(trace_hub *hub, const wamp_buf *wire, trace_peer *peer,
                                           bool has_corr, const uint8_t *correlation,
                                           uint64_t pc_ns)
{
    const struct trace_hub_rep *r = &((const struct trace_hub_pub *)(const void *)hub)->rep;
    if (pc_ns != r->pc_ns || has_corr != r->has_corr ||
        (has_corr && !trace_uuid_eq(correlation, r->corr))) {
        return false;
    }
    return trace_hub_repeat_push(hub, wire, peer);
}

static inline void trace_hub_repeat_close(trace_hub *hub, bool last)
{
    struct trace_hub_rep *r = &((struct trace_hub_pub *)(void *)hub)->rep;
    if (last || r->n_pend == TRACE_HUB_REPEAT_BATCH) {
        trace_hub_repeat_end(hub, last);
    }
}

static inline bool trace_hub_repeat(trace_hub *hub, const wamp_buf *wire, trace_peer *peer,
                                    const uint8_t *correlation, uint64_t pc_ns, bool last)
{
    if (!trace_hub_repeat_gather(hub, wire, peer, correlation != NULL, correlation, pc_ns)) {
        return false;
    }
    trace_hub_repeat_close(hub, last);
    return true;
}

/* The repeats are gathered (a reference on each peer) and appended together, with their seqs
 * in order, by the next call into the hub (any function here but trace_hub_repeat() and
 * trace_hub_is_active(): whatever records, matches, ticks, starts, stops or deletes appends them
 * first, so nothing comes between them and their message), or by this one. A caller that reads
 * a trace's records or counts right after repeats, without such a call, flushes first. */
void trace_hub_flush(trace_hub *hub);

/* Offers one message to every running trace: trace_hub_match() and trace_hub_record_matched()
 * in one call (the router uses the two steps; tests and bench-capture this one). Returns how
 * many traces stored a record of it (0 when nothing runs or every filter rejects it, in which case
 * nothing was allocated or referenced). Out of memory degrades to a record without the missing part
 * (peer, uri, bytes) rather than failing. May stop traces (max_records). */
size_t trace_hub_on_message(trace_hub *hub, const trace_ctx *ctx, const trace_input *in);

/* The same in two steps, so that the caller fills trace_input (clock readings included) only
 * for a message some trace keeps: trace_hub_match() evaluates the filters and remembers the
 * traces that keep it (returns how many; 0: stop here), then trace_hub_record_matched() stores
 * the record in those traces (returns how many). Nothing may start, stop or delete traces in
 * between. */
size_t trace_hub_match(trace_hub *hub, const trace_ctx *ctx);
/* A number that changes with every trace_hub_match(): a caller that matched, did other work
 * and finds the number unchanged may call trace_hub_record_matched() for that match without
 * matching again (the traces it chose are still the ones; nothing may have recorded since). */
uint64_t trace_hub_match_gen(const trace_hub *hub);
size_t trace_hub_record_matched(trace_hub *hub, const trace_ctx *ctx, const trace_input *in);

/* Fed traces (the router's flight recorder read from its wire capture): t (held by the hub)
 * becomes a fed trace (trace_set_fed()): no capture call above passes it a message, it does not
 * count in trace_hub_is_active() and is never the fast trace; trace_hub_feed() appends to it.
 * For good. */
void trace_hub_set_fed(trace_hub *hub, trace *t);
/* Offers one message to the fed trace t alone, as trace_hub_on_message() would offer it to a
 * running trace (its filter, its level, redaction, the payload strip): returns 1 when t stored a
 * record of it (or, action-level, took it in), else 0. The input's bytes (in->bytes, no wire) may
 * come without in->msg when in->bytes_parsed says they are a well-formed message of
 * ctx->msg_type. Never keeps the message for trace_hub_repeat(). */
size_t trace_hub_feed(trace_hub *hub, trace *t, const trace_ctx *ctx, const trace_input *in);

/* A connection event outside any session (a refused handshake, ...): appends a connection
 * record (trace_connection(): msg_type "Connection", info, a JSON object, borrowed, as msg) to
 * every running trace whose filter keeps everything (trace_keeps_all(): no restriction, as
 * the flight recorder's default options). Returns how many traces stored it. */
size_t trace_hub_on_connection(trace_hub *hub, const json_t *info, uint64_t pc_ns, uint64_t ts_ns);

/* Callbacks of trace_hub_tick(). Both may be NULL. They may publish (and so re-enter the
 * capture calls above), but must not start or delete traces. */
typedef struct trace_hub_events {
    /* A batch of t's records to publish as on_trace_data (see trace_take_batch()). */
    void (*on_batch)(void *ctx, trace *t, const trace_batch *batch);
    /* t stopped (any reason, manual stops included) and was not announced yet: on_trace_stopped.
     * Called after t's last batch. */
    void (*on_stopped)(void *ctx, trace *t);
    /* Whether on_batch is wanted now (someone listens): the owner of a fed trace
     * (trace_hub_set_fed()) feeds it before the tick only then. NULL: always. */
    bool (*wants_batches)(void *ctx);
} trace_hub_events;

/* Every 100 ms: stops traces whose duration has elapsed, writes persisted traces' buffered
 * records (a trace that cannot write stops with io_error, logged through the log sink), then, if ev
 * is not NULL, reports each trace's batch and pending stop notice through ev (oldest trace first).
 * With ev NULL the caller takes them itself with trace_take_batch() / trace_take_stop_notice(). */
void trace_hub_tick(trace_hub *hub, uint64_t pc_ns, uint64_t ts_ns, const trace_hub_events *ev,
                    void *ctx);

#endif /* TRACE_HUB_H */
