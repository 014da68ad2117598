/* wamp_json.c: jansson glue for the JSON serializer. */
#include "wamp_json.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wamp_rd.h"

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

/* --- The encoder ----------------------------------------------------------------------------
 * Writes what json_dump_callback() with JSON_ENCODE_FLAGS writes, byte for byte (the unit test
 * compares them), without its per-token callbacks and its snprintf() per integer: compact
 * separators, objects in insertion order with their keys' NUL bytes, strings escaped as jansson
 * escapes them (\" \\ \b \f \n \r \t, other bytes below 0x20 as \u00XX with upper-case hex,
 * nothing else). Reals, rare in envelopes, and containers nested deeper than ENC_DEPTH (the
 * whole value again, from the start) go through jansson itself, which also refuses cycles. */

#define ENC_DEPTH 32

static bool sink_put(struct json_sink *s, const void *p, size_t n)
{
    return json_sink_write(p, n, s) == 0;
}

static bool sink_char(struct json_sink *s, char c)
{
    if (s->cur == s->end && !json_sink_grow(s, 1)) {
        return false;
    }
    *s->cur++ = (unsigned char)c;
    return true;
}

static bool enc_int(struct json_sink *s, json_int_t v)
{
    char tmp[24];
    char *e = tmp + sizeof(tmp), *p = e;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) {
        *--p = '-';
    }
    return sink_put(s, p, (size_t)(e - p));
}

/* A string of n bytes (valid UTF-8, NUL allowed); false if it is not UTF-8 (jansson refuses it). */
static bool enc_str(struct json_sink *s, const char *str, size_t n, bool *bad_utf8)
{
    if (!wamp_utf8_valid(str, n)) {
        *bad_utf8 = true;
        return false;
    }
    if (!sink_char(s, '"')) {
        return false;
    }
    const unsigned char *p = (const unsigned char *)str, *end = p + n, *run = p;
    for (; p < end; p++) {
        unsigned char c = *p;
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        if (!sink_put(s, run, (size_t)(p - run))) {
            return false;
        }
        run = p + 1;
        char esc[6] = {'\\', 0};
        size_t len = 2;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = "0123456789ABCDEF"[c >> 4];
            esc[5] = "0123456789ABCDEF"[c & 15];
            len = 6;
        }
        if (!sink_put(s, esc, len)) {
            return false;
        }
    }
    return sink_put(s, run, (size_t)(p - run)) && sink_char(s, '"');
}

static bool enc_jansson(struct json_sink *s, const json_t *v)
{
    return json_dump_callback(v, json_sink_write, s, JSON_ENCODE_FLAGS) == 0;
}

struct enc_frame {
    const json_t *c;
    void *iter;  /* objects: the next member */
    size_t i, n; /* elements or members written; arrays: the size */
};

/* The value; false on failure, *deep when it nests deeper than ENC_DEPTH. */
static bool enc_value(struct json_sink *s, const json_t *v, bool *deep, bool *bad_utf8)
{
    struct enc_frame st[ENC_DEPTH];
    size_t depth = 0;
    for (;;) {
        /* Write v, a scalar or the opening of a container. */
        switch (json_typeof(v)) {
        case JSON_OBJECT:
        case JSON_ARRAY:
            if (depth == ENC_DEPTH) {
                *deep = true;
                return false;
            }
            st[depth] = (struct enc_frame){.c = v};
            if (json_is_object(v)) {
                st[depth].iter = json_object_iter((json_t *)(uintptr_t)v);
            } else {
                st[depth].n = json_array_size(v);
            }
            depth++;
            if (!sink_char(s, json_is_object(v) ? '{' : '[')) {
                return false;
            }
            break;
        case JSON_STRING:
            if (!enc_str(s, json_string_value(v), json_string_length(v), bad_utf8)) {
                return false;
            }
            break;
        case JSON_INTEGER:
            if (!enc_int(s, json_integer_value(v))) {
                return false;
            }
            break;
        case JSON_TRUE:
        case JSON_FALSE:
        case JSON_NULL: {
            const char *w = json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null";
            if (!sink_put(s, w, strlen(w))) {
                return false;
            }
            break;
        }
        default:
            if (!enc_jansson(s, v)) {
                return false;
            }
        }
        /* The next value to write, closing finished containers on the way. */
        for (v = NULL; !v && depth > 0;) {
            struct enc_frame *f = &st[depth - 1];
            bool first = f->i == 0;
            if (json_is_object(f->c) ? !f->iter : f->i == f->n) {
                depth--;
                if (!sink_char(s, json_is_object(f->c) ? '}' : ']')) {
                    return false;
                }
                continue;
            }
            if (!first && !sink_char(s, ',')) {
                return false;
            }
            if (json_is_object(f->c)) {
                void *it = f->iter;
                if (!enc_str(s, json_object_iter_key(it), json_object_iter_key_len(it), bad_utf8) ||
                    !sink_char(s, ':')) {
                    return false;
                }
                v = json_object_iter_value(it);
                f->iter = json_object_iter_next((json_t *)(uintptr_t)f->c, it);
                f->i++;
            } else {
                v = json_array_get(f->c, f->i++);
            }
        }
        if (!v) {
            return true;
        }
    }
}

wamp_err wamp_json_encode_append(const json_t *value, wamp_buf **buf)
{
    size_t start = wamp_buf_len(*buf);
    struct json_sink s = {.buf = *buf, .err = WAMP_OK};
    s.cur = s.end = wamp_buf_data(s.buf) + wamp_buf_len(s.buf);
    bool deep = false, bad_utf8 = false;
    bool ok = value && enc_value(&s, value, &deep, &bad_utf8);
    if (!ok && deep && s.err == WAMP_OK) {
        /* Deeply nested (or a cycle): jansson's encoder, from the start of the value. */
        json_sink_commit(&s);
        wamp_buf_truncate(s.buf, start);
        s.cur = s.end = wamp_buf_data(s.buf) + wamp_buf_len(s.buf);
        ok = enc_jansson(&s, value);
    }
    json_sink_commit(&s);
    *buf = s.buf;
    if (!ok) {
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
