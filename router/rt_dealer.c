/* rt_dealer.c: calls: CALL -> INVOCATION, YIELD/ERROR -> RESULT/ERROR, progressive results,
 * CANCEL, timeouts. The registration table is rt_dealer_reg.c, calls of the router's own
 * procedures and their answers (now or deferred) rt_dealer_local.c.
 *
 * INVOCATION request ids come from the router-scope counter, so one map keyed by that id finds
 * the pending call for any callee; YIELD/ERROR are accepted only from the callee it was sent to.
 *
 * A pending call lives exactly as long as its caller waits for it: a call whose caller is gone
 * (left, canceled with skip/killnowait, timed out) is freed at once, its callee told with
 * INTERRUPT {"mode": "killnowait"} where it announced call_canceling (CANCEL skip excepted, by
 * the spec). So limits.max_pending_calls, counted per caller, bounds every call the router
 * holds: no caller can leave calls behind and come back for more. The callee's late answer
 * finds no call and is dropped (stats.answers_dropped); while a trace runs, it is recorded with the
 * call's correlation, kept for that in a bounded ring (rt_late_call). */
#include "rt_dealer.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "rt_core_int.h"
#include "rt_dealer_int.h"
#include "rt_jalloc.h"
#include "rt_local.h"
#include "rt_log.h"
#include "rt_options.h"
#include "rt_session.h"
#include "wamp_uri.h"

typedef struct rt_call {
    uint64_t invocation; /* INVOCATION.Request */
    uint64_t request;    /* the caller's CALL.Request */
    rt_session *caller;  /* waiting for the answer; NULL: a caller on another node */
    rt_session *callee;
    rt_hnode by_invocation;
    rt_hnode by_request; /* in d->requests (CANCEL finds it there) */
    rt_list in_caller;   /* in caller->calls_made */
    rt_list in_callee;   /* in callee->calls_served */
    size_t timed_at;     /* 1 + its index in d->timed while deadline_us != 0, else 0 */
    uint64_t deadline_us;
    bool receive_progress; /* CALL.Options.receive_progress */
    bool killing;          /* CANCEL mode kill: INTERRUPT sent, the callee's answer ends it */
    rt_action_mark action; /* the CALL's action, kept while a trace ran (rt_observer.h) */
} rt_call;

/* A traced call freed before its callee answered (canceled, timed out, its caller gone): what
 * the callee's late answer needs to be traced with the call's correlation. Kept in a ring of
 * RT_DEALER_LATE_MAX per dealer, the oldest forgotten first, so tracing late answers costs
 * bounded memory whatever callers do. */
#define RT_DEALER_LATE_MAX 256

struct rt_late_call {
    uint64_t invocation;
    uint64_t callee_id;
    rt_action_mark action; /* owned */
};

rt_dealer *rt_dealer_new(rt_realm *realm)
{
    rt_dealer *d = calloc(1, sizeof(*d));
    if (!d) {
        return NULL;
    }
    d->realm = realm;
    rt_hmap_init(&d->exact);
    rt_hmap_init(&d->by_id);
    rt_hmap_init(&d->calls);
    rt_hmap_init(&d->requests);
    rt_list_init(&d->prefix);
    rt_list_init(&d->wildcard);
    rt_list_init(&d->claims);
    return d;
}

/* --- Deadlines: d->timed, a binary min-heap ----------------------------------------------------
 */

/* Earlier deadline first; among equal ones, the earlier call (invocation ids grow). */
static bool timed_before(const rt_call *a, const rt_call *b)
{
    return a->deadline_us != b->deadline_us ? a->deadline_us < b->deadline_us
                                            : a->invocation < b->invocation;
}

static void timed_set(rt_dealer *d, size_t i, rt_call *c)
{
    d->timed[i] = c;
    c->timed_at = i + 1;
}

static void timed_up(rt_dealer *d, size_t i)
{
    rt_call *c = d->timed[i];
    while (i > 0 && timed_before(c, d->timed[(i - 1) / 2])) {
        timed_set(d, i, d->timed[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    timed_set(d, i, c);
}

static void timed_down(rt_dealer *d, size_t i)
{
    rt_call *c = d->timed[i];
    for (size_t child = 2 * i + 1; child < d->n_timed; child = 2 * i + 1) {
        if (child + 1 < d->n_timed && timed_before(d->timed[child + 1], d->timed[child])) {
            child++;
        }
        if (!timed_before(d->timed[child], c)) {
            break;
        }
        timed_set(d, i, d->timed[child]);
        i = child;
    }
    timed_set(d, i, c);
}

/* Adds c (deadline_us set) to the deadlines; WAMP_ENOMEM (nothing changed). */
static wamp_err timed_add(rt_dealer *d, rt_call *c)
{
    if (d->n_timed == d->cap_timed) {
        size_t ncap = d->cap_timed ? d->cap_timed * 2 : 64;
        rt_call **nt = realloc(d->timed, ncap * sizeof(*nt));
        if (!nt) {
            return WAMP_ENOMEM;
        }
        d->timed = nt;
        d->cap_timed = ncap;
    }
    d->timed[d->n_timed++] = c;
    timed_up(d, d->n_timed - 1);
    return WAMP_OK;
}

/* Removes c from the deadlines, if it is there. */
static void timed_remove(rt_dealer *d, rt_call *c)
{
    if (!c->timed_at) {
        return;
    }
    size_t i = c->timed_at - 1;
    c->timed_at = 0;
    rt_call *last = d->timed[--d->n_timed];
    if (i == d->n_timed) {
        return;
    }
    d->timed[i] = last;
    if (i > 0 && timed_before(last, d->timed[(i - 1) / 2])) {
        timed_up(d, i);
    } else {
        timed_down(d, i);
    }
}

/* --- Calls ------------------------------------------------------------------------------------ */

static uint64_t request_hash(const rt_session *caller, uint64_t request)
{
    return rt_hash_u64(request ^ (caller->id * UINT64_C(0x9E3779B97F4A7C15)));
}

/* Unlinks and frees c: answered, canceled, timed out, or its caller or callee gone. */
static void call_remove(rt_dealer *d, rt_call *c)
{
    if (d->asked == c) {
        d->asked = NULL;
    }
    rt_hmap_remove(&d->calls, &c->by_invocation);
    if (c->caller) {
        rt_hmap_remove(&d->requests, &c->by_request);
        c->caller->n_calls_made--;
    }
    rt_list_remove(&c->in_caller);
    rt_list_remove(&c->in_callee);
    timed_remove(d, c);
    rt_observers_action_forget(&c->callee->rt->observers, &c->action);
    rt_jalloc_free(c);
}

/* The caller no longer waits for c (CANCEL skip/killnowait, timeout, caller gone): freed now,
 * remembered for tracing the callee's late answer if c was traced. */
static void call_abandon(rt_dealer *d, rt_call *c)
{
    bool traced = rt_action_mark_is_set(&c->action);
    if (traced && !d->late) {
        d->late = calloc(RT_DEALER_LATE_MAX, sizeof(*d->late)); /* none: untraced late answers */
    }
    if (traced && d->late) {
        rt_late_call *l = &d->late[d->late_next];
        d->late_next = (d->late_next + 1) % RT_DEALER_LATE_MAX;
        rt_observers_action_forget(&c->callee->rt->observers, &l->action);
        l->invocation = c->invocation;
        l->callee_id = c->callee->id;
        l->action = c->action; /* the reference moves */
        c->action = (rt_action_mark){0};
    }
    call_remove(d, c);
}

void rt_dealer_free(rt_dealer *d)
{
    if (!d) {
        return;
    }
    for (size_t i = 0; d->late && i < RT_DEALER_LATE_MAX; i++) {
        rt_observers_action_forget(&rt_realm_router(d->realm)->observers, &d->late[i].action);
    }
    free(d->late);
    rt_dealer_claims_free(d);
    for (rt_hmap_iter it = rt_hmap_iter_begin(&d->calls); it.node;) {
        rt_call *c = RT_CONTAINER_OF(it.node, rt_call, by_invocation);
        rt_hmap_iter_next(&d->calls, &it);
        call_remove(d, c);
    }
    for (rt_hmap_iter it = rt_hmap_iter_begin(&d->by_id); it.node;) {
        rt_registration *reg = RT_CONTAINER_OF(it.node, rt_registration, by_id);
        rt_hmap_iter_next(&d->by_id, &it);
        rt_dealer_registration_free(d, reg);
    }
    rt_hmap_fini(&d->exact);
    rt_hmap_fini(&d->by_id);
    rt_hmap_fini(&d->calls);
    rt_hmap_fini(&d->requests);
    free(d->timed);
    free(d);
}

size_t rt_dealer_pending_count(const rt_dealer *d)
{
    return d->calls.count;
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

/* The callee a new call of reg goes to, by the registration's invocation policy. */
static rt_session *pick_callee(rt_registration *reg)
{
    rt_list *n = reg->callees.next;
    switch (reg->invoke) {
    case RT_INVOKE_LAST:
        n = reg->callees.prev;
        break;
    case RT_INVOKE_RANDOM:
        for (uint32_t i = randombytes_uniform((uint32_t)reg->n_callees); i > 0; i--) {
            n = n->next;
        }
        break;
    case RT_INVOKE_ROUNDROBIN: /* the head serves, then waits at the tail */
        rt_list_remove(n);
        rt_list_add_tail(&reg->callees, n);
        break;
    case RT_INVOKE_SINGLE:
    case RT_INVOKE_FIRST:
        break;
    }
    rt_session *callee = RT_CONTAINER_OF(n, rt_reg_callee, in_reg)->session;
    if (callee->state != RT_SESSION_JOINED && reg->n_callees > 1) {
        /* Closing (its registrations go when the transport reports it closed): a shared
         * registration's call goes to another member as the policy would pick among them: for
         * last the newest, else the first in registration order (which, for roundrobin, then
         * waits at the tail: the members keep taking turns). */
        bool back = reg->invoke == RT_INVOKE_LAST;
        for (rt_list *it = back ? reg->callees.prev : reg->callees.next; it != &reg->callees;
             it = back ? it->prev : it->next) {
            rt_session *other = RT_CONTAINER_OF(it, rt_reg_callee, in_reg)->session;
            if (other->state == RT_SESSION_JOINED) {
                if (reg->invoke == RT_INVOKE_ROUNDROBIN) {
                    rt_list_remove(it);
                    rt_list_add_tail(&reg->callees, it);
                }
                return other;
            }
        }
    }
    return callee;
}

/* INVOCATION.Details for the features in use (NULL = {} when none is): Details.procedure for a
 * pattern registration, receive_progress, the caller's identity (disclose), the CALL's ppt_*
 * options (ppt: the CALL.Options holding them, or NULL). *oom set on failure. */
static json_t *invocation_details(const rt_registration *reg, const char *procedure, bool progress,
                                  bool disclose, uint64_t caller, const char *authid,
                                  const char *authrole, const json_t *ppt, bool *oom)
{
    if (reg->match == WAMP_MATCH_EXACT && !progress && !disclose && !ppt) {
        return NULL;
    }
    json_t *det = json_object();
    bool ok = det != NULL;
    if (ok && reg->match != WAMP_MATCH_EXACT) {
        ok = json_object_set_new(det, "procedure", json_string(procedure)) == 0;
    }
    if (ok && progress) {
        ok = json_object_set_new(det, "receive_progress", json_true()) == 0;
    }
    if (ok && disclose) {
        ok = json_object_set_new(det, "caller", json_integer((json_int_t)caller)) == 0 &&
             json_object_set_new(det, "caller_authid", json_string(authid)) == 0 &&
             json_object_set_new(det, "caller_authrole", json_string(authrole)) == 0;
    }
    if (ok && ppt) {
        /* Payload passthru mode: CALL.Options.ppt_* become INVOCATION.Details.ppt_*. */
        ok = wamp_msg_ppt_copy(det, ppt) == 0;
    }
    if (!ok) {
        json_decref(det);
        *oom = true;
        return NULL;
    }
    return det;
}

/* Why callee, picked from reg, cannot take a new call of procedure (ppt: it uses payload
 * passthru mode), with the ERROR's URI in *uri; NULL if it can. A pattern registration was
 * authorized on its pattern's text: it serves only the procedures the callee's role may
 * register (an exact permission on "com.a" must not let a prefix registration of "com.a" serve
 * "com.a.secret"); for the others, as for a procedure nobody registered, no_such_procedure. */
static const char *callee_unfit(const rt_dealer *d, const rt_registration *reg,
                                const rt_session *callee, const char *procedure, bool ppt,
                                const char **uri)
{
    if (callee->state != RT_SESSION_JOINED) {
        *uri = WAMP_ERROR_CANCELED;
        return "the callee is leaving";
    }
    if (reg->match != WAMP_MATCH_EXACT &&
        !rt_realm_authorize(d->realm, callee->authrole, RT_ACTION_REGISTER, procedure)) {
        *uri = WAMP_ERROR_NO_SUCH_PROCEDURE;
        return "no callee may serve this procedure (a pattern registration covers it, its "
               "callee's role may not register it)";
    }
    if (ppt && !callee->ppt_callee) {
        /* Spec "Payload Passthru Mode": an application error for the caller. */
        *uri = WAMP_ERROR_FEATURE_NOT_SUPPORTED;
        return "the callee does not support payload passthru mode";
    }
    return NULL;
}

/* New pending call of caller s (CALL.Request request) served by callee, linked into the maps,
 * the sessions' lists and (CALL.Options.timeout, capped by limits.max_call_timeout) the
 * deadlines; NULL on allocation failure (nothing linked). */
static rt_call *call_new(rt_dealer *d, rt_session *s, rt_session *callee, uint64_t request,
                         bool progress, const json_t *timeout_v)
{
    /* From the free lists (rt_jalloc.h; plain malloc outside the router's service thread): with
     * many calls in flight glibc's per-thread cache runs dry and malloc takes its slow path. */
    rt_call *c = rt_jalloc_malloc(sizeof(*c));
    if (!c) {
        return NULL;
    }
    memset(c, 0, sizeof(*c));
    c->invocation = rt_router_next_id(s->rt);
    c->request = request;
    c->caller = s;
    c->callee = callee;
    c->receive_progress = progress;
    if (rt_hmap_insert(&d->calls, &c->by_invocation, rt_hash_u64(c->invocation)) != WAMP_OK) {
        rt_jalloc_free(c);
        return NULL;
    }
    if (rt_hmap_insert(&d->requests, &c->by_request, request_hash(s, request)) != WAMP_OK) {
        rt_hmap_remove(&d->calls, &c->by_invocation);
        rt_jalloc_free(c);
        return NULL;
    }
    rt_list_add_tail(&s->calls_made, &c->in_caller);
    s->n_calls_made++;
    rt_list_add_tail(&callee->calls_served, &c->in_callee);
    c->deadline_us = rt_dealer_call_deadline_us(s->rt, timeout_v);
    if (c->deadline_us && timed_add(d, c) != WAMP_OK) {
        call_remove(d, c);
        return NULL;
    }
    return c;
}

/* The INVOCATION of caller s's CALL.Request request could not be sent (err; its pending call
 * removed already): the caller's ERROR for a callee that cannot take it, else err. */
static wamp_err invocation_not_sent(rt_session *s, uint64_t request, wamp_err err)
{
    if (err == WAMP_ETOOBIG) {
        return rt_session_send_error(s, WAMP_MSG_CALL, request, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                     "the invocation exceeds the callee's message size limit");
    }
    if (err == WAMP_EINVAL) {
        return rt_session_send_error(s, WAMP_MSG_CALL, request, WAMP_ERROR_INVALID_ARGUMENT,
                                     "the call cannot be encoded for the callee");
    }
    return err;
}

/* Checks the options of caller s's CALL m (not empty): true if the call may go on (*ppt: it
 * uses payload passthru mode); false after an ERROR or a protocol violation, *err its result. */
static bool call_options_ok(rt_session *s, const wamp_msg *m, bool *ppt, wamp_err *err)
{
    char why[96];
    const char *bad = rt_options_check(WAMP_MSG_CALL, m->dict, why, sizeof(why))
                              ? wamp_msg_ppt_check(m->dict, ppt)
                              : why;
    if (bad) {
        *err = rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_INVALID_ARGUMENT, bad);
        return false;
    }
    if (*ppt && !s->ppt_caller) {
        /* Spec "Payload Passthru Mode": a protocol error. */
        rt_session_protocol_violation(s, "CALL uses payload passthru mode (ppt_*), which the "
                                         "caller did not announce (payload_passthru_mode)");
        *err = WAMP_OK;
        return false;
    }
    return true;
}

/* The registration a CALL of uri reaches on this node (NULL if none), and in a cluster the node
 * that serves the call instead (*node; NULL = this one). */
static rt_registration *route_call(rt_dealer *d, const rt_session *s, const char *uri,
                                   const char **node)
{
    rt_registration *reg = rt_dealer_match_registration(d, uri);
    /* wamp.* is the router's namespace: only its own procedures answer there. REGISTER refuses
     * wamp.* URIs, but a client's pattern (prefix "wamp", wildcard ".session.get") can match
     * one, and must not answer calls meant for the router, here or on another node. */
    bool restricted = uri[0] == 'w' && strncmp(uri, "wamp.", 5) == 0; /* (no call, mostly) */
    if (restricted && reg && !reg->fn) {
        reg = NULL;
    }
    *node = s->rt->dcl && !restricted ? rt_dealer_cluster_route(d, reg, uri) : NULL;
    return reg;
}

wamp_err rt_dealer_on_call(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    if (!wamp_uri_is_valid(m->uri, WAMP_URI_LOOSE)) {
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_INVALID_URI,
                                     "invalid procedure URI");
    }
    const rt_permission *perm = rt_realm_permission(d->realm, s->authrole, m->uri);
    if (!perm || !perm->allow_call) {
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "CALL denied", s->id,
                            "CALL of %s denied for role %s", m->uri, s->authrole);
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                     "not authorized to call this procedure");
    }
    /* Plain calls have empty options: skip the option lookups (each hashes its key). */
    bool has_options = json_object_size(m->dict) > 0;
    bool ppt = false;
    wamp_err err = WAMP_OK;
    if (has_options && !call_options_ok(s, m, &ppt, &err)) {
        return err;
    }
    json_t *timeout_v = has_options ? json_object_get(m->dict, "timeout") : NULL;
    bool progress = has_options && json_is_true(json_object_get(m->dict, "receive_progress"));
    bool disclose = perm->disclose_caller ||
                    (has_options && json_is_true(json_object_get(m->dict, "disclose_me")));
    const char *node = NULL;
    rt_registration *reg = route_call(d, s, m->uri, &node);
    if (node) {
        return rt_dealer_cluster_call(d, s, m, node, timeout_v, disclose, progress, ppt);
    }
    if (!reg) {
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_NO_SUCH_PROCEDURE,
                                     "no callee registered for this procedure");
    }
    if (reg->fn) {
        /* The router's own procedures read their arguments: no opaque payload for them. */
        return ppt ? rt_session_send_error(s, WAMP_MSG_CALL, m->id,
                                           WAMP_ERROR_FEATURE_NOT_SUPPORTED,
                                           "router procedures do not take passthru payloads")
                   : rt_dealer_call_local(reg, s, m);
    }
    size_t max_calls = rt_router_config(s->rt)->limits.max_pending_calls;
    if (max_calls && s->n_calls_made >= max_calls) {
        return rt_session_refuse_limit(s, WAMP_MSG_CALL, m->id, "max_pending_calls", max_calls);
    }
    rt_session *callee = pick_callee(reg);
    const char *unfit_uri, *unfit = callee_unfit(d, reg, callee, m->uri, ppt, &unfit_uri);
    if (unfit) {
        return rt_session_send_error(s, WAMP_MSG_CALL, m->id, unfit_uri, unfit);
    }
    bool oom = false;
    json_t *details = invocation_details(reg, m->uri, progress, disclose, s->id, s->authid,
                                         s->authrole, ppt ? m->dict : NULL, &oom);
    if (oom) {
        return WAMP_ENOMEM;
    }
    rt_call *c = call_new(d, s, callee, m->id, progress, timeout_v);
    if (!c) {
        json_decref(details);
        return WAMP_ENOMEM;
    }
    rt_observers_action_mark(&s->rt->observers, s->rt, &c->action);
    rt_observers_call_routed(&s->rt->observers, s, m->id, callee, c->invocation);
    rt_payload payload = rt_payload_of(m);
    if (m->args || m->kwargs) {
        /* A payload as jansson values (a message parsed from a tree): in the envelope. */
        err = rt_session_send(callee, wamp_msg_new_invocation(c->invocation, reg->id, details,
                                                              json_incref(m->args),
                                                              json_incref(m->kwargs)));
    } else {
        err = rt_session_send_fields(callee, WAMP_MSG_INVOCATION, c->invocation, reg->id, details,
                                     &payload);
    }
    if (err == WAMP_OK) {
        return WAMP_OK;
    }
    call_remove(d, c);
    return invocation_not_sent(s, m->id, err);
}

/* The pending call that s (as callee) answers with INVOCATION.Request `invocation`, or NULL. */
static rt_call *callee_call(rt_dealer *d, rt_session *s, uint64_t invocation)
{
    rt_call *c =
            d->asked && d->asked->invocation == invocation ? d->asked : find_call(d, invocation);
    return c && c->callee == s ? c : NULL;
}

/* The pending call s made as CALL.Request `request`, or NULL. */
static rt_call *caller_call(const rt_dealer *d, const rt_session *s, uint64_t request)
{
    for (rt_hnode *n = rt_hmap_first(&d->requests, request_hash(s, request)); n;
         n = rt_hmap_next(n)) {
        rt_call *c = RT_CONTAINER_OF(n, rt_call, by_request);
        if (c->caller == s && c->request == request) {
            return c;
        }
    }
    return NULL;
}

/* The caller's answer (ERROR or RESULT to its CALL.Request request) to the callee's YIELD or
 * ERROR m (progress: a progressive YIELD) into *out, its payload m's; WAMP_ENOMEM when the ppt_*
 * details could not be copied (*out is not initialized then). */
static wamp_err answer_reply(const wamp_msg *m, uint64_t request, bool is_error, bool progress,
                             rt_encoded *out)
{
    rt_payload payload = rt_payload_of(m);
    json_t *args = json_incref(m->args);
    json_t *kwargs = json_incref(m->kwargs);
    if (is_error) {
        /* ERROR.Details go along as they are (ppt_* keys included). */
        rt_encoded_init_payload(out,
                                wamp_msg_new_error(WAMP_MSG_CALL, request, json_incref(m->dict),
                                                   m->uri, args, kwargs),
                                &payload);
        return WAMP_OK;
    }
    /* Payload passthru mode: YIELD.Options.ppt_* become RESULT.Details.ppt_*. */
    json_t *details = progress ? json_pack("{s:b}", "progress", 1) : NULL;
    bool ppt = false;
    if (json_object_size(m->dict) > 0 && !wamp_msg_ppt_check(m->dict, &ppt) && ppt) {
        details = details ? details : json_object();
        if (details && wamp_msg_ppt_copy(details, m->dict) != 0) {
            json_decref(details);
            json_decref(args);
            json_decref(kwargs);
            return WAMP_ENOMEM;
        }
    }
    if (args || kwargs) {
        /* A payload as jansson values (a message parsed from a tree): in the envelope. */
        rt_encoded_init(out, wamp_msg_new_result(request, details, args, kwargs));
    } else {
        rt_encoded_init_fields(out, WAMP_MSG_RESULT, request, 0, details, &payload);
    }
    return WAMP_OK;
}

wamp_err rt_dealer_on_answer(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    bool is_error = m->type == WAMP_MSG_ERROR;
    char why[96];
    if (!is_error && !rt_options_check(WAMP_MSG_YIELD, m->dict, why, sizeof(why))) {
        /* YIELD has no reply to carry an ERROR: as for CANCEL, a protocol violation. */
        rt_session_protocol_violation(s, why);
        return WAMP_OK;
    }
    rt_call *c = callee_call(d, s, m->id);
    if (!c) {
        /* Its call was canceled, timed out or its caller left (or the id is made up). */
        s->rt->stats.answers_dropped++;
        RT_LOG_DEBUG(s->id, "%s for unknown invocation %llu dropped",
                     wamp_msg_type_name((int)m->type), (unsigned long long)m->id);
        return WAMP_OK;
    }
    rt_session *caller = c->caller;
    uint64_t request = c->request;
    bool progress = !is_error && json_object_size(m->dict) > 0 &&
                    json_is_true(json_object_get(m->dict, "progress"));
    if (progress) {
        /* Spec "Progressive Call Results": forwarded only to a caller that asked for them; a
         * call being killed waits for its final answer only. */
        if (!c->receive_progress || c->killing) {
            RT_LOG_DEBUG(s->id, "progressive YIELD for invocation %llu not forwarded",
                         (unsigned long long)m->id);
            return WAMP_OK;
        }
    } else {
        call_remove(d, c);
    }
    if (!caller) {
        /* The caller is on another node: the answer travels there. */
        if (!progress) {
            rt_observers_action_last(&s->rt->observers, s->rt);
        }
        rt_dealer_cluster_answer(s->rt, m->id, m, is_error ? m->uri : NULL, progress);
        return WAMP_OK;
    }
    if (caller->state != RT_SESSION_JOINED) {
        s->rt->stats.answers_dropped++; /* the caller is closing: nowhere to go */
        return WAMP_OK;
    }
    rt_encoded reply;
    if (answer_reply(m, request, is_error, progress, &reply) != WAMP_OK) {
        return WAMP_ENOMEM;
    }
    if (!progress) {
        rt_observers_action_last(&s->rt->observers, s->rt);
    }
    wamp_err err = rt_session_send_encoded(caller, &reply);
    rt_encoded_fini(&reply);
    if (err == WAMP_ETOOBIG || err == WAMP_EINVAL) {
        if (progress) {
            call_remove(d, c); /* the caller is told the call failed: it ends here */
        }
        return rt_session_send_error(caller, WAMP_MSG_CALL, request,
                                     WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                     "the answer exceeds the caller's message size limit");
    }
    return err;
}

/* INTERRUPT for c to its callee with mode (not the action's last message). */
static wamp_err send_interrupt(rt_call *c, const char *mode)
{
    return rt_session_send(c->callee,
                           wamp_msg_new_interrupt(c->invocation, json_pack("{s:s}", "mode", mode)));
}

/* The callee announced callee.features.call_canceling and can still be told. */
static bool callee_can_interrupt(const rt_call *c)
{
    return c->callee->callee_call_canceling && c->callee->state == RT_SESSION_JOINED;
}

wamp_err rt_dealer_on_cancel(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    char why[96];
    if (!rt_options_check(WAMP_MSG_CANCEL, m->dict, why, sizeof(why))) {
        rt_session_protocol_violation(s, why);
        return WAMP_OK;
    }
    json_t *mode_v = json_object_get(m->dict, "mode");
    const char *mode = mode_v ? json_string_value(mode_v) : "killnowait";
    if (!mode || (strcmp(mode, "skip") != 0 && strcmp(mode, "kill") != 0 &&
                  strcmp(mode, "killnowait") != 0)) {
        rt_session_protocol_violation(s, "CANCEL.Options.mode must be skip, kill or killnowait");
        return WAMP_OK;
    }
    rt_call *c = caller_call(d, s, m->id);
    wamp_err cerr = WAMP_OK;
    if (!c && s->rt->dcl && rt_dealer_cluster_cancel(s, m->id, mode, &cerr)) {
        return cerr;
    }
    if (!c || c->killing) {
        RT_LOG_DEBUG(s->id,
                     "CANCEL of request %llu ignored (no pending call, or already "
                     "canceling)",
                     (unsigned long long)m->id);
        return WAMP_OK;
    }
    if (!callee_can_interrupt(c)) {
        mode = "skip"; /* spec: a callee without call_canceling is never interrupted */
    }
    wamp_err err = WAMP_OK;
    if (strcmp(mode, "skip") != 0) {
        err = send_interrupt(c, mode);
    }
    if (strcmp(mode, "kill") == 0) {
        c->killing = true; /* the callee's answer completes the call */
        return err;
    }
    call_abandon(d, c); /* skip, killnowait: the callee's answer will be dropped */
    if (err != WAMP_OK && err != WAMP_ETOOBIG && err != WAMP_EINVAL) {
        return err;
    }
    return rt_session_send_error(s, WAMP_MSG_CALL, m->id, WAMP_ERROR_CANCELED,
                                 "the call was canceled");
}

void rt_dealer_tick(rt_dealer *d, uint64_t now_us)
{
    while (d->n_timed > 0) {
        rt_call *c = d->timed[0];
        if (c->deadline_us > now_us) {
            return;
        }
        rt_session *caller = c->caller;
        rt_router *rt = caller->rt;
        bool traced = rt_observers_action_resume(&rt->observers, rt, &c->action);
        RT_LOG_DEBUG(caller->id, "call %llu timed out", (unsigned long long)c->request);
        if (callee_can_interrupt(c) && !c->killing) { /* a kill has interrupted it already */
            (void)send_interrupt(c, "killnowait");
        }
        uint64_t request = c->request;
        call_abandon(d, c); /* removes it from d->timed */
        if (caller->state == RT_SESSION_JOINED) {
            (void)rt_session_send_error(caller, WAMP_MSG_CALL, request, WAMP_ERROR_TIMEOUT,
                                        "the call timed out");
        }
        if (traced) {
            rt_observers_action_end(&rt->observers, rt);
        }
    }
}

void rt_dealer_on_leave(rt_dealer *d, rt_session *s)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->regs)
    {
        rt_dealer_reg_callee_remove(d, RT_CONTAINER_OF(it, rt_reg_callee, in_session));
    }
    /* The calls below open their own actions; the leave's (GOODBYE, kill) resumes after. */
    rt_observers *obs = &s->rt->observers;
    void *leave_action = rt_observers_action_stash(obs, s->rt);
    /* Calls this session was serving: their callers learn the callee is gone. */
    RT_LIST_FOREACH_SAFE(it, nx, &s->calls_served)
    {
        rt_call *c = RT_CONTAINER_OF(it, rt_call, in_callee);
        rt_session *caller = c->caller;
        uint64_t request = c->request;
        bool traced = rt_observers_action_resume(obs, s->rt, &c->action);
        uint64_t invocation = c->invocation;
        call_remove(d, c);
        if (!caller) {
            rt_dealer_cluster_answer(s->rt, invocation, NULL, WAMP_ERROR_CANCELED, false);
        } else if (caller->state == RT_SESSION_JOINED) {
            (void)rt_session_send_error(caller, WAMP_MSG_CALL, request, WAMP_ERROR_CANCELED,
                                        "the callee left before answering");
        }
        if (traced) {
            rt_observers_action_end(obs, s->rt);
        }
    }
    /* Calls this session made are canceled as CANCEL killnowait does (INTERRUPT to a callee
     * that announced call_canceling) and freed now: the callee's answer will be dropped. */
    RT_LIST_FOREACH_SAFE(it, nx, &s->calls_made)
    {
        rt_call *c = RT_CONTAINER_OF(it, rt_call, in_caller);
        if (callee_can_interrupt(c) && !c->killing) { /* a kill has interrupted it already */
            bool traced = rt_observers_action_resume(obs, s->rt, &c->action);
            if (traced) { /* nothing else of this call will reach a client */
                rt_observers_action_last(obs, s->rt);
            }
            (void)send_interrupt(c, "killnowait");
            if (traced) {
                rt_observers_action_end(obs, s->rt);
            }
        }
        call_abandon(d, c);
    }
    if (s->rt->dcl) {
        rt_dealer_cluster_caller_left(s);
    }
    rt_observers_action_restore(obs, s->rt, leave_action);
}

const rt_action_mark *rt_dealer_call_action(rt_dealer *d, rt_session *callee, uint64_t invocation)
{
    rt_call *c = callee_call(d, callee, invocation);
    if (c) {
        d->asked = c;
        return &c->action;
    }
    /* A late answer to an abandoned call (a scan, only while a trace runs). */
    for (size_t i = 0; d->late && i < RT_DEALER_LATE_MAX; i++) {
        const rt_late_call *l = &d->late[i];
        if (l->invocation == invocation && l->callee_id == callee->id) {
            return &l->action;
        }
    }
    return NULL;
}

const rt_action_mark *rt_dealer_caller_action(rt_dealer *d, rt_session *caller, uint64_t request)
{
    rt_call *c = caller_call(d, caller, request);
    return c ? &c->action : NULL;
}

/* --- Calls from other nodes (rt_dealer_remote.c) -------------------------------------------- */

const char *rt_dealer_invoke_remote(rt_dealer *d, const rt_crpc_call *call, uint64_t *invocation)
{
    rt_registration *reg = rt_dealer_match_registration(d, call->procedure);
    if (!reg || reg->fn) {
        return WAMP_ERROR_NO_SUCH_PROCEDURE; /* gone meanwhile; router procedures stay local */
    }
    rt_session *callee = pick_callee(reg);
    const char *unfit_uri;
    if (callee_unfit(d, reg, callee, call->procedure, call->ppt != NULL, &unfit_uri)) {
        return unfit_uri;
    }
    bool oom = false;
    json_t *details =
            invocation_details(reg, call->procedure, call->receive_progress, call->disclose,
                               call->caller, call->authid, call->authrole, call->ppt, &oom);
    rt_call *c = oom ? NULL : calloc(1, sizeof(*c));
    if (!c) {
        json_decref(details);
        return WAMP_ERROR_CANCELED;
    }
    rt_router *rt = callee->rt;
    c->invocation = rt_router_next_id(rt);
    c->callee = callee;
    c->receive_progress = call->receive_progress;
    rt_list_init(&c->in_caller); /* the caller's node keeps the deadline */
    if (rt_hmap_insert(&d->calls, &c->by_invocation, rt_hash_u64(c->invocation)) != WAMP_OK) {
        json_decref(details);
        free(c);
        return WAMP_ERROR_CANCELED;
    }
    rt_list_add_tail(&callee->calls_served, &c->in_callee);
    if (call->corr) {
        /* The action rt_dealer_remote.c opened (id and URI) while a trace runs, else its id. */
        rt_observers_action_mark(&rt->observers, rt, &c->action);
        if (!rt_action_mark_is_set(&c->action)) {
            memcpy(c->action.id, call->corr, RT_ACTION_ID_LEN);
        }
    }
    if (call->corr) {
        rt_observers_remote_invoked(&rt->observers, callee, c->invocation, call->corr,
                                    call->procedure);
    }
    rt_payload payload = {
            .ser = call->payload.ser, .args = call->payload.args, .kwargs = call->payload.kwargs};
    wamp_err err = rt_session_send_payload(
            callee, wamp_msg_new_invocation(c->invocation, reg->id, details, NULL, NULL), &payload);
    if (err != WAMP_OK) {
        call_remove(d, c);
        return err == WAMP_ETOOBIG ? WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED : WAMP_ERROR_CANCELED;
    }
    *invocation = c->invocation;
    return NULL;
}

void rt_dealer_cancel_remote(rt_dealer *d, uint64_t invocation, rt_crpc_mode mode)
{
    rt_call *c = find_call(d, invocation);
    if (!c || c->caller) {
        return;
    }
    if (c->killing) {
        /* Told to interrupt already; killnowait: the caller's node waits no more (its caller
         * left, or its deadline passed), and forgot the call: so does this node. */
        if (mode == RT_CRPC_KILLNOWAIT) {
            call_abandon(d, c);
        }
        return;
    }
    bool can = callee_can_interrupt(c);
    if (mode == RT_CRPC_KILL && can) {
        (void)send_interrupt(c, "kill");
        c->killing = true; /* the callee's answer goes to the caller's node */
        return;
    }
    if (mode == RT_CRPC_KILLNOWAIT && can) {
        (void)send_interrupt(c, "killnowait");
    }
    bool answer = mode == RT_CRPC_KILL; /* a callee that cannot be interrupted: as skip */
    rt_router *rt = c->callee->rt;
    call_abandon(d, c);
    if (answer) {
        rt_dealer_cluster_answer(rt, invocation, NULL, WAMP_ERROR_CANCELED, false);
    }
}
