/* rt_cluster_table.c: a table replicated between nodes (rt_cluster_table.h has the protocol). */
#include "rt_cluster_table.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_hmap.h"
#include "rt_log.h"

/* "<name>.tbl.<table>.<node>": name, table and node are tokens of at most RT_CLUSTER_TOKEN_MAX. */
#define SUBJ_MAX (3 * RT_CLUSTER_TOKEN_MAX + 16)

/* Bytes of a message besides its entries (op, node, instance, seq, chunk, flags), and of each
 * entry besides its key and value (brackets, quotes, comma): escaping may grow a string up to six
 * times, so an entry's cost is counted on its escaped form. */
#define MSG_OVERHEAD   (RT_CLUSTER_TOKEN_MAX + 160)
#define ENTRY_OVERHEAD 8

typedef struct entry {
    rt_hnode hn;
    uint32_t gen; /* the snapshot that last carried it */
    char *key;
    char *value;
} entry;

/* What this node holds of another node. */
typedef struct tnode {
    char *id;
    char instance[24];
    uint64_t seq; /* of the last delta applied */
    bool synced;  /* a whole snapshot arrived since the instance was learnt */
    bool in_snap; /* chunks of a snapshot are arriving */
    uint32_t next_chunk;
    uint32_t gen;
    bool listed;       /* seen in the live node list since this node last joined */
    uint64_t heard_us; /* last message from it */
    uint64_t sync_us;  /* last sync asked for */
    bool sync_asked;
    rt_hmap entries;
} tnode;

struct rt_cluster_table {
    rt_cluster *c;
    const rt_cluster_ops *ops;
    void *link;
    char *name;
    char instance[24];
    char subj_all[SUBJ_MAX];  /* every node's */
    char subj_self[SUBJ_MAX]; /* this node's own */
    uint64_t beat_us, hold_us;
    size_t max_msg, max_entries;
    rt_cluster_clock_fn clock;
    void *clock_ctx;
    rt_cluster_table_fn on_change;
    void *arg;
    uint64_t sub_all, sub_self;
    bool on_joined_added;

    rt_hmap own;
    uint64_t seq;
    uint64_t next_beat_us;
    bool down; /* not joined, since down_us */
    uint64_t down_us;
    tnode **nodes;
    size_t n_nodes;
    rt_cluster_table_stats st;
};

static uint64_t now_us(const rt_cluster_table *t)
{
    return t->clock(t->clock_ctx);
}

/* ---- Entries ------------------------------------------------------------------------------ */

static entry *map_find(const rt_hmap *m, const char *key)
{
    for (rt_hnode *n = rt_hmap_first(m, rt_hash_str(key)); n; n = rt_hmap_next(n)) {
        entry *e = RT_CONTAINER_OF(n, entry, hn);
        if (strcmp(e->key, key) == 0) {
            return e;
        }
    }
    return NULL;
}

static void entry_free(entry *e)
{
    free(e->key);
    free(e->value);
    free(e);
}

/* Sets key to value in m; *changed says whether the value is new. */
static wamp_err map_put(rt_hmap *m, const char *key, const char *value, uint32_t gen, bool *changed)
{
    entry *e = map_find(m, key);
    *changed = false;
    if (e) {
        e->gen = gen;
        if (strcmp(e->value, value) == 0) {
            return WAMP_OK;
        }
        char *v = strdup(value);
        if (!v) {
            return WAMP_ENOMEM;
        }
        free(e->value);
        e->value = v;
        *changed = true;
        return WAMP_OK;
    }
    e = calloc(1, sizeof(*e));
    if (!e || !(e->key = strdup(key)) || !(e->value = strdup(value))) {
        goto fail;
    }
    e->gen = gen;
    if (rt_hmap_insert(m, &e->hn, rt_hash_str(key)) != WAMP_OK) {
        goto fail;
    }
    *changed = true;
    return WAMP_OK;
fail:
    if (e) {
        entry_free(e);
    }
    return WAMP_ENOMEM;
}

static void map_clear(rt_hmap *m)
{
    rt_hmap_iter it = rt_hmap_iter_begin(m);
    while (it.node) {
        entry *e = RT_CONTAINER_OF(it.node, entry, hn);
        rt_hmap_iter_next(m, &it);
        rt_hmap_remove(m, &e->hn);
        entry_free(e);
    }
    rt_hmap_fini(m); /* empty and reusable, as after rt_hmap_init() */
}

/* ---- Remote nodes ------------------------------------------------------------------------- */

static tnode *node_find(const rt_cluster_table *t, const char *id)
{
    for (size_t i = 0; i < t->n_nodes; i++) {
        if (strcmp(t->nodes[i]->id, id) == 0) {
            return t->nodes[i];
        }
    }
    return NULL;
}

static tnode *node_get(rt_cluster_table *t, const char *id)
{
    tnode *n = node_find(t, id);
    if (n) {
        return n;
    }
    tnode **nodes = realloc(t->nodes, (t->n_nodes + 1) * sizeof(*nodes));
    if (!nodes) {
        return NULL;
    }
    t->nodes = nodes;
    n = calloc(1, sizeof(*n));
    if (!n || !(n->id = strdup(id))) {
        free(n);
        return NULL;
    }
    rt_hmap_init(&n->entries);
    n->heard_us = now_us(t);
    t->nodes[t->n_nodes++] = n;
    return n;
}

static void remote_removed(rt_cluster_table *t, tnode *n, entry *e)
{
    rt_hmap_remove(&n->entries, &e->hn);
    t->st.entries_remote--;
    if (t->on_change) {
        t->on_change(t->arg, n->id, e->key, NULL);
    }
    entry_free(e);
}

/* Removes every entry of n whose gen is not keep_gen (all: keep_gen of a gen no entry has). */
static void remote_sweep(rt_cluster_table *t, tnode *n, uint32_t keep_gen, bool all)
{
    rt_hmap_iter it = rt_hmap_iter_begin(&n->entries);
    while (it.node) {
        entry *e = RT_CONTAINER_OF(it.node, entry, hn);
        rt_hmap_iter_next(&n->entries, &it);
        if (all || e->gen != keep_gen) {
            remote_removed(t, n, e);
        }
    }
}

/* Frees n and whatever entries it still holds (no callbacks). */
static void node_free(tnode *n)
{
    map_clear(&n->entries);
    free(n->id);
    free(n);
}

/* Forgets node n and its entries (a callback for each). */
static void node_drop(rt_cluster_table *t, tnode *n)
{
    size_t i = 0;
    while (i < t->n_nodes && t->nodes[i] != n) {
        i++;
    }
    RT_ASSERT(i < t->n_nodes);
    memmove(&t->nodes[i], &t->nodes[i + 1], (t->n_nodes - i - 1) * sizeof(*t->nodes));
    t->n_nodes--;
    if (n->entries.count) {
        RT_LOG_INFO(0, "cluster table %s: dropped the %zu entries of node %s", t->name,
                    n->entries.count, n->id);
    }
    remote_sweep(t, n, 0, true);
    node_free(n);
}

static void remote_put(rt_cluster_table *t, tnode *n, const char *key, const char *value)
{
    entry *e = map_find(&n->entries, key);
    if (!e && n->entries.count >= t->max_entries) {
        t->st.bad++;
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, now_us(t), "cluster table over max_entries", 0,
                       "cluster table %s: node %s has more than %zu entries; ignoring the rest",
                       t->name, n->id, t->max_entries);
        return;
    }
    bool changed;
    if (map_put(&n->entries, key, value, n->gen, &changed) != WAMP_OK) {
        RT_LOG_WARN(0, "cluster table %s: out of memory", t->name);
        return;
    }
    if (!e) {
        t->st.entries_remote++;
    }
    if (changed && t->on_change) {
        t->on_change(t->arg, n->id, key, value);
    }
}

/* ---- Sending ------------------------------------------------------------------------------ */

static void send_json(rt_cluster_table *t, const char *subject, json_t *msg)
{
    char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (!s) {
        t->st.send_failed++;
        return;
    }
    size_t len = strlen(s);
    wamp_err err =
            len > t->max_msg ? WAMP_ETOOBIG : t->ops->publish(t->link, subject, NULL, s, len);
    free(s);
    if (err != WAMP_OK) {
        t->st.send_failed++;
    }
}

static json_t *msg_new(const rt_cluster_table *t, const char *op)
{
    return json_pack("{s:s, s:s, s:s, s:I}", "op", op, "n", rt_cluster_node_id(t->c), "i",
                     t->instance, "s", (json_int_t)t->seq);
}

static bool joined(const rt_cluster_table *t)
{
    return rt_cluster_member_state_get(t->c) == RT_CLUSTER_MEMBER_JOINED;
}

static size_t escaped_len(const char *s)
{
    return 6 * strlen(s);
}

/* This node's whole table, in chunks, to subject; want: ask the receivers for theirs. */
static void send_snapshot(rt_cluster_table *t, const char *subject, bool want)
{
    rt_hmap_iter it = rt_hmap_iter_begin(&t->own);
    uint32_t chunk = 0;
    t->st.snapshots_sent++;
    do {
        json_t *msg = msg_new(t, "snap");
        json_t *e = json_array();
        size_t bytes = MSG_OVERHEAD;
        while (it.node) {
            entry *en = RT_CONTAINER_OF(it.node, entry, hn);
            size_t cost = escaped_len(en->key) + escaped_len(en->value) + ENTRY_OVERHEAD;
            if (json_array_size(e) > 0 && bytes + cost > t->max_msg) {
                break;
            }
            bytes += cost;
            json_array_append_new(e, json_pack("[s,s]", en->key, en->value));
            rt_hmap_iter_next(&t->own, &it);
        }
        json_object_set_new(msg, "c", json_integer(chunk++));
        json_object_set_new(msg, "last", json_boolean(it.node == NULL));
        json_object_set_new(msg, "want", json_boolean(want));
        json_object_set_new(msg, "e", e);
        send_json(t, subject, msg);
    } while (it.node);
}

static void send_delta(rt_cluster_table *t, const char *key, const char *value)
{
    t->seq++;
    if (!joined(t)) {
        return; /* the snapshot after the join carries it */
    }
    json_t *msg = msg_new(t, value ? "put" : "del");
    json_object_set_new(msg, "k", json_string(key));
    if (value) {
        json_object_set_new(msg, "v", json_string(value));
    }
    send_json(t, t->subj_all, msg);
}

static void node_subject(const rt_cluster_table *t, const char *node_id, char *out, size_t size)
{
    snprintf(out, size, "%s.tbl.%s.%s", rt_cluster_name(t->c), t->name, node_id);
}

/* A gap in what n sent: ask it for a snapshot (at most once per beat). */
static void ask_sync(rt_cluster_table *t, tnode *n)
{
    uint64_t now = now_us(t);
    if (n->sync_asked && now - n->sync_us < t->beat_us) {
        return;
    }
    n->sync_asked = true;
    n->sync_us = now;
    t->st.syncs++;
    char subj[SUBJ_MAX];
    node_subject(t, n->id, subj, sizeof(subj));
    send_json(t, subj, json_pack("{s:s, s:s}", "op", "sync", "n", rt_cluster_node_id(t->c)));
}

/* ---- Receiving ---------------------------------------------------------------------------- */

static void on_snap(rt_cluster_table *t, tnode *n, const char *inst, uint64_t seq, json_t *msg)
{
    json_int_t chunk = json_integer_value(json_object_get(msg, "c"));
    json_t *e = json_object_get(msg, "e");
    if (!json_is_array(e)) {
        t->st.bad++;
        return;
    }
    if (chunk == 0) {
        snprintf(n->instance, sizeof(n->instance), "%s", inst);
        n->seq = seq;
        n->in_snap = true;
        n->synced = false;
        n->next_chunk = 0;
        n->gen++;
    }
    if (!n->in_snap || strcmp(n->instance, inst) != 0 || n->seq != seq ||
        chunk != (json_int_t)n->next_chunk) {
        n->in_snap = false;
        ask_sync(t, n);
        return;
    }
    n->next_chunk++;
    size_t i;
    json_t *kv;
    json_array_foreach(e, i, kv)
    {
        const char *k = json_string_value(json_array_get(kv, 0));
        const char *v = json_string_value(json_array_get(kv, 1));
        if (k && v) {
            remote_put(t, n, k, v);
        } else {
            t->st.bad++;
        }
    }
    if (json_is_true(json_object_get(msg, "last"))) {
        n->in_snap = false;
        n->synced = true;
        n->sync_asked = false;
        remote_sweep(t, n, n->gen, false);
    }
}

static void on_delta(rt_cluster_table *t, tnode *n, const char *op, const char *inst, uint64_t seq,
                     json_t *msg)
{
    bool known = n->synced && strcmp(n->instance, inst) == 0;
    if (known && seq <= n->seq) {
        return; /* old news */
    }
    if (!known || seq != n->seq + 1) {
        ask_sync(t, n);
        return;
    }
    const char *k = json_string_value(json_object_get(msg, "k"));
    const char *v = json_string_value(json_object_get(msg, "v"));
    if (!k || (strcmp(op, "put") == 0 && !v)) {
        t->st.bad++;
        return;
    }
    n->seq = seq;
    if (strcmp(op, "put") == 0) {
        remote_put(t, n, k, v);
        return;
    }
    entry *e = map_find(&n->entries, k);
    if (e) {
        remote_removed(t, n, e);
    }
}

static void on_msg(void *arg, const char *subject, const char *reply, const void *data, size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster_table *t = arg;
    json_error_t jerr;
    json_t *msg = len <= t->max_msg ? json_loadb(data, len, 0, &jerr) : NULL;
    const char *op = json_string_value(json_object_get(msg, "op"));
    const char *from = json_string_value(json_object_get(msg, "n"));
    if (!op || !rt_cluster_token_is_valid(from)) {
        t->st.bad++;
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, now_us(t), "cluster table message not valid", 0,
                       "cluster table %s: ignoring a message that is not valid (%zu bytes)",
                       t->name, len);
        goto done;
    }
    if (strcmp(from, rt_cluster_node_id(t->c)) == 0) {
        goto done; /* our own (a bus with echo) */
    }
    if (strcmp(op, "sync") == 0) {
        char subj[SUBJ_MAX];
        node_subject(t, from, subj, sizeof(subj));
        send_snapshot(t, subj, false);
        goto done;
    }
    const char *inst = json_string_value(json_object_get(msg, "i"));
    json_t *js = json_object_get(msg, "s");
    if (!inst || strlen(inst) >= sizeof(((tnode *)0)->instance) || !json_is_integer(js) ||
        json_integer_value(js) < 0) {
        t->st.bad++;
        goto done;
    }
    uint64_t seq = (uint64_t)json_integer_value(js);
    tnode *n = node_get(t, from);
    if (!n) {
        RT_LOG_WARN(0, "cluster table %s: out of memory", t->name);
        goto done;
    }
    n->heard_us = now_us(t);
    if (strcmp(op, "snap") == 0) {
        bool want = json_is_true(json_object_get(msg, "want")) &&
                    json_integer_value(json_object_get(msg, "c")) == 0;
        on_snap(t, n, inst, seq, msg);
        if (want) {
            char subj[SUBJ_MAX];
            node_subject(t, from, subj, sizeof(subj));
            send_snapshot(t, subj, false);
        }
    } else if (strcmp(op, "put") == 0 || strcmp(op, "del") == 0) {
        on_delta(t, n, op, inst, seq, msg);
    } else if (strcmp(op, "beat") == 0) {
        if (!n->synced || strcmp(n->instance, inst) != 0 || n->seq != seq) {
            ask_sync(t, n);
        }
    } else {
        t->st.bad++;
    }
done:
    json_decref(msg);
}

static void on_joined(void *arg)
{
    rt_cluster_table *t = arg;
    t->down = false;
    /* The list is read again: a node counts as listed once this node sees it there. */
    for (size_t i = 0; i < t->n_nodes; i++) {
        t->nodes[i]->listed = false;
    }
    t->next_beat_us = now_us(t) + t->beat_us;
    send_snapshot(t, t->subj_all, true);
}

/* ---- Public ------------------------------------------------------------------------------- */

wamp_err rt_cluster_table_new(rt_cluster *c, const rt_cluster_table_options *o,
                              rt_cluster_table_fn on_change, void *arg, rt_cluster_table **out)
{
    *out = NULL;
    if (!rt_cluster_token_is_valid(o->table) || !o->ops || !o->clock || !o->beat_ms ||
        !o->max_entries || o->max_message_bytes < 2 * MSG_OVERHEAD) {
        return WAMP_EINVAL;
    }
    rt_cluster_table *t = calloc(1, sizeof(*t));
    if (!t || !(t->name = strdup(o->table))) {
        free(t);
        return WAMP_ENOMEM;
    }
    t->c = c;
    t->ops = o->ops;
    t->link = o->link;
    t->clock = o->clock;
    t->clock_ctx = o->clock_ctx;
    t->beat_us = (uint64_t)o->beat_ms * 1000;
    t->hold_us = (uint64_t)o->hold_ms * 1000;
    t->max_msg = o->max_message_bytes;
    t->max_entries = o->max_entries;
    t->on_change = on_change;
    t->arg = arg;
    rt_hmap_init(&t->own);
    snprintf(t->instance, sizeof(t->instance), "%016" PRIx64, o->instance);
    snprintf(t->subj_all, sizeof(t->subj_all), "%s.tbl.%s", rt_cluster_name(c), t->name);
    node_subject(t, rt_cluster_node_id(c), t->subj_self, sizeof(t->subj_self));
    t->down = true;
    t->down_us = now_us(t);
    wamp_err err = t->ops->subscribe(t->link, t->subj_all, NULL, on_msg, t, &t->sub_all);
    if (err != WAMP_OK) {
        goto fail;
    }
    err = t->ops->subscribe(t->link, t->subj_self, NULL, on_msg, t, &t->sub_self);
    if (err != WAMP_OK) {
        t->ops->unsubscribe(t->link, t->sub_all);
        goto fail;
    }
    err = rt_cluster_add_on_joined(c, on_joined, t);
    if (err != WAMP_OK) {
        t->ops->unsubscribe(t->link, t->sub_all);
        t->ops->unsubscribe(t->link, t->sub_self);
        goto fail;
    }
    t->on_joined_added = true;
    if (joined(t)) {
        on_joined(t);
    }
    *out = t;
    return WAMP_OK;
fail:
    free(t->name);
    free(t);
    return err;
}

void rt_cluster_table_free(rt_cluster_table *t)
{
    if (!t) {
        return;
    }
    if (t->on_joined_added) {
        rt_cluster_remove_on_joined(t->c, on_joined, t);
        t->ops->unsubscribe(t->link, t->sub_all);
        t->ops->unsubscribe(t->link, t->sub_self);
    }
    for (size_t i = 0; i < t->n_nodes; i++) {
        node_free(t->nodes[i]);
    }
    free(t->nodes);
    map_clear(&t->own);
    free(t->name);
    free(t);
}

wamp_err rt_cluster_table_put(rt_cluster_table *t, const char *key, const char *value)
{
    if (MSG_OVERHEAD + escaped_len(key) + escaped_len(value) + ENTRY_OVERHEAD > t->max_msg) {
        return WAMP_ETOOBIG;
    }
    entry *e = map_find(&t->own, key);
    if (!e && t->own.count >= t->max_entries) {
        return WAMP_ETOOBIG;
    }
    bool changed;
    wamp_err err = map_put(&t->own, key, value, 0, &changed);
    if (err == WAMP_OK && changed) {
        send_delta(t, key, value);
    }
    return err;
}

wamp_err rt_cluster_table_remove(rt_cluster_table *t, const char *key)
{
    entry *e = map_find(&t->own, key);
    if (!e) {
        return WAMP_ENOTFOUND;
    }
    rt_hmap_remove(&t->own, &e->hn);
    send_delta(t, key, NULL);
    entry_free(e);
    return WAMP_OK;
}

static const rt_hmap *map_of(const rt_cluster_table *t, const char *node_id)
{
    if (strcmp(node_id, rt_cluster_node_id(t->c)) == 0) {
        return &t->own;
    }
    const tnode *n = node_find(t, node_id);
    return n ? &n->entries : NULL;
}

const char *rt_cluster_table_get(const rt_cluster_table *t, const char *node_id, const char *key)
{
    const rt_hmap *m = map_of(t, node_id);
    const entry *e = m ? map_find(m, key) : NULL;
    return e ? e->value : NULL;
}

static void foreach_in(const rt_hmap *m, const char *node_id,
                       void (*fn)(void *, const char *, const char *, const char *), void *arg)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(m); it.node; rt_hmap_iter_next(m, &it)) {
        const entry *e = RT_CONTAINER_OF(it.node, entry, hn);
        fn(arg, node_id, e->key, e->value);
    }
}

void rt_cluster_table_foreach(const rt_cluster_table *t, const char *node_id,
                              void (*fn)(void *arg, const char *node_id, const char *key,
                                         const char *value),
                              void *arg)
{
    if (node_id) {
        const rt_hmap *m = map_of(t, node_id);
        if (m) {
            foreach_in(m, node_id, fn, arg);
        }
        return;
    }
    for (size_t i = 0; i < t->n_nodes; i++) {
        foreach_in(&t->nodes[i]->entries, t->nodes[i]->id, fn, arg);
    }
}

size_t rt_cluster_table_count(const rt_cluster_table *t, const char *node_id)
{
    const rt_hmap *m = map_of(t, node_id);
    return m ? m->count : 0;
}

void rt_cluster_table_tick(rt_cluster_table *t)
{
    uint64_t now = now_us(t);
    if (!joined(t)) {
        if (!t->down) {
            t->down = true;
            t->down_us = now;
        }
        while (t->n_nodes && now - t->down_us >= t->hold_us) {
            node_drop(t, t->nodes[t->n_nodes - 1]);
        }
        return;
    }
    if (now >= t->next_beat_us) {
        t->next_beat_us = now + t->beat_us;
        send_json(t, t->subj_all, msg_new(t, "beat"));
    }
    size_t i = 0;
    while (i < t->n_nodes) {
        tnode *n = t->nodes[i];
        if (rt_cluster_has_node(t->c, n->id)) {
            n->listed = true;
        } else if (n->listed || now - n->heard_us >= t->hold_us) {
            node_drop(t, n);
            continue;
        }
        i++;
    }
}

void rt_cluster_table_stats_get(const rt_cluster_table *t, rt_cluster_table_stats *out)
{
    *out = t->st;
}
