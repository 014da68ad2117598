/* check_wamp_cbor.c: the CBOR encoder of jansson values and its head writer: preferred
 * serialization at every head size boundary, integers to -2^63, reals as float64, the binary
 * convention to byte strings (and non-canonical base64 left a text string), NUL in keys, the
 * depth limit, and the encoding read back by the token reader. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "wamp_cbor.h"
#include "wamp_codec.h"
#include "wamp_rd.h"

static void assert_encodes(const json_t *v, const void *want, size_t n)
{
    wamp_buf *b = NULL;
    ck_assert_int_eq(wamp_cbor_encode(v, &b), WAMP_OK);
    ck_assert_uint_eq(wamp_buf_len(b), n);
    ck_assert_mem_eq(wamp_buf_cdata(b), want, n);
    ck_assert_int_eq(wamp_rd_validate(WAMP_SER_CBOR, wamp_buf_cdata(b), n, NULL, 0), WAMP_OK);
    wamp_buf_unref(&b);
}

#define BYTES(s) (s), (sizeof(s) - 1)

START_TEST(test_head_boundaries)
{
    static const struct {
        uint64_t v;
        size_t len;
        unsigned char first;
    } cases[] = {
            {0, 1, 0x00},
            {23, 1, 0x17},
            {24, 2, 0x18},
            {255, 2, 0x18},
            {256, 3, 0x19},
            {65535, 3, 0x19},
            {65536, 5, 0x1a},
            {4294967295ULL, 5, 0x1a},
            {4294967296ULL, 9, 0x1b},
            {UINT64_MAX, 9, 0x1b},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned char b[9];
        ck_assert_uint_eq(wamp_cbor_head(b, 0, cases[i].v), cases[i].len);
        ck_assert_uint_eq(b[0], cases[i].first);
        uint64_t back = cases[i].len == 1 ? (uint64_t)(b[0] & 0x1f) : 0;
        for (size_t k = 1; k < cases[i].len; k++) {
            back = back << 8 | b[k];
        }
        ck_assert(back == cases[i].v);
    }
    unsigned char b[9];
    ck_assert_uint_eq(wamp_cbor_head(b, 5, 2), 1);
    ck_assert_uint_eq(b[0], 0xa2); /* map of 2 */
}

END_TEST

START_TEST(test_f64)
{
    unsigned char b[9];
    ck_assert_uint_eq(wamp_cbor_f64(b, 1.0), 9);
    ck_assert(memcmp(b, "\xfb\x3f\xf0\x00\x00\x00\x00\x00\x00", 9) == 0);
    ck_assert_uint_eq(wamp_cbor_f64(b, -0.0), 9);
    ck_assert(memcmp(b, "\xfb\x80\x00\x00\x00\x00\x00\x00\x00", 9) == 0);
    ck_assert_uint_eq(wamp_cbor_f64(b, 5e-324), 9);
    ck_assert(memcmp(b, "\xfb\x00\x00\x00\x00\x00\x00\x00\x01", 9) == 0);
}

END_TEST

START_TEST(test_values)
{
    json_t *v = json_pack("[I, I, i, f, f, b, n, s]", (json_int_t)INT64_MIN, (json_int_t)INT64_MAX,
                          -24, 1.0, -0.0, 1, "a");
    assert_encodes(v,
                   BYTES("\x88\x3b\x7f\xff\xff\xff\xff\xff\xff\xff\x1b\x7f\xff\xff\xff\xff\xff\xff"
                         "\xff\x37\xfb\x3f\xf0\x00\x00\x00\x00\x00\x00\xfb\x80\x00\x00\x00\x00\x00"
                         "\x00\x00\xf5\xf6\x61"
                         "a"));
    json_decref(v);
    /* The binary convention becomes a byte string; anything else after NUL stays text. */
    v = json_array();
    json_array_append_new(v, json_stringn("\0AQI=", 5));
    json_array_append_new(v, json_stringn("\0AQJ=", 5));
    json_array_append_new(v, json_stringn("\0", 1));
    assert_encodes(v, BYTES("\x83\x42\x01\x02\x65\x00"
                            "AQJ=\x40"));
    json_decref(v);
    /* NUL in a key is kept (jansson keys with a length). */
    v = json_object();
    json_object_setn_new(v, "k\0", 2, json_true());
    assert_encodes(v, BYTES("\xa1\x62k\x00\xf5"));
    json_decref(v);
}

END_TEST

/* Nesting deeper than WAMP_CODEC_MAX_DEPTH is refused (this also stops reference cycles). */
START_TEST(test_depth_limit)
{
    wamp_buf *b = NULL;
    json_t *root = json_array();
    json_t *cur = root;
    for (int i = 0; i < WAMP_CODEC_MAX_DEPTH; i++) {
        json_t *next = json_array();
        json_array_append_new(cur, next);
        cur = next;
    }
    ck_assert_int_eq(wamp_cbor_encode(root, &b), WAMP_EINVAL);
    ck_assert_ptr_null(b);
    json_decref(root);
}

END_TEST

static Suite *wamp_cbor_suite(void)
{
    Suite *s = suite_create("wamp_cbor");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_head_boundaries);
    tcase_add_test(tc, test_f64);
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_depth_limit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_cbor_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
