/* rt_lws_ws.c: the whole WebSocket adapter (STYLE §6). The pss is allocated, zeroed and freed
 * by lws; it holds a borrowed rt_session pointer between ESTABLISHED and CLOSED.
 *
 * Receive: frames are reassembled into pss->rx (capped at the listener's max_message_size)
 * and handed to rt_session_on_message() whole. A message that arrives in one piece is passed
 * straight from lws's buffer, without a copy.
 * Send: one lws_write() per SERVER_WRITEABLE. Small messages (the usual case) are framed
 * together, up to 64 KiB per write (tx_coalesced()): one send() per backlog rather than per
 * message (measured with tests/bench/wamp-bench, JSON, 32-byte payloads: pub/sub to 10
 * subscribers about 7x the events/s of one message per write, 0.13 instead of 1.22 syscalls
 * per event; 100 calls in flight 3-4x the calls/s). Larger
 * messages are written from their own buffer, the frame header going into the wamp_buf headroom
 * (WAMP_BUF_HEADROOM >= LWS_PRE); over RT_LWS_WS_FRAGMENT bytes they go out as fragments, one
 * per WRITEABLE, so a big message cannot monopolise the loop or lws's send buffer. */
#include "rt_lws_ws.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <libwebsockets.h>

#include "rt_log.h"
#include "rt_router.h"
#include "rt_session.h"
#include "wamp_buf.h"
#include "wamp_types.h"

/* lws writes the frame header into the LWS_PRE bytes before the payload (lws-write.h). */
_Static_assert(WAMP_BUF_HEADROOM >= LWS_PRE, "wamp_buf headroom must hold an lws frame header");

/* Outgoing messages larger than this are sent as several WebSocket frames. */
#define RT_LWS_WS_FRAGMENT ((size_t)64 * 1024)
/* Outgoing messages up to this size are framed together into the scratch buffer (a 16-bit
 * length at most, see tx_coalesced()). */
#define RT_LWS_WS_COALESCE_MAX ((size_t)16 * 1024)
_Static_assert(RT_LWS_WS_COALESCE_MAX <= 65535 && RT_LWS_WS_COALESCE_MAX + 4 <= RT_LWS_WS_SCRATCH,
               "a coalesced frame has a 2- or 4-byte header and fits the scratch buffer");
/* A receive buffer that grew beyond this is freed after delivery, so idle sessions stay small. */
#define RT_LWS_WS_RX_KEEP ((size_t)64 * 1024)
/* Bytes of the close reason kept (RFC 6455 allows 123). */
#define RT_LWS_WS_REASON_MAX 64

typedef struct ws_pss {
    struct lws *wsi;
    rt_session *sess;              /* borrowed; NULL before ESTABLISHED and after CLOSED */
    const rt_lws_ws_listener *lis; /* borrowed vhost user */
    wamp_buf *rx;                  /* owned reassembly buffer, NULL when never used */
    size_t tx_off;                 /* bytes of the head message already written */
    bool text;                     /* JSON: text frames; MessagePack: binary frames */
    bool closing;                  /* a close was requested: input is ignored from now on */
    bool close_now;                /* ... by the adapter: at the next WRITEABLE, queue or not */
    bool close_sent;               /* close_frame() ran: lws owns the close handshake now */
    bool counted;                  /* holds a place in *lis->ws_conns (max_connections) */
    uint16_t close_code;
    char close_reason[RT_LWS_WS_REASON_MAX];
} ws_pss;

static rt_router *router_of(struct lws *wsi)
{
    return lws_context_user(lws_get_context(wsi));
}

static const rt_lws_ws_listener *listener_of(struct lws *wsi)
{
    return lws_get_vhost_user(lws_get_vhost(wsi));
}

static uint64_t sid_of(const ws_pss *pss)
{
    return pss->sess ? rt_session_id(pss->sess) : 0;
}

/* --- Transport ops (core -> adapter): never re-enter the core ------------------------------ */

static void op_want_write(void *tp)
{
    ws_pss *pss = tp;
    if (!*pss->lis->tearing_down) {
        lws_callback_on_writable(pss->wsi);
    }
}

/* Every close is performed from SERVER_WRITEABLE (close_frame()), also the adapter's own (too
 * big, out of memory, refused attach). Returning -1 from RECEIVE would be simpler, but lws 4.1.6
 * then goes on parsing the rest of its read buffer in a broken state ("illegal opcode") and
 * drops the connection without sending the close frame. */
static void request_close(ws_pss *pss, uint16_t code, const char *reason, bool at_once)
{
    if (pss->closing) {
        return;
    }
    pss->closing = true;
    pss->close_now = at_once;
    pss->close_code = code;
    snprintf(pss->close_reason, sizeof(pss->close_reason), "%s", reason ? reason : "");
    /* pss->rx stays: this may run inside rt_session_on_message(), which borrows it. */
    if (!*pss->lis->tearing_down) {
        lws_callback_on_writable(pss->wsi);
        /* A peer that never reads never lets the queue and the close frame out: lws drops the
         * connection when limits.close_timeout runs out. */
        uint32_t ms = rt_router_config(router_of(pss->wsi))->limits.close_timeout_ms;
        ms = ms ? ms : 5000; /* a zeroed hand-built config */
        lws_set_timeout(pss->wsi, PENDING_TIMEOUT_USER_OK, (int)((ms + 999) / 1000));
    }
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

/* In SERVER_WRITEABLE: sets the close frame's status and reason and returns -1; lws sends the
 * frame, then waits (5 s at most) for the peer's (lws-ws-close.h). Only once: lws may call
 * WRITEABLE again while it awaits the peer's close, and a second -1 then kills the connection
 * at once (an RST if the peer is still sending, which can destroy the close frame in flight). */
static int close_frame(struct lws *wsi, ws_pss *pss)
{
    pss->close_sent = true;
    lws_close_reason(wsi, (enum lws_close_status)pss->close_code,
                     (unsigned char *)pss->close_reason, strlen(pss->close_reason));
    return -1;
}

/* --- Handshake ------------------------------------------------------------------------------ */

/* The request path (without the query string, which lws keeps apart) equals the listener's. */
static bool path_matches(struct lws *wsi, const char *path)
{
    char uri[256];
    int n = lws_hdr_copy(wsi, uri, (int)sizeof(uri), WSI_TOKEN_GET_URI);
    return n > 0 && strcmp(uri, path ? path : "/") == 0;
}

/* Mirrors lws's own choice (server-ws.c: the first offered name that is a protocol of the
 * vhost wins) and says whether that choice is one of our WAMP subprotocols. */
static bool offers_wamp(struct lws *wsi)
{
    char list[256];
    int n = lws_hdr_copy(wsi, list, (int)sizeof(list), WSI_TOKEN_PROTOCOL);
    if (n <= 0) {
        return false;
    }
    char *save = NULL;
    for (char *tok = strtok_r(list, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        const struct lws_protocols *p = lws_vhost_name_to_protocol(lws_get_vhost(wsi), tok);
        if (p) {
            return p->id == WAMP_SER_JSON || p->id == WAMP_SER_MSGPACK || p->id == WAMP_SER_CBOR;
        }
    }
    return false;
}

static void peer_name(struct lws *wsi, char *buf, size_t len)
{
    if (lws_get_peer_simple(wsi, buf, len) == NULL) {
        snprintf(buf, len, "?");
    }
}

/* Answers an HTTP request with status code and a one-line body. Returns what an lws HTTP
 * callback returns next: <0 on write failure. */
static int http_refuse(struct lws *wsi, unsigned int code, const char *why)
{
    char peer[64];
    peer_name(wsi, peer, sizeof(peer));
    RT_LOG_DEBUG(0, "HTTP request from %s refused with %u: %s", peer, code, why);
    return lws_return_http_status(wsi, code, why) ? -1 : 0;
}

/* Answers a refused upgrade and hangs up. Written by hand: at HTTP_CONFIRM_UPGRADE lws has not
 * parsed the request's HTTP version yet, so lws_return_http_status() would answer "HTTP/1.0",
 * which WebSocket clients reject as a protocol error instead of reporting the status. */
static int upgrade_refuse(struct lws *wsi, unsigned int code, const char *status, const char *why)
{
    unsigned char buf[LWS_PRE + 384];
    char *p = (char *)buf + LWS_PRE;
    size_t room = sizeof(buf) - LWS_PRE;
    char peer[64];
    peer_name(wsi, peer, sizeof(peer));
    RT_LOG_DEBUG(0, "WebSocket upgrade from %s refused with %u: %s", peer, code, why);
    int n = snprintf(p, room,
                     "HTTP/1.1 %u %s\r\ncontent-type: text/plain\r\ncontent-length: %zu\r\n"
                     "connection: close\r\n\r\n%s\n",
                     code, status, strlen(why) + 1, why);
    if (n > 0 && (size_t)n < room) {
        (void)lws_write(wsi, (unsigned char *)p, (size_t)n, LWS_WRITE_HTTP);
    }
    return -1;
}

/* The listener holds options.max_connections WebSocket connections already. */
static bool over_cap(const rt_lws_ws_listener *lis)
{
    return lis->cfg->max_connections && *lis->ws_conns >= lis->cfg->max_connections;
}

/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: the headers are still available, so a bad upgrade gets an
 * HTTP answer (404 wrong path, 400 no WAMP subprotocol) instead of a bare disconnect. Returns
 * 0 to proceed, -1 to hang up (after answering). */
static int confirm_upgrade(struct lws *wsi, const char *upgrade)
{
    const rt_lws_ws_listener *lis = listener_of(wsi);
    if (!upgrade || strcasecmp(upgrade, "websocket") != 0) {
        return upgrade_refuse(wsi, 400, "Bad Request", "only WebSocket upgrades are supported");
    }
    if (!path_matches(wsi, lis->cfg->path)) {
        return upgrade_refuse(wsi, 404, "Not Found", "no WebSocket endpoint on this path");
    }
    if (!offers_wamp(wsi)) {
        return upgrade_refuse(wsi, 400, "Bad Request",
                              "WAMP needs the WebSocket subprotocol wamp.2.json or "
                              "wamp.2.msgpack");
    }
    if (over_cap(lis)) {
        /* options.max_connections: refused before the upgrade, as autobahn's server does
         * (maxConnections), so the client sees why (an HTTP status, no WebSocket, no session)
         * and nothing is allocated for it. */
        char peer[64];
        peer_name(wsi, peer, sizeof(peer));
        char why[96];
        snprintf(why, sizeof(why), "its maximum of %zu connections (options.max_connections)",
                 lis->cfg->max_connections);
        rt_router_refused_connection(router_of(wsi), lis->cfg->id, peer, why);
        return upgrade_refuse(wsi, 503, "Service Unavailable",
                              "maximum number of connections reached");
    }
    return 0;
}

/* protocols[0]: everything that did not negotiate a WAMP subprotocol ends up here. */
static int http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                   size_t len)
{
    switch (reason) {
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return confirm_upgrade(wsi, in);
    case LWS_CALLBACK_HTTP: {
        /* Plain HTTP: this is a WebSocket-only endpoint. Answer, then finish the transaction
         * (lws keeps or closes the connection per HTTP keep-alive). */
        const rt_lws_ws_listener *lis = listener_of(wsi);
        bool on_path = in && lis->cfg->path && strcmp(in, lis->cfg->path) == 0;
        int r = on_path ? http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
                                      "this is a WAMP WebSocket endpoint")
                        : http_refuse(wsi, HTTP_STATUS_NOT_FOUND, "not found");
        if (r < 0 || lws_http_transaction_completed(wsi)) {
            return -1;
        }
        return 0;
    }
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        /* A WebSocket bound to "http": the client offered no WAMP subprotocol (or offered
         * "http"). WAMP requires one (spec "WebSocket Transport"). */
        return 1;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

/* --- Connection life cycle ------------------------------------------------------------------ */

void rt_lws_fill_peer(struct lws *wsi, rt_peer *peer)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char ip[INET6_ADDRSTRLEN];
    memset(&ss, 0, sizeof(ss));
    if (getpeername(lws_get_socket_fd(wsi), (struct sockaddr *)&ss, &sl) != 0) {
        return;
    }
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        const unsigned char *b = (const unsigned char *)&a->sin_addr;
        if (inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip))) {
            snprintf(peer->addr, sizeof(peer->addr), "%s:%u", ip, ntohs(a->sin_port));
        }
        peer->is_loopback = b[0] == 127;
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        const unsigned char *b = a->sin6_addr.s6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
            /* An IPv4 client on a dual-stack socket: show it as IPv4. */
            if (inet_ntop(AF_INET, b + 12, ip, sizeof(ip))) {
                snprintf(peer->addr, sizeof(peer->addr), "%s:%u", ip, ntohs(a->sin6_port));
            }
            peer->is_loopback = b[12] == 127;
        } else {
            if (inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip))) {
                snprintf(peer->addr, sizeof(peer->addr), "[%s]:%u", ip, ntohs(a->sin6_port));
            }
            peer->is_loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
        }
    }
}

static int on_established(struct lws *wsi, ws_pss *pss)
{
    pss->wsi = wsi;
    pss->lis = listener_of(wsi);
    /* The matched subprotocol's id is the serializer (rt_lws_ws_protocols). */
    wamp_ser ser = (wamp_ser)lws_get_protocol(wsi)->id;
    pss->text = ser == WAMP_SER_JSON;
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(wsi, &peer);
    peer.listener_id = pss->lis->cfg->id;
    peer.max_message_size = pss->lis->cfg->max_message_size;
    if (over_cap(pss->lis)) {
        /* Upgrades that passed confirm_upgrade() together: close 1013 "try again later". */
        char why[96];
        snprintf(why, sizeof(why), "its maximum of %zu connections (options.max_connections)",
                 pss->lis->cfg->max_connections);
        rt_router_refused_connection(router_of(wsi), peer.listener_id, peer.addr, why);
        request_close(pss, 1013 /* RFC 6455 registry: Try Again Later */,
                      "maximum connection count reached", true);
        return 0;
    }
    (*pss->lis->ws_conns)++;
    pss->counted = true;
    pss->sess = rt_router_attach(router_of(wsi), &ws_ops, pss, ser, &peer);
    if (!pss->sess) {
        RT_LOG_INFO(0, "connection from %s refused (shutting down or out of memory)", peer.addr);
        request_close(pss, LWS_CLOSE_STATUS_GOINGAWAY, "unavailable", true);
    }
    return 0;
}

static void on_closed(ws_pss *pss)
{
    /* Also reached after a refused attach (sess NULL: a no-op). */
    rt_session_on_closed(pss->sess);
    pss->sess = NULL;
    if (pss->counted) {
        (*pss->lis->ws_conns)--;
        pss->counted = false;
    }
    wamp_buf_unref(&pss->rx);
}

/* --- Receive -------------------------------------------------------------------------------- */

static void deliver(ws_pss *pss, const void *data, size_t len)
{
    wamp_err err = rt_session_on_message(pss->sess, data, len);
    if (err != WAMP_OK) {
        RT_LOG_WARN(sid_of(pss), "cannot handle message: %s; closing with 1011",
                    wamp_strerror(err));
        request_close(pss, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "internal error", true);
    }
}

static void too_big(ws_pss *pss, size_t max)
{
    rt_router_incoming_too_big(router_of(pss->wsi));
    RT_LOG_INFO(sid_of(pss), "message of more than %zu bytes, closing with 1009", max);
    wamp_buf_unref(&pss->rx);
    request_close(pss, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "message too big", true);
}

/* One RECEIVE chunk: a whole frame or part of one; last = the message is complete. Text and
 * binary frames are both accepted whatever the subprotocol: the decoder judges the bytes. */
static void rx_chunk(ws_pss *pss, const void *in, size_t len, bool last)
{
    if (!pss->sess || pss->closing) {
        /* Closing (asked by the core, or by us): input is ignored. */
        wamp_buf_unref(&pss->rx);
        return;
    }
    size_t max = pss->lis->cfg->max_message_size ? pss->lis->cfg->max_message_size : SIZE_MAX;
    size_t have = pss->rx ? wamp_buf_len(pss->rx) : 0;
    if (last && have == 0) {
        /* The whole message in one chunk: deliver lws's buffer as is. */
        if (len > max) {
            too_big(pss, max);
        } else {
            deliver(pss, in, len);
        }
        return;
    }
    wamp_err err = wamp_buf_append(&pss->rx, in, len, max);
    if (err == WAMP_ETOOBIG) {
        too_big(pss, max);
        return;
    }
    if (err != WAMP_OK) {
        RT_LOG_WARN(sid_of(pss), "cannot buffer message: %s; closing with 1011",
                    wamp_strerror(err));
        request_close(pss, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "internal error", true);
        return;
    }
    if (!last) {
        return;
    }
    size_t n = wamp_buf_len(pss->rx);
    deliver(pss, wamp_buf_cdata(pss->rx), n);
    if (n > RT_LWS_WS_RX_KEEP) {
        wamp_buf_unref(&pss->rx);
    } else {
        wamp_buf_clear(pss->rx);
    }
}

/* --- Send ----------------------------------------------------------------------------------- */

/* Small messages: as many whole frames as the scratch buffer takes, framed here (RFC 6455
 * 5.2: FIN + opcode, then a 7-bit or 16-bit length; a server never masks), copied and written
 * with one LWS_WRITE_RAW lws_write(), i.e. one send() for a whole backlog instead of one per
 * message. lws sends raw bytes untouched and buffers what the socket does not take, so the
 * messages can be dropped from the queue as they are copied. */
static int tx_coalesced(struct lws *wsi, ws_pss *pss, wamp_buf *b)
{
    unsigned char *out = pss->lis->tx_scratch;
    const unsigned char op = pss->text ? 0x81 : 0x82; /* FIN | text or binary */
    size_t used = 0;
    while (b && wamp_buf_len(b) <= RT_LWS_WS_COALESCE_MAX) {
        size_t n = wamp_buf_len(b);
        if (used + 4 + n > RT_LWS_WS_SCRATCH) {
            break;
        }
        out[used++] = op;
        if (n < 126) {
            out[used++] = (unsigned char)n;
        } else {
            out[used++] = 126;
            out[used++] = (unsigned char)(n >> 8);
            out[used++] = (unsigned char)(n & 0xff);
        }
        memcpy(out + used, wamp_buf_cdata(b), n);
        used += n;
        rt_session_tx_pop(pss->sess);
        b = rt_session_tx_peek(pss->sess);
    }
    int w = lws_write(wsi, out, used, LWS_WRITE_RAW);
    if (w < 0 || (size_t)w < used) {
        RT_LOG_DEBUG(sid_of(pss), "write failed; closing");
        return -1;
    }
    if (b || pss->closing) {
        lws_callback_on_writable(wsi);
    }
    return 0;
}

/* SERVER_WRITEABLE: one lws_write of (part of) the head of the queue, or the close. Returns -1
 * to close. */
static int tx_one(struct lws *wsi, ws_pss *pss)
{
    if (pss->close_sent) {
        return 0;
    }
    if (pss->close_now) {
        return close_frame(wsi, pss);
    }
    if (!pss->sess) {
        return 0;
    }
    wamp_buf *b = rt_session_tx_peek(pss->sess);
    if (!b) {
        return pss->closing ? close_frame(wsi, pss) : 0;
    }
    if (pss->tx_off == 0 && wamp_buf_len(b) <= RT_LWS_WS_COALESCE_MAX) {
        return tx_coalesced(wsi, pss, b);
    }
    /* A larger message goes out from its own buffer, without a copy. */
    unsigned char *p = wamp_buf_data(b) + pss->tx_off;
    size_t left = wamp_buf_len(b) - pss->tx_off;
    size_t n = left > RT_LWS_WS_FRAGMENT ? RT_LWS_WS_FRAGMENT : left;
    bool first = pss->tx_off == 0;
    bool fin = n == left;
    int flags = lws_write_ws_flags(pss->text ? LWS_WRITE_TEXT : LWS_WRITE_BINARY, first, fin);
    /* The first frame's header goes into the headroom. A later fragment's header would
     * overwrite payload that was already sent here but that other sessions sharing this
     * buffer (an EVENT is encoded once per serializer) may still have to send: save and
     * restore those bytes. lws copies whatever the socket does not take at once. */
    unsigned char saved[LWS_PRE];
    if (!first) {
        memcpy(saved, p - LWS_PRE, LWS_PRE);
    }
    int w = lws_write(wsi, p, n, (enum lws_write_protocol)flags);
    if (!first) {
        memcpy(p - LWS_PRE, saved, LWS_PRE);
    }
    if (w < 0 || (size_t)w < n) {
        RT_LOG_DEBUG(sid_of(pss), "write failed; closing");
        return -1;
    }
    if (!fin) {
        pss->tx_off += n;
        lws_callback_on_writable(wsi);
        return 0;
    }
    pss->tx_off = 0;
    rt_session_tx_pop(pss->sess);
    if (pss->closing || rt_session_tx_peek(pss->sess)) {
        lws_callback_on_writable(wsi);
    }
    return 0;
}

/* --- The WAMP subprotocols ------------------------------------------------------------------ */

static int ws_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                 size_t len)
{
    ws_pss *pss = user;

    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        /* Second line of defence behind confirm_upgrade(): the GET URI must be the path. */
        return path_matches(wsi, listener_of(wsi)->cfg->path) ? 0 : 1;
    case LWS_CALLBACK_ESTABLISHED:
        return on_established(wsi, pss);
    case LWS_CALLBACK_RECEIVE:
        rx_chunk(pss, in, len, lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi));
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return tx_one(wsi, pss);
    case LWS_CALLBACK_CLOSED:
        on_closed(pss);
        return 0;
    default:
        return 0;
    }
}

size_t rt_lws_ws_protocols(const rt_listener *cfg, struct lws_protocols *out)
{
    size_t i = 0;
    size_t n_wamp = 0;
    memset(out, 0, RT_LWS_WS_PROTOCOLS_MAX * sizeof(*out));
    out[i].name = "http";
    out[i].callback = http_cb;
    i++;
    if (cfg->ser_json) {
        out[i].name = WAMP_SUBPROTOCOL_JSON;
        out[i].callback = ws_cb;
        out[i].per_session_data_size = sizeof(ws_pss);
        out[i].id = WAMP_SER_JSON;
        i++;
        n_wamp++;
    }
    if (cfg->ser_msgpack) {
        out[i].name = WAMP_SUBPROTOCOL_MSGPACK;
        out[i].callback = ws_cb;
        out[i].per_session_data_size = sizeof(ws_pss);
        out[i].id = WAMP_SER_MSGPACK;
        i++;
        n_wamp++;
    }
    if (cfg->ser_cbor) {
        out[i].name = WAMP_SUBPROTOCOL_CBOR;
        out[i].callback = ws_cb;
        out[i].per_session_data_size = sizeof(ws_pss);
        out[i].id = WAMP_SER_CBOR;
        i++;
        n_wamp++;
    }
    /* out[i] stays zeroed: the terminator. */
    return n_wamp;
}
