/* bench_stats.c: see bench_stats.h. */
#include "bench_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

wamp_err bench_lat_add(bench_lat *l, uint64_t ns)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 65536;
        uint32_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v) {
            return WAMP_ENOMEM;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
    l->sorted = false;
    return WAMP_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a;
    uint32_t y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

double bench_lat_pct_us(bench_lat *l, double q)
{
    if (l->n == 0) {
        return -1.0;
    }
    if (!l->sorted) {
        qsort(l->v, l->n, sizeof(*l->v), cmp_u32);
        l->sorted = true;
    }
    /* Nearest rank: the smallest sample with at least q% of the samples at or below it. */
    double rank = q / 100.0 * (double)l->n;
    size_t idx = (size_t)rank;
    if ((double)idx < rank) {
        idx++;
    }
    idx = idx == 0 ? 0 : idx - 1;
    if (idx >= l->n) {
        idx = l->n - 1;
    }
    return (double)l->v[idx] / 1000.0;
}

void bench_lat_fini(bench_lat *l)
{
    free(l->v);
    memset(l, 0, sizeof(*l));
}

bool bench_proc_cpu_s(pid_t pid, double *out)
{
    char path[64];
    char buf[1024];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        return false;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Field 2 (comm) is in parentheses and may contain spaces: count fields after the last ')'.
     * Then field 3 is state, and utime/stime are fields 14 and 15. */
    char *p = strrchr(buf, ')');
    if (!p) {
        return false;
    }
    p++;
    unsigned long long ut = 0, st = 0;
    for (int field = 3; field <= 15; field++) {
        while (*p == ' ') {
            p++;
        }
        if (*p == '\0') {
            return false;
        }
        if (field == 14 || field == 15) {
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p) {
                return false;
            }
            if (field == 14) {
                ut = v;
            } else {
                st = v;
            }
            p = end;
        } else {
            while (*p && *p != ' ') {
                p++;
            }
        }
    }
    long hz = sysconf(_SC_CLK_TCK);
    *out = (double)(ut + st) / (double)(hz > 0 ? hz : 100);
    return true;
}

void bench_sys_cpu_get(bench_sys_cpu *out)
{
    unsigned long long v[8] = {0};
    out->ok = false;
    FILE *f = fopen("/proc/stat", "r");
    if (!f) {
        return;
    }
    /* cpu user nice system idle iowait irq softirq steal ... */
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n != 8) {
        return;
    }
    long hz = sysconf(_SC_CLK_TCK);
    double tick = 1.0 / (double)(hz > 0 ? hz : 100);
    out->busy_s = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * tick;
    out->steal_s = (double)v[7] * tick;
    out->ok = true;
}

double bench_self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}
