/* rt_cluster.c: membership of this node in the cluster (rt_cluster.h has the protocol): joining,
 * the heartbeat, the leave, the services' hooks and requests; the node list and what other nodes
 * send are rt_cluster_nodes.c's. */
#include "rt_cluster.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_cluster_int.h"
#include "rt_log.h"

/* A conflicting key must outlive node_ttl by this many heartbeats before the id is refused:
 * the expiry of a dead process's key is checked by the bus about once a second. */
#define CONFLICT_MARGIN_BEATS 2

/* Link-down warnings: at most one per this many microseconds. */
#define WARN_INTERVAL_US (60ull * 1000 * 1000)

static wamp_err hooks_add(rt_cluster_hooks *h, hook_fn fn, void *arg)
{
    if (h->n == RT_CLUSTER_ON_JOINED_MAX) {
        return WAMP_ETOOBIG;
    }
    h->v[h->n].fn = fn;
    h->v[h->n].arg = arg;
    h->n++;
    return WAMP_OK;
}

static void hooks_remove(rt_cluster_hooks *h, hook_fn fn, void *arg)
{
    for (size_t i = 0; i < h->n; i++) {
        if (h->v[i].fn == fn && h->v[i].arg == arg) {
            memmove(&h->v[i], &h->v[i + 1], (h->n - i - 1) * sizeof(h->v[0]));
            h->n--;
            return;
        }
    }
}

static void hooks_run(const rt_cluster_hooks *h)
{
    for (size_t i = 0; i < h->n; i++) {
        ((void (*)(void *))h->v[i].fn)(h->v[i].arg);
    }
}

const char *rt_cluster_link_state_name(rt_cluster_link_state st)
{
    switch (st) {
    case RT_CLUSTER_LINK_UP:
        return "up";
    case RT_CLUSTER_LINK_DOWN:
        return "down";
    case RT_CLUSTER_LINK_CONNECTING:
        break;
    }
    return "connecting";
}

/* ---- Joining ------------------------------------------------------------------------------ */

/* Announces a join ("<id> <join>") or a clean leave (LEFT_PREFIX and the id). */
static void announce(rt_cluster *c, bool left)
{
    char msg[sizeof(LEFT_PREFIX) + RT_CLUSTER_TOKEN_MAX + 1 + JOIN_TEXT_MAX];
    int n = left ? snprintf(msg, sizeof(msg), "%s%s", LEFT_PREFIX, c->node_id)
                 : snprintf(msg, sizeof(msg), "%s %s.%" PRIu64, c->node_id, c->instance, c->joins);
    if (n > 0 && (size_t)n < sizeof(msg)) {
        c->ops->publish(c->link, c->subj_changed, NULL, msg, (size_t)n);
    }
}

/* "<node id> <wall ns> <join>" to every node: the wall clock reading (0 without
 * rt_cluster_watch_clocks(): none) for rt_cluster_clock.h, and this node's join, from which a
 * node that lost its join announcement learns of it. */
static void send_reading(rt_cluster *c)
{
    char msg[RT_CLUSTER_TOKEN_MAX + 1 + 20 + 1 + JOIN_TEXT_MAX + 1];
    uint64_t wall = c->clk ? c->wall(c->wall_ctx) : 0;
    int n = snprintf(msg, sizeof(msg), "%s %" PRIu64 " %s.%" PRIu64, c->node_id, wall, c->instance,
                     c->joins);
    if (n > 0 && (size_t)n < sizeof(msg)) {
        c->ops->publish(c->link, c->subj_clock, NULL, msg, (size_t)n);
    }
}

static void joined(rt_cluster *c)
{
    c->state = RT_CLUSTER_MEMBER_JOINED;
    c->ever_joined = true;
    c->conflict = false;
    c->join_warned = false;
    c->next_beat_us = now_us(c) + c->heartbeat_us;
    c->joins++;
    RT_LOG_INFO(0, "cluster %s: joined as node %s (instance %s)", c->name, c->node_id, c->instance);
    announce(c, false);
    /* Right behind the announcement: a node that lost it learns of the join from this. */
    send_reading(c);
    rt_cluster_read_keys(c);
    hooks_run(&c->on_joined);
}

static void retry_join(rt_cluster *c, uint64_t after_us)
{
    c->next_join_us = now_us(c) + after_us;
}

/* A join step failed on an up link (not a refusal): e.g. a server without JetStream. */
static void join_failed(rt_cluster *c, wamp_err err)
{
    uint64_t now = now_us(c);
    if (err != WAMP_ECLOSED &&
        (!c->join_warned || now - c->last_join_warn_us >= WARN_INTERVAL_US)) {
        c->join_warned = true;
        c->last_join_warn_us = now;
        RT_LOG_WARN(0,
                    "cluster %s: cannot announce node %s in bucket %s: %s (is JetStream enabled "
                    "on the NATS server?); retrying every heartbeat",
                    c->name, c->node_id, c->bucket, wamp_strerror(err));
    }
    retry_join(c, c->heartbeat_us);
}

/* Another instance holds our key. */
static void conflict(rt_cluster *c, const char *other)
{
    uint64_t now = now_us(c);
    if (!c->conflict) {
        c->conflict = true;
        c->conflict_since_us = now;
        RT_LOG_WARN(0,
                    "cluster %s: node id \"%s\" is held by another instance (%s); waiting up to "
                    "%" PRIu32 " ms (node_ttl) for it to expire",
                    c->name, c->node_id, other, c->ttl_ms);
    }
    if (now - c->conflict_since_us >= c->ttl_us + CONFLICT_MARGIN_BEATS * c->heartbeat_us) {
        RT_LOG_ERR(0,
                   "cluster %s: node id \"%s\" (controller.id) is already in use by another live "
                   "node (instance %s); every node needs its own id",
                   c->name, c->node_id, other);
        if (!c->ever_joined) {
            c->state = RT_CLUSTER_MEMBER_REFUSED;
            return;
        }
        c->conflict = false; /* warn again, refuse again after another TTL */
    }
    retry_join(c, c->heartbeat_us);
}

static void on_join_put(void *arg, const rt_cluster_kv_result *res)
{
    rt_cluster *c = arg;
    c->join_pending = false;
    if (c->state != RT_CLUSTER_MEMBER_JOINING) {
        return;
    }
    if (res->err == WAMP_OK) {
        joined(c);
    } else {
        join_failed(c, res->err);
    }
}

/* One step of joining: the kv operation kind on this node's key (with its value for CREATE and
 * PUT), answered to then; a refused submission is retried a heartbeat later. */
static void join_step(rt_cluster *c, rt_cluster_kv_kind kind, rt_cluster_kv_fn then)
{
    bool with_value = kind != RT_CLUSTER_KV_GET;
    rt_cluster_kv_op op = {.kind = kind,
                           .bucket = c->bucket,
                           .ttl_ms = c->ttl_ms,
                           .key = c->node_id,
                           .value = with_value ? c->value : NULL,
                           .len = with_value ? strlen(c->value) : 0};
    c->join_pending = c->ops->kv(c->link, &op, then, c) == WAMP_OK;
    if (!c->join_pending) {
        retry_join(c, c->heartbeat_us);
    }
}

static void on_join_get(void *arg, const rt_cluster_kv_result *res)
{
    rt_cluster *c = arg;
    c->join_pending = false;
    if (c->state != RT_CLUSTER_MEMBER_JOINING) {
        return;
    }
    if (res->err == WAMP_ENOTFOUND) {
        retry_join(c, 0); /* gone between CREATE and GET: create again */
        return;
    }
    if (res->err != WAMP_OK) {
        join_failed(c, res->err);
        return;
    }
    json_error_t jerr;
    json_t *v = json_loadb(res->value, res->len, 0, &jerr);
    const char *inst = json_string_value(json_object_get(v, "instance"));
    char other[32];
    snprintf(other, sizeof(other), "%s", inst ? inst : "unknown");
    bool ours = inst && strcmp(inst, c->instance) == 0;
    json_decref(v);
    if (!ours) {
        conflict(c, other);
        return;
    }
    /* The bus kept our key while the link was down: take it over. */
    join_step(c, RT_CLUSTER_KV_PUT, on_join_put);
}

static void on_join_create(void *arg, const rt_cluster_kv_result *res)
{
    rt_cluster *c = arg;
    c->join_pending = false;
    if (c->state != RT_CLUSTER_MEMBER_JOINING) {
        return;
    }
    if (res->err == WAMP_OK) {
        joined(c);
        return;
    }
    if (res->err != WAMP_EEXIST) {
        join_failed(c, res->err);
        return;
    }
    join_step(c, RT_CLUSTER_KV_GET, on_join_get);
}

static void start_join(rt_cluster *c)
{
    join_step(c, RT_CLUSTER_KV_CREATE, on_join_create);
}

static void on_beat(void *arg, const rt_cluster_kv_result *res)
{
    rt_cluster *c = arg;
    c->beat_pending = false;
    if (res->err != WAMP_OK && res->err != WAMP_ECLOSED) {
        RT_LOG_DEBUG(0, "cluster %s: heartbeat failed: %s", c->name, wamp_strerror(res->err));
    }
}

static void heartbeat(rt_cluster *c)
{
    if (!c->beat_pending) {
        rt_cluster_kv_op op = {.kind = RT_CLUSTER_KV_PUT,
                               .bucket = c->bucket,
                               .ttl_ms = c->ttl_ms,
                               .key = c->node_id,
                               .value = c->value,
                               .len = strlen(c->value)};
        c->beat_pending = c->ops->kv(c->link, &op, on_beat, c) == WAMP_OK;
    }
    rt_cluster_read_keys(c);
    send_reading(c);
}

/* ---- Subscriptions ------------------------------------------------------------------------ */

static void on_info_request(void *arg, const char *subject, const char *reply, const void *data,
                            size_t len)
{
    (void)subject;
    (void)data;
    (void)len;
    rt_cluster *c = arg;
    if (reply && c->state == RT_CLUSTER_MEMBER_JOINED) {
        c->ops->publish(c->link, reply, NULL, c->value, strlen(c->value));
    }
}

/* ---- Public ------------------------------------------------------------------------------- */

rt_cluster *rt_cluster_new(const rt_cluster_options *o, uint64_t instance,
                           rt_cluster_clock_fn clock, void *clock_ctx)
{
    rt_cluster *c = calloc(1, sizeof(*c));
    if (!c) {
        return NULL;
    }
    c->clock = clock;
    c->clock_ctx = clock_ctx;
    c->heartbeat_us = (uint64_t)o->heartbeat_ms * 1000;
    c->ttl_us = (uint64_t)o->node_ttl_ms * 1000;
    c->ttl_ms = o->node_ttl_ms;
    c->request_timeout_ms = o->request_timeout_ms;
    snprintf(c->instance, sizeof(c->instance), "%016" PRIx64, instance);
    c->name = strdup(o->name);
    c->node_id = strdup(o->node_id);
    json_t *v = json_pack("{s:s, s:s, s:s}", "node_id", o->node_id, "instance", c->instance,
                          "version", o->version);
    c->value = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    if (!c->name || !c->node_id || !c->value || rt_cluster_nodes_set(c, NULL, 0) != WAMP_OK) {
        rt_cluster_free(c);
        return NULL;
    }
    snprintf(c->bucket, sizeof(c->bucket), "%s_nodes", c->name);
    snprintf(c->subj_changed, sizeof(c->subj_changed), "%s.nodes.changed", c->name);
    snprintf(c->subj_info, sizeof(c->subj_info), "%s.node.%s.info", c->name, c->node_id);
    snprintf(c->subj_clock, sizeof(c->subj_clock), "%s.clock", c->name);
    return c;
}

void rt_cluster_free(rt_cluster *c)
{
    if (!c) {
        return;
    }
    rt_cluster_nodes_clear(c);
    rt_cluster_clock_free(c->clk);
    free(c->name);
    free(c->node_id);
    free(c->value);
    free(c);
}

wamp_err rt_cluster_watch_clocks(rt_cluster *c, rt_cluster_wall_fn wall, void *ctx,
                                 uint32_t max_offset_ms)
{
    rt_cluster_clock_free(c->clk);
    if (!(c->clk = rt_cluster_clock_new(c->name, max_offset_ms))) {
        return WAMP_ENOMEM;
    }
    c->wall = wall;
    c->wall_ctx = ctx;
    return WAMP_OK;
}

size_t rt_cluster_clock_offset_count(const rt_cluster *c)
{
    return rt_cluster_clock_count(c->clk);
}

const char *rt_cluster_clock_offset_at(const rt_cluster *c, size_t i, int64_t *offset_ns)
{
    return rt_cluster_clock_node(c->clk, i, offset_ns);
}

uint64_t rt_cluster_wall_ms_here(const rt_cluster *c, const char *node, uint64_t ms)
{
    int64_t ns;
    if (!rt_cluster_clock_offset(c->clk, node, &ns) || ms > (uint64_t)INT64_MAX / 2) {
        return ms;
    }
    /* (An offset in ms is within +-INT64_MAX / 10^6: no overflow below.) */
    int64_t here = (int64_t)ms - ns / 1000000;
    return here < 0 ? 0 : (uint64_t)here;
}

wamp_err rt_cluster_set_link(rt_cluster *c, const rt_cluster_ops *ops, void *link)
{
    uint64_t sub;
    c->ops = ops;
    c->link = link;
    wamp_err err = ops->subscribe(link, c->subj_changed, NULL, rt_cluster_on_changed, c, &sub);
    if (err == WAMP_OK) {
        err = ops->subscribe(link, c->subj_info, NULL, on_info_request, c, &sub);
    }
    if (err == WAMP_OK) {
        err = ops->subscribe(link, c->subj_clock, NULL, rt_cluster_on_clock, c, &sub);
    }
    return err;
}

void rt_cluster_on_link_state(rt_cluster *c, rt_cluster_link_state st)
{
    c->link_state = st;
    if (st != RT_CLUSTER_LINK_UP) {
        uint64_t now = now_us(c);
        if (!c->warned || now - c->last_warn_us >= WARN_INTERVAL_US) {
            c->warned = true;
            c->last_warn_us = now;
            RT_LOG_WARN(0, "cluster %s: link %s; routing locally until it is up", c->name,
                        rt_cluster_link_state_name(st));
        }
        if (c->state == RT_CLUSTER_MEMBER_JOINED || c->state == RT_CLUSTER_MEMBER_JOINING) {
            c->state = RT_CLUSTER_MEMBER_OFFLINE;
        }
        if (rt_cluster_nodes_set(c, NULL, 0) != WAMP_OK) {
            RT_LOG_WARN(0, "cluster %s: out of memory", c->name);
        }
        return;
    }
    RT_LOG_INFO(0, "cluster %s: link up", c->name);
    c->warned = false;
    if (c->state == RT_CLUSTER_MEMBER_OFFLINE && !c->left) {
        c->state = RT_CLUSTER_MEMBER_JOINING;
        c->conflict = false;
        c->next_join_us = now_us(c);
    }
    rt_cluster_tick(c);
}

void rt_cluster_tick(rt_cluster *c)
{
    hooks_run(&c->on_tick);
    if (c->link_state != RT_CLUSTER_LINK_UP) {
        return;
    }
    uint64_t now = now_us(c);
    if (c->state == RT_CLUSTER_MEMBER_JOINING && !c->join_pending && now >= c->next_join_us) {
        start_join(c);
    } else if (c->state == RT_CLUSTER_MEMBER_JOINED && now >= c->next_beat_us) {
        c->next_beat_us = now + c->heartbeat_us;
        heartbeat(c);
    }
}

static void on_left(void *arg, const rt_cluster_kv_result *res)
{
    rt_cluster *c = arg;
    c->leaving = false;
    if (res->err == WAMP_OK) {
        /* After the delete, so that the others' read of the list misses this node. */
        announce(c, true);
        RT_LOG_INFO(0, "cluster %s: left", c->name);
    }
}

void rt_cluster_leave(rt_cluster *c)
{
    bool was_joined = c->state == RT_CLUSTER_MEMBER_JOINED;
    c->left = true;
    if (c->state != RT_CLUSTER_MEMBER_REFUSED) {
        c->state = RT_CLUSTER_MEMBER_OFFLINE;
    }
    if (!was_joined || c->link_state != RT_CLUSTER_LINK_UP) {
        return;
    }
    rt_cluster_kv_op op = {.kind = RT_CLUSTER_KV_DELETE,
                           .bucket = c->bucket,
                           .ttl_ms = c->ttl_ms,
                           .key = c->node_id};
    c->leaving = c->ops->kv(c->link, &op, on_left, c) == WAMP_OK;
}

bool rt_cluster_is_leaving(const rt_cluster *c)
{
    return c->leaving;
}

rt_cluster_member_state rt_cluster_member_state_get(const rt_cluster *c)
{
    return c->state;
}

bool rt_cluster_is_refused(const rt_cluster *c)
{
    return c->state == RT_CLUSTER_MEMBER_REFUSED;
}

bool rt_cluster_is_settled(const rt_cluster *c)
{
    return c->state == RT_CLUSTER_MEMBER_JOINED || c->state == RT_CLUSTER_MEMBER_REFUSED;
}

void rt_cluster_link_stats_get(const rt_cluster *c, rt_cluster_link_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (c->ops) {
        c->ops->stats(c->link, out);
    }
    out->state = c->link_state;
}

const char *rt_cluster_node_id(const rt_cluster *c)
{
    return c->node_id;
}

uint32_t rt_cluster_request_timeout_ms(const rt_cluster *c)
{
    return c->request_timeout_ms;
}

wamp_err rt_cluster_add_on_joined(rt_cluster *c, void (*fn)(void *arg), void *arg)
{
    return hooks_add(&c->on_joined, (hook_fn)fn, arg);
}

void rt_cluster_remove_on_joined(rt_cluster *c, void (*fn)(void *arg), void *arg)
{
    hooks_remove(&c->on_joined, (hook_fn)fn, arg);
}

wamp_err rt_cluster_add_on_node_joined(rt_cluster *c, rt_cluster_node_joined_fn fn, void *arg)
{
    return hooks_add(&c->on_node_joined, (hook_fn)fn, arg);
}

void rt_cluster_remove_on_node_joined(rt_cluster *c, rt_cluster_node_joined_fn fn, void *arg)
{
    hooks_remove(&c->on_node_joined, (hook_fn)fn, arg);
}

wamp_err rt_cluster_add_on_tick(rt_cluster *c, void (*fn)(void *arg), void *arg)
{
    return hooks_add(&c->on_tick, (hook_fn)fn, arg);
}

void rt_cluster_remove_on_tick(rt_cluster *c, void (*fn)(void *arg), void *arg)
{
    hooks_remove(&c->on_tick, (hook_fn)fn, arg);
}

const char *rt_cluster_name(const rt_cluster *c)
{
    return c->name;
}

wamp_err rt_cluster_kv(rt_cluster *c, const rt_cluster_kv_op *op, rt_cluster_kv_fn fn, void *arg)
{
    if (!c->ops || c->link_state != RT_CLUSTER_LINK_UP) {
        return WAMP_ECLOSED;
    }
    return c->ops->kv(c->link, op, fn, arg);
}

static bool service_subject(const rt_cluster *c, const char *node_id, const char *service,
                            char *subj, size_t size)
{
    if (strlen(service) > RT_CLUSTER_SERVICE_MAX || !rt_cluster_token_is_valid(service) ||
        !rt_cluster_token_is_valid(node_id)) {
        return false;
    }
    int n = snprintf(subj, size, "%s.node.%s.%s", c->name, node_id, service);
    return n > 0 && (size_t)n < size;
}

wamp_err rt_cluster_serve(rt_cluster *c, const char *service, rt_cluster_msg_fn fn, void *arg,
                          uint64_t *sub)
{
    char subj[NAME_MAX_LEN];
    if (!c->ops) {
        return WAMP_ECLOSED;
    }
    if (!service_subject(c, c->node_id, service, subj, sizeof(subj))) {
        return WAMP_EINVAL;
    }
    return c->ops->subscribe(c->link, subj, NULL, fn, arg, sub);
}

void rt_cluster_unserve(rt_cluster *c, uint64_t sub)
{
    if (c->ops) {
        c->ops->unsubscribe(c->link, sub);
    }
}

wamp_err rt_cluster_request(rt_cluster *c, const char *node_id, const char *service,
                            const void *data, size_t len, rt_cluster_reply_fn fn, void *arg)
{
    char subj[NAME_MAX_LEN];
    if (!c->ops) {
        return WAMP_ECLOSED;
    }
    if (!rt_cluster_has_node(c, node_id)) {
        return WAMP_ENOTFOUND;
    }
    if (!service_subject(c, node_id, service, subj, sizeof(subj))) {
        return WAMP_EINVAL;
    }
    return c->ops->request(c->link, subj, data, len, c->request_timeout_ms, fn, arg);
}

wamp_err rt_cluster_reply(rt_cluster *c, const char *reply, const void *data, size_t len)
{
    if (!c->ops) {
        return WAMP_ECLOSED;
    }
    return c->ops->publish(c->link, reply, NULL, data, len);
}
