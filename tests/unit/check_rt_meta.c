/* check_rt_meta.c: the session, subscription and registration meta API (rt_meta.h): every
 * procedure and its errors, every event and its order, the kill variants, the correlation of
 * meta events in a trace, and no allocation for a join nobody listens to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "alloc_count.h"
#include "fake_clock.h"
#include "fake_transport.h"
#include "rt_realm.h"
#include "rt_router.h"
#include "test_router.h"
#include "trace_hub.h"
#include "trace_render.h"

static test_router T;

static void setup(void)
{
    test_router_init(&T);
}

static void teardown(void)
{
    test_router_fini(&T);
}

static fake_conn *joined(wamp_ser ser, const char *realm)
{
    return fake_conn_new_joined(T.rt, ser, realm);
}

static uint64_t sid(const fake_conn *c)
{
    return rt_session_id(c->s);
}

/* CALL proc with args / kwargs (JSON text, NULL = none) and return the answer (owned): a RESULT
 * or an ERROR for request 77. */
static json_t *call(fake_conn *c, const char *proc, const char *args, const char *kwargs)
{
    fake_conn_send(c, "[48, 77, {}, \"%s\", %s, %s]", proc, args ? args : "[]",
                   kwargs ? kwargs : "{}");
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    return m;
}

/* The single positional result of a successful CALL (borrowed from the message m). */
static json_t *result_of(json_t *m)
{
    ck_assert_msg(fake_msg_int(m, 0) == WAMP_MSG_RESULT, "not a RESULT: %s",
                  json_dumps(m, JSON_COMPACT));
    ck_assert_int_eq(fake_msg_int(m, 1), 77);
    return json_array_get(json_array_get(m, 3), 0);
}

/* Calls and checks that it fails with error uri. */
static void call_fails(fake_conn *c, const char *proc, const char *args, const char *kwargs,
                       const char *uri)
{
    json_t *m = call(c, proc, args, kwargs);
    ck_assert_msg(fake_msg_int(m, 0) == WAMP_MSG_ERROR, "%s did not fail", proc);
    ck_assert_int_eq(fake_msg_int(m, 1), WAMP_MSG_CALL);
    ck_assert_int_eq(fake_msg_int(m, 2), 77);
    ck_assert_str_eq(fake_msg_str(m, 4), uri);
    json_decref(m);
}

/* A call whose result is an integer. */
static json_int_t call_int(fake_conn *c, const char *proc, const char *args, const char *kwargs)
{
    json_t *m = call(c, proc, args, kwargs);
    json_t *v = result_of(m);
    ck_assert(json_is_integer(v));
    json_int_t i = json_integer_value(v);
    json_decref(m);
    return i;
}

static int64_t subscribe(fake_conn *c, int req, const char *options, const char *topic)
{
    fake_conn_send(c, "[32, %d, %s, \"%s\"]", req, options, topic);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    ck_assert_int_eq(fake_msg_int(m, 1), req);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    return id;
}

static int64_t do_register(fake_conn *c, int req, const char *options, const char *proc)
{
    fake_conn_send(c, "[64, %d, %s, \"%s\"]", req, options, proc);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_REGISTERED);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    return id;
}

/* The next message of c must be an EVENT for subscription sub; returns its args (owned). */
static json_t *expect_event(fake_conn *c, int64_t sub)
{
    json_t *m = fake_conn_next(c);
    ck_assert_msg(m != NULL, "no EVENT");
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_EVENT);
    ck_assert_int_eq(fake_msg_int(m, 1), sub);
    json_t *args = json_incref(json_array_get(m, 4));
    json_decref(m);
    return args;
}

/* EVENT with args [session, id]. */
static void expect_pair(fake_conn *c, int64_t sub, uint64_t session, int64_t id)
{
    json_t *a = expect_event(c, sub);
    ck_assert_uint_eq(json_array_size(a), 2);
    ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(a, 0)), session);
    ck_assert_int_eq(json_integer_value(json_array_get(a, 1)), id);
    json_decref(a);
}

static bool list_has(const json_t *list, uint64_t id)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        if ((uint64_t)json_integer_value(json_array_get(list, i)) == id) {
            return true;
        }
    }
    return false;
}

/* --- wamp.session.* ------------------------------------------------------------------------- */

START_TEST(test_session_count_list_get)
{
    fake_conn *c[3] = {joined(WAMP_SER_JSON, "realm1"), joined(WAMP_SER_MSGPACK, "realm1"),
                       joined(WAMP_SER_JSON, "realm1")};
    fake_conn *other = joined(WAMP_SER_JSON, "realm2");
    ck_assert_int_eq(call_int(c[0], "wamp.session.count", NULL, NULL), 3);
    ck_assert_int_eq(call_int(c[1], "wamp.session.count", "[[\"anonymous\"]]", NULL), 3);
    ck_assert_int_eq(call_int(c[1], "wamp.session.count", NULL, "{\"filter_authroles\": []}"), 0);
    ck_assert_int_eq(call_int(other, "wamp.session.count", NULL, NULL), 1);
    json_t *m = call(c[2], "wamp.session.list", NULL, NULL);
    json_t *ids = result_of(m);
    ck_assert_uint_eq(json_array_size(ids), 3);
    for (int i = 0; i < 3; i++) {
        ck_assert(list_has(ids, sid(c[i])));
    }
    ck_assert(!list_has(ids, sid(other)));
    json_decref(m);
    m = call(c[2], "wamp.session.list", "[[\"nobody\"]]", NULL);
    ck_assert_uint_eq(json_array_size(result_of(m)), 0);
    json_decref(m);
    for (int i = 0; i < 3; i++) {
        char args[40];
        snprintf(args, sizeof(args), "[%llu]", (unsigned long long)sid(c[i]));
        m = call(c[0], "wamp.session.get", args, NULL);
        json_t *d = result_of(m);
        ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(d, "session")), sid(c[i]));
        ck_assert_str_eq(json_string_value(json_object_get(d, "authid")),
                         rt_session_authid(c[i]->s));
        ck_assert_str_eq(json_string_value(json_object_get(d, "authrole")), "anonymous");
        ck_assert_str_eq(json_string_value(json_object_get(d, "authmethod")), "anonymous");
        ck_assert_str_eq(json_string_value(json_object_get(d, "authprovider")), "static");
        ck_assert_str_eq(json_string_value(json_object_get(d, "realm")), "realm1");
        ck_assert_str_eq(json_string_value(json_object_get(d, "serializer")),
                         i == 1 ? "msgpack" : "json");
        ck_assert(json_is_object(json_object_get(d, "transport")));
        json_decref(m);
    }
    /* A session of another realm, an unknown one, bad arguments. */
    char args[40];
    snprintf(args, sizeof(args), "[%llu]", (unsigned long long)sid(other));
    call_fails(c[0], "wamp.session.get", args, NULL, WAMP_ERROR_NO_SUCH_SESSION);
    call_fails(c[0], "wamp.session.get", "[12345]", NULL, WAMP_ERROR_NO_SUCH_SESSION);
    call_fails(c[0], "wamp.session.get", "[\"x\"]", NULL, WAMP_ERROR_INVALID_ARGUMENT);
    call_fails(c[0], "wamp.session.get", NULL, NULL, WAMP_ERROR_INVALID_ARGUMENT);
    call_fails(c[0], "wamp.session.count", "[\"anonymous\"]", NULL, WAMP_ERROR_INVALID_ARGUMENT);
    call_fails(c[0], "wamp.session.list", "[[1]]", NULL, WAMP_ERROR_INVALID_ARGUMENT);
    /* Gone sessions are not counted. */
    fake_conn_free(c[1]);
    ck_assert_int_eq(call_int(c[0], "wamp.session.count", NULL, NULL), 2);
    for (int i = 0; i < 3; i++) {
        fake_conn_free(i == 1 ? NULL : c[i]);
    }
    fake_conn_free(other);
}

END_TEST

START_TEST(test_meta_procedures_follow_permissions)
{
    /* Role "anonymous" on realm "locked" may only call under com.open. */
    fake_conn *c = joined(WAMP_SER_JSON, "locked");
    call_fails(c, "wamp.session.count", NULL, NULL, WAMP_ERROR_NOT_AUTHORIZED);
    fake_conn_send(c, "[32, 1, {}, \"wamp.session.on_join\"]");
    fake_expect_error(c, WAMP_MSG_SUBSCRIBE, 1, WAMP_ERROR_NOT_AUTHORIZED);
    fake_conn_free(c);
}

END_TEST

/* Clients cannot publish meta events nor register in the router's namespace (Crossbar's rule). */
START_TEST(test_wamp_namespace_is_the_routers)
{
    fake_conn *l = joined(WAMP_SER_JSON, "realm1");
    subscribe(l, 1, "{}", "wamp.session.on_join");
    fake_conn *c = joined(WAMP_SER_MSGPACK, "realm1");
    json_decref(fake_conn_next(l)); /* c's real on_join */
    fake_conn_send(c, "[16, 2, {\"acknowledge\": true}, \"wamp.session.on_join\", [{}]]");
    fake_expect_error(c, WAMP_MSG_PUBLISH, 2, WAMP_ERROR_INVALID_URI);
    fake_conn_send(c, "[16, 3, {}, \"wamp.session.on_join\", [{}]]");
    ck_assert_uint_eq(fake_conn_pending(c), 0);
    ck_assert_uint_eq(fake_conn_pending(l), 0);
    fake_conn_send(c, "[64, 4, {\"match\": \"prefix\"}, \"wamp.session.\"]");
    fake_expect_error(c, WAMP_MSG_REGISTER, 4, WAMP_ERROR_INVALID_URI);
    fake_conn_free(c);
    fake_conn_free(l);
}

END_TEST

START_TEST(test_on_join_and_on_leave)
{
    fake_conn *l = joined(WAMP_SER_JSON, "realm1");
    int64_t join_sub = subscribe(l, 1, "{}", "wamp.session.on_join");
    int64_t leave_sub = subscribe(l, 2, "{}", "wamp.session.on_leave");
    fake_conn *elsewhere = joined(WAMP_SER_JSON, "realm2"); /* another realm: no event */
    ck_assert_uint_eq(fake_conn_pending(l), 0);
    for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_MSGPACK; ser++) {
        fake_conn *a = joined((wamp_ser)ser, "realm1");
        json_t *args = expect_event(l, join_sub);
        json_t *d = json_array_get(args, 0);
        ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(d, "session")), sid(a));
        ck_assert_str_eq(json_string_value(json_object_get(d, "authid")), rt_session_authid(a->s));
        ck_assert_str_eq(json_string_value(json_object_get(d, "authrole")), "anonymous");
        ck_assert_str_eq(json_string_value(json_object_get(d, "authmethod")), "anonymous");
        ck_assert_str_eq(json_string_value(json_object_get(d, "authprovider")), "static");
        json_decref(args);
        /* The leaving session, itself subscribed to on_leave, hears nothing of its own leave:
         * GOODBYE gets the reply only. */
        uint64_t id = sid(a);
        char *authid = strdup(rt_session_authid(a->s));
        subscribe(a, 5, "{}", "wamp.session.on_leave");
        if (ser == WAMP_SER_JSON) {
            fake_conn_send(a, "[6, {}, \"wamp.close.close_realm\"]");
            json_t *bye = fake_conn_next(a);
            ck_assert_int_eq(fake_msg_int(bye, 0), WAMP_MSG_GOODBYE);
            json_decref(bye);
            ck_assert_uint_eq(fake_conn_pending(a), 0);
        } else {
            fake_conn_disconnect(a); /* no GOODBYE */
        }
        args = expect_event(l, leave_sub);
        ck_assert_uint_eq(json_array_size(args), 3);
        ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(args, 0)), id);
        ck_assert_str_eq(json_string_value(json_array_get(args, 1)), authid);
        ck_assert_str_eq(json_string_value(json_array_get(args, 2)), "anonymous");
        json_decref(args);
        free(authid);
        fake_conn_free(a);
    }
    fake_conn_free(elsewhere);
    ck_assert_uint_eq(fake_conn_pending(l), 0);
    fake_conn_free(l);
}

END_TEST

/* The victim's GOODBYE; checks reason and message (NULL = none). */
static void expect_goodbye(fake_conn *v, const char *reason, const char *message)
{
    json_t *m = fake_conn_next(v);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_GOODBYE);
    ck_assert_str_eq(fake_msg_str(m, 2), reason);
    json_t *msg = json_object_get(json_array_get(m, 1), "message");
    if (message) {
        ck_assert_str_eq(json_string_value(msg), message);
    } else {
        ck_assert_ptr_null(msg);
    }
    json_decref(m);
}

/* The next message of l is on_leave for session id. */
static void expect_leave(fake_conn *l, int64_t sub, uint64_t id)
{
    json_t *a = expect_event(l, sub);
    ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(a, 0)), id);
    json_decref(a);
}

START_TEST(test_kill)
{
    fake_conn *k = joined(WAMP_SER_JSON, "realm1");
    fake_conn *v = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *w = joined(WAMP_SER_JSON, "realm1");
    int64_t leave_sub = subscribe(k, 1, "{}", "wamp.session.on_leave");
    subscribe(v, 1, "{}", "com.v"); /* its subscription goes with it */
    char args[64];
    snprintf(args, sizeof(args), "[%llu]", (unsigned long long)sid(v));
    uint64_t vid = sid(v);
    json_t *m = call(k, "wamp.session.kill", args, "{\"message\": \"bye now\"}");
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_RESULT);
    ck_assert_uint_eq(json_array_size(json_array_get(m, 3)), 0); /* no result value */
    json_decref(m);
    expect_leave(k, leave_sub, vid); /* after the RESULT */
    expect_goodbye(v, WAMP_CLOSE_KILLED, "bye now");
    /* Out of the realm at once: not counted, no routing to it. */
    ck_assert_int_eq(call_int(k, "wamp.session.count", NULL, NULL), 2);
    ck_assert_uint_eq(test_router_sub_count(T.rt, "realm1"), 1);
    call_fails(k, "wamp.session.get", args, NULL, WAMP_ERROR_NO_SUCH_SESSION);
    /* Input other than GOODBYE is ignored; the GOODBYE reply closes the connection. */
    ck_assert(!v->close_requested);
    fake_conn_send(v, "[32, 2, {}, \"com.more\"]");
    ck_assert_uint_eq(fake_conn_pending(v), 0);
    fake_conn_send(v, "[6, {}, \"wamp.close.goodbye_and_out\"]");
    fake_conn_drain(v);
    ck_assert(v->close_requested);
    ck_assert_ptr_null(v->s);
    /* Self, unknown, bad reason. */
    snprintf(args, sizeof(args), "[%llu]", (unsigned long long)sid(k));
    call_fails(k, "wamp.session.kill", args, NULL, WAMP_ERROR_NO_SUCH_SESSION);
    call_fails(k, "wamp.session.kill", "[999]", NULL, WAMP_ERROR_NO_SUCH_SESSION);
    snprintf(args, sizeof(args), "[%llu]", (unsigned long long)sid(w));
    call_fails(k, "wamp.session.kill", args, "{\"reason\": \"not a uri!\"}",
               WAMP_ERROR_INVALID_URI);
    call_fails(k, "wamp.session.kill", args, "{\"message\": 3}", WAMP_ERROR_INVALID_ARGUMENT);
    /* A custom reason, and a victim that never answers: closed after the HELLO timeout. */
    m = call(k, "wamp.session.kill", args, "{\"reason\": \"com.example.go_away\"}");
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_RESULT);
    json_decref(m);
    expect_goodbye(w, "com.example.go_away", NULL);
    ck_assert(!w->close_requested);
    fake_clock_advance_ms(&T.clock, 1100);
    rt_router_tick(T.rt);
    fake_conn_drain(w);
    ck_assert(w->close_requested);
    fake_conn_free(w);
    fake_conn_free(v);
    fake_conn_free(k);
}

END_TEST

START_TEST(test_kill_by_authid_authrole_all)
{
    fake_conn *k = joined(WAMP_SER_JSON, "realm1");
    fake_conn *v[4];
    for (int i = 0; i < 4; i++) {
        v[i] = joined(i % 2 ? WAMP_SER_MSGPACK : WAMP_SER_JSON, "realm1");
    }
    fake_conn *other = joined(WAMP_SER_JSON, "realm2");
    /* by authid: the list of killed ids. */
    char args[96];
    snprintf(args, sizeof(args), "[\"%s\"]", rt_session_authid(v[0]->s));
    json_t *m = call(k, "wamp.session.kill_by_authid", args, NULL);
    json_t *ids = result_of(m);
    ck_assert_uint_eq(json_array_size(ids), 1);
    ck_assert(list_has(ids, sid(v[0])));
    json_decref(m);
    expect_goodbye(v[0], WAMP_CLOSE_KILLED, NULL);
    /* The caller's own authid: the caller is spared. */
    snprintf(args, sizeof(args), "[\"%s\"]", rt_session_authid(k->s));
    m = call(k, "wamp.session.kill_by_authid", args, NULL);
    ck_assert_uint_eq(json_array_size(result_of(m)), 0);
    json_decref(m);
    call_fails(k, "wamp.session.kill_by_authid", "[1]", NULL, WAMP_ERROR_INVALID_ARGUMENT);
    call_fails(k, "wamp.session.kill_by_authrole", "[\"anonymous\", \"bad uri\"]", NULL,
               WAMP_ERROR_INVALID_URI);
    /* by authrole: everyone in the realm with it but the caller; a count. */
    ck_assert_int_eq(call_int(k, "wamp.session.kill_by_authrole", "[\"nobody\"]", NULL), 0);
    ck_assert_int_eq(call_int(k, "wamp.session.kill_by_authrole", "[\"anonymous\"]",
                              "{\"reason\": \"wamp.close.system_shutdown\", \"message\": \"m\"}"),
                     3);
    for (int i = 1; i < 4; i++) {
        expect_goodbye(v[i], WAMP_CLOSE_SYSTEM_SHUTDOWN, "m");
    }
    ck_assert_int_eq(call_int(k, "wamp.session.count", NULL, NULL), 1);
    ck_assert(k->s && !k->close_requested);
    /* kill_all: nobody left but the caller here; in realm2 it kills the others only. */
    ck_assert_int_eq(call_int(k, "wamp.session.kill_all", NULL, NULL), 0);
    fake_conn *o2 = joined(WAMP_SER_MSGPACK, "realm2");
    ck_assert_int_eq(call_int(other, "wamp.session.kill_all", NULL, "{\"message\": \"all\"}"), 1);
    expect_goodbye(o2, WAMP_CLOSE_KILLED, "all");
    ck_assert_int_eq(call_int(other, "wamp.session.count", NULL, NULL), 1);
    ck_assert_uint_eq(fake_conn_pending(k), 0);
    for (int i = 0; i < 4; i++) {
        fake_conn_free(v[i]);
    }
    fake_conn_free(o2);
    fake_conn_free(other);
    fake_conn_free(k);
}

END_TEST

/* --- wamp.subscription.* -------------------------------------------------------------------- */

START_TEST(test_subscription_meta)
{
    fake_conn *l = joined(WAMP_SER_JSON, "realm1");
    int64_t on_create = subscribe(l, 1, "{}", "wamp.subscription.on_create");
    int64_t on_sub = subscribe(l, 2, "{}", "wamp.subscription.on_subscribe");
    int64_t on_unsub = subscribe(l, 3, "{}", "wamp.subscription.on_unsubscribe");
    int64_t on_delete = subscribe(l, 4, "{}", "wamp.subscription.on_delete");
    fake_conn *a = joined(WAMP_SER_MSGPACK, "realm1");
    fake_conn *b = joined(WAMP_SER_JSON, "realm1");
    /* The meta topics themselves are not shown: nothing so far. */
    ck_assert_uint_eq(fake_conn_pending(l), 0);
    json_t *m = call(l, "wamp.subscription.list", NULL, NULL);
    json_t *lists = result_of(m);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "exact")), 0);
    json_decref(m);

    int64_t x = subscribe(a, 10, "{}", "com.x");
    json_t *ev = expect_event(l, on_create); /* on_create, then on_subscribe */
    ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(ev, 0)), sid(a));
    json_t *d = json_array_get(ev, 1);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "id")), x);
    ck_assert_str_eq(json_string_value(json_object_get(d, "uri")), "com.x");
    ck_assert_str_eq(json_string_value(json_object_get(d, "match")), "exact");
    char created[32];
    snprintf(created, sizeof(created), "%s", json_string_value(json_object_get(d, "created")));
    ck_assert_uint_eq(strlen(created), 24); /* 2026-11-22T06:05:43.123Z */
    ck_assert_int_eq(created[23], 'Z');
    json_decref(ev);
    expect_pair(l, on_sub, sid(a), x);
    ck_assert_int_eq(subscribe(b, 11, "{}", "com.x"), x);
    expect_pair(l, on_sub, sid(b), x); /* no on_create for an existing one */
    int64_t p = subscribe(b, 12, "{\"match\": \"prefix\"}", "com.");
    json_decref(expect_event(l, on_create));
    expect_pair(l, on_sub, sid(b), p);
    int64_t wc = subscribe(a, 13, "{\"match\": \"wildcard\"}", "com..z");
    json_decref(expect_event(l, on_create));
    expect_pair(l, on_sub, sid(a), wc);

    m = call(l, "wamp.subscription.list", NULL, NULL);
    lists = result_of(m);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "exact")), 1);
    ck_assert(list_has(json_object_get(lists, "exact"), (uint64_t)x));
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "prefix")), 1);
    ck_assert(list_has(json_object_get(lists, "prefix"), (uint64_t)p));
    ck_assert(list_has(json_object_get(lists, "wildcard"), (uint64_t)wc));
    json_decref(m);
    /* Crossbar's session_id argument: that session's subscriptions only. */
    char sarg[48];
    snprintf(sarg, sizeof(sarg), "[%llu]", (unsigned long long)sid(a));
    m = call(l, "wamp.subscription.list", sarg, NULL);
    lists = result_of(m);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "exact")), 1);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "prefix")), 0);
    ck_assert(list_has(json_object_get(lists, "wildcard"), (uint64_t)wc));
    json_decref(m);
    call_fails(l, "wamp.subscription.list", NULL, "{\"session_id\": 4242}",
               WAMP_ERROR_NO_SUCH_SESSION);
    call_fails(l, "wamp.subscription.list", "[\"x\"]", NULL, WAMP_ERROR_INVALID_ARGUMENT);
    ck_assert_int_eq(call_int(l, "wamp.subscription.lookup", "[\"com.x\"]", NULL), x);
    ck_assert_int_eq(
            call_int(l, "wamp.subscription.lookup", "[\"com.\", {\"match\": \"prefix\"}]", NULL),
            p);
    m = call(l, "wamp.subscription.lookup", "[\"com.x\", {\"match\": \"prefix\"}]", NULL);
    ck_assert(json_is_null(result_of(m)));
    json_decref(m);
    m = call(l, "wamp.subscription.match", "[\"com.x\"]", NULL);
    json_t *ids = result_of(m);
    ck_assert_uint_eq(json_array_size(ids), 2);
    ck_assert(list_has(ids, (uint64_t)x) && list_has(ids, (uint64_t)p));
    json_decref(m);
    m = call(l, "wamp.subscription.match", "[\"org.none\"]", NULL);
    ck_assert(json_is_null(result_of(m)));
    json_decref(m);
    char args[48];
    snprintf(args, sizeof(args), "[%lld]", (long long)x);
    m = call(l, "wamp.subscription.get", args, NULL);
    d = result_of(m);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "id")), x);
    ck_assert_str_eq(json_string_value(json_object_get(d, "uri")), "com.x");
    ck_assert_str_eq(json_string_value(json_object_get(d, "created")), created);
    json_decref(m);
    m = call(l, "wamp.subscription.list_subscribers", args, NULL);
    ids = result_of(m);
    ck_assert_uint_eq(json_array_size(ids), 2);
    ck_assert(list_has(ids, sid(a)) && list_has(ids, sid(b)));
    json_decref(m);
    ck_assert_int_eq(call_int(l, "wamp.subscription.count_subscribers", args, NULL), 2);
    call_fails(l, "wamp.subscription.get", "[4242]", NULL, WAMP_ERROR_NO_SUCH_SUBSCRIPTION);
    call_fails(l, "wamp.subscription.list_subscribers", "[4242]", NULL,
               WAMP_ERROR_NO_SUCH_SUBSCRIPTION);
    call_fails(l, "wamp.subscription.count_subscribers", "[\"x\"]", NULL,
               WAMP_ERROR_INVALID_ARGUMENT);
    call_fails(l, "wamp.subscription.lookup", "[\"com.x\", {\"match\": \"fuzzy\"}]", NULL,
               WAMP_ERROR_INVALID_ARGUMENT);
    /* A meta topic's subscription is hidden. */
    snprintf(args, sizeof(args), "[%lld]", (long long)on_create);
    call_fails(l, "wamp.subscription.get", args, NULL, WAMP_ERROR_NO_SUCH_SUBSCRIPTION);

    /* UNSUBSCRIBE: on_unsubscribe (the subscription stays); the last one: then on_delete. */
    fake_conn_send(a, "[34, 20, %lld]", (long long)x);
    json_t *un = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(un, 0), WAMP_MSG_UNSUBSCRIBED);
    json_decref(un);
    expect_pair(l, on_unsub, sid(a), x);
    ck_assert_uint_eq(fake_conn_pending(l), 0);
    /* b leaves: each of its subscriptions, on_unsubscribe before on_delete. */
    uint64_t bid = sid(b);
    fake_conn_free(b);
    for (int i = 0; i < 2; i++) {
        json_t *u = expect_event(l, on_unsub);
        int64_t which = json_integer_value(json_array_get(u, 1));
        ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(u, 0)), bid);
        ck_assert(which == x || which == p);
        json_decref(u);
        expect_pair(l, on_delete, bid, which);
    }
    snprintf(args, sizeof(args), "[%lld]", (long long)x);
    call_fails(l, "wamp.subscription.get", args, NULL, WAMP_ERROR_NO_SUCH_SUBSCRIPTION);
    fake_conn_free(a);
    fake_conn_free(l);
}

END_TEST

/* A catch-all pattern subscription gets the meta events, its own included, always after its
 * SUBSCRIBED (a client must know the subscription an EVENT is for). */
START_TEST(test_catch_all_gets_own_meta_event_after_subscribed)
{
    fake_conn *c = joined(WAMP_SER_JSON, "realm1");
    fake_conn_send(c, "[32, 1, {\"match\": \"prefix\"}, \"\"]");
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    int64_t all = fake_msg_int(m, 2);
    json_decref(m);
    m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_EVENT);
    ck_assert_int_eq(fake_msg_int(m, 1), all);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 3), "topic")),
                     "wamp.subscription.on_create");
    json_decref(m);
    m = fake_conn_next(c);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 3), "topic")),
                     "wamp.subscription.on_subscribe");
    json_decref(m);
    fake_conn_free(c);
}

END_TEST

/* --- wamp.registration.* -------------------------------------------------------------------- */

START_TEST(test_registration_meta)
{
    fake_conn *l = joined(WAMP_SER_MSGPACK, "realm1");
    int64_t on_create = subscribe(l, 1, "{}", "wamp.registration.on_create");
    int64_t on_reg = subscribe(l, 2, "{}", "wamp.registration.on_register");
    int64_t on_unreg = subscribe(l, 3, "{}", "wamp.registration.on_unregister");
    int64_t on_delete = subscribe(l, 4, "{}", "wamp.registration.on_delete");
    fake_conn *a = joined(WAMP_SER_JSON, "realm1");
    fake_conn *b = joined(WAMP_SER_MSGPACK, "realm1");
    /* Router-local procedures (the meta API itself) are not listed. */
    json_t *m = call(l, "wamp.registration.list", NULL, NULL);
    json_t *lists = result_of(m);
    for (const char *k = "exact"; k; k = strcmp(k, "exact") == 0 ? "prefix" : NULL) {
        ck_assert_uint_eq(json_array_size(json_object_get(lists, k)), 0);
    }
    json_decref(m);
    m = call(l, "wamp.registration.lookup", "[\"wamp.session.count\"]", NULL);
    ck_assert(json_is_null(result_of(m)));
    json_decref(m);

    int64_t r = do_register(a, 10, "{\"invoke\": \"roundrobin\"}", "com.proc");
    json_t *ev = expect_event(l, on_create);
    ck_assert_uint_eq((uint64_t)json_integer_value(json_array_get(ev, 0)), sid(a));
    json_t *d = json_array_get(ev, 1);
    ck_assert_int_eq(json_integer_value(json_object_get(d, "id")), r);
    ck_assert_str_eq(json_string_value(json_object_get(d, "uri")), "com.proc");
    ck_assert_str_eq(json_string_value(json_object_get(d, "match")), "exact");
    ck_assert_str_eq(json_string_value(json_object_get(d, "invoke")), "roundrobin");
    ck_assert(json_is_string(json_object_get(d, "created")));
    json_decref(ev);
    expect_pair(l, on_reg, sid(a), r);
    ck_assert_int_eq(do_register(b, 11, "{\"invoke\": \"roundrobin\"}", "com.proc"), r);
    expect_pair(l, on_reg, sid(b), r);
    int64_t p = do_register(b, 12, "{\"match\": \"prefix\"}", "com.");
    json_decref(expect_event(l, on_create));
    expect_pair(l, on_reg, sid(b), p);

    m = call(l, "wamp.registration.list", NULL, NULL);
    lists = result_of(m);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "exact")), 1);
    ck_assert(list_has(json_object_get(lists, "exact"), (uint64_t)r));
    ck_assert(list_has(json_object_get(lists, "prefix"), (uint64_t)p));
    json_decref(m);
    char sarg[48];
    snprintf(sarg, sizeof(sarg), "{\"session_id\": %llu}", (unsigned long long)sid(a));
    m = call(l, "wamp.registration.list", NULL, sarg);
    lists = result_of(m);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "exact")), 1);
    ck_assert_uint_eq(json_array_size(json_object_get(lists, "prefix")), 0);
    json_decref(m);
    snprintf(sarg, sizeof(sarg), "[%llu]", (unsigned long long)sid(b));
    m = call(l, "wamp.registration.list", sarg, NULL);
    lists = result_of(m);
    ck_assert(list_has(json_object_get(lists, "exact"), (uint64_t)r));
    ck_assert(list_has(json_object_get(lists, "prefix"), (uint64_t)p));
    json_decref(m);
    ck_assert_int_eq(call_int(l, "wamp.registration.lookup", "[\"com.proc\"]", NULL), r);
    ck_assert_int_eq(call_int(l, "wamp.registration.lookup", "[\"com.\"]",
                              "{\"options\": {\"match\": \"prefix\"}}"),
                     p);
    ck_assert_int_eq(call_int(l, "wamp.registration.match", "[\"com.proc\"]", NULL), r);
    ck_assert_int_eq(call_int(l, "wamp.registration.match", "[\"com.other\"]", NULL), p);
    m = call(l, "wamp.registration.match", "[\"org.none\"]", NULL);
    ck_assert(json_is_null(result_of(m)));
    json_decref(m);
    char args[48];
    snprintf(args, sizeof(args), "[%lld]", (long long)r);
    m = call(l, "wamp.registration.get", args, NULL);
    d = result_of(m);
    ck_assert_str_eq(json_string_value(json_object_get(d, "uri")), "com.proc");
    ck_assert_str_eq(json_string_value(json_object_get(d, "invoke")), "roundrobin");
    json_decref(m);
    m = call(l, "wamp.registration.list_callees", args, NULL);
    json_t *ids = result_of(m);
    ck_assert_uint_eq(json_array_size(ids), 2);
    ck_assert(list_has(ids, sid(a)) && list_has(ids, sid(b)));
    json_decref(m);
    ck_assert_int_eq(call_int(l, "wamp.registration.count_callees", args, NULL), 2);
    call_fails(l, "wamp.registration.get", "[4242]", NULL, WAMP_ERROR_NO_SUCH_REGISTRATION);
    call_fails(l, "wamp.registration.list_callees", "[4242]", NULL,
               WAMP_ERROR_NO_SUCH_REGISTRATION);
    call_fails(l, "wamp.registration.count_callees", "[]", NULL, WAMP_ERROR_INVALID_ARGUMENT);

    fake_conn_send(a, "[66, 20, %lld]", (long long)r);
    json_t *un = fake_conn_next(a);
    ck_assert_int_eq(fake_msg_int(un, 0), WAMP_MSG_UNREGISTERED);
    json_decref(un);
    expect_pair(l, on_unreg, sid(a), r);
    ck_assert_uint_eq(fake_conn_pending(l), 0);
    uint64_t bid = sid(b);
    fake_conn_send(b, "[6, {}, \"wamp.close.close_realm\"]");
    for (int i = 0; i < 2; i++) {
        json_t *u = expect_event(l, on_unreg);
        int64_t which = json_integer_value(json_array_get(u, 1));
        ck_assert(which == r || which == p);
        json_decref(u);
        expect_pair(l, on_delete, bid, which);
    }
    call_fails(l, "wamp.registration.count_callees", args, NULL, WAMP_ERROR_NO_SUCH_REGISTRATION);
    fake_conn_free(a);
    fake_conn_free(b);
    fake_conn_free(l);
}

END_TEST

/* --- Tracing -------------------------------------------------------------------------------- */

static trace *start(const char *id)
{
    trace *t = NULL;
    char why[160] = "";
    wamp_err err = trace_hub_start(rt_router_trace_hub(T.rt), id, NULL, 1, 1, &t, why, sizeof(why));
    ck_assert_msg(err == WAMP_OK, "start_trace: %s", why);
    return t;
}

static const char *rstr(const json_t *rec, const char *key)
{
    return json_string_value(json_object_get(rec, key));
}

static bool rflag(const json_t *rec, const char *key)
{
    return json_is_true(json_object_get(rec, key));
}

/* Records from index from on: one action; types "dir:Type" in order; only the last is last. */
static size_t expect_action(const json_t *recs, size_t from, const char *const *types, size_t n)
{
    const char *corr = rstr(json_array_get(recs, from), "correlation");
    ck_assert_ptr_nonnull(corr);
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(recs, from + i);
        ck_assert_msg(r != NULL, "missing record %s", types[i]);
        char got[48];
        snprintf(got, sizeof(got), "%s:%s", rstr(r, "direction"), rstr(r, "msg_type"));
        ck_assert_str_eq(got, types[i]);
        ck_assert_str_eq(rstr(r, "correlation"), corr);
        ck_assert(rflag(r, "correlation_is_anchor") == (i == 0));
        ck_assert_msg(rflag(r, "correlation_is_last") == (i + 1 == n), "last flag on %s", types[i]);
    }
    return from + n;
}

START_TEST(test_meta_events_carry_the_action_correlation)
{
    fake_conn *l = joined(WAMP_SER_JSON, "realm1");
    subscribe(l, 1, "{}", "wamp.session.on_join");
    subscribe(l, 2, "{}", "wamp.session.on_leave");
    subscribe(l, 3, "{}", "wamp.subscription.on_create");
    subscribe(l, 4, "{}", "wamp.subscription.on_subscribe");
    fake_conn *k = joined(WAMP_SER_JSON, "realm1");
    fake_conn_clear(l);
    trace *t = start("meta");
    fake_conn *a = joined(WAMP_SER_MSGPACK, "realm1");        /* HELLO, WELCOME, on_join */
    subscribe(a, 5, "{}", "com.traced");                      /* + on_create, on_subscribe */
    fake_conn_send(a, "[6, {}, \"wamp.close.close_realm\"]"); /* GOODBYE, reply, on_leave */
    fake_conn_clear(a);
    fake_conn *v = joined(WAMP_SER_JSON, "realm1");
    fake_conn_clear(l);
    char args[48];
    snprintf(args, sizeof(args), "[%llu]", (unsigned long long)sid(v));
    json_decref(call(k, "wamp.session.kill", args, NULL)); /* CALL, GOODBYE, RESULT, on_leave */
    fake_conn *w = joined(WAMP_SER_JSON, "realm1");
    fake_conn_clear(l);
    fake_conn_disconnect(w); /* lost: on_leave in an action of its own */
    fake_conn_clear(l);
    json_t *recs = trace_render_records(t, 0, UINT64_MAX, 1000);
    ck_assert_ptr_nonnull(recs);
    static const char *const join[] = {"rx:Hello", "tx:Welcome", "tx:Event"};
    static const char *const sub[] = {"rx:Subscribe", "tx:Subscribed", "tx:Event", "tx:Event"};
    static const char *const bye[] = {"rx:Goodbye", "tx:Goodbye", "tx:Event"};
    static const char *const kill[] = {"rx:Call", "tx:Goodbye", "tx:Result", "tx:Event"};
    size_t i = expect_action(recs, 0, join, 3);
    i = expect_action(recs, i, sub, 4);
    i = expect_action(recs, i, bye, 3);
    i = expect_action(recs, i, join, 3); /* v */
    i = expect_action(recs, i, kill, 4);
    ck_assert_str_eq(rstr(json_array_get(recs, i - 4), "uri"), "wamp.session.kill");
    i = expect_action(recs, i, join, 3); /* w */
    /* The lost connection's on_leave: its own correlation, the last of it. */
    const json_t *lost = json_array_get(recs, i);
    ck_assert_str_eq(rstr(lost, "msg_type"), "Event");
    ck_assert_ptr_nonnull(rstr(lost, "correlation"));
    ck_assert_str_ne(rstr(lost, "correlation"), rstr(json_array_get(recs, i - 1), "correlation"));
    ck_assert(rflag(lost, "correlation_is_last"));
    ck_assert_uint_eq(json_array_size(recs), i + 1);
    json_decref(recs);
    fake_conn_free(a);
    fake_conn_free(v);
    fake_conn_free(w);
    fake_conn_free(k);
    fake_conn_free(l);
}

END_TEST

/* Killing a callee with a pending call: the caller's ERROR carries that call's correlation, and
 * the kill's own messages resume with the kill's (the dealer's call actions do not replace it). */
START_TEST(test_kill_of_a_callee_keeps_both_correlations)
{
    fake_conn *l = joined(WAMP_SER_JSON, "realm1");
    int64_t leave_sub = subscribe(l, 1, "{}", "wamp.session.on_leave");
    int64_t delete_sub = subscribe(l, 2, "{}", "wamp.registration.on_delete");
    fake_conn *callee = joined(WAMP_SER_JSON, "realm1");
    fake_conn *caller = joined(WAMP_SER_MSGPACK, "realm1");
    int64_t reg = do_register(callee, 2, "{}", "com.slow");
    fake_conn_clear(l);
    trace *t = start("kill");
    fake_conn_send(caller, "[48, 3, {}, \"com.slow\", []]");
    fake_conn_clear(callee);
    char args[48];
    snprintf(args, sizeof(args), "[%llu]", (unsigned long long)sid(callee));
    uint64_t victim = sid(callee);
    json_decref(call(l, "wamp.session.kill", args, NULL));
    fake_expect_error(caller, WAMP_MSG_CALL, 3, WAMP_ERROR_CANCELED);
    expect_pair(l, delete_sub, victim, reg);
    expect_leave(l, leave_sub, victim);
    json_t *recs = trace_render_records(t, 0, UINT64_MAX, 100);
    ck_assert_uint_eq(json_array_size(recs), 8);
    static const char *const types[] = {"rx:Call",  "tx:Invocation", "rx:Call",  "tx:Goodbye",
                                        "tx:Error", "tx:Result",     "tx:Event", "tx:Event"};
    static const int action[] = {1, 1, 2, 2, 1, 2, 2, 2};
    static const bool last[] = {false, false, false, false, true, false, false, true};
    const char *corr[3] = {NULL, rstr(json_array_get(recs, 0), "correlation"),
                           rstr(json_array_get(recs, 2), "correlation")};
    ck_assert_str_ne(corr[1], corr[2]);
    for (size_t i = 0; i < 8; i++) {
        const json_t *r = json_array_get(recs, i);
        char got[48];
        snprintf(got, sizeof(got), "%s:%s", rstr(r, "direction"), rstr(r, "msg_type"));
        ck_assert_str_eq(got, types[i]);
        ck_assert_str_eq(rstr(r, "correlation"), corr[action[i]]);
        ck_assert_msg(rflag(r, "correlation_is_last") == last[i], "record %zu", i);
    }
    json_decref(recs);
    fake_conn_free(callee);
    fake_conn_free(caller);
    fake_conn_free(l);
}

END_TEST

/* --- Configuration ------------------------------------------------------------------------ */

static bool announces_meta(fake_conn *c, const char *realm)
{
    fake_conn_send(c, "[1, \"%s\", {\"roles\": {\"caller\": {}, \"subscriber\": {}}}]", realm);
    json_t *w = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(w, 0), WAMP_MSG_WELCOME);
    json_t *roles = json_object_get(json_array_get(w, 2), "roles");
    json_t *bf = json_object_get(json_object_get(roles, "broker"), "features");
    json_t *df = json_object_get(json_object_get(roles, "dealer"), "features");
    bool all = json_is_true(json_object_get(bf, "session_meta_api")) &&
               json_is_true(json_object_get(bf, "subscription_meta_api")) &&
               json_is_true(json_object_get(df, "session_meta_api")) &&
               json_is_true(json_object_get(df, "registration_meta_api"));
    bool any = json_object_get(bf, "session_meta_api") ||
               json_object_get(bf, "subscription_meta_api") ||
               json_object_get(df, "session_meta_api") ||
               json_object_get(df, "registration_meta_api");
    json_decref(w);
    ck_assert(all == any);
    return all;
}

/* options.enable_meta_api false, and the management realm: no meta procedures, nothing
 * announced; other realms announce the four features. */
START_TEST(test_realm_without_meta_api)
{
    static rt_permission all = {
            .uri = "", .match = WAMP_MATCH_PREFIX, .allow_call = true, .allow_subscribe = true};
    static rt_role role = {.name = "anonymous", .permissions = &all, .n_permissions = 1};
    static rt_realm_config realms[] = {
            {.name = "with", .roles = &role, .n_roles = 1},
            {.name = "without", .roles = &role, .n_roles = 1, .no_meta_api = true},
    };
    rt_config cfg = T.cfg;
    cfg.realms = realms;
    cfg.n_realms = 2;
    cfg.mgmt_enabled = true;
    cfg.mgmt_realm = "mgmt";
    rt_router *rt = rt_router_new(&cfg, NULL, NULL);
    ck_assert_ptr_nonnull(rt);
    ck_assert(rt_realm_has_meta_api(rt_router_find_realm(rt, "with")));
    ck_assert(!rt_realm_has_meta_api(rt_router_find_realm(rt, "without")));
    ck_assert(!rt_realm_has_meta_api(rt_router_find_realm(rt, "mgmt")));
    fake_conn *a = fake_conn_new(rt, WAMP_SER_JSON);
    ck_assert(announces_meta(a, "with"));
    fake_conn *b = fake_conn_new(rt, WAMP_SER_MSGPACK);
    ck_assert(!announces_meta(b, "without"));
    ck_assert_int_eq(call_int(a, "wamp.session.count", NULL, NULL), 1);
    call_fails(b, "wamp.session.count", NULL, NULL, WAMP_ERROR_NO_SUCH_PROCEDURE);
    fake_conn_free(a);
    fake_conn_free(b);
    rt_router_free(rt);
}

END_TEST

/* --- Cost ----------------------------------------------------------------------------------- */

/* Allocations of one join + GOODBYE + rejoin cycle... measured over n joins of fresh sessions. */
static size_t join_allocs(int n)
{
    size_t before = alloc_count_best();
    for (int i = 0; i < n; i++) {
        fake_conn *c = joined(WAMP_SER_JSON, "realm1");
        fake_conn_send(c, "[6, {}, \"wamp.close.close_realm\"]");
        fake_conn_free(c);
    }
    return alloc_count_best() - before;
}

START_TEST(test_join_nobody_listens_allocates_nothing_for_meta)
{
    enum {
        N = 20
    };

    alloc_count_install();
    fake_conn *app = joined(WAMP_SER_JSON, "realm1");
    (void)join_allocs(N); /* warm-up: hash maps at their size */
    size_t quiet = join_allocs(N);
    ck_assert_uint_gt(quiet, 0);
    /* Subscriptions that do not match on_join / on_leave: the same cost. The session hash map
     * may differ by an allocation over N joins; one allocation per join for the meta API would
     * add N. */
    subscribe(app, 1, "{}", "com.app");
    subscribe(app, 2, "{}", "wamp.subscription.on_create");
    (void)join_allocs(5);
    size_t unrelated = join_allocs(N);
    ck_assert_uint_le(unrelated, quiet + 2);
    ck_assert_uint_ge(unrelated + 2, quiet);
    /* Someone listens: events are built (several allocations each). */
    subscribe(app, 3, "{}", "wamp.session.on_join");
    (void)join_allocs(5);
    fake_conn_clear(app);
    ck_assert_uint_ge(join_allocs(N), quiet + 2 * N);
    fake_conn_free(app);
}

END_TEST

static Suite *rt_meta_suite(void)
{
    Suite *s = suite_create("rt_meta");
    TCase *tc = tcase_create("meta");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_session_count_list_get);
    tcase_add_test(tc, test_meta_procedures_follow_permissions);
    tcase_add_test(tc, test_wamp_namespace_is_the_routers);
    tcase_add_test(tc, test_on_join_and_on_leave);
    tcase_add_test(tc, test_kill);
    tcase_add_test(tc, test_kill_by_authid_authrole_all);
    tcase_add_test(tc, test_subscription_meta);
    tcase_add_test(tc, test_catch_all_gets_own_meta_event_after_subscribed);
    tcase_add_test(tc, test_registration_meta);
    tcase_add_test(tc, test_meta_events_carry_the_action_correlation);
    tcase_add_test(tc, test_join_nobody_listens_allocates_nothing_for_meta);
    tcase_add_test(tc, test_realm_without_meta_api);
    tcase_add_test(tc, test_kill_of_a_callee_keeps_both_correlations);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_meta_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
