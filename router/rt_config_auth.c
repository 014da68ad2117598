/* rt_config_auth.c: the "auth" section of a transport (Crossbar's static anonymous, ticket,
 * wampcra and cryptosign authentication, crossbar/common/checkconfig.py check_transport_auth_*)
 * and wampscope.management.auth, which has the same format without anonymous. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "rt_config_int.h"
#include "wamp_uri.h"

#define DEF_MGMT_AUTH_ROLE "admin"

static const type_rule anonymous_types[] = {
        {"static", NULL},
        {"dynamic", "dynamic authenticators are not supported"},
        {"function", "authenticator functions are not supported"},
};

static const key_rule anonymous_rules[] = {
        K_PARSED("type"),
        K_PARSED("role"),
        K_REFUSED("authid", "a fixed anonymous authid is not supported yet"),
        K_REFUSED("realm", "restricting anonymous to one realm is not supported yet"),
};

/* The methods of an "auth" object but anonymous, shared by a transport's and the management
 * realm's credentials. */
/* clang-format off */
#define AUTH_METHOD_RULES                                                                        \
        K_PARSED("ticket"),                                                                      \
        K_PARSED("wampcra"),                                                                     \
        K_PARSED("cryptosign"),                                                                  \
        K_REFUSED("cookie", "authentication method \"cookie\" is not supported yet"),            \
        K_REFUSED("tls", "authentication method \"tls\" is not supported yet"),                  \
        K_REFUSED("scram", "authentication method \"scram\" is not supported yet"),              \
        K_REFUSED("anonymous-proxy", "proxy authentication is not supported"),                   \
        K_REFUSED("cryptosign-proxy", "proxy authentication is not supported")
/* clang-format on */

static const key_rule auth_rules[] = {
        K_PARSED("anonymous"),
        AUTH_METHOD_RULES,
};

/* The management realm's credentials: the same format without anonymous (protected mode is the
 * anonymous way in, and it is off once credentials are configured). */
static const key_rule mgmt_auth_rules[] = {
        K_REFUSED("anonymous",
                  "anonymous access to the management realm is protected mode "
                  "(wampscope.management.trusted_networks), which is off once credentials are "
                  "configured"),
        AUTH_METHOD_RULES,
};

static const type_rule static_types[] = {
        {"static", NULL},
        {"dynamic", "dynamic authenticators are not supported (use static principals)"},
        {"function", "authenticator functions are not supported (use static principals)"},
};

static const key_rule ticket_rules[] = {K_PARSED("type"), K_PARSED("principals")};
static const key_rule wampcra_rules[] = {K_PARSED("type"), K_PARSED("users")};
static const key_rule cryptosign_rules[] = {
        K_PARSED("type"),
        K_PARSED("principals"),
        K_REFUSED("trustroots", "trust roots (certificate chains) are not supported; list the "
                                "principals and their authorized_keys"),
};
static const key_rule ticket_principal_rules[] = {K_PARSED("ticket"), K_PARSED("role")};
static const key_rule wampcra_user_rules[] = {
        K_PARSED("secret"),     K_PARSED("role"),   K_PARSED("salt"),
        K_PARSED("iterations"), K_PARSED("keylen"),
};
static const key_rule cryptosign_principal_rules[] = {
        K_PARSED("authorized_keys"),
        K_PARSED("role"),
        K_PARSED("realm"),
};

typedef enum auth_kind {
    AUTH_TICKET,
    AUTH_WAMPCRA,
    AUTH_CRYPTOSIGN
} auth_kind;

/* Frees what a principal holds; secrets are wiped first. */
static void free_principal(rt_auth_principal *p)
{
    if (p->secret) {
        sodium_memzero(p->secret, strlen(p->secret));
        free(p->secret);
    }
    free(p->authid);
    free(p->role);
    free(p->salt);
    free(p->realm);
    free(p->keys);
    memset(p, 0, sizeof(*p));
}

static void free_auth_method(rt_auth_method_config *m)
{
    for (size_t i = 0; i < m->n_principals; i++) {
        free_principal(&m->principals[i]);
    }
    free(m->principals);
    memset(m, 0, sizeof(*m));
}

void cfg_free_auth(rt_auth_config *a)
{
    free_auth_method(&a->ticket);
    free_auth_method(&a->wampcra);
    free_auth_method(&a->cryptosign);
}

/* A secret as Crossbar reads it (checkconfig.py maybe_from_env): "${VAR}" is the value of the
 * environment variable VAR, anything else is literal. Unlike Crossbar, which warns and keeps the
 * literal text, a variable that is not set stops the start. The value is never put into a
 * message. */
static wamp_err parse_secret(cfg_ctx *c, const char *path, const char *text, char **out)
{
    size_t n = strlen(text);
    const char *value = text;
    if (n > 3 && text[0] == '$' && text[1] == '{' && text[n - 1] == '}') {
        char var[256];
        if (n - 3 >= sizeof(var)) {
            return cfg_refuse(c, path, "environment variable name is too long");
        }
        memcpy(var, text + 2, n - 3);
        var[n - 3] = '\0';
        value = getenv(var);
        if (!value) {
            return cfg_refuse(c, path, "environment variable %s is not set", var);
        }
        if (!value[0]) {
            return cfg_refuse(c, path, "environment variable %s is empty", var);
        }
    } else if (!n) {
        return cfg_refuse(c, path, "must not be empty");
    }
    return cfg_dup(c, value, out);
}

static wamp_err parse_role_name(cfg_ctx *c, const char *path, const json_t *o, char **out)
{
    const char *role = NULL;
    wamp_err err = cfg_opt_str(c, path, o, "role", &role);
    if (err != WAMP_OK || !role) {
        return err;
    }
    if (!wamp_uri_is_valid(role, WAMP_URI_LOOSE)) {
        return cfg_refuse(c, cfg_key(path, "role").s, "\"%s\" is not a valid role name", role);
    }
    return cfg_dup(c, role, out);
}

static wamp_err parse_key_item(cfg_ctx *c, const char *path, const json_t *v, void *items, size_t i,
                               void *arg)
{
    (void)arg;
    uint8_t(*keys)[32] = items;
    const char *hex = json_string_value(v);
    size_t bin_len = 0;
    if (!hex || strlen(hex) != 64 ||
        sodium_hex2bin(keys[i], 32, hex, 64, NULL, &bin_len, NULL) != 0 || bin_len != 32) {
        return cfg_refuse(c, path, "must be an Ed25519 public key as 64 hex characters");
    }
    return WAMP_OK;
}

static wamp_err parse_keys(cfg_ctx *c, const char *path, const json_t *v, rt_auth_principal *p)
{
    if (!json_is_array(v) || json_array_size(v) == 0) {
        return cfg_refuse(c, path, "must be a non-empty list of hex-encoded Ed25519 public keys");
    }
    void *items = NULL;
    wamp_err err =
            cfg_parse_list(c, path, v, sizeof(*p->keys), parse_key_item, NULL, &items, &p->n_keys);
    p->keys = items;
    return err;
}

/* A cryptosign principal's "role" (required), "realm" and "authorized_keys". */
static wamp_err parse_cryptosign_principal(cfg_ctx *c, const char *path, const json_t *o,
                                           rt_auth_principal *p)
{
    const char *realm = NULL;
    if (!p->role) {
        return cfg_refuse(c, cfg_key(path, "role").s, "is required");
    }
    wamp_err err = cfg_opt_str(c, path, o, "realm", &realm);
    if (err == WAMP_OK && realm && !wamp_uri_is_valid(realm, WAMP_URI_LOOSE)) {
        err = cfg_refuse(c, cfg_key(path, "realm").s, "\"%s\" is not a valid realm name", realm);
    }
    if (err == WAMP_OK && realm) {
        err = cfg_dup(c, realm, &p->realm);
    }
    const json_t *keys = json_object_get(o, "authorized_keys");
    cfg_path kp = cfg_key(path, "authorized_keys");
    if (err == WAMP_OK) {
        err = keys ? parse_keys(c, kp.s, keys, p) : cfg_refuse(c, kp.s, "is required");
    }
    return err;
}

static wamp_err parse_principal(cfg_ctx *c, const char *path, auth_kind kind, const char *authid,
                                const json_t *o, const char *default_role, rt_auth_principal *p)
{
    wamp_err err;
    switch (kind) {
    case AUTH_TICKET:
        err = cfg_check_keys(c, path, o, ticket_principal_rules, N_RULES(ticket_principal_rules));
        break;
    case AUTH_WAMPCRA:
        err = cfg_check_keys(c, path, o, wampcra_user_rules, N_RULES(wampcra_user_rules));
        break;
    default:
        err = cfg_check_keys(c, path, o, cryptosign_principal_rules,
                             N_RULES(cryptosign_principal_rules));
        break;
    }
    if (err == WAMP_OK) {
        err = cfg_dup(c, authid, &p->authid);
    }
    if (err == WAMP_OK) {
        err = parse_role_name(c, path, o, &p->role);
    }
    if (err == WAMP_OK && !p->role && default_role) {
        err = cfg_dup(c, default_role, &p->role);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (kind == AUTH_CRYPTOSIGN) {
        return parse_cryptosign_principal(c, path, o, p);
    }
    const char *key = kind == AUTH_TICKET ? "ticket" : "secret";
    const char *secret = NULL;
    err = cfg_req_str(c, path, o, key, &secret);
    if (err == WAMP_OK) {
        err = parse_secret(c, cfg_key(path, key).s, secret, &p->secret);
    }
    if (err != WAMP_OK || kind != AUTH_WAMPCRA) {
        return err;
    }
    const char *salt = NULL;
    json_int_t iterations = 1000, keylen = 32;
    err = cfg_opt_str(c, path, o, "salt", &salt);
    if (err == WAMP_OK) {
        err = cfg_opt_int(c, path, o, "iterations", 1, 100000000, NULL, &iterations);
    }
    if (err == WAMP_OK) {
        err = cfg_opt_int(c, path, o, "keylen", 1, 1024, "bytes", &keylen);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (!salt && (json_object_get(o, "iterations") || json_object_get(o, "keylen"))) {
        return cfg_refuse(c, path, "\"iterations\" and \"keylen\" need a \"salt\"");
    }
    if (salt && !salt[0]) {
        return cfg_refuse(c, cfg_key(path, "salt").s, "must not be empty");
    }
    p->iterations = (uint32_t)iterations;
    p->keylen = (uint32_t)keylen;
    return salt ? cfg_dup(c, salt, &p->salt) : WAMP_OK;
}

static wamp_err parse_auth_method(cfg_ctx *c, const char *path, auth_kind kind, const json_t *o,
                                  const char *default_role, rt_auth_method_config *m)
{
    const char *type = NULL;
    wamp_err err = cfg_check_type(c, path, o, static_types, N_RULES(static_types), &type);
    if (err != WAMP_OK) {
        return err;
    }
    const char *list_key = "principals";
    switch (kind) {
    case AUTH_TICKET:
        err = cfg_check_keys(c, path, o, ticket_rules, N_RULES(ticket_rules));
        break;
    case AUTH_WAMPCRA:
        err = cfg_check_keys(c, path, o, wampcra_rules, N_RULES(wampcra_rules));
        list_key = "users";
        break;
    default:
        err = cfg_check_keys(c, path, o, cryptosign_rules, N_RULES(cryptosign_rules));
        break;
    }
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path lp = cfg_key(path, list_key);
    const json_t *list = json_object_get(o, list_key);
    if (!list) {
        return cfg_refuse(c, lp.s, "is required for static %s authentication",
                          kind == AUTH_TICKET    ? "ticket"
                          : kind == AUTH_WAMPCRA ? "wampcra"
                                                 : "cryptosign");
    }
    if (!json_is_object(list)) {
        return cfg_refuse(c, lp.s, "must be an object mapping authids to principals");
    }
    m->enabled = true;
    m->principals = calloc(json_object_size(list) + 1, sizeof(*m->principals));
    if (!m->principals) {
        return cfg_oom(c);
    }
    const char *authid;
    const json_t *v;
    json_object_foreach((json_t *)list, authid, v)
    {
        cfg_path pp = cfg_key(lp.s, authid);
        if (!authid[0]) {
            err = cfg_refuse(c, pp.s, "an authid must not be empty");
            continue;
        }
        err = cfg_worse(err, parse_principal(c, pp.s, kind, authid, v, default_role,
                                             &m->principals[m->n_principals]));
        m->n_principals++; /* counted even when partly filled: freed either way */
        if (cfg_stop(err)) {
            return err;
        }
    }
    return err;
}

/* ticket / wampcra / cryptosign of an auth object already checked against its key table. */
static wamp_err parse_auth_methods(cfg_ctx *c, const char *path, const json_t *o,
                                   const char *default_role, rt_auth_config *a)
{
    static const char *const keys[] = {"ticket", "wampcra", "cryptosign"};
    rt_auth_method_config *ms[] = {&a->ticket, &a->wampcra, &a->cryptosign};
    wamp_err err = WAMP_OK;
    for (size_t i = 0; i < 3 && !cfg_stop(err); i++) {
        const json_t *v = json_object_get(o, keys[i]);
        if (v) {
            err = cfg_worse(err, parse_auth_method(c, cfg_key(path, keys[i]).s, (auth_kind)i, v,
                                                   default_role, ms[i]));
        }
    }
    return err;
}

static wamp_err parse_anonymous(cfg_ctx *c, const char *ap, const json_t *anon, rt_listener *l)
{
    const char *type = NULL;
    const char *role = NULL;
    wamp_err err = cfg_check_type(c, ap, anon, anonymous_types, N_RULES(anonymous_types), &type);
    if (err == WAMP_OK) {
        err = cfg_check_keys(c, ap, anon, anonymous_rules, N_RULES(anonymous_rules));
    }
    if (err == WAMP_OK) {
        err = cfg_opt_str(c, ap, anon, "role", &role);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (role && !wamp_uri_is_valid(role, WAMP_URI_LOOSE)) {
        return cfg_refuse(c, cfg_key(ap, "role").s, "\"%s\" is not a valid role name", role);
    }
    return cfg_dup(c, role ? role : DEF_ANONYMOUS_ROLE, &l->anonymous_role);
}

/* A transport's "auth" (Crossbar router/session.py): a transport without "auth", or with an
 * empty "auth", lets anyone join as role "anonymous"; otherwise exactly the listed methods are
 * offered. Transport-type independent: every listener kind calls this for its "auth". */
wamp_err cfg_parse_auth(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    if (!o || (json_is_object(o) && json_object_size(o) == 0)) {
        return cfg_dup(c, DEF_ANONYMOUS_ROLE, &l->anonymous_role);
    }
    wamp_err err = cfg_check_keys(c, path, o, auth_rules, N_RULES(auth_rules));
    if (err == WAMP_OK) {
        err = parse_auth_methods(c, path, o, NULL, &l->auth);
    }
    if (cfg_stop(err) || !json_is_object(o)) {
        return err;
    }
    const json_t *anon = json_object_get(o, "anonymous");
    if (!anon) {
        return err; /* credentials only: anonymous_role stays NULL (anonymous refused) */
    }
    return cfg_worse(err, parse_anonymous(c, cfg_key(path, "anonymous").s, anon, l));
}

/* wampscope.management.auth: Crossbar's auth format without anonymous; principals' role
 * defaults to "admin", the management realm's only role. At least one method. */
wamp_err cfg_parse_mgmt_auth(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = cfg_check_keys(c, path, o, mgmt_auth_rules, N_RULES(mgmt_auth_rules));
    if (err != WAMP_OK) {
        return err;
    }
    if (json_object_size(o) == 0) {
        return cfg_refuse(c, path,
                          "must configure at least one of \"ticket\", \"wampcra\", "
                          "\"cryptosign\" (leave \"auth\" out for protected mode)");
    }
    cfg->mgmt_auth = calloc(1, sizeof(*cfg->mgmt_auth));
    if (!cfg->mgmt_auth) {
        return cfg_oom(c);
    }
    return parse_auth_methods(c, path, o, DEF_MGMT_AUTH_ROLE, cfg->mgmt_auth);
}
