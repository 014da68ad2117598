/* rt_nats_node.h: this node in a cluster over NATS, as main() runs it: the membership
 * (rt_cluster) on the NATS link (rt_nats), started before the router listens, serviced by the
 * lws loop (rt_lws_set_service_hook(), rt_lws_wake()) and left after the loop stopped.
 * Ownership: main() owns the rt_nats_node, which owns both parts; the router and the config
 * are borrowed and must outlive it. Service thread only (the wake function aside). */
#ifndef RT_NATS_NODE_H
#define RT_NATS_NODE_H

#include <stddef.h>

#include "rt_cluster.h"
#include "rt_config.h"
#include "rt_router.h"
#include "wamp_err.h"

typedef struct rt_nats_node rt_nats_node;

/* Connects to cfg->cluster's servers and waits until the join is decided, so that a node whose
 * id another live node holds is refused before it listens. The wait is bounded: no server
 * answering within connect_timeout, or no decision within connect_timeout + node_ttl + 3
 * heartbeats + request_timeout, and the node starts anyway (routing locally; the link keeps
 * trying). WAMP_OK and *out; otherwise *out is NULL, nothing is left running and err says why:
 * WAMP_EEXIST (the id is in use), WAMP_ECLOSED (the server closed the connection for good, e.g.
 * refused credentials), WAMP_EIO or WAMP_ENOMEM (set-up failed). */
wamp_err rt_nats_node_start(rt_router *rt, const rt_config *cfg, rt_nats_node **out, char *err,
                            size_t err_len);
/* The membership (borrowed, lives as long as nn), for the management API. */
rt_cluster *rt_nats_node_cluster(rt_nats_node *nn);
/* The loop's service hook (ctx: the rt_nats_node): delivers the link's events, runs timers. */
void rt_nats_node_service(void *ctx);
/* See rt_nats_set_wake(). */
void rt_nats_node_set_wake(rt_nats_node *nn, void (*wake)(void *ctx), void *ctx);
/* Leaves the cluster (the key deleted, then the others told; waits at most request_timeout),
 * then closes the link and frees everything. NULL-safe. */
void rt_nats_node_free(rt_nats_node *nn);

#endif /* RT_NATS_NODE_H */
