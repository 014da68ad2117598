/* rt_local.h: argument and reply helpers for router-local procedures (rt_dealer.h
 * rt_local_proc_fn), shared by the meta API (rt_meta.c) and the management API (mgmt/).
 * Arguments are read positionally or by keyword, as WAMP APIs are called both ways. Service
 * thread only. */
#ifndef RT_LOCAL_H
#define RT_LOCAL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "rt_dealer.h"
#include "wamp_err.h"
#include "wamp_msg.h"

/* The Arguments and ArgumentsKw of CALL m as jansson values for a local procedure, the one
 * place where the router looks inside a payload: new references in *args / *kwargs ([] and {}
 * when absent). WAMP_ERANGE when a value has no jansson form (an integer above 2^63-1: why names
 * it), WAMP_EPROTO for a duplicate key (why), both answered by the caller with
 * wamp.error.invalid_argument; WAMP_ENOMEM. Both are NULL after failure. */
wamp_err rt_local_call_args(const wamp_msg *m, json_t **args, json_t **kwargs, char *why,
                            size_t why_len);

/* An error reply: uri (static or outliving the call) with one argument, the formatted message.
 * WAMP_OK, or WAMP_ENOMEM. */
wamp_err rt_local_reply_error(rt_local_reply *r, const char *uri, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* A result of one value (consumed; NULL = out of memory: WAMP_ENOMEM). */
wamp_err rt_local_reply_value(rt_local_reply *r, json_t *v_take);

/* Borrowed argument: kwargs[name] if present, else args[i], else NULL. */
json_t *rt_local_arg(const json_t *args, const json_t *kwargs, size_t i, const char *name);
/* A required string argument without NUL bytes into *out (borrowed from args/kwargs): names,
 * ids and URIs are read as C strings, which would end at the first NUL ("a\u0000b" read as
 * "a"), so such arguments are refused (rt_options_is_plain_string()). false: *reply holds
 * wamp.error.invalid_argument and *err the reply's status. */
bool rt_local_arg_string(const json_t *args, const json_t *kwargs, size_t i, const char *name,
                         const char **out, rt_local_reply *reply, wamp_err *err);

/* --- Deferred answers ------------------------------------------------------------------------ */

/* A CALL of a local procedure that is answered later (say once another node replied). Plain
 * data, keyed by the caller's session id: it survives the caller leaving (the late answer is then
 * dropped) and never points at the session. Owned by whoever holds it until rt_local_answer() or
 * rt_local_deferred_free(). */
typedef struct rt_local_deferred rt_local_deferred;

/* Takes the call that reply belongs to over (reply->deferred set; nothing is sent now): *out is
 * the handle to answer it with, carrying the current action's correlation so that the answer is
 * traced with the CALL. WAMP_ENOMEM (*out NULL, reply unchanged: answer now). */
wamp_err rt_local_defer(rt_session *caller, rt_local_reply *reply, rt_local_deferred **out);
/* Answers the deferred call h with *reply (as rt_dealer_send_local_reply(); *reply is emptied
 * whatever happens) and frees h. When the caller has gone (closed, or no longer joined), the
 * answer is dropped: false. true when it was sent. */
bool rt_local_answer(rt_router *rt, rt_local_deferred *h, rt_local_reply *reply);
/* Drops h without an answer (the caller never gets one: for teardown). NULL-safe. */
void rt_local_deferred_free(rt_local_deferred *h);
/* The caller's session id (for logs). */
uint64_t rt_local_deferred_session(const rt_local_deferred *h);

#endif /* RT_LOCAL_H */
