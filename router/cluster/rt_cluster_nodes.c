/* rt_cluster_nodes.c: the node list of this node's membership, and what the other nodes
 * announce on "<name>.nodes.changed" and send with every heartbeat on "<name>.clock"
 * (rt_cluster.h has the protocol; rt_cluster.c joins and beats). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_cluster_int.h"
#include "rt_log.h"

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

void rt_cluster_nodes_clear(rt_cluster *c)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        free(c->nodes[i]);
    }
    free(c->nodes);
    free(c->node_flags);
    free(c->node_joins);
    c->nodes = NULL;
    c->node_flags = NULL;
    c->node_joins = NULL;
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
 * kept from the old list keeps its flags and join; flags of new nodes are 0. */
wamp_err rt_cluster_nodes_set(rt_cluster *c, const char *const *keys, size_t n_keys)
{
    const char *self = c->node_id;
    if (!keys) {
        keys = &self;
        n_keys = 1;
    }
    char **list = calloc(n_keys ? n_keys : 1, sizeof(*list));
    uint8_t *flags = calloc(n_keys ? n_keys : 1, sizeof(*flags));
    node_join *joins = calloc(n_keys ? n_keys : 1, sizeof(*joins));
    if (!list || !flags || !joins) {
        free(list);
        free(flags);
        free(joins);
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
            free(joins);
            return WAMP_ENOMEM;
        }
    }
    qsort(list, n_keys, sizeof(*list), cmp_str);
    for (size_t i = 0; i < n_keys; i++) {
        size_t k = node_index(c, list[i], strlen(list[i]));
        if (k < c->n_nodes) {
            flags[i] = c->node_flags[k];
            joins[i] = c->node_joins[k];
        }
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
    rt_cluster_nodes_clear(c);
    c->nodes = list;
    c->node_flags = flags;
    c->node_joins = joins;
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
    wamp_err err = rt_cluster_nodes_set(c, merged, n);
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

void rt_cluster_read_keys(rt_cluster *c)
{
    if (c->keys_pending) {
        c->keys_again = true;
        return;
    }
    rt_cluster_kv_op op = {.kind = RT_CLUSTER_KV_KEYS, .bucket = c->bucket, .ttl_ms = c->ttl_ms};
    c->keys_pending = c->ops->kv(c->link, &op, on_keys, c) == WAMP_OK;
}

/* A join's text form ("<16 hex digits>.<count>", len octets at s) into *out. */
static bool join_parse(const char *s, size_t len, node_join *out)
{
    if (len < 18 || len > JOIN_TEXT_MAX || s[16] != '.') {
        return false;
    }
    uint64_t inst = 0, count = 0;
    for (size_t i = 0; i < 16; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0) {
            return false;
        }
        inst = inst << 4 | (uint64_t)d;
    }
    for (size_t i = 17; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || count > (UINT64_MAX - 9) / 10) {
            return false;
        }
        count = count * 10 + (uint64_t)(s[i] - '0');
    }
    *out = (node_join){.instance = inst, .count = count};
    return true;
}

/* What hearing the join j of listed node k says: JOIN_SAME, the one known; JOIN_OTHER, one in
 * place of another known one (a new process, or a link that came back); JOIN_FIRST, none was
 * known. Known from now on. */
typedef enum {
    JOIN_SAME,
    JOIN_OTHER,
    JOIN_FIRST
} join_news;

static join_news join_heard(rt_cluster *c, size_t k, const node_join *j)
{
    bool known = c->node_flags[k] & NODE_JOIN_KNOWN;
    node_join *was = &c->node_joins[k];
    join_news news = !known                                                   ? JOIN_FIRST
                     : was->instance == j->instance && was->count == j->count ? JOIN_SAME
                                                                              : JOIN_OTHER;
    *was = *j;
    c->node_flags[k] |= NODE_JOIN_KNOWN;
    return news;
}

_Static_assert(RT_CLUSTER_TOKEN_MAX == 64, "rt_cluster_on_clock() reads a node id with %64s");
_Static_assert(JOIN_TEXT_MAX == 37, "rt_cluster_on_clock() reads a join with %37s");

/* Runs the node-joined hooks for node (another one's); announced: see rt_cluster.h. */
static void node_joined(rt_cluster *c, const char *node, bool announced)
{
    for (size_t i = 0; i < c->on_node_joined.n; i++) {
        ((rt_cluster_node_joined_fn)c->on_node_joined.v[i].fn)(c->on_node_joined.v[i].arg, node,
                                                               announced);
    }
}

/* Another node's heartbeat reading ("<id> <wall ns> <join>", or "<id> <wall ns>" from a node of
 * an earlier version). */
void rt_cluster_on_clock(void *arg, const char *subject, const char *reply, const void *data,
                         size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster *c = arg;
    char msg[RT_CLUSTER_TOKEN_MAX + 1 + 20 + 1 + JOIN_TEXT_MAX + 1];
    char id[RT_CLUSTER_TOKEN_MAX + 1];
    char jtext[JOIN_TEXT_MAX + 1];
    uint64_t wall;
    char end;
    node_join j;
    int got = 0;
    if (data && len < sizeof(msg)) {
        memcpy(msg, data, len);
        msg[len] = '\0';
        got = sscanf(msg, "%64s %" SCNu64 " %37s%c", id, &wall, jtext, &end);
    }
    if ((got != 2 && got != 3) || (got == 3 && !join_parse(jtext, strlen(jtext), &j))) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, now_us(c), "cluster heartbeat reading not valid", 0,
                       "cluster %s: ignoring a heartbeat reading that is not valid (%zu bytes)",
                       c->name, len);
        return;
    }
    /* A node not (or no more) listed is not counted. */
    size_t k = node_index(c, id, strlen(id));
    if (k == c->n_nodes || strcmp(id, c->node_id) == 0) {
        return;
    }
    if (c->clk && wall != 0) {
        (void)rt_cluster_clock_heard(c->clk, id, wall, c->wall(c->wall_ctx));
    }
    if (got == 3 && join_heard(c, k, &j) == JOIN_OTHER) {
        RT_LOG_INFO(0,
                    "cluster %s: node %s joined again (instance %016" PRIx64 ", join %" PRIu64
                    "), heard from its heartbeat: its announcement was lost",
                    c->name, id, j.instance, j.count);
        node_joined(c, id, false);
    }
}

/* A join ("<id> <join>", or the bare id from a node of an earlier version) or a clean leave
 * ("left:<id>") announced. */
void rt_cluster_on_changed(void *arg, const char *subject, const char *reply, const void *data,
                           size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster *c = arg;
    const size_t plen = sizeof(LEFT_PREFIX) - 1;
    bool left = data && len > plen && memcmp(data, LEFT_PREFIX, plen) == 0;
    const char *id = left ? (const char *)data + plen : data;
    size_t id_len = left ? len - plen : (data ? len : 0);
    const char *sp = !left && id ? memchr(id, ' ', id_len) : NULL;
    node_join j;
    bool has_join = sp && join_parse(sp + 1, id_len - (size_t)(sp + 1 - id), &j);
    if (sp) {
        id_len = (size_t)(sp - id);
    }
    size_t k = node_index(c, id ? id : "", id ? id_len : 0);
    if (!left && id && id_len <= RT_CLUSTER_TOKEN_MAX) {
        char node[RT_CLUSTER_TOKEN_MAX + 1];
        memcpy(node, id, id_len);
        node[id_len] = '\0';
        /* Reported unless its heartbeat reading told of this join already. */
        bool news = !(has_join && k < c->n_nodes && join_heard(c, k, &j) == JOIN_SAME);
        if (rt_cluster_token_is_valid(node) && strcmp(node, c->node_id) != 0 && news) {
            node_joined(c, node, true);
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
        rt_cluster_read_keys(c);
    }
}

size_t rt_cluster_node_count(const rt_cluster *c)
{
    return c->n_nodes;
}

const char *rt_cluster_node_at(const rt_cluster *c, size_t i)
{
    return i < c->n_nodes ? c->nodes[i] : NULL;
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
