/* trace_persist_decode.c: decoding record bodies: format 1 (fixed layout) and the compact
 * formats 2-7 (blocks, repeats, runs, short records, half UUIDs, message bytes ending with the
 * block's base bytes, packs); PERSIST_FORMAT.md, "Records". */
#include <stdlib.h>
#include <string.h>

#include "trace_persist_int.h"

/* A record's length word: its body length in *len, compact or not in *compact; false if no
 * record can have it. */
bool persist_frame_len(uint32_t word, uint32_t *len, bool *compact)
{
    *compact = (word & LEN_COMPACT) != 0;
    *len = word & ~LEN_COMPACT;
    return *len >= (*compact ? C_MIN_LEN : FIXED_LEN) && *len <= BODY_MAX;
}

/* One record at off of a segment file (body in *body, malloc'ed, or reuses *body/cap):
 * true, its body length and kind when whole and its CRC matches. */
bool persist_read_record_fd(int fd, uint64_t off, uint64_t file_size, unsigned char **body,
                            size_t *cap, uint32_t *body_len, bool *compact)
{
    unsigned char hdr[HDR_LEN];
    if (off + HDR_LEN > file_size || !persist_pread_all(fd, hdr, HDR_LEN, off)) {
        return false;
    }
    uint32_t len;
    if (!persist_frame_len(get32(hdr), &len, compact) || off + HDR_LEN + len > file_size) {
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
    if (!persist_pread_all(fd, *body, len, off + HDR_LEN) ||
        trace_crc32c(0, *body, len) != get32(hdr + 4)) {
        return false;
    }
    *body_len = len;
    return true;
}

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
    /* C2_SHORT: never a block's first record, always with bytes of its own (whole, or ending
     * with the base bytes'). */
    bool is_short = len >= 3 && (body[2] & C2_SHORT);
    unsigned wire = body[0] & (C_WIRE | C_WIRE_SAME);
    if (len < (is_short ? C_SHORT_MIN : C_FULL_MIN) ||
        (is_short && (first || (wire != C_WIRE && wire != C_WIRE_END)))) {
        return false;
    }
    c->p = body + 3;
    if (first) {
        persist_block_reset(b);
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
bool persist_decode_repeat(cursor *c, block *b, bool with_peer, bool in_run, trace_record *r)
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
bool persist_is_run(const unsigned char *body, uint32_t len, const block *b, uint32_t *count)
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
/* A full record's URI part (C_URI: varint i, a definition following when i is new) into r->uri,
 * and what a repeat of it refers to (b->prev_uri). */
static bool get_uri(cursor *c, block *b, unsigned what, trace_record *r)
{
    uint64_t i;
    if (!(what & C_URI)) {
        b->prev_uri = PREV_NO_URI;
        return true;
    }
    if (!get_var(c, &i) || i > b->n_uris) {
        return false;
    }
    b->prev_uri = i < b->n_uris ? (size_t)i : PREV_BAD_URI;
    if (i < b->n_uris) {
        r->uri = trace_str_ref((trace_str *)b->uris[i]);
        return true;
    }
    char *str;
    if (!get_vstr(c, &str) || !str) {
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
    return true;
}

/* A full record's correlation UUID (its own, or C_CORR_SAME: the block's last) into r->corr.
 * C_CORR_HALF without TRACE_CORR_HAS (format 7): the block's last UUID's first half, then the
 * second half follows; the record has a UUID (TRACE_CORR_HAS added to its flags). */
static bool get_corr(cursor *c, block *b, unsigned what, trace_record *r)
{
    const unsigned char *at;
    if (!(r->flags & TRACE_CORR_HAS)) {
        if (!(what & C_CORR_HALF)) {
            return true;
        }
        if (!b->has_corr || !get_span(c, UUID_HALF, &at)) {
            return false;
        }
        memcpy(b->corr + UUID_HALF, at, UUID_HALF);
        r->flags |= TRACE_CORR_HAS;
    } else if (what & C_CORR_SAME) {
        if (!b->has_corr) {
            return false;
        }
    } else {
        if (!get_span(c, TRACE_UUID_LEN, &at)) {
            return false;
        }
        memcpy(b->corr, at, TRACE_UUID_LEN);
        b->has_corr = true;
    }
    memcpy(r->corr, b->corr, TRACE_UUID_LEN);
    return true;
}

/* Message bytes ending with the last `end` octets of the block's base bytes (C_WIRE_END,
 * format 7): varint end, then varint n and the n octets before them. */
static bool get_wire_end(cursor *c, const block *b, const unsigned char **head, uint64_t *n,
                         wamp_buf **out)
{
    uint64_t end;
    if (!get_var(c, &end) || !get_var(c, n) || !get_span(c, *n, head) || !b->base ||
        end > wamp_buf_len(b->base) || end + *n > BODY_MAX) {
        return false;
    }
    *out = wamp_buf_new((size_t)(*n + end));
    if (!*out) {
        return false;
    }
    unsigned char *d = wamp_buf_reserve(out, (size_t)(*n + end));
    if (!d) {
        return false;
    }
    memcpy(d, *head, (size_t)*n);
    memcpy(d + *n, wamp_buf_cdata(b->base) + wamp_buf_len(b->base) - end, (size_t)end);
    wamp_buf_commit(*out, (size_t)(*n + end));
    *n += end;
    return true;
}

/* A full record's message bytes (C_WIRE: its own, which become the block's base bytes;
 * C_WIRE | C_WIRE_SAME: the block's buffer; C_WIRE_END: its own, ending with the base bytes')
 * into r->wire; b2: the record's third byte (a short record's bytes give its size). */
static bool get_wire(cursor *c, block *b, unsigned what, unsigned b2, trace_record *r)
{
    const unsigned char *at;
    uint64_t n;
    unsigned kind = what & (C_WIRE | C_WIRE_SAME);
    if (!kind) {
        return true;
    }
    if (kind == (C_WIRE | C_WIRE_SAME)) {
        if (!b->wire) {
            return false;
        }
    } else {
        wamp_buf *w = NULL;
        if (kind == C_WIRE_END) {
            if (!get_wire_end(c, b, &at, &n, &w)) {
                wamp_buf_unref(&w);
                return false;
            }
        } else if (!get_var(c, &n) || !get_span(c, n, &at) ||
                   !(w = wamp_buf_new_copy(at, (size_t)n))) {
            return false;
        }
        if (b2 & C2_SHORT) {
            r->ser_bytes[r->wire_ser] = (uint32_t)n; /* at most BODY_MAX */
        }
        wamp_buf_unref(&b->wire);
        b->wire = w;
        if (kind == C_WIRE) {
            wamp_buf_unref(&b->base);
            b->base = wamp_buf_ref(w);
        }
    }
    r->wire = wamp_buf_ref(b->wire);
    return true;
}

/* Decodes one verified compact body (not a run) into *r (owned references; the caller finis
 * it on failure too), updating the block's tables. */
bool persist_decode_compact(const unsigned char *body, uint32_t len, block *b, trace_record *r)
{
    memset(r, 0, sizeof(*r));
    cursor c;
    if (!compact_head(body, len, b, &c)) {
        return false;
    }
    unsigned what = body[0];
    if (what & C_REPEAT) {
        return !(what & ~(C_REPEAT | C_PEER)) &&
               persist_decode_repeat(&c, b, what & C_PEER, false, r) && c.p == c.end;
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
        r->ser_bytes[persist_ser_slot(i)] = (uint32_t)v;
    }
    if ((what & C_PEER) && !get_peer(&c, b, &r->peer)) {
        return false;
    }
    if (!get_uri(&c, b, what, r)) {
        return false;
    }
    const unsigned char *at;
    uint64_t n;
    if (what & C_DROPPED) {
        if (!get_vspan(&c, &at, &n) || !at) {
            return false;
        }
        r->dropped = intern_reason(at, (uint32_t)n);
    }
    if (!get_corr(&c, b, what, r) || !get_wire(&c, b, what, b2, r)) {
        return false;
    }
    b->has_prev = true;
    b->prev_wire = (what & (C_WIRE | C_WIRE_SAME)) != 0;
    b->prev_type = body[1];
    /* What a repeat of it has: its flags with TRACE_CORR_HAS (of a C_CORR_HALF UUID). */
    b->prev_b2 = (uint8_t)((body[2] & ~C2_SHORT) | (unsigned)r->flags << 4);
    memcpy(b->prev_ser, r->ser_bytes, sizeof(b->prev_ser));
    return c.p == c.end;
}

bool persist_pack_next(cursor *c, const unsigned char **sub, uint32_t *len)
{
    uint64_t n;
    if (c->p == c->end) {
        return false;
    }
    if (!get_var(c, &n) || n == 0 || !get_span(c, n, sub) || ((*sub)[0] & (C_BLOCK | C_REPEAT))) {
        return c->ok = false;
    }
    *len = (uint32_t)n; /* within the pack's body */
    return true;
}

/* A pack's records decoded (persist_verify_body()): at least one, their seqs consecutive. */
static bool verify_pack(const unsigned char *body, uint32_t len, block *b, uint64_t *seq,
                        uint64_t *count, uint64_t *ts)
{
    cursor c = {.p = body + 1, .end = body + len, .ok = true};
    const unsigned char *sub;
    uint32_t n;
    uint64_t k = 0;
    while (persist_pack_next(&c, &sub, &n)) {
        trace_record r;
        bool ok = persist_decode_compact(sub, n, b, &r);
        if (ok && k == 0) {
            *seq = r.seq;
        }
        ok = ok && r.seq == *seq + k;
        *ts = r.ts_ns;
        trace_record_fini(&r);
        if (!ok) {
            return false;
        }
        k++;
    }
    *count = k;
    return c.ok && k > 0;
}

/* Decodes a verified body completely, as a reader would (b: the block of compact records), and
 * drops what it decoded: true with the seq of its first record, how many it holds (a run's
 * count) and the ts of the last when every field decodes. A record that passes its CRC but does
 * not decode is damage as well: a reopen must count only what a reader returns. */
bool persist_verify_body(const unsigned char *body, uint32_t len, bool compact, block *b,
                         uint64_t *seq, uint64_t *count, uint64_t *ts)
{
    trace_record r;
    *count = 1;
    if (!compact) {
        bool ok = persist_decode_record(body, len, &r, NULL);
        *seq = r.seq;
        *ts = r.ts_ns;
        trace_record_fini(&r);
        return ok;
    }
    uint32_t run = 0;
    if (persist_is_run(body, len, b, &run)) {
        if (run == 0 || !b->open) {
            return false;
        }
        cursor c = {.p = body + C_RUN_HEAD, .end = body + len, .ok = true};
        *seq = b->seq + 1;
        for (uint32_t k = 0; k < run; k++) {
            b->seq++;
            bool ok = persist_decode_repeat(&c, b, true, true, &r);
            trace_record_fini(&r);
            if (!ok) {
                return false;
            }
        }
        *count = run;
        *ts = b->ts;
        return c.p == c.end;
    }
    if (persist_is_pack(body)) {
        return b->open && verify_pack(body, len, b, seq, count, ts);
    }
    bool ok = persist_decode_compact(body, len, b, &r);
    *seq = r.seq;
    *ts = r.ts_ns;
    trace_record_fini(&r);
    return ok;
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
bool persist_decode_record(const unsigned char *b, uint32_t len, trace_record *r,
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
