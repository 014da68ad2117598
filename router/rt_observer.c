/* rt_observer.c: the ordered observer list (rt_observer.h). */
#include "rt_observer.h"

#include <stdlib.h>

wamp_err rt_observers_add(rt_observers *l, const rt_observer *o)
{
    bool routes = o->call_routed || o->published || o->remote_call || o->remote_invoked ||
                  o->remote_published;
    if ((o->listening && l->actions) || (routes && l->routes)) {
        return WAMP_EEXIST;
    }
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 2;
        rt_observer *nv = realloc(l->v, ncap * sizeof(*nv));
        if (!nv) {
            return WAMP_ENOMEM;
        }
        l->v = nv;
        l->cap = ncap;
    }
    l->v[l->n++] = *o;
    /* Re-pointed after every add: the array may have moved. */
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].listening) {
            l->actions = &l->v[i];
            l->listening = l->v[i].listening;
        }
        if (l->v[i].call_routed || l->v[i].published || l->v[i].remote_call ||
            l->v[i].remote_invoked || l->v[i].remote_published) {
            l->routes = &l->v[i];
        }
    }
    return WAMP_OK;
}

void rt_observers_fini(rt_observers *l)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].detach) {
            l->v[i].detach(l->v[i].ctx);
        }
    }
    free(l->v);
    *l = (rt_observers){0};
}

/* Calls member fn of every observer that has it, with ctx first and the rest of the arguments. */
#define RT_OBSERVERS_EACH(l, fn, ...)                   \
    for (size_t i_ = 0; i_ < (l)->n; i_++) {            \
        if ((l)->v[i_].fn) {                            \
            (l)->v[i_].fn((l)->v[i_].ctx, __VA_ARGS__); \
        }                                               \
    }

void rt_observers_session_joined(const rt_observers *l, rt_realm *r, rt_session *s)
{
    RT_OBSERVERS_EACH(l, session_joined, r, s)
}

void rt_observers_session_left(const rt_observers *l, rt_realm *r, rt_session *s)
{
    RT_OBSERVERS_EACH(l, session_left, r, s)
}

void rt_observers_subscription_added(const rt_observers *l, rt_realm *r, rt_session *s,
                                     const rt_subscription *sub, bool created)
{
    RT_OBSERVERS_EACH(l, subscription_added, r, s, sub, created)
}

void rt_observers_subscription_removed(const rt_observers *l, rt_realm *r, rt_session *s,
                                       const rt_subscription *sub, bool deleted)
{
    RT_OBSERVERS_EACH(l, subscription_removed, r, s, sub, deleted)
}

void rt_observers_registration_added(const rt_observers *l, rt_realm *r, rt_session *s,
                                     uint64_t reg_id, bool created)
{
    RT_OBSERVERS_EACH(l, registration_added, r, s, reg_id, created)
}

void rt_observers_registration_removed(const rt_observers *l, rt_realm *r, rt_session *s,
                                       uint64_t reg_id, const char *uri, bool deleted)
{
    RT_OBSERVERS_EACH(l, registration_removed, r, s, reg_id, uri, deleted)
}

void rt_observers_run_replied(rt_observers *l, rt_router *rt)
{
    l->deferred = false;
    RT_OBSERVERS_EACH(l, action_replied, rt)
}
