/* rt_nats.c: the cluster link over NATS (rt_nats.h has the threading contract).
 *
 * cnats 3.4 notes:
 *   - natsOptions_SetRetryOnFailedConnect(): natsConnection_Connect() returns
 *     NATS_NOT_YET_CONNECTED when no server answers and keeps trying in the background; the
 *     connected callback then fires once. Later losses go through the disconnected and
 *     reconnected callbacks (MaxReconnect -1: for ever).
 *   - Pings every heartbeat_interval, two unanswered ones close the connection: a server that
 *     vanishes without a TCP reset is noticed within about three heartbeats.
 *   - Key-value operations run on a worker thread: rt_nats_kv.c.
 *   - Requests: one wildcard subscription "<inbox>.*" takes every reply; the last token is the
 *     request's number. A request nobody listens to gets a "no responders" status message
 *     (natsMsg_IsNoResponders()).
 *   - No echo: a node never receives its own messages. Subscriptions are removed and the
 *     connection flushed before it closes: a message arriving while the connection closes was
 *     seen left unfreed by cnats (LeakSanitizer, in the e2e tests).
 *   - A natsSubscription's handler may still run while natsSubscription_Destroy() is called
 *     from another thread; the closure of an unsubscribed subscription is therefore kept (on
 *     the retired list) until rt_nats_free() has destroyed the connection. */
#include "rt_nats.h"

#include <inttypes.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_log.h"
#include "rt_nats_int.h"

/* Dropped-message log lines: at most one per this many microseconds. */
#define DROP_LOG_INTERVAL_US (10ull * 1000 * 1000)
/* How long rt_nats_free() waits for the last messages (a leave) to reach the server. */
#define FLUSH_TIMEOUT_MS 1000
/* How long rt_nats_free() lets cnats' threads finish. */
#define CLOSE_TIMEOUT_MS 2000

/* The types (ev, job, nsub, preq, kvb, struct rt_nats) are in rt_nats_int.h. */

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void push_state(rt_nats *n, rt_cluster_link_state st)
{
    ev *e = rt_nats_ev_new(EV_STATE);
    if (e) {
        e->st = st;
        rt_nats_ev_push(n, e);
    }
}

/* from_bus: a reply received, which any process on the server can send to the inbox, in any
 * number and size: held to max_pending_bytes as a message is (rt_nats_ev_push()). Else the
 * answer to an op refused here, always queued. */
static void push_reply(rt_nats *n, uint64_t token, wamp_err err, const void *data, size_t len,
                       bool from_bus)
{
    ev *e = rt_nats_ev_new(EV_REPLY);
    if (!e) {
        return;
    }
    e->capped = from_bus;
    e->id = token;
    e->err = err;
    e->data = rt_nats_memdup(data, len);
    e->len = len;
    e->cost += len;
    if (!e->data) {
        e->err = WAMP_ENOMEM;
        e->len = 0;
    }
    rt_nats_ev_push(n, e);
}

/* ---- cnats callbacks (cnats threads) ----------------------------------------------------- */

static void on_connected(natsConnection *nc, void *closure)
{
    (void)nc;
    rt_nats *n = closure;
    pthread_mutex_lock(&n->mu);
    n->buckets_stale = true;
    pthread_mutex_unlock(&n->mu);
    push_state(n, RT_CLUSTER_LINK_UP);
}

static void on_disconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    push_state(closure, RT_CLUSTER_LINK_DOWN);
}

static void on_closed(natsConnection *nc, void *closure)
{
    rt_nats *n = closure;
    const char *last = NULL;
    natsConnection_GetLastError(nc, &last);
    pthread_mutex_lock(&n->mu);
    n->closed = true;
    snprintf(n->closed_reason, sizeof(n->closed_reason), "%s",
             last && *last ? last : "connection closed");
    pthread_mutex_unlock(&n->mu);
    push_state(n, RT_CLUSTER_LINK_DOWN);
}

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    nsub *s = closure;
    int dlen = natsMsg_GetDataLength(msg);
    size_t len = dlen > 0 ? (size_t)dlen : 0;
    ev *e = rt_nats_ev_new(EV_MSG);
    if (e) {
        e->id = s->id;
        e->subject = rt_nats_strdup_or_null(natsMsg_GetSubject(msg));
        e->reply = rt_nats_strdup_or_null(natsMsg_GetReply(msg));
        e->data = rt_nats_memdup(natsMsg_GetData(msg), len);
        e->len = len;
        e->cost += len + (e->subject ? strlen(e->subject) : 0);
        if (!e->subject || !e->data) {
            rt_nats_ev_free(e);
            e = NULL;
        }
    }
    natsMsg_Destroy(msg);
    if (e) {
        rt_nats_ev_push(s->n, e);
    }
}

static void on_inbox(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    rt_nats *n = closure;
    const char *subj = natsMsg_GetSubject(msg);
    const char *dot = subj ? strrchr(subj, '.') : NULL;
    char *end = NULL;
    uint64_t token = dot ? strtoull(dot + 1, &end, 10) : 0;
    if (token && end && !*end) {
        int dlen = natsMsg_GetDataLength(msg);
        if (natsMsg_IsNoResponders(msg)) {
            push_reply(n, token, WAMP_ENOTFOUND, NULL, 0, true);
        } else {
            push_reply(n, token, WAMP_OK, natsMsg_GetData(msg), dlen > 0 ? (size_t)dlen : 0, true);
        }
    }
    natsMsg_Destroy(msg);
}

/* ---- Ops (service thread) ---------------------------------------------------------------- */

static wamp_err op_publish(void *link, const char *subject, const char *reply, const void *data,
                           size_t len)
{
    rt_nats *n = link;
    if (n->state != RT_CLUSTER_LINK_UP) {
        return WAMP_ECLOSED;
    }
    if (len > n->cfg->max_pending_bytes) {
        return WAMP_ETOOBIG;
    }
    natsStatus s = reply ? natsConnection_PublishRequest(n->nc, subject, reply, data, (int)len)
                         : natsConnection_Publish(n->nc, subject, data, (int)len);
    if (s == NATS_INSUFFICIENT_BUFFER) {
        return WAMP_ETOOBIG;
    }
    return rt_nats_err_of(s);
}

static wamp_err op_subscribe(void *link, const char *subject, const char *queue,
                             rt_cluster_msg_fn fn, void *arg, uint64_t *out)
{
    rt_nats *n = link;
    nsub *s = calloc(1, sizeof(*s));
    if (!s) {
        return WAMP_ENOMEM;
    }
    s->n = n;
    s->id = ++n->next_sub;
    s->fn = fn;
    s->arg = arg;
    natsStatus st = queue ? natsConnection_QueueSubscribe(&s->sub, n->nc, subject, queue, on_msg, s)
                          : natsConnection_Subscribe(&s->sub, n->nc, subject, on_msg, s);
    if (st != NATS_OK && natsConnection_IsClosed(n->nc)) {
        s->sub = NULL; /* closed for good: it would never get a message anyway */
    } else if (st != NATS_OK) {
        rt_nats_log_error("subscribe", st);
        free(s);
        return rt_nats_err_of(st);
    }
    s->next = n->subs;
    n->subs = s;
    *out = s->id;
    return WAMP_OK;
}

static void op_unsubscribe(void *link, uint64_t id)
{
    rt_nats *n = link;
    for (nsub **pp = &n->subs; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            nsub *s = *pp;
            *pp = s->next;
            natsSubscription_Unsubscribe(s->sub);
            natsSubscription_Destroy(s->sub);
            s->sub = NULL;
            s->next = n->retired;
            n->retired = s;
            return;
        }
    }
}

static wamp_err op_request(void *link, const char *subject, const void *data, size_t len,
                           uint32_t timeout_ms, rt_cluster_reply_fn fn, void *arg)
{
    rt_nats *n = link;
    preq *r = calloc(1, sizeof(*r));
    if (!r) {
        return WAMP_ENOMEM;
    }
    r->token = ++n->next_token;
    r->deadline_us = mono_us() + (uint64_t)timeout_ms * 1000;
    r->fn = fn;
    r->arg = arg;
    r->next = n->reqs;
    n->reqs = r;
    char reply[128];
    snprintf(reply, sizeof(reply), "%s.%" PRIu64, n->inbox, r->token);
    wamp_err err = WAMP_ECLOSED;
    if (n->state == RT_CLUSTER_LINK_UP) {
        err = len > n->cfg->max_pending_bytes ? WAMP_ETOOBIG
                                              : rt_nats_err_of(natsConnection_PublishRequest(
                                                        n->nc, subject, reply, data, (int)len));
    }
    if (err != WAMP_OK) {
        /* Answered through the queue: callbacks never run inside an op. */
        push_reply(n, r->token, err, NULL, 0, false);
    }
    return WAMP_OK;
}

static void op_stats(void *link, rt_cluster_link_stats *out)
{
    rt_nats *n = link;
    memset(out, 0, sizeof(*out));
    out->state = n->state;
    if (natsConnection_GetStats(n->nc, n->stats) == NATS_OK) {
        natsStatistics_GetCounts(n->stats, &out->msgs_in, &out->bytes_in, &out->msgs_out,
                                 &out->bytes_out, &out->reconnects);
    }
    pthread_mutex_lock(&n->mu);
    out->dropped = n->dropped;
    pthread_mutex_unlock(&n->mu);
}

static const rt_cluster_ops nats_ops = {
        .publish = op_publish,
        .subscribe = op_subscribe,
        .unsubscribe = op_unsubscribe,
        .request = op_request,
        .kv = rt_nats_op_kv,
        .stats = op_stats,
};

const rt_cluster_ops *rt_nats_link_ops(void)
{
    return &nats_ops;
}

/* ---- Service (service thread) ------------------------------------------------------------ */

static void deliver_reply(rt_nats *n, uint64_t token, wamp_err err, const void *data, size_t len)
{
    for (preq **pp = &n->reqs; *pp; pp = &(*pp)->next) {
        if ((*pp)->token == token) {
            preq *r = *pp;
            *pp = r->next;
            r->fn(r->arg, err, data, len);
            free(r);
            return;
        }
    }
    /* A late reply to a request that timed out: nothing waits for it. */
}

static void dispatch(rt_nats *n, ev *e)
{
    switch (e->kind) {
    case EV_STATE:
        if (e->st == n->state) {
            break;
        }
        n->state = e->st;
        if (e->st != RT_CLUSTER_LINK_UP) {
            /* Requests in flight get no reply over a lost connection. */
            while (n->reqs) {
                deliver_reply(n, n->reqs->token, WAMP_ECLOSED, NULL, 0);
            }
        }
        rt_cluster_on_link_state(n->core, e->st);
        break;
    case EV_MSG:
        for (nsub *s = n->subs; s; s = s->next) {
            if (s->id == e->id) {
                s->fn(s->arg, e->subject, e->reply, e->data, e->len);
                break;
            }
        }
        break;
    case EV_REPLY:
        deliver_reply(n, e->id, e->err, e->data, e->len);
        break;
    case EV_KV:
        if (e->kfn) {
            rt_cluster_kv_result r = {.err = e->err,
                                      .value = e->data,
                                      .len = e->len,
                                      .keys = (const char *const *)e->keys,
                                      .n_keys = e->n_keys};
            e->kfn(e->arg, &r);
        }
        break;
    }
}

void rt_nats_service(rt_nats *n)
{
    pthread_mutex_lock(&n->mu);
    ev *e = n->head;
    n->head = n->tail = NULL;
    uint64_t dropped = n->dropped;
    pthread_mutex_unlock(&n->mu);
    while (e) {
        ev *next = e->next;
        size_t cost = e->cost;
        dispatch(n, e);
        rt_nats_ev_free(e);
        pthread_mutex_lock(&n->mu);
        n->pending_bytes -= cost;
        pthread_mutex_unlock(&n->mu);
        e = next;
    }
    uint64_t now = mono_us();
    for (preq *r = n->reqs; r;) {
        preq *next = r->next;
        if (now >= r->deadline_us) {
            deliver_reply(n, r->token, WAMP_EIO, NULL, 0);
        }
        r = next;
    }
    char why[256];
    if (!n->closed_logged && rt_nats_is_closed(n, why, sizeof(why))) {
        n->closed_logged = true;
        RT_LOG_ERR(0,
                   "cluster %s: the NATS connection is closed for good (%s): check "
                   "wampscope.cluster.nats; this node runs alone until restarted",
                   n->cfg->name, why);
    }
    if (dropped > n->drops_logged && now - n->last_drop_log_us >= DROP_LOG_INTERVAL_US) {
        RT_LOG_WARN(0,
                    "cluster %s: %" PRIu64 " incoming message(s) dropped: more than "
                    "max_pending_bytes (%zu) waiting",
                    n->cfg->name, dropped - n->drops_logged, n->cfg->max_pending_bytes);
        n->drops_logged = dropped;
        n->last_drop_log_us = now;
    }
}

bool rt_nats_is_closed(rt_nats *n, char *why, size_t len)
{
    pthread_mutex_lock(&n->mu);
    bool closed = n->closed;
    if (closed && why && len) {
        snprintf(why, len, "%s", n->closed_reason);
    }
    pthread_mutex_unlock(&n->mu);
    return closed;
}

void rt_nats_wait(rt_nats *n, uint32_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)ms * 1000000u;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&n->mu);
    if (!n->head) {
        pthread_cond_timedwait(&n->ev_cv, &n->mu, &ts);
    }
    pthread_mutex_unlock(&n->mu);
}

void rt_nats_set_wake(rt_nats *n, void (*wake)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&n->mu);
    n->wake = wake;
    n->wake_ctx = ctx;
    pthread_mutex_unlock(&n->mu);
}

/* The link's condition variables, their waits timed on the monotonic clock: a step of the wall
 * clock neither lengthens nor cuts them (rt_nats_wait()). */
static void conds_init(rt_nats *n)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->ev_cv, &ca);
    pthread_cond_init(&n->job_cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* ---- Life cycle -------------------------------------------------------------------------- */

static natsStatus set_options(rt_nats *n, char *err, size_t err_len)
{
    const rt_cluster_config *c = n->cfg;
    natsOptions *o = n->opts;
    natsStatus s = natsOptions_SetServers(o, (const char **)c->servers, (int)c->n_servers);
    if (s == NATS_OK) {
        s = natsOptions_SetName(o, "wampscope");
    }
    if (s == NATS_OK) {
        s = natsOptions_SetTimeout(o, c->connect_timeout_ms);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectWait(o, c->reconnect_wait_ms);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetMaxReconnect(o, -1);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetRetryOnFailedConnect(o, true, on_connected, n);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetDisconnectedCB(o, on_disconnected, n);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectedCB(o, on_connected, n);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetClosedCB(o, on_closed, n);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetReconnectBufSize(
                o, c->max_pending_bytes > INT32_MAX ? INT32_MAX : (int)c->max_pending_bytes);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetPingInterval(o, c->heartbeat_ms);
    }
    if (s == NATS_OK) {
        s = natsOptions_SetMaxPingsOut(o, 2);
    }
    if (s == NATS_OK) {
        /* A node never needs its own messages (the core announces to the others). */
        s = natsOptions_SetNoEcho(o, true);
    }
    if (s == NATS_OK && c->send_asap) {
        /* cluster.send_asap: each publish written at once instead of by cnats' flusher thread
         * about a millisecond later (a call crossing nodes waits for two of them). */
        s = natsOptions_SetSendAsap(o, true);
    }
    if (s == NATS_OK && c->user) {
        s = natsOptions_SetUserInfo(o, c->user, c->password);
    }
    if (s == NATS_OK && c->token) {
        s = natsOptions_SetToken(o, c->token);
    }
    if (s == NATS_OK && c->creds) {
        s = natsOptions_SetUserCredentialsFromFiles(o, c->creds, NULL);
    }
    if (s == NATS_OK && c->tls) {
        s = natsOptions_SetSecure(o, true);
        if (s == NATS_OK && c->tls_ca) {
            s = natsOptions_LoadCATrustedCertificates(o, c->tls_ca);
        }
        if (s == NATS_OK && c->tls_certificate) {
            s = natsOptions_LoadCertificatesChain(o, c->tls_certificate, c->tls_key);
        }
    }
    if (s != NATS_OK) {
        natsStatus ls = NATS_OK;
        const char *last = nats_GetLastError(&ls);
        snprintf(err, err_len, "cluster: NATS options: %s", last ? last : natsStatus_GetText(s));
    }
    return s;
}

wamp_err rt_nats_new(const rt_cluster_config *cfg, rt_cluster *core, rt_nats **out, char *err,
                     size_t err_len)
{
    *out = NULL;
    rt_nats *n = calloc(1, sizeof(*n));
    if (!n) {
        snprintf(err, err_len, "out of memory");
        return WAMP_ENOMEM;
    }
    n->cfg = cfg;
    n->core = core;
    n->state = RT_CLUSTER_LINK_CONNECTING;
    wamp_err e = WAMP_EIO;
    if (pthread_mutex_init(&n->mu, NULL) != 0) {
        free(n);
        snprintf(err, err_len, "out of memory");
        return WAMP_ENOMEM;
    }
    conds_init(n);
    n->sync_ok = true;
    if (natsOptions_Create(&n->opts) != NATS_OK || natsStatistics_Create(&n->stats) != NATS_OK ||
        natsInbox_Create(&n->inbox) != NATS_OK) {
        snprintf(err, err_len, "cluster: cannot initialise the NATS client");
        goto fail;
    }
    if (set_options(n, err, err_len) != NATS_OK) {
        goto fail;
    }
    natsStatus s = natsConnection_Connect(&n->nc, n->opts);
    bool connected = s == NATS_OK;
    if (s == NATS_NOT_YET_CONNECTED) {
        RT_LOG_WARN(0,
                    "cluster %s: no NATS server reachable (%s%s): starting alone, routing "
                    "locally, retrying every %" PRIu32 " ms",
                    cfg->name, cfg->servers[0], cfg->n_servers > 1 ? ", ..." : "",
                    cfg->reconnect_wait_ms);
    } else if (s != NATS_OK) {
        natsStatus ls = NATS_OK;
        const char *last = nats_GetLastError(&ls);
        snprintf(err, err_len, "cluster: cannot connect to NATS: %s",
                 last ? last : natsStatus_GetText(s));
        goto fail;
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = cfg->request_timeout_ms;
    char pattern[128];
    snprintf(pattern, sizeof(pattern), "%s.*", n->inbox);
    s = natsConnection_JetStream(&n->js, n->nc, &jo);
    if (s == NATS_OK) {
        s = natsConnection_Subscribe(&n->inbox_sub, n->nc, pattern, on_inbox, n);
    }
    if (s != NATS_OK && !natsConnection_IsClosed(n->nc)) {
        const char *last = NULL;
        natsConnection_GetLastError(n->nc, &last);
        snprintf(err, err_len, "cluster %s: the NATS connection cannot be used: %s (%s)", cfg->name,
                 natsStatus_GetText(s), last && *last ? last : "no details");
        goto fail;
    }
    if (pthread_create(&n->worker, NULL, rt_nats_worker_main, n) != 0) {
        snprintf(err, err_len, "cluster: cannot start the key-value thread");
        goto fail;
    }
    n->worker_started = true;
    e = rt_cluster_set_link(core, &nats_ops, n);
    if (e != WAMP_OK) {
        snprintf(err, err_len, "cluster: cannot subscribe: %s", wamp_strerror(e));
        goto fail;
    }
    if (connected) {
        push_state(n, RT_CLUSTER_LINK_UP);
    }
    *out = n;
    return WAMP_OK;
fail:
    rt_nats_free(n);
    return e == WAMP_OK ? WAMP_EIO : e;
}

static void free_subs(nsub *s)
{
    while (s) {
        nsub *next = s->next;
        natsSubscription_Destroy(s->sub);
        free(s);
        s = next;
    }
}

void rt_nats_free(rt_nats *n)
{
    if (!n) {
        return;
    }
    if (n->worker_started) {
        pthread_mutex_lock(&n->mu);
        n->stop = true;
        pthread_cond_signal(&n->job_cv);
        pthread_mutex_unlock(&n->mu);
        pthread_join(n->worker, NULL);
    }
    /* Unsubscribed and flushed before the close, so that no message is on its way in while
     * the connection closes (cnats 3.4 may then leave one unfreed). */
    for (nsub *s = n->subs; s; s = s->next) {
        natsSubscription_Unsubscribe(s->sub);
    }
    if (n->inbox_sub) {
        natsSubscription_Unsubscribe(n->inbox_sub);
    }
    if (n->nc && natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED) {
        natsConnection_FlushTimeout(n->nc, FLUSH_TIMEOUT_MS);
    }
    if (n->nc) {
        natsConnection_Close(n->nc);
    }
    rt_nats_kv_fini(n);
    jsCtx_Destroy(n->js);
    natsSubscription_Destroy(n->inbox_sub);
    natsConnection_Destroy(n->nc);
    free_subs(n->subs);
    free_subs(n->retired);
    natsOptions_Destroy(n->opts);
    natsStatistics_Destroy(n->stats);
    natsInbox_Destroy(n->inbox);
    /* cnats runs connection callbacks (disconnected, on the close above) on its own threads,
     * possibly after natsConnection_Destroy() returned; they use n. Only once every cnats
     * thread has ended may n go. */
    natsStatus cs = nats_CloseAndWait(CLOSE_TIMEOUT_MS);
    if (cs != NATS_OK) {
        RT_LOG_WARN(0,
                    "cluster: the NATS client did not stop within %d ms (%s); its state is "
                    "left allocated",
                    CLOSE_TIMEOUT_MS, natsStatus_GetText(cs));
        return;
    }
    while (n->reqs) {
        preq *r = n->reqs;
        n->reqs = r->next;
        free(r);
    }
    while (n->head) {
        ev *e = n->head;
        n->head = e->next;
        rt_nats_ev_free(e);
    }
    if (n->sync_ok) {
        pthread_cond_destroy(&n->ev_cv);
        pthread_cond_destroy(&n->job_cv);
        pthread_mutex_destroy(&n->mu);
    }
    free(n);
}
