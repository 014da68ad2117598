/* rt_http.h: the HTTP services of a web transport (configs/README.md, "web transport"), without a
 * socket: which service a request path goes to (Crossbar's path keys, the longest prefix
 * wins), what it answers (a status, headers, and a body that is a file to stream or bytes in
 * memory), the MIME types by extension, directory listings, and the refusal of every path that
 * could leave a static directory. The lws adapter (rt_lws_web.c) only copies a request in and
 * writes the answer out.
 * Ownership: rt_http_resp owns its file descriptor, its Location and its built body; free them
 * with rt_http_resp_fini(). Everything else is borrowed from the config or static. Reads the
 * file system (static directories); no global state; service thread only. */
#ifndef RT_HTTP_H
#define RT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_config.h"
#include "rt_http1.h"
#include "wamp_err.h"

/* One file of the trace viewer (mgmt/viewer/), embedded at build time (embed_viewer.cmake). */
typedef struct rt_http_asset {
    const char *name; /* path below mgmt/viewer/, "index.html", "js/app.js" */
    const unsigned char *data;
    size_t len;
} rt_http_asset;

/* The generated table (rt_http_viewer.c in the build tree), in name order. */
extern const rt_http_asset rt_http_viewer_assets[];
extern const size_t rt_http_viewer_n_assets;

/* Borrowed: the embedded viewer file with that name, or NULL. */
const rt_http_asset *rt_http_viewer_find(const char *name);

/* A request as the adapter hands it over. Strings are borrowed for the call. */
typedef struct rt_http_req {
    const char *method; /* "GET", "HEAD", or another method (answered 405) */
    const char *path;   /* the request path without the query string, percent-decoded (lws
                         * decodes it); path_len bytes, which may hold a NUL (refused) */
    size_t path_len;
    const char *if_none_match;     /* header value or NULL */
    const char *if_modified_since; /* header value or NULL */
} rt_http_req;

/* What the nodeinfo page shows (borrowed strings). */
typedef struct rt_http_node {
    const char *node_id;
    const char *worker_id;
    const char *version;
} rt_http_node;

/* RT_HTTP_ETAG_MAX bytes hold an ETag (W/"size-mtime") with its NUL; RT_HTTP_DATE_MAX an
 * IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", rt_http1_date()). */
#define RT_HTTP_ETAG_MAX 64
#define RT_HTTP_DATE_MAX RT_HTTP1_DATE_MAX

/* The answer. Zeroed with fd -1 by rt_http_respond(); the body is the file fd (length bytes
 * from its start) or data[0..length), never both; a HEAD answer has the headers of the GET
 * answer (Content-Length included) and no body. */
typedef struct rt_http_resp {
    unsigned status;             /* 200, 301, 302, 304, 400, 404, 405 */
    const char *content_type;    /* borrowed (static table or config); NULL: no Content-Type */
    int fd;                      /* owned: a regular file to stream, or -1 */
    const unsigned char *data;   /* the body in memory: embedded (borrowed) or owned_body */
    unsigned char *owned_body;   /* owned: a built body (listing, nodeinfo, error page), or NULL */
    uint64_t length;             /* bytes of the body (Content-Length) */
    char *location;              /* owned: the Location header of a 301/302, or NULL */
    char etag[RT_HTTP_ETAG_MAX]; /* "" = no ETag header */
    char last_modified[RT_HTTP_DATE_MAX]; /* "" = no Last-Modified header */
    int64_t cache_secs;                   /* Cache-Control: max-age=N, public; -1 = none */
    bool no_store;                        /* Cache-Control: no-store (takes cache_secs' place) */
    bool head;                            /* a HEAD request: write no body */
    bool allow;                           /* a 405: add "Allow: GET, HEAD" */
    /* For the log: why an error answer was given (static text), or NULL. */
    const char *why;
} rt_http_resp;

/* The service of l that answers path (path_len bytes): the one whose prefix is the longest
 * match on segment boundaries ("/app" takes "/app" and "/app/x", not "/apple"; "/" takes what
 * no other takes), or NULL. *rest is the part of path after the prefix (all of path for "/"):
 * "" or starting with '/'. l's WebSocket path is not among them (the adapter checks it first). */
const rt_web_path *rt_http_route(const rt_listener *l, const char *path, size_t path_len,
                                 const char **rest);

/* Checks rest (rest_len bytes, as rt_http_route() returns it) as a relative file path below a
 * directory and writes it into out ("" for the directory itself; no leading '/', a trailing
 * '/' kept). WAMP_EDENIED for anything that could leave the directory or that is malformed: a
 * NUL byte, a backslash, an empty segment ("a//b"), a "." or ".." segment, and a segment that
 * still holds a percent escape decoding to '.', '/', '\\' or NUL (a second decoding layer
 * would otherwise turn "%2e%2e" into ".."); WAMP_ETOOBIG when it does not fit out. */
wamp_err rt_http_rel_path(const char *rest, size_t rest_len, char *out, size_t out_len);

/* The Content-Type for file name name: w's options.mime_types first (w may be NULL), then the
 * built-in table (extension case-insensitive), else "application/octet-stream". Borrowed. */
const char *rt_http_mime(const rt_web_path *w, const char *name);

/* One entry of a directory listing. */
typedef struct rt_http_entry {
    const char *name;
    bool is_dir;
    uint64_t size;
} rt_http_entry;

/* An HTML listing of url_path (the request path, ending in '/') with entries e[0..n) (in the
 * order given): names HTML-escaped in the text and percent-encoded in the links. Owned,
 * NUL-terminated, *len bytes without the NUL; NULL when out of memory. */
char *rt_http_listing_html(const char *url_path, const rt_http_entry *e, size_t n, size_t *len);

/* Appends s to out (capacity cap, *used bytes used; NUL-terminated) with &, <, >, " and '
 * escaped; false (out cut at a character boundary) when it does not fit. */
bool rt_http_html_escape(const char *s, char *out, size_t cap, size_t *used);

/* Answers req on listener l (node: what nodeinfo shows). WAMP_OK: *out is the answer, errors
 * such as 404 included (out->why says why). WAMP_ENOMEM: out is empty (fd -1, nothing owned)
 * and the adapter answers 500 itself. */
wamp_err rt_http_respond(const rt_listener *l, const rt_http_node *node, const rt_http_req *req,
                         rt_http_resp *out);

/* NULL-safe: closes the file and frees what r owns; r is then empty (fd -1). */
void rt_http_resp_fini(rt_http_resp *r);

#endif /* RT_HTTP_H */
