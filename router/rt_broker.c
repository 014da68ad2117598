/* rt_broker.c: what the broker does with PUBLISH, SUBSCRIBE and UNSUBSCRIBE: the EVENT fan-out
 * and the replies. The publication's options are rt_broker_pub.c, event retention
 * rt_broker_retained.c, the subscription table (indexes, matching, members) rt_broker_subs.c. */
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
    rt_broker_retained_clear(b);
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

static bool filter_admits(const pub_filter *f, const rt_session *to)
{
    return !f->any || rt_broker_lists_admit(f, to->id, to->authid, to->authrole);
}

/* The last permission decision of rt_broker_may_receive() over one pattern subscription's
 * members: members of one role (most of them) cost one lookup per publication. */
typedef struct role_memo {
    const char *role;
    bool may;
} role_memo;

/* rt_broker_may_receive() for to, a member of the pattern subscription sub, through memo (that
 * subscription's, zeroed before its first member). Out of line: exact subscriptions, most
 * fan-outs, never come here. */
static __attribute__((noinline)) bool pattern_admits(const rt_broker *b, const rt_subscription *sub,
                                                     const rt_session *to, const pub_ctx *p,
                                                     role_memo *memo)
{
    if (!memo->role || !to->authrole || strcmp(memo->role, to->authrole) != 0) {
        memo->role = to->authrole;
        memo->may = rt_broker_may_receive(b, sub, to, p->topic);
    }
    return memo->may;
}

/* Whether publication p reaches session to, a member of subscription sub (memo: see
 * pattern_admits()). Inline: it runs for every receiver of every fan-out. */
static inline __attribute__((always_inline)) bool is_receiver(const rt_broker *b,
                                                              const rt_subscription *sub,
                                                              const rt_session *to,
                                                              const pub_ctx *p, role_memo *memo)
{
    return to->state == RT_SESSION_JOINED && !(to == p->publisher && p->exclude_me) &&
           filter_admits(&p->filter, to) &&
           (sub->match == WAMP_MATCH_EXACT || pattern_admits(b, sub, to, p, memo));
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
        rc |= rt_broker_set_publisher(d, p->from->publisher, p->from->publisher_authid,
                                      p->from->publisher_authrole);
    } else if (disclose) {
        rc |= rt_broker_set_publisher(d, p->publisher->id, p->publisher->authid,
                                      p->publisher->authrole);
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
        role_memo memo = {0};
        while (end > 0 && !is_receiver(b, sub, sub->members[end - 1]->s, p, &memo)) {
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
        role_memo memo = {0};
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
                if (!ev.buf[ser] && is_receiver(b, sub, sub->members[i]->s, p, &memo)) {
                    (void)rt_encoded_encode(&ev, ser);
                }
            }
        }
        for (size_t i = 0; i < end; i++) {
            rt_session *to = sub->members[i]->s;
            if (!is_receiver(b, sub, to, p, &memo)) {
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

/* --- PUBLISH -------------------------------------------------------------------------------- */

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
                        .retained_ns = p->retained_ns,
                        .session = s,
                        .request = m->id};
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
    const char *bad = rt_broker_parse_publish(m->dict, &p, &ack);
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
    rt_observers_published(&s->rt->observers, s, m->id, p.publication);
    size_t n = rt_broker_collect_matches(b, m->uri);
    if (n == SIZE_MAX) {
        return WAMP_ENOMEM;
    }
    wamp_err err = fan_out(b, &p, n, !ack);
    if (err == WAMP_OK && p.retain) {
        err = rt_broker_retain_event(b, &p, m->dict);
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
        return rt_broker_subscribed(b, s, m, sub, get_retained);
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
    return rt_broker_subscribed(b, s, m, sub, get_retained);
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
        role_memo memo = {0};
        for (size_t i = 0; i < sub->n_members; i++) {
            count += is_receiver(b, sub, sub->members[i]->s, p, &memo) ? 1 : 0;
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
    return !rt_broker_parse_publish(m->dict, &p, &ack) && count_receivers(b, &p, 1) > 0;
}

/* --- Other nodes ------------------------------------------------------------------------------ */

_Static_assert(RT_BROKER_CORRELATION_LEN == TRACE_UUID_LEN, "a correlation is tracing's UUID");

void rt_broker_set_remote(rt_broker *b, const rt_broker_remote *ops, void *ctx)
{
    b->remote = ops;
    b->remote_ctx = ctx;
}

const uint8_t *rt_broker_pub_correlation(const rt_broker_pub *p,
                                         uint8_t buf[RT_BROKER_CORRELATION_LEN])
{
    if (!p->session) {
        return p->correlation;
    }
    return rt_observers_remote_call(&p->session->rt->observers, p->session, p->request,
                                    p->correlation, buf);
}

wamp_err rt_broker_deliver(rt_broker *b, const rt_broker_pub *rp)
{
    pub_ctx p;
    if (!rt_broker_remote_ctx(rp, &p)) {
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
    if (rp->correlation) {
        rt_observers_remote_published(obs, rp->publication, rp->correlation, rp->topic);
    }
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
