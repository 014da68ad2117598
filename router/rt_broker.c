/* rt_broker.c: exact-match subscriptions and EVENT fan-out.
 * A subscription keeps its members in an array for a cache-friendly fan-out loop; each member
 * record is also linked into its session's `subs` list so leaving costs O(own subscriptions). */
#include "rt_broker.h"

#include <stdlib.h>
#include <string.h>

#include "rt_core_int.h"
#include "rt_log.h"
#include "rt_session.h"
#include "wamp_codec.h"
#include "wamp_id.h"
#include "wamp_uri.h"

typedef struct rt_subscription rt_subscription;

typedef struct rt_sub_member {
    rt_list in_session; /* in rt_session.subs */
    rt_subscription *sub;
    rt_session *s;
    size_t idx; /* position in sub->members */
} rt_sub_member;

struct rt_subscription {
    uint64_t id;
    char *uri;
    rt_hnode by_uri;
    rt_hnode by_id;
    rt_sub_member **members;
    size_t n_members;
    size_t cap_members;
};

struct rt_broker {
    rt_realm *realm;
    rt_hmap by_uri;
    rt_hmap by_id;
};

rt_broker *rt_broker_new(rt_realm *realm)
{
    rt_broker *b = calloc(1, sizeof(*b));
    if (!b) {
        return NULL;
    }
    b->realm = realm;
    rt_hmap_init(&b->by_uri);
    rt_hmap_init(&b->by_id);
    return b;
}

static void subscription_free(rt_subscription *sub)
{
    free(sub->members);
    free(sub->uri);
    free(sub);
}

void rt_broker_free(rt_broker *b)
{
    if (!b) {
        return;
    }
    /* Sessions leave before realms are freed, so normally nothing is left; be safe anyway. */
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->by_id); it.node;) {
        rt_subscription *sub = RT_CONTAINER_OF(it.node, rt_subscription, by_id);
        rt_hmap_iter_next(&b->by_id, &it);
        for (size_t i = 0; i < sub->n_members; i++) {
            rt_list_remove(&sub->members[i]->in_session);
            free(sub->members[i]);
        }
        subscription_free(sub);
    }
    rt_hmap_fini(&b->by_uri);
    rt_hmap_fini(&b->by_id);
    free(b);
}

size_t rt_broker_subscription_count(const rt_broker *b)
{
    return b->by_id.count;
}

static rt_subscription *find_by_uri(const rt_broker *b, const char *uri)
{
    for (rt_hnode *n = rt_hmap_first(&b->by_uri, rt_hash_str(uri)); n; n = rt_hmap_next(n)) {
        rt_subscription *sub = RT_CONTAINER_OF(n, rt_subscription, by_uri);
        if (strcmp(sub->uri, uri) == 0) {
            return sub;
        }
    }
    return NULL;
}

/* The member record of session s for subscription id, or NULL. */
static rt_sub_member *find_member(rt_session *s, uint64_t id)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->subs)
    {
        rt_sub_member *mb = RT_CONTAINER_OF(it, rt_sub_member, in_session);
        if (mb->sub->id == id) {
            return mb;
        }
    }
    return NULL;
}

static void remove_member(rt_broker *b, rt_sub_member *mb)
{
    rt_subscription *sub = mb->sub;
    size_t last = sub->n_members - 1;
    if (mb->idx != last) {
        sub->members[mb->idx] = sub->members[last];
        sub->members[mb->idx]->idx = mb->idx;
    }
    sub->n_members--;
    rt_list_remove(&mb->in_session);
    free(mb);
    if (sub->n_members == 0) {
        rt_hmap_remove(&b->by_uri, &sub->by_uri);
        rt_hmap_remove(&b->by_id, &sub->by_id);
        subscription_free(sub);
    }
}

/* Reads a boolean option; absent = dflt. false if present but not a boolean. */
static bool bool_option(const json_t *opts, const char *key, bool dflt, bool *out)
{
    json_t *v = json_object_get(opts, key);
    if (!v) {
        *out = dflt;
        return true;
    }
    if (!json_is_boolean(v)) {
        return false;
    }
    *out = json_is_true(v);
    return true;
}

/* Options.match of SUBSCRIBE/REGISTER: only "exact" is implemented (pattern-based
 * subscriptions are not announced). NULL if acceptable, else a message. */
static const char *check_exact_match(const json_t *opts)
{
    json_t *match = json_object_get(opts, "match");
    if (!match || (json_is_string(match) && strcmp(json_string_value(match), "exact") == 0)) {
        return NULL;
    }
    return "only match policy \"exact\" is supported";
}

/* Whether a PUBLISH by publisher reaches session to. */
static bool is_receiver(const rt_session *to, const rt_session *publisher, bool exclude_me)
{
    return to->state == RT_SESSION_JOINED && !(to == publisher && exclude_me);
}

/* EVENT to every eligible member of sub, encoded once per serializer, then PUBLISHED. */
static wamp_err fan_out(rt_session *s, rt_subscription *sub, uint64_t publication,
                        const wamp_msg *m, bool ack, bool exclude_me)
{
    rt_encoded ev;
    rt_encoded_init(&ev, wamp_msg_new_event(sub->id, publication, NULL,
                                            m->args ? json_incref(m->args) : NULL,
                                            m->kwargs ? json_incref(m->kwargs) : NULL));
    if (!ev.msg) {
        return WAMP_ENOMEM;
    }
    /* Receivers are members[0 .. end): the last one's EVENT completes the action when nothing
     * is acknowledged. Found from the back, usually at once. */
    size_t end = sub->n_members;
    while (end > 0 && !is_receiver(sub->members[end - 1]->s, s, exclude_me)) {
        end--;
    }
    if (trace_hub_is_active(s->rt->hub)) {
        /* Tracing reports the size in every serializer in use, so encode them all up front
         * (each only once, as the fan-out would). */
        for (size_t i = 0; i < end; i++) {
            wamp_ser ser = sub->members[i]->s->ser;
            if (!ev.buf[ser]) {
                (void)wamp_codec_encode(ser, ev.msg, &ev.buf[ser]);
            }
        }
    }
    for (size_t i = 0; i < end; i++) {
        rt_session *to = sub->members[i]->s;
        if (!is_receiver(to, s, exclude_me)) {
            continue;
        }
        if (i + 1 == end && !ack) {
            RT_TRACE_LAST(s->rt);
        }
        wamp_err err = rt_session_send_encoded(to, &ev);
        if (err == WAMP_ENOMEM) {
            rt_encoded_fini(&ev);
            return err;
        }
        /* ETOOBIG / EINVAL: this receiver cannot take the event; the others still do. */
    }
    rt_encoded_fini(&ev);
    if (ack) {
        RT_TRACE_LAST(s->rt);
        return rt_session_send(s, wamp_msg_new_published(m->id, publication));
    }
    return WAMP_OK;
}

wamp_err rt_broker_on_publish(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    bool ack, exclude_me;
    if (!bool_option(m->dict, "acknowledge", false, &ack) ||
        !bool_option(m->dict, "exclude_me", true, &exclude_me)) {
        return rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     "options acknowledge and exclude_me must be booleans");
    }
    if (!wamp_uri_is_valid(m->uri, WAMP_URI_LOOSE)) {
        RT_LOG_DEBUG(s->id, "PUBLISH to invalid topic \"%s\"", m->uri);
        return ack ? rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_URI,
                                           "invalid topic URI")
                   : WAMP_OK;
    }
    if (!rt_realm_authorize(b->realm, s->authrole, RT_ACTION_PUBLISH, m->uri)) {
        RT_LOG_INFO(s->id, "PUBLISH to %s denied for role %s", m->uri, s->authrole);
        return ack ? rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                           "not authorized to publish to this topic")
                   : WAMP_OK;
    }
    uint64_t publication = wamp_id_random();
    rt_subscription *sub = find_by_uri(b, m->uri);
    if (sub) {
        return fan_out(s, sub, publication, m, ack, exclude_me);
    }
    if (ack) {
        RT_TRACE_LAST(s->rt);
        return rt_session_send(s, wamp_msg_new_published(m->id, publication));
    }
    return WAMP_OK;
}

wamp_err rt_broker_on_subscribe(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    const char *bad = check_exact_match(m->dict);
    if (bad) {
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     bad);
    }
    if (!wamp_uri_is_valid(m->uri, WAMP_URI_LOOSE)) {
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_URI,
                                     "invalid topic URI");
    }
    if (!rt_realm_authorize(b->realm, s->authrole, RT_ACTION_SUBSCRIBE, m->uri)) {
        RT_LOG_INFO(s->id, "SUBSCRIBE to %s denied for role %s", m->uri, s->authrole);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                     "not authorized to subscribe to this topic");
    }
    rt_subscription *sub = find_by_uri(b, m->uri);
    if (sub) {
        if (find_member(s, sub->id)) {
            /* Spec: subscribing again returns the existing subscription. */
            RT_TRACE_LAST(s->rt);
            return rt_session_send(s, wamp_msg_new_subscribed(m->id, sub->id));
        }
    } else {
        sub = calloc(1, sizeof(*sub));
        if (!sub || !(sub->uri = strdup(m->uri))) {
            free(sub);
            return WAMP_ENOMEM;
        }
        sub->id = rt_router_next_id(s->rt);
        if (rt_hmap_insert(&b->by_uri, &sub->by_uri, rt_hash_str(sub->uri)) != WAMP_OK) {
            subscription_free(sub);
            return WAMP_ENOMEM;
        }
        if (rt_hmap_insert(&b->by_id, &sub->by_id, rt_hash_u64(sub->id)) != WAMP_OK) {
            rt_hmap_remove(&b->by_uri, &sub->by_uri);
            subscription_free(sub);
            return WAMP_ENOMEM;
        }
    }
    rt_sub_member *mb = calloc(1, sizeof(*mb));
    if (mb && sub->n_members == sub->cap_members) {
        size_t ncap = sub->cap_members ? sub->cap_members * 2 : 4;
        rt_sub_member **nm = realloc(sub->members, ncap * sizeof(*nm));
        if (nm) {
            sub->members = nm;
            sub->cap_members = ncap;
        } else {
            free(mb);
            mb = NULL;
        }
    }
    if (!mb) {
        if (sub->n_members == 0) {
            rt_hmap_remove(&b->by_uri, &sub->by_uri);
            rt_hmap_remove(&b->by_id, &sub->by_id);
            subscription_free(sub);
        }
        return WAMP_ENOMEM;
    }
    mb->sub = sub;
    mb->s = s;
    mb->idx = sub->n_members;
    sub->members[sub->n_members++] = mb;
    rt_list_add_tail(&s->subs, &mb->in_session);
    RT_TRACE_LAST(s->rt);
    return rt_session_send(s, wamp_msg_new_subscribed(m->id, sub->id));
}

wamp_err rt_broker_on_unsubscribe(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    rt_sub_member *mb = find_member(s, m->id2);
    if (!mb) {
        return rt_session_send_error(s, WAMP_MSG_UNSUBSCRIBE, m->id,
                                     WAMP_ERROR_NO_SUCH_SUBSCRIPTION,
                                     "no such subscription for this session");
    }
    remove_member(b, mb);
    RT_TRACE_LAST(s->rt);
    return rt_session_send(s, wamp_msg_new_unsubscribed(m->id));
}

void rt_broker_on_leave(rt_broker *b, rt_session *s)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->subs)
    {
        remove_member(b, RT_CONTAINER_OF(it, rt_sub_member, in_session));
    }
}

wamp_err rt_broker_publish_local(rt_broker *b, const char *topic, json_t *args_take,
                                 json_t *kwargs_take)
{
    rt_subscription *sub = find_by_uri(b, topic);
    if (!sub) {
        json_decref(args_take);
        json_decref(kwargs_take);
        return WAMP_OK;
    }
    rt_encoded ev;
    rt_encoded_init(&ev,
                    wamp_msg_new_event(sub->id, wamp_id_random(), NULL, args_take, kwargs_take));
    if (!ev.msg) {
        return WAMP_ENOMEM;
    }
    wamp_err err = WAMP_OK;
    for (size_t i = 0; i < sub->n_members && err != WAMP_ENOMEM; i++) {
        rt_session *to = sub->members[i]->s;
        if (to->state == RT_SESSION_JOINED) {
            err = rt_session_send_encoded(to, &ev);
        }
    }
    rt_encoded_fini(&ev);
    return err == WAMP_ENOMEM ? err : WAMP_OK;
}

size_t rt_broker_receiver_count(rt_broker *b, rt_session *s, const char *topic, bool exclude_me)
{
    rt_subscription *sub = wamp_uri_is_valid(topic, WAMP_URI_LOOSE) ? find_by_uri(b, topic) : NULL;
    size_t n = 0;
    for (size_t i = 0; sub && i < sub->n_members; i++) {
        n += is_receiver(sub->members[i]->s, s, exclude_me) ? 1 : 0;
    }
    return n;
}

const char *rt_broker_topic_of(rt_session *s, uint64_t sub_id)
{
    rt_sub_member *mb = find_member(s, sub_id);
    return mb ? mb->sub->uri : NULL;
}
