/* rt_session_fsm.c: the session state machine: what a session receives, and its joining and
 * leaving (rt_session.h declares its entry points; rt_session.c holds the outgoing path).
 *
 * States (spec "Session Lifecycle"): ESTABLISHED waits for HELLO; JOINED routes messages to the
 * realm's broker and dealer; CLOSING has sent GOODBYE (router shutdown) and waits for the peer's
 * GOODBYE; CLOSED has asked the transport to close and ignores all input. After a GOODBYE
 * exchange initiated by the client the connection returns to ESTABLISHED and may HELLO again.
 * Joins and leaves are reported to the realm's observers (rt_observer.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "rt_broker.h"
#include "rt_core_int.h"
#include "rt_dealer.h"
#include "rt_log.h"
#include "rt_options.h"
#include "rt_realm.h"
#include "rt_session.h"
#include "rt_wirelog.h"
#include "wamp_codec.h"
#include "wamp_id.h"
#include "wamp_uri.h"
#include "wamp_wr.h"

#define RT_AGENT "wampscope-" RT_VERSION

/* A message the session cannot go on without (WELCOME, CHALLENGE) is longer than the client
 * can receive: ABORT wamp.error.payload_size_exceeded (spec: "a message could not be delivered
 * due to transport payload size limits"), which is short enough for any client, then close. */
static void abort_too_big(rt_session *s, const char *what)
{
    char why[128];
    snprintf(why, sizeof(why), "the %s message exceeds the maximum message length of %zu bytes",
             what, s->peer.max_message_size);
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(s->rt),
                     "WELCOME/CHALLENGE too big", s->id, "%s for %s: %s; aborting", what,
                     s->peer.addr, why);
    rt_session_send_abort(s, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED, why);
    rt_session_close(s, 1009, "message too big", false);
}

/* --- Joining and leaving --------------------------------------------------------------------- */

/* Crossbar-style anonymous authid: five groups of four base32 characters. */
static char *make_anonymous_authid(void)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    char *id = malloc(25);
    if (!id) {
        return NULL;
    }
    unsigned char rnd[20];
    randombytes_buf(rnd, sizeof(rnd));
    size_t o = 0;
    for (size_t i = 0; i < 20; i++) {
        if (i && i % 4 == 0) {
            id[o++] = '-';
        }
        id[o++] = alphabet[rnd[i] & 31];
    }
    id[o] = '\0';
    return id;
}

static json_t *welcome_roles(const rt_realm *realm)
{
    /* Announce exactly what is implemented (spec "Feature Announcement"). */
    json_t *broker = json_pack("{s:b, s:b, s:b, s:b, s:b, s:b}", "publisher_exclusion", 1,
                               "pattern_based_subscription", 1, "subscriber_blackwhite_listing", 1,
                               "publisher_identification", 1, "event_retention", 1,
                               "payload_passthru_mode", 1);
    json_t *dealer =
            json_pack("{s:b, s:b, s:b, s:b, s:b, s:b, s:b}", "pattern_based_registration", 1,
                      "shared_registration", 1, "progressive_call_results", 1, "call_canceling", 1,
                      "call_timeout", 1, "caller_identification", 1, "payload_passthru_mode", 1);
    if (rt_realm_has_meta_api(realm)) { /* rt_meta.h */
        json_object_set_new(broker, "session_meta_api", json_true());
        json_object_set_new(broker, "subscription_meta_api", json_true());
        json_object_set_new(dealer, "session_meta_api", json_true());
        json_object_set_new(dealer, "registration_meta_api", json_true());
    }
    return json_pack("{s:{s:o}, s:{s:o}}", "broker", "features", broker, "dealer", "features",
                     dealer);
}

/* First half of leaving the realm: s leaves the broker and the dealer, then
 * wamp.session.on_leave is queued, while s still has its realm and identity. Idempotent. */
static void session_detach(rt_session *s)
{
    if (!s->realm || s->leaving) {
        return;
    }
    s->leaving = true;
    rt_broker_on_leave(rt_realm_broker(s->realm), s);
    rt_dealer_on_leave(rt_realm_dealer(s->realm), s);
    rt_observers_session_left(rt_realm_observers(s->realm), s->realm, s);
}

static void session_leave(rt_session *s)
{
    if (!s->realm) {
        return;
    }
    session_detach(s);
    s->leaving = false;
    rt_realm_member_remove(s->realm, s);
    RT_LOG_DEBUG(s->id, "left realm %s", rt_realm_name(s->realm));
    trace_peer_unref(&s->tpeer);
    s->tr_realm = RT_TRACE_REALM_UNKNOWN;
    trace_str_unref(&s->tr_uri);
    s->realm = NULL;
    free(s->authid);
    free(s->authrole);
    s->authid = NULL;
    s->authrole = NULL;
}

/* Joins realm as authid (taken: freed on failure too) / role and sends WELCOME. authextra_take
 * (may be NULL) goes into WELCOME.Details.authextra. */
static wamp_err session_join(rt_session *s, rt_realm *realm, char *authid_take, const char *role,
                             rt_auth_method method, json_t *authextra_take)
{
    rt_router *rt = s->rt;
    s->authid = authid_take;
    s->authrole = strdup(role);
    if (!s->authid || !s->authrole) {
        json_decref(authextra_take);
        return WAMP_ENOMEM;
    }
    json_t *details = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "realm",
                                rt_realm_name(realm), "authid", s->authid, "authrole", s->authrole,
                                "authmethod", rt_auth_method_name(method), "authprovider", "static",
                                "agent", RT_AGENT, "roles", welcome_roles(realm));
    if (!details || (authextra_take && json_object_set_new(details, "authextra", authextra_take))) {
        json_decref(details);
        return WAMP_ENOMEM;
    }
    /* The WELCOME must reach the client before anything else happens: one that the client
     * cannot receive (longer than the length a RawSocket client announced) aborts the joining
     * instead of leaving a session the client does not know it has. */
    rt_encoded welcome;
    rt_encoded_init(&welcome, wamp_msg_new_welcome(s->id, details));
    wamp_err err = welcome.msg ? rt_session_encode_for(s, &welcome) : WAMP_ENOMEM;
    if (err == WAMP_OK && rt_session_exceeds_peer_limit(s, &welcome)) {
        (void)rt_session_send_encoded(s, &welcome); /* logged, counted, traced "too_big" */
        rt_encoded_fini(&welcome);
        free(s->authid);
        free(s->authrole);
        s->authid = NULL;
        s->authrole = NULL;
        abort_too_big(s, "WELCOME");
        return WAMP_OK;
    }
    if (err != WAMP_OK) {
        rt_encoded_fini(&welcome);
        return err;
    }
    rt_auth_pending_free(s->auth);
    s->auth = NULL;
    s->realm = realm;
    s->authmethod = method;
    rt_realm_member_add(realm, s);
    rt_list_remove(&s->in_wait);
    s->state = RT_SESSION_JOINED;
    RT_LOG_LIMITED_N(RT_LOG_BURST_SESSION, RT_LOG_LEVEL_INFO, rt_router_now_us(rt), "joined realm",
                     s->id, "joined realm %s as %s/%s (%s, %s, %s)", rt_realm_name(realm),
                     s->authid, s->authrole, rt_auth_method_name(method), wamp_ser_name(s->ser),
                     s->peer.addr);
    /* before WELCOME, which completes the opening exchange */
    rt_observers_session_joined(rt_realm_observers(realm), realm, s);
    rt_observers_action_last(&rt->observers, rt);
    err = rt_session_send_encoded(s, &welcome);
    rt_encoded_fini(&welcome);
    return err;
}

static bool session_limits_allow(rt_session *s, rt_realm *realm);

wamp_err rt_session_join_internal(rt_session *s, const char *realm_name, const char *authid,
                                  const char *role)
{
    RT_ASSERT(s->state == RT_SESSION_ESTABLISHED);
    rt_realm *realm = rt_router_find_realm(s->rt, realm_name);
    if (!realm || !rt_realm_has_role(realm, role)) {
        return WAMP_ENOTFOUND;
    }
    if (!session_limits_allow(s, realm)) {
        return WAMP_OK; /* ABORT queued and the session closing, as for a HELLO */
    }
    return session_join(s, realm, strdup(authid), role, RT_AUTH_ANONYMOUS, NULL);
}

/* A failed authentication (ticket, wampcra, cryptosign): one log line (no secret), then ABORT
 * after wampscope.limits.auth_failure_delay, sent from the router tick. Until then the session
 * waits in RT_SESSION_AUTH_FAILED and ignores its input. */
static wamp_err auth_failed(rt_session *s, rt_auth_method method, const rt_auth_denial *d)
{
    rt_router *rt = s->rt;
    /* The authid is the client's text: one line, bounded, in the log. */
    const char *authid = s->auth ? rt_auth_pending_authid(s->auth) : NULL;
    char shown[68];
    size_t n = 0;
    for (const char *c = authid ? authid : ""; *c && n < sizeof(shown) - 4; c++) {
        shown[n++] = ((unsigned char)*c < 0x20 || *c == 0x7f) ? '?' : *c;
    }
    if (authid && strlen(authid) > n) {
        memcpy(shown + n, "...", 3);
        n += 3;
    }
    shown[n] = '\0';
    RT_LOG_LIMITED_N(
            RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt), "authentication failed",
            s->id, "authentication failed (%s, authid \"%s\", realm %s) from %s: %s: %s",
            rt_auth_method_name(method), shown, s->auth ? rt_auth_pending_realm(s->auth) : "",
            s->peer.addr, d->reason, d->message);
    uint32_t delay_ms = rt->cfg->limits.auth_failure_delay_ms;
    if (delay_ms == 0) {
        rt_session_send_abort(s, d->reason, d->message);
        rt_session_close(s, 1000, "authentication failed", false);
        return WAMP_OK;
    }
    rt_auth_denial *copy = malloc(sizeof(*copy));
    if (!copy) {
        return WAMP_ENOMEM;
    }
    *copy = *d;
    free(s->denial);
    s->denial = copy;
    s->state = RT_SESSION_AUTH_FAILED;
    s->abort_at_us = rt_router_now_us(rt) + (uint64_t)delay_ms * 1000;
    rt_list_remove(&s->in_wait);
    rt_list_add_tail(&rt->auth_failed, &s->in_wait);
    return WAMP_OK;
}

void rt_session_on_auth_delay_over(rt_session *s)
{
    rt_router *rt = s->rt;
    rt_list_remove(&s->in_wait);
    if (s->state != RT_SESSION_AUTH_FAILED || !s->denial) {
        return;
    }
    /* The ABORT ends the session-opening exchange: it carries the HELLO's correlation. */
    if (trace_hub_is_active(rt->hub) && s->hello_corr_set) {
        rt_trace_action_open(rt, s->hello_corr, NULL);
        rt->cur.realm = s->auth ? rt_auth_pending_realm(s->auth) : NULL;
    }
    rt_session_send_abort(s, s->denial->reason, s->denial->message);
    rt_session_close(s, 1000, "authentication failed", false);
    if (rt->cur.set) {
        rt_trace_action_close(rt);
    }
    rt->cur.last = false;
}

/* Starts a ticket / wampcra / cryptosign handshake: CHALLENGE, or a (delayed) ABORT. */
static wamp_err auth_begin(rt_session *s, const wamp_msg *m, rt_realm *realm,
                           const rt_auth_config *cfg, rt_auth_method method)
{
    rt_auth_pending_free(s->auth);
    s->auth = rt_auth_pending_new(method, cfg, rt_realm_name(realm));
    if (!s->auth) {
        return WAMP_ENOMEM;
    }
    json_t *extra = NULL;
    rt_auth_denial d;
    wamp_err err = rt_auth_begin(s->auth, m->dict, s->id, rt_trace_wall_ns(), &extra, &d);
    if (err != WAMP_OK) {
        return err;
    }
    if (!extra) {
        return auth_failed(s, method, &d);
    }
    /* Crossbar (pending.py _assign_principal): the principal's role must exist on the realm. */
    const char *role = rt_auth_pending_role(s->auth);
    if (!role || !rt_realm_has_role(realm, role)) {
        json_decref(extra);
        d.reason = WAMP_ERROR_NO_SUCH_ROLE;
        snprintf(d.message, sizeof(d.message), "role \"%s\" does not exist on realm %s",
                 role ? role : "", rt_realm_name(realm));
        return auth_failed(s, method, &d);
    }
    json_t *challenge = json_pack("[i, s, o]", (json_int_t)WAMP_MSG_CHALLENGE,
                                  rt_auth_method_name(method), extra);
    if (!challenge) {
        return WAMP_ENOMEM;
    }
    s->state = RT_SESSION_CHALLENGED; /* still in rt->greeting: hello_timeout covers it all */
    RT_LOG_DEBUG(s->id, "%s challenge sent to %s", rt_auth_method_name(method), s->peer.addr);
    err = rt_session_send(s, challenge);
    if (err == WAMP_ETOOBIG) {
        abort_too_big(s, "CHALLENGE");
        return WAMP_OK;
    }
    return err;
}

static wamp_err on_authenticate(rt_session *s, const wamp_msg *m)
{
    rt_auth_method method = rt_auth_pending_method(s->auth);
    rt_auth_denial d;
    if (!rt_auth_verify(s->auth, m->uri, &d)) {
        return auth_failed(s, method, &d);
    }
    rt_realm *realm = rt_router_find_realm(s->rt, rt_auth_pending_realm(s->auth));
    const char *role = rt_auth_pending_role(s->auth);
    RT_ASSERT(realm && role);
    /* The session limits count joined sessions only: sessions that passed the check at HELLO
     * and authenticated since may have filled the room, so it is checked again here. */
    if (!session_limits_allow(s, realm)) {
        return WAMP_OK;
    }
    char *authid = strdup(rt_auth_pending_authid(s->auth));
    json_t *authextra = NULL;
    if (method == RT_AUTH_CRYPTOSIGN) {
        /* Crossbar's WELCOME.Details.authextra for cryptosign: where the session landed. */
        const rt_config *cfg = s->rt->cfg;
        authextra = json_pack("{s:s?, s:s?, s:s, s:I}", "x_cb_node", cfg->node_id, "x_cb_worker",
                              cfg->worker_id, "x_cb_peer", s->peer.addr, "x_cb_pid",
                              (json_int_t)getpid());
        if (!authextra) {
            free(authid);
            return WAMP_ENOMEM;
        }
    }
    return session_join(s, realm, authid, role, method, authextra);
}

/* limits.max_sessions / max_sessions_per_realm, checked at HELLO: false (ABORT sent, closing)
 * when joining realm would exceed one. Management sessions count too. */
static bool session_limits_allow(rt_session *s, rt_realm *realm)
{
    const rt_limits *lim = &s->rt->cfg->limits;
    size_t in_realm = rt_realm_member_count(realm), total = 0;
    for (size_t i = 0; i < s->rt->n_realms; i++) {
        total += rt_realm_member_count(s->rt->realms[i]);
    }
    const char *limit = NULL;
    size_t value = 0;
    if (lim->max_sessions && total >= lim->max_sessions) {
        limit = "max_sessions";
        value = lim->max_sessions;
    } else if (lim->max_sessions_per_realm && in_realm >= lim->max_sessions_per_realm) {
        limit = "max_sessions_per_realm";
        value = lim->max_sessions_per_realm;
    }
    if (!limit) {
        return true;
    }
    char why[96];
    snprintf(why, sizeof(why), "limit reached: wampscope.limits.%s (%zu)", limit, value);
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(s->rt),
                     "HELLO refused by a limit", s->id, "HELLO for realm %s from %s refused: %s",
                     rt_realm_name(realm), s->peer.addr, why);
    s->rt->stats.limit_refusals++;
    rt_session_send_abort(s, RT_ERROR_LIMIT_REACHED, why);
    rt_session_close(s, 1000, "limit reached", false);
    return false;
}

/* HELLO.Details.roles.<role>.features.<feature> is true. */
static bool role_feature(const json_t *roles, const char *role, const char *feature)
{
    return json_is_true(
            json_object_get(json_object_get(json_object_get(roles, role), "features"), feature));
}

/* The HELLO.Details fields the router reads as text (without NUL bytes: jansson strings may hold
 * them, and a C string would end at the first, "joe\u0000x" read as "joe"), where present: authid,
 * authrole (strings), authmethods (a list of strings), authextra.pubkey and
 * authextra.channel_binding (strings; channel_binding may be null). NULL if they are fine, else
 * what is wrong (the protocol violation's reason). */
static const char *hello_bad_field(const json_t *details)
{
    static const char *const strings[] = {"authid", "authrole"};
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        const json_t *v = json_object_get(details, strings[i]);
        if (v && !rt_options_is_plain_string(v)) {
            return i == 0 ? "HELLO.Details.authid must be a string without NUL bytes"
                          : "HELLO.Details.authrole must be a string without NUL bytes";
        }
    }
    const json_t *methods = json_object_get(details, "authmethods");
    if (methods && !json_is_array(methods)) {
        return "HELLO.Details.authmethods must be a list of strings";
    }
    size_t i;
    const json_t *v;
    json_array_foreach(methods, i, v)
    {
        if (!rt_options_is_plain_string(v)) {
            return "HELLO.Details.authmethods must be a list of strings without NUL bytes";
        }
    }
    const json_t *extra = json_object_get(details, "authextra");
    if (extra && !json_is_object(extra)) {
        return "HELLO.Details.authextra must be a dict";
    }
    const json_t *pk = json_object_get(extra, "pubkey");
    const json_t *cb = json_object_get(extra, "channel_binding");
    if ((pk && !rt_options_is_plain_string(pk)) ||
        (cb && !json_is_null(cb) && !rt_options_is_plain_string(cb))) {
        return "HELLO.Details.authextra.pubkey and channel_binding must be strings without NUL "
               "bytes";
    }
    return NULL;
}

/* Long: HELLO's checks in the spec's and Crossbar's order (shutdown, roles, realm, session
 * limits, management access, authentication method), each answered with its own ABORT before the
 * session joins or its authentication starts. */
static wamp_err on_hello(rt_session *s, const wamp_msg *m)
{
    rt_router *rt = s->rt;
    if (rt->shutting_down) {
        rt_session_send_abort(s, WAMP_CLOSE_SYSTEM_SHUTDOWN, "the router is shutting down");
        rt_session_close(s, 1001, "shutting down", false);
        return WAMP_OK;
    }
    json_t *roles = json_object_get(m->dict, "roles");
    if (!json_is_object(roles) || json_object_size(roles) == 0) {
        rt_session_protocol_violation(s, "HELLO.Details.roles must be a non-empty dict");
        return WAMP_OK;
    }
    s->callee_call_canceling = role_feature(roles, "callee", "call_canceling");
    s->ppt_caller = role_feature(roles, "caller", "payload_passthru_mode");
    s->ppt_callee = role_feature(roles, "callee", "payload_passthru_mode");
    s->ppt_publisher = role_feature(roles, "publisher", "payload_passthru_mode");
    s->ppt_subscriber = role_feature(roles, "subscriber", "payload_passthru_mode");
    const char *bad = hello_bad_field(m->dict);
    if (bad) {
        rt_session_protocol_violation(s, bad);
        return WAMP_OK;
    }
    const json_t *authmethods = json_object_get(m->dict, "authmethods");
    rt_realm *realm =
            wamp_uri_is_valid(m->uri, WAMP_URI_LOOSE) ? rt_router_find_realm(rt, m->uri) : NULL;
    if (!realm) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                         "HELLO for an unknown realm", s->id,
                         "HELLO for unknown realm \"%s\" from %s", m->uri, s->peer.addr);
        rt_session_send_abort(s, WAMP_ERROR_NO_SUCH_REALM, "no such realm");
        rt_session_close(s, 1000, "no such realm", false);
        return WAMP_OK;
    }
    if (!session_limits_allow(s, realm)) {
        return WAMP_OK;
    }
    const char *anon_role = s->anonymous_role;
    const rt_auth_config *auth_cfg = s->auth_cfg;
    bool is_mgmt = rt->cfg->mgmt_enabled && strcmp(rt_realm_name(realm), rt->cfg->mgmt_realm) == 0;
    rt_auth_method method;
    if (is_mgmt && !rt->cfg->mgmt_auth) {
        /* Protected mode (mgmt/README.md "Access"): with no management credential, the
         * management realm takes anonymous sessions, as "admin", only from peers in
         * wampscope.management.trusted_networks (default: loopback). */
        if (!rt_config_peer_is_trusted(rt->cfg, s->peer.addr) || s->peer.foreign_origin) {
            /* A web page of another origin is refused whatever its address: any page a browser
             * on a trusted host opens could otherwise drive the router. */
            RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                             "management realm refused", s->id,
                             "management realm refused to %s peer %s "
                             "(wampscope.management.%s)",
                             s->peer.foreign_origin ? "a web page of another origin," : "untrusted",
                             s->peer.addr,
                             s->peer.foreign_origin ? "allowed_origins" : "trusted_networks");
            rt_session_send_abort(s, WAMP_ERROR_NOT_AUTHORIZED,
                                  s->peer.foreign_origin
                                          ? "the management realm accepts anonymous sessions "
                                            "from web pages of the router's own origin only"
                                          : "the management realm accepts anonymous sessions "
                                            "from trusted networks only");
            rt_session_close(s, 1000, "not authorized", false);
            return WAMP_OK;
        }
        anon_role = RT_MGMT_ROLE;
        method = RT_AUTH_ANONYMOUS;
    } else {
        if (is_mgmt) {
            /* Management credentials replace the transport's auth on the management realm. */
            anon_role = NULL;
            auth_cfg = rt->cfg->mgmt_auth;
        }
        method = rt_auth_pick(authmethods, auth_cfg, anon_role != NULL);
    }
    if (method == RT_AUTH_NONE) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                         "HELLO without an acceptable authmethod", s->id,
                         "HELLO from %s: no authentication method is acceptable", s->peer.addr);
        rt_session_send_abort(s, WAMP_ERROR_NO_AUTH_METHOD, "no acceptable authentication method");
        rt_session_close(s, 1000, "no auth method", false);
        return WAMP_OK;
    }
    if (method != RT_AUTH_ANONYMOUS) {
        return auth_begin(s, m, realm, auth_cfg, method);
    }
    if (!rt_realm_has_role(realm, anon_role)) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                         "HELLO for a missing role", s->id,
                         "HELLO from %s: role \"%s\" does not exist on realm %s", s->peer.addr,
                         anon_role, rt_realm_name(realm));
        rt_session_send_abort(s, WAMP_ERROR_NO_SUCH_ROLE, "no such role");
        rt_session_close(s, 1000, "no such role", false);
        return WAMP_OK;
    }
    return session_join(s, realm, make_anonymous_authid(), anon_role, RT_AUTH_ANONYMOUS, NULL);
}

void rt_session_kill(rt_session *s, const char *reason, const char *message)
{
    rt_router *rt = s->rt;
    if (s->state != RT_SESSION_JOINED) {
        return;
    }
    json_t *details = message ? json_pack("{s:s}", "message", message) : NULL;
    wamp_err err = rt_session_send(s, wamp_msg_new_goodbye(details, reason));
    if (err == WAMP_ETOOBIG || err == WAMP_EINVAL) {
        /* The peer cannot be told (a long kill message): closing tells it. */
        rt_session_close(s, 1008, "killed", false);
        return;
    }
    if (s->state != RT_SESSION_JOINED) {
        return; /* the send closed it (slow consumer): it leaves when the connection goes */
    }
    /* Spec "GOODBYE": the peer answers with GOODBYE, then the connection is closed (CLOSING
     * state). It leaves the realm now: it is no longer counted, listed or routed to. */
    s->state = RT_SESSION_CLOSING;
    session_leave(s);
    s->hello_deadline_us = rt_router_now_us(rt) + (uint64_t)rt->cfg->limits.hello_timeout_ms * 1000;
    rt_list_remove(&s->in_wait);
    rt_list_add_tail(&rt->greeting, &s->in_wait);
}

/* --- Incoming ------------------------------------------------------------------------------- */

static wamp_err on_joined(rt_session *s, const wamp_msg *m)
{
    rt_realm *r = s->realm;
    switch (m->type) {
    case WAMP_MSG_PUBLISH:
        return rt_broker_on_publish(rt_realm_broker(r), s, m);
    case WAMP_MSG_SUBSCRIBE:
        return rt_broker_on_subscribe(rt_realm_broker(r), s, m);
    case WAMP_MSG_UNSUBSCRIBE:
        return rt_broker_on_unsubscribe(rt_realm_broker(r), s, m);
    case WAMP_MSG_CALL:
        return rt_dealer_on_call(rt_realm_dealer(r), s, m);
    case WAMP_MSG_YIELD:
        return rt_dealer_on_answer(rt_realm_dealer(r), s, m);
    case WAMP_MSG_REGISTER:
        return rt_dealer_on_register(rt_realm_dealer(r), s, m);
    case WAMP_MSG_UNREGISTER:
        return rt_dealer_on_unregister(rt_realm_dealer(r), s, m);
    case WAMP_MSG_ERROR:
        if (m->req_type == WAMP_MSG_INVOCATION) {
            return rt_dealer_on_answer(rt_realm_dealer(r), s, m);
        }
        rt_session_protocol_violation(s, "ERROR may only answer an INVOCATION");
        return WAMP_OK;
    case WAMP_MSG_CANCEL:
        return rt_dealer_on_cancel(rt_realm_dealer(r), s, m);
    case WAMP_MSG_GOODBYE: {
        RT_LOG_LIMITED_N(RT_LOG_BURST_SESSION, RT_LOG_LEVEL_INFO, rt_router_now_us(s->rt),
                         "GOODBYE", s->id, "GOODBYE (%s): leaving realm %s", m->uri,
                         rt_realm_name(r));
        /* Leave first (its meta events are queued, and go out after the reply), then the
         * reply, while still joined, so that it is attributed (and traced) to the realm and
         * identity the session is leaving. */
        session_detach(s);
        rt_observers_action_last(&s->rt->observers, s->rt);
        wamp_err err = rt_session_send(s, wamp_msg_new_goodbye(NULL, WAMP_CLOSE_GOODBYE_AND_OUT));
        session_leave(s);
        if (s->state == RT_SESSION_JOINED) {
            /* The connection may carry another session: it will be a new one. */
            rt_router_session_new_id(s);
            s->state = RT_SESSION_ESTABLISHED;
            s->hello_deadline_us =
                    rt_router_now_us(s->rt) + (uint64_t)s->rt->cfg->limits.hello_timeout_ms * 1000;
            rt_list_add_tail(&s->rt->greeting, &s->in_wait);
        }
        return err;
    }
    case WAMP_MSG_ABORT:
        RT_LOG_LIMITED_N(RT_LOG_BURST_SESSION, RT_LOG_LEVEL_INFO, rt_router_now_us(s->rt),
                         "ABORT from peer", s->id, "ABORT from peer (%s); closing", m->uri);
        rt_session_close(s, 1000, "aborted", false);
        return WAMP_OK;
    default: {
        char why[96];
        snprintf(why, sizeof(why), "%s is not valid in an established session",
                 wamp_msg_type_name((int)m->type));
        rt_session_protocol_violation(s, why);
        return WAMP_OK;
    }
    }
}

static wamp_err on_message(rt_session *s, const void *data, size_t len);

wamp_err rt_session_on_message(rt_session *s, const void *data, size_t len)
{
    /* The records of this message share one clock reading (of the read, inside one: an and, no
     * branch). */
    rt_cur_action *cur = &s->rt->cur;
    cur->now_set = cur->now_set && cur->in_read;
    wamp_err err = on_message(s, data, len);
    cur->now_set = cur->now_set && cur->in_read;
    return err;
}

/* The received message into *m (why: what is wrong with it), logged and traced. */
static wamp_err decode_rx(rt_session *s, const void *data, size_t len, wamp_msg *m, char *why,
                          size_t why_len)
{
    wamp_err err = wamp_msg_parse_bytes_fields(s->ser, data, len, m, why, why_len);
    rt_wirelog_rx(s, err == WAMP_OK ? (int)m->type : 0, len);
    if (trace_hub_is_active(s->rt->hub)) {
        rt_trace_rx(s, err == WAMP_OK ? m : NULL, data, len);
    }
    return err;
}

static wamp_err on_message(rt_session *s, const void *data, size_t len)
{
    rt_router *rt = s->rt;
    if (s->state == RT_SESSION_CLOSED) {
        return WAMP_OK;
    }
    rt->stats.messages_rx++;
    rt->stats.bytes_rx += len;

    wamp_msg m;
    char why[WAMP_WHY_LEN];
    wamp_err err = decode_rx(s, data, len, &m, why, sizeof(why));
    if (err == WAMP_ENOMEM) {
        return err;
    }
    if (err != WAMP_OK) {
        rt_session_protocol_violation(s, why);
        if (rt->cur.set) {
            rt_trace_action_close(rt);
        }
        return WAMP_OK;
    }

    switch (s->state) {
    case RT_SESSION_CHALLENGED:
        if (m.type == WAMP_MSG_AUTHENTICATE) {
            err = on_authenticate(s, &m);
        } else if (m.type == WAMP_MSG_ABORT || m.type == WAMP_MSG_GOODBYE) {
            rt_session_close(s, 1000, "closed by peer", false);
        } else {
            snprintf(why, sizeof(why), "%s received while authenticating (AUTHENTICATE expected)",
                     wamp_msg_type_name((int)m.type));
            rt_session_protocol_violation(s, why);
        }
        break;
    case RT_SESSION_AUTH_FAILED:
        /* Its ABORT is on the way; only the peer giving up matters. */
        if (m.type == WAMP_MSG_ABORT || m.type == WAMP_MSG_GOODBYE) {
            rt_session_close(s, 1000, "closed by peer", false);
        }
        break;
    case RT_SESSION_ESTABLISHED:
        if (m.type == WAMP_MSG_HELLO) {
            err = on_hello(s, &m);
        } else if (m.type == WAMP_MSG_ABORT || m.type == WAMP_MSG_GOODBYE) {
            rt_session_close(s, 1000, "closed by peer", false);
        } else {
            snprintf(why, sizeof(why), "%s received before HELLO", wamp_msg_type_name((int)m.type));
            rt_session_protocol_violation(s, why);
        }
        break;
    case RT_SESSION_JOINED:
        err = on_joined(s, &m);
        break;
    case RT_SESSION_CLOSING:
        /* We sent GOODBYE: only the peer's GOODBYE (or ABORT) matters now. */
        if (m.type == WAMP_MSG_GOODBYE || m.type == WAMP_MSG_ABORT) {
            session_leave(s);
            rt_session_close(s, 1000, "goodbye", false);
        }
        break;
    case RT_SESSION_CLOSED:
        break;
    }
    rt_observers_replied(&rt->observers, rt); /* deferred work (meta events), after the reply */
    if (rt->cur.set) {
        rt_trace_action_close(rt); /* before m: the action's URI text points into it */
    }
    rt->cur.last = false;
    wamp_msg_fini(&m);
    /* A message that could not be delivered (too big, not encodable) was logged and traced
     * where it was dropped; only running out of memory makes the session unusable. */
    return err == WAMP_ENOMEM ? err : WAMP_OK;
}

/* --- Lifecycle (called by rt_router.c and the adapter) -----------------------------------------
 */

void rt_session_on_closed(rt_session *s)
{
    if (!s) {
        return;
    }
    rt_router *rt = s->rt;
    if (s->state != RT_SESSION_CLOSED) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_SESSION, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                         "connection closed", s->id, "connection from %s closed", s->peer.addr);
    } else {
        RT_LOG_DEBUG(s->id, "connection from %s closed", s->peer.addr);
    }
    if (s->outq.count) {
        /* The peer went, or limits.close_timeout ran out, before the queue was written. */
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                         "queued messages not written", s->id,
                         "%zu queued messages (%zu bytes) not written to %s", s->outq.count,
                         s->outq.bytes, s->peer.addr);
        rt_session_note_undelivered(s, 0);
    }
    /* Leave events of a connection lost without GOODBYE: an action of their own. */
    bool own = false;
    if (s->realm && trace_hub_is_active(rt->hub) && !rt->cur.set) {
        rt_trace_action_open_new(rt);
        own = true;
    }
    session_leave(s);
    rt_list_remove(&s->in_wait);
    rt_list_remove(&s->in_router);
    rt_hmap_remove(&rt->sessions_by_id, &s->by_id);
    rt->n_sessions--;
    rt->stats.sessions_closed++;
    rt_session_log_drops(s, true);
    rt_outq_fini(&s->outq);
    trace_peer_unref(&s->tpeer);
    trace_str_unref(&s->tr_uri);
    rt_auth_pending_free(s->auth);
    free(s->denial);
    free(s);
    rt_observers_replied(&rt->observers, rt);
    if (own) {
        rt_trace_action_close(rt);
    }
}
