/* rt_router_ctx.c: the reads of the router context that every core module makes (its clock,
 * config, id generators, statistics, realm by name; a session's id drawn anew). They sit below
 * the broker, dealer, sessions and tracing that use them; rt_router.c, which builds, ticks and
 * frees the router, sits above them all. */
#include <string.h>

#include "rt_core_int.h"
#include "rt_realm.h"
#include "rt_router.h"
#include "wamp_id.h"

const rt_config *rt_router_config(const rt_router *rt)
{
    return rt->cfg;
}

uint64_t rt_router_now_us(const rt_router *rt)
{
    return rt->clock(rt->clock_ctx);
}

trace_hub *rt_router_trace_hub(rt_router *rt)
{
    return rt->hub;
}

uint64_t rt_router_next_id(rt_router *rt)
{
    return wamp_idgen_next(&rt->ids);
}

const rt_router_stats *rt_router_stats_get(const rt_router *rt)
{
    return &rt->stats;
}

size_t rt_router_session_count(const rt_router *rt)
{
    return rt->n_sessions;
}

rt_realm *rt_router_find_realm(rt_router *rt, const char *name)
{
    for (size_t i = 0; i < rt->n_realms; i++) {
        if (strcmp(rt_realm_name(rt->realms[i]), name) == 0) {
            return rt->realms[i];
        }
    }
    return NULL;
}

void rt_router_set_cluster(rt_router *rt, const struct rt_cluster *c)
{
    rt->cluster = c;
}

const struct rt_cluster *rt_router_cluster(const rt_router *rt)
{
    return rt->cluster;
}

void rt_router_set_cluster_broker(rt_router *rt, const struct rt_cluster_broker *cb)
{
    rt->cluster_broker = cb;
}

rt_session *rt_router_session_by_id(const rt_router *rt, uint64_t id)
{
    for (rt_hnode *n = rt_hmap_first(&rt->sessions_by_id, rt_hash_u64(id)); n;
         n = rt_hmap_next(n)) {
        rt_session *s = RT_CONTAINER_OF(n, rt_session, by_id);
        if (s->id == id) {
            return s;
        }
    }
    return NULL;
}

uint64_t rt_router_draw_session_id(const rt_router *rt)
{
    uint64_t id;
    do {
        id = wamp_id_random();
    } while (rt_router_session_by_id(rt, id));
    return id;
}

void rt_router_session_new_id(rt_session *s)
{
    rt_router *rt = s->rt;
    uint64_t id = rt_router_draw_session_id(rt); /* (s still holds its own: another one) */
    rt_hmap_remove(&rt->sessions_by_id, &s->by_id);
    s->id = id;
    /* (into the place just freed: the map does not grow, so this cannot fail) */
    (void)rt_hmap_insert(&rt->sessions_by_id, &s->by_id, rt_hash_u64(s->id));
}
