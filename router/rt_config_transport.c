/* rt_config_transport.c: the router worker's "transports": websocket, web (one WebSocket
 * path and HTTP services: static, redirect, nodeinfo, the trace viewer, nested "path"),
 * rawsocket and universal (crossbar/common/checkconfig.py check_listening_transport_*),
 * each becoming one rt_listener (a universal transport with both parts, two). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_config_int.h"

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

/* "id" into l->id (unchanged when absent), by Crossbar's ID rule. */
static wamp_err parse_id(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    const char *id = NULL;
    wamp_err err = cfg_opt_id(c, path, o, &id);
    return err == WAMP_OK && id ? cfg_dup(c, id, &l->id) : err;
}

/* The transport's "endpoint", which every listening transport needs. */
static wamp_err parse_required_endpoint(cfg_ctx *c, const char *path, const json_t *o,
                                        rt_listener *l)
{
    const json_t *ep = json_object_get(o, "endpoint");
    cfg_path ep_path = cfg_key(path, "endpoint");
    return ep ? cfg_parse_endpoint(c, ep_path.s, ep, l) : cfg_refuse(c, ep_path.s, "is required");
}

/* Crossbar's server does not check the request path against "url"; wampscope serves a
 * "websocket" transport on the path of its "url" (default "/"). On a web path the path key
 * decides and "url" is only checked. */
static wamp_err parse_url(cfg_ctx *c, const char *path, const json_t *o, bool is_transport,
                          rt_listener *l)
{
    const char *url = NULL;
    wamp_err err = cfg_opt_str(c, path, o, "url", &url);
    if (err == WAMP_OK && url) {
        char *url_path = NULL;
        err = cfg_parse_ws_url(c, cfg_key(path, "url").s, url, &url_path);
        if (err == WAMP_OK && is_transport) {
            free(l->path);
            l->path = url_path;
            url_path = NULL;
        }
        free(url_path);
    }
    if (err == WAMP_OK && is_transport && !l->path) {
        err = cfg_dup(c, "/", &l->path);
    }
    return err;
}

/* Part by part; a refused part does not stop the next one. */
static wamp_err parse_ws_service(cfg_ctx *c, const char *path, const json_t *o, bool is_transport,
                                 const rt_limits *lim, rt_listener *l)
{
    wamp_err err = is_transport ? cfg_check_keys(c, path, o, ws_transport_rules,
                                                 N_RULES(ws_transport_rules))
                                : cfg_check_keys(c, path, o, ws_path_rules, N_RULES(ws_path_rules));
    if (err != WAMP_OK) {
        return err;
    }
    if (is_transport) {
        err = parse_id(c, path, o, l);
        err = cfg_stop(err) ? err : cfg_worse(err, parse_required_endpoint(c, path, o, l));
    } else {
        const char *id = NULL; /* checked; a web path's "id" names nothing in wampscope */
        err = cfg_opt_id(c, path, o, &id);
    }
    if (!cfg_stop(err)) {
        err = cfg_worse(err, parse_url(c, path, o, is_transport, l));
    }
    l->any_path = is_transport;
    l->ser_json = true;
    l->ser_msgpack = true;
    const json_t *sers = json_object_get(o, "serializers");
    if (sers && !cfg_stop(err)) {
        err = cfg_worse(err, cfg_parse_serializers(c, cfg_key(path, "serializers").s, sers, l));
    }
    l->max_message_size = lim->max_message_size;
    const json_t *opts = json_object_get(o, "options");
    if (opts && !cfg_stop(err)) {
        err = cfg_worse(err, cfg_parse_ws_options(c, cfg_key(path, "options").s, opts, lim, l));
    }
    if (cfg_stop(err)) {
        return err;
    }
    return cfg_worse(err,
                     cfg_parse_auth(c, cfg_key(path, "auth").s, json_object_get(o, "auth"), l));
}

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
        {"publisher", "path type \"publisher\" (HTTP bridge) is not supported yet"},
        {"webhook", "path type \"webhook\" (HTTP bridge) is not supported"},
        {"caller", "path type \"caller\" (HTTP bridge) is not supported yet"},
        {"upload", "path type \"upload\" is not supported"},
        {"archive", "path type \"archive\" is not supported"},
};

static const key_rule web_option_rules[] = {
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

/* The URL path of key under prefix ("" at the top): key "ws" serves "<prefix>/ws", key "/" the
 * prefix itself ("/" at the top), as in Crossbar's resource tree. */
static cfg_path key_prefix(const char *prefix, const char *key)
{
    cfg_path r;
    if (strcmp(key, "/") == 0) {
        snprintf(r.s, sizeof(r.s), "%s", prefix[0] ? prefix : "/");
    } else {
        snprintf(r.s, sizeof(r.s), "%s/%s", prefix, key);
    }
    return r;
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

/* Listener entries reserved by the caller for WebSocket paths after the first: each becomes a
 * listener of its own (its path, serializers, options and auth) that shares the web
 * transport's socket (shares_port), as a universal transport's RawSocket part does. */
typedef struct web_spares {
    rt_listener *l;
    size_t n;    /* entries reserved */
    size_t used; /* entries filled */
} web_spares;

typedef struct web_walk {
    const rt_limits *lim;
    bool has_ws; /* the transport has its first WebSocket path (in l) */
    web_spares *spares;
} web_walk;

/* A WebSocket path service at key path kp serving URL path url: into l if it is the
 * transport's first (*has_ws false), else into the next spare. */
static wamp_err parse_ws_path(cfg_ctx *c, const char *kp, const json_t *svc, const char *url,
                              const rt_limits *lim, rt_listener *l, web_spares *spares,
                              bool *has_ws)
{
    rt_listener *x = l;
    if (*has_ws) {
        if (spares->used >= spares->n) {
            return cfg_refuse(c, kp, "internal error: no listener reserved for this path");
        }
        x = &spares->l[spares->used++];
        x->shares_port = true;
    }
    *has_ws = true;
    x->kind = RT_TRANSPORT_WEBSOCKET;
    wamp_err e = parse_ws_service(c, kp, svc, false, lim, x);
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
        if (!web_path_key_is_valid(key)) {
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
        cfg_path url = key_prefix(prefix, key);
        rt_web_path *w = NULL;
        if (strcmp(type, "websocket") == 0) {
            e = parse_ws_path(c, kp.s, svc, url.s, ww->lim, l, ww->spares, &ww->has_ws);
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
static wamp_err parse_web_services(cfg_ctx *c, const char *pp, const json_t *paths, bool has_ws,
                                   const rt_limits *lim, rt_listener *l, web_spares *spares)
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

static wamp_err parse_web_transport(cfg_ctx *c, const char *path, const json_t *o,
                                    const rt_limits *lim, rt_listener *l, web_spares *spares)
{
    wamp_err err = cfg_check_keys(c, path, o, web_transport_rules, N_RULES(web_transport_rules));
    if (err == WAMP_OK) {
        err = parse_id(c, path, o, l);
    }
    if (err == WAMP_OK) {
        err = parse_required_endpoint(c, path, o, l);
    }
    if (err == WAMP_OK && json_object_get(o, "options")) {
        err = cfg_check_keys(c, cfg_key(path, "options").s, json_object_get(o, "options"),
                             web_option_rules, N_RULES(web_option_rules));
    }
    if (err != WAMP_OK) {
        return err;
    }
    return parse_web_services(c, cfg_key(path, "paths").s, json_object_get(o, "paths"), false, lim,
                              l, spares);
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
        K_PARSED("max_connections"), /* wampscope's; see cfg_parse_max_connections() */
};

static wamp_err parse_raw_max_size(cfg_ctx *c, const char *path, const json_t *o,
                                   const rt_limits *lim, rt_listener *l)
{
    json_int_t mms = (json_int_t)l->max_message_size;
    wamp_err err = cfg_opt_int(c, path, o, "max_message_size", KIB, GIB, "bytes", &mms);
    if (err != WAMP_OK) {
        return err;
    }
    if ((size_t)mms > lim->max_message_size) {
        return cfg_refuse(c, cfg_key(path, "max_message_size").s,
                          "%lld exceeds wampscope.limits.max_message_size (%zu bytes)",
                          (long long)mms, lim->max_message_size);
    }
    l->max_message_size = (size_t)mms;
    return WAMP_OK;
}

/* A rawsocket transport, or (with_endpoint false) the "rawsocket" part of a universal one. */
static wamp_err parse_raw_transport(cfg_ctx *c, const char *path, const json_t *o,
                                    const rt_limits *lim, rt_listener *l, bool with_endpoint)
{
    wamp_err err = cfg_check_keys(c, path, o, raw_transport_rules, N_RULES(raw_transport_rules));
    if (err == WAMP_OK) {
        err = parse_id(c, path, o, l);
    }
    if (err == WAMP_OK && !with_endpoint) {
        if (json_object_get(o, "endpoint")) {
            return cfg_refuse(c, cfg_key(path, "endpoint").s,
                              "not allowed here: the universal transport's endpoint is used");
        }
        const json_t *t = json_object_get(o, "type");
        if (t && (!json_is_string(t) || strcmp(json_string_value(t), "rawsocket") != 0)) {
            return cfg_refuse(c, cfg_key(path, "type").s, "must be \"rawsocket\"");
        }
    } else if (err == WAMP_OK) {
        err = parse_required_endpoint(c, path, o, l);
    }
    if (err != WAMP_OK) {
        return err;
    }
    l->ser_json = true;
    l->ser_msgpack = true;
    const json_t *sers = json_object_get(o, "serializers");
    if (sers) {
        err = cfg_parse_serializers(c, cfg_key(path, "serializers").s, sers, l);
        if (err != WAMP_OK) {
            return err;
        }
    }
    l->max_message_size = lim->max_message_size;
    const json_t *opts = json_object_get(o, "options");
    if (opts && json_object_get(o, "max_message_size")) {
        return cfg_refuse(c, cfg_key(path, "max_message_size").s,
                          "give it once, in \"options\" (Crossbar's current place)");
    }
    if (opts) {
        cfg_path op = cfg_key(path, "options");
        err = cfg_check_keys(c, op.s, opts, raw_option_rules, N_RULES(raw_option_rules));
        if (err == WAMP_OK) {
            err = parse_raw_max_size(c, op.s, opts, lim, l);
        }
        if (err == WAMP_OK) {
            err = cfg_parse_max_connections(c, op.s, opts, l);
        }
    } else {
        err = parse_raw_max_size(c, path, o, lim, l);
    }
    if (err != WAMP_OK) {
        return err;
    }
    return cfg_parse_auth(c, cfg_key(path, "auth").s, json_object_get(o, "auth"), l);
}

/* Crossbar's universal transport (checkconfig.py check_listening_transport_universal): one
 * port, told apart by the first octet. */
static const key_rule universal_rules[] = {
        K_PARSED("id"),        K_PARSED("type"),      K_PARSED("endpoint"),
        K_PARSED("rawsocket"), K_PARSED("websocket"), K_REFUSED("mqtt", "MQTT is not supported"),
        K_PARSED("web"),
};

/* The "web" part of a universal transport: the paths of a web transport, and its options. */
static const key_rule universal_web_rules[] = {
        K_PARSED("paths"),
        K_PARSED("options"),
};

/* The "websocket" part of a universal transport: its paths (the first in l, the others in
 * spares). */
static wamp_err parse_universal_ws(cfg_ctx *c, const char *path, const json_t *ws,
                                   const rt_limits *lim, rt_listener *l, web_spares *spares)
{
    cfg_path wp = cfg_key(path, "websocket");
    if (!json_is_object(ws) || json_object_size(ws) == 0) {
        return cfg_refuse(c, wp.s, "must be an object with at least one path");
    }
    if (l->unix_path) {
        return cfg_refuse(c, cfg_key(cfg_key(path, "endpoint").s, "type").s,
                          "Unix socket endpoints are supported for rawsocket transports only");
    }
    const char *key;
    const json_t *svc;
    wamp_err err = WAMP_OK;
    bool has_ws = false;
    json_object_foreach((json_t *)ws, key, svc)
    {
        cfg_path kp = cfg_key(wp.s, key);
        if (!web_path_key_is_valid(key)) {
            err = cfg_worse(err, cfg_refuse(c, kp.s,
                                            "a path key must be \"/\" or match "
                                            "[a-zA-Z0-9_-]+"));
            continue;
        }
        const json_t *t = json_is_object(svc) ? json_object_get(svc, "type") : NULL;
        if (t && (!json_is_string(t) || strcmp(json_string_value(t), "websocket") != 0)) {
            err = cfg_worse(err, cfg_refuse(c, cfg_key(kp.s, "type").s, "must be \"websocket\""));
            continue;
        }
        err = cfg_worse(
                err, parse_ws_path(c, kp.s, svc, key_prefix("", key).s, lim, l, spares, &has_ws));
        if (cfg_stop(err)) {
            return err;
        }
    }
    return err;
}

/* The endpoint of the listener that owns the socket, copied into a listener sharing it. */
static wamp_err copy_endpoint(cfg_ctx *c, const rt_listener *l, rt_listener *x)
{
    x->port = l->port;
    wamp_err err = l->interface ? cfg_dup(c, l->interface, &x->interface) : WAMP_OK;
    if (err == WAMP_OK && l->tls_certificate) {
        err = cfg_dup(c, l->tls_certificate, &x->tls_certificate);
        if (err == WAMP_OK) {
            err = cfg_dup(c, l->tls_key, &x->tls_key);
        }
        if (err == WAMP_OK && l->tls_ciphers) {
            err = cfg_dup(c, l->tls_ciphers, &x->tls_ciphers);
        }
    }
    return err;
}

/* A universal transport: l gets the endpoint and the WebSocket part (or the RawSocket part when
 * there is no WebSocket or web part); with both kinds of parts, the first spare (reserved by the
 * caller) gets the RawSocket part and shares l's port, and the web part's WebSocket paths after
 * the first fill the spares after it. */
static wamp_err parse_universal(cfg_ctx *c, const char *path, const json_t *o, const rt_limits *lim,
                                rt_listener *l, web_spares *spares)
{
    wamp_err err = cfg_check_keys(c, path, o, universal_rules, N_RULES(universal_rules));
    if (err == WAMP_OK) {
        err = parse_id(c, path, o, l);
    }
    if (err == WAMP_OK) {
        err = parse_required_endpoint(c, path, o, l);
    }
    if (err != WAMP_OK) {
        return err;
    }
    const json_t *rs = json_object_get(o, "rawsocket");
    const json_t *ws = json_object_get(o, "websocket");
    const json_t *web = json_object_get(o, "web");
    if (!rs && !ws && !web) {
        return cfg_refuse(c, path,
                          "needs a \"rawsocket\", \"websocket\" or \"web\" part (or several)");
    }
    if (ws) {
        err = parse_universal_ws(c, path, ws, lim, l, spares);
    }
    /* The RawSocket part's entry comes first, filled below. */
    rt_listener *raw = NULL;
    if (rs && (ws || web) && spares->used < spares->n) {
        raw = &spares->l[spares->used++];
    }
    if (web && err == WAMP_OK) {
        cfg_path wp = cfg_key(path, "web");
        l->kind = RT_TRANSPORT_WEBSOCKET;
        err = cfg_check_keys(c, wp.s, web, universal_web_rules, N_RULES(universal_web_rules));
        if (err == WAMP_OK && json_object_get(web, "options")) {
            err = cfg_check_keys(c, cfg_key(wp.s, "options").s, json_object_get(web, "options"),
                                 web_option_rules, N_RULES(web_option_rules));
        }
        if (err == WAMP_OK) {
            err = parse_web_services(c, cfg_key(wp.s, "paths").s, json_object_get(web, "paths"),
                                     ws != NULL, lim, l, spares);
        }
        if (err == WAMP_OK && l->unix_path) {
            err = cfg_refuse(c, cfg_key(cfg_key(path, "endpoint").s, "type").s,
                             "Unix socket endpoints are supported for rawsocket transports only");
        }
    }
    if (err != WAMP_OK || !rs) {
        return err;
    }
    cfg_path rp = cfg_key(path, "rawsocket");
    if (!json_is_object(rs)) {
        return cfg_refuse(c, rp.s, "must be an object");
    }
    if (!ws && !web) {
        l->kind = RT_TRANSPORT_RAWSOCKET;
        return parse_raw_transport(c, rp.s, rs, lim, l, false);
    }
    /* Both parts: the RawSocket part is a listener of its own that shares l's socket. Its ID is
     * the part's "id", else "<transport id>_rawsocket" (set by the caller once l->id is). */
    if (!raw) {
        return cfg_refuse(c, path, "internal error: no listener reserved for the rawsocket part");
    }
    raw->kind = RT_TRANSPORT_RAWSOCKET;
    raw->shares_port = true;
    err = parse_raw_transport(c, rp.s, rs, lim, raw, false);
    return err == WAMP_OK ? copy_endpoint(c, l, raw) : err;
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

/* The default ID of a further WebSocket path: "<transport id>_<path>", lower case, with every
 * character Crossbar's ID rule does not allow as '_' ("transport1_ws2", "web1_my_app_ws" for
 * "/My-App/ws"). */
static wamp_err path_listener_id(cfg_ctx *c, const rt_listener *l, rt_listener *x)
{
    char buf[CFG_PATH_MAX];
    snprintf(buf, sizeof(buf), "%s_%s", l->id, x->path[1] ? x->path + 1 : "root");
    for (char *p = buf; *p; p++) {
        char ch = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        *p = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ? ch : '_';
    }
    return cfg_dup(c, buf, &x->id);
}

/* spares: the entries the caller reserved after l for the listeners that share l's socket (a
 * universal transport's RawSocket part, WebSocket paths after the first); spares->used says how
 * many were filled. */
static wamp_err parse_transport(cfg_ctx *c, const char *path, const json_t *o, size_t index,
                                const rt_limits *lim, rt_listener *l, web_spares *spares)
{
    const char *type = NULL;
    wamp_err err = cfg_check_type(c, path, o, transport_types, N_RULES(transport_types), &type);
    if (err != WAMP_OK) {
        return err;
    }
    l->kind = RT_TRANSPORT_WEBSOCKET;
    if (strcmp(type, "universal") == 0) {
        err = parse_universal(c, path, o, lim, l, spares);
    } else if (strcmp(type, "rawsocket") == 0) {
        l->kind = RT_TRANSPORT_RAWSOCKET;
        err = parse_raw_transport(c, path, o, lim, l, true);
    } else {
        err = strcmp(type, "web") == 0 ? parse_web_transport(c, path, o, lim, l, spares)
                                       : parse_ws_service(c, path, o, true, lim, l);
        if (err == WAMP_OK && l->unix_path) {
            err = cfg_refuse(c, cfg_key(cfg_key(path, "endpoint").s, "type").s,
                             "Unix socket endpoints are supported for rawsocket transports only");
        }
    }
    if (err == WAMP_OK && !l->id) {
        /* Crossbar numbers unnamed transports "transport1", "transport2", ... */
        char buf[32];
        snprintf(buf, sizeof(buf), "transport%zu", index + 1);
        err = cfg_dup(c, buf, &l->id);
    }
    for (size_t k = 0; err == WAMP_OK && k < spares->used; k++) {
        rt_listener *x = &spares->l[k];
        if (x->kind == RT_TRANSPORT_RAWSOCKET) {
            if (!x->id) {
                char buf[96];
                snprintf(buf, sizeof(buf), "%s_rawsocket", l->id);
                err = cfg_dup(c, buf, &x->id);
            }
            continue; /* its endpoint was copied by parse_universal() */
        }
        err = copy_endpoint(c, l, x);
        if (err == WAMP_OK && !x->id) {
            err = path_listener_id(c, l, x);
        }
    }
    return err;
}

static bool same_interface(const char *a, const char *b)
{
    /* NULL = all interfaces, which clashes with every address on that port. */
    return !a || !b || strcmp(a, b) == 0;
}

/* "type": "websocket" services in a "paths" object, nested "path" services included. */
static size_t count_ws_paths(const json_t *paths, int depth)
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
            n += count_ws_paths(json_object_get(svc, "paths"), depth + 1);
        }
    }
    return n;
}

/* A universal transport with a RawSocket part next to a WebSocket or web part becomes two
 * listeners; every WebSocket path of a web transport (or web part) after the first one more. */
static size_t count_listeners(const json_t *transports)
{
    size_t n = json_array_size(transports);
    for (size_t i = 0; i < json_array_size(transports); i++) {
        const json_t *t = json_array_get(transports, i);
        const char *ty = json_string_value(json_object_get(t, "type"));
        const json_t *ws = json_object_get(t, "websocket");
        const json_t *web = json_object_get(t, "web");
        size_t n_ws = 0;
        if (ty && strcmp(ty, "universal") == 0) {
            if (json_object_get(t, "rawsocket") && (ws || web)) {
                n++;
            }
            n_ws = (json_is_object(ws) ? json_object_size(ws) : 0) +
                   count_ws_paths(json_object_get(web, "paths"), 0);
        } else if (ty && strcmp(ty, "web") == 0) {
            n_ws = count_ws_paths(json_object_get(t, "paths"), 0);
        }
        n += n_ws > 1 ? n_ws - 1 : 0;
    }
    return n;
}

/* Listener k (of transport path ip) against the earlier ones: IDs, Unix paths and TCP ports are
 * unique. tix maps a listener back to its transport for messages. */
static wamp_err check_unique(cfg_ctx *c, const char *ip, const rt_config *cfg, size_t k,
                             const size_t *tix)
{
    const rt_listener *l = &cfg->listeners[k];
    for (size_t j = 0; j < k; j++) {
        const rt_listener *m = &cfg->listeners[j];
        if (l->id && m->id && strcmp(l->id, m->id) == 0) {
            return cfg_refuse(c, cfg_key(ip, l->shares_port ? "rawsocket.id" : "id").s,
                              "transport ID \"%s\" is already used by transports[%zu]", l->id,
                              tix[j]);
        }
        if (l->unix_path && m->unix_path && strcmp(l->unix_path, m->unix_path) == 0) {
            return cfg_refuse(c, cfg_key(cfg_key(ip, "endpoint").s, "path").s,
                              "\"%s\" is already used by transports[%zu]", l->unix_path, tix[j]);
        }
        if (!l->unix_path && !m->unix_path && !l->shares_port && l->port != 0 &&
            l->port == m->port && same_interface(l->interface, m->interface)) {
            return cfg_refuse(c, cfg_key(cfg_key(ip, "endpoint").s, "port").s,
                              "port %d is already used by transports[%zu]", l->port, tix[j]);
        }
    }
    return WAMP_OK;
}

wamp_err cfg_parse_transports(cfg_ctx *c, const char *path, const json_t *w, rt_config *cfg)
{
    const json_t *transports = json_object_get(w, "transports");
    cfg_path tp = cfg_key(path, "transports");
    if (transports && !json_is_array(transports)) {
        return cfg_refuse(c, tp.s, "must be a list");
    }
    size_t n = transports ? json_array_size(transports) : 0;
    if (n == 0) {
        return cfg_refuse(c, tp.s, "at least one transport is required");
    }
    size_t n_listeners = count_listeners(transports);
    cfg->listeners = calloc(n_listeners, sizeof(*cfg->listeners));
    size_t *tix = calloc(n_listeners, sizeof(*tix));
    if (!cfg->listeners || !tix) {
        free(tix);
        return cfg_oom(c);
    }
    cfg->n_listeners = n_listeners;
    wamp_err err = WAMP_OK;
    size_t li = 0;
    for (size_t i = 0; i < n && !cfg_stop(err); i++) {
        cfg_path ip = cfg_index(tp.s, i);
        rt_listener *l = &cfg->listeners[li];
        web_spares spares = {.l = l + 1, .n = n_listeners - li - 1};
        wamp_err e = parse_transport(c, ip.s, json_array_get(transports, i), i, &cfg->limits, l,
                                     &spares);
        size_t first = li;
        tix[li++] = i;
        for (size_t k = 0; k < spares.used; k++) {
            cfg->listeners[li].shares_port_of = first;
            tix[li++] = i;
        }
        /* A refused transport's fields may be missing: it is not compared. */
        for (size_t k = first; k < li && e == WAMP_OK; k++) {
            e = check_unique(c, ip.s, cfg, k, tix);
        }
        err = cfg_worse(err, e);
    }
    free(tix);
    return err;
}

void cfg_free_listeners(rt_config *cfg)
{
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
        cfg_free_auth(&l->auth);
        for (size_t k = 0; k < l->n_web; k++) {
            rt_web_path *w = &l->web[k];
            free(w->prefix);
            free(w->directory);
            free(w->default_file);
            free(w->url);
            free(w->body);
            for (size_t m = 0; m < w->n_mime_types; m++) {
                free(w->mime_types[m].ext);
                free(w->mime_types[m].type);
            }
            free(w->mime_types);
        }
        free(l->web);
    }
    free(cfg->listeners);
}
