/* trace_wire_corr.c: correlation of the wire capture's messages (see trace_wire_corr.h). An
 * open-addressing table maps an action's key to its UUID: a request (connection, request id), an
 * invocation (callee's connection, INVOCATION id), a publication (its id); bounded, two
 * generations of them. */
#include "trace_wire_corr.h"

#include <stdlib.h>
#include <string.h>

enum {
    K_REQ = 1,
    K_INV = 2,
    K_PUB = 3,
    K_HELLO = 4, /* a connection's HELLO (id 0) */
    K_BYE = 5,   /* a connection's GOODBYE: id 1 the client's (an action), 2 the router's */
};

typedef struct corr_ent {
    uint64_t conn, id;
    uint8_t kind; /* 0: a free slot */
    uint8_t uuid[TRACE_UUID_LEN];
    trace_str *uri; /* the action's URI (a reference), NULL: none */
} corr_ent;

/* One generation of actions: an open-addressing table. */
typedef struct corr_tab {
    corr_ent *tab;
    size_t mask; /* slots - 1 */
    size_t n;
} corr_tab;

struct trace_wire_corr {
    corr_tab cur, prev; /* the newer actions, and the generation before (max: see bound) */
    size_t max;         /* actions of a generation (0: one generation, unbounded) */
    trace_str *memo;    /* the URI last made (a reference): the next request's, usually */
    trace_str *cur_uri; /* the URI of the last trace_wire_corr_of()'s action */
};

static bool tab_init(corr_tab *t)
{
    t->n = 0;
    t->mask = 63;
    t->tab = calloc(64, sizeof(*t->tab));
    return t->tab != NULL;
}

static void tab_fini(corr_tab *t)
{
    for (size_t i = 0; t->tab && i <= t->mask; i++) {
        trace_str_unref(&t->tab[i].uri);
    }
    free(t->tab);
    t->tab = NULL;
    t->n = 0;
}

trace_wire_corr *trace_wire_corr_new(void)
{
    trace_wire_corr *c = calloc(1, sizeof(*c));
    if (c && !tab_init(&c->cur)) {
        free(c);
        return NULL;
    }
    return c;
}

void trace_wire_corr_bound(trace_wire_corr *c, size_t max)
{
    c->max = max;
}

void trace_wire_corr_free(trace_wire_corr *c)
{
    if (c) {
        tab_fini(&c->cur);
        tab_fini(&c->prev);
        trace_str_unref(&c->memo);
        free(c);
    }
}

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The slot where the key's probe sequence starts. */
static size_t home_of(const corr_tab *t, uint64_t conn, uint64_t id, uint8_t kind)
{
    return (size_t)mix(conn ^ mix(id ^ ((uint64_t)kind << 56))) & t->mask;
}

static size_t slot_of(const corr_tab *t, uint64_t conn, uint64_t id, uint8_t kind)
{
    size_t i = home_of(t, conn, id, kind);
    while (t->tab[i].kind &&
           !(t->tab[i].kind == kind && t->tab[i].conn == conn && t->tab[i].id == id)) {
        i = (i + 1) & t->mask;
    }
    return i;
}

static bool grow(corr_tab *t)
{
    size_t ncap = (t->mask + 1) * 2;
    corr_ent *old = t->tab;
    size_t oldcap = t->mask + 1;
    corr_ent *nt = calloc(ncap, sizeof(*nt));
    if (!nt) {
        return false;
    }
    t->tab = nt;
    t->mask = ncap - 1;
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].kind) {
            t->tab[slot_of(t, old[i].conn, old[i].id, old[i].kind)] = old[i];
        }
    }
    free(old);
    return true;
}

/* The entry of the key, NULL when there is none: the newer generation's, else the older's. */
static const corr_ent *find(const trace_wire_corr *c, uint64_t conn, uint64_t id, uint8_t kind)
{
    const corr_ent *e = &c->cur.tab[slot_of(&c->cur, conn, id, kind)];
    if (!e->kind && c->prev.tab) {
        e = &c->prev.tab[slot_of(&c->prev, conn, id, kind)];
    }
    return e->kind ? e : NULL;
}

/* A new generation when the newer one is full (bounded): the older one's actions forgotten. */
static bool rotate(trace_wire_corr *c)
{
    corr_tab fresh;
    if (!tab_init(&fresh)) {
        return false;
    }
    tab_fini(&c->prev);
    c->prev = c->cur;
    c->cur = fresh;
    return true;
}

/* Sets the key's UUID and URI (borrowed; NULL: none) in a new entry or the one there; false
 * without memory. Both may be an entry's of the older generation, which a rotation frees: the
 * URI is held and the UUID copied first. */
static bool put(trace_wire_corr *c, uint64_t conn, uint64_t id, uint8_t kind,
                const uint8_t uuid[TRACE_UUID_LEN], trace_str *uri)
{
    uint8_t u[TRACE_UUID_LEN];
    memcpy(u, uuid, TRACE_UUID_LEN);
    trace_str *held = uri ? trace_str_ref(uri) : NULL;
    corr_tab *t = &c->cur;
    if ((c->max && c->cur.n >= c->max && !rotate(c)) ||
        ((t->n + 1) * 2 > t->mask + 1 && !grow(t))) {
        trace_str_unref(&held);
        return false;
    }
    corr_ent *e = &t->tab[slot_of(t, conn, id, kind)];
    if (!e->kind) {
        t->n++;
        *e = (corr_ent){.conn = conn, .id = id, .kind = kind};
    }
    memcpy(e->uuid, u, TRACE_UUID_LEN);
    trace_str_unref(&e->uri);
    e->uri = held;
    return true;
}

/* Removes the key's entry from t, if there is one: the entries after it in its probe sequence
 * move back where they belong (no tombstones). */
static void tab_del(corr_tab *t, uint64_t conn, uint64_t id, uint8_t kind)
{
    if (!t->tab) {
        return;
    }
    size_t i = slot_of(t, conn, id, kind);
    if (!t->tab[i].kind) {
        return;
    }
    trace_str_unref(&t->tab[i].uri);
    t->tab[i].kind = 0;
    t->n--;
    for (size_t j = (i + 1) & t->mask; t->tab[j].kind; j = (j + 1) & t->mask) {
        const corr_ent *m = &t->tab[j];
        size_t home = home_of(t, m->conn, m->id, m->kind);
        /* It stays when its home lies cyclically in (i, j]: the hole is not on its way. */
        if (((j - home) & t->mask) < ((j - i) & t->mask)) {
            continue;
        }
        t->tab[i] = *m;
        t->tab[j] = (corr_ent){0};
        i = j;
    }
}

/* The UUID of the request (conn, id) opened at seq (UINT64_MAX: its request not met), shaped as
 * a random (version 4) UUID. */
static void derive(uint64_t conn, uint64_t id, uint64_t seq, uint8_t uuid[TRACE_UUID_LEN])
{
    uint64_t a = mix(conn ^ 0x5741u), b = mix(a ^ mix(id) ^ mix(seq ^ 0x4D53u));
    memcpy(uuid, &a, 8);
    memcpy(uuid + 8, &b, 8);
    uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
    uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

/* The UUID of the request (conn, id): the one its request got, else derived from the key; its
 * URI (borrowed), NULL when the request was not met or has none. */
static trace_str *request_uuid(const trace_wire_corr *c, uint64_t conn, uint64_t id,
                               uint8_t uuid[TRACE_UUID_LEN])
{
    const corr_ent *e = find(c, conn, id, K_REQ);
    if (e) {
        memcpy(uuid, e->uuid, TRACE_UUID_LEN);
        return e->uri;
    }
    derive(conn, id, UINT64_MAX, uuid);
    return NULL;
}

/* The shared string of a request's URI text (borrowed: the memo's), NULL for none or without
 * memory. */
static trace_str *intern(trace_wire_corr *c, const char *uri)
{
    if (!uri) {
        return NULL;
    }
    size_t n = strlen(uri);
    if (!c->memo || !trace_str_is(c->memo, uri, n)) {
        trace_str_unref(&c->memo);
        c->memo = trace_str_new(uri);
    }
    return c->memo;
}

bool trace_wire_corr_call(trace_wire_corr *c, uint64_t caller_conn, uint64_t call_id,
                          uint64_t callee_conn, uint64_t inv_id)
{
    uint8_t uuid[TRACE_UUID_LEN];
    trace_str *uri = request_uuid(c, caller_conn, call_id, uuid);
    return put(c, callee_conn, inv_id, K_INV, uuid, uri);
}

bool trace_wire_corr_published(trace_wire_corr *c, uint64_t conn, uint64_t request_id,
                               uint64_t publication_id)
{
    uint8_t uuid[TRACE_UUID_LEN];
    trace_str *uri = request_uuid(c, conn, request_id, uuid);
    return put(c, 0, publication_id, K_PUB, uuid, uri);
}

bool trace_wire_corr_rename(trace_wire_corr *c, uint64_t conn, uint64_t id,
                            const uint8_t uuid[TRACE_UUID_LEN])
{
    corr_ent *e = (corr_ent *)(uintptr_t)find(c, conn, id, K_REQ);
    if (!e) {
        return false;
    }
    memcpy(e->uuid, uuid, TRACE_UUID_LEN);
    return true;
}

bool trace_wire_corr_invoked(trace_wire_corr *c, uint64_t callee_conn, uint64_t inv_id,
                             const uint8_t uuid[TRACE_UUID_LEN], const char *procedure)
{
    return put(c, callee_conn, inv_id, K_INV, uuid, intern(c, procedure));
}

bool trace_wire_corr_published_as(trace_wire_corr *c, uint64_t publication_id,
                                  const uint8_t uuid[TRACE_UUID_LEN], const char *topic)
{
    return put(c, 0, publication_id, K_PUB, uuid, intern(c, topic));
}

/* Found: the key's UUID into uuid (its URI c->cur_uri) and flags, else 0. */
static uint8_t known(trace_wire_corr *c, uint64_t conn, uint64_t id, uint8_t kind, uint8_t flags,
                     uint8_t uuid[TRACE_UUID_LEN])
{
    const corr_ent *e = find(c, conn, id, kind);
    if (!e) {
        return 0;
    }
    memcpy(uuid, e->uuid, TRACE_UUID_LEN);
    c->cur_uri = e->uri;
    return (uint8_t)(TRACE_CORR_HAS | flags);
}

/* A request's answer (to the client that asked: its connection and request id). */
static uint8_t answer(trace_wire_corr *c, uint64_t conn, uint64_t id, bool last,
                      uint8_t uuid[TRACE_UUID_LEN])
{
    c->cur_uri = request_uuid(c, conn, id, uuid);
    return (uint8_t)(TRACE_CORR_HAS | (last ? TRACE_CORR_LAST : 0));
}

trace_str *trace_wire_corr_uri(const trace_wire_corr *c)
{
    return c->cur_uri;
}

/* The opening and closing of a session: HELLO opens an action (CHALLENGE and AUTHENTICATE in it,
 * WELCOME or ABORT its last); a client's GOODBYE opens one that the router's reply completes,
 * unless it answers the router's own GOODBYE (then neither has one). */
static uint8_t session_level(trace_wire_corr *c, uint64_t seq, uint64_t conn, bool rx,
                             wamp_msg_type type, uint8_t uuid[TRACE_UUID_LEN])
{
    switch (type) {
    case WAMP_MSG_HELLO:
        if (!rx) {
            return 0;
        }
        /* A new session on the connection (a client may join again after a GOODBYE): the
         * GOODBYEs of the one before are over. */
        for (uint64_t bye = 1; bye <= 2; bye++) {
            tab_del(&c->cur, conn, bye, K_BYE);
            tab_del(&c->prev, conn, bye, K_BYE);
        }
        derive(conn, 0, seq, uuid);
        return put(c, conn, 0, K_HELLO, uuid, NULL) ? TRACE_CORR_HAS | TRACE_CORR_ANCHOR : 0;
    case WAMP_MSG_CHALLENGE:
    case WAMP_MSG_AUTHENTICATE:
        return rx == (type == WAMP_MSG_AUTHENTICATE) ? known(c, conn, 0, K_HELLO, 0, uuid) : 0;
    case WAMP_MSG_WELCOME:
    case WAMP_MSG_ABORT:
        return rx ? 0 : known(c, conn, 0, K_HELLO, TRACE_CORR_LAST, uuid);
    default: /* GOODBYE */
        if (find(c, conn, 2, K_BYE)) {
            return 0; /* the client's answer to the router's */
        }
        if (rx) {
            derive(conn, 1, seq ^ 0x4742u, uuid);
            return put(c, conn, 1, K_BYE, uuid, NULL) ? TRACE_CORR_HAS | TRACE_CORR_ANCHOR : 0;
        }
        if (find(c, conn, 1, K_BYE)) {
            return known(c, conn, 1, K_BYE, TRACE_CORR_LAST, uuid);
        }
        derive(conn, 2, seq, uuid);
        (void)put(c, conn, 2, K_BYE, uuid, NULL); /* the router's own: no action */
        return 0;
    }
}

uint8_t trace_wire_corr_of(trace_wire_corr *c, uint64_t seq, uint64_t conn, uint8_t dir,
                           const wamp_msg *m, uint8_t uuid[TRACE_UUID_LEN])
{
    bool rx = dir == TRACE_RX;
    c->cur_uri = NULL;
    switch (m->type) {
    case WAMP_MSG_CALL:
    case WAMP_MSG_PUBLISH:
    case WAMP_MSG_SUBSCRIBE:
    case WAMP_MSG_UNSUBSCRIBE:
    case WAMP_MSG_REGISTER:
    case WAMP_MSG_UNREGISTER:
        if (!rx) {
            return 0;
        }
        derive(conn, m->id, seq, uuid);
        if (!put(c, conn, m->id, K_REQ, uuid, intern(c, m->uri))) {
            return 0;
        }
        c->cur_uri = c->memo && m->uri ? c->memo : NULL;
        return TRACE_CORR_HAS | TRACE_CORR_ANCHOR;
    case WAMP_MSG_CANCEL:
        return rx ? answer(c, conn, m->id, false, uuid) : 0;
    case WAMP_MSG_RESULT:
        return rx ? 0
                  : answer(c, conn, m->id, !json_is_true(json_object_get(m->dict, "progress")),
                           uuid);
    case WAMP_MSG_PUBLISHED:
    case WAMP_MSG_SUBSCRIBED:
    case WAMP_MSG_UNSUBSCRIBED:
    case WAMP_MSG_REGISTERED:
    case WAMP_MSG_UNREGISTERED:
        return rx ? 0 : answer(c, conn, m->id, true, uuid);
    case WAMP_MSG_ERROR:
        if (m->req_type == WAMP_MSG_INVOCATION) { /* the callee's: the caller's ERROR follows */
            return rx ? known(c, conn, m->id, K_INV, 0, uuid) : 0;
        }
        return rx ? 0 : answer(c, conn, m->id, true, uuid);
    case WAMP_MSG_INVOCATION:
    case WAMP_MSG_INTERRUPT:
        return rx ? 0 : known(c, conn, m->id, K_INV, 0, uuid);
    case WAMP_MSG_YIELD:
        return rx ? known(c, conn, m->id, K_INV, 0, uuid) : 0;
    case WAMP_MSG_EVENT:
        return rx ? 0 : known(c, 0, m->id2, K_PUB, 0, uuid);
    case WAMP_MSG_HELLO:
    case WAMP_MSG_CHALLENGE:
    case WAMP_MSG_AUTHENTICATE:
    case WAMP_MSG_WELCOME:
    case WAMP_MSG_ABORT:
    case WAMP_MSG_GOODBYE:
        return session_level(c, seq, conn, rx, m->type, uuid);
    default:
        return 0;
    }
}
