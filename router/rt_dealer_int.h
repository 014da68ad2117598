/* rt_dealer_int.h: PRIVATE to rt_dealer.c and rt_dealer_reg.c: the dealer's structs and the
 * registration table's functions that the call handling (rt_dealer.c) calls. rt_dealer_reg.c
 * calls nothing of rt_dealer.c. */
#ifndef RT_DEALER_INT_H
#define RT_DEALER_INT_H
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
} rt_reg_callee;

/* A traced call freed before its callee answered (rt_dealer.c). */
typedef struct rt_late_call rt_late_call;

struct rt_dealer {
    rt_realm *realm;
    rt_hmap exact; /* exact registrations by URI */
    rt_hmap by_id;
    rt_hmap calls;
    rt_hmap requests; /* calls by (caller, CALL.Request) */
    rt_list prefix;   /* prefix registrations */
    rt_list wildcard; /* wildcard registrations */
    rt_list timeouts; /* calls with a deadline, earliest first */

    /* Abandoned traced calls, for their late answers: RT_DEALER_LATE_MAX entries once one was
     * abandoned, NULL before; late_next is the entry the next one replaces. */
    rt_late_call *late;
    size_t late_next;
};

/* Frees reg and its callee records (unlinked from their sessions), unlinked from the maps. */
void rt_dealer_registration_free(rt_dealer *d, rt_registration *reg);
/* Removes one callee from its registration (reported to the realm's observers); the
 * registration goes with its last callee. */
void rt_dealer_reg_callee_remove(rt_dealer *d, rt_reg_callee *rc);
/* The registration a CALL of uri reaches: exact, else longest prefix, else most specific
 * wildcard (the earliest registered among equals). NULL if none. */
rt_registration *rt_dealer_match_registration(const rt_dealer *d, const char *uri);

#endif /* RT_DEALER_INT_H */
