/* bench_stats.h: measurement helpers for wamp-bench: monotonic time, latency samples with
 * percentiles, and CPU time of this process and of another one (/proc/PID/stat).
 * Ownership: bench_lat owns its sample array (bench_lat_fini). Single thread. */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wamp_err.h"

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* Latency samples in nanoseconds (each clamped to UINT32_MAX, about 4.3 s). */
typedef struct bench_lat {
    uint32_t *v;
    size_t n;
    size_t cap;
    bool sorted;
} bench_lat;

/* Appends one sample; WAMP_ENOMEM leaves the set unchanged. */
wamp_err bench_lat_add(bench_lat *l, uint64_t ns);
/* Nearest-rank percentile (q in 0..100) in microseconds; sorts the samples on first use.
 * -1 when there are no samples. */
double bench_lat_pct_us(bench_lat *l, double q);
/* Frees the samples; *l is then empty and reusable. */
void bench_lat_fini(bench_lat *l);

/* utime + stime of pid in seconds, from /proc/PID/stat (clock-tick resolution, usually 10 ms).
 * false if the process does not exist or the file cannot be parsed. */
bool bench_proc_cpu_s(pid_t pid, double *out);

/* Machine-wide CPU time from the first line of /proc/stat, summed over all CPUs: busy
 * (user, nice, system, irq, softirq, steal) and steal (taken by the hypervisor) in seconds. */
typedef struct bench_sys_cpu {
    double busy_s;
    double steal_s;
    bool ok;
} bench_sys_cpu;

void bench_sys_cpu_get(bench_sys_cpu *out);

/* User + system CPU seconds used so far by this process. */
double bench_self_cpu_s(void);

#endif /* BENCH_STATS_H */
