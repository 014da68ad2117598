/* rt_dealer_int.h: PRIVATE to rt_dealer.c and rt_dealer_reg.c: the dealer's structs and the
 * registration table's functions that the call handling (rt_dealer.c) calls. rt_dealer_reg.c
 * calls nothing of rt_dealer.c. */
#ifndef RT_DEALER_INT_H
#define RT_DEALER_INT_H
#include "rt_cluster_dealer.h"
#include "rt_cluster_regs.h"
#include "rt_core_int.h"
#include "rt_dealer.h"

typedef enum rt_invoke {
    RT_INVOKE_SINGLE,
    RT_INVOKE_ROUNDROBIN,
    RT_INVOKE_RANDOM,
    RT_INVOKE_FIRST,
    RT_INVOKE_LAST
} rt_invoke;

typedef struct rt_registration {
    uint64_t id;
    char *uri;
    wamp_match match;
    rt_invoke invoke;
    uint64_t created_us;
    rt_hnode by_uri;     /* in d->exact (exact registrations only) */
    rt_list in_patterns; /* in d->prefix or d->wildcard (pattern registrations only) */
    rt_hnode by_id;
    rt_list callees; /* rt_reg_callee.in_reg, registration order (roundrobin: next first) */
    size_t n_callees;
    rt_local_proc_fn fn; /* router-local procedure (no callees) when set */
    void *fn_ctx;
} rt_registration;

/* One session's membership of a registration (owned by the registration). */
typedef struct rt_reg_callee {
    rt_registration *reg;
    rt_session *session;
    rt_list in_reg;     /* in reg->callees */
    rt_list in_session; /* in session->regs */
    uint64_t at_ms;     /* wall clock when it registered (first/last across a cluster) */
} rt_reg_callee;

/* A traced call freed before its callee answered (rt_dealer.c). */
typedef struct rt_late_call rt_late_call;

struct rt_dealer {
    rt_realm *realm;
    rt_hmap exact; /* exact registrations by URI */
    rt_hmap by_id;
    rt_hmap calls;
    /* The call rt_dealer_call_action() found last, while it is pending: the trace asks for a
     * YIELD's call, then the dealer looks it up again to answer it. */
    struct rt_call *asked;
    rt_hmap requests; /* calls by (caller, CALL.Request) */
    rt_list prefix;   /* prefix registrations */
    rt_list wildcard; /* wildcard registrations */
    /* Calls with a deadline: a binary min-heap by (deadline, invocation), n_timed of cap_timed
     * used. (A sorted list cost each CALL a walk past every later deadline of the realm, which
     * callers could make all of them.) */
    struct rt_call **timed;
    size_t n_timed, cap_timed;

    /* Abandoned traced calls, for their late answers: RT_DEALER_LATE_MAX entries once one was
     * abandoned, NULL before; late_next is the entry the next one replaces. */
    rt_late_call *late;
    size_t late_next;
    /* REGISTERs waiting for their cluster-wide claim, with their actions while a trace runs
     * (rt_dealer_reg.c, rt_claim_mark). */
    rt_list claims;
};

/* Forgets the actions of the REGISTERs still waiting for their claims (the dealer is freed). */
void rt_dealer_claims_free(rt_dealer *d);
/* Frees reg and its callee records (unlinked from their sessions), unlinked from the maps. */
void rt_dealer_registration_free(rt_dealer *d, rt_registration *reg);
/* Removes one callee from its registration (reported to the realm's observers); the
 * registration goes with its last callee. */
void rt_dealer_reg_callee_remove(rt_dealer *d, rt_reg_callee *rc);
/* The registration a CALL of uri reaches: exact, else longest prefix, else most specific
 * wildcard (the earliest registered among equals). NULL if none. */
rt_registration *rt_dealer_match_registration(const rt_dealer *d, const char *uri);

/* "single", "roundrobin", ... */
static inline const char *rt_dealer_invoke_name(rt_invoke inv)
{
    static const char *const names[] = {"single", "roundrobin", "random", "first", "last"};
    return names[inv];
}

/* --- Cluster (rt_dealer_cluster.c below the dealer, rt_dealer_remote.c above it) ------------ */

/* The cluster parts every realm's dealer uses; rt_router.dcl, NULL without a cluster. */
struct rt_dealer_cluster {
    rt_cluster_dealer *cd;
    rt_cluster_regs *regs;
};

/* Where a CALL of uri goes when reg (NULL: none) is this node's best match: NULL here, or the
 * node to send it to. One branch and a count check when no other node registers anything. */
const char *rt_dealer_cluster_route(rt_dealer *d, const rt_registration *reg, const char *uri);
/* Sends s's CALL m to node (timeout_v: its Options.timeout or NULL; ppt: its options hold
 * payload passthru ppt_* keys, which go along); answers s with ERROR when it cannot be sent. */
wamp_err rt_dealer_cluster_call(rt_dealer *d, rt_session *s, const wamp_msg *m, const char *node,
                                const json_t *timeout_v, bool disclose, bool progress, bool ppt);

/* The deadline (rt_router_now_us() clock) of a CALL whose Options.timeout is timeout_v (NULL:
 * none), capped by limits.max_call_timeout; 0 for none. Inline: both the dealer and its cluster
 * side (which calls nothing of the dealer) use it. */
static inline uint64_t rt_dealer_call_deadline_us(const rt_router *rt, const json_t *timeout_v)
{
    json_int_t timeout_ms = timeout_v ? json_integer_value(timeout_v) : 0;
    if (timeout_ms <= 0) {
        return 0;
    }
    uint32_t max_ms = rt->cfg->limits.max_call_timeout_ms;
    if (!max_ms) {
        max_ms = UINT32_MAX; /* keeps the deadline arithmetic in range */
    }
    if (timeout_ms > (json_int_t)max_ms) {
        timeout_ms = (json_int_t)max_ms;
    }
    return rt_router_now_us(rt) + (uint64_t)timeout_ms * 1000u;
}

/* CANCEL of s's crossing call request (false: not one); skip and killnowait answer s. */
bool rt_dealer_cluster_cancel(rt_session *s, uint64_t request, const char *mode, wamp_err *err);
/* s leaves: its crossing calls are canceled toward their callees' nodes. */
void rt_dealer_cluster_caller_left(rt_session *s);
/* The callee's answer m (NULL: the callee left, error set) to the call of another node made as
 * invocation; m's valid payload passthru ppt_* options or details go along. */
void rt_dealer_cluster_answer(rt_router *rt, uint64_t invocation, const wamp_msg *m,
                              const char *error, bool progress);
/* Announces reg's callee count to the other nodes (0: gone). */
void rt_dealer_cluster_sync(rt_dealer *d, const rt_registration *reg, size_t n_callees);
/* Claims a new registration cluster-wide for s's REGISTER request: WAMP_OK, answered later
 * (rt_dealer_register_commit()); WAMP_ECLOSED, register it now; WAMP_ENOMEM. */
wamp_err rt_dealer_cluster_claim(rt_dealer *d, rt_session *s, uint64_t request, const char *uri,
                                 wamp_match match, rt_invoke invoke);
/* Wall clock in milliseconds. */
uint64_t rt_dealer_wall_ms(void);

/* For rt_dealer_remote.c: the INVOCATION of a call from another node (rt_cluster_dealer_ops
 * invoke), its cancel, and a claimed registration's REGISTER completed (s NULL: the session is
 * gone; the claim is released unless a local registration holds it). */
const char *rt_dealer_invoke_remote(rt_dealer *d, const rt_crpc_call *call, uint64_t *invocation);
void rt_dealer_cancel_remote(rt_dealer *d, uint64_t invocation, rt_crpc_mode mode);
void rt_dealer_register_commit(rt_dealer *d, rt_session *s, const rt_creg_claim *cl);

/* For rt_dealer.c (rt_dealer_local.c): CALL m of s to the router's own procedure reg: its
 * arguments decoded (wamp.error.invalid_argument when they cannot be), the procedure run, and
 * its answer sent (or left to rt_dealer_answer_deferred()). WAMP_ENOMEM: s unusable. */
wamp_err rt_dealer_call_local(rt_registration *reg, rt_session *s, const wamp_msg *m);

#endif /* RT_DEALER_INT_H */
