/* check_rt_http.c: the web transport's HTTP services without a socket: routing, path checks
 * (every way out of a static directory), MIME types, listings, and the answers to requests on
 * a real directory tree made per test. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "rt_http.h"

/* snprintf that must not cut. */
#define FMT(buf, ...) ck_assert_int_lt(snprintf((buf), sizeof(buf), __VA_ARGS__), (int)sizeof(buf))

/* --- Routing -------------------------------------------------------------------------------- */

static rt_web_path route_paths[] = {
        {.prefix = "/", .kind = RT_WEB_STATIC},
        {.prefix = "/app", .kind = RT_WEB_STATIC},
        {.prefix = "/app/info", .kind = RT_WEB_NODEINFO},
        {.prefix = "/old", .kind = RT_WEB_REDIRECT},
};

static const rt_web_path *route(const rt_listener *l, const char *path, const char **rest)
{
    return rt_http_route(l, path, strlen(path), rest);
}

START_TEST(test_route_longest_prefix_on_segments)
{
    rt_listener l = {.web = route_paths, .n_web = 4};
    const char *rest = NULL;
    ck_assert_ptr_eq(route(&l, "/app/x.js", &rest), &route_paths[1]);
    ck_assert_str_eq(rest, "/x.js");
    ck_assert_ptr_eq(route(&l, "/app", &rest), &route_paths[1]);
    ck_assert_str_eq(rest, "");
    ck_assert_ptr_eq(route(&l, "/app/info", &rest), &route_paths[2]);
    ck_assert_ptr_eq(route(&l, "/app/info/more", &rest), &route_paths[2]);
    ck_assert_str_eq(rest, "/more");
    /* Not on a segment boundary: the root takes it, with the whole path. */
    ck_assert_ptr_eq(route(&l, "/apple", &rest), &route_paths[0]);
    ck_assert_str_eq(rest, "/apple");
    ck_assert_ptr_eq(route(&l, "/", &rest), &route_paths[0]);
    ck_assert_str_eq(rest, "/");
    /* Without a root service, nothing takes an unknown path. */
    rt_listener l2 = {.web = route_paths + 1, .n_web = 3};
    ck_assert_ptr_null(route(&l2, "/apple", &rest));
    ck_assert_ptr_null(route(&l2, "/", &rest));
    ck_assert_ptr_eq(route(&l2, "/old", &rest), &route_paths[3]);
}

END_TEST

/* --- Path checks ---------------------------------------------------------------------------- */

static wamp_err rel(const char *rest, char *out)
{
    return rt_http_rel_path(rest, strlen(rest), out, 256);
}

START_TEST(test_rel_path_accepts_plain_paths)
{
    char out[256];
    ck_assert_int_eq(rel("", out), WAMP_OK);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(rel("/", out), WAMP_OK);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(rel("/a/b.txt", out), WAMP_OK);
    ck_assert_str_eq(out, "a/b.txt");
    ck_assert_int_eq(rel("/dir/", out), WAMP_OK);
    ck_assert_str_eq(out, "dir/");
    ck_assert_int_eq(rel("/.well-known/x", out), WAMP_OK);
    ck_assert_str_eq(out, ".well-known/x");
    ck_assert_int_eq(rel("/a..b/...", out), WAMP_OK);
    ck_assert_str_eq(out, "a..b/...");
    ck_assert_int_eq(rel("/100%25.txt", out), WAMP_OK); /* a literal '%' stays */
    ck_assert_str_eq(out, "100%25.txt");
    ck_assert_int_eq(rt_http_rel_path("/abcdef", 7, out, 4), WAMP_ETOOBIG);
}

END_TEST

START_TEST(test_rel_path_refuses_traversal)
{
    static const char *const bad[] = {
            "/../etc/passwd", "/a/../../etc", "/..",       "/a/..",   "/%2e%2e/etc",
            "/%2E%2e/etc",    "/.%2e/x",      "/..%2fetc", "/a%2f..", "//etc/passwd",
            "/a//b",          "/./x",         "/a/.",      "/%2e/x",  "/a\\..\\b",
            "/x%00.txt",      "/x%5c..",
    };
    char out[256];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(rel(bad[i], out) == WAMP_EDENIED, "%s accepted", bad[i]);
    }
    /* A NUL byte inside the path (not at its end). */
    ck_assert_int_eq(rt_http_rel_path("/a\0/../x", 8, out, sizeof(out)), WAMP_EDENIED);
}

END_TEST

/* --- MIME types ----------------------------------------------------------------------------- */

START_TEST(test_mime_types)
{
    rt_mime_type mt[] = {{.ext = ".wasm", .type = "application/x-custom"},
                         {.ext = ".dat", .type = "text/x-data"}};
    rt_web_path w = {.prefix = "/", .mime_types = mt, .n_mime_types = 2};
    ck_assert_str_eq(rt_http_mime(NULL, "index.html"), "text/html; charset=utf-8");
    ck_assert_str_eq(rt_http_mime(NULL, "a/b/LOGO.PNG"), "image/png");
    ck_assert_str_eq(rt_http_mime(NULL, "app.js"), "text/javascript; charset=utf-8");
    ck_assert_str_eq(rt_http_mime(NULL, "x.svg"), "image/svg+xml");
    ck_assert_str_eq(rt_http_mime(NULL, "x.wasm"), "application/wasm");
    ck_assert_str_eq(rt_http_mime(&w, "x.wasm"), "application/x-custom");
    ck_assert_str_eq(rt_http_mime(&w, "x.DAT"), "text/x-data");
    ck_assert_str_eq(rt_http_mime(NULL, "README"), "application/octet-stream");
    ck_assert_str_eq(rt_http_mime(NULL, ".htaccess"), "application/octet-stream");
    ck_assert_str_eq(rt_http_mime(NULL, "dir.html/file"), "application/octet-stream");
    ck_assert_str_eq(rt_http_mime(NULL, "x.unknownext"), "application/octet-stream");
}

END_TEST

/* --- Listings ------------------------------------------------------------------------------- */

START_TEST(test_listing_escapes_names)
{
    rt_http_entry e[] = {
            {.name = "<script>alert('x')</script>&\".txt", .size = 3},
            {.name = "a b", .is_dir = true},
    };
    size_t len = 0;
    char *html = rt_http_listing_html("/files/<i>/", e, 2, &len);
    ck_assert_ptr_nonnull(html);
    ck_assert_uint_eq(len, strlen(html));
    ck_assert_ptr_null(strstr(html, "<script>"));
    ck_assert_ptr_null(strstr(html, "<i>"));
    ck_assert_ptr_nonnull(strstr(html, "Index of /files/&lt;i&gt;/"));
    ck_assert_ptr_nonnull(strstr(
            html, "<a href=\"%3Cscript%3Ealert%28%27x%27%29%3C%2Fscript%3E%26%22.txt\">&lt;script"
                  "&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;.txt</a> (3 bytes)"));
    ck_assert_ptr_nonnull(strstr(html, "<a href=\"a%20b/\">a b/</a>"));
    free(html);
    char buf[8];
    size_t used = 0;
    buf[0] = '\0';
    ck_assert(!rt_http_html_escape("<<<", buf, sizeof(buf), &used)); /* 12 bytes do not fit */
    ck_assert_str_eq(buf, "&lt;");
}

END_TEST

/* --- Answers on a directory tree ------------------------------------------------------------ */

static char tmp[64];
static char root[128];
static char outside[128];

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[512];
    FMT(p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void tree_setup(void)
{
    FMT(tmp, "/tmp/check_rt_http.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    FMT(root, "%s/www", tmp);
    FMT(outside, "%s/secret", tmp);
    char p[512];
    ck_assert_int_eq(mkdir(root, 0700), 0);
    ck_assert_int_eq(mkdir(outside, 0700), 0);
    write_file(outside, "passwd", "root:x:0:0\n");
    write_file(root, "hello.txt", "hello, world\n");
    write_file(root, "<b>.txt", "x");
    FMT(p, "%s/sub", root);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    write_file(p, "index.html", "<p>sub</p>\n");
    FMT(p, "%s/plain", root);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    write_file(p, "a.css", "a{}");
    FMT(p, "%s/a b\r\nx", root);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    /* Links: one out of the directory, one inside it. */
    FMT(p, "%s/out", root);
    ck_assert_int_eq(symlink(outside, p), 0);
    FMT(p, "%s/leak.txt", root);
    char target[256];
    FMT(target, "%s/passwd", outside);
    ck_assert_int_eq(symlink(target, p), 0);
    FMT(p, "%s/alias.txt", root);
    ck_assert_int_eq(symlink("hello.txt", p), 0);
    FMT(p, "%s/fifo", root);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
}

static void tree_teardown(void)
{
    char cmd[256];
    FMT(cmd, "rm -rf '%s'", tmp);
    ck_assert_int_eq(system(cmd), 0);
}

typedef struct site {
    rt_web_path web[7];
    rt_listener l;
} site;

static void site_init(site *s, bool listing)
{
    memset(s, 0, sizeof(*s));
    s->web[0] = (rt_web_path){.prefix = "/",
                              .kind = RT_WEB_STATIC,
                              .directory = root,
                              .listing = listing,
                              .cache_secs = 600};
    s->web[1] = (rt_web_path){
            .prefix = "/old", .kind = RT_WEB_REDIRECT, .url = "https://example.com/new"};
    s->web[2] = (rt_web_path){.prefix = "/info", .kind = RT_WEB_NODEINFO};
    s->web[3] = (rt_web_path){.prefix = "/trace", .kind = RT_WEB_VIEWER};
    s->web[4] = (rt_web_path){.prefix = "/spa",
                              .kind = RT_WEB_STATIC,
                              .directory = root,
                              .default_file = "hello.txt",
                              .cache_secs = -1};
    s->web[5] = (rt_web_path){.prefix = "/gone",
                              .kind = RT_WEB_STATIC,
                              .directory = "/nonexistent/dir",
                              .cache_secs = -1};
    s->web[6] = (rt_web_path){.prefix = "/cfg",
                              .kind = RT_WEB_JSON,
                              .body = "{\"a\":1}",
                              .body_len = 7,
                              .no_store = true};
    s->l.web = s->web;
    s->l.n_web = 7;
}

static const rt_http_node node = {.node_id = "node<1>", .worker_id = "router1", .version = "1.2.3"};

static rt_http_resp get_h(const rt_listener *l, const char *method, const char *path,
                          const char *inm, const char *ims)
{
    rt_http_req req = {.method = method,
                       .path = path,
                       .path_len = strlen(path),
                       .if_none_match = inm,
                       .if_modified_since = ims};
    rt_http_resp r;
    ck_assert_int_eq(rt_http_respond(l, &node, &req, &r), WAMP_OK);
    return r;
}

static rt_http_resp get(const rt_listener *l, const char *path)
{
    return get_h(l, "GET", path, NULL, NULL);
}

/* The answer's whole body as a string (file or memory). */
static char *body_of(const rt_http_resp *r)
{
    char *b = calloc(1, (size_t)r->length + 1);
    ck_assert_ptr_nonnull(b);
    if (r->fd >= 0) {
        ck_assert_int_eq(pread(r->fd, b, (size_t)r->length, 0), (ssize_t)r->length);
    } else if (r->length) {
        memcpy(b, r->data, (size_t)r->length);
    }
    return b;
}

static void assert_status(const rt_listener *l, const char *path, unsigned status)
{
    rt_http_resp r = get(l, path);
    ck_assert_msg(r.status == status, "%s: %u, not %u (%s)", path, r.status, status,
                  r.why ? r.why : "");
    rt_http_resp_fini(&r);
}

START_TEST(test_static_file_exact_bytes_and_headers)
{
    site s;
    site_init(&s, false);
    rt_http_resp r = get(&s.l, "/hello.txt");
    ck_assert_uint_eq(r.status, 200);
    ck_assert_int_ge(r.fd, 0);
    ck_assert_uint_eq(r.length, 13);
    ck_assert_str_eq(r.content_type, "text/plain; charset=utf-8");
    ck_assert_int_eq(r.cache_secs, 600);
    ck_assert(r.etag[0] && r.last_modified[0]);
    char *b = body_of(&r);
    ck_assert_str_eq(b, "hello, world\n");
    free(b);
    char etag[RT_HTTP_ETAG_MAX];
    char lm[RT_HTTP_DATE_MAX];
    FMT(etag, "%s", r.etag);
    FMT(lm, "%s", r.last_modified);
    rt_http_resp_fini(&r);
    ck_assert_int_eq(r.fd, -1);
    /* HEAD: the same headers, marked body-less. */
    r = get_h(&s.l, "HEAD", "/hello.txt", NULL, NULL);
    ck_assert_uint_eq(r.status, 200);
    ck_assert(r.head);
    ck_assert_uint_eq(r.length, 13);
    rt_http_resp_fini(&r);
    /* Conditional requests. */
    r = get_h(&s.l, "GET", "/hello.txt", etag, NULL);
    ck_assert_uint_eq(r.status, 304);
    ck_assert_int_eq(r.fd, -1);
    rt_http_resp_fini(&r);
    r = get_h(&s.l, "GET", "/hello.txt", "W/\"other\"", lm);
    ck_assert_uint_eq(r.status, 200); /* If-None-Match decides when present */
    rt_http_resp_fini(&r);
    r = get_h(&s.l, "GET", "/hello.txt", NULL, lm);
    ck_assert_uint_eq(r.status, 304);
    rt_http_resp_fini(&r);
    /* A link inside the directory is followed. */
    r = get(&s.l, "/alias.txt");
    ck_assert_uint_eq(r.status, 200);
    ck_assert_uint_eq(r.length, 13);
    rt_http_resp_fini(&r);
}

END_TEST

START_TEST(test_static_refuses_the_way_out)
{
    site s;
    site_init(&s, true);
    assert_status(&s.l, "/leak.txt", 404);   /* link to a file outside */
    assert_status(&s.l, "/out/passwd", 404); /* through a link to a directory outside */
    assert_status(&s.l, "/out/", 404);
    assert_status(&s.l, "/../secret/passwd", 400);
    assert_status(&s.l, "/%2e%2e/secret/passwd", 400);
    assert_status(&s.l, "/..%2fsecret%2fpasswd", 400);
    assert_status(&s.l, "//tmp/passwd", 400);
    assert_status(&s.l, "/sub/../../secret/passwd", 400);
    assert_status(&s.l, "/fifo", 404); /* neither a file nor a directory; must not block */
    rt_http_req req = {.method = "GET", .path = "/hello.txt\0/x", .path_len = 13};
    rt_http_resp r;
    ck_assert_int_eq(rt_http_respond(&s.l, &node, &req, &r), WAMP_OK);
    ck_assert_uint_eq(r.status, 400);
    rt_http_resp_fini(&r);
}

END_TEST

START_TEST(test_static_directories)
{
    site s;
    site_init(&s, false);
    rt_http_resp r = get(&s.l, "/sub");
    ck_assert_uint_eq(r.status, 301);
    ck_assert_str_eq(r.location, "/sub/");
    rt_http_resp_fini(&r);
    /* A directory name that is not a plain header value is percent-encoded in Location. */
    r = get(&s.l, "/a b\r\nx");
    ck_assert_uint_eq(r.status, 301);
    ck_assert_str_eq(r.location, "/a%20b%0D%0Ax/");
    rt_http_resp_fini(&r);
    r = get(&s.l, "/sub/");
    ck_assert_uint_eq(r.status, 200);
    ck_assert_str_eq(r.content_type, "text/html; charset=utf-8");
    char *b = body_of(&r);
    ck_assert_str_eq(b, "<p>sub</p>\n");
    free(b);
    rt_http_resp_fini(&r);
    assert_status(&s.l, "/plain/", 404); /* no index.html, listing off */
    assert_status(&s.l, "/", 404);
    assert_status(&s.l, "/missing.txt", 404);
    assert_status(&s.l, "/hello.txt/", 404);
    assert_status(&s.l, "/gone/x", 404);
    site_init(&s, true);
    r = get(&s.l, "/");
    ck_assert_uint_eq(r.status, 200);
    b = body_of(&r);
    ck_assert_ptr_nonnull(strstr(b, "<a href=\"hello.txt\">hello.txt</a> (13 bytes)"));
    ck_assert_ptr_nonnull(strstr(b, "<a href=\"sub/\">sub/</a>"));
    ck_assert_ptr_nonnull(strstr(b, "&lt;b&gt;.txt"));
    ck_assert_ptr_null(strstr(b, "<b>"));
    free(b);
    rt_http_resp_fini(&r);
    r = get(&s.l, "/plain/");
    ck_assert_uint_eq(r.status, 200);
    b = body_of(&r);
    ck_assert_msg(strstr(b, "a.css") != NULL, "%s", b);
    free(b);
    rt_http_resp_fini(&r);
}

END_TEST

START_TEST(test_default_file)
{
    site s;
    site_init(&s, false);
    rt_http_resp r = get(&s.l, "/spa/some/route");
    ck_assert_uint_eq(r.status, 200);
    ck_assert_int_eq(r.cache_secs, -1);
    char *b = body_of(&r);
    ck_assert_str_eq(b, "hello, world\n");
    free(b);
    rt_http_resp_fini(&r);
}

END_TEST

START_TEST(test_methods_redirect_nodeinfo)
{
    site s;
    site_init(&s, false);
    rt_http_resp r = get_h(&s.l, "POST", "/hello.txt", NULL, NULL);
    ck_assert_uint_eq(r.status, 405);
    ck_assert(r.allow);
    rt_http_resp_fini(&r);
    r = get_h(&s.l, "DELETE", "/old", NULL, NULL);
    ck_assert_uint_eq(r.status, 405);
    rt_http_resp_fini(&r);
    r = get(&s.l, "/old");
    ck_assert_uint_eq(r.status, 302);
    ck_assert_str_eq(r.location, "https://example.com/new");
    rt_http_resp_fini(&r);
    r = get(&s.l, "/info");
    ck_assert_uint_eq(r.status, 200);
    char *b = body_of(&r);
    ck_assert_ptr_nonnull(strstr(b, "node&lt;1&gt;"));
    ck_assert_ptr_nonnull(strstr(b, "1.2.3"));
    ck_assert_ptr_nonnull(strstr(b, "router1"));
    free(b);
    rt_http_resp_fini(&r);
    assert_status(&s.l, "", 400);
    assert_status(&s.l, "relative", 400);
    r = get(&s.l, "/cfg");
    ck_assert_uint_eq(r.status, 200);
    ck_assert_str_eq(r.content_type, "application/json; charset=utf-8");
    ck_assert(r.no_store);
    b = body_of(&r);
    ck_assert_str_eq(b, "{\"a\":1}");
    free(b);
    rt_http_resp_fini(&r);
    assert_status(&s.l, "/cfg/x", 404);
}

END_TEST

/* The viewer is served from the files embedded at build time: mgmt/viewer/index.html. */
START_TEST(test_viewer_serves_embedded_files)
{
    site s;
    site_init(&s, false);
    rt_http_resp r = get(&s.l, "/trace");
    ck_assert_uint_eq(r.status, 301);
    ck_assert_str_eq(r.location, "/trace/");
    rt_http_resp_fini(&r);
    r = get(&s.l, "/trace/");
    ck_assert_uint_eq(r.status, 200);
    ck_assert_str_eq(r.content_type, "text/html; charset=utf-8");
    char path[4096];
    const char *src = getenv("RT_SOURCE_DIR");
    FMT(path, "%s/mgmt/viewer/index.html", src ? src : ".");
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *want = calloc(1, 1 << 20);
    size_t n = fread(want, 1, (1 << 20) - 1, f);
    fclose(f);
    ck_assert_uint_eq(r.length, n);
    ck_assert_mem_eq(r.data, want, n);
    free(want);
    rt_http_resp_fini(&r);
    ck_assert_ptr_nonnull(rt_http_viewer_find("index.html"));
    assert_status(&s.l, "/trace/index.html", 200);
    assert_status(&s.l, "/trace/nope.js", 404);
    assert_status(&s.l, "/trace/../hello.txt", 404);
}

END_TEST

static Suite *rt_http_suite(void)
{
    Suite *s = suite_create("rt_http");
    TCase *tc = tcase_create("pure");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_route_longest_prefix_on_segments);
    tcase_add_test(tc, test_rel_path_accepts_plain_paths);
    tcase_add_test(tc, test_rel_path_refuses_traversal);
    tcase_add_test(tc, test_mime_types);
    tcase_add_test(tc, test_listing_escapes_names);
    suite_add_tcase(s, tc);
    tc = tcase_create("tree");
    tcase_set_timeout(tc, 10);
    tcase_add_checked_fixture(tc, tree_setup, tree_teardown);
    tcase_add_test(tc, test_static_file_exact_bytes_and_headers);
    tcase_add_test(tc, test_static_refuses_the_way_out);
    tcase_add_test(tc, test_static_directories);
    tcase_add_test(tc, test_default_file);
    tcase_add_test(tc, test_methods_redirect_nodeinfo);
    tcase_add_test(tc, test_viewer_serves_embedded_files);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_http_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
