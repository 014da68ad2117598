/* rt_lws_front.c: see rt_lws_front.h and rt_lws_conn.h. The request-head loop: input is kept
 * in conn->in; a complete head (rt_http1_parse()) goes to the WebSocket handshake
 * (rt_lws_ws_upgrade()) when its Upgrade field names websocket, else to the HTTP services
 * (rt_lws_web_request()). While an answer is written, later requests (pipelined) wait in
 * conn->in; beyond http_max_head + RT_LWS_FRONT_IN_SLACK octets of them the socket is not read
 * (lws_rx_flow_control()) until the answer is out.
 * Writing: conn->out (answer heads, small bodies, control frames) goes first, one lws_write()
 * per WRITEABLE, except in the middle of a WebSocket frame written directly (rt_lws_ws.c: the
 * frame is finished first); lws keeps what the socket does not take and calls WRITEABLE again
 * only when it is sent, so a close waits for one more WRITEABLE after the last write. */
#include "rt_lws_front.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <libwebsockets.h>

#include "rt_config.h"
#include "rt_http1.h"
#include "rt_log.h"
#include "rt_lws_conn.h"
#include "rt_lws_peer.h"
#include "rt_router.h"

/* Octets of pipelined input kept beyond one head while an answer is written. */
#define RT_LWS_FRONT_IN_SLACK ((size_t)64 * 1024)
/* The first octet of a RawSocket handshake (no HTTP request starts with it). */
#define RT_LWS_FRONT_RAWSOCKET_MAGIC 0x7F

/* Defaults of the limits (a zeroed hand-built config). */
#define RT_LWS_FRONT_MAX_HEAD      ((size_t)16 * 1024)
#define RT_LWS_FRONT_HEAD_TIMEOUT  10000u
#define RT_LWS_FRONT_IDLE_TIMEOUT  30000u
#define RT_LWS_FRONT_CLOSE_TIMEOUT 5000u

static const rt_limits *limits_of(const rt_lws_conn *c)
{
    return &rt_router_config(rt_lws_conn_router(c))->limits;
}

static size_t max_head(const rt_lws_conn *c)
{
    size_t n = limits_of(c)->http_max_head;
    return n ? n : RT_LWS_FRONT_MAX_HEAD;
}

/* A request head or an idle keep-alive connection took too long (slowloris): dropped without
 * an answer. */
static void timer_cb(lws_sorted_usec_list_t *sul)
{
    rt_lws_conn *c = lws_container_of(sul, rt_lws_conn, timer);
    RT_LOG_DEBUG(0, "HTTP connection on listener %s: %s timeout; closing", c->lis->cfg->id,
                 c->lingering ? "lingering close"
                 : c->in      ? "request head"
                              : "idle");
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static void set_timeout_ms(rt_lws_conn *c, uint32_t ms)
{
    lws_sul_schedule(lws_get_context(c->wsi), 0, &c->timer, timer_cb,
                     (lws_usec_t)ms * LWS_US_PER_MS);
}

static void head_timeout(rt_lws_conn *c)
{
    uint32_t ms = limits_of(c)->http_head_timeout_ms;
    set_timeout_ms(c, ms ? ms : RT_LWS_FRONT_HEAD_TIMEOUT);
}

static void idle_timeout(rt_lws_conn *c)
{
    uint32_t ms = limits_of(c)->http_idle_timeout_ms;
    set_timeout_ms(c, ms ? ms : RT_LWS_FRONT_IDLE_TIMEOUT);
}

/* --- Input ---------------------------------------------------------------------------------- */

static size_t pending(const rt_lws_conn *c)
{
    return c->in ? wamp_buf_len(c->in) - c->in_off : 0;
}

static unsigned char *pending_data(rt_lws_conn *c)
{
    return wamp_buf_data(c->in) + c->in_off;
}

/* Drops n consumed octets; frees the buffer when nothing is left. */
static void consume(rt_lws_conn *c, size_t n)
{
    c->in_off += n;
    if (pending(c) == 0) {
        wamp_buf_unref(&c->in);
        c->in_off = 0;
    }
}

/* Moves what is pending to the front of the buffer (before appending). */
static void compact(rt_lws_conn *c)
{
    if (c->in && c->in_off) {
        size_t n = pending(c);
        memmove(wamp_buf_data(c->in), pending_data(c), n);
        wamp_buf_clear(c->in);
        wamp_buf_commit(c->in, n);
        c->in_off = 0;
    }
}

static void rx_resume(rt_lws_conn *c)
{
    if (c->rx_paused) {
        c->rx_paused = false;
        lws_rx_flow_control(c->wsi, 1);
    }
}

/* A peer-caused refusal of a request head: logged (rate-limited) and answered. */
static void head_refused(rt_lws_conn *c, unsigned status, const char *why)
{
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(c->wsi, &peer);
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_lws_conn_now_us(c),
                     "HTTP request refused", 0, "HTTP request from %s on listener %s: %u (%s)",
                     peer.addr[0] ? peer.addr : "?", c->lis->cfg->id, status, why ? why : "-");
    rt_router_http_response(rt_lws_conn_router(c), status);
    rt_lws_conn_refuse(c, status, why ? why : rt_http1_reason(status));
}

/* Hands the octets that followed a WebSocket upgrade to the WebSocket. */
static int ws_rest(rt_lws_conn *c)
{
    int r = 0;
    if (pending(c)) {
        r = rt_lws_ws_rx(c, pending_data(c), pending(c));
    }
    wamp_buf_unref(&c->in);
    c->in_off = 0;
    return r;
}

/* An HTTP bridge request's body must keep arriving (http_idle_timeout between pieces); its
 * call then runs as long as the call's own timeout allows. */
static void bridge_timer(rt_lws_conn *c)
{
    if (c->mode == RT_LWS_CONN_BODY) {
        idle_timeout(c);
    } else if (c->mode == RT_LWS_CONN_ANSWER && c->u.web.sess) {
        lws_sul_cancel(&c->timer);
    }
}

/* Handles every complete request head (and body) in conn->in. Returns -1 to close. */
static int process(rt_lws_conn *c)
{
    while (c->mode == RT_LWS_CONN_HEAD || c->mode == RT_LWS_CONN_BODY) {
        size_t avail = pending(c);
        if (avail == 0) {
            return 0;
        }
        if (c->mode == RT_LWS_CONN_BODY) {
            size_t used = 0;
            if (rt_lws_web_body(c, pending_data(c), avail, &used) < 0) {
                return -1;
            }
            consume(c, used);
            bridge_timer(c);
            continue;
        }
        rt_http1_req req;
        const char *why = NULL;
        wamp_err e = rt_http1_parse((const char *)pending_data(c), avail, max_head(c), &req, &why);
        if (e == WAMP_EAGAIN) {
            return 0;
        }
        c->started = true;
        if (e == WAMP_ETOOBIG) {
            head_refused(c, 431, why ? why : "request head too large");
            return 0;
        }
        if (e != WAMP_OK) {
            head_refused(c, 400, why ? why : "malformed request");
            return 0;
        }
        lws_sul_cancel(&c->timer);
        c->keep_alive = rt_http1_keep_alive(&req);
        size_t head_len = req.head_len;
        /* An upgrade to another protocol (h2c, which curl --http2 asks for) is ignored and the
         * request answered as HTTP/1.1 (RFC 7230 6.7); an upgrade to websocket, valid or not,
         * is the handshake's to answer. */
        if (rt_http1_has_token(&req, "Upgrade", "websocket")) {
            rt_lws_web_closed(c);
            memset(&c->u, 0, sizeof(c->u));
            if (rt_lws_ws_upgrade(c, &req) < 0) {
                return -1;
            }
            consume(c, head_len);
            return c->mode == RT_LWS_CONN_WS ? ws_rest(c) : 0;
        }
        int r = rt_lws_web_request(c, &req);
        consume(c, head_len);
        if (r < 0) {
            return -1;
        }
        bridge_timer(c);
    }
    return 0;
}

static int on_rx(rt_lws_conn *c, unsigned char *in, size_t len)
{
    if (c->mode == RT_LWS_CONN_RAW) {
        return rt_lws_raw_rx(c->wsi, c->u.raw, in, len);
    }
    if (c->mode == RT_LWS_CONN_WS) {
        return rt_lws_ws_rx(c, in, len);
    }
    if (c->close_after_out || len == 0) {
        return 0; /* answered for the last time: input is ignored */
    }
    if (!c->started && pending(c) == 0 && c->lis->raw_cfg &&
        in[0] == RT_LWS_FRONT_RAWSOCKET_MAGIC) {
        /* A universal transport's RawSocket client. */
        c->mode = RT_LWS_CONN_RAW;
        lws_sul_cancel(&c->timer); /* the RawSocket part has its own handshake timeout */
        memset(&c->u, 0, sizeof(c->u));
        rt_lws_raw_adopt(c->wsi, c->u.raw);
        return rt_lws_raw_rx(c->wsi, c->u.raw, in, len);
    }
    if (c->mode == RT_LWS_CONN_HEAD && pending(c) == 0) {
        head_timeout(c); /* the first octet of a request */
    }
    c->started = true;
    compact(c);
    if (wamp_buf_append(&c->in, in, len, SIZE_MAX) != WAMP_OK) {
        RT_LOG_WARN(0, "cannot buffer a request (out of memory); closing");
        return -1;
    }
    if (pending(c) > max_head(c) + RT_LWS_FRONT_IN_SLACK && !c->rx_paused) {
        c->rx_paused = true;
        lws_rx_flow_control(c->wsi, 0);
    }
    return process(c);
}

/* The current HTTP answer is written: back to reading the next request (keep-alive), or
 * close. Returns -1 to close. */
static int answered(rt_lws_conn *c)
{
    if (!c->keep_alive) {
        c->close_after_out = true;
        rt_lws_conn_want_write(c);
        return 0;
    }
    c->mode = RT_LWS_CONN_HEAD;
    memset(&c->u.web, 0, sizeof(c->u.web));
    c->u.web.resp.fd = -1;
    rx_resume(c);
    if (pending(c)) {
        head_timeout(c);
    } else {
        idle_timeout(c);
    }
    return process(c);
}

/* --- Output --------------------------------------------------------------------------------- */

/* An HTTP mode (not WebSocket, not RawSocket): its answers are bounded by the idle timeout. */
static bool http_mode(const rt_lws_conn *c)
{
    return c->mode != RT_LWS_CONN_WS && c->mode != RT_LWS_CONN_RAW;
}

/* The last answer of an HTTP connection is out. Closing a socket whose peer still sends (a
 * request body the router refused, requests pipelined after "Connection: close") makes the
 * kernel reset the connection, and the reset can destroy the answer before the peer has read
 * it. So a plain-TCP HTTP connection first shuts its sending side (the peer reads the answer,
 * then end of stream), then reads and discards whatever still comes until the peer closes or
 * limits.close_timeout runs out (a lingering close). TLS connections and the WebSocket and
 * RawSocket modes (which have closing handshakes of their own) close at once. Returns -1 to
 * close now. */
static int linger(rt_lws_conn *c)
{
    if (!http_mode(c) || c->lingering || lws_is_ssl(c->wsi)) {
        return -1;
    }
    int fd = (int)lws_get_socket_fd(c->wsi);
    if (fd < 0 || shutdown(fd, SHUT_WR) != 0) {
        return -1;
    }
    c->lingering = true;
    wamp_buf_unref(&c->in);
    c->in_off = 0;
    rx_resume(c);
    uint32_t ms = limits_of(c)->close_timeout_ms;
    set_timeout_ms(c, ms ? ms : RT_LWS_FRONT_CLOSE_TIMEOUT);
    return 0;
}

static int on_writeable(rt_lws_conn *c)
{
    if (c->out && wamp_buf_len(c->out) && !rt_lws_ws_mid_frame(c)) {
        int r = rt_lws_conn_write(c, wamp_buf_data(c->out), wamp_buf_len(c->out));
        if (r >= 0) {
            rt_lws_ws_wire_out(c, wamp_buf_data(c->out), wamp_buf_len(c->out));
        }
        wamp_buf_unref(&c->out);
        if (r < 0) {
            return -1;
        }
        if (http_mode(c)) {
            /* lws calls WRITEABLE again once the peer has taken this: a peer that stops
             * reading an answer is dropped after http_idle_timeout. */
            idle_timeout(c);
        }
        lws_callback_on_writable(c->wsi);
        return 0;
    }
    if (c->close_after_out) {
        return linger(c);
    }
    switch (c->mode) {
    case RT_LWS_CONN_WS:
        return rt_lws_ws_writeable(c);
    case RT_LWS_CONN_RAW:
        return rt_lws_raw_writeable(c->wsi, c->u.raw);
    case RT_LWS_CONN_ANSWER:
    case RT_LWS_CONN_BODY: {
        uint64_t sent = c->u.web.sent;
        int r = rt_lws_web_writeable(c);
        if (r == RT_LWS_WEB_ANSWERED) {
            return answered(c);
        }
        if (r == 0 && c->u.web.sent != sent) {
            idle_timeout(c); /* a body chunk went out: the peer reads */
        }
        return r;
    }
    default:
        return 0;
    }
}

static void on_close(rt_lws_conn *c)
{
    lws_sul_cancel(&c->timer);
    switch (c->mode) {
    case RT_LWS_CONN_WS:
        rt_lws_ws_closed(c);
        break;
    case RT_LWS_CONN_RAW:
        rt_lws_raw_closed(c->u.raw);
        break;
    default:
        rt_lws_web_closed(c);
        break;
    }
    wamp_buf_unref(&c->in);
    wamp_buf_unref(&c->out);
}

static int front_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    rt_lws_conn *c = user;

    switch (reason) {
    case LWS_CALLBACK_RAW_ADOPT:
        c->wsi = wsi;
        c->lis = lws_get_vhost_user(lws_get_vhost(wsi));
        c->u.web.resp.fd = -1;
        head_timeout(c);
        return 0;
    case LWS_CALLBACK_RAW_RX:
        return c->lis ? on_rx(c, in, len) : -1;
    case LWS_CALLBACK_RAW_WRITEABLE:
        return c->lis ? on_writeable(c) : -1;
    case LWS_CALLBACK_RAW_CLOSE:
        if (c->lis) {
            on_close(c);
        }
        return 0;
    case LWS_CALLBACK_SSL_INFO: { /* a TLS listener's connection, before RAW_ADOPT */
        const rt_lws_ws_listener *lis = lws_get_vhost_user(lws_get_vhost(wsi));
        rt_lws_on_ssl_info(wsi, in, lis->cfg->id);
        return 0;
    }
    default:
        return 0;
    }
}

void rt_lws_front_protocol(struct lws_protocols *out)
{
    memset(out, 0, sizeof(*out));
    out->name = RT_LWS_FRONT_PROTOCOL;
    out->callback = front_cb;
    out->per_session_data_size = sizeof(rt_lws_conn);
}
