/* rt_lws_web.c: the HTTP answers of a WAMP listener (rt_lws_conn.h): a web transport's
 * services (rt_http.h: static files, redirects, nodeinfo, the trace viewer) and its HTTP bridge
 * (rt_bridge.h: publisher, caller), and the answer of a WebSocket-only endpoint to a plain
 * request (400 on its path, 404 elsewhere). What is answered is decided by rt_http.c and
 * rt_bridge.c; here only the HTTP/1.1 side: the request's method, path (percent-decoded),
 * conditional headers and query arguments in; the status line and headers out (Content-Length
 * always, "Connection: close" when the connection ends), then the body: a small one with the
 * head, a larger or a file's in chunks of RT_LWS_WEB_CHUNK octets, one lws_write() per
 * WRITEABLE (never the whole file in memory; lws calls WRITEABLE again only when the socket has
 * taken the previous chunk: backpressure). A request with a body that is not read (anything but
 * an HTTP bridge request) is answered and the connection closed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "rt_bridge.h"
#include "rt_config.h"
#include "rt_http.h"
#include "rt_http1.h"
#include "rt_log.h"
#include "rt_lws_conn.h"
#include "rt_lws_peer.h"
#include "rt_router.h"
#include "rt_session.h"
#include "rt_trace_wire.h"

/* Octets of body per write (from the shared scratch buffer). */
#define RT_LWS_WEB_CHUNK ((size_t)32 * 1024)
_Static_assert(RT_LWS_WEB_CHUNK <= RT_LWS_WS_SCRATCH, "a chunk fits the scratch buffer");
/* Bodies up to this size go out with the head, in one write. */
#define RT_LWS_WEB_INLINE ((size_t)4 * 1024)

/* The first allocation of an HTTP bridge request's body (it grows as the body comes). */
#define RT_LWS_WEB_BODY_FIRST (64u * 1024u)
/* Octets of the status line and headers (a Location of a redirect included). */
#define RT_LWS_WEB_HEADERS 4096
/* Octets of a header value copied for rt_http / rt_bridge (longer ones are ignored). */
#define RT_LWS_WEB_VALUE_MAX 256

/* The request id of the one PUBLISH or CALL a bridge session sends. */
#define RT_LWS_WEB_BRIDGE_REQUEST 1u

static rt_lws_conn *conn_of_web(void *tp)
{
    return (rt_lws_conn *)(void *)((char *)tp - offsetof(rt_lws_conn, u.web));
}

/* Copies the first field named name into buf (NUL-terminated); NULL when absent or too long. */
static const char *value_of(const rt_http1_req *req, const char *name, char *buf, size_t len)
{
    const rt_http1_field *f = rt_http1_field_get(req, name);
    if (!f || f->value.len >= len) {
        return NULL;
    }
    memcpy(buf, f->value.p, f->value.len);
    buf[f->value.len] = '\0';
    return buf;
}

static int hex(unsigned char ch)
{
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    ch = (unsigned char)(ch | 0x20);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Percent-decodes s[0..n) into out (room for n + 1 octets), '+' as a space when plus; returns
 * the decoded length (out NUL-terminated; a malformed escape is kept as it is). */
static size_t url_decode(const char *s, size_t n, char *out, bool plus)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hex((unsigned char)s[i + 1])) >= 0 &&
            (lo = hex((unsigned char)s[i + 2])) >= 0) {
            out[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[k++] = plus && s[i] == '+' ? ' ' : s[i];
        }
    }
    out[k] = '\0';
    return k;
}

/* Counts the answer; logs an error answer (4xx, 5xx) at info, rate-limited, since a peer
 * decides how many there are. */
static void account(rt_lws_conn *c, const char *method, const char *path, unsigned status,
                    const char *why)
{
    rt_router *rt = rt_lws_conn_router(c);
    rt_router_http_response(rt, status);
    if (status < 400) {
        return;
    }
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(c->wsi, &peer);
    char q[128];
    size_t k = 0;
    for (const char *p = path; *p && k + 1 < sizeof(q); p++) {
        q[k++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
    }
    q[k] = '\0';
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                     "HTTP request refused", 0, "HTTP %s %s from %s on listener %s: %u (%s)",
                     method, q, peer.addr[0] ? peer.addr : "?", c->lis->cfg->id, status,
                     why ? why : "-");
}

/* Appends "name: value\r\n" at *k of buf (cap octets); false when it does not fit. */
static bool add(char *buf, size_t cap, size_t *k, const char *name, const char *value)
{
    int n = snprintf(buf + *k, cap - *k, "%s: %s\r\n", name, value);
    if (n < 0 || (size_t)n >= cap - *k) {
        return false;
    }
    *k += (size_t)n;
    return true;
}

/* Queues the status line and headers of r (and its body when it is small and in memory) and
 * starts the answer: the rest of the body follows on WRITEABLE. Returns -1 to close. */
static int answer(rt_lws_conn *c)
{
    rt_lws_web_conn *w = &c->u.web;
    const rt_http_resp *r = &w->resp;
    char buf[RT_LWS_WEB_HEADERS];
    char v[64];
    size_t k = 0;
    int n = snprintf(buf, sizeof(buf), "HTTP/1.1 %u %s\r\n", r->status, rt_http1_reason(r->status));
    if (n < 0 || (size_t)n >= sizeof(buf)) {
        return -1;
    }
    k = (size_t)n;
    char date[RT_HTTP1_DATE_MAX];
    rt_http1_date((int64_t)(rt_router_wall_ns(rt_lws_conn_router(c)) / 1000000000u), date);
    snprintf(v, sizeof(v), "%llu", (unsigned long long)r->length);
    bool ok = !date[0] || add(buf, sizeof(buf), &k, "date", date);
    ok = ok && add(buf, sizeof(buf), &k, "content-length", v);
    ok = ok && (!r->content_type || add(buf, sizeof(buf), &k, "content-type", r->content_type));
    ok = ok && (!r->location || add(buf, sizeof(buf), &k, "location", r->location));
    ok = ok && (!r->etag[0] || add(buf, sizeof(buf), &k, "etag", r->etag));
    ok = ok &&
         (!r->last_modified[0] || add(buf, sizeof(buf), &k, "last-modified", r->last_modified));
    if (r->no_store) {
        ok = ok && add(buf, sizeof(buf), &k, "cache-control",
                       "no-store, no-cache, must-revalidate, max-age=0");
    } else if (r->cache_secs >= 0) {
        snprintf(v, sizeof(v), "max-age=%lld, public", (long long)r->cache_secs);
        ok = ok && add(buf, sizeof(buf), &k, "cache-control", v);
    }
    ok = ok && (!r->allow || add(buf, sizeof(buf), &k, "allow", "GET, HEAD"));
    ok = ok && add(buf, sizeof(buf), &k, "x-content-type-options", "nosniff");
    ok = ok && add(buf, sizeof(buf), &k, "connection", c->keep_alive ? "keep-alive" : "close");
    ok = ok && k + 2 < sizeof(buf);
    if (!ok) {
        /* Headers that do not fit (a Location built from a very long path): no answer can be
         * made, and the response's resources go with the connection. */
        RT_LOG_DEBUG(0, "HTTP answer %u: its headers do not fit in %zu bytes; closing", r->status,
                     sizeof(buf));
        rt_http_resp_fini(&w->resp);
        return -1;
    }
    memcpy(buf + k, "\r\n", 2);
    k += 2;
    w->busy = true;
    w->sent = 0;
    c->mode = RT_LWS_CONN_ANSWER;
    if (!rt_lws_conn_out(c, buf, k)) {
        return 0;
    }
    if (!r->head && r->fd < 0 && r->length <= RT_LWS_WEB_INLINE && r->length) {
        if (!rt_lws_conn_out(c, r->data, (size_t)r->length)) {
            return 0;
        }
        w->sent = r->length;
    }
    return 0;
}

/* A plain-text answer of this adapter's own (status, body). */
static int simple(rt_lws_conn *c, const char *method, const char *path, unsigned status,
                  const char *body)
{
    rt_lws_web_conn *w = &c->u.web;
    rt_http_resp *r = &w->resp;
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->status = status;
    r->content_type = "text/plain";
    r->data = (const unsigned char *)body;
    r->length = strlen(body);
    r->cache_secs = -1;
    r->head = strcmp(method, "HEAD") == 0;
    account(c, method, path, status, body);
    return answer(c);
}

/* --- The HTTP bridge ------------------------------------------------------------------------ */

/* Core -> adapter for a bridge session: its answer is read in WRITEABLE. */
static void bridge_want_write(void *tp)
{
    rt_lws_conn_want_write(conn_of_web(tp));
}

static void bridge_close(void *tp, uint16_t code, const char *reason)
{
    (void)code;
    (void)reason;
    rt_lws_web_conn *w = tp;
    w->sess_closed = true;
    rt_lws_conn_want_write(conn_of_web(tp));
}

static const rt_transport_ops bridge_ops = {
        .want_write = bridge_want_write,
        .close = bridge_close,
};

/* Ends the request's session (the dealer cancels a call still pending) and drops its body. */
static void bridge_release(rt_lws_web_conn *w)
{
    if (w->sess) {
        rt_session_close(w->sess, 1000, "HTTP bridge request done", true);
        rt_session_on_closed(w->sess);
        w->sess = NULL;
    }
    rt_wire_conn_free(w->wire);
    w->wire = NULL;
    wamp_buf_unref(&w->body);
    free(w->sig_buf);
    w->sig_buf = NULL;
    memset(&w->sig, 0, sizeof(w->sig));
    w->sess_closed = false;
}

/* a (taken) becomes the answer, which starts; close: the request's body was not read, so the
 * connection cannot go on. Returns -1 to close at once. */
static int bridge_answer(rt_lws_conn *c, const char *method, rt_bridge_answer *a, bool close)
{
    rt_lws_web_conn *w = &c->u.web;
    const char *path = w->bridge ? w->bridge->prefix : "?";
    bridge_release(w);
    rt_http_resp *r = &w->resp;
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->status = a->status;
    r->content_type = RT_BRIDGE_CONTENT_TYPE;
    r->owned_body = (unsigned char *)a->body;
    r->data = r->owned_body;
    r->length = a->len;
    r->cache_secs = -1;
    r->no_store = true;
    r->head = strcmp(method, "HEAD") == 0;
    r->why = a->status >= 400 ? "HTTP bridge request refused" : NULL;
    a->body = NULL;
    account(c, method, path, r->status, r->why);
    w->bridge = NULL;
    if (close) {
        c->keep_alive = false;
    }
    return answer(c);
}

/* The signature arguments of the query (Crossbar's signed requests), percent-decoded into
 * w->sig_buf. false when out of memory. */
static bool bridge_args(rt_lws_web_conn *w, const rt_http1_str *query)
{
    static const char *const names[] = {"key", "timestamp", "seq", "nonce", "signature"};
    const char **out[] = {&w->sig.key, &w->sig.timestamp, &w->sig.seq, &w->sig.nonce,
                          &w->sig.signature};
    memset(&w->sig, 0, sizeof(w->sig));
    if (query->len == 0) {
        return true;
    }
    w->sig_buf = malloc(query->len + 1);
    if (!w->sig_buf) {
        return false;
    }
    char *dst = w->sig_buf;
    const char *p = query->p;
    const char *end = p + query->len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *arg_end = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(arg_end - p));
        if (eq) {
            for (size_t i = 0; i < 5; i++) {
                if (!*out[i] && strlen(names[i]) == (size_t)(eq - p) &&
                    memcmp(p, names[i], (size_t)(eq - p)) == 0) {
                    size_t n = url_decode(eq + 1, (size_t)(arg_end - eq - 1), dst, true);
                    *out[i] = dst;
                    dst += n + 1;
                    break;
                }
            }
        }
        p = arg_end + 1;
    }
    return true;
}

static int bridge_body_done(rt_lws_conn *c);

static int bridge_begin(rt_lws_conn *c, const rt_http1_req *req, const rt_web_path *wp,
                        const char *method, uint64_t body_len)
{
    rt_lws_web_conn *w = &c->u.web;
    char ct[RT_LWS_WEB_VALUE_MAX];
    rt_bridge_req br = {
            .method = method,
            .content_type = value_of(req, "Content-Type", ct, sizeof(ct)),
            .content_length = rt_http1_field_get(req, "Content-Length") ? (int64_t)body_len : -1,
            .tls = lws_is_ssl(c->wsi) != 0,
    };
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(c->wsi, &peer);
    br.peer_addr = peer.addr;
    bool proceed = false;
    rt_bridge_answer a = {0};
    w->bridge = wp;
    if (!bridge_args(w, &req->query) || rt_bridge_check(wp, &br, &proceed, &a) != WAMP_OK) {
        rt_bridge_answer_fini(&a);
        return -1;
    }
    if (!proceed) {
        return bridge_answer(c, method, &a, body_len > 0);
    }
    if (body_len > wp->post_body_limit) {
        if (rt_bridge_too_long(wp, (size_t)body_len, &a) != WAMP_OK) {
            return -1;
        }
        return bridge_answer(c, method, &a, true);
    }
    /* The buffer grows as the body comes: a head that only announces a large body holds no
     * more than this. */
    w->body = wamp_buf_new(
            body_len ? (size_t)(body_len < RT_LWS_WEB_BODY_FIRST ? body_len : RT_LWS_WEB_BODY_FIRST)
                     : 16);
    if (!w->body) {
        return -1;
    }
    char expect[32];
    if (body_len && req->minor == 1 && value_of(req, "Expect", expect, sizeof(expect)) &&
        strcasecmp(expect, "100-continue") == 0) {
        /* RFC 9110 10.1.1: the client waits for this before it sends the body (libcurl does,
         * for a second, for larger bodies). */
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (!rt_lws_conn_out(c, cont, sizeof(cont) - 1)) {
            return -1;
        }
    }
    w->body_need = body_len;
    c->mode = RT_LWS_CONN_BODY;
    return body_len ? 0 : bridge_body_done(c);
}

int rt_lws_web_body(rt_lws_conn *c, const unsigned char *in, size_t len, size_t *used)
{
    rt_lws_web_conn *w = &c->u.web;
    size_t n = len < w->body_need ? len : (size_t)w->body_need;
    *used = n;
    if (wamp_buf_append(&w->body, in, n, SIZE_MAX) != WAMP_OK) {
        return -1;
    }
    w->body_need -= n;
    return w->body_need ? 0 : bridge_body_done(c);
}

/* The whole body of an HTTP bridge request is in: its PUBLISH or CALL goes to the router in a
 * session of its own, whose answer WRITEABLE reads. */
static int bridge_body_done(rt_lws_conn *c)
{
    rt_lws_web_conn *w = &c->u.web;
    rt_router *rt = rt_lws_conn_router(c);
    const rt_web_path *wp = w->bridge;
    rt_bridge_answer a = {0};
    char *msg = NULL;
    size_t msg_len = 0;
    bool ok = false;
    c->mode = RT_LWS_CONN_ANSWER;
    int64_t now_ms = (int64_t)(rt_router_wall_ns(rt) / 1000000u);
    if (rt_bridge_verify(wp, &w->sig, wamp_buf_cdata(w->body), wamp_buf_len(w->body), now_ms, &ok,
                         &a) != WAMP_OK) {
        return -1;
    }
    if (!ok) {
        return bridge_answer(c, "POST", &a, false);
    }
    if (rt_bridge_message(wp, wamp_buf_cdata(w->body), wamp_buf_len(w->body),
                          RT_LWS_WEB_BRIDGE_REQUEST, &msg, &msg_len, &a) != WAMP_OK) {
        return -1;
    }
    wamp_buf_unref(&w->body);
    if (!msg) {
        return bridge_answer(c, "POST", &a, false);
    }
    /* The request's own session: authid "http-bridge:<path>", the path's role, the client's
     * address; it lives until the answer (or the client) goes, so traces, authorization, call
     * timeouts and cancelling are those of any session. */
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(c->wsi, &peer);
    peer.listener_id = c->lis->cfg->id;
    peer.max_message_size = c->lis->cfg->max_message_size;
    char authid[256];
    snprintf(authid, sizeof(authid), "http-bridge:%s", wp->prefix);
    wamp_err err = WAMP_OK;
    w->sess = rt_router_attach(rt, &bridge_ops, w, WAMP_SER_JSON, &peer);
    if (w->sess) {
        /* Its messages go into the wire capture whole (there are no frames to capture). */
        w->wire = rt_wire_conn_start(rt, w->sess, TRACE_WIRE_MESSAGE, WAMP_SER_JSON, 0);
    }
    if (!w->sess) {
        err = rt_bridge_deny(503, "the router is not taking sessions (shutting down)", &a);
    } else if ((err = rt_session_join_internal(w->sess, wp->realm, authid, wp->role)) ==
               WAMP_ENOTFOUND) {
        err = rt_bridge_deny(500, "the path's realm or role does not exist", &a);
    } else if (err == WAMP_OK) {
        rt_wire_conn_msg(rt, w->wire, TRACE_RX, msg, msg_len);
        err = rt_session_on_message(w->sess, msg, msg_len);
        free(msg);
        if (err == WAMP_OK) {
            rt_lws_conn_want_write(c);
            return 0;
        }
        msg = NULL;
    }
    free(msg);
    if (err != WAMP_OK) {
        rt_bridge_answer_fini(&a);
        return -1;
    }
    return bridge_answer(c, "POST", &a, false);
}

/* WRITEABLE while the request's session waits: reads what the router sent it until the
 * answer to its PUBLISH or CALL, then starts that answer. */
static int bridge_writeable(rt_lws_conn *c)
{
    rt_lws_web_conn *w = &c->u.web;
    rt_bridge_answer a = {0};
    bool have = false;
    wamp_buf *b;
    while (!have && (b = rt_session_tx_peek(w->sess))) {
        rt_wire_conn_msg(rt_lws_conn_router(c), w->wire, TRACE_TX, wamp_buf_cdata(b),
                         wamp_buf_len(b));
        json_t *m =
                json_loadb((const char *)wamp_buf_cdata(b), wamp_buf_len(b), JSON_ALLOW_NUL, NULL);
        wamp_err err = m ? rt_bridge_answer_of(m, RT_LWS_WEB_BRIDGE_REQUEST, &have, &a) : WAMP_OK;
        json_decref(m);
        rt_session_tx_pop(w->sess);
        if (err != WAMP_OK) {
            return -1;
        }
    }
    if (!have && !w->sess_closed) {
        return 0; /* the answer is not there yet (a call in progress) */
    }
    if (!have && rt_bridge_deny(503, "the router closed the request's session", &a) != WAMP_OK) {
        return -1;
    }
    return bridge_answer(c, "POST", &a, false);
}

/* --- Requests ------------------------------------------------------------------------------- */

int rt_lws_web_request(rt_lws_conn *c, const rt_http1_req *req)
{
    rt_lws_web_conn *w = &c->u.web;
    const rt_lws_ws_listener *lis = c->lis;
    const rt_config *cfg = rt_router_config(rt_lws_conn_router(c));
    rt_lws_web_closed(c); /* nothing is left of an earlier answer */
    char method[16];
    if (req->method.len < sizeof(method)) {
        memcpy(method, req->method.p, req->method.len);
        method[req->method.len] = '\0';
    } else {
        snprintf(method, sizeof(method), "OTHER");
    }
    char *path = malloc(req->path.len + 1);
    if (!path) {
        return -1;
    }
    size_t path_len = url_decode(req->path.p, req->path.len, path, false);
    uint64_t body_len = 0;
    int r;
    if (rt_http1_body_length(req, &body_len) != WAMP_OK) {
        c->keep_alive = false;
        r = simple(c, method, path, 411, "request bodies need a Content-Length");
        goto out;
    }
    bool on_ws_path = rt_lws_conn_ws_path(lis, req->path.p, req->path.len) != NULL;
    if (body_len) {
        c->keep_alive = false; /* unless an HTTP bridge request reads it (below) */
    }
    if (on_ws_path || lis->cfg->n_web == 0) {
        r = on_ws_path ? simple(c, method, path, 400, "this is a WAMP WebSocket endpoint")
                       : simple(c, method, path, 404, "not found");
        goto out;
    }
    const char *rest = NULL;
    const rt_web_path *wp = rt_http_route(lis->cfg, path, path_len, &rest);
    if (wp && (wp->kind == RT_WEB_PUBLISHER || wp->kind == RT_WEB_CALLER)) {
        c->keep_alive = rt_http1_keep_alive(req);
        r = bridge_begin(c, req, wp, method, body_len);
        goto out;
    }
    char inm[RT_LWS_WEB_VALUE_MAX];
    char ims[RT_LWS_WEB_VALUE_MAX];
    rt_http_req hreq = {
            .method = method,
            .path = path,
            .path_len = path_len,
            .if_none_match = value_of(req, "If-None-Match", inm, sizeof(inm)),
            .if_modified_since = value_of(req, "If-Modified-Since", ims, sizeof(ims)),
    };
    rt_http_node node = {
            .node_id = cfg->node_id, .worker_id = cfg->worker_id, .version = RT_VERSION};
    if (rt_http_respond(lis->cfg, &node, &hreq, &w->resp) != WAMP_OK) {
        c->keep_alive = false;
        r = simple(c, method, path, 500, "out of memory");
        goto out;
    }
    account(c, method, path, w->resp.status, w->resp.why);
    r = answer(c);
out:
    free(path);
    return r;
}

int rt_lws_web_writeable(rt_lws_conn *c)
{
    rt_lws_web_conn *w = &c->u.web;
    if (w->sess) {
        return bridge_writeable(c);
    }
    if (!w->busy) {
        return 0; /* reading a body */
    }
    rt_http_resp *r = &w->resp;
    if (r->head || w->sent >= r->length) {
        rt_http_resp_fini(r);
        w->busy = false;
        return RT_LWS_WEB_ANSWERED;
    }
    unsigned char *buf = c->lis->tx_scratch;
    uint64_t left = r->length - w->sent;
    size_t n = left > RT_LWS_WEB_CHUNK ? RT_LWS_WEB_CHUNK : (size_t)left;
    if (r->fd >= 0) {
        ssize_t got = pread(r->fd, buf, n, (off_t)w->sent);
        if (got != (ssize_t)n) {
            /* The file shrank or cannot be read: the promised length cannot be kept. */
            RT_LOG_DEBUG(0, "static file read failed after %llu bytes; closing",
                         (unsigned long long)w->sent);
            return -1;
        }
    } else {
        memcpy(buf, r->data + w->sent, n);
    }
    if (rt_lws_conn_write(c, buf, n) < 0) {
        return -1;
    }
    w->sent += n;
    lws_callback_on_writable(c->wsi);
    return 0;
}

void rt_lws_web_closed(rt_lws_conn *c)
{
    rt_lws_web_conn *w = &c->u.web;
    bridge_release(w);
    w->bridge = NULL;
    if (w->busy) {
        rt_http_resp_fini(&w->resp);
        w->busy = false;
    }
}
