/* rt_log.c: one line per event, text or JSON, on stderr or syslog. Each line is formatted into
 * one buffer and written with a single fwrite() (or one syslog() call), so lines from the lws
 * sink and the core never interleave mid-line. */
#include "rt_log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>

#include "wamp_ws.h"

/* The one documented exception to STYLE §5 (no file-scope mutable state): the threshold, the
 * format, the target and the session lookup are set by main() before the service loop starts,
 * and only read after that. Passing them to every RT_LOG_* call site would thread the router
 * context into code that has none (the lws log sink, RT_ASSERT). The program is
 * single-threaded. */
static rt_log_level log_threshold = RT_LOG_LEVEL_INFO;
static rt_log_format log_format = RT_LOG_FORMAT_TEXT;
static rt_log_target log_target = RT_LOG_TARGET_STDERR;
static rt_log_session_fn log_session_fn;
static void *log_session_ctx;

/* Rate-limited call sites with an interval running, for rt_log_tick() and rt_log_flush(). Part
 * of the same exception: each site's state is static storage in its macro expansion (so a call
 * site needs no context to be limited), and this list only links those states. */
static rt_log_limit *limited_sites;

/* A line is built in a stack buffer of this size; a longer one moves to the heap instead of
 * being cut. */
#define RT_LOG_LINE_MAX 1024

void rt_log_set_level(rt_log_level level)
{
    log_threshold = level;
}

rt_log_level rt_log_get_level(void)
{
    return log_threshold;
}

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

int rt_log_level_parse(const char *s, rt_log_level *out)
{
    if (!s) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            if (out) {
                *out = (rt_log_level)i;
            }
            return 1;
        }
    }
    return 0;
}

const char *rt_log_level_name(rt_log_level level)
{
    return (unsigned)level < sizeof(level_names) / sizeof(level_names[0]) ? level_names[level]
                                                                          : "?";
}

bool rt_log_format_parse(const char *s, rt_log_format *out)
{
    if (s && strcmp(s, "text") == 0) {
        *out = RT_LOG_FORMAT_TEXT;
        return true;
    }
    if (s && strcmp(s, "json") == 0) {
        *out = RT_LOG_FORMAT_JSON;
        return true;
    }
    return false;
}

bool rt_log_target_parse(const char *s, rt_log_target *out)
{
    if (s && strcmp(s, "stderr") == 0) {
        *out = RT_LOG_TARGET_STDERR;
        return true;
    }
    if (s && strcmp(s, "syslog") == 0) {
        *out = RT_LOG_TARGET_SYSLOG;
        return true;
    }
    return false;
}

void rt_log_set_output(rt_log_format format, rt_log_target target)
{
    if (target == RT_LOG_TARGET_SYSLOG && log_target != RT_LOG_TARGET_SYSLOG) {
        openlog("wampscope", LOG_PID | LOG_NDELAY, LOG_DAEMON);
    } else if (target != RT_LOG_TARGET_SYSLOG && log_target == RT_LOG_TARGET_SYSLOG) {
        closelog();
    }
    log_format = format;
    log_target = target;
}

void rt_log_close(void)
{
    rt_log_set_output(log_format, RT_LOG_TARGET_STDERR);
}

void rt_log_set_session_lookup(rt_log_session_fn fn, void *ctx)
{
    log_session_fn = fn;
    log_session_ctx = ctx;
}

/* --- Line buffer ---------------------------------------------------------------------------- */

/* Text that grows from a stack buffer into the heap; on allocation failure it keeps what fits
 * (a cut line rather than none). */
typedef struct lbuf {
    char *p;
    size_t len, cap;
    bool heap;
    char stack[RT_LOG_LINE_MAX];
} lbuf;

static void lb_init(lbuf *b)
{
    b->p = b->stack;
    b->len = 0;
    b->cap = sizeof(b->stack);
    b->heap = false;
    b->p[0] = '\0';
}

static void lb_fini(lbuf *b)
{
    if (b->heap) {
        free(b->p);
    }
}

/* Makes room for n more bytes plus a NUL; false if it cannot. */
static bool lb_reserve(lbuf *b, size_t n)
{
    if (b->len + n + 1 <= b->cap) {
        return true;
    }
    size_t cap = b->cap * 2;
    while (cap < b->len + n + 1) {
        cap *= 2;
    }
    char *p = b->heap ? realloc(b->p, cap) : malloc(cap);
    if (!p) {
        return false;
    }
    if (!b->heap) {
        memcpy(p, b->p, b->len + 1);
    }
    b->p = p;
    b->cap = cap;
    b->heap = true;
    return true;
}

static void lb_put(lbuf *b, const char *s, size_t n)
{
    if (!lb_reserve(b, n)) {
        n = b->cap - b->len - 1;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

__attribute__((format(printf, 2, 0))) static void lb_vprintf(lbuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    if (n >= 0 && (size_t)n >= b->cap - b->len && lb_reserve(b, (size_t)n)) {
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap2);
    }
    va_end(ap2);
    if (n < 0) {
        b->p[b->len] = '\0';
        return;
    }
    size_t room = b->cap - b->len - 1;
    b->len += (size_t)n < room ? (size_t)n : room;
}

__attribute__((format(printf, 2, 3))) static void lb_printf(lbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lb_vprintf(b, fmt, ap);
    va_end(ap);
}

/* --- JSON strings --------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..len) (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF), 0 if s[0] does not start one. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c < 0x80) {
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (len < n || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < n; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF) {
            return 0;
        }
    }
    return n;
}

/* The code point of the valid n-byte UTF-8 sequence at s when a terminal acts on it rather than
 * shows it (wamp_utf8_term_control()), else 0. */
static unsigned term_control(const unsigned char *s, size_t n)
{
    unsigned cp;
    return wamp_utf8_term_control(s, n, &cp) == n ? cp : 0;
}

/* Calls put(ctx, piece, n) for each piece of the escaped text of s. */
static void json_escape_each(const char *s, size_t len, void (*put)(void *, const char *, size_t),
                             void *ctx)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        size_t run = i;
        /* Plain printable ASCII and valid multi-byte sequences go out as they are. */
        while (run < len) {
            unsigned char c = u[run];
            if (c == '"' || c == '\\' || c < 0x20 || c == 0x7F) {
                break;
            }
            size_t n = c < 0x80 ? 1 : utf8_seq(u + run, len - run);
            if (n == 0 || (n > 1 && term_control(u + run, n))) {
                break;
            }
            run += n;
        }
        if (run > i) {
            put(ctx, s + i, run - i);
            i = run;
            continue;
        }
        unsigned char c = u[i];
        char esc[12];
        size_t n = c < 0x80 ? 1 : utf8_seq(u + i, len - i);
        unsigned cp = n > 1 ? term_control(u + i, n) : 0;
        if (cp) {
            /* Valid JSON as it was, but a reader who cats the log sees no escape sequence. */
            snprintf(esc, sizeof(esc), "\\u%04x", cp);
            put(ctx, esc, 6);
            i += n;
            continue;
        }
        switch (c) {
        case '"':
            put(ctx, "\\\"", 2);
            break;
        case '\\':
            put(ctx, "\\\\", 2);
            break;
        case '\n':
            put(ctx, "\\n", 2);
            break;
        case '\r':
            put(ctx, "\\r", 2);
            break;
        case '\t':
            put(ctx, "\\t", 2);
            break;
        default:
            if (c < 0x20 || c == 0x7F) {
                snprintf(esc, sizeof(esc), "\\u%04x", c);
                put(ctx, esc, 6);
            } else {
                /* A byte that is not part of valid UTF-8: the replacement character. */
                put(ctx, "\\ufffd", 6);
            }
            break;
        }
        i++;
    }
}

typedef struct esc_out {
    char *out;
    size_t cap;
    size_t len; /* of the whole text, written or not */
} esc_out;

static void esc_put_mem(void *ctx, const char *s, size_t n)
{
    esc_out *o = ctx;
    if (o->out && o->len < o->cap) {
        size_t room = o->cap - 1 - o->len;
        memcpy(o->out + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

size_t rt_log_json_escape(const char *s, size_t len, char *out, size_t out_len)
{
    esc_out o = {.out = out_len ? out : NULL, .cap = out_len, .len = 0};
    json_escape_each(s ? s : "", s ? len : 0, esc_put_mem, &o);
    if (o.out) {
        o.out[o.len < out_len ? o.len : out_len - 1] = '\0';
    }
    return o.len;
}

static void esc_put_lb(void *ctx, const char *s, size_t n)
{
    lb_put(ctx, s, n);
}

/* "key":"escaped value" (comma first). */
static void lb_json_str(lbuf *b, const char *key, const char *val, size_t len)
{
    lb_printf(b, ",\"%s\":\"", key);
    json_escape_each(val, len, esc_put_lb, b);
    lb_put(b, "\"", 1);
}

/* --- Lines ---------------------------------------------------------------------------------- */

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
    case RT_LOG_LEVEL_TRACE:
        return "TRACE";
    }
    return "?    ";
}

static int syslog_priority(rt_log_level level)
{
    switch (level) {
    case RT_LOG_LEVEL_ERR:
        return LOG_ERR;
    case RT_LOG_LEVEL_WARN:
        return LOG_WARNING;
    case RT_LOG_LEVEL_INFO:
        return LOG_INFO;
    case RT_LOG_LEVEL_DEBUG:
    case RT_LOG_LEVEL_TRACE:
        return LOG_DEBUG;
    }
    return LOG_INFO;
}

/* UTC "2026-11-22T03:20:38" and the nanoseconds of now. */
static void now_utc(char stamp[32], long *nsec)
{
    struct timespec ts;
    struct tm tm;
    snprintf(stamp, 32, "0000-00-00T00:00:00");
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        ts.tv_sec = 0;
        ts.tv_nsec = 0;
    }
    if (gmtime_r(&ts.tv_sec, &tm)) {
        strftime(stamp, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    }
    *nsec = ts.tv_nsec;
}

/* The message text, without the newlines some end in (lws lines do). */
__attribute__((format(printf, 2, 0))) static void format_msg(lbuf *m, const char *fmt, va_list ap)
{
    lb_vprintf(m, fmt, ap);
    while (m->len && (m->p[m->len - 1] == '\n' || m->p[m->len - 1] == '\r')) {
        m->p[--m->len] = '\0';
    }
}

/* Appends s[0..len) to a text line with what could drive a terminal, break the line or make it
 * invalid UTF-8 escaped: C0 controls, DEL and bytes of no valid UTF-8 sequence as \xNN, C1 and
 * bidirectional controls as \uNNNN. Messages carry what peers send (URIs, reasons, authids). */
static void lb_text(lbuf *b, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        size_t run = i, n = 0;
        while (run < len) {
            unsigned char c = u[run];
            n = c < 0x20 || c == 0x7F ? 0 : c < 0x80 ? 1 : utf8_seq(u + run, len - run);
            if (n == 0 || (n > 1 && term_control(u + run, n))) {
                break;
            }
            run += n;
        }
        if (run > i) {
            lb_put(b, s + i, run - i);
            i = run;
            continue;
        }
        unsigned cp = n > 1 ? term_control(u + i, n) : 0;
        if (cp) {
            lb_printf(b, "\\u%04x", cp);
            i += n;
        } else {
            lb_printf(b, "\\x%02x", u[i]);
            i++;
        }
    }
}

static void build_text(lbuf *b, rt_log_level level, uint64_t sid, const rt_log_field *f, size_t n,
                       const lbuf *msg)
{
    if (log_target == RT_LOG_TARGET_STDERR) {
        char stamp[32];
        long ns;
        now_utc(stamp, &ns);
        lb_printf(b, "%s.%03dZ %s ", stamp, (int)(ns / 1000000), level_tag(level));
    }
    if (sid != 0) {
        lb_printf(b, "[session %" PRIu64 "] ", sid);
    }
    lb_text(b, msg->p, msg->len);
    for (size_t i = 0; i < n; i++) {
        if (f[i].str) {
            lb_printf(b, " %s=", f[i].key);
            lb_text(b, f[i].str, strlen(f[i].str));
        } else {
            lb_printf(b, " %s=%" PRIu64, f[i].key, f[i].num);
        }
    }
}

static bool has_field(const rt_log_field *f, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(f[i].key, key) == 0) {
            return true;
        }
    }
    return false;
}

static void build_json(lbuf *b, rt_log_level level, uint64_t sid, const rt_log_field *f, size_t n,
                       const lbuf *msg)
{
    char stamp[32];
    long ns;
    now_utc(stamp, &ns);
    lb_printf(b, "{\"ts\":\"%s.%06ldZ\",\"level\":\"%s\"", stamp, ns / 1000,
              rt_log_level_name(level));
    lb_json_str(b, "msg", msg->p, msg->len);
    if (sid != 0) {
        lb_printf(b, ",\"session\":%" PRIu64, sid);
        rt_log_session_info info = {0};
        if (log_session_fn && log_session_fn(log_session_ctx, sid, &info)) {
            /* A field the call site gives wins over the lookup (no key twice). */
            if (info.realm && !has_field(f, n, "realm")) {
                lb_json_str(b, "realm", info.realm, strlen(info.realm));
            }
            if (info.peer && info.peer[0] && !has_field(f, n, "peer")) {
                lb_json_str(b, "peer", info.peer, strlen(info.peer));
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (f[i].str) {
            lb_json_str(b, f[i].key, f[i].str, strlen(f[i].str));
        } else {
            lb_printf(b, ",\"%s\":%" PRIu64, f[i].key, f[i].num);
        }
    }
    lb_put(b, "}", 1);
}

/* Formats and writes one line; used by rt_log(), rt_log_ev() and rt_log_assert_failed(). */
__attribute__((format(printf, 5, 0))) static void log_line_v(rt_log_level level, uint64_t sid,
                                                             const rt_log_field *f, size_t n,
                                                             const char *fmt, va_list ap)
{
    lbuf msg;
    lbuf line;
    lb_init(&msg);
    lb_init(&line);
    format_msg(&msg, fmt, ap);
    if (log_format == RT_LOG_FORMAT_JSON) {
        build_json(&line, level, sid, f, n, &msg);
    } else {
        build_text(&line, level, sid, f, n, &msg);
    }
    if (log_target == RT_LOG_TARGET_SYSLOG) {
        syslog(syslog_priority(level), "%s", line.p);
    } else {
        lb_put(&line, "\n", 1);
        fwrite(line.p, 1, line.len, stderr);
        fflush(stderr);
    }
    lb_fini(&line);
    lb_fini(&msg);
}

void rt_log(rt_log_level level, uint64_t session_id, const char *fmt, ...)
{
    if (level > log_threshold) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    log_line_v(level, session_id, NULL, 0, fmt, ap);
    va_end(ap);
}

void rt_log_ev(rt_log_level level, uint64_t session_id, const rt_log_field *f, size_t n,
               const char *fmt, ...)
{
    if (level > log_threshold) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    log_line_v(level, session_id, f, n, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void
log_always(rt_log_level level, uint64_t session_id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line_v(level, session_id, NULL, 0, fmt, ap);
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
