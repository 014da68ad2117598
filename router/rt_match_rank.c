/* rt_match_rank.c: see rt_match_rank.h. */
#include "rt_match_rank.h"

#include <stddef.h>
#include <string.h>

/* One run length per call, -1 past the end. */
static int next_run(const char **p)
{
    const char *s = *p;
    if (!s) {
        return -1;
    }
    int n = 0;
    for (;;) {
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s);
        if (len == 0) {
            *p = dot ? dot + 1 : NULL;
            return n;
        }
        n++;
        if (!dot) {
            *p = NULL;
            return n;
        }
        s = dot + 1;
    }
}

int rt_wildcard_cmp(const char *a, const char *b)
{
    for (;;) {
        int ra = next_run(&a), rb = next_run(&b);
        if (ra != rb) {
            return ra - rb;
        }
        if (ra < 0) {
            return 0;
        }
    }
}
