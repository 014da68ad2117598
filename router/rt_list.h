/* rt_list.h: intrusive circular doubly linked list (unlinking never allocates). A head is an
 * rt_list whose next/prev point to itself when empty. Entries are found with RT_CONTAINER_OF. */
#ifndef RT_LIST_H
#define RT_LIST_H

#include <stdbool.h>

typedef struct rt_list {
    struct rt_list *prev, *next;
} rt_list;

static inline void rt_list_init(rt_list *l)
{
    l->prev = l;
    l->next = l;
}

static inline bool rt_list_is_empty(const rt_list *l)
{
    return l->next == l;
}

static inline void rt_list_add_tail(rt_list *head, rt_list *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}

/* Unlinks n and makes it an empty list again (so a second removal is harmless). */
static inline void rt_list_remove(rt_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    rt_list_init(n);
}

/* Safe against removal of the current entry: `for (rt_list *it = h->next, *nx = it->next;
 * it != h; it = nx, nx = it->next)`. */
#define RT_LIST_FOREACH_SAFE(it, nx, head) \
    for (rt_list *it = (head)->next, *nx = it->next; it != (head); it = nx, nx = it->next)

#endif /* RT_LIST_H */
