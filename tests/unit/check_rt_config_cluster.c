/* check_rt_config_cluster.c: the wampscope.cluster object of the configuration (defaults, every
 * key, every refusal, controller.id as a cluster node id). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "rt_config.h"

#define ERR_LEN 512

/* Single-quoted JSON, as in check_rt_config.c. */
#define CFG(ctl, cluster)                                                                     \
    "{'version':2," ctl "'workers':[{'type':'router','realms':[{'name':'realm1'}],"           \
    "'transports':[{'type':'websocket','endpoint':{'type':'tcp','port':8080}}],'wampscope':{" \
    "'cluster':" cluster "}}]}"
#define ID(id)      "'controller':{'id':'" id "'},"
#define WITH(c)     CFG(ID("node1"), c)
#define NATS(extra) WITH("{'nats':{'servers':['nats://127.0.0.1:4222']" extra "}}")

static wamp_err load(const char *json, rt_config **out, char *err)
{
    char *text = strdup(json);
    ck_assert_ptr_nonnull(text);
    for (char *p = text; *p; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    err[0] = '\0';
    wamp_err rc = rt_config_load_string(text, strlen(text), out, err, ERR_LEN);
    free(text);
    return rc;
}

static void assert_refused(const char *json, const char *msg)
{
    char err[ERR_LEN];
    rt_config *cfg = NULL;
    ck_assert_int_eq(load(json, &cfg, err), WAMP_EINVAL);
    ck_assert_ptr_null(cfg);
    ck_assert_msg(strstr(err, msg) != NULL, "expected \"%s\" in \"%s\"", msg, err);
}

START_TEST(test_no_cluster_by_default)
{
    char err[ERR_LEN];
    rt_config *cfg = NULL;
    ck_assert_int_eq(load(CFG("", "null"), &cfg, err), WAMP_EINVAL); /* null is not an object */
    const char *plain = "{'version':2,'workers':[{'type':'router','realms':[{'name':'r'}],"
                        "'transports':[{'type':'websocket','endpoint':{'type':'tcp','port':1}}]}]}";
    ck_assert_int_eq(load(plain, &cfg, err), WAMP_OK);
    ck_assert_ptr_null(cfg->cluster);
    rt_config_free(cfg);
}

END_TEST

START_TEST(test_defaults)
{
    char err[ERR_LEN];
    rt_config *cfg = NULL;
    ck_assert_int_eq(load(NATS(""), &cfg, err), WAMP_OK);
    const rt_cluster_config *cl = cfg->cluster;
    ck_assert_ptr_nonnull(cl);
    ck_assert_str_eq(cl->name, "wampscope");
    ck_assert_uint_eq(cl->n_servers, 1);
    ck_assert_str_eq(cl->servers[0], "nats://127.0.0.1:4222");
    ck_assert_ptr_null(cl->user);
    ck_assert_ptr_null(cl->token);
    ck_assert_ptr_null(cl->creds);
    ck_assert(!cl->tls);
    ck_assert_uint_eq(cl->connect_timeout_ms, 2000);
    ck_assert_uint_eq(cl->reconnect_wait_ms, 1000);
    ck_assert_uint_eq(cl->request_timeout_ms, 2000);
    ck_assert_uint_eq(cl->heartbeat_ms, 1000);
    ck_assert_uint_eq(cl->node_ttl_ms, 4000);
    ck_assert_uint_eq(cl->max_pending_bytes, 8 * 1024 * 1024);
    ck_assert_uint_eq(cl->max_calls, 10000);
    ck_assert_uint_eq(cl->max_registrations, 100000);
    ck_assert(!cl->send_asap);
    rt_config_free(cfg);
}

END_TEST

START_TEST(test_every_key)
{
    char err[ERR_LEN];
    rt_config *cfg = NULL;
    const char *json = WITH("{'name':'prod-1','connect_timeout':500,'reconnect_wait':200,"
                            "'request_timeout':300,'heartbeat_interval':250,'node_ttl':1000,"
                            "'max_pending_bytes':65536,'max_calls':5,'max_registrations':7,"
                            "'send_asap':true,"
                            "'nats':{'servers':['nats://a:1',"
                            "'tls://b:2'],'user':'u','password':'p','tls':{}}}");
    ck_assert_int_eq(load(json, &cfg, err), WAMP_OK);
    const rt_cluster_config *cl = cfg->cluster;
    ck_assert_str_eq(cl->name, "prod-1");
    ck_assert_uint_eq(cl->n_servers, 2);
    ck_assert_str_eq(cl->servers[1], "tls://b:2");
    ck_assert_str_eq(cl->user, "u");
    ck_assert_str_eq(cl->password, "p");
    ck_assert(cl->tls);
    ck_assert_ptr_null(cl->tls_ca);
    ck_assert_uint_eq(cl->connect_timeout_ms, 500);
    ck_assert_uint_eq(cl->reconnect_wait_ms, 200);
    ck_assert_uint_eq(cl->request_timeout_ms, 300);
    ck_assert_uint_eq(cl->heartbeat_ms, 250);
    ck_assert_uint_eq(cl->node_ttl_ms, 1000);
    ck_assert_uint_eq(cl->max_pending_bytes, 65536);
    ck_assert_uint_eq(cl->max_calls, 5);
    ck_assert_uint_eq(cl->max_registrations, 7);
    ck_assert(cl->send_asap);
    rt_config_free(cfg);
    ck_assert_int_eq(load(NATS(",'token':'s3cret'"), &cfg, err), WAMP_OK);
    ck_assert_str_eq(cfg->cluster->token, "s3cret");
    rt_config_free(cfg);
}

END_TEST

START_TEST(test_files_must_be_readable)
{
    char err[ERR_LEN];
    rt_config *cfg = NULL;
    char path[] = "/tmp/check_cluster_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    char json[2048];
    snprintf(json, sizeof(json),
             NATS(",'creds':'%s','tls':{'ca':'%s','certificate':'%s','key':'%s'}"), path, path,
             path, path);
    ck_assert_int_eq(load(json, &cfg, err), WAMP_OK);
    ck_assert_str_eq(cfg->cluster->creds, path);
    ck_assert_str_eq(cfg->cluster->tls_ca, path);
    ck_assert_str_eq(cfg->cluster->tls_key, path);
    rt_config_free(cfg);
    unlink(path);
    assert_refused(json, "workers[0].wampscope.cluster.nats.creds: cannot read");
}

END_TEST

START_TEST(test_refusals)
{
    assert_refused(WITH("{}"), "workers[0].wampscope.cluster.nats: required");
    assert_refused(WITH("{'nats':{'servers':[]}}"), "cluster.nats.servers: must be a non-empty");
    assert_refused(WITH("{'nats':{'servers':['http://x:1']}}"),
                   "cluster.nats.servers[0]: must be a nats:// or tls:// URL");
    assert_refused(NATS(",'bogus':1"), "cluster.nats.bogus: unknown key");
    assert_refused(WITH("{'bogus':1,'nats':{'servers':['nats://a:1']}}"),
                   "cluster.bogus: unknown key");
    assert_refused(NATS(",'user':'u'"), "\"user\" and \"password\" go together");
    assert_refused(NATS(",'user':'u','password':'p','token':'t'"),
                   "give one of \"user\"/\"password\", \"token\" or \"creds\"");
    assert_refused(NATS(",'tls':{'certificate':'/etc/hostname'}"),
                   "\"certificate\" and \"key\" go together");
    assert_refused(NATS(",'tls':true"), "cluster.nats.tls: must be an object");
    assert_refused(WITH("{'name':'a.b','nats':{'servers':['nats://a:1']}}"),
                   "cluster.name: must be 1..64 letters, digits, '-' or '_' (got \"a.b\")");
    assert_refused(WITH("{'heartbeat_interval':50,'nats':{'servers':['nats://a:1']}}"),
                   "cluster.heartbeat_interval: must be an integer 100..60000 ms");
    assert_refused(WITH("{'heartbeat_interval':1000,'node_ttl':1500,"
                        "'nats':{'servers':['nats://a:1']}}"),
                   "cluster.node_ttl: must be at least twice heartbeat_interval (1000 ms)");
    assert_refused(WITH("{'max_pending_bytes':1,'nats':{'servers':['nats://a:1']}}"),
                   "cluster.max_pending_bytes: must be an integer");
    /* Crossbar's ID rule keeps a given controller.id a valid node id. */
    assert_refused(CFG(ID("a.b"), "{'nats':{'servers':['nats://a:1']}}"),
                   "controller.id: \"a.b\" must match");
}

END_TEST

/* Without controller.id the node id is the host name, which must then be a valid node id. */
START_TEST(test_host_name_as_node_id)
{
    char host[256] = "";
    ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
    bool valid = strlen(host) <= 64 && strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"
                                                    "TUVWXYZ0123456789-_") == strlen(host);
    char err[ERR_LEN];
    rt_config *cfg = NULL;
    wamp_err rc = load(CFG("", "{'nats':{'servers':['nats://a:1']}}"), &cfg, err);
    if (valid) {
        ck_assert_int_eq(rc, WAMP_OK);
        ck_assert_str_eq(cfg->node_id, host);
        rt_config_free(cfg);
    } else {
        ck_assert_int_eq(rc, WAMP_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "cannot be a cluster node id"));
    }
}

END_TEST

static Suite *config_cluster_suite(void)
{
    Suite *s = suite_create("rt_config_cluster");
    TCase *tc = tcase_create("cluster");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_no_cluster_by_default);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_every_key);
    tcase_add_test(tc, test_files_must_be_readable);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_host_name_as_node_id);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_cluster_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
