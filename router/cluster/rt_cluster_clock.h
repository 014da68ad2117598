/* rt_cluster_clock.h: PRIVATE to router/cluster/: how far each other node's wall clock is from
 * this node's, estimated from the beats every node sends with its wall clock reading (rt_cluster.c
 * sends and receives them). What goes by the nodes' wall clocks across the cluster (the merged
 * reading of a cluster-wide trace, the retained event kept for a topic) is only as right as the
 * clocks agree, so a node whose clock is further off than the configured bound is said in the
 * log, once until it is back within it; `first`/`last` shared registrations compare the nodes'
 * times corrected by the offsets (rt_cluster_wall_ms_here()).
 *
 * A beat is read on arrival: the difference (its reading minus this node's clock then) is the
 * offset less the time it spent on the way. Each node keeps the largest of its last
 * RT_CLUSTER_CLOCK_WINDOW differences: the beat that waited least, the closest to the offset
 * itself (a beat held up in a queue makes a node look further behind, never further ahead). */
#ifndef RT_CLUSTER_CLOCK_H
#define RT_CLUSTER_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_CLUSTER_CLOCK_WINDOW 8

typedef struct rt_cluster_clock rt_cluster_clock;

/* A watch for cluster name (copied, for the log lines); max_offset_ms: the bound over which a
 * node's offset is logged (0: never). NULL on allocation failure. */
rt_cluster_clock *rt_cluster_clock_new(const char *name, uint32_t max_offset_ms);
/* NULL-safe. */
void rt_cluster_clock_free(rt_cluster_clock *k);

/* Node's beat read wall_ns on its clock; this node's read now_ns on its own when it arrived.
 * false only on allocation failure (the beat is then not counted). */
bool rt_cluster_clock_heard(rt_cluster_clock *k, const char *node, uint64_t wall_ns,
                            uint64_t now_ns);
/* Forgets the nodes for which live(arg, node) is false (they left the node list). */
void rt_cluster_clock_prune(rt_cluster_clock *k, bool (*live)(void *arg, const char *node),
                            void *arg);

/* Node's estimated offset in ns (as rt_cluster_clock_node()); false when not heard from. */
bool rt_cluster_clock_offset(const rt_cluster_clock *k, const char *node, int64_t *offset_ns);
/* The nodes heard from, in the order first heard: node i's id (borrowed) and its estimated
 * offset in ns (its clock minus this node's: negative when it is behind). */
size_t rt_cluster_clock_count(const rt_cluster_clock *k);
const char *rt_cluster_clock_node(const rt_cluster_clock *k, size_t i, int64_t *offset_ns);

#endif /* RT_CLUSTER_CLOCK_H */
