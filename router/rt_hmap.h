/* rt_hmap.h: intrusive chained hash table. Entries embed an rt_hnode and are found again with
 * RT_CONTAINER_OF; the table never allocates per entry and never owns entries (their container
 * does). Keys are compared by the caller: rt_hmap_first()/rt_hmap_next() walk the entries that
 * share a hash. Service thread only. */
#ifndef RT_HMAP_H
#define RT_HMAP_H

#include <stddef.h>
#include <stdint.h>

#include "wamp_err.h"

#define RT_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

typedef struct rt_hnode {
    struct rt_hnode *next;
    uint64_t hash;
} rt_hnode;

typedef struct rt_hmap {
    rt_hnode **buckets; /* owned array; NULL while empty */
    size_t mask;        /* bucket count - 1 (power of two) */
    size_t count;
} rt_hmap;

/* Empty table; allocates nothing. */
void rt_hmap_init(rt_hmap *m);
/* Frees the bucket array (entries are not touched). */
void rt_hmap_fini(rt_hmap *m);
/* Links n under hash (duplicates allowed). WAMP_ENOMEM if the table had to grow and could not:
 * n is then not linked. */
wamp_err rt_hmap_insert(rt_hmap *m, rt_hnode *n, uint64_t hash);
/* Unlinks n, which must be linked in m. */
void rt_hmap_remove(rt_hmap *m, rt_hnode *n);
/* First entry with this hash, or NULL; rt_hmap_next() gives the following ones. */
rt_hnode *rt_hmap_first(const rt_hmap *m, uint64_t hash);
rt_hnode *rt_hmap_next(const rt_hnode *n);

/* Iteration over every entry: `for (rt_hmap_iter it = rt_hmap_iter_begin(m); it.node;
 * rt_hmap_iter_next(m, &it))`. The current entry may be removed only after advancing past it. */
typedef struct rt_hmap_iter {
    size_t bucket;
    rt_hnode *node;
} rt_hmap_iter;

rt_hmap_iter rt_hmap_iter_begin(const rt_hmap *m);
void rt_hmap_iter_next(const rt_hmap *m, rt_hmap_iter *it);

/* Hashes (FNV-1a for strings, a 64-bit mixer for integers). */
uint64_t rt_hash_str(const char *s);
uint64_t rt_hash_u64(uint64_t v);

#endif /* RT_HMAP_H */
