/* fuzz_session.c: the router core (session state machine, broker, dealer, tracing, the
 * management API) fed whole message sequences from three connections, over the in-process
 * fake transport (tests/support).
 *
 * Input: byte 0 sets up the run (bits 0-1: serializer of connection 2, JSON, MessagePack or CBOR;
 * bit 2: a trace capturing everything runs from the start). Then records:
 *   [op: 1 byte][len: 2 bytes little-endian][len bytes]
 * op bits 0-1: connection 0 (JSON), 1 (MessagePack) or 2; 3 = let len milliseconds pass and
 * run the router's tick (timeouts, trace batches) instead of sending.
 * op bit 2: if that connection was closed, open a new one first.
 * op bit 3: do not read what the router sent this time (queues fill up; slow consumers).
 * The bytes go to the session as one received message. Realms: realm1, realm2, locked (see
 * tests/support/test_router.h) and mgmt (the management API, admin for loopback peers).
 * Properties: no crash, no leak, no sanitizer report; everything the router sends is a
 * well-formed WAMP message in the receiver's serializer; the router frees cleanly. */
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "fuzz.h"
#include "mgmt_api.h"
#include "rt_log.h"
#include "rt_router.h"
#include "rt_session.h"
#include "test_router.h"
#include "trace_hub.h"
#include "wamp_codec.h"

#define N_CONN 3

/* A connection as the adapter sees it (tests/support/fake_transport.c needs a Check runner). */
typedef struct conn {
    rt_session *s; /* NULL once closed */
    wamp_ser ser;
    bool close_requested;
} conn;

static void conn_want_write(void *tp)
{
    (void)tp;
}

static void conn_close(void *tp, uint16_t code, const char *reason)
{
    (void)code;
    (void)reason;
    ((conn *)tp)->close_requested = true;
}

static const rt_transport_ops conn_ops = {.want_write = conn_want_write, .close = conn_close};

static void conn_open(conn *c, rt_router *rt, wamp_ser ser)
{
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    snprintf(peer.addr, sizeof(peer.addr), "127.0.0.1:50000");
    peer.is_loopback = true;
    c->ser = ser;
    c->close_requested = false;
    c->s = rt_router_attach(rt, &conn_ops, c, ser, &peer);
    FUZZ_CHECK(c->s != NULL);
}

static void conn_closed(conn *c)
{
    if (c->s) {
        rt_session_on_closed(c->s);
        c->s = NULL;
    }
}

/* Writes out what the router queued, checking that each message decodes in the receiver's
 * serializer; a requested close happens once the queue is empty, as in the real adapter. */
static void conn_drain(conn *c)
{
    if (!c->s) {
        return;
    }
    wamp_buf *b;
    while ((b = rt_session_tx_peek(c->s)) != NULL) {
        /* A well-formed WAMP message in the receiver's serializer (payloads may hold what
         * jansson cannot: an integer above 2^63-1, NUL in a key). */
        wamp_msg m;
        FUZZ_CHECK(wamp_msg_parse_bytes(c->ser, wamp_buf_cdata(b), wamp_buf_len(b), &m, NULL, 0) ==
                   WAMP_OK);
        wamp_msg_fini(&m);
        rt_session_tx_pop(c->s);
    }
    if (c->close_requested) {
        conn_closed(c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        ready = sodium_init() >= 0;
        rt_log_set_level(RT_LOG_LEVEL_ERR); /* INFO lines per refused input are noise */
    }
    if (size < 1) {
        return 0;
    }
    test_router T;
    FUZZ_CHECK(test_router_setup(&T));
    rt_router_free(T.rt);
    T.cfg.mgmt_enabled = true;
    T.cfg.mgmt_realm = "mgmt";
    T.cfg.tracing_max_traces = 4;
    /* No files: a data directory that cannot exist refuses persist: true (and reloads nothing),
     * so runs stay independent of each other and of the working directory. */
    T.cfg.tracing_data_dir = "/dev/null/wampscope-data";
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    FUZZ_CHECK(T.rt != NULL);
    mgmt_api *api = NULL;
    FUZZ_CHECK(mgmt_api_new(T.rt, 1700000000000000000ULL, &api) == WAMP_OK);
    if (data[0] & 4) {
        trace *t = NULL;
        FUZZ_CHECK(trace_hub_start(rt_router_trace_hub(T.rt), "fuzz", NULL, 1, 1, &t, NULL, 0) ==
                   WAMP_OK);
    }
    static const wamp_ser third[4] = {WAMP_SER_JSON, WAMP_SER_MSGPACK, WAMP_SER_CBOR,
                                      WAMP_SER_CBOR};
    wamp_ser sers[N_CONN] = {WAMP_SER_JSON, WAMP_SER_MSGPACK, third[data[0] & 3]};
    conn conns[N_CONN];
    for (int i = 0; i < N_CONN; i++) {
        conn_open(&conns[i], T.rt, sers[i]);
    }
    size_t off = 1;
    while (size - off >= 3) {
        uint8_t op = data[off];
        size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
        off += 3;
        if (len > size - off) {
            len = size - off;
        }
        int i = op & 3;
        if (i == 3) {
            fake_clock_advance_ms(&T.clock, len);
            rt_router_tick(T.rt);
        } else {
            if (!conns[i].s && (op & 4)) {
                conn_open(&conns[i], T.rt, sers[i]);
            }
            if (conns[i].s) {
                (void)rt_session_on_message(conns[i].s, data + off, len);
            }
            off += len;
        }
        if (!(op & 8)) {
            for (int k = 0; k < N_CONN; k++) {
                conn_drain(&conns[k]);
            }
        }
    }
    for (int i = 0; i < N_CONN; i++) {
        conn_drain(&conns[i]);
        conn_closed(&conns[i]);
    }
    mgmt_api_free(api);
    rt_router_free(T.rt);
    return 0;
}
