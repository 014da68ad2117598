/* alloc_count.h: allocation counters for "no allocation on this path" tests.
 * In ASan builds (as CI's) the sanitizer allocator's hooks count every malloc; other builds can
 * only count jansson's allocations (its allocator hooks). Test-only process state: the hooks
 * take no context pointer. */
#ifndef ALLOC_COUNT_H
#define ALLOC_COUNT_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define ALLOC_COUNT_EVERY_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALLOC_COUNT_EVERY_MALLOC 1
#endif
#endif
#ifndef ALLOC_COUNT_EVERY_MALLOC
#define ALLOC_COUNT_EVERY_MALLOC 0
#endif

/* Installs the counting hooks (the sanitizer's when available, and jansson's). Call once, in
 * main() or a test before counting. */
void alloc_count_install(void);
/* Every malloc since install (stays 0 without ALLOC_COUNT_EVERY_MALLOC). */
size_t alloc_count_mallocs(void);
/* jansson allocations since install. */
size_t alloc_count_json(void);
/* The widest count this build has: every malloc, or else jansson's. */
size_t alloc_count_best(void);

#endif /* ALLOC_COUNT_H */
