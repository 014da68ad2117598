/* trace_persist.c: segment files, CRC-32C framing, sparse index, recovery, retention. */
#include "trace_persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_lock.h"

#define NS_PER_MS 1000000ull

/* Record framing: u32 length word + u32 CRC-32C of the body. The length word is the body's
 * length, with LEN_COMPACT set for a compact (v2) body. */
#define HDR_LEN     8u
#define LEN_COMPACT 0x80000000u
/* v1 body (written until session 11, still read): seq, pc, ts, session_id (4 x u64), ser_bytes
 * (3 x u32), dir, msg_type, wire_ser, flags, has_peer (5 x u8), corr (16). Then 5 strings and
 * the message bytes, each as u32 length (NIL_LEN = absent) + bytes. */
#define FIXED_LEN (4u * 8u + PERSIST_SERS * 4u + 5u + TRACE_UUID_LEN)
#define NIL_LEN   UINT32_MAX
/* v2 (compact) body, written since session 11. Records are grouped in blocks: a block starts at
 * each index entry (a segment's first record, then every TRACE_PERSIST_INDEX_EVERY seqs), so a
 * reader that seeks to an index entry starts a block. Within a block, a peer, a URI, the
 * correlation UUID and the message bytes are written once and then referred to:
 *   u8 what (C_* bits), u8 msg_type, u8 dir | wire_ser << 2 | flags << 4 (| C2_SHORT),
 *   varint seq, pc, ts: absolute in the block's first record (C_BLOCK), else the difference from
 *     the previous record (seq: plain; pc, ts: zigzag, an action record has its anchor's times);
 *     no ts in a short record (C2_SHORT, session 16),
 *   varint ser_bytes[3] (not in a short record),
 *   C_PEER: varint i: the block's i-th peer; i = number of peers so far: a new one follows
 *     (varint session_id, realm, authid, authrole as strings),
 *   C_URI: the same with one string,
 *   C_DROPPED: string,
 *   flags & TRACE_CORR_HAS, without C_CORR_SAME: 16 bytes (C_CORR_SAME: the block's last UUID),
 *   C_WIRE, without C_WIRE_SAME: varint length + bytes (C_WIRE_SAME: the block's last message
 *     bytes: one EVENT sent to many subscribers is one buffer).
 * A C_REPEAT record (session 12) is the block's previous record again but for its peer and the
 * next seq: one EVENT sent to another subscriber. Its body is only u8 what (C_REPEAT, and C_PEER
 * as above) and, with C_PEER, the peer as above. msg_type, the dir/ser/flags byte, pc, ts,
 * ser_bytes, the URI, the correlation and the message bytes are the previous record's; it has no
 * drop reason. Never a block's first record.
 * A run (session 15: C_REPEAT | C_PEER | C_RUN) is as many C_REPEAT records in one frame: u8
 * what, u16 count (little endian, >= 1), then count entries, one per seq: varint i << 1 | last,
 * i the peer as above (a definition follows when i is new) and last set when that record also
 * completes its action (TRACE_CORR_LAST added to the previous record's flags: the last EVENT of
 * a fan-out). An EVENT fanned out to n subscribers is one full record and one run of n - 1
 * entries (about a byte each) instead of n - 1 framed records of ten bytes or more. The writer
 * grows the run in place while it is the last record of its buffer. Never a block's first
 * record.
 * Strings are varint length + 1 (0 = NULL) + bytes. Varints are LEB128 (7 bits a byte, low
 * first). The router's pub/sub benchmark averaged 43 bytes a record (an EVENT repeating its
 * block's buffer, peer and UUID: ~21) against 207 for the first format, before C_REPEAT. */
#define C_BLOCK     0x01u
#define C_PEER      0x02u
#define C_URI       0x04u
#define C_DROPPED   0x08u
#define C_WIRE      0x10u
#define C_WIRE_SAME 0x20u
#define C_CORR_SAME 0x40u
#define C_REPEAT    0x80u
/* In a C_REPEAT's what: a run (session 15). A repeat has no drop reason of its own, so the bit
 * is free there. */
#define C_RUN      C_DROPPED
#define C_RUN_HEAD 3u      /* what, u16 count */
#define C_RUN_MAX  0xffffu /* repeats a run holds at most */
#define C_MIN_LEN  1u      /* a C_REPEAT record without a peer */
#define C_FULL_MIN 9u      /* any other: 3 bytes and 6 one-byte varints */
/* In a full record's third byte (dir | wire_ser << 2 | flags << 4), whose top bit was free
 * (session 16): the record is short. It has no ts varint (ts moved by as much as pc did, as it
 * does unless the wall clock was set) and no ser_bytes varints (the length of its bytes in
 * wire_ser is its only size, all others 0): every message the router receives, and every one it
 * sends in one serializer. Only for a record with bytes of its own (C_WIRE without C_WIRE_SAME),
 * never a block's first. Four to six bytes less a record, and as many varints less to write. */
#define C2_SHORT    0x80u
#define C_SHORT_MIN 6u /* 3 bytes, seq, pc and the bytes' length */
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
/* Largest body accepted when reading (a bad length must not make us allocate gigabytes). */
#define BODY_MAX  ((uint32_t)256 * 1024 * 1024)
#define IDX_ENTRY 16u
/* pread window of a reader. */
#define READ_CHUNK (256u * 1024u)

/* The record layout stores ser_bytes[0..2] (index wamp_ser: JSON and MessagePack); a CBOR size
 * (ser_bytes[3]) survives only in a short record, where it is the record's own length. */
#define PERSIST_SERS 3
_Static_assert(WAMP_SER_COUNT == PERSIST_SERS + 1, "ser_bytes slots beyond the stored ones");

static const uint32_t crc32c_table[256] = {
        0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu, 0x26a1e7e8u,
        0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu, 0x4d43cfd0u, 0xbf284cd3u,
        0xac78bf27u, 0x5e133c24u, 0x105ec76fu, 0xe235446cu, 0xf165b798u, 0x030e349bu, 0xd7c45070u,
        0x25afd373u, 0x36ff2087u, 0xc494a384u, 0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u,
        0x5d1d08bfu, 0xaf768bbcu, 0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u,
        0x33ed7d2au, 0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u, 0xaa64d611u, 0x580f5512u,
        0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau, 0x30e349b1u,
        0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu, 0x1642ae59u, 0xe4292d5au,
        0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au, 0x7da08661u, 0x8fcb0562u, 0x9c9bf696u,
        0x6ef07595u, 0x417b1dbcu, 0xb3109ebfu, 0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u,
        0x67dafa54u, 0x95b17957u, 0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu,
        0xfe53516fu, 0xed03a29bu, 0x1f682198u, 0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
        0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu, 0x3ac7f2ebu,
        0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u, 0x61c69362u, 0x93ad1061u,
        0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu, 0x4767748au, 0xb50cf789u, 0xeb1fcbadu,
        0x197448aeu, 0x0a24bb5au, 0xf84f3859u, 0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u,
        0x7198540du, 0x83f3d70eu, 0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u,
        0xa55230e6u, 0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu,
        0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu, 0x456cac67u,
        0xb7072f64u, 0xa457dc90u, 0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u, 0xe9141340u, 0x1b7f9043u,
        0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu, 0x92a8fc17u, 0x60c37f14u, 0x73938ce0u,
        0x81f80fe3u, 0x55326b08u, 0xa759e80bu, 0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu,
        0xf94ad42fu, 0x0b21572cu, 0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u, 0xa24bb5a6u,
        0x502036a5u, 0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
        0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u, 0x0e330a81u,
        0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du, 0x758fe5d6u, 0x87e466d5u,
        0x94b49521u, 0x66df1622u, 0x38cc2a06u, 0xcaa7a905u, 0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u,
        0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu, 0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u,
        0x0417b1dbu, 0xf67c32d8u, 0xe52cc12cu, 0x1747422fu, 0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu,
        0x5a048dffu, 0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
        0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u, 0x590ab964u,
        0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u, 0x7fab5e8cu, 0x8dc0dd8fu,
        0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu, 0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u,
        0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u, 0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u,
        0x4f48173du, 0xbd23943eu, 0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au,
        0xc69f7b69u, 0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
        0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_HW 1
#include <immintrin.h>

/* SSE 4.2 has an instruction for exactly this polynomial: 8 bytes per instruction instead of a
 * table lookup per byte (the table loop cost ~3 ns per byte, most of a persisted record's
 * capture cost; bench-capture --persist). Little-endian loads match the reflected CRC. */
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const unsigned char *p,
                                                            size_t len)
{
    uint64_t c = crc;
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--) {
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    }
    return c32;
}

/* Three lanes at once. crc32 has a latency of 3 cycles but starts one per cycle, so the loop
 * above, one dependent chain, uses a third of it: a 200-byte record took ~26 ns, a tenth of a
 * persisted record's capture cost. Here a stretch of 3 * L bytes is cut into three lanes of L
 * bytes, computed side by side (the second and third from 0), then joined: the register after
 * A||B is shift(crc(A), |B|) ^ crc(B), where shift() carries a register over |B| zero bytes.
 * That shift is linear, and one carry-less multiply by x^(8n-33) mod P (bit-reflected, like the
 * register) followed by a crc32 of the 64-bit product computes it (checked against the table
 * for every register bit when the constants were made, and by check_trace_persist's test_crc32c
 * against a bit-by-bit reference at every length up to 1100). L = 64 while the data lasts, then
 * once L = 32: ~17 ns for 200 bytes, ~11 ns for 100. */
#define CRC_X_8N_33_32  0xba4fc28eu /* x^(8*32-33) mod P: shift over 32 bytes */
#define CRC_X_8N_33_64  0x9e4addf8u /* over 64 bytes */
#define CRC_X_8N_33_128 0x0d3b6092u /* over 128 bytes */

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc32c_shift(uint32_t c, uint32_t k)
{
    __m128i t = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)c), _mm_cvtsi32_si128((int)k), 0);
    return (uint32_t)__builtin_ia32_crc32di(0, (unsigned long long)_mm_cvtsi128_si64(t));
}

/* One stretch of 3 * lane bytes from register c; k1, k2 shift over lane and 2 * lane bytes. */
__attribute__((target("sse4.2,pclmul"))) static uint32_t
crc32c_lanes(uint32_t c, const unsigned char *p, size_t lane, uint32_t k1, uint32_t k2)
{
    uint64_t a = c, b = 0, d = 0;
    for (size_t i = 0; i < lane; i += 8) {
        uint64_t va, vb, vd;
        memcpy(&va, p + i, 8);
        memcpy(&vb, p + lane + i, 8);
        memcpy(&vd, p + 2 * lane + i, 8);
        a = __builtin_ia32_crc32di(a, va);
        b = __builtin_ia32_crc32di(b, vb);
        d = __builtin_ia32_crc32di(d, vd);
    }
    return crc32c_shift((uint32_t)a, k2) ^ crc32c_shift((uint32_t)b, k1) ^ (uint32_t)d;
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t
crc32c_hw3(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len >= 3 * 64) {
        crc = crc32c_lanes(crc, p, 64, CRC_X_8N_33_64, CRC_X_8N_33_128);
        p += 3 * 64;
        len -= 3 * 64;
    }
    if (len >= 3 * 32) {
        crc = crc32c_lanes(crc, p, 32, CRC_X_8N_33_32, CRC_X_8N_33_64);
        p += 3 * 32;
        len -= 3 * 32;
    }
    return crc32c_hw(crc, p, len);
}
#endif

uint32_t trace_crc32c(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    crc = ~crc;
#ifdef CRC32C_HW
    if (__builtin_cpu_supports("sse4.2")) {
        if (len >= 3 * 32 && __builtin_cpu_supports("pclmul")) {
            return ~crc32c_hw3(crc, p, len);
        }
        return ~crc32c_hw(crc, p, len);
    }
#endif
    for (size_t i = 0; i < len; i++) {
        crc = crc32c_table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
    }
    return ~crc;
}

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
static uint64_t block_pos(const seg *s, uint64_t seq)
{
    return (seq - s->first_seq) % TRACE_PERSIST_INDEX_EVERY;
}

/* What the current block of compact records defined (the writer's and each reader's own
 * copy): references held on every entry. The scalars come first, the tables last: an append
 * reads and writes a few of the scalars and one table entry, and keeping those few in one or two
 * cache lines (not behind the 2 KiB peer table) saved a miss a record in the router's profile. */
typedef struct block {
    uint64_t seq, pc, ts;
    uint64_t prev_key; /* the previous record's trace_persist_rec.key (writer; 0 = none) */
    size_t n_peers;
    size_t n_uris;
    wamp_buf *wire;
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
} block;

static void block_reset(block *b)
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
    b->n_peers = b->n_uris = 0;
    b->has_corr = false;
    b->open = false;
    b->has_prev = false;
    b->prev_key = 0;
}

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
    uint64_t io_from;    /* first seq an I/O error kept out of the files; NO_SEQ if none */
    uint64_t lost_next;  /* seqs given out while the store could not take them end here */
    uint64_t handed_seq; /* the seqs below it were handed to the writer thread */
    uint64_t end_next;   /* a reopened trace: next_seq from its end file; 0 if none */
};

/* No such seq (trace_persist.io_from). */
#define NO_SEQ UINT64_MAX
/* The end file (trace_persist_seal()): allocated at creation, written in place at the end. */
#define END_FILE  "end"
#define END_ALLOC 4096u
#define END_LEN   32u /* magic, next_seq, durable_next, CRC-32C of the 28 bytes before it */
static const unsigned char end_magic[4] = {'W', 'S', 'E', '1'};

/* The next seq the files would hold (the segments' end). */
static uint64_t files_next(const trace_persist *p)
{
    return p->n_segs ? p->segs[p->n_segs - 1].next_seq : p->first_seq;
}

/* --- little-endian helpers ------------------------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 4); /* one store: the loop was four, twice a record */
#else
    for (int i = 0; i < 4; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
#endif
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
}

static void put16(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static uint32_t get16(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* LEB128: at most 10 bytes for a u64. */
#define VAR_MAX 10u

static unsigned char *put_var(unsigned char *d, uint64_t v)
{
    while (v >= 0x80u) {
        *d++ = (unsigned char)(v | 0x80u);
        v >>= 7;
    }
    *d++ = (unsigned char)v;
    return d;
}

/* Signed difference cur - prev as a small unsigned number (zigzag: 0, -1, 1, -2 -> 0, 1, 2, 3). */
static uint64_t zigzag(uint64_t cur, uint64_t prev)
{
    uint64_t d = cur - prev;
    return (d << 1) ^ (0u - (d >> 63));
}

static uint64_t unzigzag(uint64_t prev, uint64_t z)
{
    return prev + ((z >> 1) ^ (0u - (z & 1u)));
}

/* --- errors ------------------------------------------------------------------------------------
 */

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

static void seg_name(char *out, size_t n, uint64_t first_seq, const char *ext)
{
    snprintf(out, n, "%020" PRIu64 ".%s", first_seq, ext);
}

static char *path_join(const char *a, const char *b)
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
static int open_in(const char *dir, const char *name, int flags)
{
    char *path = path_join(dir, name);
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

static int io_fsync(const trace_persist_io *io, int fd)
{
    return io && io->fsync ? io->fsync(io->ctx, fd) : fsync(fd);
}

/* fsync(2) of a directory: a file's own fsync does not make its name (a new segment, a renamed
 * meta.json) survive a power loss. 0, or -1 with errno; EINVAL (a file system that cannot sync
 * directories) counts as done. */
static int sync_dir(const trace_persist_io *io, const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = io_fsync(io, fd) == 0 || errno == EINVAL ? 0 : -1;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static int unlink_in(const char *dir, const char *name)
{
    char *path = path_join(dir, name);
    if (!path) {
        return -1;
    }
    int rc = unlink(path);
    free(path);
    return rc;
}

/* Deletes a segment's two files (errors ignored: retention tries again with the next one). */
static void unlink_segment(const char *dir, uint64_t first_seq)
{
    char name[40];
    seg_name(name, sizeof(name), first_seq, "seg");
    (void)unlink_in(dir, name);
    seg_name(name, sizeof(name), first_seq, "idx");
    (void)unlink_in(dir, name);
}

/* Writes all n bytes; false with errno on failure (a partial write included). */
static bool write_all(const trace_persist_io *io, int fd, const void *data, size_t n)
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

/* --- the writer thread -------------------------------------------------------------------------
 * Each writable trace has one. The service thread only encodes records into a buffer; a full
 * buffer (TRACE_PERSIST_BUFFER_MAX), the tick's flush, an fsync that is due and the closing of a
 * rotated segment become jobs, executed in order here: CRC-32C of each record, write(2) of the
 * records and of the index entries, fsync(2), close(2), fsync of the directories. Before, these
 * ran on the service thread and took 25-30% of its time in a pub/sub run keeping everything,
 * part of it asleep in the kernel's dirty-page throttling (tests/bench/HISTORY.md, "the writer
 * thread").
 *
 * Ownership: a job owns its buffers; the fds of a rotated segment pass to its last job (JOB_CLOSE);
 * the active segment's fds stay the service thread's, the writer only writes to them. Bookkeeping
 * (segments, sizes, index, retention, names) stays on the service thread: it counts data as
 * written when it hands it over. A reader first waits until every job's data is handled
 * (writer_drain), so that the active segment holds exactly what was handed over, except after
 * an error: then the data of the failed job and of every later one is kept in `failed`, in order,
 * and readers find it there (reader_at). After the first error nothing more is written (fsyncs
 * and closes still run), the segment is cut back to the failed job's start, and the service
 * thread sees it at its next call (persist_failed).
 * Memory: jobs queued hold at most backlog_max bytes of data; a service thread that would go
 * beyond waits for the writer (a disk slower than the traffic: back-pressure rather than an
 * unbounded queue or a silent gap in the trace). */

enum {
    JOB_SYNC = 1u << 0,        /* fsync the segment and its index after the data */
    JOB_CLOSE = 1u << 1,       /* then close them (a rotated segment) */
    JOB_SYNC_DIR = 1u << 2,    /* then fsync the trace's directory (new segment names) */
    JOB_SYNC_PARENT = 1u << 3, /* and the data directory (a new trace's directory name) */
    JOB_UNLINK = 1u << 4,      /* then delete segment `unlink_first` (retention) */
};

/* Spare jobs kept (with their buffers) for reuse. */
#define WRITER_SPARE 4u

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
    bool quit;
    atomic_bool failed_flag;
    char error[512];      /* the first error, set once before failed_flag */
    const char *dir;      /* the trace's directory (the trace_persist's; outlives the thread) */
    const char *data_dir; /* and the data directory */
    const trace_persist_io *io;
} writer;

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
        seg_name(name, sizeof(name), seg_first, ext);
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

/* The job's data to disk; false after an error (set). */
static bool job_write(writer *w, job *j)
{
    if (j->len) {
        job_crc(j);
        if (!write_all(w->io, j->fd, j->buf, j->len)) {
            int e = errno;
            /* Cut back to the last whole record; if that fails too, the torn tail is cut when
             * the trace is opened again (its CRC). */
            if (ftruncate(j->fd, (off_t)j->base) != 0) {
                e = e ? e : errno;
            }
            writer_set_error(w, "write", j->seg_first, "seg", e);
            return false;
        }
    }
    if (j->idx_len && !write_all(w->io, j->idx_fd, j->idx, j->idx_len)) {
        writer_set_error(w, "write", j->seg_first, "idx", errno);
        return false;
    }
    return true;
}

static void job_finish(writer *w, job *j)
{
    if ((j->flags & JOB_SYNC) && j->fd >= 0 && !atomic_load(&w->failed_flag)) {
        if (io_fsync(w->io, j->fd) != 0 || (j->idx_fd >= 0 && io_fsync(w->io, j->idx_fd) != 0)) {
            writer_set_error(w, "fsync", j->seg_first, "seg", errno);
        }
    }
    if (j->flags & JOB_CLOSE) {
        if (j->fd >= 0) {
            close(j->fd);
        }
        if (j->idx_fd >= 0) {
            close(j->idx_fd);
        }
        j->fd = j->idx_fd = -1;
    }
    if ((j->flags & JOB_SYNC_DIR) && !atomic_load(&w->failed_flag) &&
        sync_dir(w->io, w->dir) != 0) {
        writer_set_error(w, "fsync", 0, NULL, errno);
    }
    if ((j->flags & JOB_SYNC_PARENT) && !atomic_load(&w->failed_flag) &&
        sync_dir(w->io, w->data_dir) != 0) {
        writer_set_error(w, "fsync the data directory of", 0, NULL, errno);
    }
    if (j->flags & JOB_UNLINK) {
        /* Here rather than on the service thread: unlinking a segment still in the page cache
         * frees all its pages, milliseconds for 16 MiB. */
        unlink_segment(w->dir, j->unlink_first);
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

static writer *writer_start(const char *dir, const char *data_dir, uint64_t backlog_max,
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
static void writer_stop(writer *w)
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
static void writer_drain(writer *w, bool all)
{
    pthread_mutex_lock(&w->mu);
    while ((all ? w->done : w->data_done) != w->queued) {
        pthread_cond_wait(&w->progress, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

/* Bytes of the segment starting at seg_first that are kept in `failed` (not on disk). Call
 * after writer_drain(). */
static uint64_t writer_failed_bytes(writer *w, uint64_t seg_first)
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
        writer_drain(p->w, false);
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

/* --- segments and index ---------------------------------------------------------------------- */

static bool idx_push(seg *s, uint64_t seq, uint64_t off)
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

static seg *seg_push(trace_persist *p, uint64_t first_seq)
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

static void close_active(trace_persist *p)
{
    block_reset(&p->blk); /* the next segment starts a block */
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
        unlink_segment(p->dir, s->first_seq);
    }
    p->bytes -= s->size;
    p->first_seq = s->next_seq;
    free(s->idx);
    memmove(&p->segs[0], &p->segs[1], (p->n_segs - 1) * sizeof(*p->segs));
    p->n_segs--;
}

static void apply_retention(trace_persist *p, uint64_t now_ts_ns, bool by_age)
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

static wamp_err fail_io(trace_persist *p, const char *what, const char *file)
{
    set_error(p, what, file, errno);
    return WAMP_ECLOSED;
}

/* Opens a new active segment starting at first_seq. */
static wamp_err open_segment(trace_persist *p, uint64_t first_seq)
{
    char name[40];
    seg *s = seg_push(p, first_seq);
    if (!s) {
        return WAMP_ENOMEM;
    }
    seg_name(name, sizeof(name), first_seq, "seg");
    p->fd = open_in(p->dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
    if (p->fd < 0) {
        p->n_segs--;
        return fail_io(p, "create", name);
    }
    seg_name(name, sizeof(name), first_seq, "idx");
    p->idx_fd = open_in(p->dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
    if (p->idx_fd < 0) {
        close_active(p);
        p->n_segs--;
        return fail_io(p, "create", name);
    }
    p->written = 0;
    p->idx_written = 0;
    p->names_dirty = true;
    return WAMP_OK;
}

/* --- handing work to the writer (service thread) ------------------------------------------ */

/* True after an I/O error, the writer's included (its message becomes p->error). */
static bool persist_failed(trace_persist *p)
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

/* The buffered records and the index entries not handed over yet, with flags, as one job for
 * the writer. The job takes the buffer; the service thread gets a spare one back. */
static wamp_err submit(trace_persist *p, unsigned flags, uint64_t unlink_first)
{
    writer *w = p->w;
    seg *s = p->n_segs ? &p->segs[p->n_segs - 1] : NULL;
    size_t n_idx = s && p->fd >= 0 ? s->n_idx - p->idx_written : 0;
    if (!w || (p->fd < 0 && !(flags & (JOB_SYNC_DIR | JOB_SYNC_PARENT | JOB_UNLINK)))) {
        p->len = 0;
        p->run_off = NO_RUN;
        return WAMP_OK;
    }
    if (!p->len && !n_idx && !flags) {
        return WAMP_OK;
    }
    pthread_mutex_lock(&w->mu);
    job *j = w->spare;
    if (j) {
        w->spare = j->next;
        w->n_spare--;
    }
    pthread_mutex_unlock(&w->mu);
    if (!j) {
        j = calloc(1, sizeof(*j));
        if (!j) {
            return WAMP_ENOMEM;
        }
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
    p->run_off = NO_RUN; /* the run went with the buffer */
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
    return WAMP_OK;
}

/* Makes the names made since the last time durable: the segments' (or, with all, every name in
 * the trace's directory, e.g. a renamed meta.json) and a new trace directory's own name in the
 * data directory. */
static wamp_err sync_names(trace_persist *p, bool all)
{
    if ((p->names_dirty || all) && sync_dir(p->io, p->dir) != 0) {
        return fail_io(p, "fsync", p->dir);
    }
    p->names_dirty = false;
    if (p->new_dir) {
        if (sync_dir(p->io, p->data_dir) != 0) {
            return fail_io(p, "fsync", "the data directory");
        }
        p->new_dir = false;
    }
    return WAMP_OK;
}

/* Queues an fsync of the active segment (and of the names made since the last one). */
static wamp_err sync_active(trace_persist *p, uint64_t now_pc_ns)
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
static wamp_err write_out(trace_persist *p)
{
    if (persist_failed(p)) {
        return WAMP_ECLOSED;
    }
    return submit(p, 0, 0);
}

/* Rotation: the active segment is complete. Its last job writes the rest, fsyncs and closes
 * it (its fds go with the job); the next one starts at next_seq. */
static wamp_err rotate(trace_persist *p, uint64_t next_seq, uint64_t now_ts_ns)
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
    err = open_segment(p, next_seq);
    if (err != WAMP_OK) {
        return err;
    }
    apply_retention(p, now_ts_ns, false);
    return WAMP_OK;
}

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
    p->run_off = NO_RUN;
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
    int fd = open_in(p->dir, END_FILE, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) {
        return false;
    }
    int rc = posix_fallocate(fd, 0, END_ALLOC);
    if (rc != 0) {
        /* A file system without fallocate: zeros written are allocated as well. */
        unsigned char zero[END_ALLOC] = {0};
        rc = write_all(NULL, fd, zero, sizeof(zero)) ? 0 : errno;
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
        p->dir = path_join(root, id);
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
    p->w = writer_start(
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

/* Reads n bytes at off of a file; false if fewer were available. */
static bool pread_all(int fd, void *dst, size_t n, uint64_t off)
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

/* A record's length word: its body length in *len, compact or not in *compact; false if no
 * record can have it. */
static bool frame_len(uint32_t word, uint32_t *len, bool *compact)
{
    *compact = (word & LEN_COMPACT) != 0;
    *len = word & ~LEN_COMPACT;
    return *len >= (*compact ? C_MIN_LEN : FIXED_LEN) && *len <= BODY_MAX;
}

/* One record at off of a segment file (body in *body, malloc'ed, or reuses *body/cap):
 * true, its body length and kind when whole and its CRC matches. */
static bool read_record_fd(int fd, uint64_t off, uint64_t file_size, unsigned char **body,
                           size_t *cap, uint32_t *body_len, bool *compact)
{
    unsigned char hdr[HDR_LEN];
    if (off + HDR_LEN > file_size || !pread_all(fd, hdr, HDR_LEN, off)) {
        return false;
    }
    uint32_t len;
    if (!frame_len(get32(hdr), &len, compact) || off + HDR_LEN + len > file_size) {
        return false;
    }
    if (*cap < len) {
        unsigned char *n = realloc(*body, len);
        if (!n) {
            return false;
        }
        *body = n;
        *cap = len;
    }
    if (!pread_all(fd, *body, len, off + HDR_LEN) ||
        trace_crc32c(0, *body, len) != get32(hdr + 4)) {
        return false;
    }
    *body_len = len;
    return true;
}

/* --- compact records: decoding ------------------------------------------------------------ */

typedef struct cursor {
    const unsigned char *p;
    const unsigned char *end;
    bool ok;
} cursor;

static bool get_var(cursor *c, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) {
            return c->ok = false;
        }
        unsigned char byte = *c->p++;
        x |= (uint64_t)(byte & 0x7fu) << shift;
        if (!(byte & 0x80u)) {
            *v = x;
            return true;
        }
    }
    return c->ok = false; /* longer than a u64 */
}

/* The next n bytes (the cursor moves past them) in *at; false if fewer are left. */
static bool get_span(cursor *c, uint64_t n, const unsigned char **at)
{
    if ((uint64_t)(c->end - c->p) < n) {
        return c->ok = false;
    }
    *at = c->p;
    c->p += n;
    return true;
}

/* A string's bytes (put_vstr) in *at and *n; *at NULL when absent. */
static bool get_vspan(cursor *c, const unsigned char **at, uint64_t *n)
{
    uint64_t n1;
    *at = NULL;
    *n = 0;
    if (!get_var(c, &n1)) {
        return false;
    }
    if (n1 == 0) {
        return true;
    }
    *n = n1 - 1;
    return get_span(c, *n, at);
}

static char *dup_n(const unsigned char *s, uint32_t n);

/* A string (put_vstr): *s NULL when absent, else a malloc'ed copy. */
static bool get_vstr(cursor *c, char **s)
{
    const unsigned char *at;
    uint64_t n;
    *s = NULL;
    if (!get_vspan(c, &at, &n)) {
        return false;
    }
    if (at && !(*s = dup_n(at, (uint32_t)n))) {
        return c->ok = false;
    }
    return true;
}

/* The seq, pc and ts of a compact body (the block's running values b->seq/pc/ts become the
 * record's); false if malformed or if it continues a block whose start was not seen. The
 * cursor is left after the times. */
static bool compact_head(const unsigned char *body, uint32_t len, block *b, cursor *c)
{
    c->end = body + len;
    c->ok = true;
    bool first = (body[0] & C_BLOCK) != 0;
    if (body[0] & C_REPEAT) {
        /* The previous record's times, the next seq. */
        if (first || !b->has_prev) {
            return false;
        }
        c->p = body + 1;
        b->seq++;
        return true;
    }
    /* C2_SHORT: never a block's first record, always with bytes of its own. */
    bool is_short = len >= 3 && (body[2] & C2_SHORT);
    if (len < (is_short ? C_SHORT_MIN : C_FULL_MIN) ||
        (is_short && (first || (body[0] & (C_WIRE | C_WIRE_SAME)) != C_WIRE))) {
        return false;
    }
    c->p = body + 3;
    if (first) {
        block_reset(b);
        b->open = true;
    } else if (!b->open) {
        return false;
    }
    b->has_prev = true;
    uint64_t v[3];
    for (int i = 0; i < (is_short ? 2 : 3); i++) {
        if (!get_var(c, &v[i])) {
            return false;
        }
    }
    if (first) {
        b->seq = v[0];
        b->pc = v[1];
        b->ts = v[2];
    } else {
        uint64_t pc = unzigzag(b->pc, v[1]);
        b->seq += v[0];
        b->ts = is_short ? b->ts + (pc - b->pc) : unzigzag(b->ts, v[2]);
        b->pc = pc;
    }
    return true;
}

static const char *intern_reason(const unsigned char *s, uint32_t n);

/* The block's i-th peer, or (i = the number so far) a new one whose definition is at c and
 * joins the table. *out gets a new reference. */
static bool peer_at(cursor *c, block *b, uint64_t i, trace_peer **out)
{
    if (i < b->n_peers) {
        *out = trace_peer_ref((trace_peer *)b->peers[i]);
        return true;
    }
    if (i > b->n_peers) {
        return false;
    }
    uint64_t sid;
    char *str[3] = {NULL, NULL, NULL};
    bool ok = get_var(c, &sid) && get_vstr(c, &str[0]) && get_vstr(c, &str[1]) &&
              get_vstr(c, &str[2]);
    *out = ok ? trace_peer_new(sid, str[0], str[1], str[2]) : NULL;
    for (int k = 0; k < 3; k++) {
        free(str[k]);
    }
    if (!*out) {
        return false;
    }
    if (b->n_peers < BLOCK_TABLE) {
        b->peers[b->n_peers++] = trace_peer_ref(*out);
    }
    return true;
}

/* A peer reference at c (varint i, see peer_at()). */
static bool get_peer(cursor *c, block *b, trace_peer **out)
{
    uint64_t i;
    return get_var(c, &i) && peer_at(c, b, i, out);
}

/* A run's entry at c: varint i << 1 | last, then as peer_at(). */
static bool get_run_peer(cursor *c, block *b, trace_peer **out, bool *last)
{
    uint64_t v;
    if (!get_var(c, &v)) {
        return false;
    }
    *last = v & 1u;
    return peer_at(c, b, v >> 1, out);
}

/* A repeat of the block's previous record with the seq b->seq (already advanced) into *r
 * (zeroed here; owned references, the caller finis it on failure too): its fields, and with
 * with_peer the peer read at c; in_run: c is at a run's entry (a peer and a last bit). */
static bool decode_repeat(cursor *c, block *b, bool with_peer, bool in_run, trace_record *r)
{
    memset(r, 0, sizeof(*r));
    r->seq = b->seq;
    r->pc_ns = b->pc;
    r->ts_ns = b->ts;
    unsigned b2 = b->prev_b2;
    r->msg_type = b->prev_type;
    r->dir = b2 & 3u;
    r->wire_ser = (b2 >> 2) & 3u;
    r->flags = (b2 >> 4) & 7u;
    memcpy(r->ser_bytes, b->prev_ser, sizeof(r->ser_bytes));
    bool last = false;
    if (r->wire_ser >= WAMP_SER_COUNT || b->prev_uri == PREV_BAD_URI ||
        (with_peer && !(in_run ? get_run_peer(c, b, &r->peer, &last) : get_peer(c, b, &r->peer)))) {
        return false;
    }
    if (last) {
        r->flags |= TRACE_CORR_LAST;
    }
    if (b->prev_uri != PREV_NO_URI) {
        r->uri = trace_str_ref((trace_str *)b->uris[b->prev_uri]);
    }
    if (r->flags & TRACE_CORR_HAS) {
        if (!b->has_corr) {
            return false;
        }
        memcpy(r->corr, b->corr, TRACE_UUID_LEN);
    }
    if (b->prev_wire) {
        if (!b->wire) {
            return false;
        }
        r->wire = wamp_buf_ref(b->wire);
    }
    return true;
}

/* Whether a verified compact body is a run (C_RUN), and then its count (0 if malformed: too
 * short, a zero count, opening a block, or no previous record to repeat). */
static bool is_run(const unsigned char *body, uint32_t len, const block *b, uint32_t *count)
{
    if ((body[0] & (C_REPEAT | C_RUN)) != (C_REPEAT | C_RUN)) {
        return false;
    }
    bool ok = len >= C_RUN_HEAD + 1 && body[0] == (C_REPEAT | C_PEER | C_RUN) && b->has_prev;
    *count = ok ? get16(body + 1) : 0;
    return true;
}

/* Decodes one verified compact body (not a run) into *r (owned references; the caller finis
 * it on failure too), updating the block's tables. */
static bool decode_compact(const unsigned char *body, uint32_t len, block *b, trace_record *r)
{
    memset(r, 0, sizeof(*r));
    cursor c;
    if (!compact_head(body, len, b, &c)) {
        return false;
    }
    unsigned what = body[0];
    if (what & C_REPEAT) {
        return !(what & ~(C_REPEAT | C_PEER)) && decode_repeat(&c, b, what & C_PEER, false, r) &&
               c.p == c.end;
    }
    r->seq = b->seq;
    r->pc_ns = b->pc;
    r->ts_ns = b->ts;
    unsigned b2 = body[2];
    r->msg_type = body[1];
    r->dir = b2 & 3u;
    r->wire_ser = (b2 >> 2) & 3u;
    r->flags = (b2 >> 4) & 7u;
    if (r->wire_ser >= WAMP_SER_COUNT) {
        return false;
    }
    for (int i = 0; i < PERSIST_SERS && !(b2 & C2_SHORT); i++) {
        uint64_t v;
        if (!get_var(&c, &v) || v > UINT32_MAX) {
            return false;
        }
        r->ser_bytes[i] = (uint32_t)v;
    }
    if ((what & C_PEER) && !get_peer(&c, b, &r->peer)) {
        return false;
    }
    uint64_t i;
    if (what & C_URI) {
        if (!get_var(&c, &i) || i > b->n_uris) {
            return false;
        }
        b->prev_uri = i < b->n_uris ? (size_t)i : PREV_BAD_URI;
        if (i < b->n_uris) {
            r->uri = trace_str_ref((trace_str *)b->uris[i]);
        } else {
            char *str;
            if (!get_vstr(&c, &str) || !str) {
                return false;
            }
            r->uri = trace_str_new(str);
            free(str);
            if (!r->uri) {
                return false;
            }
            if (b->n_uris < BLOCK_TABLE) {
                b->prev_uri = b->n_uris;
                b->uris[b->n_uris++] = trace_str_ref(r->uri);
            }
        }
    } else {
        b->prev_uri = PREV_NO_URI;
    }
    const unsigned char *at;
    uint64_t n;
    if (what & C_DROPPED) {
        if (!get_vspan(&c, &at, &n) || !at) {
            return false;
        }
        r->dropped = intern_reason(at, (uint32_t)n);
    }
    if (r->flags & TRACE_CORR_HAS) {
        if (what & C_CORR_SAME) {
            if (!b->has_corr) {
                return false;
            }
        } else {
            if (!get_span(&c, TRACE_UUID_LEN, &at)) {
                return false;
            }
            memcpy(b->corr, at, TRACE_UUID_LEN);
            b->has_corr = true;
        }
        memcpy(r->corr, b->corr, TRACE_UUID_LEN);
    }
    if (what & C_WIRE) {
        if (what & C_WIRE_SAME) {
            if (!b->wire) {
                return false;
            }
        } else {
            if (!get_var(&c, &n) || !get_span(&c, n, &at)) {
                return false;
            }
            if (b2 & C2_SHORT) {
                r->ser_bytes[r->wire_ser] = (uint32_t)n; /* get_span(): n < BODY_MAX */
            }
            wamp_buf *w = wamp_buf_new_copy(at, (size_t)n);
            if (!w) {
                return false;
            }
            wamp_buf_unref(&b->wire);
            b->wire = w;
        }
        r->wire = wamp_buf_ref(b->wire);
    }
    b->has_prev = true;
    b->prev_wire = (what & C_WIRE) != 0;
    b->prev_type = body[1];
    b->prev_b2 = (uint8_t)(body[2] & ~C2_SHORT); /* what a repeat of it has */
    memcpy(b->prev_ser, r->ser_bytes, sizeof(b->prev_ser));
    return c.p == c.end;
}

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

static bool decode_record(const unsigned char *b, uint32_t len, trace_record *r,
                          const trace_record *prev);

/* Decodes a verified body completely, as a reader would (b: the block of compact records), and
 * drops what it decoded: true with the seq of its first record, how many it holds (a run's
 * count) and the ts of the last when every field decodes. A record that passes its CRC but does
 * not decode is damage as well: a reopen must count only what a reader returns. */
static bool verify_body(const unsigned char *body, uint32_t len, bool compact, block *b,
                        uint64_t *seq, uint64_t *count, uint64_t *ts)
{
    trace_record r;
    *count = 1;
    if (!compact) {
        bool ok = decode_record(body, len, &r, NULL);
        *seq = r.seq;
        *ts = r.ts_ns;
        trace_record_fini(&r);
        return ok;
    }
    uint32_t run = 0;
    if (is_run(body, len, b, &run)) {
        if (run == 0 || !b->open) {
            return false;
        }
        cursor c = {.p = body + C_RUN_HEAD, .end = body + len, .ok = true};
        *seq = b->seq + 1;
        for (uint32_t k = 0; k < run; k++) {
            b->seq++;
            bool ok = decode_repeat(&c, b, true, true, &r);
            trace_record_fini(&r);
            if (!ok) {
                return false;
            }
        }
        *count = run;
        *ts = b->ts;
        return c.p == c.end;
    }
    bool ok = decode_compact(body, len, b, &r);
    *seq = r.seq;
    *ts = r.ts_ns;
    trace_record_fini(&r);
    return ok;
}

/* A record that a reader can start at: whole, its CRC right, decoding from a fresh block, the
 * seq `want` (or, want = NO_SEQ, any seq from min_seq on that starts a block of s). */
static bool block_start_at(int fd, uint64_t off, uint64_t file_size, const seg *s, uint64_t want,
                           uint64_t min_seq, unsigned char **body, size_t *cap, uint64_t *seq)
{
    uint32_t len;
    bool compact;
    uint64_t count, ts;
    block b = {0};
    bool ok = read_record_fd(fd, off, file_size, body, cap, &len, &compact) &&
              (!compact || ((*body)[0] & (C_BLOCK | C_REPEAT)) == C_BLOCK) &&
              verify_body(*body, len, compact, &b, seq, &count, &ts) &&
              (want == NO_SEQ ? *seq >= min_seq && (!compact || block_pos(s, *seq) == 0)
                              : *seq == want);
    block_reset(&b);
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
    if (!pread_all(w->fd, w->buf, want, off)) {
        w->len = 0;
        return NULL;
    }
    w->off = off;
    w->len = want;
    return w->buf;
}

/* read_record_fd() through the window: *body points into it. */
static bool read_record_win(fwin *w, uint64_t off, const unsigned char **body, uint32_t *body_len,
                            bool *compact)
{
    const unsigned char *h = fwin_at(w, off, HDR_LEN);
    uint32_t len;
    if (!h || !frame_len(get32(h), &len, compact)) {
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

/* CRC work a resynchronisation by scanning may do per segment (damage made by hand could ask
 * for a CRC of up to the file's size at each byte otherwise). */
#define RESYNC_BUDGET ((uint64_t)64 * 1024 * 1024)

/* Where reading can go on after damage at off (seq min_seq not readable): the next entry of the
 * segment's index file that verifies as a block start, else the next block start found by
 * scanning the bytes (compact segments only; bounded by RESYNC_BUDGET). false if none. */
static bool resync(int fd, uint64_t off, uint64_t file_size, const seg *s, const idx_entry *hint,
                   size_t n_hint, uint64_t min_seq, unsigned char **body, size_t *cap,
                   uint64_t *at_off, uint64_t *at_seq)
{
    for (size_t i = 0; i < n_hint; i++) {
        uint64_t seq;
        if (hint[i].off > off && hint[i].seq >= min_seq &&
            block_start_at(fd, hint[i].off, file_size, s, hint[i].seq, min_seq, body, cap, &seq)) {
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
    uint64_t budget = RESYNC_BUDGET;
    for (uint64_t base = off + 1; !found && base + HDR_LEN < file_size && budget;) {
        size_t n = file_size - base < READ_CHUNK ? (size_t)(file_size - base) : READ_CHUNK;
        if (!pread_all(fd, win, n, base)) {
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
            budget = len > budget ? 0 : budget - len;
            uint64_t seq;
            if (block_start_at(fd, base + i, file_size, s, NO_SEQ, min_seq, body, cap, &seq)) {
                *at_off = base + i;
                *at_seq = seq;
                found = true;
                break;
            }
            if (!budget) {
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
        seg_name(g->file, sizeof(g->file), file_first, ext);
    }
    return true;
}

/* Loads one segment (name = "<digits>.seg"): every record is read, its CRC checked and decoded;
 * the index is rebuilt from what verifies (the .idx file only suggests where to resynchronise).
 * Damage in the middle becomes a gap (corrupt) up to the next block start that verifies; what
 * follows the last record that verifies is a damaged tail (size < file_size), which the caller
 * (settle_segments()) judges once every segment is loaded. */
static wamp_err load_segment(trace_persist *p, uint64_t first_seq)
{
    char name[40], seg_file[40];
    seg *s = seg_push(p, first_seq);
    if (!s) {
        return WAMP_ENOMEM;
    }
    seg_name(seg_file, sizeof(seg_file), first_seq, "seg");
    int fd = open_in(p->dir, seg_file, O_RDWR);
    if (fd < 0) {
        fd = open_in(p->dir, seg_file, O_RDONLY); /* read-only media: readable, tails not cut */
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        p->n_segs--;
        return WAMP_OK; /* vanished: nothing held there */
    }
    uint64_t file_size = (uint64_t)st.st_size;
    /* The index file: entries that point inside the file and increase, as hints. */
    idx_entry *hint = NULL;
    size_t n_hint = 0, cap_hint = 0;
    seg_name(name, sizeof(name), first_seq, "idx");
    int ifd = open_in(p->dir, name, O_RDONLY);
    if (ifd >= 0) {
        unsigned char ent[IDX_ENTRY];
        uint64_t off = 0;
        while (pread_all(ifd, ent, IDX_ENTRY, off)) {
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
    unsigned char *body = NULL; /* resync()'s */
    size_t cap = 0;
    const unsigned char *rec;
    uint32_t len;
    bool compact;
    block blk = {0};
    fwin win = {.fd = fd, .size = file_size};
    uint64_t off = 0, seq = first_seq, last_ts = 0, valid_end = 0;
    wamp_err err = WAMP_OK;
    for (;;) {
        uint64_t rseq = 0, rcount = 0, rts = 0;
        bool starts = s->n_idx == 0 || block_pos(s, seq) == 0;
        if (read_record_win(&win, off, &rec, &len, &compact) &&
            (!compact || !starts || (rec[0] & (C_BLOCK | C_REPEAT)) == C_BLOCK) &&
            verify_body(rec, len, compact, &blk, &rseq, &rcount, &rts) && rseq == seq) {
            if (starts && (s->n_idx == 0 || s->idx[s->n_idx - 1].seq < seq) &&
                !idx_push(s, seq, off)) {
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
        if (!resync(fd, off, file_size, s, hint, n_hint, seq, &body, &cap, &at_off, &at_seq)) {
            break; /* a damaged tail */
        }
        if (at_seq > seq &&
            !gap_push(p, seq, at_seq - 1, TRACE_GAP_CORRUPT, first_seq, "seg", off)) {
            err = WAMP_ENOMEM;
            break;
        }
        block_reset(&blk);
        off = at_off;
        seq = at_seq;
    }
    block_reset(&blk);
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
    seg_name(name, sizeof(name), first_seq, "seg");
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
                seg_name(name, sizeof(name), s.first_seq, "seg");
                (void)unlink_in(p->dir, name);
                seg_name(name, sizeof(name), s.first_seq, "idx");
                (void)unlink_in(p->dir, name);
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
        seg_name(name, sizeof(name), bad_first, "seg");
        snprintf(why, why_len, "%s/%s: no valid record (torn or corrupt), ignored", p->dir, name);
    }
    if (k && p->segs[k - 1].size < p->segs[k - 1].file_size) {
        seg *s = &p->segs[k - 1];
        char name[40];
        seg_name(name, sizeof(name), s->first_seq, "seg");
        *tail_bad = true;
        if (why && why_len) {
            snprintf(why, why_len,
                     "%s/%s: cut %" PRIu64 " bytes of torn or corrupt records from seq %" PRIu64
                     " (byte %" PRIu64 ")",
                     p->dir, name, s->file_size - s->size, s->next_seq, s->size);
        }
        int fd = open_in(p->dir, name, O_RDWR);
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
    int fd = open_in(p->dir, END_FILE, O_RDONLY);
    if (fd < 0) {
        return false;
    }
    bool ok = pread_all(fd, rec, sizeof(rec), 0) && memcmp(rec, end_magic, 4) == 0 &&
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
    p->dir = path_join(data_dir_of(cfg), persistent_id);
    p->id = strdup(persistent_id);
    if (!p->dir || !p->id) {
        goto fail;
    }
    DIR *d = opendir(p->dir);
    if (!d) {
        err = WAMP_ENOTFOUND;
        goto fail;
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
                goto fail;
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
        err = load_segment(p, firsts[i]);
        if (err != WAMP_OK) {
            free(firsts);
            goto fail;
        }
    }
    free(firsts);
    bool tail_bad = false;
    if (!settle_segments(p, &tail_bad, why, why_len)) {
        err = WAMP_ENOMEM;
        goto fail;
    }
    if (!end_gap(p, tail_bad)) {
        err = WAMP_ENOMEM;
        goto fail;
    }
    if (p->n_gaps > 1) {
        qsort(p->gaps, p->n_gaps, sizeof(*p->gaps), cmp_gap);
    }
    char *mpath = path_join(p->dir, "meta.json");
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
        (void)write_out(p);
    }
    writer_stop(p->w); /* after every job queued */
    p->w = NULL;
    close_active(p); /* and releases the block */
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
    writer_stop(p->w);
    p->w = NULL;
    close_active(p);
    p->writable = false;
    bool ok = true;
    DIR *d = opendir(p->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            if (unlink_in(p->dir, e->d_name) != 0) {
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
    memcpy(rec, end_magic, 4);
    put64(rec + 4, trace_persist_next_seq(p));
    put64(rec + 12, trace_persist_durable_next(p));
    memset(rec + 20, 0, 8);
    put32(rec + 28, trace_crc32c(0, rec, 28));
    int fd = open_in(p->dir, END_FILE, O_WRONLY);
    if (fd < 0) {
        return fail_io(p, "open", END_FILE);
    }
    bool ok = pwrite(fd, rec, sizeof(rec), 0) == (ssize_t)sizeof(rec) && io_fsync(p->io, fd) == 0;
    int e = errno;
    close(fd);
    errno = e ? e : EIO;
    return ok ? WAMP_OK : fail_io(p, "write", END_FILE);
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

/* --- writing -----------------------------------------------------------------------------------
 */

static size_t str_len(const char *s)
{
    return s ? strlen(s) : 0;
}

/* A string: varint length + 1 (0 = NULL), then its bytes. */
static unsigned char *put_vstr(unsigned char *d, const char *s, size_t n)
{
    if (!s) {
        *d++ = 0;
        return d;
    }
    d = put_var(d, (uint64_t)n + 1);
    memcpy(d, s, n);
    return d + n;
}

/* Room for need more bytes in the write buffer. */
static bool buf_reserve(trace_persist *p, size_t need)
{
    if (p->len + need <= p->cap) {
        return true;
    }
    size_t ncap = p->cap ? p->cap : 64 * 1024;
    while (ncap < p->len + need) {
        ncap *= 2;
    }
    unsigned char *nb = realloc(p->buf, ncap);
    if (!nb) {
        return false;
    }
    p->buf = nb;
    p->cap = ncap;
    return true;
}

/* Index of x in the first n entries of table (pointer identity: the block holds a reference on
 * each entry, so an address is never reused while it is there); n if absent. The hint slot of
 * x's address answers first; a search sets it. */
static size_t hint_slot(const void *x)
{
    uintptr_t a = (uintptr_t)x;
    return (size_t)((a >> 4) ^ (a >> 12)) & (HINT_SLOTS - 1);
}

static size_t table_find(void *const *table, size_t n, const void *x, uint8_t *hints)
{
    uint8_t *h = &hints[hint_slot(x)];
    if (*h < n && table[*h] == x) {
        return *h;
    }
    for (size_t i = n; i-- > 0;) {
        if (table[i] == x) {
            *h = (uint8_t)i;
            return i;
        }
    }
    return n;
}

/* Adds x (a reference the table keeps) at the end of a table with room, with its hint. */
static void table_add(void **table, size_t *n, void *x, uint8_t *hints)
{
    hints[hint_slot(x)] = (uint8_t)*n;
    table[(*n)++] = x;
}

/* The peer part of a record: its index in the block's table, then, if new there, its
 * definition (the table keeps a reference). */
/* The most bytes the definition of a peer takes (its strings' lengths are at most their bytes
 * with NULs). */
static size_t peer_def_max(const trace_peer *peer)
{
    return 4 * VAR_MAX + trace_peer_text_bytes(peer);
}

/* A peer's definition after its index (see put_peer_code()); out of line, once per peer and
 * block. */
static unsigned char *put_peer_def(trace_persist *p, block *b, unsigned char *d, trace_peer *peer)
{
    const char *realm = trace_peer_realm(peer);
    const char *authid = trace_peer_authid(peer);
    const char *authrole = trace_peer_authrole(peer);
    d = put_var(d, trace_peer_session_id(peer));
    d = put_vstr(d, realm, str_len(realm));
    d = put_vstr(d, authid, str_len(authid));
    d = put_vstr(d, authrole, str_len(authrole));
    if (b->n_peers < BLOCK_TABLE) {
        table_add(b->peers, &b->n_peers, trace_peer_ref(peer), p->peer_hint);
    }
    return d;
}

/* A reference to the peer at index i of the block's table, written as the varint code (i in a
 * record's peer part, i << 1 | last in a run's entry), then, if i is new there (the number of
 * peers so far), its definition (the table keeps a reference). */
static inline unsigned char *put_peer_code(trace_persist *p, block *b, unsigned char *d,
                                           trace_peer *peer, size_t i, uint64_t code)
{
    if (code < 0x80u && i < b->n_peers) {
        *d++ = (unsigned char)code;
        return d;
    }
    d = put_var(d, code);
    return i < b->n_peers ? d : put_peer_def(p, b, d, peer);
}

static inline unsigned char *put_peer(trace_persist *p, block *b, unsigned char *d,
                                      trace_peer *peer, size_t i)
{
    return put_peer_code(p, b, d, peer, i, i);
}

static inline unsigned char *put_run_entry(trace_persist *p, block *b, unsigned char *d,
                                           trace_peer *peer, size_t i, bool last)
{
    return put_peer_code(p, b, d, peer, i, (uint64_t)i << 1 | last);
}

static bool uuid_eq(const uint8_t *a, const uint8_t *b)
{
    uint64_t x[2], y[2];
    memcpy(x, a, TRACE_UUID_LEN);
    memcpy(y, b, TRACE_UUID_LEN);
    return ((x[0] ^ y[0]) | (x[1] ^ y[1])) == 0;
}

/* Whether r, in the block b has open, is its previous record again but for the peer and the
 * next seq (an EVENT's fan-out): a C_REPEAT. Object identity stands for equality: the block
 * holds a reference on the previous record's URI (in its table) and message buffer (`wire`), so
 * their addresses cannot be reused meanwhile. Plain bytes (a received message) have no
 * identity: a record with them is never a repeat. */
static bool is_repeat(const block *b, const trace_persist_rec *r, uint8_t b2)
{
    /* What differs most often first: the type (a CALL's INVOCATION follows it), the bytes. */
    if (!b->has_prev || r->msg_type != b->prev_type || b2 != b->prev_b2 || r->bytes ||
        r->seq != b->seq + 1 || r->pc_ns != b->pc || r->ts_ns != b->ts || r->dropped ||
        memcmp(r->ser_bytes, b->prev_ser, sizeof(b->prev_ser)) != 0) {
        return false;
    }
    if (r->wire ? !b->prev_wire || r->wire != b->wire : b->prev_wire) {
        return false;
    }
    if (r->uri ? b->prev_uri >= b->n_uris || b->uris[b->prev_uri] != r->uri
               : b->prev_uri != PREV_NO_URI) {
        return false;
    }
    return !(r->flags & TRACE_CORR_HAS) || (b->has_corr && uuid_eq(b->corr, r->corr));
}

/* Frames the record whose header is at h and body ends at d, and accounts for it. */
static wamp_err end_record(trace_persist *p, seg *s, const trace_persist_rec *r, unsigned char *h,
                           const unsigned char *d)
{
    size_t body = (size_t)(d - (h + HDR_LEN));
    put32(h, (uint32_t)body | LEN_COMPACT);
    put32(h + 4, 0); /* the CRC: the writer's work */
    size_t need = HDR_LEN + body;
    p->len += need;
    s->size += need;
    s->next_seq = r->seq + 1;
    s->last_ts = r->ts_ns;
    p->bytes += need;
    if (p->len >= TRACE_PERSIST_BUFFER_MAX) {
        return write_out(p);
    }
    return WAMP_OK;
}

/* Adds up to max_k repeats to the run written last (p->run_off), with the seqs first_seq, ...
 * and the peers peers[0..): each one its entry (peers[last_k]'s with the last bit; SIZE_MAX for
 * none), the frame's length and the run's count updated once. Stops early at a full run or a
 * full buffer (handed over then). Returns how many were added; *err is set when one could not
 * be (out of memory, or the hand-over failed). */
static size_t extend_run(trace_persist *p, seg *s, block *b, uint64_t first_seq, uint64_t ts_ns,
                         trace_peer *const *peers, size_t max_k, size_t last_k, wamp_err *err)
{
    *err = WAMP_OK;
    size_t start = p->len, k = 0;
    uint32_t count = get16(p->buf + p->run_off + HDR_LEN + 1);
    size_t n = C_RUN_MAX - count < max_k ? C_RUN_MAX - count : max_k;
    /* One reservation for the entries (a varint each); a peer new to the block reserves room
     * for its definition when it comes. */
    if (!buf_reserve(p, n * VAR_MAX)) {
        *err = WAMP_ENOMEM;
        n = 0;
    }
    unsigned char *d = p->buf + p->len;
    for (; k < n && (size_t)(d - p->buf) < TRACE_PERSIST_BUFFER_MAX; k++) {
        trace_peer *peer = peers[k];
        size_t i = table_find(b->peers, b->n_peers, peer, p->peer_hint);
        if (i == b->n_peers) {
            p->len = (size_t)(d - p->buf);
            if (!buf_reserve(p, (n - k) * VAR_MAX + peer_def_max(peer))) {
                *err = WAMP_ENOMEM;
                break;
            }
            d = p->buf + p->len;
        }
        d = put_run_entry(p, b, d, peer, i, k == last_k);
    }
    p->len = (size_t)(d - p->buf);
    count += (uint32_t)k;
    if (k) {
        size_t add = p->len - start;
        unsigned char *h = p->buf + p->run_off;
        put32(h, get32(h) + (uint32_t)add); /* LEN_COMPACT stays set: a run is small */
        put16(h + HDR_LEN + 1, count);
        s->size += add;
        p->bytes += add;
        s->next_seq = first_seq + k;
        s->last_ts = ts_ns;
        b->seq = first_seq + k - 1;
    }
    if (count == C_RUN_MAX) {
        p->run_off = NO_RUN;
    }
    if (*err == WAMP_OK && p->len >= TRACE_PERSIST_BUFFER_MAX) {
        *err = write_out(p);
    }
    return k;
}

/* Appends r as a repeat (is_repeat()): with a peer, into the run written last or as a new run
 * (last: the run entry's last bit); a repeat without a peer (never last) as a C_REPEAT record of
 * its own. */
static wamp_err append_repeat(trace_persist *p, seg *s, block *b, const trace_persist_rec *r,
                              bool last)
{
    trace_peer *peer = r->peer;
    wamp_err err;
    if (peer && p->run_off != NO_RUN) {
        /* Adds it, or fails with err (an open run always has room for one more). */
        (void)extend_run(p, s, b, r->seq, r->ts_ns, &peer, 1, last ? 0 : SIZE_MAX, &err);
        return err;
    }
    size_t peer_i = peer ? table_find(b->peers, b->n_peers, peer, p->peer_hint) : 0;
    size_t max = C_RUN_HEAD + VAR_MAX + (peer && peer_i == b->n_peers ? peer_def_max(peer) : 0);
    if (!buf_reserve(p, HDR_LEN + max)) {
        return WAMP_ENOMEM;
    }
    unsigned char *h = p->buf + p->len;
    unsigned char *d = h + HDR_LEN;
    if (peer) {
        *d++ = (unsigned char)(C_REPEAT | C_PEER | C_RUN);
        put16(d, 1);
        d = put_run_entry(p, b, d + 2, peer, peer_i, last);
        p->run_off = p->len;
    } else {
        *d++ = (unsigned char)C_REPEAT;
    }
    b->seq = r->seq;
    return end_record(p, s, r, h, d);
}

/* Whether r is a repeat of the block's previous record without further checks (append_repeat()
 * then adds it to the run, or starts one): the same key (the same message but for peer and
 * seq), a peer, the next seq, and no block start or full segment at r. */
static bool joins_run(trace_persist *p, const trace_persist_rec *r, seg **s)
{
    const block *b = &p->blk;
    if (!r->key || r->key != b->prev_key || !r->peer || r->seq != b->seq + 1) {
        return false;
    }
    *s = &p->segs[p->n_segs - 1];
    return block_pos(*s, r->seq) != 0 && (*s)->size < p->segment_bytes;
}

/* Seqs given out that the store could not take (an I/O error now or earlier, or out of memory;
 * either way the trace stops with io_error): next_seq still counts them, and they are in the
 * io_error gap. Out of memory, the records before them are still written (at stop). */
static void note_lost(trace_persist *p, uint64_t end)
{
    if (end > p->lost_next) {
        p->lost_next = end;
    }
    if (p->io_from == NO_SEQ) {
        p->io_from = files_next(p);
    }
}

static wamp_err append_rec(trace_persist *p, const trace_persist_rec *r);

static wamp_err append_run(trace_persist *p, const trace_persist_rec *r, trace_peer *const *peers,
                           size_t n, bool last);

wamp_err trace_persist_append_run(trace_persist *p, const trace_persist_rec *r,
                                  trace_peer *const *peers, size_t n, bool last)
{
    wamp_err err = append_run(p, r, peers, n, last);
    if (err != WAMP_OK) {
        note_lost(p, r->seq + n);
    }
    return err;
}

wamp_err trace_persist_append_rec(trace_persist *p, const trace_persist_rec *r)
{
    wamp_err err = append_rec(p, r);
    if (err != WAMP_OK) {
        note_lost(p, r->seq + 1);
    }
    return err;
}

static wamp_err append_run(trace_persist *p, const trace_persist_rec *r, trace_peer *const *peers,
                           size_t n, bool last)
{
    trace_persist_rec one = *r;
    for (size_t i = 0; i < n;) {
        one.seq = r->seq + i;
        one.peer = peers[i];
        bool is_last = last && i == n - 1;
        seg *s;
        if (p->writable && !p->error && joins_run(p, &one, &s)) {
            if (p->run_off == NO_RUN) {
                wamp_err err = append_repeat(p, s, &p->blk, &one, is_last); /* starts the run */
                if (err != WAMP_OK) {
                    return err;
                }
                i++;
                continue;
            }
            /* As many as the block and the run take, in one go. */
            uint64_t in_block = TRACE_PERSIST_INDEX_EVERY - block_pos(s, one.seq);
            size_t max_k = n - i < in_block ? n - i : (size_t)in_block;
            wamp_err err;
            size_t k = extend_run(p, s, &p->blk, one.seq, one.ts_ns, peers + i, max_k,
                                  last ? n - 1 - i : SIZE_MAX, &err);
            if (err != WAMP_OK) {
                return err;
            }
            i += k;
            continue;
        }
        if (is_last) {
            /* Where no run can take it: the last record on its own, a message of its own. */
            one.flags |= TRACE_CORR_LAST;
            one.key = 0;
        }
        wamp_err err = append_rec(p, &one);
        if (err != WAMP_OK) {
            return err;
        }
        i++;
    }
    return WAMP_OK;
}

wamp_err trace_persist_append(trace_persist *p, const trace_record *r)
{
    trace_persist_rec v = {
            .seq = r->seq,
            .pc_ns = r->pc_ns,
            .ts_ns = r->ts_ns,
            .peer = r->peer,
            .uri = r->uri,
            .dropped = r->dropped,
            .corr = r->corr,
            .wire = r->wire,
            .dir = r->dir,
            .msg_type = r->msg_type,
            .wire_ser = r->wire_ser,
            .flags = r->flags,
    };
    memcpy(v.ser_bytes, r->ser_bytes, sizeof(v.ser_bytes));
    return trace_persist_append_rec(p, &v);
}

static wamp_err append_rec(trace_persist *p, const trace_persist_rec *r)
{
    /* An error of the writer thread is seen when the buffer is handed over next (write_out(),
     * rotate()): records appended meanwhile stay readable from the buffer. Asking the writer's
     * flag here, an atomic load of a line the writer thread writes, was a cache miss a record. */
    if (!p->writable || p->error) {
        return WAMP_ECLOSED;
    }
    block *b = &p->blk;
    seg *s;
    if (joins_run(p, r, &s)) {
        /* The next receiver of the message the block's run repeats: nothing to compare. */
        return append_repeat(p, s, b, r, false);
    }
    wamp_err err;
    if (p->fd < 0) {
        err = open_segment(p, r->seq);
        if (err != WAMP_OK) {
            return err;
        }
    }
    s = &p->segs[p->n_segs - 1];
    if (s->size >= p->segment_bytes && s->next_seq > s->first_seq) {
        err = rotate(p, r->seq, r->ts_ns);
        if (err != WAMP_OK) {
            return err;
        }
        s = &p->segs[p->n_segs - 1];
    }
    bool first = s->next_seq == s->first_seq || block_pos(s, r->seq) == 0;
    if (first) {
        block_reset(b);
    }
    uint8_t b2 = (uint8_t)((r->dir & 3u) | (r->wire_ser & 3u) << 2 | (r->flags & 7u) << 4);
    if (!first && is_repeat(b, r, b2)) {
        return append_repeat(p, s, b, r, false);
    }
    p->run_off = NO_RUN; /* a run is only ever the last record of its block so far */
    /* What is new in this block, and the most the body can take. */
    trace_peer *peer = r->peer;
    size_t peer_i = peer ? table_find(b->peers, b->n_peers, peer, p->peer_hint) : 0;
    trace_str *uri = r->uri;
    size_t uri_i = uri ? table_find(b->uris, b->n_uris, uri, p->uri_hint) : 0;
    bool uri_def = uri && uri_i == b->n_uris;
    const void *bytes = r->wire ? wamp_buf_cdata(r->wire) : r->bytes;
    size_t wire_len = r->wire ? wamp_buf_len(r->wire) : r->len;
    /* own: the record carries its bytes (C_WIRE without C_WIRE_SAME). */
    bool wire_same = r->wire && r->wire == b->wire;
    bool own = bytes && !wire_same;
    /* 3 bytes, 6 varints (seq, pc, ts, ser_bytes), the peer's and the URI's, the UUID. */
    size_t max = 3 + 8 * VAR_MAX + TRACE_UUID_LEN + (own ? VAR_MAX + wire_len : 0);
    if (r->dropped) {
        max += VAR_MAX + strlen(r->dropped);
    }
    if (peer && peer_i == b->n_peers) {
        max += peer_def_max(peer);
    }
    const char *uri_s = NULL;
    size_t uri_len = 0;
    if (uri_def) {
        uri_s = trace_str_get(uri);
        uri_len = strlen(uri_s);
        max += VAR_MAX + uri_len;
    }
    if (own && max > BODY_MAX) {
        /* Larger than a reader accepts: the record without its bytes. */
        own = false;
        bytes = NULL;
        max -= VAR_MAX + wire_len;
    }
    /* Both can fail: before anything changes (the block must only hold what was written). */
    if (!buf_reserve(p, HDR_LEN + max) || (first && !idx_push(s, r->seq, s->size))) {
        return WAMP_ENOMEM;
    }
    /* Short (C2_SHORT): bytes of its own that are its only size, and ts moved as pc did. */
    uint32_t implied[WAMP_SER_COUNT] = {0};
    implied[r->wire_ser < WAMP_SER_COUNT ? r->wire_ser : 0] = (uint32_t)wire_len;
    bool is_short = own && !first && wire_len <= UINT32_MAX && r->wire_ser < WAMP_SER_COUNT &&
                    r->ts_ns - b->ts == r->pc_ns - b->pc &&
                    memcmp(implied, r->ser_bytes, sizeof(implied)) == 0;
    unsigned char *h = p->buf + p->len;
    unsigned char *d = h + HDR_LEN;
    /* The what byte (d[0]) is known when the body is: its bits are set on the way. */
    unsigned what = first ? C_BLOCK : 0;
    d[1] = r->msg_type;
    d[2] = (unsigned char)(b2 | (is_short ? C2_SHORT : 0));
    d += 3;
    if (first) {
        d = put_var(d, r->seq);
        d = put_var(d, r->pc_ns);
        d = put_var(d, r->ts_ns);
    } else {
        d = put_var(d, r->seq - b->seq);
        d = put_var(d, zigzag(r->pc_ns, b->pc));
        if (!is_short) {
            d = put_var(d, zigzag(r->ts_ns, b->ts));
        }
    }
    if (!is_short) {
        for (int i = 0; i < PERSIST_SERS; i++) {
            d = put_var(d, r->ser_bytes[i]);
        }
    }
    if (peer) {
        what |= C_PEER;
        d = put_peer(p, b, d, peer, peer_i);
    }
    b->prev_uri = PREV_NO_URI;
    if (uri) {
        what |= C_URI;
        d = put_var(d, uri_i);
        b->prev_uri = uri_def ? PREV_BAD_URI : uri_i;
        if (uri_def) {
            d = put_vstr(d, uri_s, uri_len);
            if (b->n_uris < BLOCK_TABLE) {
                b->prev_uri = b->n_uris;
                table_add(b->uris, &b->n_uris, trace_str_ref(uri), p->uri_hint);
            }
        }
    }
    if (r->dropped) {
        what |= C_DROPPED;
        d = put_vstr(d, r->dropped, strlen(r->dropped));
    }
    if (r->flags & TRACE_CORR_HAS) {
        if (b->has_corr && uuid_eq(b->corr, r->corr)) {
            what |= C_CORR_SAME;
        } else {
            memcpy(d, r->corr, TRACE_UUID_LEN);
            d += TRACE_UUID_LEN;
            memcpy(b->corr, r->corr, TRACE_UUID_LEN);
            b->has_corr = true;
        }
    }
    if (own) {
        what |= C_WIRE;
        d = put_var(d, wire_len);
        memcpy(d, bytes, wire_len);
        d += wire_len;
        /* Only a shared buffer can be referred to by a later record of the block (its
         * reference keeps the address from being reused); plain bytes cannot. */
        if (b->wire != r->wire) {
            wamp_buf_unref(&b->wire);
            b->wire = r->wire ? wamp_buf_ref((wamp_buf *)(uintptr_t)r->wire) : NULL;
        }
    } else if (wire_same) {
        what |= C_WIRE | C_WIRE_SAME;
    }
    h[HDR_LEN] = (unsigned char)what;
    b->seq = r->seq;
    b->pc = r->pc_ns;
    b->ts = r->ts_ns;
    b->has_prev = true;
    b->prev_wire = own || wire_same;
    b->prev_type = r->msg_type;
    b->prev_b2 = b2;
    b->prev_key = r->key;
    memcpy(b->prev_ser, r->ser_bytes, sizeof(b->prev_ser));
    return end_record(p, s, r, h, d);
}

wamp_err trace_persist_flush(trace_persist *p, bool sync, uint64_t now_pc_ns)
{
    if (!p->writable) {
        return p->error ? WAMP_ECLOSED : WAMP_OK;
    }
    wamp_err err = write_out(p);
    if (err != WAMP_OK) {
        return err;
    }
    bool due =
            p->fsync == TRACE_FSYNC_BATCH ||
            (p->fsync == TRACE_FSYNC_INTERVAL &&
             (now_pc_ns < p->last_sync_pc || now_pc_ns - p->last_sync_pc >= p->fsync_interval_ns));
    if (sync || due) {
        err = sync_active(p, now_pc_ns);
        if (err != WAMP_OK) {
            return err;
        }
    }
    if (sync && p->w) {
        writer_drain(p->w, true);
    }
    return persist_failed(p) ? WAMP_ECLOSED : WAMP_OK;
}

wamp_err trace_persist_tick(trace_persist *p, uint64_t now_pc_ns, uint64_t now_ts_ns)
{
    wamp_err err = trace_persist_flush(p, false, now_pc_ns);
    if (err == WAMP_OK && p->max_age_ns) {
        apply_retention(p, now_ts_ns, true);
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
    int fd = open_in(p->dir, "meta.json.tmp", O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0) {
        err = fail_io(p, "create", "meta.json.tmp");
    } else {
        size_t n = strlen(text);
        text[n] = '\n';
        if (!write_all(p->io, fd, text, n + 1) || io_fsync(p->io, fd) != 0) {
            err = fail_io(p, "write", "meta.json.tmp");
        }
        close(fd);
    }
    free(text);
    if (err != WAMP_OK) {
        return err;
    }
    char *from = path_join(p->dir, "meta.json.tmp");
    char *to = path_join(p->dir, "meta.json");
    if (!from || !to) {
        err = WAMP_ENOMEM;
    } else if (rename(from, to) != 0) {
        err = fail_io(p, "rename", "meta.json.tmp");
    } else {
        /* Also makes the names of the segments made since the last time durable: at stop,
         * everything the trace wrote is on disk under its name. */
        err = sync_names(p, true);
    }
    free(from);
    free(to);
    return err;
}

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
    rd->file_end = (active ? p->written : s->size) - writer_failed_bytes(p->w, s->first_seq);
    if (rd->file_end == 0) {
        return true;
    }
    char name[40];
    seg_name(name, sizeof(name), s->first_seq, "seg");
    rd->fd = open_in(p->dir, name, O_RDONLY);
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
    if (rd->fd < 0 || !pread_all(rd->fd, rd->win, want, off)) {
        rd->win_len = 0;
        return NULL;
    }
    rd->win_off = off;
    rd->win_len = want;
    return rd->win;
}

/* A string field: NULL when absent; malloc'ed copy in *out (caller frees). */
static bool cur_blob(cursor *c, const unsigned char **data, uint32_t *len, bool *present)
{
    if (c->end - c->p < 4) {
        return c->ok = false;
    }
    uint32_t n = get32(c->p);
    c->p += 4;
    *present = n != NIL_LEN;
    if (!*present) {
        *data = NULL;
        *len = 0;
        return true;
    }
    if ((size_t)(c->end - c->p) < n) {
        return c->ok = false;
    }
    *data = c->p;
    *len = n;
    c->p += n;
    return true;
}

static char *dup_n(const unsigned char *s, uint32_t n)
{
    char *d = malloc((size_t)n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* The static string of a drop reason read back (trace_record.dropped is a static string). */
static const char *intern_reason(const unsigned char *s, uint32_t n)
{
    static const char *const known[] = {"queue_full", "session_closed", "encode_failed", "too_big",
                                        "slow_consumer"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strlen(known[i]) == n && memcmp(known[i], s, n) == 0) {
            return known[i];
        }
    }
    return "unknown";
}

/* Same peer as the previous record of the page: shared, like the capture path shares it. */
static bool peer_equal(const trace_peer *pe, uint64_t sid, const char *realm, const char *authid,
                       const char *authrole)
{
    const char *a[3] = {trace_peer_realm(pe), trace_peer_authid(pe), trace_peer_authrole(pe)};
    const char *b[3] = {realm, authid, authrole};
    if (trace_peer_session_id(pe) != sid) {
        return false;
    }
    for (int i = 0; i < 3; i++) {
        if ((a[i] == NULL) != (b[i] == NULL) || (a[i] && strcmp(a[i], b[i]) != 0)) {
            return false;
        }
    }
    return true;
}

/* Decodes one verified body into *r (owned references). false on a malformed body. */
static bool decode_record(const unsigned char *b, uint32_t len, trace_record *r,
                          const trace_record *prev)
{
    memset(r, 0, sizeof(*r));
    if (len < FIXED_LEN) {
        return false;
    }
    r->seq = get64(b);
    r->pc_ns = get64(b + 8);
    r->ts_ns = get64(b + 16);
    uint64_t sid = get64(b + 24);
    const unsigned char *d = b + 32;
    for (int i = 0; i < PERSIST_SERS; i++) {
        r->ser_bytes[i] = get32(d);
        d += 4;
    }
    r->dir = d[0];
    r->msg_type = d[1];
    r->wire_ser = d[2];
    r->flags = d[3];
    bool has_peer = d[4] != 0;
    memcpy(r->corr, d + 5, TRACE_UUID_LEN);
    cursor c = {b + FIXED_LEN, b + len, true};
    const unsigned char *f[6];
    uint32_t fl[6];
    bool fp[6];
    for (int i = 0; i < 6; i++) {
        if (!cur_blob(&c, &f[i], &fl[i], &fp[i])) {
            return false;
        }
    }
    char *s[4] = {NULL, NULL, NULL, NULL};
    bool ok = true;
    for (int i = 0; i < 4; i++) {
        if (fp[i]) {
            s[i] = dup_n(f[i], fl[i]);
            ok = ok && s[i];
        }
    }
    if (ok && has_peer) {
        if (prev && prev->peer && peer_equal(prev->peer, sid, s[0], s[1], s[2])) {
            r->peer = trace_peer_ref(prev->peer);
        } else {
            r->peer = trace_peer_new(sid, s[0], s[1], s[2]);
        }
    }
    if (ok && s[3]) {
        if (prev && prev->uri && strcmp(trace_str_get(prev->uri), s[3]) == 0) {
            r->uri = trace_str_ref(prev->uri);
        } else {
            r->uri = trace_str_new(s[3]);
        }
    }
    for (int i = 0; i < 4; i++) {
        free(s[i]);
    }
    if (fp[4]) {
        r->dropped = intern_reason(f[4], fl[4]);
    }
    if (fp[5]) {
        r->wire = wamp_buf_new_copy(f[5], fl[5]);
    }
    return ok;
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
static uint64_t find_off(const seg *s, uint64_t seq)
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
    return lo ? s->idx[lo - 1].off : 0;
}

/* The offset of the first index entry of s after off (where reading goes on after damage: a
 * reopen verified that each one starts a block), or UINT64_MAX. */
static uint64_t next_block_after(const seg *s, uint64_t off)
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
    return lo < s->n_idx ? s->idx[lo].off : UINT64_MAX;
}

size_t trace_persist_read(trace_persist *p, uint64_t from_seq, uint64_t to_seq, size_t limit,
                          trace_record *out)
{
    size_t n = 0;
    reader rd = {.p = p, .fd = -1};
    block blk = {0};
    if (p->w) {
        /* Only what is in the files is returned: the buffered records first go to the writer
         * (a failure makes them the io_error gap), and the writer finishes what it has. */
        if (p->len && !persist_failed(p)) {
            (void)write_out(p);
        }
        writer_drain(p->w, false);
        (void)persist_failed(p);
    }
    if (p->io_from != NO_SEQ && to_seq > p->io_from) {
        to_seq = p->io_from;
    }
    for (size_t si = find_seg(p, from_seq); si < p->n_segs && n < limit; si++) {
        const seg *s = &p->segs[si];
        if (s->first_seq >= to_seq) {
            break;
        }
        if (!reader_open(&rd, si)) {
            continue;
        }
        /* An index entry (or the segment's start) starts a block of compact records. */
        uint64_t off = from_seq > s->first_seq ? find_off(s, from_seq) : 0;
        block_reset(&blk);
        while (n < limit && off < s->size) {
            uint64_t at = off;
            const unsigned char *h = reader_at(&rd, off, HDR_LEN);
            uint32_t len = 0;
            bool compact = false;
            const unsigned char *b = NULL;
            if (h && frame_len(get32(h), &len, &compact)) {
                uint32_t crc = get32(h + 4);
                b = reader_at(&rd, off + HDR_LEN, len);
                if (b && !rd.mem && trace_crc32c(0, b, len) != crc) {
                    b = NULL;
                }
            }
            if (!b) {
                goto damaged;
            }
            off += HDR_LEN + len;
            uint32_t run = 0;
            if (compact && is_run(b, len, &blk, &run)) {
                /* count repeats, each decoded even when skipped (peers it defines) */
                cursor c = {.p = b + C_RUN_HEAD, .end = b + len, .ok = true};
                bool ok = run > 0 && blk.open, done = false;
                uint32_t k = 0;
                for (; ok && !done && k < run && n < limit; k++) {
                    blk.seq++;
                    ok = decode_repeat(&c, &blk, true, true, &out[n]);
                    if (!ok || out[n].seq < from_seq || out[n].seq >= to_seq) {
                        done = ok && out[n].seq >= to_seq;
                        trace_record_fini(&out[n]);
                        continue;
                    }
                    n++;
                }
                if (!ok || (k == run && c.p != c.end)) {
                    goto damaged;
                }
                if (done) {
                    si = p->n_segs;
                    break;
                }
                continue;
            }
            if (!compact) {
                uint64_t seq = get64(b);
                if (seq < from_seq) {
                    continue;
                }
                if (seq >= to_seq) {
                    si = p->n_segs; /* done */
                    break;
                }
            }
            /* A compact record is decoded even when skipped: it may define what later ones
             * refer to. */
            bool ok = compact ? decode_compact(b, len, &blk, &out[n])
                              : decode_record(b, len, &out[n], n ? &out[n - 1] : NULL);
            if (!ok) {
                trace_record_fini(&out[n]);
                goto damaged;
            }
            if (out[n].seq < from_seq) {
                trace_record_fini(&out[n]);
                continue;
            }
            if (out[n].seq >= to_seq) {
                trace_record_fini(&out[n]);
                si = p->n_segs; /* done */
                break;
            }
            n++;
            continue;
        damaged:
            /* A gap (the reopen found it): reading goes on at the next block start. */
            off = next_block_after(s, at);
            block_reset(&blk);
        }
    }
    block_reset(&blk);
    if (rd.fd >= 0) {
        close(rd.fd);
    }
    free(rd.win);
    return n;
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
