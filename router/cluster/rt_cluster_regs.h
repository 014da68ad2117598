/* rt_cluster_regs.h: the registrations of every node of a cluster, so that a CALL on any node
 * reaches a callee on any node. Socket-free: tested with tests/support/fake_cluster.c.
 *
 * Two parts:
 *   - Who may hold a registration: the key-value bucket "<name>_procs" holds one key per
 *     (realm, match, URI) that some node registers, "<m>.<realm>.<uri>" (m = e/p/w, realm and
 *     URI in URL-safe base64), with the value {"node", "i" (instance), "invoke"}. A node creates
 *     it atomically (CREATE) before its first callee of that registration is REGISTERED. A
 *     single registration is refused (procedure_already_exists) when the key exists for another
 *     node; a shared one when it exists with another invocation policy or as single. The holders
 *     write the key again every ttl/2 (the bucket's keys live node_ttl after their last write),
 *     so the key of a node killed with kill -9 expires; a node whose key is held by a node no
 *     longer in the live list takes it over (PUT) at once. A node removes the key when its last
 *     callee of a single registration goes, or of a shared one that no other node holds. With
 *     the link down, registrations are accepted locally (no claim); when the node joins again it
 *     claims its keys again, and a key that another node took meanwhile is logged as a conflict
 *     (both nodes then route to their own callee until one of them goes).
 *     Races: two nodes registering a single procedure at once: one CREATE wins, the other is
 *     refused (the bus is the arbiter). Two nodes taking over a dead node's key at the same
 *     moment may both succeed (the link has no compare-and-set).
 *   - Where a CALL goes: every node announces its registrations in the replicated table "regs"
 *     (rt_cluster_table.h), key "<m> <realm> <uri>", value "<invoke> <callees> <first_ms>
 *     <last_ms>" (when its first and last callee registered, wall clock). rt_cluster_regs_route()
 *     picks the registration a CALL reaches among this node's and every other node's by the
 *     dealer's precedence (exact, then the longest prefix, then the most specific wildcard; the
 *     local registration wins a tie between equal patterns), then the node by the registration's
 *     policy over the callees of all nodes: roundrobin cycles through the callee counts of the
 *     nodes (each node rotates its own callees), random picks a callee uniformly, first/last the
 *     node whose callee registered first/last (wall clocks: skew between nodes shifts this).
 *
 * Ownership: the caller owns the rt_cluster_regs; the cluster and its link outlive it. Strings
 * handed to the claimed callback are valid during it. Service thread only. */
#ifndef RT_CLUSTER_REGS_H
#define RT_CLUSTER_REGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_cluster.h"
#include "wamp_err.h"
#include "wamp_uri.h"

typedef struct rt_cluster_regs rt_cluster_regs;

/* A claim's outcome (see rt_cluster_regs_claim()). */
typedef struct rt_creg_claim {
    const char *realm, *uri;
    wamp_match match;
    const char *invoke;
    uint64_t session, request; /* as given to the claim */
    /* WAMP_OK: register it; WAMP_EEXIST: another node holds it (single, or another policy);
     * WAMP_ECLOSED: the link went down meanwhile (register it locally). */
    wamp_err err;
} rt_creg_claim;

typedef void (*rt_cluster_claimed_fn)(void *ctx, const rt_creg_claim *cl);

typedef struct rt_cluster_regs_options {
    const rt_cluster_ops *ops; /* the cluster's link, as given to rt_cluster_set_link() */
    void *link;
    uint64_t instance;  /* this process's random instance */
    uint32_t beat_ms;   /* the table's beat (cluster.heartbeat_interval) */
    uint32_t ttl_ms;    /* the bucket's key TTL and the table's hold (cluster.node_ttl) */
    size_t max_message; /* bytes of one table message */
    size_t max_entries; /* registrations one node announces */
    rt_cluster_clock_fn clock;
    void *clock_ctx;
} rt_cluster_regs_options;

/* This node's registration that a CALL of some URI would reach (uri NULL: none). */
typedef struct rt_creg_local {
    const char *uri;
    wamp_match match;
    const char *invoke;
    size_t n_callees;
    uint64_t first_ms, last_ms;
} rt_creg_local;

/* New registry on c (link set). claimed(ctx, ...) gets each claim's outcome. WAMP_OK and *out;
 * WAMP_ENOMEM, WAMP_EINVAL, or the table's errors. */
wamp_err rt_cluster_regs_new(rt_cluster *c, const rt_cluster_regs_options *o,
                             rt_cluster_claimed_fn claimed, void *ctx, rt_cluster_regs **out);
/* Detaches from the link (the table stops; no more claims) while the link still exists. */
void rt_cluster_regs_stop(rt_cluster_regs *r);
/* Frees, dropping pending claims without a callback. Free the link first (its pending key-value
 * callbacks point at the claims r owns). NULL-safe. */
void rt_cluster_regs_free(rt_cluster_regs *r);

/* Asks the bucket whether this node may create registration (realm, uri, match) with policy
 * invoke for session's REGISTER request. WAMP_OK: the outcome comes later through claimed
 * (exactly once, unless r is freed first); WAMP_ECLOSED: the link is not up, register it
 * locally now (no callback); WAMP_ENOMEM. */
wamp_err rt_cluster_regs_claim(rt_cluster_regs *r, const char *realm, const char *uri,
                               wamp_match match, const char *invoke, uint64_t session,
                               uint64_t request);
/* This node's registration (realm, uri, match) now has n_callees callees (0: it is gone: the
 * entry is removed and the key released as described above). first_ms/last_ms: wall-clock
 * registration times of its first and last callee. WAMP_ETOOBIG over max_entries (logged; the
 * others do not see it), WAMP_ENOMEM. */
wamp_err rt_cluster_regs_set(rt_cluster_regs *r, const char *realm, const char *uri,
                             wamp_match match, const char *invoke, size_t n_callees,
                             uint64_t first_ms, uint64_t last_ms);

/* Where a CALL of uri in realm goes, given this node's best registration *local: NULL for this
 * node (local->uri NULL as well: no registration anywhere), or the id of the node to send it to
 * (borrowed, valid until the next call into r). */
const char *rt_cluster_regs_route(rt_cluster_regs *r, const char *realm, const char *uri,
                                  const rt_creg_local *local);

/* Key refreshes and the table's beats. Call every tick. */
void rt_cluster_regs_tick(rt_cluster_regs *r);

#endif /* RT_CLUSTER_REGS_H */
