/* wamp_codec.c: serializer dispatch (the serializers live in wamp_json.c, wamp_msgpack.c and
 * wamp_cbor.c) and the jansson builder over the token reader (wamp_rd.c). */
#include "wamp_codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wamp_cbor.h"
#include "wamp_json.h"
#include "wamp_msgpack.h"
#include "wamp_rd.h"

wamp_err wamp_codec_decode(wamp_ser ser, const void *data, size_t len, json_t **out, char *why,
                           size_t why_len)
{
    if (!out) {
        return WAMP_EINVAL;
    }
    *out = NULL;
    if (!data && len) {
        return WAMP_EINVAL;
    }
    switch (ser) {
    case WAMP_SER_JSON:
        return wamp_json_decode(data ? data : "", len, out, why, why_len);
    case WAMP_SER_MSGPACK:
        return wamp_msgpack_decode(data, len, out, why, why_len);
    case WAMP_SER_CBOR: {
        wamp_err err = wamp_codec_decode_value(ser, data, len, out, why, why_len);
        return err == WAMP_ERANGE ? WAMP_EPROTO : err;
    }
    }
    if (why && why_len) {
        snprintf(why, why_len, "unknown serializer %d", (int)ser);
    }
    return WAMP_EINVAL;
}

wamp_err wamp_codec_decode_msg(wamp_ser ser, const void *data, size_t len, wamp_msg *out, char *why,
                               size_t why_len)
{
    json_t *root;
    memset(out, 0, sizeof(*out));
    wamp_err err = wamp_codec_decode(ser, data, len, &root, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    return wamp_msg_parse(root, out, why, why_len);
}

wamp_err wamp_codec_encode(wamp_ser ser, const json_t *value, wamp_buf **out)
{
    if (!out) {
        return WAMP_EINVAL;
    }
    *out = NULL;
    switch (ser) {
    case WAMP_SER_JSON:
        return wamp_json_encode(value, out);
    case WAMP_SER_MSGPACK:
        return wamp_msgpack_encode(value, out);
    case WAMP_SER_CBOR:
        return wamp_cbor_encode(value, out);
    }
    return WAMP_EINVAL;
}

const char *wamp_ser_name(wamp_ser ser)
{
    switch (ser) {
    case WAMP_SER_JSON:
        return "json";
    case WAMP_SER_MSGPACK:
        return "msgpack";
    case WAMP_SER_CBOR:
        return "cbor";
    }
    return "unknown";
}

/* --- Token stream -> jansson ----------------------------------------------------------------- */

struct build_level {
    json_t *node;
    char *key; /* maps: the pending key (owned) */
    size_t key_len;
};

__attribute__((format(printf, 3, 4))) static void why_set(char *why, size_t why_len,
                                                          const char *fmt, ...)
{
    if (!why || why_len == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
}

static json_t *bin_value(const unsigned char *p, size_t n)
{
    size_t enc = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
    char *s = malloc(enc + 1);
    if (!s) {
        return NULL;
    }
    s[0] = '\0';
    sodium_bin2base64(s + 1, enc, p, n, sodium_base64_VARIANT_ORIGINAL);
    json_t *v = json_stringn_nocheck(s, enc);
    free(s);
    return v;
}

/* Attaches v (consumed) to the innermost container (or makes it the root). */
static wamp_err attach(struct build_level *lv, size_t depth, json_t *v, json_t **root, char *why,
                       size_t why_len, size_t at)
{
    if (!v) {
        return WAMP_ENOMEM;
    }
    if (depth == 0) {
        *root = v;
        return WAMP_OK;
    }
    struct build_level *l = &lv[depth - 1];
    if (json_is_array(l->node)) {
        return json_array_append_new(l->node, v) == 0 ? WAMP_OK : WAMP_ENOMEM;
    }
    if (json_object_getn(l->node, l->key, l->key_len)) {
        json_decref(v);
        why_set(why, why_len, "duplicate map key at offset %zu", at);
        return WAMP_EPROTO;
    }
    int rc = json_object_setn_new_nocheck(l->node, l->key, l->key_len, v);
    free(l->key);
    l->key = NULL;
    return rc == 0 ? WAMP_OK : WAMP_ENOMEM;
}

wamp_err wamp_codec_decode_value(wamp_ser ser, const void *data, size_t len, json_t **out,
                                 char *why, size_t why_len)
{
    *out = NULL;
    wamp_rd r;
    wamp_tok t;
    wamp_rd_init(&r, ser, data, len);
    struct build_level *lv = NULL;
    size_t cap = 0, depth = 0;
    json_t *root = NULL;
    wamp_err err = WAMP_OK;
    while (!wamp_rd_done(&r)) {
        err = wamp_rd_next(&r, &t);
        if (err != WAMP_OK) {
            why_set(why, why_len, "%s", wamp_rd_why(&r));
            goto fail;
        }
        size_t at = (size_t)(r.tok_start - r.start);
        json_t *v = NULL;
        switch (t.kind) {
        case WAMP_TOK_END: {
            json_t *node = lv[--depth].node;
            lv[depth].node = NULL;
            err = attach(lv, depth, node, &root, why, why_len, at);
            if (err != WAMP_OK) {
                goto fail;
            }
            continue;
        }
        case WAMP_TOK_ARRAY:
        case WAMP_TOK_MAP:
            if (depth == cap) {
                size_t ncap = cap ? cap * 2 : 8;
                struct build_level *n = realloc(lv, ncap * sizeof(*n));
                if (!n) {
                    err = WAMP_ENOMEM;
                    goto fail;
                }
                lv = n;
                cap = ncap;
            }
            lv[depth].node = t.kind == WAMP_TOK_MAP ? json_object() : json_array();
            lv[depth].key = NULL;
            lv[depth].key_len = 0;
            if (!lv[depth].node) {
                err = WAMP_ENOMEM;
                goto fail;
            }
            depth++;
            continue;
        case WAMP_TOK_STR:
            if (t.is_key) {
                char *k = malloc(t.len + 1);
                if (!k) {
                    err = WAMP_ENOMEM;
                    goto fail;
                }
                memcpy(k, t.p, t.len);
                k[t.len] = '\0';
                lv[depth - 1].key = k;
                lv[depth - 1].key_len = t.len;
                continue;
            }
            v = json_stringn_nocheck((const char *)t.p, t.len);
            break;
        case WAMP_TOK_BIN:
            v = bin_value(t.p, t.len);
            break;
        case WAMP_TOK_NULL:
            v = json_null();
            break;
        case WAMP_TOK_BOOL:
            v = json_boolean(t.b);
            break;
        case WAMP_TOK_INT:
            v = json_integer((json_int_t)t.i);
            break;
        case WAMP_TOK_UINT:
            why_set(why, why_len, "integer %llu at offset %zu is above 2^63-1",
                    (unsigned long long)t.u, at);
            err = WAMP_ERANGE;
            goto fail;
        case WAMP_TOK_REAL:
            v = json_real(t.d);
            break;
        }
        err = attach(lv, depth, v, &root, why, why_len, at);
        if (err != WAMP_OK) {
            goto fail;
        }
    }
    wamp_rd_fini(&r);
    free(lv);
    *out = root;
    return WAMP_OK;
fail:
    if (err == WAMP_ENOMEM) {
        why_set(why, why_len, "out of memory");
    }
    for (size_t i = 0; i < depth; i++) {
        json_decref(lv[i].node);
        free(lv[i].key);
    }
    free(lv);
    json_decref(root);
    wamp_rd_fini(&r);
    return err;
}
