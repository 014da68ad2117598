/* fuzz_http.c: the web transport's path checks and routing (rt_http.h) on arbitrary request
 * paths. Properties: a path rt_http_rel_path() accepts is relative, has no empty, "." or ".."
 * segment (none either after one more percent-decoding), no NUL and no backslash, and is never
 * longer than the input; routing takes a service whose prefix the path really has; the HTML
 * escape leaves none of the characters it escapes. */
#include <string.h>

#include "fuzz.h"
#include "rt_http.h"

/* A segment s[0..n) after one percent-decoding: true when it is "", "." or "..", or holds a
 * '/', a backslash or a NUL. */
static bool bad_after_decoding(const char *s, size_t n)
{
    char d[600];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (s[i] == '%' && i + 2 < n && s[i + 1] && s[i + 2] &&
            strchr("0123456789abcdefABCDEF", s[i + 1]) &&
            strchr("0123456789abcdefABCDEF", s[i + 2]) && sscanf(s + i + 1, "%2x", &v) == 1) {
            d[k++] = (char)v;
            i += 2;
        } else {
            d[k++] = s[i];
        }
    }
    if (k == 0 || (k == 1 && d[0] == '.') || (k == 2 && d[0] == '.' && d[1] == '.')) {
        return true;
    }
    return memchr(d, '/', k) || memchr(d, '\\', k) || memchr(d, '\0', k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    char out[512];
    if (rt_http_rel_path(in, size, out, sizeof(out)) == WAMP_OK) {
        size_t n = strlen(out);
        FUZZ_CHECK(n <= size);
        FUZZ_CHECK(n == 0 || out[0] != '/');
        FUZZ_CHECK(!strchr(out, '\\'));
        /* Segments; a trailing '/' leaves an empty last one, which names the directory. */
        size_t start = 0;
        for (size_t i = 0; i < n; i++) {
            if (out[i] == '/') {
                FUZZ_CHECK(!bad_after_decoding(out + start, i - start));
                start = i + 1;
            }
        }
        FUZZ_CHECK(start == n || !bad_after_decoding(out + start, n - start));
    }
    rt_web_path web[] = {
            {.prefix = "/", .kind = RT_WEB_STATIC},
            {.prefix = "/a", .kind = RT_WEB_STATIC},
            {.prefix = "/a/b", .kind = RT_WEB_NODEINFO},
            {.prefix = "/trace", .kind = RT_WEB_VIEWER},
    };
    rt_listener l = {.web = web, .n_web = 4};
    const char *rest = NULL;
    const rt_web_path *w = rt_http_route(&l, in, size, &rest);
    FUZZ_CHECK(w != NULL); /* "/" takes everything */
    FUZZ_CHECK(rest >= in && rest <= in + size);
    size_t pl = strlen(w->prefix);
    if (pl > 1) {
        FUZZ_CHECK(size >= pl && memcmp(in, w->prefix, pl) == 0);
        FUZZ_CHECK(size == pl || in[pl] == '/');
        FUZZ_CHECK(rest == in + pl);
    }
    char name[256];
    size_t nl = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
    memcpy(name, in, nl);
    name[nl] = '\0';
    char esc[2048];
    size_t used = 0;
    esc[0] = '\0';
    FUZZ_CHECK(rt_http_html_escape(name, esc, sizeof(esc), &used));
    FUZZ_CHECK(!strpbrk(esc, "<>\"'"));
    return 0;
}
