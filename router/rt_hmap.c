/* rt_hmap.c: power-of-two bucket array, grows at load factor 1. */
#include "rt_hmap.h"

#include <stdlib.h>

void rt_hmap_init(rt_hmap *m)
{
    m->buckets = NULL;
    m->mask = 0;
    m->count = 0;
}

void rt_hmap_fini(rt_hmap *m)
{
    free(m->buckets);
    rt_hmap_init(m);
}

static wamp_err hmap_grow(rt_hmap *m)
{
    size_t n = m->buckets ? (m->mask + 1) * 2 : 16;
    rt_hnode **nb = calloc(n, sizeof(*nb));
    if (!nb) {
        return WAMP_ENOMEM;
    }
    if (m->buckets) {
        for (size_t i = 0; i <= m->mask; i++) {
            rt_hnode *e = m->buckets[i];
            while (e) {
                rt_hnode *next = e->next;
                size_t b = (size_t)e->hash & (n - 1);
                e->next = nb[b];
                nb[b] = e;
                e = next;
            }
        }
        free(m->buckets);
    }
    m->buckets = nb;
    m->mask = n - 1;
    return WAMP_OK;
}

wamp_err rt_hmap_insert(rt_hmap *m, rt_hnode *n, uint64_t hash)
{
    if (!m->buckets || m->count >= m->mask + 1) {
        wamp_err err = hmap_grow(m);
        if (err != WAMP_OK) {
            return err;
        }
    }
    size_t b = (size_t)hash & m->mask;
    n->hash = hash;
    n->next = m->buckets[b];
    m->buckets[b] = n;
    m->count++;
    return WAMP_OK;
}

void rt_hmap_remove(rt_hmap *m, rt_hnode *n)
{
    rt_hnode **pp = &m->buckets[(size_t)n->hash & m->mask];
    while (*pp && *pp != n) {
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = n->next;
        n->next = NULL;
        m->count--;
    }
}

rt_hnode *rt_hmap_first(const rt_hmap *m, uint64_t hash)
{
    if (!m->buckets) {
        return NULL;
    }
    rt_hnode *e = m->buckets[(size_t)hash & m->mask];
    while (e && e->hash != hash) {
        e = e->next;
    }
    return e;
}

rt_hnode *rt_hmap_next(const rt_hnode *n)
{
    uint64_t hash = n->hash;
    rt_hnode *e = n->next;
    while (e && e->hash != hash) {
        e = e->next;
    }
    return e;
}

rt_hmap_iter rt_hmap_iter_begin(const rt_hmap *m)
{
    rt_hmap_iter it = {0, NULL};
    if (!m->buckets) {
        return it;
    }
    for (; it.bucket <= m->mask; it.bucket++) {
        if (m->buckets[it.bucket]) {
            it.node = m->buckets[it.bucket];
            return it;
        }
    }
    return it;
}

void rt_hmap_iter_next(const rt_hmap *m, rt_hmap_iter *it)
{
    if (it->node && it->node->next) {
        it->node = it->node->next;
        return;
    }
    it->node = NULL;
    for (it->bucket++; it->bucket <= m->mask; it->bucket++) {
        if (m->buckets[it->bucket]) {
            it->node = m->buckets[it->bucket];
            return;
        }
    }
}

uint64_t rt_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return rt_hash_u64(h);
}

uint64_t rt_hash_u64(uint64_t v)
{
    /* splitmix64 finaliser: spreads sequential ids over the low bits used for buckets. */
    v ^= v >> 30;
    v *= 0xbf58476d1ce4e5b9ULL;
    v ^= v >> 27;
    v *= 0x94d049bb133111ebULL;
    v ^= v >> 31;
    return v;
}
