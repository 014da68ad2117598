/* trace_render.c: record / metadata / period -> JSON. */
#include "trace_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace_action.h"
#include "trace_store.h"
#include "trace_strip.h"
#include "wamp_codec.h"
#include "wamp_msg.h"
#include "wamp_types.h"

void trace_format_iso8601(uint64_t ts_ns, char out[TRACE_ISO_LEN])
{
    time_t secs = (time_t)(ts_ns / 1000000000u);
    unsigned ms = (unsigned)((ts_ns % 1000000000u) / 1000000u);
    struct tm tm;
    /* 19 characters "YYYY-MM-DDTHH:MM:SS" for years up to 9999, then ".mmmZ". */
    if (!gmtime_r(&secs, &tm) || tm.tm_year > 9999 - 1900 ||
        strftime(out, TRACE_ISO_LEN, "%Y-%m-%dT%H:%M:%S", &tm) != 19) {
        memcpy(out, "9999-12-31T23:59:59.999Z", TRACE_ISO_LEN);
        return;
    }
    out[19] = '.';
    out[20] = (char)('0' + ms / 100);
    out[21] = (char)('0' + ms / 10 % 10);
    out[22] = (char)('0' + ms % 10);
    out[23] = 'Z';
    out[24] = '\0';
}

/* Keeps the envelope, drops Arguments and ArgumentsKw (trace_app_payload false). */
static void strip_payload(json_t *msg)
{
    if (!json_is_array(msg)) {
        return;
    }
    size_t idx = trace_payload_index((int)json_integer_value(json_array_get(msg, 0)));
    while (idx && json_array_size(msg) > idx) {
        json_array_remove(msg, json_array_size(msg) - 1);
    }
}

/* Safety net: the stored copy of CHALLENGE/AUTHENTICATE is already redacted. */
static void redact_again(json_t *msg)
{
    if (!json_is_array(msg) || json_array_size(msg) != 3) {
        return;
    }
    json_int_t t = json_integer_value(json_array_get(msg, 0));
    if (t == WAMP_MSG_AUTHENTICATE) {
        json_array_set_new(msg, 1, json_string("***"));
    } else if (t == WAMP_MSG_CHALLENGE) {
        json_array_set_new(msg, 2, json_string("***"));
    }
}

/* The record's message: the stored bytes, transcoded exactly into w's serializer (a copy when
 * it is theirs) when they need no change; else decoded (without the payload when it is not to
 * be shown), redacted, and written as a value. null when no bytes were kept or they do not
 * decode (or, in tree mode, hold an integer above 2^63-1, which jansson cannot represent). */
static void write_msg(wamp_wr *w, const trace_record *r, bool app_payload)
{
    size_t len;
    const void *data = trace_record_data(r, &len);
    if (!data) {
        wamp_wr_null(w);
        return;
    }
    bool marker = trace_record_is_marker(r) || trace_record_is_connection(r);
    int type = r->msg_type;
    /* msg_type 0: the received bytes did not decode; anything else decoded when captured. */
    bool as_stored =
            marker || (type != 0 && type != WAMP_MSG_AUTHENTICATE && type != WAMP_MSG_CHALLENGE &&
                       (app_payload || !trace_payload_index(type)));
    /* The bytes decoded when they were captured, so they transcode. */
    if (as_stored && w->ser != WAMP_WR_TREE) {
        wamp_wr_transcode(w, r->wire_ser, data, len);
        return;
    }
    json_t *msg = NULL;
    wamp_msg m;
    if (!marker && type != 0 && !app_payload && trace_payload_index(type)) {
        /* The envelope alone: the payload, whatever it holds, is not decoded. */
        if (wamp_msg_parse_bytes((wamp_ser)r->wire_ser, data, len, &m, NULL, 0) == WAMP_OK) {
            msg = json_incref(m.root);
            wamp_msg_fini(&m);
        }
    } else if (wamp_codec_decode_value((wamp_ser)r->wire_ser, data, len, &msg, NULL, 0) !=
               WAMP_OK) {
        msg = NULL;
    }
    if (!msg) {
        wamp_wr_null(w);
        return;
    }
    if (!marker) {
        if (!app_payload) {
            strip_payload(msg);
        }
        redact_again(msg);
    }
    wamp_wr_json(w, msg);
    json_decref(msg);
}

static void write_record(wamp_wr *w, const trace_record *r, bool app_payload)
{
    if (trace_record_is_action(r)) {
        trace_action_write_record(w, r);
        return;
    }
    const trace_peer *p = r->peer;
    size_t n_sers = 0;
    for (int s = 1; s < WAMP_SER_COUNT; s++) {
        n_sers += r->ser_bytes[s] != 0;
    }
    wamp_wr_map(w, r->dropped ? 16 : 15);
    wamp_wr_key(w, "seq");
    wamp_wr_int(w, (int64_t)r->seq);
    wamp_wr_key(w, "pc");
    wamp_wr_real(w, trace_ns_to_seconds(r->pc_ns));
    wamp_wr_key(w, "ts");
    wamp_wr_real(w, trace_ns_to_seconds(r->ts_ns));
    wamp_wr_key(w, "direction");
    wamp_wr_str_or_null(w, trace_dir_name(r->dir));
    wamp_wr_key(w, "msg_type");
    wamp_wr_str(w, trace_msg_type_title(r->msg_type));
    wamp_wr_key(w, "realm");
    wamp_wr_str_or_null(w, p ? trace_peer_realm(p) : NULL);
    wamp_wr_key(w, "session_id");
    if (p) {
        wamp_wr_int(w, (int64_t)trace_peer_session_id(p));
    } else {
        wamp_wr_null(w);
    }
    wamp_wr_key(w, "authid");
    wamp_wr_str_or_null(w, p ? trace_peer_authid(p) : NULL);
    wamp_wr_key(w, "authrole");
    wamp_wr_str_or_null(w, p ? trace_peer_authrole(p) : NULL);
    wamp_wr_key(w, "correlation");
    if (r->flags & TRACE_CORR_HAS) {
        char uuid[TRACE_UUID_STRLEN];
        trace_uuid_format(r->corr, uuid);
        wamp_wr_str(w, uuid);
    } else {
        wamp_wr_null(w);
    }
    wamp_wr_key(w, "correlation_is_anchor");
    wamp_wr_bool(w, r->flags & TRACE_CORR_ANCHOR);
    wamp_wr_key(w, "correlation_is_last");
    wamp_wr_bool(w, r->flags & TRACE_CORR_LAST);
    wamp_wr_key(w, "uri");
    wamp_wr_str_or_null(w, r->uri ? trace_str_get(r->uri) : NULL);
    wamp_wr_key(w, "serializations");
    wamp_wr_map(w, n_sers);
    for (int s = 1; s < WAMP_SER_COUNT; s++) {
        if (r->ser_bytes[s]) {
            wamp_wr_key(w, wamp_ser_name((wamp_ser)s));
            wamp_wr_int(w, r->ser_bytes[s]);
        }
    }
    wamp_wr_end(w);
    wamp_wr_key(w, "msg");
    write_msg(w, r, app_payload);
    if (r->dropped) {
        wamp_wr_key(w, "dropped");
        wamp_wr_str(w, r->dropped);
    }
    wamp_wr_end(w);
}

json_t *trace_render_record(const trace_record *r, bool app_payload)
{
    wamp_wr w;
    json_t *out = NULL;
    wamp_wr_init(&w, WAMP_WR_TREE, 0, 0);
    write_record(&w, r, app_payload);
    (void)wamp_wr_finish_tree(&w, &out);
    wamp_wr_fini(&w);
    return out;
}

/* A gap of a persisted trace as it appears in a page (mgmt/README.md, "Records"): seq is the
 * gap's last seq within the page's range, so that a client paging from the last seq + 1 goes on
 * after it. */
static void write_gap(wamp_wr *w, const trace_gap *g, uint64_t to_seq)
{
    uint64_t seq = to_seq != TRACE_SEQ_NONE && to_seq < g->to_seq ? to_seq : g->to_seq;
    wamp_wr_map(w, 6);
    wamp_wr_key(w, "seq");
    wamp_wr_int(w, (int64_t)seq);
    wamp_wr_key(w, "kind");
    wamp_wr_str(w, "gap");
    wamp_wr_key(w, "msg_type");
    wamp_wr_str(w, "Gap");
    wamp_wr_key(w, "from_seq");
    wamp_wr_int(w, (int64_t)g->from_seq);
    wamp_wr_key(w, "to_seq");
    wamp_wr_int(w, (int64_t)g->to_seq);
    wamp_wr_key(w, "reason");
    wamp_wr_str(w, g->reason);
    wamp_wr_end(w);
}

json_t *trace_render_gap(uint64_t from_seq, uint64_t to_seq, const char *reason)
{
    trace_gap g = {.from_seq = from_seq, .to_seq = to_seq, .reason = reason};
    wamp_wr w;
    json_t *out = NULL;
    wamp_wr_init(&w, WAMP_WR_TREE, 0, 0);
    write_gap(&w, &g, to_seq);
    (void)wamp_wr_finish_tree(&w, &out);
    wamp_wr_fini(&w);
    return out;
}

/* The gaps of p that meet [lo, hi), oldest first, in *out (malloc'ed; NULL if none). */
static size_t gaps_in(const trace_persist *p, uint64_t lo, uint64_t hi, trace_gap **out)
{
    *out = NULL;
    size_t total = trace_persist_gap_count(p), n = 0;
    for (size_t i = 0; i < total; i++) {
        trace_gap g = trace_persist_gap(p, i);
        if (g.to_seq < lo || g.from_seq >= hi) {
            continue;
        }
        if (!*out) {
            *out = calloc(total, sizeof(**out));
            if (!*out) {
                return 0;
            }
        }
        (*out)[n++] = g;
    }
    return n;
}

void trace_render_records_to(const trace *t, uint64_t from_seq, uint64_t to_seq, size_t limit,
                             wamp_wr *w)
{
    const trace_store *st = trace_get_store(t);
    trace_persist *p = trace_get_persist(t);
    bool app_payload = trace_get_options(t)->trace_app_payload;
    uint64_t first, count;
    trace_record *disk = NULL;
    size_t n_disk = 0;
    trace_gap *gaps = NULL;
    size_t n_gaps = 0;
    uint64_t store_first = trace_store_first_seq(st);
    if (p && limit && from_seq < store_first && trace_persist_first_seq(p) < store_first) {
        /* A persisted trace: seqs older than the in-memory store (a cache of the newest
         * records) come from disk, read into records so that they render like the others;
         * the gaps among them (seqs that cannot be returned) as gap items. */
        uint64_t hi = to_seq == TRACE_SEQ_NONE || to_seq >= store_first ? store_first : to_seq + 1;
        uint64_t lo = from_seq;
        if (lo < trace_persist_first_seq(p)) {
            lo = trace_persist_first_seq(p);
        }
        uint64_t want = hi > lo ? hi - lo : 0;
        size_t n = want < limit ? (size_t)want : limit;
        disk = n ? calloc(n, sizeof(*disk)) : NULL;
        if (disk) {
            n_disk = trace_persist_read(p, lo, hi, n, disk);
        }
        if (want) {
            n_gaps = gaps_in(p, lo, hi, &gaps);
        }
    }
    /* Records and gaps in seq order, at most limit items: the first ones by seq (a gap sorts
     * by its first seq in the range; none overlaps a record). */
    size_t take_r = 0, take_g = 0;
    while (take_r + take_g < limit && (take_r < n_disk || take_g < n_gaps)) {
        bool gap_next =
                take_g < n_gaps && (take_r == n_disk || gaps[take_g].from_seq < disk[take_r].seq);
        if (gap_next) {
            take_g++;
        } else {
            take_r++;
        }
    }
    if (take_r + take_g) {
        /* The rest of the page continues in the store. */
        from_seq = store_first;
    }
    if (!trace_store_range(st, from_seq, to_seq, limit - take_r - take_g, &first, &count)) {
        first = count = 0;
    }
    wamp_wr_array(w, take_r + take_g + (size_t)count);
    for (size_t r = 0, g = 0; r + g < take_r + take_g && wamp_wr_error(w) == WAMP_OK;) {
        if (g < take_g && (r == take_r || gaps[g].from_seq < disk[r].seq)) {
            write_gap(w, &gaps[g++], to_seq);
        } else {
            write_record(w, &disk[r++], app_payload);
        }
    }
    for (uint64_t seq = first; seq < first + count && wamp_wr_error(w) == WAMP_OK; seq++) {
        trace_record rec;
        write_record(w, trace_store_get(st, seq, &rec), app_payload);
    }
    wamp_wr_end(w);
    for (size_t i = 0; i < n_disk; i++) {
        trace_record_fini(&disk[i]);
    }
    free(disk);
    free(gaps);
}

json_t *trace_render_records(const trace *t, uint64_t from_seq, uint64_t to_seq, size_t limit)
{
    wamp_wr w;
    json_t *out = NULL;
    wamp_wr_init(&w, WAMP_WR_TREE, 0, 0);
    trace_render_records_to(t, from_seq, to_seq, limit, &w);
    (void)wamp_wr_finish_tree(&w, &out);
    wamp_wr_fini(&w);
    return out;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* Sets keys[i] = vals[i] (consuming every value, NULL ones included, even after a failure);
 * false if obj or any value is NULL or an insertion failed. */
static bool set_all(json_t *obj, const char *const *keys, json_t **vals, size_t n)
{
    bool ok = obj != NULL;
    for (size_t i = 0; i < n; i++) {
        if (ok && vals[i]) {
            ok = json_object_set_new(obj, keys[i], vals[i]) == 0; /* consumes vals[i] */
        } else {
            ok = false;
            json_decref(vals[i]);
        }
    }
    return ok;
}

static json_t *iso_or_null(uint64_t ts_ns, bool set)
{
    char buf[TRACE_ISO_LEN];
    if (!set) {
        return json_null();
    }
    trace_format_iso8601(ts_ns, buf);
    return json_string(buf);
}

/* The keys only a persisted trace has: gaps [{from_seq, to_seq, reason}] and durable_to_seq
 * (the newest seq in its files, null if none). */
static bool set_persisted(json_t *obj, const trace_persist *p)
{
    json_t *gaps = json_array();
    size_t n = trace_persist_gap_count(p);
    for (size_t i = 0; gaps && i < n; i++) {
        trace_gap g = trace_persist_gap(p, i);
        if (json_array_append_new(gaps, json_pack("{s:I, s:I, s:s}", "from_seq",
                                                  (json_int_t)g.from_seq, "to_seq",
                                                  (json_int_t)g.to_seq, "reason", g.reason)) != 0) {
            json_decref(gaps);
            gaps = NULL;
        }
    }
    uint64_t d = trace_persist_durable_next(p);
    json_t *durable =
            d > trace_persist_first_seq(p) ? json_integer((json_int_t)(d - 1)) : json_null();
    json_t *keys[2] = {gaps, durable};
    static const char *const names[] = {"gaps", "durable_to_seq"};
    return set_all(obj, names, keys, 2);
}

json_t *trace_render_meta(const trace *t, const char *node_id, const char *worker_id,
                          uint64_t now_pc_ns)
{
    static const char *const keys[] = {"id",        "node_id",       "worker_id",  "status",
                                       "started",   "ended",         "runtime",    "options",
                                       "first_seq", "next_seq",      "records",    "dropped",
                                       "bytes",     "persistent_id", "stop_reason"};

    enum {
        N_KEYS = sizeof(keys) / sizeof(keys[0])
    };

    const trace_persist *p = trace_get_persist(t);
    bool running = trace_is_running(t);
    json_t *vals[N_KEYS] = {
            json_string(trace_id(t)),
            str_or_null(node_id),
            str_or_null(worker_id),
            json_string(trace_status_name(t)),
            iso_or_null(trace_started_ns(t), true),
            iso_or_null(trace_ended_ns(t), !running),
            json_real(trace_ns_to_seconds(trace_runtime_ns(t, now_pc_ns))),
            json_deep_copy(trace_get_options(t)->json),
            json_integer((json_int_t)trace_first_seq(t)),
            json_integer((json_int_t)trace_next_seq(t)),
            json_integer((json_int_t)trace_records(t)),
            json_integer((json_int_t)trace_dropped(t)),
            json_integer((json_int_t)trace_bytes(t)),
            p ? json_string(trace_persist_id(p)) : json_null(),
            str_or_null(trace_stop_reason_name(trace_get_stop_reason(t))),
    };
    json_t *obj = json_object();
    if (!set_all(obj, keys, vals, N_KEYS)) {
        json_decref(obj);
        return NULL;
    }
    if (p && !set_persisted(obj, p)) {
        json_decref(obj);
        return NULL;
    }
    if (trace_is_fed(t) &&
        json_object_set_new(obj, "lost", json_integer((json_int_t)trace_lost(t))) != 0) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

json_t *trace_render_batch(const trace_batch *b)
{
    static const char *const keys[] = {"period", "first_seq", "last_seq", "period_start",
                                       "finished_ts"};

    enum {
        N_KEYS = sizeof(keys) / sizeof(keys[0])
    };

    json_t *vals[N_KEYS] = {
            json_integer((json_int_t)b->period),   json_integer((json_int_t)b->first_seq),
            json_integer((json_int_t)b->last_seq), iso_or_null(b->period_start_ns, true),
            iso_or_null(b->finished_ns, true),
    };
    json_t *obj = json_object();
    if (!set_all(obj, keys, vals, N_KEYS)) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}
