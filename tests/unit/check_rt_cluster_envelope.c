/* check_rt_cluster_envelope.c: the wire form of a publication between nodes: round trips with
 * every optional part, several envelopes in one message, the options a receiver needs (and only
 * those), every truncation and malformed header refused. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rt_cluster_envelope.h"

static const unsigned char ARGS_BYTES[] = {0x92, 0x01, 0xa1, 'x'};   /* msgpack [1, "x"] */
static const unsigned char KWARGS_BYTES[] = {0x81, 0xa1, 'k', 0x02}; /* msgpack {"k": 2} */

static rt_broker_pub full_pub(json_t *opts, const uint8_t *corr)
{
    rt_broker_pub p = {.topic = "com.example.t",
                       .publication = 9007199254740992ull,
                       .payload = {.ser = WAMP_SER_MSGPACK,
                                   .args = {ARGS_BYTES, sizeof(ARGS_BYTES)},
                                   .kwargs = {KWARGS_BYTES, sizeof(KWARGS_BYTES)}},
                       .options = opts,
                       .disclose = true,
                       .publisher = 123456789,
                       .publisher_authid = "alice",
                       .publisher_authrole = NULL,
                       .correlation = corr};
    return p;
}

START_TEST(test_round_trip_every_part)
{
    uint8_t corr[RT_BROKER_CORRELATION_LEN];
    for (size_t i = 0; i < sizeof(corr); i++) {
        corr[i] = (uint8_t)(i * 17);
    }
    json_t *opts = json_pack("{s:b, s:b, s:[I], s:[s], s:s, s:b}", "acknowledge", 1, "exclude_me",
                             0, "exclude", (json_int_t)42, "eligible_authrole", "user",
                             "ppt_scheme", "x_custom", "retain", 1);
    rt_broker_pub p = full_pub(opts, corr);
    rt_cluster_bytes b = {0};
    uint64_t target[2] = {77, 88};
    ck_assert(rt_cluster_envelope_add(&b, "node_a", "realm1", &p, NULL));
    size_t first = b.len;
    ck_assert(rt_cluster_envelope_add(&b, "node_a", "realm1", &p, target));

    rt_cluster_envelope e;
    size_t used = rt_cluster_envelope_read(b.p, b.len, &e);
    ck_assert_uint_eq(used, first);
    ck_assert_str_eq(e.node, "node_a");
    ck_assert_str_eq(e.realm, "realm1");
    ck_assert_str_eq(e.pub.topic, "com.example.t");
    ck_assert_uint_eq(e.pub.publication, 9007199254740992ull);
    ck_assert(e.pub.disclose);
    ck_assert_uint_eq(e.pub.publisher, 123456789);
    ck_assert_str_eq(e.pub.publisher_authid, "alice");
    ck_assert_ptr_null(e.pub.publisher_authrole);
    ck_assert_ptr_nonnull(e.pub.correlation);
    ck_assert_int_eq(memcmp(e.pub.correlation, corr, sizeof(corr)), 0);
    ck_assert_int_eq(e.pub.payload.ser, WAMP_SER_MSGPACK);
    ck_assert_uint_eq(e.pub.payload.args.len, sizeof(ARGS_BYTES));
    ck_assert_int_eq(memcmp(e.pub.payload.args.p, ARGS_BYTES, sizeof(ARGS_BYTES)), 0);
    ck_assert_int_eq(memcmp(e.pub.payload.kwargs.p, KWARGS_BYTES, sizeof(KWARGS_BYTES)), 0);
    /* Only what a receiver applies: the lists and ppt_*. */
    json_t *want = json_pack("{s:[I], s:[s], s:s}", "exclude", (json_int_t)42, "eligible_authrole",
                             "user", "ppt_scheme", "x_custom");
    ck_assert(json_equal(e.pub.options, want));
    json_decref(want);
    ck_assert(!e.has_target);
    rt_cluster_envelope_fini(&e);

    used = rt_cluster_envelope_read(b.p + first, b.len - first, &e);
    ck_assert_uint_eq(used, b.len - first);
    ck_assert(e.has_target);
    ck_assert_uint_eq(e.session, 77);
    ck_assert_uint_eq(e.sub, 88);
    rt_cluster_envelope_fini(&e);
    json_decref(opts);
    free(b.p);
}

END_TEST

START_TEST(test_minimal_and_json_payload)
{
    json_t *args = json_pack("[i, s]", 1, "two");
    json_t *kwargs = json_pack("{s:i}", "k", 3);
    rt_broker_pub p = {.topic = "com.t", .publication = 1, .args = args, .kwargs = kwargs};
    rt_broker_pub none = {.topic = "com.t", .publication = 2};
    rt_cluster_bytes b = {0};
    ck_assert(rt_cluster_envelope_add(&b, "n", "r", &p, NULL));
    size_t first = b.len;
    ck_assert(rt_cluster_envelope_add(&b, "n", "r", &none, NULL));
    rt_cluster_envelope e;
    ck_assert_uint_eq(rt_cluster_envelope_read(b.p, b.len, &e), first);
    ck_assert(json_equal(e.pub.args, args));
    ck_assert(json_equal(e.pub.kwargs, kwargs));
    ck_assert_int_eq(e.pub.payload.ser, 0);
    ck_assert(!e.pub.disclose);
    ck_assert_ptr_null(e.pub.correlation);
    ck_assert_ptr_null(e.pub.options);
    rt_cluster_envelope_fini(&e);
    ck_assert_uint_eq(rt_cluster_envelope_read(b.p + first, b.len - first, &e), b.len - first);
    ck_assert_ptr_null(e.pub.args);
    ck_assert_ptr_null(e.pub.kwargs);
    ck_assert_uint_eq(e.pub.publication, 2);
    rt_cluster_envelope_fini(&e);
    json_decref(args);
    json_decref(kwargs);
    free(b.p);
}

END_TEST

START_TEST(test_every_truncation_and_corruption_refused)
{
    uint8_t corr[RT_BROKER_CORRELATION_LEN] = {1};
    json_t *opts = json_pack("{s:[s]}", "exclude_authid", "bob");
    rt_broker_pub p = full_pub(opts, corr);
    rt_cluster_bytes b = {0};
    uint64_t target[2] = {1, 2};
    ck_assert(rt_cluster_envelope_add(&b, "node_a", "realm1", &p, target));
    rt_cluster_envelope e;
    for (size_t n = 0; n < b.len; n++) {
        unsigned char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees any overread */
        memcpy(copy, b.p, n);
        ck_assert_uint_eq(rt_cluster_envelope_read(copy, n, &e), 0);
        rt_cluster_envelope_fini(&e);
        free(copy);
    }
    /* Flip each byte of the header: never a crash; what is accepted stays within the data. */
    size_t header = b.len - sizeof(ARGS_BYTES) - sizeof(KWARGS_BYTES);
    for (size_t i = 0; i < header; i++) {
        unsigned char *copy = malloc(b.len);
        memcpy(copy, b.p, b.len);
        copy[i] ^= 0xff;
        size_t used = rt_cluster_envelope_read(copy, b.len, &e);
        ck_assert_uint_le(used, b.len);
        rt_cluster_envelope_fini(&e);
        free(copy);
    }
    /* A wrong version, and a topic that is not a URI. */
    b.p[0] = 2;
    ck_assert_uint_eq(rt_cluster_envelope_read(b.p, b.len, &e), 0);
    rt_cluster_envelope_fini(&e);
    b.len = 0;
    rt_broker_pub bad_topic = {.topic = "com..t", .publication = 1};
    ck_assert(rt_cluster_envelope_add(&b, "n", "r", &bad_topic, NULL));
    ck_assert_uint_eq(rt_cluster_envelope_read(b.p, b.len, &e), 0);
    rt_cluster_envelope_fini(&e);
    json_decref(opts);
    free(b.p);
}

END_TEST

static Suite *rt_cluster_envelope_suite(void)
{
    Suite *s = suite_create("rt_cluster_envelope");
    TCase *tc = tcase_create("envelope");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_round_trip_every_part);
    tcase_add_test(tc, test_minimal_and_json_payload);
    tcase_add_test(tc, test_every_truncation_and_corruption_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_cluster_envelope_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
