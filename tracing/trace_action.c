/* trace_action.c: pending actions of an action-level trace, and their records. */
#include "trace_action.h"

#include <stdlib.h>
#include <string.h>

#include "wamp_codec.h"
#include "wamp_types.h"

/* Responders are deduplicated by a linear scan up to this many; beyond it a hash set of their
 * session ids keeps a fan-out to thousands of subscribers linear. */
#define RESP_SCAN_MAX 16

/* Elements of the action part: [action, responders, success, duration, error, callee_node].
 * Parts of ACTION_PARTS_V1 (no error) and ACTION_PARTS_V2 (no callee_node) were written before
 * those were kept; they still render. */
#define ACTION_PARTS    6
#define ACTION_PARTS_V2 5
#define ACTION_PARTS_V1 4

typedef struct pending {
    uint8_t corr[TRACE_UUID_LEN];
    struct pending *older, *newer; /* age list: the tracker's oldest is abandoned first */
    uint64_t pc_ns, ts_ns;         /* the anchor's */
    trace_peer *originator;        /* reference */
    trace_str *uri;                /* reference; NULL if none */
    trace_peer **resp;             /* references, in order of first appearance */
    size_t n_resp, cap_resp;
    uint64_t *rset; /* open-addressing set of responder session ids (0 = empty slot) */
    size_t rset_cap;
    char *error;       /* the last ERROR's or ABORT's URI; NULL if none (or out of memory) */
    char *callee_node; /* the node a cross-node call's answer came from; NULL if none */
    int kind;          /* the anchor's message type */
    bool failed;
} pending;

struct trace_action {
    size_t max_pending;
    pending **slots; /* open addressing, linear probing; cap is a power of two */
    size_t cap;
    size_t n;
    pending *oldest, *newest;
    uint64_t abandoned;
};

static uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static size_t slot_of(const trace_action *a, const uint8_t corr[TRACE_UUID_LEN])
{
    uint64_t h = (load64(corr) ^ load64(corr + 8)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (a->cap - 1);
}

trace_action *trace_action_new(size_t max_pending)
{
    if (max_pending == 0) {
        return NULL;
    }
    trace_action *a = calloc(1, sizeof(*a));
    if (!a) {
        return NULL;
    }
    a->max_pending = max_pending;
    a->cap = 16;
    a->slots = calloc(a->cap, sizeof(*a->slots));
    if (!a->slots) {
        free(a);
        return NULL;
    }
    return a;
}

static void pending_free(pending *p)
{
    trace_peer_unref(&p->originator);
    trace_str_unref(&p->uri);
    for (size_t i = 0; i < p->n_resp; i++) {
        trace_peer_unref(&p->resp[i]);
    }
    free(p->resp);
    free(p->rset);
    free(p->error);
    free(p->callee_node);
    free(p);
}

void trace_action_clear(trace_action *a)
{
    if (!a) {
        return;
    }
    pending *p = a->oldest;
    while (p) {
        pending *next = p->newer;
        pending_free(p);
        p = next;
    }
    memset(a->slots, 0, a->cap * sizeof(*a->slots));
    a->oldest = a->newest = NULL;
    a->n = 0;
}

void trace_action_free(trace_action *a)
{
    if (!a) {
        return;
    }
    trace_action_clear(a);
    free(a->slots);
    free(a);
}

size_t trace_action_pending(const trace_action *a)
{
    return a->n;
}

uint64_t trace_action_abandoned(const trace_action *a)
{
    return a->abandoned;
}

const char *trace_action_name(int anchor_type)
{
    switch (anchor_type) {
    case WAMP_MSG_HELLO:
        return "join";
    case WAMP_MSG_GOODBYE:
        return "leave";
    case WAMP_MSG_CALL:
        return "call";
    case WAMP_MSG_PUBLISH:
        return "publish";
    case WAMP_MSG_SUBSCRIBE:
        return "subscribe";
    case WAMP_MSG_UNSUBSCRIBE:
        return "unsubscribe";
    case WAMP_MSG_REGISTER:
        return "register";
    case WAMP_MSG_UNREGISTER:
        return "unregister";
    default:
        return NULL;
    }
}

/* Index of the slot holding corr, or SIZE_MAX. */
static size_t find(const trace_action *a, const uint8_t corr[TRACE_UUID_LEN])
{
    size_t mask = a->cap - 1;
    for (size_t i = slot_of(a, corr);; i = (i + 1) & mask) {
        const pending *p = a->slots[i];
        if (!p) {
            return SIZE_MAX;
        }
        if (memcmp(p->corr, corr, TRACE_UUID_LEN) == 0) {
            return i;
        }
    }
}

bool trace_action_is_pending(const trace_action *a, const uint8_t corr[TRACE_UUID_LEN])
{
    return a->n && find(a, corr) != SIZE_MAX;
}

static void place(pending **slots, size_t cap, pending *p)
{
    size_t mask = cap - 1;
    uint64_t h = (load64(p->corr) ^ load64(p->corr + 8)) * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 32) & mask;
    while (slots[i]) {
        i = (i + 1) & mask;
    }
    slots[i] = p;
}

/* Keeps the load factor at or below 1/2. false on allocation failure (nothing changes). */
static bool grow_if_needed(trace_action *a)
{
    if ((a->n + 1) * 2 <= a->cap) {
        return true;
    }
    size_t ncap = a->cap * 2;
    pending **ns = calloc(ncap, sizeof(*ns));
    if (!ns) {
        return false;
    }
    for (pending *p = a->oldest; p; p = p->newer) {
        place(ns, ncap, p);
    }
    free(a->slots);
    a->slots = ns;
    a->cap = ncap;
    return true;
}

/* Removes the entry at slot i from the table and the age list (backward-shift deletion keeps
 * every probe sequence unbroken without tombstones); returns it. */
static pending *unlink_at(trace_action *a, size_t i)
{
    pending *p = a->slots[i];
    size_t mask = a->cap - 1;
    a->slots[i] = NULL;
    for (size_t j = (i + 1) & mask; a->slots[j]; j = (j + 1) & mask) {
        size_t home = slot_of(a, a->slots[j]->corr);
        /* Move slots[j] into the hole at i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            a->slots[i] = a->slots[j];
            a->slots[j] = NULL;
            i = j;
        }
    }
    if (p->older) {
        p->older->newer = p->newer;
    } else {
        a->oldest = p->newer;
    }
    if (p->newer) {
        p->newer->older = p->older;
    } else {
        a->newest = p->older;
    }
    a->n--;
    return p;
}

static bool rset_insert(uint64_t *set, size_t cap, uint64_t id)
{
    size_t mask = cap - 1;
    size_t i = (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (set[i]) {
        if (set[i] == id) {
            return false;
        }
        i = (i + 1) & mask;
    }
    set[i] = id;
    return true;
}

static bool rset_has(const uint64_t *set, size_t cap, uint64_t id)
{
    size_t mask = cap - 1;
    size_t i = (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    while (set[i]) {
        if (set[i] == id) {
            return true;
        }
        i = (i + 1) & mask;
    }
    return false;
}

static bool has_responder(const pending *p, uint64_t sid)
{
    if (p->rset) {
        return rset_has(p->rset, p->rset_cap, sid);
    }
    for (size_t i = 0; i < p->n_resp; i++) {
        if (trace_peer_session_id(p->resp[i]) == sid) {
            return true;
        }
    }
    return false;
}

/* Builds (or grows) the id set once the list is past RESP_SCAN_MAX; false on allocation
 * failure (the caller then skips the responder). Session id 0 never occurs (WAMP ids start at
 * 1), so 0 marks an empty slot. */
static bool rset_reserve(pending *p)
{
    if (p->n_resp + 1 <= RESP_SCAN_MAX || (p->rset && (p->n_resp + 1) * 2 <= p->rset_cap)) {
        return true;
    }
    size_t ncap = p->rset_cap ? p->rset_cap * 2 : 4 * RESP_SCAN_MAX;
    while ((p->n_resp + 1) * 2 > ncap) {
        ncap *= 2;
    }
    uint64_t *ns = calloc(ncap, sizeof(*ns));
    if (!ns) {
        return false;
    }
    for (size_t i = 0; i < p->n_resp; i++) {
        (void)rset_insert(ns, ncap, trace_peer_session_id(p->resp[i]));
    }
    free(p->rset);
    p->rset = ns;
    p->rset_cap = ncap;
    return true;
}

static void add_responder(pending *p, trace_peer *peer)
{
    uint64_t sid = trace_peer_session_id(peer);
    if (sid == 0 || has_responder(p, sid)) {
        return;
    }
    if (p->n_resp == p->cap_resp) {
        size_t ncap = p->cap_resp ? p->cap_resp * 2 : 4;
        trace_peer **nr = realloc(p->resp, ncap * sizeof(*nr));
        if (!nr) {
            return;
        }
        p->resp = nr;
        p->cap_resp = ncap;
    }
    if (!rset_reserve(p)) {
        return;
    }
    if (p->rset) {
        (void)rset_insert(p->rset, p->rset_cap, sid);
    }
    p->resp[p->n_resp++] = trace_peer_ref(peer);
}

/* A new action for an anchor, not linked yet; NULL on allocation failure. */
static pending *open_action(const trace_action_msg *m)
{
    pending *p = calloc(1, sizeof(*p));
    if (!p) {
        return NULL;
    }
    memcpy(p->corr, m->corr, TRACE_UUID_LEN);
    p->pc_ns = m->pc_ns;
    p->ts_ns = m->ts_ns;
    p->originator = m->peer ? trace_peer_ref(m->peer) : NULL;
    p->uri = m->uri ? trace_str_ref(m->uri) : NULL;
    p->kind = m->msg_type;
    return p;
}

/* Makes p pending; false (p freed) on allocation failure. */
static bool link_new(trace_action *a, pending *p)
{
    if (a->n >= a->max_pending) {
        /* Bounded: the oldest action (a callee that never answers...) gives way. */
        pending_free(unlink_at(a, find(a, a->oldest->corr)));
        a->abandoned++;
    }
    if (!grow_if_needed(a)) {
        pending_free(p);
        return false;
    }
    place(a->slots, a->cap, p);
    p->older = a->newest;
    if (a->newest) {
        a->newest->newer = p;
    } else {
        a->oldest = p;
    }
    a->newest = p;
    a->n++;
    return true;
}

/* The action part of the record, MessagePack, positional (no keys: this is written once per
 * completed action, on the capture path): [action, [[session_id, authid, authrole], ...],
 * success, duration, error, callee_node]. trace_action_write_record() gives it its keys. NULL on
 * allocation failure. */
static wamp_buf *encode_body(const pending *p, uint64_t end_pc_ns)
{
    wamp_wr w;
    wamp_buf *out = NULL;
    uint64_t dur = end_pc_ns > p->pc_ns ? end_pc_ns - p->pc_ns : 0;
    wamp_wr_init(&w, WAMP_SER_MSGPACK, 32 + p->n_resp * 40, 0);
    wamp_wr_array(&w, ACTION_PARTS);
    wamp_wr_str_or_null(&w, trace_action_name(p->kind));
    wamp_wr_array(&w, p->n_resp);
    for (size_t i = 0; i < p->n_resp; i++) {
        const trace_peer *r = p->resp[i];
        wamp_wr_array(&w, 3);
        wamp_wr_int(&w, (int64_t)trace_peer_session_id(r));
        wamp_wr_str_or_null(&w, trace_peer_authid(r));
        wamp_wr_str_or_null(&w, trace_peer_authrole(r));
        wamp_wr_end(&w);
    }
    wamp_wr_end(&w);
    wamp_wr_bool(&w, !p->failed);
    wamp_wr_real(&w, trace_ns_to_seconds(dur));
    wamp_wr_str_or_null(&w, p->failed ? p->error : NULL);
    wamp_wr_str_or_null(&w, p->callee_node);
    wamp_wr_end(&w);
    if (wamp_wr_finish_buf(&w, &out) != WAMP_OK) {
        out = NULL;
    }
    wamp_wr_fini(&w);
    return out;
}

/* The record of a completed action; consumes p. */
static void complete(pending *p, uint64_t end_pc_ns, trace_record *out)
{
    memset(out, 0, sizeof(*out));
    out->pc_ns = p->pc_ns;
    out->ts_ns = p->ts_ns;
    out->msg_type = TRACE_MSG_ACTION;
    out->peer = p->originator; /* the references move to the record */
    out->uri = p->uri;
    p->originator = NULL;
    p->uri = NULL;
    memcpy(out->corr, p->corr, TRACE_UUID_LEN);
    out->flags = TRACE_CORR_HAS;
    out->wire = encode_body(p, end_pc_ns);
    out->wire_ser = (uint8_t)(out->wire ? WAMP_SER_MSGPACK : 0);
    pending_free(p);
}

static void fold(pending *p, const trace_action_msg *m)
{
    if (m->msg_type == WAMP_MSG_ERROR || m->msg_type == WAMP_MSG_ABORT) {
        p->failed = true;
        /* The last one wins: a callee's ERROR, then the ERROR the caller gets (the same URI,
         * unless the router replaced it). Out of memory: the previous URI, or none. */
        size_t n = m->error ? strlen(m->error) + 1 : 0;
        char *e = n ? malloc(n) : NULL;
        if (e) {
            memcpy(e, m->error, n);
            free(p->error);
            p->error = e;
        }
    }
    if (m->callee_node && !p->callee_node) {
        p->callee_node = strdup(m->callee_node); /* NULL (out of memory): not named */
    }
    if (!m->peer) {
        return;
    }
    uint64_t sid = trace_peer_session_id(m->peer);
    if (p->originator && trace_peer_session_id(p->originator) == sid) {
        /* The same session, maybe with more to say (a join's WELCOME knows the authid). */
        if (m->peer != p->originator) {
            trace_peer_unref(&p->originator);
            p->originator = trace_peer_ref(m->peer);
        }
    } else if (!m->dropped) {
        add_responder(p, m->peer);
    }
}

bool trace_action_on_message(trace_action *a, const trace_action_msg *m, trace_record *out)
{
    if (!m->corr) {
        return false;
    }
    pending *p;
    if (m->anchor) {
        if (a->n && find(a, m->corr) != SIZE_MAX) {
            return false; /* offered twice: nothing new */
        }
        p = open_action(m);
        if (!p) {
            return false;
        }
        fold(p, m);
        if (m->last) {
            /* Complete at once (a PUBLISH nobody receives and nobody acknowledges). */
            complete(p, m->pc_ns, out);
            return true;
        }
        (void)link_new(a, p);
        return false;
    }
    size_t i = a->n ? find(a, m->corr) : SIZE_MAX;
    if (i == SIZE_MAX) {
        return false;
    }
    p = a->slots[i];
    fold(p, m);
    if (!m->last) {
        return false;
    }
    complete(unlink_at(a, i), m->pc_ns, out);
    return true;
}

/* --- Rendering ------------------------------------------------------------------------------ */

static void write_peer(wamp_wr *w, const trace_peer *p)
{
    if (!p) {
        wamp_wr_null(w);
        return;
    }
    wamp_wr_map(w, 3);
    wamp_wr_key(w, "session_id");
    wamp_wr_int(w, (int64_t)trace_peer_session_id(p));
    wamp_wr_key(w, "authid");
    wamp_wr_str_or_null(w, trace_peer_authid(p));
    wamp_wr_key(w, "authrole");
    wamp_wr_str_or_null(w, trace_peer_authrole(p));
    wamp_wr_end(w);
}

/* Element i of the stored body when it is of the expected JSON type, else NULL. */
static const json_t *part(const json_t *body, size_t i, json_type type)
{
    const json_t *v = json_array_get(body, i);
    if (type == JSON_REAL) {
        return json_is_number(v) ? v : NULL;
    }
    if (type == JSON_TRUE) {
        return json_is_boolean(v) ? v : NULL;
    }
    return v && json_typeof(v) == type ? v : NULL;
}

static void write_value_or_null(wamp_wr *w, const json_t *v)
{
    if (v) {
        wamp_wr_json(w, v);
    } else {
        wamp_wr_null(w);
    }
}

/* The stored [[session_id, authid, authrole], ...] as the record's list of objects. */
static void write_responders(wamp_wr *w, const json_t *list)
{
    size_t n = json_array_size(list), i;
    const json_t *e;
    wamp_wr_array(w, n);
    json_array_foreach(list, i, e)
    {
        wamp_wr_map(w, 3);
        wamp_wr_key(w, "session_id");
        write_value_or_null(w, part(e, 0, JSON_INTEGER));
        wamp_wr_key(w, "authid");
        wamp_wr_str_or_null(w, json_string_value(json_array_get(e, 1)));
        wamp_wr_key(w, "authrole");
        wamp_wr_str_or_null(w, json_string_value(json_array_get(e, 2)));
        wamp_wr_end(w);
    }
    wamp_wr_end(w);
}

void trace_action_write_record(wamp_wr *w, const trace_record *r)
{
    json_t *body = NULL;
    if (r->wire && wamp_codec_decode((wamp_ser)r->wire_ser, wamp_buf_cdata(r->wire),
                                     wamp_buf_len(r->wire), &body, NULL, 0) != WAMP_OK) {
        body = NULL;
    }
    size_t n_parts = json_array_size(body);
    if (body && (!json_is_array(body) || (n_parts != ACTION_PARTS && n_parts != ACTION_PARTS_V2 &&
                                          n_parts != ACTION_PARTS_V1))) {
        json_decref(body);
        body = NULL;
    }
    const trace_peer *p = r->peer;
    wamp_wr_map(w, 13);
    wamp_wr_key(w, "seq");
    wamp_wr_int(w, (int64_t)r->seq);
    wamp_wr_key(w, "pc");
    wamp_wr_real(w, trace_ns_to_seconds(r->pc_ns));
    wamp_wr_key(w, "ts");
    wamp_wr_real(w, trace_ns_to_seconds(r->ts_ns));
    wamp_wr_key(w, "realm");
    wamp_wr_str_or_null(w, p ? trace_peer_realm(p) : NULL);
    wamp_wr_key(w, "action");
    wamp_wr_str_or_null(w, json_string_value(part(body, 0, JSON_STRING)));
    wamp_wr_key(w, "correlation");
    if (r->flags & TRACE_CORR_HAS) {
        char uuid[TRACE_UUID_STRLEN];
        trace_uuid_format(r->corr, uuid);
        wamp_wr_str(w, uuid);
    } else {
        wamp_wr_null(w);
    }
    wamp_wr_key(w, "uri");
    wamp_wr_str_or_null(w, r->uri ? trace_str_get(r->uri) : NULL);
    wamp_wr_key(w, "originator");
    write_peer(w, p);
    wamp_wr_key(w, "responders");
    write_responders(w, part(body, 1, JSON_ARRAY));
    wamp_wr_key(w, "success");
    write_value_or_null(w, part(body, 2, JSON_TRUE));
    wamp_wr_key(w, "duration");
    write_value_or_null(w, part(body, 3, JSON_REAL));
    wamp_wr_key(w, "error");
    wamp_wr_str_or_null(w, json_string_value(part(body, 4, JSON_STRING)));
    wamp_wr_key(w, "callee_node");
    wamp_wr_str_or_null(w, json_string_value(part(body, 5, JSON_STRING)));
    wamp_wr_end(w);
    json_decref(body);
}
