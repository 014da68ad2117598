/* rt_trace_fast.h: PRIVATE to the router core: the inline part of rt_trace.h, which needs the
 * core's structs (rt_core_int.h) and so cannot live in rt_trace.h (which rt_core_int.h includes
 * for its types). Included by the send path (rt_session.c) and rt_trace.c only. */
#ifndef RT_TRACE_FAST_H
#define RT_TRACE_FAST_H

#include <stdbool.h>

#include "rt_core_int.h"
#include "rt_trace.h"
#include "trace_hub.h"
#include "wamp_buf.h"

/* Whether the message being sent completes the current action: marked last, and no meta events
 * are queued to go out after it (the last of those completes it then). */
static inline bool rt_trace_sends_last(const rt_router *rt)
{
    return rt->cur.set && rt->cur.last && !rt->cur.meta_pending;
}

/* The fan-out fast path of tracing an EVENT sent to s, inline in the send path (an EVENT to
 * the next subscriber is most of what a fan-out sends): while a trace runs and no received
 * PUBLISH waits for its record (rt->pend.s), the hub appends the message just recorded again
 * with s's peer when it is certainly that message (trace_hub_repeat()); true then. Otherwise
 * the caller records it with rt_trace_tx(). The same buffer is the same message with the same
 * encodings: only a fan-out sends one rt_encoded to several sessions, and it encodes every
 * serializer it needs before the first send (rt_broker.c, fan_out). */
static inline bool rt_trace_tx_repeat(rt_session *s, const wamp_buf *wire, const char *drop)
{
    rt_router *rt = s->rt;
    if (drop) {
        return false;
    }
    /* The buffer this action recorded at this reading (rt_cur_action.rep_wire): only whether the
     * hub still keeps it is asked. Otherwise the hub compares the action and the clock. */
    if (!(wire == rt->cur.rep_wire
                  ? trace_hub_repeat_push(rt->hub, wire, s->tpeer)
                  : rt->cur.now_set && trace_hub_repeat_gather(rt->hub, wire, s->tpeer, rt->cur.set,
                                                               rt->cur.uuid, rt->cur.now_ns))) {
        return false;
    }
    /* Whether it completes the action asked only now: most receivers are not asked at all. */
    trace_hub_repeat_close(rt->hub, rt_trace_sends_last(rt));
    rt->cur.last = false; /* "last" marks one message */
    return true;
}

#endif /* RT_TRACE_FAST_H */
