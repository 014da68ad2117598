/* check_trace_record.c: records and the refcounted objects they share; correlation UUIDs. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <sodium.h>

#include "trace_record.h"
#include "wamp_types.h"

START_TEST(test_peer_shares_and_copies)
{
    char realm[] = "realm1";
    trace_peer *p = trace_peer_new(42, realm, "alice", NULL);
    ck_assert_ptr_nonnull(p);
    realm[0] = 'X'; /* copied at creation */
    ck_assert_str_eq(trace_peer_realm(p), "realm1");
    ck_assert_str_eq(trace_peer_authid(p), "alice");
    ck_assert_ptr_null(trace_peer_authrole(p));
    ck_assert_uint_eq(trace_peer_session_id(p), 42);
    ck_assert_uint_eq(trace_peer_text_bytes(p), sizeof("realm1") + sizeof("alice"));
    trace_peer *q = trace_peer_ref(p);
    ck_assert_ptr_eq(q, p);
    ck_assert_uint_eq(trace_peer_refs(p), 2);
    trace_peer_unref(&q);
    ck_assert_ptr_null(q);
    ck_assert_uint_eq(trace_peer_refs(p), 1);
    trace_peer_unref(&p);
    ck_assert_ptr_null(p);
    trace_peer_unref(&p); /* NULL-safe */
    trace_peer_unref(NULL);
    trace_peer *empty = trace_peer_new(1, NULL, NULL, NULL);
    ck_assert_ptr_null(trace_peer_realm(empty));
    ck_assert_uint_eq(trace_peer_text_bytes(empty), 0);
    trace_peer_unref(&empty);
}

END_TEST

START_TEST(test_str_refcount)
{
    trace_str *s = trace_str_new("com.example.topic");
    ck_assert_str_eq(trace_str_get(s), "com.example.topic");
    trace_str *t = trace_str_ref(s);
    ck_assert_uint_eq(trace_str_refs(s), 2);
    trace_str_unref(&t);
    trace_str_unref(&s);
    ck_assert_ptr_null(s);
    trace_str_unref(NULL);
}

END_TEST

START_TEST(test_clone_and_fini)
{
    trace_record r;
    memset(&r, 0, sizeof(r));
    r.peer = trace_peer_new(1, "r", "a", "b");
    r.uri = trace_str_new("u");
    r.wire = wamp_buf_new_copy("[1]", 3);
    r.seq = 9;
    r.flags = TRACE_CORR_HAS;
    trace_record c;
    trace_record_clone(&r, &c);
    ck_assert_uint_eq(c.seq, 9);
    ck_assert_ptr_eq(c.wire, r.wire);
    ck_assert_uint_eq(wamp_buf_refs(r.wire), 2);
    ck_assert_uint_eq(trace_peer_refs(r.peer), 2);
    ck_assert_uint_eq(trace_str_refs(r.uri), 2);
    ck_assert_uint_eq(trace_record_cost(&c), 3 + TRACE_RECORD_OVERHEAD);
    trace_record_fini(&c);
    ck_assert_ptr_null(c.wire);
    ck_assert_uint_eq(c.seq, 0);
    ck_assert_uint_eq(wamp_buf_refs(r.wire), 1);
    ck_assert_uint_eq(trace_record_cost(&c), TRACE_RECORD_OVERHEAD);
    trace_record_fini(&r);
    trace_record_fini(NULL);
    ck_assert(!trace_record_is_marker(&r));
    r.msg_type = TRACE_MSG_MARKER;
    ck_assert(trace_record_is_marker(&r));
}

END_TEST

/* trace_record_release() (the store's eviction) drops exactly one reference on each of the
 * three shared objects, and frees those it held the last reference to (ASan's leak check fails
 * the suite otherwise). */
START_TEST(test_release_drops_every_reference)
{
    trace_peer *peer = trace_peer_new(7, "realm1", "alice", "user");
    trace_str *uri = trace_str_new("com.example.topic");
    wamp_buf *wire = wamp_buf_new_copy("[36,1,2,{}]", 11);
    trace_record r;
    memset(&r, 0, sizeof(r));
    r.peer = trace_peer_ref(peer);
    r.uri = trace_str_ref(uri);
    r.wire = wamp_buf_ref(wire);
    trace_record_release(&r);
    ck_assert_uint_eq(trace_peer_refs(peer), 1);
    ck_assert_uint_eq(trace_str_refs(uri), 1);
    ck_assert_uint_eq(wamp_buf_refs(wire), 1);
    /* Now the record holds the only references: release frees them. */
    r.peer = peer;
    r.uri = uri;
    r.wire = wire;
    trace_record_release(&r);
    /* A record without shared objects (a marker without URI, a dropped tx) is fine too. */
    memset(&r, 0, sizeof(r));
    trace_record_release(&r);
}

END_TEST

START_TEST(test_names)
{
    ck_assert_str_eq(trace_dir_name(TRACE_RX), "rx");
    ck_assert_str_eq(trace_dir_name(TRACE_TX), "tx");
    ck_assert_ptr_null(trace_dir_name(0));
    ck_assert_str_eq(trace_msg_type_title(WAMP_MSG_PUBLISH), "Publish");
    ck_assert_str_eq(trace_msg_type_title(WAMP_MSG_UNSUBSCRIBED), "Unsubscribed");
    ck_assert_str_eq(trace_msg_type_title(TRACE_MSG_MARKER), "Marker");
    ck_assert_str_eq(trace_msg_type_title(0), "Unknown");
}

END_TEST

START_TEST(test_uuid_v4)
{
    ck_assert_int_ge(sodium_init(), 0);
    uint8_t a[TRACE_UUID_LEN], b[TRACE_UUID_LEN];
    char s[TRACE_UUID_STRLEN];
    for (int i = 0; i < 200; i++) {
        trace_uuid_new(a);
        ck_assert_uint_eq(a[6] >> 4, 4);      /* version 4 */
        ck_assert_uint_eq(a[8] & 0xc0, 0x80); /* variant 10x */
        trace_uuid_format(a, s);
        ck_assert_uint_eq(strlen(s), 36);
        for (size_t k = 0; k < 36; k++) {
            if (k == 8 || k == 13 || k == 18 || k == 23) {
                ck_assert_int_eq(s[k], '-');
            } else {
                ck_assert_ptr_nonnull(strchr("0123456789abcdef", s[k]));
            }
        }
        ck_assert_int_eq(s[14], '4');
        ck_assert_ptr_nonnull(strchr("89ab", s[19]));
    }
    trace_uuid_new(b);
    ck_assert_int_ne(memcmp(a, b, TRACE_UUID_LEN), 0);
}

END_TEST

START_TEST(test_uuid_generator)
{
    trace_uuid_gen g;
    trace_uuid_gen_init(&g);

    enum {
        N = 4096
    };

    uint8_t(*ids)[TRACE_UUID_LEN] = calloc(N, TRACE_UUID_LEN);
    ck_assert_ptr_nonnull(ids);
    for (size_t i = 0; i < N; i++) {
        trace_uuid_gen_next(&g, ids[i]);
        ck_assert_uint_eq(ids[i][6] >> 4, 4);        /* version 4 */
        ck_assert_uint_eq(ids[i][8] & 0xc0u, 0x80u); /* RFC 4122 variant */
        char text[TRACE_UUID_STRLEN];
        trace_uuid_format(ids[i], text);
        ck_assert_int_eq((int)strlen(text), 36);
    }
    size_t repeats = 0;
    for (size_t i = 0; i < N; i++) {
        for (size_t j = i + 1; j < N; j++) {
            repeats += memcmp(ids[i], ids[j], TRACE_UUID_LEN) == 0;
        }
    }
    ck_assert_uint_eq(repeats, 0);
    /* Consecutive ids differ in their second half beyond a counter step. */
    ck_assert(memcmp(ids[0] + 9, ids[1] + 9, 7) != 0);
    free(ids);
}

END_TEST

static Suite *trace_record_suite(void)
{
    Suite *s = suite_create("trace_record");
    TCase *tc = tcase_create("record");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_peer_shares_and_copies);
    tcase_add_test(tc, test_str_refcount);
    tcase_add_test(tc, test_clone_and_fini);
    tcase_add_test(tc, test_release_drops_every_reference);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_uuid_v4);
    tcase_add_test(tc, test_uuid_generator);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trace_record_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
