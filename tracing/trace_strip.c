/* trace_strip.c: a message without its payload (trace_strip.h). */
#include "trace_strip.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "wamp_codec.h"
#include "wamp_rd.h"
#include "wamp_types.h"

size_t trace_payload_index(int msg_type)
{
    switch (msg_type) {
    case WAMP_MSG_PUBLISH:
    case WAMP_MSG_EVENT:
    case WAMP_MSG_CALL:
    case WAMP_MSG_INVOCATION:
        return 4;
    case WAMP_MSG_ERROR:
        return 5;
    case WAMP_MSG_RESULT:
    case WAMP_MSG_YIELD:
        return 3;
    default:
        return 0;
    }
}

/* The MessagePack or CBOR array header d[0..n) again at out, with count k (< 16): a one-octet
 * header keeps its type bits (fixarray 0x9N, CBOR 0x8N); a longer one its first octet, the count
 * in its last, zeros between (both are big-endian). */
static void header_write(const unsigned char *d, size_t n, size_t k, unsigned char *out)
{
    if (n == 1) {
        /* MessagePack fixarray 0x9N, CBOR 0x8N: the type bits stay. */
        out[0] = (unsigned char)((d[0] & 0xf0) | k);
        return;
    }
    out[0] = d[0];
    memset(out + 1, 0, n - 2);
    out[n - 1] = (unsigned char)k;
}

size_t trace_strip_payload(wamp_ser ser, int msg_type, const void *data, size_t len,
                           unsigned char *out, size_t cap)
{
    size_t k = trace_payload_index(msg_type);
    if (k == 0 || len == 0 ||
        (ser != WAMP_SER_JSON && ser != WAMP_SER_MSGPACK && ser != WAMP_SER_CBOR)) {
        return 0;
    }
    wamp_rd r;
    wamp_rd_init_one_pass(&r, ser, data, len);
    wamp_tok t;
    /* first: where the array's first element starts (after its header); end: where the k-th
     * element ends. */
    const unsigned char *first = NULL, *end = NULL;
    bool ok = wamp_rd_next(&r, &t) == WAMP_OK && t.kind == WAMP_TOK_ARRAY && t.depth == 0;
    for (size_t i = 0; ok && i < k; i++) {
        const unsigned char *p = NULL;
        size_t n = 0;
        ok = !wamp_rd_at_end(&r) && wamp_rd_skip(&r, &p, &n, NULL) == WAMP_OK;
        first = first ? first : p;
        end = ok ? p + n : end;
    }
    /* Arguments follow (its opening only is read: a list). */
    ok = ok && !wamp_rd_at_end(&r) && wamp_rd_next(&r, &t) == WAMP_OK && t.kind == WAMP_TOK_ARRAY;
    wamp_rd_fini(&r);
    if (!ok) {
        return 0;
    }
    const unsigned char *d = data;
    size_t pre = (size_t)(end - d);
    if (ser == WAMP_SER_JSON) {
        if (pre + 1 <= cap) {
            memcpy(out, d, pre);
            out[pre] = ']';
        }
        return pre + 1;
    }
    size_t h = (size_t)(first - d);
    if (pre <= cap) {
        header_write(d, h, k, out);
        memcpy(out + h, d + h, pre - h);
    }
    return pre;
}

/* A CHALLENGE (Extra) or AUTHENTICATE (Signature) message: holds a secret. */
bool trace_strip_holds_secret(const json_t *msg)
{
    if (!json_is_array(msg)) {
        return false;
    }
    const json_t *code = json_array_get(msg, 0);
    if (!json_is_integer(code)) {
        return false;
    }
    json_int_t t = json_integer_value(code);
    return t == WAMP_MSG_CHALLENGE || t == WAMP_MSG_AUTHENTICATE;
}

/* Replaces the secret of a CHALLENGE/AUTHENTICATE array (a private copy) with "***": the
 * Signature of AUTHENTICATE [5, Signature, Extra], the Extra of CHALLENGE [4, AuthMethod, Extra].
 * A malformed one (wrong arity) gets every element after the code replaced. */
bool trace_strip_redact(json_t *msg)
{
    bool auth = json_integer_value(json_array_get(msg, 0)) == WAMP_MSG_AUTHENTICATE;
    size_t n = json_array_size(msg);
    for (size_t i = 1; i < n; i++) {
        if (n == 3 && i != (auth ? 1u : 2u)) {
            continue;
        }
        if (json_array_set_new(msg, i, json_string("***")) != 0) {
            return false;
        }
    }
    return true;
}

bool trace_strip_redacted(wamp_ser ser, const json_t *msg, wamp_buf **out)
{
    *out = NULL;
    if (!trace_strip_holds_secret(msg)) {
        return false;
    }
    json_t *copy = json_deep_copy(msg);
    if (copy && trace_strip_redact(copy) && wamp_codec_encode(ser, copy, out) != WAMP_OK) {
        *out = NULL;
    }
    json_decref(copy);
    return true;
}
