/* rt_meta.c: session, subscription and registration meta API (see rt_meta.h).
 *
 * Arguments may be positional or keyword (the spec's names: session, filter_authroles, authid,
 * authrole, reason, message, topic, procedure, options, subscription, registration); a keyword
 * wins. Wrong types answer wamp.error.invalid_argument with a one-line message. */
#include "rt_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_core_int.h"
#include "rt_dealer.h"
#include "rt_local.h"
#include "rt_log.h"
#include "rt_observer.h"
#include "rt_options.h"
#include "wamp_codec.h"
#include "wamp_types.h"
#include "wamp_uri.h"

/* --- Replies and arguments ------------------------------------------------------------------ */

/* A required id argument (integer 0..2^53). false: *reply holds invalid_argument. */
static bool arg_id(const json_t *args, const json_t *kwargs, size_t i, const char *name,
                   uint64_t *out, rt_local_reply *reply, wamp_err *err)
{
    json_t *v = rt_local_arg(args, kwargs, i, name);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)WAMP_ID_MAX) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "%s: must be an id (integer)", name);
        return false;
    }
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* An optional list of strings (absent or null: *out = NULL). */
static bool arg_string_list(const json_t *args, const json_t *kwargs, size_t i, const char *name,
                            const json_t **out, rt_local_reply *reply, wamp_err *err)
{
    json_t *v = rt_local_arg(args, kwargs, i, name);
    *out = NULL;
    if (!v || json_is_null(v)) {
        return true;
    }
    bool ok = json_is_array(v);
    for (size_t k = 0; ok && k < json_array_size(v); k++) {
        ok = rt_options_is_plain_string(json_array_get(v, k));
    }
    if (!ok) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "%s: must be a list of strings without NUL bytes", name);
        return false;
    }
    *out = v;
    return true;
}

/* The optional kill arguments reason (a valid URI, default wamp.close.killed) and message. */
static bool arg_kill(const json_t *args, const json_t *kwargs, size_t i, const char **reason,
                     const char **message, rt_local_reply *reply, wamp_err *err)
{
    json_t *r = rt_local_arg(args, kwargs, i, "reason");
    json_t *m = rt_local_arg(args, kwargs, i + 1, "message");
    *reason = WAMP_CLOSE_KILLED;
    *message = NULL;
    if (r && !json_is_null(r)) {
        if (!rt_options_is_plain_string(r) ||
            !wamp_uri_is_valid(json_string_value(r), WAMP_URI_LOOSE)) {
            *err = rt_local_reply_error(reply, WAMP_ERROR_INVALID_URI,
                                        "reason: must be a valid URI");
            return false;
        }
        *reason = json_string_value(r);
    }
    if (m && !json_is_null(m)) {
        if (!json_is_string(m)) {
            *err = rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                        "message: must be a string");
            return false;
        }
        *message = json_string_value(m);
    }
    return true;
}

/* An optional match policy from options.match (lookup). */
static bool arg_match(const json_t *args, const json_t *kwargs, size_t i, wamp_match *out,
                      rt_local_reply *reply, wamp_err *err)
{
    json_t *o = rt_local_arg(args, kwargs, i, "options");
    json_t *m = json_object_get(o, "match");
    *out = WAMP_MATCH_EXACT;
    if ((o && !json_is_null(o) && !json_is_object(o)) ||
        (m && !(rt_options_is_plain_string(m) && wamp_match_parse(json_string_value(m), out)))) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "options.match: must be \"exact\", \"prefix\" or \"wildcard\"");
        return false;
    }
    return true;
}

/* --- Shared helpers ------------------------------------------------------------------------- */

/* URIs the meta API does not show: the meta topics and other wamp.* URIs. */
static bool is_protected(const char *uri)
{
    return strncmp(uri, "wamp.", 5) == 0;
}

/* ISO-8601 UTC with milliseconds for a router clock reading (microseconds). */
static json_t *iso_time(const rt_router *rt, uint64_t mono_us)
{
    int64_t wall_ns = (int64_t)(mono_us * 1000u) + rt->wall_offset_ns;
    time_t secs = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    char buf[40];
    if (wall_ns < 0 || !gmtime_r(&secs, &tm)) {
        return json_null();
    }
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int)((wall_ns / 1000000) % 1000));
    return json_string(buf);
}

/* The session s of realm r with this id that the meta API may see (joined), or NULL. */
static rt_session *find_session(rt_realm *r, uint64_t id)
{
    rt_session *s = rt_router_session_by_id(rt_realm_router(r), id);
    return s && s->realm == r && s->state == RT_SESSION_JOINED ? s : NULL;
}

static const rt_listener *listener_of(const rt_session *s)
{
    const rt_config *cfg = s->rt->cfg;
    for (size_t i = 0; s->peer.listener_id && i < cfg->n_listeners; i++) {
        if (cfg->listeners[i].id && strcmp(cfg->listeners[i].id, s->peer.listener_id) == 0) {
            return &cfg->listeners[i];
        }
    }
    return NULL;
}

/* Session details as wamp.session.get and on_join give them (spec: session, authid, authrole,
 * authmethod, authprovider, transport; plus realm and serializer as Crossbar gives). */
static json_t *session_details(const rt_session *s)
{
    const rt_listener *l = listener_of(s);
    const char *type = !l                                  ? "unknown"
                       : l->kind == RT_TRANSPORT_RAWSOCKET ? "rawsocket"
                                                           : "websocket";
    const char *proto = s->ser == WAMP_SER_MSGPACK ? WAMP_SUBPROTOCOL_MSGPACK
                        : s->ser == WAMP_SER_CBOR  ? WAMP_SUBPROTOCOL_CBOR
                                                   : WAMP_SUBPROTOCOL_JSON;
    return json_pack("{s:I, s:s, s:s?, s:s?, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s?, s:b}}",
                     "session", (json_int_t)s->id, "realm", rt_realm_name(s->realm), "authid",
                     s->authid, "authrole", s->authrole, "authmethod",
                     rt_auth_method_name(s->authmethod), "authprovider", "static", "serializer",
                     wamp_ser_name(s->ser), "transport", "type", type, "protocol", proto, "peer",
                     s->peer.addr, "listener", s->peer.listener_id, "is_loopback",
                     s->peer.is_loopback);
}

static bool role_listed(const json_t *roles, const char *authrole)
{
    if (!roles) {
        return true;
    }
    for (size_t i = 0; i < json_array_size(roles); i++) {
        if (authrole && strcmp(json_string_value(json_array_get(roles, i)), authrole) == 0) {
            return true;
        }
    }
    return false;
}

/* --- wamp.session.* ------------------------------------------------------------------------- */

/* Ids of the joined sessions of r with an authrole in roles (NULL = all); count only if ids is
 * NULL. */
static size_t session_ids(rt_realm *r, const json_t *roles, json_t *ids, bool *oom)
{
    size_t n = 0;
    RT_LIST_FOREACH_SAFE(it, nx, rt_realm_members(r))
    {
        rt_session *s = RT_CONTAINER_OF(it, rt_session, in_realm);
        if (s->state != RT_SESSION_JOINED || !role_listed(roles, s->authrole)) {
            continue;
        }
        n++;
        if (ids && json_array_append_new(ids, json_integer((json_int_t)s->id)) != 0) {
            *oom = true;
        }
    }
    return n;
}

static wamp_err proc_session_count(void *ctx, rt_session *caller, const json_t *args,
                                   const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const json_t *roles;
    if (!arg_string_list(args, kwargs, 0, "filter_authroles", &roles, reply, &err)) {
        return err;
    }
    bool oom = false;
    return rt_local_reply_value(reply,
                                json_integer((json_int_t)session_ids(ctx, roles, NULL, &oom)));
}

static wamp_err proc_session_list(void *ctx, rt_session *caller, const json_t *args,
                                  const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const json_t *roles;
    if (!arg_string_list(args, kwargs, 0, "filter_authroles", &roles, reply, &err)) {
        return err;
    }
    json_t *ids = json_array();
    bool oom = !ids;
    if (ids) {
        (void)session_ids(ctx, roles, ids, &oom);
    }
    if (oom) {
        json_decref(ids);
        return WAMP_ENOMEM;
    }
    return rt_local_reply_value(reply, ids);
}

static wamp_err proc_session_get(void *ctx, rt_session *caller, const json_t *args,
                                 const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    uint64_t id;
    if (!arg_id(args, kwargs, 0, "session", &id, reply, &err)) {
        return err;
    }
    rt_session *s = find_session(ctx, id);
    if (!s) {
        return rt_local_reply_error(reply, WAMP_ERROR_NO_SUCH_SESSION,
                                    "no session %llu on this realm", (unsigned long long)id);
    }
    return rt_local_reply_value(reply, session_details(s));
}

/* Kills the sessions of the caller's realm listed in ids (json integers), skipping the
 * caller. */
static void kill_ids(rt_realm *r, rt_session *caller, const json_t *ids, const char *reason,
                     const char *message)
{
    for (size_t i = 0; i < json_array_size(ids); i++) {
        rt_session *v = find_session(r, (uint64_t)json_integer_value(json_array_get(ids, i)));
        if (v && v != caller) {
            RT_LOG_LIMITED_N(RT_LOG_BURST_SESSION, RT_LOG_LEVEL_INFO, rt_router_now_us(v->rt),
                             "session killed", v->id, "killed by session %llu (%s)",
                             (unsigned long long)caller->id, reason);
            rt_session_kill(v, reason, message);
        }
    }
}

static wamp_err proc_session_kill(void *ctx, rt_session *caller, const json_t *args,
                                  const json_t *kwargs, rt_local_reply *reply)
{
    wamp_err err = WAMP_OK;
    uint64_t id;
    const char *reason, *message;
    if (!arg_id(args, kwargs, 0, "session", &id, reply, &err) ||
        !arg_kill(args, kwargs, 1, &reason, &message, reply, &err)) {
        return err;
    }
    rt_session *v = find_session(ctx, id);
    if (!v || v == caller) {
        /* Spec: the caller's own session counts as no (other) such session. */
        return rt_local_reply_error(reply, WAMP_ERROR_NO_SUCH_SESSION,
                                    "no other session %llu on this realm", (unsigned long long)id);
    }
    RT_LOG_LIMITED_N(RT_LOG_BURST_SESSION, RT_LOG_LEVEL_INFO, rt_router_now_us(v->rt),
                     "session killed", v->id, "killed by session %llu (%s)",
                     (unsigned long long)caller->id, reason);
    rt_session_kill(v, reason, message);
    return WAMP_OK;
}

typedef enum kill_by {
    KILL_BY_AUTHID,
    KILL_BY_AUTHROLE,
    KILL_ALL
} kill_by;

/* kill_by_authid (result: the killed ids), kill_by_authrole and kill_all (result: count). */
static wamp_err kill_some(rt_realm *r, rt_session *caller, const json_t *args, const json_t *kwargs,
                          rt_local_reply *reply, kill_by by)
{
    wamp_err err = WAMP_OK;
    const char *who = NULL, *reason, *message;
    if ((by != KILL_ALL &&
         !rt_local_arg_string(args, kwargs, 0, by == KILL_BY_AUTHID ? "authid" : "authrole", &who,
                              reply, &err)) ||
        !arg_kill(args, kwargs, by == KILL_ALL ? 0 : 1, &reason, &message, reply, &err)) {
        return err;
    }
    json_t *ids = json_array();
    if (!ids) {
        return WAMP_ENOMEM;
    }
    /* Collect first: each kill changes the member list. */
    RT_LIST_FOREACH_SAFE(it, nx, rt_realm_members(r))
    {
        rt_session *s = RT_CONTAINER_OF(it, rt_session, in_realm);
        const char *v = by == KILL_BY_AUTHID ? s->authid : s->authrole;
        if (s == caller || s->state != RT_SESSION_JOINED ||
            (by != KILL_ALL && (!v || strcmp(v, who) != 0))) {
            continue;
        }
        if (json_array_append_new(ids, json_integer((json_int_t)s->id)) != 0) {
            json_decref(ids);
            return WAMP_ENOMEM;
        }
    }
    kill_ids(r, caller, ids, reason, message);
    if (by == KILL_BY_AUTHID) {
        return rt_local_reply_value(reply, ids);
    }
    size_t n = json_array_size(ids);
    json_decref(ids);
    return rt_local_reply_value(reply, json_integer((json_int_t)n));
}

static wamp_err proc_kill_by_authid(void *ctx, rt_session *caller, const json_t *args,
                                    const json_t *kwargs, rt_local_reply *reply)
{
    return kill_some(ctx, caller, args, kwargs, reply, KILL_BY_AUTHID);
}

static wamp_err proc_kill_by_authrole(void *ctx, rt_session *caller, const json_t *args,
                                      const json_t *kwargs, rt_local_reply *reply)
{
    return kill_some(ctx, caller, args, kwargs, reply, KILL_BY_AUTHROLE);
}

static wamp_err proc_kill_all(void *ctx, rt_session *caller, const json_t *args,
                              const json_t *kwargs, rt_local_reply *reply)
{
    return kill_some(ctx, caller, args, kwargs, reply, KILL_ALL);
}

/* --- wamp.subscription.* -------------------------------------------------------------------- */

static json_t *by_match_lists(void)
{
    return json_pack("{s:[], s:[], s:[]}", "exact", "prefix", "wildcard");
}

/* wamp.subscription.list / wamp.registration.list accumulator: {exact, prefix, wildcard}, only
 * the optional session's (Crossbar's session_id argument). */
typedef struct list_ctx {
    json_t *lists;
    const rt_session *only;
    const rt_dealer *dealer;
    bool oom;
} list_ctx;

static bool list_add(list_ctx *lc, wamp_match match, uint64_t id)
{
    json_t *l = json_object_get(lc->lists, wamp_match_name(match));
    if (json_array_append_new(l, json_integer((json_int_t)id)) != 0) {
        lc->oom = true;
        return false;
    }
    return true;
}

static bool list_one_sub(const rt_subscription *sub, void *ctx)
{
    list_ctx *lc = ctx;
    if (is_protected(rt_subscription_uri(sub))) {
        return true;
    }
    bool member = !lc->only;
    for (size_t i = 0; !member && i < rt_subscription_subscriber_count(sub); i++) {
        member = rt_subscription_subscriber(sub, i) == lc->only;
    }
    return !member || list_add(lc, rt_subscription_match(sub), rt_subscription_id(sub));
}

/* The optional session filter of the list procedures: absent or null = all. false: *reply
 * holds the error (invalid_argument, or no_such_session for a session not on this realm). */
static bool arg_list_session(rt_realm *r, const json_t *args, const json_t *kwargs,
                             const rt_session **out, rt_local_reply *reply, wamp_err *err)
{
    json_t *v = json_object_get(kwargs, "session_id");
    *out = NULL;
    if (!v) {
        v = rt_local_arg(args, kwargs, 0, "session");
    }
    if (!v || json_is_null(v)) {
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)WAMP_ID_MAX) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_INVALID_ARGUMENT,
                                    "session_id: must be an id");
        return false;
    }
    uint64_t id = (uint64_t)json_integer_value(v);
    if (!(*out = find_session(r, id))) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_NO_SUCH_SESSION,
                                    "no session %llu on this realm", (unsigned long long)id);
        return false;
    }
    return true;
}

static wamp_err proc_sub_list(void *ctx, rt_session *caller, const json_t *args,
                              const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    list_ctx lc = {.lists = NULL};
    if (!arg_list_session(ctx, args, kwargs, &lc.only, reply, &err)) {
        return err;
    }
    if (!(lc.lists = by_match_lists())) {
        return WAMP_ENOMEM;
    }
    rt_broker_foreach(rt_realm_broker(ctx), list_one_sub, &lc);
    if (lc.oom) {
        json_decref(lc.lists);
        return WAMP_ENOMEM;
    }
    return rt_local_reply_value(reply, lc.lists);
}

/* The visible subscription with this id argument, or NULL with *reply holding the error. */
static const rt_subscription *arg_sub(rt_realm *r, const json_t *args, const json_t *kwargs,
                                      rt_local_reply *reply, wamp_err *err)
{
    uint64_t id;
    if (!arg_id(args, kwargs, 0, "subscription", &id, reply, err)) {
        return NULL;
    }
    const rt_subscription *sub = rt_broker_find(rt_realm_broker(r), id);
    if (!sub || is_protected(rt_subscription_uri(sub))) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_NO_SUCH_SUBSCRIPTION,
                                    "no subscription %llu on this realm", (unsigned long long)id);
        return NULL;
    }
    return sub;
}

static json_t *sub_details(rt_realm *r, const rt_subscription *sub)
{
    return json_pack("{s:I, s:o, s:s, s:s}", "id", (json_int_t)rt_subscription_id(sub), "created",
                     iso_time(rt_realm_router(r), rt_subscription_created_us(sub)), "uri",
                     rt_subscription_uri(sub), "match",
                     wamp_match_name(rt_subscription_match(sub)));
}

static wamp_err proc_sub_lookup(void *ctx, rt_session *caller, const json_t *args,
                                const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const char *topic;
    wamp_match match;
    if (!rt_local_arg_string(args, kwargs, 0, "topic", &topic, reply, &err) ||
        !arg_match(args, kwargs, 1, &match, reply, &err)) {
        return err;
    }
    const rt_subscription *sub = rt_broker_lookup(rt_realm_broker(ctx), topic, match);
    return rt_local_reply_value(reply, sub && !is_protected(topic)
                                               ? json_integer((json_int_t)rt_subscription_id(sub))
                                               : json_null());
}

static wamp_err proc_sub_match(void *ctx, rt_session *caller, const json_t *args,
                               const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const char *topic;
    if (!rt_local_arg_string(args, kwargs, 0, "topic", &topic, reply, &err)) {
        return err;
    }
    rt_broker *b = rt_realm_broker(ctx);
    const rt_subscription *first[16];
    size_t n = rt_broker_match(b, topic, first, 16);
    const rt_subscription **hits = first;
    if (n > 16) {
        if (!(hits = malloc(n * sizeof(*hits)))) {
            return WAMP_ENOMEM;
        }
        n = rt_broker_match(b, topic, hits, n);
    }
    json_t *ids = json_array();
    for (size_t i = 0; ids && i < n; i++) {
        if (!is_protected(rt_subscription_uri(hits[i])) &&
            json_array_append_new(ids, json_integer((json_int_t)rt_subscription_id(hits[i])))) {
            json_decref(ids);
            ids = NULL;
        }
    }
    if (hits != first) {
        free(hits);
    }
    if (!ids) {
        return WAMP_ENOMEM;
    }
    if (json_array_size(ids) == 0) {
        json_decref(ids);
        return rt_local_reply_value(reply, json_null()); /* spec: null when nothing matches */
    }
    return rt_local_reply_value(reply, ids);
}

static wamp_err proc_sub_get(void *ctx, rt_session *caller, const json_t *args,
                             const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const rt_subscription *sub = arg_sub(ctx, args, kwargs, reply, &err);
    return sub ? rt_local_reply_value(reply, sub_details(ctx, sub)) : err;
}

static wamp_err proc_sub_list_subscribers(void *ctx, rt_session *caller, const json_t *args,
                                          const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const rt_subscription *sub = arg_sub(ctx, args, kwargs, reply, &err);
    if (!sub) {
        return err;
    }
    json_t *ids = json_array();
    size_t n = rt_subscription_subscriber_count(sub);
    for (size_t i = 0; ids && i < n; i++) {
        if (json_array_append_new(
                    ids, json_integer((json_int_t)rt_subscription_subscriber(sub, i)->id)) != 0) {
            json_decref(ids);
            ids = NULL;
        }
    }
    return rt_local_reply_value(reply, ids);
}

static wamp_err proc_sub_count_subscribers(void *ctx, rt_session *caller, const json_t *args,
                                           const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const rt_subscription *sub = arg_sub(ctx, args, kwargs, reply, &err);
    return sub ? rt_local_reply_value(
                         reply, json_integer((json_int_t)rt_subscription_subscriber_count(sub)))
               : err;
}

/* --- wamp.registration.* -------------------------------------------------------------------- */

/* Router-local procedures and wamp.* registrations are not shown. */
static bool reg_visible(const rt_reg_info *r)
{
    return r->n_callees > 0 && !is_protected(r->uri);
}

static bool list_one_reg(void *ctx, const rt_reg_info *r)
{
    list_ctx *lc = ctx;
    if (!reg_visible(r)) {
        return true;
    }
    bool member = !lc->only;
    if (!member) {
        uint64_t *ids = malloc(r->n_callees * sizeof(*ids));
        if (!ids) {
            lc->oom = true;
            return false;
        }
        size_t n = rt_dealer_callees(lc->dealer, r->id, ids, r->n_callees);
        for (size_t i = 0; !member && i < n && i < r->n_callees; i++) {
            member = ids[i] == lc->only->id;
        }
        free(ids);
    }
    return !member || list_add(lc, r->match, r->id);
}

static wamp_err proc_reg_list(void *ctx, rt_session *caller, const json_t *args,
                              const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    list_ctx lc = {.dealer = rt_realm_dealer(ctx)};
    if (!arg_list_session(ctx, args, kwargs, &lc.only, reply, &err)) {
        return err;
    }
    if (!(lc.lists = by_match_lists())) {
        return WAMP_ENOMEM;
    }
    rt_dealer_foreach(lc.dealer, list_one_reg, &lc);
    if (lc.oom) {
        json_decref(lc.lists);
        return WAMP_ENOMEM;
    }
    return rt_local_reply_value(reply, lc.lists);
}

/* The visible registration with this id argument (*info filled), or false with *reply holding
 * the error. */
static bool arg_reg(rt_realm *r, const json_t *args, const json_t *kwargs, rt_reg_info *info,
                    rt_local_reply *reply, wamp_err *err)
{
    uint64_t id;
    if (!arg_id(args, kwargs, 0, "registration", &id, reply, err)) {
        return false;
    }
    if (!rt_dealer_get(rt_realm_dealer(r), id, info) || !reg_visible(info)) {
        *err = rt_local_reply_error(reply, WAMP_ERROR_NO_SUCH_REGISTRATION,
                                    "no registration %llu on this realm", (unsigned long long)id);
        return false;
    }
    return true;
}

static json_t *reg_details(rt_realm *r, const rt_reg_info *info)
{
    return json_pack("{s:I, s:o, s:s, s:s, s:s}", "id", (json_int_t)info->id, "created",
                     iso_time(rt_realm_router(r), info->created_us), "uri", info->uri, "match",
                     wamp_match_name(info->match), "invoke", info->invoke);
}

/* A registration id as a result: the id, or null if none or invisible. */
static json_t *reg_id_or_null(rt_realm *r, uint64_t id)
{
    rt_reg_info info;
    return id && rt_dealer_get(rt_realm_dealer(r), id, &info) && reg_visible(&info)
                   ? json_integer((json_int_t)id)
                   : json_null();
}

static wamp_err proc_reg_lookup(void *ctx, rt_session *caller, const json_t *args,
                                const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const char *uri;
    wamp_match match;
    if (!rt_local_arg_string(args, kwargs, 0, "procedure", &uri, reply, &err) ||
        !arg_match(args, kwargs, 1, &match, reply, &err)) {
        return err;
    }
    return rt_local_reply_value(
            reply, reg_id_or_null(ctx, rt_dealer_lookup(rt_realm_dealer(ctx), uri, match)));
}

static wamp_err proc_reg_match(void *ctx, rt_session *caller, const json_t *args,
                               const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    const char *uri;
    if (!rt_local_arg_string(args, kwargs, 0, "procedure", &uri, reply, &err)) {
        return err;
    }
    return rt_local_reply_value(reply,
                                reg_id_or_null(ctx, rt_dealer_match(rt_realm_dealer(ctx), uri)));
}

static wamp_err proc_reg_get(void *ctx, rt_session *caller, const json_t *args,
                             const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    rt_reg_info info;
    return arg_reg(ctx, args, kwargs, &info, reply, &err)
                   ? rt_local_reply_value(reply, reg_details(ctx, &info))
                   : err;
}

static wamp_err proc_reg_list_callees(void *ctx, rt_session *caller, const json_t *args,
                                      const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    rt_reg_info info;
    if (!arg_reg(ctx, args, kwargs, &info, reply, &err)) {
        return err;
    }
    uint64_t *ids = malloc(info.n_callees * sizeof(*ids));
    json_t *list = ids ? json_array() : NULL;
    size_t n = ids ? rt_dealer_callees(rt_realm_dealer(ctx), info.id, ids, info.n_callees) : 0;
    for (size_t i = 0; list && i < n && i < info.n_callees; i++) {
        if (json_array_append_new(list, json_integer((json_int_t)ids[i])) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    free(ids);
    return rt_local_reply_value(reply, list);
}

static wamp_err proc_reg_count_callees(void *ctx, rt_session *caller, const json_t *args,
                                       const json_t *kwargs, rt_local_reply *reply)
{
    (void)caller;
    wamp_err err = WAMP_OK;
    rt_reg_info info;
    return arg_reg(ctx, args, kwargs, &info, reply, &err)
                   ? rt_local_reply_value(reply, json_integer((json_int_t)info.n_callees))
                   : err;
}

/* --- Attach --------------------------------------------------------------------------------- */

static const struct {
    const char *uri;
    rt_local_proc_fn fn;
} meta_procs[] = {
        {"wamp.session.count", proc_session_count},
        {"wamp.session.list", proc_session_list},
        {"wamp.session.get", proc_session_get},
        {"wamp.session.kill", proc_session_kill},
        {"wamp.session.kill_by_authid", proc_kill_by_authid},
        {"wamp.session.kill_by_authrole", proc_kill_by_authrole},
        {"wamp.session.kill_all", proc_kill_all},
        {"wamp.subscription.list", proc_sub_list},
        {"wamp.subscription.lookup", proc_sub_lookup},
        {"wamp.subscription.match", proc_sub_match},
        {"wamp.subscription.get", proc_sub_get},
        {"wamp.subscription.list_subscribers", proc_sub_list_subscribers},
        {"wamp.subscription.count_subscribers", proc_sub_count_subscribers},
        {"wamp.registration.list", proc_reg_list},
        {"wamp.registration.lookup", proc_reg_lookup},
        {"wamp.registration.match", proc_reg_match},
        {"wamp.registration.get", proc_reg_get},
        {"wamp.registration.list_callees", proc_reg_list_callees},
        {"wamp.registration.count_callees", proc_reg_count_callees},
};

rt_local_proc_fn rt_meta_proc(const char *uri)
{
    for (size_t j = 0; j < sizeof(meta_procs) / sizeof(meta_procs[0]); j++) {
        if (strcmp(meta_procs[j].uri, uri) == 0) {
            return meta_procs[j].fn;
        }
    }
    return NULL;
}

/* --- Events --------------------------------------------------------------------------------- */

struct rt_meta_event {
    rt_realm *realm;
    const char *topic; /* static */
    json_t *args;      /* owned */
};

/* The meta API's observer context, one per router: the events of the action being handled,
 * published after its reply. Owned by the router's observer list (meta_detach()). */
typedef struct rt_meta {
    rt_router *rt;
    struct rt_meta_event *q; /* owned, n used of cap */
    size_t n, cap;
} rt_meta;

/* Whether anyone would receive an event on topic (the one check made when nobody listens). A
 * leaving session is not counted: it is gone when the event goes out. */
static bool listened(rt_realm *r, rt_session *s, const char *topic)
{
    rt_broker *b = rt_realm_broker(r);
    rt_session *ex = s && s->leaving ? s : NULL;
    return rt_broker_subscription_count(b) > 0 &&
           rt_broker_receiver_count(b, ex, topic, ex != NULL) > 0;
}

/* Queues an event for meta_replied() (consumes args_take; NULL = out of memory). */
static void enqueue(rt_meta *mt, rt_realm *r, const char *topic, json_t *args_take)
{
    rt_router *rt = mt->rt;
    if (args_take && mt->n == mt->cap) {
        size_t ncap = mt->cap ? mt->cap * 2 : 8;
        struct rt_meta_event *nq = realloc(mt->q, ncap * sizeof(*nq));
        if (nq) {
            mt->q = nq;
            mt->cap = ncap;
        }
    }
    if (!args_take || mt->n == mt->cap) {
        RT_LOG_WARN(0, "meta event %s not published: out of memory", topic);
        json_decref(args_take);
        return;
    }
    mt->q[mt->n++] = (struct rt_meta_event){r, topic, args_take};
    rt->cur.meta_pending = true; /* the action's reply is not its last message */
    rt_observers_defer(&rt->observers);
}

/* The action's reply is out: publishes the queued events in order, with the action that caused
 * them still open; the last EVENT that reaches anyone completes the traced action. */
static void meta_replied(void *ctx, rt_router *rt)
{
    rt_meta *mt = ctx;
    size_t n = mt->n;
    mt->n = 0;
    rt->cur.meta_pending = false; /* from here on, the last EVENT completes the action */
    size_t last = SIZE_MAX;
    if (trace_hub_is_active(rt->hub) && rt->cur.set) {
        for (size_t i = n; i-- > 0 && last == SIZE_MAX;) {
            const struct rt_meta_event *e = &mt->q[i];
            if (rt_broker_receiver_count(rt_realm_broker(e->realm), NULL, e->topic, false) > 0) {
                last = i;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct rt_meta_event *e = &mt->q[i];
        if (rt_broker_publish_meta(rt_realm_broker(e->realm), e->topic, e->args, i == last) !=
            WAMP_OK) {
            RT_LOG_WARN(0, "meta event %s not published: out of memory", e->topic);
        }
        e->args = NULL;
    }
}

/* Drops queued events and frees the context (the router's observer list is finalized). */
static void meta_detach(void *ctx)
{
    rt_meta *mt = ctx;
    for (size_t i = 0; i < mt->n; i++) {
        json_decref(mt->q[i].args);
    }
    free(mt->q);
    free(mt);
}

static void meta_session_joined(void *ctx, rt_realm *r, rt_session *s)
{
    if (listened(r, NULL, RT_META_SESSION_ON_JOIN)) {
        json_t *d = session_details(s);
        enqueue(ctx, r, RT_META_SESSION_ON_JOIN, d ? json_pack("[o]", d) : NULL);
    }
}

static void meta_session_left(void *ctx, rt_realm *r, rt_session *s)
{
    if (listened(r, s, RT_META_SESSION_ON_LEAVE)) {
        enqueue(ctx, r, RT_META_SESSION_ON_LEAVE,
                json_pack("[I, s?, s?]", (json_int_t)s->id, s->authid, s->authrole));
    }
}

/* (session, id) events. */
static void enqueue_pair(rt_meta *mt, rt_realm *r, rt_session *s, const char *topic, uint64_t id)
{
    if (listened(r, s, topic)) {
        enqueue(mt, r, topic, json_pack("[I, I]", (json_int_t)s->id, (json_int_t)id));
    }
}

/* on_create (if created), then on_subscribe. */
static void meta_subscription_added(void *ctx, rt_realm *r, rt_session *s,
                                    const rt_subscription *sub, bool created)
{
    if (is_protected(rt_subscription_uri(sub))) {
        return;
    }
    if (created && listened(r, NULL, RT_META_SUBSCRIPTION_ON_CREATE)) {
        json_t *d = sub_details(r, sub);
        enqueue(ctx, r, RT_META_SUBSCRIPTION_ON_CREATE,
                d ? json_pack("[I, o]", (json_int_t)s->id, d) : NULL);
    }
    enqueue_pair(ctx, r, s, RT_META_SUBSCRIPTION_ON_SUBSCRIBE, rt_subscription_id(sub));
}

/* on_unsubscribe, then on_delete (if deleted). */
static void meta_subscription_removed(void *ctx, rt_realm *r, rt_session *s,
                                      const rt_subscription *sub, bool deleted)
{
    if (is_protected(rt_subscription_uri(sub))) {
        return;
    }
    enqueue_pair(ctx, r, s, RT_META_SUBSCRIPTION_ON_UNSUB, rt_subscription_id(sub));
    if (deleted) {
        enqueue_pair(ctx, r, s, RT_META_SUBSCRIPTION_ON_DELETE, rt_subscription_id(sub));
    }
}

static void meta_registration_added(void *ctx, rt_realm *r, rt_session *s, uint64_t reg_id,
                                    bool created)
{
    rt_reg_info info;
    if (!rt_dealer_get(rt_realm_dealer(r), reg_id, &info) || !reg_visible(&info)) {
        return;
    }
    if (created && listened(r, NULL, RT_META_REGISTRATION_ON_CREATE)) {
        json_t *d = reg_details(r, &info);
        enqueue(ctx, r, RT_META_REGISTRATION_ON_CREATE,
                d ? json_pack("[I, o]", (json_int_t)s->id, d) : NULL);
    }
    enqueue_pair(ctx, r, s, RT_META_REGISTRATION_ON_REGISTER, reg_id);
}

static void meta_registration_removed(void *ctx, rt_realm *r, rt_session *s, uint64_t reg_id,
                                      const char *uri, bool deleted)
{
    if (is_protected(uri)) {
        return;
    }
    enqueue_pair(ctx, r, s, RT_META_REGISTRATION_ON_UNREG, reg_id);
    if (deleted) {
        enqueue_pair(ctx, r, s, RT_META_REGISTRATION_ON_DELETE, reg_id);
    }
}

wamp_err rt_meta_attach(rt_router *rt)
{
    rt_meta *mt = calloc(1, sizeof(*mt));
    if (!mt) {
        return WAMP_ENOMEM;
    }
    mt->rt = rt;
    const rt_observer router_obs = {
            .ctx = mt, .action_replied = meta_replied, .detach = meta_detach};
    if (rt_observers_add(&rt->observers, &router_obs) != WAMP_OK) {
        free(mt);
        return WAMP_ENOMEM;
    }
    const rt_observer realm_obs = {.ctx = mt,
                                   .session_joined = meta_session_joined,
                                   .session_left = meta_session_left,
                                   .subscription_added = meta_subscription_added,
                                   .subscription_removed = meta_subscription_removed,
                                   .registration_added = meta_registration_added,
                                   .registration_removed = meta_registration_removed};
    for (size_t i = 0; i < rt->n_realms; i++) {
        rt_realm *r = rt->realms[i];
        if (rt_observers_add(rt_realm_observers(r), &realm_obs) != WAMP_OK) {
            return WAMP_ENOMEM;
        }
        if (!rt_realm_has_meta_api(r)) {
            continue;
        }
        for (size_t j = 0; j < sizeof(meta_procs) / sizeof(meta_procs[0]); j++) {
            wamp_err err = rt_dealer_register_local(rt_realm_dealer(r), meta_procs[j].uri,
                                                    meta_procs[j].fn, r);
            if (err != WAMP_OK) {
                return err;
            }
        }
    }
    return WAMP_OK;
}
