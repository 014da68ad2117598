/* trace_persist.h: the on-disk store of a persisted trace (trace option persist: true).
 *
 * Layout: <data_dir>/<persistent_id>/ holds
 *   - meta.json: the trace's id, options and status, written by the trace (trace.c) at start and
 *     at stop, replaced atomically (write to meta.json.tmp, fsync, rename, fsync of the
 *     directory). A meta.json that still says "running" after a restart means the router did
 *     not stop cleanly: "crash".
 *   - <first_seq>.seg: segment files (first_seq as 20 decimal digits), records appended in seq
 *     order. A new segment starts when the active one reaches segment_bytes (rotation).
 *   - <first_seq>.idx: the segment's sparse index: one 16-byte entry (seq, offset; little
 *     endian) for the segment's first record and then every TRACE_PERSIST_INDEX_EVERY records.
 *     Locating a seq is a binary search over the segments, then over the segment's index, then a
 *     scan of at most TRACE_PERSIST_INDEX_EVERY records: O(log n). A reopen rebuilds the index
 *     in memory from the records that verify; the file only suggests where to resynchronise.
 *   - end: END_ALLOC bytes allocated at creation (zeros), overwritten in place at stop
 *     (trace_persist_seal()): magic, next_seq, where the files end, CRC-32C. Zeros mean the trace
 *     never stopped (a crash).
 * Record framing (little endian): u32 body length, u32 CRC-32C of the body, body. The body holds
 * the record's fields, the peer (session id, realm, authid, authrole), the URI, the drop reason
 * and the message bytes as they were kept in memory. From format version 2 on, bodies are
 * compact (a flag in the length word): records are grouped in blocks that start at each index
 * entry, and within a block a peer, a URI, a correlation UUID and a message buffer are written
 * once and then referred to (an EVENT sent to ten subscribers is one buffer: its bytes are
 * written once), seq and times as differences; a record that repeats the previous one but for
 * its peer, the next subscriber's EVENT, is written as that peer alone (version 3), and the
 * repeats that follow each other share one frame (a run, version 4); a reader that seeks to an
 * index entry starts a block, so seeks stay O(log n). Records of version 1 are still read. The
 * format, by version, is described in PERSIST_FORMAT.md (this folder). CRC-32C (Castagnoli, the
 * polynomial of iSCSI / ext4 / SCTP) was chosen over zlib's CRC-32 for its better error detection
 * on short records, because a 256-entry table needs no dependency, and because x86-64 computes it
 * in hardware (SSE 4.2 crc32, used when the CPU has it).
 *
 * Writing: trace_persist_append() encodes the record into an in-memory buffer (no system call);
 * the buffer goes to the trace's writer thread when it holds TRACE_PERSIST_BUFFER_MAX bytes and
 * at each trace_persist_flush() (the trace's tick, every 100 ms). The writer thread computes the
 * CRCs, writes (write(2)), fsyncs following the configured policy, and closes rotated segments,
 * so the service thread never waits on the disk, except when write_backlog bytes are queued
 * (a disk slower than the traffic) and in a flush with sync (stop, shutdown). An I/O error (disk
 * full, file size limit, EIO...) is sticky: the segment is cut back to its last whole record,
 * nothing more is written, and every later call returns WAMP_ECLOSED (the service thread sees
 * the writer's error at its next call), with trace_persist_error() saying what happened.
 * Reading: trace_persist_read() first hands the buffered records to the writer and waits until
 * it has written them, then reads records back with pread(2), checking each CRC: a record is
 * returned only once it is in the files. After an I/O error the seqs from where the files end on
 * are the io_error gap and are never returned (before and after a restart alike).
 * Opening after a restart (trace_persist_open()): every record of every segment is read, its
 * CRC checked and decoded. Damage in the middle of a segment (a record that fails) is a gap
 * (TRACE_GAP_CORRUPT) up to the next record that verifies as a block start (an index entry, or
 * found by scanning); seqs between segments that no file holds are a gap (missing, or corrupt
 * after a damaged tail); seqs the end file says were given out past the files' end are a gap
 * (missing/corrupt, then io_error from where the files ended at stop). A torn or corrupt tail of
 * the last segment is cut off (ftruncate); without an end file that is the crash tail, not a
 * gap. So records (trace_persist_records()) always equals what trace_persist_read() returns.
 * Retention: whole segments (never the active one) are deleted, oldest first, while the trace's
 * files exceed max_bytes or while a segment's newest record is older than max_age.
 * The data directory itself is prepared and locked by trace_lock.h at start-up.
 * Ownership: a trace_persist owns its file descriptors, buffer, index, gaps and writer thread; the
 * trace owns it. Its functions are called from the service thread only (not thread-safe); the
 * writer thread is internal (trace_persist_writer.c says what it owns). */
#ifndef TRACE_PERSIST_H
#define TRACE_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "trace_record.h"
#include "wamp_err.h"

/* One index entry every this many records (and for each segment's first record). */
#define TRACE_PERSIST_INDEX_EVERY 256u
/* append() hands the buffer to the writer thread when it holds this many bytes. */
#define TRACE_PERSIST_BUFFER_MAX (256u * 1024u)
/* A trace's writer thread runs this much nicer than the router (at most 19): its CRCs and
 * writes fill the time the service thread leaves idle instead of preempting it when both share a
 * core (the writer catches up whenever the service thread waits for the network, and the
 * service thread waits for it past tracing.write_backlog). Measured: tests/bench/HISTORY.md. */
#define TRACE_PERSIST_WRITER_NICE 10
/* Longest persistent_id (a directory name). */
#define TRACE_PERSIST_ID_MAX 64

/* When written data is fsync'ed. Always also at stop, at rotation and after meta.json. */
typedef enum trace_fsync_mode {
    TRACE_FSYNC_INTERVAL = 0, /* at most every fsync_interval_ms (default policy) */
    TRACE_FSYNC_BATCH,        /* after every write of a batch */
    TRACE_FSYNC_NEVER         /* only at stop / rotation / meta.json */
} trace_fsync_mode;

/* Test-only seam (fault injection, tests/crash/): the write(2) and fsync(2) a persisted trace
 * uses for its segments, indexes, meta.json and end file, and the fsync of its directories.
 * They are called from the trace's writer thread and from the service thread, so ctx must be
 * safe to use from both (e.g. atomic counters). A hook fails like the system call: -1 with
 * errno set (a short write is allowed too). The router never sets it (NULL = the system calls). */
typedef struct trace_persist_io {
    ssize_t (*write)(void *ctx, int fd, const void *buf, size_t n);
    int (*fsync)(void *ctx, int fd);
    void *ctx;
} trace_persist_io;

/* Plain data (the hub keeps a copy; data_dir is copied there; io is borrowed and must outlive
 * every trace_persist made with it). */
typedef struct trace_persist_config {
    const char *data_dir;       /* NULL = TRACE_PERSIST_DATA_DIR_DEFAULT */
    uint64_t segment_bytes;     /* rotation size; 0 = TRACE_PERSIST_SEGMENT_DEFAULT */
    trace_fsync_mode fsync;     /* policy */
    uint32_t fsync_interval_ms; /* TRACE_FSYNC_INTERVAL; 0 = 1000 */
    uint64_t write_backlog;     /* bytes queued for the writer thread; 0 = the default */
    const trace_persist_io *io; /* NULL = write(2) and fsync(2) (see above) */
} trace_persist_config;

/* Seqs a persisted trace gave out but cannot return: a gap. Every seq from first_seq to
 * next_seq - 1 is either a record that get_trace_data returns or in exactly one gap.
 * reason is one of the TRACE_GAP_* strings (static). file/offset name where the damage was
 * found, for the log ("" and 0 when no file holds the seqs). */
typedef struct trace_gap {
    uint64_t from_seq; /* inclusive */
    uint64_t to_seq;   /* inclusive */
    const char *reason;
    char file[32]; /* "<first_seq>.seg" */
    uint64_t offset;
} trace_gap;

/* Records in a segment failed their check (length, CRC-32C, decoding, seq order) when the trace
 * was reopened: from the damaged record to the next one that verifies as a block start. */
#define TRACE_GAP_CORRUPT "corrupt"
/* No segment file holds these seqs any more (a segment deleted or truncated by someone else),
 * while records before and after them (or the end the trace recorded at stop) say they were
 * written. */
#define TRACE_GAP_MISSING "missing"
/* The trace gave these seqs out, but a write error (disk full, file size limit, EIO) kept them
 * out of the files: they were never returned, and the trace stopped with io_error. */
#define TRACE_GAP_IO_ERROR "io_error"

#define TRACE_PERSIST_DATA_DIR_DEFAULT "./wampscope-data"
#define TRACE_PERSIST_SEGMENT_DEFAULT  ((uint64_t)16 * 1024 * 1024)
#define TRACE_PERSIST_SEGMENT_MIN      ((uint64_t)4096)
#define TRACE_PERSIST_SEGMENT_MAX      ((uint64_t)1 << 32)
#define TRACE_PERSIST_BACKLOG_DEFAULT  ((uint64_t)64 * 1024 * 1024)
#define TRACE_PERSIST_BACKLOG_MIN      ((uint64_t)TRACE_PERSIST_BUFFER_MAX)
#define TRACE_PERSIST_BACKLOG_MAX      ((uint64_t)16 * 1024 * 1024 * 1024)

typedef struct trace_persist trace_persist;

/* CRC-32C (Castagnoli) of len bytes, continuing from crc (start with 0). */
uint32_t trace_crc32c(uint32_t crc, const void *data, size_t len);

/* Creates data_dir (if missing, with its parents, mode 0700) and a new directory in it named
 * after ts_ns (a persistent id unique in data_dir) holding the end file, with no segment yet;
 * records start at first_seq. *out owns it.
 * WAMP_EINVAL with why set ("persist: cannot create ...: <strerror>") when a directory cannot
 * be made; WAMP_ENOMEM. */
wamp_err trace_persist_create(const trace_persist_config *cfg, uint64_t ts_ns, uint64_t first_seq,
                              trace_persist **out, char *why, size_t why_len);

/* Opens the existing trace directory <data_dir>/<persistent_id> read-only for a reloaded
 * (stopped) trace: loads its segments and indexes, cuts torn tails (see above), and returns
 * its meta.json in *meta (new reference; NULL if missing or unreadable). WAMP_ENOTFOUND if the
 * directory cannot be read; WAMP_ENOMEM. why says what was wrong or what was cut. */
wamp_err trace_persist_open(const trace_persist_config *cfg, const char *persistent_id,
                            trace_persist **out, json_t **meta, char *why, size_t why_len);

/* Flushes (best effort), closes and frees (NULL-safe). The files stay. */
void trace_persist_free(trace_persist *p);
/* Deletes every file and the directory, then frees p (NULL-safe). false if something could
 * not be removed (p is freed anyway). */
bool trace_persist_remove(trace_persist *p);

/* The writer thread of a writable trace: how many times the service thread waited because
 * write_backlog bytes were queued, and the most bytes ever queued (0 and 0 without one). */
void trace_persist_writer_stats(const trace_persist *p, uint64_t *waits, uint64_t *peak);

/* The fsyncs of a writable trace (CLOCK_MONOTONIC around each fsync(2) of a segment, of its
 * index and of the trace's and the data directory, a directory's open(2) included; not those of
 * meta.json and the end file) and the records its writer thread wrote. The histogram's bounds are
 * trace_persist_sync_le_ns[0..TRACE_PERSIST_SYNC_BUCKETS); +Inf is count. */
#define TRACE_PERSIST_SYNC_BUCKETS 6
extern const uint64_t trace_persist_sync_le_ns[TRACE_PERSIST_SYNC_BUCKETS];

typedef struct trace_persist_sync_stats {
    uint64_t count;  /* fsyncs timed (failed ones included) */
    uint64_t sum_ns; /* their time */
    uint64_t max_ns; /* the longest */
    /* Cumulative: le[i] fsyncs took at most trace_persist_sync_le_ns[i]. */
    uint64_t le[TRACE_PERSIST_SYNC_BUCKETS];
    uint64_t records_written; /* records written to the files (write(2); the fsync policy
                               * decides about power loss) */
} trace_persist_sync_stats;

/* A copy of them (all 0 for a trace opened read-only). */
trace_persist_sync_stats trace_persist_get_sync_stats(const trace_persist *p);

/* Borrowed. */
const char *trace_persist_id(const trace_persist *p);
/* Message of the first I/O error ("write <file>: No space left on device"); NULL if none. */
const char *trace_persist_error(const trace_persist *p);

/* Encodes r (borrowed; r->seq must be the next seq) into the write buffer; writes the buffer
 * out when it is full and rotates the segment when the active one is full. WAMP_ECLOSED after
 * an I/O error (now or earlier; the record is not stored), WAMP_ENOMEM. */
wamp_err trace_persist_append(trace_persist *p, const trace_record *r);
/* The same for a record given by its parts. */
wamp_err trace_persist_append_rec(trace_persist *p, const trace_rec_view *r);
/* r once per peer of peers[0..n), with the seqs r->seq .. r->seq + n - 1: one message's
 * receivers, most of them a byte each in the block's run; with last, the last of them also
 * completes the action (TRACE_CORR_LAST added to r->flags). */
wamp_err trace_persist_append_run(trace_persist *p, const trace_rec_view *r,
                                  trace_peer *const *peers, size_t n, bool last);
/* Writes the buffer out; fsyncs if sync (or if the policy asks for it at now_pc_ns).
 * WAMP_ECLOSED after an I/O error. */
wamp_err trace_persist_flush(trace_persist *p, bool sync, uint64_t now_pc_ns);
/* Periodic work of a running trace: flush (with the fsync policy), then retention by age at
 * now_ts_ns. WAMP_ECLOSED after an I/O error. */
wamp_err trace_persist_tick(trace_persist *p, uint64_t now_pc_ns, uint64_t now_ts_ns);

/* Retention of this trace: max_bytes of files (0 = none), max_age_ns (0 = none). Applied at
 * rotation (bytes) and at each tick (age). */
void trace_persist_set_retention(trace_persist *p, uint64_t max_bytes, uint64_t max_age_ns);

/* Writes meta.json (atomically: tmp file, fsync, rename, then fsync of the trace's directory,
 * so that the new meta.json and every segment file's name survive a power loss). WAMP_ECLOSED on
 * I/O error (the error is sticky as for the segments). */
wamp_err trace_persist_write_meta(trace_persist *p, const json_t *meta);

/* The seqs first_seq .. next_seq - 1: each one a record held or in a gap (below). next_seq
 * counts every seq the trace gave out, those an I/O error kept off the disk included, and after
 * a reopen the end the trace recorded when it stopped (trace_persist_seal()). */
uint64_t trace_persist_first_seq(const trace_persist *p);
uint64_t trace_persist_next_seq(const trace_persist *p);
/* Records held: what trace_persist_read() returns over first_seq .. next_seq - 1 (next_seq -
 * first_seq minus the seqs in gaps). */
uint64_t trace_persist_records(const trace_persist *p);
/* The seqs below this are in the trace's files (handed to the kernel by write(2); the fsync
 * policy decides about power loss), or in gaps; the records at and after it are still in the
 * write buffer or queued for the writer thread. After an I/O error it stays where the files
 * end: the seqs from there on are the io_error gap. */
uint64_t trace_persist_durable_next(const trace_persist *p);
/* Gaps, oldest first (none overlaps another or a record): how many, and the i-th one. Gaps
 * before first_seq (of segments deleted by retention) are not reported. */
size_t trace_persist_gap_count(const trace_persist *p);
trace_gap trace_persist_gap(const trace_persist *p, size_t i);

/* Records how the trace ended (next_seq and where its files end) in its end file, in place
 * (the file was allocated when the trace was made, so this works on a full disk) and synced,
 * so that a reopen reports the seqs after the files' end as a gap (missing or io_error) instead
 * of taking the files' end for the trace's. Without it (kill -9), the records a crash kept from
 * the files are a crash tail: not a gap, next_seq is where the files end. Call after the last
 * append and the final flush. WAMP_ECLOSED if it could not be written (then
 * trace_persist_error() says why, unless an earlier error is there), WAMP_OK for a reopened
 * trace (nothing to do). */
wamp_err trace_persist_seal(trace_persist *p);
/* Bytes of records held (flushed or buffered). */
uint64_t trace_persist_bytes(const trace_persist *p);
/* Wall clock of the newest record held, 0 if none. */
uint64_t trace_persist_last_ts(const trace_persist *p);
/* Segments held. */
size_t trace_persist_segments(const trace_persist *p);

/* Reads the records with from_seq <= seq < to_seq (exclusive), oldest first, at most limit of
 * them, into out[0..] (caller's array of at least limit entries; each filled record owns its
 * references: release with trace_record_fini()). Records that are not held (deleted by
 * retention, in a gap) are skipped. Returns how many were filled. A writable trace first hands
 * its buffered records to the writer thread and waits until they are written, so a record is
 * never returned before it is in the files: a write that fails then turns them into the
 * io_error gap instead. */
size_t trace_persist_read(trace_persist *p, uint64_t from_seq, uint64_t to_seq, size_t limit,
                          trace_record *out);

/* Calls fn(persistent_id, ctx) for each directory in data_dir (the candidates for
 * trace_persist_open()); returns how many; 0 if data_dir does not exist. */
size_t trace_persist_list(const trace_persist_config *cfg,
                          void (*fn)(const char *persistent_id, void *ctx), void *ctx);

#endif /* TRACE_PERSIST_H */
