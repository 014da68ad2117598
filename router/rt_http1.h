/* rt_http1.h: HTTP/1.1 request heads (RFC 9112), parsed without a socket: the request line, the
 * header fields, the few header semantics the router needs (token lists such as Connection and
 * Upgrade, Content-Length, repeated fields joined), and the limits that bound them. The adapter
 * collects the octets of a request head and calls rt_http1_parse() until it is complete.
 *
 * Strict where RFC 9112 asks a server to be (the request is refused with 400 and never guessed
 * at): CRLF line ends (a bare LF is accepted as the RFC allows, a bare CR is not), no whitespace
 * between a field name and its colon, no obsolete line folding, tokens for method and field
 * names, a request target without controls or spaces, "HTTP/1.0" or "HTTP/1.1" only, a
 * Content-Length that is one decimal number (repeated only with the same value), no
 * Transfer-Encoding together with Content-Length nor in an HTTP/1.0 request. Field values have
 * surrounding whitespace stripped; a NUL, CR or LF inside a value is refused. Octets that can
 * never start a request line (a method that is not a token: a TLS ClientHello, a RawSocket
 * handshake) are refused as soon as they arrive, before any line end.
 *
 * Ownership: everything in rt_http1_req points into the caller's buffer (borrowed, valid while
 * it is). No state; any thread. */
#ifndef RT_HTTP1_H
#define RT_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wamp_err.h"

/* Most header fields one request may have; more is 431. */
#define RT_HTTP1_MAX_FIELDS 64

typedef struct rt_http1_str {
    const char *p; /* not NUL-terminated */
    size_t len;
} rt_http1_str;

typedef struct rt_http1_field {
    rt_http1_str name; /* as sent; compare case-insensitively */
    rt_http1_str value;
} rt_http1_field;

typedef struct rt_http1_req {
    rt_http1_str method;
    rt_http1_str target; /* the request target as sent (origin form: path and query) */
    rt_http1_str path;   /* target up to '?'; of an absolute-form target ("http://host/p?q",
                          * RFC 9112 3.2.2) the part after the authority ("/p"; len 0 when
                          * there is none) */
    rt_http1_str query;  /* after '?' (len 0 when none) */
    unsigned minor;      /* HTTP/1.<minor>: 0 or 1 */
    rt_http1_field fields[RT_HTTP1_MAX_FIELDS];
    size_t n_fields;
    size_t head_len; /* octets of the head, the empty line included; the body starts there */
} rt_http1_req;

/* Parses the request head at buf[0..len).
 *   WAMP_OK      *req holds it (head_len <= len; octets after it are the body or the next
 *                request).
 *   WAMP_EAGAIN  not complete yet and len < max_head: read more.
 *   WAMP_ETOOBIG the head is longer than max_head octets (answer 431), or has more than
 *                RT_HTTP1_MAX_FIELDS fields (431); *why says which.
 *   WAMP_EPROTO  malformed (answer 400); *why is a short static description.
 * why may be NULL. Leading empty lines before the request line are skipped (RFC 9112 2.2).
 * The cost is linear in len (nothing is kept between calls). */
wamp_err rt_http1_parse(const char *buf, size_t len, size_t max_head, rt_http1_req *req,
                        const char **why);

/* The first field named name (case-insensitive), or NULL. */
const rt_http1_field *rt_http1_field_get(const rt_http1_req *req, const char *name);
/* Number of fields named name. */
size_t rt_http1_field_count(const rt_http1_req *req, const char *name);
/* true when the comma-separated lists of every field named name contain token
 * (case-insensitive), e.g. ("Connection", "upgrade") for "Connection: keep-alive, Upgrade". */
bool rt_http1_has_token(const rt_http1_req *req, const char *name, const char *token);
/* Writes the values of every field named name joined by ", " (RFC 9110 5.3) and a NUL into
 * out[0..cap) and returns the joined length (without the NUL); returns the length it would
 * need (>= cap, out holding a prefix) when it does not fit. 0 when there is no such field. */
size_t rt_http1_join(const rt_http1_req *req, const char *name, char *out, size_t cap);

/* The body length: WAMP_OK with *len (0 when there is neither Content-Length nor
 * Transfer-Encoding); WAMP_EINVAL for Transfer-Encoding (chunked request bodies are not
 * supported: answer 411 Length Required); WAMP_EPROTO was already refused by the parse. */
wamp_err rt_http1_body_length(const rt_http1_req *req, uint64_t *len);
/* true when the connection stays open after the response: HTTP/1.1 without "Connection:
 * close", or HTTP/1.0 with "Connection: keep-alive". */
bool rt_http1_keep_alive(const rt_http1_req *req);
/* Standard reason phrase of status ("OK", "Not Found", ...; "Unknown" for others). */
const char *rt_http1_reason(unsigned status);

/* Bytes an HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 IMF-fixdate) takes with its NUL. */
#define RT_HTTP1_DATE_MAX 32
/* Writes secs (since the epoch, UTC) as an IMF-fixdate to out; "" if it cannot be represented. */
void rt_http1_date(int64_t secs, char out[RT_HTTP1_DATE_MAX]);

#endif /* RT_HTTP1_H */
