/* rt_cluster_meta.h: the WAMP meta API (router/rt_meta.h) of a cluster: on a node with a
 * cluster, wamp.session.count/list/get, wamp.subscription.list/lookup/match/get/
 * list_subscribers/count_subscribers and wamp.registration.list/lookup/match/get/list_callees/
 * count_callees answer for the realm across every live node.
 *
 * How: rt_cluster_meta_new() replaces those router-local procedures of every realm that serves
 * the meta API with its own (the dealer's local procedure table is the hook: rt_meta.c does not
 * know the cluster). Each runs this node's procedure (rt_meta_proc()), then, unless that answer
 * is final, asks the service "meta" of every other live node at once (one request each, the
 * cluster's request_timeout), defers the CALL (rt_dealer_defer()) and answers it once every node
 * answered or timed out, with the answers merged:
 *   - counts are sums, lists are unions (concatenated: ids are unique cluster-wide for sessions,
 *     per node for subscriptions and registrations), subscription.list/registration.list merge
 *     each of exact/prefix/wildcard, subscription.match joins the lists (null when empty);
 *   - session.get, subscription.get/lookup, registration.get/lookup/match: this node's answer
 *     when it has one (no request sent), else the first other node's that has one;
 *   - list_subscribers/count_subscribers/list_callees/count_callees with an id of this node: the
 *     other nodes answer for their own subscription (registration) of the same URI and match
 *     policy; with an id this node does not know: the node that knows it answers;
 *   - an error of this node (no_such_session, ...) is the answer when no node has a result;
 *     invalid_argument is answered at once.
 * A node that does not answer in time (or the link is down) is left out; that is logged, rate
 * limited ("cluster meta: node ... did not answer"). wamp.session.kill* stay local.
 *
 * Ownership: the caller owns the result. Free it before the router, and just before the
 * cluster's link with nothing serviced in between (the link's pending replies point here); it
 * puts the meta procedures of rt_meta.c back. Service thread only. */
#ifndef RT_CLUSTER_META_H
#define RT_CLUSTER_META_H

#include "rt_cluster.h"
#include "rt_router.h"
#include "wamp_err.h"

typedef struct rt_cluster_meta rt_cluster_meta;

/* The service other nodes ask ("<name>.node.<id>.meta"). */
#define RT_CLUSTER_META_SERVICE "meta"

/* Serves this node's meta API to the others and replaces the meta procedures of rt's realms
 * (after rt_meta_attach(), c's link set). rt and c are borrowed and outlive the result.
 * WAMP_ENOMEM, or the cluster's errors; nothing is changed then. */
wamp_err rt_cluster_meta_new(rt_router *rt, rt_cluster *c, rt_cluster_meta **out);
/* Answers nothing more: the CALLs still waiting are dropped (their callers get no answer: the
 * router is going away). NULL-safe. */
void rt_cluster_meta_free(rt_cluster_meta *m);

#endif /* RT_CLUSTER_META_H */
