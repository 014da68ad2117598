/* check_trace_strip.c: a message without its application payload (trace_strip.h), in every
 * serializer: what remains decodes to the message minus Arguments and ArgumentsKw. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "trace_strip.h"
#include "wamp_buf.h"
#include "wamp_codec.h"
#include "wamp_types.h"

static const wamp_ser sers[] = {WAMP_SER_JSON, WAMP_SER_MSGPACK, WAMP_SER_CBOR};

/* Messages with a payload, and where it starts. */
static const struct {
    const char *json;
    size_t payload_at;
} with_payload[] = {
        {"[16,1,{},\"com.topic\",[1,\"two\"],{\"k\":[3]}]", 4},
        {"[36,5,6,{\"topic\":\"x\"},[\"hello\"]]", 4},
        {"[48,7,{\"receive_progress\":true},\"com.proc\",[],{\"a\":null}]", 4},
        {"[68,8,9,{},[{\"deep\":[[[1]]]}],{}]", 4},
        {"[70,8,{},[1.5]]", 3},
        {"[50,7,{\"progress\":true},[\"x\"],{\"y\":\"z\"}]", 3},
        {"[8,48,7,{},\"wamp.error.runtime_error\",[\"why\"]]", 5},
};

/* Strips the message encoded in ser and checks the result decodes to its first n elements. */
static void check_strips(wamp_ser ser, const char *text, size_t n)
{
    json_t *msg = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(msg);
    wamp_buf *b = NULL;
    ck_assert_int_eq(wamp_codec_encode(ser, msg, &b), WAMP_OK);
    int type = (int)json_integer_value(json_array_get(msg, 0));
    size_t len = wamp_buf_len(b);
    unsigned char *out = malloc(len);
    /* Too little room: the length it needs, nothing written. */
    memset(out, 0xee, len);
    size_t need = trace_strip_payload(ser, type, wamp_buf_cdata(b), len, out, 1);
    ck_assert_uint_gt(need, 1);
    ck_assert_uint_lt(need, len);
    ck_assert_uint_eq(out[0], 0xee);
    ck_assert_uint_eq(trace_strip_payload(ser, type, wamp_buf_cdata(b), len, out, need), need);
    json_t *got = NULL;
    ck_assert_int_eq(wamp_codec_decode_value(ser, out, need, &got, NULL, 0), WAMP_OK);
    json_t *want = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append(want, json_array_get(msg, i));
    }
    ck_assert_msg(json_equal(got, want), "%s in ser %d", text, (int)ser);
    json_decref(got);
    json_decref(want);
    json_decref(msg);
    wamp_buf_unref(&b);
    free(out);
}

START_TEST(test_strips_every_type_in_every_serializer)
{
    for (size_t s = 0; s < sizeof(sers) / sizeof(sers[0]); s++) {
        for (size_t i = 0; i < sizeof(with_payload) / sizeof(with_payload[0]); i++) {
            check_strips(sers[s], with_payload[i].json, with_payload[i].payload_at);
        }
    }
}

END_TEST

/* Nothing to strip: no payload, a type without one, bytes that are no such message. */
START_TEST(test_nothing_to_strip)
{
    const char *none[] = {"[36,5,6,{}]", "[48,7,{},\"com.proc\"]", "[50,7,{}]",
                          "[32,1,{},\"com.topic\"]", "[1,\"realm1\",{}]"};
    unsigned char out[256];
    for (size_t s = 0; s < sizeof(sers) / sizeof(sers[0]); s++) {
        for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
            json_t *msg = json_loads(none[i], 0, NULL);
            wamp_buf *b = NULL;
            ck_assert_int_eq(wamp_codec_encode(sers[s], msg, &b), WAMP_OK);
            int type = (int)json_integer_value(json_array_get(msg, 0));
            ck_assert_uint_eq(trace_strip_payload(sers[s], type, wamp_buf_cdata(b), wamp_buf_len(b),
                                                  out, sizeof(out)),
                              0);
            json_decref(msg);
            wamp_buf_unref(&b);
        }
    }
    /* Not an array, truncated, a broken element before the payload, a wrong serializer. */
    const char *bad[] = {"{\"a\":1}", "[36,5,6,{}", "[36,5,6,{\"a\"],[1]]", "[36,5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_uint_eq(trace_strip_payload(WAMP_SER_JSON, WAMP_MSG_EVENT, bad[i], strlen(bad[i]),
                                              out, sizeof(out)),
                          0);
    }
    const unsigned char mp_map[] = {0x81, 0xa1, 'a', 0x01};
    ck_assert_uint_eq(
            trace_strip_payload(WAMP_SER_MSGPACK, WAMP_MSG_EVENT, mp_map, 4, out, sizeof(out)), 0);
    ck_assert_uint_eq(
            trace_strip_payload((wamp_ser)0, WAMP_MSG_EVENT, "[36,5,6,{},[1]]", 15, out, 99), 0);
    ck_assert_uint_eq(trace_payload_index(WAMP_MSG_SUBSCRIBE), 0);
}

END_TEST

/* Longer array headers than needed (MessagePack array16/32, CBOR one-byte and two-byte
 * counts) keep their width, with the new count. */
START_TEST(test_long_headers_keep_their_width)
{
    /* [36, 5, 6, {}, [1]] */
    const unsigned char mp16[] = {0xdc, 0x00, 0x05, 0x24, 0x05, 0x06, 0x80, 0x91, 0x01};
    const unsigned char mp32[] = {0xdd, 0x00, 0x00, 0x00, 0x05, 0x24, 0x05, 0x06, 0x80, 0x91, 0x01};
    const unsigned char cb8[] = {0x98, 0x05, 0x18, 0x24, 0x05, 0x06, 0xa0, 0x81, 0x01};
    const unsigned char cb16[] = {0x99, 0x00, 0x05, 0x18, 0x24, 0x05, 0x06, 0xa0, 0x81, 0x01};

    struct {
        wamp_ser ser;
        const unsigned char *d;
        size_t len;
        size_t head;
    } cases[] = {
            {WAMP_SER_MSGPACK, mp16, sizeof(mp16), 3},
            {WAMP_SER_MSGPACK, mp32, sizeof(mp32), 5},
            {WAMP_SER_CBOR, cb8, sizeof(cb8), 2},
            {WAMP_SER_CBOR, cb16, sizeof(cb16), 3},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned char out[32];
        size_t n = trace_strip_payload(cases[i].ser, WAMP_MSG_EVENT, cases[i].d, cases[i].len, out,
                                       sizeof(out));
        ck_assert_uint_eq(n, cases[i].len - 2); /* without [1] */
        ck_assert_uint_eq(out[0], cases[i].d[0]);
        ck_assert_uint_eq(out[cases[i].head - 1], 4);
        ck_assert_mem_eq(out + cases[i].head, cases[i].d + cases[i].head, n - cases[i].head);
        json_t *got = NULL;
        ck_assert_int_eq(wamp_codec_decode_value(cases[i].ser, out, n, &got, NULL, 0), WAMP_OK);
        json_t *want = json_loads("[36,5,6,{}]", 0, NULL);
        ck_assert(json_equal(got, want));
        json_decref(got);
        json_decref(want);
    }
}

END_TEST

/* A large payload is neither read nor needed: bytes after the envelope may even be broken. */
START_TEST(test_payload_not_read)
{
    const char *msg = "[36,5,6,{},[\"unterminated";
    unsigned char out[64];
    size_t n =
            trace_strip_payload(WAMP_SER_JSON, WAMP_MSG_EVENT, msg, strlen(msg), out, sizeof(out));
    ck_assert_uint_eq(n, strlen("[36,5,6,{}]"));
    ck_assert_mem_eq(out, "[36,5,6,{}]", n);
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trace_strip");
    TCase *tc = tcase_create("strip");
    tcase_add_test(tc, test_strips_every_type_in_every_serializer);
    tcase_add_test(tc, test_nothing_to_strip);
    tcase_add_test(tc, test_long_headers_keep_their_width);
    tcase_add_test(tc, test_payload_not_read);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
