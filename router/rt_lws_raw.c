/* rt_lws_raw.c: the whole RawSocket adapter (STYLE §6). The pss is allocated, zeroed and freed
 * by lws; it holds a borrowed rt_session pointer from the accepted handshake until RAW_CLOSE.
 *
 * Receive: RAW_RX slices go to wamp_rawsock_feed(), which hands out whole frames (without a
 * copy when a frame sits in one slice). Messages go to the core, PINGs are answered with a PONG
 * carrying the same payload, PONGs are ignored (the router sends no PING).
 * Control bytes (the handshake reply, PONGs) wait in pss->ctl and go out before core data, but
 * never inside a message.
 * Send: one write per RAW_WRITEABLE: small messages framed together into the shared scratch
 * buffer (as the WebSocket adapter does) and written with lws_write(); larger ones from their
 * own buffer, at most RT_LWS_RAW_CHUNK bytes per WRITEABLE: on plain TCP the prefix and the bytes
 * with one sendmsg() (rt_lws_conn_sendv(): what the socket does not take is written from the
 * same buffer later, never copied), with TLS lws_write() with the prefix in the headroom.
 * Closing: raw callbacks close only by returning -1 (STYLE §6), from RAW_WRITEABLE once what
 * must go out (a refusal reply, the final ABORT/GOODBYE) is written, or straight from RAW_RX for
 * a peer that broke the framing. */
#include "rt_lws_raw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "rt_log.h"
#include "rt_lws_conn.h"
#include "rt_lws_peer.h"
#include "rt_lws_ws.h"
#include "rt_router.h"
#include "rt_session.h"
#include "rt_trace_wire.h"
#include "wamp_buf.h"
#include "wamp_rawsock.h"

_Static_assert(WAMP_BUF_HEADROOM >= WAMP_RAWSOCK_PREFIX, "headroom must hold a RawSocket prefix");

/* Outgoing messages up to this size are framed together into the scratch buffer. */
#define RT_LWS_RAW_COALESCE_MAX ((size_t)16 * 1024)
_Static_assert(RT_LWS_RAW_COALESCE_MAX + WAMP_RAWSOCK_PREFIX <= RT_LWS_WS_SCRATCH,
               "a coalesced frame fits the scratch buffer");
/* Larger messages are written in pieces of this size, one per WRITEABLE. */
#define RT_LWS_RAW_CHUNK ((size_t)64 * 1024)
/* PONGs owed to a client that sends PINGs faster than it reads: a PING that finds this many
 * bytes of control data pending closes the connection. (One PONG is always taken, however
 * long: a PING's payload may be as long as any message.) */
#define RT_LWS_RAW_CTL_MAX ((size_t)1024 * 1024)

typedef struct raw_pss {
    struct lws *wsi;
    rt_session *sess;              /* borrowed; NULL before the handshake and after CLOSE */
    const rt_lws_ws_listener *lis; /* borrowed vhost user */
    wamp_rawsock rs;
    wamp_buf *ctl;  /* handshake reply and PONG frames to write before core data */
    size_t tx_off;  /* bytes of the head message already written (large messages) */
    uint8_t tx_pre; /* octets of its prefix written by rt_lws_conn_sendv() (plain TCP) */
    bool adopted;   /* rs initialised */
    bool closing;   /* a close was requested: input is ignored from now on */
    bool close_now; /* ... by the adapter: close once ctl is written, even with a queue */
    bool counted;   /* holds a place in *lis->raw_conns (options.max_connections) */
    char peer[64];  /* for log lines */

    /* This connection in the wire capture (owned; NULL when it does not run): its frames after
     * the handshake as read and written (the handshake's reply, through ctl first, is none). */
    rt_wire_conn *wire;
} raw_pss;

_Static_assert(sizeof(raw_pss) <= RT_LWS_RAW_STATE_MAX, "the RawSocket state fits rt_lws_conn");

static rt_router *router_of(struct lws *wsi)
{
    return lws_context_user(lws_get_context(wsi));
}

/* The router's clock, for rate-limited log lines. */
static uint64_t now_us(struct lws *wsi)
{
    return rt_router_now_us(router_of(wsi));
}

/* The RawSocket settings of the connection's listener (the RawSocket part of a universal
 * transport on a shared port). */
static const rt_listener *cfg_of(const rt_lws_ws_listener *lis)
{
    return lis->raw_cfg ? lis->raw_cfg : lis->cfg;
}

static uint64_t sid_of(const raw_pss *pss)
{
    return pss->sess ? rt_session_id(pss->sess) : 0;
}

/* --- Transport ops (core -> adapter): never re-enter the core ------------------------------ */

static void want_write(raw_pss *pss)
{
    if (!*pss->lis->tearing_down) {
        lws_callback_on_writable(pss->wsi);
    }
}

static void op_want_write(void *tp)
{
    want_write(tp);
}

/* RawSocket has no close frame: the code and reason only go to the debug log. */
/* A peer that never reads never lets the queue out: lws drops the connection when
 * limits.close_timeout runs out. */
static void close_deadline(raw_pss *pss)
{
    rt_lws_close_deadline(pss->wsi, router_of(pss->wsi));
}

static void op_close(void *tp, uint16_t code, const char *reason)
{
    raw_pss *pss = tp;
    if (pss->closing) {
        return;
    }
    RT_LOG_DEBUG(sid_of(pss), "closing RawSocket connection (%u %s)", code, reason ? reason : "");
    pss->closing = true;
    want_write(pss);
    close_deadline(pss);
}

static const rt_transport_ops raw_ops = {
        .want_write = op_want_write,
        .close = op_close,
};

static void wire_rx(raw_pss *pss, const void *p, size_t n)
{
    rt_wire_conn_rx(router_of(pss->wsi), pss->wire, p, n);
}

static void wire_tx(raw_pss *pss, const void *p, size_t n)
{
    rt_wire_conn_tx(router_of(pss->wsi), pss->wire, p, n);
}

static void close_after_ctl(raw_pss *pss)
{
    pss->closing = true;
    pss->close_now = true;
    want_write(pss);
    close_deadline(pss);
}

/* --- Receive -------------------------------------------------------------------------------- */

/* The TCP peer, or "unix:PATH" for a Unix socket listener (never a trusted network). */
static void fill_peer(struct lws *wsi, const raw_pss *pss, rt_peer *peer)
{
    memset(peer, 0, sizeof(*peer));
    rt_lws_fill_peer(wsi, peer);
    if (!peer->addr[0] && cfg_of(pss->lis)->unix_path) {
        snprintf(peer->addr, sizeof(peer->addr), "unix:%s", cfg_of(pss->lis)->unix_path);
    }
}

static void on_adopt(struct lws *wsi, raw_pss *pss)
{
    pss->wsi = wsi;
    pss->lis = lws_get_vhost_user(lws_get_vhost(wsi));
    const rt_listener *cfg = cfg_of(pss->lis);
    wamp_rawsock_config rc = {
            .ser_json = cfg->ser_json,
            .ser_msgpack = cfg->ser_msgpack,
            .ser_cbor = cfg->ser_cbor,
            .max_len = cfg->max_message_size,
            .min_peer_len = rt_router_config(router_of(wsi))->limits.rawsocket_min_length};
    wamp_rawsock_init(&pss->rs, &rc);
    pss->adopted = true;
    rt_peer peer;
    fill_peer(wsi, pss, &peer);
    snprintf(pss->peer, sizeof(pss->peer), "%s", peer.addr[0] ? peer.addr : "?");
    /* options.max_connections: a connection over it is not counted, and its handshake gets
     * error 4 (on_accepted()). */
    if (!cfg->max_connections || *pss->lis->raw_conns < cfg->max_connections) {
        (*pss->lis->raw_conns)++;
        pss->counted = true;
    }
    /* The session (and its HELLO timeout) starts with the handshake: until then lws's own
     * timeout bounds a connection that never sends one. */
    uint32_t ms = rt_router_config(router_of(wsi))->limits.hello_timeout_ms;
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, (int)((ms + 999) / 1000));
}

/* Queues control bytes, at most max pending in all; false (and the connection is closing) when
 * too much is pending. */
static bool ctl_push(raw_pss *pss, const void *p, size_t n, size_t max)
{
    wamp_err err = wamp_buf_append(&pss->ctl, p, n, max);
    if (err != WAMP_OK) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, now_us(pss->wsi),
                         "RawSocket control data refused", sid_of(pss),
                         "RawSocket peer %s: %s while queueing control data; closing", pss->peer,
                         err == WAMP_ETOOBIG ? "too many unread PONGs" : "out of memory");
        close_after_ctl(pss);
        return false;
    }
    want_write(pss);
    return true;
}

static void on_accepted(struct lws *wsi, raw_pss *pss, const wamp_rawsock_event *ev)
{
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
    rt_peer peer;
    fill_peer(wsi, pss, &peer);
    peer.listener_id = cfg_of(pss->lis)->id;
    /* Our sends respect the limit the client announced (the core refuses larger messages the
     * way it does for any receiver limit). */
    size_t max = cfg_of(pss->lis)->max_message_size;
    peer.max_message_size = ev->peer_max < max ? ev->peer_max : max;
    if (!pss->counted) {
        /* Spec "RawSocket Transport": error 4, "maximum connection count reached". */
        char why[96];
        snprintf(why, sizeof(why), "its maximum of %zu connections (options.max_connections)",
                 cfg_of(pss->lis)->max_connections);
        rt_router_refused_connection(router_of(wsi), peer.listener_id, pss->peer, why);
        uint8_t reply[WAMP_RAWSOCK_PREFIX];
        wamp_rawsock_error_reply(reply, WAMP_RAWSOCK_ERR_CONNECTIONS);
        if (ctl_push(pss, reply, sizeof(reply), RT_LWS_RAW_CTL_MAX)) {
            close_after_ctl(pss);
        }
        return;
    }
    pss->sess = rt_router_attach(router_of(wsi), &raw_ops, pss, ev->ser, &peer);
    if (!pss->sess) {
        /* Shutting down or out of memory: the closest handshake answer. */
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, now_us(wsi),
                         "RawSocket connection refused", 0,
                         "RawSocket connection from %s refused (shutting down or out of memory)",
                         pss->peer);
        uint8_t reply[WAMP_RAWSOCK_PREFIX];
        wamp_rawsock_error_reply(reply, WAMP_RAWSOCK_ERR_CONNECTIONS);
        if (ctl_push(pss, reply, sizeof(reply), RT_LWS_RAW_CTL_MAX)) {
            close_after_ctl(pss);
        }
        return;
    }
    /* (its handshake reply, queued next, is no frame) */
    pss->wire = rt_wire_conn_start(router_of(wsi), pss->sess, TRACE_WIRE_RAWSOCKET, ev->ser,
                                   (pss->ctl ? wamp_buf_len(pss->ctl) : 0) + WAMP_RAWSOCK_PREFIX);
    ctl_push(pss, ev->reply, sizeof(ev->reply), RT_LWS_RAW_CTL_MAX);
}

static void on_frame(raw_pss *pss, const wamp_rawsock_event *ev)
{
    switch (ev->type) {
    case WAMP_RAWSOCK_MSG: {
        wamp_err err = rt_session_on_message(pss->sess, ev->data, ev->len);
        if (err != WAMP_OK) {
            RT_LOG_WARN(sid_of(pss), "cannot handle message: %s; closing", wamp_strerror(err));
            close_after_ctl(pss);
        }
        return;
    }
    case WAMP_RAWSOCK_PING: {
        /* Exactly one PONG echoing the payload (spec "RawSocket Transport", Framing), whatever
         * its length, unless RT_LWS_RAW_CTL_MAX bytes are owed already. */
        uint8_t prefix[WAMP_RAWSOCK_PREFIX];
        (void)wamp_rawsock_prefix(prefix, WAMP_RAWSOCK_PONG, ev->len);
        size_t owed = pss->ctl ? wamp_buf_len(pss->ctl) : 0;
        size_t max = owed < RT_LWS_RAW_CTL_MAX ? owed + sizeof(prefix) + ev->len : owed;
        if (ctl_push(pss, prefix, sizeof(prefix), max) && ev->len) {
            ctl_push(pss, ev->data, ev->len, max);
        }
        return;
    }
    case WAMP_RAWSOCK_PONG:
        return;
    }
}

/* RAW_RX. Returns -1 to drop the connection at once (framing broken: nothing more to say). */
static int on_rx(struct lws *wsi, raw_pss *pss, const unsigned char *in, size_t len)
{
    if (!pss->closing) {
        wire_rx(pss, in, len);
    }
    while (len && !pss->closing) {
        size_t used = 0;
        wamp_rawsock_event ev;
        wamp_err err = wamp_rawsock_feed(&pss->rs, in, len, &used, &ev);
        in += used;
        len -= used;
        if (err == WAMP_EAGAIN) {
            return 0;
        }
        if (err == WAMP_ETOOBIG) {
            rt_router_incoming_too_big(router_of(wsi));
            RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, now_us(wsi),
                             "RawSocket message too big", sid_of(pss),
                             "RawSocket peer %s announced a message of %zu bytes, over the limit "
                             "of %zu bytes; closing",
                             pss->peer, ev.len, wamp_rawsock_max_len(&pss->rs));
            return -1;
        }
        if (err != WAMP_OK) {
            RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, now_us(wsi),
                             "RawSocket framing error", sid_of(pss),
                             "RawSocket peer %s: %s; closing", pss->peer,
                             err == WAMP_EPROTO ? ev.why : wamp_strerror(err));
            return -1;
        }
        switch (ev.kind) {
        case WAMP_RAWSOCK_EV_ACCEPTED:
            on_accepted(wsi, pss, &ev);
            wire_rx(pss, in, len); /* the frames that came with the handshake */
            break;
        case WAMP_RAWSOCK_EV_REFUSED:
            RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, now_us(wsi),
                             "RawSocket handshake refused", 0,
                             "RawSocket handshake from %s refused: %s", pss->peer, ev.why);
            if ((ev.reply[1] >> 4) == WAMP_RAWSOCK_ERR_MAX_LENGTH) {
                /* limits.rawsocket_min_length: counted like the other limits (logged above). */
                rt_router_refused_connection(router_of(wsi), cfg_of(pss->lis)->id, pss->peer, NULL);
            }
            if (ctl_push(pss, ev.reply, sizeof(ev.reply), RT_LWS_RAW_CTL_MAX)) {
                close_after_ctl(pss);
            }
            break;
        case WAMP_RAWSOCK_EV_FRAME:
            on_frame(pss, &ev);
            break;
        }
    }
    return 0;
}

/* --- Send ----------------------------------------------------------------------------------- */

static int write_all(struct lws *wsi, raw_pss *pss, unsigned char *p, size_t n)
{
    int w = lws_write(wsi, p, n, LWS_WRITE_RAW);
    if (w < 0 || (size_t)w < n) {
        RT_LOG_DEBUG(sid_of(pss), "write failed; closing");
        return -1;
    }
    return 0;
}

/* Small messages: as many prefixed frames as fit the scratch buffer, one write. */
static int tx_coalesced(struct lws *wsi, raw_pss *pss, wamp_buf *b)
{
    unsigned char *out = pss->lis->tx_scratch;
    size_t used = 0;
    uint32_t nmsg = 0;
    while (b && wamp_buf_len(b) <= RT_LWS_RAW_COALESCE_MAX) {
        size_t n = wamp_buf_len(b);
        if (used + WAMP_RAWSOCK_PREFIX + n > RT_LWS_WS_SCRATCH) {
            break;
        }
        (void)wamp_rawsock_prefix(out + used, WAMP_RAWSOCK_MSG, n);
        used += WAMP_RAWSOCK_PREFIX;
        memcpy(out + used, wamp_buf_cdata(b), n);
        used += n;
        nmsg++;
        rt_session_tx_pop(pss->sess);
        b = rt_session_tx_peek(pss->sess);
    }
    if (write_all(wsi, pss, out, used) < 0) {
        return -1;
    }
    rt_wire_conn_tx_whole(router_of(wsi), pss->wire, out, used, nmsg); /* one a message */
    if (b || pss->closing) {
        lws_callback_on_writable(wsi);
    }
    return 0;
}

/* A larger message from its own buffer (shared with other sessions), at most RT_LWS_RAW_CHUNK
 * bytes per WRITEABLE. */
static int tx_large(struct lws *wsi, raw_pss *pss, wamp_buf *b)
{
    size_t total = wamp_buf_len(b);
    size_t left = total - pss->tx_off;
    size_t n = left > RT_LWS_RAW_CHUNK ? RT_LWS_RAW_CHUNK : left;
    unsigned char *p = wamp_buf_data(b) + pss->tx_off;
    uint8_t prefix[WAMP_RAWSOCK_PREFIX];
    if (wamp_rawsock_prefix(prefix, WAMP_RAWSOCK_MSG, total) != WAMP_OK) {
        RT_LOG_WARN(sid_of(pss), "outgoing message of %zu bytes cannot be framed", total);
        return -1; /* the core's receiver limit keeps this from happening */
    }
    if (pss->tx_pre || (pss->tx_off == 0 && rt_lws_conn_can_sendv(wsi))) {
        size_t pre = WAMP_RAWSOCK_PREFIX - pss->tx_pre;
        ssize_t r = rt_lws_conn_sendv(wsi, prefix + pss->tx_pre, pre, p, n);
        if (r < 0) {
            RT_LOG_DEBUG(sid_of(pss), "write failed; closing");
            return -1;
        }
        size_t took = (size_t)r < pre ? (size_t)r : pre;
        wire_tx(pss, prefix + pss->tx_pre, took);
        pss->tx_pre = (uint8_t)(pss->tx_pre + took);
        n = (size_t)r - took; /* payload bytes written; 0 when the socket is full */
        wire_tx(pss, p, n);
    } else {
        /* TLS: the prefix goes into the headroom before the first piece (another session
         * sharing the buffer writes its own there when its turn comes); lws copies what the
         * socket does not take at once. */
        size_t extra = 0;
        if (pss->tx_off == 0) {
            memcpy(p - WAMP_RAWSOCK_PREFIX, prefix, WAMP_RAWSOCK_PREFIX);
            extra = WAMP_RAWSOCK_PREFIX;
        }
        if (write_all(wsi, pss, p - extra, n + extra) < 0) {
            return -1;
        }
        wire_tx(pss, p - extra, n + extra);
    }
    if (n < left) {
        pss->tx_off += n;
        lws_callback_on_writable(wsi);
        return 0;
    }
    pss->tx_off = 0;
    pss->tx_pre = 0;
    rt_session_tx_pop(pss->sess);
    if (pss->closing || rt_session_tx_peek(pss->sess) || (pss->ctl && wamp_buf_len(pss->ctl))) {
        lws_callback_on_writable(wsi);
    }
    return 0;
}

/* RAW_WRITEABLE: one write of control bytes, or of core data; -1 to close. */
static int on_writeable(struct lws *wsi, raw_pss *pss)
{
    if (pss->ctl && wamp_buf_len(pss->ctl) && !pss->tx_pre && !pss->tx_off) {
        int r = write_all(wsi, pss, wamp_buf_data(pss->ctl), wamp_buf_len(pss->ctl));
        if (r == 0) {
            wire_tx(pss, wamp_buf_data(pss->ctl), wamp_buf_len(pss->ctl));
        }
        wamp_buf_unref(&pss->ctl);
        if (r < 0) {
            return -1;
        }
        /* lws calls WRITEABLE again only after what the socket did not take is sent: the
         * close below (or the next data) waits for that. */
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (pss->close_now || !pss->sess) {
        return pss->closing ? -1 : 0;
    }
    wamp_buf *b = rt_session_tx_peek(pss->sess);
    if (!b) {
        return pss->closing ? -1 : 0;
    }
    if (pss->tx_pre == 0 && pss->tx_off == 0 && wamp_buf_len(b) <= RT_LWS_RAW_COALESCE_MAX) {
        return tx_coalesced(wsi, pss, b);
    }
    return tx_large(wsi, pss, b);
}

static void on_close(raw_pss *pss)
{
    rt_session_on_closed(pss->sess); /* NULL before the handshake: a no-op */
    pss->sess = NULL;
    rt_wire_conn_free(pss->wire);
    pss->wire = NULL;
    wamp_buf_unref(&pss->ctl);
    if (pss->adopted) {
        wamp_rawsock_fini(&pss->rs);
        pss->adopted = false;
    }
    if (pss->counted) {
        (*pss->lis->raw_conns)--;
        pss->counted = false;
    }
}

void rt_lws_raw_adopt(struct lws *wsi, void *state)
{
    on_adopt(wsi, state);
}

int rt_lws_raw_rx(struct lws *wsi, void *state, const unsigned char *in, size_t len)
{
    raw_pss *pss = state;
    if (!pss->adopted) {
        return -1;
    }
    rt_router *rt = router_of(wsi);
    rt_router_read_begin(rt); /* the messages of this read share a trace clock reading */
    int r = on_rx(wsi, pss, in, len);
    rt_router_read_end(rt);
    return r;
}

int rt_lws_raw_writeable(struct lws *wsi, void *state)
{
    raw_pss *pss = state;
    return pss->adopted ? on_writeable(wsi, pss) : -1;
}

void rt_lws_raw_closed(void *state)
{
    on_close(state);
}

static int raw_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
    switch (reason) {
    case LWS_CALLBACK_RAW_ADOPT:
        rt_lws_raw_adopt(wsi, user);
        return 0;
    case LWS_CALLBACK_RAW_RX:
        return rt_lws_raw_rx(wsi, user, in, len);
    case LWS_CALLBACK_RAW_WRITEABLE:
        return rt_lws_raw_writeable(wsi, user);
    case LWS_CALLBACK_RAW_CLOSE:
        rt_lws_raw_closed(user);
        return 0;
    case LWS_CALLBACK_SSL_INFO: /* a TLS listener's connection, before RAW_ADOPT */
        rt_lws_on_ssl_info(wsi, in, cfg_of(lws_get_vhost_user(lws_get_vhost(wsi)))->id);
        return 0;
    default:
        return 0;
    }
}

void rt_lws_raw_protocol(const rt_listener *cfg, struct lws_protocols *out)
{
    (void)cfg;
    memset(out, 0, sizeof(*out));
    out->name = RT_LWS_RAW_PROTOCOL;
    out->callback = raw_cb;
    out->per_session_data_size = sizeof(raw_pss);
}
