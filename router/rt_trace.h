/* rt_trace.h: PRIVATE to the router core: the glue between sessions, broker, dealer and the
 * tracing hub (tracing/trace_hub.h). Every entry point is called only behind
 * `trace_hub_is_active(rt->hub)`, so with no trace running the cost per message is that one
 * branch, and no correlation UUID is generated.
 *
 * Correlation (../mgmt/README.md "Correlation"): the router keeps one *current action* while it
 * handles a received message. rt_trace_rx() opens it: a fresh UUID for an anchor (HELLO, CALL,
 * PUBLISH, SUBSCRIBE, UNSUBSCRIBE, REGISTER, UNREGISTER), the pending call's UUID for YIELD and
 * ERROR. Every message sent while it is open (INVOCATION, RESULT, EVENTs, PUBLISHED, ERROR, ...)
 * carries it; the code that sends the message completing the action reports it first
 * (rt_observers_action_last(): tracing is the router's action observer, rt_trace_attach()).
 * rt_session_on_message() closes it after dispatch. */
#ifndef RT_TRACE_H
#define RT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_observer.h"
#include "rt_realm.h"
#include "rt_session.h"
#include "trace_hub.h"
#include "wamp_msg.h"

/* rt_session.tr_realm: a joined session's standing with the fast trace (trace_hub_record_fast()),
 * found on its first record after the join. */
typedef enum rt_trace_realm {
    RT_TRACE_REALM_UNKNOWN = 0, /* not found yet (or left its realm) */
    RT_TRACE_REALM_TRACED,      /* its peer is made (tpeer) */
    RT_TRACE_REALM_MGMT,        /* the management realm: the fast trace keeps nothing of it */
} rt_trace_realm;

typedef struct rt_cur_action {
    bool set;                     /* an action is open */
    bool last;                    /* the next message sent completes it */
    uint8_t uuid[TRACE_UUID_LEN]; /* its correlation */
    const char *uri_text;         /* borrowed: the action's URI while it is open, NULL if none */
    size_t uri_len;               /* strlen(uri_text), 0 without one */
    trace_str *uri;               /* owned: uri_text as the hub's shared string, made lazily by
                                   * rt_trace_action_uri() (or by the hub through trace_input.uri_slot) */
    const char *realm;            /* borrowed: HELLO's realm while the session is not joined */
    /* borrowed: the cluster node the answer being sent came from (a cross-node call's RESULT
     * or ERROR on the caller's node) while the action is open, NULL otherwise */
    const char *callee_node;
    /* The clock reading shared by every record of the message being handled (the rx record
     * and what it causes at once), or of the messages of one read from a connection: one clock
     * read per read, not per record. Valid while now_set; rt_session_on_message() clears it
     * before and after each message outside a read, rt_router_read_begin() and _end() around
     * a read, so records made elsewhere (timers, closes) read the clock themselves. */
    bool now_set;
    uint64_t now_ns;
    bool in_read; /* between rt_router_read_begin() and rt_router_read_end() */
    /* Meta events this action caused are queued (rt_meta.c): they complete it, not its reply. */
    bool meta_pending;
} rt_cur_action;

/* The clock of trace records (their pc_ns): the CPU's time-stamp counter scaled to
 * CLOCK_MONOTONIC where the kernel itself keeps time with it (its clocksource is "tsc": the TSC
 * is invariant and the same on every CPU), else the router's clock. Read once per message a trace
 * keeps (two per RPC call); rdtsc took 10 ns on the benchmark VM against 24 for clock_gettime(),
 * and it gives nanoseconds where the router's clock gives microseconds. The scale is measured
 * between two readings of both clocks and re-anchored every tick (rt_trace_sync_clocks()), so
 * the counter is only ever extrapolated over about 100 ms; readings never go back. Off with an
 * injected router clock (tests), whose time the records must keep. */
typedef struct rt_trace_clock {
    bool usable; /* the counter may be used (x86, kernel clocksource "tsc", router's own clock) */
    bool on;     /* scaled: mult is known */
    uint64_t tsc0, ns0; /* the anchor: a counter reading and CLOCK_MONOTONIC's ns at it */
    uint64_t mult;      /* ns per count, 32.32 fixed point */
    uint64_t last;      /* the last reading given */
} rt_trace_clock;

/* Sets c up for a router whose clock is the default (own_clock) or injected. */
void rt_trace_clock_init(rt_trace_clock *c, bool own_clock);

/* A received PUBLISH that some trace keeps waits here for its record's "last" flag: whether
 * anything follows it (an EVENT, PUBLISHED or ERROR). The next message traced says yes, the end
 * of its handling says no. Asking the broker up front meant a second URI check and subscription
 * lookup per PUBLISH, about 90 ns with ten subscribers. Everything is borrowed from the
 * message being handled; s is NULL when nothing waits. */
typedef struct rt_trace_pending {
    rt_session *s;
    wamp_msg *m;
    const void *data;
    size_t len;
    uint64_t match_gen; /* the hub's match of it (trace_hub_match_gen()) */
} rt_trace_pending;

/* What tracing asks the routing about the message being handled: the URI of an UNSUBSCRIBE's
 * subscription or an UNREGISTER's registration, the action of a pending call that a YIELD, an
 * ERROR or a CANCEL continues, and whether a PUBLISH reaches anyone (rt_broker.h, rt_dealer.h
 * describe each). The broker and dealer sit above tracing (they report through it), so the router
 * hands their answers in when it is made (rt_router_new()); asked only while a trace runs. */
typedef struct rt_trace_routing {
    const char *(*topic_of)(rt_session *s, uint64_t sub_id);
    const char *(*procedure_of)(rt_session *s, uint64_t reg_id);
    const rt_action_mark *(*call_action)(rt_dealer *d, rt_session *callee, uint64_t invocation);
    const rt_action_mark *(*caller_action)(rt_dealer *d, rt_session *caller, uint64_t request);
    bool (*publish_has_receiver)(rt_broker *b, rt_session *s, const wamp_msg *m);
} rt_trace_routing;

/* Registers tracing as the router's action observer (rt_observer.h): the routing code reports
 * what happens to the action being handled (completed by the next message, kept by a pending
 * call, resumed, stashed) and tracing keeps the current action (rt->cur) from it, listening only
 * while a trace runs. Called once by rt_router_new() after the hub is made. WAMP_ENOMEM. */
wamp_err rt_trace_attach(rt_router *rt);
/* Records a received message (m NULL: undecodable) and opens its action. m is parsed into fields
 * (no list: wamp_msg_parse_bytes_fields()); the general capture path makes its list
 * (wamp_msg_make_root()), the fast path needs none. */
void rt_trace_rx(rt_session *s, wamp_msg *m, const void *data, size_t len);
/* Records a message sent to s (wire NULL: dropped before encoding) with drop reason or NULL.
 * When no PUBLISH waits (rt_trace_pending), the caller has tried rt_trace_tx_repeat()
 * (rt_trace_fast.h) first. */
void rt_trace_tx(rt_session *s, const rt_encoded *e, const wamp_buf *wire, const char *drop);
/* Records a message that was queued for s and is now dropped from its queue, reason drop: an
 * EVENT making room (limits.slow_consumer "drop_oldest_events"), or what a closed connection
 * leaves unwritten. The record has the wire bytes, the type, and for an EVENT its topic as the
 * uri, but no correlation: the action that queued it is over, and remembering it per queued
 * message would cost on the hot path while no trace runs. */
void rt_trace_tx_dropped_queued(rt_session *s, const wamp_buf *wire, const char *drop);
/* Opens an action with a known correlation (a pending call's, when its callee leaves). */
void rt_trace_action_open(rt_router *rt, const uint8_t uuid[TRACE_UUID_LEN], trace_str *uri);
/* The current action's URI as the hub's shared string (trace_hub_uri()), made now if needed: by
 * the first record a trace keeps of the action, or for state that outlives the message being
 * handled (a pending call). NULL if none or out of memory. */
trace_str *rt_trace_action_uri(rt_router *rt);
/* Opens an action with a fresh correlation and no URI, anchored on no received message (the
 * leave events of a connection lost without GOODBYE). */
void rt_trace_action_open_new(rt_router *rt);
/* Moves the current action out into *saved (none is open afterwards), and puts it back (closing
 * whatever was opened meanwhile): for work that opens actions of its own in the middle of one. */
void rt_trace_action_stash(rt_router *rt, rt_cur_action *saved);
void rt_trace_action_unstash(rt_router *rt, rt_cur_action *saved);
/* Closes the current action (NULL-safe on no action). */
void rt_trace_action_close(rt_router *rt);
/* Re-reads the offset between wall and monotonic clock: records take one clock reading (the
 * monotonic one) and derive wall time from it. Called at start and every tick. */
void rt_trace_sync_clocks(rt_router *rt);
/* Wall clock, ns since the epoch. */
uint64_t rt_trace_wall_ns(void);
/* The ts (wall-clock ns) a record kept now would get: the trace clock plus its wall offset, so
 * never less than the ts of a record kept before (until the next re-anchoring moves the offset). */
uint64_t rt_trace_ts_now(rt_router *rt);
/* The trace clock's reading now (monotonic, ns), and the wall clock at a reading pc. */
uint64_t rt_trace_pc_now(rt_router *rt);
uint64_t rt_trace_wall_of(const rt_router *rt, uint64_t pc);
/* Records a connection event outside any session (trace_hub_on_connection()): info, a JSON
 * object (borrowed; rt_router.c makes it). Call only while trace_hub_is_active(). */
void rt_trace_connection(rt_router *rt, const json_t *info);

#endif /* RT_TRACE_H */
