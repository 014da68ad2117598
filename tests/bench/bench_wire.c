/* bench_wire.c: request templates with patched ids, and a partial reader for received messages.
 * Both only look at the outer array of a WAMP message: [Code, Id, Id?, Dict, Args, ...]. */
#include "bench_wire.h"

#include <stdlib.h>
#include <string.h>

#include "wamp_buf.h"
#include "wamp_codec.h"

/* JSON: decimal digits. MessagePack: the shortest uint form (fixint, 0xcc..0xcf). */
static size_t put_id(wamp_ser ser, uint64_t v, unsigned char *out)
{
    if (ser == WAMP_SER_JSON) {
        unsigned char tmp[24];
        size_t n = 0;
        do {
            tmp[n++] = (unsigned char)('0' + v % 10u);
            v /= 10u;
        } while (v);
        for (size_t i = 0; i < n; i++) {
            out[i] = tmp[n - 1 - i];
        }
        return n;
    }
    unsigned bytes;
    if (v < 128u) {
        out[0] = (unsigned char)v;
        return 1;
    } else if (v <= 0xFFu) {
        out[0] = 0xcc;
        bytes = 1;
    } else if (v <= 0xFFFFu) {
        out[0] = 0xcd;
        bytes = 2;
    } else if (v <= 0xFFFFFFFFu) {
        out[0] = 0xce;
        bytes = 4;
    } else {
        out[0] = 0xcf;
        bytes = 8;
    }
    for (unsigned i = 0; i < bytes; i++) {
        out[1 + i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    }
    return 1 + bytes;
}

wamp_err bench_tmpl_init(bench_tmpl *t, wamp_ser ser, const json_t *msg)
{
    memset(t, 0, sizeof(*t));
    wamp_buf *buf = NULL;
    wamp_err err = wamp_codec_encode(ser, msg, &buf);
    if (err != WAMP_OK) {
        return err;
    }
    const unsigned char *data = wamp_buf_cdata(buf);
    size_t len = wamp_buf_len(buf);

    /* The encoder may write the sentinel as uint64 (0xcf) or int64 (0xd3); accept both. */
    unsigned char pat[2][24];
    size_t pat_len[2];
    size_t npat = 1;
    pat_len[0] = put_id(ser, BENCH_WIRE_SENTINEL, pat[0]);
    if (ser == WAMP_SER_MSGPACK) {
        memcpy(pat[1], pat[0], pat_len[0]);
        pat[1][0] = 0xd3;
        pat_len[1] = pat_len[0];
        npat = 2;
    }
    for (size_t i = 0; i + pat_len[0] <= len; i++) {
        for (size_t k = 0; k < npat; k++) {
            if (memcmp(data + i, pat[k], pat_len[k]) != 0) {
                continue;
            }
            /* In JSON the digits must not be part of a longer number. */
            if (ser == WAMP_SER_JSON && ((i > 0 && data[i - 1] >= '0' && data[i - 1] <= '9') ||
                                         (i + pat_len[k] < len && data[i + pat_len[k]] >= '0' &&
                                          data[i + pat_len[k]] <= '9'))) {
                continue;
            }
            if (t->nslots == BENCH_TMPL_MAX_SLOTS) {
                err = WAMP_EINVAL;
                goto fail;
            }
            t->slot_off[t->nslots++] = i;
            i += pat_len[k] - 1;
            break;
        }
    }
    if (t->nslots == 0) {
        err = WAMP_EINVAL;
        goto fail;
    }
    t->bytes = malloc(len);
    if (!t->bytes) {
        err = WAMP_ENOMEM;
        goto fail;
    }
    memcpy(t->bytes, data, len);
    t->len = len;
    t->slot_len = pat_len[0];
    t->ser = ser;
    wamp_buf_unref(&buf);
    return WAMP_OK;
fail:
    wamp_buf_unref(&buf);
    memset(t, 0, sizeof(*t));
    return err;
}

void bench_tmpl_fini(bench_tmpl *t)
{
    if (!t) {
        return;
    }
    free(t->bytes);
    memset(t, 0, sizeof(*t));
}

size_t bench_tmpl_render(const bench_tmpl *t, uint64_t id, unsigned char *out)
{
    size_t src = 0;
    size_t dst = 0;
    for (size_t s = 0; s < t->nslots; s++) {
        size_t seg = t->slot_off[s] - src;
        memcpy(out + dst, t->bytes + src, seg);
        dst += seg;
        dst += put_id(t->ser, id, out + dst);
        src = t->slot_off[s] + t->slot_len;
    }
    memcpy(out + dst, t->bytes + src, t->len - src);
    return dst + t->len - src;
}

/* ---- JSON partial reader ---- */

static size_t json_ws(const unsigned char *p, size_t len, size_t i)
{
    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) {
        i++;
    }
    return i;
}

/* Reads a non-negative integer at i; returns the index after it, or 0 if there is none. */
static size_t json_uint(const unsigned char *p, size_t len, size_t i, uint64_t *v)
{
    size_t start = i;
    uint64_t x = 0;
    while (i < len && p[i] >= '0' && p[i] <= '9') {
        if (x > (UINT64_MAX - 9u) / 10u) {
            return 0;
        }
        x = x * 10u + (uint64_t)(p[i] - '0');
        i++;
    }
    if (i == start || (i < len && (p[i] == '.' || p[i] == 'e' || p[i] == 'E'))) {
        return 0;
    }
    *v = x;
    return i;
}

/* Skips one JSON value starting at i (after whitespace); returns the index after it or 0. */
static size_t json_skip(const unsigned char *p, size_t len, size_t i)
{
    size_t depth = 0;
    bool in_str = false;
    for (; i < len; i++) {
        unsigned char c = p[i];
        if (in_str) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_str = false;
                if (depth == 0) {
                    return i + 1;
                }
            }
            continue;
        }
        if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) {
                return i; /* end of the enclosing container: scalar ended */
            }
            if (--depth == 0) {
                return i + 1;
            }
        } else if (c == ',' && depth == 0) {
            return i;
        }
    }
    return 0;
}

static bool json_peek(const unsigned char *p, size_t len, bool want_arg0, bench_wire_head *h)
{
    size_t i = json_ws(p, len, 0);
    uint64_t v;
    if (i >= len || p[i] != '[') {
        return false;
    }
    i = json_uint(p, len, json_ws(p, len, i + 1), &v);
    if (i == 0 || v > WAMP_MSG_TYPE_MAX) {
        return false;
    }
    h->type = (int)v;
    while (h->nids < 2) {
        i = json_ws(p, len, i);
        if (i >= len || p[i] != ',') {
            return true;
        }
        size_t j = json_uint(p, len, json_ws(p, len, i + 1), &v);
        if (j == 0) {
            break;
        }
        h->id[h->nids++] = v;
        i = j;
    }
    unsigned need = h->type == WAMP_MSG_RESULT ? 1u : 2u;
    if (!want_arg0 || h->nids != need ||
        (h->type != WAMP_MSG_EVENT && h->type != WAMP_MSG_INVOCATION &&
         h->type != WAMP_MSG_RESULT)) {
        return true;
    }
    /* i is at the ',' before Details. */
    i = json_ws(p, len, i);
    if (i >= len || p[i] != ',') {
        return true;
    }
    i = json_skip(p, len, json_ws(p, len, i + 1));
    if (i == 0) {
        return true;
    }
    i = json_ws(p, len, i);
    if (i >= len || p[i] != ',') {
        return true;
    }
    i = json_ws(p, len, i + 1);
    if (i >= len || p[i] != '[') {
        return true;
    }
    if (json_uint(p, len, json_ws(p, len, i + 1), &v) != 0) {
        h->has_arg0 = true;
        h->arg0 = v;
    }
    return true;
}

/* ---- MessagePack partial reader ---- */

static uint64_t be_get(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

/* Reads a non-negative integer at *i. */
static bool mp_uint(const unsigned char *p, size_t len, size_t *i, uint64_t *v)
{
    if (*i >= len) {
        return false;
    }
    unsigned char c = p[*i];
    unsigned n;
    bool sign = false;
    if (c <= 0x7f) {
        *v = c;
        *i += 1;
        return true;
    }
    switch (c) {
    case 0xcc:
    case 0xd0:
        n = 1;
        break;
    case 0xcd:
    case 0xd1:
        n = 2;
        break;
    case 0xce:
    case 0xd2:
        n = 4;
        break;
    case 0xcf:
    case 0xd3:
        n = 8;
        break;
    default:
        return false;
    }
    sign = c >= 0xd0;
    if (*i + 1 + n > len) {
        return false;
    }
    uint64_t x = be_get(p + *i + 1, n);
    if (sign && (x >> (8 * n - 1)) & 1u) {
        return false; /* negative */
    }
    *v = x;
    *i += 1 + n;
    return true;
}

/* Reads an array header at *i. */
static bool mp_array(const unsigned char *p, size_t len, size_t *i, uint64_t *n)
{
    if (*i >= len) {
        return false;
    }
    unsigned char c = p[*i];
    if (c >= 0x90 && c <= 0x9f) {
        *n = c & 0x0fu;
        *i += 1;
        return true;
    }
    unsigned w = c == 0xdc ? 2u : c == 0xdd ? 4u : 0u;
    if (w == 0 || *i + 1 + w > len) {
        return false;
    }
    *n = be_get(p + *i + 1, w);
    *i += 1 + w;
    return true;
}

/* Skips one whole value (with everything nested in it) at *i. */
static bool mp_skip(const unsigned char *p, size_t len, size_t *i)
{
    uint64_t items = 1;
    while (items > 0) {
        if (*i >= len) {
            return false;
        }
        unsigned char c = p[*i];
        uint64_t body = 0; /* payload bytes after the header */
        unsigned hdr = 1;  /* header bytes, including c */
        items--;
        if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3) {
            /* fixint, nil, false, true */
        } else if (c <= 0x8f) {
            items += 2u * (c & 0x0fu);
        } else if (c <= 0x9f) {
            items += c & 0x0fu;
        } else if (c <= 0xbf) {
            body = c & 0x1fu;
        } else {
            static const unsigned char width[] = {/* c4..cb */ 1, 2, 4, 1, 2, 4, 0, 0,
                                                  /* cc..d3 */ 0, 0, 0, 0, 0, 0, 0, 0,
                                                  /* d4..d8 */ 0, 0, 0, 0, 0,
                                                  /* d9..df */ 1, 2, 4, 2, 4, 2, 4};
            static const unsigned char fixed[] = {/* c4..cb */ 0, 0, 0, 1, 1,  1, 4, 8,
                                                  /* cc..d3 */ 1, 2, 4, 8, 1,  2, 4, 8,
                                                  /* d4..d8 */ 2, 3, 5, 9, 17,
                                                  /* d9..df */ 0, 0, 0, 0, 0,  0, 0};
            if (c == 0xc1) {
                return false;
            }
            unsigned k = (unsigned)(c - 0xc4);
            unsigned w = width[k];
            if (*i + 1 + w > len) {
                return false;
            }
            uint64_t n = be_get(p + *i + 1, w);
            hdr += w;
            body = fixed[k];
            if (c >= 0xdc && c <= 0xdd) {
                items += n;
            } else if (c >= 0xde) {
                items += 2u * n;
            } else if (w > 0) {
                body += n; /* bin, ext, str: n payload bytes (ext: plus its type byte) */
            }
        }
        if (body > len || *i + hdr + body > len) {
            return false;
        }
        *i += hdr + (size_t)body;
    }
    return true;
}

static bool mp_peek(const unsigned char *p, size_t len, bool want_arg0, bench_wire_head *h)
{
    size_t i = 0;
    uint64_t n, v;
    if (!mp_array(p, len, &i, &n) || n < 1 || !mp_uint(p, len, &i, &v) || v > WAMP_MSG_TYPE_MAX) {
        return false;
    }
    h->type = (int)v;
    uint64_t left = n - 1;
    while (h->nids < 2 && left > 0 && mp_uint(p, len, &i, &v)) {
        h->id[h->nids++] = v;
        left--;
    }
    unsigned need = h->type == WAMP_MSG_RESULT ? 1u : 2u;
    if (!want_arg0 || h->nids != need || left < 2 ||
        (h->type != WAMP_MSG_EVENT && h->type != WAMP_MSG_INVOCATION &&
         h->type != WAMP_MSG_RESULT)) {
        return true;
    }
    if (mp_skip(p, len, &i) && mp_array(p, len, &i, &n) && n > 0 && mp_uint(p, len, &i, &v)) {
        h->has_arg0 = true;
        h->arg0 = v;
    }
    return true;
}

bool bench_wire_peek(wamp_ser ser, const unsigned char *p, size_t len, bool want_arg0,
                     bench_wire_head *out)
{
    memset(out, 0, sizeof(*out));
    if (ser == WAMP_SER_JSON) {
        return json_peek(p, len, want_arg0, out);
    }
    return mp_peek(p, len, want_arg0, out);
}
