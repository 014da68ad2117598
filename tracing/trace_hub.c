/* trace_hub.c: the trace registry: start, stop, find, delete and reload traces, their tick and
 * the hub's log. The capture path is trace_hub_capture.c; trace_hub_int.h is what they share. */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_hub_int.h"
#include "wamp_types.h"

trace_hub *trace_hub_new(size_t max_traces, const char *mgmt_realm)
{
    if (max_traces == 0) {
        return NULL;
    }
    trace_hub *hub = calloc(1, sizeof(*hub));
    if (!hub) {
        return NULL;
    }
    hub->max_traces = max_traces;
    hub->traces = calloc(max_traces, sizeof(*hub->traces));
    hub->hits = calloc(max_traces, sizeof(*hub->hits));
    hub->mgmt_realm = mgmt_realm ? strdup(mgmt_realm) : NULL;
    if (!hub->traces || !hub->hits || (mgmt_realm && !hub->mgmt_realm)) {
        trace_hub_free(hub);
        return NULL;
    }
    return hub;
}

void trace_hub_free(trace_hub *hub)
{
    if (!hub) {
        return;
    }
    trace_hub_clear_repeats(hub); /* the repeats gathered go to their traces first */
    for (size_t i = 0; i < hub->n; i++) {
        trace_free(hub->traces[i]);
    }
    free(hub->traces);
    free(hub->hits);
    free(hub->strip);
    free(hub->mgmt_realm);
    free(hub->persist_dir);
    free(hub->reserved_id);
    json_decref(hub->reserved_opts);
    for (size_t i = 0; i < HUB_URI_CACHE; i++) {
        trace_str_unref(&hub->uris[i]);
    }
    free(hub);
}

static size_t index_of(const trace_hub *hub, const char *id)
{
    for (size_t i = 0; i < hub->n; i++) {
        if (strcmp(trace_id(hub->traces[i]), id) == 0) {
            return i;
        }
    }
    return SIZE_MAX;
}

trace *trace_hub_find(const trace_hub *hub, const char *id)
{
    size_t i = id ? index_of(hub, id) : SIZE_MAX;
    return i == SIZE_MAX ? NULL : hub->traces[i];
}

size_t trace_hub_count(const trace_hub *hub)
{
    return hub->n;
}

trace *trace_hub_at(const trace_hub *hub, size_t i)
{
    return i < hub->n ? hub->traces[i] : NULL;
}

size_t trace_hub_max_traces(const trace_hub *hub)
{
    return hub->max_traces;
}

static bool is_reserved(const trace_hub *hub, const char *id)
{
    return hub->reserved_id && id && strcmp(hub->reserved_id, id) == 0;
}

/* Traces that count against max_traces: all but the reserved one. */
static size_t counted(const trace_hub *hub)
{
    size_t n = hub->n;
    if (hub->reserved_id && index_of(hub, hub->reserved_id) != SIZE_MAX) {
        n--;
    }
    return n;
}

wamp_err trace_hub_reserve(trace_hub *hub, const char *id, const json_t *options)
{
    if (hub->reserved_id || !trace_id_is_valid(id) || (options && !json_is_object(options))) {
        return WAMP_EINVAL;
    }
    size_t slots = hub->max_traces + 1;
    trace **traces = realloc(hub->traces, slots * sizeof(*traces));
    if (!traces) {
        return WAMP_ENOMEM;
    }
    hub->traces = traces;
    trace **hits = realloc(hub->hits, slots * sizeof(*hits));
    if (!hits) {
        return WAMP_ENOMEM;
    }
    hub->hits = hits;
    char *rid = strdup(id);
    json_t *opts = options ? json_deep_copy(options) : NULL;
    if (!rid || (options && !opts)) {
        free(rid);
        json_decref(opts);
        return WAMP_ENOMEM;
    }
    hub->reserved_id = rid;
    hub->reserved_opts = opts;
    return WAMP_OK;
}

void trace_hub_set_defaults(trace_hub *hub, size_t limit, uint64_t max_bytes)
{
    hub->defaults.limit = limit;
    hub->defaults.max_bytes = max_bytes;
}

wamp_err trace_hub_set_persist(trace_hub *hub, const trace_persist_config *cfg)
{
    char *dir = NULL;
    if (cfg->data_dir) {
        dir = strdup(cfg->data_dir);
        if (!dir) {
            return WAMP_ENOMEM;
        }
    }
    free(hub->persist_dir);
    hub->persist_dir = dir;
    hub->persist = *cfg;
    hub->persist.data_dir = dir;
    return WAMP_OK;
}

void trace_hub_set_persist_defaults(trace_hub *hub, uint64_t max_bytes, uint64_t max_age_s)
{
    hub->defaults.persist_max_bytes = max_bytes;
    hub->defaults.persist_max_age_s = max_age_s;
}

void trace_hub_set_log(trace_hub *hub, trace_hub_log_fn fn, void *ctx)
{
    hub->log = fn;
    hub->log_ctx = ctx;
}

__attribute__((format(printf, 3, 4))) static void hub_log(const trace_hub *hub, bool error,
                                                          const char *fmt, ...)
{
    if (!hub->log) {
        return;
    }
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    hub->log(hub->log_ctx, error, line);
}

typedef struct load_ctx {
    trace_hub *hub;
    trace **found;
    size_t n;
    size_t cap;
} load_ctx;

/* Gap lines logged per reloaded trace at most (damage made on purpose must not flood the log);
 * a last line counts the others. */
#define HUB_GAP_LINES 16

/* One line per gap a reopen found, naming the damaged segment file where there is one. */
static void log_gaps(const trace_hub *hub, const char *persistent_id, const trace_persist *p)
{
    size_t n = trace_persist_gap_count(p);
    for (size_t i = 0; i < n && i < HUB_GAP_LINES; i++) {
        trace_gap g = trace_persist_gap(p, i);
        if (g.file[0]) {
            hub_log(hub, true,
                    "persisted trace %s: seqs %" PRIu64 "..%" PRIu64
                    " are a gap (%s): damaged records in %s/%s/%s from byte %" PRIu64,
                    persistent_id, g.from_seq, g.to_seq, g.reason,
                    hub->persist_dir ? hub->persist_dir : TRACE_PERSIST_DATA_DIR_DEFAULT,
                    persistent_id, g.file, g.offset);
        } else {
            hub_log(hub, true,
                    "persisted trace %s: seqs %" PRIu64 "..%" PRIu64 " are a gap (%s): %s",
                    persistent_id, g.from_seq, g.to_seq, g.reason,
                    strcmp(g.reason, TRACE_GAP_IO_ERROR) == 0
                            ? "given out, but an I/O error kept them out of the files"
                            : "no segment file holds them");
        }
    }
    if (n > HUB_GAP_LINES) {
        hub_log(hub, true, "persisted trace %s: %zu more gap(s) (get_trace lists them all)",
                persistent_id, n - HUB_GAP_LINES);
    }
}

static void load_one(const char *persistent_id, void *ctx)
{
    load_ctx *lc = ctx;
    trace_hub *hub = lc->hub;
    char why[256] = "", note[512] = "";
    trace *t = NULL;
    wamp_err err = trace_reload(&hub->persist, persistent_id, &hub->defaults, hub->mgmt_realm, &t,
                                why, sizeof(why), note, sizeof(note));
    if (note[0]) {
        hub_log(hub, true, "persisted trace %s: %s", persistent_id, note);
    }
    if (err != WAMP_OK) {
        hub_log(hub, true, "persisted trace %s not reloaded: %s", persistent_id,
                why[0] ? why : wamp_strerror(err));
        return;
    }
    log_gaps(hub, persistent_id, trace_get_persist(t));
    if (lc->n == lc->cap) {
        size_t ncap = lc->cap ? lc->cap * 2 : 16;
        trace **n = realloc(lc->found, ncap * sizeof(*n));
        if (!n) {
            trace_free(t);
            return;
        }
        lc->found = n;
        lc->cap = ncap;
    }
    lc->found[lc->n++] = t;
}

static int cmp_started(const void *a, const void *b)
{
    uint64_t x = trace_started_ns(*(trace *const *)a), y = trace_started_ns(*(trace *const *)b);
    return x < y ? -1 : x > y;
}

size_t trace_hub_load(trace_hub *hub)
{
    load_ctx lc = {.hub = hub};
    (void)trace_persist_list(&hub->persist, load_one, &lc);
    if (lc.n > 1) {
        qsort(lc.found, lc.n, sizeof(*lc.found), cmp_started);
    }
    size_t loaded = 0;
    for (size_t i = 0; i < lc.n; i++) {
        trace *t = lc.found[i];
        const char *pid = trace_persist_id(trace_get_persist(t));
        if (is_reserved(hub, trace_id(t))) {
            /* An earlier run's always-on trace: its name belongs to this run's, so it comes
             * back as "<id>.<persistent_id>", an ordinary stopped trace. */
            char name[TRACE_ID_MAX + 64];
            snprintf(name, sizeof(name), "%s.%s", hub->reserved_id, pid);
            if (trace_rename(t, name) == WAMP_OK) {
                hub_log(hub, false, "persisted trace \"%s\" of an earlier run is now \"%s\"",
                        hub->reserved_id, name);
            }
        }
        if (index_of(hub, trace_id(t)) != SIZE_MAX || is_reserved(hub, trace_id(t))) {
            hub_log(hub, true, "persisted trace %s not reloaded: trace id \"%s\" is taken", pid,
                    trace_id(t));
            trace_free(t);
        } else if (counted(hub) == hub->max_traces) {
            hub_log(hub, true,
                    "persisted trace %s not reloaded: max_traces (%zu) traces are held already",
                    pid, hub->max_traces);
            trace_free(t);
        } else {
            hub_log(hub, false,
                    "persisted trace \"%s\" reloaded from %s: %" PRIu64 " record(s), seqs %" PRIu64
                    "..%" PRIu64 ", stop_reason %s",
                    trace_id(t), pid, trace_records(t), trace_first_seq(t), trace_next_seq(t),
                    trace_stop_reason_name(trace_get_stop_reason(t)));
            hub->traces[hub->n++] = t;
            loaded++;
        }
    }
    free(lc.found);
    return loaded;
}

/* Notes the trace trace_hub_record_fast() serves (trace_hub_fast_ready()): the one running trace
 * if it keeps everything and has no max_records; else none. A fast trace that
 * stops stops being served at once (trace_hub_fast_ready() checks it runs alone); one that
 * becomes the only running trace when the others stop is noted here at the next tick. */
static void fast_refresh(trace_hub *hub)
{
    trace *only = NULL;
    size_t running = 0;
    for (size_t i = 0; i < hub->n; i++) {
        if (trace_is_running(hub->traces[i]) && !trace_is_fed(hub->traces[i])) {
            only = hub->traces[i];
            running++;
        }
    }
    hub->pub.fast =
            running == 1 && trace_keeps_all(only) && trace_get_options(only)->max_records == 0
                    ? only
                    : NULL;
    hub->fast_store = hub->pub.fast && !trace_persists(hub->pub.fast)
                              ? trace_fast_store(hub->pub.fast)
                              : NULL;
}

wamp_err trace_hub_start(trace_hub *hub, const char *id, const json_t *options, uint64_t pc_ns,
                         uint64_t ts_ns, trace **out, char *why, size_t why_len)
{
    char name[32];
    uint64_t auto_id = hub->auto_id;
    *out = NULL;
    if (is_reserved(hub, id) && (!options || json_is_null(options))) {
        options = hub->reserved_opts;
    }
    if (!id) {
        do {
            snprintf(name, sizeof(name), "trace%" PRIu64, ++auto_id);
        } while (index_of(hub, name) != SIZE_MAX);
        id = name;
    }
    if (!trace_id_check(id, why, why_len)) {
        return WAMP_EINVAL;
    }
    trace *existing = trace_hub_find(hub, id);
    if (existing) {
        if (why && why_len) {
            snprintf(why, why_len, "trace \"%s\" %s", id,
                     trace_is_running(existing) ? "is already running"
                                                : "already exists (stopped; delete it first)");
        }
        *out = existing;
        return WAMP_EEXIST;
    }
    if (!is_reserved(hub, id) && counted(hub) == hub->max_traces) {
        if (why && why_len) {
            snprintf(why, why_len,
                     "too many traces: %zu are held (running or stopped), the limit is %zu; "
                     "delete stopped traces first",
                     counted(hub), hub->max_traces);
        }
        return WAMP_ETOOBIG;
    }
    trace *t;
    wamp_err err = trace_new(id, options, &hub->defaults, hub->mgmt_realm, pc_ns, ts_ns,
                             &hub->pub.running, &t, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    if (trace_get_options(t)->persist) {
        err = trace_enable_persist(t, options, &hub->persist, why, why_len);
        if (err != WAMP_OK) {
            trace_delete_files(t);
            trace_free(t);
            return err;
        }
    }
    trace_hub_clear_repeats(
            hub); /* a repeat goes to the traces its message went to, and this one is new */
    hub->traces[hub->n++] = t;
    hub->auto_id = auto_id;
    fast_refresh(hub);
    *out = t;
    return WAMP_OK;
}

void trace_hub_set_fed(trace_hub *hub, trace *t)
{
    trace_hub_flush_repeats(hub);
    trace_set_fed(t);
    fast_refresh(hub);
}

wamp_err trace_hub_stop(trace_hub *hub, const char *id, uint64_t pc_ns, uint64_t ts_ns, trace **out)
{
    trace_hub_flush_repeats(hub);
    trace *t = trace_hub_find(hub, id);
    if (out) {
        *out = t;
    }
    if (!t) {
        return WAMP_ENOTFOUND;
    }
    trace_stop(t, TRACE_STOP_STOPPED, pc_ns, ts_ns);
    return WAMP_OK;
}

wamp_err trace_hub_delete(trace_hub *hub, const char *id)
{
    size_t i = id ? index_of(hub, id) : SIZE_MAX;
    if (i == SIZE_MAX) {
        return WAMP_ENOTFOUND;
    }
    if (trace_is_running(hub->traces[i])) {
        return WAMP_EDENIED;
    }
    trace_hub_clear_repeats(hub);
    trace_delete_files(hub->traces[i]);
    trace_free(hub->traces[i]);
    memmove(&hub->traces[i], &hub->traces[i + 1], (hub->n - i - 1) * sizeof(*hub->traces));
    hub->n--;
    fast_refresh(hub);
    return WAMP_OK;
}

void trace_hub_shutdown(trace_hub *hub, uint64_t pc_ns, uint64_t ts_ns)
{
    trace_hub_flush_repeats(hub);
    for (size_t i = 0; i < hub->n; i++) {
        trace_stop(hub->traces[i], TRACE_STOP_SHUTDOWN, pc_ns, ts_ns);
    }
}

size_t trace_hub_on_connection(trace_hub *hub, const json_t *info, uint64_t pc_ns, uint64_t ts_ns)
{
    size_t kept = 0;
    trace_hub_clear_repeats(hub); /* nothing may come between a message and its repeats */
    for (size_t i = 0; i < hub->n; i++) {
        trace *t = hub->traces[i];
        uint64_t seq;
        if (trace_is_running(t) && trace_keeps_connections(t) && !trace_is_fed(t) &&
            trace_connection(t, info, pc_ns, ts_ns, &seq) == WAMP_OK) {
            kept++;
        }
    }
    return kept;
}

void trace_hub_tick(trace_hub *hub, uint64_t pc_ns, uint64_t ts_ns, const trace_hub_events *ev,
                    void *ctx)
{
    trace_hub_flush_repeats(hub);
    fast_refresh(hub);
    for (size_t i = 0; i < hub->n; i++) {
        trace *t = hub->traces[i];
        trace_tick(t, pc_ns, ts_ns);
        const char *io = trace_take_io_error(t);
        if (io) {
            hub_log(hub, true, "trace \"%s\" stopped (io_error): %s; routing goes on", trace_id(t),
                    io);
        }
    }
    if (!ev) {
        return;
    }
    for (size_t i = 0; i < hub->n; i++) {
        trace *t = hub->traces[i];
        trace_batch b;
        if (trace_take_batch(t, pc_ns, ts_ns, &b) && ev->on_batch) {
            ev->on_batch(ctx, t, &b);
        }
        if (trace_take_stop_notice(t) && ev->on_stopped) {
            ev->on_stopped(ctx, t);
        }
    }
}

void trace_hub_repeat_end(trace_hub *hub, bool last)
{
    trace_hub_end_repeats(hub, last);
}
