/* rt_cluster_link.h: the only seam between the router core and a cluster link (the NATS adapter
 * rt_nats.c, or tests/support/fake_cluster.c), as rt_transport.h is for client connections.
 *
 * A link carries four things, which are all a cluster of nodes needs from its bus:
 *   - publish/subscribe on subjects ("<name>.nodes.changed"; '*' matches one dot-separated
 *     token, '>' the rest), with optional queue groups (one member of a group gets each message),
 *     so that a node receives only what it has shown interest in (and never its own messages);
 *   - request/reply with a timeout (a reply subject the link invents; the responder publishes
 *     its answer there), for asking one node something;
 *   - key-value buckets with an atomic create and a per-bucket time to live (a key not written
 *     again within the TTL disappears), for membership and, later, registries;
 *   - link state and traffic counters.
 *
 * Threading: every op is called on the service thread and returns without blocking. Every
 * callback (message, reply, kv result, state) runs later on the service thread, never from inside
 * an op, so a callback may call ops. A request or kv op gets its callback exactly once (with an
 * error when the link goes down or the request times out), unless the link is freed first: a link
 * drops the callbacks still pending when it is freed. Pointers handed to ops are borrowed for the
 * call (copied when needed); pointers handed to callbacks are valid during the callback. */
#ifndef RT_CLUSTER_LINK_H
#define RT_CLUSTER_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wamp_err.h"

typedef enum rt_cluster_link_state {
    RT_CLUSTER_LINK_CONNECTING = 0, /* never connected yet */
    RT_CLUSTER_LINK_UP,
    RT_CLUSTER_LINK_DOWN /* was up, lost; reconnecting */
} rt_cluster_link_state;

/* "connecting", "up", "down". */
const char *rt_cluster_link_state_name(rt_cluster_link_state st);

/* A message on a subscribed subject; reply is the subject to answer a request on, or NULL. */
typedef void (*rt_cluster_msg_fn)(void *arg, const char *subject, const char *reply,
                                  const void *data, size_t len);
/* The answer to a request: err WAMP_OK with the reply's bytes; WAMP_ENOTFOUND nobody listens on
 * the subject; WAMP_EIO no reply within the timeout; WAMP_ECLOSED the link is down. */
typedef void (*rt_cluster_reply_fn)(void *arg, wamp_err err, const void *data, size_t len);

typedef enum rt_cluster_kv_kind {
    RT_CLUSTER_KV_CREATE, /* set key only if it does not exist (or was deleted or expired) */
    RT_CLUSTER_KV_PUT,    /* set key, whatever it holds */
    RT_CLUSTER_KV_GET,
    RT_CLUSTER_KV_DELETE,
    RT_CLUSTER_KV_KEYS /* every live key of the bucket */
} rt_cluster_kv_kind;

typedef struct rt_cluster_kv_op {
    rt_cluster_kv_kind kind;
    /* Bucket name (letters, digits, '-', '_'); the link creates it on first use, with ttl_ms
     * as the age after which a key not written again disappears (0 = never). A bucket that
     * exists already keeps the TTL it was created with. */
    const char *bucket;
    uint32_t ttl_ms;
    const char *key; /* letters, digits, '-', '_', '.', '='; NULL for KEYS */
    const void *value;
    size_t len; /* CREATE, PUT */
} rt_cluster_kv_op;

typedef struct rt_cluster_kv_result {
    /* WAMP_OK; WAMP_EEXIST (CREATE: the key exists); WAMP_ENOTFOUND (GET: no such key);
     * WAMP_ECLOSED (the link is down); WAMP_EIO (any other failure, logged by the link). */
    wamp_err err;
    const void *value; /* GET */
    size_t len;
    const char *const *keys; /* KEYS, in no particular order */
    size_t n_keys;
} rt_cluster_kv_result;

typedef void (*rt_cluster_kv_fn)(void *arg, const rt_cluster_kv_result *res);

typedef struct rt_cluster_link_stats {
    rt_cluster_link_state state;
    uint64_t reconnects; /* times the link came back after being up */
    uint64_t msgs_in, msgs_out, bytes_in, bytes_out;
    uint64_t dropped; /* incoming messages dropped over the link's queue limit */
} rt_cluster_link_stats;

typedef struct rt_cluster_ops {
    /* Sends data to subject (reply: the subject a responder answers on, or NULL). WAMP_ECLOSED
     * when the link is down (nothing sent), WAMP_ETOOBIG over the link's outgoing limit. */
    wamp_err (*publish)(void *link, const char *subject, const char *reply, const void *data,
                        size_t len);
    /* Calls fn(arg, ...) for every message on subject (queue: a queue group name, or NULL).
     * The subscription survives the link going down and up. *sub is its handle. */
    wamp_err (*subscribe)(void *link, const char *subject, const char *queue, rt_cluster_msg_fn fn,
                          void *arg, uint64_t *sub);
    /* No more calls for sub once this returns. Unknown handles are ignored. */
    void (*unsubscribe)(void *link, uint64_t sub);
    /* Sends data to subject with a fresh reply subject; fn gets the first reply or an error. */
    wamp_err (*request)(void *link, const char *subject, const void *data, size_t len,
                        uint32_t timeout_ms, rt_cluster_reply_fn fn, void *arg);
    /* One key-value operation; fn gets its result (fn NULL: the result is dropped). */
    wamp_err (*kv)(void *link, const rt_cluster_kv_op *op, rt_cluster_kv_fn fn, void *arg);
    void (*stats)(void *link, rt_cluster_link_stats *out);
} rt_cluster_ops;

#endif /* RT_CLUSTER_LINK_H */
