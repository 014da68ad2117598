/* rt_meta.h: the WAMP meta API (spec "Session Meta API", "Subscriptions Meta API",
 * "Registrations Meta API") of one realm: router-local procedures wamp.session.*,
 * wamp.subscription.* and wamp.registration.*, and the meta events published on the realm.
 *
 * Every configured realm gets the procedures (rt_meta_attach(), from rt_router_new()); the
 * management realm does not (its role "admin" may only use crossbarfabriccenter.* URIs).
 * Procedures and topics go through the realm's permissions like any other URI: a role needs
 * "call" on wamp.session.count, "subscribe" on wamp.session.on_join, and so on.
 *
 * Events go to every subscriber on the realm where they happen, except a session that is
 * leaving (it hears nothing of its own leave). Nothing is built when nobody subscribes to a
 * topic (one receiver count), so joins and subscriptions cost no allocation for the meta API
 * when nobody listens.
 *
 * Subscriptions and registrations under "wamp." (the meta topics themselves) and router-local
 * procedures are invisible to the meta API and fire no meta events (as in Crossbar, which hides
 * these "protected" URIs).
 *
 * Ordering and tracing: the hooks below only queue their events (in the router); the queue is
 * published by rt_meta_flush() once the action's reply has gone out (after WELCOME, SUBSCRIBED,
 * REGISTERED, UNSUBSCRIBED, UNREGISTERED, the GOODBYE reply, a kill's RESULT), so a client
 * always knows the subscription an EVENT is for, and every event carries the correlation of the
 * action that caused it. While the action has events queued, none of its messages is marked
 * correlation_is_last; the last EVENT published by the flush is. A connection lost without GOODBYE
 * opens an action of its own for its leave events (only while a trace runs). Spec ordering:
 * on_create before on_subscribe / on_register; on_unsubscribe / on_unregister before on_delete.
 *
 * PRIVATE to the router core (includes rt_core_int.h in its .c). Service thread only. */
#ifndef RT_META_H
#define RT_META_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_broker.h"
#include "rt_realm.h"
#include "rt_session.h"
#include "wamp_err.h"

/* Registers the meta procedures on r's dealer. WAMP_ENOMEM; WAMP_EEXIST (already attached). */
wamp_err rt_meta_attach(rt_realm *r);

/* Publishes the queued events in order (call when rt->meta_n > 0, with the action that caused
 * them still open); the last EVENT that reaches anyone completes the traced action. */
void rt_meta_flush(rt_router *rt);
/* Drops queued events and frees the queue (rt_router_free). */
void rt_meta_discard(rt_router *rt);

/* s has joined its realm (before WELCOME): wamp.session.on_join. */
void rt_meta_on_join(rt_session *s);
/* s is leaving its realm (identity still set, subscriptions and registrations already gone):
 * wamp.session.on_leave. */
void rt_meta_on_leave(rt_session *s);

/* s was added to sub (created: sub is new): on_create (if created), then on_subscribe. */
void rt_meta_on_subscribe(rt_realm *r, rt_session *s, const rt_subscription *sub, bool created);
/* s is being removed from sub (deleted: it was the last subscriber; sub still readable):
 * on_unsubscribe, then on_delete (if deleted). */
void rt_meta_on_unsubscribe(rt_realm *r, rt_session *s, const rt_subscription *sub, bool deleted);
/* The same for registrations (reg_id of the registration, created / deleted as above). */
void rt_meta_on_register(rt_realm *r, rt_session *s, uint64_t reg_id, bool created);
void rt_meta_on_unregister(rt_realm *r, rt_session *s, uint64_t reg_id, const char *uri,
                           bool deleted);

/* Meta topics. */
#define RT_META_SESSION_ON_JOIN           "wamp.session.on_join"
#define RT_META_SESSION_ON_LEAVE          "wamp.session.on_leave"
#define RT_META_SUBSCRIPTION_ON_CREATE    "wamp.subscription.on_create"
#define RT_META_SUBSCRIPTION_ON_SUBSCRIBE "wamp.subscription.on_subscribe"
#define RT_META_SUBSCRIPTION_ON_UNSUB     "wamp.subscription.on_unsubscribe"
#define RT_META_SUBSCRIPTION_ON_DELETE    "wamp.subscription.on_delete"
#define RT_META_REGISTRATION_ON_CREATE    "wamp.registration.on_create"
#define RT_META_REGISTRATION_ON_REGISTER  "wamp.registration.on_register"
#define RT_META_REGISTRATION_ON_UNREG     "wamp.registration.on_unregister"
#define RT_META_REGISTRATION_ON_DELETE    "wamp.registration.on_delete"

#endif /* RT_META_H */
