/* rt_config_web.c: the "paths" of a web transport (and of a universal transport's "web" part):
 * Crossbar's path services (crossbar/common/checkconfig.py check_web_path_service_*) that
 * wampscope serves -- websocket, static, redirect, json, nodeinfo, nested path, the HTTP bridge's
 * publisher and caller -- and its own
 * wampscope-trace-viewer. HTTP services become rt_web_path entries of the listener; WebSocket
 * paths after the first become listeners that share its socket (cfg_spares). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "rt_config_int.h"

static const type_rule web_path_types[] = {
        {"websocket", NULL},
        {"static", NULL},
        {"redirect", NULL},
        {"nodeinfo", NULL},
        {"path", NULL},
        {"wampscope-trace-viewer", NULL},
        {"wsgi", "path type \"wsgi\" is not supported (wampscope runs no Python)"},
        {"resource", "path type \"resource\" is not supported (wampscope runs no Python)"},
        {"reverseproxy", "path type \"reverseproxy\" is not supported"},
        {"websocket-reverseproxy", "path type \"websocket-reverseproxy\" is not supported"},
        {"json", NULL},
        {"cgi", "path type \"cgi\" is not supported (wampscope runs no programs)"},
        {"longpoll", "path type \"longpoll\" is not supported"},
        {"publisher", NULL},
        {"webhook", "path type \"webhook\" (HTTP bridge) is not supported"},
        {"caller", NULL},
        {"upload", "path type \"upload\" is not supported"},
        {"archive", "path type \"archive\" is not supported"},
};

/* checkconfig.py check_web_path_service_static. */
static const key_rule static_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
        K_PARSED("directory"),
        K_REFUSED("package", "files of a Python package are not supported; give \"directory\""),
        K_REFUSED("resource", "files of a Python package are not supported; give \"directory\""),
        K_PARSED("options"),
};

static const key_rule static_option_rules[] = {
        K_PARSED("enable_directory_listing"),
        K_PARSED("mime_types"),
        K_PARSED("cache_timeout"),
        K_PARSED("default_file"),
};

static const key_rule redirect_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
        K_PARSED("url"),
};

/* nodeinfo and wampscope-trace-viewer. */
static const key_rule plain_service_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
};

/* checkconfig.py check_web_path_service_json. */
static const key_rule json_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
        K_PARSED("value"),
        K_PARSED("options"),
};

static const key_rule json_option_rules[] = {
        K_PARSED("prettify"),
        K_PARSED("discourage_caching"),
        /* wampscope sends no CORS headers (configs/README.md, "Differences from Crossbar"). */
        K_IGN("allow_cross_origin", KEY_IGN_BOOL),
};

/* checkconfig.py check_web_path_service_publisher / _caller. */
static const key_rule bridge_rules[] = {
        K_PARSED("id"), K_PARSED("type"), K_PARSED("realm"), K_PARSED("role"), K_PARSED("options"),
};

/* crossbar/bridge/rest/common.py. */
static const key_rule bridge_option_rules[] = {
        K_PARSED("post_body_limit"),       K_PARSED("require_tls"), K_PARSED("call_timeout"),
        K_IGN("debug", KEY_IGN_BOOL),      K_PARSED("key"),         K_PARSED("secret"),
        K_PARSED("timestamp_delta_limit"), K_PARSED("require_ip"),
};

static const key_rule nested_rules[] = {
        K_PARSED("id"),
        K_PARSED("type"),
        K_PARSED("paths"),
};

/* Crossbar's static.py DEFAULT_CACHE_TIMEOUT: 12 hours. */
#define WEB_DEF_CACHE_SECS (12 * 60 * 60)
/* Bytes of a redirect's url (it goes into the answer's headers, rt_lws_web.c). */
#define WEB_MAX_URL 2048
/* Nested "path" services deeper than this are refused (a bound on the recursion). */
#define WEB_MAX_DEPTH 8

/* Crossbar's path key rule (checkconfig.py _WEB_PATH_PAT_STR): ^([a-z0-9A-Z_\-]+|/)$. */
bool cfg_web_path_key_is_valid(const char *k)
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

/* The URL path of key under prefix ("" at the top) into *r: key "ws" serves "<prefix>/ws", key
 * "/" the prefix itself ("/" at the top), as in Crossbar's resource tree. Returns the length the
 * whole path takes (sizeof(r->s) or more: cut). */
static int key_url(const char *prefix, const char *key, cfg_path *r)
{
    return strcmp(key, "/") == 0 ? snprintf(r->s, sizeof(r->s), "%s", prefix[0] ? prefix : "/")
                                 : snprintf(r->s, sizeof(r->s), "%s/%s", prefix, key);
}

cfg_path cfg_web_key_prefix(const char *prefix, const char *key)
{
    cfg_path r;
    (void)key_url(prefix, key, &r);
    return r;
}

wamp_err cfg_web_url(cfg_ctx *c, const char *kp, const char *prefix, const char *key, cfg_path *out)
{
    int n = key_url(prefix, key, out);
    if (n < 0 || (size_t)n >= sizeof(out->s)) {
        return cfg_refuse(c, kp, "the URL path would be longer than %zu bytes", sizeof(out->s) - 1);
    }
    return WAMP_OK;
}

/* true when s holds a byte that must not go into an HTTP header or a file name check. */
static bool has_ctl(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            return true;
        }
    }
    return false;
}

static wamp_err parse_mime_types(cfg_ctx *c, const char *path, const json_t *o, rt_web_path *w)
{
    if (!json_is_object(o)) {
        return cfg_refuse(c, path, "must be an object mapping extensions to MIME types");
    }
    w->mime_types = calloc(json_object_size(o) + 1, sizeof(*w->mime_types));
    if (!w->mime_types) {
        return cfg_oom(c);
    }
    const char *ext;
    const json_t *v;
    wamp_err err = WAMP_OK;
    json_object_foreach((json_t *)o, ext, v)
    {
        cfg_path kp = cfg_key(path, ext);
        if (!json_is_string(v) || !json_string_value(v)[0] || has_ctl(json_string_value(v))) {
            err = cfg_worse(err, cfg_refuse(c, kp.s, "must be a MIME type string"));
            continue;
        }
        if (ext[0] != '.' || !ext[1] || strchr(ext, '/') || has_ctl(ext)) {
            err = cfg_worse(err, cfg_refuse(c, kp.s, "an extension starts with \".\" (\".svg\")"));
            continue;
        }
        rt_mime_type *m = &w->mime_types[w->n_mime_types];
        wamp_err e = cfg_dup(c, ext, &m->ext);
        if (e == WAMP_OK) {
            e = cfg_dup(c, json_string_value(v), &m->type);
        }
        w->n_mime_types++;
        if (cfg_stop(e)) {
            return e;
        }
    }
    return err;
}

static wamp_err parse_static_options(cfg_ctx *c, const char *path, const json_t *o, rt_web_path *w)
{
    wamp_err err = cfg_check_keys(c, path, o, static_option_rules, N_RULES(static_option_rules));
    if (err != WAMP_OK) {
        return err;
    }
    err = cfg_opt_bool(c, path, o, "enable_directory_listing", &w->listing);
    const json_t *ct = json_object_get(o, "cache_timeout");
    if (ct && json_is_null(ct)) {
        w->cache_secs = -1; /* Crossbar: no Cache-Control header */
    } else if (ct) {
        json_int_t secs = w->cache_secs;
        err = cfg_worse(err, cfg_opt_int(c, path, o, "cache_timeout", 0, 10LL * 365 * 24 * 3600,
                                         "seconds", &secs));
        w->cache_secs = secs;
    }
    const char *df = NULL;
    err = cfg_worse(err, cfg_opt_str(c, path, o, "default_file", &df));
    if (df) {
        cfg_path kp = cfg_key(path, "default_file");
        if (!df[0] || df[0] == '/' || has_ctl(df) || strstr(df, "..")) {
            err = cfg_worse(
                    err, cfg_refuse(c, kp.s, "must name a file inside the directory (no \"..\")"));
        } else {
            err = cfg_worse(err, cfg_dup(c, df, &w->default_file));
        }
    }
    const json_t *mt = json_object_get(o, "mime_types");
    if (mt && !cfg_stop(err)) {
        err = cfg_worse(err, parse_mime_types(c, cfg_key(path, "mime_types").s, mt, w));
    }
    return err;
}

/* "directory" against the config file's directory, as Crossbar joins it with its node
 * directory (static.py: os.path.abspath(os.path.join(cbdir, directory))). */
static wamp_err static_directory(cfg_ctx *c, const char *path, const char *dir, rt_web_path *w)
{
    if (!dir[0] || has_ctl(dir)) {
        return cfg_refuse(c, path, "must be a directory name");
    }
    char buf[4096];
    int n;
    if (dir[0] == '/' || !c->base_dir) {
        n = snprintf(buf, sizeof(buf), "%s", dir);
    } else {
        n = snprintf(buf, sizeof(buf), "%s/%s", c->base_dir, dir);
    }
    if (n < 0 || (size_t)n >= sizeof(buf)) {
        return cfg_refuse(c, path, "too long");
    }
    return cfg_dup(c, buf, &w->directory);
}

static wamp_err parse_static(cfg_ctx *c, const char *path, const json_t *o, rt_web_path *w)
{
    wamp_err err = cfg_check_keys(c, path, o, static_rules, N_RULES(static_rules));
    if (err != WAMP_OK) {
        return err;
    }
    if (json_object_get(o, "package") || json_object_get(o, "resource")) {
        return WAMP_EINVAL; /* refused by the key table */
    }
    const char *id = NULL;
    const char *dir = NULL;
    err = cfg_opt_id(c, path, o, &id);
    err = cfg_worse(err, cfg_req_str(c, path, o, "directory", &dir));
    if (dir) {
        err = cfg_worse(err, static_directory(c, cfg_key(path, "directory").s, dir, w));
    }
    w->cache_secs = WEB_DEF_CACHE_SECS;
    const json_t *opts = json_object_get(o, "options");
    if (opts && !cfg_stop(err)) {
        err = cfg_worse(err, parse_static_options(c, cfg_key(path, "options").s, opts, w));
    }
    return err;
}

static wamp_err parse_redirect(cfg_ctx *c, const char *path, const json_t *o, rt_web_path *w)
{
    wamp_err err = cfg_check_keys(c, path, o, redirect_rules, N_RULES(redirect_rules));
    const char *id = NULL;
    const char *url = NULL;
    if (err == WAMP_OK) {
        err = cfg_opt_id(c, path, o, &id);
        err = cfg_worse(err, cfg_req_str(c, path, o, "url", &url));
    }
    if (url && (!url[0] || has_ctl(url) || strchr(url, ' '))) {
        return cfg_refuse(c, cfg_key(path, "url").s,
                          "must be a URL (no spaces or control characters)");
    }
    if (url && strlen(url) > WEB_MAX_URL) {
        return cfg_refuse(c, cfg_key(path, "url").s, "longer than %d bytes", WEB_MAX_URL);
    }
    return url && err == WAMP_OK ? cfg_dup(c, url, &w->url) : err;
}

static wamp_err parse_json_service(cfg_ctx *c, const char *path, const json_t *o, rt_web_path *w)
{
    wamp_err err = cfg_check_keys(c, path, o, json_rules, N_RULES(json_rules));
    const char *id = NULL;
    err = err == WAMP_OK ? cfg_opt_id(c, path, o, &id) : err;
    const json_t *value = json_object_get(o, "value");
    if (err == WAMP_OK && !value) {
        return cfg_refuse(c, cfg_key(path, "value").s, "is required");
    }
    bool pretty = false;
    const json_t *opts = json_object_get(o, "options");
    if (err == WAMP_OK && opts) {
        cfg_path op = cfg_key(path, "options");
        err = cfg_check_keys(c, op.s, opts, json_option_rules, N_RULES(json_option_rules));
        err = err == WAMP_OK ? cfg_opt_bool(c, op.s, opts, "prettify", &pretty) : err;
        err = cfg_worse(err, cfg_opt_bool(c, op.s, opts, "discourage_caching", &w->no_store));
    }
    if (err != WAMP_OK) {
        return err;
    }
    /* As Crossbar's JsonResource: compact, or indented by 3; UTF-8 as it is. */
    w->body = json_dumps(value, JSON_ENCODE_ANY | (pretty ? JSON_INDENT(3) : JSON_COMPACT));
    if (!w->body) {
        return cfg_oom(c);
    }
    w->body_len = strlen(w->body);
    return WAMP_OK;
}

/* Crossbar's timestamp_delta_limit default: 300 seconds. */
#define WEB_DEF_TIMESTAMP_DELTA 300

/* options key + secret (signed requests) and timestamp_delta_limit of a bridge path. */
static wamp_err parse_signing(cfg_ctx *c, const char *op, const json_t *opts, rt_web_path *w)
{
    const char *key = NULL;
    const char *secret = NULL;
    json_int_t delta = WEB_DEF_TIMESTAMP_DELTA;
    wamp_err err = cfg_opt_str(c, op, opts, "key", &key);
    err = cfg_worse(err, cfg_opt_str(c, op, opts, "secret", &secret));
    err = cfg_worse(err,
                    cfg_opt_int(c, op, opts, "timestamp_delta_limit", 0, 86400, "seconds", &delta));
    if (err != WAMP_OK) {
        return err;
    }
    w->timestamp_delta_secs = (uint32_t)delta;
    if (!key != !secret || (key && (!key[0] || !secret[0]))) {
        return cfg_refuse(c, op, "signed requests need both \"key\" and \"secret\" (not empty)");
    }
    if (!key) {
        return WAMP_OK;
    }
    err = cfg_dup(c, key, &w->sign_key);
    return err == WAMP_OK ? cfg_dup(c, secret, &w->sign_secret) : err;
}

static wamp_err parse_ip_item(cfg_ctx *c, const char *path, const json_t *v, void *items, size_t i,
                              void *arg)
{
    (void)arg;
    rt_cidr *nets = items;
    const char *s = json_string_value(v);
    return s ? cfg_parse_cidr(c, path, s, &nets[i]) : cfg_refuse(c, path, "must be a string");
}

/* A publisher or caller path (router/rt_bridge.h); lim: the body limit's default and bound. */
static wamp_err parse_bridge(cfg_ctx *c, const char *path, const json_t *o, const rt_limits *lim,
                             rt_web_path *w)
{
    wamp_err err = cfg_check_keys(c, path, o, bridge_rules, N_RULES(bridge_rules));
    const char *id = NULL;
    const char *realm = NULL;
    const char *role = NULL;
    if (err == WAMP_OK) {
        err = cfg_opt_id(c, path, o, &id);
        err = cfg_worse(err, cfg_req_str(c, path, o, "realm", &realm));
        err = cfg_worse(err, cfg_req_str(c, path, o, "role", &role));
    }
    w->post_body_limit = lim->max_message_size;
    w->call_timeout_ms = RT_BRIDGE_CALL_TIMEOUT_MS;
    w->timestamp_delta_secs = WEB_DEF_TIMESTAMP_DELTA;
    const json_t *opts = json_object_get(o, "options");
    if (err == WAMP_OK && opts) {
        cfg_path op = cfg_key(path, "options");
        json_int_t limit = 0;
        json_int_t timeout = 0;
        err = cfg_check_keys(c, op.s, opts, bridge_option_rules, N_RULES(bridge_option_rules));
        err = err == WAMP_OK ? cfg_opt_int(c, op.s, opts, "post_body_limit", 0,
                                           (json_int_t)lim->max_message_size, "bytes", &limit)
                             : err;
        err = cfg_worse(err, cfg_opt_bool(c, op.s, opts, "require_tls", &w->require_tls));
        err = cfg_worse(err,
                        cfg_opt_int(c, op.s, opts, "call_timeout", 0, 86400000, "ms", &timeout));
        /* Crossbar's 0 means "no limit"; here it is the message size limit. */
        if (limit > 0) {
            w->post_body_limit = (size_t)limit;
        }
        if (json_object_get(opts, "call_timeout")) {
            w->call_timeout_ms = (uint32_t)timeout;
        }
        err = cfg_worse(err, parse_signing(c, op.s, opts, w));
        const json_t *ips = json_object_get(opts, "require_ip");
        if (ips && !cfg_stop(err)) {
            void *items = NULL;
            err = cfg_worse(err,
                            cfg_parse_list(c, cfg_key(op.s, "require_ip").s, ips, sizeof(rt_cidr),
                                           parse_ip_item, NULL, &items, &w->n_require_ip));
            w->require_ip = items;
        }
    }
    if (err != WAMP_OK) {
        return err;
    }
    err = cfg_dup(c, realm, &w->realm);
    return err == WAMP_OK ? cfg_dup(c, role, &w->role) : err;
}

/* Grows l->web by one zeroed entry; *out is it. */
static wamp_err web_add(cfg_ctx *c, rt_listener *l, rt_web_kind kind, const char *prefix,
                        rt_web_path **out)
{
    rt_web_path *a = realloc(l->web, (l->n_web + 1) * sizeof(*a));
    if (!a) {
        return cfg_oom(c);
    }
    l->web = a;
    rt_web_path *w = &a[l->n_web++];
    memset(w, 0, sizeof(*w));
    w->kind = kind;
    *out = w;
    return cfg_dup(c, prefix, &w->prefix);
}

typedef struct web_walk {
    const rt_limits *lim;
    bool has_ws; /* the transport has its first WebSocket path (in l) */
    cfg_spares *spares;
} web_walk;

/* A WebSocket path service at key path kp serving URL path url: into l if it is the
 * transport's first (*has_ws false), else into the next spare. */
wamp_err cfg_parse_ws_path(cfg_ctx *c, const char *kp, const json_t *svc, const char *url,
                           const rt_limits *lim, rt_listener *l, cfg_spares *spares, bool *has_ws)
{
    rt_listener *x = l;
    if (*has_ws) {
        if (spares->used >= spares->n) {
            return cfg_refuse(c, kp, "internal error: no listener reserved for this path");
        }
        snprintf(spares->kp[spares->used].s, sizeof(spares->kp[spares->used].s), "%s", kp);
        x = &spares->l[spares->used++];
        x->shares_port = true;
    }
    *has_ws = true;
    x->kind = RT_TRANSPORT_WEBSOCKET;
    wamp_err e = cfg_parse_ws_service(c, kp, svc, false, lim, x);
    e = cfg_stop(e) ? e : cfg_worse(e, cfg_dup(c, url, &x->path));
    if (x == l || e != WAMP_OK) {
        return e;
    }
    const char *id = NULL;
    if (cfg_opt_id(c, kp, svc, &id) == WAMP_OK && id) {
        e = cfg_dup(c, id, &x->id);
    }
    /* lws keeps one keepalive policy per listening socket (rt_lws.c). */
    if (e == WAMP_OK && (x->auto_ping_interval_ms != l->auto_ping_interval_ms ||
                         x->auto_ping_timeout_ms != l->auto_ping_timeout_ms)) {
        e = cfg_refuse(c, cfg_key(kp, "options").s,
                       "auto_ping_interval and auto_ping_timeout must be the same on every "
                       "WebSocket path of a transport (they are the listener's)");
    }
    return e;
}

/* The services of one "paths" object (pp: its key path) under URL prefix ("" at the top). */
static wamp_err parse_web_paths(cfg_ctx *c, const char *pp, const json_t *paths, const char *prefix,
                                int depth, web_walk *ww, rt_listener *l)
{
    if (!json_is_object(paths)) {
        return cfg_refuse(c, pp, "must be an object");
    }
    const char *key;
    const json_t *svc;
    wamp_err err = WAMP_OK;
    json_object_foreach((json_t *)paths, key, svc)
    {
        cfg_path kp = cfg_key(pp, key);
        if (!cfg_web_path_key_is_valid(key)) {
            err = cfg_worse(err, cfg_refuse(c, kp.s,
                                            "a path key must be \"/\" or match "
                                            "[a-zA-Z0-9_-]+"));
            continue;
        }
        const char *type = NULL;
        wamp_err e = cfg_check_type(c, kp.s, svc, web_path_types, N_RULES(web_path_types), &type);
        if (e != WAMP_OK) {
            err = cfg_worse(err, e);
            continue;
        }
        cfg_path url;
        e = cfg_web_url(c, kp.s, prefix, key, &url);
        if (e != WAMP_OK) {
            err = cfg_worse(err, e);
            continue;
        }
        rt_web_path *w = NULL;
        if (strcmp(type, "websocket") == 0) {
            e = cfg_parse_ws_path(c, kp.s, svc, url.s, ww->lim, l, ww->spares, &ww->has_ws);
        } else if (strcmp(type, "path") == 0) {
            e = cfg_check_keys(c, kp.s, svc, nested_rules, N_RULES(nested_rules));
            const json_t *sub = json_object_get(svc, "paths");
            if (e == WAMP_OK && !sub) {
                e = cfg_refuse(c, cfg_key(kp.s, "paths").s, "is required");
            } else if (e == WAMP_OK && (depth >= WEB_MAX_DEPTH || strcmp(key, "/") == 0)) {
                e = cfg_refuse(c, kp.s,
                               strcmp(key, "/") == 0 ? "a nested \"path\" service needs a named key"
                                                     : "nested too deep");
            } else if (e == WAMP_OK) {
                e = parse_web_paths(c, cfg_key(kp.s, "paths").s, sub, url.s, depth + 1, ww, l);
            }
        } else if (strcmp(type, "static") == 0) {
            e = web_add(c, l, RT_WEB_STATIC, url.s, &w);
            e = cfg_stop(e) ? e : parse_static(c, kp.s, svc, w);
        } else if (strcmp(type, "redirect") == 0) {
            e = web_add(c, l, RT_WEB_REDIRECT, url.s, &w);
            e = cfg_stop(e) ? e : parse_redirect(c, kp.s, svc, w);
        } else if (strcmp(type, "publisher") == 0 || strcmp(type, "caller") == 0) {
            e = web_add(c, l, type[0] == 'p' ? RT_WEB_PUBLISHER : RT_WEB_CALLER, url.s, &w);
            e = cfg_stop(e) ? e : parse_bridge(c, kp.s, svc, ww->lim, w);
        } else if (strcmp(type, "json") == 0) {
            e = web_add(c, l, RT_WEB_JSON, url.s, &w);
            e = cfg_stop(e) ? e : parse_json_service(c, kp.s, svc, w);
        } else {
            e = cfg_check_keys(c, kp.s, svc, plain_service_rules, N_RULES(plain_service_rules));
            const char *id = NULL;
            e = e == WAMP_OK ? cfg_opt_id(c, kp.s, svc, &id) : e;
            if (e == WAMP_OK) {
                e = web_add(c, l, strcmp(type, "nodeinfo") == 0 ? RT_WEB_NODEINFO : RT_WEB_VIEWER,
                            url.s, &w);
            }
        }
        err = cfg_worse(err, e);
        if (cfg_stop(err)) {
            return err;
        }
    }
    return err;
}

/* The "paths" of a web transport or of a universal transport's "web" part (pp: their key
 * path); has_ws: the transport has a WebSocket path already (the universal transport's
 * "websocket" part). WebSocket paths after the first fill spares. */
wamp_err cfg_parse_web_services(cfg_ctx *c, const char *pp, const json_t *paths, bool has_ws,
                                const rt_limits *lim, rt_listener *l, cfg_spares *spares)
{
    if (!paths) {
        return cfg_refuse(c, pp, "is required");
    }
    web_walk ww = {.lim = lim, .has_ws = has_ws, .spares = spares};
    wamp_err err = parse_web_paths(c, pp, paths, "", 0, &ww, l);
    if (err == WAMP_OK && !ww.has_ws) {
        /* HTTP only: no WebSocket endpoint (path NULL), every upgrade is refused. */
        l->ser_json = true;
        l->ser_msgpack = true;
        l->max_message_size = lim->max_message_size;
    }
    if (err == WAMP_OK && !ww.has_ws && l->n_web == 0) {
        err = cfg_refuse(c, pp, "must contain at least one path");
    }
    if (err == WAMP_OK && !ww.has_ws) {
        err = cfg_parse_auth(c, cfg_key(pp, "auth").s, NULL, l);
    }
    return err;
}

/* "type": "websocket" services in a "paths" object, nested "path" services included. */
static size_t count_ws_paths_at(const json_t *paths, int depth)
{
    size_t n = 0;
    const char *key;
    const json_t *svc;
    if (!json_is_object(paths) || depth > WEB_MAX_DEPTH) {
        return 0;
    }
    json_object_foreach((json_t *)paths, key, svc)
    {
        const char *type = json_string_value(json_object_get(svc, "type"));
        if (type && strcmp(type, "websocket") == 0) {
            n++;
        } else if (type && strcmp(type, "path") == 0) {
            n += count_ws_paths_at(json_object_get(svc, "paths"), depth + 1);
        }
    }
    return n;
}

size_t cfg_count_ws_paths(const json_t *paths)
{
    return count_ws_paths_at(paths, 0);
}

void cfg_free_web_paths(rt_listener *l)
{
    for (size_t k = 0; k < l->n_web; k++) {
        rt_web_path *w = &l->web[k];
        free(w->prefix);
        free(w->directory);
        free(w->default_file);
        free(w->url);
        free(w->body);
        free(w->realm);
        free(w->role);
        free(w->sign_key);
        free(w->require_ip);
        if (w->sign_secret) {
            sodium_memzero(w->sign_secret, strlen(w->sign_secret));
            free(w->sign_secret);
        }
        for (size_t m = 0; m < w->n_mime_types; m++) {
            free(w->mime_types[m].ext);
            free(w->mime_types[m].type);
        }
        free(w->mime_types);
    }
    free(l->web);
    l->web = NULL;
    l->n_web = 0;
}
