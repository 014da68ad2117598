/* log_capture.c: stderr into a temporary file with dup2, and counting in what it got. */
#include "log_capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

void log_capture_begin(log_capture *c)
{
    snprintf(c->path, sizeof(c->path), "/tmp/log_capture_XXXXXX");
    int fd = mkstemp(c->path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    c->saved_fd = dup(STDERR_FILENO);
    ck_assert_int_ge(c->saved_fd, 0);
    ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
    close(fd);
}

char *log_capture_end(log_capture *c)
{
    fflush(stderr);
    ck_assert_int_ge(dup2(c->saved_fd, STDERR_FILENO), 0);
    close(c->saved_fd);
    FILE *f = fopen(c->path, "r");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    ck_assert_int_ge(size, 0);
    rewind(f);
    char *text = calloc(1, (size_t)size + 1);
    ck_assert_ptr_nonnull(text);
    text[fread(text, 1, (size_t)size, f)] = '\0';
    fclose(f);
    unlink(c->path);
    return text;
}

size_t log_count_lines(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *hit = strstr(line, needle);
        n += hit && hit < line + len;
        line += len + (eol != NULL);
    }
    return n;
}

uint64_t log_summarized(const char *text, const char *what, size_t *n_summaries)
{
    char tail[160];
    snprintf(tail, sizeof(tail), " more lines like \"%s\"", what);
    uint64_t sum = 0;
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, "(rate-limited) ")); p++) {
        char *end;
        unsigned long long count = strtoull(p + strlen("(rate-limited) "), &end, 10);
        if (strncmp(end, tail, strlen(tail)) == 0) {
            sum += count;
            n++;
        }
    }
    if (n_summaries) {
        *n_summaries = n;
    }
    return sum;
}
