/* check_wamp_ws_direct.c: wamp_ws's direct reads (wamp_ws_rx_space() / wamp_ws_rx_commit()), by
 * which an adapter receives the rest of a large frame's payload straight into the reassembly
 * buffer: the same messages as wamp_ws_feed() alone for every mix of the two, where a direct read
 * is offered and where not, the receive rules (UTF-8 of text, fragments) kept, misuse refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "wamp_ws.h"

static const uint8_t MASK[4] = {0x5a, 0x01, 0xc3, 0x7e};
static const wamp_ws_config cfg = {.max_message = 1u << 20};

#define FIN 0x80

/* Appends a masked client frame to out at *n. b0 is FIN|opcode. */
static void put_frame(unsigned char *out, size_t *n, uint8_t b0, const void *payload, size_t len)
{
    unsigned char *o = out + *n;
    size_t h = 0;
    o[h++] = b0;
    if (len < 126) {
        o[h++] = (uint8_t)(0x80 | len);
    } else if (len <= 0xffff) {
        o[h++] = 0x80 | 126;
        o[h++] = (uint8_t)(len >> 8);
        o[h++] = (uint8_t)len;
    } else {
        o[h++] = 0x80 | 127;
        for (unsigned i = 0; i < 8; i++) {
            o[h++] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
        }
    }
    memcpy(o + h, MASK, 4);
    h += 4;
    const unsigned char *p = payload;
    for (size_t i = 0; i < len; i++) {
        o[h + i] = (unsigned char)(p[i] ^ MASK[i & 3]);
    }
    *n += h + len;
}

typedef struct got {
    int n;
    wamp_ws_event_kind kind[8];
    size_t len[8];
    unsigned char *data[8];
    int direct; /* direct reads done */
    wamp_err last;
    uint16_t code;
} got;

static void got_add(got *g, const wamp_ws_event *ev)
{
    ck_assert_int_lt(g->n, 8);
    g->kind[g->n] = ev->kind;
    g->len[g->n] = ev->len;
    g->data[g->n] = malloc(ev->len + 1);
    ck_assert_ptr_nonnull(g->data[g->n]);
    memcpy(g->data[g->n], ev->data, ev->len);
    g->n++;
}

static void got_free(got *g)
{
    for (int i = 0; i < g->n; i++) {
        free(g->data[i]);
    }
}

/* Receives in[0..len) as an adapter would: slices of step octets through wamp_ws_feed(), and
 * whenever a direct read is offered, up to chunk octets (at most max per offer) written straight
 * into it. Stops at the end or at the first error. */
static void receive(const unsigned char *in, size_t len, size_t step, size_t max, size_t chunk,
                    got *g)
{
    wamp_ws ws;
    wamp_ws_init(&ws, &cfg);
    memset(g, 0, sizeof(*g));
    g->last = WAMP_EAGAIN;
    size_t off = 0;
    while (off < len) {
        size_t room = 99;
        unsigned char *p = wamp_ws_rx_space(&ws, max, &room);
        wamp_ws_event ev;
        wamp_err err;
        if (p) {
            ck_assert_uint_gt(room, 0);
            ck_assert_uint_le(room, max);
            size_t n = room < chunk ? room : chunk;
            n = n < len - off ? n : len - off;
            memcpy(p, in + off, n);
            off += n;
            g->direct++;
            err = wamp_ws_rx_commit(&ws, n, &ev);
        } else {
            ck_assert_uint_eq(room, 0);
            size_t n = len - off < step ? len - off : step;
            unsigned char *slice = malloc(n);
            ck_assert_ptr_nonnull(slice);
            memcpy(slice, in + off, n);
            size_t used = 0;
            err = wamp_ws_feed(&ws, slice, n, &used, &ev);
            off += used;
            if (err == WAMP_OK) {
                got_add(g, &ev); /* before the slice it may point into is freed */
            }
            free(slice);
            if (err == WAMP_OK) {
                continue;
            }
        }
        if (err == WAMP_OK) {
            got_add(g, &ev);
        } else if (err != WAMP_EAGAIN) {
            g->last = err;
            g->code = ev.code;
            break;
        }
    }
    wamp_ws_fini(&ws);
}

static unsigned char big[70000];
static unsigned char stream[2 * 70000 + 4096];

/* text "[1]", a 70000-octet binary message, a text message in three fragments (UTF-8 split
 * across them) with a PING in between, then a 20000-octet binary message. */
static size_t make_stream(void)
{
    for (size_t i = 0; i < sizeof(big); i++) {
        big[i] = (unsigned char)(i * 13 + (i >> 8));
    }
    size_t n = 0;
    put_frame(stream, &n, FIN | WAMP_WS_OP_TEXT, "[1]", 3);
    put_frame(stream, &n, FIN | WAMP_WS_OP_BINARY, big, sizeof(big));
    static char text[9000];
    memset(text, 'a', sizeof(text));
    memcpy(text + 4999, "\xe2\x82\xac", 3); /* the euro sign, split by the fragments */
    put_frame(stream, &n, WAMP_WS_OP_TEXT, text, 5000);
    put_frame(stream, &n, FIN | WAMP_WS_OP_PING, "hi", 2);
    put_frame(stream, &n, WAMP_WS_OP_CONT, text + 5000, 3000);
    put_frame(stream, &n, FIN | WAMP_WS_OP_CONT, text + 8000, 1000);
    put_frame(stream, &n, FIN | WAMP_WS_OP_BINARY, big + 100, 20000);
    return n;
}

START_TEST(test_same_messages_any_mix)
{
    size_t n = make_stream();
    /* step (feed slices), max (per offer), chunk (per direct read) */
    static const size_t mix[][3] = {
            {1, SIZE_MAX, SIZE_MAX}, {7, 1000, 333},         {7, SIZE_MAX, 4096},
            {100, 1, 4096},          {100, 65536, SIZE_MAX}, {4096, 1000, 1},
            {4096, 65536, 4096},     {4096, SIZE_MAX, 333},  {4096, SIZE_MAX, SIZE_MAX},
    };
    for (size_t k = 0; k < sizeof(mix) / sizeof(mix[0]); k++) {
        got g;
        receive(stream, n, mix[k][0], mix[k][1], mix[k][2], &g);
        ck_assert_int_eq(g.last, WAMP_EAGAIN);
        ck_assert_int_eq(g.n, 5);
        ck_assert_uint_eq(g.len[0], 3);
        ck_assert_mem_eq(g.data[0], "[1]", 3);
        ck_assert_uint_eq(g.len[1], sizeof(big));
        ck_assert_mem_eq(g.data[1], big, sizeof(big));
        ck_assert_int_eq(g.kind[2], WAMP_WS_EV_PING);
        ck_assert_int_eq(g.kind[3], WAMP_WS_EV_MESSAGE);
        ck_assert_uint_eq(g.len[3], 9000);
        ck_assert_mem_eq(g.data[3] + 4999, "\xe2\x82\xac", 3);
        ck_assert_uint_eq(g.len[4], 20000);
        ck_assert_mem_eq(g.data[4], big + 100, 20000);
        ck_assert_int_gt(g.direct, 0);
        got_free(&g);
    }
}

END_TEST

START_TEST(test_offered_only_inside_data_payload)
{
    unsigned char in[256];
    size_t n = 0;
    wamp_ws ws;
    wamp_ws_event ev;
    size_t used;
    size_t room = 99;
    wamp_ws_init(&ws, &cfg);
    ck_assert_ptr_null(wamp_ws_rx_space(&ws, 4096, &room)); /* before any header */
    ck_assert_uint_eq(room, 0);
    ck_assert_int_eq(wamp_ws_rx_commit(&ws, 0, &ev), WAMP_EINVAL);
    put_frame(in, &n, FIN | WAMP_WS_OP_PING, "abcdef", 6);
    ck_assert_int_eq(wamp_ws_feed(&ws, in, 8, &used, &ev), WAMP_EAGAIN); /* header + 2 */
    ck_assert_ptr_null(wamp_ws_rx_space(&ws, 4096, &room));              /* a control frame */
    ck_assert_int_eq(wamp_ws_feed(&ws, in + 8, n - 8, &used, &ev), WAMP_OK);
    ck_assert_int_eq(ev.kind, WAMP_WS_EV_PING);
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_BINARY, "0123456789", 10);
    ck_assert_int_eq(wamp_ws_feed(&ws, in, 2, &used, &ev), WAMP_EAGAIN);
    ck_assert_ptr_null(wamp_ws_rx_space(&ws, 4096, &room));                  /* inside the header */
    ck_assert_int_eq(wamp_ws_feed(&ws, in + 2, 7, &used, &ev), WAMP_EAGAIN); /* + 3 octets */
    unsigned char *p = wamp_ws_rx_space(&ws, 4096, &room);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(room, 7); /* the rest of the frame, no more */
    p = wamp_ws_rx_space(&ws, 4, &room);
    ck_assert_uint_eq(room, 4);
    ck_assert_int_eq(wamp_ws_rx_commit(&ws, 8, &ev), WAMP_EINVAL); /* more than the frame */
    memcpy(p, in + 9, 4);
    ck_assert_int_eq(wamp_ws_rx_commit(&ws, 4, &ev), WAMP_EAGAIN);
    p = wamp_ws_rx_space(&ws, 4096, &room);
    ck_assert_uint_eq(room, 3);
    memcpy(p, in + 13, 3);
    ck_assert_int_eq(wamp_ws_rx_commit(&ws, 3, &ev), WAMP_OK);
    ck_assert_int_eq(ev.kind, WAMP_WS_EV_MESSAGE);
    ck_assert(ev.binary);
    ck_assert_uint_eq(ev.len, 10);
    ck_assert_mem_eq(ev.data, "0123456789", 10);
    ck_assert_ptr_null(wamp_ws_rx_space(&ws, 4096, &room)); /* the next header */
    wamp_ws_fini(&ws);
}

END_TEST

/* Invalid UTF-8 arriving through a direct read fails at once with 1007, and stays failed. */
START_TEST(test_utf8_checked)
{
    static unsigned char in[20000];
    static char text[10000];
    memset(text, 'x', sizeof(text));
    text[9000] = (char)0xc0; /* an overlong lead: never valid */
    size_t n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, text, sizeof(text));
    got g;
    receive(in, n, 100, SIZE_MAX, 4096, &g);
    ck_assert_int_eq(g.last, WAMP_EPROTO);
    ck_assert_uint_eq(g.code, WAMP_WS_CLOSE_INVALID_DATA);
    ck_assert_int_eq(g.n, 0);
    ck_assert_int_eq(g.direct, 3); /* 100 octets fed, then 4096, 4096 and the failing piece */
    got_free(&g);
    /* Binary: the same octets are fine. */
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_BINARY, text, sizeof(text));
    receive(in, n, 100, SIZE_MAX, 4096, &g);
    ck_assert_int_eq(g.last, WAMP_EAGAIN);
    ck_assert_int_eq(g.n, 1);
    ck_assert_mem_eq(g.data[0], text, sizeof(text));
    got_free(&g);
}

END_TEST

static Suite *wamp_ws_direct_suite(void)
{
    Suite *s = suite_create("wamp_ws_direct");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_same_messages_any_mix);
    tcase_add_test(tc, test_offered_only_inside_data_payload);
    tcase_add_test(tc, test_utf8_checked);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_ws_direct_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
