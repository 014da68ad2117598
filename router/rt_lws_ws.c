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
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "rt_log.h"
#include "rt_lws_peer.h"
#include "rt_lws_web.h"
#include "rt_router.h"
#include "rt_session.h"
#include "rt_subproto.h"
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
    const rt_lws_ws_path *path;    /* borrowed: the WebSocket path (listener) connected to */
    wamp_buf *rx;                  /* owned reassembly buffer, NULL when never used */
    size_t tx_off;                 /* bytes of the head message already written */
    bool text;                     /* JSON: text frames; MessagePack: binary frames */
    bool closing;                  /* a close was requested: input is ignored from now on */
    bool close_now;                /* ... by the adapter: at the next WRITEABLE, queue or not */
    bool close_sent;               /* close_frame() ran: lws owns the close handshake now */
    bool counted;                  /* holds a place in *path->conns (max_connections) */
    uint16_t close_code;
    char close_reason[RT_LWS_WS_REASON_MAX];
} ws_pss;

static int ws_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                 size_t len);

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

/* lws 4.1 copies Sec-WebSocket-Protocol into a 128-byte buffer to pick the subprotocol
 * (lws_process_ws_upgrade(), roles/ws/server-ws.c) and fails the upgrade without any answer
 * when the value does not fit ("protocol list too long"; autobahn-python offers 137 bytes by
 * default). It also takes the client's first choice, splits tokens by its own rules and fails on
 * a name of 64 bytes or more. So confirm_upgrade() negotiates (rt_subproto.h) and lets lws go on
 * only with an offer lws picks the same subprotocol from; any other is rewritten
 * (rewrite_upgrade()). */
#define RT_LWS_WS_LWS_OFFER_MAX 127 /* bytes: longer offers fail in lws */
#define RT_LWS_WS_LWS_NAME_MAX  63  /* bytes of one name lws can look up */

/* Bytes of the rewritten request (method, path, five headers) and of the headers copied. */
#define RT_LWS_WS_REWRITE_MAX 1024
#define RT_LWS_WS_HOST_MAX    256
#define RT_LWS_WS_KEY_MAX     128 /* lws refuses longer keys (MAX_WEBSOCKET_04_KEY_LEN) */

/* Bytes of a detail (log line, connection record) quoting what the client sent. */
#define RT_LWS_WS_QUOTE_MAX 160

/* The serializers the listener's "serializers" enable (one line per configurable serializer). */
static unsigned enabled_sers(const rt_listener *cfg)
{
    return (cfg->ser_json ? RT_SUBPROTO_BIT(WAMP_SER_JSON) : 0u) |
           (cfg->ser_msgpack ? RT_SUBPROTO_BIT(WAMP_SER_MSGPACK) : 0u) |
           (cfg->ser_cbor ? RT_SUBPROTO_BIT(WAMP_SER_CBOR) : 0u);
}

/* The WebSocket path of lis that the request path (without the query string, which lws keeps
 * apart) names, or NULL; a "websocket" transport serves every path (as Crossbar does). A web
 * transport without a WebSocket path (cfg->path NULL) has none. */
static const rt_lws_ws_path *path_of(struct lws *wsi, const rt_lws_ws_listener *lis)
{
    if (lis->cfg->any_path) {
        return &lis->paths[0];
    }
    char uri[256];
    int n = lws_hdr_copy(wsi, uri, (int)sizeof(uri), WSI_TOKEN_GET_URI);
    for (size_t i = 0; n > 0 && i < lis->n_paths; i++) {
        if (lis->paths[i].cfg->path && strcmp(uri, lis->paths[i].cfg->path) == 0) {
            return &lis->paths[i];
        }
    }
    return NULL;
}

/* in (lws's request path) is one of lis's WebSocket paths. */
static bool is_ws_path(const rt_lws_ws_listener *lis, const char *in)
{
    for (size_t i = 0; in && i < lis->n_paths; i++) {
        if (lis->paths[i].cfg->path && strcmp(in, lis->paths[i].cfg->path) == 0) {
            return true;
        }
    }
    return lis->cfg->any_path;
}

/* Writes s[0..n) into out (len > 4) as printable ASCII for a log line or a record: other bytes
 * become '?', and text that does not fit is cut and ends in "...". */
static void quote(const char *s, size_t n, char *out, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (k < n) {
        memcpy(out + len - 4, "...", 4);
    } else {
        out[k] = '\0';
    }
}

/* Counts, logs and records a refused handshake (rt_router_refused_handshake()). */
static void refused(struct lws *wsi, rt_refusal reason, const char *detail)
{
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(wsi, &peer);
    rt_router_refused_handshake(router_of(wsi), reason, listener_of(wsi)->cfg->id, peer.addr,
                                detail);
}

/* Answers an HTTP request with status code and a one-line body. Returns what an lws HTTP
 * callback returns next: <0 on write failure. */
static int http_refuse(struct lws *wsi, unsigned int code, const char *why)
{
    if (rt_log_get_level() >= RT_LOG_LEVEL_DEBUG) {
        rt_peer peer;
        memset(&peer, 0, sizeof(peer));
        rt_lws_fill_peer(wsi, &peer);
        RT_LOG_DEBUG(0, "HTTP request from %s refused with %u: %s", peer.addr, code, why);
    }
    return lws_return_http_status(wsi, code, why) ? -1 : 0;
}

/* Answers a refused upgrade and hangs up. Written by hand: at HTTP_CONFIRM_UPGRADE lws has not
 * parsed the request's HTTP version yet, so lws_return_http_status() would answer "HTTP/1.0",
 * which WebSocket clients reject as a protocol error instead of reporting the status. */
static int upgrade_refuse(struct lws *wsi, unsigned int code, const char *status, const char *why)
{
    unsigned char buf[LWS_PRE + 512];
    char *p = (char *)buf + LWS_PRE;
    size_t room = sizeof(buf) - LWS_PRE;
    int n = snprintf(p, room,
                     "HTTP/1.1 %u %s\r\ncontent-type: text/plain\r\ncontent-length: %zu\r\n"
                     "connection: close\r\n\r\n%s\n",
                     code, status, strlen(why) + 1, why);
    if (n > 0 && (size_t)n < room) {
        (void)lws_write(wsi, (unsigned char *)p, (size_t)n, LWS_WRITE_HTTP);
    }
    return -1;
}

/* The path's listener holds options.max_connections WebSocket connections already. */
static bool over_cap(const rt_lws_ws_path *wp)
{
    return wp->cfg->max_connections && *wp->conns >= wp->cfg->max_connections;
}

/* What lws will do with the offer: the id (wamp_ser) of the subprotocol it binds, -1 when it
 * binds "http" or another protocol of the vhost or fails (lws_process_ws_upgrade(): the first
 * offered name that is a protocol of the vhost; only names of letters, digits, '.', '-' and '_'
 * are split the same way by lws's tokenizer). */
static int lws_choice(struct lws *wsi, const char *offer, size_t len)
{
    if (len >= RT_LWS_WS_LWS_OFFER_MAX) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)offer[i];
        if (!isalnum(c) && !strchr(".-_, \t", c)) {
            return -1;
        }
    }
    size_t pos = 0;
    const char *tok;
    size_t tok_len;
    while (rt_subproto_next(offer, len, &pos, &tok, &tok_len)) {
        char name[RT_LWS_WS_LWS_NAME_MAX + 1];
        if (tok_len > RT_LWS_WS_LWS_NAME_MAX) {
            return -1;
        }
        memcpy(name, tok, tok_len);
        name[tok_len] = '\0';
        const struct lws_protocols *p = lws_vhost_name_to_protocol(lws_get_vhost(wsi), name);
        if (p) {
            return p->callback == ws_cb ? (int)p->id : -1;
        }
    }
    return -1;
}

/* Copies header h into buf as a plain header value (printable ASCII); false if absent, too
 * long or anything else. */
static bool plain_header(struct lws *wsi, enum lws_token_indexes h, char *buf, size_t len)
{
    int n = lws_hdr_copy(wsi, buf, (int)len, h);
    if (n <= 0) {
        return false;
    }
    for (int i = 0; i < n; i++) {
        if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f) {
            return false;
        }
    }
    return true;
}

/* true if the Connection header lists the token "upgrade" (RFC 7230 6.1; any case). */
static bool connection_upgrade(struct lws *wsi)
{
    char conn[256];
    int n = lws_hdr_copy(wsi, conn, (int)sizeof(conn), WSI_TOKEN_CONNECTION);
    size_t pos = 0;
    const char *tok;
    size_t tok_len;
    while (n > 0 && rt_subproto_next(conn, (size_t)n, &pos, &tok, &tok_len)) {
        if (tok_len == 7 && strncasecmp(tok, "upgrade", 7) == 0) {
            return true;
        }
    }
    return false;
}

/* What is wrong with an upgrade request that lws would drop without an answer (RFC 6455 4.1
 * and lws's own checks in roles/ws/server-ws.c), or NULL. Copies the Host, Sec-WebSocket-Key
 * and Sec-WebSocket-Version headers into h for rewrite_upgrade(). */
typedef struct upgrade_hdrs {
    char host[RT_LWS_WS_HOST_MAX];
    char key[RT_LWS_WS_KEY_MAX];
    char version[16];
} upgrade_hdrs;

static const char *bad_request(struct lws *wsi, upgrade_hdrs *h)
{
    if (!plain_header(wsi, WSI_TOKEN_HOST, h->host, sizeof(h->host))) {
        return "no valid Host header";
    }
    if (!plain_header(wsi, WSI_TOKEN_KEY, h->key, sizeof(h->key))) {
        return "no valid Sec-WebSocket-Key header";
    }
    if (!plain_header(wsi, WSI_TOKEN_VERSION, h->version, sizeof(h->version))) {
        return "no valid Sec-WebSocket-Version header";
    }
    if (!connection_upgrade(wsi)) {
        return "no \"Connection: Upgrade\" header";
    }
    return NULL;
}

/* Takes the negotiation over from lws (see RT_LWS_WS_LWS_OFFER_MAX): the connection's socket
 * is handed to a new lws connection on the same vhost together with the request rewritten to
 * offer only ser's subprotocol (lws_adopt_socket_vhost_readbuf(): lws parses those bytes as if
 * they had been read from the socket, and answers 101 with that subprotocol). The old
 * connection keeps its descriptor number, which now refers to an unconnected socket, so that
 * closing it (the shutdown() included) leaves the client's connection alone. A client sends
 * nothing after its upgrade request before the answer, so no bytes are lost with the old
 * connection. Plain TCP only: a TLS session cannot change hands. Returns -1 (the old connection
 * closes) in every case; answers 400 or 503 itself when it cannot go on. */
static int rewrite_upgrade(struct lws *wsi, const rt_listener *cfg, wamp_ser ser,
                           const upgrade_hdrs *h)
{
    char req[RT_LWS_WS_REWRITE_MAX];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: %s\r\nSec-WebSocket-Protocol: %s\r\n\r\n",
                     cfg->path ? cfg->path : "/", h->host, h->key, h->version,
                     rt_subproto_name(ser));
    int fd = lws_get_socket_fd(wsi);
    int keep = -1;
    int stub = -1;
    errno = EINVAL; /* the request does not fit req */
    if (n > 0 && (size_t)n < sizeof(req) && fd >= 0) {
        keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        stub = keep >= 0 ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
    }
    if (stub < 0 || dup2(stub, fd) < 0) {
        RT_LOG_WARN(0, "cannot take over a WebSocket upgrade: %s; answering 503", strerror(errno));
        if (keep >= 0) {
            close(keep);
        }
        if (stub >= 0) {
            close(stub);
        }
        return upgrade_refuse(wsi, 503, "Service Unavailable", "try again later");
    }
    close(stub);
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    RT_LOG_DEBUG(0, "WebSocket upgrade negotiated by the router: %s", rt_subproto_name(ser));
    /* On failure lws closes keep itself. */
    (void)lws_adopt_socket_vhost_readbuf(lws_get_vhost(wsi), keep, req, (size_t)n);
    return -1;
}

/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: the headers are still available, so a bad upgrade gets an
 * HTTP answer (404 wrong path, 400 no WAMP subprotocol) instead of a bare disconnect, and the
 * subprotocol is chosen here (rt_subproto_choose()). Returns 0 to let lws answer 101, -1 to
 * hang up (after answering, or after handing the connection on).
 * Long: the WebSocket upgrade's checks in the order the answers must go out (connection limit,
 * path, subprotocol, handing a web path on), each with its own HTTP answer while the headers are
 * still readable. */
static int confirm_upgrade(struct lws *wsi, const char *upgrade)
{
    const rt_lws_ws_listener *lis = listener_of(wsi);
    char detail[RT_LWS_WS_QUOTE_MAX + 64];
    upgrade_hdrs hdrs;
    if (!upgrade || strcasecmp(upgrade, "websocket") != 0) {
        refused(wsi, RT_REFUSAL_REQUEST, "Upgrade is not websocket");
        return upgrade_refuse(wsi, 400, "Bad Request", "only WebSocket upgrades are supported");
    }
    const char *bad = bad_request(wsi, &hdrs);
    if (bad) {
        refused(wsi, RT_REFUSAL_REQUEST, bad);
        return upgrade_refuse(wsi, 400, "Bad Request", bad);
    }
    const rt_lws_ws_path *wp = path_of(wsi, lis);
    if (!wp) {
        char path[RT_LWS_WS_QUOTE_MAX];
        char uri[RT_LWS_WS_QUOTE_MAX];
        int n = lws_hdr_copy(wsi, uri, (int)sizeof(uri), WSI_TOKEN_GET_URI);
        quote(uri, n > 0 ? (size_t)n : 0, path, sizeof(path));
        snprintf(detail, sizeof(detail), "no WebSocket endpoint on path %s (serves %s)",
                 n >= 0 ? path : "(long)", lis->cfg->path ? lis->cfg->path : "none");
        refused(wsi, RT_REFUSAL_PATH, detail);
        return upgrade_refuse(wsi, 404, "Not Found", "no WebSocket endpoint on this path");
    }
    int total = lws_hdr_total_length(wsi, WSI_TOKEN_PROTOCOL);
    size_t len = total > 0 ? (size_t)total : 0;
    char *offer = len ? malloc(len + 1) : NULL;
    if (len && (!offer || lws_hdr_copy(wsi, offer, total + 1, WSI_TOKEN_PROTOCOL) != total)) {
        free(offer);
        RT_LOG_WARN(0, "cannot read a WebSocket upgrade's subprotocols (out of memory)");
        return upgrade_refuse(wsi, 503, "Service Unavailable", "try again later");
    }
    wamp_ser ser = WAMP_SER_JSON;
    bool chosen = rt_subproto_choose(offer, len, enabled_sers(wp->cfg), &ser);
    int lws_ser = chosen ? lws_choice(wsi, offer, len) : -1;
    if (!chosen) {
        char q[RT_LWS_WS_QUOTE_MAX];
        quote(offer ? offer : "", len, q, sizeof(q));
        snprintf(detail, sizeof(detail), len ? "offered %s" : "no Sec-WebSocket-Protocol", q);
    }
    free(offer);
    if (!chosen) {
        char list[64];
        char body[128];
        (void)rt_subproto_list(enabled_sers(wp->cfg), list, sizeof(list));
        snprintf(body, sizeof(body), "This server only speaks WebSocket subprotocols %s", list);
        refused(wsi, RT_REFUSAL_SUBPROTOCOL, detail);
        return upgrade_refuse(wsi, 400, "Bad Request", body);
    }
    if (over_cap(wp)) {
        /* options.max_connections: refused before the upgrade, as autobahn's server does
         * (maxConnections), so the client sees why (an HTTP status, no WebSocket, no session)
         * and nothing is allocated for it. */
        rt_peer peer;
        memset(&peer, 0, sizeof(peer));
        rt_lws_fill_peer(wsi, &peer);
        char why[96];
        snprintf(why, sizeof(why), "its maximum of %zu connections (options.max_connections)",
                 wp->cfg->max_connections);
        rt_router_refused_connection(router_of(wsi), wp->cfg->id, peer.addr, why);
        return upgrade_refuse(wsi, 503, "Service Unavailable",
                              "maximum number of connections reached");
    }
    if (lws_ser == (int)ser) {
        return 0; /* lws binds the same subprotocol */
    }
    if (!lws_is_ssl(wsi)) {
        return rewrite_upgrade(wsi, wp->cfg, ser, &hdrs);
    }
    if (lws_ser >= 0 && (enabled_sers(wp->cfg) & RT_SUBPROTO_BIT(lws_ser))) {
        return 0; /* TLS: lws binds the client's first choice among ours */
    }
    if (lws_ser >= 0) {
        /* lws would bind a subprotocol of another WebSocket path of this listener. */
        char list[64];
        (void)rt_subproto_list(enabled_sers(wp->cfg), list, sizeof(list));
        snprintf(detail, sizeof(detail),
                 "on a TLS listener, first offered %s, which %s does not "
                 "enable",
                 rt_subproto_name((wamp_ser)lws_ser), wp->cfg->path);
        refused(wsi, RT_REFUSAL_SUBPROTOCOL, detail);
        char body[128];
        snprintf(body, sizeof(body), "on this TLS endpoint, offer one of %s first", list);
        return upgrade_refuse(wsi, 400, "Bad Request", body);
    }
    snprintf(detail, sizeof(detail),
             "an offer of %zu bytes on a TLS listener, which takes at most %d bytes of simple "
             "names",
             len, RT_LWS_WS_LWS_OFFER_MAX - 1);
    refused(wsi, RT_REFUSAL_SUBPROTOCOL, detail);
    return upgrade_refuse(wsi, 400, "Bad Request",
                          "on this TLS endpoint, offer at most 126 bytes of subprotocols, "
                          "e.g. wamp.2.json");
}

/* protocols[0]: everything that did not negotiate a WAMP subprotocol ends up here. */
static int http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                   size_t len)
{
    switch (reason) {
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return confirm_upgrade(wsi, in);
    case LWS_CALLBACK_HTTP: {
        /* Plain HTTP: the web transport's services (rt_lws_web.c) answer every path but the
         * WebSocket one; elsewhere this is a WebSocket-only endpoint. Answer, then finish the
         * transaction (lws keeps or closes the connection per HTTP keep-alive). */
        const rt_lws_ws_listener *lis = listener_of(wsi);
        bool on_path = is_ws_path(lis, in);
        if (!on_path && rt_lws_web_enabled(lis)) {
            return rt_lws_web_on_http(wsi, user, in);
        }
        int r = on_path ? http_refuse(wsi, HTTP_STATUS_BAD_REQUEST,
                                      "this is a WAMP WebSocket endpoint")
                        : http_refuse(wsi, HTTP_STATUS_NOT_FOUND, "not found");
        if (r < 0 || lws_http_transaction_completed(wsi)) {
            return -1;
        }
        return 0;
    }
    case LWS_CALLBACK_HTTP_BODY:
        return rt_lws_web_on_body(wsi, user, in, len);
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        return rt_lws_web_on_body_done(wsi, user);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return rt_lws_web_on_writeable(wsi, user);
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        rt_lws_web_on_closed(user);
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        /* A WebSocket bound to "http": the client offered no WAMP subprotocol (or offered
         * "http"). WAMP requires one (spec "WebSocket Transport"). */
        return 1;
    case LWS_CALLBACK_SSL_INFO: /* a TLS listener's connection, before any HTTP */
        rt_lws_on_ssl_info(wsi, in, listener_of(wsi)->cfg->id);
        return 0;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

/* --- Connection life cycle ------------------------------------------------------------------ */

static int on_established(struct lws *wsi, ws_pss *pss)
{
    pss->wsi = wsi;
    pss->lis = listener_of(wsi);
    /* The request headers are still there (confirm_upgrade() checked the path already). */
    pss->path = path_of(wsi, pss->lis);
    if (!pss->path) {
        request_close(pss, LWS_CLOSE_STATUS_POLICY_VIOLATION, "no WebSocket endpoint here", true);
        return 0;
    }
    const rt_listener *cfg = pss->path->cfg;
    /* The matched subprotocol's id is the serializer (rt_lws_ws_protocols). */
    wamp_ser ser = (wamp_ser)lws_get_protocol(wsi)->id;
    pss->text = ser == WAMP_SER_JSON;
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(wsi, &peer);
    peer.listener_id = cfg->id;
    peer.max_message_size = cfg->max_message_size;
    if (over_cap(pss->path)) {
        /* Upgrades that passed confirm_upgrade() together: close 1013 "try again later". */
        char why[96];
        snprintf(why, sizeof(why), "its maximum of %zu connections (options.max_connections)",
                 cfg->max_connections);
        rt_router_refused_connection(router_of(wsi), peer.listener_id, peer.addr, why);
        request_close(pss, 1013 /* RFC 6455 registry: Try Again Later */,
                      "maximum connection count reached", true);
        return 0;
    }
    (*pss->path->conns)++;
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
        (*pss->path->conns)--;
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

/* One RECEIVE chunk: a whole frame or part of one; binary = it belongs to a binary message;
 * last = the message is complete. */
static void rx_chunk(ws_pss *pss, const void *in, size_t len, bool binary, bool last)
{
    if (!pss->sess || pss->closing) {
        /* Closing (asked by the core, or by us): input is ignored. */
        wamp_buf_unref(&pss->rx);
        return;
    }
    if (binary == pss->text) {
        /* WAMP spec, "WebSocket Transport": wamp.2.json travels in text messages, binary
         * serializers in binary ones. Answered like any other protocol violation. */
        wamp_buf_unref(&pss->rx);
        rt_session_protocol_violation(pss->sess, pss->text ? "binary WebSocket message on a "
                                                             "wamp.2.json connection"
                                                           : "text WebSocket message on a "
                                                             "wamp.2.msgpack connection");
        return;
    }
    size_t max = pss->path->cfg->max_message_size ? pss->path->cfg->max_message_size : SIZE_MAX;
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
        /* Second line of defence behind confirm_upgrade(): the GET URI must be a WebSocket path
         * that enables this subprotocol. */
        {
            const rt_lws_ws_path *wp = path_of(wsi, listener_of(wsi));
            return wp && (enabled_sers(wp->cfg) & RT_SUBPROTO_BIT(lws_get_protocol(wsi)->id)) ? 0
                                                                                              : 1;
        }
    case LWS_CALLBACK_ESTABLISHED:
        return on_established(wsi, pss);
    case LWS_CALLBACK_RECEIVE:
        rx_chunk(pss, in, len, lws_frame_is_binary(wsi),
                 lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi));
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

size_t rt_lws_ws_protocols(const rt_lws_ws_listener *lis, struct lws_protocols *out)
{
    size_t i = 0;
    size_t n_wamp = 0;
    unsigned sers = 0;
    for (size_t k = 0; k < lis->n_paths; k++) {
        sers |= enabled_sers(lis->paths[k].cfg);
    }
    memset(out, 0, RT_LWS_WS_PROTOCOLS_MAX * sizeof(*out));
    out[i].name = "http";
    out[i].callback = http_cb;
    out[i].per_session_data_size = rt_lws_web_pss_size(); /* a web transport's HTTP answers */
    i++;
    /* One entry per serializer the listener enables and rt_subproto.c negotiates. */
    for (int s = 1; s < WAMP_SER_COUNT; s++) {
        const char *name = rt_subproto_name((wamp_ser)s);
        if (!name || !(sers & RT_SUBPROTO_BIT(s))) {
            continue;
        }
        out[i].name = name;
        out[i].callback = ws_cb;
        out[i].per_session_data_size = sizeof(ws_pss);
        out[i].id = (unsigned int)s;
        i++;
        n_wamp++;
    }
    /* out[i] stays zeroed: the terminator. */
    return n_wamp;
}
