/* rt_core_int.h: PRIVATE to the router core library (rt_router.c, rt_session.c, rt_broker.c,
 * rt_dealer.c, rt_realm.c). The router and session structs are shared by these few tightly
 * coupled modules so that the per-message path reads fields instead of calling accessors;
 * nothing outside router/rt_*.c (adapters, tracing, mgmt, tests) may include this header. */
#ifndef RT_CORE_INT_H
#define RT_CORE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_auth.h"
#include "rt_hmap.h"
#include "rt_list.h"
#include "rt_outq.h"
#include "rt_router.h"
#include "rt_session.h"
#include "rt_trace.h"
#include "trace_hub.h"
#include "wamp_id.h"

struct rt_router {
    const rt_config *cfg;
    rt_clock_fn clock;
    void *clock_ctx;
    rt_realm **realms; /* owned, cfg->n_realms entries */
    size_t n_realms;
    /* Borrowed, NULL without wampscope.cluster (rt_router_set_cluster()). */
    const struct rt_cluster *cluster;
    rt_hmap sessions_by_id; /* rt_session.by_id */
    rt_list sessions;       /* every live session (rt_session.in_router) */
    rt_list greeting;       /* sessions waiting for HELLO, oldest first (rt_session.in_wait) */
    rt_list auth_failed;    /* sessions whose authentication failed, waiting for their ABORT
                             * (auth_failure_delay), oldest first (rt_session.in_wait) */
    size_t n_sessions;
    wamp_idgen ids;
    trace_hub *hub;           /* owned; trace_hub_is_active() is the one branch on the hot path */
    rt_cur_action cur;        /* the action being handled (rt_trace.h) */
    rt_trace_pending pend;    /* its PUBLISH's record, while that waits (rt_trace.h) */
    rt_realm_config mgmt_cfg; /* the management realm's synthesized configuration */
    bool shutting_down;
    uint64_t shutdown_deadline_us;
    rt_router_stats stats;
    trace_uuid_gen uuids;   /* correlation ids */
    int64_t wall_offset_ns; /* wall clock minus the router's monotonic clock, refreshed per tick */
    rt_trace_clock tclock;  /* the clock of trace records (rt_trace.h) */
    const trace_hub_events *trace_events; /* the management API's live-feed callbacks */
    void *trace_events_ctx;
    /* Meta events of the action being handled (rt_meta.c), published after its reply. */
    struct rt_meta_event *meta_q; /* owned, meta_n used of meta_cap */
    size_t meta_n, meta_cap;
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
    bool hello_corr_set; /* the session-opening exchange's correlation (HELLO ... WELCOME) */
    uint8_t hello_corr[TRACE_UUID_LEN];
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
    size_t n_calls_made;  /* entries of calls_made (limits.max_pending_calls) */
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

/* The next message sent completes the current action (correlation_is_last). A plain store, so
 * the senders need no tracing branch of their own. */
/* What a request refused by one of wampscope.limits gets (ERROR / ABORT reason): the router's
 * own URI, since the WAMP spec predefines none for it. */
#define RT_ERROR_LIMIT_REACHED "wampscope.error.limit_reached"

/* A refused request: counted in the stats, logged at info, answered with ERROR. */
wamp_err rt_session_refuse_limit(rt_session *s, wamp_msg_type req_type, uint64_t request,
                                 const char *limit, size_t value);

/* Role of anonymous loopback sessions on the management realm (protected mode). */
#define RT_MGMT_ROLE "admin"

#define RT_TRACE_LAST(rt) ((rt)->cur.last = true)

/* The fan-out fast path of tracing a message sent to s, inline in the send path (an EVENT to
 * the next subscriber is most of what a fan-out sends): while a trace runs and no received
 * PUBLISH waits for its record (rt->pend.s), the hub appends the message just recorded again
 * with s's peer when it is certainly that message (trace_hub_repeat()); true then. Otherwise
 * the caller records it with rt_trace_tx(). The same buffer is the same message with the same
 * encodings: only a fan-out sends one rt_encoded to several sessions, and it encodes every
 * serializer it needs before the first send (rt_broker.c, fan_out). */
static inline bool rt_trace_tx_repeat(rt_session *s, const wamp_buf *wire, const char *drop)
{
    rt_router *rt = s->rt;
    if (drop || !rt->cur.now_set ||
        !trace_hub_repeat(rt->hub, wire, s->tpeer, rt->cur.set ? rt->cur.uuid : NULL,
                          rt->cur.now_ns, rt->cur.set && rt->cur.last && !rt->cur.meta_pending)) {
        return false;
    }
    rt->cur.last = false; /* "last" marks one message */
    return true;
}

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

#endif /* RT_CORE_INT_H */
