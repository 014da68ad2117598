/* fuzz_rawsock.c: the RawSocket handshake and framing state machine on arbitrary bytes.
 * Input: byte 0 picks the router's configuration (serializers offered, receive limit), byte 1
 * the slicing, the rest is what the client sends. Properties: never crashes or leaks; frames
 * never exceed the announced limit; and the events do not depend on how the bytes are sliced:
 * the whole input at once and the same input in slices of 1..16 octets (as TCP may deliver it)
 * give the same events, payloads and final status. */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "wamp_rawsock.h"

#define MAX_EVENTS 256

typedef struct run {
    wamp_rawsock_event ev[MAX_EVENTS];
    unsigned char *payload[MAX_EVENTS]; /* copies: event data is borrowed */
    size_t n;
    wamp_err last; /* the status that ended the run */
} run;

static void run_fini(run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->payload[i]);
    }
}

/* Feeds data in slices (0 = all at once); records every event. */
static void feed_all(const wamp_rawsock_config *cfg, const uint8_t *data, size_t size,
                     unsigned slicing, run *r)
{
    wamp_rawsock rs;
    wamp_rawsock_init(&rs, cfg);
    memset(r, 0, sizeof(*r));
    r->last = WAMP_EAGAIN;
    size_t off = 0, k = 0;
    while (off < size && r->n < MAX_EVENTS) {
        size_t slice = slicing ? 1 + (size_t)((slicing + k++) % 16) : size - off;
        if (slice > size - off) {
            slice = size - off;
        }
        size_t used = 0;
        wamp_rawsock_event ev;
        wamp_err err = wamp_rawsock_feed(&rs, data + off, slice, &used, &ev);
        FUZZ_CHECK(used <= slice);
        off += used;
        if (err == WAMP_OK) {
            if (ev.kind == WAMP_RAWSOCK_EV_FRAME) {
                FUZZ_CHECK(ev.len <= wamp_rawsock_max_len(&rs));
                r->payload[r->n] = malloc(ev.len ? ev.len : 1);
                FUZZ_CHECK(r->payload[r->n] != NULL);
                if (ev.len) {
                    memcpy(r->payload[r->n], ev.data, ev.len);
                }
            }
            r->ev[r->n++] = ev;
            continue;
        }
        if (err == WAMP_EAGAIN) {
            FUZZ_CHECK(used == slice);
            continue;
        }
        r->last = err; /* EPROTO / ETOOBIG: the connection fails here */
        break;
    }
    wamp_rawsock_fini(&rs);
}

static bool same_event(const run *a, const run *b, size_t i)
{
    const wamp_rawsock_event *x = &a->ev[i], *y = &b->ev[i];
    if (x->kind != y->kind) {
        return false;
    }
    switch (x->kind) {
    case WAMP_RAWSOCK_EV_ACCEPTED:
        return memcmp(x->reply, y->reply, WAMP_RAWSOCK_PREFIX) == 0 && x->ser == y->ser &&
               x->peer_max == y->peer_max;
    case WAMP_RAWSOCK_EV_REFUSED:
        return memcmp(x->reply, y->reply, WAMP_RAWSOCK_PREFIX) == 0 && x->error == y->error;
    case WAMP_RAWSOCK_EV_FRAME:
        return x->type == y->type && x->len == y->len &&
               (x->len == 0 || memcmp(a->payload[i], b->payload[i], x->len) == 0);
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    wamp_rawsock_config cfg = {
            .ser_json = data[0] & 1,
            .ser_msgpack = (data[0] & 2) != 0,
            .max_len = (size_t)1 << (9 + ((data[0] >> 2) & 7)), /* 512 .. 64 KiB */
            .min_peer_len = (data[0] & 0x20) ? 4096 : 0,
    };
    unsigned slicing = 1 + data[1];
    run whole, sliced;
    feed_all(&cfg, data + 2, size - 2, 0, &whole);
    feed_all(&cfg, data + 2, size - 2, slicing, &sliced);
    FUZZ_CHECK(whole.n == sliced.n);
    for (size_t i = 0; i < whole.n; i++) {
        FUZZ_CHECK(same_event(&whole, &sliced, i));
    }
    FUZZ_CHECK(whole.last == sliced.last);
    run_fini(&whole);
    run_fini(&sliced);
    return 0;
}
