/* rt_wirelog.h: PRIVATE to the router core: what the router notes about every WAMP message it
 * receives and sends, besides tracing: the per-type counters of rt_router_stats (for the
 * metrics) and, at log level trace, one log line per message (direction, type, session, realm,
 * serializer, size; never the payload). Called by rt_session.c where it counts messages_rx
 * (after decoding) and messages_tx. Service thread only. */
#ifndef RT_WIRELOG_H
#define RT_WIRELOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_core_int.h"
#include "rt_log.h"

/* The realm a message of s is of, as log lines and trace records name it: the joined one, else
 * the one HELLO asked for (while authenticating, whatever the message, an undecodable one or
 * the ABORT of a protocol violation too; while a traced HELLO is handled); NULL if none. */
const char *rt_wirelog_realm(const rt_session *s);
/* Writes the trace-level line of one message (type: its WAMP code, 0 = undecodable). */
void rt_wirelog_line(const rt_session *s, bool rx, int type, size_t len);

/* A message of len bytes received by s (type 0: it did not decode). */
static inline void rt_wirelog_rx(rt_session *s, int type, size_t len)
{
    unsigned t = type > 0 && type < RT_STATS_TYPE_SLOTS ? (unsigned)type : 0u;
    s->rt->stats.messages_rx_by_type[s->ser][t]++;
    if (rt_log_get_level() >= RT_LOG_LEVEL_TRACE) {
        rt_wirelog_line(s, true, (int)t, len);
    }
}

/* A message of len bytes queued to s. */
static inline void rt_wirelog_tx(rt_session *s, int type, size_t len)
{
    unsigned t = type > 0 && type < RT_STATS_TYPE_SLOTS ? (unsigned)type : 0u;
    s->rt->stats.messages_tx_by_type[s->ser][t]++;
    if (rt_log_get_level() >= RT_LOG_LEVEL_TRACE) {
        rt_wirelog_line(s, false, (int)t, len);
    }
}

#endif /* RT_WIRELOG_H */
