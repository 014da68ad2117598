/* rt_config_ws.c: a WebSocket service, as a "websocket" transport or a web transport's
 * "websocket" path (both parsers use it), and the id and endpoint every listening transport has. */
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
wamp_err cfg_parse_listener_id(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    const char *id = NULL;
    wamp_err err = cfg_opt_id(c, path, o, &id);
    return err == WAMP_OK && id ? cfg_dup(c, id, &l->id) : err;
}

/* The transport's "endpoint", which every listening transport needs. */
wamp_err cfg_parse_required_endpoint(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
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
wamp_err cfg_parse_ws_service(cfg_ctx *c, const char *path, const json_t *o, bool is_transport,
                              const rt_limits *lim, rt_listener *l)
{
    wamp_err err = is_transport ? cfg_check_keys(c, path, o, ws_transport_rules,
                                                 N_RULES(ws_transport_rules))
                                : cfg_check_keys(c, path, o, ws_path_rules, N_RULES(ws_path_rules));
    if (err != WAMP_OK) {
        return err;
    }
    if (is_transport) {
        err = cfg_parse_listener_id(c, path, o, l);
        err = cfg_stop(err) ? err : cfg_worse(err, cfg_parse_required_endpoint(c, path, o, l));
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
    l->ser_cbor = true;
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
