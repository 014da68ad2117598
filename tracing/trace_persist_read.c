/* trace_persist_read.c: reading records back (trace_persist_read()): from the files, checking
 * each CRC, and from the memory of a failed writer; gaps are skipped at the next block start. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_persist_int.h"

/* --- reading -----------------------------------------------------------------------------------
 */

/* A read cursor over one segment: a window of the file (or the write buffer). */
typedef struct reader {
    const trace_persist *p;
    int fd;
    size_t seg_i;
    uint64_t file_end; /* bytes readable through fd */
    bool mem;          /* the last reader_at() pointed into memory (no CRC there yet) */
    unsigned char *win;
    uint64_t win_off;
    size_t win_len;
    size_t win_cap;
} reader;

static bool reader_open(reader *rd, size_t seg_i)
{
    const trace_persist *p = rd->p;
    if (rd->fd >= 0) {
        close(rd->fd);
        rd->fd = -1;
    }
    rd->seg_i = seg_i;
    rd->win_len = 0;
    const seg *s = &p->segs[seg_i];
    bool active = p->writable && seg_i == p->n_segs - 1 && p->fd >= 0;
    rd->file_end =
            (active ? p->written : s->size) - persist_writer_failed_bytes(p->w, s->first_seq);
    if (rd->file_end == 0) {
        return true;
    }
    char name[40];
    persist_seg_name(name, sizeof(name), s->first_seq, "seg");
    rd->fd = persist_open_in(p->dir, name, O_RDONLY);
    return rd->fd >= 0;
}

/* Pointer to n bytes at off of the current segment, or NULL. */
static const unsigned char *reader_at(reader *rd, uint64_t off, size_t n)
{
    const trace_persist *p = rd->p;
    rd->mem = off >= rd->file_end;
    if (rd->mem) {
        /* Records not on disk: after a write error, those the writer kept (in order); then the
         * buffered ones of the active segment. */
        uint64_t rel = off - rd->file_end;
        uint64_t first = p->segs[rd->seg_i].first_seq;
        if (p->w && atomic_load(&p->w->failed_flag)) {
            for (const job *j = p->w->failed; j; j = j->next) {
                if (j->seg_first != first) {
                    continue;
                }
                if (rel < j->len) {
                    return rel + n <= j->len ? j->buf + rel : NULL;
                }
                rel -= j->len;
            }
        }
        bool active = p->writable && rd->seg_i == p->n_segs - 1;
        if (!active || rel + n > p->len || p->io_from != NO_SEQ) {
            return NULL; /* after an I/O error, only what is in the files */
        }
        return p->buf + rel;
    }
    if (off + n > rd->file_end) {
        return NULL;
    }
    if (off >= rd->win_off && off + n <= rd->win_off + rd->win_len) {
        return rd->win + (off - rd->win_off);
    }
    size_t want = n > READ_CHUNK ? n : READ_CHUNK;
    if (off + want > rd->file_end) {
        want = (size_t)(rd->file_end - off);
    }
    if (rd->win_cap < want) {
        unsigned char *w = realloc(rd->win, want);
        if (!w) {
            return NULL;
        }
        rd->win = w;
        rd->win_cap = want;
    }
    if (rd->fd < 0 || !persist_pread_all(rd->fd, rd->win, want, off)) {
        rd->win_len = 0;
        return NULL;
    }
    rd->win_off = off;
    rd->win_len = want;
    return rd->win;
}

/* Index of the segment holding seq (or the first one after it); n_segs if none. */
static size_t find_seg(const trace_persist *p, uint64_t seq)
{
    size_t lo = 0, hi = p->n_segs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->segs[mid].next_seq <= seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Offset of the index entry at or before seq in s. */
static uint64_t find_off(const seg *s, uint64_t seq, uint64_t *at_seq)
{
    size_t lo = 0, hi = s->n_idx;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->idx[mid].seq <= seq) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *at_seq = lo ? s->idx[lo - 1].seq : s->first_seq;
    return lo ? s->idx[lo - 1].off : 0;
}

/* The offset of the first index entry of s after off (where reading goes on after damage: a
 * reopen verified that each one starts a block), or UINT64_MAX. */
static uint64_t next_block_after(const seg *s, uint64_t off, uint64_t *at_seq)
{
    size_t lo = 0, hi = s->n_idx;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->idx[mid].off <= off) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *at_seq = lo < s->n_idx ? s->idx[lo].seq : UINT64_MAX;
    return lo < s->n_idx ? s->idx[lo].off : UINT64_MAX;
}

/* One trace_persist_read(): the range asked for, the records returned so far, the reader and
 * the block of compact records it is in. */
typedef struct read_state {
    uint64_t from_seq, to_seq;
    size_t limit, n;
    trace_record *out;
    reader rd;
    block blk;
    bool done; /* a record at or past to_seq was met */
    /* The seq the next compact record must have: the reopen's rule (trace_persist_reload.c), so
     * that a record it found out of place, and counted in a gap, is not returned either. */
    uint64_t expect;
} read_state;

/* The body of the record at off (its CRC checked when it is on disk), or NULL if damaged. */
static const unsigned char *read_frame(reader *rd, uint64_t off, uint32_t *len, bool *compact)
{
    const unsigned char *h = reader_at(rd, off, HDR_LEN);
    *len = 0;
    *compact = false;
    if (!h || !persist_frame_len(get32(h), len, compact)) {
        return NULL;
    }
    uint32_t crc = get32(h + 4);
    const unsigned char *b = reader_at(rd, off + HDR_LEN, *len);
    if (b && !rd->mem && trace_crc32c(0, b, *len) != crc) {
        return NULL;
    }
    return b;
}

/* A run of `run` repeats: each decoded even when skipped (peers it defines); false if damaged. */
static bool read_run(read_state *st, const unsigned char *b, uint32_t len, uint32_t run)
{
    cursor c = {.p = b + C_RUN_HEAD, .end = b + len, .ok = true};
    bool ok = run > 0 && st->blk.open, done = false;
    uint32_t k = 0;
    for (; ok && !done && k < run && st->n < st->limit; k++) {
        trace_record *r = &st->out[st->n];
        st->blk.seq++;
        ok = persist_decode_repeat(&c, &st->blk, true, true, r);
        if (ok && r->seq != st->expect++) {
            ok = false; /* out of place: damage */
            trace_record_fini(r);
            continue;
        }
        if (!ok || r->seq < st->from_seq || r->seq >= st->to_seq) {
            done = ok && r->seq >= st->to_seq;
            trace_record_fini(r);
            continue;
        }
        st->n++;
    }
    if (!ok || (k == run && c.p != c.end)) {
        return false;
    }
    st->done = done;
    return true;
}

static bool read_one(read_state *st, const unsigned char *b, uint32_t len, bool compact);

/* The records of a pack (C_PACK), each decoded even when skipped; false if damaged. */
static bool read_pack(read_state *st, const unsigned char *b, uint32_t len)
{
    cursor c = {.p = b + 1, .end = b + len, .ok = true};
    const unsigned char *sub;
    uint32_t n;
    while (!st->done && st->n < st->limit && persist_pack_next(&c, &sub, &n)) {
        if (!read_one(st, sub, n, true)) {
            return false;
        }
    }
    return c.ok;
}

/* One record (not a run); false if damaged. A compact record is decoded even when skipped: it
 * may define what later ones refer to. */
static bool read_one(read_state *st, const unsigned char *b, uint32_t len, bool compact)
{
    size_t n = st->n;
    if (!compact) {
        uint64_t seq = get64(b);
        if (seq < st->from_seq) {
            return true;
        }
        if (seq >= st->to_seq) {
            st->done = true;
            return true;
        }
    }
    bool ok = compact ? persist_decode_compact(b, len, &st->blk, &st->out[n])
                      : persist_decode_record(b, len, &st->out[n], n ? &st->out[n - 1] : NULL);
    if (ok && compact && st->out[n].seq != st->expect++) {
        trace_record_fini(&st->out[n]); /* out of place: damage */
        return false;
    }
    if (!ok || st->out[n].seq < st->from_seq || st->out[n].seq >= st->to_seq) {
        st->done = ok && st->out[n].seq >= st->to_seq;
        trace_record_fini(&st->out[n]);
        return ok;
    }
    st->n++;
    return true;
}

/* The records of segment s (opened in st->rd) from st->from_seq on. */
static void read_segment(read_state *st, const seg *s)
{
    /* An index entry (or the segment's start) starts a block of compact records. */
    st->expect = s->first_seq;
    uint64_t off = st->from_seq > s->first_seq ? find_off(s, st->from_seq, &st->expect) : 0;
    persist_block_reset(&st->blk);
    while (!st->done && st->n < st->limit && off < s->size) {
        uint64_t at = off;
        uint32_t len, run = 0;
        bool compact;
        const unsigned char *b = read_frame(&st->rd, off, &len, &compact);
        /* A block's first seq comes in a record that starts a block, as the reopen requires. */
        bool ok = b != NULL && (!compact || block_pos(s, st->expect) != 0 ||
                                (b[0] & (C_BLOCK | C_REPEAT)) == C_BLOCK);
        if (ok) {
            off += HDR_LEN + len;
            if (compact && persist_is_run(b, len, &st->blk, &run)) {
                ok = read_run(st, b, len, run);
            } else if (compact && persist_is_pack(b)) {
                ok = read_pack(st, b, len);
            } else {
                ok = read_one(st, b, len, compact);
            }
        }
        if (!ok) {
            /* A gap (the reopen found it): reading goes on at the next block start. */
            off = next_block_after(s, at, &st->expect);
            persist_block_reset(&st->blk);
        }
    }
}

size_t trace_persist_read(trace_persist *p, uint64_t from_seq, uint64_t to_seq, size_t limit,
                          trace_record *out)
{
    read_state st = {.from_seq = from_seq,
                     .to_seq = to_seq,
                     .limit = limit,
                     .out = out,
                     .rd = {.p = p, .fd = -1}};
    if (p->w) {
        /* Only what is in the files is returned: the buffered records first go to the writer
         * (a failure makes them the io_error gap), and the writer finishes what it has. */
        if (p->len && !persist_failed(p)) {
            (void)persist_write_out(p);
        }
        persist_writer_drain(p->w, false);
        (void)persist_failed(p);
    }
    if (p->io_from != NO_SEQ && st.to_seq > p->io_from) {
        st.to_seq = p->io_from;
    }
    for (size_t si = find_seg(p, from_seq); si < p->n_segs && st.n < limit && !st.done; si++) {
        const seg *s = &p->segs[si];
        if (s->first_seq >= st.to_seq) {
            break;
        }
        if (reader_open(&st.rd, si)) {
            read_segment(&st, s);
        }
    }
    persist_block_reset(&st.blk);
    if (st.rd.fd >= 0) {
        close(st.rd.fd);
    }
    free(st.rd.win);
    return st.n;
}
