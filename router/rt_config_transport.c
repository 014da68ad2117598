/* rt_config_transport.c: the router worker's "transports": websocket, web (its paths in
 * rt_config_web.c), rawsocket and universal (crossbar/common/checkconfig.py
 * check_listening_transport_*), each becoming one rt_listener, plus one per part that shares
 * its socket: a universal transport's RawSocket part next to WebSocket or web parts, and every
 * WebSocket path after the first. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_config_int.h"

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

static wamp_err parse_web_transport(cfg_ctx *c, const char *path, const json_t *o,
                                    const rt_limits *lim, rt_listener *l, cfg_spares *spares)
{
    wamp_err err = cfg_check_keys(c, path, o, web_transport_rules, N_RULES(web_transport_rules));
    if (err == WAMP_OK) {
        err = cfg_parse_listener_id(c, path, o, l);
    }
    if (err == WAMP_OK) {
        err = cfg_parse_required_endpoint(c, path, o, l);
    }
    if (err == WAMP_OK && json_object_get(o, "options")) {
        err = cfg_check_keys(c, cfg_key(path, "options").s, json_object_get(o, "options"),
                             web_option_rules, N_RULES(web_option_rules));
    }
    if (err != WAMP_OK) {
        return err;
    }
    return cfg_parse_web_services(c, cfg_key(path, "paths").s, json_object_get(o, "paths"), false,
                                  lim, l, spares);
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
        err = cfg_parse_listener_id(c, path, o, l);
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
        err = cfg_parse_required_endpoint(c, path, o, l);
    }
    if (err != WAMP_OK) {
        return err;
    }
    l->ser_json = true;
    l->ser_msgpack = true;
    l->ser_cbor = true;
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
                                   const rt_limits *lim, rt_listener *l, cfg_spares *spares)
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
        if (!cfg_web_path_key_is_valid(key)) {
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
        cfg_path url;
        wamp_err e = cfg_web_url(c, kp.s, "", key, &url);
        err = cfg_worse(
                err,
                e == WAMP_OK ? cfg_parse_ws_path(c, kp.s, svc, url.s, lim, l, spares, &has_ws) : e);
        if (cfg_stop(err)) {
            return err;
        }
    }
    return err;
}

/* A top-level key of the web part's paths that the websocket part has too: both would serve one
 * URL path, and the request would reach only one of them. (Nested keys serve longer paths.) */
static wamp_err check_web_keys(cfg_ctx *c, const char *path, const json_t *ws, const json_t *web)
{
    const json_t *paths = json_object_get(web, "paths");
    if (!json_is_object(ws) || !json_is_object(paths)) {
        return WAMP_OK;
    }
    cfg_path pp = cfg_key(cfg_key(path, "web").s, "paths");
    const char *key;
    const json_t *svc;
    wamp_err err = WAMP_OK;
    json_object_foreach((json_t *)paths, key, svc)
    {
        if (json_object_get(ws, key)) {
            err = cfg_refuse(c, cfg_key(pp.s, key).s, "path \"%s\" is served by %s already",
                             cfg_web_key_prefix("", key).s, cfg_key("websocket", key).s);
        }
    }
    return err;
}

/* The endpoint of the listener that owns the socket, copied into a listener sharing it. */
static wamp_err copy_endpoint(cfg_ctx *c, const rt_listener *l, rt_listener *x)
{
    x->port = l->port;
    x->shared = l->shared;
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
                                rt_listener *l, cfg_spares *spares)
{
    wamp_err err = cfg_check_keys(c, path, o, universal_rules, N_RULES(universal_rules));
    if (err == WAMP_OK) {
        err = cfg_parse_listener_id(c, path, o, l);
    }
    if (err == WAMP_OK) {
        err = cfg_parse_required_endpoint(c, path, o, l);
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
        spares->kp[spares->used] = cfg_key(path, "rawsocket");
        raw = &spares->l[spares->used++];
    }
    if (web && err == WAMP_OK) {
        cfg_path wp = cfg_key(path, "web");
        l->kind = RT_TRANSPORT_WEBSOCKET;
        err = cfg_check_keys(c, wp.s, web, universal_web_rules, N_RULES(universal_web_rules));
        if (err == WAMP_OK && ws) {
            err = check_web_keys(c, path, ws, web);
        }
        if (err == WAMP_OK && json_object_get(web, "options")) {
            err = cfg_check_keys(c, cfg_key(wp.s, "options").s, json_object_get(web, "options"),
                                 web_option_rules, N_RULES(web_option_rules));
        }
        if (err == WAMP_OK) {
            err = cfg_parse_web_services(c, cfg_key(wp.s, "paths").s, json_object_get(web, "paths"),
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
                                const rt_limits *lim, rt_listener *l, cfg_spares *spares)
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
                                       : cfg_parse_ws_service(c, path, o, true, lim, l);
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
                   cfg_count_ws_paths(json_object_get(web, "paths"));
        } else if (ty && strcmp(ty, "web") == 0) {
            n_ws = cfg_count_ws_paths(json_object_get(t, "paths"));
        }
        n += n_ws > 1 ? n_ws - 1 : 0;
    }
    return n;
}

/* Listener k (of transport path ip) against the earlier ones: IDs, Unix paths and TCP ports are
 * unique. tix maps a listener back to its transport for messages; kp gives the key path of the
 * part a listener sharing its transport's socket comes from (a RawSocket part, a WebSocket
 * path), whose "id" a clash names. */
static wamp_err check_unique(cfg_ctx *c, const char *ip, const rt_config *cfg, size_t k,
                             const size_t *tix, const cfg_path *kp)
{
    const rt_listener *l = &cfg->listeners[k];
    for (size_t j = 0; j < k; j++) {
        const rt_listener *m = &cfg->listeners[j];
        if (l->id && m->id && strcmp(l->id, m->id) == 0) {
            return cfg_refuse(c, cfg_key(l->shares_port ? kp[k].s : ip, "id").s,
                              "transport ID \"%s\" is already used by transports[%zu]", l->id,
                              tix[j]);
        }
        if (l->unix_path && m->unix_path && strcmp(l->unix_path, m->unix_path) == 0) {
            return cfg_refuse(c, cfg_key(cfg_key(ip, "endpoint").s, "path").s,
                              "\"%s\" is already used by transports[%zu]", l->unix_path, tix[j]);
        }
        if (!l->unix_path && !m->unix_path && !l->shares_port && l->port != 0 &&
            l->port == m->port && rt_config_interfaces_overlap(l->interface, m->interface)) {
            return cfg_refuse(c, cfg_key(cfg_key(ip, "endpoint").s, "port").s,
                              "port %d is already used by transports[%zu]", l->port, tix[j]);
        }
    }
    return WAMP_OK;
}

/* The metrics listener (parsed before the transports) against the transports' TCP ports: on one
 * address and port, libwebsockets hands the one listening socket to the transport, and the
 * metrics would never be served. */
static wamp_err check_metrics_port(cfg_ctx *c, const char *path, const rt_config *cfg,
                                   const size_t *tix)
{
    size_t k = cfg->metrics_enabled && cfg->metrics_port != 0
                       ? rt_config_listener_on_port(cfg, SIZE_MAX, cfg->metrics_interface,
                                                    cfg->metrics_port)
                       : cfg->n_listeners;
    if (k == cfg->n_listeners) {
        return WAMP_OK;
    }
    cfg_path mp = cfg_key(cfg_key(path, "wampscope").s, "metrics");
    return cfg_refuse(c, cfg_key(cfg_key(mp.s, "endpoint").s, "port").s,
                      "port %d is already used by transports[%zu]", cfg->metrics_port, tix[k]);
}

size_t rt_config_listener_on_port(const rt_config *cfg, size_t skip, const char *iface, int port)
{
    for (size_t k = 0; k < cfg->n_listeners; k++) {
        const rt_listener *l = &cfg->listeners[k];
        if (k != skip && !l->unix_path && !l->shares_port && l->port == port &&
            rt_config_interfaces_overlap(l->interface, iface)) {
            return k;
        }
    }
    return cfg->n_listeners;
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
    cfg_path *kp = calloc(n_listeners, sizeof(*kp));
    if (!cfg->listeners || !tix || !kp) {
        free(tix);
        free(kp);
        return cfg_oom(c);
    }
    cfg->n_listeners = n_listeners;
    wamp_err err = WAMP_OK;
    size_t li = 0;
    for (size_t i = 0; i < n && !cfg_stop(err); i++) {
        cfg_path ip = cfg_index(tp.s, i);
        rt_listener *l = &cfg->listeners[li];
        cfg_spares spares = {.l = l + 1, .kp = kp + li + 1, .n = n_listeners - li - 1};
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
            e = check_unique(c, ip.s, cfg, k, tix, kp);
        }
        err = cfg_worse(err, e);
    }
    if (!cfg_stop(err)) {
        err = cfg_worse(err, check_metrics_port(c, path, cfg, tix));
    }
    free(tix);
    free(kp);
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
        cfg_free_web_paths(l);
    }
    free(cfg->listeners);
}
