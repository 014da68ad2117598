/* wamp_buf.c: one allocation per buffer: header, headroom, data. */
#include "wamp_buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The public head (wamp_buf.h, read by the inline accessors), then the bytes:
 * h.data = store + WAMP_BUF_HEADROOM. */
struct wamp_buf {
    struct wamp_buf_head h;
    unsigned char store[];
};

static void *(*buf_malloc)(size_t) = malloc;
static void (*buf_free)(void *) = free;

void wamp_buf_set_alloc(void *(*malloc_fn)(size_t), void (*free_fn)(void *))
{
    buf_malloc = malloc_fn ? malloc_fn : malloc;
    buf_free = free_fn ? free_fn : free;
}

static wamp_buf *buf_alloc(size_t cap)
{
    if (cap > SIZE_MAX - sizeof(wamp_buf) - WAMP_BUF_HEADROOM) {
        return NULL;
    }
    wamp_buf *b = buf_malloc(sizeof(*b) + WAMP_BUF_HEADROOM + cap);
    if (!b) {
        return NULL;
    }
    b->h.refs = 1;
    b->h.len = 0;
    b->h.cap = cap;
    b->h.data = b->store + WAMP_BUF_HEADROOM;
    return b;
}

wamp_buf *wamp_buf_new(size_t cap)
{
    return buf_alloc(cap);
}

wamp_buf *wamp_buf_new_copy(const void *data, size_t len)
{
    wamp_buf *b = buf_alloc(len);
    if (b && len) {
        memcpy(b->h.data, data, len);
        b->h.len = len;
    }
    return b;
}

void wamp_buf_free_(wamp_buf *b)
{
    buf_free(b);
}

/* Grows *b so that n more bytes fit; doubles to keep appends amortised O(1). */
static wamp_err buf_grow(wamp_buf **bp, size_t n)
{
    wamp_buf *b = *bp;
    if (!b) {
        b = buf_alloc(n < 256 ? 256 : n);
        if (!b) {
            return WAMP_ENOMEM;
        }
        *bp = b;
        return WAMP_OK;
    }
    if (b->h.refs != 1) {
        return WAMP_EINVAL;
    }
    if (n <= b->h.cap - b->h.len) {
        return WAMP_OK;
    }
    if (n > SIZE_MAX / 2 - b->h.len) {
        return WAMP_ENOMEM;
    }
    size_t cap = b->h.cap ? b->h.cap : 256;
    while (cap - b->h.len < n) {
        cap *= 2;
    }
    if (cap > SIZE_MAX - sizeof(wamp_buf) - WAMP_BUF_HEADROOM) {
        return WAMP_ENOMEM;
    }
    wamp_buf *nb = realloc(b, sizeof(*b) + WAMP_BUF_HEADROOM + cap);
    if (!nb) {
        return WAMP_ENOMEM;
    }
    nb->h.cap = cap;
    nb->h.data = nb->store + WAMP_BUF_HEADROOM;
    *bp = nb;
    return WAMP_OK;
}

wamp_err wamp_buf_append(wamp_buf **b, const void *p, size_t n, size_t max)
{
    size_t cur = *b ? (*b)->h.len : 0;
    if (n > max || cur > max - n) {
        return WAMP_ETOOBIG;
    }
    wamp_err err = buf_grow(b, n);
    if (err != WAMP_OK) {
        return err;
    }
    if (n) {
        memcpy((*b)->h.data + (*b)->h.len, p, n);
        (*b)->h.len += n;
    }
    return WAMP_OK;
}

unsigned char *wamp_buf_reserve(wamp_buf **b, size_t n)
{
    if (buf_grow(b, n) != WAMP_OK) {
        return NULL;
    }
    return (*b)->h.data + (*b)->h.len;
}

void wamp_buf_clear(wamp_buf *b)
{
    wamp_buf_truncate(b, 0);
}

void wamp_buf_truncate(wamp_buf *b, size_t len)
{
    if (b && b->h.refs == 1 && len < b->h.len) {
        b->h.len = len;
    }
}
