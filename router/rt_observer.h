/* rt_observer.h: what the routing code reports, for whoever listens. The broker, the dealer and
 * the session FSM say what happened (a session joined or left its realm, a subscription or
 * registration was created or removed, an action's reply is out) and do not know who listens:
 * the meta API (rt_meta.c) is one listener; more (a cluster link, a live viewer) register the
 * same way. Each realm holds a list for its own events; the router holds one for router-wide
 * ones (rt_core_int.h). Observers are called in registration order, synchronously, on the
 * service thread, while the routing state they are told about is still readable; they must not
 * re-enter the broker or dealer to change it (queue work, and do it in action_replied).
 *
 * Ownership: a list borrows each observer's ctx; rt_observers_fini() calls every observer's
 * detach(ctx) (if set) so that an observer may own its ctx through it. */
#ifndef RT_OBSERVER_H
#define RT_OBSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_broker.h"
#include "rt_router.h"
#include "wamp_err.h"

/* One observer: ctx and the events it wants (NULL members are skipped). */
typedef struct rt_observer {
    void *ctx;
    /* s has joined realm r (identity set, before WELCOME). */
    void (*session_joined)(void *ctx, rt_realm *r, rt_session *s);
    /* s is leaving realm r (identity still set, subscriptions and registrations already gone). */
    void (*session_left)(void *ctx, rt_realm *r, rt_session *s);
    /* s was added to sub (created: sub is new). */
    void (*subscription_added)(void *ctx, rt_realm *r, rt_session *s, const rt_subscription *sub,
                               bool created);
    /* s is being removed from sub (deleted: it was the last subscriber; sub still readable). */
    void (*subscription_removed)(void *ctx, rt_realm *r, rt_session *s, const rt_subscription *sub,
                                 bool deleted);
    /* s was added as a callee of registration reg_id (created: the registration is new). */
    void (*registration_added)(void *ctx, rt_realm *r, rt_session *s, uint64_t reg_id,
                               bool created);
    /* s is being removed from registration reg_id of uri (deleted: it was the last callee). */
    void (*registration_removed)(void *ctx, rt_realm *r, rt_session *s, uint64_t reg_id,
                                 const char *uri, bool deleted);
    /* Router-wide: the reply of the action being handled is out (called only after an observer
     * asked for it with rt_observers_defer()); the action is still open. */
    void (*action_replied)(void *ctx, rt_router *rt);
    /* The list is being finalized (rt_observers_fini()): release ctx if the observer owns it. */
    void (*detach)(void *ctx);
} rt_observer;

/* An ordered list of observers; zero-initialized storage is an empty list. */
typedef struct rt_observers {
    rt_observer *v; /* owned, n used of cap */
    size_t n, cap;
    bool deferred; /* an observer queued work for action_replied */
} rt_observers;

/* Appends a copy of *o. WAMP_ENOMEM (list unchanged). */
wamp_err rt_observers_add(rt_observers *l, const rt_observer *o);
/* Calls every detach (in registration order) and frees the list; it is empty afterwards. */
void rt_observers_fini(rt_observers *l);

/* Event reports: each calls the matching member of every observer, in registration order. */
void rt_observers_session_joined(const rt_observers *l, rt_realm *r, rt_session *s);
void rt_observers_session_left(const rt_observers *l, rt_realm *r, rt_session *s);
void rt_observers_subscription_added(const rt_observers *l, rt_realm *r, rt_session *s,
                                     const rt_subscription *sub, bool created);
void rt_observers_subscription_removed(const rt_observers *l, rt_realm *r, rt_session *s,
                                       const rt_subscription *sub, bool deleted);
void rt_observers_registration_added(const rt_observers *l, rt_realm *r, rt_session *s,
                                     uint64_t reg_id, bool created);
void rt_observers_registration_removed(const rt_observers *l, rt_realm *r, rt_session *s,
                                       uint64_t reg_id, const char *uri, bool deleted);

/* An observer has queued work for the end of the current action: l's action_replied runs once
 * the reply is out (rt_observers_replied()). */
static inline void rt_observers_defer(rt_observers *l)
{
    l->deferred = true;
}

/* The action's reply is out: runs action_replied of every observer if any deferred work (one
 * branch otherwise), and clears the request first. */
void rt_observers_run_replied(rt_observers *l, rt_router *rt);

static inline void rt_observers_replied(rt_observers *l, rt_router *rt)
{
    if (l->deferred) {
        rt_observers_run_replied(l, rt);
    }
}

#endif /* RT_OBSERVER_H */
