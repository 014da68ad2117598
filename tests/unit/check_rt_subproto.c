/* check_rt_subproto.c: WebSocket subprotocol negotiation (router/rt_subproto.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rt_subproto.h"

#define BOTH         (RT_SUBPROTO_BIT(WAMP_SER_JSON) | RT_SUBPROTO_BIT(WAMP_SER_MSGPACK))
#define JSON_ONLY    RT_SUBPROTO_BIT(WAMP_SER_JSON)
#define MSGPACK_ONLY RT_SUBPROTO_BIT(WAMP_SER_MSGPACK)

/* rt_subproto_choose() on a C string; -1 when nothing is chosen. */
static int choose(const char *offer, unsigned enabled)
{
    wamp_ser ser = (wamp_ser)0;
    if (!rt_subproto_choose(offer, offer ? strlen(offer) : 0, enabled, &ser)) {
        return -1;
    }
    return (int)ser;
}

/* What Debian's python3-autobahn offers by default (ApplicationRunner without serializers). */
static const char autobahn_python[] =
        "wamp.2.cbor.batched,wamp.2.cbor,wamp.2.msgpack.batched,wamp.2.msgpack,"
        "wamp.2.ubjson.batched,wamp.2.ubjson,wamp.2.json.batched,wamp.2.json,"
        "wamp.2.flatbuffers.batched,wamp.2.flatbuffers";

START_TEST(test_router_order_wins_over_client_order)
{
    ck_assert_int_eq(choose("wamp.2.json, wamp.2.msgpack", BOTH), WAMP_SER_MSGPACK);
    ck_assert_int_eq(choose("wamp.2.msgpack, wamp.2.json", BOTH), WAMP_SER_MSGPACK);
    ck_assert_int_eq(choose("wamp.2.json", BOTH), WAMP_SER_JSON);
    ck_assert_int_eq(choose("wamp.2.msgpack", BOTH), WAMP_SER_MSGPACK);
    ck_assert_int_eq(choose(autobahn_python, BOTH), WAMP_SER_MSGPACK);
    /* CBOR when enabled: after MessagePack, before JSON. */
    const unsigned all = BOTH | RT_SUBPROTO_BIT(WAMP_SER_CBOR);
    ck_assert_int_eq(choose("wamp.2.cbor", all), WAMP_SER_CBOR);
    ck_assert_int_eq(choose("wamp.2.json, wamp.2.cbor", all), WAMP_SER_CBOR);
    ck_assert_int_eq(choose("wamp.2.cbor, wamp.2.msgpack", all), WAMP_SER_MSGPACK);
}

END_TEST

START_TEST(test_listener_serializers_restrict)
{
    ck_assert_int_eq(choose("wamp.2.json, wamp.2.msgpack", JSON_ONLY), WAMP_SER_JSON);
    ck_assert_int_eq(choose(autobahn_python, JSON_ONLY), WAMP_SER_JSON);
    ck_assert_int_eq(choose("wamp.2.json", MSGPACK_ONLY), -1);
    ck_assert_int_eq(choose("wamp.2.msgpack", 0), -1);
}

END_TEST

START_TEST(test_unsupported_variants_skipped)
{
    ck_assert_int_eq(choose("wamp.2.cbor", BOTH), -1);
    ck_assert_int_eq(choose("wamp.2.json.batched,wamp.2.msgpack.batched", BOTH), -1);
    ck_assert_int_eq(choose("wamp.2.ubjson, wamp.2.flatbuffers, wamp.2.cbor.batched", BOTH), -1);
    ck_assert_int_eq(choose("wamp.2.jsonx, xwamp.2.json, wamp.2.jso, wamp.2", BOTH), -1);
    ck_assert_int_eq(choose("http", BOTH), -1);
    ck_assert_int_eq(choose("wamp.2.cbor, wamp.2.json.batched, wamp.2.json", BOTH), WAMP_SER_JSON);
}

END_TEST

START_TEST(test_no_offer)
{
    ck_assert_int_eq(choose(NULL, BOTH), -1);
    ck_assert_int_eq(choose("", BOTH), -1);
    ck_assert_int_eq(choose("  ,\t, ,", BOTH), -1);
}

END_TEST

START_TEST(test_whitespace_and_empty_elements)
{
    ck_assert_int_eq(choose("  wamp.2.json  ", BOTH), WAMP_SER_JSON);
    ck_assert_int_eq(choose("\twamp.2.json\t,\t", BOTH), WAMP_SER_JSON);
    ck_assert_int_eq(choose(",,wamp.2.msgpack,,", BOTH), WAMP_SER_MSGPACK);
    ck_assert_int_eq(choose("wamp.2.cbor ,  wamp.2.json", BOTH), WAMP_SER_JSON);
    /* Whitespace inside an element is part of it: not a name. */
    ck_assert_int_eq(choose("wamp.2 .json", BOTH), -1);
    ck_assert_int_eq(choose("wamp.2.json wamp.2.msgpack", BOTH), -1);
}

END_TEST

START_TEST(test_case_sensitive)
{
    ck_assert_int_eq(choose("WAMP.2.JSON", BOTH), -1);
    ck_assert_int_eq(choose("Wamp.2.Msgpack, wamp.2.json", BOTH), WAMP_SER_JSON);
}

END_TEST

START_TEST(test_duplicates)
{
    /* Repeated header lines arrive joined with commas. */
    ck_assert_int_eq(choose("wamp.2.json,wamp.2.json,wamp.2.json", BOTH), WAMP_SER_JSON);
    ck_assert_int_eq(choose("wamp.2.cbor,wamp.2.json,wamp.2.msgpack,wamp.2.json", BOTH),
                     WAMP_SER_MSGPACK);
}

END_TEST

/* An offer of any length: here 4 KiB of unsupported names before the supported one, and one
 * after it. */
START_TEST(test_long_offer)
{
    size_t cap = 8192;
    char *offer = malloc(cap);
    ck_assert_ptr_nonnull(offer);
    size_t used = 0;
    for (int i = 0; used < 4096; i++) {
        used += (size_t)snprintf(offer + used, cap - used, "x-vendor.proto-%04d, ", i);
    }
    size_t head = used;
    used += (size_t)snprintf(offer + used, cap - used, "wamp.2.json");
    ck_assert_uint_gt(used, 4096);
    ck_assert_int_eq(choose(offer, BOTH), WAMP_SER_JSON);
    /* Not NUL-terminated: only len counts. */
    wamp_ser ser = (wamp_ser)0;
    ck_assert(!rt_subproto_choose(offer, head, BOTH, &ser));
    ck_assert(rt_subproto_choose(offer, used, BOTH, &ser));
    ck_assert_int_eq(ser, WAMP_SER_JSON);
    snprintf(offer + used, cap - used, ", wamp.2.msgpack");
    ck_assert_int_eq(choose(offer, BOTH), WAMP_SER_MSGPACK);
    free(offer);
}

END_TEST

START_TEST(test_next_tokens)
{
    const char *text = " a ,, b\t,c d ,";
    size_t pos = 0;
    const char *tok;
    size_t n;
    ck_assert(rt_subproto_next(text, strlen(text), &pos, &tok, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(tok[0], 'a');
    ck_assert(rt_subproto_next(text, strlen(text), &pos, &tok, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(tok[0], 'b');
    ck_assert(rt_subproto_next(text, strlen(text), &pos, &tok, &n));
    ck_assert_uint_eq(n, 3);
    ck_assert(memcmp(tok, "c d", 3) == 0);
    ck_assert(!rt_subproto_next(text, strlen(text), &pos, &tok, &n));
    ck_assert(!rt_subproto_next(text, strlen(text), &pos, &tok, &n));
    pos = 0;
    ck_assert(!rt_subproto_next(NULL, 0, &pos, &tok, &n));
}

END_TEST

START_TEST(test_names_and_list)
{
    ck_assert_str_eq(rt_subproto_name(WAMP_SER_JSON), "wamp.2.json");
    ck_assert_str_eq(rt_subproto_name(WAMP_SER_MSGPACK), "wamp.2.msgpack");
    ck_assert_ptr_null(rt_subproto_name((wamp_ser)0));
    char buf[64];
    ck_assert(rt_subproto_list(BOTH, buf, sizeof(buf)));
    ck_assert_str_eq(buf, "wamp.2.msgpack, wamp.2.json");
    ck_assert(rt_subproto_list(JSON_ONLY, buf, sizeof(buf)));
    ck_assert_str_eq(buf, "wamp.2.json");
    ck_assert(rt_subproto_list(0, buf, sizeof(buf)));
    ck_assert_str_eq(buf, "");
    ck_assert(!rt_subproto_list(BOTH, buf, 20));
    ck_assert_uint_lt(strlen(buf), 20);
    ck_assert(!rt_subproto_list(BOTH, buf, 0));
}

END_TEST

static Suite *rt_subproto_suite(void)
{
    Suite *s = suite_create("rt_subproto");
    TCase *tc = tcase_create("negotiation");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_router_order_wins_over_client_order);
    tcase_add_test(tc, test_listener_serializers_restrict);
    tcase_add_test(tc, test_unsupported_variants_skipped);
    tcase_add_test(tc, test_no_offer);
    tcase_add_test(tc, test_whitespace_and_empty_elements);
    tcase_add_test(tc, test_case_sensitive);
    tcase_add_test(tc, test_duplicates);
    tcase_add_test(tc, test_long_offer);
    tcase_add_test(tc, test_next_tokens);
    tcase_add_test(tc, test_names_and_list);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_subproto_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
