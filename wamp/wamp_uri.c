/* wamp_uri.c: hand-written single-pass URI checks (no regex library) and matching. */
#include "wamp_uri.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Spec "URIs" loose rule: a component character is anything but whitespace, '.' and '#'. The
 * spec's regular expressions are Python's, where \s matches Unicode whitespace in str patterns:
 * U+0009..U+000D, U+001C..U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029,
 * U+202F, U+205F and U+3000. Returns true if a forbidden character starts at p. The input is
 * NUL-terminated, and NUL matches none of the continuation bytes tested, so p[1] and p[2] are
 * only read while the preceding bytes matched. */
static bool loose_char_bad(const unsigned char *p)
{
    switch (p[0]) {
    case '#':
    case ' ':
        return true;
    case 0xc2:
        return p[1] == 0x85 || p[1] == 0xa0;
    case 0xe1:
        return p[1] == 0x9a && p[2] == 0x80;
    case 0xe2:
        return (p[1] == 0x80 &&
                ((p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf)) ||
               (p[1] == 0x81 && p[2] == 0x9f);
    case 0xe3:
        return p[1] == 0x80 && p[2] == 0x80;
    default:
        return (p[0] >= 0x09 && p[0] <= 0x0d) || (p[0] >= 0x1c && p[0] <= 0x1f);
    }
}

/* Spec "URIs" strict rule: components match [0-9a-z_]+. */
static bool strict_char_ok(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* The bytes the loose rule stops at: NUL, '.', and the first byte of every character
 * loose_char_bad() may refuse. Every other byte belongs to a component as it is. */
static const bool loose_stop[256] = {
        [0x00] = true, [0x09] = true, [0x0a] = true, [0x0b] = true, [0x0c] = true, [0x0d] = true,
        [0x1c] = true, [0x1d] = true, [0x1e] = true, [0x1f] = true, [' '] = true,  ['#'] = true,
        ['.'] = true,  [0xc2] = true, [0xe1] = true, [0xe2] = true, [0xe3] = true,
};

bool wamp_uri_is_valid(const char *uri, wamp_uri_rule rule)
{
    if (!uri || !*uri) {
        return false;
    }
    bool strict = rule == WAMP_URI_STRICT || rule == WAMP_URI_STRICT_EMPTY;
    bool allow_empty = rule == WAMP_URI_LOOSE_EMPTY || rule == WAMP_URI_STRICT_EMPTY;
    size_t comp_len = 0;
    const unsigned char *p = (const unsigned char *)uri;
    for (;;) {
        if (!strict) {
            /* The usual URI is plain ASCII: skip to the next byte worth a look. */
            const unsigned char *run = p;
            while (!loose_stop[*p]) {
                p++;
            }
            comp_len += (size_t)(p - run);
        }
        if (*p == '\0') {
            break;
        }
        if (*p == '.') {
            if (comp_len == 0 && !allow_empty) {
                return false;
            }
            comp_len = 0;
        } else if (strict ? !strict_char_ok(*p) : loose_char_bad(p)) {
            return false;
        } else {
            comp_len++;
        }
        p++;
    }
    /* A trailing '.' leaves an empty last component; the *_EMPTY regexes allow it. */
    return comp_len > 0 || allow_empty;
}

/* WILDCARD: walk both strings one dot-separated component at a time. */
static bool wildcard_matches(const char *pattern, const char *uri)
{
    const char *p = pattern;
    const char *u = uri;
    for (;;) {
        const char *pe = strchr(p, '.');
        const char *ue = strchr(u, '.');
        size_t plen = pe ? (size_t)(pe - p) : strlen(p);
        size_t ulen = ue ? (size_t)(ue - u) : strlen(u);
        /* An empty pattern component matches any one component. */
        if (plen > 0 && (plen != ulen || memcmp(p, u, plen) != 0)) {
            return false;
        }
        if (!pe || !ue) {
            /* Same number of components only if both ended together. */
            return !pe && !ue;
        }
        p = pe + 1;
        u = ue + 1;
    }
}

bool wamp_uri_matches(const char *pattern, wamp_match m, const char *uri)
{
    if (!pattern || !uri) {
        return false;
    }
    switch (m) {
    case WAMP_MATCH_EXACT:
        return strcmp(pattern, uri) == 0;
    case WAMP_MATCH_PREFIX:
        return strncmp(uri, pattern, strlen(pattern)) == 0;
    case WAMP_MATCH_WILDCARD:
        return wildcard_matches(pattern, uri);
    }
    return false;
}

bool wamp_match_parse(const char *s, wamp_match *out)
{
    static const wamp_match all[] = {WAMP_MATCH_EXACT, WAMP_MATCH_PREFIX, WAMP_MATCH_WILDCARD};
    if (!s) {
        return false;
    }
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(s, wamp_match_name(all[i])) == 0) {
            *out = all[i];
            return true;
        }
    }
    return false;
}

const char *wamp_match_name(wamp_match m)
{
    switch (m) {
    case WAMP_MATCH_EXACT:
        return "exact";
    case WAMP_MATCH_PREFIX:
        return "prefix";
    case WAMP_MATCH_WILDCARD:
        return "wildcard";
    }
    return "unknown";
}
