/* rt_dealer.h: routed RPC for one realm (WAMP Basic + Advanced Profile dealer):
 * - registrations by exact URI or pattern (REGISTER.Options.match "prefix" / "wildcard"); a CALL
 *   goes to the exact registration, else the longest prefix, else the most specific wildcard
 *   (spec "Pattern-based Registrations"); INVOCATION.Details.procedure names the called URI
 *   for a pattern registration;
 * - shared registrations (REGISTER.Options.invoke single / roundrobin / random / first / last):
 *   callees registering the same (uri, match) with the same policy share one registration id;
 * - CALL -> INVOCATION -> YIELD/ERROR -> RESULT/ERROR, with progressive results
 *   (CALL.Options.receive_progress, YIELD.Options.progress), caller disclosure (disclose_me or
 *   the role permission's disclose.caller), call timeouts (CALL.Options.timeout, enforced by
 *   the router: ERROR wamp.error.timeout, INTERRUPT to a callee announcing call_canceling) and
 *   CANCEL (skip / kill / killnowait; see rt_dealer_on_cancel);
 * - router-local procedures (the seam the management API registers its procedures through).
 * Callee leaving with calls pending: each caller gets ERROR wamp.error.canceled. Caller leaving:
 * its pending calls stay until the callee answers, and the answer is dropped (a callee that
 * announced call_canceling gets INTERRUPT killnowait).
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
#include "wamp_uri.h"

typedef struct rt_action_mark rt_action_mark; /* rt_observer.h */

rt_dealer *rt_dealer_new(rt_realm *realm);
/* Frees local registrations; session registrations and calls must be gone. NULL-safe. */
void rt_dealer_free(rt_dealer *d);

wamp_err rt_dealer_on_register(rt_dealer *d, rt_session *s, const wamp_msg *m);
wamp_err rt_dealer_on_unregister(rt_dealer *d, rt_session *s, const wamp_msg *m);
wamp_err rt_dealer_on_call(rt_dealer *d, rt_session *s, const wamp_msg *m);
/* The callee's YIELD, or ERROR whose Request.Type is INVOCATION, answers its pending call: the
 * caller gets RESULT or ERROR with the same payload. A progressive YIELD (Options.progress) is
 * forwarded as RESULT with Details.progress only if the caller asked for progress, and leaves
 * the call open. An answer to an unknown invocation (never made, or not this callee's) and one
 * whose caller has left or canceled (skip / killnowait) or timed out are dropped. */
wamp_err rt_dealer_on_answer(rt_dealer *d, rt_session *s, const wamp_msg *m);
/* CANCEL from the caller (spec "Call Canceling"). Options.mode: "skip" = ERROR
 * wamp.error.canceled to the caller now, nothing to the callee; "kill" = INTERRUPT to the
 * callee, and the callee's answer (ERROR or RESULT) goes to the caller; "killnowait" (also the
 * default when mode is absent, as Crossbar does) = INTERRUPT and ERROR now. A callee that did
 * not announce callee.features.call_canceling is never interrupted: every mode acts as skip.
 * CANCEL of a call that is not pending (finished, or already canceled) is ignored; an invalid
 * mode is a protocol violation. */
wamp_err rt_dealer_on_cancel(rt_dealer *d, rt_session *s, const wamp_msg *m);
/* The session leaves: its registrations go, calls it was serving fail with wamp.error.canceled
 * to their callers, and calls it made are canceled as CANCEL killnowait does (INTERRUPT to a
 * callee with call_canceling) and freed; their late answers are dropped and counted in
 * stats.answers_dropped. */
void rt_dealer_on_leave(rt_dealer *d, rt_session *s);
/* Call timeouts: calls whose deadline (CALL.Options.timeout) is at or before now_us end with
 * ERROR wamp.error.timeout to the caller and INTERRUPT (killnowait) to a callee announcing
 * call_canceling. One list check when no call has a timeout. */
void rt_dealer_tick(rt_dealer *d, uint64_t now_us);

/* --- Router-local procedures ---------------------------------------------------------------- */

/* What a local procedure answers: a result (error_uri NULL) or an error. args/kwargs are owned
 * by the reply (set them to new references); either may stay NULL. */
typedef struct rt_local_reply {
    const char *error_uri; /* static or otherwise outliving the call */
    json_t *args;
    json_t *kwargs;
    /* Instead of args, for a result: the Arguments list already encoded in the caller's
     * serializer (rt_session_ser(caller)); one reference, owned by the reply. Large replies
     * rendered straight to the wire (get_trace_data pages) go out this way. */
    wamp_buf *args_encoded;
    /* In: the CALL's Request id. Out: true when the procedure took the call over with
     * rt_dealer_defer() (rt_local.h) and answers it later; the other fields are then ignored. */
    uint64_t request;
    bool deferred;
} rt_local_reply;

/* Runs synchronously inside the CALL. args/kwargs/details are borrowed (never NULL: empty
 * array/object when absent). Returns WAMP_OK with *reply filled, or with the call deferred
 * (rt_dealer_defer(): answered later, the loop not blocked); non-OK = internal failure
 * (the caller gets wamp.error.runtime_error-like ERROR "wamp.error.internal"). */
typedef wamp_err (*rt_local_proc_fn)(void *ctx, rt_session *caller, const json_t *args,
                                     const json_t *kwargs, rt_local_reply *reply);

/* Sends the answer in *reply to CALL request of s (RESULT, or ERROR with reply->error_uri) as the
 * current action's last message, and empties *reply (its values consumed, success or not). A
 * result over the caller's size limit becomes ERROR wamp.error.payload_size_exceeded. Returns
 * rt_session_send()'s status. */
wamp_err rt_dealer_send_local_reply(rt_session *s, uint64_t request, rt_local_reply *reply);

/* Registers uri as a router-local procedure (exact, single). WAMP_EEXIST if an exact
 * registration of uri exists; WAMP_ENOMEM. */
wamp_err rt_dealer_register_local(rt_dealer *d, const char *uri, rt_local_proc_fn fn, void *ctx);
/* Removes the router-local procedure uri (no-op if uri is not one), e.g. to undo a partial set of
 * registrations whose ctx is about to be freed. */
void rt_dealer_unregister_local(rt_dealer *d, const char *uri);

/* Tracing's questions: the action kept (rt_observer.h) by the call that callee serves as
 * `invocation`, or served until it was abandoned (canceled, timed out, its caller gone; the last
 * 256 traced ones a realm) so that its late answer is traced with it (NULL if none; borrowed,
 * valid until the dealer changes); same for the call the caller made as CALL.Request `request`
 * (for its CANCEL); the procedure of s's registration reg_id (borrowed, NULL if none). */
const rt_action_mark *rt_dealer_call_action(rt_dealer *d, rt_session *callee, uint64_t invocation);
const rt_action_mark *rt_dealer_caller_action(rt_dealer *d, rt_session *caller, uint64_t request);
const char *rt_dealer_procedure_of(rt_session *s, uint64_t reg_id);

size_t rt_dealer_registration_count(const rt_dealer *d);
size_t rt_dealer_pending_count(const rt_dealer *d);

/* --- Enumeration (for the registration meta API) -------------------------------------------- */

/* A registration as the meta API describes it (wamp.registration.get). Borrowed strings, valid
 * until the registration changes. */
typedef struct rt_reg_info {
    uint64_t id;
    const char *uri;
    wamp_match match;
    const char *invoke; /* "single", "roundrobin", "random", "first", "last" */
    size_t n_callees;   /* 0 for a router-local procedure */
    uint64_t created_us;
} rt_reg_info;

/* Visits every registration (local ones included); stops early when fn returns false. */
void rt_dealer_foreach(const rt_dealer *d, bool (*fn)(void *ctx, const rt_reg_info *r), void *ctx);
/* The registration with this id (*out filled), or false. */
bool rt_dealer_get(const rt_dealer *d, uint64_t reg_id, rt_reg_info *out);
/* wamp.registration.lookup: the registration of exactly (uri, match), 0 if none. */
uint64_t rt_dealer_lookup(const rt_dealer *d, const char *uri, wamp_match match);
/* wamp.registration.match: the registration a CALL of uri would reach, 0 if none. */
uint64_t rt_dealer_match(const rt_dealer *d, const char *uri);
/* wamp.registration.list_callees: writes up to max session ids of the registration's callees
 * (registration order) to ids; returns how many it has in all (0 if none or no such id). */
size_t rt_dealer_callees(const rt_dealer *d, uint64_t reg_id, uint64_t *ids, size_t max);

/* --- Deferred answers ------------------------------------------------------------------------ */

/* A CALL of a local procedure that is answered later (say once another node replied). Plain
 * data, keyed by the caller's session id: it survives the caller leaving (the late answer is then
 * dropped) and never points at the session. Owned by whoever holds it until
 * rt_dealer_answer_deferred() or rt_dealer_deferred_free(), either before the router is freed. */
typedef struct rt_dealer_deferred rt_dealer_deferred;

/* Takes the call that reply belongs to over (reply->deferred set; nothing is sent now): *out is
 * the handle to answer it with, carrying the current action's correlation so that the answer is
 * traced with the CALL. WAMP_ENOMEM (*out NULL, reply unchanged: answer now). */
wamp_err rt_dealer_defer(rt_session *caller, rt_local_reply *reply, rt_dealer_deferred **out);
/* Answers the deferred call h with *reply (as rt_dealer_send_local_reply(); *reply is emptied
 * whatever happens) and frees h. When the caller has gone (closed, or no longer joined), the
 * answer is dropped: false. true when it was sent. */
bool rt_dealer_answer_deferred(rt_router *rt, rt_dealer_deferred *h, rt_local_reply *reply);
/* Drops h without an answer (the caller never gets one: for teardown). NULL-safe. */
void rt_dealer_deferred_free(rt_dealer_deferred *h);
/* The caller's session id (for logs). */
uint64_t rt_dealer_deferred_session(const rt_dealer_deferred *h);

#endif /* RT_DEALER_H */
