/* check_wamp_codec.c: JSON and MessagePack codecs: round trips of every message type,
 * cross-serializer conversion, golden vectors made by python3-msgpack (tests/data), exact byte
 * encodings of every MessagePack format width, and rejection of malformed or hostile input
 * (truncation at every length, 4 GiB length prefixes, bad UTF-8, ext types, depth limits). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "wamp_buf.h"
#include "wamp_codec.h"
#include "wamp_json.h"

/* Byte-string literal and its length (without the terminating NUL). Split literals after a
 * \x escape when a hex digit follows: "\xa1" "a". */
#define BYTES(s) (const unsigned char *)(s), sizeof(s) - 1

static const wamp_ser both_sers[] = {WAMP_SER_JSON, WAMP_SER_MSGPACK};

static json_t *jload(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    ck_assert_msg(v != NULL, "test input '%s' is not JSON: %s", text, err.text);
    return v;
}

static char *jdump(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void assert_json_eq(const json_t *got, const json_t *want, const char *ctx)
{
    ck_assert_ptr_nonnull(got);
    if (!json_equal(got, want)) {
        char *g = jdump(got);
        char *w = jdump(want);
        ck_abort_msg("%s: got %.300s, expected %.300s", ctx, g, w);
    }
}

static json_t *decode_ok(wamp_ser ser, const void *data, size_t len)
{
    json_t *v = NULL;
    char why[WAMP_WHY_LEN] = "";
    wamp_err err = wamp_codec_decode(ser, data, len, &v, why, sizeof(why));
    ck_assert_msg(err == WAMP_OK, "%s decode failed: %s (%s)", wamp_ser_name(ser),
                  wamp_strerror(err), why);
    ck_assert_ptr_nonnull(v);
    return v;
}

/* Decodes expecting WAMP_EPROTO with a non-empty reason that contains want (if not NULL). */
static void decode_proto(wamp_ser ser, const void *data, size_t len, const char *want)
{
    json_t *v = (json_t *)&v; /* must be overwritten with NULL */
    char why[WAMP_WHY_LEN] = "";
    wamp_err err = wamp_codec_decode(ser, data, len, &v, why, sizeof(why));
    ck_assert_msg(err == WAMP_EPROTO, "%s: expected EPROTO, got %s", wamp_ser_name(ser),
                  wamp_strerror(err));
    ck_assert_ptr_null(v);
    ck_assert_msg(why[0] != '\0', "empty reason");
    if (want) {
        ck_assert_msg(strstr(why, want) != NULL, "reason '%s' lacks '%s'", why, want);
    }
}

static wamp_buf *encode_ok(wamp_ser ser, const json_t *v)
{
    wamp_buf *b = NULL;
    wamp_err err = wamp_codec_encode(ser, v, &b);
    ck_assert_msg(err == WAMP_OK, "%s encode failed: %s", wamp_ser_name(ser), wamp_strerror(err));
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(wamp_buf_refs(b), 1);
    return b;
}

static void assert_bytes(const wamp_buf *b, const void *want, size_t len, const char *ctx)
{
    ck_assert_msg(wamp_buf_len(b) == len, "%s: length %zu, expected %zu", ctx, wamp_buf_len(b),
                  len);
    ck_assert_msg(memcmp(wamp_buf_cdata(b), want, len) == 0, "%s: bytes differ", ctx);
}

/* ---- round trips ---- */

/* Every message type, with binary values, unicode, 2^53 ids, int64 extremes, reals and nesting.
 * Unicode is written as JSON escapes: U+65E5 U+672C U+8A9E, U+1F389 as a surrogate pair. */
static const char *const messages[] = {
        "[1,\"realm1\",{\"roles\":{\"caller\":{\"features\":{\"progressive_call_results\":true}}},"
        "\"authmethods\":[\"anonymous\",\"ticket\"]}]",
        "[2,9007199254740992,{\"roles\":{\"broker\":{},\"dealer\":{}},\"authrole\":\"user\"}]",
        "[3,{\"message\":\"no\"},\"wamp.error.no_such_realm\"]",
        "[4,\"wampcra\",{\"challenge\":\"{\\\"nonce\\\":1}\",\"iterations\":1000,\"keylen\":32}]",
        "[5,\"gir1mSx+deCDUV7wRM5SGIn/+R/ClqLZuH4m7FJeBVI=\",{}]",
        "[6,{},\"wamp.close.normal\"]",
        "[8,48,9007199254740992,{},\"wamp.error.runtime_error\",[\"boom\",-1],{\"t\":[1,2.5]}]",
        "[16,1,{\"acknowledge\":true},\"com.t\",[\"\\u0000AAEC/w==\",\"\\u65e5\\u672c\\u8a9e "
        "\\ud83c\\udf89\",-9223372036854775808,9223372036854775807,1.5,-0.25,1e-300,0.1,null,"
        "true,false],{\"nested\":{\"a\":[[[],{}],{\"b\":[{\"c\":null}]}]}}]",
        "[17,1,9007199254740992]",
        "[32,2,{\"match\":\"wildcard\"},\"com..update\"]",
        "[33,2,3]",
        "[34,4,3]",
        "[35,4]",
        "[35,4,{\"reason\":\"revoked\"}]",
        "[36,3,9007199254740992,{\"publisher\":5},[\"\\u0000\"],{\"bin\":\"\\u0000AQID\"}]",
        "[48,5,{\"timeout\":1000},\"com.p\",[],{\"x\":-42,\"\\u00e9\":\"\\u00fc\"}]",
        "[49,5,{\"mode\":\"killnowait\"}]",
        "[50,5,{\"progress\":true},[3.141592653589793,-0.0,1.7976931348623157e308]]",
        "[64,6,{\"match\":\"prefix\"},\"com.\"]",
        "[65,6,7]",
        "[66,8,7]",
        "[67,8]",
        "[67,8,{}]",
        "[68,9,7,{\"caller\":1},[\"\\u0000\",\"\\u0000AA==\",\"\\u0000AAA=\",\"\\u0000AAAA\","
        "\"\\u0000not base64\",\"a\\u0000b\"]]",
        "[69,9,{}]",
        "[70,9,{},[{\"deep\":[[[[[1]]]]]}],{\"k\":[\"\\u0000////\",\"\"]}]",
};

#define N_MESSAGES (sizeof(messages) / sizeof(messages[0]))

START_TEST(test_roundtrip_each_serializer)
{
    json_t *v = jload(messages[_i]);
    for (size_t s = 0; s < 2; s++) {
        wamp_buf *b = encode_ok(both_sers[s], v);
        json_t *back = decode_ok(both_sers[s], wamp_buf_cdata(b), wamp_buf_len(b));
        assert_json_eq(back, v, wamp_ser_name(both_sers[s]));
        /* Re-encoding the decoded value gives the same bytes. */
        wamp_buf *b2 = encode_ok(both_sers[s], back);
        assert_bytes(b2, wamp_buf_cdata(b), wamp_buf_len(b), "re-encode");
        /* And the bytes are a valid message of the expected type. */
        wamp_msg m;
        char why[WAMP_WHY_LEN] = "";
        ck_assert_msg(wamp_codec_decode_msg(both_sers[s], wamp_buf_cdata(b), wamp_buf_len(b), &m,
                                            why, sizeof(why)) == WAMP_OK,
                      "%s", why);
        ck_assert_int_eq(m.type, json_integer_value(json_array_get(v, 0)));
        wamp_msg_fini(&m);
        json_decref(back);
        wamp_buf_unref(&b);
        wamp_buf_unref(&b2);
    }
    json_decref(v);
}

END_TEST

START_TEST(test_roundtrip_cross_serializer)
{
    json_t *v = jload(messages[_i]);
    /* JSON bytes -> value -> MessagePack bytes -> value -> JSON bytes. */
    wamp_buf *j1 = encode_ok(WAMP_SER_JSON, v);
    json_t *from_json = decode_ok(WAMP_SER_JSON, wamp_buf_cdata(j1), wamp_buf_len(j1));
    wamp_buf *m1 = encode_ok(WAMP_SER_MSGPACK, from_json);
    json_t *from_mp = decode_ok(WAMP_SER_MSGPACK, wamp_buf_cdata(m1), wamp_buf_len(m1));
    assert_json_eq(from_mp, v, "json->msgpack");
    wamp_buf *j2 = encode_ok(WAMP_SER_JSON, from_mp);
    assert_bytes(j2, wamp_buf_cdata(j1), wamp_buf_len(j1), "json->msgpack->json");
    /* And the other way round. */
    json_t *again = decode_ok(WAMP_SER_JSON, wamp_buf_cdata(j2), wamp_buf_len(j2));
    wamp_buf *m2 = encode_ok(WAMP_SER_MSGPACK, again);
    assert_bytes(m2, wamp_buf_cdata(m1), wamp_buf_len(m1), "msgpack->json->msgpack");
    json_decref(again);
    json_decref(from_mp);
    json_decref(from_json);
    wamp_buf_unref(&j1);
    wamp_buf_unref(&j2);
    wamp_buf_unref(&m1);
    wamp_buf_unref(&m2);
    json_decref(v);
}

END_TEST

START_TEST(test_builders_roundtrip)
{
    json_t *built[] = {
            wamp_msg_new_event(WAMP_ID_MAX, 1, NULL, jload("[\"\\u0000AQID\"]"),
                               json_pack("{s:f}", "r", -2.5)),
            wamp_msg_new_result(7, json_pack("{s:b}", "progress", 1), NULL, NULL),
            wamp_msg_new_error(WAMP_MSG_CALL, 3, NULL, WAMP_ERROR_NO_SUCH_PROCEDURE, NULL, NULL),
    };
    for (size_t i = 0; i < sizeof(built) / sizeof(built[0]); i++) {
        for (size_t s = 0; s < 2; s++) {
            wamp_buf *b = encode_ok(both_sers[s], built[i]);
            json_t *back = decode_ok(both_sers[s], wamp_buf_cdata(b), wamp_buf_len(b));
            assert_json_eq(back, built[i], "builder");
            json_decref(back);
            wamp_buf_unref(&b);
        }
        json_decref(built[i]);
    }
}

END_TEST

/* ---- exact encodings ---- */

START_TEST(test_json_exact_text)
{
    json_t *v = jload("[48,1,{\"a\":[]},\"com.p\",[\"\\u65e5\",1.5,-1,null,true,false,"
                      "\"\\u0000AQID\",\"q\\\"b\\\\s\\n/\",2.0,0.1]]");
    wamp_buf *b = encode_ok(WAMP_SER_JSON, v);
    /* Compact, raw UTF-8, NUL as \u0000, '/' unescaped, 17 significant digits for reals. */
    static const char want[] = "[48,1,{\"a\":[]},\"com.p\",[\"\xe6\x97\xa5\",1.5,-1,null,true,"
                               "false,\"\\u0000AQID\",\"q\\\"b\\\\s\\n/\",2.0,"
                               "0.10000000000000001]]";
    assert_bytes(b, want, sizeof(want) - 1, "json text");
    /* Transports may write their frame header into the headroom. */
    memset(wamp_buf_data(b) - WAMP_BUF_HEADROOM, 0, WAMP_BUF_HEADROOM);
    assert_bytes(b, want, sizeof(want) - 1, "json text after headroom write");
    wamp_buf_unref(&b);
    json_decref(v);
}

END_TEST

struct int_case {
    json_int_t v;
    const char *mp;
    size_t len;
};

#define IC(v, s)            \
    {                       \
        v, s, sizeof(s) - 1 \
    }

/* Shortest MessagePack form of each integer (msgpack-c's choice, and python-msgpack's). */
static const struct int_case int_cases[] = {
        IC(0, "\x00"),
        IC(1, "\x01"),
        IC(127, "\x7f"),
        IC(128, "\xcc\x80"),
        IC(255, "\xcc\xff"),
        IC(256, "\xcd\x01\x00"),
        IC(65535, "\xcd\xff\xff"),
        IC(65536, "\xce\x00\x01\x00\x00"),
        IC(4294967295LL, "\xce\xff\xff\xff\xff"),
        IC(4294967296LL, "\xcf\x00\x00\x00\x01\x00\x00\x00\x00"),
        IC(9007199254740992LL, "\xcf\x00\x20\x00\x00\x00\x00\x00\x00"),
        IC(INT64_MAX, "\xcf\x7f\xff\xff\xff\xff\xff\xff\xff"),
        IC(-1, "\xff"),
        IC(-32, "\xe0"),
        IC(-33, "\xd0\xdf"),
        IC(-128, "\xd0\x80"),
        IC(-129, "\xd1\xff\x7f"),
        IC(-32768, "\xd1\x80\x00"),
        IC(-32769, "\xd2\xff\xff\x7f\xff"),
        IC(-2147483648LL, "\xd2\x80\x00\x00\x00"),
        IC(-2147483649LL, "\xd3\xff\xff\xff\xff\x7f\xff\xff\xff"),
        IC(INT64_MIN, "\xd3\x80\x00\x00\x00\x00\x00\x00\x00"),
};

START_TEST(test_msgpack_int_encodings)
{
    const struct int_case *c = &int_cases[_i];
    json_t *v = json_integer(c->v);
    wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, v);
    assert_bytes(b, c->mp, c->len, "int");
    json_t *back = decode_ok(WAMP_SER_MSGPACK, c->mp, c->len);
    ck_assert(json_is_integer(back));
    ck_assert_int_eq(json_integer_value(back), c->v);
    json_decref(back);
    wamp_buf_unref(&b);
    json_decref(v);
}

END_TEST

/* Wider-than-needed forms decode to the same value. */
START_TEST(test_msgpack_int_wide_forms)
{
    static const struct int_case wide[] = {
            IC(5, "\xcc\x05"),
            IC(5, "\xcd\x00\x05"),
            IC(5, "\xce\x00\x00\x00\x05"),
            IC(5, "\xcf\x00\x00\x00\x00\x00\x00\x00\x05"),
            IC(5, "\xd0\x05"),
            IC(5, "\xd1\x00\x05"),
            IC(5, "\xd2\x00\x00\x00\x05"),
            IC(5, "\xd3\x00\x00\x00\x00\x00\x00\x00\x05"),
            IC(-1, "\xd0\xff"),
            IC(-1, "\xd1\xff\xff"),
            IC(-1, "\xd2\xff\xff\xff\xff"),
            IC(-1, "\xd3\xff\xff\xff\xff\xff\xff\xff\xff"),
            IC(-5, "\xfb"),
            IC(127, "\xd0\x7f"),
            IC(32767, "\xd1\x7f\xff"),
            IC(INT64_MAX, "\xd3\x7f\xff\xff\xff\xff\xff\xff\xff"),
    };
    for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++) {
        json_t *v = decode_ok(WAMP_SER_MSGPACK, wide[i].mp, wide[i].len);
        ck_assert(json_is_integer(v));
        ck_assert_int_eq(json_integer_value(v), wide[i].v);
        json_decref(v);
    }
}

END_TEST

START_TEST(test_msgpack_float_encodings)
{
    json_t *v = json_real(1.5);
    wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, v);
    assert_bytes(b, BYTES("\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00"), "float64 1.5");
    wamp_buf_unref(&b);
    json_decref(v);
    /* float32 decodes (to the same double) and re-encodes as float64. */
    v = decode_ok(WAMP_SER_MSGPACK, BYTES("\xca\x3f\xc0\x00\x00"));
    ck_assert(json_is_real(v));
    ck_assert(json_real_value(v) == 1.5);
    json_decref(v);
    v = decode_ok(WAMP_SER_MSGPACK, BYTES("\xca\xc1\x20\x00\x00"));
    ck_assert(json_real_value(v) == -10.0);
    json_decref(v);
    /* The sign of zero survives a MessagePack round trip. */
    v = json_real(-0.0);
    b = encode_ok(WAMP_SER_MSGPACK, v);
    assert_bytes(b, BYTES("\xcb\x80\x00\x00\x00\x00\x00\x00\x00"), "-0.0");
    json_t *back = decode_ok(WAMP_SER_MSGPACK, wamp_buf_cdata(b), wamp_buf_len(b));
    ck_assert(json_real_value(back) == 0.0 && signbit(json_real_value(back)));
    json_decref(back);
    wamp_buf_unref(&b);
    json_decref(v);
    /* Smallest subnormal and largest finite double. */
    v = jload("[5e-324,1.7976931348623157e308]");
    b = encode_ok(WAMP_SER_MSGPACK, v);
    back = decode_ok(WAMP_SER_MSGPACK, wamp_buf_cdata(b), wamp_buf_len(b));
    assert_json_eq(back, v, "extreme reals");
    json_decref(back);
    wamp_buf_unref(&b);
    json_decref(v);
}

END_TEST

START_TEST(test_msgpack_scalars)
{
    json_t *v = jload("[null,true,false,\"\",{},[]]");
    wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, v);
    assert_bytes(b, BYTES("\x96\xc0\xc3\xc2\xa0\x80\x90"), "scalars");
    wamp_buf_unref(&b);
    json_decref(v);
}

END_TEST

/* Spec "Binary support": "\0" + base64 in the value model is MessagePack bin. */
START_TEST(test_binary_convention)
{
    json_t *v = json_stringn("\0AQID", 5);
    wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, v);
    assert_bytes(b, BYTES("\xc4\x03\x01\x02\x03"), "bin");
    json_t *back = decode_ok(WAMP_SER_MSGPACK, BYTES("\xc4\x03\x01\x02\x03"));
    ck_assert(json_is_string(back));
    ck_assert_uint_eq(json_string_length(back), 5);
    ck_assert_mem_eq(json_string_value(back), "\0AQID", 5);
    json_decref(back);
    wamp_buf_unref(&b);
    /* In JSON the same value is the string "\u0000AQID". */
    b = encode_ok(WAMP_SER_JSON, v);
    assert_bytes(b, BYTES("\"\\u0000AQID\""), "json binary");
    wamp_buf_unref(&b);
    json_decref(v);

    /* Empty binary: "\0" alone. */
    v = json_stringn("\0", 1);
    b = encode_ok(WAMP_SER_MSGPACK, v);
    assert_bytes(b, BYTES("\xc4\x00"), "empty bin");
    back = decode_ok(WAMP_SER_MSGPACK, BYTES("\xc4\x00"));
    ck_assert(json_equal(back, v));
    json_decref(back);
    wamp_buf_unref(&b);
    json_decref(v);
}

END_TEST

struct str_case {
    const char *s;
    size_t len;
    const char *mp;
    size_t mp_len;
};

#define SC(s, mp)                            \
    {                                        \
        s, sizeof(s) - 1, mp, sizeof(mp) - 1 \
    }

/* Strings that start with NUL but are not canonical padded base64 stay str, unchanged. */
static const struct str_case not_bin_cases[] = {
        SC("\0abc", "\xa4\x00"
                    "abc"),
        SC("\0AQI", "\xa4\x00"
                    "AQI"),
        SC("\0AR==", "\xa5\x00"
                     "AR=="), /* non-zero trailing bits */
        SC("\0====", "\xa5\x00===="),
        SC("\0A===", "\xa5\x00"
                     "A==="),
        SC("\0AQ=A", "\xa5\x00"
                     "AQ=A"),
        SC("\0AQ-_", "\xa5\x00"
                     "AQ-_"), /* URL-safe alphabet */
        SC("\0AQ\nI", "\xa5\x00"
                      "AQ\nI"),
        /* non-ASCII bytes, which libsodium 1.0.18 would decode as digits */
        SC("\0\xc3\xa9\xc3\xa9", "\xa5\x00\xc3\xa9\xc3\xa9"),
        SC("\0/\xe2\x80\xa8\xc3\xa9\xc3\xa9", "\xa9\x00/\xe2\x80\xa8\xc3\xa9\xc3\xa9"),
        SC("\0AA\xc3\xa9", "\xa5\x00"
                           "AA\xc3\xa9"),
        SC("\0A=AA", "\xa5\x00"
                     "A=AA"),
        SC("a\0AQID", "\xa6"
                      "a\x00"
                      "AQID"),
};

START_TEST(test_binary_lookalikes_stay_strings)
{
    const struct str_case *c = &not_bin_cases[_i];
    json_t *v = json_stringn(c->s, c->len);
    ck_assert_ptr_nonnull(v);
    wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, v);
    assert_bytes(b, c->mp, c->mp_len, "str");
    json_t *back = decode_ok(WAMP_SER_MSGPACK, wamp_buf_cdata(b), wamp_buf_len(b));
    ck_assert(json_equal(back, v));
    json_decref(back);
    wamp_buf_unref(&b);
    json_decref(v);
}

END_TEST

/* bin8/16/32 boundaries: header chosen by size, payload intact both ways. */
START_TEST(test_binary_sizes)
{
    static const size_t sizes[] = {0, 1, 2, 3, 4, 255, 256, 65535, 65536, 100000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        unsigned char *raw = malloc(n + 5);
        ck_assert_ptr_nonnull(raw);
        size_t h = n <= 255 ? 2 : n <= 65535 ? 3 : 5;
        raw[0] = h == 2 ? 0xc4 : h == 3 ? 0xc5 : 0xc6;
        for (size_t k = 1; k < h; k++) {
            raw[k] = (unsigned char)(n >> (8 * (h - 1 - k)));
        }
        for (size_t k = 0; k < n; k++) {
            raw[h + k] = (unsigned char)(k * 7 + 3);
        }
        json_t *v = decode_ok(WAMP_SER_MSGPACK, raw, h + n);
        ck_assert(json_is_string(v));
        ck_assert_uint_eq(json_string_length(v), 1 + (n + 2) / 3 * 4);
        ck_assert_int_eq(json_string_value(v)[0], '\0');
        wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, v);
        assert_bytes(b, raw, h + n, "bin size");
        /* Through JSON and back to the same bytes. */
        wamp_buf *j = encode_ok(WAMP_SER_JSON, v);
        json_t *vj = decode_ok(WAMP_SER_JSON, wamp_buf_cdata(j), wamp_buf_len(j));
        wamp_buf *b2 = encode_ok(WAMP_SER_MSGPACK, vj);
        assert_bytes(b2, raw, h + n, "bin via json");
        wamp_buf_unref(&b2);
        json_decref(vj);
        wamp_buf_unref(&j);
        wamp_buf_unref(&b);
        json_decref(v);
        free(raw);
    }
}

END_TEST

/* The 32-bit length forms, which the golden vectors leave out for size. */
START_TEST(test_msgpack_32bit_forms)
{
    size_t n = 65536;
    char *s = malloc(n);
    ck_assert_ptr_nonnull(s);
    memset(s, 'a', n);
    json_t *str = json_stringn(s, n);
    json_t *arr = json_array();
    json_t *obj = json_object();
    for (size_t i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%zu", i);
        ck_assert_int_eq(json_array_append_new(arr, json_null()), 0);
        ck_assert_int_eq(json_object_set_new(obj, key, json_true()), 0);
    }

    struct {
        json_t *v;
        const char *hdr;
    } forms[] = {{str, "\xdb\x00\x01\x00\x00"},
                 {arr, "\xdd\x00\x01\x00\x00"},
                 {obj, "\xdf\x00\x01\x00\x00"}};

    for (size_t i = 0; i < 3; i++) {
        wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, forms[i].v);
        ck_assert_mem_eq(wamp_buf_cdata(b), forms[i].hdr, 5);
        json_t *back = decode_ok(WAMP_SER_MSGPACK, wamp_buf_cdata(b), wamp_buf_len(b));
        ck_assert(json_equal(back, forms[i].v));
        json_decref(back);
        wamp_buf_unref(&b);
        json_decref(forms[i].v);
    }
    /* 16-bit boundaries: 65535 entries still use array16/str16. */
    json_t *a16 = json_array();
    for (size_t i = 0; i < 65535; i++) {
        json_array_append_new(a16, json_false());
    }
    wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, a16);
    ck_assert_mem_eq(wamp_buf_cdata(b), "\xdc\xff\xff", 3);
    ck_assert_uint_eq(wamp_buf_len(b), 3 + 65535);
    wamp_buf_unref(&b);
    json_decref(a16);
    free(s);
}

END_TEST

/* ---- golden vectors (tests/data, made by gen_vectors.py with python3-msgpack) ---- */

static char *data_path(const char *name)
{
    const char *root = getenv("RT_SOURCE_DIR");
    char *path = malloc(4096);
    ck_assert_ptr_nonnull(path);
    if (root && *root) {
        snprintf(path, 4096, "%s/tests/data/%s", root, name);
    } else {
        /* Not run by ctest: locate tests/data next to this source file's directory. */
        const char *file = __FILE__;
        const char *unit = strstr(file, "unit/check_wamp_codec.c");
        ck_assert_ptr_nonnull(unit);
        snprintf(path, 4096, "%.*sdata/%s", (int)(unit - file), file, name);
    }
    return path;
}

static unsigned char *read_file(const char *name, size_t *len)
{
    char *path = data_path(name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    ck_assert_int_ge(size, 0);
    ck_assert_int_eq(fseek(f, 0, SEEK_SET), 0);
    unsigned char *buf = malloc((size_t)size + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    buf[size] = '\0';
    fclose(f);
    free(path);
    *len = (size_t)size;
    return buf;
}

START_TEST(test_golden_vectors)
{
    size_t mlen;
    char *manifest = (char *)read_file("vectors.txt", &mlen);
    size_t count = 0;
    size_t mp_exact = 0;
    size_t json_exact = 0;
    char *save = NULL;
    for (char *line = strtok_r(manifest, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[64];
        int mp_canon;
        int json_canon;
        ck_assert_int_eq(sscanf(line, "%63s %d %d", name, &mp_canon, &json_canon), 3);
        char file[80];
        size_t mp_len;
        size_t js_len;
        snprintf(file, sizeof(file), "%s.mpk", name);
        unsigned char *mp = read_file(file, &mp_len);
        snprintf(file, sizeof(file), "%s.json", name);
        unsigned char *js = read_file(file, &js_len);

        json_t *from_mp = decode_ok(WAMP_SER_MSGPACK, mp, mp_len);
        json_t *from_js = decode_ok(WAMP_SER_JSON, js, js_len);
        assert_json_eq(from_mp, from_js, name);
        wamp_msg m;
        char why[WAMP_WHY_LEN] = "";
        ck_assert_msg(wamp_codec_decode_msg(WAMP_SER_MSGPACK, mp, mp_len, &m, why, sizeof(why)) ==
                              WAMP_OK,
                      "%s: %s", name, why);
        wamp_msg_fini(&m);
        if (mp_canon) {
            wamp_buf *b = encode_ok(WAMP_SER_MSGPACK, from_js);
            assert_bytes(b, mp, mp_len, name);
            wamp_buf_unref(&b);
            mp_exact++;
        }
        if (json_canon) {
            wamp_buf *b = encode_ok(WAMP_SER_JSON, from_mp);
            assert_bytes(b, js, js_len, name);
            wamp_buf_unref(&b);
            json_exact++;
        }
        json_decref(from_mp);
        json_decref(from_js);
        free(mp);
        free(js);
        count++;
    }
    /* The manifest really was read (guards against an empty or missing list). */
    ck_assert_uint_ge(count, 19);
    ck_assert_uint_ge(mp_exact, 18);
    ck_assert_uint_ge(json_exact, 18);
    free(manifest);
}

END_TEST

/* ---- malformed input ---- */

START_TEST(test_truncation_every_prefix)
{
    static const char *const golden[] = {
            "hello.mpk",       "event_binary.mpk",      "result_ints.mpk",       "result_reals.mpk",
            "yield_sizes.mpk", "call_wide_formats.mpk", "invocation_nested.mpk", "publish.mpk"};
    for (size_t g = 0; g < sizeof(golden) / sizeof(golden[0]); g++) {
        size_t len;
        unsigned char *mp = read_file(golden[g], &len);
        for (size_t cut = 0; cut < len; cut++) {
            /* A fresh copy of exactly cut bytes, so ASan sees any read past the end. */
            unsigned char *part = malloc(cut ? cut : 1);
            ck_assert_ptr_nonnull(part);
            memcpy(part, mp, cut);
            decode_proto(WAMP_SER_MSGPACK, part, cut, NULL);
            free(part);
        }
        json_t *whole = decode_ok(WAMP_SER_MSGPACK, mp, len);
        /* The same message as JSON, cut everywhere too. */
        wamp_buf *js = encode_ok(WAMP_SER_JSON, whole);
        for (size_t cut = 0; cut < wamp_buf_len(js); cut++) {
            unsigned char *part = malloc(cut ? cut : 1);
            ck_assert_ptr_nonnull(part);
            memcpy(part, wamp_buf_cdata(js), cut);
            decode_proto(WAMP_SER_JSON, part, cut, NULL);
            free(part);
        }
        wamp_buf_unref(&js);
        json_decref(whole);
        free(mp);
    }
}

END_TEST

struct bad_case {
    const char *data;
    size_t len;
    const char *why;
};

#define BAD(s, why)           \
    {                         \
        s, sizeof(s) - 1, why \
    }

static const struct bad_case bad_msgpack[] = {
        BAD("", "truncated"),
        BAD("\xc1", "invalid byte 0xc1"),
        BAD("\x91\xc1", "invalid byte 0xc1"),
        /* ext and fixext */
        BAD("\xc7\x01\x05\x00", "ext type"),
        BAD("\xc8\x00\x01\x05\x00", "ext type"),
        BAD("\xc9\x00\x00\x00\x01\x05\x00", "ext type"),
        BAD("\xd4\x05\x00", "ext type"),
        BAD("\xd5\x05\x00\x00", "ext type"),
        BAD("\xd6\x05\x00\x00\x00\x00", "ext type"),
        BAD("\xd7\xff\x00\x00\x00\x00\x00\x00\x00\x00", "ext type"),
        BAD("\xd8\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "ext type"),
        BAD("\x93\x30\x01\xd4\x01\x00", "ext type"),
        /* map keys must be strings */
        BAD("\x81\x01\x02", "not a string"),
        BAD("\x81\xc0\x01", "not a string"),
        BAD("\x81\xc3\x01", "not a string"),
        BAD("\x81\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00\x01", "not a string"),
        BAD("\x81\xc4\x01"
            "a\x01",
            "not a string"),
        BAD("\x81\x90\x01", "not a string"),
        BAD("\x81\x80\x01", "not a string"),
        BAD("\x81\xa3"
            "a\x00"
            "b\x01",
            "NUL byte in map key"),
        BAD("\x81\xa1\xff\x01", "invalid UTF-8 in map key"),
        BAD("\x82\xa1"
            "a\x01\xa1"
            "a\x02",
            "duplicate map key"),
        BAD("\x82\xa1"
            "a\x01\xd9\x01"
            "a\x02",
            "duplicate map key"),
        /* integers beyond int64 */
        BAD("\xcf\x80\x00\x00\x00\x00\x00\x00\x00", "int64"),
        BAD("\xcf\xff\xff\xff\xff\xff\xff\xff\xff", "int64"),
        /* NaN and infinities */
        BAD("\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00", "NaN"),
        BAD("\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00", "NaN or infinite"),
        BAD("\xcb\xff\xf0\x00\x00\x00\x00\x00\x00", "NaN or infinite"),
        BAD("\xca\x7f\xc0\x00\x00", "NaN"),
        BAD("\xca\x7f\x80\x00\x00", "NaN or infinite"),
        /* invalid UTF-8 in str */
        BAD("\xa1\xff", "invalid UTF-8"),
        BAD("\xa1\x80", "invalid UTF-8"),
        BAD("\xa2\xc3\x28", "invalid UTF-8"),
        BAD("\xa2\xc0\x80", "invalid UTF-8"),         /* overlong NUL */
        BAD("\xa3\xe0\x80\x80", "invalid UTF-8"),     /* overlong */
        BAD("\xa3\xed\xa0\x80", "invalid UTF-8"),     /* surrogate U+D800 */
        BAD("\xa4\xf0\x80\x80\x80", "invalid UTF-8"), /* overlong */
        BAD("\xa4\xf4\x90\x80\x80", "invalid UTF-8"), /* U+110000 */
        BAD("\xa4\xf5\x80\x80\x80", "invalid UTF-8"),
        BAD("\xa2\xe2\x82", "invalid UTF-8"), /* sequence cut by the end */
        BAD("\xa9"
            "abcdefgh\xff",
            "invalid UTF-8"), /* after the 8-byte fast path */
        BAD("\xd9\x01\xff", "invalid UTF-8"),
        /* trailing bytes */
        BAD("\x90\x00", "trailing"),
        BAD("\xc0\xc0", "trailing"),
        BAD("\x93\x01\x02\x03\x04", "trailing"),
        /* hostile length prefixes: refused before allocation */
        BAD("\xdb\xff\xff\xff\xff"
            "abc",
            "truncated"),
        BAD("\xdd\xff\xff\xff\xff\x00", "truncated"),
        BAD("\xdf\xff\xff\xff\xff\xa1"
            "a\x00",
            "truncated"),
        BAD("\xc6\xff\xff\xff\xff\x00", "truncated"),
        BAD("\xda\xff\xff"
            "a",
            "truncated"),
        BAD("\xdc\xff\xff\x00", "truncated"),
        BAD("\xde\xff\xff\x00", "truncated"),
        BAD("\xc5\xff\xff\x00", "truncated"),
        BAD("\x91\xdd\xff\xff\xff\xff", "truncated"),
        BAD("\x92\x01\xdf\xff\xff\xff\xff", "truncated"),
        BAD("\x81\xdb\xff\xff\xff\xff"
            "a",
            "truncated"),
        BAD("\x82\xa1"
            "a\x01",
            "truncated"), /* fixmap count beyond input */
        BAD("\x9f", "truncated"),
};

START_TEST(test_msgpack_rejects)
{
    const struct bad_case *c = &bad_msgpack[_i];
    /* Exact-size heap copy: ASan catches any read past the end. */
    unsigned char *p = malloc(c->len ? c->len : 1);
    ck_assert_ptr_nonnull(p);
    memcpy(p, c->data, c->len);
    decode_proto(WAMP_SER_MSGPACK, p, c->len, c->why);
    free(p);
}

END_TEST

/* Allocation accounting for the hostile-length test. File-scope state is acceptable here: each
 * test runs in its own forked process (CK_FORK). */
static size_t alloc_calls;
static size_t alloc_largest;

static void *counting_malloc(size_t n)
{
    alloc_calls++;
    if (n > alloc_largest) {
        alloc_largest = n;
    }
    return malloc(n);
}

START_TEST(test_hostile_lengths_allocate_nothing_big)
{
    json_set_alloc_funcs(counting_malloc, free);
    for (size_t i = 0; i < sizeof(bad_msgpack) / sizeof(bad_msgpack[0]); i++) {
        const struct bad_case *c = &bad_msgpack[i];
        if (strcmp(c->why, "truncated") != 0) {
            continue;
        }
        alloc_calls = 0;
        alloc_largest = 0;
        decode_proto(WAMP_SER_MSGPACK, c->data, c->len, "truncated");
        /* At most the enclosing containers (and their first element); never anything sized
         * by the hostile prefix. */
        ck_assert_uint_le(alloc_calls, 8);
        ck_assert_uint_le(alloc_largest, 256);
    }
    json_set_alloc_funcs(malloc, free);
}

END_TEST

/* Allocation failure injection through jansson's allocator hook: allocation number fail_at
 * (counting from 0) fails. Forked tests make the file-scope counters safe. */
static size_t fail_at;
static size_t alloc_seq;

static void *failing_malloc(size_t n)
{
    if (alloc_seq++ == fail_at) {
        return NULL;
    }
    return malloc(n);
}

/* Every allocation of a decode fails in turn: the result is an error with nothing leaked (LSan
 * checks at the forked child's exit) and no value, until the decode finally succeeds. */
static void decode_under_oom(wamp_ser ser, const char *file)
{
    size_t len;
    unsigned char *data = read_file(file, &len);
    json_t *want = decode_ok(ser, data, len);
    size_t failures = 0;
    for (fail_at = 0;; fail_at++) {
        json_t *v = (json_t *)&v;
        alloc_seq = 0;
        json_set_alloc_funcs(failing_malloc, free);
        wamp_err err = wamp_codec_decode(ser, data, len, &v, NULL, 0);
        json_set_alloc_funcs(malloc, free);
        if (err == WAMP_OK) {
            /* jansson 2.14's lexer ignores a failed growth of its token buffer (lex_save()
             * drops the byte), so a JSON decode that succeeds under allocation failure may
             * have lost characters of a string; only MessagePack is exact here. */
            if (ser == WAMP_SER_MSGPACK) {
                assert_json_eq(v, want, file);
            }
            json_decref(v);
            break;
        }
        /* jansson 2.14 reports a failed string allocation in its lexer as a syntax error
         * ("invalid token"), so JSON may say EPROTO; MessagePack must say ENOMEM. */
        ck_assert_msg(err == WAMP_ENOMEM || (ser == WAMP_SER_JSON && err == WAMP_EPROTO),
                      "%s: allocation %zu failed, got %s", file, fail_at, wamp_strerror(err));
        ck_assert_ptr_null(v);
        failures++;
    }
    ck_assert_uint_ge(failures, 10);
    json_decref(want);
    free(data);
}

START_TEST(test_decode_oom_msgpack)
{
    decode_under_oom(WAMP_SER_MSGPACK, "hello.mpk");
    decode_under_oom(WAMP_SER_MSGPACK, "event_binary.mpk");
    decode_under_oom(WAMP_SER_MSGPACK, "invocation_nested.mpk");
}

END_TEST

/* Only inputs whose strings fit jansson's initial token buffer: when growing that buffer fails,
 * jansson 2.14 drops the byte (lex_save() ignores the failure), may lose a string's closing
 * quote and then copies past the end of its own allocation (a heap overflow under memory
 * exhaustion, e.g. with event_binary.json). That is jansson's bug, outside our wrapper. */
START_TEST(test_decode_oom_json)
{
    decode_under_oom(WAMP_SER_JSON, "hello.json");
    decode_under_oom(WAMP_SER_JSON, "call.json");
}

END_TEST

static const struct bad_case bad_json[] = {
        BAD("", NULL),
        BAD("   ", NULL),
        BAD("[1,2", NULL),
        BAD("[1] x", NULL),
        BAD("[1][2]", NULL),
        BAD("[1,]", NULL),
        BAD("{\"a\":1,\"a\":2}", "duplicate"),
        BAD("[\"\xff\"]", NULL),
        BAD("[\"\xc0\x80\"]", NULL),
        BAD("[\"\xed\xa0\x80\"]", NULL),
        BAD("[\"\xf4\x90\x80\x80\"]", NULL),
        BAD("[\"\\ud800\"]", NULL),
        BAD("[NaN]", NULL),
        BAD("[Infinity]", NULL),
        BAD("[-Infinity]", NULL),
        BAD("[1e400]", NULL),
        BAD("[9223372036854775808]", NULL),
        BAD("[-9223372036854775809]", NULL),
        BAD("{\"a\\u0000\":1}", NULL),
        BAD("[\"a\x00\"]", NULL), /* raw NUL byte (only the escape is allowed) */
        BAD("[1]\x00", NULL),
        BAD("['a']", NULL),
};

START_TEST(test_json_rejects)
{
    const struct bad_case *c = &bad_json[_i];
    unsigned char *p = malloc(c->len ? c->len : 1);
    ck_assert_ptr_nonnull(p);
    memcpy(p, c->data, c->len);
    decode_proto(WAMP_SER_JSON, p, c->len, c->why);
    free(p);
}

END_TEST

/* n nested one-element arrays around inner: "[[[inner]]]" or 0x91 0x91 0x91 inner. */
static unsigned char *nest(wamp_ser ser, size_t n, const char *inner, size_t inner_len, size_t *len)
{
    size_t total = (ser == WAMP_SER_JSON ? 2 * n : n) + inner_len;
    unsigned char *p = malloc(total);
    ck_assert_ptr_nonnull(p);
    memset(p, ser == WAMP_SER_JSON ? '[' : 0x91, n);
    memcpy(p + n, inner, inner_len);
    if (ser == WAMP_SER_JSON) {
        memset(p + n + inner_len, ']', n);
    }
    *len = total;
    return p;
}

/* Both decoders count depth as jansson does: every value has one, the root is at depth 1. */
START_TEST(test_depth_limit_same_for_both)
{
    /* at_limit: the most arrays that may surround inner, so that its deepest value sits at
     * depth WAMP_CODEC_MAX_DEPTH exactly. */
    static const struct {
        wamp_ser ser;
        const char *inner;
        size_t inner_len;
        size_t at_limit;
    } inners[] = {
            /* scalar at depth n + 1 */
            {WAMP_SER_JSON, "1", 1, WAMP_CODEC_MAX_DEPTH - 1},
            {WAMP_SER_MSGPACK, "\x01", 1, WAMP_CODEC_MAX_DEPTH - 1},
            /* JSON: the innermost of n arrays is empty, at depth n */
            {WAMP_SER_JSON, "", 0, WAMP_CODEC_MAX_DEPTH},
            /* MessagePack: an empty array at depth n + 1 */
            {WAMP_SER_MSGPACK, "\x90", 1, WAMP_CODEC_MAX_DEPTH - 1},
            /* a map at depth n + 1 whose value is at n + 2 */
            {WAMP_SER_JSON, "{\"a\":1}", 7, WAMP_CODEC_MAX_DEPTH - 2},
            {WAMP_SER_MSGPACK,
             "\x81\xa1"
             "a\x01",
             4, WAMP_CODEC_MAX_DEPTH - 2},
    };

    for (size_t i = 0; i < sizeof(inners) / sizeof(inners[0]); i++) {
        wamp_ser ser = inners[i].ser;
        size_t at_limit = inners[i].at_limit;
        size_t len;
        unsigned char *p = nest(ser, at_limit, inners[i].inner, inners[i].inner_len, &len);
        json_t *v = decode_ok(ser, p, len);
        /* Whatever decodes also encodes, in both serializers. */
        for (size_t s = 0; s < 2; s++) {
            wamp_buf *b = encode_ok(both_sers[s], v);
            json_t *back = decode_ok(both_sers[s], wamp_buf_cdata(b), wamp_buf_len(b));
            ck_assert(json_equal(back, v));
            json_decref(back);
            wamp_buf_unref(&b);
        }
        json_decref(v);
        free(p);
        p = nest(ser, at_limit + 1, inners[i].inner, inners[i].inner_len, &len);
        decode_proto(ser, p, len, ser == WAMP_SER_MSGPACK ? "nesting deeper than 2048" : "depth");
        free(p);
    }
}

END_TEST

START_TEST(test_depth_huge_input_rejected_cleanly)
{
    /* A million opening brackets: refused at the limit, no stack overflow. */
    size_t n = 1000000;
    unsigned char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    memset(p, 0x91, n);
    decode_proto(WAMP_SER_MSGPACK, p, n, "nesting");
    memset(p, '[', n);
    decode_proto(WAMP_SER_JSON, p, n, NULL);
    memset(p, 0x81, n); /* maps whose keys are not strings (0x81) fail at once */
    decode_proto(WAMP_SER_MSGPACK, p, n, "not a string");
    free(p);
}

END_TEST

START_TEST(test_encode_too_deep_or_cyclic)
{
    /* One level beyond what the decoders accept: MessagePack refuses to write it. */
    json_t *root = json_array();
    json_t *cur = root;
    for (size_t i = 1; i < WAMP_CODEC_MAX_DEPTH; i++) {
        json_t *next = json_array();
        ck_assert_int_eq(json_array_append_new(cur, next), 0);
        cur = next;
    }
    json_array_append_new(cur, json_integer(1)); /* the integer sits at depth 2049 */
    wamp_buf *b = (wamp_buf *)&b;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_MSGPACK, root, &b), WAMP_EINVAL);
    ck_assert_ptr_null(b);
    json_decref(root);

    /* A reference cycle: both serializers fail cleanly. */
    json_t *a = json_array();
    json_t *c = json_array();
    ck_assert_int_eq(json_array_append(a, c), 0);
    ck_assert_int_eq(json_array_append(c, a), 0);
    for (size_t s = 0; s < 2; s++) {
        b = (wamp_buf *)&b;
        ck_assert_int_eq(wamp_codec_encode(both_sers[s], a, &b), WAMP_EINVAL);
        ck_assert_ptr_null(b);
    }
    json_array_clear(c);
    json_decref(c);
    json_decref(a);
}

END_TEST

START_TEST(test_api_misuse)
{
    json_t *v = (json_t *)&v;
    char why[WAMP_WHY_LEN] = "";
    ck_assert_int_eq(wamp_codec_decode((wamp_ser)0, "[]", 2, &v, why, sizeof(why)), WAMP_EINVAL);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(wamp_codec_decode((wamp_ser)4, "[]", 2, &v, NULL, 0), WAMP_EINVAL);
    ck_assert_int_eq(wamp_codec_decode(WAMP_SER_JSON, NULL, 5, &v, NULL, 0), WAMP_EINVAL);
    ck_assert_int_eq(wamp_codec_decode(WAMP_SER_JSON, "[]", 2, NULL, NULL, 0), WAMP_EINVAL);
    /* NULL with length 0 is just empty input. */
    ck_assert_int_eq(wamp_codec_decode(WAMP_SER_JSON, NULL, 0, &v, NULL, 0), WAMP_EPROTO);
    ck_assert_int_eq(wamp_codec_decode(WAMP_SER_MSGPACK, NULL, 0, &v, NULL, 0), WAMP_EPROTO);
    ck_assert_ptr_null(v);

    wamp_buf *b = (wamp_buf *)&b;
    json_t *arr = json_array();
    ck_assert_int_eq(wamp_codec_encode((wamp_ser)7, arr, &b), WAMP_EINVAL);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, arr, NULL), WAMP_EINVAL);
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, NULL, &b), WAMP_EINVAL);
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_MSGPACK, NULL, &b), WAMP_EINVAL);
    ck_assert_ptr_null(b);
    json_decref(arr);

    ck_assert_str_eq(wamp_ser_name(WAMP_SER_JSON), "json");
    ck_assert_str_eq(wamp_ser_name(WAMP_SER_MSGPACK), "msgpack");
    ck_assert_str_eq(wamp_ser_name((wamp_ser)0), "unknown");
}

END_TEST

START_TEST(test_decode_any_root_value)
{
    /* The codec decodes any value; deciding that it must be a list is wamp_msg_parse's job. */
    json_t *v = decode_ok(WAMP_SER_JSON, "42", 2);
    ck_assert_int_eq(json_integer_value(v), 42);
    json_decref(v);
    v = decode_ok(WAMP_SER_MSGPACK, BYTES("\x2a"));
    ck_assert_int_eq(json_integer_value(v), 42);
    json_decref(v);
    /* JSON allows surrounding whitespace. */
    v = decode_ok(WAMP_SER_JSON, " [1] \n", 6);
    ck_assert_uint_eq(json_array_size(v), 1);
    json_decref(v);
}

END_TEST

START_TEST(test_decode_msg)
{
    wamp_msg m;
    char why[WAMP_WHY_LEN] = "";
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_MSGPACK,
                                           BYTES("\x95\x30\x07\x80\xa5"
                                                 "com.p\x91\x01"),
                                           &m, why, sizeof(why)),
                     WAMP_OK);
    ck_assert_int_eq(m.type, WAMP_MSG_CALL);
    ck_assert_uint_eq(m.id, 7);
    ck_assert_str_eq(m.uri, "com.p");
    /* The payload stays bytes, a slice of the input, until someone asks for its values. */
    ck_assert_ptr_null(m.args);
    ck_assert_int_eq(m.ser, WAMP_SER_MSGPACK);
    ck_assert_uint_eq(m.args_raw.len, 2);
    ck_assert_mem_eq(m.args_raw.p, "\x91\x01", 2);
    ck_assert_uint_eq(m.kwargs_raw.len, 0);
    ck_assert_int_eq(wamp_msg_decode_payload(&m, why, sizeof(why)), WAMP_OK);
    ck_assert_uint_eq(json_array_size(m.args), 1);
    ck_assert_ptr_null(m.kwargs);
    wamp_msg_fini(&m);

    /* Arguments must be a list, ArgumentsKw a dict; the payload is validated, not converted. */
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, "[48,7,{},\"com.p\",{}]",
                                           strlen("[48,7,{},\"com.p\",{}]"), &m, why, sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_str_eq(why, "CALL: element 4 (Arguments) must be a list");
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, "[48,7,{},\"com.p\",[],[]]",
                                           strlen("[48,7,{},\"com.p\",[],[]]"), &m, why,
                                           sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_str_eq(why, "CALL: element 5 (ArgumentsKw) must be a dict");
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, "[48,7,{},\"com.p\",[\"\xff\"]]",
                                           strlen("[48,7,{},\"com.p\",[\"\xff\"]]"), &m, why,
                                           sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_ptr_nonnull(strstr(why, "UTF-8"));
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, "[48,7,{},\"com.p\",[],{},1]",
                                           strlen("[48,7,{},\"com.p\",[],{},1]"), &m, why,
                                           sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_str_eq(why, "CALL: expected 4 to 6 elements, got 7");
    /* An integer above 2^63-1 and a NUL in a key are fine in the payload... */
    const char *big = "[48,7,{},\"com.p\",[18446744073709551615],{\"a\\u0000\":1}]";
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, big, strlen(big), &m, why, sizeof(why)),
                     WAMP_OK);
    ck_assert_mem_eq(m.args_raw.p, "[18446744073709551615]", m.args_raw.len);
    /* ...and only a consumer that wants jansson values learns that one has no such form. */
    ck_assert_int_eq(wamp_msg_decode_payload(&m, why, sizeof(why)), WAMP_ERANGE);
    ck_assert_str_eq(why, "Arguments: integer 18446744073709551615 at offset 1 is above 2^63-1");
    wamp_msg_fini(&m);
    /* ...but not in the envelope. */
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, "[48,18446744073709551615,{},\"p\"]",
                                           strlen("[48,18446744073709551615,{},\"p\"]"), &m, why,
                                           sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_ptr_nonnull(strstr(why, "above 2^63-1"));
    /* Read in one pass, malformed input after the range error is still reported as such. */
    const char *range_then_bad = "[48,18446744073709551615,{},\"p\",[1,]]";
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, range_then_bad, strlen(range_then_bad),
                                           &m, why, sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_ptr_null(strstr(why, "above 2^63-1"));
    ck_assert_msg(strstr(why, "at offset 35"), "%s", why);

    /* Syntax errors carry the decoder's reason... */
    memset(&m, 0x5a, sizeof(m));
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, "[48,", 4, &m, why, sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_ptr_null(m.root);
    ck_assert_ptr_nonnull(strstr(why, "at offset"));
    /* ...structural errors wamp_msg_parse's. */
    memset(&m, 0x5a, sizeof(m));
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_MSGPACK, BYTES("\x94\x30\x07\x80\x01"), &m, why,
                                           sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_ptr_null(m.root);
    ck_assert_str_eq(why, "CALL: element 3 (Procedure) must be a string");
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_JSON, "{}", 2, &m, why, sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_str_eq(why, "message must be a list");
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_MSGPACK, BYTES("\x90"), &m, why, sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_str_eq(why, "message must not be empty");
    ck_assert_int_eq(
            wamp_codec_decode_msg(WAMP_SER_MSGPACK, BYTES("\x91\x63"), &m, why, sizeof(why)),
            WAMP_EPROTO);
    ck_assert_str_eq(why, "unknown message type 99");
    /* A URI with NUL bytes is accepted by the codec but not by the message layer. */
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_MSGPACK,
                                           BYTES("\x94\x20\x01\x80\xa3"
                                                 "a\x00"
                                                 "b"),
                                           &m, why, sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_str_eq(why, "SUBSCRIBE: element 3 (Topic) must not contain NUL bytes");
}

END_TEST

/* wamp_json_encode() writes exactly what jansson's encoder writes with the same flags. */
static void assert_json_like_jansson(const json_t *v, const char *what)
{
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    wamp_buf *got = NULL;
    wamp_err err = wamp_json_encode(v, &got);
    if (!want) {
        ck_assert_msg(err == WAMP_EINVAL && !got, "%s: jansson refuses, we gave %s", what,
                      wamp_strerror(err));
        return;
    }
    ck_assert_msg(err == WAMP_OK, "%s: %s", what, wamp_strerror(err));
    ck_assert_msg(wamp_buf_len(got) == strlen(want) &&
                          memcmp(wamp_buf_cdata(got), want, strlen(want)) == 0,
                  "%s: %.*s != %s", what, (int)wamp_buf_len(got), wamp_buf_cdata(got), want);
    wamp_buf_unref(&got);
    free(want);
}

static json_t *gen_json(uint64_t *st, int depth)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t r = *st >> 33;
    switch (depth >= 40 ? r % 5 : r % 8) {
    case 0: {
        static const json_int_t ints[] = {0, 1, -1, 9, 10, -10, 123456789, INT64_MAX, INT64_MIN};
        return json_integer(ints[(r >> 8) % 9]);
    }
    case 1: {
        static const double reals[] = {0.0, -0.0, 0.1, 1e300, -2.5e-300, 3.0, 1.0 / 3};
        return json_real(reals[(r >> 8) % 7]);
    }
    case 2:
        return (r >> 8) % 3 == 0 ? json_true() : (r >> 8) % 3 == 1 ? json_false() : json_null();
    case 3:
    case 4: {
        /* Every byte below 0x80 (NUL, controls, quote, backslash, slash), and some UTF-8. */
        char b[16];
        size_t n = (r >> 8) % 12;
        for (size_t i = 0; i < n; i++) {
            *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
            b[i] = (char)((*st >> 40) % 0x80);
        }
        if ((r >> 20) % 4 == 0) {
            memcpy(b + n, "\xc3\xa9\xe2\x82\xac", 5);
            n += 5;
        }
        return json_stringn(b, n);
    }
    case 5:
    case 6: {
        json_t *a = json_array();
        for (size_t i = 0; i < (r >> 8) % 4; i++) {
            json_array_append_new(a, gen_json(st, depth + 1));
        }
        return a;
    }
    default: {
        json_t *o = json_object();
        for (size_t i = 0; i < (r >> 8) % 4; i++) {
            char k[8];
            size_t n = (size_t)snprintf(k, sizeof(k), "k%zu", (size_t)(r >> (12 + i)) % 50);
            if (i == 1) {
                k[1] = '\0'; /* a NUL in a key */
            }
            json_object_setn_new(o, k, n, gen_json(st, depth + 1));
        }
        return o;
    }
    }
}

START_TEST(test_json_encoder_matches_jansson)
{
    for (uint64_t seed = 1; seed <= 3000; seed++) {
        uint64_t st = seed;
        json_t *v = gen_json(&st, 0);
        char what[32];
        snprintf(what, sizeof(what), "seed %llu", (unsigned long long)seed);
        assert_json_like_jansson(v, what);
        json_decref(v);
    }
    /* Deeper than the encoder's own stack: jansson's path, from the start of the value. */
    json_t *deep = json_array();
    json_t *inner = deep;
    for (int i = 0; i < 100; i++) {
        json_t *a = json_array();
        json_array_append_new(inner, json_integer(i));
        json_array_append_new(inner, a);
        inner = a;
    }
    json_array_append_new(inner, json_string("end\n"));
    assert_json_like_jansson(deep, "deep");
    /* Appended after earlier bytes, which stay. */
    wamp_buf *b = wamp_buf_new(8);
    memcpy(wamp_buf_reserve(&b, 3), "[1,", 3);
    wamp_buf_commit(b, 3);
    ck_assert_int_eq(wamp_json_encode_append(deep, &b), WAMP_OK);
    char *want = json_dumps(deep, JSON_COMPACT);
    ck_assert_uint_eq(wamp_buf_len(b), 3 + strlen(want));
    ck_assert_mem_eq(wamp_buf_cdata(b), "[1,", 3);
    ck_assert_mem_eq(wamp_buf_cdata(b) + 3, want, strlen(want));
    free(want);
    wamp_buf_unref(&b);
    /* A cycle and invalid UTF-8 are refused, as jansson refuses them. */
    json_array_append(inner, deep);
    wamp_buf *out = NULL;
    ck_assert_int_eq(wamp_json_encode(deep, &out), WAMP_EINVAL);
    ck_assert_ptr_null(out);
    json_array_clear(inner);
    json_decref(deep);
    json_t *bad = json_stringn_nocheck("a\xff", 2);
    assert_json_like_jansson(bad, "invalid UTF-8");
    json_decref(bad);
}

END_TEST

static Suite *wamp_codec_suite(void)
{
    Suite *s = suite_create("wamp_codec");

    TCase *tc = tcase_create("roundtrip");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_roundtrip_each_serializer, 0, (int)N_MESSAGES);
    tcase_add_loop_test(tc, test_roundtrip_cross_serializer, 0, (int)N_MESSAGES);
    tcase_add_test(tc, test_builders_roundtrip);
    suite_add_tcase(s, tc);

    tc = tcase_create("encodings");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_json_exact_text);
    tcase_add_loop_test(tc, test_msgpack_int_encodings, 0,
                        (int)(sizeof(int_cases) / sizeof(int_cases[0])));
    tcase_add_test(tc, test_msgpack_int_wide_forms);
    tcase_add_test(tc, test_msgpack_float_encodings);
    tcase_add_test(tc, test_msgpack_scalars);
    tcase_add_test(tc, test_binary_convention);
    tcase_add_loop_test(tc, test_binary_lookalikes_stay_strings, 0,
                        (int)(sizeof(not_bin_cases) / sizeof(not_bin_cases[0])));
    tcase_add_test(tc, test_binary_sizes);
    tcase_add_test(tc, test_msgpack_32bit_forms);
    tcase_add_test(tc, test_golden_vectors);
    suite_add_tcase(s, tc);

    tc = tcase_create("malformed");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_truncation_every_prefix);
    tcase_add_loop_test(tc, test_msgpack_rejects, 0,
                        (int)(sizeof(bad_msgpack) / sizeof(bad_msgpack[0])));
    tcase_add_test(tc, test_hostile_lengths_allocate_nothing_big);
    tcase_add_test(tc, test_decode_oom_msgpack);
    tcase_add_test(tc, test_decode_oom_json);
    tcase_add_loop_test(tc, test_json_rejects, 0, (int)(sizeof(bad_json) / sizeof(bad_json[0])));
    tcase_add_test(tc, test_depth_limit_same_for_both);
    tcase_add_test(tc, test_depth_huge_input_rejected_cleanly);
    tcase_add_test(tc, test_encode_too_deep_or_cyclic);
    tcase_add_test(tc, test_api_misuse);
    tcase_add_test(tc, test_decode_any_root_value);
    tcase_add_test(tc, test_decode_msg);
    tcase_add_test(tc, test_json_encoder_matches_jansson);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_codec_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
