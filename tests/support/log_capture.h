/* log_capture.h: what the router logs (stderr) while a test runs, and counting in it: lines
 * with a text, and the counts of rate-limited summaries (rt_log.h, RT_LOG_LIMITED). */
#ifndef LOG_CAPTURE_H
#define LOG_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

typedef struct log_capture {
    char path[64];
    int saved_fd;
} log_capture;

/* Points stderr at a temporary file (fails the test if it cannot). */
void log_capture_begin(log_capture *c);
/* Restores stderr; returns what was written (owned: free()). */
char *log_capture_end(log_capture *c);
/* Lines of text containing needle. */
size_t log_count_lines(const char *text, const char *needle);
/* The summaries for the site named what ("... N more lines like \"what\" ..."): how many there
 * are in *n_summaries (may be NULL), and the sum of their counts. */
uint64_t log_summarized(const char *text, const char *what, size_t *n_summaries);

#endif /* LOG_CAPTURE_H */
