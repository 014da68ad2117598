/* check_ctl_auth.c: wampscope-ctl's client-side authentication computations against vectors
 * from independent implementations (Python hashlib/hmac for PBKDF2 and WAMP-CRA, PyNaCl for
 * Ed25519 / cryptosign, RFC 8032 test 1 key). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <sodium.h>

#include "ctl_auth.h"

static void hex_of(const unsigned char *b, size_t n, char *out)
{
    sodium_bin2hex(out, n * 2 + 1, b, n);
}

START_TEST(test_wampcra)
{
    ctl_auth a;
    ctl_auth_init(&a);
    ck_assert(ctl_auth_set_secret(&a, CTL_AUTH_WAMPCRA, "secret123\n"));
    const char *ch = "{\"authid\":\"admin\",\"nonce\":\"abc\"}";
    json_t *extra = json_pack("{s:s}", "challenge", ch);
    char why[200];
    char *sig = ctl_auth_signature(&a, "wampcra", extra, why, sizeof(why));
    ck_assert_ptr_nonnull(sig);
    ck_assert_str_eq(sig, "jV1r/KdnS1nw9O7dV74+8hQirvIw9izy8BKbqr3wUxI=");
    free(sig);
    json_decref(extra);
    /* Salted: key = base64(PBKDF2(secret, salt, 1000, 32)). */
    ck_assert(ctl_auth_set_secret(&a, CTL_AUTH_WAMPCRA, "L3L1YUE8Txlw"));
    extra = json_pack("{s:s, s:s, s:i, s:i}", "challenge", ch, "salt", "salt123", "iterations",
                      1000, "keylen", 32);
    sig = ctl_auth_signature(&a, "wampcra", extra, why, sizeof(why));
    ck_assert_ptr_nonnull(sig);
    ck_assert_str_eq(sig, "23oxBrgoHItfMmHdiC2N5qDYrFdFLj6SlnhFREptERw=");
    free(sig);
    json_decref(extra);
    /* A challenge for another method, or without its challenge string: no signature. */
    ck_assert_ptr_null(ctl_auth_signature(&a, "ticket", NULL, why, sizeof(why)));
    ck_assert_ptr_nonnull(strstr(why, "ticket"));
    extra = json_object();
    ck_assert_ptr_null(ctl_auth_signature(&a, "wampcra", extra, why, sizeof(why)));
    json_decref(extra);
    ctl_auth_fini(&a);
    ck_assert_ptr_null(a.secret);
}

END_TEST

START_TEST(test_ticket_and_hello)
{
    ctl_auth a;
    ctl_auth_init(&a);
    json_t *d = json_object();
    ck_assert(ctl_auth_hello_details(&a, d));
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(d, "authmethods"), 0)),
                     "anonymous");
    json_decref(d);
    ck_assert(!ctl_auth_set_secret(&a, CTL_AUTH_TICKET, "\n"));
    ck_assert(ctl_auth_set_secret(&a, CTL_AUTH_TICKET, "t0k3n\r\nignored"));
    a.authid = "joe";
    d = json_object();
    ck_assert(ctl_auth_hello_details(&a, d));
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(d, "authmethods"), 0)),
                     "ticket");
    ck_assert_str_eq(json_string_value(json_object_get(d, "authid")), "joe");
    json_decref(d);
    char why[200];
    char *sig = ctl_auth_signature(&a, "ticket", NULL, why, sizeof(why));
    ck_assert_str_eq(sig, "t0k3n");
    free(sig);
    /* From a file (first line). */
    char path[] = "/tmp/check_ctl_auth_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq((int)write(fd, "filetoken\nsecond\n", 17), 17);
    close(fd);
    ck_assert(ctl_auth_load_secret(&a, CTL_AUTH_TICKET, path, why, sizeof(why)));
    ck_assert_str_eq(a.secret, "filetoken");
    unlink(path);
    ck_assert(!ctl_auth_load_secret(&a, CTL_AUTH_TICKET, path, why, sizeof(why)));
    ck_assert_ptr_nonnull(strstr(why, path));
    ctl_auth_fini(&a);
}

END_TEST

START_TEST(test_cryptosign)
{
    ctl_auth a;
    ctl_auth_init(&a);
    /* Crossbar-style key file text; RFC 8032 test 1 seed. */
    ck_assert(ctl_auth_set_cryptosign_text(
            &a, "creator: test\npublic-key-ed25519: "
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\n"
                "private-key-ed25519: "
                "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60\n"));
    ck_assert_str_eq(a.pubkey_hex,
                     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    json_t *d = json_object();
    ck_assert(ctl_auth_hello_details(&a, d));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "authextra"), "pubkey")),
                     a.pubkey_hex);
    json_decref(d);
    char challenge[65];
    unsigned char raw[32];
    for (int i = 0; i < 32; i++) {
        raw[i] = (unsigned char)i;
    }
    hex_of(raw, 32, challenge);
    json_t *extra = json_pack("{s:s}", "challenge", challenge);
    char why[200];
    char *sig = ctl_auth_signature(&a, "cryptosign", extra, why, sizeof(why));
    ck_assert_ptr_nonnull(sig);
    /* PyNaCl: SigningKey(seed).sign(bytes(range(32))).hex() = signature + message. */
    ck_assert_str_eq(sig, "00c1db988bb12fd7351a6054ae3fac90fab7e4fc56b1651c7181f5f55f896f66"
                          "3933d3a90605d9058e9d0ac45950ee2d3c9c9b14857415587179fe0ccac35f09"
                          "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    free(sig);
    json_decref(extra);
    extra = json_pack("{s:s}", "challenge", "zz");
    ck_assert_ptr_null(ctl_auth_signature(&a, "cryptosign", extra, why, sizeof(why)));
    json_decref(extra);
    /* A bare seed works too; text without 64 hex digits does not. */
    ck_assert(ctl_auth_set_cryptosign_text(
            &a, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60\n"));
    ck_assert_str_eq(a.pubkey_hex,
                     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    ck_assert(!ctl_auth_set_cryptosign_text(&a, "private-key: 1234"));
    ctl_auth_fini(&a);
    ck_assert_ptr_null(a.sk);
}

END_TEST

static Suite *ctl_auth_suite(void)
{
    Suite *s = suite_create("ctl_auth");
    TCase *tc = tcase_create("auth");
    tcase_add_test(tc, test_wampcra);
    tcase_add_test(tc, test_ticket_and_hello);
    tcase_add_test(tc, test_cryptosign);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (sodium_init() < 0) {
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(ctl_auth_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
