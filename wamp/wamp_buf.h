/* wamp_buf.h: refcounted byte buffer holding one encoded WAMP message (or a message being
 * reassembled). WAMP_BUF_HEADROOM bytes before the data are scratch space that a transport may
 * use for its frame header (WebSocket LWS_PRE, RawSocket 4-byte prefix) without copying.
 * Ownership: each reference is released with wamp_buf_unref(); the buffer is freed at zero.
 * Shared buffers (refs > 1) are immutable. Service thread only (refcount is not atomic). */
#ifndef WAMP_BUF_H
#define WAMP_BUF_H

#include <stddef.h>

#include "wamp_err.h"

#define WAMP_BUF_HEADROOM 16

typedef struct wamp_buf wamp_buf;

/* The head of every buffer, for the inline accessors below only: the hot paths (fan-out, the
 * trace capture path) take references and read lengths per message, and a call into another
 * translation unit for each cost more than the access itself (about 4 ns a message in the
 * router's profile). Everything else goes through the functions. */
struct wamp_buf_head {
    size_t refs;
    size_t len;
    size_t cap;
    unsigned char *data; /* the first data byte; WAMP_BUF_HEADROOM bytes precede it */
};

/* Sets the functions that allocate and release buffers (default: malloc and free; NULL
 * restores them). malloc_fn must return blocks that realloc() and free() accept (a growing buffer
 * is reallocated with realloc()), and free_fn must accept any such block: a free-list allocator
 * in front of malloc. Process-global: call it before any buffer exists (main()). */
void wamp_buf_set_alloc(void *(*malloc_fn)(size_t), void (*free_fn)(void *));

/* Frees a buffer whose last reference was dropped (wamp_buf_unref's slow path). */
void wamp_buf_free_(wamp_buf *b);

/* New buffer with one reference, length 0 and room for cap bytes; NULL on allocation failure. */
wamp_buf *wamp_buf_new(size_t cap);
/* New buffer holding a copy of len bytes of data; NULL on allocation failure. */
wamp_buf *wamp_buf_new_copy(const void *data, size_t len);

/* Takes one more reference; returns b. */
static inline wamp_buf *wamp_buf_ref(wamp_buf *b)
{
    ((struct wamp_buf_head *)(void *)b)->refs++;
    return b;
}

/* Drops the reference *b (NULL-safe) and sets *b = NULL. */
static inline void wamp_buf_unref(wamp_buf **b)
{
    if (b && *b) {
        if (--((struct wamp_buf_head *)(void *)*b)->refs == 0) {
            wamp_buf_free_(*b);
        }
        *b = NULL;
    }
}

/* Borrowed pointer to the first data byte; WAMP_BUF_HEADROOM writable bytes precede it. */
static inline unsigned char *wamp_buf_data(wamp_buf *b)
{
    return ((struct wamp_buf_head *)(void *)b)->data;
}

static inline const unsigned char *wamp_buf_cdata(const wamp_buf *b)
{
    return ((const struct wamp_buf_head *)(const void *)b)->data;
}

static inline size_t wamp_buf_len(const wamp_buf *b)
{
    return ((const struct wamp_buf_head *)(const void *)b)->len;
}

static inline size_t wamp_buf_refs(const wamp_buf *b)
{
    return ((const struct wamp_buf_head *)(const void *)b)->refs;
}

/* Appends n bytes to *b, growing (and possibly moving) it. *b may be NULL (a buffer is created).
 * WAMP_ETOOBIG if the length would exceed max (buffer unchanged); WAMP_ENOMEM (unchanged);
 * WAMP_EINVAL if *b is shared. */
wamp_err wamp_buf_append(wamp_buf **b, const void *p, size_t n, size_t max);
/* Makes sure n more bytes fit without reallocating; returns a pointer to the first of them
 * (write them, then call wamp_buf_commit). NULL on allocation failure or shared buffer. */
unsigned char *wamp_buf_reserve(wamp_buf **b, size_t n);

/* Adds n bytes, previously written through wamp_buf_reserve() or wamp_buf_tail(), to the
 * length. */
static inline void wamp_buf_commit(wamp_buf *b, size_t n)
{
    ((struct wamp_buf_head *)(void *)b)->len += n;
}

/* The writers' fast path: a pointer to n free bytes after the data if b (NULL-safe) is unshared
 * and has them, without growing it (write them, then call wamp_buf_commit); NULL otherwise
 * (wamp_buf_reserve() grows the buffer). */
static inline unsigned char *wamp_buf_tail(wamp_buf *b, size_t n)
{
    struct wamp_buf_head *h = (struct wamp_buf_head *)(void *)b;
    return h && h->refs == 1 && h->cap - h->len >= n ? h->data + h->len : NULL;
}

/* Sets the length to 0 keeping the allocation (unshared buffers only). */
void wamp_buf_clear(wamp_buf *b);
/* Shortens the length to len, keeping the allocation (unshared buffers; no-op if len is not
 * below the length). */
void wamp_buf_truncate(wamp_buf *b, size_t len);

#endif /* WAMP_BUF_H */
