/* rt_lws_ws.c: the WebSocket of a WAMP listener (STYLE §6), from the opening handshake to the
 * closing one, on the bytes lws's raw-skt role delivers (rt_lws_conn.h).
 *
 * Handshake (rt_lws_ws_upgrade()): a GET with "Upgrade: websocket", "Connection: Upgrade",
 * Host, a valid Sec-WebSocket-Key and Sec-WebSocket-Version 13 (else 400), on a WebSocket path
 * of the listener (else 404; a "websocket" transport serves every path), offering one of the
 * path's WAMP subprotocols in any number of Sec-WebSocket-Protocol fields of any length
 * (rt_subproto_choose() on the joined offer; else 400 naming the supported ones), under the
 * path's options.max_connections (else 503). Each refusal is counted, logged (rate-limited) and
 * recorded as a connection record (rt_router_refused_handshake()). Then the session is attached
 * and the 101 goes out with Sec-WebSocket-Accept.
 *
 * Receive: wamp_ws.h checks every frame (masking, opcodes, control frames, UTF-8 of text,
 * options.max_message_size); a message goes to rt_session_on_message() whole (without a copy
 * when it arrived as one frame in one read). A broken rule closes with wamp_ws's code (1002,
 * 1007, 1009) and a rate-limited log line. PING is answered with PONG. On plain TCP the rest
 * of a large frame is read straight into the reassembly buffer (rx_direct()), not in lws's 4 KiB
 * RAW_RX slices.
 * Send: one lws_write() per WRITEABLE. Small messages (the usual case) are framed together, up
 * to 64 KiB per write (tx_coalesced()): one send() per backlog rather than per message
 * (measured with tests/bench/wamp-bench, JSON, 32-byte payloads: pub/sub to 10 subscribers
 * about 7x the events/s of one message per write). Larger messages are written from their own
 * buffers (tx_large(): on plain TCP the frames of those queued, up to RT_LWS_WS_GATHER, with
 * one sendmsg() (tx_gather()), the rest on later WRITEABLEs, never copied); over
 * RT_LWS_WS_FRAGMENT octets they go out as fragments; one WRITEABLE writes frames while the
 * socket takes them, up to RT_LWS_WS_WRITE_BUDGET octets, so a big message cannot monopolise
 * the loop.
 * Close: our CLOSE goes out after the queue (the core's close: a final ABORT/GOODBYE first) or
 * at once (the adapter's: a broken rule, out of memory), then we wait for the peer's CLOSE at
 * most limits.close_timeout and close the TCP connection; the peer's CLOSE is echoed and the
 * connection closed once the echo is written.
 * Keepalive: with options.auto_ping_interval, a PING every interval (lws_sul timer); a PONG
 * must come within auto_ping_timeout (default: the interval), else the connection is dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libwebsockets.h>

#include "rt_http1.h"
#include "rt_log.h"
#include "rt_lws_conn.h"
#include "rt_lws_peer.h"
#include "rt_router.h"
#include "rt_session.h"
#include "rt_subproto.h"
#include "rt_trace_wire.h"
#include "wamp_buf.h"
#include "wamp_types.h"
#include "wamp_ws.h"

/* Outgoing messages larger than this are sent as several WebSocket frames. */
#define RT_LWS_WS_FRAGMENT ((size_t)64 * 1024)
/* Octets of large messages written to one connection in one WRITEABLE, at most (and more only
 * while the socket takes all): a connection with a backlog of big messages does not wait for a
 * poll round per frame, nor keeps the loop from the others for long. */
#define RT_LWS_WS_WRITE_BUDGET ((size_t)256 * 1024)
/* Direct reads (rx_direct()): from this many octets of a frame still to come, at most this many
 * per read, ... */
#define RT_LWS_WS_DIRECT_MIN ((size_t)8 * 1024)
#define RT_LWS_WS_DIRECT_MAX ((size_t)64 * 1024)
/* ... read ahead with the read that ends a frame (the next frame's header and start), ... */
#define RT_LWS_WS_AHEAD ((size_t)4096)
/* ... and read for one connection in one RAW_RX, at most (and more only by the last read). */
#define RT_LWS_WS_READ_BUDGET ((size_t)256 * 1024)
/* Frames of large messages written with one sendmsg(), at most (tx_gather()). */
#define RT_LWS_WS_GATHER 32
/* Outgoing messages up to this size are framed together into the scratch buffer. */
#define RT_LWS_WS_COALESCE_MAX ((size_t)16 * 1024)
_Static_assert(RT_LWS_WS_COALESCE_MAX + WAMP_WS_HEADER_MAX <= RT_LWS_WS_SCRATCH,
               "a coalesced frame fits the scratch buffer");
/* Octets of a detail (log line, connection record) quoting what the client sent. */
#define RT_LWS_WS_QUOTE_MAX 160
/* Octets of an offer joined on the stack; longer ones are joined on the heap. */
#define RT_LWS_WS_OFFER_STACK 512

/* The wire capture of a WebSocket (rt_trace_wire.h): its frames as read (before they are unmasked
 * in place) and as written, each read and write one chunk; the 101 answer that goes out through
 * conn->out first is no frame (the capture's tx_skip). */
static void wire_rx(rt_lws_conn *c, const void *p, size_t n)
{
    rt_wire_conn_rx(rt_lws_conn_router(c), c->u.ws.wire, p, n);
}

static void wire_tx(rt_lws_conn *c, const void *p, size_t n)
{
    rt_wire_conn_tx(rt_lws_conn_router(c), c->u.ws.wire, p, n);
}

void rt_lws_ws_wire_out(rt_lws_conn *c, const unsigned char *p, size_t n)
{
    if (c->mode == RT_LWS_CONN_WS) {
        wire_tx(c, p, n);
    }
}

static uint64_t sid_of(const rt_lws_conn *c)
{
    return c->u.ws.sess ? rt_session_id(c->u.ws.sess) : 0;
}

static void fill_peer(const rt_lws_conn *c, rt_peer *peer)
{
    memset(peer, 0, sizeof(*peer));
    rt_lws_fill_peer(c->wsi, peer);
    if (!peer->addr[0] && c->lis->cfg->unix_path) {
        snprintf(peer->addr, sizeof(peer->addr), "unix:%s", c->lis->cfg->unix_path);
    }
}

/* --- Close ---------------------------------------------------------------------------------- */

/* limits.close_timeout from now on bounds the close: a peer that never reads, or never answers
 * our CLOSE, is dropped then. */
static __attribute__((noinline, cold)) void close_deadline(rt_lws_conn *c)
{
    if (!*c->lis->tearing_down) {
        rt_lws_close_deadline(c->wsi, rt_lws_conn_router(c));
    }
}

/* Asks for our CLOSE (code, reason): after the queue, or at once; the close timeout bounds the
 * rest. */
static void request_close(rt_lws_conn *c, uint16_t code, const char *reason, bool at_once)
{
    rt_lws_ws_conn *w = &c->u.ws;
    if (w->closing) {
        return;
    }
    w->closing = true;
    w->close_now = at_once;
    w->close_code = code;
    snprintf(w->close_reason, sizeof(w->close_reason), "%s", reason ? reason : "");
    if (!*c->lis->tearing_down) {
        rt_lws_conn_want_write(c);
    }
    close_deadline(c);
}

/* Queues our CLOSE frame. */
static void send_close(rt_lws_conn *c)
{
    rt_lws_ws_conn *w = &c->u.ws;
    uint8_t frame[2 + WAMP_WS_CONTROL_MAX];
    size_t n = wamp_ws_close_frame(frame, w->close_code, w->close_reason);
    w->close_sent = true;
    (void)rt_lws_conn_out(c, frame, n);
    if (w->close_now) {
        /* The adapter's close (a broken rule): no need to wait for the peer. */
        c->close_after_out = true;
    }
}

/* --- Transport ops (core -> adapter): never re-enter the core ------------------------------ */

static void op_want_write(void *tp)
{
    rt_lws_conn_want_write(tp);
}

/* The core's close: after the queue is written, so a final ABORT/GOODBYE goes out first. */
static void op_close(void *tp, uint16_t code, const char *reason)
{
    request_close(tp, code, reason, false);
}

static const rt_transport_ops ws_ops = {
        .want_write = op_want_write,
        .close = op_close,
};

/* --- Keepalive ------------------------------------------------------------------------------ */

static void ping_cb(lws_sorted_usec_list_t *sul);

static void ping_schedule(rt_lws_conn *c, uint32_t ms)
{
    lws_sul_schedule(lws_get_context(c->wsi), 0, &c->timer, ping_cb,
                     (lws_usec_t)ms * LWS_US_PER_MS);
}

static uint32_t ping_timeout_ms(const rt_listener *cfg)
{
    return cfg->auto_ping_timeout_ms ? cfg->auto_ping_timeout_ms : cfg->auto_ping_interval_ms;
}

static void ping_cb(lws_sorted_usec_list_t *sul)
{
    rt_lws_conn *c = lws_container_of(sul, rt_lws_conn, timer);
    rt_lws_ws_conn *w = &c->u.ws;
    if (w->closing) {
        return;
    }
    if (w->ping_out) {
        RT_LOG_DEBUG(sid_of(c), "no PONG within auto_ping_timeout; dropping the connection");
        lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return;
    }
    uint8_t frame[WAMP_WS_HEADER_MAX + 4];
    size_t n = wamp_ws_header(frame, WAMP_WS_OP_PING, true, 4);
    memcpy(frame + n, "wamp", 4);
    if (rt_lws_conn_out(c, frame, n + 4)) {
        w->ping_out = true;
        ping_schedule(c, ping_timeout_ms(w->path->cfg));
    }
}

/* --- Handshake ------------------------------------------------------------------------------ */

/* The serializers the listener's "serializers" enable (one line per configurable serializer). */
static unsigned enabled_sers(const rt_listener *cfg)
{
    return (cfg->ser_json ? RT_SUBPROTO_BIT(WAMP_SER_JSON) : 0u) |
           (cfg->ser_msgpack ? RT_SUBPROTO_BIT(WAMP_SER_MSGPACK) : 0u) |
           (cfg->ser_cbor ? RT_SUBPROTO_BIT(WAMP_SER_CBOR) : 0u);
}

/* Writes s[0..n) into out (len > 4) as printable ASCII for a log line or a record: other octets
 * become '?', and text that does not fit is cut and ends in "...". */
static void quote(const char *s, size_t n, char *out, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    if (k < n) {
        memcpy(out + len - 4, "...", 4);
    } else {
        out[k] = '\0';
    }
}

/* Counts, logs and records a refused handshake, and answers it, with the header fields
 * (rt_lws_conn_refuse_with()). Returns 0. */
static int refuse_with(rt_lws_conn *c, rt_refusal reason, const char *detail, unsigned status,
                       const char *fields, const char *body)
{
    rt_peer peer;
    fill_peer(c, &peer);
    rt_router_refused_handshake(rt_lws_conn_router(c), reason, c->lis->cfg->id, peer.addr, detail);
    rt_lws_conn_refuse_with(c, status, fields, body);
    return 0;
}

static int refuse(rt_lws_conn *c, rt_refusal reason, const char *detail, unsigned status,
                  const char *body)
{
    return refuse_with(c, reason, detail, status, "", body);
}

/* The path's listener holds options.max_connections WebSocket connections already. */
static bool over_cap(const rt_lws_ws_path *wp)
{
    return wp->cfg->max_connections && *wp->conns >= wp->cfg->max_connections;
}

/* Whether the upgrade comes from a web page of another origin (rt_peer.foreign_origin): an
 * Origin header (browsers send one; other clients need not) that is neither "http(s)://" and
 * the request's Host, nor one of wampscope.management.allowed_origins. */
static bool foreign_origin(const rt_config *cfg, const rt_http1_req *req)
{
    const rt_http1_field *o = rt_http1_field_get(req, "Origin");
    if (!o) {
        return false;
    }
    const char *p = o->value.p;
    size_t n = o->value.len;
    for (size_t i = 0; cfg->mgmt_origins && i < json_array_size(cfg->mgmt_origins); i++) {
        const char *a = json_string_value(json_array_get(cfg->mgmt_origins, i));
        if (a && strlen(a) == n && strncasecmp(a, p, n) == 0) {
            return false;
        }
    }
    size_t skip = n > 7 && strncasecmp(p, "http://", 7) == 0    ? 7
                  : n > 8 && strncasecmp(p, "https://", 8) == 0 ? 8
                                                                : 0;
    const rt_http1_field *h = rt_http1_field_get(req, "Host");
    return !skip || !h || h->value.len != n - skip ||
           strncasecmp(p + skip, h->value.p, h->value.len) != 0;
}

/* bad_request()'s answer for a Sec-WebSocket-Version other than 13. */
static const char BAD_VERSION[] = "no valid Sec-WebSocket-Version header (13)";

/* What is wrong with the request as a WebSocket upgrade (RFC 6455 4.2.1), or NULL; *key is
 * the Sec-WebSocket-Key field. */
static const char *bad_request(const rt_http1_req *req, const rt_http1_field **key)
{
    const rt_http1_field *f;
    if (req->method.len != 3 || memcmp(req->method.p, "GET", 3) != 0) {
        return "a WebSocket upgrade must be a GET";
    }
    if (!rt_http1_field_get(req, "Host")) {
        return "no valid Host header";
    }
    *key = rt_http1_field_get(req, "Sec-WebSocket-Key");
    if (!*key || rt_http1_field_count(req, "Sec-WebSocket-Key") != 1 ||
        !wamp_ws_key_valid((*key)->value.p, (*key)->value.len)) {
        return "no valid Sec-WebSocket-Key header";
    }
    f = rt_http1_field_get(req, "Sec-WebSocket-Version");
    if (!f || f->value.len != 2 || memcmp(f->value.p, "13", 2) != 0) {
        return BAD_VERSION;
    }
    if (!rt_http1_has_token(req, "Connection", "upgrade")) {
        return "no \"Connection: Upgrade\" header";
    }
    return NULL;
}

/* The subprotocol for the offer (every Sec-WebSocket-Protocol field joined); false when none
 * of enabled is offered (detail says what was); -1 in *fail when out of memory. */
static bool choose(const rt_http1_req *req, unsigned enabled, wamp_ser *ser, char *detail,
                   size_t detail_len, bool *oom)
{
    char stack[RT_LWS_WS_OFFER_STACK];
    char *offer = stack;
    size_t n = rt_http1_join(req, "Sec-WebSocket-Protocol", stack, sizeof(stack));
    if (n >= sizeof(stack)) {
        offer = malloc(n + 1);
        if (!offer) {
            *oom = true;
            return false;
        }
        (void)rt_http1_join(req, "Sec-WebSocket-Protocol", offer, n + 1);
    }
    bool chosen = rt_subproto_choose(offer, n, enabled, ser);
    if (!chosen) {
        char q[RT_LWS_WS_QUOTE_MAX];
        quote(offer, n, q, sizeof(q));
        snprintf(detail, detail_len, n ? "offered %s" : "no Sec-WebSocket-Protocol", q);
    }
    if (offer != stack) {
        free(offer);
    }
    return chosen;
}

/* Queues the 101 answer accepting the upgrade with ser; returns its length (0: it cannot be). */
static size_t answer_101(rt_lws_conn *c, const char *accept, wamp_ser ser)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                     "Sec-WebSocket-Protocol: %s\r\n\r\n",
                     accept, rt_subproto_name(ser));
    return n > 0 && (size_t)n < sizeof(head) && rt_lws_conn_out(c, head, (size_t)n) ? (size_t)n : 0;
}

int rt_lws_ws_upgrade(rt_lws_conn *c, const rt_http1_req *req)
{
    const rt_lws_ws_listener *lis = c->lis;
    rt_lws_ws_conn *w = &c->u.ws;
    char detail[RT_LWS_WS_QUOTE_MAX + 64];
    const rt_http1_field *key = NULL;
    if (!rt_http1_has_token(req, "Upgrade", "websocket")) {
        return refuse(c, RT_REFUSAL_REQUEST, "Upgrade is not websocket", 400,
                      "only WebSocket upgrades are supported");
    }
    const char *bad = bad_request(req, &key);
    if (bad) {
        /* RFC 6455 4.2.2: a version refused, the versions this server speaks go with it. */
        return refuse_with(c, RT_REFUSAL_REQUEST, bad, 400,
                           bad == BAD_VERSION ? "sec-websocket-version: 13\r\n" : "", bad);
    }
    const rt_lws_ws_path *wp = rt_lws_conn_ws_path(lis, req->path.p, req->path.len);
    if (!wp) {
        char path[RT_LWS_WS_QUOTE_MAX];
        quote(req->path.p, req->path.len, path, sizeof(path));
        snprintf(detail, sizeof(detail), "no WebSocket endpoint on path %s (serves %s)", path,
                 lis->cfg->path ? lis->cfg->path : "none");
        return refuse(c, RT_REFUSAL_PATH, detail, 404, "no WebSocket endpoint on this path");
    }
    wamp_ser ser = WAMP_SER_JSON;
    bool oom = false;
    if (!choose(req, enabled_sers(wp->cfg), &ser, detail, sizeof(detail), &oom)) {
        if (oom) {
            RT_LOG_WARN(0, "cannot read a WebSocket upgrade's subprotocols (out of memory)");
            rt_lws_conn_refuse(c, 503, "try again later");
            return 0;
        }
        char list[64];
        char body[128];
        (void)rt_subproto_list(enabled_sers(wp->cfg), list, sizeof(list));
        snprintf(body, sizeof(body), "This server only speaks WebSocket subprotocols %s", list);
        return refuse(c, RT_REFUSAL_SUBPROTOCOL, detail, 400, body);
    }
    rt_peer peer;
    fill_peer(c, &peer);
    if (over_cap(wp)) {
        /* options.max_connections: refused before the upgrade, as autobahn's server does
         * (maxConnections), so the client sees why and nothing is allocated for it. */
        snprintf(detail, sizeof(detail), "its maximum of %zu connections (options.max_connections)",
                 wp->cfg->max_connections);
        rt_router_refused_connection(rt_lws_conn_router(c), wp->cfg->id, peer.addr, detail);
        rt_lws_conn_refuse(c, 503, "maximum number of connections reached");
        return 0;
    }
    char accept[WAMP_WS_ACCEPT_LEN + 1];
    if (wamp_ws_accept(key->value.p, key->value.len, accept) != WAMP_OK) {
        return refuse(c, RT_REFUSAL_REQUEST, "no valid Sec-WebSocket-Key header", 400,
                      "no valid Sec-WebSocket-Key header");
    }
    peer.listener_id = wp->cfg->id;
    peer.max_message_size = wp->cfg->max_message_size;
    peer.foreign_origin = foreign_origin(rt_router_config(rt_lws_conn_router(c)), req);
    w->path = wp;
    w->text = ser == WAMP_SER_JSON;
    c->mode = RT_LWS_CONN_WS;
    wamp_ws_config wc = {.max_message = wp->cfg->max_message_size};
    wamp_ws_init(&w->ws, &wc);
    (*wp->conns)++;
    w->counted = true;
    size_t head = answer_101(c, accept, ser);
    if (!head) {
        return -1;
    }
    w->sess = rt_router_attach(rt_lws_conn_router(c), &ws_ops, c, ser, &peer);
    if (!w->sess) {
        RT_LOG_INFO(0, "connection from %s refused (shutting down or out of memory)", peer.addr);
        request_close(c, WAMP_WS_CLOSE_GOING_AWAY, "unavailable", true);
        return 0;
    }
    w->wire = rt_wire_conn_start(rt_lws_conn_router(c), w->sess, TRACE_WIRE_WEBSOCKET, ser, head);
    if (wp->cfg->auto_ping_interval_ms) {
        ping_schedule(c, wp->cfg->auto_ping_interval_ms);
    }
    return 0;
}

/* --- Receive -------------------------------------------------------------------------------- */

static inline __attribute__((always_inline)) void deliver(rt_lws_conn *c, const wamp_ws_event *ev)
{
    rt_lws_ws_conn *w = &c->u.ws;
    if (!w->sess || w->closing) {
        return; /* closing (asked by the core, or by us): input is ignored */
    }
    if (ev->binary == w->text) {
        /* WAMP spec, "WebSocket Transport": wamp.2.json travels in text messages, binary
         * serializers in binary ones. Answered like any other protocol violation. */
        rt_session_protocol_violation(w->sess, w->text ? "binary WebSocket message on a "
                                                         "wamp.2.json connection"
                                                       : "text WebSocket message on a "
                                                         "binary-serializer connection");
        return;
    }
    wamp_err err = rt_session_on_message(w->sess, ev->data, ev->len);
    if (err != WAMP_OK) {
        RT_LOG_WARN(sid_of(c), "cannot handle message: %s; closing with 1011", wamp_strerror(err));
        request_close(c, WAMP_WS_CLOSE_INTERNAL, "internal error", true);
    }
}

/* The peer broke a rule of RFC 6455 (ev->code, ev->why). */
static void broken(rt_lws_conn *c, const wamp_ws_event *ev)
{
    rt_peer peer;
    fill_peer(c, &peer);
    if (ev->code == WAMP_WS_CLOSE_TOO_BIG) {
        rt_router_incoming_too_big(rt_lws_conn_router(c));
    }
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_lws_conn_now_us(c),
                     "WebSocket protocol error", sid_of(c),
                     "WebSocket peer %s: %s; closing with %u", peer.addr[0] ? peer.addr : "?",
                     ev->why ? ev->why : "protocol error", ev->code);
    request_close(c, ev->code, ev->why, true);
}

static void pong(rt_lws_conn *c, const wamp_ws_event *ev)
{
    uint8_t frame[WAMP_WS_HEADER_MAX + WAMP_WS_CONTROL_MAX];
    size_t n = wamp_ws_header(frame, WAMP_WS_OP_PONG, true, ev->len);
    if (ev->len) {
        memcpy(frame + n, ev->data, ev->len);
    }
    (void)rt_lws_conn_out(c, frame, n + ev->len);
}

/* The peer's CLOSE. Returns -1 to close the TCP connection now. */
static __attribute__((noinline, cold)) int peer_close(rt_lws_conn *c, const wamp_ws_event *ev)
{
    rt_lws_ws_conn *w = &c->u.ws;
    w->peer_closed = true;
    if (w->close_sent) {
        return -1; /* the closing handshake is complete */
    }
    /* Echo the code (RFC 6455 5.5.1), then close once the echo is written. */
    w->closing = true;
    w->close_now = true;
    w->close_code = ev->code == WAMP_WS_CLOSE_NO_STATUS ? 0 : ev->code;
    w->close_reason[0] = '\0';
    send_close(c);
    c->close_after_out = true;
    /* A peer that sent its CLOSE and reads no more would hold the connection (and its
     * session's queue) for good: the close timeout bounds the echo too. */
    close_deadline(c);
    return 0;
}

/* What a wamp_ws_feed() or wamp_ws_rx_commit() result asks for. Returns -1 to close at once, 1
 * when nothing more is to be read, 0 to go on. Inline, with deliver(), in both readers: it runs
 * for every message (out of line, the two cost some 10 instructions a message). */
static inline __attribute__((always_inline)) int on_parsed(rt_lws_conn *c, wamp_err err,
                                                           const wamp_ws_event *ev)
{
    rt_lws_ws_conn *w = &c->u.ws;
    switch (err) {
    case WAMP_OK:
        break;
    case WAMP_EAGAIN:
        return 0;
    case WAMP_ECLOSED:
        return 1;
    case WAMP_EPROTO:
        broken(c, ev);
        return 1;
    default:
        RT_LOG_WARN(sid_of(c), "cannot buffer a WebSocket message: %s; closing with 1011",
                    wamp_strerror(err));
        request_close(c, WAMP_WS_CLOSE_INTERNAL, "internal error", true);
        return 1;
    }
    switch (ev->kind) {
    case WAMP_WS_EV_MESSAGE:
        deliver(c, ev);
        break;
    case WAMP_WS_EV_PING:
        pong(c, ev);
        break;
    case WAMP_WS_EV_PONG:
        if (w->ping_out) {
            w->ping_out = false;
            ping_schedule(c, w->path->cfg->auto_ping_interval_ms);
        }
        break;
    case WAMP_WS_EV_CLOSE:
        return peer_close(c, ev) < 0 ? -1 : 1;
    }
    return 0;
}

/* Input is still wanted: not failed, not answered the peer's CLOSE, not closing. */
static bool reading(const rt_lws_conn *c)
{
    return !c->u.ws.close_now && !c->close_after_out;
}

/* Feeds in[0..len) to the parser and acts on every event. Returns -1 to close at once, 1 when
 * nothing more is to be read, 0 when all of it is used. */
static int rx_slice(rt_lws_conn *c, unsigned char *in, size_t len)
{
    rt_lws_ws_conn *w = &c->u.ws;
    if (reading(c)) {
        wire_rx(c, in, len); /* as read: the parser unmasks in place */
    }
    while (len) {
        if (!reading(c)) {
            return 1; /* failed, or the peer's CLOSE is answered: nothing more is read */
        }
        size_t used = 0;
        wamp_ws_event ev;
        memset(&ev, 0, sizeof(ev));
        wamp_err err = wamp_ws_feed(&w->ws, in, len, &used, &ev);
        in += used;
        len -= used;
        int r = on_parsed(c, err, &ev);
        if (r != 0) {
            return r;
        }
    }
    return 0;
}

/* Large frames read straight from the socket: inside a data frame with at least
 * RT_LWS_WS_DIRECT_MIN octets of it still to come, the rest goes into the reassembly buffer
 * (RT_LWS_WS_DIRECT_MAX octets per read) and, with the read that ends the frame, up to
 * RT_LWS_WS_AHEAD octets of what follows into a buffer on the stack, which is then parsed as
 * usual: one readv() per message when large messages follow each other, instead of lws's 4 KiB
 * RAW_RX slices (a system call and a poll round each). Goes on while the socket fills every
 * read and a large frame is open, up to RT_LWS_WS_READ_BUDGET octets (the other connections'
 * turn). Returns -1 to close at once. */
static int rx_direct(rt_lws_conn *c)
{
    rt_lws_ws_conn *w = &c->u.ws;
    unsigned char ahead[RT_LWS_WS_AHEAD];
    size_t budget = RT_LWS_WS_READ_BUDGET;
    if (w->closing || !rt_lws_conn_can_recv(c->wsi)) {
        return 0;
    }
    for (;;) {
        size_t room = 0;
        unsigned char *p = wamp_ws_rx_space(&w->ws, RT_LWS_WS_DIRECT_MAX, &room);
        if (!p || room < RT_LWS_WS_DIRECT_MIN || !reading(c) || w->closing) {
            return 0; /* lws's next read goes on */
        }
        /* room < RT_LWS_WS_DIRECT_MAX: this read can end the frame; then read ahead */
        size_t na = room < RT_LWS_WS_DIRECT_MAX ? sizeof(ahead) : 0;
        size_t n = rt_lws_conn_recv2(c->wsi, p, room, ahead, na);
        if (n == 0) {
            return 0; /* nothing more yet (or the end: lws finds it on its next read) */
        }
        size_t k = n < room ? n : room;
        wire_rx(c, p, k); /* as read, before the commit unmasks them */
        wamp_ws_event ev;
        memset(&ev, 0, sizeof(ev));
        int r = on_parsed(c, wamp_ws_rx_commit(&w->ws, k, &ev), &ev);
        if (r == 0 && n > room) {
            r = rx_slice(c, ahead, n - room);
        }
        if (r != 0 || n < room + na || n >= budget) {
            return r < 0 ? -1 : 0;
        }
        budget -= n;
    }
}

int rt_lws_ws_rx(rt_lws_conn *c, unsigned char *in, size_t len)
{
    rt_router *rt = rt_lws_conn_router(c);
    rt_router_read_begin(rt); /* the messages of this read share a trace clock reading */
    int r = rx_slice(c, in, len);
    if (r == 0) {
        r = rx_direct(c);
    }
    rt_router_read_end(rt);
    return r < 0 ? -1 : 0;
}

/* --- Send ----------------------------------------------------------------------------------- */

/* Small messages: as many whole frames as the scratch buffer takes, framed here, copied and
 * written with one lws_write(), i.e. one send() for a whole backlog instead of one per message.
 * lws buffers what the socket does not take, so the messages can be dropped from the queue as
 * they are copied. */
static int tx_coalesced(rt_lws_conn *c, wamp_buf *b)
{
    rt_lws_ws_conn *w = &c->u.ws;
    unsigned char *out = c->lis->tx_scratch;
    wamp_ws_opcode op = w->text ? WAMP_WS_OP_TEXT : WAMP_WS_OP_BINARY;
    size_t used = 0;
    uint32_t nmsg = 0;
    while (b && wamp_buf_len(b) <= RT_LWS_WS_COALESCE_MAX) {
        size_t n = wamp_buf_len(b);
        if (used + WAMP_WS_HEADER_MAX + n > RT_LWS_WS_SCRATCH) {
            break;
        }
        used += wamp_ws_header(out + used, op, true, n);
        memcpy(out + used, wamp_buf_cdata(b), n);
        used += n;
        nmsg++;
        rt_session_tx_pop(w->sess);
        b = rt_session_tx_peek(w->sess);
    }
    if (rt_lws_conn_write(c, out, used) < 0) {
        RT_LOG_DEBUG(sid_of(c), "write failed; closing");
        return -1;
    }
    rt_wire_conn_tx_whole(rt_lws_conn_router(c), w->wire, out, used, nmsg); /* one a message */
    if (b || w->closing) {
        lws_callback_on_writable(c->wsi);
    }
    return 0;
}

/* The frame of b that starts at off: its header in head, its payload length in *n. */
static size_t frame_at(const rt_lws_ws_conn *w, const wamp_buf *b, size_t off, uint8_t *head,
                       size_t *n)
{
    size_t left = wamp_buf_len(b) - off;
    *n = left > RT_LWS_WS_FRAGMENT ? RT_LWS_WS_FRAGMENT : left;
    wamp_ws_opcode op = off != 0 ? WAMP_WS_OP_CONT : w->text ? WAMP_WS_OP_TEXT : WAMP_WS_OP_BINARY;
    return wamp_ws_header(head, op, *n == left, *n);
}

/* Large messages on plain TCP: the frames of the head message from tx_off on and of the large
 * messages queued after it, RT_LWS_WS_GATHER frames and budget octets at most, written with one
 * sendmsg() straight from their (shared) buffers; the first frame's first tx_part octets went
 * out before. Written messages are dropped from the queue; a frame the socket took in part is
 * left at tx_off/tx_part. Returns the octets written, -1 on a socket error. */
static ssize_t tx_gather(rt_lws_conn *c, size_t budget)
{
    rt_lws_ws_conn *w = &c->u.ws;
    wamp_buf *msgs[RT_LWS_WS_GATHER];
    uint8_t head[RT_LWS_WS_GATHER][WAMP_WS_HEADER_MAX];
    struct iovec iov[2 * RT_LWS_WS_GATHER];
    size_t nm = rt_session_tx_peek_n(w->sess, msgs, RT_LWS_WS_GATHER);
    size_t niov = 0;
    size_t nf = 0;
    size_t total = 0;
    size_t skip = w->tx_part;
    for (size_t m = 0; m < nm && nf < RT_LWS_WS_GATHER && total < budget; m++) {
        size_t off = m == 0 ? w->tx_off : 0;
        if (m > 0 && wamp_buf_len(msgs[m]) <= RT_LWS_WS_COALESCE_MAX) {
            break; /* small ones are framed together by tx_coalesced() */
        }
        while (off < wamp_buf_len(msgs[m]) && nf < RT_LWS_WS_GATHER && total < budget) {
            size_t n;
            size_t h = frame_at(w, msgs[m], off, head[nf], &n);
            size_t hd = skip < h ? skip : h;
            size_t pd = skip - hd;
            if (h > hd) {
                iov[niov++] = (struct iovec){.iov_base = head[nf] + hd, .iov_len = h - hd};
            }
            if (n > pd) {
                iov[niov++] = (struct iovec){.iov_base = wamp_buf_data(msgs[m]) + off + pd,
                                             .iov_len = n - pd};
            }
            total += h + n - skip;
            skip = 0;
            off += n;
            nf++;
        }
    }
    ssize_t r = niov ? rt_lws_conn_sendiov(c->wsi, iov, niov) : 0;
    if (r <= 0) {
        return r;
    }
    for (size_t i = 0, left = (size_t)r; i < niov && left; i++) { /* what went out, in order */
        size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;
        wire_tx(c, iov[i].iov_base, k);
        left -= k;
    }
    /* Step over what went out: whole frames, whole messages, and the part of a frame. */
    size_t done = (size_t)r;
    size_t m = 0;
    while (done > 0) {
        size_t n;
        size_t left = frame_at(w, msgs[m], w->tx_off, head[0], &n) + n - w->tx_part;
        if (done < left) {
            w->tx_part += (uint32_t)done;
            break;
        }
        done -= left;
        w->tx_part = 0;
        w->tx_off += n;
        if (w->tx_off == wamp_buf_len(msgs[m])) {
            w->tx_off = 0;
            rt_session_tx_pop(w->sess);
            m++;
        }
    }
    return r;
}

/* A larger message from its own buffer, RT_LWS_WS_FRAGMENT octets per frame, each frame's
 * header derived from where the frame starts (tx_off). On plain TCP the frames of this and of
 * the large messages after it go out with one sendmsg() straight from their buffers, which other
 * sessions may share (an EVENT is encoded once per serializer) (tx_gather()); what the socket
 * does not take is written from the same buffers on the next WRITEABLE (tx_part counts what of
 * the frame at tx_off went out), so no payload octet is copied on the way out. Otherwise (TLS)
 * one lws_write() of the whole frame, whose header goes in front of the payload: into the
 * headroom for the first frame; for a later one over payload already sent, which other sessions
 * sharing the buffer may still have to send: those octets are saved and restored (lws copies
 * what the socket does not take at once). */
static int tx_large(rt_lws_conn *c, wamp_buf *b)
{
    rt_lws_ws_conn *w = &c->u.ws;
    size_t budget = RT_LWS_WS_WRITE_BUDGET;
    for (;;) {
        if (w->tx_part || rt_lws_conn_can_sendv(c->wsi)) {
            ssize_t r = tx_gather(c, budget);
            if (r < 0) {
                RT_LOG_DEBUG(sid_of(c), "write failed; closing");
                return -1;
            }
            if (r == 0 || w->tx_part) {
                lws_callback_on_writable(c->wsi); /* the socket is full: the rest when it drains */
                return 0;
            }
            budget = budget > (size_t)r ? budget - (size_t)r : 0;
        } else {
            size_t n;
            uint8_t head[WAMP_WS_HEADER_MAX];
            size_t h = frame_at(w, b, w->tx_off, head, &n);
            unsigned char *p = wamp_buf_data(b) + w->tx_off;
            bool first = w->tx_off == 0;
            unsigned char saved[WAMP_WS_HEADER_MAX];
            if (!first) {
                memcpy(saved, p - h, h);
            }
            memcpy(p - h, head, h);
            int r = rt_lws_conn_write(c, p - h, n + h);
            if (r >= 0) {
                wire_tx(c, p - h, n + h); /* (lws keeps what the socket did not take) */
            }
            if (!first) {
                memcpy(p - h, saved, h);
            }
            if (r < 0) {
                RT_LOG_DEBUG(sid_of(c), "write failed; closing");
                return -1;
            }
            budget = 0; /* lws keeps what the socket did not take: one frame per WRITEABLE */
            w->tx_off += n;
            if (w->tx_off == wamp_buf_len(b)) {
                w->tx_off = 0;
                rt_session_tx_pop(w->sess);
            }
        }
        b = rt_session_tx_peek(w->sess);
        /* Go on while the socket takes everything, up to the budget, with large messages only
         * (small ones are framed together on the next WRITEABLE), and not past conn->out. */
        bool out = c->out && wamp_buf_len(c->out);
        if (!b || budget == 0 || out ||
            (w->tx_off == 0 && wamp_buf_len(b) <= RT_LWS_WS_COALESCE_MAX)) {
            if (b || w->closing || out) {
                lws_callback_on_writable(c->wsi);
            }
            return 0;
        }
    }
}

bool rt_lws_ws_mid_frame(const rt_lws_conn *c)
{
    return c->mode == RT_LWS_CONN_WS && c->u.ws.tx_part != 0;
}

int rt_lws_ws_writeable(rt_lws_conn *c)
{
    rt_lws_ws_conn *w = &c->u.ws;
    if (w->tx_part) {
        /* A frame partly written: it is finished before anything else goes out (its session
         * still holds the message: the queue is dropped only at rt_session_on_closed()). */
        wamp_buf *b = w->sess ? rt_session_tx_peek(w->sess) : NULL;
        return b ? tx_large(c, b) : -1;
    }
    if (w->close_sent) {
        return 0; /* waiting for the peer's CLOSE (the close timeout runs) */
    }
    if (w->close_now) {
        send_close(c);
        return 0;
    }
    if (!w->sess) {
        return 0;
    }
    wamp_buf *b = rt_session_tx_peek(w->sess);
    if (!b) {
        if (w->closing) {
            send_close(c);
        }
        return 0;
    }
    if (w->tx_off == 0 && wamp_buf_len(b) <= RT_LWS_WS_COALESCE_MAX) {
        return tx_coalesced(c, b);
    }
    return tx_large(c, b);
}

void rt_lws_ws_closed(rt_lws_conn *c)
{
    rt_lws_ws_conn *w = &c->u.ws;
    lws_sul_cancel(&c->timer);
    rt_session_on_closed(w->sess); /* NULL after a refused attach: a no-op */
    w->sess = NULL;
    if (w->counted) {
        (*w->path->conns)--;
        w->counted = false;
    }
    wamp_ws_fini(&w->ws);
    rt_wire_conn_free(w->wire);
    w->wire = NULL;
}
