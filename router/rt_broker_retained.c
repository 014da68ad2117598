/* rt_broker_retained.c: event retention (PUBLISH with retain, SUBSCRIBE with get_retained), also
 * for other nodes (rt_broker.h). Calls the publication's options (rt_broker_pub.c) and the
 * subscription table (rt_broker_subs.c), never rt_broker.c. */
#include <stdlib.h>
#include <string.h>

#include "rt_broker.h"
#include "rt_broker_int.h"
#include "rt_core_int.h"
#include "rt_log.h"
#include "rt_session.h"
#include "rt_trace.h"
#include "wamp_id.h"
#include "wamp_uri.h"

/* The retained event of one topic (event_retention): the payload as published, the publisher's
 * identity when it was disclosed, and the publication's black/white lists, which also decide who
 * gets it later.
 *
 * Spec "Event Retention": a subscriber gets the most recent retained event it would have
 * received. So an event retained with black/white lists does not replace the topic's earlier
 * ones: they stay, older, behind it (`older`), for the sessions its lists leave out. An event
 * for all ends the chain (nothing older can be anyone's most recent), and a chain holds at most
 * RT_RETAINED_LISTED_MAX listed events, the oldest listed going first. The newest is in
 * b->retained. */
#define RT_RETAINED_LISTED_MAX 8

typedef struct rt_retained rt_retained;

struct rt_retained {
    rt_hnode by_topic;  /* the newest of a topic only */
    rt_retained *older; /* owned: the topic's previous retained events, newest first */
    char *topic;
    json_t *args, *kwargs; /* owned references, NULL when absent (a router-built payload) */
    rt_payload payload;    /* owned copy of the publisher's payload bytes (ser 0: none) */
    json_t *ppt;           /* owned: the publication's ppt_* options (payload passthru), or NULL */
    json_t *publisher;     /* owned: {"publisher", "publisher_authid", ...} or NULL */
    json_t *options;       /* owned: the PUBLISH options when they hold listing options, or NULL */
    size_t bytes;          /* counted against limits.max_retained_bytes */
    uint64_t wall_ns;      /* when it was retained (wall clock, rt_trace_wall_ns()) */
};

static size_t json_size(const json_t *v)
{
    return v ? json_dumpb(v, NULL, 0, JSON_COMPACT) : 0;
}

static rt_retained *retained_find(const rt_broker *b, const char *topic)
{
    size_t len = strlen(topic);
    for (rt_hnode *n = rt_hmap_first(&b->retained, rt_broker_uri_hash(topic, len)); n;
         n = rt_hmap_next(n)) {
        rt_retained *r = RT_CONTAINER_OF(n, rt_retained, by_topic);
        if (strcmp(r->topic, topic) == 0) {
            return r;
        }
    }
    return NULL;
}

/* Frees r (not in b->retained), not the events older than it. */
static void retained_free(rt_retained *r)
{
    json_decref(r->args);
    json_decref(r->kwargs);
    rt_payload_fini(&r->payload);
    json_decref(r->ppt);
    json_decref(r->publisher);
    json_decref(r->options);
    free(r->topic);
    free(r);
}

/* Frees the chain from r on (not in b->retained). */
static void retained_free_chain(rt_broker *b, rt_retained *r)
{
    while (r) {
        rt_retained *older = r->older;
        b->retained_bytes -= r->bytes;
        retained_free(r);
        r = older;
    }
}

/* Removes a topic's retained events (r: the newest). */
static void retained_remove(rt_broker *b, rt_retained *r)
{
    rt_hmap_remove(&b->retained, &r->by_topic);
    retained_free_chain(b, r);
}

/* The events to keep behind a new listed event of the topic whose newest is old: old's chain
 * less its oldest listed events past RT_RETAINED_LISTED_MAX - 1, unlinked from b->retained. */
static rt_retained *retained_keep_behind(rt_broker *b, rt_retained *old)
{
    rt_hmap_remove(&b->retained, &old->by_topic);
    for (;;) {
        size_t listed = 0;
        rt_retained **oldest = NULL;
        for (rt_retained **link = &old; *link; link = &(*link)->older) {
            if ((*link)->options) {
                listed++;
                oldest = link;
            }
        }
        if (listed < RT_RETAINED_LISTED_MAX) {
            return old;
        }
        rt_retained *r = *oldest;
        *oldest = r->older;
        b->retained_bytes -= r->bytes;
        retained_free(r);
    }
}

static size_t limit_or(size_t v, size_t dflt)
{
    return v ? v : dflt;
}

/* PUBLISH with retain: the event becomes the topic's newest retained one (p->retained_ns:
 * when); an event for all replaces the topic's others, a listed one keeps them behind it.
 * Within the realm's limits (topics and bytes): over them the event is not retained (and the
 * topic keeps none), which is logged. WAMP_ENOMEM. */
wamp_err rt_broker_retain_event(rt_broker *b, pub_ctx *p, const json_t *options)
{
    rt_router *rt = rt_realm_router(b->realm);
    size_t max_topics = limit_or(rt->cfg->limits.max_retained_topics, RT_DEF_MAX_RETAINED_TOPICS);
    size_t max_bytes = limit_or(rt->cfg->limits.max_retained_bytes, RT_DEF_MAX_RETAINED_BYTES);
    rt_retained *old = retained_find(b, p->topic), *behind = NULL;
    if (old && p->filter.any) {
        behind = retained_keep_behind(b, old);
    } else if (old) {
        retained_remove(b, old);
    }
    size_t bytes = strlen(p->topic) + json_size(p->args) + json_size(p->kwargs) +
                   p->payload.args.len + p->payload.kwargs.len +
                   (p->filter.any ? json_size(options) : 0);
    if (b->retained.count >= max_topics || bytes > max_bytes ||
        b->retained_bytes > max_bytes - bytes) {
        RT_LOG_INFO_LIMITED(
                rt_router_now_us(rt), "event not retained", p->publisher ? p->publisher->id : 0,
                "event on %s not retained: realm %s holds %zu retained topics, %zu bytes "
                "(limits.max_retained_topics %zu, max_retained_bytes %zu; this one %zu bytes)",
                p->topic, rt_realm_name(b->realm), b->retained.count, b->retained_bytes, max_topics,
                max_bytes, bytes);
        rt->stats.events_not_retained++;
        retained_free_chain(b, behind);
        return WAMP_OK;
    }
    rt_retained *r = calloc(1, sizeof(*r));
    if (!r || !(r->topic = strdup(p->topic))) {
        free(r);
        retained_free_chain(b, behind);
        return WAMP_ENOMEM;
    }
    r->bytes = bytes;
    r->wall_ns = rt_trace_wall_ns();
    r->args = p->args ? json_incref(p->args) : NULL;
    r->kwargs = p->kwargs ? json_incref(p->kwargs) : NULL;
    r->options = p->filter.any ? json_incref((json_t *)options) : NULL;
    bool oom = rt_payload_dup(&p->payload, &r->payload) != WAMP_OK;
    if (!oom && p->ppt) {
        r->ppt = json_object();
        oom = !r->ppt || wamp_msg_ppt_copy(r->ppt, p->ppt) != 0;
    }
    if (!oom && p->disclose && p->publisher) {
        r->publisher = json_object();
        oom = !r->publisher ||
              rt_broker_set_publisher(r->publisher, p->publisher->id, p->publisher->authid,
                                      p->publisher->authrole) != 0;
    }
    if (oom || rt_hmap_insert(&b->retained, &r->by_topic,
                              rt_broker_uri_hash(r->topic, strlen(r->topic))) != WAMP_OK) {
        retained_free(r);
        retained_free_chain(b, behind);
        return WAMP_ENOMEM;
    }
    r->older = behind;
    b->retained_bytes += bytes;
    p->retained_ns = r->wall_ns;
    return WAMP_OK;
}

/* The retained event of one topic (r: its newest) that a new member of a subscription of (uri,
 * match), session (id, authid, authrole), gets: if the topic matches, the newest whose
 * publication's black/white lists admit it (exclude_me does not apply: the publisher may
 * subscribe later to read its own retained state). NULL if none. */
static const rt_retained *retained_pick(const rt_retained *r, const char *uri, wamp_match match,
                                        uint64_t id, const char *authid, const char *authrole)
{
    if (!wamp_uri_matches(uri, match, r->topic)) {
        return NULL;
    }
    for (; r; r = r->older) {
        pub_ctx p;
        bool ack;
        if (!r->options ||
            (rt_broker_parse_publish(r->options, &p, &ack) == NULL &&
             (!p.filter.any || rt_broker_lists_admit(&p.filter, id, authid, authrole)))) {
            return r;
        }
    }
    return NULL;
}

static const rt_retained *retained_for(const rt_broker *b, const rt_subscription *sub,
                                       const rt_retained *r, const rt_session *s)
{
    const rt_retained *e = retained_pick(r, sub->uri, sub->match, s->id, s->authid, s->authrole);
    return e && rt_broker_may_receive(b, sub, s, e->topic) ? e : NULL;
}

/* EVENT of a retained event to s for sub: Details d (consumed; NULL: out of memory), which holds
 * the publisher's keys when it was disclosed, gets Details.retained, the ppt_* options of ppt
 * and, for a pattern subscription, Details.topic. This node's retained events and other nodes'
 * (rt_broker_deliver_retained()) go out the same way. */
static wamp_err send_retained_event(rt_session *s, const rt_subscription *sub, json_t *d,
                                    const json_t *ppt, const char *topic, uint64_t publication,
                                    const rt_payload *payload, const json_t *args,
                                    const json_t *kwargs)
{
    if (!d || json_object_set_new(d, "retained", json_true()) != 0 ||
        wamp_msg_ppt_copy(d, ppt) != 0 ||
        (sub->match != WAMP_MATCH_EXACT &&
         json_object_set_new(d, "topic", json_string(topic)) != 0)) {
        json_decref(d);
        return WAMP_ENOMEM;
    }
    return rt_session_send_payload(
            s,
            wamp_msg_new_event(sub->id, publication, d, args ? json_incref((json_t *)args) : NULL,
                               kwargs ? json_incref((json_t *)kwargs) : NULL),
            payload);
}

/* EVENT of retained event r for subscription sub to s. */
static wamp_err send_retained(const rt_subscription *sub, const rt_retained *r, rt_session *s)
{
    return send_retained_event(s, sub, r->publisher ? json_copy(r->publisher) : json_object(),
                               r->ppt, r->topic, wamp_id_random(), &r->payload, r->args, r->kwargs);
}

/* SUBSCRIBED for sub, then (get_retained) every retained event it admits; the last message
 * completes the SUBSCRIBE action. */
static wamp_err subscribed_here(rt_broker *b, rt_session *s, const wamp_msg *m,
                                const rt_subscription *sub, bool get_retained)
{
    size_t n = 0;
    const rt_retained *only = NULL;
    if (get_retained && sub->match == WAMP_MATCH_EXACT) {
        const rt_retained *r = retained_find(b, sub->uri);
        only = r ? retained_for(b, sub, r, s) : NULL;
        n = only ? 1 : 0;
    } else if (get_retained) {
        /* A pattern: every retained topic it matches (bounded by limits.max_retained_topics). */
        for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;
             rt_hmap_iter_next(&b->retained, &it)) {
            n += retained_for(b, sub, RT_CONTAINER_OF(it.node, rt_retained, by_topic), s) ? 1 : 0;
        }
    }
    if (n == 0) {
        rt_observers_action_last(&s->rt->observers, s->rt);
    }
    wamp_err err = rt_session_send(s, wamp_msg_new_subscribed(m->id, sub->id));
    if (err != WAMP_OK || n == 0) {
        return err;
    }
    if (only) {
        rt_observers_action_last(&s->rt->observers, s->rt);
        return send_retained(sub, only, s);
    }
    size_t sent = 0;
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node && err == WAMP_OK;
         rt_hmap_iter_next(&b->retained, &it)) {
        const rt_retained *r =
                retained_for(b, sub, RT_CONTAINER_OF(it.node, rt_retained, by_topic), s);
        if (r) {
            if (++sent == n) {
                rt_observers_action_last(&s->rt->observers, s->rt);
            }
            err = send_retained(sub, r, s);
        }
    }
    return err;
}

/* subscribed_here(), then other nodes' retained events are asked for. */
wamp_err rt_broker_subscribed(rt_broker *b, rt_session *s, const wamp_msg *m,
                              const rt_subscription *sub, bool get_retained)
{
    wamp_err err = subscribed_here(b, s, m, sub, get_retained);
    if (err == WAMP_OK && get_retained && b->remote) {
        b->remote->get_retained(b->remote_ctx, b, s, sub);
    }
    return err;
}

size_t rt_broker_retained_count(const rt_broker *b)
{
    return b->retained.count;
}

size_t rt_broker_retained_bytes(const rt_broker *b)
{
    return b->retained_bytes;
}

wamp_err rt_broker_deliver_retained(rt_broker *b, uint64_t session_id, uint64_t sub_id,
                                    const rt_broker_pub *rp)
{
    rt_session *s = rt_router_session_by_id(rt_realm_router(b->realm), session_id);
    rt_sub_member *mb = s && s->realm == b->realm && s->state == RT_SESSION_JOINED
                                ? rt_broker_find_member(s, sub_id)
                                : NULL;
    pub_ctx p;
    if (!mb || !rt_broker_remote_ctx(rp, &p) || !rt_broker_may_receive(b, mb->sub, s, rp->topic)) {
        return WAMP_OK;
    }
    json_t *d = json_object();
    if (d && rp->disclose &&
        rt_broker_set_publisher(d, rp->publisher, rp->publisher_authid, rp->publisher_authrole) !=
                0) {
        json_decref(d);
        return WAMP_ENOMEM;
    }
    return send_retained_event(s, mb->sub, d, p.ppt, rp->topic, rp->publication, &rp->payload,
                               rp->args, rp->kwargs);
}

void rt_broker_retained_foreach(rt_broker *b, const char *uri, wamp_match match, uint64_t id,
                                const char *authid, const char *authrole,
                                void (*fn)(void *arg, const rt_broker_pub *p), void *arg)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;
         rt_hmap_iter_next(&b->retained, &it)) {
        const rt_retained *r = retained_pick(RT_CONTAINER_OF(it.node, rt_retained, by_topic), uri,
                                             match, id, authid, authrole);
        if (!r) {
            continue;
        }
        json_t *pub = r->publisher;
        rt_broker_pub rp = {
                .topic = r->topic,
                .publication = wamp_id_random(),
                .payload = r->payload,
                .args = r->args,
                .kwargs = r->kwargs,
                .options = r->ppt,
                .disclose = pub != NULL,
                .publisher = (uint64_t)json_integer_value(json_object_get(pub, "publisher")),
                .publisher_authid = json_string_value(json_object_get(pub, "publisher_authid")),
                .publisher_authrole =
                        json_string_value(json_object_get(pub, "publisher_authrole"))};
        fn(arg, &rp);
    }
}

/* The event for all that ends the chain from r, or NULL (the chain holds listed events alone). */
static rt_retained *for_all_of(rt_retained *r)
{
    while (r && r->options) {
        r = r->older;
    }
    return r;
}

void rt_broker_retained_times(rt_broker *b,
                              void (*fn)(void *arg, const char *topic, uint64_t wall_ns), void *arg)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;
         rt_hmap_iter_next(&b->retained, &it)) {
        const rt_retained *r = for_all_of(RT_CONTAINER_OF(it.node, rt_retained, by_topic));
        if (r) {
            fn(arg, r->topic, r->wall_ns);
        }
    }
}

bool rt_broker_retained_is_listed(const rt_broker *b, const char *topic)
{
    const rt_retained *r = retained_find(b, topic);
    return r && r->options;
}

bool rt_broker_retained_drop(rt_broker *b, const char *topic, uint64_t before_ns, bool wins_tie,
                             uint64_t *kept_ns)
{
    rt_retained *r = retained_find(b, topic);
    rt_retained **cut = &r;
    while (*cut && ((*cut)->wall_ns > before_ns || ((*cut)->wall_ns == before_ns && wins_tie))) {
        cut = &(*cut)->older;
    }
    if (*cut == r) {
        if (r) {
            retained_remove(b, r); /* every one older */
        }
        return false;
    }
    /* The later (listed) events stay for the sessions they admit: the other node's event for
     * all is older, and still the most recent for the others. */
    retained_free_chain(b, *cut);
    *cut = NULL;
    const rt_retained *all = for_all_of(r);
    if (!all) {
        return false;
    }
    *kept_ns = all->wall_ns;
    return true;
}

void rt_broker_retained_clear(rt_broker *b)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;) {
        rt_retained *r = RT_CONTAINER_OF(it.node, rt_retained, by_topic);
        rt_hmap_iter_next(&b->retained, &it);
        retained_remove(b, r);
    }
}
