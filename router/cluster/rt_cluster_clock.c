/* rt_cluster_clock.c: the other nodes' clock offsets (rt_cluster_clock.h). */
#include "rt_cluster_clock.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_log.h"

typedef struct peer_clock {
    char *node;
    int64_t diff[RT_CLUSTER_CLOCK_WINDOW]; /* the last beats' differences, a ring */
    size_t n, next;                        /* differences held; where the next goes */
    int64_t offset;                        /* the largest of them */
    bool over;                             /* said over the bound (until back within it) */
} peer_clock;

struct rt_cluster_clock {
    char *name;
    uint64_t max_ns; /* 0: never said */
    peer_clock *v;
    size_t n, cap;
};

rt_cluster_clock *rt_cluster_clock_new(const char *name, uint32_t max_offset_ms)
{
    rt_cluster_clock *k = calloc(1, sizeof(*k));
    if (!k || !(k->name = strdup(name))) {
        free(k);
        return NULL;
    }
    k->max_ns = (uint64_t)max_offset_ms * 1000000u;
    return k;
}

void rt_cluster_clock_free(rt_cluster_clock *k)
{
    if (!k) {
        return;
    }
    for (size_t i = 0; i < k->n; i++) {
        free(k->v[i].node);
    }
    free(k->v);
    free(k->name);
    free(k);
}

/* Node's entry, or NULL. */
static peer_clock *peer_find(const rt_cluster_clock *k, const char *node)
{
    for (size_t i = 0; k && i < k->n; i++) {
        if (strcmp(k->v[i].node, node) == 0) {
            return &k->v[i];
        }
    }
    return NULL;
}

/* Node's entry, made if needed; NULL on allocation failure. */
static peer_clock *peer_get(rt_cluster_clock *k, const char *node)
{
    peer_clock *found = peer_find(k, node);
    if (found) {
        return found;
    }
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 4;
        peer_clock *v = realloc(k->v, cap * sizeof(*v));
        if (!v) {
            return NULL;
        }
        k->v = v;
        k->cap = cap;
    }
    peer_clock *p = &k->v[k->n];
    *p = (peer_clock){.node = strdup(node)};
    if (!p->node) {
        return NULL;
    }
    k->n++;
    return p;
}

/* Logs a node's offset crossing the bound, either way (once per crossing). */
static void say(rt_cluster_clock *k, peer_clock *p)
{
    /* (Offsets are clamped to +-INT64_MAX: rt_cluster_clock_heard().) */
    uint64_t mag = (uint64_t)(p->offset < 0 ? -p->offset : p->offset);
    bool over = k->max_ns && mag > k->max_ns;
    if (over == p->over) {
        return;
    }
    p->over = over;
    double s = (double)mag / 1e9;
    if (over) {
        RT_LOG_WARN(0,
                    "cluster %s: node %s's wall clock is %.3f s %s this node's (over "
                    "max_clock_offset %.3f s): merged trace readings and retained events go "
                    "by the nodes' wall clocks; synchronize them (NTP)",
                    k->name, p->node, s, p->offset < 0 ? "behind" : "ahead of",
                    (double)k->max_ns / 1e9);
    } else {
        RT_LOG_INFO(0, "cluster %s: node %s's wall clock is within %.3f s of this node's again",
                    k->name, p->node, (double)k->max_ns / 1e9);
    }
}

bool rt_cluster_clock_heard(rt_cluster_clock *k, const char *node, uint64_t wall_ns,
                            uint64_t now_ns)
{
    peer_clock *p = peer_get(k, node);
    if (!p) {
        return false;
    }
    /* (Clamped: a reading can be anything another node sends.) */
    uint64_t mag = wall_ns >= now_ns ? wall_ns - now_ns : now_ns - wall_ns;
    int64_t d = mag > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)mag;
    d = wall_ns >= now_ns ? d : -d;
    p->diff[p->next] = d;
    p->next = (p->next + 1) % RT_CLUSTER_CLOCK_WINDOW;
    p->n += p->n < RT_CLUSTER_CLOCK_WINDOW;
    p->offset = p->diff[0];
    for (size_t i = 1; i < p->n; i++) {
        p->offset = p->diff[i] > p->offset ? p->diff[i] : p->offset;
    }
    say(k, p);
    return true;
}

void rt_cluster_clock_prune(rt_cluster_clock *k, bool (*live)(void *arg, const char *node),
                            void *arg)
{
    size_t o = 0;
    for (size_t i = 0; i < k->n; i++) {
        if (live(arg, k->v[i].node)) {
            k->v[o++] = k->v[i];
        } else {
            free(k->v[i].node);
        }
    }
    k->n = o;
}

bool rt_cluster_clock_offset(const rt_cluster_clock *k, const char *node, int64_t *offset_ns)
{
    const peer_clock *p = peer_find(k, node);
    if (p) {
        *offset_ns = p->offset;
    }
    return p != NULL;
}

size_t rt_cluster_clock_count(const rt_cluster_clock *k)
{
    return k ? k->n : 0;
}

const char *rt_cluster_clock_node(const rt_cluster_clock *k, size_t i, int64_t *offset_ns)
{
    *offset_ns = k->v[i].offset;
    return k->v[i].node;
}
