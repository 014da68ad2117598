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
 * Events come from the realm's observer list (rt_observer.h): the broker, dealer and session
 * report, this module listens. Ordering and tracing: the observer only queues the events; the
 * queue is published once the action's reply has gone out (the router's action_replied event:
 * after WELCOME, SUBSCRIBED, REGISTERED, UNSUBSCRIBED, UNREGISTERED, the GOODBYE reply, a kill's
 * RESULT), so a client always knows the subscription an EVENT is for, and every event carries the
 * correlation of the action that caused it. While the action has events queued, none of its
 * messages is marked correlation_is_last; the last EVENT published from the queue is. A connection
 * lost without GOODBYE opens an action of its own for its leave events (only while a trace runs).
 * Spec ordering: on_create before on_subscribe / on_register; on_unsubscribe / on_unregister before
 * on_delete.
 *
 * PRIVATE to the router core (includes rt_core_int.h in its .c). Service thread only. */
#ifndef RT_META_H
#define RT_META_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_dealer.h"
#include "rt_router.h"
#include "wamp_err.h"

/* Makes the meta API of rt (after its realms exist): the procedures on every realm that serves
 * it (rt_realm_has_meta_api()), and the observer of every realm's events (rt_observer.h) that
 * queues the meta events; the router's observer list owns the queue and publishes it after each
 * action's reply. Call once (rt_router_new() does). WAMP_ENOMEM; what was registered before a
 * failure is freed with the router. */
wamp_err rt_meta_attach(rt_router *rt);

/* The procedure rt_meta_attach() registers for uri (ctx: the realm), or NULL for a URI that is
 * not a meta procedure. The cluster's meta API (router/cluster/rt_meta_cluster.h) runs it for this
 * node's answer; all but the wamp.session.kill* ones accept a NULL caller. */
rt_local_proc_fn rt_meta_proc(const char *uri);

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
