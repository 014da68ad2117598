/* rt_local.c: helpers for router-local procedures. */
#include "rt_local.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_core_int.h"
#include "rt_log.h"
#include "rt_options.h"
#include "rt_trace.h"
#include "wamp_types.h"
#include "wamp_ws.h"

wamp_err rt_local_call_args(const wamp_msg *m, json_t **args, json_t **kwargs, char *why,
                            size_t why_len)
{
    *args = *kwargs = NULL;
    /* Decoded on a view of the slices: m stays as it is (its other consumers see bytes). */
    wamp_msg view = {.args = m->args,
                     .kwargs = m->kwargs,
                     .ser = m->ser,
                     .args_raw = m->args_raw,
                     .kwargs_raw = m->kwargs_raw};
    wamp_err err = wamp_msg_decode_payload(&view, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    /* Parsed from bytes: view owns what it built; from a tree: m's, borrowed. */
    json_t *a = view.payload_owned ? view.args : json_incref(view.args);
    json_t *k = view.payload_owned ? view.kwargs : json_incref(view.kwargs);
    *args = a ? a : json_array();
    *kwargs = k ? k : json_object();
    if (!*args || !*kwargs) {
        json_decref(*args);
        json_decref(*kwargs);
        *args = *kwargs = NULL;
        return WAMP_ENOMEM;
    }
    return WAMP_OK;
}

wamp_err rt_local_reply_error(rt_local_reply *r, const char *uri, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    /* A long name in it is cut at a character's boundary (inside one: not valid UTF-8). */
    (void)wamp_utf8_vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->error_uri = uri;
    r->args = json_pack("[s]", msg);
    if (!r->args) {
        /* Text that is not UTF-8 (a name that never was): the error, without its text. */
        r->args = json_pack("[s]", "(the error's text is not valid UTF-8)");
    }
    return r->args ? WAMP_OK : WAMP_ENOMEM;
}

wamp_err rt_local_reply_value(rt_local_reply *r, json_t *v_take)
{
    if (!v_take) {
        return WAMP_ENOMEM;
    }
    r->args = json_array();
    if (!r->args || json_array_append_new(r->args, v_take) != 0) {
        return WAMP_ENOMEM;
    }
    return WAMP_OK;
}

json_t *rt_local_arg(const json_t *args, const json_t *kwargs, size_t i, const char *name)
{
    json_t *v = json_object_get(kwargs, name);
    return v ? v : json_array_get(args, i);
}

bool rt_local_arg_string(const json_t *args, const json_t *kwargs, size_t i, const char *name,
                         const char **out, rt_local_reply *reply, wamp_err *err)
{
    json_t *v = rt_local_arg(args, kwargs, i, name);
    if (!rt_options_is_plain_string(v)) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "%s: must be a string without NUL bytes", name);
        return false;
    }
    *out = json_string_value(v);
    return true;
}
