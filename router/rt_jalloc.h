/* rt_jalloc.h: the router process's allocator for jansson values, message buffers (wamp_buf)
 * and pending calls (rt_dealer.c): small blocks recycled through per-size free lists.
 * Every message the router sends is encoded into a buffer, a pending call is a block, and while a
 * trace runs the envelopes become jansson values (the hub reads them): from 3 to about 25
 * blocks of 16-200 bytes per RPC call. glibc's malloc/free cost ~130 instructions per pair for
 * that pattern (its per-thread cache holds 7 blocks per size); a free list costs a fraction of
 * it. Every block is a plain malloc() block (jansson's
 * json_dumps() strings are released with free() by their users, and may be), so a block's size
 * class is read back with malloc_usable_size(). Blocks up to RT_JALLOC_MAX_SMALL bytes are
 * allocated at their class's full size (classes of 16 bytes, malloc's own granularity) and,
 * when released through rt_jalloc_free(), kept on their class's list, at most RT_JALLOC_KEEP
 * per class (what the lists hold is bounded: about 1 MiB); larger ones go straight to
 * malloc/free. Thread: the lists belong to the thread that called rt_jalloc_install(); other
 * threads (none uses jansson today) get plain malloc/free through the same functions. Blocks
 * kept on a list are poisoned for AddressSanitizer, so a use after free is still reported. */
#ifndef RT_JALLOC_H
#define RT_JALLOC_H

#include <stddef.h>

/* Largest request (bytes) served from a free list; blocks are classes of 16 bytes up to it. */
#define RT_JALLOC_MAX_SMALL 512
/* Free blocks kept per size class; a free beyond it goes back to malloc. */
#define RT_JALLOC_KEEP 128

/* Makes the calling thread the lists' owner and installs rt_jalloc_malloc/rt_jalloc_free as
 * jansson's allocator (json_set_alloc_funcs) and wamp_buf's (wamp_buf_set_alloc). Once, in
 * main(), before any jansson value exists. At exit (atexit(), registered by the first call) the
 * lists are released, so that a leak checker reports only real leaks. */
void rt_jalloc_install(void);
/* A block of at least size bytes (16-byte aligned), or NULL on allocation failure. */
void *rt_jalloc_malloc(size_t size);
/* Releases a block from rt_jalloc_malloc (NULL-safe). */
void rt_jalloc_free(void *ptr);
/* Releases every block kept on the lists (the owner thread only; elsewhere a no-op). The
 * allocator stays usable. */
void rt_jalloc_trim(void);
/* Blocks currently kept on the lists (for tests). */
size_t rt_jalloc_kept(void);

#endif /* RT_JALLOC_H */
