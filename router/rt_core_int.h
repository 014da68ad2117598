/* rt_core_int.h: PRIVATE to the router core library (rt_router*.c, rt_session*.c, rt_broker*.c,
 * rt_dealer*.c, rt_realm.c, rt_meta.c, rt_trace*.c, rt_metrics.c, rt_wirelog). The router and
 * session structs are shared by these tightly coupled modules so that the per-message path reads
 * fields instead of calling accessors; nothing outside router/rt_*.c (adapters, tracing, mgmt,
 * tests) may include this header. */
#ifndef RT_CORE_INT_H
#define RT_CORE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_auth.h"
#include "rt_hmap.h"
#include "rt_list.h"
#include "rt_observer.h"
#include "rt_outq.h"
#include "rt_router.h"
#include "rt_session.h"
#include "rt_trace.h"
#include "trace_hub.h"
#include "trace_wire.h"
#include "wamp_id.h"

/* Bytes of routing facts the router gathers before it appends them to the wire capture. */
#define RT_WIRE_FACTS 2048

struct rt_router {
    const rt_config *cfg;
    rt_clock_fn clock;
    void *clock_ctx;
    rt_realm **realms; /* owned, cfg->n_realms entries */
    size_t n_realms;
    /* Borrowed, NULL without wampscope.cluster (rt_router_set_cluster()). */
    const struct rt_cluster *cluster;
    /* Borrowed: calls and registrations across the cluster (rt_dealer_remote.h), or NULL. */
    struct rt_dealer_cluster *dcl;
    /* Borrowed, NULL without wampscope.cluster (rt_router_set_cluster_broker()). */
    const struct rt_cluster_broker *cluster_broker;
    rt_hmap sessions_by_id; /* rt_session.by_id */
    rt_list sessions;       /* every live session (rt_session.in_router) */
    rt_list greeting;       /* sessions waiting for HELLO, oldest first (rt_session.in_wait) */
    rt_list auth_failed;    /* sessions whose authentication failed, waiting for their ABORT
                             * (auth_failure_delay), oldest first (rt_session.in_wait) */
    size_t n_sessions;
    wamp_idgen ids;
    trace_hub *hub;      /* owned; trace_hub_is_active() is the one branch on the hot path */
    trace_wire *wire;    /* owned: the wire capture (wampscope.tracing.wire_capture), or NULL */
    uint64_t wire_conns; /* connection ids given to the wire capture's streams */
    /* The flight recorder read from the wire capture (rt_flight.h): its reader of the capture
     * (owned), NULL when it is not fed from it. */
    struct rt_wire_follow *flight_follow;
    /* Routing facts noted since the capture's last append (rt_trace_wire.c): appended, as one
     * fact, before the next chunk or when full. */
    unsigned char wire_facts[RT_WIRE_FACTS];
    size_t n_wire_facts;
    rt_cur_action cur;        /* the action being handled (rt_trace.h) */
    rt_trace_pending pend;    /* its PUBLISH's record, while that waits (rt_trace.h) */
    rt_realm_config mgmt_cfg; /* the management realm's synthesized configuration */
    bool shutting_down;
    uint64_t shutdown_deadline_us;
    rt_router_stats stats;
    trace_uuid_gen uuids;   /* correlation ids */
    int64_t wall_offset_ns; /* wall clock minus the router's monotonic clock, refreshed per tick */
    rt_trace_clock tclock;  /* the clock of trace records (rt_trace.h) */
    rt_trace_routing routing; /* tracing's questions to the broker and dealer (rt_trace.h) */
    const trace_hub_events *trace_events; /* the management API's live-feed callbacks */
    void *trace_events_ctx;
    /* Router-wide observers (rt_observer.h): the end of an action's reply, for the work an
     * observer deferred to it (the meta API's events). */
    rt_observers observers;
};

struct rt_session {
    rt_router *rt;
    const rt_transport_ops *ops;
    void *tp;
    wamp_ser ser;
    rt_session_state state;
    uint64_t id;
    rt_realm *realm; /* borrowed; NULL until joined */
    char *authid;    /* owned */
    char *authrole;  /* owned */
    rt_peer peer;
    const char *anonymous_role;     /* from the listener config; NULL = anonymous refused */
    const rt_auth_config *auth_cfg; /* the listener's credentials (borrowed); NULL = none */
    rt_auth_pending *auth;          /* owned: the handshake in progress (CHALLENGED, AUTH_FAILED) */
    rt_auth_denial *denial;         /* owned: the ABORT to send when abort_at_us comes */
    uint64_t abort_at_us;
    rt_outq outq;
    uint64_t hello_deadline_us;
    trace_peer *tpeer;   /* owned; made on the first traced message after the join */
    trace_str *tr_uri;   /* owned: the URI of the last action of it a trace kept (rt_trace.c) */
    bool hello_corr_set; /* the session-opening exchange's correlation (HELLO ... WELCOME) */
    uint8_t hello_corr[TRACE_UUID_LEN];
    uint8_t tr_realm; /* rt_trace_realm: its standing with the fast trace (rt_trace.c) */
    /* Its connection in the wire capture (rt_trace_wire.h), borrowed from the transport adapter
     * while the session lives; NULL: not captured. */
    struct rt_wire_conn *wire;
    rt_hnode by_id;       /* in rt_router.sessions_by_id */
    rt_list in_router;    /* in rt_router.sessions */
    rt_list in_wait;      /* in rt_router.greeting until WELCOME, then in auth_failed if it fails */
    rt_list in_realm;     /* in the realm's member list */
    rt_list subs;         /* broker membership records of this session */
    rt_list regs;         /* dealer registrations of this session */
    rt_list calls_made;   /* pending calls this session made (caller side) */
    rt_list calls_served; /* pending invocations this session serves (callee side) */
    size_t n_subs;        /* entries of subs (limits.max_subscriptions) */
    size_t n_regs;        /* entries of regs (limits.max_registrations) */
    size_t n_calls_made;  /* entries of calls_made, and calls waiting on other nodes
                           * (limits.max_pending_calls) */
    /* HELLO roles.callee.features.call_canceling: the dealer may send it INTERRUPT. */
    bool callee_call_canceling;
    /* HELLO roles.<role>.features.payload_passthru_mode, per role (payload passthru mode). */
    bool ppt_caller, ppt_callee, ppt_publisher, ppt_subscriber;
    /* How it joined (meta API session details). */
    rt_auth_method authmethod;
    /* session_leave() is in progress: meta events skip this session. */
    bool leaving;
    /* limits.slow_consumer "drop_oldest_events": EVENTs dropped from this session's queue, how
     * many of them the log has reported, and when it may report again (rate limit). */
    uint64_t events_dropped;
    uint64_t events_dropped_logged;
    uint64_t drop_log_at_us;
};

/* What a request refused by one of wampscope.limits gets (ERROR / ABORT reason): the router's
 * own URI, since the WAMP spec predefines none for it. */
#define RT_ERROR_LIMIT_REACHED "wampscope.error.limit_reached"

/* A refused request: counted in the stats, logged at info, answered with ERROR. */
wamp_err rt_session_refuse_limit(rt_session *s, wamp_msg_type req_type, uint64_t request,
                                 const char *limit, size_t value);

/* Role of anonymous loopback sessions on the management realm (protected mode). */
#define RT_MGMT_ROLE "admin"

/* The outgoing path (rt_session.c) as the state machine (rt_session_fsm.c) uses it. */
/* Encodes e for s's serializer unless done already (logged and traced on failure). */
wamp_err rt_session_encode_for(rt_session *s, rt_encoded *e);
/* e, encoded for s, is longer than s can receive (its transport's max_message_size, or the
 * length a RawSocket client announced). */
bool rt_session_exceeds_peer_limit(const rt_session *s, const rt_encoded *e);
/* Logs the EVENTs dropped for s since the last line (closing: the session's last line). */
void rt_session_log_drops(rt_session *s, bool closing);
/* The queued messages of s from index first on (0 or 1) will never be written: counted, and
 * recorded as dropped "session_closed" while a trace runs. */
void rt_session_note_undelivered(rt_session *s, size_t first);
/* Sends ABORT(reason, {message}) (message NULL: no details), completing the current action. */
void rt_session_send_abort(rt_session *s, const char *reason, const char *message);

/* rt_router_tick(): the auth_failure_delay of s is over: send its ABORT and close. */
void rt_session_on_auth_delay_over(rt_session *s);

/* wamp.session.kill*: sends GOODBYE(reason, {message}) to the joined session s, takes it out of
 * its realm at once (meta events with the current action's correlation) and waits in the
 * CLOSING state for the peer's GOODBYE, closing the connection then or after
 * limits.hello_timeout. No-op unless s is joined. */
void rt_session_kill(rt_session *s, const char *reason, const char *message);

/* Realm membership, maintained by rt_session.c. */
void rt_realm_member_add(rt_realm *r, rt_session *s);
void rt_realm_member_remove(rt_realm *r, rt_session *s);
/* Live members list (for shutdown iteration and meta API). */
rt_list *rt_realm_members(rt_realm *r);

/* The session with this id in any state (rt_router_ctx.c), or NULL. Borrowed. */
rt_session *rt_router_session_by_id(const rt_router *rt, uint64_t id);
/* A session id no session holds: ids are of the global scope, drawn at random. */
uint64_t rt_router_draw_session_id(const rt_router *rt);
/* Gives s, which has left its realm and may join again, a new session id: every session its
 * own (WAMP's session ids are of the global scope, drawn at random). */
void rt_router_session_new_id(rt_session *s);

#endif /* RT_CORE_INT_H */
