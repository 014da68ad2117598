/* trace_persist_int.h: what the files of the persisted-trace store (trace_persist_*.c) share:
 * the record encoding's constants, the store's structures and the functions one file offers the
 * others. Not a public header: only trace_persist*.c include it. The on-disk format is described
 * once, by version number, in PERSIST_FORMAT.md (this folder); the comments here name its parts.
 *
 * The files and the direction of their calls (no file calls back up):
 *   trace_persist.c (the public API: create, open, free, accessors, seal, flush, meta.json)
 *     -> trace_persist_reload.c (a reopen: verify every segment, rebuild the index, find gaps)
 *        -> trace_persist_decode.c (record bodies: format 1 and the compact formats 2-7)
 *     -> trace_persist_writer.c (the writer thread, jobs, rotation, retention, fsync policy)
 *   trace_persist_encode.c (append: the compact encoder) -> trace_persist_writer.c
 *   trace_persist_read.c (trace_persist_read()) -> trace_persist_decode.c, trace_persist_writer.c
 *   all of these -> trace_persist_seg.c (file names and I/O, the segment table, a block's reset)
 *   trace_persist_crc.c: CRC-32C (trace_crc32c(), public), called by those that write or check
 *   a CRC; it calls none of them. */
#ifndef TRACE_PERSIST_INT_H
#define TRACE_PERSIST_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "trace_persist.h"

/* --- record framing and body encoding (PERSIST_FORMAT.md, "Records") ------------------------- */

/* Framing: u32 length word + u32 CRC-32C of the body. The length word is the body's length, with
 * LEN_COMPACT set for a compact body (formats 2-7). */
#define HDR_LEN     8u
#define LEN_COMPACT 0x80000000u
/* Format 1 body (fixed part, then 6 length-prefixed fields; NIL_LEN = absent). Still read. */
#define FIXED_LEN (4u * 8u + PERSIST_SERS * 4u + 5u + TRACE_UUID_LEN)
#define NIL_LEN   UINT32_MAX
/* The `what` byte of a compact body (format 2 on; C_REPEAT since format 3). */
#define C_BLOCK     0x01u
#define C_PEER      0x02u
#define C_URI       0x04u
#define C_DROPPED   0x08u
#define C_WIRE      0x10u
#define C_WIRE_SAME 0x20u
#define C_CORR_SAME 0x40u
#define C_REPEAT    0x80u
/* In a C_REPEAT's what: a run (format 4). A repeat has no drop reason of its own, so the bit is
 * free there. */
#define C_RUN      C_DROPPED
#define C_RUN_HEAD 3u      /* what, u16 count */
#define C_RUN_MAX  0xffffu /* repeats a run holds at most */
#define C_MIN_LEN  1u      /* a C_REPEAT record without a peer */
#define C_FULL_MIN 9u      /* any other: 3 bytes and 6 one-byte varints */
/* In a full record's third byte (dir | wire_ser << 2 | flags << 4): a short record (format 5),
 * without ts and ser_bytes varints. Only for a record with bytes of its own (C_WIRE without
 * C_WIRE_SAME), never a block's first. */
#define C2_SHORT    0x80u
#define C_SHORT_MIN 6u /* 3 bytes, seq, pc and the bytes' length */
/* Format 7: in a full record, C_WIRE_SAME without C_WIRE: message bytes ending with the end of
 * the block's base bytes (the last ones written whole, C_WIRE alone), and C_CORR_SAME without
 * TRACE_CORR_HAS in the flags: a UUID whose first half is the block's last UUID's. The writer
 * refers to base bytes only for an end of at least WIRE_END_MIN octets (a shorter one saves
 * nothing: its length is a varint more). */
#define C_WIRE_END   C_WIRE_SAME
#define C_CORR_HALF  C_CORR_SAME
#define UUID_HALF    8u
#define WIRE_END_MIN 4u
/* block.base_off when the base bytes are not in the write buffer (none, or handed over). */
#define NO_BASE SIZE_MAX
/* Format 7: a pack, a frame of full records of one block (never its first), each a varint
 * length and its body, after the what byte C_PACK (C_REPEAT | C_URI: no repeat has a URI bit):
 * one frame header for them all. The writer packs records of at most PACK_REC_MAX bytes (a
 * larger one saves little) and starts a new pack when one holds PACK_MAX bytes: a torn write
 * loses its whole last frame, so a pack stays about a page. A pack never spans a hand-over to
 * the writer thread (and so never an fsync). */
#define C_PACK       (C_REPEAT | C_URI)
#define PACK_REC_MAX 1024u
#define PACK_MAX     4096u
/* Room a record may take in a pack beyond its body: the what byte and its length. */
#define PACK_EXTRA (1u + VAR_MAX)
/* trace_persist.pack_off when the frame written last is not a pack that may grow. */
#define NO_PACK SIZE_MAX
/* trace_persist.run_off when the record last written is not a run that may grow. */
#define NO_RUN SIZE_MAX
/* block.prev_uri when the previous record had no URI, or one a C_REPEAT cannot refer to (not
 * in the table). */
#define PREV_NO_URI  SIZE_MAX
#define PREV_BAD_URI (SIZE_MAX - 1)
/* Peers and URIs a block defines at most (a block holds at most TRACE_PERSIST_INDEX_EVERY
 * records, each defining at most one of each; both sides stop adding at this size). */
#define BLOCK_TABLE TRACE_PERSIST_INDEX_EVERY
#define HINT_SLOTS  256u /* a power of two */
/* Receivers of a fan-out the writer's block remembers by their position (block.memo_peer). */
#define RUN_MEMO 64u
/* The writer's cache of peer definitions (trace_persist.defs): slots, and the longest definition
 * a slot keeps. */
#define DEF_SLOTS 64u
#define DEF_BYTES 55u
/* Largest body accepted when reading (a bad length must not make us allocate gigabytes). */
#define BODY_MAX ((uint32_t)256 * 1024 * 1024)
/* An index file's entry: u64 seq, u64 offset. */
#define IDX_ENTRY 16u
/* pread window of a reader. */
#define READ_CHUNK (256u * 1024u)
/* LEB128: at most 10 bytes for a u64. */
#define VAR_MAX 10u

/* A record stores three sizes per serializer (ser_bytes, indexed by wamp_ser; [0] is unused). */
#define PERSIST_SERS 3
_Static_assert(WAMP_SER_COUNT == PERSIST_SERS + 1, "ser_bytes slots beyond the stored ones");

/* The ser_bytes index of a compact full record's i-th size varint (PERSIST_FORMAT.md, version
 * 6): CBOR, JSON, MessagePack. The first slot held the unused ser_bytes[0] before (always 0), so
 * an older segment reads as one without CBOR sizes, which is what it holds. */
static inline int persist_ser_slot(int i)
{
    return i == 0 ? WAMP_SER_CBOR : i;
}

/* No such seq (trace_persist.io_from). */
#define NO_SEQ UINT64_MAX
/* The end file (trace_persist_seal(); PERSIST_FORMAT.md, "The end file"): allocated at creation,
 * written in place at the end. */
#define END_FILE  "end"
#define END_ALLOC 4096u
#define END_LEN   32u    /* magic, next_seq, durable_next, CRC-32C of the 28 bytes before it */
#define END_MAGIC "WSE1" /* its first 4 bytes */

/* --- the store's structures ------------------------------------------------------------------ */

typedef struct idx_entry {
    uint64_t seq;
    uint64_t off;
} idx_entry;

typedef struct seg {
    uint64_t first_seq;
    uint64_t next_seq;  /* exclusive */
    uint64_t size;      /* bytes of whole records (flushed + buffered for the active one) */
    uint64_t last_ts;   /* wall clock of the newest record */
    uint64_t file_size; /* a reopened segment's file: its size; size < file_size: a damaged tail */
    idx_entry *idx;
    size_t n_idx;
    size_t cap_idx;
} seg;

/* seq's place in its block of segment s: 0 for a block's first record (the segment's first, then
 * every TRACE_PERSIST_INDEX_EVERY seqs: where index entries point). */
static inline uint64_t block_pos(const seg *s, uint64_t seq)
{
    return (seq - s->first_seq) % TRACE_PERSIST_INDEX_EVERY;
}

/* What the current block of compact records defined (the writer's and each reader's own
 * copy): references held on every entry. The scalars come first, the tables last: an append
 * reads and writes a few of the scalars and one table entry, and keeping those few in one or two
 * cache lines (not behind the 2 KiB peer table) saved a miss a record in the router's profile. */
typedef struct block {
    uint64_t seq, pc, ts;
    uint64_t prev_key; /* the previous record's trace_rec_view.key (writer; 0 = none) */
    size_t n_peers;
    size_t n_uris;
    wamp_buf *wire;
    /* The base bytes (format 7, C_WIRE_END): the block's last message bytes written whole. A
     * reader holds them (base); the writer finds them in its write buffer (base_off, NO_BASE
     * when they are not there, base_len octets). */
    wamp_buf *base;
    size_t base_off;
    size_t base_len;
    size_t prev_uri; /* index in uris, or PREV_NO_URI / PREV_BAD_URI */
    /* The block's previous record, what a C_REPEAT repeats (has_prev: there is one). */
    uint32_t prev_ser[WAMP_SER_COUNT];
    bool has_prev;
    bool prev_wire; /* it had C_WIRE: its bytes are `wire` */
    uint8_t prev_type;
    uint8_t prev_b2; /* dir | wire_ser << 2 | flags << 4 */
    bool has_corr;
    bool open; /* a block's first record has been seen (reader) */
    uint8_t corr[TRACE_UUID_LEN];
    void *peers[BLOCK_TABLE]; /* trace_peer */
    void *uris[BLOCK_TABLE];  /* trace_str */
    /* The writer's memo of a fan-out's receivers (extend_run()): the peer at position j of the
     * receivers appended together, + 1 (0: none), and its entry's code in a run (its index in
     * peers << 1, one byte). A router sends each message of a topic to its subscribers in the
     * same order, so the next fan-out finds each receiver here with one comparison instead of a
     * hint lookup. Only peers the table holds (and references) are remembered; cleared with the
     * block. */
    uintptr_t memo_peer[RUN_MEMO];
    uint8_t memo_code[RUN_MEMO];
} block;

/* A peer's definition as a block's record writes it (varint session_id, strings realm, authid,
 * authrole), kept by the writer so that the next block defines the peer with one copy: every
 * block defines again each peer it refers to. The slot holds a reference on its peer, so its
 * address is not reused while it is there. */
typedef struct def_slot {
    trace_peer *peer; /* NULL: empty */
    uint8_t len;
    unsigned char bytes[DEF_BYTES];
} def_slot;

struct trace_persist {
    /* What every append reads or writes first, together (see block). */
    bool writable;
    int fd;      /* active segment, -1 if none open */
    char *error; /* first I/O error, sticky */
    seg *segs;   /* oldest first; the last one is the active one */
    size_t n_segs;
    unsigned char *buf; /* records not handed over yet (whole records only) */
    size_t len;
    size_t cap;
    uint64_t bytes; /* sum of seg sizes */
    uint64_t segment_bytes;
    /* Offset in buf of the run (C_RUN) written last, which the next repeat of its block joins;
     * NO_RUN when the last record written is something else or was handed over. */
    size_t run_off;
    /* Offset in buf of the pack (C_PACK) written last, which the next full record of its block
     * joins; NO_PACK when the frame written last is something else or was handed over. */
    size_t pack_off;
    block blk; /* the active segment's current block (compact records); its tables last */
    /* Where a peer or URI object last was in blk's tables, direct-mapped by address: one probe
     * instead of a search (a search whose exit is a different entry each record mispredicts;
     * it was about a tenth of the encoder's time in the router benchmark). A hint is used only if
     * the table holds that object at that place; otherwise the table is searched. */
    uint8_t peer_hint[HINT_SLOTS];
    uint8_t uri_hint[HINT_SLOTS];
    char *dir; /* <data_dir>/<id> */
    char *id;  /* persistent_id */
    size_t cap_segs;
    uint64_t first_seq; /* of an empty store: where records start */
    /* Writing (active segment). */
    int idx_fd;         /* its index */
    uint64_t written;   /* bytes of the active segment handed to the writer */
    size_t idx_written; /* index entries of the active segment handed to the writer */
    trace_fsync_mode fsync;
    uint64_t fsync_interval_ns;
    uint64_t last_sync_pc;
    bool dirty; /* written since the last fsync */
    /* Names not yet durable: a segment created in dir since the last fsync (names_dirty), the
     * trace's own directory in the data directory (new_dir: a trace just created). A file's
     * fsync does not make its name survive a power loss; the directory's does. */
    bool names_dirty;
    bool new_dir;
    uint64_t max_bytes;
    uint64_t max_age_ns;
    struct writer *w; /* the writer thread of a writable trace (NULL once stopped) */
    char *data_dir;   /* of a writable trace: dir's parent, whose fsync makes dir's name durable */
    const trace_persist_io *io; /* test seam; NULL = the system calls */
    /* Gaps (trace_gap): those a reopen found, oldest first; then, after an I/O error, the seqs
     * from io_from to next_seq - 1 (not in the array: its end moves while seqs are given). */
    trace_gap *gaps;
    size_t n_gaps;
    size_t cap_gaps;
    uint64_t io_from;         /* first seq an I/O error kept out of the files; NO_SEQ if none */
    uint64_t lost_next;       /* seqs given out while the store could not take them end here */
    uint64_t handed_seq;      /* the seqs below it were handed to the writer thread */
    uint64_t end_next;        /* a reopened trace: next_seq from its end file; 0 if none */
    def_slot defs[DEF_SLOTS]; /* direct-mapped by the peer's address (hint_slot()) */
};

/* The write buffer's marks (the run and the pack that may grow, where the base bytes are) point
 * into its bytes: none once they are gone (handed over to the writer, or never written). */
static inline void persist_marks_clear(trace_persist *p)
{
    p->run_off = NO_RUN;
    p->pack_off = NO_PACK;
    p->blk.base_off = NO_BASE;
}

/* The next seq the files would hold (the segments' end). */
static inline uint64_t files_next(const trace_persist *p)
{
    return p->n_segs ? p->segs[p->n_segs - 1].next_seq : p->first_seq;
}

/* The writer thread (trace_persist_writer.c): what a job does after writing its data. */
enum {
    JOB_SYNC = 1u << 0,        /* fsync the segment and its index after the data */
    JOB_CLOSE = 1u << 1,       /* then close them (a rotated segment) */
    JOB_SYNC_DIR = 1u << 2,    /* then fsync the trace's directory (new segment names) */
    JOB_SYNC_PARENT = 1u << 3, /* and the data directory (a new trace's directory name) */
    JOB_UNLINK = 1u << 4,      /* then delete segment `unlink_first` (retention) */
};

typedef struct job {
    struct job *next;
    unsigned flags;
    int fd;             /* segment (-1: none) */
    int idx_fd;         /* its index (-1: none) */
    uint64_t seg_first; /* the segment's first seq: names its files */
    uint64_t first_seq; /* of the first record in buf (the next seq if buf is empty) */
    uint64_t end_seq;   /* after its last record */
    uint64_t base;      /* offset of buf in the segment */
    uint64_t unlink_first;
    unsigned char *buf; /* whole records; their CRCs are filled in here */
    size_t len;
    size_t cap;
    unsigned char *idx; /* encoded index entries */
    size_t idx_len;
    size_t idx_cap;
} job;

typedef struct writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* to the writer: a job, or quit */
    pthread_cond_t progress; /* to the service thread: data handled, backlog shrunk */
    job *head, *tail;        /* queued, oldest first */
    job *failed, *failed_tail;
    job *spare;
    unsigned n_spare;
    uint64_t queued;    /* jobs submitted */
    uint64_t data_done; /* jobs whose data is written (or failed) */
    uint64_t done;      /* jobs finished */
    uint64_t backlog;   /* bytes of data queued, not written yet */
    uint64_t backlog_max;
    uint64_t waits;        /* times the service thread waited for the backlog */
    uint64_t peak;         /* the most bytes ever queued */
    uint64_t written_next; /* the seqs below it are written (jobs' end_seq) */
    /* The fsyncs timed and the records written: the writer thread (and persist_sync_names() on
     * the service thread) update them, trace_persist_get_sync_stats() copies them, all under
     * mu (an fsync takes milliseconds; a lock per fsync costs nothing next to it). */
    trace_persist_sync_stats sync;
    bool quit;
    atomic_bool failed_flag;
    char error[512];      /* the first error, set once before failed_flag */
    const char *dir;      /* the trace's directory (the trace_persist's; outlives the thread) */
    const char *data_dir; /* and the data directory */
    const trace_persist_io *io;
    /* The writer thread's own (cache_release()): the segment whose pages it releases (its first
     * seq) and the offset below which it started their writeback. */
    uint64_t cache_seg;
    uint64_t cache_wb;
} writer;

/* A cursor over a record body being decoded (ok: false once it ran past the end). */
typedef struct cursor {
    const unsigned char *p;
    const unsigned char *end;
    bool ok;
} cursor;

/* --- little-endian helpers ------------------------------------------------------------------- */

static inline void put32(unsigned char *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 4); /* one store: the loop was four, twice a record */
#else
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
#endif
}

static inline void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static inline void put16(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline uint32_t get16(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static inline uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline unsigned char *put_var(unsigned char *d, uint64_t v)
{
    while (v >= 0x80u) {
        *d++ = (unsigned char)(v | 0x80u);
        v >>= 7;
    }
    *d++ = (unsigned char)v;
    return d;
}

/* Signed difference cur - prev as a small unsigned number (zigzag: 0, -1, 1, -2 -> 0, 1, 2, 3). */
static inline uint64_t zigzag(uint64_t cur, uint64_t prev)
{
    uint64_t d = cur - prev;
    return (d << 1) ^ (0u - (d >> 63));
}

static inline uint64_t unzigzag(uint64_t prev, uint64_t z)
{
    return prev + ((z >> 1) ^ (0u - (z & 1u)));
}

/* --- trace_persist_seg.c: names, file I/O, the segment table --------------------------------- */

/* Drops the block's references and starts it anew. */
void persist_block_reset(block *b);
/* Drops the references of the cache of peer definitions (p->defs). */
void persist_defs_release(trace_persist *p);
/* "<first_seq as 20 digits>.<ext>" into out. */
void persist_seg_name(char *out, size_t n, uint64_t first_seq, const char *ext);
/* a/b, malloc'ed; NULL when out of memory. */
char *persist_path_join(const char *a, const char *b);
/* open(2) of dir/name; -1 with errno. */
int persist_open_in(const char *dir, const char *name, int flags);
/* fsync(2), or the test seam's hook (trace_persist_io). */
int persist_fsync(const trace_persist_io *io, int fd);
/* fsync(2) of a directory (its names); 0, or -1 with errno. */
int persist_sync_dir(const trace_persist_io *io, const char *dir);
int persist_unlink_in(const char *dir, const char *name);
/* Deletes a segment's two files (errors ignored). */
void persist_unlink_segment(const char *dir, uint64_t first_seq);
/* Writes all n bytes; false with errno on failure (a partial write included). */
bool persist_write_all(const trace_persist_io *io, int fd, const void *data, size_t n);
/* Reads n bytes at off of a file; false if fewer were available. */
bool persist_pread_all(int fd, void *dst, size_t n, uint64_t off);
/* Appends an index entry to s (false when out of memory). */
bool persist_idx_push(seg *s, uint64_t seq, uint64_t off);
/* Appends an empty segment starting at first_seq to p's table; NULL when out of memory. */
seg *persist_seg_push(trace_persist *p, uint64_t first_seq);

/* --- trace_persist_writer.c: the writer thread and the service thread's side of it ----------- */

writer *persist_writer_start(const char *dir, const char *data_dir, uint64_t backlog_max,
                             const trace_persist_io *io);
/* Runs every queued job, then ends the thread and frees w (NULL-safe). */
void persist_writer_stop(writer *w);
/* Waits until the data of every job submitted is handled; with all, every job finished. */
void persist_writer_drain(writer *w, bool all);
/* Bytes of the segment starting at seg_first kept in memory after a write error. */
uint64_t persist_writer_failed_bytes(writer *w, uint64_t seg_first);
/* Records the first I/O error (errno) on file of p's directory; WAMP_ECLOSED. */
wamp_err persist_fail_io(trace_persist *p, const char *what, const char *file);
/* True after an I/O error, the writer's included (its message becomes p->error). */
bool persist_failed(trace_persist *p);
/* Opens a new active segment starting at first_seq. */
wamp_err persist_open_segment(trace_persist *p, uint64_t first_seq);
/* Closes the active segment's files (and resets the block). */
void persist_close_active(trace_persist *p);
/* Deletes the oldest segments while the trace is too big (or, by_age, too old). */
void persist_apply_retention(trace_persist *p, uint64_t now_ts_ns, bool by_age);
/* Hands the buffered records to the writer. */
wamp_err persist_write_out(trace_persist *p);
/* The active segment is complete: the next one starts at next_seq. */
wamp_err persist_rotate(trace_persist *p, uint64_t next_seq, uint64_t now_ts_ns);
/* Makes the names made since the last time durable (all: every name of the directory). */
wamp_err persist_sync_names(trace_persist *p, bool all);
/* Queues an fsync of the active segment (and of the names made since the last one). */
wamp_err persist_sync_active(trace_persist *p, uint64_t now_pc_ns);

/* --- trace_persist_decode.c: record bodies --------------------------------------------------- */

/* A length word's body length and kind; false if no record can have it. */
bool persist_frame_len(uint32_t word, uint32_t *len, bool *compact);
/* One record at off of a segment file, whole and its CRC right (body malloc'ed or reused). */
bool persist_read_record_fd(int fd, uint64_t off, uint64_t file_size, unsigned char **body,
                            size_t *cap, uint32_t *body_len, bool *compact);
/* A repeat of the block's previous record (b->seq already advanced) into *r. */
bool persist_decode_repeat(cursor *c, block *b, bool with_peer, bool in_run, trace_record *r);
/* Whether a compact body is a run, and then its count (0 if malformed). */
bool persist_is_run(const unsigned char *body, uint32_t len, const block *b, uint32_t *count);

/* Whether a verified compact body is a pack (C_PACK; its records from body + 1 on). */
static inline bool persist_is_pack(const unsigned char *body)
{
    return body[0] == C_PACK;
}

/* The next record of a pack at c (its body in *sub, *len); false at the pack's end, with c->ok
 * false when what is left is not a record a pack may hold (a full record not opening a block). */
bool persist_pack_next(cursor *c, const unsigned char **sub, uint32_t *len);
/* One compact body (not a run) into *r, updating the block's tables. */
bool persist_decode_compact(const unsigned char *body, uint32_t len, block *b, trace_record *r);
/* One format 1 body into *r (prev: the record before, whose peer and URI it may share). */
bool persist_decode_record(const unsigned char *b, uint32_t len, trace_record *r,
                           const trace_record *prev);
/* Decodes a verified body completely and drops what it decoded (a reopen's check). */
bool persist_verify_body(const unsigned char *body, uint32_t len, bool compact, block *b,
                         uint64_t *seq, uint64_t *count, uint64_t *ts);

/* --- trace_persist_reload.c: a reopen -------------------------------------------------------- */

/* Loads and verifies every segment of p->dir (p allocated, dir and id set): the segment table,
 * the index in memory, the gaps (sorted), a damaged tail cut off and noted in why. WAMP_OK,
 * WAMP_ENOTFOUND (no such directory) or WAMP_ENOMEM. */
wamp_err persist_reload(trace_persist *p, char *why, size_t why_len);

#endif
