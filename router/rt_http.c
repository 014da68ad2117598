/* rt_http.c: see rt_http.h.
 *
 * Static files: the request path is checked segment by segment (rt_http_rel_path()), joined to
 * the directory's real path (realpath(3)), and the joined path is resolved with realpath(3) too:
 * only a result inside the directory's real path is opened. So a symbolic link inside the
 * directory may point elsewhere inside it, and one that points outside is answered 404 like a
 * missing file. The file is opened with O_NONBLOCK (a FIFO must not block the loop) and
 * O_NOFOLLOW (the resolved name holds no link), then checked with fstat() to be a regular file
 * or a directory. Someone who may write into the directory could swap a file for a link between
 * the two steps; what the router serves is only ever as safe as the directory's permissions. */
/* realpath(3) is an XSI function: glibc declares it for _XOPEN_SOURCE, not for the
 * _POSIX_C_SOURCE the build sets. */
#define _XOPEN_SOURCE 700

#include "rt_http.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt_http1.h"
#include "wamp_rd.h"

/* Bytes of a file path the router builds (directory + request path). */
#define RT_HTTP_PATH_MAX 4096
/* Entries a directory listing shows at most (the rest are left out, with a note). */
#define RT_HTTP_LISTING_MAX 10000

/* --- Embedded viewer ------------------------------------------------------------------------ */

const rt_http_asset *rt_http_viewer_find(const char *name)
{
    for (size_t i = 0; i < rt_http_viewer_n_assets; i++) {
        if (strcmp(rt_http_viewer_assets[i].name, name) == 0) {
            return &rt_http_viewer_assets[i];
        }
    }
    return NULL;
}

/* --- Routing -------------------------------------------------------------------------------- */

const rt_web_path *rt_http_route(const rt_listener *l, const char *path, size_t path_len,
                                 const char **rest)
{
    const rt_web_path *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < l->n_web; i++) {
        const rt_web_path *w = &l->web[i];
        size_t n = strlen(w->prefix);
        bool root = n == 1 && w->prefix[0] == '/';
        bool match = root || (path_len >= n && memcmp(path, w->prefix, n) == 0 &&
                              (path_len == n || path[n] == '/'));
        if (match && (!best || n > best_len)) {
            best = w;
            best_len = n;
        }
    }
    if (best) {
        bool root = best_len == 1 && best->prefix[0] == '/';
        *rest = root ? path : path + best_len;
    }
    return best;
}

/* --- Paths ---------------------------------------------------------------------------------- */

/* One segment s[0..n) (no '/'): true when it is safe as a file name below a directory. */
static bool segment_ok(const char *s, size_t n)
{
    if (n == 0) {
        return false; /* "a//b": a leading "/" could make the joined path absolute */
    }
    /* The segment as a second percent-decoding would see it. */
    size_t dots = 0;
    size_t chars = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\0' || c == '\\') {
            return false;
        }
        int hi = c == '%' && i + 2 < n ? wamp_hex_digit((unsigned char)s[i + 1]) : -1;
        int lo = hi >= 0 ? wamp_hex_digit((unsigned char)s[i + 2]) : -1;
        if (lo >= 0) {
            c = (char)(hi * 16 + lo);
            i += 2;
            if (c == '\0' || c == '/' || c == '\\') {
                return false;
            }
        }
        chars++;
        dots += c == '.';
    }
    /* "." and ".." (also written "%2e", "%2E%2e", ".%2e") */
    return !(dots == chars && chars <= 2);
}

wamp_err rt_http_rel_path(const char *rest, size_t rest_len, char *out, size_t out_len)
{
    size_t i = 0;
    if (rest_len > 0 && rest[0] == '/') {
        i = 1;
    }
    if (rest_len - i + 1 > out_len) {
        return WAMP_ETOOBIG;
    }
    size_t o = 0;
    while (i < rest_len) {
        const char *seg = rest + i;
        const char *slash = memchr(seg, '/', rest_len - i);
        size_t n = slash ? (size_t)(slash - seg) : rest_len - i;
        if (!segment_ok(seg, n)) {
            return WAMP_EDENIED;
        }
        memcpy(out + o, seg, n);
        o += n;
        i += n;
        if (slash) {
            out[o++] = '/';
            i++;
        }
    }
    out[o] = '\0';
    return WAMP_OK;
}

/* --- MIME types ----------------------------------------------------------------------------- */

typedef struct mime_row {
    const char *ext; /* without the dot */
    const char *type;
} mime_row;

/* Text types carry their charset: browsers would otherwise guess. */
static const mime_row mime_table[] = {
        {"html", "text/html; charset=utf-8"},
        {"htm", "text/html; charset=utf-8"},
        {"css", "text/css; charset=utf-8"},
        {"js", "text/javascript; charset=utf-8"},
        {"mjs", "text/javascript; charset=utf-8"},
        {"jgz", "text/javascript"}, /* Crossbar's EXTRA_MIME_TYPES */
        {"json", "application/json"},
        {"map", "application/json"},
        {"txt", "text/plain; charset=utf-8"},
        {"md", "text/markdown; charset=utf-8"},
        {"csv", "text/csv; charset=utf-8"},
        {"xml", "application/xml"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"ico", "image/vnd.microsoft.icon"},
        {"webp", "image/webp"},
        {"avif", "image/avif"},
        {"wasm", "application/wasm"},
        {"pdf", "application/pdf"},
        {"zip", "application/zip"},
        {"gz", "application/gzip"},
        {"woff", "font/woff"},
        {"woff2", "font/woff2"},
        {"ttf", "font/ttf"},
        {"otf", "font/otf"},
        {"mp3", "audio/mpeg"},
        {"ogg", "audio/ogg"},
        {"wav", "audio/wav"},
        {"mp4", "video/mp4"},
        {"webm", "video/webm"},
        {"jsonl", "application/jsonl"},
};

const char *rt_http_mime(const rt_web_path *w, const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base) {
        return "application/octet-stream";
    }
    for (size_t i = 0; w && i < w->n_mime_types; i++) {
        if (strcasecmp(w->mime_types[i].ext, dot) == 0) {
            return w->mime_types[i].type;
        }
    }
    for (size_t i = 0; i < sizeof(mime_table) / sizeof(mime_table[0]); i++) {
        if (strcasecmp(mime_table[i].ext, dot + 1) == 0) {
            return mime_table[i].type;
        }
    }
    return "application/octet-stream";
}

/* --- HTML ----------------------------------------------------------------------------------- */

static bool put(const char *s, size_t n, char *out, size_t cap, size_t *used)
{
    if (*used + n + 1 > cap) {
        return false;
    }
    memcpy(out + *used, s, n);
    *used += n;
    out[*used] = '\0';
    return true;
}

bool rt_http_html_escape(const char *s, char *out, size_t cap, size_t *used)
{
    for (; *s; s++) {
        const char *r;
        switch (*s) {
        case '&':
            r = "&amp;";
            break;
        case '<':
            r = "&lt;";
            break;
        case '>':
            r = "&gt;";
            break;
        case '"':
            r = "&quot;";
            break;
        case '\'':
            r = "&#39;";
            break;
        default:
            if (!put(s, 1, out, cap, used)) {
                return false;
            }
            continue;
        }
        if (!put(r, strlen(r), out, cap, used)) {
            return false;
        }
    }
    return true;
}

/* Percent-encodes s for a URL path segment: every byte but A-Z a-z 0-9 - . _ ~. */
static bool url_escape(const char *s, char *out, size_t cap, size_t *used)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~';
        char enc[3] = {'%', hex[c >> 4], hex[c & 15]};
        if (!(plain ? put((const char *)p, 1, out, cap, used) : put(enc, 3, out, cap, used))) {
            return false;
        }
    }
    return true;
}

char *rt_http_listing_html(const char *url_path, const rt_http_entry *e, size_t n, size_t *len)
{
    /* Worst case per name: 6 bytes per byte escaped as HTML (twice: text and title) or 3 as
     * URL, plus the markup. */
    size_t cap = 512 + 6 * strlen(url_path) * 2;
    for (size_t i = 0; i < n; i++) {
        cap += 12 * strlen(e[i].name) + 128;
    }
    char *out = malloc(cap);
    if (!out) {
        return NULL;
    }
    size_t used = 0;
    out[0] = '\0';
    static const char head1[] = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index "
                                "of ";
    static const char head2[] = "</title></head>\n<body><h1>Index of ";
    static const char head3[] = "</h1>\n<ul>\n";
    bool ok = put(head1, sizeof(head1) - 1, out, cap, &used) &&
              rt_http_html_escape(url_path, out, cap, &used) &&
              put(head2, sizeof(head2) - 1, out, cap, &used) &&
              rt_http_html_escape(url_path, out, cap, &used) &&
              put(head3, sizeof(head3) - 1, out, cap, &used);
    for (size_t i = 0; ok && i < n; i++) {
        char size[48];
        if (e[i].is_dir) {
            snprintf(size, sizeof(size), "%s", "");
        } else {
            snprintf(size, sizeof(size), " (%llu bytes)", (unsigned long long)e[i].size);
        }
        ok = put("<li><a href=\"", 13, out, cap, &used) && url_escape(e[i].name, out, cap, &used) &&
             put(e[i].is_dir ? "/\">" : "\">", e[i].is_dir ? 3 : 2, out, cap, &used) &&
             rt_http_html_escape(e[i].name, out, cap, &used) &&
             put(e[i].is_dir ? "/</a>" : "</a>", e[i].is_dir ? 5 : 4, out, cap, &used) &&
             put(size, strlen(size), out, cap, &used) && put("</li>\n", 6, out, cap, &used);
    }
    ok = ok && put("</ul>\n</body></html>\n", 21, out, cap, &used);
    if (!ok) {
        free(out); /* cannot happen: cap is the worst case */
        return NULL;
    }
    *len = used;
    return out;
}

/* --- Answers -------------------------------------------------------------------------------- */

static void resp_init(rt_http_resp *r, bool head)
{
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->cache_secs = -1;
    r->head = head;
}

void rt_http_resp_fini(rt_http_resp *r)
{
    if (!r) {
        return;
    }
    if (r->fd >= 0) {
        close(r->fd);
    }
    free(r->owned_body);
    free(r->location);
    bool head = r->head;
    resp_init(r, head);
}

/* Takes body (owned, NUL-terminated text) as the answer's body. */
static void set_body(rt_http_resp *r, char *body, size_t len, const char *type)
{
    r->owned_body = (unsigned char *)body;
    r->data = r->owned_body;
    r->length = len;
    r->content_type = type;
}

/* An error answer with a one-line text body. */
static wamp_err status_page(rt_http_resp *r, unsigned status, const char *reason, const char *why)
{
    char *body = malloc(64);
    if (!body) {
        return WAMP_ENOMEM;
    }
    int n = snprintf(body, 64, "%u %s\n", status, reason);
    r->status = status;
    r->why = why;
    set_body(r, body, (size_t)n, "text/plain; charset=utf-8");
    return WAMP_OK;
}

static wamp_err not_found(rt_http_resp *r, const char *why)
{
    return status_page(r, 404, "Not Found", why);
}

/* 301/302 to location (copied). */
static wamp_err redirect(rt_http_resp *r, unsigned status, const char *location)
{
    r->location = strdup(location);
    if (!r->location) {
        return WAMP_ENOMEM;
    }
    r->status = status;
    return WAMP_OK;
}

/* 301 to the request path with a '/' appended (a directory asked for without one: the
 * relative links of its page need it). The path is the decoded one: it is percent-encoded again
 * (but for '/'), so that no byte of it (a CR or LF of a directory name, say) reaches the header
 * as it is. */
static wamp_err add_slash(rt_http_resp *r, const rt_http_req *req)
{
    size_t cap = 3 * req->path_len + 2;
    char *loc = malloc(cap);
    if (!loc) {
        return WAMP_ENOMEM;
    }
    char *name = strndup(req->path, req->path_len);
    if (!name) {
        free(loc);
        return WAMP_ENOMEM;
    }
    size_t used = 0;
    loc[0] = '\0';
    char *seg = name;
    bool ok = true;
    for (char *slash; ok && (slash = strchr(seg, '/')) != NULL; seg = slash + 1) {
        *slash = '\0';
        ok = url_escape(seg, loc, cap, &used) && put("/", 1, loc, cap, &used);
    }
    ok = ok && url_escape(seg, loc, cap, &used) && put("/", 1, loc, cap, &used);
    free(name);
    if (!ok) {
        free(loc); /* cannot happen: cap is the worst case */
        return WAMP_ENOMEM;
    }
    r->location = loc;
    r->status = 301;
    return WAMP_OK;
}

static wamp_err nodeinfo(rt_http_resp *r, const rt_http_node *node)
{
    size_t cap = 1024;
    char *body = malloc(cap);
    if (!body) {
        return WAMP_ENOMEM;
    }
    size_t used = 0;
    body[0] = '\0';
    static const char h1[] = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
                             "wampscope node</title></head>\n<body><h1>wampscope</h1>\n<table>\n"
                             "<tr><th>Node</th><td>";
    static const char h2[] = "</td></tr>\n<tr><th>Worker</th><td>";
    static const char h3[] = "</td></tr>\n<tr><th>Version</th><td>";
    static const char h4[] = "</td></tr>\n</table>\n</body></html>\n";
    bool ok = put(h1, sizeof(h1) - 1, body, cap, &used) &&
              rt_http_html_escape(node->node_id ? node->node_id : "", body, cap, &used) &&
              put(h2, sizeof(h2) - 1, body, cap, &used) &&
              rt_http_html_escape(node->worker_id ? node->worker_id : "", body, cap, &used) &&
              put(h3, sizeof(h3) - 1, body, cap, &used) &&
              rt_http_html_escape(node->version ? node->version : "", body, cap, &used) &&
              put(h4, sizeof(h4) - 1, body, cap, &used);
    if (!ok) {
        /* Names longer than the page: cut, the page stays well-formed enough to read. */
        used = strlen(body);
    }
    r->status = 200;
    set_body(r, body, used, "text/html; charset=utf-8");
    return WAMP_OK;
}

static wamp_err viewer(rt_http_resp *r, const rt_http_req *req, const char *rest, size_t rest_len)
{
    if (rest_len == 0) {
        return add_slash(r, req);
    }
    char rel[RT_HTTP_PATH_MAX];
    if (rt_http_rel_path(rest, rest_len, rel, sizeof(rel)) != WAMP_OK) {
        return not_found(r, "not a viewer file");
    }
    size_t n = strlen(rel);
    const char *name = n == 0 || rel[n - 1] == '/' ? "index.html" : rel;
    if (n && rel[n - 1] == '/') {
        return not_found(r, "not a viewer file");
    }
    const rt_http_asset *a = rt_http_viewer_find(name);
    if (!a) {
        return not_found(r, "not a viewer file");
    }
    r->status = 200;
    r->data = a->data;
    r->length = a->len;
    r->content_type = rt_http_mime(NULL, a->name);
    /* The viewer comes with the binary: a browser revalidates it after an upgrade. */
    r->cache_secs = 0;
    return WAMP_OK;
}

/* A json service's value; only on its own path (Crossbar's JsonResource has no children). */
static wamp_err json_value(rt_http_resp *r, const rt_web_path *w, size_t rest_len)
{
    if (rest_len > 0) {
        return not_found(r, "no such resource");
    }
    r->status = 200;
    r->data = (const unsigned char *)w->body;
    r->length = w->body_len;
    r->content_type = "application/json; charset=utf-8";
    r->no_store = w->no_store;
    return WAMP_OK;
}

typedef enum resolved {
    RESOLVED_INSIDE, /* real is the resolved path, inside root (root itself included) */
    RESOLVED_MISSING,
    RESOLVED_OUTSIDE /* a link out of root, or a path that cannot be resolved */
} resolved;

/* realpath(path) into real (PATH_MAX bytes), checked against root (a real path). */
static resolved resolve(const char *root, const char *path, char *real)
{
    if (!realpath(path, real)) {
        return errno == ENOENT || errno == ENOTDIR ? RESOLVED_MISSING : RESOLVED_OUTSIDE;
    }
    size_t n = strlen(root);
    if (strcmp(root, "/") == 0) {
        return RESOLVED_INSIDE;
    }
    return strncmp(real, root, n) == 0 && (real[n] == '\0' || real[n] == '/') ? RESOLVED_INSIDE
                                                                              : RESOLVED_OUTSIDE;
}

/* Opens real (resolved already) read-only; fills *st. -1 on failure. */
static int open_resolved(const char *real, struct stat *st)
{
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        return -1;
    }
    if (fstat(fd, st) != 0 || !(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode))) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A regular file as the answer, or 304 when the client has it already. */
static void file_answer(rt_http_resp *r, const rt_web_path *w, const rt_http_req *req, int fd,
                        const struct stat *st, const char *name)
{
    snprintf(r->etag, sizeof(r->etag), "W/\"%llx-%llx-%lx\"", (unsigned long long)st->st_size,
             (unsigned long long)st->st_mtim.tv_sec, (unsigned long)st->st_mtim.tv_nsec);
    rt_http1_date((int64_t)st->st_mtim.tv_sec, r->last_modified);
    r->cache_secs = w->cache_secs;
    r->content_type = rt_http_mime(w, name);
    /* RFC 9110 13.1.2 / 13.1.3: If-None-Match decides when present; a client sends back the
     * Last-Modified value it got, so an equal If-Modified-Since means unchanged. */
    bool fresh = req->if_none_match ? strstr(req->if_none_match, r->etag) != NULL ||
                                              strcmp(req->if_none_match, "*") == 0
                                    : req->if_modified_since && r->last_modified[0] &&
                                              strcmp(req->if_modified_since, r->last_modified) == 0;
    if (fresh) {
        close(fd);
        r->status = 304;
        r->content_type = NULL;
        return;
    }
    r->status = 200;
    r->fd = fd;
    r->length = (uint64_t)st->st_size;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const rt_http_entry *)a)->name, ((const rt_http_entry *)b)->name);
}

/* The listing of directory fd (closed here), at URL path url. */
static wamp_err listing(rt_http_resp *r, int fd, const char *url)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return not_found(r, "directory cannot be read");
    }
    rt_http_entry *e = NULL;
    char **names = NULL;
    size_t n = 0;
    size_t cap = 0;
    wamp_err err = WAMP_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < RT_HTTP_LISTING_MAX) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            rt_http_entry *ne = realloc(e, nc * sizeof(*e));
            if (ne) {
                e = ne;
            }
            char **nn = ne ? realloc(names, nc * sizeof(*names)) : NULL;
            if (!nn) {
                err = WAMP_ENOMEM;
                break;
            }
            names = nn;
            cap = nc;
        }
        struct stat st;
        bool have = fstatat(dirfd(d), de->d_name, &st, 0) == 0;
        names[n] = strdup(de->d_name);
        if (!names[n]) {
            err = WAMP_ENOMEM;
            break;
        }
        e[n].name = names[n];
        e[n].is_dir = have && S_ISDIR(st.st_mode);
        e[n].size = have ? (uint64_t)st.st_size : 0;
        n++;
    }
    closedir(d);
    if (err == WAMP_OK) {
        if (n) {
            qsort(e, n, sizeof(*e), entry_cmp);
        }
        size_t len = 0;
        char *html = rt_http_listing_html(url, e, n, &len);
        if (html) {
            r->status = 200;
            set_body(r, html, len, "text/html; charset=utf-8");
        } else {
            err = WAMP_ENOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
    free(e);
    return err;
}

/* A missing file: options.default_file if set (Crossbar serves it instead), else 404. */
static wamp_err missing(rt_http_resp *r, const rt_web_path *w, const rt_http_req *req,
                        const char *root)
{
    if (!w->default_file) {
        return not_found(r, "no such file");
    }
    char path[RT_HTTP_PATH_MAX];
    char real[PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof(path), "%s/%s", root, w->default_file);
    if (n < 0 || (size_t)n >= sizeof(path) || resolve(root, path, real) != RESOLVED_INSIDE) {
        return not_found(r, "no such file (nor default_file)");
    }
    int fd = open_resolved(real, &st);
    if (fd < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) {
            close(fd);
        }
        return not_found(r, "no such file (nor default_file)");
    }
    file_answer(r, w, req, fd, &st, w->default_file);
    return WAMP_OK;
}

static wamp_err static_file(rt_http_resp *r, const rt_web_path *w, const rt_http_req *req,
                            const char *rest, size_t rest_len)
{
    char rel[RT_HTTP_PATH_MAX];
    wamp_err e = rt_http_rel_path(rest, rest_len, rel, sizeof(rel));
    if (e == WAMP_EDENIED) {
        return status_page(r, 400, "Bad Request", "path refused (traversal or malformed)");
    }
    if (e != WAMP_OK) {
        return not_found(r, "path too long");
    }
    char root[PATH_MAX];
    if (!realpath(w->directory, root)) {
        return not_found(r, "static directory missing");
    }
    char path[RT_HTTP_PATH_MAX];
    char real[PATH_MAX];
    int n = snprintf(path, sizeof(path), "%s/%s", root, rel);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        return not_found(r, "path too long");
    }
    resolved res = resolve(root, path, real);
    if (res == RESOLVED_MISSING) {
        return missing(r, w, req, root);
    }
    if (res == RESOLVED_OUTSIDE) {
        return not_found(r, "resolves outside the static directory");
    }
    struct stat st;
    int fd = open_resolved(real, &st);
    if (fd < 0) {
        return missing(r, w, req, root);
    }
    if (S_ISREG(st.st_mode)) {
        size_t rl = strlen(rel);
        if (rl && rel[rl - 1] == '/') {
            close(fd); /* "file.txt/" */
            return not_found(r, "not a directory");
        }
        file_answer(r, w, req, fd, &st, real);
        return WAMP_OK;
    }
    /* A directory: "/dir" -> "/dir/"; then its index.html, else a listing if enabled. */
    if (req->path_len == 0 || req->path[req->path_len - 1] != '/') {
        close(fd);
        return add_slash(r, req);
    }
    char index[RT_HTTP_PATH_MAX];
    char index_real[PATH_MAX];
    n = snprintf(index, sizeof(index), "%s/index.html", real);
    if (n > 0 && (size_t)n < sizeof(index) && resolve(root, index, index_real) == RESOLVED_INSIDE) {
        struct stat ist;
        int ifd = open_resolved(index_real, &ist);
        if (ifd >= 0 && S_ISREG(ist.st_mode)) {
            close(fd);
            file_answer(r, w, req, ifd, &ist, index_real);
            return WAMP_OK;
        }
        if (ifd >= 0) {
            close(ifd);
        }
    }
    if (!w->listing) {
        close(fd);
        return not_found(r, "directory listing disabled");
    }
    char *url = strndup(req->path, req->path_len);
    if (!url) {
        close(fd);
        return WAMP_ENOMEM;
    }
    e = listing(r, fd, url);
    free(url);
    return e;
}

wamp_err rt_http_respond(const rt_listener *l, const rt_http_node *node, const rt_http_req *req,
                         rt_http_resp *out)
{
    bool head = req->method && strcmp(req->method, "HEAD") == 0;
    resp_init(out, head);
    wamp_err err;
    const char *rest = NULL;
    const rt_web_path *w = NULL;
    if (!head && !(req->method && strcmp(req->method, "GET") == 0)) {
        out->allow = true;
        err = status_page(out, 405, "Method Not Allowed", "method not allowed");
    } else if (memchr(req->path, '\0', req->path_len) || req->path_len == 0 ||
               req->path[0] != '/') {
        err = status_page(out, 400, "Bad Request", "malformed path");
    } else if (!(w = rt_http_route(l, req->path, req->path_len, &rest))) {
        err = not_found(out, "no service on this path");
    } else {
        size_t rest_len = req->path_len - (size_t)(rest - req->path);
        switch (w->kind) {
        case RT_WEB_REDIRECT:
            err = redirect(out, 302, w->url);
            break;
        case RT_WEB_NODEINFO:
            err = nodeinfo(out, node);
            break;
        case RT_WEB_VIEWER:
            err = viewer(out, req, rest, rest_len);
            break;
        case RT_WEB_JSON:
            err = json_value(out, w, rest_len);
            break;
        case RT_WEB_PUBLISHER:
        case RT_WEB_CALLER:
            /* The adapter hands these to the HTTP bridge (rt_bridge.h) before asking here. */
            err = not_found(out, "HTTP bridge path");
            break;
        case RT_WEB_STATIC:
        default:
            err = static_file(out, w, req, rest, rest_len);
            break;
        }
    }
    if (err != WAMP_OK) {
        rt_http_resp_fini(out);
    }
    return err;
}
