/* rt_broker.c: subscriptions (exact, prefix, wildcard) and EVENT fan-out.
 * A subscription keeps its members in an array for a cache-friendly fan-out loop; each member
 * record is also linked into its session's `subs` list so leaving costs O(own subscriptions).
 * Every subscription is in one hash table keyed by its URI (compared together with the match
 * policy); pattern subscriptions are found through the shape indexes described in rt_broker.h. */
#include "rt_broker.h"

#include <stdlib.h>
#include <string.h>

#include "rt_core_int.h"
#include "rt_log.h"
#include "rt_options.h"
#include "rt_session.h"
#include "wamp_codec.h"
#include "wamp_id.h"

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
};

/* The retained event of one topic (event_retention): the payload as published, the publisher's
 * identity when it was disclosed, and the publication's black/white lists, which also decide who
 * gets it later. */
typedef struct rt_retained {
    rt_hnode by_topic;
    char *topic;
    json_t *args, *kwargs; /* owned references, NULL when absent (a router-built payload) */
    rt_payload payload;    /* owned copy of the publisher's payload bytes (ser 0: none) */
    json_t *ppt;           /* owned: the publication's ppt_* options (payload passthru), or NULL */
    json_t *publisher;     /* owned: {"publisher", "publisher_authid", ...} or NULL */
    json_t *options;       /* owned: the PUBLISH options when they hold listing options, or NULL */
    size_t bytes;          /* counted against limits.max_retained_bytes */
} rt_retained;

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

static uint64_t uri_hash(const char *uri, size_t len)
{
    return rt_hash_u64(fnv_bytes(FNV_OFFSET, uri, len));
}

/* --- Construction ---------------------------------------------------------------------------- */

rt_broker *rt_broker_new(rt_realm *realm)
{
    rt_broker *b = calloc(1, sizeof(*b));
    if (!b) {
        return NULL;
    }
    b->realm = realm;
    rt_hmap_init(&b->by_uri);
    rt_hmap_init(&b->by_id);
    rt_hmap_init(&b->retained);
    return b;
}

static void subscription_free(rt_subscription *sub)
{
    free(sub->members);
    free(sub->uri);
    free(sub);
}

static void unindex(rt_broker *b, rt_subscription *sub);
static void retained_remove(rt_broker *b, rt_retained *r);

void rt_broker_free(rt_broker *b)
{
    if (!b) {
        return;
    }
    /* Sessions leave before realms are freed, so normally nothing is left; be safe anyway. */
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->by_id); it.node;) {
        rt_subscription *sub = RT_CONTAINER_OF(it.node, rt_subscription, by_id);
        rt_hmap_iter_next(&b->by_id, &it);
        for (size_t i = 0; i < sub->n_members; i++) {
            rt_list_remove(&sub->members[i]->in_session);
            sub->members[i]->s->n_subs--;
            free(sub->members[i]);
        }
        unindex(b, sub);
        subscription_free(sub);
    }
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;) {
        rt_retained *r = RT_CONTAINER_OF(it.node, rt_retained, by_topic);
        rt_hmap_iter_next(&b->retained, &it);
        retained_remove(b, r);
    }
    rt_hmap_fini(&b->retained);
    rt_hmap_fini(&b->by_uri);
    rt_hmap_fini(&b->by_id);
    free(b->plens);
    free(b->shapes);
    free(b->hits);
    free(b);
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
static void unindex(rt_broker *b, rt_subscription *sub)
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
static rt_subscription *subscription_new(rt_broker *b, rt_session *s, const char *uri,
                                         wamp_match match)
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
    if (rt_hmap_insert(&b->by_uri, &sub->by_uri, uri_hash(uri, sub->uri_len)) != WAMP_OK) {
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
    subscription_free(sub);
    return NULL;
}

/* --- Lookup ---------------------------------------------------------------------------------- */

static rt_subscription *find_exactly(const rt_broker *b, const char *uri, wamp_match match)
{
    size_t len = strlen(uri);
    for (rt_hnode *n = rt_hmap_first(&b->by_uri, uri_hash(uri, len)); n; n = rt_hmap_next(n)) {
        rt_subscription *sub = RT_CONTAINER_OF(n, rt_subscription, by_uri);
        if (sub->match == match && sub->uri_len == len && memcmp(sub->uri, uri, len) == 0) {
            return sub;
        }
    }
    return NULL;
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
static size_t collect_matches(rt_broker *b, const char *topic)
{
    size_t n = 0;
    size_t tlen = strlen(topic);
    uint64_t h = FNV_OFFSET;
    for (rt_hnode *nd = rt_hmap_first(&b->by_uri, rt_hash_u64(fnv_bytes(h, topic, tlen))); nd;
         nd = rt_hmap_next(nd)) {
        rt_subscription *sub = RT_CONTAINER_OF(nd, rt_subscription, by_uri);
        if (sub->match == WAMP_MATCH_EXACT && sub->uri_len == tlen &&
            memcmp(sub->uri, topic, tlen) == 0) {
            if (!hit_add(b, &n, sub)) {
                return SIZE_MAX;
            }
            break;
        }
    }
    /* Prefix patterns: hash each topic prefix whose length some pattern has, extending one
     * running FNV state. */
    size_t done = 0;
    for (size_t i = 0; i < b->n_plens && b->plens[i].len <= tlen; i++) {
        size_t len = b->plens[i].len;
        h = fnv_bytes(h, topic + done, len - done);
        done = len;
        for (rt_hnode *nd = rt_hmap_first(&b->by_uri, rt_hash_u64(h)); nd; nd = rt_hmap_next(nd)) {
            rt_subscription *sub = RT_CONTAINER_OF(nd, rt_subscription, by_uri);
            if (sub->match == WAMP_MATCH_PREFIX && sub->uri_len == len &&
                memcmp(sub->uri, topic, len) == 0) {
                if (!hit_add(b, &n, sub)) {
                    return SIZE_MAX;
                }
                break;
            }
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

/* The member record of session s for subscription id, or NULL. */
static rt_sub_member *find_member(rt_session *s, uint64_t id)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->subs)
    {
        rt_sub_member *mb = RT_CONTAINER_OF(it, rt_sub_member, in_session);
        if (mb->sub->id == id) {
            return mb;
        }
    }
    return NULL;
}

static void remove_member(rt_broker *b, rt_sub_member *mb)
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
        unindex(b, sub);
        subscription_free(sub);
    }
}

/* --- PUBLISH options ------------------------------------------------------------------------- */

/* Reads a boolean option; absent = dflt. false if present but not a boolean. */
static bool bool_option(const json_t *opts, const char *key, bool dflt, bool *out)
{
    json_t *v = json_object_get(opts, key);
    if (!v) {
        *out = dflt;
        return true;
    }
    if (!json_is_boolean(v)) {
        return false;
    }
    *out = json_is_true(v);
    return true;
}

/* Subscriber black- and whitelisting (spec "Subscriber Black- and Whitelisting"). Each list is
 * borrowed from the PUBLISH options, NULL when absent or empty (Crossbar treats an empty list as
 * no restriction). A receiver must be in every eligible* list given and in no exclude* list. */
typedef struct pub_filter {
    const json_t *eligible, *eligible_authid, *eligible_authrole;
    const json_t *exclude, *exclude_authid, *exclude_authrole;
    bool any; /* at least one list given */
} pub_filter;

/* Checks one list option's value: a list of session ids (ids true) or of strings. *out = the
 * list, or NULL when it is empty. false if malformed. */
static bool list_value(const json_t *v, bool ids, const json_t **out)
{
    if (!json_is_array(v)) {
        return false;
    }
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (ids ? !(json_is_integer(e) && json_integer_value(e) >= 0) : !json_is_string(e)) {
            return false;
        }
    }
    *out = json_array_size(v) > 0 ? v : NULL;
    return true;
}

static bool id_listed(const json_t *list, uint64_t id)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if ((uint64_t)json_integer_value(e) == id) {
            return true;
        }
    }
    return false;
}

static bool str_listed(const json_t *list, const char *s)
{
    size_t i;
    json_t *e;
    if (!s) {
        return false;
    }
    json_array_foreach(list, i, e)
    {
        if (strcmp(json_string_value(e), s) == 0) {
            return true;
        }
    }
    return false;
}

static bool filter_admits(const pub_filter *f, const rt_session *to)
{
    if (!f->any) {
        return true;
    }
    if ((f->eligible && !id_listed(f->eligible, to->id)) ||
        (f->eligible_authid && !str_listed(f->eligible_authid, to->authid)) ||
        (f->eligible_authrole && !str_listed(f->eligible_authrole, to->authrole))) {
        return false;
    }
    return !((f->exclude && id_listed(f->exclude, to->id)) ||
             (f->exclude_authid && str_listed(f->exclude_authid, to->authid)) ||
             (f->exclude_authrole && str_listed(f->exclude_authrole, to->authrole)));
}

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
    pub_filter filter;
} pub_ctx;

/* Parses PUBLISH options into p (publisher, topic, payload set by the caller); NULL if they
 * are acceptable, else a message for the ERROR (invalid_argument). Walks the options present
 * (usually none or one) rather than looking each known one up: this runs for every PUBLISH.
 * Unknown options are ignored. */
static const char *parse_publish(const json_t *opts, pub_ctx *p, bool *ack)
{
    pub_filter *f = &p->filter;
    *ack = false;
    p->exclude_me = true;
    p->disclose = false;
    p->retain = false;
    memset(f, 0, sizeof(*f));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)opts, key, v)
    {
        bool *flag = NULL;
        const json_t **list = NULL;
        bool ids = false;
        if (strcmp(key, "acknowledge") == 0) {
            flag = ack;
        } else if (strcmp(key, "exclude_me") == 0) {
            flag = &p->exclude_me;
        } else if (strcmp(key, "disclose_me") == 0) {
            flag = &p->disclose;
        } else if (strcmp(key, "retain") == 0) {
            flag = &p->retain;
        } else if (strcmp(key, "eligible") == 0) {
            list = &f->eligible;
            ids = true;
        } else if (strcmp(key, "exclude") == 0) {
            list = &f->exclude;
            ids = true;
        } else if (strcmp(key, "eligible_authid") == 0) {
            list = &f->eligible_authid;
        } else if (strcmp(key, "eligible_authrole") == 0) {
            list = &f->eligible_authrole;
        } else if (strcmp(key, "exclude_authid") == 0) {
            list = &f->exclude_authid;
        } else if (strcmp(key, "exclude_authrole") == 0) {
            list = &f->exclude_authrole;
        }
        if (flag && !json_is_boolean(v)) {
            return "options acknowledge, exclude_me, disclose_me and retain must be booleans";
        }
        if (flag) {
            *flag = json_is_true(v);
        } else if (list && !list_value(v, ids, list)) {
            return ids ? "options eligible and exclude must be lists of session ids"
                       : "options eligible_authid, eligible_authrole, exclude_authid and "
                         "exclude_authrole must be lists of strings";
        }
    }
    f->any = f->eligible || f->eligible_authid || f->eligible_authrole || f->exclude ||
             f->exclude_authid || f->exclude_authrole;
    return NULL;
}

/* Whether publication p reaches session to. */
static bool is_receiver(const rt_session *to, const pub_ctx *p)
{
    return to->state == RT_SESSION_JOINED && !(to == p->publisher && p->exclude_me) &&
           filter_admits(&p->filter, to);
}

/* Adds publisher identification (spec "Publisher Identification") for s to details d; non-zero
 * on allocation failure. */
static int set_publisher(json_t *d, const rt_session *s)
{
    int rc = json_object_set_new(d, "publisher", json_integer((json_int_t)s->id));
    if (s->authid) {
        rc |= json_object_set_new(d, "publisher_authid", json_string(s->authid));
    }
    if (s->authrole) {
        rc |= json_object_set_new(d, "publisher_authrole", json_string(s->authrole));
    }
    return rc;
}

/* EVENT.Details for subscription sub: Details.topic for a pattern subscription, the publisher's
 * identity when disclosed. NULL = {} (or allocation failure: *oom set). */
static json_t *event_details(const rt_subscription *sub, const pub_ctx *p, bool *oom)
{
    bool pattern = sub->match != WAMP_MATCH_EXACT;
    bool disclose = p->disclose && p->publisher;
    *oom = false;
    if (!pattern && !disclose && !p->ppt) {
        return NULL;
    }
    json_t *d = json_object();
    if (!d) {
        *oom = true;
        return NULL;
    }
    int rc = 0;
    if (pattern) {
        rc |= json_object_set_new(d, "topic", json_string(p->topic));
    }
    if (disclose) {
        rc |= set_publisher(d, p->publisher);
    }
    /* Payload passthru mode: the ppt_* options go along with the untouched payload. */
    rc |= wamp_msg_ppt_copy(d, p->ppt);
    if (rc != 0) {
        json_decref(d);
        *oom = true;
        return NULL;
    }
    return d;
}

/* Whether sub's members use more than one serializer. */
static bool mixed_serializers(const rt_subscription *sub)
{
    int used = 0;
    for (int i = 0; i < WAMP_SER_COUNT; i++) {
        used += sub->n_by_ser[i] > 0;
    }
    return used > 1;
}

/* EVENTs for publication p to the receivers of the n subscriptions in b->hits: one EVENT per
 * subscription, encoded once per serializer. mark_last: the last EVENT completes the traced
 * action (nothing follows it). */
static wamp_err fan_out(rt_broker *b, const pub_ctx *p, size_t n, bool mark_last)
{
    /* The last receiver, found from the back (usually at once): its EVENT completes the action
     * when nothing is acknowledged. */
    size_t last_hit = 0, last_end = 0;
    bool any = false;
    for (size_t h = n; h-- > 0 && !any;) {
        const rt_subscription *sub = b->hits[h];
        size_t end = sub->n_members;
        while (end > 0 && !is_receiver(sub->members[end - 1]->s, p)) {
            end--;
        }
        if (end > 0) {
            any = true;
            last_hit = h;
            last_end = end;
        }
    }
    for (size_t h = 0; any && h <= last_hit; h++) {
        const rt_subscription *sub = b->hits[h];
        size_t end = h == last_hit ? last_end : sub->n_members;
        bool oom;
        json_t *details = event_details(sub, p, &oom);
        if (oom) {
            return WAMP_ENOMEM;
        }
        rt_encoded ev;
        rt_encoded_init_payload(&ev,
                                wamp_msg_new_event(sub->id, p->publication, details,
                                                   p->args ? json_incref(p->args) : NULL,
                                                   p->kwargs ? json_incref(p->kwargs) : NULL),
                                &p->payload);
        if (!ev.msg) {
            return WAMP_ENOMEM;
        }
        if (trace_hub_is_active(rt_realm_router(b->realm)->hub) && mixed_serializers(sub)) {
            /* Tracing reports the size in every serializer in use, so encode them all up
             * front (each only once, as the fan-out would). With one serializer among the
             * members there is nothing to do: the first send encodes it. */
            for (size_t i = 0; i < end; i++) {
                wamp_ser ser = sub->members[i]->s->ser;
                if (!ev.buf[ser] && is_receiver(sub->members[i]->s, p)) {
                    (void)rt_encoded_encode(&ev, ser);
                }
            }
        }
        for (size_t i = 0; i < end; i++) {
            rt_session *to = sub->members[i]->s;
            if (!is_receiver(to, p)) {
                continue;
            }
            if (mark_last && h == last_hit && i + 1 == end) {
                RT_TRACE_LAST(to->rt);
            }
            wamp_err err = rt_session_send_encoded(to, &ev);
            if (err == WAMP_ENOMEM) {
                rt_encoded_fini(&ev);
                return err;
            }
            /* ETOOBIG / EINVAL: this receiver cannot take the event; the others still do. */
        }
        rt_encoded_fini(&ev);
    }
    return WAMP_OK;
}

/* --- Event retention ------------------------------------------------------------------------ */

static size_t json_size(const json_t *v)
{
    return v ? json_dumpb(v, NULL, 0, JSON_COMPACT) : 0;
}

static rt_retained *retained_find(const rt_broker *b, const char *topic)
{
    size_t len = strlen(topic);
    for (rt_hnode *n = rt_hmap_first(&b->retained, uri_hash(topic, len)); n; n = rt_hmap_next(n)) {
        rt_retained *r = RT_CONTAINER_OF(n, rt_retained, by_topic);
        if (strcmp(r->topic, topic) == 0) {
            return r;
        }
    }
    return NULL;
}

static void retained_remove(rt_broker *b, rt_retained *r)
{
    rt_hmap_remove(&b->retained, &r->by_topic);
    b->retained_bytes -= r->bytes;
    json_decref(r->args);
    json_decref(r->kwargs);
    rt_payload_fini(&r->payload);
    json_decref(r->ppt);
    json_decref(r->publisher);
    json_decref(r->options);
    free(r->topic);
    free(r);
}

static size_t limit_or(size_t v, size_t dflt)
{
    return v ? v : dflt;
}

/* PUBLISH with retain: the event replaces the topic's retained one. Within the realm's limits
 * (topics and bytes): over them the event is not retained (and the topic keeps none), which is
 * logged. WAMP_ENOMEM. */
static wamp_err retain_event(rt_broker *b, const pub_ctx *p, const json_t *options)
{
    rt_router *rt = rt_realm_router(b->realm);
    size_t max_topics = limit_or(rt->cfg->limits.max_retained_topics, RT_DEF_MAX_RETAINED_TOPICS);
    size_t max_bytes = limit_or(rt->cfg->limits.max_retained_bytes, RT_DEF_MAX_RETAINED_BYTES);
    rt_retained *old = retained_find(b, p->topic);
    if (old) {
        retained_remove(b, old);
    }
    size_t bytes = strlen(p->topic) + json_size(p->args) + json_size(p->kwargs) +
                   p->payload.args.len + p->payload.kwargs.len +
                   (p->filter.any ? json_size(options) : 0);
    if (b->retained.count >= max_topics || bytes > max_bytes ||
        b->retained_bytes > max_bytes - bytes) {
        RT_LOG_INFO_LIMITED(
                rt_router_now_us(rt), "event not retained", p->publisher ? p->publisher->id : 0,
                "event on %s not retained: realm %s holds %zu retained topics, %zu bytes "
                "(limits.max_retained_topics %zu, max_retained_bytes %zu; this one %zu bytes)",
                p->topic, rt_realm_name(b->realm), b->retained.count, b->retained_bytes, max_topics,
                max_bytes, bytes);
        rt->stats.events_not_retained++;
        return WAMP_OK;
    }
    rt_retained *r = calloc(1, sizeof(*r));
    if (!r || !(r->topic = strdup(p->topic))) {
        free(r);
        return WAMP_ENOMEM;
    }
    r->bytes = bytes;
    r->args = p->args ? json_incref(p->args) : NULL;
    r->kwargs = p->kwargs ? json_incref(p->kwargs) : NULL;
    r->options = p->filter.any ? json_incref((json_t *)options) : NULL;
    bool oom = rt_payload_dup(&p->payload, &r->payload) != WAMP_OK;
    if (!oom && p->ppt) {
        r->ppt = json_object();
        oom = !r->ppt || wamp_msg_ppt_copy(r->ppt, p->ppt) != 0;
    }
    if (!oom && p->disclose && p->publisher) {
        r->publisher = json_object();
        oom = !r->publisher || set_publisher(r->publisher, p->publisher) != 0;
    }
    if (oom || rt_hmap_insert(&b->retained, &r->by_topic, uri_hash(r->topic, strlen(r->topic))) !=
                       WAMP_OK) {
        json_decref(r->args);
        json_decref(r->kwargs);
        rt_payload_fini(&r->payload);
        json_decref(r->ppt);
        json_decref(r->publisher);
        json_decref(r->options);
        free(r->topic);
        free(r);
        return WAMP_ENOMEM;
    }
    b->retained_bytes += bytes;
    return WAMP_OK;
}

/* Whether subscription sub's new member s gets retained event r: the topic matches, and the
 * publication's black/white lists admit s (exclude_me does not apply: the publisher may
 * subscribe later to read its own retained state). */
static bool retained_admits(const rt_subscription *sub, const rt_retained *r, const rt_session *s)
{
    if (!wamp_uri_matches(sub->uri, sub->match, r->topic)) {
        return false;
    }
    pub_ctx p;
    bool ack;
    return !r->options ||
           (parse_publish(r->options, &p, &ack) == NULL && filter_admits(&p.filter, s));
}

/* EVENT of retained event r for subscription sub (Details.retained, Details.topic for a pattern
 * subscription, the publisher if it was disclosed) to s. */
static wamp_err send_retained(const rt_subscription *sub, const rt_retained *r, rt_session *s)
{
    json_t *d = r->publisher ? json_copy(r->publisher) : json_object();
    if (!d || json_object_set_new(d, "retained", json_true()) != 0 ||
        wamp_msg_ppt_copy(d, r->ppt) != 0 ||
        (sub->match != WAMP_MATCH_EXACT &&
         json_object_set_new(d, "topic", json_string(r->topic)) != 0)) {
        json_decref(d);
        return WAMP_ENOMEM;
    }
    return rt_session_send_payload(s,
                                   wamp_msg_new_event(sub->id, wamp_id_random(), d,
                                                      r->args ? json_incref(r->args) : NULL,
                                                      r->kwargs ? json_incref(r->kwargs) : NULL),
                                   &r->payload);
}

/* SUBSCRIBED for sub, then (get_retained) every retained event it admits; the last message
 * completes the SUBSCRIBE action. */
static wamp_err subscribed(rt_broker *b, rt_session *s, const wamp_msg *m,
                           const rt_subscription *sub, bool get_retained)
{
    size_t n = 0;
    rt_retained *only = NULL;
    if (get_retained && sub->match == WAMP_MATCH_EXACT) {
        only = retained_find(b, sub->uri);
        n = only && retained_admits(sub, only, s) ? 1 : 0;
    } else if (get_retained) {
        /* A pattern: every retained topic it matches (bounded by limits.max_retained_topics). */
        for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node;
             rt_hmap_iter_next(&b->retained, &it)) {
            n += retained_admits(sub, RT_CONTAINER_OF(it.node, rt_retained, by_topic), s) ? 1 : 0;
        }
    }
    if (n == 0) {
        RT_TRACE_LAST(s->rt);
    }
    wamp_err err = rt_session_send(s, wamp_msg_new_subscribed(m->id, sub->id));
    if (err != WAMP_OK || n == 0) {
        return err;
    }
    if (only) {
        RT_TRACE_LAST(s->rt);
        return send_retained(sub, only, s);
    }
    size_t sent = 0;
    for (rt_hmap_iter it = rt_hmap_iter_begin(&b->retained); it.node && err == WAMP_OK;
         rt_hmap_iter_next(&b->retained, &it)) {
        rt_retained *r = RT_CONTAINER_OF(it.node, rt_retained, by_topic);
        if (retained_admits(sub, r, s)) {
            if (++sent == n) {
                RT_TRACE_LAST(s->rt);
            }
            err = send_retained(sub, r, s);
        }
    }
    return err;
}

size_t rt_broker_retained_count(const rt_broker *b)
{
    return b->retained.count;
}

size_t rt_broker_retained_bytes(const rt_broker *b)
{
    return b->retained_bytes;
}

wamp_err rt_broker_on_publish(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    bool ack = false;
    pub_ctx p = {.publisher = s,
                 .topic = m->uri,
                 .args = m->args,
                 .kwargs = m->kwargs,
                 .payload = rt_payload_of(m)};
    char why[96];
    if (!rt_options_check(WAMP_MSG_PUBLISH, m->dict, why, sizeof(why))) {
        /* Answered with or without acknowledge, as every invalid option. */
        return rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_ARGUMENT, why);
    }
    const char *bad = parse_publish(m->dict, &p, &ack);
    bool ppt = false;
    if (!bad && json_object_size(m->dict) > 0) {
        bad = wamp_msg_ppt_check(m->dict, &ppt);
    }
    if (bad) {
        RT_LOG_DEBUG(s->id, "PUBLISH to %s: %s", m->uri, bad);
        return rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_ARGUMENT, bad);
    }
    if (ppt && !s->ppt_publisher) {
        /* Spec "Payload Passthru Mode": a protocol error. */
        rt_session_protocol_violation(s, "PUBLISH uses payload passthru mode (ppt_*), which the "
                                         "publisher did not announce (payload_passthru_mode)");
        return WAMP_OK;
    }
    p.ppt = ppt ? m->dict : NULL;
    if (!wamp_uri_is_valid(m->uri, WAMP_URI_LOOSE)) {
        RT_LOG_DEBUG(s->id, "PUBLISH to invalid topic \"%s\"", m->uri);
        return ack ? rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_URI,
                                           "invalid topic URI")
                   : WAMP_OK;
    }
    if (strncmp(m->uri, "wamp.", 5) == 0) {
        /* The router's own namespace (meta events): clients cannot publish there, whatever the
         * permissions say, as in Crossbar. */
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "PUBLISH refused", s->id,
                            "PUBLISH to restricted topic %s refused", m->uri);
        return ack ? rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_INVALID_URI,
                                           "publish to a restricted topic URI (wamp.*)")
                   : WAMP_OK;
    }
    const rt_permission *perm = rt_realm_permission(b->realm, s->authrole, m->uri);
    if (!perm || !perm->allow_publish) {
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "PUBLISH denied", s->id,
                            "PUBLISH to %s denied for role %s", m->uri, s->authrole);
        return ack ? rt_session_send_error(s, WAMP_MSG_PUBLISH, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                           "not authorized to publish to this topic")
                   : WAMP_OK;
    }
    /* Publisher identification: on the publisher's request (disclose_me), or forced by the
     * role's permission ("disclose": {"publisher": true}, as in Crossbar). */
    p.disclose = p.disclose || perm->disclose_publisher;
    p.publication = wamp_id_random();
    size_t n = collect_matches(b, m->uri);
    if (n == SIZE_MAX) {
        return WAMP_ENOMEM;
    }
    wamp_err err = fan_out(b, &p, n, !ack);
    if (err == WAMP_OK && p.retain) {
        err = retain_event(b, &p, m->dict);
    }
    if (err != WAMP_OK || !ack) {
        return err;
    }
    RT_TRACE_LAST(s->rt);
    return rt_session_send(s, wamp_msg_new_published(m->id, p.publication));
}

/* --- SUBSCRIBE / UNSUBSCRIBE ----------------------------------------------------------------- */

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

static bool pattern_is_valid(const char *uri, wamp_match match)
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

wamp_err rt_broker_on_subscribe(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    char why[96];
    if (!rt_options_check(WAMP_MSG_SUBSCRIBE, m->dict, why, sizeof(why))) {
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     why);
    }
    wamp_match match = WAMP_MATCH_EXACT;
    json_t *jm = json_object_get(m->dict, "match");
    if (jm && !(json_is_string(jm) && wamp_match_parse(json_string_value(jm), &match))) {
        RT_LOG_DEBUG(s->id, "SUBSCRIBE to %s: bad option match", m->uri);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     "option match must be \"exact\", \"prefix\" or \"wildcard\"");
    }
    bool get_retained;
    if (!bool_option(m->dict, "get_retained", false, &get_retained)) {
        RT_LOG_DEBUG(s->id, "SUBSCRIBE to %s: option get_retained is not a boolean", m->uri);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_ARGUMENT,
                                     "option get_retained must be a boolean");
    }
    if (!pattern_is_valid(m->uri, match)) {
        RT_LOG_DEBUG(s->id, "SUBSCRIBE to invalid %s pattern \"%s\"", wamp_match_name(match),
                     m->uri);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_INVALID_URI,
                                     match == WAMP_MATCH_EXACT ? "invalid topic URI"
                                                               : "invalid topic pattern");
    }
    if (!rt_realm_authorize(b->realm, s->authrole, RT_ACTION_SUBSCRIBE, m->uri)) {
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "SUBSCRIBE denied", s->id,
                            "SUBSCRIBE to %s denied for role %s", m->uri, s->authrole);
        return rt_session_send_error(s, WAMP_MSG_SUBSCRIBE, m->id, WAMP_ERROR_NOT_AUTHORIZED,
                                     "not authorized to subscribe to this topic");
    }
    rt_subscription *sub = find_exactly(b, m->uri, match);
    bool created = false;
    if (sub && find_member(s, sub->id)) {
        /* Spec: subscribing again returns the existing subscription. */
        return subscribed(b, s, m, sub, get_retained);
    }
    size_t max_subs = s->rt->cfg->limits.max_subscriptions;
    if (max_subs && s->n_subs >= max_subs) {
        return rt_session_refuse_limit(s, WAMP_MSG_SUBSCRIBE, m->id, "max_subscriptions", max_subs);
    }
    if (!sub) {
        if (!(sub = subscription_new(b, s, m->uri, match))) {
            return WAMP_ENOMEM;
        }
        created = true;
    }
    rt_sub_member *mb = calloc(1, sizeof(*mb));
    if (mb && sub->n_members == sub->cap_members) {
        size_t ncap = sub->cap_members ? sub->cap_members * 2 : 4;
        rt_sub_member **nm = realloc(sub->members, ncap * sizeof(*nm));
        if (nm) {
            sub->members = nm;
            sub->cap_members = ncap;
        } else {
            free(mb);
            mb = NULL;
        }
    }
    if (!mb) {
        if (created) {
            unindex(b, sub);
            subscription_free(sub);
        }
        return WAMP_ENOMEM;
    }
    mb->sub = sub;
    mb->s = s;
    mb->idx = sub->n_members;
    sub->members[sub->n_members++] = mb;
    sub->n_by_ser[s->ser]++;
    rt_list_add_tail(&s->subs, &mb->in_session);
    s->n_subs++;
    rt_observers_subscription_added(rt_realm_observers(b->realm), b->realm, s, sub, created);
    return subscribed(b, s, m, sub, get_retained);
}

wamp_err rt_broker_on_unsubscribe(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    rt_sub_member *mb = find_member(s, m->id2);
    if (!mb) {
        return rt_session_send_error(s, WAMP_MSG_UNSUBSCRIBE, m->id,
                                     WAMP_ERROR_NO_SUCH_SUBSCRIPTION,
                                     "no such subscription for this session");
    }
    remove_member(b, mb);
    RT_TRACE_LAST(s->rt);
    return rt_session_send(s, wamp_msg_new_unsubscribed(m->id));
}

void rt_broker_on_leave(rt_broker *b, rt_session *s)
{
    RT_LIST_FOREACH_SAFE(it, nx, &s->subs)
    {
        remove_member(b, RT_CONTAINER_OF(it, rt_sub_member, in_session));
    }
}

wamp_err rt_broker_publish_local(rt_broker *b, const char *topic, json_t *args_take,
                                 json_t *kwargs_take)
{
    pub_ctx p = {.topic = topic, .args = args_take, .kwargs = kwargs_take};
    wamp_err err = WAMP_OK;
    size_t n = collect_matches(b, topic);
    if (n == SIZE_MAX) {
        err = WAMP_ENOMEM;
    } else if (n > 0) {
        p.publication = wamp_id_random();
        err = fan_out(b, &p, n, false);
    }
    json_decref(args_take);
    json_decref(kwargs_take);
    return err;
}

wamp_err rt_broker_publish_meta(rt_broker *b, const char *topic, json_t *args_take, bool mark_last)
{
    pub_ctx p = {.topic = topic, .args = args_take};
    wamp_err err = WAMP_OK;
    size_t n = collect_matches(b, topic);
    if (n == SIZE_MAX) {
        err = WAMP_ENOMEM;
    } else if (n > 0) {
        p.publication = wamp_id_random();
        err = fan_out(b, &p, n, mark_last);
    }
    json_decref(args_take);
    return err;
}

/* Receivers of publication p over every subscription matching its topic, counted up to at
 * most `enough`. */
static size_t count_receivers(rt_broker *b, const pub_ctx *p, size_t enough)
{
    if (!p->topic || !wamp_uri_is_valid(p->topic, WAMP_URI_LOOSE)) {
        return 0;
    }
    size_t n = collect_matches(b, p->topic), count = 0;
    for (size_t h = 0; n != SIZE_MAX && h < n; h++) {
        const rt_subscription *sub = b->hits[h];
        for (size_t i = 0; i < sub->n_members; i++) {
            count += is_receiver(sub->members[i]->s, p) ? 1 : 0;
            if (count == enough) {
                return count;
            }
        }
    }
    return count;
}

size_t rt_broker_receiver_count(rt_broker *b, rt_session *s, const char *topic, bool exclude_me)
{
    pub_ctx p = {.publisher = s, .topic = topic, .exclude_me = exclude_me};
    return count_receivers(b, &p, SIZE_MAX);
}

bool rt_broker_publish_has_receiver(rt_broker *b, rt_session *s, const wamp_msg *m)
{
    bool ack;
    pub_ctx p = {.publisher = s, .topic = m->uri};
    return !parse_publish(m->dict, &p, &ack) && count_receivers(b, &p, 1) > 0;
}

const char *rt_broker_topic_of(rt_session *s, uint64_t sub_id)
{
    rt_sub_member *mb = find_member(s, sub_id);
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
    return uri ? find_exactly(b, uri, match) : NULL;
}

size_t rt_broker_match(rt_broker *b, const char *topic, const rt_subscription **out, size_t max)
{
    if (!topic || !wamp_uri_is_valid(topic, WAMP_URI_LOOSE)) {
        return 0;
    }
    size_t n = collect_matches(b, topic);
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
