/* rt_dealer_cluster.c: what the dealer (rt_dealer.c, rt_dealer_reg.c) hands to the cluster:
 * CALLs routed to another node, their CANCELs and callers leaving, the answers of local callees
 * to other nodes' calls, and this node's registrations claimed and announced. Called only when
 * rt_router.dcl is set (a cluster is configured); calls nothing of the dealer itself. What the
 * cluster asks the dealer arrives through rt_dealer_remote.c, above it. */
#include <string.h>
#include <time.h>

#include "rt_dealer_int.h"
#include "rt_observer.h"
#include "rt_session.h"

uint64_t rt_dealer_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* When reg's first and last callee registered. */
static void callee_times(const rt_registration *reg, uint64_t *first, uint64_t *last)
{
    *first = UINT64_MAX;
    *last = 0;
    for (const rt_list *it = reg->callees.next; it != &reg->callees; it = it->next) {
        uint64_t t = RT_CONTAINER_OF(it, rt_reg_callee, in_reg)->at_ms;
        *first = t < *first ? t : *first;
        *last = t > *last ? t : *last;
    }
    if (*first == UINT64_MAX) {
        *first = 0;
    }
}

const char *rt_dealer_cluster_route(rt_dealer *d, const rt_registration *reg, const char *uri)
{
    if (reg && reg->fn) {
        return NULL; /* the router's own procedures (meta API, management) stay local */
    }
    rt_creg_local l = {0};
    if (reg) {
        l.uri = reg->uri;
        l.match = reg->match;
        l.invoke = rt_dealer_invoke_name(reg->invoke);
        l.n_callees = reg->n_callees;
        if (reg->invoke == RT_INVOKE_FIRST || reg->invoke == RT_INVOKE_LAST) {
            callee_times(reg, &l.first_ms, &l.last_ms);
        }
    }
    rt_router *rt = rt_realm_router(d->realm);
    return rt_cluster_regs_route(rt->dcl->regs, rt_realm_name(d->realm), uri, &l);
}

wamp_err rt_dealer_cluster_call(rt_dealer *d, rt_session *s, const wamp_msg *m, const char *node,
                                const json_t *timeout_v, bool disclose, bool progress, bool ppt)
{
    rt_router *rt = s->rt;
    size_t max_calls = rt->cfg->limits.max_pending_calls;
    if (max_calls && s->n_calls_made >= max_calls) {
        return rt_session_refuse_limit(s, WAMP_MSG_CALL, m->id, "max_pending_calls", max_calls);
    }
    uint64_t deadline = rt_dealer_call_deadline_us(rt, timeout_v);
    rt_payload p = rt_payload_of(m);
    rt_action_mark action = {0}; /* the CALL's, while a trace runs: the callee's node uses its id */
    rt_observers_action_mark(&rt->observers, rt, &action);
    /* (or one the wire capture makes for it, so that both nodes name the action alike) */
    uint8_t made[RT_ACTION_ID_LEN];
    const uint8_t *corr = rt_observers_remote_call(
            &rt->observers, s, m->id, rt_action_mark_is_set(&action) ? action.id : NULL, made);
    rt_crpc_call call = {.realm = rt_realm_name(d->realm),
                         .procedure = m->uri,
                         .caller = s->id,
                         .disclose = disclose,
                         .authid = s->authid,
                         .authrole = s->authrole,
                         .receive_progress = progress,
                         .corr = corr,
                         .ppt = ppt ? m->dict : NULL,
                         .payload = {p.ser, p.args, p.kwargs}};
    wamp_err err = rt_cluster_dealer_call(rt->dcl->cd, node, m->id, &call, deadline);
    rt_observers_action_forget(&rt->observers, &action); /* the id was copied */
    switch (err) {
    case WAMP_OK:
        s->n_calls_made++; /* until its final answer, or its cancel (skip, killnowait) */
        return WAMP_OK;
    case WAMP_ENOTFOUND:
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_CANCELED,
                                     "the callee's node left the cluster");
    case WAMP_ENOMEM:
        return err;
    case WAMP_EAGAIN:
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_UNAVAILABLE,
                                     "too many calls to other nodes in flight "
                                     "(wampscope.cluster.max_calls)");
    case WAMP_ETOOBIG:
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                     "the call exceeds the cluster's message size limit");
    default: /* WAMP_ECLOSED, or the link refused it */
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_NETWORK_FAILURE,
                                     "the cluster link is down or refused the call");
    }
}

bool rt_dealer_cluster_cancel(rt_session *s, uint64_t request, const char *mode, wamp_err *err)
{
    rt_crpc_mode m = strcmp(mode, "skip") == 0   ? RT_CRPC_SKIP
                     : strcmp(mode, "kill") == 0 ? RT_CRPC_KILL
                                                 : RT_CRPC_KILLNOWAIT;
    if (!rt_cluster_dealer_cancel(s->rt->dcl->cd, s->id, request, m)) {
        return false;
    }
    if (m == RT_CRPC_KILL) {
        *err = WAMP_OK;
        return true;
    }
    s->n_calls_made--;
    *err = rt_session_send_error(s, WAMP_MSG_CALL, request, WAMP_ERROR_CANCELED,
                                 "the call was canceled");
    return true;
}

void rt_dealer_cluster_caller_left(rt_session *s)
{
    rt_cluster_dealer_caller_left(s->rt->dcl->cd, s->id);
}

void rt_dealer_cluster_answer(rt_router *rt, uint64_t invocation, const wamp_msg *m,
                              const char *error, bool progress)
{
    if (!rt->dcl) {
        return; /* detached at shutdown: nobody to tell */
    }
    rt_crpc_answer a = {.error = error, .progress = progress};
    if (m) {
        rt_payload p = rt_payload_of(m);
        a.payload = (rt_crpc_payload){p.ser, p.args, p.kwargs};
        bool ppt = false;
        if (json_object_size(m->dict) > 0 && !wamp_msg_ppt_check(m->dict, &ppt) && ppt) {
            a.ppt = m->dict; /* payload passthru: its ppt_* keys, as for a local caller */
        }
    }
    (void)rt_cluster_dealer_answer(rt->dcl->cd, invocation, &a);
}

void rt_dealer_cluster_sync(rt_dealer *d, const rt_registration *reg, size_t n_callees)
{
    if (reg->fn) {
        return;
    }
    uint64_t first = 0, last = 0;
    callee_times(reg, &first, &last);
    (void)rt_cluster_regs_set(rt_realm_router(d->realm)->dcl->regs, rt_realm_name(d->realm),
                              reg->uri, reg->match, rt_dealer_invoke_name(reg->invoke), n_callees,
                              first, last);
}

wamp_err rt_dealer_cluster_claim(rt_dealer *d, rt_session *s, uint64_t request, const char *uri,
                                 wamp_match match, rt_invoke invoke)
{
    return rt_cluster_regs_claim(rt_realm_router(d->realm)->dcl->regs, rt_realm_name(d->realm), uri,
                                 match, rt_dealer_invoke_name(invoke), s->id, request);
}
