/* rt_config_cluster.c: the worker's "wampscope.cluster" object (configs/README.md, "cluster"):
 * the NATS servers and credentials, the cluster name, and the link's timeouts and limit. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "rt_cluster.h"
#include "rt_config_int.h"

#define DEF_CLUSTER_NAME "wampscope"

/* clang-format off */
#define CLUSTER(k, ty, m, d, l, h, u) CFG_FIELD(k, ty, rt_cluster_config, m, d, l, h, u)
static const cfg_field cluster_fields[] = {
    CLUSTER("connect_timeout",    CFG_U32,  connect_timeout_ms, 2000, 100, 60000, "ms"),
    CLUSTER("reconnect_wait",     CFG_U32,  reconnect_wait_ms,  1000, 100, 60000, "ms"),
    CLUSTER("request_timeout",    CFG_U32,  request_timeout_ms, 2000, 100, 60000, "ms"),
    CLUSTER("heartbeat_interval", CFG_U32,  heartbeat_ms,       1000, 100, 60000, "ms"),
    CLUSTER("node_ttl",           CFG_U32,  node_ttl_ms,        4000, 1000, 600000, "ms"),
    CLUSTER("max_pending_bytes",  CFG_SIZE, max_pending_bytes,  8 * MIB, 64 * KIB, GIB, "bytes"),
    CLUSTER("max_calls",          CFG_SIZE, max_calls,          10000, 1, 1000000, NULL),
    CLUSTER("max_registrations",  CFG_SIZE, max_registrations,  100000, 1, 10000000, NULL),
    CLUSTER("send_asap",          CFG_BOOL, send_asap,          0, 0, 1, NULL),
    CLUSTER("max_clock_offset",   CFG_U32,  max_clock_offset_ms, 1000, 0, 3600000, "ms"),
};
/* clang-format on */

static const key_rule cluster_rules[] = {
        K_PARSED("name"),
        K_PARSED("nats"),
};

static const key_rule nats_rules[] = {
        K_PARSED("servers"), K_PARSED("user"),  K_PARSED("password"),
        K_PARSED("token"),   K_PARSED("creds"), K_PARSED("tls"),
};

static const key_rule nats_tls_rules[] = {
        K_PARSED("ca"),
        K_PARSED("certificate"),
        K_PARSED("key"),
};

static wamp_err parse_server(cfg_ctx *c, const char *path, const json_t *v, void *items, size_t i,
                             void *arg)
{
    (void)arg;
    char **servers = items;
    const char *url = json_string_value(v);
    if (!url) {
        return cfg_refuse(c, path, "must be a string (\"nats://host:port\")");
    }
    if (strncmp(url, "nats://", 7) != 0 && strncmp(url, "tls://", 6) != 0) {
        return cfg_refuse(c, path, "must be a nats:// or tls:// URL (got \"%s\")", url);
    }
    return cfg_dup(c, url, &servers[i]);
}

static wamp_err parse_nats_tls(cfg_ctx *c, const char *path, const json_t *o, rt_cluster_config *cl)
{
    if (!json_is_object(o)) {
        return cfg_refuse(c, path, "must be an object {\"ca\", \"certificate\", \"key\"}");
    }
    wamp_err err = cfg_check_keys(c, path, o, nats_tls_rules, N_RULES(nats_tls_rules));
    if (err != WAMP_OK) {
        return err;
    }
    cl->tls = true;
    if (json_object_get(o, "ca")) {
        err = cfg_readable_file(c, path, o, "ca", &cl->tls_ca);
    }
    bool cert = json_object_get(o, "certificate") != NULL;
    bool key = json_object_get(o, "key") != NULL;
    if (cert != key) {
        return cfg_worse(err, cfg_refuse(c, path, "\"certificate\" and \"key\" go together"));
    }
    if (cert) {
        err = cfg_worse(err, cfg_readable_file(c, path, o, "certificate", &cl->tls_certificate));
        err = cfg_worse(err, cfg_readable_file(c, path, o, "key", &cl->tls_key));
    }
    return err;
}

static wamp_err parse_nats(cfg_ctx *c, const char *path, const json_t *o, rt_cluster_config *cl)
{
    if (!json_is_object(o)) {
        return cfg_refuse(c, path, "must be an object {\"servers\": [\"nats://host:port\"]}");
    }
    wamp_err err = cfg_check_keys(c, path, o, nats_rules, N_RULES(nats_rules));
    if (err != WAMP_OK) {
        return err;
    }
    const json_t *servers = json_object_get(o, "servers");
    cfg_path sp = cfg_key(path, "servers");
    if (!json_is_array(servers) || json_array_size(servers) == 0) {
        err = cfg_refuse(c, sp.s, "must be a non-empty list of nats:// URLs");
    } else {
        void *items = NULL;
        err = cfg_parse_list(c, sp.s, servers, sizeof(char *), parse_server, NULL, &items,
                             &cl->n_servers);
        cl->servers = items;
    }
    const char *user = NULL, *password = NULL, *token = NULL;
    err = cfg_worse(err, cfg_opt_str(c, path, o, "user", &user));
    err = cfg_worse(err, cfg_opt_str(c, path, o, "password", &password));
    err = cfg_worse(err, cfg_opt_str(c, path, o, "token", &token));
    if (cfg_stop(err)) {
        return err;
    }
    bool creds = json_object_get(o, "creds") != NULL;
    if (!user != !password) {
        err = cfg_worse(err, cfg_refuse(c, path, "\"user\" and \"password\" go together"));
    } else if ((user ? 1 : 0) + (token ? 1 : 0) + (creds ? 1 : 0) > 1) {
        err = cfg_worse(err, cfg_refuse(c, path,
                                        "give one of \"user\"/\"password\", \"token\" or "
                                        "\"creds\""));
    }
    if (user && password) {
        err = cfg_worse(err, cfg_dup(c, user, &cl->user));
        err = cfg_worse(err, cfg_dup(c, password, &cl->password));
    }
    if (token) {
        err = cfg_worse(err, cfg_dup(c, token, &cl->token));
    }
    if (creds) {
        err = cfg_worse(err, cfg_readable_file(c, path, o, "creds", &cl->creds));
    }
    const json_t *tls = json_object_get(o, "tls");
    if (tls && !cfg_stop(err)) {
        err = cfg_worse(err, parse_nats_tls(c, cfg_key(path, "tls").s, tls, cl));
    }
    return err;
}

wamp_err cfg_parse_cluster(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    if (!json_is_object(o)) {
        return cfg_refuse(c, path, "must be an object {\"nats\": {\"servers\": [...]}}");
    }
    rt_cluster_config *cl = calloc(1, sizeof(*cl));
    if (!cl) {
        return cfg_oom(c);
    }
    cfg->cluster = cl;
    cfg_fields_default(cluster_fields, N_RULES(cluster_fields), cl);
    wamp_err err = cfg_dup(c, DEF_CLUSTER_NAME, &cl->name);
    if (err != WAMP_OK) {
        return err;
    }
    err = cfg_check_keys_fields(c, path, o, cluster_rules, N_RULES(cluster_rules), cluster_fields,
                                N_RULES(cluster_fields));
    if (err != WAMP_OK) {
        return err;
    }
    err = cfg_fields_parse(c, path, o, cluster_fields, N_RULES(cluster_fields), cl);
    if (err == WAMP_OK && cl->node_ttl_ms < 2 * cl->heartbeat_ms) {
        err = cfg_refuse(c, cfg_key(path, "node_ttl").s,
                         "must be at least twice heartbeat_interval (%u ms), so that one lost "
                         "heartbeat does not drop a live node",
                         (unsigned)cl->heartbeat_ms);
    }
    const char *name = NULL;
    wamp_err e = cfg_opt_str(c, path, o, "name", &name);
    if (e == WAMP_OK && name && !rt_cluster_token_is_valid(name)) {
        e = cfg_refuse(c, cfg_key(path, "name").s,
                       "must be 1..%d letters, digits, '-' or '_' (got \"%s\")",
                       RT_CLUSTER_TOKEN_MAX, name);
    } else if (e == WAMP_OK && name) {
        e = cfg_dup(c, name, &cl->name);
    }
    err = cfg_worse(err, e);
    const json_t *nats = json_object_get(o, "nats");
    if (!nats) {
        return cfg_worse(err, cfg_refuse(c, cfg_key(path, "nats").s,
                                         "required: {\"servers\": [\"nats://host:port\"]}"));
    }
    if (!cfg_stop(err)) {
        err = cfg_worse(err, parse_nats(c, cfg_key(path, "nats").s, nats, cl));
    }
    return err;
}

wamp_err cfg_check_cluster_node_id(cfg_ctx *c, const rt_config *cfg)
{
    if (!cfg->cluster || rt_cluster_token_is_valid(cfg->node_id)) {
        return WAMP_OK;
    }
    return cfg_refuse(c, "controller.id",
                      "\"%s\" cannot be a cluster node id: with wampscope.cluster, set it to 1..%d "
                      "letters, digits, '-' or '_', unique in the cluster",
                      cfg->node_id ? cfg->node_id : "", RT_CLUSTER_TOKEN_MAX);
}

static void free_secret(char *s)
{
    if (s) {
        sodium_memzero(s, strlen(s));
        free(s);
    }
}

void cfg_free_cluster(rt_config *cfg)
{
    rt_cluster_config *cl = cfg->cluster;
    if (!cl) {
        return;
    }
    for (size_t i = 0; cl->servers && i < cl->n_servers; i++) {
        free(cl->servers[i]);
    }
    free(cl->servers);
    free(cl->name);
    free(cl->user);
    free_secret(cl->password);
    free_secret(cl->token);
    free(cl->creds);
    free(cl->tls_ca);
    free(cl->tls_certificate);
    free(cl->tls_key);
    free(cl);
    cfg->cluster = NULL;
}
