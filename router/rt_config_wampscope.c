/* rt_config_wampscope.c: the router worker's "wampscope" object: limits, tracing (persistence,
 * flight recorder), management (realm, trusted networks, credentials), the metrics listener, the
 * cluster link (in rt_config_cluster.c) and the log level. The integer settings are field tables
 * (cfg_field): each limit is named once, with its default, range and unit, and the same rows set
 * the defaults. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_config_int.h"
#include "rt_log.h"
#include "trace_options.h"
#include "trace_persist.h"
#include "wamp_uri.h"

#define DEF_MGMT_REALM "mgmt"

/* wampscope.limits (configs/README.md, "limits"). rt_limits documents what each one bounds. */
/* clang-format off */
#define LIMIT(k, ty, m, d, l, h, u) CFG_FIELD(k, ty, rt_limits, m, d, l, h, u)
static const cfg_field limit_fields[] = {
    LIMIT("max_message_size",       CFG_SIZE, max_message_size,       16 * MIB, KIB, GIB, "bytes"),
    LIMIT("max_queue_bytes",        CFG_SIZE, max_queue_bytes,        64 * MIB, KIB, GIB, "bytes"),
    /* The lengths a RawSocket handshake can announce: 2^9..2^24. */
    LIMIT("rawsocket_min_length",   CFG_SIZE, rawsocket_min_length,   512, 512, 16 * MIB, "bytes"),
    LIMIT("max_queue_messages",     CFG_SIZE, max_queue_messages,     1000000, 1, 100000000, NULL),
    LIMIT("hello_timeout",          CFG_U32,  hello_timeout_ms,       10000, 100, 3600000, "ms"),
    LIMIT("shutdown_grace",         CFG_U32,  shutdown_grace_ms,      2000, 0, 3600000, "ms"),
    LIMIT("max_call_timeout",       CFG_U32,  max_call_timeout_ms,    3600000, 1000, 86400000,
          "ms"),
    LIMIT("max_retained_topics",    CFG_SIZE, max_retained_topics,    RT_DEF_MAX_RETAINED_TOPICS, 1,
          10000000, NULL),
    LIMIT("max_retained_bytes",     CFG_SIZE, max_retained_bytes,
          (json_int_t)RT_DEF_MAX_RETAINED_BYTES, KIB, GIB, "bytes"),
    LIMIT("auth_failure_delay",     CFG_U32,  auth_failure_delay_ms,  1000, 0, 60000, "ms"),
    LIMIT("close_timeout",          CFG_U32,  close_timeout_ms,       5000, 1000, 3600000, "ms"),
    LIMIT("max_sessions",           CFG_SIZE, max_sessions,           100000, 1, 10000000, NULL),
    LIMIT("max_sessions_per_realm", CFG_SIZE, max_sessions_per_realm, 100000, 1, 10000000, NULL),
    LIMIT("max_pending_calls",      CFG_SIZE, max_pending_calls,      10000, 1, 10000000, NULL),
    LIMIT("max_subscriptions",      CFG_SIZE, max_subscriptions,      100000, 1, 10000000, NULL),
    LIMIT("max_registrations",      CFG_SIZE, max_registrations,      10000, 1, 10000000, NULL),
    LIMIT("http_max_head",          CFG_SIZE, http_max_head,          16 * KIB, KIB, MIB, "bytes"),
    LIMIT("http_head_timeout",      CFG_U32,  http_head_timeout_ms,   10000, 100, 3600000, "ms"),
    LIMIT("http_idle_timeout",      CFG_U32,  http_idle_timeout_ms,   30000, 100, 3600000, "ms"),
};

/* wampscope.tracing's integer settings (configs/README.md, "tracing"; trace_options.h and
 * trace_persist.h give the ranges). */
#define TRACING(k, ty, m, d, l, h, u) CFG_FIELD(k, ty, rt_config, m, d, l, h, u)
static const cfg_field tracing_fields[] = {
    TRACING("max_traces",        CFG_SIZE, tracing_max_traces,        16, 1, 1024, NULL),
    TRACING("default_limit",     CFG_SIZE, tracing_default_limit,     TRACE_OPT_LIMIT_DEFAULT, 1,
            TRACE_OPT_LIMIT_MAX, "records"),
    TRACING("default_max_bytes", CFG_U64,  tracing_default_max_bytes,
            (json_int_t)TRACE_OPT_MAX_BYTES_DEFAULT, (json_int_t)TRACE_OPT_MAX_BYTES_MIN,
            (json_int_t)TRACE_OPT_MAX_BYTES_MAX, "bytes"),
    TRACING("segment_bytes",     CFG_U64,  tracing_segment_bytes,
            (json_int_t)TRACE_PERSIST_SEGMENT_DEFAULT, (json_int_t)TRACE_PERSIST_SEGMENT_MIN,
            (json_int_t)TRACE_PERSIST_SEGMENT_MAX, "bytes"),
    TRACING("fsync_interval",    CFG_U32,  tracing_fsync_interval_ms, 1000, 10, 3600000, "ms"),
    TRACING("persist_max_bytes", CFG_U64,  tracing_persist_max_bytes,
            (json_int_t)TRACE_OPT_PERSIST_BYTES_DEFAULT, (json_int_t)TRACE_OPT_PERSIST_BYTES_MIN,
            (json_int_t)TRACE_OPT_PERSIST_BYTES_MAX, "bytes"),
    TRACING("persist_max_age",   CFG_U64,  tracing_persist_max_age_s, 0, 0,
            (json_int_t)TRACE_OPT_PERSIST_AGE_MAX, "seconds"),
    TRACING("wire_capture",      CFG_U64,  tracing_wire_capture, 0, 0,
            (json_int_t)RT_WIRE_CAPTURE_MAX, "bytes"),
    TRACING("write_backlog",     CFG_U64,  tracing_write_backlog,
            (json_int_t)TRACE_PERSIST_BACKLOG_DEFAULT, (json_int_t)TRACE_PERSIST_BACKLOG_MIN,
            (json_int_t)TRACE_PERSIST_BACKLOG_MAX, "bytes"),
};
/* clang-format on */

static const key_rule limits_rules[] = {
        K_PARSED("slow_consumer"),
};

static const key_rule management_rules[] = {
        K_PARSED("realm"),           K_PARSED("enabled"), K_PARSED("trusted_networks"),
        K_PARSED("allowed_origins"), K_PARSED("auth"),
};

static const key_rule tracing_rules[] = {
        K_PARSED("data_dir"),
        K_PARSED("fsync"),
        K_PARSED("flight_recorder"),
};

/* Indexed by rt_slow_consumer_policy. */
static const char *const slow_consumer_names[] = {"disconnect", "drop_oldest_events"};
/* Indexed by trace_fsync_mode. */
static const char *const fsync_names[] = {"interval", "batch", "never"};
_Static_assert(RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS == 1 && TRACE_FSYNC_NEVER == 2,
               "the name tables above follow the enums");

/* wampscope.tracing.flight_recorder: true (the default), false, or {"enabled": bool, "from_wire":
 * bool (default true, false for persisted options), "options": {trace_options}}. The options go
 * over the flight recorder's own defaults (limit 10000, trace_app_payload false) and are checked
 * now, as start_trace would check them, so that a mistake is a configuration error rather than a
 * missing flight recorder. */
static const key_rule flight_recorder_rules[] = {
        K_PARSED("enabled"),
        K_PARSED("from_wire"),
        K_PARSED("options"),
};

static json_t *flight_recorder_defaults(void)
{
    return json_pack("{s:I, s:b}", "limit", (json_int_t)RT_FLIGHT_RECORDER_LIMIT,
                     "trace_app_payload", 0);
}

static wamp_err parse_flight_recorder(cfg_ctx *c, const char *path, const json_t *v, rt_config *cfg)
{
    cfg_path fp = cfg_key(path, "flight_recorder");
    cfg_path op = cfg_key(fp.s, "options");
    bool enabled = true, from_wire = true;
    const json_t *given = NULL;
    if (json_is_boolean(v)) {
        enabled = json_is_true(v);
    } else if (!json_is_object(v)) {
        return cfg_refuse(c, fp.s, "must be true, false or an object {\"enabled\", \"options\"}");
    } else {
        wamp_err err =
                cfg_check_keys(c, fp.s, v, flight_recorder_rules, N_RULES(flight_recorder_rules));
        if (err == WAMP_OK) {
            err = cfg_opt_bool(c, fp.s, v, "enabled", &enabled);
        }
        if (err == WAMP_OK) {
            err = cfg_opt_bool(c, fp.s, v, "from_wire", &from_wire);
        }
        if (err != WAMP_OK) {
            return err;
        }
        given = json_object_get(v, "options");
        if (given && !json_is_object(given)) {
            return cfg_refuse(c, op.s, "must be an object of trace options");
        }
    }
    json_t *opts = flight_recorder_defaults();
    json_t *copy = given ? json_deep_copy(given) : NULL;
    if (!opts || (given && (!copy || json_object_update(opts, copy) != 0))) {
        json_decref(copy);
        json_decref(opts);
        return cfg_oom(c);
    }
    json_decref(copy);
    trace_options o;
    char why[256] = "";
    wamp_err err = trace_options_parse(opts, &o, why, sizeof(why));
    bool persist = err == WAMP_OK && o.persist;
    trace_options_fini(&o);
    if (err != WAMP_OK) {
        json_decref(opts);
        return err == WAMP_EINVAL ? cfg_refuse(c, op.s, "%s", why) : cfg_oom(c);
    }
    if (from_wire && persist && json_is_object(v) && json_object_get(v, "from_wire")) {
        json_decref(opts);
        cfg_path wp = cfg_key(fp.s, "from_wire");
        return cfg_refuse(c, wp.s,
                          "a persisted flight recorder records each message as it goes: "
                          "from_wire needs options.persist false");
    }
    /* (a persisted flight recorder records each message as it goes) */
    cfg->tracing_flight_from_wire = enabled && from_wire && !persist;
    json_decref(cfg->tracing_flight_recorder);
    cfg->tracing_flight_recorder = enabled ? opts : NULL;
    if (!enabled) {
        json_decref(opts);
    }
    return WAMP_OK;
}

bool rt_config_setting_get(size_t i, rt_config_setting *out)
{
    size_t n_limits = N_RULES(limit_fields);
    if (i >= n_limits + N_RULES(tracing_fields)) {
        return false;
    }
    const cfg_field *f = i < n_limits ? &limit_fields[i] : &tracing_fields[i - n_limits];
    *out = (rt_config_setting){
            .section = i < n_limits ? "limits" : "tracing",
            .key = f->key,
            .def = (long long)f->def,
            .min = (long long)f->lo,
            .max = (long long)f->hi,
            .unit = f->unit,
    };
    return true;
}

wamp_err cfg_wampscope_defaults(cfg_ctx *c, rt_config *cfg)
{
    cfg_fields_default(limit_fields, N_RULES(limit_fields), &cfg->limits);
    cfg->limits.slow_consumer = RT_SLOW_CONSUMER_DISCONNECT;
    cfg_fields_default(tracing_fields, N_RULES(tracing_fields), cfg);
    cfg->tracing_fsync = TRACE_FSYNC_INTERVAL;
    cfg->mgmt_enabled = true;
    cfg->tracing_flight_recorder = flight_recorder_defaults();
    cfg->tracing_flight_from_wire = true;
    if (!cfg->tracing_flight_recorder) {
        return cfg_oom(c);
    }
    wamp_err err = cfg_dup(c, DEF_MGMT_REALM, &cfg->mgmt_realm);
    return err == WAMP_OK ? cfg_default_trusted(c, cfg) : err;
}

static wamp_err parse_limits(cfg_ctx *c, const char *path, const json_t *o, rt_limits *lim)
{
    wamp_err err = cfg_check_keys_fields(c, path, o, limits_rules, N_RULES(limits_rules),
                                         limit_fields, N_RULES(limit_fields));
    if (err != WAMP_OK) {
        return err;
    }
    err = cfg_fields_parse(c, path, o, limit_fields, N_RULES(limit_fields), lim);
    int slow = (int)lim->slow_consumer;
    wamp_err e = cfg_opt_enum(c, path, o, "slow_consumer", slow_consumer_names,
                              N_RULES(slow_consumer_names), &slow);
    lim->slow_consumer = (rt_slow_consumer_policy)slow;
    return cfg_worse(err, e);
}

static wamp_err parse_management(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = cfg_check_keys(c, path, o, management_rules, N_RULES(management_rules));
    if (err != WAMP_OK) {
        return err;
    }
    err = cfg_opt_bool(c, path, o, "enabled", &cfg->mgmt_enabled);
    const char *realm = NULL;
    wamp_err e = cfg_opt_str(c, path, o, "realm", &realm);
    if (e == WAMP_OK && realm && !wamp_uri_is_valid(realm, WAMP_URI_LOOSE)) {
        e = cfg_refuse(c, cfg_key(path, "realm").s, "\"%s\" is not a valid realm name (a URI)",
                       realm);
    } else if (e == WAMP_OK && realm) {
        e = cfg_dup(c, realm, &cfg->mgmt_realm);
    }
    err = cfg_worse(err, e);
    const json_t *trusted = json_object_get(o, "trusted_networks");
    if (!cfg_stop(err) && trusted) {
        err = cfg_worse(err,
                        cfg_parse_trusted(c, cfg_key(path, "trusted_networks").s, trusted, cfg));
    }
    const json_t *origins = json_object_get(o, "allowed_origins");
    if (!cfg_stop(err) && origins) {
        cfg_path op = cfg_key(path, "allowed_origins");
        bool ok = json_is_array(origins);
        for (size_t i = 0; ok && i < json_array_size(origins); i++) {
            const char *v = json_string_value(json_array_get(origins, i));
            ok = v && (strncmp(v, "http://", 7) == 0 || strncmp(v, "https://", 8) == 0) &&
                 !strchr(strchr(v, ':') + 3, '/');
        }
        if (!ok) {
            err = cfg_worse(err, cfg_refuse(c, op.s,
                                            "must be a list of web origins (\"http://host:port\" "
                                            "or \"https://host:port\", no path)"));
        } else {
            json_decref(cfg->mgmt_origins);
            cfg->mgmt_origins = json_incref((json_t *)origins);
        }
    }
    const json_t *mauth = json_object_get(o, "auth");
    if (!cfg_stop(err) && mauth) {
        err = cfg_worse(err, cfg_parse_mgmt_auth(c, cfg_key(path, "auth").s, mauth, cfg));
    }
    return err;
}

static wamp_err parse_tracing(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = cfg_check_keys_fields(c, path, o, tracing_rules, N_RULES(tracing_rules),
                                         tracing_fields, N_RULES(tracing_fields));
    if (err != WAMP_OK) {
        return err;
    }
    err = cfg_fields_parse(c, path, o, tracing_fields, N_RULES(tracing_fields), cfg);
    const char *dir = NULL;
    wamp_err e = cfg_opt_str(c, path, o, "data_dir", &dir);
    if (e == WAMP_OK && dir && !*dir) {
        e = cfg_refuse(c, cfg_key(path, "data_dir").s, "must not be empty");
    } else if (e == WAMP_OK && dir) {
        e = cfg_dup(c, dir, &cfg->tracing_data_dir);
    }
    err = cfg_worse(err, e);
    err = cfg_worse(err, cfg_opt_enum(c, path, o, "fsync", fsync_names, N_RULES(fsync_names),
                                      &cfg->tracing_fsync));
    const json_t *flight = json_object_get(o, "flight_recorder");
    if (!cfg_stop(err) && flight) {
        err = cfg_worse(err, parse_flight_recorder(c, path, flight, cfg));
    }
    return err;
}

/* wampscope.metrics: {"endpoint": {"type": "tcp", "port": N, "interface": "127.0.0.1"},
 * "path": "/metrics"}. The endpoint is a listening endpoint as a transport's (the same parser),
 * but plain TCP: the metrics are for a scraper on the host or a trusted network. */
static const key_rule metrics_rules[] = {
        K_PARSED("endpoint"),
        K_PARSED("path"),
};

#define DEF_METRICS_PATH "/metrics"

static wamp_err parse_metrics(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = cfg_check_keys(c, path, o, metrics_rules, N_RULES(metrics_rules));
    if (err != WAMP_OK) {
        return err;
    }
    cfg_path ep = cfg_key(path, "endpoint");
    const json_t *endpoint = json_object_get(o, "endpoint");
    if (!endpoint) {
        err = cfg_refuse(c, ep.s, "is required");
    } else if (!json_is_object(endpoint)) {
        err = cfg_refuse(c, ep.s, "must be an object {\"type\": \"tcp\", \"port\": N, ...}");
    } else {
        rt_listener l;
        memset(&l, 0, sizeof(l));
        err = cfg_parse_endpoint(c, ep.s, endpoint, &l);
        if (err == WAMP_OK && l.unix_path) {
            err = cfg_refuse(c, cfg_key(ep.s, "type").s,
                             "must be \"tcp\" (the metrics listener has no Unix socket)");
        } else if (err == WAMP_OK && l.tls_certificate) {
            err = cfg_refuse(c, cfg_key(ep.s, "tls").s,
                             "is not supported on the metrics listener (plain HTTP)");
        }
        if (err == WAMP_OK) {
            cfg->metrics_enabled = true;
            cfg->metrics_port = l.port;
            cfg->metrics_interface = l.interface;
            l.interface = NULL;
        }
        free(l.interface);
        free(l.unix_path);
        free(l.tls_key);
        free(l.tls_certificate);
        free(l.tls_ciphers);
    }
    const char *mpath = NULL;
    wamp_err e = cfg_opt_str(c, path, o, "path", &mpath);
    if (e == WAMP_OK && !mpath) {
        mpath = DEF_METRICS_PATH;
    }
    if (e == WAMP_OK && (mpath[0] != '/' || mpath[strcspn(mpath, "?# \t\r\n")] != '\0')) {
        e = cfg_refuse(c, cfg_key(path, "path").s,
                       "must start with \"/\" and hold no query, fragment or blank (got \"%s\")",
                       mpath);
    } else if (e == WAMP_OK) {
        e = cfg_dup(c, mpath, &cfg->metrics_path);
    }
    return cfg_worse(err, e);
}

static const key_rule wampscope_rules[] = {
        K_PARSED("metrics"), K_PARSED("limits"),    K_PARSED("management"),
        K_PARSED("tracing"), K_PARSED("log_level"), K_PARSED("cluster"),
};

/* Section by section; a refused section does not stop the next one. */
wamp_err cfg_parse_wampscope(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = cfg_check_keys(c, path, o, wampscope_rules, N_RULES(wampscope_rules));
    if (err != WAMP_OK) {
        return err;
    }
    const json_t *lim = json_object_get(o, "limits");
    if (lim) {
        err = parse_limits(c, cfg_key(path, "limits").s, lim, &cfg->limits);
    }
    const json_t *mgmt = json_object_get(o, "management");
    if (mgmt && !cfg_stop(err)) {
        err = cfg_worse(err, parse_management(c, cfg_key(path, "management").s, mgmt, cfg));
    }
    const json_t *tracing = json_object_get(o, "tracing");
    if (tracing && !cfg_stop(err)) {
        err = cfg_worse(err, parse_tracing(c, cfg_key(path, "tracing").s, tracing, cfg));
    }
    const json_t *metrics = json_object_get(o, "metrics");
    if (metrics && !cfg_stop(err)) {
        cfg_path mp = cfg_key(path, "metrics");
        err = cfg_worse(
                err, json_is_object(metrics)
                             ? parse_metrics(c, mp.s, metrics, cfg)
                             : cfg_refuse(c, mp.s, "must be an object {\"endpoint\", \"path\"}"));
    }
    const json_t *cluster = json_object_get(o, "cluster");
    if (cluster && !cfg_stop(err)) {
        err = cfg_worse(err, cfg_parse_cluster(c, cfg_key(path, "cluster").s, cluster, cfg));
    }
    if (cfg_stop(err)) {
        return err;
    }
    const char *level = NULL;
    wamp_err e = cfg_opt_str(c, path, o, "log_level", &level);
    if (e == WAMP_OK && level && !rt_log_level_parse(level, NULL)) {
        e = cfg_refuse(c, cfg_key(path, "log_level").s,
                       "must be \"error\", \"warn\", \"info\", \"debug\" or \"trace\" (got \"%s\")",
                       level);
    } else if (e == WAMP_OK && level) {
        e = cfg_dup(c, level, &cfg->log_level);
    }
    return cfg_worse(err, e);
}
