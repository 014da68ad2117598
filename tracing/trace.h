/* trace.h: one trace: id, options, status, filter, store, auto-stop and live-feed batching.
 *
 * Lifecycle: created running by trace_new() (normally through trace_hub_start()); stopped by
 * trace_stop(), by itself on max_records (checked on every append) or duration (checked by
 * trace_tick()); a stopped trace keeps its records readable until trace_free().
 * Time is always a parameter: pc_ns is the monotonic clock, ts_ns the wall clock (ns since the
 * epoch); the library reads no clock.
 * Live feed (on_trace_data): periods of batching_period ms are aligned on the start time;
 * trace_take_batch() hands out, once per elapsed period that captured anything, the seq range
 * captured since the previous batch. Successive batches tile the seqs exactly (no gap, no
 * overlap), and the records captured before a stop are flushed by the first call after it.
 * Ownership: a trace owns its options, filter and store. Not thread-safe (service thread). */
#ifndef TRACE_H
#define TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "trace_action.h"
#include "trace_filter.h"
#include "trace_options.h"
#include "trace_persist.h"
#include "trace_record.h"
#include "trace_store.h"
#include "wamp_err.h"

/* Longest trace id, in bytes. */
#define TRACE_ID_MAX 128

typedef struct trace trace;

typedef enum trace_stop_reason {
    TRACE_STOP_NONE = 0,    /* running */
    TRACE_STOP_STOPPED,     /* stop_trace */
    TRACE_STOP_DURATION,    /* the duration option elapsed */
    TRACE_STOP_MAX_RECORDS, /* the max_records option was reached */
    TRACE_STOP_SHUTDOWN,    /* the router is shutting down */
    TRACE_STOP_CRASH,       /* reloaded: the router ended without stopping it (kill -9...) */
    TRACE_STOP_IO_ERROR     /* a persisted trace could not write its files */
} trace_stop_reason;

/* One on_trace_data period: the records first_seq..last_seq (inclusive) were captured in it. */
typedef struct trace_batch {
    uint64_t period; /* index of the period the batch started in: 0, 1, ... since start */
    uint64_t first_seq;
    uint64_t last_seq;
    uint64_t period_start_ns; /* wall clock */
    uint64_t finished_ns;     /* wall clock: when the batch was taken (or the trace stopped) */
} trace_batch;

/* true if id can name a trace: 1..TRACE_ID_MAX bytes, no ASCII control characters. */
bool trace_id_is_valid(const char *id);
/* trace_id_is_valid(id), else false with the message ("trace_id: ...") in why (may be NULL). */
bool trace_id_check(const char *id, char *why, size_t why_len);

/* New running trace named id (copied), started at (pc_ns, ts_ns), with options parsed from
 * options (NULL / JSON null = defaults; see trace_options_parse_with()); defaults (borrowed, NULL
 * = built-in) supplies limit and max_bytes when options do not set them. mgmt_realm (may be NULL)
 * is the management realm, excluded unless the options' realms name it. running_counter, if not
 * NULL, is incremented now and decremented when the trace stops or is freed while running (the
 * hub's "anything running?" count). *out owns the new trace (free with trace_free()).
 * WAMP_EINVAL with a message in why: invalid options (the message names the option) or an
 * invalid id ("trace_id: ..."). WAMP_ENOMEM. *out is NULL and the counter unchanged on failure. */
wamp_err trace_new(const char *id, const json_t *options, const trace_option_defaults *defaults,
                   const char *mgmt_realm, uint64_t pc_ns, uint64_t ts_ns,
                   unsigned *running_counter, trace **out, char *why, size_t why_len);
/* Frees the trace and every record (NULL-safe). */
void trace_free(trace *t);

/* Borrowed, valid for the trace's lifetime (or until trace_rename()). */
const char *trace_id(const trace *t);
/* Gives t the name id (copied; trace_id_is_valid()), e.g. a reloaded trace whose name is now
 * taken. The files of a persisted trace keep the old name in their meta.json. WAMP_EINVAL (bad
 * id), WAMP_ENOMEM; the name is unchanged on failure. */
wamp_err trace_rename(trace *t, const char *id);

/* The head of every trace, read by the inline functions below: the capture path asks them of
 * every trace for every message (trace_hub_match()). The rest of the struct is private. */
struct trace_head {
    bool running;
    bool keeps_all;
    bool keeps_connections; /* trace_filter_keeps_connections(), message-level */
    bool persists;          /* has files (options.persist): records go there, not to the store */
    bool peer_blind;        /* message-level, and its filter does not look at the peer session */
    bool payload;           /* keeps the application payload (options.trace_app_payload) */
    bool fed;               /* fed by its owner (trace_set_fed()), not by the capture path */
};

static inline bool trace_is_running(const trace *t)
{
    return ((const struct trace_head *)(const void *)t)->running;
}

/* true if t is a message-level trace whose filter keeps every message outside the management
 * realm (trace_filter_keeps_all()): fixed for the trace's life. */
static inline bool trace_keeps_all(const trace *t)
{
    return ((const struct trace_head *)(const void *)t)->keeps_all;
}

/* true if t is a message-level trace that keeps connection records
 * (trace_filter_keeps_connections()). */
static inline bool trace_keeps_connections(const trace *t)
{
    return ((const struct trace_head *)(const void *)t)->keeps_connections;
}

/* true if t keeps its records in files (options.persist), where trace_append_rec() encodes a
 * message straight from its parts: such a trace holds no records in memory. */
static inline bool trace_persists(const trace *t)
{
    return ((const struct trace_head *)(const void *)t)->persists;
}

/* true if t keeps messages' application payload (trace_app_payload); a trace that does not
 * keeps a large message without it (trace_rec_view.env). */
static inline bool trace_keeps_payload(const trace *t)
{
    return ((const struct trace_head *)(const void *)t)->payload;
}

/* true if t is a message-level trace whose filter does not read the peer session
 * (trace_filter_reads_peer()): a message sent to several sessions matches for all or none. */
static inline bool trace_is_peer_blind(const trace *t)
{
    return ((const struct trace_head *)(const void *)t)->peer_blind;
}

/* true if t is fed (trace_set_fed()): the hub's capture path passes it by. */
static inline bool trace_is_fed(const trace *t)
{
    return ((const struct trace_head *)(const void *)t)->fed;
}

/* Makes t a fed trace: its records come from whoever calls trace_set_fed() (the router's flight
 * recorder read from the wire capture: trace_hub_feed()), never from the hub's capture path, and
 * it no longer counts in the hub's running traces (trace_hub_is_active()). For good. */
void trace_set_fed(trace *t);
/* A fed trace's n messages that it would have kept and then dropped at once (its limit: n or more
 * newer records follow them): their seqs are given out and counted as dropped
 * (trace_dropped()), and the records still held are dropped too, as the limit would drop them.
 * Nothing happens to a stopped trace. */
void trace_skip(trace *t, uint64_t n);
/* A fed trace's n messages that its feeder lost before it could offer them (the wire capture let
 * them go, or held them only in part): counted (trace_lost()), no seqs. Nothing happens to a
 * stopped trace. */
void trace_lose(trace *t, uint64_t n);
/* Messages a fed trace's feeder lost (trace_lose()); 0 for any other trace. */
uint64_t trace_lost(const trace *t);

/* "running" / "stopped". */
const char *trace_status_name(const trace *t);
trace_stop_reason trace_get_stop_reason(const trace *t);
/* "stopped", "duration", "max_records", "shutdown", "crash", "io_error"; NULL for
 * TRACE_STOP_NONE. */
const char *trace_stop_reason_name(trace_stop_reason r);
/* The reason named s (as above), TRACE_STOP_NONE if unknown. */
trace_stop_reason trace_stop_reason_parse(const char *s);
const trace_options *trace_get_options(const trace *t);
const trace_store *trace_get_store(const trace *t);
/* The store of t to append to directly: only for the hub's fast path (trace_hub_record_fast())
 * with an in-memory trace, which runs and has no max_records, so that an append is all
 * trace_append_rec() would do. */
trace_store *trace_fast_store(trace *t);
uint64_t trace_started_ns(const trace *t); /* wall clock */
uint64_t trace_ended_ns(const trace *t);   /* wall clock; 0 while running */
/* Monotonic ns from start to stop, or to now_pc_ns while running. */
uint64_t trace_runtime_ns(const trace *t, uint64_t now_pc_ns);

/* --- Persistence (options.persist; see trace_persist.h) ------------------------------------- */

/* Gives a new running trace whose options say persist: true its directory under cfg's data
 * directory and writes meta.json (status running). given_options (borrowed; NULL = none) are
 * the options as the client gave them, kept in meta.json to rebuild the trace after a restart.
 * WAMP_EINVAL with why set when the directory cannot be made, WAMP_ENOMEM. */
wamp_err trace_enable_persist(trace *t, const json_t *given_options,
                              const trace_persist_config *cfg, char *why, size_t why_len);

/* Rebuilds a stopped trace from its directory <data_dir>/<persistent_id> after a restart (see
 * trace_persist_open()): id, options and times from meta.json; status stopped with the saved
 * stop reason, or "crash" when meta.json still said running. Its records are read from disk;
 * the in-memory store stays empty. WAMP_EINVAL (why says why) if meta.json is missing or
 * invalid, WAMP_ENOTFOUND, WAMP_ENOMEM. note (may be empty) tells what recovery cut. */
wamp_err trace_reload(const trace_persist_config *cfg, const char *persistent_id,
                      const trace_option_defaults *defaults, const char *mgmt_realm, trace **out,
                      char *why, size_t why_len, char *note, size_t note_len);

/* Borrowed; NULL if t does not persist. Not const: reading a persisted trace writes its buffered
 * records first (trace_persist_read()). */
trace_persist *trace_get_persist(const trace *t);
/* Deletes t's files (delete_trace); harmless without persistence. */
void trace_delete_files(trace *t);
/* After an I/O error stopped t: the message, once (for the log), then NULL. */
const char *trace_take_io_error(trace *t);

/* Seqs and sizes as the metadata reports them: over disk and memory for a persisted trace
 * (first_seq: oldest readable; records: readable now; bytes: on disk; dropped: seqs no longer
 * readable), the in-memory store's otherwise. dropped also counts the actions an action-level
 * trace abandoned unfinished because too many were pending (trace_action.h). */
uint64_t trace_first_seq(const trace *t);
uint64_t trace_next_seq(const trace *t);
uint64_t trace_records(const trace *t);
uint64_t trace_dropped(const trace *t);
uint64_t trace_bytes(const trace *t);

/* true if t is running and keeps the message. A message-level trace: its filter accepts it.
 * An action-level trace (trace_level "action"): the message is the received anchor of an
 * action and the filter accepts it, or it belongs to an action the trace tracks (its
 * correlation is pending). Never allocates. */
bool trace_matches(const trace *t, const trace_ctx *c);

/* The action tracker of an action-level trace (borrowed); NULL for a message-level trace. */
trace_action *trace_get_action(const trace *t);
/* An action-level trace: folds m into its tracker and appends the record of the action m
 * completes, if any (see trace_action_on_message()). Returns the record's seq, or
 * TRACE_SEQ_NONE when nothing was appended. */
uint64_t trace_on_action_message(trace *t, const trace_action_msg *m);

/* Appends *rec (consumed: see trace_store_append_take(); a persisted trace encodes it into its
 * files and releases it) and returns its seq. Stops the trace (reason max_records, at rec's
 * times) when it reaches max_records, or (io_error) when a persisted trace cannot write. On a
 * stopped trace the record is released, nothing is stored, and TRACE_SEQ_NONE is returned. */
uint64_t trace_append_take(trace *t, trace_record *rec);
/* The same for a record given by its parts (borrowed; rec->seq is set here for a persisted
 * trace): a persisted trace (trace_persists()) encodes it into its files, an in-memory one writes
 * it straight into its store (trace_store_append_view()); no trace_record is built.
 * TRACE_SEQ_NONE (nothing stored) if t is stopped. */
uint64_t trace_append_rec(trace *t, trace_rec_view *rec);
/* rec once per peer in peers[0..n) (borrowed), seqs in order: the receivers of one message
 * (trace_hub_repeat()); with last, the last of them completes the action (TRACE_CORR_LAST).
 * A persisted trace encodes them as one run; an in-memory trace whose newest record is that
 * message appends each as a repeat (trace_store_append_repeats(): rec->key, rec->uri and
 * rec->pc_ns identify it), any other as a record of rec's parts with that peer. A trace that
 * keeps no payload takes rec->env instead of the bytes when the caller made it (here and in
 * trace_append_rec()). Appends fewer if the trace stops on the way (max_records: exactly up to
 * it). Returns how many were appended. rec is left as it was, but for rec->seq in a persisted
 * trace (the first one's, as trace_append_rec() sets it). */
size_t trace_append_run(trace *t, trace_rec_view *rec, trace_peer *const *peers, size_t n,
                        bool last);
/* The same, taking the references peers[0..n) (whatever happens): an in-memory trace moves them
 * into its seq entries (no reference taken and dropped per receiver), and drops what it does not
 * keep. */
size_t trace_append_run_take(trace *t, trace_rec_view *rec, trace_peer *const *peers, size_t n,
                             bool last);

/* Appends a marker record (msg_type "Marker", name as uri, meta (NULL = {}) as msg) to a running
 * trace, regardless of its filter; *seq gets its seq. WAMP_EINVAL if name is NULL/empty or meta
 * is not an object, WAMP_ECLOSED if t is stopped, WAMP_ENOMEM; nothing stored on failure. */
wamp_err trace_mark(trace *t, const char *name, const json_t *meta, uint64_t pc_ns, uint64_t ts_ns,
                    uint64_t *seq);
/* Appends a connection record (msg_type "Connection", no session, no uri, info as msg) to a
 * running trace, regardless of its filter (trace_hub_on_connection() chooses the traces).
 * WAMP_EINVAL if info is not an object, WAMP_ECLOSED if t is stopped, WAMP_ENOMEM; nothing
 * stored on failure. */
wamp_err trace_connection(trace *t, const json_t *info, uint64_t pc_ns, uint64_t ts_ns,
                          uint64_t *seq);

/* Stops a running trace at (pc_ns, ts_ns) with reason (not TRACE_STOP_NONE). Returns false (and
 * changes nothing) if it was already stopped. */
bool trace_stop(trace *t, trace_stop_reason reason, uint64_t pc_ns, uint64_t ts_ns);

/* Periodic check (every 100 ms): stops the trace with reason duration once it has run that long;
 * a persisted running trace also writes its buffered records (and stops with io_error if it
 * cannot). Returns true if this call stopped it. */
bool trace_tick(trace *t, uint64_t pc_ns, uint64_t ts_ns);

/* Live feed: true, with *out filled, when a batching period has elapsed since the previous one
 * (running trace) or the trace has stopped, and records were captured since the previous batch;
 * false otherwise (periods without records produce nothing). */
bool trace_take_batch(trace *t, uint64_t pc_ns, uint64_t ts_ns, trace_batch *out);

/* true once after each stop (any reason), then false: lets the management layer announce
 * on_trace_stopped exactly once, whoever stopped the trace. */
bool trace_take_stop_notice(trace *t);

#endif /* TRACE_H */
