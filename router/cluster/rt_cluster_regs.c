/* rt_cluster_regs.c: see rt_cluster_regs.h.
 * Other nodes' registrations are indexed like the dealer's own (struct rreg: a hash of the table
 * key finds an exact one; prefix and wildcard ones sit in two lists), each with the nodes that
 * hold it. This node's registrations (struct own) carry the bucket key and whether this node
 * holds it (refreshed every ttl/2). A claim (struct claim) is one REGISTER's walk through the
 * bucket: CREATE, then on a conflict GET, then PUT when the holder is gone. */
#include "rt_cluster_regs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "rt_cluster_table.h"
#include "rt_hmap.h"
#include "rt_list.h"
#include "rt_log.h"
#include "rt_match_rank.h"

#define INVOKE_MAX  12 /* "roundrobin" and NUL */
#define CLAIM_TRIES 3  /* CREATE/GET rounds when the key keeps vanishing in between */

typedef struct rnode {
    char id[RT_CLUSTER_TOKEN_MAX + 1];
    size_t n;
    uint64_t first_ms, last_ms;
} rnode;

/* A registration some other node holds. */
typedef struct rreg {
    rt_hnode hn;         /* r->remote, by the hash of key */
    rt_list in_patterns; /* r->prefix or r->wildcard */
    char *key;           /* "<m> <realm> <uri>": realm and uri point into it */
    const char *realm, *uri;
    size_t realm_len;
    wamp_match match;
    char invoke[INVOKE_MAX];
    rnode *nodes;
    size_t n_nodes;
    uint64_t rr; /* roundrobin position over the callees of every node */
} rreg;

/* A registration this node holds. */
typedef struct own {
    rt_hnode hn; /* r->own, by the hash of key */
    char *key;   /* table key */
    char *kv;    /* bucket key */
    char invoke[INVOKE_MAX];
    size_t n;
    bool held; /* the bucket key is this node's: written again every ttl/2 */
    /* Its claim got no answer from the bus (a request that timed out, the link up): the tick
     * claims it again (reclaim()). */
    bool unclaimed;
    uint64_t next_write_us;
} own;

typedef enum claim_stage {
    STAGE_CREATE,
    STAGE_GET,
    STAGE_PUT
} claim_stage;

typedef struct claim {
    rt_list link; /* r->claims */
    rt_cluster_regs *r;
    char *realm, *uri, *key, *kv;
    wamp_match match;
    char invoke[INVOKE_MAX];
    uint64_t session, request;
    bool rejoin; /* this node claiming its own key again after a re-join: no callback */
    claim_stage stage;
    int tries;
} claim;

struct rt_cluster_regs {
    rt_cluster *c;
    rt_cluster_regs_options o;
    rt_cluster_claimed_fn claimed;
    void *ctx;
    rt_cluster_table *table;
    char bucket[RT_CLUSTER_TOKEN_MAX + 8];
    char value[RT_CLUSTER_TOKEN_MAX + 96]; /* this node's bucket value, without invoke */
    char instance[17];
    rt_hmap remote, own;
    rt_list prefix, wildcard;
    rt_list claims;
    uint64_t next_scan_us; /* next look for keys due to be written again */
    bool stopped;
};

static uint64_t now_us(const rt_cluster_regs *r)
{
    return r->o.clock(r->o.clock_ctx);
}

static char match_char(wamp_match m)
{
    return m == WAMP_MATCH_PREFIX ? 'p' : m == WAMP_MATCH_WILDCARD ? 'w' : 'e';
}

/* "<m> <realm> <uri>" (owned), NULL on OOM or a realm holding a space. */
static char *table_key(const char *realm, const char *uri, wamp_match match)
{
    if (strchr(realm, ' ')) {
        return NULL;
    }
    size_t n = strlen(realm) + strlen(uri) + 4;
    char *k = malloc(n);
    if (k) {
        snprintf(k, n, "%c %s %s", match_char(match), realm, uri);
    }
    return k;
}

/* Splits the table key "<m> <realm> <uri>" into its match, the length of its realm (at key + 2)
 * and its uri (maybe empty); false if it is not one. */
static bool key_split(const char *key, wamp_match *m, size_t *realm_len, const char **uri)
{
    const char *sp1 = strchr(key, ' ');
    const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp2 || sp1 != key + 1) {
        return false;
    }
    switch (key[0]) {
    case 'e':
        *m = WAMP_MATCH_EXACT;
        break;
    case 'p':
        *m = WAMP_MATCH_PREFIX;
        break;
    case 'w':
        *m = WAMP_MATCH_WILDCARD;
        break;
    default:
        return false;
    }
    *realm_len = (size_t)(sp2 - sp1 - 1);
    *uri = sp2 + 1;
    return true;
}

/* "<m>.<b64 realm>.<b64 uri>" (owned; URL-safe base64 keeps to the bucket's key characters). */
static char *kv_key(const char *realm, const char *uri, wamp_match match)
{
    const int v = sodium_base64_VARIANT_URLSAFE;
    size_t lr = sodium_base64_ENCODED_LEN(strlen(realm), sodium_base64_VARIANT_URLSAFE);
    size_t lu = sodium_base64_ENCODED_LEN(strlen(uri), sodium_base64_VARIANT_URLSAFE);
    char *k = malloc(lr + lu + 4);
    if (!k) {
        return NULL;
    }
    k[0] = match_char(match);
    k[1] = '.';
    sodium_bin2base64(k + 2, lr, (const unsigned char *)realm, strlen(realm), v);
    size_t at = strlen(k);
    k[at++] = '.';
    sodium_bin2base64(k + at, lu, (const unsigned char *)uri, strlen(uri), v);
    return k;
}

/* --- Other nodes' registrations (from the table) ---------------------------------------------- */

static rreg *remote_find(const rt_cluster_regs *r, const char *key)
{
    for (rt_hnode *n = rt_hmap_first(&r->remote, rt_hash_str(key)); n; n = rt_hmap_next(n)) {
        rreg *g = RT_CONTAINER_OF(n, rreg, hn);
        if (strcmp(g->key, key) == 0) {
            return g;
        }
    }
    return NULL;
}

static rreg *remote_new(rt_cluster_regs *r, const char *key)
{
    wamp_match m;
    size_t realm_len;
    const char *uri;
    if (!key_split(key, &m, &realm_len, &uri) || !*uri) {
        return NULL;
    }
    rreg *g = calloc(1, sizeof(*g));
    if (!g || !(g->key = strdup(key))) {
        free(g);
        return NULL;
    }
    if (rt_hmap_insert(&r->remote, &g->hn, rt_hash_str(key)) != WAMP_OK) {
        free(g->key);
        free(g);
        return NULL;
    }
    g->match = m;
    g->realm = g->key + 2;
    g->realm_len = realm_len;
    g->uri = g->key + (uri - key);
    rt_list_init(&g->in_patterns);
    if (m != WAMP_MATCH_EXACT) {
        rt_list_add_tail(m == WAMP_MATCH_PREFIX ? &r->prefix : &r->wildcard, &g->in_patterns);
    }
    return g;
}

static void remote_free(rt_cluster_regs *r, rreg *g)
{
    rt_hmap_remove(&r->remote, &g->hn);
    rt_list_remove(&g->in_patterns);
    free(g->nodes);
    free(g->key);
    free(g);
}

static void on_table_change(void *arg, const char *node_id, const char *key, const char *value)
{
    rt_cluster_regs *r = arg;
    rreg *g = remote_find(r, key);
    char invoke[INVOKE_MAX];
    size_t n = 0;
    uint64_t first = 0, last = 0;
    bool put = value &&
               sscanf(value, "%11s %zu %" SCNu64 " %" SCNu64, invoke, &n, &first, &last) == 4 &&
               n > 0;
    if (!g && (!put || !(g = remote_new(r, key)))) {
        return; /* a removal of nothing, a malformed entry, or OOM: not routable */
    }
    size_t i = 0;
    while (i < g->n_nodes && strcmp(g->nodes[i].id, node_id) != 0) {
        i++;
    }
    if (!put) {
        if (i < g->n_nodes) {
            g->nodes[i] = g->nodes[--g->n_nodes];
        }
        if (g->n_nodes == 0) {
            remote_free(r, g);
        }
        return;
    }
    if (i == g->n_nodes) {
        rnode *nn = realloc(g->nodes, (g->n_nodes + 1) * sizeof(*nn));
        if (!nn || strlen(node_id) > RT_CLUSTER_TOKEN_MAX) {
            g->nodes = nn ? nn : g->nodes;
            if (g->n_nodes == 0) {
                remote_free(r, g);
            }
            return;
        }
        g->nodes = nn;
        g->n_nodes++;
        strcpy(g->nodes[i].id, node_id);
    }
    memcpy(g->invoke, invoke, sizeof(invoke));
    g->nodes[i].n = n;
    g->nodes[i].first_ms = first;
    g->nodes[i].last_ms = last;
}

/* Whether any other node holds the registration of table key. */
static bool remote_holds(const rt_cluster_regs *r, const char *key)
{
    const rreg *g = remote_find(r, key);
    return g && g->n_nodes > 0;
}

/* --- Claims -------------------------------------------------------------------------------- */

static own *own_find(const rt_cluster_regs *r, const char *key)
{
    for (rt_hnode *n = rt_hmap_first(&r->own, rt_hash_str(key)); n; n = rt_hmap_next(n)) {
        own *o = RT_CONTAINER_OF(n, own, hn);
        if (strcmp(o->key, key) == 0) {
            return o;
        }
    }
    return NULL;
}

/* This node's entry for key (created with n 0 if needed); NULL on OOM. */
static own *own_get(rt_cluster_regs *r, const char *key, const char *kv, const char *invoke)
{
    own *o = own_find(r, key);
    if (o) {
        return o;
    }
    o = calloc(1, sizeof(*o));
    if (!o || !(o->key = strdup(key)) || !(o->kv = strdup(kv)) ||
        rt_hmap_insert(&r->own, &o->hn, rt_hash_str(key)) != WAMP_OK) {
        if (o) {
            free(o->key);
            free(o->kv);
        }
        free(o);
        return NULL;
    }
    snprintf(o->invoke, sizeof(o->invoke), "%s", invoke);
    return o;
}

static void own_free(rt_cluster_regs *r, own *o)
{
    rt_hmap_remove(&r->own, &o->hn);
    free(o->key);
    free(o->kv);
    free(o);
}

/* The bucket value {"node", "i", "invoke"} (owned), NULL on OOM. */
static char *kv_value(const rt_cluster_regs *r, const char *invoke)
{
    size_t n = strlen(r->value) + strlen(invoke) + 16;
    char *v = malloc(n);
    if (v) {
        snprintf(v, n, "%s,\"invoke\":\"%s\"}", r->value, invoke);
    }
    return v;
}

static void claim_free(claim *cl)
{
    rt_list_remove(&cl->link);
    free(cl->realm);
    free(cl->uri);
    free(cl->key);
    free(cl->kv);
    free(cl);
}

static void claim_done(claim *cl, wamp_err err)
{
    rt_cluster_regs *r = cl->r;
    if (err == WAMP_OK) {
        own *o = own_get(r, cl->key, cl->kv, cl->invoke);
        if (o) {
            o->held = true;
            o->unclaimed = false;
            o->next_write_us = now_us(r) + (uint64_t)r->o.ttl_ms * 500;
        }
    }
    if (cl->rejoin) {
        if (err == WAMP_EEXIST) {
            RT_LOG_WARN(0,
                        "cluster: registration %s of realm %s is held by another node since "
                        "the link came back: both nodes serve it until one callee goes",
                        cl->uri, cl->realm);
        }
    } else {
        rt_creg_claim out = {cl->realm,   cl->uri,     cl->match, cl->invoke,
                             cl->session, cl->request, err};
        r->claimed(r->ctx, &out);
    }
    claim_free(cl);
}

static wamp_err claim_step(claim *cl);

static void on_claim_kv(void *arg, const rt_cluster_kv_result *res)
{
    claim *cl = arg;
    rt_cluster_regs *r = cl->r;
    if (res->err == WAMP_ECLOSED || res->err == WAMP_EIO) {
        /* No answer (the link went down, or the bus did not answer in time): the registration
         * serves here unclaimed, as with the link down. A re-join claims it again; with the link
         * still up nothing would, so the tick does (the answer may have been lost: the key may
         * be this node's already, which the claim finds). */
        own *o = res->err == WAMP_EIO ? own_get(r, cl->key, cl->kv, cl->invoke) : NULL;
        if (o) {
            o->unclaimed = true;
        }
        claim_done(cl, WAMP_ECLOSED);
        return;
    }
    switch (cl->stage) {
    case STAGE_CREATE:
        if (res->err == WAMP_EEXIST) {
            cl->stage = STAGE_GET;
            break;
        }
        claim_done(cl, res->err);
        return;
    case STAGE_GET: {
        if (res->err == WAMP_ENOTFOUND && ++cl->tries < CLAIM_TRIES) {
            cl->stage = STAGE_CREATE; /* expired or released in between */
            break;
        }
        json_t *v = res->err == WAMP_OK ? json_loadb(res->value, res->len, 0, NULL) : NULL;
        const char *node = json_string_value(json_object_get(v, "node"));
        const char *inst = json_string_value(json_object_get(v, "i"));
        const char *inv = json_string_value(json_object_get(v, "invoke"));
        wamp_err err = WAMP_EEXIST;
        bool mine = node && inst && strcmp(node, rt_cluster_node_id(r->c)) == 0 &&
                    strcmp(inst, r->instance) == 0;
        bool same = inv && strcmp(inv, cl->invoke) == 0;
        if ((mine && same) || (same && strcmp(inv, "single") != 0)) {
            err = WAMP_OK;
        } else if ((mine && !remote_holds(r, cl->key)) ||
                   (node && !rt_cluster_has_node(r->c, node))) {
            /* This node's own stale value, or a node that is gone: its key has not expired. */
            cl->stage = STAGE_PUT;
            json_decref(v);
            break;
        }
        json_decref(v);
        claim_done(cl, err);
        return;
    }
    case STAGE_PUT:
        claim_done(cl, res->err);
        return;
    }
    if (claim_step(cl) != WAMP_OK) {
        claim_done(cl, WAMP_ECLOSED);
    }
}

/* Sends the bucket operation kind on key kv, with this node's value for invoke unless it is a
 * GET; fn (NULL: none) gets its result. The link's error when it refuses it, WAMP_ENOMEM. */
static wamp_err kv_send(rt_cluster_regs *r, rt_cluster_kv_kind kind, const char *kv,
                        const char *invoke, rt_cluster_kv_fn fn, void *arg)
{
    char *value = kind == RT_CLUSTER_KV_GET ? NULL : kv_value(r, invoke);
    rt_cluster_kv_op op = {.kind = kind,
                           .bucket = r->bucket,
                           .ttl_ms = r->o.ttl_ms,
                           .key = kv,
                           .value = value,
                           .len = value ? strlen(value) : 0};
    wamp_err err =
            kind != RT_CLUSTER_KV_GET && !value ? WAMP_ENOMEM : rt_cluster_kv(r->c, &op, fn, arg);
    free(value);
    return err;
}

/* Sends the claim's next key-value operation: the link's error when it refuses it. */
static wamp_err claim_step(claim *cl)
{
    rt_cluster_kv_kind kind = cl->stage == STAGE_CREATE ? RT_CLUSTER_KV_CREATE
                              : cl->stage == STAGE_GET  ? RT_CLUSTER_KV_GET
                                                        : RT_CLUSTER_KV_PUT;
    return kv_send(cl->r, kind, cl->kv, cl->invoke, on_claim_kv, cl);
}

static claim *claim_new(rt_cluster_regs *r, const char *realm, const char *uri, wamp_match match,
                        const char *invoke)
{
    claim *cl = calloc(1, sizeof(*cl));
    if (!cl) {
        return NULL;
    }
    rt_list_init(&cl->link);
    cl->r = r;
    cl->match = match;
    snprintf(cl->invoke, sizeof(cl->invoke), "%s", invoke);
    if (!(cl->realm = strdup(realm)) || !(cl->uri = strdup(uri)) ||
        !(cl->key = table_key(realm, uri, match)) || !(cl->kv = kv_key(realm, uri, match))) {
        claim_free(cl);
        return NULL;
    }
    rt_list_add_tail(&r->claims, &cl->link);
    return cl;
}

wamp_err rt_cluster_regs_claim(rt_cluster_regs *r, const char *realm, const char *uri,
                               wamp_match match, const char *invoke, uint64_t session,
                               uint64_t request)
{
    if (r->stopped || rt_cluster_member_state_get(r->c) != RT_CLUSTER_MEMBER_JOINED) {
        return WAMP_ECLOSED;
    }
    claim *cl = claim_new(r, realm, uri, match, invoke);
    if (!cl) {
        return WAMP_ENOMEM;
    }
    cl->session = session;
    cl->request = request;
    wamp_err err = claim_step(cl);
    if (err != WAMP_OK) {
        claim_free(cl);
        return err == WAMP_ENOMEM ? err : WAMP_ECLOSED;
    }
    return WAMP_OK;
}

/* This node claims the key of its registration o again (no callback: it serves already). */
static void reclaim(rt_cluster_regs *r, own *o)
{
    wamp_match m;
    size_t realm_len;
    const char *uri;
    if (o->n == 0 || !key_split(o->key, &m, &realm_len, &uri)) {
        return;
    }
    char *realm = strndup(o->key + 2, realm_len);
    claim *cl = realm ? claim_new(r, realm, uri, m, o->invoke) : NULL;
    free(realm);
    if (cl) {
        cl->rejoin = true;
        o->held = false;
        o->unclaimed = false;
        if (claim_step(cl) != WAMP_OK) {
            claim_free(cl); /* the link went again: the next join claims it */
        }
    }
}

/* true while a claim of the table key is on its way. */
static bool claiming(const rt_cluster_regs *r, const char *key)
{
    for (const rt_list *it = r->claims.next; it != &r->claims; it = it->next) {
        if (strcmp(RT_CONTAINER_OF(it, claim, link)->key, key) == 0) {
            return true;
        }
    }
    return false;
}

/* After a (re-)join: this node claims the keys of its registrations again. */
static void on_joined(void *arg)
{
    rt_cluster_regs *r = arg;
    for (rt_hmap_iter it = rt_hmap_iter_begin(&r->own); it.node; rt_hmap_iter_next(&r->own, &it)) {
        reclaim(r, RT_CONTAINER_OF(it.node, own, hn));
    }
}

/* --- This node's registrations ------------------------------------------------------------ */

wamp_err rt_cluster_regs_set(rt_cluster_regs *r, const char *realm, const char *uri,
                             wamp_match match, const char *invoke, size_t n_callees,
                             uint64_t first_ms, uint64_t last_ms)
{
    char *key = table_key(realm, uri, match);
    char *kv = kv_key(realm, uri, match);
    wamp_err err = WAMP_ENOMEM;
    if (!key || !kv) {
        goto out;
    }
    own *o = n_callees ? own_get(r, key, kv, invoke) : own_find(r, key);
    if (!o) {
        err = n_callees ? WAMP_ENOMEM : WAMP_OK;
        goto out;
    }
    if (n_callees == 0) {
        bool single = strcmp(o->invoke, "single") == 0;
        if (o->held && (single || !remote_holds(r, key)) && !r->stopped) {
            rt_cluster_kv_op op = {.kind = RT_CLUSTER_KV_DELETE,
                                   .bucket = r->bucket,
                                   .ttl_ms = r->o.ttl_ms,
                                   .key = o->kv};
            (void)rt_cluster_kv(r->c, &op, NULL, NULL); /* link down: it expires */
        }
        own_free(r, o);
        err = r->table ? rt_cluster_table_remove(r->table, key) : WAMP_OK;
        err = err == WAMP_ENOTFOUND ? WAMP_OK : err;
        goto out;
    }
    o->n = n_callees;
    snprintf(o->invoke, sizeof(o->invoke), "%s", invoke);
    char value[INVOKE_MAX + 64];
    snprintf(value, sizeof(value), "%s %zu %" PRIu64 " %" PRIu64, invoke, n_callees, first_ms,
             last_ms);
    err = r->table ? rt_cluster_table_put(r->table, key, value) : WAMP_OK;
    if (err == WAMP_ETOOBIG) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, now_us(r), "cluster registration not announced", 0,
                       "cluster: registration %s of realm %s is not announced to the other "
                       "nodes (over cluster.rpc.max_registrations or too long)",
                       uri, realm);
    }
out:
    free(key);
    free(kv);
    return err;
}

/* --- Routing ---------------------------------------------------------------------------------- */

static bool realm_is(const rreg *g, const char *realm, size_t realm_len)
{
    return realm_len == g->realm_len && memcmp(g->realm, realm, realm_len) == 0;
}

/* The other nodes' registration a CALL of uri reaches (the dealer's precedence), or NULL. */
static rreg *remote_match(const rt_cluster_regs *r, const char *realm, const char *uri)
{
    /* The exact key on the stack for the usual short URI (a CALL pays no allocation). */
    char buf[256];
    size_t realm_len = strlen(realm);
    size_t need = realm_len + strlen(uri) + 4;
    char *key = need <= sizeof(buf) ? buf : malloc(need);
    rreg *best = NULL;
    if (key && !strchr(realm, ' ') && snprintf(key, need, "e %s %s", realm, uri) < (int)need) {
        best = remote_find(r, key);
    }
    if (key != buf) {
        free(key);
    }
    if (best) {
        return best;
    }
    size_t best_len = 0;
    for (const rt_list *it = r->prefix.next; it != &r->prefix; it = it->next) {
        rreg *g = RT_CONTAINER_OF(it, rreg, in_patterns);
        size_t len = strlen(g->uri);
        if (realm_is(g, realm, realm_len) && (!best || len > best_len) &&
            strncmp(g->uri, uri, len) == 0) {
            best = g;
            best_len = len;
        }
    }
    if (best) {
        return best;
    }
    for (const rt_list *it = r->wildcard.next; it != &r->wildcard; it = it->next) {
        rreg *g = RT_CONTAINER_OF(it, rreg, in_patterns);
        if (realm_is(g, realm, realm_len) && wamp_uri_matches(g->uri, WAMP_MATCH_WILDCARD, uri) &&
            (!best || rt_wildcard_cmp(g->uri, best->uri) > 0)) {
            best = g;
        }
    }
    return best;
}

/* > 0 when the local registration is preferred to g, 0 when it is the same one, < 0 when g is. */
static int local_vs(const rt_creg_local *l, const rreg *g)
{
    if (l->match != g->match) {
        /* exact (0) > prefix (1) > wildcard (2) in wamp_match order */
        return (int)g->match - (int)l->match;
    }
    if (strcmp(l->uri, g->uri) == 0) {
        return 0;
    }
    if (l->match == WAMP_MATCH_PREFIX) {
        return strlen(l->uri) >= strlen(g->uri) ? 1 : -1;
    }
    return rt_wildcard_cmp(l->uri, g->uri) >= 0 ? 1 : -1;
}

const char *rt_cluster_regs_route(rt_cluster_regs *r, const char *realm, const char *uri,
                                  const rt_creg_local *local)
{
    if (r->remote.count == 0) {
        return NULL; /* the usual case of a node with all its callees: one compare */
    }
    rreg *g = remote_match(r, realm, uri);
    if (!g) {
        return NULL;
    }
    int cmp = local->uri ? local_vs(local, g) : -1;
    if (cmp > 0) {
        return NULL;
    }
    size_t n_local = cmp == 0 ? local->n_callees : 0;
    const char *invoke = cmp == 0 ? local->invoke : g->invoke;
    size_t total = n_local;
    for (size_t i = 0; i < g->n_nodes; i++) {
        total += g->nodes[i].n;
    }
    if (total == 0) {
        return NULL;
    }
    if (strcmp(invoke, "first") == 0 || strcmp(invoke, "last") == 0) {
        bool first = invoke[0] == 'f';
        const char *pick = NULL;
        uint64_t at = n_local ? (first ? local->first_ms : local->last_ms) : 0;
        bool have = n_local > 0;
        for (size_t i = 0; i < g->n_nodes; i++) {
            /* On this node's clock, as local->first_ms and last_ms are. */
            uint64_t t = rt_cluster_wall_ms_here(
                    r->c, g->nodes[i].id, first ? g->nodes[i].first_ms : g->nodes[i].last_ms);
            if (!have || (first ? t < at : t > at)) {
                have = true;
                at = t;
                pick = g->nodes[i].id;
            }
        }
        return pick;
    }
    uint64_t k = 0; /* single: the one holder */
    if (strcmp(invoke, "roundrobin") == 0) {
        k = g->rr++ % total;
    } else if (strcmp(invoke, "random") == 0) {
        k = randombytes_uniform((uint32_t)(total > UINT32_MAX ? UINT32_MAX : total));
    }
    if (k < n_local) {
        return NULL;
    }
    k -= n_local;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (k < g->nodes[i].n) {
            return g->nodes[i].id;
        }
        k -= g->nodes[i].n;
    }
    return NULL;
}

/* --- Life ----------------------------------------------------------------------------------- */

void rt_cluster_regs_tick(rt_cluster_regs *r)
{
    if (r->stopped) {
        return;
    }
    rt_cluster_table_tick(r->table);
    if (rt_cluster_member_state_get(r->c) != RT_CLUSTER_MEMBER_JOINED) {
        return;
    }
    uint64_t now = now_us(r);
    if (now < r->next_scan_us) {
        return;
    }
    /* Keys are due every ttl/2; looking every ttl/8 writes each before ttl, and a tick costs
     * one compare however many registrations the node holds. */
    r->next_scan_us = now + (uint64_t)r->o.ttl_ms * 125;
    bool joined = rt_cluster_member_state_get(r->c) == RT_CLUSTER_MEMBER_JOINED;
    for (rt_hmap_iter it = rt_hmap_iter_begin(&r->own); it.node; rt_hmap_iter_next(&r->own, &it)) {
        own *o = RT_CONTAINER_OF(it.node, own, hn);
        if (o->unclaimed && !o->held && joined && !r->stopped && !claiming(r, o->key)) {
            reclaim(r, o);
            continue;
        }
        if (!o->held || now < o->next_write_us) {
            continue;
        }
        o->next_write_us = now + (uint64_t)r->o.ttl_ms * 500;
        (void)kv_send(r, RT_CLUSTER_KV_PUT, o->kv, o->invoke, NULL, NULL);
    }
}

wamp_err rt_cluster_regs_new(rt_cluster *c, const rt_cluster_regs_options *o,
                             rt_cluster_claimed_fn claimed, void *ctx, rt_cluster_regs **out)
{
    *out = NULL;
    if (!o->ttl_ms || !o->clock) {
        return WAMP_EINVAL;
    }
    rt_cluster_regs *r = calloc(1, sizeof(*r));
    if (!r) {
        return WAMP_ENOMEM;
    }
    r->c = c;
    r->o = *o;
    r->claimed = claimed;
    r->ctx = ctx;
    rt_hmap_init(&r->remote);
    rt_hmap_init(&r->own);
    rt_list_init(&r->prefix);
    rt_list_init(&r->wildcard);
    rt_list_init(&r->claims);
    snprintf(r->bucket, sizeof(r->bucket), "%s_procs", rt_cluster_name(c));
    snprintf(r->value, sizeof(r->value), "{\"node\":\"%s\",\"i\":\"%016" PRIx64 "\"",
             rt_cluster_node_id(c), o->instance);
    snprintf(r->instance, sizeof(r->instance), "%016" PRIx64, o->instance);
    rt_cluster_table_options to = {.table = "regs",
                                   .ops = o->ops,
                                   .link = o->link,
                                   .instance = o->instance,
                                   .beat_ms = o->beat_ms,
                                   .hold_ms = o->ttl_ms,
                                   .max_message_bytes = o->max_message,
                                   .max_entries = o->max_entries,
                                   .clock = o->clock,
                                   .clock_ctx = o->clock_ctx};
    wamp_err err = rt_cluster_table_new(c, &to, on_table_change, r, &r->table);
    if (err == WAMP_OK && (err = rt_cluster_add_on_joined(c, on_joined, r)) != WAMP_OK) {
        rt_cluster_table_free(r->table);
    }
    if (err != WAMP_OK) {
        free(r);
        return err;
    }
    *out = r;
    return WAMP_OK;
}

void rt_cluster_regs_stop(rt_cluster_regs *r)
{
    if (!r || r->stopped) {
        return;
    }
    r->stopped = true;
    rt_cluster_remove_on_joined(r->c, on_joined, r);
    rt_cluster_table_free(r->table);
    r->table = NULL;
}

void rt_cluster_regs_free(rt_cluster_regs *r)
{
    if (!r) {
        return;
    }
    rt_cluster_regs_stop(r);
    while (!rt_list_is_empty(&r->claims)) {
        claim_free(RT_CONTAINER_OF(r->claims.next, claim, link));
    }
    for (rt_hmap_iter it = rt_hmap_iter_begin(&r->remote); it.node;) {
        rreg *g = RT_CONTAINER_OF(it.node, rreg, hn);
        rt_hmap_iter_next(&r->remote, &it);
        remote_free(r, g);
    }
    for (rt_hmap_iter it = rt_hmap_iter_begin(&r->own); it.node;) {
        own *o = RT_CONTAINER_OF(it.node, own, hn);
        rt_hmap_iter_next(&r->own, &it);
        own_free(r, o);
    }
    rt_hmap_fini(&r->remote);
    rt_hmap_fini(&r->own);
    free(r);
}
