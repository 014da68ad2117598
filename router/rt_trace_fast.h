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
 * with s's peer when it is certainly that message; true then. Otherwise the caller records it
 * with rt_trace_tx(). A buffer the hub still keeps (nothing was recorded since it was) is certainly
 * that message, for this action at this clock reading, so the hub compares nothing else
 * (trace_hub_repeat_push()): only a fan-out sends one rt_encoded to several sessions, within the
 * handling of one message (one action, one clock reading), and it encodes every serializer it
 * needs before the first send (rt_broker.c, fan_out). */
static inline bool rt_trace_tx_repeat(rt_session *s, const wamp_buf *wire, const char *drop)
{
    rt_router *rt = s->rt;
    if (drop || !trace_hub_repeat_push(rt->hub, wire, s->tpeer)) {
        return false;
    }
    /* Whether it completes the action asked only now: most receivers are not asked at all. */
    trace_hub_repeat_close(rt->hub, rt_trace_sends_last(rt));
    rt->cur.last = false; /* "last" marks one message */
    return true;
}

#endif /* RT_TRACE_FAST_H */
