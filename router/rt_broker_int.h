/* rt_broker_int.h: PRIVATE to the broker's files: its structs, the subscription table's functions
 * (rt_broker_subs.c), a publication's options (rt_broker_pub.c) and event retention
 * (rt_broker_retained.c), which the message handlers (rt_broker.c) call. From the bottom:
 * rt_broker_subs.c and rt_broker_pub.c call nothing else of the broker, rt_broker_retained.c
 * calls those two, rt_broker.c all three. */
#ifndef RT_BROKER_INT_H
#define RT_BROKER_INT_H
#include <stddef.h>
#include <stdint.h>

#include "rt_broker.h"
#include "rt_core_int.h"
#include "rt_realm.h"

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

/* Whether s, a member of subscription sub, may get an event on topic: always through an exact
 * subscription (authorized when made); through a pattern, only a topic s's role may subscribe to.
 * The SUBSCRIBE of a pattern was authorized on the pattern's text, and an exact permission on
 * "com.a" must not let a prefix subscription to "com.a" receive "com.a.secret". */
static inline bool rt_broker_may_receive(const rt_broker *b, const rt_subscription *sub,
                                         const rt_session *s, const char *topic)
{
    return sub->match == WAMP_MATCH_EXACT ||
           rt_realm_authorize(b->realm, s->authrole, RT_ACTION_SUBSCRIBE, topic);
}

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

/* Subscriber black- and whitelisting (spec "Subscriber Black- and Whitelisting"). Each list is
 * borrowed from the PUBLISH options, NULL when absent or empty (Crossbar treats an empty list as
 * no restriction). A receiver must be in every eligible* list given and in no exclude* list. */
typedef struct pub_filter {
    const json_t *eligible, *eligible_authid, *eligible_authrole;
    const json_t *exclude, *exclude_authid, *exclude_authrole;
    bool any; /* at least one list given */
} pub_filter;

/* One publication being dispatched. */
typedef struct pub_ctx {
    rt_session *publisher; /* NULL for the router's own publications */
    const char *topic;
    uint64_t publication;
    json_t *args, *kwargs; /* borrowed: the router's own payload (jansson) */
    rt_payload payload;    /* borrowed: a client's payload, as its bytes */
    const json_t *ppt;     /* borrowed: PUBLISH.Options holding ppt_* keys, or NULL */
    bool exclude_me;
    bool disclose; /* publisher identification */
    bool retain;   /* event retention */
    /* when rt_broker_retain_event() retained it (wall clock), 0 when it did not */
    uint64_t retained_ns;
    pub_filter filter;
    const rt_broker_pub *from; /* another node's publication (its publisher), or NULL */
} pub_ctx;

/* Parses PUBLISH options into p (publisher, topic, payload set by the caller); NULL if they are
 * acceptable, else a message for the ERROR (invalid_argument). */
const char *rt_broker_parse_publish(const json_t *opts, pub_ctx *p, bool *ack);
/* Whether the lists admit the session (id, authid, authrole); it may be on another node. */
bool rt_broker_lists_admit(const pub_filter *f, uint64_t id, const char *authid,
                           const char *authrole);
/* Adds publisher identification for (id, authid, authrole) to details d; non-zero on allocation
 * failure. */
int rt_broker_set_publisher(json_t *d, uint64_t id, const char *authid, const char *authrole);
/* The publication context of another node's publication rp; false if its options are not
 * valid. */
bool rt_broker_remote_ctx(const rt_broker_pub *rp, pub_ctx *p);

/* PUBLISH with retain: the event replaces the topic's retained one (p->retained_ns: when), within
 * the realm's limits (over them it is not retained, and logged). WAMP_ENOMEM. */
wamp_err rt_broker_retain_event(rt_broker *b, pub_ctx *p, const json_t *options);
/* SUBSCRIBED for sub (SUBSCRIBE m of s), then (get_retained) every retained event it admits,
 * this node's and (asked for) the other nodes'. */
wamp_err rt_broker_subscribed(rt_broker *b, rt_session *s, const wamp_msg *m,
                              const rt_subscription *sub, bool get_retained);
/* Frees every retained event of b (rt_broker_free()). */
void rt_broker_retained_clear(rt_broker *b);

#endif /* RT_BROKER_INT_H */
