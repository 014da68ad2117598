/* rt_cluster_broker.c: cross-node publish/subscribe (rt_cluster_broker.h has the design). */
#include "rt_cluster_broker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_broker.h"
#include "rt_cluster_envelope.h"
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
/* "<name>.node.<id>.ev", "<name>.ret.drop", "<name>.ret.drops". */
#define SUBJ_MAX (2 * RT_CLUSTER_TOKEN_MAX + 32)
/* A batch of retained-event notices ("<name>.ret.drops") is sent once its entries take about
 * this many bytes: a few hundred topics a message, well within a NATS server's max_payload. */
#define NOTICE_BATCH_BYTES 8192

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
    char subj_ev[SUBJ_MAX]; /* "<name>.node.<id>.ev", where its events go */
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
    uint64_t sub_ev, sub_drop, sub_drops, sub_ret;
    bool served;
    char subj_drop[SUBJ_MAX];
    char subj_drops[SUBJ_MAX];
    size_t max_msg;
    rt_cluster_broker_stats st; /* but remote_interest: by_key's count */
};

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
    snprintf(n->subj_ev, sizeof(n->subj_ev), "%s.node.%s.ev", rt_cluster_name(cb->c), id);
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
    if (n) {
        n->n_interests++; /* released by rnode_unref() if the rest fails */
    }
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
    if (n) {
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

static void send_to_node(rt_cluster_broker *cb, const rnode *node, const rt_cluster_bytes *env)
{
    wamp_err err = env->len > cb->max_msg
                           ? WAMP_ETOOBIG
                           : cb->ops->publish(cb->link, node->subj_ev, NULL, env->p, env->len);
    if (err != WAMP_OK) {
        dropped(cb, node->id, env->len, err);
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

/* Publishes m (taken; NULL: out of memory) as compact JSON on subject. */
static wamp_err publish_json(rt_cluster_broker *cb, const char *subject, json_t *m)
{
    char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    wamp_err err =
            text ? cb->ops->publish(cb->link, subject, NULL, text, strlen(text)) : WAMP_ENOMEM;
    free(text);
    return err;
}

/* Tells every other node that this node retains an event for all on topic of realm since wall_ns:
 * theirs of an earlier time go (rt_broker_retained_drop()). */
static void notice_retained(rt_cluster_broker *cb, const char *realm, const char *topic,
                            uint64_t wall_ns)
{
    (void)publish_json(cb, cb->subj_drop,
                       json_pack("{s:s, s:s, s:s, s:I}", "n", rt_cluster_node_id(cb->c), "r", realm,
                                 "t", topic, "w", (json_int_t)wall_ns));
}

/* Notices of many retained events of one realm in few messages (a join tells all of this node's
 * again, and the answers to such a batch): {"n": node, "r": realm, "d": [[topic, wall_ns], ...]}
 * on "<name>.ret.drops", each message of about NOTICE_BATCH_BYTES. (A node of an earlier version
 * does not subscribe to that subject: it gets the single notices alone.) */
typedef struct notice_batch {
    rt_cluster_broker *cb;
    const char *realm;
    json_t *d;    /* the entries not sent yet, or NULL */
    size_t bytes; /* about what they take */
} notice_batch;

/* Sends the batch's entries (if any) as one message. */
static void batch_flush(notice_batch *nb)
{
    if (!nb->d) {
        return;
    }
    rt_cluster_broker *cb = nb->cb;
    size_t n = json_array_size(nb->d);
    /* (json_pack() takes d, also on failure) */
    wamp_err err = publish_json(cb, cb->subj_drops,
                                json_pack("{s:s, s:s, s:o}", "n", rt_cluster_node_id(cb->c), "r",
                                          nb->realm, "d", nb->d));
    nb->d = NULL;
    nb->bytes = 0;
    if (err != WAMP_OK) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(cb->rt), "cluster notices not sent", 0,
                       "cluster: %zu retained-event notices of realm %s not sent: %s", n, nb->realm,
                       wamp_strerror(err));
    }
}

/* Adds the notice of topic's retained event of wall_ns to the batch, sent when it is full. */
static void batch_add(notice_batch *nb, const char *topic, uint64_t wall_ns)
{
    if (!nb->d && !(nb->d = json_array())) {
        return;
    }
    if (json_array_append_new(nb->d, json_pack("[s, I]", topic, (json_int_t)wall_ns)) != 0) {
        return; /* out of memory: that notice is not sent */
    }
    nb->bytes += strlen(topic) + 32;
    if (nb->bytes >= NOTICE_BATCH_BYTES) {
        batch_flush(nb);
    }
}

static void on_published(void *ctx, rt_broker *b, const rt_broker_pub *p)
{
    relay *rl = ctx;
    rt_cluster_broker *cb = rl->cb;
    if (!cb) {
        return;
    }
    const char *realm = rt_realm_name(rl->realm);
    if (p->retain && !(p->retained_ns && rt_broker_retained_is_listed(b, p->topic))) {
        /* The event's own time, as every later notice of it says: two nodes retaining at once
         * then compare the same two times both ways, and exactly one event stays. (Not kept
         * here, over this node's limits: the time of the publication, which still makes the
         * others drop their older one.) An event kept with black/white lists replaces none:
         * the others' stay for the sessions its lists leave out, so they are not told. */
        notice_retained(cb, realm, p->topic,
                        p->retained_ns ? p->retained_ns : rt_router_wall_ns(cb->rt));
    }
    if (!mark_nodes(cb, realm, p->topic)) {
        return;
    }
    /* It goes: with the correlation every node is to give it. */
    uint8_t made[RT_BROKER_CORRELATION_LEN];
    rt_broker_pub out = *p;
    out.correlation = rt_broker_pub_correlation(p, made);
    rt_cluster_bytes env = {0};
    if (!rt_cluster_envelope_add(&env, rt_cluster_node_id(cb->c), realm, &out, NULL)) {
        free(env.p);
        dropped(cb, "(any)", 0, WAMP_ENOMEM);
        return;
    }
    for (size_t i = 0; i < cb->n_nodes; i++) {
        if (cb->nodes[i]->hit) {
            send_to_node(cb, cb->nodes[i], &env);
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
    rt_cluster_envelope e;
    size_t used = rt_cluster_envelope_read(data, len, &e);
    rt_broker *b = used > 0 && used == len && !e.has_target ? broker_of(cb, e.realm) : NULL;
    if (!b) {
        bad_message(cb, "an event", len);
        rt_cluster_envelope_fini(&e);
        return;
    }
    cb->st.events_in++;
    if (rt_broker_deliver(b, &e.pub) != WAMP_OK) {
        RT_LOG_WARN(0, "cluster: out of memory delivering an event from node %s", e.node);
    }
    rt_cluster_envelope_fini(&e);
}

/* One notice from node: [topic, w] (JSON, either NULL). This node's retained events on topic
 * older than w go (ties by node id); when this node's event for all is the later one, the other
 * node is told to drop its own (its notice may have crossed this node's, or its clock be behind):
 * into answers when the notice came in a batch, else at once. false: not a valid notice. */
static bool take_notice(rt_cluster_broker *cb, rt_broker *b, const char *node, const char *realm,
                        const json_t *topic_j, const json_t *w, notice_batch *answers)
{
    const char *topic = json_string_value(topic_j);
    uint64_t kept;
    if (!topic || !json_is_integer(w)) {
        return false;
    }
    if (rt_broker_retained_drop(b, topic, (uint64_t)json_integer_value(w),
                                strcmp(rt_cluster_node_id(cb->c), node) > 0, &kept)) {
        if (answers) {
            batch_add(answers, topic, kept);
        } else {
            notice_retained(cb, realm, topic, kept);
        }
    }
    return true;
}

/* A notice ("<name>.ret.drop": {"n": node, "r": realm, "t": topic, "w": wall_ns}) or a batch of
 * them ("<name>.ret.drops", notice_batch; the answers batched too). An entry of a batch that is
 * not [topic, time] is skipped, and the message counted as not valid. */
static void on_notices(void *arg, const char *subject, const char *reply, const void *data,
                       size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster_broker *cb = arg;
    json_error_t jerr;
    json_t *m = json_loadb(data, len, 0, &jerr);
    const char *node = json_string_value(json_object_get(m, "n"));
    const char *realm = json_string_value(json_object_get(m, "r"));
    json_t *d = json_object_get(m, "d");
    rt_broker *b = node && realm ? broker_of(cb, realm) : NULL;
    bool ok = b && (!d || json_is_array(d));
    if (ok && d) {
        notice_batch answers = {.cb = cb, .realm = realm};
        size_t i;
        json_t *e;
        json_array_foreach(d, i, e)
        {
            ok &= json_array_size(e) == 2 && take_notice(cb, b, node, realm, json_array_get(e, 0),
                                                         json_array_get(e, 1), &answers);
        }
        batch_flush(&answers);
    } else if (ok) {
        ok = take_notice(cb, b, node, realm, json_object_get(m, "t"), json_object_get(m, "w"),
                         NULL);
    }
    if (!ok) {
        bad_message(cb, d ? "a batch of retained-event notices" : "a retained-event notice", len);
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
        rt_cluster_envelope e;
        size_t used = rt_cluster_envelope_read(p, len, &e);
        if (!used || !e.has_target) {
            bad_message(cb, "retained events", len);
            rt_cluster_envelope_fini(&e);
            return;
        }
        if (rt_broker_deliver_retained(rl->broker, e.session, e.sub, &e.pub) != WAMP_OK) {
            RT_LOG_WARN(0, "cluster: out of memory delivering a retained event");
        }
        rt_cluster_envelope_fini(&e);
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
    uint64_t target[2]; /* session, subscription */
    rt_cluster_bytes out;
    bool oom;
    size_t skipped;
} ret_ctx;

static void add_retained(void *arg, const rt_broker_pub *p)
{
    ret_ctx *rc = arg;
    size_t before = rc->out.len;
    if (rc->oom || !rt_cluster_envelope_add(&rc->out, rt_cluster_node_id(rc->cb->c), rc->realm, p,
                                            rc->target)) {
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
    ret_ctx rc = {.cb = cb,
                  .realm = realm,
                  .target = {(uint64_t)json_integer_value(js), (uint64_t)json_integer_value(jsub)}};
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

/* batch_add() of one of a realm's retained events (on_joined()). */
static void renotice(void *arg, const char *topic, uint64_t wall_ns)
{
    batch_add(arg, topic, wall_ns);
}

/* Each time this node joins (after start, and after its link came back): its retained events
 * told to the others again, in batches, so that two retained on one topic while the nodes could
 * not hear each other (a partition, a NATS server restarting) become one, as when they are
 * retained (on_notices()). */
static void on_joined(void *arg)
{
    rt_cluster_broker *cb = arg;
    for (size_t i = 0; i < cb->n_relays; i++) {
        notice_batch nb = {.cb = cb, .realm = rt_realm_name(cb->relays[i]->realm)};
        rt_broker_retained_times(cb->relays[i]->broker, renotice, &nb);
        batch_flush(&nb);
    }
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
    snprintf(cb->subj_drops, sizeof(cb->subj_drops), "%s.ret.drops", rt_cluster_name(c));
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
    err = o->ops->subscribe(o->link, cb->subj_drop, NULL, on_notices, cb, &cb->sub_drop);
    if (err == WAMP_OK) {
        err = o->ops->subscribe(o->link, cb->subj_drops, NULL, on_notices, cb, &cb->sub_drops);
        if (err != WAMP_OK) {
            o->ops->unsubscribe(o->link, cb->sub_drop);
        }
    }
    if (err != WAMP_OK) {
        rt_cluster_unserve(c, cb->sub_ev);
        rt_cluster_unserve(c, cb->sub_ret);
        goto fail;
    }
    cb->served = true;
    if ((err = rt_cluster_add_on_joined(c, on_joined, cb)) != WAMP_OK) {
        goto fail;
    }
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
        cb->ops->unsubscribe(cb->link, cb->sub_drops);
    }
    rt_cluster_remove_on_joined(cb->c, on_joined, cb); /* (not added: nothing happens) */
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
    out->remote_interest = cb->by_key.count;
}
