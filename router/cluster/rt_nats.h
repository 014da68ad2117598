/* rt_nats.h: the cluster link over NATS (cnats 3.4, JetStream key-value): rt_cluster_ops for
 * rt_cluster. The only module that includes <nats/nats.h> (rt_nats.c, rt_nats_kv.c, rt_nats_int.h).
 *
 * Threads: cnats calls back on its own threads (connection events, subscription messages), and
 * key-value operations, which block in cnats, run on one worker thread of this module. Both hand
 * their results to the service thread through one mutex-protected event queue, then call the
 * wake function (rt_lws_wake()), after which the service loop calls rt_nats_service(); that
 * delivers every queued event to rt_cluster and the ops' callbacks, on the service thread.
 * Everything else of this module (ops, service, free) runs on the service thread.
 * max_pending_bytes bounds the bytes waiting in the event queue and in the worker's queue;
 * beyond it messages are dropped (counted in the stats, logged at most every 10 s) and kv
 * operations fail with WAMP_ETOOBIG.
 *
 * Ownership: the caller owns the rt_nats and the rt_cluster it reports to; free the rt_nats
 * first. One rt_nats per process (rt_nats_free() releases cnats' library-global state). */
#ifndef RT_NATS_H
#define RT_NATS_H

#include <stddef.h>
#include <stdint.h>

#include "rt_cluster.h"
#include "rt_config.h"
#include "wamp_err.h"

typedef struct rt_nats rt_nats;

/* Starts connecting to cfg's servers (in the background: a server that is not reachable is
 * retried every reconnect_wait, for ever) and attaches the link to core
 * (rt_cluster_set_link()). cfg and core are borrowed and must outlive the rt_nats.
 * WAMP_OK and *out; otherwise err (err_len bytes) says why (bad TLS or credentials files, out
 * of memory) and *out is NULL. */
wamp_err rt_nats_new(const rt_cluster_config *cfg, rt_cluster *core, rt_nats **out, char *err,
                     size_t err_len);
/* The ops that rt_nats_new() gave rt_cluster_set_link() (the rt_nats is their link), for the
 * services that use the link beside the membership (rt_cluster_table.h). */
const rt_cluster_ops *rt_nats_link_ops(void);
/* Stops the worker (after it has run the queued kv operations, e.g. the leave's DELETE, each
 * bounded by request_timeout), flushes and closes the connection, drops the undelivered
 * events (their callbacks never run). NULL-safe. */
void rt_nats_free(rt_nats *n);

/* The function called (from any thread) when events are queued; NULL = none. Set it to NULL
 * before the loop it wakes goes away. */
void rt_nats_set_wake(rt_nats *n, void (*wake)(void *ctx), void *ctx);
/* Blocks until an event is queued or ms have passed (for start-up, before the loop runs). */
void rt_nats_wait(rt_nats *n, uint32_t ms);
/* Delivers every queued event and expires requests whose timeout has passed. */
void rt_nats_service(rt_nats *n);
/* true once cnats has closed the connection for good (it does when the server refuses the
 * credentials): the link will not come back; why (len bytes) gets the reason. The first
 * rt_nats_service() after it logs it as an error. */
bool rt_nats_is_closed(rt_nats *n, char *why, size_t len);

#endif /* RT_NATS_H */
