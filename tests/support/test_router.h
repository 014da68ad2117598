/* test_router.h: a router built from a hand-made configuration (no config parser involved),
 * with a fake clock, for core tests.
 * Realms: "realm1" (role "anonymous" may do everything), "realm2" (same), and "locked" where
 * role "anonymous" may only call/subscribe under "com.open." (prefix) and publish/register
 * "com.open.exact" (exact), and may call and register under "com.open.disclosed." (prefix),
 * where the caller is disclosed to callees. Limits: small queue (64 KiB, 100 messages), max message
 * 1 MiB, HELLO timeout 1000 ms, shutdown grace 500 ms. */
#ifndef TEST_ROUTER_H
#define TEST_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "fake_clock.h"
#include "rt_config.h"
#include "rt_router.h"
#include "trace.h"

typedef struct test_router {
    rt_config cfg;
    fake_clock clock;
    rt_router *rt;
} test_router;

/* Builds everything; aborts the test on failure. */
void test_router_init(test_router *t);
/* The same without Check (fuzz targets run outside a Check runner): false on failure. */
bool test_router_setup(test_router *t);
void test_router_fini(test_router *t);
/* Subscriptions / registrations / pending calls currently held by a realm's broker and dealer
 * (registrations of sessions: router-local procedures such as the meta API are not counted). */
size_t test_router_sub_count(rt_router *rt, const char *realm);
size_t test_router_reg_count(rt_router *rt, const char *realm);
size_t test_router_call_count(rt_router *rt, const char *realm);
/* Starts trace id on t's hub with options given as JSON text (NULL = defaults), at pc = ts = 1;
 * aborts the test on failure. */
trace *test_router_start_trace(test_router *t, const char *id, const char *options);
/* Every record of tr rendered as the API's objects (owned JSON array). */
json_t *test_router_records(trace *tr);

#endif /* TEST_ROUTER_H */
