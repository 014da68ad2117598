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
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->error_uri = uri;
    r->args = json_pack("[s]", msg);
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

struct rt_local_deferred {
    uint64_t session_id;
    uint64_t request;
    bool traced; /* an action was open: corr (and uri) are its */
    uint8_t corr[TRACE_UUID_LEN];
    trace_str *uri; /* one reference, or NULL */
};

wamp_err rt_local_defer(rt_session *caller, rt_local_reply *reply, rt_local_deferred **out)
{
    rt_local_deferred *h = calloc(1, sizeof(*h));
    *out = h;
    if (!h) {
        return WAMP_ENOMEM;
    }
    rt_router *rt = caller->rt;
    h->session_id = caller->id;
    h->request = reply->request;
    if (rt->cur.set) {
        h->traced = true;
        memcpy(h->corr, rt->cur.uuid, sizeof(h->corr));
        trace_str *uri = rt_trace_action_uri(rt);
        h->uri = uri ? trace_str_ref(uri) : NULL;
    }
    reply->deferred = true;
    return WAMP_OK;
}

void rt_local_deferred_free(rt_local_deferred *h)
{
    if (!h) {
        return;
    }
    trace_str_unref(&h->uri);
    free(h);
}

uint64_t rt_local_deferred_session(const rt_local_deferred *h)
{
    return h->session_id;
}

static void reply_fini(rt_local_reply *reply)
{
    json_decref(reply->args);
    json_decref(reply->kwargs);
    wamp_buf_unref(&reply->args_encoded);
    reply->args = reply->kwargs = NULL;
}

bool rt_local_answer(rt_router *rt, rt_local_deferred *h, rt_local_reply *reply)
{
    rt_session *s = NULL;
    for (rt_hnode *n = rt_hmap_first(&rt->sessions_by_id, rt_hash_u64(h->session_id)); n;
         n = rt_hmap_next(n)) {
        rt_session *c = RT_CONTAINER_OF(n, rt_session, by_id);
        if (c->id == h->session_id) {
            s = c->state == RT_SESSION_JOINED ? c : NULL;
            break;
        }
    }
    if (!s) {
        RT_LOG_DEBUG(h->session_id, "the caller left before its answer (CALL %llu): dropped",
                     (unsigned long long)h->request);
        reply_fini(reply);
        rt_local_deferred_free(h);
        return false;
    }
    /* The answer belongs to the CALL's action, not to whatever is being handled now. */
    rt_cur_action saved;
    rt_trace_action_stash(rt, &saved);
    if (h->traced) {
        rt_trace_action_open(rt, h->corr, h->uri);
    }
    wamp_err err = rt_dealer_send_local_reply(s, h->request, reply);
    rt_trace_action_unstash(rt, &saved);
    if (err != WAMP_OK) {
        RT_LOG_WARN(s->id, "answer to CALL %llu not sent: %s", (unsigned long long)h->request,
                    wamp_strerror(err));
    }
    rt_local_deferred_free(h);
    return true;
}
