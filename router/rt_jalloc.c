/* rt_jalloc.c: jansson's allocator in the router process (see rt_jalloc.h). */
#include "rt_jalloc.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "wamp_buf.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define JALLOC_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define JALLOC_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define JALLOC_POISON(p, n)   ((void)(p), (void)(n))
#define JALLOC_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Size classes: class k holds blocks whose usable size is at least 16 * k - 8 bytes (malloc's
 * chunks of 16 * k bytes, 8 of them its own header). A request of n bytes takes class
 * ceil((n + 8) / 16); a freed block of usable size u joins class floor((u + 8) / 16): every
 * block on a list is large enough for every request that list serves, whatever sizes the
 * allocator (or a sanitizer's) really hands out. */
#define JALLOC_GRAIN   16u
#define JALLOC_CLASSES ((RT_JALLOC_MAX_SMALL + 8 + JALLOC_GRAIN - 1) / JALLOC_GRAIN + 1)

/* A free block on a list: the link lives in its (otherwise unused) body. */
typedef struct jalloc_free {
    struct jalloc_free *next;
    size_t usable;
} jalloc_free;

typedef struct jalloc_lists {
    jalloc_free *head[JALLOC_CLASSES];
    uint32_t kept[JALLOC_CLASSES];
} jalloc_lists;

static jalloc_lists lists;
static _Thread_local bool owner;

void *rt_jalloc_malloc(size_t size)
{
    if (owner && size <= RT_JALLOC_MAX_SMALL) {
        size_t cls = (size + 8 + JALLOC_GRAIN - 1) / JALLOC_GRAIN;
        jalloc_free *f = lists.head[cls];
        if (f) {
            JALLOC_UNPOISON(f, sizeof(*f));
            lists.head[cls] = f->next;
            lists.kept[cls]--;
            JALLOC_UNPOISON(f, f->usable);
            return f;
        }
        /* A new block of the class's whole size, so that it can serve the class when freed. */
        size = cls * JALLOC_GRAIN - 8;
    }
    return malloc(size);
}

void rt_jalloc_free(void *ptr)
{
    if (!ptr) {
        return;
    }
    if (owner) {
        size_t usable = malloc_usable_size(ptr);
        size_t cls = (usable + 8) / JALLOC_GRAIN;
        if (usable >= sizeof(jalloc_free) && cls < JALLOC_CLASSES &&
            lists.kept[cls] < RT_JALLOC_KEEP) {
            jalloc_free *f = ptr;
            f->next = lists.head[cls];
            f->usable = usable;
            lists.head[cls] = f;
            lists.kept[cls]++;
            JALLOC_POISON(f, usable);
            return;
        }
    }
    free(ptr);
}

/* At exit, before the leak checker runs (it registered its own handler earlier): the lists are
 * released and every later release goes straight to free(). */
static void jalloc_at_exit(void)
{
    rt_jalloc_trim();
    owner = false;
}

void rt_jalloc_install(void)
{
    static bool registered;
    if (!registered) {
        registered = atexit(jalloc_at_exit) == 0;
    }
    owner = true;
    json_set_alloc_funcs(rt_jalloc_malloc, rt_jalloc_free);
    wamp_buf_set_alloc(rt_jalloc_malloc, rt_jalloc_free);
}

void rt_jalloc_trim(void)
{
    if (!owner) {
        return;
    }
    for (size_t c = 0; c < JALLOC_CLASSES; c++) {
        while (lists.head[c]) {
            jalloc_free *f = lists.head[c];
            JALLOC_UNPOISON(f, sizeof(*f));
            lists.head[c] = f->next;
            free(f);
        }
        lists.kept[c] = 0;
    }
}

size_t rt_jalloc_kept(void)
{
    size_t n = 0;
    for (size_t c = 0; c < JALLOC_CLASSES; c++) {
        n += lists.kept[c];
    }
    return n;
}
