/* rt_router.h: THE router context: configuration, realms, the session registry, id generators,
 * the clock and the tracing hub. Created once in main(), passed explicitly, reached from lws
 * callbacks through lws_context_user(). Owns every rt_session and rt_realm.
 * Single-threaded: every function runs on the service thread. */
#ifndef RT_ROUTER_H
#define RT_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_config.h"
#include "rt_transport.h"
#include "trace_wire.h"
#include "wamp_buf.h"
#include "wamp_err.h"
#include "wamp_msg.h"
#include "wamp_types.h"

typedef struct rt_router rt_router;
typedef struct rt_session rt_session;
typedef struct rt_realm rt_realm;

/* Monotonic clock in microseconds. */
typedef uint64_t (*rt_clock_fn)(void *ctx);

/* New router for cfg (borrowed: must outlive the router). clock NULL = CLOCK_MONOTONIC.
 * Creates one realm per configured realm. NULL on allocation failure. */
rt_router *rt_router_new(const rt_config *cfg, rt_clock_fn clock, void *clock_ctx);
/* Frees every remaining session (without sending anything) and realm. NULL-safe. Transports
 * must have been torn down first (their tp pointers are not touched). */
void rt_router_free(rt_router *rt);

const rt_config *rt_router_config(const rt_router *rt);
uint64_t rt_router_now_us(const rt_router *rt);

/* A transport accepted a connection that will speak serializer ser. Returns the new session
 * (owned by the router, freed only by rt_session_on_closed()), or NULL if the router refuses it
 * (shutting down, out of memory): the adapter then closes the connection. */
rt_session *rt_router_attach(rt_router *rt, const rt_transport_ops *ops, void *tp, wamp_ser ser,
                             const rt_peer *peer);

/* A transport hands the router what it read from a connection in one go (one receive callback):
 * rt_session_on_message() for each message completed there, between these two calls. The
 * records of those messages, and of what they cause at once, share one trace clock reading,
 * taken when a trace first keeps one of them: reading the clock for every message was about a
 * tenth of the flight recorder's cost (rt_trace.h, rt_cur_action.now_ns). A message handed over
 * outside such a pair reads the clock for itself. */
void rt_router_read_begin(rt_router *rt);
void rt_router_read_end(rt_router *rt);

/* Runs timers (HELLO timeouts, shutdown grace). Called every 100 ms by the adapter's loop, and
 * by tests with a fake clock. */
void rt_router_tick(rt_router *rt);

/* SIGTERM/SIGINT: refuse new HELLOs, send GOODBYE(wamp.close.system_shutdown) to every joined
 * session and close the rest. Running traces go on recording (see rt_router_end_shutdown()).
 * Idempotent. */
void rt_router_begin_shutdown(rt_router *rt);
/* true once shutdown began and every session has gone or the grace period has expired: the
 * loop may stop. */
bool rt_router_shutdown_done(const rt_router *rt);
/* The end of the process: stops every running trace with stop_reason "shutdown"; persisted ones
 * write out their buffered records, fsync and save meta.json, so that a restart lists them
 * stopped with every record. Call after the transports are torn down (the closes of the last
 * connections are still recorded) and before rt_router_free(); whether or not
 * rt_router_begin_shutdown() ran (a second signal, a failed loop). Idempotent. */
void rt_router_end_shutdown(rt_router *rt);

/* Live sessions (attached and not yet closed). */
size_t rt_router_session_count(const rt_router *rt);
/* Borrowed realm by name, or NULL. */
rt_realm *rt_router_find_realm(rt_router *rt, const char *name);

/* The router's tracing hub (owned by the router; borrowed). The management API starts and reads
 * traces through it; the core offers every message to it while a trace runs. */
struct trace_hub;
struct trace_hub *rt_router_trace_hub(rt_router *rt);
/* Wall clock for trace records, ns since the epoch. */
uint64_t rt_router_wall_ns(const rt_router *rt);
/* Callbacks for the hub's live-feed events, run from rt_router_tick() (borrowed; NULL = none). */
struct trace_hub_events;
void rt_router_set_trace_events(rt_router *rt, const struct trace_hub_events *ev, void *ctx);

/* The cluster membership of this node (borrowed, NULL: none; set it NULL before freeing it),
 * whose link figures the metrics render. */
struct rt_cluster;
void rt_router_set_cluster(rt_router *rt, const struct rt_cluster *c);
const struct rt_cluster *rt_router_cluster(const rt_router *rt);
/* Publish/subscribe across the nodes (borrowed, NULL: none; set it NULL before freeing it), whose
 * counters the metrics render. */
struct rt_cluster_broker;
void rt_router_set_cluster_broker(rt_router *rt, const struct rt_cluster_broker *cb);

/* Next router-scope id (subscriptions, registrations, invocations): 1, 2, ... wrapping at 2^53. */
uint64_t rt_router_next_id(rt_router *rt);

/* Why a transport adapter refused a connection's handshake (before any session existed). */
typedef enum rt_refusal {
    RT_REFUSAL_REQUEST,     /* "request": not a valid WebSocket upgrade request (HTTP 400) */
    RT_REFUSAL_PATH,        /* "path": no WebSocket endpoint on the request path (HTTP 404) */
    RT_REFUSAL_SUBPROTOCOL, /* "subprotocol": no WAMP subprotocol the listener speaks (HTTP 400) */
    /* "tls": the TLS handshake failed on a TLS listener (WebSocket or RawSocket): not TLS at all
     * (plain HTTP, a RawSocket handshake, garbage), or no protocol version or cipher in common.
     * The connection is dropped without an answer. A client that closes before it sent
     * anything is not counted. */
    RT_REFUSAL_TLS,
    RT_REFUSAL_COUNT
} rt_refusal;

/* Slots of the per-type message counters: one per WAMP type code 0..YIELD (70). */
#define RT_STATS_TYPE_SLOTS (WAMP_MSG_YIELD + 1)

/* Counters, for logs, the management API and the metrics (rt_metrics.h). */
typedef struct rt_router_stats {
    uint64_t sessions_opened;
    uint64_t sessions_closed;
    uint64_t messages_rx;
    uint64_t messages_tx;
    uint64_t bytes_rx;
    uint64_t bytes_tx;
    uint64_t protocol_violations;
    uint64_t slow_consumer_disconnects;
    uint64_t limit_refusals; /* HELLO, CALL, SUBSCRIBE, REGISTER refused by a wampscope.limits */
    /* EVENTs dropped from full outgoing queues (limits.slow_consumer "drop_oldest_events") */
    uint64_t events_dropped;
    /* Outgoing messages larger than the receiver's limit (transport max_message_size, or the
     * length a RawSocket client announced): not sent (an EVENT), or replaced (RESULT -> ERROR,
     * WELCOME -> ABORT) */
    uint64_t messages_too_big;
    /* Connections refused by a listener's options.max_connections (counted by the adapters
     * through rt_router_refused_connection()) */
    uint64_t connection_refusals;
    /* Incoming messages over the transport's max_message_size (connection closed: WebSocket
     * 1009, RawSocket without a word), counted by the adapters (rt_router_incoming_too_big()) */
    uint64_t incoming_too_big;
    /* Connections closed for not sending HELLO (or a killed session's GOODBYE reply) within
     * limits.hello_timeout */
    uint64_t hello_timeouts;
    /* Queued messages never written: discarded when a slow consumer is disconnected, or left
     * in the queue when the connection went (limits.close_timeout, peer gone) */
    uint64_t messages_undelivered;
    /* Retained events not kept (limits.max_retained_topics / max_retained_bytes) */
    uint64_t events_not_retained;
    /* YIELDs and ERRORs answering no pending call (canceled, timed out, its caller gone),
     * dropped */
    uint64_t answers_dropped;
    /* Handshakes refused by a transport adapter, per rt_refusal (rt_router_refused_handshake()) */
    uint64_t handshakes_refused[RT_REFUSAL_COUNT];
    /* Messages received (counted after decoding; slot 0: undecodable) and queued to be sent,
     * by serializer and WAMP type code (rt_wirelog.h). */
    uint64_t messages_rx_by_type[WAMP_SER_COUNT][RT_STATS_TYPE_SLOTS];
    uint64_t messages_tx_by_type[WAMP_SER_COUNT][RT_STATS_TYPE_SLOTS];
    /* HTTP answers of web transports' services by status class: [0] 1xx ... [4] 5xx
     * (rt_router_http_response()) */
    uint64_t http_responses[5];
} rt_router_stats;

const rt_router_stats *rt_router_stats_get(const rt_router *rt);

/* A transport adapter refused a connection on listener because of a limit (why: e.g. "its
 * maximum of 2 connections (options.max_connections)"; peer "ip:port" or "" if unknown):
 * counted in stats.connection_refusals and logged at info, rate-limited (RT_LOG_LIMITED: one
 * line, then a summary with the count every 10 s while it goes on), so a connection flood
 * cannot flood the log.
 * why NULL: counted only (the adapter logged it; a RawSocket client's announced length under
 * limits.rawsocket_min_length). While a trace runs, also a connection record (event "refused",
 * reason "limit", detail why) as rt_router_refused_handshake() makes. */
void rt_router_refused_connection(rt_router *rt, const char *listener_id, const char *peer,
                                  const char *why);
/* "request", "path", "subprotocol", "tls" (the names in stats, logs and connection records); "?"
 * for anything else. Static string. */
const char *rt_refusal_name(rt_refusal reason);

/* A transport adapter refused a handshake (it answered the client itself, or for "tls" dropped
 * the connection): counted in
 * stats.handshakes_refused[reason]; logged at info with the reason, listener, peer ("ip:port",
 * NULL or "" if unknown) and detail (one line, NULL = none), rate-limited (RT_LOG_LIMITED: the
 * first lines, then a summary with the count every 10 s while a flood goes on); and, while a trace
 * runs, recorded as a connection record (event "refused") in the traces that keep everything, such
 * as the flight recorder (rt_trace_connection()). Peer-supplied text in detail must be printable
 * ASCII. */
void rt_router_refused_handshake(rt_router *rt, rt_refusal reason, const char *listener_id,
                                 const char *peer, const char *detail);
/* A web transport answered an HTTP request with status (100..599; others are not counted):
 * counted in stats.http_responses by class. */
void rt_router_http_response(rt_router *rt, unsigned status);
/* A transport adapter received a message over its max_message_size (it logs and closes the
 * connection itself): counted in stats.incoming_too_big. */
void rt_router_incoming_too_big(rt_router *rt);

/* What the router holds right now (for the management API's get_worker "stats", and to check
 * that state returns to its baseline after hostile or heavy traffic). */
typedef struct rt_router_gauges {
    size_t sessions;        /* attached connections, joined or not */
    size_t queued_messages; /* in every session's outgoing queue */
    size_t queued_bytes;
    size_t subscriptions; /* over all realms */
    size_t registrations; /* over all realms, router-local procedures included */
    size_t pending_calls;
    size_t retained_events;
} rt_router_gauges;

void rt_router_gauges_get(const rt_router *rt, rt_router_gauges *out);

/* An rt_log_session_fn (rt_log.h) with the router as ctx: the realm (joined, or asked for in
 * HELLO) and peer address of a live session, for JSON log lines. Implemented in rt_wirelog.c. */
struct rt_log_session_info;
bool rt_router_log_session_info(void *rt, uint64_t session_id, struct rt_log_session_info *out);

#endif /* RT_ROUTER_H */
