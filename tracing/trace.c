/* trace.c: a trace and its bookkeeping (status, auto-stop, live-feed periods). */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wamp_codec.h"

#define NS_PER_MS 1000000ull

struct trace {
    struct trace_head h; /* running, keeps_all, persists: read inline (trace.h) */
    char *id;
    trace_options opts;
    trace_filter *filter;
    trace_store *store;
    trace_action *action;      /* trace_level "action": pending actions; NULL otherwise */
    unsigned *running_counter; /* borrowed from the hub, or NULL */
    bool stop_notice;          /* stopped, not yet announced */
    trace_stop_reason stop_reason;
    uint64_t started_pc;
    uint64_t started_ts;
    uint64_t ended_pc;
    uint64_t ended_ts;
    /* Live feed. */
    uint64_t batch_next;      /* first seq not handed out in a batch yet */
    uint64_t period_start_pc; /* start of the current period */
    uint64_t period_no;
    /* Persistence (NULL = in memory only). */
    trace_persist *persist;
    json_t *given_options; /* as the client gave them, for meta.json; may be NULL */
    bool io_error_pending; /* stopped by an I/O error not reported yet */
    uint64_t skipped;      /* seqs given out for messages dropped before they came (trace_skip()) */
    uint64_t lost;         /* messages its feeder lost (trace_lose()) */
};

/* meta.json: what trace_reload() needs to rebuild the trace (see trace_persist.h). */
static wamp_err write_meta(trace *t)
{
    json_t *m = json_pack("{s:i, s:s, s:s, s:s, s:s?, s:I, s:I, s:I, s:O, s:O?}", "format", 1, "id",
                          t->id, "persistent_id", trace_persist_id(t->persist), "status",
                          t->h.running ? "running" : "stopped", "stop_reason",
                          trace_stop_reason_name(t->stop_reason), "started_ns",
                          (json_int_t)t->started_ts, "ended_ns",
                          (json_int_t)(t->h.running ? 0 : t->ended_ts), "runtime_ns",
                          (json_int_t)(t->h.running ? 0 : t->ended_pc - t->started_pc), "options",
                          t->opts.json, "options_given", t->given_options);
    if (!m) {
        return WAMP_ENOMEM;
    }
    wamp_err err = trace_persist_write_meta(t->persist, m);
    json_decref(m);
    return err;
}

bool trace_id_is_valid(const char *id)
{
    if (!id) {
        return false;
    }
    size_t n = strlen(id);
    if (n == 0 || n > TRACE_ID_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c < 0x20 || c == 0x7f) {
            return false;
        }
    }
    return true;
}

bool trace_id_check(const char *id, char *why, size_t why_len)
{
    if (trace_id_is_valid(id)) {
        return true;
    }
    if (why && why_len) {
        snprintf(why, why_len,
                 "trace_id: must be a string of 1 to %d characters without control characters",
                 TRACE_ID_MAX);
    }
    return false;
}

wamp_err trace_new(const char *id, const json_t *options, const trace_option_defaults *defaults,
                   const char *mgmt_realm, uint64_t pc_ns, uint64_t ts_ns,
                   unsigned *running_counter, trace **out, char *why, size_t why_len)
{
    wamp_err err;
    *out = NULL;
    if (!trace_id_check(id, why, why_len)) {
        return WAMP_EINVAL;
    }
    trace *t = calloc(1, sizeof(*t));
    if (!t) {
        return WAMP_ENOMEM;
    }
    err = trace_options_parse_with(options, defaults, &t->opts, why, why_len);
    if (err != WAMP_OK) {
        goto fail;
    }
    err = WAMP_ENOMEM;
    t->id = strdup(id);
    t->filter = trace_filter_new(&t->opts, mgmt_realm);
    t->store = trace_store_new(t->opts.limit, t->opts.max_bytes);
    if (!t->id || !t->filter || !t->store) {
        goto fail;
    }
    if (t->opts.action_level) {
        /* Pending actions are bounded by the trace's record limit. */
        t->action = trace_action_new(t->opts.limit);
        if (!t->action) {
            goto fail;
        }
    }
    t->h.keeps_all = !t->action && trace_filter_keeps_all(t->filter);
    t->h.keeps_connections = !t->action && trace_filter_keeps_connections(t->filter);
    t->h.peer_blind = !t->action && !trace_filter_reads_peer(t->filter);
    t->h.payload = t->opts.trace_app_payload;
    t->h.running = true;
    t->started_pc = pc_ns;
    t->started_ts = ts_ns;
    t->period_start_pc = pc_ns;
    t->running_counter = running_counter;
    if (running_counter) {
        (*running_counter)++;
    }
    *out = t;
    return WAMP_OK;

fail:
    trace_free(t);
    return err;
}

void trace_free(trace *t)
{
    if (!t) {
        return;
    }
    if (t->h.running && t->running_counter) {
        (*t->running_counter)--;
    }
    trace_persist_free(t->persist);
    json_decref(t->given_options);
    trace_action_free(t->action);
    trace_store_free(t->store);
    trace_filter_free(t->filter);
    trace_options_fini(&t->opts);
    free(t->id);
    free(t);
}

const char *trace_id(const trace *t)
{
    return t->id;
}

wamp_err trace_rename(trace *t, const char *id)
{
    if (!trace_id_is_valid(id)) {
        return WAMP_EINVAL;
    }
    char *copy = strdup(id);
    if (!copy) {
        return WAMP_ENOMEM;
    }
    free(t->id);
    t->id = copy;
    return WAMP_OK;
}

const char *trace_status_name(const trace *t)
{
    return t->h.running ? "running" : "stopped";
}

trace_stop_reason trace_get_stop_reason(const trace *t)
{
    return t->stop_reason;
}

const char *trace_stop_reason_name(trace_stop_reason r)
{
    switch (r) {
    case TRACE_STOP_STOPPED:
        return "stopped";
    case TRACE_STOP_DURATION:
        return "duration";
    case TRACE_STOP_MAX_RECORDS:
        return "max_records";
    case TRACE_STOP_SHUTDOWN:
        return "shutdown";
    case TRACE_STOP_CRASH:
        return "crash";
    case TRACE_STOP_IO_ERROR:
        return "io_error";
    case TRACE_STOP_NONE:
    default:
        return NULL;
    }
}

trace_stop_reason trace_stop_reason_parse(const char *s)
{
    for (int r = TRACE_STOP_STOPPED; s && r <= TRACE_STOP_IO_ERROR; r++) {
        if (strcmp(trace_stop_reason_name((trace_stop_reason)r), s) == 0) {
            return (trace_stop_reason)r;
        }
    }
    return TRACE_STOP_NONE;
}

const trace_options *trace_get_options(const trace *t)
{
    return &t->opts;
}

const trace_store *trace_get_store(const trace *t)
{
    return t->store;
}

trace_store *trace_fast_store(trace *t)
{
    return t->store;
}

uint64_t trace_started_ns(const trace *t)
{
    return t->started_ts;
}

uint64_t trace_ended_ns(const trace *t)
{
    return t->h.running ? 0 : t->ended_ts;
}

uint64_t trace_runtime_ns(const trace *t, uint64_t now_pc_ns)
{
    uint64_t end = t->h.running ? now_pc_ns : t->ended_pc;
    return end > t->started_pc ? end - t->started_pc : 0;
}

bool trace_matches(const trace *t, const trace_ctx *c)
{
    if (!t->h.running) {
        return false;
    }
    if (!t->action) {
        return trace_filter_match(t->filter, c);
    }
    if (!c->correlation) {
        return false;
    }
    if (c->correlation_is_anchor) {
        return trace_filter_match(t->filter, c);
    }
    return trace_action_is_pending(t->action, c->correlation);
}

trace_action *trace_get_action(const trace *t)
{
    return t->action;
}

uint64_t trace_on_action_message(trace *t, const trace_action_msg *m)
{
    trace_record r;
    if (!t->h.running || !t->action || !trace_action_on_message(t->action, m, &r)) {
        return TRACE_SEQ_NONE;
    }
    return trace_append_take(t, &r);
}

void trace_set_fed(trace *t)
{
    if (t->h.running && t->running_counter) {
        (*t->running_counter)--;
    }
    t->running_counter = NULL;
    t->h.fed = true;
}

void trace_skip(trace *t, uint64_t n)
{
    if (!t->h.running || n == 0) {
        return;
    }
    (void)trace_store_skip_n(t->store, n); /* (counts what it drops of the held records) */
    t->skipped += n;
}

void trace_lose(trace *t, uint64_t n)
{
    if (t->h.running) {
        t->lost += n;
    }
}

uint64_t trace_lost(const trace *t)
{
    return t->lost;
}

bool trace_stop(trace *t, trace_stop_reason reason, uint64_t pc_ns, uint64_t ts_ns)
{
    if (!t->h.running) {
        return false;
    }
    t->h.running = false;
    t->stop_notice = true;
    t->stop_reason = reason == TRACE_STOP_NONE ? TRACE_STOP_STOPPED : reason;
    t->ended_pc = pc_ns;
    t->ended_ts = ts_ns;
    /* Only completed actions are recorded: the pending ones end here. */
    trace_action_clear(t->action);
    if (t->running_counter) {
        (*t->running_counter)--;
    }
    if (t->persist) {
        /* Everything to disk and synced, then meta.json says how the trace ended. */
        bool flushed = trace_persist_flush(t->persist, true, pc_ns) == WAMP_OK;
        /* The end file says which seqs were given out and where the files end, even after a
         * failed flush (it needs no new space): a restart reports the rest as a gap. */
        bool sealed = trace_persist_seal(t->persist) == WAMP_OK;
        /* meta.json even after a failed flush: the reason (io_error) survives a restart. */
        if (write_meta(t) != WAMP_OK || !flushed || !sealed) {
            if (t->stop_reason != TRACE_STOP_IO_ERROR) {
                t->io_error_pending = true;
            }
        }
    }
    return true;
}

/* A persisted trace could not write: it stops (routing goes on); the hub logs why. */
static void stop_io_error(trace *t, uint64_t pc_ns, uint64_t ts_ns)
{
    t->io_error_pending = true;
    trace_stop(t, TRACE_STOP_IO_ERROR, pc_ns, ts_ns);
}

/* After a record took seq: a failed write stops the trace (io_error), reaching max_records
 * stops it too. */
static void after_append(trace *t, uint64_t seq, bool io_failed, uint64_t pc, uint64_t ts)
{
    if (io_failed) {
        stop_io_error(t, pc, ts);
    } else if (t->opts.max_records && seq + 1 >= t->opts.max_records) {
        trace_stop(t, TRACE_STOP_MAX_RECORDS, pc, ts);
    }
}

uint64_t trace_append_take(trace *t, trace_record *rec)
{
    if (!t->h.running) {
        trace_record_fini(rec);
        return TRACE_SEQ_NONE;
    }
    uint64_t pc = rec->pc_ns;
    uint64_t ts = rec->ts_ns;
    if (t->persist) {
        /* A persisted trace keeps its records in its files only (read back from there). */
        uint64_t seq = rec->seq = trace_store_skip(t->store);
        bool io_failed = trace_persist_append(t->persist, rec) != WAMP_OK;
        trace_record_fini(rec);
        after_append(t, seq, io_failed, pc, ts);
        return seq;
    }
    uint64_t seq = trace_store_append_take(t->store, rec);
    after_append(t, seq, false, pc, ts);
    return seq;
}

/* rec as t keeps it: without its payload when t keeps none and the caller made that version
 * (rec->env), in *tmp then. */
static trace_rec_view *as_kept(const trace *t, trace_rec_view *rec, trace_rec_view *tmp)
{
    if (!rec->env || t->h.payload) {
        return rec;
    }
    *tmp = *rec;
    tmp->wire = NULL;
    tmp->bytes = rec->env;
    tmp->len = rec->env_len;
    tmp->env = NULL;
    return tmp;
}

uint64_t trace_append_rec(trace *t, trace_rec_view *rec)
{
    if (!t->h.running) {
        return TRACE_SEQ_NONE;
    }
    trace_rec_view tmp;
    rec = as_kept(t, rec, &tmp);
    if (!t->persist) {
        uint64_t seq = trace_store_append_view(t->store, rec);
        after_append(t, seq, false, rec->pc_ns, rec->ts_ns);
        return seq;
    }
    uint64_t seq = rec->seq = trace_store_skip(t->store);
    bool io_failed = trace_persist_append_rec(t->persist, rec) != WAMP_OK;
    after_append(t, seq, io_failed, rec->pc_ns, rec->ts_ns);
    return seq;
}

/* How many of n more records t takes before max_records stops it (n without max_records; a
 * running trace has room for one at least: it stops on reaching it). */
static size_t room_for(const trace *t, size_t n)
{
    if (!t->opts.max_records) {
        return n;
    }
    uint64_t next = trace_store_next_seq(t->store);
    uint64_t room = next < t->opts.max_records ? t->opts.max_records - next : 1;
    return room < n ? (size_t)room : n;
}

/* Drops the references peers[0..n). */
static void peers_unref(trace_peer *const *peers, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        trace_peer *p = peers[i];
        trace_peer_unref(&p);
    }
}

/* trace_append_run_take() for an in-memory trace: repeat records of the newest record's message
 * where the store can (trace_store_append_repeats(): the references move in), else a record of
 * rec's parts with the receiver's peer (which takes a reference of its own). */
static size_t append_run_memory(trace *t, const trace_rec_view *rec, trace_peer *const *peers,
                                size_t n, bool last)
{
    size_t done = 0;
    while (done < n && t->h.running) {
        size_t want = room_for(t, n - done);
        bool ends = last && done + want == n; /* this batch holds the action's last message */
        uint8_t last_flags = (uint8_t)(rec->flags | (ends ? TRACE_CORR_LAST : 0));
        size_t k = trace_store_append_repeats(t->store, rec->key, rec->uri, rec->pc_ns,
                                              peers + done, want, rec->flags, last_flags);
        if (k) {
            done += k;
            if (t->opts.max_records) { /* (after_append() looks at nothing else here) */
                after_append(t, trace_store_next_seq(t->store) - 1, false, rec->pc_ns, rec->ts_ns);
            }
            continue;
        }
        /* Nothing to borrow from: a record of its own. */
        trace_rec_view r = *rec;
        r.peer = peers[done];
        r.flags = (uint8_t)(rec->flags | (last && done == n - 1 ? TRACE_CORR_LAST : 0));
        (void)trace_append_rec(t, &r);
        peers_unref(peers + done, 1);
        done++;
    }
    peers_unref(peers + done, n - done); /* the trace stopped: not appended */
    return done;
}

size_t trace_append_run_take(trace *t, trace_rec_view *rec, trace_peer *const *peers, size_t n,
                             bool last)
{
    if (!t->h.running || n == 0) {
        peers_unref(peers, n);
        return 0;
    }
    trace_rec_view tmp;
    rec = as_kept(t, rec, &tmp);
    if (!t->persist) {
        return append_run_memory(t, rec, peers, n, last);
    }
    size_t room = room_for(t, n);
    if (room < n) {
        last = false; /* the trace stops before the last one */
    }
    rec->seq = trace_store_skip_n(t->store, room); /* the first one's, as trace_append_rec() */
    bool io_failed = trace_persist_append_run(t->persist, rec, peers, room, last) != WAMP_OK;
    after_append(t, rec->seq + room - 1, io_failed, rec->pc_ns, rec->ts_ns);
    peers_unref(peers, n); /* the encoder took what it keeps */
    return room;
}

size_t trace_append_run(trace *t, trace_rec_view *rec, trace_peer *const *peers, size_t n,
                        bool last)
{
    if (!t->h.running || n == 0) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        (void)trace_peer_ref(peers[i]);
    }
    return trace_append_run_take(t, rec, peers, n, last);
}

/* A record that is no WAMP message (a marker, a connection event): msg_type, the name as uri
 * (NULL: none) and the object meta (NULL = {}) as msg. */
static wamp_err append_note(trace *t, uint8_t msg_type, const char *name, const json_t *meta,
                            uint64_t pc_ns, uint64_t ts_ns, uint64_t *seq)
{
    if (!t->h.running) {
        return WAMP_ECLOSED;
    }
    trace_record r;
    memset(&r, 0, sizeof(r));
    json_t *empty = meta ? NULL : json_object();
    if (!meta && !empty) {
        return WAMP_ENOMEM;
    }
    /* The meta is kept as its JSON encoding, like a message's wire bytes (decoded at render). */
    wamp_err err = wamp_codec_encode(WAMP_SER_JSON, meta ? meta : empty, &r.wire);
    json_decref(empty);
    if (err != WAMP_OK) {
        return err;
    }
    if (name) {
        r.uri = trace_str_new(name);
        if (!r.uri) {
            trace_record_fini(&r);
            return WAMP_ENOMEM;
        }
    }
    r.pc_ns = pc_ns;
    r.ts_ns = ts_ns;
    r.msg_type = msg_type;
    r.wire_ser = WAMP_SER_JSON;
    *seq = trace_append_take(t, &r);
    return WAMP_OK;
}

wamp_err trace_mark(trace *t, const char *name, const json_t *meta, uint64_t pc_ns, uint64_t ts_ns,
                    uint64_t *seq)
{
    if (!name || !*name || (meta && !json_is_object(meta))) {
        return WAMP_EINVAL;
    }
    return append_note(t, TRACE_MSG_MARKER, name, meta, pc_ns, ts_ns, seq);
}

wamp_err trace_connection(trace *t, const json_t *info, uint64_t pc_ns, uint64_t ts_ns,
                          uint64_t *seq)
{
    if (!json_is_object(info)) {
        return WAMP_EINVAL;
    }
    return append_note(t, TRACE_MSG_CONNECTION, NULL, info, pc_ns, ts_ns, seq);
}

bool trace_tick(trace *t, uint64_t pc_ns, uint64_t ts_ns)
{
    if (t->h.running && t->persist && trace_persist_tick(t->persist, pc_ns, ts_ns) != WAMP_OK) {
        stop_io_error(t, pc_ns, ts_ns);
        return true;
    }
    if (t->h.running && t->opts.duration_ns && pc_ns >= t->started_pc &&
        pc_ns - t->started_pc >= t->opts.duration_ns) {
        return trace_stop(t, TRACE_STOP_DURATION, pc_ns, ts_ns);
    }
    return false;
}

/* Wall-clock time of a monotonic instant, through the start times. */
static uint64_t wall_of(const trace *t, uint64_t pc)
{
    return t->started_ts + (pc - t->started_pc);
}

bool trace_take_batch(trace *t, uint64_t pc_ns, uint64_t ts_ns, trace_batch *out)
{
    uint64_t next = trace_store_next_seq(t->store);
    bool any = next > t->batch_next;
    uint64_t period_no = t->period_no;
    uint64_t period_start_pc = t->period_start_pc;
    uint64_t finished = t->ended_ts;
    if (t->h.running) {
        uint64_t period = (uint64_t)t->opts.batching_period * NS_PER_MS;
        if (pc_ns < t->period_start_pc || pc_ns - t->period_start_pc < period) {
            return false;
        }
        /* Skip every period that has fully elapsed, so that period numbers stay aligned on the
         * start even when ticks come late or periods are idle. */
        uint64_t k = (pc_ns - t->period_start_pc) / period;
        t->period_start_pc += k * period;
        t->period_no += k;
        finished = ts_ns;
    }
    if (!any) {
        return false;
    }
    out->period = period_no;
    out->period_start_ns = wall_of(t, period_start_pc);
    out->finished_ns = finished;
    out->first_seq = t->batch_next;
    out->last_seq = next - 1;
    t->batch_next = next;
    return true;
}

bool trace_take_stop_notice(trace *t)
{
    bool n = t->stop_notice;
    t->stop_notice = false;
    return n;
}

/* --- Persistence ------------------------------------------------------------------------------ */

wamp_err trace_enable_persist(trace *t, const json_t *given_options,
                              const trace_persist_config *cfg, char *why, size_t why_len)
{
    if (t->persist) {
        return WAMP_OK;
    }
    wamp_err err = trace_persist_create(cfg, t->started_ts, trace_store_next_seq(t->store),
                                        &t->persist, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    t->h.persists = true;
    trace_persist_set_retention(t->persist, t->opts.persist_max_bytes, t->opts.persist_max_age_ns);
    if (given_options && !json_is_null(given_options)) {
        t->given_options = json_deep_copy(given_options);
        if (!t->given_options) {
            return WAMP_ENOMEM;
        }
    }
    err = write_meta(t);
    if (err != WAMP_OK && why && why_len) {
        snprintf(why, why_len, "persist: %s",
                 trace_persist_error(t->persist) ? trace_persist_error(t->persist)
                                                 : "out of memory");
    }
    return err == WAMP_ECLOSED ? WAMP_EINVAL : err;
}

static uint64_t meta_u64(const json_t *m, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(m, key));
    return v > 0 ? (uint64_t)v : 0;
}

wamp_err trace_reload(const trace_persist_config *cfg, const char *persistent_id,
                      const trace_option_defaults *defaults, const char *mgmt_realm, trace **out,
                      char *why, size_t why_len, char *note, size_t note_len)
{
    trace_persist *p = NULL;
    json_t *m = NULL;
    trace *t = NULL;
    *out = NULL;
    wamp_err err = trace_persist_open(cfg, persistent_id, &p, &m, note, note_len);
    if (err != WAMP_OK) {
        return err;
    }
    const char *id = json_string_value(json_object_get(m, "id"));
    const json_t *given = json_object_get(m, "options_given");
    const json_t *echo = json_object_get(m, "options");
    if (!id) {
        if (why && why_len) {
            snprintf(why, why_len, "%s: no valid meta.json", persistent_id);
        }
        err = WAMP_EINVAL;
        goto fail;
    }
    err = trace_new(id, given, defaults, mgmt_realm, 0, meta_u64(m, "started_ns"), NULL, &t, why,
                    why_len);
    if (err == WAMP_EINVAL && given) {
        /* Options this version no longer accepts: the records stay readable with defaults
         * (the echo below still shows the options the trace ran with). */
        err = trace_new(id, NULL, defaults, mgmt_realm, 0, meta_u64(m, "started_ns"), NULL, &t, why,
                        why_len);
    }
    if (err != WAMP_OK) {
        goto fail;
    }
    if (json_is_object(echo)) {
        json_t *copy = json_deep_copy(echo);
        if (copy) {
            json_decref(t->opts.json);
            t->opts.json = copy;
        }
    }
    bool clean = json_is_string(json_object_get(m, "status")) &&
                 strcmp(json_string_value(json_object_get(m, "status")), "stopped") == 0;
    trace_stop_reason r =
            clean ? trace_stop_reason_parse(json_string_value(json_object_get(m, "stop_reason")))
                  : TRACE_STOP_CRASH;
    uint64_t ended = meta_u64(m, "ended_ns");
    uint64_t runtime = meta_u64(m, "runtime_ns");
    if (!clean || ended == 0) {
        /* Ended unannounced: the newest record on disk is the last sign of life. */
        uint64_t last = trace_persist_last_ts(p);
        ended = last > t->started_ts ? last : t->started_ts;
        runtime = ended - t->started_ts;
    }
    t->h.running = false;
    t->stop_reason = r == TRACE_STOP_NONE ? TRACE_STOP_STOPPED : r;
    t->started_pc = 0;
    t->ended_pc = runtime;
    t->ended_ts = ended;
    trace_store_start_at(t->store, trace_persist_next_seq(p));
    t->batch_next = trace_persist_next_seq(p); /* nothing to announce live */
    t->persist = p;
    t->h.persists = true;
    json_decref(m);
    *out = t;
    return WAMP_OK;

fail:
    trace_free(t);
    trace_persist_free(p);
    json_decref(m);
    return err;
}

trace_persist *trace_get_persist(const trace *t)
{
    return t->persist;
}

void trace_delete_files(trace *t)
{
    if (t->persist) {
        (void)trace_persist_remove(t->persist);
        t->persist = NULL;
        t->h.persists = false;
    }
}

const char *trace_take_io_error(trace *t)
{
    if (!t->io_error_pending) {
        return NULL;
    }
    t->io_error_pending = false;
    const char *e = t->persist ? trace_persist_error(t->persist) : NULL;
    return e ? e : "out of memory";
}

/* Persisted records readable: [pf, pn) on disk and whatever the store holds from pn on. */
uint64_t trace_first_seq(const trace *t)
{
    uint64_t sf = trace_store_first_seq(t->store);
    if (!t->persist) {
        return sf;
    }
    uint64_t pf = trace_persist_first_seq(t->persist);
    uint64_t pn = trace_persist_next_seq(t->persist);
    return pn > pf && pf < sf ? pf : sf;
}

uint64_t trace_next_seq(const trace *t)
{
    return trace_store_next_seq(t->store);
}

uint64_t trace_records(const trace *t)
{
    if (!t->persist) {
        return trace_store_records(t->store);
    }
    uint64_t pn = trace_persist_next_seq(t->persist);
    uint64_t sf = trace_store_first_seq(t->store);
    uint64_t sn = trace_store_next_seq(t->store);
    uint64_t from = sf > pn ? sf : pn;
    return trace_persist_records(t->persist) + (sn > from ? sn - from : 0);
}

uint64_t trace_dropped(const trace *t)
{
    uint64_t abandoned = t->action ? trace_action_abandoned(t->action) : 0;
    if (!t->persist) {
        return trace_store_dropped(t->store) + abandoned + t->skipped;
    }
    return trace_next_seq(t) - trace_records(t) + abandoned;
}

uint64_t trace_bytes(const trace *t)
{
    return t->persist ? trace_persist_bytes(t->persist) : trace_store_bytes(t->store);
}
