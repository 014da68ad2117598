/* mgmt_api.c: argument handling shared by every management procedure, the node/worker
 * procedures, the trace procedures and the live feed.
 *
 * Arguments may be positional or keyword (same names); a keyword wins over a positional value.
 * Wrong types and out-of-range values answer wamp.error.invalid_argument with a one-line
 * message naming the argument in args[0]. */
#include "mgmt_api.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgmt_cluster.h"
#include "mgmt_live.h"
#include "mgmt_merge.h"
#include "rt_broker.h"
#include "rt_dealer.h"
#include "rt_flight.h"
#include "rt_local.h"
#include "rt_options.h"
#include "rt_realm.h"
#include "rt_session.h"
#include "rt_trace.h"
#include "rt_trace_wire.h"
#include "trace_hub.h"
#include "trace_render.h"
#include "wamp_id.h"
#include "wamp_types.h"
#include "wamp_wr.h"

typedef struct mgmt_proc mgmt_proc;

/* What a registration's ctx points at: the API and the procedure. */
typedef struct mgmt_entry {
    mgmt_api *m;
    const mgmt_proc *p;
} mgmt_entry;

struct mgmt_api {
    rt_router *rt;
    mgmt_cluster *mc; /* NULL without a cluster */
    mgmt_live *live;  /* NULL without a cluster */
    mgmt_entry *entries;
    const rt_config *cfg;
    trace_hub *hub;
    rt_broker *broker; /* the management realm's, for the live topics */
    uint64_t started_wall_ns;
    uint64_t started_pc_ns;
    trace_hub_events events;
};

/* --- Arguments (the shared helpers are in rt_local.h) ---------------------------------------- */

/* Reads an optional integer in [min, max]; absent or null = dflt (null_ok). */
static bool arg_int(const json_t *args, const json_t *kwargs, size_t i, const char *name,
                    json_int_t min, json_int_t max, json_int_t dflt, json_int_t *out,
                    rt_local_reply *reply, wamp_err *err)
{
    json_t *v = rt_local_arg(args, kwargs, i, name);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "%s: must be an integer %lld..%lld", name, (long long)min,
                                    (long long)max);
        return false;
    }
    *out = json_integer_value(v);
    return true;
}

/* node_id (arg 0) must be this node; worker_id (arg 1, if want_worker) this worker. */
static bool check_target(const mgmt_api *m, const json_t *args, const json_t *kwargs,
                         bool want_worker, rt_local_reply *reply, wamp_err *err)
{
    const char *node, *worker;
    if (!rt_local_arg_string(args, kwargs, 0, "node_id", &node, reply, err)) {
        return false;
    }
    if (strcmp(node, m->cfg->node_id) != 0) {
        *err = rt_local_reply_error(reply, MGMT_ERROR_NO_SUCH_OBJECT, "no node \"%s\"", node);
        return false;
    }
    if (!want_worker) {
        return true;
    }
    if (!rt_local_arg_string(args, kwargs, 1, "worker_id", &worker, reply, err)) {
        return false;
    }
    if (strcmp(worker, m->cfg->worker_id) != 0) {
        *err = rt_local_reply_error(reply, MGMT_ERROR_NO_SUCH_WORKER,
                                    "no worker \"%s\" on node \"%s\"", worker, node);
        return false;
    }
    return true;
}

static uint64_t now_pc_ns(const mgmt_api *m)
{
    return rt_router_now_us(m->rt) * 1000u;
}

/* --- Node and worker ----------------------------------------------------------------------- */

static wamp_err proc_list_nodes(mgmt_api *m, const mgmt_who *who, const json_t *args,
                                const json_t *kwargs, rt_local_reply *reply)
{
    (void)who;
    (void)args;
    (void)kwargs;
    rt_cluster *c = mgmt_cluster_get(m->mc);
    if (!c) {
        return rt_local_reply_value(reply, json_pack("[s]", m->cfg->node_id));
    }
    /* Every live node, this one included (just this one while the link is down). */
    json_t *ids = json_array();
    size_t n = rt_cluster_node_count(c);
    for (size_t i = 0; ids && i < n; i++) {
        if (json_array_append_new(ids, json_string(rt_cluster_node_at(c, i))) != 0) {
            json_decref(ids);
            ids = NULL;
        }
    }
    return rt_local_reply_value(reply, ids);
}

static wamp_err proc_list_workers(mgmt_api *m, const mgmt_who *who, const json_t *args,
                                  const json_t *kwargs, rt_local_reply *reply)
{
    (void)who;
    (void)args;
    (void)kwargs;
    return rt_local_reply_value(reply, json_pack("[s]", m->cfg->worker_id));
}

/* get_worker's stats.cluster.clock_offsets: {node_id: seconds} of each other node's wall clock
 * from this node's (negative: behind), as its heartbeats say. */
static json_t *clock_offsets(const rt_cluster *c)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < rt_cluster_clock_offset_count(c); i++) {
        int64_t ns;
        const char *node = rt_cluster_clock_offset_at(c, i, &ns);
        if (json_object_set_new(o, node, json_real((double)ns / 1e9)) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

/* The live topics' counters in get_worker's stats.cluster (mgmt/README.md "Live data"). */
static json_t *live_stats(const mgmt_api *m)
{
    mgmt_live_stats ls;
    mgmt_live_stats_get(m->live, &ls);
    return json_pack("{s:I, s:I, s:I, s:I}", "live_forwarded", (json_int_t)ls.forwarded,
                     "live_dropped", (json_int_t)ls.dropped, "live_received",
                     (json_int_t)ls.received, "live_interested_nodes",
                     (json_int_t)ls.interested_nodes);
}

/* get_worker's "stats" (an extension of Crossbar's worker object, see mgmt/README.md):
 * counters since start and what the router holds now. */
static json_t *worker_stats(const mgmt_api *m)
{
    const rt_router_stats *st = rt_router_stats_get(m->rt);
    rt_router_gauges g;
    rt_router_gauges_get(m->rt, &g);
    json_t *o = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
            "sessions", (json_int_t)g.sessions, "sessions_opened", (json_int_t)st->sessions_opened,
            "sessions_closed", (json_int_t)st->sessions_closed, "messages_rx",
            (json_int_t)st->messages_rx, "messages_tx", (json_int_t)st->messages_tx, "bytes_rx",
            (json_int_t)st->bytes_rx, "bytes_tx", (json_int_t)st->bytes_tx, "protocol_violations",
            (json_int_t)st->protocol_violations, "slow_consumer_disconnects",
            (json_int_t)st->slow_consumer_disconnects, "limit_refusals",
            (json_int_t)st->limit_refusals, "queued_messages", (json_int_t)g.queued_messages,
            "queued_bytes", (json_int_t)g.queued_bytes, "subscriptions",
            (json_int_t)g.subscriptions, "registrations", (json_int_t)g.registrations,
            "pending_calls", (json_int_t)g.pending_calls, "retained_events",
            (json_int_t)g.retained_events);
    /* What each wampscope.limits hit costs (configs/README.md, "When a limit is hit"). */
    json_t *hits = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "events_dropped", (json_int_t)st->events_dropped,
            "messages_too_big", (json_int_t)st->messages_too_big, "incoming_too_big",
            (json_int_t)st->incoming_too_big, "connection_refusals",
            (json_int_t)st->connection_refusals, "hello_timeouts", (json_int_t)st->hello_timeouts,
            "messages_undelivered", (json_int_t)st->messages_undelivered, "events_not_retained",
            (json_int_t)st->events_not_retained);
    if (!o || !hits || json_object_update(o, hits) != 0 ||
        json_object_set_new(o, "answers_dropped", json_integer((json_int_t)st->answers_dropped))) {
        json_decref(o);
        o = NULL;
    }
    json_decref(hits);
    rt_cluster *c = mgmt_cluster_get(m->mc);
    if (o && c) {
        /* The cluster link (mgmt/README.md "Cluster"). */
        rt_cluster_link_stats ls;
        rt_cluster_link_stats_get(c, &ls);
        if (json_object_set_new(
                    o, "cluster",
                    json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "state",
                              rt_cluster_link_state_name(ls.state), "reconnects",
                              (json_int_t)ls.reconnects, "messages_in", (json_int_t)ls.msgs_in,
                              "messages_out", (json_int_t)ls.msgs_out, "bytes_in",
                              (json_int_t)ls.bytes_in, "bytes_out", (json_int_t)ls.bytes_out,
                              "dropped", (json_int_t)ls.dropped, "nodes",
                              (json_int_t)rt_cluster_node_count(c))) != 0 ||
            json_object_update_new(json_object_get(o, "cluster"), live_stats(m)) != 0 ||
            json_object_set_new(json_object_get(o, "cluster"), "clock_offsets", clock_offsets(c)) !=
                    0) {
            json_decref(o);
            o = NULL;
        }
    }
    /* Handshakes the transports refused, per reason: handshakes_refused_subprotocol, ... */
    for (int r = 0; o && r < RT_REFUSAL_COUNT; r++) {
        char key[64];
        snprintf(key, sizeof(key), "handshakes_refused_%s", rt_refusal_name((rt_refusal)r));
        if (json_object_set_new(o, key, json_integer((json_int_t)st->handshakes_refused[r])) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    /* HTTP answers of the web transports by status class: http_responses_2xx, ... */
    for (int k = 0; o && k < 5; k++) {
        char key[32];
        snprintf(key, sizeof(key), "http_responses_%dxx", k + 1);
        if (json_object_set_new(o, key, json_integer((json_int_t)st->http_responses[k])) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

static wamp_err proc_get_worker(mgmt_api *m, const mgmt_who *who, const json_t *args,
                                const json_t *kwargs, rt_local_reply *reply)
{
    (void)who;
    (void)args;
    (void)kwargs;
    json_t *realms = json_array();
    for (size_t i = 0; realms && i < m->cfg->n_realms; i++) {
        json_array_append_new(realms, json_string(m->cfg->realms[i].name));
    }
    char started[TRACE_ISO_LEN];
    trace_format_iso8601(m->started_wall_ns, started);
    double uptime = trace_ns_to_seconds(now_pc_ns(m) - m->started_pc_ns);
    return rt_local_reply_value(
            reply, json_pack("{s:s, s:s, s:s, s:I, s:s, s:s, s:f, s:o?, s:o?}", "id",
                             m->cfg->worker_id, "type", "router", "status", "running", "pid",
                             (json_int_t)getpid(), "created", started, "started", started, "uptime",
                             uptime, "realms", realms, "stats", worker_stats(m)));
}

/* --- Traces --------------------------------------------------------------------------------- */

static json_t *meta(const mgmt_api *m, const trace *t)
{
    return trace_render_meta(t, m->cfg->node_id, m->cfg->worker_id, now_pc_ns(m));
}

/* This node's live event: published here, and sent to the other nodes interested in it. */
static void publish(mgmt_api *m, mgmt_live_topic t, json_t *args_take)
{
    if (args_take) {
        (void)mgmt_live_forward(m->live, t, args_take);
    }
    (void)rt_broker_publish_local(m->broker, mgmt_live_topic_uri(t), args_take, NULL);
}

/* The trace named by argument 2 (trace_id); false with the reply set if there is none. */
static bool find_trace(mgmt_api *m, const json_t *args, const json_t *kwargs, trace **out,
                       rt_local_reply *reply, wamp_err *err)
{
    const char *id;
    if (!rt_local_arg_string(args, kwargs, 2, "trace_id", &id, reply, err)) {
        return false;
    }
    *out = trace_hub_find(m->hub, id);
    if (!*out) {
        *err = rt_local_reply_error(reply, MGMT_ERROR_NO_SUCH_OBJECT, "no trace \"%s\"", id);
        return false;
    }
    return true;
}

static wamp_err proc_list_traces(mgmt_api *m, const mgmt_who *who, const json_t *args,
                                 const json_t *kwargs, rt_local_reply *reply)
{
    (void)who;
    json_t *inc = rt_local_arg(args, kwargs, 2, "include_stopped");
    if (inc && !json_is_null(inc) && !json_is_boolean(inc)) {
        return rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "include_stopped: must be a boolean");
    }
    bool include_stopped = !json_is_false(inc);
    json_t *ids = json_array();
    size_t n = trace_hub_count(m->hub);
    for (size_t i = 0; ids && i < n; i++) {
        trace *t = trace_hub_at(m->hub, i);
        if (include_stopped || trace_is_running(t)) {
            json_array_append_new(ids, json_string(trace_id(t)));
        }
    }
    return rt_local_reply_value(reply, ids);
}

static wamp_err proc_get_trace(mgmt_api *m, const mgmt_who *who, trace *t, const json_t *args,
                               const json_t *kwargs, rt_local_reply *reply)
{
    (void)who;
    (void)args;
    (void)kwargs;
    return rt_local_reply_value(reply, meta(m, t));
}

static wamp_err proc_start_trace(mgmt_api *m, const mgmt_who *who, const json_t *args,
                                 const json_t *kwargs, rt_local_reply *reply)
{
    (void)who;
    json_t *id = rt_local_arg(args, kwargs, 2, "trace_id");
    json_t *options = rt_local_arg(args, kwargs, 3, "trace_options");
    if (id && !json_is_null(id) && !rt_options_is_plain_string(id)) {
        return rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "trace_id: must be a string without NUL bytes, or null");
    }
    char why[200] = "";
    if (json_is_string(id) && !trace_id_check(json_string_value(id), why, sizeof(why))) {
        /* An argument out of range, as a NUL in it: not an option (trace_hub_start() says
         * invalid_configuration for all it refuses). */
        return rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT, "%s, or null", why);
    }
    if (options && !json_is_null(options) && !json_is_object(options)) {
        return rt_local_reply_error(reply, MGMT_ERROR_INVALID_CONFIGURATION,
                                    "trace_options: must be a dict or null");
    }
    trace *t = NULL;
    wamp_err err =
            trace_hub_start(m->hub, json_is_string(id) ? json_string_value(id) : NULL, options,
                            now_pc_ns(m), rt_router_wall_ns(m->rt), &t, why, sizeof(why));
    switch (err) {
    case WAMP_OK:
        break;
    case WAMP_EINVAL:
        return rt_local_reply_error(reply, MGMT_ERROR_INVALID_CONFIGURATION, "%s", why);
    case WAMP_EEXIST:
        return trace_is_running(t)
                       ? rt_local_reply_error(reply, MGMT_ERROR_ALREADY_RUNNING,
                                              "trace \"%s\" is running", trace_id(t))
                       : rt_local_reply_error(reply, MGMT_ERROR_ALREADY_EXISTS,
                                              "trace \"%s\" exists (stopped); delete it first",
                                              trace_id(t));
    case WAMP_ETOOBIG:
        return rt_local_reply_error(reply, MGMT_ERROR_RESOURCE_LIMIT, "%s", why);
    default:
        return err;
    }
    json_t *md = meta(m, t);
    publish(m, MGMT_LIVE_STARTED,
            json_pack("[s, s, s, O]", m->cfg->node_id, m->cfg->worker_id, trace_id(t), md));
    return rt_local_reply_value(reply, md);
}

static wamp_err proc_stop_trace(mgmt_api *m, const mgmt_who *who, trace *t, const json_t *args,
                                const json_t *kwargs, rt_local_reply *reply)
{
    (void)who;
    (void)args;
    (void)kwargs;
    (void)trace_hub_stop(m->hub, trace_id(t), now_pc_ns(m), rt_router_wall_ns(m->rt), NULL);
    /* on_trace_stopped goes out from the next tick, after the trace's last data batch. */
    return rt_local_reply_value(reply, meta(m, t));
}

static wamp_err proc_delete_trace(mgmt_api *m, const mgmt_who *who, trace *t, const json_t *args,
                                  const json_t *kwargs, rt_local_reply *reply)
{
    wamp_err err;
    (void)who;
    (void)args;
    (void)kwargs;
    if (trace_is_running(t)) {
        return rt_local_reply_error(reply, MGMT_ERROR_NOT_STOPPED,
                                    "trace \"%s\" is running; stop it first", trace_id(t));
    }
    err = trace_hub_delete(m->hub, trace_id(t));
    if (err != WAMP_OK) {
        return err;
    }
    return rt_local_reply_value(reply, json_null());
}

static wamp_err proc_get_trace_data(mgmt_api *m, const mgmt_who *who, trace *t, const json_t *args,
                                    const json_t *kwargs, rt_local_reply *reply)
{
    wamp_err err = WAMP_OK;
    json_int_t from, to, limit;
    (void)m;
    if (!arg_int(args, kwargs, 3, "from_seq", 0, (json_int_t)WAMP_ID_MAX, 0, &from, reply, &err) ||
        !arg_int(args, kwargs, 4, "to_seq", 0, (json_int_t)WAMP_ID_MAX, -1, &to, reply, &err) ||
        !arg_int(args, kwargs, 5, "limit", 1, 10000, 100, &limit, reply, &err)) {
        return err;
    }
    /* The page is written straight in the caller's encoding: [records], the stored messages
     * copied as they are where they are in that encoding. Building it as JSON values first
     * cost more than everything else (tests/bench/run_tracing.sh, paging). */
    size_t max = who->max_message_size; /* 0: no limit */
    wamp_wr w;
    wamp_wr_init(&w, (int)who->ser, 64 * 1024, max);
    wamp_wr_array(&w, 1);
    trace_render_records_to(t, (uint64_t)from, to < 0 ? TRACE_SEQ_NONE : (uint64_t)to,
                            (size_t)limit, &w);
    wamp_wr_end(&w);
    err = wamp_wr_finish_buf(&w, &reply->args_encoded);
    wamp_wr_fini(&w);
    if (err == WAMP_ETOOBIG) {
        return rt_local_reply_error(
                reply, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                "%lld records do not fit in this transport's max_message_size (%zu "
                "bytes): ask for fewer (limit)",
                (long long)limit, max);
    }
    return err;
}

/* get_wire_data's page being read: records (a JSON array) up to limit. */
typedef struct wire_page {
    json_t *records;
    size_t limit;
    bool oom;
} wire_page;

static bool wire_page_add(void *ctx, uint64_t seq, const trace_record *rec)
{
    wire_page *pg = ctx;
    json_t *r = rec ? trace_render_record(rec, true) : trace_render_gap(seq, seq, "lost");
    if (!r || json_array_append_new(pg->records, r) != 0) {
        pg->oom = true;
        return false;
    }
    return json_array_size(pg->records) < pg->limit;
}

/* get_wire_data(node_id, worker_id, from_seq=0, limit=100): the wire capture's messages from
 * from_seq on (mgmt/README.md, "get_wire_data"): {"first_seq", "next_seq", "dropped", "records"},
 * each record as get_trace_data's (its payload included), a message the capture holds only in
 * part a gap of one seq ("reason": "lost"). crossbar.error.not_running without a wire capture. */
static wamp_err proc_get_wire_data(mgmt_api *m, const mgmt_who *who, const json_t *args,
                                   const json_t *kwargs, rt_local_reply *reply)
{
    wamp_err err = WAMP_OK;
    json_int_t from, limit;
    (void)who;
    if (!arg_int(args, kwargs, 2, "from_seq", 0, (json_int_t)WAMP_ID_MAX, 0, &from, reply, &err) ||
        !arg_int(args, kwargs, 3, "limit", 1, 10000, 100, &limit, reply, &err)) {
        return err;
    }
    wire_page pg = {.records = json_array(), .limit = (size_t)limit};
    trace_wire_walk walk;
    err = pg.records ? rt_router_wire_read(m->rt, (uint64_t)from, wire_page_add, &pg, &walk)
                     : WAMP_ENOMEM;
    if (err == WAMP_EINVAL) {
        json_decref(pg.records);
        return rt_local_reply_error(reply, MGMT_ERROR_NOT_RUNNING,
                                    "no wire capture runs (wampscope.tracing.wire_capture)");
    }
    if (err != WAMP_OK || pg.oom) {
        json_decref(pg.records);
        return WAMP_ENOMEM;
    }
    return rt_local_reply_value(
            reply, json_pack("{s:I, s:I, s:I, s:o}", "first_seq", (json_int_t)walk.first_seq,
                             "next_seq", (json_int_t)walk.next_seq, "dropped",
                             (json_int_t)walk.first_seq, "records", pg.records));
}

/* cluster.get_trace_page(node_id, worker_id, trace_id, from_seq, limit, to_seq), for the merged
 * reading (not registered): {"records", "now", "running"} where from_seq is this node's cursor,
 * or a map {node_id: seq} holding it (absent: 0), to_seq its last seq to read the same way
 * (absent or null: no bound; a map without this node: nothing), and now this node's wall clock
 * after the read (mgmt_merge.h). */
static wamp_err proc_trace_page(mgmt_api *m, const mgmt_who *who, trace *t, const json_t *args,
                                const json_t *kwargs, rt_local_reply *reply)
{
    wamp_err err = WAMP_OK;
    json_int_t limit;
    (void)who;
    if (!arg_int(args, kwargs, 4, "limit", 1, 10000, 100, &limit, reply, &err)) {
        return err;
    }
    const char *node = m->cfg->node_id;
    json_int_t from = mgmt_merge_from_of(rt_local_arg(args, kwargs, 3, "from_seq"), node);
    json_int_t to = mgmt_merge_to_of(rt_local_arg(args, kwargs, 5, "to_seq"), node);
    json_t *recs =
            to == -1 ? json_array()
                     : trace_render_records(t, from > 0 ? (uint64_t)from : 0,
                                            to < 0 ? TRACE_SEQ_NONE : (uint64_t)to, (size_t)limit);
    return rt_local_reply_value(reply,
                                recs ? json_pack("{s:o, s:f, s:b}", "records", recs, "now",
                                                 trace_ns_to_seconds(rt_router_wall_ns(m->rt)),
                                                 "running", trace_is_running(t))
                                     : NULL);
}

/* mark_trace(node_id, worker_id, trace_id|null, name, meta={}): a marker record (msg_type
 * "Marker", name as uri, meta as msg) in one running trace (returns its seq) or, with a null
 * trace_id, in every running trace (returns {trace_id: seq}, empty when none runs). A stopped
 * trace answers crossbar.error.not_running. */
static wamp_err proc_mark_trace(mgmt_api *m, const mgmt_who *who, const json_t *args,
                                const json_t *kwargs, rt_local_reply *reply)
{
    wamp_err err = WAMP_OK;
    const char *name;
    (void)who;
    json_t *id = rt_local_arg(args, kwargs, 2, "trace_id");
    if (id && !json_is_null(id) && !rt_options_is_plain_string(id)) {
        return rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "trace_id: must be a string without NUL bytes, or null");
    }
    if (!rt_local_arg_string(args, kwargs, 3, "name", &name, reply, &err)) {
        return err;
    }
    if (!*name) {
        return rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT, "name: must not be empty");
    }
    json_t *mt = rt_local_arg(args, kwargs, 4, "meta");
    if (mt && json_is_null(mt)) {
        mt = NULL;
    }
    if (mt && !json_is_object(mt)) {
        return rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT, "meta: must be a dict");
    }
    uint64_t pc = now_pc_ns(m);
    uint64_t ts = rt_router_wall_ns(m->rt);
    uint64_t seq = 0;
    if (json_is_string(id)) {
        trace *t = trace_hub_find(m->hub, json_string_value(id));
        if (!t) {
            return rt_local_reply_error(reply, MGMT_ERROR_NO_SUCH_OBJECT, "no trace \"%s\"",
                                        json_string_value(id));
        }
        err = trace_mark(t, name, mt, pc, ts, &seq);
        if (err == WAMP_ECLOSED) {
            return rt_local_reply_error(reply, MGMT_ERROR_NOT_RUNNING, "trace \"%s\" is stopped",
                                        trace_id(t));
        }
        return err == WAMP_OK ? rt_local_reply_value(reply, json_integer((json_int_t)seq)) : err;
    }
    json_t *seqs = json_object();
    size_t n = trace_hub_count(m->hub);
    for (size_t i = 0; seqs && i < n; i++) {
        trace *t = trace_hub_at(m->hub, i);
        if (!trace_is_running(t)) {
            continue;
        }
        err = trace_mark(t, name, mt, pc, ts, &seq);
        if (err == WAMP_OK) {
            json_object_set_new(seqs, trace_id(t), json_integer((json_int_t)seq));
        } else if (err != WAMP_ECLOSED) {
            json_decref(seqs);
            return err;
        }
    }
    return rt_local_reply_value(reply, seqs);
}

/* --- Live feed (from rt_router_tick) -------------------------------------------------------- */

/* Whether anyone is subscribed to on_trace_data, here or on another node. */
static bool wants_batches(void *ctx)
{
    mgmt_api *m = ctx;
    return rt_broker_receiver_count(m->broker, NULL, MGMT_TOPIC_PREFIX "on_trace_data", false) >
                   0 ||
           mgmt_live_wants(m->live, MGMT_LIVE_DATA);
}

static void on_batch(void *ctx, trace *t, const trace_batch *b)
{
    mgmt_api *m = ctx;
    /* Rendering a period's records is the expensive part of a trace: skip it while nobody is
     * subscribed, here or on another node (a late subscriber fills the gap with get_trace_data). */
    if (!wants_batches(m)) {
        return;
    }
    json_t *records = trace_render_records(t, b->first_seq, b->last_seq, SIZE_MAX);
    json_t *period = trace_render_batch(b);
    if (!records || !period) {
        json_decref(records);
        json_decref(period);
        return;
    }
    publish(m, MGMT_LIVE_DATA,
            json_pack("[s, s, s, o, o]", m->cfg->node_id, m->cfg->worker_id, trace_id(t), period,
                      records));
}

static void on_stopped(void *ctx, trace *t)
{
    mgmt_api *m = ctx;
    json_t *md = meta(m, t);
    if (md) {
        publish(m, MGMT_LIVE_STOPPED,
                json_pack("[s, s, s, o]", m->cfg->node_id, m->cfg->worker_id, trace_id(t), md));
    }
}

/* --- Registration --------------------------------------------------------------------------- */

typedef wamp_err (*mgmt_fn)(mgmt_api *m, const mgmt_who *who, const json_t *args,
                            const json_t *kwargs, rt_local_reply *reply);
/* A procedure on the trace named by argument 2 (trace_id), found before it runs. */
typedef wamp_err (*mgmt_trace_fn)(mgmt_api *m, const mgmt_who *who, trace *t, const json_t *args,
                                  const json_t *kwargs, rt_local_reply *reply);

/* What a procedure's leading arguments name, checked before it runs (check_target()). */
typedef enum mgmt_target {
    MGMT_ANY_NODE, /* no node_id (list_nodes): never forwarded */
    MGMT_NODE,     /* node_id */
    MGMT_WORKER,   /* node_id, worker_id */
} mgmt_target;

struct mgmt_proc {
    const char *name;
    mgmt_fn fn;        /* one of fn and tfn */
    mgmt_trace_fn tfn; /* node_id, worker_id, trace_id */
    mgmt_target target;
    bool every;    /* node_id "*" runs it on every node (mgmt/README.md "Cluster-wide calls") */
    bool internal; /* not registered: run for other nodes only (the merged reading's pages) */
};

static const mgmt_proc procs[] = {
        {"list_nodes", proc_list_nodes, NULL, MGMT_ANY_NODE, false, false},
        {"list_workers", proc_list_workers, NULL, MGMT_NODE, false, false},
        {"get_worker", proc_get_worker, NULL, MGMT_WORKER, false, false},
        {"list_traces", proc_list_traces, NULL, MGMT_WORKER, true, false},
        {"get_trace", NULL, proc_get_trace, MGMT_WORKER, true, false},
        {"start_trace", proc_start_trace, NULL, MGMT_WORKER, true, false},
        {"stop_trace", NULL, proc_stop_trace, MGMT_WORKER, true, false},
        {"delete_trace", NULL, proc_delete_trace, MGMT_WORKER, true, false},
        {"get_trace_data", NULL, proc_get_trace_data, MGMT_WORKER, false, false},
        {"mark_trace", proc_mark_trace, NULL, MGMT_WORKER, true, false},
        {"get_wire_data", proc_get_wire_data, NULL, MGMT_WORKER, false, false},
        /* Crossbar's remote-API names for the same procedures (mgmt/README.md "Crossbar
         * alias names"). */
        {"remote.tracing.get_traces", proc_list_traces, NULL, MGMT_WORKER, true, false},
        {"remote.tracing.get_trace", NULL, proc_get_trace, MGMT_WORKER, true, false},
        {"remote.tracing.start_trace", proc_start_trace, NULL, MGMT_WORKER, true, false},
        {"remote.tracing.stop_trace", NULL, proc_stop_trace, MGMT_WORKER, true, false},
        {"remote.tracing.get_trace_data", NULL, proc_get_trace_data, MGMT_WORKER, false, false},
        {"mrealm.get_nodes", proc_list_nodes, NULL, MGMT_ANY_NODE, false, false},
        {"remote.node.get_workers", proc_list_workers, NULL, MGMT_NODE, false, false},
        {"remote.node.get_worker", proc_get_worker, NULL, MGMT_WORKER, false, false},
        {"cluster.get_trace_page", NULL, proc_trace_page, MGMT_WORKER, false, true},
};

#define N_PROCS (sizeof(procs) / sizeof(procs[0]))

static wamp_err run_forwarded(void *ctx, const char *procedure, const mgmt_who *who,
                              const json_t *args, const json_t *kwargs, rt_local_reply *reply);

/* Every procedure's prologue: the node (and worker) its arguments name must be this one
 * (check_target()), and the trace of a trace procedure must exist (find_trace()); then p runs. */
static wamp_err run_proc(mgmt_api *m, const mgmt_proc *p, const mgmt_who *who, const json_t *args,
                         const json_t *kwargs, rt_local_reply *reply)
{
    wamp_err err = WAMP_OK;
    if (p->target != MGMT_ANY_NODE &&
        !check_target(m, args, kwargs, p->target == MGMT_WORKER, reply, &err)) {
        return err;
    }
    if (p->tfn || p->fn == proc_mark_trace || p->fn == proc_list_traces) {
        /* A trace read or marked holds everything up to now (rt_flight.h). */
        (void)rt_router_flight_sync(m->rt);
    }
    if (p->tfn) {
        trace *t;
        if (!find_trace(m, args, kwargs, &t, reply, &err)) {
            return err;
        }
        return p->tfn(m, who, t, args, kwargs, reply);
    }
    return p->fn(m, who, args, kwargs, reply);
}

/* node_id "*": the procedure on every live node. A start_trace without a trace_id gets one name
 * for every node, "cluster-" and 12 random hex digits (the nodes' own trace1, trace2, ... differ).
 */
static wamp_err run_everywhere(mgmt_api *m, rt_session *caller, const mgmt_proc *p,
                               const json_t *args, const json_t *kwargs, rt_local_reply *reply)
{
    json_t *id = rt_local_arg(args, kwargs, 2, "trace_id");
    if (p->fn != proc_start_trace || (id && !json_is_null(id))) {
        return mgmt_cluster_fanout(m->mc, m->cfg->node_id, run_forwarded, m, caller, p->name, args,
                                   kwargs, NULL, NULL, reply);
    }
    char name[32];
    snprintf(name, sizeof(name), "cluster-%012llx",
             (unsigned long long)(wamp_id_random() & 0xffffffffffffull));
    json_t *a = json_copy((json_t *)args);
    json_t *k = json_copy((json_t *)kwargs);
    bool ok = a && k;
    if (ok && json_object_get(k, "trace_id")) {
        ok = json_object_set_new(k, "trace_id", json_string(name)) == 0;
    } else if (ok) {
        while (ok && json_array_size(a) < 3) {
            ok = json_array_append_new(a, json_null()) == 0;
        }
        ok = ok && json_array_set_new(a, 2, json_string(name)) == 0;
    }
    wamp_err err = ok ? mgmt_cluster_fanout(m->mc, m->cfg->node_id, run_forwarded, m, caller,
                                            p->name, a, k, NULL, NULL, reply)
                      : WAMP_ENOMEM;
    json_decref(a);
    json_decref(k);
    return err;
}

/* The answer of a merged reading from the nodes' pages (mgmt_cluster_finish_fn). */
static json_t *merge_finish(const json_t *map, const json_t *arg)
{
    return mgmt_merge_pages(map, json_object_get(arg, "from"), json_object_get(arg, "to"),
                            (size_t)json_integer_value(json_object_get(arg, "limit")));
}

/* Whether v is a merged reading's seq argument: null (or absent), an integer >= 0, or a map
 * {node_id: integer >= 0}. */
static bool node_seqs_ok(const json_t *v)
{
    if (!v || json_is_null(v)) {
        return true;
    }
    if (json_is_integer(v)) {
        return json_integer_value(v) >= 0;
    }
    if (!json_is_object(v)) {
        return false;
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
    {
        if (!json_is_integer(x) || json_integer_value(x) < 0) {
            return false;
        }
    }
    return true;
}

/* get_trace_data with node_id "*" (mgmt/README.md "Merged reading"): every node's page read
 * from its cursor, merged in time order; from_seq is one seq for every node or a map
 * {node_id: seq}, to_seq null or each node's last seq the same way (a node missing from its map
 * is not read). */
static wamp_err read_everywhere(mgmt_api *m, rt_session *caller, const json_t *args,
                                const json_t *kwargs, rt_local_reply *reply)
{
    wamp_err err = WAMP_OK;
    const char *worker, *id;
    json_int_t limit;
    if (!rt_local_arg_string(args, kwargs, 1, "worker_id", &worker, reply, &err) ||
        !rt_local_arg_string(args, kwargs, 2, "trace_id", &id, reply, &err) ||
        !arg_int(args, kwargs, 5, "limit", 1, 10000, 100, &limit, reply, &err)) {
        return err;
    }
    json_t *from = rt_local_arg(args, kwargs, 3, "from_seq");
    if (!node_seqs_ok(from)) {
        return rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "from_seq: must be an integer >= 0 or a map {node_id: seq}");
    }
    json_t *to = rt_local_arg(args, kwargs, 4, "to_seq");
    if (!node_seqs_ok(to)) {
        return rt_local_reply_error(
                reply, WAMP_ERROR_INVALID_ARGUMENT,
                "to_seq: must be null, an integer >= 0 or a map {node_id: seq}");
    }
    json_t *cursor = from && !json_is_null(from) ? json_incref(from) : json_integer(0);
    json_t *upto = to ? json_incref(to) : json_null();
    json_t *a = json_pack("[s, s, s, O, I, O]", "*", worker, id, cursor, (json_int_t)limit, upto);
    json_t *k = json_object();
    json_t *arg =
            json_pack("{s:O, s:O, s:I}", "from", cursor, "to", upto, "limit", (json_int_t)limit);
    err = a && k && arg
                  ? mgmt_cluster_fanout(m->mc, m->cfg->node_id, run_forwarded, m, caller,
                                        "cluster.get_trace_page", a, k, merge_finish, arg, reply)
                  : WAMP_ENOMEM;
    if (!a || !k) {
        json_decref(arg);
    }
    json_decref(a);
    json_decref(k);
    json_decref(cursor);
    json_decref(upto);
    return err;
}

/* Every registration's rt_local_proc_fn: a call naming another node of the cluster (node_id,
 * argument 0) goes there; everything else runs here, where check_target() refuses unknown
 * nodes. */
static wamp_err dispatch(void *ctx, rt_session *caller, const json_t *args, const json_t *kwargs,
                         rt_local_reply *reply)
{
    const mgmt_entry *e = ctx;
    mgmt_api *m = e->m;
    json_t *node = rt_local_arg(args, kwargs, 0, "node_id");
    if (e->p->every && rt_options_is_plain_string(node) &&
        strcmp(json_string_value(node), "*") == 0) {
        return run_everywhere(m, caller, e->p, args, kwargs, reply);
    }
    if (e->p->tfn == proc_get_trace_data && rt_options_is_plain_string(node) &&
        strcmp(json_string_value(node), "*") == 0) {
        return read_everywhere(m, caller, args, kwargs, reply);
    }
    if (e->p->target != MGMT_ANY_NODE && mgmt_cluster_get(m->mc)) {
        if (rt_options_is_plain_string(node) &&
            strcmp(json_string_value(node), m->cfg->node_id) != 0) {
            return mgmt_cluster_forward(m->mc, caller, json_string_value(node), e->p->name, args,
                                        kwargs, reply);
        }
    }
    mgmt_who who = {.ser = rt_session_ser(caller),
                    .max_message_size = rt_session_peer(caller)->max_message_size};
    return run_proc(m, e->p, &who, args, kwargs, reply);
}

/* A call another node forwarded: runs here whatever node_id says (check_target() checks it). */
static wamp_err run_forwarded(void *ctx, const char *procedure, const mgmt_who *who,
                              const json_t *args, const json_t *kwargs, rt_local_reply *reply)
{
    for (size_t i = 0; i < N_PROCS; i++) {
        if (strcmp(procs[i].name, procedure) == 0) {
            return run_proc(ctx, &procs[i], who, args, kwargs, reply);
        }
    }
    return WAMP_ENOTFOUND;
}

wamp_err mgmt_api_set_cluster(mgmt_api *m, rt_cluster *c)
{
    if (!c) {
        mgmt_live_stop(m->live);
        mgmt_cluster_stop(m->mc);
        return WAMP_OK;
    }
    if (m->mc) {
        return WAMP_EEXIST;
    }
    /* Unacknowledged live events to one node: an eighth of the link's queue (mgmt/README.md
     * "Live data"). */
    size_t inflight = m->cfg->cluster ? m->cfg->cluster->max_pending_bytes / 8 : 0;
    wamp_err err = mgmt_live_new(m->rt, c, m->broker, inflight, &m->live);
    if (err == WAMP_OK) {
        err = mgmt_cluster_new(m->rt, c, run_forwarded, m, &m->mc);
    }
    if (err != WAMP_OK) {
        mgmt_live_free(m->live);
        m->live = NULL;
    }
    return err;
}

/* Removes the registrations of procs[0..n) (they point at the mgmt_api being given up). */
static void unregister_procs(rt_dealer *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!procs[i].internal) {
            char uri[96];
            snprintf(uri, sizeof(uri), MGMT_PREFIX "%s", procs[i].name);
            rt_dealer_unregister_local(d, uri);
        }
    }
}

wamp_err mgmt_api_new(rt_router *rt, uint64_t started_wall_ns, mgmt_api **out)
{
    *out = NULL;
    const rt_config *cfg = rt_router_config(rt);
    rt_realm *realm =
            cfg->mgmt_enabled && cfg->mgmt_realm ? rt_router_find_realm(rt, cfg->mgmt_realm) : NULL;
    if (!realm) {
        return WAMP_ENOTFOUND;
    }
    mgmt_api *m = calloc(1, sizeof(*m));
    mgmt_entry *entries = calloc(N_PROCS, sizeof(*entries));
    if (!m || !entries) {
        free(m);
        free(entries);
        return WAMP_ENOMEM;
    }
    m->entries = entries;
    m->rt = rt;
    m->cfg = cfg;
    m->hub = rt_router_trace_hub(rt);
    m->broker = rt_realm_broker(realm);
    m->started_wall_ns = started_wall_ns;
    m->started_pc_ns = rt_router_now_us(rt) * 1000u;
    rt_dealer *d = rt_realm_dealer(realm);
    for (size_t i = 0; i < N_PROCS; i++) {
        if (procs[i].internal) {
            continue;
        }
        char uri[96];
        snprintf(uri, sizeof(uri), MGMT_PREFIX "%s", procs[i].name);
        m->entries[i] = (mgmt_entry){.m = m, .p = &procs[i]};
        wamp_err err = rt_dealer_register_local(d, uri, dispatch, &m->entries[i]);
        if (err != WAMP_OK) {
            unregister_procs(d, i);
            free(m->entries);
            free(m);
            return err;
        }
    }
    m->events.on_batch = on_batch;
    m->events.wants_batches = wants_batches;
    m->events.on_stopped = on_stopped;
    rt_router_set_trace_events(rt, &m->events, m);
    *out = m;
    return WAMP_OK;
}

void mgmt_api_free(mgmt_api *m)
{
    if (!m) {
        return;
    }
    rt_router_set_trace_events(m->rt, NULL, NULL);
    mgmt_cluster_free(m->mc);
    mgmt_live_free(m->live);
    free(m->entries);
    free(m);
}
