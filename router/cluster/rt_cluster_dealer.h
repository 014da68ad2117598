/* rt_cluster_dealer.h: calls that cross nodes. A CALL on node B whose callee is on node A travels
 * as a CALL envelope to A, A's dealer sends the INVOCATION to its callee, and the callee's YIELDs
 * and ERROR travel back to B, which answers its caller. Socket-free: the node's membership
 * (rt_cluster.h) carries the envelopes, and the dealer is reached through an ops table, so the
 * whole protocol is tested with tests/support/fake_cluster.c and a stub dealer.
 *
 * Subjects: every node serves "<name>.node.<id>.rpc"; B publishes a call's CALL and CANCEL to A's
 * subject, A publishes its YIELD and ERROR envelopes to B's. Nothing is broadcast.
 *
 * Envelope (binary, little-endian; one NATS message, at most options.max_message bytes):
 *   u8 version (1), u8 kind (1 CALL, 2 CANCEL, 3 YIELD, 4 ERROR), u8 flags, u8 ser,
 *   u64 xid (the call's id on B), 16 bytes correlation (zeros: untraced), str from (sender's id),
 *   then by kind: CALL: str realm, str procedure, u64 caller, str authid, str authrole, payload;
 *   CANCEL: nothing (the mode is in flags); YIELD: payload; ERROR: str error URI, payload.
 *   str = u16 length + bytes; payload = u32 length + Arguments bytes, u32 length + ArgumentsKw
 *   bytes, both encoded in ser as the sender received them (0 = no payload), so that the
 *   receiving node copies or transcodes them as it does for local messages.
 *   flags: CALL bit 0 receive_progress, bit 1 caller disclosed (authid/authrole empty otherwise);
 *   CANCEL bits 0-1 the mode; YIELD bit 0 progress; CALL, YIELD and ERROR bit 2 payload passthru:
 *   then a str follows the kind's strings (before the payload): a JSON object of the message's
 *   ppt_* options or details (WAMP Advanced Profile "Payload Passthru Mode"), checked on receipt
 *   (wamp_msg_ppt_check(); a bad one makes the envelope malformed). The payload bytes travel
 *   as they are, as for any call.
 *
 * Who answers what:
 *   - B owns a crossing call from rt_cluster_dealer_call() until its last answer: a final YIELD
 *     or ERROR from A, CANCEL skip/killnowait (rt_cluster_dealer_cancel(), the dealer answers the
 *     caller itself), the caller leaving (rt_cluster_dealer_caller_left(): nobody is answered),
 *     or rt_cluster_dealer_tick() finding the call's deadline passed (ERROR wamp.error.timeout),
 *     A gone from the live node list (ERROR wamp.error.canceled, as for a callee that leaves on
 *     one node), the link not up, or A joining again (ERROR wamp.error.network_failure). When
 *     the caller leaves or the deadline passes, A gets CANCEL killnowait (the bus permitting).
 *   - A holds the call from ops.invoke() until the dealer gives its final answer
 *     (rt_cluster_dealer_answer()), a CANCEL skip/killnowait from B, the tick finding B gone
 *     from the live list for options.peer_grace_ms or the link not up, or B joining again:
 *     ops.cancel() then tells the dealer (killnowait: INTERRUPT to a callee that cancels, and
 *     the call forgotten).
 *   A node that joins again (rt_cluster_add_on_node_joined(): its link was down, or it is a new
 *   process in place of a killed one) has forgotten its calls with the others, so both sides end
 *   theirs when its announcement arrives; a process's xids start at random
 *   (options.first_xid), so an answer meant for its predecessor's calls matches none of its own.
 *   When the announcement was lost, B learns of A's join from A's next heartbeat reading: B's
 *   callers waiting on A then get ERROR wamp.error.network_failure, and A gets CANCEL killnowait
 *   for each (a call B sent since A's join is one A may hold); the calls A made on B stay until
 *   their callees answer (some may be of A's new join).
 *   So a call never waits on a node that is gone: B's caller is answered within node_ttl +
 *   heartbeat + one tick of a kill -9 of A, when A's announcement arrives (or, lost, at A's next
 *   heartbeat) if A came back before that, and at once when B's link is down. A lost envelope (the
 *   bus is at-most-once) is not detected: CALL.Options.timeout bounds such a call.
 *
 * Bounds: at most options.max_calls_out crossing calls waiting on this node and
 * options.max_calls_in served for other nodes (over them a call is refused: WAMP_EAGAIN on B,
 * ERROR wamp.error.unavailable from A); an envelope over max_message is not sent (WAMP_ETOOBIG
 * on B; A answers ERROR wamp.error.payload_size_exceeded instead of a too big answer); every
 * refusal, malformed envelope and answer nobody waits for is counted in the stats, and the
 * refusals and malformed envelopes are logged rate-limited (RT_LOG_LIMITED).
 *
 * Ownership: the caller owns the rt_cluster_dealer; the rt_cluster is borrowed and outlives it.
 * Pointers in the structs handed to ops are valid during the callback. Service thread only. */
#ifndef RT_CLUSTER_DEALER_H
#define RT_CLUSTER_DEALER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_cluster.h"
#include "wamp_err.h"
#include "wamp_msg.h"
#include "wamp_types.h"

typedef struct rt_cluster_dealer rt_cluster_dealer;

/* Bytes of a correlation id (tracing's TRACE_UUID_LEN). */
#define RT_CRPC_CORR_LEN 16

/* CANCEL.Options.mode. */
typedef enum rt_crpc_mode {
    RT_CRPC_SKIP = 0,
    RT_CRPC_KILL,
    RT_CRPC_KILLNOWAIT
} rt_crpc_mode;

/* Arguments and ArgumentsKw, encoded in ser (borrowed slices; ser 0 and empty slices: none). */
typedef struct rt_crpc_payload {
    wamp_ser ser;
    wamp_slice args, kwargs;
} rt_crpc_payload;

/* A call as it crosses to the callee's node. */
typedef struct rt_crpc_call {
    const char *realm;
    const char *procedure; /* the URI the caller called */
    uint64_t caller;       /* the caller's session id (unique cluster-wide) */
    bool disclose;         /* the callee learns caller, authid and authrole */
    const char *authid;    /* the caller's; sent only when disclose */
    const char *authrole;
    bool receive_progress;
    const uint8_t *corr; /* RT_CRPC_CORR_LEN bytes: the action's correlation; NULL: untraced */
    const json_t *ppt;   /* payload passthru: an object whose ppt_* keys travel; NULL: none */
    rt_crpc_payload payload;
} rt_crpc_call;

/* One answer of the callee: a result (error NULL; progress: more follow) or an error. */
typedef struct rt_crpc_answer {
    const char *error; /* error URI, or NULL for a result */
    bool progress;
    const json_t *ppt; /* payload passthru: an object whose ppt_* keys travel; NULL: none */
    rt_crpc_payload payload;
} rt_crpc_answer;

/* Whom an answer on B goes to. */
typedef struct rt_crpc_caller {
    const char *realm;
    uint64_t session;      /* the caller's session id */
    uint64_t request;      /* its CALL.Request */
    const uint8_t *corr;   /* as given to rt_cluster_dealer_call(), NULL if none */
    const char *node;      /* the callee's node */
    const char *procedure; /* the CALL's procedure when corr is set (else NULL; NULL too when
                            * out of memory) */
} rt_crpc_caller;

/* What the module asks the dealer (upward calls through function pointers). */
typedef struct rt_cluster_dealer_ops {
    /* A: the node `from` calls. Make the INVOCATION to a local callee of call->procedure in
     * call->realm and return NULL with *invocation set (the id the dealer answers with through
     * rt_cluster_dealer_answer()), or return the error URI B's caller gets (static), e.g.
     * wamp.error.no_such_procedure, or wamp.error.feature_not_supported for a call->ppt call
     * whose callee did not announce payload passthru mode; nothing is then pending. */
    const char *(*invoke)(void *ctx, const char *from, const rt_crpc_call *call,
                          uint64_t *invocation);
    /* A: the call `invocation` of realm is canceled (by B's caller, or B is gone: killnowait).
     * skip: forget it; kill: INTERRUPT, the callee's answer still goes to B; killnowait:
     * INTERRUPT and forget it. The dealer may answer from inside (rt_cluster_dealer_answer()). */
    void (*cancel)(void *ctx, const char *realm, uint64_t invocation, rt_crpc_mode mode);
    /* B: an answer for a caller (RESULT or ERROR; a progressive result keeps the call open). */
    void (*answer)(void *ctx, const rt_crpc_caller *to, const rt_crpc_answer *a);
} rt_cluster_dealer_ops;

typedef struct rt_cluster_dealer_options {
    size_t max_message;     /* bytes of one envelope */
    size_t max_calls_out;   /* crossing calls this node's callers wait for */
    size_t max_calls_in;    /* calls this node serves for other nodes */
    uint32_t peer_grace_ms; /* a caller's node missing this long from the list: its calls end */
    /* The xid of this process's first call, the next ones counting up from it; 0: drawn at
     * random (the router's: an answer meant for a call of the process that held this node id
     * before cannot match one of this process's). Tests fix it. */
    uint64_t first_xid;
} rt_cluster_dealer_options;

typedef struct rt_cluster_dealer_stats {
    uint64_t calls_out, calls_in;     /* crossing calls made, served */
    uint64_t answers_out, answers_in; /* YIELD/ERROR envelopes sent, received */
    uint64_t node_gone;               /* calls ended because the other node left, or joined
                                       * again (it forgot them) */
    uint64_t link_down;               /* calls ended because the link was not up */
    uint64_t timeouts;                /* calls ended by their deadline */
    uint64_t refused;                 /* calls over max_calls_out / max_calls_in */
    uint64_t too_big;                 /* envelopes over max_message, not sent */
    uint64_t malformed;               /* envelopes received that did not decode */
    uint64_t unmatched;               /* answers or cancels for no call held here */
    size_t pending_out, pending_in;   /* now */
} rt_cluster_dealer_stats;

/* New module serving this node's rpc subject on c (after rt_cluster_set_link()). ops is
 * borrowed (static), ctx is handed to it. WAMP_OK and *out; WAMP_ENOMEM, WAMP_EINVAL (options
 * zero), or rt_cluster_serve()'s errors (*out NULL). */
wamp_err rt_cluster_dealer_new(rt_cluster *c, const rt_cluster_dealer_options *o,
                               const rt_cluster_dealer_ops *ops, void *ctx,
                               rt_cluster_dealer **out);
/* Stops serving and forgets every call without answering (teardown). NULL-safe. */
void rt_cluster_dealer_free(rt_cluster_dealer *cd);

/* --- B: the caller's node ----------------------------------------------------------------- */

/* Sends call to node (the callee's node); request is the caller's CALL.Request, deadline_us
 * when the caller gets ERROR wamp.error.timeout (the router's clock; 0: none). WAMP_OK: the answers
 * come through ops.answer. Otherwise nothing is pending and the dealer answers the caller:
 * WAMP_ENOTFOUND node is not in the live list, WAMP_ECLOSED the link is not up, WAMP_EAGAIN
 * max_calls_out reached, WAMP_ETOOBIG the envelope is over max_message, WAMP_ENOMEM. */
wamp_err rt_cluster_dealer_call(rt_cluster_dealer *cd, const char *node, uint64_t request,
                                const rt_crpc_call *call, uint64_t deadline_us);
/* CANCEL of the crossing call (caller, request): false if there is none. skip and killnowait
 * forget it (the dealer answers the caller ERROR wamp.error.canceled itself); kill keeps it
 * until A's answer. The callee's node gets CANCEL with the mode. */
bool rt_cluster_dealer_cancel(rt_cluster_dealer *cd, uint64_t caller, uint64_t request,
                              rt_crpc_mode mode);
/* The caller leaves: its crossing calls are forgotten and their nodes get CANCEL killnowait. */
void rt_cluster_dealer_caller_left(rt_cluster_dealer *cd, uint64_t caller);

/* --- A: the callee's node ----------------------------------------------------------------- */

/* The dealer's answer to the call it made as `invocation` from ops.invoke(): goes to the
 * caller's node; a final answer (not progress) ends the call. Unknown invocations are
 * ignored (false). */
bool rt_cluster_dealer_answer(rt_cluster_dealer *cd, uint64_t invocation, const rt_crpc_answer *a);

/* --- Both ----------------------------------------------------------------------------------- */

/* Deadlines, nodes gone, link down (see above). now_us: the router's clock. Call every tick. */
void rt_cluster_dealer_tick(rt_cluster_dealer *cd, uint64_t now_us);
void rt_cluster_dealer_stats_get(const rt_cluster_dealer *cd, rt_cluster_dealer_stats *out);

#endif /* RT_CLUSTER_DEALER_H */
