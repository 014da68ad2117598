/* rt_log.h: leveled logging, one line per event, to stderr (default) or syslog(3), as text
 *   2026-11-22T03:20:38.123Z INFO  [session 123456] message key=value
 * (the message and fields with C0, DEL, C1 and bidirectional controls and bytes of no valid
 * UTF-8 written as \xNN or \uNNNN: what a peer sends never drives a terminal or breaks a line)
 * or as one JSON object a line (--log-format json)
 *   {"ts":"2026-11-22T03:20:38.123456Z","level":"info","msg":"message","session":123456,
 *    "realm":"realm1","peer":"127.0.0.1:5000","key":"value"}
 * The threshold, the format and the target are rt_log's only state with the rate-limited call
 * sites' states (RT_LOG_LIMITED) and the session lookup, all set in main() before the loop.
 * Service thread only. */
#ifndef RT_LOG_H
#define RT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum rt_log_level {
    RT_LOG_LEVEL_ERR = 0,
    RT_LOG_LEVEL_WARN = 1,
    RT_LOG_LEVEL_INFO = 2,
    RT_LOG_LEVEL_DEBUG = 3,
    /* Debug, and one line per WAMP message received and sent (rt_wirelog.h). */
    RT_LOG_LEVEL_TRACE = 4
} rt_log_level;

/* Sets the most verbose level printed (default INFO). Call from main() only. */
void rt_log_set_level(rt_log_level level);
rt_log_level rt_log_get_level(void);
/* Parses "error" / "warn" / "info" / "debug" / "trace" (any case); false if unknown. */
int rt_log_level_parse(const char *s, rt_log_level *out);
/* "error", "warn", "info", "debug", "trace". */
const char *rt_log_level_name(rt_log_level level);

typedef enum rt_log_format {
    RT_LOG_FORMAT_TEXT = 0,
    RT_LOG_FORMAT_JSON = 1
} rt_log_format;

typedef enum rt_log_target {
    RT_LOG_TARGET_STDERR = 0,
    /* syslog(3), facility daemon, ident "wampscope", with the pid; journald stores it. Lines
     * carry no timestamp of their own in the text format (syslog adds one). */
    RT_LOG_TARGET_SYSLOG = 1
} rt_log_target;

/* "text" / "json", "stderr" / "syslog"; false if unknown. */
bool rt_log_format_parse(const char *s, rt_log_format *out);
bool rt_log_target_parse(const char *s, rt_log_target *out);
/* Sets the format and the target (default text on stderr); opens syslog for the syslog target.
 * Call from main() only. */
void rt_log_set_output(rt_log_format format, rt_log_target target);
/* Closes syslog if it was opened; the target is stderr again. */
void rt_log_close(void);

/* What a JSON line says about a session besides its id. Borrowed strings, valid during the
 * call; NULL = not known (the field is left out). */
typedef struct rt_log_session_info {
    const char *realm; /* the realm joined (or asked for in HELLO) */
    const char *peer;  /* "127.0.0.1:54321" */
} rt_log_session_info;

/* Looks session_id up; false if it is not known. Service thread; must not log. */
typedef bool (*rt_log_session_fn)(void *ctx, uint64_t session_id, rt_log_session_info *out);
/* The router's session lookup for JSON lines (fn NULL: none). main() sets it after creating the
 * router and clears it before freeing it. */
void rt_log_set_session_lookup(rt_log_session_fn fn, void *ctx);

/* One event field of a line: a string (str not NULL) or an unsigned number. Text lines end in
 * " key=value" for each; JSON lines carry "key": value. Keys are literal, plain ASCII. */
typedef struct rt_log_field {
    const char *key;
    const char *str;
    uint64_t num;
} rt_log_field;

/* Writes "s" with quotes, backslashes and control characters escaped as JSON requires, C1
 * controls and bidirectional overrides and isolates as \uNNNN (a terminal would act on them),
 * and every byte that is not part of valid UTF-8 as \ufffd, into out (NUL-terminated, cut to
 * out_len; out may be NULL with out_len 0). Returns the length of the whole escaped text
 * (without the quotes, which are not written), as snprintf does. */
size_t rt_log_json_escape(const char *s, size_t len, char *out, size_t out_len);

/* session_id 0 = no session context. */
void rt_log(rt_log_level level, uint64_t session_id, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The same line with event fields f[0..n) (f may be NULL when n is 0). */
void rt_log_ev(rt_log_level level, uint64_t session_id, const rt_log_field *f, size_t n,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define RT_LOG_ERR(sid, ...)  rt_log(RT_LOG_LEVEL_ERR, (sid), __VA_ARGS__)
#define RT_LOG_WARN(sid, ...) rt_log(RT_LOG_LEVEL_WARN, (sid), __VA_ARGS__)
#define RT_LOG_INFO(sid, ...) rt_log(RT_LOG_LEVEL_INFO, (sid), __VA_ARGS__)
#define RT_LOG_DEBUG(sid, ...)                              \
    do {                                                    \
        if (rt_log_get_level() >= RT_LOG_LEVEL_DEBUG) {     \
            rt_log(RT_LOG_LEVEL_DEBUG, (sid), __VA_ARGS__); \
        }                                                   \
    } while (0)

/* --- Rate-limited lines ----------------------------------------------------------------------
 * Every line a remote peer can cause (a refused or denied request, a protocol violation, a
 * failed authentication, a refused connection, a message too big, ...) goes through
 * RT_LOG_LIMITED, so that a flood of such messages writes a few lines, never one per message.
 * Each call site has its own state: its first `burst` lines are written; past those, its lines
 * are only counted until RT_LOG_SUMMARY_INTERVAL_US after the first one, then one summary line
 * says how many were left out:
 *   ... INFO  CALL of com.x denied for role anonymous
 *   ... INFO  (rate-limited) 9999 more lines like "CALL denied" in the last 10.0 s
 * A flood that goes on gets one summary per interval; the next line after an interval without
 * any is written again. Summaries are written by rt_log_tick() (the router calls it every tick)
 * or by the site's next line, whichever comes first; rt_log_flush() writes them all (at exit).
 * Debug lines are not limited (the operator asked for everything). */

/* The summary interval: 10 s (a constant, not a setting). */
#define RT_LOG_SUMMARY_INTERVAL_US (10u * 1000000u)
/* Lines per interval before counting starts: 1 for what a message causes (a refused request:
 * RT_LOG_LIMITED), more for what a connection causes once (a failed authentication, a refused
 * handshake, a protocol violation) and for session lifecycle lines (joined, left, closed), so
 * that ordinary traffic is logged in full and only a flood is summarised. */
#define RT_LOG_BURST_CONN    20u
#define RT_LOG_BURST_SESSION 100u

/* One call site's state (static storage in the macro below; zero-initialised but for what and
 * burst). */
typedef struct rt_log_limit {
    const char *what; /* names the site's lines in its summary */
    unsigned burst;   /* lines written per interval before counting starts (>= 1) */
    rt_log_level level;
    bool active;               /* an interval is running */
    bool listed;               /* in rt_log's list of sites with an interval running */
    uint64_t start_us;         /* when the interval began */
    uint64_t written;          /* lines written in it */
    uint64_t suppressed;       /* lines counted, not written, in it */
    struct rt_log_limit *next; /* in that list */
} rt_log_limit;

/* true: write the line (of level) now (the caller does, with rt_log()); false: counted for the
 * summary, which has the level of the site's last line. May write the site's summary first (its
 * interval is over). now_us is the router's clock. */
bool rt_log_limit_pass(rt_log_limit *lim, rt_log_level level, uint64_t now_us);
/* Writes the summary of every site whose interval is over at now_us and has counted lines, and
 * starts a new interval for it; a site whose interval passed without any is reset. */
void rt_log_tick(uint64_t now_us);
/* Writes the summary of every site that has counted lines, now (at shutdown). */
void rt_log_flush(uint64_t now_us);

/* lvl: an rt_log_level; now_us: the router's clock (evaluated only when the level is logged);
 * what_s: a string literal naming the site's lines in its summary. */
#define RT_LOG_LIMITED_N(burst_n, lvl, now_us, what_s, sid, ...)                                \
    do {                                                                                        \
        static rt_log_limit rt_log_site_ = {.what = (what_s), .burst = (burst_n)};              \
        if (rt_log_get_level() >= (lvl) && rt_log_limit_pass(&rt_log_site_, (lvl), (now_us))) { \
            rt_log((lvl), (sid), __VA_ARGS__);                                                  \
        }                                                                                       \
    } while (0)
#define RT_LOG_LIMITED(lvl, now_us, what_s, sid, ...) \
    RT_LOG_LIMITED_N(1u, lvl, now_us, what_s, sid, __VA_ARGS__)
#define RT_LOG_INFO_LIMITED(now_us, what_s, sid, ...) \
    RT_LOG_LIMITED(RT_LOG_LEVEL_INFO, now_us, what_s, sid, __VA_ARGS__)

/* Internal invariant check, always on: logs file:line and aborts. Never for peer input. */
#define RT_ASSERT(cond)                                      \
    do {                                                     \
        if (!(cond)) {                                       \
            rt_log_assert_failed(#cond, __FILE__, __LINE__); \
        }                                                    \
    } while (0)
_Noreturn void rt_log_assert_failed(const char *cond, const char *file, int line);

#endif /* RT_LOG_H */
