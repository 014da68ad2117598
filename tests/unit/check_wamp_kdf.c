/* check_wamp_kdf.c: PBKDF2-HMAC-SHA256 against published vectors (the router's WAMP-CRA salted
 * secrets and the management client's use the same function). */
#include <stdint.h>
#include <stdlib.h>

#include <check.h>
#include <sodium.h>

#include "wamp_kdf.h"

static void hex_eq(const uint8_t *bin, size_t len, const char *want)
{
    char hex[256];
    ck_assert_uint_le(len * 2 + 1, sizeof(hex));
    sodium_bin2hex(hex, sizeof(hex), bin, len);
    ck_assert_str_eq(hex, want);
}

/* RFC 7914 section 11 (PBKDF2-HMAC-SHA256), plus the widely published "password"/"salt" ones. */
START_TEST(test_pbkdf2_vectors)
{
    uint8_t out[64];
    ck_assert_int_eq(wamp_pbkdf2_sha256((const uint8_t *)"passwd", 6, (const uint8_t *)"salt", 4, 1,
                                        out, 64),
                     WAMP_OK);
    hex_eq(out, 64,
           "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664"
           "b39d77ef317c71b845b1e30bd509112041d3a19783");
    ck_assert_int_eq(wamp_pbkdf2_sha256((const uint8_t *)"Password", 8, (const uint8_t *)"NaCl", 4,
                                        80000, out, 64),
                     WAMP_OK);
    hex_eq(out, 64,
           "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549adb84"
           "1b51c9b3176a272bdebba1d078478f62b397f33c8d");
    ck_assert_int_eq(wamp_pbkdf2_sha256((const uint8_t *)"password", 8, (const uint8_t *)"salt", 4,
                                        4096, out, 32),
                     WAMP_OK);
    hex_eq(out, 32, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a");
    /* A length that is not a multiple of the block size takes a prefix of the last block. */
    ck_assert_int_eq(wamp_pbkdf2_sha256((const uint8_t *)"password", 8, (const uint8_t *)"salt", 4,
                                        2, out, 20),
                     WAMP_OK);
    hex_eq(out, 20, "ae4d0c95af6b46d32d0adff928f06dd02a303f8e");
    ck_assert_int_eq(wamp_pbkdf2_sha256((const uint8_t *)"p", 1, NULL, 0, 0, out, 32), WAMP_EINVAL);
    ck_assert_int_eq(wamp_pbkdf2_sha256((const uint8_t *)"p", 1, NULL, 0, 1, out, 0), WAMP_EINVAL);
}

END_TEST

static Suite *kdf_suite(void)
{
    Suite *s = suite_create("wamp_kdf");
    TCase *tc = tcase_create("pbkdf2");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_pbkdf2_vectors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (sodium_init() < 0) {
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(kdf_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
