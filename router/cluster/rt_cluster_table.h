/* rt_cluster_table.h: a table replicated between the nodes of a cluster (rt_cluster.h), over
 * its link. Socket-free: tested with tests/support/fake_cluster.c.
 *
 * Each node owns a set of entries (key -> value, both strings) in each named table; every node
 * holds a copy of the other nodes' entries, and is told of each change to them (a callback).
 * The broker keeps the topics its sessions subscribe to in one ("subs"), the dealer its
 * registrations in another.
 *
 * Protocol (JSON messages; "<name>" the cluster name, "<t>" the table name):
 *   - every change of this node's entries goes to "<name>.tbl.<t>" (all nodes) as one delta
 *     {"op":"put"|"del", "n":node, "i":instance, "s":seq, "k":key, "v":value} with the next
 *     sequence number of this node's table;
 *   - every beat_ms, {"op":"beat", "n", "i", "s"} on the same subject says how far the node is;
 *   - a full snapshot {"op":"snap", "n", "i", "s", "c":chunk, "last":bool, "want":bool,
 *     "e":[[key,value], ...]} in chunks of at most max_message_bytes goes to every node when
 *     this node joins (again, after the link came back: rt_cluster_add_on_joined()) with
 *     "want":true, which makes every other node send its own snapshot to the joiner, on
 *     "<name>.tbl.<t>.<node>" (only that node subscribes to it);
 *   - a receiver that misses a delta (a gap in the sequence, an unknown instance, a beat ahead of
 *     what it holds, a missing chunk) asks for a snapshot with {"op":"sync", "n"} on the node's
 *     own subject (at most once per beat_ms per node); a snapshot replaces what the receiver
 *     held of that node (entries it lacks are removed, with a callback each).
 * So a lost message is repaired within a beat; the instance (random per process) tells a
 * restarted node from the one before it.
 *
 * A node's entries disappear from the others (with a callback for each):
 *   - when it leaves their live node list (rt_cluster: a clean leave at once, kill -9 within
 *     node_ttl + heartbeats), if it had been seen in the list since this node last joined;
 *   - a node never seen in the list (it sent entries before the list was read) is dropped when it
 *     is not in the list and nothing came from it for hold_ms;
 *   - when this node's link has been down (or this node not joined) for hold_ms: every other
 *     node's entries are dropped; they come back with the snapshots that follow the re-join.
 * Limits: a message is at most max_message_bytes (an entry longer than that cannot be put);
 * a node holds at most max_entries entries of its own and of each other node (beyond: put
 * fails with WAMP_ETOOBIG; a remote entry is ignored, counted and logged, rate-limited).
 *
 * Ownership: the caller owns the table; the cluster (borrowed) and its link must outlive it.
 * Keys and values passed in are copied; those handed out are borrowed, valid until the next call
 * into the table or the end of the callback. Service thread only. */
#ifndef RT_CLUSTER_TABLE_H
#define RT_CLUSTER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_cluster.h"
#include "wamp_err.h"

typedef struct rt_cluster_table rt_cluster_table;

/* A remote entry of node_id appeared or changed (value not NULL) or disappeared (value NULL).
 * Called from link callbacks and rt_cluster_table_tick(); it may call any table function but
 * rt_cluster_table_free(). */
typedef void (*rt_cluster_table_fn)(void *arg, const char *node_id, const char *key,
                                    const char *value);

typedef struct rt_cluster_table_options {
    const char *table; /* name: a token (letters, digits, '-', '_'), copied */
    const rt_cluster_ops
            *ops; /* the cluster's link (borrowed, as given to rt_cluster_set_link()) */
    void *link;
    uint64_t instance;        /* random per process: tells a restarted node from the last one */
    uint32_t beat_ms;         /* how often the sequence is announced (cluster.heartbeat_interval) */
    uint32_t hold_ms;         /* see the header comment (cluster.node_ttl) */
    size_t max_message_bytes; /* largest message sent; a received one larger is ignored */
    size_t max_entries;       /* entries of one node */
    rt_cluster_clock_fn clock;
    void *clock_ctx;
} rt_cluster_table_options;

/* Counters, for the stats. */
typedef struct rt_cluster_table_stats {
    uint64_t entries_remote; /* entries of other nodes held now */
    uint64_t syncs;          /* snapshots asked for (a gap was found) */
    uint64_t snapshots_sent; /* snapshots sent (chunks counted once per snapshot) */
    uint64_t bad;            /* messages ignored: not valid, too big, or over max_entries */
    uint64_t send_failed;    /* messages the link did not take (repaired by the next sync) */
} rt_cluster_table_stats;

/* New table o->table on the cluster c, whose link must be set (rt_cluster_set_link()):
 * subscribes to its subjects and adds an on-joined callback (which sends the snapshot). When c
 * is joined already, the snapshot goes out at once. on_change(arg, ...) is told of every remote
 * change (may be NULL). WAMP_OK and *out; WAMP_EINVAL for a bad name or zero limits, WAMP_ENOMEM,
 * or the link's errors (*out NULL, nothing left subscribed). */
wamp_err rt_cluster_table_new(rt_cluster *c, const rt_cluster_table_options *o,
                              rt_cluster_table_fn on_change, void *arg, rt_cluster_table **out);
/* Unsubscribes, removes the on-joined callback, frees every entry (no callbacks). NULL-safe.
 * The other nodes drop this node's entries only when it leaves their node list. */
void rt_cluster_table_free(rt_cluster_table *t);

/* Sets this node's entry key to value (copied) and tells the others (when the link is up; if not,
 * the snapshot after the re-join does). Putting the value a key holds already sends nothing.
 * WAMP_ETOOBIG: the entry does not fit a message, or max_entries are held (table unchanged);
 * WAMP_ENOMEM. */
wamp_err rt_cluster_table_put(rt_cluster_table *t, const char *key, const char *value);
/* Removes this node's entry key and tells the others. WAMP_ENOTFOUND when there is none. */
wamp_err rt_cluster_table_remove(rt_cluster_table *t, const char *key);

/* The value of node_id's entry key (this node's own when node_id is its id), or NULL. */
const char *rt_cluster_table_get(const rt_cluster_table *t, const char *node_id, const char *key);
/* Calls fn(arg, node_id, key, value) for every entry of node_id (NULL: of every other node, node
 * by node). fn must not change the table. */
void rt_cluster_table_foreach(const rt_cluster_table *t, const char *node_id,
                              void (*fn)(void *arg, const char *node_id, const char *key,
                                         const char *value),
                              void *arg);
/* Entries held for node_id (this node's own when it is its id). */
size_t rt_cluster_table_count(const rt_cluster_table *t, const char *node_id);

/* Beats and the dropping of nodes that left. Call often (every 100 ms). */
void rt_cluster_table_tick(rt_cluster_table *t);

void rt_cluster_table_stats_get(const rt_cluster_table *t, rt_cluster_table_stats *out);

#endif /* RT_CLUSTER_TABLE_H */
