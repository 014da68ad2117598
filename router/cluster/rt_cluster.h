/* rt_cluster.h: this node's membership in a cluster of wampscope nodes, over a cluster link
 * (rt_cluster_link.h). Socket-free: tested with tests/support/fake_cluster.c.
 *
 * Membership: every node holds the key <node id> in the bucket "<name>_nodes", whose keys live
 * node_ttl after their last write. Joining is an atomic CREATE of that key, so two nodes cannot
 * hold one id. The value is JSON {"node_id", "instance", "version", "started"} where instance is
 * random per process: a CREATE that finds this process's own instance (after the link came back,
 * the bus kept the key) takes the key over. A CREATE that finds another instance is retried every
 * heartbeat until node_ttl has passed since the first refusal: a key left by a killed process
 * expires by then; a live node keeps it, and the id is refused (rt_cluster_is_refused()).
 * A joined node writes its key every heartbeat and reads the bucket's keys (the live node list)
 * every heartbeat too; join and leave are also announced on "<name>.nodes.changed" (the payload:
 * the node id, a space and the join, or "left:" and the id) so that the other nodes read the list
 * at once. A join is "<instance>.<count>": the count of this process's joins, one more each time
 * its link came back. Every heartbeat, and once right after the announcement, the node also sends
 * "<id> <wall clock ns, 0: none> <join>" on "<name>.clock" (the wall clock for
 * rt_cluster_watch_clocks()), so that a node that lost an announcement learns of the join at the
 * next heartbeat (rt_cluster_add_on_node_joined()). A node a
 * listing lacks leaves the list when it announced its leave, or when the listing before lacked it
 * too: the NATS client's listing can miss a live node whose key is written meanwhile, and one
 * such listing must not drop it. So a clean leave (the key deleted, then announced) is seen at
 * once, and a node killed with kill -9 leaves the others' lists at the second read after its key
 * expired (node_ttl after its last write, give or take how often the server checks expiry). A
 * listing that holds a key twice is torn (the client lists keys written meanwhile again, and may
 * then miss another one): it is ignored. Each node answers requests on "<name>.node.<id>.info" with
 * its value, and asks a node that appears in the list for it (logged: "cluster wampscope: node B
 * joined (...)").
 *
 * Ownership: the caller owns the rt_cluster and the link; the link must be freed first (its
 * pending callbacks point here). Service thread only. */
#ifndef RT_CLUSTER_H
#define RT_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_cluster_link.h"
#include "wamp_err.h"

typedef struct rt_cluster rt_cluster;

/* Longest cluster name or node id. */
#define RT_CLUSTER_TOKEN_MAX 64

/* true when s can be a cluster name or node id: 1..RT_CLUSTER_TOKEN_MAX letters, digits, '-'
 * and '_' (one subject token, and a key of the node bucket). */
bool rt_cluster_token_is_valid(const char *s);

/* Monotonic clock in microseconds (the router's rt_clock_fn). */
typedef uint64_t (*rt_cluster_clock_fn)(void *ctx);

typedef struct rt_cluster_options {
    const char *name;    /* cluster name: prefix of every subject and bucket (copied) */
    const char *node_id; /* this node's id (copied) */
    const char *version; /* announced in the node's value (copied) */
    uint32_t heartbeat_ms;
    uint32_t node_ttl_ms;
    uint32_t request_timeout_ms;
} rt_cluster_options;

typedef enum rt_cluster_member_state {
    RT_CLUSTER_MEMBER_OFFLINE = 0, /* link not up */
    RT_CLUSTER_MEMBER_JOINING,     /* link up, key not (yet) ours */
    RT_CLUSTER_MEMBER_JOINED,
    RT_CLUSTER_MEMBER_REFUSED /* another live node holds our id; we stopped trying */
} rt_cluster_member_state;

/* New member with no link (offline). instance is this process's random instance id (64 bits).
 * NULL on allocation failure. clock NULL is not allowed. */
rt_cluster *rt_cluster_new(const rt_cluster_options *o, uint64_t instance,
                           rt_cluster_clock_fn clock, void *clock_ctx);
/* NULL-safe. Free the link first. */
void rt_cluster_free(rt_cluster *c);

/* Attaches the link (borrowed; outlives c's use of it) and subscribes to the membership
 * subjects. Call once, before the link reports any state. */
wamp_err rt_cluster_set_link(rt_cluster *c, const rt_cluster_ops *ops, void *link);

/* Entry point for the link: its state changed. Up starts (or restarts: re-announce) the join. */
void rt_cluster_on_link_state(rt_cluster *c, rt_cluster_link_state st);
/* Heartbeats, list reads and join retries that are due. Call often (every 100 ms). */
void rt_cluster_tick(rt_cluster *c);
/* Clean leave: deletes this node's key, then (when the delete is done) announces it; the node
 * does not join again. */
void rt_cluster_leave(rt_cluster *c);
/* true while the leave's delete is in flight: keep servicing the link until it is false (or a
 * timeout), so that the announcement goes out. */
bool rt_cluster_is_leaving(const rt_cluster *c);

rt_cluster_member_state rt_cluster_member_state_get(const rt_cluster *c);
/* true once another live node has been found to hold this node's id while this node had not
 * joined: the node must not take part (main() stops at start). */
bool rt_cluster_is_refused(const rt_cluster *c);
/* true once the join has been decided (joined or refused). */
bool rt_cluster_is_settled(const rt_cluster *c);

/* The live node list: ids sorted, this node included while joined; just this node while the
 * link is down. Borrowed, valid until the next call into c. */
size_t rt_cluster_node_count(const rt_cluster *c);
const char *rt_cluster_node_at(const rt_cluster *c, size_t i);

/* true when node_id is in the live node list. */
bool rt_cluster_has_node(const rt_cluster *c, const char *node_id);
/* This node's id (borrowed). */
const char *rt_cluster_node_id(const rt_cluster *c);
/* cluster.request_timeout: how long a request to another node waits for its reply. */
uint32_t rt_cluster_request_timeout_ms(const rt_cluster *c);

/* --- Per-node services (request/reply between nodes) -------------------------------------- */

/* Longest service name. */
#define RT_CLUSTER_SERVICE_MAX 32

/* Serves requests to this node's service (a token: letters, digits, '-', '_') on subject
 * "<name>.node.<this id>.<service>": fn gets each one with the subject to answer on (answer
 * with rt_cluster_reply()). *sub is the handle for rt_cluster_unserve(). Call after
 * rt_cluster_set_link(). WAMP_EINVAL for a bad service name; the link's errors. */
wamp_err rt_cluster_serve(rt_cluster *c, const char *service, rt_cluster_msg_fn fn, void *arg,
                          uint64_t *sub);
void rt_cluster_unserve(rt_cluster *c, uint64_t sub);
/* Sends data to node_id's service and waits at most request_timeout for the reply; fn gets it
 * (or WAMP_EIO: no reply in time, WAMP_ENOTFOUND: nobody serves it, WAMP_ECLOSED: link down)
 * exactly once, later, unless the link is freed first. WAMP_ENOTFOUND when node_id is not in
 * the live list, WAMP_ECLOSED without a link, or the link's errors: fn is then never called. */
wamp_err rt_cluster_request(rt_cluster *c, const char *node_id, const char *service,
                            const void *data, size_t len, rt_cluster_reply_fn fn, void *arg);
/* Answers a request on its reply subject. The link's errors (WAMP_ETOOBIG over its limit). */
wamp_err rt_cluster_reply(rt_cluster *c, const char *reply, const void *data, size_t len);

/* --- For the services: join events and key-value buckets ------------------------------------ */

/* Most callbacks rt_cluster_add_on_joined() (and rt_cluster_add_on_tick()) holds. */
#define RT_CLUSTER_ON_JOINED_MAX 8

/* fn(arg) is called each time this node joins: after start, and again after the link came back
 * (state that a service keeps in the cluster may have changed meanwhile). Several services may
 * add one each; they are called in the order added. It runs from a link callback, so it may call
 * ops. WAMP_ETOOBIG when RT_CLUSTER_ON_JOINED_MAX are held. */
wamp_err rt_cluster_add_on_joined(rt_cluster *c, void (*fn)(void *arg), void *arg);
/* Removes the callback added with the same fn and arg (none: nothing happens). */
void rt_cluster_remove_on_joined(rt_cluster *c, void (*fn)(void *arg), void *arg);
/* A join of another node (rt_cluster_add_on_node_joined()). announced: the join announcement on
 * "<name>.nodes.changed", which that node sends before anything else after its join, so what
 * comes from it after this call is of the new join. !announced: the announcement was lost, and a
 * heartbeat reading of that node tells of a join other than the one heard before; what came from
 * it since its join (calls it made here) may be of the new join as well as of the old one. */
typedef void (*rt_cluster_node_joined_fn)(void *arg, const char *node_id, bool announced);

/* fn is called for each join of another node: a node joining for the first time (announced
 * only), again after its link was down, or a new process that took over the id of one that was
 * killed. Whatever this node had in progress with that one before its join is over: it has
 * forgotten it (a process that is new, or one whose link went down, which ends its calls with
 * the other nodes). Each join of a listed node is reported once, by whichever of its
 * announcement and its heartbeat reading comes first; a join this node never heard of before it
 * (the node's first heartbeat reading lost too, within a heartbeat of the node being listed) is
 * not reported. Same contract and limit as rt_cluster_add_on_joined(). */
wamp_err rt_cluster_add_on_node_joined(rt_cluster *c, rt_cluster_node_joined_fn fn, void *arg);
/* Removes the callback added with the same fn and arg (none: nothing happens). */
void rt_cluster_remove_on_node_joined(rt_cluster *c, rt_cluster_node_joined_fn fn, void *arg);
/* fn(arg) is called at every rt_cluster_tick() (every 100 ms at least, whatever the link's
 * state), for a service's own timers; same contract and limit as rt_cluster_add_on_joined(). */
wamp_err rt_cluster_add_on_tick(rt_cluster *c, void (*fn)(void *arg), void *arg);
/* Removes the callback added with the same fn and arg (none: nothing happens). */
void rt_cluster_remove_on_tick(rt_cluster *c, void (*fn)(void *arg), void *arg);
/* The cluster name (borrowed): a service names its buckets "<name>_<what>". */
const char *rt_cluster_name(const rt_cluster *c);
/* One key-value operation over the link (rt_cluster_ops.kv, same contract). WAMP_ECLOSED without
 * a link or while it is not up (fn is then never called). */
wamp_err rt_cluster_kv(rt_cluster *c, const rt_cluster_kv_op *op, rt_cluster_kv_fn fn, void *arg);

/* Link state and traffic counters (from the link), for the stats. */
void rt_cluster_link_stats_get(const rt_cluster *c, rt_cluster_link_stats *out);

/* --- The nodes' wall clocks ------------------------------------------------------------------ */

/* Wall clock in ns since the epoch. */
typedef uint64_t (*rt_cluster_wall_fn)(void *ctx);

/* Sends this node's wall clock reading (wall) with every heartbeat on "<name>.clock" (without
 * it, the reading is 0: none), and estimates each other node's offset from theirs
 * (rt_cluster_clock.h); a node further off than
 * max_offset_ms (0: never) is logged, once until it is back within it. Call before
 * rt_cluster_set_link(). WAMP_ENOMEM. */
wamp_err rt_cluster_watch_clocks(rt_cluster *c, rt_cluster_wall_fn wall, void *ctx,
                                 uint32_t max_offset_ms);
/* The live nodes heard from (0 without rt_cluster_watch_clocks()), and node i's id (borrowed)
 * with its clock's offset from this node's in ns (negative: behind). */
size_t rt_cluster_clock_offset_count(const rt_cluster *c);
const char *rt_cluster_clock_offset_at(const rt_cluster *c, size_t i, int64_t *offset_ns);
/* A wall clock reading of node (ms since the epoch) on this node's clock: less node's estimated
 * offset, the reading as it is while none is known. */
uint64_t rt_cluster_wall_ms_here(const rt_cluster *c, const char *node, uint64_t ms);

#endif /* RT_CLUSTER_H */
