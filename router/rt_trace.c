/* rt_trace.c: builds trace_ctx / trace_input for the hub and carries the current action's
 * correlation (see rt_trace.h). Runs only while a trace is running. */
#include "rt_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define RT_HAVE_TSC 1
#else
#define RT_HAVE_TSC 0
#endif

#include "rt_core_int.h"
#include "rt_realm.h"
#include "rt_trace_fast.h"
#include "rt_wirelog.h"
#include "wamp_codec.h"

uint64_t rt_trace_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t tsc_read(void)
{
#if RT_HAVE_TSC
    return __rdtsc();
#else
    return 0;
#endif
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A counter reading and CLOCK_MONOTONIC's at the same moment: the counter read on both sides of
 * the clock, the tightest of a few tries (a preemption between the two readings would skew the
 * anchor, and the scale measured from it, by as long as it lasted). */
static void clock_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        uint64_t a = tsc_read();
        uint64_t n = mono_ns();
        uint64_t b = tsc_read();
        if (b >= a && b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
    if (best == UINT64_MAX) { /* the counter went back each time */
        *tsc = 0;
        *ns = mono_ns();
    }
}

void rt_trace_clock_init(rt_trace_clock *c, bool own_clock)
{
    memset(c, 0, sizeof(*c));
    char name[32] = "";
    FILE *f =
            RT_HAVE_TSC && own_clock
                    ? fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r")
                    : NULL;
    if (f) {
        c->usable = fgets(name, sizeof(name), f) && strcmp(name, "tsc\n") == 0;
        fclose(f);
    }
    if (c->usable) {
        clock_pair(&c->tsc0, &c->ns0);
    }
}

/* Takes a new anchor (at least 10 ms after the last one: the scale between them is measured
 * then); returns CLOCK_MONOTONIC's reading at it. Spans too long for 64-bit arithmetic (over 2 s:
 * a stalled loop) only re-anchor; a counter that went back turns the counter off. */
static uint64_t clock_anchor(rt_trace_clock *c)
{
    uint64_t tsc, ns;
    clock_pair(&tsc, &ns);
    uint64_t dt = tsc - c->tsc0, dns = ns - c->ns0;
    if (tsc < c->tsc0 || ns < c->ns0) {
        c->usable = c->on = false;
        return ns;
    }
    if (dns < 10000000u) {
        return ns;
    }
    if (dns < (1u << 31) && dt > dns) { /* over 1 GHz (an invariant TSC is): mult < 2^32 */
        c->mult = (dns << 32) / dt;
        c->on = true;
    }
    c->tsc0 = tsc;
    c->ns0 = ns;
    return ns;
}

/* The trace clock's reading (see rt_trace_clock). */
static uint64_t pc_ns(rt_router *rt)
{
    rt_trace_clock *c = &rt->tclock;
    uint64_t ns;
    uint64_t dt = tsc_read() - c->tsc0;
    if (c->on && dt < (1ull << 32)) {
        /* mult < 2^32 (under a ns per count): the product fits. */
        ns = c->ns0 + ((dt * c->mult) >> 32);
    } else {
        ns = c->usable ? mono_ns() : rt_router_now_us(rt) * 1000u;
    }
    ns = ns > c->last ? ns : c->last;
    c->last = ns;
    return ns;
}

/* The wall clock at the trace clock's reading pc. */
static uint64_t wall_of(const rt_router *rt, uint64_t pc)
{
    return (uint64_t)((int64_t)pc + rt->wall_offset_ns);
}

uint64_t rt_trace_ts_now(rt_router *rt)
{
    return wall_of(rt, pc_ns(rt));
}

uint64_t rt_trace_pc_now(rt_router *rt)
{
    return pc_ns(rt);
}

uint64_t rt_trace_wall_of(const rt_router *rt, uint64_t pc)
{
    return wall_of(rt, pc);
}

void rt_trace_sync_clocks(rt_router *rt)
{
    rt_trace_clock *c = &rt->tclock;
    uint64_t now = c->usable ? clock_anchor(c) : rt_router_now_us(rt) * 1000u;
    rt->wall_offset_ns = (int64_t)(rt_trace_wall_ns() - now);
}

void rt_trace_connection(rt_router *rt, const json_t *info)
{
    uint64_t pc = pc_ns(rt);
    trace_hub_on_connection(rt->hub, info, pc, wall_of(rt, pc));
}

/* The filter's view of a message of s. */
static void fill_ctx(rt_session *s, trace_dir dir, int type, trace_ctx *c)
{
    const rt_cur_action *a = &s->rt->cur;
    c->direction = dir;
    c->msg_type = type;
    c->session_id = s->id;
    c->realm = rt_wirelog_realm(s);
    c->authid = s->authid;
    c->authrole = s->authrole;
    c->uri = a->uri_text;
    c->correlation = a->set ? a->uuid : NULL;
    c->correlation_is_anchor = false;
}

/* The clock reading of the message being handled, taken now if it has none yet. */
static void read_clock(rt_router *rt)
{
    if (!rt->cur.now_set) {
        rt->cur.now_ns = pc_ns(rt);
        rt->cur.now_set = true;
    }
}

/* The trace input fields common to rx and tx; only for a message some trace keeps (this is
 * where the clock is read). */
static void fill_input(rt_session *s, trace_input *in)
{
    rt_router *rt = s->rt;
    const rt_cur_action *a = &rt->cur;
    /* Copied from a zero struct: GCC turns a memset() of it into a slow `rep stos`. */
    static const trace_input zero;
    *in = zero;
    read_clock(rt);
    in->pc_ns = rt->cur.now_ns;
    in->ts_ns = wall_of(rt, in->pc_ns);
    in->peer = s->tpeer;
    in->peer_slot = s->realm ? &s->tpeer : NULL;
    in->uri = a->uri;
    in->uri_slot = &rt->cur.uri;
    in->correlation = a->set ? a->uuid : NULL;
    in->callee_node = a->callee_node;
    in->ser = s->ser;
}

/* rt_trace_action_uri() for the first record a trace keeps of the action of s's message: s's
 * memo when the session's last such action had the same URI (a session calls or publishes the
 * same few URIs over and over), else the hub's, which then becomes the memo. */
static __attribute__((noinline)) void action_uri(rt_router *rt, rt_session *s)
{
    trace_str *m = s->tr_uri;
    if (m && trace_str_is(m, rt->cur.uri_text, rt->cur.uri_len)) {
        rt->cur.uri = trace_str_ref(m);
    } else if (rt_trace_action_uri(rt)) {
        trace_str_unref(&s->tr_uri);
        s->tr_uri = trace_str_ref(rt->cur.uri);
    }
}

/* s's standing with the fast trace (rt_session.tr_realm), found now: RT_TRACE_REALM_UNKNOWN
 * without memory for its peer (asked again next time). */
static __attribute__((noinline)) rt_trace_realm fast_standing(rt_session *s)
{
    const char *realm = rt_realm_name(s->realm);
    if (trace_hub_is_mgmt_realm(s->rt->hub, realm)) {
        return (rt_trace_realm)(s->tr_realm = RT_TRACE_REALM_MGMT);
    }
    if (!s->tpeer && !(s->tpeer = trace_peer_new(s->id, realm, s->authid, s->authrole))) {
        return RT_TRACE_REALM_UNKNOWN;
    }
    return (rt_trace_realm)(s->tr_realm = RT_TRACE_REALM_TRACED);
}

/* Hands a message of the joined session s to the hub's fast trace (trace_hub_record_fast(),
 * only while trace_hub_fast_ready()): rx with its bytes (data, len), tx with the buffer encoded
 * for s (wire) and the encodings e made; anchor / last as the correlation flags. true when the
 * hub is done with it; false: the caller records it the general way. */
static inline __attribute__((always_inline)) bool
record_fast(rt_session *s, trace_dir dir, int type, const void *data, size_t len,
            const rt_encoded *e, const wamp_buf *wire, const char *drop, bool anchor, bool last)
{
    rt_router *rt = s->rt;
    if (s->tr_realm != RT_TRACE_REALM_TRACED) {
        rt_trace_realm k = s->tr_realm ? (rt_trace_realm)s->tr_realm : fast_standing(s);
        if (k != RT_TRACE_REALM_TRACED) {
            /* The management realm's messages: done (kept by no fast trace); no peer: the
             * general way. */
            return k == RT_TRACE_REALM_MGMT;
        }
    }
    read_clock(rt);
    if (!rt->cur.uri && rt->cur.uri_text) {
        action_uri(rt, s);
    }
    const rt_cur_action *a = &rt->cur;
    /* Every field the hub reads written once (no zeroed copy first). */
    trace_fast f;
    trace_rec_view *v = &f.v;
    v->pc_ns = a->now_ns;
    v->ts_ns = wall_of(rt, a->now_ns);
    v->peer = s->tpeer;
    v->uri = a->uri;
    v->dropped = drop;
    v->corr = a->uuid;
    v->flags = a->set ? (uint8_t)(TRACE_CORR_HAS | (anchor ? TRACE_CORR_ANCHOR : 0) |
                                  (last ? TRACE_CORR_LAST : 0))
                      : 0;
    v->wire = wire;
    v->bytes = data;
    v->len = len;
    v->dir = (uint8_t)dir;
    v->msg_type = (uint8_t)type;
    v->wire_ser = (uint8_t)s->ser;
    v->ser_bytes[0] = 0;
    for (int i = 1; i < WAMP_SER_COUNT; i++) {
        size_t n = e && e->buf[i] ? wamp_buf_len(e->buf[i]) : 0;
        v->ser_bytes[i] = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    }
    return trace_hub_record_fast(rt->hub, &f);
}

/* Records the received message m (NULL: undecodable; data/len its bytes) for the traces the
 * hub has just matched against c. The hub reads the envelope as a list (trace_input.msg:
 * redaction, an action's error URI, the payload strip), which the receive path does not make
 * (wamp_msg_parse_bytes_fields()): made here. Without memory the record is made from the bytes
 * alone (the hub decodes them where it must). */
static void record_rx(rt_session *s, const trace_ctx *c, wamp_msg *m, const void *data, size_t len,
                      bool last)
{
    if (m) {
        (void)wamp_msg_make_root(m);
    }
    trace_input in;
    fill_input(s, &in);
    in.correlation_is_anchor = c->correlation_is_anchor;
    in.correlation_is_last = last;
    in.bytes = data;
    in.len = len;
    in.msg = m ? m->root : NULL;
    (void)trace_hub_record_matched(s->rt->hub, c, &in);
}

/* Records the waiting PUBLISH (rt_trace_pending) with its "last" flag: last_known says whether
 * the caller knows it (last), else the broker is asked (something happens to the action before
 * anything is sent: a nested action). Runs while rt->cur is still the PUBLISH's action. */
static void flush_pending(rt_router *rt, bool last_known, bool last)
{
    rt_trace_pending p = rt->pend;
    rt->pend.s = NULL;
    rt_session *s = p.s;
    if (!last_known) {
        last = s->realm && !json_is_true(json_object_get(p.m->dict, "acknowledge")) &&
               !rt->routing.publish_has_receiver(rt_realm_broker(s->realm), s, p.m);
    }
    if (trace_hub_fast_ready(rt->hub) &&
        record_fast(s, TRACE_RX, WAMP_MSG_PUBLISH, p.data, p.len, NULL, NULL, NULL, true, last)) {
        return;
    }
    /* The hub's hits are still the PUBLISH's unless something was matched since (the usual case,
     * its first EVENT, matches after this): then matched again. */
    trace_ctx c;
    fill_ctx(s, TRACE_RX, WAMP_MSG_PUBLISH, &c);
    c.correlation_is_anchor = true;
    if (trace_hub_match_gen(rt->hub) == p.match_gen || trace_hub_match(rt->hub, &c) > 0) {
        record_rx(s, &c, p.m, p.data, p.len, last);
    }
}

/* rt_trace_action_open() where no action is open and no PUBLISH waits (just closed). */
static inline void action_set(rt_router *rt, const uint8_t uuid[TRACE_UUID_LEN], trace_str *uri)
{
    rt->cur.set = true;
    rt->cur.last = false;
    memcpy(rt->cur.uuid, uuid, TRACE_UUID_LEN);
    rt->cur.uri = uri ? trace_str_ref(uri) : NULL;
    rt->cur.uri_text = uri ? trace_str_get(uri) : NULL;
    rt->cur.uri_len = uri ? trace_str_len(uri) : 0;
}

void rt_trace_action_open(rt_router *rt, const uint8_t uuid[TRACE_UUID_LEN], trace_str *uri)
{
    if (rt->pend.s) {
        flush_pending(rt, false, false);
    }
    rt_trace_action_close(rt);
    action_set(rt, uuid, uri);
}

trace_str *rt_trace_action_uri(rt_router *rt)
{
    if (!rt->cur.uri && rt->cur.uri_text) {
        rt->cur.uri = trace_hub_uri(rt->hub, rt->cur.uri_text, rt->cur.uri_len);
    }
    return rt->cur.uri;
}

void rt_trace_action_close(rt_router *rt)
{
    if (rt->pend.s) {
        flush_pending(rt, true, true); /* nothing was sent after it */
    }
    trace_str_unref(&rt->cur.uri);
    rt->cur.uri_text = NULL;
    rt->cur.uri_len = 0;
    rt->cur.set = false;
    rt->cur.last = false;
    rt->cur.meta_pending = false;
    rt->cur.realm = NULL;
    rt->cur.callee_node = NULL;
}

/* Sets a new anchored action for uri of len bytes (NULL = none), borrowed from the message being
 * handled (which outlives the action), where none is open and no PUBLISH waits. */
static inline void anchor_set(rt_router *rt, const char *uri, size_t len)
{
    uint8_t uuid[TRACE_UUID_LEN];
    trace_uuid_gen_next(&rt->uuids, uuid);
    action_set(rt, uuid, NULL);
    rt->cur.uri_text = uri;
    rt->cur.uri_len = len;
}

void rt_trace_action_open_new(rt_router *rt)
{
    uint8_t uuid[TRACE_UUID_LEN];
    trace_uuid_gen_next(&rt->uuids, uuid);
    rt_trace_action_open(rt, uuid, NULL);
}

void rt_trace_action_stash(rt_router *rt, rt_cur_action *saved)
{
    if (rt->pend.s) {
        flush_pending(rt, false, false);
    }
    *saved = rt->cur;
    rt->cur.set = false;
    rt->cur.last = false;
    rt->cur.meta_pending = false;
    rt->cur.uri = NULL; /* the reference moved to *saved */
    rt->cur.uri_text = NULL;
    rt->cur.uri_len = 0;
    rt->cur.realm = NULL;
    rt->cur.callee_node = NULL;
}

void rt_trace_action_unstash(rt_router *rt, rt_cur_action *saved)
{
    rt_trace_action_close(rt);
    /* The clock reading belongs to the message being handled, not to the action. */
    saved->now_set = rt->cur.now_set;
    saved->now_ns = rt->cur.now_ns;
    rt->cur = *saved;
}

/* anchor_set() for a URI owned by router state that the action may free (an UNSUBSCRIBE can
 * delete its subscription): copied now. */
static void anchor_set_copy(rt_router *rt, const char *uri)
{
    anchor_set(rt, uri, uri ? strlen(uri) : 0);
    (void)rt_trace_action_uri(rt); /* NULL on OOM: the records just lack the URI */
    rt->cur.uri_text = rt->cur.uri ? trace_str_get(rt->cur.uri) : NULL;
    rt->cur.uri_len = rt->cur.uri ? trace_str_len(rt->cur.uri) : 0;
}

/* Sets the action a pending call kept (NULL or not set: none), where none is open and no
 * PUBLISH waits. */
static void mark_set(rt_router *rt, const rt_action_mark *m)
{
    if (m && rt_action_mark_is_set(m)) {
        action_set(rt, m->id, m->ref);
    }
}

/* --- The action observer -------------------------------------------------------------------- */

_Static_assert(RT_ACTION_ID_LEN == TRACE_UUID_LEN, "an action's id is its correlation UUID");

static void obs_last(void *ctx, rt_router *rt)
{
    (void)ctx;
    rt->cur.last = true;
}

static void obs_mark(void *ctx, rt_router *rt, rt_action_mark *out)
{
    (void)ctx;
    if (!rt->cur.set) {
        return;
    }
    memcpy(out->id, rt->cur.uuid, RT_ACTION_ID_LEN);
    trace_str *uri = rt_trace_action_uri(rt); /* outlives the message being handled */
    out->ref = uri ? trace_str_ref(uri) : NULL;
}

static void obs_forget(void *ctx, rt_action_mark *m)
{
    (void)ctx;
    trace_str *uri = m->ref;
    trace_str_unref(&uri);
}

static void obs_resume(void *ctx, rt_router *rt, const rt_action_mark *m)
{
    (void)ctx;
    if (m && rt_action_mark_is_set(m)) {
        rt_trace_action_open(rt, m->id, m->ref);
    }
}

static void obs_end(void *ctx, rt_router *rt)
{
    (void)ctx;
    rt_trace_action_close(rt);
}

static void *obs_stash(void *ctx, rt_router *rt)
{
    (void)ctx;
    if (!rt->cur.set && !rt->pend.s) {
        rt->cur.last = false; /* nothing to keep (no trace ran): nothing allocated */
        rt->cur.meta_pending = false;
        return NULL;
    }
    rt_cur_action *saved = malloc(sizeof(*saved));
    if (!saved) {
        rt_trace_action_close(rt); /* its later records lack the correlation */
        return NULL;
    }
    rt_trace_action_stash(rt, saved);
    return saved;
}

static void obs_restore(void *ctx, rt_router *rt, void *saved)
{
    (void)ctx;
    if (!saved) {
        rt_trace_action_close(rt);
        return;
    }
    rt_trace_action_unstash(rt, saved);
    free(saved);
}

static void obs_open_at(void *ctx, rt_router *rt, const uint8_t id[RT_ACTION_ID_LEN],
                        const char *uri, const char *node)
{
    (void)ctx;
    rt_trace_action_open(rt, id, NULL);
    rt->cur.uri_text = uri;
    rt->cur.uri_len = uri ? strlen(uri) : 0;
    rt->cur.callee_node = node;
}

static void obs_message_edge(void *ctx, rt_router *rt)
{
    (void)ctx;
    rt->cur.now_set = false;
}

wamp_err rt_trace_attach(rt_router *rt)
{
    rt_observer o = {.listening = trace_hub_active_word(rt->hub),
                     .action_last = obs_last,
                     .action_mark = obs_mark,
                     .action_forget = obs_forget,
                     .action_resume = obs_resume,
                     .action_open_at = obs_open_at,
                     .message_edge = obs_message_edge,
                     .action_end = obs_end,
                     .action_stash = obs_stash,
                     .action_restore = obs_restore};
    return rt_observers_add(&rt->observers, &o);
}

/* --- Received and sent messages ------------------------------------------------------------- */

/* Opens the action m belongs to (an anchor: a fresh one; an answer: the one its request kept),
 * after closing the one before; returns whether m is its action's anchor. */
static bool rx_action(rt_router *rt, rt_session *s, const wamp_msg *m)
{
    bool anchor = false;
    rt_trace_action_close(rt);
    if (!m) {
        return false;
    }
    switch (m->type) {
    case WAMP_MSG_HELLO:
        anchor_set(rt, NULL, 0);
        rt->cur.realm = m->uri;
        memcpy(s->hello_corr, rt->cur.uuid, TRACE_UUID_LEN);
        s->hello_corr_set = true;
        anchor = true;
        break;
    case WAMP_MSG_PUBLISH:
    case WAMP_MSG_CALL:
    case WAMP_MSG_SUBSCRIBE:
    case WAMP_MSG_REGISTER:
        anchor_set(rt, m->uri, m->uri_len);
        anchor = true;
        break;
    case WAMP_MSG_UNSUBSCRIBE:
        anchor_set_copy(rt, s->realm ? rt->routing.topic_of(s, m->id2) : NULL);
        anchor = true;
        break;
    case WAMP_MSG_UNREGISTER:
        anchor_set_copy(rt, s->realm ? rt->routing.procedure_of(s, m->id2) : NULL);
        anchor = true;
        break;
    case WAMP_MSG_YIELD:
    case WAMP_MSG_ERROR:
        if (s->realm && (m->type == WAMP_MSG_YIELD || m->req_type == WAMP_MSG_INVOCATION)) {
            mark_set(rt, rt->routing.call_action(rt_realm_dealer(s->realm), s, m->id));
        }
        break;
    case WAMP_MSG_CANCEL:
        if (s->realm) {
            mark_set(rt, rt->routing.caller_action(rt_realm_dealer(s->realm), s, m->id));
        }
        break;
    case WAMP_MSG_GOODBYE:
        /* A joined session's GOODBYE: its reply and the leave's meta events follow it. (A
         * GOODBYE answering the router's own is no new action.) */
        if (s->state == RT_SESSION_JOINED) {
            anchor_set(rt, NULL, 0);
            anchor = true;
        }
        break;
    case WAMP_MSG_AUTHENTICATE:
        if (s->hello_corr_set) {
            action_set(rt, s->hello_corr, NULL);
            rt->cur.realm = s->auth ? rt_auth_pending_realm(s->auth) : NULL;
        }
        break;
    default:
        break;
    }
    return anchor;
}

/* rt_trace_rx() for a message the fast path leaves (trace_hub_record_fast()), or while it does not
 * serve: matched against every trace. Out of line and cold: the flight recorder alone never
 * comes here, and its path stays small in the instruction cache. */
static __attribute__((noinline, cold)) void rx_general(rt_session *s, wamp_msg *m, const void *data,
                                                       size_t len, bool anchor)
{
    rt_router *rt = s->rt;
    trace_ctx c;
    fill_ctx(s, TRACE_RX, m ? (int)m->type : 0, &c);
    c.correlation_is_anchor = anchor;
    if (trace_hub_match(rt->hub, &c) == 0) {
        return;
    }
    if (m && m->type == WAMP_MSG_PUBLISH && s->realm) {
        /* Its record waits until it is known whether anything follows (rt_trace_pending). */
        rt->pend = (rt_trace_pending){.s = s,
                                      .m = m,
                                      .data = data,
                                      .len = len,
                                      .match_gen = trace_hub_match_gen(rt->hub)};
        read_clock(rt); /* its time is when it came in */
        return;
    }
    record_rx(s, &c, m, data, len, false);
}

void rt_trace_rx(rt_session *s, wamp_msg *m, const void *data, size_t len)
{
    rt_router *rt = s->rt;
    bool anchor = rx_action(rt, s, m);
    if (m && s->realm && trace_hub_fast_ready(rt->hub)) {
        if (m->type == WAMP_MSG_PUBLISH) {
            /* Its record waits (rt_trace_pending); flush_pending() hands it to the fast path.
             * No match was made for it: a match_gen that never comes makes flush_pending()
             * match it should the fast path leave it. */
            rt->pend = (rt_trace_pending){
                    .s = s, .m = m, .data = data, .len = len, .match_gen = UINT64_MAX};
            read_clock(rt);
            return;
        }
        if (record_fast(s, TRACE_RX, (int)m->type, data, len, NULL, NULL, NULL, anchor, false)) {
            return;
        }
    }
    rx_general(s, m, data, len, anchor);
}

/* rt_trace_tx() for a message the fast path leaves, or while it does not serve (as rx_general()).
 */
static __attribute__((noinline, cold)) void
tx_general(rt_session *s, const rt_encoded *e, const wamp_buf *wire, const char *drop, bool last)
{
    rt_router *rt = s->rt;
    trace_ctx c;
    fill_ctx(s, TRACE_TX, e->type, &c);
    if (trace_hub_match(rt->hub, &c) > 0) {
        trace_input in;
        fill_input(s, &in);
        in.correlation_is_last = last;
        in.wire = wire;
        in.msg = e->msg;
        for (int i = 1; i < WAMP_SER_COUNT; i++) {
            in.ser_bytes[i] = e->buf[i] ? wamp_buf_len(e->buf[i]) : 0;
        }
        in.dropped = drop;
        (void)trace_hub_record_matched(rt->hub, &c, &in);
    }
}

void rt_trace_tx(rt_session *s, const rt_encoded *e, const wamp_buf *wire, const char *drop)
{
    rt_router *rt = s->rt;
    if (rt->pend.s) {
        /* This message follows it. (And is no repeat: recording the PUBLISH forgot whatever
         * the hub kept for one, and what it kept before was of another action.) */
        flush_pending(rt, true, false);
    }
    bool last = rt_trace_sends_last(rt);
    if (!wire || !s->realm || !trace_hub_fast_ready(rt->hub) ||
        !record_fast(s, TRACE_TX, e->type, NULL, 0, e, wire, drop, false, last)) {
        tx_general(s, e, wire, drop, last);
    }
    /* "last" marks one message: the next one sent is not the last unless marked again. */
    rt->cur.last = false;
}

void rt_trace_tx_dropped_queued(rt_session *s, const wamp_buf *wire, const char *drop)
{
    rt_router *rt = s->rt;
    if (rt->pend.s) {
        flush_pending(rt, false, false); /* a drop is no follower: the broker says */
    }
    /* Decoded here, on the drop path and only while a trace runs: the type, and for an EVENT
     * its topic (Details.topic for a pattern subscription, else the subscription's topic). */
    wamp_msg m;
    char why[WAMP_WHY_LEN];
    bool ok = wamp_codec_decode_msg(s->ser, wamp_buf_cdata(wire), wamp_buf_len(wire), &m, why,
                                    sizeof(why)) == WAMP_OK;
    const char *uri = NULL;
    if (ok && m.type == WAMP_MSG_EVENT && s->realm) {
        uri = json_string_value(json_object_get(m.dict, "topic"));
        uri = uri ? uri : rt->routing.topic_of(s, m.id);
    }
    trace_ctx c;
    fill_ctx(s, TRACE_TX, ok ? (int)m.type : 0, &c);
    c.uri = uri;
    c.correlation = NULL; /* as in.correlation below: no action trace tracks it */
    if (trace_hub_match(rt->hub, &c) > 0) {
        trace_input in;
        fill_input(s, &in);
        /* Not the current action's message: no correlation (the action that queued it is
         * over), and the URI of this message only for an EVENT. */
        in.uri = NULL;
        in.uri_slot = NULL;
        in.correlation = NULL;
        in.wire = wire;
        in.msg = ok ? m.root : NULL;
        in.dropped = drop;
        (void)trace_hub_record_matched(rt->hub, &c, &in);
    }
    if (ok) {
        wamp_msg_fini(&m);
    }
}
