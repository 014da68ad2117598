/* wamp_cbor.c: CBOR encoding of jansson values (RFC 8949, preferred serialization). */
#include "wamp_cbor.h"

#include <math.h>
#include <string.h>

#include "wamp_codec.h"
#include "wamp_rd.h"

size_t wamp_cbor_head(unsigned char *out, unsigned major, uint64_t v)
{
    unsigned char m = (unsigned char)(major << 5);
    size_t n;
    if (v < 24) {
        out[0] = (unsigned char)(m | v);
        return 1;
    }
    if (v <= UINT8_MAX) {
        out[0] = m | 24;
        n = 1;
    } else if (v <= UINT16_MAX) {
        out[0] = m | 25;
        n = 2;
    } else if (v <= UINT32_MAX) {
        out[0] = m | 26;
        n = 4;
    } else {
        out[0] = m | 27;
        n = 8;
    }
    for (size_t i = 0; i < n; i++) {
        out[1 + i] = (unsigned char)(v >> (8 * (n - 1 - i)));
    }
    return n + 1;
}

size_t wamp_cbor_f64(unsigned char *out, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    out[0] = 0xfb;
    for (int i = 0; i < 8; i++) {
        out[1 + i] = (unsigned char)(bits >> (56 - 8 * i));
    }
    return 9;
}

static wamp_err put(wamp_buf **buf, const void *p, size_t n)
{
    unsigned char *dst = wamp_buf_reserve(buf, n);
    if (!dst) {
        return WAMP_ENOMEM;
    }
    memcpy(dst, p, n);
    wamp_buf_commit(*buf, n);
    return WAMP_OK;
}

static wamp_err head(wamp_buf **buf, unsigned major, uint64_t v)
{
    unsigned char b[9];
    return put(buf, b, wamp_cbor_head(b, major, v));
}

/* A string: the binary convention ("\0" + canonical base64) becomes a byte string. */
static wamp_err put_string(wamp_buf **buf, const char *s, size_t len)
{
    if (len > 0 && s[0] == '\0') {
        size_t room = (len - 1) / 4 * 3;
        unsigned char b[9];
        unsigned char *dst = wamp_buf_reserve(buf, sizeof(b) + room);
        if (!dst) {
            return WAMP_ENOMEM;
        }
        size_t n;
        /* Decode behind the longest head, then move it down behind the real one. */
        if (wamp_b64_decode(s + 1, len - 1, dst + sizeof(b), &n)) {
            size_t h = wamp_cbor_head(b, 2, n);
            memcpy(dst, b, h);
            memmove(dst + h, dst + sizeof(b), n);
            wamp_buf_commit(*buf, h + n);
            return WAMP_OK;
        }
    }
    wamp_err err = head(buf, 3, len);
    return err != WAMP_OK ? err : put(buf, s, len);
}

static wamp_err put_value(wamp_buf **buf, const json_t *v, unsigned depth)
{
    if (!v) {
        return WAMP_EINVAL;
    }
    switch (json_typeof(v)) {
    case JSON_NULL:
        return put(buf, "\xf6", 1);
    case JSON_TRUE:
        return put(buf, "\xf5", 1);
    case JSON_FALSE:
        return put(buf, "\xf4", 1);
    case JSON_INTEGER: {
        json_int_t i = json_integer_value(v);
        return i < 0 ? head(buf, 1, (uint64_t)(-1 - i)) : head(buf, 0, (uint64_t)i);
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        if (!isfinite(d)) {
            return WAMP_EINVAL;
        }
        unsigned char b[9];
        return put(buf, b, wamp_cbor_f64(b, d));
    }
    case JSON_STRING:
        return put_string(buf, json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        if (depth >= WAMP_CODEC_MAX_DEPTH) {
            return WAMP_EINVAL;
        }
        size_t n = json_array_size(v);
        wamp_err err = head(buf, 4, n);
        for (size_t i = 0; i < n && err == WAMP_OK; i++) {
            err = put_value(buf, json_array_get(v, i), depth + 1);
        }
        return err;
    }
    case JSON_OBJECT: {
        if (depth >= WAMP_CODEC_MAX_DEPTH) {
            return WAMP_EINVAL;
        }
        wamp_err err = head(buf, 5, json_object_size(v));
        const char *k;
        size_t klen;
        json_t *val;
        json_object_keylen_foreach((json_t *)(uintptr_t)v, k, klen, val)
        {
            if (err == WAMP_OK) {
                err = head(buf, 3, klen);
            }
            if (err == WAMP_OK) {
                err = put(buf, k, klen);
            }
            if (err == WAMP_OK) {
                err = put_value(buf, val, depth + 1);
            }
        }
        return err;
    }
    }
    return WAMP_EINVAL;
}

wamp_err wamp_cbor_encode_append(const json_t *value, wamp_buf **buf)
{
    return put_value(buf, value, 0);
}

wamp_err wamp_cbor_encode(const json_t *value, wamp_buf **out)
{
    *out = wamp_buf_new(256);
    if (!*out) {
        return WAMP_ENOMEM;
    }
    wamp_err err = put_value(out, value, 0);
    if (err != WAMP_OK) {
        wamp_buf_unref(out);
    }
    return err;
}
