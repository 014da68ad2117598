/* rt_http1.c: HTTP/1.1 request heads (see rt_http1.h for the rules).
 *
 * One pass over the lines the buffer holds: each complete line is checked as it is met, so
 * octets that can never become a request are refused before the head is complete, and only
 * the length limit waits for more input. The parse keeps no state between calls: the caller
 * calls again with the longer buffer (the cost is linear in its length, so an adapter calls
 * it when the new octets hold a line feed). */
#include "rt_http1.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        return true;
    }
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_token(const char *p, size_t n)
{
    if (n == 0) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_tchar((unsigned char)p[i])) {
            return false;
        }
    }
    return true;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static bool name_is(rt_http1_str s, const char *name)
{
    size_t n = strlen(name);
    return s.len == n && strncasecmp(s.p, name, n) == 0;
}

/* The request line at p[0..n): method SP request-target SP HTTP-version. */
static wamp_err request_line(const char *p, size_t n, rt_http1_req *req, const char **why)
{
    const char *sp1 = memchr(p, ' ', n);
    if (!sp1) {
        *why = "malformed request line";
        return WAMP_EPROTO;
    }
    req->method = (rt_http1_str){p, (size_t)(sp1 - p)};
    if (!is_token(req->method.p, req->method.len)) {
        *why = "invalid method";
        return WAMP_EPROTO;
    }
    const char *t = sp1 + 1;
    const char *end = p + n;
    const char *sp2 = memchr(t, ' ', (size_t)(end - t));
    if (!sp2 || sp2 == t) {
        *why = "malformed request line";
        return WAMP_EPROTO;
    }
    for (const char *c = t; c < sp2; c++) {
        unsigned char u = (unsigned char)*c;
        if (u < 0x20 || u == 0x7f) {
            *why = "control character in the request target";
            return WAMP_EPROTO;
        }
    }
    req->target = (rt_http1_str){t, (size_t)(sp2 - t)};
    const char *v = sp2 + 1;
    size_t vlen = (size_t)(end - v);
    if (vlen == 8 && memcmp(v, "HTTP/1.", 7) == 0 && (v[7] == '0' || v[7] == '1')) {
        req->minor = (unsigned)(v[7] - '0');
    } else if (memchr(v, ' ', vlen)) {
        *why = "malformed request line";
        return WAMP_EPROTO;
    } else {
        *why = "unsupported HTTP version";
        return WAMP_EPROTO;
    }
    /* Path and query. An absolute-form target (RFC 9112 3.2.2) has its scheme and authority
     * left out of the path. */
    const char *path = t;
    const char *q = memchr(t, '?', req->target.len);
    const char *path_end = q ? q : sp2;
    const char *scheme = memchr(t, ':', (size_t)(path_end - t));
    if (*t != '/' && scheme && path_end - scheme >= 3 && scheme[1] == '/' && scheme[2] == '/') {
        const char *slash = memchr(scheme + 3, '/', (size_t)(path_end - (scheme + 3)));
        path = slash ? slash : path_end;
    }
    req->path = (rt_http1_str){path, (size_t)(path_end - path)};
    req->query = q ? (rt_http1_str){q + 1, (size_t)(sp2 - q - 1)} : (rt_http1_str){sp2, 0};
    return WAMP_OK;
}

/* A header field line at p[0..n) (n > 0). */
static wamp_err field_line(const char *p, size_t n, rt_http1_req *req, const char **why)
{
    if (is_ows(p[0])) {
        *why = "obsolete line folding";
        return WAMP_EPROTO;
    }
    const char *colon = memchr(p, ':', n);
    if (!colon) {
        *why = "header field without a colon";
        return WAMP_EPROTO;
    }
    size_t name_len = (size_t)(colon - p);
    if (name_len > 0 && is_ows(p[name_len - 1])) {
        *why = "whitespace before a header field's colon";
        return WAMP_EPROTO;
    }
    if (!is_token(p, name_len)) {
        *why = "invalid header field name";
        return WAMP_EPROTO;
    }
    const char *v = colon + 1;
    const char *end = p + n;
    while (v < end && is_ows(*v)) {
        v++;
    }
    while (end > v && is_ows(end[-1])) {
        end--;
    }
    if (memchr(v, '\0', (size_t)(end - v))) {
        *why = "NUL in a header field value";
        return WAMP_EPROTO;
    }
    if (req->n_fields == RT_HTTP1_MAX_FIELDS) {
        *why = "too many header fields";
        return WAMP_ETOOBIG;
    }
    req->fields[req->n_fields++] = (rt_http1_field){{p, name_len}, {v, (size_t)(end - v)}};
    return WAMP_OK;
}

/* One decimal number (1*DIGIT) that fits 64 bits. */
static bool parse_length(rt_http1_str s, uint64_t *out)
{
    if (s.len == 0) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (c < '0' || c > '9') {
            return false;
        }
        if (v > (UINT64_MAX - (c - '0')) / 10) {
            return false;
        }
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

/* The framing rules of a complete head (RFC 9112 6.1-6.3). */
static wamp_err check_framing(const rt_http1_req *req, const char **why)
{
    bool have_len = false;
    uint64_t len = 0;
    for (size_t i = 0; i < req->n_fields; i++) {
        if (!name_is(req->fields[i].name, "content-length")) {
            continue;
        }
        uint64_t v;
        if (!parse_length(req->fields[i].value, &v)) {
            *why = "invalid Content-Length";
            return WAMP_EPROTO;
        }
        if (have_len && v != len) {
            *why = "conflicting Content-Length fields";
            return WAMP_EPROTO;
        }
        have_len = true;
        len = v;
    }
    if (rt_http1_field_get(req, "transfer-encoding")) {
        if (have_len) {
            *why = "Transfer-Encoding together with Content-Length";
            return WAMP_EPROTO;
        }
        if (req->minor == 0) {
            *why = "Transfer-Encoding in an HTTP/1.0 request";
            return WAMP_EPROTO;
        }
    }
    return WAMP_OK;
}

wamp_err rt_http1_parse(const char *buf, size_t len, size_t max_head, rt_http1_req *req,
                        const char **why)
{
    static const char *unused;
    if (!why) {
        why = &unused;
    }
    *why = NULL;
    req->method = req->target = req->path = req->query = (rt_http1_str){buf, 0};
    req->minor = 0;
    req->n_fields = 0;
    req->head_len = 0;
    size_t pos = 0;
    for (;;) { /* leading empty lines */
        if (pos < len && buf[pos] == '\n') {
            pos++;
        } else if (len - pos >= 2 && buf[pos] == '\r' && buf[pos + 1] == '\n') {
            pos += 2;
        } else {
            break;
        }
    }
    bool first = true;
    for (;;) {
        const char *lf = memchr(buf + pos, '\n', len - pos);
        if (!lf) {
            break;
        }
        size_t e = (size_t)(lf - buf);
        if (e + 1 > max_head) {
            *why = "request head too long";
            return WAMP_ETOOBIG;
        }
        size_t end = e > pos && buf[e - 1] == '\r' ? e - 1 : e;
        if (memchr(buf + pos, '\r', end - pos)) {
            *why = "bare CR in the request head";
            return WAMP_EPROTO;
        }
        wamp_err err = WAMP_OK;
        if (first) {
            err = request_line(buf + pos, end - pos, req, why);
            first = false;
        } else if (end == pos) {
            req->head_len = e + 1;
            return check_framing(req, why);
        } else {
            err = field_line(buf + pos, end - pos, req, why);
        }
        if (err != WAMP_OK) {
            return err;
        }
        pos = e + 1;
    }
    /* An incomplete line: a CR inside it can only be bare; the request line's method is
     * checked as far as it goes (non-HTTP octets are refused at once). */
    const char *cr = memchr(buf + pos, '\r', len - pos);
    if (cr && cr + 1 < buf + len) {
        *why = "bare CR in the request head";
        return WAMP_EPROTO;
    }
    for (size_t i = pos; first && i < len && buf[i] != ' ' && buf[i] != '\r'; i++) {
        if (!is_tchar((unsigned char)buf[i])) {
            *why = "invalid method";
            return WAMP_EPROTO;
        }
    }
    if (len >= max_head) {
        *why = "request head too long";
        return WAMP_ETOOBIG;
    }
    return WAMP_EAGAIN;
}

const rt_http1_field *rt_http1_field_get(const rt_http1_req *req, const char *name)
{
    for (size_t i = 0; i < req->n_fields; i++) {
        if (name_is(req->fields[i].name, name)) {
            return &req->fields[i];
        }
    }
    return NULL;
}

size_t rt_http1_field_count(const rt_http1_req *req, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < req->n_fields; i++) {
        n += name_is(req->fields[i].name, name);
    }
    return n;
}

bool rt_http1_has_token(const rt_http1_req *req, const char *name, const char *token)
{
    size_t tlen = strlen(token);
    for (size_t i = 0; i < req->n_fields; i++) {
        if (!name_is(req->fields[i].name, name)) {
            continue;
        }
        const char *p = req->fields[i].value.p;
        const char *end = p + req->fields[i].value.len;
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *e = comma ? comma : end;
            const char *s = p;
            while (s < e && is_ows(*s)) {
                s++;
            }
            const char *t = e;
            while (t > s && is_ows(t[-1])) {
                t--;
            }
            if ((size_t)(t - s) == tlen && strncasecmp(s, token, tlen) == 0) {
                return true;
            }
            p = comma ? comma + 1 : end;
        }
    }
    return false;
}

size_t rt_http1_join(const rt_http1_req *req, const char *name, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < req->n_fields; i++) {
        const rt_http1_field *f = &req->fields[i];
        if (!name_is(f->name, name) || f->value.len == 0) {
            continue;
        }
        if (n > 0) {
            for (size_t k = 0; k < 2; k++, n++) {
                if (n + 1 < cap) {
                    out[n] = ", "[k];
                }
            }
        }
        if (n + 1 < cap) {
            size_t room = cap - 1 - n;
            memcpy(out + n, f->value.p, f->value.len < room ? f->value.len : room);
        }
        n += f->value.len;
    }
    if (cap > 0) {
        out[n < cap ? n : cap - 1] = '\0';
    }
    return n;
}

wamp_err rt_http1_body_length(const rt_http1_req *req, uint64_t *len)
{
    *len = 0;
    if (rt_http1_field_get(req, "transfer-encoding")) {
        return WAMP_EINVAL;
    }
    const rt_http1_field *f = rt_http1_field_get(req, "content-length");
    if (f && !parse_length(f->value, len)) {
        return WAMP_EPROTO;
    }
    return WAMP_OK;
}

bool rt_http1_keep_alive(const rt_http1_req *req)
{
    if (rt_http1_has_token(req, "connection", "close")) {
        return false;
    }
    return req->minor >= 1 || rt_http1_has_token(req, "connection", "keep-alive");
}

const char *rt_http1_reason(unsigned status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 206:
        return "Partial Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 426:
        return "Upgrade Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}

void rt_http1_date(int64_t secs, char out[RT_HTTP1_DATE_MAX])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = (time_t)secs;
    struct tm tm;
    out[0] = '\0';
    if ((int64_t)t != secs || !gmtime_r(&t, &tm) || tm.tm_year < 0 || tm.tm_year > 8099) {
        return;
    }
    /* Not strftime(): its %a and %b follow the locale; HTTP's names are English. */
    int n = snprintf(out, RT_HTTP1_DATE_MAX, "%s, %02d %s %04d %02d:%02d:%02d GMT",
                     days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (n < 0 || n >= RT_HTTP1_DATE_MAX) {
        out[0] = '\0';
    }
}
