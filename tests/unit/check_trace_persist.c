/* check_trace_persist.c: persisted traces on disk: CRC-32C, segment write/read (flushed and
 * buffered), reload, torn tails cut, index seeks, rotation, retention by bytes and by age, I/O
 * errors, the page cache the writer leaves, and the trace / hub level (cache of newest records in
 * memory, older seqs from disk, restart as "shutdown" or "crash", delete removes the files). Each
 * test works in its own temporary directory. */
#define _DEFAULT_SOURCE /* mincore(2) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "tmp_dir.h"
#include "trace.h"
#include "trace_hub.h"
#include "trace_persist.h"
#include "trace_record.h"
#include "trace_render.h"
#include "trace_store.h"

#define PC0 ((uint64_t)5000000000u)
#define TS0 ((uint64_t)1700000000000000000u)
#define SEC ((uint64_t)1000000000u)

static char tmpdir[256];

static void make_tmp(void)
{
    tmp_dir_make(tmpdir, sizeof(tmpdir), "check_trace_persist");
}

static void cleanup_tmp(void)
{
    tmp_dir_remove(tmpdir);
}

static trace_persist_config config(uint64_t segment_bytes)
{
    static char data_dir[300];
    snprintf(data_dir, sizeof(data_dir), "%s/data", tmpdir);
    trace_persist_config c = {
            .data_dir = data_dir, .segment_bytes = segment_bytes, .fsync = TRACE_FSYNC_INTERVAL};
    return c;
}

/* A record like the capture path makes: peer, uri, correlation, wire bytes, maybe a drop. */
static trace_record make_rec(uint64_t seq, size_t wire_len)
{
    trace_record r;
    memset(&r, 0, sizeof(r));
    r.seq = seq;
    r.pc_ns = PC0 + seq * 1000;
    r.ts_ns = TS0 + seq * 1000;
    r.peer = trace_peer_new(1000 + seq % 3, "realm1", seq % 2 ? "alice" : NULL, "anonymous");
    r.uri = trace_str_new("com.example.topic");
    r.dir = seq % 2 ? TRACE_TX : TRACE_RX;
    r.msg_type = 16;
    r.wire_ser = WAMP_SER_JSON;
    r.flags = TRACE_CORR_HAS | (seq % 5 == 0 ? TRACE_CORR_ANCHOR : 0);
    for (int i = 0; i < TRACE_UUID_LEN; i++) {
        r.corr[i] = (uint8_t)(seq + (uint64_t)i);
    }
    r.ser_bytes[WAMP_SER_JSON] = (uint32_t)wire_len;
    r.dropped = seq % 7 == 3 ? "queue_full" : NULL;
    char text[64];
    snprintf(text, sizeof(text), "[16, %llu, {}, \"com.example.topic\"]", (unsigned long long)seq);
    r.wire = wamp_buf_new(wire_len + 64);
    size_t n = strlen(text);
    memcpy(wamp_buf_reserve(&r.wire, wire_len + n), text, n);
    memset(wamp_buf_data(r.wire) + n, ' ', wire_len);
    wamp_buf_commit(r.wire, wire_len + n);
    return r;
}

/* A new writable trace under cfg, its persistent id in id. */
static trace_persist *created(const trace_persist_config *cfg, char id[TRACE_PERSIST_ID_MAX])
{
    trace_persist *p = NULL;
    ck_assert_int_eq(trace_persist_create(cfg, TS0, 0, &p, NULL, 0), WAMP_OK);
    snprintf(id, TRACE_PERSIST_ID_MAX, "%s", trace_persist_id(p));
    return p;
}

/* p closed and opened again from its files (a restart), its meta dropped. */
static trace_persist *reopened(trace_persist *p, const trace_persist_config *cfg, const char *id)
{
    trace_persist_free(p);
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(cfg, id, &p, &m, NULL, 0), WAMP_OK);
    json_decref(m);
    return p;
}

static void append_n(trace_persist *p, uint64_t from, uint64_t n, size_t wire_len)
{
    for (uint64_t s = from; s < from + n; s++) {
        trace_record r = make_rec(s, wire_len);
        ck_assert_int_eq(trace_persist_append(p, &r), WAMP_OK);
        trace_record_fini(&r);
    }
}

static void assert_equal(const trace_record *got, const trace_record *want);

/* got is make_rec(seq, wire_len), field by field. */
static void assert_same(const trace_record *got, uint64_t seq, size_t wire_len)
{
    trace_record want = make_rec(seq, wire_len);
    assert_equal(got, &want);
    trace_record_fini(&want);
}

/* Reads [from, to) and checks it is exactly the seqs from..from+expect-1. */
static void read_check(trace_persist *p, uint64_t from, uint64_t to, size_t limit,
                       uint64_t expect_first, size_t expect_n, size_t wire_len)
{
    trace_record *out = calloc(limit ? limit : 1, sizeof(*out));
    size_t n = trace_persist_read(p, from, to, limit, out);
    ck_assert_uint_eq(n, expect_n);
    for (size_t i = 0; i < n; i++) {
        assert_same(&out[i], expect_first + i, wire_len);
        trace_record_fini(&out[i]);
    }
    free(out);
}

static size_t count_files(const char *dir, const char *ext)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d) {
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name), k = strlen(ext);
        if (l > k && strcmp(e->d_name + l - k, ext) == 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

static void persist_dir_of(const trace_persist *p, char *out, size_t n)
{
    snprintf(out, n, "%s/data/%s", tmpdir, trace_persist_id(p));
}

START_TEST(test_crc32c)
{
    /* The check value of CRC-32C (RFC 3720 B.4 and every CRC catalogue). */
    ck_assert_uint_eq(trace_crc32c(0, "123456789", 9), 0xe3069283u);
    ck_assert_uint_eq(trace_crc32c(0, "", 0), 0);
    /* 32 bytes of zeros: RFC 3720 B.4 */
    unsigned char z[32] = {0};
    ck_assert_uint_eq(trace_crc32c(0, z, sizeof(z)), 0x8a9136aau);
    /* Incremental = one shot. */
    uint32_t c = trace_crc32c(0, "12345", 5);
    ck_assert_uint_eq(trace_crc32c(c, "6789", 4), 0xe3069283u);
    /* Against a bit-by-bit reference, at every length and alignment up to 1100 bytes (the
     * hardware paths take 8 bytes at a time, then 4, 2 and 1, in one chain or in three lanes of 32
     * or 64 bytes joined by carry-less multiplies; the table path one byte). */
    unsigned char buf[1108];
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (unsigned char)(i * 131u + 7u + (i >> 8));
    }
    for (size_t off = 0; off < 8; off++) {
        uint32_t ref = 0xffffffffu; /* the reference register over buf[off .. off + len) */
        for (size_t len = 0; len <= 1100; len++) {
            uint32_t crc = trace_crc32c(0, buf + off, len);
            ck_assert_uint_eq(crc, ~ref);
            /* Incremental across the lanes: any cut gives the same CRC. */
            size_t cut = len * off / 8;
            ck_assert_uint_eq(
                    trace_crc32c(trace_crc32c(0, buf + off, cut), buf + off + cut, len - cut), crc);
            ref ^= buf[off + len];
            for (int k = 0; k < 8; k++) {
                ref = (ref >> 1) ^ (0x82f63b78u & (0u - (ref & 1u)));
            }
        }
    }
}

END_TEST

START_TEST(test_write_read_flushed_and_buffered)
{
    trace_persist_config cfg = config(0);
    trace_persist *p = NULL;
    char why[256] = "";
    ck_assert_int_eq(trace_persist_create(&cfg, TS0, 0, &p, why, sizeof(why)), WAMP_OK);
    ck_assert_uint_eq(trace_persist_next_seq(p), 0);
    read_check(p, 0, UINT64_MAX, 10, 0, 0, 0);
    append_n(p, 0, 100, 20);
    /* Buffered only: readable from memory, nothing in the file yet. */
    read_check(p, 0, UINT64_MAX, 1000, 0, 100, 20);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    append_n(p, 100, 50, 20);
    /* Flushed + buffered in one read, ranges and limits. */
    read_check(p, 0, UINT64_MAX, 1000, 0, 150, 20);
    read_check(p, 95, 105, 1000, 95, 10, 20);
    read_check(p, 120, UINT64_MAX, 5, 120, 5, 20);
    read_check(p, 150, UINT64_MAX, 5, 0, 0, 20);
    ck_assert_uint_eq(trace_persist_first_seq(p), 0);
    ck_assert_uint_eq(trace_persist_next_seq(p), 150);
    ck_assert_uint_eq(trace_persist_last_ts(p), TS0 + 149 * 1000);
    ck_assert_ptr_null(trace_persist_error(p));
    trace_persist_free(p);
}

END_TEST

START_TEST(test_reload_after_clean_close)
{
    trace_persist_config cfg = config(0);
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    append_n(p, 0, 300, 40);
    json_t *meta = json_pack("{s:s}", "id", "t1");
    ck_assert_int_eq(trace_persist_write_meta(p, meta), WAMP_OK);
    json_decref(meta);
    uint64_t bytes = trace_persist_bytes(p);
    trace_persist_free(p); /* flushes */

    json_t *m = NULL;
    char note[256] = "";
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, note, sizeof(note)), WAMP_OK);
    ck_assert_str_eq(note, "");
    ck_assert_str_eq(json_string_value(json_object_get(m, "id")), "t1");
    json_decref(m);
    ck_assert_uint_eq(trace_persist_first_seq(p), 0);
    ck_assert_uint_eq(trace_persist_next_seq(p), 300);
    ck_assert_uint_eq(trace_persist_bytes(p), bytes);
    ck_assert_uint_eq(trace_persist_last_ts(p), TS0 + 299 * 1000);
    read_check(p, 0, UINT64_MAX, 1000, 0, 300, 40);
    /* Reopened traces are read-only. */
    trace_record r = make_rec(300, 1);
    ck_assert_int_eq(trace_persist_append(p, &r), WAMP_ECLOSED);
    trace_record_fini(&r);
    trace_persist_free(p);
    /* Unknown or unsafe ids. */
    ck_assert_int_eq(trace_persist_open(&cfg, "nope", &p, &m, NULL, 0), WAMP_ENOTFOUND);
    ck_assert_int_eq(trace_persist_open(&cfg, "../data", &p, &m, NULL, 0), WAMP_ENOTFOUND);
}

END_TEST

static void seg_path(const trace_persist *p, uint64_t first_seq, char *out, size_t n)
{
    char dir[512];
    persist_dir_of(p, dir, sizeof(dir));
    snprintf(out, n, "%s/%020llu.seg", dir, (unsigned long long)first_seq);
}

static off_t file_size(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_size;
}

/* A trace of make_rec() records 0..n-1 written, synced and closed: its id, and the path of its
 * (first) segment. */
static void written_trace(const trace_persist_config *cfg, uint64_t n, size_t wire_len,
                          char id[TRACE_PERSIST_ID_MAX], char *seg, size_t seg_len)
{
    trace_persist *p = NULL;
    ck_assert_int_eq(trace_persist_create(cfg, TS0, 0, &p, NULL, 0), WAMP_OK);
    snprintf(id, TRACE_PERSIST_ID_MAX, "%s", trace_persist_id(p));
    seg_path(p, 0, seg, seg_len);
    append_n(p, 0, n, wire_len);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    trace_persist_free(p);
}

/* Message bytes too long for a pack (PACK_REC_MAX, 1024): every record a frame of its own. */
#define ALONE_WIRE 1100

START_TEST(test_torn_tail_cut)
{
    trace_persist_config cfg = config(0);
    trace_persist *p = NULL;
    char id[TRACE_PERSIST_ID_MAX], seg[600];
    written_trace(&cfg, 200, ALONE_WIRE, id, seg, sizeof(seg));
    off_t whole = file_size(seg);

    /* 1. Truncated in the middle of the last record (a write cut by kill -9 / power loss).
     * Every record is a frame of its own (ALONE_WIRE); a torn pack: test_torn_pack_cut. */
    ck_assert_int_eq(truncate(seg, whole - 7), 0);
    json_t *m = NULL;
    char note[256] = "";
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, note, sizeof(note)), WAMP_OK);
    ck_assert_msg(strstr(note, "cut") != NULL, "note: %s", note);
    ck_assert_uint_eq(trace_persist_next_seq(p), 199);
    read_check(p, 0, UINT64_MAX, 1000, 0, 199, ALONE_WIRE);
    trace_persist_free(p);
    off_t cut = file_size(seg);
    ck_assert_int_lt(cut, whole - 7); /* the torn record is gone from the file */

    /* 2. Garbage appended after the last whole record. */
    int fd = open(seg, O_WRONLY | O_APPEND);
    ck_assert_int_ge(fd, 0);
    const char junk[] = "\x20\x00\x00\x00garbage garbage garbage garbage!!";
    ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
    close(fd);
    note[0] = '\0';
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, note, sizeof(note)), WAMP_OK);
    ck_assert_msg(strstr(note, "cut") != NULL, "note: %s", note);
    read_check(p, 0, UINT64_MAX, 1000, 0, 199, ALONE_WIRE);
    trace_persist_free(p);
    ck_assert_int_eq(file_size(seg), cut);

    /* 3. A flipped byte inside the last record: its CRC no longer matches. */
    fd = open(seg, O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "X", 1, cut - 3), 1);
    close(fd);
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    ck_assert_uint_eq(trace_persist_next_seq(p), 198);
    read_check(p, 0, UINT64_MAX, 1000, 0, 198, ALONE_WIRE);
    trace_persist_free(p);
}

END_TEST

START_TEST(test_index_seek_and_rotation)
{
    trace_persist_config cfg = config(8192);
    trace_persist *p = NULL;
    ck_assert_int_eq(trace_persist_create(&cfg, TS0, 0, &p, NULL, 0), WAMP_OK);
    char id[TRACE_PERSIST_ID_MAX], dir[512];
    snprintf(id, sizeof(id), "%s", trace_persist_id(p));
    persist_dir_of(p, dir, sizeof(dir));
    for (uint64_t s = 0; s < 5000; s += 500) {
        append_n(p, s, 500, 10);
        ck_assert_int_eq(trace_persist_flush(p, false, PC0), WAMP_OK);
    }
    size_t segs = trace_persist_segments(p);
    ck_assert_uint_gt(segs, 50); /* ~130 bytes a record, 8 KiB segments */
    ck_assert_uint_eq(count_files(dir, ".seg"), segs);
    ck_assert_uint_eq(count_files(dir, ".idx"), segs);
    /* Any seq, at segment edges and inside, with small pages crossing segments. */
    uint64_t probes[] = {0, 1, 63, 64, 65, 127, 128, 1000, 2047, 2500, 4936, 4999};
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        uint64_t s = probes[i];
        size_t n = 5000 - s < 100 ? (size_t)(5000 - s) : 100;
        read_check(p, s, UINT64_MAX, 100, s, n, 10);
    }
    read_check(p, 10, 20, 100, 10, 10, 10);
    trace_persist_free(p);
    /* Reopened: same answers (indexes loaded from the .idx files). */
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    ck_assert_uint_eq(trace_persist_segments(p), segs);
    ck_assert_uint_eq(trace_persist_next_seq(p), 5000);
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        uint64_t s = probes[i];
        size_t n = 5000 - s < 100 ? (size_t)(5000 - s) : 100;
        read_check(p, s, UINT64_MAX, 100, s, n, 10);
    }
    trace_persist_free(p);
    /* A damaged index is not trusted blindly: records are still found (by scanning) and
     * nothing valid is cut. */
    char idx[600];
    snprintf(idx, sizeof(idx), "%s/%020llu.idx", dir, 0ull);
    int fd = open(idx, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    unsigned char bogus[32] = {0};
    bogus[16] = 64; /* seq 64 ... */
    bogus[24] = 5;  /* ... at offset 5: not a record boundary */
    ck_assert_int_eq(write(fd, bogus, sizeof(bogus)), 32);
    close(fd);
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    ck_assert_uint_eq(trace_persist_next_seq(p), 5000);
    read_check(p, 0, UINT64_MAX, 100, 0, 100, 10);
    trace_persist_free(p);
}

END_TEST

START_TEST(test_retention_by_bytes)
{
    trace_persist_config cfg = config(4096);
    trace_persist *p = NULL;
    ck_assert_int_eq(trace_persist_create(&cfg, TS0, 0, &p, NULL, 0), WAMP_OK);
    char dir[512];
    persist_dir_of(p, dir, sizeof(dir));
    trace_persist_set_retention(p, 16384, 0);
    append_n(p, 0, 2000, 10);
    /* sync: the writer thread deletes the files, in order after the writes before. */
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    /* Whole segments go, oldest first: at most max_bytes plus the active segment. */
    ck_assert_uint_le(trace_persist_bytes(p), 16384 + 4096 + 200);
    ck_assert_uint_gt(trace_persist_first_seq(p), 1500);
    ck_assert_uint_eq(trace_persist_next_seq(p), 2000);
    ck_assert_uint_eq(count_files(dir, ".seg"), trace_persist_segments(p));
    uint64_t first = trace_persist_first_seq(p);
    /* A read from 0 starts at the oldest record held. */
    read_check(p, 0, UINT64_MAX, 10, first, 10, 10);
    trace_persist_free(p);
}

END_TEST

START_TEST(test_retention_by_age)
{
    trace_persist_config cfg = config(4096);
    trace_persist *p = NULL;
    ck_assert_int_eq(trace_persist_create(&cfg, TS0, 0, &p, NULL, 0), WAMP_OK);
    trace_persist_set_retention(p, 0, 60 * SEC);
    append_n(p, 0, 500, 10); /* ts TS0 .. TS0 + 0.5 ms */
    size_t segs = trace_persist_segments(p);
    ck_assert_uint_gt(segs, 3);
    /* Not old yet: nothing goes. */
    ck_assert_int_eq(trace_persist_tick(p, PC0, TS0 + 30 * SEC), WAMP_OK);
    ck_assert_uint_eq(trace_persist_segments(p), segs);
    ck_assert_uint_eq(trace_persist_first_seq(p), 0);
    /* Two minutes later: every segment but the active one is older than 60 s. */
    ck_assert_int_eq(trace_persist_tick(p, PC0, TS0 + 120 * SEC), WAMP_OK);
    ck_assert_uint_eq(trace_persist_segments(p), 1);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    char dir[512];
    persist_dir_of(p, dir, sizeof(dir));
    ck_assert_uint_eq(count_files(dir, ".seg"), 1);
    ck_assert_uint_eq(count_files(dir, ".idx"), 1);
    ck_assert_uint_gt(trace_persist_first_seq(p), 400);
    ck_assert_uint_eq(trace_persist_next_seq(p), 500);
    trace_persist_free(p);
}

END_TEST

START_TEST(test_io_error_directory_gone)
{
    trace_persist_config cfg = config(4096);
    trace_persist *p = NULL;
    ck_assert_int_eq(trace_persist_create(&cfg, TS0, 0, &p, NULL, 0), WAMP_OK);
    char dir[512];
    persist_dir_of(p, dir, sizeof(dir));
    append_n(p, 0, 10, 10);
    ck_assert_int_eq(trace_persist_flush(p, false, PC0), WAMP_OK);
    /* The directory disappears: the next segment cannot be created. */
    tmp_dir_remove(dir);
    int rc = WAMP_OK;
    for (uint64_t s = 10; s < 1000 && rc == WAMP_OK; s++) {
        trace_record r = make_rec(s, 10);
        rc = trace_persist_append(p, &r);
        trace_record_fini(&r);
    }
    ck_assert_int_eq(rc, WAMP_ECLOSED);
    ck_assert_ptr_nonnull(trace_persist_error(p));
    ck_assert_msg(strstr(trace_persist_error(p), "No such file") != NULL, "%s",
                  trace_persist_error(p));
    /* Sticky. */
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_ECLOSED);
    trace_persist_free(p);
    /* A data directory that cannot be made refuses the start. */
    trace_persist_config bad = {.data_dir = "/proc/self/nope"};
    char why[256] = "";
    ck_assert_int_eq(trace_persist_create(&bad, TS0, 0, &p, why, sizeof(why)), WAMP_EINVAL);
    ck_assert_msg(strncmp(why, "persist: cannot create", 22) == 0, "%s", why);
}

END_TEST

START_TEST(test_io_error_file_size_limit)
{
    /* A file-size limit stands in for a full disk: write(2) fails with EFBIG (SIGXFSZ is
     * ignored, as the router does), the segment is cut back to its last whole record, and what
     * was written stays readable after a reopen. */
    trace_persist_config cfg = config(1 << 20);
    trace_persist *p = NULL;
    ck_assert_int_eq(trace_persist_create(&cfg, TS0, 0, &p, NULL, 0), WAMP_OK);
    char id[TRACE_PERSIST_ID_MAX], seg[600];
    snprintf(id, sizeof(id), "%s", trace_persist_id(p));
    seg_path(p, 0, seg, sizeof(seg));
    append_n(p, 0, 100, 100);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    off_t good = file_size(seg);
    struct rlimit old, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = (rlim_t)good + 1000;
    /* No check while the limit holds: a check's message goes to a file of Check's, which may
     * be past the limit (the records compress well, so good is small). */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    wamp_err append_err = WAMP_OK;
    for (uint64_t s = 100; s < 200; s++) {
        trace_record r = make_rec(s, 100);
        wamp_err e = trace_persist_append(p, &r);
        append_err = append_err == WAMP_OK ? e : append_err;
        trace_record_fini(&r);
    }
    /* sync: waits for the writer thread, while the limit holds. */
    wamp_err err = trace_persist_flush(p, true, PC0);
    int restored = setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    ck_assert_int_eq(restored, 0);
    ck_assert_int_eq(append_err, WAMP_OK);
    ck_assert_int_eq(err, WAMP_ECLOSED);
    ck_assert_msg(strstr(trace_persist_error(p), "too large") != NULL, "%s",
                  trace_persist_error(p));
    ck_assert_int_eq(file_size(seg), good);
    trace_record r = make_rec(200, 1);
    ck_assert_int_eq(trace_persist_append(p, &r), WAMP_ECLOSED);
    trace_record_fini(&r);
    /* Issue 23, 2: what the writer could not write is never returned (it was, from memory,
     * and a restart then lost it silently): the seqs given out from the files' end on are the
     * io_error gap, the refused append's seq included, before and after a reopen. */
    ck_assert_uint_eq(trace_persist_next_seq(p), 201);
    ck_assert_uint_eq(trace_persist_durable_next(p), 100);
    ck_assert_uint_eq(trace_persist_records(p), 100);
    read_check(p, 0, UINT64_MAX, 1000, 0, 100, 100);
    read_check(p, 150, UINT64_MAX, 1000, 0, 0, 100);
    ck_assert_uint_eq(trace_persist_gap_count(p), 1);
    trace_gap g = trace_persist_gap(p, 0);
    ck_assert_uint_eq(g.from_seq, 100);
    ck_assert_uint_eq(g.to_seq, 200);
    ck_assert_str_eq(g.reason, TRACE_GAP_IO_ERROR);
    ck_assert_int_eq(trace_persist_seal(p), WAMP_OK);
    trace_persist_free(p);
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    ck_assert_uint_eq(trace_persist_next_seq(p), 201);
    ck_assert_uint_eq(trace_persist_records(p), 100);
    read_check(p, 0, UINT64_MAX, 1000, 0, 100, 100);
    ck_assert_uint_eq(trace_persist_gap_count(p), 1);
    g = trace_persist_gap(p, 0);
    ck_assert_uint_eq(g.from_seq, 100);
    ck_assert_uint_eq(g.to_seq, 200);
    ck_assert_str_eq(g.reason, TRACE_GAP_IO_ERROR);
    trace_persist_free(p);
}

END_TEST

/* The nice value of the thread tid of this process (/proc/self/task/<tid>/stat, field 19), or
 * INT_MIN if it cannot be read. */
static int thread_nice(const char *tid)
{
    char path[300], line[1024];
    snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f) {
        return INT_MIN;
    }
    size_t n = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[n] = '\0';
    /* After the command's closing parenthesis: field 3 (state) on; nice is field 19. */
    char *p = strrchr(line, ')');
    int field = 2;
    for (; p && *p && field < 19; p++) {
        field += *p == ' ';
    }
    return p && field == 19 ? atoi(p) : INT_MIN;
}

/* How many threads of this process have the nice value want. */
static int threads_with_nice(int want)
{
    DIR *d = opendir("/proc/self/task");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] != '.' && thread_nice(e->d_name) == want) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* A writable trace's writer thread runs TRACE_PERSIST_WRITER_NICE nicer than the process (the
 * service thread keeps its own), and stops with the trace. */
START_TEST(test_writer_thread_is_nicer)
{
    int base = getpriority(PRIO_PROCESS, 0); /* this thread's (Linux: per thread) */
    int want = base + TRACE_PERSIST_WRITER_NICE < 19 ? base + TRACE_PERSIST_WRITER_NICE : 19;
    ck_assert_int_ne(want, base);
    int before = threads_with_nice(want);
    trace_persist_config cfg = config(0);
    trace_persist *p = NULL;
    ck_assert_int_eq(trace_persist_create(&cfg, TS0, 0, &p, NULL, 0), WAMP_OK);
    append_n(p, 0, 10, 20);
    /* The thread sets its own nice value as it starts: a flush with sync waits for it. */
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    ck_assert_int_eq(threads_with_nice(want), before + 1);
    ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), base); /* this thread's is unchanged */
    trace_persist_free(p);
    ck_assert_int_eq(threads_with_nice(want), before);
}

END_TEST

START_TEST(test_writer_backlog_bounded)
{
    /* The writer thread's queue holds at most write_backlog bytes (plus the job being handed
     * over): 24 MiB appended without a flush, with the smallest backlog, 256 KiB. The service
     * thread waits rather than queue more; nothing is lost, and every record reads back (the
     * CRCs were computed by the writer). */
    trace_persist_config cfg = config(4 << 20);
    cfg.write_backlog = TRACE_PERSIST_BACKLOG_MIN;
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    const uint64_t n = 6000;
    const size_t wire = 4000;
    append_n(p, 0, n, wire);
    uint64_t waits = 0, peak = 0;
    trace_persist_writer_stats(p, &waits, &peak);
    ck_assert_uint_gt(peak, 0);
    ck_assert_uint_le(peak, TRACE_PERSIST_BACKLOG_MIN + TRACE_PERSIST_BUFFER_MAX + wire + 256);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    ck_assert_uint_eq(trace_persist_next_seq(p), n);
    read_check(p, 0, UINT64_MAX, 100, 0, 100, wire);
    read_check(p, n - 50, UINT64_MAX, 100, n - 50, 50, wire);
    p = reopened(p, &cfg, id);
    ck_assert_uint_eq(trace_persist_next_seq(p), n);
    read_check(p, 2990, UINT64_MAX, 20, 2990, 20, wire);
    uint64_t w2 = 1, p2 = 1;
    trace_persist_writer_stats(p, &w2, &p2); /* opened read-only: no writer */
    ck_assert_uint_eq(w2, 0);
    ck_assert_uint_eq(p2, 0);
    trace_persist_free(p);
}

END_TEST

/* An fsync that takes at least 2 ms (a slow disk), counted. */
static atomic_uint slow_fsyncs;

static int slow_fsync(void *ctx, int fd)
{
    (void)ctx;
    atomic_fetch_add(&slow_fsyncs, 1);
    struct timespec ts = {0, 2000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    return fsync(fd);
}

/* The histogram's invariants: cumulative, at most count, max and sum consistent. */
static void check_sync_stats(const trace_persist_sync_stats *s)
{
    for (size_t i = 1; i < TRACE_PERSIST_SYNC_BUCKETS; i++) {
        ck_assert_uint_le(s->le[i - 1], s->le[i]);
        ck_assert_uint_lt(trace_persist_sync_le_ns[i - 1], trace_persist_sync_le_ns[i]);
    }
    ck_assert_uint_le(s->le[TRACE_PERSIST_SYNC_BUCKETS - 1], s->count);
    ck_assert_uint_le(s->max_ns, s->sum_ns);
    ck_assert_uint_le(s->sum_ns, s->count * s->max_ns);
}

START_TEST(test_fsync_latency_and_records_written)
{
    /* With the policy "batch" every flush fsyncs the segment and its index (and the new names'
     * directories); each of them is timed, with a disk whose fsync takes 2 ms or more. */
    static const trace_persist_io io = {.fsync = slow_fsync};
    trace_persist_config cfg = config(0);
    cfg.fsync = TRACE_FSYNC_BATCH;
    cfg.io = &io;
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    trace_persist_sync_stats s = trace_persist_get_sync_stats(p);
    ck_assert_uint_eq(s.count, 0);
    ck_assert_uint_eq(s.records_written, 0);
    atomic_store(&slow_fsyncs, 0); /* the end file's, at creation, is not timed */

    append_n(p, 0, 100, 20);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    s = trace_persist_get_sync_stats(p);
    check_sync_stats(&s);
    /* Segment, index, the trace's directory (a new segment) and the data directory (a new
     * trace): every fsync the hook saw, timed. */
    ck_assert_uint_eq(s.count, atomic_load(&slow_fsyncs));
    ck_assert_uint_ge(s.count, 4);
    ck_assert_uint_ge(s.sum_ns, s.count * 2000000u);
    ck_assert_uint_ge(s.max_ns, 2000000u);
    ck_assert_uint_eq(s.le[0], 0); /* none within 1 ms */
    ck_assert_uint_eq(s.records_written, 100);

    /* A second batch: both grow; the reads see only what was written. */
    append_n(p, 100, 50, 20);
    ck_assert_int_eq(trace_persist_flush(p, false, PC0 + SEC), WAMP_OK);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0 + SEC), WAMP_OK);
    trace_persist_sync_stats s2 = trace_persist_get_sync_stats(p);
    check_sync_stats(&s2);
    ck_assert_uint_eq(s2.count, atomic_load(&slow_fsyncs));
    ck_assert_uint_ge(s2.count, s.count + 2);
    ck_assert_uint_gt(s2.sum_ns, s.sum_ns);
    ck_assert_uint_eq(s2.records_written, 150);
    ck_assert_uint_eq(s2.records_written, trace_persist_durable_next(p));
    trace_persist_free(p);

    /* Opened read-only: no writer, nothing counted. */
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    json_decref(m);
    s = trace_persist_get_sync_stats(p);
    ck_assert_uint_eq(s.count, 0);
    ck_assert_uint_eq(s.records_written, 0);
    trace_persist_free(p);
}

END_TEST

/* --- trace and hub level ---------------------------------------------------------------------- */

static trace_hub *hub_new(uint64_t segment_bytes)
{
    trace_hub *h = trace_hub_new(8, "mgmt");
    ck_assert_ptr_nonnull(h);
    trace_persist_config cfg = config(segment_bytes);
    ck_assert_int_eq(trace_hub_set_persist(h, &cfg), WAMP_OK);
    return h;
}

static trace *start_persisted(trace_hub *h, const char *id, const char *opts)
{
    json_t *o = json_loads(opts, 0, NULL);
    ck_assert_ptr_nonnull(o);
    trace *t = NULL;
    char why[256] = "";
    wamp_err err = trace_hub_start(h, id, o, PC0, TS0, &t, why, sizeof(why));
    ck_assert_msg(err == WAMP_OK, "start: %s", why);
    json_decref(o);
    return t;
}

/* Marks n times, with the meta {"i": first}, {"i": first + 1}, ... */
static void mark_n(trace *t, uint64_t first, uint64_t n)
{
    for (uint64_t i = first; i < first + n; i++) {
        uint64_t seq;
        json_t *meta = json_pack("{s:I}", "i", (json_int_t)i);
        ck_assert_int_eq(trace_mark(t, "m", meta, PC0 + i, TS0 + i, &seq), WAMP_OK);
        json_decref(meta);
    }
}

/* Checks that get_trace_data pages over [first, n) give every seq once, in order, with the
 * marker meta {"i": seq}. */
static void check_pages(const trace *t, uint64_t first, uint64_t n, size_t page)
{
    uint64_t expect = first;
    while (expect < n) {
        json_t *recs = trace_render_records(t, expect, TRACE_SEQ_NONE, page);
        ck_assert_ptr_nonnull(recs);
        size_t k = json_array_size(recs);
        ck_assert_uint_gt(k, 0);
        for (size_t i = 0; i < k; i++) {
            json_t *r = json_array_get(recs, i);
            ck_assert_int_eq(json_integer_value(json_object_get(r, "seq")), (json_int_t)expect);
            ck_assert_str_eq(json_string_value(json_object_get(r, "msg_type")), "Marker");
            ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "msg"), "i")),
                             (json_int_t)expect);
            expect++;
        }
        json_decref(recs);
    }
    ck_assert_uint_eq(expect, n);
    json_t *none = trace_render_records(t, n, TRACE_SEQ_NONE, page);
    ck_assert_uint_eq(json_array_size(none), 0);
    json_decref(none);
}

START_TEST(test_trace_records_in_files_only)
{
    trace_hub *h = hub_new(16384);
    trace *t = start_persisted(h, "p1", "{\"persist\": true, \"limit\": 50}");
    ck_assert_ptr_nonnull(trace_get_persist(t));
    mark_n(t, 0, 1000);
    /* A persisted trace keeps nothing in memory (limit does not apply to it); the metadata
     * counts what is readable from its files, buffered or written. */
    ck_assert_uint_eq(trace_store_records(trace_get_store(t)), 0);
    ck_assert_uint_eq(trace_store_dropped(trace_get_store(t)), 0);
    ck_assert_uint_eq(trace_first_seq(t), 0);
    ck_assert_uint_eq(trace_next_seq(t), 1000);
    ck_assert_uint_eq(trace_records(t), 1000);
    ck_assert_uint_eq(trace_dropped(t), 0);
    json_t *md = trace_render_meta(t, "n", "w", PC0);
    ck_assert_str_eq(json_string_value(json_object_get(md, "persistent_id")),
                     trace_persist_id(trace_get_persist(t)));
    ck_assert(json_is_true(json_object_get(json_object_get(md, "options"), "persist")));
    json_decref(md);
    /* Pages read the buffered records, then (after the tick's flush) the written ones, and
     * across the boundary between written and buffered ones. */
    check_pages(t, 0, 1000, 77);
    trace_hub_tick(h, PC0 + SEC, TS0 + SEC, NULL, NULL);
    check_pages(t, 0, 1000, 1000);
    mark_n(t, 1000, 100);
    check_pages(t, 940, 1100, 7);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_restart_shutdown_and_crash)
{
    trace_hub *h = hub_new(8192);
    trace *a = start_persisted(h, "clean", "{\"persist\": true, \"limit\": 10}");
    trace *b = start_persisted(h, "crashed", "{\"persist\": true, \"limit\": 10}");
    trace *c = start_persisted(h, "mem", "{\"limit\": 10}"); /* not persisted */
    ck_assert_ptr_null(trace_get_persist(c));
    mark_n(a, 0, 300);
    mark_n(b, 0, 200);
    mark_n(c, 0, 5);
    trace_hub_tick(h, PC0 + SEC, TS0 + SEC, NULL, NULL); /* b's records reach the files */
    ck_assert(trace_stop(a, TRACE_STOP_SHUTDOWN, PC0 + 2 * SEC, TS0 + 2 * SEC));
    /* b is never stopped: as after kill -9, its meta.json still says running. The hub is
     * freed without a shutdown (trace_free flushes, but does not mark it stopped). */
    trace_hub_free(h);

    h = hub_new(8192);
    ck_assert_uint_eq(trace_hub_load(h), 2);
    ck_assert_uint_eq(trace_hub_count(h), 2);
    trace *ra = trace_hub_find(h, "clean");
    trace *rb = trace_hub_find(h, "crashed");
    ck_assert_ptr_nonnull(ra);
    ck_assert_ptr_nonnull(rb);
    ck_assert_ptr_null(trace_hub_find(h, "mem"));
    ck_assert(!trace_is_running(ra));
    ck_assert_int_eq(trace_get_stop_reason(ra), TRACE_STOP_SHUTDOWN);
    ck_assert_int_eq(trace_get_stop_reason(rb), TRACE_STOP_CRASH);
    ck_assert_uint_eq(trace_started_ns(ra), TS0);
    ck_assert_uint_eq(trace_ended_ns(ra), TS0 + 2 * SEC);
    ck_assert_uint_eq(trace_runtime_ns(ra, 0), 2 * SEC);
    ck_assert_uint_eq(trace_ended_ns(rb), TS0 + 199); /* the newest record's time */
    ck_assert_uint_eq(trace_next_seq(ra), 300);
    ck_assert_uint_eq(trace_records(ra), 300);
    ck_assert_uint_eq(trace_next_seq(rb), 200);
    ck_assert_uint_eq(trace_get_options(ra)->limit, 10);
    json_t *md = trace_render_meta(rb, "n", "w", 0);
    ck_assert_str_eq(json_string_value(json_object_get(md, "stop_reason")), "crash");
    ck_assert_str_eq(json_string_value(json_object_get(md, "status")), "stopped");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(md, "options"), "limit")),
                     10);
    json_decref(md);
    check_pages(ra, 0, 300, 64);
    check_pages(rb, 0, 200, 1000);
    /* Nothing to announce on the live feed for a reloaded trace. */
    trace_batch batch;
    ck_assert(!trace_take_batch(ra, PC0, TS0, &batch));
    ck_assert(!trace_take_stop_notice(ra));
    /* The ids stay taken: starting one again is "already exists". */
    trace *out = NULL;
    char why[128];
    ck_assert_int_eq(trace_hub_start(h, "clean", NULL, PC0, TS0, &out, why, sizeof(why)),
                     WAMP_EEXIST);
    ck_assert_ptr_eq(out, ra);
    /* delete_trace removes the files. */
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/data/%s", tmpdir, trace_persist_id(trace_get_persist(ra)));
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_int_eq(trace_hub_delete(h, "clean"), WAMP_OK);
    ck_assert_int_ne(stat(dir, &st), 0);
    trace_hub_free(h);
    /* Only the crashed one comes back next time. */
    h = hub_new(8192);
    ck_assert_uint_eq(trace_hub_load(h), 1);
    ck_assert_ptr_nonnull(trace_hub_find(h, "crashed"));
    trace_hub_free(h);
}

END_TEST

/* A persisted trace with the reserved (flight recorder) id comes back from an earlier run as
 * "<id>.<persistent_id>", so that this run's flight recorder can start under its own name. */
START_TEST(test_reload_reserved_id_renamed)
{
    trace_hub *h = hub_new(8192);
    json_t *fo = json_loads("{\"persist\": true, \"limit\": 10}", 0, NULL);
    ck_assert_int_eq(trace_hub_reserve(h, "flight-recorder", fo), WAMP_OK);
    trace *t = NULL;
    char why[256] = "";
    ck_assert_int_eq(trace_hub_start(h, "flight-recorder", NULL, PC0, TS0, &t, why, sizeof(why)),
                     WAMP_OK);
    ck_assert_ptr_nonnull(trace_get_persist(t));
    char old_pid[128];
    snprintf(old_pid, sizeof(old_pid), "%s", trace_persist_id(trace_get_persist(t)));
    mark_n(t, 0, 40);
    trace_hub_shutdown(h, PC0 + SEC, TS0 + SEC);
    trace_hub_free(h);

    h = hub_new(8192);
    ck_assert_int_eq(trace_hub_reserve(h, "flight-recorder", fo), WAMP_OK);
    ck_assert_uint_eq(trace_hub_load(h), 1);
    ck_assert_ptr_null(trace_hub_find(h, "flight-recorder"));
    char renamed[256];
    snprintf(renamed, sizeof(renamed), "flight-recorder.%s", old_pid);
    trace *old = trace_hub_find(h, renamed);
    ck_assert_ptr_nonnull(old);
    ck_assert(!trace_is_running(old));
    check_pages(old, 0, 40, 16);
    /* This run's flight recorder starts under its own name, with a new directory. */
    ck_assert_int_eq(trace_hub_start(h, "flight-recorder", NULL, PC0 + 2 * SEC, TS0 + 2 * SEC, &t,
                                     why, sizeof(why)),
                     WAMP_OK);
    ck_assert_str_ne(trace_persist_id(trace_get_persist(t)), old_pid);
    ck_assert_uint_eq(trace_hub_count(h), 2);
    trace_hub_shutdown(h, PC0 + 3 * SEC, TS0 + 3 * SEC);
    trace_hub_free(h);

    /* Without a reserved id the name on disk stays: the oldest of the two comes back under it,
     * the other's id is taken. */
    h = hub_new(8192);
    ck_assert_uint_eq(trace_hub_load(h), 1);
    ck_assert_ptr_nonnull(trace_hub_find(h, "flight-recorder"));
    trace_hub_free(h);
    json_decref(fo);
}

END_TEST

static int n_errors;

static void count_log(void *ctx, bool error, const char *line)
{
    (void)ctx;
    (void)line;
    n_errors += error;
}

START_TEST(test_trace_io_error_stops_only_that_trace)
{
    trace_hub *h = hub_new(4096);
    n_errors = 0;
    trace_hub_set_log(h, count_log, NULL);
    trace *p = start_persisted(h, "p", "{\"persist\": true}");
    trace *m = start_persisted(h, "m", "{}");
    mark_n(p, 0, 10);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/data/%s", tmpdir, trace_persist_id(trace_get_persist(p)));
    tmp_dir_remove(dir);
    /* The next segment cannot be created: the trace stops on the append that needs it. */
    wamp_err err = WAMP_OK;
    for (int i = 0; i < 2000 && err == WAMP_OK; i++) {
        uint64_t seq;
        err = trace_mark(p, "m", NULL, PC0, TS0, &seq);
    }
    ck_assert_int_eq(err, WAMP_ECLOSED);
    ck_assert(!trace_is_running(p));
    ck_assert_int_eq(trace_get_stop_reason(p), TRACE_STOP_IO_ERROR);
    ck_assert_str_eq(trace_stop_reason_name(TRACE_STOP_IO_ERROR), "io_error");
    ck_assert(trace_is_running(m));
    mark_n(m, 0, 3);
    trace_hub_tick(h, PC0 + SEC, TS0 + SEC, NULL, NULL);
    ck_assert_int_eq(n_errors, 1); /* one log line */
    trace_hub_tick(h, PC0 + 2 * SEC, TS0 + 2 * SEC, NULL, NULL);
    ck_assert_int_eq(n_errors, 1);
    trace_hub_free(h);
}

END_TEST

/* Both records alike, field by field (peers and URIs by content). */
static void assert_equal(const trace_record *got, const trace_record *want)
{
    ck_assert_uint_eq(got->seq, want->seq);
    ck_assert_uint_eq(got->pc_ns, want->pc_ns);
    ck_assert_uint_eq(got->ts_ns, want->ts_ns);
    ck_assert_uint_eq(got->dir, want->dir);
    ck_assert_uint_eq(got->msg_type, want->msg_type);
    ck_assert_uint_eq(got->wire_ser, want->wire_ser);
    ck_assert_uint_eq(got->flags, want->flags);
    if (want->flags & TRACE_CORR_HAS) {
        ck_assert_mem_eq(got->corr, want->corr, TRACE_UUID_LEN);
    }
    ck_assert_mem_eq(got->ser_bytes, want->ser_bytes, sizeof(want->ser_bytes));
    ck_assert_uint_eq(got->peer != NULL, want->peer != NULL);
    if (want->peer) {
        ck_assert_uint_eq(trace_peer_session_id(got->peer), trace_peer_session_id(want->peer));
        ck_assert_pstr_eq(trace_peer_realm(got->peer), trace_peer_realm(want->peer));
        ck_assert_pstr_eq(trace_peer_authid(got->peer), trace_peer_authid(want->peer));
        ck_assert_pstr_eq(trace_peer_authrole(got->peer), trace_peer_authrole(want->peer));
    }
    ck_assert_uint_eq(got->uri != NULL, want->uri != NULL);
    if (want->uri) {
        ck_assert_str_eq(trace_str_get(got->uri), trace_str_get(want->uri));
    }
    ck_assert_pstr_eq(got->dropped, want->dropped);
    ck_assert_uint_eq(got->wire != NULL, want->wire != NULL);
    if (want->wire) {
        ck_assert_uint_eq(wamp_buf_len(got->wire), wamp_buf_len(want->wire));
        ck_assert_mem_eq(wamp_buf_cdata(got->wire), wamp_buf_cdata(want->wire),
                         wamp_buf_len(want->wire));
    }
}

static wamp_buf *text_buf(const char *text)
{
    wamp_buf *b = wamp_buf_new_copy(text, strlen(text));
    ck_assert_ptr_nonnull(b);
    return b;
}

/* The capture path's pattern: a PUBLISH from one session, then one EVENT (one buffer, the same
 * correlation) per subscriber, every peer and the URI shared objects, an action record now and
 * then with its anchor's (earlier) times, a marker without a peer. The EVENTs of a PUBLISH
 * carry its clock reading (the router reads the clock once per message it handles), so most
 * are C_REPEAT records, except the one with a drop reason and the last (CORR_LAST); every third
 * PUBLISH spreads its EVENTs' times instead, so that they are not. Compact records refer back
 * to what their block already holds; every read, from any seq, must give the records back. */
#define FAN_SUBS 10
#define FAN_PUBS 300

START_TEST(test_compact_fan_out)
{
    trace_persist_config cfg = config(64 * 1024);
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    trace_peer *pub = trace_peer_new(77, "realm1", "pub", "publisher");
    trace_peer *subs[FAN_SUBS];
    for (int k = 0; k < FAN_SUBS; k++) {
        char authid[16];
        snprintf(authid, sizeof(authid), "sub%d", k);
        subs[k] = trace_peer_new(1000 + (uint64_t)k * UINT64_C(100000000000), "realm1",
                                 k % 4 ? authid : NULL, "subscriber");
    }
    trace_str *uri = trace_str_new("com.example.topic");
    size_t cap = FAN_PUBS * (FAN_SUBS + 3), n = 0;
    trace_record *want = calloc(cap, sizeof(*want));
    ck_assert_ptr_nonnull(want);
    uint64_t pc = PC0;
    for (int i = 0; i < FAN_PUBS; i++) {
        char text[96];
        uint64_t anchor_pc = pc;
        trace_record r = {0};
        r.seq = n;
        r.pc_ns = pc;
        r.ts_ns = TS0 + (pc - PC0) + 7;
        r.peer = trace_peer_ref(pub);
        r.uri = trace_str_ref(uri);
        r.dir = TRACE_RX;
        r.msg_type = 16;
        r.wire_ser = (uint8_t)(i % 2 ? WAMP_SER_MSGPACK : WAMP_SER_JSON);
        r.flags = TRACE_CORR_HAS | TRACE_CORR_ANCHOR;
        for (int b = 0; b < TRACE_UUID_LEN; b++) {
            r.corr[b] = (uint8_t)(i * 31 + b);
        }
        snprintf(text, sizeof(text), "[16, %d, {}, \"com.example.topic\", [%d, \"payload\"]]", i,
                 i);
        r.wire = text_buf(text);
        r.ser_bytes[r.wire_ser] = (uint32_t)strlen(text);
        want[n++] = r;
        snprintf(text, sizeof(text), "[36, 5, %d, {}, [%d, \"payload\"]]", i, i);
        wamp_buf *event = text_buf(text);
        for (int k = 0; k < FAN_SUBS; k++) {
            if (i % 3 == 0) {
                pc += 150 + (uint64_t)(k * 13);
            }
            trace_record e = {0};
            e.seq = n;
            e.pc_ns = pc;
            e.ts_ns = TS0 + (pc - PC0) + 7;
            e.peer = trace_peer_ref(subs[k]);
            e.uri = trace_str_ref(uri);
            e.dir = TRACE_TX;
            e.msg_type = 36;
            e.wire_ser = WAMP_SER_JSON;
            e.flags = TRACE_CORR_HAS | (k == FAN_SUBS - 1 ? TRACE_CORR_LAST : 0);
            memcpy(e.corr, want[n - 1 - (size_t)k].corr, TRACE_UUID_LEN);
            e.ser_bytes[WAMP_SER_JSON] = (uint32_t)strlen(text);
            e.ser_bytes[WAMP_SER_MSGPACK] = 21;
            e.dropped = k == 3 ? "queue_full" : NULL;
            e.wire = wamp_buf_ref(event);
            want[n++] = e;
        }
        wamp_buf_unref(&event);
        if (i % 7 == 0) {
            trace_record a = {0};
            a.seq = n;
            a.pc_ns = anchor_pc; /* earlier than the record before it */
            a.ts_ns = TS0 + (anchor_pc - PC0) + 7;
            a.peer = trace_peer_ref(pub);
            a.uri = trace_str_ref(uri);
            a.msg_type = TRACE_MSG_ACTION;
            a.wire_ser = WAMP_SER_MSGPACK;
            a.flags = TRACE_CORR_HAS;
            memcpy(a.corr, want[n - 1].corr, TRACE_UUID_LEN);
            a.wire = text_buf("\x81\xa1k\x01");
            want[n++] = a;
        }
        if (i % 50 == 49) {
            trace_record m = {0};
            m.seq = n;
            m.pc_ns = pc;
            m.ts_ns = TS0 + (pc - PC0) + 7;
            m.uri = trace_str_new("a marker");
            m.msg_type = TRACE_MSG_MARKER;
            m.wire_ser = WAMP_SER_JSON;
            m.wire = text_buf("{}");
            want[n++] = m;
        }
        pc += 1000;
    }
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(trace_persist_append(p, &want[i]), WAMP_OK);
    }
    /* The point of the format: ~23 bytes for an EVENT that repeats the block's buffer, peer
     * and correlation, about one for a repeat in a run, against 150+ with everything written
     * out. Measured: 25.4 a record (27.8 with every repeat framed on its own, 32.2 with blocks
     * of 64 records, 36-37 without repeats). */
    uint64_t bytes = trace_persist_bytes(p);
    ck_assert_msg(bytes < n * 27, "%llu bytes for %zu records", (unsigned long long)bytes, n);
    ck_assert_uint_gt(trace_persist_segments(p), 1);
    uint64_t probes[] = {0, 1, 62, 63, 64, 65, 100, 127, 128, 1000, 1999, 2047, n - 150, n - 1};
    trace_record *got = calloc(150, sizeof(*got));
    ck_assert_ptr_nonnull(got);
    for (int round = 0; round < 3; round++) {
        if (round == 1) {
            ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
        } else if (round == 2) {
            p = reopened(p, &cfg, id);
            ck_assert_uint_eq(trace_persist_next_seq(p), n);
            ck_assert_uint_eq(trace_persist_bytes(p), bytes);
        }
        for (size_t pi = 0; pi < sizeof(probes) / sizeof(probes[0]); pi++) {
            uint64_t from = probes[pi];
            size_t expect = n - from < 150 ? (size_t)(n - from) : 150;
            size_t k = trace_persist_read(p, from, UINT64_MAX, 150, got);
            ck_assert_uint_eq(k, expect);
            for (size_t j = 0; j < k; j++) {
                assert_equal(&got[j], &want[from + j]);
                trace_record_fini(&got[j]);
            }
        }
        /* A bounded range in the middle of a block. */
        size_t k = trace_persist_read(p, 70, 75, 150, got);
        ck_assert_uint_eq(k, 5);
        for (size_t j = 0; j < k; j++) {
            assert_equal(&got[j], &want[70 + j]);
            trace_record_fini(&got[j]);
        }
    }
    free(got);
    trace_persist_free(p);
    for (size_t i = 0; i < n; i++) {
        trace_record_fini(&want[i]);
    }
    free(want);
    for (int k = 0; k < FAN_SUBS; k++) {
        trace_peer_unref(&subs[k]);
    }
    trace_peer_unref(&pub);
    trace_str_unref(&uri);
}

END_TEST

/* Copies src (a file) to dst. */
static void copy_file(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb");
    ck_assert_msg(in != NULL, "open %s", src);
    FILE *out = fopen(dst, "wb");
    ck_assert_ptr_nonnull(out);
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof(buf), in)) > 0) {
        ck_assert_uint_eq(fwrite(buf, 1, k, out), k);
    }
    fclose(in);
    ck_assert_int_eq(fclose(out), 0);
}

/* Copies the files of trace id from the fixture directory tests/data/<fixture>/<id> into
 * tmpdir/data/<id>, as a data directory holding that one persisted trace. */
static void install_fixture(const char *fixture, const char *id, const char *const *files, size_t n)
{
    const char *root = getenv("RT_SOURCE_DIR");
    ck_assert_msg(root != NULL, "RT_SOURCE_DIR is set by ctest");
    char dir[512], src[1024], dst[1024];
    snprintf(dir, sizeof(dir), "%s/data", tmpdir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(dir, sizeof(dir), "%s/data/%s", tmpdir, id);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    for (size_t i = 0; i < n; i++) {
        snprintf(src, sizeof(src), "%s/tests/data/%s/%s/%s", root, fixture, id, files[i]);
        snprintf(dst, sizeof(dst), "%s/%s", dir, files[i]);
        copy_file(src, dst);
    }
}

/* Traces persisted before the compact format (tests/data/persist_v1, see its README.md) are
 * still read: records, index seeks, the segment edge. */
/* A persisted trace of make_rec() records 0..9 with one compact record appended to its segment
 * by hand (framed and CRC'd like a real one), opened again: how many records the trace counts
 * and how many read back. Returns the reopened trace. */
#define CRAFT_GOOD 10

static trace_persist *with_crafted(const unsigned char *body, size_t len, uint64_t expect_next,
                                   size_t expect_read, trace_record *read_out)
{
    trace_persist_config cfg = config(0);
    trace_persist *p = NULL;
    char id[TRACE_PERSIST_ID_MAX], seg[600];
    written_trace(&cfg, CRAFT_GOOD, 20, id, seg, sizeof(seg));
    unsigned char hdr[8];
    uint32_t word = (uint32_t)len | 0x80000000u; /* LEN_COMPACT: a compact body */
    uint32_t crc = trace_crc32c(0, body, len);
    for (int i = 0; i < 4; i++) {
        hdr[i] = (unsigned char)(word >> (8 * i));
        hdr[4 + i] = (unsigned char)(crc >> (8 * i));
    }
    int fd = open(seg, O_WRONLY | O_APPEND);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
    ck_assert_int_eq(write(fd, body, len), (ssize_t)len);
    close(fd);
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    json_decref(m);
    ck_assert_uint_eq(trace_persist_next_seq(p), expect_next);
    size_t n = trace_persist_read(p, 0, UINT64_MAX, CRAFT_GOOD + 5, read_out);
    ck_assert_uint_eq(n, expect_read);
    for (size_t i = 0; i < CRAFT_GOOD && i < n; i++) {
        assert_same(&read_out[i], i, 20);
    }
    return p;
}

/* with_crafted() for a body whose records are only counted: read back, then released. */
static void crafted_counts(const unsigned char *body, size_t len, uint64_t expect_next,
                           size_t expect_read)
{
    trace_record out[CRAFT_GOOD + 5];
    trace_persist *p = with_crafted(body, len, expect_next, expect_read, out);
    for (size_t i = 0; i < expect_read; i++) {
        trace_record_fini(&out[i]);
    }
    trace_persist_free(p);
}

/* trace_persist_append_run(): one message's receivers, most of them a byte each in the block's
 * run, the last one completing the action; the run ends at every block start (an index entry
 * every 256 seqs, whatever the fan-out) and the records read back, from a seek into the middle
 * too, before and after a reopen. */
START_TEST(test_append_run_blocks_and_index)
{
    trace_persist_config cfg = config(0);
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);

    enum {
        N = 600
    };

    trace_peer *peers[N]; /* 20 sessions, as a router's: one peer object each */
    for (size_t i = 0; i < N; i++) {
        peers[i] = i < 20 ? trace_peer_new(1 + i, "realm1", "user", "role")
                          : trace_peer_ref(peers[i % 20]);
    }
    trace_str *uri = trace_str_new("com.example.topic");
    wamp_buf *wire = wamp_buf_new(16);
    memcpy(wamp_buf_reserve(&wire, 12), "[36,5,6,{}]x", 12);
    wamp_buf_commit(wire, 11);
    uint8_t corr[TRACE_UUID_LEN] = {9};
    trace_rec_view r = {.seq = 0,
                        .pc_ns = PC0,
                        .ts_ns = TS0,
                        .peer = peers[0],
                        .uri = uri,
                        .corr = corr,
                        .wire = wire,
                        .ser_bytes = {[WAMP_SER_JSON] = 11},
                        .dir = TRACE_TX,
                        .msg_type = 36,
                        .wire_ser = WAMP_SER_JSON,
                        .flags = TRACE_CORR_HAS,
                        .key = 42};
    ck_assert_int_eq(trace_persist_append_rec(p, &r), WAMP_OK);
    r.seq = 1;
    ck_assert_int_eq(trace_persist_append_run(p, &r, peers + 1, N - 1, true), WAMP_OK);
    ck_assert_uint_eq(trace_persist_next_seq(p), N);
    /* ~1 byte a receiver, and per block a full record, a run and the 20 peer definitions. */
    ck_assert_uint_lt(trace_persist_bytes(p), 4 * N);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    char idx[600];
    snprintf(idx, sizeof(idx), "%s/%s/%020llu.idx", cfg.data_dir, id, 0ull);
    struct stat st;
    ck_assert_int_eq(stat(idx, &st), 0);
    ck_assert_int_eq(st.st_size, 3 * 16); /* seqs 0, 256, 512 */
    for (int reopen = 0; reopen < 2; reopen++) {
        uint64_t from[] = {0, 255, 256, 300, 599};
        for (size_t f = 0; f < 5; f++) {
            trace_record out[50];
            size_t n = trace_persist_read(p, from[f], UINT64_MAX, 50, out);
            ck_assert_uint_eq(n, N - from[f] < 50 ? N - from[f] : 50);
            for (size_t i = 0; i < n; i++) {
                uint64_t seq = from[f] + i;
                ck_assert_uint_eq(out[i].seq, seq);
                ck_assert_uint_eq(trace_peer_session_id(out[i].peer), 1 + seq % 20);
                ck_assert_uint_eq(out[i].msg_type, 36);
                ck_assert_uint_eq(wamp_buf_len(out[i].wire), 11);
                ck_assert_mem_eq(out[i].corr, corr, TRACE_UUID_LEN);
                /* The last receiver's record completes the action (its entry's last bit). */
                ck_assert_uint_eq(out[i].flags,
                                  TRACE_CORR_HAS | (seq == N - 1 ? TRACE_CORR_LAST : 0));
                trace_record_fini(&out[i]);
            }
        }
        if (!reopen) {
            p = reopened(p, &cfg, id);
            ck_assert_uint_eq(trace_persist_next_seq(p), N);
        }
    }
    trace_persist_free(p);
    for (size_t i = 0; i < N; i++) {
        trace_peer_unref(&peers[i]);
    }
    trace_str_unref(&uri);
    wamp_buf_unref(&wire);
}

END_TEST

/* Records of 4000 bytes received from peer, seqs from, from + 1, ... (n of them), then one
 * more of extra bytes (at most 8000); returns the next seq. Each one's last byte is its seq's
 * low byte, so that none ends as another of its block does (all are written whole). */
static uint64_t append_fillers(trace_persist *p, trace_peer *peer, uint64_t from, size_t n,
                               size_t extra)
{
    unsigned char *bytes = calloc(8000, 1);
    ck_assert_ptr_nonnull(bytes);
    trace_rec_view v = {.pc_ns = PC0,
                        .ts_ns = TS0,
                        .peer = peer,
                        .bytes = bytes,
                        .dir = TRACE_RX,
                        .msg_type = 16,
                        .wire_ser = WAMP_SER_JSON};
    for (size_t i = 0; i <= n; i++) {
        v.seq = from + i;
        v.len = i < n ? 4000 : extra;
        v.ser_bytes[WAMP_SER_JSON] = (uint32_t)v.len;
        bytes[v.len - 1] = (unsigned char)v.seq;
        ck_assert_int_eq(trace_persist_append_rec(p, &v), WAMP_OK);
        bytes[v.len - 1] = 0;
    }
    free(bytes);
    return from + n + 1;
}

/* How many of the file's pages are in the page cache (mincore() of a mapping of it). */
static size_t cached_pages(const char *path)
{
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    off_t size = file_size(path);
    ck_assert_int_gt(size, 0);
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    long page = sysconf(_SC_PAGESIZE);
    size_t n = ((size_t)size + (size_t)page - 1) / (size_t)page, cached = 0;
    unsigned char *vec = malloc(n);
    ck_assert_ptr_nonnull(vec);
    ck_assert_int_eq(mincore(m, (size_t)size, vec), 0);
    for (size_t i = 0; i < n; i++) {
        cached += vec[i] & 1;
    }
    free(vec);
    munmap(m, (size_t)size);
    close(fd);
    return cached;
}

/* The writer keeps a trace out of the page cache: a complete segment's pages leave it once the
 * rotation has fsynced it (the writer's cache_release() and job_finish()), and every record still
 * reads back, from the disk. The data directory is under the working directory (the build's, on
 * a disk): in a tmpfs the page cache is where files live and nothing leaves it. */
START_TEST(test_writer_leaves_page_cache)
{
    char dir[] = "check_trace_persist_cache.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    trace_persist_config cfg = {
            .data_dir = dir, .segment_bytes = 1u << 20, .fsync = TRACE_FSYNC_INTERVAL};
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    trace_peer *peer = trace_peer_new(7, "realm1", NULL, "anonymous");
    for (uint64_t s = 0; s < 1000; s += 101) {
        (void)append_fillers(p, peer, s, 100, 4000); /* 4,000 bytes each, none alike */
        ck_assert_int_eq(trace_persist_flush(p, false, PC0), WAMP_OK);
    }
    ck_assert_uint_ge(trace_persist_segments(p), 3); /* about 260 records a segment */
    trace_persist_free(p); /* the writer thread finishes every job first */
    char seg[600];
    snprintf(seg, sizeof(seg), "%s/%s/%020llu.seg", dir, id, 0ull);
    ck_assert_int_gt(file_size(seg), 1 << 19);
    ck_assert_uint_eq(cached_pages(seg), 0);
    p = reopened(NULL, &cfg, id);
    trace_record *out = calloc(1010, sizeof(*out));
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(trace_persist_read(p, 0, UINT64_MAX, 1010, out), 1010);
    for (size_t k = 0; k < 1010; k++) {
        size_t len;
        const unsigned char *b = trace_record_data(&out[k], &len);
        ck_assert_uint_eq(out[k].seq, k);
        ck_assert_uint_eq(len, 4000);
        ck_assert_uint_eq(b[len - 1], (unsigned char)k);
        trace_record_fini(&out[k]);
    }
    free(out);
    trace_persist_free(p);
    trace_peer_unref(&peer);
    tmp_dir_remove(dir);
}

END_TEST

/* Fan-outs of one topic to the same receivers, one after another in a block: from the second on,
 * the block's memo of the receivers' order writes each entry (a byte, the memo's code); more
 * receivers than the memo holds, a receiver out of its usual place, a message without its last
 * receiver, and the last bit on the entry it belongs to, all read back as appended. */
START_TEST(test_run_memo_across_fan_outs)
{
    trace_persist_config cfg = config(0);
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);

    enum {
        SUBS = 70, /* more than the encoder remembers (64) */
        MSGS = 8
    };

    trace_peer *subs[SUBS];
    for (size_t i = 0; i < SUBS; i++) {
        subs[i] = trace_peer_new(100 + i, "realm1", "user", "role");
    }
    trace_str *uri = trace_str_new("com.example.topic");
    uint64_t seq = 0;
    uint64_t want_sess[MSGS * SUBS];
    uint8_t want_flags[MSGS * SUBS];
    for (size_t m = 0; m < MSGS; m++) {
        size_t n = m % 2 ? 20 : SUBS; /* the last entry inside the memo, or beyond it */
        char text[32];
        snprintf(text, sizeof(text), "[36,5,%zu,{}]", m);
        wamp_buf *wire = text_buf(text);
        trace_peer *order[SUBS];
        memcpy(order, subs, sizeof(order));
        if (m == 3) { /* two receivers swap places: the memo misses there, and learns */
            order[10] = subs[11];
            order[11] = subs[10];
        }
        bool last = m != 4 && m != 5; /* their last receivers are not among these */
        trace_rec_view r = {.seq = seq,
                            .pc_ns = PC0 + m * 1000,
                            .ts_ns = TS0 + m * 1000,
                            .peer = order[0],
                            .uri = uri,
                            .wire = wire,
                            .ser_bytes = {[WAMP_SER_JSON] = (uint32_t)strlen(text)},
                            .dir = TRACE_TX,
                            .msg_type = 36,
                            .wire_ser = WAMP_SER_JSON,
                            .key = 1000 + m};
        ck_assert_int_eq(trace_persist_append_rec(p, &r), WAMP_OK);
        r.seq = seq + 1;
        ck_assert_int_eq(trace_persist_append_run(p, &r, order + 1, n - 1, last), WAMP_OK);
        for (size_t k = 0; k < n; k++) {
            want_sess[seq + k] = trace_peer_session_id(order[k]);
            want_flags[seq + k] = last && k == n - 1 ? TRACE_CORR_LAST : 0;
        }
        seq += n;
        wamp_buf_unref(&wire);
    }
    ck_assert_uint_lt(seq, TRACE_PERSIST_INDEX_EVERY * 2); /* two blocks: the memo is used */
    ck_assert_uint_eq(trace_persist_next_seq(p), seq);
    for (int reopen = 0; reopen < 2; reopen++) {
        trace_record out[MSGS * SUBS];
        ck_assert_uint_eq(trace_persist_read(p, 0, UINT64_MAX, seq, out), seq);
        for (size_t i = 0; i < seq; i++) {
            ck_assert_uint_eq(out[i].seq, i);
            ck_assert_uint_eq(trace_peer_session_id(out[i].peer), want_sess[i]);
            ck_assert_uint_eq(out[i].flags, want_flags[i]);
            ck_assert_uint_eq(out[i].msg_type, 36);
            trace_record_fini(&out[i]);
        }
        if (!reopen) {
            p = reopened(p, &cfg, id);
        }
    }
    trace_persist_free(p);
    for (size_t i = 0; i < SUBS; i++) {
        trace_peer_unref(&subs[i]);
    }
    trace_str_unref(&uri);
}

END_TEST

/* A fan-out whose run starts when the write buffer lacks room for the run's head (a few bytes
 * short of TRACE_PERSIST_BUFFER_MAX, where the buffer is handed over): the run takes its first
 * receiver all the same, and the rest follow (an empty run, taken back, once made the encoder
 * try again for ever). */
START_TEST(test_run_starts_at_full_buffer)
{
    trace_persist_config cfg = config(0);
    trace_peer *peers[4];
    for (size_t i = 0; i < 4; i++) {
        peers[i] = trace_peer_new(1 + i, "realm1", "user", "role");
    }
    wamp_buf *wire = text_buf("[36,5,6,{}]");
    trace_rec_view ev = {.pc_ns = PC0,
                         .ts_ns = TS0,
                         .peer = peers[1],
                         .wire = wire,
                         .ser_bytes = {[WAMP_SER_JSON] = 11},
                         .dir = TRACE_TX,
                         .msg_type = 36,
                         .wire_ser = WAMP_SER_JSON,
                         .key = 7};
    /* A trial first: what the fillers and the EVENT take. */
    size_t fillers = (TRACE_PERSIST_BUFFER_MAX - 6000) / 4000;
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    ev.seq = append_fillers(p, peers[0], 0, fillers, ALONE_WIRE);
    uint64_t before = trace_persist_bytes(p);
    ck_assert_int_eq(trace_persist_append_rec(p, &ev), WAMP_OK);
    uint64_t event = trace_persist_bytes(p) - before;
    ck_assert(trace_persist_remove(p));
    /* Then the last filler sized to leave 5 bytes before the buffer is full. */
    p = created(&cfg, id);
    size_t extra = ALONE_WIRE + (size_t)(TRACE_PERSIST_BUFFER_MAX - 5 - event - before);
    ck_assert_uint_lt(extra, 8000);
    ev.seq = append_fillers(p, peers[0], 0, fillers, extra);
    ck_assert_int_eq(trace_persist_append_rec(p, &ev), WAMP_OK);
    ck_assert_uint_eq(trace_persist_bytes(p), TRACE_PERSIST_BUFFER_MAX - 5);
    trace_rec_view run = ev;
    run.seq = ev.seq + 1;
    ck_assert_int_eq(trace_persist_append_run(p, &run, peers + 2, 2, true), WAMP_OK);
    ck_assert_uint_eq(trace_persist_next_seq(p), ev.seq + 3);
    trace_record out[3];
    ck_assert_uint_eq(trace_persist_read(p, ev.seq, UINT64_MAX, 3, out), 3);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_uint_eq(out[i].seq, ev.seq + i);
        ck_assert_uint_eq(trace_peer_session_id(out[i].peer), 2 + i);
        ck_assert_uint_eq(out[i].flags, i == 2 ? TRACE_CORR_LAST : 0);
        ck_assert_uint_eq(wamp_buf_len(out[i].wire), 11);
        trace_record_fini(&out[i]);
    }
    trace_persist_free(p);
    for (size_t i = 0; i < 4; i++) {
        trace_peer_unref(&peers[i]);
    }
    wamp_buf_unref(&wire);
}

END_TEST

/* C_REPEAT records (the previous record again but for its peer) from a file: a well-formed one
 * reads back as the previous record with the next seq and its own peer; malformed ones (a bit
 * a repeat cannot have, a peer the block does not hold, a repeat opening a block) never come
 * back as records, and never crash the reader. */
START_TEST(test_compact_crafted_repeats)
{
    trace_record out[CRAFT_GOOD + 5];
    /* C_REPEAT | C_PEER, the block's first peer (record 0's). */
    static const unsigned char good[] = {0x82, 0x00};
    trace_persist *p = with_crafted(good, sizeof(good), CRAFT_GOOD + 1, CRAFT_GOOD + 1, out);
    trace_record want = make_rec(CRAFT_GOOD - 1, 20);
    trace_record first = make_rec(0, 20);
    trace_peer_unref(&want.peer);
    want.peer = trace_peer_ref(first.peer);
    want.seq = CRAFT_GOOD;
    want.dropped = NULL;
    assert_equal(&out[CRAFT_GOOD], &want);
    trace_record_fini(&want);
    trace_record_fini(&first);
    for (size_t i = 0; i < CRAFT_GOOD + 1; i++) {
        trace_record_fini(&out[i]);
    }
    trace_persist_free(p);

    /* Its head decodes, the rest does not: cut when the trace is opened (every record is
     * decoded then), so that what the trace counts is what a read returns. */
    static const unsigned char extra_bit[] = {0x86, 0x00}; /* C_REPEAT | C_URI | C_PEER */
    static const unsigned char bad_peer[] = {0x82, 0x0c};  /* peer 12 of 10 */
    const unsigned char *bad[] = {extra_bit, bad_peer};
    for (int k = 0; k < 2; k++) {
        crafted_counts(bad[k], 2, CRAFT_GOOD, CRAFT_GOOD);
    }
    /* A repeat cannot open a block: cut off when the trace is opened. */
    static const unsigned char opens_block[] = {0x83, 0x00}; /* C_REPEAT | C_PEER | C_BLOCK */
    crafted_counts(opens_block, sizeof(opens_block), CRAFT_GOOD, CRAFT_GOOD);
}

END_TEST

/* Runs (a fan-out's repeats in one frame: what, u16 count, count peers) from a file: a
 * well-formed one reads back as count repeats of the previous record, each with its seq and
 * peer, a peer defined inside the run included; malformed ones are cut when the trace is
 * opened (a zero count, extra bits, opening a block) or end the read where they stop decoding
 * (a count that does not match the peers, a peer the block does not hold). */
START_TEST(test_compact_crafted_runs)
{
    trace_record out[CRAFT_GOOD + 5];
    /* C_REPEAT | C_RUN | C_PEER, count 3: the peers of records 0, 1 and 2 (entries i << 1),
     * the last one also completing the action (its low bit). */
    static const unsigned char good[] = {0x8a, 3, 0, 0x00, 0x02, 0x05};
    trace_persist *p = with_crafted(good, sizeof(good), CRAFT_GOOD + 3, CRAFT_GOOD + 3, out);
    for (uint64_t k = 0; k < 3; k++) {
        trace_record want = make_rec(CRAFT_GOOD - 1, 20);
        trace_record owner = make_rec(k, 20);
        trace_peer_unref(&want.peer);
        want.peer = trace_peer_ref(owner.peer);
        want.seq = CRAFT_GOOD + k;
        want.dropped = NULL;
        want.flags |= k == 2 ? TRACE_CORR_LAST : 0;
        assert_equal(&out[CRAFT_GOOD + k], &want);
        trace_record_fini(&want);
        trace_record_fini(&owner);
    }
    for (size_t i = 0; i < CRAFT_GOOD + 3; i++) {
        trace_record_fini(&out[i]);
    }
    trace_persist_free(p);
    /* A peer defined in the run (index 10 = new: session 5, realm "r1", no authid, role "x"),
     * then referred to. */
    static const unsigned char defines[] = {0x8a, 2,   0,    0x14, 0x05, 0x03,
                                            'r',  '1', 0x00, 0x02, 'x',  0x14};
    p = with_crafted(defines, sizeof(defines), CRAFT_GOOD + 2, CRAFT_GOOD + 2, out);
    for (size_t k = CRAFT_GOOD; k < CRAFT_GOOD + 2; k++) {
        ck_assert_uint_eq(out[k].seq, k);
        ck_assert_uint_eq(trace_peer_session_id(out[k].peer), 5);
        ck_assert_str_eq(trace_peer_realm(out[k].peer), "r1");
        ck_assert_ptr_null(trace_peer_authid(out[k].peer));
        ck_assert_str_eq(trace_peer_authrole(out[k].peer), "x");
        ck_assert_ptr_eq(out[k].wire, out[CRAFT_GOOD - 1].wire); /* the repeated bytes */
    }
    ck_assert_ptr_eq(out[CRAFT_GOOD].peer, out[CRAFT_GOOD + 1].peer);
    for (size_t i = 0; i < CRAFT_GOOD + 2; i++) {
        trace_record_fini(&out[i]);
    }
    trace_persist_free(p);
    /* Cut at open: count 0, a bit a run cannot have (C_URI), a run opening a block. */
    static const unsigned char zero[] = {0x8a, 0, 0, 0x00};
    static const unsigned char extra_bit[] = {0x8e, 1, 0, 0x00};
    static const unsigned char opens_block[] = {0x8b, 1, 0, 0x00};
    const unsigned char *cut[] = {zero, extra_bit, opens_block};
    for (int k = 0; k < 3; k++) {
        crafted_counts(cut[k], 4, CRAFT_GOOD, CRAFT_GOOD);
    }
    /* Runs whose head decodes and whose entries do not (a count of 3 with 2 peers, a count of
     * 1 with 2 peers, peer 12 of 10): the whole run is cut at open, as a reader could not
     * return all of it. */
    static const unsigned char short_run[] = {0x8a, 3, 0, 0x00, 0x02};
    static const unsigned char long_run[] = {0x8a, 1, 0, 0x00, 0x02};
    static const unsigned char bad_peer[] = {0x8a, 1, 0, 0x18, 0x00};
    const unsigned char *partial[] = {short_run, long_run, bad_peer};
    for (int k = 0; k < 3; k++) {
        crafted_counts(partial[k], 5, CRAFT_GOOD, CRAFT_GOOD);
    }
}

END_TEST

/* Short records (C2_SHORT: no ts and no ser_bytes varints): written when a record's bytes are
 * its only size and ts moved as pc did, and only then; every kind reads back the same, before
 * and after a reopen, and the short ones are smaller. Crafted short records that break the rules
 * (opening a block, without bytes of their own) are cut when the trace is opened. */
START_TEST(test_short_records)
{
    trace_persist_config cfg = config(0);
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);

    enum {
        N = 8
    };

    trace_record in[N];
    uint64_t size[N];
    for (uint64_t k = 0; k < N; k++) {
        in[k] = make_rec(k, 20);
        in[k].dropped = NULL;
        in[k].ser_bytes[WAMP_SER_JSON] = (uint32_t)wamp_buf_len(in[k].wire); /* its only size */
    }
    /* 0: a block's first (never short); 1, 2, 6, 7: short; 3: the wall clock was set (ts moved
     * less than pc); 4: also sent as MessagePack (two sizes); 5: a size that is not its bytes'. */
    in[3].ts_ns -= 5;
    in[4].ser_bytes[WAMP_SER_MSGPACK] = 17;
    in[5].ser_bytes[WAMP_SER_JSON] += 1;
    for (uint64_t k = 0; k < N; k++) {
        uint64_t before = trace_persist_bytes(p);
        ck_assert_int_eq(trace_persist_append(p, &in[k]), WAMP_OK);
        size[k] = trace_persist_bytes(p) - before;
    }
    /* Like records (of the same parity: an odd one's peer has an authid), but short: 4 bytes
     * less at least (3 sizes and a ts of 1 byte each). */
    ck_assert_uint_le(size[7] + 4, size[3]);
    ck_assert_uint_le(size[6] + 4, size[4]);
    ck_assert_uint_le(size[7] + 4, size[5]);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    for (int pass = 0; pass < 2; pass++) {
        trace_record out[N];
        ck_assert_uint_eq(trace_persist_read(p, 0, UINT64_MAX, N, out), N);
        for (uint64_t k = 0; k < N; k++) {
            assert_equal(&out[k], &in[k]);
            trace_record_fini(&out[k]);
        }
        trace_persist_free(p);
        p = NULL;
        if (pass == 0) {
            json_t *m = NULL;
            ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
            json_decref(m);
        }
    }
    for (uint64_t k = 0; k < N; k++) {
        trace_record_fini(&in[k]);
    }

    /* Crafted after CRAFT_GOOD records: C_WIRE, type 16, rx JSON short; seq + 1, pc + 1000
     * (zigzag 2000), 3 bytes "abc". */
    trace_record got[CRAFT_GOOD + 1];
    static const unsigned char good[] = {0x10, 16, 0x84, 1, 0xd0, 0x0f, 3, 'a', 'b', 'c'};
    p = with_crafted(good, sizeof(good), CRAFT_GOOD + 1, CRAFT_GOOD + 1, got);
    const trace_record *r = &got[CRAFT_GOOD];
    ck_assert_uint_eq(r->seq, CRAFT_GOOD);
    ck_assert_uint_eq(r->pc_ns, got[CRAFT_GOOD - 1].pc_ns + 1000);
    ck_assert_uint_eq(r->ts_ns, got[CRAFT_GOOD - 1].ts_ns + 1000);
    ck_assert_uint_eq(r->ser_bytes[WAMP_SER_JSON], 3);
    ck_assert_uint_eq(r->ser_bytes[WAMP_SER_MSGPACK], 0);
    ck_assert_uint_eq(r->wire_ser, WAMP_SER_JSON);
    ck_assert_uint_eq(wamp_buf_len(r->wire), 3);
    ck_assert_mem_eq(wamp_buf_cdata(r->wire), "abc", 3);
    ck_assert_ptr_null(r->peer);
    for (size_t i = 0; i < CRAFT_GOOD + 1; i++) {
        trace_record_fini(&got[i]);
    }
    trace_persist_free(p);
    /* Opening a block, the block's last bytes (C_WIRE_SAME), no bytes at all. */
    static const unsigned char opens[] = {0x11, 16, 0x84, 1, 0xd0, 0x0f, 3, 'a', 'b', 'c'};
    static const unsigned char same[] = {0x30, 16, 0x84, 1, 0xd0, 0x0f, 0, 0, 0, 0};
    static const unsigned char none[] = {0x00, 16, 0x84, 1, 0xd0, 0x0f, 0, 0, 0, 0};
    const unsigned char *cut[] = {opens, same, none};
    for (int k = 0; k < 3; k++) {
        crafted_counts(cut[k], sizeof(good), CRAFT_GOOD, CRAFT_GOOD);
    }
}

END_TEST

START_TEST(test_v1_segments_still_read)
{
    static const char *const files[] = {"00000000000000000000.seg", "00000000000000000000.idx",
                                        "00000000000000000047.seg", "00000000000000000047.idx",
                                        "meta.json"};
    const char *id = "01700000000000000000";
    install_fixture("persist_v1", id, files, sizeof(files) / sizeof(files[0]));
    trace_persist_config cfg = config(0);
    trace_persist *p = NULL;
    json_t *m = NULL;
    char note[256] = "";
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, note, sizeof(note)), WAMP_OK);
    ck_assert_msg(note[0] == '\0', "nothing is cut: %s", note);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(json_string_value(json_object_get(m, "id")), "v1-fixture");
    json_decref(m);
    ck_assert_uint_eq(trace_persist_segments(p), 2);
    ck_assert_uint_eq(trace_persist_first_seq(p), 0);
    ck_assert_uint_eq(trace_persist_next_seq(p), 70);
    ck_assert_uint_eq(trace_persist_last_ts(p), TS0 + 69 * 1000);
    read_check(p, 0, UINT64_MAX, 100, 0, 70, 10);
    read_check(p, 40, UINT64_MAX, 10, 40, 10, 10); /* across the segment edge */
    read_check(p, 50, 60, 100, 50, 10, 10);
    trace_persist_free(p);
}

END_TEST

/* The lines a hub logs, kept for the test to search. */
static char log_text[16384];

static void keep_log(void *ctx, bool error, const char *line)
{
    (void)ctx;
    (void)error;
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof(log_text) - n, "%s\n", line);
}

/* The .seg files of a trace directory, sorted (at most max). */
static size_t seg_files(const char *dir, char names[][64], size_t max)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 4 && l < 64 && strcmp(e->d_name + l - 4, ".seg") == 0) {
            memcpy(names[n++], e->d_name, l + 1);
        }
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
    return n;
}

START_TEST(test_reload_damage_is_gaps)
{
    /* Issue 23, 1: bytes flipped in the middle of a segment and a middle segment deleted were
     * counted in records but not returned, silently. Now both are gaps: in the metadata
     * (counted in dropped), as gap items in the pages, and in the log naming the .seg. */
    trace_hub *h = hub_new(8192);
    trace *t = start_persisted(h, "g", "{\"persist\": true}");
    mark_n(t, 0, 3000);
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/data/%s", tmpdir, trace_persist_id(trace_get_persist(t)));
    ck_assert(trace_stop(t, TRACE_STOP_SHUTDOWN, PC0 + SEC, TS0 + SEC));
    trace_hub_free(h);
    char names[256][64];
    size_t n = seg_files(dir, names, 256);
    ck_assert_uint_ge(n, 6);
    char path[700];
    /* Flip 8 bytes in the middle of the second segment. */
    snprintf(path, sizeof(path), "%s/%s", dir, names[1]);
    off_t size = file_size(path);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    unsigned char b[8];
    ck_assert_int_eq(pread(fd, b, sizeof(b), size / 2), (ssize_t)sizeof(b));
    for (size_t i = 0; i < sizeof(b); i++) {
        b[i] ^= 0xa5;
    }
    ck_assert_int_eq(pwrite(fd, b, sizeof(b), size / 2), (ssize_t)sizeof(b));
    close(fd);
    /* Delete the fourth. */
    snprintf(path, sizeof(path), "%s/%s", dir, names[3]);
    ck_assert_int_eq(unlink(path), 0);

    h = hub_new(8192);
    log_text[0] = '\0';
    trace_hub_set_log(h, keep_log, NULL);
    ck_assert_uint_eq(trace_hub_load(h), 1);
    t = trace_hub_find(h, "g");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(trace_next_seq(t), 3000); /* sealed: the end is known */
    json_t *md = trace_render_meta(t, "n", "w", 0);
    json_t *gaps = json_object_get(md, "gaps");
    ck_assert_uint_eq(json_array_size(gaps), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(gaps, 0), "reason")),
                     "corrupt");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(gaps, 1), "reason")),
                     "missing");
    uint64_t in_gaps = 0;
    for (size_t i = 0; i < 2; i++) {
        json_t *g = json_array_get(gaps, i);
        in_gaps += (uint64_t)(json_integer_value(json_object_get(g, "to_seq")) -
                              json_integer_value(json_object_get(g, "from_seq")) + 1);
    }
    uint64_t records = (uint64_t)json_integer_value(json_object_get(md, "records"));
    ck_assert_uint_eq(records + in_gaps, 3000);
    ck_assert_int_eq(json_integer_value(json_object_get(md, "dropped")), (json_int_t)in_gaps);
    ck_assert_int_eq(json_integer_value(json_object_get(md, "durable_to_seq")), 2999);
    /* Paging as a client does (from the last seq + 1): every record once, in order, each gap
     * once as an item where it is; the records are what was written (meta {"i": seq}). */
    uint64_t next = 0, got = 0, gap_items = 0;
    int64_t last = -1;
    for (;;) {
        json_t *page = trace_render_records(t, next, TRACE_SEQ_NONE, 77);
        ck_assert_ptr_nonnull(page);
        if (json_array_size(page) == 0) {
            json_decref(page);
            break;
        }
        for (size_t i = 0; i < json_array_size(page); i++) {
            json_t *it = json_array_get(page, i);
            int64_t seq = json_integer_value(json_object_get(it, "seq"));
            ck_assert_int_gt(seq, last);
            last = seq;
            if (json_object_get(it, "kind")) {
                ck_assert_str_eq(json_string_value(json_object_get(it, "kind")), "gap");
                ck_assert_str_eq(json_string_value(json_object_get(it, "msg_type")), "Gap");
                json_t *g = json_array_get(gaps, gap_items++);
                ck_assert(json_equal(json_object_get(it, "from_seq"),
                                     json_object_get(g, "from_seq")));
                ck_assert(json_equal(json_object_get(it, "to_seq"), json_object_get(g, "to_seq")));
                ck_assert_int_eq(seq, json_integer_value(json_object_get(g, "to_seq")));
                continue;
            }
            ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(it, "msg"), "i")),
                             seq);
            got++;
        }
        next = (uint64_t)last + 1;
        json_decref(page);
    }
    ck_assert_uint_eq(got, records);
    ck_assert_uint_eq(gap_items, 2);
    /* A page that ends inside a gap: the item's seq is the page's last. */
    json_t *g0 = json_array_get(gaps, 0);
    uint64_t from = (uint64_t)json_integer_value(json_object_get(g0, "from_seq"));
    json_t *page = trace_render_records(t, from, from, 10);
    ck_assert_uint_eq(json_array_size(page), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(page, 0), "seq")),
                     (json_int_t)from);
    json_decref(page);
    json_decref(md);
    /* The log names the damaged segment file (not its index) and the missing seqs. */
    ck_assert_msg(strstr(log_text, names[1]) && strstr(log_text, "are a gap (corrupt)"), "%s",
                  log_text);
    ck_assert_msg(strstr(log_text, "are a gap (missing)") != NULL, "%s", log_text);
    ck_assert_msg(strstr(log_text, ".idx") == NULL, "%s", log_text);
    trace_hub_free(h);
}

END_TEST

/* Every record trace_persist_read() returns, from seq 0: each once, in seq order, none in a
 * gap, and each what make_rec() wrote for its seq. Returns how many. */
static uint64_t read_all_checked(trace_persist *p)
{
    uint64_t from = 0, got = 0;
    int64_t last = -1;
    trace_record out[64];
    for (;;) {
        size_t n = trace_persist_read(p, from, UINT64_MAX, 64, out);
        for (size_t i = 0; i < n; i++) {
            trace_record *r = &out[i];
            ck_assert_int_gt((int64_t)r->seq, last);
            last = (int64_t)r->seq;
            ck_assert_uint_ge(r->seq, trace_persist_first_seq(p));
            ck_assert_uint_eq(r->pc_ns, PC0 + r->seq * 1000); /* its own record */
            for (size_t g = 0; g < trace_persist_gap_count(p); g++) {
                trace_gap gap = trace_persist_gap(p, g);
                ck_assert_msg(r->seq < gap.from_seq || r->seq > gap.to_seq,
                              "seq %llu returned inside gap %llu..%llu", (unsigned long long)r->seq,
                              (unsigned long long)gap.from_seq, (unsigned long long)gap.to_seq);
            }
            got++;
            trace_record_fini(r);
        }
        if (n == 0) {
            return got;
        }
        from = (uint64_t)last + 1;
    }
}

/* A segment file whose name lies about its first seq (renamed, or damaged by hand): the reopen
 * places what it can (block starts where that first seq puts them) and the reader returns
 * exactly the records the reopen counted, each once and where it belongs, never one before the
 * trace's first seq nor one in a gap. Named 256, the blocks from 256 on fit; named 100, none does
 * (the file is set aside whole, nothing is read from it). */
static void renamed_segment(uint64_t named, uint64_t want_records)
{
    trace_persist_config cfg = config(0);
    trace_persist *p = NULL;
    char id[TRACE_PERSIST_ID_MAX], seg[600], to[640], idx[600], idx_to[640];
    written_trace(&cfg, 1000, 40, id, seg, sizeof(seg));
    snprintf(idx, sizeof(idx), "%.*sidx", (int)(strlen(seg) - 3), seg);
    snprintf(to, sizeof(to), "%.*s%020llu.seg", (int)(strlen(seg) - 24), seg,
             (unsigned long long)named);
    snprintf(idx_to, sizeof(idx_to), "%.*s%020llu.idx", (int)(strlen(seg) - 24), seg,
             (unsigned long long)named);
    ck_assert_int_eq(rename(seg, to), 0);
    ck_assert_int_eq(rename(idx, idx_to), 0);
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    json_decref(m);
    ck_assert_uint_eq(trace_persist_records(p), want_records);
    ck_assert_uint_eq(read_all_checked(p), want_records);
    trace_persist_free(p);
    ck_assert_int_eq(access(to, F_OK), 0); /* (never deleted) */
}

START_TEST(test_renamed_segment_reads_as_reloaded)
{
    renamed_segment(256, 1000 - 256);
    renamed_segment(100, 0);
}

END_TEST

/* Damage in the middle of a segment of binary messages whose index is mostly gone (it is only
 * a hint): the scan for the next block start meets many bytes that look like a frame's header
 * (one in a couple of thousand, in random bytes); those whose head does not fit cost no CRC, so
 * the scan reaches the next block start, the damage is a gap of about a block, and nothing after
 * it is cut off the file. */
START_TEST(test_resync_through_binary_messages)
{
    trace_persist_config cfg = config((uint64_t)64 << 20);
    char id[TRACE_PERSIST_ID_MAX], seg[600], idx[600];
    trace_persist *p = created(&cfg, id);
    seg_path(p, 0, seg, sizeof(seg));
    uint32_t x = 12345;
    for (uint64_t seq = 0; seq < 16000; seq++) {
        trace_record r = make_rec(seq, 0);
        wamp_buf_unref(&r.wire);
        r.wire = wamp_buf_new(1000);
        unsigned char *d = wamp_buf_reserve(&r.wire, 1000);
        for (size_t i = 0; i < 1000; i++) {
            x = x * 1103515245u + 12345u;
            d[i] = (unsigned char)(x >> 16);
        }
        wamp_buf_commit(r.wire, 1000);
        r.ser_bytes[WAMP_SER_JSON] = 0;
        r.ser_bytes[WAMP_SER_MSGPACK] = 1000;
        r.wire_ser = WAMP_SER_MSGPACK;
        ck_assert_int_eq(trace_persist_append(p, &r), WAMP_OK);
        trace_record_fini(&r);
    }
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    trace_persist_free(p);
    off_t whole = file_size(seg);
    int fd = open(seg, O_RDWR);
    ck_assert_int_ge(fd, 0);
    unsigned char b[3] = {0x55, 0xaa, 0x55};
    ck_assert_int_eq(pwrite(fd, b, sizeof(b), whole / 2), (ssize_t)sizeof(b));
    close(fd);
    snprintf(idx, sizeof(idx), "%.*sidx", (int)(strlen(seg) - 3), seg);
    ck_assert_int_eq(truncate(idx, file_size(idx) / 4 / 16 * 16), 0);
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    json_decref(m);
    ck_assert_uint_eq(trace_persist_next_seq(p), 16000);
    ck_assert_uint_ge(trace_persist_records(p), 16000 - 2 * TRACE_PERSIST_INDEX_EVERY);
    ck_assert_uint_eq(trace_persist_gap_count(p), 1);
    ck_assert_int_eq(file_size(seg), whole);
    trace_persist_free(p);
}

END_TEST

/* A disk that refuses the first index write (a write of whole 16-byte entries, under 100 bytes:
 * a batch's records are far larger) once armed, as a full disk may. */
static atomic_int idx_write_fails;

static ssize_t failing_idx_write(void *ctx, int fd, const void *buf, size_t n)
{
    (void)ctx;
    if (n % 16 == 0 && n < 100 && atomic_load(&idx_write_fails) > 0) {
        atomic_fetch_sub(&idx_write_fails, 1);
        errno = ENOSPC;
        return -1;
    }
    return write(fd, buf, n);
}

/* A batch whose records are written but whose index entries are not: the batch failed, its
 * records are the io_error gap, and they are not in the segment either, so a restart finds the
 * same records and the same gap. */
START_TEST(test_index_write_error_is_the_gap)
{
    static const trace_persist_io io = {.write = failing_idx_write};
    trace_persist_config cfg = config(0);
    cfg.io = &io;
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    append_n(p, 0, 300, 20);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    append_n(p, 300, 300, 20);
    atomic_store(&idx_write_fails, 1);
    (void)trace_persist_flush(p, true, PC0 + SEC);
    ck_assert_int_eq(atomic_load(&idx_write_fails), 0);
    trace_record out[1];
    (void)trace_persist_read(p, 0, 1, 1, out); /* (the error is seen) */
    trace_record_fini(&out[0]);
    uint64_t records = trace_persist_records(p);
    size_t gaps = trace_persist_gap_count(p);
    ck_assert_uint_eq(gaps, 1);
    trace_gap before = trace_persist_gap(p, 0);
    ck_assert_str_eq(before.reason, TRACE_GAP_IO_ERROR);
    ck_assert_uint_eq(read_all_checked(p), records);
    (void)trace_persist_seal(p);
    trace_persist_free(p);
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    json_decref(m);
    ck_assert_uint_eq(trace_persist_records(p), records);
    ck_assert_uint_eq(trace_persist_gap_count(p), 1);
    trace_gap after = trace_persist_gap(p, 0);
    ck_assert_uint_eq(after.from_seq, before.from_seq);
    ck_assert_uint_eq(after.to_seq, before.to_seq);
    ck_assert_uint_eq(read_all_checked(p), records);
    trace_persist_free(p);
}

END_TEST

START_TEST(test_truncated_segment_names_seg)
{
    /* Issue 23, 1: the warning about a truncated segment named its .idx file. */
    trace_persist_config cfg = config(0);
    trace_persist *p = NULL;
    char id[TRACE_PERSIST_ID_MAX], seg[600];
    written_trace(&cfg, 500, ALONE_WIRE, id, seg, sizeof(seg));
    ck_assert_int_eq(truncate(seg, file_size(seg) - 11), 0);
    json_t *m = NULL;
    char note[512] = "";
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, note, sizeof(note)), WAMP_OK);
    ck_assert_msg(strstr(note, ".seg") && !strstr(note, ".idx"), "note: %s", note);
    ck_assert_uint_eq(trace_persist_records(p), 499);
    trace_persist_free(p);
}

END_TEST

START_TEST(test_corrupt_block_reads_on)
{
    /* One segment, damage inside its third block: the gap runs from the damaged record to the
     * next block start, and reading goes on there (records counted = records read). */
    trace_persist_config cfg = config(0);
    trace_persist *p = NULL;
    char id[TRACE_PERSIST_ID_MAX], seg[600];
    written_trace(&cfg, 2000, 30, id, seg, sizeof(seg));
    off_t size = file_size(seg);
    int fd = open(seg, O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "\xff\xff\xff", 3, size * 5 / 16), 3);
    close(fd);
    json_t *m = NULL;
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, NULL, 0), WAMP_OK);
    ck_assert_uint_eq(trace_persist_gap_count(p), 1);
    trace_gap g = trace_persist_gap(p, 0);
    ck_assert_str_eq(g.reason, TRACE_GAP_CORRUPT);
    ck_assert_uint_eq((g.to_seq + 1) % TRACE_PERSIST_INDEX_EVERY, 0);
    ck_assert_uint_gt(g.to_seq, g.from_seq);
    ck_assert_str_eq(g.file, "00000000000000000000.seg");
    ck_assert_uint_eq(trace_persist_records(p), 2000 - (g.to_seq - g.from_seq + 1));
    trace_record *out = calloc(2000, sizeof(*out));
    size_t n = trace_persist_read(p, 0, UINT64_MAX, 2000, out);
    ck_assert_uint_eq(n, trace_persist_records(p));
    for (size_t i = 0; i < n; i++) {
        uint64_t want = i < g.from_seq ? i : i + (g.to_seq - g.from_seq + 1);
        assert_same(&out[i], want, 30);
        trace_record_fini(&out[i]);
    }
    /* A read that starts inside the gap starts after it. */
    n = trace_persist_read(p, g.from_seq + 1, UINT64_MAX, 5, out);
    ck_assert_uint_eq(n, 5);
    ck_assert_uint_eq(out[0].seq, g.to_seq + 1);
    for (size_t i = 0; i < n; i++) {
        trace_record_fini(&out[i]);
    }
    free(out);
    trace_persist_free(p);
}

END_TEST

/* --- records that refer to their block's last correlation UUID and message bytes ------------ */

/* An RPC's records as the router makes them, in pairs: a CALL received, then its INVOCATION
 * sent, with the same correlation UUID (one generator's: a fixed first half, the second half
 * new for each action; every tenth action's first half another one) and the same arguments at
 * the end of their bytes. Now and then: no UUID, an INVOCATION whose bytes are only the end of
 * the CALL's or share no end with them, no bytes, a MessagePack size (not a short record), a ts
 * that did not move as pc did, a drop reason. peers: three shared peers. */
#define ACT_RECS 600
#define ACT_SEG  20000

static trace_record act_rec(uint64_t seq, trace_peer *const peers[3], trace_str *uri)
{
    static const uint8_t prefix[2][8] = {{0x6c, 0x1f, 0x93, 0x0a, 0x55, 0xe2, 0x47, 0x18},
                                         {0x02, 0xb7, 0x5d, 0x31, 0xc9, 0x80, 0x4e, 0x66}};
    uint64_t k = seq / 2;
    bool call = seq % 2 == 0;
    trace_record r;
    memset(&r, 0, sizeof(r));
    r.seq = seq;
    r.pc_ns = PC0 + seq * 700;
    r.ts_ns = TS0 + seq * 700 + (seq % 17 == 9 ? 3 : 0);
    r.peer = trace_peer_ref(peers[seq % 3]);
    r.uri = trace_str_ref(uri);
    r.dir = call ? TRACE_RX : TRACE_TX;
    r.msg_type = call ? 48 : 68;
    r.wire_ser = WAMP_SER_JSON;
    if (seq % 9 != 4) {
        r.flags = TRACE_CORR_HAS | (call ? TRACE_CORR_ANCHOR : TRACE_CORR_LAST);
        uint64_t z = (k + 1) * UINT64_C(0x9e3779b97f4a7c15);
        z = (z ^ (z >> 31)) * UINT64_C(0xbf58476d1ce4e5b9);
        memcpy(r.corr, prefix[k % 10 == 7], 8);
        for (int i = 0; i < 8; i++) {
            r.corr[8 + i] = (uint8_t)(z >> (8 * i));
        }
        r.corr[8] = (uint8_t)((r.corr[8] & 0x3fu) | 0x80u);
    }
    char args[80], text[160];
    snprintf(args, sizeof(args), "[\"p%llu-%.*s\"]]", (unsigned long long)k, (int)(k % 40),
             "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
    if (call) {
        snprintf(text, sizeof(text), "[48, %llu, {}, \"com.example.proc\", %s",
                 (unsigned long long)k, args);
    } else if (k % 11 == 6) {
        snprintf(text, sizeof(text), "%s", args + 2); /* all of it the CALL's end */
    } else if (k % 13 == 5) {
        snprintf(text, sizeof(text), "[68, %llu, 9, {}]", (unsigned long long)k + 7);
    } else {
        snprintf(text, sizeof(text), "[68, %llu, 9, {}, %s", (unsigned long long)k + 7, args);
    }
    size_t n = strlen(text);
    r.ser_bytes[WAMP_SER_JSON] = (uint32_t)n;
    if (seq % 10 == 2) {
        r.ser_bytes[WAMP_SER_MSGPACK] = (uint32_t)n - 3;
    }
    if (seq % 31 != 30) {
        r.wire = wamp_buf_new_copy(text, n);
    }
    r.dropped = seq % 23 == 6 ? "queue_full" : NULL;
    return r;
}

/* The shared peers and URI of act_rec() (references: act_env_fini() drops them). */
typedef struct act_env {
    trace_peer *peers[3];
    trace_str *uri;
} act_env;

static void act_env_init(act_env *e)
{
    static const char *const authids[3] = {"bob", "carol", NULL};
    for (int i = 0; i < 3; i++) {
        e->peers[i] = trace_peer_new(2000 + (uint64_t)i, "realm1", authids[i], "user");
        ck_assert_ptr_nonnull(e->peers[i]);
    }
    e->uri = trace_str_new("com.example.proc");
    ck_assert_ptr_nonnull(e->uri);
}

static void act_env_fini(act_env *e)
{
    for (int i = 0; i < 3; i++) {
        trace_peer_unref(&e->peers[i]);
    }
    trace_str_unref(&e->uri);
}

/* Appends act_rec() records from..to-1 to p. */
static void act_append(trace_persist *p, const act_env *e, uint64_t from, uint64_t to)
{
    for (uint64_t s = from; s < to; s++) {
        trace_record r = act_rec(s, e->peers, e->uri);
        ck_assert_int_eq(trace_persist_append(p, &r), WAMP_OK);
        trace_record_fini(&r);
    }
}

/* Reads [from, to) and checks it is act_rec() from..to-1. */
static void act_check(trace_persist *p, const act_env *e, uint64_t from, uint64_t to)
{
    size_t want = (size_t)(to - from);
    trace_record *out = calloc(want + 1, sizeof(*out));
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(trace_persist_read(p, from, to, want + 1, out), want);
    for (size_t i = 0; i < want; i++) {
        trace_record r = act_rec(from + i, e->peers, e->uri);
        assert_equal(&out[i], &r);
        trace_record_fini(&r);
        trace_record_fini(&out[i]);
    }
    free(out);
}

/* Traces persisted in format version 6 (tests/data/persist_v6, see its README.md: act_rec()
 * records, UUIDs and message bytes in full) are still read: every record, from a seek into a
 * block, across the segments' edges, before and after the cut a reopen would make. */
START_TEST(test_v6_segments_still_read)
{
    static const char *const files[] = {"00000000000000000000.seg",
                                        "00000000000000000000.idx",
                                        "00000000000000000263.seg",
                                        "00000000000000000263.idx",
                                        "00000000000000000519.seg",
                                        "00000000000000000519.idx",
                                        "meta.json"};
    const char *id = "01700000000000000000";
    install_fixture("persist_v6", id, files, sizeof(files) / sizeof(files[0]));
    act_env e;
    act_env_init(&e);
    trace_persist_config cfg = config(ACT_SEG);
    trace_persist *p = NULL;
    json_t *m = NULL;
    char note[256] = "";
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, note, sizeof(note)), WAMP_OK);
    ck_assert_msg(note[0] == '\0', "nothing is cut: %s", note);
    ck_assert_str_eq(json_string_value(json_object_get(m, "id")), "v6-fixture");
    json_decref(m);
    ck_assert_uint_eq(trace_persist_segments(p), 3);
    ck_assert_uint_eq(trace_persist_next_seq(p), ACT_RECS);
    ck_assert_uint_eq(trace_persist_gap_count(p), 0);
    act_check(p, &e, 0, ACT_RECS);
    act_check(p, &e, 300, 310);
    act_check(p, &e, 250, 270);
    trace_persist_free(p);
    act_env_fini(&e);
}

END_TEST

/* The segment bytes of tests/data/persist_v6: act_rec() 0..ACT_RECS - 1 with every UUID and
 * message bytes in full. */
#define ACT_V6_BYTES 46423u

/* Format 7: act_rec() records written, their UUIDs as the second half of the block's last one's
 * and their bytes as a head before the end of the block's base bytes where they can be, in packs
 * (but for each block's first), read back as appended: from the write buffer, from the files,
 * from seeks to a block start and into a block (into packs), in pages of 7, after a reopen; and
 * again with the write buffer handed over every 37 records, so that base bytes left in a buffer
 * handed over are never referred to. They take at least 24 bytes a record fewer than in format 6
 * (31885 in all, against 46423; 36043 without packs). */
START_TEST(test_v7_refs_round_trip)
{
    act_env e;
    act_env_init(&e);
    trace_persist_config cfg = config(ACT_SEG);
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    act_append(p, &e, 0, ACT_RECS);
    act_check(p, &e, 0, ACT_RECS); /* the last segment from the write buffer */
    uint64_t bytes = trace_persist_bytes(p);
    ck_assert_msg(bytes <= ACT_V6_BYTES - ACT_RECS * 24, "%llu bytes", (unsigned long long)bytes);
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    act_check(p, &e, 0, ACT_RECS);
    p = reopened(p, &cfg, id);
    ck_assert_uint_eq(trace_persist_next_seq(p), ACT_RECS);
    ck_assert_uint_eq(trace_persist_records(p), ACT_RECS);
    ck_assert_uint_eq(trace_persist_gap_count(p), 0);
    ck_assert_uint_eq(trace_persist_bytes(p), bytes);
    act_check(p, &e, 0, ACT_RECS);
    act_check(p, &e, 256, 300);
    act_check(p, &e, 301, 320);
    /* Pages of 7 records: reading stops inside packs and goes on there. */
    for (uint64_t s = 0; s < ACT_RECS; s += 7) {
        act_check(p, &e, s, s + 7 < ACT_RECS ? s + 7 : ACT_RECS);
    }
    ck_assert(trace_persist_remove(p));

    p = created(&cfg, id);
    for (uint64_t s = 0; s < ACT_RECS; s += 37) {
        act_append(p, &e, s, s + 37 < ACT_RECS ? s + 37 : ACT_RECS);
        ck_assert_int_eq(trace_persist_flush(p, false, PC0), WAMP_OK);
    }
    act_check(p, &e, 0, ACT_RECS);
    p = reopened(p, &cfg, id);
    ck_assert_uint_eq(trace_persist_records(p), ACT_RECS);
    act_check(p, &e, 0, ACT_RECS);
    trace_persist_free(p);
    act_env_fini(&e);
}

END_TEST

/* Crafted format-7 records after CRAFT_GOOD make_rec() records (whose bytes all end with the
 * block's base bytes, the first record's): one read back as written, those that refer to what
 * their block does not hold found damaged. */
START_TEST(test_v7_crafted_refs)
{
    /* C_CORR_HALF | C_WIRE_END, type 16, rx JSON short without TRACE_CORR_HAS; seq + 1, pc +
     * 1000 (zigzag 2000); the UUID's second half; the last 5 bytes of the base bytes after
     * 2 bytes "ab". */
    static const unsigned char good[] = {0x60, 16,   0x84, 1,    0xd0, 0x0f, 0xa0, 0xa1, 0xa2,
                                         0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 5,    2,    'a',  'b'};
    trace_record got[CRAFT_GOOD + 1];
    trace_persist *p = with_crafted(good, sizeof(good), CRAFT_GOOD + 1, CRAFT_GOOD + 1, got);
    const trace_record *r = &got[CRAFT_GOOD];
    const trace_record *prev = &got[CRAFT_GOOD - 1];
    ck_assert_uint_eq(r->seq, CRAFT_GOOD);
    ck_assert_uint_eq(r->ts_ns, prev->ts_ns + 1000);
    ck_assert_uint_eq(r->flags, TRACE_CORR_HAS);
    ck_assert_mem_eq(r->corr, prev->corr, 8);
    ck_assert_mem_eq(r->corr + 8, good + 6, 8);
    ck_assert_uint_eq(r->ser_bytes[WAMP_SER_JSON], 7);
    ck_assert_uint_eq(wamp_buf_len(r->wire), 7);
    ck_assert_mem_eq(wamp_buf_cdata(r->wire), "ab     ", 7);
    for (size_t i = 0; i < CRAFT_GOOD + 1; i++) {
        trace_record_fini(&got[i]);
    }
    trace_persist_free(p);
    /* A block's first record (no UUID, no base bytes there yet) with a UUID's second half and
     * with bytes ending as the base bytes do; an end longer than the base bytes. */
    static const unsigned char half_opens[] = {0x41, 16, 0x04, 10, 1, 1, 0, 0, 0,
                                               1,    2,  3,    4,  5, 6, 7, 8};
    static const unsigned char end_opens[] = {0x21, 16, 0x04, 10, 1, 1, 0, 2, 0, 5, 2, 'a', 'b'};
    static const unsigned char end_long[] = {0x20, 16, 0x84, 1, 0xd0, 0x0f, 0x7f, 2, 'a', 'b'};
    crafted_counts(half_opens, sizeof(half_opens), CRAFT_GOOD, CRAFT_GOOD);
    crafted_counts(end_opens, sizeof(end_opens), CRAFT_GOOD, CRAFT_GOOD);
    crafted_counts(end_long, sizeof(end_long), CRAFT_GOOD, CRAFT_GOOD);
}

END_TEST

/* A pack (format 7) torn by a crash: the trace ends before it, at the hand-over that started it
 * (a pack never spans one), with the records before it all there. */
START_TEST(test_torn_pack_cut)
{
    act_env e;
    act_env_init(&e);
    trace_persist_config cfg = config(0);
    char id[TRACE_PERSIST_ID_MAX], seg[600];
    trace_persist *p = created(&cfg, id);
    seg_path(p, 0, seg, sizeof(seg));
    act_append(p, &e, 0, 100);
    ck_assert_int_eq(trace_persist_flush(p, false, PC0), WAMP_OK);
    act_append(p, &e, 100, 130); /* one pack: about 1.5 KiB */
    ck_assert_int_eq(trace_persist_flush(p, true, PC0), WAMP_OK);
    trace_persist_free(p);
    ck_assert_int_eq(truncate(seg, file_size(seg) - 3), 0);
    json_t *m = NULL;
    char note[256] = "";
    ck_assert_int_eq(trace_persist_open(&cfg, id, &p, &m, note, sizeof(note)), WAMP_OK);
    json_decref(m);
    ck_assert_msg(strstr(note, "cut") != NULL, "note: %s", note);
    ck_assert_uint_eq(trace_persist_next_seq(p), 100);
    act_check(p, &e, 0, 100);
    trace_persist_free(p);
    act_env_fini(&e);
}

END_TEST

/* Crafted packs after CRAFT_GOOD make_rec() records: two short records read back; a pack
 * holding a block's first record, an empty one, one whose records skip a seq and one whose
 * record runs past its end are damage. */
START_TEST(test_pack_crafted)
{
#define SHORT_ABC(seq_delta) 0x10, 16, 0x84, seq_delta, 0xd0, 0x0f, 3, 'a', 'b', 'c'
    static const unsigned char good[] = {0x84, 10, SHORT_ABC(1), 10, SHORT_ABC(1)};
    trace_record got[CRAFT_GOOD + 2];
    trace_persist *p = with_crafted(good, sizeof(good), CRAFT_GOOD + 2, CRAFT_GOOD + 2, got);
    for (size_t i = CRAFT_GOOD; i < CRAFT_GOOD + 2; i++) {
        ck_assert_uint_eq(got[i].seq, i);
        ck_assert_uint_eq(got[i].pc_ns, got[i - 1].pc_ns + 1000);
        ck_assert_mem_eq(wamp_buf_cdata(got[i].wire), "abc", 3);
    }
    for (size_t i = 0; i < CRAFT_GOOD + 2; i++) {
        trace_record_fini(&got[i]);
    }
    trace_persist_free(p);
    static const unsigned char opens[] = {0x84, 10,   0x11, 16,  0x84, 1,
                                          0xd0, 0x0f, 3,    'a', 'b',  'c'};
    static const unsigned char empty[] = {0x84};
    static const unsigned char skips[] = {0x84, 10, SHORT_ABC(1), 10, SHORT_ABC(2)};
    static const unsigned char overrun[] = {0x84, 11, SHORT_ABC(1)};
#undef SHORT_ABC
    crafted_counts(opens, sizeof(opens), CRAFT_GOOD, CRAFT_GOOD);
    crafted_counts(empty, sizeof(empty), CRAFT_GOOD, CRAFT_GOOD);
    crafted_counts(skips, sizeof(skips), CRAFT_GOOD, CRAFT_GOOD);
    crafted_counts(overrun, sizeof(overrun), CRAFT_GOOD, CRAFT_GOOD);
}

END_TEST

/* Pack entries of 128 bytes or more (a two-byte length, the body moved up for it), one of them
 * holding the block's base bytes that the next record's bytes end with: read back as appended,
 * before and after a reopen. */
START_TEST(test_pack_long_entries)
{
    trace_persist_config cfg = config(0);
    char id[TRACE_PERSIST_ID_MAX];
    trace_persist *p = created(&cfg, id);
    char text[400];
    trace_record want[4];
    for (uint64_t s = 0; s < 4; s++) {
        trace_record *r = &want[s];
        memset(r, 0, sizeof(*r));
        r->seq = s;
        r->pc_ns = PC0 + s * 1000;
        r->ts_ns = TS0 + s * 1000;
        r->dir = TRACE_RX;
        r->msg_type = 16;
        r->wire_ser = WAMP_SER_JSON;
        /* 0: one byte; 1: 300 bytes sharing no end with it (the new base), ending with '!';
         * 2: 299 bytes, the base's but for their head and the '!' (no common end: the new
         * base; one seen a byte off would have 249); 3: its 249-byte end after another head. */
        size_t n = s == 0 ? 1 : s == 1 ? 300 : 299;
        memset(text, 'z', n);
        memset(text, (int)('a' + s), s == 0 ? 1 : 50);
        if (s == 1) {
            text[n - 1] = '!';
        }
        r->wire = wamp_buf_new_copy(text, n);
        r->ser_bytes[WAMP_SER_JSON] = (uint32_t)n;
        ck_assert_int_eq(trace_persist_append(p, r), WAMP_OK);
    }
    for (int k = 0; k < 2; k++) {
        trace_record out[5];
        ck_assert_uint_eq(trace_persist_read(p, 0, UINT64_MAX, 5, out), 4);
        for (size_t i = 0; i < 4; i++) {
            assert_equal(&out[i], &want[i]);
            trace_record_fini(&out[i]);
        }
        p = reopened(p, &cfg, id);
    }
    trace_persist_free(p);
    for (size_t i = 0; i < 4; i++) {
        trace_record_fini(&want[i]);
    }
}

END_TEST

static void setup(void)
{
    make_tmp();
}

static void teardown(void)
{
    cleanup_tmp();
}

static Suite *suite(void)
{
    Suite *s = suite_create("trace_persist");
    TCase *c = tcase_create("segments");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_set_timeout(c, 60);
    tcase_add_test(c, test_crc32c);
    tcase_add_test(c, test_write_read_flushed_and_buffered);
    tcase_add_test(c, test_reload_after_clean_close);
    tcase_add_test(c, test_torn_tail_cut);
    tcase_add_test(c, test_index_seek_and_rotation);
    tcase_add_test(c, test_retention_by_bytes);
    tcase_add_test(c, test_retention_by_age);
    tcase_add_test(c, test_short_records);
    tcase_add_test(c, test_writer_thread_is_nicer);
    tcase_add_test(c, test_io_error_directory_gone);
    tcase_add_test(c, test_io_error_file_size_limit);
    tcase_add_test(c, test_writer_backlog_bounded);
    tcase_add_test(c, test_writer_leaves_page_cache);
    tcase_add_test(c, test_fsync_latency_and_records_written);
    tcase_add_test(c, test_compact_fan_out);
    tcase_add_test(c, test_compact_crafted_repeats);
    tcase_add_test(c, test_compact_crafted_runs);
    tcase_add_test(c, test_append_run_blocks_and_index);
    tcase_add_test(c, test_run_starts_at_full_buffer);
    tcase_add_test(c, test_run_memo_across_fan_outs);
    tcase_add_test(c, test_v1_segments_still_read);
    tcase_add_test(c, test_truncated_segment_names_seg);
    tcase_add_test(c, test_renamed_segment_reads_as_reloaded);
    tcase_add_test(c, test_resync_through_binary_messages);
    tcase_add_test(c, test_index_write_error_is_the_gap);
    tcase_add_test(c, test_corrupt_block_reads_on);
    tcase_add_test(c, test_v6_segments_still_read);
    tcase_add_test(c, test_v7_refs_round_trip);
    tcase_add_test(c, test_v7_crafted_refs);
    tcase_add_test(c, test_torn_pack_cut);
    tcase_add_test(c, test_pack_crafted);
    tcase_add_test(c, test_pack_long_entries);
    suite_add_tcase(s, c);
    TCase *t = tcase_create("traces");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_trace_records_in_files_only);
    tcase_add_test(t, test_restart_shutdown_and_crash);
    tcase_add_test(t, test_reload_reserved_id_renamed);
    tcase_add_test(t, test_trace_io_error_stops_only_that_trace);
    tcase_add_test(t, test_reload_damage_is_gaps);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
