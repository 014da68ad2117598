/* check_wamp_rd.c: the token readers (JSON, MessagePack, CBOR) and the exact transcoder:
 * golden vectors with the integer edges (-2^63 .. 2^64 - 1), reals that stay reals, NUL in
 * strings and keys, binary in every form; every pair of serializers transcodes the golden value
 * to the golden bytes; wamp_rd_skip() slices; every class of malformed input is refused; deep
 * nesting up to the limit; and a seeded property test: random values written in serializer S,
 * transcoded to T, read back as the same token stream, for every pair (S, T). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "wamp_codec.h"
#include "wamp_rd.h"
#include "wamp_wr.h"

static const wamp_ser SERS[] = {WAMP_SER_JSON, WAMP_SER_MSGPACK, WAMP_SER_CBOR};

/* The golden value: [-2^63, -2^32-1, -1, 0, 2^53, 2^63-1, 2^63, 2^64-1, 1.0, 1e300, 5e-324,
 * -0.0, "a\0b", {"k\0": b"\x01\x02"}, null, true, false]. The MessagePack and CBOR bytes were
 * checked against Python's msgpack 1.0.3 and cbor 1.0.0 (which writes 2^63 and 2^64-1 as tag 2
 * bignums: see GOLD_CBOR_PY). */
static const char GOLD_JSON[] =
        "[-9223372036854775808,-4294967297,-1,0,9007199254740992,9223372036854775807,"
        "9223372036854775808,18446744073709551615,1.0,1e+300,5e-324,-0.0,\"a\\u0000b\","
        "{\"k\\u0000\":\"\\u0000AQI=\"},null,true,false]";
static const char GOLD_MSGPACK[] =
        "dc0011d38000000000000000d3fffffffeffffffffff00cf0020000000000000cf7fffffffffffffffcf800000"
        "0000000000cfffffffffffffffffcb3ff0000000000000cb7e37e43c8800759ccb0000000000000001cb800000"
        "0000000000a361006281a26b00c4020102c0c3c2";
static const char GOLD_CBOR[] =
        "913b7fffffffffffffff3b000000010000000020001b00200000000000001b7fffffffffffffff1b800000000"
        "00000001bfffffffffffffffffb3ff0000000000000fb7e37e43c8800759cfb0000000000000001fb8000000"
        "00000000063610062a1626b00420102f6f5f4";
static const char GOLD_CBOR_PY[] =
        "913b7fffffffffffffff3b000000010000000020001b00200000000000001b7fffffffffffffffc248800000"
        "0000000000c248fffffffffffffffffb3ff0000000000000fb7e37e43c8800759cfb0000000000000001fb80"
        "0000000000000063610062a1626b00420102f6f5f4";

static unsigned char *unhex(const char *h, size_t *n)
{
    size_t len = strlen(h) / 2;
    unsigned char *b = malloc(len + 1);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < len; i++) {
        unsigned v;
        ck_assert_int_eq(sscanf(h + 2 * i, "%2x", &v), 1);
        b[i] = (unsigned char)v;
    }
    *n = len;
    return b;
}

/* The golden value's encoding in ser (JSON is text). Free with free(). */
static unsigned char *gold(wamp_ser ser, size_t *n)
{
    if (ser == WAMP_SER_JSON) {
        *n = strlen(GOLD_JSON);
        unsigned char *b = malloc(*n);
        ck_assert_ptr_nonnull(b);
        memcpy(b, GOLD_JSON, *n);
        return b;
    }
    return unhex(ser == WAMP_SER_MSGPACK ? GOLD_MSGPACK : GOLD_CBOR, n);
}

static wamp_buf *transcode(wamp_ser from, const void *p, size_t n, wamp_ser to, wamp_err *err)
{
    wamp_wr w;
    wamp_buf *out = NULL;
    wamp_wr_init(&w, (int)to, 64, 0);
    wamp_wr_transcode(&w, (int)from, p, n);
    *err = wamp_wr_finish_buf(&w, &out);
    wamp_wr_fini(&w);
    return out;
}

static void assert_bytes(const wamp_buf *b, const void *want, size_t n, const char *what)
{
    ck_assert_ptr_nonnull(b);
    ck_assert_msg(wamp_buf_len(b) == n && memcmp(wamp_buf_cdata(b), want, n) == 0,
                  "%s: got %zu bytes, want %zu", what, wamp_buf_len(b), n);
}

/* Checks the token stream of the golden value. */
static void assert_gold_tokens(wamp_ser ser, const void *p, size_t n)
{
    wamp_rd r;
    wamp_tok t;
    wamp_rd_init(&r, ser, p, n);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert_int_eq(t.kind, WAMP_TOK_ARRAY);
    ck_assert_uint_eq(t.count, 17);
    const int64_t ints[] = {INT64_MIN, -4294967297LL, -1, 0, 9007199254740992LL, INT64_MAX};
    for (size_t i = 0; i < 6; i++) {
        ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
        ck_assert_int_eq(t.kind, WAMP_TOK_INT);
        ck_assert_int_eq(t.i, ints[i]);
        ck_assert(t.first == (i == 0));
    }
    const uint64_t uints[] = {9223372036854775808ULL, UINT64_MAX};
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
        ck_assert_int_eq(t.kind, WAMP_TOK_UINT);
        ck_assert(t.u == uints[i]);
    }
    const double reals[] = {1.0, 1e300, 5e-324, -0.0};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
        ck_assert_int_eq(t.kind, WAMP_TOK_REAL);
        ck_assert(memcmp(&t.d, &reals[i], sizeof(double)) == 0);
    }
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert_int_eq(t.kind, WAMP_TOK_STR);
    ck_assert_uint_eq(t.len, 3);
    ck_assert_mem_eq(t.p, "a\0b", 3);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert_int_eq(t.kind, WAMP_TOK_MAP);
    ck_assert_uint_eq(t.count, 1);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_STR && t.is_key && t.first && t.in_map && t.depth == 2);
    ck_assert_uint_eq(t.len, 2);
    ck_assert_mem_eq(t.p, "k\0", 2);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert_int_eq(t.kind, WAMP_TOK_BIN);
    ck_assert_uint_eq(t.len, 2);
    ck_assert_mem_eq(t.p, "\x01\x02", 2);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_END && t.is_map);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert_int_eq(t.kind, WAMP_TOK_NULL);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_BOOL && t.b);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_BOOL && !t.b);
    ck_assert(!wamp_rd_done(&r));
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_END && !t.is_map && t.depth == 0);
    ck_assert(wamp_rd_done(&r));
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_EINVAL);
    wamp_rd_fini(&r);
}

START_TEST(test_gold_tokens_every_serializer)
{
    size_t n;
    unsigned char *p = gold(SERS[_i], &n);
    assert_gold_tokens(SERS[_i], p, n);
    free(p);
}

END_TEST

START_TEST(test_cbor_bignums_read_as_integers)
{
    size_t n;
    unsigned char *p = unhex(GOLD_CBOR_PY, &n);
    assert_gold_tokens(WAMP_SER_CBOR, p, n);
    /* And they come out as plain integers, in preferred serialization. */
    size_t gn;
    unsigned char *g = gold(WAMP_SER_CBOR, &gn);
    wamp_err err;
    wamp_buf *b = transcode(WAMP_SER_CBOR, p, n, WAMP_SER_JSON, &err);
    ck_assert_int_eq(err, WAMP_OK);
    assert_bytes(b, GOLD_JSON, strlen(GOLD_JSON), "cbor bignums -> json");
    wamp_buf *c = transcode(WAMP_SER_JSON, wamp_buf_cdata(b), wamp_buf_len(b), WAMP_SER_CBOR, &err);
    assert_bytes(c, g, gn, "-> cbor");
    wamp_buf_unref(&b);
    wamp_buf_unref(&c);
    free(g);
    free(p);
}

END_TEST

/* Every (from, to) pair turns the golden bytes of from into the golden bytes of to. */
START_TEST(test_transcode_gold_every_pair)
{
    wamp_ser from = SERS[_i / 3], to = SERS[_i % 3];
    size_t fn, tn;
    unsigned char *fp = gold(from, &fn);
    unsigned char *tp = gold(to, &tn);
    wamp_err err;
    wamp_buf *b = transcode(from, fp, fn, to, &err);
    ck_assert_msg(err == WAMP_OK, "%s -> %s: %s", wamp_ser_name(from), wamp_ser_name(to),
                  wamp_strerror(err));
    char what[64];
    snprintf(what, sizeof(what), "%s -> %s", wamp_ser_name(from), wamp_ser_name(to));
    assert_bytes(b, tp, tn, what);
    wamp_buf_unref(&b);
    free(fp);
    free(tp);
}

END_TEST

/* Reals keep their type: an integral MessagePack/CBOR float is "1.0" in JSON and a float again
 * on the way back; JSON 1 stays an integer. Shortest round-trip digits. */
START_TEST(test_reals_stay_reals)
{
    static const struct {
        const char *cbor_hex;
        const char *json;
    } cases[] = {
            {"fb3ff0000000000000", "1.0"},
            {"f93c00", "1.0"}, /* half precision 1.0 */
            {"fa3fc00000", "1.5"},
            {"fb3fb999999999999a", "0.1"},
            {"fb7e37e43c8800759c", "1e+300"},
            {"fb0000000000000001", "5e-324"},
            {"fb8000000000000000", "-0.0"},
            {"fbc0c81c8000000000", "-12345.0"},
            {"01", "1"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n;
        unsigned char *p = unhex(cases[i].cbor_hex, &n);
        wamp_err err;
        wamp_buf *j = transcode(WAMP_SER_CBOR, p, n, WAMP_SER_JSON, &err);
        ck_assert_int_eq(err, WAMP_OK);
        assert_bytes(j, cases[i].json, strlen(cases[i].json), cases[i].json);
        wamp_buf *m = transcode(WAMP_SER_JSON, wamp_buf_cdata(j), wamp_buf_len(j), WAMP_SER_MSGPACK,
                                &err);
        ck_assert_int_eq(err, WAMP_OK);
        bool is_real = strcmp(cases[i].json, "1") != 0;
        ck_assert_uint_eq(wamp_buf_cdata(m)[0], is_real ? 0xcb : 0x01);
        wamp_buf_unref(&j);
        wamp_buf_unref(&m);
        free(p);
    }
}

END_TEST

/* The JSON binary convention: "\0" + canonical base64 is binary; "\0" + anything else stays a
 * string (with its NUL) in every serializer; keys are never binary. */
START_TEST(test_json_binary_convention)
{
    static const char *strings[] = {"\"\\u0000AQI\"", "\"\\u0000AQJ=\"", "\"\\u0000h\\u00e9!!\"",
                                    "\"\\u0000AQI==\""};
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        wamp_rd r;
        wamp_tok t;
        wamp_rd_init(&r, WAMP_SER_JSON, strings[i], strlen(strings[i]));
        ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
        ck_assert_msg(t.kind == WAMP_TOK_STR && t.len > 0 && t.p[0] == 0, "%s", strings[i]);
        wamp_rd_fini(&r);
        wamp_err err;
        wamp_buf *b = transcode(WAMP_SER_JSON, strings[i], strlen(strings[i]), WAMP_SER_CBOR, &err);
        ck_assert_int_eq(err, WAMP_OK);
        ck_assert_uint_eq(wamp_buf_cdata(b)[0] >> 5, 3); /* text string */
        wamp_buf_unref(&b);
    }
    const char *key = "{\"\\u0000AQI=\":\"\\u0000\"}";
    wamp_err err;
    wamp_buf *b = transcode(WAMP_SER_JSON, key, strlen(key), WAMP_SER_MSGPACK, &err);
    ck_assert_int_eq(err, WAMP_OK);
    assert_bytes(b, "\x81\xa5\0AQI=\xc4\x00", 9, "key stays a string, empty binary");
    wamp_buf_unref(&b);
}

END_TEST

/* The base64 helpers of the binary convention: the shape check (length, alphabet, padding, no
 * byte >= 0x80), the decoded size, and "\0" + base64 strings on both sides of the stack buffer. */
START_TEST(test_b64_helpers)
{
    size_t n = 99;
    ck_assert(wamp_b64_shape_ok("", 0, &n) && n == 0);
    ck_assert(wamp_b64_shape_ok("AQI=", 4, &n) && n == 2);
    ck_assert(wamp_b64_shape_ok("AQ==", 4, &n) && n == 1);
    ck_assert(wamp_b64_shape_ok("AQID", 4, &n) && n == 3);
    ck_assert(!wamp_b64_shape_ok("AQI", 3, &n));
    ck_assert(!wamp_b64_shape_ok("AQ-=", 4, &n));
    ck_assert(!wamp_b64_shape_ok("A\xc3\xa9=", 4, &n));
    for (size_t len = 0; len < 1024; len += 383) {
        unsigned char *bin = malloc(len + 1);
        ck_assert_ptr_nonnull(bin);
        for (size_t i = 0; i < len; i++) {
            bin[i] = (unsigned char)(i * 7);
        }
        json_t *v = wamp_b64_string_new(bin, len);
        ck_assert_ptr_nonnull(v);
        const char *s = json_string_value(v);
        size_t slen = json_string_length(v);
        ck_assert_uint_eq(slen, 1 + (len + 2) / 3 * 4);
        ck_assert_int_eq(s[0], 0);
        unsigned char *back = malloc(slen);
        ck_assert_ptr_nonnull(back);
        ck_assert(wamp_b64_decode(s + 1, slen - 1, back, &n));
        ck_assert_uint_eq(n, len);
        ck_assert(memcmp(back, bin, len) == 0);
        free(back);
        json_decref(v);
        free(bin);
    }
}

END_TEST

/* JSON escapes decode (surrogate pairs included) and are written back minimally. */
START_TEST(test_json_escapes)
{
    const char *in =
            "[\"\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\\"\\\\\\u001f\\u00e9\", \"x\" , {} ,[ ]]";
    wamp_err err;
    wamp_buf *c = transcode(WAMP_SER_JSON, in, strlen(in), WAMP_SER_CBOR, &err);
    ck_assert_int_eq(err, WAMP_OK);
    wamp_buf *j = transcode(WAMP_SER_CBOR, wamp_buf_cdata(c), wamp_buf_len(c), WAMP_SER_JSON, &err);
    ck_assert_int_eq(err, WAMP_OK);
    const char *want =
            "[\"\xf0\x9f\x98\x80/\\u0008\\u000c\\n\\r\\t\\\"\\\\\\u001f\xc3\xa9\",\"x\",{},[]]";
    assert_bytes(j, want, strlen(want), "escapes");
    wamp_buf_unref(&c);
    wamp_buf_unref(&j);
}

END_TEST

struct bad_case {
    wamp_ser ser;
    const char *in; /* JSON text, or hex for the binary serializers */
    const char *why;
};

static const struct bad_case BAD[] = {
        {WAMP_SER_JSON, "", "truncated"},
        {WAMP_SER_JSON, "[1,2", "expected"},
        {WAMP_SER_JSON, "[1,]", "invalid number"},
        {WAMP_SER_JSON, "[1] x", "trailing"},
        {WAMP_SER_JSON, "{1:2}", "string key"},
        {WAMP_SER_JSON, "{\"a\" 1}", "':'"},
        {WAMP_SER_JSON, "18446744073709551616", "out of range"},
        {WAMP_SER_JSON, "-9223372036854775809", "out of range"},
        {WAMP_SER_JSON, "1e400", "out of range"},
        {WAMP_SER_JSON, "NaN", "invalid number"},
        {WAMP_SER_JSON, "01", "trailing"},
        {WAMP_SER_JSON, "1.", "invalid number"},
        {WAMP_SER_JSON, "\"\\ud800\"", "surrogate"},
        {WAMP_SER_JSON, "\"\\x\"", "escape"},
        {WAMP_SER_JSON, "\"\xc3\"", "UTF-8"},
        {WAMP_SER_JSON, "\"a\nb\"", "control"},
        {WAMP_SER_JSON, "\"abc\\", "unterminated"},
        {WAMP_SER_JSON, "tru", "literal"},
        {WAMP_SER_MSGPACK, "", "truncated"},
        {WAMP_SER_MSGPACK, "c1", "0xc1"},
        {WAMP_SER_MSGPACK, "d40100", "ext"},
        {WAMP_SER_MSGPACK, "c70100", "ext"},
        {WAMP_SER_MSGPACK, "81c0c0", "not a string"},
        {WAMP_SER_MSGPACK, "a2c328", "UTF-8"},
        {WAMP_SER_MSGPACK, "cb7ff8000000000000", "NaN"},
        {WAMP_SER_MSGPACK, "ca7f800000", "NaN"},
        {WAMP_SER_MSGPACK, "9201", "truncated"},
        {WAMP_SER_MSGPACK, "dd7fffffff", "truncated"},
        {WAMP_SER_MSGPACK, "0101", "trailing"},
        {WAMP_SER_MSGPACK, "c4ff00", "truncated"},
        {WAMP_SER_CBOR, "", "truncated"},
        {WAMP_SER_CBOR, "9f01ff", "indefinite"},
        {WAMP_SER_CBOR, "5f4101ff", "indefinite"},
        {WAMP_SER_CBOR, "ff", "break"},
        {WAMP_SER_CBOR, "1c", "reserved"},
        {WAMP_SER_CBOR, "c11a00000000", "tag 1"},
        {WAMP_SER_CBOR, "c249010000000000000000", "out of range"},
        {WAMP_SER_CBOR, "c3488000000000000000", "below"},
        {WAMP_SER_CBOR, "c201", "bignum"},
        {WAMP_SER_CBOR, "3b8000000000000000", "below"},
        {WAMP_SER_CBOR, "f7", "simple"},
        {WAMP_SER_CBOR, "f0", "simple"},
        {WAMP_SER_CBOR, "f820", "simple"},
        {WAMP_SER_CBOR, "fb7ff0000000000000", "NaN"},
        {WAMP_SER_CBOR, "f97e00", "NaN"},
        {WAMP_SER_CBOR, "a10101", "not a string"},
        {WAMP_SER_CBOR, "62c328", "UTF-8"},
        {WAMP_SER_CBOR, "8201", "truncated"},
        {WAMP_SER_CBOR, "9a7fffffff", "truncated"},
        {WAMP_SER_CBOR, "5a00000010", "truncated"},
        {WAMP_SER_CBOR, "0000", "trailing"},
        {WAMP_SER_CBOR, "19ff", "truncated"},
};

START_TEST(test_malformed_refused)
{
    const struct bad_case *c = &BAD[_i];
    size_t n;
    unsigned char *p;
    if (c->ser == WAMP_SER_JSON) {
        n = strlen(c->in);
        p = malloc(n + 1);
        memcpy(p, c->in, n + 1);
    } else {
        p = unhex(c->in, &n);
    }
    char why[160] = "";
    wamp_err err = wamp_rd_validate(c->ser, p, n, why, sizeof(why));
    ck_assert_msg(err == WAMP_EPROTO && strstr(why, c->why), "%s %s: %s (%s)",
                  wamp_ser_name(c->ser), c->in, wamp_strerror(err), why);
    /* The transcoder refuses it too, into every other serializer. */
    for (size_t t = 0; t < 3; t++) {
        if (SERS[t] == c->ser) {
            continue;
        }
        wamp_buf *b = transcode(c->ser, p, n, SERS[t], &err);
        ck_assert_msg(err == WAMP_EPROTO && !b, "%s -> %s: %s", c->in, wamp_ser_name(SERS[t]),
                      wamp_strerror(err));
    }
    free(p);
}

END_TEST

/* Truncating the golden value anywhere is refused by every reader. */
START_TEST(test_every_prefix_refused)
{
    size_t n;
    unsigned char *p = gold(SERS[_i], &n);
    for (size_t k = 0; k < n; k++) {
        ck_assert_msg(wamp_rd_validate(SERS[_i], p, k, NULL, 0) == WAMP_EPROTO, "%s prefix %zu",
                      wamp_ser_name(SERS[_i]), k);
    }
    ck_assert_int_eq(wamp_rd_validate(SERS[_i], p, n, NULL, 0), WAMP_OK);
    free(p);
}

END_TEST

/* Nesting: WAMP_CODEC_MAX_DEPTH containers are fine, one more is refused. */
START_TEST(test_depth_limit)
{
    wamp_ser ser = SERS[_i];
    for (int extra = 0; extra <= 1; extra++) {
        size_t depth = WAMP_CODEC_MAX_DEPTH + (size_t)extra;
        unsigned char *p = malloc(2 * depth);
        size_t n = 0;
        for (size_t d = 0; d < depth; d++) {
            p[n++] = ser == WAMP_SER_JSON ? '[' : ser == WAMP_SER_MSGPACK ? 0x91 : 0x81;
        }
        p[n - 1] = ser == WAMP_SER_JSON ? '[' : ser == WAMP_SER_MSGPACK ? 0x90 : 0x80;
        if (ser == WAMP_SER_JSON) {
            for (size_t d = 0; d < depth; d++) {
                p[n++] = ']';
            }
        }
        wamp_err want = extra ? WAMP_EPROTO : WAMP_OK;
        ck_assert_int_eq(wamp_rd_validate(ser, p, n, NULL, 0), want);
        for (size_t t = 0; t < 3; t++) {
            if (extra && SERS[t] == ser) {
                continue; /* the same serializer is copied as it is */
            }
            wamp_err err;
            wamp_buf *b = transcode(ser, p, n, SERS[t], &err);
            ck_assert_int_eq(err, want);
            if (!extra && SERS[t] != ser) {
                wamp_buf *back = transcode(SERS[t], wamp_buf_cdata(b), wamp_buf_len(b), ser, &err);
                assert_bytes(back, p, n, "deep round trip");
                wamp_buf_unref(&back);
            }
            wamp_buf_unref(&b);
        }
        free(p);
    }
}

END_TEST

/* wamp_rd_skip() hands back each element's bytes. */
START_TEST(test_skip_slices)
{
    const char *in = " [ 1 , {\"a\" : [2, \"x\"]} ,\"s\" ] ";
    wamp_rd r;
    wamp_tok t;
    const unsigned char *p;
    size_t n;
    wamp_rd_init(&r, WAMP_SER_JSON, in, strlen(in));
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert_uint_eq(t.count, 3);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_mem_eq(p, "1", 1);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert_uint_eq(n, strlen("{\"a\" : [2, \"x\"]}"));
    ck_assert_mem_eq(p, "{\"a\" : [2, \"x\"]}", n);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert_mem_eq(p, "\"s\"", 3);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_END && wamp_rd_done(&r));
    wamp_rd_fini(&r);

    size_t cn;
    unsigned char *cp = unhex("83018161781a00010000", &cn);
    wamp_rd_init(&r, WAMP_SER_CBOR, cp, cn);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert(p == cp + 1 && n == 1);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert(p == cp + 2 && n == 3);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert(p == cp + 5 && n == 5);
    wamp_rd_fini(&r);
    free(cp);
}

END_TEST

/* wamp_rd_skip() of a MessagePack container read from its head (a fixarray or fixmap) refuses
 * what wamp_rd_validate() refuses, every prefix and the nesting limit included, and hands back
 * the whole value otherwise, top-level or as an array's element. */
START_TEST(test_mp_skip_fix_agrees)
{
    static const unsigned char val[] = {0x93, 0x01, 0x82, 0xa1, 'a', 0x90, 0xa1,
                                        'b',  0xc3, 0xd9, 3,    'x', 'y',  'z'};
    for (size_t len = 0; len <= sizeof(val); len++) {
        wamp_rd r;
        const unsigned char *p = NULL;
        size_t n = 0;
        wamp_err want = wamp_rd_validate(WAMP_SER_MSGPACK, val, len, NULL, 0);
        wamp_rd_init(&r, WAMP_SER_MSGPACK, val, len);
        ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), want);
        ck_assert(want != WAMP_OK || (p == val && n == len && wamp_rd_done(&r)));
        wamp_rd_fini(&r);
    }
    /* A map key that is not a string; invalid UTF-8 inside; as the element of an array. */
    static const unsigned char bad_key[] = {0x81, 0x01, 0x02};
    static const unsigned char bad_utf8[] = {0x91, 0xa1, 0xff};
    static const unsigned char bad_utf8_str8[] = {0x91, 0xd9, 0x01, 0xff};
    static const unsigned char outer[] = {0x92, 0x91, 0x01, 0x80};
    wamp_rd r;
    const unsigned char *p;
    size_t n;
    wamp_tok t;
    wamp_tok_kind kind;
    wamp_rd_init(&r, WAMP_SER_MSGPACK, bad_key, sizeof(bad_key));
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_EPROTO);
    wamp_rd_fini(&r);
    wamp_rd_init(&r, WAMP_SER_MSGPACK, bad_utf8, sizeof(bad_utf8));
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_EPROTO);
    wamp_rd_fini(&r);
    wamp_rd_init(&r, WAMP_SER_MSGPACK, bad_utf8_str8, sizeof(bad_utf8_str8));
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_EPROTO);
    ck_assert_str_eq(wamp_rd_why(&r), "invalid UTF-8 in string at offset 1");
    wamp_rd_fini(&r);
    wamp_rd_init(&r, WAMP_SER_MSGPACK, outer, sizeof(outer));
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, &kind), WAMP_OK);
    ck_assert(p == outer + 1 && n == 2 && kind == WAMP_TOK_ARRAY);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, &kind), WAMP_OK);
    ck_assert(p == outer + 3 && n == 1 && kind == WAMP_TOK_MAP);
    ck_assert(wamp_rd_at_end(&r));
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_END && wamp_rd_done(&r));
    wamp_rd_fini(&r);
    /* Nesting: at the limit, and one beyond it. */
    unsigned char deep[WAMP_CODEC_MAX_DEPTH + 2];
    for (size_t depth = WAMP_CODEC_MAX_DEPTH; depth <= WAMP_CODEC_MAX_DEPTH + 1; depth++) {
        memset(deep, 0x91, depth);
        deep[depth] = 0x01;
        wamp_rd_init(&r, WAMP_SER_MSGPACK, deep, depth + 1);
        ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL),
                         wamp_rd_validate(WAMP_SER_MSGPACK, deep, depth + 1, NULL, 0));
        wamp_rd_fini(&r);
    }
}

END_TEST

/* A reader started inside an array reads its remaining elements and END with the usual rules:
 * a count short of the elements there leaves trailing bytes, one beyond them is truncated. */
START_TEST(test_init_in_array)
{
    /* MessagePack [1, "ab", [2]]: read from the string on, two elements left. */
    static const unsigned char mp[] = {0x93, 0x01, 0xa2, 'a', 'b', 0x91, 0x02};
    wamp_rd r;
    wamp_tok t;
    const unsigned char *p;
    size_t n;
    wamp_tok_kind kind;
    wamp_rd_init_in_array(&r, WAMP_SER_MSGPACK, mp, sizeof(mp), 2, 2);
    ck_assert(!wamp_rd_at_end(&r));
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_STR && t.len == 2 && memcmp(t.p, "ab", 2) == 0);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, &kind), WAMP_OK);
    ck_assert(kind == WAMP_TOK_ARRAY && p == mp + 5 && n == 2);
    ck_assert(wamp_rd_at_end(&r));
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_END && wamp_rd_done(&r));
    wamp_rd_fini(&r);
    wamp_rd_init_in_array(&r, WAMP_SER_MSGPACK, mp, sizeof(mp), 2, 1);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_EPROTO); /* [2] follows the END */
    wamp_rd_fini(&r);
    wamp_rd_init_in_array(&r, WAMP_SER_MSGPACK, mp, sizeof(mp), 2, 3);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
    ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_EPROTO);
    wamp_rd_fini(&r);
    /* CBOR [1, "ab"], from the string on. */
    static const unsigned char cb[] = {0x82, 0x01, 0x62, 'a', 'b'};
    wamp_rd_init_in_array(&r, WAMP_SER_CBOR, cb, sizeof(cb), 2, 1);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_STR && t.len == 2);
    ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
    ck_assert(t.kind == WAMP_TOK_END && wamp_rd_done(&r));
    wamp_rd_fini(&r);
}

END_TEST

/* wamp_rd_next_is_container(): the next value of [1, [], {}, "x"] is a container for the
 * second and third elements only, in every serializer, and the peek reads nothing. */
START_TEST(test_next_is_container)
{
    static const struct {
        wamp_ser ser;
        const char *p;
        size_t n;
    } in[] = {
            {WAMP_SER_JSON, "[1 , [] ,{}, \"x\"]", 17},
            {WAMP_SER_MSGPACK, "\x94\x01\x90\x80\xa1x", 6},
            {WAMP_SER_MSGPACK, "\x94\x01\xdc\x00\x00\xde\x00\x00\xa1x", 10},
            {WAMP_SER_CBOR, "\x84\x01\x80\xa0\x61x", 6},
    };

    static const bool want[] = {false, true, true, false};
    for (size_t c = 0; c < sizeof(in) / sizeof(in[0]); c++) {
        wamp_rd r;
        wamp_tok t;
        const unsigned char *p;
        size_t n;
        wamp_rd_init_one_pass(&r, in[c].ser, in[c].p, in[c].n);
        ck_assert(wamp_rd_next_is_container(&r));
        ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
        ck_assert(t.kind == WAMP_TOK_ARRAY);
        for (size_t i = 0; i < 4; i++) {
            ck_assert_msg(wamp_rd_next_is_container(&r) == want[i], "case %zu element %zu", c, i);
            ck_assert_msg(wamp_rd_next_is_container(&r) == want[i], "case %zu element %zu", c, i);
            ck_assert_int_eq(wamp_rd_skip(&r, &p, &n, NULL), WAMP_OK);
        }
        ck_assert(!wamp_rd_next_is_container(&r)); /* the list's end */
        ck_assert_int_eq(wamp_rd_next(&r, &t), WAMP_OK);
        ck_assert(t.kind == WAMP_TOK_END && wamp_rd_done(&r));
        ck_assert(!wamp_rd_next_is_container(&r));
        wamp_rd_fini(&r);
    }
}

END_TEST

/* wamp_codec_decode_value(): uint64 above INT64_MAX is WAMP_ERANGE naming the value; NUL keys
 * and binary come through; CBOR through wamp_codec_decode()/encode() round-trips. */
START_TEST(test_decode_value)
{
    json_t *v = NULL;
    char why[160] = "";
    const unsigned char big[] = {0x81, 0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    ck_assert_int_eq(wamp_codec_decode_value(WAMP_SER_CBOR, big, sizeof(big), &v, why, sizeof(why)),
                     WAMP_ERANGE);
    ck_assert_ptr_null(v);
    ck_assert_msg(strstr(why, "18446744073709551615"), "%s", why);
    /* Malformed input after the big integer is malformed input, not a range error. */
    const unsigned char bad_after[] = {0x82, 0x1b, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0xff};
    ck_assert_int_eq(wamp_codec_decode_value(WAMP_SER_CBOR, bad_after, sizeof(bad_after), &v, why,
                                             sizeof(why)),
                     WAMP_EPROTO);
    const unsigned char dup[] = {0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02};
    ck_assert_int_eq(wamp_codec_decode_value(WAMP_SER_CBOR, dup, sizeof(dup), &v, why, sizeof(why)),
                     WAMP_EPROTO);
    size_t n;
    unsigned char *p = unhex("a2626b0042010263610062f93c00", &n);
    ck_assert_int_eq(wamp_codec_decode(WAMP_SER_CBOR, p, n, &v, why, sizeof(why)), WAMP_OK);
    ck_assert_uint_eq(json_object_size(v), 2);
    json_t *b = json_object_getn(v, "k\0", 2);
    ck_assert_uint_eq(json_string_length(b), 5);
    ck_assert_mem_eq(json_string_value(b), "\0AQI=", 5);
    ck_assert(json_real_value(json_object_getn(v, "a\0b", 3)) == 1.0);
    wamp_buf *enc = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_CBOR, v, &enc), WAMP_OK);
    json_t *back = NULL;
    ck_assert_int_eq(wamp_codec_decode(WAMP_SER_CBOR, wamp_buf_cdata(enc), wamp_buf_len(enc), &back,
                                       NULL, 0),
                     WAMP_OK);
    ck_assert_uint_eq(json_object_size(back), 2);
    ck_assert(json_equal(json_object_getn(back, "k\0", 2), b));
    ck_assert(json_real_value(json_object_getn(back, "a\0b", 3)) == 1.0);
    json_decref(back);
    json_decref(v);
    wamp_buf_unref(&enc);
    free(p);
}

END_TEST

/* --- Property test --------------------------------------------------------------------------- */

/* A random value as the token list it must read back as. */
struct gen {
    uint64_t s;
    wamp_tok *toks;
    unsigned char *heap; /* string/binary bytes */
    size_t n, cap, heap_len;
};

static uint64_t rnd(struct gen *g)
{
    g->s ^= g->s << 13;
    g->s ^= g->s >> 7;
    g->s ^= g->s << 17;
    return g->s;
}

static wamp_tok *gen_push(struct gen *g)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 64;
        g->toks = realloc(g->toks, g->cap * sizeof(*g->toks));
        ck_assert_ptr_nonnull(g->toks);
    }
    wamp_tok *t = &g->toks[g->n++];
    memset(t, 0, sizeof(*t));
    return t;
}

/* Random bytes into the heap; strings are valid UTF-8 with NULs and multibyte characters, but
 * never start with NUL (a JSON "\0" + base64 string is binary by the convention). */
static size_t gen_bytes(struct gen *g, size_t len, bool text)
{
    size_t at = g->heap_len;
    g->heap = realloc(g->heap, g->heap_len + len * 4 + 1);
    ck_assert_ptr_nonnull(g->heap);
    for (size_t i = 0; i < len; i++) {
        uint64_t r = rnd(g);
        if (!text) {
            g->heap[g->heap_len++] = (unsigned char)r;
        } else if (r % 7 == 0 && i > 0) {
            g->heap[g->heap_len++] = 0;
        } else if (r % 11 == 0) {
            memcpy(g->heap + g->heap_len, "\xe2\x82\xac", 3); /* U+20AC */
            g->heap_len += 3;
        } else {
            g->heap[g->heap_len++] = (unsigned char)(0x20 + (r >> 8) % 0x5f);
        }
    }
    return at;
}

static const uint64_t EDGE_U[] = {0,
                                  1,
                                  23,
                                  24,
                                  255,
                                  256,
                                  65535,
                                  65536,
                                  4294967295ULL,
                                  4294967296ULL,
                                  9007199254740992ULL,
                                  (uint64_t)INT64_MAX,
                                  (uint64_t)INT64_MAX + 1,
                                  UINT64_MAX};
static const double EDGE_D[] = {1.0, -0.0,   0.5,        1e300, 5e-324, -1.7976931348623157e308,
                                0.1, 3.0e-7, 123456789.0};

static void gen_value(struct gen *g, unsigned depth)
{
    uint64_t r = rnd(g);
    unsigned kind = (unsigned)(r % (depth < 5 ? 10 : 7));
    wamp_tok *t = gen_push(g);
    switch (kind) {
    case 0:
        t->kind = WAMP_TOK_NULL;
        break;
    case 1:
        t->kind = WAMP_TOK_BOOL;
        t->b = (r >> 8) & 1;
        break;
    case 2: {
        uint64_t u = (r >> 8) % 3 == 0 ? EDGE_U[(r >> 16) % 14] : rnd(g) >> ((r >> 16) % 64);
        bool neg = (r >> 24) & 1;
        if (neg && u <= (uint64_t)INT64_MAX + 1) {
            t->kind = WAMP_TOK_INT;
            t->i = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
        } else if (u > INT64_MAX) {
            t->kind = WAMP_TOK_UINT;
            t->u = u;
        } else {
            t->kind = WAMP_TOK_INT;
            t->i = (int64_t)u;
        }
        break;
    }
    case 3: {
        t->kind = WAMP_TOK_REAL;
        if ((r >> 8) % 2) {
            t->d = EDGE_D[(r >> 16) % 9];
        } else {
            uint64_t bits = rnd(g);
            memcpy(&t->d, &bits, sizeof(double));
            if (!isfinite(t->d)) {
                t->d = (double)(int64_t)bits / 3.0;
            }
        }
        break;
    }
    case 4:
    case 5: {
        t->kind = WAMP_TOK_STR;
        size_t at = gen_bytes(g, (r >> 8) % 12, true);
        t->len = g->heap_len - at;
        t->u = at; /* heap offset until the end (the heap moves) */
        break;
    }
    case 6: {
        t->kind = WAMP_TOK_BIN;
        size_t at = gen_bytes(g, (r >> 8) % 9, false);
        t->len = g->heap_len - at;
        t->u = at;
        break;
    }
    default: {
        bool is_map = kind == 9;
        size_t count = (r >> 8) % 5;
        size_t idx = g->n - 1;
        t->kind = is_map ? WAMP_TOK_MAP : WAMP_TOK_ARRAY;
        t->count = count;
        for (size_t i = 0; i < count; i++) {
            if (is_map) {
                wamp_tok *k = gen_push(g);
                k->kind = WAMP_TOK_STR;
                k->is_key = true;
                /* Distinct keys: a prefix byte per index, then random text (NULs included). */
                size_t at = g->heap_len;
                g->heap = realloc(g->heap, g->heap_len + 1);
                g->heap[g->heap_len++] = (unsigned char)('a' + i);
                gen_bytes(g, rnd(g) % 6, true);
                k->len = g->heap_len - at;
                k->u = at;
            }
            gen_value(g, depth + 1);
        }
        (void)idx;
        wamp_tok *e = gen_push(g);
        e->kind = WAMP_TOK_END;
        e->is_map = is_map;
        break;
    }
    }
}

static void write_tokens(wamp_wr *w, const struct gen *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const wamp_tok *t = &g->toks[i];
        const char *s = t->kind == WAMP_TOK_STR || t->kind == WAMP_TOK_BIN
                                ? (const char *)g->heap + t->u
                                : NULL;
        switch (t->kind) {
        case WAMP_TOK_NULL:
            wamp_wr_null(w);
            break;
        case WAMP_TOK_BOOL:
            wamp_wr_bool(w, t->b);
            break;
        case WAMP_TOK_INT:
            wamp_wr_int(w, t->i);
            break;
        case WAMP_TOK_UINT:
            wamp_wr_uint(w, t->u);
            break;
        case WAMP_TOK_REAL:
            wamp_wr_real(w, t->d);
            break;
        case WAMP_TOK_STR:
            if (t->is_key) {
                wamp_wr_keyn(w, s, t->len);
            } else {
                wamp_wr_strn(w, s, t->len);
            }
            break;
        case WAMP_TOK_BIN:
            wamp_wr_bin(w, s, t->len);
            break;
        case WAMP_TOK_ARRAY:
            wamp_wr_array(w, t->count);
            break;
        case WAMP_TOK_MAP:
            wamp_wr_map(w, t->count);
            break;
        case WAMP_TOK_END:
            wamp_wr_end(w);
            break;
        }
    }
}

static void assert_tokens(const struct gen *g, wamp_ser ser, const wamp_buf *b, const char *what)
{
    wamp_rd r;
    wamp_tok t;
    wamp_rd_init(&r, ser, wamp_buf_cdata(b), wamp_buf_len(b));
    for (size_t i = 0; i < g->n; i++) {
        const wamp_tok *w = &g->toks[i];
        ck_assert_msg(wamp_rd_next(&r, &t) == WAMP_OK, "%s: token %zu: %s", what, i,
                      wamp_rd_why(&r));
        ck_assert_msg(t.kind == w->kind, "%s: token %zu kind %d, want %d", what, i, t.kind,
                      w->kind);
        switch (t.kind) {
        case WAMP_TOK_BOOL:
            ck_assert(t.b == w->b);
            break;
        case WAMP_TOK_INT:
            ck_assert_msg(t.i == w->i, "%s: %lld != %lld", what, (long long)t.i, (long long)w->i);
            break;
        case WAMP_TOK_UINT:
            ck_assert(t.u == w->u);
            break;
        case WAMP_TOK_REAL:
            ck_assert_msg(memcmp(&t.d, &w->d, sizeof(double)) == 0, "%s: %.17g != %.17g", what, t.d,
                          w->d);
            break;
        case WAMP_TOK_STR:
        case WAMP_TOK_BIN:
            ck_assert_msg(t.len == w->len && memcmp(t.p, g->heap + w->u, t.len) == 0 &&
                                  t.is_key == w->is_key,
                          "%s: token %zu bytes differ", what, i);
            break;
        case WAMP_TOK_ARRAY:
        case WAMP_TOK_MAP:
            ck_assert_uint_eq(t.count, w->count);
            break;
        case WAMP_TOK_END:
            ck_assert(t.is_map == w->is_map);
            break;
        case WAMP_TOK_NULL:
            break;
        }
    }
    ck_assert_msg(wamp_rd_done(&r), "%s: not done", what);
    wamp_rd_fini(&r);
}

START_TEST(test_property_every_pair)
{
    /* Seeded and reproducible: a failure names its seed. */
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        struct gen g = {.s = seed * 0x9e3779b97f4a7c15ULL};
        gen_value(&g, 0);
        for (size_t si = 0; si < 3; si++) {
            wamp_wr w;
            wamp_buf *src = NULL;
            wamp_wr_init(&w, (int)SERS[si], 64, 0);
            write_tokens(&w, &g);
            ck_assert_msg(wamp_wr_finish_buf(&w, &src) == WAMP_OK, "seed %llu: write %s",
                          (unsigned long long)seed, wamp_ser_name(SERS[si]));
            wamp_wr_fini(&w);
            char what[96];
            snprintf(what, sizeof(what), "seed %llu %s", (unsigned long long)seed,
                     wamp_ser_name(SERS[si]));
            assert_tokens(&g, SERS[si], src, what);
            for (size_t ti = 0; ti < 3; ti++) {
                wamp_err err;
                wamp_buf *dst =
                        transcode(SERS[si], wamp_buf_cdata(src), wamp_buf_len(src), SERS[ti], &err);
                snprintf(what, sizeof(what), "seed %llu %s -> %s", (unsigned long long)seed,
                         wamp_ser_name(SERS[si]), wamp_ser_name(SERS[ti]));
                ck_assert_msg(err == WAMP_OK, "%s: %s", what, wamp_strerror(err));
                assert_tokens(&g, SERS[ti], dst, what);
                wamp_buf_unref(&dst);
            }
            wamp_buf_unref(&src);
        }
        free(g.toks);
        free(g.heap);
    }
}

END_TEST

/* v (n bytes of ser) as the only element of an array, read in one pass and skipped: *slice the
 * element's bytes. Returns the first error of the skip or of the array's END. */
static wamp_err skip_wrapped(wamp_ser ser, const unsigned char *v, size_t n, bool *slice_ok)
{
    unsigned char *w = malloc(n + 2);
    size_t wn = 0;
    w[wn++] = ser == WAMP_SER_JSON ? '[' : ser == WAMP_SER_MSGPACK ? 0x91 : 0x81;
    memcpy(w + wn, v, n);
    wn += n;
    if (ser == WAMP_SER_JSON) {
        w[wn++] = ']';
    }
    wamp_rd r;
    wamp_tok t;
    const unsigned char *p = NULL;
    size_t pn = 0;
    wamp_rd_init_one_pass(&r, ser, w, wn);
    wamp_err err = wamp_rd_next(&r, &t); /* fails only when v is empty (MessagePack, CBOR) */
    ck_assert(err == WAMP_OK ? t.count == (ser == WAMP_SER_JSON ? 0 : 1) : n == 0);
    if (err == WAMP_OK) {
        err = wamp_rd_skip(&r, &p, &pn, NULL);
    }
    *slice_ok = err == WAMP_OK && p == w + 1 && pn == n;
    if (err == WAMP_OK) {
        bool at_end = wamp_rd_at_end(&r);
        err = wamp_rd_next(&r, &t);
        ck_assert(err != WAMP_OK || (at_end && t.kind == WAMP_TOK_END && wamp_rd_done(&r)));
    }
    wamp_rd_fini(&r);
    free(w);
    return err;
}

/* The one-pass reader and the skip (MessagePack's token-free scan) accept exactly what the
 * validating pre-pass accepts: the golden values and the property generator's values come back
 * as the same slices, every malformed case and every truncated golden value is refused. */
START_TEST(test_skip_one_pass_agrees)
{
    bool ok;
    for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
        const struct bad_case *c = &BAD[i];
        size_t n;
        unsigned char *p;
        if (c->ser == WAMP_SER_JSON) {
            n = strlen(c->in);
            p = malloc(n + 1);
            memcpy(p, c->in, n + 1);
        } else {
            p = unhex(c->in, &n);
        }
        ck_assert_msg(skip_wrapped(c->ser, p, n, &ok) != WAMP_OK, "%s %s", wamp_ser_name(c->ser),
                      c->in);
        free(p);
    }
    for (size_t si = 0; si < 3; si++) {
        size_t n;
        unsigned char *p = gold(SERS[si], &n);
        ck_assert_int_eq(skip_wrapped(SERS[si], p, n, &ok), WAMP_OK);
        ck_assert(ok);
        for (size_t k = 0; k < n; k++) {
            ck_assert_msg(wamp_rd_validate(SERS[si], p, k, NULL, 0) != WAMP_OK &&
                                  skip_wrapped(SERS[si], p, k, &ok) != WAMP_OK,
                          "%s prefix %zu", wamp_ser_name(SERS[si]), k);
        }
        free(p);
    }
    for (uint64_t seed = 1; seed <= 500; seed++) {
        struct gen g = {.s = seed * 0x9e3779b97f4a7c15ULL};
        gen_value(&g, 0);
        for (size_t si = 0; si < 3; si++) {
            wamp_wr w;
            wamp_buf *src = NULL;
            wamp_wr_init(&w, (int)SERS[si], 64, 0);
            write_tokens(&w, &g);
            ck_assert(wamp_wr_finish_buf(&w, &src) == WAMP_OK);
            wamp_wr_fini(&w);
            ck_assert_msg(skip_wrapped(SERS[si], wamp_buf_cdata(src), wamp_buf_len(src), &ok) ==
                                          WAMP_OK &&
                                  ok,
                          "seed %llu %s", (unsigned long long)seed, wamp_ser_name(SERS[si]));
            wamp_buf_unref(&src);
        }
        free(g.toks);
        free(g.heap);
    }
}

END_TEST

/* JSON strings are scanned 8 bytes at a time where they need no unescaping or UTF-8 check: a
 * special byte anywhere in or around such a word is still seen. */
START_TEST(test_json_string_words)
{
    static const struct {
        const char *in, *out; /* out NULL: refused */
    } mid[] = {{"\\n", "\n"},      {"\\\"", "\""},         {"\xc3\xa9", "\xc3\xa9"}, {"\xff", NULL},
               {"\x01", NULL},     {"\x1f", NULL},         {"\x7f", "\x7f"},         {" ", " "},
               {"\xe2\x82", NULL}, {"\\u00e9", "\xc3\xa9"}};

    for (size_t c = 0; c < sizeof(mid) / sizeof(mid[0]); c++) {
        for (size_t k = 0; k < 18; k++) {
            for (size_t m = 0; m < 10; m++) {
                char in[64], out[64];
                size_t n = 0, on = 0;
                in[n++] = '"';
                for (size_t i = 0; i < k; i++) {
                    in[n++] = out[on++] = (char)('a' + i % 26);
                }
                memcpy(in + n, mid[c].in, strlen(mid[c].in));
                n += strlen(mid[c].in);
                if (mid[c].out) {
                    memcpy(out + on, mid[c].out, strlen(mid[c].out));
                    on += strlen(mid[c].out);
                }
                for (size_t i = 0; i < m; i++) {
                    in[n++] = out[on++] = (char)('z' - i);
                }
                in[n++] = '"';
                wamp_rd r;
                wamp_tok t;
                wamp_rd_init_one_pass(&r, WAMP_SER_JSON, in, n);
                wamp_err err = wamp_rd_next(&r, &t);
                if (!mid[c].out) {
                    ck_assert_msg(err == WAMP_EPROTO, "case %zu k %zu m %zu accepted", c, k, m);
                } else {
                    ck_assert_msg(err == WAMP_OK && t.kind == WAMP_TOK_STR && t.len == on &&
                                          memcmp(t.p, out, on) == 0,
                                  "case %zu k %zu m %zu", c, k, m);
                }
                wamp_rd_fini(&r);
            }
        }
    }
}

END_TEST

/* wamp_utf8_valid() takes ASCII 8 and 32 bytes at a time: a non-ASCII sequence anywhere in a
 * long run is still checked. */
START_TEST(test_utf8_long_runs)
{
    static const struct {
        const char *seq;
        bool ok;
    } seqs[] = {{"\xc3\xa9", true}, {"\xf0\x9f\x98\x80", true}, {"\xff", false},
                {"\xc3", false},    {"\xed\xa0\x80", false},    {"\x80", false}};

    unsigned char buf[128];
    for (size_t c = 0; c < sizeof(seqs) / sizeof(seqs[0]); c++) {
        size_t sl = strlen(seqs[c].seq);
        for (size_t len = 0; len + sl <= sizeof(buf); len += 7) {
            for (size_t at = 0; at <= len; at++) {
                memset(buf, 'a', sizeof(buf));
                memcpy(buf + at, seqs[c].seq, sl);
                ck_assert_msg(wamp_utf8_valid(buf, len + sl) == seqs[c].ok, "seq %zu at %zu of %zu",
                              c, at, len + sl);
            }
        }
    }
}

END_TEST

/* p[0..n) (an array in ser) read element by element with wamp_rd_json() (JSON in one pass),
 * which takes a fast path for an array's small scalars, against the same array read whole (the
 * token path). */
static void assert_elementwise_like_whole(wamp_ser ser, const unsigned char *p, size_t n,
                                          const char *what)
{
    wamp_rd r;
    wamp_tok t;
    json_t *whole = NULL;
    wamp_rd_init(&r, ser, p, n);
    wamp_err want = wamp_rd_json(&r, &whole);
    wamp_rd_fini(&r);
    wamp_rd_init_one_pass(&r, ser, p, n);
    wamp_err err = wamp_rd_next(&r, &t);
    json_t *parts = json_array();
    while (err == WAMP_OK && !wamp_rd_done(&r)) {
        if (wamp_rd_at_end(&r)) {
            err = wamp_rd_next(&r, &t);
            continue;
        }
        json_t *v = NULL;
        err = wamp_rd_json(&r, &v);
        if (err == WAMP_OK) {
            json_array_append_new(parts, v);
        }
    }
    ck_assert_msg(err == want, "%s: %s against %s", what, wamp_strerror(err), wamp_strerror(want));
    if (want == WAMP_OK) {
        /* Compared as text: json_equal() looks keys up as C strings (keys may hold NUL). */
        size_t flags = JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17);
        char *a = json_dumps(whole, flags), *b = json_dumps(parts, flags);
        ck_assert_msg(a && b && strcmp(a, b) == 0, "%s: values differ: %s %s", what, a, b);
        free(a);
        free(b);
    }
    json_decref(parts);
    json_decref(whole);
    wamp_rd_fini(&r);
}

START_TEST(test_mp_envelope_fast_path)
{
    static const char *const hex[] = {
            "9a00017fe0ffcc80cd0100ce00010000cf7fffffffffffffff", /* integers */
            "9180",
            "938081a1610180", /* empty map, maps */
            "94a0a161bf"
            "616161616161616161616161616161616161616161616161616161616161"
            "d90361c3a9", /* strings */
            "91cf8000000000000000",
            "92a1ff01",
            "92a2c3",
            "91d9",
            "91d90561",
            "91cc",
            "91cd00",
            "92a161",
            "93d90001c0",
            "9180c1",
            "91dc0000",
    };
    for (size_t i = 0; i < sizeof(hex) / sizeof(hex[0]); i++) {
        size_t n;
        unsigned char *p = unhex(hex[i], &n);
        assert_elementwise_like_whole(WAMP_SER_MSGPACK, p, n, hex[i]);
        free(p);
    }
    static const char *const js[] = {
            "[0,-0,1,-1,123456789012345678,-123456789012345678,1234567890123456789]",
            "[-9223372036854775808,18446744073709551615]",
            "[01]",
            "[-]",
            "[1.5,2e3,-0.0,3E1]",
            "[\"\",\"a\",\"abcdefghijklmnopq\",\"\xc3\xa9\xc3\xa9\",\"a\\u0000\"]",
            "[\"\xff\"]",
            "[\"ab\x01\"]",
            "[\"abc",
            "[ { } ,{\"a\":1}, {}]",
            "[{ ]",
            "[1 2]",
            "[1,]",
            "[,1]",
            " [ 7 , \"x\" , { } ] ",
            "[[],{},[1,{}]]",
            "[true,false,null]",
            "[\"\\u0000AAEC\"]"};
    for (size_t i = 0; i < sizeof(js) / sizeof(js[0]); i++) {
        assert_elementwise_like_whole(WAMP_SER_JSON, (const unsigned char *)js[i], strlen(js[i]),
                                      js[i]);
    }
    for (uint64_t seed = 1; seed <= 500; seed++) {
        struct gen g = {.s = seed * 0x9e3779b97f4a7c15ULL};
        gen_value(&g, 0);
        for (size_t si = 0; si < 2; si++) {
            wamp_wr w;
            wamp_buf *src = NULL;
            wamp_wr_init(&w, (int)SERS[si], 64, 0);
            write_tokens(&w, &g);
            ck_assert(wamp_wr_finish_buf(&w, &src) == WAMP_OK);
            wamp_wr_fini(&w);
            const unsigned char *b = wamp_buf_cdata(src);
            if (wamp_buf_len(src) > 0 &&
                (SERS[si] == WAMP_SER_JSON ? b[0] == '[' : (b[0] & 0xf0) == 0x90)) {
                char what[32];
                snprintf(what, sizeof(what), "seed %llu %s", (unsigned long long)seed,
                         wamp_ser_name(SERS[si]));
                assert_elementwise_like_whole(SERS[si], b, wamp_buf_len(src), what);
            }
            wamp_buf_unref(&src);
        }
        free(g.toks);
        free(g.heap);
    }
}

END_TEST

static Suite *wamp_rd_suite(void)
{
    Suite *s = suite_create("wamp_rd");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_gold_tokens_every_serializer, 0, 3);
    tcase_add_test(tc, test_cbor_bignums_read_as_integers);
    tcase_add_loop_test(tc, test_transcode_gold_every_pair, 0, 9);
    tcase_add_test(tc, test_reals_stay_reals);
    tcase_add_test(tc, test_json_binary_convention);
    tcase_add_test(tc, test_b64_helpers);
    tcase_add_test(tc, test_json_escapes);
    tcase_add_test(tc, test_json_string_words);
    tcase_add_test(tc, test_utf8_long_runs);
    tcase_add_loop_test(tc, test_malformed_refused, 0, (int)(sizeof(BAD) / sizeof(BAD[0])));
    tcase_add_loop_test(tc, test_every_prefix_refused, 0, 3);
    tcase_add_loop_test(tc, test_depth_limit, 0, 3);
    tcase_add_test(tc, test_skip_slices);
    tcase_add_test(tc, test_init_in_array);
    tcase_add_test(tc, test_next_is_container);
    tcase_add_test(tc, test_mp_skip_fix_agrees);
    tcase_add_test(tc, test_skip_one_pass_agrees);
    tcase_add_test(tc, test_mp_envelope_fast_path);
    tcase_add_test(tc, test_decode_value);
    tcase_add_test(tc, test_property_every_pair);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_rd_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
