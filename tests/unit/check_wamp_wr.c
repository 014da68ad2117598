/* check_wamp_wr.c: the streaming writer: every value kind in JSON, MessagePack and tree mode
 * decodes to the value it was meant to write (and MessagePack bytes are the codec's own), the
 * size boundaries of MessagePack headers, JSON escaping, raw values, the byte limit, and misuse
 * reported as a sticky error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "wamp_codec.h"
#include "wamp_wr.h"

static const int MODES[] = {WAMP_SER_JSON, WAMP_SER_MSGPACK, WAMP_WR_TREE};

/* The writer's value, decoded (bytes modes) or as built (tree mode). */
static json_t *finish(wamp_wr *w)
{
    json_t *v = NULL;
    if (w->ser == WAMP_WR_TREE) {
        ck_assert_int_eq(wamp_wr_finish_tree(w, &v), WAMP_OK);
    } else {
        wamp_buf *b = NULL;
        ck_assert_int_eq(wamp_wr_finish_buf(w, &b), WAMP_OK);
        char why[128] = "";
        ck_assert_msg(wamp_codec_decode((wamp_ser)w->ser, wamp_buf_cdata(b), wamp_buf_len(b), &v,
                                        why, sizeof(why)) == WAMP_OK,
                      "%s", why);
        wamp_buf_unref(&b);
    }
    wamp_wr_fini(w);
    return v;
}

/* The bytes the codec makes of v; the writer must produce exactly these in MessagePack. */
static void assert_same_msgpack(wamp_wr *w, const json_t *v)
{
    wamp_buf *got = NULL, *want = NULL;
    ck_assert_int_eq(wamp_wr_finish_buf(w, &got), WAMP_OK);
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_MSGPACK, v, &want), WAMP_OK);
    ck_assert_uint_eq(wamp_buf_len(got), wamp_buf_len(want));
    ck_assert_mem_eq(wamp_buf_cdata(got), wamp_buf_cdata(want), wamp_buf_len(want));
    wamp_buf_unref(&got);
    wamp_buf_unref(&want);
    wamp_wr_fini(w);
}

static const int64_t INTS[] = {0,
                               1,
                               127,
                               128,
                               255,
                               256,
                               65535,
                               65536,
                               -1,
                               -32,
                               -33,
                               -128,
                               -129,
                               32767,
                               -32768,
                               -32769,
                               4294967295,
                               4294967296,
                               -2147483648LL,
                               -2147483649LL,
                               INT64_MAX,
                               INT64_MIN + 1};

/* Writes the same document in every mode: a map of every scalar kind, nested containers, and
 * strings needing escapes. */
static void write_doc(wamp_wr *w, const json_t *nested)
{
    wamp_wr_map(w, 9);
    wamp_wr_key(w, "ints");
    wamp_wr_array(w, sizeof(INTS) / sizeof(INTS[0]));
    for (size_t i = 0; i < sizeof(INTS) / sizeof(INTS[0]); i++) {
        wamp_wr_int(w, INTS[i]);
    }
    wamp_wr_end(w);
    wamp_wr_key(w, "reals");
    wamp_wr_array(w, 4);
    wamp_wr_real(w, 1.0);
    wamp_wr_real(w, -0.25);
    wamp_wr_real(w, 1502829396.5978456);
    wamp_wr_real(w, 1e300);
    wamp_wr_end(w);
    wamp_wr_key(w, "esc \"key\"\n");
    wamp_wr_str(w, "quote\" back\\ nl\n tab\t cr\r bell\a x1f\x1f del\x7f é ✓ 🎉");
    wamp_wr_key(w, "t");
    wamp_wr_bool(w, true);
    wamp_wr_key(w, "f");
    wamp_wr_bool(w, false);
    wamp_wr_key(w, "n");
    wamp_wr_str_or_null(w, NULL);
    wamp_wr_key(w, "nested");
    wamp_wr_json(w, nested);
    wamp_wr_key(w, "empty");
    wamp_wr_map(w, 0);
    wamp_wr_end(w);
    wamp_wr_key(w, "");
    wamp_wr_array(w, 0);
    wamp_wr_end(w);
    wamp_wr_end(w);
}

static json_t *doc_expected(const json_t *nested)
{
    json_t *ints = json_array();
    for (size_t i = 0; i < sizeof(INTS) / sizeof(INTS[0]); i++) {
        json_array_append_new(ints, json_integer(INTS[i]));
    }
    return json_pack("{s:o, s:[f,f,f,f], s:s, s:b, s:b, s:n, s:O, s:{}, s:[]}", "ints", ints,
                     "reals", 1.0, -0.25, 1502829396.5978456, 1e300, "esc \"key\"\n",
                     "quote\" back\\ nl\n tab\t cr\r bell\a x1f\x1f del\x7f é ✓ 🎉", "t", 1, "f", 0,
                     "n", "nested", nested, "empty", "");
}

START_TEST(test_document_in_every_mode)
{
    json_t *nested = json_pack("[i, {s:[s, n, f]}, s]", 1, "deep", "x", 2.5, "\0AQID");
    /* A binary value (JSON convention "\0" + base64) inside a jansson value. */
    json_array_set_new(nested, 2, json_stringn("\0AQID", 5));
    json_t *want = doc_expected(nested);
    for (size_t m = 0; m < sizeof(MODES) / sizeof(MODES[0]); m++) {
        wamp_wr w;
        wamp_wr_init(&w, MODES[m], 8, 0);
        write_doc(&w, nested);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_OK);
        json_t *got = finish(&w);
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_msg(json_equal(got, want), "mode %d: %s", MODES[m], g);
        free(g);
        /* Reals stay reals (JSON: "1.0", not "1"). */
        ck_assert(json_is_real(json_array_get(json_object_get(got, "reals"), 0)));
        json_decref(got);
    }
    /* MessagePack: byte for byte what the codec encodes (shortest integer forms, float64). */
    wamp_wr w;
    wamp_wr_init(&w, WAMP_SER_MSGPACK, 8, 0);
    write_doc(&w, nested);
    assert_same_msgpack(&w, want);
    json_decref(want);
    json_decref(nested);
}

END_TEST

/* wamp_wr_json() of every kind of value an envelope holds (written directly, not through the
 * codec's encoder) and of others: byte for byte what the codec encodes, JSON and MessagePack. */
START_TEST(test_json_values_as_the_codec_writes_them)
{
    json_t *values = json_array();
    for (size_t i = 0; i < sizeof(INTS) / sizeof(INTS[0]); i++) {
        json_array_append_new(values, json_integer(INTS[i]));
    }
    json_array_append_new(values, json_integer(INT64_MIN));
    static const size_t lens[] = {0, 1, 31, 32, 255, 256, 65535, 65536};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        char *str = malloc(lens[i] + 1);
        memset(str, 'u', lens[i]);
        json_array_append_new(values, json_stringn(str, lens[i]));
        free(str);
    }
    json_array_append_new(values, json_string("com.example.procédure \"q\" \t\x1f"));
    json_array_append_new(values, json_stringn("\0AQID", 5)); /* binary (JSON convention) */
    json_array_append_new(values, json_stringn("\0not base64!", 13));
    json_array_append_new(values, json_object());
    json_array_append_new(values, json_array());
    json_array_append_new(values, json_pack("{s:i}", "timeout", 1000));
    json_array_append_new(values, json_pack("[i]", 1));
    json_array_append_new(values, json_true());
    json_array_append_new(values, json_false());
    json_array_append_new(values, json_null());
    json_array_append_new(values, json_real(0.5));
    static const wamp_ser sers[] = {WAMP_SER_JSON, WAMP_SER_MSGPACK};
    for (size_t k = 0; k < sizeof(sers) / sizeof(sers[0]); k++) {
        for (size_t i = 0; i < json_array_size(values); i++) {
            json_t *v = json_array_get(values, i);
            json_t *msg = json_pack("[i, O]", 48, v);
            wamp_wr w;
            wamp_wr_init(&w, (int)sers[k], 8, 0);
            wamp_wr_array(&w, 2);
            wamp_wr_int(&w, 48);
            wamp_wr_json(&w, v);
            wamp_wr_end(&w);
            wamp_buf *got = NULL, *want = NULL;
            ck_assert_int_eq(wamp_wr_finish_buf(&w, &got), WAMP_OK);
            ck_assert_int_eq(wamp_codec_encode(sers[k], msg, &want), WAMP_OK);
            ck_assert_msg(wamp_buf_len(got) == wamp_buf_len(want) &&
                                  memcmp(wamp_buf_cdata(got), wamp_buf_cdata(want),
                                         wamp_buf_len(want)) == 0,
                          "ser %d, value %zu", (int)sers[k], i);
            wamp_buf_unref(&got);
            wamp_buf_unref(&want);
            wamp_wr_fini(&w);
            json_decref(msg);
        }
    }
    json_decref(values);
}

END_TEST

/* Strings, arrays and maps across the MessagePack header sizes (fix / 8 / 16 / 32 bit). */
START_TEST(test_msgpack_header_boundaries)
{
    static const size_t lens[] = {0, 15, 16, 31, 32, 255, 256, 65535, 65536};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        size_t n = lens[i];
        char *s = malloc(n + 1);
        memset(s, 'a', n);
        s[n] = '\0';
        json_t *arr = json_array();
        json_t *map = json_object();
        wamp_wr w;
        wamp_wr_init(&w, WAMP_SER_MSGPACK, 8, 0);
        wamp_wr_array(&w, 3);
        wamp_wr_str(&w, s);
        wamp_wr_array(&w, n);
        for (size_t k = 0; k < n; k++) {
            wamp_wr_int(&w, (int64_t)k);
            json_array_append_new(arr, json_integer((json_int_t)k));
        }
        wamp_wr_end(&w);
        size_t keys = n < 300 ? n : 300; /* maps: enough for the 16-bit form */
        wamp_wr_map(&w, keys);
        for (size_t k = 0; k < keys; k++) {
            char key[16];
            snprintf(key, sizeof(key), "k%zu", k);
            wamp_wr_key(&w, key);
            wamp_wr_null(&w);
            json_object_set_new(map, key, json_null());
        }
        wamp_wr_end(&w);
        wamp_wr_end(&w);
        json_t *want = json_pack("[s, o, o]", s, arr, map);
        assert_same_msgpack(&w, want);
        json_decref(want);
        free(s);
    }
}

END_TEST

/* A raw value is copied as it is; here the codec's own encoding of a message. */
START_TEST(test_raw_values)
{
    json_t *msg = json_pack("[i, i, {}, [s, i]]", 36, 5, "x", 7);
    for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_MSGPACK; ser++) {
        wamp_buf *enc = NULL;
        ck_assert_int_eq(wamp_codec_encode((wamp_ser)ser, msg, &enc), WAMP_OK);
        wamp_wr w;
        wamp_wr_init(&w, ser, 8, 0);
        wamp_wr_array(&w, 3);
        wamp_wr_raw(&w, wamp_buf_cdata(enc), wamp_buf_len(enc));
        wamp_wr_int(&w, 1);
        wamp_wr_raw(&w, wamp_buf_cdata(enc), wamp_buf_len(enc));
        wamp_wr_end(&w);
        json_t *got = finish(&w);
        json_t *want = json_pack("[O, i, O]", msg, 1, msg);
        ck_assert(json_equal(got, want));
        json_decref(got);
        json_decref(want);
        wamp_buf_unref(&enc);
    }
    /* Not in tree mode. */
    wamp_wr w;
    wamp_wr_init(&w, WAMP_WR_TREE, 0, 0);
    wamp_wr_raw(&w, "1", 1);
    ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
    wamp_wr_fini(&w);
    json_decref(msg);
}

END_TEST

START_TEST(test_byte_limit)
{
    for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_MSGPACK; ser++) {
        wamp_wr w;
        wamp_wr_init(&w, ser, 4, 64);
        wamp_wr_array(&w, 100);
        for (int i = 0; i < 100; i++) {
            wamp_wr_str(&w, "0123456789");
        }
        wamp_wr_end(&w);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_ETOOBIG);
        wamp_buf *b = NULL;
        ck_assert_int_eq(wamp_wr_finish_buf(&w, &b), WAMP_ETOOBIG);
        ck_assert_ptr_null(b);
        wamp_wr_fini(&w);
        /* Through a jansson value too. */
        json_t *big =
                json_pack("[s, s, s, s, s, s, s, s]", "0123456789", "0123456789", "0123456789",
                          "0123456789", "0123456789", "0123456789", "0123456789", "0123456789");
        wamp_wr_init(&w, ser, 4, 64);
        wamp_wr_json(&w, big);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_ETOOBIG);
        wamp_wr_fini(&w);
        json_decref(big);
        /* Exactly at the limit is fine. */
        wamp_wr_init(&w, ser, 4, ser == WAMP_SER_JSON ? 5 : 4);
        wamp_wr_str(&w, "abc");
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_OK);
        json_t *v = finish(&w);
        ck_assert_str_eq(json_string_value(v), "abc");
        json_decref(v);
    }
}

END_TEST

/* Misuse is an error that sticks, in every mode, and finish hands nothing over. */
START_TEST(test_misuse_is_sticky)
{
    for (size_t m = 0; m < sizeof(MODES) / sizeof(MODES[0]); m++) {
        int mode = MODES[m];
        wamp_wr w;
        /* Fewer elements than announced. */
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_array(&w, 2);
        wamp_wr_int(&w, 1);
        wamp_wr_end(&w);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_int(&w, 2); /* ignored */
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        /* More elements than announced. */
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_array(&w, 1);
        wamp_wr_int(&w, 1);
        wamp_wr_int(&w, 2);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        /* A value where a key is due, a key in an array, a key at the top. */
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_map(&w, 1);
        wamp_wr_int(&w, 1);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_array(&w, 1);
        wamp_wr_key(&w, "k");
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_key(&w, "k");
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        /* A key without its value, then end. */
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_map(&w, 1);
        wamp_wr_key(&w, "k");
        wamp_wr_end(&w);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        /* Two top-level values; end with nothing open. */
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_int(&w, 1);
        wamp_wr_int(&w, 2);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_end(&w);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        /* Not finite. */
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_real(&w, NAN);
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        /* Too deep for the writer's own levels. */
        wamp_wr_init(&w, mode, 8, 0);
        for (int d = 0; d <= WAMP_WR_MAX_DEPTH; d++) {
            wamp_wr_array(&w, 1);
        }
        ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
        wamp_wr_fini(&w);
        /* Incomplete value at finish; the wrong finish for the mode. */
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_array(&w, 1);
        json_t *tree = NULL;
        wamp_buf *buf = NULL;
        if (mode == WAMP_WR_TREE) {
            ck_assert_int_eq(wamp_wr_finish_tree(&w, &tree), WAMP_EINVAL);
        } else {
            ck_assert_int_eq(wamp_wr_finish_buf(&w, &buf), WAMP_EINVAL);
        }
        ck_assert_ptr_null(tree);
        ck_assert_ptr_null(buf);
        wamp_wr_fini(&w);
        wamp_wr_init(&w, mode, 8, 0);
        wamp_wr_null(&w);
        if (mode == WAMP_WR_TREE) {
            ck_assert_int_eq(wamp_wr_finish_buf(&w, &buf), WAMP_EINVAL);
        } else {
            ck_assert_int_eq(wamp_wr_finish_tree(&w, &tree), WAMP_EINVAL);
        }
        wamp_wr_fini(&w);
    }
    /* An unknown serializer. */
    wamp_wr w;
    wamp_wr_init(&w, 7, 8, 0);
    ck_assert_int_eq(wamp_wr_error(&w), WAMP_EINVAL);
    wamp_wr_fini(&w);
}

END_TEST

/* Decodes bytes (ser) the codec's way; NULL if it refuses them. */
static json_t *codec_value(int ser, const void *p, size_t n)
{
    json_t *v = NULL;
    return wamp_codec_decode((wamp_ser)ser, p, n, &v, NULL, 0) == WAMP_OK ? v : NULL;
}

/* Writes one transcoded value into a fresh writer of ser; the writer's error, *out its value. */
static wamp_err transcode(int ser, int src, const void *p, size_t n, json_t **out)
{
    wamp_wr w;
    wamp_wr_init(&w, ser, 8, 0);
    wamp_wr_transcode(&w, src, p, n);
    wamp_err err = wamp_wr_error(&w);
    *out = err == WAMP_OK ? finish(&w) : NULL;
    wamp_wr_fini(&w);
    return err;
}

/* MessagePack into JSON is walked directly: every type, including float32, bin (the "\0" +
 * base64 convention), extreme integers, every header width, and escapes; the result reads back
 * as exactly what the MessagePack decoder makes of the input. Same encoding: a copy; JSON into
 * MessagePack: through a value. */
START_TEST(test_transcode)
{
    static const unsigned char mp[] = {
            0xdc, 0x00, 0x11,                                     /* array16: 17 elements */
            0x00, 0x7f, 0xe0, 0xff,                               /* fixints */
            0xcc, 0xff, 0xcd, 0x01, 0x00,                         /* uint8 255, uint16 256 */
            0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* INT64_MAX */
            0xd3, 0x80, 0,    0,    0,    0,    0,    0,    0,    /* INT64_MIN */
            0xd0, 0x80, 0xd1, 0x80, 0x00,                         /* int8 -128, int16 -32768 */
            0xca, 0x3f, 0xc0, 0x00, 0x00,                         /* float32 1.5 */
            0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18, /* float64 pi */
            0xc4, 0x03, 0x01, 0x02, 0xff,                         /* bin8 */
            0xd9, 0x05, 'q',  '"',  '\\', '\n', 0x01,             /* str8 with escapes */
            0xc0, 0xc2,                                           /* nil, false */
            0x82, 0xa1, 'a',  0xc3, 0xa2, 0xc3, 0xa9, 0x90,       /* {"a": true, "é": []} */
    };
    json_t *want = codec_value(WAMP_SER_MSGPACK, mp, sizeof(mp));
    ck_assert_ptr_nonnull(want);
    json_t *got = NULL;
    ck_assert_int_eq(transcode(WAMP_SER_JSON, WAMP_SER_MSGPACK, mp, sizeof(mp), &got), WAMP_OK);
    char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    ck_assert_msg(json_equal(got, want), "%s", g);
    free(g);
    ck_assert(json_is_real(json_array_get(got, 10))); /* float32 1.5 */
    json_decref(got);
    /* Same encoding, and JSON into MessagePack. */
    wamp_buf *js = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, want, &js), WAMP_OK);
    ck_assert_int_eq(transcode(WAMP_SER_MSGPACK, WAMP_SER_MSGPACK, mp, sizeof(mp), &got), WAMP_OK);
    ck_assert(json_equal(got, want));
    json_decref(got);
    ck_assert_int_eq(
            transcode(WAMP_SER_MSGPACK, WAMP_SER_JSON, wamp_buf_cdata(js), wamp_buf_len(js), &got),
            WAMP_OK);
    ck_assert(json_equal(got, want));
    json_decref(got);
    wamp_buf_unref(&js);
    json_decref(want);
    /* 16- and 32-bit headers. */
    json_t *big = json_array();
    json_t *bigmap = json_object();
    for (int i = 0; i < 70000; i++) {
        json_array_append_new(big, json_integer(i));
    }
    for (int i = 0; i < 20; i++) {
        char k[8];
        snprintf(k, sizeof(k), "k%d", i);
        json_object_set_new(bigmap, k, json_string(k));
    }
    json_array_append_new(big, bigmap);
    wamp_buf *enc = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_MSGPACK, big, &enc), WAMP_OK);
    ck_assert_int_eq(transcode(WAMP_SER_JSON, WAMP_SER_MSGPACK, wamp_buf_cdata(enc),
                               wamp_buf_len(enc), &got),
                     WAMP_OK);
    ck_assert(json_equal(got, big));
    json_decref(got);
    wamp_buf_unref(&enc);
    json_decref(big);
}

END_TEST

/* Input the decoder refuses is refused here too (WAMP_EPROTO), never written half. */
START_TEST(test_transcode_malformed)
{
    static const struct {
        const char *what;
        unsigned char b[12];
        size_t n;
    } bad[] = {
            {"empty", {0}, 0},
            {"truncated array", {0x92, 0x01}, 2},
            {"truncated str", {0xa5, 'a', 'b'}, 3},
            {"truncated uint32", {0xce, 0x01, 0x02}, 3},
            {"never-used byte", {0xc1}, 1},
            {"ext", {0xd4, 0x01, 0x02}, 3},
            {"int key", {0x81, 0x01, 0x02}, 3},
            {"NaN", {0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0}, 9},
            {"trailing byte", {0x01, 0x02}, 2},
            {"huge count", {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}, 6},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *got = NULL;
        ck_assert_msg(transcode(WAMP_SER_JSON, WAMP_SER_MSGPACK, bad[i].b, bad[i].n, &got) ==
                              WAMP_EPROTO,
                      "%s", bad[i].what);
        ck_assert_ptr_null(got);
    }
    /* Nesting deeper than the codec accepts (every value has a depth, the root's is 1), and
     * the deepest it accepts. */
    size_t depth = WAMP_CODEC_MAX_DEPTH + 1;
    unsigned char *deep = malloc(depth + 1);
    memset(deep, 0x91, depth);
    deep[depth] = 0x01;
    json_t *got = NULL;
    ck_assert_int_eq(transcode(WAMP_SER_JSON, WAMP_SER_MSGPACK, deep, depth + 1, &got),
                     WAMP_EPROTO);
    ck_assert_int_eq(transcode(WAMP_SER_JSON, WAMP_SER_MSGPACK, deep + 2, depth - 1, &got),
                     WAMP_OK);
    json_decref(got);
    free(deep);
    /* Not valid JSON either way. */
    ck_assert_int_eq(transcode(WAMP_SER_MSGPACK, WAMP_SER_JSON, "[1,", 3, &got), WAMP_EPROTO);
}

END_TEST

static Suite *wamp_wr_suite(void)
{
    Suite *s = suite_create("wamp_wr");
    TCase *tc = tcase_create("writer");
    tcase_add_test(tc, test_document_in_every_mode);
    tcase_add_test(tc, test_msgpack_header_boundaries);
    tcase_add_test(tc, test_json_values_as_the_codec_writes_them);
    tcase_add_test(tc, test_raw_values);
    tcase_add_test(tc, test_byte_limit);
    tcase_add_test(tc, test_misuse_is_sticky);
    tcase_add_test(tc, test_transcode);
    tcase_add_test(tc, test_transcode_malformed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_wr_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
