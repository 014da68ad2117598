/* fake_cluster.h: an in-process cluster bus for core tests: several fake links (one per fake
 * node) connected through one fake_bus, implementing rt_cluster_ops without NATS.
 *
 * Deterministic: nothing happens until fake_bus_run(), which delivers every queued event (state
 * changes, messages, replies, kv results) in FIFO order, including the ones that the callbacks
 * queue meanwhile. Key-value buckets expire keys by the injected fake_clock (a key not written
 * within the bucket's ttl is gone). Requests time out when fake_bus_run() finds the clock past
 * their deadline. Faults: a link can be set down and up (messages to a down link are lost, its
 * pending requests fail with WAMP_ECLOSED, its ops fail), fake_bus_drop() loses the next
 * published messages, and fake_link_free() is a kill -9 (no leave, the key stays until it expires).
 * Ownership: the bus owns its links; fake_bus_free() frees the remaining ones. */
#ifndef FAKE_CLUSTER_H
#define FAKE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_clock.h"
#include "rt_cluster.h"

typedef struct fake_bus fake_bus;
typedef struct fake_link fake_link;

extern const rt_cluster_ops fake_link_ops;

/* clock is borrowed. NULL on allocation failure. */
fake_bus *fake_bus_new(fake_clock *clock);
void fake_bus_free(fake_bus *b);
/* Delivers queued events until none is left; returns how many were delivered. */
size_t fake_bus_run(fake_bus *b);
/* The next n published messages (requests and replies included) are lost. */
void fake_bus_drop(fake_bus *b, size_t n);
/* The next n KEYS listings of two keys or more are torn as the NATS client's can be when keys
 * are written during the listing: the last key is missing, the first one listed twice. */
void fake_bus_tear_keys(fake_bus *b, size_t n);
/* The next n KEYS listings of two keys or more lack their last key, nothing else amiss (the
 * NATS client's listing can also miss a key written meanwhile without repeating another). */
void fake_bus_short_keys(fake_bus *b, size_t n);
/* The next n key-value operations but listings (on links that are up) fail with WAMP_EIO, as a
 * JetStream request that timed out: nothing is done. */
void fake_bus_fail_kv(fake_bus *b, size_t n);
/* Messages lost so far by fake_bus_drop() and fake_link_drop(). */
size_t fake_bus_dropped(const fake_bus *b);

/* New link in state connecting; its state changes go to c (may be NULL: no core attached, the
 * link is then driven through fake_link_ops by the test). */
fake_link *fake_link_new(fake_bus *b, rt_cluster *c);
/* kill -9 of the link's node: removed from the bus, its queued events and pending requests are
 * dropped (their callbacks never run). NULL-safe. */
void fake_link_free(fake_link *l);
/* The next n messages l publishes (requests and replies included) are lost. */
void fake_link_drop(fake_link *l, size_t n);
/* Queues the state change (up, or down after having been up). */
void fake_link_set_up(fake_link *l, bool up);

/* A member of cluster "wsc" (announcing version "9.9") for node_id and instance, heartbeat,
 * node TTL and request timeout in ms, reading clock (borrowed), with a new link on b attached
 * (connecting: not up yet) in *link. The caller frees the member after the link (rt_cluster_free
 * after fake_bus_free or fake_link_free). NULL on failure. */
/* fake_cluster_member_new(), watching the nodes' clocks (rt_cluster_watch_clocks()) with wall
 * (ctx) as its wall clock and max_offset_ms as the bound logged. */
rt_cluster *fake_cluster_member_new_clocked(fake_bus *b, fake_clock *clock, const char *node_id,
                                            uint64_t instance, rt_cluster_wall_fn wall, void *ctx,
                                            uint32_t max_offset_ms, fake_link **link);
rt_cluster *fake_cluster_member_new(fake_bus *b, fake_clock *clock, const char *node_id,
                                    uint64_t instance, uint32_t heartbeat_ms, uint32_t node_ttl_ms,
                                    uint32_t request_timeout_ms, fake_link **link);

#endif /* FAKE_CLUSTER_H */
