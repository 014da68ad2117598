/* rt_dealer_local.c: calls of the router's own procedures (meta API, management API): their
 * arguments decoded, the procedure run, and its answer sent at once or later
 * (rt_dealer_defer()). */
#include <stdlib.h>

#include "rt_core_int.h"
#include "rt_dealer.h"
#include "rt_dealer_int.h"
#include "rt_local.h"
#include "rt_log.h"
#include "rt_session.h"

/* A router procedure that failed (not for want of memory): what its caller gets. */
#define RT_ERROR_RUNTIME "wamp.error.runtime_error"

static void local_reply_fini(rt_local_reply *reply)
{
    json_decref(reply->args);
    json_decref(reply->kwargs);
    wamp_buf_unref(&reply->args_encoded);
    reply->args = reply->kwargs = NULL;
}

wamp_err rt_dealer_send_local_reply(rt_session *s, uint64_t request, rt_local_reply *reply)
{
    wamp_err err;
    rt_observers_action_last(&s->rt->observers, s->rt);
    if (reply->error_uri) {
        wamp_buf_unref(&reply->args_encoded);
        err = rt_session_send(s, wamp_msg_new_error(WAMP_MSG_CALL, request, NULL, reply->error_uri,
                                                    reply->args, reply->kwargs));
        reply->args = reply->kwargs = NULL;
        return err;
    }
    if (reply->args_encoded) {
        err = rt_session_send_with_tail(s, wamp_msg_new_result(request, NULL, NULL, NULL),
                                        reply->args_encoded);
    } else {
        err = rt_session_send(s, wamp_msg_new_result(request, NULL, reply->args, reply->kwargs));
        reply->args = reply->kwargs = NULL;
    }
    local_reply_fini(reply);
    if (err == WAMP_ETOOBIG || err == WAMP_EINVAL) {
        /* As for a callee's answer: the caller learns why instead of waiting forever. */
        return rt_session_send_error(s, WAMP_MSG_CALL, request, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                     "the result exceeds the caller's message size limit");
    }
    return err;
}

wamp_err rt_dealer_call_local(rt_registration *reg, rt_session *s, const wamp_msg *m)
{
    json_t *args, *kwargs;
    char why[WAMP_WHY_LEN];
    rt_local_reply reply = {.request = m->id};
    wamp_err err = rt_local_call_args(m, &args, &kwargs, why, sizeof(why));
    if (err == WAMP_ERANGE || err == WAMP_EPROTO) {
        /* A payload the router cannot look into (say a uint64 above 2^63-1) is the caller's
         * mistake for this procedure, not a protocol violation. */
        RT_LOG_DEBUG(s->id, "CALL %s: %s", reg->uri, why);
        rt_observers_action_last(&s->rt->observers, s->rt);
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_INVALID_ARGUMENT, why);
    }
    if (err == WAMP_OK) {
        err = reg->fn(reg->fn_ctx, s, args, kwargs, &reply);
    }
    json_decref(args);
    json_decref(kwargs);
    if (err == WAMP_ENOMEM) {
        local_reply_fini(&reply);
        return err;
    }
    if (err != WAMP_OK) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(s->rt), "router procedure failed", s->id,
                       "local procedure %s failed: %s", reg->uri, wamp_strerror(err));
        local_reply_fini(&reply);
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, RT_ERROR_RUNTIME,
                                     "internal error in router procedure");
    }
    if (reply.deferred) {
        /* Answered later through rt_dealer_answer_deferred(): nothing goes out now. */
        local_reply_fini(&reply);
        return WAMP_OK;
    }
    return rt_dealer_send_local_reply(s, m->id, &reply);
}

/* --- Deferred answers of local procedures ----------------------------------------------- */

struct rt_dealer_deferred {
    rt_router *rt;
    uint64_t session_id;
    uint64_t request;
    rt_action_mark action; /* the CALL's action, kept while a trace ran */
};

wamp_err rt_dealer_defer(rt_session *caller, rt_local_reply *reply, rt_dealer_deferred **out)
{
    rt_dealer_deferred *h = calloc(1, sizeof(*h));
    *out = h;
    if (!h) {
        return WAMP_ENOMEM;
    }
    rt_router *rt = caller->rt;
    h->rt = rt;
    h->session_id = caller->id;
    h->request = reply->request;
    rt_observers_action_mark(&rt->observers, rt, &h->action);
    reply->deferred = true;
    return WAMP_OK;
}

void rt_dealer_deferred_free(rt_dealer_deferred *h)
{
    if (!h) {
        return;
    }
    rt_observers_action_forget(&h->rt->observers, &h->action);
    free(h);
}

uint64_t rt_dealer_deferred_session(const rt_dealer_deferred *h)
{
    return h->session_id;
}

bool rt_dealer_answer_deferred(rt_router *rt, rt_dealer_deferred *h, rt_local_reply *reply)
{
    rt_session *s = rt_router_session_by_id(rt, h->session_id);
    if (!s || s->state != RT_SESSION_JOINED) {
        RT_LOG_DEBUG(h->session_id, "the caller left before its answer (CALL %llu): dropped",
                     (unsigned long long)h->request);
        local_reply_fini(reply);
        rt_dealer_deferred_free(h);
        return false;
    }
    /* The answer belongs to the CALL's action, not to whatever is being handled now. */
    void *saved = rt_observers_action_stash(&rt->observers, rt);
    (void)rt_observers_action_resume(&rt->observers, rt, &h->action);
    wamp_err err = rt_dealer_send_local_reply(s, h->request, reply);
    rt_observers_action_restore(&rt->observers, rt, saved);
    if (err != WAMP_OK) {
        RT_LOG_WARN(s->id, "answer to CALL %llu not sent: %s", (unsigned long long)h->request,
                    wamp_strerror(err));
    }
    rt_dealer_deferred_free(h);
    return true;
}
