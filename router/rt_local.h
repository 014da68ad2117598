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

#endif /* RT_LOCAL_H */
