/* rt_cluster_broker.c: cross-node publish/subscribe (rt_cluster_broker.h has the design). */
#include "rt_cluster_broker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_broker.h"
#include "rt_cluster_table.h"
#include "rt_hmap.h"
#include "rt_list.h"
#include "rt_log.h"
#include "rt_observer.h"
#include "rt_realm.h"
#include "rt_session.h"
#include "wamp_uri.h"

#define TABLE_NAME "subs"
/* Snapshot chunks of the interest table: a URI is short, so 64 KiB holds hundreds of entries. */
#define TABLE_MESSAGE_BYTES 65536
/* "<name>.node.<id>.ev", "<name>.ret.drop". */
#define SUBJ_MAX (2 * RT_CLUSTER_TOKEN_MAX + 32)
/* Header of one envelope: 4 bytes of length. */
#define LEN_BYTES 4

/* One realm's hooks: the observer's and the broker's ctx. Owned by the realm's observer list
 * (freed by its detach), as the list outlives the cluster broker; cb is NULL once that is gone. */
typedef struct relay {
    rt_cluster_broker *cb;
    rt_realm *realm;
    rt_broker *broker;
} relay;

/* Another node with entries in the table. */
typedef struct rnode {
    char *id;
    size_t n_interests;
    bool hit; /* scratch: the publication being forwarded matches its interest */
} rnode;

/* One entry of another node: a subscription (realm, match, uri) someone on it holds. */
typedef struct interest {
    rt_hnode by_key;   /* all, hashed by node and key */
    rt_hnode by_topic; /* exact ones, hashed by realm and uri */
    rt_list patterns;  /* prefix and wildcard ones */
    rnode *node;
    char *key;
    char *realm;
    char *uri;
    wamp_match match;
} interest;

struct rt_cluster_broker {
    rt_router *rt;
    rt_cluster *c;
    const rt_cluster_ops *ops;
    void *link;
    rt_cluster_table *table;
    relay **relays;
    size_t n_relays;
    rnode **nodes;
    size_t n_nodes;
    rt_hmap by_key, by_topic;
    rt_list patterns;
    uint64_t sub_ev, sub_drop, sub_ret;
    bool served;
    char subj_drop[SUBJ_MAX];
    size_t max_msg;
    rt_cluster_broker_stats st;
};

/* ---- Growable bytes ------------------------------------------------------------------------ */

typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
} bytes;

static bool bytes_add(bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) {
            cap *= 2;
        }
        unsigned char *np = realloc(b->p, cap);
        if (!np) {
            return false;
        }
        b->p = np;
        b->cap = cap;
    }
    if (n) {
        memcpy(b->p + b->len, p, n);
    }
    b->len += n;
    return true;
}

/* ---- Interest index ------------------------------------------------------------------------ */

static uint64_t key_hash(const char *node, const char *key)
{
    return rt_hash_u64(rt_hash_str(node) ^ rt_hash_str(key));
}

static uint64_t topic_hash(const char *realm, const char *uri)
{
    return rt_hash_u64(rt_hash_str(realm) * 31 + rt_hash_str(uri));
}

static rnode *rnode_get(rt_cluster_broker *cb, const char *id, bool create)
{
    for (size_t i = 0; i < cb->n_nodes; i++) {
        if (strcmp(cb->nodes[i]->id, id) == 0) {
            return cb->nodes[i];
        }
    }
    if (!create) {
        return NULL;
    }
    rnode **nodes = realloc(cb->nodes, (cb->n_nodes + 1) * sizeof(*nodes));
    if (!nodes) {
        return NULL;
    }
    cb->nodes = nodes;
    rnode *n = calloc(1, sizeof(*n));
    if (!n || !(n->id = strdup(id))) {
        free(n);
        return NULL;
    }
    cb->nodes[cb->n_nodes++] = n;
    return n;
}

static void rnode_unref(rt_cluster_broker *cb, rnode *n)
{
    if (--n->n_interests > 0) {
        return;
    }
    for (size_t i = 0; i < cb->n_nodes; i++) {
        if (cb->nodes[i] == n) {
            cb->nodes[i] = cb->nodes[--cb->n_nodes];
            break;
        }
    }
    free(n->id);
    free(n);
}

static interest *interest_find(const rt_cluster_broker *cb, const char *node, const char *key)
{
    for (rt_hnode *h = rt_hmap_first(&cb->by_key, key_hash(node, key)); h; h = rt_hmap_next(h)) {
        interest *in = RT_CONTAINER_OF(h, interest, by_key);
        if (strcmp(in->node->id, node) == 0 && strcmp(in->key, key) == 0) {
            return in;
        }
    }
    return NULL;
}

static void interest_free(rt_cluster_broker *cb, interest *in)
{
    rt_hmap_remove(&cb->by_key, &in->by_key);
    if (in->match == WAMP_MATCH_EXACT) {
        rt_hmap_remove(&cb->by_topic, &in->by_topic);
    } else {
        rt_list_remove(&in->patterns);
    }
    rnode_unref(cb, in->node);
    cb->st.remote_interest--;
    free(in->key);
    free(in->realm);
    free(in->uri);
    free(in);
}

/* key is [realm, match, uri]: the entry of a subscription. */
static void interest_add(rt_cluster_broker *cb, const char *node, const char *key)
{
    json_error_t jerr;
    json_t *k = json_loads(key, 0, &jerr);
    const char *realm = json_string_value(json_array_get(k, 0));
    const char *ms = json_string_value(json_array_get(k, 1));
    const char *uri = json_string_value(json_array_get(k, 2));
    wamp_match match;
    if (!realm || !ms || !uri || !wamp_match_parse(ms, &match)) {
        cb->st.events_bad++;
        json_decref(k);
        return;
    }
    interest *in = calloc(1, sizeof(*in));
    rnode *n = in ? rnode_get(cb, node, true) : NULL;
    if (!n || !(in->key = strdup(key)) || !(in->realm = strdup(realm)) ||
        !(in->uri = strdup(uri))) {
        goto oom;
    }
    in->node = n;
    in->match = match;
    rt_list_init(&in->patterns);
    if (rt_hmap_insert(&cb->by_key, &in->by_key, key_hash(node, key)) != WAMP_OK) {
        goto oom;
    }
    if (match == WAMP_MATCH_EXACT) {
        if (rt_hmap_insert(&cb->by_topic, &in->by_topic, topic_hash(realm, uri)) != WAMP_OK) {
            rt_hmap_remove(&cb->by_key, &in->by_key);
            goto oom;
        }
    } else {
        rt_list_add_tail(&cb->patterns, &in->patterns);
    }
    n->n_interests++;
    cb->st.remote_interest++;
    json_decref(k);
    return;
oom:
    RT_LOG_WARN(0, "cluster: out of memory adding node %s's subscription", node);
    if (in) {
        free(in->key);
        free(in->realm);
        free(in->uri);
        free(in);
    }
    if (n && n->n_interests == 0) {
        n->n_interests = 1;
        rnode_unref(cb, n);
    }
    json_decref(k);
}

static void on_table_change(void *arg, const char *node, const char *key, const char *value)
{
    rt_cluster_broker *cb = arg;
    interest *in = interest_find(cb, node, key);
    if (in) {
        interest_free(cb, in);
    }
    if (value) {
        interest_add(cb, node, key);
    }
}

/* The table key of a subscription (JSON text, owned), NULL on allocation failure. */
static char *sub_key(const char *realm, const rt_subscription *sub)
{
    json_t *k = json_pack("[s,s,s]", realm, wamp_match_name(rt_subscription_match(sub)),
                          rt_subscription_uri(sub));
    char *s = k ? json_dumps(k, JSON_COMPACT) : NULL;
    json_decref(k);
    return s;
}

/* ---- Observer: this node's subscriptions ---------------------------------------------------- */

static void on_sub_added(void *ctx, rt_realm *r, rt_session *s, const rt_subscription *sub,
                         bool created)
{
    (void)s;
    relay *rl = ctx;
    if (!rl->cb || !created) {
        return;
    }
    char *key = sub_key(rt_realm_name(r), sub);
    wamp_err err = key ? rt_cluster_table_put(rl->cb->table, key, "") : WAMP_ENOMEM;
    if (err != WAMP_OK) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(rl->cb->rt),
                       "cluster subscription not announced", 0,
                       "cluster: subscription to %s on realm %s not announced to the other "
                       "nodes: %s",
                       rt_subscription_uri(sub), rt_realm_name(r), wamp_strerror(err));
    }
    free(key);
}

static void on_sub_removed(void *ctx, rt_realm *r, rt_session *s, const rt_subscription *sub,
                           bool deleted)
{
    (void)s;
    relay *rl = ctx;
    if (!rl->cb || !deleted) {
        return;
    }
    char *key = sub_key(rt_realm_name(r), sub);
    if (key) {
        (void)rt_cluster_table_remove(rl->cb->table, key);
    }
    free(key);
}

static void relay_detach(void *ctx)
{
    free(ctx);
}

/* ---- Envelopes ------------------------------------------------------------------------------ */

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Appends the envelope of publication p (of realm; extra: more header fields, borrowed) to out.
 * false on allocation failure. */
static bool envelope_add(bytes *out, const char *node, const char *realm, const rt_broker_pub *p,
                         json_t *extra)
{
    json_t *h = json_pack("{s:s, s:s, s:s, s:I}", "n", node, "r", realm, "t", p->topic, "p",
                          (json_int_t)p->publication);
    if (!h) {
        return false;
    }
    int rc = 0;
    if (p->options && json_object_size(p->options) > 0) {
        rc |= json_object_set(h, "o", (json_t *)p->options);
    }
    if (p->disclose) {
        rc |= json_object_set_new(h, "pub",
                                  json_pack("[I,s?,s?]", (json_int_t)p->publisher,
                                            p->publisher_authid, p->publisher_authrole));
    }
    if (p->correlation) {
        char hex[2 * RT_BROKER_CORRELATION_LEN + 1];
        for (size_t i = 0; i < RT_BROKER_CORRELATION_LEN; i++) {
            snprintf(hex + 2 * i, 3, "%02x", p->correlation[i]);
        }
        rc |= json_object_set_new(h, "c", json_string(hex));
    }
    if (p->payload.ser) {
        rc |= json_object_set_new(h, "ser", json_integer(p->payload.ser));
        rc |= json_object_set_new(h, "al", json_integer((json_int_t)p->payload.args.len));
        rc |= json_object_set_new(h, "kl", json_integer((json_int_t)p->payload.kwargs.len));
    } else {
        if (p->args) {
            rc |= json_object_set(h, "a", (json_t *)p->args);
        }
        if (p->kwargs) {
            rc |= json_object_set(h, "kw", (json_t *)p->kwargs);
        }
    }
    if (extra) {
        rc |= json_object_update(h, extra);
    }
    char *text = rc == 0 ? json_dumps(h, JSON_COMPACT) : NULL;
    json_decref(h);
    if (!text) {
        return false;
    }
    size_t tlen = strlen(text);
    unsigned char len[LEN_BYTES];
    put_be32(len, (uint32_t)tlen);
    bool ok = bytes_add(out, len, sizeof(len)) && bytes_add(out, text, tlen);
    free(text);
    if (ok && p->payload.ser) {
        ok = bytes_add(out, p->payload.args.p, p->payload.args.len) &&
             bytes_add(out, p->payload.kwargs.p, p->payload.kwargs.len);
    }
    return ok;
}

/* One envelope read from data: the header (owned by the caller: json_decref) and *pub's fields,
 * borrowed from it and from data. Returns the bytes it took, 0 if it is not valid. */
typedef struct envelope {
    json_t *h;
    const char *node, *realm;
    rt_broker_pub pub;
    uint8_t corr[RT_BROKER_CORRELATION_LEN];
} envelope;

static bool hex_of(const char *s, uint8_t *out, size_t n)
{
    if (!s || strlen(s) != 2 * n) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            return false;
        }
        out[i] = (uint8_t)v;
    }
    return true;
}

static size_t envelope_read(const unsigned char *data, size_t len, envelope *e)
{
    memset(e, 0, sizeof(*e));
    if (len < LEN_BYTES) {
        return 0;
    }
    size_t hlen = get_be32(data);
    if (hlen > len - LEN_BYTES) {
        return 0;
    }
    json_error_t jerr;
    e->h = json_loadb((const char *)data + LEN_BYTES, hlen, 0, &jerr);
    json_t *h = e->h;
    e->node = json_string_value(json_object_get(h, "n"));
    e->realm = json_string_value(json_object_get(h, "r"));
    rt_broker_pub *p = &e->pub;
    p->topic = json_string_value(json_object_get(h, "t"));
    json_t *jp = json_object_get(h, "p");
    if (!e->node || !e->realm || !p->topic || !json_is_integer(jp) || json_integer_value(jp) < 0 ||
        !wamp_uri_is_valid(p->topic, WAMP_URI_LOOSE)) {
        return 0;
    }
    p->publication = (uint64_t)json_integer_value(jp);
    p->options = json_object_get(h, "o");
    if (p->options && !json_is_object(p->options)) {
        return 0;
    }
    json_t *pub = json_object_get(h, "pub");
    if (pub) {
        json_t *id = json_array_get(pub, 0);
        if (!json_is_integer(id) || json_integer_value(id) < 0) {
            return 0;
        }
        p->disclose = true;
        p->publisher = (uint64_t)json_integer_value(id);
        p->publisher_authid = json_string_value(json_array_get(pub, 1));
        p->publisher_authrole = json_string_value(json_array_get(pub, 2));
    }
    if (hex_of(json_string_value(json_object_get(h, "c")), e->corr, sizeof(e->corr))) {
        p->correlation = e->corr;
    }
    size_t used = LEN_BYTES + hlen;
    json_t *ser = json_object_get(h, "ser");
    if (ser) {
        json_int_t s = json_integer_value(ser);
        json_int_t al = json_integer_value(json_object_get(h, "al"));
        json_int_t kl = json_integer_value(json_object_get(h, "kl"));
        if (s <= 0 || s >= WAMP_SER_COUNT || al < 0 || kl < 0 ||
            (uint64_t)al + (uint64_t)kl > len - used) {
            return 0;
        }
        p->payload.ser = (wamp_ser)s;
        p->payload.args = (wamp_slice){al ? data + used : NULL, (size_t)al};
        p->payload.kwargs = (wamp_slice){kl ? data + used + al : NULL, (size_t)kl};
        used += (size_t)al + (size_t)kl;
    } else {
        p->args = json_object_get(h, "a");
        p->kwargs = json_object_get(h, "kw");
        if ((p->args && !json_is_array(p->args)) || (p->kwargs && !json_is_object(p->kwargs))) {
            return 0;
        }
    }
    return used;
}

static rt_broker *broker_of(rt_cluster_broker *cb, const char *realm)
{
    for (size_t i = 0; i < cb->n_relays; i++) {
        if (strcmp(rt_realm_name(cb->relays[i]->realm), realm) == 0) {
            return cb->relays[i]->broker;
        }
    }
    return NULL;
}

static void bad_message(rt_cluster_broker *cb, const char *what, size_t len)
{
    cb->st.events_bad++;
    RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(cb->rt), "cluster event not valid", 0,
                   "cluster: ignoring %s that is not valid (%zu bytes)", what, len);
}

/* ---- Forwarding ----------------------------------------------------------------------------- */

static void dropped(rt_cluster_broker *cb, const char *to, size_t len, wamp_err err)
{
    cb->st.events_dropped++;
    RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(cb->rt), "cluster event dropped", 0,
                   "cluster: event of %zu bytes to node %s dropped: %s", len, to,
                   err == WAMP_ETOOBIG ? "over the size or queue limit" : wamp_strerror(err));
}

static void send_to_node(rt_cluster_broker *cb, const char *node, const bytes *env)
{
    char subj[SUBJ_MAX];
    snprintf(subj, sizeof(subj), "%s.node.%s.ev", rt_cluster_name(cb->c), node);
    wamp_err err = env->len > cb->max_msg
                           ? WAMP_ETOOBIG
                           : cb->ops->publish(cb->link, subj, NULL, env->p, env->len);
    if (err != WAMP_OK) {
        dropped(cb, node, env->len, err);
        return;
    }
    cb->st.events_out++;
}

/* Marks every node whose interest matches topic in realm; true if any. */
static bool mark_nodes(rt_cluster_broker *cb, const char *realm, const char *topic)
{
    bool any = false;
    for (size_t i = 0; i < cb->n_nodes; i++) {
        cb->nodes[i]->hit = false;
    }
    for (rt_hnode *h = rt_hmap_first(&cb->by_topic, topic_hash(realm, topic)); h;
         h = rt_hmap_next(h)) {
        interest *in = RT_CONTAINER_OF(h, interest, by_topic);
        if (strcmp(in->uri, topic) == 0 && strcmp(in->realm, realm) == 0) {
            in->node->hit = any = true;
        }
    }
    for (rt_list *it = cb->patterns.next; it != &cb->patterns; it = it->next) {
        interest *in = RT_CONTAINER_OF(it, interest, patterns);
        if (!in->node->hit && strcmp(in->realm, realm) == 0 &&
            wamp_uri_matches(in->uri, in->match, topic)) {
            in->node->hit = any = true;
        }
    }
    return any;
}

static void on_published(void *ctx, rt_broker *b, const rt_broker_pub *p)
{
    (void)b;
    relay *rl = ctx;
    rt_cluster_broker *cb = rl->cb;
    if (!cb) {
        return;
    }
    const char *realm = rt_realm_name(rl->realm);
    if (p->retain) {
        json_t *m = json_pack("{s:s, s:s, s:s, s:I}", "n", rt_cluster_node_id(cb->c), "r", realm,
                              "t", p->topic, "w", (json_int_t)rt_router_wall_ns(cb->rt));
        char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
        json_decref(m);
        if (text) {
            (void)cb->ops->publish(cb->link, cb->subj_drop, NULL, text, strlen(text));
        }
        free(text);
    }
    if (!mark_nodes(cb, realm, p->topic)) {
        return;
    }
    bytes env = {0};
    if (!envelope_add(&env, rt_cluster_node_id(cb->c), realm, p, NULL)) {
        free(env.p);
        dropped(cb, "(any)", 0, WAMP_ENOMEM);
        return;
    }
    for (size_t i = 0; i < cb->n_nodes; i++) {
        if (cb->nodes[i]->hit) {
            send_to_node(cb, cb->nodes[i]->id, &env);
        }
    }
    free(env.p);
}

/* ---- Receiving events ----------------------------------------------------------------------- */

static void on_event(void *arg, const char *subject, const char *reply, const void *data,
                     size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster_broker *cb = arg;
    envelope e;
    size_t used = envelope_read(data, len, &e);
    rt_broker *b = used > 0 && used == len ? broker_of(cb, e.realm) : NULL;
    if (!b) {
        bad_message(cb, "an event", len);
        json_decref(e.h);
        return;
    }
    cb->st.events_in++;
    if (rt_broker_deliver(b, &e.pub) != WAMP_OK) {
        RT_LOG_WARN(0, "cluster: out of memory delivering an event from node %s", e.node);
    }
    json_decref(e.h);
}

static void on_retained_drop(void *arg, const char *subject, const char *reply, const void *data,
                             size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster_broker *cb = arg;
    json_error_t jerr;
    json_t *m = json_loadb(data, len, 0, &jerr);
    const char *realm = json_string_value(json_object_get(m, "r"));
    const char *topic = json_string_value(json_object_get(m, "t"));
    json_t *w = json_object_get(m, "w");
    rt_broker *b = realm && topic && json_is_integer(w) ? broker_of(cb, realm) : NULL;
    if (b) {
        rt_broker_retained_drop(b, topic, (uint64_t)json_integer_value(w));
    } else {
        bad_message(cb, "a retained-event notice", len);
    }
    json_decref(m);
}

/* ---- Retained events from the other nodes --------------------------------------------------- */

/* The answer to a "ret" request: the envelopes of the retained events, each naming the
 * subscription ("sub") and session ("s") to deliver to. */
static void on_retained_reply(void *arg, wamp_err err, const void *data, size_t len)
{
    relay *rl = arg;
    rt_cluster_broker *cb = rl->cb;
    if (!cb || err != WAMP_OK) {
        return;
    }
    const unsigned char *p = data;
    while (len > 0) {
        envelope e;
        size_t used = envelope_read(p, len, &e);
        json_t *js = json_object_get(e.h, "s");
        json_t *jsub = json_object_get(e.h, "sub");
        if (!used || !json_is_integer(js) || !json_is_integer(jsub)) {
            bad_message(cb, "retained events", len);
            json_decref(e.h);
            return;
        }
        if (rt_broker_deliver_retained(rl->broker, (uint64_t)json_integer_value(js),
                                       (uint64_t)json_integer_value(jsub), &e.pub) != WAMP_OK) {
            RT_LOG_WARN(0, "cluster: out of memory delivering a retained event");
        }
        json_decref(e.h);
        p += used;
        len -= used;
    }
}

static void on_get_retained(void *ctx, rt_broker *b, rt_session *s, const rt_subscription *sub)
{
    (void)b;
    relay *rl = ctx;
    rt_cluster_broker *cb = rl->cb;
    if (!cb) {
        return;
    }
    json_t *m =
            json_pack("{s:s, s:s, s:s, s:I, s:I, s:s?, s:s?}", "r", rt_realm_name(rl->realm), "m",
                      wamp_match_name(rt_subscription_match(sub)), "u", rt_subscription_uri(sub),
                      "s", (json_int_t)rt_session_id(s), "sub", (json_int_t)rt_subscription_id(sub),
                      "authid", rt_session_authid(s), "authrole", rt_session_authrole(s));
    char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    if (!text) {
        return;
    }
    const char *self = rt_cluster_node_id(cb->c);
    for (size_t i = 0; i < rt_cluster_node_count(cb->c); i++) {
        const char *node = rt_cluster_node_at(cb->c, i);
        if (strcmp(node, self) != 0) {
            (void)rt_cluster_request(cb->c, node, "ret", text, strlen(text), on_retained_reply, rl);
        }
    }
    free(text);
}

typedef struct ret_ctx {
    rt_cluster_broker *cb;
    const char *realm;
    json_t *extra; /* {"s", "sub"} */
    bytes out;
    bool oom;
    size_t skipped;
} ret_ctx;

static void add_retained(void *arg, const rt_broker_pub *p)
{
    ret_ctx *rc = arg;
    size_t before = rc->out.len;
    if (rc->oom ||
        !envelope_add(&rc->out, rt_cluster_node_id(rc->cb->c), rc->realm, p, rc->extra)) {
        rc->oom = true;
        return;
    }
    if (rc->out.len > rc->cb->max_msg) {
        rc->out.len = before; /* what fits goes */
        rc->skipped++;
    }
}

static void on_retained_request(void *arg, const char *subject, const char *reply, const void *data,
                                size_t len)
{
    (void)subject;
    rt_cluster_broker *cb = arg;
    json_error_t jerr;
    json_t *m = json_loadb(data, len, 0, &jerr);
    const char *realm = json_string_value(json_object_get(m, "r"));
    const char *ms = json_string_value(json_object_get(m, "m"));
    const char *uri = json_string_value(json_object_get(m, "u"));
    json_t *js = json_object_get(m, "s"), *jsub = json_object_get(m, "sub");
    wamp_match match;
    rt_broker *b = realm ? broker_of(cb, realm) : NULL;
    if (!reply || !b || !ms || !uri || !wamp_match_parse(ms, &match) || !json_is_integer(js) ||
        !json_is_integer(jsub)) {
        bad_message(cb, "a retained-events request", len);
        json_decref(m);
        return;
    }
    ret_ctx rc = {.cb = cb, .realm = realm};
    rc.extra = json_pack("{s:O, s:O}", "s", js, "sub", jsub);
    rt_broker_retained_foreach(b, uri, match, (uint64_t)json_integer_value(js),
                               json_string_value(json_object_get(m, "authid")),
                               json_string_value(json_object_get(m, "authrole")), add_retained,
                               &rc);
    if (rc.skipped) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(cb->rt),
                       "cluster retained events not sent", 0,
                       "cluster: %zu retained events for %s not sent to another node: over the "
                       "message size limit",
                       rc.skipped, uri);
    }
    if (!rc.oom) {
        (void)rt_cluster_reply(cb->c, reply, rc.out.p ? (const void *)rc.out.p : "", rc.out.len);
    }
    free(rc.out.p);
    json_decref(rc.extra);
    json_decref(m);
}

/* ---- Public --------------------------------------------------------------------------------- */

static const rt_broker_remote remote_ops = {
        .published = on_published,
        .get_retained = on_get_retained,
};

static wamp_err hook_realm(rt_cluster_broker *cb, rt_realm *r)
{
    relay **relays = realloc(cb->relays, (cb->n_relays + 1) * sizeof(*relays));
    if (!relays) {
        return WAMP_ENOMEM;
    }
    cb->relays = relays;
    relay *rl = calloc(1, sizeof(*rl));
    if (!rl) {
        return WAMP_ENOMEM;
    }
    rl->cb = cb;
    rl->realm = r;
    rl->broker = rt_realm_broker(r);
    rt_observer o = {.ctx = rl,
                     .subscription_added = on_sub_added,
                     .subscription_removed = on_sub_removed,
                     .detach = relay_detach};
    if (rt_observers_add(rt_realm_observers(r), &o) != WAMP_OK) {
        free(rl);
        return WAMP_ENOMEM;
    }
    cb->relays[cb->n_relays++] = rl;
    rt_broker_set_remote(rl->broker, &remote_ops, rl);
    return WAMP_OK;
}

/* Announces the subscriptions the realm has already (made before the cluster was attached). */
static bool announce_existing(const rt_subscription *sub, void *ctx)
{
    relay *rl = ctx;
    on_sub_added(rl, rl->realm, NULL, sub, true);
    return true;
}

static uint64_t router_clock(void *ctx)
{
    return rt_router_now_us(ctx);
}

wamp_err rt_cluster_broker_new(rt_router *rt, rt_cluster *c, const rt_cluster_broker_options *o,
                               rt_cluster_broker **out)
{
    *out = NULL;
    rt_cluster_broker *cb = calloc(1, sizeof(*cb));
    if (!cb) {
        return WAMP_ENOMEM;
    }
    cb->rt = rt;
    cb->c = c;
    cb->ops = o->ops;
    cb->link = o->link;
    cb->max_msg = rt_router_config(rt)->limits.max_message_size;
    rt_hmap_init(&cb->by_key);
    rt_hmap_init(&cb->by_topic);
    rt_list_init(&cb->patterns);
    snprintf(cb->subj_drop, sizeof(cb->subj_drop), "%s.ret.drop", rt_cluster_name(c));
    rt_cluster_table_options to = {.table = TABLE_NAME,
                                   .ops = o->ops,
                                   .link = o->link,
                                   .instance = o->instance,
                                   .beat_ms = o->beat_ms,
                                   .hold_ms = o->hold_ms,
                                   .max_message_bytes = TABLE_MESSAGE_BYTES,
                                   .max_entries = o->max_entries,
                                   .clock = router_clock,
                                   .clock_ctx = rt};
    wamp_err err = rt_cluster_table_new(c, &to, on_table_change, cb, &cb->table);
    if (err != WAMP_OK) {
        goto fail;
    }
    if ((err = rt_cluster_serve(c, "ev", on_event, cb, &cb->sub_ev)) != WAMP_OK) {
        goto fail;
    }
    if ((err = rt_cluster_serve(c, "ret", on_retained_request, cb, &cb->sub_ret)) != WAMP_OK) {
        rt_cluster_unserve(c, cb->sub_ev);
        goto fail;
    }
    err = o->ops->subscribe(o->link, cb->subj_drop, NULL, on_retained_drop, cb, &cb->sub_drop);
    if (err != WAMP_OK) {
        rt_cluster_unserve(c, cb->sub_ev);
        rt_cluster_unserve(c, cb->sub_ret);
        goto fail;
    }
    cb->served = true;
    const rt_config *cfg = rt_router_config(rt);
    for (size_t i = 0; i < cfg->n_realms; i++) {
        rt_realm *r = rt_router_find_realm(rt, cfg->realms[i].name);
        if (r && (err = hook_realm(cb, r)) != WAMP_OK) {
            goto fail;
        }
    }
    for (size_t i = 0; i < cb->n_relays; i++) {
        rt_broker_foreach(cb->relays[i]->broker, announce_existing, cb->relays[i]);
    }
    *out = cb;
    return WAMP_OK;
fail:
    rt_cluster_broker_free(cb);
    return err;
}

void rt_cluster_broker_free(rt_cluster_broker *cb)
{
    if (!cb) {
        return;
    }
    for (size_t i = 0; i < cb->n_relays; i++) {
        rt_broker_set_remote(cb->relays[i]->broker, NULL, NULL);
        cb->relays[i]->cb = NULL; /* the realm's observer list frees it */
    }
    free(cb->relays);
    if (cb->served) {
        rt_cluster_unserve(cb->c, cb->sub_ev);
        rt_cluster_unserve(cb->c, cb->sub_ret);
        cb->ops->unsubscribe(cb->link, cb->sub_drop);
    }
    rt_cluster_table_free(cb->table);
    for (rt_hmap_iter it = rt_hmap_iter_begin(&cb->by_key); it.node;) {
        interest *in = RT_CONTAINER_OF(it.node, interest, by_key);
        rt_hmap_iter_next(&cb->by_key, &it);
        interest_free(cb, in);
    }
    rt_hmap_fini(&cb->by_key);
    rt_hmap_fini(&cb->by_topic);
    free(cb->nodes);
    free(cb);
}

void rt_cluster_broker_tick(rt_cluster_broker *cb)
{
    rt_cluster_table_tick(cb->table);
}

void rt_cluster_broker_stats_get(const rt_cluster_broker *cb, rt_cluster_broker_stats *out)
{
    *out = cb->st;
}
