/* rt_cluster_dealer.c: see rt_cluster_dealer.h.
 * Calls are grouped by the other node (struct peer), so that a node leaving or the link going
 * down ends its calls with one walk of its lists, and the tick looks at each peer once. B finds
 * its calls by xid (answers) and by caller (CANCEL, the caller leaving: the chain of one caller's
 * hash holds its calls); A by invocation (the dealer's answers) and by (peer, xid) (CANCEL). */
#include "rt_cluster_dealer.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "rt_hmap.h"
#include "rt_list.h"
#include "rt_log.h"

#define ENV_VERSION 1

enum {
    KIND_CALL = 1,
    KIND_CANCEL,
    KIND_YIELD,
    KIND_ERROR
};

#define FLAG_PROGRESS 1u /* CALL: receive_progress; YIELD: progress */
#define FLAG_DISCLOSE 2u
#define FLAG_PPT      4u /* CALL, YIELD, ERROR: ppt_* options or details follow */
#define MODE_MASK     3u
/* version, kind, flags, ser, xid, correlation */
#define HEAD_LEN (4 + 8 + RT_CRPC_CORR_LEN)
#define STR_MAX  UINT16_MAX

typedef struct peer {
    char node[RT_CLUSTER_TOKEN_MAX + 1];
    rt_list out;               /* out_call.in_peer: calls waiting on this node */
    rt_list in;                /* in_call.in_peer: calls this node made here */
    rt_list link;              /* in cd->peers */
    uint64_t missing_since_us; /* 0: in the live list at the last tick */
    bool pinned;               /* being walked: not freed when its lists empty */
} peer;

typedef struct out_call {
    uint64_t xid, caller, request, deadline_us;
    char *realm;
    char *procedure; /* kept while traced (has_corr), for the answer's records; else NULL */
    peer *p;
    bool receive_progress;
    bool has_corr;
    uint8_t corr[RT_CRPC_CORR_LEN];
    rt_hnode by_xid;
    rt_hnode by_caller;
    rt_list in_peer;
    rt_list in_timeouts; /* in cd->timeouts while deadline_us != 0 */
} out_call;

typedef struct in_call {
    uint64_t invocation, xid;
    char *realm;
    peer *p;
    uint8_t corr[RT_CRPC_CORR_LEN];
    rt_hnode by_inv;
    rt_hnode by_xid; /* hash of (peer, xid) */
    rt_list in_peer;
} in_call;

struct rt_cluster_dealer {
    rt_cluster *c;
    rt_cluster_dealer_options o;
    const rt_cluster_dealer_ops *ops;
    void *ctx;
    uint64_t sub;
    uint64_t next_xid;
    uint64_t now_us;
    rt_hmap out_by_xid, out_by_caller, in_by_inv, in_by_xid;
    rt_list peers;
    rt_list timeouts; /* out_call.in_timeouts, earliest first */
    rt_cluster_dealer_stats st;
};

/* --- Envelope -------------------------------------------------------------------------------- */

typedef struct env {
    unsigned kind, flags;
    wamp_ser ser;
    uint64_t xid;
    uint8_t corr[RT_CRPC_CORR_LEN];
    const char *from;
    /* CALL */
    const char *realm, *procedure, *authid, *authrole;
    uint64_t caller;
    /* ERROR */
    const char *error;
    /* CALL, YIELD, ERROR (FLAG_PPT): the ppt_* keys, as JSON text to send, as read (owned) */
    char *ppt_text;
    json_t *ppt;
    wamp_slice args, kwargs;
} env;

typedef struct wr {
    unsigned char *p;
} wr;

static void put_u8(wr *w, unsigned v)
{
    *w->p++ = (unsigned char)v;
}

static void put_le(wr *w, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        *w->p++ = (unsigned char)(v >> (8 * i));
    }
}

static void put_bytes(wr *w, const void *b, size_t n)
{
    if (n) {
        memcpy(w->p, b, n);
        w->p += n;
    }
}

static void put_str(wr *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_le(w, n, 2);
    put_bytes(w, s, n);
}

static size_t str_size(const char *s)
{
    return 2 + (s ? strlen(s) : 0);
}

static bool str_ok(const char *s)
{
    return !s || strlen(s) <= STR_MAX;
}

/* Encodes e into a new buffer (*out, *len). WAMP_ETOOBIG over max, WAMP_ENOMEM. */
static wamp_err env_encode(const env *e, size_t max, unsigned char **out, size_t *len)
{
    size_t n = HEAD_LEN + str_size(e->from);
    bool payload = e->kind != KIND_CANCEL;
    if (e->kind == KIND_CALL) {
        if (!str_ok(e->realm) || !str_ok(e->procedure) || !str_ok(e->authid) ||
            !str_ok(e->authrole)) {
            return WAMP_ETOOBIG;
        }
        n += str_size(e->realm) + str_size(e->procedure) + 8 + str_size(e->authid) +
             str_size(e->authrole);
    } else if (e->kind == KIND_ERROR) {
        if (!str_ok(e->error)) {
            return WAMP_ETOOBIG;
        }
        n += str_size(e->error);
    }
    if (e->ppt_text) {
        if (!str_ok(e->ppt_text)) {
            return WAMP_ETOOBIG;
        }
        n += str_size(e->ppt_text);
    }
    if (payload) {
        if (e->args.len > UINT32_MAX || e->kwargs.len > UINT32_MAX) {
            return WAMP_ETOOBIG;
        }
        n += 8 + e->args.len + e->kwargs.len;
    }
    if (n > max) {
        return WAMP_ETOOBIG;
    }
    unsigned char *b = malloc(n);
    if (!b) {
        return WAMP_ENOMEM;
    }
    wr w = {b};
    put_u8(&w, ENV_VERSION);
    put_u8(&w, e->kind);
    put_u8(&w, e->flags | (e->ppt_text ? FLAG_PPT : 0));
    put_u8(&w, payload ? (unsigned)e->ser : 0);
    put_le(&w, e->xid, 8);
    put_bytes(&w, e->corr, RT_CRPC_CORR_LEN);
    put_str(&w, e->from);
    if (e->kind == KIND_CALL) {
        put_str(&w, e->realm);
        put_str(&w, e->procedure);
        put_le(&w, e->caller, 8);
        put_str(&w, e->authid);
        put_str(&w, e->authrole);
    } else if (e->kind == KIND_ERROR) {
        put_str(&w, e->error);
    }
    if (e->ppt_text) {
        put_str(&w, e->ppt_text);
    }
    if (payload) {
        put_le(&w, e->args.len, 4);
        put_bytes(&w, e->args.p, e->args.len);
        put_le(&w, e->kwargs.len, 4);
        put_bytes(&w, e->kwargs.p, e->kwargs.len);
    }
    *out = b;
    *len = n;
    return WAMP_OK;
}

typedef struct rd {
    const unsigned char *p;
    size_t left;
    char *strs; /* NUL-terminated copies of the strings, one after another */
    bool bad;
} rd;

static uint64_t get_le(rd *r, size_t n)
{
    uint64_t v = 0;
    if (r->bad || r->left < n) {
        r->bad = true;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        v |= (uint64_t)r->p[i] << (8 * i);
    }
    r->p += n;
    r->left -= n;
    return v;
}

static const unsigned char *get_bytes(rd *r, size_t n)
{
    const unsigned char *p = r->p;
    if (r->bad || r->left < n) {
        r->bad = true;
        return NULL;
    }
    r->p += n;
    r->left -= n;
    return p;
}

/* A string: copied NUL-terminated to r->strs (room: the envelope's length + one byte per
 * string); a string holding NUL is malformed. */
static const char *get_str(rd *r)
{
    size_t n = (size_t)get_le(r, 2);
    const unsigned char *p = get_bytes(r, n);
    if (!p || memchr(p, '\0', n)) {
        r->bad = true;
        return "";
    }
    char *s = r->strs;
    memcpy(s, p, n);
    s[n] = '\0';
    r->strs += n + 1;
    return s;
}

static wamp_slice get_slice(rd *r)
{
    size_t n = (size_t)get_le(r, 4);
    const unsigned char *p = get_bytes(r, n);
    return (wamp_slice){n ? p : NULL, p ? n : 0};
}

/* The ppt_* keys of the JSON text s (FLAG_PPT) as a new object; NULL if they are not an object
 * with acceptable ppt_* keys (ppt_scheme among them). */
static json_t *ppt_read(const char *s)
{
    json_t *v = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
    bool present = false;
    if (!json_is_object(v) || wamp_msg_ppt_check(v, &present) || !present) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* The ppt_* keys of src as JSON text to send (free() it); NULL: none (*oom: out of memory). */
static char *ppt_text(const json_t *src, bool *oom)
{
    *oom = false;
    if (!src) {
        return NULL;
    }
    json_t *o = json_object();
    if (!o || wamp_msg_ppt_copy(o, src) != 0) {
        json_decref(o);
        *oom = true;
        return NULL;
    }
    char *text = json_object_size(o) > 0 ? json_dumps(o, JSON_COMPACT) : NULL;
    *oom = json_object_size(o) > 0 && !text;
    json_decref(o);
    return text;
}

/* Decodes data into *e; strings go to strs (len + 8 bytes), e->ppt is owned (json_decref() it
 * even on failure). false: malformed. */
static bool env_decode(const void *data, size_t len, char *strs, env *e)
{
    rd r = {data, len, strs, false};
    memset(e, 0, sizeof(*e));
    unsigned version = (unsigned)get_le(&r, 1);
    e->kind = (unsigned)get_le(&r, 1);
    e->flags = (unsigned)get_le(&r, 1);
    unsigned ser = (unsigned)get_le(&r, 1);
    e->xid = get_le(&r, 8);
    const unsigned char *corr = get_bytes(&r, RT_CRPC_CORR_LEN);
    if (corr) {
        memcpy(e->corr, corr, RT_CRPC_CORR_LEN);
    }
    e->from = get_str(&r);
    if (r.bad || version != ENV_VERSION || e->kind < KIND_CALL || e->kind > KIND_ERROR ||
        ser >= WAMP_SER_COUNT || !rt_cluster_token_is_valid(e->from)) {
        return false;
    }
    e->ser = (wamp_ser)ser;
    if (e->kind == KIND_CALL) {
        e->realm = get_str(&r);
        e->procedure = get_str(&r);
        e->caller = get_le(&r, 8);
        e->authid = get_str(&r);
        e->authrole = get_str(&r);
    } else if (e->kind == KIND_ERROR) {
        e->error = get_str(&r);
    }
    if (e->kind != KIND_CANCEL && (e->flags & FLAG_PPT)) {
        const char *text = get_str(&r);
        if (r.bad || !(e->ppt = ppt_read(text))) {
            return false;
        }
    }
    if (e->kind != KIND_CANCEL) {
        e->args = get_slice(&r);
        e->kwargs = get_slice(&r);
        if ((e->args.len || e->kwargs.len) && !e->ser) {
            return false;
        }
    }
    return !r.bad && r.left == 0 && (e->kind != KIND_CANCEL || (e->flags & MODE_MASK) <= 2);
}

/* --- Peers ------------------------------------------------------------------------------------ */

static peer *peer_find(rt_cluster_dealer *cd, const char *node, bool create)
{
    RT_LIST_FOREACH_SAFE(it, nx, &cd->peers)
    {
        peer *p = RT_CONTAINER_OF(it, peer, link);
        if (strcmp(p->node, node) == 0) {
            return p;
        }
    }
    if (!create || strlen(node) > RT_CLUSTER_TOKEN_MAX) {
        return NULL;
    }
    peer *p = calloc(1, sizeof(*p));
    if (!p) {
        return NULL;
    }
    strcpy(p->node, node);
    rt_list_init(&p->out);
    rt_list_init(&p->in);
    rt_list_add_tail(&cd->peers, &p->link);
    return p;
}

static void peer_release(peer *p)
{
    if (!p->pinned && rt_list_is_empty(&p->out) && rt_list_is_empty(&p->in)) {
        rt_list_remove(&p->link);
        free(p);
    }
}

/* Publishes the envelope e to node's rpc subject; counts and logs a too big one. */
static wamp_err send_env(rt_cluster_dealer *cd, const char *node, env *e)
{
    char subject[2 * RT_CLUSTER_TOKEN_MAX + 16];
    unsigned char *b = NULL;
    size_t len = 0;
    e->from = rt_cluster_node_id(cd->c);
    wamp_err err = env_encode(e, cd->o.max_message, &b, &len);
    if (err == WAMP_ETOOBIG) {
        cd->st.too_big++;
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, cd->now_us, "cluster rpc too big", 0,
                       "cluster rpc: an envelope for node %s is over max_message (%zu bytes): "
                       "not sent",
                       node, cd->o.max_message);
    }
    if (err != WAMP_OK) {
        return err;
    }
    snprintf(subject, sizeof(subject), "%s.node.%s.rpc", rt_cluster_name(cd->c), node);
    err = rt_cluster_reply(cd->c, subject, b, len);
    free(b);
    return err;
}

/* --- B: calls waiting on another node -------------------------------------------------------- */

static void out_free(rt_cluster_dealer *cd, out_call *oc)
{
    rt_hmap_remove(&cd->out_by_xid, &oc->by_xid);
    rt_hmap_remove(&cd->out_by_caller, &oc->by_caller);
    rt_list_remove(&oc->in_peer);
    rt_list_remove(&oc->in_timeouts);
    peer_release(oc->p);
    free(oc->realm);
    free(oc->procedure);
    free(oc);
}

static void send_cancel(rt_cluster_dealer *cd, const out_call *oc, rt_crpc_mode mode)
{
    env e = {.kind = KIND_CANCEL, .flags = (unsigned)mode, .xid = oc->xid};
    memcpy(e.corr, oc->corr, RT_CRPC_CORR_LEN);
    (void)send_env(cd, oc->p->node, &e); /* a lost CANCEL: A's callee answers into the void */
}

/* Answers oc's caller with ERROR uri and forgets oc. */
static void out_fail(rt_cluster_dealer *cd, out_call *oc, const char *uri)
{
    rt_crpc_caller to = {oc->realm,   oc->caller,   oc->request, oc->has_corr ? oc->corr : NULL,
                         oc->p->node, oc->procedure};
    rt_crpc_answer a = {.error = uri};
    cd->ops->answer(cd->ctx, &to, &a);
    out_free(cd, oc);
}

static void timeout_insert(rt_cluster_dealer *cd, out_call *oc)
{
    rt_list *it = cd->timeouts.prev;
    while (it != &cd->timeouts &&
           RT_CONTAINER_OF(it, out_call, in_timeouts)->deadline_us > oc->deadline_us) {
        it = it->prev;
    }
    rt_list_add_tail(it->next, &oc->in_timeouts);
}

static bool refuse(rt_cluster_dealer *cd, size_t held, size_t max, const char *what)
{
    if (held < max) {
        return false;
    }
    cd->st.refused++;
    RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, cd->now_us, "cluster rpc refused", 0,
                   "cluster rpc: %s reached (%zu): call refused", what, max);
    return true;
}

wamp_err rt_cluster_dealer_call(rt_cluster_dealer *cd, const char *node, uint64_t request,
                                const rt_crpc_call *call, uint64_t deadline_us)
{
    rt_cluster_link_stats ls;
    rt_cluster_link_stats_get(cd->c, &ls);
    if (ls.state != RT_CLUSTER_LINK_UP) {
        return WAMP_ECLOSED;
    }
    if (!rt_cluster_has_node(cd->c, node) || strcmp(node, rt_cluster_node_id(cd->c)) == 0) {
        return WAMP_ENOTFOUND;
    }
    if (refuse(cd, cd->out_by_xid.count, cd->o.max_calls_out, "cluster.rpc.max_calls_out")) {
        return WAMP_EAGAIN;
    }
    bool oom = false;
    char *ppt = ppt_text(call->ppt, &oom);
    out_call *oc = oom ? NULL : calloc(1, sizeof(*oc));
    peer *p = oc ? peer_find(cd, node, true) : NULL;
    if (!oc || !p || !(oc->realm = strdup(call->realm))) {
        free(ppt);
        free(oc);
        if (p) {
            peer_release(p);
        }
        return WAMP_ENOMEM;
    }
    oc->xid = ++cd->next_xid;
    oc->caller = call->caller;
    oc->request = request;
    oc->deadline_us = deadline_us;
    oc->receive_progress = call->receive_progress;
    oc->has_corr = call->corr != NULL;
    if (call->corr) {
        memcpy(oc->corr, call->corr, RT_CRPC_CORR_LEN);
        oc->procedure = strdup(call->procedure); /* NULL (out of memory): records lack it */
    }
    oc->p = p;
    env e = {.kind = KIND_CALL,
             .flags = (call->receive_progress ? FLAG_PROGRESS : 0) |
                      (call->disclose ? FLAG_DISCLOSE : 0),
             .ser = call->payload.ser,
             .xid = oc->xid,
             .realm = call->realm,
             .procedure = call->procedure,
             .caller = call->caller,
             .authid = call->disclose ? call->authid : NULL,
             .authrole = call->disclose ? call->authrole : NULL,
             .ppt_text = ppt,
             .args = call->payload.args,
             .kwargs = call->payload.kwargs};
    memcpy(e.corr, oc->corr, RT_CRPC_CORR_LEN);
    wamp_err err = WAMP_ENOMEM;
    if (rt_hmap_insert(&cd->out_by_xid, &oc->by_xid, rt_hash_u64(oc->xid)) != WAMP_OK) {
        goto fail;
    }
    if (rt_hmap_insert(&cd->out_by_caller, &oc->by_caller, rt_hash_u64(oc->caller)) != WAMP_OK) {
        rt_hmap_remove(&cd->out_by_xid, &oc->by_xid);
        goto fail;
    }
    rt_list_add_tail(&p->out, &oc->in_peer);
    rt_list_init(&oc->in_timeouts);
    err = send_env(cd, node, &e);
    free(ppt);
    if (err != WAMP_OK) {
        out_free(cd, oc);
        return err;
    }
    if (deadline_us) {
        timeout_insert(cd, oc);
    }
    cd->st.calls_out++;
    return WAMP_OK;
fail:
    free(ppt);
    free(oc->realm);
    free(oc->procedure);
    free(oc);
    peer_release(p);
    return err;
}

static out_call *out_find_caller(rt_cluster_dealer *cd, uint64_t caller, uint64_t request)
{
    for (rt_hnode *n = rt_hmap_first(&cd->out_by_caller, rt_hash_u64(caller)); n;
         n = rt_hmap_next(n)) {
        out_call *oc = RT_CONTAINER_OF(n, out_call, by_caller);
        if (oc->caller == caller && oc->request == request) {
            return oc;
        }
    }
    return NULL;
}

bool rt_cluster_dealer_cancel(rt_cluster_dealer *cd, uint64_t caller, uint64_t request,
                              rt_crpc_mode mode)
{
    out_call *oc = out_find_caller(cd, caller, request);
    if (!oc) {
        return false;
    }
    send_cancel(cd, oc, mode);
    if (mode != RT_CRPC_KILL) {
        out_free(cd, oc);
    }
    return true;
}

void rt_cluster_dealer_caller_left(rt_cluster_dealer *cd, uint64_t caller)
{
    rt_hnode *n = rt_hmap_first(&cd->out_by_caller, rt_hash_u64(caller));
    while (n) {
        out_call *oc = RT_CONTAINER_OF(n, out_call, by_caller);
        n = rt_hmap_next(n);
        if (oc->caller == caller) {
            send_cancel(cd, oc, RT_CRPC_KILLNOWAIT);
            out_free(cd, oc);
        }
    }
}

/* A YIELD or ERROR envelope from the callee's node. */
static void on_answer(rt_cluster_dealer *cd, const env *e)
{
    out_call *oc = NULL;
    for (rt_hnode *n = rt_hmap_first(&cd->out_by_xid, rt_hash_u64(e->xid)); n;
         n = rt_hmap_next(n)) {
        out_call *c = RT_CONTAINER_OF(n, out_call, by_xid);
        if (c->xid == e->xid && strcmp(c->p->node, e->from) == 0) {
            oc = c;
        }
    }
    if (!oc) {
        cd->st.unmatched++; /* canceled, timed out or the caller gone meanwhile */
        return;
    }
    cd->st.answers_in++;
    bool progress = e->kind == KIND_YIELD && (e->flags & FLAG_PROGRESS);
    if (progress && !oc->receive_progress) {
        return;
    }
    rt_crpc_caller to = {oc->realm,   oc->caller,   oc->request, oc->has_corr ? oc->corr : NULL,
                         oc->p->node, oc->procedure};
    rt_crpc_answer a = {.error = e->kind == KIND_ERROR ? e->error : NULL,
                        .progress = progress,
                        .ppt = e->ppt,
                        .payload = {e->ser, e->args, e->kwargs}};
    if (!progress) {
        rt_list_remove(&oc->in_timeouts); /* nothing in the callback may end it twice */
    }
    cd->ops->answer(cd->ctx, &to, &a);
    if (!progress) {
        out_free(cd, oc);
    }
}

/* --- A: calls served for another node --------------------------------------------------------- */

static uint64_t in_xid_hash(const peer *p, uint64_t xid)
{
    return rt_hash_u64(xid ^ (uint64_t)(uintptr_t)p);
}

static void in_free(rt_cluster_dealer *cd, in_call *ic)
{
    rt_hmap_remove(&cd->in_by_inv, &ic->by_inv);
    rt_hmap_remove(&cd->in_by_xid, &ic->by_xid);
    rt_list_remove(&ic->in_peer);
    peer_release(ic->p);
    free(ic->realm);
    free(ic);
}

/* Forgets ic, then has the dealer cancel its invocation (mode): the dealer may answer from
 * inside, and finds nothing to answer. */
static void in_cancel(rt_cluster_dealer *cd, in_call *ic, rt_crpc_mode mode)
{
    char *realm = ic->realm;
    uint64_t invocation = ic->invocation;
    ic->realm = NULL;
    in_free(cd, ic);
    cd->ops->cancel(cd->ctx, realm, invocation, mode);
    free(realm);
}

static in_call *in_find_inv(rt_cluster_dealer *cd, uint64_t invocation)
{
    for (rt_hnode *n = rt_hmap_first(&cd->in_by_inv, rt_hash_u64(invocation)); n;
         n = rt_hmap_next(n)) {
        in_call *ic = RT_CONTAINER_OF(n, in_call, by_inv);
        if (ic->invocation == invocation) {
            return ic;
        }
    }
    return NULL;
}

static in_call *in_find_xid(rt_cluster_dealer *cd, const peer *p, uint64_t xid)
{
    for (rt_hnode *n = rt_hmap_first(&cd->in_by_xid, in_xid_hash(p, xid)); n; n = rt_hmap_next(n)) {
        in_call *ic = RT_CONTAINER_OF(n, in_call, by_xid);
        if (ic->p == p && ic->xid == xid) {
            return ic;
        }
    }
    return NULL;
}

/* An ERROR envelope for call xid of node `to` that A never took. */
static void reply_error(rt_cluster_dealer *cd, const char *to, const env *call, const char *uri)
{
    env e = {.kind = KIND_ERROR, .xid = call->xid, .error = uri};
    memcpy(e.corr, call->corr, RT_CRPC_CORR_LEN);
    if (send_env(cd, to, &e) == WAMP_OK) {
        cd->st.answers_out++;
    }
}

static void on_call(rt_cluster_dealer *cd, const env *e)
{
    if (refuse(cd, cd->in_by_inv.count, cd->o.max_calls_in, "cluster.rpc.max_calls_in")) {
        reply_error(cd, e->from, e, WAMP_ERROR_UNAVAILABLE);
        return;
    }
    in_call *ic = calloc(1, sizeof(*ic));
    peer *p = peer_find(cd, e->from, true);
    if (!ic || !p || !(ic->realm = strdup(e->realm)) ||
        rt_hmap_insert(&cd->in_by_xid, &ic->by_xid, in_xid_hash(p, e->xid)) != WAMP_OK) {
        if (ic) {
            free(ic->realm);
        }
        free(ic);
        if (p) {
            peer_release(p);
        }
        reply_error(cd, e->from, e, WAMP_ERROR_CANCELED);
        return;
    }
    ic->xid = e->xid;
    ic->p = p;
    memcpy(ic->corr, e->corr, RT_CRPC_CORR_LEN);
    rt_list_add_tail(&p->in, &ic->in_peer);
    bool disclose = e->flags & FLAG_DISCLOSE;
    static const uint8_t zero[RT_CRPC_CORR_LEN];
    rt_crpc_call call = {.realm = e->realm,
                         .procedure = e->procedure,
                         .caller = e->caller,
                         .disclose = disclose,
                         .authid = disclose ? e->authid : NULL,
                         .authrole = disclose ? e->authrole : NULL,
                         .receive_progress = e->flags & FLAG_PROGRESS,
                         .corr = memcmp(e->corr, zero, RT_CRPC_CORR_LEN) ? e->corr : NULL,
                         .ppt = e->ppt,
                         .payload = {e->ser, e->args, e->kwargs}};
    const char *uri = cd->ops->invoke(cd->ctx, e->from, &call, &ic->invocation);
    if (!uri &&
        rt_hmap_insert(&cd->in_by_inv, &ic->by_inv, rt_hash_u64(ic->invocation)) != WAMP_OK) {
        /* Cannot be tracked: the dealer forgets it, and B's caller learns it now. */
        cd->ops->cancel(cd->ctx, ic->realm, ic->invocation, RT_CRPC_KILLNOWAIT);
        uri = WAMP_ERROR_CANCELED;
    }
    if (uri) {
        rt_hmap_remove(&cd->in_by_xid, &ic->by_xid);
        rt_list_remove(&ic->in_peer);
        peer_release(p);
        free(ic->realm);
        free(ic);
        reply_error(cd, e->from, e, uri);
        return;
    }
    cd->st.calls_in++;
}

bool rt_cluster_dealer_answer(rt_cluster_dealer *cd, uint64_t invocation, const rt_crpc_answer *a)
{
    in_call *ic = in_find_inv(cd, invocation);
    if (!ic) {
        return false;
    }
    bool last = a->error || !a->progress;
    static const rt_crpc_answer failed = {.error = WAMP_ERROR_CANCELED};
    bool oom = false, interrupt = false;
    char *ppt = ppt_text(a->ppt, &oom);
    if (oom) {
        /* The answer cannot be made: the call ends for the caller (and the callee). */
        interrupt = !last;
        a = &failed;
        last = true;
    }
    env e = {.kind = a->error ? KIND_ERROR : KIND_YIELD,
             .flags = !a->error && a->progress ? FLAG_PROGRESS : 0,
             .ser = a->payload.ser,
             .xid = ic->xid,
             .error = a->error,
             .ppt_text = ppt,
             .args = a->payload.args,
             .kwargs = a->payload.kwargs};
    memcpy(e.corr, ic->corr, RT_CRPC_CORR_LEN);
    wamp_err err = send_env(cd, ic->p->node, &e);
    free(ppt);
    if (err == WAMP_ETOOBIG) {
        /* As on one node: the caller learns why instead of waiting. A too big progressive
         * result ends the call too (the callee is interrupted). */
        env big = {.kind = KIND_ERROR, .xid = ic->xid, .error = WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED};
        memcpy(big.corr, ic->corr, RT_CRPC_CORR_LEN);
        err = send_env(cd, ic->p->node, &big);
        interrupt = interrupt || !last;
        last = true;
    }
    if (err == WAMP_OK) {
        cd->st.answers_out++;
    }
    if (!last) {
        return true;
    }
    if (interrupt) {
        in_cancel(cd, ic, RT_CRPC_KILLNOWAIT);
    } else {
        in_free(cd, ic);
    }
    return true;
}

static void on_cancel(rt_cluster_dealer *cd, const env *e)
{
    peer *p = peer_find(cd, e->from, false);
    in_call *ic = p ? in_find_xid(cd, p, e->xid) : NULL;
    if (!ic) {
        cd->st.unmatched++; /* answered meanwhile */
        return;
    }
    rt_crpc_mode mode = (rt_crpc_mode)(e->flags & MODE_MASK);
    if (mode != RT_CRPC_KILL) {
        in_cancel(cd, ic, mode); /* B forgot the call: so does A, before the dealer acts */
        return;
    }
    cd->ops->cancel(cd->ctx, ic->realm, ic->invocation, mode);
}

/* --- Both ---------------------------------------------------------------------------------------
 */

static void on_msg(void *arg, const char *subject, const char *reply, const void *data, size_t len)
{
    (void)subject;
    (void)reply;
    rt_cluster_dealer *cd = arg;
    /* The envelope's strings, copied NUL-terminated: on the stack for the usual small one. */
    char stack[512];
    char *strs = len > cd->o.max_message    ? NULL
                 : len + 8 <= sizeof(stack) ? stack
                                            : malloc(len + 8);
    env e;
    if (!strs || !env_decode(data, len, strs, &e)) {
        cd->st.malformed++;
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, cd->now_us, "cluster rpc malformed", 0,
                       "cluster rpc: dropped a malformed or oversized envelope (%zu bytes)", len);
        if (strs) {
            json_decref(e.ppt);
        }
        if (strs != stack) {
            free(strs);
        }
        return;
    }
    switch (e.kind) {
    case KIND_CALL:
        on_call(cd, &e);
        break;
    case KIND_CANCEL:
        on_cancel(cd, &e);
        break;
    default:
        on_answer(cd, &e);
        break;
    }
    json_decref(e.ppt);
    if (strs != stack) {
        free(strs);
    }
}

/* Ends every call with p, each counted in *count: B's callers get ERROR uri; with in_too, the
 * calls p made here are canceled killnowait (nobody can be answered). The callbacks may not free
 * p (pinned). */
static void peer_fail(rt_cluster_dealer *cd, peer *p, const char *uri, bool in_too, uint64_t *count)
{
    p->pinned = true;
    while (!rt_list_is_empty(&p->out)) {
        (*count)++;
        out_fail(cd, RT_CONTAINER_OF(p->out.next, out_call, in_peer), uri);
    }
    while (in_too && !rt_list_is_empty(&p->in)) {
        (*count)++;
        in_cancel(cd, RT_CONTAINER_OF(p->in.next, in_call, in_peer), RT_CRPC_KILLNOWAIT);
    }
    p->pinned = false;
    peer_release(p);
}

void rt_cluster_dealer_tick(rt_cluster_dealer *cd, uint64_t now_us)
{
    cd->now_us = now_us;
    while (!rt_list_is_empty(&cd->timeouts)) {
        out_call *oc = RT_CONTAINER_OF(cd->timeouts.next, out_call, in_timeouts);
        if (oc->deadline_us > now_us) {
            break;
        }
        cd->st.timeouts++;
        send_cancel(cd, oc, RT_CRPC_KILLNOWAIT);
        out_fail(cd, oc, WAMP_ERROR_TIMEOUT);
    }
    rt_cluster_link_stats ls;
    rt_cluster_link_stats_get(cd->c, &ls);
    bool up = ls.state == RT_CLUSTER_LINK_UP;
    RT_LIST_FOREACH_SAFE(it, nx, &cd->peers)
    {
        peer *p = RT_CONTAINER_OF(it, peer, link);
        bool live = up && rt_cluster_has_node(cd->c, p->node);
        if (live) {
            p->missing_since_us = 0;
            continue;
        }
        if (!p->missing_since_us) {
            p->missing_since_us = now_us;
        }
        bool in_too = !up || now_us - p->missing_since_us >= (uint64_t)cd->o.peer_grace_ms * 1000;
        peer_fail(cd, p, up ? WAMP_ERROR_CANCELED : WAMP_ERROR_NETWORK_FAILURE, in_too,
                  up ? &cd->st.node_gone : &cd->st.link_down);
    }
}

/* Another node joined (rt_cluster_add_on_node_joined()): again after its link was down, or as
 * a new process in place of one that was killed. Either way it has forgotten the calls between
 * it and this node (rt_cluster_dealer_tick() ends them on a node whose link is down): this
 * node's callers waiting on it get ERROR wamp.error.network_failure, and, when the join was
 * announced, the calls it made here are canceled, their callees interrupted. A join learnt late
 * (its announcement lost) leaves those: the calls it made since its join are among them, and
 * an old one only holds its callee until it answers (the answer then finds no call there); the
 * node gets CANCEL killnowait for each call failed here, which may be one it took since. */
static void on_node_joined(void *arg, const char *node_id, bool announced)
{
    rt_cluster_dealer *cd = arg;
    peer *p = peer_find(cd, node_id, false);
    if (!p) {
        return;
    }
    if (!announced) {
        /* A call sent since its join is one it may hold. */
        RT_LIST_FOREACH_SAFE(it, nx, &p->out)
        {
            send_cancel(cd, RT_CONTAINER_OF(it, out_call, in_peer), RT_CRPC_KILLNOWAIT);
        }
    }
    peer_fail(cd, p, WAMP_ERROR_NETWORK_FAILURE, announced, &cd->st.node_gone);
}

/* --- Life ---------------------------------------------------------------------------------------
 */

wamp_err rt_cluster_dealer_new(rt_cluster *c, const rt_cluster_dealer_options *o,
                               const rt_cluster_dealer_ops *ops, void *ctx, rt_cluster_dealer **out)
{
    *out = NULL;
    if (!o->max_message || !o->max_calls_out || !o->max_calls_in) {
        return WAMP_EINVAL;
    }
    rt_cluster_dealer *cd = calloc(1, sizeof(*cd));
    if (!cd) {
        return WAMP_ENOMEM;
    }
    cd->c = c;
    cd->o = *o;
    cd->ops = ops;
    cd->ctx = ctx;
    rt_hmap_init(&cd->out_by_xid);
    rt_hmap_init(&cd->out_by_caller);
    rt_hmap_init(&cd->in_by_inv);
    rt_hmap_init(&cd->in_by_xid);
    rt_list_init(&cd->peers);
    rt_list_init(&cd->timeouts);
    /* (next_xid is the last one given: the first call takes it + 1) */
    if (o->first_xid) {
        cd->next_xid = o->first_xid - 1;
    } else {
        randombytes_buf(&cd->next_xid, sizeof(cd->next_xid));
    }
    wamp_err err = rt_cluster_serve(c, "rpc", on_msg, cd, &cd->sub);
    if (err == WAMP_OK) {
        err = rt_cluster_add_on_node_joined(c, on_node_joined, cd);
        if (err != WAMP_OK) {
            rt_cluster_unserve(c, cd->sub);
        }
    }
    if (err != WAMP_OK) {
        free(cd);
        return err;
    }
    *out = cd;
    return WAMP_OK;
}

void rt_cluster_dealer_free(rt_cluster_dealer *cd)
{
    if (!cd) {
        return;
    }
    rt_cluster_unserve(cd->c, cd->sub);
    rt_cluster_remove_on_node_joined(cd->c, on_node_joined, cd);
    RT_LIST_FOREACH_SAFE(it, nx, &cd->peers)
    {
        peer *p = RT_CONTAINER_OF(it, peer, link);
        RT_LIST_FOREACH_SAFE(o, on, &p->out)
        {
            out_call *oc = RT_CONTAINER_OF(o, out_call, in_peer);
            free(oc->realm);
            free(oc->procedure);
            free(oc);
        }
        RT_LIST_FOREACH_SAFE(i, in, &p->in)
        {
            in_call *ic = RT_CONTAINER_OF(i, in_call, in_peer);
            free(ic->realm);
            free(ic);
        }
        free(p);
    }
    rt_hmap_fini(&cd->out_by_xid);
    rt_hmap_fini(&cd->out_by_caller);
    rt_hmap_fini(&cd->in_by_inv);
    rt_hmap_fini(&cd->in_by_xid);
    free(cd);
}

void rt_cluster_dealer_stats_get(const rt_cluster_dealer *cd, rt_cluster_dealer_stats *out)
{
    *out = cd->st;
    out->pending_out = cd->out_by_xid.count;
    out->pending_in = cd->in_by_inv.count;
}
