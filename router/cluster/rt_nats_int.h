/* rt_nats_int.h: what the two files of the NATS adapter share (not a public interface):
 * rt_nats.c (connection, subscriptions, requests, the event queue, the service side) and
 * rt_nats_kv.c (the key-value worker thread). rt_nats.h has the threading contract. */
#ifndef RT_NATS_INT_H
#define RT_NATS_INT_H

#include <nats/nats.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_nats.h"

/* A queued event or job also costs its bookkeeping. */
#define ENTRY_COST 64

typedef enum ev_kind {
    EV_STATE,
    EV_MSG,
    EV_REPLY,
    EV_KV
} ev_kind;

typedef struct ev {
    struct ev *next;
    ev_kind kind;
    rt_cluster_link_state st; /* EV_STATE */
    uint64_t id;              /* EV_MSG: subscription; EV_REPLY: request token */
    char *subject, *reply;    /* EV_MSG */
    void *data;               /* EV_MSG, EV_REPLY, EV_KV (GET) */
    size_t len;
    wamp_err err; /* EV_REPLY, EV_KV */
    rt_cluster_kv_fn kfn;
    void *arg;
    char **keys; /* EV_KV (KEYS) */
    size_t n_keys;
    size_t cost; /* counted in pending_bytes */
    bool capped; /* EV_REPLY from the bus: dropped over max_pending_bytes, as EV_MSG */
} ev;

typedef struct job {
    struct job *next;
    rt_cluster_kv_kind kind;
    char *bucket, *key;
    void *value;
    size_t len;
    uint32_t ttl_ms;
    rt_cluster_kv_fn fn;
    void *arg;
    size_t cost;
} job;

typedef struct nsub {
    struct nsub *next;
    rt_nats *n;
    uint64_t id;
    natsSubscription *sub;
    rt_cluster_msg_fn fn;
    void *arg;
} nsub;

typedef struct preq {
    struct preq *next;
    uint64_t token;
    uint64_t deadline_us;
    rt_cluster_reply_fn fn;
    void *arg;
} preq;

typedef struct kvb {
    struct kvb *next;
    char *name;
    kvStore *kv;
} kvb;

struct rt_nats {
    const rt_cluster_config *cfg;
    rt_cluster *core;
    natsOptions *opts;
    natsConnection *nc;
    jsCtx *js;
    natsInbox *inbox;
    natsSubscription *inbox_sub;
    natsStatistics *stats;

    /* Service thread only. */
    rt_cluster_link_state state;
    nsub *subs, *retired;
    uint64_t next_sub;
    preq *reqs;
    uint64_t next_token;
    uint64_t drops_logged;
    uint64_t last_drop_log_us;
    bool closed_logged;

    /* Shared, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t ev_cv;
    pthread_cond_t job_cv;
    ev *head, *tail;
    job *jhead, *jtail;
    size_t pending_bytes; /* events and jobs */
    uint64_t dropped;
    void (*wake)(void *ctx);
    void *wake_ctx;
    bool stop;
    /* (Re)connected: the server may be a restarted one that lost the memory buckets. */
    bool buckets_stale;
    /* cnats closed the connection for good (e.g. the server refused the credentials): the
     * reason, from natsConnection_GetLastError(). */
    bool closed;
    char closed_reason[256];

    /* Worker thread only (and rt_nats_free() after the join). */
    pthread_t worker;
    bool worker_started;
    kvb *buckets;
    bool sync_ok; /* mu, cv created */
};

char *rt_nats_strdup_or_null(const char *s);
/* malloc'd copy of n bytes (at least 1 allocated); NULL on allocation failure. */
void *rt_nats_memdup(const void *p, size_t n);
/* A zeroed event of kind with cost ENTRY_COST, or NULL. */
ev *rt_nats_ev_new(ev_kind kind);
void rt_nats_ev_free(ev *e);
/* Any thread: queues e (taken) for the service thread and wakes it (rt_nats.c). */
void rt_nats_ev_push(rt_nats *n, ev *e);
wamp_err rt_nats_err_of(natsStatus s);
/* DEBUG log line with cnats' last error of this thread. */
void rt_nats_log_error(const char *what, natsStatus s);

/* rt_nats_kv.c */
void *rt_nats_worker_main(void *arg);
wamp_err rt_nats_op_kv(void *link, const rt_cluster_kv_op *op, rt_cluster_kv_fn fn, void *arg);
/* After the worker has been joined: drops the bucket handles and the jobs left. */
void rt_nats_kv_fini(rt_nats *n);

#endif /* RT_NATS_INT_H */
