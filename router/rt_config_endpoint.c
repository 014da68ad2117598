/* rt_config_endpoint.c: a transport's listening endpoint (TCP, Unix, TLS), its "serializers"
 * and its WebSocket options (crossbar/common/checkconfig.py check_listening_endpoint_*,
 * check_websocket_options). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "rt_config_int.h"
#include "wamp_types.h"

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
        /* SO_REUSEPORT: several processes (nodes of a cluster) listen on one port. */
        K_PARSED("shared"),
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

/* dir + "/" + name into a new string in *out; -1 when out of memory. */
static int asprintf_path(const char *dir, const char *name, char **out)
{
    size_t n = strlen(dir) + 1 + strlen(name) + 1;
    *out = malloc(n);
    if (!*out) {
        return -1;
    }
    snprintf(*out, n, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    return 0;
}

wamp_err cfg_readable_file(cfg_ctx *c, const char *path, const json_t *o, const char *key,
                           char **out)
{
    const char *name = NULL;
    wamp_err err = cfg_req_str(c, path, o, key, &name);
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path kp = cfg_key(path, key);
    if (!name[0]) {
        return cfg_refuse(c, kp.s, "must not be empty");
    }
    /* Crossbar opens a relative name in its node directory, where the config file is. */
    char *file = NULL;
    if (name[0] == '/' || !c->base_dir) {
        file = strdup(name);
    } else if (asprintf_path(c->base_dir, name, &file) != 0) {
        file = NULL;
    }
    if (!file) {
        return cfg_oom(c);
    }
    /* fopen() also opens a directory, whose reads then fail. */
    FILE *f = fopen(file, "rb");
    struct stat st;
    int e = !f ? errno : fstat(fileno(f), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (f) {
        fclose(f);
    }
    if (e) {
        err = cfg_refuse(c, kp.s, "cannot read \"%s\": %s", file, strerror(e));
        free(file);
        return err;
    }
    free(*out);
    *out = file;
    return WAMP_OK;
}

static wamp_err parse_tls(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    wamp_err err = cfg_check_keys(c, path, o, tls_rules, N_RULES(tls_rules));
    if (err == WAMP_OK) {
        err = cfg_readable_file(c, path, o, "certificate", &l->tls_certificate);
    }
    if (err == WAMP_OK) {
        err = cfg_readable_file(c, path, o, "key", &l->tls_key);
    }
    const char *ciphers = NULL;
    if (err == WAMP_OK) {
        err = cfg_opt_str(c, path, o, "ciphers", &ciphers);
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (ciphers && !ciphers[0]) {
        return cfg_refuse(c, cfg_key(path, "ciphers").s, "must not be empty");
    }
    return ciphers ? cfg_dup(c, ciphers, &l->tls_ciphers) : WAMP_OK;
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
    wamp_err err = cfg_check_keys(c, path, o, unix_endpoint_rules, N_RULES(unix_endpoint_rules));
    const char *sp = NULL;
    if (err == WAMP_OK) {
        err = cfg_req_str(c, path, o, "path", &sp);
    }
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path pp = cfg_key(path, "path");
    if (!sp[0]) {
        return cfg_refuse(c, pp.s, "must not be empty");
    }
    if (strlen(sp) > UNIX_PATH_MAX) {
        return cfg_refuse(c, pp.s, "is longer than %d bytes (the limit of a Unix socket path)",
                          UNIX_PATH_MAX);
    }
    /* lws treats a leading '@' as Linux's abstract namespace: keep to files. */
    if (sp[0] == '@') {
        return cfg_refuse(c, pp.s, "abstract Unix sockets (\"@name\") are not supported");
    }
    return cfg_dup(c, sp, &l->unix_path);
}

wamp_err cfg_parse_endpoint(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    const char *type = NULL;
    wamp_err err = cfg_check_type(c, path, o, endpoint_types, N_RULES(endpoint_types), &type);
    if (err == WAMP_OK && strcmp(type, "unix") == 0) {
        return parse_unix_endpoint(c, path, o, l);
    }
    if (err == WAMP_OK) {
        err = cfg_check_keys(c, path, o, endpoint_rules, N_RULES(endpoint_rules));
    }
    if (err != WAMP_OK) {
        return err;
    }
    if (!json_object_get(o, "port")) {
        return cfg_refuse(c, cfg_key(path, "port").s, "is required");
    }
    json_int_t port = 0;
    err = cfg_opt_int(c, path, o, "port", 0, 65535, NULL, &port);
    if (err != WAMP_OK) {
        return err;
    }
    l->port = (int)port;
    err = cfg_opt_bool(c, path, o, "shared", &l->shared);
    if (err != WAMP_OK) {
        return err;
    }

    const char *iface = NULL;
    err = cfg_opt_str(c, path, o, "interface", &iface);
    if (err != WAMP_OK) {
        return err;
    }
    if (iface && !iface[0]) {
        return cfg_refuse(c, cfg_key(path, "interface").s,
                          "must not be empty (remove it to listen on all interfaces)");
    }
    if (iface) {
        err = cfg_dup(c, iface, &l->interface);
        if (err != WAMP_OK) {
            return err;
        }
    }

    /* The address family follows the interface address; without one, lws listens on all
     * IPv4 interfaces, which is what "version": 4 (Crossbar's default) means. */
    json_int_t version = 4;
    const json_t *vv = json_object_get(o, "version");
    cfg_path vp = cfg_key(path, "version");
    if (vv &&
        (!json_is_integer(vv) || (json_integer_value(vv) != 4 && json_integer_value(vv) != 6))) {
        return cfg_refuse(c, vp.s, "must be 4 or 6");
    }
    if (vv) {
        version = json_integer_value(vv);
    }
    if (version == 6 && !iface) {
        return cfg_refuse(c, vp.s,
                          "6 needs an explicit \"interface\" (e.g. \"::\" for all IPv6 "
                          "interfaces)");
    }
    bool v6_literal = iface && strchr(iface, ':') != NULL;
    bool v4_literal = iface && iface[strspn(iface, "0123456789.")] == '\0';
    if ((version == 4 && v6_literal) || (version == 6 && v4_literal)) {
        return cfg_refuse(c, vp.s, "%lld does not match interface \"%s\"", (long long)version,
                          iface);
    }
    if (l->shared && iface && !v4_literal && !v6_literal) {
        return cfg_refuse(c, cfg_key(path, "interface").s,
                          "must be an IP address with \"shared\": true (got \"%s\")", iface);
    }
    const json_t *tls = json_object_get(o, "tls");
    return tls ? parse_tls(c, cfg_key(path, "tls").s, tls, l) : WAMP_OK;
}

/* "ws://host[:port][/path][?query]" or "wss://..." (autobahn parse_url accepts these). Writes
 * the path ("/" when absent) to *out_path. */
wamp_err cfg_parse_ws_url(cfg_ctx *c, const char *path, const char *url, char **out_path)
{
    const char *rest;
    if (strncmp(url, "ws://", 5) == 0) {
        rest = url + 5;
    } else if (strncmp(url, "wss://", 6) == 0) {
        rest = url + 6;
    } else {
        return cfg_refuse(c, path, "\"%s\" must be a ws:// or wss:// URL", url);
    }
    size_t host_len = strcspn(rest, "/?#");
    if (host_len == 0) {
        return cfg_refuse(c, path, "\"%s\" has no host", url);
    }
    if (strchr(rest, '#')) {
        return cfg_refuse(c, path, "\"%s\": a WebSocket URL cannot have a fragment", url);
    }
    const char *p = rest + host_len;
    size_t plen = *p == '/' ? strcspn(p, "?") : 0;
    char *s = plen ? strndup(p, plen) : strdup("/");
    if (!s) {
        return cfg_oom(c);
    }
    free(*out_path);
    *out_path = s;
    return WAMP_OK;
}

/* The serializer a "serializers" entry names; false for one wampscope does not speak. */
static bool ser_from_name(const char *name, wamp_ser *out)
{
    static const struct {
        const char *name;
        wamp_ser ser;
    } names[] = {
            {"json", WAMP_SER_JSON},
            {"msgpack", WAMP_SER_MSGPACK},
            {"cbor", WAMP_SER_CBOR},
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(names[i].name, name) == 0) {
            *out = names[i].ser;
            return true;
        }
    }
    return false;
}

static void enable_ser(rt_listener *l, wamp_ser ser)
{
    switch (ser) {
    case WAMP_SER_JSON:
        l->ser_json = true;
        break;
    case WAMP_SER_MSGPACK:
        l->ser_msgpack = true;
        break;
    case WAMP_SER_CBOR:
        l->ser_cbor = true;
        break;
    }
}

wamp_err cfg_parse_serializers(cfg_ctx *c, const char *path, const json_t *v, rt_listener *l)
{
    if (!json_is_array(v)) {
        return cfg_refuse(c, path, "must be a list");
    }
    if (json_array_size(v) == 0) {
        return cfg_refuse(c, path,
                          "must name at least one serializer (\"json\", \"msgpack\", \"cbor\")");
    }
    l->ser_json = false;
    l->ser_msgpack = false;
    l->ser_cbor = false;
    wamp_err err = WAMP_OK;
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e)
    {
        cfg_path ip = cfg_index(path, i);
        const char *s = json_string_value(e);
        wamp_ser ser;
        if (!s) {
            err = cfg_refuse(c, ip.s, "must be a string");
        } else if (ser_from_name(s, &ser)) {
            enable_ser(l, ser);
        } else if (strcmp(s, "ubjson") == 0 || strcmp(s, "flatbuffers") == 0) {
            err = cfg_refuse(c, ip.s,
                             "serializer \"%s\" is not supported (only \"json\", \"msgpack\" "
                             "and \"cbor\" are)",
                             s);
        } else {
            err = cfg_refuse(c, ip.s, "unknown serializer \"%s\"", s);
        }
    }
    return err;
}

/* Crossbar's WebSocket options (checkconfig.py check_websocket_options), sorted by what
 * wampscope does with them. */
static const key_rule ws_option_rules[] = {
        /* Honoured. */
        K_PARSED("max_message_size"),
        K_PARSED("max_connections"), /* wampscope's; see cfg_parse_max_connections() */
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

/* Crossbar checks intervals in ms: 0 (off) or at least 1000; an hour is plenty. */
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
        return cfg_refuse(c, cfg_key(path, key).s, "must be 0 (off) or an integer 1000..%d ms",
                          PING_MS_MAX);
    }
    *out = (uint32_t)ms;
    return WAMP_OK;
}

/* options.max_connections (WebSocket and RawSocket). Crossbar's checkconfig knows no such key
 * (its router/protocol.py has it only in a comment, unenforced); autobahn's WebSocket server
 * factory has the same limit as maxConnections, answered with HTTP 503. */
wamp_err cfg_parse_max_connections(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l)
{
    json_int_t max = 0;
    wamp_err err = cfg_opt_int(c, path, o, "max_connections", 1, 10000000, NULL, &max);
    if (err == WAMP_OK) {
        l->max_connections = (size_t)max;
    }
    return err;
}

wamp_err cfg_parse_ws_options(cfg_ctx *c, const char *path, const json_t *o, const rt_limits *lim,
                              rt_listener *l)
{
    wamp_err err = cfg_check_keys(c, path, o, ws_option_rules, N_RULES(ws_option_rules));
    if (err != WAMP_OK) {
        return err;
    }
    json_int_t mms = (json_int_t)lim->max_message_size;
    err = cfg_opt_int(c, path, o, "max_message_size", KIB, GIB, "bytes", &mms);
    if (err != WAMP_OK) {
        return err;
    }
    if ((size_t)mms > lim->max_message_size) {
        return cfg_refuse(c, cfg_key(path, "max_message_size").s,
                          "%lld exceeds wampscope.limits.max_message_size (%zu bytes)",
                          (long long)mms, lim->max_message_size);
    }
    l->max_message_size = (size_t)mms;
    err = cfg_parse_max_connections(c, path, o, l);
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
        bool any = cfg_is_string_list(origins) && json_array_size(origins) == 1 &&
                   strcmp(json_string_value(json_array_get(origins, 0)), "*") == 0;
        if (!any) {
            return cfg_refuse(c, cfg_key(path, "allowed_origins").s,
                              "only [\"*\"] is supported (Origin is not checked yet)");
        }
    }
    return WAMP_OK;
}
