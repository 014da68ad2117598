/* rt_log.h: leveled logging to stderr, one line per event:
 *   2026-11-22T03:20:38.123Z INFO  [session 123456] message
 * The level threshold is part of rt_log's only state, set once in main() before the loop. */
#ifndef RT_LOG_H
#define RT_LOG_H

#include <stdint.h>

typedef enum rt_log_level {
    RT_LOG_LEVEL_ERR = 0,
    RT_LOG_LEVEL_WARN = 1,
    RT_LOG_LEVEL_INFO = 2,
    RT_LOG_LEVEL_DEBUG = 3
} rt_log_level;

/* Sets the most verbose level printed (default INFO). Call from main() only. */
void rt_log_set_level(rt_log_level level);
rt_log_level rt_log_get_level(void);
/* Parses "error" / "warn" / "info" / "debug" (also "trace" = debug); false if unknown. */
int rt_log_level_parse(const char *s, rt_log_level *out);

/* session_id 0 = no session context. */
void rt_log(rt_log_level level, uint64_t session_id, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#define RT_LOG_ERR(sid, ...)  rt_log(RT_LOG_LEVEL_ERR, (sid), __VA_ARGS__)
#define RT_LOG_WARN(sid, ...) rt_log(RT_LOG_LEVEL_WARN, (sid), __VA_ARGS__)
#define RT_LOG_INFO(sid, ...) rt_log(RT_LOG_LEVEL_INFO, (sid), __VA_ARGS__)
#define RT_LOG_DEBUG(sid, ...)                              \
    do {                                                    \
        if (rt_log_get_level() >= RT_LOG_LEVEL_DEBUG) {     \
            rt_log(RT_LOG_LEVEL_DEBUG, (sid), __VA_ARGS__); \
        }                                                   \
    } while (0)

/* Internal invariant check, always on: logs file:line and aborts. Never for peer input. */
#define RT_ASSERT(cond)                                      \
    do {                                                     \
        if (!(cond)) {                                       \
            rt_log_assert_failed(#cond, __FILE__, __LINE__); \
        }                                                    \
    } while (0)
_Noreturn void rt_log_assert_failed(const char *cond, const char *file, int line);

#endif /* RT_LOG_H */
