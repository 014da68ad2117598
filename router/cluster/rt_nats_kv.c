/* rt_nats_kv.c: the key-value side of the NATS adapter: one worker thread runs the queued
 * operations (cnats' JetStream key-value calls block) and queues their results as events for the
 * service thread (rt_nats.c). Buckets are JetStream streams "KV_<bucket>"; kvConfig.TTL is
 * copied into the stream's max_age, in nanoseconds. They are created in memory storage: the
 * membership is live state, and a restarted server simply gets every node's key again (the
 * cache of bucket handles is dropped at each (re)connection). kvStore_Create() fails alike for
 * "the key exists" and for other errors; a kvStore_Get() after a failed create tells them
 * apart. */
#include <nats/nats.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_log.h"
#include "rt_nats_int.h"

/* ---- The key-value worker ---------------------------------------------------------------- */

static void job_free(job *j)
{
    if (j) {
        free(j->bucket);
        free(j->key);
        free(j->value);
        free(j);
    }
}

void rt_nats_log_error(const char *what, natsStatus s)
{
    natsStatus ls = NATS_OK;
    const char *last = nats_GetLastError(&ls);
    RT_LOG_DEBUG(0, "cluster: %s: %s (%s)", what, natsStatus_GetText(s), last ? last : "");
}

static void bucket_drop(rt_nats *n, const char *name)
{
    for (kvb **pp = &n->buckets; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->name, name) == 0) {
            kvb *b = *pp;
            *pp = b->next;
            kvStore_Destroy(b->kv);
            free(b->name);
            free(b);
            return;
        }
    }
}

/* The bucket, created with ttl_ms if it does not exist yet. */
static natsStatus bucket_get(rt_nats *n, const job *j, kvStore **out)
{
    for (kvb *b = n->buckets; b; b = b->next) {
        if (strcmp(b->name, j->bucket) == 0) {
            *out = b->kv;
            return NATS_OK;
        }
    }
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = j->bucket;
    kc.History = 1;
    kc.TTL = (int64_t)j->ttl_ms * 1000000; /* ns (stream max_age) */
    kc.StorageType = js_MemoryStorage;
    kvStore *kv = NULL;
    natsStatus s = js_CreateKeyValue(&kv, n->js, &kc);
    if (s != NATS_OK) {
        /* Created by another node with another TTL: use it as it is. */
        s = js_KeyValue(&kv, n->js, j->bucket);
    }
    if (s != NATS_OK) {
        rt_nats_log_error("key-value bucket", s);
        return s;
    }
    kvb *b = calloc(1, sizeof(*b));
    if (!b || !(b->name = strdup(j->bucket))) {
        free(b);
        kvStore_Destroy(kv);
        return NATS_NO_MEMORY;
    }
    b->kv = kv;
    b->next = n->buckets;
    n->buckets = b;
    *out = kv;
    return NATS_OK;
}

wamp_err rt_nats_err_of(natsStatus s)
{
    switch (s) {
    case NATS_OK:
        return WAMP_OK;
    case NATS_NO_MEMORY:
        return WAMP_ENOMEM;
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
        return WAMP_ECLOSED;
    case NATS_MAX_PAYLOAD: /* over the server's max_payload */
        return WAMP_ETOOBIG;
    default:
        return WAMP_EIO;
    }
}

/* KEYS: every live key (kvStore_Keys() skips deleted ones); none is NATS_NOT_FOUND. */
static void list_keys(kvStore *kv, ev *e)
{
    kvKeysList list = {0};
    natsStatus s = kvStore_Keys(&list, kv, NULL);
    if (s == NATS_NOT_FOUND) {
        return;
    }
    if (s != NATS_OK) {
        e->err = rt_nats_err_of(s);
        rt_nats_log_error("key-value keys", s);
        return;
    }
    size_t cnt = list.Count > 0 ? (size_t)list.Count : 0;
    e->keys = calloc(cnt ? cnt : 1, sizeof(char *));
    for (size_t i = 0; e->keys && i < cnt; i++) {
        e->keys[i] = strdup(list.Keys[i]);
        e->n_keys += e->keys[i] != NULL;
    }
    e->err = e->keys && e->n_keys == cnt ? WAMP_OK : WAMP_ENOMEM;
    kvKeysList_Destroy(&list);
}

/* Runs one kv operation into e (its result). false: retry once (the bucket may have gone,
 * e.g. a restarted server). */
static bool run_job_once(rt_nats *n, const job *j, ev *e)
{
    kvStore *kv = NULL;
    natsStatus s = bucket_get(n, j, &kv);
    if (s != NATS_OK) {
        e->err = rt_nats_err_of(s);
        return true;
    }
    int len = (int)j->len;
    kvEntry *ent = NULL;
    switch (j->kind) {
    case RT_CLUSTER_KV_CREATE:
        s = kvStore_Create(NULL, kv, j->key, j->value, len);
        if (s != NATS_OK && kvStore_Get(&ent, kv, j->key) == NATS_OK) {
            kvEntry_Destroy(ent);
            e->err = WAMP_EEXIST;
            return true;
        }
        break;
    case RT_CLUSTER_KV_PUT:
        s = kvStore_Put(NULL, kv, j->key, j->value, len);
        break;
    case RT_CLUSTER_KV_GET:
        s = kvStore_Get(&ent, kv, j->key);
        if (s == NATS_NOT_FOUND) {
            e->err = WAMP_ENOTFOUND;
            return true;
        }
        if (s == NATS_OK) {
            int vlen = kvEntry_ValueLen(ent);
            e->len = vlen > 0 ? (size_t)vlen : 0;
            e->data = rt_nats_memdup(kvEntry_Value(ent), e->len);
            e->err = e->data ? WAMP_OK : WAMP_ENOMEM;
            kvEntry_Destroy(ent);
            return true;
        }
        break;
    case RT_CLUSTER_KV_DELETE:
        s = kvStore_Delete(kv, j->key);
        break;
    case RT_CLUSTER_KV_KEYS:
        list_keys(kv, e);
        if (e->err == WAMP_OK || e->err == WAMP_ENOMEM) {
            return true;
        }
        bucket_drop(n, j->bucket);
        return false;
    }
    e->err = rt_nats_err_of(s);
    if (s == NATS_OK) {
        return true;
    }
    rt_nats_log_error("key-value operation", s);
    bucket_drop(n, j->bucket);
    return false;
}

static void run_job(rt_nats *n, const job *j)
{
    ev *e = rt_nats_ev_new(EV_KV);
    if (!e) {
        return;
    }
    e->kfn = j->fn;
    e->arg = j->arg;
    if (natsConnection_Status(n->nc) != NATS_CONN_STATUS_CONNECTED) {
        e->err = WAMP_ECLOSED;
    } else if (!run_job_once(n, j, e)) {
        free(e->data);
        e->data = NULL;
        e->len = 0;
        run_job_once(n, j, e);
    }
    rt_nats_ev_push(n, e);
}

void *rt_nats_worker_main(void *arg)
{
    rt_nats *n = arg;
    pthread_mutex_lock(&n->mu);
    for (;;) {
        while (!n->jhead && !n->stop) {
            pthread_cond_wait(&n->job_cv, &n->mu);
        }
        job *j = n->jhead;
        if (!j) {
            break; /* stopping, and every queued job has run */
        }
        n->jhead = j->next;
        if (!n->jhead) {
            n->jtail = NULL;
        }
        n->pending_bytes -= j->cost;
        bool stale = n->buckets_stale;
        n->buckets_stale = false;
        pthread_mutex_unlock(&n->mu);
        while (stale && n->buckets) {
            bucket_drop(n, n->buckets->name);
        }
        run_job(n, j);
        job_free(j);
        pthread_mutex_lock(&n->mu);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

/* Service thread: queues the operation for the worker. */
wamp_err rt_nats_op_kv(void *link, const rt_cluster_kv_op *op, rt_cluster_kv_fn fn, void *arg)
{
    rt_nats *n = link;
    job *j = calloc(1, sizeof(*j));
    if (!j) {
        return WAMP_ENOMEM;
    }
    j->kind = op->kind;
    j->ttl_ms = op->ttl_ms;
    j->fn = fn;
    j->arg = arg;
    j->bucket = strdup(op->bucket);
    j->key = rt_nats_strdup_or_null(op->key);
    j->value = op->value ? rt_nats_memdup(op->value, op->len) : NULL;
    j->len = op->len;
    j->cost = ENTRY_COST + op->len;
    if (!j->bucket || (op->key && !j->key) || (op->value && !j->value)) {
        job_free(j);
        return WAMP_ENOMEM;
    }
    pthread_mutex_lock(&n->mu);
    if (n->pending_bytes + j->cost > n->cfg->max_pending_bytes) {
        pthread_mutex_unlock(&n->mu);
        job_free(j);
        return WAMP_ETOOBIG;
    }
    n->pending_bytes += j->cost;
    if (n->jtail) {
        n->jtail->next = j;
    } else {
        n->jhead = j;
    }
    n->jtail = j;
    pthread_cond_signal(&n->job_cv);
    pthread_mutex_unlock(&n->mu);
    return WAMP_OK;
}

void rt_nats_kv_fini(rt_nats *n)
{
    while (n->buckets) {
        bucket_drop(n, n->buckets->name);
    }
    while (n->jhead) {
        job *j = n->jhead;
        n->jhead = j->next;
        job_free(j);
    }
}
