/* check_wamp_ws.c: the WebSocket protocol module and SHA-1: FIPS 180-4 vectors, the RFC 6455
 * accept key and key shapes, frames fed whole, one octet at a time and in odd slices, every
 * receive rule with its close code, fragmentation with control frames in between, the message
 * limit decided from the header, UTF-8 split across fragments and at every place of a whole
 * frame, the vector scans against one-octet loops, zero copy against reassembly, the frame header
 * and CLOSE frame writers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "alloc_count.h"
#include "utf8_ref.h"
#include "wamp_rd.h"
#include "wamp_scan.h"
#include "wamp_sha1.h"
#include "wamp_ws.h"

/* --- Helpers --------------------------------------------------------------------------------- */

static const uint8_t MASK[4] = {0x37, 0xfa, 0x21, 0x3d};

/* Appends a client frame (masked unless masked is false) to out at *n. b0 is FIN|RSV|opcode. */
static void put_frame(unsigned char *out, size_t *n, uint8_t b0, const void *payload, size_t len,
                      bool masked)
{
    unsigned char *o = out + *n;
    size_t h = 0;
    o[h++] = b0;
    uint8_t m = masked ? 0x80 : 0;
    if (len < 126) {
        o[h++] = (uint8_t)(m | len);
    } else if (len <= 0xffff) {
        o[h++] = m | 126;
        o[h++] = (uint8_t)(len >> 8);
        o[h++] = (uint8_t)len;
    } else {
        o[h++] = m | 127;
        for (unsigned i = 0; i < 8; i++) {
            o[h++] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
        }
    }
    if (masked) {
        memcpy(o + h, MASK, 4);
        h += 4;
    }
    const unsigned char *p = payload;
    for (size_t i = 0; i < len; i++) {
        o[h + i] = masked ? (unsigned char)(p[i] ^ MASK[i & 3]) : p[i];
    }
    *n += h + len;
}

#define FIN 0x80

typedef struct fed {
    int n;
    wamp_ws_event ev[16];
    unsigned char *data[16]; /* copies of payloads */
    bool zero_copy[16];      /* payload pointed into the input */
    wamp_err last;           /* EAGAIN when the input ended cleanly */
    uint16_t code;           /* after EPROTO */
    size_t consumed;
} fed;

static void fed_free(fed *f)
{
    for (int i = 0; i < f->n; i++) {
        free(f->data[i]);
    }
}

/* Feeds in[0..len) in slices of step octets (0 = all at once) until an error other than
 * EAGAIN; every slice is a fresh copy so zero copy can be told from reassembly. */
static void feed_all(wamp_ws *ws, const unsigned char *in, size_t len, size_t step, fed *f)
{
    memset(f, 0, sizeof(*f));
    f->last = WAMP_EAGAIN;
    size_t off = 0;
    while (off < len) {
        size_t n = step && len - off > step ? step : len - off;
        unsigned char *slice = malloc(n ? n : 1);
        ck_assert_ptr_nonnull(slice);
        memcpy(slice, in + off, n);
        size_t sub = 0;
        while (sub < n) {
            size_t used = 99;
            wamp_ws_event ev;
            wamp_err err = wamp_ws_feed(ws, slice + sub, n - sub, &used, &ev);
            ck_assert_uint_le(used, n - sub);
            sub += used;
            f->consumed += used;
            if (err == WAMP_EAGAIN) {
                ck_assert_uint_eq(sub, n);
                break;
            }
            if (err != WAMP_OK) {
                f->last = err;
                f->code = ev.code;
                ck_assert_ptr_nonnull(ev.why);
                ck_assert_uint_le(strlen(ev.why), 123);
                free(slice);
                return;
            }
            ck_assert_int_lt(f->n, 16);
            f->ev[f->n] = ev;
            f->data[f->n] = malloc(ev.len + 1);
            memcpy(f->data[f->n], ev.data, ev.len);
            f->data[f->n][ev.len] = 0;
            f->zero_copy[f->n] = ev.data >= slice && ev.data + ev.len <= slice + n;
            f->n++;
        }
        free(slice);
        off += n;
    }
}

static const wamp_ws_config cfg_1m = {.max_message = 1u << 20};

/* A fresh parser (cfg_1m) fed in[0..len) at once, then finished: what it gave in *f. */
static void feed_fresh(const unsigned char *in, size_t len, fed *f)
{
    wamp_ws ws;
    wamp_ws_init(&ws, &cfg_1m);
    feed_all(&ws, in, len, 0, f);
    wamp_ws_fini(&ws);
}

/* Feeds in at every slicing in steps and checks the error code; returns nothing. */
static void expect_fail(const unsigned char *in, size_t len, wamp_err err, uint16_t code)
{
    static const size_t steps[] = {0, 1, 2, 3, 5};
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        wamp_ws ws;
        fed f;
        wamp_ws_init(&ws, &cfg_1m);
        feed_all(&ws, in, len, steps[s], &f);
        ck_assert_msg(f.last == err, "step %zu: err %d, want %d", steps[s], f.last, err);
        ck_assert_uint_eq(f.code, code);
        fed_free(&f);
        wamp_ws_fini(&ws);
    }
}

static void hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    }
}

/* --- SHA-1, keys ----------------------------------------------------------------------------- */

START_TEST(test_sha1_vectors)
{
    static const struct {
        const char *in;
        const char *out;
    } v[] = {
            {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
            {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
            {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
             "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
    };

    unsigned char d[WAMP_SHA1_LEN];
    char h[2 * WAMP_SHA1_LEN + 1];
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        wamp_sha1(v[i].in, strlen(v[i].in), d);
        hex(d, sizeof(d), h);
        ck_assert_str_eq(h, v[i].out);
    }
    size_t n = 1000000;
    char *a = malloc(n);
    memset(a, 'a', n);
    wamp_sha1(a, n, d);
    hex(d, sizeof(d), h);
    ck_assert_str_eq(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    /* 55, 56 and 64 octets: the padding's one- and two-block cases. */
    wamp_sha1(a, 55, d);
    hex(d, sizeof(d), h);
    ck_assert_str_eq(h, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
    wamp_sha1(a, 56, d);
    hex(d, sizeof(d), h);
    ck_assert_str_eq(h, "c2db330f6083854c99d4b5bfb6e8f29f201be699");
    wamp_sha1(a, 64, d);
    hex(d, sizeof(d), h);
    ck_assert_str_eq(h, "0098ba824b5c16427bd7a1122a5a442a25ec644d");
    free(a);
}

END_TEST

START_TEST(test_accept_key)
{
    char out[WAMP_WS_ACCEPT_LEN + 1];
    const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
    ck_assert_int_eq(wamp_ws_accept(key, strlen(key), out), WAMP_OK);
    ck_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    memset(out, 'x', sizeof(out));
    ck_assert_int_eq(wamp_ws_accept("short", 5, out), WAMP_EINVAL);
    ck_assert_int_eq(out[0], 'x');
}

END_TEST

START_TEST(test_key_valid)
{
    ck_assert(wamp_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ==", 24));
    ck_assert(wamp_ws_key_valid("AAAAAAAAAAAAAAAAAAAAAA==", 24));
    ck_assert(wamp_ws_key_valid("+/+/+/+/+/+/+/+/+/+/+/==", 24));
    ck_assert(!wamp_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=", 23));
    ck_assert(!wamp_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ== ", 25));
    ck_assert(!wamp_ws_key_valid(" dGhlIHNhbXBsZSBub25jZQ=", 24));
    ck_assert(!wamp_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ==", 20));
    ck_assert(!wamp_ws_key_valid("dGhlIHNhbXBsZSBub25jZQAA", 24)); /* 18 octets */
    ck_assert(!wamp_ws_key_valid("dGhlIHNhbXBsZSBub25jZ-==", 24));
    ck_assert(!wamp_ws_key_valid("dGhlIHNhbXBsZSBub25j\x80Q==", 24));
    ck_assert(!wamp_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ==dGhlIHNhbXBsZSBub25jZQ==", 48));
    ck_assert(!wamp_ws_key_valid(NULL, 0));
}

END_TEST

/* --- Frames ---------------------------------------------------------------------------------- */

START_TEST(test_messages_any_slicing)
{
    static unsigned char in[70000 + 512];
    size_t n = 0;
    static unsigned char big[70000];
    for (size_t i = 0; i < sizeof(big); i++) {
        big[i] = (unsigned char)(i * 7);
    }
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "[1,\"realm1\",{}]", 15, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_BINARY, big, 200, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_BINARY, big, sizeof(big), true);
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "", 0, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_PING, "hi", 2, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_PONG, "", 0, true);
    static const size_t steps[] = {0, 1, 2, 3, 7, 13, 64, 4096};
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        wamp_ws ws;
        fed f;
        wamp_ws_init(&ws, &cfg_1m);
        feed_all(&ws, in, n, steps[s], &f);
        ck_assert_int_eq(f.last, WAMP_EAGAIN);
        ck_assert_uint_eq(f.consumed, n);
        ck_assert_int_eq(f.n, 6);
        ck_assert_int_eq(f.ev[0].kind, WAMP_WS_EV_MESSAGE);
        ck_assert(!f.ev[0].binary);
        ck_assert_str_eq((char *)f.data[0], "[1,\"realm1\",{}]");
        ck_assert(f.ev[1].binary);
        ck_assert_uint_eq(f.ev[1].len, 200);
        ck_assert_mem_eq(f.data[1], big, 200);
        ck_assert_uint_eq(f.ev[2].len, sizeof(big));
        ck_assert_mem_eq(f.data[2], big, sizeof(big));
        ck_assert_int_eq(f.ev[3].kind, WAMP_WS_EV_MESSAGE);
        ck_assert_uint_eq(f.ev[3].len, 0);
        ck_assert_int_eq(f.ev[4].kind, WAMP_WS_EV_PING);
        ck_assert_str_eq((char *)f.data[4], "hi");
        ck_assert_int_eq(f.ev[5].kind, WAMP_WS_EV_PONG);
        ck_assert_uint_eq(f.ev[5].len, 0);
        if (steps[s] == 0) {
            for (int i = 0; i < 6; i++) {
                ck_assert(f.zero_copy[i]);
            }
        }
        if (steps[s] == 1) {
            ck_assert(!f.zero_copy[0]);
            ck_assert(!f.zero_copy[2]);
        }
        fed_free(&f);
        wamp_ws_fini(&ws);
    }
}

END_TEST

START_TEST(test_zero_copy_only_whole_frame_in_slice)
{
    unsigned char in[64];
    size_t n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "hello world", 11, true);
    /* Header in one slice, the whole payload in the next: still zero copy. */
    wamp_ws ws;
    wamp_ws_event ev;
    size_t used;
    wamp_ws_init(&ws, &cfg_1m);
    ck_assert_int_eq(wamp_ws_feed(&ws, in, 6, &used, &ev), WAMP_EAGAIN);
    ck_assert_uint_eq(used, 6);
    ck_assert_int_eq(wamp_ws_feed(&ws, in + 6, n - 6, &used, &ev), WAMP_OK);
    ck_assert_ptr_eq(ev.data, in + 6);
    ck_assert_mem_eq(ev.data, "hello world", 11);
    /* Payload split: reassembled. */
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "hello world", 11, true);
    ck_assert_int_eq(wamp_ws_feed(&ws, in, 9, &used, &ev), WAMP_EAGAIN);
    ck_assert_int_eq(wamp_ws_feed(&ws, in + 9, n - 9, &used, &ev), WAMP_OK);
    ck_assert(ev.data < in || ev.data >= in + n);
    ck_assert_uint_eq(ev.len, 11);
    ck_assert_mem_eq(ev.data, "hello world", 11);
    wamp_ws_fini(&ws);
    wamp_ws_fini(&ws); /* idempotent */
}

END_TEST

START_TEST(test_one_event_per_call)
{
    unsigned char in[64];
    size_t n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "a", 1, true);
    size_t first = n;
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "b", 1, true);
    wamp_ws ws;
    wamp_ws_event ev;
    size_t used;
    wamp_ws_init(&ws, &cfg_1m);
    ck_assert_int_eq(wamp_ws_feed(&ws, in, n, &used, &ev), WAMP_OK);
    ck_assert_uint_eq(used, first);
    ck_assert_int_eq(ev.data[0], 'a');
    ck_assert_int_eq(wamp_ws_feed(&ws, in + used, n - used, &used, &ev), WAMP_OK);
    ck_assert_uint_eq(used, n - first);
    ck_assert_int_eq(ev.data[0], 'b');
    ck_assert_int_eq(wamp_ws_feed(&ws, in, 0, &used, &ev), WAMP_EAGAIN);
    ck_assert_uint_eq(used, 0);
    wamp_ws_fini(&ws);
}

END_TEST

START_TEST(test_fragments_with_control_frames)
{
    unsigned char in[512];
    size_t n = 0;
    put_frame(in, &n, WAMP_WS_OP_TEXT, "[1,", 3, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_PING, "p1", 2, true);
    put_frame(in, &n, WAMP_WS_OP_CONT, "", 0, true);
    put_frame(in, &n, WAMP_WS_OP_CONT, "\"realm1\"", 8, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_PONG, "p2", 2, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_CONT, ",{}]", 4, true);
    put_frame(in, &n, WAMP_WS_OP_BINARY, "\x00\x01", 2, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_CONT, "\x02", 1, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_CLOSE,
              "\x03\xe8"
              "bye",
              5, true);
    for (size_t step = 0; step < 12; step++) {
        wamp_ws ws;
        fed f;
        wamp_ws_init(&ws, &cfg_1m);
        feed_all(&ws, in, n, step, &f);
        ck_assert_int_eq(f.last, WAMP_EAGAIN);
        ck_assert_int_eq(f.n, 5);
        ck_assert_int_eq(f.ev[0].kind, WAMP_WS_EV_PING);
        ck_assert_str_eq((char *)f.data[0], "p1");
        ck_assert_int_eq(f.ev[1].kind, WAMP_WS_EV_PONG);
        ck_assert_int_eq(f.ev[2].kind, WAMP_WS_EV_MESSAGE);
        ck_assert(!f.ev[2].binary);
        ck_assert_str_eq((char *)f.data[2], "[1,\"realm1\",{}]");
        ck_assert(!f.zero_copy[2]);
        ck_assert(f.ev[3].binary);
        ck_assert_uint_eq(f.ev[3].len, 3);
        ck_assert_mem_eq(f.data[3], "\x00\x01\x02", 3);
        ck_assert_int_eq(f.ev[4].kind, WAMP_WS_EV_CLOSE);
        ck_assert_uint_eq(f.ev[4].code, 1000);
        ck_assert_str_eq((char *)f.data[4], "bye");
        fed_free(&f);
        /* After the CLOSE: every feed is ECLOSED. */
        size_t used = 9;
        wamp_ws_event ev;
        unsigned char more[8];
        size_t m = 0;
        put_frame(more, &m, FIN | WAMP_WS_OP_TEXT, "", 0, true);
        ck_assert_int_eq(wamp_ws_feed(&ws, more, m, &used, &ev), WAMP_ECLOSED);
        ck_assert_uint_eq(used, 0);
        wamp_ws_fini(&ws);
    }
}

END_TEST

#if ALLOC_COUNT_EVERY_MALLOC
/* Exported by the sanitizer runtimes (compiler-rt's sanitizer/allocator_interface.h). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

/* Whole frames in one slice allocate nothing; a reassembly buffer lives only until the call
 * after its message; a length announced but not sent reserves at most 64 KiB. */
START_TEST(test_memory)
{
    alloc_count_install();
    static unsigned char in[50 * 300];
    size_t n = 0;
    unsigned char pl[256];
    memset(pl, 'a', sizeof(pl));
    for (size_t i = 0; i < 50; i++) {
        put_frame(in, &n, FIN | (i % 2 ? WAMP_WS_OP_BINARY : WAMP_WS_OP_TEXT), pl, 20 + i * 4,
                  true);
    }
    wamp_ws_config cfg = {.max_message = 64u << 20};
    wamp_ws ws;
    wamp_ws_event ev;
    size_t used, off = 0, msgs = 0;
    wamp_ws_init(&ws, &cfg);
    /* Counted with no ck_assert in between: Check allocates for each. */
    size_t before = alloc_count_mallocs();
    while (wamp_ws_feed(&ws, in + off, n - off, &used, &ev) == WAMP_OK) {
        off += used;
        msgs++;
    }
    size_t mallocs = alloc_count_mallocs() - before;
    ck_assert_uint_eq(msgs, 50);
    ck_assert_uint_eq(mallocs, 0);
    wamp_ws_fini(&ws);
#if ALLOC_COUNT_EVERY_MALLOC
    static unsigned char big[3000];
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_BINARY, big, sizeof(big), true);
    wamp_ws_init(&ws, &cfg);
    size_t bytes = __sanitizer_get_current_allocated_bytes();
    wamp_err e1 = wamp_ws_feed(&ws, in, 1000, &used, &ev);
    wamp_err e2 = wamp_ws_feed(&ws, in + 1000, n - 1000, &used, &ev);
    size_t len2 = ev.len;
    size_t holding = __sanitizer_get_current_allocated_bytes();
    wamp_err e3 = wamp_ws_feed(&ws, in, 0, &used, &ev);
    size_t idle = __sanitizer_get_current_allocated_bytes();
    /* 16 MiB announced, 10 octets sent. */
    unsigned char head[14] = {
            WAMP_WS_OP_BINARY | FIN, 0x80 | 127, 0, 0, 0, 0, 1, 0, 0, 0, 1, 2, 3, 4};
    wamp_err e4 = wamp_ws_feed(&ws, head, 14, &used, &ev);
    wamp_err e5 = wamp_ws_feed(&ws, big, 10, &used, &ev);
    size_t announced = __sanitizer_get_current_allocated_bytes();
    wamp_ws_fini(&ws);
    size_t after = __sanitizer_get_current_allocated_bytes();
    ck_assert_int_eq(e1, WAMP_EAGAIN);
    ck_assert_int_eq(e2, WAMP_OK);
    ck_assert_uint_eq(len2, sizeof(big));
    ck_assert_uint_ge(holding, bytes + sizeof(big));
    ck_assert_int_eq(e3, WAMP_EAGAIN);
    ck_assert_uint_eq(idle, bytes);
    ck_assert_int_eq(e4, WAMP_EAGAIN);
    ck_assert_int_eq(e5, WAMP_EAGAIN);
    ck_assert_uint_le(announced - bytes, 65536 + 10 + 1024);
    ck_assert_uint_eq(after, bytes);
#endif
}

END_TEST

/* --- Receive rules --------------------------------------------------------------------------- */

START_TEST(test_rule_unmasked)
{
    unsigned char in[32];
    size_t n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "hello", 5, false);
    expect_fail(in, n, WAMP_EPROTO, 1002);
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_PING, "", 0, false);
    expect_fail(in, n, WAMP_EPROTO, 1002);
    /* Decided from the second octet: nothing after it is needed. */
    expect_fail(in, 2, WAMP_EPROTO, 1002);
}

END_TEST

START_TEST(test_rule_rsv)
{
    static const uint8_t rsv[] = {0x40, 0x20, 0x10};
    for (size_t i = 0; i < 3; i++) {
        unsigned char in[32];
        size_t n = 0;
        put_frame(in, &n, (uint8_t)(FIN | rsv[i] | WAMP_WS_OP_TEXT), "x", 1, true);
        expect_fail(in, n, WAMP_EPROTO, 1002);
    }
}

END_TEST

START_TEST(test_rule_opcodes)
{
    for (unsigned op = 0; op < 16; op++) {
        unsigned char in[32];
        size_t n = 0;
        put_frame(in, &n, (uint8_t)(FIN | op), "", 0, true);
        fed f;
        feed_fresh(in, n, &f);
        bool known = op == 1 || op == 2 || op == 8 || op == 9 || op == 10;
        if (known) {
            ck_assert_int_eq(f.last, WAMP_EAGAIN);
            ck_assert_int_eq(f.n, 1);
        } else {
            ck_assert_int_eq(f.last, WAMP_EPROTO); /* 0: continuation outside a message */
            ck_assert_uint_eq(f.code, 1002);
        }
        fed_free(&f);
    }
}

END_TEST

START_TEST(test_rule_control_frames)
{
    unsigned char in[256];
    unsigned char pl[126] = {0};
    size_t n = 0;
    put_frame(in, &n, WAMP_WS_OP_PING, "", 0, true); /* no FIN */
    expect_fail(in, n, WAMP_EPROTO, 1002);
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_PONG, pl, 126, true);
    expect_fail(in, n, WAMP_EPROTO, 1002);
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_PING, pl, 125, true);
    wamp_ws ws;
    fed f;
    wamp_ws_init(&ws, &cfg_1m);
    feed_all(&ws, in, n, 1, &f);
    ck_assert_int_eq(f.n, 1);
    ck_assert_uint_eq(f.ev[0].len, 125);
    fed_free(&f);
    wamp_ws_fini(&ws);
}

END_TEST

START_TEST(test_rule_continuation_order)
{
    unsigned char in[64];
    size_t n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_CONT, "x", 1, true);
    expect_fail(in, n, WAMP_EPROTO, 1002);
    n = 0;
    put_frame(in, &n, WAMP_WS_OP_TEXT, "x", 1, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "y", 1, true);
    expect_fail(in, n, WAMP_EPROTO, 1002);
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, "x", 1, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_CONT, "y", 1, true);
    expect_fail(in, n, WAMP_EPROTO, 1002);
}

END_TEST

START_TEST(test_rule_length_top_bit)
{
    unsigned char in[16] = {
            FIN | WAMP_WS_OP_BINARY, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4};
    expect_fail(in, 14, WAMP_EPROTO, 1002);
}

END_TEST

START_TEST(test_rule_too_big_from_header)
{
    wamp_ws_config cfg = {.max_message = 100};
    wamp_ws ws;
    wamp_ws_event ev;
    size_t used;
    unsigned char in[512];
    size_t n = 0;
    unsigned char pl[101] = {0};
    /* 101 octets announced: refused from the header alone, before any payload. */
    put_frame(in, &n, FIN | WAMP_WS_OP_BINARY, pl, 101, true);
    wamp_ws_init(&ws, &cfg);
    ck_assert_int_eq(wamp_ws_feed(&ws, in, 6, &used, &ev), WAMP_EPROTO);
    ck_assert_uint_eq(ev.code, 1009);
    ck_assert_uint_eq(used, 6);
    /* Stays failed, with the same code. */
    ck_assert_int_eq(wamp_ws_feed(&ws, in + 6, n - 6, &used, &ev), WAMP_EPROTO);
    ck_assert_uint_eq(ev.code, 1009);
    ck_assert_uint_eq(used, 0);
    wamp_ws_fini(&ws);
    /* Exactly the limit passes. */
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_BINARY, pl, 100, true);
    wamp_ws_init(&ws, &cfg);
    ck_assert_int_eq(wamp_ws_feed(&ws, in, n, &used, &ev), WAMP_OK);
    ck_assert_uint_eq(ev.len, 100);
    wamp_ws_fini(&ws);
    /* Fragments: 60 + 40 pass, 60 + 41 fail at the second header. */
    n = 0;
    put_frame(in, &n, WAMP_WS_OP_BINARY, pl, 60, true);
    put_frame(in, &n, FIN | WAMP_WS_OP_CONT, pl, 40, true);
    size_t ok_len = n;
    put_frame(in, &n, WAMP_WS_OP_TEXT, pl, 60, true);
    size_t before = n;
    put_frame(in, &n, FIN | WAMP_WS_OP_CONT, pl, 41, true);
    for (size_t step = 0; step < 4; step++) {
        fed f;
        wamp_ws_init(&ws, &cfg);
        feed_all(&ws, in, n, step, &f);
        ck_assert_int_eq(f.n, 1);
        ck_assert_uint_eq(f.ev[0].len, 100);
        ck_assert_int_eq(f.last, WAMP_EPROTO);
        ck_assert_uint_eq(f.code, 1009);
        ck_assert_uint_eq(f.consumed, before + 6);
        (void)ok_len;
        fed_free(&f);
        wamp_ws_fini(&ws);
    }
    /* A 64-bit length far beyond the limit, with no limit set: only the frame's own octets
     * are waited for (nothing is allocated ahead). */
    unsigned char huge[14] = {
            FIN | WAMP_WS_OP_BINARY, 0x80 | 127, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4};
    wamp_ws_config unlimited = {.max_message = 0};
    wamp_ws_init(&ws, &unlimited);
    ck_assert_int_eq(wamp_ws_feed(&ws, huge, 14, &used, &ev), WAMP_EAGAIN);
    wamp_ws_fini(&ws);
    wamp_ws_init(&ws, &cfg);
    ck_assert_int_eq(wamp_ws_feed(&ws, huge, 14, &used, &ev), WAMP_EPROTO);
    ck_assert_uint_eq(ev.code, 1009);
    wamp_ws_fini(&ws);
}

END_TEST

START_TEST(test_rule_close_payload)
{
    static const struct {
        const char *p;
        size_t len;
        wamp_err err;
        uint16_t code;
    } v[] = {
            {"", 0, WAMP_OK, 1005},
            {"\x03", 1, WAMP_EPROTO, 1002},
            {"\x03\xe8", 2, WAMP_OK, 1000},
            {"\x03\xeb", 2, WAMP_OK, 1003},
            {"\x03\xec", 2, WAMP_EPROTO, 1002}, /* 1004 */
            {"\x03\xed", 2, WAMP_EPROTO, 1002}, /* 1005 */
            {"\x03\xee", 2, WAMP_EPROTO, 1002}, /* 1006 */
            {"\x03\xef", 2, WAMP_OK, 1007},
            {"\x03\xf6", 2, WAMP_OK, 1014},
            {"\x03\xf7", 2, WAMP_EPROTO, 1002}, /* 1015 */
            {"\x03\xe7", 2, WAMP_EPROTO, 1002}, /* 999 */
            {"\x0b\xb7", 2, WAMP_EPROTO, 1002}, /* 2999 */
            {"\x0b\xb8", 2, WAMP_OK, 3000},
            {"\x13\x87", 2, WAMP_OK, 4999},
            {"\x13\x88", 2, WAMP_EPROTO, 1002}, /* 5000 */
            {"\x00\x00", 2, WAMP_EPROTO, 1002},
            {"\x03\xe8\xce\xba", 4, WAMP_OK, 1000},
            {"\x03\xe8\xce", 3, WAMP_EPROTO, 1007},
            {"\x03\xe8\xed\xa0\x80", 5, WAMP_EPROTO, 1007},
    };

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        unsigned char in[64];
        size_t n = 0;
        put_frame(in, &n, FIN | WAMP_WS_OP_CLOSE, v[i].p, v[i].len, true);
        for (size_t step = 0; step < 3; step++) {
            wamp_ws ws;
            fed f;
            wamp_ws_init(&ws, &cfg_1m);
            feed_all(&ws, in, n, step, &f);
            if (v[i].err == WAMP_OK) {
                ck_assert_msg(f.last == WAMP_EAGAIN && f.n == 1, "case %zu", i);
                ck_assert_int_eq(f.ev[0].kind, WAMP_WS_EV_CLOSE);
                ck_assert_uint_eq(f.ev[0].code, v[i].code);
                ck_assert_uint_eq(f.ev[0].len, v[i].len > 2 ? v[i].len - 2 : 0);
            } else {
                ck_assert_msg(f.last == v[i].err, "case %zu", i);
                ck_assert_uint_eq(f.code, v[i].code);
            }
            fed_free(&f);
            wamp_ws_fini(&ws);
        }
    }
}

END_TEST

/* --- UTF-8 ----------------------------------------------------------------------------------- */

/* Sends text as a fragmented text message cut at every position (two fragments), each fed
 * whole and one octet at a time; valid text gives one message, invalid text 1007. */
static void text_split(const char *text, size_t len, bool valid)
{
    for (size_t cut = 0; cut <= len; cut++) {
        unsigned char in[256];
        size_t n = 0;
        put_frame(in, &n, WAMP_WS_OP_TEXT, text, cut, true);
        put_frame(in, &n, FIN | WAMP_WS_OP_CONT, text + cut, len - cut, true);
        for (size_t step = 0; step < 2; step++) {
            wamp_ws ws;
            fed f;
            wamp_ws_init(&ws, &cfg_1m);
            feed_all(&ws, in, n, step, &f);
            if (valid) {
                ck_assert_msg(f.last == WAMP_EAGAIN && f.n == 1, "cut %zu", cut);
                ck_assert_mem_eq(f.data[0], text, len);
            } else {
                ck_assert_msg(f.last == WAMP_EPROTO, "cut %zu of invalid text", cut);
                ck_assert_uint_eq(f.code, 1007);
                ck_assert_int_eq(f.n, 0);
            }
            fed_free(&f);
            wamp_ws_fini(&ws);
        }
    }
}

START_TEST(test_utf8_split_fragments)
{
    text_split("a\xc2\xa2\xe2\x82\xac\xf0\x9f\x98\x80z", 11, true);   /* ¢ € 😀 */
    text_split("\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf", 10, true); /* U+D7FF U+E000 U+10FFFF */
    text_split("nul \x00 inside", 13, true);
    text_split("\xc0\xaf", 2, false);         /* overlong '/' */
    text_split("\xe0\x80\xaf", 3, false);     /* overlong, 3 octets */
    text_split("\xf0\x80\x80\xaf", 4, false); /* overlong, 4 octets */
    text_split("\xed\xa0\x80", 3, false);     /* U+D800 */
    text_split("\xed\xbf\xbf", 3, false);     /* U+DFFF */
    text_split("\xf4\x90\x80\x80", 4, false); /* U+110000 */
    text_split("\xf5\x80\x80\x80", 4, false); /* lead above F4 */
    text_split("ab\x80", 3, false);           /* lone continuation */
    text_split("ab\xe2\x82", 4, false);       /* truncated at the end of the message */
    text_split("\xe2\x28\xa1", 3, false);     /* bad continuation */
}

END_TEST

START_TEST(test_utf8_fails_at_first_fragment)
{
    /* The first fragment holds an octet no continuation can repair: refused before FIN. */
    unsigned char in[64];
    size_t n = 0;
    put_frame(in, &n, WAMP_WS_OP_TEXT, "ok\xed\xa0", 4, true);
    expect_fail(in, n, WAMP_EPROTO, 1007);
    n = 0;
    put_frame(in, &n, WAMP_WS_OP_TEXT, "ok\xff", 3, true);
    expect_fail(in, n, WAMP_EPROTO, 1007);
    /* Binary messages are not checked. */
    n = 0;
    put_frame(in, &n, FIN | WAMP_WS_OP_BINARY, "\xff\xfe", 2, true);
    fed f;
    feed_fresh(in, n, &f);
    ck_assert_int_eq(f.n, 1);
    ck_assert(f.ev[0].binary);
    fed_free(&f);
}

END_TEST

START_TEST(test_utf8_step_matches_reference)
{
    static const unsigned char alphabet[] = {'a',  0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xc1,
                                             0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4,
                                             0xf5, 0xff, 0x8f, 0x90, 0x9f, 0xa0};
    unsigned seed = 12345;
    unsigned char s[24];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 24);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            s[i] = alphabet[(seed >> 16) % sizeof(alphabet)];
        }
        bool want = utf8_ref_valid(s, n);
        ck_assert_int_eq(wamp_utf8_valid(s, n), want);
        for (size_t cut = 0; cut <= n; cut++) {
            uint32_t st = wamp_utf8_step(WAMP_UTF8_ACCEPT, s, cut);
            st = wamp_utf8_step(st, s + cut, n - cut);
            ck_assert_int_eq(st == WAMP_UTF8_ACCEPT, want);
        }
    }
}

END_TEST

/* The word-at-a-time scans against one-octet loops: every length to 100, one special octet at
 * every place in a run of plain ones (and none), so each vector step, its tail and the break out
 * of the wide loop are crossed at every offset. */
START_TEST(test_scans_match_bytewise)
{
    static const unsigned char specials[] = {0x00, 0x1f, '"', '\\', 0x7f, 0x80, 0xc3, 0xff, 0x20};
    unsigned char s[100];
    for (size_t n = 0; n <= sizeof(s); n++) {
        for (size_t k = 0; k <= n; k++) {
            for (size_t c = 0; c < sizeof(specials); c++) {
                memset(s, 'x', n);
                if (k < n) {
                    s[k] = specials[c];
                }
                size_t ascii = 0, plain = 0;
                while (ascii < n && s[ascii] < 0x80) {
                    ascii++;
                }
                while (plain < n && s[plain] != '"' && s[plain] != '\\' && s[plain] >= 0x20 &&
                       s[plain] < 0x80) {
                    plain++;
                }
                ck_assert_uint_eq(wamp_scan_ascii(s, n), ascii);
                ck_assert_uint_eq(wamp_scan_json_plain(s, n), plain);
            }
        }
    }
}

END_TEST

/* A whole text frame (unmasked in place, ASCII noted while unmasking) with one octet at every
 * place: 0xff is refused with 1007, U+00E9 accepted, at every mask phase and length to 40 (the
 * 16-octet steps, the 8-octet step and the tail). */
START_TEST(test_utf8_whole_frame_every_place)
{
    unsigned char msg[40], in[60];
    for (size_t len = 2; len <= 40; len++) {
        for (size_t k = 0; k + 1 < len; k++) {
            memset(msg, 'a', len);
            msg[k] = 0xff;
            size_t n = 0;
            put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, msg, len, true);
            expect_fail(in, n, WAMP_EPROTO, 1007);
            msg[k] = 0xc3;
            msg[k + 1] = 0xa9;
            n = 0;
            put_frame(in, &n, FIN | WAMP_WS_OP_TEXT, msg, len, true);
            fed f;
            feed_fresh(in, n, &f);
            ck_assert_int_eq(f.n, 1);
            ck_assert_uint_eq(f.ev[0].len, len);
            ck_assert_mem_eq(f.data[0], msg, len);
            fed_free(&f);
        }
    }
}

END_TEST

/* --- Writers --------------------------------------------------------------------------------- */

START_TEST(test_header_writer)
{
    uint8_t h[WAMP_WS_HEADER_MAX];
    ck_assert_uint_eq(wamp_ws_header(h, WAMP_WS_OP_TEXT, true, 0), 2);
    ck_assert_int_eq(h[0], 0x81);
    ck_assert_int_eq(h[1], 0);
    ck_assert_uint_eq(wamp_ws_header(h, WAMP_WS_OP_BINARY, true, 125), 2);
    ck_assert_int_eq(h[0], 0x82);
    ck_assert_int_eq(h[1], 125);
    ck_assert_uint_eq(wamp_ws_header(h, WAMP_WS_OP_TEXT, false, 126), 4);
    ck_assert_int_eq(h[0], 0x01);
    ck_assert_mem_eq(h + 1, "\x7e\x00\x7e", 3);
    ck_assert_uint_eq(wamp_ws_header(h, WAMP_WS_OP_CONT, true, 65535), 4);
    ck_assert_int_eq(h[0], 0x80);
    ck_assert_mem_eq(h + 1, "\x7e\xff\xff", 3);
    ck_assert_uint_eq(wamp_ws_header(h, WAMP_WS_OP_BINARY, true, 65536), 10);
    ck_assert_mem_eq(h, "\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00", 10);
    ck_assert_uint_eq(wamp_ws_header(h, WAMP_WS_OP_PONG, true, 0x0102030405060708ULL), 10);
    ck_assert_mem_eq(h, "\x8a\x7f\x01\x02\x03\x04\x05\x06\x07\x08", 10);
}

END_TEST

START_TEST(test_close_frame_writer)
{
    uint8_t out[2 + WAMP_WS_CONTROL_MAX];
    ck_assert_uint_eq(wamp_ws_close_frame(out, 0, "ignored"), 2);
    ck_assert_mem_eq(out, "\x88\x00", 2);
    ck_assert_uint_eq(wamp_ws_close_frame(out, 1002, NULL), 4);
    ck_assert_mem_eq(out, "\x88\x02\x03\xea", 4);
    ck_assert_uint_eq(wamp_ws_close_frame(out, 1009, "too big"), 11);
    ck_assert_mem_eq(out, "\x88\x09\x03\xf1too big", 11);
    /* 123 octets of reason fit exactly. */
    char r[300];
    memset(r, 'x', 123);
    r[123] = 0;
    ck_assert_uint_eq(wamp_ws_close_frame(out, 1000, r), 127);
    ck_assert_int_eq(out[1], 125);
    /* Longer: cut at 123 unless that splits a character. 122 ASCII + "€" (3 octets): the
     * euro sign does not fit and goes whole. */
    memset(r, 'x', 122);
    memcpy(r + 122,
           "\xe2\x82\xac"
           "yyyy",
           8);
    size_t n = wamp_ws_close_frame(out, 1000, r);
    ck_assert_uint_eq(n, 2 + 2 + 122);
    ck_assert_int_eq(out[1], 124);
    ck_assert_int_eq(out[n - 1], 'x');
    /* 121 ASCII + "¢" (2 octets) = 123: fits whole. */
    memset(r, 'x', 121);
    memcpy(r + 121, "\xc2\xa2zzz", 6);
    n = wamp_ws_close_frame(out, 1000, r);
    ck_assert_uint_eq(n, 127);
    ck_assert_int_eq(out[n - 1], 0xa2);
    /* The frame the writer makes is one the parser takes (masked as a client would). */
    unsigned char in[200];
    size_t m = 0;
    put_frame(in, &m, out[0], out + 2, n - 2, true);
    fed f;
    feed_fresh(in, m, &f);
    ck_assert_int_eq(f.n, 1);
    ck_assert_int_eq(f.ev[0].kind, WAMP_WS_EV_CLOSE);
    ck_assert_uint_eq(f.ev[0].code, 1000);
    ck_assert_uint_eq(f.ev[0].len, 123);
    fed_free(&f);
}

END_TEST

static Suite *wamp_ws_suite(void)
{
    Suite *s = suite_create("wamp_ws");
    TCase *tc = tcase_create("ws");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sha1_vectors);
    tcase_add_test(tc, test_accept_key);
    tcase_add_test(tc, test_key_valid);
    tcase_add_test(tc, test_messages_any_slicing);
    tcase_add_test(tc, test_zero_copy_only_whole_frame_in_slice);
    tcase_add_test(tc, test_one_event_per_call);
    tcase_add_test(tc, test_fragments_with_control_frames);
    tcase_add_test(tc, test_memory);
    tcase_add_test(tc, test_rule_unmasked);
    tcase_add_test(tc, test_rule_rsv);
    tcase_add_test(tc, test_rule_opcodes);
    tcase_add_test(tc, test_rule_control_frames);
    tcase_add_test(tc, test_rule_continuation_order);
    tcase_add_test(tc, test_rule_length_top_bit);
    tcase_add_test(tc, test_rule_too_big_from_header);
    tcase_add_test(tc, test_rule_close_payload);
    tcase_add_test(tc, test_utf8_split_fragments);
    tcase_add_test(tc, test_utf8_fails_at_first_fragment);
    tcase_add_test(tc, test_utf8_step_matches_reference);
    tcase_add_test(tc, test_scans_match_bytewise);
    tcase_add_test(tc, test_utf8_whole_frame_every_place);
    tcase_add_test(tc, test_header_writer);
    tcase_add_test(tc, test_close_frame_writer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_ws_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
