/* fuzz_ws.c: the WebSocket frame parser (wamp_ws.h) on arbitrary client bytes.
 * Input: byte 0 picks the message limit and the mode, byte 1 the slicing, the rest is either
 * the raw bytes a client sends (mode bit clear) or frame descriptions (mode bit set) built
 * into frames here, so that most inputs get past the header rules: per frame a first octet
 * (FIN, RSV, opcode as given), a flags octet (bit 0: masked; bits 1-2: length encoding 7, 16
 * or 64 bits, minimal or not), a length octet (255: two more octets give it) and the payload.
 * Properties: never crashes, leaks or reads outside its input (each slice is its own
 * allocation); *used never exceeds the slice; the events and the final status do not depend
 * on how the bytes are sliced, nor on whether payload octets are fed or written through direct
 * reads (wamp_ws_rx_space()/wamp_ws_rx_commit(), at most 1 + (byte 1 & 63) octets each); a MESSAGE
 * never exceeds max_message; a text MESSAGE is valid UTF-8 (checked by a separate decoder,
 * utf8_ref.h); control payloads are at most 125 octets; a CLOSE's code is one valid on the wire or
 * 1005; a failure's code is 1002, 1007 or 1009; after a CLOSE or a failure nothing more is read. */
#include <string.h>

#include "fuzz.h"
#include "utf8_ref.h"
#include "wamp_ws.h"

#define MAX_EVENTS 128

typedef struct run {
    wamp_ws_event ev[MAX_EVENTS];
    unsigned char *payload[MAX_EVENTS]; /* copies: event data is borrowed */
    size_t n;
    wamp_err last;
    uint16_t code;
} run;

static void run_fini(run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->payload[i]);
    }
}

static bool close_code_ok(unsigned c)
{
    return c == 1005 || (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) ||
           (c >= 3000 && c <= 4999);
}

static void check_event(const wamp_ws_config *cfg, const wamp_ws_event *ev)
{
    switch (ev->kind) {
    case WAMP_WS_EV_MESSAGE:
        FUZZ_CHECK(cfg->max_message == 0 || ev->len <= cfg->max_message);
        FUZZ_CHECK(ev->binary || utf8_ref_valid(ev->data, ev->len));
        break;
    case WAMP_WS_EV_PING:
    case WAMP_WS_EV_PONG:
        FUZZ_CHECK(ev->len <= WAMP_WS_CONTROL_MAX);
        break;
    case WAMP_WS_EV_CLOSE:
        FUZZ_CHECK(ev->len <= WAMP_WS_CONTROL_MAX - 2);
        FUZZ_CHECK(close_code_ok(ev->code));
        FUZZ_CHECK(ev->code != 1005 || ev->len == 0);
        FUZZ_CHECK(utf8_ref_valid(ev->data, ev->len));
        break;
    default:
        FUZZ_CHECK(false); /* an unknown event kind */
    }
}

/* Records an event, or the final status after an error (nothing more is read from then on). */
static void record(const wamp_ws_config *cfg, wamp_ws *ws, wamp_err err, const wamp_ws_event *ev,
                   size_t used, run *r)
{
    if (err != WAMP_OK) {
        r->last = err;
        if (err == WAMP_EPROTO) {
            FUZZ_CHECK(ev->code == 1002 || ev->code == 1007 || ev->code == 1009);
            FUZZ_CHECK(ev->why != NULL && strlen(ev->why) <= 123);
            r->code = ev->code;
        } else {
            FUZZ_CHECK(err == WAMP_ECLOSED && used == 0);
        }
        /* Stays so: nothing more is read. */
        size_t again = 1;
        unsigned char one = 0;
        wamp_ws_event ev2;
        FUZZ_CHECK(wamp_ws_feed(ws, &one, 1, &again, &ev2) == err && again == 0);
        return;
    }
    check_event(cfg, ev);
    r->payload[r->n] = malloc(ev->len ? ev->len : 1);
    FUZZ_CHECK(r->payload[r->n] != NULL);
    if (ev->len) {
        memcpy(r->payload[r->n], ev->data, ev->len);
    }
    r->ev[r->n++] = *ev;
}

/* Feeds data in slices (0 = all at once), each copied into its own allocation; with direct,
 * whenever the parser offers a direct read (wamp_ws_rx_space(), at most direct octets), the next
 * octets go there instead, a slice's worth at most. */
static void feed_all(const wamp_ws_config *cfg, const uint8_t *data, size_t size, unsigned slicing,
                     size_t direct, run *r)
{
    wamp_ws ws;
    wamp_ws_init(&ws, cfg);
    memset(r, 0, sizeof(*r));
    r->last = WAMP_EAGAIN;
    size_t off = 0, k = 0;
    while (off < size && r->n < MAX_EVENTS && r->last == WAMP_EAGAIN) {
        size_t slice = slicing ? 1 + (size_t)((slicing * 7 + k++) % 23) : size - off;
        if (slice > size - off) {
            slice = size - off;
        }
        size_t room = 0;
        unsigned char *p = direct ? wamp_ws_rx_space(&ws, direct, &room) : NULL;
        if (p) {
            FUZZ_CHECK(room > 0 && room <= direct);
            size_t n = room < slice ? room : slice;
            memcpy(p, data + off, n);
            off += n;
            wamp_ws_event ev;
            wamp_err err = wamp_ws_rx_commit(&ws, n, &ev);
            if (err != WAMP_EAGAIN) {
                record(cfg, &ws, err, &ev, 0, r);
            }
            continue;
        }
        FUZZ_CHECK(room == 0);
        unsigned char *in = malloc(slice);
        FUZZ_CHECK(in != NULL);
        memcpy(in, data + off, slice);
        size_t sub = 0;
        while (sub < slice && r->n < MAX_EVENTS) {
            size_t used = 0;
            wamp_ws_event ev;
            wamp_err err = wamp_ws_feed(&ws, in + sub, slice - sub, &used, &ev);
            FUZZ_CHECK(used <= slice - sub);
            sub += used;
            if (err == WAMP_EAGAIN) {
                FUZZ_CHECK(sub == slice);
                break;
            }
            record(cfg, &ws, err, &ev, used, r);
            if (err != WAMP_OK) {
                break;
            }
        }
        free(in);
        off += slice;
    }
    wamp_ws_fini(&ws);
}

static bool same_event(const run *a, const run *b, size_t i)
{
    const wamp_ws_event *x = &a->ev[i], *y = &b->ev[i];
    return x->kind == y->kind && x->binary == y->binary && x->code == y->code && x->len == y->len &&
           (x->len == 0 || memcmp(a->payload[i], b->payload[i], x->len) == 0);
}

/* Builds client frames from descriptions (see the top of the file) into out; returns the
 * length. */
static size_t build_frames(const uint8_t *d, size_t n, unsigned char *out, size_t cap)
{
    size_t o = 0, i = 0;
    unsigned f = 0;
    while (n - i >= 3) {
        uint8_t b0 = d[i], flags = d[i + 1];
        size_t len = d[i + 2];
        i += 3;
        if (len == 255 && n - i >= 2) {
            len = (size_t)d[i] << 8 | d[i + 1];
            i += 2;
        }
        if (len > n - i) {
            len = n - i;
        }
        if (o + 14 + len > cap) {
            break;
        }
        bool masked = flags & 1;
        unsigned enc = (flags >> 1) & 3;
        out[o++] = b0;
        uint8_t m = masked ? 0x80 : 0;
        if (len < 126 && enc == 0) {
            out[o++] = (uint8_t)(m | len);
        } else if (len <= 0xffff && enc != 2) {
            out[o++] = m | 126;
            out[o++] = (uint8_t)(len >> 8);
            out[o++] = (uint8_t)len;
        } else {
            out[o++] = m | 127;
            for (unsigned k = 0; k < 8; k++) {
                out[o++] = (uint8_t)((uint64_t)len >> (56 - 8 * k));
            }
        }
        uint8_t mask[4] = {(uint8_t)(f * 37 + 1), (uint8_t)(f * 11 + 5), 0x5a, (uint8_t)f};
        if (masked) {
            memcpy(out + o, mask, 4);
            o += 4;
        }
        for (size_t k = 0; k < len; k++) {
            out[o++] = masked ? (uint8_t)(d[i + k] ^ mask[k & 3]) : d[i + k];
        }
        i += len;
        f++;
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    static const size_t limits[] = {0, 1, 16, 125, 126, 1000, 65535, 65536};
    wamp_ws_config cfg = {.max_message = limits[data[0] & 7]};
    unsigned slicing = 1 + data[1];
    const uint8_t *in = data + 2;
    size_t n = size - 2;
    unsigned char *built = NULL;
    if (data[0] & 0x80) {
        size_t cap = n * 5 + 64;
        built = malloc(cap);
        FUZZ_CHECK(built != NULL);
        n = build_frames(in, n, built, cap);
        in = built;
    }
    run whole, sliced, direct;
    feed_all(&cfg, in, n, 0, 0, &whole);
    feed_all(&cfg, in, n, slicing, 0, &sliced);
    feed_all(&cfg, in, n, slicing, 1 + (size_t)(data[1] & 0x3f), &direct);
    const run *other[] = {&sliced, &direct};
    for (size_t o = 0; o < 2; o++) {
        FUZZ_CHECK(whole.n == other[o]->n);
        for (size_t i = 0; i < whole.n; i++) {
            FUZZ_CHECK(same_event(&whole, other[o], i));
        }
        if (whole.n < MAX_EVENTS) {
            FUZZ_CHECK(whole.last == other[o]->last);
            FUZZ_CHECK(whole.code == other[o]->code);
        }
    }
    run_fini(&whole);
    run_fini(&sliced);
    run_fini(&direct);
    free(built);
    return 0;
}
