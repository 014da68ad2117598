/* alloc_count.c */
#include "alloc_count.h"

#include <stdlib.h>

#include <jansson.h>

static size_t n_mallocs;
static size_t n_json;

#if ALLOC_COUNT_EVERY_MALLOC
/* Exported by the sanitizer runtimes (compiler-rt's sanitizer/allocator_interface.h). */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));

static void on_malloc(const volatile void *p, size_t n)
{
    (void)p;
    (void)n;
    n_mallocs++;
}

static void on_free(const volatile void *p)
{
    (void)p;
}
#endif

static void *json_count_malloc(size_t n)
{
    n_json++;
    return malloc(n);
}

static void json_count_free(void *p)
{
    free(p);
}

void alloc_count_install(void)
{
#if ALLOC_COUNT_EVERY_MALLOC
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
#endif
    json_set_alloc_funcs(json_count_malloc, json_count_free);
}

size_t alloc_count_mallocs(void)
{
    return n_mallocs;
}

size_t alloc_count_json(void)
{
    return n_json;
}

size_t alloc_count_best(void)
{
    return ALLOC_COUNT_EVERY_MALLOC ? n_mallocs : n_json;
}
