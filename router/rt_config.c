/* rt_config.c: Crossbar.io node configuration (version 2) -> rt_config.
 *
 * The validator walks the JSON tree once. Every object is first checked against a table of the
 * keys wampscope knows there (key_rule): a key not in the table is refused as unknown; a key
 * Crossbar knows but wampscope cannot honour is refused with the reason; a key that has no effect
 * in wampscope is type-checked and ignored; the rest is parsed by the caller. Every refusal names
 * the full key path ("workers[0].transports[1].endpoint.port: ..."). Key names, types and
 * defaults follow crossbar/common/checkconfig.py and crossbar/router/role.py; configs/README.md
 * lists every decision. The result is built in place and freed with rt_config_free() on any
 * failure, so a partially filled config is always freeable. */
#include "rt_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "rt_log.h"
#include "trace_options.h"
#include "trace_persist.h"

/* Generated from configs/default.json by router/embed_config.cmake. */
extern const char rt_config_default_json[];
extern const size_t rt_config_default_json_len;

#define KIB ((json_int_t)1024)
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)

/* Defaults of the worker's "wampscope" object (configs/README.md). */
#define DEF_MAX_MESSAGE_SIZE   (16 * MIB)
#define DEF_MAX_QUEUE_BYTES    (64 * MIB)
#define DEF_MAX_QUEUE_MESSAGES 1000000
#define DEF_CLOSE_TIMEOUT_MS   5000
#define DEF_HELLO_TIMEOUT_MS   10000
#define DEF_SHUTDOWN_GRACE_MS  2000
#define DEF_MAX_CALL_TIMEOUT   3600000
#define DEF_AUTH_FAILURE_DELAY 1000
#define DEF_MGMT_AUTH_ROLE     "admin"
#define DEF_MAX_TRACES         16
#define DEF_MGMT_REALM         "mgmt"
#define DEF_WORKER_ID          "router1"
#define DEF_ANONYMOUS_ROLE     "anonymous"

/* Longest key path kept for messages; longer ones are cut (the message stays one line). */
#define CFG_PATH_MAX 256
/* A configuration file larger than this is refused before parsing. */
#define CFG_FILE_MAX ((size_t)(16 * MIB))

typedef struct cfg_ctx {
    char *err;
    size_t err_len;
} cfg_ctx;

typedef struct cfg_path {
    char s[CFG_PATH_MAX];
} cfg_path;

/* Messages quote keys and values from the file; a control character in one of them must not
 * break the message over several lines. */
static void one_line(char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            *s = '?';
        }
    }
}

__attribute__((format(printf, 3, 4))) static wamp_err refuse(cfg_ctx *c, const char *path,
                                                             const char *fmt, ...)
{
    if (c->err && c->err_len) {
        int n = snprintf(c->err, c->err_len, "%s: ", path && path[0] ? path : "(top level)");
        if (n >= 0 && (size_t)n < c->err_len) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->err_len - (size_t)n, fmt, ap);
            va_end(ap);
        }
        one_line(c->err);
    }
    return WAMP_EINVAL;
}

static wamp_err out_of_memory(cfg_ctx *c)
{
    if (c->err && c->err_len) {
        snprintf(c->err, c->err_len, "out of memory");
    }
    return WAMP_ENOMEM;
}

/* Keys made of these characters print as ".key"; any other as ["key"]. */
static bool key_is_plain(const char *key)
{
    if (!*key) {
        return false;
    }
    for (const char *p = key; *p; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '$';
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* A path longer than CFG_PATH_MAX ends in "..." instead of being cut silently. */
static void path_mark_cut(cfg_path *p, int n)
{
    if (n < 0 || (size_t)n >= sizeof(p->s)) {
        memcpy(p->s + sizeof(p->s) - 4, "...", 4);
    }
}

static cfg_path path_key(const char *parent, const char *key)
{
    cfg_path p;
    bool root = !parent || !parent[0];
    int n;
    if (key_is_plain(key)) {
        n = snprintf(p.s, sizeof(p.s), "%s%s%s", root ? "" : parent, root ? "" : ".", key);
    } else {
        n = snprintf(p.s, sizeof(p.s), "%s[\"%s\"]", root ? "" : parent, key);
    }
    path_mark_cut(&p, n);
    return p;
}

static cfg_path path_index(const char *parent, size_t i)
{
    cfg_path p;
    int n = snprintf(p.s, sizeof(p.s), "%s[%zu]", parent ? parent : "", i);
    path_mark_cut(&p, n);
    return p;
}

static wamp_err dup_str(cfg_ctx *c, const char *s, char **out)
{
    char *d = strdup(s);
    if (!d) {
        return out_of_memory(c);
    }
    free(*out);
    *out = d;
    return WAMP_OK;
}

/* ---- Key tables ---------------------------------------------------------------------------- */

typedef enum key_kind {
    KEY_PARSED,      /* the caller parses the value */
    KEY_REFUSED,     /* known to Crossbar, not supported: refused with `why` */
    KEY_IGN_ANY,     /* accepted and ignored, any value */
    KEY_IGN_BOOL,    /* accepted and ignored, must be a boolean */
    KEY_IGN_INT,     /* accepted and ignored, must be an integer lo..hi */
    KEY_IGN_STRING,  /* accepted and ignored, must be a string */
    KEY_IGN_STRINGS, /* accepted and ignored, must be a list of strings */
    KEY_IGN_OBJECT,  /* accepted and ignored, must be an object */
    KEY_ONLY_TRUE,   /* accepted only as true (what wampscope always does); else refused: why */
    KEY_ONLY_FALSE   /* accepted only as false; else refused with `why` */
} key_kind;

typedef struct key_rule {
    const char *key;
    key_kind kind;
    json_int_t lo, hi;
    const char *why;
} key_rule;

/* Table entries. clang-format would spread each one-line macro over five lines. */
/* clang-format off */
#define K_PARSED(k)          {.key = (k), .kind = KEY_PARSED}
#define K_REFUSED(k, w)      {.key = (k), .kind = KEY_REFUSED, .why = (w)}
#define K_IGN(k, kd)         {.key = (k), .kind = (kd)}
#define K_IGN_INT(k, l, h)   {.key = (k), .kind = KEY_IGN_INT, .lo = (l), .hi = (h)}
#define K_ONLY(k, kd, w)     {.key = (k), .kind = (kd), .why = (w)}
/* clang-format on */
#define N_RULES(a) (sizeof(a) / sizeof((a)[0]))

static const key_rule *find_rule(const key_rule *rules, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rules[i].key, key) == 0) {
            return &rules[i];
        }
    }
    return NULL;
}

static bool is_string_list(const json_t *v)
{
    if (!json_is_array(v)) {
        return false;
    }
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e)
    {
        if (!json_is_string(e)) {
            return false;
        }
    }
    return true;
}

/* Checks one accepted-and-ignored or fixed-value key. */
static wamp_err check_rule_value(cfg_ctx *c, const char *path, const key_rule *r, const json_t *v)
{
    switch (r->kind) {
    case KEY_PARSED:
    case KEY_IGN_ANY:
        return WAMP_OK;
    case KEY_REFUSED:
        return refuse(c, path, "%s", r->why);
    case KEY_IGN_BOOL:
        return json_is_boolean(v) ? WAMP_OK : refuse(c, path, "must be a boolean");
    case KEY_IGN_INT:
        if (!json_is_integer(v) || json_integer_value(v) < r->lo || json_integer_value(v) > r->hi) {
            return refuse(c, path, "must be an integer %lld..%lld", (long long)r->lo,
                          (long long)r->hi);
        }
        return WAMP_OK;
    case KEY_IGN_STRING:
        return json_is_string(v) ? WAMP_OK : refuse(c, path, "must be a string");
    case KEY_IGN_STRINGS:
        return is_string_list(v) ? WAMP_OK : refuse(c, path, "must be a list of strings");
    case KEY_IGN_OBJECT:
        return json_is_object(v) ? WAMP_OK : refuse(c, path, "must be an object");
    case KEY_ONLY_TRUE:
        if (!json_is_boolean(v)) {
            return refuse(c, path, "must be a boolean");
        }
        return json_is_true(v) ? WAMP_OK : refuse(c, path, "%s", r->why);
    case KEY_ONLY_FALSE:
        if (!json_is_boolean(v)) {
            return refuse(c, path, "must be a boolean");
        }
        return json_is_false(v) ? WAMP_OK : refuse(c, path, "%s", r->why);
    }
    return refuse(c, path, "internal error: bad key rule");
}

/* obj must be an object whose every key has a rule; refused/ignored keys are handled here. */
static wamp_err check_keys(cfg_ctx *c, const char *path, const json_t *obj, const key_rule *rules,
                           size_t n)
{
    if (!json_is_object(obj)) {
        return refuse(c, path, "must be an object");
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        cfg_path kp = path_key(path, key);
        const key_rule *r = find_rule(rules, n, key);
        if (!r) {
            return refuse(c, kp.s, "unknown key");
        }
        wamp_err err = check_rule_value(c, kp.s, r, v);
        if (err != WAMP_OK) {
            return err;
        }
    }
    return WAMP_OK;
}

/* ---- Typed getters: absent keys leave *out unchanged (the default) -------------------------- */

static wamp_err opt_bool(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                         bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        return WAMP_OK;
    }
    if (!json_is_boolean(v)) {
        return refuse(c, path_key(path, key).s, "must be a boolean");
    }
    *out = json_is_true(v);
    return WAMP_OK;
}

/* unit is appended to the message ("bytes", "ms") or NULL. */
static wamp_err opt_int(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                        json_int_t lo, json_int_t hi, const char *unit, json_int_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        return WAMP_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        return refuse(c, path_key(path, key).s, "must be an integer %lld..%lld%s%s", (long long)lo,
                      (long long)hi, unit ? " " : "", unit ? unit : "");
    }
    *out = json_integer_value(v);
    return WAMP_OK;
}

/* Borrowed string (valid while the JSON tree lives) or NULL when absent. */
static wamp_err opt_str(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                        const char **out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v) {
        return WAMP_OK;
    }
    if (!json_is_string(v)) {
        return refuse(c, path_key(path, key).s, "must be a string");
    }
    *out = json_string_value(v);
    return WAMP_OK;
}

static wamp_err req_str(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                        const char **out)
{
    wamp_err err = opt_str(c, path, obj, key, out);
    if (err == WAMP_OK && !*out) {
        return refuse(c, path_key(path, key).s, "is required");
    }
    return err;
}

/* Crossbar's configuration item ID rule (checkconfig.py _CONFIG_ITEM_ID_PAT):
 * ^[a-z][a-z0-9_]{2,63}$. */
static bool id_is_valid(const char *id)
{
    size_t n = strlen(id);
    if (n < 3 || n > 64 || !(id[0] >= 'a' && id[0] <= 'z')) {
        return false;
    }
    for (size_t i = 1; i < n; i++) {
        char ch = id[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_')) {
            return false;
        }
    }
    return true;
}

static wamp_err opt_id(cfg_ctx *c, const char *path, const json_t *obj, const char **out)
{
    wamp_err err = opt_str(c, path, obj, "id", out);
    if (err == WAMP_OK && *out && !id_is_valid(*out)) {
        return refuse(c, path_key(path, "id").s,
                      "\"%s\" must match ^[a-z][a-z0-9_]{2,63}$ (Crossbar's ID rule)", *out);
    }
    return err;
}

/* ---- Realms, roles, permissions ------------------------------------------------------------- */

static const key_rule allow_rules[] = {
        K_PARSED("call"),
        K_PARSED("register"),
        K_PARSED("publish"),
        K_PARSED("subscribe"),
};

static const key_rule disclose_rules[] = {
        K_PARSED("caller"),
        K_PARSED("publisher"),
};

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
            return refuse(c, path, "'*' must stand for a whole URI component in \"%s\"", uri);
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

static wamp_err parse_permission(cfg_ctx *c, const char *path, const json_t *o, rt_permission *p)
{
    wamp_err err = check_keys(c, path, o, permission_rules, N_RULES(permission_rules));
    const char *uri = NULL;
    const char *match = NULL;
    cfg_path up = path_key(path, "uri");

    if (err == WAMP_OK) {
        err = req_str(c, path, o, "uri", &uri);
    }
    if (err == WAMP_OK) {
        err = opt_str(c, path, o, "match", &match);
    }
    if (err == WAMP_OK) {
        err = dup_str(c, uri, &p->uri);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (match) {
        if (!wamp_match_parse(match, &p->match)) {
            return refuse(c, path_key(path, "match").s,
                          "must be \"exact\", \"prefix\" or \"wildcard\" (got \"%s\")", match);
        }
        /* Crossbar skips the star conversion when "match" is given and would then compare the
         * '*' literally, which is never what was meant. */
        if (strchr(uri, '*')) {
            return refuse(c, up.s,
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
            return refuse(c, up.s,
                          "\"%s\" with match \"exact\" is ambiguous; for a prefix use "
                          "\"match\": \"prefix\"",
                          uri);
        }
        return refuse(c, up.s,
                      "\"%s\" with match \"exact\" is ambiguous; for a prefix write \"%s*\" or "
                      "\"match\": \"prefix\"",
                      uri, uri);
    }
    if (!ok) {
        return refuse(c, up.s, "\"%s\" is not a valid URI pattern for match \"%s\"", uri,
                      wamp_match_name(p->match));
    }

    const json_t *allow = json_object_get(o, "allow");
    if (allow) {
        cfg_path ap = path_key(path, "allow");
        err = check_keys(c, ap.s, allow, allow_rules, N_RULES(allow_rules));
        if (err == WAMP_OK) {
            err = opt_bool(c, ap.s, allow, "call", &p->allow_call);
        }
        if (err == WAMP_OK) {
            err = opt_bool(c, ap.s, allow, "register", &p->allow_register);
        }
        if (err == WAMP_OK) {
            err = opt_bool(c, ap.s, allow, "publish", &p->allow_publish);
        }
        if (err == WAMP_OK) {
            err = opt_bool(c, ap.s, allow, "subscribe", &p->allow_subscribe);
        }
        if (err != WAMP_OK) {
            return err;
        }
    }
    const json_t *disclose = json_object_get(o, "disclose");
    if (disclose) {
        cfg_path dp = path_key(path, "disclose");
        err = check_keys(c, dp.s, disclose, disclose_rules, N_RULES(disclose_rules));
        if (err == WAMP_OK) {
            err = opt_bool(c, dp.s, disclose, "caller", &p->disclose_caller);
        }
        if (err == WAMP_OK) {
            err = opt_bool(c, dp.s, disclose, "publisher", &p->disclose_publisher);
        }
    }
    return err;
}

static const key_rule role_rules[] = {
        K_PARSED("name"),
        K_PARSED("permissions"),
        K_REFUSED("authorizer", "dynamic authorizers are not supported (use static permissions)"),
};

static wamp_err parse_role(cfg_ctx *c, const char *path, const json_t *o, rt_role *role)
{
    wamp_err err = check_keys(c, path, o, role_rules, N_RULES(role_rules));
    const char *name = NULL;
    if (err == WAMP_OK) {
        err = req_str(c, path, o, "name", &name);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (!wamp_uri_is_valid(name, WAMP_URI_LOOSE)) {
        return refuse(c, path_key(path, "name").s, "\"%s\" is not a valid role name", name);
    }
    err = dup_str(c, name, &role->name);
    if (err != WAMP_OK) {
        return err;
    }

    /* A role without "permissions" denies everything (Crossbar's RouterRole default). */
    const json_t *perms = json_object_get(o, "permissions");
    if (!perms) {
        return WAMP_OK;
    }
    cfg_path pp = path_key(path, "permissions");
    if (!json_is_array(perms)) {
        return refuse(c, pp.s, "must be a list");
    }
    size_t n = json_array_size(perms);
    if (n) {
        role->permissions = calloc(n, sizeof(*role->permissions));
        if (!role->permissions) {
            return out_of_memory(c);
        }
        role->n_permissions = n;
    }
    for (size_t i = 0; i < n; i++) {
        cfg_path ip = path_index(pp.s, i);
        rt_permission *p = &role->permissions[i];
        err = parse_permission(c, ip.s, json_array_get(perms, i), p);
        if (err != WAMP_OK) {
            return err;
        }
        /* Crossbar keeps one permission per pattern (a trie keyed by the URI, wildcards in a
         * separate trie): a later duplicate silently replaces the earlier one. Refuse instead. */
        for (size_t j = 0; j < i; j++) {
            const rt_permission *q = &role->permissions[j];
            bool same_trie = (p->match == WAMP_MATCH_WILDCARD) == (q->match == WAMP_MATCH_WILDCARD);
            if (same_trie && strcmp(p->uri, q->uri) == 0) {
                return refuse(c, path_key(ip.s, "uri").s,
                              "pattern \"%s\" is already used by permissions[%zu] (Crossbar "
                              "would silently keep only the last one)",
                              p->uri, j);
            }
        }
    }
    return WAMP_OK;
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
};

static wamp_err parse_realm(cfg_ctx *c, const char *path, const json_t *o, rt_realm_config *rc)
{
    wamp_err err = check_keys(c, path, o, realm_rules, N_RULES(realm_rules));
    const char *name = NULL;
    if (err == WAMP_OK) {
        err = req_str(c, path, o, "name", &name);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (!wamp_uri_is_valid(name, WAMP_URI_LOOSE)) {
        return refuse(c, path_key(path, "name").s, "\"%s\" is not a valid realm name (a URI)",
                      name);
    }
    err = dup_str(c, name, &rc->name);
    if (err != WAMP_OK) {
        return err;
    }

    const json_t *opts = json_object_get(o, "options");
    if (opts) {
        cfg_path op = path_key(path, "options");
        const char *uri_check = NULL;
        err = check_keys(c, op.s, opts, realm_option_rules, N_RULES(realm_option_rules));
        if (err == WAMP_OK) {
            err = opt_str(c, op.s, opts, "uri_check", &uri_check);
        }
        bool meta_api = true; /* Crossbar's default */
        if (err == WAMP_OK) {
            err = opt_bool(c, op.s, opts, "enable_meta_api", &meta_api);
        }
        rc->no_meta_api = !meta_api;
        if (err != WAMP_OK) {
            return err;
        }
        /* wampscope checks every URI with the loose rule; Crossbar's default is "strict". */
        if (uri_check && strcmp(uri_check, "loose") != 0) {
            return refuse(c, path_key(op.s, "uri_check").s,
                          "only \"loose\" is supported (got \"%s\"); wampscope always checks "
                          "URIs with the loose rule",
                          uri_check);
        }
    }

    const json_t *roles = json_object_get(o, "roles");
    if (!roles) {
        return WAMP_OK;
    }
    cfg_path rp = path_key(path, "roles");
    if (!json_is_array(roles)) {
        return refuse(c, rp.s, "must be a list");
    }
    size_t n = json_array_size(roles);
    if (n) {
        rc->roles = calloc(n, sizeof(*rc->roles));
        if (!rc->roles) {
            return out_of_memory(c);
        }
        rc->n_roles = n;
    }
    for (size_t i = 0; i < n; i++) {
        cfg_path ip = path_index(rp.s, i);
        err = parse_role(c, ip.s, json_array_get(roles, i), &rc->roles[i]);
        if (err != WAMP_OK) {
            return err;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(rc->roles[i].name, rc->roles[j].name) == 0) {
                return refuse(c, path_key(ip.s, "name").s,
                              "role \"%s\" is already defined by roles[%zu]", rc->roles[i].name, j);
            }
        }
    }
    return WAMP_OK;
}

/* ---- Transports ----------------------------------------------------------------------------- */

/* A type value Crossbar knows at some key, with why wampscope refuses it (NULL: accepted). */
typedef struct type_rule {
    const char *type;
    const char *why;
} type_rule;

/* o must be an object with a string "type" (borrowed into *type) that types lists as accepted;
 * a listed but unsupported type is refused with its reason, an unlisted one as unknown. */
static wamp_err check_type(cfg_ctx *c, const char *path, const json_t *o, const type_rule *types,
                           size_t n, const char **type)
{
    if (!json_is_object(o)) {
        return refuse(c, path, "must be an object");
    }
    wamp_err err = req_str(c, path, o, "type", type);
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path tp = path_key(path, "type");
    for (size_t i = 0; i < n; i++) {
        if (strcmp(types[i].type, *type) == 0) {
            return types[i].why ? refuse(c, tp.s, "%s", types[i].why) : WAMP_OK;
        }
    }
    return refuse(c, tp.s, "unknown type \"%s\"", *type);
}

static const type_rule endpoint_types[] = {
        {"tcp", NULL},
        {"unix", NULL},
        {"twisted", "Twisted endpoint strings are not supported"},
        {"onion", "Tor onion endpoints are not supported"},
};

static const key_rule endpoint_rules[] = {
        K_PARSED("type"),
        K_PARSED("port"),
        K_PARSED("interface"),
        K_PARSED("version"),
        /* lws uses its own listen backlog. */
        K_IGN_INT("backlog", 1, 65535),
        /* SO_REUSEPORT between Crossbar router workers; wampscope runs one router. */
        K_IGN("shared", KEY_IGN_BOOL),
        K_PARSED("tls"),
        K_REFUSED("portrange", "port ranges are not supported; give one \"port\""),
        K_REFUSED("user_timeout", "TCP_USER_TIMEOUT is not supported"),
};

/* Crossbar's listening TLS options (checkconfig.py check_listening_endpoint_tls), as far as
 * lws 4.1's vhost TLS can honour them. */
static const key_rule tls_rules[] = {
        K_PARSED("key"),
        K_PARSED("certificate"),
        K_PARSED("ciphers"),
        K_REFUSED("chain_certificates",
                  "not supported: append the chain certificates to the \"certificate\" file "
                  "(PEM)"),
        K_REFUSED("ca_certificates", "client certificate verification is not supported yet"),
        K_REFUSED("dhparam", "not supported (lws 4.1 has no DH parameter setting; ECDHE cipher "
                             "suites need none)"),
};

/* A required file name whose file the router can read now (refused at start, with the path,
 * rather than by lws later). */
static wamp_err tls_file(cfg_ctx *c, const char *path, const json_t *o, const char *key, char **out)
{
    const char *name = NULL;
    wamp_err err = req_str(c, path, o, key, &name);
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path kp = path_key(path, key);
    if (!name[0]) {
        return refuse(c, kp.s, "must not be empty");
    }
    FILE *f = fopen(name, "rb");
    if (!f) {
        return refuse(c, kp.s, "cannot read \"%s\": %s", name, strerror(errno));
    }
    fclose(f);
    return dup_str(c, name, out);
}

static wamp_err parse_tls(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    wamp_err err = check_keys(c, path, o, tls_rules, N_RULES(tls_rules));
    if (err == WAMP_OK) {
        err = tls_file(c, path, o, "certificate", &l->tls_certificate);
    }
    if (err == WAMP_OK) {
        err = tls_file(c, path, o, "key", &l->tls_key);
    }
    const char *ciphers = NULL;
    if (err == WAMP_OK) {
        err = opt_str(c, path, o, "ciphers", &ciphers);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (ciphers && !ciphers[0]) {
        return refuse(c, path_key(path, "ciphers").s, "must not be empty");
    }
    return ciphers ? dup_str(c, ciphers, &l->tls_ciphers) : WAMP_OK;
}

/* Crossbar's Unix endpoint (checkconfig.py check_listening_endpoint_unix). */
static const key_rule unix_endpoint_rules[] = {
        K_PARSED("type"),
        K_PARSED("path"),
        K_IGN_INT("backlog", 1, 65535),
};

/* sockaddr_un.sun_path holds 108 bytes with the NUL on Linux. */
#define UNIX_PATH_MAX 107

static wamp_err parse_unix_endpoint(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    wamp_err err = check_keys(c, path, o, unix_endpoint_rules, N_RULES(unix_endpoint_rules));
    const char *sp = NULL;
    if (err == WAMP_OK) {
        err = req_str(c, path, o, "path", &sp);
    }
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path pp = path_key(path, "path");
    if (!sp[0]) {
        return refuse(c, pp.s, "must not be empty");
    }
    if (strlen(sp) > UNIX_PATH_MAX) {
        return refuse(c, pp.s, "is longer than %d bytes (the limit of a Unix socket path)",
                      UNIX_PATH_MAX);
    }
    /* lws treats a leading '@' as Linux's abstract namespace: keep to files. */
    if (sp[0] == '@') {
        return refuse(c, pp.s, "abstract Unix sockets (\"@name\") are not supported");
    }
    return dup_str(c, sp, &l->unix_path);
}

static wamp_err parse_endpoint(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    const char *type = NULL;
    wamp_err err = check_type(c, path, o, endpoint_types, N_RULES(endpoint_types), &type);
    if (err == WAMP_OK && strcmp(type, "unix") == 0) {
        return parse_unix_endpoint(c, path, o, l);
    }
    if (err == WAMP_OK) {
        err = check_keys(c, path, o, endpoint_rules, N_RULES(endpoint_rules));
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (!json_object_get(o, "port")) {
        return refuse(c, path_key(path, "port").s, "is required");
    }
    json_int_t port = 0;
    err = opt_int(c, path, o, "port", 0, 65535, NULL, &port);
    if (err != WAMP_OK) {
        return err;
    }
    l->port = (int)port;

    const char *iface = NULL;
    err = opt_str(c, path, o, "interface", &iface);
    if (err != WAMP_OK) {
        return err;
    }
    if (iface && !iface[0]) {
        return refuse(c, path_key(path, "interface").s,
                      "must not be empty (remove it to listen on all interfaces)");
    }
    if (iface) {
        err = dup_str(c, iface, &l->interface);
        if (err != WAMP_OK) {
            return err;
        }
    }

    /* The address family follows the interface address; without one, lws listens on all
     * IPv4 interfaces, which is what "version": 4 (Crossbar's default) means. */
    json_int_t version = 4;
    const json_t *vv = json_object_get(o, "version");
    cfg_path vp = path_key(path, "version");
    if (vv &&
        (!json_is_integer(vv) || (json_integer_value(vv) != 4 && json_integer_value(vv) != 6))) {
        return refuse(c, vp.s, "must be 4 or 6");
    }
    if (vv) {
        version = json_integer_value(vv);
    }
    if (version == 6 && !iface) {
        return refuse(c, vp.s,
                      "6 needs an explicit \"interface\" (e.g. \"::\" for all IPv6 "
                      "interfaces)");
    }
    bool v6_literal = iface && strchr(iface, ':') != NULL;
    bool v4_literal = iface && iface[strspn(iface, "0123456789.")] == '\0';
    if ((version == 4 && v6_literal) || (version == 6 && v4_literal)) {
        return refuse(c, vp.s, "%lld does not match interface \"%s\"", (long long)version, iface);
    }
    const json_t *tls = json_object_get(o, "tls");
    return tls ? parse_tls(c, path_key(path, "tls").s, tls, l) : WAMP_OK;
}

/* "ws://host[:port][/path][?query]" or "wss://..." (autobahn parse_url accepts these). Writes
 * the path ("/" when absent) to *out_path. */
static wamp_err parse_ws_url(cfg_ctx *c, const char *path, const char *url, char **out_path)
{
    const char *rest;
    if (strncmp(url, "ws://", 5) == 0) {
        rest = url + 5;
    } else if (strncmp(url, "wss://", 6) == 0) {
        rest = url + 6;
    } else {
        return refuse(c, path, "\"%s\" must be a ws:// or wss:// URL", url);
    }
    size_t host_len = strcspn(rest, "/?#");
    if (host_len == 0) {
        return refuse(c, path, "\"%s\" has no host", url);
    }
    if (strchr(rest, '#')) {
        return refuse(c, path, "\"%s\": a WebSocket URL cannot have a fragment", url);
    }
    const char *p = rest + host_len;
    size_t plen = *p == '/' ? strcspn(p, "?") : 0;
    char *s = plen ? strndup(p, plen) : strdup("/");
    if (!s) {
        return out_of_memory(c);
    }
    free(*out_path);
    *out_path = s;
    return WAMP_OK;
}

static wamp_err parse_serializers(cfg_ctx *c, const char *path, const json_t *v, rt_listener *l)
{
    if (!json_is_array(v)) {
        return refuse(c, path, "must be a list");
    }
    if (json_array_size(v) == 0) {
        return refuse(c, path,
                      "must name at least one serializer (\"json\", \"msgpack\", \"cbor\")");
    }
    l->ser_json = false;
    l->ser_msgpack = false;
    l->ser_cbor = false;
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e)
    {
        cfg_path ip = path_index(path, i);
        const char *s = json_string_value(e);
        if (!s) {
            return refuse(c, ip.s, "must be a string");
        }
        if (strcmp(s, "json") == 0) {
            l->ser_json = true;
        } else if (strcmp(s, "msgpack") == 0) {
            l->ser_msgpack = true;
        } else if (strcmp(s, "cbor") == 0) {
            l->ser_cbor = true;
        } else if (strcmp(s, "ubjson") == 0 || strcmp(s, "flatbuffers") == 0) {
            return refuse(c, ip.s,
                          "serializer \"%s\" is not supported (only \"json\", \"msgpack\" "
                          "and \"cbor\" are)",
                          s);
        } else {
            return refuse(c, ip.s, "unknown serializer \"%s\"", s);
        }
    }
    return WAMP_OK;
}

/* Crossbar's WebSocket options (checkconfig.py check_websocket_options), sorted by what
 * wampscope does with them. */
static const key_rule ws_option_rules[] = {
        /* Honoured. */
        K_PARSED("max_message_size"),
        K_PARSED("max_connections"), /* wampscope's; see parse_max_connections() */
        K_PARSED("auto_ping_interval"),
        K_PARSED("auto_ping_timeout"),
        /* Accepted and ignored: no effect on what the router accepts or on its safety. */
        K_IGN_INT("auto_ping_size", 12, 125),
        K_IGN("auto_ping_restart_on_any_traffic", KEY_IGN_BOOL),
        K_IGN("enable_webstatus", KEY_IGN_BOOL),
        K_IGN("show_server_version", KEY_IGN_BOOL),
        K_IGN_INT("max_frame_size", 0, INT32_MAX),
        K_IGN_INT("auto_fragment_size", 0, INT32_MAX),
        K_IGN("fail_by_drop", KEY_IGN_BOOL),
        K_IGN_INT("open_handshake_timeout", 0, INT32_MAX),
        K_IGN_INT("close_handshake_timeout", 0, INT32_MAX),
        K_IGN("echo_close_codereason", KEY_IGN_BOOL),
        K_IGN("tcp_nodelay", KEY_IGN_BOOL),
        K_IGN("compression", KEY_IGN_OBJECT),
        /* Accepted only with the value that describes what wampscope always does. */
        K_PARSED("allowed_origins"),
        K_ONLY("allow_null_origin", KEY_ONLY_TRUE,
               "only true is supported (Origin is not checked yet)"),
        K_ONLY("require_websocket_subprotocol", KEY_ONLY_TRUE,
               "only true is supported (a WAMP subprotocol is always required)"),
        K_ONLY("mask_server_frames", KEY_ONLY_FALSE, "only false is supported (RFC 6455)"),
        K_ONLY("require_masked_client_frames", KEY_ONLY_TRUE, "only true is supported (RFC 6455)"),
        /* Refused. */
        K_REFUSED("external_port", "not supported"),
        K_REFUSED("enable_hybi10", "not supported (RFC 6455 only)"),
        K_REFUSED("enable_rfc6455", "not supported (RFC 6455 is always on)"),
        K_REFUSED("validate_utf8", "not supported"),
        K_REFUSED("apply_mask", "not supported"),
        K_REFUSED("enable_flash_policy", "Flash policy files are not supported"),
        K_REFUSED("flash_policy", "Flash policy files are not supported"),
};

/* Crossbar checks intervals in ms: 0 (off) or at least 1000. lws works in whole seconds and
 * keeps them in 16 bits; an hour is plenty. */
#define PING_MS_MAX 3600000

static wamp_err parse_ping_ms(cfg_ctx *c, const char *path, const json_t *o, const char *key,
                              uint32_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        return WAMP_OK;
    }
    json_int_t ms = json_is_integer(v) ? json_integer_value(v) : -1;
    if (ms != 0 && (ms < 1000 || ms > PING_MS_MAX)) {
        return refuse(c, path_key(path, key).s, "must be 0 (off) or an integer 1000..%d ms",
                      PING_MS_MAX);
    }
    *out = (uint32_t)ms;
    return WAMP_OK;
}

/* options.max_connections (WebSocket and RawSocket). Crossbar's checkconfig knows no such key
 * (its router/protocol.py has it only in a comment, unenforced); autobahn's WebSocket server
 * factory has the same limit as maxConnections, answered with HTTP 503. */
static wamp_err parse_max_connections(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    json_int_t max = 0;
    wamp_err err = opt_int(c, path, o, "max_connections", 1, 10000000, NULL, &max);
    if (err == WAMP_OK) {
        l->max_connections = (size_t)max;
    }
    return err;
}

static wamp_err parse_ws_options(cfg_ctx *c, const char *path, const json_t *o,
                                 const rt_limits *lim, rt_listener *l)
{
    wamp_err err = check_keys(c, path, o, ws_option_rules, N_RULES(ws_option_rules));
    if (err != WAMP_OK) {
        return err;
    }
    json_int_t mms = (json_int_t)lim->max_message_size;
    err = opt_int(c, path, o, "max_message_size", KIB, GIB, "bytes", &mms);
    if (err != WAMP_OK) {
        return err;
    }
    if ((size_t)mms > lim->max_message_size) {
        return refuse(c, path_key(path, "max_message_size").s,
                      "%lld exceeds wampscope.limits.max_message_size (%zu bytes)", (long long)mms,
                      lim->max_message_size);
    }
    l->max_message_size = (size_t)mms;
    err = parse_max_connections(c, path, o, l);
    if (err == WAMP_OK) {
        err = parse_ping_ms(c, path, o, "auto_ping_interval", &l->auto_ping_interval_ms);
    }
    if (err == WAMP_OK) {
        err = parse_ping_ms(c, path, o, "auto_ping_timeout", &l->auto_ping_timeout_ms);
    }
    if (err != WAMP_OK) {
        return err;
    }
    const json_t *origins = json_object_get(o, "allowed_origins");
    if (origins) {
        bool any = is_string_list(origins) && json_array_size(origins) == 1 &&
                   strcmp(json_string_value(json_array_get(origins, 0)), "*") == 0;
        if (!any) {
            return refuse(c, path_key(path, "allowed_origins").s,
                          "only [\"*\"] is supported (Origin is not checked yet)");
        }
    }
    return WAMP_OK;
}

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

static const key_rule auth_rules[] = {
        K_PARSED("anonymous"),
        K_PARSED("ticket"),
        K_PARSED("wampcra"),
        K_PARSED("cryptosign"),
        K_REFUSED("cookie", "authentication method \"cookie\" is not supported yet"),
        K_REFUSED("tls", "authentication method \"tls\" is not supported yet"),
        K_REFUSED("scram", "authentication method \"scram\" is not supported yet"),
        K_REFUSED("anonymous-proxy", "proxy authentication is not supported"),
        K_REFUSED("cryptosign-proxy", "proxy authentication is not supported"),
};

/* The management realm's credentials: the same format without anonymous (protected mode is the
 * anonymous way in, and it is off once credentials are configured). */
static const key_rule mgmt_auth_rules[] = {
        K_REFUSED("anonymous",
                  "anonymous access to the management realm is protected mode "
                  "(wampscope.management.trusted_networks), which is off once credentials are "
                  "configured"),
        K_PARSED("ticket"),
        K_PARSED("wampcra"),
        K_PARSED("cryptosign"),
        K_REFUSED("cookie", "authentication method \"cookie\" is not supported yet"),
        K_REFUSED("tls", "authentication method \"tls\" is not supported yet"),
        K_REFUSED("scram", "authentication method \"scram\" is not supported yet"),
        K_REFUSED("anonymous-proxy", "proxy authentication is not supported"),
        K_REFUSED("cryptosign-proxy", "proxy authentication is not supported"),
};

static const type_rule static_types[] = {
        {"static", NULL},
        {"dynamic", "dynamic authenticators are not supported (use static principals)"},
        {"function", "authenticator functions are not supported (use static principals)"},
};

static const key_rule ticket_rules[] = {K_PARSED("type"), K_PARSED("principals")};
static const key_rule wampcra_rules[] = {K_PARSED("type"), K_PARSED("users")};
static const key_rule cryptosign_rules[] = {K_PARSED("type"), K_PARSED("principals")};
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

static void free_auth(rt_auth_config *a)
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
            return refuse(c, path, "environment variable name is too long");
        }
        memcpy(var, text + 2, n - 3);
        var[n - 3] = '\0';
        value = getenv(var);
        if (!value) {
            return refuse(c, path, "environment variable %s is not set", var);
        }
        if (!value[0]) {
            return refuse(c, path, "environment variable %s is empty", var);
        }
    } else if (!n) {
        return refuse(c, path, "must not be empty");
    }
    return dup_str(c, value, out);
}

static wamp_err parse_role_name(cfg_ctx *c, const char *path, const json_t *o, char **out)
{
    const char *role = NULL;
    wamp_err err = opt_str(c, path, o, "role", &role);
    if (err != WAMP_OK || !role) {
        return err;
    }
    if (!wamp_uri_is_valid(role, WAMP_URI_LOOSE)) {
        return refuse(c, path_key(path, "role").s, "\"%s\" is not a valid role name", role);
    }
    return dup_str(c, role, out);
}

static wamp_err parse_keys(cfg_ctx *c, const char *path, const json_t *v, rt_auth_principal *p)
{
    if (!json_is_array(v) || json_array_size(v) == 0) {
        return refuse(c, path, "must be a non-empty list of hex-encoded Ed25519 public keys");
    }
    p->keys = calloc(json_array_size(v), sizeof(*p->keys));
    if (!p->keys) {
        return out_of_memory(c);
    }
    size_t i;
    const json_t *k;
    json_array_foreach(v, i, k)
    {
        const char *hex = json_string_value(k);
        size_t bin_len = 0;
        if (!hex || strlen(hex) != 64 ||
            sodium_hex2bin(p->keys[i], 32, hex, 64, NULL, &bin_len, NULL) != 0 || bin_len != 32) {
            return refuse(c, path_index(path, i).s,
                          "must be an Ed25519 public key as 64 hex characters");
        }
        p->n_keys = i + 1;
    }
    return WAMP_OK;
}

static wamp_err parse_principal(cfg_ctx *c, const char *path, auth_kind kind, const char *authid,
                                const json_t *o, const char *default_role, rt_auth_principal *p)
{
    wamp_err err;
    switch (kind) {
    case AUTH_TICKET:
        err = check_keys(c, path, o, ticket_principal_rules, N_RULES(ticket_principal_rules));
        break;
    case AUTH_WAMPCRA:
        err = check_keys(c, path, o, wampcra_user_rules, N_RULES(wampcra_user_rules));
        break;
    default:
        err = check_keys(c, path, o, cryptosign_principal_rules,
                         N_RULES(cryptosign_principal_rules));
        break;
    }
    if (err == WAMP_OK) {
        err = dup_str(c, authid, &p->authid);
    }
    if (err == WAMP_OK) {
        err = parse_role_name(c, path, o, &p->role);
    }
    if (err == WAMP_OK && !p->role && default_role) {
        err = dup_str(c, default_role, &p->role);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (kind == AUTH_CRYPTOSIGN) {
        const char *realm = NULL;
        if (!p->role) {
            return refuse(c, path_key(path, "role").s, "is required");
        }
        err = opt_str(c, path, o, "realm", &realm);
        if (err == WAMP_OK && realm && !wamp_uri_is_valid(realm, WAMP_URI_LOOSE)) {
            err = refuse(c, path_key(path, "realm").s, "\"%s\" is not a valid realm name", realm);
        }
        if (err == WAMP_OK && realm) {
            err = dup_str(c, realm, &p->realm);
        }
        const json_t *keys = json_object_get(o, "authorized_keys");
        cfg_path kp = path_key(path, "authorized_keys");
        if (err == WAMP_OK) {
            err = keys ? parse_keys(c, kp.s, keys, p) : refuse(c, kp.s, "is required");
        }
        return err;
    }
    const char *key = kind == AUTH_TICKET ? "ticket" : "secret";
    const char *secret = NULL;
    err = req_str(c, path, o, key, &secret);
    if (err == WAMP_OK) {
        err = parse_secret(c, path_key(path, key).s, secret, &p->secret);
    }
    if (err != WAMP_OK || kind != AUTH_WAMPCRA) {
        return err;
    }
    const char *salt = NULL;
    json_int_t iterations = 1000, keylen = 32;
    err = opt_str(c, path, o, "salt", &salt);
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "iterations", 1, 100000000, NULL, &iterations);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "keylen", 1, 1024, "bytes", &keylen);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (!salt && (json_object_get(o, "iterations") || json_object_get(o, "keylen"))) {
        return refuse(c, path, "\"iterations\" and \"keylen\" need a \"salt\"");
    }
    if (salt && !salt[0]) {
        return refuse(c, path_key(path, "salt").s, "must not be empty");
    }
    p->iterations = (uint32_t)iterations;
    p->keylen = (uint32_t)keylen;
    return salt ? dup_str(c, salt, &p->salt) : WAMP_OK;
}

static wamp_err parse_auth_method(cfg_ctx *c, const char *path, auth_kind kind, const json_t *o,
                                  const char *default_role, rt_auth_method_config *m)
{
    const char *type = NULL;
    wamp_err err = check_type(c, path, o, static_types, N_RULES(static_types), &type);
    if (err != WAMP_OK) {
        return err;
    }
    const char *list_key = "principals";
    switch (kind) {
    case AUTH_TICKET:
        err = check_keys(c, path, o, ticket_rules, N_RULES(ticket_rules));
        break;
    case AUTH_WAMPCRA:
        err = check_keys(c, path, o, wampcra_rules, N_RULES(wampcra_rules));
        list_key = "users";
        break;
    default:
        err = check_keys(c, path, o, cryptosign_rules, N_RULES(cryptosign_rules));
        break;
    }
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path lp = path_key(path, list_key);
    const json_t *list = json_object_get(o, list_key);
    if (!list) {
        return refuse(c, lp.s, "is required for static %s authentication",
                      kind == AUTH_TICKET    ? "ticket"
                      : kind == AUTH_WAMPCRA ? "wampcra"
                                             : "cryptosign");
    }
    if (!json_is_object(list)) {
        return refuse(c, lp.s, "must be an object mapping authids to principals");
    }
    m->enabled = true;
    m->principals = calloc(json_object_size(list) + 1, sizeof(*m->principals));
    if (!m->principals) {
        return out_of_memory(c);
    }
    const char *authid;
    const json_t *v;
    json_object_foreach((json_t *)list, authid, v)
    {
        cfg_path pp = path_key(lp.s, authid);
        if (!authid[0]) {
            return refuse(c, pp.s, "an authid must not be empty");
        }
        err = parse_principal(c, pp.s, kind, authid, v, default_role,
                              &m->principals[m->n_principals]);
        m->n_principals++; /* counted even when partly filled: freed either way */
        if (err != WAMP_OK) {
            return err;
        }
    }
    return WAMP_OK;
}

/* ticket / wampcra / cryptosign of an auth object already checked against its key table. */
static wamp_err parse_auth_methods(cfg_ctx *c, const char *path, const json_t *o,
                                   const char *default_role, rt_auth_config *a)
{
    static const char *const keys[] = {"ticket", "wampcra", "cryptosign"};
    rt_auth_method_config *ms[] = {&a->ticket, &a->wampcra, &a->cryptosign};
    for (size_t i = 0; i < 3; i++) {
        const json_t *v = json_object_get(o, keys[i]);
        if (!v) {
            continue;
        }
        wamp_err err = parse_auth_method(c, path_key(path, keys[i]).s, (auth_kind)i, v,
                                         default_role, ms[i]);
        if (err != WAMP_OK) {
            return err;
        }
    }
    return WAMP_OK;
}

/* A transport's "auth" (Crossbar router/session.py): a transport without "auth", or with an
 * empty "auth", lets anyone join as role "anonymous"; otherwise exactly the listed methods are
 * offered. Transport-type independent: every listener kind calls this for its "auth". */
static wamp_err parse_auth(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    if (!o || (json_is_object(o) && json_object_size(o) == 0)) {
        return dup_str(c, DEF_ANONYMOUS_ROLE, &l->anonymous_role);
    }
    wamp_err err = check_keys(c, path, o, auth_rules, N_RULES(auth_rules));
    if (err == WAMP_OK) {
        err = parse_auth_methods(c, path, o, NULL, &l->auth);
    }
    if (err != WAMP_OK) {
        return err;
    }
    const json_t *anon = json_object_get(o, "anonymous");
    if (!anon) {
        return WAMP_OK; /* credentials only: anonymous_role stays NULL (anonymous refused) */
    }
    cfg_path ap = path_key(path, "anonymous");
    const char *type = NULL;
    const char *role = NULL;
    err = check_type(c, ap.s, anon, anonymous_types, N_RULES(anonymous_types), &type);
    if (err == WAMP_OK) {
        err = check_keys(c, ap.s, anon, anonymous_rules, N_RULES(anonymous_rules));
    }
    if (err == WAMP_OK) {
        err = opt_str(c, ap.s, anon, "role", &role);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (role && !wamp_uri_is_valid(role, WAMP_URI_LOOSE)) {
        return refuse(c, path_key(ap.s, "role").s, "\"%s\" is not a valid role name", role);
    }
    return dup_str(c, role ? role : DEF_ANONYMOUS_ROLE, &l->anonymous_role);
}

/* Keys of a "websocket" transport (is_transport) or of a web transport's "websocket" path. */
static const key_rule ws_transport_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
        K_PARSED("endpoint"),
        K_PARSED("url"),
        K_PARSED("serializers"),
        K_PARSED("options"),
        K_PARSED("auth"),
        K_IGN("debug", KEY_IGN_BOOL),
        K_REFUSED("cookie", "cookie tracking is not supported yet"),
};

static const key_rule ws_path_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
        K_PARSED("url"),
        K_PARSED("serializers"),
        K_PARSED("options"),
        K_PARSED("auth"),
        K_IGN("debug", KEY_IGN_BOOL),
        K_REFUSED("cookie", "cookie tracking is not supported yet"),
};

static wamp_err parse_ws_service(cfg_ctx *c, const char *path, const json_t *o, bool is_transport,
                                 const rt_limits *lim, rt_listener *l)
{
    wamp_err err = is_transport
                           ? check_keys(c, path, o, ws_transport_rules, N_RULES(ws_transport_rules))
                           : check_keys(c, path, o, ws_path_rules, N_RULES(ws_path_rules));
    const char *id = NULL;
    if (err == WAMP_OK) {
        err = opt_id(c, path, o, &id);
    }
    if (err == WAMP_OK && is_transport && id) {
        err = dup_str(c, id, &l->id);
    }
    if (err == WAMP_OK && is_transport) {
        const json_t *ep = json_object_get(o, "endpoint");
        cfg_path ep_path = path_key(path, "endpoint");
        err = ep ? parse_endpoint(c, ep_path.s, ep, l) : refuse(c, ep_path.s, "is required");
    }
    if (err != WAMP_OK) {
        return err;
    }

    /* Crossbar's server does not check the request path against "url"; wampscope serves a
     * "websocket" transport on the path of its "url" (default "/"). On a web path the path key
     * decides and "url" is only checked. */
    const char *url = NULL;
    err = opt_str(c, path, o, "url", &url);
    if (err == WAMP_OK && url) {
        char *url_path = NULL;
        err = parse_ws_url(c, path_key(path, "url").s, url, &url_path);
        if (err == WAMP_OK && is_transport) {
            free(l->path);
            l->path = url_path;
            url_path = NULL;
        }
        free(url_path);
    }
    if (err == WAMP_OK && is_transport && !l->path) {
        err = dup_str(c, "/", &l->path);
    }
    if (err != WAMP_OK) {
        return err;
    }

    l->ser_json = true;
    l->ser_msgpack = true;
    l->ser_cbor = true;
    const json_t *sers = json_object_get(o, "serializers");
    if (sers) {
        err = parse_serializers(c, path_key(path, "serializers").s, sers, l);
        if (err != WAMP_OK) {
            return err;
        }
    }

    l->max_message_size = lim->max_message_size;
    const json_t *opts = json_object_get(o, "options");
    if (opts) {
        err = parse_ws_options(c, path_key(path, "options").s, opts, lim, l);
        if (err != WAMP_OK) {
            return err;
        }
    }

    return parse_auth(c, path_key(path, "auth").s, json_object_get(o, "auth"), l);
}

static const type_rule web_path_types[] = {
        {"websocket", NULL},
        {"static", "path type \"static\" is not supported (wampscope serves only WAMP over "
                   "WebSocket)"},
        {"wsgi", "path type \"wsgi\" is not supported"},
        {"resource", "path type \"resource\" is not supported"},
        {"redirect", "path type \"redirect\" is not supported"},
        {"nodeinfo", "path type \"nodeinfo\" is not supported"},
        {"reverseproxy", "path type \"reverseproxy\" is not supported"},
        {"websocket-reverseproxy", "path type \"websocket-reverseproxy\" is not supported"},
        {"json", "path type \"json\" is not supported"},
        {"cgi", "path type \"cgi\" is not supported"},
        {"longpoll", "path type \"longpoll\" is not supported"},
        {"publisher", "path type \"publisher\" (HTTP bridge) is not supported"},
        {"webhook", "path type \"webhook\" (HTTP bridge) is not supported"},
        {"caller", "path type \"caller\" (HTTP bridge) is not supported"},
        {"path", "path type \"path\" (nested paths) is not supported"},
        {"upload", "path type \"upload\" is not supported"},
        {"archive", "path type \"archive\" is not supported"},
};

static const key_rule web_option_rules[] = {
        /* Options of Crossbar's HTTP services, which wampscope does not have. */
        K_IGN("access_log", KEY_IGN_BOOL),
        K_IGN("display_tracebacks", KEY_IGN_BOOL),
        K_REFUSED("hsts", "HSTS is not supported"),
        K_REFUSED("hsts_max_age", "HSTS is not supported"),
        K_REFUSED("client_timeout", "not supported"),
};

static const key_rule web_transport_rules[] = {
        K_PARSED("id"),    K_PARSED("type"),    K_PARSED("endpoint"),
        K_PARSED("paths"), K_PARSED("options"),
};

/* Crossbar's path key rule (checkconfig.py _WEB_PATH_PAT_STR): ^([a-z0-9A-Z_\-]+|/)$. */
static bool web_path_key_is_valid(const char *k)
{
    if (strcmp(k, "/") == 0) {
        return true;
    }
    if (!*k) {
        return false;
    }
    for (const char *p = k; *p; p++) {
        char ch = *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-')) {
            return false;
        }
    }
    return true;
}

static wamp_err parse_web_transport(cfg_ctx *c, const char *path, const json_t *o,
                                    const rt_limits *lim, rt_listener *l)
{
    wamp_err err = check_keys(c, path, o, web_transport_rules, N_RULES(web_transport_rules));
    const char *id = NULL;
    if (err == WAMP_OK) {
        err = opt_id(c, path, o, &id);
    }
    if (err == WAMP_OK && id) {
        err = dup_str(c, id, &l->id);
    }
    if (err == WAMP_OK) {
        const json_t *ep = json_object_get(o, "endpoint");
        cfg_path ep_path = path_key(path, "endpoint");
        err = ep ? parse_endpoint(c, ep_path.s, ep, l) : refuse(c, ep_path.s, "is required");
    }
    if (err == WAMP_OK && json_object_get(o, "options")) {
        err = check_keys(c, path_key(path, "options").s, json_object_get(o, "options"),
                         web_option_rules, N_RULES(web_option_rules));
    }
    if (err != WAMP_OK) {
        return err;
    }

    const json_t *paths = json_object_get(o, "paths");
    cfg_path pp = path_key(path, "paths");
    if (!paths) {
        return refuse(c, pp.s, "is required");
    }
    if (!json_is_object(paths)) {
        return refuse(c, pp.s, "must be an object");
    }
    const char *key;
    const json_t *svc;
    const char *ws_key = NULL;
    json_object_foreach((json_t *)paths, key, svc)
    {
        cfg_path kp = path_key(pp.s, key);
        if (!web_path_key_is_valid(key)) {
            return refuse(c, kp.s, "a path key must be \"/\" or match [a-zA-Z0-9_-]+");
        }
        const char *type = NULL;
        err = check_type(c, kp.s, svc, web_path_types, N_RULES(web_path_types), &type);
        if (err != WAMP_OK) {
            return err;
        }
        if (ws_key) {
            return refuse(c, kp.s,
                          "only one WebSocket path per web transport is supported (\"%s\" is "
                          "one already)",
                          ws_key);
        }
        ws_key = key;
        err = parse_ws_service(c, kp.s, svc, false, lim, l);
        if (err != WAMP_OK) {
            return err;
        }
        /* The path key is one URL path segment: "ws" serves "/ws"; "/" serves the root. */
        char buf[CFG_PATH_MAX];
        snprintf(buf, sizeof(buf), "%s%s", strcmp(key, "/") == 0 ? "" : "/",
                 strcmp(key, "/") == 0 ? "/" : key);
        err = dup_str(c, buf, &l->path);
        if (err != WAMP_OK) {
            return err;
        }
    }
    if (!ws_key) {
        return refuse(c, pp.s, "must contain one path of type \"websocket\"");
    }
    return WAMP_OK;
}

/* Crossbar's RawSocket transport (checkconfig.py check_listening_transport_rawsocket and
 * check_rawsocket_options); older Crossbar versions had max_message_size at the top. */
static const key_rule raw_transport_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
        K_PARSED("endpoint"),
        K_PARSED("serializers"),
        K_PARSED("options"),
        K_PARSED("auth"),
        K_PARSED("max_message_size"),
        K_IGN("debug", KEY_IGN_BOOL),
};

static const key_rule raw_option_rules[] = {
        K_PARSED("max_message_size"),
        K_PARSED("max_connections"), /* wampscope's; see parse_max_connections() */
};

static wamp_err parse_raw_max_size(cfg_ctx *c, const char *path, const json_t *o,
                                   const rt_limits *lim, rt_listener *l)
{
    json_int_t mms = (json_int_t)l->max_message_size;
    wamp_err err = opt_int(c, path, o, "max_message_size", KIB, GIB, "bytes", &mms);
    if (err != WAMP_OK) {
        return err;
    }
    if ((size_t)mms > lim->max_message_size) {
        return refuse(c, path_key(path, "max_message_size").s,
                      "%lld exceeds wampscope.limits.max_message_size (%zu bytes)", (long long)mms,
                      lim->max_message_size);
    }
    l->max_message_size = (size_t)mms;
    return WAMP_OK;
}

/* A rawsocket transport, or (with_endpoint false) the "rawsocket" part of a universal one. */
static wamp_err parse_raw_transport(cfg_ctx *c, const char *path, const json_t *o,
                                    const rt_limits *lim, rt_listener *l, bool with_endpoint)
{
    wamp_err err = check_keys(c, path, o, raw_transport_rules, N_RULES(raw_transport_rules));
    const char *id = NULL;
    if (err == WAMP_OK) {
        err = opt_id(c, path, o, &id);
    }
    if (err == WAMP_OK && id) {
        free(l->id);
        l->id = NULL;
        err = dup_str(c, id, &l->id);
    }
    if (err == WAMP_OK && !with_endpoint) {
        if (json_object_get(o, "endpoint")) {
            return refuse(c, path_key(path, "endpoint").s,
                          "not allowed here: the universal transport's endpoint is used");
        }
        const json_t *t = json_object_get(o, "type");
        if (t && (!json_is_string(t) || strcmp(json_string_value(t), "rawsocket") != 0)) {
            return refuse(c, path_key(path, "type").s, "must be \"rawsocket\"");
        }
    } else if (err == WAMP_OK) {
        const json_t *ep = json_object_get(o, "endpoint");
        cfg_path ep_path = path_key(path, "endpoint");
        err = ep ? parse_endpoint(c, ep_path.s, ep, l) : refuse(c, ep_path.s, "is required");
    }
    if (err != WAMP_OK) {
        return err;
    }
    l->ser_json = true;
    l->ser_msgpack = true;
    l->ser_cbor = true;
    const json_t *sers = json_object_get(o, "serializers");
    if (sers) {
        err = parse_serializers(c, path_key(path, "serializers").s, sers, l);
        if (err != WAMP_OK) {
            return err;
        }
    }
    l->max_message_size = lim->max_message_size;
    const json_t *opts = json_object_get(o, "options");
    if (opts && json_object_get(o, "max_message_size")) {
        return refuse(c, path_key(path, "max_message_size").s,
                      "give it once, in \"options\" (Crossbar's current place)");
    }
    if (opts) {
        cfg_path op = path_key(path, "options");
        err = check_keys(c, op.s, opts, raw_option_rules, N_RULES(raw_option_rules));
        if (err == WAMP_OK) {
            err = parse_raw_max_size(c, op.s, opts, lim, l);
        }
        if (err == WAMP_OK) {
            err = parse_max_connections(c, op.s, opts, l);
        }
    } else {
        err = parse_raw_max_size(c, path, o, lim, l);
    }
    if (err != WAMP_OK) {
        return err;
    }
    return parse_auth(c, path_key(path, "auth").s, json_object_get(o, "auth"), l);
}

/* Crossbar's universal transport (checkconfig.py check_listening_transport_universal): one
 * port, told apart by the first octet. */
static const key_rule universal_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
        K_PARSED("endpoint"),
        K_PARSED("rawsocket"),
        K_PARSED("websocket"),
        K_REFUSED("mqtt", "MQTT is not supported"),
        K_REFUSED("web", "the \"web\" part is not supported; give the WebSocket endpoint in "
                         "\"websocket\""),
};

/* A universal transport: l gets the endpoint and the WebSocket part (or the RawSocket part when
 * there is no WebSocket part); with both parts, raw (reserved by the caller) gets the RawSocket
 * part and shares l's port. *used_raw says whether raw was filled. */
static wamp_err parse_universal(cfg_ctx *c, const char *path, const json_t *o, const rt_limits *lim,
                                rt_listener *l, rt_listener *raw, bool *used_raw)
{
    *used_raw = false;
    wamp_err err = check_keys(c, path, o, universal_rules, N_RULES(universal_rules));
    const char *id = NULL;
    if (err == WAMP_OK) {
        err = opt_id(c, path, o, &id);
    }
    if (err == WAMP_OK && id) {
        err = dup_str(c, id, &l->id);
    }
    if (err == WAMP_OK) {
        const json_t *ep = json_object_get(o, "endpoint");
        cfg_path ep_path = path_key(path, "endpoint");
        err = ep ? parse_endpoint(c, ep_path.s, ep, l) : refuse(c, ep_path.s, "is required");
    }
    if (err != WAMP_OK) {
        return err;
    }
    const json_t *rs = json_object_get(o, "rawsocket");
    const json_t *ws = json_object_get(o, "websocket");
    if (!rs && !ws) {
        return refuse(c, path, "needs a \"rawsocket\" or a \"websocket\" part (or both)");
    }
    if (ws) {
        cfg_path wp = path_key(path, "websocket");
        if (!json_is_object(ws) || json_object_size(ws) != 1) {
            return refuse(c, wp.s, "must be an object with exactly one path");
        }
        const char *key = json_object_iter_key(json_object_iter((json_t *)ws));
        const json_t *svc = json_object_get(ws, key);
        cfg_path kp = path_key(wp.s, key);
        if (!web_path_key_is_valid(key)) {
            return refuse(c, kp.s, "a path key must be \"/\" or match [a-zA-Z0-9_-]+");
        }
        const json_t *t = json_is_object(svc) ? json_object_get(svc, "type") : NULL;
        if (t && (!json_is_string(t) || strcmp(json_string_value(t), "websocket") != 0)) {
            return refuse(c, path_key(kp.s, "type").s, "must be \"websocket\"");
        }
        l->kind = RT_TRANSPORT_WEBSOCKET;
        err = parse_ws_service(c, kp.s, svc, false, lim, l);
        if (err != WAMP_OK) {
            return err;
        }
        char buf[CFG_PATH_MAX];
        snprintf(buf, sizeof(buf), "%s%s", strcmp(key, "/") == 0 ? "" : "/",
                 strcmp(key, "/") == 0 ? "/" : key);
        err = dup_str(c, buf, &l->path);
        if (err == WAMP_OK && l->unix_path) {
            err = refuse(c, path_key(path_key(path, "endpoint").s, "type").s,
                         "Unix socket endpoints are supported for rawsocket transports only");
        }
        if (err != WAMP_OK || !rs) {
            return err;
        }
    }
    cfg_path rp = path_key(path, "rawsocket");
    if (!json_is_object(rs)) {
        return refuse(c, rp.s, "must be an object");
    }
    if (!ws) {
        l->kind = RT_TRANSPORT_RAWSOCKET;
        return parse_raw_transport(c, rp.s, rs, lim, l, false);
    }
    /* Both parts: the RawSocket part is a listener of its own that shares l's socket. Its ID is
     * the part's "id", else "<transport id>_rawsocket" (set by the caller once l->id is). */
    if (!raw) {
        return refuse(c, path, "internal error: no listener reserved for the rawsocket part");
    }
    *used_raw = true;
    raw->kind = RT_TRANSPORT_RAWSOCKET;
    raw->shares_port = true;
    raw->port = l->port;
    err = parse_raw_transport(c, rp.s, rs, lim, raw, false);
    if (err == WAMP_OK && l->interface) {
        err = dup_str(c, l->interface, &raw->interface);
    }
    if (err == WAMP_OK && l->tls_certificate) {
        err = dup_str(c, l->tls_certificate, &raw->tls_certificate);
        if (err == WAMP_OK) {
            err = dup_str(c, l->tls_key, &raw->tls_key);
        }
        if (err == WAMP_OK && l->tls_ciphers) {
            err = dup_str(c, l->tls_ciphers, &raw->tls_ciphers);
        }
    }
    return err;
}

static const type_rule transport_types[] = {
        {"websocket", NULL},
        {"web", NULL},
        {"rawsocket", NULL},
        {"universal", NULL},
        {"mqtt", "MQTT transports are not supported"},
        {"flashpolicy", "Flash policy transports are not supported"},
        {"websocket.testee", "WebSocket testee transports are not supported"},
        {"stream.testee", "stream testee transports are not supported"},
};

/* raw: a spare entry for the RawSocket part of a universal transport with both parts (NULL
 * when none was reserved); *used_raw says whether it was filled. */
static wamp_err parse_transport(cfg_ctx *c, const char *path, const json_t *o, size_t index,
                                const rt_limits *lim, rt_listener *l, rt_listener *raw,
                                bool *used_raw)
{
    const char *type = NULL;
    *used_raw = false;
    wamp_err err = check_type(c, path, o, transport_types, N_RULES(transport_types), &type);
    if (err != WAMP_OK) {
        return err;
    }
    l->kind = RT_TRANSPORT_WEBSOCKET;
    if (strcmp(type, "universal") == 0) {
        err = parse_universal(c, path, o, lim, l, raw, used_raw);
    } else if (strcmp(type, "rawsocket") == 0) {
        l->kind = RT_TRANSPORT_RAWSOCKET;
        err = parse_raw_transport(c, path, o, lim, l, true);
    } else {
        err = strcmp(type, "web") == 0 ? parse_web_transport(c, path, o, lim, l)
                                       : parse_ws_service(c, path, o, true, lim, l);
        if (err == WAMP_OK && l->unix_path) {
            err = refuse(c, path_key(path_key(path, "endpoint").s, "type").s,
                         "Unix socket endpoints are supported for rawsocket transports only");
        }
    }
    if (err == WAMP_OK && !l->id) {
        /* Crossbar numbers unnamed transports "transport1", "transport2", ... */
        char buf[32];
        snprintf(buf, sizeof(buf), "transport%zu", index + 1);
        err = dup_str(c, buf, &l->id);
    }
    if (err == WAMP_OK && *used_raw && !raw->id) {
        char buf[96];
        snprintf(buf, sizeof(buf), "%s_rawsocket", l->id);
        err = dup_str(c, buf, &raw->id);
    }
    return err;
}

/* ---- Trusted networks of the management realm ------------------------------------------------ */

_Static_assert(RT_CIDR_STRLEN >= INET6_ADDRSTRLEN + 4, "an address, '/' and 3 digits");

/* The loopback rule: the default of wampscope.management.trusted_networks, and what a NULL
 * rt_config.mgmt_trusted means. */
static const rt_cidr default_trusted[] = {
        {.family = RT_IP_V4, .addr = {127}, .prefix = 8},
        {.family = RT_IP_V6, .addr = {[15] = 1}, .prefix = 128},
};

static unsigned family_bits(rt_ip_family f)
{
    return f == RT_IP_V4 ? 32 : 128;
}

/* ::ffff:0:0/96, IPv4-mapped IPv6 addresses (RFC 4291 section 2.5.5.2): what a dual-stack socket
 * reports for an IPv4 peer. */
static bool is_v4_mapped(const rt_cidr *a)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return a->family == RT_IP_V6 && memcmp(a->addr, mapped, sizeof(mapped)) == 0;
}

/* ::ffff:a.b.c.d/n -> a.b.c.d/(n-96); the caller checked is_v4_mapped() and n >= 96. */
static void unmap_v4(rt_cidr *a)
{
    memmove(a->addr, a->addr + 12, 4);
    memset(a->addr + 4, 0, sizeof(a->addr) - 4);
    a->family = RT_IP_V4;
    a->prefix -= 96;
}

/* A bare address (no port, no prefix) as inet_pton() reads it: dotted quad, or RFC 4291 text
 * without a zone. The result has the full prefix. */
static bool parse_ip(const char *text, rt_cidr *out)
{
    struct in_addr a4;
    struct in6_addr a6;
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, text, &a4) == 1) {
        memcpy(out->addr, &a4, sizeof(a4));
        out->family = RT_IP_V4;
        out->prefix = 32;
        return true;
    }
    if (inet_pton(AF_INET6, text, &a6) == 1) {
        memcpy(out->addr, &a6, sizeof(a6));
        out->family = RT_IP_V6;
        out->prefix = 128;
        return true;
    }
    return false;
}

/* Clears every bit after the first `bits`. */
static void clear_host_bits(uint8_t addr[16], unsigned bits)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned keep = bits >= 8 * (i + 1) ? 8 : bits > 8 * i ? bits - 8 * i : 0;
        addr[i] &= (uint8_t)(0xff00u >> keep);
    }
}

static bool in_network(const rt_cidr *net, const rt_cidr *addr)
{
    if (net->family != addr->family || net->prefix > family_bits(net->family)) {
        return false;
    }
    rt_cidr a = *addr;
    clear_host_bits(a.addr, net->prefix);
    return memcmp(a.addr, net->addr, sizeof(a.addr)) == 0;
}

/* The list in force: the configured one, or the loopback rule for a NULL list. */
static const rt_cidr *trusted_list(const rt_config *cfg, size_t *n)
{
    if (cfg->mgmt_trusted) {
        *n = cfg->n_mgmt_trusted;
        return cfg->mgmt_trusted;
    }
    *n = sizeof(default_trusted) / sizeof(default_trusted[0]);
    return default_trusted;
}

/* A port as rt_peer.addr writes it: decimal, 0..65535. */
static bool port_is_valid(const char *p)
{
    size_t digits = strspn(p, "0123456789");
    return digits > 0 && digits <= 5 && p[digits] == '\0' && strtoul(p, NULL, 10) <= 65535;
}

static wamp_err refuse_network(cfg_ctx *c, const char *path, const char *text)
{
    return refuse(c, path,
                  "\"%s\" is not an IPv4 or IPv6 network (\"a.b.c.d/n\", \"x::y/n\") or address",
                  text);
}

/* One entry of trusted_networks: "a.b.c.d/n", "x::y/n", or a bare address (/32, /128). Host bits
 * must be zero (a typo such as "10.0.0.1/8" is refused, not widened). */
static wamp_err parse_cidr(cfg_ctx *c, const char *path, const char *text, rt_cidr *out)
{
    char host[INET6_ADDRSTRLEN];
    const char *slash = strchr(text, '/');
    size_t n = slash ? (size_t)(slash - text) : strlen(text);
    if (n == 0 || n >= sizeof(host)) {
        return refuse_network(c, path, text);
    }
    memcpy(host, text, n);
    host[n] = '\0';
    if (!parse_ip(host, out)) {
        return refuse_network(c, path, text);
    }
    unsigned max = family_bits(out->family);
    if (slash) {
        const char *p = slash + 1;
        size_t digits = strspn(p, "0123456789");
        unsigned long len = digits > 0 && digits <= 3 ? strtoul(p, NULL, 10) : max + 1UL;
        if (p[digits] != '\0' || len > max) {
            return refuse(c, path, "the prefix length in \"%s\" must be 0..%u", text, max);
        }
        out->prefix = (unsigned)len;
    }
    char want[RT_CIDR_STRLEN];
    if (is_v4_mapped(out) && out->prefix >= 96) {
        /* Peers in ::ffff:0:0/96 are matched as IPv4, so this entry could never match. */
        rt_cidr v4 = *out;
        unmap_v4(&v4);
        clear_host_bits(v4.addr, v4.prefix);
        rt_config_format_cidr(&v4, want, sizeof(want));
        return refuse(c, path,
                      "\"%s\" is an IPv4-mapped IPv6 network; such peers are matched as IPv4, "
                      "write \"%s\"",
                      text, want);
    }
    rt_cidr net = *out;
    clear_host_bits(net.addr, net.prefix);
    if (memcmp(net.addr, out->addr, sizeof(net.addr)) != 0) {
        rt_config_format_cidr(&net, want, sizeof(want));
        return refuse(c, path, "\"%s\" has host bits set (the network is \"%s\")", text, want);
    }
    return WAMP_OK;
}

/* The array stays non-NULL for an empty list (NULL would mean the loopback rule). */
static wamp_err parse_trusted(cfg_ctx *c, const char *path, const json_t *v, rt_config *cfg)
{
    if (!json_is_array(v)) {
        return refuse(c, path, "must be a list");
    }
    size_t n = json_array_size(v);
    rt_cidr *nets = calloc(n ? n : 1, sizeof(*nets));
    if (!nets) {
        return out_of_memory(c);
    }
    free(cfg->mgmt_trusted);
    cfg->mgmt_trusted = nets;
    cfg->n_mgmt_trusted = 0;
    for (size_t i = 0; i < n; i++) {
        cfg_path ip = path_index(path, i);
        const char *s = json_string_value(json_array_get(v, i));
        if (!s) {
            return refuse(c, ip.s, "must be a string");
        }
        wamp_err err = parse_cidr(c, ip.s, s, &nets[i]);
        if (err != WAMP_OK) {
            return err;
        }
        cfg->n_mgmt_trusted = i + 1;
    }
    return WAMP_OK;
}

static wamp_err set_default_trusted(cfg_ctx *c, rt_config *cfg)
{
    size_t n = sizeof(default_trusted) / sizeof(default_trusted[0]);
    cfg->mgmt_trusted = malloc(sizeof(default_trusted));
    if (!cfg->mgmt_trusted) {
        return out_of_memory(c);
    }
    memcpy(cfg->mgmt_trusted, default_trusted, sizeof(default_trusted));
    cfg->n_mgmt_trusted = n;
    return WAMP_OK;
}

/* ---- The worker's "wampscope" object -------------------------------------------------------- */

static const key_rule limits_rules[] = {
        K_PARSED("max_message_size"),       K_PARSED("max_queue_bytes"),
        K_PARSED("rawsocket_min_length"),   K_PARSED("max_queue_messages"),
        K_PARSED("hello_timeout"),          K_PARSED("shutdown_grace"),
        K_PARSED("max_call_timeout"),       K_PARSED("max_retained_topics"),
        K_PARSED("max_retained_bytes"),     K_PARSED("auth_failure_delay"),
        K_PARSED("close_timeout"),          K_PARSED("max_sessions"),
        K_PARSED("max_sessions_per_realm"), K_PARSED("max_pending_calls"),
        K_PARSED("max_subscriptions"),      K_PARSED("max_registrations"),
        K_PARSED("slow_consumer"),
};

static const key_rule management_rules[] = {
        K_PARSED("realm"),
        K_PARSED("enabled"),
        K_PARSED("trusted_networks"),
        K_PARSED("auth"),
};

static const key_rule tracing_rules[] = {
        K_PARSED("max_traces"),      K_PARSED("default_limit"),     K_PARSED("default_max_bytes"),
        K_PARSED("data_dir"),        K_PARSED("segment_bytes"),     K_PARSED("fsync"),
        K_PARSED("fsync_interval"),  K_PARSED("persist_max_bytes"), K_PARSED("persist_max_age"),
        K_PARSED("flight_recorder"), K_PARSED("write_backlog"),
};

/* The persistence keys of wampscope.tracing (trace_persist.h). */
static wamp_err parse_tracing_persist(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    const char *dir = NULL, *fsync = NULL;
    json_int_t seg = (json_int_t)cfg->tracing_segment_bytes;
    json_int_t every = (json_int_t)cfg->tracing_fsync_interval_ms;
    json_int_t pmb = (json_int_t)cfg->tracing_persist_max_bytes;
    json_int_t age = (json_int_t)cfg->tracing_persist_max_age_s;
    json_int_t backlog = (json_int_t)cfg->tracing_write_backlog;
    wamp_err err = opt_str(c, path, o, "data_dir", &dir);
    if (err == WAMP_OK && dir && !*dir) {
        err = refuse(c, path_key(path, "data_dir").s, "must not be empty");
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "segment_bytes", (json_int_t)TRACE_PERSIST_SEGMENT_MIN,
                      (json_int_t)TRACE_PERSIST_SEGMENT_MAX, "bytes", &seg);
    }
    if (err == WAMP_OK) {
        err = opt_str(c, path, o, "fsync", &fsync);
    }
    if (err == WAMP_OK && fsync) {
        if (strcmp(fsync, "interval") == 0) {
            cfg->tracing_fsync = TRACE_FSYNC_INTERVAL;
        } else if (strcmp(fsync, "batch") == 0) {
            cfg->tracing_fsync = TRACE_FSYNC_BATCH;
        } else if (strcmp(fsync, "never") == 0) {
            cfg->tracing_fsync = TRACE_FSYNC_NEVER;
        } else {
            err = refuse(c, path_key(path, "fsync").s,
                         "must be \"interval\", \"batch\" or \"never\" (got \"%s\")", fsync);
        }
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "fsync_interval", 10, 3600000, "ms", &every);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "persist_max_bytes", (json_int_t)TRACE_OPT_PERSIST_BYTES_MIN,
                      (json_int_t)TRACE_OPT_PERSIST_BYTES_MAX, "bytes", &pmb);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "persist_max_age", 0, (json_int_t)TRACE_OPT_PERSIST_AGE_MAX,
                      "seconds", &age);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "write_backlog", (json_int_t)TRACE_PERSIST_BACKLOG_MIN,
                      (json_int_t)TRACE_PERSIST_BACKLOG_MAX, "bytes", &backlog);
    }
    if (err == WAMP_OK && dir) {
        free(cfg->tracing_data_dir);
        cfg->tracing_data_dir = NULL;
        err = dup_str(c, dir, &cfg->tracing_data_dir);
    }
    if (err != WAMP_OK) {
        return err;
    }
    cfg->tracing_segment_bytes = (uint64_t)seg;
    cfg->tracing_fsync_interval_ms = (uint32_t)every;
    cfg->tracing_persist_max_bytes = (uint64_t)pmb;
    cfg->tracing_persist_max_age_s = (uint64_t)age;
    cfg->tracing_write_backlog = (uint64_t)backlog;
    return WAMP_OK;
}

/* wampscope.tracing.flight_recorder: true (the default), false, or {"enabled": bool, "options":
 * {trace_options}}. The options go over the flight recorder's own defaults (limit 10000,
 * trace_app_payload false) and are checked now, as start_trace would check them, so that a
 * mistake is a configuration error rather than a missing flight recorder. */
static const key_rule flight_recorder_rules[] = {
        K_PARSED("enabled"),
        K_PARSED("options"),
};

static json_t *flight_recorder_defaults(void)
{
    return json_pack("{s:I, s:b}", "limit", (json_int_t)RT_FLIGHT_RECORDER_LIMIT,
                     "trace_app_payload", 0);
}

static wamp_err parse_flight_recorder(cfg_ctx *c, const char *path, const json_t *v, rt_config *cfg)
{
    cfg_path fp = path_key(path, "flight_recorder");
    cfg_path op = path_key(fp.s, "options");
    bool enabled = true;
    const json_t *given = NULL;
    if (json_is_boolean(v)) {
        enabled = json_is_true(v);
    } else if (!json_is_object(v)) {
        return refuse(c, fp.s, "must be true, false or an object {\"enabled\", \"options\"}");
    } else {
        wamp_err err =
                check_keys(c, fp.s, v, flight_recorder_rules, N_RULES(flight_recorder_rules));
        if (err == WAMP_OK) {
            err = opt_bool(c, fp.s, v, "enabled", &enabled);
        }
        if (err != WAMP_OK) {
            return err;
        }
        given = json_object_get(v, "options");
        if (given && !json_is_object(given)) {
            return refuse(c, op.s, "must be an object of trace options");
        }
    }
    json_t *opts = flight_recorder_defaults();
    json_t *copy = given ? json_deep_copy(given) : NULL;
    if (!opts || (given && (!copy || json_object_update(opts, copy) != 0))) {
        json_decref(copy);
        json_decref(opts);
        return out_of_memory(c);
    }
    json_decref(copy);
    trace_options o;
    char why[256] = "";
    wamp_err err = trace_options_parse(opts, &o, why, sizeof(why));
    trace_options_fini(&o);
    if (err != WAMP_OK) {
        json_decref(opts);
        return err == WAMP_EINVAL ? refuse(c, op.s, "%s", why) : out_of_memory(c);
    }
    json_decref(cfg->tracing_flight_recorder);
    cfg->tracing_flight_recorder = enabled ? opts : NULL;
    if (!enabled) {
        json_decref(opts);
    }
    return WAMP_OK;
}

static const key_rule wampscope_rules[] = {
        K_PARSED("limits"),
        K_PARSED("management"),
        K_PARSED("tracing"),
        K_PARSED("log_level"),
};

/* wampscope.management.auth: Crossbar's auth format without anonymous; principals' role
 * defaults to "admin", the management realm's only role. At least one method. */
static wamp_err parse_mgmt_auth(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = check_keys(c, path, o, mgmt_auth_rules, N_RULES(mgmt_auth_rules));
    if (err != WAMP_OK) {
        return err;
    }
    if (json_object_size(o) == 0) {
        return refuse(c, path,
                      "must configure at least one of \"ticket\", \"wampcra\", "
                      "\"cryptosign\" (leave \"auth\" out for protected mode)");
    }
    cfg->mgmt_auth = calloc(1, sizeof(*cfg->mgmt_auth));
    if (!cfg->mgmt_auth) {
        return out_of_memory(c);
    }
    return parse_auth_methods(c, path, o, DEF_MGMT_AUTH_ROLE, cfg->mgmt_auth);
}

static wamp_err parse_limits(cfg_ctx *c, const char *path, const json_t *o, rt_limits *lim)
{
    wamp_err err = check_keys(c, path, o, limits_rules, N_RULES(limits_rules));
    json_int_t mms = (json_int_t)lim->max_message_size;
    json_int_t mqb = (json_int_t)lim->max_queue_bytes;
    json_int_t rml = (json_int_t)lim->rawsocket_min_length;
    json_int_t mqm = (json_int_t)lim->max_queue_messages;
    json_int_t hello = lim->hello_timeout_ms;
    json_int_t grace = lim->shutdown_grace_ms;
    json_int_t call_timeout = lim->max_call_timeout_ms;
    json_int_t mrt = (json_int_t)lim->max_retained_topics;
    json_int_t mrb = (json_int_t)lim->max_retained_bytes;
    json_int_t delay = lim->auth_failure_delay_ms;
    json_int_t close_timeout = lim->close_timeout_ms;
    json_int_t max_sessions = (json_int_t)lim->max_sessions;
    json_int_t max_per_realm = (json_int_t)lim->max_sessions_per_realm;
    json_int_t max_calls = (json_int_t)lim->max_pending_calls;
    json_int_t max_subs = (json_int_t)lim->max_subscriptions;
    json_int_t max_regs = (json_int_t)lim->max_registrations;
    const char *slow = NULL;

    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_message_size", KIB, GIB, "bytes", &mms);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_queue_bytes", KIB, GIB, "bytes", &mqb);
    }
    if (err == WAMP_OK) {
        /* The lengths a RawSocket handshake can announce: 2^9..2^24. */
        err = opt_int(c, path, o, "rawsocket_min_length", 512, 16 * MIB, "bytes", &rml);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_queue_messages", 1, 100000000, NULL, &mqm);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "hello_timeout", 100, 3600000, "ms", &hello);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "shutdown_grace", 0, 3600000, "ms", &grace);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_call_timeout", 1000, 86400000, "ms", &call_timeout);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_retained_topics", 1, 10000000, NULL, &mrt);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_retained_bytes", KIB, GIB, "bytes", &mrb);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "auth_failure_delay", 0, 60000, "ms", &delay);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "close_timeout", 1000, 3600000, "ms", &close_timeout);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_sessions", 1, 10000000, NULL, &max_sessions);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_sessions_per_realm", 1, 10000000, NULL, &max_per_realm);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_pending_calls", 1, 10000000, NULL, &max_calls);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_subscriptions", 1, 10000000, NULL, &max_subs);
    }
    if (err == WAMP_OK) {
        err = opt_int(c, path, o, "max_registrations", 1, 10000000, NULL, &max_regs);
    }
    if (err == WAMP_OK) {
        err = opt_str(c, path, o, "slow_consumer", &slow);
    }
    if (err == WAMP_OK && slow) {
        if (strcmp(slow, "disconnect") == 0) {
            lim->slow_consumer = RT_SLOW_CONSUMER_DISCONNECT;
        } else if (strcmp(slow, "drop_oldest_events") == 0) {
            lim->slow_consumer = RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS;
        } else {
            err = refuse(c, path_key(path, "slow_consumer").s,
                         "must be \"disconnect\" or \"drop_oldest_events\" (got \"%s\")", slow);
        }
    }
    if (err != WAMP_OK) {
        return err;
    }
    lim->max_message_size = (size_t)mms;
    lim->max_queue_bytes = (size_t)mqb;
    lim->rawsocket_min_length = (size_t)rml;
    lim->max_queue_messages = (size_t)mqm;
    lim->hello_timeout_ms = (uint32_t)hello;
    lim->shutdown_grace_ms = (uint32_t)grace;
    lim->max_call_timeout_ms = (uint32_t)call_timeout;
    lim->max_retained_topics = (size_t)mrt;
    lim->max_retained_bytes = (size_t)mrb;
    lim->auth_failure_delay_ms = (uint32_t)delay;
    lim->close_timeout_ms = (uint32_t)close_timeout;
    lim->max_sessions = (size_t)max_sessions;
    lim->max_sessions_per_realm = (size_t)max_per_realm;
    lim->max_pending_calls = (size_t)max_calls;
    lim->max_subscriptions = (size_t)max_subs;
    lim->max_registrations = (size_t)max_regs;
    return WAMP_OK;
}

static wamp_err parse_wampscope(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = check_keys(c, path, o, wampscope_rules, N_RULES(wampscope_rules));
    if (err != WAMP_OK) {
        return err;
    }
    const json_t *lim = json_object_get(o, "limits");
    if (lim) {
        err = parse_limits(c, path_key(path, "limits").s, lim, &cfg->limits);
        if (err != WAMP_OK) {
            return err;
        }
    }
    const json_t *mgmt = json_object_get(o, "management");
    if (mgmt) {
        cfg_path mp = path_key(path, "management");
        const char *realm = NULL;
        err = check_keys(c, mp.s, mgmt, management_rules, N_RULES(management_rules));
        if (err == WAMP_OK) {
            err = opt_bool(c, mp.s, mgmt, "enabled", &cfg->mgmt_enabled);
        }
        if (err == WAMP_OK) {
            err = opt_str(c, mp.s, mgmt, "realm", &realm);
        }
        if (err == WAMP_OK && realm && !wamp_uri_is_valid(realm, WAMP_URI_LOOSE)) {
            err = refuse(c, path_key(mp.s, "realm").s, "\"%s\" is not a valid realm name (a URI)",
                         realm);
        }
        if (err == WAMP_OK && realm) {
            err = dup_str(c, realm, &cfg->mgmt_realm);
        }
        const json_t *trusted = json_object_get(mgmt, "trusted_networks");
        if (err == WAMP_OK && trusted) {
            err = parse_trusted(c, path_key(mp.s, "trusted_networks").s, trusted, cfg);
        }
        const json_t *mauth = json_object_get(mgmt, "auth");
        if (err == WAMP_OK && mauth) {
            err = parse_mgmt_auth(c, path_key(mp.s, "auth").s, mauth, cfg);
        }
        if (err != WAMP_OK) {
            return err;
        }
    }
    const json_t *tracing = json_object_get(o, "tracing");
    if (tracing) {
        cfg_path tp = path_key(path, "tracing");
        json_int_t max = (json_int_t)cfg->tracing_max_traces;
        json_int_t limit = (json_int_t)cfg->tracing_default_limit;
        json_int_t max_bytes = (json_int_t)cfg->tracing_default_max_bytes;
        err = check_keys(c, tp.s, tracing, tracing_rules, N_RULES(tracing_rules));
        if (err == WAMP_OK) {
            err = opt_int(c, tp.s, tracing, "max_traces", 1, 1024, NULL, &max);
        }
        if (err == WAMP_OK) {
            err = opt_int(c, tp.s, tracing, "default_limit", 1, TRACE_OPT_LIMIT_MAX, "records",
                          &limit);
        }
        if (err == WAMP_OK) {
            err = opt_int(c, tp.s, tracing, "default_max_bytes",
                          (json_int_t)TRACE_OPT_MAX_BYTES_MIN, (json_int_t)TRACE_OPT_MAX_BYTES_MAX,
                          "bytes", &max_bytes);
        }
        if (err == WAMP_OK) {
            err = parse_tracing_persist(c, tp.s, tracing, cfg);
        }
        const json_t *flight = json_object_get(tracing, "flight_recorder");
        if (err == WAMP_OK && flight) {
            err = parse_flight_recorder(c, tp.s, flight, cfg);
        }
        if (err != WAMP_OK) {
            return err;
        }
        cfg->tracing_max_traces = (size_t)max;
        cfg->tracing_default_limit = (size_t)limit;
        cfg->tracing_default_max_bytes = (uint64_t)max_bytes;
    }
    const char *level = NULL;
    err = opt_str(c, path, o, "log_level", &level);
    if (err != WAMP_OK || !level) {
        return err;
    }
    if (!rt_log_level_parse(level, NULL)) {
        return refuse(c, path_key(path, "log_level").s,
                      "must be \"error\", \"warn\", \"info\", \"debug\" or \"trace\" (got \"%s\")",
                      level);
    }
    return dup_str(c, level, &cfg->log_level);
}

/* ---- Worker, controller, top level ---------------------------------------------------------- */

static const key_rule worker_option_rules[] = {
        /* Meaningful only to Crossbar's Python worker processes. */
        K_IGN("title", KEY_IGN_STRING),
        K_IGN("python", KEY_IGN_STRING),
        K_IGN("pythonpath", KEY_IGN_STRINGS),
        /* Data handed to router components, which wampscope does not run. */
        K_IGN("extra", KEY_IGN_ANY),
        K_ONLY("disabled", KEY_ONLY_FALSE, "a disabled router worker leaves nothing to run"),
        K_ONLY("expose_controller", KEY_ONLY_FALSE, "not supported"),
        K_ONLY("expose_shared", KEY_ONLY_FALSE, "not supported"),
        K_REFUSED("cpu_affinity", "not supported"),
        K_REFUSED("env", "not supported (set the environment of the wampscope process)"),
};

static const key_rule router_rules[] = {
        K_PARSED("type"),
        K_PARSED("id"),
        K_PARSED("options"),
        K_PARSED("realms"),
        K_PARSED("transports"),
        K_PARSED("components"),
        K_PARSED("connections"),
        K_PARSED("wampscope"),
        K_REFUSED("manhole", "the manhole is not supported"),
};

/* Keys that Crossbar allows to hold a list, which wampscope accepts only empty. */
static wamp_err check_empty_list(cfg_ctx *c, const char *path, const json_t *o, const char *key,
                                 const char *why)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        return WAMP_OK;
    }
    cfg_path kp = path_key(path, key);
    if (!json_is_array(v)) {
        return refuse(c, kp.s, "must be a list");
    }
    return json_array_size(v) == 0 ? WAMP_OK : refuse(c, kp.s, "%s", why);
}

static wamp_err parse_realms(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    const json_t *realms = json_object_get(o, "realms");
    cfg_path rp = path_key(path, "realms");
    if (realms && !json_is_array(realms)) {
        return refuse(c, rp.s, "must be a list");
    }
    size_t n = realms ? json_array_size(realms) : 0;
    if (n == 0) {
        return refuse(c, rp.s, "at least one realm is required");
    }
    cfg->realms = calloc(n, sizeof(*cfg->realms));
    if (!cfg->realms) {
        return out_of_memory(c);
    }
    cfg->n_realms = n;
    for (size_t i = 0; i < n; i++) {
        cfg_path ip = path_index(rp.s, i);
        wamp_err err = parse_realm(c, ip.s, json_array_get(realms, i), &cfg->realms[i]);
        if (err != WAMP_OK) {
            return err;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(cfg->realms[i].name, cfg->realms[j].name) == 0) {
                return refuse(c, path_key(ip.s, "name").s,
                              "realm \"%s\" is already defined by realms[%zu]", cfg->realms[i].name,
                              j);
            }
        }
    }
    return WAMP_OK;
}

static bool same_interface(const char *a, const char *b)
{
    /* NULL = all interfaces, which clashes with every address on that port. */
    return !a || !b || strcmp(a, b) == 0;
}

static wamp_err parse_transports(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    const json_t *transports = json_object_get(o, "transports");
    cfg_path tp = path_key(path, "transports");
    if (transports && !json_is_array(transports)) {
        return refuse(c, tp.s, "must be a list");
    }
    size_t n = transports ? json_array_size(transports) : 0;
    if (n == 0) {
        return refuse(c, tp.s, "at least one transport is required");
    }
    /* A universal transport with both a WebSocket and a RawSocket part becomes two listeners;
     * tix maps a listener back to its transport for messages. */
    size_t n_listeners = n;
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(transports, i);
        const json_t *ty = json_object_get(t, "type");
        if (json_is_string(ty) && strcmp(json_string_value(ty), "universal") == 0 &&
            json_object_get(t, "rawsocket") && json_object_get(t, "websocket")) {
            n_listeners++;
        }
    }
    cfg->listeners = calloc(n_listeners, sizeof(*cfg->listeners));
    size_t *tix = calloc(n_listeners, sizeof(*tix));
    if (!cfg->listeners || !tix) {
        free(tix);
        return out_of_memory(c);
    }
    cfg->n_listeners = n_listeners;
    wamp_err err = WAMP_OK;
    size_t li = 0;
    for (size_t i = 0; i < n && err == WAMP_OK; i++) {
        cfg_path ip = path_index(tp.s, i);
        rt_listener *l = &cfg->listeners[li];
        rt_listener *raw = li + 1 < n_listeners ? &cfg->listeners[li + 1] : NULL;
        bool used_raw = false;
        err = parse_transport(c, ip.s, json_array_get(transports, i), i, &cfg->limits, l, raw,
                              &used_raw);
        size_t first = li;
        tix[li++] = i;
        if (used_raw) {
            raw->shares_port_of = first;
            tix[li++] = i;
        }
        for (size_t k = first; k < li && err == WAMP_OK; k++) {
            l = &cfg->listeners[k];
            for (size_t j = 0; j < k && err == WAMP_OK; j++) {
                const rt_listener *m = &cfg->listeners[j];
                if (strcmp(l->id, m->id) == 0) {
                    err = refuse(c, path_key(ip.s, l->shares_port ? "rawsocket.id" : "id").s,
                                 "transport ID \"%s\" is already used by transports[%zu]", l->id,
                                 tix[j]);
                } else if (l->unix_path && m->unix_path &&
                           strcmp(l->unix_path, m->unix_path) == 0) {
                    err = refuse(c, path_key(path_key(ip.s, "endpoint").s, "path").s,
                                 "\"%s\" is already used by transports[%zu]", l->unix_path, tix[j]);
                } else if (!l->unix_path && !m->unix_path && !l->shares_port && l->port != 0 &&
                           l->port == m->port && same_interface(l->interface, m->interface)) {
                    err = refuse(c, path_key(path_key(ip.s, "endpoint").s, "port").s,
                                 "port %d is already used by transports[%zu]", l->port, tix[j]);
                }
            }
        }
    }
    free(tix);
    return err;
}

static wamp_err parse_router(cfg_ctx *c, const char *path, const json_t *w, rt_config *cfg)
{
    wamp_err err = check_keys(c, path, w, router_rules, N_RULES(router_rules));
    const char *id = NULL;
    if (err == WAMP_OK) {
        err = opt_id(c, path, w, &id);
    }
    if (err == WAMP_OK && id) {
        err = dup_str(c, id, &cfg->worker_id);
    }
    if (err == WAMP_OK && json_object_get(w, "options")) {
        err = check_keys(c, path_key(path, "options").s, json_object_get(w, "options"),
                         worker_option_rules, N_RULES(worker_option_rules));
    }
    if (err == WAMP_OK) {
        err = check_empty_list(c, path, w, "components",
                               "router components are not supported (run them as separate WAMP "
                               "clients)");
    }
    if (err == WAMP_OK) {
        err = check_empty_list(c, path, w, "connections", "router connections are not supported");
    }
    /* "wampscope" first: the transports default to its limits. */
    if (err == WAMP_OK && json_object_get(w, "wampscope")) {
        err = parse_wampscope(c, path_key(path, "wampscope").s, json_object_get(w, "wampscope"),
                              cfg);
    }
    if (err == WAMP_OK) {
        err = parse_realms(c, path, w, cfg);
    }
    if (err == WAMP_OK) {
        err = parse_transports(c, path, w, cfg);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (cfg->limits.max_queue_bytes < cfg->limits.max_message_size) {
        cfg_path lp = path_key(path_key(path, "wampscope").s, "limits");
        return refuse(c, path_key(lp.s, "max_queue_bytes").s,
                      "%zu is smaller than max_message_size (%zu bytes): a queue must hold at "
                      "least one message",
                      cfg->limits.max_queue_bytes, cfg->limits.max_message_size);
    }
    if (cfg->mgmt_enabled) {
        for (size_t i = 0; i < cfg->n_realms; i++) {
            if (strcmp(cfg->realms[i].name, cfg->mgmt_realm) == 0) {
                cfg_path mp = path_key(path_key(path, "wampscope").s, "management");
                return refuse(c, path_key(mp.s, "realm").s,
                              "\"%s\" is also an application realm (realms[%zu]); pick another "
                              "name",
                              cfg->mgmt_realm, i);
            }
        }
    }
    return WAMP_OK;
}

static const key_rule controller_option_rules[] = {
        K_IGN("title", KEY_IGN_STRING),
        /* wampscope starts its one worker at once. */
        K_IGN("enable_parallel_worker_start", KEY_IGN_BOOL),
        K_PARSED("shutdown"),
};

/* Crossbar's node shutdown modes (checkconfig.py NODE_SHUTDOWN_MODES). They decide when the node
 * exits as workers come and go; wampscope's one router worker is the process itself, so every
 * mode ends the same way and the value is only checked. */
static bool shutdown_mode_is_valid(const json_t *v)
{
    static const char *const modes[] = {
            "shutdown_on_shutdown_requested",
            "shutdown_on_worker_exit",
            "shutdown_on_worker_exit_with_error",
            "shutdown_on_last_worker_exit",
    };
    const char *s = json_string_value(v);
    for (size_t i = 0; s && i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(s, modes[i]) == 0) {
            return true;
        }
    }
    return false;
}

static wamp_err check_shutdown_modes(cfg_ctx *c, const char *path, const json_t *v)
{
    bool ok = json_is_string(v) ? shutdown_mode_is_valid(v) : json_is_array(v);
    for (size_t i = 0; ok && json_is_array(v) && i < json_array_size(v); i++) {
        ok = shutdown_mode_is_valid(json_array_get(v, i));
    }
    if (!ok) {
        return refuse(c, path,
                      "must be one of (or a list of) \"shutdown_on_shutdown_requested\", "
                      "\"shutdown_on_worker_exit\", \"shutdown_on_worker_exit_with_error\", "
                      "\"shutdown_on_last_worker_exit\"");
    }
    return WAMP_OK;
}

static const key_rule controller_rules[] = {
        K_PARSED("id"),
        K_PARSED("options"),
        K_REFUSED("manhole", "the manhole is not supported"),
        K_REFUSED("connections", "controller connections are not supported"),
        K_REFUSED("keyring", "node keys are not supported"),
        /* Keys of Crossbar's "edge" and "master" personalities (Crossbar FX / XBR). */
        K_REFUSED("fabric", "Crossbar FX management uplinks are not supported (wampscope has its "
                            "own management realm)"),
        K_REFUSED("fabric-center", "Crossbar FX master settings are not supported"),
        K_REFUSED("blockchain", "XBR blockchain settings are not supported"),
        K_REFUSED("ipfs", "IPFS settings are not supported"),
        K_ONLY("enable_docker", KEY_ONLY_FALSE, "Docker control is not supported"),
};

static wamp_err parse_controller(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = check_keys(c, path, o, controller_rules, N_RULES(controller_rules));
    const char *id = NULL;
    if (err == WAMP_OK) {
        err = opt_id(c, path, o, &id);
    }
    if (err == WAMP_OK && id) {
        err = dup_str(c, id, &cfg->node_id);
    }
    const json_t *opts = json_object_get(o, "options");
    if (err == WAMP_OK && opts) {
        cfg_path op = path_key(path, "options");
        err = check_keys(c, op.s, opts, controller_option_rules, N_RULES(controller_option_rules));
        const json_t *shutdown = json_object_get(opts, "shutdown");
        if (err == WAMP_OK && shutdown) {
            err = check_shutdown_modes(c, path_key(op.s, "shutdown").s, shutdown);
        }
    }
    return err;
}

static const key_rule root_rules[] = {
        K_IGN("$schema", KEY_IGN_STRING),
        K_PARSED("version"),
        K_PARSED("controller"),
        K_PARSED("workers"),
};

static wamp_err parse_root(cfg_ctx *c, const json_t *root, rt_config *cfg)
{
    wamp_err err = check_keys(c, "", root, root_rules, N_RULES(root_rules));
    if (err != WAMP_OK) {
        return err;
    }
    /* Crossbar requires "version": 2 (a missing version means 1 and is refused as too old);
     * wampscope only reads version 2 and lets it be omitted. */
    const json_t *version = json_object_get(root, "version");
    if (version && (!json_is_integer(version) || json_integer_value(version) != 2)) {
        return refuse(c, "version", "must be 2 (Crossbar node configuration version 2)");
    }
    const json_t *controller = json_object_get(root, "controller");
    if (controller) {
        err = parse_controller(c, "controller", controller, cfg);
        if (err != WAMP_OK) {
            return err;
        }
    }

    const json_t *workers = json_object_get(root, "workers");
    if (workers && !json_is_array(workers)) {
        return refuse(c, "workers", "must be a list");
    }
    const json_t *router = NULL;
    size_t router_index = 0;
    for (size_t i = 0; workers && i < json_array_size(workers); i++) {
        cfg_path wp = path_index("workers", i);
        const json_t *w = json_array_get(workers, i);
        const char *type = NULL;
        if (!json_is_object(w)) {
            return refuse(c, wp.s, "must be an object");
        }
        err = req_str(c, wp.s, w, "type", &type);
        if (err != WAMP_OK) {
            return err;
        }
        if (strcmp(type, "router") != 0) {
            return refuse(c, path_key(wp.s, "type").s,
                          "worker type \"%s\" is not supported (wampscope runs one router "
                          "worker)",
                          type);
        }
        if (router) {
            return refuse(c, path_key(wp.s, "type").s,
                          "a second router worker is not supported (wampscope runs one router "
                          "per process; workers[%zu] is the router)",
                          router_index);
        }
        router = w;
        router_index = i;
    }
    if (!router) {
        return refuse(c, "workers", "must contain one worker of type \"router\"");
    }
    cfg_path rp = path_index("workers", router_index);
    return parse_router(c, rp.s, router, cfg);
}

static wamp_err set_defaults(cfg_ctx *c, rt_config *cfg)
{
    cfg->limits = (rt_limits){
            .max_message_size = (size_t)DEF_MAX_MESSAGE_SIZE,
            .max_queue_bytes = (size_t)DEF_MAX_QUEUE_BYTES,
            .rawsocket_min_length = 512,
            .max_queue_messages = DEF_MAX_QUEUE_MESSAGES,
            .hello_timeout_ms = DEF_HELLO_TIMEOUT_MS,
            .close_timeout_ms = DEF_CLOSE_TIMEOUT_MS,
            .max_sessions = 100000,
            .max_sessions_per_realm = 100000,
            .max_pending_calls = 10000,
            .max_subscriptions = 100000,
            .max_registrations = 10000,
            .shutdown_grace_ms = DEF_SHUTDOWN_GRACE_MS,
            .max_call_timeout_ms = DEF_MAX_CALL_TIMEOUT,
            .max_retained_topics = RT_DEF_MAX_RETAINED_TOPICS,
            .max_retained_bytes = RT_DEF_MAX_RETAINED_BYTES,
            .auth_failure_delay_ms = DEF_AUTH_FAILURE_DELAY,
    };
    cfg->mgmt_enabled = true;
    cfg->tracing_max_traces = DEF_MAX_TRACES;
    cfg->tracing_default_limit = TRACE_OPT_LIMIT_DEFAULT;
    cfg->tracing_default_max_bytes = TRACE_OPT_MAX_BYTES_DEFAULT;
    cfg->tracing_segment_bytes = TRACE_PERSIST_SEGMENT_DEFAULT;
    cfg->tracing_fsync = TRACE_FSYNC_INTERVAL;
    cfg->tracing_fsync_interval_ms = 1000;
    cfg->tracing_persist_max_bytes = TRACE_OPT_PERSIST_BYTES_DEFAULT;
    cfg->tracing_persist_max_age_s = 0;
    cfg->tracing_write_backlog = TRACE_PERSIST_BACKLOG_DEFAULT;
    cfg->tracing_flight_recorder = flight_recorder_defaults();
    if (!cfg->tracing_flight_recorder) {
        return out_of_memory(c);
    }
    wamp_err err = dup_str(c, DEF_MGMT_REALM, &cfg->mgmt_realm);
    if (err == WAMP_OK) {
        err = dup_str(c, DEF_WORKER_ID, &cfg->worker_id);
    }
    if (err == WAMP_OK) {
        err = set_default_trusted(c, cfg);
    }
    return err;
}

/* Crossbar's default node ID is the host name. */
static wamp_err default_node_id(cfg_ctx *c, rt_config *cfg)
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0 || !host[0]) {
        return dup_str(c, "localhost", &cfg->node_id);
    }
    host[sizeof(host) - 1] = '\0';
    return dup_str(c, host, &cfg->node_id);
}

/* ---- Public API ----------------------------------------------------------------------------- */

wamp_err rt_config_load_string(const char *text, size_t len, rt_config **out, char *err,
                               size_t err_len)
{
    cfg_ctx c = {.err = err, .err_len = err_len};
    json_error_t jerr;
    json_t *root = NULL;
    rt_config *cfg = NULL;
    wamp_err rc;

    if (err && err_len) {
        err[0] = '\0';
    }
    if (!out) {
        return refuse(&c, "", "no output pointer");
    }
    *out = NULL;
    if (!text) {
        return refuse(&c, "", "no configuration text");
    }
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (err && err_len) {
            snprintf(err, err_len, "JSON syntax error at line %d, column %d: %s", jerr.line,
                     jerr.column, jerr.text);
            one_line(err);
        }
        return WAMP_EINVAL;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (!cfg) {
        rc = out_of_memory(&c);
        goto fail;
    }
    rc = set_defaults(&c, cfg);
    if (rc == WAMP_OK) {
        rc = parse_root(&c, root, cfg);
    }
    if (rc == WAMP_OK && !cfg->node_id) {
        rc = default_node_id(&c, cfg);
    }
    if (rc != WAMP_OK) {
        goto fail;
    }
    json_decref(root);
    *out = cfg;
    return WAMP_OK;

fail:
    rt_config_free(cfg);
    json_decref(root);
    return rc;
}

/* Reads all of f into a NUL-terminated heap buffer, growing it as needed (f may be a pipe).
 * On failure writes the reason into msg and returns NULL. */
static char *read_all(FILE *f, size_t *len, wamp_err *rc, char *msg, size_t msg_len)
{
    size_t cap = 64 * 1024;
    size_t n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (ferror(f)) {
            snprintf(msg, msg_len, "cannot read: %s", strerror(errno));
            *rc = WAMP_EIO;
            free(buf);
            return NULL;
        }
        if (n < cap) {
            buf[n] = '\0';
            *len = n;
            return buf;
        }
        if (cap >= CFG_FILE_MAX) {
            snprintf(msg, msg_len, "larger than %zu bytes", CFG_FILE_MAX);
            *rc = WAMP_EINVAL;
            free(buf);
            return NULL;
        }
        cap *= 2;
        char *grown = realloc(buf, cap + 1);
        if (!grown) {
            free(buf);
        }
        buf = grown;
    }
    snprintf(msg, msg_len, "out of memory");
    *rc = WAMP_ENOMEM;
    return NULL;
}

wamp_err rt_config_load_file(const char *path, rt_config **out, char *err, size_t err_len)
{
    char msg[512];
    char *text = NULL;
    size_t len = 0;
    wamp_err rc = WAMP_OK;
    FILE *f = NULL;

    if (out) {
        *out = NULL;
    }
    if (!path) {
        cfg_ctx c = {.err = err, .err_len = err_len};
        return refuse(&c, "", "no configuration file name");
    }
    f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, sizeof(msg), "cannot open: %s", strerror(errno));
        rc = WAMP_EIO;
        goto fail;
    }
    text = read_all(f, &len, &rc, msg, sizeof(msg));
    if (!text) {
        goto fail;
    }
    rc = rt_config_load_string(text, len, out, msg, sizeof(msg));
    if (rc != WAMP_OK) {
        goto fail;
    }
    free(text);
    fclose(f);
    return WAMP_OK;

fail:
    if (err && err_len) {
        snprintf(err, err_len, "%s: %s", path, msg);
    }
    free(text);
    if (f) {
        fclose(f);
    }
    return rc;
}

wamp_err rt_config_load_default(rt_config **out, char *err, size_t err_len)
{
    char msg[512];
    wamp_err rc = rt_config_load_string(rt_config_default_json, rt_config_default_json_len, out,
                                        msg, sizeof(msg));
    if (rc != WAMP_OK && err && err_len) {
        snprintf(err, err_len, "embedded default configuration: %s", msg);
    }
    return rc;
}

static void free_role(rt_role *role)
{
    for (size_t i = 0; i < role->n_permissions; i++) {
        free(role->permissions[i].uri);
    }
    free(role->permissions);
    free(role->name);
}

void rt_config_free(rt_config *cfg)
{
    if (!cfg) {
        return;
    }
    for (size_t i = 0; i < cfg->n_realms; i++) {
        rt_realm_config *r = &cfg->realms[i];
        for (size_t j = 0; j < r->n_roles; j++) {
            free_role(&r->roles[j]);
        }
        free(r->roles);
        free(r->name);
    }
    free(cfg->realms);
    for (size_t i = 0; i < cfg->n_listeners; i++) {
        rt_listener *l = &cfg->listeners[i];
        free(l->id);
        free(l->interface);
        free(l->unix_path);
        free(l->tls_key);
        free(l->tls_certificate);
        free(l->tls_ciphers);
        free(l->path);
        free(l->anonymous_role);
        free_auth(&l->auth);
    }
    free(cfg->listeners);
    free(cfg->node_id);
    free(cfg->worker_id);
    free(cfg->mgmt_realm);
    free(cfg->mgmt_trusted);
    if (cfg->mgmt_auth) {
        free_auth(cfg->mgmt_auth);
        free(cfg->mgmt_auth);
    }
    free(cfg->tracing_data_dir);
    json_decref(cfg->tracing_flight_recorder);
    free(cfg->log_level);
    free(cfg);
}

const rt_realm_config *rt_config_find_realm(const rt_config *cfg, const char *name)
{
    if (!cfg || !name) {
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_realms; i++) {
        if (strcmp(cfg->realms[i].name, name) == 0) {
            return &cfg->realms[i];
        }
    }
    return NULL;
}

const rt_auth_principal *rt_config_find_principal(const rt_auth_method_config *m,
                                                  const char *authid)
{
    for (size_t i = 0; authid && i < m->n_principals; i++) {
        if (strcmp(m->principals[i].authid, authid) == 0) {
            return &m->principals[i];
        }
    }
    return NULL;
}

bool rt_config_parse_peer_addr(const char *text, rt_cidr *out)
{
    char host[INET6_ADDRSTRLEN];
    const char *start = text;
    const char *end;
    const char *port = NULL;
    bool bracketed = false;

    memset(out, 0, sizeof(*out));
    if (!text) {
        return false;
    }
    if (text[0] == '[') { /* "[x::y]:port" */
        bracketed = true;
        start = text + 1;
        end = strchr(start, ']');
        if (!end || (end[1] != '\0' && end[1] != ':')) {
            return false;
        }
        port = end[1] == ':' ? end + 2 : NULL;
    } else { /* "a.b.c.d:port", bare "a.b.c.d", bare "x::y" (more than one ':') */
        const char *colon = strchr(text, ':');
        end = text + strlen(text);
        if (colon && !strchr(colon + 1, ':')) {
            end = colon;
            port = colon + 1;
        }
    }
    size_t n = (size_t)(end - start);
    if (n == 0 || n >= sizeof(host) || (port && !port_is_valid(port))) {
        return false;
    }
    memcpy(host, start, n);
    host[n] = '\0';
    if (!parse_ip(host, out) || (bracketed && out->family != RT_IP_V6)) {
        memset(out, 0, sizeof(*out));
        return false;
    }
    if (is_v4_mapped(out)) {
        unmap_v4(out);
    }
    return true;
}

bool rt_config_is_trusted(const rt_config *cfg, const rt_cidr *addr)
{
    if (!cfg || !addr || (addr->family != RT_IP_V4 && addr->family != RT_IP_V6)) {
        return false;
    }
    rt_cidr a = *addr;
    a.prefix = family_bits(a.family);
    if (is_v4_mapped(&a)) {
        unmap_v4(&a);
    }
    size_t n;
    const rt_cidr *nets = trusted_list(cfg, &n);
    for (size_t i = 0; i < n; i++) {
        if (in_network(&nets[i], &a)) {
            return true;
        }
    }
    return false;
}

bool rt_config_peer_is_trusted(const rt_config *cfg, const char *peer_addr)
{
    rt_cidr a;
    return rt_config_parse_peer_addr(peer_addr, &a) && rt_config_is_trusted(cfg, &a);
}

void rt_config_format_cidr(const rt_cidr *net, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN];
    if (!buf || len == 0) {
        return;
    }
    buf[0] = '\0';
    if (!net || (net->family != RT_IP_V4 && net->family != RT_IP_V6)) {
        return;
    }
    struct in_addr a4;
    struct in6_addr a6;
    const char *s;
    if (net->family == RT_IP_V4) {
        memcpy(&a4, net->addr, sizeof(a4));
        s = inet_ntop(AF_INET, &a4, ip, sizeof(ip));
    } else {
        memcpy(&a6, net->addr, sizeof(a6));
        s = inet_ntop(AF_INET6, &a6, ip, sizeof(ip));
    }
    int w = s ? snprintf(buf, len, "%s/%u", ip, net->prefix) : -1;
    if (w < 0 || (size_t)w >= len) {
        buf[0] = '\0';
    }
}

void rt_config_format_trusted(const rt_config *cfg, char *buf, size_t len)
{
    static const char more[] = ", ...";
    if (!buf || len == 0) {
        return;
    }
    buf[0] = '\0';
    if (!cfg) {
        return;
    }
    size_t n;
    const rt_cidr *nets = trusted_list(cfg, &n);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        char one[RT_CIDR_STRLEN];
        rt_config_format_cidr(&nets[i], one, sizeof(one));
        const char *sep = i ? ", " : "";
        /* Every entry but the last leaves room for ", ..." after it. */
        size_t need = strlen(sep) + strlen(one) + (i + 1 < n ? strlen(more) : 0);
        if (used + need >= len) {
            snprintf(buf + used, len - used, "%s", i ? more : "...");
            return;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, one);
    }
}
