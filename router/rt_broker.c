/* rt_broker.c: what the broker does with PUBLISH, SUBSCRIBE and UNSUBSCRIBE: the publication's
 * options, the EVENT fan-out, event retention, the replies. The subscription table (indexes,
 * matching, members) is rt_broker_subs.c. */
#include "rt_broker.h"

#include <stdlib.h>
#include <string.h>

#include "rt_broker_int.h"
#include "rt_core_int.h"
#include "rt_log.h"
#include "rt_options.h"
#include "rt_session.h"
#include "wamp_codec.h"
#include "wamp_id.h"

/* The retained event of one topic (event_retention): the payload as published, the publisher's
 * identity when it was disclosed, and the publication's black/white lists, which also decide who
 * gets it later. */
typedef struct rt_retained {
    rt_hnode by_topic;
    char *topic;
    json_t *args, *kwargs; /* owned references, NULL when absent (a router-built payload) */
    rt_payload payload;    /* owned copy of the publisher's payload bytes (ser 0: none) */
    json_t *ppt;           /* owned: the publication's ppt_* options (payload passthru), or NULL */
    json_t *publisher;     /* owned: {"publisher", "publisher_authid", ...} or NULL */
    json_t *options;       /* owned: the PUBLISH options when they hold listing options, or NULL */
    size_t bytes;          /* counted against limits.max_retained_bytes */
    uint64_t wall_ns;      /* when it was retained (wall clock, rt_trace_wall_ns()) */
} rt_retained;

/* --- Construction ---------------------------------------------------------------------------- */

rt_broker *rt_broker_new(rt_realm *realm)
{
    rt_broker *b = calloc(1, sizeof(*b));
    if (!b) {
        return NULL;
    }
    b->realm = realm;
    rt_hmap_init(&b->by_uri);
    rt_hmap_init(&b->by_id);
    rt_hmap_init(&b->retained);
    return b;
}

static void retained_remove(rt_broker *b, rt_retained *r);

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
            sub->members[i]->s->n_subs--;
            free(sub->members[i]);
        }
        rt_broker_unindex(b, sub);
        rt_broker_sub_free(sub);
    }
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;) {
        rt_retained *r = RT_CONTAINER_OF(it.node, rt_retained, by_topic);
        rt_hmap_iter_next(&b->retained, &it);
        retained_remove(b, r);
    }
    rt_hmap_fini(&b->retained);
    rt_hmap_fini(&b->by_uri);
    rt_hmap_fini(&b->by_id);
    free(b->plens);
    free(b->shapes);
    free(b->hits);
    free(b);
}

/* --- PUBLISH options ------------------------------------------------------------------------- */

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

/* Subscriber black- and whitelisting (spec "Subscriber Black- and Whitelisting"). Each list is
 * borrowed from the PUBLISH options, NULL when absent or empty (Crossbar treats an empty list as
 * no restriction). A receiver must be in every eligible* list given and in no exclude* list. */
typedef struct pub_filter {
    const json_t *eligible, *eligible_authid, *eligible_authrole;
    const json_t *exclude, *exclude_authid, *exclude_authrole;
    bool any; /* at least one list given */
} pub_filter;

/* Checks one list option's value: a list of session ids (ids true) or of strings. *out = the
 * list, or NULL when it is empty. false if malformed. */
static bool list_value(const json_t *v, bool ids, const json_t **out)
{
    if (!json_is_array(v)) {
        return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (ids ? !(json_is_integer(e) && json_integer_value(e) >= 0) : !json_is_string(e)) {
            return false;
        }
    }
    *out = json_array_size(v) > 0 ? v : NULL;
    return true;
}

static bool id_listed(const json_t *list, uint64_t id)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if ((uint64_t)json_integer_value(e) == id) {
            return true;
        }
    }
    return false;
}

static bool str_listed(const json_t *list, const char *s)
{
    size_t i;
    json_t *e;
    if (!s) {
        return false;
    }
    json_array_foreach(list, i, e)
    {
        if (strcmp(json_string_value(e), s) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether the lists admit the session (id, authid, authrole); it may be on another node. */
static bool lists_admit(const pub_filter *f, uint64_t id, const char *authid, const char *authrole)
{
    if ((f->eligible && !id_listed(f->eligible, id)) ||
        (f->eligible_authid && !str_listed(f->eligible_authid, authid)) ||
        (f->eligible_authrole && !str_listed(f->eligible_authrole, authrole))) {
        return false;
    }
    return !((f->exclude && id_listed(f->exclude, id)) ||
             (f->exclude_authid && str_listed(f->exclude_authid, authid)) ||
             (f->exclude_authrole && str_listed(f->exclude_authrole, authrole)));
}

static bool filter_admits(const pub_filter *f, const rt_session *to)
{
    return !f->any || lists_admit(f, to->id, to->authid, to->authrole);
}

/* One publication being dispatched. */
typedef struct pub_ctx {
    rt_session *publisher; /* NULL for the router's own publications */
    const char *topic;
    uint64_t publication;
    json_t *args, *kwargs; /* borrowed: the router's own payload (jansson) */
    rt_payload payload;    /* borrowed: a client's payload, as its bytes */
    const json_t *ppt;     /* borrowed: PUBLISH.Options holding ppt_* keys, or NULL */
    bool exclude_me;
    bool disclose; /* publisher identification */
    bool retain;   /* event retention */
    /* when retain_event() retained it (wall clock), 0 when it did not */
    uint64_t retained_ns;
    pub_filter filter;
    const rt_broker_pub *from; /* another node's publication (its publisher), or NULL */
} pub_ctx;

/* Parses PUBLISH options into p (publisher, topic, payload set by the caller); NULL if they
 * are acceptable, else a message for the ERROR (invalid_argument). Walks the options present
 * (usually none or one) rather than looking each known one up: this runs for every PUBLISH.
 * Unknown options are ignored. */
static const char *parse_publish(const json_t *opts, pub_ctx *p, bool *ack)
{
    pub_filter *f = &p->filter;
    *ack = false;
    p->exclude_me = true;
    p->disclose = false;
    p->retain = false;
    memset(f, 0, sizeof(*f));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)opts, key, v)
    {
        bool *flag = NULL;
        const json_t **list = NULL;
        bool ids = false;
        if (strcmp(key, "acknowledge") == 0) {
            flag = ack;
        } else if (strcmp(key, "exclude_me") == 0) {
            flag = &p->exclude_me;
        } else if (strcmp(key, "disclose_me") == 0) {
            flag = &p->disclose;
        } else if (strcmp(key, "retain") == 0) {
            flag = &p->retain;
        } else if (strcmp(key, "eligible") == 0) {
            list = &f->eligible;
            ids = true;
        } else if (strcmp(key, "exclude") == 0) {
            list = &f->exclude;
            ids = true;
        } else if (strcmp(key, "eligible_authid") == 0) {
            list = &f->eligible_authid;
        } else if (strcmp(key, "eligible_authrole") == 0) {
            list = &f->eligible_authrole;
        } else if (strcmp(key, "exclude_authid") == 0) {
            list = &f->exclude_authid;
        } else if (strcmp(key, "exclude_authrole") == 0) {
            list = &f->exclude_authrole;
        }
        if (flag && !json_is_boolean(v)) {
            return "options acknowledge, exclude_me, disclose_me and retain must be booleans";
        }
        if (flag) {
            *flag = json_is_true(v);
        } else if (list && !list_value(v, ids, list)) {
            return ids ? "options eligible and exclude must be lists of session ids"
                       : "options eligible_authid, eligible_authrole, exclude_authid and "
                         "exclude_authrole must be lists of strings";
        }
    }
    f->any = f->eligible || f->eligible_authid || f->eligible_authrole || f->exclude ||
             f->exclude_authid || f->exclude_authrole;
    return NULL;
}

/* Whether publication p reaches session to. */
static bool is_receiver(const rt_session *to, const pub_ctx *p)
{
    return to->state == RT_SESSION_JOINED && !(to == p->publisher && p->exclude_me) &&
           filter_admits(&p->filter, to);
}

/* Adds publisher identification (spec "Publisher Identification") for s to details d; non-zero
 * on allocation failure. */
static int set_publisher(json_t *d, uint64_t id, const char *authid, const char *authrole)
{
    int rc = json_object_set_new(d, "publisher", json_integer((json_int_t)id));
    if (authid) {
        rc |= json_object_set_new(d, "publisher_authid", json_string(authid));
    }
    if (authrole) {
        rc |= json_object_set_new(d, "publisher_authrole", json_string(authrole));
    }
    return rc;
}

/* EVENT.Details for subscription sub: Details.topic for a pattern subscription, the publisher's
 * identity when disclosed. NULL = {} (or allocation failure: *oom set). */
static json_t *event_details(const rt_subscription *sub, const pub_ctx *p, bool *oom)
{
    bool pattern = sub->match != WAMP_MATCH_EXACT;
    bool disclose = p->disclose && (p->publisher || p->from);
    *oom = false;
    if (!pattern && !disclose && !p->ppt) {
        return NULL;
    }
    json_t *d = json_object();
    if (!d) {
        *oom = true;
        return NULL;
    }
    int rc = 0;
    if (pattern) {
        rc |= json_object_set_new(d, "topic", json_string(p->topic));
    }
    if (disclose && p->from) {
        rc |= set_publisher(d, p->from->publisher, p->from->publisher_authid,
                            p->from->publisher_authrole);
    } else if (disclose) {
        rc |= set_publisher(d, p->publisher->id, p->publisher->authid, p->publisher->authrole);
    }
    /* Payload passthru mode: the ppt_* options go along with the untouched payload. */
    rc |= wamp_msg_ppt_copy(d, p->ppt);
    if (rc != 0) {
        json_decref(d);
        *oom = true;
        return NULL;
    }
    return d;
}

/* Whether sub's members use more than one serializer. */
static bool mixed_serializers(const rt_subscription *sub)
{
    int used = 0;
    for (int i = 0; i < WAMP_SER_COUNT; i++) {
        used += sub->n_by_ser[i] > 0;
    }
    return used > 1;
}

/* EVENTs for publication p to the receivers of the n subscriptions in b->hits: one EVENT per
 * subscription, encoded once per serializer. mark_last: the last EVENT completes the traced
 * action (nothing follows it). */
static wamp_err fan_out(rt_broker *b, const pub_ctx *p, size_t n, bool mark_last)
{
    /* The last receiver, found from the back (usually at once): its EVENT completes the action
     * when nothing is acknowledged. */
    size_t last_hit = 0, last_end = 0;
    bool any = false;
    for (size_t h = n; h-- > 0 && !any;) {
        const rt_subscription *sub = b->hits[h];
        size_t end = sub->n_members;
        while (end > 0 && !is_receiver(sub->members[end - 1]->s, p)) {
            end--;
        }
        if (end > 0) {
            any = true;
            last_hit = h;
            last_end = end;
        }
    }
    for (size_t h = 0; any && h <= last_hit; h++) {
        const rt_subscription *sub = b->hits[h];
        size_t end = h == last_hit ? last_end : sub->n_members;
        bool oom;
        json_t *details = event_details(sub, p, &oom);
        if (oom) {
            return WAMP_ENOMEM;
        }
        rt_encoded ev;
        if (p->args || p->kwargs) {
            /* A payload as values (the router's own publications): in the envelope. */
            rt_encoded_init(&ev, wamp_msg_new_event(sub->id, p->publication, details,
                                                    json_incref(p->args), json_incref(p->kwargs)));
            if (!ev.msg) {
                return WAMP_ENOMEM;
            }
        } else {
            rt_encoded_init_fields(&ev, WAMP_MSG_EVENT, sub->id, p->publication, details,
                                   &p->payload);
        }
        if (rt_observers_listening(&rt_realm_router(b->realm)->observers) &&
            mixed_serializers(sub)) {
            /* The action observer (tracing) reports the size in every serializer in use, so
             * encode them all up front (each only once, as the fan-out would). With one
             * serializer among the members there is nothing to do: the first send encodes it. */
            for (size_t i = 0; i < end; i++) {
                wamp_ser ser = sub->members[i]->s->ser;
                if (!ev.buf[ser] && is_receiver(sub->members[i]->s, p)) {
                    (void)rt_encoded_encode(&ev, ser);
                }
            }
        }
        for (size_t i = 0; i < end; i++) {
            rt_session *to = sub->members[i]->s;
            if (!is_receiver(to, p)) {
                continue;
            }
            if (mark_last && h == last_hit && i + 1 == end) {
                rt_observers_action_last(&to->rt->observers, to->rt);
            }
            wamp_err err = rt_session_send_encoded(to, &ev);
            if (err == WAMP_ENOMEM) {
                rt_encoded_fini(&ev);
                return err;
            }
            /* ETOOBIG / EINVAL: this receiver cannot take the event; the others still do. */
        }
        rt_encoded_fini(&ev);
    }
    return WAMP_OK;
}

/* --- Event retention ------------------------------------------------------------------------ */

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

/* Frees r (not in b->retained). */
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

static void retained_remove(rt_broker *b, rt_retained *r)
{
    rt_hmap_remove(&b->retained, &r->by_topic);
    b->retained_bytes -= r->bytes;
    retained_free(r);
}

static size_t limit_or(size_t v, size_t dflt)
{
    return v ? v : dflt;
}

/* PUBLISH with retain: the event replaces the topic's retained one (p->retained_ns: when).
 * Within the realm's limits (topics and bytes): over them the event is not retained (and the
 * topic keeps none), which is logged. WAMP_ENOMEM. */
static wamp_err retain_event(rt_broker *b, pub_ctx *p, const json_t *options)
{
    rt_router *rt = rt_realm_router(b->realm);
    size_t max_topics = limit_or(rt->cfg->limits.max_retained_topics, RT_DEF_MAX_RETAINED_TOPICS);
    size_t max_bytes = limit_or(rt->cfg->limits.max_retained_bytes, RT_DEF_MAX_RETAINED_BYTES);
    rt_retained *old = retained_find(b, p->topic);
    if (old) {
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
        return WAMP_OK;
    }
    rt_retained *r = calloc(1, sizeof(*r));
    if (!r || !(r->topic = strdup(p->topic))) {
        free(r);
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
        oom = !r->publisher || set_publisher(r->publisher, p->publisher->id, p->publisher->authid,
                                             p->publisher->authrole) != 0;
    }
    if (oom || rt_hmap_insert(&b->retained, &r->by_topic,
                              rt_broker_uri_hash(r->topic, strlen(r->topic))) != WAMP_OK) {
        retained_free(r);
        return WAMP_ENOMEM;
    }
    b->retained_bytes += bytes;
    p->retained_ns = r->wall_ns;
    return WAMP_OK;
}

/* Whether subscription sub's new member s gets retained event r: the topic matches, and the
 * publication's black/white lists admit s (exclude_me does not apply: the publisher may
 * subscribe later to read its own retained state). */
static bool retained_admits_id(const char *uri, wamp_match match, const rt_retained *r, uint64_t id,
                               const char *authid, const char *authrole)
{
    if (!wamp_uri_matches(uri, match, r->topic)) {
        return false;
    }
    pub_ctx p;
    bool ack;
    return !r->options || (parse_publish(r->options, &p, &ack) == NULL &&
                           (!p.filter.any || lists_admit(&p.filter, id, authid, authrole)));
}

static bool retained_admits(const rt_subscription *sub, const rt_retained *r, const rt_session *s)
{
    return retained_admits_id(sub->uri, sub->match, r, s->id, s->authid, s->authrole);
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
    rt_retained *only = NULL;
    if (get_retained && sub->match == WAMP_MATCH_EXACT) {
        only = retained_find(b, sub->uri);
        n = only && retained_admits(sub, only, s) ? 1 : 0;
    } else if (get_retained) {
        /* A pattern: every retained topic it matches (bounded by limits.max_retained_topics). */
        for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;
             rt_hmap_iter_next(&b->retained, &it)) {
            n += retained_admits(sub, RT_CONTAINER_OF(it.node, rt_retained, by_topic), s) ? 1 : 0;
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
        rt_retained *r = RT_CONTAINER_OF(it.node, rt_retained, by_topic);
        if (retained_admits(sub, r, s)) {
            if (++sent == n) {
                rt_observers_action_last(&s->rt->observers, s->rt);
            }
            err = send_retained(sub, r, s);
        }
    }
    return err;
}

/* subscribed_here(), then other nodes' retained events are asked for. */
static wamp_err subscribed(rt_broker *b, rt_session *s, const wamp_msg *m,
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

/* Hands client s's publication p (PUBLISH m) to the other nodes (rt_broker_set_remote()). */
static void tell_remote(rt_broker *b, rt_session *s, const wamp_msg *m, const pub_ctx *p)
{
    rt_router *rt = s->rt;
    rt_broker_pub rp = {.topic = m->uri,
                        .publication = p->publication,
                        .payload = p->payload,
                        .args = m->args,
                        .kwargs = m->kwargs,
                        .options = m->dict,
                        .disclose = p->disclose,
                        .publisher = s->id,
                        .publisher_authid = s->authid,
                        .publisher_authrole = s->authrole,
                        .retain = p->retain,
                        .retained_ns = p->retained_ns};
    /* The other nodes' EVENTs carry the publication's correlation (while a trace runs). */
    rt_action_mark mark;
    memset(&mark, 0, sizeof(mark));
    rt_observers_action_mark(&rt->observers, rt, &mark);
    rp.correlation = rt_action_mark_is_set(&mark) ? mark.id : NULL;
    b->remote->published(b->remote_ctx, b, &rp);
    rt_observers_action_forget(&rt->observers, &mark);
}

wamp_err rt_broker_on_publish(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    bool ack = false;
    pub_ctx p = {.publisher = s,
                 .topic = m->uri,
                 .args = m->args,
                 .kwargs = m->kwargs,
                 .payload = rt_payload_of(m)};
    char why[96];
    if (!rt_options_check(WAMP_MSG_PUBLISH, m->dict, why, sizeof(why))) {
        /* Answered with or without acknowledge, as every invalid option. */
        return rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_ARGUMENT, why);
    }
    const char *bad = parse_publish(m->dict, &p, &ack);
    bool ppt = false;
    if (!bad && json_object_size(m->dict) > 0) {
        bad = wamp_msg_ppt_check(m->dict, &ppt);
    }
    if (bad) {
        RT_LOG_DEBUG(s->id, "PUBLISH to %s: %s", m->uri, bad);
        return rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_ARGUMENT, bad);
    }
    if (ppt && !s->ppt_publisher) {
        /* Spec "Payload Passthru Mode": a protocol error. */
        rt_session_protocol_violation(s, "PUBLISH uses payload passthru mode (ppt_*), which the "
                                         "publisher did not announce (payload_passthru_mode)");
        return WAMP_OK;
    }
    p.ppt = ppt ? m->dict : NULL;
    if (!wamp_uri_is_valid(m->uri, WAMP_URI_LOOSE)) {
        RT_LOG_DEBUG(s->id, "PUBLISH to invalid topic \"%s\"", m->uri);
        return ack ? rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_URI,
                                           "invalid topic URI")
                   : WAMP_OK;
    }
    if (strncmp(m->uri, "wamp.", 5) == 0) {
        /* The router's own namespace (meta events): clients cannot publish there, whatever the
         * permissions say, as in Crossbar. */
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "PUBLISH refused", s->id,
                            "PUBLISH to restricted topic %s refused", m->uri);
        return ack ? rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_URI,
                                           "publish to a restricted topic URI (wamp.*)")
                   : WAMP_OK;
    }
    const rt_permission *perm = rt_realm_permission(b->realm, s->authrole, m->uri);
    if (!perm || !perm->allow_publish) {
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "PUBLISH denied", s->id,
                            "PUBLISH to %s denied for role %s", m->uri, s->authrole);
        return ack ? rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                           "not authorized to publish to this topic")
                   : WAMP_OK;
    }
    /* Publisher identification: on the publisher's request (disclose_me), or forced by the
     * role's permission ("disclose": {"publisher": true}, as in Crossbar). */
    p.disclose = p.disclose || perm->disclose_publisher;
    p.publication = wamp_id_random();
    size_t n = rt_broker_collect_matches(b, m->uri);
    if (n == SIZE_MAX) {
        return WAMP_ENOMEM;
    }
    wamp_err err = fan_out(b, &p, n, !ack);
    if (err == WAMP_OK && p.retain) {
        err = retain_event(b, &p, m->dict);
    }
    if (err == WAMP_OK && b->remote) {
        tell_remote(b, s, m, &p);
    }
    if (err != WAMP_OK || !ack) {
        return err;
    }
    rt_observers_action_last(&s->rt->observers, s->rt);
    return rt_session_send(s, wamp_msg_new_published(m->id, p.publication));
}

/* --- SUBSCRIBE / UNSUBSCRIBE ----------------------------------------------------------------- */

wamp_err rt_broker_on_subscribe(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    char why[96];
    if (!rt_options_check(WAMP_MSG_SUBSCRIBE, m->dict, why, sizeof(why))) {
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     why);
    }
    wamp_match match = WAMP_MATCH_EXACT;
    json_t *jm = json_object_get(m->dict, "match");
    if (jm && !(json_is_string(jm) && wamp_match_parse(json_string_value(jm), &match))) {
        RT_LOG_DEBUG(s->id, "SUBSCRIBE to %s: bad option match", m->uri);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     "option match must be \"exact\", \"prefix\" or \"wildcard\"");
    }
    bool get_retained;
    if (!bool_option(m->dict, "get_retained", false, &get_retained)) {
        RT_LOG_DEBUG(s->id, "SUBSCRIBE to %s: option get_retained is not a boolean", m->uri);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     "option get_retained must be a boolean");
    }
    if (!rt_broker_pattern_is_valid(m->uri, match)) {
        RT_LOG_DEBUG(s->id, "SUBSCRIBE to invalid %s pattern \"%s\"", wamp_match_name(match),
                     m->uri);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_URI,
                                     match == WAMP_MATCH_EXACT ? "invalid topic URI"
                                                               : "invalid topic pattern");
    }
    if (!rt_realm_authorize(b->realm, s->authrole, RT_ACTION_SUBSCRIBE, m->uri)) {
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "SUBSCRIBE denied", s->id,
                            "SUBSCRIBE to %s denied for role %s", m->uri, s->authrole);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                     "not authorized to subscribe to this topic");
    }
    rt_subscription *sub = rt_broker_find_exactly(b, m->uri, match);
    bool created = false;
    if (sub && rt_broker_find_member(s, sub->id)) {
        /* Spec: subscribing again returns the existing subscription. */
        return subscribed(b, s, m, sub, get_retained);
    }
    size_t max_subs = s->rt->cfg->limits.max_subscriptions;
    if (max_subs && s->n_subs >= max_subs) {
        return rt_session_refuse_limit(s, WAMP_MSG_SUBSCRIBE, m->id, "max_subscriptions", max_subs);
    }
    if (!sub) {
        if (!(sub = rt_broker_sub_new(b, s, m->uri, match))) {
            return WAMP_ENOMEM;
        }
        created = true;
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
        if (created) {
            rt_broker_unindex(b, sub);
            rt_broker_sub_free(sub);
        }
        return WAMP_ENOMEM;
    }
    mb->sub = sub;
    mb->s = s;
    mb->idx = sub->n_members;
    sub->members[sub->n_members++] = mb;
    sub->n_by_ser[s->ser]++;
    rt_list_add_tail(&s->subs, &mb->in_session);
    s->n_subs++;
    rt_observers_subscription_added(rt_realm_observers(b->realm), b->realm, s, sub, created);
    return subscribed(b, s, m, sub, get_retained);
}

wamp_err rt_broker_on_unsubscribe(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    rt_sub_member *mb = rt_broker_find_member(s, m->id2);
    if (!mb) {
        return rt_session_send_error(s, WAMP_MSG_UNSUBSCRIBE, m->id,
                                     WAMP_ERROR_NO_SUCH_SUBSCRIPTION,
                                     "no such subscription for this session");
    }
    rt_broker_remove_member(b, mb);
    rt_observers_action_last(&s->rt->observers, s->rt);
    return rt_session_send(s, wamp_msg_new_unsubscribed(m->id));
}

void rt_broker_on_leave(rt_broker *b, rt_session *s)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->subs)
    {
        rt_broker_remove_member(b, RT_CONTAINER_OF(it, rt_sub_member, in_session));
    }
}

/* The router's own publication of args/kwargs (taken) on topic; mark_last as fan_out(). */
static wamp_err publish_own(rt_broker *b, const char *topic, json_t *args_take, json_t *kwargs_take,
                            bool mark_last)
{
    pub_ctx p = {.topic = topic, .args = args_take, .kwargs = kwargs_take};
    wamp_err err = WAMP_OK;
    size_t n = rt_broker_collect_matches(b, topic);
    if (n == SIZE_MAX) {
        err = WAMP_ENOMEM;
    } else if (n > 0) {
        p.publication = wamp_id_random();
        err = fan_out(b, &p, n, mark_last);
    }
    json_decref(args_take);
    json_decref(kwargs_take);
    return err;
}

wamp_err rt_broker_publish_local(rt_broker *b, const char *topic, json_t *args_take,
                                 json_t *kwargs_take)
{
    return publish_own(b, topic, args_take, kwargs_take, false);
}

wamp_err rt_broker_publish_meta(rt_broker *b, const char *topic, json_t *args_take, bool mark_last)
{
    return publish_own(b, topic, args_take, NULL, mark_last);
}

/* Receivers of publication p over every subscription matching its topic, counted up to at
 * most `enough`. */
static size_t count_receivers(rt_broker *b, const pub_ctx *p, size_t enough)
{
    if (!p->topic || !wamp_uri_is_valid(p->topic, WAMP_URI_LOOSE)) {
        return 0;
    }
    size_t n = rt_broker_collect_matches(b, p->topic), count = 0;
    for (size_t h = 0; n != SIZE_MAX && h < n; h++) {
        const rt_subscription *sub = b->hits[h];
        for (size_t i = 0; i < sub->n_members; i++) {
            count += is_receiver(sub->members[i]->s, p) ? 1 : 0;
            if (count == enough) {
                return count;
            }
        }
    }
    return count;
}

size_t rt_broker_receiver_count(rt_broker *b, rt_session *s, const char *topic, bool exclude_me)
{
    pub_ctx p = {.publisher = s, .topic = topic, .exclude_me = exclude_me};
    return count_receivers(b, &p, SIZE_MAX);
}

bool rt_broker_publish_has_receiver(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    bool ack;
    pub_ctx p = {.publisher = s, .topic = m->uri};
    return !parse_publish(m->dict, &p, &ack) && count_receivers(b, &p, 1) > 0;
}

/* --- Other nodes ------------------------------------------------------------------------------ */

_Static_assert(RT_BROKER_CORRELATION_LEN == TRACE_UUID_LEN, "a correlation is tracing's UUID");

void rt_broker_set_remote(rt_broker *b, const rt_broker_remote *ops, void *ctx)
{
    b->remote = ops;
    b->remote_ctx = ctx;
}

/* The publication context of another node's publication rp; false if its options are not
 * valid. */
static bool remote_ctx(const rt_broker_pub *rp, pub_ctx *p)
{
    bool ack, ppt = false;
    *p = (pub_ctx){.topic = rp->topic,
                   .publication = rp->publication,
                   .args = (json_t *)rp->args,
                   .kwargs = (json_t *)rp->kwargs,
                   .payload = rp->payload,
                   .from = rp};
    if (rp->options && (parse_publish(rp->options, p, &ack) != NULL ||
                        wamp_msg_ppt_check(rp->options, &ppt) != NULL)) {
        return false;
    }
    p->ppt = ppt ? rp->options : NULL;
    p->exclude_me = false; /* the publisher is not here */
    p->retain = false;
    p->disclose = rp->disclose;
    return true;
}

wamp_err rt_broker_deliver(rt_broker *b, const rt_broker_pub *rp)
{
    pub_ctx p;
    if (!remote_ctx(rp, &p)) {
        return WAMP_OK;
    }
    size_t n = rt_broker_collect_matches(b, rp->topic);
    if (n == SIZE_MAX) {
        return WAMP_ENOMEM;
    }
    rt_router *rt = rt_realm_router(b->realm);
    const rt_observers *obs = &rt->observers;
    /* A message of its own: one clock reading, none left behind. */
    rt_observers_message_edge(obs, rt);
    /* The EVENTs carry the publication's correlation, as on the publisher's node. */
    bool stashed = rp->correlation && rt_observers_listening(obs);
    void *saved = stashed ? rt_observers_action_stash(obs, rt) : NULL;
    if (stashed) {
        (void)rt_observers_action_open_at(obs, rt, rp->correlation, rp->topic, NULL);
    }
    /* The action completes on the publisher's node (its PUBLISHED, last EVENT or PUBLISH):
     * no EVENT here is its last message. */
    wamp_err err = fan_out(b, &p, n, false);
    if (stashed) {
        rt_observers_action_restore(obs, rt, saved);
    }
    rt_observers_message_edge(obs, rt);
    return err;
}

wamp_err rt_broker_deliver_retained(rt_broker *b, uint64_t session_id, uint64_t sub_id,
                                    const rt_broker_pub *rp)
{
    rt_session *s = rt_router_session_by_id(rt_realm_router(b->realm), session_id);
    rt_sub_member *mb = s && s->realm == b->realm && s->state == RT_SESSION_JOINED
                                ? rt_broker_find_member(s, sub_id)
                                : NULL;
    pub_ctx p;
    if (!mb || !remote_ctx(rp, &p)) {
        return WAMP_OK;
    }
    json_t *d = json_object();
    if (d && rp->disclose &&
        set_publisher(d, rp->publisher, rp->publisher_authid, rp->publisher_authrole) != 0) {
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
        const rt_retained *r = RT_CONTAINER_OF(it.node, rt_retained, by_topic);
        if (!retained_admits_id(uri, match, r, id, authid, authrole)) {
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

void rt_broker_retained_times(rt_broker *b,
                              void (*fn)(void *arg, const char *topic, uint64_t wall_ns), void *arg)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;
         rt_hmap_iter_next(&b->retained, &it)) {
        const rt_retained *r = RT_CONTAINER_OF(it.node, rt_retained, by_topic);
        fn(arg, r->topic, r->wall_ns);
    }
}

bool rt_broker_retained_drop(rt_broker *b, const char *topic, uint64_t before_ns, bool wins_tie,
                             uint64_t *kept_ns)
{
    rt_retained *r = retained_find(b, topic);
    if (!r) {
        return false;
    }
    if (r->wall_ns < before_ns || (r->wall_ns == before_ns && !wins_tie)) {
        retained_remove(b, r);
        return false;
    }
    *kept_ns = r->wall_ns;
    return true;
}
