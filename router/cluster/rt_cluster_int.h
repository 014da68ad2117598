/* rt_cluster_int.h: PRIVATE to rt_cluster.c (joining, the heartbeat, the services' hooks) and
 * rt_cluster_nodes.c (the node list, and what other nodes announce and read out): the member's
 * state they share. rt_cluster.h has the protocol. */
#ifndef RT_CLUSTER_INT_H
#define RT_CLUSTER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_cluster.h"
#include "rt_cluster_clock.h"

/* Bucket and subject names: "<name>_nodes", "<name>.nodes.changed", "<name>.node.<id>.info",
 * and per-node services "<name>.node.<id>.<service>" (rt_cluster_serve()).
 * name and id are at most RT_CLUSTER_TOKEN_MAX bytes (rt_config checks it). */
#define NAME_MAX_LEN (2 * RT_CLUSTER_TOKEN_MAX + RT_CLUSTER_SERVICE_MAX + 32)

/* The announcement of a clean leave on "<name>.nodes.changed": this prefix, then the node id
 * (a join announces the id, a space and its join). A colon is never part of an id
 * (rt_cluster_token_is_valid()). */
#define LEFT_PREFIX "left:"

/* Per-node flags of the node list (rt_cluster.node_flags). NODE_MISSED: the last listing lacked
 * the node, which goes if the next one lacks it too. NODE_LEFT: the node announced a clean leave
 * and goes with the first listing that lacks it. */
#define NODE_MISSED 0x01u
#define NODE_LEFT   0x02u
/* The node's join (rt_cluster.node_joins) is known: from its announcement or a heartbeat. */
#define NODE_JOIN_KNOWN 0x04u

/* A join of a node: its process's instance and how many times that process has joined. A node
 * whose link came back joins again with the same instance and the next count; a new process
 * draws a new instance. Sent as "<instance, 16 hex digits>.<count>" in the join announcement and
 * in every heartbeat reading. */
typedef struct node_join {
    uint64_t instance;
    uint64_t count;
} node_join;

/* Digits of a join's text form, without the NUL. */
#define JOIN_TEXT_MAX (16 + 1 + 20)

/* Callbacks the services added (rt_cluster_add_on_joined(), rt_cluster_add_on_tick(),
 * rt_cluster_add_on_node_joined()). fn is kept as the generic function type and called as the
 * type it was added as (hooks_run(), node_joined()). */
typedef void (*hook_fn)(void);

typedef struct rt_cluster_hooks {
    struct {
        hook_fn fn;
        void *arg;
    } v[RT_CLUSTER_ON_JOINED_MAX]; /* in the order added */

    size_t n;
} rt_cluster_hooks;

struct rt_cluster {
    char *name;
    char *node_id;
    char *value; /* this node's JSON value */
    char instance[17];
    uint64_t joins; /* joins of this process so far: the count of its current join */
    char bucket[NAME_MAX_LEN];
    char subj_changed[NAME_MAX_LEN];
    char subj_info[NAME_MAX_LEN];
    char subj_clock[NAME_MAX_LEN]; /* every heartbeat's reading (send_reading()) */
    rt_cluster_clock_fn clock;
    void *clock_ctx;
    uint64_t heartbeat_us, ttl_us;
    uint32_t ttl_ms, request_timeout_ms;

    const rt_cluster_ops *ops;
    void *link;
    rt_cluster_link_state link_state;
    rt_cluster_member_state state;
    bool ever_joined;
    bool left;
    bool leaving;      /* the leave's DELETE is in flight */
    bool join_pending; /* a CREATE, GET or PUT of the join is in flight */
    bool beat_pending; /* a heartbeat PUT is in flight */
    bool keys_pending; /* a KEYS is in flight */
    bool keys_again;   /* read the keys again when it returns */
    uint64_t next_join_us;
    uint64_t next_beat_us;
    bool conflict;
    uint64_t conflict_since_us;
    uint64_t last_warn_us;
    bool warned;
    uint64_t last_join_warn_us;
    bool join_warned;

    char **nodes;          /* sorted; owned strings */
    uint8_t *node_flags;   /* NODE_* per entry of nodes */
    node_join *node_joins; /* per entry of nodes, where NODE_JOIN_KNOWN */
    size_t n_nodes;

    rt_cluster_hooks on_joined;      /* rt_cluster_add_on_joined(), in order */
    rt_cluster_hooks on_tick;        /* rt_cluster_add_on_tick(), in order */
    rt_cluster_hooks on_node_joined; /* rt_cluster_add_on_node_joined(), in order */

    /* rt_cluster_watch_clocks(): NULL clk without */
    rt_cluster_clock *clk;
    rt_cluster_wall_fn wall;
    void *wall_ctx;
};

static inline uint64_t now_us(const rt_cluster *c)
{
    return c->clock(c->clock_ctx);
}

/* --- rt_cluster_nodes.c ----------------------------------------------------------------------- */

/* Frees the node list (n_nodes 0). */
void rt_cluster_nodes_clear(rt_cluster *c);
/* Replaces the list by keys (NULL, 0 = just this node); logs and asks about new nodes. A node
 * kept from the old list keeps its flags and join; flags of new nodes are 0. WAMP_ENOMEM (the
 * list unchanged). */
wamp_err rt_cluster_nodes_set(rt_cluster *c, const char *const *keys, size_t n_keys);
/* Reads the bucket's keys (again when a read is in flight) into the node list. */
void rt_cluster_read_keys(rt_cluster *c);
/* The subscriptions on "<name>.nodes.changed" and "<name>.clock" (arg: the rt_cluster). */
void rt_cluster_on_changed(void *arg, const char *subject, const char *reply, const void *data,
                           size_t len);
void rt_cluster_on_clock(void *arg, const char *subject, const char *reply, const void *data,
                         size_t len);

#endif /* RT_CLUSTER_INT_H */
