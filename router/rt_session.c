/* rt_session.c: the per-session outgoing path and the session's own state: accessors, encoding
 * (once per serializer), the send queue with its limits, closing, and the refusals every layer
 * sends (protocol violation, limit reached). The state machine that handles what a session
 * receives is rt_session_fsm.c, above the broker and dealer it dispatches to.
 *
 * rt_session_close() never unlinks the session from its realm: routing loops may be iterating
 * it. The realm is left in rt_session_on_closed() (or at a GOODBYE), and routing skips CLOSED
 * sessions until then. */
#include "rt_session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "rt_broker.h"
#include "rt_core_int.h"
#include "rt_dealer.h"
#include "rt_log.h"
#include "rt_options.h"
#include "rt_realm.h"
#include "rt_trace_fast.h"
#include "rt_trace_wire.h"
#include "rt_wirelog.h"
#include "wamp_codec.h"
#include "wamp_id.h"
#include "wamp_rd.h"
#include "wamp_uri.h"
#include "wamp_wr.h"

uint64_t rt_session_id(const rt_session *s)
{
    return s->id;
}

rt_session_state rt_session_state_get(const rt_session *s)
{
    return s->state;
}

wamp_ser rt_session_ser(const rt_session *s)
{
    return s->ser;
}

rt_realm *rt_session_realm(const rt_session *s)
{
    return s->realm;
}

const char *rt_session_authid(const rt_session *s)
{
    return s->authid;
}

const char *rt_session_authrole(const rt_session *s)
{
    return s->authrole;
}

const rt_peer *rt_session_peer(const rt_session *s)
{
    return &s->peer;
}

rt_router *rt_session_router(const rt_session *s)
{
    return s->rt;
}

/* --- Outgoing ------------------------------------------------------------------------------- */

void rt_encoded_init(rt_encoded *e, json_t *msg_take)
{
    memset(e, 0, sizeof(*e));
    e->msg = msg_take;
    e->type = (int)json_integer_value(json_array_get(msg_take, 0));
}

rt_payload rt_payload_of(const wamp_msg *m)
{
    if (!m->ser || (!m->args_raw.len && !m->kwargs_raw.len)) {
        return (rt_payload){.ser = 0};
    }
    return (rt_payload){.ser = m->ser, .args = m->args_raw, .kwargs = m->kwargs_raw};
}

wamp_err rt_payload_dup(const rt_payload *p, rt_payload *out)
{
    memset(out, 0, sizeof(*out));
    if (!p->ser) {
        return WAMP_OK;
    }
    wamp_buf *b = wamp_buf_new(p->args.len + p->kwargs.len);
    if (!b || wamp_buf_append(&b, p->args.p, p->args.len, SIZE_MAX) != WAMP_OK ||
        wamp_buf_append(&b, p->kwargs.p, p->kwargs.len, SIZE_MAX) != WAMP_OK) {
        wamp_buf_unref(&b);
        return WAMP_ENOMEM;
    }
    const unsigned char *d = wamp_buf_cdata(b);
    *out = (rt_payload){.ser = p->ser,
                        .args = {p->args.len ? d : NULL, p->args.len},
                        .kwargs = {p->kwargs.len ? d + p->args.len : NULL, p->kwargs.len},
                        .own = b};
    return WAMP_OK;
}

void rt_payload_fini(rt_payload *p)
{
    wamp_buf_unref(&p->own);
    memset(p, 0, sizeof(*p));
}

void rt_encoded_init_payload(rt_encoded *e, json_t *msg_take, const rt_payload *p)
{
    rt_encoded_init(e, msg_take);
    if (p && p->ser) {
        e->payload = *p;
        e->payload.own = NULL; /* a view: the caller keeps p alive */
    }
}

void rt_encoded_init_fields(rt_encoded *e, wamp_msg_type type, uint64_t id, uint64_t id2,
                            json_t *dict_take, const rt_payload *p)
{
    memset(e, 0, sizeof(*e));
    e->fields = true;
    e->type = (int)type;
    e->id[0] = id;
    e->id[1] = id2;
    e->dict = dict_take;
    if (p && p->ser) {
        e->payload = *p;
        e->payload.own = NULL; /* a view: the caller keeps p alive */
    }
}

/* Opens the message's list, extra elements more than the envelope's, and writes the
 * envelope's elements (the caller writes the extra ones and closes the list). */
static void encode_envelope(wamp_wr *w, const rt_encoded *e, size_t extra)
{
    if (!e->fields) {
        size_t n = json_array_size(e->msg);
        wamp_wr_array(w, n + extra);
        for (size_t i = 0; i < n; i++) {
            wamp_wr_json(w, json_array_get(e->msg, i));
        }
        return;
    }
    /* Ids are at most 2^53 (wamp_id.h): written as the codecs write a jansson integer. */
    size_t n_ids = e->id[1] ? 2 : 1;
    wamp_wr_array(w, 2 + n_ids + extra);
    wamp_wr_int(w, e->type);
    for (size_t i = 0; i < n_ids; i++) {
        wamp_wr_int(w, (int64_t)e->id[i]);
    }
    if (e->dict) {
        wamp_wr_json(w, e->dict);
    } else {
        wamp_wr_map(w, 0);
        wamp_wr_end(w);
    }
}

wamp_err rt_encoded_encode(rt_encoded *e, wamp_ser ser)
{
    if (e->buf[ser]) {
        return WAMP_OK;
    }
    const rt_payload *p = &e->payload;
    if (!p->ser && !e->fields) {
        return wamp_codec_encode(ser, e->msg, &e->buf[ser]);
    }
    if (e->fields && !e->dict && (!p->ser || p->ser == ser)) {
        /* The common case (no Details, the payload in the receiver's serializer): the bytes are
         * put together without a writer where the serializer allows (JSON, MessagePack). */
        wamp_err err = wamp_wr_ids_message((int)ser, e->type, e->id[0], e->id[1], p->args.p,
                                           p->args.len, p->kwargs.p, p->kwargs.len, &e->buf[ser]);
        if (err != WAMP_EINVAL) {
            return err;
        }
    }
    /* The envelope, then the payload: ArgumentsKw needs Arguments before it ([] if absent). */
    bool has_kw = p->kwargs.len > 0;
    bool has_args = p->args.len > 0 || has_kw;
    wamp_wr w;
    wamp_wr_init(&w, (int)ser, p->args.len + p->kwargs.len + 64, 0);
    encode_envelope(&w, e, (size_t)has_args + has_kw);
    if (p->args.len) {
        wamp_wr_transcode(&w, (int)p->ser, p->args.p, p->args.len);
    } else if (has_args) {
        wamp_wr_array(&w, 0);
        wamp_wr_end(&w);
    }
    if (has_kw) {
        wamp_wr_transcode(&w, (int)p->ser, p->kwargs.p, p->kwargs.len);
    }
    wamp_wr_end(&w);
    wamp_err err = wamp_wr_finish_buf(&w, &e->buf[ser]);
    wamp_wr_fini(&w);
    return err;
}

void rt_encoded_fini(rt_encoded *e)
{
    for (size_t i = 0; i < WAMP_SER_COUNT; i++) {
        wamp_buf_unref(&e->buf[i]);
    }
    json_decref(e->msg);
    e->msg = NULL;
    json_decref(e->dict);
    e->dict = NULL;
}

/* A message the router could not encode (or a closed session's, not encoded for it) is recorded
 * from its envelope as a jansson list (trace_input.msg), which the hub encodes: for an envelope
 * given by its fields, one is made from them (once per rt_encoded, and only then). A message
 * with wire bytes needs none (the hub reads those bytes). On allocation failure msg stays NULL:
 * the record then keeps no bytes. */
static __attribute__((noinline, cold)) void envelope_list(rt_encoded *e)
{
    if (!e->fields || e->msg) {
        return;
    }
    json_t *a = json_array();
    bool ok = a && json_array_append_new(a, wamp_msg_code_value(e->type)) == 0;
    for (size_t i = 0; ok && i < 2 && e->id[i]; i++) {
        ok = json_array_append_new(a, json_integer((json_int_t)e->id[i])) == 0;
    }
    /* json_array_append_new() consumes the value even when it fails. */
    if (!ok || json_array_append_new(a, e->dict ? json_incref(e->dict) : wamp_rd_empty_map())) {
        json_decref(a);
        a = NULL;
    }
    e->msg = a;
}

/* Records a message for s while a trace runs (the one branch when none does): a fan-out's
 * next receiver inline (rt_trace_fast.h), anything else in rt_trace.c. */
static inline __attribute__((always_inline)) void trace_tx(rt_session *s, rt_encoded *e,
                                                           const wamp_buf *wire, const char *drop)
{
    if (trace_hub_is_active(s->rt->hub) &&
        (s->rt->pend.s || e->type != WAMP_MSG_EVENT || !rt_trace_tx_repeat(s, wire, drop))) {
        if (!wire) {
            envelope_list(e); /* nothing was encoded: the hub encodes the list, if it can */
        }
        rt_trace_tx(s, e, wire, drop);
    }
    if (drop && s->wire) {
        rt_wire_dropped(s, e->type, wire,
                        drop); /* (what was sent, the capture has from the wire) */
    }
}

/* Encodes e for s's serializer unless done already (logged and traced on failure). */
wamp_err rt_session_encode_for(rt_session *s, rt_encoded *e)
{
    if (e->buf[s->ser]) {
        return WAMP_OK;
    }
    wamp_err err = rt_encoded_encode(e, s->ser);
    if (err != WAMP_OK) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(s->rt), "outgoing message not encodable",
                       s->id, "cannot encode outgoing message: %s", wamp_strerror(err));
        trace_tx(s, e, NULL, "encode_failed");
    }
    return err;
}

/* e, encoded for s, is longer than s can receive (its transport's max_message_size, or the
 * length a RawSocket client announced). */
bool rt_session_exceeds_peer_limit(const rt_session *s, const rt_encoded *e)
{
    return s->peer.max_message_size && wamp_buf_len(e->buf[s->ser]) > s->peer.max_message_size;
}

/* The rate of the "EVENTs dropped" summary log line, per session. */
#define RT_DROP_LOG_INTERVAL_US (10u * 1000000u)

/* Logs the EVENTs dropped for s since the last line: the first drop at once, then at most one
 * line per RT_DROP_LOG_INTERVAL_US (and a last one when the session closes). */
void rt_session_log_drops(rt_session *s, bool closing)
{
    uint64_t n = s->events_dropped - s->events_dropped_logged;
    if (n == 0) {
        return;
    }
    /* Per session as above, and per line across sessions (RT_LOG_LIMITED): many slow
     * consumers at once cannot flood the log either. */
    uint64_t now = rt_router_now_us(s->rt);
    if (s->events_dropped_logged == 0) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, now, "slow consumer dropping EVENTs",
                         s->id,
                         "slow consumer: outgoing queue limit reached (%zu messages, %zu bytes "
                         "queued); dropping its oldest queued EVENTs (limits.slow_consumer)",
                         s->outq.count, s->outq.bytes);
    } else if (closing) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, now,
                         "slow consumer's EVENTs dropped", s->id,
                         "slow consumer: %" PRIu64 " EVENTs dropped in all", s->events_dropped);
    } else {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, now, "more EVENTs dropped", s->id,
                         "slow consumer: %" PRIu64 " more EVENTs dropped (%" PRIu64 " in all, %zu "
                         "messages queued)",
                         n, s->events_dropped, s->outq.count);
    }
    s->events_dropped_logged = s->events_dropped;
}

/* limits.slow_consumer "drop_oldest_events": a message of len bytes does not fit s's queue.
 * Drops queued EVENTs, oldest first and never the head, until it fits, unless even dropping
 * them all would not make room (then nothing is dropped and the caller disconnects). Any new
 * message may displace EVENTs: a RESULT or PUBLISHED must not cost the session its connection
 * where an EVENT would not. */
static void make_room(rt_session *s, size_t len)
{
    rt_router *rt = s->rt;
    if (rt->cfg->limits.slow_consumer != RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS ||
        !rt_outq_can_make_room(&s->outq, len)) {
        return;
    }
    while (!rt_outq_fits(&s->outq, len)) {
        wamp_buf *victim = rt_outq_take_droppable(&s->outq);
        RT_ASSERT(victim); /* rt_outq_can_make_room() said so */
        if (trace_hub_is_active(rt->hub)) {
            rt_trace_tx_dropped_queued(s, victim, "slow_consumer");
        }
        if (s->wire) {
            rt_wire_dropped(s, 0, victim, "slow_consumer");
        }
        wamp_buf_unref(&victim);
        s->events_dropped++;
        rt->stats.events_dropped++;
    }
    uint64_t now = rt_router_now_us(rt);
    if (s->events_dropped_logged == 0 || now >= s->drop_log_at_us) {
        rt_session_log_drops(s, false);
        s->drop_log_at_us = now + RT_DROP_LOG_INTERVAL_US;
    }
}

wamp_err rt_session_send_encoded(rt_session *s, rt_encoded *e)
{
    if (!e->msg && !e->fields) {
        return WAMP_ENOMEM;
    }
    if (s->state == RT_SESSION_CLOSED) {
        /* A traced record keeps the message's bytes: with a payload msg is only its envelope,
         * and an envelope given by its fields has no msg. */
        bool bytes = e->payload.ser || e->fields;
        if (bytes && trace_hub_is_active(s->rt->hub)) {
            (void)rt_encoded_encode(e, s->ser);
        }
        trace_tx(s, e, bytes ? e->buf[s->ser] : NULL, "session_closed");
        return WAMP_OK;
    }
    wamp_err err = rt_session_encode_for(s, e);
    if (err != WAMP_OK) {
        return err;
    }
    wamp_buf *wire = e->buf[s->ser];
    if (rt_session_exceeds_peer_limit(s, e)) {
        RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "outgoing message too big", s->id,
                            "outgoing %s of %zu bytes exceeds the transport limit of %zu bytes",
                            wamp_msg_type_name(e->type), wamp_buf_len(wire),
                            s->peer.max_message_size);
        s->rt->stats.messages_too_big++;
        trace_tx(s, e, wire, "too_big");
        return WAMP_ETOOBIG;
    }
    bool was_empty = s->outq.count == 0;
    size_t len = wamp_buf_len(wire);
    if (!rt_outq_fits(&s->outq, len)) {
        make_room(s, len);
    }
    err = rt_outq_push(&s->outq, wire, e->type == WAMP_MSG_EVENT);
    if (err == WAMP_ETOOBIG) {
        RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(s->rt),
                         "slow consumer disconnected", s->id,
                         "slow consumer: outgoing queue limit reached (%zu messages, %zu bytes "
                         "queued); disconnecting",
                         s->outq.count, s->outq.bytes);
        s->rt->stats.slow_consumer_disconnects++;
        trace_tx(s, e, wire, "queue_full");
        rt_session_close(s, 1008, "slow consumer", true);
        return WAMP_OK;
    }
    if (err != WAMP_OK) {
        return err;
    }
    s->rt->stats.messages_tx++;
    s->rt->stats.bytes_tx += wamp_buf_len(wire);
    rt_wirelog_tx(s, e->type, wamp_buf_len(wire));
    trace_tx(s, e, wire, NULL);
    if (was_empty) {
        s->ops->want_write(s->tp);
    }
    return WAMP_OK;
}

wamp_err rt_session_send(rt_session *s, json_t *msg_take)
{
    rt_encoded e;
    rt_encoded_init(&e, msg_take);
    wamp_err err = rt_session_send_encoded(s, &e);
    rt_encoded_fini(&e);
    return err;
}

wamp_err rt_session_send_payload(rt_session *s, json_t *head_take, const rt_payload *p)
{
    rt_encoded e;
    rt_encoded_init_payload(&e, head_take, p);
    wamp_err err = rt_session_send_encoded(s, &e);
    rt_encoded_fini(&e);
    return err;
}

wamp_err rt_session_send_fields(rt_session *s, wamp_msg_type type, uint64_t id, uint64_t id2,
                                json_t *dict_take, const rt_payload *p)
{
    rt_encoded e;
    rt_encoded_init_fields(&e, type, id, id2, dict_take, p);
    wamp_err err = rt_session_send_encoded(s, &e);
    rt_encoded_fini(&e);
    return err;
}

wamp_err rt_session_send_with_tail(rt_session *s, json_t *head_take, const wamp_buf *tail)
{
    rt_encoded e;
    rt_encoded_init(&e, head_take);
    if (!head_take) {
        return WAMP_ENOMEM;
    }
    wamp_wr w;
    wamp_wr_init(&w, (int)s->ser, wamp_buf_len(tail) + 64, 0);
    wamp_wr_array(&w, json_array_size(head_take) + 1);
    for (size_t i = 0; i < json_array_size(head_take); i++) {
        wamp_wr_json(&w, json_array_get(head_take, i));
    }
    wamp_wr_raw(&w, wamp_buf_cdata(tail), wamp_buf_len(tail));
    wamp_wr_end(&w);
    wamp_err err = wamp_wr_finish_buf(&w, &e.buf[s->ser]);
    wamp_wr_fini(&w);
    if (err == WAMP_OK) {
        err = rt_session_send_encoded(s, &e);
    }
    rt_encoded_fini(&e);
    return err;
}

wamp_err rt_session_send_error(rt_session *s, wamp_msg_type req_type, uint64_t request,
                               const char *uri, const char *message)
{
    json_t *args = message ? json_pack("[s]", message) : NULL;
    rt_observers_action_last(&s->rt->observers,
                             s->rt); /* an ERROR always completes the request it answers */
    return rt_session_send(s, wamp_msg_new_error(req_type, request, NULL, uri, args, NULL));
}

wamp_buf *rt_session_tx_peek(rt_session *s)
{
    return rt_outq_peek(&s->outq);
}

size_t rt_session_tx_peek_n(rt_session *s, wamp_buf **out, size_t max)
{
    return rt_outq_peek_n(&s->outq, out, max);
}

void rt_session_tx_pop(rt_session *s)
{
    rt_outq_pop(&s->outq);
}

/* The queued messages of s from index first on (0: all, 1: all but the head, the only values
 * used; the head is always slot 0) will never be written: counted, and recorded as
 * dropped "session_closed" while a trace runs. */
void rt_session_note_undelivered(rt_session *s, size_t first)
{
    rt_outq *q = &s->outq;
    if (q->count <= first) {
        return;
    }
    s->rt->stats.messages_undelivered += q->count - first;
    if (trace_hub_is_active(s->rt->hub) || s->wire) {
        for (size_t i = first; i < q->slots; i++) {
            wamp_buf *b = rt_outq_slot(q, i);
            if (b && trace_hub_is_active(s->rt->hub)) {
                rt_trace_tx_dropped_queued(s, b, "session_closed");
            }
            if (b && s->wire) {
                rt_wire_dropped(s, 0, b, "session_closed");
            }
        }
    }
}

void rt_session_close(rt_session *s, uint16_t code, const char *reason, bool drop_queue)
{
    if (s->state == RT_SESSION_CLOSED) {
        return;
    }
    s->state = RT_SESSION_CLOSED;
    rt_list_remove(&s->in_wait);
    if (drop_queue) {
        rt_session_note_undelivered(s, 1);
        rt_outq_drop_all_but_head(&s->outq);
    }
    s->ops->close(s->tp, code, reason);
}

void rt_session_send_abort(rt_session *s, const char *reason, const char *message)
{
    json_t *details = message ? json_pack("{s:s}", "message", message) : NULL;
    rt_observers_action_last(&s->rt->observers, s->rt);
    (void)rt_session_send(s, wamp_msg_new_abort(details, reason));
}

void rt_session_protocol_violation(rt_session *s, const char *why)
{
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, RT_LOG_LEVEL_INFO, rt_router_now_us(s->rt),
                     "protocol violation", s->id, "protocol violation from %s: %s; aborting",
                     s->peer.addr, why);
    s->rt->stats.protocol_violations++;
    rt_session_send_abort(s, WAMP_ERROR_PROTOCOL_VIOLATION, why);
    rt_session_close(s, 1002, "protocol violation", false);
}

wamp_err rt_session_refuse_limit(rt_session *s, wamp_msg_type req_type, uint64_t request,
                                 const char *limit, size_t value)
{
    char why[96];
    snprintf(why, sizeof(why), "limit reached: wampscope.limits.%s (%zu)", limit, value);
    RT_LOG_INFO_LIMITED(rt_router_now_us(s->rt), "request refused by a limit", s->id,
                        "%s refused: %s", wamp_msg_type_name((int)req_type), why);
    s->rt->stats.limit_refusals++;
    return rt_session_send_error(s, req_type, request, RT_ERROR_LIMIT_REACHED, why);
}
