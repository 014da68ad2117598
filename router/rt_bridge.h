/* rt_bridge.h: Crossbar's HTTP bridge (crossbar/bridge/rest) on a web transport's "publisher"
 * and "caller" paths, without a socket: the checks of a request before its body is read
 * (method, Content-Type, length, TLS), the body -> the WAMP PUBLISH or CALL that the request's
 * session sends, and the router's answer to it (PUBLISHED, RESULT, ERROR) -> the HTTP answer,
 * each with Crossbar's status codes and JSON bodies (configs/README.md, "HTTP bridge").
 * Ownership: an rt_bridge_answer owns its body (free with rt_bridge_answer_fini()); everything
 * else is borrowed for the call. No global state; service thread only. */
#ifndef RT_BRIDGE_H
#define RT_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rt_config.h"
#include "wamp_err.h"

/* An HTTP answer: status and a JSON body (owned, NUL-terminated, len bytes without the NUL;
 * sent with Content-Type RT_BRIDGE_CONTENT_TYPE). */
typedef struct rt_bridge_answer {
    unsigned status;
    char *body;
    size_t len;
} rt_bridge_answer;

#define RT_BRIDGE_CONTENT_TYPE "application/json; charset=UTF-8"

/* A request as it arrives, before its body. */
typedef struct rt_bridge_req {
    const char *method;       /* "POST", "GET", ... */
    const char *content_type; /* the Content-Type header, or NULL */
    int64_t content_length;   /* the Content-Length header, or -1 when absent */
    bool tls;                 /* it came over TLS */
    const char *peer_addr;    /* the client's address as rt_peer.addr holds it, or NULL */
} rt_bridge_req;

/* The checks before the body is read (w: a publisher or caller path). WAMP_OK: *proceed is
 * true (read the body) or false with *deny the answer (405 for a method other than POST/PUT,
 * 400 for a Content-Type other than application/json or a charset other than UTF-8, 400 when
 * options.require_tls is set and the request is plain, 400 when options.require_ip is set and
 * the client's address is in none of its networks, 413 for a Content-Length over
 * post_body_limit). WAMP_ENOMEM: nothing owned. */
wamp_err rt_bridge_check(const rt_web_path *w, const rt_bridge_req *req, bool *proceed,
                         rt_bridge_answer *deny);

/* The answer for a body over w's post_body_limit (413), when it had no Content-Length. */
wamp_err rt_bridge_too_long(const rt_web_path *w, size_t length, rt_bridge_answer *out);

/* The query arguments of a signed request (Crossbar's signed requests), NULL when absent;
 * lws has percent-decoded them. */
typedef struct rt_bridge_sig {
    const char *key;
    const char *timestamp; /* UTC, "2011-10-14T16:59:51.123Z" */
    const char *seq;
    const char *nonce;
    const char *signature; /* URL-safe base64 (padded) of the HMAC-SHA256 below */
} rt_bridge_sig;

/* Crossbar's checks of the signature arguments, run on the whole body: a timestamp, when given,
 * must parse and (with w->timestamp_delta_secs > 0) lie within that many seconds of now_unix_ms;
 * seq and nonce must be integers. When w has a secret, all five are required (400), key must
 * be w's key (401), and signature must be HMAC-SHA256(secret, key || timestamp || seq || nonce
 * || body) (401). WAMP_OK: *ok true, or false with *deny Crossbar's answer. WAMP_ENOMEM. */
wamp_err rt_bridge_verify(const rt_web_path *w, const rt_bridge_sig *q, const unsigned char *body,
                          size_t len, int64_t now_unix_ms, bool *ok, rt_bridge_answer *deny);

/* Milliseconds since the epoch of a timestamp as Crossbar parses it ("%Y-%m-%dT%H:%M:%S.%fZ":
 * 1 to 6 fraction digits, UTC). false when malformed. */
bool rt_bridge_parse_timestamp(const char *s, int64_t *unix_ms);

/* The body (len bytes) -> the WAMP message (JSON text, serializer "json") that the request's
 * session sends: PUBLISH [16, request, {"acknowledge": true, options Crossbar passes on},
 * topic, args, kwargs] for a publisher path, CALL [48, request, {"timeout": the call's or
 * w->call_timeout_ms}, procedure, args, kwargs] for a caller path. WAMP_OK: *msg (owned,
 * NUL-terminated, *msg_len bytes) or, for a body that is not such a request (not UTF-8, not
 * JSON, not an object, no topic/procedure string, args not a list, kwargs or options not an
 * object, a bad timeout), *msg NULL and *deny the 400 answer. WAMP_ENOMEM: nothing owned. */
wamp_err rt_bridge_message(const rt_web_path *w, const unsigned char *body, size_t len,
                           uint64_t request, char **msg, size_t *msg_len, rt_bridge_answer *deny);

/* A message the session received (msg: the decoded JSON array) -> the answer to request:
 * PUBLISHED -> 200 {"id": publication}; RESULT -> 200 {"args": [...]} and/or {"kwargs": {...}}
 * as Crossbar's caller writes autobahn's call result (no or one positional result and no
 * keyword results: {"args": [that result or null]}); ERROR -> 200 {"error": uri, "args": [...],
 * "kwargs": {...}} (Crossbar answers a WAMP error with 200); ABORT or GOODBYE (the router ends
 * the session: a session limit, shutdown) -> 503 {"error": reason, "args": [message if any],
 * "kwargs": {}}. WAMP_OK with *is_answer false for any other message (WELCOME, or one about
 * another request); WAMP_ENOMEM: nothing owned. */
wamp_err rt_bridge_answer_of(const json_t *msg, uint64_t request, bool *is_answer,
                             rt_bridge_answer *out);

/* status with Crossbar's error body {"error": error, "args": [], "kwargs": {}}. */
wamp_err rt_bridge_deny(unsigned status, const char *error, rt_bridge_answer *out);

/* NULL-safe; frees the body; a is then empty. */
void rt_bridge_answer_fini(rt_bridge_answer *a);

#endif /* RT_BRIDGE_H */
