/* trace_persist_seg.c: file names and file I/O of a persisted trace (with the test seam of
 * trace_persist_io), the segment table and its in-memory index, and the reset of a block of
 * compact records. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_persist_int.h"

void persist_block_reset(block *b)
{
    for (size_t i = 0; i < b->n_peers; i++) {
        trace_peer *pe = b->peers[i];
        trace_peer_unref(&pe);
    }
    for (size_t i = 0; i < b->n_uris; i++) {
        trace_str *u = b->uris[i];
        trace_str_unref(&u);
    }
    wamp_buf_unref(&b->wire);
    wamp_buf_unref(&b->base);
    b->base_off = NO_BASE;
    memset(b->memo_peer, 0, sizeof(b->memo_peer));
    b->n_peers = b->n_uris = 0;
    b->has_corr = false;
    b->open = false;
    b->has_prev = false;
    b->prev_key = 0;
}

void persist_defs_release(trace_persist *p)
{
    for (size_t i = 0; i < DEF_SLOTS; i++) {
        trace_peer_unref(&p->defs[i].peer);
    }
}

void persist_seg_name(char *out, size_t n, uint64_t first_seq, const char *ext)
{
    snprintf(out, n, "%020" PRIu64 ".%s", first_seq, ext);
}

char *persist_path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 2);
    if (s) {
        memcpy(s, a, la);
        s[la] = '/';
        memcpy(s + la + 1, b, lb + 1);
    }
    return s;
}

/* open(2) of dir/name; -1 with errno. */
int persist_open_in(const char *dir, const char *name, int flags)
{
    char *path = persist_path_join(dir, name);
    if (!path) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(path, flags | O_CLOEXEC, 0644);
    int e = errno;
    free(path);
    errno = e;
    return fd;
}

/* write(2) and fsync(2), or the test seam's hooks (trace_persist_io). */
static ssize_t io_write(const trace_persist_io *io, int fd, const void *data, size_t n)
{
    return io && io->write ? io->write(io->ctx, fd, data, n) : write(fd, data, n);
}

int persist_fsync(const trace_persist_io *io, int fd)
{
    return io && io->fsync ? io->fsync(io->ctx, fd) : fsync(fd);
}

/* fsync(2) of a directory: a file's own fsync does not make its name (a new segment, a renamed
 * meta.json) survive a power loss. 0, or -1 with errno; EINVAL (a file system that cannot sync
 * directories) counts as done. */
int persist_sync_dir(const trace_persist_io *io, const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = persist_fsync(io, fd) == 0 || errno == EINVAL ? 0 : -1;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int persist_unlink_in(const char *dir, const char *name)
{
    char *path = persist_path_join(dir, name);
    if (!path) {
        return -1;
    }
    int rc = unlink(path);
    free(path);
    return rc;
}

/* Deletes a segment's two files (errors ignored: retention tries again with the next one). */
void persist_unlink_segment(const char *dir, uint64_t first_seq)
{
    char name[40];
    persist_seg_name(name, sizeof(name), first_seq, "seg");
    (void)persist_unlink_in(dir, name);
    persist_seg_name(name, sizeof(name), first_seq, "idx");
    (void)persist_unlink_in(dir, name);
}

/* Writes all n bytes; false with errno on failure (a partial write included). */
bool persist_write_all(const trace_persist_io *io, int fd, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n) {
        ssize_t w = io_write(io, fd, p, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        if (w == 0) {
            errno = EIO;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

bool persist_idx_push(seg *s, uint64_t seq, uint64_t off)
{
    if (s->n_idx == s->cap_idx) {
        size_t ncap = s->cap_idx ? s->cap_idx * 2 : 16;
        idx_entry *n = realloc(s->idx, ncap * sizeof(*n));
        if (!n) {
            return false;
        }
        s->idx = n;
        s->cap_idx = ncap;
    }
    s->idx[s->n_idx++] = (idx_entry){seq, off};
    return true;
}

seg *persist_seg_push(trace_persist *p, uint64_t first_seq)
{
    if (p->n_segs == p->cap_segs) {
        size_t ncap = p->cap_segs ? p->cap_segs * 2 : 8;
        seg *n = realloc(p->segs, ncap * sizeof(*n));
        if (!n) {
            return NULL;
        }
        p->segs = n;
        p->cap_segs = ncap;
    }
    seg *s = &p->segs[p->n_segs++];
    memset(s, 0, sizeof(*s));
    s->first_seq = s->next_seq = first_seq;
    return s;
}

/* Reads n bytes at off of a file; false if fewer were available. */
bool persist_pread_all(int fd, void *dst, size_t n, uint64_t off)
{
    unsigned char *d = dst;
    while (n) {
        ssize_t r = pread(fd, d, n, (off_t)off);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        d += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return true;
}
