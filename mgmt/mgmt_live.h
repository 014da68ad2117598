/* mgmt_live.h: the live topics of every node of a cluster (on_trace_started, on_trace_data,
 * on_trace_stopped) for the management subscribers of this node (mgmt/README.md "Live data").
 *
 * Interest-based, not a broadcast: a node with a local subscriber to a live topic announces its
 * interest (a mask of topics) to every other live node over the cluster link (service
 * MGMT_LIVE_SERVICE), again every MGMT_LIVE_RENEW_MS while it lasts, and once with an empty mask
 * when it ends; a node keeps an announced interest MGMT_LIVE_LEASE_MS. A node sends each of its
 * own live events (never one it received) to the nodes interested in its topic, as a request the
 * receiver acknowledges; the receiver publishes it on its management realm as it came (the
 * event's args name the node it is from). Unacknowledged events are bounded per receiving node
 * (max_inflight_bytes): an event over the bound, over the link's limits, or that the link refuses
 * is dropped and counted (a late subscriber fills the gap with get_trace_data, as on one node).
 *
 * Ownership: created by mgmt_api for a cluster and a broker it borrows. mgmt_live_stop() detaches
 * it from the cluster (before the cluster's link goes); the link must be freed before
 * mgmt_live_free() (its pending reply callbacks point at this object). Service thread only. */
#ifndef MGMT_LIVE_H
#define MGMT_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rt_broker.h"
#include "rt_cluster.h"
#include "rt_router.h"
#include "wamp_err.h"

/* The cluster service name of the live topics. */
#define MGMT_LIVE_SERVICE "mgmt-live"
/* How often a node with live subscribers announces its interest again. */
#define MGMT_LIVE_RENEW_MS 1000u
/* How long a node keeps another node's interest after its last announcement. */
#define MGMT_LIVE_LEASE_MS (3u * MGMT_LIVE_RENEW_MS)

typedef enum mgmt_live_topic {
    MGMT_LIVE_STARTED = 0, /* on_trace_started */
    MGMT_LIVE_DATA,        /* on_trace_data */
    MGMT_LIVE_STOPPED,     /* on_trace_stopped */
    MGMT_LIVE_TOPICS
} mgmt_live_topic;

/* The topic's URI (MGMT_TOPIC_PREFIX "on_trace_data", ...). */
const char *mgmt_live_topic_uri(mgmt_live_topic t);

typedef struct mgmt_live_stats {
    uint64_t forwarded;      /* own events sent to an interested node */
    uint64_t dropped;        /* own events not sent: over max_inflight_bytes or refused */
    uint64_t received;       /* other nodes' events published here */
    size_t interested_nodes; /* other nodes holding an interest in this node's events now */
} mgmt_live_stats;

typedef struct mgmt_live mgmt_live;

/* Serves MGMT_LIVE_SERVICE on c and publishes what comes in on broker (the management realm's).
 * max_inflight_bytes: the bound of unacknowledged events per interested node (0: 1 MiB).
 * WAMP_ENOMEM, or the cluster's errors; *out NULL after failure. */
wamp_err mgmt_live_new(rt_router *rt, rt_cluster *c, rt_broker *broker, size_t max_inflight_bytes,
                       mgmt_live **out);
/* Stops serving, announcing and forwarding; events in flight stay until their reply or
 * mgmt_live_free(). NULL-safe. */
void mgmt_live_stop(mgmt_live *ml);
/* Frees (free the link first). NULL-safe. */
void mgmt_live_free(mgmt_live *ml);

/* true when another node is interested in topic t now (false for ml NULL or stopped). */
bool mgmt_live_wants(const mgmt_live *ml, mgmt_live_topic t);
/* Sends this node's event on topic t with args (borrowed) to every node interested in it
 * (nothing when none is, or ml is NULL or stopped). WAMP_ENOMEM (nothing sent). */
wamp_err mgmt_live_forward(mgmt_live *ml, mgmt_live_topic t, const json_t *args);

/* Counters (zeros for ml NULL). */
void mgmt_live_stats_get(const mgmt_live *ml, mgmt_live_stats *out);

#endif /* MGMT_LIVE_H */
