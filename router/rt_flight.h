/* rt_flight.h: the flight recorder read from the wire capture
 * (wampscope.tracing.flight_recorder.from_wire). The trace RT_FLIGHT_RECORDER_ID is then a fed
 * trace (trace_hub_set_fed()): nothing is recorded per message; the transport adapters append
 * what they read and write to the wire capture (rt_trace_wire.h), and whoever is about to read
 * the trace (a management procedure on a trace, the metrics) first calls rt_router_flight_sync(),
 * which decodes what the capture took in since the last sync and appends it to the trace as the
 * capture path would have: the same filter, redaction, payload strip and limits, each message's
 * session, action URI and correlation from the capture (rt_router_wire_read()), its times those of
 * the read or write that carried it. Messages the capture dropped before a sync reached them are
 * given their seqs and counted as dropped (trace_lose()). Service thread only. */
#ifndef RT_FLIGHT_H
#define RT_FLIGHT_H

#include <stdint.h>

#include "rt_router.h"

/* Makes the flight recorder (started, running) a fed trace when the configuration says
 * from_wire and the wire capture runs. */
void rt_flight_attach(rt_router *rt);

/* Appends to the fed flight recorder what the wire capture took in since the last sync; nothing
 * when there is no fed flight recorder, it is stopped, or nothing came. Returns how many seqs it
 * gave out (records and lost messages). */
uint64_t rt_router_flight_sync(rt_router *rt);

#endif /* RT_FLIGHT_H */
