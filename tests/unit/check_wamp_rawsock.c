/* check_wamp_rawsock.c: the RawSocket handshake and framer, fed whole and one byte at a time:
 * every handshake error reply, max length negotiation, PING/PONG/message frames, the 25th length
 * bit, reserved bits and types, oversize frames, prefixes we write. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "wamp_rawsock.h"

static const wamp_rawsock_config both = {
        .ser_json = true, .ser_msgpack = true, .max_len = 4096, .min_peer_len = 0};

/* Collected result of feeding a whole input. */
typedef struct fed {
    int n_events;
    wamp_rawsock_event ev[8];
    unsigned char data[8][8192]; /* copies of frame payloads */
    wamp_err last;               /* EAGAIN when the input ended cleanly */
    size_t consumed;
} fed;

/* Feeds in[0..len) in slices of `step` bytes (0 = all at once), collecting events. Stops at the
 * first error other than EAGAIN. */
static void feed_all(wamp_rawsock *rs, const unsigned char *in, size_t len, size_t step, fed *f)
{
    memset(f, 0, sizeof(*f));
    f->last = WAMP_EAGAIN;
    size_t off = 0;
    while (off < len) {
        size_t n = step && len - off > step ? step : len - off;
        size_t sub = 0;
        while (sub < n) {
            size_t used = 0;
            wamp_rawsock_event ev;
            wamp_err err = wamp_rawsock_feed(rs, in + off + sub, n - sub, &used, &ev);
            ck_assert_uint_le(used, n - sub);
            sub += used;
            f->consumed += used;
            if (err == WAMP_OK) {
                ck_assert_int_lt(f->n_events, 8);
                f->ev[f->n_events] = ev;
                if (ev.kind == WAMP_RAWSOCK_EV_FRAME) {
                    ck_assert_uint_le(ev.len, sizeof(f->data[0]));
                    if (ev.len) {
                        memcpy(f->data[f->n_events], ev.data, ev.len);
                    }
                    f->ev[f->n_events].data = f->data[f->n_events];
                }
                f->n_events++;
                continue;
            }
            f->last = err;
            if (err != WAMP_EAGAIN) {
                f->ev[f->n_events] = ev; /* why / len */
                return;
            }
            ck_assert_uint_eq(sub, n); /* EAGAIN consumed everything */
        }
        off += n;
    }
}

static const size_t steps[] = {0, 1, 2, 3, 5};

START_TEST(test_handshake_accept_json_and_msgpack)
{
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        for (unsigned ser = 1; ser <= 2; ser++) {
            wamp_rawsock rs;
            wamp_rawsock_init(&rs, &both);
            /* client: LENGTH 15 (16 MiB) */
            unsigned char hs[4] = {0x7f, (unsigned char)(0xf0 | ser), 0, 0};
            fed f;
            feed_all(&rs, hs, 4, steps[s], &f);
            ck_assert_int_eq(f.last, WAMP_EAGAIN);
            ck_assert_int_eq(f.n_events, 1);
            ck_assert_int_eq(f.ev[0].kind, WAMP_RAWSOCK_EV_ACCEPTED);
            ck_assert_int_eq(f.ev[0].ser, (int)ser);
            ck_assert_uint_eq(f.ev[0].peer_max, 16777216);
            /* 4096 = 2^12 -> LENGTH 3 */
            ck_assert_uint_eq(f.ev[0].reply[0], 0x7f);
            ck_assert_uint_eq(f.ev[0].reply[1], 0x30 | ser);
            ck_assert_uint_eq(f.ev[0].reply[2], 0);
            ck_assert_uint_eq(f.ev[0].reply[3], 0);
            wamp_rawsock_fini(&rs);
        }
    }
}

END_TEST

START_TEST(test_max_length_negotiation)
{
    struct {
        size_t max;
        size_t announced;
        unsigned lexp;
    } cases[] = {
            {100, 512, 0},
            {512, 512, 0},
            {1023, 512, 0},
            {1024, 1024, 1},
            {4194304, 4194304, 13},
            {5000000, 4194304, 13},
            {16777216, 16777216, 15},
            {1073741824, 16777216, 15},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wamp_rawsock_config cfg = both;
        cfg.max_len = cases[i].max;
        wamp_rawsock rs;
        wamp_rawsock_init(&rs, &cfg);
        ck_assert_uint_eq(wamp_rawsock_max_len(&rs), cases[i].announced);
        unsigned char hs[4] = {0x7f, 0x01, 0, 0}; /* client LENGTH 0 = 512 */
        fed f;
        feed_all(&rs, hs, 4, 0, &f);
        ck_assert_int_eq(f.ev[0].kind, WAMP_RAWSOCK_EV_ACCEPTED);
        ck_assert_uint_eq(f.ev[0].peer_max, 512);
        ck_assert_uint_eq(f.ev[0].reply[1], (cases[i].lexp << 4) | 1);
        wamp_rawsock_fini(&rs);
    }
}

END_TEST

/* Each handshake error reply: serializer (disabled, unknown, illegal 0), reserved bits, max
 * length below the configured minimum. After a refusal every feed is EPROTO. */
START_TEST(test_handshake_errors)
{
    struct {
        unsigned char hs[4];
        bool json, msgpack;
        size_t min_peer;
        wamp_rawsock_hs_error err;
        unsigned char octet2;
    } cases[] = {
            {{0x7f, 0xf2, 0, 0}, true, false, 0, WAMP_RAWSOCK_ERR_SERIALIZER, 0x10},
            {{0x7f, 0xf1, 0, 0}, false, true, 0, WAMP_RAWSOCK_ERR_SERIALIZER, 0x10},
            {{0x7f, 0xf3, 0, 0}, true, true, 0, WAMP_RAWSOCK_ERR_SERIALIZER, 0x10}, /* CBOR */
            {{0x7f, 0xf0, 0, 0}, true, true, 0, WAMP_RAWSOCK_ERR_SERIALIZER, 0x10}, /* illegal */
            {{0x7f, 0xff, 0, 0}, true, true, 0, WAMP_RAWSOCK_ERR_SERIALIZER, 0x10},
            {{0x7f, 0xf1, 1, 0}, true, true, 0, WAMP_RAWSOCK_ERR_RESERVED, 0x30},
            {{0x7f, 0xf1, 0, 0x80}, true, true, 0, WAMP_RAWSOCK_ERR_RESERVED, 0x30},
            {{0x7f, 0x21, 0, 0}, true, true, 4096, WAMP_RAWSOCK_ERR_MAX_LENGTH, 0x20},
    };

    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            wamp_rawsock_config cfg = {.ser_json = cases[i].json,
                                       .ser_msgpack = cases[i].msgpack,
                                       .max_len = 65536,
                                       .min_peer_len = cases[i].min_peer};
            wamp_rawsock rs;
            wamp_rawsock_init(&rs, &cfg);
            fed f;
            feed_all(&rs, cases[i].hs, 4, steps[s], &f);
            ck_assert_int_eq(f.n_events, 1);
            ck_assert_int_eq(f.ev[0].kind, WAMP_RAWSOCK_EV_REFUSED);
            ck_assert_int_eq(f.ev[0].error, cases[i].err);
            ck_assert_uint_eq(f.ev[0].reply[0], 0x7f);
            ck_assert_uint_eq(f.ev[0].reply[1], cases[i].octet2);
            ck_assert_uint_eq(f.ev[0].reply[2], 0);
            ck_assert_uint_eq(f.ev[0].reply[3], 0);
            ck_assert_ptr_nonnull(f.ev[0].why);
            size_t used = 99;
            wamp_rawsock_event ev;
            unsigned char more = 0;
            ck_assert_int_eq(wamp_rawsock_feed(&rs, &more, 1, &used, &ev), WAMP_EPROTO);
            ck_assert_uint_eq(used, 0);
            wamp_rawsock_fini(&rs);
        }
    }
    /* A client exactly at the minimum is accepted. */
    wamp_rawsock_config cfg = both;
    cfg.min_peer_len = 4096;
    wamp_rawsock rs;
    wamp_rawsock_init(&rs, &cfg);
    unsigned char hs[4] = {0x7f, 0x31, 0, 0};
    fed f;
    feed_all(&rs, hs, 4, 0, &f);
    ck_assert_int_eq(f.ev[0].kind, WAMP_RAWSOCK_EV_ACCEPTED);
    wamp_rawsock_fini(&rs);
}

END_TEST

START_TEST(test_error_reply_and_names)
{
    uint8_t out[4];
    for (unsigned e = 1; e <= 4; e++) {
        wamp_rawsock_error_reply(out, (wamp_rawsock_hs_error)e);
        ck_assert_uint_eq(out[0], 0x7f);
        ck_assert_uint_eq(out[1], e << 4);
        ck_assert_uint_eq(out[2] | out[3], 0);
        ck_assert_str_ne(wamp_rawsock_error_name((wamp_rawsock_hs_error)e), "unknown error");
    }
    ck_assert_str_eq(wamp_rawsock_error_name(WAMP_RAWSOCK_ERR_CONNECTIONS),
                     "maximum connection count reached");
    ck_assert_str_eq(wamp_rawsock_error_name((wamp_rawsock_hs_error)9), "unknown error");
}

END_TEST

START_TEST(test_bad_magic_fails_at_first_octet)
{
    const unsigned char get[] = "GET / HTTP/1.1\r\n";
    wamp_rawsock rs;
    wamp_rawsock_init(&rs, &both);
    size_t used = 0;
    wamp_rawsock_event ev;
    ck_assert_int_eq(wamp_rawsock_feed(&rs, get, sizeof(get) - 1, &used, &ev), WAMP_EPROTO);
    ck_assert_uint_eq(used, 1);
    ck_assert_ptr_nonnull(ev.why);
    wamp_rawsock_fini(&rs);
}

END_TEST

/* Handshake + message + PING + empty PONG + message spanning, in one buffer, fed in every
 * slicing: same events, same payloads. */
START_TEST(test_frames_any_slicing)
{
    unsigned char in[4 + 4 + 11 + 4 + 3 + 4 + 4 + 3000];
    size_t n = 0;
    const unsigned char hs[4] = {0x7f, 0xf1, 0, 0};
    memcpy(in + n, hs, 4);
    n += 4;
    ck_assert_int_eq(wamp_rawsock_prefix(in + n, WAMP_RAWSOCK_MSG, 11), WAMP_OK);
    n += 4;
    memcpy(in + n, "[1,\"r\",{}]x", 11);
    n += 11;
    ck_assert_int_eq(wamp_rawsock_prefix(in + n, WAMP_RAWSOCK_PING, 3), WAMP_OK);
    n += 4;
    memcpy(in + n, "abc", 3);
    n += 3;
    ck_assert_int_eq(wamp_rawsock_prefix(in + n, WAMP_RAWSOCK_PONG, 0), WAMP_OK);
    n += 4;
    ck_assert_int_eq(wamp_rawsock_prefix(in + n, WAMP_RAWSOCK_MSG, 3000), WAMP_OK);
    n += 4;
    for (size_t i = 0; i < 3000; i++) {
        in[n + i] = (unsigned char)(i * 7);
    }
    n += 3000;
    ck_assert_uint_eq(n, sizeof(in));
    const size_t slicing[] = {0, 1, 2, 3, 4, 5, 7, 13, 1000};
    for (size_t s = 0; s < sizeof(slicing) / sizeof(slicing[0]); s++) {
        wamp_rawsock rs;
        wamp_rawsock_init(&rs, &both);
        fed f;
        feed_all(&rs, in, n, slicing[s], &f);
        ck_assert_int_eq(f.last, WAMP_EAGAIN);
        ck_assert_uint_eq(f.consumed, n);
        ck_assert_int_eq(f.n_events, 5);
        ck_assert_int_eq(f.ev[0].kind, WAMP_RAWSOCK_EV_ACCEPTED);
        ck_assert_int_eq(f.ev[1].kind, WAMP_RAWSOCK_EV_FRAME);
        ck_assert_int_eq(f.ev[1].type, WAMP_RAWSOCK_MSG);
        ck_assert_uint_eq(f.ev[1].len, 11);
        ck_assert_mem_eq(f.ev[1].data, "[1,\"r\",{}]x", 11);
        ck_assert_int_eq(f.ev[2].type, WAMP_RAWSOCK_PING);
        ck_assert_uint_eq(f.ev[2].len, 3);
        ck_assert_mem_eq(f.ev[2].data, "abc", 3);
        ck_assert_int_eq(f.ev[3].type, WAMP_RAWSOCK_PONG);
        ck_assert_uint_eq(f.ev[3].len, 0);
        ck_assert_int_eq(f.ev[4].type, WAMP_RAWSOCK_MSG);
        ck_assert_uint_eq(f.ev[4].len, 3000);
        ck_assert_mem_eq(f.ev[4].data, in + n - 3000, 3000);
        wamp_rawsock_fini(&rs);
    }
}

END_TEST

/* A frame that arrives whole in one slice is handed out without a copy. */
START_TEST(test_whole_frame_zero_copy)
{
    unsigned char in[4 + 4 + 5];
    const unsigned char hs[4] = {0x7f, 0xf2, 0, 0};
    memcpy(in, hs, 4);
    wamp_rawsock_prefix(in + 4, WAMP_RAWSOCK_MSG, 5);
    memcpy(in + 8, "hello", 5);
    wamp_rawsock rs;
    wamp_rawsock_init(&rs, &both);
    size_t used;
    wamp_rawsock_event ev;
    ck_assert_int_eq(wamp_rawsock_feed(&rs, in, sizeof(in), &used, &ev), WAMP_OK);
    ck_assert_uint_eq(used, 4);
    ck_assert_int_eq(wamp_rawsock_feed(&rs, in + 4, sizeof(in) - 4, &used, &ev), WAMP_OK);
    ck_assert_uint_eq(used, 9);
    ck_assert_ptr_eq(ev.data, in + 8);
    ck_assert_ptr_null(rs.body);
    wamp_rawsock_fini(&rs);
}

END_TEST

START_TEST(test_oversize_frame)
{
    wamp_rawsock rs;
    wamp_rawsock_init(&rs, &both); /* 4096 */
    unsigned char in[8] = {0x7f, 0xf1, 0, 0};
    wamp_rawsock_prefix(in + 4, WAMP_RAWSOCK_MSG, 4097);
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        wamp_rawsock_fini(&rs);
        wamp_rawsock_init(&rs, &both);
        fed f;
        feed_all(&rs, in, sizeof(in), steps[s], &f);
        ck_assert_int_eq(f.last, WAMP_ETOOBIG);
        ck_assert_uint_eq(f.ev[f.n_events].len, 4097);
        ck_assert_uint_eq(f.consumed, 8);
    }
    /* Exactly the limit is fine. */
    wamp_rawsock_fini(&rs);
    wamp_rawsock_init(&rs, &both);
    wamp_rawsock_prefix(in + 4, WAMP_RAWSOCK_PING, 4096);
    fed f;
    feed_all(&rs, in, sizeof(in), 0, &f);
    ck_assert_int_eq(f.last, WAMP_EAGAIN);
    wamp_rawsock_fini(&rs);
}

END_TEST

START_TEST(test_bad_prefixes)
{
    const unsigned char bad[][4] = {
            {0x10, 0, 0, 1}, /* reserved bit */
            {0x80, 0, 0, 1}, /* reserved bit */
            {0x03, 0, 0, 1}, /* reserved type 3 */
            {0x07, 0, 0, 1}, /* reserved type 7 */
            {0x08, 0, 0, 1}, /* X with a non-zero length */
    };
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            unsigned char in[8] = {0x7f, 0xf1, 0, 0};
            memcpy(in + 4, bad[i], 4);
            wamp_rawsock rs;
            wamp_rawsock_init(&rs, &both);
            fed f;
            feed_all(&rs, in, 8, steps[s], &f);
            ck_assert_int_eq(f.last, WAMP_EPROTO);
            ck_assert_ptr_nonnull(f.ev[f.n_events].why);
            wamp_rawsock_fini(&rs);
        }
    }
}

END_TEST

/* The 25th length bit: exactly 2^24 octets, accepted when we announced 16 MiB. */
START_TEST(test_x_bit_16mib)
{
    wamp_rawsock_config cfg = both;
    cfg.max_len = WAMP_RAWSOCK_MAX;
    wamp_rawsock rs;
    wamp_rawsock_init(&rs, &cfg);
    uint8_t p[4];
    ck_assert_int_eq(wamp_rawsock_prefix(p, WAMP_RAWSOCK_MSG, WAMP_RAWSOCK_MAX), WAMP_OK);
    ck_assert_uint_eq(p[0], 0x08);
    ck_assert_uint_eq(p[1] | p[2] | p[3], 0);
    ck_assert_int_eq(wamp_rawsock_prefix(p, WAMP_RAWSOCK_MSG, WAMP_RAWSOCK_MAX + 1), WAMP_EINVAL);
    ck_assert_int_eq(wamp_rawsock_prefix(p, WAMP_RAWSOCK_PONG, WAMP_RAWSOCK_MAX - 1), WAMP_OK);
    ck_assert_uint_eq(p[0], 0x02);
    ck_assert_uint_eq(p[1] & p[2] & p[3], 0xff);

    unsigned char *big = malloc(8 + WAMP_RAWSOCK_MAX);
    ck_assert_ptr_nonnull(big);
    const unsigned char hs[4] = {0x7f, 0xf2, 0, 0};
    memcpy(big, hs, 4);
    wamp_rawsock_prefix(big + 4, WAMP_RAWSOCK_MSG, WAMP_RAWSOCK_MAX);
    memset(big + 8, 0xab, WAMP_RAWSOCK_MAX);
    size_t off = 0;
    size_t used;
    wamp_rawsock_event ev;
    ck_assert_int_eq(wamp_rawsock_feed(&rs, big, 4, &used, &ev), WAMP_OK);
    off = 4;
    /* In two halves: reassembled. */
    size_t half = (8 + WAMP_RAWSOCK_MAX - off) / 2;
    ck_assert_int_eq(wamp_rawsock_feed(&rs, big + off, half, &used, &ev), WAMP_EAGAIN);
    off += used;
    ck_assert_int_eq(wamp_rawsock_feed(&rs, big + off, 8 + WAMP_RAWSOCK_MAX - off, &used, &ev),
                     WAMP_OK);
    ck_assert_int_eq(ev.kind, WAMP_RAWSOCK_EV_FRAME);
    ck_assert_uint_eq(ev.len, WAMP_RAWSOCK_MAX);
    ck_assert_uint_eq(ev.data[0], 0xab);
    ck_assert_uint_eq(ev.data[WAMP_RAWSOCK_MAX - 1], 0xab);
    free(big);
    /* The big reassembly buffer is released at the next feed. */
    unsigned char ping[5];
    wamp_rawsock_prefix(ping, WAMP_RAWSOCK_PING, 1);
    ping[4] = 'x';
    ck_assert_int_eq(wamp_rawsock_feed(&rs, ping, 2, &used, &ev), WAMP_EAGAIN);
    ck_assert_ptr_null(rs.body);
    ck_assert_int_eq(wamp_rawsock_feed(&rs, ping + 2, 3, &used, &ev), WAMP_OK);
    ck_assert_int_eq(ev.type, WAMP_RAWSOCK_PING);
    ck_assert_uint_eq(ev.data[0], 'x');
    wamp_rawsock_fini(&rs);
    wamp_rawsock_fini(&rs); /* idempotent */
}

END_TEST

static Suite *wamp_rawsock_suite(void)
{
    Suite *s = suite_create("wamp_rawsock");
    TCase *tc = tcase_create("rawsock");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_handshake_accept_json_and_msgpack);
    tcase_add_test(tc, test_max_length_negotiation);
    tcase_add_test(tc, test_handshake_errors);
    tcase_add_test(tc, test_error_reply_and_names);
    tcase_add_test(tc, test_bad_magic_fails_at_first_octet);
    tcase_add_test(tc, test_frames_any_slicing);
    tcase_add_test(tc, test_whole_frame_zero_copy);
    tcase_add_test(tc, test_oversize_frame);
    tcase_add_test(tc, test_bad_prefixes);
    tcase_add_test(tc, test_x_bit_16mib);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_rawsock_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
