/* wamp_msgpack.c: MessagePack <-> jansson values.
 * Decoder: recursive descent straight from the input bytes, following the MessagePack format
 * specification byte by byte. Every length prefix is compared with the bytes that remain before
 * anything is allocated, so a hostile 0xFFFFFFFF count costs nothing. Nesting depth is bounded by
 * WAMP_CODEC_MAX_DEPTH, which also bounds the recursion (a few hundred KiB of stack at most).
 * Encoder: msgpack-c's msgpack_packer, whose write callback copies into a wamp_buf; msgpack-c does
 * no buffering of its own, so bin payloads can be base64-decoded straight into the buffer. */
#include "wamp_msgpack.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>
#include <sodium.h>

#include "wamp_codec.h"
#include "wamp_rd.h"

_Static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE 754 binary32/binary64 expected");
_Static_assert(sizeof(json_int_t) == 8, "jansson must use 64-bit integers");

/* ---- decoding ---- */

struct mp_dec {
    const unsigned char *start;
    const unsigned char *p;
    const unsigned char *end;
    wamp_err err;
    char *why;
    size_t why_len;
};

__attribute__((format(printf, 2, 3))) static json_t *mp_fail(struct mp_dec *d, const char *fmt, ...)
{
    d->err = WAMP_EPROTO;
    if (d->why && d->why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->why, d->why_len, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static json_t *mp_oom(struct mp_dec *d)
{
    d->err = WAMP_ENOMEM;
    return NULL;
}

static size_t mp_left(const struct mp_dec *d)
{
    return (size_t)(d->end - d->p);
}

static size_t mp_off(const struct mp_dec *d, const unsigned char *at)
{
    return (size_t)(at - d->start);
}

static json_t *mp_truncated(struct mp_dec *d, const unsigned char *tag)
{
    return mp_fail(d, "MessagePack: truncated value at byte %zu", mp_off(d, tag));
}

/* Consumes n bytes; false (nothing consumed) if fewer remain. */
static bool mp_take(struct mp_dec *d, size_t n, const unsigned char **at)
{
    if (mp_left(d) < n) {
        return false;
    }
    *at = d->p;
    d->p += n;
    return true;
}

/* Big-endian unsigned integer of n (1, 2, 4 or 8) bytes. */
static uint64_t be_read(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

/* Reads an n-byte big-endian length or count that follows a tag. */
static bool mp_len(struct mp_dec *d, size_t n, uint64_t *out)
{
    const unsigned char *b;
    if (!mp_take(d, n, &b)) {
        return false;
    }
    *out = be_read(b, n);
    return true;
}

static json_t *mp_int(struct mp_dec *d, json_int_t v)
{
    json_t *j = json_integer(v);
    return j ? j : mp_oom(d);
}

/* int8..int64: sign-extends the n-byte two's complement value without implementation-defined
 * conversions. */
static json_t *mp_signed(struct mp_dec *d, const unsigned char *tag, size_t n)
{
    uint64_t v;
    if (!mp_len(d, n, &v)) {
        return mp_truncated(d, tag);
    }
    unsigned bits = (unsigned)(8 * n);
    if (bits < 64 && ((v >> (bits - 1)) & 1)) {
        v |= ~(uint64_t)0 << bits;
    }
    json_int_t s = v <= INT64_MAX ? (json_int_t)v : -(json_int_t)(~v) - 1;
    return mp_int(d, s);
}

static json_t *mp_unsigned(struct mp_dec *d, const unsigned char *tag, size_t n)
{
    uint64_t v;
    if (!mp_len(d, n, &v)) {
        return mp_truncated(d, tag);
    }
    /* jansson integers are int64; the JSON decoder refuses larger numbers as well. */
    if (v > INT64_MAX) {
        return mp_fail(d, "MessagePack: integer at byte %zu does not fit in int64", mp_off(d, tag));
    }
    return mp_int(d, (json_int_t)v);
}

static json_t *mp_real(struct mp_dec *d, const unsigned char *tag, double v)
{
    /* JSON has no NaN or Infinity, and jansson cannot hold them. */
    if (!isfinite(v)) {
        return mp_fail(d, "MessagePack: NaN or infinite float at byte %zu", mp_off(d, tag));
    }
    json_t *j = json_real(v);
    return j ? j : mp_oom(d);
}

static json_t *mp_float(struct mp_dec *d, const unsigned char *tag, size_t n)
{
    uint64_t bits;
    if (!mp_len(d, n, &bits)) {
        return mp_truncated(d, tag);
    }
    if (n == 4) {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof(f));
        return mp_real(d, tag, (double)f);
    }
    double v;
    memcpy(&v, &bits, sizeof(v));
    return mp_real(d, tag, v);
}

static json_t *mp_str(struct mp_dec *d, const unsigned char *tag, uint64_t len)
{
    if (len > mp_left(d)) {
        return mp_truncated(d, tag);
    }
    const unsigned char *s = d->p;
    if (!wamp_utf8_valid(s, (size_t)len)) {
        return mp_fail(d, "MessagePack: invalid UTF-8 in string at byte %zu", mp_off(d, tag));
    }
    d->p += len;
    /* Validated above: the _nocheck variant skips jansson's second UTF-8 pass. */
    json_t *j = json_stringn_nocheck((const char *)s, (size_t)len);
    return j ? j : mp_oom(d);
}

/* Spec "Binary support": bin becomes the string "\0" + base64 (standard alphabet, padded). */
static json_t *mp_bin(struct mp_dec *d, const unsigned char *tag, uint64_t len)
{
    if (len > mp_left(d)) {
        return mp_truncated(d, tag);
    }
    const unsigned char *bin = d->p;
    d->p += len;
    json_t *j = wamp_b64_string_new(bin, (size_t)len);
    return j ? j : mp_oom(d);
}

static json_t *mp_value(struct mp_dec *d, unsigned depth);

static json_t *mp_array(struct mp_dec *d, const unsigned char *tag, uint64_t n, unsigned depth)
{
    /* Each element takes at least one byte, so a count above the remaining input is refused
     * before anything is allocated. */
    if (n > mp_left(d)) {
        return mp_truncated(d, tag);
    }
    json_t *a = json_array();
    if (!a) {
        return mp_oom(d);
    }
    for (uint64_t i = 0; i < n; i++) {
        json_t *v = mp_value(d, depth + 1);
        if (!v) {
            goto fail;
        }
        /* json_array_append_new() releases v when it fails. */
        if (json_array_append_new(a, v) != 0) {
            mp_oom(d);
            goto fail;
        }
    }
    return a;

fail:
    json_decref(a);
    return NULL;
}

/* Reads a map key: a str (any width) holding valid UTF-8 without NUL bytes. */
static bool mp_key(struct mp_dec *d, const char **key, size_t *key_len)
{
    const unsigned char *tag = d->p;
    uint64_t len;
    if (d->p == d->end) {
        mp_truncated(d, tag);
        return false;
    }
    unsigned c = *d->p++;
    if (c >= 0xa0 && c <= 0xbf) {
        len = c & 0x1f;
    } else if (c >= 0xd9 && c <= 0xdb) {
        if (!mp_len(d, (size_t)1 << (c - 0xd9), &len)) {
            mp_truncated(d, tag);
            return false;
        }
    } else {
        mp_fail(d, "MessagePack: map key at byte %zu is not a string", mp_off(d, tag));
        return false;
    }
    if (len > mp_left(d)) {
        mp_truncated(d, tag);
        return false;
    }
    if (!wamp_utf8_valid(d->p, (size_t)len)) {
        mp_fail(d, "MessagePack: invalid UTF-8 in map key at byte %zu", mp_off(d, tag));
        return false;
    }
    if (memchr(d->p, '\0', (size_t)len)) {
        mp_fail(d, "MessagePack: NUL byte in map key at byte %zu", mp_off(d, tag));
        return false;
    }
    *key = (const char *)d->p;
    *key_len = (size_t)len;
    d->p += len;
    return true;
}

static json_t *mp_map(struct mp_dec *d, const unsigned char *tag, uint64_t n, unsigned depth)
{
    /* Each entry takes at least two bytes (key and value). */
    if (n > mp_left(d) / 2) {
        return mp_truncated(d, tag);
    }
    json_t *o = json_object();
    if (!o) {
        return mp_oom(d);
    }
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *ktag = d->p;
        const char *key;
        size_t key_len;
        if (!mp_key(d, &key, &key_len)) {
            goto fail;
        }
        json_t *v = mp_value(d, depth + 1);
        if (!v) {
            goto fail;
        }
        /* One hash lookup: a duplicate replaces the earlier value and leaves the size as it
         * was. The object is discarded anyway, as jansson's JSON_REJECT_DUPLICATES does. */
        size_t before = json_object_size(o);
        if (json_object_setn_new_nocheck(o, key, key_len, v) != 0) {
            mp_oom(d);
            goto fail;
        }
        if (json_object_size(o) == before) {
            mp_fail(d, "MessagePack: duplicate map key at byte %zu", mp_off(d, ktag));
            goto fail;
        }
    }
    return o;

fail:
    json_decref(o);
    return NULL;
}

/* Long: one case per MessagePack type tag, as the format lists them; the switch is the decoder. */
static json_t *mp_value(struct mp_dec *d, unsigned depth)
{
    const unsigned char *tag = d->p;
    uint64_t n;
    /* Same rule as jansson's parser: every value, scalars included, has a depth, and the root
     * value is at depth 1. */
    if (depth > WAMP_CODEC_MAX_DEPTH) {
        return mp_fail(d, "MessagePack: nesting deeper than %d at byte %zu", WAMP_CODEC_MAX_DEPTH,
                       mp_off(d, tag));
    }
    if (d->p == d->end) {
        return mp_truncated(d, tag);
    }
    unsigned c = *d->p++;
    if (c <= 0x7f) {
        return mp_int(d, (json_int_t)c); /* positive fixint */
    }
    if (c >= 0xe0) {
        return mp_int(d, (json_int_t)c - 256); /* negative fixint */
    }
    if (c <= 0x8f) {
        return mp_map(d, tag, c & 0x0f, depth); /* fixmap */
    }
    if (c <= 0x9f) {
        return mp_array(d, tag, c & 0x0f, depth); /* fixarray */
    }
    if (c <= 0xbf) {
        return mp_str(d, tag, c & 0x1f); /* fixstr */
    }
    switch (c) {
    case 0xc0:
        return json_null();
    case 0xc2:
        return json_false();
    case 0xc3:
        return json_true();
    case 0xc4: /* bin8, bin16, bin32 */
    case 0xc5:
    case 0xc6:
        if (!mp_len(d, (size_t)1 << (c - 0xc4), &n)) {
            return mp_truncated(d, tag);
        }
        return mp_bin(d, tag, n);
    case 0xca:
        return mp_float(d, tag, 4);
    case 0xcb:
        return mp_float(d, tag, 8);
    case 0xcc: /* uint8 .. uint64 */
    case 0xcd:
    case 0xce:
    case 0xcf:
        return mp_unsigned(d, tag, (size_t)1 << (c - 0xcc));
    case 0xd0: /* int8 .. int64 */
    case 0xd1:
    case 0xd2:
    case 0xd3:
        return mp_signed(d, tag, (size_t)1 << (c - 0xd0));
    case 0xd9: /* str8, str16, str32 */
    case 0xda:
    case 0xdb:
        if (!mp_len(d, (size_t)1 << (c - 0xd9), &n)) {
            return mp_truncated(d, tag);
        }
        return mp_str(d, tag, n);
    case 0xdc: /* array16, array32 */
    case 0xdd:
        if (!mp_len(d, (size_t)2 << (c - 0xdc), &n)) {
            return mp_truncated(d, tag);
        }
        return mp_array(d, tag, n, depth);
    case 0xde: /* map16, map32 */
    case 0xdf:
        if (!mp_len(d, (size_t)2 << (c - 0xde), &n)) {
            return mp_truncated(d, tag);
        }
        return mp_map(d, tag, n, depth);
    case 0xc7: /* ext8, ext16, ext32 */
    case 0xc8:
    case 0xc9:
    case 0xd4: /* fixext 1 .. 16 */
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
        /* WAMP defines no extension types (and the value model could not carry them). */
        return mp_fail(d, "MessagePack: ext type at byte %zu not supported", mp_off(d, tag));
    default:
        break;
    }
    return mp_fail(d, "MessagePack: invalid byte 0x%02x at byte %zu", c, mp_off(d, tag));
}

wamp_err wamp_msgpack_decode(const void *data, size_t len, json_t **out, char *why, size_t why_len)
{
    static const unsigned char empty[1];
    const unsigned char *p = data ? data : empty;
    struct mp_dec d = {.start = p,
                       .p = p,
                       .end = p + (data ? len : 0),
                       .err = WAMP_OK,
                       .why = why,
                       .why_len = why_len};
    *out = NULL;
    json_t *v = mp_value(&d, 1);
    if (!v) {
        return d.err;
    }
    if (d.p != d.end) {
        mp_fail(&d, "MessagePack: %zu trailing bytes after the value at byte %zu", mp_left(&d),
                mp_off(&d, d.p));
        json_decref(v);
        return WAMP_EPROTO;
    }
    *out = v;
    return WAMP_OK;
}

/* ---- encoding ---- */

/* First allocation for an encoded message: most WAMP messages fit. */
#define MP_OUT_MIN 256

/* Output cursor over the reserved tail of a wamp_buf. msgpack-c calls mp_write() for every
 * header and body (1 to 9 bytes for most of them), so each write is a bounds check and a
 * memcpy; the buffer is touched only to grow it and once at the end to commit the length. */
struct mp_enc {
    msgpack_packer pk;
    wamp_buf *buf;
    unsigned char *cur; /* next byte to write; bytes from data + len up to here are uncommitted */
    unsigned char *end; /* end of the reserved space */
    wamp_err err;
};

static void mp_commit(struct mp_enc *e)
{
    unsigned char *committed_end = wamp_buf_data(e->buf) + wamp_buf_len(e->buf);
    wamp_buf_commit(e->buf, (size_t)(e->cur - committed_end));
}

/* Room for n bytes at e->cur. Reserves at least the current length too, so that the buffer
 * grows geometrically. NULL on allocation failure. */
static unsigned char *mp_room(struct mp_enc *e, size_t n)
{
    if (n <= (size_t)(e->end - e->cur)) {
        return e->cur;
    }
    mp_commit(e);
    size_t len = wamp_buf_len(e->buf);
    size_t want = n > len ? n : len;
    unsigned char *p = wamp_buf_reserve(&e->buf, want);
    if (!p) {
        e->err = WAMP_ENOMEM;
        return NULL;
    }
    e->cur = p;
    e->end = p + want;
    return p;
}

static int mp_write(void *data, const char *p, size_t n)
{
    struct mp_enc *e = data;
    unsigned char *dst = mp_room(e, n);
    if (!dst) {
        return -1;
    }
    if (n) {
        memcpy(dst, p, n);
        e->cur = dst + n;
    }
    return 0;
}

/* msgpack_pack_*() return what mp_write() returned; e->err holds the reason. */
static wamp_err mp_rc(const struct mp_enc *e, int rc)
{
    if (rc == 0) {
        return WAMP_OK;
    }
    return e->err != WAMP_OK ? e->err : WAMP_ENOMEM;
}

/* Writes "\0" + base64 as bin when the base64 part is canonical (standard alphabet, padded,
 * zero trailing bits, as sodium_base642bin() checks); *written stays false otherwise and the
 * caller writes a str, so no string is ever altered on the way through. The payload is decoded
 * straight into the output buffer behind a header written by hand (msgpack-c's bin8/16/32). */
static wamp_err mp_put_bin(struct mp_enc *e, const char *b64, size_t b64_len, bool *written)
{
    size_t n;
    *written = false;
    if (!wamp_b64_shape_ok(b64, b64_len, &n)) {
        return WAMP_OK;
    }
    if (n > UINT32_MAX) {
        return WAMP_EINVAL;
    }
    size_t h = n <= UINT8_MAX ? 2 : n <= UINT16_MAX ? 3 : 5;
    unsigned char *p = mp_room(e, h + n);
    if (!p) {
        return WAMP_ENOMEM;
    }
    size_t got = 0;
    if (sodium_base642bin(p + h, n, b64, b64_len, NULL, &got, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        got != n) {
        return WAMP_OK;
    }
    if (h == 2) {
        p[0] = 0xc4;
        p[1] = (unsigned char)n;
    } else if (h == 3) {
        p[0] = 0xc5;
        p[1] = (unsigned char)(n >> 8);
        p[2] = (unsigned char)n;
    } else {
        p[0] = 0xc6;
        p[1] = (unsigned char)(n >> 24);
        p[2] = (unsigned char)(n >> 16);
        p[3] = (unsigned char)(n >> 8);
        p[4] = (unsigned char)n;
    }
    e->cur = p + h + n;
    *written = true;
    return WAMP_OK;
}

static wamp_err mp_put_str(struct mp_enc *e, const char *s, size_t len)
{
    if (len > UINT32_MAX) {
        return WAMP_EINVAL;
    }
    wamp_err err = mp_rc(e, msgpack_pack_str(&e->pk, len));
    if (err == WAMP_OK && len > 0) {
        err = mp_rc(e, msgpack_pack_str_body(&e->pk, s, len));
    }
    return err;
}

static wamp_err mp_put(struct mp_enc *e, const json_t *v, unsigned depth);

static wamp_err mp_put_object(struct mp_enc *e, const json_t *v, unsigned depth)
{
    size_t n = json_object_size(v);
    if (n > UINT32_MAX) {
        return WAMP_EINVAL;
    }
    wamp_err err = mp_rc(e, msgpack_pack_map(&e->pk, n));
    /* jansson's iterator API takes a non-const object but does not modify it. */
    json_t *obj = (json_t *)v;
    for (void *it = json_object_iter(obj); it && err == WAMP_OK;
         it = json_object_iter_next(obj, it)) {
        err = mp_put_str(e, json_object_iter_key(it), json_object_iter_key_len(it));
        if (err == WAMP_OK) {
            err = mp_put(e, json_object_iter_value(it), depth + 1);
        }
    }
    return err;
}

static wamp_err mp_put_array(struct mp_enc *e, const json_t *v, unsigned depth)
{
    size_t n = json_array_size(v);
    if (n > UINT32_MAX) {
        return WAMP_EINVAL;
    }
    wamp_err err = mp_rc(e, msgpack_pack_array(&e->pk, n));
    for (size_t i = 0; i < n && err == WAMP_OK; i++) {
        err = mp_put(e, json_array_get(v, i), depth + 1);
    }
    return err;
}

static wamp_err mp_put(struct mp_enc *e, const json_t *v, unsigned depth)
{
    /* Mirrors the decoder's limit: whatever decodes also encodes, and a reference cycle ends
     * here instead of in a stack overflow. */
    if (!v || depth > WAMP_CODEC_MAX_DEPTH) {
        return WAMP_EINVAL;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return mp_put_object(e, v, depth);
    case JSON_ARRAY:
        return mp_put_array(e, v, depth);
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (len > 0 && s[0] == '\0') {
            bool written;
            wamp_err err = mp_put_bin(e, s + 1, len - 1, &written);
            if (err != WAMP_OK || written) {
                return err;
            }
        }
        return mp_put_str(e, s, len);
    }
    case JSON_INTEGER:
        return mp_rc(e, msgpack_pack_int64(&e->pk, json_integer_value(v)));
    case JSON_REAL: {
        double r = json_real_value(v);
        if (!isfinite(r)) {
            return WAMP_EINVAL;
        }
        return mp_rc(e, msgpack_pack_double(&e->pk, r));
    }
    case JSON_TRUE:
        return mp_rc(e, msgpack_pack_true(&e->pk));
    case JSON_FALSE:
        return mp_rc(e, msgpack_pack_false(&e->pk));
    case JSON_NULL:
        return mp_rc(e, msgpack_pack_nil(&e->pk));
    }
    return WAMP_EINVAL;
}

wamp_err wamp_msgpack_encode_append(const json_t *value, wamp_buf **buf)
{
    struct mp_enc e = {.buf = *buf, .err = WAMP_OK};
    e.cur = e.end = wamp_buf_data(e.buf) + wamp_buf_len(e.buf);
    msgpack_packer_init(&e.pk, &e, mp_write);
    wamp_err err = mp_put(&e, value, 1);
    mp_commit(&e);
    *buf = e.buf;
    return err;
}

wamp_err wamp_msgpack_encode(const json_t *value, wamp_buf **out)
{
    *out = wamp_buf_new(MP_OUT_MIN);
    if (!*out) {
        return WAMP_ENOMEM;
    }
    wamp_err err = wamp_msgpack_encode_append(value, out);
    if (err != WAMP_OK) {
        wamp_buf_unref(out);
    }
    return err;
}
