/* wamp_json.c: jansson glue for the JSON serializer. */
#include "wamp_json.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* JSON_ALLOW_NUL: WAMP binary values are strings starting with "\u0000".
 * JSON_REJECT_DUPLICATES: a duplicated key is ambiguous, and the MessagePack decoder rejects
 * it too, so both serializers accept the same set of values.
 * JSON_DECODE_ANY: the value model is the same as MessagePack's (any root value); whether the
 * root is a message list is wamp_msg_parse()'s decision. Trailing non-whitespace is always an
 * error for json_loadb() (no JSON_DISABLE_EOF_CHECK). */
#define JSON_DECODE_FLAGS (JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

/* JSON_REAL_PRECISION(17): enough digits for every double to round-trip exactly. */
#define JSON_ENCODE_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))

wamp_err wamp_json_decode(const void *data, size_t len, json_t **out, char *why, size_t why_len)
{
    json_error_t jerr;
    *out = json_loadb(data, len, JSON_DECODE_FLAGS, &jerr);
    if (*out) {
        return WAMP_OK;
    }
    /* jansson reports most allocation failures with json_error_out_of_memory, but a failure
     * while setting up its lexer returns before any error is recorded (empty text). */
    if (json_error_code(&jerr) == json_error_out_of_memory || jerr.text[0] == '\0') {
        return WAMP_ENOMEM;
    }
    if (why && why_len) {
        snprintf(why, why_len, "JSON: %s at byte %d", jerr.text, jerr.position);
    }
    return WAMP_EPROTO;
}

/* First allocation for an encoded message: most WAMP messages fit. */
#define JSON_OUT_MIN 256

/* Output cursor over the reserved tail of a wamp_buf. json_dump_callback() hands over many
 * small pieces (tokens, separators, unescaped runs of strings), so each is a bounds check and a
 * memcpy; the buffer is touched only to grow it and once at the end to commit the length. */
struct json_sink {
    wamp_buf *buf;
    unsigned char *cur; /* next byte to write; bytes from data + len up to here are uncommitted */
    unsigned char *end; /* end of the reserved space */
    wamp_err err;
};

static void json_sink_commit(struct json_sink *s)
{
    unsigned char *committed_end = wamp_buf_data(s->buf) + wamp_buf_len(s->buf);
    wamp_buf_commit(s->buf, (size_t)(s->cur - committed_end));
}

/* Reserves at least n bytes (and at least the current length, so growth is geometric). */
static bool json_sink_grow(struct json_sink *s, size_t n)
{
    json_sink_commit(s);
    size_t len = wamp_buf_len(s->buf);
    size_t want = n > len ? n : len;
    unsigned char *p = wamp_buf_reserve(&s->buf, want);
    if (!p) {
        s->err = WAMP_ENOMEM;
        return false;
    }
    s->cur = p;
    s->end = p + want;
    return true;
}

static int json_sink_write(const char *p, size_t n, void *data)
{
    struct json_sink *s = data;
    if (n > (size_t)(s->end - s->cur) && !json_sink_grow(s, n)) {
        return -1;
    }
    if (n) {
        memcpy(s->cur, p, n);
        s->cur += n;
    }
    return 0;
}

wamp_err wamp_json_encode_append(const json_t *value, wamp_buf **buf)
{
    struct json_sink s = {.buf = *buf, .err = WAMP_OK};
    s.cur = s.end = wamp_buf_data(s.buf) + wamp_buf_len(s.buf);
    int rc = json_dump_callback(value, json_sink_write, &s, JSON_ENCODE_FLAGS);
    json_sink_commit(&s);
    *buf = s.buf;
    if (rc != 0) {
        return s.err != WAMP_OK ? s.err : WAMP_EINVAL;
    }
    return WAMP_OK;
}

wamp_err wamp_json_encode(const json_t *value, wamp_buf **out)
{
    *out = wamp_buf_new(JSON_OUT_MIN);
    if (!*out) {
        return WAMP_ENOMEM;
    }
    wamp_err err = wamp_json_encode_append(value, out);
    if (err != WAMP_OK) {
        wamp_buf_unref(out);
    }
    return err;
}
