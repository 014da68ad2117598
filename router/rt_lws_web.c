/* rt_lws_web.c: see rt_lws_web.h. What is answered is decided by rt_http.c; here only the lws
 * side: the request's method and conditional headers in, the status line and headers out
 * (lws_add_http_common_headers() writes Content-Type and Content-Length and keeps the
 * connection alive per HTTP/1.1), then the body in chunks of RT_LWS_WEB_CHUNK bytes, one
 * lws_write() per HTTP_WRITEABLE, the last with LWS_WRITE_HTTP_FINAL, and
 * lws_http_transaction_completed() to wait for the next request on the connection. */
#include "rt_lws_web.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "rt_bridge.h"
#include "rt_config.h"
#include "rt_http.h"
#include "rt_log.h"
#include "rt_lws_peer.h"
#include "rt_router.h"
#include "rt_session.h"

/* Bytes of body per write: a file is read in pieces of this size (from the shared scratch
 * buffer, which has room for LWS_PRE in front). */
#define RT_LWS_WEB_CHUNK ((size_t)32 * 1024)
_Static_assert(LWS_PRE + RT_LWS_WEB_CHUNK <= RT_LWS_WS_SCRATCH, "a chunk fits the scratch buffer");

/* Bytes of the status line and headers (a Location of a redirect included). */
#define RT_LWS_WEB_HEADERS 4096
/* Bytes of a conditional request header kept (longer ones are ignored). */
#define RT_LWS_WEB_COND_MAX 256

/* The request id of the one PUBLISH or CALL a bridge session sends. */
#define RT_LWS_WEB_BRIDGE_REQUEST 1u

typedef struct web_pss {
    bool busy;         /* resp holds an answer whose body is being written */
    rt_http_resp resp; /* owned while busy */
    uint64_t sent;     /* body bytes written */
    /* The HTTP bridge (rt_bridge.h): the publisher or caller path of the request whose body is
     * being read (NULL otherwise), the body so far (owned), then the request's own session
     * (owned by the router; this holds it until rt_session_on_closed()) until its answer. */
    struct lws *wsi;
    const rt_web_path *bridge;
    wamp_buf *body;
    rt_session *sess;
    bool sess_closed; /* the router asked the session's transport to close */
    /* The signature arguments of the query (rt_bridge_sig points into these buffers, which
     * lws_get_urlarg_by_name() fills with "name=value"). */
    char arg_buf[5][192];
    rt_bridge_sig sig;
} web_pss;

size_t rt_lws_web_pss_size(void)
{
    return sizeof(web_pss);
}

bool rt_lws_web_enabled(const rt_lws_ws_listener *lis)
{
    return lis->cfg->n_web > 0;
}

static rt_router *router_of(struct lws *wsi)
{
    return lws_context_user(lws_get_context(wsi));
}

static const rt_lws_ws_listener *listener_of(struct lws *wsi)
{
    return lws_get_vhost_user(lws_get_vhost(wsi));
}

/* The request method: lws 4.1 keeps the URI under a token per method (lws-http.h). Methods lws
 * has no token for never reach LWS_CALLBACK_HTTP. */
static const char *method_of(struct lws *wsi)
{
    static const struct {
        enum lws_token_indexes token;
        const char *name;
    } methods[] = {
            {WSI_TOKEN_GET_URI, "GET"},         {WSI_TOKEN_HEAD_URI, "HEAD"},
            {WSI_TOKEN_POST_URI, "POST"},       {WSI_TOKEN_PUT_URI, "PUT"},
            {WSI_TOKEN_PATCH_URI, "PATCH"},     {WSI_TOKEN_DELETE_URI, "DELETE"},
            {WSI_TOKEN_OPTIONS_URI, "OPTIONS"},
    };

    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (lws_hdr_total_length(wsi, methods[i].token) > 0) {
            return methods[i].name;
        }
    }
    return "OTHER";
}

/* Copies header h into buf; NULL when absent or too long. */
static const char *header(struct lws *wsi, enum lws_token_indexes h, char *buf, size_t len)
{
    int total = lws_hdr_total_length(wsi, h);
    if (total <= 0 || (size_t)total >= len) {
        return NULL;
    }
    return lws_hdr_copy(wsi, buf, (int)len, h) == total ? buf : NULL;
}

/* Counts the answer; logs an error answer (4xx, 5xx) at info, rate-limited, since a peer
 * decides how many there are. */
static void account(struct lws *wsi, const char *method, const char *path, unsigned status,
                    const char *why)
{
    rt_router *rt = router_of(wsi);
    rt_router_http_response(rt, status);
    if (status < 400) {
        return;
    }
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(wsi, &peer);
    char q[128];
    size_t k = 0;
    for (const char *p = path; *p && k + 1 < sizeof(q); p++) {
        q[k++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
    }
    q[k] = '\0';
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(rt),
                     "HTTP request refused", 0, "HTTP %s %s from %s on listener %s: %u (%s)",
                     method, q, peer.addr[0] ? peer.addr : "?", listener_of(wsi)->cfg->id, status,
                     why ? why : "-");
}

static int add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p,
                      unsigned char *end)
{
    return lws_add_http_header_by_name(wsi, (const unsigned char *)name,
                                       (const unsigned char *)value, (int)strlen(value), p, end);
}

/* Writes the status line and headers of r; with_body: the (small, in-memory) body too, in the
 * same write. 0 on success. */
static int write_headers(struct lws *wsi, const rt_http_resp *r, bool with_body, unsigned char *buf,
                         size_t len)
{
    unsigned char *start = buf + LWS_PRE;
    unsigned char *p = start;
    unsigned char *end = buf + len - 1;
    char v[64];
    if (lws_add_http_common_headers(wsi, r->status, r->content_type, (lws_filepos_t)r->length, &p,
                                    end)) {
        return -1;
    }
    if (r->location && add_header(wsi, "location:", r->location, &p, end)) {
        return -1;
    }
    if (r->etag[0] && add_header(wsi, "etag:", r->etag, &p, end)) {
        return -1;
    }
    if (r->last_modified[0] && add_header(wsi, "last-modified:", r->last_modified, &p, end)) {
        return -1;
    }
    if (r->no_store && add_header(wsi, "cache-control:",
                                  "no-store, no-cache, must-revalidate, max-age=0", &p, end)) {
        return -1;
    }
    if (!r->no_store && r->cache_secs >= 0) {
        snprintf(v, sizeof(v), "max-age=%lld, public", (long long)r->cache_secs);
        if (add_header(wsi, "cache-control:", v, &p, end)) {
            return -1;
        }
    }
    if (r->allow && add_header(wsi, "allow:", "GET, HEAD", &p, end)) {
        return -1;
    }
    if (add_header(wsi, "x-content-type-options:", "nosniff", &p, end)) {
        return -1;
    }
    if (!with_body) {
        return lws_finalize_write_http_header(wsi, start, &p, end) ? -1 : 0;
    }
    if (lws_finalize_http_header(wsi, &p, end) || r->length > (uint64_t)(end - p)) {
        return -1;
    }
    memcpy(p, r->data, (size_t)r->length);
    p += r->length;
    size_t n = (size_t)(p - start);
    return lws_write(wsi, start, n, LWS_WRITE_HTTP_HEADERS) == (int)n ? 0 : -1;
}

/* The answer is out: ready for the next request on the connection, or -1 to close it. */
static int done(struct lws *wsi, web_pss *pss)
{
    rt_http_resp_fini(&pss->resp);
    pss->busy = false;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* --- The HTTP bridge ------------------------------------------------------------------------ */

/* Core -> adapter for a bridge session: its answer is read in HTTP_WRITEABLE. */
static void bridge_want_write(void *tp)
{
    web_pss *pss = tp;
    lws_callback_on_writable(pss->wsi);
}

static void bridge_close(void *tp, uint16_t code, const char *reason)
{
    (void)code;
    (void)reason;
    web_pss *pss = tp;
    pss->sess_closed = true;
    lws_callback_on_writable(pss->wsi);
}

static const rt_transport_ops bridge_ops = {
        .want_write = bridge_want_write,
        .close = bridge_close,
};

/* Ends the request's session (the dealer cancels a call still pending) and drops its body. */
static void bridge_release(web_pss *pss)
{
    if (pss->sess) {
        rt_session_close(pss->sess, 1000, "HTTP bridge request done", true);
        rt_session_on_closed(pss->sess);
        pss->sess = NULL;
    }
    wamp_buf_unref(&pss->body);
    pss->bridge = NULL;
    pss->sess_closed = false;
}

/* a (taken) becomes pss->resp. */
static void bridge_resp(web_pss *pss, rt_bridge_answer *a)
{
    rt_http_resp *r = &pss->resp;
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->status = a->status;
    r->content_type = RT_BRIDGE_CONTENT_TYPE;
    r->owned_body = (unsigned char *)a->body;
    r->data = r->owned_body;
    r->length = a->len;
    r->cache_secs = -1;
    r->no_store = true;
    r->why = a->status >= 400 ? "HTTP bridge request refused" : NULL;
    a->body = NULL;
}

/* Answers a at once, in the callback that decided it (headers and the small body in one
 * write); close: the request's body was not read, so the connection cannot go on. */
static int bridge_answer_now(struct lws *wsi, web_pss *pss, const char *method, rt_bridge_answer *a,
                             bool close)
{
    const char *path = pss->bridge ? pss->bridge->prefix : "?";
    bridge_resp(pss, a);
    pss->busy = true;
    account(wsi, method, path, pss->resp.status, pss->resp.why);
    unsigned char buf[LWS_PRE + RT_LWS_WEB_HEADERS];
    bridge_release(pss);
    if (write_headers(wsi, &pss->resp, true, buf, sizeof(buf)) != 0 || close) {
        rt_lws_web_on_closed(pss);
        return -1;
    }
    return done(wsi, pss);
}

/* Copies the signature arguments of the request's query (lws has decoded them) into pss. */
static void bridge_args(struct lws *wsi, web_pss *pss)
{
    static const char *const names[] = {"key=", "timestamp=", "seq=", "nonce=", "signature="};
    const char **out[] = {&pss->sig.key, &pss->sig.timestamp, &pss->sig.seq, &pss->sig.nonce,
                          &pss->sig.signature};
    for (size_t i = 0; i < 5; i++) {
        *out[i] = lws_get_urlarg_by_name(wsi, names[i], pss->arg_buf[i],
                                         (int)sizeof(pss->arg_buf[i]));
    }
}

static int bridge_begin(struct lws *wsi, web_pss *pss, const rt_web_path *w, const char *method)
{
    char ct[RT_LWS_WEB_COND_MAX];
    char cl[32];
    const char *len = header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, cl, sizeof(cl));
    rt_bridge_req req = {
            .method = method,
            .content_type = header(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE, ct, sizeof(ct)),
            .content_length = len ? strtoll(len, NULL, 10) : -1,
            .tls = lws_is_ssl(wsi) != 0,
    };
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(wsi, &peer);
    req.peer_addr = peer.addr;
    bool proceed = false;
    rt_bridge_answer a = {0};
    pss->wsi = wsi;
    pss->bridge = w;
    bridge_args(wsi, pss);
    if (rt_bridge_check(w, &req, &proceed, &a) != WAMP_OK) {
        rt_bridge_answer_fini(&a);
        return -1;
    }
    if (!proceed) {
        return bridge_answer_now(wsi, pss, method, &a, true);
    }
    pss->body = wamp_buf_new(req.content_length > 0 ? (size_t)req.content_length : 256);
    return pss->body ? 0 : -1;
}

int rt_lws_web_on_body(struct lws *wsi, void *user, const void *in, size_t len)
{
    web_pss *pss = user;
    if (!pss->bridge || !pss->body || pss->sess) {
        return -1; /* a body where none was expected */
    }
    size_t have = wamp_buf_len(pss->body);
    if (wamp_buf_append(&pss->body, in, len, pss->bridge->post_body_limit) != WAMP_OK) {
        rt_bridge_answer a = {0};
        if (rt_bridge_too_long(pss->bridge, have + len, &a) != WAMP_OK) {
            return -1;
        }
        return bridge_answer_now(wsi, pss, "POST", &a, true);
    }
    return 0;
}

int rt_lws_web_on_body_done(struct lws *wsi, void *user)
{
    web_pss *pss = user;
    if (!pss->bridge || !pss->body || pss->sess) {
        return -1;
    }
    rt_router *rt = router_of(wsi);
    const rt_web_path *w = pss->bridge;
    rt_bridge_answer a = {0};
    char *msg = NULL;
    size_t msg_len = 0;
    bool ok = false;
    int64_t now_ms = (int64_t)(rt_router_wall_ns(rt) / 1000000u);
    if (rt_bridge_verify(w, &pss->sig, wamp_buf_cdata(pss->body), wamp_buf_len(pss->body), now_ms,
                         &ok, &a) != WAMP_OK) {
        return -1;
    }
    if (!ok) {
        return bridge_answer_now(wsi, pss, "POST", &a, false);
    }
    if (rt_bridge_message(w, wamp_buf_cdata(pss->body), wamp_buf_len(pss->body),
                          RT_LWS_WEB_BRIDGE_REQUEST, &msg, &msg_len, &a) != WAMP_OK) {
        return -1;
    }
    wamp_buf_unref(&pss->body);
    if (!msg) {
        return bridge_answer_now(wsi, pss, "POST", &a, false);
    }
    /* The request's own session: authid "http-bridge:<path>", the path's role, the client's
     * address; it lives until the answer (or the client) goes, so traces, authorization, call
     * timeouts and cancelling are those of any session. */
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(wsi, &peer);
    peer.listener_id = listener_of(wsi)->cfg->id;
    peer.max_message_size = listener_of(wsi)->cfg->max_message_size;
    char authid[256];
    snprintf(authid, sizeof(authid), "http-bridge:%s", w->prefix);
    wamp_err err = WAMP_OK;
    pss->sess = rt_router_attach(rt, &bridge_ops, pss, WAMP_SER_JSON, &peer);
    if (!pss->sess) {
        err = rt_bridge_deny(503, "the router is not taking sessions (shutting down)", &a);
    } else if ((err = rt_session_join_internal(pss->sess, w->realm, authid, w->role)) ==
               WAMP_ENOTFOUND) {
        err = rt_bridge_deny(500, "the path's realm or role does not exist", &a);
    } else if (err == WAMP_OK) {
        err = rt_session_on_message(pss->sess, msg, msg_len);
        free(msg);
        if (err == WAMP_OK) {
            lws_callback_on_writable(wsi);
            return 0;
        }
        msg = NULL;
    }
    free(msg);
    if (err != WAMP_OK) {
        rt_bridge_answer_fini(&a);
        return -1;
    }
    return bridge_answer_now(wsi, pss, "POST", &a, false);
}

/* HTTP_WRITEABLE while the request's session waits: reads what the router sent it until the
 * answer to its PUBLISH or CALL, then writes that answer's headers (its body follows). */
static int bridge_writeable(struct lws *wsi, web_pss *pss)
{
    rt_bridge_answer a = {0};
    bool have = false;
    wamp_buf *b;
    while (!have && (b = rt_session_tx_peek(pss->sess))) {
        json_t *m =
                json_loadb((const char *)wamp_buf_cdata(b), wamp_buf_len(b), JSON_ALLOW_NUL, NULL);
        wamp_err err = m ? rt_bridge_answer_of(m, RT_LWS_WEB_BRIDGE_REQUEST, &have, &a) : WAMP_OK;
        json_decref(m);
        rt_session_tx_pop(pss->sess);
        if (err != WAMP_OK) {
            return -1;
        }
    }
    if (!have && !pss->sess_closed) {
        return 0; /* the answer is not there yet (a call in progress) */
    }
    if (!have && rt_bridge_deny(503, "the router closed the request's session", &a) != WAMP_OK) {
        return -1;
    }
    const char *path = pss->bridge->prefix;
    bridge_release(pss);
    bridge_resp(pss, &a);
    pss->busy = true;
    pss->sent = 0;
    account(wsi, "POST", path, pss->resp.status, pss->resp.why);
    unsigned char buf[LWS_PRE + RT_LWS_WEB_HEADERS];
    if (write_headers(wsi, &pss->resp, false, buf, sizeof(buf)) != 0) {
        rt_lws_web_on_closed(pss);
        return -1;
    }
    if (pss->resp.length == 0) {
        return done(wsi, pss);
    }
    lws_callback_on_writable(wsi);
    return 0;
}

int rt_lws_web_on_http(struct lws *wsi, void *user, const char *path)
{
    web_pss *pss = user;
    const rt_lws_ws_listener *lis = listener_of(wsi);
    const rt_config *cfg = rt_router_config(router_of(wsi));
    if (pss->busy) {
        rt_lws_web_on_closed(pss); /* cannot happen: lws serialises requests */
    }
    char inm[RT_LWS_WEB_COND_MAX];
    char ims[RT_LWS_WEB_COND_MAX];
    rt_http_req req = {
            .method = method_of(wsi),
            .path = path ? path : "",
            .path_len = path ? strlen(path) : 0,
            .if_none_match = header(wsi, WSI_TOKEN_HTTP_IF_NONE_MATCH, inm, sizeof(inm)),
            .if_modified_since = header(wsi, WSI_TOKEN_HTTP_IF_MODIFIED_SINCE, ims, sizeof(ims)),
    };
    const char *rest = NULL;
    const rt_web_path *w = path ? rt_http_route(lis->cfg, path, strlen(path), &rest) : NULL;
    if (w && (w->kind == RT_WEB_PUBLISHER || w->kind == RT_WEB_CALLER)) {
        return bridge_begin(wsi, pss, w, req.method);
    }
    rt_http_node node = {
            .node_id = cfg->node_id, .worker_id = cfg->worker_id, .version = RT_VERSION};
    wamp_err err = rt_http_respond(lis->cfg, &node, &req, &pss->resp);
    if (err != WAMP_OK) {
        account(wsi, req.method, req.path, 500, "out of memory");
        (void)lws_return_http_status(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, NULL);
        return -1;
    }
    pss->busy = true;
    pss->sent = 0;
    account(wsi, req.method, req.path, pss->resp.status, pss->resp.why);
    /* Another method's request may carry a body that is never read, and lws awaits that body
     * before it offers the connection for writing: the answer (a small error page) goes out
     * with its headers at once, and the connection closes. */
    bool close_now =
            strcmp(req.method, "GET") != 0 && strcmp(req.method, "HEAD") != 0 && pss->resp.fd < 0;
    unsigned char buf[LWS_PRE + RT_LWS_WEB_HEADERS];
    if (write_headers(wsi, &pss->resp, close_now, buf, sizeof(buf)) != 0 || close_now) {
        rt_lws_web_on_closed(pss);
        return -1;
    }
    if (pss->resp.head || pss->resp.length == 0) {
        return done(wsi, pss);
    }
    lws_callback_on_writable(wsi);
    return 0;
}

int rt_lws_web_on_writeable(struct lws *wsi, void *user)
{
    web_pss *pss = user;
    if (pss->sess) {
        return bridge_writeable(wsi, pss);
    }
    if (!pss->busy) {
        return 0;
    }
    rt_http_resp *r = &pss->resp;
    unsigned char *buf = listener_of(wsi)->tx_scratch + LWS_PRE;
    uint64_t left = r->length - pss->sent;
    size_t n = left > RT_LWS_WEB_CHUNK ? RT_LWS_WEB_CHUNK : (size_t)left;
    if (r->fd >= 0) {
        ssize_t got = pread(r->fd, buf, n, (off_t)pss->sent);
        if (got != (ssize_t)n) {
            /* The file shrank or cannot be read: the promised length cannot be kept. */
            RT_LOG_DEBUG(0, "static file read failed after %llu bytes; closing",
                         (unsigned long long)pss->sent);
            rt_lws_web_on_closed(pss);
            return -1;
        }
    } else {
        memcpy(buf, r->data + pss->sent, n);
    }
    bool final = n == left;
    int w = lws_write(wsi, buf, n, final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP);
    if (w < 0 || (size_t)w < n) {
        rt_lws_web_on_closed(pss);
        return -1;
    }
    pss->sent += n;
    if (final) {
        return done(wsi, pss);
    }
    lws_callback_on_writable(wsi);
    return 0;
}

void rt_lws_web_on_closed(void *user)
{
    web_pss *pss = user;
    if (pss) {
        bridge_release(pss);
    }
    if (pss && pss->busy) {
        rt_http_resp_fini(&pss->resp);
        pss->busy = false;
    }
}
