/* rt_options.h: the types of the options a client sends in PUBLISH, SUBSCRIBE, CALL, REGISTER,
 * CANCEL and YIELD (WAMP spec "Name|type"), checked before the broker and dealer read them. An
 * option of the wrong type is refused whether or not the router acts on it (forward_for,
 * transaction_hash, concurrency...), as every invalid option is; options the spec does not name
 * are ignored. Strings are read with their real length: a NUL inside one is refused (a C string
 * would end there: "kill\u0000x" is not "kill"). Stateless; the tables are static. */
#ifndef RT_OPTIONS_H
#define RT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "wamp_types.h"

/* The spec's option tables for a message type that has them (NULL check = none: every option
 * is fine). */
typedef enum rt_opt_type {
    RT_OPT_BOOL,        /* true or false */
    RT_OPT_STRING,      /* a string without NUL bytes */
    RT_OPT_UINT,        /* an integer >= 0 */
    RT_OPT_POS_INT,     /* an integer >= 1 */
    RT_OPT_ID_LIST,     /* a list of integers >= 0 (session ids) */
    RT_OPT_STRING_LIST, /* a list of strings without NUL bytes */
    RT_OPT_FORWARD_FOR  /* a list of dicts (router-to-router links: session, authid, authrole) */
} rt_opt_type;

/* Checks opts (a message's Options dict, borrowed) against the spec's table for type (PUBLISH,
 * SUBSCRIBE, CALL, REGISTER, CANCEL, YIELD; any other type: true). true if every option the
 * table names has its type; false with a one-line reason naming the first that has not in why
 * ("option transaction_hash must be a string"). */
bool rt_options_check(wamp_msg_type type, const json_t *opts, char *why, size_t why_len);

/* v is a string without NUL bytes. */
bool rt_options_is_plain_string(const json_t *v);

#endif /* RT_OPTIONS_H */
