/* rt_broker.h: publish & subscribe for one realm. Subscriptions are exact-match topics; one
 * subscription id per topic, shared by all its subscribers. PUBLISH is fanned out as EVENTs
 * encoded once per serializer (the same bytes are queued to every receiver).
 * Ownership: the broker owns its subscriptions and membership records; sessions only hold the
 * list links (rt_session.subs). Service thread only. */
#ifndef RT_BROKER_H
#define RT_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_realm.h"
#include "wamp_err.h"
#include "wamp_msg.h"

rt_broker *rt_broker_new(rt_realm *realm);
/* Every subscription must be gone (sessions left first). NULL-safe. */
void rt_broker_free(rt_broker *b);

/* Message handlers for a joined session. Peer errors are answered with WAMP ERROR and return
 * WAMP_OK; non-OK means out of memory. */
wamp_err rt_broker_on_publish(rt_broker *b, rt_session *s, const wamp_msg *m);
wamp_err rt_broker_on_subscribe(rt_broker *b, rt_session *s, const wamp_msg *m);
wamp_err rt_broker_on_unsubscribe(rt_broker *b, rt_session *s, const wamp_msg *m);
/* The session leaves: removes it from every subscription (deleting the empty ones). */
void rt_broker_on_leave(rt_broker *b, rt_session *s);

/* Publishes from the router itself (management topics): EVENT to every joined subscriber of
 * topic. Consumes args_take/kwargs_take (NULL allowed). WAMP_ENOMEM. */
wamp_err rt_broker_publish_local(rt_broker *b, const char *topic, json_t *args_take,
                                 json_t *kwargs_take);

/* Tracing helpers: how many sessions a PUBLISH by s to topic reaches; the topic of s's
 * subscription sub_id (borrowed, NULL if none). */
size_t rt_broker_receiver_count(rt_broker *b, rt_session *s, const char *topic, bool exclude_me);
const char *rt_broker_topic_of(rt_session *s, uint64_t sub_id);

/* Number of subscriptions (topics with at least one subscriber). */
size_t rt_broker_subscription_count(const rt_broker *b);

#endif /* RT_BROKER_H */
