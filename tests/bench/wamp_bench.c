/* wamp_bench.c: wamp-bench, a load generator for any WAMP v2 router reachable over WebSocket.
 *
 * Scenarios (each for every serializer asked for, each on fresh sessions):
 *   rpc     one caller and one callee session; the caller keeps N CALLs in flight (N from
 *           --inflight, default 1 and 100); figures: completed calls/s, p50/p99 CALL->RESULT
 *           latency.
 *   pubsub  one publisher and --subscribers (10) subscriber sessions on one topic; the publisher
 *           keeps at most --window (100) publications ahead of the slowest subscriber, so the
 *           figure is delivered throughput, not queue growth; figures: EVENTs received by all
 *           subscribers per second, publishes/s, p50/p99 PUBLISH->EVENT latency.
 * Each run: connect + join + register/subscribe, --warmup seconds of load, --seconds of measured
 * load, drain, GOODBYE. With --router-pid the router's CPU share over the measured interval is
 * reported (utime+stime from /proc/PID/stat, in % of one core), and always our own.
 *
 * Everything runs in one thread around one epoll set. Control messages are built with the wamp
 * library's builders and encoded/decoded with wamp_codec; the per-message hot path renders
 * pre-encoded templates and reads received messages with bench_wire_peek() (see bench_wire.h),
 * cross-checked against wamp_codec on the first --check messages of every session.
 * --full-encode / --full-decode switch the hot path to the library for comparison.
 * The state of a run lives in one bench_run, passed explicitly. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "bench_stats.h"
#include "bench_wire.h"
#include "bench_ws.h"
#include "wamp_buf.h"
#include "wamp_codec.h"
#include "wamp_msg.h"

/* Send-time ring for calls and publications, indexed by id; must exceed any in-flight count. */
#define RING_SIZE       8192u
#define MAX_INFLIGHT    (RING_SIZE / 2u)
#define MAX_INFLIGHT_N  8
#define SETUP_TIMEOUT_S 10.0
#define DRAIN_TIMEOUT_S 2.0
#define LEAVE_TIMEOUT_S 2.0

typedef struct bench_opts {
    const char *url_str;
    bench_ws_url url;
    const char *url2_str; /* --url2: another node of a cluster, or NULL */
    bench_ws_url url2;
    double settle; /* --settle: seconds between the last SUBSCRIBED/REGISTERED and the load */
    const char *realm;
    double seconds;
    double warmup;
    bool do_rpc;
    bool do_pubsub;
    unsigned inflight[MAX_INFLIGHT_N];
    size_t n_inflight;
    wamp_ser sers[2];
    size_t n_sers;
    unsigned subscribers;
    unsigned window;
    size_t payload;
    long router_pid;
    bool ack;
    unsigned check;
    bool full_decode;
    bool full_encode;
} bench_opts;

typedef enum scen_kind {
    SCEN_RPC,
    SCEN_PUBSUB
} scen_kind;

typedef enum sess_role {
    ROLE_CALLER,
    ROLE_CALLEE,
    ROLE_PUBLISHER,
    ROLE_SUBSCRIBER
} sess_role;

typedef enum sess_state {
    SS_CONNECTING, /* TCP + WebSocket handshake */
    SS_JOINING,    /* HELLO sent */
    SS_SETUP,      /* REGISTER / SUBSCRIBE sent */
    SS_READY,
    SS_LEAVING, /* GOODBYE sent, waiting for the reply and the close */
    SS_DONE,
    SS_FAILED
} sess_state;

typedef enum run_phase {
    PH_SETUP,
    PH_WARMUP,
    PH_MEASURE,
    PH_DRAIN,
    PH_LEAVE,
    PH_END
} run_phase;

typedef struct ring_slot {
    uint64_t id;
    uint64_t t_ns;
} ring_slot;

struct bench_run;

typedef struct bench_sess {
    struct bench_run *run;
    bench_ws *ws;
    sess_role role;
    sess_state state;
    uint64_t next_ctl_id;
    uint64_t recv; /* hot messages received: RESULT, INVOCATION or EVENT */
    unsigned checked;
} bench_sess;

typedef struct bench_run {
    const bench_opts *o;
    wamp_ser ser;
    scen_kind kind;
    unsigned inflight;
    int epfd;
    bench_sess *sess;
    size_t nsess;
    run_phase phase;
    bool settling; /* set-up done, waiting --settle before the load */
    uint64_t now;
    uint64_t deadline;
    char uri[96];
    char *payload;
    bench_tmpl t_req; /* CALL or PUBLISH */
    bench_tmpl t_yield;
    unsigned char *scratch;
    ring_slot *ring;
    uint64_t last_id; /* last CALL request id / PUBLISH sequence issued */
    uint64_t done;    /* RESULTs (rpc) or EVENTs over all subscribers (pubsub) */
    uint64_t acked;   /* PUBLISHED */
    uint64_t errors;  /* ERROR answers to CALL/PUBLISH */

    struct {
        char uri[96];
        uint64_t n;
    } err_uris[4]; /* the first distinct ERROR URIs and their counts (the rest: "other") */

    uint64_t err_other;
    uint64_t mismatches; /* bench_wire_peek() disagreed with the decoder (a generator bug) */
    uint64_t invalid;    /* cross-checked messages that fail wamp_msg_parse() */
    char invalid_why[WAMP_WHY_LEN];
    uint64_t unexpected;
    unsigned outstanding;
    bench_lat lat;
    /* Snapshots at the start (0) and end (1) of the measured interval. */
    uint64_t t0, t1, done0, done1, sent0, sent1;
    double rcpu0, rcpu1, scpu0, scpu1;
    bench_sys_cpu sys0, sys1;
    bool rcpu_ok;
    bool failed;
    bool unsupported;
    char why[256];
} bench_run;

/* ---- helpers ---- */

static void run_fail(bench_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void run_fail(bench_run *r, const char *fmt, ...)
{
    if (r->failed) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    r->failed = true;
}

static const char *role_name(sess_role role)
{
    switch (role) {
    case ROLE_CALLER:
        return "caller";
    case ROLE_CALLEE:
        return "callee";
    case ROLE_PUBLISHER:
        return "publisher";
    case ROLE_SUBSCRIBER:
        return "subscriber";
    }
    return "?";
}

/* Encodes msg (consumed) and queues it on the session's connection. */
static wamp_err sess_send_json(bench_sess *s, json_t *msg)
{
    if (!msg) {
        return WAMP_ENOMEM;
    }
    wamp_buf *buf = NULL;
    wamp_err err = WAMP_ECLOSED;
    if (s->ws) {
        err = wamp_codec_encode(s->run->ser, msg, &buf);
        if (err == WAMP_OK) {
            err = bench_ws_send(s->ws, wamp_buf_cdata(buf), wamp_buf_len(buf));
        }
    }
    wamp_buf_unref(&buf);
    json_decref(msg);
    return err;
}

static void sess_send_bytes(bench_sess *s, const unsigned char *p, size_t len)
{
    if (s->ws && bench_ws_send(s->ws, p, len) != WAMP_OK) {
        run_fail(s->run, "%s: cannot queue a message", role_name(s->role));
    }
}

/* ---- hot path ---- */

static void issue_call(bench_run *r, bench_sess *s)
{
    uint64_t id = ++r->last_id;
    ring_slot *slot = &r->ring[id & (RING_SIZE - 1u)];
    slot->id = id;
    slot->t_ns = r->now;
    r->outstanding++;
    if (r->o->full_encode) {
        json_t *args = json_pack("[Is]", (json_int_t)id, r->payload);
        sess_send_json(s, wamp_msg_new_call(id, NULL, r->uri, args, NULL));
        return;
    }
    sess_send_bytes(s, r->scratch, bench_tmpl_render(&r->t_req, id, r->scratch));
}

static void issue_publish(bench_run *r, bench_sess *s)
{
    uint64_t id = ++r->last_id;
    ring_slot *slot = &r->ring[id & (RING_SIZE - 1u)];
    slot->id = id;
    slot->t_ns = r->now;
    if (r->o->full_encode) {
        json_t *opts = r->o->ack ? json_pack("{sb}", "acknowledge", 1) : NULL;
        json_t *args = json_pack("[Is]", (json_int_t)id, r->payload);
        sess_send_json(s, wamp_msg_new_publish(id, opts, r->uri, args, NULL));
        return;
    }
    sess_send_bytes(s, r->scratch, bench_tmpl_render(&r->t_req, id, r->scratch));
}

static void send_yield(bench_run *r, bench_sess *s, uint64_t inv_id)
{
    if (r->o->full_encode) {
        json_t *args = json_pack("[s]", r->payload);
        sess_send_json(s, wamp_msg_new_yield(inv_id, NULL, args, NULL));
        return;
    }
    sess_send_bytes(s, r->scratch, bench_tmpl_render(&r->t_yield, inv_id, r->scratch));
}

/* Latency of the request with this id, sampled only inside the measured interval. */
static void sample(bench_run *r, uint64_t id)
{
    const ring_slot *slot = &r->ring[id & (RING_SIZE - 1u)];
    if (r->phase == PH_MEASURE && slot->id == id && r->now >= slot->t_ns) {
        bench_lat_add(&r->lat, r->now - slot->t_ns);
    }
}

static bool run_loading(const bench_run *r)
{
    return r->phase == PH_WARMUP || r->phase == PH_MEASURE;
}

static uint64_t min_sub_recv(const bench_run *r)
{
    uint64_t m = UINT64_MAX;
    for (size_t i = 1; i < r->nsess; i++) {
        if (r->sess[i].recv < m) {
            m = r->sess[i].recv;
        }
    }
    return m == UINT64_MAX ? 0 : m;
}

/* Tops the load up: CALLs back to the in-flight target, publications up to the window. */
static void pump(bench_run *r)
{
    if (!run_loading(r) || r->failed) {
        return;
    }
    bench_sess *s = &r->sess[0];
    r->now = bench_now_ns();
    if (r->kind == SCEN_RPC) {
        while (r->outstanding < r->inflight) {
            issue_call(r, s);
        }
        return;
    }
    uint64_t floor = min_sub_recv(r);
    while (r->last_id - floor < r->o->window &&
           (!r->o->ack || r->last_id - r->acked < r->o->window)) {
        issue_publish(r, s);
    }
}

/* ---- control path ---- */

static json_t *hello_details(sess_role role)
{
    return json_pack("{s:s, s:{s:{s:{}}}}", "agent", "wamp-bench", "roles", role_name(role),
                     "features");
}

static void sess_on_open(void *user)
{
    bench_sess *s = user;
    s->state = SS_JOINING;
    if (sess_send_json(s, wamp_msg_new_hello(s->run->o->realm, hello_details(s->role))) !=
        WAMP_OK) {
        run_fail(s->run, "%s: cannot send HELLO", role_name(s->role));
    }
}

static void on_welcome(bench_sess *s)
{
    bench_run *r = s->run;
    json_t *msg = NULL;
    switch (s->role) {
    case ROLE_CALLEE:
        msg = wamp_msg_new_register(++s->next_ctl_id, NULL, r->uri);
        break;
    case ROLE_SUBSCRIBER:
        msg = wamp_msg_new_subscribe(++s->next_ctl_id, NULL, r->uri);
        break;
    case ROLE_CALLER:
    case ROLE_PUBLISHER:
        s->state = SS_READY;
        return;
    }
    s->state = SS_SETUP;
    if (sess_send_json(s, msg) != WAMP_OK) {
        run_fail(r, "%s: cannot send REGISTER/SUBSCRIBE", role_name(s->role));
    }
}

static const char *msg_uri(const wamp_msg *m)
{
    return m->uri ? m->uri : "?";
}

/* Counts one ERROR answer's URI in r->err_uris (printed at the end of the run). */
static void count_error_uri(bench_run *r, const char *uri)
{
    size_t n = sizeof r->err_uris / sizeof r->err_uris[0];
    for (size_t i = 0; i < n; i++) {
        if (r->err_uris[i].n == 0) {
            snprintf(r->err_uris[i].uri, sizeof r->err_uris[i].uri, "%s", uri);
        }
        if (strcmp(r->err_uris[i].uri, uri) == 0) {
            r->err_uris[i].n++;
            return;
        }
    }
    r->err_other++;
}

static void on_control(bench_sess *s, const wamp_msg *m)
{
    bench_run *r = s->run;
    switch (m->type) {
    case WAMP_MSG_WELCOME:
        if (s->state == SS_JOINING) {
            on_welcome(s);
        }
        break;
    case WAMP_MSG_REGISTERED:
    case WAMP_MSG_SUBSCRIBED:
        if (s->state == SS_SETUP) {
            s->state = SS_READY;
        }
        break;
    case WAMP_MSG_ABORT:
        run_fail(r, "%s: router sent ABORT %s", role_name(s->role), msg_uri(m));
        s->state = SS_FAILED;
        break;
    case WAMP_MSG_GOODBYE:
        if (s->state != SS_LEAVING) {
            /* Router-initiated: answer as the spec asks, the run is over for this session. */
            sess_send_json(s, wamp_msg_new_goodbye(NULL, WAMP_CLOSE_GOODBYE_AND_OUT));
            if (r->phase < PH_LEAVE) {
                run_fail(r, "%s: router sent GOODBYE %s", role_name(s->role), msg_uri(m));
            }
        }
        if (s->ws) {
            bench_ws_close(s->ws, 1000);
        }
        s->state = SS_LEAVING;
        break;
    case WAMP_MSG_ERROR:
        if (m->req_type == WAMP_MSG_CALL || m->req_type == WAMP_MSG_PUBLISH) {
            count_error_uri(r, msg_uri(m));
        }
        if (m->req_type == WAMP_MSG_CALL) {
            r->errors++;
            if (r->outstanding > 0) {
                r->outstanding--;
            }
        } else if (m->req_type == WAMP_MSG_PUBLISH) {
            r->errors++;
        } else {
            run_fail(r, "%s: router answered %s with ERROR %s", role_name(s->role),
                     wamp_msg_type_name((int)m->req_type), msg_uri(m));
            s->state = SS_FAILED;
        }
        break;
    default:
        r->unexpected++;
        break;
    }
}

/* ---- receive dispatch ---- */

static bool is_hot(const bench_wire_head *h)
{
    switch (h->type) {
    case WAMP_MSG_RESULT:
    case WAMP_MSG_PUBLISHED:
        return h->nids >= 1;
    case WAMP_MSG_INVOCATION:
    case WAMP_MSG_EVENT:
        return h->nids >= 2;
    default:
        return false;
    }
}

/* Reads type, leading ids and Arguments[0] from a decoded message array, without the strict
 * validation of wamp_msg_parse(). false if root is not an array starting with an integer. */
static bool head_from_array(const json_t *root, bench_wire_head *h)
{
    memset(h, 0, sizeof(*h));
    json_t *t = json_array_get(root, 0);
    if (!json_is_integer(t)) {
        return false;
    }
    h->type = (int)json_integer_value(t);
    size_t n = json_array_size(root);
    for (size_t i = 1; i < n && h->nids < 2; i++) {
        json_t *v = json_array_get(root, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            break;
        }
        h->id[h->nids++] = (uint64_t)json_integer_value(v);
    }
    /* RESULT [50, Request, Details, Args]; EVENT/INVOCATION [.., Id, Id, Details, Args]. */
    size_t args_at = h->type == WAMP_MSG_RESULT ? 3 : 4;
    if (h->type == WAMP_MSG_RESULT || h->type == WAMP_MSG_EVENT || h->type == WAMP_MSG_INVOCATION) {
        json_t *a0 = json_array_get(json_array_get(root, args_at), 0);
        if (json_is_integer(a0) && json_integer_value(a0) >= 0) {
            h->has_arg0 = true;
            h->arg0 = (uint64_t)json_integer_value(a0);
        }
    }
    return true;
}

/* Checks what bench_wire_peek() read against the library decoder's view of the same bytes, and
 * whether the message passes wamp_msg_parse() (strict WAMP validation). */
static void cross_check(bench_sess *s, const unsigned char *data, size_t len,
                        const bench_wire_head *h)
{
    bench_run *r = s->run;
    json_t *root = NULL;
    char why[WAMP_WHY_LEN];
    if (wamp_codec_decode(r->ser, data, len, &root, why, sizeof(why)) != WAMP_OK) {
        run_fail(r, "%s: undecodable %s message from router: %s", role_name(s->role),
                 wamp_ser_name(r->ser), why);
        return;
    }
    bench_wire_head f;
    head_from_array(root, &f);
    bool same = f.type == h->type && f.nids >= h->nids && f.id[0] == h->id[0] &&
                (h->nids < 2 || f.id[1] == h->id[1]) &&
                (!h->has_arg0 || (f.has_arg0 && f.arg0 == h->arg0));
    if (!same) {
        r->mismatches++;
        fprintf(stderr, "wamp-bench: peek/decoder mismatch: type %d/%d id %llu/%llu\n", h->type,
                f.type, (unsigned long long)h->id[0], (unsigned long long)f.id[0]);
    }
    wamp_msg m;
    if (wamp_msg_parse(root, &m, why, sizeof(why)) != WAMP_OK) {
        if (r->invalid++ == 0) {
            snprintf(r->invalid_why, sizeof(r->invalid_why), "%s", why);
        }
        return;
    }
    wamp_msg_fini(&m);
}

static void on_hot(bench_sess *s, const bench_wire_head *h)
{
    bench_run *r = s->run;
    switch (h->type) {
    case WAMP_MSG_RESULT:
        if (s->role == ROLE_CALLER) {
            s->recv++;
            r->done++;
            sample(r, h->id[0]);
            if (r->outstanding > 0) {
                r->outstanding--;
            }
            return;
        }
        break;
    case WAMP_MSG_INVOCATION:
        if (s->role == ROLE_CALLEE) {
            s->recv++;
            send_yield(r, s, h->id[0]);
            return;
        }
        break;
    case WAMP_MSG_EVENT:
        if (s->role == ROLE_SUBSCRIBER) {
            s->recv++;
            r->done++;
            if (h->has_arg0) {
                sample(r, h->arg0);
            }
            return;
        }
        break;
    case WAMP_MSG_PUBLISHED:
        if (s->role == ROLE_PUBLISHER) {
            r->acked++;
            return;
        }
        break;
    default:
        break;
    }
    r->unexpected++;
}

static void sess_on_message(void *user, const unsigned char *data, size_t len, bool binary)
{
    bench_sess *s = user;
    bench_run *r = s->run;
    bench_wire_head h;
    (void)binary;

    if (!r->o->full_decode && bench_wire_peek(r->ser, data, len, s->role == ROLE_SUBSCRIBER, &h) &&
        is_hot(&h)) {
        if (s->checked < r->o->check) {
            s->checked++;
            cross_check(s, data, len, &h);
        }
        on_hot(s, &h);
        return;
    }
    json_t *root = NULL;
    char why[WAMP_WHY_LEN];
    if (wamp_codec_decode(r->ser, data, len, &root, why, sizeof(why)) != WAMP_OK) {
        run_fail(r, "%s: undecodable message from router: %s", role_name(s->role), why);
        return;
    }
    if (head_from_array(root, &h) && is_hot(&h)) {
        json_decref(root);
        on_hot(s, &h);
        return;
    }
    /* Control messages get the strict check: a join or setup must not go through on a message
     * the router got wrong. wamp_msg_parse() consumes root. */
    wamp_msg m;
    if (wamp_msg_parse(root, &m, why, sizeof(why)) != WAMP_OK) {
        run_fail(r, "%s: invalid message from router: %s", role_name(s->role), why);
        return;
    }
    on_control(s, &m);
    wamp_msg_fini(&m);
}

/* The connection is gone (err from bench_ws), or failed before it opened. */
static void sess_on_closed(bench_sess *s, wamp_err err)
{
    bench_run *r = s->run;
    const char *why = s->ws ? bench_ws_error(s->ws) : "";
    if (s->state == SS_LEAVING || s->state == SS_DONE) {
        s->state = SS_DONE;
    } else {
        if (err == WAMP_ENOTFOUND) {
            r->unsupported = true;
        }
        if (s->state != SS_FAILED) {
            run_fail(r, "%s: %s", role_name(s->role), why[0] ? why : wamp_strerror(err));
        }
        s->state = SS_FAILED;
    }
    bench_ws_free(s->ws);
    s->ws = NULL;
}

/* ---- run lifecycle ---- */

static const bench_ws_callbacks sess_cb = {
        .on_open = sess_on_open,
        .on_message = sess_on_message,
};

static wamp_err run_templates(bench_run *r)
{
    const bench_opts *o = r->o;
    json_t *msg;
    wamp_err err;
    if (r->kind == SCEN_RPC) {
        msg = wamp_msg_new_call(BENCH_WIRE_SENTINEL, NULL, r->uri,
                                json_pack("[Is]", (json_int_t)BENCH_WIRE_SENTINEL, r->payload),
                                NULL);
    } else {
        msg = wamp_msg_new_publish(
                BENCH_WIRE_SENTINEL, o->ack ? json_pack("{sb}", "acknowledge", 1) : NULL, r->uri,
                json_pack("[Is]", (json_int_t)BENCH_WIRE_SENTINEL, r->payload), NULL);
    }
    if (!msg) {
        return WAMP_ENOMEM;
    }
    err = bench_tmpl_init(&r->t_req, r->ser, msg);
    json_decref(msg);
    if (err != WAMP_OK) {
        return err;
    }
    msg = wamp_msg_new_yield(BENCH_WIRE_SENTINEL, NULL, json_pack("[s]", r->payload), NULL);
    if (!msg) {
        return WAMP_ENOMEM;
    }
    err = bench_tmpl_init(&r->t_yield, r->ser, msg);
    json_decref(msg);
    if (err != WAMP_OK) {
        return err;
    }
    size_t cap = r->t_req.len > r->t_yield.len ? r->t_req.len : r->t_yield.len;
    r->scratch = malloc(cap);
    return r->scratch ? WAMP_OK : WAMP_ENOMEM;
}

static bool all_in(const bench_run *r, sess_state st)
{
    for (size_t i = 0; i < r->nsess; i++) {
        if (r->sess[i].state != st) {
            return false;
        }
    }
    return true;
}

static bool all_finished(const bench_run *r)
{
    for (size_t i = 0; i < r->nsess; i++) {
        if (r->sess[i].state != SS_DONE && r->sess[i].state != SS_FAILED) {
            return false;
        }
    }
    return true;
}

static uint64_t secs_ns(double s)
{
    return (uint64_t)(s * 1e9);
}

static void snapshot(bench_run *r, bool end)
{
    uint64_t sent = r->last_id;
    double rcpu = 0;
    bool rok = r->o->router_pid > 0 && bench_proc_cpu_s((pid_t)r->o->router_pid, &rcpu);
    if (!end) {
        r->t0 = r->now;
        r->done0 = r->done;
        r->sent0 = sent;
        r->scpu0 = bench_self_cpu_s();
        r->rcpu0 = rcpu;
        r->rcpu_ok = rok;
        bench_sys_cpu_get(&r->sys0);
    } else {
        r->t1 = r->now;
        r->done1 = r->done;
        r->sent1 = sent;
        r->scpu1 = bench_self_cpu_s();
        r->rcpu1 = rcpu;
        r->rcpu_ok = r->rcpu_ok && rok;
        bench_sys_cpu_get(&r->sys1);
    }
}

static void begin_leave(bench_run *r)
{
    r->phase = PH_LEAVE;
    r->deadline = r->now + secs_ns(LEAVE_TIMEOUT_S);
    for (size_t i = 0; i < r->nsess; i++) {
        bench_sess *s = &r->sess[i];
        if (s->ws && bench_ws_get_state(s->ws) == BENCH_WS_OPEN && s->state >= SS_JOINING &&
            s->state <= SS_READY && s->state != SS_CONNECTING) {
            if (s->state == SS_JOINING) {
                bench_ws_close(s->ws, 1000);
            } else {
                sess_send_json(s, wamp_msg_new_goodbye(NULL, WAMP_CLOSE_NORMAL));
            }
            s->state = SS_LEAVING;
        } else if (s->state != SS_LEAVING) {
            s->state = s->state == SS_FAILED ? SS_FAILED : SS_DONE;
        }
    }
}

/* Moves between phases on deadlines and conditions. */
static void advance(bench_run *r)
{
    const bench_opts *o = r->o;
    if (r->failed && r->phase < PH_LEAVE) {
        begin_leave(r);
    }
    switch (r->phase) {
    case PH_SETUP:
        if (all_in(r, SS_READY) && o->settle > 0 && !r->settling) {
            /* Other nodes learn the subscriptions asynchronously. */
            r->settling = true;
            r->deadline = r->now + secs_ns(o->settle);
        } else if (all_in(r, SS_READY) && (!r->settling || r->now >= r->deadline)) {
            r->phase = PH_WARMUP;
            r->deadline = r->now + secs_ns(o->warmup);
        } else if (r->now >= r->deadline) {
            run_fail(r, "timed out connecting/joining/registering after %.0f s", SETUP_TIMEOUT_S);
            begin_leave(r);
        }
        break;
    case PH_WARMUP:
        if (r->now >= r->deadline) {
            r->phase = PH_MEASURE;
            r->deadline = r->now + secs_ns(o->seconds);
            snapshot(r, false);
        }
        break;
    case PH_MEASURE:
        if (r->now >= r->deadline) {
            snapshot(r, true);
            r->phase = PH_DRAIN;
            r->deadline = r->now + secs_ns(DRAIN_TIMEOUT_S);
        }
        break;
    case PH_DRAIN: {
        bool drained = r->kind == SCEN_RPC ? r->outstanding == 0 : min_sub_recv(r) >= r->last_id;
        if (drained || r->now >= r->deadline) {
            begin_leave(r);
        }
        break;
    }
    case PH_LEAVE:
        if (all_finished(r) || r->now >= r->deadline) {
            r->phase = PH_END;
        }
        break;
    case PH_END:
        break;
    }
}

static void run_loop(bench_run *r)
{
    struct epoll_event evs[64];
    while (r->phase != PH_END) {
        r->now = bench_now_ns();
        advance(r);
        if (r->phase == PH_END) {
            break;
        }
        uint64_t wait_ns = r->deadline > r->now ? r->deadline - r->now : 0;
        int timeout_ms = wait_ns > 100000000u ? 100 : (int)((wait_ns + 999999u) / 1000000u);
        int n = epoll_wait(r->epfd, evs, 64, timeout_ms);
        if (n < 0 && errno != EINTR) {
            run_fail(r, "epoll_wait: %s", strerror(errno));
            r->phase = PH_END;
            break;
        }
        for (int i = 0; i < n; i++) {
            bench_ws *ws = evs[i].data.ptr;
            bench_sess *s = bench_ws_user(ws);
            r->now = bench_now_ns();
            wamp_err err = bench_ws_on_event(ws, evs[i].events);
            if (err != WAMP_OK) {
                sess_on_closed(s, err);
            }
        }
        pump(r);
        for (size_t i = 0; i < r->nsess; i++) {
            bench_sess *s = &r->sess[i];
            if (s->ws && bench_ws_flush(s->ws) != WAMP_OK) {
                sess_on_closed(s, WAMP_EIO);
            }
        }
    }
}

typedef struct bench_result {
    char scenario[32];
    const char *status; /* "ok", "failed", "unsupported", "stalled" */
    const char *unit;
    double seconds;
    double rate;  /* calls/s or events/s */
    double rate2; /* publishes/s (pubsub) */
    uint64_t count;
    double p50_us, p99_us;
    double router_cpu; /* % of one core, -1 unknown */
    double bench_cpu;
    double other_cpu; /* everything else on the machine, % of one core; -1 unknown */
    double steal;     /* CPU time the hypervisor took from this VM, % of one core */
    uint64_t errors;
    uint64_t mismatches;
    uint64_t invalid;
} bench_result;

static void run_cleanup(bench_run *r)
{
    for (size_t i = 0; i < r->nsess; i++) {
        bench_ws_free(r->sess[i].ws);
    }
    free(r->sess);
    bench_tmpl_fini(&r->t_req);
    bench_tmpl_fini(&r->t_yield);
    free(r->scratch);
    free(r->ring);
    free(r->payload);
    bench_lat_fini(&r->lat);
    if (r->epfd >= 0) {
        close(r->epfd);
    }
}

static void run_one(const bench_opts *o, wamp_ser ser, scen_kind kind, unsigned inflight,
                    bench_result *res)
{
    bench_run run = {.o = o, .ser = ser, .kind = kind, .inflight = inflight, .epfd = -1};
    bench_run *r = &run;
    memset(res, 0, sizeof(*res));
    res->router_cpu = -1;
    if (kind == SCEN_RPC) {
        snprintf(res->scenario, sizeof(res->scenario), "rpc%u", inflight);
        res->unit = "calls/s";
    } else {
        snprintf(res->scenario, sizeof(res->scenario), "pubsub%u", o->subscribers);
        res->unit = "events/s";
    }
    /* The pid zero-padded to the most digits a Linux pid has: URIs of one length in every run,
     * so that instruction counts (run_callgrind.sh) do not vary with the pid. */
    snprintf(r->uri, sizeof(r->uri), "bench.%s.p%07ld", kind == SCEN_RPC ? "rpc" : "topic",
             (long)getpid());
    r->nsess = kind == SCEN_RPC ? 2 : 1 + (size_t)o->subscribers;
    r->sess = calloc(r->nsess, sizeof(*r->sess));
    r->ring = calloc(RING_SIZE, sizeof(*r->ring));
    r->payload = malloc(o->payload + 1);
    r->epfd = epoll_create1(0);
    if (!r->sess || !r->ring || !r->payload || r->epfd < 0) {
        run_fail(r, "out of resources");
        goto out;
    }
    memset(r->payload, 'x', o->payload);
    r->payload[o->payload] = '\0';
    wamp_err err = run_templates(r);
    if (err != WAMP_OK) {
        run_fail(r, "cannot build request templates: %s", wamp_strerror(err));
        goto out;
    }
    bool binary = ser == WAMP_SER_MSGPACK;
    const char *subproto = binary ? WAMP_SUBPROTOCOL_MSGPACK : WAMP_SUBPROTOCOL_JSON;
    for (size_t i = 0; i < r->nsess; i++) {
        bench_sess *s = &r->sess[i];
        s->run = r;
        s->role = kind == SCEN_RPC ? (i == 0 ? ROLE_CALLER : ROLE_CALLEE)
                                   : (i == 0 ? ROLE_PUBLISHER : ROLE_SUBSCRIBER);
        char why[200];
        /* With --url2: the callee, and every second subscriber, on the other node. */
        bool second = o->url2_str && (kind == SCEN_RPC ? i == 1 : i >= 1 && i % 2 == 0);
        s->ws = bench_ws_new(second ? &o->url2 : &o->url, subproto, binary, r->epfd, &sess_cb, s,
                             why, sizeof(why));
        if (!s->ws) {
            run_fail(r, "%s", why);
            goto out;
        }
    }
    r->now = bench_now_ns();
    r->phase = PH_SETUP;
    r->deadline = r->now + secs_ns(SETUP_TIMEOUT_S);
    run_loop(r);
out:
    if (r->unsupported) {
        res->status = "unsupported";
    } else if (r->failed) {
        res->status = "failed";
    } else {
        res->status = "ok";
    }
    if (r->t1 > r->t0) {
        double secs = (double)(r->t1 - r->t0) / 1e9;
        res->seconds = secs;
        res->count = r->done1 - r->done0;
        res->rate = (double)res->count / secs;
        res->rate2 = (double)(r->sent1 - r->sent0) / secs;
        res->p50_us = bench_lat_pct_us(&r->lat, 50);
        res->p99_us = bench_lat_pct_us(&r->lat, 99);
        res->bench_cpu = 100.0 * (r->scpu1 - r->scpu0) / secs;
        if (r->rcpu_ok) {
            res->router_cpu = 100.0 * (r->rcpu1 - r->rcpu0) / secs;
        }
        res->other_cpu = -1;
        if (r->sys0.ok && r->sys1.ok) {
            double busy = 100.0 * (r->sys1.busy_s - r->sys0.busy_s) / secs;
            res->other_cpu = busy - res->bench_cpu - (res->router_cpu > 0 ? res->router_cpu : 0);
            if (res->other_cpu < 0) {
                res->other_cpu = 0;
            }
            res->steal = 100.0 * (r->sys1.steal_s - r->sys0.steal_s) / secs;
        }
        if (res->count == 0 && !r->failed) {
            res->status = "stalled";
        }
    }
    res->errors = r->errors;
    res->mismatches = r->mismatches;
    res->invalid = r->invalid;
    if (r->invalid > 0) {
        fprintf(stderr,
                "wamp-bench: %s %s: %llu of the cross-checked messages fail strict WAMP "
                "validation, first: %s\n",
                res->scenario, wamp_ser_name(ser), (unsigned long long)r->invalid, r->invalid_why);
    }
    if (r->failed || r->unsupported) {
        fprintf(stderr, "wamp-bench: %s %s: %s\n", res->scenario, wamp_ser_name(ser), r->why);
    }
    if (r->errors > 0) {
        fprintf(stderr, "wamp-bench: %s %s: %llu ERROR answers:", res->scenario, wamp_ser_name(ser),
                (unsigned long long)r->errors);
        for (size_t i = 0; i < sizeof r->err_uris / sizeof r->err_uris[0] && r->err_uris[i].n;
             i++) {
            fprintf(stderr, " %s=%llu", r->err_uris[i].uri, (unsigned long long)r->err_uris[i].n);
        }
        if (r->err_other) {
            fprintf(stderr, " other=%llu", (unsigned long long)r->err_other);
        }
        fprintf(stderr, "\n");
    }
    if (r->unexpected > 0) {
        fprintf(stderr, "wamp-bench: %s %s: %llu unexpected messages from the router\n",
                res->scenario, wamp_ser_name(ser), (unsigned long long)r->unexpected);
    }
    run_cleanup(r);
}

static void print_result(const bench_result *res, wamp_ser ser)
{
    printf("RESULT scenario=%s ser=%s status=%s", res->scenario, wamp_ser_name(ser), res->status);
    if (res->seconds > 0) {
        printf(" rate=%.0f unit=%s", res->rate, res->unit);
        if (strncmp(res->scenario, "pubsub", 6) == 0) {
            printf(" publishes_per_s=%.0f", res->rate2);
        }
        printf(" p50_us=%.1f p99_us=%.1f", res->p50_us, res->p99_us);
        if (res->router_cpu >= 0) {
            printf(" router_cpu=%.1f", res->router_cpu);
        } else {
            printf(" router_cpu=na");
        }
        if (res->other_cpu >= 0) {
            printf(" other_cpu=%.1f steal=%.1f", res->other_cpu, res->steal);
        }
        printf(" bench_cpu=%.1f count=%llu seconds=%.2f errors=%llu mismatches=%llu invalid=%llu",
               res->bench_cpu, (unsigned long long)res->count, res->seconds,
               (unsigned long long)res->errors, (unsigned long long)res->mismatches,
               (unsigned long long)res->invalid);
    }
    printf("\n");
    fflush(stdout);
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wamp-bench --url ws://HOST:PORT/PATH [options]\n"
            "  --realm NAME         realm to join (default realm1)\n"
            "  --url2 URL           another node: the callee and every second subscriber "
            "connect there\n"
            "  --settle S           pause between set-up and load (default 0; 0.5 with "
            "--url2)\n"
            "  --seconds S          measured duration of each run (default 5)\n"
            "  --warmup S           load before measuring (default 1)\n"
            "  --scenarios LIST     rpc,pubsub (default both)\n"
            "  --inflight LIST      CALLs in flight for rpc runs (default 1,100; max %u)\n"
            "  --ser LIST           json,msgpack (default both)\n"
            "  --subscribers N      subscriber sessions for pubsub (default 10)\n"
            "  --window N           publications ahead of the slowest subscriber (default 100)\n"
            "  --ack                publish with acknowledge:true; PUBLISHED also bounds the "
            "window\n"
            "  --payload N          bytes of string payload per message (default 32)\n"
            "  --router-pid PID     report that process's CPU share over the measured interval\n"
            "  --check N            messages per session cross-checked with the full decoder "
            "(default 100)\n"
            "  --full-encode        encode every request with wamp_codec (no templates)\n"
            "  --full-decode        decode every received message with wamp_codec\n"
            "Prints one 'RESULT key=value ...' line per run; see tests/bench/README.md.\n",
            MAX_INFLIGHT);
}

static bool parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > max) {
        return false;
    }
    *out = v;
    return true;
}

static bool parse_secs(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0) || v > 86400) {
        return false;
    }
    *out = v;
    return true;
}

/* Comma-separated list: calls fn(item) for each; false if any item is rejected. */
static bool parse_list(const char *s, bench_opts *o, bool (*fn)(bench_opts *, const char *))
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!fn(o, tok)) {
            return false;
        }
    }
    return true;
}

static bool add_scenario(bench_opts *o, const char *s)
{
    if (strcmp(s, "rpc") == 0) {
        o->do_rpc = true;
    } else if (strcmp(s, "pubsub") == 0) {
        o->do_pubsub = true;
    } else {
        return false;
    }
    return true;
}

static bool add_inflight(bench_opts *o, const char *s)
{
    unsigned long v;
    if (o->n_inflight == MAX_INFLIGHT_N || !parse_uint(s, MAX_INFLIGHT, &v) || v == 0) {
        return false;
    }
    o->inflight[o->n_inflight++] = (unsigned)v;
    return true;
}

static bool add_ser(bench_opts *o, const char *s)
{
    if (o->n_sers == 2) {
        return false;
    }
    if (strcmp(s, "json") == 0) {
        o->sers[o->n_sers++] = WAMP_SER_JSON;
    } else if (strcmp(s, "msgpack") == 0) {
        o->sers[o->n_sers++] = WAMP_SER_MSGPACK;
    } else {
        return false;
    }
    return true;
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){.realm = "realm1",
                      .seconds = 5,
                      .warmup = 1,
                      .subscribers = 10,
                      .window = 100,
                      .payload = 32,
                      .check = 100};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        bool flag = true;
        if (strcmp(a, "--ack") == 0) {
            o->ack = true;
        } else if (strcmp(a, "--full-encode") == 0) {
            o->full_encode = true;
        } else if (strcmp(a, "--full-decode") == 0) {
            o->full_decode = true;
        } else {
            flag = false;
        }
        if (flag) {
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "wamp-bench: %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++i];
        unsigned long n;
        bool ok = true;
        if (strcmp(a, "--url") == 0) {
            o->url_str = v;
        } else if (strcmp(a, "--url2") == 0) {
            o->url2_str = v;
            o->settle = o->settle > 0 ? o->settle : 0.5;
        } else if (strcmp(a, "--settle") == 0) {
            ok = parse_secs(v, &o->settle);
        } else if (strcmp(a, "--realm") == 0) {
            o->realm = v;
        } else if (strcmp(a, "--seconds") == 0) {
            ok = parse_secs(v, &o->seconds) && o->seconds > 0;
        } else if (strcmp(a, "--warmup") == 0) {
            ok = parse_secs(v, &o->warmup);
        } else if (strcmp(a, "--scenarios") == 0) {
            ok = parse_list(v, o, add_scenario);
        } else if (strcmp(a, "--inflight") == 0) {
            ok = parse_list(v, o, add_inflight);
        } else if (strcmp(a, "--ser") == 0) {
            ok = parse_list(v, o, add_ser);
        } else if (strcmp(a, "--subscribers") == 0) {
            ok = parse_uint(v, 1000, &n) && n > 0;
            o->subscribers = (unsigned)n;
        } else if (strcmp(a, "--window") == 0) {
            ok = parse_uint(v, MAX_INFLIGHT, &n) && n > 0;
            o->window = (unsigned)n;
        } else if (strcmp(a, "--payload") == 0) {
            ok = parse_uint(v, 16u * 1024u * 1024u, &n);
            o->payload = n;
        } else if (strcmp(a, "--router-pid") == 0) {
            ok = parse_uint(v, 0x7FFFFFFF, &n) && n > 0;
            o->router_pid = (long)n;
        } else if (strcmp(a, "--check") == 0) {
            ok = parse_uint(v, 0xFFFFFFFFu, &n);
            o->check = (unsigned)n;
        } else {
            fprintf(stderr, "wamp-bench: unknown option %s\n", a);
            return -1;
        }
        if (!ok) {
            fprintf(stderr, "wamp-bench: bad value for %s: %s\n", a, v);
            return -1;
        }
    }
    if (!o->url_str) {
        fprintf(stderr, "wamp-bench: --url is required\n");
        return -1;
    }
    if (!o->do_rpc && !o->do_pubsub) {
        o->do_rpc = o->do_pubsub = true;
    }
    if (o->n_inflight == 0) {
        o->inflight[0] = 1;
        o->inflight[1] = 100;
        o->n_inflight = 2;
    }
    if (o->n_sers == 0) {
        o->sers[0] = WAMP_SER_JSON;
        o->sers[1] = WAMP_SER_MSGPACK;
        o->n_sers = 2;
    }
    char why[200];
    if (o->url2_str && bench_ws_url_parse(o->url2_str, &o->url2, why, sizeof(why)) != WAMP_OK) {
        fprintf(stderr, "wamp-bench: --url2: %s\n", why);
        return 2;
    }
    if (bench_ws_url_parse(o->url_str, &o->url, why, sizeof(why)) != WAMP_OK) {
        fprintf(stderr, "wamp-bench: %s\n", why);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    bench_opts o;
    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    /* Library-global state, set once: libsodium (handshake nonces), a write to a socket the
     * router closed must not kill us (send() also uses MSG_NOSIGNAL). */
    if (sodium_init() < 0) {
        fprintf(stderr, "wamp-bench: sodium_init failed\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);

    printf("# wamp-bench url=%s realm=%s seconds=%.1f warmup=%.1f payload=%zu subscribers=%u "
           "window=%u ack=%s hot_path=%s/%s router_pid=%ld\n",
           o.url_str, o.realm, o.seconds, o.warmup, o.payload, o.subscribers, o.window,
           o.ack ? "yes" : "no", o.full_encode ? "codec-encode" : "template",
           o.full_decode ? "codec-decode" : "peek", o.router_pid);
    fflush(stdout);
    int failures = 0;
    for (size_t si = 0; si < o.n_sers; si++) {
        bench_result res;
        if (o.do_rpc) {
            for (size_t k = 0; k < o.n_inflight; k++) {
                run_one(&o, o.sers[si], SCEN_RPC, o.inflight[k], &res);
                print_result(&res, o.sers[si]);
                failures += strcmp(res.status, "ok") != 0 && strcmp(res.status, "unsupported");
            }
        }
        if (o.do_pubsub) {
            run_one(&o, o.sers[si], SCEN_PUBSUB, 0, &res);
            print_result(&res, o.sers[si]);
            failures += strcmp(res.status, "ok") != 0 && strcmp(res.status, "unsupported");
        }
    }
    return failures ? 1 : 0;
}
