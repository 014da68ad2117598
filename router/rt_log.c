/* rt_log.c: one line per event on stderr, UTC timestamp with milliseconds, level, optional
 * session context. Each line is formatted into one buffer and written with a single fwrite(), so
 * lines from the lws sink and the core never interleave mid-line. */
#include "rt_log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The one documented exception to STYLE §5 (no file-scope mutable state): the threshold is set
 * once by main() via rt_log_set_level() before the service loop starts, and only read after
 * that. Passing it to every RT_LOG_* call site would thread the router context into code that
 * has none (the lws log sink, RT_ASSERT). The program is single-threaded. */
static rt_log_level log_threshold = RT_LOG_LEVEL_INFO;

/* Rate-limited call sites with an interval running, for rt_log_tick() and rt_log_flush(). Part
 * of the same exception: each site's state is static storage in its macro expansion (so a call
 * site needs no context to be limited), and this list only links those states. */
static rt_log_limit *limited_sites;

/* Room for the timestamp, the level and the session prefix; messages that do not fit into
 * RT_LOG_LINE_MAX go through a heap buffer instead of being cut. */
#define RT_LOG_LINE_MAX 1024

void rt_log_set_level(rt_log_level level)
{
    log_threshold = level;
}

rt_log_level rt_log_get_level(void)
{
    return log_threshold;
}

int rt_log_level_parse(const char *s, rt_log_level *out)
{
    static const struct {
        const char *name;
        rt_log_level level;
    } names[] = {
            {"error", RT_LOG_LEVEL_ERR},   {"warn", RT_LOG_LEVEL_WARN},
            {"info", RT_LOG_LEVEL_INFO},   {"debug", RT_LOG_LEVEL_DEBUG},
            {"trace", RT_LOG_LEVEL_DEBUG},
    };

    if (!s) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            if (out) {
                *out = names[i].level;
            }
            return 1;
        }
    }
    return 0;
}

/* Five columns wide so that messages line up. */
static const char *level_tag(rt_log_level level)
{
    switch (level) {
    case RT_LOG_LEVEL_ERR:
        return "ERROR";
    case RT_LOG_LEVEL_WARN:
        return "WARN ";
    case RT_LOG_LEVEL_INFO:
        return "INFO ";
    case RT_LOG_LEVEL_DEBUG:
        return "DEBUG";
    }
    return "?    ";
}

/* "2026-11-22T03:20:38.123Z " plus level and session context; returns the length written
 * (always < len). */
static size_t format_prefix(char *buf, size_t len, rt_log_level level, uint64_t session_id)
{
    struct timespec ts;
    struct tm tm;
    char stamp[32] = "0000-00-00T00:00:00";

    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        ts.tv_sec = 0;
        ts.tv_nsec = 0;
    }
    if (gmtime_r(&ts.tv_sec, &tm)) {
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    }
    int ms = (int)(ts.tv_nsec / 1000000);
    int n;
    if (session_id != 0) {
        n = snprintf(buf, len, "%s.%03dZ %s [session %" PRIu64 "] ", stamp, ms, level_tag(level),
                     session_id);
    } else {
        n = snprintf(buf, len, "%s.%03dZ %s ", stamp, ms, level_tag(level));
    }
    if (n < 0) {
        buf[0] = '\0';
        return 0;
    }
    return (size_t)n < len ? (size_t)n : len - 1;
}

/* Formats and writes one line; used by rt_log() and rt_log_assert_failed(). */
__attribute__((format(printf, 3, 0))) static void
log_line_v(rt_log_level level, uint64_t session_id, const char *fmt, va_list ap)
{
    char line[RT_LOG_LINE_MAX];
    char *heap = NULL;
    char *out = line;
    size_t pre = format_prefix(line, sizeof(line), level, session_id);

    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(line + pre, sizeof(line) - pre, fmt, ap);
    if (n < 0) {
        n = 0;
        line[pre] = '\0';
    }
    size_t msg_len = (size_t)n;
    if (pre + msg_len + 2 > sizeof(line)) {
        /* Too long for the stack buffer: format again into one exactly sized heap buffer. If
         * that allocation fails, the truncated stack copy is written instead. */
        heap = malloc(pre + msg_len + 2);
        if (heap) {
            memcpy(heap, line, pre);
            vsnprintf(heap + pre, msg_len + 1, fmt, ap2);
            out = heap;
        } else {
            msg_len = sizeof(line) - pre - 2;
        }
    }
    va_end(ap2);

    size_t total = pre + msg_len;
    /* Messages may already end in a newline (lws lines do); never print an empty line. */
    if (total == 0 || out[total - 1] != '\n') {
        out[total++] = '\n';
    }
    fwrite(out, 1, total, stderr);
    fflush(stderr);
    free(heap);
}

void rt_log(rt_log_level level, uint64_t session_id, const char *fmt, ...)
{
    if (level > log_threshold) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    log_line_v(level, session_id, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void
log_always(rt_log_level level, uint64_t session_id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line_v(level, session_id, fmt, ap);
    va_end(ap);
}

_Noreturn void rt_log_assert_failed(const char *cond, const char *file, int line)
{
    /* Printed whatever the threshold: this is the last thing the process says. */
    log_always(RT_LOG_LEVEL_ERR, 0, "assertion failed: %s (%s:%d)", cond ? cond : "?",
               file ? file : "?", line);
    abort();
}

/* Writes lim's summary of the interval that ends at now_us (nothing if nothing was counted). */
static void write_summary(rt_log_limit *lim, uint64_t now_us)
{
    if (lim->suppressed == 0) {
        return;
    }
    uint64_t span = now_us > lim->start_us ? now_us - lim->start_us : 0;
    rt_log(lim->level, 0, "(rate-limited) %" PRIu64 " more lines like \"%s\" in the last %.1f s",
           lim->suppressed, lim->what, (double)span / 1e6);
    lim->suppressed = 0;
}

static void start_interval(rt_log_limit *lim, uint64_t now_us)
{
    lim->active = true;
    lim->start_us = now_us;
    lim->written = 0;
    lim->suppressed = 0;
    if (!lim->listed) {
        lim->listed = true;
        lim->next = limited_sites;
        limited_sites = lim;
    }
}

bool rt_log_limit_pass(rt_log_limit *lim, rt_log_level level, uint64_t now_us)
{
    lim->level = level;
    if (lim->active && now_us - lim->start_us >= RT_LOG_SUMMARY_INTERVAL_US) {
        /* The interval is over and no tick has ended it yet. */
        bool flooding = lim->suppressed > 0;
        write_summary(lim, now_us);
        lim->active = flooding; /* a flood goes on counting; after a quiet interval, write */
        if (flooding) {
            lim->start_us = now_us;
            lim->written = lim->burst;
        }
    }
    if (!lim->active) {
        start_interval(lim, now_us);
    }
    if (lim->written < (lim->burst ? lim->burst : 1)) {
        lim->written++;
        return true;
    }
    lim->suppressed++;
    return false;
}

void rt_log_tick(uint64_t now_us)
{
    for (rt_log_limit **p = &limited_sites; *p;) {
        rt_log_limit *lim = *p;
        if (now_us - lim->start_us < RT_LOG_SUMMARY_INTERVAL_US) {
            p = &lim->next;
            continue;
        }
        if (lim->suppressed > 0) {
            /* Still flooding: the summary, and the next interval counts from here. */
            write_summary(lim, now_us);
            lim->start_us = now_us;
            lim->written = lim->burst;
            p = &lim->next;
            continue;
        }
        /* An interval without a line left out: the site writes its next line again. */
        lim->active = false;
        lim->listed = false;
        *p = lim->next;
        lim->next = NULL;
    }
}

void rt_log_flush(uint64_t now_us)
{
    for (rt_log_limit *lim = limited_sites; lim; lim = lim->next) {
        write_summary(lim, now_us > lim->start_us ? now_us : lim->start_us);
    }
}
