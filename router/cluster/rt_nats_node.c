/* rt_nats_node.c: see rt_nats_node.h. */
#include "rt_nats_node.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <sodium.h>

#include "rt_cluster.h"
#include "rt_cluster_broker.h"
#include "rt_cluster_meta.h"
#include "rt_dealer_remote.h"
#include "rt_nats.h"

#ifndef RT_VERSION
#error "RT_VERSION comes from CMake (router/CMakeLists.txt)"
#endif

struct rt_nats_node {
    rt_router *rt;
    const rt_cluster_config *cfg;
    rt_cluster *member;
    rt_nats *link;
    rt_cluster_broker *broker; /* pub/sub across the nodes */
    rt_dealer_remote *dealer;  /* RPC across the nodes */
    rt_cluster_meta *meta;     /* the meta API across the nodes */
};

static uint64_t node_clock(void *ctx)
{
    return rt_router_now_us(ctx);
}

static uint64_t node_wall(void *ctx)
{
    return rt_router_wall_ns(ctx);
}

rt_cluster *rt_nats_node_cluster(rt_nats_node *nn)
{
    return nn->member;
}

void rt_nats_node_service(void *ctx)
{
    rt_nats_node *nn = ctx;
    rt_nats_service(nn->link);
    rt_cluster_tick(nn->member);
    rt_cluster_broker_tick(nn->broker);
    if (nn->dealer) {
        rt_dealer_remote_tick(nn->dealer);
    }
}

void rt_nats_node_set_wake(rt_nats_node *nn, void (*wake)(void *ctx), void *ctx)
{
    rt_nats_set_wake(nn->link, wake, ctx);
}

/* Frees without leaving. */
static void node_free(rt_nats_node *nn)
{
    rt_cluster_meta_free(nn->meta); /* before the link: nothing is serviced in between */
    if (nn->broker) {
        rt_router_set_cluster_broker(nn->rt, NULL);
    }
    rt_cluster_broker_free(nn->broker); /* before the link: nothing is serviced in between */
    rt_dealer_remote_stop(nn->dealer);
    rt_nats_free(nn->link);
    rt_dealer_remote_free(nn->dealer); /* after the link: its key-value callbacks point here */
    rt_cluster_free(nn->member);
    free(nn);
}

/* Starts publish/subscribe, calls and the meta API across the nodes on nn's link; err on
 * failure. */
static wamp_err node_services(rt_nats_node *nn, const rt_config *cfg, uint64_t instance, char *err,
                              size_t err_len)
{
    const rt_cluster_config *cc = cfg->cluster;
    rt_router *rt = nn->rt;
    rt_cluster_broker_options bo = {.ops = rt_nats_link_ops(),
                                    .link = nn->link,
                                    .instance = instance,
                                    .beat_ms = cc->heartbeat_ms,
                                    .hold_ms = cc->node_ttl_ms,
                                    .max_entries = RT_CLUSTER_BROKER_MAX_ENTRIES};
    wamp_err e = rt_cluster_broker_new(rt, nn->member, &bo, &nn->broker);
    if (e != WAMP_OK) {
        snprintf(err, err_len, "cluster %s: cannot start publish/subscribe across nodes: %s",
                 cc->name, wamp_strerror(e));
        return e;
    }
    rt_router_set_cluster_broker(rt, nn->broker);
    rt_dealer_remote_options ro = {.ops = rt_nats_link_ops(),
                                   .link = nn->link,
                                   .instance = instance,
                                   .beat_ms = cc->heartbeat_ms,
                                   .ttl_ms = cc->node_ttl_ms,
                                   .max_message = cfg->limits.max_message_size + 4096,
                                   .max_calls = cc->max_calls,
                                   .max_registrations = cc->max_registrations};
    e = rt_dealer_remote_new(rt, nn->member, &ro, &nn->dealer);
    if (e != WAMP_OK) {
        snprintf(err, err_len, "cluster %s: cannot start calls across nodes: %s", cc->name,
                 wamp_strerror(e));
        return e;
    }
    e = rt_cluster_meta_new(rt, nn->member, &nn->meta);
    if (e != WAMP_OK) {
        snprintf(err, err_len, "cluster %s: cannot start the meta API across nodes: %s", cc->name,
                 wamp_strerror(e));
    }
    return e;
}

wamp_err rt_nats_node_start(rt_router *rt, const rt_config *cfg, rt_nats_node **out, char *err,
                            size_t err_len)
{
    *out = NULL;
    const rt_cluster_config *cc = cfg->cluster;
    rt_nats_node *nn = calloc(1, sizeof(*nn));
    uint64_t instance = 0;
    randombytes_buf(&instance, sizeof(instance));
    rt_cluster_options o = {.name = cc->name,
                            .node_id = cfg->node_id,
                            .version = RT_VERSION,
                            .heartbeat_ms = cc->heartbeat_ms,
                            .node_ttl_ms = cc->node_ttl_ms,
                            .request_timeout_ms = cc->request_timeout_ms};
    if (!nn || !(nn->member = rt_cluster_new(&o, instance, node_clock, rt))) {
        free(nn);
        snprintf(err, err_len, "out of memory");
        return WAMP_ENOMEM;
    }
    nn->rt = rt;
    nn->cfg = cc;
    wamp_err e = rt_cluster_watch_clocks(nn->member, node_wall, rt, cc->max_clock_offset_ms);
    if (e != WAMP_OK) {
        snprintf(err, err_len, "out of memory");
        node_free(nn);
        return e;
    }
    e = rt_nats_new(cc, nn->member, &nn->link, err, err_len);
    if (e != WAMP_OK) {
        node_free(nn);
        return e;
    }
    /* Before the join, so that the join announces this node's subscriptions and
     * registrations. */
    e = node_services(nn, cfg, instance, err, err_len);
    if (e != WAMP_OK) {
        node_free(nn);
        return e;
    }
    uint64_t connect_end = rt_router_now_us(rt) + (uint64_t)cc->connect_timeout_ms * 1000;
    uint64_t settle_end =
            connect_end +
            ((uint64_t)cc->node_ttl_ms + 3ull * cc->heartbeat_ms + cc->request_timeout_ms) * 1000;
    for (;;) {
        rt_nats_node_service(nn);
        rt_cluster_link_stats st;
        rt_cluster_link_stats_get(nn->member, &st);
        uint64_t now = rt_router_now_us(rt);
        if (rt_cluster_is_settled(nn->member) || rt_nats_is_closed(nn->link, NULL, 0) ||
            (st.state != RT_CLUSTER_LINK_UP && now >= connect_end) || now >= settle_end) {
            break;
        }
        rt_nats_wait(nn->link, 100);
    }
    char why[256];
    if (rt_nats_is_closed(nn->link, why, sizeof(why))) {
        snprintf(err, err_len,
                 "cluster %s: the NATS server closed the connection: %s (check the credentials "
                 "and TLS in wampscope.cluster.nats)",
                 cc->name, why);
        node_free(nn);
        return WAMP_ECLOSED;
    }
    if (rt_cluster_is_refused(nn->member)) {
        snprintf(err, err_len,
                 "cluster %s: node id \"%s\" (controller.id) is already in use by another live "
                 "node",
                 cc->name, cfg->node_id);
        node_free(nn);
        return WAMP_EEXIST;
    }
    *out = nn;
    return WAMP_OK;
}

void rt_nats_node_free(rt_nats_node *nn)
{
    if (!nn) {
        return;
    }
    rt_cluster_leave(nn->member);
    uint64_t end = rt_router_now_us(nn->rt) + (uint64_t)nn->cfg->request_timeout_ms * 1000;
    while (rt_cluster_is_leaving(nn->member) && rt_router_now_us(nn->rt) < end) {
        rt_nats_wait(nn->link, 100);
        rt_nats_service(nn->link);
    }
    node_free(nn);
}
