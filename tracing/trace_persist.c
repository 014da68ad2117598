/* trace_persist.c: the persisted trace store's API: create, open, free and remove a trace,
 * its accessors and gaps, flush and tick, the end file (seal) and meta.json. The other parts are
 * trace_persist_*.c (trace_persist_int.h says which does what); the on-disk format is
 * PERSIST_FORMAT.md. */
#include "trace_persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_lock.h"
#include "trace_persist_int.h"

#define NS_PER_MS 1000000ull

/* --- create / open / free ----------------------------------------------------------------------
 */

static trace_persist *persist_alloc(const trace_persist_config *cfg)
{
    trace_persist *p = calloc(1, sizeof(*p));
    if (!p) {
        return NULL;
    }
    p->fd = -1;
    p->idx_fd = -1;
    persist_marks_clear(p);
    p->io = cfg ? cfg->io : NULL;
    p->io_from = NO_SEQ;
    p->segment_bytes =
            cfg && cfg->segment_bytes ? cfg->segment_bytes : TRACE_PERSIST_SEGMENT_DEFAULT;
    p->fsync = cfg ? cfg->fsync : TRACE_FSYNC_INTERVAL;
    p->fsync_interval_ns =
            (uint64_t)(cfg && cfg->fsync_interval_ms ? cfg->fsync_interval_ms : 1000u) * NS_PER_MS;
    return p;
}

static const char *data_dir_of(const trace_persist_config *cfg)
{
    return cfg && cfg->data_dir ? cfg->data_dir : TRACE_PERSIST_DATA_DIR_DEFAULT;
}

static wamp_err why_errno(char *why, size_t why_len, const char *what, const char *path)
{
    if (why && why_len) {
        snprintf(why, why_len, "persist: cannot %s %s: %s", what, path, strerror(errno));
    }
    return WAMP_EINVAL;
}

/* The end file, its space allocated now (zeros: no end recorded), so that trace_persist_seal()
 * overwrites it in place even on a full disk. false with errno. */
static bool make_end_file(trace_persist *p)
{
    int fd = persist_open_in(p->dir, END_FILE, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) {
        return false;
    }
    int rc = posix_fallocate(fd, 0, END_ALLOC);
    if (rc != 0) {
        /* A file system without fallocate: zeros written are allocated as well. */
        unsigned char zero[END_ALLOC] = {0};
        rc = persist_write_all(NULL, fd, zero, sizeof(zero)) ? 0 : errno;
    }
    close(fd);
    errno = rc;
    return rc == 0;
}

wamp_err trace_persist_create(const trace_persist_config *cfg, uint64_t ts_ns, uint64_t first_seq,
                              trace_persist **out, char *why, size_t why_len)
{
    *out = NULL;
    const char *root = data_dir_of(cfg);
    if (trace_mkdir_p(root, 0700) != 0) {
        return why_errno(why, why_len, "create the data directory", root);
    }
    trace_persist *p = persist_alloc(cfg);
    if (!p) {
        return WAMP_ENOMEM;
    }
    char id[TRACE_PERSIST_ID_MAX];
    for (unsigned n = 0;; n++) {
        /* A name that sorts by start time; a suffix only for two starts in the same ns. */
        if (n) {
            snprintf(id, sizeof(id), "%020" PRIu64 "-%u", ts_ns, n);
        } else {
            snprintf(id, sizeof(id), "%020" PRIu64, ts_ns);
        }
        free(p->dir);
        p->dir = persist_path_join(root, id);
        if (!p->dir) {
            trace_persist_free(p);
            return WAMP_ENOMEM;
        }
        if (mkdir(p->dir, 0755) == 0) {
            break;
        }
        if (errno != EEXIST || n > 1000) {
            wamp_err err = why_errno(why, why_len, "create", p->dir);
            trace_persist_free(p);
            return err;
        }
    }
    p->id = strdup(id);
    p->data_dir = strdup(root);
    if (!p->id || !p->data_dir) {
        rmdir(p->dir);
        trace_persist_free(p);
        return WAMP_ENOMEM;
    }
    p->w = persist_writer_start(
            p->dir, p->data_dir,
            cfg && cfg->write_backlog ? cfg->write_backlog : TRACE_PERSIST_BACKLOG_DEFAULT, p->io);
    if (!p->w) {
        wamp_err err = why_errno(why, why_len, "start the writer thread of", p->dir);
        rmdir(p->dir);
        trace_persist_free(p);
        return err;
    }
    p->writable = true;
    p->new_dir = true;
    p->first_seq = first_seq;
    p->handed_seq = first_seq;
    p->lost_next = first_seq;
    p->w->written_next = first_seq; /* no job yet: the thread does not read it */
    if (!make_end_file(p)) {
        wamp_err err = why_errno(why, why_len, "create the end file in", p->dir);
        (void)trace_persist_remove(p);
        return err;
    }
    *out = p;
    return WAMP_OK;
}

wamp_err trace_persist_open(const trace_persist_config *cfg, const char *persistent_id,
                            trace_persist **out, json_t **meta, char *why, size_t why_len)
{
    *out = NULL;
    *meta = NULL;
    if (why && why_len) {
        why[0] = '\0';
    }
    if (!persistent_id || !*persistent_id || strchr(persistent_id, '/') ||
        strlen(persistent_id) >= TRACE_PERSIST_ID_MAX) {
        return WAMP_ENOTFOUND;
    }
    trace_persist *p = persist_alloc(cfg);
    if (!p) {
        return WAMP_ENOMEM;
    }
    wamp_err err = WAMP_ENOMEM;
    p->dir = persist_path_join(data_dir_of(cfg), persistent_id);
    p->id = strdup(persistent_id);
    if (!p->dir || !p->id) {
        goto fail;
    }
    err = persist_reload(p, why, why_len);
    if (err != WAMP_OK) {
        goto fail;
    }
    err = WAMP_ENOMEM;
    char *mpath = persist_path_join(p->dir, "meta.json");
    if (!mpath) {
        goto fail;
    }
    *meta = json_load_file(mpath, 0, NULL);
    free(mpath);
    *out = p;
    return WAMP_OK;

fail:
    trace_persist_free(p);
    return err;
}

void trace_persist_free(trace_persist *p)
{
    if (!p) {
        return;
    }
    if (p->writable) {
        (void)persist_write_out(p);
    }
    persist_writer_stop(p->w); /* after every job queued */
    p->w = NULL;
    persist_close_active(p); /* and releases the block */
    persist_defs_release(p);
    for (size_t i = 0; i < p->n_segs; i++) {
        free(p->segs[i].idx);
    }
    free(p->segs);
    free(p->gaps);
    free(p->buf);
    free(p->error);
    free(p->data_dir);
    free(p->dir);
    free(p->id);
    free(p);
}

bool trace_persist_remove(trace_persist *p)
{
    if (!p) {
        return true;
    }
    persist_writer_stop(p->w);
    p->w = NULL;
    persist_close_active(p);
    p->writable = false;
    bool ok = true;
    DIR *d = opendir(p->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            if (persist_unlink_in(p->dir, e->d_name) != 0) {
                ok = false;
            }
        }
        closedir(d);
    }
    if (rmdir(p->dir) != 0 && errno != ENOENT) {
        ok = false;
    }
    trace_persist_free(p);
    return ok;
}

void trace_persist_writer_stats(const trace_persist *p, uint64_t *waits, uint64_t *peak)
{
    *waits = *peak = 0;
    if (p->w) {
        pthread_mutex_lock(&p->w->mu);
        *waits = p->w->waits;
        *peak = p->w->peak;
        pthread_mutex_unlock(&p->w->mu);
    }
}

trace_persist_sync_stats trace_persist_get_sync_stats(const trace_persist *p)
{
    trace_persist_sync_stats s = {0};
    if (p->w) {
        pthread_mutex_lock(&p->w->mu);
        s = p->w->sync;
        pthread_mutex_unlock(&p->w->mu);
    }
    return s;
}

const char *trace_persist_id(const trace_persist *p)
{
    return p->id;
}

const char *trace_persist_error(const trace_persist *p)
{
    return p->error;
}

void trace_persist_set_retention(trace_persist *p, uint64_t max_bytes, uint64_t max_age_ns)
{
    p->max_bytes = max_bytes;
    p->max_age_ns = max_age_ns;
}

uint64_t trace_persist_first_seq(const trace_persist *p)
{
    if (!p->writable) {
        return p->first_seq; /* settle_segments(): a gap may come first */
    }
    return p->n_segs ? p->segs[0].first_seq : p->first_seq;
}

uint64_t trace_persist_next_seq(const trace_persist *p)
{
    uint64_t n = files_next(p);
    n = p->lost_next > n ? p->lost_next : n;
    return p->end_next > n ? p->end_next : n;
}

uint64_t trace_persist_durable_next(const trace_persist *p)
{
    if (p->io_from != NO_SEQ) {
        return p->io_from;
    }
    if (!p->writable) {
        return files_next(p);
    }
    uint64_t n = p->handed_seq;
    if (p->w) {
        /* What the writer has written of it. */
        pthread_mutex_lock(&p->w->mu);
        n = p->w->written_next;
        pthread_mutex_unlock(&p->w->mu);
    }
    return n;
}

size_t trace_persist_gap_count(const trace_persist *p)
{
    uint64_t first = trace_persist_first_seq(p);
    size_t n = 0;
    for (size_t i = 0; i < p->n_gaps; i++) {
        n += p->gaps[i].to_seq >= first;
    }
    return n + (p->io_from != NO_SEQ && trace_persist_next_seq(p) > p->io_from);
}

trace_gap trace_persist_gap(const trace_persist *p, size_t i)
{
    uint64_t first = trace_persist_first_seq(p);
    for (size_t k = 0; k < p->n_gaps; k++) {
        if (p->gaps[k].to_seq < first) {
            continue;
        }
        if (i-- == 0) {
            trace_gap g = p->gaps[k];
            g.from_seq = g.from_seq < first ? first : g.from_seq;
            return g;
        }
    }
    trace_gap g = {.from_seq = p->io_from,
                   .to_seq = trace_persist_next_seq(p) - 1,
                   .reason = TRACE_GAP_IO_ERROR};
    return g;
}

uint64_t trace_persist_records(const trace_persist *p)
{
    uint64_t first = trace_persist_first_seq(p);
    uint64_t n = trace_persist_next_seq(p) - first;
    size_t ng = trace_persist_gap_count(p);
    for (size_t i = 0; i < ng; i++) {
        trace_gap g = trace_persist_gap(p, i);
        n -= g.to_seq - g.from_seq + 1;
    }
    return n;
}

wamp_err trace_persist_seal(trace_persist *p)
{
    if (!p->writable) {
        return WAMP_OK;
    }
    unsigned char rec[END_LEN];
    memcpy(rec, END_MAGIC, 4);
    put64(rec + 4, trace_persist_next_seq(p));
    put64(rec + 12, trace_persist_durable_next(p));
    memset(rec + 20, 0, 8);
    put32(rec + 28, trace_crc32c(0, rec, 28));
    int fd = persist_open_in(p->dir, END_FILE, O_WRONLY);
    if (fd < 0) {
        return persist_fail_io(p, "open", END_FILE);
    }
    bool ok = pwrite(fd, rec, sizeof(rec), 0) == (ssize_t)sizeof(rec) &&
              persist_fsync(p->io, fd) == 0;
    int e = errno;
    close(fd);
    errno = e ? e : EIO;
    return ok ? WAMP_OK : persist_fail_io(p, "write", END_FILE);
}

uint64_t trace_persist_bytes(const trace_persist *p)
{
    return p->bytes;
}

uint64_t trace_persist_last_ts(const trace_persist *p)
{
    for (size_t i = p->n_segs; i > 0; i--) {
        if (p->segs[i - 1].next_seq > p->segs[i - 1].first_seq) {
            return p->segs[i - 1].last_ts;
        }
    }
    return 0;
}

size_t trace_persist_segments(const trace_persist *p)
{
    return p->n_segs;
}

wamp_err trace_persist_flush(trace_persist *p, bool sync, uint64_t now_pc_ns)
{
    if (!p->writable) {
        return p->error ? WAMP_ECLOSED : WAMP_OK;
    }
    wamp_err err = persist_write_out(p);
    if (err != WAMP_OK) {
        return err;
    }
    bool due =
            p->fsync == TRACE_FSYNC_BATCH ||
            (p->fsync == TRACE_FSYNC_INTERVAL &&
             (now_pc_ns < p->last_sync_pc || now_pc_ns - p->last_sync_pc >= p->fsync_interval_ns));
    if (sync || due) {
        err = persist_sync_active(p, now_pc_ns);
        if (err != WAMP_OK) {
            return err;
        }
    }
    if (sync && p->w) {
        persist_writer_drain(p->w, true);
    }
    return persist_failed(p) ? WAMP_ECLOSED : WAMP_OK;
}

wamp_err trace_persist_tick(trace_persist *p, uint64_t now_pc_ns, uint64_t now_ts_ns)
{
    wamp_err err = trace_persist_flush(p, false, now_pc_ns);
    if (err == WAMP_OK && p->max_age_ns) {
        persist_apply_retention(p, now_ts_ns, true);
    }
    return err;
}

wamp_err trace_persist_write_meta(trace_persist *p, const json_t *meta)
{
    if (!p->writable) {
        return WAMP_OK; /* reopened traces keep the meta.json they were opened with */
    }
    char *text = json_dumps(meta, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (!text) {
        return WAMP_ENOMEM;
    }
    wamp_err err = WAMP_OK;
    int fd = persist_open_in(p->dir, "meta.json.tmp", O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) {
        err = persist_fail_io(p, "create", "meta.json.tmp");
    } else {
        size_t n = strlen(text);
        text[n] = '\n';
        if (!persist_write_all(p->io, fd, text, n + 1) || persist_fsync(p->io, fd) != 0) {
            err = persist_fail_io(p, "write", "meta.json.tmp");
        }
        close(fd);
    }
    free(text);
    if (err != WAMP_OK) {
        return err;
    }
    char *from = persist_path_join(p->dir, "meta.json.tmp");
    char *to = persist_path_join(p->dir, "meta.json");
    if (!from || !to) {
        err = WAMP_ENOMEM;
    } else if (rename(from, to) != 0) {
        err = persist_fail_io(p, "rename", "meta.json.tmp");
    } else {
        /* Also makes the names of the segments made since the last time durable: at stop,
         * everything the trace wrote is on disk under its name. */
        err = persist_sync_names(p, true);
    }
    free(from);
    free(to);
    return err;
}

size_t trace_persist_list(const trace_persist_config *cfg,
                          void (*fn)(const char *persistent_id, void *ctx), void *ctx)
{
    DIR *d = opendir(data_dir_of(cfg));
    if (!d) {
        return 0;
    }
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= TRACE_PERSIST_ID_MAX) {
            continue;
        }
        fn(e->d_name, ctx);
        n++;
    }
    closedir(d);
    return n;
}
