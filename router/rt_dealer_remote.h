/* rt_dealer_remote.h: RPC across a cluster for a router: makes the cluster's call protocol
 * (cluster/rt_cluster_dealer.h) and registry (cluster/rt_cluster_regs.h), attaches them to the
 * router's dealers (rt_router.dcl), and answers what they ask of the dealers: a call from
 * another node made to a local callee, its cancel, an answer for a local caller, a claimed
 * registration's REGISTER. Socket-free; main() (through rt_nats_node.c) makes it on the NATS
 * link, the tests on the fake bus.
 * Ownership: the caller owns it; the router, the cluster and its link are borrowed: stop it
 * (rt_dealer_remote_stop()) while the link exists, free it after the link. Service thread only. */
#ifndef RT_DEALER_REMOTE_H
#define RT_DEALER_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_cluster.h"
#include "rt_cluster_dealer.h"
#include "rt_router.h"
#include "wamp_err.h"

typedef struct rt_dealer_remote rt_dealer_remote;

typedef struct rt_dealer_remote_options {
    const rt_cluster_ops *ops; /* the cluster's link, as given to rt_cluster_set_link() */
    void *link;
    uint64_t instance;        /* this process's random instance */
    uint32_t beat_ms;         /* cluster.heartbeat_interval */
    uint32_t ttl_ms;          /* cluster.node_ttl */
    size_t max_message;       /* bytes of one cross-node message */
    size_t max_calls;         /* calls in flight to other nodes, and served for them (each) */
    size_t max_registrations; /* registrations this node announces */
} rt_dealer_remote_options;

/* Makes both parts on c (its link set) and attaches them to rt's dealers. WAMP_OK and *out;
 * WAMP_ENOMEM, WAMP_EINVAL (a zero limit) or the link's errors (*out NULL, nothing attached). */
wamp_err rt_dealer_remote_new(rt_router *rt, rt_cluster *c, const rt_dealer_remote_options *o,
                              rt_dealer_remote **out);
/* Deadlines, nodes gone, the link down, key refreshes, table beats. Call every tick. */
void rt_dealer_remote_tick(rt_dealer_remote *dr);
/* Detaches from the router (its dealers route locally only) and from the link. NULL-safe. */
void rt_dealer_remote_stop(rt_dealer_remote *dr);
/* Stops if needed and frees. Free the link first. NULL-safe. */
void rt_dealer_remote_free(rt_dealer_remote *dr);
/* The call protocol's counters of the rt_dealer_remote attached to rt: false (*out untouched)
 * when none is (no cluster, or stopped). For the metrics. */
bool rt_dealer_remote_stats(const rt_router *rt, rt_cluster_dealer_stats *out);

#endif /* RT_DEALER_REMOTE_H */
