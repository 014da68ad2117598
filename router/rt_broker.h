/* rt_broker.h: publish & subscribe for one realm (spec Basic Profile pub/sub plus the Advanced
 * Profile features pattern_based_subscription, subscriber_blackwhite_listing,
 * publisher_identification, publisher_exclusion and event_retention).
 *
 * Subscriptions: one subscription id per (topic or pattern, match policy), shared by all its
 * subscribers. A PUBLISH reaches every subscription whose pattern matches the topic, and each of
 * those sends its own EVENT (so a session subscribed through several matching subscriptions
 * receives one EVENT per subscription, as the spec says). EVENTs of one subscription are encoded
 * once per serializer (the same bytes are queued to every receiver); pattern subscriptions carry
 * Details.topic, disclosed publications Details.publisher/publisher_authid/publisher_authrole.
 *
 * Cost: an exact topic is one hash lookup. Pattern subscriptions are indexed by *shape*: prefix
 * patterns by their length, wildcard patterns by (component count, positions of the empty
 * components). A PUBLISH makes one hash lookup per distinct prefix length up to the topic's
 * length and one per wildcard shape with the topic's component count, and nothing at all while
 * the realm has no pattern subscription.
 *
 * Event retention: PUBLISH options.retain stores the event as the topic's retained one (per
 * realm, bounded by limits.max_retained_topics / max_retained_bytes); one with black/white lists
 * keeps the topic's earlier ones behind it for the sessions its lists leave out. SUBSCRIBE
 * options.get_retained delivers, after SUBSCRIBED, for every topic the subscription matches, the
 * newest retained event whose publication's black/white lists admit the subscriber
 * (Details.retained).
 *
 * Ownership: the broker owns its subscriptions, membership records and retained events; sessions
 * only hold the list links (rt_session.subs). Service thread only; the fan-out is not re-entrant
 * (nothing it calls publishes). */
#ifndef RT_BROKER_H
#define RT_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_realm.h"
#include "rt_session.h"
#include "wamp_err.h"
#include "wamp_msg.h"
#include "wamp_uri.h"

typedef struct rt_subscription rt_subscription;

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
 * every subscription matching topic. Consumes args_take/kwargs_take (NULL allowed).
 * WAMP_ENOMEM. */
wamp_err rt_broker_publish_local(rt_broker *b, const char *topic, json_t *args_take,
                                 json_t *kwargs_take);

/* Meta events (rt_meta.c): rt_broker_publish_local() without kwargs, and mark_last: the last
 * EVENT completes the current traced action. Consumes args_take. WAMP_ENOMEM. */
wamp_err rt_broker_publish_meta(rt_broker *b, const char *topic, json_t *args_take, bool mark_last);

/* Tracing helpers. Whether the PUBLISH m by s would send any EVENT, over every matching
 * subscription, honouring exclude_me and the black/white lists (false for a PUBLISH the broker
 * would refuse for its options or URI); it stops at the first receiver. How many EVENTs a
 * PUBLISH by s (NULL: by the router) to topic without options but exclude_me would send. The
 * topic or pattern of s's subscription sub_id (borrowed, NULL if none). */
bool rt_broker_publish_has_receiver(rt_broker *b, rt_session *s, const wamp_msg *m);
size_t rt_broker_receiver_count(rt_broker *b, rt_session *s, const char *topic, bool exclude_me);
const char *rt_broker_topic_of(rt_session *s, uint64_t sub_id);

/* Event retention: retained topics and their bytes (as counted against the limits). */
size_t rt_broker_retained_count(const rt_broker *b);
size_t rt_broker_retained_bytes(const rt_broker *b);

/* --- Enumeration (for the subscription meta API) ------------------------------------------
 * Borrowed pointers, valid until the next message is handled by the broker (a subscription is
 * deleted with its last subscriber). */

/* Number of subscriptions (each has at least one subscriber). */
size_t rt_broker_subscription_count(const rt_broker *b);
/* Calls fn for every subscription, in no particular order; stops early when fn returns false.
 * fn must not change the broker. */
void rt_broker_foreach(const rt_broker *b, bool (*fn)(const rt_subscription *sub, void *ctx),
                       void *ctx);
/* The subscription with this id, or NULL. */
const rt_subscription *rt_broker_find(const rt_broker *b, uint64_t id);
/* The subscription for exactly (uri, match) (meta "lookup"), or NULL. */
const rt_subscription *rt_broker_lookup(const rt_broker *b, const char *uri, wamp_match match);
/* The subscriptions a PUBLISH to topic would reach (meta "match"): writes up to max of them to
 * out and returns how many there are (possibly more than max). */
size_t rt_broker_match(rt_broker *b, const char *topic, const rt_subscription **out, size_t max);

uint64_t rt_subscription_id(const rt_subscription *sub);
const char *rt_subscription_uri(const rt_subscription *sub);
wamp_match rt_subscription_match(const rt_subscription *sub);
/* The router clock (rt_router_now_us) when the subscription was created. */
uint64_t rt_subscription_created_us(const rt_subscription *sub);
size_t rt_subscription_subscriber_count(const rt_subscription *sub);
/* Borrowed: subscriber i (0 <= i < count), in subscription order. */
rt_session *rt_subscription_subscriber(const rt_subscription *sub, size_t i);

/* --- Other nodes (router/cluster/rt_cluster_broker.h) ---------------------------------------
 * A cluster hooks itself to the broker with rt_broker_set_remote(): it is told of every client
 * PUBLISH (after the local fan-out, before PUBLISHED) and of every SUBSCRIBE with get_retained
 * (after this node's answer); it hands publications and retained events of other nodes back with
 * rt_broker_deliver() and rt_broker_deliver_retained(). */

#define RT_BROKER_CORRELATION_LEN 16 /* bytes of an action's correlation (tracing's UUID) */

/* A publication as it travels between nodes. Every pointer is borrowed for the call. */
typedef struct rt_broker_pub {
    const char *topic;
    uint64_t publication;
    rt_payload payload;          /* Arguments/ArgumentsKw as bytes (ser 0: none, or below) */
    const json_t *args, *kwargs; /* the payload as values, when it is not bytes */
    const json_t *options;       /* PUBLISH.Options: black/white lists, ppt_* (NULL: none) */
    bool disclose;               /* the publisher is disclosed: */
    uint64_t publisher;          /*   its session id, authid and authrole (NULL: none) */
    const char *publisher_authid, *publisher_authrole;
    bool retain;                /* the publisher asked to retain it (event_retention) */
    uint64_t retained_ns;       /* retained here then (wall clock); 0: not (or not asked) */
    const uint8_t *correlation; /* RT_BROKER_CORRELATION_LEN bytes while a trace runs, or NULL */
    /* A client's publication (on its node only): its session and PUBLISH id; NULL / 0 else. */
    rt_session *session;
    uint64_t request;
} rt_broker_pub;

/* The correlation a client's publication p carries to the nodes it goes to: its trace's
 * (p->correlation), or one the wire capture chooses for it then (written to buf), so that every
 * node's capture names the action alike (rt_observer.remote_call). Ask only when p does go to
 * another node. */
const uint8_t *rt_broker_pub_correlation(const rt_broker_pub *p,
                                         uint8_t buf[RT_BROKER_CORRELATION_LEN]);

typedef struct rt_broker_remote {
    /* A client's publication p went to this node's subscribers. */
    void (*published)(void *ctx, rt_broker *b, const rt_broker_pub *p);
    /* s subscribed to sub with get_retained; this node's retained events went out. */
    void (*get_retained)(void *ctx, rt_broker *b, rt_session *s, const rt_subscription *sub);
} rt_broker_remote;

/* Sets the hooks (ops and ctx borrowed; NULL: none). */
void rt_broker_set_remote(rt_broker *b, const rt_broker_remote *ops, void *ctx);
/* Publication p of another node to this node's subscribers, as a client's PUBLISH with
 * p->options would reach them (black/white lists, disclosure, ppt; never retained here). A p
 * whose options are not valid reaches nobody. WAMP_ENOMEM. */
wamp_err rt_broker_deliver(rt_broker *b, const rt_broker_pub *p);
/* Retained event p of another node to session session_id's subscription sub_id (an EVENT with
 * Details.retained), if both are still there. WAMP_ENOMEM. */
wamp_err rt_broker_deliver_retained(rt_broker *b, uint64_t session_id, uint64_t sub_id,
                                    const rt_broker_pub *p);
/* Calls fn(arg, p) for every retained event whose topic (uri, match) matches and whose
 * publication's black/white lists admit session (id, authid, authrole). */
void rt_broker_retained_foreach(rt_broker *b, const char *uri, wamp_match match, uint64_t id,
                                const char *authid, const char *authrole,
                                void (*fn)(void *arg, const rt_broker_pub *p), void *arg);
/* Calls fn(arg, topic, wall_ns) for every topic's retained event for all (without black/white
 * lists): its topic and when it was retained (wall clock). Topics holding listed events alone are
 * left out: a listed event replaces no other (rt_broker_retained.c), so other nodes need not hear
 * of it. */
void rt_broker_retained_times(rt_broker *b,
                              void (*fn)(void *arg, const char *topic, uint64_t wall_ns),
                              void *arg);
/* Whether topic's newest retained event carries black/white lists. */
bool rt_broker_retained_is_listed(const rt_broker *b, const char *topic);
/* Another node retained an event for all on topic at wall-clock time before_ns
 * (rt_router_wall_ns()): this node's retained events of topic retained earlier go (at before_ns
 * too, unless wins_tie: this node's id sorts after the other's); later listed ones stay, for the
 * sessions their lists admit. Returns whether this node's event for all stays (it was retained
 * later), with when in *kept_ns: the cluster then tells the others (rt_cluster_broker.c), so
 * that of the events for all retained on one topic the latest by the nodes' wall clocks alone
 * remains, in whatever order the notices cross. */
bool rt_broker_retained_drop(rt_broker *b, const char *topic, uint64_t before_ns, bool wins_tie,
                             uint64_t *kept_ns);

#endif /* RT_BROKER_H */
