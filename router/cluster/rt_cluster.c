/* rt_cluster.c: membership of this node in the cluster (rt_cluster.h has the protocol). */
#include "rt_cluster.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_cluster_clock.h"
#include "rt_log.h"

/* Bucket and subject names: "<name>_nodes", "<name>.nodes.changed", "<name>.node.<id>.info",
 * and per-node services "<name>.node.<id>.<service>" (rt_cluster_serve()).
 * name and id are at most RT_CLUSTER_TOKEN_MAX bytes (rt_config checks it). */
#define NAME_MAX_LEN (2 * RT_CLUSTER_TOKEN_MAX + RT_CLUSTER_SERVICE_MAX + 32)

/* A conflicting key must outlive node_ttl by this many heartbeats before the id is refused:
 * the expiry of a dead process's key is checked by the bus about once a second. */
#define CONFLICT_MARGIN_BEATS 2

/* The announcement of a clean leave on "<name>.nodes.changed": this prefix, then the node id
 * (a join announces the bare id). A colon is never part of an id (rt_cluster_token_is_valid()). */
#define LEFT_PREFIX "left:"

/* Per-node flags of the node list (rt_cluster.node_flags). NODE_MISSED: the last listing lacked
 * the node, which goes if the next one lacks it too. NODE_LEFT: the node announced a clean leave
 * and goes with the first listing that lacks it. */
#define NODE_MISSED 0x01u
#define NODE_LEFT   0x02u

/* Link-down warnings: at most one per this many microseconds. */
#define WARN_INTERVAL_US (60ull * 1000 * 1000)

/* Callbacks the services added (rt_cluster_add_on_joined(), rt_cluster_add_on_tick(),
 * rt_cluster_add_on_node_joined()). fn is kept as the generic function type and called as the
 * type it was added as (hooks_run(), node_hooks_run()). */
typedef void (*hook_fn)(void);

typedef struct rt_cluster_hooks {
    struct {
        hook_fn fn;
        void *arg;
    } v[RT_CLUSTER_ON_JOINED_MAX]; /* in the order added */

    size_t n;
} rt_cluster_hooks;

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

static void node_hooks_run(const rt_cluster_hooks *h, const char *node_id)
{
    for (size_t i = 0; i < h->n; i++) {
        ((void (*)(void *, const char *))h->v[i].fn)(h->v[i].arg, node_id);
    }
}

struct rt_cluster {
    char *name;
    char *node_id;
    char *value; /* this node's JSON value */
    char instance[17];
    char bucket[NAME_MAX_LEN];
    char subj_changed[NAME_MAX_LEN];
    char subj_info[NAME_MAX_LEN];
    rt_cluster_clock_fn clock;
    void *clock_ctx;
    uint64_t heartbeat_us, ttl_us;
    uint32_t ttl_ms, request_timeout_ms;

    const rt_cluster_ops *ops;
    void *link;
    rt_cluster_link_state link_state;
    rt_cluster_member_state state;
    bool ever_joined;
    bool left;
    bool leaving;      /* the leave's DELETE is in flight */
    bool join_pending; /* a CREATE, GET or PUT of the join is in flight */
    bool beat_pending; /* a heartbeat PUT is in flight */
    bool keys_pending; /* a KEYS is in flight */
    bool keys_again;   /* read the keys again when it returns */
    uint64_t next_join_us;
    uint64_t next_beat_us;
    bool conflict;
    uint64_t conflict_since_us;
    uint64_t last_warn_us;
    bool warned;
    uint64_t last_join_warn_us;
    bool join_warned;

    char **nodes;        /* sorted; owned strings */
    uint8_t *node_flags; /* NODE_* per entry of nodes */
    size_t n_nodes;

    rt_cluster_hooks on_joined;      /* rt_cluster_add_on_joined(), in order */
    rt_cluster_hooks on_tick;        /* rt_cluster_add_on_tick(), in order */
    rt_cluster_hooks on_node_joined; /* rt_cluster_add_on_node_joined(), in order */

    /* rt_cluster_watch_clocks(): NULL clk without */
    rt_cluster_clock *clk;
    rt_cluster_wall_fn wall;
    void *wall_ctx;
    char subj_clock[NAME_MAX_LEN];
};

static uint64_t now_us(const rt_cluster *c)
{
    return c->clock(c->clock_ctx);
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

bool rt_cluster_token_is_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > RT_CLUSTER_TOKEN_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* ---- The node list ------------------------------------------------------------------------ */

static void nodes_clear(rt_cluster *c)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        free(c->nodes[i]);
    }
    free(c->nodes);
    free(c->node_flags);
    c->nodes = NULL;
    c->node_flags = NULL;
    c->n_nodes = 0;
}

/* Index of id (len octets, not NUL-terminated; from the bus: it may hold a NUL) in the node
 * list, or n_nodes. */
static size_t node_index(const rt_cluster *c, const char *id, size_t len)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        if (strlen(c->nodes[i]) == len && memcmp(c->nodes[i], id, len) == 0) {
            return i;
        }
    }
    return c->n_nodes;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool list_has(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i], s) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether a key occurs twice in keys. */
static bool has_duplicate(const char *const *keys, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (list_has(keys, i, keys[i])) {
            return true;
        }
    }
    return false;
}

static void log_nodes(const rt_cluster *c)
{
    char buf[1024];
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < c->n_nodes && o < sizeof(buf); i++) {
        int n = snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? ", " : "", c->nodes[i]);
        if (n < 0) {
            break;
        }
        o += (size_t)n;
    }
    RT_LOG_INFO(0, "cluster %s: nodes (%zu): %s", c->name, c->n_nodes, buf);
}

static void on_info(void *arg, wamp_err err, const void *data, size_t len);

static bool node_is_listed(void *arg, const char *node)
{
    return rt_cluster_has_node(arg, node);
}

/* Replaces the list by keys (NULL, 0 = just this node); logs and asks about new nodes. A node
 * kept from the old list keeps its flags; flags of new nodes are 0. */
static wamp_err nodes_set(rt_cluster *c, const char *const *keys, size_t n_keys)
{
    const char *self = c->node_id;
    if (!keys) {
        keys = &self;
        n_keys = 1;
    }
    char **list = calloc(n_keys ? n_keys : 1, sizeof(*list));
    uint8_t *flags = calloc(n_keys ? n_keys : 1, sizeof(*flags));
    if (!list || !flags) {
        free(list);
        free(flags);
        return WAMP_ENOMEM;
    }
    for (size_t i = 0; i < n_keys; i++) {
        list[i] = strdup(keys[i]);
        if (!list[i]) {
            for (size_t j = 0; j < i; j++) {
                free(list[j]);
            }
            free(list);
            free(flags);
            return WAMP_ENOMEM;
        }
    }
    qsort(list, n_keys, sizeof(*list), cmp_str);
    for (size_t i = 0; i < n_keys; i++) {
        size_t k = node_index(c, list[i], strlen(list[i]));
        flags[i] = k < c->n_nodes ? c->node_flags[k] : 0;
    }
    bool changed = n_keys != c->n_nodes;
    for (size_t i = 0; !changed && i < n_keys; i++) {
        changed = strcmp(list[i], c->nodes[i]) != 0;
    }
    bool up = c->link_state == RT_CLUSTER_LINK_UP;
    for (size_t i = 0; up && i < c->n_nodes; i++) {
        if (!list_has((const char *const *)list, n_keys, c->nodes[i])) {
            RT_LOG_INFO(0, "cluster %s: node %s left", c->name, c->nodes[i]);
        }
    }
    for (size_t i = 0; up && i < n_keys; i++) {
        if (strcmp(list[i], self) == 0 || node_index(c, list[i], strlen(list[i])) < c->n_nodes) {
            continue;
        }
        char subj[NAME_MAX_LEN];
        int n = snprintf(subj, sizeof(subj), "%s.node.%s.info", c->name, list[i]);
        if (n > 0 && (size_t)n < sizeof(subj)) {
            c->ops->request(c->link, subj, "", 0, c->request_timeout_ms, on_info, c);
        }
    }
    nodes_clear(c);
    c->nodes = list;
    c->node_flags = flags;
    c->n_nodes = n_keys;
    if (changed && c->ops) { /* not for the initial list of rt_cluster_new() */
        log_nodes(c);
    }
    if (changed && c->clk) {
        rt_cluster_clock_prune(c->clk, node_is_listed, c);
    }
    return WAMP_OK;
}

static void on_info(void *arg, wamp_err err, const void *data, size_t len)
{
    rt_cluster *c = arg;
    if (err != WAMP_OK) {
        RT_LOG_DEBUG(0, "cluster %s: a node's info request failed: %s", c->name,
                     wamp_strerror(err));
        return;
    }
    json_error_t jerr;
    json_t *v = json_loadb(data, len, 0, &jerr);
    const char *id = json_string_value(json_object_get(v, "node_id"));
    const char *version = json_string_value(json_object_get(v, "version"));
    const char *inst = json_string_value(json_object_get(v, "instance"));
    if (id && version && inst) {
        RT_LOG_INFO(0, "cluster %s: node %s joined (wampscope %s, instance %s)", c->name, id,
                    version, inst);
    }
    json_decref(v);
}

/* A listing of the bucket's keys. A node it lacks leaves the list only if it announced a clean
 * leave or the listing before lacked it too: a listing can also miss a live node without
 * repeating another (the NATS client's listing meeting writes), and one such listing must not
 * drop a node, its calls and its registrations. A killed node thus goes one heartbeat after its
 * key expired. */
static wamp_err apply_listing(rt_cluster *c, const char *const *keys, size_t n_keys)
{
    const char **merged = calloc(n_keys + c->n_nodes + 1, sizeof(*merged));
    if (!merged) {
        return WAMP_ENOMEM;
    }
    memcpy(merged, keys, n_keys * sizeof(*keys));
    size_t n = n_keys;
    for (size_t i = 0; i < c->n_nodes; i++) {
        if (list_has(keys, n_keys, c->nodes[i])) {
            c->node_flags[i] &= (uint8_t)~NODE_MISSED;
        } else if (strcmp(c->nodes[i], c->node_id) == 0) {
            merged[n++] = c->nodes[i]; /* a joined node is always in its own list */
        } else if (!(c->node_flags[i] & (NODE_MISSED | NODE_LEFT))) {
            RT_LOG_DEBUG(0, "cluster %s: the node list lacks node %s once: kept until the next",
                         c->name, c->nodes[i]);
            c->node_flags[i] |= NODE_MISSED;
            merged[n++] = c->nodes[i];
        }
    }
    wamp_err err = nodes_set(c, merged, n);
    free(merged);
    return err;
}

static void on_keys(void *arg, const rt_cluster_kv_result *res)
{
    rt_cluster *c = arg;
    c->keys_pending = false;
    if (c->state != RT_CLUSTER_MEMBER_JOINED || c->link_state != RT_CLUSTER_LINK_UP) {
        return;
    }
    if (res->err != WAMP_OK) {
        RT_LOG_DEBUG(0, "cluster %s: reading the node list failed: %s", c->name,
                     wamp_strerror(res->err));
        return;
    }
    if (has_duplicate(res->keys, res->n_keys)) {
        /* Torn: the listing met a node's heartbeat write and may lack a live node. The list
         * stays as it was; the next heartbeat reads it again. */
        RT_LOG_DEBUG(0, "cluster %s: the node list read twice a key: ignored", c->name);
    } else if (apply_listing(c, res->keys, res->n_keys) != WAMP_OK) {
        RT_LOG_WARN(0, "cluster %s: out of memory reading the node list", c->name);
    }
    if (c->keys_again) {
        c->keys_again = false;
        c->keys_pending = true;
        rt_cluster_kv_op op = {
                .kind = RT_CLUSTER_KV_KEYS, .bucket = c->bucket, .ttl_ms = c->ttl_ms};
        if (c->ops->kv(c->link, &op, on_keys, c) != WAMP_OK) {
            c->keys_pending = false;
        }
    }
}

static void read_keys(rt_cluster *c)
{
    if (c->keys_pending) {
        c->keys_again = true;
        return;
    }
    rt_cluster_kv_op op = {.kind = RT_CLUSTER_KV_KEYS, .bucket = c->bucket, .ttl_ms = c->ttl_ms};
    c->keys_pending = c->ops->kv(c->link, &op, on_keys, c) == WAMP_OK;
}

/* ---- Joining ------------------------------------------------------------------------------ */

/* Announces a join (the bare id) or a clean leave (LEFT_PREFIX and the id). */
static void announce(rt_cluster *c, bool left)
{
    char msg[sizeof(LEFT_PREFIX) + RT_CLUSTER_TOKEN_MAX];
    int n = snprintf(msg, sizeof(msg), "%s%s", left ? LEFT_PREFIX : "", c->node_id);
    if (n > 0 && (size_t)n < sizeof(msg)) {
        c->ops->publish(c->link, c->subj_changed, NULL, msg, (size_t)n);
    }
}

static void joined(rt_cluster *c)
{
    c->state = RT_CLUSTER_MEMBER_JOINED;
    c->ever_joined = true;
    c->conflict = false;
    c->join_warned = false;
    c->next_beat_us = now_us(c) + c->heartbeat_us;
    RT_LOG_INFO(0, "cluster %s: joined as node %s (instance %s)", c->name, c->node_id, c->instance);
    announce(c, false);
    read_keys(c);
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
    read_keys(c);
    if (c->clk) {
        /* "<node id> <wall ns>" to every node (rt_cluster_clock.h). */
        char msg[RT_CLUSTER_TOKEN_MAX + 32];
        int n = snprintf(msg, sizeof(msg), "%s %" PRIu64, c->node_id, c->wall(c->wall_ctx));
        if (n > 0 && (size_t)n < sizeof(msg)) {
            c->ops->publish(c->link, c->subj_clock, NULL, msg, (size_t)n);
        }
    }
}

_Static_assert(RT_CLUSTER_TOKEN_MAX == 64, "on_clock() reads a node id with %64s");

/* Another node's heartbeat clock reading. */
static void on_clock(void *arg, const char *subject, const char *reply, const void *data,
                     size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster *c = arg;
    uint64_t now = c->wall(c->wall_ctx);
    char msg[RT_CLUSTER_TOKEN_MAX + 32];
    char id[RT_CLUSTER_TOKEN_MAX + 1];
    uint64_t wall;
    char end;
    if (data && len < sizeof(msg)) {
        memcpy(msg, data, len);
        msg[len] = '\0';
    }
    if (!data || len >= sizeof(msg) || sscanf(msg, "%64s %" SCNu64 "%c", id, &wall, &end) != 2) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, now_us(c), "cluster clock reading not valid", 0,
                       "cluster %s: ignoring a clock reading that is not valid (%zu bytes)",
                       c->name, len);
        return;
    }
    /* A node not (or no more) listed is not counted. */
    if (rt_cluster_has_node(c, id) && strcmp(id, c->node_id) != 0) {
        (void)rt_cluster_clock_heard(c->clk, id, wall, now);
    }
}

/* ---- Subscriptions ------------------------------------------------------------------------ */

static void on_changed(void *arg, const char *subject, const char *reply, const void *data,
                       size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster *c = arg;
    const size_t plen = sizeof(LEFT_PREFIX) - 1;
    bool left = data && len > plen && memcmp(data, LEFT_PREFIX, plen) == 0;
    const char *id = left ? (const char *)data + plen : data;
    size_t id_len = left ? len - plen : (data ? len : 0);
    size_t k = node_index(c, id ? id : "", id ? id_len : 0);
    if (!left && id && id_len <= RT_CLUSTER_TOKEN_MAX) {
        char node[RT_CLUSTER_TOKEN_MAX + 1];
        memcpy(node, id, id_len);
        node[id_len] = '\0';
        if (rt_cluster_token_is_valid(node) && strcmp(node, c->node_id) != 0) {
            node_hooks_run(&c->on_node_joined, node);
        }
    }
    if (k < c->n_nodes) {
        if (left) {
            c->node_flags[k] |= NODE_LEFT;
        } else {
            c->node_flags[k] &= (uint8_t)~NODE_LEFT; /* joined again */
        }
    }
    if (c->state == RT_CLUSTER_MEMBER_JOINED && c->link_state == RT_CLUSTER_LINK_UP) {
        read_keys(c);
    }
}

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
    if (!c->name || !c->node_id || !c->value || nodes_set(c, NULL, 0) != WAMP_OK) {
        rt_cluster_free(c);
        return NULL;
    }
    snprintf(c->bucket, sizeof(c->bucket), "%s_nodes", c->name);
    snprintf(c->subj_changed, sizeof(c->subj_changed), "%s.nodes.changed", c->name);
    snprintf(c->subj_info, sizeof(c->subj_info), "%s.node.%s.info", c->name, c->node_id);
    return c;
}

void rt_cluster_free(rt_cluster *c)
{
    if (!c) {
        return;
    }
    nodes_clear(c);
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
    snprintf(c->subj_clock, sizeof(c->subj_clock), "%s.clock", c->name);
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
    wamp_err err = ops->subscribe(link, c->subj_changed, NULL, on_changed, c, &sub);
    if (err == WAMP_OK) {
        err = ops->subscribe(link, c->subj_info, NULL, on_info_request, c, &sub);
    }
    if (err == WAMP_OK && c->clk) {
        err = ops->subscribe(link, c->subj_clock, NULL, on_clock, c, &sub);
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
        if (nodes_set(c, NULL, 0) != WAMP_OK) {
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

size_t rt_cluster_node_count(const rt_cluster *c)
{
    return c->n_nodes;
}

const char *rt_cluster_node_at(const rt_cluster *c, size_t i)
{
    return i < c->n_nodes ? c->nodes[i] : NULL;
}

void rt_cluster_link_stats_get(const rt_cluster *c, rt_cluster_link_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (c->ops) {
        c->ops->stats(c->link, out);
    }
    out->state = c->link_state;
}

bool rt_cluster_has_node(const rt_cluster *c, const char *node_id)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        if (strcmp(c->nodes[i], node_id) == 0) {
            return true;
        }
    }
    return false;
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

wamp_err rt_cluster_add_on_node_joined(rt_cluster *c, void (*fn)(void *arg, const char *node_id),
                                       void *arg)
{
    return hooks_add(&c->on_node_joined, (hook_fn)fn, arg);
}

void rt_cluster_remove_on_node_joined(rt_cluster *c, void (*fn)(void *arg, const char *node_id),
                                      void *arg)
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
