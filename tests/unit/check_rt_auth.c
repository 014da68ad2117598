/* check_rt_auth.c: authentication (router/rt_auth.c, its configuration in rt_config.c and the
 * session handshake in rt_session.c): PBKDF2 and WAMP-CRA against published and autobahn-made
 * vectors (tests/data/gen_auth_vectors.py prints them), cryptosign verification, the "auth"
 * configuration of each method, and HELLO -> CHALLENGE -> AUTHENTICATE -> WELCOME / ABORT over the
 * fake transport with the fake clock (failure delay, out-of-order messages, management
 * credentials, tracing redaction and correlation). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <sodium.h>

#include "fake_clock.h"
#include "fake_transport.h"
#include "rt_auth.h"
#include "rt_config.h"
#include "rt_realm.h"
#include "rt_router.h"
#include "trace_hub.h"
#include "trace_render.h"

/* ---- Vectors ------------------------------------------------------------------------------- */

static void hex_eq(const uint8_t *bin, size_t len, const char *want)
{
    char hex[256];
    ck_assert_uint_le(len * 2 + 1, sizeof(hex));
    sodium_bin2hex(hex, sizeof(hex), bin, len);
    ck_assert_str_eq(hex, want);
}

#define CRA_CHALLENGE                                                                        \
    "{\"authid\":\"joe\",\"authrole\":\"user\",\"authmethod\":\"wampcra\",\"authprovider\":" \
    "\"static\",\"session\":1234,\"nonce\":\"abc\",\"timestamp\":\"2026-11-22T05:00:00.000Z\"}"

/* Values printed by tests/data/gen_auth_vectors.py (python3-autobahn 22.7: auth.compute_wcs and
 * auth.derive_key, the functions autobahn clients use). */
START_TEST(test_wampcra_matches_autobahn)
{
    char wcs[RT_AUTH_WCS_LEN];
    rt_auth_wampcra_sign("secret1", 7, CRA_CHALLENGE, strlen(CRA_CHALLENGE), wcs);
    ck_assert_str_eq(wcs, "O1gx4l+7h1NaGmJ8PSduUwQFtYKLS5Xh38zPxFZ3kuE=");

    char key[64];
    ck_assert_int_eq(rt_auth_wampcra_derive_key("secret2", "salt123", 100, 16, key, sizeof(key)),
                     WAMP_OK);
    ck_assert_str_eq(key, "LG5/FwnS5WvgmlEyLPk/pQ==");
    rt_auth_wampcra_sign(key, strlen(key), CRA_CHALLENGE, strlen(CRA_CHALLENGE), wcs);
    ck_assert_str_eq(wcs, "eRwmgt1PJA0qpVmVyUmIJgYSBtq4GbchSGf/ouEJ78k=");
    ck_assert_int_eq(rt_auth_wampcra_derive_key("secret2", "salt123", 1000, 32, key, sizeof(key)),
                     WAMP_OK);
    ck_assert_str_eq(key, "nythvFZ7EuM5sPCQrrgnz1oJiZXUNcZZFlDIdGSiNUs=");
    ck_assert_int_eq(rt_auth_wampcra_derive_key("s", "salt", 1, 32, key, 10), WAMP_EINVAL);
}

END_TEST

#define CS_PUBKEY "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
/* python3-nacl: SigningKey(bytes(range(32))).sign(bytes(range(32, 64))), as autobahn sends it. */
#define CS_SIG                                                                                     \
    "46fc09cc6f1d97d241e1b7a6fd1e46f788e6841d25eabbf3b5a9a44590086187e42bedd04abff976d21e0387600b" \
    "49f2552012e4a9bc4b15966a82b444db3001"
#define CS_CHALLENGE_HEX "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"

START_TEST(test_cryptosign_verify)
{
    uint8_t pk[32], ch[32];
    sodium_hex2bin(pk, 32, CS_PUBKEY, 64, NULL, NULL, NULL);
    for (int i = 0; i < 32; i++) {
        ch[i] = (uint8_t)(32 + i);
    }
    ck_assert(rt_auth_cryptosign_verify(pk, ch, CS_SIG CS_CHALLENGE_HEX)); /* 96 bytes */
    ck_assert(rt_auth_cryptosign_verify(pk, ch, CS_SIG));                  /* 64 bytes */
    char bad[200];
    snprintf(bad, sizeof(bad), "%s%s", CS_SIG, CS_CHALLENGE_HEX);
    bad[10] = bad[10] == '0' ? '1' : '0'; /* signature altered */
    ck_assert(!rt_auth_cryptosign_verify(pk, ch, bad));
    snprintf(bad, sizeof(bad), "%s%s", CS_SIG, CS_CHALLENGE_HEX);
    bad[190] = bad[190] == '0' ? '1' : '0'; /* appended message is not the challenge */
    ck_assert(!rt_auth_cryptosign_verify(pk, ch, bad));
    ch[0] ^= 1; /* another challenge */
    ck_assert(!rt_auth_cryptosign_verify(pk, ch, CS_SIG));
    ch[0] ^= 1;
    ck_assert(!rt_auth_cryptosign_verify(pk, ch, "abcd"));
    ck_assert(!rt_auth_cryptosign_verify(pk, ch, ""));
    ck_assert(!rt_auth_cryptosign_verify(pk, ch, NULL));
    memset(bad, 'x', 128);
    bad[128] = '\0';
    ck_assert(!rt_auth_cryptosign_verify(pk, ch, bad));
    pk[0] ^= 1; /* another key */
    ck_assert(!rt_auth_cryptosign_verify(pk, ch, CS_SIG));
}

END_TEST

START_TEST(test_pick)
{
    rt_auth_config a;
    memset(&a, 0, sizeof(a));
    a.wampcra.enabled = true;
    json_t *l = json_pack("[s, s, s]", "ticket", "wampcra", "anonymous");
    ck_assert_int_eq(rt_auth_pick(l, &a, true), RT_AUTH_WAMPCRA);
    ck_assert_int_eq(rt_auth_pick(l, NULL, true), RT_AUTH_ANONYMOUS);
    ck_assert_int_eq(rt_auth_pick(l, NULL, false), RT_AUTH_NONE);
    json_decref(l);
    l = json_pack("[s, i, s]", "cookie", 5, "cryptosign");
    ck_assert_int_eq(rt_auth_pick(l, &a, true), RT_AUTH_NONE);
    a.cryptosign.enabled = true;
    ck_assert_int_eq(rt_auth_pick(l, &a, true), RT_AUTH_CRYPTOSIGN);
    json_decref(l);
    /* No (or an empty) authmethods list means anonymous, as in Crossbar. */
    ck_assert_int_eq(rt_auth_pick(NULL, &a, true), RT_AUTH_ANONYMOUS);
    ck_assert_int_eq(rt_auth_pick(NULL, &a, false), RT_AUTH_NONE);
    l = json_array();
    ck_assert_int_eq(rt_auth_pick(l, &a, true), RT_AUTH_ANONYMOUS);
    json_decref(l);
}

END_TEST

/* ---- Configuration ------------------------------------------------------------------------- */

#define ALLOW_ALL "'allow':{'call':true,'register':true,'publish':true,'subscribe':true}"
#define ROLE_USER "{'name':'user','permissions':[{'uri':'','match':'prefix'," ALLOW_ALL "}]}"
#define ROLE_ANON "{'name':'anonymous','permissions':[]}"
#define AUTH_SECTION                                                                              \
    "{'ticket':{'type':'static','principals':{'joe':{'ticket':'${WAMPSCOPE_TEST_TICKET}',"        \
    "'role':'user'},'ghost':{'ticket':'boo','role':'nobody'},'norole':{'ticket':'nr'}}},"         \
    "'wampcra':{'type':'static','users':{'ann':{'secret':'secret1','role':'user'},"               \
    "'sal':{'secret':'LG5/FwnS5WvgmlEyLPk/pQ==','role':'user','salt':'salt123','iterations':100," \
    "'keylen':16}}},"                                                                             \
    "'cryptosign':{'type':'static','principals':{'cat':{'role':'user','authorized_keys':["        \
    "'" CS_PUBKEY "']},'far':{'role':'user','realm':'realm2','authorized_keys':["                 \
    "'0000000000000000000000000000000000000000000000000000000000000001']}}}}"

#define CONFIG(auth, wampscope)                                                                    \
    "{'version':2,'controller':{'id':'node1'},'workers':[{'type':'router','realms':["              \
    "{'name':'realm1','roles':[" ROLE_USER "," ROLE_ANON "]},{'name':'realm2','roles':[" ROLE_USER \
    "]}],"                                                                                         \
    "'transports':[{'type':'websocket','id':'tauth','endpoint':{'type':'tcp','port':0},"           \
    "'auth':" auth "}],'wampscope':" wampscope "}]}"

#define MGMT_AUTH                                                            \
    "{'ticket':{'type':'static','principals':{'admin':{'ticket':'adminpw'}," \
    "'op':{'ticket':'oppw','role':'operator'}}}}"

/* Loads a config written with single quotes. */
static wamp_err load_q(const char *text, rt_config **out, char *err, size_t err_len)
{
    char *t = strdup(text);
    ck_assert_ptr_nonnull(t);
    for (char *p = t; *p; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    wamp_err rc = rt_config_load_string(t, strlen(t), out, err, err_len);
    free(t);
    return rc;
}

START_TEST(test_config_methods)
{
    setenv("WAMPSCOPE_TEST_TICKET", "from-env", 1);
    rt_config *cfg = NULL;
    char err[256] = "";
    ck_assert_msg(load_q(CONFIG(AUTH_SECTION, "{'management':{'auth':" MGMT_AUTH "}}"), &cfg, err,
                         sizeof(err)) == WAMP_OK,
                  "%s", err);
    const rt_listener *l = &cfg->listeners[0];
    ck_assert_ptr_null(l->anonymous_role); /* credentials only: anonymous refused */
    ck_assert(l->auth.ticket.enabled && l->auth.wampcra.enabled && l->auth.cryptosign.enabled);
    ck_assert_uint_eq(l->auth.ticket.n_principals, 3);
    const rt_auth_principal *joe = rt_config_find_principal(&l->auth.ticket, "joe");
    ck_assert_str_eq(joe->secret, "from-env"); /* "${VAR}" read from the environment */
    ck_assert_str_eq(joe->role, "user");
    ck_assert_ptr_null(rt_config_find_principal(&l->auth.ticket, "norole")->role);
    ck_assert_ptr_null(rt_config_find_principal(&l->auth.ticket, "nobody"));
    const rt_auth_principal *ann = rt_config_find_principal(&l->auth.wampcra, "ann");
    ck_assert_str_eq(ann->secret, "secret1");
    ck_assert_ptr_null(ann->salt);
    const rt_auth_principal *sal = rt_config_find_principal(&l->auth.wampcra, "sal");
    ck_assert_str_eq(sal->salt, "salt123");
    ck_assert_uint_eq(sal->iterations, 100);
    ck_assert_uint_eq(sal->keylen, 16);
    const rt_auth_principal *cat = rt_config_find_principal(&l->auth.cryptosign, "cat");
    ck_assert_uint_eq(cat->n_keys, 1);
    hex_eq(cat->keys[0], 32, CS_PUBKEY);
    ck_assert_ptr_null(cat->realm);
    ck_assert_str_eq(rt_config_find_principal(&l->auth.cryptosign, "far")->realm, "realm2");
    ck_assert_uint_eq(cfg->limits.auth_failure_delay_ms, 1000); /* the default */
    ck_assert_ptr_nonnull(cfg->mgmt_auth);
    ck_assert(cfg->mgmt_auth->ticket.enabled && !cfg->mgmt_auth->wampcra.enabled);
    /* Management principals default to role "admin". */
    ck_assert_str_eq(rt_config_find_principal(&cfg->mgmt_auth->ticket, "admin")->role, "admin");
    ck_assert_str_eq(rt_config_find_principal(&cfg->mgmt_auth->ticket, "op")->role, "operator");
    rt_config_free(cfg);

    /* Anonymous beside credentials; no management credentials = protected mode. */
    ck_assert_msg(load_q(CONFIG("{'anonymous':{'type':'static','role':'guest'},"
                                "'ticket':{'type':'static','principals':{}}}",
                                "{'limits':{'auth_failure_delay':0}}"),
                         &cfg, err, sizeof(err)) == WAMP_OK,
                  "%s", err);
    ck_assert_str_eq(cfg->listeners[0].anonymous_role, "guest");
    ck_assert(cfg->listeners[0].auth.ticket.enabled);
    ck_assert_uint_eq(cfg->listeners[0].auth.ticket.n_principals, 0);
    ck_assert(!cfg->listeners[0].auth.wampcra.enabled);
    ck_assert_ptr_null(cfg->mgmt_auth);
    ck_assert_uint_eq(cfg->limits.auth_failure_delay_ms, 0);
    rt_config_free(cfg);

    /* A rawsocket transport takes the same "auth" (and without "anonymous" refuses it). */
    ck_assert_msg(load_q("{'version':2,'workers':[{'type':'router','realms':[{'name':'realm1',"
                         "'roles':[" ROLE_USER "]}],'transports':[{'type':'rawsocket',"
                         "'endpoint':{'type':'tcp','port':0},'auth':{'ticket':{'type':'static',"
                         "'principals':{'joe':{'ticket':'t','role':'user'}}}}},"
                         "{'type':'rawsocket','endpoint':{'type':'tcp','port':0}}]}]}",
                         &cfg, err, sizeof(err)) == WAMP_OK,
                  "%s", err);
    ck_assert_ptr_null(cfg->listeners[0].anonymous_role);
    ck_assert(cfg->listeners[0].auth.ticket.enabled);
    ck_assert_str_eq(cfg->listeners[1].anonymous_role, "anonymous");
    ck_assert(!cfg->listeners[1].auth.ticket.enabled);
    rt_config_free(cfg);

    /* A set but empty variable is refused (with the key path, never a value). */
    setenv("WAMPSCOPE_TEST_TICKET", "", 1);
    ck_assert_int_eq(load_q(CONFIG(AUTH_SECTION, "{}"), &cfg, err, sizeof(err)), WAMP_EINVAL);
    ck_assert_str_eq(err, "workers[0].transports[0].auth.ticket.principals.joe.ticket: "
                          "environment variable WAMPSCOPE_TEST_TICKET is empty");
    unsetenv("WAMPSCOPE_TEST_TICKET");
    ck_assert_int_eq(load_q(CONFIG(AUTH_SECTION, "{}"), &cfg, err, sizeof(err)), WAMP_EINVAL);
    ck_assert_str_eq(err, "workers[0].transports[0].auth.ticket.principals.joe.ticket: "
                          "environment variable WAMPSCOPE_TEST_TICKET is not set");
    /* Only the whole-value "${VAR}" form reads the environment (Crossbar's maybe_from_env). */
    ck_assert_msg(load_q(CONFIG("{'ticket':{'type':'static','principals':{'a':{'ticket':"
                                "'$WAMPSCOPE_TEST_TICKET'},'b':{'ticket':'x${Y}'}}}}",
                                "{}"),
                         &cfg, err, sizeof(err)) == WAMP_OK,
                  "%s", err);
    ck_assert_str_eq(cfg->listeners[0].auth.ticket.principals[0].secret, "$WAMPSCOPE_TEST_TICKET");
    ck_assert_str_eq(cfg->listeners[0].auth.ticket.principals[1].secret, "x${Y}");
    rt_config_free(cfg);
}

END_TEST

static rt_config *load_source(const char *rel, char *err, size_t err_len, wamp_err *rc)
{
    const char *src = getenv("RT_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", src ? src : ".", rel);
    rt_config *cfg = NULL;
    *rc = rt_config_load_file(path, &cfg, err, err_len);
    return cfg;
}

/* configs/auth.example.json (every method, a restricted role, management credentials) and the
 * e2e config load, with their secrets from the environment. */
START_TEST(test_config_files)
{
    char err[512] = "";
    wamp_err rc;
    unsetenv("APP_BACKEND_TICKET");
    setenv("WAMPSCOPE_ADMIN_TICKET", "a1", 1);
    rt_config *cfg = load_source("configs/auth.example.json", err, sizeof(err), &rc);
    ck_assert_int_eq(rc, WAMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err,
                                 "workers[0].transports[0].auth.ticket.principals.backend1."
                                 "ticket: environment variable APP_BACKEND_TICKET is not set"));
    setenv("APP_BACKEND_TICKET", "t1", 1);
    setenv("APP_ALICE_SECRET", "s1", 1);
    setenv("WAMPSCOPE_ADMIN_TICKET", "a1", 1);
    cfg = load_source("configs/auth.example.json", err, sizeof(err), &rc);
    ck_assert_msg(rc == WAMP_OK, "%s", err);
    const rt_listener *l = &cfg->listeners[0];
    ck_assert_str_eq(l->anonymous_role, "viewer");
    ck_assert_str_eq(rt_config_find_principal(&l->auth.ticket, "backend1")->secret, "t1");
    ck_assert_str_eq(rt_config_find_principal(&l->auth.wampcra, "alice")->secret, "s1");
    ck_assert_str_eq(rt_config_find_principal(&l->auth.wampcra, "bob")->salt, "bob-salt");
    ck_assert_str_eq(rt_config_find_principal(&l->auth.cryptosign, "device1")->role, "backend");
    ck_assert_str_eq(rt_config_find_principal(&cfg->mgmt_auth->ticket, "admin")->role, "admin");
    ck_assert_str_eq(rt_config_find_principal(&cfg->mgmt_auth->cryptosign, "ops")->role, "admin");
    /* bob's stored secret is autobahn's derive_key("bob-password", "bob-salt", 1000, 32). */
    char key[64];
    ck_assert_int_eq(
            rt_auth_wampcra_derive_key("bob-password", "bob-salt", 1000, 32, key, sizeof(key)),
            WAMP_OK);
    ck_assert_str_eq(rt_config_find_principal(&l->auth.wampcra, "bob")->secret, key);
    rt_config_free(cfg);

    setenv("WAMPSCOPE_E2E_TICKET", "t", 1);
    setenv("WAMPSCOPE_E2E_MGMT_TICKET", "m", 1);
    cfg = load_source("configs/test-e2e-auth.json", err, sizeof(err), &rc);
    ck_assert_msg(rc == WAMP_OK, "%s", err);
    ck_assert_ptr_null(cfg->listeners[0].anonymous_role);
    ck_assert_uint_eq(cfg->limits.auth_failure_delay_ms, 400);
    /* The salted e2e user's secret: derive_key("salted-password", "e2e-salt", 1000, 32). */
    ck_assert_int_eq(
            rt_auth_wampcra_derive_key("salted-password", "e2e-salt", 1000, 32, key, sizeof(key)),
            WAMP_OK);
    ck_assert_str_eq(rt_config_find_principal(&cfg->listeners[0].auth.wampcra, "sal")->secret, key);
    rt_config_free(cfg);
}

END_TEST

/* ---- Handshake over the fake transport ------------------------------------------------------ */

#define DELAY_MS 700

static rt_config *C;
static fake_clock CLK;
static rt_router *RT;

static void setup_router(const char *wampscope)
{
    setenv("WAMPSCOPE_TEST_TICKET", "joes-ticket", 1);
    char err[256] = "";
    char text[8192];
    snprintf(text, sizeof(text), CONFIG(AUTH_SECTION, "%s"), wampscope);
    ck_assert_msg(load_q(text, &C, err, sizeof(err)) == WAMP_OK, "%s", err);
    CLK.now_us = 1000000;
    RT = rt_router_new(C, fake_clock_now, &CLK);
    ck_assert_ptr_nonnull(RT);
}

static void setup(void)
{
    setup_router("{'limits':{'hello_timeout':5000,'auth_failure_delay':700},"
                 "'management':{'auth':" MGMT_AUTH "}}");
}

static void teardown(void)
{
    rt_router_free(RT);
    rt_config_free(C);
    RT = NULL;
    C = NULL;
}

static fake_conn *conn(wamp_ser ser)
{
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    snprintf(peer.addr, sizeof(peer.addr), "127.0.0.1:40000");
    peer.is_loopback = true;
    peer.listener_id = "tauth";
    return fake_conn_new_peer(RT, ser, &peer);
}

/* Sends HELLO to realm with authid (NULL = none), authmethods and authextra as JSON (NULL =
 * absent). */
static void hello(fake_conn *c, const char *realm, const char *authid, const char *methods,
                  const char *authextra)
{
    json_t *d = json_pack("{s:{s:{}}}", "roles", "caller");
    if (authid) {
        json_object_set_new(d, "authid", json_string(authid));
    }
    if (methods) {
        json_object_set_new(d, "authmethods", json_loads(methods, JSON_DECODE_ANY, NULL));
    }
    if (authextra) {
        json_object_set_new(d, "authextra", json_loads(authextra, 0, NULL));
    }
    json_t *m = json_pack("[i, s, o]", 1, realm, d);
    char *text = json_dumps(m, JSON_COMPACT);
    ck_assert_int_eq(fake_conn_send(c, "%s", text), WAMP_OK);
    free(text);
    json_decref(m);
}

static void authenticate(fake_conn *c, const char *signature)
{
    json_t *m = json_pack("[i, s, {}]", 5, signature);
    char *text = json_dumps(m, JSON_COMPACT);
    ck_assert_int_eq(fake_conn_send(c, "%s", text), WAMP_OK);
    free(text);
    json_decref(m);
}

/* The next message is CHALLENGE for method; returns its Extra (owned). */
static json_t *expect_challenge(fake_conn *c, const char *method)
{
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_CHALLENGE);
    ck_assert_str_eq(fake_msg_str(m, 1), method);
    json_t *extra = json_incref(json_array_get(m, 2));
    ck_assert(json_is_object(extra));
    json_decref(m);
    ck_assert_ptr_nonnull(c->s);
    ck_assert_int_eq(rt_session_state_get(c->s), RT_SESSION_CHALLENGED);
    return extra;
}

/* The next message is WELCOME; returns its Details (owned). */
static json_t *expect_welcome(fake_conn *c, const char *authid, const char *role,
                              const char *method)
{
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_WELCOME);
    json_t *d = json_incref(json_array_get(m, 2));
    json_decref(m);
    ck_assert_str_eq(json_string_value(json_object_get(d, "authid")), authid);
    ck_assert_str_eq(json_string_value(json_object_get(d, "authrole")), role);
    ck_assert_str_eq(json_string_value(json_object_get(d, "authmethod")), method);
    ck_assert_str_eq(json_string_value(json_object_get(d, "authprovider")), "static");
    ck_assert_int_eq(rt_session_state_get(c->s), RT_SESSION_JOINED);
    return d;
}

static void expect_abort_now(fake_conn *c, const char *reason)
{
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ABORT);
    ck_assert_str_eq(fake_msg_str(m, 2), reason);
    /* No secret in the message. */
    char *text = json_dumps(m, 0);
    ck_assert_ptr_null(strstr(text, "joes-ticket"));
    ck_assert_ptr_null(strstr(text, "secret1"));
    free(text);
    json_decref(m);
    ck_assert(c->close_requested);
    ck_assert_ptr_null(c->s);
}

/* Nothing is sent before the failure delay; then ABORT with reason, and the connection closes. */
static void expect_abort_delayed(fake_conn *c, const char *reason)
{
    ck_assert_uint_eq(fake_conn_pending(c), 0);
    ck_assert_int_eq(rt_session_state_get(c->s), RT_SESSION_AUTH_FAILED);
    fake_clock_advance_ms(&CLK, DELAY_MS - 1);
    rt_router_tick(RT);
    ck_assert_uint_eq(fake_conn_pending(c), 0);
    ck_assert(!c->close_requested);
    fake_clock_advance_ms(&CLK, 1);
    rt_router_tick(RT);
    expect_abort_now(c, reason);
}

static void ticket_flow(wamp_ser ser)
{
    fake_conn *c = conn(ser);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_t *extra = expect_challenge(c, "ticket");
    ck_assert_uint_eq(json_object_size(extra), 0);
    json_decref(extra);
    authenticate(c, "joes-ticket");
    json_decref(expect_welcome(c, "joe", "user", "ticket"));
    ck_assert_uint_eq(rt_realm_member_count(rt_router_find_realm(RT, "realm1")), 1);
    fake_conn_free(c);

    c = conn(ser);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "joes-ticket!");
    expect_abort_delayed(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    ck_assert_uint_eq(rt_realm_member_count(rt_router_find_realm(RT, "realm1")), 0);
    fake_conn_free(c);
}

START_TEST(test_ticket_json)
{
    ticket_flow(WAMP_SER_JSON);
}

END_TEST

START_TEST(test_ticket_msgpack)
{
    ticket_flow(WAMP_SER_MSGPACK);
}

END_TEST

START_TEST(test_unknown_principal_and_role)
{
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "nobody", "[\"ticket\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_PRINCIPAL);
    fake_conn_free(c);
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", NULL, "[\"wampcra\"]", NULL); /* no authid at all */
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_PRINCIPAL);
    fake_conn_free(c);
    /* The principal's role is not defined on the realm (or it has none). */
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "ghost", "[\"ticket\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_ROLE);
    fake_conn_free(c);
    c = conn(WAMP_SER_MSGPACK);
    hello(c, "realm1", "norole", "[\"ticket\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_ROLE);
    fake_conn_free(c);
    ck_assert_uint_eq(rt_router_session_count(RT), 0);
}

END_TEST

START_TEST(test_long_non_ascii_authid)
{
    /* The denial quotes the client's authid; cut to fit, it must still be UTF-8, or the ABORT
     * goes without its message (json_pack refuses the text). */
    char authid[256] = "";
    for (size_t i = 0; i < 100; i++) {
        strcat(authid, "\xc3\xa9"); /* U+00E9, two octets */
    }
    for (size_t off = 0; off < 2; off++) {
        fake_conn *c = conn(WAMP_SER_JSON);
        hello(c, "realm1", authid + off * 2, "[\"ticket\"]", NULL);
        fake_clock_advance_ms(&CLK, DELAY_MS);
        rt_router_tick(RT);
        json_t *m = fake_conn_next(c);
        ck_assert_ptr_nonnull(m);
        ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ABORT);
        ck_assert_str_eq(fake_msg_str(m, 2), WAMP_ERROR_NO_SUCH_PRINCIPAL);
        const char *msg = json_string_value(json_object_get(json_array_get(m, 1), "message"));
        ck_assert_ptr_nonnull(msg);
        ck_assert(strncmp(msg, "no principal with authid \"\xc3\xa9", 28) == 0);
        json_decref(m);
        fake_conn_free(c);
    }
}

END_TEST

START_TEST(test_no_auth_method)
{
    /* Anonymous is not offered on this transport; not sending authmethods means anonymous. */
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", NULL, NULL, NULL);
    expect_abort_now(c, WAMP_ERROR_NO_AUTH_METHOD);
    fake_conn_free(c);
    c = conn(WAMP_SER_MSGPACK);
    hello(c, "realm1", "joe", "[\"cookie\", \"scram\"]", NULL);
    expect_abort_now(c, WAMP_ERROR_NO_AUTH_METHOD);
    fake_conn_free(c);
    /* authmethods of the wrong type is a protocol violation. */
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "\"ticket\"", NULL);
    expect_abort_now(c, WAMP_ERROR_PROTOCOL_VIOLATION);
    fake_conn_free(c);
    /* The first offered method of the client's list is used, and failure there is final. */
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"cookie\", \"wampcra\", \"ticket\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_PRINCIPAL); /* joe is a ticket principal only */
    fake_conn_free(c);
}

END_TEST

/* HELLO.Details strings are read with their real length: "joe\u0000x" with joe's ticket is not
 * joe, and NUL in authid, authrole, authmethods or authextra.pubkey is a protocol violation
 * (ABORT), in both serializers. */
START_TEST(test_nul_in_hello_fields)
{
    static const char *const details[] = {
            "{\"authid\": \"joe\\u0000x\", \"authmethods\": [\"ticket\"]}",
            "{\"authid\": \"joe\", \"authrole\": \"user\\u0000\", \"authmethods\": [\"ticket\"]}",
            "{\"authid\": \"joe\", \"authmethods\": [\"ticket\\u0000x\"]}",
            "{\"authmethods\": [\"cryptosign\"], \"authextra\": {\"pubkey\": "
            "\"0000000000000000000000000000000000000000000000000000000000000000\\u0000\"}}",
            "{\"authid\": 7, \"authmethods\": [\"ticket\"]}",
            "{\"authid\": \"joe\", \"authmethods\": [\"ticket\", 5]}",
    };
    for (int ser = 0; ser < 2; ser++) {
        for (size_t i = 0; i < sizeof(details) / sizeof(details[0]); i++) {
            fake_conn *c = conn(ser ? WAMP_SER_MSGPACK : WAMP_SER_JSON);
            const char *d = details[i];
            fake_conn_send(c, "[1, \"realm1\", {\"roles\": {\"caller\": {}}, %s]", d + 1);
            expect_abort_now(c, WAMP_ERROR_PROTOCOL_VIOLATION);
            fake_conn_free(c);
        }
    }
    /* The same authid without the NUL joins. */
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "joes-ticket");
    json_decref(expect_welcome(c, "joe", "user", "ticket"));
    fake_conn_free(c);
}

END_TEST

static void wampcra_flow(wamp_ser ser, const char *authid, const char *password, bool salted)
{
    fake_conn *c = conn(ser);
    hello(c, "realm1", authid, "[\"wampcra\"]", NULL);
    json_t *extra = expect_challenge(c, "wampcra");
    const char *challenge = json_string_value(json_object_get(extra, "challenge"));
    ck_assert_ptr_nonnull(challenge);
    json_t *ch = json_loads(challenge, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(ch, "authid")), authid);
    ck_assert_str_eq(json_string_value(json_object_get(ch, "authrole")), "user");
    ck_assert_str_eq(json_string_value(json_object_get(ch, "authmethod")), "wampcra");
    ck_assert_str_eq(json_string_value(json_object_get(ch, "authprovider")), "static");
    ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(ch, "session")),
                      rt_session_id(c->s));
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(ch, "nonce"))), 64);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(ch, "timestamp"))), 24);
    json_decref(ch);
    char key[64];
    if (salted) {
        ck_assert_str_eq(json_string_value(json_object_get(extra, "salt")), "salt123");
        ck_assert_int_eq(json_integer_value(json_object_get(extra, "iterations")), 100);
        ck_assert_int_eq(json_integer_value(json_object_get(extra, "keylen")), 16);
        ck_assert_int_eq(rt_auth_wampcra_derive_key(password, "salt123", 100, 16, key, sizeof(key)),
                         WAMP_OK);
    } else {
        ck_assert_ptr_null(json_object_get(extra, "salt"));
        snprintf(key, sizeof(key), "%s", password);
    }
    char wcs[RT_AUTH_WCS_LEN];
    rt_auth_wampcra_sign(key, strlen(key), challenge, strlen(challenge), wcs);
    json_decref(extra);
    authenticate(c, wcs);
    json_decref(expect_welcome(c, authid, "user", "wampcra"));
    fake_conn_free(c);

    /* The signature of the right secret over another challenge is wrong. */
    c = conn(ser);
    hello(c, "realm1", authid, "[\"wampcra\"]", NULL);
    json_decref(expect_challenge(c, "wampcra"));
    authenticate(c, wcs);
    expect_abort_delayed(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    fake_conn_free(c);
}

START_TEST(test_wampcra)
{
    wampcra_flow(WAMP_SER_JSON, "ann", "secret1", false);
    wampcra_flow(WAMP_SER_MSGPACK, "ann", "secret1", false);
    wampcra_flow(WAMP_SER_JSON, "sal", "secret2", true);
    wampcra_flow(WAMP_SER_MSGPACK, "sal", "secret2", true);
}

END_TEST

static char *cs_sign(const json_t *extra, const uint8_t sk[64])
{
    const char *hex = json_string_value(json_object_get(extra, "challenge"));
    ck_assert_ptr_nonnull(hex);
    ck_assert_uint_eq(strlen(hex), 64);
    uint8_t ch[32], sm[96];
    sodium_hex2bin(ch, 32, hex, 64, NULL, NULL, NULL);
    unsigned long long smlen = 0;
    crypto_sign(sm, &smlen, ch, 32, sk); /* signature || message, as autobahn sends */
    char *out = malloc(193);
    sodium_bin2hex(out, 193, sm, 96);
    return out;
}

START_TEST(test_cryptosign)
{
    uint8_t seed[32], pk[32], sk[64];
    for (int i = 0; i < 32; i++) {
        seed[i] = (uint8_t)i;
    }
    crypto_sign_seed_keypair(pk, sk, seed);
    hex_eq(pk, 32, CS_PUBKEY);
    const wamp_ser sers[] = {WAMP_SER_JSON, WAMP_SER_MSGPACK};
    for (size_t i = 0; i < 2; i++) {
        /* authid from the public key alone. */
        fake_conn *c = conn(sers[i]);
        hello(c, "realm1", NULL, "[\"cryptosign\"]", "{\"pubkey\": \"" CS_PUBKEY "\"}");
        json_t *extra = expect_challenge(c, "cryptosign");
        char *sig = cs_sign(extra, sk);
        json_decref(extra);
        authenticate(c, sig);
        free(sig);
        json_t *d = expect_welcome(c, "cat", "user", "cryptosign");
        json_t *ax = json_object_get(d, "authextra");
        ck_assert_str_eq(json_string_value(json_object_get(ax, "x_cb_node")), "node1");
        ck_assert_str_eq(json_string_value(json_object_get(ax, "x_cb_peer")), "127.0.0.1:40000");
        json_decref(d);
        fake_conn_free(c);
    }
    /* authid without pubkey, channel_binding null. */
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "cat", "[\"cryptosign\"]", "{\"channel_binding\": null}");
    json_t *extra = expect_challenge(c, "cryptosign");
    char *sig = cs_sign(extra, sk);
    json_decref(extra);
    authenticate(c, sig);
    json_decref(expect_welcome(c, "cat", "user", "cryptosign"));
    fake_conn_free(c);
    /* Signed by another key. */
    uint8_t pk2[32], sk2[64];
    crypto_sign_keypair(pk2, sk2);
    c = conn(WAMP_SER_MSGPACK);
    hello(c, "realm1", "cat", "[\"cryptosign\"]", "{\"pubkey\": \"" CS_PUBKEY "\"}");
    extra = expect_challenge(c, "cryptosign");
    free(sig);
    sig = cs_sign(extra, sk2);
    json_decref(extra);
    authenticate(c, sig);
    free(sig);
    expect_abort_delayed(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    fake_conn_free(c);
    /* Unknown public key; a key of another principal; tls-unique; the principal's realm. */
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", NULL, "[\"cryptosign\"]",
          "{\"pubkey\": \"1111111111111111111111111111111111111111111111111111111111111111\"}");
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_PRINCIPAL);
    fake_conn_free(c);
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "far", "[\"cryptosign\"]", "{\"pubkey\": \"" CS_PUBKEY "\"}");
    expect_abort_delayed(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    fake_conn_free(c);
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "cat", "[\"cryptosign\"]",
          "{\"pubkey\": \"" CS_PUBKEY "\", \"channel_binding\": \"tls-unique\"}");
    expect_abort_delayed(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    fake_conn_free(c);
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "far", "[\"cryptosign\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_REALM);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_out_of_order)
{
    /* Anything but AUTHENTICATE while challenged is a protocol violation (and not a join). */
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    fake_conn_send(c, "[32, 1, {}, \"com.topic\"]");
    expect_abort_now(c, WAMP_ERROR_PROTOCOL_VIOLATION);
    fake_conn_free(c);
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    expect_abort_now(c, WAMP_ERROR_PROTOCOL_VIOLATION);
    fake_conn_free(c);
    /* AUTHENTICATE without a CHALLENGE. */
    c = conn(WAMP_SER_MSGPACK);
    authenticate(c, "joes-ticket");
    expect_abort_now(c, WAMP_ERROR_PROTOCOL_VIOLATION);
    fake_conn_free(c);
    /* A second AUTHENTICATE after a failed one changes nothing: the ABORT still follows. */
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "wrong");
    authenticate(c, "joes-ticket");
    expect_abort_delayed(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    fake_conn_free(c);
    /* The HELLO timeout covers the whole handshake. */
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    fake_clock_advance_ms(&CLK, 4999);
    rt_router_tick(RT);
    ck_assert(!c->close_requested);
    fake_clock_advance_ms(&CLK, 1);
    rt_router_tick(RT);
    ck_assert(c->close_requested);
    ck_assert_int_eq(c->close_code, 1008);
    fake_conn_free(c);
    /* A client that gives up while waiting for its ABORT is closed at once. */
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "nobody", "[\"ticket\"]", NULL);
    ck_assert_int_eq(rt_session_state_get(c->s), RT_SESSION_AUTH_FAILED);
    fake_conn_send(c, "[3, {}, \"wamp.close.normal\"]");
    ck_assert(c->close_requested);
    fake_conn_free(c);
    fake_clock_advance_ms(&CLK, DELAY_MS);
    rt_router_tick(RT); /* the delayed-abort list no longer holds it */
    ck_assert_uint_eq(rt_router_session_count(RT), 0);
}

END_TEST

START_TEST(test_shutdown_while_authenticating)
{
    fake_conn *a = conn(WAMP_SER_JSON);
    hello(a, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(a, "ticket"));
    fake_conn *b = conn(WAMP_SER_JSON);
    hello(b, "realm1", "nobody", "[\"ticket\"]", NULL);
    rt_router_begin_shutdown(RT);
    ck_assert(a->close_requested);
    ck_assert(b->close_requested);
    fake_conn_free(a);
    fake_conn_free(b);
    ck_assert(rt_router_shutdown_done(RT));
}

END_TEST

START_TEST(test_zero_delay)
{
    teardown();
    setup_router("{'limits':{'auth_failure_delay':0}}");
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "nope");
    expect_abort_now(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    fake_conn_free(c);
    /* Without management credentials: protected mode, anonymous admin from loopback. */
    c = conn(WAMP_SER_JSON);
    hello(c, "mgmt", NULL, NULL, NULL);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_WELCOME);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 2), "authrole")), "admin");
    json_decref(m);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_management_credentials)
{
    /* Credentials configured: protected mode is off, anonymous refused even from loopback. */
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "mgmt", NULL, NULL, NULL);
    expect_abort_now(c, WAMP_ERROR_NO_AUTH_METHOD);
    fake_conn_free(c);
    /* The management principals, not the transport's, are used on the management realm. */
    c = conn(WAMP_SER_JSON);
    hello(c, "mgmt", "joe", "[\"ticket\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_PRINCIPAL);
    fake_conn_free(c);
    c = conn(WAMP_SER_MSGPACK);
    hello(c, "mgmt", "admin", "[\"wampcra\", \"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "adminpw");
    json_decref(expect_welcome(c, "admin", "admin", "ticket"));
    fake_conn_free(c);
    /* A role the management realm does not have. */
    c = conn(WAMP_SER_JSON);
    hello(c, "mgmt", "op", "[\"ticket\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_ROLE);
    fake_conn_free(c);
    /* And the management principals do not open application realms. */
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "admin", "[\"ticket\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_PRINCIPAL);
    fake_conn_free(c);
}

END_TEST

/* stderr into a temporary file while fn runs; returns what was logged (owned). */
static char *captured_log(void (*fn)(void))
{
    char path[] = "/tmp/check_rt_auth_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
    close(fd);
    fn();
    fflush(stderr);
    ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
    close(saved);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *text = calloc(1, 65537);
    ck_assert_ptr_nonnull(text);
    text[fread(text, 1, 65536, f)] = '\0';
    fclose(f);
    unlink(path);
    return text;
}

static void log_scenario(void)
{
    char authid[200];
    snprintf(authid, sizeof(authid), "ev\nil%0120d", 7);
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", authid, "[\"ticket\"]", NULL);
    expect_abort_delayed(c, WAMP_ERROR_NO_SUCH_PRINCIPAL);
    fake_conn_free(c);
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "joes-ticket-but-wrong");
    expect_abort_delayed(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    fake_conn_free(c);
    c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "joes-ticket");
    json_decref(expect_welcome(c, "joe", "user", "ticket"));
    fake_conn_free(c);
}

/* One INFO line per failure, the client's authid kept on that line and bounded, no secret. */
START_TEST(test_failure_log_lines)
{
    char *log = captured_log(log_scenario);
    size_t failures = 0;
    for (const char *p = log; (p = strstr(p, "authentication failed (")); p++) {
        failures++;
    }
    ck_assert_uint_eq(failures, 2);
    const char *line = strstr(log, "authid \"ev?il0000");
    ck_assert_msg(line != NULL, "%s", log);
    const char *eol = strchr(line, '\n');
    ck_assert_ptr_nonnull(eol);
    ck_assert_ptr_nonnull(strstr(line, "...\", realm realm1)"));
    ck_assert_int_lt((int)(eol - line), 400); /* bounded: authid cut, message cut at 160 */
    ck_assert_ptr_nonnull(strstr(log, "wamp.error.authentication_failed: ticket is invalid"));
    ck_assert_ptr_null(strstr(log, "joes-ticket")); /* neither the wrong nor the right one */
    free(log);
}

END_TEST

/* Records of trace t whose JSON text contains needle. */
static size_t count_containing(const json_t *recs, const char *needle)
{
    size_t n = 0, i;
    const json_t *r;
    json_array_foreach(recs, i, r)
    {
        char *text = json_dumps(r, 0);
        n += strstr(text, needle) != NULL;
        free(text);
    }
    return n;
}

START_TEST(test_trace_redaction_and_correlation)
{
    trace *t = NULL;
    char why[160] = "";
    ck_assert_msg(trace_hub_start(rt_router_trace_hub(RT), "auth", NULL, 1, 1, &t, why,
                                  sizeof(why)) == WAMP_OK,
                  "%s", why);
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "ann", "[\"wampcra\"]", NULL);
    json_t *extra = expect_challenge(c, "wampcra");
    const char *challenge = json_string_value(json_object_get(extra, "challenge"));
    char wcs[RT_AUTH_WCS_LEN];
    rt_auth_wampcra_sign("secret1", 7, challenge, strlen(challenge), wcs);
    json_decref(extra);
    authenticate(c, wcs);
    json_decref(expect_welcome(c, "ann", "user", "wampcra"));
    fake_conn_free(c);
    /* A failure: the delayed ABORT keeps the HELLO's correlation. */
    c = conn(WAMP_SER_MSGPACK);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "joes-ticket-wrong");
    expect_abort_delayed(c, WAMP_ERROR_AUTHENTICATION_FAILED);
    fake_conn_free(c);

    json_t *recs = trace_render_records(t, 0, UINT64_MAX, 100);
    ck_assert_uint_eq(json_array_size(recs), 8);
    static const char *const types[] = {"Hello", "Challenge", "Authenticate", "Welcome",
                                        "Hello", "Challenge", "Authenticate", "Abort"};
    for (size_t i = 0; i < 8; i++) {
        const json_t *r = json_array_get(recs, i);
        ck_assert_str_eq(json_string_value(json_object_get(r, "msg_type")), types[i]);
        ck_assert_str_eq(json_string_value(json_object_get(r, "realm")), "realm1");
        const json_t *anchor = json_array_get(recs, i < 4 ? 0 : 4);
        ck_assert_str_eq(json_string_value(json_object_get(r, "correlation")),
                         json_string_value(json_object_get(anchor, "correlation")));
        ck_assert(json_is_true(json_object_get(r, "correlation_is_anchor")) == (i % 4 == 0));
        ck_assert(json_is_true(json_object_get(r, "correlation_is_last")) == (i % 4 == 3));
    }
    ck_assert_str_ne(json_string_value(json_object_get(json_array_get(recs, 0), "correlation")),
                     json_string_value(json_object_get(json_array_get(recs, 4), "correlation")));
    /* Secrets are never stored: CHALLENGE.Extra and AUTHENTICATE.Signature read "***". */
    for (size_t i = 1; i < 8; i += 4) {
        const json_t *msg = json_object_get(json_array_get(recs, i), "msg");
        ck_assert_str_eq(json_string_value(json_array_get(msg, 2)), "***");
        msg = json_object_get(json_array_get(recs, i + 1), "msg");
        ck_assert_str_eq(json_string_value(json_array_get(msg, 1)), "***");
    }
    ck_assert_uint_eq(count_containing(recs, wcs), 0);
    ck_assert_uint_eq(count_containing(recs, "joes-ticket"), 0);
    ck_assert_uint_eq(count_containing(recs, "nonce"), 0);
    json_decref(recs);
}

END_TEST

/* A protocol violation while authenticating (an AUTHENTICATE that does not decode as one, so
 * its record is "Unknown") is recorded with the realm HELLO asked for, as the HELLO and the
 * CHALLENGE are, and so is the ABORT that answers it: a trace of that realm shows why the
 * client was refused. */
START_TEST(test_trace_violation_while_authenticating_has_its_realm)
{
    trace *t = NULL;
    char why[160] = "";
    json_t *opts = json_pack("{s:[s]}", "realms", "realm1");
    ck_assert_msg(trace_hub_start(rt_router_trace_hub(RT), "realm1-only", opts, 1, 1, &t, why,
                                  sizeof(why)) == WAMP_OK,
                  "%s", why);
    json_decref(opts);
    static const char *const bad[] = {"[5, 42, {}]", "[5, \"sig\"]"};
    for (size_t i = 0; i < 2; i++) {
        fake_conn *c = conn(WAMP_SER_JSON);
        hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
        json_decref(expect_challenge(c, "ticket"));
        ck_assert_int_eq(fake_conn_send(c, "%s", bad[i]), WAMP_OK);
        fake_expect_abort(c, WAMP_ERROR_PROTOCOL_VIOLATION);
        fake_conn_free(c);
    }
    json_t *recs = trace_render_records(t, 0, UINT64_MAX, 100);
    ck_assert_uint_eq(json_array_size(recs), 8);
    static const char *const types[] = {"Hello", "Challenge", "Unknown", "Abort"};
    for (size_t i = 0; i < 8; i++) {
        const json_t *r = json_array_get(recs, i);
        ck_assert_str_eq(json_string_value(json_object_get(r, "msg_type")), types[i % 4]);
        ck_assert_str_eq(json_string_value(json_object_get(r, "realm")), "realm1");
        ck_assert_int_eq(
                json_integer_value(json_object_get(r, "session_id")),
                json_integer_value(json_object_get(json_array_get(recs, i / 4 * 4), "session_id")));
    }
    json_decref(recs);
}

END_TEST

START_TEST(test_session_limit_after_challenge)
{
    /* limits.max_sessions counts joined sessions; a session authenticating is not one yet. Two
     * clients that both get their CHALLENGE while the realm has room must not both join when
     * there is room for one: the limit is checked again when AUTHENTICATE would join. */
    teardown();
    setup_router("{'limits':{'max_sessions':1,'auth_failure_delay':700}}");
    fake_conn *a = conn(WAMP_SER_JSON);
    fake_conn *b = conn(WAMP_SER_JSON);
    hello(a, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(a, "ticket"));
    hello(b, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(b, "ticket"));
    authenticate(a, "joes-ticket");
    json_decref(expect_welcome(a, "joe", "user", "ticket"));
    authenticate(b, "joes-ticket");
    json_t *m = fake_conn_next(b);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ABORT);
    ck_assert_str_eq(fake_msg_str(m, 2), "wampscope.error.limit_reached");
    json_decref(m);
    ck_assert(b->close_requested);
    ck_assert_uint_eq(rt_realm_member_count(rt_router_find_realm(RT, "realm1")), 1);
    fake_conn_free(a);
    fake_conn_free(b);
}

END_TEST

/* joe (role user: everything allowed) joined over ticket. */
static fake_conn *joe_joined(void)
{
    fake_conn *c = conn(WAMP_SER_JSON);
    hello(c, "realm1", "joe", "[\"ticket\"]", NULL);
    json_decref(expect_challenge(c, "ticket"));
    authenticate(c, "joes-ticket");
    json_decref(expect_welcome(c, "joe", "user", "ticket"));
    return c;
}

START_TEST(test_restricted_procedures_stay_the_routers)
{
    /* REGISTER refuses wamp.* URIs, whatever the permissions say; a pattern that merely
     * matches such URIs (prefix "wamp", wildcard ".session.add_testament") must not let a
     * client answer the calls other sessions make to the router's namespace. */
    fake_conn *callee = joe_joined();
    fake_conn *caller = joe_joined();
    fake_conn_send(callee, "[64, 1, {\"match\":\"prefix\"}, \"wamp\"]");
    json_t *m = fake_conn_next(callee);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_REGISTERED);
    json_decref(m);
    fake_conn_send(callee, "[64, 2, {\"match\":\"wildcard\"}, \".session.add_testament\"]");
    m = fake_conn_next(callee);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_REGISTERED);
    json_decref(m);
    fake_conn_send(caller, "[48, 7, {}, \"wamp.session.add_testament\", [\"x\", [], {}]]");
    fake_conn_send(caller, "[48, 8, {}, \"wamp.registration.remove_callee\", [1, 2]]");
    ck_assert_uint_eq(fake_conn_pending(callee), 0); /* no INVOCATION */
    fake_expect_error(caller, WAMP_MSG_CALL, 7, WAMP_ERROR_NO_SUCH_PROCEDURE);
    fake_expect_error(caller, WAMP_MSG_CALL, 8, WAMP_ERROR_NO_SUCH_PROCEDURE);
    /* The router's own procedures are not affected, and nor are other URIs. */
    fake_conn_send(caller, "[48, 9, {}, \"wamp.session.count\"]");
    m = fake_conn_next(caller);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_RESULT);
    json_decref(m);
    fake_conn_send(callee, "[64, 3, {\"match\":\"prefix\"}, \"com.\"]");
    json_decref(fake_conn_next(callee));
    fake_conn_send(caller, "[48, 10, {}, \"com.x\"]");
    m = fake_conn_next(callee);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_INVOCATION);
    json_decref(m);
    fake_conn_free(caller);
    fake_conn_free(callee);
}

END_TEST

static Suite *auth_suite(void)
{
    Suite *s = suite_create("rt_auth");
    TCase *tc = tcase_create("crypto");
    tcase_add_test(tc, test_wampcra_matches_autobahn);
    tcase_add_test(tc, test_cryptosign_verify);
    tcase_add_test(tc, test_pick);
    tcase_add_test(tc, test_config_methods);
    tcase_add_test(tc, test_config_files);
    suite_add_tcase(s, tc);
    tc = tcase_create("handshake");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_ticket_json);
    tcase_add_test(tc, test_ticket_msgpack);
    tcase_add_test(tc, test_unknown_principal_and_role);
    tcase_add_test(tc, test_no_auth_method);
    tcase_add_test(tc, test_wampcra);
    tcase_add_test(tc, test_cryptosign);
    tcase_add_test(tc, test_out_of_order);
    tcase_add_test(tc, test_shutdown_while_authenticating);
    tcase_add_test(tc, test_zero_delay);
    tcase_add_test(tc, test_management_credentials);
    tcase_add_test(tc, test_trace_redaction_and_correlation);
    tcase_add_test(tc, test_trace_violation_while_authenticating_has_its_realm);
    tcase_add_test(tc, test_failure_log_lines);
    tcase_add_test(tc, test_nul_in_hello_fields);
    tcase_add_test(tc, test_session_limit_after_challenge);
    tcase_add_test(tc, test_long_non_ascii_authid);
    tcase_add_test(tc, test_restricted_procedures_stay_the_routers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (sodium_init() < 0) {
        return 1;
    }
    json_object_seed(0);
    SRunner *sr = srunner_create(auth_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
