/* bench_core.c: the router core's time per message, in process, one router per configuration,
 * the configurations interleaved finely so that the machine's drift cancels in their ratios.
 *
 * Routers are built as `wampscope` builds its own (rt_jalloc, sodium_init, json_object_seed,
 * rt_config_parse of the embedded default configuration, rt_router_new, mgmt_api_new):
 *   shipped  the embedded default as it is (the flight recorder on);
 *   off      the same with wampscope.tracing.flight_recorder false;
 *   mem      off + one trace of everything with the default trace options (trace_hub_start, as
 *            the management API's start_trace does);
 *   persist  off + one trace of everything with {"persist": true}.
 * Every configuration gets wampscope.tracing.data_dir set to a directory of its own under a
 * temporary directory (removed at the end; kept, its path printed, with BENCH_CORE_KEEP=1 in the
 * environment: the persisted trace's files, e.g. for their bytes per record), so nothing is read
 * from or written to the working directory; without a persisted trace the data directory is only
 * listed at start.
 *
 * Sessions attach through rt_transport_ops of this file, as the WebSocket adapter's do: messages
 * go in whole through rt_session_on_message() (pre-encoded bytes), in reads of at most 4 KiB of
 * WebSocket frames between rt_router_read_begin() and _end() as the adapter hands over lws's
 * receive slices, and what the router queues is
 * taken out as the adapter's writable callback does for small messages (rt_session_tx_peek(), a
 * frame header and a copy into the connection's output buffer, rt_session_tx_pop()). Left out:
 * sockets and the kernel, lws, the WebSocket parser on the way in (see bench-ws-parse).
 *
 * Scenarios (--payload octets of payload, default 32), each for JSON and MessagePack:
 *   rpc100    a caller and a callee; a batch feeds the YIELDs answering the previous batch's
 *             INVOCATIONs, takes the RESULTs off the caller's queue, feeds 100 CALLs and takes
 *             the 100 INVOCATIONs off the callee's queue (pipelined, so one timed region);
 *   pubsub10  a publisher and 10 subscribers of one topic; a batch feeds 100 PUBLISHes and takes
 *             the 1,000 EVENTs off the subscribers' queues.
 * Only the router's work in a batch is timed (CLOCK_MONOTONIC around it). Outside it: reading the
 * request ids of the INVOCATIONs (bench_wire_peek()) and rendering the YIELDs and the next
 * CALLs or PUBLISHes (bench_tmpl_render()), and every check a client would make: each RESULT
 * answers the CALL it should, in order; every subscriber got every EVENT in order with its
 * subscription id; nothing else arrived and no session was closed. A failed check ends the run
 * with exit status 1.
 *
 * After a warm-up of every router, R rounds (--rounds, 30) each run one slice (--slice-ms, 50)
 * of batches on every configuration in turn, the order rotated every round. A slice gives the
 * timed ns per message (per CALL; per EVENT delivered for pub/sub), preempted batches left out
 * (run_slice()), and the share of its wall time the thread ran; a round gives the paired ratio
 * off_ns / config_ns. Printed per scenario and serializer: the median ns per message of
 * every configuration and the median of its paired ratios with their interquartile range. After
 * every slice the router's tick runs (untimed), as the real router's 100 ms tick would. CPU time
 * of other threads (a persisted trace's writer) is measured per scenario (the process's CPU
 * clock minus the main thread's) and reported per message of the persisted configuration.
 * A measuring tool, never a test. Pin it (taskset -c 0); it pins nothing itself. */
#define _GNU_SOURCE /* nftw() */
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>
#include <sodium.h>

#include "bench_stats.h"
#include "bench_wire.h"
#include "mgmt_api.h"
#include "rt_config.h"
#include "rt_jalloc.h"
#include "rt_log.h"
#include "rt_router.h"
#include "rt_session.h"
#include "trace.h"
#include "trace_hub.h"
#include "wamp_buf.h"
#include "wamp_codec.h"
#include "wamp_msg.h"
#include "wamp_types.h"
#include "wamp_ws.h"

#define BATCH   100 /* requests per batch */
#define NSUBS   10  /* pubsub10's subscribers */
#define NCONF   4
#define NSCEN   2
#define NSER    2
#define NCASES  (NSCEN * NSER)
#define MAX_RND 1000

enum {
    CFG_SHIPPED,
    CFG_OFF,
    CFG_MEM,
    CFG_PERSIST
};

enum {
    SC_RPC,
    SC_PUBSUB
};

static const char *const conf_names[NCONF] = {"shipped", "off", "mem", "persist"};
static const char *const scen_names[NSCEN] = {"rpc100", "pubsub10"};
static const wamp_ser sers[NSER] = {WAMP_SER_MSGPACK, WAMP_SER_JSON};
static const char *const ser_names[NSER] = {"msgpack", "json"};
/* The targets for off_ns / config_ns. */
static const double targets[NCONF] = {0.97, 1.0, 0.90, 0.90};

typedef struct opts {
    unsigned rounds;
    double slice_ms, warmup_ms, seconds;
    size_t payload;
    bool keep_all; /* --keep-outliers: no batch left out (run_slice()) */
    bool conf[NCONF], scen[NSCEN], ser[NSER];
} opts;

/* One connection: the transport side of a session. out holds the frames written since the last
 * read, as the WebSocket adapter frames them. */
typedef struct conn {
    rt_session *s;
    wamp_ser ser;
    bool closed; /* the core asked to close */
    unsigned char *out;
    size_t len, cap;
} conn;

/* One scenario and serializer on one router. */
typedef struct bcase {
    int scen;
    size_t ser; /* index in sers[] */
    conn req;   /* caller or publisher */
    conn callee;
    conn subs[NSUBS];
    uint64_t sub_id[NSUBS];
    bench_tmpl t_req, t_yield;
    uint64_t next_id;    /* the next CALL's / PUBLISH's request id (also its Arguments[0]) */
    unsigned char *reqs; /* the next batch, rendered */
    size_t req_off[BATCH + 1];
    unsigned char *ylds; /* the YIELDs answering the last batch's INVOCATIONs */
    size_t yld_off[BATCH + 1];
    size_t n_ylds;
    uint64_t call_ids[BATCH]; /* the CALLs those YIELDs answer */
    uint64_t first_id;        /* the last batch's first request id */
} bcase;

typedef struct router_inst {
    int conf;
    rt_config *cfg;
    rt_router *rt;
    mgmt_api *mgmt;
    rt_peer peer;
    unsigned port;
    bcase cases[NCASES];
} router_inst;

/* --- time ------------------------------------------------------------------------------------ */

/* CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID) or of the whole process, every thread
 * (CLOCK_PROCESS_CPUTIME_ID): the scheduler's own count, in ns (getrusage()'s split into user
 * and system time can be off by a few ms). */
static uint64_t cpu_ns(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- transport ------------------------------------------------------------------------------- */

static void conn_want_write(void *tp)
{
    (void)tp; /* everything queued is taken after each batch */
}

static void conn_close(void *tp, uint16_t code, const char *reason)
{
    conn *c = tp;
    c->closed = true;
    fprintf(stderr, "bench-core: the router closes a session: %u %s\n", code, reason ? reason : "");
}

static const rt_transport_ops conn_ops = {
        .want_write = conn_want_write,
        .close = conn_close,
};

static bool conn_reserve(conn *c, size_t more)
{
    if (c->len + more <= c->cap) {
        return true;
    }
    size_t cap = c->cap ? c->cap : 4096;
    while (cap < c->len + more) {
        cap *= 2;
    }
    unsigned char *p = realloc(c->out, cap);
    if (!p) {
        return false;
    }
    c->out = p;
    c->cap = cap;
    return true;
}

/* The writable callback of the WebSocket adapter for small messages: a frame header and a copy
 * of every queued message, each popped once copied. false when out of memory. */
static inline bool conn_write(conn *c)
{
    wamp_ws_opcode op = c->ser == WAMP_SER_JSON ? WAMP_WS_OP_TEXT : WAMP_WS_OP_BINARY;
    wamp_buf *b;
    while ((b = rt_session_tx_peek(c->s)) != NULL) {
        size_t n = wamp_buf_len(b);
        if (!conn_reserve(c, WAMP_WS_HEADER_MAX + n)) {
            return false;
        }
        c->len += wamp_ws_header(c->out + c->len, op, true, n);
        memcpy(c->out + c->len, wamp_buf_cdata(b), n);
        c->len += n;
        rt_session_tx_pop(c->s);
    }
    return true;
}

/* The next frame of c->out from *off: its payload in *p, *n. false at the end. */
static bool frame_next(const conn *c, size_t *off, const unsigned char **p, size_t *n)
{
    if (*off + 2 > c->len) {
        return false;
    }
    const unsigned char *h = c->out + *off;
    size_t len = h[1] & 0x7fu;
    size_t hl = 2;
    if (len == 126) {
        len = (size_t)h[2] << 8 | h[3];
        hl = 4;
    } else if (len == 127) {
        len = 0;
        for (int i = 0; i < 8; i++) {
            len = len << 8 | h[2 + i];
        }
        hl = 10;
    }
    *p = h + hl;
    *n = len;
    *off += hl + len;
    return *off <= c->len;
}

/* Control path (untimed): sends msg (taken) through the library's encoder. */
static bool send_json(conn *c, json_t *msg)
{
    wamp_buf *b = NULL;
    bool ok = msg && wamp_codec_encode(c->ser, msg, &b) == WAMP_OK &&
              rt_session_on_message(c->s, wamp_buf_cdata(b), wamp_buf_len(b)) == WAMP_OK;
    wamp_buf_unref(&b);
    json_decref(msg);
    return ok;
}

/* The next message queued for c, decoded (owned), or NULL. */
static json_t *recv_json(conn *c)
{
    wamp_buf *b = rt_session_tx_peek(c->s);
    if (!b) {
        return NULL;
    }
    json_t *v = NULL;
    char why[WAMP_WHY_LEN];
    if (wamp_codec_decode(c->ser, wamp_buf_cdata(b), wamp_buf_len(b), &v, why, sizeof(why)) !=
        WAMP_OK) {
        fprintf(stderr, "bench-core: undecodable message from the router: %s\n", why);
    }
    rt_session_tx_pop(c->s);
    return v;
}

/* Sends msg (taken) and expects an answer of type want; returns its element idx (an id), 0 on
 * failure. */
static uint64_t request(conn *c, json_t *msg, int want, size_t idx)
{
    if (!send_json(c, msg)) {
        return 0;
    }
    json_t *r = recv_json(c);
    uint64_t v = 0;
    if (r && json_integer_value(json_array_get(r, 0)) == want) {
        v = (uint64_t)json_integer_value(json_array_get(r, idx));
    } else {
        char *s = r ? json_dumps(r, JSON_COMPACT) : NULL;
        fprintf(stderr, "bench-core: expected message type %d, got %s\n", want, s ? s : "none");
        free(s);
    }
    json_decref(r);
    return v;
}

/* Attaches c to ri's router and joins realm1 with one client role. */
static bool conn_open(router_inst *ri, conn *c, wamp_ser ser, const char *role)
{
    memset(c, 0, sizeof(*c));
    c->ser = ser;
    rt_peer peer = ri->peer;
    snprintf(peer.addr, sizeof(peer.addr), "127.0.0.1:%u", 40000u + ri->port++);
    c->s = rt_router_attach(ri->rt, &conn_ops, c, ser, &peer);
    if (!c->s) {
        return false;
    }
    json_t *details =
            json_pack("{s:s, s:{s:{s:{}}}}", "agent", "bench-core", "roles", role, "features");
    return request(c, wamp_msg_new_hello("realm1", details), WAMP_MSG_WELCOME, 1) != 0;
}

static void conn_fini(conn *c)
{
    if (c->s) {
        rt_session_on_closed(c->s);
        c->s = NULL;
    }
    free(c->out);
    c->out = NULL;
}

/* --- scenarios ------------------------------------------------------------------------------- */

/* Renders the next batch of requests (ids next_id ...). */
static void render_reqs(bcase *k)
{
    k->first_id = k->next_id;
    k->req_off[0] = 0;
    for (size_t i = 0; i < BATCH; i++) {
        k->req_off[i + 1] =
                k->req_off[i] + bench_tmpl_render(&k->t_req, k->next_id++, k->reqs + k->req_off[i]);
    }
}

static bool case_init(router_inst *ri, bcase *k, int scen, size_t si, size_t payload)
{
    memset(k, 0, sizeof(*k));
    k->scen = scen;
    k->ser = si;
    wamp_ser ser = sers[si];
    char uri[64];
    snprintf(uri, sizeof(uri), "bench.core.%s.%s", scen == SC_RPC ? "proc" : "topic",
             ser_names[si]);
    char *pl = malloc(payload + 1);
    if (!pl) {
        return false;
    }
    memset(pl, 'x', payload);
    pl[payload] = '\0';
    json_t *args = json_pack("[Is]", (json_int_t)BENCH_WIRE_SENTINEL, pl);
    json_t *m = scen == SC_RPC ? wamp_msg_new_call(BENCH_WIRE_SENTINEL, NULL, uri, args, NULL)
                               : wamp_msg_new_publish(BENCH_WIRE_SENTINEL, NULL, uri, args, NULL);
    bool ok = m && bench_tmpl_init(&k->t_req, ser, m) == WAMP_OK;
    json_decref(m);
    m = wamp_msg_new_yield(BENCH_WIRE_SENTINEL, NULL, json_pack("[s]", pl), NULL);
    ok = ok && m && bench_tmpl_init(&k->t_yield, ser, m) == WAMP_OK;
    json_decref(m);
    free(pl);
    k->reqs = ok ? malloc(BATCH * k->t_req.len) : NULL;
    k->ylds = ok ? malloc(BATCH * k->t_yield.len) : NULL;
    if (!k->reqs || !k->ylds) {
        return false;
    }
    k->next_id = 1;
    if (scen == SC_RPC) {
        ok = conn_open(ri, &k->req, ser, "caller") && conn_open(ri, &k->callee, ser, "callee") &&
             request(&k->callee, wamp_msg_new_register(1, NULL, uri), WAMP_MSG_REGISTERED, 2);
    } else {
        ok = conn_open(ri, &k->req, ser, "publisher");
        for (size_t j = 0; ok && j < NSUBS; j++) {
            ok = conn_open(ri, &k->subs[j], ser, "subscriber") &&
                 (k->sub_id[j] = request(&k->subs[j], wamp_msg_new_subscribe(1, NULL, uri),
                                         WAMP_MSG_SUBSCRIBED, 2)) != 0;
        }
    }
    if (ok) {
        render_reqs(k);
    }
    return ok;
}

static void case_fini(bcase *k)
{
    conn_fini(&k->req);
    conn_fini(&k->callee);
    for (size_t j = 0; j < NSUBS; j++) {
        conn_fini(&k->subs[j]);
    }
    bench_tmpl_fini(&k->t_req);
    bench_tmpl_fini(&k->t_yield);
    free(k->reqs);
    free(k->ylds);
}

/* RESULTs answering the YIELDs fed, INVOCATIONs of the CALLs fed; renders the YIELDs. */
static bool check_rpc(bcase *k)
{
    wamp_ser ser = sers[k->ser];
    const unsigned char *p;
    size_t n, off = 0, i = 0;
    bench_wire_head h;
    for (; frame_next(&k->req, &off, &p, &n); i++) {
        if (i >= k->n_ylds || !bench_wire_peek(ser, p, n, false, &h) || h.type != WAMP_MSG_RESULT ||
            h.nids < 1 || h.id[0] != k->call_ids[i]) {
            fprintf(stderr, "bench-core: caller: message %zu is not the RESULT of CALL %llu\n", i,
                    i < k->n_ylds ? (unsigned long long)k->call_ids[i] : 0ull);
            return false;
        }
    }
    if (i != k->n_ylds || off != k->req.len) {
        fprintf(stderr, "bench-core: caller: %zu RESULTs for %zu YIELDs\n", i, k->n_ylds);
        return false;
    }
    off = 0;
    k->yld_off[0] = 0;
    for (i = 0; frame_next(&k->callee, &off, &p, &n); i++) {
        if (i >= BATCH || !bench_wire_peek(ser, p, n, true, &h) || h.type != WAMP_MSG_INVOCATION ||
            h.nids < 1 || !h.has_arg0 || h.arg0 != k->first_id + i) {
            fprintf(stderr, "bench-core: callee: message %zu is not the INVOCATION of CALL %llu\n",
                    i, (unsigned long long)(k->first_id + i));
            return false;
        }
        k->call_ids[i] = h.arg0;
        k->yld_off[i + 1] =
                k->yld_off[i] + bench_tmpl_render(&k->t_yield, h.id[0], k->ylds + k->yld_off[i]);
    }
    if (i != BATCH || off != k->callee.len) {
        fprintf(stderr, "bench-core: callee: %zu INVOCATIONs for %d CALLs\n", i, BATCH);
        return false;
    }
    k->n_ylds = BATCH;
    return true;
}

/* Every subscriber got every EVENT of the batch, in order; the publisher got nothing. */
static bool check_pubsub(bcase *k)
{
    wamp_ser ser = sers[k->ser];
    if (k->req.len) {
        fprintf(stderr, "bench-core: publisher: unexpected message\n");
        return false;
    }
    for (size_t j = 0; j < NSUBS; j++) {
        const unsigned char *p;
        size_t n, off = 0, i = 0;
        bench_wire_head h;
        for (; frame_next(&k->subs[j], &off, &p, &n); i++) {
            if (i >= BATCH || !bench_wire_peek(ser, p, n, true, &h) || h.type != WAMP_MSG_EVENT ||
                h.nids < 1 || h.id[0] != k->sub_id[j] || !h.has_arg0 || h.arg0 != k->first_id + i) {
                fprintf(stderr, "bench-core: subscriber %zu: message %zu is not EVENT %llu\n", j, i,
                        (unsigned long long)(k->first_id + i));
                return false;
            }
        }
        if (i != BATCH || off != k->subs[j].len) {
            fprintf(stderr, "bench-core: subscriber %zu: %zu EVENTs of %d\n", j, i, BATCH);
            return false;
        }
    }
    return true;
}

static bool any_closed(const bcase *k)
{
    bool c = k->req.closed || k->callee.closed;
    for (size_t j = 0; j < NSUBS; j++) {
        c = c || k->subs[j].closed;
    }
    return c;
}

/* The octets lws hands the WebSocket adapter per receive callback (its RAW_RX slices). */
#define READ_MAX 4096

/* The octets of a client's WebSocket frame of a message of len octets: the header the router
 * would write, and the client's 4-octet mask. */
static size_t ws_frame_len(size_t len)
{
    uint8_t head[WAMP_WS_HEADER_MAX];
    return wamp_ws_header(head, WAMP_WS_OP_BINARY, true, len) + 4 + len;
}

/* Feeds c the n messages at bytes (message i at off[i] to off[i + 1]) as the WebSocket adapter
 * does: in reads of at most READ_MAX octets of frames, each between rt_router_read_begin() and
 * rt_router_read_end() (a larger message in a read of its own). false if one failed. */
static bool feed(conn *c, const unsigned char *bytes, const size_t *off, size_t n)
{
    rt_router *rt = rt_session_router(c->s);
    bool bad = false;
    size_t i = 0;
    while (i < n) {
        size_t used = 0;
        rt_router_read_begin(rt);
        do {
            size_t len = off[i + 1] - off[i];
            used += ws_frame_len(len);
            bad |= rt_session_on_message(c->s, bytes + off[i], len) != WAMP_OK;
            i++;
        } while (i < n && used + ws_frame_len(off[i + 1] - off[i]) <= READ_MAX);
        rt_router_read_end(rt);
    }
    return !bad;
}

/* One batch: the router's work timed (*ns); then the checks and the next batch's bytes.
 * Returns the messages the batch counts (CALLs, EVENTs), 0 on failure. */
static size_t run_batch(bcase *k, uint64_t *ns)
{
    bool bad = false;
    uint64_t t0;
    if (k->scen == SC_RPC) {
        k->req.len = 0;
        k->callee.len = 0;
        t0 = bench_now_ns();
        bad |= !feed(&k->callee, k->ylds, k->yld_off, k->n_ylds);
        bad |= !conn_write(&k->req);
        bad |= !feed(&k->req, k->reqs, k->req_off, BATCH);
        bad |= !conn_write(&k->callee);
        *ns = bench_now_ns() - t0;
        bad = bad || !check_rpc(k);
    } else {
        for (size_t j = 0; j < NSUBS; j++) {
            k->subs[j].len = 0;
        }
        t0 = bench_now_ns();
        bad |= !feed(&k->req, k->reqs, k->req_off, BATCH);
        for (size_t j = 0; j < NSUBS; j++) {
            bad |= !conn_write(&k->subs[j]);
        }
        *ns = bench_now_ns() - t0;
        k->req.len = 0;
        bad = bad || !conn_write(&k->req) || !check_pubsub(k);
    }
    if (bad || any_closed(k)) {
        return 0;
    }
    render_reqs(k);
    return k->scen == SC_RPC ? BATCH : (size_t)BATCH * NSUBS;
}

/* What one slice measured. */
typedef struct slice {
    double ns_per_msg; /* timed ns per message over the batches kept */
    double busy;       /* the main thread's CPU time / the slice's wall time */
    double dropped;    /* share of the batches left out */
    uint64_t msgs;     /* messages of the batches kept */
} slice;

/* Batches for at least dur_ns, then the router's tick. Batches over cut times the slice's median
 * batch (cut 0: none) are left out: a batch is tens of microseconds, so a preemption (another
 * process, an interrupt, a writer thread sharing the core) makes one several times longer, while
 * the recorder's own occasional work (a wrap of its ring, a new segment) adds far less. busy is
 * below 1 when the thread was preempted during the slice. false on failure. */
static bool run_slice(router_inst *ri, bcase *k, uint64_t dur_ns, double cut, bench_lat *bt,
                      slice *out)
{
    uint64_t cpu0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID), start = bench_now_ns(), end;
    size_t m = 0;
    bt->n = 0;
    do {
        uint64_t ns = 0;
        m = run_batch(k, &ns);
        if (!m) {
            fprintf(stderr, "bench-core: %s %s on \"%s\": check failed\n", scen_names[k->scen],
                    ser_names[k->ser], conf_names[ri->conf]);
            return false;
        }
        if (bench_lat_add(bt, ns) != WAMP_OK) {
            return false;
        }
    } while ((end = bench_now_ns()) - start < dur_ns);
    out->busy = (double)(cpu_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / (double)(end - start);
    rt_router_tick(ri->rt);
    (void)bench_lat_pct_us(bt, 50); /* (sorts the batches' times) */
    double limit = cut > 0 ? cut * (double)bt->v[bt->n / 2] : (double)UINT64_MAX;
    uint64_t sum = 0;
    size_t kept = 0;
    while (kept < bt->n && (double)bt->v[kept] <= limit) {
        sum += bt->v[kept++];
    }
    out->ns_per_msg = (double)sum / (double)(kept * m);
    out->dropped = (double)(bt->n - kept) / (double)bt->n;
    out->msgs = kept * m;
    return true;
}

/* --- routers --------------------------------------------------------------------------------- */

/* The embedded default configuration with data_dir and, but for shipped, the flight recorder
 * off. */
static rt_config *make_config(int conf, const char *data_dir)
{
    json_error_t je;
    json_t *root = json_loadb(rt_config_default_json, rt_config_default_json_len, 0, &je);
    json_t *w0 = json_array_get(json_object_get(root, "workers"), 0);
    if (!w0) {
        json_decref(root);
        return NULL;
    }
    if (!json_object_get(w0, "wampscope")) {
        json_object_set_new(w0, "wampscope", json_object());
    }
    json_t *ws = json_object_get(w0, "wampscope");
    if (!json_object_get(ws, "tracing")) {
        json_object_set_new(ws, "tracing", json_object());
    }
    json_t *tr = json_object_get(ws, "tracing");
    json_object_set_new(tr, "data_dir", json_string(data_dir));
    if (conf != CFG_SHIPPED) {
        json_object_set_new(tr, "flight_recorder", json_false());
    }
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    rt_config *cfg = NULL;
    rt_config_diag diag = {0};
    if (!text || rt_config_parse(text, strlen(text), NULL, &cfg, &diag) != WAMP_OK) {
        for (size_t i = 0; i < diag.n_errors; i++) {
            fprintf(stderr, "bench-core: config: %s\n", diag.errors[i]);
        }
    }
    rt_config_diag_fini(&diag);
    free(text);
    return cfg;
}

static bool router_init(router_inst *ri, int conf, const char *tmp, const opts *o)
{
    memset(ri, 0, sizeof(*ri));
    ri->conf = conf;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/%s", tmp, conf_names[conf]);
    if (mkdir(dir, 0700) != 0 || !(ri->cfg = make_config(conf, dir)) ||
        !(ri->rt = rt_router_new(ri->cfg, NULL, NULL))) {
        return false;
    }
    if (ri->cfg->mgmt_enabled && mgmt_api_new(ri->rt, rt_router_wall_ns(ri->rt), &ri->mgmt)) {
        return false;
    }
    if (conf == CFG_MEM || conf == CFG_PERSIST) {
        json_t *to = conf == CFG_PERSIST ? json_pack("{sb}", "persist", 1) : NULL;
        trace *t = NULL;
        char why[256] = "";
        wamp_err e = trace_hub_start(rt_router_trace_hub(ri->rt), NULL, to,
                                     rt_router_now_us(ri->rt) * 1000u, rt_router_wall_ns(ri->rt),
                                     &t, why, sizeof(why));
        json_decref(to);
        if (e != WAMP_OK) {
            fprintf(stderr, "bench-core: start_trace: %s\n", why);
            return false;
        }
    }
    /* A figure of a router that does not record as its configuration says would be worthless
     * (the flight recorder logs a failure to start and the router runs without it). */
    if (trace_hub_is_active(rt_router_trace_hub(ri->rt)) != (conf != CFG_OFF)) {
        fprintf(stderr, "bench-core: \"%s\": a trace is %s\n", conf_names[conf],
                conf == CFG_OFF ? "running" : "not running");
        return false;
    }
    /* What the WebSocket adapter passes: the listener's id and message size limit. */
    if (ri->cfg->n_listeners) {
        ri->peer.listener_id = ri->cfg->listeners[0].id;
        ri->peer.max_message_size = ri->cfg->listeners[0].max_message_size;
    }
    ri->peer.is_loopback = true;
    size_t n = 0;
    for (int sc = 0; sc < NSCEN; sc++) {
        for (size_t si = 0; si < NSER; si++, n++) {
            if (o->scen[sc] && o->ser[si] && !case_init(ri, &ri->cases[n], sc, si, o->payload)) {
                fprintf(stderr, "bench-core: cannot set up %s %s on \"%s\"\n", scen_names[sc],
                        ser_names[si], conf_names[conf]);
                return false;
            }
        }
    }
    return true;
}

/* As main() tears down: connections closed, traces stopped (persisted ones flushed), the
 * management API, the router, the configuration. */
static void router_fini(router_inst *ri)
{
    for (size_t i = 0; i < NCASES; i++) {
        case_fini(&ri->cases[i]);
    }
    if (ri->rt) {
        rt_router_end_shutdown(ri->rt);
    }
    mgmt_api_free(ri->mgmt);
    rt_router_free(ri->rt);
    rt_config_free(ri->cfg);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 ? 0 : -1;
}

/* --- statistics and output ------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1) of v[0..n) by linear interpolation; v is sorted in place. */
static double quantile(double *v, size_t n, double q)
{
    qsort(v, n, sizeof(*v), cmp_double);
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    return i + 1 < n ? v[i] + (pos - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
}

typedef struct case_stats {
    double ns[NCONF][MAX_RND];   /* per round */
    double busy[NCONF][MAX_RND]; /* per round (run_slice()) */
    double dropped[NCONF];       /* batches left out, summed over the rounds' shares */
    uint64_t msgs[NCONF];
    uint64_t other_cpu_ns; /* CPU of threads other than this one during the rounds */
} case_stats;

static void report(const opts *o, size_t scen, size_t si, case_stats *st)
{
    unsigned r = o->rounds;
    const char *unit = scen == SC_RPC ? "call" : "event";
    printf("\n%s %s, payload %zu: ns per %s (median of %u slices, q1-q3), ratio off/config "
           "(median of the rounds' paired ratios, q1-q3)\n",
           scen_names[scen], ser_names[si], o->payload, unit, r);
    printf("  %-8s %9s %9s %9s   %7s %7s %7s  %-13s %5s %6s  %s\n", "config", "ns", "q1", "q3",
           "ratio", "q1", "q3", "target", "busy", "drop%", "other threads");
    for (int c = 0; c < NCONF; c++) {
        if (!o->conf[c]) {
            continue;
        }
        double v[MAX_RND], ratio[MAX_RND];
        bool paired = o->conf[CFG_OFF];
        double busy = quantile(st->busy[c], r, 0.5);
        double drop = 100.0 * st->dropped[c] / (double)r;
        for (unsigned i = 0; i < r; i++) {
            v[i] = st->ns[c][i];
            ratio[i] = paired ? st->ns[CFG_OFF][i] / st->ns[c][i] : 0;
        }
        double q1 = quantile(v, r, 0.25), med = quantile(v, r, 0.5), q3 = quantile(v, r, 0.75);
        double rq1 = quantile(ratio, r, 0.25), rmed = quantile(ratio, r, 0.5);
        double rq3 = quantile(ratio, r, 0.75);
        /* Threads other than the main one: a persisted trace's writer (none elsewhere). */
        double other = c == CFG_PERSIST && st->msgs[c]
                               ? (double)st->other_cpu_ns / (double)st->msgs[c]
                               : 0.0;
        char tgt[32] = "";
        const char *verdict = "na";
        if (paired && c != CFG_OFF) {
            verdict = rmed >= targets[c] ? "met" : "missed";
            snprintf(tgt, sizeof(tgt), ">=%.2f %s", targets[c], verdict);
        }
        printf("  %-8s %9.1f %9.1f %9.1f   ", conf_names[c], med, q1, q3);
        if (paired) {
            printf("%7.3f %7.3f %7.3f  %-13s", rmed, rq1, rq3, tgt);
        } else {
            printf("%7s %7s %7s  %-13s", "-", "-", "-", "");
        }
        printf(" %5.3f %6.2f  %.1f ns/%s\n", busy, drop, other, unit);
        printf("RESULT scenario=%s ser=%s payload=%zu config=%s status=ok unit=ns/%s ns=%.1f "
               "q1=%.1f q3=%.1f",
               scen_names[scen], ser_names[si], o->payload, conf_names[c], unit, med, q1, q3);
        if (paired) {
            printf(" ratio=%.4f ratio_q1=%.4f ratio_q3=%.4f target=%.2f verdict=%s", rmed, rq1, rq3,
                   targets[c], verdict);
        }
        printf(" busy=%.3f dropped_pct=%.2f other_threads_ns=%.1f rounds=%u count=%llu\n", busy,
               drop, other, r, (unsigned long long)st->msgs[c]);
    }
    fflush(stdout);
}

/* Warm-up, then the rounds, for case n on every router. false on a failed check. */
static bool measure(const opts *o, router_inst *ri, size_t n, case_stats *st)
{
    int order[NCONF], nc = 0;
    for (int c = 0; c < NCONF; c++) {
        if (o->conf[c]) {
            order[nc++] = c;
        }
    }
    uint64_t warm = (uint64_t)(o->warmup_ms * 1e6);
    uint64_t slice_ns = (uint64_t)(o->slice_ms * 1e6);
    if (o->seconds > 0) {
        slice_ns = (uint64_t)(o->seconds * 1e9 / (double)(o->rounds * (unsigned)nc));
    }
    double cut = o->keep_all ? 0 : 4.0;
    bench_lat bt = {0}; /* the timed ns of every batch of a slice */
    slice sl;
    bool ok = true;
    for (int i = 0; ok && i < nc; i++) {
        ok = run_slice(&ri[order[i]], &ri[order[i]].cases[n], warm, cut, &bt, &sl);
    }
    uint64_t other0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    for (unsigned r = 0; ok && r < o->rounds; r++) {
        for (int i = 0; ok && i < nc; i++) {
            int c = order[(r + (unsigned)i) % (unsigned)nc];
            ok = run_slice(&ri[c], &ri[c].cases[n], slice_ns, cut, &bt, &sl);
            st->ns[c][r] = sl.ns_per_msg;
            st->busy[c][r] = sl.busy;
            st->dropped[c] += sl.dropped;
            st->msgs[c] += sl.msgs;
        }
    }
    bench_lat_fini(&bt);
    if (!ok) {
        return false;
    }
    st->other_cpu_ns = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns(CLOCK_THREAD_CPUTIME_ID) - other0;
    return true;
}

/* --- options --------------------------------------------------------------------------------- */

/* Sets flags[i] for every name of names[] found in the comma/space separated list. */
static bool parse_list(const char *arg, const char *const *names, size_t n, bool *flags)
{
    memset(flags, 0, n * sizeof(*flags));
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", arg);
    bool any = false;
    for (char *save = NULL, *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        size_t i = 0;
        while (i < n && strcmp(t, names[i]) != 0) {
            i++;
        }
        if (i == n) {
            fprintf(stderr, "bench-core: unknown name \"%s\"\n", t);
            return false;
        }
        flags[i] = any = true;
    }
    return any;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench-core [--rounds N] [--slice-ms MS | --seconds S] [--warmup-ms MS]\n"
               "                  [--payload N] [--configs \"shipped off mem persist\"]\n"
               "                  [--scenarios \"rpc100 pubsub10\"] [--ser \"msgpack json\"]\n"
               "                  [--keep-outliers]\n"
               "  --seconds S: measured time per scenario and serializer, all configurations\n"
               "  together (sets the slice: S / (rounds x configurations))\n");
}

static int parse_opts(int argc, char **argv, opts *o)
{
    static const struct option lo[] = {
            {"rounds", required_argument, NULL, 'r'},
            {"slice-ms", required_argument, NULL, 'l'},
            {"seconds", required_argument, NULL, 's'},
            {"warmup-ms", required_argument, NULL, 'w'},
            {"payload", required_argument, NULL, 'p'},
            {"configs", required_argument, NULL, 'c'},
            {"scenarios", required_argument, NULL, 'n'},
            {"ser", required_argument, NULL, 'e'},
            {"keep-outliers", no_argument, NULL, 'k'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
    };
    *o = (opts){.rounds = 30, .slice_ms = 50, .warmup_ms = 300, .payload = 32};
    for (int i = 0; i < NCONF; i++) {
        o->conf[i] = true;
    }
    o->scen[0] = o->scen[1] = o->ser[0] = o->ser[1] = true;
    int ch;
    bool ok = true;
    while (ok && (ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'r':
            o->rounds = (unsigned)strtoul(optarg, NULL, 10);
            ok = o->rounds >= 1 && o->rounds <= MAX_RND;
            break;
        case 'l':
            o->slice_ms = strtod(optarg, NULL);
            ok = o->slice_ms > 0;
            break;
        case 's':
            o->seconds = strtod(optarg, NULL);
            ok = o->seconds > 0;
            break;
        case 'w':
            o->warmup_ms = strtod(optarg, NULL);
            ok = o->warmup_ms >= 0;
            break;
        case 'p':
            o->payload = (size_t)strtoul(optarg, NULL, 10);
            ok = o->payload <= 1024u * 1024;
            break;
        case 'c':
            ok = parse_list(optarg, conf_names, NCONF, o->conf);
            break;
        case 'n':
            ok = parse_list(optarg, scen_names, NSCEN, o->scen);
            break;
        case 'e':
            ok = parse_list(optarg, ser_names, NSER, o->ser);
            break;
        case 'k':
            o->keep_all = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            ok = false;
        }
    }
    if (!ok || optind < argc) {
        usage(stderr);
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    /* The library state main() of wampscope sets, in its order. */
    rt_jalloc_install();
    opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0) {
        return rc;
    }
    signal(SIGXFSZ, SIG_IGN);
    if (sodium_init() < 0) {
        return 1;
    }
    json_object_seed(0);
    /* Warnings and errors only: 26 sessions join each router (no log call on the message path
     * depends on the level above debug). */
    rt_log_set_level(RT_LOG_LEVEL_WARN);

    const char *tmpdir = getenv("TMPDIR");
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "%s/bench-core.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(tmp)) {
        perror("bench-core: mkdtemp");
        return 1;
    }
    router_inst ri[NCONF];
    case_stats st;
    memset(ri, 0, sizeof(ri));
    rc = 0;
    for (int c = 0; c < NCONF && rc == 0; c++) {
        if (o.conf[c] && !router_init(&ri[c], c, tmp, &o)) {
            fprintf(stderr, "bench-core: cannot build the \"%s\" router\n", conf_names[c]);
            rc = 1;
        }
    }
    printf("bench-core: %u rounds, payload %zu, batches of %d requests\n", o.rounds, o.payload,
           BATCH);
    for (size_t n = 0; n < NCASES && rc == 0; n++) {
        size_t sc = n / NSER, si = n % NSER;
        if (!o.scen[sc] || !o.ser[si]) {
            continue;
        }
        memset(&st, 0, sizeof(st));
        if (!measure(&o, ri, n, &st)) {
            printf("RESULT scenario=%s ser=%s payload=%zu status=failed\n", scen_names[sc],
                   ser_names[si], o.payload);
            rc = 1;
            break;
        }
        report(&o, sc, si, &st);
    }
    for (int c = 0; c < NCONF; c++) {
        router_fini(&ri[c]);
    }
    if (getenv("BENCH_CORE_KEEP")) {
        printf("bench-core: kept %s\n", tmp);
    } else if (nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) {
        fprintf(stderr, "bench-core: cannot remove %s\n", tmp);
    }
    return rc;
}
