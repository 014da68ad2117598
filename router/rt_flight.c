/* rt_flight.c: the flight recorder read from the wire capture (see rt_flight.h). */
#include "rt_flight.h"

#include <jansson.h>

#include "rt_core_int.h"
#include "rt_log.h"
#include "rt_trace_wire.h"
#include "trace_hub.h"
#include "wamp_codec.h"

/* The fed flight recorder, NULL when there is none (or it was deleted and started again: an
 * ordinary trace then). */
static trace *fed_trace(const rt_router *rt)
{
    trace *t = rt->flight_follow ? trace_hub_find(rt->hub, RT_FLIGHT_RECORDER_ID) : NULL;
    return t && trace_is_fed(t) ? t : NULL;
}

void rt_flight_attach(rt_router *rt)
{
    trace *t = rt->cfg->tracing_flight_from_wire && rt->wire
                       ? trace_hub_find(rt->hub, RT_FLIGHT_RECORDER_ID)
                       : NULL;
    if (t && trace_is_running(t) && (rt->flight_follow = rt_wire_follow_new())) {
        trace_hub_set_fed(rt->hub, t);
        RT_LOG_INFO(0,
                    "flight recorder read from the wire capture (%zu bytes): records are made "
                    "when the trace is read (wampscope.tracing.flight_recorder.from_wire)",
                    trace_wire_capacity(rt->wire));
    }
}

typedef struct feed {
    trace_hub *hub;
    trace *t;
    uint64_t skip; /* messages the limit drops before the first one handed in (trace_skip()) */
    uint64_t lost; /* messages lost (trace_lose(), once the walk is over) */
    uint64_t next; /* the capture's seq after the last one met */
} feed;

/* The messages the limit drops come first, once something follows them (a sync that reads
 * nothing gives no seqs). */
static void feed_skip(feed *f)
{
    if (f->skip) {
        trace_skip(f->t, f->skip);
        f->skip = 0;
    }
}

/* A connection event, for a flight recorder that keeps every message (as
 * trace_hub_on_connection() chooses). */
static void feed_connection(feed *f, const trace_record *rec)
{
    json_t *info = trace_keeps_all(f->t) && rec->bytes
                           ? json_loadb((const char *)rec->bytes, rec->len, 0, NULL)
                           : NULL;
    uint64_t seq;
    if (info) {
        (void)trace_connection(f->t, info, rec->pc_ns, rec->ts_ns, &seq);
    }
    json_decref(info);
}

/* One seq of the capture, for the flight recorder. */
static bool on_rec(void *ctx, uint64_t seq, const trace_record *rec)
{
    feed *f = ctx;
    f->next = seq + 1;
    if (!rec) {
        f->lost++;
        return true;
    }
    feed_skip(f);
    if (rec->msg_type == TRACE_MSG_CONNECTION) {
        feed_connection(f, rec);
        return trace_is_running(f->t);
    }
    trace_peer *p = rec->peer, *hello = NULL;
    if (p && rec->msg_type == WAMP_MSG_HELLO && rec->dir == TRACE_RX) {
        /* Named as when it came: the session it opened and the realm, no authentication yet. */
        p = hello = trace_peer_new(trace_peer_session_id(p), trace_peer_realm(p), NULL, NULL);
    }
    bool has = rec->flags & TRACE_CORR_HAS;
    trace_ctx c = {
            .direction = (trace_dir)rec->dir,
            .msg_type = rec->msg_type,
            .session_id = p ? trace_peer_session_id(p) : 0,
            .realm = p ? trace_peer_realm(p) : NULL,
            .authid = p ? trace_peer_authid(p) : NULL,
            .authrole = p ? trace_peer_authrole(p) : NULL,
            .uri = rec->uri ? trace_str_get(rec->uri) : NULL,
            .correlation = has ? rec->corr : NULL,
            .correlation_is_anchor = rec->flags & TRACE_CORR_ANCHOR,
    };
    trace_input in = {
            .pc_ns = rec->pc_ns,
            .ts_ns = rec->ts_ns,
            .peer = p,
            .uri = rec->uri,
            .correlation = c.correlation,
            .correlation_is_anchor = c.correlation_is_anchor,
            .correlation_is_last = rec->flags & TRACE_CORR_LAST,
            .ser = (wamp_ser)rec->wire_ser,
            .wire = rec->wire, /* a redacted copy, or NULL: the bytes as they went */
            .bytes = rec->wire ? NULL : rec->bytes,
            .len = rec->wire ? 0 : rec->len,
            .bytes_parsed = !rec->wire && rec->msg_type != 0,
            .dropped = rec->dropped,
    };
    json_t *msg = NULL;
    if (in.bytes && trace_get_action(f->t) &&
        (rec->msg_type == WAMP_MSG_ERROR || rec->msg_type == WAMP_MSG_ABORT) &&
        wamp_codec_decode_value(in.ser, in.bytes, in.len, &msg, NULL, 0) == WAMP_OK) {
        in.msg = msg; /* an action-level trace names an answer's error URI */
    }
    (void)trace_hub_feed(f->hub, f->t, &c, &in);
    json_decref(msg);
    trace_peer_unref(&hello);
    return trace_is_running(f->t);
}

uint64_t rt_router_flight_sync(rt_router *rt)
{
    trace *t = fed_trace(rt);
    if (!t || !trace_is_running(t)) {
        /* Stopped, deleted, or started again as an ordinary trace: it takes nothing more. */
        rt_wire_follow_free(rt->flight_follow);
        rt->flight_follow = NULL;
        return 0;
    }
    /* The routing facts gathered go in first: appending them may let the oldest chunks go, and
     * what is held is read now. */
    rt_router_wire_flush(rt);
    uint64_t from = rt_wire_follow_next_seq(rt->flight_follow);
    uint64_t end = trace_wire_next_seq(rt->wire);
    if (from >= end) {
        return 0;
    }
    feed f = {.hub = rt->hub, .t = t, .next = from};
    uint64_t first = trace_wire_first_seq(rt->wire);
    if (first > from) { /* let go before the follower reached them (its walk.skipped) */
        f.lost = first - from;
        f.next = first;
    }
    /* A trace that keeps every message and holds its last `limit` records: the ones before those
     * would only come in to be dropped, so they are read for their actions alone, and dropped
     * at once (as the limit would drop them). */
    size_t limit = trace_get_options(t)->limit;
    if (trace_keeps_all(t) && !trace_get_options(t)->max_records && limit && end - f.next > limit) {
        f.skip = end - limit - f.next;
        f.next = end - limit;
    }
    trace_wire_walk walk;
    (void)rt_router_wire_follow(rt, rt->flight_follow, f.next, on_rec, &f, &walk);
    if (rt_wire_follow_next_seq(rt->flight_follow) == from) {
        return 0; /* (the walk could not start: the same messages next time) */
    }
    if (trace_is_running(t)) {
        feed_skip(&f);
        if (f.next < end) {
            f.lost += end - f.next; /* (a walk ended early without memory: the follower is past) */
        }
    }
    trace_lose(t, f.lost);
    return end - from;
}
