/* rt_lws_http.c: the metrics listener's HTTP adapter. GET of the configured path: 200 with the
 * text, the connection's last answer; another method on that path: 405 (Allow: GET); any other
 * path: 404. A request renders the whole text once (a few KiB to a few hundred KiB, depending
 * on realms, transports and traces), and the body goes out in chunks, one lws_write per
 * WRITEABLE. */
#include "rt_lws_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "rt_config.h"
#include "rt_flight.h"
#include "rt_log.h"
#include "rt_metrics.h"

/* Body bytes per lws_write. */
#define RT_HTTP_CHUNK 16384

struct rt_lws_http {
    rt_router *rt;
    const rt_config *cfg;
    struct lws_protocols protocols[2];
    struct lws_vhost *vh;
    int port;
};

/* Per connection; allocated, zeroed and freed by lws. */
typedef struct http_pss {
    char *body; /* owned: the rendered text while it is being written */
    size_t len, sent;
    bool closing; /* the answer is written: the connection closes (closing()) */
    unsigned char chunk[LWS_PRE + RT_HTTP_CHUNK];
} http_pss;

/* The connection is done with this transaction: keep-alive or close. */
static int transaction_done(struct lws *wsi)
{
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* A reply without a body; allow: the Allow header's value or NULL. */
static int reply_empty(struct lws *wsi, unsigned status, const char *allow)
{
    unsigned char buf[LWS_PRE + 512];
    unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
    if (lws_add_http_common_headers(wsi, status, "text/plain", 0, &p, end) ||
        (allow && lws_add_http_header_by_name(
                          wsi, (const unsigned char *)"allow:", (const unsigned char *)allow,
                          (int)strlen(allow), &p, end)) ||
        lws_finalize_write_http_header(wsi, start, &p, end)) {
        return -1;
    }
    return transaction_done(wsi);
}

static int on_request(struct lws *wsi, http_pss *pss, const char *path)
{
    rt_lws_http *h = lws_get_vhost_user(lws_get_vhost(wsi));
    if (strcmp(path, h->cfg->metrics_path) != 0) {
        return reply_empty(wsi, HTTP_STATUS_NOT_FOUND, NULL);
    }
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) <= 0) {
        return reply_empty(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED, "GET");
    }
    rt_metrics_proc proc;
    bool have_proc = rt_metrics_proc_read(&proc);
    (void)rt_router_flight_sync(h->rt); /* the flight recorder's figures as it holds them */
    free(pss->body);
    pss->body = NULL;
    if (rt_metrics_render(h->rt, have_proc ? &proc : NULL, &pss->body, &pss->len) != WAMP_OK) {
        return reply_empty(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR, NULL);
    }
    pss->sent = 0;
    unsigned char buf[LWS_PRE + 512];
    unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
    static const char close_it[] = "close";
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, RT_METRICS_CONTENT_TYPE, pss->len, &p,
                                    end) ||
        lws_add_http_header_by_name(
                wsi, (const unsigned char *)"connection:", (const unsigned char *)close_it,
                (int)strlen(close_it), &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end)) {
        return -1;
    }
    lws_callback_on_writable(wsi);
    return 0;
}

/* The metrics answer is the connection's last ("connection: close"): lws 4.1 would not take up
 * a request pipelined behind an answer it completed on WRITEABLE, so nothing is left waiting
 * for an answer that never comes; a pipelining client retries it on a new connection (RFC 9112
 * 9.3.2). Closes once lws has written all of it. */
static int closing(struct lws *wsi)
{
    if (lws_partial_buffered(wsi)) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    return -1;
}

static int write_chunk(struct lws *wsi, http_pss *pss)
{
    if (pss->closing) {
        return closing(wsi);
    }
    if (!pss->body) {
        return 0;
    }
    size_t n = pss->len - pss->sent;
    if (n > RT_HTTP_CHUNK) {
        n = RT_HTTP_CHUNK;
    }
    bool last = pss->sent + n == pss->len;
    memcpy(pss->chunk + LWS_PRE, pss->body + pss->sent, n);
    if (lws_write(wsi, pss->chunk + LWS_PRE, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) !=
        (int)n) {
        return -1;
    }
    pss->sent += n;
    if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    free(pss->body);
    pss->body = NULL;
    pss->closing = true;
    return closing(wsi);
}

static int http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                   size_t len)
{
    http_pss *pss = user;
    (void)len;
    switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        return -1; /* no WebSocket upgrades here */
    case LWS_CALLBACK_HTTP:
        return on_request(wsi, pss, in ? (const char *)in : "");
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return write_chunk(wsi, pss);
    case LWS_CALLBACK_CLOSED_HTTP:
        if (pss) {
            free(pss->body);
            pss->body = NULL;
        }
        return 0;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

wamp_err rt_lws_http_new(struct lws_context *ctx, rt_router *rt, rt_lws_http **out, char *err,
                         size_t err_len)
{
    const rt_config *cfg = rt_router_config(rt);
    *out = NULL;
    if (!cfg->metrics_enabled) {
        return WAMP_OK;
    }
    rt_lws_http *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, err_len, "out of memory");
        return WAMP_ENOMEM;
    }
    h->rt = rt;
    h->cfg = cfg;
    h->protocols[0].name = "http";
    h->protocols[0].callback = http_cb;
    h->protocols[0].per_session_data_size = sizeof(http_pss);

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.vhost_name = "metrics";
    info.iface = cfg->metrics_interface;
    info.port = cfg->metrics_port;
    info.protocols = h->protocols;
    info.user = h;
    info.options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    /* The same lws 4.1.6 quirk as the WAMP listeners (rt_lws.c): an IPv4 literal needs an
     * IPv4-only vhost, or it would listen on every interface. */
    struct in_addr a4;
    if (cfg->metrics_interface && inet_pton(AF_INET, cfg->metrics_interface, &a4) == 1) {
        info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    }
    errno = 0;
    h->vh = lws_create_vhost(ctx, &info);
    if (!h->vh) {
        int e = errno;
        snprintf(err, err_len, "cannot listen on %s:%d (wampscope.metrics): %s",
                 cfg->metrics_interface ? cfg->metrics_interface : "0.0.0.0", cfg->metrics_port,
                 e ? strerror(e) : "see the log above");
        free(h);
        return WAMP_EIO;
    }
    h->port = lws_get_vhost_listen_port(h->vh);
    *out = h;
    return WAMP_OK;
}

bool rt_lws_http_url(const rt_lws_http *h, char *buf, size_t len)
{
    if (!h) {
        return false;
    }
    const char *host = h->cfg->metrics_interface ? h->cfg->metrics_interface : "0.0.0.0";
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(buf, len, "http://%s%s%s:%d%s", v6 ? "[" : "", host, v6 ? "]" : "", h->port,
                     h->cfg->metrics_path);
    return n >= 0 && (size_t)n < len;
}

void rt_lws_http_free(rt_lws_http *h)
{
    free(h);
}
