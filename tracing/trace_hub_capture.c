/* trace_hub_capture.c: the capture path of the trace hub: matching a message against the traces,
 * building the record (bytes kept, redaction, shared peers and URIs), appending it to in-memory
 * and persisted traces, and the repeats of a fan-out (trace_hub_repeat()). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "trace_hub_int.h"
#include "trace_store_int.h"
#include "trace_strip.h"
#include "wamp_codec.h"
#include "wamp_msg.h"
#include "wamp_types.h"

/* Appends the repeats gathered by trace_hub_repeat(), in one go per trace (one call into the
 * encoder for the whole fan-out instead of one per receiver). Every entry point of the hub but
 * trace_hub_repeat() and trace_hub_is_active() calls it first, so that nothing is recorded, read
 * or stopped between a repeat and its record. */
static __attribute__((noinline)) void rep_flush_gathered(trace_hub *hub);

static inline void rep_flush(trace_hub *hub)
{
    if (hub->pub.rep.n_pend) {
        rep_flush_gathered(hub);
    }
}

static __attribute__((noinline)) void rep_flush_gathered(trace_hub *hub)
{
    trace_peer **pend = hub->pub.rep.pend;
    size_t n = hub->pub.rep.n_pend;
    bool last = hub->rep.pend_last;
    hub->pub.rep.n_pend = 0;
    hub->rep.pend_last = false;
    /* The message went to the fast trace alone, which keeps it in memory (and has no
     * max_records): straight into its store, as trace_append_run_take() would append them. */
    trace_store *st =
            hub->rep.n == 1 && hub->rep.traces[0] == hub->pub.fast ? hub->fast_store : NULL;
    if (st && trace_is_running(hub->pub.fast)) {
        uint8_t flags = hub->rep.rec.flags;
        size_t k = trace_store_append_repeats(st, hub->rep.rec.key, hub->rep.rec.uri,
                                              hub->rep.rec.pc_ns, pend, n, flags,
                                              (uint8_t)(flags | (last ? TRACE_CORR_LAST : 0)));
        if (k == n) {
            return;
        }
        pend += k; /* (the rest as records of their own, below) */
        n -= k;
    }
    size_t nt = hub->rep.n;
    /* The gathered references move into the last trace; the others take their own. */
    for (size_t i = 0; i + 1 < nt; i++) {
        (void)trace_append_run(hub->rep.traces[i], &hub->rep.rec, pend, n, last);
    }
    if (nt) {
        (void)trace_append_run_take(hub->rep.traces[nt - 1], &hub->rep.rec, pend, n, last);
    } else {
        for (size_t i = 0; i < n; i++) {
            trace_peer_unref(&pend[i]);
        }
    }
}

void trace_hub_flush(trace_hub *hub)
{
    rep_flush(hub);
}

/* Forgets the message trace_hub_repeat() would repeat (after appending its repeats). */
static void rep_forget(trace_hub *hub);

static inline void rep_clear(trace_hub *hub)
{
    if (hub->pub.rep.wire || hub->pub.rep.n_pend) {
        rep_forget(hub);
    }
}

static void rep_forget(trace_hub *hub)
{
    rep_flush(hub);
    wamp_buf_unref(&hub->pub.rep.wire);
    trace_str_unref(&hub->rep.uri);
    hub->rep.n = 0;
}

void trace_hub_flush_repeats(trace_hub *hub)
{
    rep_flush(hub);
}

void trace_hub_clear_repeats(trace_hub *hub)
{
    rep_clear(hub);
}

/* --- Capture path ---------------------------------------------------------------------------- */

static bool ser_is_valid(wamp_ser ser)
{
    return ser == WAMP_SER_JSON || ser == WAMP_SER_MSGPACK || ser == WAMP_SER_CBOR;
}

/* The bytes records of this message keep (one new reference, or NULL for none), in in->ser:
 *   - CHALLENGE / AUTHENTICATE: a redacted copy, encoded here (rare messages). The wire bytes
 *     are never kept, whatever happens.
 *   - a received message the router could not decode: decoded as a plain value here (rare) so
 *     that a malformed CHALLENGE/AUTHENTICATE is redacted too; bytes that do not decode at all
 *     are not kept (they could not be rendered anyway).
 *   - tx: a reference on the router's buffer (a store copies a small one, trace_store.h); rx:
 *     NULL with *as_given set: the record borrows the received bytes, which each store copies
 *     into its ring.
 *   - tx dropped before encoding: encoded here (rare), if it can be. */
static wamp_buf *kept_bytes(const trace_ctx *c, const trace_input *in, bool known, wamp_ser *ser,
                            bool *as_given)
{
    *as_given = false;
    *ser = in->ser;
    const void *data = in->wire ? wamp_buf_cdata(in->wire) : in->bytes;
    size_t len = in->wire ? wamp_buf_len(in->wire) : in->len;
    const json_t *msg = in->msg;
    json_t *decoded = NULL;
    wamp_buf *b = NULL;
    if (!msg && data) {
        if (!ser_is_valid(in->ser) ||
            wamp_codec_decode_value(in->ser, data, len, &decoded, NULL, 0) != WAMP_OK) {
            return NULL;
        }
        msg = decoded;
    }
    /* in->msg's code is c->msg_type (trace_hub.h): only a CHALLENGE, an AUTHENTICATE or a
     * message of unknown code needs its JSON looked at, not every message of the capture path. */
    bool may_hold_secret = decoded || c->msg_type == WAMP_MSG_CHALLENGE ||
                           c->msg_type == WAMP_MSG_AUTHENTICATE || !known;
    wamp_ser kept_ser = ser_is_valid(in->ser) ? in->ser : WAMP_SER_JSON;
    if (msg && may_hold_secret && trace_strip_redacted(kept_ser, msg, &b)) {
        *ser = kept_ser;
    } else if (in->wire) {
        /* The buffer is shared and immutable; taking a reference only changes its count. */
        b = wamp_buf_ref((wamp_buf *)(uintptr_t)in->wire);
    } else if (in->bytes) {
        *as_given = in->len > 0 && in->len <= UINT32_MAX;
    } else if (msg && ser_is_valid(in->ser)) {
        if (wamp_codec_encode(in->ser, msg, &b) != WAMP_OK) {
            b = NULL;
        }
    }
    json_decref(decoded);
    return b;
}

static uint32_t clamp32(size_t n)
{
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* A reference on the message's peer info: the caller's, the one cached in its slot (created
 * now on first use), or a new one from the context. NULL on allocation failure. */
static trace_peer *shared_peer(const trace_ctx *c, const trace_input *in)
{
    if (in->peer) {
        return trace_peer_ref(in->peer);
    }
    if (!in->peer_slot) {
        return trace_peer_new(c->session_id, c->realm, c->authid, c->authrole);
    }
    if (!*in->peer_slot) {
        *in->peer_slot = trace_peer_new(c->session_id, c->realm, c->authid, c->authrole);
    }
    return *in->peer_slot ? trace_peer_ref(*in->peer_slot) : NULL;
}

/* The last word of the n bytes at p: their last 8 (overlapping the word before), or fewer
 * zero-extended. */
static inline uint64_t tail8(const char *p, size_t n)
{
    if (n >= 8) {
        return trace_load8(p + n - 8);
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    return w;
}

/* (trace_hub.h) The cached string for uri's text, else a new one that replaces the cache
 * entry. Every action (a PUBLISH, a CALL) needs its URI as a trace_str; made afresh, each was a
 * malloc() and, a whole ring later, a free() of memory long out of cache, for the same few
 * topics and procedures over and over. Hashing the text is cheaper, and records of one URI then
 * share one warm object. NULL on allocation failure. */
trace_str *trace_hub_uri(trace_hub *hub, const char *uri, size_t n)
{
    /* Eight bytes a step, each mixed by a multiply: a byte-wise hash (FNV-1a) was a chain of
     * one multiply per character, about 40 ns for a typical topic. */
    uint64_t h = 0x9e3779b97f4a7c15u ^ n;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        h = (h ^ trace_load8(uri + i)) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    h = (h ^ tail8(uri, n)) * 0xff51afd7ed558ccdu;
    h ^= h >> 29;
    trace_str **e = &hub->uris[h & (HUB_URI_CACHE - 1)];
    if (*e && trace_str_is(*e, uri, n)) {
        return trace_str_ref(*e);
    }
    trace_str *s = trace_str_new(uri);
    if (s) {
        trace_str_unref(e);
        *e = trace_str_ref(s);
    }
    return s;
}

/* Same for the action URI; NULL when the message has none. */
static trace_str *shared_uri(trace_hub *hub, const trace_ctx *c, const trace_input *in)
{
    if (in->uri) {
        return trace_str_ref(in->uri);
    }
    if (!c->uri) {
        return NULL;
    }
    if (!in->uri_slot) {
        return trace_hub_uri(hub, c->uri, strlen(c->uri));
    }
    if (!*in->uri_slot) {
        *in->uri_slot = trace_hub_uri(hub, c->uri, strlen(c->uri));
    }
    return *in->uri_slot ? trace_str_ref(*in->uri_slot) : NULL;
}

/* The correlation flags of a record of in (TRACE_CORR_*). */
static uint8_t corr_flags(const trace_input *in)
{
    return in->correlation ? (uint8_t)(TRACE_CORR_HAS |
                                       (in->correlation_is_anchor ? TRACE_CORR_ANCHOR : 0) |
                                       (in->correlation_is_last ? TRACE_CORR_LAST : 0))
                           : 0;
}

/* The bytes per serializer a record of in reports: in's, or, when it gives none, the length of
 * its bytes in their serializer. Inline: a call cost more than its work. */
static inline __attribute__((always_inline)) void wire_sizes(const trace_input *in,
                                                             uint32_t out[WAMP_SER_COUNT])
{
    if (in->ser_bytes[0] | in->ser_bytes[1] | in->ser_bytes[2] | in->ser_bytes[3]) {
        for (size_t i = 0; i < WAMP_SER_COUNT; i++) {
            out[i] = clamp32(in->ser_bytes[i]);
        }
        return;
    }
    /* None given (every received message): its bytes' length in its serializer. */
    memset(out, 0, WAMP_SER_COUNT * sizeof(out[0]));
    if (ser_is_valid(in->ser) && (in->wire || in->bytes)) {
        out[in->ser] = clamp32(in->wire ? wamp_buf_len(in->wire) : in->len);
    }
}

/* The record every matching trace gets a copy of (each copy holds its own references); known:
 * whether c->msg_type is a WAMP code this library knows. */
static void build_record(trace_hub *hub, const trace_ctx *c, const trace_input *in, bool known,
                         trace_record *r)
{
    /* Copied from a zero struct, not memset() (nor a compound literal): GCC turns those into a
     * `rep stos`, whose start-up cost showed in capture profiles; the copy is a few vector moves.
     */
    static const trace_record zero;
    *r = zero;
    r->pc_ns = in->pc_ns;
    r->ts_ns = in->ts_ns;
    r->dir = (uint8_t)c->direction;
    r->msg_type = (uint8_t)(known ? c->msg_type : 0);
    r->peer = shared_peer(c, in);
    r->uri = shared_uri(hub, c, in);
    if (in->correlation) {
        memcpy(r->corr, in->correlation, TRACE_UUID_LEN);
    }
    r->flags = corr_flags(in);
    wire_sizes(in, r->ser_bytes);
    wamp_ser ser;
    bool as_given;
    r->wire = kept_bytes(c, in, known, &ser, &as_given);
    if (as_given) {
        r->bytes = in->bytes;
        r->len = (uint32_t)in->len;
    }
    r->wire_ser = (uint8_t)(r->wire || as_given ? ser : 0);
    r->dropped = in->dropped;
}

uint64_t trace_hub_match_gen(const trace_hub *hub)
{
    return hub->match_gen;
}

/* What every message starts with, matched or on the fast path: the repeats gathered appended,
 * a new match generation, no hits. */
static inline void match_begin(trace_hub *hub)
{
    rep_flush(hub);
    hub->match_gen++;
    hub->n_hits = 0;
    hub->n_action_hits = 0;
}

/* Whether t keeps the message of ctx (mgmt: it is of the management realm). A trace that keeps
 * everything (the usual "capture all" trace, the flight recorder) is tested here, inline:
 * running, and the message not on the management realm (its filter's one exclusion, the hub's
 * realm, tested once per message). */
static inline bool keeps(const trace *t, const trace_ctx *ctx, bool mgmt)
{
    return trace_keeps_all(t) ? trace_is_running(t) && !mgmt : trace_matches(t, ctx);
}

size_t trace_hub_match(trace_hub *hub, const trace_ctx *ctx)
{
    match_begin(hub);
    if (!hub->pub.running) {
        return 0;
    }
    bool mgmt = trace_is_mgmt_realm(hub->mgmt_realm, ctx->realm);
    /* Filters first: nothing is allocated, referenced or copied for a rejected message. */
    for (size_t i = 0; i < hub->n; i++) {
        trace *t = hub->traces[i];
        if (!trace_is_fed(t) && keeps(t, ctx, mgmt)) { /* (a fed trace: trace_hub_feed()) */
            hub->n_action_hits += !trace_keeps_all(t) && trace_get_action(t) != NULL;
            hub->hits[hub->n_hits++] = t;
        }
    }
    return hub->n_hits;
}

size_t trace_hub_feed(trace_hub *hub, trace *t, const trace_ctx *ctx, const trace_input *in)
{
    match_begin(hub);
    if (!keeps(t, ctx, trace_is_mgmt_realm(hub->mgmt_realm, ctx->realm))) {
        return 0;
    }
    hub->n_action_hits = trace_get_action(t) != NULL;
    hub->hits[hub->n_hits++] = t;
    return trace_hub_record_matched(hub, ctx, in);
}

size_t trace_hub_on_message(trace_hub *hub, const trace_ctx *ctx, const trace_input *in)
{
    if (trace_hub_match(hub, ctx) == 0) {
        return 0;
    }
    return trace_hub_record_matched(hub, ctx, in);
}

/* The error URI of an ERROR (element 4) or ABORT (element 2), borrowed from in->msg; NULL for
 * other messages, or when the message could not be decoded. */
static const char *error_uri(const trace_ctx *ctx, const trace_input *in)
{
    if (ctx->msg_type == WAMP_MSG_ERROR) {
        return json_string_value(json_array_get(in->msg, 4));
    }
    if (ctx->msg_type == WAMP_MSG_ABORT) {
        return json_string_value(json_array_get(in->msg, 2));
    }
    return NULL;
}

/* Offers the message to the action-level traces among the first n hits and compacts the
 * message-level ones to the front; returns how many message-level hits remain. */
static size_t record_actions(trace_hub *hub, size_t n, const trace_ctx *ctx, const trace_input *in)
{
    size_t n_msg = 0;
    trace_peer *peer = NULL;
    trace_str *uri = NULL;
    const char *error = error_uri(ctx, in);
    bool made = false;
    for (size_t i = 0; i < n; i++) {
        trace *t = hub->hits[i];
        if (!trace_get_action(t)) {
            hub->hits[n_msg++] = t;
            continue;
        }
        if (!made) {
            peer = shared_peer(ctx, in);
            uri = shared_uri(hub, ctx, in);
            made = true;
        }
        trace_action_msg m = {
                .corr = in->correlation,
                .anchor = in->correlation_is_anchor,
                .last = in->correlation_is_last,
                .msg_type = ctx->msg_type,
                .pc_ns = in->pc_ns,
                .ts_ns = in->ts_ns,
                .peer = peer,
                .uri = uri,
                .dropped = in->dropped != NULL,
                .error = error,
                .callee_node = in->callee_node,
        };
        (void)trace_on_action_message(t, &m);
    }
    trace_peer_unref(&peer);
    trace_str_unref(&uri);
    return n_msg;
}

/* Whether the bytes a record keeps are the message's own (the router's buffer, or the received
 * bytes): then every trace appends the message straight from the input (view_of(): no
 * trace_record is built). Not for a CHALLENGE, an AUTHENTICATE or a message of unknown code
 * (maybe redacted), a received message that could not be decoded (decoded and checked first) or
 * one dropped before it was encoded (encoded here): kept_bytes() makes those. */
static bool bytes_as_given(const trace_ctx *c, const trace_input *in, bool known)
{
    return (in->wire || (in->bytes && (in->msg || in->bytes_parsed))) && ser_is_valid(in->ser) &&
           c->msg_type != WAMP_MSG_CHALLENGE && c->msg_type != WAMP_MSG_AUTHENTICATE && known;
}

/* The message's record as a view, every part borrowed from the input: no trace_record, no
 * references, no copy of the bytes (a persisted trace's encoder copies them once into its write
 * buffer, an in-memory store into its ring). peer and uri are the shared objects the caller
 * resolved. */
static void view_of(const trace_ctx *c, const trace_input *in, trace_peer *peer, trace_str *uri,
                    trace_rec_view *r)
{
    r->key = 0;
    r->pc_ns = in->pc_ns;
    r->ts_ns = in->ts_ns;
    r->peer = peer;
    r->uri = uri;
    r->dropped = in->dropped;
    r->corr = in->correlation;
    r->flags = corr_flags(in);
    r->wire = in->wire;
    r->bytes = in->wire ? NULL : in->bytes;
    r->len = in->wire ? 0 : in->len;
    r->env = NULL;
    r->env_len = 0;
    r->dir = (uint8_t)c->direction;
    r->msg_type = (uint8_t)c->msg_type;
    r->wire_ser = (uint8_t)in->ser;
    wire_sizes(in, r->ser_bytes);
}

/* Whether the message about to be recorded for n hits, whose bytes the records keep as they are,
 * is kept for trace_hub_repeat(): when the same message sent to another session is certain to go
 * to exactly these traces with only its peer changed: a tx EVENT with a shared buffer,
 * delivered, not the last of its action, and every running trace message-level with a filter
 * blind to the peer (the receivers of one message share its realm, type, URI and action). */
/* Whether a message may be kept for trace_hub_repeat() as far as the message goes: a sent EVENT
 * with a shared buffer, delivered, neither its action's anchor nor its last. Only an EVENT goes
 * to many sessions (a CALL's INVOCATION, even to a shared registration, goes to one): keeping
 * anything else would be work for nothing. */
static inline bool repeatable(int msg_type, int dir, const wamp_buf *wire, const char *dropped,
                              bool anchor, bool last)
{
    return msg_type == WAMP_MSG_EVENT && dir == TRACE_TX && wire && !dropped && !anchor && !last;
}

static bool rep_eligible(const trace_hub *hub, const trace_ctx *ctx, const trace_input *in,
                         size_t n)
{
    /* The caller checked that the records keep the message's own bytes (bytes_as_given()). */
    if (!repeatable(ctx->msg_type, ctx->direction, in->wire, in->dropped, in->correlation_is_anchor,
                    in->correlation_is_last) ||
        n > HUB_REPEAT_TRACES) {
        return false;
    }
    for (size_t i = 0; i < hub->n; i++) {
        const trace *t = hub->traces[i];
        if (trace_is_running(t) && !trace_is_peer_blind(t)) {
            return false;
        }
    }
    return true;
}

/* Keeps the message v for trace_hub_repeat(): its buffer (a reference), its URI (uri_ref, a
 * reference that moves in) and its parts (without a peer) under key; the traces it goes to are
 * noted by the recording paths. */
static void rep_keep_view(trace_hub *hub, const trace_rec_view *v, trace_str *uri_ref, uint64_t key)
{
    hub->pub.rep.wire = wamp_buf_ref((wamp_buf *)(uintptr_t)v->wire);
    hub->pub.rep.pc_ns = v->pc_ns;
    hub->pub.rep.has_corr = (v->flags & TRACE_CORR_HAS) != 0;
    hub->rep.uri = uri_ref;
    hub->rep.rec = *v;
    hub->rep.rec.key = key;
    hub->rep.rec.peer = NULL;
    hub->rep.rec.uri = uri_ref;
    if (v->flags & TRACE_CORR_HAS) {
        memcpy(hub->pub.rep.corr, v->corr, TRACE_UUID_LEN);
        hub->rep.rec.corr = hub->pub.rep.corr;
    }
}

/* Keeps the message for trace_hub_repeat() (rep_eligible()) from the capture input. */
static void rep_keep(trace_hub *hub, const trace_ctx *ctx, const trace_input *in, uint64_t key)
{
    trace_str *uri = shared_uri(hub, ctx, in);
    trace_rec_view v;
    view_of(ctx, in, NULL, uri, &v);
    rep_keep_view(hub, &v, uri, key);
}

void trace_hub_end_repeats(trace_hub *hub, bool last)
{
    if (last) {
        /* The action's last message (the run's last entry says so): nothing follows. */
        hub->rep.pend_last = true;
    }
    rep_flush_gathered(hub); /* (the receiver just gathered at least) */
}

/* Whether a trace among traces[0..n) keeps no payload (trace_keeps_payload()). */
static bool any_without_payload(trace *const *traces, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!trace_keeps_payload(traces[i])) {
            return true;
        }
    }
    return false;
}

/* Makes r's version without payload (r->env: trace_strip.h) in the hub's buffer, valid until the
 * next message is recorded (the repeats of this one are appended before that). false when there
 * is nothing to strip (or no memory for the buffer: the traces then keep the whole message). */
static bool make_env(trace_hub *hub, const trace_ctx *ctx, trace_rec_view *r)
{
    size_t len;
    const void *data = trace_rec_view_data(r, &len);
    wamp_ser ser = (wamp_ser)r->wire_ser;
    size_t n = trace_strip_payload(ser, ctx->msg_type, data, len, hub->strip, hub->strip_cap);
    if (n > hub->strip_cap) {
        unsigned char *b = realloc(hub->strip, n);
        if (!b) {
            return false;
        }
        hub->strip = b;
        hub->strip_cap = n;
        n = trace_strip_payload(ser, ctx->msg_type, data, len, hub->strip, hub->strip_cap);
    }
    if (n == 0) {
        return false;
    }
    r->env = hub->strip;
    r->env_len = n;
    return true;
}

/* Appends the message to the message-level traces among the first n hits straight from the
 * input, as a trace_rec_view (persisted: encoded into the write buffer; in memory: written into
 * the store's entries), under key: 0, or the key of a message rep_keep() kept for repeats, whose
 * parts are taken from there and whose traces are noted there. */
static void record_views(trace_hub *hub, size_t n, const trace_ctx *ctx, const trace_input *in,
                         uint64_t key)
{
    /* References for the duration of the call (a store or an encoder's block takes its own):
     * borrowed when the caller holds one. */
    trace_peer *peer = in->peer ? in->peer : shared_peer(ctx, in);
    trace_str *uri = NULL;
    trace_rec_view r;
    if (key) {
        r = hub->rep.rec; /* its URI is the kept one's reference */
        r.peer = peer;
        memcpy(hub->rep.traces, hub->hits, n * sizeof(*hub->hits));
        hub->rep.n = n;
    } else {
        uri = in->uri ? in->uri : shared_uri(hub, ctx, in);
        view_of(ctx, in, peer, uri, &r);
    }
    size_t len;
    (void)trace_rec_view_data(&r, &len);
    if (len > TRACE_STRIP_MIN && !r.env && any_without_payload(hub->hits, n) &&
        make_env(hub, ctx, &r) && key) {
        hub->rep.rec.env = r.env; /* for the receivers that repeat it */
        hub->rep.rec.env_len = r.env_len;
    }
    for (size_t i = 0; i < n; i++) {
        (void)trace_append_rec(hub->hits[i], &r);
    }
    if (peer != in->peer) {
        trace_peer_unref(&peer);
    }
    if (uri != in->uri) {
        trace_str_unref(&uri);
    }
}

size_t trace_hub_record_matched(trace_hub *hub, const trace_ctx *ctx, const trace_input *in)
{
    size_t n_all = hub->n_hits;
    hub->n_hits = 0;
    if (n_all == 0) {
        return 0;
    }
    rep_clear(hub); /* something else is recorded: what follows repeats it, or nothing */
    size_t n_hits = hub->n_action_hits ? record_actions(hub, n_all, ctx, in) : n_all;
    hub->n_action_hits = 0;
    if (n_hits == 0) {
        return n_all;
    }
    bool known = wamp_msg_type_is_known(ctx->msg_type); /* asked once: a call into wamp/ */
    if (bytes_as_given(ctx, in, known)) {
        /* The common case: every trace appends the message from its parts. */
        uint64_t key = 0;
        if (rep_eligible(hub, ctx, in, n_hits)) {
            /* Kept for the next receivers (trace_hub_repeat()), under a key of its own. */
            key = ++hub->rep.keys;
            rep_keep(hub, ctx, in, key);
        }
        record_views(hub, n_hits, ctx, in, key);
        return n_all;
    }
    trace_record proto;
    build_record(hub, ctx, in, known, &proto);
    for (size_t i = 0; i + 1 < n_hits; i++) {
        trace_record r;
        trace_record_clone(&proto, &r);
        trace_append_take(hub->hits[i], &r);
    }
    /* The last trace takes the prototype's own references. */
    trace_append_take(hub->hits[n_hits - 1], &proto);
    return n_all;
}

/* --- Fast path -------------------------------------------------------------------------------- */

/* Keeps the EVENT v (to go to the fast trace t) for trace_hub_repeat(); returns its key. */
static __attribute__((noinline)) uint64_t fast_keep(trace_hub *hub, trace *t,
                                                    const trace_rec_view *v)
{
    uint64_t key = ++hub->rep.keys;
    rep_keep_view(hub, v, v->uri ? trace_str_ref(v->uri) : NULL, key);
    hub->rep.traces[0] = t;
    hub->rep.n = 1;
    return key;
}

bool trace_hub_is_mgmt_realm(const trace_hub *hub, const char *realm)
{
    return trace_is_mgmt_realm(hub->mgmt_realm, realm);
}

bool trace_hub_record_fast(trace_hub *hub, trace_fast *f)
{
    match_begin(hub);
    trace *t = hub->pub.fast;
    trace_rec_view *v = &f->v;
    size_t len;
    const void *src = trace_rec_view_data(v, &len);
    if (v->msg_type == WAMP_MSG_CHALLENGE || v->msg_type == WAMP_MSG_AUTHENTICATE || len == 0 ||
        (len > TRACE_STRIP_MIN && !trace_keeps_payload(t)) ||
        !ser_is_valid((wamp_ser)v->wire_ser)) {
        return false;
    }
    /* What trace_hub_record_matched() and trace_append_rec() do for a message whose bytes the
     * record keeps as given, going to one trace. */
    rep_clear(hub);
    if (v->wire) {
        v->bytes = NULL;
        v->len = 0;
    }
    if (!(v->ser_bytes[0] | v->ser_bytes[1] | v->ser_bytes[2] | v->ser_bytes[3])) {
        v->ser_bytes[v->wire_ser] = clamp32(len);
    }
    v->env = NULL;
    v->key = 0;
    if (repeatable(v->msg_type, v->dir, v->wire, v->dropped, v->flags & TRACE_CORR_ANCHOR,
                   v->flags & TRACE_CORR_LAST)) {
        v->key = fast_keep(hub, t, v); /* for the next receivers (trace_hub_repeat()) */
    }
    trace_store *st = hub->fast_store;
    if (!st) {
        (void)trace_append_rec(t, v); /* persisted: encoded into its write buffer (an I/O error
                                       * stops it) */
    } else {
        /* The store's steady state inline (trace_store_int.h), the rest out of line. */
        uint64_t seq;
        if (!trace_store_append_steady(st, v, src, len, &seq)) {
            (void)trace_store_append_general(st, v);
        }
    }
    return true;
}
