/* bench_capture.c: what one trace record costs the capture path, without the network.
 *
 * Feeds a trace hub the way the router does under full capture: per round, one received PUBLISH
 * (its bytes copied into the trace) and `fanout` EVENTs sent (each a reference on one shared
 * wire buffer, as the broker's encode-once fan-out makes), every record with the session's
 * peer, the action's URI string and a correlation, into one trace whose store is full (default
 * limit 100,000 records), so every append also evicts the oldest record, captured long ago,
 * whose buffers are cold. Reports CPU ns per record next to a baseline measured in the same
 * run: the same loop without any trace (only making and freeing the buffers a router makes
 * anyway): capture_ns_per_record is the whole process's CPU (getrusage RUSAGE_SELF, every
 * thread), capture_thread_ns_per_record the capturing thread's alone (RUSAGE_THREAD: what the
 * router's service loop pays). A measuring tool, never a test.
 *
 * With --persist DIR the trace also persists (persist: true, data directory DIR, retention
 * 64 MiB so the disk does not fill): records are encoded into the write buffer, and the loop
 * calls the hub's tick every 4096 rounds, as the router's 100 ms tick would, which hands the
 * buffer to the trace's writer thread (CRC, write(2) and its system time are in the process
 * figure, not in the thread figure). The trace's files are deleted at the end.
 *
 * With --fast the hub is fed the way the router feeds it while one trace of everything runs
 * (the flight recorder): the PUBLISH and the first EVENT through trace_hub_record_fast(), every
 * further EVENT as a repeat (trace_hub_repeat()); without it, every message through the general
 * path (trace_hub_on_message(): match, then record).
 *
 * Usage: bench-capture [--records N] [--limit N] [--fanout N] [--payload BYTES] [--repeat N]
 *                      [--persist DIR] [--fast]
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <sodium.h>

#include "trace.h"
#include "trace_hub.h"
#include "trace_record.h"
#include "trace_store.h"
#include "wamp_buf.h"
#include "wamp_codec.h"
#include "wamp_types.h"

/* CPU time of the process (every thread: a persisted trace's writer thread included), or with
 * RUSAGE_THREAD of the calling (capture) thread only. */
static double cpu_seconds_of(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double cpu_seconds(void)
{
    return cpu_seconds_of(RUSAGE_SELF);
}

static double thread_ns; /* the last run()'s capture-thread CPU ns per message */

typedef struct opts {
    size_t records, limit, fanout, payload;
    int repeat;
    const char *persist_dir;
    bool fast;
} opts;

/* The router's fast path for one message (trace_hub_record_fast()): false if the hub left it. */
static bool record_fast(trace_hub *h, trace_dir dir, int type, trace_peer *peer, trace_str **uri,
                        const uint8_t *corr, uint8_t flags, const void *bytes, size_t len,
                        const wamp_buf *wire, uint64_t now)
{
    trace_fast f;
    memset(&f, 0, sizeof(f));
    if (!*uri) { /* the action's URI, as the router makes it */
        *uri = trace_hub_uri(h, "com.example.topic", strlen("com.example.topic"));
    }
    f.v.pc_ns = now;
    f.v.ts_ns = now;
    f.v.peer = peer;
    f.v.uri = *uri;
    f.v.corr = corr;
    f.v.flags = (uint8_t)(TRACE_CORR_HAS | flags);
    f.v.wire = wire;
    f.v.bytes = bytes;
    f.v.len = len;
    f.v.dir = (uint8_t)dir;
    f.v.msg_type = (uint8_t)type;
    f.v.wire_ser = WAMP_SER_MSGPACK;
    return trace_hub_record_fast(h, &f);
}

/* round_once() the router's way (--fast). */
static size_t round_fast(trace_hub *h, const opts *o, trace_peer *peer, trace_uuid_gen *g,
                         const unsigned char *pub, size_t pub_len, uint64_t now)
{
    uint8_t corr[TRACE_UUID_LEN];
    trace_str *uri = NULL;
    trace_uuid_gen_next(g, corr);
    size_t n = 0;
    n += h && record_fast(h, TRACE_RX, WAMP_MSG_PUBLISH, peer, &uri, corr, TRACE_CORR_ANCHOR, pub,
                          pub_len, NULL, now);
    wamp_buf *ev = wamp_buf_new_copy(pub, pub_len);
    for (size_t i = 0; h && i < o->fanout; i++) {
        bool last = i + 1 == o->fanout;
        if (i > 0 && trace_hub_repeat(h, ev, peer, corr, now, last)) {
            n++;
            continue;
        }
        n += record_fast(h, TRACE_TX, WAMP_MSG_EVENT, peer, &uri, corr, last ? TRACE_CORR_LAST : 0,
                         NULL, 0, ev, now);
    }
    if (h) {
        trace_hub_flush(h);
    }
    wamp_buf_unref(&ev);
    trace_str_unref(&uri);
    return n;
}

/* One round: a PUBLISH received, fanout EVENTs sent. Returns records offered. */
static size_t round_once(trace_hub *h, const opts *o, trace_peer *peer, trace_uuid_gen *g,
                         const json_t *msg, const unsigned char *pub, size_t pub_len, uint64_t now)
{
    uint8_t corr[TRACE_UUID_LEN];
    trace_str *uri = NULL;
    trace_uuid_gen_next(g, corr);
    trace_ctx c = {.direction = TRACE_RX,
                   .msg_type = WAMP_MSG_PUBLISH,
                   .session_id = 1,
                   .realm = "realm1",
                   .uri = "com.example.topic"};
    trace_input in = {.pc_ns = now,
                      .ts_ns = now,
                      .peer = peer,
                      .uri_slot = &uri,
                      .correlation = corr,
                      .correlation_is_anchor = true,
                      .ser = WAMP_SER_MSGPACK,
                      .bytes = pub,
                      .len = pub_len,
                      .msg = msg};
    size_t n = 0;
    if (h) {
        n += trace_hub_on_message(h, &c, &in) > 0;
    }
    /* The EVENT the broker encodes once and queues to every receiver. */
    wamp_buf *ev = wamp_buf_new_copy(pub, pub_len);
    c.direction = TRACE_TX;
    c.msg_type = WAMP_MSG_EVENT;
    in.correlation_is_anchor = false;
    in.bytes = NULL;
    in.len = 0;
    in.wire = ev;
    in.ser_bytes[WAMP_SER_MSGPACK] = pub_len;
    in.msg = msg; /* stands for the EVENT: read only for secrets */
    for (size_t i = 0; i < o->fanout; i++) {
        in.correlation_is_last = i + 1 == o->fanout;
        if (h) {
            n += trace_hub_on_message(h, &c, &in) > 0;
        }
    }
    wamp_buf_unref(&ev); /* the queues have sent it */
    trace_str_unref(&uri);
    return n;
}

/* ns of CPU per record offered (per message when h is NULL). */
static double run(trace_hub *h, const opts *o, size_t messages)
{
    /* A real PUBLISH [16, 1, {}, "com.example.topic", ["xxx..."]] in MessagePack, with its
     * decoded form (the router hands the hub both). */
    char *text = malloc(o->payload + 1);
    memset(text, 'x', o->payload);
    text[o->payload] = '\0';
    json_t *msg = json_pack("[i, i, {}, s, [s]]", WAMP_MSG_PUBLISH, 1, "com.example.topic", text);
    free(text);
    wamp_buf *enc = NULL;
    if (!msg || wamp_codec_encode(WAMP_SER_MSGPACK, msg, &enc) != WAMP_OK) {
        abort();
    }
    trace_peer *peer = trace_peer_new(1, "realm1", "alice", "user");
    trace_uuid_gen g;
    trace_uuid_gen_init(&g);
    size_t per_round = 1 + o->fanout;
    double t0 = cpu_seconds();
    double th0 = cpu_seconds_of(RUSAGE_THREAD);
    size_t done = 0;
    for (uint64_t now = 1; done < messages; now++) {
        if (o->fast) {
            round_fast(h, o, peer, &g, wamp_buf_cdata(enc), wamp_buf_len(enc), now * 1000);
        } else {
            round_once(h, o, peer, &g, msg, wamp_buf_cdata(enc), wamp_buf_len(enc), now * 1000);
        }
        done += per_round;
        if (h && now % 4096 == 0) {
            trace_hub_tick(h, now * 1000, now * 1000, NULL, NULL);
        }
    }
    double t = cpu_seconds() - t0;
    thread_ns = (cpu_seconds_of(RUSAGE_THREAD) - th0) * 1e9 / (double)done;
    trace_peer_unref(&peer);
    wamp_buf_unref(&enc);
    json_decref(msg);
    return t * 1e9 / (double)done;
}

int main(int argc, char **argv)
{
    opts o = {.records = 4000000, .limit = 100000, .fanout = 10, .payload = 80, .repeat = 3};
    static const struct option longopts[] = {
            {"records", required_argument, NULL, 'r'}, {"limit", required_argument, NULL, 'l'},
            {"fanout", required_argument, NULL, 'f'},  {"payload", required_argument, NULL, 'p'},
            {"repeat", required_argument, NULL, 'n'},  {"persist", required_argument, NULL, 'P'},
            {"fast", no_argument, NULL, 'F'},          {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (ch == 'P') {
            o.persist_dir = optarg;
            continue;
        }
        if (ch == 'F') {
            o.fast = true;
            continue;
        }
        size_t v = strtoul(optarg, NULL, 10);
        switch (ch) {
        case 'r':
            o.records = v;
            break;
        case 'l':
            o.limit = v;
            break;
        case 'f':
            o.fanout = v;
            break;
        case 'p':
            o.payload = v;
            break;
        case 'n':
            o.repeat = (int)v;
            break;
        default:
            fprintf(stderr,
                    "usage: %s [--records N] [--limit N] [--fanout N] [--payload B] "
                    "[--repeat N] [--persist DIR] [--fast]\n",
                    argv[0]);
            return 2;
        }
    }
    if (sodium_init() < 0 || o.limit == 0 || o.records == 0 || o.payload == 0) {
        return 2;
    }
    for (int r = 1; r <= o.repeat; r++) {
        double base = run(NULL, &o, o.records);
        trace_hub *h = trace_hub_new(4, "mgmt");
        trace *t;
        char why[128];
        char optstr[128];
        if (o.persist_dir) {
            trace_persist_config pc = {.data_dir = o.persist_dir};
            if (trace_hub_set_persist(h, &pc) != WAMP_OK) {
                return 1;
            }
            snprintf(optstr, sizeof(optstr),
                     "{\"limit\": %zu, \"persist\": true, \"persist_max_bytes\": 67108864}",
                     o.limit);
        } else {
            snprintf(optstr, sizeof(optstr), "{\"limit\": %zu}", o.limit);
        }
        json_t *opt = json_loads(optstr, 0, NULL);
        if (trace_hub_start(h, "t", opt, 1, 1, &t, why, sizeof(why)) != WAMP_OK) {
            fprintf(stderr, "start: %s\n", why);
            return 1;
        }
        json_decref(opt);
        run(h, &o, o.limit * 2); /* fill the store: every later append evicts */
        double traced = run(h, &o, o.records);
        double traced_thread = thread_ns;
        printf("CAPTURE round=%d fast=%d persist=%d records=%zu limit=%zu fanout=%zu payload=%zu "
               "baseline_ns_per_msg=%.1f traced_ns_per_msg=%.1f capture_ns_per_record=%.1f "
               "capture_thread_ns_per_record=%.1f held=%zu dropped=%llu\n",
               r, o.fast, o.persist_dir != NULL, o.records, o.limit, o.fanout, o.payload, base,
               traced, traced - base, traced_thread - base, trace_store_records(trace_get_store(t)),
               (unsigned long long)trace_store_dropped(trace_get_store(t)));
        (void)trace_hub_stop(h, "t", 2, 2, NULL);
        (void)trace_hub_delete(h, "t"); /* a persisted trace's files too */
        trace_hub_free(h);
    }
    return 0;
}
