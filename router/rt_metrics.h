/* rt_metrics.h: the router's counters and gauges in the Prometheus text exposition format
 * (version 0.0.4, which OpenMetrics scrapers also accept): what get_worker's stats carry, broken
 * down where the router knows more (sessions per realm and transport, messages per type and
 * serializer), the traces' record counts, and the process (/proc/self). Every name starts with
 * wampscope_ (process_* follow the names every Prometheus client library uses), counters end in
 * _total, sizes are bytes and times seconds. Label values come from the configuration or a fixed
 * set only (realms, transport ids, trace ids bounded by tracing.max_traces, WAMP type names,
 * serializers): never a session id or a URI.
 * Pure rendering: no socket; the adapter (rt_lws_http.c) serves the text. Service thread only. */
#ifndef RT_METRICS_H
#define RT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_router.h"
#include "wamp_err.h"

/* The Content-Type of the text. */
#define RT_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* What the process uses, read from /proc/self (and getrlimit). */
typedef struct rt_metrics_proc {
    double cpu_seconds;        /* user + system */
    double start_time_seconds; /* since the epoch */
    uint64_t resident_bytes;
    uint64_t virtual_bytes;
    uint64_t open_fds;
    uint64_t max_fds; /* RLIMIT_NOFILE soft limit */
} rt_metrics_proc;

/* Reads this process's figures; false (out zeroed) where /proc is not available. */
bool rt_metrics_proc_read(rt_metrics_proc *out);

/* Renders the metrics of rt, and those of proc unless it is NULL, into *out (malloc'd,
 * NUL-terminated, *out_len bytes without the NUL; the caller frees it). WAMP_ENOMEM: *out is
 * NULL. */
wamp_err rt_metrics_render(const rt_router *rt, const rt_metrics_proc *proc, char **out,
                           size_t *out_len);

#endif /* RT_METRICS_H */
