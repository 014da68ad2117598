/* crash_persist.c: crash-consistency harness for persisted traces (tests/crash/README.md).
 *
 * Each iteration, in a directory of its own:
 *   1. a child process writes a persisted trace (trace_persist_create / _append_rec /
 *      _append_run / _flush / _read) following a plan drawn from the iteration's seed: messages
 *      of random sizes, some fanned out to several peers (runs), random flushes and reads, small
 *      segments (rotation); with some probability through the trace_persist_io seam, which fails
 *      the N-th write(2) (ENOSPC, EIO, EFBIG, or a short write then ENOSPC) or the N-th fsync(2);
 *      it reports to the parent, over a pipe, how many seqs it gave out and the seqs it was
 *      served back (records it read, which the API would have returned);
 *   2. the parent kills it with SIGKILL at a random time, or lets it end (the trace sealed, as
 *      at a stop; after an injected fault the trace stops as with io_error);
 *   3. the parent may damage the files: flip random bytes, truncate, delete a segment, append
 *      garbage, zero the end file;
 *   4. the parent reopens the trace twice (trace_persist_open) and checks the invariants:
 *      - seqs read are strictly increasing (nothing returned twice), each record is exactly the
 *        one the plan put at its seq (bytes, peer), and reading by pages of random size gives
 *        the same as one read;
 *      - records reported (trace_persist_records) = records read;
 *      - every seq from first_seq to next_seq - 1 is a record or in exactly one gap, gaps are
 *        ordered and do not overlap;
 *      - without damage: every seq the child was served is held (served means written: a kill
 *        cannot lose it), no gap but the io_error one, which starts at or after what was served
 *        and only when a fault was injected; a sealed trace ends exactly where the child's seqs
 *        ended; an unsealed one (killed) ends at most there (the crash tail);
 *      - the second reopen finds what the first found.
 * Prints the figures (iterations, kills, seals, faults injected, damage done, violations) and
 * exits 1 on any violation, keeping that iteration's directory and printing its seed.
 *
 * Usage: crash_persist [--seconds N] [--seed S] [--dir D] [--verbose] */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace_persist.h"
#include "trace_record.h"
#include "wamp_buf.h"

#define N_PEERS   5
#define MAX_PLAN  40000u /* seqs a plan gives out at most */
#define READ_PAGE 4096u

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next_rand(rng *r)
{
    /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t below(rng *r, uint64_t n)
{
    return n ? next_rand(r) % n : 0;
}

/* --- the plan: what seq holds which message for which peer ------------------------------- */

typedef struct plan_msg {
    uint64_t first_seq;
    uint32_t fanout; /* seqs: first_seq .. first_seq + fanout - 1 */
    uint32_t len;
    uint32_t peer0; /* peer of seq i: (peer0 + i - first_seq) % N_PEERS */
    uint8_t msg_type;
    uint8_t dir;
} plan_msg;

typedef struct plan {
    plan_msg *msgs;
    size_t n;
    uint64_t seqs;
} plan;

static void plan_make(uint64_t seed, plan *pl)
{
    rng r = {seed ^ 0x5eedull};
    pl->msgs = calloc(MAX_PLAN, sizeof(*pl->msgs));
    pl->n = 0;
    pl->seqs = 0;
    uint64_t total = 200 + below(&r, MAX_PLAN - 200);
    while (pl->seqs < total && pl->n < MAX_PLAN) {
        plan_msg *m = &pl->msgs[pl->n++];
        m->first_seq = pl->seqs;
        m->fanout = below(&r, 6) == 0 ? 2 + (uint32_t)below(&r, 30) : 1;
        if (pl->seqs + m->fanout > total) {
            m->fanout = (uint32_t)(total - pl->seqs);
        }
        m->len = below(&r, 20) == 0 ? 1 + (uint32_t)below(&r, 6000) : 1 + (uint32_t)below(&r, 300);
        m->peer0 = (uint32_t)below(&r, N_PEERS);
        m->msg_type = m->fanout > 1 ? 36 : (uint8_t)(1 + below(&r, 70));
        m->dir = (uint8_t)(1 + below(&r, 2));
        pl->seqs += m->fanout;
    }
}

/* The message holding seq (binary search). */
static const plan_msg *plan_find(const plan *pl, uint64_t seq)
{
    size_t lo = 0, hi = pl->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pl->msgs[mid].first_seq + pl->msgs[mid].fanout <= seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < pl->n && pl->msgs[lo].first_seq <= seq ? &pl->msgs[lo] : NULL;
}

/* The bytes of message m: its first seq, then a pattern from it. */
static void msg_bytes(const plan_msg *m, unsigned char *out)
{
    for (uint32_t i = 0; i < m->len; i++) {
        out[i] = (unsigned char)((m->first_seq * 131u + i * 7u) >> (i % 3));
    }
    for (uint32_t i = 0; i < 8 && i < m->len; i++) {
        out[i] = (unsigned char)(m->first_seq >> (8 * i));
    }
}

/* --- fault injection through the trace_persist_io seam ------------------------------------ */

enum {
    FAULT_NONE,
    FAULT_WRITE,
    FAULT_SHORT,
    FAULT_FSYNC
};

typedef struct faults {
    int kind;
    int err;
    long at; /* the at-th call fails */
    atomic_long writes;
    atomic_long fsyncs;
} faults;

static ssize_t fault_write(void *ctx, int fd, const void *buf, size_t n)
{
    faults *f = ctx;
    long k = atomic_fetch_add(&f->writes, 1) + 1;
    if (f->kind == FAULT_WRITE && k >= f->at) {
        errno = f->err;
        return -1;
    }
    if (f->kind == FAULT_SHORT && k == f->at && n > 1) {
        return write(fd, buf, n / 2); /* the next call fails */
    }
    if (f->kind == FAULT_SHORT && k > f->at) {
        errno = ENOSPC;
        return -1;
    }
    return write(fd, buf, n);
}

static int fault_fsync(void *ctx, int fd)
{
    faults *f = ctx;
    long k = atomic_fetch_add(&f->fsyncs, 1) + 1;
    if (f->kind == FAULT_FSYNC && k >= f->at) {
        errno = EIO;
        return -1;
    }
    return fsync(fd);
}

static uint64_t fault_fired(faults *f)
{
    long calls = f->kind == FAULT_FSYNC ? atomic_load(&f->fsyncs) : atomic_load(&f->writes);
    return f->kind != FAULT_NONE && calls >= f->at;
}

/* --- the child: writes the plan, reports progress ----------------------------------------- */

typedef struct report {
    uint64_t given;  /* seqs given out so far */
    uint64_t served; /* every seq below it was returned by a read */
    uint64_t done;   /* 1: sealed and ending */
    uint64_t fired;  /* 1: the injected fault happened */
} report;

static void send_report(int fd, const report *rp)
{
    ssize_t w = write(fd, rp, sizeof(*rp));
    (void)w;
}

/* Reads [from, to) of p back as the API would (pages), and advances *served while every seq
 * read is the next one (a gap or a missing record stops it). */
static void child_read(trace_persist *p, uint64_t *served, uint64_t to, trace_record *buf)
{
    for (;;) {
        size_t n = trace_persist_read(p, *served, to, READ_PAGE, buf);
        bool contiguous = true;
        for (size_t i = 0; i < n; i++) {
            if (contiguous && buf[i].seq == *served) {
                (*served)++;
            } else {
                contiguous = false;
            }
            trace_record_fini(&buf[i]);
        }
        if (n < READ_PAGE || !contiguous) {
            return;
        }
    }
}

static int child_main(const char *data_dir, uint64_t seed, int out_fd)
{
    rng r = {seed};
    plan pl;
    plan_make(seed, &pl);
    faults f = {.kind = FAULT_NONE};
    trace_persist_io io = {.write = fault_write, .fsync = fault_fsync, .ctx = &f};
    uint64_t mode = below(&r, 4);
    if (mode == 1) {
        static const int errs[] = {ENOSPC, EIO, EFBIG};
        f.kind = (int)(FAULT_WRITE + below(&r, 3));
        f.err = errs[below(&r, 3)];
        f.at = 1 + (long)below(&r, f.kind == FAULT_FSYNC ? 8 : 60);
    }
    trace_persist_config cfg = {
            .data_dir = data_dir,
            .segment_bytes = 4096 + below(&r, 200000),
            .fsync = (trace_fsync_mode)below(&r, 3),
            .fsync_interval_ms = 10,
            .write_backlog = TRACE_PERSIST_BACKLOG_MIN,
            .io = &io,
    };
    trace_persist *p = NULL;
    if (trace_persist_create(&cfg, 1000000000ull + seed % 1000, 0, &p, NULL, 0) != WAMP_OK) {
        return 2;
    }
    trace_peer *peers[N_PEERS];
    for (int i = 0; i < N_PEERS; i++) {
        char authid[16];
        snprintf(authid, sizeof(authid), "peer%d", i);
        peers[i] = trace_peer_new(1000u + (uint64_t)i, "realm1", authid, "anonymous");
    }
    trace_str *uri = trace_str_new("com.example.crash");
    trace_record *buf = calloc(READ_PAGE, sizeof(*buf));
    unsigned char *bytes = malloc(8192);
    report rp = {0};
    uint64_t pc = 1000000000ull;
    bool failed = false;
    for (size_t k = 0; k < pl.n && !failed; k++) {
        const plan_msg *m = &pl.msgs[k];
        msg_bytes(m, bytes);
        wamp_buf *wire = wamp_buf_new_copy(bytes, m->len);
        pc += 1 + below(&r, 100000);
        trace_rec_view rec = {
                .seq = m->first_seq,
                .pc_ns = pc,
                .ts_ns = pc + 1700000000000000000ull,
                .peer = peers[m->peer0],
                .uri = uri,
                .wire = wire,
                .dir = m->dir,
                .msg_type = m->msg_type,
                .wire_ser = 2,
                .flags = 0,
                .key = m->fanout > 1 ? k + 1 : 0,
        };
        rec.ser_bytes[2] = m->len;
        wamp_err err = trace_persist_append_rec(p, &rec);
        rp.given = m->first_seq + 1;
        if (err == WAMP_OK && m->fanout > 1) {
            trace_peer *run[32];
            for (uint32_t i = 1; i < m->fanout; i++) {
                run[i - 1] = peers[(m->peer0 + i) % N_PEERS];
            }
            rec.seq = m->first_seq + 1;
            err = trace_persist_append_run(p, &rec, run, m->fanout - 1, false);
            rp.given = m->first_seq + m->fanout;
        }
        wamp_buf_unref(&wire);
        if (err != WAMP_OK) {
            failed = true; /* the trace stops (io_error) */
            break;
        }
        uint64_t what = below(&r, 64);
        if (what == 0) {
            failed = trace_persist_flush(p, below(&r, 4) == 0, pc) != WAMP_OK;
        } else if (what == 1) {
            child_read(p, &rp.served, rp.given, buf);
        }
        if (what <= 2) {
            rp.fired = fault_fired(&f);
            send_report(out_fd, &rp);
        }
    }
    /* The end of a trace: final flush with sync, seal (as trace_stop() does), report. */
    (void)trace_persist_flush(p, true, pc);
    (void)trace_persist_seal(p);
    rp.done = 1;
    rp.fired = fault_fired(&f);
    send_report(out_fd, &rp);
    trace_persist_free(p);
    for (int i = 0; i < N_PEERS; i++) {
        trace_peer_unref(&peers[i]);
    }
    trace_str_unref(&uri);
    free(buf);
    free(bytes);
    free(pl.msgs);
    return 0;
}

/* --- damage ------------------------------------------------------------------------------- */

typedef struct stats {
    uint64_t iterations, kills, seals, faults_write, faults_short, faults_fsync;
    uint64_t flips, truncations, deletions, garbage, end_zeroed;
    uint64_t records_checked, gaps_seen, violations;
} stats;

/* Files of the trace directory with the given extension (or all regular files: ext NULL). */
static size_t list_files(const char *dir, const char *ext, char names[][64], size_t max)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d) {
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l >= 64) {
            continue;
        }
        if (ext && (l < strlen(ext) || strcmp(e->d_name + l - strlen(ext), ext) != 0)) {
            continue;
        }
        memcpy(names[n++], e->d_name, l + 1);
    }
    closedir(d);
    return n;
}

static off_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static void damage(const char *tdir, rng *r, stats *st)
{
    char(*names)[64] = malloc(4096 * sizeof(*names));
    char path[1024];
    int actions = 1 + (int)below(r, 3);
    for (int a = 0; a < actions; a++) {
        uint64_t kind = below(r, 10);
        size_t n = list_files(tdir, kind < 7 ? ".seg" : NULL, names, 4096);
        if (n == 0) {
            break;
        }
        snprintf(path, sizeof(path), "%s/%s", tdir, names[below(r, n)]);
        off_t sz = size_of(path);
        if (kind < 4 && sz > 0) {
            /* Flip 1..8 random bytes. */
            int fd = open(path, O_RDWR);
            int flips = 1 + (int)below(r, 8);
            for (int i = 0; fd >= 0 && i < flips; i++) {
                unsigned char c;
                off_t at = (off_t)below(r, (uint64_t)sz);
                if (pread(fd, &c, 1, at) == 1) {
                    c ^= (unsigned char)(1u << below(r, 8));
                    (void)!pwrite(fd, &c, 1, at);
                }
            }
            if (fd >= 0) {
                close(fd);
            }
            st->flips++;
        } else if (kind < 6 && sz > 0) {
            (void)!truncate(path, (off_t)below(r, (uint64_t)sz));
            st->truncations++;
        } else if (kind == 6) {
            unlink(path);
            st->deletions++;
        } else if (kind < 9) {
            int fd = open(path, O_WRONLY | O_APPEND);
            unsigned char junk[64];
            for (size_t i = 0; i < sizeof(junk); i++) {
                junk[i] = (unsigned char)below(r, 256);
            }
            if (fd >= 0) {
                (void)!write(fd, junk, 1 + below(r, sizeof(junk)));
                close(fd);
            }
            st->garbage++;
        } else {
            snprintf(path, sizeof(path), "%s/end", tdir);
            int fd = open(path, O_WRONLY);
            unsigned char zero[32] = {0};
            if (fd >= 0) {
                (void)!pwrite(fd, zero, sizeof(zero), 0);
                close(fd);
            }
            st->end_zeroed++;
        }
    }
    free(names);
}

/* --- checks ------------------------------------------------------------------------------- */

typedef struct outcome {
    uint64_t first, next, records, n_read, n_gaps;
    uint64_t hash; /* of the seqs read and the gaps */
} outcome;

static bool verbose;

__attribute__((format(printf, 3, 4))) static void violation(stats *st, uint64_t seed,
                                                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "VIOLATION (seed %" PRIu64 "): ", seed);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    st->violations++;
}

/* Reopens the trace and checks the invariants that hold whatever happened. */
static bool check_open(const char *data_dir, const char *id, const plan *pl, uint64_t seed, rng *r,
                       stats *st, outcome *o, uint64_t served, bool damaged, bool sealed,
                       uint64_t given, bool fault)
{
    trace_persist_config cfg = {.data_dir = data_dir};
    trace_persist *p = NULL;
    json_t *meta = NULL;
    char why[512] = "";
    if (trace_persist_open(&cfg, id, &p, &meta, why, sizeof(why)) != WAMP_OK) {
        violation(st, seed, "trace_persist_open failed");
        return false;
    }
    json_decref(meta);
    memset(o, 0, sizeof(*o));
    o->first = trace_persist_first_seq(p);
    o->next = trace_persist_next_seq(p);
    o->records = trace_persist_records(p);
    o->n_gaps = trace_persist_gap_count(p);
    uint64_t before = st->violations;
    /* Gaps: ordered, inside [first, next), not overlapping. */
    trace_gap *gaps = calloc(o->n_gaps + 1, sizeof(*gaps));
    uint64_t gap_seqs = 0;
    for (size_t i = 0; i < o->n_gaps; i++) {
        gaps[i] = trace_persist_gap(p, i);
        const trace_gap *g = &gaps[i];
        if (g->from_seq > g->to_seq || g->from_seq < o->first || g->to_seq >= o->next ||
            (i && g->from_seq <= gaps[i - 1].to_seq)) {
            violation(st, seed, "gap %zu (%" PRIu64 "..%" PRIu64 ") out of order or range", i,
                      g->from_seq, g->to_seq);
        }
        gap_seqs += g->to_seq - g->from_seq + 1;
        o->hash = o->hash * 31 + g->from_seq * 7 + g->to_seq;
        if (!damaged && strcmp(g->reason, TRACE_GAP_IO_ERROR) != 0) {
            violation(st, seed, "gap %" PRIu64 "..%" PRIu64 " (%s) without damage", g->from_seq,
                      g->to_seq, g->reason);
        }
        if (!damaged && (!fault || g->from_seq < served)) {
            violation(st, seed,
                      "io_error gap %" PRIu64 "..%" PRIu64 " (fault %d, served %" PRIu64 ")",
                      g->from_seq, g->to_seq, fault, served);
        }
    }
    st->gaps_seen += o->n_gaps;
    /* Everything, in pages of random sizes, as a client pages. */
    trace_record *buf = calloc(READ_PAGE, sizeof(*buf));
    unsigned char *want = malloc(8192);
    uint64_t from = 0, last = 0;
    bool any = false;
    size_t gi = 0;
    for (;;) {
        size_t limit = 1 + (size_t)below(r, READ_PAGE);
        size_t n = trace_persist_read(p, from, UINT64_MAX, limit, buf);
        for (size_t i = 0; i < n; i++) {
            const trace_record *rec = &buf[i];
            if (any && rec->seq <= last) {
                violation(st, seed, "seq %" PRIu64 " after %" PRIu64, rec->seq, last);
            }
            while (gi < o->n_gaps && gaps[gi].to_seq < rec->seq) {
                gi++;
            }
            if (gi < o->n_gaps && gaps[gi].from_seq <= rec->seq) {
                violation(st, seed, "seq %" PRIu64 " read, but in gap %" PRIu64 "..%" PRIu64,
                          rec->seq, gaps[gi].from_seq, gaps[gi].to_seq);
            }
            if (rec->seq < o->first || rec->seq >= o->next) {
                violation(st, seed, "seq %" PRIu64 " outside %" PRIu64 "..%" PRIu64, rec->seq,
                          o->first, o->next);
            }
            const plan_msg *m = plan_find(pl, rec->seq);
            if (!m) {
                violation(st, seed, "seq %" PRIu64 " not in the plan", rec->seq);
            } else {
                msg_bytes(m, want);
                uint64_t peer = 1000u + (m->peer0 + rec->seq - m->first_seq) % N_PEERS;
                if (!rec->wire || wamp_buf_len(rec->wire) != m->len ||
                    memcmp(wamp_buf_cdata(rec->wire), want, m->len) != 0 || !rec->peer ||
                    trace_peer_session_id(rec->peer) != peer || rec->msg_type != m->msg_type) {
                    violation(st, seed, "seq %" PRIu64 " does not hold its message", rec->seq);
                }
            }
            o->hash = o->hash * 31 + rec->seq;
            last = rec->seq;
            any = true;
            o->n_read++;
            trace_record_fini(&buf[i]);
        }
        if (n == 0) {
            break;
        }
        from = last + 1;
    }
    st->records_checked += o->n_read;
    if (o->n_read != o->records) {
        violation(st, seed, "records %" PRIu64 ", read %" PRIu64, o->records, o->n_read);
    }
    if (o->next - o->first != o->records + gap_seqs) {
        violation(st, seed,
                  "seqs %" PRIu64 "..%" PRIu64 " not all accounted for: %" PRIu64
                  " records + %" PRIu64 " in gaps",
                  o->first, o->next, o->records, gap_seqs);
    }
    if (!damaged) {
        if (o->first != 0 || o->next > given || (sealed && o->next != given) ||
            o->records < served) {
            violation(st, seed,
                      "undamaged: first %" PRIu64 " next %" PRIu64 " records %" PRIu64
                      ", given %" PRIu64 " served %" PRIu64 " sealed %d",
                      o->first, o->next, o->records, given, served, sealed);
        }
    }
    if (verbose || st->violations != before) {
        fprintf(stderr,
                "seed %" PRIu64 ": first %" PRIu64 " next %" PRIu64 " records %" PRIu64
                " gaps %" PRIu64 " given %" PRIu64 " served %" PRIu64 " sealed %d damaged %d "
                "fault %d%s%s\n",
                seed, o->first, o->next, o->records, o->n_gaps, given, served, sealed, damaged,
                fault, why[0] ? ": " : "", why);
    }
    free(want);
    free(buf);
    free(gaps);
    trace_persist_free(p);
    return st->violations == before;
}

/* --- one iteration -------------------------------------------------------------------------- */

static void remove_tree(const char *dir)
{
    char(*names)[64] = malloc(8192 * sizeof(*names));
    size_t n = list_files(dir, NULL, names, 8192);
    char path[1024];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            remove_tree(path);
        } else {
            unlink(path);
        }
    }
    free(names);
    rmdir(dir);
}

static void copy_dir(const char *from, const char *to)
{
    char(*names)[64] = malloc(8192 * sizeof(*names));
    size_t n = list_files(from, NULL, names, 8192);
    mkdir(to, 0700);
    char a[1024], b[1024];
    unsigned char *buf = malloc(1 << 16);
    for (size_t i = 0; i < n; i++) {
        snprintf(a, sizeof(a), "%s/%s", from, names[i]);
        snprintf(b, sizeof(b), "%s/%s", to, names[i]);
        int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ssize_t k;
        while (in >= 0 && out >= 0 && (k = read(in, buf, 1 << 16)) > 0) {
            (void)!write(out, buf, (size_t)k);
        }
        if (in >= 0) {
            close(in);
        }
        if (out >= 0) {
            close(out);
        }
    }
    free(buf);
    free(names);
}

static bool iteration(const char *base, uint64_t seed, stats *st)
{
    char data_dir[560];
    snprintf(data_dir, sizeof(data_dir), "%s/it-%" PRIu64, base, seed);
    remove_tree(data_dir);
    rng r = {seed * 0x2545f4914f6cdd1dull + 1};
    plan pl;
    plan_make(seed, &pl);
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(2);
    }
    if (child == 0) {
        close(fds[0]);
        _exit(child_main(data_dir, seed, fds[1]));
    }
    close(fds[1]);
    /* Kill it at a random time, or (1 in 4) let it finish. */
    bool let_finish = below(&r, 4) == 0;
    uint64_t delay_us = below(&r, 150000);
    if (!let_finish) {
        struct timespec ts = {(time_t)(delay_us / 1000000), (long)(delay_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
        kill(child, SIGKILL);
    }
    report rp = {0}, last = {0};
    while (read(fds[0], &rp, sizeof(rp)) == (ssize_t)sizeof(rp)) {
        last = rp;
    }
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    bool sealed = last.done && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (WIFSIGNALED(status)) {
        st->kills++;
    } else if (!sealed) {
        violation(st, seed, "child ended with status %d", status);
    }
    st->seals += sealed;
    /* Which fault the child drew (the same draws as child_main()). */
    rng cr = {seed};
    bool fault = below(&cr, 4) == 1;
    if (fault && last.fired) {
        uint64_t kind = FAULT_WRITE + below(&cr, 3);
        st->faults_write += kind == FAULT_WRITE;
        st->faults_short += kind == FAULT_SHORT;
        st->faults_fsync += kind == FAULT_FSYNC;
    }
    char names[4][64];
    size_t n = list_files(data_dir, NULL, names, 4);
    bool ok = true;
    if (n == 1) {
        char tdir[700];
        snprintf(tdir, sizeof(tdir), "%s/%s", data_dir, names[0]);
        bool damaged = below(&r, 2) == 0;
        if (damaged) {
            damage(tdir, &r, st);
        }
        /* The files as the reopens find them, kept with the iteration's directory if a check
         * fails (a reopen may cut a torn tail). */
        char copy[800];
        snprintf(copy, sizeof(copy), "%s.orig", tdir);
        copy_dir(tdir, copy);
        outcome a, b;
        /* Seqs given out: exactly the last report's when sealed, at most the plan's otherwise. */
        uint64_t given = sealed ? last.given : pl.seqs;
        ok = check_open(data_dir, names[0], &pl, seed, &r, st, &a, last.served, damaged, sealed,
                        given, fault);
        if (ok) {
            ok = check_open(data_dir, names[0], &pl, seed, &r, st, &b, last.served, damaged, sealed,
                            given, fault);
            if (ok && (a.first != b.first || a.next != b.next || a.records != b.records ||
                       a.hash != b.hash)) {
                violation(st, seed,
                          "the second reopen differs from the first: first %" PRIu64 "/%" PRIu64
                          " next %" PRIu64 "/%" PRIu64 " records %" PRIu64 "/%" PRIu64
                          " gaps %" PRIu64 "/%" PRIu64,
                          a.first, b.first, a.next, b.next, a.records, b.records, a.n_gaps,
                          b.n_gaps);
                ok = false;
            }
        }
    } else if (n > 1 || last.given) {
        violation(st, seed, "%zu trace directories", n);
        ok = false;
    }
    st->iterations++;
    free(pl.msgs);
    if (ok) {
        remove_tree(data_dir);
    } else {
        fprintf(stderr, "kept %s\n", data_dir);
    }
    return ok;
}

int main(int argc, char **argv)
{
    double seconds = 10;
    uint64_t seed = (uint64_t)time(NULL) * 1000003u + (uint64_t)getpid();
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (strcmp(argv[i], "--verbose") == 0) {
            verbose = true;
        } else {
            fprintf(stderr, "usage: %s [--seconds N] [--seed S] [--dir D] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    char base[512];
    if (dir) {
        snprintf(base, sizeof(base), "%s", dir);
        mkdir(base, 0700);
    } else {
        snprintf(base, sizeof(base), "/tmp/crash_persist.XXXXXX");
        if (!mkdtemp(base)) {
            perror("mkdtemp");
            return 2;
        }
    }
    signal(SIGXFSZ, SIG_IGN);
    printf("crash_persist: first seed %" PRIu64 ", %.0f s, in %s\n", seed, seconds, base);
    fflush(stdout);
    stats st = {0};
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        (void)iteration(base, seed++, &st);
        clock_gettime(CLOCK_MONOTONIC, &t);
        double el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
        if (el >= seconds || st.violations >= 10) {
            break;
        }
    }
    printf("crash_persist: %" PRIu64 " iterations: %" PRIu64 " killed, %" PRIu64
           " sealed; faults injected: %" PRIu64 " write, %" PRIu64 " short write, %" PRIu64
           " fsync; damage: %" PRIu64 " byte flips, %" PRIu64 " truncations, %" PRIu64
           " segment deletions, %" PRIu64 " garbage appends, %" PRIu64 " end files zeroed; %" PRIu64
           " records checked, %" PRIu64 " gaps; %" PRIu64 " invariant violations\n",
           st.iterations, st.kills, st.seals, st.faults_write, st.faults_short, st.faults_fsync,
           st.flips, st.truncations, st.deletions, st.garbage, st.end_zeroed, st.records_checked,
           st.gaps_seen, st.violations);
    if (!dir && st.violations == 0) {
        rmdir(base);
    }
    return st.violations ? 1 : 0;
}
