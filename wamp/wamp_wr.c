/* wamp_wr.c: streaming writer (JSON, MessagePack, jansson tree). */
#include "wamp_wr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>
#include <sodium.h>

#include "wamp_codec.h"
#include "wamp_json.h"
#include "wamp_msgpack.h"

static bool fail(wamp_wr *w, wamp_err err)
{
    if (w->err == WAMP_OK) {
        w->err = err;
    }
    return false;
}

void wamp_wr_init(wamp_wr *w, int ser, size_t cap, size_t max)
{
    memset(w, 0, sizeof(*w));
    w->ser = ser;
    w->max = max;
    if (ser != WAMP_SER_JSON && ser != WAMP_SER_MSGPACK && ser != WAMP_WR_TREE) {
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

static bool put(wamp_wr *w, const void *p, size_t n)
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

static bool mp_str(wamp_wr *w, const char *s, size_t n)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, w, mp_write);
    return mp_ok(msgpack_pack_str(&pk, n)) && mp_ok(msgpack_pack_str_body(&pk, s, n));
}

/* JSON numbers as jansson writes them with JSON_REAL_PRECISION(17): a real always reads back as
 * a real (".0" added to an integral value). */
static bool json_i64(wamp_wr *w, int64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof(b), "%lld", (long long)v);
    return put(w, b, (size_t)n);
}

static bool json_f64(wamp_wr *w, double v)
{
    if (!isfinite(v)) {
        return fail(w, WAMP_EINVAL);
    }
    char b[40];
    int n = snprintf(b, sizeof(b), "%.17g", v);
    if (!strpbrk(b, ".eE") && n + 2 < (int)sizeof(b)) {
        memcpy(b + n, ".0", 3);
        n += 2;
    }
    return put(w, b, (size_t)n);
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
    int rc = l->is_map ? json_object_set_new_nocheck(l->node, l->key, v)
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
    } else {
        msgpack_packer pk;
        msgpack_packer_init(&pk, w, mp_write);
        ok = n <= UINT32_MAX ? mp_ok(is_map ? msgpack_pack_map(&pk, n) : msgpack_pack_array(&pk, n))
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
    if (!before(w, true)) {
        return;
    }
    wamp_wr_level *l = &w->lv[w->depth - 1];
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        l->key = strdup(key);
        ok = l->key != NULL || fail(w, WAMP_ENOMEM);
    } else if (w->ser == WAMP_SER_JSON) {
        ok = json_str(w, key, strlen(key)) && put_byte(w, ':');
    } else {
        ok = mp_str(w, key, strlen(key));
    }
    if (ok) {
        l->want_val = true;
    }
}

/* --- Scalars --------------------------------------------------------------------------------- */

void wamp_wr_str(wamp_wr *w, const char *s)
{
    if (!before(w, false)) {
        return;
    }
    size_t n = strlen(s);
    bool ok;
    if (w->ser == WAMP_WR_TREE) {
        ok = tree_attach(w, json_stringn_nocheck(s, n));
    } else if (w->ser == WAMP_SER_JSON) {
        ok = json_str(w, s, n);
    } else {
        ok = mp_str(w, s, n);
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
    } else {
        msgpack_packer pk;
        msgpack_packer_init(&pk, w, mp_write);
        ok = mp_ok(msgpack_pack_int64(&pk, v));
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
    } else {
        ok = put_byte(w, 0xc0);
    }
    if (ok) {
        after(w);
    }
}

void wamp_wr_json(wamp_wr *w, const json_t *v)
{
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
    wamp_err err = w->ser == WAMP_SER_JSON ? wamp_json_encode_append(v, &w->buf)
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

/* MessagePack reader over [p, end) for the walk below. */
struct mp_in {
    const unsigned char *p, *end;
};

static bool mp_need(struct mp_in *in, size_t n)
{
    return (size_t)(in->end - in->p) >= n;
}

static uint64_t mp_be(struct mp_in *in, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        v = v << 8 | in->p[i];
    }
    in->p += n;
    return v;
}

/* Reads an n-byte big-endian length or count after the tag; false if truncated. */
static bool mp_len(struct mp_in *in, unsigned n, uint64_t *out)
{
    if (!mp_need(in, n)) {
        return false;
    }
    *out = mp_be(in, n);
    return true;
}

static bool json_bin(wamp_wr *w, const unsigned char *bin, size_t len)
{
    size_t enc = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    if (!put(w, "\"\\u0000", 7)) {
        return false;
    }
    unsigned char *dst = wamp_buf_reserve(&w->buf, enc);
    if (!dst) {
        return fail(w, WAMP_ENOMEM);
    }
    sodium_bin2base64((char *)dst, enc, bin, len, sodium_base64_VARIANT_ORIGINAL);
    /* enc counts the terminating NUL, which is not part of the output. */
    if (w->max && wamp_buf_len(w->buf) + enc - 1 > w->max) {
        return fail(w, WAMP_ETOOBIG);
    }
    wamp_buf_commit(w->buf, enc - 1);
    return put_byte(w, '"');
}

/* One MessagePack value from in, as JSON. depth as the codec counts it (root = 1). */
static bool mp_to_json(wamp_wr *w, struct mp_in *in, unsigned depth)
{
    if (depth > WAMP_CODEC_MAX_DEPTH || !mp_need(in, 1)) {
        return fail(w, WAMP_EPROTO);
    }
    unsigned char tag = *in->p++;
    uint64_t n = 0;
    bool is_map = false;
    if (tag <= 0x7f) {
        return json_i64(w, tag);
    }
    if (tag >= 0xe0) {
        return json_i64(w, (int8_t)tag);
    }
    if ((tag & 0xe0) == 0xa0) {
        n = tag & 0x1f;
        goto str;
    }
    if ((tag & 0xf0) == 0x90) {
        n = tag & 0x0f;
        goto container;
    }
    if ((tag & 0xf0) == 0x80) {
        n = tag & 0x0f;
        is_map = true;
        goto container;
    }
    switch (tag) {
    case 0xc0:
        return put(w, "null", 4);
    case 0xc2:
        return put(w, "false", 5);
    case 0xc3:
        return put(w, "true", 4);
    case 0xc4:
    case 0xc5:
    case 0xc6:
        if (!mp_len(in, 1u << (tag - 0xc4), &n) || !mp_need(in, n)) {
            return fail(w, WAMP_EPROTO);
        }
        in->p += n;
        return json_bin(w, in->p - n, (size_t)n);
    case 0xca: {
        if (!mp_need(in, 4)) {
            return fail(w, WAMP_EPROTO);
        }
        uint32_t bits = (uint32_t)mp_be(in, 4);
        float f;
        memcpy(&f, &bits, sizeof(f));
        return isfinite(f) ? json_f64(w, (double)f) : fail(w, WAMP_EPROTO);
    }
    case 0xcb: {
        if (!mp_need(in, 8)) {
            return fail(w, WAMP_EPROTO);
        }
        uint64_t bits = mp_be(in, 8);
        double d;
        memcpy(&d, &bits, sizeof(d));
        return isfinite(d) ? json_f64(w, d) : fail(w, WAMP_EPROTO);
    }
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf: {
        if (!mp_len(in, 1u << (tag - 0xcc), &n) || n > INT64_MAX) {
            return fail(w, WAMP_EPROTO);
        }
        return json_i64(w, (int64_t)n);
    }
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3: {
        unsigned bytes = 1u << (tag - 0xd0);
        if (!mp_len(in, bytes, &n)) {
            return fail(w, WAMP_EPROTO);
        }
        /* Sign-extend from the field's width. */
        unsigned shift = 64 - 8 * bytes;
        return json_i64(w, (int64_t)(n << shift) >> shift);
    }
    case 0xd9:
    case 0xda:
    case 0xdb:
        if (!mp_len(in, 1u << (tag - 0xd9), &n)) {
            return fail(w, WAMP_EPROTO);
        }
        goto str;
    case 0xdc:
    case 0xdd:
        if (!mp_len(in, tag == 0xdc ? 2 : 4, &n)) {
            return fail(w, WAMP_EPROTO);
        }
        goto container;
    case 0xde:
    case 0xdf:
        if (!mp_len(in, tag == 0xde ? 2 : 4, &n)) {
            return fail(w, WAMP_EPROTO);
        }
        is_map = true;
        goto container;
    default:
        return fail(w, WAMP_EPROTO); /* 0xc1, ext, fixext */
    }
str:
    if (!mp_need(in, n)) {
        return fail(w, WAMP_EPROTO);
    }
    in->p += n;
    return json_str(w, (const char *)in->p - n, (size_t)n);
container:
    /* Every element takes at least one byte: a count beyond the input is malformed. */
    if (n > (uint64_t)(in->end - in->p) || !put_byte(w, is_map ? '{' : '[')) {
        return fail(w, WAMP_EPROTO);
    }
    for (uint64_t i = 0; i < n; i++) {
        if (i && !put_byte(w, ',')) {
            return false;
        }
        if (is_map) {
            if (!mp_need(in, 1)) {
                return fail(w, WAMP_EPROTO);
            }
            unsigned char k = *in->p;
            bool is_str = (k & 0xe0) == 0xa0 || k == 0xd9 || k == 0xda || k == 0xdb;
            if (!is_str || !mp_to_json(w, in, depth + 1) || !put_byte(w, ':')) {
                return fail(w, WAMP_EPROTO);
            }
        }
        if (!mp_to_json(w, in, depth + 1)) {
            return false;
        }
    }
    return put_byte(w, is_map ? '}' : ']');
}

void wamp_wr_transcode(wamp_wr *w, int src_ser, const void *p, size_t n)
{
    if (src_ser == w->ser) {
        wamp_wr_raw(w, p, n);
        return;
    }
    if (src_ser == WAMP_SER_MSGPACK && w->ser == WAMP_SER_JSON) {
        if (!before(w, false)) {
            return;
        }
        struct mp_in in = {p, (const unsigned char *)p + n};
        if (mp_to_json(w, &in, 1) && in.p == in.end) {
            after(w);
        } else {
            fail(w, WAMP_EPROTO);
        }
        return;
    }
    json_t *v = NULL;
    if (src_ser != WAMP_SER_JSON && src_ser != WAMP_SER_MSGPACK) {
        fail(w, WAMP_EINVAL);
        return;
    }
    if (wamp_codec_decode((wamp_ser)src_ser, p, n, &v, NULL, 0) != WAMP_OK) {
        fail(w, WAMP_EPROTO);
        return;
    }
    wamp_wr_json(w, v);
    json_decref(v);
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
