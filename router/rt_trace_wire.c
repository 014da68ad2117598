/* rt_trace_wire.c: the wire capture on the router's side (see rt_trace_wire.h). */
#include "rt_trace_wire.h"

#include <stdlib.h>
#include <string.h>

#include "rt_core_int.h"
#include "rt_realm.h"
#include "rt_trace.h"
#include "trace_strip.h"
#include "trace_wire_corr.h"
#include "wamp_codec.h"
#include "wamp_rd.h"

rt_wire_conn *rt_wire_conn_start(rt_router *rt, rt_session *s, uint8_t framing, wamp_ser ser,
                                 size_t skip)
{
    rt_wire_conn *wc = rt->wire ? malloc(sizeof(*wc)) : NULL;
    if (!wc) {
        return NULL;
    }
    uint64_t conn = ++rt->wire_conns;
    trace_wire_stream_init(&wc->rx, conn, TRACE_RX, framing, (uint8_t)ser);
    trace_wire_stream_init(&wc->tx, conn, TRACE_TX, framing, (uint8_t)ser);
    wc->tx_skip = skip;
    if (s) {
        s->wire = wc; /* (borrowed: the adapter frees it after the session) */
    }
    return wc;
}

void rt_wire_conn_free(rt_wire_conn *wc)
{
    free(wc);
}

/* The trace clock's reading now, and the wall clock's at it. */
static trace_wire_time wire_now(rt_router *rt)
{
    uint64_t pc = rt_trace_pc_now(rt);
    return (trace_wire_time){.ts_ns = pc, .wall_ns = rt_trace_wall_of(rt, pc)};
}

/* The facts the router notes (trace_wire_fact()): a kind octet, then (integers of 8 octets in
 * this host's order: the process that writes them reads them)
 *   'J' a join: the session id, then its realm, authid and authrole, each NUL-terminated (a fact
 *       of its own, of the session's connection);
 *   'C' a routed call: the caller's connection, its CALL id, the callee's connection, the
 *       INVOCATION id;
 *   'P' a publication: the publisher's connection, its PUBLISH id, the publication id;
 *   'R' a call (or publication) that goes to other nodes: the client's connection, its CALL (or
 *       PUBLISH) id, the index of the chunk the request came in, and the action's UUID sent
 *       along (16 octets);
 *   'I' on the callee's node, that call's INVOCATION: the callee's connection, the INVOCATION
 *       id, the UUID, then the procedure (the rest of the fact; a fact of its own);
 *   'E' on a subscriber's node, that publication: its id, the UUID, then the topic (a fact of
 *       its own).
 * Routing facts ('C', 'P', 'R') are gathered and appended together (facts_flush()): a fact of
 * connection 0, the facts one after the other. */
#define FACT_JOIN    'J'
#define FACT_CALL    'C'
#define FACT_PUB     'P'
#define FACT_REMOTE  'R'
#define FACT_INVOKED 'I'
#define FACT_EVENTS  'E'
#define JOIN_FACT_ID 9 /* the kind and the session id */

/* The routing facts gathered (rt_router.wire_facts), appended as one fact (of connection 0):
 * before any chunk, so that they come after the read that brought their requests and before
 * the write that carries what they caused. */
static inline void facts_flush(rt_router *rt)
{
    if (rt->n_wire_facts) {
        trace_wire_fact(rt->wire, 0, wire_now(rt), rt->wire_facts, rt->n_wire_facts);
        rt->n_wire_facts = 0;
    }
}

/* A routing fact of kind and the n integers v (n <= 5), gathered. */
static void fact_ids(rt_router *rt, char kind, const uint64_t *v, size_t n)
{
    if (RT_WIRE_FACTS - rt->n_wire_facts < 1 + 5 * 8) {
        facts_flush(rt);
    }
    unsigned char *b = rt->wire_facts + rt->n_wire_facts;
    b[0] = (unsigned char)kind;
    memcpy(b + 1, v, n * 8);
    rt->n_wire_facts += 1 + n * 8;
}

/* A session's connection in the capture (0: none). */
static uint64_t conn_of(const rt_session *s)
{
    return s && s->wire ? s->wire->rx.conn : 0;
}

static void obs_call_routed(void *ctx, rt_session *caller, uint64_t call_id, rt_session *callee,
                            uint64_t inv_id)
{
    rt_router *rt = ctx;
    uint64_t a = conn_of(caller), b = conn_of(callee);
    if (a || b) {
        const uint64_t v[4] = {a, call_id, b, inv_id};
        fact_ids(rt, FACT_CALL, v, 4);
    }
}

/* A call to another node: the id its action goes with (the trace's, or one made here), noted
 * with the CALL's connection and chunk, so that the readers of both nodes give it that UUID. */
static const uint8_t *obs_remote_call(void *ctx, rt_session *caller, uint64_t call_id,
                                      const uint8_t *corr, uint8_t buf[RT_ACTION_ID_LEN])
{
    rt_router *rt = ctx;
    uint64_t a = conn_of(caller);
    if (!a) {
        return corr;
    }
    if (!corr) {
        trace_uuid_gen_next(&rt->uuids, buf);
        corr = buf;
    }
    uint64_t v[5] = {a, call_id, caller->wire->rx.last_chunk};
    memcpy(&v[3], corr, RT_ACTION_ID_LEN);
    fact_ids(rt, FACT_REMOTE, v, 5);
    return corr;
}

/* A fact of its own of connection conn: kind, the nids ids, the action's UUID, then text (NULL:
 * none) to the end ('I', 'E'). */
static void fact_remote(rt_router *rt, uint64_t conn, char kind, const uint64_t *ids, size_t nids,
                        const uint8_t uuid[RT_ACTION_ID_LEN], const char *text)
{
    const unsigned char k = (unsigned char)kind;
    const trace_wire_part parts[] = {
            {&k, 1}, {ids, nids * 8}, {uuid, RT_ACTION_ID_LEN}, {text, text ? strlen(text) : 0}};
    facts_flush(rt); /* (in order) */
    trace_wire_fact_parts(rt->wire, conn, wire_now(rt), parts, sizeof(parts) / sizeof(parts[0]));
}

static void obs_remote_invoked(void *ctx, rt_session *callee, uint64_t inv_id,
                               const uint8_t corr[RT_ACTION_ID_LEN], const char *procedure)
{
    uint64_t ids[2] = {conn_of(callee), inv_id};
    if (ids[0]) { /* (a callee not captured: nothing to name) */
        fact_remote(ctx, ids[0], FACT_INVOKED, ids, 2, corr, procedure);
    }
}

static void obs_remote_published(void *ctx, uint64_t publication_id,
                                 const uint8_t corr[RT_ACTION_ID_LEN], const char *topic)
{
    fact_remote(ctx, 0, FACT_EVENTS, &publication_id, 1, corr, topic);
}

static void obs_published(void *ctx, rt_session *publisher, uint64_t request_id,
                          uint64_t publication_id)
{
    rt_router *rt = ctx;
    uint64_t a = conn_of(publisher);
    if (a) {
        const uint64_t v[3] = {a, request_id, publication_id};
        fact_ids(rt, FACT_PUB, v, 3);
    }
}

/* A session joined realm r (the realms' session_joined report, before WELCOME): its join is
 * noted as a fact, and on the management realm its connection is captured no further (what a
 * management client reads would otherwise be captured again as it goes out): its HELLO, named
 * after that session, is the last of it. */
static void obs_session_joined(void *ctx, rt_realm *r, rt_session *s)
{
    (void)ctx;
    uint64_t conn = conn_of(s);
    if (!conn) {
        return;
    }
    const char *realm = rt_realm_name(r);
    if (trace_hub_is_mgmt_realm(s->rt->hub, realm)) {
        s->wire->rx.conn = s->wire->tx.conn = 0; /* (rt_router_wire_capture() skips them) */
    }
    const char *authid = s->authid ? s->authid : "", *authrole = s->authrole ? s->authrole : "";
    const unsigned char kind = FACT_JOIN;
    const trace_wire_part parts[] = {{&kind, 1},
                                     {&s->id, JOIN_FACT_ID - 1},
                                     {realm, strlen(realm) + 1},
                                     {authid, strlen(authid) + 1},
                                     {authrole, strlen(authrole) + 1}};
    facts_flush(s->rt); /* (in order) */
    trace_wire_fact_parts(s->rt->wire, conn, wire_now(s->rt), parts,
                          sizeof(parts) / sizeof(parts[0]));
}

wamp_err rt_trace_wire_attach(rt_router *rt)
{
    if (!rt->wire) {
        return WAMP_OK;
    }
    rt_observer o = {.ctx = rt,
                     .call_routed = obs_call_routed,
                     .published = obs_published,
                     .remote_call = obs_remote_call,
                     .remote_invoked = obs_remote_invoked,
                     .remote_published = obs_remote_published};
    wamp_err err = rt_observers_add(&rt->observers, &o);
    const rt_observer joins = {.ctx = rt, .session_joined = obs_session_joined};
    for (size_t i = 0; err == WAMP_OK && i < rt->n_realms; i++) {
        err = rt_observers_add(rt_realm_observers(rt->realms[i]), &joins);
    }
    return err;
}

void rt_router_wire_capture(rt_router *rt, trace_wire_stream *st, const void *p, size_t n)
{
    if (rt->wire && n && st->conn) {
        facts_flush(rt);
        (void)trace_wire_capture(rt->wire, st, wire_now(rt), p, n);
    }
}

void rt_wire_conn_tx_skip(rt_router *rt, rt_wire_conn *wc, const void *p, size_t n)
{
    size_t skip = wc->tx_skip < n ? wc->tx_skip : n;
    wc->tx_skip -= skip;
    rt_router_wire_capture(rt, &wc->tx, (const unsigned char *)p + skip, n - skip);
}

void rt_wire_conn_tx_whole(rt_router *rt, rt_wire_conn *wc, const void *p, size_t n, uint32_t nmsg)
{
    if (wc && rt->wire && n && wc->tx.conn) {
        facts_flush(rt);
        (void)trace_wire_capture_whole(rt->wire, &wc->tx, wire_now(rt), p, n, nmsg);
    }
}

void rt_wire_conn_msg(rt_router *rt, rt_wire_conn *wc, uint8_t dir, const void *p, size_t n)
{
    trace_wire_stream *st = !wc ? NULL : dir == TRACE_RX ? &wc->rx : &wc->tx;
    if (st && rt->wire && st->conn) {
        facts_flush(rt);
        (void)trace_wire_message(rt->wire, st->conn, dir, st->ser, wire_now(rt),
                                 TRACE_WIRE_NOTE_MESSAGE, p, n);
        st->last_chunk = trace_wire_appended(rt->wire) - 1;
    }
}

/* The reasons the router drops a message (rt_session.c), by their code (index + 1) in a
 * TRACE_WIRE_NOTE_DROPPED note. */
static const char *const drop_reasons[] = {"encode_failed", "session_closed", "too_big",
                                           "queue_full", "slow_consumer"};
#define N_DROP_REASONS (sizeof(drop_reasons) / sizeof(drop_reasons[0]))

void rt_wire_dropped(rt_session *s, int type, const wamp_buf *wire, const char *drop)
{
    rt_router *rt = s->rt;
    const rt_wire_conn *wc = s->wire;
    if (!rt->wire || !wc || !wc->tx.conn) {
        return;
    }
    uint32_t code = 0;
    for (size_t i = 0; i < N_DROP_REASONS && !code; i++) {
        code = strcmp(drop, drop_reasons[i]) == 0 ? (uint32_t)i + 1 : 0;
    }
    uint32_t note = TRACE_WIRE_NOTE_DROPPED | code << 8 | ((uint32_t)type & 0xffu) << 16;
    facts_flush(rt);
    (void)trace_wire_message(rt->wire, wc->tx.conn, TRACE_TX, wc->tx.ser, wire_now(rt), note,
                             wire ? wamp_buf_cdata(wire) : NULL, wire ? wamp_buf_len(wire) : 0);
}

void rt_router_wire_connection(rt_router *rt, const json_t *info)
{
    char *text = rt->wire ? json_dumps(info, JSON_COMPACT) : NULL;
    if (text) {
        facts_flush(rt);
        (void)trace_wire_message(rt->wire, 0, 0, WAMP_SER_JSON, wire_now(rt),
                                 TRACE_WIRE_NOTE_CONNECTION, text, strlen(text));
        free(text);
    }
}

/* A live session by its connection's id. */
typedef struct conn_sess {
    uint64_t conn;
    rt_session *s;
} conn_sess;

/* Later joins of a connection a walk keeps (met early, before their own HELLO). */
#define CONN_LATER 2

/* A connection's session as its join fact says. */
typedef struct conn_fact {
    rt_hnode node; /* in wire_read.facts */
    uint64_t conn;
    trace_peer *peer; /* reference */
    bool joined;      /* peer is a join fact's met in its place: that session has joined */
    /* The joins of the connection's next sessions (a client joining again after a GOODBYE),
     * met early, oldest first (references): the next one names the connection from its HELLO
     * on. */
    trace_peer *later[CONN_LATER];
    size_t n_later;
} conn_fact;

/* A call to another node met early ('R'): the UUID its CALL takes, by connection, CALL id and
 * chunk. */
typedef struct remote_call {
    rt_hnode node; /* in wire_read.remote */
    uint64_t conn, id, chunk;
    uint8_t uuid[TRACE_UUID_LEN];
} remote_call;

typedef struct wire_read {
    conn_sess *by_conn; /* sorted by conn */
    size_t n;
    rt_hmap remote;        /* remote_call by key, those of the walk's facts (early) */
    rt_hmap *facts;        /* conn_fact by conn (the read's, or a follower's) */
    trace_wire_corr *corr; /* NULL without memory: no correlation */
    uint64_t from;         /* seqs before are read for their facts and actions only */
    rt_wire_read_fn fn;
    void *ctx;
} wire_read;

static conn_fact *fact_find(const rt_hmap *m, uint64_t conn)
{
    for (rt_hnode *n = rt_hmap_first(m, rt_hash_u64(conn)); n; n = rt_hmap_next(n)) {
        conn_fact *f = RT_CONTAINER_OF(n, conn_fact, node);
        if (f->conn == conn) {
            return f;
        }
    }
    return NULL;
}

/* The session a join fact of n bytes at p names; NULL when it is malformed or without memory. */
static trace_peer *fact_peer(const unsigned char *p, size_t n)
{
    const char *str[3];
    size_t at = JOIN_FACT_ID;
    uint64_t id;
    if (n < JOIN_FACT_ID) {
        return NULL;
    }
    memcpy(&id, p + 1, JOIN_FACT_ID - 1);
    for (int i = 0; i < 3; i++) {
        const unsigned char *z = at < n ? memchr(p + at, '\0', n - at) : NULL;
        if (!z) {
            return NULL;
        }
        str[i] = (const char *)p + at;
        at = (size_t)(z - p) + 1;
    }
    return trace_peer_new(id, str[0], str[1], str[2]);
}

static void fact_free(conn_fact *f)
{
    trace_peer_unref(&f->peer);
    for (size_t i = 0; i < f->n_later; i++) {
        trace_peer_unref(&f->later[i]);
    }
    free(f);
}

/* A held join fact: the session of its connection from there on, and (early, the first of the
 * connection's) before it too: its HELLO and whatever the connection carried before it joined.
 * A connection's later joins met early name it from their own HELLO on (conn_hello()). */
static void on_join(wire_read *r, uint64_t conn, const void *p, size_t n, bool early)
{
    conn_fact *f = fact_find(r->facts, conn);
    if (f && early && f->n_later == CONN_LATER) {
        return;
    }
    trace_peer *peer = fact_peer(p, n);
    if (!peer) {
        return;
    }
    if (f && early) {
        f->later[f->n_later++] = peer;
        return;
    }
    if (f && f->n_later && trace_peer_session_id(f->later[0]) == trace_peer_session_id(peer)) {
        /* (that join, met in its place now) */
        trace_peer_unref(&f->later[0]);
        memmove(f->later, f->later + 1, --f->n_later * sizeof(*f->later));
    }
    if (!f) {
        f = calloc(1, sizeof(*f));
        if (!f || rt_hmap_insert(r->facts, &f->node, rt_hash_u64(conn)) != WAMP_OK) {
            free(f);
            trace_peer_unref(&peer);
            return;
        }
        f->conn = conn;
    }
    trace_peer_unref(&f->peer);
    f->peer = peer;
    f->joined = !early;
}

/* A HELLO received on conn: when the session its fact names has joined, a new session begins,
 * named after the connection's next join if one was met early. */
static void conn_hello(wire_read *r, uint64_t conn)
{
    conn_fact *f = fact_find(r->facts, conn);
    if (f && f->joined && f->n_later) {
        trace_peer_unref(&f->peer);
        f->peer = trace_peer_ref(f->later[0]);
        f->joined = false;
    }
}

static int conn_cmp(const void *a, const void *b)
{
    uint64_t x = ((const conn_sess *)a)->conn, y = ((const conn_sess *)b)->conn;
    return x < y ? -1 : x > y;
}

static rt_session *session_of(const wire_read *r, uint64_t conn)
{
    conn_sess key = {.conn = conn};
    conn_sess *hit = r->n ? bsearch(&key, r->by_conn, r->n, sizeof(key), conn_cmp) : NULL;
    return hit ? hit->s : NULL;
}

static uint64_t remote_hash(uint64_t conn, uint64_t id, uint64_t chunk)
{
    return rt_hash_u64(conn ^ rt_hash_u64(id ^ rt_hash_u64(chunk)));
}

/* The UUID the CALL id of conn, come in chunk, takes ('R'), NULL if none. */
static const remote_call *remote_find(const wire_read *r, uint64_t conn, uint64_t id,
                                      uint64_t chunk)
{
    for (rt_hnode *n = rt_hmap_first(&r->remote, remote_hash(conn, id, chunk)); n;
         n = rt_hmap_next(n)) {
        const remote_call *c = RT_CONTAINER_OF(n, remote_call, node);
        if (c->conn == conn && c->id == id && c->chunk == chunk) {
            return c;
        }
    }
    return NULL;
}

/* An 'R' fact met early: its CALL, met later in the walk, takes its UUID. */
static void remote_note(wire_read *r, const uint64_t v[5])
{
    remote_call *c = calloc(1, sizeof(*c));
    if (!c) {
        return; /* (the CALL keeps the UUID of its own key) */
    }
    *c = (remote_call){.conn = v[0], .id = v[1], .chunk = v[2]};
    memcpy(c->uuid, &v[3], TRACE_UUID_LEN);
    if (rt_hmap_insert(&r->remote, &c->node, remote_hash(c->conn, c->id, c->chunk)) != WAMP_OK) {
        free(c);
    }
}

static void remote_clear(rt_hmap *m)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(m); it.node;) {
        remote_call *c = RT_CONTAINER_OF(it.node, remote_call, node);
        rt_hmap_iter_next(m, &it);
        rt_hmap_remove(m, &c->node);
        free(c);
    }
    rt_hmap_fini(m);
}

/* An 'I' or 'E' fact (of its own): the INVOCATION of a call from another node, or the EVENTs
 * of its publication, take its UUID (and its procedure or topic as their URI). */
static void on_remote(wire_read *r, const unsigned char *b, size_t n)
{
    size_t nids = b[0] == FACT_INVOKED ? 2 : 1;
    size_t head = 1 + nids * 8 + TRACE_UUID_LEN;
    uint64_t v[2];
    if (n < head) {
        return;
    }
    memcpy(v, b + 1, nids * 8);
    size_t ulen = n - head;
    char *uri = ulen ? malloc(ulen + 1) : NULL;
    if (uri) {
        memcpy(uri, b + head, ulen);
        uri[ulen] = '\0';
    }
    const uint8_t *uuid = b + 1 + nids * 8;
    if (b[0] == FACT_INVOKED) {
        (void)trace_wire_corr_invoked(r->corr, v[0], v[1], uuid, uri);
    } else {
        (void)trace_wire_corr_published_as(r->corr, v[0], uuid, uri);
    }
    free(uri);
}

/* The gathered routing facts at b (n octets), one after the other: early, the 'R' ones alone. */
static void on_routing(wire_read *r, const unsigned char *b, size_t n, bool early)
{
    uint64_t v[5];
    for (size_t at = 0; at < n;) {
        size_t len = b[at] == FACT_CALL     ? 1 + 4 * 8
                     : b[at] == FACT_PUB    ? 1 + 3 * 8
                     : b[at] == FACT_REMOTE ? 1 + 5 * 8
                                            : 0;
        if (!len || n - at < len) {
            return; /* (none other is written) */
        }
        memcpy(v, b + at + 1, len - 1);
        if (early) {
            if (b[at] == FACT_REMOTE) {
                remote_note(r, v);
            }
        } else if (b[at] == FACT_CALL) {
            (void)trace_wire_corr_call(r->corr, v[0], v[1], v[2], v[3]);
        } else if (b[at] == FACT_PUB) {
            (void)trace_wire_corr_published(r->corr, v[0], v[1], v[2]);
        }
        at += len;
    }
}

/* A held fact, in its place in the walk (routing facts) or early too (joins, calls to other
 * nodes). */
static void on_fact(void *ctx, uint64_t conn, const void *p, size_t n, bool early)
{
    wire_read *r = ctx;
    const unsigned char *b = p;
    if (n == 0) {
        return;
    }
    if (b[0] == FACT_JOIN) {
        on_join(r, conn, p, n, early);
    } else if (r->corr && (b[0] == FACT_INVOKED || b[0] == FACT_EVENTS)) {
        if (!early) {
            on_remote(r, b, n);
        }
    } else if (r->corr) {
        on_routing(r, b, n, early);
    }
}

/* The correlation of m (wm: its fields), a CALL or PUBLISH to other nodes taking the UUID noted
 * for it. */
static uint8_t corr_of(wire_read *r, uint64_t seq, const trace_wire_msg *m, const wamp_msg *wm,
                       uint8_t corr[TRACE_UUID_LEN])
{
    uint8_t flags = trace_wire_corr_of(r->corr, seq, m->conn, m->dir, wm, corr);
    const remote_call *c =
            flags && (wm->type == WAMP_MSG_CALL || wm->type == WAMP_MSG_PUBLISH) && r->remote.count
                    ? remote_find(r, m->conn, wm->id, m->chunk)
                    : NULL;
    if (c && trace_wire_corr_rename(r->corr, m->conn, wm->id, c->uuid)) {
        memcpy(corr, c->uuid, TRACE_UUID_LEN);
    }
    return flags;
}

/* The next element of r as an id (an integer >= 0) into *out; false when it is something else. */
static bool next_id(wamp_rd *r, uint64_t *out)
{
    wamp_tok t;
    if (wamp_rd_next(r, &t) != WAMP_OK || t.kind != WAMP_TOK_INT || t.i < 0) {
        return false;
    }
    *out = (uint64_t)t.i;
    return true;
}

/* What the correlation needs of a message before the page (its type and ids; no dict: its flags
 * are not read), from the envelope's first elements, no value built. false when they are not
 * there. */
static bool peek_ids(wamp_ser ser, const void *p, size_t n, wamp_msg *m)
{
    wamp_rd r;
    wamp_tok t;
    uint64_t type = 0, req = 0;
    memset(m, 0, sizeof(*m));
    wamp_rd_init_one_pass(&r, ser, p, n);
    bool ok = wamp_rd_next(&r, &t) == WAMP_OK && t.kind == WAMP_TOK_ARRAY && next_id(&r, &type);
    if (ok &&
        (type == WAMP_MSG_HELLO || type == WAMP_MSG_WELCOME || type == WAMP_MSG_ABORT ||
         type == WAMP_MSG_GOODBYE || type == WAMP_MSG_CHALLENGE || type == WAMP_MSG_AUTHENTICATE)) {
        /* (the session's opening and closing: the type is all) */
    } else if (ok && type == WAMP_MSG_ERROR) {
        ok = next_id(&r, &req) && next_id(&r, &m->id);
        m->req_type = (wamp_msg_type)req;
    } else if (ok && next_id(&r, &m->id) && type == WAMP_MSG_EVENT) {
        ok = next_id(&r, &m->id2);
    }
    m->type = (wamp_msg_type)type;
    wamp_rd_fini(&r);
    return ok;
}

/* true for the requests that open an action with a URI of their own. */
static bool opens_action(wamp_msg_type t)
{
    return t == WAMP_MSG_CALL || t == WAMP_MSG_PUBLISH || t == WAMP_MSG_SUBSCRIBE ||
           t == WAMP_MSG_REGISTER;
}

/* rec's bytes (a captured message in ser) where they may hold a secret (a CHALLENGE, an
 * AUTHENTICATE, or bytes that do not decode as a message): a redacted copy in their place
 * (rec->wire) when they hold one, as a trace keeps them, or no bytes at all when that copy
 * cannot be made. */
static void redact(trace_record *rec, wamp_ser ser)
{
    json_t *v = NULL;
    if (wamp_codec_decode_value(ser, rec->bytes, rec->len, &v, NULL, 0) != WAMP_OK) {
        return; /* no value: shown as none (trace_render.h) */
    }
    wamp_buf *b;
    if (trace_strip_redacted(ser, v, &b)) {
        rec->wire = b;
        rec->bytes = NULL;
        rec->len = 0;
    }
    json_decref(v);
}

/* A connection event (TRACE_WIRE_NOTE_CONNECTION) as a trace's connection record. */
static bool on_connection(wire_read *r, uint64_t seq, const trace_wire_msg *m)
{
    if (seq < r->from) {
        return true;
    }
    trace_record rec = {.seq = seq,
                        .pc_ns = m->ts_ns,
                        .ts_ns = m->wall_ns,
                        .bytes = m->data,
                        .len = m->len > UINT32_MAX ? UINT32_MAX : (uint32_t)m->len,
                        .msg_type = TRACE_MSG_CONNECTION,
                        .wire_ser = WAMP_SER_JSON};
    return r->fn(r->ctx, seq, &rec);
}

/* A message (sent, of a known serializer) before r->from: its action alone, and its session
 * when it is a HELLO. */
static void follow_only(wire_read *r, uint64_t seq, const trace_wire_msg *m)
{
    wamp_msg wm;
    char why[WAMP_WHY_LEN];
    uint8_t corr[TRACE_UUID_LEN];
    if (!peek_ids((wamp_ser)m->ser, m->data, m->len, &wm)) {
        return;
    }
    if (wm.type == WAMP_MSG_HELLO && m->dir == TRACE_RX) {
        conn_hello(r, m->conn);
    }
    if (!opens_action(wm.type) || m->dir != TRACE_RX) {
        (void)corr_of(r, seq, m, &wm, corr);
    } else if (wamp_msg_parse_bytes_fields((wamp_ser)m->ser, m->data, m->len, &wm, why,
                                           sizeof(why)) == WAMP_OK) {
        (void)corr_of(r, seq, m, &wm, corr); /* (and its URI, the action's) */
        wamp_msg_fini(&wm);
    }
}

/* The record of the captured message m (seq), handed to r's callback. */
static bool on_seq(void *ctx, uint64_t seq, const trace_wire_msg *m)
{
    wire_read *r = ctx;
    if (!m) {
        return seq < r->from || r->fn(r->ctx, seq, NULL);
    }
    uint32_t note = m->note & 0xffu;
    if (note == TRACE_WIRE_NOTE_CONNECTION) {
        return on_connection(r, seq, m);
    }
    bool dropped = note == TRACE_WIRE_NOTE_DROPPED;
    wamp_msg wm;
    char why[WAMP_WHY_LEN];
    uint8_t corr[TRACE_UUID_LEN];
    bool valid = m->ser > 0 && m->ser < WAMP_SER_COUNT;
    if (seq < r->from) {
        if (valid && !dropped && r->corr) {
            follow_only(r, seq, m);
        }
        return true;
    }
    bool ok = valid && wamp_msg_parse_bytes_fields((wamp_ser)m->ser, m->data, m->len, &wm, why,
                                                   sizeof(why)) == WAMP_OK;
    /* A message not sent is named after its action (its URI) but is none of it: no answer, no
     * correlation (a sent one's lookup changes nothing but for a GOODBYE). */
    uint8_t flags = ok && r->corr && !(dropped && wm.type == WAMP_MSG_GOODBYE)
                            ? corr_of(r, seq, m, &wm, corr)
                            : 0;
    trace_record rec = {.seq = seq,
                        .pc_ns = m->ts_ns,
                        .ts_ns = m->wall_ns,
                        .bytes = m->data,
                        .len = m->len > UINT32_MAX ? UINT32_MAX : (uint32_t)m->len,
                        .dir = m->dir,
                        .wire_ser = m->ser};
    if (m->ser < WAMP_SER_COUNT) {
        rec.ser_bytes[m->ser] = rec.len;
    }
    if (dropped) {
        uint32_t code = m->note >> 8 & 0xffu;
        rec.dropped = code && code <= N_DROP_REASONS ? drop_reasons[code - 1] : "dropped";
        rec.msg_type = (uint8_t)(m->note >> 16); /* (its bytes say it too, when it has any) */
    }
    if (flags && !dropped) {
        rec.flags = flags;
        memcpy(rec.corr, corr, TRACE_UUID_LEN);
    }
    if (ok) {
        rec.msg_type = (uint8_t)wm.type;
        if (wm.type == WAMP_MSG_HELLO && m->dir == TRACE_RX) {
            conn_hello(r, m->conn);
        }
        /* (an AUTHENTICATE's "URI" field holds its Signature) */
        bool secret = wm.type == WAMP_MSG_CHALLENGE || wm.type == WAMP_MSG_AUTHENTICATE;
        trace_str *au = flags ? trace_wire_corr_uri(r->corr) : NULL;
        if (au) {
            rec.uri = trace_str_ref(au);
        } else if (wm.uri && !secret && opens_action(wm.type)) {
            rec.uri = trace_str_new(wm.uri);
        }
        wamp_msg_fini(&wm);
    }
    if ((!ok || rec.msg_type == WAMP_MSG_CHALLENGE || rec.msg_type == WAMP_MSG_AUTHENTICATE) &&
        m->ser > 0 && m->ser < WAMP_SER_COUNT) {
        redact(&rec, (wamp_ser)m->ser);
    }
    conn_fact *f = fact_find(r->facts, m->conn);
    rt_session *s = f ? NULL : session_of(r, m->conn);
    if (f) {
        rec.peer = trace_peer_ref(f->peer);
    } else if (s && s->realm) {
        rec.peer = trace_peer_new(s->id, rt_realm_name(s->realm), s->authid, s->authrole);
    }
    bool go = r->fn(r->ctx, seq, &rec);
    trace_record_fini(&rec); /* its peer and URI (its bytes are the capture's) */
    return go;
}

/* r's snapshot of the live sessions by connection (r->by_conn, sorted); false without memory. */
static bool snapshot_sessions(rt_router *rt, wire_read *r)
{
    r->by_conn = malloc((rt->n_sessions ? rt->n_sessions : 1) * sizeof(*r->by_conn));
    if (!r->by_conn) {
        return false;
    }
    RT_LIST_FOREACH_SAFE(it, nx, &rt->sessions)
    {
        rt_session *s = RT_CONTAINER_OF(it, rt_session, in_router);
        if (conn_of(s) && r->n < rt->n_sessions) {
            r->by_conn[r->n++] = (conn_sess){.conn = conn_of(s), .s = s};
        }
    }
    qsort(r->by_conn, r->n, sizeof(*r->by_conn), conn_cmp);
    return true;
}

/* Drops the join facts of m: all of them (live NULL), or those whose connection has no session
 * in live's snapshot. */
static void facts_drop(rt_hmap *m, const wire_read *live)
{
    for (rt_hmap_iter it = rt_hmap_iter_begin(m); it.node;) {
        conn_fact *f = RT_CONTAINER_OF(it.node, conn_fact, node);
        rt_hmap_iter_next(m, &it);
        if (!live || !session_of(live, f->conn)) {
            rt_hmap_remove(m, &f->node);
            fact_free(f);
        }
    }
}

/* One walk of r (its callback, from, correlation and join facts set) over the capture: every
 * held chunk (rd NULL; the actions of the seqs before r->from are those of some after), or
 * those rd has not read yet. The join facts of connections gone are dropped afterwards. */
static wamp_err walk(rt_router *rt, wire_read *r, trace_wire_reader *rd, trace_wire_walk *out)
{
    facts_flush(rt); /* what was noted since the last chunk */
    if (!snapshot_sessions(rt, r)) {
        return WAMP_ENOMEM;
    }
    rt_hmap_init(&r->remote);
    wamp_err err = rd ? trace_wire_reader_next(rd, rt->wire, on_seq, on_fact, r, out)
                      : trace_wire_decode_facts(rt->wire, 0, on_seq, on_fact, r, out);
    remote_clear(&r->remote);
    facts_drop(r->facts, r); /* (no chunk of a connection gone can come any more) */
    free(r->by_conn);
    return err;
}

wamp_err rt_router_wire_read(rt_router *rt, uint64_t from_seq, rt_wire_read_fn fn, void *ctx,
                             trace_wire_walk *out)
{
    if (!rt->wire) {
        return WAMP_EINVAL;
    }
    rt_hmap facts;
    rt_hmap_init(&facts);
    wire_read r = {
            .fn = fn, .ctx = ctx, .from = from_seq, .corr = trace_wire_corr_new(), .facts = &facts};
    wamp_err err = walk(rt, &r, NULL, out);
    trace_wire_corr_free(r.corr);
    facts_drop(&facts, NULL);
    rt_hmap_fini(&facts);
    return err;
}

/* A follower: the incremental reader and what it keeps between reads. */
struct rt_wire_follow {
    trace_wire_reader *rd;
    trace_wire_corr *corr; /* bounded */
    rt_hmap facts;         /* the join facts of live connections */
};

/* Actions a follower keeps per generation of its correlation (two generations). */
#define FOLLOW_ACTIONS 65536

rt_wire_follow *rt_wire_follow_new(void)
{
    rt_wire_follow *f = calloc(1, sizeof(*f));
    if (!f) {
        return NULL;
    }
    f->rd = trace_wire_reader_new();
    f->corr = trace_wire_corr_new();
    rt_hmap_init(&f->facts);
    if (!f->rd || !f->corr) {
        rt_wire_follow_free(f);
        return NULL;
    }
    trace_wire_corr_bound(f->corr, FOLLOW_ACTIONS);
    return f;
}

void rt_wire_follow_free(rt_wire_follow *f)
{
    if (f) {
        facts_drop(&f->facts, NULL);
        rt_hmap_fini(&f->facts);
        trace_wire_corr_free(f->corr);
        trace_wire_reader_free(f->rd);
        free(f);
    }
}

wamp_err rt_router_wire_follow(rt_router *rt, rt_wire_follow *f, uint64_t from_seq,
                               rt_wire_read_fn fn, void *ctx, trace_wire_walk *out)
{
    if (!rt->wire) {
        return WAMP_EINVAL;
    }
    wire_read r = {.fn = fn, .ctx = ctx, .from = from_seq, .corr = f->corr, .facts = &f->facts};
    return walk(rt, &r, f->rd, out);
}

uint64_t rt_wire_follow_next_seq(const rt_wire_follow *f)
{
    return trace_wire_reader_next_seq(f->rd);
}

void rt_router_wire_flush(rt_router *rt)
{
    if (rt->wire) {
        facts_flush(rt);
    }
}
