/* rt_dealer.c: registrations, pending calls and router-local procedures.
 * INVOCATION request ids come from the router-scope counter, so one map keyed by that id finds
 * the pending call for any callee; YIELD/ERROR are accepted only from the callee it was sent to. */
#include "rt_dealer.h"

#include <stdlib.h>
#include <string.h>

#include "rt_core_int.h"
#include "rt_log.h"
#include "rt_session.h"
#include "wamp_uri.h"

#define RT_ERROR_RUNTIME "wamp.error.runtime_error"

typedef struct rt_registration {
    uint64_t id;
    char *uri;
    rt_hnode by_uri;
    rt_hnode by_id;
    rt_session *callee; /* NULL for a router-local procedure */
    rt_list in_session; /* in callee->regs */
    rt_local_proc_fn fn;
    void *fn_ctx;
} rt_registration;

typedef struct rt_call {
    uint64_t invocation; /* INVOCATION.Request */
    uint64_t request;    /* the caller's CALL.Request */
    rt_session *caller;  /* NULL once the caller has left */
    rt_session *callee;
    rt_hnode by_invocation;
    rt_list in_caller; /* in caller->calls_made */
    rt_list in_callee; /* in callee->calls_served */
    bool traced;       /* corr/uri hold the CALL's correlation (a trace was running) */
    uint8_t corr[TRACE_UUID_LEN];
    trace_str *uri; /* owned reference, NULL unless traced */
} rt_call;

struct rt_dealer {
    rt_realm *realm;
    rt_hmap by_uri;
    rt_hmap by_id;
    rt_hmap calls;
};

rt_dealer *rt_dealer_new(rt_realm *realm)
{
    rt_dealer *d = calloc(1, sizeof(*d));
    if (!d) {
        return NULL;
    }
    d->realm = realm;
    rt_hmap_init(&d->by_uri);
    rt_hmap_init(&d->by_id);
    rt_hmap_init(&d->calls);
    return d;
}

static void registration_remove(rt_dealer *d, rt_registration *reg)
{
    rt_hmap_remove(&d->by_uri, &reg->by_uri);
    rt_hmap_remove(&d->by_id, &reg->by_id);
    rt_list_remove(&reg->in_session);
    free(reg->uri);
    free(reg);
}

static void call_remove(rt_dealer *d, rt_call *c)
{
    rt_hmap_remove(&d->calls, &c->by_invocation);
    rt_list_remove(&c->in_caller);
    rt_list_remove(&c->in_callee);
    trace_str_unref(&c->uri);
    free(c);
}

void rt_dealer_free(rt_dealer *d)
{
    if (!d) {
        return;
    }
    for (rt_hmap_iter it = rt_hmap_iter_begin(&d->calls); it.node;) {
        rt_call *c = RT_CONTAINER_OF(it.node, rt_call, by_invocation);
        rt_hmap_iter_next(&d->calls, &it);
        call_remove(d, c);
    }
    for (rt_hmap_iter it = rt_hmap_iter_begin(&d->by_id); it.node;) {
        rt_registration *reg = RT_CONTAINER_OF(it.node, rt_registration, by_id);
        rt_hmap_iter_next(&d->by_id, &it);
        registration_remove(d, reg);
    }
    rt_hmap_fini(&d->by_uri);
    rt_hmap_fini(&d->by_id);
    rt_hmap_fini(&d->calls);
    free(d);
}

size_t rt_dealer_registration_count(const rt_dealer *d)
{
    return d->by_id.count;
}

size_t rt_dealer_pending_count(const rt_dealer *d)
{
    return d->calls.count;
}

static rt_registration *find_by_uri(const rt_dealer *d, const char *uri)
{
    for (rt_hnode *n = rt_hmap_first(&d->by_uri, rt_hash_str(uri)); n; n = rt_hmap_next(n)) {
        rt_registration *reg = RT_CONTAINER_OF(n, rt_registration, by_uri);
        if (strcmp(reg->uri, uri) == 0) {
            return reg;
        }
    }
    return NULL;
}

static rt_call *find_call(const rt_dealer *d, uint64_t invocation)
{
    for (rt_hnode *n = rt_hmap_first(&d->calls, rt_hash_u64(invocation)); n; n = rt_hmap_next(n)) {
        rt_call *c = RT_CONTAINER_OF(n, rt_call, by_invocation);
        if (c->invocation == invocation) {
            return c;
        }
    }
    return NULL;
}

/* New registration linked into both maps; NULL on allocation failure (nothing linked). */
static rt_registration *registration_add(rt_dealer *d, rt_session *callee, const char *uri)
{
    rt_registration *reg = calloc(1, sizeof(*reg));
    if (!reg || !(reg->uri = strdup(uri))) {
        free(reg);
        return NULL;
    }
    reg->id = rt_router_next_id(rt_realm_router(d->realm));
    reg->callee = callee;
    rt_list_init(&reg->in_session);
    if (rt_hmap_insert(&d->by_uri, &reg->by_uri, rt_hash_str(reg->uri)) != WAMP_OK) {
        goto fail;
    }
    if (rt_hmap_insert(&d->by_id, &reg->by_id, rt_hash_u64(reg->id)) != WAMP_OK) {
        rt_hmap_remove(&d->by_uri, &reg->by_uri);
        goto fail;
    }
    if (callee) {
        rt_list_add_tail(&callee->regs, &reg->in_session);
    }
    return reg;
fail:
    free(reg->uri);
    free(reg);
    return NULL;
}

wamp_err rt_dealer_register_local(rt_dealer *d, const char *uri, rt_local_proc_fn fn, void *ctx)
{
    if (find_by_uri(d, uri)) {
        return WAMP_EEXIST;
    }
    rt_registration *reg = registration_add(d, NULL, uri);
    if (!reg) {
        return WAMP_ENOMEM;
    }
    reg->fn = fn;
    reg->fn_ctx = ctx;
    return WAMP_OK;
}

wamp_err rt_dealer_on_register(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    json_t *match = json_object_get(m->dict, "match");
    json_t *invoke = json_object_get(m->dict, "invoke");
    if ((match && !(json_is_string(match) && strcmp(json_string_value(match), "exact") == 0)) ||
        (invoke && !(json_is_string(invoke) && strcmp(json_string_value(invoke), "single") == 0))) {
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     "only match \"exact\" and invoke \"single\" are supported");
    }
    if (!wamp_uri_is_valid(m->uri, WAMP_URI_LOOSE)) {
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id, WAMP_ERROR_INVALID_URI,
                                     "invalid procedure URI");
    }
    if (!rt_realm_authorize(d->realm, s->authrole, RT_ACTION_REGISTER, m->uri)) {
        RT_LOG_INFO(s->id, "REGISTER of %s denied for role %s", m->uri, s->authrole);
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                     "not authorized to register this procedure");
    }
    if (find_by_uri(d, m->uri)) {
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id,
                                     WAMP_ERROR_PROCEDURE_ALREADY_EXISTS,
                                     "procedure is already registered");
    }
    rt_registration *reg = registration_add(d, s, m->uri);
    if (!reg) {
        return WAMP_ENOMEM;
    }
    RT_TRACE_LAST(s->rt);
    return rt_session_send(s, wamp_msg_new_registered(m->id, reg->id));
}

wamp_err rt_dealer_on_unregister(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->regs)
    {
        rt_registration *reg = RT_CONTAINER_OF(it, rt_registration, in_session);
        if (reg->id == m->id2) {
            /* Calls already invoked stay pending on the callee and complete normally. */
            registration_remove(d, reg);
            RT_TRACE_LAST(s->rt);
            return rt_session_send(s, wamp_msg_new_unregistered(m->id));
        }
    }
    return rt_session_send_error(s, WAMP_MSG_UNREGISTER, m->id, WAMP_ERROR_NO_SUCH_REGISTRATION,
                                 "no such registration for this session");
}

static wamp_err call_local(rt_registration *reg, rt_session *s, const wamp_msg *m)
{
    json_t *empty_args = m->args ? NULL : json_array();
    json_t *empty_kw = m->kwargs ? NULL : json_object();
    rt_local_reply reply = {NULL, NULL, NULL};
    wamp_err err = WAMP_ENOMEM;
    if ((m->args || empty_args) && (m->kwargs || empty_kw)) {
        err = reg->fn(reg->fn_ctx, s, m->args ? m->args : empty_args,
                      m->kwargs ? m->kwargs : empty_kw, &reply);
    }
    json_decref(empty_args);
    json_decref(empty_kw);
    if (err == WAMP_ENOMEM) {
        json_decref(reply.args);
        json_decref(reply.kwargs);
        return err;
    }
    if (err != WAMP_OK) {
        RT_LOG_WARN(s->id, "local procedure %s failed: %s", reg->uri, wamp_strerror(err));
        json_decref(reply.args);
        json_decref(reply.kwargs);
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, RT_ERROR_RUNTIME,
                                     "internal error in router procedure");
    }
    RT_TRACE_LAST(s->rt);
    if (reply.error_uri) {
        return rt_session_send(s, wamp_msg_new_error(WAMP_MSG_CALL, m->id, NULL, reply.error_uri,
                                                     reply.args, reply.kwargs));
    }
    return rt_session_send(s, wamp_msg_new_result(m->id, NULL, reply.args, reply.kwargs));
}

wamp_err rt_dealer_on_call(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    if (!wamp_uri_is_valid(m->uri, WAMP_URI_LOOSE)) {
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_INVALID_URI,
                                     "invalid procedure URI");
    }
    if (!rt_realm_authorize(d->realm, s->authrole, RT_ACTION_CALL, m->uri)) {
        RT_LOG_INFO(s->id, "CALL of %s denied for role %s", m->uri, s->authrole);
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                     "not authorized to call this procedure");
    }
    rt_registration *reg = find_by_uri(d, m->uri);
    if (!reg) {
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_NO_SUCH_PROCEDURE,
                                     "no callee registered for this procedure");
    }
    if (!reg->callee) {
        return call_local(reg, s, m);
    }
    if (reg->callee->state != RT_SESSION_JOINED) {
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_CANCELED,
                                     "the callee is leaving");
    }
    rt_call *c = calloc(1, sizeof(*c));
    if (!c) {
        return WAMP_ENOMEM;
    }
    c->invocation = rt_router_next_id(s->rt);
    c->request = m->id;
    c->caller = s;
    c->callee = reg->callee;
    if (rt_hmap_insert(&d->calls, &c->by_invocation, rt_hash_u64(c->invocation)) != WAMP_OK) {
        free(c);
        return WAMP_ENOMEM;
    }
    rt_list_add_tail(&s->calls_made, &c->in_caller);
    rt_list_add_tail(&reg->callee->calls_served, &c->in_callee);
    if (s->rt->cur.set) {
        c->traced = true;
        memcpy(c->corr, s->rt->cur.uuid, TRACE_UUID_LEN);
        trace_str *uri = rt_trace_action_uri(s->rt); /* outlives this message */
        c->uri = uri ? trace_str_ref(uri) : NULL;
    }
    wamp_err err = rt_session_send(
            reg->callee, wamp_msg_new_invocation(c->invocation, reg->id, NULL,
                                                 m->args ? json_incref(m->args) : NULL,
                                                 m->kwargs ? json_incref(m->kwargs) : NULL));
    if (err == WAMP_OK) {
        return WAMP_OK;
    }
    call_remove(d, c);
    if (err == WAMP_ETOOBIG) {
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                     "the invocation exceeds the callee's message size limit");
    }
    if (err == WAMP_EINVAL) {
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     "the call cannot be encoded for the callee");
    }
    return err;
}

/* The pending call that s (as callee) answers with INVOCATION.Request `invocation`, or NULL. */
static rt_call *callee_call(rt_dealer *d, rt_session *s, uint64_t invocation)
{
    rt_call *c = find_call(d, invocation);
    return c && c->callee == s ? c : NULL;
}

wamp_err rt_dealer_on_answer(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    bool is_error = m->type == WAMP_MSG_ERROR;
    rt_call *c = callee_call(d, s, m->id);
    if (!c) {
        RT_LOG_DEBUG(s->id, "%s for unknown invocation %llu ignored",
                     wamp_msg_type_name((int)m->type), (unsigned long long)m->id);
        return WAMP_OK;
    }
    rt_session *caller = c->caller;
    uint64_t request = c->request;
    call_remove(d, c);
    if (!caller || caller->state != RT_SESSION_JOINED) {
        return WAMP_OK; /* the caller left: the answer has nowhere to go */
    }
    json_t *args = m->args ? json_incref(m->args) : NULL;
    json_t *kwargs = m->kwargs ? json_incref(m->kwargs) : NULL;
    RT_TRACE_LAST(s->rt);
    wamp_err err = rt_session_send(
            caller, is_error ? wamp_msg_new_error(WAMP_MSG_CALL, request, json_incref(m->dict),
                                                  m->uri, args, kwargs)
                             : wamp_msg_new_result(request, NULL, args, kwargs));
    if (err == WAMP_ETOOBIG || err == WAMP_EINVAL) {
        return rt_session_send_error(caller, WAMP_MSG_CALL, request,
                                     WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                     "the answer exceeds the caller's message size limit");
    }
    return err;
}

void rt_dealer_on_leave(rt_dealer *d, rt_session *s)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->regs)
    {
        registration_remove(d, RT_CONTAINER_OF(it, rt_registration, in_session));
    }
    /* Calls this session was serving: their callers learn the callee is gone. */
    RT_LIST_FOREACH_SAFE(it, nx, &s->calls_served)
    {
        rt_call *c = RT_CONTAINER_OF(it, rt_call, in_callee);
        rt_session *caller = c->caller;
        uint64_t request = c->request;
        bool traced = c->traced && trace_hub_is_active(s->rt->hub);
        if (traced) {
            rt_trace_action_open(s->rt, c->corr, c->uri);
        }
        call_remove(d, c);
        if (caller && caller->state == RT_SESSION_JOINED) {
            (void)rt_session_send_error(caller, WAMP_MSG_CALL, request, WAMP_ERROR_CANCELED,
                                        "the callee left before answering");
        }
        if (traced) {
            rt_trace_action_close(s->rt);
        }
    }
    /* Calls this session made: orphaned; the callee's answer will be dropped. */
    RT_LIST_FOREACH_SAFE(it, nx, &s->calls_made)
    {
        rt_call *c = RT_CONTAINER_OF(it, rt_call, in_caller);
        c->caller = NULL;
        rt_list_remove(&c->in_caller);
    }
}

bool rt_dealer_open_call_action(rt_dealer *d, rt_session *callee, uint64_t invocation)
{
    rt_call *c = callee_call(d, callee, invocation);
    if (!c || !c->traced) {
        return false;
    }
    rt_trace_action_open(callee->rt, c->corr, c->uri);
    return true;
}

const char *rt_dealer_procedure_of(rt_session *s, uint64_t reg_id)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->regs)
    {
        rt_registration *reg = RT_CONTAINER_OF(it, rt_registration, in_session);
        if (reg->id == reg_id) {
            return reg->uri;
        }
    }
    return NULL;
}
