/* wamp_wr.c: streaming writer (JSON, MessagePack, CBOR, jansson tree) and the exact transcoder. */
#include "wamp_wr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>
#include <sodium.h>

#include "wamp_cbor.h"
#include "wamp_codec.h"
#include "wamp_json.h"
#include "wamp_msgpack.h"
#include "wamp_rd.h"

static bool fail(wamp_wr *w, wamp_err err)
{
    if (w->err == WAMP_OK) {
        w->err = err;
    }
    return false;
}

void wamp_wr_init(wamp_wr *w, int ser, size_t cap, size_t max)
{
    /* Levels are written whole when opened: only the header is cleared (the levels are most of
     * the struct, and a writer is made for every message sent). */
    w->ser = ser;
    w->err = WAMP_OK;
    w->max = max;
    w->buf = NULL;
    w->root = NULL;
    w->depth = 0;
    w->done = false;
    if (ser != WAMP_SER_JSON && ser != WAMP_SER_MSGPACK && ser != WAMP_SER_CBOR &&
        ser != WAMP_WR_TREE) {
        w->err = WAMP_EINVAL;
        return;
    }
    if (ser != WAMP_WR_TREE) {
        w->buf = wamp_buf_new(cap ? cap : 256);
        if (!w->buf) {
            w->err = WAMP_ENOMEM;
        }
    }
}

void wamp_wr_fini(wamp_wr *w)
{
    wamp_buf_unref(&w->buf);
    json_decref(w->root);
    w->root = NULL;
    for (unsigned i = 0; i < w->depth && i < WAMP_WR_MAX_DEPTH; i++) {
        json_decref(w->lv[i].node);
        free(w->lv[i].key);
        w->lv[i].key_len = 0;
        w->lv[i].node = NULL;
        w->lv[i].key = NULL;
    }
    w->depth = 0;
}

wamp_err wamp_wr_error(const wamp_wr *w)
{
    return w->err;
}

/* --- Bytes ----------------------------------------------------------------------------------- */

/* Grows the buffer for n more bytes and appends them (or records why not). */
static bool put_grow(wamp_wr *w, const void *p, size_t n)
{
    if (w->max && wamp_buf_len(w->buf) + n > w->max) {
        return fail(w, WAMP_ETOOBIG);
    }
    unsigned char *dst = wamp_buf_reserve(&w->buf, n);
    if (!dst) {
        return fail(w, WAMP_ENOMEM);
    }
    memcpy(dst, p, n);
    wamp_buf_commit(w->buf, n);
    return true;
}

/* Appends n bytes: in place while they fit (every message's envelope is many small writes). */
static inline bool put(wamp_wr *w, const void *p, size_t n)
{
    unsigned char *dst = wamp_buf_tail(w->buf, n);
    if (!dst || (w->max && wamp_buf_len(w->buf) + n > w->max)) {
        return put_grow(w, p, n);
    }
    memcpy(dst, p, n);
    wamp_buf_commit(w->buf, n);
    return true;
}

static bool put_byte(wamp_wr *w, unsigned char c)
{
    return put(w, &c, 1);
}

/* MessagePack goes through msgpack-c's packer, as the codec's encoder does (wamp_msgpack.c):
 * shortest integer forms, float64 reals; its output lands in put(). */
static int mp_write(void *data, const char *p, size_t n)
{
    return put(data, p, n) ? 0 : -1;
}

static bool mp_ok(int rc)
{
    return rc == 0; /* on failure put() has recorded the error */
}

/* A MessagePack head: the type byte, then v big-endian in len bytes (0, 1, 2, 4 or 8). */
static bool mp_head(wamp_wr *w, unsigned char type, uint64_t v, size_t len)
{
    unsigned char b[9] = {type};
    for (size_t i = 0; i < len; i++) {
        b[1 + i] = (unsigned char)(v >> (8 * (len - 1 - i)));
    }
    return put(w, b, 1 + len);
}

/* A non-negative integer's shortest MessagePack form at d (positive fixint, or uint 8 to 64):
 * its length, 1 to 9. */
static size_t mp_uint_bytes(uint64_t u, unsigned char d[9])
{
    if (u < 128) {
        d[0] = (unsigned char)u;
        return 1;
    }
    size_t len = u <= UINT8_MAX ? 1 : u <= UINT16_MAX ? 2 : u <= UINT32_MAX ? 4 : 8;
    d[0] = len == 1 ? 0xcc : len == 2 ? 0xcd : len == 4 ? 0xce : 0xcf;
    for (size_t i = 0; i < len; i++) {
        d[1 + i] = (unsigned char)(u >> (8 * (len - 1 - i)));
    }
    return 1 + len;
}

/* The shortest forms, byte for byte what msgpack-c's packer writes (the codec's encoder,
 * wamp_msgpack.c, uses it): written here directly, as they are on every message's envelope. */
static bool mp_i64(wamp_wr *w, int64_t v)
{
    if (v >= 0) {
        unsigned char b[9];
        return put(w, b, mp_uint_bytes((uint64_t)v, b));
    }
    uint64_t bits = (uint64_t)v;
    return v >= -32         ? put_byte(w, (unsigned char)(bits & 0xff))
           : v >= INT8_MIN  ? mp_head(w, 0xd0, bits & 0xff, 1)
           : v >= INT16_MIN ? mp_head(w, 0xd1, bits & 0xffff, 2)
           : v >= INT32_MIN ? mp_head(w, 0xd2, bits & 0xffffffff, 4)
                            : mp_head(w, 0xd3, bits, 8);
}

static bool mp_str(wamp_wr *w, const char *s, size_t n)
{
    bool ok = n < 32            ? put_byte(w, (unsigned char)(0xa0 | n))
              : n <= UINT8_MAX  ? mp_head(w, 0xd9, n, 1)
              : n <= UINT16_MAX ? mp_head(w, 0xda, n, 2)
              : n <= UINT32_MAX ? mp_head(w, 0xdb, n, 4)
                                : fail(w, WAMP_EINVAL);
    return ok && (n == 0 || put(w, s, n));
}

static bool mp_bin(wamp_wr *w, const void *p, size_t n)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, w, mp_write);
    return n <= UINT32_MAX
                   ? mp_ok(msgpack_pack_bin(&pk, n)) && mp_ok(msgpack_pack_bin_body(&pk, p, n))
                   : fail(w, WAMP_EINVAL);
}

/* u's decimal digits, written to end at b + DEC_MAX: where they start. */
#define DEC_MAX 24

static char *dec_digits(uint64_t u, char b[DEC_MAX])
{
    char *p = b + DEC_MAX;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    return p;
}

/* Decimal digits of u, with a '-' before them if negative. */
static bool json_digits(wamp_wr *w, uint64_t u, bool negative)
{
    char b[DEC_MAX];
    char *p = dec_digits(u, b);
    if (negative) {
        *--p = '-';
    }
    return put(w, p, (size_t)(b + DEC_MAX - p));
}

static bool json_i64(wamp_wr *w, int64_t v)
{
    return json_digits(w, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

static bool json_u64(wamp_wr *w, uint64_t v)
{
    return json_digits(w, v, false);
}

/* JSON reals in the shortest form that reads back as the same double, always with a '.' or an
 * exponent so that the value stays a real for the receiver (1.0, 1e+300, 5e-324, -0.0). */
static bool json_f64(wamp_wr *w, double v)
{
    if (!isfinite(v)) {
        return fail(w, WAMP_EINVAL);
    }
    char b[40];
    int n = 0;
    for (int prec = 1; prec <= 17; prec++) {
        n = snprintf(b, sizeof(b), "%.*g", prec, v);
        if (strtod(b, NULL) == v) {
            break;
        }
    }
    if (!strpbrk(b, ".eE") && n + 2 < (int)sizeof(b)) {
        memcpy(b + n, ".0", 3);
        n += 2;
    }
    return put(w, b, (size_t)n);
}

/* CBOR head (RFC 8949 3.1): major type and argument, in the shortest form. */
static bool cbor_head(wamp_wr *w, unsigned major, uint64_t v)
{
    unsigned char b[9];
    size_t n = wamp_cbor_head(b, major, v);
    return put(w, b, n);
}

static bool cbor_f64(wamp_wr *w, double v)
{
    unsigned char b[9];
    return put(w, b, wamp_cbor_f64(b, v));
}

static bool cbor_i64(wamp_wr *w, int64_t v)
{
    return v < 0 ? cbor_head(w, 1, (uint64_t)(-1 - v)) : cbor_head(w, 0, (uint64_t)v);
}

/* JSON string with the escapes RFC 8259 requires (", \ and control characters); other bytes,
 * UTF-8 included, pass through in runs. */
static bool json_str(wamp_wr *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (!put_byte(w, '"')) {
        return false;
    }
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        if (i > run && !put(w, s + run, i - run)) {
            return false;
        }
        run = i + 1;
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        size_t len = 6;
        switch (c) {
        case '"':
        case '\\':
            esc[1] = (char)c;
            len = 2;
            break;
        case '\n':
            esc[1] = 'n';
            len = 2;
            break;
        case '\r':
            esc[1] = 'r';
            len = 2;
            break;
        case '\t':
            esc[1] = 't';
            len = 2;
            break;
        default:
            break;
        }
        if (!put(w, esc, len)) {
            return false;
        }
    }
    return (n <= run || put(w, s + run, n - run)) && put_byte(w, '"');
}

/* --- Structure ------------------------------------------------------------------------------- */

/* Before a value (or a key): checks that the current level expects one and writes the JSON
 * separator. key: a map key is about to be written. */
static bool before(wamp_wr *w, bool key)
{
    if (w->err != WAMP_OK) {
        return false;
    }
    if (w->depth == 0) {
        return (w->done || key) ? fail(w, WAMP_EINVAL) : true;
    }
    wamp_wr_level *l = &w->lv[w->depth - 1];
    if (l->is_map ? (key == l->want_val) : key) {
        return fail(w, WAMP_EINVAL);
    }
    if (l->is_map && !key) {
        return true; /* the value of a pair: the key took the separator */
    }
    if (l->left == 0) {
        return fail(w, WAMP_EINVAL);
    }
    if (w->ser == WAMP_SER_JSON && !l->first && !put_byte(w, ',')) {
        return false;
    }
    l->first = false;
    return true;
}

/* Tree mode: attaches v (consumed) where the next value goes. */
static bool tree_attach(wamp_wr *w, json_t *v)
{
    if (!v) {
        return fail(w, WAMP_ENOMEM);
    }
    if (w->depth == 0) {
        w->root = v;
        return true;
    }
    wamp_wr_level *l = &w->lv[w->depth - 1];
    int rc = l->is_map ? json_object_setn_new_nocheck(l->node, l->key, l->key_len, v)
                       : json_array_append_new(l->node, v);
    return rc == 0 ? true : fail(w, WAMP_ENOMEM);
}

/* After a complete value at the current level. */
static void after(wamp_wr *w)
{
    if (w->depth == 0) {
        w->done = true;
        return;
    }
    wamp_wr_level *l = &w->lv[w->depth - 1];
    if (l->is_map) {
        free(l->key);
        l->key = NULL;
        l->key_len = 0;
        l->want_val = false;
    }
    l->left--;
}

static void open_level(wamp_wr *w, bool is_map, size_t n)
{
    if (!before(w, false)) {
        return;
    }
    if (w->depth == WAMP_WR_MAX_DEPTH) {
        fail(w, WAMP_EINVAL);
        return;
    }
    json_t *node = NULL;
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        node = is_map ? json_object() : json_array();
        ok = node != NULL || fail(w, WAMP_ENOMEM);
    } else if (w->ser == WAMP_SER_JSON) {
        ok = put_byte(w, is_map ? '{' : '[');
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = cbor_head(w, is_map ? 5 : 4, n);
    } else {
        /* fixmap/fixarray, map16/array16, map32/array32 */
        ok = n < 16            ? put_byte(w, (unsigned char)((is_map ? 0x80 : 0x90) | n))
             : n <= UINT16_MAX ? mp_head(w, is_map ? 0xde : 0xdc, n, 2)
             : n <= UINT32_MAX ? mp_head(w, is_map ? 0xdf : 0xdd, n, 4)
                               : fail(w, WAMP_EINVAL);
    }
    if (!ok) {
        return;
    }
    w->lv[w->depth++] = (wamp_wr_level){
            .left = n, .is_map = is_map, .want_val = false, .first = true, .node = node};
}

void wamp_wr_array(wamp_wr *w, size_t n)
{
    open_level(w, false, n);
}

void wamp_wr_map(wamp_wr *w, size_t n)
{
    open_level(w, true, n);
}

void wamp_wr_end(wamp_wr *w)
{
    if (w->err != WAMP_OK) {
        return;
    }
    if (w->depth == 0) {
        fail(w, WAMP_EINVAL);
        return;
    }
    wamp_wr_level *l = &w->lv[w->depth - 1];
    if (l->left != 0 || l->want_val) {
        fail(w, WAMP_EINVAL);
        return;
    }
    if (w->ser == WAMP_SER_JSON && !put_byte(w, l->is_map ? '}' : ']')) {
        return;
    }
    json_t *node = l->node;
    l->node = NULL;
    w->depth--;
    if (w->ser == WAMP_WR_TREE && !tree_attach(w, node)) {
        return;
    }
    after(w);
}

void wamp_wr_key(wamp_wr *w, const char *key)
{
    wamp_wr_keyn(w, key, strlen(key));
}

void wamp_wr_keyn(wamp_wr *w, const char *key, size_t n)
{
    if (!before(w, true)) {
        return;
    }
    wamp_wr_level *l = &w->lv[w->depth - 1];
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        l->key = malloc(n + 1);
        ok = l->key != NULL || fail(w, WAMP_ENOMEM);
        if (ok) {
            memcpy(l->key, key, n);
            l->key[n] = '\0';
            l->key_len = n;
        }
    } else if (w->ser == WAMP_SER_JSON) {
        ok = json_str(w, key, n) && put_byte(w, ':');
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = cbor_head(w, 3, n) && put(w, key, n);
    } else {
        ok = mp_str(w, key, n);
    }
    if (ok) {
        l->want_val = true;
    }
}

/* --- Scalars --------------------------------------------------------------------------------- */

void wamp_wr_str(wamp_wr *w, const char *s)
{
    wamp_wr_strn(w, s, strlen(s));
}

void wamp_wr_strn(wamp_wr *w, const char *s, size_t n)
{
    if (!before(w, false)) {
        return;
    }
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        ok = tree_attach(w, json_stringn_nocheck(s, n));
    } else if (w->ser == WAMP_SER_JSON) {
        ok = json_str(w, s, n);
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = cbor_head(w, 3, n) && put(w, s, n);
    } else {
        ok = mp_str(w, s, n);
    }
    if (ok) {
        after(w);
    }
}

static bool json_bin(wamp_wr *w, const unsigned char *bin, size_t len);

void wamp_wr_bin(wamp_wr *w, const void *p, size_t n)
{
    if (!before(w, false)) {
        return;
    }
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        ok = tree_attach(w, wamp_b64_string_new(p, n));
    } else if (w->ser == WAMP_SER_JSON) {
        ok = json_bin(w, p, n);
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = cbor_head(w, 2, n) && put(w, p, n);
    } else {
        ok = mp_bin(w, p, n);
    }
    if (ok) {
        after(w);
    }
}

void wamp_wr_str_or_null(wamp_wr *w, const char *s)
{
    if (s) {
        wamp_wr_str(w, s);
    } else {
        wamp_wr_null(w);
    }
}

void wamp_wr_int(wamp_wr *w, int64_t v)
{
    if (!before(w, false)) {
        return;
    }
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        ok = tree_attach(w, json_integer((json_int_t)v));
    } else if (w->ser == WAMP_SER_JSON) {
        ok = json_i64(w, v);
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = cbor_i64(w, v);
    } else {
        ok = mp_i64(w, v);
    }
    if (ok) {
        after(w);
    }
}

void wamp_wr_uint(wamp_wr *w, uint64_t v)
{
    if (v <= INT64_MAX) {
        wamp_wr_int(w, (int64_t)v);
        return;
    }
    if (!before(w, false)) {
        return;
    }
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        ok = fail(w, WAMP_ERANGE); /* jansson integers are int64 */
    } else if (w->ser == WAMP_SER_JSON) {
        ok = json_u64(w, v);
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = cbor_head(w, 0, v);
    } else {
        msgpack_packer pk;
        msgpack_packer_init(&pk, w, mp_write);
        ok = mp_ok(msgpack_pack_uint64(&pk, v));
    }
    if (ok) {
        after(w);
    }
}

void wamp_wr_real(wamp_wr *w, double v)
{
    if (!before(w, false)) {
        return;
    }
    if (!isfinite(v)) {
        fail(w, WAMP_EINVAL);
        return;
    }
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        ok = tree_attach(w, json_real(v));
    } else if (w->ser == WAMP_SER_JSON) {
        ok = json_f64(w, v);
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = cbor_f64(w, v);
    } else {
        msgpack_packer pk;
        msgpack_packer_init(&pk, w, mp_write);
        ok = mp_ok(msgpack_pack_double(&pk, v));
    }
    if (ok) {
        after(w);
    }
}

void wamp_wr_bool(wamp_wr *w, bool v)
{
    if (!before(w, false)) {
        return;
    }
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        ok = tree_attach(w, json_boolean(v));
    } else if (w->ser == WAMP_SER_JSON) {
        ok = v ? put(w, "true", 4) : put(w, "false", 5);
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = put_byte(w, v ? 0xf5 : 0xf4);
    } else {
        ok = put_byte(w, v ? 0xc3 : 0xc2); /* MessagePack true / false */
    }
    if (ok) {
        after(w);
    }
}

void wamp_wr_null(wamp_wr *w)
{
    if (!before(w, false)) {
        return;
    }
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        ok = tree_attach(w, json_null());
    } else if (w->ser == WAMP_SER_JSON) {
        ok = put(w, "null", 4);
    } else if (w->ser == WAMP_SER_CBOR) {
        ok = put_byte(w, 0xf6);
    } else {
        ok = put_byte(w, 0xc0);
    }
    if (ok) {
        after(w);
    }
}

/* The values every envelope is made of (ids, codes, URIs, an empty dict), written without the
 * codec's encoder; the same bytes it writes. false for anything else. JSON strings stay with
 * the encoder (its escapes and UTF-8 check), and so does CBOR. */
static bool json_fast(wamp_wr *w, const json_t *v)
{
    if (w->ser != WAMP_SER_JSON && w->ser != WAMP_SER_MSGPACK) {
        return false;
    }
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        wamp_wr_int(w, json_integer_value(v));
        return true;
    case JSON_STRING: {
        const char *str = json_string_value(v);
        size_t n = json_string_length(v);
        if (w->ser != WAMP_SER_MSGPACK || (n > 0 && str[0] == '\0')) {
            return false; /* "\0"...: maybe a binary value (WAMP's JSON convention) */
        }
        wamp_wr_strn(w, str, n);
        return true;
    }
    case JSON_OBJECT:
    case JSON_ARRAY:
        if (json_is_object(v) ? json_object_size(v) > 0 : json_array_size(v) > 0) {
            return false;
        }
        open_level(w, json_is_object(v), 0);
        wamp_wr_end(w);
        return true;
    case JSON_TRUE:
    case JSON_FALSE:
        wamp_wr_bool(w, json_is_true(v));
        return true;
    case JSON_NULL:
        wamp_wr_null(w);
        return true;
    default:
        return false;
    }
}

void wamp_wr_json(wamp_wr *w, const json_t *v)
{
    if (v && w->err == WAMP_OK && json_fast(w, v)) {
        return;
    }
    if (!before(w, false)) {
        return;
    }
    if (!v) {
        fail(w, WAMP_EINVAL);
        return;
    }
    if (w->ser == WAMP_WR_TREE) {
        if (tree_attach(w, json_incref((json_t *)(uintptr_t)v))) {
            after(w);
        }
        return;
    }
    wamp_err err = w->ser == WAMP_SER_JSON   ? wamp_json_encode_append(v, &w->buf)
                   : w->ser == WAMP_SER_CBOR ? wamp_cbor_encode_append(v, &w->buf)
                                             : wamp_msgpack_encode_append(v, &w->buf);
    if (err != WAMP_OK) {
        fail(w, err);
        return;
    }
    if (w->max && wamp_buf_len(w->buf) > w->max) {
        fail(w, WAMP_ETOOBIG);
        return;
    }
    after(w);
}

void wamp_wr_raw(wamp_wr *w, const void *p, size_t n)
{
    if (!before(w, false)) {
        return;
    }
    if (w->ser == WAMP_WR_TREE || n == 0) {
        fail(w, WAMP_EINVAL);
        return;
    }
    if (put(w, p, n)) {
        after(w);
    }
}

/* --- Transcoding ------------------------------------------------------------------------- */

static bool json_bin(wamp_wr *w, const unsigned char *bin, size_t len)
{
    size_t enc = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    if (!put(w, "\"\\u0000", 7)) {
        return false;
    }
    if (w->max && wamp_buf_len(w->buf) + enc - 1 > w->max) {
        return fail(w, WAMP_ETOOBIG);
    }
    unsigned char *dst = wamp_buf_reserve(&w->buf, enc);
    if (!dst) {
        return fail(w, WAMP_ENOMEM);
    }
    sodium_bin2base64((char *)dst, enc, bin, len, sodium_base64_VARIANT_ORIGINAL);
    /* enc counts the terminating NUL, which is not part of the output. */
    wamp_buf_commit(w->buf, enc - 1);
    return put_byte(w, '"');
}

/* Writes one token of a value being transcoded, below the writer's own levels: the reader has
 * checked the structure, so only the JSON separators need the token's position. */
static bool emit_json(wamp_wr *w, const wamp_tok *t)
{
    if (t->kind == WAMP_TOK_END) {
        return put_byte(w, t->is_map ? '}' : ']');
    }
    if (t->depth > 0 && !t->first && (t->is_key || !t->in_map) && !put_byte(w, ',')) {
        return false;
    }
    switch (t->kind) {
    case WAMP_TOK_NULL:
        return put(w, "null", 4);
    case WAMP_TOK_BOOL:
        return t->b ? put(w, "true", 4) : put(w, "false", 5);
    case WAMP_TOK_INT:
        return json_i64(w, t->i);
    case WAMP_TOK_UINT:
        return json_u64(w, t->u);
    case WAMP_TOK_REAL:
        return json_f64(w, t->d);
    case WAMP_TOK_STR:
        return json_str(w, (const char *)t->p, t->len) && (!t->is_key || put_byte(w, ':'));
    case WAMP_TOK_BIN:
        return json_bin(w, t->p, t->len);
    case WAMP_TOK_ARRAY:
        return put_byte(w, '[');
    case WAMP_TOK_MAP:
        return put_byte(w, '{');
    case WAMP_TOK_END:
        break;
    }
    return fail(w, WAMP_EINVAL);
}

static bool emit_bin(wamp_wr *w, const wamp_tok *t)
{
    bool cbor = w->ser == WAMP_SER_CBOR;
    msgpack_packer pk;
    msgpack_packer_init(&pk, w, mp_write);
    switch (t->kind) {
    case WAMP_TOK_END:
        return true;
    case WAMP_TOK_NULL:
        return put_byte(w, cbor ? 0xf6 : 0xc0);
    case WAMP_TOK_BOOL:
        return put_byte(w, cbor ? (t->b ? 0xf5 : 0xf4) : (t->b ? 0xc3 : 0xc2));
    case WAMP_TOK_INT:
        return cbor ? cbor_i64(w, t->i) : mp_ok(msgpack_pack_int64(&pk, t->i));
    case WAMP_TOK_UINT:
        return cbor ? cbor_head(w, 0, t->u) : mp_ok(msgpack_pack_uint64(&pk, t->u));
    case WAMP_TOK_REAL:
        return cbor ? cbor_f64(w, t->d) : mp_ok(msgpack_pack_double(&pk, t->d));
    case WAMP_TOK_STR:
        return cbor ? cbor_head(w, 3, t->len) && put(w, t->p, t->len)
                    : mp_str(w, (const char *)t->p, t->len);
    case WAMP_TOK_BIN:
        return cbor ? cbor_head(w, 2, t->len) && put(w, t->p, t->len) : mp_bin(w, t->p, t->len);
    case WAMP_TOK_ARRAY:
    case WAMP_TOK_MAP:
        if (cbor) {
            return cbor_head(w, t->kind == WAMP_TOK_MAP ? 5 : 4, t->count);
        }
        if (t->count > UINT32_MAX) {
            return fail(w, WAMP_EINVAL);
        }
        return mp_ok(t->kind == WAMP_TOK_MAP ? msgpack_pack_map(&pk, t->count)
                                             : msgpack_pack_array(&pk, t->count));
    }
    return fail(w, WAMP_EINVAL);
}

void wamp_wr_transcode(wamp_wr *w, int src_ser, const void *p, size_t n)
{
    if (src_ser == w->ser) {
        wamp_wr_raw(w, p, n);
        return;
    }
    if (w->ser == WAMP_WR_TREE) {
        if (!before(w, false)) {
            return;
        }
        json_t *v = NULL;
        wamp_err err = wamp_codec_decode_value((wamp_ser)src_ser, p, n, &v, NULL, 0);
        if (err != WAMP_OK) {
            fail(w, err);
        } else if (tree_attach(w, v)) {
            after(w);
        }
        return;
    }
    if (!before(w, false)) {
        return;
    }
    wamp_rd r;
    wamp_tok t;
    wamp_rd_init(&r, (wamp_ser)src_ser, p, n);
    while (!wamp_rd_done(&r)) {
        wamp_err err = wamp_rd_next(&r, &t);
        if (err != WAMP_OK) {
            fail(w, err == WAMP_ENOMEM ? err : err == WAMP_EINVAL ? WAMP_EINVAL : WAMP_EPROTO);
            break;
        }
        if (!(w->ser == WAMP_SER_JSON ? emit_json(w, &t) : emit_bin(w, &t))) {
            break;
        }
    }
    wamp_rd_fini(&r);
    if (w->err == WAMP_OK) {
        after(w);
    }
}

/* --- Whole messages --------------------------------------------------------------------------- */

/* A non-negative integer as mp_i64() and json_digits() write it, at d; returns its length. */
static size_t ids_int(int ser, uint64_t v, unsigned char *d)
{
    if (ser == WAMP_SER_JSON) {
        char b[DEC_MAX];
        const char *p = dec_digits(v, b);
        size_t n = (size_t)(b + DEC_MAX - p);
        memcpy(d, p, n);
        return n;
    }
    return mp_uint_bytes(v, d);
}

wamp_err wamp_wr_ids_message(int ser, int code, uint64_t id, uint64_t id2, const void *args,
                             size_t args_len, const void *kwargs, size_t kwargs_len, wamp_buf **out)
{
    *out = NULL;
    if ((ser != WAMP_SER_JSON && ser != WAMP_SER_MSGPACK) || code < 0) {
        return WAMP_EINVAL;
    }
    bool json = ser == WAMP_SER_JSON;
    bool has_args = args_len > 0 || kwargs_len > 0;
    /* The head: at most "[" + 3 integers of 20 digits with their commas + ",{}" + ",[]". */
    unsigned char head[80];
    size_t n = 0;
    uint64_t ints[3] = {(uint64_t)code, id, id2};
    size_t n_ints = id2 ? 3 : 2;
    size_t count = n_ints + 1 + has_args + (kwargs_len > 0);
    head[n++] = json ? '[' : (unsigned char)(0x90 | count); /* at most 6: a fixarray */
    for (size_t i = 0; i < n_ints; i++) {
        n += ids_int(ser, ints[i], head + n);
        if (json) {
            head[n++] = ',';
        }
    }
    if (json) {
        memcpy(head + n, "{}", 2);
        n += 2;
    } else {
        head[n++] = 0x80;
    }
    if (has_args && args_len == 0) {
        if (json) {
            memcpy(head + n, ",[]", 3);
            n += 3;
        } else {
            head[n++] = 0x90;
        }
    }
    wamp_buf *b = wamp_buf_new(n + args_len + kwargs_len + 3);
    unsigned char *d = b ? wamp_buf_tail(b, n + args_len + kwargs_len + 3) : NULL;
    if (!d) {
        wamp_buf_unref(&b);
        return WAMP_ENOMEM;
    }
    unsigned char *p = d;
    memcpy(p, head, n);
    p += n;
    const void *parts[2] = {args, kwargs};
    size_t lens[2] = {args_len, kwargs_len};
    for (size_t i = 0; i < 2; i++) {
        if (lens[i] > 0) {
            if (json) {
                *p++ = ',';
            }
            memcpy(p, parts[i], lens[i]);
            p += lens[i];
        }
    }
    if (json) {
        *p++ = ']';
    }
    wamp_buf_commit(b, (size_t)(p - d));
    *out = b;
    return WAMP_OK;
}

/* --- Finish ---------------------------------------------------------------------------------- */

wamp_err wamp_wr_finish_buf(wamp_wr *w, wamp_buf **out)
{
    *out = NULL;
    if (w->err == WAMP_OK && (w->ser == WAMP_WR_TREE || !w->done)) {
        w->err = WAMP_EINVAL;
    }
    if (w->err != WAMP_OK) {
        return w->err;
    }
    *out = w->buf;
    w->buf = NULL;
    return WAMP_OK;
}

wamp_err wamp_wr_finish_tree(wamp_wr *w, json_t **out)
{
    *out = NULL;
    if (w->err == WAMP_OK && (w->ser != WAMP_WR_TREE || !w->done)) {
        w->err = WAMP_EINVAL;
    }
    if (w->err != WAMP_OK) {
        return w->err;
    }
    *out = w->root;
    w->root = NULL;
    return WAMP_OK;
}
