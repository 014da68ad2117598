/* rt_lws_conn.h: one connection of a WAMP listener ("websocket", "web" and "universal"
 * transports), as the front (rt_lws_front.c) and the parts it hands the connection to share it.
 * lws accepts every such connection in its raw-skt role (TLS included) and delivers bytes; the
 * front reads HTTP/1.1 request heads (rt_http1.h) and turns the connection into one of:
 *   - a WebSocket (rt_lws_ws.c, RFC 6455 with wamp_ws.h) after a 101 answer;
 *   - a series of HTTP answers (rt_lws_web.c: static files, the HTTP bridge, refusals);
 *   - a RawSocket connection (rt_lws_raw.c) on a universal transport, when the first octet is
 *     0x7F (no HTTP request can start with it).
 * Ownership: lws allocates, zeroes and frees the rt_lws_conn (the per-connection data of the
 * protocol RT_LWS_FRONT_PROTOCOL); it owns its buffers; a WebSocket's session is borrowed from
 * the router between attach and rt_session_on_closed(). Service thread only. */
#ifndef RT_LWS_CONN_H
#define RT_LWS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <libwebsockets.h>

#include "rt_bridge.h"
#include "rt_http.h"
#include "rt_http1.h"
#include "rt_lws_ws.h"
#include "rt_session.h"
#include "wamp_buf.h"
#include "wamp_ws.h"

/* Octets of the RawSocket part's state (rt_lws_raw.c checks that its state fits). */
#define RT_LWS_RAW_STATE_MAX 256

/* Octets of a WebSocket close reason kept (RFC 6455 allows 123). */
#define RT_LWS_CONN_REASON_MAX 64

typedef enum rt_lws_conn_mode {
    RT_LWS_CONN_HEAD = 0, /* reading a request head (the first, or the next on keep-alive) */
    RT_LWS_CONN_BODY,     /* reading the body of an HTTP bridge request */
    RT_LWS_CONN_ANSWER,   /* writing an HTTP answer (further input waits in conn->in) */
    RT_LWS_CONN_WS,       /* a WebSocket after its 101 */
    RT_LWS_CONN_RAW       /* RawSocket (universal transport) */
} rt_lws_conn_mode;

/* The WebSocket part (rt_lws_ws.c). */
typedef struct rt_lws_ws_conn {
    rt_session *sess;           /* borrowed; NULL before attach and after CLOSE */
    const rt_lws_ws_path *path; /* the WebSocket path (listener) connected to */
    wamp_ws ws;                 /* receive state */
    size_t tx_off;              /* octets of the head message in frames written (large ones) */
    uint32_t tx_part;           /* octets (header included) of the frame at tx_off written by
                                 * rt_lws_conn_sendv(): not 0 in the middle of a frame */
    bool text;                  /* JSON: text frames; binary serializers: binary frames */
    bool counted;               /* holds a place in *path->conns (max_connections) */
    bool closing;               /* a close was asked for: input is ignored from now on */
    bool close_now;             /* ... by the adapter: the CLOSE goes out before the queue */
    bool close_sent;            /* our CLOSE is written: wait for the peer's */
    bool peer_closed;           /* the peer's CLOSE arrived */
    bool ping_out;              /* a PING of ours awaits its PONG */
    uint16_t close_code;
    char close_reason[RT_LWS_CONN_REASON_MAX];
    /* The wire capture's two streams of this connection (owned), NULL when it does not run. */
    struct rt_wire_conn *wire;
} rt_lws_ws_conn;

/* The HTTP part (rt_lws_web.c): the answer being written, or an HTTP bridge request. */
typedef struct rt_lws_web_conn {
    bool busy;         /* resp holds an answer whose body is being written */
    rt_http_resp resp; /* owned while busy */
    uint64_t sent;     /* body octets written */
    /* The HTTP bridge: the publisher or caller path whose body is being read (NULL otherwise),
     * the octets of it still to read, the body so far (owned), the signature arguments (sig
     * points into sig_buf, owned), then the request's own session (owned by the router; held
     * until rt_session_on_closed()) until its answer. */
    const rt_web_path *bridge;
    uint64_t body_need;
    wamp_buf *body;
    char *sig_buf;
    rt_bridge_sig sig;
    rt_session *sess;
    bool sess_closed; /* the router asked the session's transport to close */
    /* The request session's messages in the wire capture (owned), NULL when it does not run. */
    struct rt_wire_conn *wire;
} rt_lws_web_conn;

typedef struct rt_lws_conn {
    struct lws *wsi;
    const rt_lws_ws_listener *lis; /* borrowed vhost user */
    /* Octets read and not yet consumed from in_off on (request heads, bodies, pipelined
     * requests, the first frames of a WebSocket); NULL when none. Owned. */
    wamp_buf *in;
    size_t in_off;
    /* Octets to write before anything else (an HTTP answer's head, a 101, WebSocket control
     * frames); NULL when none. Owned. */
    wamp_buf *out;
    /* The request head's or idle keep-alive deadline (front); a WebSocket's next PING or its
     * PONG's deadline (auto_ping). Cancelled at RAW_CLOSE. */
    lws_sorted_usec_list_t timer;
    uint8_t mode;         /* rt_lws_conn_mode */
    bool keep_alive;      /* the HTTP answer being written leaves the connection open */
    bool close_after_out; /* close once out is written */
    bool lingering;       /* answered for the last time, sending side shut: input discarded */
    bool rx_paused;       /* lws_rx_flow_control() off: conn->in is full */
    bool started;         /* octets arrived: too late to become RawSocket */

    union {
        rt_lws_ws_conn ws;
        rt_lws_web_conn web;
        _Alignas(16) unsigned char raw[RT_LWS_RAW_STATE_MAX];
    } u;
} rt_lws_conn;

/* --- rt_lws_conn.c --------------------------------------------------------------------------- */

rt_router *rt_lws_conn_router(const rt_lws_conn *c);
/* A connection the router closes with output pending: limits.close_timeout from now on bounds
 * it (lws drops it then), so that a peer that never reads cannot hold it. */
void rt_lws_close_deadline(struct lws *wsi, const rt_router *rt);
/* The router's monotonic clock in microseconds (rate-limited log lines). */
uint64_t rt_lws_conn_now_us(const rt_lws_conn *c);
/* Queues n octets to write before anything else and asks for WRITEABLE. false (and the
 * connection is closing) when out of memory or over RT_LWS_CONN_OUT_MAX octets pending. */
#define RT_LWS_CONN_OUT_MAX ((size_t)1024 * 1024)
bool rt_lws_conn_out(rt_lws_conn *c, const void *p, size_t n);
/* Writes n octets with one lws_write(); lws keeps what the socket does not take. -1 on error. */
int rt_lws_conn_write(rt_lws_conn *c, unsigned char *p, size_t n);
/* Large messages without lws's copy: on a plain TCP connection (no TLS) whose lws output buffer
 * is empty, rt_lws_conn_sendv() writes a[0..na) then b[0..nb) (a frame header and its payload,
 * straight from a shared wamp_buf) with one sendmsg() and returns the octets the socket took, 0
 * when it is full; the caller keeps its place and writes the rest on a later WRITEABLE, asking
 * for one. -1 on a socket error (close). lws_write() instead copies whatever the socket does
 * not take at once, which for a message of tens of KiB is most of it. */
bool rt_lws_conn_can_sendv(struct lws *wsi);
ssize_t rt_lws_conn_sendv(struct lws *wsi, const void *a, size_t na, const void *b, size_t nb);
/* The same with n (> 0, at most IOV_MAX) pieces: several frames with one sendmsg(). */
ssize_t rt_lws_conn_sendiov(struct lws *wsi, const struct iovec *iov, size_t n);
/* Large frames without lws's 4 KiB reads: on a plain TCP or Unix connection (no TLS),
 * rt_lws_conn_recv2() reads up to na octets into a, then up to nb into b, with one readv(), and
 * returns how many in all; 0 when nothing is there (or at the end of the stream, or on an
 * error, which lws then finds on its next read of the socket and closes). lws reads at most its
 * service buffer (4 KiB) per RAW_RX, which for a message of tens of KiB is a system call and a
 * poll round per 4 KiB. */
bool rt_lws_conn_can_recv(struct lws *wsi);
size_t rt_lws_conn_recv2(struct lws *wsi, void *a, size_t na, void *b, size_t nb);
/* Answers with status and a one-line text body (a refusal) and closes after writing it. */
void rt_lws_conn_refuse(rt_lws_conn *c, unsigned status, const char *body);
/* rt_lws_conn_refuse() with more header fields (fields: each line with its CRLF; "" for none). */
void rt_lws_conn_refuse_with(rt_lws_conn *c, unsigned status, const char *fields, const char *body);
/* Asks for WRITEABLE unless the context is being torn down. */
void rt_lws_conn_want_write(rt_lws_conn *c);
/* The WebSocket path of lis that a request for path (len octets, not decoded) names, or NULL;
 * a "websocket" transport serves every path (as Crossbar does). */
const rt_lws_ws_path *rt_lws_conn_ws_path(const rt_lws_ws_listener *lis, const char *path,
                                          size_t len);

/* --- rt_lws_ws.c ---------------------------------------------------------------------------- */

/* A WebSocket upgrade request on this connection (req borrowed from conn->in): the checks,
 * answers and accounting of the opening handshake; on success the 101 is queued and the
 * connection is a WebSocket. Returns -1 to close at once. */
int rt_lws_ws_upgrade(rt_lws_conn *c, const rt_http1_req *req);
/* RAW_RX of a WebSocket (in is written: unmasked in place). Returns -1 to close at once. */
int rt_lws_ws_rx(rt_lws_conn *c, unsigned char *in, size_t len);
/* True in the middle of a frame written directly (rt_lws_conn_sendv()): conn->out waits until
 * that frame is complete, since nothing may go out inside a frame. */
bool rt_lws_ws_mid_frame(const rt_lws_conn *c);
/* RAW_WRITEABLE of a WebSocket after conn->out is written (or before it, to finish a frame).
 * Returns -1 to close. */
int rt_lws_ws_writeable(rt_lws_conn *c);
/* conn->out's n octets at p went out (the front writes them): the WebSocket's frames among them
 * (control frames; not the 101 answer) go to the wire capture. */
void rt_lws_ws_wire_out(rt_lws_conn *c, const unsigned char *p, size_t n);
/* RAW_CLOSE of a WebSocket: ends the session, frees the receive state. */
void rt_lws_ws_closed(rt_lws_conn *c);

/* --- rt_lws_web.c --------------------------------------------------------------------------- */

/* A request that is no WebSocket upgrade (req borrowed from conn->in): answered by the HTTP
 * services (an answer's head goes to conn->out, its body follows on WRITEABLE), or becomes an
 * HTTP bridge request whose body is read next (mode BODY). Returns -1 to close at once. */
int rt_lws_web_request(rt_lws_conn *c, const rt_http1_req *req);
/* Body octets of an HTTP bridge request (mode BODY); *used: how many it took. Returns -1 to
 * close. */
int rt_lws_web_body(rt_lws_conn *c, const unsigned char *in, size_t len, size_t *used);
/* RAW_WRITEABLE while answering, after conn->out is written. Returns -1 to close,
 * RT_LWS_WEB_ANSWERED when the answer is completely written (the connection goes on with the
 * next request or closes: the front decides), else 0. */
#define RT_LWS_WEB_ANSWERED 1
int rt_lws_web_writeable(rt_lws_conn *c);
/* Frees an unfinished answer and ends an HTTP bridge request's session. Idempotent. */
void rt_lws_web_closed(rt_lws_conn *c);

/* --- rt_lws_raw.c --------------------------------------------------------------------------- */

/* The RawSocket part of a universal transport, in c->u.raw: RAW_ADOPT, RAW_RX, RAW_WRITEABLE,
 * RAW_CLOSE as rt_lws_raw.h's own protocol handles them. */
void rt_lws_raw_adopt(struct lws *wsi, void *state);
int rt_lws_raw_rx(struct lws *wsi, void *state, const unsigned char *in, size_t len);
int rt_lws_raw_writeable(struct lws *wsi, void *state);
void rt_lws_raw_closed(void *state);

#endif /* RT_LWS_CONN_H */
