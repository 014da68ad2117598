/* bench_ws.c: the WebSocket client transport of wamp-bench.
 * Output: every message becomes one masked frame appended to an output buffer; bench_ws_flush()
 * writes the whole batch with one send() where the socket allows, which is what keeps the
 * generator cheap at high message rates. Input: one read() per readiness event into a growing
 * buffer; complete unfragmented frames are handed to the callback in place (no copy);
 * fragmented messages are reassembled in a second buffer. */
#include "bench_ws.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <sodium.h>

#include "wamp_ws.h"

/* RFC 6455 section 1.3: the GUID appended to the key for Sec-WebSocket-Accept. */

#define WS_OP_CONT   0x0
#define WS_OP_TEXT   0x1
#define WS_OP_BINARY 0x2
#define WS_OP_CLOSE  0x8
#define WS_OP_PING   0x9
#define WS_OP_PONG   0xA

/* Largest message accepted from the router: far above anything the benchmark provokes. */
#define WS_MAX_MESSAGE (64u * 1024u * 1024u)
/* Largest HTTP response head accepted during the handshake. */
#define WS_MAX_HEAD 16384u
/* Free space guaranteed before each read(). */
#define WS_READ_CHUNK (256u * 1024u)

typedef struct ws_bytes {
    unsigned char *p;
    size_t len; /* valid bytes */
    size_t off; /* consumed prefix (output: written; input: parsed) */
    size_t cap;
} ws_bytes;

struct bench_ws {
    int fd;
    int epfd;
    bench_ws_state state;
    bool binary;
    bool want_out; /* EPOLLOUT currently armed */
    bool frag_active;
    unsigned frag_opcode; /* TEXT or BINARY of the message being reassembled */
    uint32_t mask_seed;
    bench_ws_callbacks cb;
    void *user;
    ws_bytes in;
    ws_bytes out;
    ws_bytes frag;
    char key[32]; /* Sec-WebSocket-Key (base64 of 16 random bytes) */
    char subprotocol[64];
    char host[256];
    char port[8];
    char path[512];
    char err[512];
};

static wamp_err bytes_reserve(ws_bytes *b, size_t n)
{
    if (b->cap - b->len >= n) {
        return WAMP_OK;
    }
    if (b->off > 0) { /* reclaim the consumed prefix first */
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= n) {
            return WAMP_OK;
        }
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n) {
        cap *= 2;
    }
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
        return WAMP_ENOMEM;
    }
    b->p = p;
    b->cap = cap;
    return WAMP_OK;
}

static wamp_err bytes_append(ws_bytes *b, const void *data, size_t n)
{
    wamp_err err = bytes_reserve(b, n);
    if (err == WAMP_OK && n > 0) {
        memcpy(b->p + b->len, data, n);
        b->len += n;
    }
    return err;
}

static void bytes_free(ws_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* Marks the connection closed; what (may be NULL if ws->err is already set) becomes the error
 * text unless an earlier one is kept. */
static wamp_err ws_fail(bench_ws *ws, wamp_err err, const char *what)
{
    if (what && ws->err[0] == '\0') {
        snprintf(ws->err, sizeof(ws->err), "%s", what);
    }
    ws->state = BENCH_WS_CLOSED;
    return err;
}

static void ws_set_out_interest(bench_ws *ws, bool want)
{
    if (ws->want_out == want) {
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | (want ? (uint32_t)EPOLLOUT : 0u), .data.ptr = ws};
    if (epoll_ctl(ws->epfd, EPOLL_CTL_MOD, ws->fd, &ev) == 0) {
        ws->want_out = want;
    }
}

wamp_err bench_ws_url_parse(const char *url, bench_ws_url *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof(*out));
    if (strncmp(url, "ws://", 5) != 0) {
        snprintf(why, why_len, "only ws:// URLs are supported: %s", url);
        return WAMP_EINVAL;
    }
    const char *h = url + 5;
    const char *slash = strchr(h, '/');
    size_t hp_len = slash ? (size_t)(slash - h) : strlen(h);
    const char *host = h;
    size_t host_len;
    const char *port = NULL;
    size_t port_len = 0;
    if (hp_len > 0 && h[0] == '[') { /* [v6addr]:port */
        const char *rb = memchr(h, ']', hp_len);
        if (!rb) {
            snprintf(why, why_len, "bad IPv6 host in %s", url);
            return WAMP_EINVAL;
        }
        host = h + 1;
        host_len = (size_t)(rb - host);
        if (rb + 1 < h + hp_len && rb[1] == ':') {
            port = rb + 2;
            port_len = (size_t)(h + hp_len - port);
        }
    } else {
        const char *colon = memchr(h, ':', hp_len);
        host_len = colon ? (size_t)(colon - h) : hp_len;
        if (colon) {
            port = colon + 1;
            port_len = (size_t)(h + hp_len - port);
        }
    }
    if (host_len == 0 || host_len >= sizeof(out->host) || port_len >= sizeof(out->port)) {
        snprintf(why, why_len, "bad host or port in %s", url);
        return WAMP_EINVAL;
    }
    memcpy(out->host, host, host_len);
    if (port_len > 0) {
        memcpy(out->port, port, port_len);
    } else {
        snprintf(out->port, sizeof(out->port), "80");
    }
    snprintf(out->path, sizeof(out->path), "%s", slash ? slash : "/");

    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(out->host, out->port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(why, why_len, "cannot resolve %s:%s: %s", out->host, out->port, gai_strerror(rc));
        return WAMP_EINVAL;
    }
    memcpy(&out->addr, res->ai_addr, res->ai_addrlen);
    out->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    return WAMP_OK;
}

bench_ws *bench_ws_new(const bench_ws_url *url, const char *subprotocol, bool binary, int epfd,
                       const bench_ws_callbacks *cb, void *user, char *why, size_t why_len)
{
    bench_ws *ws = calloc(1, sizeof(*ws));
    if (!ws) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    ws->fd = -1;
    ws->epfd = epfd;
    ws->binary = binary;
    ws->cb = *cb;
    ws->user = user;
    snprintf(ws->subprotocol, sizeof(ws->subprotocol), "%s", subprotocol);
    snprintf(ws->host, sizeof(ws->host), "%s", url->host);
    snprintf(ws->port, sizeof(ws->port), "%s", url->port);
    snprintf(ws->path, sizeof(ws->path), "%s", url->path);
    unsigned char nonce[16];
    randombytes_buf(nonce, sizeof(nonce));
    sodium_bin2base64(ws->key, sizeof(ws->key), nonce, sizeof(nonce),
                      sodium_base64_VARIANT_ORIGINAL);
    randombytes_buf(&ws->mask_seed, sizeof(ws->mask_seed));
    ws->mask_seed |= 1u; /* xorshift state must not be 0 */

    ws->fd = socket(url->addr.ss_family, SOCK_STREAM, 0);
    if (ws->fd < 0) {
        snprintf(why, why_len, "socket: %s", strerror(errno));
        goto fail;
    }
    int flags = fcntl(ws->fd, F_GETFL);
    int one = 1;
    if (flags < 0 || fcntl(ws->fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
        setsockopt(ws->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
        snprintf(why, why_len, "socket options: %s", strerror(errno));
        goto fail;
    }
    if (connect(ws->fd, (const struct sockaddr *)&url->addr, url->addr_len) < 0 &&
        errno != EINPROGRESS) {
        snprintf(why, why_len, "connect %s:%s: %s", url->host, url->port, strerror(errno));
        goto fail;
    }
    /* Connect completion is reported as writability. */
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = ws};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, ws->fd, &ev) < 0) {
        snprintf(why, why_len, "epoll_ctl: %s", strerror(errno));
        goto fail;
    }
    ws->want_out = true;
    ws->state = BENCH_WS_CONNECTING;
    return ws;
fail:
    if (ws->fd >= 0) {
        close(ws->fd);
    }
    free(ws);
    return NULL;
}

void bench_ws_free(bench_ws *ws)
{
    if (!ws) {
        return;
    }
    if (ws->fd >= 0) {
        epoll_ctl(ws->epfd, EPOLL_CTL_DEL, ws->fd, NULL);
        close(ws->fd);
    }
    bytes_free(&ws->in);
    bytes_free(&ws->out);
    bytes_free(&ws->frag);
    free(ws);
}

bench_ws_state bench_ws_get_state(const bench_ws *ws)
{
    return ws->state;
}

void *bench_ws_user(const bench_ws *ws)
{
    return ws->user;
}

size_t bench_ws_pending(const bench_ws *ws)
{
    return ws->out.len - ws->out.off;
}

const char *bench_ws_error(const bench_ws *ws)
{
    return ws->err;
}

/* Appends one frame; client-to-server frames are always masked (RFC 6455 section 5.3). */
static wamp_err ws_queue_frame(bench_ws *ws, unsigned opcode, const void *data, size_t len)
{
    unsigned char hdr[14];
    size_t hlen = 2;

    hdr[0] = (unsigned char)(0x80u | opcode);
    if (len < 126) {
        hdr[1] = (unsigned char)(0x80u | len);
    } else if (len <= 0xFFFF) {
        hdr[1] = 0x80u | 126u;
        hdr[2] = (unsigned char)(len >> 8);
        hdr[3] = (unsigned char)len;
        hlen = 4;
    } else {
        hdr[1] = 0x80u | 127u;
        for (unsigned i = 0; i < 8; i++) {
            hdr[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
        }
        hlen = 10;
    }
    /* A fresh masking key per frame from a cheap xorshift (the key only has to be unpredictable
     * to intermediaries, and there are none on loopback). */
    uint32_t x = ws->mask_seed;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    ws->mask_seed = x;
    unsigned char mask[4] = {(unsigned char)(x >> 24), (unsigned char)(x >> 16),
                             (unsigned char)(x >> 8), (unsigned char)x};
    memcpy(hdr + hlen, mask, 4);
    hlen += 4;

    wamp_err err = bytes_reserve(&ws->out, hlen + len);
    if (err != WAMP_OK) {
        return err;
    }
    unsigned char *dst = ws->out.p + ws->out.len;
    memcpy(dst, hdr, hlen);
    dst += hlen;
    const unsigned char *src = data;
    for (size_t i = 0; i < len; i++) {
        dst[i] = (unsigned char)(src[i] ^ mask[i & 3u]);
    }
    ws->out.len += hlen + len;
    return WAMP_OK;
}

wamp_err bench_ws_send(bench_ws *ws, const void *data, size_t len)
{
    if (ws->state != BENCH_WS_OPEN) {
        return WAMP_ECLOSED;
    }
    return ws_queue_frame(ws, ws->binary ? WS_OP_BINARY : WS_OP_TEXT, data, len);
}

void bench_ws_close(bench_ws *ws, uint16_t code)
{
    if (ws->state != BENCH_WS_OPEN) {
        return;
    }
    unsigned char body[2] = {(unsigned char)(code >> 8), (unsigned char)code};
    if (ws_queue_frame(ws, WS_OP_CLOSE, body, sizeof(body)) == WAMP_OK) {
        ws->state = BENCH_WS_CLOSING;
    }
}

wamp_err bench_ws_flush(bench_ws *ws)
{
    if (ws->fd < 0 || ws->state == BENCH_WS_CONNECTING) {
        return WAMP_OK;
    }
    while (ws->out.off < ws->out.len) {
        ssize_t n = send(ws->fd, ws->out.p + ws->out.off, ws->out.len - ws->out.off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                ws_set_out_interest(ws, true);
                return WAMP_OK;
            }
            snprintf(ws->err, sizeof(ws->err), "send: %s", strerror(errno));
            return ws_fail(ws, WAMP_EIO, NULL);
        }
        ws->out.off += (size_t)n;
    }
    ws->out.off = 0;
    ws->out.len = 0;
    ws_set_out_interest(ws, false);
    return WAMP_OK;
}

static wamp_err ws_send_handshake(bench_ws *ws)
{
    char req[1536];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\n"
                     "Host: %s:%s\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\n"
                     "Sec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Protocol: %s\r\n"
                     "\r\n",
                     ws->path, ws->host, ws->port, ws->key, ws->subprotocol);
    if (n < 0 || (size_t)n >= sizeof(req)) {
        return ws_fail(ws, WAMP_EINVAL, "handshake request too long");
    }
    wamp_err err = bytes_append(&ws->out, req, (size_t)n);
    if (err != WAMP_OK) {
        return ws_fail(ws, err, "out of memory");
    }
    ws->state = BENCH_WS_HANDSHAKE;
    return bench_ws_flush(ws);
}

/* Value of header name in the response head (lines after the status line), trimmed; false if
 * absent. */
static bool head_value(const char *head, const char *name, char *out, size_t out_len)
{
    size_t nlen = strlen(name);
    const char *line = strstr(head, "\r\n");
    while (line && line[2] != '\r') {
        line += 2;
        const char *eol = strstr(line, "\r\n");
        if (!eol) {
            return false;
        }
        if ((size_t)(eol - line) > nlen && line[nlen] == ':' &&
            strncasecmp(line, name, nlen) == 0) {
            const char *v = line + nlen + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) {
                v++;
            }
            const char *e = eol;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t')) {
                e--;
            }
            size_t vlen = (size_t)(e - v);
            if (vlen >= out_len) {
                vlen = out_len - 1;
            }
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return true;
        }
        line = eol;
    }
    return false;
}

/* Parses the 101 response once its head is complete; leaves any frame bytes after it in ws->in. */
static wamp_err ws_check_handshake(bench_ws *ws, bool *done)
{
    *done = false;
    const unsigned char *end = NULL;
    for (size_t i = 3; i < ws->in.len; i++) {
        if (memcmp(ws->in.p + i - 3, "\r\n\r\n", 4) == 0) {
            end = ws->in.p + i + 1;
            break;
        }
    }
    if (!end) {
        if (ws->in.len > WS_MAX_HEAD) {
            return ws_fail(ws, WAMP_EPROTO, "handshake response head too large");
        }
        return WAMP_OK;
    }
    size_t head_len = (size_t)(end - ws->in.p);
    char *head = malloc(head_len + 1);
    if (!head) {
        return ws_fail(ws, WAMP_ENOMEM, "out of memory");
    }
    memcpy(head, ws->in.p, head_len);
    head[head_len] = '\0';

    wamp_err err = WAMP_EPROTO;
    char val[256];
    char accept[64];
    if (strncmp(head, "HTTP/1.1 101", 12) != 0) {
        const char *eol = strstr(head, "\r\n");
        snprintf(ws->err, sizeof(ws->err), "upgrade refused: %.*s",
                 (int)(eol ? (size_t)(eol - head) : 40u), head);
        goto fail;
    }
    if (!head_value(head, "Upgrade", val, sizeof(val)) || strcasecmp(val, "websocket") != 0) {
        snprintf(ws->err, sizeof(ws->err), "missing Upgrade: websocket");
        goto fail;
    }
    if (wamp_ws_accept(ws->key, strlen(ws->key), accept) != WAMP_OK) {
        snprintf(ws->err, sizeof(ws->err), "bad Sec-WebSocket-Key");
        goto fail;
    }
    if (!head_value(head, "Sec-WebSocket-Accept", val, sizeof(val)) || strcmp(val, accept) != 0) {
        snprintf(ws->err, sizeof(ws->err), "bad Sec-WebSocket-Accept");
        goto fail;
    }
    if (!head_value(head, "Sec-WebSocket-Protocol", val, sizeof(val)) ||
        strcmp(val, ws->subprotocol) != 0) {
        snprintf(ws->err, sizeof(ws->err), "router did not accept subprotocol %s", ws->subprotocol);
        err = WAMP_ENOTFOUND;
        goto fail;
    }
    free(head);
    ws->in.off = head_len;
    ws->state = BENCH_WS_OPEN;
    *done = true;
    if (ws->cb.on_open) {
        ws->cb.on_open(ws->user);
    }
    return WAMP_OK;
fail:
    free(head);
    ws->state = BENCH_WS_CLOSED;
    return err;
}

static uint64_t be_read(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

/* Consumes every complete frame in ws->in. */
static wamp_err ws_parse_frames(bench_ws *ws)
{
    while (ws->state == BENCH_WS_OPEN || ws->state == BENCH_WS_CLOSING) {
        const unsigned char *p = ws->in.p + ws->in.off;
        size_t avail = ws->in.len - ws->in.off;
        if (avail < 2) {
            break;
        }
        bool fin = (p[0] & 0x80u) != 0;
        unsigned opcode = p[0] & 0x0Fu;
        size_t hlen = 2;
        uint64_t len = p[1] & 0x7Fu;
        if (p[0] & 0x70u) {
            return ws_fail(ws, WAMP_EPROTO, "frame with RSV bits set (no extension negotiated)");
        }
        if (p[1] & 0x80u) {
            return ws_fail(ws, WAMP_EPROTO, "masked frame from server");
        }
        if (len == 126) {
            if (avail < 4) {
                break;
            }
            len = be_read(p + 2, 2);
            hlen = 4;
        } else if (len == 127) {
            if (avail < 10) {
                break;
            }
            len = be_read(p + 2, 8);
            hlen = 10;
        }
        if (len > WS_MAX_MESSAGE) {
            return ws_fail(ws, WAMP_ETOOBIG, "frame larger than 64 MiB");
        }
        if (avail < hlen + len) {
            /* Make room for the whole frame so the next read can complete it. */
            if (bytes_reserve(&ws->in, hlen + (size_t)len - avail + WS_READ_CHUNK) != WAMP_OK) {
                return ws_fail(ws, WAMP_ENOMEM, "out of memory");
            }
            break;
        }
        const unsigned char *payload = p + hlen;
        size_t plen = (size_t)len;
        ws->in.off += hlen + plen;

        switch (opcode) {
        case WS_OP_TEXT:
        case WS_OP_BINARY:
            if (ws->frag_active) {
                return ws_fail(ws, WAMP_EPROTO, "new data frame inside a fragmented message");
            }
            if (fin) {
                if (ws->cb.on_message) {
                    ws->cb.on_message(ws->user, payload, plen, opcode == WS_OP_BINARY);
                }
            } else {
                ws->frag_active = true;
                ws->frag.len = 0;
                ws->frag_opcode = opcode;
                if (bytes_append(&ws->frag, payload, plen) != WAMP_OK) {
                    return ws_fail(ws, WAMP_ENOMEM, "out of memory");
                }
            }
            break;
        case WS_OP_CONT:
            if (!ws->frag_active) {
                return ws_fail(ws, WAMP_EPROTO, "continuation frame without a message");
            }
            if (ws->frag.len + plen > WS_MAX_MESSAGE) {
                return ws_fail(ws, WAMP_ETOOBIG, "message larger than 64 MiB");
            }
            if (bytes_append(&ws->frag, payload, plen) != WAMP_OK) {
                return ws_fail(ws, WAMP_ENOMEM, "out of memory");
            }
            if (fin) {
                bool binary = ws->frag_opcode == WS_OP_BINARY;
                ws->frag_active = false;
                if (ws->cb.on_message) {
                    ws->cb.on_message(ws->user, ws->frag.p, ws->frag.len, binary);
                }
                ws->frag.len = 0;
            }
            break;
        case WS_OP_PING:
            if (!fin || plen > 125) {
                return ws_fail(ws, WAMP_EPROTO, "bad PING frame");
            }
            if (ws->state == BENCH_WS_OPEN &&
                ws_queue_frame(ws, WS_OP_PONG, payload, plen) != WAMP_OK) {
                return ws_fail(ws, WAMP_ENOMEM, "out of memory");
            }
            break;
        case WS_OP_PONG:
            break;
        case WS_OP_CLOSE:
            if (ws->state == BENCH_WS_OPEN) {
                /* Echo the status code (RFC 6455 section 5.5.1), then we are done. */
                ws_queue_frame(ws, WS_OP_CLOSE, payload, plen >= 2 ? 2 : 0);
                bench_ws_flush(ws);
            }
            if (plen >= 2) {
                snprintf(ws->err, sizeof(ws->err), "closed by router (code %u%s%.*s)",
                         (unsigned)be_read(payload, 2), plen > 2 ? ": " : "",
                         (int)(plen > 2 ? plen - 2 : 0), (const char *)payload + 2);
            } else {
                snprintf(ws->err, sizeof(ws->err), "closed by router");
            }
            ws->state = BENCH_WS_CLOSED;
            return WAMP_ECLOSED;
        default:
            return ws_fail(ws, WAMP_EPROTO, "unknown frame opcode");
        }
    }
    if (ws->in.off == ws->in.len) {
        ws->in.off = 0;
        ws->in.len = 0;
    }
    return WAMP_OK;
}

static wamp_err ws_read(bench_ws *ws)
{
    for (;;) {
        if (bytes_reserve(&ws->in, WS_READ_CHUNK) != WAMP_OK) {
            return ws_fail(ws, WAMP_ENOMEM, "out of memory");
        }
        size_t room = ws->in.cap - ws->in.len;
        ssize_t n = read(ws->fd, ws->in.p + ws->in.len, room);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return WAMP_OK;
            }
            snprintf(ws->err, sizeof(ws->err), "read: %s", strerror(errno));
            return ws_fail(ws, WAMP_EIO, NULL);
        }
        if (n == 0) {
            return ws_fail(ws, WAMP_ECLOSED, "connection closed by router");
        }
        ws->in.len += (size_t)n;
        wamp_err err;
        if (ws->state == BENCH_WS_HANDSHAKE) {
            bool done;
            err = ws_check_handshake(ws, &done);
            if (err == WAMP_OK && done) {
                err = ws_parse_frames(ws);
            }
        } else {
            err = ws_parse_frames(ws);
        }
        if (err != WAMP_OK) {
            return err;
        }
        /* A short read means the socket is drained; level-triggered epoll reports the rest. */
        if ((size_t)n < room) {
            return WAMP_OK;
        }
    }
}

wamp_err bench_ws_on_event(bench_ws *ws, uint32_t events)
{
    if (ws->state == BENCH_WS_CLOSED) {
        return WAMP_ECLOSED;
    }
    if (ws->state == BENCH_WS_CONNECTING) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
            return WAMP_OK;
        }
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (getsockopt(ws->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
            soerr = errno;
        }
        if (soerr != 0) {
            snprintf(ws->err, sizeof(ws->err), "connect %s:%s: %s", ws->host, ws->port,
                     strerror(soerr));
            return ws_fail(ws, WAMP_EIO, NULL);
        }
        return ws_send_handshake(ws);
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        wamp_err err = ws_read(ws);
        if (err != WAMP_OK) {
            return err;
        }
    }
    if (events & EPOLLOUT) {
        return bench_ws_flush(ws);
    }
    return WAMP_OK;
}
