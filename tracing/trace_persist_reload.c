/* trace_persist_reload.c: opening a persisted trace again: every segment read and verified,
 * the index rebuilt, damage resynchronised at the next block start, gaps found and a damaged
 * tail cut off (PERSIST_FORMAT.md, "Reload"). */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_persist_int.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_gap(const void *a, const void *b)
{
    const trace_gap *x = a, *y = b;
    return x->from_seq < y->from_seq ? -1 : x->from_seq > y->from_seq;
}

/* Whether the seq a block's first record starts with fits: `want` (or, want = NO_SEQ, any seq
 * from min_seq on), and (compact records) at a block start of s. */
static bool block_seq_fits(const seg *s, uint64_t seq, uint64_t want, uint64_t min_seq,
                           bool compact)
{
    return (want == NO_SEQ ? seq >= min_seq : seq == want) && (!compact || block_pos(s, seq) == 0);
}

/* What the head of a candidate at off says, read without its body: a compact record's frame
 * whose body fits in the file, starts a block (C_BLOCK) and opens with a seq that fits
 * (block_seq_fits(): the absolute seq after the what, type and dir bytes). An older frame is
 * let through (its check is its CRC). *len: the body's length, for the CRC work it will cost. So
 * a candidate costs its CRC only when its head makes sense: damage, or binary message bytes
 * that happen to look like a frame header, cost a few bytes each. */
static bool block_head_fits(int fd, uint64_t off, uint64_t file_size, const seg *s, uint64_t want,
                            uint64_t min_seq, uint32_t *len)
{
    unsigned char h[HDR_LEN + 3 + VAR_MAX];
    bool compact;
    if (off >= file_size || file_size - off < HDR_LEN) {
        return false;
    }
    size_t n = file_size - off < sizeof(h) ? (size_t)(file_size - off) : sizeof(h);
    if (!persist_pread_all(fd, h, n, off) || !persist_frame_len(get32(h), len, &compact) ||
        *len > file_size - off - HDR_LEN) {
        return false;
    }
    if (!compact) {
        return true;
    }
    const unsigned char *b = h + HDR_LEN;
    if ((b[0] & (C_BLOCK | C_REPEAT)) != C_BLOCK) {
        return false;
    }
    uint64_t seq = 0;
    for (size_t i = 3, shift = 0; HDR_LEN + i < n && shift < 64; i++, shift += 7) {
        seq |= (uint64_t)(b[i] & 0x7fu) << shift;
        if (!(b[i] & 0x80u)) {
            return block_seq_fits(s, seq, want, min_seq, true);
        }
    }
    return false;
}

/* A record that a reader can start at: whole, its CRC right, decoding from a fresh block, the
 * seq `want` (or, want = NO_SEQ, any seq from min_seq on), at a block start of s. Each one whose
 * head fits costs its body's CRC out of *budget; false once that is spent. */
static bool block_start_at(int fd, uint64_t off, uint64_t file_size, const seg *s, uint64_t want,
                           uint64_t min_seq, unsigned char **body, size_t *cap, uint64_t *seq,
                           uint64_t *budget)
{
    uint32_t len, head_len;
    bool compact;
    uint64_t count, ts;
    if (!*budget || !block_head_fits(fd, off, file_size, s, want, min_seq, &head_len)) {
        return false;
    }
    *budget = head_len > *budget ? 0 : *budget - head_len;
    block b = {0};
    bool ok = persist_read_record_fd(fd, off, file_size, body, cap, &len, &compact) &&
              (!compact || ((*body)[0] & (C_BLOCK | C_REPEAT)) == C_BLOCK) &&
              persist_verify_body(*body, len, compact, &b, seq, &count, &ts) &&
              block_seq_fits(s, *seq, want, min_seq, compact);
    persist_block_reset(&b);
    return ok;
}

/* A read window over a segment file for the scan of a reopen: a pread(2) per MiB rather than two
 * per record (those were nine tenths of a reopen's time, in the kernel). */
typedef struct fwin {
    int fd;
    uint64_t size; /* of the file */
    unsigned char *buf;
    size_t cap;
    uint64_t off; /* of buf in the file */
    size_t len;
} fwin;

#define FWIN_CHUNK (4u * READ_CHUNK)

/* n bytes at off, valid until the next call; NULL past the end or on a read error. */
static const unsigned char *fwin_at(fwin *w, uint64_t off, size_t n)
{
    if (off > w->size || n > w->size - off) {
        return NULL;
    }
    if (off >= w->off && off + n <= w->off + w->len) {
        return w->buf + (off - w->off);
    }
    size_t want = n > FWIN_CHUNK ? n : FWIN_CHUNK;
    if (want > w->size - off) {
        want = (size_t)(w->size - off);
    }
    if (w->cap < want) {
        unsigned char *b = realloc(w->buf, want);
        if (!b) {
            return NULL;
        }
        w->buf = b;
        w->cap = want;
    }
    if (!persist_pread_all(w->fd, w->buf, want, off)) {
        w->len = 0;
        return NULL;
    }
    w->off = off;
    w->len = want;
    return w->buf;
}

/* persist_read_record_fd() through the window: *body points into it. */
static bool read_record_win(fwin *w, uint64_t off, const unsigned char **body, uint32_t *body_len,
                            bool *compact)
{
    const unsigned char *h = fwin_at(w, off, HDR_LEN);
    uint32_t len;
    if (!h || !persist_frame_len(get32(h), &len, compact)) {
        return false;
    }
    uint32_t crc = get32(h + 4);
    const unsigned char *b = fwin_at(w, off + HDR_LEN, len);
    if (!b || trace_crc32c(0, b, len) != crc) {
        return false;
    }
    *body = b;
    *body_len = len;
    return true;
}

/* CRC work the resynchronisations of one segment may do, its index's entries and the scans
 * together (damage made by hand could ask for a CRC of up to the file's size at each byte
 * otherwise; block_head_fits() keeps most candidates from costing any). */
#define RESYNC_BUDGET ((uint64_t)64 * 1024 * 1024)

/* Where reading can go on after damage at off (seq min_seq not readable): the next entry of the
 * segment's index file that verifies as a block start, else the next block start found by
 * scanning the bytes (compact segments only); the CRC work out of *budget (the segment's).
 * false if none. */
static bool resync(int fd, uint64_t off, uint64_t file_size, const seg *s, const idx_entry *hint,
                   size_t n_hint, uint64_t min_seq, unsigned char **body, size_t *cap,
                   uint64_t *budget, uint64_t *at_off, uint64_t *at_seq)
{
    for (size_t i = 0; i < n_hint && *budget; i++) {
        uint64_t seq;
        if (hint[i].off > off && hint[i].seq >= min_seq &&
            block_start_at(fd, hint[i].off, file_size, s, hint[i].seq, min_seq, body, cap, &seq,
                           budget)) {
            *at_off = hint[i].off;
            *at_seq = seq;
            return true;
        }
    }
    unsigned char *win = malloc(READ_CHUNK);
    if (!win) {
        return false;
    }
    bool found = false;
    for (uint64_t base = off + 1; !found && base + HDR_LEN < file_size && *budget;) {
        size_t n = file_size - base < READ_CHUNK ? (size_t)(file_size - base) : READ_CHUNK;
        if (!persist_pread_all(fd, win, n, base)) {
            break;
        }
        for (size_t i = 0; i + HDR_LEN + C_FULL_MIN <= n; i++) {
            uint32_t word = get32(win + i);
            uint32_t len = word & ~LEN_COMPACT;
            if (!(word & LEN_COMPACT) || len < C_FULL_MIN || len > BODY_MAX ||
                base + i + HDR_LEN + len > file_size ||
                (win[i + HDR_LEN] & (C_BLOCK | C_REPEAT)) != C_BLOCK) {
                continue;
            }
            uint64_t seq;
            if (block_start_at(fd, base + i, file_size, s, NO_SEQ, min_seq, body, cap, &seq,
                               budget)) {
                *at_off = base + i;
                *at_seq = seq;
                found = true;
                break;
            }
            if (!*budget) {
                break;
            }
        }
        if (n <= HDR_LEN + C_FULL_MIN) {
            break;
        }
        base += n - (HDR_LEN + C_FULL_MIN);
    }
    free(win);
    return found;
}

static bool gap_push(trace_persist *p, uint64_t from, uint64_t to, const char *reason,
                     uint64_t file_first, const char *ext, uint64_t offset)
{
    if (p->n_gaps == p->cap_gaps) {
        size_t ncap = p->cap_gaps ? p->cap_gaps * 2 : 8;
        trace_gap *n = realloc(p->gaps, ncap * sizeof(*n));
        if (!n) {
            return false;
        }
        p->gaps = n;
        p->cap_gaps = ncap;
    }
    trace_gap *g = &p->gaps[p->n_gaps++];
    memset(g, 0, sizeof(*g));
    g->from_seq = from;
    g->to_seq = to;
    g->reason = reason;
    g->offset = offset;
    if (ext) {
        persist_seg_name(g->file, sizeof(g->file), file_first, ext);
    }
    return true;
}

/* The index file of the segment starting at first_seq: its entries that point inside the
 * segment file (file_size bytes) and increase, as hints for resync() (malloc'ed; NULL if none). */
static idx_entry *read_hints(const trace_persist *p, uint64_t first_seq, uint64_t file_size,
                             size_t *n_out)
{
    char name[40];
    idx_entry *hint = NULL;
    size_t n_hint = 0, cap_hint = 0;
    persist_seg_name(name, sizeof(name), first_seq, "idx");
    int ifd = persist_open_in(p->dir, name, O_RDONLY);
    if (ifd >= 0) {
        unsigned char ent[IDX_ENTRY];
        uint64_t off = 0;
        while (persist_pread_all(ifd, ent, IDX_ENTRY, off)) {
            uint64_t seq = get64(ent), at = get64(ent + 8);
            if (at >= file_size ||
                (n_hint && (seq <= hint[n_hint - 1].seq || at <= hint[n_hint - 1].off))) {
                break;
            }
            if (n_hint == cap_hint) {
                size_t ncap = cap_hint ? cap_hint * 2 : 64;
                idx_entry *nh = realloc(hint, ncap * sizeof(*nh));
                if (!nh) {
                    break;
                }
                hint = nh;
                cap_hint = ncap;
            }
            hint[n_hint++] = (idx_entry){seq, at};
            off += IDX_ENTRY;
        }
        close(ifd);
    }
    *n_out = n_hint;
    return hint;
}

/* The segment file starting at first_seq, opened to read (and to cut a damaged tail, unless the
 * media is read-only), and its size; -1 if it cannot be. */
static int open_seg_file(const trace_persist *p, uint64_t first_seq, uint64_t *file_size)
{
    char seg_file[40];
    persist_seg_name(seg_file, sizeof(seg_file), first_seq, "seg");
    int fd = persist_open_in(p->dir, seg_file, O_RDWR);
    if (fd < 0) {
        /* Read-only media: readable, tails not cut. */
        fd = persist_open_in(p->dir, seg_file, O_RDONLY);
    }
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) != 0) {
        close(fd);
        fd = -1;
    }
    *file_size = fd >= 0 ? (uint64_t)st.st_size : 0;
    return fd;
}

/* Loads one segment (name = "<digits>.seg"): every record is read, its CRC checked and decoded;
 * the index is rebuilt from what verifies (the .idx file only suggests where to resynchronise).
 * Damage in the middle becomes a gap (corrupt) up to the next block start that verifies; what
 * follows the last record that verifies is a damaged tail (size < file_size), which the caller
 * (settle_segments()) judges once every segment is loaded. */
static wamp_err load_segment(trace_persist *p, uint64_t first_seq)
{
    seg *s = persist_seg_push(p, first_seq);
    if (!s) {
        return WAMP_ENOMEM;
    }
    uint64_t file_size;
    int fd = open_seg_file(p, first_seq, &file_size);
    if (fd < 0) {
        p->n_segs--;
        return WAMP_OK; /* vanished: nothing held there */
    }
    size_t n_hint = 0;
    idx_entry *hint = read_hints(p, first_seq, file_size, &n_hint);
    unsigned char *body = NULL; /* resync()'s */
    size_t cap = 0;
    const unsigned char *rec;
    uint32_t len;
    bool compact;
    block blk = {0};
    fwin win = {.fd = fd, .size = file_size};
    uint64_t off = 0, seq = first_seq, last_ts = 0, valid_end = 0, budget = RESYNC_BUDGET;
    wamp_err err = WAMP_OK;
    for (;;) {
        uint64_t rseq = 0, rcount = 0, rts = 0;
        bool starts = s->n_idx == 0 || block_pos(s, seq) == 0;
        if (read_record_win(&win, off, &rec, &len, &compact) &&
            (!compact || !starts || (rec[0] & (C_BLOCK | C_REPEAT)) == C_BLOCK) &&
            persist_verify_body(rec, len, compact, &blk, &rseq, &rcount, &rts) && rseq == seq) {
            if (starts && (s->n_idx == 0 || s->idx[s->n_idx - 1].seq < seq) &&
                !persist_idx_push(s, seq, off)) {
                err = WAMP_ENOMEM;
                break;
            }
            last_ts = rts;
            off += HDR_LEN + len;
            seq += rcount;
            valid_end = off;
            continue;
        }
        if (off >= file_size) {
            break; /* the end */
        }
        /* Damage: go on at the next block start that verifies, if there is one. */
        uint64_t at_off, at_seq;
        if (!resync(fd, off, file_size, s, hint, n_hint, seq, &body, &cap, &budget, &at_off,
                    &at_seq)) {
            break; /* a damaged tail */
        }
        if (at_seq > seq &&
            !gap_push(p, seq, at_seq - 1, TRACE_GAP_CORRUPT, first_seq, "seg", off)) {
            err = WAMP_ENOMEM;
            break;
        }
        persist_block_reset(&blk);
        off = at_off;
        seq = at_seq;
    }
    persist_block_reset(&blk);
    free(body);
    free(win.buf);
    free(hint);
    close(fd);
    if (err != WAMP_OK) {
        return err;
    }
    s->next_seq = seq;
    s->size = valid_end;
    s->file_size = file_size;
    s->last_ts = last_ts;
    p->bytes += valid_end;
    return WAMP_OK;
}

/* Removes the gaps found inside the segment starting at first_seq. */
static void forget_gaps_of(trace_persist *p, uint64_t first_seq)
{
    char name[32];
    persist_seg_name(name, sizeof(name), first_seq, "seg");
    size_t k = 0;
    for (size_t i = 0; i < p->n_gaps; i++) {
        if (strcmp(p->gaps[i].file, name) != 0) {
            p->gaps[k++] = p->gaps[i];
        }
    }
    p->n_gaps = k;
}

/* After every segment is loaded (in order): segments that hold nothing (empty files, or only
 * damage) and segments that overlap the one before (files that do not belong: no seq may be
 * returned twice) are set aside; the seqs between the segments kept are gaps (corrupt after a
 * damaged tail or a segment of damage only, else missing); the damaged tail of the last segment
 * kept is cut off its file (what a crash leaves; appends could not follow garbage) and noted in
 * why. Deciding this once every segment is known makes a second reopen find what the first did.
 * *tail_bad: the trace's files end in damage (for end_gap()). false when out of memory. */
static bool settle_segments(trace_persist *p, bool *tail_bad, char *why, size_t why_len)
{
    size_t k = 0;
    bool bad = false; /* damage since the last segment kept */
    uint64_t bad_first = 0;
    for (size_t i = 0; i < p->n_segs; i++) {
        seg s = p->segs[i];
        char name[40];
        if (s.next_seq == s.first_seq || (k && s.first_seq < p->segs[k - 1].next_seq)) {
            if (s.next_seq == s.first_seq && s.file_size == 0) {
                /* An empty segment (a rotation just before a crash). */
                persist_seg_name(name, sizeof(name), s.first_seq, "seg");
                (void)persist_unlink_in(p->dir, name);
                persist_seg_name(name, sizeof(name), s.first_seq, "idx");
                (void)persist_unlink_in(p->dir, name);
            } else if (!bad) {
                bad = true;
                bad_first = s.first_seq;
            }
            forget_gaps_of(p, s.first_seq);
            p->bytes -= s.size;
            free(s.idx);
            continue;
        }
        if (!k && bad &&
            !gap_push(p, bad_first, s.first_seq - 1, TRACE_GAP_CORRUPT, bad_first, "seg", 0)) {
            return false; /* damage only in the first segment(s): their seqs are a gap */
        }
        if (!k) {
            p->first_seq = bad ? bad_first : s.first_seq;
        }
        if (k) {
            const seg *prev = &p->segs[k - 1];
            bool corrupt = bad || prev->size < prev->file_size;
            if (s.first_seq > prev->next_seq &&
                !gap_push(p, prev->next_seq, s.first_seq - 1,
                          corrupt ? TRACE_GAP_CORRUPT : TRACE_GAP_MISSING,
                          bad ? bad_first : prev->first_seq, corrupt ? "seg" : NULL,
                          bad ? 0 : prev->size)) {
                return false;
            }
        }
        bad = false;
        p->segs[k++] = s;
    }
    if (!k) {
        p->first_seq = bad ? bad_first : 0;
    }
    p->n_segs = k;
    *tail_bad = bad;
    if (bad && why && why_len) {
        char name[40];
        persist_seg_name(name, sizeof(name), bad_first, "seg");
        snprintf(why, why_len, "%s/%s: no valid record (torn or corrupt), ignored", p->dir, name);
    }
    if (k && p->segs[k - 1].size < p->segs[k - 1].file_size) {
        seg *s = &p->segs[k - 1];
        char name[40];
        persist_seg_name(name, sizeof(name), s->first_seq, "seg");
        *tail_bad = true;
        if (why && why_len) {
            snprintf(why, why_len,
                     "%s/%s: cut %" PRIu64 " bytes of torn or corrupt records from seq %" PRIu64
                     " (byte %" PRIu64 ")",
                     p->dir, name, s->file_size - s->size, s->next_seq, s->size);
        }
        int fd = persist_open_in(p->dir, name, O_RDWR);
        if (fd >= 0) {
            /* Read-only media: not cut, and the reader still stops at the same place. */
            (void)!ftruncate(fd, (off_t)s->size);
            close(fd);
        }
        s->file_size = s->size;
    }
    return true;
}

/* The end file of a sealed trace: its next_seq and where its files ended then. false if there
 * is none (a crash: zeros) or it does not verify. */
static bool read_end(const trace_persist *p, uint64_t *next, uint64_t *durable)
{
    unsigned char rec[END_LEN];
    int fd = persist_open_in(p->dir, END_FILE, O_RDONLY);
    if (fd < 0) {
        return false;
    }
    bool ok = persist_pread_all(fd, rec, sizeof(rec), 0) && memcmp(rec, END_MAGIC, 4) == 0 &&
              trace_crc32c(0, rec, 28) == get32(rec + 28);
    close(fd);
    if (ok) {
        *next = get64(rec + 4);
        *durable = get64(rec + 12);
    }
    return ok && *durable <= *next;
}

/* After the segments: the seqs the end file says the trace gave out beyond its files' end are a
 * gap: io_error for those the files never held, corrupt (a damaged tail) or missing for those
 * they did. Without an end file (a crash), the files' end is the trace's: the records a crash
 * kept from them are the crash tail, not a gap. false when out of memory. */
static bool end_gap(trace_persist *p, bool tail_bad)
{
    uint64_t next, durable;
    if (!read_end(p, &next, &durable)) {
        return true;
    }
    uint64_t m = files_next(p);
    uint64_t last_first = p->n_segs ? p->segs[p->n_segs - 1].first_seq : 0;
    if (next <= m) {
        return true;
    }
    p->end_next = next;
    const char *why = tail_bad ? TRACE_GAP_CORRUPT : TRACE_GAP_MISSING;
    if (m < durable && !gap_push(p, m, durable - 1, why, last_first, tail_bad ? "seg" : NULL, 0)) {
        return false;
    }
    uint64_t from = m > durable ? m : durable;
    return from >= next || gap_push(p, from, next - 1, TRACE_GAP_IO_ERROR, 0, NULL, 0);
}

static bool parse_seg_name(const char *name, uint64_t *first_seq)
{
    size_t n = strlen(name);
    if (n != 24 || strcmp(name + 20, ".seg") != 0) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9') {
            return false;
        }
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    *first_seq = v;
    return true;
}

wamp_err persist_reload(trace_persist *p, char *why, size_t why_len)
{
    DIR *d = opendir(p->dir);
    if (!d) {
        return WAMP_ENOTFOUND;
    }
    /* Collect the segment names first (loading writes to the directory). */
    uint64_t *firsts = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t f;
        if (!parse_seg_name(e->d_name, &f)) {
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            uint64_t *nf = realloc(firsts, ncap * sizeof(*nf));
            if (!nf) {
                closedir(d);
                free(firsts);
                return WAMP_ENOMEM;
            }
            firsts = nf;
            cap = ncap;
        }
        firsts[n++] = f;
    }
    closedir(d);
    if (n > 1) {
        qsort(firsts, n, sizeof(*firsts), cmp_u64);
    }
    for (size_t i = 0; i < n; i++) {
        wamp_err err = load_segment(p, firsts[i]);
        if (err != WAMP_OK) {
            free(firsts);
            return err;
        }
    }
    free(firsts);
    bool tail_bad = false;
    if (!settle_segments(p, &tail_bad, why, why_len)) {
        return WAMP_ENOMEM;
    }
    if (!end_gap(p, tail_bad)) {
        return WAMP_ENOMEM;
    }
    if (p->n_gaps > 1) {
        qsort(p->gaps, p->n_gaps, sizeof(*p->gaps), cmp_gap);
    }
    return WAMP_OK;
}
