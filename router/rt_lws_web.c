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

#include "rt_config.h"
#include "rt_http.h"
#include "rt_log.h"
#include "rt_lws_peer.h"
#include "rt_router.h"

/* Bytes of body per write: a file is read in pieces of this size (from the shared scratch
 * buffer, which has room for LWS_PRE in front). */
#define RT_LWS_WEB_CHUNK ((size_t)32 * 1024)
_Static_assert(LWS_PRE + RT_LWS_WEB_CHUNK <= RT_LWS_WS_SCRATCH, "a chunk fits the scratch buffer");

/* Bytes of the status line and headers (a Location of a redirect included). */
#define RT_LWS_WEB_HEADERS 4096
/* Bytes of a conditional request header kept (longer ones are ignored). */
#define RT_LWS_WEB_COND_MAX 256

typedef struct web_pss {
    bool busy;         /* resp holds an answer whose body is being written */
    rt_http_resp resp; /* owned while busy */
    uint64_t sent;     /* body bytes written */
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
    if (pss && pss->busy) {
        rt_http_resp_fini(&pss->resp);
        pss->busy = false;
    }
}
