/* trace_persist_writer.c: the writer thread of a writable persisted trace and the service
 * thread's side of it: jobs (the buffered records handed over), fsync policy, rotation, retention
 * and the sticky I/O error. */
#define _GNU_SOURCE /* sync_file_range(2) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "trace_persist_int.h"

/* --- the writer thread -------------------------------------------------------------------------
 * Each writable trace has one. The service thread only encodes records into a buffer; a full
 * buffer (TRACE_PERSIST_BUFFER_MAX), the tick's flush, an fsync that is due and the closing of a
 * rotated segment become jobs, executed in order here: CRC-32C of each record, write(2) of the
 * records and of the index entries, the release of their pages from the page cache
 * (cache_release()), fsync(2), close(2), fsync of the directories. Before, these
 * ran on the service thread and took 25-30% of its time in a pub/sub run keeping everything,
 * part of it asleep in the kernel's dirty-page throttling (tests/bench/HISTORY.md, "the writer
 * thread").
 *
 * Ownership: a job owns its buffers; the fds of a rotated segment pass to its last job (JOB_CLOSE);
 * the active segment's fds stay the service thread's, the writer only writes to them. Bookkeeping
 * (segments, sizes, index, retention, names) stays on the service thread: it counts data as
 * written when it hands it over. A reader first waits until every job's data is handled
 * (persist_writer_drain), so that the active segment holds exactly what was handed over, except
 * after an error: then the data of the failed job and of every later one is kept in `failed`, in
 * order, and readers find it there (reader_at). After the first error nothing more is written
 * (fsyncs and closes still run), the segment is cut back to the failed job's start, and the service
 * thread sees it at its next call (persist_failed).
 * Memory: jobs queued hold at most backlog_max bytes of data; a service thread that would go
 * beyond waits for the writer (a disk slower than the traffic: back-pressure rather than an
 * unbounded queue or a silent gap in the trace). */

/* Spare jobs kept (with their buffers) for reuse. */
#define WRITER_SPARE 4u

static void job_free(job *j)
{
    if (j) {
        free(j->buf);
        free(j->idx);
        free(j);
    }
}

static void writer_set_error(writer *w, const char *what, uint64_t seg_first, const char *ext,
                             int err)
{
    char name[40] = "";
    if (ext) {
        persist_seg_name(name, sizeof(name), seg_first, ext);
    }
    pthread_mutex_lock(&w->mu);
    if (!atomic_load(&w->failed_flag)) {
        snprintf(w->error, sizeof(w->error), "%s %s%s%s: %s", what, ext ? w->dir : "",
                 ext ? "/" : "", ext ? name : w->dir, strerror(err));
        atomic_store(&w->failed_flag, true);
    }
    pthread_mutex_unlock(&w->mu);
}

/* The CRC of each record of the job, in its header. */
static void job_crc(job *j)
{
    size_t off = 0;
    while (off + HDR_LEN <= j->len) {
        uint32_t body = get32(j->buf + off) & ~LEN_COMPACT;
        put32(j->buf + off + 4, trace_crc32c(0, j->buf + off + HDR_LEN, body));
        off += HDR_LEN + body;
    }
}

/* How the writer keeps a trace out of the page cache. A trace's data is written once and rarely
 * read; left in the page cache it grows it by all of it (gigabytes, pushing out what other
 * processes use), and every page of that growth is a fresh one: on a virtual machine a page the
 * guest never used costs the host a fault, and copying into it cost about 2.5 ns a byte against
 * 0.2 into a page freed and used again (tests/bench/HISTORY.md, "the recorder over sockets").
 * So each time PERSIST_CACHE_STEP more bytes of a segment are written, the writer starts their
 * writeback (sync_file_range, without waiting: large requests, once a step rather than per job)
 * and drops what came before them from the page cache (POSIX_FADV_DONTNEED: the step before had
 * its writeback started a step ago, so its pages are clean or soon are; pages still dirty stay,
 * and go at a later step), keeping the newest one to two steps; a rotated segment's pages go once
 * its last job has fsynced it (job_finish()). Neither changes durability (the fsync policy) or
 * what readers see (they read the file). */
#define PERSIST_CACHE_STEP (4u * 1024u * 1024u)

static void cache_release(writer *w, const job *j)
{
    if (j->seg_first != w->cache_seg || j->base < w->cache_wb) {
        /* Another segment (or one written over after an error): from its start. */
        w->cache_seg = j->seg_first;
        w->cache_wb = 0;
    }
    uint64_t end = j->base + j->len;
    if (end - w->cache_wb < PERSIST_CACHE_STEP) {
        return;
    }
#ifdef SYNC_FILE_RANGE_WRITE
    (void)sync_file_range(j->fd, (off_t)w->cache_wb, (off_t)(end - w->cache_wb),
                          SYNC_FILE_RANGE_WRITE);
#endif
    if (w->cache_wb) {
        (void)posix_fadvise(j->fd, 0, (off_t)w->cache_wb, POSIX_FADV_DONTNEED);
    }
    w->cache_wb = end;
}

/* The job's data to disk; false after an error (set). */
static bool job_write(writer *w, job *j)
{
    if (j->len) {
        job_crc(j);
        if (!persist_write_all(w->io, j->fd, j->buf, j->len)) {
            int e = errno;
            /* Cut back to the last whole record; if that fails too, the torn tail is cut when
             * the trace is opened again (its CRC). */
            if (ftruncate(j->fd, (off_t)j->base) != 0) {
                e = e ? e : errno;
            }
            writer_set_error(w, "write", j->seg_first, "seg", e);
            return false;
        }
        cache_release(w, j);
    }
    if (j->idx_len && !persist_write_all(w->io, j->idx_fd, j->idx, j->idx_len)) {
        int e = errno;
        /* The job failed: its records are the io_error gap, so they go from the segment too (a
         * reopen, which rebuilds the index from the records, would find them there). */
        if (j->len && ftruncate(j->fd, (off_t)j->base) != 0) {
            e = e ? e : errno;
        }
        writer_set_error(w, "write", j->seg_first, "idx", e);
        return false;
    }
    return true;
}

/* The fsync latency histogram's bounds: 1 ms, 5 ms, 25 ms, 100 ms, 500 ms, 2.5 s. */
const uint64_t trace_persist_sync_le_ns[TRACE_PERSIST_SYNC_BUCKETS] = {
        1000000u, 5000000u, 25000000u, 100000000u, 500000000u, 2500000000u,
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Counts an fsync that started at t0 (mono_ns()) and just ended; errno kept. */
static void sync_timed(writer *w, uint64_t t0)
{
    uint64_t t1 = mono_ns();
    uint64_t ns = t1 > t0 ? t1 - t0 : 0;
    int e = errno;
    pthread_mutex_lock(&w->mu);
    trace_persist_sync_stats *s = &w->sync;
    s->count++;
    s->sum_ns += ns;
    s->max_ns = ns > s->max_ns ? ns : s->max_ns;
    for (size_t i = 0; i < TRACE_PERSIST_SYNC_BUCKETS; i++) {
        s->le[i] += ns <= trace_persist_sync_le_ns[i];
    }
    pthread_mutex_unlock(&w->mu);
    errno = e;
}

/* persist_fsync() and persist_sync_dir(), timed (sync_dir_timed: w NULL = not). */
static int fsync_timed(writer *w, int fd)
{
    uint64_t t0 = mono_ns();
    int rc = persist_fsync(w->io, fd);
    sync_timed(w, t0);
    return rc;
}

static int sync_dir_timed(writer *w, const trace_persist_io *io, const char *dir)
{
    if (!w) {
        return persist_sync_dir(io, dir);
    }
    uint64_t t0 = mono_ns();
    int rc = persist_sync_dir(io, dir);
    sync_timed(w, t0);
    return rc;
}

static void job_finish(writer *w, job *j)
{
    if ((j->flags & JOB_SYNC) && j->fd >= 0 && !atomic_load(&w->failed_flag)) {
        if (fsync_timed(w, j->fd) != 0 || (j->idx_fd >= 0 && fsync_timed(w, j->idx_fd) != 0)) {
            writer_set_error(w, "fsync", j->seg_first, "seg", errno);
        }
    }
    if (j->flags & JOB_CLOSE) {
        if (j->fd >= 0) {
            /* A complete segment's pages, clean after the fsync above, leave the page cache with
             * it (cache_release()). */
            (void)posix_fadvise(j->fd, 0, 0, POSIX_FADV_DONTNEED);
            close(j->fd);
        }
        if (j->idx_fd >= 0) {
            close(j->idx_fd);
        }
        j->fd = j->idx_fd = -1;
    }
    if ((j->flags & JOB_SYNC_DIR) && !atomic_load(&w->failed_flag) &&
        sync_dir_timed(w, w->io, w->dir) != 0) {
        writer_set_error(w, "fsync", 0, NULL, errno);
    }
    if ((j->flags & JOB_SYNC_PARENT) && !atomic_load(&w->failed_flag) &&
        sync_dir_timed(w, w->io, w->data_dir) != 0) {
        writer_set_error(w, "fsync the data directory of", 0, NULL, errno);
    }
    if (j->flags & JOB_UNLINK) {
        /* Here rather than on the service thread: unlinking a segment still in the page cache
         * frees all its pages, milliseconds for 16 MiB. */
        persist_unlink_segment(w->dir, j->unlink_first);
    }
}

static void *writer_main(void *arg)
{
    writer *w = arg;
    /* Background work: this thread yields to the service thread when both want the same core
     * (TRACE_PERSIST_WRITER_NICE). On Linux the nice value is per thread: who 0 is this one. */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (errno == 0) {
        nice += TRACE_PERSIST_WRITER_NICE;
        (void)setpriority(PRIO_PROCESS, 0, nice < 19 ? nice : 19);
    }
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->quit) {
            pthread_cond_wait(&w->wake, &w->mu);
        }
        job *j = w->head;
        if (!j) {
            break; /* quit, and nothing left */
        }
        w->head = j->next;
        if (!w->head) {
            w->tail = NULL;
        }
        j->next = NULL;
        pthread_mutex_unlock(&w->mu);

        bool written = !atomic_load(&w->failed_flag) && job_write(w, j);

        pthread_mutex_lock(&w->mu);
        if (written && j->end_seq > w->written_next) {
            w->written_next = j->end_seq;
        }
        if (written) {
            w->sync.records_written += j->end_seq - j->first_seq;
        }
        bool keep = !written && j->len;
        if (keep) {
            /* Not on disk: readers find these records here. */
            if (w->failed_tail) {
                w->failed_tail->next = j;
            } else {
                w->failed = j;
            }
            w->failed_tail = j;
        }
        w->backlog -= j->len;
        w->data_done++;
        pthread_cond_broadcast(&w->progress);
        pthread_mutex_unlock(&w->mu);

        job_finish(w, j);

        pthread_mutex_lock(&w->mu);
        w->done++;
        if (!keep) {
            if (w->n_spare < WRITER_SPARE) {
                j->next = w->spare;
                w->spare = j;
                w->n_spare++;
            } else {
                job_free(j);
            }
        }
        pthread_cond_broadcast(&w->progress);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

writer *persist_writer_start(const char *dir, const char *data_dir, uint64_t backlog_max,
                             const trace_persist_io *io)
{
    writer *w = calloc(1, sizeof(*w));
    if (!w) {
        return NULL;
    }
    w->io = io;
    w->dir = dir;
    w->data_dir = data_dir;
    w->backlog_max = backlog_max;
    atomic_init(&w->failed_flag, false);
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        goto fail_mem;
    }
    if (pthread_cond_init(&w->wake, NULL) != 0) {
        goto fail_mu;
    }
    if (pthread_cond_init(&w->progress, NULL) != 0) {
        goto fail_wake;
    }
    /* No signal is for this thread (the router reads SIGTERM/SIGINT from a signalfd; a file
     * size limit's SIGXFSZ is ignored and write(2) fails with EFBIG). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        return w;
    }
    errno = rc;
    pthread_cond_destroy(&w->progress);
fail_wake:
    pthread_cond_destroy(&w->wake);
fail_mu:
    pthread_mutex_destroy(&w->mu);
fail_mem:
    free(w);
    return NULL;
}

/* Runs every queued job, then ends the thread and frees w (NULL-safe). */
void persist_writer_stop(writer *w)
{
    if (!w) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    for (job *j = w->failed, *n; j; j = n) {
        n = j->next;
        job_free(j);
    }
    for (job *j = w->spare, *n; j; j = n) {
        n = j->next;
        job_free(j);
    }
    pthread_cond_destroy(&w->progress);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Waits until the data of every job submitted is handled (written, or kept in `failed`); with
 * all, until every job is finished (fsyncs, closes). */
void persist_writer_drain(writer *w, bool all)
{
    pthread_mutex_lock(&w->mu);
    while ((all ? w->done : w->data_done) != w->queued) {
        pthread_cond_wait(&w->progress, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

/* Bytes of the segment starting at seg_first that are kept in `failed` (not on disk). Call
 * after persist_writer_drain(). */
uint64_t persist_writer_failed_bytes(writer *w, uint64_t seg_first)
{
    uint64_t n = 0;
    if (!w || !atomic_load(&w->failed_flag)) {
        return 0;
    }
    pthread_mutex_lock(&w->mu);
    for (const job *j = w->failed; j; j = j->next) {
        n += j->seg_first == seg_first ? j->len : 0;
    }
    pthread_mutex_unlock(&w->mu);
    return n;
}

/* After the first I/O error of a writable trace: where its files end. The writer wrote every job
 * before the first one that failed, and nothing after it (it was cut back to that job's start);
 * without a failed job (an error on the service thread, or of an fsync), every job handed over.
 * The seqs from there on are the io_error gap: never returned, whether they are in memory or
 * not (a reader does not serve them), so that what was returned is what a restart finds. */
static void note_failure(trace_persist *p)
{
    if (!p->writable || p->io_from != NO_SEQ) {
        return;
    }
    uint64_t from = p->handed_seq;
    if (p->w) {
        persist_writer_drain(p->w, false);
        pthread_mutex_lock(&p->w->mu);
        for (const job *j = p->w->failed; j; j = j->next) {
            if (j->len) {
                from = j->first_seq;
                break;
            }
        }
        pthread_mutex_unlock(&p->w->mu);
    }
    p->io_from = from;
}

static void note_failure(trace_persist *p);

static void set_error(trace_persist *p, const char *what, const char *file, int err)
{
    if (p->error) {
        return;
    }
    char msg[512];
    snprintf(msg, sizeof(msg), "%s %s/%s: %s", what, p->dir, file, strerror(err));
    p->error = strdup(msg);
    if (!p->error) {
        p->error = strdup("I/O error");
    }
    note_failure(p);
}

void persist_close_active(trace_persist *p)
{
    persist_block_reset(&p->blk); /* the next segment starts a block */
    if (p->fd >= 0) {
        close(p->fd);
        p->fd = -1;
    }
    if (p->idx_fd >= 0) {
        close(p->idx_fd);
        p->idx_fd = -1;
    }
}

static wamp_err submit(trace_persist *p, unsigned flags, uint64_t unlink_first);

/* Deletes the oldest segment's files: the writer thread does it, in order after the writes
 * queued before (without one, or without memory for the job, it is done here). */
static void drop_oldest(trace_persist *p)
{
    seg *s = &p->segs[0];
    if (!p->w || submit(p, JOB_UNLINK, s->first_seq) != WAMP_OK) {
        persist_unlink_segment(p->dir, s->first_seq);
    }
    p->bytes -= s->size;
    p->first_seq = s->next_seq;
    free(s->idx);
    memmove(&p->segs[0], &p->segs[1], (p->n_segs - 1) * sizeof(*p->segs));
    p->n_segs--;
}

void persist_apply_retention(trace_persist *p, uint64_t now_ts_ns, bool by_age)
{
    while (p->n_segs > 1) {
        const seg *s = &p->segs[0];
        bool too_big = p->max_bytes && p->bytes > p->max_bytes;
        bool too_old = by_age && p->max_age_ns && now_ts_ns > p->max_age_ns &&
                       s->last_ts < now_ts_ns - p->max_age_ns;
        if (!too_big && !too_old) {
            break;
        }
        drop_oldest(p);
    }
}

wamp_err persist_fail_io(trace_persist *p, const char *what, const char *file)
{
    set_error(p, what, file, errno);
    return WAMP_ECLOSED;
}

/* Opens a new active segment starting at first_seq. */
wamp_err persist_open_segment(trace_persist *p, uint64_t first_seq)
{
    char name[40];
    seg *s = persist_seg_push(p, first_seq);
    if (!s) {
        return WAMP_ENOMEM;
    }
    persist_seg_name(name, sizeof(name), first_seq, "seg");
    p->fd = persist_open_in(p->dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
    if (p->fd < 0) {
        p->n_segs--;
        return persist_fail_io(p, "create", name);
    }
    persist_seg_name(name, sizeof(name), first_seq, "idx");
    p->idx_fd = persist_open_in(p->dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
    if (p->idx_fd < 0) {
        persist_close_active(p);
        p->n_segs--;
        return persist_fail_io(p, "create", name);
    }
    p->written = 0;
    p->idx_written = 0;
    p->names_dirty = true;
    return WAMP_OK;
}

/* --- handing work to the writer (service thread) ------------------------------------------ */

/* True after an I/O error, the writer's included (its message becomes p->error). */
bool persist_failed(trace_persist *p)
{
    if (p->error) {
        return true;
    }
    if (!p->w || !atomic_load_explicit(&p->w->failed_flag, memory_order_acquire)) {
        return false;
    }
    pthread_mutex_lock(&p->w->mu);
    p->error = strdup(p->w->error);
    pthread_mutex_unlock(&p->w->mu);
    if (!p->error) {
        p->error = strdup("I/O error");
    }
    note_failure(p);
    return true;
}

/* A spare job (with its buffers), or a new empty one; NULL when out of memory. */
static job *job_get(writer *w)
{
    pthread_mutex_lock(&w->mu);
    job *j = w->spare;
    if (j) {
        w->spare = j->next;
        w->n_spare--;
    }
    pthread_mutex_unlock(&w->mu);
    return j ? j : calloc(1, sizeof(*j));
}

/* Queues j for the writer thread; waits first while the backlog is full (back-pressure). */
static void job_queue(writer *w, job *j)
{
    pthread_mutex_lock(&w->mu);
    if (w->backlog + j->len > w->backlog_max && w->backlog) {
        /* The disk is behind: wait (see above). */
        w->waits++;
        while (w->backlog + j->len > w->backlog_max && w->backlog &&
               !atomic_load(&w->failed_flag)) {
            pthread_cond_wait(&w->progress, &w->mu);
        }
    }
    if (w->tail) {
        w->tail->next = j;
    } else {
        w->head = j;
    }
    w->tail = j;
    w->backlog += j->len;
    if (w->backlog > w->peak) {
        w->peak = w->backlog;
    }
    w->queued++;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
}

/* The buffered records and the index entries not handed over yet, with flags, as one job for
 * the writer. The job takes the buffer; the service thread gets a spare one back. */
static wamp_err submit(trace_persist *p, unsigned flags, uint64_t unlink_first)
{
    writer *w = p->w;
    seg *s = p->n_segs ? &p->segs[p->n_segs - 1] : NULL;
    size_t n_idx = s && p->fd >= 0 ? s->n_idx - p->idx_written : 0;
    if (!w || (p->fd < 0 && !(flags & (JOB_SYNC_DIR | JOB_SYNC_PARENT | JOB_UNLINK)))) {
        p->len = 0;
        persist_marks_clear(p);
        return WAMP_OK;
    }
    if (!p->len && !n_idx && !flags) {
        return WAMP_OK;
    }
    job *j = job_get(w);
    if (!j) {
        return WAMP_ENOMEM;
    }
    if (j->idx_cap < n_idx * IDX_ENTRY) {
        unsigned char *n = realloc(j->idx, n_idx * IDX_ENTRY);
        if (!n) {
            job_free(j);
            return WAMP_ENOMEM;
        }
        j->idx = n;
        j->idx_cap = n_idx * IDX_ENTRY;
    }
    for (size_t i = 0; i < n_idx; i++) {
        put64(j->idx + i * IDX_ENTRY, s->idx[p->idx_written + i].seq);
        put64(j->idx + i * IDX_ENTRY + 8, s->idx[p->idx_written + i].off);
    }
    j->idx_len = n_idx * IDX_ENTRY;
    /* Swap buffers: the job's old one (a spare's, or none) becomes the next write buffer. */
    unsigned char *b = j->buf;
    size_t cap = j->cap;
    j->buf = p->buf;
    j->cap = p->cap;
    j->len = p->len;
    p->buf = b;
    p->cap = cap;
    p->len = 0;
    persist_marks_clear(p); /* they went with the buffer */
    j->flags = flags;
    j->fd = p->fd;
    j->idx_fd = p->idx_fd;
    j->seg_first = s ? s->first_seq : 0;
    j->first_seq = p->handed_seq;
    p->handed_seq = s ? s->next_seq : p->handed_seq;
    j->end_seq = p->handed_seq;
    j->base = p->written;
    j->unlink_first = unlink_first;
    j->next = NULL;
    p->written += j->len;
    p->idx_written += n_idx;
    if (j->len || j->idx_len) {
        p->dirty = true;
    }
    job_queue(w, j);
    return WAMP_OK;
}

/* Makes the names made since the last time durable: the segments' (or, with all, every name in
 * the trace's directory, e.g. a renamed meta.json) and a new trace directory's own name in the
 * data directory. */
wamp_err persist_sync_names(trace_persist *p, bool all)
{
    if ((p->names_dirty || all) && sync_dir_timed(p->w, p->io, p->dir) != 0) {
        return persist_fail_io(p, "fsync", p->dir);
    }
    p->names_dirty = false;
    if (p->new_dir) {
        if (sync_dir_timed(p->w, p->io, p->data_dir) != 0) {
            return persist_fail_io(p, "fsync", "the data directory");
        }
        p->new_dir = false;
    }
    return WAMP_OK;
}

/* Queues an fsync of the active segment (and of the names made since the last one). */
wamp_err persist_sync_active(trace_persist *p, uint64_t now_pc_ns)
{
    p->last_sync_pc = now_pc_ns;
    if (!p->dirty || p->fd < 0) {
        return WAMP_OK;
    }
    unsigned flags =
            JOB_SYNC | (p->names_dirty ? JOB_SYNC_DIR : 0u) | (p->new_dir ? JOB_SYNC_PARENT : 0u);
    wamp_err err = submit(p, flags, 0);
    if (err != WAMP_OK) {
        return err;
    }
    p->dirty = false;
    p->names_dirty = false;
    p->new_dir = false;
    return WAMP_OK;
}

/* Hands the buffered records to the writer. */
wamp_err persist_write_out(trace_persist *p)
{
    if (persist_failed(p)) {
        return WAMP_ECLOSED;
    }
    return submit(p, 0, 0);
}

/* Rotation: the active segment is complete. Its last job writes the rest, fsyncs and closes
 * it (its fds go with the job); the next one starts at next_seq. */
wamp_err persist_rotate(trace_persist *p, uint64_t next_seq, uint64_t now_ts_ns)
{
    if (persist_failed(p)) {
        return WAMP_ECLOSED;
    }
    unsigned flags = JOB_SYNC | JOB_CLOSE | (p->names_dirty ? JOB_SYNC_DIR : 0u) |
                     (p->new_dir ? JOB_SYNC_PARENT : 0u);
    wamp_err err = submit(p, flags, 0);
    if (err != WAMP_OK) {
        return err;
    }
    p->fd = p->idx_fd = -1;
    p->dirty = false;
    p->names_dirty = false;
    p->new_dir = false;
    err = persist_open_segment(p, next_seq);
    if (err != WAMP_OK) {
        return err;
    }
    persist_apply_retention(p, now_ts_ns, false);
    return WAMP_OK;
}
