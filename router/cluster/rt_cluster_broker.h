/* rt_cluster_broker.h: publish/subscribe across the nodes of a cluster (rt_cluster.h), on top of
 * every configured realm's broker (rt_broker.h). Socket-free: tested with the fake bus.
 *
 * Interest: each node's subscriptions are its entries in the replicated table "subs"
 * (rt_cluster_table.h), one entry per distinct (realm, match policy, topic or pattern), not per
 * subscriber: the key is the JSON array [realm, match, uri], the value is empty. The entry is put
 * when the realm's subscription is created and removed when its last subscriber leaves (learnt
 * as an observer of each realm, rt_observer.h).
 *
 * Events: after a client's PUBLISH went to this node's subscribers, the broker hands it here
 * (rt_broker_set_remote()); every other node holding an entry that matches the topic (the
 * broker's own rules, wamp_uri_matches()) gets one message on "<name>.node.<id>.ev", which only
 * that node subscribes to: a node receives only the events someone on it subscribed to, and once
 * per publication however many of its subscriptions match. The receiving node fans the event
 * out to its own subscribers (rt_broker_deliver()), applying the black/white lists there.
 * A message (rt_cluster_envelope.h) is a compact binary header (the publication id, the
 * topic, the publisher when disclosed, the correlation while a trace runs, the black/white lists
 * and ppt_* options), then the payload's Arguments and ArgumentsKw bytes as the publisher's
 * serializer encoded them.
 * Receivers transcode the payload for their subscribers' serializers (wamp_wr). A message is at
 * most limits.max_message_size bytes (and the NATS server's max_payload); a larger one, or one the
 * link refuses (its outgoing queue full, or down), is dropped and counted (stats, metrics), with
 * a rate-limited log line. Session ids are random in [1, 2^53] (wamp_id_random, libsodium) on
 * every node, which makes them unique cluster-wide with overwhelming probability; exclude and
 * eligible compare them as on one node.
 *
 * Retained events stay on the node that received the PUBLISH; a node that retains an event for a
 * topic tells the others ("<name>.ret.drop", with its wall-clock time), which drop theirs unless
 * theirs is newer, so one node holds a topic's retained event: the last one retained, as far as
 * the nodes' clocks agree (run NTP). A node that holds a later one answers with its own notice.
 * Each time a node joins (also after a lost link) it tells all its retained events again, in
 * batches of a few hundred ("<name>.ret.drops"; answered in batches too), so that two retained on
 * one topic while the nodes could not hear each other become one. A SUBSCRIBE with get_retained
 * is answered from this node at once, and asks every other live node for the retained events the
 * subscription matches and admits (service "ret", rt_cluster_serve()); their answers follow as
 * EVENTs with Details.retained.
 *
 * Ownership: the caller owns it; the router, the cluster and its link are borrowed and must
 * outlive it (free it before the link). Service thread only. */
#ifndef RT_CLUSTER_BROKER_H
#define RT_CLUSTER_BROKER_H

#include <stddef.h>
#include <stdint.h>

#include "rt_cluster.h"
#include "rt_router.h"
#include "wamp_err.h"

typedef struct rt_cluster_broker rt_cluster_broker;

/* Distinct subscriptions (realm, match, uri) one node announces, and holds of each other node. */
#define RT_CLUSTER_BROKER_MAX_ENTRIES 1000000

typedef struct rt_cluster_broker_options {
    const rt_cluster_ops *ops; /* the cluster's link (as given to rt_cluster_set_link()) */
    void *link;
    uint64_t instance;  /* random per process (rt_cluster_table_options.instance) */
    uint32_t beat_ms;   /* cluster.heartbeat_interval */
    uint32_t hold_ms;   /* cluster.node_ttl: how long a lost link keeps the others' interest */
    size_t max_entries; /* distinct subscriptions of one node in the table */
} rt_cluster_broker_options;

typedef struct rt_cluster_broker_stats {
    uint64_t events_out;      /* event messages sent to other nodes */
    uint64_t events_in;       /* event messages received and fanned out */
    uint64_t events_dropped;  /* not sent: too big, or the link refused them */
    uint64_t events_bad;      /* received and ignored: not valid, unknown realm */
    uint64_t remote_interest; /* entries of other nodes held */
} rt_cluster_broker_stats;

/* Hooks every configured realm's broker (not the management realm's) to the cluster. WAMP_OK and
 * *out; WAMP_ENOMEM or the link's errors (*out NULL, nothing hooked). */
wamp_err rt_cluster_broker_new(rt_router *rt, rt_cluster *c, const rt_cluster_broker_options *o,
                               rt_cluster_broker **out);
/* Unhooks the brokers and frees. NULL-safe. */
void rt_cluster_broker_free(rt_cluster_broker *cb);
/* The table's beats and node expiry. Call often (every 100 ms). */
void rt_cluster_broker_tick(rt_cluster_broker *cb);
void rt_cluster_broker_stats_get(const rt_cluster_broker *cb, rt_cluster_broker_stats *out);

#endif /* RT_CLUSTER_BROKER_H */
