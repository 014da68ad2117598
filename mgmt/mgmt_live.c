/* mgmt_live.c: the live topics of every node (see mgmt_live.h; mgmt/README.md "Live data").
 *
 * Messages on a node's MGMT_LIVE_SERVICE (JSON requests, each answered "{}"):
 *   {"node_id": N, "interest": mask}   node N's subscribers want the topics of mask (bit i: topic
 *                                      i of mgmt_live_topic); 0 withdraws it
 *   {"topic": name, "args": [...]}     an event of the sending node, to publish here as it is */
#include "mgmt_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt_uri.h"
#include "rt_hmap.h"
#include "rt_list.h"
#include "rt_log.h"

#define ALL_TOPICS           ((1u << MGMT_LIVE_TOPICS) - 1u)
#define DEFAULT_MAX_INFLIGHT (1024u * 1024u)
/* How often the local subscribers are counted (the cluster's tick comes more often). */
#define CHECK_US (100u * 1000u)

/* The topics' URIs; a name on the wire is what follows MGMT_TOPIC_PREFIX. */
static const char *const topic_uris[MGMT_LIVE_TOPICS] = {MGMT_TOPIC_PREFIX "on_trace_started",
                                                         MGMT_TOPIC_PREFIX "on_trace_data",
                                                         MGMT_TOPIC_PREFIX "on_trace_stopped"};
#define NAME_OF(uri) ((uri) + sizeof(MGMT_TOPIC_PREFIX) - 1)

/* Another node interested in this node's events. */
typedef struct mgmt_live_peer {
    char node[RT_CLUSTER_TOKEN_MAX + 1];
    unsigned mask;
    uint64_t expires_us;
    size_t inflight_bytes; /* sent, not acknowledged yet */
} mgmt_live_peer;

/* One event sent and not acknowledged (the argument of its reply callback). */
typedef struct mgmt_live_send {
    rt_list in_ml; /* in mgmt_live.sends */
    mgmt_live *ml;
    char node[RT_CLUSTER_TOKEN_MAX + 1];
    size_t bytes;
} mgmt_live_send;

struct mgmt_live {
    rt_router *rt;
    rt_cluster *c; /* borrowed; NULL once stopped */
    rt_broker *broker;
    uint64_t sub;
    size_t max_inflight;
    unsigned mask; /* this node's interest as last announced */
    uint64_t next_check_us, next_renew_us;
    mgmt_live_peer *peers; /* owned, n_peers used of cap_peers */
    size_t n_peers, cap_peers;
    rt_list sends;
    mgmt_live_stats st;
};

const char *mgmt_live_topic_uri(mgmt_live_topic t)
{
    return (unsigned)t < MGMT_LIVE_TOPICS ? topic_uris[t] : "?";
}

static mgmt_live_peer *peer_find(mgmt_live *ml, const char *node)
{
    for (size_t i = 0; i < ml->n_peers; i++) {
        if (strcmp(ml->peers[i].node, node) == 0) {
            return &ml->peers[i];
        }
    }
    return NULL;
}

static void peer_remove(mgmt_live *ml, mgmt_live_peer *p)
{
    size_t i = (size_t)(p - ml->peers);
    memmove(p, p + 1, (ml->n_peers - i - 1) * sizeof(*p));
    ml->n_peers--;
}

/* Node's interest is mask from now on (0: none). WAMP_ENOMEM. */
static wamp_err peer_set(mgmt_live *ml, const char *node, unsigned mask)
{
    mgmt_live_peer *p = peer_find(ml, node);
    if (!mask) {
        if (p) {
            peer_remove(ml, p);
        }
        return WAMP_OK;
    }
    if (!p) {
        if (ml->n_peers == ml->cap_peers) {
            size_t cap = ml->cap_peers ? 2 * ml->cap_peers : 4;
            mgmt_live_peer *v = realloc(ml->peers, cap * sizeof(*v));
            if (!v) {
                return WAMP_ENOMEM;
            }
            ml->peers = v;
            ml->cap_peers = cap;
        }
        p = &ml->peers[ml->n_peers++];
        memset(p, 0, sizeof(*p));
        snprintf(p->node, sizeof(p->node), "%s", node);
    }
    p->mask = mask;
    p->expires_us = rt_router_now_us(ml->rt) + MGMT_LIVE_LEASE_MS * 1000ull;
    return WAMP_OK;
}

/* --- Receiving ------------------------------------------------------------------------------- */

static void on_request(void *arg, const char *subject, const char *reply, const void *data,
                       size_t len)
{
    (void)subject;
    mgmt_live *ml = arg;
    if (!ml->c) {
        return;
    }
    json_t *req = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
    const char *node = json_string_value(json_object_get(req, "node_id"));
    json_t *interest = json_object_get(req, "interest");
    const char *topic = json_string_value(json_object_get(req, "topic"));
    json_t *args = json_object_get(req, "args");
    bool ok = false;
    /* An interest naming this node itself would send its events back to it: malformed. */
    if (node && rt_cluster_token_is_valid(node) && json_is_integer(interest) &&
        strcmp(node, rt_cluster_node_id(ml->c)) != 0) {
        json_int_t mask = json_integer_value(interest);
        ok = mask >= 0 && mask <= ALL_TOPICS;
        if (ok && peer_set(ml, node, (unsigned)mask) != WAMP_OK) {
            RT_LOG_WARN(0, "cluster live topics: out of memory (interest of node %s)", node);
        }
    } else if (topic && json_is_array(args)) {
        size_t t = 0;
        while (t < MGMT_LIVE_TOPICS && strcmp(topic, NAME_OF(topic_uris[t])) != 0) {
            t++;
        }
        ok = t < MGMT_LIVE_TOPICS;
        if (ok) {
            ml->st.received++;
            (void)rt_broker_publish_local(ml->broker, topic_uris[t], json_incref(args), NULL);
        }
    }
    if (!ok) {
        RT_LOG_INFO_LIMITED(rt_router_now_us(ml->rt), "cluster live topics", 0,
                            "malformed message ignored (%zu bytes)", len);
    }
    json_decref(req);
    if (reply) {
        (void)rt_cluster_reply(ml->c, reply, "{}", 2);
    }
}

/* --- Announcing this node's interest -------------------------------------------------------- */

static void on_announced(void *arg, wamp_err err, const void *data, size_t len)
{
    (void)arg;
    (void)data;
    (void)len;
    if (err != WAMP_OK) {
        RT_LOG_DEBUG(0, "cluster live topics: an interest was not acknowledged: %s",
                     wamp_strerror(err));
    }
}

static void announce(mgmt_live *ml, unsigned mask)
{
    char text[RT_CLUSTER_TOKEN_MAX + 64];
    const char *self = rt_cluster_node_id(ml->c);
    int n = snprintf(text, sizeof(text), "{\"node_id\":\"%s\",\"interest\":%u}", self, mask);
    size_t nodes = rt_cluster_node_count(ml->c);
    for (size_t i = 0; n > 0 && (size_t)n < sizeof(text) && i < nodes; i++) {
        const char *node = rt_cluster_node_at(ml->c, i);
        if (strcmp(node, self) != 0) {
            (void)rt_cluster_request(ml->c, node, MGMT_LIVE_SERVICE, text, (size_t)n, on_announced,
                                     ml);
        }
    }
}

/* The topics this node's management subscribers want now. */
static unsigned local_mask(mgmt_live *ml)
{
    unsigned mask = 0;
    for (unsigned t = 0; t < MGMT_LIVE_TOPICS; t++) {
        if (rt_broker_receiver_count(ml->broker, NULL, topic_uris[t], false) > 0) {
            mask |= 1u << t;
        }
    }
    return mask;
}

/* The cluster's tick: expired interests go; this node's interest is announced when it changed
 * and renewed while it lasts. */
static void on_tick(void *arg)
{
    mgmt_live *ml = arg;
    uint64_t now = rt_router_now_us(ml->rt);
    if (!ml->c || now < ml->next_check_us) {
        return;
    }
    ml->next_check_us = now + CHECK_US;
    for (size_t i = ml->n_peers; i-- > 0;) {
        if (ml->peers[i].expires_us <= now || !rt_cluster_has_node(ml->c, ml->peers[i].node)) {
            peer_remove(ml, &ml->peers[i]);
        }
    }
    if (rt_cluster_member_state_get(ml->c) != RT_CLUSTER_MEMBER_JOINED) {
        return;
    }
    unsigned mask = local_mask(ml);
    if (mask != ml->mask || (mask && now >= ml->next_renew_us)) {
        announce(ml, mask);
        ml->mask = mask;
        ml->next_renew_us = now + MGMT_LIVE_RENEW_MS * 1000ull;
    }
}

/* --- Forwarding this node's events ----------------------------------------------------------- */

static void send_free(mgmt_live_send *s)
{
    rt_list_remove(&s->in_ml);
    free(s);
}

static void on_sent(void *arg, wamp_err err, const void *data, size_t len)
{
    (void)data;
    (void)len;
    mgmt_live_send *s = arg;
    mgmt_live *ml = s->ml;
    mgmt_live_peer *p = peer_find(ml, s->node);
    if (p) {
        p->inflight_bytes -= s->bytes < p->inflight_bytes ? s->bytes : p->inflight_bytes;
    }
    if (err != WAMP_OK) {
        RT_LOG_DEBUG(0, "cluster live topics: an event for node %s was not acknowledged: %s",
                     s->node, wamp_strerror(err));
    }
    send_free(s);
}

bool mgmt_live_wants(const mgmt_live *ml, mgmt_live_topic t)
{
    if (!ml || !ml->c) {
        return false;
    }
    for (size_t i = 0; i < ml->n_peers; i++) {
        if (ml->peers[i].mask & (1u << t)) {
            return true;
        }
    }
    return false;
}

static void dropped(mgmt_live *ml, const char *node, const char *why)
{
    ml->st.dropped++;
    RT_LOG_INFO_LIMITED(rt_router_now_us(ml->rt), "cluster live event dropped", 0,
                        "a live event for node %s dropped: %s (%llu so far)", node, why,
                        (unsigned long long)ml->st.dropped);
}

wamp_err mgmt_live_forward(mgmt_live *ml, mgmt_live_topic t, const json_t *args)
{
    if (!mgmt_live_wants(ml, t)) {
        return WAMP_OK;
    }
    /* Nobody with room for one more event: dropped before the costly encoding. */
    bool room = false;
    for (size_t i = 0; i < ml->n_peers && !room; i++) {
        room = (ml->peers[i].mask & (1u << t)) && ml->peers[i].inflight_bytes < ml->max_inflight;
    }
    if (!room) {
        for (size_t i = 0; i < ml->n_peers; i++) {
            if (ml->peers[i].mask & (1u << t)) {
                dropped(ml, ml->peers[i].node, "too many unacknowledged events");
            }
        }
        return WAMP_OK;
    }
    json_t *msg = json_pack("{s:s, s:O}", "topic", NAME_OF(topic_uris[t]), "args", args);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (!text) {
        return WAMP_ENOMEM;
    }
    size_t len = strlen(text);
    wamp_err err = WAMP_OK;
    for (size_t i = 0; i < ml->n_peers; i++) {
        mgmt_live_peer *p = &ml->peers[i];
        if (!(p->mask & (1u << t))) {
            continue;
        }
        if (p->inflight_bytes + len > ml->max_inflight) {
            dropped(ml, p->node, "too many unacknowledged events");
            continue;
        }
        mgmt_live_send *s = calloc(1, sizeof(*s));
        if (!s) {
            err = WAMP_ENOMEM;
            break;
        }
        s->ml = ml;
        s->bytes = len;
        snprintf(s->node, sizeof(s->node), "%s", p->node);
        wamp_err e = rt_cluster_request(ml->c, p->node, MGMT_LIVE_SERVICE, text, len, on_sent, s);
        if (e != WAMP_OK) {
            free(s);
            dropped(ml, p->node, wamp_strerror(e));
            continue;
        }
        rt_list_add_tail(&ml->sends, &s->in_ml);
        p->inflight_bytes += len;
        ml->st.forwarded++;
    }
    free(text);
    return err;
}

/* --- Life cycle ------------------------------------------------------------------------------ */

wamp_err mgmt_live_new(rt_router *rt, rt_cluster *c, rt_broker *broker, size_t max_inflight_bytes,
                       mgmt_live **out)
{
    *out = NULL;
    mgmt_live *ml = calloc(1, sizeof(*ml));
    if (!ml) {
        return WAMP_ENOMEM;
    }
    ml->rt = rt;
    ml->c = c;
    ml->broker = broker;
    ml->max_inflight = max_inflight_bytes ? max_inflight_bytes : DEFAULT_MAX_INFLIGHT;
    rt_list_init(&ml->sends);
    wamp_err err = rt_cluster_serve(c, MGMT_LIVE_SERVICE, on_request, ml, &ml->sub);
    if (err != WAMP_OK) {
        free(ml);
        return err;
    }
    err = rt_cluster_add_on_tick(c, on_tick, ml);
    if (err != WAMP_OK) {
        rt_cluster_unserve(c, ml->sub);
        free(ml);
        return err;
    }
    *out = ml;
    return WAMP_OK;
}

void mgmt_live_stop(mgmt_live *ml)
{
    if (ml && ml->c) {
        /* No withdrawal here: this runs as the node leaves, whose announcement makes the others
         * drop its interest at once (and a request whose reply arrives while the link closes
         * would be lost in the NATS client). */
        rt_cluster_unserve(ml->c, ml->sub);
        rt_cluster_remove_on_tick(ml->c, on_tick, ml);
        ml->c = NULL;
        ml->n_peers = 0;
    }
}

void mgmt_live_free(mgmt_live *ml)
{
    if (!ml) {
        return;
    }
    mgmt_live_stop(ml);
    RT_LIST_FOREACH_SAFE(it, nx, &ml->sends)
    {
        send_free(RT_CONTAINER_OF(it, mgmt_live_send, in_ml));
    }
    free(ml->peers);
    free(ml);
}

void mgmt_live_stats_get(const mgmt_live *ml, mgmt_live_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (ml) {
        *out = ml->st;
        out->interested_nodes = ml->c ? ml->n_peers : 0;
    }
}
