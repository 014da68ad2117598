/* rt_config_realm.c: the router worker's realms, their roles and the roles' permissions
 * (Crossbar's static authorization, crossbar/router/role.py). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_config_int.h"
#include "wamp_uri.h"

/* "allow" and "disclose" of a permission. */
/* clang-format off */
#define FLAG(k, m) CFG_FIELD(k, CFG_BOOL, rt_permission, m, 0, 0, 1, NULL)
static const cfg_field allow_fields[] = {
    FLAG("call", allow_call),
    FLAG("register", allow_register),
    FLAG("publish", allow_publish),
    FLAG("subscribe", allow_subscribe),
};
static const cfg_field disclose_fields[] = {
    FLAG("caller", disclose_caller),
    FLAG("publisher", disclose_publisher),
};
/* clang-format on */

static const key_rule permission_rules[] = {
        K_PARSED("uri"),
        K_PARSED("match"),
        K_PARSED("allow"),
        K_PARSED("disclose"),
        /* Crossbar's authorization cache hint; static permissions need no cache. */
        K_IGN("cache", KEY_IGN_BOOL),
        K_REFUSED("validate", "payload validation is not supported"),
};

/* Crossbar's starred URIs (autobahn convert_starred_uri), used when "match" is absent: no '*'
 * = exact; exactly one '*' at the very end = prefix of what precedes it ("*" alone = prefix ""
 * = every URI); any other '*' = wildcard with every '*' removed ("com.*.update" ->
 * "com..update"). Writes the converted pattern into uri in place.
 * Two deviations, both towards what Crossbar effectively does or what was meant:
 * - "" converts to exact "", but role.py looks "" up as the fallback for every URI that no other
 *   entry prefixes (a pytrie workaround), so "" acts as prefix "": wampscope makes it one.
 * - a wildcard '*' must be a whole component (Crossbar turns "com.a*b.*" into "com.ab."). */
static wamp_err convert_starred(cfg_ctx *c, const char *path, char *uri, wamp_match *m)
{
    size_t n = strlen(uri);
    size_t stars = 0;
    for (size_t i = 0; i < n; i++) {
        stars += uri[i] == '*';
    }
    if (stars == 0) {
        *m = n == 0 ? WAMP_MATCH_PREFIX : WAMP_MATCH_EXACT;
        return WAMP_OK;
    }
    if (stars == 1 && uri[n - 1] == '*') {
        *m = WAMP_MATCH_PREFIX;
        uri[n - 1] = '\0';
        return WAMP_OK;
    }
    for (size_t i = 0; i < n; i++) {
        bool alone = (i == 0 || uri[i - 1] == '.') && (i + 1 == n || uri[i + 1] == '.');
        if (uri[i] == '*' && !alone) {
            return cfg_refuse(c, path, "'*' must stand for a whole URI component in \"%s\"", uri);
        }
    }
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (uri[i] != '*') {
            uri[w++] = uri[i];
        }
    }
    uri[w] = '\0';
    *m = WAMP_MATCH_WILDCARD;
    return WAMP_OK;
}

/* "uri" and "match" into p->uri and p->match. */
static wamp_err parse_pattern(cfg_ctx *c, const char *path, const json_t *o, rt_permission *p)
{
    wamp_err err = WAMP_OK;
    const char *uri = NULL;
    const char *match = NULL;
    cfg_path up = cfg_key(path, "uri");

    if (err == WAMP_OK) {
        err = cfg_req_str(c, path, o, "uri", &uri);
    }
    if (err == WAMP_OK) {
        err = cfg_opt_str(c, path, o, "match", &match);
    }
    if (err == WAMP_OK) {
        err = cfg_dup(c, uri, &p->uri);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (match) {
        if (!wamp_match_parse(match, &p->match)) {
            return cfg_refuse(c, cfg_key(path, "match").s,
                              "must be \"exact\", \"prefix\" or \"wildcard\" (got \"%s\")", match);
        }
        /* Crossbar skips the star conversion when "match" is given and would then compare the
         * '*' literally, which is never what was meant. */
        if (strchr(uri, '*')) {
            return cfg_refuse(c, up.s,
                              "'*' is taken literally when \"match\" is given; remove the '*' or "
                              "the \"match\" key");
        }
    } else {
        err = convert_starred(c, up.s, p->uri, &p->match);
        if (err != WAMP_OK) {
            return err;
        }
    }

    bool ok;
    switch (p->match) {
    case WAMP_MATCH_EXACT:
        ok = wamp_uri_is_valid(p->uri, WAMP_URI_LOOSE);
        break;
    case WAMP_MATCH_PREFIX:
        ok = p->uri[0] == '\0' || wamp_uri_is_valid(p->uri, WAMP_URI_LOOSE_EMPTY);
        break;
    case WAMP_MATCH_WILDCARD:
    default:
        ok = wamp_uri_is_valid(p->uri, WAMP_URI_LOOSE_EMPTY);
        break;
    }
    size_t ulen = strlen(p->uri);
    if (!ok && p->match == WAMP_MATCH_EXACT && (ulen == 0 || p->uri[ulen - 1] == '.')) {
        /* Crossbar accepts these as exact patterns that match nothing (or, for "", everything);
         * a prefix was meant. */
        if (match) {
            return cfg_refuse(c, up.s,
                              "\"%s\" with match \"exact\" is ambiguous; for a prefix use "
                              "\"match\": \"prefix\"",
                              uri);
        }
        return cfg_refuse(c, up.s,
                          "\"%s\" with match \"exact\" is ambiguous; for a prefix write \"%s*\" or "
                          "\"match\": \"prefix\"",
                          uri, uri);
    }
    if (!ok) {
        return cfg_refuse(c, up.s, "\"%s\" is not a valid URI pattern for match \"%s\"", uri,
                          wamp_match_name(p->match));
    }
    return WAMP_OK;
}

/* "allow" or "disclose": an object of booleans, each false when absent (Crossbar's default). */
static wamp_err parse_flags(cfg_ctx *c, const char *path, const json_t *o, const char *key,
                            const cfg_field *fields, size_t n, rt_permission *p)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        return WAMP_OK;
    }
    cfg_path kp = cfg_key(path, key);
    wamp_err err = cfg_check_keys_fields(c, kp.s, v, NULL, 0, fields, n);
    return err == WAMP_OK ? cfg_fields_parse(c, kp.s, v, fields, n, p) : err;
}

static wamp_err parse_permission(cfg_ctx *c, const char *path, const json_t *o, rt_permission *p)
{
    wamp_err err = cfg_check_keys(c, path, o, permission_rules, N_RULES(permission_rules));
    if (err == WAMP_OK) {
        err = parse_pattern(c, path, o, p);
    }
    if (err == WAMP_OK) {
        err = parse_flags(c, path, o, "allow", allow_fields, N_RULES(allow_fields), p);
    }
    if (err == WAMP_OK) {
        err = parse_flags(c, path, o, "disclose", disclose_fields, N_RULES(disclose_fields), p);
    }
    return err;
}

static const key_rule role_rules[] = {
        K_PARSED("name"),
        K_PARSED("permissions"),
        K_REFUSED("authorizer", "dynamic authorizers are not supported (use static permissions)"),
};

/* Crossbar keeps one permission per pattern (a trie keyed by the URI, wildcards in a separate
 * trie): a later duplicate silently replaces the earlier one. Refuse instead. */
static wamp_err parse_permission_item(cfg_ctx *c, const char *path, const json_t *v, void *items,
                                      size_t i, void *arg)
{
    (void)arg;
    rt_permission *perms = items;
    rt_permission *p = &perms[i];
    wamp_err err = parse_permission(c, path, v, p);
    for (size_t j = 0; err == WAMP_OK && j < i; j++) {
        const rt_permission *q = &perms[j];
        bool same_trie = (p->match == WAMP_MATCH_WILDCARD) == (q->match == WAMP_MATCH_WILDCARD);
        if (q->uri && same_trie && strcmp(p->uri, q->uri) == 0) {
            err = cfg_refuse(c, cfg_key(path, "uri").s,
                             "pattern \"%s\" is already used by permissions[%zu] (Crossbar "
                             "would silently keep only the last one)",
                             p->uri, j);
        }
    }
    return err;
}

static wamp_err parse_role(cfg_ctx *c, const char *path, const json_t *o, rt_role *role)
{
    wamp_err err = cfg_check_keys(c, path, o, role_rules, N_RULES(role_rules));
    const char *name = NULL;
    if (err == WAMP_OK) {
        err = cfg_req_str(c, path, o, "name", &name);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (!wamp_uri_is_valid(name, WAMP_URI_LOOSE)) {
        err = cfg_refuse(c, cfg_key(path, "name").s, "\"%s\" is not a valid role name", name);
    } else {
        err = cfg_dup(c, name, &role->name);
    }
    /* A role without "permissions" denies everything (Crossbar's RouterRole default). */
    const json_t *perms = json_object_get(o, "permissions");
    if (cfg_stop(err) || !perms) {
        return err;
    }
    void *items = NULL;
    wamp_err e = cfg_parse_list(c, cfg_key(path, "permissions").s, perms, sizeof(rt_permission),
                                parse_permission_item, NULL, &items, &role->n_permissions);
    role->permissions = items;
    return cfg_worse(err, e);
}

static const key_rule realm_option_rules[] = {
        K_PARSED("uri_check"),
        /* Crossbar's event fan-out batch size: a Twisted scheduling knob. */
        K_IGN_INT("event_dispatching_chunk_size", 1, INT32_MAX),
        K_PARSED("enable_meta_api"),
        K_ONLY("bridge_meta_api", KEY_ONLY_FALSE,
               "bridging the meta API to the management realm is not supported"),
};

static const key_rule realm_rules[] = {
        K_PARSED("name"),
        K_PARSED("roles"),
        K_PARSED("options"),
        K_REFUSED("store", "realm stores (event history) are not supported yet"),
        K_REFUSED("authorizer", "dynamic authorizers are not supported (use static permissions)"),
        K_REFUSED("inventory", "realm inventories (payload validation) are not supported"),
        /* Crossbar's router-to-router links (edge personality). */
        K_REFUSED("rlinks", "router-to-router links (rlinks) are not supported; wampscope's own "
                            "cluster (under construction) is to connect routers instead"),
};

static wamp_err parse_realm_options(cfg_ctx *c, const char *path, const json_t *opts,
                                    rt_realm_config *rc)
{
    const char *uri_check = NULL;
    wamp_err err = cfg_check_keys(c, path, opts, realm_option_rules, N_RULES(realm_option_rules));
    if (err == WAMP_OK) {
        err = cfg_opt_str(c, path, opts, "uri_check", &uri_check);
    }
    bool meta_api = true; /* Crossbar's default */
    if (err == WAMP_OK) {
        err = cfg_opt_bool(c, path, opts, "enable_meta_api", &meta_api);
    }
    rc->no_meta_api = !meta_api;
    /* wampscope checks every URI with the loose rule; Crossbar's default is "strict". */
    if (err == WAMP_OK && uri_check && strcmp(uri_check, "loose") != 0) {
        err = cfg_refuse(c, cfg_key(path, "uri_check").s,
                         "only \"loose\" is supported (got \"%s\"); wampscope always checks URIs "
                         "with the loose rule",
                         uri_check);
    }
    return err;
}

static wamp_err parse_role_item(cfg_ctx *c, const char *path, const json_t *v, void *items,
                                size_t i, void *arg)
{
    (void)arg;
    rt_role *roles = items;
    wamp_err err = parse_role(c, path, v, &roles[i]);
    for (size_t j = 0; roles[i].name && j < i; j++) {
        if (roles[j].name && strcmp(roles[i].name, roles[j].name) == 0) {
            err = cfg_worse(err, cfg_refuse(c, cfg_key(path, "name").s,
                                            "role \"%s\" is already defined by roles[%zu]",
                                            roles[i].name, j));
        }
    }
    return err;
}

static wamp_err parse_realm(cfg_ctx *c, const char *path, const json_t *o, rt_realm_config *rc)
{
    wamp_err err = cfg_check_keys(c, path, o, realm_rules, N_RULES(realm_rules));
    const char *name = NULL;
    if (err == WAMP_OK) {
        err = cfg_req_str(c, path, o, "name", &name);
    }
    if (err == WAMP_OK && !wamp_uri_is_valid(name, WAMP_URI_LOOSE)) {
        err = cfg_refuse(c, cfg_key(path, "name").s, "\"%s\" is not a valid realm name (a URI)",
                         name);
    } else if (err == WAMP_OK) {
        err = cfg_dup(c, name, &rc->name);
    }
    if (!json_is_object(o) || cfg_stop(err)) {
        return err;
    }
    const json_t *opts = json_object_get(o, "options");
    if (opts) {
        err = cfg_worse(err, parse_realm_options(c, cfg_key(path, "options").s, opts, rc));
    }
    const json_t *roles = json_object_get(o, "roles");
    if (roles && !cfg_stop(err)) {
        void *items = NULL;
        err = cfg_worse(err, cfg_parse_list(c, cfg_key(path, "roles").s, roles, sizeof(rt_role),
                                            parse_role_item, NULL, &items, &rc->n_roles));
        rc->roles = items;
    }
    return err;
}

static wamp_err parse_realm_item(cfg_ctx *c, const char *path, const json_t *v, void *items,
                                 size_t i, void *arg)
{
    (void)arg;
    rt_realm_config *realms = items;
    wamp_err err = parse_realm(c, path, v, &realms[i]);
    for (size_t j = 0; realms[i].name && j < i; j++) {
        if (realms[j].name && strcmp(realms[i].name, realms[j].name) == 0) {
            err = cfg_worse(err, cfg_refuse(c, cfg_key(path, "name").s,
                                            "realm \"%s\" is already defined by realms[%zu]",
                                            realms[i].name, j));
        }
    }
    return err;
}

wamp_err cfg_parse_realms(cfg_ctx *c, const char *path, const json_t *w, rt_config *cfg)
{
    const json_t *realms = json_object_get(w, "realms");
    cfg_path rp = cfg_key(path, "realms");
    if (realms && !json_is_array(realms)) {
        return cfg_refuse(c, rp.s, "must be a list");
    }
    if (!realms || json_array_size(realms) == 0) {
        return cfg_refuse(c, rp.s, "at least one realm is required");
    }
    void *items = NULL;
    wamp_err err = cfg_parse_list(c, rp.s, realms, sizeof(rt_realm_config), parse_realm_item, NULL,
                                  &items, &cfg->n_realms);
    cfg->realms = items;
    return err;
}

void cfg_free_realms(rt_config *cfg)
{
    for (size_t i = 0; i < cfg->n_realms; i++) {
        rt_realm_config *r = &cfg->realms[i];
        for (size_t j = 0; j < r->n_roles; j++) {
            rt_role *role = &r->roles[j];
            for (size_t k = 0; k < role->n_permissions; k++) {
                free(role->permissions[k].uri);
            }
            free(role->permissions);
            free(role->name);
        }
        free(r->roles);
        free(r->name);
    }
    free(cfg->realms);
}
