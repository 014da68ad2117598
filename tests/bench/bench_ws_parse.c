/* bench_ws_parse.c: what the WebSocket frame parser (wamp_ws.h) costs per received message,
 * without the network, against a memcpy of the same octets in the same run.
 *
 * For each message size (default 64, 1024 and 65536 octets) builds about 4 MiB of masked
 * client frames of that size and feeds them through wamp_ws_feed() `repeat` times, handing
 * out every MESSAGE event as the router's adapter would. Two ways of arriving: "whole" (the
 * input in one slice: every message is a whole frame in the slice, so it is unmasked in place
 * and handed out without a copy) and "seg" (the input in 1448-octet slices, as TCP segments
 * come: messages that span slices are reassembled). Text frames (UTF-8 checked) and binary
 * frames. Unmasking is in place and its own inverse, so the same buffer is fed again without
 * restoring it: mask and payload are ASCII, so the payload stays valid UTF-8 either way.
 * Reports CPU ns per message for the parser and for memcpy of the same octets (the least a
 * receive path that copies once pays), and their ratio. A measuring tool, never a test.
 *
 * Usage: bench-ws-parse [--repeat N] [--size BYTES]...
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wamp_ws.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* n frames of size octets each (opcode op), masked with an ASCII mask. */
static unsigned char *build(size_t size, size_t n, wamp_ws_opcode op, size_t *len)
{
    static const uint8_t mask[4] = {0x11, 0x22, 0x33, 0x44};
    unsigned char *buf = malloc(n * (size + 14));
    if (!buf) {
        return NULL;
    }
    size_t o = 0;
    for (size_t f = 0; f < n; f++) {
        uint8_t h[WAMP_WS_HEADER_MAX];
        size_t hl = wamp_ws_header(h, op, true, size);
        h[1] |= 0x80;
        memcpy(buf + o, h, hl);
        o += hl;
        memcpy(buf + o, mask, 4);
        o += 4;
        for (size_t i = 0; i < size; i++) {
            unsigned char c = (unsigned char)("[36,1,2,{},[\"hello\"]]abcdefghijklmnop"[i % 37]);
            buf[o + i] = c ^ mask[i & 3];
        }
        o += size;
    }
    *len = o;
    return buf;
}

static volatile size_t sink;

/* Feeds buf in slices of seg octets (0 = whole); returns the messages seen. */
static size_t feed(wamp_ws *ws, unsigned char *buf, size_t len, size_t seg)
{
    size_t msgs = 0, off = 0;
    while (off < len) {
        size_t n = seg && len - off > seg ? seg : len - off;
        size_t sub = 0;
        while (sub < n) {
            size_t used;
            wamp_ws_event ev;
            wamp_err err = wamp_ws_feed(ws, buf + off + sub, n - sub, &used, &ev);
            sub += used;
            if (err == WAMP_EAGAIN) {
                break;
            }
            if (err != WAMP_OK) {
                fprintf(stderr, "bench-ws-parse: feed failed: %s\n", ev.why ? ev.why : "?");
                exit(1);
            }
            sink += ev.len;
            msgs++;
        }
        off += n;
    }
    return msgs;
}

static void run(size_t size, wamp_ws_opcode op, int repeat)
{
    size_t n = (4u << 20) / (size + 14);
    n = n ? n : 1;
    size_t len;
    unsigned char *buf = build(size, n, op, &len);
    unsigned char *dst = malloc(len);
    if (!buf || !dst) {
        fprintf(stderr, "bench-ws-parse: out of memory\n");
        exit(1);
    }
    wamp_ws_config cfg = {.max_message = 16u << 20};

    static const struct {
        const char *name;
        size_t seg;
    } modes[] = {{"whole", 0}, {"seg", 1448}};

    for (size_t m = 0; m < 2; m++) {
        wamp_ws ws;
        wamp_ws_init(&ws, &cfg);
        feed(&ws, buf, len, modes[m].seg); /* warm up (and back to masked: fed twice below) */
        feed(&ws, buf, len, modes[m].seg);
        double t0 = cpu_now();
        size_t msgs = 0;
        for (int r = 0; r < repeat; r++) {
            msgs += feed(&ws, buf, len, modes[m].seg);
        }
        double t_parse = cpu_now() - t0;
        wamp_ws_fini(&ws);
        t0 = cpu_now();
        for (int r = 0; r < repeat; r++) {
            memcpy(dst, buf, len);
            sink += dst[(size_t)r % len];
        }
        double t_copy = cpu_now() - t0;
        double per = 1e9 / (double)msgs;
        printf("%-6s %6zu B  %-5s  parse %9.1f ns/msg  memcpy %9.1f ns/msg  ratio %5.2f  "
               "(%.0f MB/s)\n",
               op == WAMP_WS_OP_TEXT ? "text" : "binary", size, modes[m].name, t_parse * per,
               t_copy * per, t_parse / t_copy, (double)len * repeat / t_parse / 1e6);
    }
    free(dst);
    free(buf);
}

int main(int argc, char **argv)
{
    int repeat = 50;
    size_t sizes[8];
    size_t n_sizes = 0;
    static const struct option longopts[] = {
            {"repeat", required_argument, NULL, 'r'}, {"size", required_argument, NULL, 's'}, {0}};
    int c;
    while ((c = getopt_long(argc, argv, "r:s:", longopts, NULL)) != -1) {
        if (c == 'r') {
            repeat = atoi(optarg) > 0 ? atoi(optarg) : 1;
        } else if (c == 's' && n_sizes < 8) {
            sizes[n_sizes++] = (size_t)strtoul(optarg, NULL, 10);
        } else {
            fprintf(stderr, "usage: bench-ws-parse [--repeat N] [--size BYTES]...\n");
            return 2;
        }
    }
    if (n_sizes == 0) {
        sizes[n_sizes++] = 64;
        sizes[n_sizes++] = 1024;
        sizes[n_sizes++] = 65536;
    }
    if (repeat % 2) {
        repeat++; /* an even count leaves the frames masked for the next mode */
    }
    for (size_t i = 0; i < n_sizes; i++) {
        run(sizes[i], WAMP_WS_OP_TEXT, repeat);
        run(sizes[i], WAMP_WS_OP_BINARY, repeat);
    }
    return 0;
}
