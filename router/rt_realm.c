/* rt_realm.c: realm = name + role policy + members + observers; its broker and dealer are made
 * and freed by the router (rt_router.c), the realm only points at them. */
#include "rt_realm.h"

#include <stdlib.h>
#include <string.h>

#include "rt_core_int.h"
#include "wamp_uri.h"

struct rt_realm {
    rt_router *rt;
    const rt_realm_config *cfg;
    rt_broker *broker;
    rt_dealer *dealer;
    rt_list members;
    size_t n_members;
    rt_observers observers; /* what the broker, dealer and sessions report (rt_observer.h) */
};

rt_realm *rt_realm_new(rt_router *rt, const rt_realm_config *cfg)
{
    rt_realm *r = calloc(1, sizeof(*r));
    if (!r) {
        return NULL;
    }
    r->rt = rt;
    r->cfg = cfg;
    rt_list_init(&r->members);
    return r;
}

void rt_realm_set_routing(rt_realm *r, rt_broker *b, rt_dealer *d)
{
    r->broker = b;
    r->dealer = d;
}

void rt_realm_free(rt_realm *r)
{
    if (!r) {
        return;
    }
    rt_observers_fini(&r->observers);
    free(r);
}

const char *rt_realm_name(const rt_realm *r)
{
    return r->cfg->name;
}

rt_broker *rt_realm_broker(rt_realm *r)
{
    return r->broker;
}

rt_dealer *rt_realm_dealer(rt_realm *r)
{
    return r->dealer;
}

rt_router *rt_realm_router(rt_realm *r)
{
    return r->rt;
}

rt_observers *rt_realm_observers(rt_realm *r)
{
    return &r->observers;
}

size_t rt_realm_member_count(const rt_realm *r)
{
    return r->n_members;
}

bool rt_realm_has_meta_api(const rt_realm *r)
{
    return !r->cfg->no_meta_api;
}

void rt_realm_member_add(rt_realm *r, rt_session *s)
{
    rt_list_add_tail(&r->members, &s->in_realm);
    r->n_members++;
}

void rt_realm_member_remove(rt_realm *r, rt_session *s)
{
    rt_list_remove(&s->in_realm);
    r->n_members--;
}

rt_list *rt_realm_members(rt_realm *r)
{
    return &r->members;
}

static const rt_role *find_role(const rt_realm *r, const char *authrole)
{
    for (size_t i = 0; i < r->cfg->n_roles; i++) {
        if (strcmp(r->cfg->roles[i].name, authrole) == 0) {
            return &r->cfg->roles[i];
        }
    }
    return NULL;
}

bool rt_realm_has_role(const rt_realm *r, const char *authrole)
{
    return authrole && find_role(r, authrole) != NULL;
}

static bool perm_allows(const rt_permission *p, rt_action action)
{
    switch (action) {
    case RT_ACTION_CALL:
        return p->allow_call;
    case RT_ACTION_REGISTER:
        return p->allow_register;
    case RT_ACTION_PUBLISH:
        return p->allow_publish;
    case RT_ACTION_SUBSCRIBE:
        return p->allow_subscribe;
    }
    return false;
}

static size_t nonempty_components(const char *pattern)
{
    size_t n = 0;
    bool in = false;
    for (const char *c = pattern;; c++) {
        if (*c == '.' || *c == '\0') {
            n += in ? 1 : 0;
            in = false;
            if (*c == '\0') {
                return n;
            }
        } else {
            in = true;
        }
    }
}

const rt_permission *rt_realm_permission(const rt_realm *r, const char *authrole, const char *uri)
{
    const rt_role *role = authrole ? find_role(r, authrole) : NULL;
    if (!role) {
        return NULL;
    }
    /* Precedence as in Crossbar's static authorizer: exact, then longest prefix, then the most
     * specific wildcard. */
    const rt_permission *best = NULL;
    int best_rank = 0; /* 3 exact, 2 prefix, 1 wildcard */
    size_t best_len = 0;
    for (size_t i = 0; i < role->n_permissions; i++) {
        const rt_permission *p = &role->permissions[i];
        if (!wamp_uri_matches(p->uri, p->match, uri)) {
            continue;
        }
        int rank = p->match == WAMP_MATCH_EXACT ? 3 : p->match == WAMP_MATCH_PREFIX ? 2 : 1;
        size_t len = rank == 2 ? strlen(p->uri) : rank == 1 ? nonempty_components(p->uri) : 0;
        if (!best || rank > best_rank || (rank == best_rank && len > best_len)) {
            best = p;
            best_rank = rank;
            best_len = len;
        }
    }
    return best;
}

bool rt_realm_authorize(const rt_realm *r, const char *authrole, rt_action action, const char *uri)
{
    const rt_permission *best = rt_realm_permission(r, authrole, uri);
    return best && perm_allows(best, action);
}
