/* rt_broker_subs.c: the broker's subscription table: subscriptions (exact, prefix, wildcard)
 * with their members, the hash tables and pattern indexes, and the lookup of the subscriptions a
 * topic matches. A subscription keeps its members in an array for a cache-friendly fan-out loop;
 * each member record is also linked into its session's `subs` list so leaving costs O(own
 * subscriptions). Every subscription is in one hash table keyed by its URI (compared together
 * with the match policy); pattern subscriptions are found through the shape indexes described in
 * rt_broker.h. */
#include <stdlib.h>
#include <string.h>

#include "rt_broker_int.h"
#include "wamp_uri.h"

/* --- Hashing ---------------------------------------------------------------------------------
 * FNV-1a over the URI's bytes, finished with rt_hash_u64 (the same value as rt_hash_str for a
 * whole string). FNV-1a runs byte by byte, so the hash of every prefix of a topic, and of a topic
 * with some components left out, comes from one pass. */
#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME  1099511628211ULL

static uint64_t fnv_step(uint64_t h, unsigned char c)
{
    return (h ^ c) * FNV_PRIME;
}

static uint64_t fnv_bytes(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h = fnv_step(h, (unsigned char)p[i]);
    }
    return h;
}

uint64_t rt_broker_uri_hash(const char *uri, size_t len)
{
    return rt_hash_u64(fnv_bytes(FNV_OFFSET, uri, len));
}

void rt_broker_sub_free(rt_subscription *sub)
{
    free(sub->members);
    free(sub->uri);
    free(sub);
}

/* --- Pattern indexes ------------------------------------------------------------------------- */

static size_t component_count(const char *uri)
{
    size_t n = 1;
    for (const char *p = uri; *p; p++) {
        n += *p == '.' ? 1 : 0;
    }
    return n;
}

/* Registers a prefix length (WAMP_ENOMEM: nothing changed). */
static wamp_err plen_add(rt_broker *b, size_t len)
{
    size_t i = 0;
    while (i < b->n_plens && b->plens[i].len < len) {
        i++;
    }
    if (i < b->n_plens && b->plens[i].len == len) {
        b->plens[i].users++;
        return WAMP_OK;
    }
    rt_plen *np = realloc(b->plens, (b->n_plens + 1) * sizeof(*np));
    if (!np) {
        return WAMP_ENOMEM;
    }
    b->plens = np;
    memmove(&np[i + 1], &np[i], (b->n_plens - i) * sizeof(*np));
    np[i] = (rt_plen){.len = len, .users = 1};
    b->n_plens++;
    return WAMP_OK;
}

static void plen_remove(rt_broker *b, size_t len)
{
    for (size_t i = 0; i < b->n_plens; i++) {
        if (b->plens[i].len == len) {
            if (--b->plens[i].users == 0) {
                memmove(&b->plens[i], &b->plens[i + 1], (b->n_plens - i - 1) * sizeof(rt_plen));
                b->n_plens--;
            }
            return;
        }
    }
}

/* The shape of wildcard pattern uri, shared (users + 1); NULL on allocation failure. */
static rt_wshape *shape_ref(rt_broker *b, const char *uri)
{
    size_t n = component_count(uri);
    bool *any = calloc(n, sizeof(*any));
    if (!any) {
        return NULL;
    }
    size_t ci = 0, clen = 0;
    for (const char *p = uri;; p++) {
        if (*p == '.' || *p == '\0') {
            any[ci++] = clen == 0;
            clen = 0;
            if (*p == '\0') {
                break;
            }
        } else {
            clen++;
        }
    }
    for (size_t i = 0; i < b->n_shapes; i++) {
        rt_wshape *w = b->shapes[i];
        if (w->ncomp == n && memcmp(w->any, any, n * sizeof(*any)) == 0) {
            free(any);
            w->users++;
            return w;
        }
    }
    rt_wshape *w = calloc(1, sizeof(*w));
    rt_wshape **ns = w ? realloc(b->shapes, (b->n_shapes + 1) * sizeof(*ns)) : NULL;
    if (!ns) {
        free(w);
        free(any);
        return NULL;
    }
    b->shapes = ns;
    w->ncomp = n;
    w->any = any;
    w->users = 1;
    b->shapes[b->n_shapes++] = w;
    return w;
}

static void shape_unref(rt_broker *b, rt_wshape *w)
{
    if (--w->users > 0) {
        return;
    }
    for (size_t i = 0; i < b->n_shapes; i++) {
        if (b->shapes[i] == w) {
            b->shapes[i] = b->shapes[--b->n_shapes];
            break;
        }
    }
    free(w->any);
    free(w);
}

/* Removes sub from the tables and pattern indexes (not from its members). */
void rt_broker_unindex(rt_broker *b, rt_subscription *sub)
{
    rt_hmap_remove(&b->by_uri, &sub->by_uri);
    rt_hmap_remove(&b->by_id, &sub->by_id);
    if (sub->match == WAMP_MATCH_PREFIX) {
        plen_remove(b, sub->uri_len);
    } else if (sub->match == WAMP_MATCH_WILDCARD) {
        shape_unref(b, sub->shape);
        sub->shape = NULL;
    }
}

/* New subscription for (uri, match), indexed; NULL on allocation failure (nothing changed). */
rt_subscription *rt_broker_sub_new(rt_broker *b, rt_session *s, const char *uri, wamp_match match)
{
    rt_subscription *sub = calloc(1, sizeof(*sub));
    if (!sub || !(sub->uri = strdup(uri))) {
        free(sub);
        return NULL;
    }
    sub->uri_len = strlen(uri);
    sub->match = match;
    sub->id = rt_router_next_id(s->rt);
    sub->created_us = rt_router_now_us(s->rt);
    bool in_uri = false, in_id = false;
    if (rt_hmap_insert(&b->by_uri, &sub->by_uri, rt_broker_uri_hash(uri, sub->uri_len)) !=
        WAMP_OK) {
        goto fail;
    }
    in_uri = true;
    if (rt_hmap_insert(&b->by_id, &sub->by_id, rt_hash_u64(sub->id)) != WAMP_OK) {
        goto fail;
    }
    in_id = true;
    if (match == WAMP_MATCH_PREFIX) {
        if (plen_add(b, sub->uri_len) != WAMP_OK) {
            goto fail;
        }
    } else if (match == WAMP_MATCH_WILDCARD) {
        if (!(sub->shape = shape_ref(b, uri))) {
            goto fail;
        }
    }
    return sub;
fail:
    if (in_id) {
        rt_hmap_remove(&b->by_id, &sub->by_id);
    }
    if (in_uri) {
        rt_hmap_remove(&b->by_uri, &sub->by_uri);
    }
    rt_broker_sub_free(sub);
    return NULL;
}

/* --- Lookup ---------------------------------------------------------------------------------- */

/* The subscription with match policy match and URI uri[0..len) (not necessarily terminated
 * there), fnv its unfinished FNV-1a hash (fnv_bytes()), or NULL. */
static rt_subscription *find_hashed(const rt_broker *b, uint64_t fnv, const char *uri, size_t len,
                                    wamp_match match)
{
    for (rt_hnode *n = rt_hmap_first(&b->by_uri, rt_hash_u64(fnv)); n; n = rt_hmap_next(n)) {
        rt_subscription *sub = RT_CONTAINER_OF(n, rt_subscription, by_uri);
        if (sub->match == match && sub->uri_len == len && memcmp(sub->uri, uri, len) == 0) {
            return sub;
        }
    }
    return NULL;
}

rt_subscription *rt_broker_find_exactly(const rt_broker *b, const char *uri, wamp_match match)
{
    size_t len = strlen(uri);
    return find_hashed(b, fnv_bytes(FNV_OFFSET, uri, len), uri, len, match);
}

/* Appends sub to the scratch hit list; false on allocation failure. */
static bool hit_add(rt_broker *b, size_t *n, rt_subscription *sub)
{
    if (*n == b->cap_hits) {
        size_t ncap = b->cap_hits ? b->cap_hits * 2 : 8;
        rt_subscription **nh = realloc(b->hits, ncap * sizeof(*nh));
        if (!nh) {
            return false;
        }
        b->hits = nh;
        b->cap_hits = ncap;
    }
    b->hits[(*n)++] = sub;
    return true;
}

/* Fills b->hits with every subscription matching topic (a valid URI); returns how many, or
 * SIZE_MAX on allocation failure. Order: the exact subscription, prefix ones by length, then
 * wildcard ones. */
size_t rt_broker_collect_matches(rt_broker *b, const char *topic)
{
    size_t n = 0;
    size_t tlen = strlen(topic);
    uint64_t h = FNV_OFFSET;
    rt_subscription *exact =
            find_hashed(b, fnv_bytes(h, topic, tlen), topic, tlen, WAMP_MATCH_EXACT);
    if (exact && !hit_add(b, &n, exact)) {
        return SIZE_MAX;
    }
    /* Prefix patterns: hash each topic prefix whose length some pattern has, extending one
     * running FNV state. */
    size_t done = 0;
    for (size_t i = 0; i < b->n_plens && b->plens[i].len <= tlen; i++) {
        size_t len = b->plens[i].len;
        h = fnv_bytes(h, topic + done, len - done);
        done = len;
        rt_subscription *prefix = find_hashed(b, h, topic, len, WAMP_MATCH_PREFIX);
        if (prefix && !hit_add(b, &n, prefix)) {
            return SIZE_MAX;
        }
    }
    /* Wildcard patterns: for each shape with the topic's component count, hash the topic with
     * that shape's "any" components left empty: that is the hash of the pattern that would
     * match. */
    if (b->n_shapes > 0) {
        size_t ncomp = component_count(topic);
        for (size_t i = 0; i < b->n_shapes; i++) {
            const rt_wshape *w = b->shapes[i];
            if (w->ncomp != ncomp) {
                continue;
            }
            uint64_t wh = FNV_OFFSET;
            size_t ci = 0;
            for (const char *p = topic; *p; p++) {
                if (*p == '.') {
                    ci++;
                    wh = fnv_step(wh, '.');
                } else if (!w->any[ci]) {
                    wh = fnv_step(wh, (unsigned char)*p);
                }
            }
            for (rt_hnode *nd = rt_hmap_first(&b->by_uri, rt_hash_u64(wh)); nd;
                 nd = rt_hmap_next(nd)) {
                rt_subscription *sub = RT_CONTAINER_OF(nd, rt_subscription, by_uri);
                if (sub->shape == w && wamp_uri_matches(sub->uri, WAMP_MATCH_WILDCARD, topic)) {
                    if (!hit_add(b, &n, sub)) {
                        return SIZE_MAX;
                    }
                    break;
                }
            }
        }
    }
    return n;
}

/* The member record of session s for subscription id, or NULL. It walks whichever is shorter:
 * the subscription's members or the session's subscriptions. A session may hold
 * limits.max_subscriptions of them: walking them all for each of its SUBSCRIBEs and UNSUBSCRIBEs
 * (n^2 steps) let one client stall the router for many seconds. */
rt_sub_member *rt_broker_find_member(rt_session *s, uint64_t id)
{
    const rt_subscription *sub = s->realm ? rt_broker_find(rt_realm_broker(s->realm), id) : NULL;
    if (s->realm && !sub) {
        return NULL;
    }
    if (sub && sub->n_members < s->n_subs) {
        for (size_t i = 0; i < sub->n_members; i++) {
            if (sub->members[i]->s == s) {
                return sub->members[i];
            }
        }
        return NULL;
    }
    RT_LIST_FOREACH_SAFE(it, nx, &s->subs)
    {
        rt_sub_member *mb = RT_CONTAINER_OF(it, rt_sub_member, in_session);
        if (mb->sub->id == id) {
            return mb;
        }
    }
    return NULL;
}

void rt_broker_remove_member(rt_broker *b, rt_sub_member *mb)
{
    rt_subscription *sub = mb->sub;
    rt_observers_subscription_removed(rt_realm_observers(b->realm), b->realm, mb->s, sub,
                                      sub->n_members == 1);
    size_t last = sub->n_members - 1;
    if (mb->idx != last) {
        sub->members[mb->idx] = sub->members[last];
        sub->members[mb->idx]->idx = mb->idx;
    }
    sub->n_members--;
    sub->n_by_ser[mb->s->ser]--;
    rt_list_remove(&mb->in_session);
    mb->s->n_subs--;
    free(mb);
    if (sub->n_members == 0) {
        rt_broker_unindex(b, sub);
        rt_broker_sub_free(sub);
    }
}

const char *rt_broker_topic_of(rt_session *s, uint64_t sub_id)
{
    rt_sub_member *mb = rt_broker_find_member(s, sub_id);
    return mb ? mb->sub->uri : NULL;
}

/* --- Enumeration ----------------------------------------------------------------------------- */

size_t rt_broker_subscription_count(const rt_broker *b)
{
    return b->by_id.count;
}

void rt_broker_foreach(const rt_broker *b, bool (*fn)(const rt_subscription *sub, void *ctx),
                       void *ctx)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->by_id); it.node;
         rt_hmap_iter_next(&b->by_id, &it)) {
        if (!fn(RT_CONTAINER_OF(it.node, rt_subscription, by_id), ctx)) {
            return;
        }
    }
}

const rt_subscription *rt_broker_find(const rt_broker *b, uint64_t id)
{
    for (rt_hnode *n = rt_hmap_first(&b->by_id, rt_hash_u64(id)); n; n = rt_hmap_next(n)) {
        rt_subscription *sub = RT_CONTAINER_OF(n, rt_subscription, by_id);
        if (sub->id == id) {
            return sub;
        }
    }
    return NULL;
}

const rt_subscription *rt_broker_lookup(const rt_broker *b, const char *uri, wamp_match match)
{
    return uri ? rt_broker_find_exactly(b, uri, match) : NULL;
}

size_t rt_broker_match(rt_broker *b, const char *topic, const rt_subscription **out, size_t max)
{
    if (!topic || !wamp_uri_is_valid(topic, WAMP_URI_LOOSE)) {
        return 0;
    }
    size_t n = rt_broker_collect_matches(b, topic);
    if (n == SIZE_MAX) {
        return 0;
    }
    for (size_t i = 0; i < n && i < max; i++) {
        out[i] = b->hits[i];
    }
    return n;
}

uint64_t rt_subscription_id(const rt_subscription *sub)
{
    return sub->id;
}

const char *rt_subscription_uri(const rt_subscription *sub)
{
    return sub->uri;
}

wamp_match rt_subscription_match(const rt_subscription *sub)
{
    return sub->match;
}

uint64_t rt_subscription_created_us(const rt_subscription *sub)
{
    return sub->created_us;
}

size_t rt_subscription_subscriber_count(const rt_subscription *sub)
{
    return sub->n_members;
}

rt_session *rt_subscription_subscriber(const rt_subscription *sub, size_t i)
{
    return i < sub->n_members ? sub->members[i]->s : NULL;
}

/* --- Subscription patterns ------------------------------------------------------------------ */

/* Crossbar's rule for prefix patterns: every component but the last is non-empty ("com.x." and
 * "" are valid prefixes, "com..x" is not). */
static bool prefix_pattern_is_valid(const char *uri)
{
    if (!*uri) {
        return true;
    }
    if (!wamp_uri_is_valid(uri, WAMP_URI_LOOSE_EMPTY) || uri[0] == '.') {
        return false;
    }
    for (const char *p = uri; *p; p++) {
        if (p[0] == '.' && p[1] == '.') {
            return false;
        }
    }
    return true;
}

bool rt_broker_pattern_is_valid(const char *uri, wamp_match match)
{
    switch (match) {
    case WAMP_MATCH_EXACT:
        return wamp_uri_is_valid(uri, WAMP_URI_LOOSE);
    case WAMP_MATCH_PREFIX:
        return prefix_pattern_is_valid(uri);
    case WAMP_MATCH_WILDCARD:
        /* "" is one empty component: any one-component topic (Crossbar's regex allows it). */
        return !*uri || wamp_uri_is_valid(uri, WAMP_URI_LOOSE_EMPTY);
    }
    return false;
}
