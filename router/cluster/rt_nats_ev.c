/* rt_nats_ev.c: what both halves of the NATS adapter share (rt_nats.c, the connection and its
 * callbacks; rt_nats_kv.c, the key-value worker): the event queue from any thread to the service
 * thread, status mapping and logging, and small copies. Both call into this file; it calls
 * neither. */
#include <nats/nats.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rt_log.h"
#include "rt_nats_int.h"

char *rt_nats_strdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void *rt_nats_memdup(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n) {
        memcpy(q, p, n);
    }
    return q;
}

void rt_nats_ev_free(ev *e)
{
    if (!e) {
        return;
    }
    free(e->subject);
    free(e->reply);
    free(e->data);
    for (size_t i = 0; i < e->n_keys; i++) {
        free(e->keys[i]);
    }
    free(e->keys);
    free(e);
}

/* Queues e (taken) and wakes the service loop. A message or a reply received over
 * max_pending_bytes is dropped (counted: a request then times out); other events (state, kv
 * results, the answers of refused requests) are always queued: each answers an operation that
 * was admitted, and their number is bounded by the operations. */
void rt_nats_ev_push(rt_nats *n, ev *e)
{
    pthread_mutex_lock(&n->mu);
    if ((e->kind == EV_MSG || e->capped) &&
        n->pending_bytes + e->cost > n->cfg->max_pending_bytes) {
        n->dropped++;
        pthread_mutex_unlock(&n->mu);
        rt_nats_ev_free(e);
        return;
    }
    n->pending_bytes += e->cost;
    bool was_empty = !n->head;
    if (n->tail) {
        n->tail->next = e;
    } else {
        n->head = e;
    }
    n->tail = e;
    void (*wake)(void *) = n->wake;
    void *ctx = n->wake_ctx;
    pthread_cond_broadcast(&n->ev_cv);
    /* Called under the lock: rt_nats_set_wake(NULL) then guarantees no later call. */
    if (was_empty && wake) {
        wake(ctx);
    }
    pthread_mutex_unlock(&n->mu);
}

ev *rt_nats_ev_new(ev_kind kind)
{
    ev *e = calloc(1, sizeof(*e));
    if (e) {
        e->kind = kind;
        e->cost = ENTRY_COST;
    }
    return e;
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

void rt_nats_log_error(const char *what, natsStatus s)
{
    natsStatus ls = NATS_OK;
    const char *last = nats_GetLastError(&ls);
    RT_LOG_DEBUG(0, "cluster: %s: %s (%s)", what, natsStatus_GetText(s), last ? last : "");
}
