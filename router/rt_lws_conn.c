/* rt_lws_conn.c: what the parts of a WAMP listener's connection share (rt_lws_conn.h): the
 * output queue, writes, refusals, and the listener's WebSocket paths. */
#include "rt_lws_conn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <libwebsockets.h>

#include "rt_http1.h"
#include "rt_log.h"
#include "rt_router.h"

void rt_lws_close_deadline(struct lws *wsi, const rt_router *rt)
{
    uint32_t ms = rt_router_config(rt)->limits.close_timeout_ms;
    ms = ms ? ms : 5000; /* a zeroed hand-built config */
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, (int)((ms + 999) / 1000));
}

rt_router *rt_lws_conn_router(const rt_lws_conn *c)
{
    return lws_context_user(lws_get_context(c->wsi));
}

uint64_t rt_lws_conn_now_us(const rt_lws_conn *c)
{
    return rt_router_now_us(rt_lws_conn_router(c));
}

void rt_lws_conn_want_write(rt_lws_conn *c)
{
    if (!*c->lis->tearing_down) {
        lws_callback_on_writable(c->wsi);
    }
}

int rt_lws_conn_write(rt_lws_conn *c, unsigned char *p, size_t n)
{
    int w = lws_write(c->wsi, p, n, LWS_WRITE_RAW);
    return w < 0 || (size_t)w < n ? -1 : 0;
}

bool rt_lws_conn_can_sendv(struct lws *wsi)
{
    return !lws_is_ssl(wsi) && !lws_partial_buffered(wsi);
}

ssize_t rt_lws_conn_sendiov(struct lws *wsi, const struct iovec *iov, size_t n)
{
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = (struct iovec *)iov;
    mh.msg_iovlen = n;
    ssize_t w = sendmsg(lws_get_socket_fd(wsi), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    }
    return w;
}

ssize_t rt_lws_conn_sendv(struct lws *wsi, const void *a, size_t na, const void *b, size_t nb)
{
    struct iovec iov[2];
    size_t n = 0;
    if (na) {
        iov[n++] = (struct iovec){.iov_base = (void *)a, .iov_len = na};
    }
    if (nb) {
        iov[n++] = (struct iovec){.iov_base = (void *)b, .iov_len = nb};
    }
    return n ? rt_lws_conn_sendiov(wsi, iov, n) : 0;
}

bool rt_lws_conn_can_recv(struct lws *wsi)
{
    return !lws_is_ssl(wsi);
}

size_t rt_lws_conn_recv2(struct lws *wsi, void *a, size_t na, void *b, size_t nb)
{
    struct iovec iov[2] = {{.iov_base = a, .iov_len = na}, {.iov_base = b, .iov_len = nb}};
    ssize_t r = readv(lws_get_socket_fd(wsi), iov, nb ? 2 : 1);
    return r > 0 ? (size_t)r : 0;
}

bool rt_lws_conn_out(rt_lws_conn *c, const void *p, size_t n)
{
    if (wamp_buf_append(&c->out, p, n, RT_LWS_CONN_OUT_MAX) != WAMP_OK) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_lws_conn_now_us(c),
                         "connection output refused", 0,
                         "cannot queue %zu octets for a connection (peer does not read, or out of "
                         "memory); closing",
                         n);
        c->close_after_out = true;
        rt_lws_conn_want_write(c);
        /* A peer that does not read (a PING flood, say) never lets out what is pending, and
         * its input is read and dropped meanwhile: bounded as the other closes are. */
        rt_lws_close_deadline(c->wsi, rt_lws_conn_router(c));
        return false;
    }
    rt_lws_conn_want_write(c);
    return true;
}

void rt_lws_conn_refuse(rt_lws_conn *c, unsigned status, const char *body)
{
    rt_lws_conn_refuse_with(c, status, "", body);
}

void rt_lws_conn_refuse_with(rt_lws_conn *c, unsigned status, const char *fields, const char *body)
{
    char head[512];
    char date[RT_HTTP1_DATE_MAX];
    rt_http1_date((int64_t)(rt_router_wall_ns(rt_lws_conn_router(c)) / 1000000000u), date);
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %u %s\r\n%s%s%s%scontent-type: text/plain\r\ncontent-length: "
                     "%zu\r\nconnection: close\r\n\r\n%s\n",
                     status, rt_http1_reason(status), date[0] ? "date: " : "", date,
                     date[0] ? "\r\n" : "", fields, strlen(body) + 1, body);
    c->mode = RT_LWS_CONN_ANSWER;
    c->keep_alive = false;
    if (n > 0 && (size_t)n < sizeof(head)) {
        (void)rt_lws_conn_out(c, head, (size_t)n);
    }
    c->close_after_out = true;
    rt_lws_conn_want_write(c);
}

const rt_lws_ws_path *rt_lws_conn_ws_path(const rt_lws_ws_listener *lis, const char *path,
                                          size_t len)
{
    if (lis->cfg->any_path) {
        return &lis->paths[0];
    }
    for (size_t i = 0; i < lis->n_paths; i++) {
        const char *p = lis->paths[i].cfg->path;
        if (p && strlen(p) == len && memcmp(p, path, len) == 0) {
            return &lis->paths[i];
        }
    }
    return NULL;
}
