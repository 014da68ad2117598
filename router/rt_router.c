/* rt_router.c: making and freeing the router (its realms with their broker and dealer, the meta
 * API, tracing), attaching sessions, timers, refusals and shutdown; the top of the router core.
 * The context reads every module makes are in rt_router_ctx.c. */
#include "rt_router.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mgmt_uri.h"
#include "rt_broker.h"
#include "rt_core_int.h"
#include "rt_dealer.h"
#include "rt_flight.h"
#include "rt_log.h"
#include "rt_meta.h"
#include "rt_realm.h"
#include "rt_session.h"
#include "rt_trace_wire.h"
#include "wamp_codec.h"

static const rt_permission mgmt_permissions[] = {{
        .uri = MGMT_PREFIX,
        .match = WAMP_MATCH_PREFIX,
        .allow_call = true,
        .allow_subscribe = true,
}};

static const rt_role mgmt_roles[] = {{
        .name = RT_MGMT_ROLE,
        .permissions = (rt_permission *)mgmt_permissions,
        .n_permissions = 1,
}};

/* The trace hub's log lines (persisted traces reloaded, torn tails cut, I/O errors). */
static void hub_log(void *ctx, bool error, const char *line)
{
    (void)ctx;
    if (error) {
        RT_LOG_WARN(0, "%s", line);
    } else {
        RT_LOG_INFO(0, "%s", line);
    }
}

/* The flight recorder (wampscope.tracing.flight_recorder): an ordinary trace, started here so
 * that the last messages before an incident are there without anyone having started a trace. Its
 * name was reserved in the hub (no max_traces slot, restart with null options). A failure (out of
 * memory, a data directory it cannot write) is logged and the router runs without it. */
static void start_flight_recorder(rt_router *rt)
{
    char why[256] = "";
    trace *t = NULL;
    wamp_err err =
            trace_hub_start(rt->hub, RT_FLIGHT_RECORDER_ID, NULL, rt_router_now_us(rt) * 1000u,
                            rt_trace_wall_ns(), &t, why, sizeof(why));
    if (err != WAMP_OK) {
        RT_LOG_ERR(0, "flight recorder not started: %s", why[0] ? why : wamp_strerror(err));
        return;
    }
    const trace_options *o = trace_get_options(t);
    RT_LOG_INFO(0,
                "flight recorder running: trace \"%s\", last %zu records (at most %" PRIu64
                " bytes), %s, payload %s%s (wampscope.tracing.flight_recorder)",
                RT_FLIGHT_RECORDER_ID, o->limit, o->max_bytes,
                o->persist ? "in memory and on disk" : "in memory",
                o->trace_app_payload ? "kept" : "stripped",
                o->n_realms || o->n_uris || o->has_msg_types || o->n_session_ids || o->n_authids ||
                                o->n_authroles
                        ? ", filtered"
                        : "");
}

static uint64_t monotonic_us(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Frees r's broker and dealer, then r (NULL-safe). */
static void realm_free(rt_realm *r)
{
    if (!r) {
        return;
    }
    rt_broker_free(rt_realm_broker(r));
    rt_dealer_free(rt_realm_dealer(r));
    rt_realm_free(r);
}

/* A realm with its broker and dealer (which ask the realm back, so the router makes them). NULL
 * on allocation failure. */
static rt_realm *realm_new(rt_router *rt, const rt_realm_config *cfg)
{
    rt_realm *r = rt_realm_new(rt, cfg);
    if (!r) {
        return NULL;
    }
    rt_broker *b = rt_broker_new(r);
    rt_dealer *d = rt_dealer_new(r);
    rt_realm_set_routing(r, b, d);
    if (!b || !d) {
        realm_free(r);
        return NULL;
    }
    return r;
}

/* The hub's settings from cfg (defaults, persistence, the flight recorder's reserved slot) and
 * the wire capture. */
static wamp_err tracing_setup(rt_router *rt, const rt_config *cfg)
{
    trace_hub_set_defaults(rt->hub, cfg->tracing_default_limit, cfg->tracing_default_max_bytes);
    trace_hub_set_persist_defaults(rt->hub, cfg->tracing_persist_max_bytes,
                                   cfg->tracing_persist_max_age_s);
    trace_hub_set_log(rt->hub, hub_log, rt);
    const trace_persist_config pcfg = {
            .data_dir = cfg->tracing_data_dir,
            .segment_bytes = cfg->tracing_segment_bytes,
            .fsync = (trace_fsync_mode)cfg->tracing_fsync,
            .fsync_interval_ms = cfg->tracing_fsync_interval_ms,
            .write_backlog = cfg->tracing_write_backlog,
    };
    if (trace_hub_set_persist(rt->hub, &pcfg) != WAMP_OK) {
        return WAMP_EINVAL;
    }
    if (cfg->tracing_flight_recorder &&
        trace_hub_reserve(rt->hub, RT_FLIGHT_RECORDER_ID, cfg->tracing_flight_recorder) !=
                WAMP_OK) {
        return WAMP_EINVAL;
    }
    uint64_t wire = cfg->tracing_wire_capture;
    if (!wire && cfg->tracing_flight_recorder && cfg->tracing_flight_from_wire) {
        wire = RT_FLIGHT_WIRE_DEFAULT;
    }
    if (wire && !(rt->wire = trace_wire_new(wire))) {
        return WAMP_ENOMEM;
    }
    return WAMP_OK;
}

rt_router *rt_router_new(const rt_config *cfg, rt_clock_fn clock, void *clock_ctx)
{
    rt_router *rt = calloc(1, sizeof(*rt));
    if (!rt) {
        return NULL;
    }
    rt->cfg = cfg;
    rt->clock = clock ? clock : monotonic_us;
    rt->clock_ctx = clock_ctx;
    rt_hmap_init(&rt->sessions_by_id);
    rt_list_init(&rt->sessions);
    rt_list_init(&rt->greeting);
    rt_list_init(&rt->auth_failed);
    trace_uuid_gen_init(&rt->uuids);
    rt_trace_clock_init(&rt->tclock, clock == NULL);
    rt->routing = (rt_trace_routing){.topic_of = rt_broker_topic_of,
                                     .procedure_of = rt_dealer_procedure_of,
                                     .call_action = rt_dealer_call_action,
                                     .caller_action = rt_dealer_caller_action,
                                     .publish_has_receiver = rt_broker_publish_has_receiver};
    rt_trace_sync_clocks(rt);
    rt->hub = trace_hub_new(cfg->tracing_max_traces ? cfg->tracing_max_traces : 16,
                            cfg->mgmt_enabled ? cfg->mgmt_realm : NULL);
    rt->realms = calloc(cfg->n_realms + 1, sizeof(*rt->realms));
    if (!rt->hub || !rt->realms || rt_trace_attach(rt) != WAMP_OK ||
        tracing_setup(rt, cfg) != WAMP_OK) {
        goto fail;
    }
    /* Persisted traces of earlier runs come back as stopped traces. */
    (void)trace_hub_load(rt->hub);
    for (size_t i = 0; i < cfg->n_realms; i++) {
        rt->realms[i] = realm_new(rt, &cfg->realms[i]);
        if (!rt->realms[i]) {
            goto fail;
        }
        rt->n_realms++;
    }
    if (cfg->mgmt_enabled && cfg->mgmt_realm) {
        /* The management realm: role "admin" may call the management procedures and subscribe
         * to their topics; only the router itself registers and publishes there. */
        rt->mgmt_cfg.name = cfg->mgmt_realm;
        rt->mgmt_cfg.roles = (rt_role *)mgmt_roles;
        rt->mgmt_cfg.n_roles = 1;
        rt->mgmt_cfg.no_meta_api = true; /* its role may use crossbarfabriccenter.* only */
        rt->realms[rt->n_realms] = realm_new(rt, &rt->mgmt_cfg);
        if (!rt->realms[rt->n_realms]) {
            goto fail;
        }
        rt->n_realms++;
    }
    /* The meta API: procedures on the realms that serve it, an observer on every realm (events
     * on a realm without the procedures go to whoever may subscribe there). */
    if (rt_meta_attach(rt) != WAMP_OK || rt_trace_wire_attach(rt) != WAMP_OK) {
        goto fail;
    }
    if (cfg->tracing_flight_recorder) {
        start_flight_recorder(rt);
        rt_flight_attach(rt);
    }
    return rt;
fail:
    rt_router_free(rt);
    return NULL;
}

void rt_router_free(rt_router *rt)
{
    if (!rt) {
        return;
    }
    RT_LIST_FOREACH_SAFE(it, nx, &rt->sessions)
    {
        rt_session *s = RT_CONTAINER_OF(it, rt_session, in_router);
        rt_session_on_closed(s);
    }
    rt_log_flush(rt_router_now_us(rt)); /* what the rate-limited lines left out */
    for (size_t i = 0; i < rt->n_realms; i++) {
        realm_free(rt->realms[i]);
    }
    free(rt->realms);
    rt_observers_fini(&rt->observers);
    rt_trace_action_close(rt);
    trace_hub_free(rt->hub);
    rt_wire_follow_free(rt->flight_follow);
    trace_wire_free(rt->wire);
    rt_hmap_fini(&rt->sessions_by_id);
    free(rt);
}

uint64_t rt_router_wall_ns(const rt_router *rt)
{
    (void)rt;
    return rt_trace_wall_ns();
}

void rt_router_set_trace_events(rt_router *rt, const trace_hub_events *ev, void *ctx)
{
    rt->trace_events = ev;
    rt->trace_events_ctx = ctx;
}

void rt_router_http_response(rt_router *rt, unsigned status)
{
    if (status >= 100 && status < 600) {
        rt->stats.http_responses[status / 100 - 1]++;
    }
}

void rt_router_incoming_too_big(rt_router *rt)
{
    rt->stats.incoming_too_big++;
}

/* A connection event outside any session for the traces that keep such events and the wire
 * capture: event ("refused"), reason, the listener's id, the peer's address and a one-line
 * detail, each NULL when unknown (then left out). Out of memory: counted and logged, not traced. */
static void connection_event(rt_router *rt, const char *event, const char *reason,
                             const char *transport, const char *peer, const char *detail)
{
    if (!trace_hub_is_active(rt->hub) && !rt->wire) {
        return;
    }
    json_t *info = json_object();
    const char *keys[] = {"event", "reason", "transport", "peer", "detail"};
    const char *vals[] = {event, reason, transport, peer, detail};
    for (size_t i = 0; info && i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (vals[i]) {
            json_object_set_new(info, keys[i], json_string(vals[i]));
        }
    }
    if (info && trace_hub_is_active(rt->hub)) {
        rt_trace_connection(rt, info);
    }
    if (info) {
        rt_router_wire_connection(rt, info);
    }
    json_decref(info);
}

void rt_router_refused_connection(rt_router *rt, const char *listener_id, const char *peer,
                                  const char *why)
{
    rt->stats.connection_refusals++;
    connection_event(rt, "refused", "limit", listener_id, peer && *peer ? peer : NULL,
                     why ? why : "limits.rawsocket_min_length");
    if (!why) {
        return;
    }
    RT_LOG_INFO_LIMITED(rt_router_now_us(rt), "connection refused by a listener limit", 0,
                        "connection from %s refused by listener %s: %s", peer && *peer ? peer : "?",
                        listener_id ? listener_id : "?", why);
}

const char *rt_refusal_name(rt_refusal reason)
{
    switch (reason) {
    case RT_REFUSAL_REQUEST:
        return "request";
    case RT_REFUSAL_PATH:
        return "path";
    case RT_REFUSAL_SUBPROTOCOL:
        return "subprotocol";
    case RT_REFUSAL_TLS:
        return "tls";
    default:
        return "?";
    }
}

void rt_router_refused_handshake(rt_router *rt, rt_refusal reason, const char *listener_id,
                                 const char *peer, const char *detail)
{
    if ((unsigned)reason >= RT_REFUSAL_COUNT) {
        return;
    }
    rt->stats.handshakes_refused[reason]++;
    const char *name = rt_refusal_name(reason);
    peer = peer && *peer ? peer : NULL;
    connection_event(rt, "refused", name, listener_id, peer, detail);
    /* A client that retries in a loop must not flood the log (RT_LOG_LIMITED: the first lines,
     * then a summary with the count every 10 s while it goes on; a handshake is what a
     * connection causes once: RT_LOG_BURST_CONN lines before counting starts). A TLS failure
     * has a site (and a summary) of its own: it is no WebSocket handshake, and a scanner's
     * flood of them must not hide the others. */
    if (reason == RT_REFUSAL_TLS) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                         "TLS handshake failed", 0,
                         "TLS handshake from %s failed on listener %s%s%s", peer ? peer : "?",
                         listener_id ? listener_id : "?", detail ? ": " : "", detail ? detail : "");
        return;
    }
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                     "WebSocket handshake refused", 0,
                     "WebSocket handshake from %s refused by listener %s (%s)%s%s",
                     peer ? peer : "?", listener_id ? listener_id : "?", name, detail ? ": " : "",
                     detail ? detail : "");
}

void rt_router_gauges_get(const rt_router *rt, rt_router_gauges *out)
{
    memset(out, 0, sizeof(*out));
    out->sessions = rt->n_sessions;
    for (const rt_list *it = rt->sessions.next; it != &rt->sessions; it = it->next) {
        const rt_session *s = RT_CONTAINER_OF(it, rt_session, in_router);
        out->queued_messages += s->outq.count;
        out->queued_bytes += s->outq.bytes;
    }
    for (size_t i = 0; i < rt->n_realms; i++) {
        out->subscriptions += rt_broker_subscription_count(rt_realm_broker(rt->realms[i]));
        out->retained_events += rt_broker_retained_count(rt_realm_broker(rt->realms[i]));
        out->registrations += rt_dealer_registration_count(rt_realm_dealer(rt->realms[i]));
        out->pending_calls += rt_dealer_pending_count(rt_realm_dealer(rt->realms[i]));
    }
}

static const rt_listener *find_listener(const rt_config *cfg, const char *id)
{
    for (size_t i = 0; id && i < cfg->n_listeners; i++) {
        if (cfg->listeners[i].id && strcmp(cfg->listeners[i].id, id) == 0) {
            return &cfg->listeners[i];
        }
    }
    return NULL;
}

rt_session *rt_router_attach(rt_router *rt, const rt_transport_ops *ops, void *tp, wamp_ser ser,
                             const rt_peer *peer)
{
    if (rt->shutting_down) {
        return NULL;
    }
    rt_session *s = calloc(1, sizeof(*s));
    if (!s) {
        return NULL;
    }
    s->rt = rt;
    s->ops = ops;
    s->tp = tp;
    s->ser = ser;
    s->state = RT_SESSION_ESTABLISHED;
    if (peer) {
        s->peer = *peer;
    }
    const rt_listener *l = find_listener(rt->cfg, s->peer.listener_id);
    s->anonymous_role = l ? l->anonymous_role : "anonymous";
    s->auth_cfg = l ? &l->auth : NULL;
    if (!s->peer.max_message_size) {
        s->peer.max_message_size = l ? l->max_message_size : rt->cfg->limits.max_message_size;
    }
    rt_outq_init(&s->outq, rt->cfg->limits.max_queue_bytes, rt->cfg->limits.max_queue_messages);
    rt_list_init(&s->in_realm);
    rt_list_init(&s->subs);
    rt_list_init(&s->regs);
    rt_list_init(&s->calls_made);
    rt_list_init(&s->calls_served);
    s->id = rt_router_draw_session_id(rt);
    if (rt_hmap_insert(&rt->sessions_by_id, &s->by_id, rt_hash_u64(s->id)) != WAMP_OK) {
        free(s);
        return NULL;
    }
    rt_list_add_tail(&rt->sessions, &s->in_router);
    s->hello_deadline_us = rt_router_now_us(rt) + (uint64_t)rt->cfg->limits.hello_timeout_ms * 1000;
    rt_list_add_tail(&rt->greeting, &s->in_wait);
    rt->n_sessions++;
    rt->stats.sessions_opened++;
    RT_LOG_DEBUG(s->id, "connection from %s (%s)", s->peer.addr, wamp_ser_name(ser));
    return s;
}

void rt_router_read_begin(rt_router *rt)
{
    rt->cur.now_set = false;
    rt->cur.in_read = true;
}

void rt_router_read_end(rt_router *rt)
{
    rt->cur.in_read = false;
    rt->cur.now_set = false;
}

void rt_router_tick(rt_router *rt)
{
    uint64_t now = rt_router_now_us(rt);
    rt_trace_sync_clocks(rt);
    rt_log_tick(now); /* the summaries of rate-limited log lines */
    /* Traces: duration auto-stop and the live feed (also for traces that just stopped); the
     * flight recorder read from the wire capture is fed first while the live feed has takers. */
    const trace_hub_events *ev = rt->trace_events;
    if (rt->flight_follow && ev &&
        (!ev->wants_batches || ev->wants_batches(rt->trace_events_ctx))) {
        (void)rt_router_flight_sync(rt);
    }
    trace_hub_tick(rt->hub, now * 1000u, rt_trace_wall_ns(), rt->trace_events,
                   rt->trace_events_ctx);
    /* The greeting list is ordered by deadline (constant timeout, appended in time order). */
    while (!rt_list_is_empty(&rt->greeting)) {
        rt_session *s = RT_CONTAINER_OF(rt->greeting.next, rt_session, in_wait);
        if (s->hello_deadline_us > now) {
            break;
        }
        /* A killed session (CLOSING) waits here for its GOODBYE reply (rt_session_kill). */
        bool killed = s->state == RT_SESSION_CLOSING;
        RT_LOG_INFO_LIMITED(now, "HELLO timeout", s->id, "no %s from %s within %u ms; closing",
                            killed ? "GOODBYE reply" : "HELLO", s->peer.addr,
                            rt->cfg->limits.hello_timeout_ms);
        rt->stats.hello_timeouts++;
        rt_session_close(s, 1008, killed ? "GOODBYE timeout" : "HELLO timeout",
                         false); /* unlinks from greeting */
    }
    /* Call timeouts: one list check per realm when no call has a deadline. */
    for (size_t i = 0; i < rt->n_realms; i++) {
        rt_dealer_tick(rt_realm_dealer(rt->realms[i]), now);
    }
    /* Failed authentications wait auth_failure_delay (constant: the list is in deadline order). */
    while (!rt_list_is_empty(&rt->auth_failed)) {
        rt_session *s = RT_CONTAINER_OF(rt->auth_failed.next, rt_session, in_wait);
        if (s->abort_at_us > now) {
            break;
        }
        rt_session_on_auth_delay_over(s); /* unlinks from auth_failed */
    }
}

void rt_router_begin_shutdown(rt_router *rt)
{
    if (rt->shutting_down) {
        return;
    }
    rt->shutting_down = true;
    rt->shutdown_deadline_us =
            rt_router_now_us(rt) + (uint64_t)rt->cfg->limits.shutdown_grace_ms * 1000;
    RT_LOG_INFO(0, "shutting down: %zu session(s) to close, grace period %u ms", rt->n_sessions,
                rt->cfg->limits.shutdown_grace_ms);
    /* Traces keep running until rt_router_end_shutdown(): the GOODBYEs below, the peers'
     * replies and the traffic of the grace period are recorded too. */
    RT_LIST_FOREACH_SAFE(it, nx, &rt->sessions)
    {
        rt_session *s = RT_CONTAINER_OF(it, rt_session, in_router);
        if (s->state == RT_SESSION_JOINED) {
            /* Spec "GOODBYE": the router says goodbye and waits for the peer's reply. Each
             * GOODBYE is an action of its own, caused by no message (like the leave events of
             * a lost connection), which it completes. */
            bool traced = trace_hub_is_active(rt->hub);
            if (traced) {
                rt_trace_action_open_new(rt);
                rt_observers_action_last(&rt->observers, rt);
            }
            (void)rt_session_send(s, wamp_msg_new_goodbye(NULL, WAMP_CLOSE_SYSTEM_SHUTDOWN));
            if (traced) {
                rt_trace_action_close(rt);
            }
            if (s->state == RT_SESSION_JOINED) {
                s->state = RT_SESSION_CLOSING;
            }
        } else if (s->state != RT_SESSION_CLOSING) { /* greeting, authenticating, closed */
            rt_session_close(s, 1001, "shutting down", false);
        }
    }
}

bool rt_router_shutdown_done(const rt_router *rt)
{
    return rt->shutting_down &&
           (rt->n_sessions == 0 || rt_router_now_us(rt) >= rt->shutdown_deadline_us);
}

void rt_router_end_shutdown(rt_router *rt)
{
    /* Persisted traces write out what they buffered, fsync and save meta.json here. */
    trace_hub_shutdown(rt->hub, rt_router_now_us(rt) * 1000u, rt_trace_wall_ns());
}
