/* rt_config_rules.c: the generic JSON rules of the configuration loader: key paths in
 * messages, error collection, key tables (unknown keys refused, Crossbar keys wampscope cannot
 * honour refused with the reason, harmless ones ignored and named in one warning), typed
 * getters, field tables and lists. Key names, types and defaults follow
 * crossbar/common/checkconfig.py; configs/README.md lists every decision. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_config_int.h"

/* Messages quote keys and values from the file; a control character in one of them must not
 * break the message over several lines. */
void cfg_one_line(char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            *s = '?';
        }
    }
}

/* Appends a copy of msg to list (n entries); false when out of memory. */
static bool push_msg(char ***list, size_t *n, const char *msg)
{
    char *copy = strdup(msg);
    char **grown = copy ? realloc(*list, (*n + 1) * sizeof(**list)) : NULL;
    if (!grown) {
        free(copy);
        return false;
    }
    grown[*n] = copy;
    *list = grown;
    (*n)++;
    return true;
}

wamp_err cfg_refuse(cfg_ctx *c, const char *path, const char *fmt, ...)
{
    char msg[CFG_MSG_MAX];
    int n = snprintf(msg, sizeof(msg), "%s: ", path && path[0] ? path : "(top level)");
    if (n >= 0 && (size_t)n < sizeof(msg)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return cfg_error(c, msg);
}

wamp_err cfg_error(cfg_ctx *c, const char *msg)
{
    char line[CFG_MSG_MAX];
    snprintf(line, sizeof(line), "%s", msg);
    cfg_one_line(line);
    rt_config_diag *d = c->diag;
    if (d->n_errors >= RT_CONFIG_ERRORS_MAX) {
        d->n_errors_dropped++;
    } else if (!push_msg(&d->errors, &d->n_errors, line)) {
        c->oom = true;
    }
    return WAMP_EINVAL;
}

wamp_err cfg_oom(cfg_ctx *c)
{
    c->oom = true;
    return WAMP_ENOMEM;
}

wamp_err cfg_warn(cfg_ctx *c, const char *msg)
{
    if (!push_msg(&c->diag->warnings, &c->diag->n_warnings, msg)) {
        return cfg_oom(c);
    }
    return WAMP_OK;
}

void cfg_note_ignored(cfg_ctx *c, const char *path)
{
    static const char more[] = ", ...";
    size_t used = strlen(c->ignored);
    const char *sep = c->n_ignored ? ", " : "";
    c->n_ignored++;
    if (used >= strlen(more) && strcmp(c->ignored + used - strlen(more), more) == 0) {
        return; /* already cut: the count still grows */
    }
    if (used + strlen(sep) + strlen(path) >= sizeof(c->ignored) - sizeof(more)) {
        snprintf(c->ignored + used, sizeof(c->ignored) - used, "%s", more);
        return;
    }
    snprintf(c->ignored + used, sizeof(c->ignored) - used, "%s%s", sep, path);
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

cfg_path cfg_key(const char *parent, const char *key)
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

cfg_path cfg_index(const char *parent, size_t i)
{
    cfg_path p;
    int n = snprintf(p.s, sizeof(p.s), "%s[%zu]", parent ? parent : "", i);
    path_mark_cut(&p, n);
    return p;
}

wamp_err cfg_dup(cfg_ctx *c, const char *s, char **out)
{
    char *d = strdup(s);
    if (!d) {
        return cfg_oom(c);
    }
    free(*out);
    *out = d;
    return WAMP_OK;
}

static const key_rule *find_rule(const key_rule *rules, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rules[i].key, key) == 0) {
            return &rules[i];
        }
    }
    return NULL;
}

bool cfg_is_string_list(const json_t *v)
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
        return cfg_refuse(c, path, "%s", r->why);
    case KEY_IGN_BOOL:
        return json_is_boolean(v) ? WAMP_OK : cfg_refuse(c, path, "must be a boolean");
    case KEY_IGN_INT:
        if (!json_is_integer(v) || json_integer_value(v) < r->lo || json_integer_value(v) > r->hi) {
            return cfg_refuse(c, path, "must be an integer %lld..%lld", (long long)r->lo,
                              (long long)r->hi);
        }
        return WAMP_OK;
    case KEY_META:
    case KEY_IGN_STRING:
        return json_is_string(v) ? WAMP_OK : cfg_refuse(c, path, "must be a string");
    case KEY_IGN_STRINGS:
        return cfg_is_string_list(v) ? WAMP_OK : cfg_refuse(c, path, "must be a list of strings");
    case KEY_IGN_OBJECT:
        return json_is_object(v) ? WAMP_OK : cfg_refuse(c, path, "must be an object");
    case KEY_ONLY_TRUE:
        if (!json_is_boolean(v)) {
            return cfg_refuse(c, path, "must be a boolean");
        }
        return json_is_true(v) ? WAMP_OK : cfg_refuse(c, path, "%s", r->why);
    case KEY_ONLY_FALSE:
        if (!json_is_boolean(v)) {
            return cfg_refuse(c, path, "must be a boolean");
        }
        return json_is_false(v) ? WAMP_OK : cfg_refuse(c, path, "%s", r->why);
    }
    return cfg_refuse(c, path, "internal error: bad key rule");
}

static const cfg_field *find_field(const cfg_field *f, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(f[i].key, key) == 0) {
            return &f[i];
        }
    }
    return NULL;
}

static bool kind_is_ignored(key_kind k)
{
    return k == KEY_IGN_ANY || k == KEY_IGN_BOOL || k == KEY_IGN_INT || k == KEY_IGN_STRING ||
           k == KEY_IGN_STRINGS || k == KEY_IGN_OBJECT;
}

wamp_err cfg_check_keys_fields(cfg_ctx *c, const char *path, const json_t *obj,
                               const key_rule *rules, size_t n, const cfg_field *fields,
                               size_t n_fields)
{
    if (!json_is_object(obj)) {
        return cfg_refuse(c, path, "must be an object");
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        cfg_path kp = cfg_key(path, key);
        const key_rule *r = find_rule(rules, n, key);
        if (!r && find_field(fields, n_fields, key)) {
            continue;
        }
        if (!r) {
            cfg_refuse(c, kp.s, "unknown key");
        } else if (check_rule_value(c, kp.s, r, v) == WAMP_OK && kind_is_ignored(r->kind)) {
            cfg_note_ignored(c, kp.s);
        }
    }
    return WAMP_OK;
}

wamp_err cfg_check_keys(cfg_ctx *c, const char *path, const json_t *obj, const key_rule *rules,
                        size_t n)
{
    return cfg_check_keys_fields(c, path, obj, rules, n, NULL, 0);
}

/* ---- Field tables -------------------------------------------------------------------------- */

static void field_store(const cfg_field *f, void *base, json_int_t v)
{
    unsigned char *p = (unsigned char *)base + f->offset;
    switch (f->type) {
    case CFG_BOOL: {
        bool x = v != 0;
        memcpy(p, &x, sizeof(x));
        break;
    }
    case CFG_SIZE: {
        size_t x = (size_t)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    case CFG_U32: {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    case CFG_U64: {
        uint64_t x = (uint64_t)v;
        memcpy(p, &x, sizeof(x));
        break;
    }
    }
}

void cfg_fields_default(const cfg_field *f, size_t n, void *base)
{
    for (size_t i = 0; i < n; i++) {
        field_store(&f[i], base, f[i].def);
    }
}

wamp_err cfg_fields_parse(cfg_ctx *c, const char *path, const json_t *o, const cfg_field *f,
                          size_t n, void *base)
{
    wamp_err err = WAMP_OK;
    for (size_t i = 0; i < n; i++) {
        json_int_t v = 0;
        bool b = false;
        wamp_err e = f[i].type == CFG_BOOL
                             ? cfg_opt_bool(c, path, o, f[i].key, &b)
                             : cfg_opt_int(c, path, o, f[i].key, f[i].lo, f[i].hi, f[i].unit, &v);
        v = f[i].type == CFG_BOOL ? b : v;
        if (e == WAMP_OK && json_object_get(o, f[i].key)) {
            field_store(&f[i], base, v);
        }
        err = cfg_worse(err, e);
    }
    return err;
}

/* ---- Lists --------------------------------------------------------------------------------- */

wamp_err cfg_parse_list(cfg_ctx *c, const char *path, const json_t *v, size_t item_size,
                        cfg_item_fn fn, void *arg, void **items, size_t *n)
{
    if (!json_is_array(v)) {
        return cfg_refuse(c, path, "must be a list");
    }
    size_t count = json_array_size(v);
    unsigned char *a = calloc(count ? count : 1, item_size);
    if (!a) {
        return cfg_oom(c);
    }
    *items = a;
    *n = count;
    wamp_err err = WAMP_OK;
    for (size_t i = 0; i < count && !cfg_stop(err); i++) {
        cfg_path ip = cfg_index(path, i);
        err = cfg_worse(err, fn(c, ip.s, json_array_get(v, i), a, i, arg));
    }
    return err;
}

/* ---- Typed getters: absent keys leave *out unchanged (the default) -------------------------- */

wamp_err cfg_opt_bool(cfg_ctx *c, const char *path, const json_t *obj, const char *key, bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        return WAMP_OK;
    }
    if (!json_is_boolean(v)) {
        return cfg_refuse(c, cfg_key(path, key).s, "must be a boolean");
    }
    *out = json_is_true(v);
    return WAMP_OK;
}

wamp_err cfg_opt_int(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                     json_int_t lo, json_int_t hi, const char *unit, json_int_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        return WAMP_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        return cfg_refuse(c, cfg_key(path, key).s, "must be an integer %lld..%lld%s%s",
                          (long long)lo, (long long)hi, unit ? " " : "", unit ? unit : "");
    }
    *out = json_integer_value(v);
    return WAMP_OK;
}

wamp_err cfg_opt_str(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                     const char **out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v) {
        return WAMP_OK;
    }
    if (!json_is_string(v)) {
        return cfg_refuse(c, cfg_key(path, key).s, "must be a string");
    }
    *out = json_string_value(v);
    return WAMP_OK;
}

wamp_err cfg_req_str(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                     const char **out)
{
    wamp_err err = cfg_opt_str(c, path, obj, key, out);
    if (err == WAMP_OK && !*out) {
        return cfg_refuse(c, cfg_key(path, key).s, "is required");
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

wamp_err cfg_opt_id(cfg_ctx *c, const char *path, const json_t *obj, const char **out)
{
    wamp_err err = cfg_opt_str(c, path, obj, "id", out);
    if (err == WAMP_OK && *out && !id_is_valid(*out)) {
        return cfg_refuse(c, cfg_key(path, "id").s,
                          "\"%s\" must match ^[a-z][a-z0-9_]{2,63}$ (Crossbar's ID rule)", *out);
    }
    return err;
}

wamp_err cfg_opt_enum(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                      const char *const *names, size_t n, int *out)
{
    const char *s = NULL;
    wamp_err err = cfg_opt_str(c, path, obj, key, &s);
    if (err != WAMP_OK || !s) {
        return err;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (int)i;
            return WAMP_OK;
        }
    }
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof(list); i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w = snprintf(list + used, sizeof(list) - used, "%s\"%s\"", sep, names[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    return cfg_refuse(c, cfg_key(path, key).s, "must be %s (got \"%s\")", list, s);
}

/* o must be an object with a string "type" (borrowed into *type) that types lists as accepted;
 * a listed but unsupported type is refused with its reason, an unlisted one as unknown. */
wamp_err cfg_check_type(cfg_ctx *c, const char *path, const json_t *o, const type_rule *types,
                        size_t n, const char **type)
{
    if (!json_is_object(o)) {
        return cfg_refuse(c, path, "must be an object");
    }
    wamp_err err = cfg_req_str(c, path, o, "type", type);
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path tp = cfg_key(path, "type");
    for (size_t i = 0; i < n; i++) {
        if (strcmp(types[i].type, *type) == 0) {
            return types[i].why ? cfg_refuse(c, tp.s, "%s", types[i].why) : WAMP_OK;
        }
    }
    return cfg_refuse(c, tp.s, "unknown type \"%s\"", *type);
}
