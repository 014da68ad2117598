/* wamp_rd.c: token readers for JSON, MessagePack and CBOR (see wamp_rd.h for the rules).
 * One loop per token, an explicit stack of levels: no recursion, so a hostile nesting depth
 * costs heap (bounded by WAMP_CODEC_MAX_DEPTH), never C stack. */
#include "wamp_rd.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wamp_codec.h"
#include "wamp_scan.h"
#include "wamp_ws.h"

/* --- Helpers --------------------------------------------------------------------------------- */

bool wamp_utf8_valid(const void *data, size_t n)
{
    /* One validator for the codecs and the WebSocket text frames. */
    return wamp_utf8_step(WAMP_UTF8_ACCEPT, data, n) == WAMP_UTF8_ACCEPT;
}

static bool b64_digit(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

bool wamp_b64_shape_ok(const char *s, size_t len, size_t *bin_len)
{
    /* The shape is checked before any sodium_base642bin(): libsodium 1.0.18 classifies
     * characters as signed char and would decode bytes >= 0x80 as digits. */
    if (len % 4 != 0) {
        return false;
    }
    size_t pad = 0;
    if (len > 0 && s[len - 1] == '=') {
        pad = s[len - 2] == '=' ? 2 : 1;
    }
    for (size_t i = 0; i < len - pad; i++) {
        if (!b64_digit((unsigned char)s[i])) {
            return false;
        }
    }
    *bin_len = len / 4 * 3 - pad;
    return true;
}

bool wamp_b64_decode(const char *s, size_t len, unsigned char *out, size_t *out_len)
{
    size_t n;
    if (!wamp_b64_shape_ok(s, len, &n)) {
        return false;
    }
    size_t got = 0;
    if (len == 0) {
        *out_len = 0;
        return true;
    }
    if (sodium_base642bin(out, n, s, len, NULL, &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 ||
        got != n) {
        return false;
    }
    *out_len = n;
    return true;
}

json_t *wamp_b64_string_new(const void *p, size_t n)
{
    /* sodium_base64_ENCODED_LEN counts the terminating NUL; the leading NUL takes its place in
     * the string length. Short values are built on the stack. */
    size_t enc = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
    char stack[512];
    char *s = enc + 1 <= sizeof(stack) ? stack : malloc(enc + 1);
    if (!s) {
        return NULL;
    }
    s[0] = '\0';
    sodium_bin2base64(s + 1, enc, p, n, sodium_base64_VARIANT_ORIGINAL);
    json_t *v = json_stringn_nocheck(s, enc); /* "\0" + enc - 1 digits */
    if (s != stack) {
        free(s);
    }
    return v;
}

__attribute__((format(printf, 2, 3))) static wamp_err bad(wamp_rd *r, const char *fmt, ...)
{
    if (r->err != WAMP_OK) {
        return r->err;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    r->err = WAMP_EPROTO;
    return r->err;
}

static wamp_err oom(wamp_rd *r)
{
    if (r->err == WAMP_OK) {
        r->err = WAMP_ENOMEM;
        snprintf(r->why, sizeof(r->why), "out of memory");
    }
    return r->err;
}

static size_t off(const wamp_rd *r)
{
    return (size_t)(r->p - r->start);
}

static size_t left(const wamp_rd *r)
{
    return (size_t)(r->end - r->p);
}

static unsigned char *scratch(wamp_rd *r, size_t n)
{
    if (n > r->scratch_cap) {
        size_t cap = r->scratch_cap ? r->scratch_cap : 64;
        while (cap < n) {
            cap *= 2;
        }
        unsigned char *s = realloc(r->scratch, cap);
        if (!s) {
            return NULL;
        }
        r->scratch = s;
        r->scratch_cap = cap;
    }
    return r->scratch ? r->scratch : NULL;
}

void wamp_rd_init(wamp_rd *r, wamp_ser ser, const void *p, size_t n)
{
    /* Every field but the inline levels (written whole when opened) and the reason's text: a
     * reader is made for every message received, and those are most of its size. */
    r->ser = ser;
    r->err = WAMP_OK;
    r->start = r->p = r->tok_start = r->tok_end = p ? p : (const void *)"";
    r->end = r->start + (p ? n : 0);
    r->depth = 0;
    r->done = r->counting = r->counted = r->one_pass = r->share_empty_map = false;
    r->values_left = r->values_max = SIZE_MAX;
    r->lv = r->lv_inline;
    r->lv_cap = WAMP_RD_INLINE_LEVELS;
    r->counts = NULL;
    r->n_counts = r->counts_cap = r->counts_next = 0;
    r->scratch = NULL;
    r->scratch_cap = 0;
    r->why[0] = '\0';
}

void wamp_rd_init_one_pass(wamp_rd *r, wamp_ser ser, const void *p, size_t n)
{
    wamp_rd_init(r, ser, p, n);
    r->one_pass = true;
}

void wamp_rd_init_in_array(wamp_rd *r, wamp_ser ser, const void *p, size_t n, size_t at,
                           size_t left)
{
    wamp_rd_init(r, ser, p, n);
    r->p = r->tok_start = r->tok_end = r->start + (at < n ? at : n);
    r->lv[0] = (wamp_rd_level){.left = left, .is_map = false, .key_next = false, .first = false};
    r->depth = 1;
}

void wamp_rd_limit_values(wamp_rd *r, size_t max)
{
    r->values_left = r->values_max = max;
}

void wamp_rd_fini(wamp_rd *r)
{
    /* Most readers allocated nothing: no call then (a reader per message received). */
    if (r->lv != r->lv_inline) {
        free(r->lv);
    }
    r->lv = r->lv_inline;
    r->lv_cap = WAMP_RD_INLINE_LEVELS;
    if (r->counts) {
        free(r->counts);
    }
    r->counts = NULL;
    r->counts_cap = r->n_counts = 0;
    if (r->scratch) {
        free(r->scratch);
    }
    r->scratch = NULL;
    r->scratch_cap = 0;
}

/* p past JSON whitespace (RFC 8259), at most to end. */
static inline const unsigned char *js_skip_ws(const unsigned char *p, const unsigned char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
        p++;
    }
    return p;
}

bool wamp_rd_at_end(wamp_rd *r)
{
    if (r->err != WAMP_OK || r->depth == 0) {
        return false;
    }
    const wamp_rd_level *l = &r->lv[r->depth - 1];
    if (l->is_map && !l->key_next) {
        return false;
    }
    if (r->ser != WAMP_SER_JSON) {
        return l->left == 0;
    }
    const unsigned char *p = js_skip_ws(r->p, r->end);
    return p < r->end && *p == (l->is_map ? '}' : ']');
}

bool wamp_rd_next_is_container(wamp_rd *r)
{
    if (r->err != WAMP_OK || r->done || wamp_rd_at_end(r)) {
        return false;
    }
    const unsigned char *p = r->p;
    if (r->ser == WAMP_SER_JSON) {
        p = js_skip_ws(p, r->end);
        if (r->depth > 0 && !r->lv[r->depth - 1].first && p < r->end && *p == ',') {
            p = js_skip_ws(p + 1, r->end);
        }
        return p < r->end && (*p == '[' || *p == '{');
    }
    if (p >= r->end) {
        return false;
    }
    if (r->ser == WAMP_SER_MSGPACK) {
        /* fixmap, fixarray; array 16/32, map 16/32 */
        return (*p & 0xe0) == 0x80 || (*p >= 0xdc && *p <= 0xdf);
    }
    return *p >> 5 == 4 || *p >> 5 == 5; /* CBOR major types 4 (array) and 5 (map) */
}

bool wamp_rd_done(const wamp_rd *r)
{
    return r->done;
}

const char *wamp_rd_why(const wamp_rd *r)
{
    return r->why;
}

/* Opens a container level (count pairs or elements). */
static wamp_err push(wamp_rd *r, bool is_map, size_t count)
{
    if (r->depth >= WAMP_CODEC_MAX_DEPTH) {
        return bad(r, "nesting deeper than %d at offset %zu", WAMP_CODEC_MAX_DEPTH, off(r));
    }
    if (r->depth == r->lv_cap) {
        size_t cap = r->lv_cap * 2;
        wamp_rd_level *lv = malloc(cap * sizeof(*lv));
        if (!lv) {
            return oom(r);
        }
        memcpy(lv, r->lv, r->depth * sizeof(*lv));
        if (r->lv != r->lv_inline) {
            free(r->lv);
        }
        r->lv = lv;
        r->lv_cap = cap;
    }
    r->lv[r->depth++] = (wamp_rd_level){
            .left = count, .is_map = is_map, .key_next = is_map, .first = true, .cidx = 0};
    return WAMP_OK;
}

/* --- JSON ------------------------------------------------------------------------------------ */

static void js_ws(wamp_rd *r)
{
    r->p = js_skip_ws(r->p, r->end);
}

int wamp_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static bool hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = wamp_hex_digit(p[i]);
        if (h < 0) {
            return false;
        }
        v = v << 4 | (unsigned)h;
    }
    *out = v;
    return true;
}

static size_t utf8_put(unsigned char *d, unsigned cp)
{
    if (cp < 0x80) {
        d[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (unsigned char)(0xc0 | cp >> 6);
        d[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (unsigned char)(0xe0 | cp >> 12);
        d[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        d[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (unsigned char)(0xf0 | cp >> 18);
    d[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    d[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    d[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A JSON string at r->p (the opening quote). Strings without escapes point into the input;
 * escapes are decoded into scratch (never longer than the escaped text). value: the string is
 * not a key, so the binary convention applies.
 * Long: the string scanner's hot loop and its escape decoding in one place (every JSON string of
 * every message goes through it); the escapes share the output cursor. */
static wamp_err js_string(wamp_rd *r, wamp_tok *t, bool value)
{
    const unsigned char *s = ++r->p;
    const unsigned char *q = s;
    bool esc = false, ascii = true;
    while (q < r->end) {
        q += wamp_scan_json_plain(q, (size_t)(r->end - q));
        if (q >= r->end) {
            break;
        }
        if (*q == '"') {
            break;
        }
        ascii = ascii && *q < 0x80;
        if (*q == '\\') {
            esc = true;
            if (r->end - q < 2) {
                break;
            }
            q += 2;
            continue;
        }
        if (*q < 0x20) {
            return bad(r, "control character in string at offset %zu", (size_t)(q - r->start));
        }
        q++;
    }
    if (q >= r->end || *q != '"') {
        return bad(r, "unterminated string at offset %zu", (size_t)(s - 1 - r->start));
    }
    size_t raw = (size_t)(q - s);
    r->p = q + 1;
    t->kind = WAMP_TOK_STR;
    if (!esc) {
        if (!ascii && !wamp_utf8_valid(s, raw)) {
            return bad(r, "invalid UTF-8 in string at offset %zu", (size_t)(s - 1 - r->start));
        }
        t->p = s;
        t->len = raw;
        return WAMP_OK;
    }
    /* Room for the decoded text, and behind it for the binary a "\0" + base64 string holds. */
    unsigned char *d = scratch(r, raw + raw / 4 * 3 + 8);
    if (!d) {
        return oom(r);
    }
    size_t n = 0;
    const unsigned char *i = s;
    while (i < q) {
        const unsigned char *run = i;
        while (i < q && *i != '\\') {
            i++;
        }
        memcpy(d + n, run, (size_t)(i - run));
        n += (size_t)(i - run);
        if (i >= q) {
            break;
        }
        unsigned char c = i[1];
        i += 2;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            d[n++] = c;
            continue;
        case 'b':
            d[n++] = '\b';
            continue;
        case 'f':
            d[n++] = '\f';
            continue;
        case 'n':
            d[n++] = '\n';
            continue;
        case 'r':
            d[n++] = '\r';
            continue;
        case 't':
            d[n++] = '\t';
            continue;
        case 'u':
            break;
        default:
            return bad(r, "invalid escape in string at offset %zu", (size_t)(i - 2 - r->start));
        }
        unsigned cp;
        if (q - i < 4 || !hex4(i, &cp)) {
            return bad(r, "invalid \\u escape at offset %zu", (size_t)(i - 2 - r->start));
        }
        i += 4;
        if (cp >= 0xdc00 && cp <= 0xdfff) {
            return bad(r, "lone surrogate at offset %zu", (size_t)(i - 6 - r->start));
        }
        if (cp >= 0xd800 && cp <= 0xdbff) {
            unsigned lo;
            if (q - i < 6 || i[0] != '\\' || i[1] != 'u' || !hex4(i + 2, &lo) || lo < 0xdc00 ||
                lo > 0xdfff) {
                return bad(r, "lone surrogate at offset %zu", (size_t)(i - 6 - r->start));
            }
            i += 6;
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        n += utf8_put(d + n, cp);
    }
    if (!wamp_utf8_valid(d, n)) {
        return bad(r, "invalid UTF-8 in string at offset %zu", (size_t)(s - 1 - r->start));
    }
    t->p = d;
    t->len = n;
    size_t bin_len;
    /* The decoded text takes at most raw bytes, so d + raw is free for the binary. */
    if (value && n > 0 && d[0] == 0 &&
        wamp_b64_decode((const char *)d + 1, n - 1, d + raw, &bin_len)) {
        t->kind = WAMP_TOK_BIN;
        t->p = d + raw;
        t->len = bin_len;
    }
    return WAMP_OK;
}

/* Long: JSON's number grammar (sign, integer, fraction, exponent) scanned once, then classified
 * as integer or real with its range checks; the parts share the cursor and the digits. */
static wamp_err js_number(wamp_rd *r, wamp_tok *t)
{
    const unsigned char *s = r->p;
    const unsigned char *q = s;
    bool neg = false;
    bool is_real = false;
    if (q < r->end && *q == '-') {
        neg = true;
        q++;
    }
    const unsigned char *digits = q;
    if (q < r->end && *q == '0') {
        q++;
    } else if (q < r->end && *q >= '1' && *q <= '9') {
        while (q < r->end && *q >= '0' && *q <= '9') {
            q++;
        }
    } else {
        return bad(r, "invalid number at offset %zu", off(r));
    }
    const unsigned char *int_end = q;
    if (q < r->end && *q == '.') {
        is_real = true;
        q++;
        if (q >= r->end || *q < '0' || *q > '9') {
            return bad(r, "invalid number at offset %zu", off(r));
        }
        while (q < r->end && *q >= '0' && *q <= '9') {
            q++;
        }
    }
    if (q < r->end && (*q == 'e' || *q == 'E')) {
        is_real = true;
        q++;
        if (q < r->end && (*q == '+' || *q == '-')) {
            q++;
        }
        if (q >= r->end || *q < '0' || *q > '9') {
            return bad(r, "invalid number at offset %zu", off(r));
        }
        while (q < r->end && *q >= '0' && *q <= '9') {
            q++;
        }
    }
    if (!is_real) {
        uint64_t v = 0;
        for (const unsigned char *d = digits; d < int_end; d++) {
            unsigned dig = (unsigned)(*d - '0');
            if (v > (UINT64_MAX - dig) / 10) {
                return bad(r, "integer out of range at offset %zu", off(r));
            }
            v = v * 10 + dig;
        }
        if (neg) {
            if (v > (uint64_t)INT64_MAX + 1) {
                return bad(r, "integer out of range at offset %zu", off(r));
            }
            t->kind = WAMP_TOK_INT;
            t->i = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
        } else if (v > INT64_MAX) {
            t->kind = WAMP_TOK_UINT;
            t->u = v;
        } else {
            t->kind = WAMP_TOK_INT;
            t->i = (int64_t)v;
        }
        r->p = q;
        return WAMP_OK;
    }
    size_t n = (size_t)(q - s);
    char *buf = (char *)scratch(r, n + 1);
    if (!buf) {
        return oom(r);
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    double d = strtod(buf, NULL);
    if (!isfinite(d)) {
        return bad(r, "number out of range at offset %zu", off(r));
    }
    t->kind = WAMP_TOK_REAL;
    t->d = d;
    r->p = q;
    return WAMP_OK;
}

/* JSON pre-pass bookkeeping: a new container gets the next count slot. */
static wamp_err js_count_open(wamp_rd *r)
{
    if (r->n_counts == r->counts_cap) {
        size_t cap = r->counts_cap ? r->counts_cap * 2 : 16;
        size_t *c = realloc(r->counts, cap * sizeof(*c));
        if (!c) {
            return oom(r);
        }
        r->counts = c;
        r->counts_cap = cap;
    }
    r->counts[r->n_counts] = 0;
    r->lv[r->depth - 1].cidx = r->n_counts++;
    return WAMP_OK;
}

/* Long: one case per kind of JSON token, as the grammar lists them; the switch is the tokenizer. */
static wamp_err js_token(wamp_rd *r, wamp_tok *t)
{
    js_ws(r);
    wamp_rd_level *l = r->depth ? &r->lv[r->depth - 1] : NULL;
    if (l) {
        bool want_key = l->is_map && l->key_next;
        unsigned char close = l->is_map ? '}' : ']';
        if (r->p < r->end && *r->p == close && (want_key || !l->is_map)) {
            r->tok_start = r->p++;
            t->kind = WAMP_TOK_END;
            t->is_map = l->is_map;
            r->depth--;
            return WAMP_OK;
        }
        if (!l->first && (want_key || !l->is_map)) {
            if (r->p >= r->end || *r->p != ',') {
                return bad(r, "expected ',' or '%c' at offset %zu", close, off(r));
            }
            r->p++;
            js_ws(r);
        }
        t->first = l->first && (want_key || !l->is_map);
        t->in_map = l->is_map;
        if (want_key || !l->is_map) {
            l->first = false;
            if (r->counting) {
                r->counts[l->cidx]++;
            }
        }
        if (want_key) {
            if (r->p >= r->end || *r->p != '"') {
                return bad(r, "expected a string key at offset %zu", off(r));
            }
            r->tok_start = r->p;
            t->is_key = true;
            if (js_string(r, t, false) != WAMP_OK) {
                return r->err;
            }
            js_ws(r);
            if (r->p >= r->end || *r->p != ':') {
                return bad(r, "expected ':' at offset %zu", off(r));
            }
            r->tok_end = r->p; /* before the colon */
            r->p++;
            l->key_next = false;
            return WAMP_OK;
        }
        if (l->is_map) {
            l->key_next = true;
        }
    }
    r->tok_start = r->p;
    if (r->p >= r->end) {
        return bad(r, "truncated input at offset %zu", off(r));
    }
    switch (*r->p) {
    case '{':
    case '[': {
        bool is_map = *r->p == '{';
        r->p++;
        if (push(r, is_map, 0) != WAMP_OK) {
            return r->err;
        }
        t->kind = is_map ? WAMP_TOK_MAP : WAMP_TOK_ARRAY;
        if (r->counting) {
            return js_count_open(r);
        }
        t->count = r->counts_next < r->n_counts ? r->counts[r->counts_next++] : 0;
        return WAMP_OK;
    }
    case '"':
        return js_string(r, t, true);
    case 't':
    case 'f':
    case 'n': {
        static const char *const words[] = {"true", "false", "null"};
        int w = *r->p == 't' ? 0 : *r->p == 'f' ? 1 : 2;
        size_t n = strlen(words[w]);
        if (left(r) < n || memcmp(r->p, words[w], n) != 0) {
            return bad(r, "invalid literal at offset %zu", off(r));
        }
        r->p += n;
        t->kind = w == 2 ? WAMP_TOK_NULL : WAMP_TOK_BOOL;
        t->b = w == 0;
        return WAMP_OK;
    }
    default:
        return js_number(r, t);
    }
}

/* --- MessagePack ----------------------------------------------------------------------------- */

static uint64_t be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

/* Reads an n-byte big-endian field. */
static bool take_be(wamp_rd *r, size_t n, uint64_t *out)
{
    if (left(r) < n) {
        return false;
    }
    *out = be(r->p, n);
    r->p += n;
    return true;
}

static wamp_err truncated(wamp_rd *r)
{
    return bad(r, "truncated input at offset %zu", (size_t)(r->tok_start - r->start));
}

static wamp_err bytes_tok(wamp_rd *r, wamp_tok *t, wamp_tok_kind kind, uint64_t n)
{
    if (n > left(r)) {
        return truncated(r);
    }
    t->kind = kind;
    t->p = r->p;
    t->len = (size_t)n;
    r->p += n;
    if (kind == WAMP_TOK_STR && !wamp_utf8_valid(t->p, t->len)) {
        return bad(r, "invalid UTF-8 in string at offset %zu", (size_t)(r->tok_start - r->start));
    }
    return WAMP_OK;
}

static wamp_err container_tok(wamp_rd *r, wamp_tok *t, bool is_map, uint64_t n)
{
    /* Every element takes at least one byte: a count beyond the input is malformed. */
    if (n > left(r) || (is_map && n > left(r) / 2)) {
        return truncated(r);
    }
    t->kind = is_map ? WAMP_TOK_MAP : WAMP_TOK_ARRAY;
    t->count = (size_t)n;
    return push(r, is_map, (size_t)n);
}

static wamp_err int_tok(wamp_tok *t, uint64_t v)
{
    if (v > INT64_MAX) {
        t->kind = WAMP_TOK_UINT;
        t->u = v;
    } else {
        t->kind = WAMP_TOK_INT;
        t->i = (int64_t)v;
    }
    return WAMP_OK;
}

static wamp_err real_tok(wamp_rd *r, wamp_tok *t, double d)
{
    if (!isfinite(d)) {
        return bad(r, "NaN or infinite float at offset %zu", (size_t)(r->tok_start - r->start));
    }
    t->kind = WAMP_TOK_REAL;
    t->d = d;
    return WAMP_OK;
}

static double f32(uint64_t bits)
{
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, sizeof(f));
    return (double)f;
}

static double f64(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

/* Long: one case per MessagePack type tag, as the format lists them; the switch is the token
 * reader. */
static wamp_err mp_value(wamp_rd *r, wamp_tok *t)
{
    unsigned char tag = *r->p++;
    uint64_t n = 0;
    if (tag <= 0x7f) {
        return int_tok(t, tag);
    }
    if (tag >= 0xe0) {
        t->kind = WAMP_TOK_INT;
        t->i = (int8_t)tag;
        return WAMP_OK;
    }
    if ((tag & 0xe0) == 0xa0) {
        return bytes_tok(r, t, WAMP_TOK_STR, tag & 0x1f);
    }
    if ((tag & 0xf0) == 0x90) {
        return container_tok(r, t, false, tag & 0x0f);
    }
    if ((tag & 0xf0) == 0x80) {
        return container_tok(r, t, true, tag & 0x0f);
    }
    switch (tag) {
    case 0xc0:
        t->kind = WAMP_TOK_NULL;
        return WAMP_OK;
    case 0xc2:
    case 0xc3:
        t->kind = WAMP_TOK_BOOL;
        t->b = tag == 0xc3;
        return WAMP_OK;
    case 0xc4:
    case 0xc5:
    case 0xc6:
        if (!take_be(r, 1u << (tag - 0xc4), &n)) {
            return truncated(r);
        }
        return bytes_tok(r, t, WAMP_TOK_BIN, n);
    case 0xca:
        return take_be(r, 4, &n) ? real_tok(r, t, f32(n)) : truncated(r);
    case 0xcb:
        return take_be(r, 8, &n) ? real_tok(r, t, f64(n)) : truncated(r);
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf:
        return take_be(r, 1u << (tag - 0xcc), &n) ? int_tok(t, n) : truncated(r);
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: {
        unsigned bytes = 1u << (tag - 0xd0);
        if (!take_be(r, bytes, &n)) {
            return truncated(r);
        }
        unsigned shift = 64 - 8 * bytes; /* sign-extend from the field's width */
        t->kind = WAMP_TOK_INT;
        t->i = (int64_t)(n << shift) >> shift;
        return WAMP_OK;
    }
    case 0xd9:
    case 0xda:
    case 0xdb:
        if (!take_be(r, 1u << (tag - 0xd9), &n)) {
            return truncated(r);
        }
        return bytes_tok(r, t, WAMP_TOK_STR, n);
    case 0xdc:
    case 0xdd:
        if (!take_be(r, tag == 0xdc ? 2 : 4, &n)) {
            return truncated(r);
        }
        return container_tok(r, t, false, n);
    case 0xde:
    case 0xdf:
        if (!take_be(r, tag == 0xde ? 2 : 4, &n)) {
            return truncated(r);
        }
        return container_tok(r, t, true, n);
    case 0xc1:
        return bad(r, "reserved byte 0xc1 at offset %zu", (size_t)(r->tok_start - r->start));
    default:
        return bad(r, "MessagePack ext type at offset %zu", (size_t)(r->tok_start - r->start));
    }
}

/* --- CBOR (RFC 8949) ------------------------------------------------------------------------- */

static double half(uint64_t bits)
{
    unsigned h = (unsigned)bits;
    unsigned exp = (h >> 10) & 0x1f;
    unsigned mant = h & 0x3ff;
    double v;
    if (exp == 0) {
        v = ldexp(mant, -24);
    } else if (exp != 31) {
        v = ldexp(mant + 1024, (int)exp - 25);
    } else {
        v = mant == 0 ? INFINITY : NAN;
    }
    return (h & 0x8000) ? -v : v;
}

/* Tags 2 and 3 (RFC 8949 3.4.3, bignums) are the one tagged item accepted, for values inside
 * [-2^63, 2^64 - 1]: some encoders (Python's cbor 1.0) write every integer >= 2^63 that way.
 * They are read as the plain integer they stand for. Every other tag is refused: the WAMP value
 * model has no tagged values, and carrying one to a JSON or MessagePack peer would lose it. */
static wamp_err cbor_bignum(wamp_rd *r, wamp_tok *t, uint64_t tag, size_t at)
{
    uint64_t n;
    if (tag != 2 && tag != 3) {
        return bad(r, "CBOR tag %llu at offset %zu", (unsigned long long)tag, at);
    }
    if (left(r) < 1 || (*r->p >> 5) != 2 || (*r->p & 0x1f) > 27 || (*r->p & 0x1f) == 31) {
        return bad(r, "CBOR bignum without a byte string at offset %zu", at);
    }
    unsigned ai = *r->p++ & 0x1fu;
    n = ai;
    if (ai >= 24 && !take_be(r, 1u << (ai - 24), &n)) {
        return truncated(r);
    }
    if (n > left(r)) {
        return truncated(r);
    }
    const unsigned char *b = r->p;
    r->p += n;
    while (n > 0 && *b == 0) {
        b++;
        n--;
    }
    if (n > 8) {
        return bad(r, "integer out of range at offset %zu", at);
    }
    uint64_t v = be(b, (size_t)n);
    if (tag == 2) {
        return int_tok(t, v);
    }
    if (v > INT64_MAX) {
        return bad(r, "integer below -2^63 at offset %zu", at);
    }
    t->kind = WAMP_TOK_INT;
    t->i = -1 - (int64_t)v;
    return WAMP_OK;
}

static wamp_err cbor_value(wamp_rd *r, wamp_tok *t)
{
    unsigned char ib = *r->p++;
    unsigned major = ib >> 5;
    unsigned ai = ib & 0x1f;
    uint64_t n = ai;
    size_t at = (size_t)(r->tok_start - r->start);
    if (ai == 31) {
        return bad(r,
                   ib == 0xff ? "unexpected CBOR break at offset %zu"
                              : "CBOR indefinite-length item at offset %zu",
                   at);
    }
    if (ai >= 28) {
        return bad(r, "reserved CBOR additional info at offset %zu", at);
    }
    if (ai >= 24 && !take_be(r, 1u << (ai - 24), &n)) {
        return truncated(r);
    }
    switch (major) {
    case 0:
        return int_tok(t, n);
    case 1:
        if (n > INT64_MAX) {
            return bad(r, "integer below -2^63 at offset %zu", at);
        }
        t->kind = WAMP_TOK_INT;
        t->i = -1 - (int64_t)n;
        return WAMP_OK;
    case 2:
        return bytes_tok(r, t, WAMP_TOK_BIN, n);
    case 3:
        return bytes_tok(r, t, WAMP_TOK_STR, n);
    case 4:
        return container_tok(r, t, false, n);
    case 5:
        return container_tok(r, t, true, n);
    case 6:
        return cbor_bignum(r, t, n, at);
    default:
        break;
    }
    switch (ai) {
    case 20:
    case 21:
        t->kind = WAMP_TOK_BOOL;
        t->b = ai == 21;
        return WAMP_OK;
    case 22:
        t->kind = WAMP_TOK_NULL;
        return WAMP_OK;
    case 25:
        return real_tok(r, t, half(n));
    case 26:
        return real_tok(r, t, f32(n));
    case 27:
        return real_tok(r, t, f64(n));
    default:
        return bad(r, "CBOR simple value at offset %zu", at);
    }
}

/* Binary formats share the level logic: counts are known up front. */
static wamp_err bin_token(wamp_rd *r, wamp_tok *t)
{
    wamp_rd_level *l = r->depth ? &r->lv[r->depth - 1] : NULL;
    if (l) {
        bool want_key = l->is_map && l->key_next;
        if (l->left == 0 && (want_key || !l->is_map)) {
            r->tok_start = r->p;
            t->kind = WAMP_TOK_END;
            t->is_map = l->is_map;
            r->depth--;
            return WAMP_OK;
        }
        t->first = l->first && (want_key || !l->is_map);
        t->in_map = l->is_map;
        if (want_key || !l->is_map) {
            l->first = false;
        }
        if (l->is_map) {
            l->key_next = !l->key_next;
        }
        if (!l->is_map || !want_key) {
            l->left--;
        }
        t->is_key = want_key;
    }
    r->tok_start = r->p;
    if (r->p >= r->end) {
        return truncated(r);
    }
    wamp_err err = r->ser == WAMP_SER_MSGPACK ? mp_value(r, t) : cbor_value(r, t);
    if (err == WAMP_OK && t->is_key && t->kind != WAMP_TOK_STR) {
        return bad(r, "map key is not a string at offset %zu", (size_t)(r->tok_start - r->start));
    }
    return err;
}

/* --- Dispatch -------------------------------------------------------------------------------- */

static wamp_err step(wamp_rd *r, wamp_tok *t)
{
    memset(t, 0, sizeof(*t));
    t->depth = r->depth;
    wamp_err err = r->ser == WAMP_SER_JSON ? js_token(r, t) : bin_token(r, t);
    if (err != WAMP_OK) {
        return err;
    }
    if (t->kind == WAMP_TOK_END) {
        t->depth = r->depth;
    }
    if (!t->is_key) {
        r->tok_end = r->p;
    }
    if (r->depth == 0 && t->kind != WAMP_TOK_ARRAY && t->kind != WAMP_TOK_MAP) {
        r->done = true;
        if (r->ser == WAMP_SER_JSON) {
            js_ws(r);
        }
        if (r->p != r->end) {
            return bad(r, "trailing bytes at offset %zu", off(r));
        }
    }
    return WAMP_OK;
}

/* JSON: validate everything and record the container counts, then rewind. */
static wamp_err js_prepass(wamp_rd *r)
{
    wamp_tok t;
    r->counting = true;
    while (!r->done) {
        if (step(r, &t) != WAMP_OK) {
            r->counting = false;
            return r->err;
        }
    }
    r->counting = false;
    r->counted = true;
    r->done = false;
    r->p = r->start;
    r->depth = 0;
    r->counts_next = 0;
    return WAMP_OK;
}

wamp_err wamp_rd_next(wamp_rd *r, wamp_tok *t)
{
    if (r->err != WAMP_OK) {
        return r->err;
    }
    if (r->ser != WAMP_SER_JSON && r->ser != WAMP_SER_MSGPACK && r->ser != WAMP_SER_CBOR) {
        snprintf(r->why, sizeof(r->why), "unknown serializer %d", (int)r->ser);
        return r->err = WAMP_EINVAL;
    }
    if (r->done) {
        return WAMP_EINVAL;
    }
    if (r->ser == WAMP_SER_JSON && !r->counted && !r->one_pass && js_prepass(r) != WAMP_OK) {
        return r->err;
    }
    return step(r, t);
}

/* MessagePack: reads the rest of the containers open above depth without yielding tokens,
 * with bin_token()'s rules (the usual scalars inline, the rest through mp_value()). */
static wamp_err mp_skip_rest(wamp_rd *r, unsigned depth)
{
    wamp_tok t;
    while (r->depth > depth) {
        wamp_rd_level *l = &r->lv[r->depth - 1];
        bool key = l->is_map && l->key_next;
        if (l->left == 0 && (key || !l->is_map)) {
            r->depth--;
            continue;
        }
        l->first = false;
        if (l->is_map) {
            l->key_next = !key;
        }
        if (!key) {
            l->left--;
        }
        r->tok_start = r->p;
        if (r->p >= r->end) {
            return truncated(r);
        }
        unsigned char tag = *r->p;
        if (!key && (tag <= 0x7f || tag >= 0xe0 || tag == 0xc0 || tag == 0xc2 || tag == 0xc3)) {
            r->p++;
            continue;
        }
        if ((tag & 0xe0) == 0xa0 || tag == 0xd9) {
            /* fixstr and str8: the head's length octets, then the string. */
            size_t head = tag == 0xd9 ? 2 : 1;
            size_t len = tag == 0xd9 ? (left(r) >= 2 ? r->p[1] : SIZE_MAX) : tag & 0x1fu;
            if (len == SIZE_MAX || len > left(r) - head) {
                return truncated(r);
            }
            if (!wamp_utf8_valid(r->p + head, len)) {
                return bad(r, "invalid UTF-8 in string at offset %zu", off(r));
            }
            r->p += head + len;
            continue;
        }
        t.kind = WAMP_TOK_NULL;
        if (mp_value(r, &t) != WAMP_OK) {
            return r->err;
        }
        if (key && t.kind != WAMP_TOK_STR) {
            return bad(r, "map key is not a string at offset %zu",
                       (size_t)(r->tok_start - r->start));
        }
    }
    r->tok_end = r->p;
    if (r->depth == 0) {
        r->done = true;
        if (r->p != r->end) {
            return bad(r, "trailing bytes at offset %zu", off(r));
        }
    }
    return WAMP_OK;
}

/* JSON: reads the rest of the containers open above depth, token by token but without
 * step()'s per-token bookkeeping (nothing is yielded). */
static wamp_err js_skip_rest(wamp_rd *r, unsigned depth)
{
    wamp_tok t;
    while (r->depth > depth) {
        if (js_token(r, &t) != WAMP_OK) {
            return r->err;
        }
    }
    r->tok_end = r->p;
    if (r->depth == 0) {
        r->done = true;
        js_ws(r);
        if (r->p != r->end) {
            return bad(r, "trailing bytes at offset %zu", off(r));
        }
    }
    return WAMP_OK;
}

/* wamp_rd_skip() of a MessagePack fixarray or fixmap that is the top-level value or an array's
 * element (a message's Arguments and ArgumentsKw): its head read here, with bin_token()'s and
 * container_tok()'s rules, and the rest by mp_skip_rest(). 1 when done (or failed: r->err), 0
 * when the next value is anything else (nothing read). */
static int mp_skip_fix(wamp_rd *r, const unsigned char **p, size_t *n, wamp_tok_kind *kind)
{
    wamp_rd_level *l = r->depth ? &r->lv[r->depth - 1] : NULL;
    if (r->err != WAMP_OK || r->done || r->p >= r->end || (*r->p & 0xe0) != 0x80 ||
        (l && (l->is_map || l->left == 0))) {
        return 0;
    }
    if (l) {
        l->first = false;
        l->left--;
    }
    const unsigned char *from = r->tok_start = r->p++;
    bool is_map = *from < 0x90;
    size_t count = *from & 0x0fu;
    unsigned depth = r->depth;
    if (count > left(r) || (is_map && count > left(r) / 2)) {
        (void)truncated(r);
        return 1;
    }
    if (push(r, is_map, count) != WAMP_OK || mp_skip_rest(r, depth) != WAMP_OK) {
        return 1;
    }
    *p = from;
    *n = (size_t)(r->tok_end - from);
    if (kind) {
        *kind = is_map ? WAMP_TOK_MAP : WAMP_TOK_ARRAY;
    }
    return 1;
}

wamp_err wamp_rd_skip(wamp_rd *r, const unsigned char **p, size_t *n, wamp_tok_kind *kind)
{
    if (r->ser == WAMP_SER_MSGPACK && mp_skip_fix(r, p, n, kind)) {
        return r->err;
    }
    wamp_tok t;
    if (wamp_rd_next(r, &t) != WAMP_OK) {
        return r->err != WAMP_OK ? r->err : WAMP_EINVAL;
    }
    const unsigned char *from = r->tok_start;
    unsigned depth = t.depth;
    if (kind) {
        *kind = t.kind;
    }
    if ((t.kind == WAMP_TOK_ARRAY || t.kind == WAMP_TOK_MAP) && r->ser != WAMP_SER_CBOR) {
        if ((r->ser == WAMP_SER_MSGPACK ? mp_skip_rest(r, depth) : js_skip_rest(r, depth)) !=
            WAMP_OK) {
            return r->err;
        }
    } else if (t.kind == WAMP_TOK_ARRAY || t.kind == WAMP_TOK_MAP) {
        do {
            if (wamp_rd_next(r, &t) != WAMP_OK) {
                return r->err != WAMP_OK ? r->err : WAMP_EINVAL;
            }
        } while (!(t.kind == WAMP_TOK_END && t.depth == depth));
    } else if (t.kind == WAMP_TOK_END) {
        return WAMP_EINVAL;
    }
    *p = from;
    *n = (size_t)(r->tok_end - from);
    return WAMP_OK;
}

wamp_err wamp_rd_validate(wamp_ser ser, const void *p, size_t n, char *why, size_t why_len)
{
    wamp_rd r;
    wamp_tok t;
    wamp_rd_init(&r, ser, p, n);
    wamp_err err = WAMP_OK;
    while (!r.done && (err = wamp_rd_next(&r, &t)) == WAMP_OK) {
    }
    if (err != WAMP_OK && why && why_len) {
        snprintf(why, why_len, "%s", r.why);
    }
    wamp_rd_fini(&r);
    return err;
}

/* --- Token stream -> jansson ----------------------------------------------------------------- */

struct build_level {
    json_t *node;
    char *key; /* maps: the pending key (owned) */
    size_t key_len;
};

/* Attaches v (consumed) to the innermost container, or makes it the value. */
static wamp_err attach(wamp_rd *r, struct build_level *lv, size_t depth, json_t *v, json_t **out,
                       size_t at)
{
    if (!v) {
        return oom(r);
    }
    if (depth == 0) {
        *out = v;
        return WAMP_OK;
    }
    struct build_level *l = &lv[depth - 1];
    if (json_is_array(l->node)) {
        return json_array_append_new(l->node, v) == 0 ? WAMP_OK : oom(r);
    }
    if (json_object_getn(l->node, l->key, l->key_len)) {
        json_decref(v);
        return bad(r, "duplicate map key at offset %zu", at);
    }
    int rc = json_object_setn_new_nocheck(l->node, l->key, l->key_len, v);
    free(l->key);
    l->key = NULL;
    return rc == 0 ? WAMP_OK : oom(r);
}

/* MessagePack: the next element of an array when it is what a message's envelope is mostly
 * made of (a small integer, a short string, an empty map), decoded without the token machinery
 * into the value wamp_rd_json() would build. 1: done; 0: anything else, or input the token path
 * must report (nothing read); -1: out of memory. */
static int mp_fast_json(wamp_rd *r, json_t **out)
{
    wamp_rd_level *l = &r->lv[r->depth - 1];
    if (l->is_map || l->left == 0 || r->p >= r->end) {
        return 0;
    }
    const unsigned char *at = r->p;
    size_t avail = (size_t)(r->end - at), used = 1;
    unsigned char tag = *at;
    json_t *v;
    if (tag <= 0x7f || tag >= 0xe0) {
        v = json_integer(tag <= 0x7f ? (json_int_t)tag : (json_int_t)(int8_t)tag);
    } else if (tag == 0x80 && r->depth < WAMP_CODEC_MAX_DEPTH) {
        v = r->share_empty_map ? wamp_rd_empty_map() : json_object();
    } else if ((tag & 0xe0) == 0xa0 || tag == 0xd9) {
        size_t hdr = tag == 0xd9 ? 2 : 1;
        if (avail < hdr) {
            return 0;
        }
        size_t len = tag == 0xd9 ? at[1] : (size_t)(tag & 0x1f);
        if (len > avail - hdr || !wamp_utf8_valid(at + hdr, len)) {
            return 0;
        }
        v = json_stringn_nocheck((const char *)at + hdr, len);
        used = hdr + len;
    } else if (tag >= 0xcc && tag <= 0xcf) {
        size_t nb = (size_t)1 << (tag - 0xcc);
        if (avail < 1 + nb || be(at + 1, nb) > INT64_MAX) {
            return 0;
        }
        v = json_integer((json_int_t)be(at + 1, nb));
        used = 1 + nb;
    } else {
        return 0;
    }
    if (!v) {
        oom(r);
        return -1;
    }
    l->first = false;
    l->left--;
    r->tok_start = at;
    r->p = r->tok_end = at + used;
    *out = v;
    return 1;
}

/* JSON read in one pass: the same for an array's next element when it is an integer of at most
 * 18 digits, a string without escapes or an empty object. 1: done; 0: anything else, or input
 * the token path must report (nothing read); -1: out of memory.
 * Long: the three element kinds share the separator handling and the level bookkeeping at the
 * end; this is the per-element hot path of every JSON envelope. */
static int js_fast_json(wamp_rd *r, json_t **out)
{
    wamp_rd_level *l = &r->lv[r->depth - 1];
    const unsigned char *q = r->p, *end = r->end;
    if (l->is_map) {
        return 0;
    }
    q = js_skip_ws(q, end);
    if (!l->first) {
        if (q >= end || *q != ',') {
            return 0;
        }
        q++;
        q = js_skip_ws(q, end);
    }
    if (q >= end) {
        return 0;
    }
    const unsigned char *at = q;
    json_t *v;
    if (*q == '-' || (*q >= '0' && *q <= '9')) {
        bool neg = *q == '-';
        q += neg;
        const unsigned char *d0 = q;
        uint64_t val = 0;
        while (q < end && *q >= '0' && *q <= '9' && q - d0 < 19) {
            val = val * 10 + (uint64_t)(*q++ - '0');
        }
        size_t nd = (size_t)(q - d0);
        if (nd == 0 || nd > 18 || (nd > 1 && *d0 == '0') ||
            (q < end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E'))) {
            return 0;
        }
        v = json_integer(neg ? -(json_int_t)val : (json_int_t)val);
    } else if (*q == '"') {
        const unsigned char *s = ++q;
        bool ascii = true;
        while (q < end) {
            q += wamp_scan_json_plain(q, (size_t)(end - q));
            if (q >= end) {
                break;
            }
            if (*q == '"') {
                break;
            }
            if (*q == '\\' || *q < 0x20) {
                return 0;
            }
            ascii = ascii && *q < 0x80;
            q++;
        }
        if (q >= end || (!ascii && !wamp_utf8_valid(s, (size_t)(q - s)))) {
            return 0;
        }
        v = json_stringn_nocheck((const char *)s, (size_t)(q - s));
        q++;
    } else if (*q == '{' && r->depth < WAMP_CODEC_MAX_DEPTH) {
        q++;
        q = js_skip_ws(q, end);
        if (q >= end || *q != '}') {
            return 0;
        }
        q++;
        v = r->share_empty_map ? wamp_rd_empty_map() : json_object();
    } else {
        return 0;
    }
    if (!v) {
        oom(r);
        return -1;
    }
    l->first = false;
    r->tok_start = at;
    r->p = r->tok_end = q;
    *out = v;
    return 1;
}

json_t *wamp_rd_empty_map(void)
{
    static json_t *empty;
    if (!empty) {
        empty = json_object();
    }
    return json_incref(empty);
}

/* Long: one case per token kind in a non-recursive build of the jansson value (an explicit stack
 * of open containers instead of recursion), each attaching its value to the open container. */
wamp_err wamp_rd_json(wamp_rd *r, json_t **out)
{
    *out = NULL;
    if ((r->ser == WAMP_SER_MSGPACK || (r->ser == WAMP_SER_JSON && r->one_pass)) &&
        r->err == WAMP_OK && r->depth > 0 && r->values_left > 0) {
        int fast = r->ser == WAMP_SER_MSGPACK ? mp_fast_json(r, out) : js_fast_json(r, out);
        if (fast > 0) {
            r->values_left--;
            return WAMP_OK;
        }
        if (fast < 0) {
            return r->err;
        }
    }
    wamp_tok t;
    struct build_level inline_lv[8]; /* an envelope's Details and Options need no allocation */
    struct build_level *lv = inline_lv;
    size_t cap = sizeof(inline_lv) / sizeof(inline_lv[0]), depth = 0;
    json_t *v = NULL;
    do {
        if (wamp_rd_next(r, &t) != WAMP_OK) {
            goto fail;
        }
        if (t.kind != WAMP_TOK_END && !(t.kind == WAMP_TOK_STR && t.is_key)) {
            if (r->values_left == 0) {
                (void)bad(r, "more than %zu values", r->values_max);
                goto fail;
            }
            r->values_left--;
        }
        size_t at = (size_t)(r->tok_start - r->start);
        json_t *item = NULL;
        switch (t.kind) {
        case WAMP_TOK_END: {
            item = lv[--depth].node;
            lv[depth].node = NULL;
            break;
        }
        case WAMP_TOK_ARRAY:
        case WAMP_TOK_MAP:
            if (depth == cap) {
                size_t ncap = cap * 2;
                struct build_level *n = realloc(lv == inline_lv ? NULL : lv, ncap * sizeof(*n));
                if (!n) {
                    oom(r);
                    goto fail;
                }
                if (lv == inline_lv) {
                    memcpy(n, inline_lv, sizeof(inline_lv));
                }
                lv = n;
                cap = ncap;
            }
            lv[depth] = (struct build_level){.node = t.kind == WAMP_TOK_MAP ? json_object()
                                                                            : json_array()};
            if (!lv[depth].node) {
                oom(r);
                goto fail;
            }
            depth++;
            continue;
        case WAMP_TOK_STR:
            if (t.is_key) {
                char *k = malloc(t.len + 1);
                if (!k) {
                    oom(r);
                    goto fail;
                }
                memcpy(k, t.p, t.len);
                k[t.len] = '\0';
                lv[depth - 1].key = k;
                lv[depth - 1].key_len = t.len;
                continue;
            }
            item = json_stringn_nocheck((const char *)t.p, t.len);
            break;
        case WAMP_TOK_BIN:
            item = wamp_b64_string_new(t.p, t.len);
            break;
        case WAMP_TOK_NULL:
            item = json_null();
            break;
        case WAMP_TOK_BOOL:
            item = json_boolean(t.b);
            break;
        case WAMP_TOK_INT:
            item = json_integer((json_int_t)t.i);
            break;
        case WAMP_TOK_UINT: {
            /* Malformed input is reported as such wherever it is: read the value to its end
             * before reporting the range. */
            char why[sizeof(r->why)];
            snprintf(why, sizeof(why), "integer %llu at offset %zu is above 2^63-1",
                     (unsigned long long)t.u, at);
            for (size_t open = depth; open > 0;) {
                if (wamp_rd_next(r, &t) != WAMP_OK) {
                    goto fail;
                }
                open += t.kind == WAMP_TOK_ARRAY || t.kind == WAMP_TOK_MAP;
                open -= t.kind == WAMP_TOK_END;
            }
            memcpy(r->why, why, sizeof(why));
            r->err = WAMP_ERANGE;
            goto fail;
        }
        case WAMP_TOK_REAL:
            item = json_real(t.d);
            break;
        }
        if (attach(r, lv, depth, item, &v, at) != WAMP_OK) {
            goto fail;
        }
    } while (depth > 0);
    if (lv != inline_lv) {
        free(lv);
    }
    *out = v;
    return WAMP_OK;
fail:
    for (size_t i = 0; i < depth; i++) {
        json_decref(lv[i].node);
        free(lv[i].key);
    }
    if (lv != inline_lv) {
        free(lv);
    }
    json_decref(v);
    return r->err != WAMP_OK ? r->err : WAMP_EINVAL;
}
