/* mgmt_merge.h: the merged page of a cluster-wide trace (get_trace_data with node_id "*", see
 * mgmt/README.md "Merged reading"): the pages of every node merged in time order, cut where a
 * record still to come on some node could sort before what is served.
 * Pure functions on jansson values; service thread only. */
#ifndef MGMT_MERGE_H
#define MGMT_MERGE_H

#include <stddef.h>

#include <jansson.h>

/* One node's page: {"records": [...], "now": seconds, "running": bool}, records read from the
 * node's cursor in seq order (each carrying "seq" and, but for gap items, "ts" in seconds), at
 * most limit of them; "now" is the node's wall clock when it read them.
 *
 * pages maps node ids to such a page or to an error {"error": URI, "args": [...]}. from is the
 * cursor every page was read from (an integer) or a map {node_id: seq} (a node missing from it
 * read from 0). to is NULL (or null: no bound) or each node's last seq to read, as from (an
 * integer for every node, or a map: a node missing from it reads nothing): a node's items past
 * it are left unread, and a node whose page holds all it holds up to it (fewer items than limit,
 * or one at or past it) cuts nothing, running or not, so that a bounded reading is never held
 * back.
 * Returns a new
 * {"records", "next", "errors"}: at most limit records taken in (ts, node id, seq) order from the
 * heads of the pages (each node's records stay in seq order and are taken as a prefix, so the
 * cursors in "next" never skip or repeat one), each with "node_id" added; none at or after the
 * first key that a node's unread records could have (its last record's key when its page is full,
 * (now, node, next seq) while its trace runs); "next" = from updated past what was taken; "errors"
 * the nodes' errors. NULL on allocation failure or when a page is malformed. */
json_t *mgmt_merge_pages(const json_t *pages, const json_t *from, const json_t *to, size_t limit);

/* A node's cursor in a merged reading's from_seq: from itself when it is one seq for every node,
 * else from[node], or 0. */
json_int_t mgmt_merge_from_of(const json_t *from, const char *node);
/* A node's last seq to read (inclusive) in a merged reading's to_seq: to itself when it is one
 * seq for every node, else to[node], or -1 (none) for a node missing from the map; -2: no bound
 * (to NULL or null). */
json_int_t mgmt_merge_to_of(const json_t *to, const char *node);

#endif /* MGMT_MERGE_H */
