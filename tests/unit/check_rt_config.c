/* check_rt_config.c: Crossbar node configuration parsing: the shipped configs, every default,
 * Crossbar's permission conventions, and one exact message (with its key path) per refusal. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "rt_config.h"

#define ERR_LEN 512
#define MIB     ((size_t)1024 * 1024)

/* Test JSON is written with single quotes to stay readable; this turns them into '"'. The
 * result is owned by the caller. */
static char *dq(const char *s)
{
    char *d = strdup(s);
    ck_assert_ptr_nonnull(d);
    for (char *p = d; *p; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    return d;
}

/* Loads single-quoted JSON; returns the status and leaves the message in err. */
static wamp_err load_q(const char *json, rt_config **out, char *err)
{
    char *text = dq(json);
    wamp_err rc = rt_config_load_string(text, strlen(text), out, err, ERR_LEN);
    free(text);
    return rc;
}

static rt_config *load_ok(const char *json)
{
    char err[ERR_LEN] = "";
    rt_config *cfg = NULL;
    wamp_err rc = load_q(json, &cfg, err);
    ck_assert_msg(rc == WAMP_OK, "load failed (%d): %s", rc, err);
    ck_assert_ptr_nonnull(cfg);
    return cfg;
}

/* Builds the path of a file under the source tree (RT_SOURCE_DIR is set by ctest). */
static void source_path(char *buf, size_t len, const char *rel)
{
    const char *root = getenv("RT_SOURCE_DIR");
    int n = snprintf(buf, len, "%s/%s", root ? root : ".", rel);
    ck_assert(n > 0 && (size_t)n < len);
}

static rt_config *load_source_file(const char *rel)
{
    char path[4096];
    char err[ERR_LEN] = "";
    rt_config *cfg = NULL;
    source_path(path, sizeof(path), rel);
    wamp_err rc = rt_config_load_file(path, &cfg, err, sizeof(err));
    ck_assert_msg(rc == WAMP_OK, "%s: load failed (%d): %s", rel, rc, err);
    ck_assert_ptr_nonnull(cfg);
    return cfg;
}

static void hostname_of(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0 || !buf[0]) {
        snprintf(buf, len, "localhost");
    }
    buf[len - 1] = '\0';
}

/* The management realm's trusted networks as text ("" for none). */
static void assert_trusted_str(const rt_config *cfg, const char *want)
{
    char buf[1024];
    rt_config_format_trusted(cfg, buf, sizeof(buf));
    ck_assert_str_eq(buf, want);
}

static bool peer_trusted(const rt_config *cfg, const char *peer)
{
    return rt_config_peer_is_trusted(cfg, peer);
}

/* wampscope.management.trusted_networks' default: 127.0.0.0/8 and ::1/128, as parsed data. */
static void assert_default_trusted(const rt_config *cfg)
{
    ck_assert_ptr_nonnull(cfg->mgmt_trusted);
    ck_assert_uint_eq(cfg->n_mgmt_trusted, 2);
    const rt_cidr *v4 = &cfg->mgmt_trusted[0];
    const rt_cidr *v6 = &cfg->mgmt_trusted[1];
    static const uint8_t a4[16] = {127};
    static const uint8_t a6[16] = {[15] = 1};
    ck_assert_int_eq(v4->family, RT_IP_V4);
    ck_assert_uint_eq(v4->prefix, 8);
    ck_assert_mem_eq(v4->addr, a4, 16);
    ck_assert_int_eq(v6->family, RT_IP_V6);
    ck_assert_uint_eq(v6->prefix, 128);
    ck_assert_mem_eq(v6->addr, a6, 16);
    assert_trusted_str(cfg, "127.0.0.0/8, ::1/128");
}

/* Building blocks of the test configurations. */
#define ALLOW_ALL "'allow':{'call':true,'register':true,'publish':true,'subscribe':true}"
#define R1                                                                                    \
    "{'name':'realm1','roles':[{'name':'anonymous','permissions':[{'uri':'','match':'prefix'" \
    "," ALLOW_ALL "}]}]}"
#define T1                 "{'type':'websocket','endpoint':{'type':'tcp','port':8080}}"
#define WORKER(body)       "{'version':2,'workers':[{'type':'router'," body "}]}"
#define STD(extra)         WORKER("'realms':[" R1 "],'transports':[" T1 "]" extra)
#define WITH_T(t)          WORKER("'realms':[" R1 "],'transports':[" t "]")
#define WITH_R(r)          WORKER("'realms':[" r "],'transports':[" T1 "]")
#define WITH_REALM_KEYS(k) WITH_R("{'name':'realm1'," k "}")
#define WITH_ROLE(r)       WITH_R("{'name':'realm1','roles':[" r "]}")
#define WITH_PERMS(p)      WITH_ROLE("{'name':'anonymous','permissions':[" p "]}")
#define WITH_EP(ep)        WITH_T("{'type':'websocket','endpoint':" ep "}")
#define WITH_WS_KEYS(k)    WITH_T("{'type':'websocket','endpoint':{'type':'tcp','port':8080}," k "}")
#define WITH_WSOPT(o)      WITH_WS_KEYS("'options':" o)
#define WITH_AUTH(a)       WITH_WS_KEYS("'auth':" a)
#define WITH_WEB(k)        WITH_T("{'type':'web','endpoint':{'type':'tcp','port':8080}," k "}")
#define WITH_PATHS(p)      WITH_WEB("'paths':" p)
#define WITH_WAMPSCOPE(w)  STD(",'wampscope':" w)
#define WITH_UNI(k)        WITH_T("{'type':'universal','endpoint':{'type':'tcp','port':8081}," k "}")
#define WITH_RAW(k)        WITH_T("{'type':'rawsocket','endpoint':{'type':'tcp','port':8081}," k "}")
/* 107 characters: after a '/', one more than a Unix socket path may have. */
#define LONG_PATH                                                                               \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
    "aaaaaaaaaaaaaaaaaa"
#define TOP(extra) \
    "{'version':2," extra "'workers':[{'type':'router','realms':[" R1 "],'transports':[" T1 "]}]}"

#define P_REALM "workers[0].realms[0]"
#define P_ROLE  P_REALM ".roles[0]"
#define P_PERM  P_ROLE ".permissions[0]"
#define P_T     "workers[0].transports[0]"
#define P_WS    "workers[0].wampscope"

/* Options JSON of the flight recorder, as compact text (sorted keys); caller frees. */
static char *flight_options(const rt_config *cfg)
{
    ck_assert_ptr_nonnull(cfg->tracing_flight_recorder);
    char *s = json_dumps(cfg->tracing_flight_recorder, JSON_COMPACT | JSON_SORT_KEYS);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* wampscope.tracing.flight_recorder's default: on, 10000 records, payload stripped. */
static void assert_flight_recorder_default(const rt_config *cfg)
{
    char *s = flight_options(cfg);
    ck_assert_str_eq(s, "{\"limit\":10000,\"trace_app_payload\":false}");
    free(s);
}

START_TEST(test_default_config)
{
    char err[ERR_LEN] = "";
    char host[256];
    rt_config *cfg = NULL;
    ck_assert_int_eq(rt_config_load_default(&cfg, err, sizeof(err)), WAMP_OK);
    ck_assert_ptr_nonnull(cfg);

    hostname_of(host, sizeof(host));
    ck_assert_str_eq(cfg->node_id, host);
    ck_assert_str_eq(cfg->worker_id, "router1");

    ck_assert_uint_eq(cfg->n_realms, 1);
    const rt_realm_config *r = rt_config_find_realm(cfg, "realm1");
    ck_assert_ptr_eq(r, &cfg->realms[0]);
    ck_assert_uint_eq(r->n_roles, 1);
    ck_assert_str_eq(r->roles[0].name, "anonymous");
    ck_assert_uint_eq(r->roles[0].n_permissions, 1);
    const rt_permission *p = &r->roles[0].permissions[0];
    ck_assert_str_eq(p->uri, "");
    ck_assert_int_eq(p->match, WAMP_MATCH_PREFIX);
    ck_assert(p->allow_call && p->allow_register && p->allow_publish && p->allow_subscribe);
    ck_assert(!p->disclose_caller && !p->disclose_publisher);

    ck_assert_uint_eq(cfg->n_listeners, 1);
    const rt_listener *l = &cfg->listeners[0];
    ck_assert_str_eq(l->id, "transport1");
    ck_assert_int_eq(l->kind, RT_TRANSPORT_WEBSOCKET);
    ck_assert_str_eq(l->interface, "127.0.0.1");
    ck_assert_int_eq(l->port, 8080);
    ck_assert_str_eq(l->path, "/ws");
    ck_assert(l->ser_json && l->ser_msgpack);
    ck_assert_uint_eq(l->max_message_size, 16 * MIB);
    ck_assert_uint_eq(l->auto_ping_interval_ms, 0);
    ck_assert_uint_eq(l->auto_ping_timeout_ms, 0);
    ck_assert_str_eq(l->anonymous_role, "anonymous");
    /* The trace viewer at /trace/, next to WAMP at /ws. */
    ck_assert_uint_eq(l->n_web, 1);
    ck_assert_str_eq(l->web[0].prefix, "/trace");
    ck_assert_int_eq(l->web[0].kind, RT_WEB_VIEWER);

    ck_assert_uint_eq(cfg->limits.max_message_size, 16 * MIB);
    ck_assert_uint_eq(cfg->limits.max_queue_bytes, 64 * MIB);
    ck_assert_uint_eq(cfg->limits.max_queue_messages, 1000000);
    ck_assert_uint_eq(cfg->limits.hello_timeout_ms, 10000);
    ck_assert_uint_eq(cfg->limits.close_timeout_ms, 5000);
    ck_assert_uint_eq(cfg->limits.max_sessions, 100000);
    ck_assert_uint_eq(cfg->limits.max_sessions_per_realm, 100000);
    ck_assert_uint_eq(cfg->limits.max_pending_calls, 10000);
    ck_assert_uint_eq(cfg->limits.max_subscriptions, 100000);
    ck_assert_uint_eq(cfg->limits.max_registrations, 10000);
    ck_assert_int_eq(cfg->limits.slow_consumer, RT_SLOW_CONSUMER_DISCONNECT);
    ck_assert_uint_eq(cfg->limits.shutdown_grace_ms, 2000);
    ck_assert_uint_eq(cfg->limits.max_call_timeout_ms, 3600000);
    ck_assert_uint_eq(cfg->limits.max_retained_topics, 10000);
    ck_assert_uint_eq(cfg->limits.max_retained_bytes, 16 * MIB);
    ck_assert(cfg->mgmt_enabled);
    ck_assert_str_eq(cfg->mgmt_realm, "mgmt");
    ck_assert_uint_eq(cfg->tracing_max_traces, 16);
    ck_assert_uint_eq(cfg->tracing_default_limit, 100000);
    ck_assert_uint_eq(cfg->tracing_default_max_bytes, 64 * MIB);
    ck_assert_uint_eq(cfg->tracing_write_backlog, 64 * MIB);
    assert_flight_recorder_default(cfg);
    ck_assert_ptr_null(cfg->log_level);
    assert_default_trusted(cfg);

    ck_assert_ptr_null(rt_config_find_realm(cfg, "mgmt"));
    ck_assert_ptr_null(rt_config_find_realm(cfg, NULL));
    ck_assert_ptr_null(rt_config_find_realm(NULL, "realm1"));
    rt_config_free(cfg);
}

END_TEST

/* configs/default.json on disk is the same configuration as the embedded one. */
START_TEST(test_default_file_matches_embedded)
{
    rt_config *file = load_source_file("configs/default.json");
    rt_config *emb = NULL;
    char err[ERR_LEN];
    ck_assert_int_eq(rt_config_load_default(&emb, err, sizeof(err)), WAMP_OK);
    ck_assert_uint_eq(file->n_realms, emb->n_realms);
    ck_assert_uint_eq(file->n_listeners, emb->n_listeners);
    ck_assert_str_eq(file->listeners[0].path, emb->listeners[0].path);
    ck_assert_uint_eq(file->listeners[0].n_web, emb->listeners[0].n_web);
    ck_assert_int_eq(file->listeners[0].port, emb->listeners[0].port);
    ck_assert_str_eq(file->mgmt_realm, emb->mgmt_realm);
    rt_config_free(file);
    rt_config_free(emb);
}

END_TEST

START_TEST(test_e2e_config)
{
    rt_config *cfg = load_source_file("configs/test-e2e.json");
    ck_assert_uint_eq(cfg->n_realms, 3);
    const char *names[] = {"realm1", "realm2", "realm3"};
    for (size_t i = 0; i < 3; i++) {
        const rt_realm_config *r = rt_config_find_realm(cfg, names[i]);
        ck_assert_ptr_nonnull(r);
        ck_assert_uint_eq(r->n_roles, 1);
        ck_assert_str_eq(r->roles[0].name, "anonymous");
        const rt_permission *p = &r->roles[0].permissions[0];
        ck_assert_str_eq(p->uri, "");
        ck_assert_int_eq(p->match, WAMP_MATCH_PREFIX);
        ck_assert(p->allow_call && p->allow_register && p->allow_publish && p->allow_subscribe);
    }
    ck_assert_uint_eq(cfg->n_listeners, 1);
    const rt_listener *l = &cfg->listeners[0];
    ck_assert_str_eq(l->interface, "127.0.0.1");
    ck_assert_int_eq(l->port, 0);
    ck_assert_str_eq(l->path, "/ws");
    ck_assert(l->ser_json && l->ser_msgpack);
    ck_assert_uint_eq(l->max_message_size, 4 * MIB);
    ck_assert_str_eq(l->anonymous_role, "anonymous");
    ck_assert_uint_eq(cfg->limits.max_message_size, 4 * MIB);
    /* The e2e tests that expect exact trace lists run without the flight recorder. */
    ck_assert_ptr_null(cfg->tracing_flight_recorder);
    ck_assert_uint_eq(cfg->limits.hello_timeout_ms, 5000);
    ck_assert_uint_eq(cfg->limits.shutdown_grace_ms, 2000);
    ck_assert_str_eq(cfg->log_level, "info");
    ck_assert(cfg->mgmt_enabled);
    ck_assert_str_eq(cfg->mgmt_realm, "mgmt");
    rt_config_free(cfg);
}

END_TEST

/* configs/test-e2e-mgmt.json is configs/test-e2e.json with only 127.0.0.1 trusted, so that a
 * client bound to 127.0.0.2 is refused on the management realm. */
START_TEST(test_e2e_mgmt_config)
{
    rt_config *base = load_source_file("configs/test-e2e.json");
    rt_config *cfg = load_source_file("configs/test-e2e-mgmt.json");
    assert_default_trusted(base);
    ck_assert_uint_eq(cfg->n_realms, base->n_realms);
    for (size_t i = 0; i < cfg->n_realms; i++) {
        ck_assert_str_eq(cfg->realms[i].name, base->realms[i].name);
    }
    ck_assert_uint_eq(cfg->n_listeners, 1);
    ck_assert_str_eq(cfg->listeners[0].interface, "127.0.0.1");
    ck_assert_int_eq(cfg->listeners[0].port, 0);
    ck_assert_str_eq(cfg->listeners[0].path, base->listeners[0].path);
    ck_assert_uint_eq(cfg->limits.hello_timeout_ms, base->limits.hello_timeout_ms);
    ck_assert(cfg->mgmt_enabled);
    ck_assert_str_eq(cfg->mgmt_realm, "mgmt");
    ck_assert_uint_eq(cfg->n_mgmt_trusted, 1);
    assert_trusted_str(cfg, "127.0.0.1/32");
    ck_assert(peer_trusted(cfg, "127.0.0.1:40000"));
    ck_assert(!peer_trusted(cfg, "127.0.0.2:40000"));
    ck_assert(!peer_trusted(cfg, "[::1]:40000"));
    ck_assert(peer_trusted(base, "127.0.0.2:40000"));
    rt_config_free(cfg);
    rt_config_free(base);
}

END_TEST

START_TEST(test_example_config)
{
    rt_config *cfg = load_source_file("configs/router.example.json");
    ck_assert_str_eq(cfg->node_id, "node1");
    ck_assert_str_eq(cfg->worker_id, "router1");
    ck_assert_uint_ge(cfg->n_realms, 2);
    ck_assert_uint_eq(cfg->n_listeners, 2);
    ck_assert_uint_eq(cfg->listeners[0].n_web, 7); /* every HTTP service type */
    ck_assert_ptr_nonnull(cfg->log_level);
    assert_default_trusted(cfg);
    assert_flight_recorder_default(cfg);
    ck_assert(cfg->metrics_enabled);
    ck_assert_str_eq(cfg->metrics_interface, "127.0.0.1");
    ck_assert_int_eq(cfg->metrics_port, 9464);
    ck_assert_str_eq(cfg->metrics_path, "/metrics");
    rt_config_free(cfg);
}

END_TEST

/* wampscope.metrics: absent = no listener; the path defaults to /metrics; the endpoint is a
 * plain TCP listening endpoint. */
START_TEST(test_metrics_section)
{
    rt_config *cfg = load_ok(STD(""));
    ck_assert(!cfg->metrics_enabled);
    ck_assert_ptr_null(cfg->metrics_path);
    rt_config_free(cfg);
    cfg = load_ok(WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'tcp','port':0}}}"));
    ck_assert(cfg->metrics_enabled);
    ck_assert_ptr_null(cfg->metrics_interface);
    ck_assert_int_eq(cfg->metrics_port, 0);
    ck_assert_str_eq(cfg->metrics_path, "/metrics");
    rt_config_free(cfg);
    cfg = load_ok(WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'tcp','port':9100,"
                                 "'interface':'::1','version':6},'path':'/x/prom'}}"));
    ck_assert_str_eq(cfg->metrics_interface, "::1");
    ck_assert_int_eq(cfg->metrics_port, 9100);
    ck_assert_str_eq(cfg->metrics_path, "/x/prom");
    rt_config_free(cfg);

    static const struct {
        const char *json;
        const char *err;
    } bad[] = {
            {WITH_WAMPSCOPE("{'metrics':{}}"), P_WS ".metrics.endpoint: is required"},
            {WITH_WAMPSCOPE("{'metrics':true}"), P_WS ".metrics: must be an object"},
            {WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'tcp','port':70000}}}"),
             P_WS ".metrics.endpoint.port: must be an integer 0..65535"},
            {WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'unix','path':'/tmp/m.sock'}}}"),
             P_WS ".metrics.endpoint.type: must be \"tcp\""},
            {WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'tcp','port':1},'path':'/m?x'}}"),
             P_WS ".metrics.path: must start with \"/\""},
            {WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'tcp','port':1},'path':'m'}}"),
             P_WS ".metrics.path: must start with \"/\""},
            {WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'tcp','port':1},'auth':{}}}"),
             P_WS ".metrics.auth: unknown key"},
            /* A transport's port: libwebsockets would hand the listener's socket to the
             * transport, and the metrics would never be served. */
            {WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'tcp','port':8080}}}"),
             P_WS ".metrics.endpoint.port: port 8080 is already used by transports[0]"},
            {WITH_WAMPSCOPE("{'metrics':{'endpoint':{'type':'tcp','port':8080,"
                            "'interface':'127.0.0.1'}}}"),
             P_WS ".metrics.endpoint.port: port 8080 is already used by transports[0]"},
            {WORKER("'realms':[" R1 "],'transports':[" T1 ",{'type':'websocket','endpoint':"
                    "{'type':'tcp','port':9100,'interface':'127.0.0.1'}}],'wampscope':{'metrics':"
                    "{'endpoint':{'type':'tcp','port':9100,'interface':'127.0.0.1'}}}"),
             P_WS ".metrics.endpoint.port: port 9100 is already used by transports[1]"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[ERR_LEN] = "";
        cfg = NULL;
        ck_assert_int_eq(load_q(bad[i].json, &cfg, err), WAMP_EINVAL);
        ck_assert_ptr_null(cfg);
        ck_assert_msg(strncmp(err, bad[i].err, strlen(bad[i].err)) == 0, "%zu: got \"%s\"", i, err);
    }
}

END_TEST

/* The smallest config: everything not given takes its documented default. */
START_TEST(test_minimal_defaults)
{
    rt_config *cfg = load_ok("{'workers':[{'type':'router','realms':[{'name':'app'}],"
                             "'transports':[{'type':'websocket','endpoint':{'type':'tcp',"
                             "'port':9000}}]}]}");
    char host[256];
    hostname_of(host, sizeof(host));
    ck_assert_str_eq(cfg->node_id, host);
    ck_assert_str_eq(cfg->worker_id, "router1");
    ck_assert_uint_eq(cfg->n_realms, 1);
    ck_assert_str_eq(cfg->realms[0].name, "app");
    ck_assert_uint_eq(cfg->realms[0].n_roles, 0);
    const rt_listener *l = &cfg->listeners[0];
    ck_assert_str_eq(l->id, "transport1");
    ck_assert_ptr_null(l->interface);
    ck_assert_int_eq(l->port, 9000);
    ck_assert_str_eq(l->path, "/");
    ck_assert(l->ser_json && l->ser_msgpack);
    ck_assert_uint_eq(l->max_message_size, 16 * MIB);
    ck_assert_str_eq(l->anonymous_role, "anonymous");
    ck_assert_uint_eq(cfg->limits.max_queue_bytes, 64 * MIB);
    ck_assert_uint_eq(cfg->limits.max_queue_messages, 1000000);
    ck_assert_uint_eq(cfg->limits.hello_timeout_ms, 10000);
    ck_assert_uint_eq(cfg->limits.shutdown_grace_ms, 2000);
    ck_assert_uint_eq(cfg->limits.max_call_timeout_ms, 3600000);
    ck_assert(cfg->mgmt_enabled);
    ck_assert_str_eq(cfg->mgmt_realm, "mgmt");
    ck_assert_uint_eq(cfg->tracing_max_traces, 16);
    ck_assert_uint_eq(cfg->tracing_default_limit, 100000);
    ck_assert_uint_eq(cfg->tracing_default_max_bytes, 64 * MIB);
    assert_flight_recorder_default(cfg);
    ck_assert_ptr_null(cfg->log_level);
    assert_default_trusted(cfg);
    rt_config_free(cfg);
}

END_TEST

/* Crossbar role.py / autobahn convert_starred_uri: without "match" the stars decide; every
 * allow/disclose flag defaults to false. */
START_TEST(test_permission_defaults)
{
    rt_config *cfg = load_ok(WITH_PERMS("{'uri':'com.example.proc'},"
                                        "{'uri':'com.example.*','allow':{'call':true}},"
                                        "{'uri':'*','allow':{'subscribe':true}},"
                                        "{'uri':'com.*.update','allow':{'publish':true}},"
                                        "{'uri':'*.x.*'},"
                                        "{'uri':'com.pre','match':'prefix'},"
                                        "{'uri':'com..wild','match':'wildcard'},"
                                        "{'uri':'com.exact','match':'exact','cache':true,"
                                        "'disclose':{'caller':true,'publisher':true}},"
                                        "{'uri':'*.*'}"));
    const rt_role *role = &cfg->realms[0].roles[0];
    ck_assert_uint_eq(role->n_permissions, 9);
    const rt_permission *p = role->permissions;

    ck_assert_str_eq(p[0].uri, "com.example.proc");
    ck_assert_int_eq(p[0].match, WAMP_MATCH_EXACT);
    ck_assert(!p[0].allow_call && !p[0].allow_register && !p[0].allow_publish &&
              !p[0].allow_subscribe);
    ck_assert(!p[0].disclose_caller && !p[0].disclose_publisher);

    ck_assert_str_eq(p[1].uri, "com.example.");
    ck_assert_int_eq(p[1].match, WAMP_MATCH_PREFIX);
    ck_assert(p[1].allow_call && !p[1].allow_register);

    ck_assert_str_eq(p[2].uri, "");
    ck_assert_int_eq(p[2].match, WAMP_MATCH_PREFIX);
    ck_assert(p[2].allow_subscribe && !p[2].allow_publish);

    ck_assert_str_eq(p[3].uri, "com..update");
    ck_assert_int_eq(p[3].match, WAMP_MATCH_WILDCARD);
    ck_assert(p[3].allow_publish);

    ck_assert_str_eq(p[4].uri, ".x.");
    ck_assert_int_eq(p[4].match, WAMP_MATCH_WILDCARD);

    ck_assert_str_eq(p[5].uri, "com.pre");
    ck_assert_int_eq(p[5].match, WAMP_MATCH_PREFIX);
    ck_assert_str_eq(p[6].uri, "com..wild");
    ck_assert_int_eq(p[6].match, WAMP_MATCH_WILDCARD);
    ck_assert_str_eq(p[7].uri, "com.exact");
    ck_assert_int_eq(p[7].match, WAMP_MATCH_EXACT);
    ck_assert(p[7].disclose_caller && p[7].disclose_publisher);
    ck_assert_str_eq(p[8].uri, ".");
    ck_assert_int_eq(p[8].match, WAMP_MATCH_WILDCARD);
    rt_config_free(cfg);

    /* Crossbar applies a "" entry to every URI no other entry prefixes: prefix "". */
    cfg = load_ok(WITH_PERMS("{'uri':'','allow':{'register':true}}"));
    p = cfg->realms[0].roles[0].permissions;
    ck_assert_str_eq(p[0].uri, "");
    ck_assert_int_eq(p[0].match, WAMP_MATCH_PREFIX);
    ck_assert(p[0].allow_register && !p[0].allow_call);
    rt_config_free(cfg);
}

END_TEST

/* A role without "permissions" (or with an empty list) denies everything. */
START_TEST(test_role_without_permissions)
{
    rt_config *cfg = load_ok(WITH_ROLE("{'name':'nobody'},{'name':'empty','permissions':[]}"));
    ck_assert_uint_eq(cfg->realms[0].n_roles, 2);
    ck_assert_uint_eq(cfg->realms[0].roles[0].n_permissions, 0);
    ck_assert_ptr_null(cfg->realms[0].roles[0].permissions);
    ck_assert_uint_eq(cfg->realms[0].roles[1].n_permissions, 0);
    rt_config_free(cfg);
}

END_TEST

/* The shape Crossbar users commonly have: "$schema", an empty controller, a web transport with a
 * "ws" path carrying Crossbar's template WebSocket options and anonymous auth, and realm roles
 * with starred URIs. */
/* Several transports of one router may each have a shared socket (rt_lws.c adopts what each
 * accepts onto its own vhost). */
START_TEST(test_several_shared_transports)
{
    rt_config *cfg = load_ok(
            WITH_T("{'type':'websocket','endpoint':{'type':'tcp','port':8080,'shared':true}},"
                   "{'type':'rawsocket','endpoint':{'type':'tcp','port':8081,'shared':true}}"));
    ck_assert_uint_eq(cfg->n_listeners, 2);
    ck_assert(cfg->listeners[0].shared && cfg->listeners[1].shared);
    rt_config_free(cfg);
}

END_TEST

START_TEST(test_crossbar_style_config)
{
    const char *json =
            "{'$schema':'https://raw.githubusercontent.com/crossbario/crossbar/master/"
            "crossbar.json',"
            "'version':2,'controller':{'options':{'shutdown':['shutdown_on_last_worker_exit'],"
            "'title':'node'}},"
            "'workers':[{'type':'router','options':{'pythonpath':['..'],'title':'router'},"
            "'realms':[{'name':'com.example.app','options':{'uri_check':'loose',"
            "'enable_meta_api':false,'event_dispatching_chunk_size':100},"
            "'roles':["
            "{'name':'backend','permissions':[{'uri':'com.example.*','allow':{'call':true,"
            "'register':true,'publish':true,'subscribe':true},'disclose':{'caller':true,"
            "'publisher':true},'cache':true}]},"
            "{'name':'frontend','permissions':[{'uri':'com.example.api.*','allow':{'call':true,"
            "'subscribe':true}},{'uri':'com.example.api.admin','match':'exact','allow':{}}]}]}],"
            "'transports':[{'type':'web','id':'web1','endpoint':{'type':'tcp','port':8080,"
            "'backlog':1024,'shared':false,'version':4},"
            "'options':{'access_log':true},"
            "'paths':{'ws':{'type':'websocket','serializers':['json','msgpack'],"
            "'auth':{'anonymous':{'type':'static','role':'frontend'}},"
            "'options':{'allowed_origins':['*'],'allow_null_origin':true,'enable_webstatus':false,"
            "'max_frame_size':1048576,'max_message_size':1048576,'auto_fragment_size':65536,"
            "'fail_by_drop':true,'open_handshake_timeout':2500,'close_handshake_timeout':1000,"
            "'auto_ping_interval':10000,'auto_ping_timeout':5000,'auto_ping_size':12,"
            "'compression':{'deflate':{'request_no_context_takeover':false}}}}}},"
            "{'type':'websocket','endpoint':{'type':'tcp','port':9000,'interface':'::1',"
            "'version':6,'shared':true},'url':'ws://localhost:9000/wamp?x=1','debug':false,"
            "'serializers':['msgpack']}]}]}";
    rt_config *cfg = load_ok(json);
    ck_assert_uint_eq(cfg->n_realms, 1);
    const rt_realm_config *r = rt_config_find_realm(cfg, "com.example.app");
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->n_roles, 2);
    ck_assert_str_eq(r->roles[0].permissions[0].uri, "com.example.");
    ck_assert_int_eq(r->roles[0].permissions[0].match, WAMP_MATCH_PREFIX);
    ck_assert(r->roles[0].permissions[0].disclose_caller);
    ck_assert_str_eq(r->roles[1].permissions[1].uri, "com.example.api.admin");
    ck_assert(!r->roles[1].permissions[1].allow_call);

    ck_assert_uint_eq(cfg->n_listeners, 2);
    const rt_listener *web = &cfg->listeners[0];
    ck_assert_str_eq(web->id, "web1");
    ck_assert_ptr_null(web->interface);
    ck_assert_str_eq(web->path, "/ws");
    ck_assert_uint_eq(web->max_message_size, 1 * MIB);
    ck_assert_uint_eq(web->auto_ping_interval_ms, 10000);
    ck_assert_uint_eq(web->auto_ping_timeout_ms, 5000);
    ck_assert_str_eq(web->anonymous_role, "frontend");
    ck_assert(!web->shared);
    const rt_listener *ws = &cfg->listeners[1];
    ck_assert(ws->shared);
    ck_assert_str_eq(ws->id, "transport2");
    ck_assert_str_eq(ws->interface, "::1");
    ck_assert_int_eq(ws->port, 9000);
    ck_assert_str_eq(ws->path, "/wamp");
    ck_assert(!ws->ser_json && ws->ser_msgpack);
    ck_assert_str_eq(ws->anonymous_role, "anonymous");
    rt_config_free(cfg);
}

END_TEST

/* Several WebSocket paths on one web transport: each after the first is a listener of its own
 * (path, serializers, auth) that shares the transport's socket; nested ones too, and those of a
 * universal transport's web part after its RawSocket part. */
START_TEST(test_web_several_websocket_paths)
{
    rt_config *cfg = load_ok(WITH_T(
            "{'type':'web','id':'web1','endpoint':{'type':'tcp','port':8080,'interface':"
            "'127.0.0.1'},'paths':{'ws':{'type':'websocket'},"
            "'ws2':{'type':'websocket','serializers':['msgpack'],'auth':{'anonymous':{'type':"
            "'static','role':'r2'}},'options':{'max_message_size':2048}},"
            "'/':{'type':'static','directory':'x'},"
            "'app':{'type':'path','paths':{'ws':{'type':'websocket','id':'appws'}}},"
            "'My-App':{'type':'path','paths':{'ws':{'type':'websocket'}}}}},"
            "{'type':'universal','endpoint':{'type':'tcp','port':8081},'rawsocket':{},"
            "'websocket':{'ws':{},'ws3':{}},'web':{'paths':{'more':{'type':'websocket'}}}}"));
    ck_assert_uint_eq(cfg->n_listeners, 8);
    const rt_listener *w = cfg->listeners;
    ck_assert_str_eq(w[0].id, "web1");
    ck_assert_str_eq(w[0].path, "/ws");
    ck_assert(!w[0].shares_port);
    ck_assert_uint_eq(w[0].n_web, 1);
    ck_assert_str_eq(w[1].id, "web1_ws2");
    ck_assert_str_eq(w[1].path, "/ws2");
    ck_assert(w[1].shares_port);
    ck_assert_uint_eq(w[1].shares_port_of, 0);
    ck_assert_int_eq(w[1].port, 8080);
    ck_assert_str_eq(w[1].interface, "127.0.0.1");
    ck_assert(!w[1].ser_json && w[1].ser_msgpack);
    ck_assert_str_eq(w[1].anonymous_role, "r2");
    ck_assert_uint_eq(w[1].max_message_size, 2048);
    ck_assert_str_eq(w[2].id, "appws");
    ck_assert_str_eq(w[2].path, "/app/ws");
    ck_assert(w[2].shares_port);
    ck_assert_str_eq(w[2].anonymous_role, "anonymous");
    ck_assert_str_eq(w[3].id, "web1_my_app_ws"); /* made to follow the ID rule */
    ck_assert_str_eq(w[3].path, "/My-App/ws");
    /* The universal transport: WebSocket part (two paths), RawSocket part, the web part's
     * path. */
    ck_assert_str_eq(w[4].path, "/ws");
    ck_assert(!w[4].shares_port);
    ck_assert_str_eq(w[5].id, "transport2_ws3");
    ck_assert_str_eq(w[5].path, "/ws3");
    ck_assert_uint_eq(w[5].shares_port_of, 4);
    ck_assert_int_eq(w[6].kind, RT_TRANSPORT_RAWSOCKET);
    ck_assert_str_eq(w[6].id, "transport2_rawsocket");
    ck_assert_uint_eq(w[6].shares_port_of, 4);
    ck_assert_int_eq(w[7].kind, RT_TRANSPORT_WEBSOCKET);
    ck_assert_str_eq(w[7].id, "transport2_more");
    ck_assert_str_eq(w[7].path, "/more");
    ck_assert_uint_eq(w[7].shares_port_of, 4);
    ck_assert_int_eq(w[7].port, 8081);
    rt_config_free(cfg);
}

END_TEST

/* A web transport's HTTP services (Crossbar's path services), nested paths flattened into URL
 * prefixes, and a static directory resolved against the config file's directory. */
START_TEST(test_web_services)
{
    char *text = dq(WITH_T(
            "{'type':'web','endpoint':{'type':'tcp','port':8080},'paths':{"
            "'/':{'type':'static','directory':'../web','options':{'enable_directory_listing':"
            "true,'mime_types':{'.wasm':'application/wasm'},'cache_timeout':null,"
            "'default_file':'index.html'}},"
            "'ws':{'type':'websocket','serializers':['json']},"
            "'abs':{'type':'static','directory':'/srv/files'},"
            "'old':{'type':'redirect','url':'https://example.com/new'},"
            "'info':{'type':'nodeinfo','id':'info1'},"
            "'trace':{'type':'wampscope-trace-viewer'},"
            "'cfg':{'type':'json','value':{'url':'ws://x/ws','n':[1,2.5,null],'s':'\u00e9'}},"
            "'cfgp':{'type':'json','value':[1],'options':{'prettify':true,"
            "'discourage_caching':true,'allow_cross_origin':false}},"
            "'app':{'type':'path','paths':{'/':{'type':'static','directory':'app'},"
            "'deep':{'type':'path','paths':{'n':{'type':'nodeinfo'}}}}}}},"
            "{'type':'universal','endpoint':{'type':'tcp','port':8081},'rawsocket':{},"
            "'web':{'paths':{'/':{'type':'wampscope-trace-viewer'}}}}"));
    rt_config_diag diag = {0};
    rt_config *cfg = NULL;
    wamp_err rc = rt_config_parse(text, strlen(text), "/etc/node", &cfg, &diag);
    free(text);
    ck_assert_msg(rc == WAMP_OK, "%s", diag.n_errors ? diag.errors[0] : "?");
    rt_config_diag_fini(&diag);
    ck_assert_uint_eq(cfg->n_listeners, 3);
    const rt_listener *l = &cfg->listeners[0];
    ck_assert_str_eq(l->path, "/ws");
    ck_assert(l->ser_json && !l->ser_msgpack);
    ck_assert_uint_eq(l->n_web, 9);
    const rt_web_path *w = l->web;
    ck_assert_str_eq(w[0].prefix, "/");
    ck_assert_int_eq(w[0].kind, RT_WEB_STATIC);
    ck_assert_str_eq(w[0].directory, "/etc/node/../web");
    ck_assert(w[0].listing);
    ck_assert_int_eq(w[0].cache_secs, -1);
    ck_assert_str_eq(w[0].default_file, "index.html");
    ck_assert_uint_eq(w[0].n_mime_types, 1);
    ck_assert_str_eq(w[0].mime_types[0].ext, ".wasm");
    ck_assert_str_eq(w[0].mime_types[0].type, "application/wasm");
    ck_assert_str_eq(w[1].prefix, "/abs");
    ck_assert_str_eq(w[1].directory, "/srv/files");
    ck_assert(!w[1].listing);
    ck_assert_int_eq(w[1].cache_secs, 43200);
    ck_assert_ptr_null(w[1].default_file);
    ck_assert_str_eq(w[2].prefix, "/old");
    ck_assert_int_eq(w[2].kind, RT_WEB_REDIRECT);
    ck_assert_str_eq(w[2].url, "https://example.com/new");
    ck_assert_str_eq(w[3].prefix, "/info");
    ck_assert_int_eq(w[3].kind, RT_WEB_NODEINFO);
    ck_assert_str_eq(w[4].prefix, "/trace");
    ck_assert_int_eq(w[4].kind, RT_WEB_VIEWER);
    ck_assert_int_eq(w[5].kind, RT_WEB_JSON);
    ck_assert_str_eq(w[5].body, "{\"url\":\"ws://x/ws\",\"n\":[1,2.5,null],\"s\":\"\xc3\xa9\"}");
    ck_assert_uint_eq(w[5].body_len, strlen(w[5].body));
    ck_assert(!w[5].no_store);
    ck_assert_str_eq(w[6].body, "[\n   1\n]");
    ck_assert(w[6].no_store);
    ck_assert_str_eq(w[7].prefix, "/app");
    ck_assert_str_eq(w[7].directory, "/etc/node/app");
    ck_assert_str_eq(w[8].prefix, "/app/deep/n");
    ck_assert_int_eq(w[8].kind, RT_WEB_NODEINFO);
    /* A universal transport with a web part and no WebSocket part: HTTP only, no WAMP path. */
    const rt_listener *u = &cfg->listeners[1];
    ck_assert_int_eq(u->kind, RT_TRANSPORT_WEBSOCKET);
    ck_assert_ptr_null(u->path);
    ck_assert_uint_eq(u->n_web, 1);
    ck_assert_int_eq(u->web[0].kind, RT_WEB_VIEWER);
    ck_assert_int_eq(cfg->listeners[2].kind, RT_TRANSPORT_RAWSOCKET);
    ck_assert(cfg->listeners[2].shares_port);
    rt_config_free(cfg);
}

END_TEST

START_TEST(test_web_root_path_and_auth_defaults)
{
    rt_config *cfg = load_ok(WITH_T("{'type':'web','endpoint':{'type':'tcp','port':8080},"
                                    "'paths':{'/':{'type':'websocket','auth':{}}}},"
                                    "{'type':'websocket','endpoint':{'type':'tcp','port':8081},"
                                    "'auth':{'anonymous':{'type':'static'}}}"));
    ck_assert_str_eq(cfg->listeners[0].path, "/");
    /* Crossbar: an empty "auth" is no auth, i.e. anonymous as "anonymous". */
    ck_assert_str_eq(cfg->listeners[0].anonymous_role, "anonymous");
    ck_assert_str_eq(cfg->listeners[1].anonymous_role, "anonymous");
    rt_config_free(cfg);
}

END_TEST

START_TEST(test_rawsocket_min_length)
{
    rt_config *cfg = load_ok(STD(""));
    ck_assert_uint_eq(cfg->limits.rawsocket_min_length, 512);
    rt_config_free(cfg);
    cfg = load_ok(WITH_WAMPSCOPE("{'limits':{'rawsocket_min_length':65536}}"));
    ck_assert_uint_eq(cfg->limits.rawsocket_min_length, 65536);
    rt_config_free(cfg);
    char err[ERR_LEN] = "";
    ck_assert_int_eq(load_q(WITH_WAMPSCOPE("{'limits':{'rawsocket_min_length':511}}"), &cfg, err),
                     WAMP_EINVAL);
    ck_assert_str_eq(err, P_WS ".limits.rawsocket_min_length: must be an integer 512..16777216 "
                               "bytes");
}

END_TEST

START_TEST(test_rawsocket_transports)
{
    rt_config *cfg = load_ok(
            WITH_T(T1 ",{'type':'rawsocket','id':'rs1','endpoint':{'type':'tcp','port':8081,"
                      "'interface':'127.0.0.1'},'serializers':['msgpack'],'debug':false,"
                      "'options':{'max_message_size':65536,'max_connections':3},"
                      "'auth':{'anonymous':{'type':'static',"
                      "'role':'backend'}}},"
                      "{'type':'rawsocket','endpoint':{'type':'unix','path':'/run/w.sock',"
                      "'backlog':10},'max_message_size':4096},"
                      "{'type':'rawsocket','endpoint':{'type':'unix','path':'/run/x.sock'}}"));
    ck_assert_uint_eq(cfg->n_listeners, 4);
    const rt_listener *a = &cfg->listeners[1];
    ck_assert_int_eq(a->kind, RT_TRANSPORT_RAWSOCKET);
    ck_assert_str_eq(a->id, "rs1");
    ck_assert_int_eq(a->port, 8081);
    ck_assert_str_eq(a->interface, "127.0.0.1");
    ck_assert_ptr_null(a->unix_path);
    ck_assert_ptr_null(a->path);
    ck_assert(!a->ser_json);
    ck_assert(a->ser_msgpack);
    ck_assert_uint_eq(a->max_message_size, 65536);
    ck_assert_uint_eq(a->max_connections, 3);
    ck_assert_str_eq(a->anonymous_role, "backend");
    const rt_listener *b = &cfg->listeners[2];
    ck_assert_int_eq(b->kind, RT_TRANSPORT_RAWSOCKET);
    ck_assert_str_eq(b->id, "transport3");
    ck_assert_str_eq(b->unix_path, "/run/w.sock");
    ck_assert_int_eq(b->port, 0);
    ck_assert(b->ser_json && b->ser_msgpack);
    ck_assert_uint_eq(b->max_message_size, 4096); /* older Crossbar's top-level key */
    ck_assert_uint_eq(b->max_connections, 0);     /* no limit */
    ck_assert_str_eq(b->anonymous_role, "anonymous");
    ck_assert_uint_eq(cfg->listeners[3].max_message_size, 16777216); /* limits default */
    ck_assert_int_eq(cfg->listeners[0].kind, RT_TRANSPORT_WEBSOCKET);
    ck_assert_ptr_null(cfg->listeners[0].unix_path);
    ck_assert_ptr_null(cfg->listeners[0].tls_certificate);
    rt_config_free(cfg);
}

END_TEST

/* TLS file names are kept as given (readable files: /dev/null stands in for PEM files here;
 * lws checks their content when it creates the vhost). */
START_TEST(test_tls_endpoint)
{
    rt_config *cfg = load_ok(WITH_T(
            "{'type':'websocket','endpoint':{'type':'tcp','port':8443,'tls':{'key':'/dev/null',"
            "'certificate':'/dev/null','ciphers':'ECDHE-RSA-AES128-GCM-SHA256'}}},"
            "{'type':'rawsocket','endpoint':{'type':'tcp','port':8444,'tls':{'key':'/dev/null',"
            "'certificate':'/dev/null'}}}"));
    ck_assert_str_eq(cfg->listeners[0].tls_key, "/dev/null");
    ck_assert_str_eq(cfg->listeners[0].tls_certificate, "/dev/null");
    ck_assert_str_eq(cfg->listeners[0].tls_ciphers, "ECDHE-RSA-AES128-GCM-SHA256");
    ck_assert_str_eq(cfg->listeners[1].tls_certificate, "/dev/null");
    ck_assert_ptr_null(cfg->listeners[1].tls_ciphers);
    rt_config_free(cfg);
}

END_TEST

/* A universal transport with both parts is two listeners on one port; the RawSocket part
 * shares the WebSocket part's socket. With one part it is an ordinary listener. */
START_TEST(test_universal_transports)
{
    rt_config *cfg = load_ok(WITH_T(
            "{'type':'universal','id':'uni','endpoint':{'type':'tcp','port':8081,"
            "'interface':'127.0.0.1'},'rawsocket':{'serializers':['msgpack'],'options':"
            "{'max_message_size':4096},'auth':{'anonymous':{'type':'static','role':'raw'}}},"
            "'websocket':{'ws':{'type':'websocket','serializers':['json']}}}," T1 ","
            "{'type':'universal','endpoint':{'type':'tcp','port':8082},'rawsocket':{'id':"
            "'only_raw'}},"
            "{'type':'universal','endpoint':{'type':'tcp','port':8083},'websocket':{'/':{}}}"));
    ck_assert_uint_eq(cfg->n_listeners, 5);
    const rt_listener *w = &cfg->listeners[0];
    const rt_listener *r = &cfg->listeners[1];
    ck_assert_int_eq(w->kind, RT_TRANSPORT_WEBSOCKET);
    ck_assert_str_eq(w->id, "uni");
    ck_assert_str_eq(w->path, "/ws");
    ck_assert(w->ser_json && !w->ser_msgpack);
    ck_assert(!w->shares_port);
    ck_assert_str_eq(w->anonymous_role, "anonymous");
    ck_assert_int_eq(r->kind, RT_TRANSPORT_RAWSOCKET);
    ck_assert_str_eq(r->id, "uni_rawsocket");
    ck_assert(r->shares_port);
    ck_assert_uint_eq(r->shares_port_of, 0);
    ck_assert_int_eq(r->port, 8081);
    ck_assert_str_eq(r->interface, "127.0.0.1");
    ck_assert(!r->ser_json && r->ser_msgpack);
    ck_assert_uint_eq(r->max_message_size, 4096);
    ck_assert_str_eq(r->anonymous_role, "raw");
    ck_assert_int_eq(cfg->listeners[2].port, 8080); /* T1 */
    const rt_listener *o = &cfg->listeners[3];
    ck_assert_int_eq(o->kind, RT_TRANSPORT_RAWSOCKET);
    ck_assert_str_eq(o->id, "only_raw");
    ck_assert(!o->shares_port);
    ck_assert_int_eq(o->port, 8082);
    const rt_listener *ow = &cfg->listeners[4];
    ck_assert_int_eq(ow->kind, RT_TRANSPORT_WEBSOCKET);
    ck_assert_str_eq(ow->id, "transport4");
    ck_assert_str_eq(ow->path, "/");
    rt_config_free(cfg);
}

END_TEST

/* ---- wampscope.tracing.flight_recorder ----------------------------------------------------- */

START_TEST(test_flight_recorder_config)
{
    /* Default on (no tracing key, an empty tracing object, true, an empty object). */
    const char *on[] = {
            WITH_WAMPSCOPE("{}"),
            WITH_WAMPSCOPE("{'tracing':{}}"),
            WITH_WAMPSCOPE("{'tracing':{'flight_recorder':true}}"),
            WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{}}}"),
            WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'enabled':true}}}"),
            WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'options':{}}}}"),
    };
    for (size_t i = 0; i < sizeof(on) / sizeof(on[0]); i++) {
        rt_config *cfg = load_ok(on[i]);
        assert_flight_recorder_default(cfg);
        ck_assert(cfg->tracing_flight_from_wire); /* read from the wire capture by default */
        rt_config_free(cfg);
    }
    /* Off. */
    const char *off[] = {
            WITH_WAMPSCOPE("{'tracing':{'flight_recorder':false}}"),
            WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'enabled':false}}}"),
            WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'enabled':false,'options':{"
                           "'limit':5}}}}"),
    };
    for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
        rt_config *cfg = load_ok(off[i]);
        ck_assert_ptr_null(cfg->tracing_flight_recorder);
        ck_assert(!cfg->tracing_flight_from_wire);
        rt_config_free(cfg);
    }
    /* Recorded per message: asked for, or persisted (a persisted one always is). */
    rt_config *pm = load_ok(WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'from_wire':false}}}"));
    assert_flight_recorder_default(pm);
    ck_assert(!pm->tracing_flight_from_wire);
    rt_config_free(pm);
    pm = load_ok(WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'options':{'persist':true}}}}"));
    ck_assert(!pm->tracing_flight_from_wire);
    rt_config_free(pm);
    char err[ERR_LEN] = "";
    ck_assert_int_eq(load_q(WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'from_wire':true,"
                                           "'options':{'persist':true}}}}"),
                            &pm, err),
                     WAMP_EINVAL);
    ck_assert_str_eq(err, P_WS ".tracing.flight_recorder.from_wire: a persisted flight recorder "
                               "records each message as it goes: from_wire needs options.persist "
                               "false");
    ck_assert_int_eq(
            load_q(WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'from_wire':1}}}"), &pm, err),
            WAMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "flight_recorder.from_wire"));
    /* Options go over the flight recorder's defaults; the others stay. */
    rt_config *cfg = load_ok(WITH_WAMPSCOPE(
            "{'tracing':{'flight_recorder':{'options':{'limit':500,'realms':['realm1'],"
            "'persist':true,'msg_types':['Call','Result']}}}}"));
    char *s = flight_options(cfg);
    ck_assert_str_eq(s, "{\"limit\":500,\"msg_types\":[\"Call\",\"Result\"],\"persist\":true,"
                        "\"realms\":[\"realm1\"],\"trace_app_payload\":false}");
    free(s);
    rt_config_free(cfg);
    cfg = load_ok(WITH_WAMPSCOPE(
            "{'tracing':{'flight_recorder':{'enabled':true,'options':{'trace_app_payload':true,"
            "'duration':60}}}}"));
    s = flight_options(cfg);
    ck_assert_str_eq(s, "{\"duration\":60,\"limit\":10000,\"trace_app_payload\":true}");
    free(s);
    rt_config_free(cfg);
}

END_TEST

START_TEST(test_wampscope_values)
{
    rt_config *cfg = load_ok(WITH_WAMPSCOPE(
            "{'limits':{'max_message_size':1024,'max_queue_bytes':2048,'max_queue_messages':1,"
            "'hello_timeout':100,'shutdown_grace':0,'max_call_timeout':1000,"
            "'max_retained_topics':1,'max_retained_bytes':1024,"
            "'slow_consumer':'drop_oldest_events'},'management':{"
            "'realm':'ops','enabled':"
            "false},'tracing':{'max_traces':1024,'default_limit':1,'default_max_bytes':1024},"
            "'log_level':'debug'}"));
    ck_assert_uint_eq(cfg->limits.max_message_size, 1024);
    ck_assert_uint_eq(cfg->limits.max_queue_bytes, 2048);
    ck_assert_uint_eq(cfg->limits.max_queue_messages, 1);
    ck_assert_uint_eq(cfg->limits.hello_timeout_ms, 100);
    ck_assert_uint_eq(cfg->limits.shutdown_grace_ms, 0);
    ck_assert_uint_eq(cfg->limits.max_call_timeout_ms, 1000);
    ck_assert_uint_eq(cfg->limits.max_retained_topics, 1);
    ck_assert_uint_eq(cfg->limits.max_retained_bytes, 1024);
    ck_assert_int_eq(cfg->limits.slow_consumer, RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS);
    /* The transport's max_message_size defaults to the limit. */
    ck_assert_uint_eq(cfg->listeners[0].max_message_size, 1024);
    ck_assert_str_eq(cfg->mgmt_realm, "ops");
    ck_assert(!cfg->mgmt_enabled);
    ck_assert_uint_eq(cfg->tracing_max_traces, 1024);
    ck_assert_uint_eq(cfg->tracing_default_limit, 1);
    ck_assert_uint_eq(cfg->tracing_default_max_bytes, 1024);
    ck_assert_str_eq(cfg->log_level, "debug");
    rt_config_free(cfg);

    /* The upper ends of the trace options' ranges; max_traces keeps its default. */
    cfg = load_ok(
            WITH_WAMPSCOPE("{'tracing':{'default_limit':10000000,'default_max_bytes':1099511627776,"
                           "'write_backlog':262144}}"));
    ck_assert_uint_eq(cfg->tracing_write_backlog, 256 * 1024);
    ck_assert_uint_eq(cfg->tracing_max_traces, 16);
    ck_assert_uint_eq(cfg->tracing_default_limit, 10000000);
    ck_assert_uint_eq(cfg->tracing_default_max_bytes, (uint64_t)1 << 40);
    rt_config_free(cfg);

    /* A disabled management realm may share its name with an application realm. */
    cfg = load_ok(WITH_WAMPSCOPE("{'management':{'realm':'realm1','enabled':false}}"));
    ck_assert(!cfg->mgmt_enabled);
    rt_config_free(cfg);
}

END_TEST

/* ---- wampscope.management.trusted_networks ------------------------------------------------ */

#define WITH_TRUSTED(list) WITH_WAMPSCOPE("{'management':{'trusted_networks':" list "}}")

/* CIDR networks and bare addresses (= /32, /128), IPv4 and IPv6, in the order given. */
START_TEST(test_trusted_networks_explicit)
{
    rt_config *cfg = load_ok(WITH_TRUSTED("['10.0.0.0/8','192.168.1.7','2001:db8::/32','fe80::1',"
                                          "'172.16.0.0/12','::fffe:0:0/95']"));
    ck_assert_uint_eq(cfg->n_mgmt_trusted, 6);
    const rt_cidr *bare4 = &cfg->mgmt_trusted[1];
    static const uint8_t a4[16] = {192, 168, 1, 7};
    ck_assert_int_eq(bare4->family, RT_IP_V4);
    ck_assert_uint_eq(bare4->prefix, 32);
    ck_assert_mem_eq(bare4->addr, a4, 16);
    ck_assert_int_eq(cfg->mgmt_trusted[3].family, RT_IP_V6);
    ck_assert_uint_eq(cfg->mgmt_trusted[3].prefix, 128);
    assert_trusted_str(cfg, "10.0.0.0/8, 192.168.1.7/32, 2001:db8::/32, fe80::1/128, "
                            "172.16.0.0/12, ::fffe:0:0/95");

    ck_assert(peer_trusted(cfg, "10.0.0.0:1"));
    ck_assert(peer_trusted(cfg, "10.255.255.255:65535"));
    ck_assert(!peer_trusted(cfg, "9.255.255.255:1"));
    ck_assert(!peer_trusted(cfg, "11.0.0.0:1"));
    ck_assert(peer_trusted(cfg, "192.168.1.7:1"));
    ck_assert(!peer_trusted(cfg, "192.168.1.6:1"));
    ck_assert(!peer_trusted(cfg, "192.168.1.8:1"));
    ck_assert(peer_trusted(cfg, "172.16.0.1:1"));
    ck_assert(peer_trusted(cfg, "172.31.255.255:1"));
    ck_assert(!peer_trusted(cfg, "172.32.0.0:1"));
    ck_assert(!peer_trusted(cfg, "172.15.255.255:1"));
    /* An explicit list replaces the loopback default. */
    ck_assert(!peer_trusted(cfg, "127.0.0.1:1"));
    ck_assert(!peer_trusted(cfg, "[::1]:1"));

    ck_assert(peer_trusted(cfg, "[2001:db8::]:443"));
    ck_assert(peer_trusted(cfg, "[2001:DB8:ffff:ffff::1]:443"));
    ck_assert(!peer_trusted(cfg, "[2001:db9::]:443"));
    ck_assert(!peer_trusted(cfg, "[2001:db7:ffff::]:443"));
    ck_assert(peer_trusted(cfg, "[fe80::1]:1"));
    ck_assert(!peer_trusted(cfg, "[fe80::2]:1"));

    /* IPv4-mapped peers are matched as IPv4: against the IPv4 entries, and never against an IPv6
     * network that happens to cover ::ffff:0:0/96 (entry 5 is ::fffe:0:0/95). */
    ck_assert(peer_trusted(cfg, "[::ffff:10.1.2.3]:1"));
    ck_assert(peer_trusted(cfg, "::ffff:192.168.1.7"));
    ck_assert(!peer_trusted(cfg, "[::ffff:11.1.2.3]:1"));
    ck_assert(peer_trusted(cfg, "[::fffe:1:2]:1"));
    rt_config_free(cfg);
}

END_TEST

/* wampscope.management.allowed_origins: web origins, kept as given; anything else refused. */
START_TEST(test_allowed_origins)
{
    rt_config *cfg = load_ok(WITH_WAMPSCOPE(
            "{'management':{'allowed_origins':['http://127.0.0.1:8000','https://ops.example']}}"));
    ck_assert_uint_eq(json_array_size(cfg->mgmt_origins), 2);
    ck_assert_str_eq(json_string_value(json_array_get(cfg->mgmt_origins, 1)),
                     "https://ops.example");
    rt_config_free(cfg);
    cfg = load_ok(WITH_WAMPSCOPE("{'management':{}}"));
    ck_assert_ptr_null(cfg->mgmt_origins);
    rt_config_free(cfg);
    static const char *const bad[] = {
            WITH_WAMPSCOPE("{'management':{'allowed_origins':'http://a:1'}}"),
            WITH_WAMPSCOPE("{'management':{'allowed_origins':[1]}}"),
            WITH_WAMPSCOPE("{'management':{'allowed_origins':['ftp://a:1']}}"),
            WITH_WAMPSCOPE("{'management':{'allowed_origins':['http://a:1/viewer']}}"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[ERR_LEN] = "";
        cfg = NULL;
        ck_assert_int_eq(load_q(bad[i], &cfg, err), WAMP_EINVAL);
        ck_assert_msg(strstr(err, "management.allowed_origins") != NULL, "%s", err);
    }
}

END_TEST

/* An HTTP bridge path may not act in the management realm: its requests join without a HELLO,
 * past the management realm's access rules. */
START_TEST(test_bridge_not_on_management_realm)
{
    char err[ERR_LEN] = "";
    rt_config *cfg = NULL;
    ck_assert_int_eq(load_q(WITH_PATHS("{'call':{'type':'caller','realm':'mgmt','role':'admin'}}"),
                            &cfg, err),
                     WAMP_EINVAL);
    ck_assert_msg(strstr(err, "the HTTP bridge path /call") && strstr(err, "management realm"),
                  "%s", err);
    cfg = load_ok(WITH_PATHS("{'call':{'type':'caller','realm':'realm1','role':'anonymous'}}"));
    rt_config_free(cfg);
}

END_TEST

/* /0, and prefixes that do not end on a byte boundary. */
START_TEST(test_trusted_networks_prefixes)
{
    rt_config *cfg = load_ok(WITH_TRUSTED("['0.0.0.0/0']"));
    ck_assert(peer_trusted(cfg, "0.0.0.0:1"));
    ck_assert(peer_trusted(cfg, "255.255.255.255:1"));
    ck_assert(peer_trusted(cfg, "[::ffff:192.0.2.1]:1"));
    ck_assert(!peer_trusted(cfg, "[::1]:1"));
    ck_assert(!peer_trusted(cfg, "[2001:db8::1]:1"));
    rt_config_free(cfg);

    cfg = load_ok(WITH_TRUSTED("['::/0']"));
    ck_assert(peer_trusted(cfg, "[::1]:1"));
    ck_assert(peer_trusted(cfg, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:1"));
    ck_assert(!peer_trusted(cfg, "127.0.0.1:1"));
    ck_assert(!peer_trusted(cfg, "[::ffff:127.0.0.1]:1"));
    rt_config_free(cfg);

    cfg = load_ok(WITH_TRUSTED("['192.168.2.0/23','2001:db8:8000::/33','10.0.0.0/31']"));
    assert_trusted_str(cfg, "192.168.2.0/23, 2001:db8:8000::/33, 10.0.0.0/31");
    ck_assert(!peer_trusted(cfg, "192.168.1.255:1"));
    ck_assert(peer_trusted(cfg, "192.168.2.0:1"));
    ck_assert(peer_trusted(cfg, "192.168.3.255:1"));
    ck_assert(!peer_trusted(cfg, "192.168.4.0:1"));
    ck_assert(!peer_trusted(cfg, "[2001:db8:7fff:ffff::]:1"));
    ck_assert(peer_trusted(cfg, "[2001:db8:8000::]:1"));
    ck_assert(peer_trusted(cfg, "[2001:db8:ffff:ffff::1]:1"));
    ck_assert(!peer_trusted(cfg, "[2001:db9::]:1"));
    ck_assert(peer_trusted(cfg, "10.0.0.0:1"));
    ck_assert(peer_trusted(cfg, "10.0.0.1:1"));
    ck_assert(!peer_trusted(cfg, "10.0.0.2:1"));
    rt_config_free(cfg);

    cfg = load_ok(WITH_TRUSTED("['127.0.0.1/32','127.0.0.1']")); /* duplicates are harmless */
    ck_assert_uint_eq(cfg->n_mgmt_trusted, 2);
    ck_assert(peer_trusted(cfg, "127.0.0.1:1"));
    ck_assert(!peer_trusted(cfg, "127.0.0.2:1"));
    rt_config_free(cfg);
}

END_TEST

/* [] = no anonymous access to the management realm from anywhere; still a non-NULL list. */
START_TEST(test_trusted_networks_empty)
{
    rt_config *cfg = load_ok(WITH_TRUSTED("[]"));
    ck_assert_ptr_nonnull(cfg->mgmt_trusted);
    ck_assert_uint_eq(cfg->n_mgmt_trusted, 0);
    assert_trusted_str(cfg, "");
    ck_assert(!peer_trusted(cfg, "127.0.0.1:1"));
    ck_assert(!peer_trusted(cfg, "[::1]:1"));
    ck_assert(!peer_trusted(cfg, "[::ffff:127.0.0.1]:1"));
    rt_config_free(cfg);

    /* The list is checked even when management is disabled. */
    cfg = load_ok(WITH_WAMPSCOPE("{'management':{'enabled':false,'trusted_networks':['::1']}}"));
    assert_trusted_str(cfg, "::1/128");
    rt_config_free(cfg);
}

END_TEST

/* A hand-built config (tests/support/test_router.c) has no list: the loopback rule applies. */
START_TEST(test_trusted_networks_hand_built)
{
    rt_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    assert_trusted_str(&cfg, "127.0.0.0/8, ::1/128");
    ck_assert(peer_trusted(&cfg, "127.0.0.1:50000"));
    ck_assert(peer_trusted(&cfg, "127.255.255.254:1"));
    ck_assert(!peer_trusted(&cfg, "128.0.0.1:1"));
    ck_assert(!peer_trusted(&cfg, "192.0.2.7:4000"));
    ck_assert(peer_trusted(&cfg, "[::1]:1"));
    ck_assert(!peer_trusted(&cfg, "[::2]:1"));
    ck_assert(peer_trusted(&cfg, "[::ffff:127.0.0.2]:1"));
    ck_assert(!peer_trusted(&cfg, ""));

    /* A non-NULL empty list admits nobody. */
    rt_cidr none[1];
    memset(none, 0, sizeof(none));
    cfg.mgmt_trusted = none;
    ck_assert(!peer_trusted(&cfg, "127.0.0.1:50000"));
    assert_trusted_str(&cfg, "");

    /* A hand-built IPv4-mapped address (not from rt_config_parse_peer_addr) is unmapped too. */
    rt_cidr net = {.family = RT_IP_V4, .addr = {192, 0, 2, 0}, .prefix = 24};
    cfg.mgmt_trusted = &net;
    cfg.n_mgmt_trusted = 1;
    rt_cidr mapped = {.family = RT_IP_V6, .addr = {[10] = 0xff, 0xff, 192, 0, 2, 9}, .prefix = 0};
    ck_assert(rt_config_is_trusted(&cfg, &mapped));
    rt_cidr none_family = {.addr = {192, 0, 2, 9}};
    ck_assert(!rt_config_is_trusted(&cfg, &none_family));
    ck_assert(!rt_config_is_trusted(NULL, &mapped));
    ck_assert(!rt_config_is_trusted(&cfg, NULL));
    ck_assert(!rt_config_peer_is_trusted(&cfg, NULL));
}

END_TEST

/* The forms of rt_peer.addr (rt_transport.h), bare addresses, and everything else. */
START_TEST(test_parse_peer_addr)
{
    rt_cidr a;
    static const uint8_t lo4[16] = {127, 0, 0, 1};
    static const uint8_t lo6[16] = {[15] = 1};
    static const uint8_t two[16] = {127, 0, 0, 2};

    ck_assert(rt_config_parse_peer_addr("127.0.0.1:54321", &a));
    ck_assert_int_eq(a.family, RT_IP_V4);
    ck_assert_uint_eq(a.prefix, 32);
    ck_assert_mem_eq(a.addr, lo4, 16);
    ck_assert(rt_config_parse_peer_addr("127.0.0.1", &a));
    ck_assert_mem_eq(a.addr, lo4, 16);
    ck_assert(rt_config_parse_peer_addr("[::1]:5555", &a));
    ck_assert_int_eq(a.family, RT_IP_V6);
    ck_assert_uint_eq(a.prefix, 128);
    ck_assert_mem_eq(a.addr, lo6, 16);
    ck_assert(rt_config_parse_peer_addr("[::1]", &a));
    ck_assert_mem_eq(a.addr, lo6, 16);
    ck_assert(rt_config_parse_peer_addr("::1", &a));
    ck_assert_mem_eq(a.addr, lo6, 16);
    ck_assert(rt_config_parse_peer_addr("[::ffff:127.0.0.2]:80", &a));
    ck_assert_int_eq(a.family, RT_IP_V4);
    ck_assert_uint_eq(a.prefix, 32);
    ck_assert_mem_eq(a.addr, two, 16);
    ck_assert(rt_config_parse_peer_addr("1.2.3.4:0", &a));
    ck_assert(
            rt_config_parse_peer_addr("[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65535", &a));

    static const char *const bad[] = {
            "",
            ":80",
            "127.0.0.1:",
            "127.0.0.1:65536",
            "127.0.0.1:x",
            "127.0.0.1:-1",
            "127.0.0.1:123456",
            "[127.0.0.1]:80",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[]:80",
            "localhost:80",
            "1.2.3.4.5:1",
            "010.0.0.1:1",
            "::1]:80",
            "fe80::1%lo",
            " 127.0.0.1:1",
            "[::1]:80:80",
            "1::2::3",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&a, 0xa5, sizeof(a));
        ck_assert_msg(!rt_config_parse_peer_addr(bad[i], &a), "accepted \"%s\"", bad[i]);
        ck_assert_msg(a.family == RT_IP_NONE && a.prefix == 0, "\"%s\": out not zeroed", bad[i]);
    }
    ck_assert(!rt_config_parse_peer_addr(NULL, &a));
}

END_TEST

START_TEST(test_format_trusted)
{
    rt_config *cfg = load_ok(WITH_TRUSTED("['10.0.0.0/8','11.0.0.0/8','12.0.0.0/8']"));
    char buf[64];
    const char *full = "10.0.0.0/8, 11.0.0.0/8, 12.0.0.0/8";
    rt_config_format_trusted(cfg, buf, strlen(full) + 1);
    ck_assert_str_eq(buf, full);
    rt_config_format_trusted(cfg, buf, strlen(full));
    ck_assert_str_eq(buf, "10.0.0.0/8, 11.0.0.0/8, ...");
    rt_config_format_trusted(cfg, buf, 16);
    ck_assert_str_eq(buf, "10.0.0.0/8, ...");
    rt_config_format_trusted(cfg, buf, 15);
    ck_assert_str_eq(buf, "...");
    rt_config_format_trusted(cfg, buf, 1);
    ck_assert_str_eq(buf, "");
    buf[0] = 'x';
    rt_config_format_trusted(cfg, buf, 0);
    ck_assert_int_eq(buf[0], 'x');
    rt_config_format_trusted(NULL, buf, sizeof(buf));
    ck_assert_str_eq(buf, "");

    rt_config_format_cidr(&cfg->mgmt_trusted[0], buf, sizeof(buf));
    ck_assert_str_eq(buf, "10.0.0.0/8");
    rt_config_format_cidr(&cfg->mgmt_trusted[0], buf, 10); /* one short */
    ck_assert_str_eq(buf, "");
    rt_cidr bad = {.family = RT_IP_NONE};
    rt_config_format_cidr(&bad, buf, sizeof(buf));
    ck_assert_str_eq(buf, "");
    rt_config_free(cfg);
}

END_TEST

typedef struct refusal {
    const char *json;
    const char *message;
} refusal;

#define P_TN    P_WS ".management.trusted_networks"
#define NOT_NET " is not an IPv4 or IPv6 network (\"a.b.c.d/n\", \"x::y/n\") or address"

static const refusal refusals[] = {
        /* Top level and controller. */
        {"[1]", "(top level): must be an object"},
        {TOP("'foo':1,"), "foo: unknown key"},
        {"{'version':1}", "version: must be 2 (Crossbar node configuration version 2)"},
        {"{'version':'2'}", "version: must be 2 (Crossbar node configuration version 2)"},
        {TOP("'$schema':5,"), "$schema: must be a string"},
        {"{'version':2}", "workers: must contain one worker of type \"router\""},
        {"{'workers':{}}", "workers: must be a list"},
        {TOP("'controller':{'id':'Node-1'},"),
         "controller.id: \"Node-1\" must match ^[a-z][a-z0-9_]{2,63}$ (Crossbar's ID rule)"},
        {TOP("'controller':{'keyring':{}},"), "controller.keyring: node keys are not supported"},
        {TOP("'controller':{'options':{'shutdown':'shutdown_never'}},"),
         "controller.options.shutdown: must be one of (or a list of) "
         "\"shutdown_on_shutdown_requested\", \"shutdown_on_worker_exit\", "
         "\"shutdown_on_worker_exit_with_error\", \"shutdown_on_last_worker_exit\""},
        {TOP("'controller':{'options':{'shutdown':['shutdown_on_worker_exit',3]}},"),
         "controller.options.shutdown: must be one of (or a list of) "
         "\"shutdown_on_shutdown_requested\", \"shutdown_on_worker_exit\", "
         "\"shutdown_on_worker_exit_with_error\", \"shutdown_on_last_worker_exit\""},
        {TOP("'controller':{'bogus':1},"), "controller.bogus: unknown key"},
        /* Workers. */
        {"{'workers':[{'type':'router','realms':[" R1 "],'transports':[" T1 "]},"
         "{'type':'container'}]}",
         "workers[1].type: container workers are not supported: wampscope runs no components; "
         "run them as separate WAMP clients that connect to one of this router's transports"},
        {"{'workers':[{'type':'guest'}]}",
         "workers[0].type: guest workers are not supported: start the program on its own (e.g. as "
         "a systemd service) and, if it is a WAMP client, let it connect to one of this router's "
         "transports"},
        {"{'workers':[{'type':'router','realms':[" R1 "],'transports':[" T1 "]},"
         "{'type':'router'}]}",
         "workers[1].type: a second router worker is not supported (wampscope runs one router "
         "per process; workers[0] is the router)"},
        {"{'workers':[{'type':'xbrmarket'}]}",
         "workers[0].type: worker type \"xbrmarket\" is not supported (wampscope runs one router "
         "worker)"},
        {TOP("'controller':{'fabric':{}},"),
         "controller.fabric: Crossbar FX management uplinks are not supported (wampscope has its "
         "own management realm)"},
        {TOP("'controller':{'enable_docker':true},"),
         "controller.enable_docker: Docker control is not supported"},
        {"{'workers':[{'id':'router1'}]}", "workers[0].type: is required"},
        {"{'workers':[5]}", "workers[0]: must be an object"},
        {STD(",'bogus':true"), "workers[0].bogus: unknown key"},
        {STD(",'id':'R1'"),
         "workers[0].id: \"R1\" must match ^[a-z][a-z0-9_]{2,63}$ (Crossbar's ID rule)"},
        {STD(",'manhole':[]"), "workers[0].manhole: must be an object"},
        {STD(",'options':{'env':{}}"),
         "workers[0].options.env: not supported (set the environment of the wampscope process)"},
        {STD(",'options':{'disabled':true}"),
         "workers[0].options.disabled: a disabled router worker leaves nothing to run"},
        {STD(",'options':{'title':1}"), "workers[0].options.title: must be a string"},
        {STD(",'options':{'frobnicate':1}"), "workers[0].options.frobnicate: unknown key"},
        {STD(",'components':[{'type':'class'}]"),
         "workers[0].components: router components are not supported: run them as separate WAMP "
         "clients that connect to one of this router's transports"},
        {STD(",'connections':[{}]"),
         "workers[0].connections: router connections are not supported"},
        /* Realms. */
        {WITH_REALM_KEYS("'rlinks':[{'id':'r2r'}]"),
         P_REALM ".rlinks: router-to-router links (rlinks) are not supported; wampscope's own "
                 "cluster (under construction) is to connect routers instead"},
        {WORKER("'transports':[" T1 "]"), "workers[0].realms: at least one realm is required"},
        {WORKER("'realms':[],'transports':[" T1 "]"),
         "workers[0].realms: at least one realm is required"},
        {WORKER("'realms':{},'transports':[" T1 "]"), "workers[0].realms: must be a list"},
        {WITH_R("{'roles':[]}"), P_REALM ".name: is required"},
        {WITH_R("{'name':'a b'}"), P_REALM ".name: \"a b\" is not a valid realm name (a URI)"},
        {WITH_R("{'name':7}"), P_REALM ".name: must be a string"},
        {WITH_R(R1 "," R1),
         "workers[0].realms[1].name: realm \"realm1\" is already defined by realms[0]"},
        {WITH_REALM_KEYS("'inventory':{'type':'wamp.eth'}"),
         P_REALM ".inventory: realm inventories (payload validation) are not supported"},
        {WITH_AUTH("{'cryptosign':{'type':'static','principals':{},'trustroots':{}}}"),
         P_T ".auth.cryptosign.trustroots: trust roots (certificate chains) are not supported; "
             "list the principals and their authorized_keys"},
        {WITH_REALM_KEYS("'store':{'type':'memory'}"),
         P_REALM ".store: realm stores (event history) are not supported yet"},
        {WITH_REALM_KEYS("'authorizer':'com.auth'"),
         P_REALM ".authorizer: dynamic authorizers are not supported (use static permissions)"},
        {WITH_REALM_KEYS("'bogus':1"), P_REALM ".bogus: unknown key"},
        {WITH_REALM_KEYS("'options':{'uri_check':'strict'}"),
         P_REALM ".options.uri_check: only \"loose\" is supported (got \"strict\"); wampscope "
                 "always checks URIs with the loose rule"},
        {WITH_REALM_KEYS("'options':{'enable_meta_api':1}"),
         P_REALM ".options.enable_meta_api: must be a boolean"},
        {WITH_REALM_KEYS("'options':{'bridge_meta_api':true}"),
         P_REALM ".options.bridge_meta_api: bridging the meta API to the management realm is not "
                 "supported"},
        {WITH_REALM_KEYS("'options':{'event_dispatching_chunk_size':0}"),
         P_REALM ".options.event_dispatching_chunk_size: must be an integer 1..2147483647"},
        {WITH_REALM_KEYS("'options':{'colour':'blue'}"), P_REALM ".options.colour: unknown key"},
        {WITH_REALM_KEYS("'roles':{}"), P_REALM ".roles: must be a list"},
        /* Roles. */
        {WITH_ROLE("{'name':'user','authorizer':'com.example.authorize'}"),
         P_ROLE ".authorizer: dynamic authorizers are not supported (use static permissions)"},
        {WITH_ROLE("{'permissions':[]}"), P_ROLE ".name: is required"},
        {WITH_ROLE("{'name':'a role'}"), P_ROLE ".name: \"a role\" is not a valid role name"},
        {WITH_ROLE("{'name':'r1'},{'name':'r1'}"),
         P_REALM ".roles[1].name: role \"r1\" is already defined by roles[0]"},
        {WITH_ROLE("{'name':'r1','permissions':{}}"), P_ROLE ".permissions: must be a list"},
        {WITH_ROLE("{'name':'r1','allow-by-default':true}"),
         P_ROLE ".allow-by-default: unknown key"},
        /* Permissions. */
        {WITH_PERMS("{'allow':{'call':true}}"), P_PERM ".uri: is required"},
        {WITH_PERMS("7"), P_PERM ": must be an object"},
        {WITH_PERMS("{'uri':'com.a','match':'regex'}"),
         P_PERM ".match: must be \"exact\", \"prefix\" or \"wildcard\" (got \"regex\")"},
        {WITH_PERMS("{'uri':'com.*','match':'prefix'}"),
         P_PERM ".uri: '*' is taken literally when \"match\" is given; remove the '*' or the "
                "\"match\" key"},
        {WITH_PERMS("{'uri':'com.a*b.*'}"),
         P_PERM ".uri: '*' must stand for a whole URI component in \"com.a*b.*\""},
        {WITH_PERMS("{'uri':'com a'}"),
         P_PERM ".uri: \"com a\" is not a valid URI pattern for match \"exact\""},
        {WITH_PERMS("{'uri':'','match':'exact'}"),
         P_PERM ".uri: \"\" with match \"exact\" is ambiguous; for a prefix use \"match\": "
                "\"prefix\""},
        {WITH_PERMS("{'uri':'com.example.'}"),
         P_PERM ".uri: \"com.example.\" with match \"exact\" is ambiguous; for a prefix write "
                "\"com.example.*\" or \"match\": \"prefix\""},
        {WITH_PERMS("{'uri':'com..x'}"),
         P_PERM ".uri: \"com..x\" is not a valid URI pattern for match \"exact\""},
        {WITH_PERMS("{'uri':'','match':'wildcard'}"),
         P_PERM ".uri: \"\" is not a valid URI pattern for match \"wildcard\""},
        {WITH_PERMS("{'uri':'**'}"), P_PERM ".uri: '*' must stand for a whole URI component in "
                                            "\"**\""},
        {WITH_PERMS("{'uri':'com.a','validate':{'call':'t'}}"),
         P_PERM ".validate: payload validation is not supported"},
        {WITH_PERMS("{'uri':'com.a','allow':{'admin':true}}"), P_PERM ".allow.admin: unknown key"},
        {WITH_PERMS("{'uri':'com.a','allow':{'call':1}}"), P_PERM ".allow.call: must be a boolean"},
        {WITH_PERMS("{'uri':'com.a','allow':[]}"), P_PERM ".allow: must be an object"},
        {WITH_PERMS("{'uri':'com.a','disclose':{'callee':true}}"),
         P_PERM ".disclose.callee: unknown key"},
        {WITH_PERMS("{'uri':'com.a','cache':'yes'}"), P_PERM ".cache: must be a boolean"},
        {WITH_PERMS("{'uri':'com.a'},{'uri':'com.a','match':'prefix'}"),
         P_ROLE ".permissions[1].uri: pattern \"com.a\" is already used by permissions[0] "
                "(Crossbar would silently keep only the last one)"},
        {WITH_PERMS("{'uri':'com.*'},{'uri':'com.','match':'prefix'}"),
         P_ROLE ".permissions[1].uri: pattern \"com.\" is already used by permissions[0] "
                "(Crossbar would silently keep only the last one)"},
        /* Transports. */
        {WORKER("'realms':[" R1 "]"), "workers[0].transports: at least one transport is required"},
        {WORKER("'realms':[" R1 "],'transports':[]"),
         "workers[0].transports: at least one transport is required"},
        {WITH_RAW("'bogus':1"), P_T ".bogus: unknown key"},
        {WITH_RAW("'url':'rs://x'"), P_T ".url: unknown key"},
        {WITH_RAW("'serializers':['ubjson']"),
         P_T ".serializers[0]: serializer \"ubjson\" is not supported (only \"json\", "
             "\"msgpack\" and \"cbor\" are)"},
        {WITH_RAW("'options':{'max_message_size':100}"),
         P_T ".options.max_message_size: must be an integer 1024..1073741824 bytes"},
        {WITH_RAW("'options':{'max_message_size':33554432}"),
         P_T ".options.max_message_size: 33554432 exceeds wampscope.limits.max_message_size "
             "(16777216 bytes)"},
        {WITH_RAW("'options':{'auto_ping_interval':1000}"),
         P_T ".options.auto_ping_interval: unknown key"},
        {WITH_RAW("'options':{},'max_message_size':2048"),
         P_T ".max_message_size: give it once, in \"options\" (Crossbar's current place)"},
        {WITH_RAW("'auth':{'ticket':{}}"), P_T ".auth.ticket.type: is required"},
        {WITH_RAW("'debug':1"), P_T ".debug: must be a boolean"},
        {WITH_T("{'type':'rawsocket'}"), P_T ".endpoint: is required"},
        {WITH_T("{'type':'rawsocket','endpoint':{'type':'unix'}}"),
         P_T ".endpoint.path: is required"},
        {WITH_T("{'type':'rawsocket','endpoint':{'type':'unix','path':''}}"),
         P_T ".endpoint.path: must not be empty"},
        {WITH_T("{'type':'rawsocket','endpoint':{'type':'unix','path':'@abstract'}}"),
         P_T ".endpoint.path: abstract Unix sockets (\"@name\") are not supported"},
        {WITH_T("{'type':'rawsocket','endpoint':{'type':'unix','path':'/tmp/s','port':1}}"),
         P_T ".endpoint.port: unknown key"},
        {WITH_T("{'type':'rawsocket','endpoint':{'type':'unix','path':'/" LONG_PATH "'}}"),
         P_T ".endpoint.path: is longer than 107 bytes (the limit of a Unix socket path)"},
        {WITH_T(T1 ",{'type':'rawsocket','endpoint':{'type':'unix','path':'/tmp/s'}},"
                   "{'type':'rawsocket','endpoint':{'type':'unix','path':'/tmp/s'}}"),
         "workers[0].transports[2].endpoint.path: \"/tmp/s\" is already used by transports[1]"},
        {WITH_T(T1 ",{'type':'rawsocket','endpoint':{'type':'tcp','port':8080}}"),
         "workers[0].transports[1].endpoint.port: port 8080 is already used by transports[0]"},
        /* A wildcard address is all interfaces: it overlaps any other address (IPv6's takes
         * IPv4 too). */
        {WITH_T("{'type':'websocket','endpoint':{'type':'tcp','port':8081,'interface':'0.0.0.0'}},"
                "{'type':'rawsocket','endpoint':{'type':'tcp','port':8081,"
                "'interface':'127.0.0.1'}}"),
         "workers[0].transports[1].endpoint.port: port 8081 is already used by transports[0]"},
        {WITH_T("{'type':'websocket','endpoint':{'type':'tcp','port':8081,'interface':'::','"
                "version':6}},"
                "{'type':'rawsocket','endpoint':{'type':'tcp','port':8081,"
                "'interface':'127.0.0.1'}}"),
         "workers[0].transports[1].endpoint.port: port 8081 is already used by transports[0]"},
        {WITH_T("{'type':'universal'}"), P_T ".endpoint: is required"},
        {WITH_UNI("'mqtt':{}"), P_T ".mqtt: MQTT is not supported"},
        {WITH_UNI("'web':{}"), P_T ".web.paths: is required"},
        {WITH_UNI("'web':{'paths':{'/':{'type':'static'}},'x':1}"), P_T ".web.x: unknown key"},
        {WITH_UNI("'websocket':{'ws':{}},'web':{'paths':{'ws2':{'type':'websocket',"
                  "'serializers':['ubjson']}}}"),
         P_T ".web.paths.ws2.serializers[0]: serializer \"ubjson\" is not supported (only "
             "\"json\", \"msgpack\" and \"cbor\" are)"},
        {WITH_UNI("'bogus':1"), P_T ".bogus: unknown key"},
        {WITH_UNI("'id':'u1x'"),
         P_T ": needs a \"rawsocket\", \"websocket\" or \"web\" part (or several)"},
        {WITH_UNI("'websocket':{}"), P_T ".websocket: must be an object with at least one path"},
        {WITH_UNI("'websocket':{'a':{},'b':{'options':{'auto_ping_interval':1000}}}"),
         P_T ".websocket.b.options: auto_ping_interval and auto_ping_timeout must be the same on "
             "every WebSocket path of a transport (they are the listener's)"},
        {WITH_UNI("'websocket':{'/x':{}}"),
         P_T ".websocket[\"/x\"]: a path key must be \"/\" or match [a-zA-Z0-9_-]+"},
        {WITH_UNI("'websocket':{'ws':{'type':'static'}}"),
         P_T ".websocket.ws.type: must be \"websocket\""},
        /* One URL path, two services: one of them would never be reached. */
        {WITH_UNI("'websocket':{'ws':{}},'web':{'paths':{'ws':{'type':'websocket'}}}"),
         P_T ".web.paths.ws: path \"/ws\" is served by websocket.ws already"},
        {WITH_UNI("'websocket':{'/':{}},'web':{'paths':{'x':{'type':'nodeinfo'},'/':{'type':"
                  "'nodeinfo'}}}"),
         P_T ".web.paths[\"/\"]: path \"/\" is served by websocket[\"/\"] already"},
        {WITH_UNI("'websocket':{'ws':{'cookie':{}}}"),
         P_T ".websocket.ws.cookie: cookie tracking is not supported yet"},
        {WITH_UNI("'rawsocket':{'endpoint':{}},'websocket':{'ws':{}}"),
         P_T ".rawsocket.endpoint: not allowed here: the universal transport's endpoint is used"},
        {WITH_UNI("'rawsocket':{'type':'websocket'}"),
         P_T ".rawsocket.type: must be \"rawsocket\""},
        {WITH_UNI("'rawsocket':[]"), P_T ".rawsocket: must be an object"},
        {WITH_UNI("'rawsocket':{'serializers':['ubjson']},'websocket':{'ws':{}}"),
         P_T ".rawsocket.serializers[0]: serializer \"ubjson\" is not supported (only \"json\", "
             "\"msgpack\" and \"cbor\" are)"},
        {WITH_T("{'type':'universal','id':'uni','endpoint':{'type':'tcp','port':8081},"
                "'rawsocket':{},'websocket':{'ws':{}}},"
                "{'type':'websocket','id':'uni_rawsocket','endpoint':{'type':'tcp','port':9}}"),
         "workers[0].transports[1].id: transport ID \"uni_rawsocket\" is already used by "
         "transports[0]"},
        {WITH_T("{'type':'universal','endpoint':{'type':'tcp','port':8081},"
                "'rawsocket':{},'websocket':{'ws':{}}}," T1 ","
                "{'type':'rawsocket','endpoint':{'type':'tcp','port':8081}}"),
         "workers[0].transports[2].endpoint.port: port 8081 is already used by transports[0]"},
        {WITH_T("{'type':'mqtt'}"), P_T ".type: MQTT transports are not supported"},
        {WITH_T("{'type':'flashpolicy'}"), P_T ".type: Flash policy transports are not supported"},
        {WITH_T("{'type':'carrier-pigeon'}"), P_T ".type: unknown type \"carrier-pigeon\""},
        {WITH_T("{'endpoint':{'type':'tcp','port':1}}"), P_T ".type: is required"},
        {WITH_T("{'type':'websocket'}"), P_T ".endpoint: is required"},
        {WITH_WS_KEYS("'bogus':1"), P_T ".bogus: unknown key"},
        {WITH_WS_KEYS("'id':'x'"),
         P_T ".id: \"x\" must match ^[a-z][a-z0-9_]{2,63}$ (Crossbar's ID rule)"},
        {WITH_WS_KEYS("'cookie':{}"), P_T ".cookie: cookie tracking is not supported yet"},
        {WITH_WS_KEYS("'debug':'on'"), P_T ".debug: must be a boolean"},
        {WITH_WS_KEYS("'url':'http://localhost:8080/ws'"),
         P_T ".url: \"http://localhost:8080/ws\" must be a ws:// or wss:// URL"},
        {WITH_WS_KEYS("'url':'ws:///ws'"), P_T ".url: \"ws:///ws\" has no host"},
        {WITH_WS_KEYS("'serializers':['ubjson','json']"),
         P_T ".serializers[0]: serializer \"ubjson\" is not supported (only \"json\", "
             "\"msgpack\" and \"cbor\" are)"},
        {WITH_WS_KEYS("'serializers':['json','ubjson']"),
         P_T ".serializers[1]: serializer \"ubjson\" is not supported (only \"json\", "
             "\"msgpack\" and \"cbor\" are)"},
        {WITH_WS_KEYS("'serializers':['flatbuffers']"),
         P_T ".serializers[0]: serializer \"flatbuffers\" is not supported (only \"json\", "
             "\"msgpack\" and \"cbor\" are)"},
        {WITH_WS_KEYS("'serializers':['xml']"), P_T ".serializers[0]: unknown serializer \"xml\""},
        {WITH_WS_KEYS("'serializers':[]"),
         P_T ".serializers: must name at least one serializer (\"json\", \"msgpack\", "
             "\"cbor\")"},
        {WITH_WS_KEYS("'serializers':'json'"), P_T ".serializers: must be a list"},
        {WITH_T(T1 "," T1), "workers[0].transports[1].endpoint.port: port 8080 is already used by "
                            "transports[0]"},
        {WITH_T(T1 ",{'type':'websocket','id':'transport1','endpoint':{'type':'tcp','port':1}}"),
         "workers[0].transports[1].id: transport ID \"transport1\" is already used by "
         "transports[0]"},
        /* Endpoints. */
        {WITH_EP("{'type':'tcp'}"), P_T ".endpoint.port: is required"},
        {WITH_EP("{'type':'tcp','port':70000}"), P_T ".endpoint.port: must be an integer 0..65535"},
        {WITH_EP("{'type':'tcp','port':-1}"), P_T ".endpoint.port: must be an integer 0..65535"},
        {WITH_EP("{'type':'tcp','port':'8080'}"),
         P_T ".endpoint.port: must be an integer 0..65535"},
        {WITH_EP("{'type':'tcp','port':8080.5}"),
         P_T ".endpoint.port: must be an integer 0..65535"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'key':'/nonexistent/k.pem',"
                 "'certificate':'/nonexistent/c.pem'}}"),
         P_T ".endpoint.tls.certificate: cannot read \"/nonexistent/c.pem\": No such file or "
             "directory"},
        /* fopen() opens a directory, whose read then fails (in OpenSSL, at start). */
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'key':'/dev/null','certificate':'/'}}"),
         P_T ".endpoint.tls.certificate: cannot read \"/\": Is a directory"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'key':'k'}}"),
         P_T ".endpoint.tls.certificate: is required"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'certificate':''}}"),
         P_T ".endpoint.tls.certificate: must not be empty"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'certificate':'/dev/null'}}"),
         P_T ".endpoint.tls.key: is required"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'certificate':'/dev/null','key':'/nonexistent/"
                 "k.pem'}}"),
         P_T ".endpoint.tls.key: cannot read \"/nonexistent/k.pem\": No such file or directory"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'certificate':'/dev/null','key':'/dev/null',"
                 "'ciphers':''}}"),
         P_T ".endpoint.tls.ciphers: must not be empty"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'chain_certificates':[]}}"),
         P_T ".endpoint.tls.chain_certificates: not supported: append the chain certificates to "
             "the \"certificate\" file (PEM)"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'ca_certificates':[]}}"),
         P_T ".endpoint.tls.ca_certificates: client certificate verification is not supported "
             "yet"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'dhparam':'dh.pem'}}"),
         P_T ".endpoint.tls.dhparam: not supported (lws 4.1 has no DH parameter setting; ECDHE "
             "cipher suites need none)"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':{'bogus':1}}"),
         P_T ".endpoint.tls.bogus: unknown key"},
        {WITH_EP("{'type':'tcp','port':8443,'tls':'yes'}"), P_T ".endpoint.tls: must be an object"},
        {WITH_T("{'type':'rawsocket','endpoint':{'type':'unix','path':'/tmp/s','tls':{}}}"),
         P_T ".endpoint.tls: unknown key"},
        {WITH_EP("{'type':'unix','path':'/tmp/s'}"),
         P_T ".endpoint.type: Unix socket endpoints are supported for rawsocket transports "
             "only"},
        {WITH_EP("{'type':'onion','port':1}"), P_T ".endpoint.type: Tor onion endpoints are not "
                                                   "supported"},
        {WITH_EP("{'port':8080}"), P_T ".endpoint.type: is required"},
        {WITH_EP("8080"), P_T ".endpoint: must be an object"},
        {WITH_EP("{'type':'tcp','port':8080,'portrange':[1,2]}"),
         P_T ".endpoint.portrange: port ranges are not supported; give one \"port\""},
        {WITH_EP("{'type':'tcp','port':8080,'version':5}"),
         P_T ".endpoint.version: must be 4 or 6"},
        {WITH_EP("{'type':'tcp','port':8080,'version':6}"),
         P_T ".endpoint.version: 6 needs an explicit \"interface\" (e.g. \"::\" for all IPv6 "
             "interfaces)"},
        {WITH_EP("{'type':'tcp','port':8080,'version':6,'interface':'127.0.0.1'}"),
         P_T ".endpoint.version: 6 does not match interface \"127.0.0.1\""},
        {WITH_EP("{'type':'tcp','port':8080,'interface':'::'}"),
         P_T ".endpoint.version: 4 does not match interface \"::\""},
        {WITH_EP("{'type':'tcp','port':8080,'interface':''}"),
         P_T ".endpoint.interface: must not be empty (remove it to listen on all interfaces)"},
        {WITH_EP("{'type':'tcp','port':8080,'interface':5}"),
         P_T ".endpoint.interface: must be a string"},
        {WITH_EP("{'type':'tcp','port':8080,'backlog':0}"),
         P_T ".endpoint.backlog: must be an integer 1..65535"},
        {WITH_EP("{'type':'tcp','port':8080,'shared':1}"),
         P_T ".endpoint.shared: must be a boolean"},
        {WITH_EP("{'type':'tcp','port':8080,'shared':true,'interface':'lo'}"),
         P_T ".endpoint.interface: must be an IP address with \"shared\": true (got \"lo\")"},
        {WITH_EP("{'type':'tcp','port':8080,'user_timeout':5}"),
         P_T ".endpoint.user_timeout: TCP_USER_TIMEOUT is not supported"},
        {WITH_EP("{'type':'tcp','port':8080,'colour':5}"), P_T ".endpoint.colour: unknown key"},
        /* WebSocket options. */
        {WITH_WSOPT("{'foo':1}"), P_T ".options.foo: unknown key"},
        {WITH_WSOPT("[]"), P_T ".options: must be an object"},
        {WITH_WSOPT("{'validate_utf8':true}"), P_T ".options.validate_utf8: not supported"},
        {WITH_WSOPT("{'external_port':80}"), P_T ".options.external_port: not supported"},
        {WITH_WSOPT("{'enable_hybi10':false}"),
         P_T ".options.enable_hybi10: not supported (RFC 6455 only)"},
        {WITH_WSOPT("{'enable_flash_policy':true}"),
         P_T ".options.enable_flash_policy: Flash policy files are not supported"},
        {WITH_WSOPT("{'max_message_size':100}"),
         P_T ".options.max_message_size: must be an integer 1024..1073741824 bytes"},
        {WITH_WSOPT("{'max_message_size':33554432}"),
         P_T ".options.max_message_size: 33554432 exceeds wampscope.limits.max_message_size "
             "(16777216 bytes)"},
        {WITH_WSOPT("{'max_connections':0}"),
         P_T ".options.max_connections: must be an integer 1..10000000"},
        {WITH_RAW("'options':{'max_connections':'many'}"),
         P_T ".options.max_connections: must be an integer 1..10000000"},
        {WITH_WSOPT("{'auto_ping_interval':500}"),
         P_T ".options.auto_ping_interval: must be 0 (off) or an integer 1000..3600000 ms"},
        {WITH_WSOPT("{'auto_ping_timeout':'5s'}"),
         P_T ".options.auto_ping_timeout: must be 0 (off) or an integer 1000..3600000 ms"},
        {WITH_WSOPT("{'auto_ping_size':200}"),
         P_T ".options.auto_ping_size: must be an integer 12..125"},
        {WITH_WSOPT("{'allowed_origins':['https://example.com']}"),
         P_T ".options.allowed_origins: only [\"*\"] is supported (Origin is not checked yet)"},
        {WITH_WSOPT("{'allow_null_origin':false}"),
         P_T ".options.allow_null_origin: only true is supported (Origin is not checked yet)"},
        {WITH_WSOPT("{'require_websocket_subprotocol':false}"),
         P_T ".options.require_websocket_subprotocol: only true is supported (a WAMP "
             "subprotocol is always required)"},
        {WITH_WSOPT("{'compression':true}"), P_T ".options.compression: must be an object"},
        {WITH_WSOPT("{'enable_webstatus':'no'}"), P_T ".options.enable_webstatus: must be a "
                                                      "boolean"},
        /* Authentication. */
        {WITH_AUTH("{'ticket':{'type':'dynamic','authenticator':'com.auth'}}"),
         P_T ".auth.ticket.type: dynamic authenticators are not supported (use static "
             "principals)"},
        {WITH_AUTH("{'ticket':{'type':'static'}}"),
         P_T ".auth.ticket.principals: is required for static ticket authentication"},
        {WITH_AUTH("{'ticket':{'type':'static','principals':[]}}"),
         P_T ".auth.ticket.principals: must be an object mapping authids to principals"},
        {WITH_AUTH("{'ticket':{'type':'static','principals':{'joe':{'role':'x'}}}}"),
         P_T ".auth.ticket.principals.joe.ticket: is required"},
        {WITH_AUTH("{'ticket':{'type':'static','principals':{'joe':{'ticket':''}}}}"),
         P_T ".auth.ticket.principals.joe.ticket: must not be empty"},
        {WITH_AUTH("{'ticket':{'type':'static','principals':{'joe':{'ticket':5}}}}"),
         P_T ".auth.ticket.principals.joe.ticket: must be a string"},
        {WITH_AUTH("{'ticket':{'type':'static','principals':{'joe':{'ticket':'t','salt':'s'}}}}"),
         P_T ".auth.ticket.principals.joe.salt: unknown key"},
        {WITH_AUTH("{'ticket':{'type':'static','principals':{'joe':{'ticket':'t','role':'a b'}}}}"),
         P_T ".auth.ticket.principals.joe.role: \"a b\" is not a valid role name"},
        {WITH_AUTH("{'ticket':{'type':'static','principals':{'':{'ticket':'t'}}}}"),
         P_T ".auth.ticket.principals[\"\"]: an authid must not be empty"},
        {WITH_AUTH("{'ticket':{'type':'static','principals':{'joe':{'ticket':"
                   "'${WAMPSCOPE_TEST_UNSET_VAR}'}}}}"),
         P_T ".auth.ticket.principals.joe.ticket: environment variable WAMPSCOPE_TEST_UNSET_VAR "
             "is not set"},
        {WITH_AUTH("{'wampcra':{'type':'static','principals':{}}}"),
         P_T ".auth.wampcra.principals: unknown key"},
        {WITH_AUTH("{'wampcra':{'type':'static','users':{'joe':{'secret':'s','iterations':10}}}}"),
         P_T ".auth.wampcra.users.joe: \"iterations\" and \"keylen\" need a \"salt\""},
        {WITH_AUTH("{'wampcra':{'type':'static','users':{'joe':{'secret':'s','salt':'x',"
                   "'keylen':0}}}}"),
         P_T ".auth.wampcra.users.joe.keylen: must be an integer 1..1024 bytes"},
        {WITH_AUTH("{'wampcra':{'type':'static','users':{'joe':{'secret':'s','salt':'x',"
                   "'iterations':'100'}}}}"),
         P_T ".auth.wampcra.users.joe.iterations: must be an integer 1..100000000"},
        {WITH_AUTH("{'wampcra':{'type':'static','users':{'joe':{'secret':'s','salt':''}}}}"),
         P_T ".auth.wampcra.users.joe.salt: must not be empty"},
        {WITH_AUTH("{'cryptosign':{'type':'static','principals':{'joe':{'role':'r'}}}}"),
         P_T ".auth.cryptosign.principals.joe.authorized_keys: is required"},
        {WITH_AUTH("{'cryptosign':{'type':'static','principals':{'joe':{'authorized_keys':"
                   "['00']}}}}"),
         P_T ".auth.cryptosign.principals.joe.role: is required"},
        {WITH_AUTH("{'cryptosign':{'type':'static','principals':{'joe':{'role':'r',"
                   "'authorized_keys':['zz']}}}}"),
         P_T ".auth.cryptosign.principals.joe.authorized_keys[0]: must be an Ed25519 public key "
             "as 64 hex characters"},
        {WITH_AUTH("{'cryptosign':{'type':'static','principals':{'joe':{'role':'r',"
                   "'authorized_keys':[]}}}}"),
         P_T ".auth.cryptosign.principals.joe.authorized_keys: must be a non-empty list of "
             "hex-encoded Ed25519 public keys"},
        {WITH_AUTH("{'cryptosign':{'type':'static','principals':{'joe':{'role':'r','realm':'a b',"
                   "'authorized_keys':['"
                   "0000000000000000000000000000000000000000000000000000"
                   "000000000000']}}}}"),
         P_T ".auth.cryptosign.principals.joe.realm: \"a b\" is not a valid realm name"},
        {WITH_AUTH("{'cryptosign':{'type':'function'}}"),
         P_T ".auth.cryptosign.type: authenticator functions are not supported (use static "
             "principals)"},
        {WITH_AUTH("{'cookie':{}}"),
         P_T ".auth.cookie: authentication method \"cookie\" is not supported yet"},
        {WITH_AUTH("{'tls':{'type':'static'}}"),
         P_T ".auth.tls: authentication method \"tls\" is not supported yet"},
        {WITH_AUTH("{'scram':{'type':'static'}}"),
         P_T ".auth.scram: authentication method \"scram\" is not supported yet"},
        {WITH_AUTH("{'kerberos':{}}"), P_T ".auth.kerberos: unknown key"},
        {WITH_AUTH("{'anonymous':{'type':'dynamic','authenticator':'com.auth'}}"),
         P_T ".auth.anonymous.type: dynamic authenticators are not supported"},
        {WITH_AUTH("{'anonymous':{'role':'x'}}"), P_T ".auth.anonymous.type: is required"},
        {WITH_AUTH("{'anonymous':{'type':'static','authid':'joe'}}"),
         P_T ".auth.anonymous.authid: a fixed anonymous authid is not supported yet"},
        {WITH_AUTH("{'anonymous':{'type':'static','role':'a b'}}"),
         P_T ".auth.anonymous.role: \"a b\" is not a valid role name"},
        {WITH_AUTH("[]"), P_T ".auth: must be an object"},
        /* Web transports. */
        {WITH_WEB("'bogus':1,'paths':{}"), P_T ".bogus: unknown key"},
        {WITH_WEB("'options':{'hsts':true},'paths':{}"),
         P_T ".options.hsts: HSTS is not supported"},
        {WITH_WEB("'url':'ws://x/'"), P_T ".url: unknown key"},
        {WITH_T("{'type':'web','paths':{'ws':{'type':'websocket'}}}"),
         P_T ".endpoint: is required"},
        {WITH_WEB("'options':{}"), P_T ".paths: is required"},
        {WITH_PATHS("[]"), P_T ".paths: must be an object"},
        {WITH_PATHS("{}"), P_T ".paths: must contain at least one path"},
        {WITH_PATHS("{'/':{'type':'static','package':'app','resource':'web'},"
                    "'ws':{'type':'websocket'}}"),
         P_T ".paths[\"/\"].package: files of a Python package are not supported; give "
             "\"directory\""},
        {WITH_PATHS("{'/':{'type':'static'}}"), P_T ".paths[\"/\"].directory: is required"},
        {WITH_PATHS("{'/':{'type':'static','directory':'w','options':{'listing':true}}}"),
         P_T ".paths[\"/\"].options.listing: unknown key"},
        {WITH_PATHS("{'/':{'type':'static','directory':'w','options':"
                    "{'enable_directory_listing':1}}}"),
         P_T ".paths[\"/\"].options.enable_directory_listing: must be a boolean"},
        {WITH_PATHS("{'/':{'type':'static','directory':'w','options':"
                    "{'mime_types':{'svg':'image/svg+xml'}}}}"),
         P_T ".paths[\"/\"].options.mime_types.svg: an extension starts with \".\" (\".svg\")"},
        {WITH_PATHS("{'/':{'type':'static','directory':'w','options':{'cache_timeout':-1}}}"),
         P_T ".paths[\"/\"].options.cache_timeout: must be an integer 0..315360000 seconds"},
        {WITH_PATHS("{'/':{'type':'static','directory':'w','options':"
                    "{'default_file':'../x.html'}}}"),
         P_T ".paths[\"/\"].options.default_file: must name a file inside the directory (no "
             "\"..\")"},
        {WITH_PATHS("{'r':{'type':'redirect'}}"), P_T ".paths.r.url: is required"},
        {WITH_PATHS("{'r':{'type':'redirect','url':'" LONG_PATH LONG_PATH LONG_PATH LONG_PATH
                            LONG_PATH LONG_PATH LONG_PATH LONG_PATH LONG_PATH LONG_PATH LONG_PATH
                                    LONG_PATH LONG_PATH LONG_PATH LONG_PATH LONG_PATH LONG_PATH
                                            LONG_PATH LONG_PATH LONG_PATH "'}}"),
         P_T ".paths.r.url: longer than 2048 bytes"},
        {WITH_PATHS("{'r':{'type':'redirect','url':'http://x/\\r\\nSet-Cookie: a=b'}}"),
         P_T ".paths.r.url: must be a URL (no spaces or control characters)"},
        {WITH_PATHS("{'ws':{'type':'websocket'},'info':{'type':'nodeinfo','x':1}}"),
         P_T ".paths.info.x: unknown key"},
        {WITH_PATHS("{'n':{'type':'path'}}"), P_T ".paths.n.paths: is required"},
        {WITH_PATHS("{'c':{'type':'json'}}"), P_T ".paths.c.value: is required"},
        {WITH_PATHS("{'c':{'type':'json','value':1,'options':{'sort_keys':true}}}"),
         P_T ".paths.c.options.sort_keys: unknown key"},
        {WITH_PATHS("{'c':{'type':'json','value':1,'options':{'prettify':1}}}"),
         P_T ".paths.c.options.prettify: must be a boolean"},
        {WITH_PATHS("{'/':{'type':'path','paths':{}}}"),
         P_T ".paths[\"/\"]: a nested \"path\" service needs a named key"},
        {WITH_PATHS("{'n':{'type':'path','paths':{'x':{'type':'wsgi'}}}}"),
         P_T ".paths.n.paths.x.type: path type \"wsgi\" is not supported (wampscope runs no "
             "Python)"},
        {WITH_PATHS("{'call':{'type':'caller','realm':'realm1'}}"),
         P_T ".paths.call.role: is required"},
        {WITH_PATHS("{'pub':{'type':'publisher','role':'anonymous'}}"),
         P_T ".paths.pub.realm: is required"},
        {WITH_PATHS("{'pub':{'type':'publisher','realm':'realm1','role':'anonymous','options':"
                    "{'key':'k'}}}"),
         P_T ".paths.pub.options: signed requests need both \"key\" and \"secret\" (not empty)"},
        {WITH_PATHS("{'pub':{'type':'publisher','realm':'realm1','role':'anonymous','options':"
                    "{'key':'k','secret':'s','timestamp_delta_limit':-5}}}"),
         P_T ".paths.pub.options.timestamp_delta_limit: must be an integer 0..86400 seconds"},
        {WITH_PATHS("{'pub':{'type':'publisher','realm':'realm1','role':'anonymous','options':"
                    "{'require_ip':['192.168.1.1/255.255.255.0']}}}"),
         P_T ".paths.pub.options.require_ip[0]: the prefix length in \"192.168.1.1/255.255.255.0\" "
             "must be 0..32"},
        {WITH_PATHS("{'pub':{'type':'publisher','realm':'realm1','role':'anonymous','options':"
                    "{'post_body_limit':-1}}}"),
         P_T ".paths.pub.options.post_body_limit: must be an integer 0..16777216 bytes"},
        {WITH_PATHS("{'call':{'type':'caller','realm':'realm1','role':'anonymous','x':1}}"),
         P_T ".paths.call.x: unknown key"},
        {WITH_PATHS("{'call':{'type':'webhook'}}"),
         P_T ".paths.call.type: path type \"webhook\" (HTTP bridge) is not supported"},
        {WITH_PATHS("{'x':{'type':'teleporter'}}"),
         P_T ".paths.x.type: unknown type \"teleporter\""},
        {WITH_PATHS("{'x':{}}"), P_T ".paths.x.type: is required"},
        {WITH_PATHS("{'ws':{'type':'websocket'},'ws2':{'type':'websocket','options':"
                    "{'auto_ping_interval':1000}}}"),
         P_T ".paths.ws2.options: auto_ping_interval and auto_ping_timeout must be the same on "
             "every WebSocket path of a transport (they are the listener's)"},
        {WITH_T("{'type':'web','id':'web1','endpoint':{'type':'tcp','port':1},'paths':{"
                "'ws':{'type':'websocket'},'ws2':{'type':'websocket'}}},"
                "{'type':'websocket','id':'web1_ws2','endpoint':{'type':'tcp','port':2}}"),
         "workers[0].transports[1].id: transport ID \"web1_ws2\" is already used by "
         "transports[0]"},
        /* A clash of a part's ID (given, or made from the transport's ID and the path) names
         * that part's "id". */
        {WITH_WEB("'id':'web1','paths':{'ws':{'type':'websocket'},'ws2':{'type':'websocket',"
                  "'id':'web1'}}"),
         P_T ".paths.ws2.id: transport ID \"web1\" is already used by transports[0]"},
        {WITH_WEB("'id':'web1','paths':{'ws':{'type':'websocket'},'a-b':{'type':'websocket'},"
                  "'a_b':{'type':'websocket'}}"),
         P_T ".paths.a_b.id: transport ID \"web1_a_b\" is already used by transports[0]"},
        {WITH_WEB("'id':'web1','paths':{'ws':{'type':'websocket'},'n-x':{'type':'path','paths':"
                  "{'y':{'type':'websocket'}}},'n_x':{'type':'path','paths':{'y':{'type':"
                  "'websocket'}}}}"),
         P_T ".paths.n_x.paths.y.id: transport ID \"web1_n_x_y\" is already used by "
             "transports[0]"},
        {WITH_UNI("'id':'uni','rawsocket':{'id':'uni'},'websocket':{'ws':{}}"),
         P_T ".rawsocket.id: transport ID \"uni\" is already used by transports[0]"},
        {WITH_UNI("'id':'uni','websocket':{'ws':{},'ws2':{'id':'uni'}}"),
         P_T ".websocket.ws2.id: transport ID \"uni\" is already used by transports[0]"},
        {WITH_UNI("'id':'uni','websocket':{'ws':{}},'web':{'paths':{'x':{'type':'websocket',"
                  "'id':'uni'}}}"),
         P_T ".web.paths.x.id: transport ID \"uni\" is already used by transports[0]"},
        {WITH_PATHS("{'a/b':{'type':'websocket'}}"),
         P_T ".paths[\"a/b\"]: a path key must be \"/\" or match [a-zA-Z0-9_-]+"},
        {WITH_PATHS("{'ws':{'type':'websocket','endpoint':{}}}"),
         P_T ".paths.ws.endpoint: unknown key"},
        {WITH_PATHS("{'ws':{'type':'websocket','serializers':['ubjson']}}"),
         P_T ".paths.ws.serializers[0]: serializer \"ubjson\" is not supported (only \"json\", "
             "\"msgpack\" and \"cbor\" are)"},
        {WITH_PATHS("{'ws':{'type':'websocket','auth':{'wampcra':{}}}}"),
         P_T ".paths.ws.auth.wampcra.type: is required"},
        {WITH_PATHS("{'ws':{'type':'websocket','options':{'max_message_size':1}}}"),
         P_T ".paths.ws.options.max_message_size: must be an integer 1024..1073741824 bytes"},
        /* The worker's "wampscope" object. */
        {WITH_WAMPSCOPE("{'foo':1}"), P_WS ".foo: unknown key"},
        {WITH_WAMPSCOPE("[]"), P_WS ": must be an object"},
        {WITH_WAMPSCOPE("{'limits':{'max_message_size':512}}"),
         P_WS ".limits.max_message_size: must be an integer 1024..1073741824 bytes"},
        {WITH_WAMPSCOPE("{'limits':{'max_message_size':2147483648}}"),
         P_WS ".limits.max_message_size: must be an integer 1024..1073741824 bytes"},
        {WITH_WAMPSCOPE("{'limits':{'max_queue_bytes':100}}"),
         P_WS ".limits.max_queue_bytes: must be an integer 1024..1073741824 bytes"},
        {WITH_WAMPSCOPE("{'limits':{'max_queue_messages':0}}"),
         P_WS ".limits.max_queue_messages: must be an integer 1..100000000"},
        {WITH_WAMPSCOPE("{'limits':{'hello_timeout':0}}"),
         P_WS ".limits.hello_timeout: must be an integer 100..3600000 ms"},
        {WITH_WAMPSCOPE("{'limits':{'shutdown_grace':-1}}"),
         P_WS ".limits.shutdown_grace: must be an integer 0..3600000 ms"},
        {WITH_WAMPSCOPE("{'limits':{'max_call_timeout':999}}"),
         P_WS ".limits.max_call_timeout: must be an integer 1000..86400000 ms"},
        {WITH_WAMPSCOPE("{'limits':{'max_retained_topics':0}}"),
         P_WS ".limits.max_retained_topics: must be an integer 1..10000000"},
        {WITH_WAMPSCOPE("{'limits':{'max_retained_bytes':'1k'}}"),
         P_WS ".limits.max_retained_bytes: must be an integer 1024..1073741824 bytes"},
        {WITH_WAMPSCOPE("{'limits':{'max_message_size':1048576,'max_queue_bytes':1024}}"),
         P_WS ".limits.max_queue_bytes: 1024 is smaller than max_message_size (1048576 bytes): a "
              "queue must hold at least one message"},
        {WITH_WAMPSCOPE("{'limits':{'max_queue_size':1}}"), P_WS ".limits.max_queue_size: unknown "
                                                                 "key"},
        {WITH_WAMPSCOPE("{'management':{'realm':'realm1'}}"),
         P_WS ".management.realm: \"realm1\" is also an application realm (realms[0]); pick "
              "another name"},
        {WITH_WAMPSCOPE("{'management':{'realm':''}}"),
         P_WS ".management.realm: \"\" is not a valid realm name (a URI)"},
        {WITH_WAMPSCOPE("{'management':{'enabled':'yes'}}"),
         P_WS ".management.enabled: must be a boolean"},
        {WITH_WAMPSCOPE("{'management':{'password':'x'}}"), P_WS ".management.password: unknown "
                                                                 "key"},
        {WITH_TRUSTED("'127.0.0.1/32'"), P_TN ": must be a list"},
        {WITH_TRUSTED("{}"), P_TN ": must be a list"},
        {WITH_TRUSTED("[8]"), P_TN "[0]: must be a string"},
        {WITH_TRUSTED("['127.0.0.1/32',null]"), P_TN "[1]: must be a string"},
        {WITH_TRUSTED("['127.0.0.1/32','nope']"), P_TN "[1]: \"nope\"" NOT_NET},
        {WITH_TRUSTED("['']"), P_TN "[0]: \"\"" NOT_NET},
        {WITH_TRUSTED("['/8']"), P_TN "[0]: \"/8\"" NOT_NET},
        {WITH_TRUSTED("[' 10.0.0.0/8']"), P_TN "[0]: \" 10.0.0.0/8\"" NOT_NET},
        {WITH_TRUSTED("['10.0.0/8']"), P_TN "[0]: \"10.0.0/8\"" NOT_NET},
        {WITH_TRUSTED("['010.0.0.0/8']"), P_TN "[0]: \"010.0.0.0/8\"" NOT_NET},
        {WITH_TRUSTED("['1.2.3.4.5']"), P_TN "[0]: \"1.2.3.4.5\"" NOT_NET},
        {WITH_TRUSTED("['localhost']"), P_TN "[0]: \"localhost\"" NOT_NET},
        {WITH_TRUSTED("['fe80::1%eth0/128']"), P_TN "[0]: \"fe80::1%eth0/128\"" NOT_NET},
        {WITH_TRUSTED("['[::1]/128']"), P_TN "[0]: \"[::1]/128\"" NOT_NET},
        {WITH_TRUSTED("['127.0.0.1:80']"), P_TN "[0]: \"127.0.0.1:80\"" NOT_NET},
        {WITH_TRUSTED("['10.0.0.0/33']"),
         P_TN "[0]: the prefix length in \"10.0.0.0/33\" must be 0..32"},
        {WITH_TRUSTED("['::/129']"), P_TN "[0]: the prefix length in \"::/129\" must be 0..128"},
        {WITH_TRUSTED("['10.0.0.0/']"),
         P_TN "[0]: the prefix length in \"10.0.0.0/\" must be 0..32"},
        {WITH_TRUSTED("['10.0.0.0/8x']"),
         P_TN "[0]: the prefix length in \"10.0.0.0/8x\" must be 0..32"},
        {WITH_TRUSTED("['10.0.0.0/-1']"),
         P_TN "[0]: the prefix length in \"10.0.0.0/-1\" must be 0..32"},
        {WITH_TRUSTED("['10.0.0.0/+8']"),
         P_TN "[0]: the prefix length in \"10.0.0.0/+8\" must be 0..32"},
        {WITH_TRUSTED("['10.0.0.0/0008']"),
         P_TN "[0]: the prefix length in \"10.0.0.0/0008\" must be 0..32"},
        {WITH_TRUSTED("['10.0.0.0/8/8']"),
         P_TN "[0]: the prefix length in \"10.0.0.0/8/8\" must be 0..32"},
        {WITH_TRUSTED("['10.0.0.1/8']"),
         P_TN "[0]: \"10.0.0.1/8\" has host bits set (the network is \"10.0.0.0/8\")"},
        {WITH_TRUSTED("['192.168.3.0/23']"),
         P_TN "[0]: \"192.168.3.0/23\" has host bits set (the network is \"192.168.2.0/23\")"},
        {WITH_TRUSTED("['::1','2001:db8::1/32']"),
         P_TN "[1]: \"2001:db8::1/32\" has host bits set (the network is \"2001:db8::/32\")"},
        {WITH_TRUSTED("['::ffff:127.0.0.1']"),
         P_TN "[0]: \"::ffff:127.0.0.1\" is an IPv4-mapped IPv6 network; such peers are matched "
              "as IPv4, write \"127.0.0.1/32\""},
        {WITH_TRUSTED("['::ffff:127.0.0.0/104']"),
         P_TN "[0]: \"::ffff:127.0.0.0/104\" is an IPv4-mapped IPv6 network; such peers are "
              "matched as IPv4, write \"127.0.0.0/8\""},
        {WITH_TRUSTED("['::ffff:0:0/96']"),
         P_TN "[0]: \"::ffff:0:0/96\" is an IPv4-mapped IPv6 network; such peers are matched as "
              "IPv4, write \"0.0.0.0/0\""},
        {WITH_TRUSTED("['10.0.0.0/8\\n']"), P_TN "[0]: the prefix length in \"10.0.0.0/8?\" must "
                                                 "be 0..32"},
        {WITH_WAMPSCOPE("{'tracing':{'max_traces':0}}"),
         P_WS ".tracing.max_traces: must be an integer 1..1024"},
        {WITH_WAMPSCOPE("{'tracing':{'default_limit':0}}"),
         P_WS ".tracing.default_limit: must be an integer 1..10000000 records"},
        {WITH_WAMPSCOPE("{'tracing':{'default_limit':10000001}}"),
         P_WS ".tracing.default_limit: must be an integer 1..10000000 records"},
        {WITH_WAMPSCOPE("{'tracing':{'default_limit':'100'}}"),
         P_WS ".tracing.default_limit: must be an integer 1..10000000 records"},
        {WITH_WAMPSCOPE("{'tracing':{'default_max_bytes':1023}}"),
         P_WS ".tracing.default_max_bytes: must be an integer 1024..1099511627776 bytes"},
        {WITH_WAMPSCOPE("{'tracing':{'default_max_bytes':1099511627777}}"),
         P_WS ".tracing.default_max_bytes: must be an integer 1024..1099511627776 bytes"},
        {WITH_WAMPSCOPE("{'tracing':{'default_max_bytes':1.5e6}}"),
         P_WS ".tracing.default_max_bytes: must be an integer 1024..1099511627776 bytes"},
        {WITH_WAMPSCOPE("{'tracing':{'write_backlog':262143}}"),
         P_WS ".tracing.write_backlog: must be an integer 262144..17179869184 bytes"},
        {WITH_WAMPSCOPE("{'tracing':{'write_backlog':17179869185}}"),
         P_WS ".tracing.write_backlog: must be an integer 262144..17179869184 bytes"},
        {WITH_WAMPSCOPE("{'tracing':{'default_limits':5}}"),
         P_WS ".tracing.default_limits: unknown key"},
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':'on'}}"),
         P_WS ".tracing.flight_recorder: must be true, false or an object {\"enabled\", "
              "\"options\"}"},
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':null}}"),
         P_WS ".tracing.flight_recorder: must be true, false or an object {\"enabled\", "
              "\"options\"}"},
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'enable':true}}}"),
         P_WS ".tracing.flight_recorder.enable: unknown key"},
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'limit':5}}}"),
         P_WS ".tracing.flight_recorder.limit: unknown key"},
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'enabled':1}}}"),
         P_WS ".tracing.flight_recorder.enabled: must be a boolean"},
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'options':[]}}}"),
         P_WS ".tracing.flight_recorder.options: must be an object of trace options"},
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'options':{'limit':0}}}}"),
         P_WS ".tracing.flight_recorder.options: limit: must be an integer from 1 to 10000000 "
              "(got 0)"},
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'options':{'limits':5}}}}"),
         P_WS ".tracing.flight_recorder.options: limits: unknown option"},
        /* Options are checked even when the flight recorder is off. */
        {WITH_WAMPSCOPE("{'tracing':{'flight_recorder':{'enabled':false,'options':{"
                        "'direction':'up'}}}}"),
         P_WS ".tracing.flight_recorder.options: direction: must be \"rx\", \"tx\" or "
              "\"both\""},
        {WITH_WAMPSCOPE("{'log_level':'verbose'}"),
         P_WS ".log_level: must be \"error\", \"warn\", \"info\", \"debug\" or \"trace\" (got "
              "\"verbose\")"},
        {WITH_WAMPSCOPE("{'log_level':3}"), P_WS ".log_level: must be a string"},
        {WITH_WAMPSCOPE("{'limits':{'auth_failure_delay':-1}}"),
         P_WS ".limits.auth_failure_delay: must be an integer 0..60000 ms"},
        {WITH_WAMPSCOPE("{'limits':{'auth_failure_delay':60001}}"),
         P_WS ".limits.auth_failure_delay: must be an integer 0..60000 ms"},
        {WITH_WAMPSCOPE("{'limits':{'max_sessions':0}}"),
         P_WS ".limits.max_sessions: must be an integer 1..10000000"},
        {WITH_WAMPSCOPE("{'limits':{'max_pending_calls':-5}}"),
         P_WS ".limits.max_pending_calls: must be an integer 1..10000000"},
        {WITH_WAMPSCOPE("{'limits':{'max_subscriptions':1e9}}"),
         P_WS ".limits.max_subscriptions: must be an integer 1..10000000"},
        {WITH_WAMPSCOPE("{'limits':{'slow_consumer':'drop_all'}}"),
         P_WS ".limits.slow_consumer: must be \"disconnect\" or \"drop_oldest_events\" (got "
              "\"drop_all\")"},
        {WITH_WAMPSCOPE("{'limits':{'close_timeout':999}}"),
         P_WS ".limits.close_timeout: must be an integer 1000..3600000 ms"},
        {WITH_WAMPSCOPE("{'limits':{'close_timeout':'5s'}}"),
         P_WS ".limits.close_timeout: must be an integer 1000..3600000 ms"},
        {WITH_WAMPSCOPE("{'management':{'auth':{}}}"),
         P_WS ".management.auth: must configure at least one of \"ticket\", \"wampcra\", "
              "\"cryptosign\" (leave \"auth\" out for protected mode)"},
        {WITH_WAMPSCOPE("{'management':{'auth':{'anonymous':{'type':'static'}}}}"),
         P_WS ".management.auth.anonymous: anonymous access to the management realm is protected "
              "mode (wampscope.management.trusted_networks), which is off once credentials are "
              "configured"},
        {WITH_WAMPSCOPE("{'management':{'auth':{'ticket':{'type':'static','principals':"
                        "{'admin':{}}}}}}"),
         P_WS ".management.auth.ticket.principals.admin.ticket: is required"},
};

START_TEST(test_refusals)
{
    const refusal *r = &refusals[_i];
    char err[ERR_LEN] = "";
    static rt_config sentinel;
    rt_config *cfg = &sentinel; /* must be reset to NULL on failure */
    wamp_err rc = load_q(r->json, &cfg, err);
    ck_assert_msg(rc == WAMP_EINVAL, "case %d: expected WAMP_EINVAL, got %d (%s)", _i, rc, err);
    ck_assert_ptr_null(cfg);
    ck_assert_msg(strcmp(err, r->message) == 0, "case %d:\n got: %s\nwant: %s", _i, err,
                  r->message);
}

END_TEST

START_TEST(test_json_syntax_errors)
{
    char err[ERR_LEN] = "";
    rt_config *cfg = NULL;
    const char *text = "{\n  \"version\": 2,\n  \"workers\": [\n}";
    ck_assert_int_eq(rt_config_load_string(text, strlen(text), &cfg, err, sizeof(err)),
                     WAMP_EINVAL);
    ck_assert_ptr_null(cfg);
    ck_assert_msg(strncmp(err, "JSON syntax error at line 4, column 1: ", 39) == 0, "%s", err);

    /* Duplicate keys are an error (Crossbar's YAML/JSON loaders keep the last silently). */
    text = "{\"version\": 2, \"version\": 2}";
    ck_assert_int_eq(rt_config_load_string(text, strlen(text), &cfg, err, sizeof(err)),
                     WAMP_EINVAL);
    ck_assert_msg(strstr(err, "JSON syntax error at line 1") && strstr(err, "duplicate"), "%s",
                  err);

    ck_assert_int_eq(rt_config_load_string("", 0, &cfg, err, sizeof(err)), WAMP_EINVAL);
    ck_assert_int_eq(rt_config_load_string(NULL, 0, &cfg, err, sizeof(err)), WAMP_EINVAL);
    ck_assert_int_eq(rt_config_load_string("{}", 2, NULL, err, sizeof(err)), WAMP_EINVAL);
}

END_TEST

/* A message longer than the caller's buffer is cut, never overflowed; no buffer is fine too. */
START_TEST(test_small_error_buffer)
{
    char err[9];
    rt_config *cfg = NULL;
    char *text = dq(WITH_EP("{'type':'tcp','port':70000}"));
    memset(err, 'x', sizeof(err));
    ck_assert_int_eq(rt_config_load_string(text, strlen(text), &cfg, err, sizeof(err)),
                     WAMP_EINVAL);
    ck_assert_str_eq(err, "workers[");
    ck_assert_int_eq(rt_config_load_string(text, strlen(text), &cfg, NULL, 0), WAMP_EINVAL);
    free(text);
}

END_TEST

/* The deepest paths still fit; absurdly long keys are cut with "...". */
START_TEST(test_long_key_path)
{
    char json[2048];
    char key[600];
    char err[ERR_LEN] = "";
    rt_config *cfg = NULL;
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    snprintf(json, sizeof(json), WITH_PATHS("{'ws':{'type':'websocket','options':{'%s':1}}}"), key);
    ck_assert_int_eq(load_q(json, &cfg, err), WAMP_EINVAL);
    ck_assert_msg(strstr(err, "...: unknown key") != NULL, "%s", err);
    ck_assert_uint_lt(strlen(err), 300);
}

END_TEST

/* A URL path (a web path key, under its nested path services' keys) holds at most 255 bytes;
 * a longer one is refused, not cut (the service would be served on another path). */
START_TEST(test_long_url_path)
{
    char json[2048];
    char key[256];
    char err[ERR_LEN] = "";
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 2] = '\0'; /* 254 bytes, "/" and the key: 255 */
    snprintf(json, sizeof(json),
             WITH_PATHS("{'ws':{'type':'websocket'},'%s':{'type':'json','value':1}}"), key);
    rt_config *cfg = load_ok(json);
    ck_assert_uint_eq(cfg->listeners[0].n_web, 1);
    ck_assert_uint_eq(strlen(cfg->listeners[0].web[0].prefix), 255);
    ck_assert_str_eq(cfg->listeners[0].web[0].prefix + 1, key);
    rt_config_free(cfg);

    /* The key with one more byte, at the top, nested, as a WebSocket path, in a universal
     * transport's websocket part. */
    char json_long[4][2048];
    snprintf(json_long[0], sizeof(json_long[0]),
             WITH_PATHS("{'ws':{'type':'websocket'},'k%s':{'type':'json','value':1}}"), key);
    snprintf(json_long[1], sizeof(json_long[1]),
             WITH_PATHS("{'ws':{'type':'websocket'},'n':{'type':'path','paths':{'%s':"
                        "{'type':'nodeinfo'}}}}"),
             key);
    snprintf(json_long[2], sizeof(json_long[2]), WITH_PATHS("{'k%s':{'type':'websocket'}}"), key);
    snprintf(json_long[3], sizeof(json_long[3]), WITH_UNI("'websocket':{'k%s':{}}"), key);
    for (size_t i = 0; i < 4; i++) {
        cfg = NULL;
        ck_assert_int_eq(load_q(json_long[i], &cfg, err), WAMP_EINVAL);
        ck_assert_ptr_null(cfg);
        ck_assert_msg(strstr(err, ": the URL path would be longer than 255 bytes"), "%zu: %s", i,
                      err);
    }
}

END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_load_file_errors)
{
    char path[] = "/tmp/check_rt_config_XXXXXX";
    char err[ERR_LEN] = "";
    char want[ERR_LEN];
    rt_config *cfg = NULL;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);

    /* Syntax errors come with the file name, line and column. */
    write_file(path, "{\n  \"version\": 2,\n  \"workers\": [\n}\n");
    ck_assert_int_eq(rt_config_load_file(path, &cfg, err, sizeof(err)), WAMP_EINVAL);
    snprintf(want, sizeof(want), "%s: JSON syntax error at line 4, column 1: ", path);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);

    /* Refusals name the file, then the key path. */
    char *text = dq(WITH_EP("{'type':'tcp','port':70000}"));
    write_file(path, text);
    free(text);
    ck_assert_int_eq(rt_config_load_file(path, &cfg, err, sizeof(err)), WAMP_EINVAL);
    snprintf(want, sizeof(want),
             "%s: workers[0].transports[0].endpoint.port: must be an integer "
             "0..65535",
             path);
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(cfg);

    text = dq(STD(""));
    write_file(path, text);
    free(text);
    ck_assert_int_eq(rt_config_load_file(path, &cfg, err, sizeof(err)), WAMP_OK);
    ck_assert_ptr_nonnull(cfg);
    rt_config_free(cfg);
    cfg = NULL;

    unlink(path);
    ck_assert_int_eq(rt_config_load_file(path, &cfg, err, sizeof(err)), WAMP_EIO);
    ck_assert_ptr_null(cfg);
    snprintf(want, sizeof(want), "%s: cannot open: %s", path, strerror(ENOENT));
    ck_assert_str_eq(err, want);

    ck_assert_int_eq(rt_config_load_file(NULL, &cfg, err, sizeof(err)), WAMP_EINVAL);
    rt_config_free(NULL);

    /* A directory opens but cannot be read. */
    ck_assert_int_eq(rt_config_load_file("/", &cfg, err, sizeof(err)), WAMP_EIO);
    ck_assert_msg(strncmp(err, "/: cannot read: ", 16) == 0, "%s", err);
}

END_TEST

/* Files larger than the read buffer's first size, and larger than the 16 MiB cap. */
START_TEST(test_load_file_sizes)
{
    char path[] = "/tmp/check_rt_config_big_XXXXXX";
    char err[ERR_LEN] = "";
    rt_config *cfg = NULL;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    char *text = dq(STD(""));
    fputs(text, f);
    free(text);
    for (size_t i = 0; i < 200000; i++) { /* JSON allows trailing white space */
        fputs("    \n", f);
    }
    ck_assert_int_eq(fflush(f), 0);
    ck_assert_int_eq(rt_config_load_file(path, &cfg, err, sizeof(err)), WAMP_OK);
    rt_config_free(cfg);
    cfg = NULL;

    char *pad = malloc(MIB);
    ck_assert_ptr_nonnull(pad);
    memset(pad, ' ', MIB);
    for (size_t i = 0; i < 16; i++) {
        ck_assert_uint_eq(fwrite(pad, 1, MIB, f), MIB);
    }
    free(pad);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rt_config_load_file(path, &cfg, err, sizeof(err)), WAMP_EINVAL);
    ck_assert_ptr_null(cfg);
    ck_assert_msg(strstr(err, ": larger than 16777216 bytes") != NULL, "%s", err);
    unlink(path);
}

END_TEST

/* Keys and values from the file never break the message over lines. */
START_TEST(test_message_is_one_line)
{
    char err[ERR_LEN] = "";
    rt_config *cfg = NULL;
    ck_assert_int_eq(load_q(TOP("'a\\nb':1,"), &cfg, err), WAMP_EINVAL);
    ck_assert_str_eq(err, "[\"a?b\"]: unknown key");
    ck_assert_int_eq(load_q(WITH_T("{'type':'web\\tsocket'}"), &cfg, err), WAMP_EINVAL);
    ck_assert_str_eq(err, P_T ".type: unknown type \"web?socket\"");
}

END_TEST

/* Parses single-quoted JSON with rt_config_parse() into d (zeroed first). */
static wamp_err parse_q(const char *json, const char *base_dir, rt_config **out, rt_config_diag *d)
{
    char *text = dq(json);
    memset(d, 0, sizeof(*d));
    wamp_err rc = rt_config_parse(text, strlen(text), base_dir, out, d);
    free(text);
    return rc;
}

/* Five mistakes in five places: every one is reported, in file order, each with its key path. */
START_TEST(test_every_error_listed)
{
    rt_config_diag d;
    rt_config *cfg = NULL;
    wamp_err rc =
            parse_q("{'version':2,'controller':{'id':'Bad-Id'},'workers':[{'type':'router',"
                    "'wampscope':{'limits':{'hello_timeout':5,'max_sessions':0}},"
                    "'realms':[{'name':'realm1','frobnicate':1}],"
                    "'transports':[{'type':'websocket','endpoint':{'type':'tcp','port':70000}}]}]}",
                    NULL, &cfg, &d);
    ck_assert_int_eq(rc, WAMP_EINVAL);
    ck_assert_ptr_null(cfg);
    static const char *const want[] = {
            "controller.id: \"Bad-Id\" must match ^[a-z][a-z0-9_]{2,63}$ (Crossbar's ID rule)",
            P_WS ".limits.hello_timeout: must be an integer 100..3600000 ms",
            P_WS ".limits.max_sessions: must be an integer 1..10000000",
            P_REALM ".frobnicate: unknown key",
            P_T ".endpoint.port: must be an integer 0..65535",
    };
    ck_assert_uint_eq(d.n_errors, 5);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(d.errors[i], want[i]);
    }
    ck_assert_uint_eq(d.n_errors_dropped, 0);
    rt_config_diag_fini(&d);
    ck_assert_ptr_null(d.errors);

    /* The one-message API keeps the first. */
    char err[ERR_LEN] = "";
    char *text = dq("{'controller':{'id':'Bad-Id'},'workers':[{'type':'guest'}]}");
    ck_assert_int_eq(rt_config_load_string(text, strlen(text), &cfg, err, sizeof(err)),
                     WAMP_EINVAL);
    free(text);
    ck_assert_str_eq(err, want[0]);
}

END_TEST

/* Refused list items, roles and transports do not hide the next ones. */
START_TEST(test_errors_in_lists)
{
    rt_config_diag d;
    rt_config *cfg = NULL;
    ck_assert_int_eq(
            parse_q(WORKER("'realms':[{'name':'a b'},{'name':'realm1','roles':[{'name':'r',"
                           "'permissions':[{'uri':'x.*y'},{'uri':'ok'},{'uri':'a','allow':"
                           "{'call':1}}]}]},{'name':'realm1'}],"
                           "'transports':[{'type':'mqtt'},{'type':'websocket','endpoint':"
                           "{'type':'tcp','port':8080},'serializers':['json','xml']}]"),
                    NULL, &cfg, &d),
            WAMP_EINVAL);
    static const char *const want[] = {
            "workers[0].realms[0].name: \"a b\" is not a valid realm name (a URI)",
            "workers[0].realms[1].roles[0].permissions[0].uri: '*' must stand for a whole URI "
            "component in \"x.*y\"",
            "workers[0].realms[1].roles[0].permissions[2].allow.call: must be a boolean",
            "workers[0].realms[2].name: realm \"realm1\" is already defined by realms[1]",
            "workers[0].transports[0].type: MQTT transports are not supported",
            "workers[0].transports[1].serializers[1]: unknown serializer \"xml\"",
    };
    ck_assert_uint_eq(d.n_errors, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < d.n_errors; i++) {
        ck_assert_str_eq(d.errors[i], want[i]);
    }
    rt_config_diag_fini(&d);
}

END_TEST

/* At most RT_CONFIG_ERRORS_MAX messages are kept; the rest are counted. */
START_TEST(test_error_cap)
{
    char json[8192] = "{'version':2,";
    size_t n = strlen(json);
    for (int i = 0; i < RT_CONFIG_ERRORS_MAX + 20; i++) {
        n += (size_t)snprintf(json + n, sizeof(json) - n, "'k%d':1,", i);
    }
    snprintf(json + n, sizeof(json) - n, "'workers':[]}");
    rt_config_diag d;
    rt_config *cfg = NULL;
    ck_assert_int_eq(parse_q(json, NULL, &cfg, &d), WAMP_EINVAL);
    ck_assert_uint_eq(d.n_errors, RT_CONFIG_ERRORS_MAX);
    /* 20 keys more, and "workers: must contain one worker of type "router"". */
    ck_assert_uint_eq(d.n_errors_dropped, 21);
    ck_assert_str_eq(d.errors[0], "k0: unknown key");
    rt_config_diag_fini(&d);
}

END_TEST

/* Crossbar keys that change nothing in wampscope load, and one warning names them all. */
START_TEST(test_harmless_keys_warned)
{
    rt_config_diag d;
    rt_config *cfg = NULL;
    ck_assert_int_eq(
            parse_q("{'$schema':'x','version':2,'controller':{'options':{'title':'node'},"
                    "'manhole':{}},'workers':[{'type':'router','options':{'pythonpath':['..'],"
                    "'cpu_affinity':[0,1]},'manhole':{'endpoint':{}},'realms':[{'name':'realm1',"
                    "'roles':[{'name':'anonymous','permissions':[{'uri':'','cache':true}]}]}],"
                    "'transports':[" T1 "]}]}",
                    NULL, &cfg, &d),
            WAMP_OK);
    ck_assert_ptr_nonnull(cfg);
    ck_assert_uint_eq(d.n_errors, 0);
    ck_assert_uint_eq(d.n_warnings, 1);
    ck_assert_str_eq(d.warnings[0],
                     "6 key(s) with no effect in wampscope, ignored: controller.manhole, "
                     "controller.options.title, workers[0].manhole, "
                     "workers[0].options.pythonpath, workers[0].options.cpu_affinity, "
                     "workers[0].realms[0].roles[0].permissions[0].cache");
    rt_config_free(cfg);
    rt_config_diag_fini(&d);

    /* A long list is cut with ", ..." (still one line); the count covers every key. */
    char perms[16384] = "";
    size_t n = 0;
    for (int i = 0; i < 100; i++) {
        n += (size_t)snprintf(perms + n, sizeof(perms) - n, "%s{'uri':'com.p%d','cache':true}",
                              i ? "," : "", i);
    }
    char json[20000];
    snprintf(json, sizeof(json), WITH_PERMS("%s"), perms);
    ck_assert_int_eq(parse_q(json, NULL, &cfg, &d), WAMP_OK);
    ck_assert_uint_eq(d.n_warnings, 1);
    const char *w = d.warnings[0];
    ck_assert_msg(strncmp(w, "100 key(s) with no effect in wampscope, ignored: " P_PERM ".cache, ",
                          strlen("100 key(s) with no effect in wampscope, ignored: " P_PERM
                                 ".cache, ")) == 0,
                  "%s", w);
    ck_assert_str_eq(w + strlen(w) - 5, ", ...");
    ck_assert_ptr_null(strchr(w, '\n'));
    ck_assert_uint_lt(strlen(w), 2200);
    ck_assert_ptr_null(strstr(w, "permissions[99]"));
    rt_config_free(cfg);
    rt_config_diag_fini(&d);

    /* A clean file has no warning ("$schema" is no Crossbar feature: not named). */
    ck_assert_int_eq(parse_q(TOP("'$schema':'x',"), NULL, &cfg, &d), WAMP_OK);
    ck_assert_uint_eq(d.n_warnings, 0);
    rt_config_free(cfg);
    rt_config_diag_fini(&d);
}

END_TEST

/* Relative TLS file names are found in the config file's directory, as Crossbar finds them in
 * its node directory; absolute ones stay; a string config (no file) uses the working directory. */
START_TEST(test_tls_relative_to_config_dir)
{
    char dir[] = "/tmp/check_rt_config_tls_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[128], key[160], cert[160], conf[160], want[512];
    snprintf(sub, sizeof(sub), "%s/tls", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(key, sizeof(key), "%s/tls/key.pem", dir);
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    write_file(key, "key\n");
    write_file(cert, "cert\n");
    snprintf(conf, sizeof(conf), "%s/config.json", dir);
    char *text = dq(WITH_T("{'type':'websocket','endpoint':{'type':'tcp','port':8443,'tls':"
                           "{'key':'tls/key.pem','certificate':'cert.pem'}}},"
                           "{'type':'rawsocket','endpoint':{'type':'tcp','port':8444,'tls':"
                           "{'key':'/dev/null','certificate':'/dev/null'}}}"));
    write_file(conf, text);

    rt_config_diag d = {0};
    rt_config *cfg = NULL;
    ck_assert_int_eq(chdir("/"), 0); /* the working directory does not matter */
    ck_assert_int_eq(rt_config_parse_file(conf, &cfg, &d), WAMP_OK);
    ck_assert_str_eq(cfg->listeners[0].tls_key, key);
    snprintf(want, sizeof(want), "%s/cert.pem", dir);
    ck_assert_str_eq(cfg->listeners[0].tls_certificate, want);
    ck_assert_str_eq(cfg->listeners[1].tls_key, "/dev/null");
    rt_config_free(cfg);

    /* A relative config path: its directory is taken from the working directory at load. */
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(rt_config_parse_file("config.json", &cfg, &d), WAMP_OK);
    ck_assert_str_eq(cfg->listeners[0].tls_key, key);
    rt_config_free(cfg);

    /* Without a file the names are opened as given, from the working directory. */
    ck_assert_int_eq(chdir(sub), 0);
    ck_assert_int_eq(rt_config_parse(text, strlen(text), NULL, &cfg, &d), WAMP_EINVAL);
    ck_assert_uint_eq(d.n_errors, 1);
    ck_assert_msg(strstr(d.errors[0], P_T ".endpoint.tls.certificate: cannot read \"cert.pem\""),
                  "%s", d.errors[0]);
    rt_config_diag_fini(&d);
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(rt_config_parse(text, strlen(text), NULL, &cfg, &d), WAMP_OK);
    ck_assert_str_eq(cfg->listeners[0].tls_key, "tls/key.pem");
    rt_config_free(cfg);
    rt_config_diag_fini(&d);

    /* A file that is not there is named with its resolved path. */
    ck_assert_int_eq(unlink(key), 0);
    ck_assert_int_eq(chdir("/"), 0);
    ck_assert_int_eq(rt_config_parse_file(conf, &cfg, &d), WAMP_EINVAL);
    snprintf(want, sizeof(want), P_T ".endpoint.tls.key: cannot read \"%s\": %s", key,
             strerror(ENOENT));
    ck_assert_str_eq(d.errors[0], want);
    rt_config_diag_fini(&d);
    free(text);
    unlink(cert);
    unlink(conf);
    rmdir(sub);
    rmdir(dir);
}

END_TEST

/* configs/README.md documents every integer setting of the wampscope object with the default
 * the loader uses, and documents no other: the table row "| `limits.<key>` | integer |
 * <default> ..." starts its default column with the number. */
START_TEST(test_readme_documents_settings)
{
    char path[4096];
    source_path(path, sizeof(path), "configs/README.md");
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[8192];
    size_t documented = 0, n = 0;
    rt_config_setting st;
    while (fgets(line, sizeof(line), f)) {
        char key[128];
        long long def;
        if (sscanf(line, "| `%127[a-z_.]` | integer | %lld", key, &def) != 2 ||
            (strncmp(key, "limits.", 7) != 0 && strncmp(key, "tracing.", 8) != 0)) {
            continue;
        }
        documented++;
        bool found = false;
        for (size_t i = 0; rt_config_setting_get(i, &st); i++) {
            char full[128];
            snprintf(full, sizeof(full), "%s.%s", st.section, st.key);
            if (strcmp(full, key) == 0) {
                found = true;
                ck_assert_msg(st.def == def, "%s: README says %lld, the loader %lld", key, def,
                              st.def);
            }
        }
        ck_assert_msg(found, "README documents %s, which the loader does not have", key);
    }
    fclose(f);
    while (rt_config_setting_get(n, &st)) {
        ck_assert(st.min <= st.def && st.def <= st.max);
        n++;
    }
    ck_assert_uint_eq(n, 28);
    ck_assert_uint_eq(documented, n);
}

END_TEST

static Suite *rt_config_suite(void)
{
    Suite *s = suite_create("rt_config");

    TCase *tc = tcase_create("files");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_default_config);
    tcase_add_test(tc, test_rawsocket_transports);
    tcase_add_test(tc, test_rawsocket_min_length);
    tcase_add_test(tc, test_tls_endpoint);
    tcase_add_test(tc, test_universal_transports);
    tcase_add_test(tc, test_default_file_matches_embedded);
    tcase_add_test(tc, test_e2e_config);
    tcase_add_test(tc, test_e2e_mgmt_config);
    tcase_add_test(tc, test_example_config);
    tcase_add_test(tc, test_metrics_section);
    tcase_add_test(tc, test_load_file_errors);
    tcase_add_test(tc, test_load_file_sizes);
    tcase_add_test(tc, test_readme_documents_settings);
    suite_add_tcase(s, tc);

    tc = tcase_create("semantics");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_minimal_defaults);
    tcase_add_test(tc, test_permission_defaults);
    tcase_add_test(tc, test_role_without_permissions);
    tcase_add_test(tc, test_crossbar_style_config);
    tcase_add_test(tc, test_several_shared_transports);
    tcase_add_test(tc, test_web_root_path_and_auth_defaults);
    tcase_add_test(tc, test_web_services);
    tcase_add_test(tc, test_web_several_websocket_paths);
    tcase_add_test(tc, test_wampscope_values);
    tcase_add_test(tc, test_flight_recorder_config);
    tcase_add_test(tc, test_trusted_networks_explicit);
    tcase_add_test(tc, test_allowed_origins);
    tcase_add_test(tc, test_bridge_not_on_management_realm);
    tcase_add_test(tc, test_trusted_networks_prefixes);
    tcase_add_test(tc, test_trusted_networks_empty);
    tcase_add_test(tc, test_trusted_networks_hand_built);
    tcase_add_test(tc, test_parse_peer_addr);
    tcase_add_test(tc, test_format_trusted);
    suite_add_tcase(s, tc);

    tc = tcase_create("refusals");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_refusals, 0, (int)(sizeof(refusals) / sizeof(refusals[0])));
    tcase_add_test(tc, test_json_syntax_errors);
    tcase_add_test(tc, test_small_error_buffer);
    tcase_add_test(tc, test_long_key_path);
    tcase_add_test(tc, test_long_url_path);
    tcase_add_test(tc, test_message_is_one_line);
    tcase_add_test(tc, test_every_error_listed);
    tcase_add_test(tc, test_errors_in_lists);
    tcase_add_test(tc, test_error_cap);
    tcase_add_test(tc, test_harmless_keys_warned);
    tcase_add_test(tc, test_tls_relative_to_config_dir);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_config_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
