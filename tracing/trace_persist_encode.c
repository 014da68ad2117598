/* trace_persist_encode.c: appending records: the compact encoder (format 7: blocks, repeats,
 * runs, short records, half UUIDs, message bytes ending with the block's base bytes, packs;
 * PERSIST_FORMAT.md, "Records") into the write buffer, which goes to the writer thread when
 * full. */
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "trace_persist_int.h"

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
    /* Fibonacci hashing: the product's top bits depend on every bit of the address. */
    return (size_t)(((uint64_t)(uintptr_t)x * UINT64_C(0x9e3779b97f4a7c15)) >> 56);
}

_Static_assert(HINT_SLOTS == 256u && DEF_SLOTS <= HINT_SLOTS, "hint_slot() gives 8 bits");

/* table_find() by the hint alone (no search): x's index, or n. */
static inline size_t hint_find(void *const *table, size_t n, const void *x, const uint8_t *hints)
{
    size_t h = hints[hint_slot(x)];
    return h < n && table[h] == x ? h : n;
}

static size_t table_find(void *const *table, size_t n, const void *x, uint8_t *hints)
{
    size_t h = hint_find(table, n, x, hints);
    if (h < n) {
        return h;
    }
    for (size_t i = n; i-- > 0;) {
        if (table[i] == x) {
            hints[hint_slot(x)] = (uint8_t)i;
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
 * block: a copy of the one written last time (p->defs), or written out and kept for the next. */
static unsigned char *put_peer_def(trace_persist *p, block *b, unsigned char *d, trace_peer *peer)
{
    /* A pair of slots per address: a peer is in either; a new one takes an empty one, else the
     * first, whose peer moves to the second (the second's goes): the two newest stay. */
    def_slot *c = &p->defs[hint_slot(peer) & (DEF_SLOTS - 1)];
    def_slot *c2 = &p->defs[(hint_slot(peer) & (DEF_SLOTS - 1)) ^ 1u];
    if (c->peer == peer || c2->peer == peer) {
        c = c->peer == peer ? c : c2;
        memcpy(d, c->bytes, c->len);
        d += c->len;
    } else {
        unsigned char *def = d;
        const char *realm = trace_peer_realm(peer);
        const char *authid = trace_peer_authid(peer);
        const char *authrole = trace_peer_authrole(peer);
        d = put_var(d, trace_peer_session_id(peer));
        d = put_vstr(d, realm, str_len(realm));
        d = put_vstr(d, authid, str_len(authid));
        d = put_vstr(d, authrole, str_len(authrole));
        size_t n = (size_t)(d - def);
        if (n <= DEF_BYTES) {
            if (c->peer && !c2->peer) {
                c = c2;
            } else if (c->peer) {
                /* The pair's older one goes, the newer one moves over. */
                trace_peer_unref(&c2->peer);
                *c2 = *c;
                c->peer = NULL;
            }
            c->peer = trace_peer_ref(peer);
            c->len = (uint8_t)n;
            memcpy(c->bytes, def, n);
        }
    }
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

/* Whether r, in the block b has open, is its previous record again but for the peer and the
 * next seq (an EVENT's fan-out): a C_REPEAT. Object identity stands for equality: the block
 * holds a reference on the previous record's URI (in its table) and message buffer (`wire`), so
 * their addresses cannot be reused meanwhile. Plain bytes (a received message) have no
 * identity: a record with them is never a repeat. */
static bool is_repeat(const block *b, const trace_rec_view *r, uint8_t b2)
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
    return !(r->flags & TRACE_CORR_HAS) || (b->has_corr && trace_uuid_eq(b->corr, r->corr));
}

/* Accounts for need more bytes of the record r (ending with it) in the write buffer, and hands the
 * buffer over when full. */
static inline wamp_err account(trace_persist *p, seg *s, const trace_rec_view *r, size_t need)
{
    p->len += need;
    s->size += need;
    s->next_seq = r->seq + 1;
    s->last_ts = r->ts_ns;
    p->bytes += need;
    if (p->len >= TRACE_PERSIST_BUFFER_MAX) {
        return persist_write_out(p);
    }
    return WAMP_OK;
}

/* Frames the record whose header is at h and body ends at d, alone, and accounts for it. */
static wamp_err end_record(trace_persist *p, seg *s, const trace_rec_view *r, unsigned char *h,
                           const unsigned char *d)
{
    size_t body = (size_t)(d - (h + HDR_LEN));
    put32(h, (uint32_t)body | LEN_COMPACT);
    put32(h + 4, 0); /* the CRC: the writer's work */
    p->pack_off = NO_PACK;
    return account(p, s, r, HDR_LEN + body);
}

/* How a full record is framed (rec_begin()). */
enum {
    REC_ALONE,
    REC_NEW_PACK,
    REC_JOIN
};

/* Where the body of a full record of at most max bytes goes, room for it reserved (HDR_LEN +
 * PACK_EXTRA + max): in a frame of its own (a block's first record, one larger than
 * PACK_REC_MAX), else into the pack written last (while it holds less than PACK_MAX bytes), else
 * into a new pack (format 7). *mode tells rec_end() which. */
static inline unsigned char *rec_begin(trace_persist *p, bool first, size_t max, int *mode)
{
    unsigned char *h = p->buf + p->len;
    if (first || max > PACK_REC_MAX) {
        *mode = REC_ALONE;
        return h + HDR_LEN;
    }
    if (p->pack_off != NO_PACK && (get32(p->buf + p->pack_off) & ~LEN_COMPACT) < PACK_MAX) {
        *mode = REC_JOIN;
        return h + 1; /* after its length, one byte if under 128 */
    }
    *mode = REC_NEW_PACK;
    h[HDR_LEN] = C_PACK;
    return h + HDR_LEN + 2;
}

/* A pack entry's body of len bytes (128 or more) at body, its length a varint of two bytes or
 * more before it where rec_begin() left one: the body moves up (and the block's base bytes with
 * it, if they are its own). Returns the entry's bytes. Out of line: rare. */
static size_t pack_long_entry(trace_persist *p, unsigned char *body, size_t len)
{
    unsigned char var[VAR_MAX];
    size_t vs = (size_t)(put_var(var, len) - var);
    memmove(body + vs - 1, body, len);
    if (p->blk.base_off != NO_BASE && p->blk.base_off >= (size_t)(body - p->buf)) {
        p->blk.base_off += vs - 1;
    }
    memcpy(body - 1, var, vs);
    return vs + len;
}

/* Frames the full record whose body (at body, from rec_begin()) ends at d, and accounts for it.
 * Inline: a call cost about 50 instructions a record in the router's RPC benchmark. */
static inline __attribute__((always_inline)) wamp_err rec_end(trace_persist *p, seg *s,
                                                              const trace_rec_view *r, int mode,
                                                              unsigned char *body, unsigned char *d)
{
    if (mode == REC_ALONE) {
        return end_record(p, s, r, body - HDR_LEN, d);
    }
    size_t len = (size_t)(d - body);
    size_t need = len + 1;
    if (len < 0x80u) {
        body[-1] = (unsigned char)len;
    } else {
        need = pack_long_entry(p, body, len);
    }
    if (mode == REC_NEW_PACK) {
        unsigned char *h = body - 2 - HDR_LEN;
        put32(h, (uint32_t)(1 + need) | LEN_COMPACT);
        put32(h + 4, 0); /* the CRC: the writer's work */
        p->pack_off = (size_t)(h - p->buf);
        need += HDR_LEN + 1;
    } else {
        unsigned char *h = p->buf + p->pack_off;
        put32(h, get32(h) + (uint32_t)need);
    }
    return account(p, s, r, need);
}

/* Notes in the block's memo that the receiver at position j (RUN_MEMO or more: not kept) is peer,
 * the block's i-th peer (i < 0x40: a one-byte run code). */
static inline void memo_note(block *b, size_t j, const trace_peer *peer, size_t i)
{
    if (j < RUN_MEMO) {
        b->memo_peer[j] = (uintptr_t)peer + 1;
        b->memo_code[j] = (uint8_t)(i << 1);
    }
}

/* A run's entry that extend_run()'s memo and hint do not find (a peer new to the block, a hint
 * taken by another address, a code longer than a byte): the table searched, the peer defined
 * when new (room for it reserved, need bytes besides), the memo at position j set. NULL when out
 * of memory (nothing written). */
static unsigned char *put_entry(trace_persist *p, block *b, unsigned char *d, trace_peer *peer,
                                size_t j, size_t need, bool last)
{
    size_t i = table_find(b->peers, b->n_peers, peer, p->peer_hint);
    if (i == b->n_peers) {
        p->len = (size_t)(d - p->buf);
        if (!buf_reserve(p, need + peer_def_max(peer))) {
            return NULL;
        }
        d = p->buf + p->len;
    }
    d = put_run_entry(p, b, d, peer, i, last);
    if (i < b->n_peers && i < 0x40u) {
        memo_note(b, j, peer, i);
    }
    return d;
}

/* A run's usual entries, in a loop of their own: from the first, while the receiver at each
 * position (pos, pos + 1, ...) is the one the block's memo remembers there, its code (one byte
 * each, peers[last_k]'s with the last bit) at d, at most max of them and only within the memo.
 * Returns how many. Half the instructions an entry of extend_run()'s general loop. */
static inline size_t memo_entries(const block *b, unsigned char *d, trace_peer *const *peers,
                                  size_t pos, size_t max, size_t last_k)
{
    if (pos >= RUN_MEMO) {
        return 0;
    }
    size_t fast = RUN_MEMO - pos < max ? RUN_MEMO - pos : max;
    const uintptr_t *memo = b->memo_peer + pos;
    const uint8_t *code = b->memo_code + pos;
    size_t k = 0;
    while (k < fast && memo[k] == (uintptr_t)peers[k] + 1) {
        d[k] = code[k];
        k++;
    }
    if (last_k < k) {
        d[last_k] |= 1u;
    }
    return k;
}

/* Adds up to max_k repeats to the run written last (p->run_off), or to a new one when there is
 * none, with the seqs first_seq, ... and the peers peers[0..) (receivers pos, pos + 1, ... of
 * their message, for the block's memo; RUN_MEMO or more: none): each one its entry
 * (peers[last_k]'s with the last bit; SIZE_MAX for none), the frame's length and the run's count
 * updated once. A run never holds a NULL peer: it stops before one. Stops early at a full run
 * or a full buffer (handed over then). Returns how many were added (a new run with none is not
 * written); *err is set when one could not be (out of memory, or the hand-over failed). */
static size_t extend_run(trace_persist *p, seg *s, block *b, uint64_t first_seq, uint64_t ts_ns,
                         trace_peer *const *peers, size_t pos, size_t max_k, size_t last_k,
                         wamp_err *err)
{
    *err = WAMP_OK;
    bool fresh = p->run_off == NO_RUN;
    uint32_t count = fresh ? 0 : get16(p->buf + p->run_off + HDR_LEN + 1);
    size_t n = C_RUN_MAX - count < max_k ? C_RUN_MAX - count : max_k;
    size_t head = fresh ? HDR_LEN + C_RUN_HEAD : 0;
    /* One reservation for the entries (a varint each); a peer new to the block reserves room
     * for its definition when it comes. */
    if (!buf_reserve(p, head + n * VAR_MAX)) {
        *err = WAMP_ENOMEM;
        return 0;
    }
    if (fresh) {
        unsigned char *h = p->buf + p->len;
        put32(h, C_RUN_HEAD | LEN_COMPACT);
        put32(h + 4, 0); /* the CRC: the writer's work */
        h[HDR_LEN] = (unsigned char)(C_REPEAT | C_PEER | C_RUN);
        put16(h + HDR_LEN + 1, 0);
        p->run_off = p->len;
        p->pack_off = NO_PACK; /* the pack is no longer the last frame */
        p->len += head;
    }
    size_t start = p->len;
    unsigned char *d = p->buf + p->len;
    const unsigned char *full = p->buf + TRACE_PERSIST_BUFFER_MAX;
    size_t room = d < full ? (size_t)(full - d) : 1; /* one at least, as below */
    size_t k = memo_entries(b, d, peers, pos, n < room ? n : room, last_k);
    d += k;
    for (; k < n && (d < full || !k); k++) { /* one at least: a new run is never empty */
        trace_peer *peer = peers[k];
        size_t j = pos + k;
        /* The usual entry: the receiver at this position last time (the memo), or a peer its
         * hint finds; a code of one byte. */
        if (j < RUN_MEMO && b->memo_peer[j] == (uintptr_t)peer + 1) {
            *d++ = (unsigned char)(b->memo_code[j] | (k == last_k));
            continue;
        }
        size_t h = hint_find(b->peers, b->n_peers, peer, p->peer_hint);
        if (h < b->n_peers && h < 0x40u) {
            *d++ = (unsigned char)(h << 1 | (k == last_k));
            memo_note(b, j, peer, h);
            continue;
        }
        if (!peer) {
            break;
        }
        unsigned char *e = put_entry(p, b, d, peer, j, (n - k) * VAR_MAX, k == last_k);
        if (!e) {
            *err = WAMP_ENOMEM;
            break;
        }
        d = e;
        full = p->buf + TRACE_PERSIST_BUFFER_MAX;
    }
    p->len = (size_t)(d - p->buf);
    if (!k) {
        if (fresh) {
            p->len -= head; /* no run without an entry */
            p->run_off = NO_RUN;
        }
        return 0;
    }
    count += (uint32_t)k;
    size_t add = p->len - start;
    unsigned char *h = p->buf + p->run_off;
    put32(h, get32(h) + (uint32_t)add); /* LEN_COMPACT stays set: a run is small */
    put16(h + HDR_LEN + 1, count);
    s->size += head + add;
    p->bytes += head + add;
    s->next_seq = first_seq + k;
    s->last_ts = ts_ns;
    b->seq = first_seq + k - 1;
    if (count == C_RUN_MAX) {
        p->run_off = NO_RUN;
    }
    if (*err == WAMP_OK && p->len >= TRACE_PERSIST_BUFFER_MAX) {
        *err = persist_write_out(p);
    }
    return k;
}

/* Appends r as a repeat (is_repeat()): with a peer, into the run written last or as a new run;
 * a repeat without a peer as a C_REPEAT record of its own. */
static wamp_err append_repeat(trace_persist *p, seg *s, block *b, const trace_rec_view *r)
{
    wamp_err err;
    if (r->peer) {
        /* Adds it, or fails with err (a run always has room for one more). */
        (void)extend_run(p, s, b, r->seq, r->ts_ns, &r->peer, RUN_MEMO, 1, SIZE_MAX, &err);
        return err;
    }
    if (!buf_reserve(p, HDR_LEN + C_MIN_LEN)) {
        return WAMP_ENOMEM;
    }
    unsigned char *h = p->buf + p->len;
    unsigned char *d = h + HDR_LEN;
    *d++ = (unsigned char)C_REPEAT;
    b->seq = r->seq;
    return end_record(p, s, r, h, d);
}

/* Whether the record of key, peer and seq is a repeat of the block's previous record without
 * further checks (append_repeat() or extend_run() then adds it to the run, or starts one): the
 * same key (the same message but for peer and seq), a peer, the next seq, and no block start or
 * full segment at seq; *s is then the active segment. */
static bool joins_run(trace_persist *p, uint64_t key, const trace_peer *peer, uint64_t seq, seg **s)
{
    const block *b = &p->blk;
    if (!key || key != b->prev_key || !peer || seq != b->seq + 1) {
        return false;
    }
    *s = &p->segs[p->n_segs - 1];
    return block_pos(*s, seq) != 0 && (*s)->size < p->segment_bytes;
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

static wamp_err append_rec(trace_persist *p, const trace_rec_view *r);

static wamp_err append_run(trace_persist *p, const trace_rec_view *r, trace_peer *const *peers,
                           size_t n, bool last);

wamp_err trace_persist_append_run(trace_persist *p, const trace_rec_view *r,
                                  trace_peer *const *peers, size_t n, bool last)
{
    wamp_err err = append_run(p, r, peers, n, last);
    if (err != WAMP_OK) {
        note_lost(p, r->seq + n);
    }
    return err;
}

wamp_err trace_persist_append_rec(trace_persist *p, const trace_rec_view *r)
{
    wamp_err err = append_rec(p, r);
    if (err != WAMP_OK) {
        note_lost(p, r->seq + 1);
    }
    return err;
}

static wamp_err append_run(trace_persist *p, const trace_rec_view *r, trace_peer *const *peers,
                           size_t n, bool last)
{
    for (size_t i = 0; i < n;) {
        uint64_t seq = r->seq + i;
        seg *s;
        if (p->writable && !p->error && joins_run(p, r->key, peers[i], seq, &s)) {
            /* As many as the block and the run take, in one go. */
            uint64_t in_block = TRACE_PERSIST_INDEX_EVERY - block_pos(s, seq);
            size_t max_k = n - i < in_block ? n - i : (size_t)in_block;
            wamp_err err;
            size_t k = extend_run(p, s, &p->blk, seq, r->ts_ns, peers + i, i, max_k,
                                  last ? n - 1 - i : SIZE_MAX, &err);
            if (err != WAMP_OK) {
                return err;
            }
            i += k;
            continue;
        }
        trace_rec_view one = *r;
        one.seq = seq;
        one.peer = peers[i];
        if (last && i == n - 1) {
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
    trace_rec_view v;
    trace_rec_view_of(r, &v);
    return trace_persist_append_rec(p, &v);
}

/* The active segment for r: opened if there is none, rotated when full. */
static wamp_err segment_for(trace_persist *p, const trace_rec_view *r, seg **out)
{
    wamp_err err;
    if (p->fd < 0) {
        err = persist_open_segment(p, r->seq);
        if (err != WAMP_OK) {
            return err;
        }
    }
    seg *s = &p->segs[p->n_segs - 1];
    if (s->size >= p->segment_bytes && s->next_seq > s->first_seq) {
        err = persist_rotate(p, r->seq, r->ts_ns);
        if (err != WAMP_OK) {
            return err;
        }
        s = &p->segs[p->n_segs - 1];
    }
    *out = s;
    return WAMP_OK;
}

/* The bytes of a full record besides its message bytes, a drop reason and new definitions:
 * 3 bytes, 6 varints (seq, pc, ts, ser_bytes), the peer's and the URI's, the UUID and the bytes'
 * length (plan_full()'s bound). */
#define FULL_FIXED_MAX (3u + 8u * VAR_MAX + TRACE_UUID_LEN + VAR_MAX)

/* Whether r, with bytes of its own of len octets, may be written short (C2_SHORT) in block b:
 * those bytes' length in its serializer is its only size, and its ts moved as its pc did. */
static inline bool short_fits(const block *b, const trace_rec_view *r, size_t len)
{
    if (r->wire_ser >= WAMP_SER_COUNT || len > UINT32_MAX || r->ts_ns - b->ts != r->pc_ns - b->pc) {
        return false;
    }
    /* Its size is len and the others add up to 0, without building the sizes it implies: the
     * 8-byte loads of a memcmp() of those, just stored 4 bytes at a time, could not be forwarded
     * from the stores and waited for them (a fifth of the encoder's time in a profile). */
    const uint32_t *sz = r->ser_bytes;
    uint64_t sum = (uint64_t)sz[0] + sz[1] + sz[2] + sz[3];
    _Static_assert(WAMP_SER_COUNT == 4, "four sizes");
    return sz[r->wire_ser] == len && sum == len;
}

/* The dir/ser/flags byte of a full record (without C2_SHORT). */
static inline uint8_t rec_b2(const trace_rec_view *r)
{
    return (uint8_t)((r->dir & 3u) | (r->wire_ser & 3u) << 2 | (r->flags & 7u) << 4);
}

/* What a full record (not a repeat) writes, decided before anything is (plan_full()). */
typedef struct full_plan {
    bool first;     /* the block's first record (C_BLOCK) */
    bool own;       /* it carries its bytes (C_WIRE without C_WIRE_SAME) */
    bool wire_same; /* it refers to the block's message buffer (C_WIRE | C_WIRE_SAME) */
    bool is_short;  /* C2_SHORT */
    bool uri_def;   /* its URI is new to the block: defined here */
    uint8_t b2;     /* dir | wire_ser << 2 | flags << 4 */
    size_t peer_i;  /* the peer's index in the block's table (n_peers: new) */
    size_t uri_i;   /* the URI's (n_uris: new) */
    const void *bytes;
    size_t wire_len;
    const char *uri_s; /* a URI defined here, and its length */
    size_t uri_len;
    size_t max; /* the most bytes the body can take */
} full_plan;

/* What is new in the block, the most the body can take, and whether the record is short. */
static void plan_full(trace_persist *p, const block *b, const trace_rec_view *r, full_plan *f)
{
    trace_peer *peer = r->peer;
    f->peer_i = peer ? table_find(b->peers, b->n_peers, peer, p->peer_hint) : 0;
    f->uri_i = r->uri ? table_find(b->uris, b->n_uris, r->uri, p->uri_hint) : 0;
    f->uri_def = r->uri && f->uri_i == b->n_uris;
    f->bytes = trace_rec_view_data(r, &f->wire_len);
    f->wire_same = r->wire && r->wire == b->wire;
    f->own = f->bytes && !f->wire_same;
    f->max = FULL_FIXED_MAX - VAR_MAX + (f->own ? VAR_MAX + f->wire_len : 0);
    if (r->dropped) {
        f->max += VAR_MAX + strlen(r->dropped);
    }
    if (peer && f->peer_i == b->n_peers) {
        f->max += peer_def_max(peer);
    }
    f->uri_s = NULL;
    f->uri_len = 0;
    if (f->uri_def) {
        f->uri_s = trace_str_get(r->uri);
        f->uri_len = strlen(f->uri_s);
        f->max += VAR_MAX + f->uri_len;
    }
    if (f->own && f->max > BODY_MAX) {
        /* Larger than a reader accepts: the record without its bytes. */
        f->own = false;
        f->bytes = NULL;
        f->max -= VAR_MAX + f->wire_len;
    }
    f->is_short = f->own && !f->first && short_fits(b, r, f->wire_len);
}

/* The body's fixed part after the what byte: msg_type, the dir/ser/flags byte, seq, pc and ts
 * (absolute in a block's first record, else differences) and the sizes. */
static unsigned char *put_head(unsigned char *d, const block *b, const trace_rec_view *r,
                               const full_plan *f)
{
    d[1] = r->msg_type;
    d[2] = (unsigned char)(f->b2 | (f->is_short ? C2_SHORT : 0));
    d += 3;
    if (f->first) {
        d = put_var(d, r->seq);
        d = put_var(d, r->pc_ns);
        d = put_var(d, r->ts_ns);
    } else {
        d = put_var(d, r->seq - b->seq);
        d = put_var(d, zigzag(r->pc_ns, b->pc));
        if (!f->is_short) {
            d = put_var(d, zigzag(r->ts_ns, b->ts));
        }
    }
    if (!f->is_short) {
        for (int i = 0; i < PERSIST_SERS; i++) {
            d = put_var(d, r->ser_bytes[persist_ser_slot(i)]);
        }
    }
    return d;
}

/* The correlation UUID: C_CORR_SAME in *what when it is the block's last one again; else, when
 * its first half is the last one's (the router's generator keeps a first half for its
 * lifetime), its second half only, with C_CORR_HALF and TRACE_CORR_HAS taken out of the flags
 * in the record's third byte (*b2; format 7); else all of it. */
static inline unsigned char *put_corr(block *b, unsigned char *d, const trace_rec_view *r,
                                      unsigned char *b2, unsigned *what)
{
    if (!(r->flags & TRACE_CORR_HAS)) {
        return d;
    }
    uint64_t x[2], y[2];
    memcpy(x, r->corr, TRACE_UUID_LEN);
    memcpy(y, b->corr, TRACE_UUID_LEN);
    if (b->has_corr && x[0] == y[0]) {
        *what |= C_CORR_SAME;
        if (x[1] == y[1]) {
            return d;
        }
        *b2 = (unsigned char)(*b2 & ~(TRACE_CORR_HAS << 4));
        memcpy(d, r->corr + UUID_HALF, UUID_HALF);
        memcpy(b->corr + UUID_HALF, r->corr + UUID_HALF, UUID_HALF);
        return d + UUID_HALF;
    }
    memcpy(d, r->corr, TRACE_UUID_LEN);
    memcpy(b->corr, r->corr, TRACE_UUID_LEN);
    b->has_corr = true;
    return d + TRACE_UUID_LEN;
}

/* How many octets a (na of them) and b (nb) have in common at their ends: 16 at a time where
 * the CPU compares 16 at once (an INVOCATION's 35 common octets in 3 steps, not 5), else 8. */
static inline size_t common_end(const unsigned char *a, size_t na, const unsigned char *b,
                                size_t nb)
{
    size_t n = na < nb ? na : nb, k = 0;
#ifdef __SSE2__
    for (; k + 16 <= n; k += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(a + na - k - 16));
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(b + nb - k - 16));
        /* Bit i: octet i differs; the highest one is the last that does. */
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) ^ 0xffffu;
        if (m) {
            return k + (size_t)__builtin_clz(m) - 16;
        }
    }
#endif
    for (; k + 8 <= n; k += 8) {
        uint64_t x, y;
        memcpy(&x, a + na - k - 8, 8);
        memcpy(&y, b + nb - k - 8, 8);
        if (x != y) {
            /* The last octet in memory is the most significant one on a little-endian CPU. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return k + (size_t)__builtin_clzll(x ^ y) / 8;
#else
            return k + (size_t)__builtin_ctzll(x ^ y) / 8;
#endif
        }
    }
    while (k < n && a[na - k - 1] == b[nb - k - 1]) {
        k++;
    }
    return k;
}

/* The peer, the URI (defined in the block's table when new), the drop reason and the
 * correlation UUID, each with its bit in *what. */
static unsigned char *put_refs(trace_persist *p, block *b, unsigned char *body, unsigned char *d,
                               const trace_rec_view *r, const full_plan *f, unsigned *what)
{
    if (r->peer) {
        *what |= C_PEER;
        d = put_peer(p, b, d, r->peer, f->peer_i);
    }
    b->prev_uri = PREV_NO_URI;
    if (r->uri) {
        *what |= C_URI;
        d = put_var(d, f->uri_i);
        b->prev_uri = f->uri_def ? PREV_BAD_URI : f->uri_i;
        if (f->uri_def) {
            d = put_vstr(d, f->uri_s, f->uri_len);
            if (b->n_uris < BLOCK_TABLE) {
                b->prev_uri = b->n_uris;
                table_add(b->uris, &b->n_uris, trace_str_ref(r->uri), p->uri_hint);
            }
        }
    }
    if (r->dropped) {
        *what |= C_DROPPED;
        d = put_vstr(d, r->dropped, strlen(r->dropped));
    }
    return put_corr(b, d, r, body + 2, what);
}

/* The message bytes: its own, or the block's buffer again (C_WIRE | C_WIRE_SAME). Its own bytes
 * are written whole (C_WIRE; they become the block's base bytes) unless they end with at least
 * WIRE_END_MIN octets of the base bytes: then only what comes before those (C_WIRE_END, format
 * 7): a CALL's arguments end its INVOCATION too, a PUBLISH's its EVENT. At most as long as the
 * whole bytes: room reserved for those suffices. Inline, as block_note(): put_short() calls
 * both with a plan known at compile time, and a call each cost about 35 instructions a record
 * more. */
static inline __attribute__((always_inline)) unsigned char *
put_wire(trace_persist *p, block *b, unsigned char *d, const trace_rec_view *r, const full_plan *f,
         unsigned *what)
{
    if (f->own) {
        size_t end = b->base_off == NO_BASE
                             ? 0
                             : common_end(f->bytes, f->wire_len, p->buf + b->base_off, b->base_len);
        if (end >= WIRE_END_MIN) {
            *what |= C_WIRE_END;
            d = put_var(d, end);
            d = put_var(d, f->wire_len - end);
        } else {
            *what |= C_WIRE;
            d = put_var(d, f->wire_len);
            b->base_off = (size_t)(d - p->buf);
            b->base_len = f->wire_len;
            end = 0;
        }
        memcpy(d, f->bytes, f->wire_len - end);
        d += f->wire_len - end;
        /* Only a shared buffer can be referred to by a later record of the block (its
         * reference keeps the address from being reused); plain bytes cannot. */
        if (b->wire != r->wire) {
            wamp_buf_unref(&b->wire);
            b->wire = r->wire ? wamp_buf_ref((wamp_buf *)(uintptr_t)r->wire) : NULL;
        }
    } else if (f->wire_same) {
        *what |= C_WIRE | C_WIRE_SAME;
    }
    return d;
}

/* The block's running values after r: what the next record is a difference from or repeats. */
static inline __attribute__((always_inline)) void block_note(block *b, const trace_rec_view *r,
                                                             const full_plan *f)
{
    b->seq = r->seq;
    b->pc = r->pc_ns;
    b->ts = r->ts_ns;
    b->has_prev = true;
    b->prev_wire = f->own || f->wire_same;
    b->prev_type = r->msg_type;
    b->prev_b2 = f->b2;
    b->prev_key = r->key;
    memcpy(b->prev_ser, r->ser_bytes, sizeof(b->prev_ser));
}

/* The usual full record, written without plan_full(): a short one (C2_SHORT: its bytes of its
 * own are its only size, and ts moved as pc did) in a block already open, without a drop
 * reason, whose peer and URI the block has defined and their hints find. In the router's
 * benchmarks nearly every full record is such a one: every RPC message, a PUBLISH and the first
 * EVENT of its fan-out. short_known() tells it and finds its parts, put_short() writes what the
 * general path would, byte for byte. */
typedef struct short_rec {
    const void *bytes;
    size_t len;
    size_t peer_i; /* the peer's index in the block's table (with a peer) */
    size_t uri_i;  /* the URI's (with a URI) */
} short_rec;

static bool short_known(const trace_persist *p, const trace_rec_view *r, short_rec *o)
{
    const block *b = &p->blk;
    o->peer_i = o->uri_i = 0;
    if (r->wire) {
        if (r->wire == b->wire) {
            return false; /* the block's bytes again (C_WIRE_SAME), or a repeat */
        }
        o->bytes = wamp_buf_cdata(r->wire);
        o->len = wamp_buf_len(r->wire);
    } else if (r->bytes) {
        o->bytes = r->bytes;
        o->len = r->len;
    } else {
        return false;
    }
    if (r->dropped || o->len > BODY_MAX - FULL_FIXED_MAX || !short_fits(b, r, o->len)) {
        return false;
    }
    if (r->peer &&
        (o->peer_i = hint_find(b->peers, b->n_peers, r->peer, p->peer_hint)) == b->n_peers) {
        return false;
    }
    return !r->uri || (o->uri_i = hint_find(b->uris, b->n_uris, r->uri, p->uri_hint)) != b->n_uris;
}

/* Writes r, a record short_known() found to be such a one, into room reserved for it. */
static wamp_err put_short(trace_persist *p, seg *s, const trace_rec_view *r, const short_rec *o)
{
    block *b = &p->blk;
    uint8_t b2 = rec_b2(r);
    int mode;
    unsigned char *body = rec_begin(p, false, FULL_FIXED_MAX + o->len, &mode);
    unsigned char *d = body;
    unsigned what = 0;
    d[1] = r->msg_type;
    d[2] = (unsigned char)(b2 | C2_SHORT);
    d = put_var(d + 3, r->seq - b->seq);
    d = put_var(d, zigzag(r->pc_ns, b->pc));
    if (r->peer) {
        what |= C_PEER;
        d = put_var(d, o->peer_i);
    }
    b->prev_uri = r->uri ? o->uri_i : PREV_NO_URI;
    if (r->uri) {
        what |= C_URI;
        d = put_var(d, o->uri_i);
    }
    d = put_corr(b, d, r, body + 2, &what);
    /* Its own bytes, and the block's running values after it, as the general path notes them. */
    const full_plan f = {.own = true, .bytes = o->bytes, .wire_len = o->len, .b2 = b2};
    d = put_wire(p, b, d, r, &f, &what);
    body[0] = (unsigned char)what;
    block_note(b, r, &f);
    p->run_off = NO_RUN;
    return rec_end(p, s, r, mode, body, d);
}

/* Appends one record: a repeat (into a run) when it is the block's previous record again but for
 * its peer, else a full compact record (PERSIST_FORMAT.md, "Records"), in steps: plan_full(),
 * room for it, put_head(), put_refs(), put_wire(), block_note(), end_record(). */
static wamp_err append_rec(trace_persist *p, const trace_rec_view *r)
{
    /* An error of the writer thread is seen when the buffer is handed over next
     * (persist_write_out(), persist_rotate()): records appended meanwhile stay readable from the
     * buffer. Asking the writer's flag here, an atomic load of a line the writer thread writes, was
     * a cache miss a record. */
    if (!p->writable || p->error) {
        return WAMP_ECLOSED;
    }
    block *b = &p->blk;
    seg *s;
    if (joins_run(p, r->key, r->peer, r->seq, &s)) {
        /* The next receiver of the message the block's run repeats: nothing to compare. */
        return append_repeat(p, s, b, r);
    }
    wamp_err err = segment_for(p, r, &s);
    if (err != WAMP_OK) {
        return err;
    }
    full_plan f;
    f.first = s->next_seq == s->first_seq || block_pos(s, r->seq) == 0;
    short_rec o;
    if (f.first) {
        persist_block_reset(b);
    } else if (short_known(p, r, &o) &&
               buf_reserve(p, HDR_LEN + PACK_EXTRA + FULL_FIXED_MAX + o.len)) {
        return put_short(p, s, r, &o);
    }
    f.b2 = rec_b2(r);
    if (!f.first && is_repeat(b, r, f.b2)) {
        return append_repeat(p, s, b, r);
    }
    p->run_off = NO_RUN; /* a run is only ever the last record of its block so far */
    plan_full(p, b, r, &f);
    /* Both can fail: before anything changes (the block must only hold what was written). */
    if (!buf_reserve(p, HDR_LEN + PACK_EXTRA + f.max) ||
        (f.first && !persist_idx_push(s, r->seq, s->size))) {
        return WAMP_ENOMEM;
    }
    int mode;
    unsigned char *body = rec_begin(p, f.first, f.max, &mode);
    unsigned char *d = body;
    /* The what byte (body[0]) is known when the body is: its bits are set on the way. */
    unsigned what = f.first ? C_BLOCK : 0;
    d = put_head(d, b, r, &f);
    d = put_refs(p, b, body, d, r, &f, &what);
    d = put_wire(p, b, d, r, &f, &what);
    body[0] = (unsigned char)what;
    block_note(b, r, &f);
    return rec_end(p, s, r, mode, body, d);
}
