/* rt_dealer.h: routed RPC for one realm: exact registrations (one callee each), CALL ->
 * INVOCATION -> YIELD/ERROR -> RESULT/ERROR, and router-local procedures (the seam the
 * management API registers its procedures through).
 * Callee leaving with calls pending: each caller gets ERROR wamp.error.canceled. Caller leaving:
 * its pending calls stay until the callee answers, and the answer is dropped.
 * Ownership: the dealer owns registrations and pending calls. Service thread only. */
#ifndef RT_DEALER_H
#define RT_DEALER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rt_realm.h"
#include "wamp_err.h"
#include "wamp_msg.h"

rt_dealer *rt_dealer_new(rt_realm *realm);
/* Frees local registrations; session registrations and calls must be gone. NULL-safe. */
void rt_dealer_free(rt_dealer *d);

wamp_err rt_dealer_on_register(rt_dealer *d, rt_session *s, const wamp_msg *m);
wamp_err rt_dealer_on_unregister(rt_dealer *d, rt_session *s, const wamp_msg *m);
wamp_err rt_dealer_on_call(rt_dealer *d, rt_session *s, const wamp_msg *m);
/* The callee's YIELD, or ERROR whose Request.Type is INVOCATION, completes its pending call:
 * the caller gets RESULT or ERROR with the same payload. An answer to an unknown invocation
 * (never made, or not this callee's) and one whose caller has left are dropped. */
wamp_err rt_dealer_on_answer(rt_dealer *d, rt_session *s, const wamp_msg *m);
/* The session leaves: its registrations go, calls it was serving fail with wamp.error.canceled
 * to their callers, and calls it made are orphaned (their results dropped). */
void rt_dealer_on_leave(rt_dealer *d, rt_session *s);

/* --- Router-local procedures ---------------------------------------------------------------- */

/* What a local procedure answers: a result (error_uri NULL) or an error. args/kwargs are owned
 * by the reply (set them to new references); either may stay NULL. */
typedef struct rt_local_reply {
    const char *error_uri; /* static or otherwise outliving the call */
    json_t *args;
    json_t *kwargs;
} rt_local_reply;

/* Runs synchronously inside the CALL. args/kwargs/details are borrowed (never NULL: empty
 * array/object when absent). Returns WAMP_OK with *reply filled; non-OK = internal failure
 * (the caller gets wamp.error.runtime_error-like ERROR "wamp.error.internal"). */
typedef wamp_err (*rt_local_proc_fn)(void *ctx, rt_session *caller, const json_t *args,
                                     const json_t *kwargs, rt_local_reply *reply);

/* Registers uri as a router-local procedure. WAMP_EEXIST if uri is registered; WAMP_ENOMEM. */
wamp_err rt_dealer_register_local(rt_dealer *d, const char *uri, rt_local_proc_fn fn, void *ctx);

/* Tracing helpers: opens the router's current action with the correlation of the call that
 * callee serves as `invocation` (false if none or it was not traced); the procedure of s's
 * registration reg_id (borrowed, NULL if none). */
bool rt_dealer_open_call_action(rt_dealer *d, rt_session *callee, uint64_t invocation);
const char *rt_dealer_procedure_of(rt_session *s, uint64_t reg_id);

size_t rt_dealer_registration_count(const rt_dealer *d);
size_t rt_dealer_pending_count(const rt_dealer *d);

#endif /* RT_DEALER_H */
