/* rt_dealer_reg.c: the dealer's registration table: registrations by exact URI or pattern with
 * their callees, REGISTER and UNREGISTER, router-local procedures, which registration a CALL
 * reaches, and the enumeration the meta API reads.
 *
 * Exact registrations are hashed by URI (the CALL fast path is one lookup); prefix and wildcard
 * ones sit in two lists scanned only when no exact registration matches. A registration holds
 * its callees (rt_reg_callee, also linked in the callee session's regs) in registration order;
 * roundrobin rotates that list. */
#include <stdlib.h>
#include <string.h>

#include "rt_dealer_int.h"
#include "rt_log.h"
#include "rt_match_rank.h"
#include "rt_options.h"
#include "rt_session.h"
#include "wamp_uri.h"

void rt_dealer_registration_free(rt_dealer *d, rt_registration *reg)
{
    if (reg->match == WAMP_MATCH_EXACT) {
        rt_hmap_remove(&d->exact, &reg->by_uri);
    }
    rt_list_remove(&reg->in_patterns);
    rt_hmap_remove(&d->by_id, &reg->by_id);
    RT_LIST_FOREACH_SAFE(it, nx, &reg->callees)
    {
        rt_reg_callee *rc = RT_CONTAINER_OF(it, rt_reg_callee, in_reg);
        rt_list_remove(&rc->in_session);
        rc->session->n_regs--;
        free(rc);
    }
    free(reg->uri);
    free(reg);
}

/* Removes one callee from its registration; the registration goes with its last callee. */
void rt_dealer_reg_callee_remove(rt_dealer *d, rt_reg_callee *rc)
{
    rt_registration *reg = rc->reg;
    rt_observers_registration_removed(rt_realm_observers(d->realm), d->realm, rc->session, reg->id,
                                      reg->uri, reg->n_callees == 1);
    rt_list_remove(&rc->in_reg);
    rt_list_remove(&rc->in_session);
    rc->session->n_regs--;
    free(rc);
    if (rt_realm_router(d->realm)->dcl) {
        rt_dealer_cluster_sync(d, reg, reg->n_callees - 1);
    }
    if (--reg->n_callees == 0) {
        rt_dealer_registration_free(d, reg);
    }
}

size_t rt_dealer_registration_count(const rt_dealer *d)
{
    return d->by_id.count;
}

static rt_registration *find_exact(const rt_dealer *d, const char *uri)
{
    for (rt_hnode *n = rt_hmap_first(&d->exact, rt_hash_str(uri)); n; n = rt_hmap_next(n)) {
        rt_registration *reg = RT_CONTAINER_OF(n, rt_registration, by_uri);
        if (strcmp(reg->uri, uri) == 0) {
            return reg;
        }
    }
    return NULL;
}

/* The registration of exactly (uri, match), or NULL. */
static rt_registration *find_registration(const rt_dealer *d, const char *uri, wamp_match match)
{
    if (match == WAMP_MATCH_EXACT) {
        return find_exact(d, uri);
    }
    const rt_list *head = match == WAMP_MATCH_PREFIX ? &d->prefix : &d->wildcard;
    for (const rt_list *it = head->next; it != head; it = it->next) {
        rt_registration *reg = RT_CONTAINER_OF(it, rt_registration, in_patterns);
        if (strcmp(reg->uri, uri) == 0) {
            return reg;
        }
    }
    return NULL;
}

/* The registration a CALL of uri reaches: exact, else longest prefix, else most specific
 * wildcard (rt_match_rank.h; the earliest registered among equals). NULL if none. */
rt_registration *rt_dealer_match_registration(const rt_dealer *d, const char *uri)
{
    rt_registration *best = find_exact(d, uri);
    if (best) {
        return best;
    }
    size_t best_len = 0;
    for (const rt_list *it = d->prefix.next; it != &d->prefix; it = it->next) {
        rt_registration *reg = RT_CONTAINER_OF(it, rt_registration, in_patterns);
        size_t len = strlen(reg->uri);
        if ((!best || len > best_len) && strncmp(reg->uri, uri, len) == 0) {
            best = reg;
            best_len = len;
        }
    }
    if (best) {
        return best;
    }
    for (const rt_list *it = d->wildcard.next; it != &d->wildcard; it = it->next) {
        rt_registration *reg = RT_CONTAINER_OF(it, rt_registration, in_patterns);
        if (wamp_uri_matches(reg->uri, WAMP_MATCH_WILDCARD, uri) &&
            (!best || rt_wildcard_cmp(reg->uri, best->uri) > 0)) {
            best = reg;
        }
    }
    return best;
}

/* New registration (no callee yet) linked into the maps; NULL on allocation failure (nothing
 * linked). */
static rt_registration *registration_new(rt_dealer *d, const char *uri, wamp_match match,
                                         rt_invoke invoke)
{
    rt_registration *reg = calloc(1, sizeof(*reg));
    if (!reg || !(reg->uri = strdup(uri))) {
        free(reg);
        return NULL;
    }
    rt_router *rt = rt_realm_router(d->realm);
    reg->id = rt_router_next_id(rt);
    reg->match = match;
    reg->invoke = invoke;
    reg->created_us = rt_router_now_us(rt);
    rt_list_init(&reg->in_patterns);
    rt_list_init(&reg->callees);
    if (match == WAMP_MATCH_EXACT &&
        rt_hmap_insert(&d->exact, &reg->by_uri, rt_hash_str(reg->uri)) != WAMP_OK) {
        goto fail;
    }
    if (rt_hmap_insert(&d->by_id, &reg->by_id, rt_hash_u64(reg->id)) != WAMP_OK) {
        if (match == WAMP_MATCH_EXACT) {
            rt_hmap_remove(&d->exact, &reg->by_uri);
        }
        goto fail;
    }
    if (match != WAMP_MATCH_EXACT) {
        rt_list_add_tail(match == WAMP_MATCH_PREFIX ? &d->prefix : &d->wildcard, &reg->in_patterns);
    }
    return reg;
fail:
    free(reg->uri);
    free(reg);
    return NULL;
}

wamp_err rt_dealer_register_local(rt_dealer *d, const char *uri, rt_local_proc_fn fn, void *ctx)
{
    if (find_exact(d, uri)) {
        return WAMP_EEXIST;
    }
    rt_registration *reg = registration_new(d, uri, WAMP_MATCH_EXACT, RT_INVOKE_SINGLE);
    if (!reg) {
        return WAMP_ENOMEM;
    }
    reg->fn = fn;
    reg->fn_ctx = ctx;
    return WAMP_OK;
}

void rt_dealer_unregister_local(rt_dealer *d, const char *uri)
{
    rt_registration *reg = find_exact(d, uri);
    if (reg && reg->fn) {
        rt_dealer_registration_free(d, reg);
    }
}

static bool parse_invoke_name(const char *s, rt_invoke *out)
{
    for (int i = RT_INVOKE_SINGLE; s && i <= RT_INVOKE_LAST; i++) {
        if (strcmp(s, rt_dealer_invoke_name((rt_invoke)i)) == 0) {
            *out = (rt_invoke)i;
            return true;
        }
    }
    return false;
}

static bool parse_invoke(const json_t *v, rt_invoke *out)
{
    if (!v) {
        *out = RT_INVOKE_SINGLE;
        return true;
    }
    return parse_invoke_name(json_string_value(v), out);
}

/* The REGISTER (request) of uri by s once validated: joins or creates the registration. With
 * may_claim and a cluster, a new registration is first claimed cluster-wide (answered later). */
/* A REGISTER waiting for its cluster-wide claim (rt_dealer_cluster_claim()), and the action it
 * belongs to, kept while a trace runs: its REGISTERED or ERROR, sent when the claim is decided
 * (rt_dealer_register_commit()), is of that action (correlation, URI, last). */
typedef struct rt_claim_mark {
    rt_list link;
    uint64_t session, request;
    rt_action_mark action;
} rt_claim_mark;

/* Keeps the current action for s's REGISTER request, now waiting for its claim (nothing when no
 * trace runs, or without memory: its answer is then of no action). */
static void claim_mark_keep(rt_dealer *d, const rt_session *s, uint64_t request)
{
    rt_router *rt = s->rt;
    if (!rt_observers_listening(&rt->observers)) {
        return;
    }
    rt_claim_mark *cm = calloc(1, sizeof(*cm));
    if (!cm) {
        return;
    }
    cm->session = s->id;
    cm->request = request;
    rt_observers_action_mark(&rt->observers, rt, &cm->action);
    rt_list_add_tail(&d->claims, &cm->link);
}

/* The kept action of (session, request)'s REGISTER, unlinked (the caller frees it), or NULL. */
static rt_claim_mark *claim_mark_take(rt_dealer *d, uint64_t session, uint64_t request)
{
    RT_LIST_FOREACH_SAFE(it, nx, &d->claims)
    {
        rt_claim_mark *cm = RT_CONTAINER_OF(it, rt_claim_mark, link);
        if (cm->session == session && cm->request == request) {
            rt_list_remove(it);
            return cm;
        }
    }
    return NULL;
}

static void claim_mark_free(rt_router *rt, rt_claim_mark *cm)
{
    rt_observers_action_forget(&rt->observers, &cm->action);
    free(cm);
}

void rt_dealer_claims_free(rt_dealer *d)
{
    rt_router *rt = rt_realm_router(d->realm);
    RT_LIST_FOREACH_SAFE(it, nx, &d->claims)
    {
        rt_list_remove(it);
        claim_mark_free(rt, RT_CONTAINER_OF(it, rt_claim_mark, link));
    }
}

static wamp_err register_add(rt_dealer *d, rt_session *s, uint64_t request, const char *uri,
                             wamp_match match, rt_invoke invoke, bool may_claim)
{
    rt_registration *reg = find_registration(d, uri, match);
    if (reg) {
        /* Spec "Shared Registration": joining needs the same policy, and single is exclusive. */
        bool member = false;
        RT_LIST_FOREACH_SAFE(it, nx, &reg->callees)
        {
            member = member || RT_CONTAINER_OF(it, rt_reg_callee, in_reg)->session == s;
        }
        if (reg->fn || invoke == RT_INVOKE_SINGLE || reg->invoke != invoke || member) {
            return rt_session_send_error(
                    s, WAMP_MSG_REGISTER, request, WAMP_ERROR_PROCEDURE_ALREADY_EXISTS,
                    reg->fn || member || invoke == RT_INVOKE_SINGLE
                            ? "procedure is already registered"
                            : "procedure is already registered with another invocation policy");
        }
    }
    size_t max_regs = rt_router_config(rt_realm_router(d->realm))->limits.max_registrations;
    if (max_regs && s->n_regs >= max_regs) {
        return rt_session_refuse_limit(s, WAMP_MSG_REGISTER, request, "max_registrations",
                                       max_regs);
    }
    rt_router *rt = rt_realm_router(d->realm);
    if (!reg && may_claim && rt->dcl) {
        wamp_err err = rt_dealer_cluster_claim(d, s, request, uri, match, invoke);
        if (err == WAMP_OK) {
            claim_mark_keep(d, s, request); /* REGISTERED or ERROR when the claim is decided */
        }
        if (err != WAMP_ECLOSED) {
            return err;
        }
    }
    rt_reg_callee *rc = calloc(1, sizeof(*rc));
    if (!rc) {
        return WAMP_ENOMEM;
    }
    if (!reg && !(reg = registration_new(d, uri, match, invoke))) {
        free(rc);
        return WAMP_ENOMEM;
    }
    rc->reg = reg;
    rc->session = s;
    rc->at_ms = rt->dcl ? rt_dealer_wall_ms() : 0;
    rt_list_add_tail(&reg->callees, &rc->in_reg);
    rt_list_add_tail(&s->regs, &rc->in_session);
    s->n_regs++;
    reg->n_callees++;
    rt_observers_registration_added(rt_realm_observers(d->realm), d->realm, s, reg->id,
                                    reg->n_callees == 1);
    if (rt->dcl) {
        rt_dealer_cluster_sync(d, reg, reg->n_callees);
    }
    rt_observers_action_last(&s->rt->observers, s->rt);
    return rt_session_send(s, wamp_msg_new_registered(request, reg->id));
}

wamp_err rt_dealer_on_register(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    char why[96];
    if (!rt_options_check(WAMP_MSG_REGISTER, m->dict, why, sizeof(why))) {
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id, WAMP_ERROR_INVALID_ARGUMENT, why);
    }
    json_t *match_v = json_object_get(m->dict, "match");
    wamp_match match = WAMP_MATCH_EXACT;
    rt_invoke invoke;
    if ((match_v &&
         !(json_is_string(match_v) && wamp_match_parse(json_string_value(match_v), &match))) ||
        !parse_invoke(json_object_get(m->dict, "invoke"), &invoke)) {
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     "match must be exact, prefix or wildcard; invoke single, "
                                     "roundrobin, random, first or last");
    }
    /* Patterns may have empty components: wildcards, or a prefix ending in "." */
    if (!wamp_uri_is_valid(m->uri,
                           match == WAMP_MATCH_EXACT ? WAMP_URI_LOOSE : WAMP_URI_LOOSE_EMPTY)) {
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id, WAMP_ERROR_INVALID_URI,
                                     "invalid procedure URI");
    }
    if (strncmp(m->uri, "wamp.", 5) == 0) {
        /* The router's own namespace (meta API), as in Crossbar. */
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id, WAMP_ERROR_INVALID_URI,
                                     "register of a restricted procedure URI (wamp.*)");
    }
    if (!rt_realm_authorize(d->realm, s->authrole, RT_ACTION_REGISTER, m->uri)) {
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "REGISTER denied", s->id,
                            "REGISTER of %s denied for role %s", m->uri, s->authrole);
        return rt_session_send_error(s, WAMP_MSG_REGISTER, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                     "not authorized to register this procedure");
    }
    return register_add(d, s, m->id, m->uri, match, invoke, true);
}

/* The answer to a REGISTER whose claim is decided (cl), to s (NULL: gone). */
static void commit_answer(rt_dealer *d, rt_session *s, const rt_creg_claim *cl)
{
    rt_invoke invoke = RT_INVOKE_SINGLE;
    parse_invoke_name(cl->invoke, &invoke);
    if (s && cl->err == WAMP_EEXIST) {
        (void)rt_session_send_error(s, WAMP_MSG_REGISTER, cl->request,
                                    WAMP_ERROR_PROCEDURE_ALREADY_EXISTS,
                                    "procedure is already registered on another node");
    } else if (s) {
        (void)register_add(d, s, cl->request, cl->uri, cl->match, invoke, false);
    }
}

void rt_dealer_register_commit(rt_dealer *d, rt_session *s, const rt_creg_claim *cl)
{
    rt_router *rt = rt_realm_router(d->realm);
    rt_claim_mark *cm = claim_mark_take(d, cl->session, cl->request);
    if (cm) {
        /* The answer belongs to the REGISTER's action, not to what is being handled now. */
        void *saved = rt_observers_action_stash(&rt->observers, rt);
        (void)rt_observers_action_resume(&rt->observers, rt, &cm->action);
        commit_answer(d, s, cl);
        rt_observers_action_restore(&rt->observers, rt, saved);
        claim_mark_free(rt, cm);
    } else {
        commit_answer(d, s, cl);
    }
    if (cl->err == WAMP_EEXIST) {
        return;
    }
    if (cl->err == WAMP_OK) {
        /* Claimed: now held by this node's registration, or released (the session left, or
         * the REGISTER failed after all). */
        rt_registration *reg = find_registration(d, cl->uri, cl->match);
        if (!reg || reg->fn) {
            rt_cluster_regs_set(rt_realm_router(d->realm)->dcl->regs, rt_realm_name(d->realm),
                                cl->uri, cl->match, cl->invoke, 0, 0, 0);
        }
    }
}

static rt_registration *find_by_id(const rt_dealer *d, uint64_t id)
{
    for (rt_hnode *n = rt_hmap_first(&d->by_id, rt_hash_u64(id)); n; n = rt_hmap_next(n)) {
        rt_registration *reg = RT_CONTAINER_OF(n, rt_registration, by_id);
        if (reg->id == id) {
            return reg;
        }
    }
    return NULL;
}

/* Session s's membership of registration reg_id in d, or NULL. It walks whichever is shorter:
 * the registration's callees or the session's registrations (up to limits.max_registrations,
 * which walking for each UNREGISTER made n^2 steps). */
static rt_reg_callee *find_callee(const rt_dealer *d, rt_session *s, uint64_t reg_id)
{
    rt_registration *reg = find_by_id(d, reg_id);
    if (!reg) {
        return NULL;
    }
    bool by_reg = reg->n_callees < s->n_regs;
    rt_list *head = by_reg ? &reg->callees : &s->regs;
    for (rt_list *it = head->next; it != head; it = it->next) {
        rt_reg_callee *rc = by_reg ? RT_CONTAINER_OF(it, rt_reg_callee, in_reg)
                                   : RT_CONTAINER_OF(it, rt_reg_callee, in_session);
        if (rc->session == s && rc->reg == reg) {
            return rc;
        }
    }
    return NULL;
}

wamp_err rt_dealer_on_unregister(rt_dealer *d, rt_session *s, const wamp_msg *m)
{
    rt_reg_callee *rc = find_callee(d, s, m->id2);
    if (rc) {
        /* Calls already invoked stay pending on the callee and complete normally. */
        rt_dealer_reg_callee_remove(d, rc);
        rt_observers_action_last(&s->rt->observers, s->rt);
        return rt_session_send(s, wamp_msg_new_unregistered(m->id));
    }
    return rt_session_send_error(s, WAMP_MSG_UNREGISTER, m->id, WAMP_ERROR_NO_SUCH_REGISTRATION,
                                 "no such registration for this session");
}

const char *rt_dealer_procedure_of(rt_session *s, uint64_t reg_id)
{
    rt_reg_callee *rc = s->realm ? find_callee(rt_realm_dealer(s->realm), s, reg_id) : NULL;
    return rc ? rc->reg->uri : NULL;
}

/* --- Enumeration ----------------------------------------------------------------------------- */

static void reg_info(const rt_registration *reg, rt_reg_info *out)
{
    out->id = reg->id;
    out->uri = reg->uri;
    out->match = reg->match;
    out->invoke = rt_dealer_invoke_name(reg->invoke);
    out->n_callees = reg->n_callees;
    out->created_us = reg->created_us;
}

void rt_dealer_foreach(const rt_dealer *d, bool (*fn)(void *ctx, const rt_reg_info *r), void *ctx)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(&d->by_id); it.node;
         rt_hmap_iter_next(&d->by_id, &it)) {
        rt_reg_info info;
        reg_info(RT_CONTAINER_OF(it.node, rt_registration, by_id), &info);
        if (!fn(ctx, &info)) {
            return;
        }
    }
}

bool rt_dealer_get(const rt_dealer *d, uint64_t reg_id, rt_reg_info *out)
{
    rt_registration *reg = find_by_id(d, reg_id);
    if (reg) {
        reg_info(reg, out);
    }
    return reg != NULL;
}

uint64_t rt_dealer_lookup(const rt_dealer *d, const char *uri, wamp_match match)
{
    rt_registration *reg = find_registration(d, uri, match);
    return reg ? reg->id : 0;
}

uint64_t rt_dealer_match(const rt_dealer *d, const char *uri)
{
    rt_registration *reg = rt_dealer_match_registration(d, uri);
    return reg ? reg->id : 0;
}

size_t rt_dealer_callees(const rt_dealer *d, uint64_t reg_id, uint64_t *ids, size_t max)
{
    rt_registration *reg = find_by_id(d, reg_id);
    if (!reg) {
        return 0;
    }
    size_t i = 0;
    for (const rt_list *it = reg->callees.next; it != &reg->callees; it = it->next, i++) {
        if (i < max) {
            ids[i] = RT_CONTAINER_OF(it, rt_reg_callee, in_reg)->session->id;
        }
    }
    return i;
}
