/* mgmt_cluster.h: management calls for another node of the cluster, forwarded over the cluster
 * link's request/reply (subject "<cluster>.node.<id>.mgmt"), and this node's answers to the
 * calls the other nodes forward to it (mgmt/README.md "Cluster").
 *
 * The caller's CALL is answered asynchronously (rt_dealer_defer()): the loop never waits for the
 * other node. A forwarded request is JSON {"procedure", "args", "kwargs", "max_message_size",
 * "caller": {"node_id", "session", "authid", "authrole"}}; the answer is {"args", "kwargs"} or
 * {"error": URI, "args", "kwargs"}.
 *
 * Ownership: created by mgmt_api for a cluster it borrows. mgmt_cluster_stop() detaches it from
 * the cluster (before the cluster's link goes); the link must be freed before mgmt_cluster_free()
 * (its pending reply callbacks point at the forwards this object owns). Service thread only. */
#ifndef MGMT_CLUSTER_H
#define MGMT_CLUSTER_H

#include <stddef.h>

#include <jansson.h>

#include "rt_cluster.h"
#include "rt_dealer.h"
#include "rt_router.h"
#include "wamp_err.h"
#include "wamp_types.h"

/* The cluster service name of the management API. */
#define MGMT_CLUSTER_SERVICE "mgmt"

/* Who a procedure answers: the encoding and size limit of the reply it may render directly
 * (get_trace_data). */
typedef struct mgmt_who {
    wamp_ser ser;
    size_t max_message_size; /* 0: no limit */
} mgmt_who;

/* Runs the procedure named procedure (as registered, without the prefix) on this node; fills
 * *reply as a local procedure does. WAMP_ENOTFOUND for an unknown name. */
typedef wamp_err (*mgmt_cluster_run_fn)(void *ctx, const char *procedure, const mgmt_who *who,
                                        const json_t *args, const json_t *kwargs,
                                        rt_local_reply *reply);

typedef struct mgmt_cluster mgmt_cluster;

/* Serves this node's management subject on c (run answers the requests). WAMP_ENOMEM, or the
 * link's error; *out NULL after failure. */
wamp_err mgmt_cluster_new(rt_router *rt, rt_cluster *c, mgmt_cluster_run_fn run, void *run_ctx,
                          mgmt_cluster **out);
/* Stops serving and forwarding (calls for other nodes answer crossbar.error.no_such_object);
 * forwards in flight stay until their reply or mgmt_cluster_free(). NULL-safe. */
void mgmt_cluster_stop(mgmt_cluster *mc);
/* Frees, dropping the answers of forwards still in flight. Free the link first. NULL-safe. */
void mgmt_cluster_free(mgmt_cluster *mc);
/* The cluster (borrowed), NULL once stopped. */
rt_cluster *mgmt_cluster_get(const mgmt_cluster *mc);

/* Forwards the CALL of procedure by caller to node_id (not this node): the call is deferred
 * (reply->deferred) and answered with the node's answer, or with an error naming the node:
 * crossbar.error.no_such_object (not a live member, or nobody serves its management subject),
 * wamp.error.timeout (no answer within cluster.request_timeout), wamp.error.network_failure (the
 * link went down). Errors known at once are put in *reply (not deferred). WAMP_ENOMEM. */
wamp_err mgmt_cluster_forward(mgmt_cluster *mc, rt_session *caller, const char *node_id,
                              const char *procedure, const json_t *args, const json_t *kwargs,
                              rt_local_reply *reply);

/* Makes the answer of a fan-out from its map (borrowed) and the fan-out's arg: a new value, NULL
 * when it cannot (the caller gets wamp.error.runtime_error). */
typedef json_t *(*mgmt_cluster_finish_fn)(const json_t *map, const json_t *arg);

/* node_id "*" (mgmt/README.md "Cluster-wide calls"): runs procedure on every live node of mc's
 * cluster, this one (self_id, through run) included; with mc NULL or stopped, on this node alone.
 * Each node gets args/kwargs with node_id set to its own id. The answer is one value: the map
 * {node_id: result} where a node's error is {"error": URI, "args": [...]} (a node that did not
 * answer within cluster.request_timeout: wamp.error.timeout), or what finish (NULL: none) makes of
 * that map and finish_arg (taken, NULL allowed). The call is deferred (reply->deferred) while
 * another node's answer is awaited, and answered when every node answered or timed out;
 * otherwise *reply holds the answer at once. WAMP_ENOMEM. */
wamp_err mgmt_cluster_fanout(mgmt_cluster *mc, const char *self_id, mgmt_cluster_run_fn run,
                             void *run_ctx, rt_session *caller, const char *procedure,
                             const json_t *args, const json_t *kwargs,
                             mgmt_cluster_finish_fn finish, json_t *finish_arg_take,
                             rt_local_reply *reply);

#endif /* MGMT_CLUSTER_H */
