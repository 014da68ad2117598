/* rt_metrics.c: the Prometheus text of the router. The plain counters and gauges are rows of
 * tables (one line per metric: name, type, help, where the value is), so that a new counter in
 * rt_router_stats is one more row; the labelled families are walked from the router's state. */
#include "rt_metrics.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rt_cluster.h"
#include "rt_cluster_broker.h"
#include "rt_core_int.h"
#include "rt_dealer_remote.h"
#include "rt_realm.h"
#include "trace.h"
#include "trace_hub.h"
#include "wamp_codec.h"
#include "wamp_msg.h"

/* --- Output buffer -------------------------------------------------------------------------- */

typedef struct mbuf {
    char *p;
    size_t len, cap;
    bool oom;
} mbuf;

static bool mb_reserve(mbuf *b, size_t n)
{
    if (b->oom) {
        return false;
    }
    if (b->len + n + 1 <= b->cap) {
        return true;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) {
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void mb_put(mbuf *b, const char *s, size_t n)
{
    if (!mb_reserve(b, n)) {
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

__attribute__((format(printf, 2, 3))) static void mb_printf(mbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof(tmp)) {
        mb_put(b, tmp, (size_t)n);
        return;
    }
    if (!mb_reserve(b, (size_t)n)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* A label value: backslash, double quote and newline escaped (the exposition format's rule). */
static void mb_label_value(mbuf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\') {
            mb_put(b, "\\\\", 2);
        } else if (*v == '"') {
            mb_put(b, "\\\"", 2);
        } else if (*v == '\n') {
            mb_put(b, "\\n", 2);
        } else {
            mb_put(b, v, 1);
        }
    }
}

/* --- Families ------------------------------------------------------------------------------- */

typedef enum mkind {
    M_COUNTER,
    M_GAUGE,
    M_HISTOGRAM
} mkind;

static void family(mbuf *b, const char *name, mkind kind, const char *help)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    mb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, types[kind]);
}

/* A sample's name and labels (NULL or pairs key, value, ..., NULL), up to its value. */
static void sample_key(mbuf *b, const char *name, const char *const *labels)
{
    mb_printf(b, "%s", name);
    if (labels && labels[0]) {
        mb_put(b, "{", 1);
        for (size_t i = 0; labels[i]; i += 2) {
            mb_printf(b, "%s%s=\"", i ? "," : "", labels[i]);
            mb_label_value(b, labels[i + 1]);
            mb_put(b, "\"", 1);
        }
        mb_put(b, "}", 1);
    }
}

/* One sample. */
static void sample_u64(mbuf *b, const char *name, const char *const *labels, uint64_t v)
{
    sample_key(b, name, labels);
    mb_printf(b, " %" PRIu64 "\n", v);
}

static void sample_f(mbuf *b, const char *name, double v)
{
    mb_printf(b, "%s %.17g\n", name, v);
}

/* One sample of a float value with labels (as sample_u64()). */
static void sample_fl(mbuf *b, const char *name, const char *const *labels, double v)
{
    sample_key(b, name, labels);
    mb_printf(b, " %.17g\n", v);
}

/* rt_router_stats counters without labels: one row each. */
typedef struct stat_row {
    const char *name;
    const char *help;
    size_t off; /* of a uint64_t in rt_router_stats */
} stat_row;

#define STAT(n, field, h)                                   \
    {                                                       \
        "wampscope_" n, h, offsetof(rt_router_stats, field) \
    }
/* clang-format off */
static const stat_row stat_rows[] = {
    STAT("sessions_opened_total", sessions_opened, "Connections attached to the router."),
    STAT("sessions_closed_total", sessions_closed, "Connections closed."),
    STAT("received_bytes_total", bytes_rx, "Bytes of WAMP messages received."),
    STAT("sent_bytes_total", bytes_tx, "Bytes of WAMP messages queued to be sent."),
    STAT("protocol_violations_total", protocol_violations,
         "Sessions closed for a WAMP protocol violation."),
    STAT("slow_consumer_disconnects_total", slow_consumer_disconnects,
         "Sessions disconnected because their outgoing queue was full."),
    STAT("limit_refusals_total", limit_refusals,
         "HELLO, CALL, SUBSCRIBE and REGISTER refused by a wampscope.limits key."),
    STAT("events_dropped_total", events_dropped,
         "EVENTs dropped from full outgoing queues (slow_consumer drop_oldest_events)."),
    STAT("outgoing_too_big_total", messages_too_big,
         "Outgoing messages larger than the receiver's limit, not sent."),
    STAT("incoming_too_big_total", incoming_too_big,
         "Incoming messages over the transport's max_message_size (connection closed)."),
    STAT("connection_refusals_total", connection_refusals,
         "Connections refused by a listener limit (max_connections, rawsocket_min_length)."),
    STAT("hello_timeouts_total", hello_timeouts,
         "Connections closed for not sending HELLO within limits.hello_timeout."),
    STAT("messages_undelivered_total", messages_undelivered,
         "Queued messages never written (their connection went)."),
    STAT("events_not_retained_total", events_not_retained,
         "Retained events not kept (max_retained_topics, max_retained_bytes)."),
    STAT("answers_dropped_total", answers_dropped,
         "YIELDs and ERRORs answering no pending call, dropped."),
};

/* clang-format on */

/* rt_router_gauges without labels. */
typedef struct gauge_row {
    const char *name;
    const char *help;
    size_t off; /* of a size_t in rt_router_gauges */
} gauge_row;

#define GAUGE(n, field, h)                                   \
    {                                                        \
        "wampscope_" n, h, offsetof(rt_router_gauges, field) \
    }
static const gauge_row gauge_rows[] = {
        GAUGE("queued_messages", queued_messages, "Messages in every outgoing queue."),
        GAUGE("queued_bytes", queued_bytes, "Bytes in every outgoing queue."),
        GAUGE("subscriptions", subscriptions, "Subscriptions over all realms."),
        GAUGE("registrations", registrations,
              "Registrations over all realms, router-local procedures included."),
        GAUGE("pending_calls", pending_calls, "Calls waiting for their answer."),
        GAUGE("retained_events", retained_events, "Retained events held."),
};

static uint64_t stat_at(const rt_router_stats *st, size_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)st + off, sizeof(v));
    return v;
}

static size_t gauge_at(const rt_router_gauges *g, size_t off)
{
    size_t v;
    memcpy(&v, (const char *)g + off, sizeof(v));
    return v;
}

/* The cluster link (wampscope.cluster): rows of rt_cluster_link_stats counters, a family per
 * name (consecutive rows), the direction label where a pair of counters is one family. */
typedef struct link_row {
    const char *name;
    const char *help;
    const char *direction; /* "in", "out", or NULL: no label */
    size_t off;            /* of a uint64_t in rt_cluster_link_stats */
} link_row;

#define LINK(n, dir, field, h)                                                 \
    {                                                                          \
        "wampscope_cluster_" n, h, dir, offsetof(rt_cluster_link_stats, field) \
    }
/* clang-format off */
static const link_row link_rows[] = {
    LINK("reconnects_total", NULL, reconnects, "Times the cluster link came back after being up."),
    LINK("messages_total", "in", msgs_in, "Messages over the cluster link, by direction."),
    LINK("messages_total", "out", msgs_out, "Messages over the cluster link, by direction."),
    LINK("bytes_total", "in", bytes_in, "Bytes over the cluster link, by direction."),
    LINK("bytes_total", "out", bytes_out, "Bytes over the cluster link, by direction."),
    LINK("dropped_total", NULL, dropped,
         "Incoming cluster messages dropped over the link's queue limit."),
};

/* clang-format on */

/* Publish/subscribe across the nodes (rt_cluster_broker_stats). */
static void render_cluster_broker(mbuf *b, const rt_cluster_broker *cb)
{
    rt_cluster_broker_stats st;
    rt_cluster_broker_stats_get(cb, &st);
    family(b, "wampscope_cluster_events_total", M_COUNTER,
           "Event messages to and from other nodes (one per publication and node), by direction.");
    const char *out[] = {"direction", "out", NULL}, *in[] = {"direction", "in", NULL};
    sample_u64(b, "wampscope_cluster_events_total", out, st.events_out);
    sample_u64(b, "wampscope_cluster_events_total", in, st.events_in);
    family(b, "wampscope_cluster_events_dropped_total", M_COUNTER,
           "Event messages for other nodes not sent: over the size limit, or refused by the link "
           "(down, or its outgoing queue full).");
    sample_u64(b, "wampscope_cluster_events_dropped_total", NULL, st.events_dropped);
    family(b, "wampscope_cluster_events_invalid_total", M_COUNTER,
           "Messages from other nodes ignored as not valid.");
    sample_u64(b, "wampscope_cluster_events_invalid_total", NULL, st.events_bad);
    family(b, "wampscope_cluster_remote_subscriptions", M_GAUGE,
           "Subscriptions (realm, match, topic) of other nodes this node knows.");
    sample_u64(b, "wampscope_cluster_remote_subscriptions", NULL, st.remote_interest);
}

/* Calls across the nodes (rt_cluster_dealer_stats). */
static void render_cluster_calls(mbuf *b, const rt_cluster_dealer_stats *st)
{
    const char *out[] = {"direction", "out", NULL}, *in[] = {"direction", "in", NULL};
    family(b, "wampscope_cluster_calls_total", M_COUNTER,
           "Calls to other nodes (out) and from them (in).");
    sample_u64(b, "wampscope_cluster_calls_total", out, st->calls_out);
    sample_u64(b, "wampscope_cluster_calls_total", in, st->calls_in);
    family(b, "wampscope_cluster_calls_pending", M_GAUGE,
           "Calls waiting on other nodes (out) and served for them (in).");
    sample_u64(b, "wampscope_cluster_calls_pending", out, st->pending_out);
    sample_u64(b, "wampscope_cluster_calls_pending", in, st->pending_in);
    family(b, "wampscope_cluster_calls_ended_total", M_COUNTER,
           "Calls across nodes ended without the callee's answer, by reason: the other node "
           "left or joined again (node_gone), the link was down (link_down), the caller's "
           "deadline (timeout).");
    const char *gone[] = {"reason", "node_gone", NULL}, *down[] = {"reason", "link_down", NULL},
               *late[] = {"reason", "timeout", NULL};
    sample_u64(b, "wampscope_cluster_calls_ended_total", gone, st->node_gone);
    sample_u64(b, "wampscope_cluster_calls_ended_total", down, st->link_down);
    sample_u64(b, "wampscope_cluster_calls_ended_total", late, st->timeouts);
    family(b, "wampscope_cluster_calls_refused_total", M_COUNTER,
           "Calls across nodes refused: over cluster.max_calls (limit) or a message over the size "
           "limit (too_big).");
    const char *lim[] = {"reason", "limit", NULL}, *big[] = {"reason", "too_big", NULL};
    sample_u64(b, "wampscope_cluster_calls_refused_total", lim, st->refused);
    sample_u64(b, "wampscope_cluster_calls_refused_total", big, st->too_big);
    family(b, "wampscope_cluster_calls_invalid_total", M_COUNTER,
           "Call messages from other nodes ignored: not valid (malformed) or for no call held "
           "here (unmatched: answered, canceled or timed out meanwhile).");
    const char *bad[] = {"reason", "malformed", NULL}, *none[] = {"reason", "unmatched", NULL};
    sample_u64(b, "wampscope_cluster_calls_invalid_total", bad, st->malformed);
    sample_u64(b, "wampscope_cluster_calls_invalid_total", none, st->unmatched);
}

static void render_cluster(mbuf *b, const rt_cluster *c)
{
    rt_cluster_link_stats ls;
    rt_cluster_link_stats_get(c, &ls);
    family(b, "wampscope_cluster_link_state", M_GAUGE,
           "1 for the cluster link's current state (connecting, up, down), 0 for the others.");
    static const rt_cluster_link_state states[] = {RT_CLUSTER_LINK_CONNECTING, RT_CLUSTER_LINK_UP,
                                                   RT_CLUSTER_LINK_DOWN};
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
        const char *lb[] = {"state", rt_cluster_link_state_name(states[i]), NULL};
        sample_u64(b, "wampscope_cluster_link_state", lb, ls.state == states[i] ? 1 : 0);
    }
    family(b, "wampscope_cluster_nodes", M_GAUGE,
           "Live nodes of the cluster this node sees, itself included.");
    sample_u64(b, "wampscope_cluster_nodes", NULL, rt_cluster_node_count(c));
    for (size_t i = 0; i < sizeof(link_rows) / sizeof(link_rows[0]); i++) {
        const link_row *r = &link_rows[i];
        if (i == 0 || strcmp(link_rows[i - 1].name, r->name) != 0) {
            family(b, r->name, M_COUNTER, r->help);
        }
        uint64_t v;
        memcpy(&v, (const char *)&ls + r->off, sizeof(v));
        const char *lb[] = {"direction", r->direction, NULL};
        sample_u64(b, r->name, r->direction ? lb : NULL, v);
    }
    family(b, "wampscope_cluster_clock_offset_seconds", M_GAUGE,
           "How far another node's wall clock is from this node's (negative: behind), "
           "estimated from its heartbeats.");
    for (size_t i = 0; i < rt_cluster_clock_offset_count(c); i++) {
        int64_t ns;
        const char *lb[] = {"node", rt_cluster_clock_offset_at(c, i, &ns), NULL};
        sample_fl(b, "wampscope_cluster_clock_offset_seconds", lb, (double)ns / 1e9);
    }
}

/* Index of s's listener in the config, n_listeners if none matches. */
static size_t listener_index(const rt_config *cfg, const rt_session *s)
{
    for (size_t i = 0; s->peer.listener_id && i < cfg->n_listeners; i++) {
        if (cfg->listeners[i].id && strcmp(cfg->listeners[i].id, s->peer.listener_id) == 0) {
            return i;
        }
    }
    return cfg->n_listeners;
}

/* wampscope_connections{transport} and wampscope_sessions{realm,transport}: every configured
 * combination (zeros included, so that the series exist before the first session). The
 * transport is the listener's id (a universal transport's RawSocket part has its own). */
static void render_sessions(mbuf *b, const rt_router *rt)
{
    const rt_config *cfg = rt->cfg;
    size_t nl = cfg->n_listeners + 1; /* the last column: sessions of no known listener */
    size_t *conns = calloc(nl, sizeof(*conns));
    size_t *joined = calloc((rt->n_realms ? rt->n_realms : 1) * nl, sizeof(*joined));
    if (!conns || !joined) {
        b->oom = true;
        goto done;
    }
    RT_LIST_FOREACH_SAFE(it, nx, &rt->sessions)
    {
        const rt_session *s = RT_CONTAINER_OF(it, rt_session, in_router);
        size_t li = listener_index(cfg, s);
        conns[li]++;
        for (size_t r = 0; s->realm && r < rt->n_realms; r++) {
            if (rt->realms[r] == s->realm) {
                joined[r * nl + li]++;
            }
        }
        (void)nx;
    }
    family(b, "wampscope_connections", M_GAUGE,
           "Connections attached now (sessions joined or not), by transport.");
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        const char *lab[] = {"transport", cfg->listeners[i].id ? cfg->listeners[i].id : "", NULL};
        sample_u64(b, "wampscope_connections", lab, conns[i]);
    }
    family(b, "wampscope_sessions", M_GAUGE, "Sessions joined now, by realm and transport.");
    for (size_t r = 0; r < rt->n_realms; r++) {
        for (size_t i = 0; i < cfg->n_listeners; i++) {
            const char *lab[] = {"realm", rt_realm_name(rt->realms[r]), "transport",
                                 cfg->listeners[i].id ? cfg->listeners[i].id : "", NULL};
            sample_u64(b, "wampscope_sessions", lab, joined[r * nl + i]);
        }
    }
done:
    free(conns);
    free(joined);
}

/* wampscope_handshakes_refused_total{reason}: every reason, zeros included. */
static void render_refusals(mbuf *b, const rt_router_stats *st)
{
    const char *name = "wampscope_handshakes_refused_total";
    family(b, name, M_COUNTER,
           "Handshakes a transport refused before any session existed, by reason (request: not "
           "a valid upgrade; path: no endpoint there; subprotocol: no WAMP subprotocol).");
    for (int r = 0; r < RT_REFUSAL_COUNT; r++) {
        const char *lab[] = {"reason", rt_refusal_name((rt_refusal)r), NULL};
        sample_u64(b, name, lab, st->handshakes_refused[r]);
    }
}

/* wampscope_http_responses_total{class}: get_worker's http_responses_1xx ... 5xx, zeros
 * included. */
static void render_http(mbuf *b, const rt_router_stats *st)
{
    const char *name = "wampscope_http_responses_total";
    family(b, name, M_COUNTER,
           "HTTP answers of the web transports (files, redirects, the HTTP bridge, refused "
           "upgrades), by status class.");
    for (int k = 0; k < 5; k++) {
        char cls[4] = {(char)('1' + k), 'x', 'x', '\0'};
        const char *lab[] = {"class", cls, NULL};
        sample_u64(b, name, lab, st->http_responses[k]);
    }
}

static void render_messages(mbuf *b, const rt_router_stats *st, bool rx)
{
    const char *name = rx ? "wampscope_messages_received_total" : "wampscope_messages_sent_total";
    family(b, name, M_COUNTER,
           rx ? "WAMP messages received, by type (undecodable: not a valid message) and "
                "serializer."
              : "WAMP messages queued to be sent, by type and serializer.");
    for (int ser = 1; ser < WAMP_SER_COUNT; ser++) {
        for (int t = 0; t < RT_STATS_TYPE_SLOTS; t++) {
            uint64_t v = rx ? st->messages_rx_by_type[ser][t] : st->messages_tx_by_type[ser][t];
            if (v == 0) {
                continue;
            }
            const char *lab[] = {"type", t ? wamp_msg_type_name(t) : "undecodable", "serializer",
                                 wamp_ser_name((wamp_ser)ser), NULL};
            sample_u64(b, name, lab, v);
        }
    }
}

/* One labelled sample per trace. */
typedef enum trace_value {
    TV_RUNNING,
    TV_CAPTURED,
    TV_DROPPED,
    TV_RECORDS,
    TV_BYTES,
    TV_LOST,
} trace_value;

typedef struct trace_row {
    const char *name;
    mkind kind;
    const char *help;
    trace_value what;
} trace_row;

static const trace_row trace_rows[] = {
        {"wampscope_trace_running", M_GAUGE, "1 while the trace runs, 0 once it stopped.",
         TV_RUNNING},
        {"wampscope_trace_captured_records_total", M_COUNTER,
         "Records the trace captured (seqs given out, markers included).", TV_CAPTURED},
        {"wampscope_trace_dropped_records_total", M_COUNTER,
         "Records no longer readable (limit, max_bytes, retention) or abandoned actions.",
         TV_DROPPED},
        {"wampscope_trace_records", M_GAUGE, "Records readable now (memory, or disk if persisted).",
         TV_RECORDS},
        {"wampscope_trace_bytes", M_GAUGE, "Bytes the trace's readable records take.", TV_BYTES},
        {"wampscope_trace_lost_messages_total", M_COUNTER,
         "Messages the flight recorder read from the wire capture never recorded (the capture "
         "let them go before a read reached them); 0 for other traces.",
         TV_LOST},
};

static uint64_t trace_value_of(const trace *t, trace_value what)
{
    switch (what) {
    case TV_RUNNING:
        return trace_is_running(t) ? 1 : 0;
    case TV_CAPTURED:
        return trace_next_seq(t);
    case TV_DROPPED:
        return trace_dropped(t);
    case TV_RECORDS:
        return trace_records(t);
    case TV_BYTES:
        return trace_bytes(t);
    case TV_LOST:
        return trace_lost(t);
    }
    return 0;
}

/* One trace's wampscope_trace_fsync_seconds: _bucket{le} (cumulative), _sum, _count. */
static void render_sync_histogram(mbuf *b, const char *id, trace_persist_sync_stats s)
{
    char le[32];
    const char *lab[] = {"trace", id, "le", le, NULL};
    for (size_t i = 0; i <= TRACE_PERSIST_SYNC_BUCKETS; i++) {
        bool inf = i == TRACE_PERSIST_SYNC_BUCKETS;
        if (inf) {
            snprintf(le, sizeof(le), "+Inf");
        } else {
            snprintf(le, sizeof(le), "%g", (double)trace_persist_sync_le_ns[i] / 1e9);
        }
        sample_u64(b, "wampscope_trace_fsync_seconds_bucket", lab, inf ? s.count : s.le[i]);
    }
    const char *tl[] = {"trace", id, NULL};
    sample_key(b, "wampscope_trace_fsync_seconds_sum", tl);
    mb_printf(b, " %.9f\n", (double)s.sum_ns / 1e9);
    sample_u64(b, "wampscope_trace_fsync_seconds_count", tl, s.count);
}

/* Per persisted trace: what its writer thread reports. */
typedef enum persist_what {
    PW_BACKLOG_PEAK,
    PW_BACKLOG_WAITS,
    PW_RECORDS_WRITTEN
} persist_what;

static const struct {
    const char *name;
    mkind type;
    const char *help;
    persist_what what;
} persist_rows[] = {
        {"wampscope_trace_persist_backlog_peak_bytes", M_GAUGE,
         "Most bytes ever queued for a persisted trace's writer thread.", PW_BACKLOG_PEAK},
        {"wampscope_trace_persist_backlog_waits_total", M_COUNTER,
         "Times the router waited because tracing.write_backlog bytes were queued.",
         PW_BACKLOG_WAITS},
        {"wampscope_trace_records_persisted_total", M_COUNTER,
         "Records a persisted trace's writer thread wrote to its files.", PW_RECORDS_WRITTEN},
};

static uint64_t persist_value_of(const trace_persist *p, persist_what what)
{
    uint64_t waits = 0, peak = 0;
    switch (what) {
    case PW_BACKLOG_PEAK:
        trace_persist_writer_stats(p, &waits, &peak);
        return peak;
    case PW_BACKLOG_WAITS:
        trace_persist_writer_stats(p, &waits, &peak);
        return waits;
    case PW_RECORDS_WRITTEN:
        return trace_persist_get_sync_stats(p).records_written;
    }
    return 0;
}

static void render_traces(mbuf *b, const rt_router *rt)
{
    const trace_hub *hub = rt->hub;
    size_t n = trace_hub_count(hub);
    family(b, "wampscope_traces", M_GAUGE, "Traces held (running or stopped).");
    sample_u64(b, "wampscope_traces", NULL, n);
    family(b, "wampscope_traces_max", M_GAUGE, "wampscope.tracing.max_traces.");
    sample_u64(b, "wampscope_traces_max", NULL, trace_hub_max_traces(hub));
    for (size_t r = 0; r < sizeof(trace_rows) / sizeof(trace_rows[0]); r++) {
        family(b, trace_rows[r].name, trace_rows[r].kind, trace_rows[r].help);
        for (size_t i = 0; i < n; i++) {
            const trace *t = trace_hub_at(hub, i);
            const char *lab[] = {"trace", trace_id(t), NULL};
            sample_u64(b, trace_rows[r].name, lab, trace_value_of(t, trace_rows[r].what));
        }
    }
    /* The writer threads of persisted traces: one family a row, one sample a persisted trace. */
    for (size_t r = 0; r < sizeof(persist_rows) / sizeof(persist_rows[0]); r++) {
        family(b, persist_rows[r].name, persist_rows[r].type, persist_rows[r].help);
        for (size_t i = 0; i < n; i++) {
            const trace *t = trace_hub_at(hub, i);
            const trace_persist *p = trace_get_persist(t);
            if (p) {
                const char *lab[] = {"trace", trace_id(t), NULL};
                sample_u64(b, persist_rows[r].name, lab, persist_value_of(p, persist_rows[r].what));
            }
        }
    }
    family(b, "wampscope_trace_fsync_seconds", M_HISTOGRAM,
           "fsync(2) of a persisted trace's segments, indexes and directories, seconds.");
    for (size_t i = 0; i < n; i++) {
        const trace *t = trace_hub_at(hub, i);
        const trace_persist *p = trace_get_persist(t);
        if (p) {
            render_sync_histogram(b, trace_id(t), trace_persist_get_sync_stats(p));
        }
    }
}

/* The wire capture (wampscope.tracing.wire_capture), when it runs. */
static void render_wire(mbuf *b, const trace_wire *w)
{
    if (!w) {
        return;
    }
    family(b, "wampscope_wire_capture_messages_total", M_COUNTER,
           "Messages the wire capture gave seqs to (its next seq).");
    sample_u64(b, "wampscope_wire_capture_messages_total", NULL, trace_wire_next_seq(w));
    family(b, "wampscope_wire_capture_dropped_messages_total", M_COUNTER,
           "Messages of the chunks the wire capture's ring let go to make room.");
    sample_u64(b, "wampscope_wire_capture_dropped_messages_total", NULL, trace_wire_dropped(w));
    family(b, "wampscope_wire_capture_bytes", M_GAUGE,
           "Bytes of the wire capture's ring in use (chunks' headers and bytes).");
    sample_u64(b, "wampscope_wire_capture_bytes", NULL, trace_wire_used(w));
    family(b, "wampscope_wire_capture_capacity_bytes", M_GAUGE,
           "Bytes of the wire capture's ring (wampscope.tracing.wire_capture).");
    sample_u64(b, "wampscope_wire_capture_capacity_bytes", NULL, trace_wire_capacity(w));
}

static void render_proc(mbuf *b, const rt_metrics_proc *p)
{
    family(b, "process_cpu_seconds_total", M_COUNTER, "User and system CPU time spent, seconds.");
    sample_f(b, "process_cpu_seconds_total", p->cpu_seconds);
    family(b, "process_start_time_seconds", M_GAUGE, "Start time since the epoch, seconds.");
    sample_f(b, "process_start_time_seconds", p->start_time_seconds);
    family(b, "process_resident_memory_bytes", M_GAUGE, "Resident memory size, bytes.");
    sample_u64(b, "process_resident_memory_bytes", NULL, p->resident_bytes);
    family(b, "process_virtual_memory_bytes", M_GAUGE, "Virtual memory size, bytes.");
    sample_u64(b, "process_virtual_memory_bytes", NULL, p->virtual_bytes);
    family(b, "process_open_fds", M_GAUGE, "Open file descriptors.");
    sample_u64(b, "process_open_fds", NULL, p->open_fds);
    family(b, "process_max_fds", M_GAUGE, "Maximum number of open file descriptors.");
    sample_u64(b, "process_max_fds", NULL, p->max_fds);
}

wamp_err rt_metrics_render(const rt_router *rt, const rt_metrics_proc *proc, char **out,
                           size_t *out_len)
{
    mbuf b = {0};
    const rt_router_stats *st = &rt->stats;
    rt_router_gauges g;
    rt_router_gauges_get(rt, &g);

    family(&b, "wampscope_build_info", M_GAUGE, "Always 1; the version is a label.");
    const char *ver[] = {"version", RT_VERSION, NULL};
    sample_u64(&b, "wampscope_build_info", ver, 1);
    render_sessions(&b, rt);
    for (size_t i = 0; i < sizeof(gauge_rows) / sizeof(gauge_rows[0]); i++) {
        family(&b, gauge_rows[i].name, M_GAUGE, gauge_rows[i].help);
        sample_u64(&b, gauge_rows[i].name, NULL, gauge_at(&g, gauge_rows[i].off));
    }
    for (size_t i = 0; i < sizeof(stat_rows) / sizeof(stat_rows[0]); i++) {
        family(&b, stat_rows[i].name, M_COUNTER, stat_rows[i].help);
        sample_u64(&b, stat_rows[i].name, NULL, stat_at(st, stat_rows[i].off));
    }
    render_refusals(&b, st);
    render_http(&b, st);
    render_messages(&b, st, true);
    render_messages(&b, st, false);
    render_traces(&b, rt);
    render_wire(&b, rt->wire);
    if (rt->cluster) {
        render_cluster(&b, rt->cluster);
    }
    rt_cluster_dealer_stats cst;
    if (rt_dealer_remote_stats(rt, &cst)) {
        render_cluster_calls(&b, &cst);
    }
    if (rt->cluster_broker) {
        render_cluster_broker(&b, rt->cluster_broker);
    }
    if (proc) {
        render_proc(&b, proc);
    }
    if (b.oom || !b.p) {
        free(b.p);
        *out = NULL;
        return WAMP_ENOMEM;
    }
    *out = b.p;
    *out_len = b.len;
    return WAMP_OK;
}

/* --- /proc/self ----------------------------------------------------------------------------- */

/* Seconds since the epoch at which the system booted (/proc/stat btime), 0 if unknown. */
static uint64_t boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    uint64_t btime = 0;
    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "btime %" SCNu64, &btime) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return btime;
}

bool rt_metrics_proc_read(rt_metrics_proc *out)
{
    memset(out, 0, sizeof(*out));
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) {
        return false;
    }
    char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) is in parentheses and may contain anything: parse after the
     * last ')'. Fields from 3 on: state, ppid, ..., utime (14), stime (15), ..., starttime
     * (22), vsize (23), rss (24, pages). */
    char *p = strrchr(buf, ')');
    if (!p) {
        return false;
    }
    unsigned long long utime, stime, start, vsize;
    long long rss;
    if (sscanf(p + 2,
               "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
               "%llu %llu %lld",
               &utime, &stime, &start, &vsize, &rss) != 5) {
        return false;
    }
    long hz = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    if (hz <= 0 || page <= 0) {
        return false;
    }
    out->cpu_seconds = (double)(utime + stime) / (double)hz;
    out->start_time_seconds = (double)boot_time() + (double)start / (double)hz;
    out->virtual_bytes = vsize;
    out->resident_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] != '.') {
                out->open_fds++;
            }
        }
        closedir(d);
        out->open_fds--; /* the descriptor of d itself */
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        out->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    }
    return true;
}
