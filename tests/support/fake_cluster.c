/* fake_cluster.c: see fake_cluster.h. Plain linked lists: test sizes are tiny. */
#include "fake_cluster.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INBOX_PREFIX "_INBOX."

typedef enum ev_kind {
    EV_STATE,
    EV_MSG,
    EV_REPLY,
    EV_KV
} ev_kind;

typedef struct ev {
    struct ev *next;
    ev_kind kind;
    fake_link *link;
    rt_cluster_link_state st; /* EV_STATE */
    uint64_t sub;             /* EV_MSG */
    char *subject, *reply;
    void *data;
    size_t len;
    rt_cluster_reply_fn rfn; /* EV_REPLY */
    rt_cluster_kv_fn kfn;    /* EV_KV */
    void *arg;
    wamp_err err;
    char **keys;
    size_t n_keys;
} ev;

typedef struct sub {
    struct sub *next;
    uint64_t id;
    char *subject, *queue;
    rt_cluster_msg_fn fn;
    void *arg;
} sub;

typedef struct pending {
    struct pending *next;
    fake_link *link;
    char inbox[64];
    uint64_t deadline_us;
    rt_cluster_reply_fn fn;
    void *arg;
} pending;

typedef struct entry {
    struct entry *next;
    char *key;
    void *value;
    size_t len;
    uint64_t written_us;
    bool deleted;
} entry;

typedef struct bucket {
    struct bucket *next;
    char *name;
    uint32_t ttl_ms;
    entry *entries;
} bucket;

struct fake_link {
    fake_link *next;
    fake_bus *bus;
    rt_cluster *core;
    bool up; /* as the ops see it */
    bool ever_up;
    sub *subs;
    uint64_t next_sub;
    size_t drop; /* fake_link_drop() */
    rt_cluster_link_stats stats;
};

struct fake_bus {
    fake_clock *clock;
    fake_link *links;
    ev *head, *tail;
    pending *pending;
    bucket *buckets;
    uint64_t next_inbox;
    size_t drop, dropped;
    size_t torn;      /* KEYS listings still to tear (fake_bus_tear_keys) */
    size_t shortened; /* KEYS listings still to shorten (fake_bus_short_keys) */
    size_t kv_fail;   /* key-value operations still to fail (fake_bus_fail_kv) */
};

static void *xmemdup(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n) {
        memcpy(q, p, n);
    }
    return q;
}

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void ev_free(ev *e)
{
    free(e->subject);
    free(e->reply);
    free(e->data);
    for (size_t i = 0; i < e->n_keys; i++) {
        free(e->keys[i]);
    }
    free(e->keys);
    free(e);
}

static ev *ev_push(fake_bus *b, ev_kind kind, fake_link *l)
{
    ev *e = calloc(1, sizeof(*e));
    if (!e) {
        abort();
    }
    e->kind = kind;
    e->link = l;
    if (b->tail) {
        b->tail->next = e;
    } else {
        b->head = e;
    }
    b->tail = e;
    return e;
}

/* NATS subject matching: '*' one token, '>' one or more trailing tokens. */
static bool subject_match(const char *pat, const char *subj)
{
    while (*pat && *subj) {
        const char *pe = strchr(pat, '.');
        const char *se = strchr(subj, '.');
        size_t pl = pe ? (size_t)(pe - pat) : strlen(pat);
        size_t sl = se ? (size_t)(se - subj) : strlen(subj);
        if (pl == 1 && pat[0] == '>') {
            return true;
        }
        if (!(pl == 1 && pat[0] == '*') && (pl != sl || memcmp(pat, subj, pl) != 0)) {
            return false;
        }
        if (!pe || !se) {
            return !pe && !se;
        }
        pat = pe + 1;
        subj = se + 1;
    }
    return false;
}

/* ---- Key-value ---------------------------------------------------------------------------- */

static bucket *bucket_get(fake_bus *b, const char *name, uint32_t ttl_ms)
{
    for (bucket *k = b->buckets; k; k = k->next) {
        if (strcmp(k->name, name) == 0) {
            return k;
        }
    }
    bucket *k = calloc(1, sizeof(*k));
    if (!k || !(k->name = strdup(name))) {
        abort();
    }
    k->ttl_ms = ttl_ms;
    k->next = b->buckets;
    b->buckets = k;
    return k;
}

static bool entry_live(const fake_bus *b, const bucket *k, const entry *en)
{
    return !en->deleted &&
           (k->ttl_ms == 0 || b->clock->now_us - en->written_us < (uint64_t)k->ttl_ms * 1000);
}

static entry *entry_find(bucket *k, const char *key)
{
    for (entry *en = k->entries; en; en = en->next) {
        if (strcmp(en->key, key) == 0) {
            return en;
        }
    }
    return NULL;
}

static void entry_write(fake_bus *b, bucket *k, const char *key, const void *v, size_t len)
{
    entry *en = entry_find(k, key);
    if (!en) {
        en = calloc(1, sizeof(*en));
        if (!en || !(en->key = strdup(key))) {
            abort();
        }
        en->next = k->entries;
        k->entries = en;
    }
    free(en->value);
    en->value = xmemdup(v, len);
    en->len = len;
    en->written_us = b->clock->now_us;
    en->deleted = false;
}

static wamp_err kv_do(fake_link *l, const rt_cluster_kv_op *op, rt_cluster_kv_fn fn, void *arg)
{
    fake_bus *b = l->bus;
    ev *e = ev_push(b, EV_KV, l);
    e->kfn = fn;
    e->arg = arg;
    if (!l->up) {
        e->err = WAMP_ECLOSED;
        return WAMP_OK;
    }
    if (b->kv_fail && op->kind != RT_CLUSTER_KV_KEYS) {
        b->kv_fail--;
        e->err = WAMP_EIO; /* (the server did not answer in time: nothing was done) */
        return WAMP_OK;
    }
    bucket *k = bucket_get(b, op->bucket, op->ttl_ms);
    entry *en = op->key ? entry_find(k, op->key) : NULL;
    bool live = en && entry_live(b, k, en);
    switch (op->kind) {
    case RT_CLUSTER_KV_CREATE:
        if (live) {
            e->err = WAMP_EEXIST;
        } else {
            entry_write(b, k, op->key, op->value, op->len);
        }
        break;
    case RT_CLUSTER_KV_PUT:
        entry_write(b, k, op->key, op->value, op->len);
        break;
    case RT_CLUSTER_KV_GET:
        if (!live) {
            e->err = WAMP_ENOTFOUND;
        } else {
            e->data = xmemdup(en->value, en->len);
            e->len = en->len;
        }
        break;
    case RT_CLUSTER_KV_DELETE:
        if (en) {
            en->deleted = true;
        }
        break;
    case RT_CLUSTER_KV_KEYS:
        for (entry *x = k->entries; x; x = x->next) {
            e->n_keys += entry_live(b, k, x);
        }
        e->keys = calloc(e->n_keys ? e->n_keys : 1, sizeof(char *));
        e->n_keys = 0;
        for (entry *x = k->entries; x && e->keys; x = x->next) {
            if (entry_live(b, k, x)) {
                e->keys[e->n_keys++] = xstrdup(x->key);
            }
        }
        if (b->torn && e->keys && e->n_keys > 1) {
            b->torn--;
            free(e->keys[e->n_keys - 1]);
            e->keys[e->n_keys - 1] = xstrdup(e->keys[0]);
        } else if (b->shortened && e->keys && e->n_keys > 1) {
            b->shortened--;
            free(e->keys[--e->n_keys]);
        }
        break;
    }
    return WAMP_OK;
}

/* ---- Messages ----------------------------------------------------------------------------- */

static void deliver_to_inbox(fake_bus *b, const char *subject, const void *data, size_t len)
{
    for (pending **pp = &b->pending; *pp; pp = &(*pp)->next) {
        pending *p = *pp;
        if (strcmp(p->inbox, subject) == 0) {
            *pp = p->next;
            if (p->link->up) {
                ev *e = ev_push(b, EV_REPLY, p->link);
                e->rfn = p->fn;
                e->arg = p->arg;
                e->data = xmemdup(data, len);
                e->len = len;
                p->link->stats.msgs_in++;
                p->link->stats.bytes_in += len;
            }
            free(p);
            return;
        }
    }
}

/* Queues one delivery per matching plain subscription and one per queue group (its first
 * member: deterministic). Returns the number of deliveries. */
static size_t route(fake_bus *b, const fake_link *from, const char *subject, const char *reply,
                    const void *data, size_t len)
{
    if (strncmp(subject, INBOX_PREFIX, strlen(INBOX_PREFIX)) == 0) {
        deliver_to_inbox(b, subject, data, len);
        return 1;
    }
    size_t n = 0;
    const char *groups[64];
    size_t n_groups = 0;
    for (fake_link *l = b->links; l; l = l->next) {
        if (!l->up || l == from) {
            continue; /* no echo */
        }
        for (sub *s = l->subs; s; s = s->next) {
            if (!subject_match(s->subject, subject)) {
                continue;
            }
            if (s->queue) {
                bool seen = false;
                for (size_t i = 0; i < n_groups; i++) {
                    seen = seen || strcmp(groups[i], s->queue) == 0;
                }
                if (seen || n_groups == 64) {
                    continue;
                }
                groups[n_groups++] = s->queue;
            }
            ev *e = ev_push(b, EV_MSG, l);
            e->sub = s->id;
            e->subject = xstrdup(subject);
            e->reply = xstrdup(reply);
            e->data = xmemdup(data, len);
            e->len = len;
            l->stats.msgs_in++;
            l->stats.bytes_in += len;
            n++;
        }
    }
    return n;
}

/* Whether a message l publishes now is lost (fake_bus_drop(), fake_link_drop()): counted. */
static bool lose(fake_bus *b, fake_link *l)
{
    size_t *n = l->drop ? &l->drop : b->drop ? &b->drop : NULL;
    if (!n) {
        return false;
    }
    (*n)--;
    b->dropped++;
    return true;
}

static wamp_err op_publish(void *link, const char *subject, const char *reply, const void *data,
                           size_t len)
{
    fake_link *l = link;
    fake_bus *b = l->bus;
    if (!l->up) {
        return WAMP_ECLOSED;
    }
    l->stats.msgs_out++;
    l->stats.bytes_out += len;
    if (lose(b, l)) {
        return WAMP_OK;
    }
    route(b, l, subject, reply, data, len);
    return WAMP_OK;
}

static wamp_err op_subscribe(void *link, const char *subject, const char *queue,
                             rt_cluster_msg_fn fn, void *arg, uint64_t *out)
{
    fake_link *l = link;
    sub *s = calloc(1, sizeof(*s));
    if (!s || !(s->subject = strdup(subject)) || (queue && !(s->queue = strdup(queue)))) {
        if (s) {
            free(s->subject);
        }
        free(s);
        return WAMP_ENOMEM;
    }
    s->id = ++l->next_sub;
    s->fn = fn;
    s->arg = arg;
    s->next = l->subs;
    l->subs = s;
    *out = s->id;
    return WAMP_OK;
}

static void sub_free(sub *s)
{
    free(s->subject);
    free(s->queue);
    free(s);
}

static void op_unsubscribe(void *link, uint64_t id)
{
    fake_link *l = link;
    for (sub **pp = &l->subs; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            sub *s = *pp;
            *pp = s->next;
            sub_free(s);
            return;
        }
    }
}

static wamp_err op_request(void *link, const char *subject, const void *data, size_t len,
                           uint32_t timeout_ms, rt_cluster_reply_fn fn, void *arg)
{
    fake_link *l = link;
    fake_bus *b = l->bus;
    if (!l->up) {
        ev *e = ev_push(b, EV_REPLY, l);
        e->rfn = fn;
        e->arg = arg;
        e->err = WAMP_ECLOSED;
        return WAMP_OK;
    }
    pending *p = calloc(1, sizeof(*p));
    if (!p) {
        return WAMP_ENOMEM;
    }
    p->link = l;
    p->fn = fn;
    p->arg = arg;
    p->deadline_us = b->clock->now_us + (uint64_t)timeout_ms * 1000;
    snprintf(p->inbox, sizeof(p->inbox), INBOX_PREFIX "%llu", (unsigned long long)++b->next_inbox);
    p->next = b->pending;
    b->pending = p;
    l->stats.msgs_out++;
    l->stats.bytes_out += len;
    if (lose(b, l)) {
        return WAMP_OK;
    }
    if (route(b, l, subject, p->inbox, data, len) == 0) {
        /* NATS "no responders" */
        b->pending = p->next;
        ev *e = ev_push(b, EV_REPLY, l);
        e->rfn = fn;
        e->arg = arg;
        e->err = WAMP_ENOTFOUND;
        free(p);
    }
    return WAMP_OK;
}

static wamp_err op_kv(void *link, const rt_cluster_kv_op *op, rt_cluster_kv_fn fn, void *arg)
{
    return kv_do(link, op, fn, arg);
}

static void op_stats(void *link, rt_cluster_link_stats *out)
{
    *out = ((fake_link *)link)->stats;
}

const rt_cluster_ops fake_link_ops = {
        .publish = op_publish,
        .subscribe = op_subscribe,
        .unsubscribe = op_unsubscribe,
        .request = op_request,
        .kv = op_kv,
        .stats = op_stats,
};

/* ---- Bus and links ------------------------------------------------------------------------ */

fake_bus *fake_bus_new(fake_clock *clock)
{
    fake_bus *b = calloc(1, sizeof(*b));
    if (b) {
        b->clock = clock;
    }
    return b;
}

void fake_bus_free(fake_bus *b)
{
    if (!b) {
        return;
    }
    while (b->links) {
        fake_link_free(b->links);
    }
    while (b->head) {
        ev *e = b->head;
        b->head = e->next;
        ev_free(e);
    }
    while (b->buckets) {
        bucket *k = b->buckets;
        b->buckets = k->next;
        while (k->entries) {
            entry *en = k->entries;
            k->entries = en->next;
            free(en->key);
            free(en->value);
            free(en);
        }
        free(k->name);
        free(k);
    }
    free(b);
}

void fake_bus_drop(fake_bus *b, size_t n)
{
    b->drop = n;
}

void fake_link_drop(fake_link *l, size_t n)
{
    l->drop = n;
}

void fake_bus_tear_keys(fake_bus *b, size_t n)
{
    b->torn = n;
}

void fake_bus_short_keys(fake_bus *b, size_t n)
{
    b->shortened = n;
}

void fake_bus_fail_kv(fake_bus *b, size_t n)
{
    b->kv_fail = n;
}

size_t fake_bus_dropped(const fake_bus *b)
{
    return b->dropped;
}

static void expire_requests(fake_bus *b)
{
    for (pending **pp = &b->pending; *pp;) {
        pending *p = *pp;
        if (b->clock->now_us < p->deadline_us) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        ev *e = ev_push(b, EV_REPLY, p->link);
        e->rfn = p->fn;
        e->arg = p->arg;
        e->err = WAMP_EIO;
        free(p);
    }
}

static void dispatch(ev *e)
{
    fake_link *l = e->link;
    switch (e->kind) {
    case EV_STATE:
        if (l->core) {
            rt_cluster_on_link_state(l->core, e->st);
        }
        break;
    case EV_MSG:
        for (sub *s = l->subs; s; s = s->next) {
            if (s->id == e->sub) {
                s->fn(s->arg, e->subject, e->reply, e->data, e->len);
                break;
            }
        }
        break;
    case EV_REPLY:
        e->rfn(e->arg, e->err, e->data, e->len);
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

size_t fake_bus_run(fake_bus *b)
{
    size_t n = 0;
    expire_requests(b);
    while (b->head) {
        ev *e = b->head;
        b->head = e->next;
        if (!b->head) {
            b->tail = NULL;
        }
        dispatch(e);
        ev_free(e);
        n++;
    }
    return n;
}

fake_link *fake_link_new(fake_bus *b, rt_cluster *c)
{
    fake_link *l = calloc(1, sizeof(*l));
    if (!l) {
        return NULL;
    }
    l->bus = b;
    l->core = c;
    l->next = b->links;
    b->links = l;
    return l;
}

void fake_link_set_up(fake_link *l, bool up)
{
    fake_bus *b = l->bus;
    if (up == l->up) {
        return;
    }
    l->up = up;
    if (up && l->ever_up) {
        l->stats.reconnects++;
    }
    l->ever_up = l->ever_up || up;
    if (!up) {
        for (pending **pp = &b->pending; *pp;) {
            pending *p = *pp;
            if (p->link != l) {
                pp = &p->next;
                continue;
            }
            *pp = p->next;
            ev *e = ev_push(b, EV_REPLY, l);
            e->rfn = p->fn;
            e->arg = p->arg;
            e->err = WAMP_ECLOSED;
            free(p);
        }
    }
    ev *e = ev_push(b, EV_STATE, l);
    e->st = up ? RT_CLUSTER_LINK_UP : RT_CLUSTER_LINK_DOWN;
}

void fake_link_free(fake_link *l)
{
    if (!l) {
        return;
    }
    fake_bus *b = l->bus;
    for (fake_link **pp = &b->links; *pp; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    ev *prev = NULL;
    for (ev *e = b->head; e;) {
        ev *next = e->next;
        if (e->link == l) {
            if (prev) {
                prev->next = next;
            } else {
                b->head = next;
            }
            if (b->tail == e) {
                b->tail = prev;
            }
            ev_free(e);
        } else {
            prev = e;
        }
        e = next;
    }
    for (pending **pp = &b->pending; *pp;) {
        pending *p = *pp;
        if (p->link == l) {
            *pp = p->next;
            free(p);
        } else {
            pp = &p->next;
        }
    }
    while (l->subs) {
        sub *s = l->subs;
        l->subs = s->next;
        sub_free(s);
    }
    free(l);
}

/* A member (and its link in *link) as fake_cluster_member_new() says; wall NULL: no clock
 * watch. */
static rt_cluster *member_new(fake_bus *b, fake_clock *clock, const char *node_id,
                              uint64_t instance, uint32_t heartbeat_ms, uint32_t node_ttl_ms,
                              uint32_t request_timeout_ms, rt_cluster_wall_fn wall, void *ctx,
                              uint32_t max_offset_ms, fake_link **link)
{
    rt_cluster_options o = {.name = "wsc",
                            .node_id = node_id,
                            .version = "9.9",
                            .heartbeat_ms = heartbeat_ms,
                            .node_ttl_ms = node_ttl_ms,
                            .request_timeout_ms = request_timeout_ms};
    rt_cluster *c = rt_cluster_new(&o, instance, fake_clock_now, clock);
    if (!c || (wall && rt_cluster_watch_clocks(c, wall, ctx, max_offset_ms) != WAMP_OK)) {
        rt_cluster_free(c);
        return NULL;
    }
    fake_link *l = fake_link_new(b, c);
    if (!l || rt_cluster_set_link(c, &fake_link_ops, l) != WAMP_OK) {
        fake_link_free(l);
        rt_cluster_free(c);
        return NULL;
    }
    *link = l;
    return c;
}

rt_cluster *fake_cluster_member_new(fake_bus *b, fake_clock *clock, const char *node_id,
                                    uint64_t instance, uint32_t heartbeat_ms, uint32_t node_ttl_ms,
                                    uint32_t request_timeout_ms, fake_link **link)
{
    return member_new(b, clock, node_id, instance, heartbeat_ms, node_ttl_ms, request_timeout_ms,
                      NULL, NULL, 0, link);
}

rt_cluster *fake_cluster_member_new_clocked(fake_bus *b, fake_clock *clock, const char *node_id,
                                            uint64_t instance, rt_cluster_wall_fn wall, void *ctx,
                                            uint32_t max_offset_ms, fake_link **link)
{
    return member_new(b, clock, node_id, instance, 1000, 4000, 500, wall, ctx, max_offset_ms, link);
}
