/* rt_broker_int.h: PRIVATE to rt_broker.c and rt_broker_subs.c: the broker's structs and the
 * subscription table's functions that the message handlers (rt_broker.c) call. rt_broker_subs.c
 * calls nothing of rt_broker.c. */
#ifndef RT_BROKER_INT_H
#define RT_BROKER_INT_H
#include <stddef.h>
#include <stdint.h>

#include "rt_broker.h"
#include "rt_core_int.h"

typedef struct rt_sub_member {
    rt_list in_session; /* in rt_session.subs */
    rt_subscription *sub;
    rt_session *s;
    size_t idx; /* position in sub->members */
} rt_sub_member;

/* The shape of wildcard patterns: how many components, and which of them are empty (match any
 * component). One shape is shared by every wildcard subscription that has it. */
typedef struct rt_wshape {
    size_t ncomp;
    bool *any;    /* ncomp entries: component i is empty in the pattern */
    size_t users; /* wildcard subscriptions with this shape */
} rt_wshape;

/* A distinct length of prefix patterns, with how many prefix subscriptions have it. */
typedef struct rt_plen {
    size_t len;
    size_t users;
} rt_plen;

struct rt_subscription {
    uint64_t id;
    char *uri;
    size_t uri_len;
    wamp_match match;
    rt_wshape *shape; /* wildcard only: borrowed from the broker's shape list */
    uint64_t created_us;
    rt_hnode by_uri;
    rt_hnode by_id;
    rt_sub_member **members;
    size_t n_members;
    size_t cap_members;
    size_t n_by_ser[WAMP_SER_COUNT]; /* members per serializer (a session's never changes) */
};

struct rt_broker {
    rt_realm *realm;
    rt_hmap by_uri; /* every subscription, hashed by uri (see uri_hash) */
    rt_hmap by_id;
    rt_plen *plens; /* distinct prefix lengths in use, ascending */
    size_t n_plens;
    rt_wshape **shapes; /* wildcard shapes in use */
    size_t n_shapes;
    /* Scratch list of the subscriptions matching the topic being published (reused, so a
     * PUBLISH allocates nothing here once it has grown). */
    rt_subscription **hits;
    size_t cap_hits;
    rt_hmap retained; /* rt_retained.by_topic, hashed by topic */
    size_t retained_bytes;
    const rt_broker_remote *remote; /* other nodes (rt_broker_set_remote()), or NULL */
    void *remote_ctx;
};

/* FNV-1a hash of uri's first len bytes, as the subscription table and the retained events hash
 * their keys. */
uint64_t rt_broker_uri_hash(const char *uri, size_t len);
/* Frees sub (not indexed, no members). */
void rt_broker_sub_free(rt_subscription *sub);
/* Removes sub from the tables and pattern indexes (not from its members). */
void rt_broker_unindex(rt_broker *b, rt_subscription *sub);
/* New subscription for (uri, match), indexed; NULL on allocation failure (nothing changed). */
rt_subscription *rt_broker_sub_new(rt_broker *b, rt_session *s, const char *uri, wamp_match match);
/* The subscription of exactly (uri, match), or NULL. */
rt_subscription *rt_broker_find_exactly(const rt_broker *b, const char *uri, wamp_match match);
/* Fills b->hits with every subscription matching topic (a valid URI); returns how many, or
 * SIZE_MAX on allocation failure. Order: the exact subscription, prefix ones by length, then
 * wildcard ones. */
size_t rt_broker_collect_matches(rt_broker *b, const char *topic);
/* The member record of session s for subscription id, or NULL. */
rt_sub_member *rt_broker_find_member(rt_session *s, uint64_t id);
/* Removes member mb (reported to the realm's observers); the subscription goes with its last
 * member. */
void rt_broker_remove_member(rt_broker *b, rt_sub_member *mb);

/* Whether uri is a valid subscription pattern for match (SUBSCRIBE answers invalid_uri
 * otherwise). */
bool rt_broker_pattern_is_valid(const char *uri, wamp_match match);

#endif /* RT_BROKER_INT_H */
