/* rt_observer.h: what the routing code reports, for whoever listens. The broker, the dealer and
 * the session FSM say what happened (a session joined or left its realm, a subscription or
 * registration was created or removed, an action's reply is out; what happens to the action
 * being handled: the message completing it, kept for later and resumed) and do not know who
 * listens: the meta API (rt_meta.c) and tracing (rt_trace.c) are listeners; more (a cluster
 * link, a live viewer) register the same way. Each realm holds a list for its own events; the
 * router holds one for router-wide ones (rt_core_int.h). Observers are called in registration
 * order, synchronously, on the service thread, while the routing state they are told about is still
 * readable; they must not re-enter the broker or dealer to change it (queue work, and do it in
 * action_replied).
 *
 * Ownership: a list borrows each observer's ctx; rt_observers_fini() calls every observer's
 * detach(ctx) (if set) so that an observer may own its ctx through it. */
#ifndef RT_OBSERVER_H
#define RT_OBSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rt_broker.h"
#include "rt_router.h"
#include "wamp_err.h"

/* The length of an action's id (tracing's correlation UUID). */
#define RT_ACTION_ID_LEN 16

/* An action kept beyond the message that opened it (a pending call's, a deferred answer's), so
 * that what it causes later (the callee's answer, a timeout, a cancel) belongs to it. Filled by
 * the action observer (rt_observers_action_mark()), opaque to the routing code, which keeps it,
 * moves it by copying (the reference goes with it), hands it back (rt_observers_action_resume())
 * and releases it through the same list (rt_observers_action_forget()) before the router is
 * freed. Zeroed = nothing kept. (24 bytes: a pending call is one glibc size class with it.) */
typedef struct rt_action_mark {
    uint8_t id[RT_ACTION_ID_LEN]; /* the action's id, never all zero; all zero: nothing kept */
    void *ref;                    /* the observer's reference (its URI), or NULL */
} rt_action_mark;

/* Whether m holds an action. */
static inline bool rt_action_mark_is_set(const rt_action_mark *m)
{
    uint64_t a, b;
    memcpy(&a, m->id, sizeof(a));
    memcpy(&b, m->id + sizeof(a), sizeof(b));
    return (a | b) != 0;
}

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
    /* Router-wide, routing reports (rt_observers_call_routed(), _published(): one branch when no
     * observer of the list sets them; one observer at most does): caller's CALL call_id goes to
     * callee as INVOCATION inv_id (before it is sent); publisher's PUBLISH request_id got
     * publication_id (before its EVENTs are sent). */
    void (*call_routed)(void *ctx, rt_session *caller, uint64_t call_id, rt_session *callee,
                        uint64_t inv_id);
    void (*published)(void *ctx, rt_session *publisher, uint64_t request_id,
                      uint64_t publication_id);
    /* An action that crosses nodes (rt_observers_remote_call(), _remote_invoked(),
     * _remote_published()): caller's CALL (or PUBLISH) call_id goes to other nodes, which the
     * action's id goes with; returns that id: corr (the action's, while a trace runs) or, corr
     * NULL, a new one written to buf; NULL: none. On the callee's node: the call with the id corr
     * (of procedure) goes to callee as INVOCATION inv_id (before it is sent). On a subscriber's
     * node: the publication publication_id (of topic) with the id corr is delivered here. */
    const uint8_t *(*remote_call)(void *ctx, rt_session *caller, uint64_t call_id,
                                  const uint8_t *corr, uint8_t buf[RT_ACTION_ID_LEN]);
    void (*remote_invoked)(void *ctx, rt_session *callee, uint64_t inv_id,
                           const uint8_t corr[RT_ACTION_ID_LEN], const char *procedure);
    void (*remote_published)(void *ctx, uint64_t publication_id,
                             const uint8_t corr[RT_ACTION_ID_LEN], const char *topic);
    /* The list is being finalized (rt_observers_fini()): release ctx if the observer owns it. */
    void (*detach)(void *ctx);

    /* Router-wide, the action reports: what happens to the action being handled (the request a
     * received message makes, with all it causes). One observer of the router's list takes them
     * (tracing, rt_trace.c), and only while *listening != 0 (reported through the inline
     * rt_observers_action_*() below: one load and compare when nobody listens). */
    const unsigned *listening;
    /* The next message sent completes the current action. */
    void (*action_last)(void *ctx, rt_router *rt);
    /* Fills *out (zeroed) with the current action; leaves it zeroed if none is open. */
    void (*action_mark)(void *ctx, rt_router *rt, rt_action_mark *out);
    /* Releases m->ref (not NULL). */
    void (*action_forget)(void *ctx, rt_action_mark *m);
    /* Opens the action m kept as the current one, closing the one open. */
    void (*action_resume)(void *ctx, rt_router *rt, const rt_action_mark *m);
    /* Opens the action with id, begun on another node (a PUBLISH whose EVENTs are delivered
     * here, a CALL whose INVOCATION goes out here or whose answer came back), for uri (borrowed;
     * outlives the action) as the current one, closing the one open. node: the other node that
     * answered the action (action-level records name it), or NULL. */
    void (*action_open_at)(void *ctx, rt_router *rt, const uint8_t id[RT_ACTION_ID_LEN],
                           const char *uri, const char *node);
    /* A message that did not come from a session (one from another node) begins or ends: what
     * was read for the message before it (the clock) is not reused. */
    void (*message_edge)(void *ctx, rt_router *rt);
    /* Closes the current action (none open: no-op). */
    void (*action_end)(void *ctx, rt_router *rt);
    /* Moves the current action aside (none is open afterwards) for work that opens actions of its
     * own in the middle of it; returns what action_restore() takes back (NULL on allocation
     * failure: the action is closed instead). */
    void *(*action_stash)(void *ctx, rt_router *rt);
    /* Closes whatever is open and makes the stashed action current again; frees saved. */
    void (*action_restore)(void *ctx, rt_router *rt, void *saved);
} rt_observer;

/* An ordered list of observers; zero-initialized storage is an empty list. */
typedef struct rt_observers {
    rt_observer *v; /* owned, n used of cap */
    size_t n, cap;
    bool deferred; /* an observer queued work for action_replied */
    /* The observer taking the routing reports (call_routed, published), NULL if none: at most
     * one does (rt_observers_add() refuses another with WAMP_EEXIST). */
    const rt_observer *routes;
    /* The observer taking the action reports (it has a listening member), NULL if none, and its
     * listening counter. */
    const rt_observer *actions;
    const unsigned *listening;
} rt_observers;

/* Appends a copy of *o. WAMP_ENOMEM (list unchanged); WAMP_EEXIST if o takes the action reports
 * (o->listening set) or the routing reports (call_routed or published set) and another observer
 * of the list does already. */
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

/* Routing reports (rt_observer.call_routed, .published): one branch when nobody takes them. */
static inline void rt_observers_call_routed(const rt_observers *l, rt_session *caller,
                                            uint64_t call_id, rt_session *callee, uint64_t inv_id)
{
    if (l->routes && l->routes->call_routed) {
        l->routes->call_routed(l->routes->ctx, caller, call_id, callee, inv_id);
    }
}

static inline const uint8_t *rt_observers_remote_call(const rt_observers *l, rt_session *caller,
                                                      uint64_t call_id, const uint8_t *corr,
                                                      uint8_t buf[RT_ACTION_ID_LEN])
{
    if (l->routes && l->routes->remote_call) {
        return l->routes->remote_call(l->routes->ctx, caller, call_id, corr, buf);
    }
    return corr;
}

static inline void rt_observers_remote_invoked(const rt_observers *l, rt_session *callee,
                                               uint64_t inv_id,
                                               const uint8_t corr[RT_ACTION_ID_LEN],
                                               const char *procedure)
{
    if (l->routes && l->routes->remote_invoked) {
        l->routes->remote_invoked(l->routes->ctx, callee, inv_id, corr, procedure);
    }
}

static inline void rt_observers_remote_published(const rt_observers *l, uint64_t publication_id,
                                                 const uint8_t corr[RT_ACTION_ID_LEN],
                                                 const char *topic)
{
    if (l->routes && l->routes->remote_published) {
        l->routes->remote_published(l->routes->ctx, publication_id, corr, topic);
    }
}

static inline void rt_observers_published(const rt_observers *l, rt_session *publisher,
                                          uint64_t request_id, uint64_t publication_id)
{
    if (l->routes && l->routes->published) {
        l->routes->published(l->routes->ctx, publisher, request_id, publication_id);
    }
}

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

/* Action reports (rt_observer.action_*), each a no-op unless the list's action observer is
 * listening. */

/* Whether the action observer is listening now (a trace runs). */
static inline bool rt_observers_listening(const rt_observers *l)
{
    return l->listening && *l->listening;
}

static inline void rt_observers_action_last(const rt_observers *l, rt_router *rt)
{
    if (rt_observers_listening(l)) {
        l->actions->action_last(l->actions->ctx, rt);
    }
}

/* *out stays as it is (zeroed: nothing kept) unless the observer listens. */
static inline void rt_observers_action_mark(const rt_observers *l, rt_router *rt,
                                            rt_action_mark *out)
{
    if (rt_observers_listening(l)) {
        l->actions->action_mark(l->actions->ctx, rt, out);
    }
}

/* Releases m's reference, whether or not the observer listens (it took it while it did); m
 * keeps its id. */
static inline void rt_observers_action_forget(const rt_observers *l, rt_action_mark *m)
{
    if (m->ref) {
        l->actions->action_forget(l->actions->ctx, m);
        m->ref = NULL;
    }
}

/* Opens the action m kept as the current one; true if it did (m holds one and the observer
 * listens): close it with rt_observers_action_end() when its work is done. */
static inline bool rt_observers_action_resume(const rt_observers *l, rt_router *rt,
                                              const rt_action_mark *m)
{
    if (rt_observers_listening(l) && rt_action_mark_is_set(m)) {
        l->actions->action_resume(l->actions->ctx, rt, m);
        return true;
    }
    return false;
}

/* Opens the action id of another node for uri (rt_observer.action_open_at); true if it did (the
 * observer listens): close it with rt_observers_action_end() (or a restore) when done. */
static inline bool rt_observers_action_open_at(const rt_observers *l, rt_router *rt,
                                               const uint8_t id[RT_ACTION_ID_LEN], const char *uri,
                                               const char *node)
{
    if (rt_observers_listening(l)) {
        l->actions->action_open_at(l->actions->ctx, rt, id, uri, node);
        return true;
    }
    return false;
}

/* rt_observer.message_edge, for a message from another node (rt_session_on_message() does the
 * same for a session's). */
static inline void rt_observers_message_edge(const rt_observers *l, rt_router *rt)
{
    if (l->actions) {
        l->actions->message_edge(l->actions->ctx, rt);
    }
}

static inline void rt_observers_action_end(const rt_observers *l, rt_router *rt)
{
    if (l->actions) {
        l->actions->action_end(l->actions->ctx, rt);
    }
}

/* Stashes the current action (rt_observer.action_stash); NULL when there is no action observer.
 * Give the result to rt_observers_action_restore() in any case. */
static inline void *rt_observers_action_stash(const rt_observers *l, rt_router *rt)
{
    return l->actions ? l->actions->action_stash(l->actions->ctx, rt) : NULL;
}

static inline void rt_observers_action_restore(const rt_observers *l, rt_router *rt, void *saved)
{
    if (l->actions) {
        l->actions->action_restore(l->actions->ctx, rt, saved);
    }
}

#endif /* RT_OBSERVER_H */
