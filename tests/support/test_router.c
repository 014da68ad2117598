/* test_router.c */
#include "test_router.h"

#include <string.h>

#include <check.h>

#include "rt_broker.h"
#include "rt_dealer.h"
#include "rt_realm.h"
#include "trace_hub.h"
#include "trace_render.h"

static rt_permission all_perm[] = {{
        .uri = "",
        .match = WAMP_MATCH_PREFIX,
        .allow_call = true,
        .allow_register = true,
        .allow_publish = true,
        .allow_subscribe = true,
}};

static rt_permission locked_perm[] = {
        {.uri = "com.open.",
         .match = WAMP_MATCH_PREFIX,
         .allow_call = true,
         .allow_subscribe = true},
        {.uri = "com.open.exact",
         .match = WAMP_MATCH_EXACT,
         .allow_publish = true,
         .allow_register = true,
         .allow_call = true,
         .allow_subscribe = true},
        {.uri = "com.open.disclosed.",
         .match = WAMP_MATCH_PREFIX,
         .allow_call = true,
         .allow_register = true,
         .disclose_caller = true},
};

static rt_role all_role[] = {{.name = "anonymous", .permissions = all_perm, .n_permissions = 1}};
static rt_role locked_role[] = {
        {.name = "anonymous", .permissions = locked_perm, .n_permissions = 3}};

static rt_realm_config realms[] = {
        {.name = "realm1", .roles = all_role, .n_roles = 1},
        {.name = "realm2", .roles = all_role, .n_roles = 1},
        {.name = "locked", .roles = locked_role, .n_roles = 1},
};

bool test_router_setup(test_router *t)
{
    memset(t, 0, sizeof(*t));
    t->cfg.node_id = "testnode";
    t->cfg.worker_id = "router1";
    t->cfg.realms = realms;
    t->cfg.n_realms = sizeof(realms) / sizeof(realms[0]);
    t->cfg.limits.max_message_size = 1024 * 1024;
    t->cfg.limits.max_queue_bytes = 64 * 1024;
    t->cfg.limits.max_queue_messages = 100;
    t->cfg.limits.hello_timeout_ms = 1000;
    t->cfg.limits.shutdown_grace_ms = 500;
    t->clock.now_us = 1000000;
    t->rt = rt_router_new(&t->cfg, fake_clock_now, &t->clock);
    return t->rt != NULL;
}

void test_router_init(test_router *t)
{
    ck_assert(test_router_setup(t));
}

void test_router_fini(test_router *t)
{
    rt_router_free(t->rt);
    t->rt = NULL;
}

static rt_realm *realm_of(rt_router *rt, const char *realm)
{
    rt_realm *r = rt_router_find_realm(rt, realm);
    ck_assert_ptr_nonnull(r);
    return r;
}

size_t test_router_sub_count(rt_router *rt, const char *realm)
{
    return rt_broker_subscription_count(rt_realm_broker(realm_of(rt, realm)));
}

static bool count_session_reg(void *ctx, const rt_reg_info *r)
{
    *(size_t *)ctx += r->n_callees > 0 ? 1 : 0;
    return true;
}

size_t test_router_reg_count(rt_router *rt, const char *realm)
{
    size_t n = 0;
    rt_dealer_foreach(rt_realm_dealer(realm_of(rt, realm)), count_session_reg, &n);
    return n;
}

size_t test_router_call_count(rt_router *rt, const char *realm)
{
    return rt_dealer_pending_count(rt_realm_dealer(realm_of(rt, realm)));
}

trace *test_router_start_trace(test_router *t, const char *id, const char *options)
{
    json_t *o = options ? json_loads(options, 0, NULL) : NULL;
    ck_assert(options == NULL || o != NULL);
    trace *tr = NULL;
    char why[160] = "";
    wamp_err err = trace_hub_start(rt_router_trace_hub(t->rt), id, o, 1, 1, &tr, why, sizeof(why));
    ck_assert_msg(err == WAMP_OK, "start_trace: %s", why);
    json_decref(o);
    return tr;
}

json_t *test_router_records(trace *tr)
{
    json_t *r = trace_render_records(tr, 0, UINT64_MAX, 10000);
    ck_assert_ptr_nonnull(r);
    return r;
}
