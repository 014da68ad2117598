/* rt_dealer_remote.c: see rt_dealer_remote.h. Above the dealer: the cluster modules call in
 * here through their ops, and this file calls the dealers (rt_dealer_int.h) and sessions. */
#include "rt_dealer_remote.h"

#include <stdlib.h>
#include <string.h>

#include "rt_dealer_int.h"
#include "rt_log.h"
#include "rt_observer.h"
#include "rt_session.h"

struct rt_dealer_remote {
    rt_router *rt;
    rt_cluster *c;
    struct rt_dealer_cluster dcl;
    bool stopped;
};

static rt_dealer *dealer_of(rt_dealer_remote *dr, const char *realm)
{
    rt_realm *r = rt_router_find_realm(dr->rt, realm);
    return r ? rt_realm_dealer(r) : NULL;
}

/* A message from another node is handled like one from a session (rt_session_on_message()):
 * its records take a clock reading of their own and leave none behind for the next one. */
static void clock_release(rt_router *rt)
{
    rt_observers_message_edge(&rt->observers, rt);
}

/* Opens the action of correlation corr (NULL: none) and URI uri (borrowed for the message, NULL:
 * none; the records' URI, as on the caller's node), answered by node (NULL: none), while a trace
 * runs; *saved keeps the current one. true when opened (close with action_end()). */
static bool action_begin(rt_router *rt, const uint8_t *corr, const char *uri, const char *node,
                         void **saved)
{
    const rt_observers *obs = &rt->observers;
    if (!corr || !rt_observers_listening(obs)) {
        return false;
    }
    *saved = rt_observers_action_stash(obs, rt);
    (void)rt_observers_action_open_at(obs, rt, corr, uri, node);
    return true;
}

static void action_end(rt_router *rt, bool opened, void *saved)
{
    if (opened) {
        rt_observers_action_restore(&rt->observers, rt, saved);
    }
}

static const char *op_invoke(void *ctx, const char *from, const rt_crpc_call *call,
                             uint64_t *invocation)
{
    rt_dealer_remote *dr = ctx;
    rt_dealer *d = dealer_of(dr, call->realm);
    if (!d) {
        RT_LOG_DEBUG(0, "cluster: call of %s from node %s for unknown realm %s", call->procedure,
                     from, call->realm);
        return WAMP_ERROR_NO_SUCH_PROCEDURE;
    }
    void *saved = NULL;
    clock_release(dr->rt);
    bool opened = action_begin(dr->rt, call->corr, call->procedure, NULL, &saved);
    const char *err = rt_dealer_invoke_remote(d, call, invocation);
    action_end(dr->rt, opened, saved);
    clock_release(dr->rt);
    return err;
}

static void op_cancel(void *ctx, const char *realm, uint64_t invocation, rt_crpc_mode mode)
{
    rt_dealer_remote *dr = ctx;
    rt_dealer *d = dealer_of(dr, realm);
    if (d) {
        clock_release(dr->rt);
        rt_dealer_cancel_remote(d, invocation, mode);
        clock_release(dr->rt);
    }
}

/* The caller session id in realm, joined, or NULL. */
static rt_session *caller_of(rt_dealer_remote *dr, uint64_t id, const char *realm)
{
    rt_session *s = rt_router_session_by_id(dr->rt, id);
    if (!s || s->state != RT_SESSION_JOINED || strcmp(rt_realm_name(s->realm), realm) != 0) {
        return NULL;
    }
    return s;
}

static void op_answer(void *ctx, const rt_crpc_caller *to, const rt_crpc_answer *a)
{
    rt_dealer_remote *dr = ctx;
    rt_router *rt = dr->rt;
    rt_session *s = caller_of(dr, to->session, to->realm);
    if (!s) {
        rt->stats.answers_dropped++; /* the caller left meanwhile */
        return;
    }
    if (!a->progress) {
        s->n_calls_made--; /* counted by rt_dealer_cluster_call() */
    }
    json_t *details = a->progress ? json_pack("{s:b}", "progress", 1) : NULL;
    bool oom = false;
    if (a->ppt) {
        /* Payload passthru mode: the answer's ppt_* keys, as for a local callee. */
        details = details ? details : json_object();
        oom = !details || wamp_msg_ppt_copy(details, a->ppt) != 0;
    }
    json_t *msg = NULL; /* out of memory: not sent (WAMP_ENOMEM) */
    if (oom) {
        json_decref(details);
    } else if (a->error) {
        msg = wamp_msg_new_error(WAMP_MSG_CALL, to->request, details, a->error, NULL, NULL);
    } else {
        msg = wamp_msg_new_result(to->request, details, NULL, NULL);
    }
    rt_payload p = {.ser = a->payload.ser, .args = a->payload.args, .kwargs = a->payload.kwargs};
    void *saved = NULL;
    clock_release(rt);
    bool opened = action_begin(rt, to->corr, to->procedure, to->node, &saved);
    if (!a->progress) {
        rt_observers_action_last(&rt->observers, rt);
    }
    wamp_err err = rt_session_send_payload(s, msg, &p);
    if (err == WAMP_ETOOBIG || err == WAMP_EINVAL) {
        if (a->progress) {
            /* The call ends here for the caller: the callee's node is told. */
            rt_cluster_dealer_cancel(dr->dcl.cd, s->id, to->request, RT_CRPC_KILLNOWAIT);
            s->n_calls_made--;
        }
        (void)rt_session_send_error(s, WAMP_MSG_CALL, to->request, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                    "the answer exceeds the caller's message size limit");
    }
    action_end(rt, opened, saved);
    clock_release(rt);
}

static void on_claimed(void *ctx, const rt_creg_claim *cl)
{
    rt_dealer_remote *dr = ctx;
    rt_dealer *d = dealer_of(dr, cl->realm);
    if (d) {
        rt_dealer_register_commit(d, caller_of(dr, cl->session, cl->realm), cl);
    }
}

static const rt_cluster_dealer_ops dealer_ops = {op_invoke, op_cancel, op_answer};

static uint64_t clock_of(void *ctx)
{
    return rt_router_now_us(ctx);
}

wamp_err rt_dealer_remote_new(rt_router *rt, rt_cluster *c, const rt_dealer_remote_options *o,
                              rt_dealer_remote **out)
{
    *out = NULL;
    if (!o->max_message || !o->max_calls || !o->max_registrations) {
        return WAMP_EINVAL;
    }
    rt_dealer_remote *dr = calloc(1, sizeof(*dr));
    if (!dr) {
        return WAMP_ENOMEM;
    }
    dr->rt = rt;
    dr->c = c;
    rt_cluster_dealer_options co = {.max_message = o->max_message,
                                    .max_calls_out = o->max_calls,
                                    .max_calls_in = o->max_calls,
                                    .peer_grace_ms = o->beat_ms};
    rt_cluster_regs_options ro = {.ops = o->ops,
                                  .link = o->link,
                                  .instance = o->instance,
                                  .beat_ms = o->beat_ms,
                                  .ttl_ms = o->ttl_ms,
                                  .max_message = o->max_message,
                                  .max_entries = o->max_registrations,
                                  .clock = clock_of,
                                  .clock_ctx = rt};
    wamp_err err = rt_cluster_dealer_new(c, &co, &dealer_ops, dr, &dr->dcl.cd);
    if (err == WAMP_OK) {
        err = rt_cluster_regs_new(c, &ro, on_claimed, dr, &dr->dcl.regs);
    }
    if (err != WAMP_OK) {
        rt_cluster_dealer_free(dr->dcl.cd);
        free(dr);
        return err;
    }
    rt->dcl = &dr->dcl;
    *out = dr;
    return WAMP_OK;
}

void rt_dealer_remote_tick(rt_dealer_remote *dr)
{
    if (dr->stopped) {
        return;
    }
    rt_cluster_dealer_tick(dr->dcl.cd, rt_router_now_us(dr->rt));
    rt_cluster_regs_tick(dr->dcl.regs);
}

void rt_dealer_remote_stop(rt_dealer_remote *dr)
{
    if (!dr || dr->stopped) {
        return;
    }
    dr->stopped = true;
    dr->rt->dcl = NULL;
    rt_cluster_regs_stop(dr->dcl.regs);
    rt_cluster_dealer_free(dr->dcl.cd); /* unsubscribes; holds no link callbacks */
    dr->dcl.cd = NULL;
}

void rt_dealer_remote_free(rt_dealer_remote *dr)
{
    if (!dr) {
        return;
    }
    rt_dealer_remote_stop(dr);
    rt_cluster_regs_free(dr->dcl.regs);
    free(dr);
}

bool rt_dealer_remote_stats(const rt_router *rt, rt_cluster_dealer_stats *out)
{
    if (!rt->dcl || !rt->dcl->cd) {
        return false;
    }
    rt_cluster_dealer_stats_get(rt->dcl->cd, out);
    return true;
}
