/* trace_hub.c: the trace registry and the capture path. */
#include "trace_hub.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wamp_codec.h"
#include "wamp_msg.h"
#include "wamp_types.h"

/* Entries of the hub's action-URI cache (a power of two). */
#define HUB_URI_CACHE 256
/* The most traces a message recorded for trace_hub_repeat() may go to. */
#define HUB_REPEAT_TRACES 4
/* Repeats gathered before they are appended together (rep_flush()). */
#define HUB_REPEAT_BATCH 64

struct trace_hub {
    struct trace_hub_pub pub; /* first: read by the inline trace_hub_is_active() */
    size_t max_traces;
    char *mgmt_realm; /* owned; NULL = none */
    trace **traces;   /* max_traces slots; n used, oldest first */
    size_t n;
    trace **hits; /* max_traces slots: the traces trace_hub_match() chose */
    size_t n_hits;
    size_t n_action_hits;           /* of them, action-level traces */
    size_t n_persisting;            /* of them, traces with files (trace_persists()) */
    uint64_t match_gen;             /* trace_hub_match_gen() */
    uint64_t auto_id;               /* last number used for a "traceN" name */
    trace_option_defaults defaults; /* limit / max_bytes of new traces; 0 = built-in */
    trace_persist_config persist;   /* data_dir owned (persist_dir) */
    char *persist_dir;
    trace_hub_log_fn log;
    void *log_ctx;
    /* trace_hub_reserve(): the always-on trace's id (owned; NULL = none) and its options
     * (owned). It has a slot of its own: traces/hits then hold max_traces + 1 slots. */
    char *reserved_id;
    json_t *reserved_opts;
    /* Action URIs made for kept messages, by hash of their text (direct-mapped, each entry a
     * reference; see intern_uri()). */
    trace_str *uris[HUB_URI_CACHE];

    /* The message last sent and recorded, which trace_hub_repeat() records again for another
     * receiver (see there). wire and uri are references (wire NULL: nothing to repeat); rec, the
     * message's parts for persisted traces, borrows them, and corr points to corr; mem is the
     * record in-memory traces get (its own references), its peer swapped per receiver. */
    struct {
        wamp_buf *wire;
        trace_str *uri;
        trace_persist_rec rec;
        uint8_t corr[TRACE_UUID_LEN];
        trace *traces[HUB_REPEAT_TRACES]; /* persisted */
        size_t n;
        trace_record mem;
        trace *mem_traces[HUB_REPEAT_TRACES];
        size_t n_mem;
        uint64_t keys; /* the last trace_persist_rec.key given */
        /* Receivers repeated but not appended yet (references), in order: rep_flush(). */
        trace_peer *pend[HUB_REPEAT_BATCH];
        size_t n_pend;
        bool pend_last; /* the last of them completes the action */
    } rep;
};

_Static_assert(offsetof(struct trace_hub, pub) == 0, "trace_hub_is_active() reads offset 0");

/* Appends the repeats gathered by trace_hub_repeat(), in one go per trace (one call into the
 * encoder for the whole fan-out instead of one per receiver). Every entry point of the hub but
 * trace_hub_repeat() and trace_hub_is_active() calls it first, so that nothing is recorded, read
 * or stopped between a repeat and its record. */
static void rep_flush_gathered(trace_hub *hub);

static inline void rep_flush(trace_hub *hub)
{
    if (hub->rep.n_pend) {
        rep_flush_gathered(hub);
    }
}

static void rep_flush_gathered(trace_hub *hub)
{
    size_t n = hub->rep.n_pend;
    bool last = hub->rep.pend_last;
    hub->rep.n_pend = 0;
    hub->rep.pend_last = false;
    for (size_t i = 0; i < hub->rep.n; i++) {
        (void)trace_append_run(hub->rep.traces[i], &hub->rep.rec, hub->rep.pend, n, last);
    }
    for (size_t i = 0; i < hub->rep.n_mem; i++) {
        for (size_t k = 0; k < n; k++) {
            trace_record r;
            trace_record_clone(&hub->rep.mem, &r);
            trace_peer_unref(&r.peer);
            r.peer = trace_peer_ref(hub->rep.pend[k]);
            if (last && k == n - 1) {
                r.flags |= TRACE_CORR_LAST;
            }
            trace_append_take(hub->rep.mem_traces[i], &r);
        }
    }
    for (size_t i = 0; i < n; i++) {
        trace_peer_unref(&hub->rep.pend[i]);
    }
}

void trace_hub_flush(trace_hub *hub)
{
    rep_flush(hub);
}

/* Forgets the message trace_hub_repeat() would repeat (after appending its repeats). */
static void rep_forget(trace_hub *hub);

static inline void rep_clear(trace_hub *hub)
{
    if (hub->rep.wire || hub->rep.n_pend || hub->rep.n_mem) {
        rep_forget(hub);
    }
}

static void rep_forget(trace_hub *hub)
{
    rep_flush(hub);
    wamp_buf_unref(&hub->rep.wire);
    trace_str_unref(&hub->rep.uri);
    hub->rep.n = 0;
    if (hub->rep.n_mem) {
        trace_record_fini(&hub->rep.mem);
        hub->rep.n_mem = 0;
    }
}

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
    rep_clear(hub); /* the repeats gathered go to their traces first */
    for (size_t i = 0; i < hub->n; i++) {
        trace_free(hub->traces[i]);
    }
    free(hub->traces);
    free(hub->hits);
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
    if (!trace_id_is_valid(id)) {
        if (why && why_len) {
            snprintf(why, why_len,
                     "trace_id: must be a string of 1 to %d characters without control "
                     "characters",
                     TRACE_ID_MAX);
        }
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
    rep_clear(hub); /* a repeat goes to the traces its message went to, and this one is new */
    hub->traces[hub->n++] = t;
    hub->auto_id = auto_id;
    *out = t;
    return WAMP_OK;
}

wamp_err trace_hub_stop(trace_hub *hub, const char *id, uint64_t pc_ns, uint64_t ts_ns, trace **out)
{
    rep_flush(hub);
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
    rep_clear(hub);
    trace_delete_files(hub->traces[i]);
    trace_free(hub->traces[i]);
    memmove(&hub->traces[i], &hub->traces[i + 1], (hub->n - i - 1) * sizeof(*hub->traces));
    hub->n--;
    return WAMP_OK;
}

void trace_hub_shutdown(trace_hub *hub, uint64_t pc_ns, uint64_t ts_ns)
{
    rep_flush(hub);
    for (size_t i = 0; i < hub->n; i++) {
        trace_stop(hub->traces[i], TRACE_STOP_SHUTDOWN, pc_ns, ts_ns);
    }
}

size_t trace_hub_on_connection(trace_hub *hub, const json_t *info, uint64_t pc_ns, uint64_t ts_ns)
{
    size_t kept = 0;
    rep_clear(hub); /* nothing may come between a message and its repeats */
    for (size_t i = 0; i < hub->n; i++) {
        trace *t = hub->traces[i];
        uint64_t seq;
        if (trace_is_running(t) && trace_keeps_all(t) &&
            trace_connection(t, info, pc_ns, ts_ns, &seq) == WAMP_OK) {
            kept++;
        }
    }
    return kept;
}

/* --- Capture path ---------------------------------------------------------------------------- */

/* A CHALLENGE (Extra) or AUTHENTICATE (Signature) message: holds a secret. */
static bool holds_secret(const json_t *msg)
{
    if (!json_is_array(msg)) {
        return false;
    }
    const json_t *code = json_array_get(msg, 0);
    if (!json_is_integer(code)) {
        return false;
    }
    json_int_t t = json_integer_value(code);
    return t == WAMP_MSG_CHALLENGE || t == WAMP_MSG_AUTHENTICATE;
}

/* Replaces the secret of a CHALLENGE/AUTHENTICATE array (a private copy) with "***": the
 * Signature of AUTHENTICATE [5, Signature, Extra], the Extra of CHALLENGE [4, AuthMethod, Extra].
 * A malformed one (wrong arity) gets every element after the code replaced. */
static bool redact(json_t *msg)
{
    bool auth = json_integer_value(json_array_get(msg, 0)) == WAMP_MSG_AUTHENTICATE;
    size_t n = json_array_size(msg);
    for (size_t i = 1; i < n; i++) {
        if (n == 3 && i != (auth ? 1u : 2u)) {
            continue;
        }
        if (json_array_set_new(msg, i, json_string("***")) != 0) {
            return false;
        }
    }
    return true;
}

static bool ser_is_valid(wamp_ser ser)
{
    return ser == WAMP_SER_JSON || ser == WAMP_SER_MSGPACK || ser == WAMP_SER_CBOR;
}

/* The bytes records of this message keep (one new reference, or NULL for none), in in->ser:
 *   - CHALLENGE / AUTHENTICATE: a redacted copy, encoded here (rare messages). The wire bytes
 *     are never kept, whatever happens.
 *   - a received message the router could not decode: decoded as a plain value here (rare) so
 *     that a malformed CHALLENGE/AUTHENTICATE is redacted too; bytes that do not decode at all
 *     are not kept (they could not be rendered anyway).
 *   - tx: a reference on the router's buffer; rx: one copy of the received bytes.
 *   - tx dropped before encoding: encoded here (rare), if it can be. */
static wamp_buf *kept_bytes(const trace_ctx *c, const trace_input *in, wamp_ser *ser)
{
    *ser = in->ser;
    const void *data = in->wire ? wamp_buf_cdata(in->wire) : in->bytes;
    size_t len = in->wire ? wamp_buf_len(in->wire) : in->len;
    const json_t *msg = in->msg;
    json_t *decoded = NULL;
    wamp_buf *b = NULL;
    if (!msg && data) {
        if (!ser_is_valid(in->ser) ||
            wamp_codec_decode_value(in->ser, data, len, &decoded, NULL, 0) != WAMP_OK) {
            return NULL;
        }
        msg = decoded;
    }
    /* in->msg's code is c->msg_type (trace_hub.h): only a CHALLENGE, an AUTHENTICATE or a
     * message of unknown code needs its JSON looked at, not every message of the capture path. */
    bool may_hold_secret = decoded || c->msg_type == WAMP_MSG_CHALLENGE ||
                           c->msg_type == WAMP_MSG_AUTHENTICATE ||
                           !wamp_msg_type_is_known(c->msg_type);
    if (msg && may_hold_secret && holds_secret(msg)) {
        json_t *copy = json_deep_copy(msg);
        if (copy && redact(copy)) {
            *ser = ser_is_valid(in->ser) ? in->ser : WAMP_SER_JSON;
            if (wamp_codec_encode(*ser, copy, &b) != WAMP_OK) {
                b = NULL;
            }
        }
        json_decref(copy);
    } else if (in->wire) {
        /* The buffer is shared and immutable; taking a reference only changes its count. */
        b = wamp_buf_ref((wamp_buf *)(uintptr_t)in->wire);
    } else if (in->bytes) {
        b = wamp_buf_new_copy(in->bytes, in->len);
    } else if (msg && ser_is_valid(in->ser)) {
        if (wamp_codec_encode(in->ser, msg, &b) != WAMP_OK) {
            b = NULL;
        }
    }
    json_decref(decoded);
    return b;
}

static uint32_t clamp32(size_t n)
{
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* A reference on the message's peer info: the caller's, the one cached in its slot (created
 * now on first use), or a new one from the context. NULL on allocation failure. */
static trace_peer *shared_peer(const trace_ctx *c, const trace_input *in)
{
    if (in->peer) {
        return trace_peer_ref(in->peer);
    }
    if (!in->peer_slot) {
        return trace_peer_new(c->session_id, c->realm, c->authid, c->authrole);
    }
    if (!*in->peer_slot) {
        *in->peer_slot = trace_peer_new(c->session_id, c->realm, c->authid, c->authrole);
    }
    return *in->peer_slot ? trace_peer_ref(*in->peer_slot) : NULL;
}

/* A new reference on an immutable string equal to uri: the cached one for its text, else a new
 * one that replaces the cache entry. Every action (a PUBLISH, a CALL) needs its URI as a
 * trace_str; made afresh, each was a malloc() and, a whole ring later, a free() of memory long
 * out of cache, for the same few topics and procedures over and over. Hashing the text is
 * cheaper, and records of one URI then share one warm object. NULL on allocation failure. */
static trace_str *intern_uri(trace_hub *hub, const char *uri)
{
    /* Eight bytes a step, each mixed by a multiply: a byte-wise hash (FNV-1a) was a chain of
     * one multiply per character, about 40 ns for a typical topic. */
    size_t n = strlen(uri), i = 0;
    uint64_t h = 0x9e3779b97f4a7c15u ^ n, w;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, uri + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, uri + i, n - i);
    h = (h ^ w) * 0xff51afd7ed558ccdu;
    h ^= h >> 29;
    trace_str **e = &hub->uris[h & (HUB_URI_CACHE - 1)];
    if (*e && strcmp(trace_str_get(*e), uri) == 0) {
        return trace_str_ref(*e);
    }
    trace_str *s = trace_str_new(uri);
    if (s) {
        trace_str_unref(e);
        *e = trace_str_ref(s);
    }
    return s;
}

/* Same for the action URI; NULL when the message has none. */
static trace_str *shared_uri(trace_hub *hub, const trace_ctx *c, const trace_input *in)
{
    if (in->uri) {
        return trace_str_ref(in->uri);
    }
    if (!c->uri) {
        return NULL;
    }
    if (!in->uri_slot) {
        return intern_uri(hub, c->uri);
    }
    if (!*in->uri_slot) {
        *in->uri_slot = intern_uri(hub, c->uri);
    }
    return *in->uri_slot ? trace_str_ref(*in->uri_slot) : NULL;
}

/* The correlation flags of a record of in (TRACE_CORR_*). */
static uint8_t corr_flags(const trace_input *in)
{
    return in->correlation ? (uint8_t)(TRACE_CORR_HAS |
                                       (in->correlation_is_anchor ? TRACE_CORR_ANCHOR : 0) |
                                       (in->correlation_is_last ? TRACE_CORR_LAST : 0))
                           : 0;
}

/* The bytes per serializer a record of in reports: in's, or, when it gives none, the length of
 * its bytes in their serializer. */
static void wire_sizes(const trace_input *in, uint32_t out[WAMP_SER_COUNT])
{
    if (in->ser_bytes[0] | in->ser_bytes[1] | in->ser_bytes[2] | in->ser_bytes[3]) {
        for (size_t i = 0; i < WAMP_SER_COUNT; i++) {
            out[i] = clamp32(in->ser_bytes[i]);
        }
        return;
    }
    /* None given (every received message): its bytes' length in its serializer. */
    memset(out, 0, WAMP_SER_COUNT * sizeof(out[0]));
    if (ser_is_valid(in->ser) && (in->wire || in->bytes)) {
        out[in->ser] = clamp32(in->wire ? wamp_buf_len(in->wire) : in->len);
    }
}

/* The record every matching trace gets a copy of (each copy holds its own references). */
static void build_record(trace_hub *hub, const trace_ctx *c, const trace_input *in, trace_record *r)
{
    /* Copied from a zero struct, not memset() (nor a compound literal): GCC turns those into a
     * `rep stos`, whose start-up cost showed in capture profiles; the copy is a few vector moves.
     */
    static const trace_record zero;
    *r = zero;
    r->pc_ns = in->pc_ns;
    r->ts_ns = in->ts_ns;
    r->dir = (uint8_t)c->direction;
    r->msg_type = (uint8_t)(wamp_msg_type_is_known(c->msg_type) ? c->msg_type : 0);
    r->peer = shared_peer(c, in);
    r->uri = shared_uri(hub, c, in);
    if (in->correlation) {
        memcpy(r->corr, in->correlation, TRACE_UUID_LEN);
    }
    r->flags = corr_flags(in);
    wire_sizes(in, r->ser_bytes);
    wamp_ser ser;
    r->wire = kept_bytes(c, in, &ser);
    r->wire_ser = (uint8_t)(r->wire ? ser : 0);
    r->dropped = in->dropped;
}

uint64_t trace_hub_match_gen(const trace_hub *hub)
{
    return hub->match_gen;
}

size_t trace_hub_match(trace_hub *hub, const trace_ctx *ctx)
{
    rep_flush(hub);
    hub->match_gen++;
    hub->n_hits = 0;
    hub->n_action_hits = 0;
    hub->n_persisting = 0;
    if (!hub->pub.running) {
        return 0;
    }
    /* A trace that keeps everything (the usual "capture all" trace, the flight recorder) is
     * tested here, inline: running, and the message not on the management realm (its filter's
     * one exclusion, the hub's realm, tested once per message). */
    bool mgmt = trace_is_mgmt_realm(hub->mgmt_realm, ctx->realm);
    /* Filters first: nothing is allocated, referenced or copied for a rejected message. */
    for (size_t i = 0; i < hub->n; i++) {
        trace *t = hub->traces[i];
        if (trace_keeps_all(t) ? trace_is_running(t) && !mgmt : trace_matches(t, ctx)) {
            hub->n_action_hits += !trace_keeps_all(t) && trace_get_action(t) != NULL;
            hub->n_persisting += trace_persists(t);
            hub->hits[hub->n_hits++] = t;
        }
    }
    return hub->n_hits;
}

size_t trace_hub_on_message(trace_hub *hub, const trace_ctx *ctx, const trace_input *in)
{
    if (trace_hub_match(hub, ctx) == 0) {
        return 0;
    }
    return trace_hub_record_matched(hub, ctx, in);
}

/* The error URI of an ERROR (element 4) or ABORT (element 2), borrowed from in->msg; NULL for
 * other messages, or when the message could not be decoded. */
static const char *error_uri(const trace_ctx *ctx, const trace_input *in)
{
    if (ctx->msg_type == WAMP_MSG_ERROR) {
        return json_string_value(json_array_get(in->msg, 4));
    }
    if (ctx->msg_type == WAMP_MSG_ABORT) {
        return json_string_value(json_array_get(in->msg, 2));
    }
    return NULL;
}

/* Offers the message to the action-level traces among the first n hits and compacts the
 * message-level ones to the front; returns how many message-level hits remain. */
static size_t record_actions(trace_hub *hub, size_t n, const trace_ctx *ctx, const trace_input *in)
{
    size_t n_msg = 0;
    trace_peer *peer = NULL;
    trace_str *uri = NULL;
    const char *error = error_uri(ctx, in);
    bool made = false;
    for (size_t i = 0; i < n; i++) {
        trace *t = hub->hits[i];
        if (!trace_get_action(t)) {
            hub->hits[n_msg++] = t;
            continue;
        }
        if (!made) {
            peer = shared_peer(ctx, in);
            uri = shared_uri(hub, ctx, in);
            made = true;
        }
        trace_action_msg m = {
                .corr = in->correlation,
                .anchor = in->correlation_is_anchor,
                .last = in->correlation_is_last,
                .msg_type = ctx->msg_type,
                .pc_ns = in->pc_ns,
                .ts_ns = in->ts_ns,
                .peer = peer,
                .uri = uri,
                .dropped = in->dropped != NULL,
                .error = error,
        };
        (void)trace_on_action_message(t, &m);
    }
    trace_peer_unref(&peer);
    trace_str_unref(&uri);
    return n_msg;
}

/* Whether the bytes a record keeps are the message's own (a reference on the router's buffer,
 * or the received bytes): then a persisted trace can encode the message straight from the
 * input (persist_direct()). Not for a CHALLENGE, an AUTHENTICATE or a message of unknown code
 * (maybe redacted), a received message that could not be decoded (decoded and checked first) or
 * one dropped before it was encoded (encoded here): kept_bytes() makes those. */
static bool bytes_as_given(const trace_ctx *c, const trace_input *in)
{
    return in->msg && (in->wire || in->bytes) && ser_is_valid(in->ser) &&
           c->msg_type != WAMP_MSG_CHALLENGE && c->msg_type != WAMP_MSG_AUTHENTICATE &&
           wamp_msg_type_is_known(c->msg_type);
}

/* The message's record for a persisted trace, every part borrowed from the input: no
 * trace_record, no references, no copy of received bytes (the encoder copies them once into
 * the trace's write buffer). peer and uri are the shared objects the caller resolved. */
static void persist_direct(const trace_ctx *c, const trace_input *in, trace_peer *peer,
                           trace_str *uri, trace_persist_rec *r)
{
    r->key = 0;
    r->pc_ns = in->pc_ns;
    r->ts_ns = in->ts_ns;
    r->peer = peer;
    r->uri = uri;
    r->dropped = in->dropped;
    r->corr = in->correlation;
    r->flags = corr_flags(in);
    r->wire = in->wire;
    r->bytes = in->wire ? NULL : in->bytes;
    r->len = in->wire ? 0 : in->len;
    r->dir = (uint8_t)c->direction;
    r->msg_type = (uint8_t)c->msg_type;
    r->wire_ser = (uint8_t)in->ser;
    wire_sizes(in, r->ser_bytes);
}

/* Whether the message about to be recorded for n hits, whose bytes the records keep as they are,
 * is kept for trace_hub_repeat(): when the same message sent to another session is certain to go
 * to exactly these traces with only its peer changed: a tx EVENT with a shared buffer,
 * delivered, not the last of its action, and every running trace message-level with a filter
 * blind to the peer (the receivers of one message share its realm, type, URI and action). */
static bool rep_eligible(const trace_hub *hub, const trace_ctx *ctx, const trace_input *in,
                         size_t n)
{
    /* Only an EVENT goes to many sessions (a CALL's INVOCATION, even to a shared registration,
     * goes to one): keeping anything else would be work for nothing. The caller checked that
     * the records keep the message's own bytes (bytes_as_given()). */
    if (ctx->msg_type != WAMP_MSG_EVENT || ctx->direction != TRACE_TX || !in->wire || in->dropped ||
        in->correlation_is_anchor || in->correlation_is_last || n > HUB_REPEAT_TRACES) {
        return false;
    }
    for (size_t i = 0; i < hub->n; i++) {
        const trace *t = hub->traces[i];
        if (trace_is_running(t) && !trace_is_peer_blind(t)) {
            return false;
        }
    }
    return true;
}

/* Keeps the message for trace_hub_repeat() (rep_eligible()): its buffer, URI and parts under
 * key; the traces it went to are added by the recording paths. */
static void rep_keep(trace_hub *hub, const trace_ctx *ctx, const trace_input *in, uint64_t key)
{
    hub->rep.wire = wamp_buf_ref((wamp_buf *)(uintptr_t)in->wire);
    hub->rep.uri = shared_uri(hub, ctx, in);
    persist_direct(ctx, in, NULL, hub->rep.uri, &hub->rep.rec);
    hub->rep.rec.key = key;
    if (in->correlation) {
        memcpy(hub->rep.corr, in->correlation, TRACE_UUID_LEN);
        hub->rep.rec.corr = hub->rep.corr;
    }
}

bool trace_hub_repeat(trace_hub *hub, const wamp_buf *wire, trace_peer *peer,
                      const uint8_t *correlation, uint64_t pc_ns, bool last)
{
    trace_persist_rec *r = &hub->rep.rec;
    if (!wire || wire != hub->rep.wire || !peer || pc_ns != r->pc_ns ||
        !correlation != !(r->flags & TRACE_CORR_HAS) ||
        (correlation && memcmp(correlation, hub->rep.corr, TRACE_UUID_LEN) != 0)) {
        return false;
    }
    hub->rep.pend[hub->rep.n_pend++] = trace_peer_ref(peer);
    if (last) {
        /* The action's last message (the run's last entry says so): nothing follows. */
        hub->rep.pend_last = true;
        rep_flush(hub);
    } else if (hub->rep.n_pend == HUB_REPEAT_BATCH) {
        rep_flush(hub);
    }
    return true;
}

/* Appends the message to the persisted message-level traces among the first n hits, straight
 * from the input (under key: 0, or the key of a message rep_keep() kept for repeats, whose parts
 * are taken from there and whose persisted traces are noted there), and compacts the other hits
 * to the front; returns how many remain. */
static size_t record_persisted(trace_hub *hub, size_t n, const trace_ctx *ctx,
                               const trace_input *in, uint64_t key)
{
    size_t n_rest = 0;
    bool made = false;
    trace_peer *peer = NULL;
    trace_str *uri = NULL;
    trace_persist_rec r;
    for (size_t i = 0; i < n; i++) {
        trace *t = hub->hits[i];
        if (!trace_persists(t)) {
            hub->hits[n_rest++] = t;
            continue;
        }
        if (!made) {
            /* References for the duration of the call (an encoder's block takes its own):
             * borrowed when the caller holds one. */
            peer = in->peer ? in->peer : shared_peer(ctx, in);
            if (key) {
                r = hub->rep.rec; /* its URI is the kept one's reference */
                r.peer = peer;
            } else {
                uri = in->uri ? in->uri : shared_uri(hub, ctx, in);
                persist_direct(ctx, in, peer, uri, &r);
            }
            made = true;
        }
        (void)trace_append_rec(t, &r);
        if (key) {
            hub->rep.traces[hub->rep.n++] = t;
        }
    }
    if (peer != in->peer) {
        trace_peer_unref(&peer);
    }
    if (uri != in->uri) {
        trace_str_unref(&uri);
    }
    return n_rest;
}

size_t trace_hub_record_matched(trace_hub *hub, const trace_ctx *ctx, const trace_input *in)
{
    size_t n_all = hub->n_hits;
    hub->n_hits = 0;
    if (n_all == 0) {
        return 0;
    }
    rep_clear(hub); /* something else is recorded: what follows repeats it, or nothing */
    size_t n_hits = hub->n_action_hits ? record_actions(hub, n_all, ctx, in) : n_all;
    hub->n_action_hits = 0;
    uint64_t key = 0;
    bool as_given = n_hits && bytes_as_given(ctx, in);
    if (as_given && rep_eligible(hub, ctx, in, n_hits)) {
        /* Kept for the next receivers (trace_hub_repeat()), under a key of its own. */
        key = ++hub->rep.keys;
        rep_keep(hub, ctx, in, key);
    }
    if (as_given && hub->n_persisting) {
        n_hits = record_persisted(hub, n_hits, ctx, in, key);
    }
    hub->n_persisting = 0;
    if (n_hits == 0) {
        return n_all;
    }
    trace_record proto;
    build_record(hub, ctx, in, &proto);
    if (key) {
        trace_record_clone(&proto, &hub->rep.mem);
        memcpy(hub->rep.mem_traces, hub->hits, n_hits * sizeof(*hub->hits));
        hub->rep.n_mem = n_hits;
    }
    for (size_t i = 0; i + 1 < n_hits; i++) {
        trace_record r;
        trace_record_clone(&proto, &r);
        trace_append_take(hub->hits[i], &r);
    }
    /* The last trace takes the prototype's own references. */
    trace_append_take(hub->hits[n_hits - 1], &proto);
    return n_all;
}

void trace_hub_tick(trace_hub *hub, uint64_t pc_ns, uint64_t ts_ns, const trace_hub_events *ev,
                    void *ctx)
{
    rep_flush(hub);
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
