/* trace_wire.c: the wire capture's ring and its decoder (see trace_wire.h).
 *
 * The ring: entries written once, each a chunk's header and its bytes (padded to 8), appended at
 * the write end and dropped from the read end, oldest first. An entry never wraps: one that does
 * not fit before the ring's end starts at the front, the end's rest skipped (wend marks where the
 * entries before the wrap end). The decoder walks the entries in order, keeping one parse state
 * per stream (connection and direction) in a table of its own. */
#include "trace_wire.h"

#include <stdlib.h>
#include <string.h>

/* A chunk too large for the ring: kept as its header alone, a gap in its stream. */
#define WIRE_GAP 1u

typedef struct wire_ent {
    uint64_t conn;
    uint64_t ts_ns;
    uint64_t wall_ns;
    uint64_t first_seq;
    uint32_t len; /* of the bytes that follow (0 for a gap) */
    uint32_t lead;
    uint32_t nmsg;
    uint8_t dir;
    uint8_t framing;
    uint8_t ser;
    uint8_t flags;
} wire_ent;

_Static_assert(sizeof(wire_ent) == TRACE_WIRE_CHUNK_HEADER && sizeof(wire_ent) % 8 == 0,
               "entries stay 8-aligned");

struct trace_wire {
    unsigned char *ring;
    size_t cap;
    size_t head; /* the oldest entry */
    size_t tail; /* the write end */
    size_t wend; /* while wrapped: the end of the entries before the front's */
    bool wrapped;
    size_t chunks;
    size_t used;
    uint64_t next_seq;
    uint64_t dropped;
    uint64_t appended; /* chunks ever appended: the oldest held one is appended - chunks */
};

trace_wire *trace_wire_new(size_t cap)
{
    cap = cap < TRACE_WIRE_MIN_CAP ? TRACE_WIRE_MIN_CAP : (cap + 7) & ~(size_t)7;
    trace_wire *w = calloc(1, sizeof(*w));
    if (!w || !(w->ring = malloc(cap))) {
        free(w);
        return NULL;
    }
    w->cap = cap;
    return w;
}

void trace_wire_free(trace_wire *w)
{
    if (w) {
        free(w->ring);
        free(w);
    }
}

static inline size_t ent_size(size_t len)
{
    return sizeof(wire_ent) + ((len + 7) & ~(size_t)7);
}

static inline const wire_ent *ent_at(const trace_wire *w, size_t off)
{
    return (const wire_ent *)(const void *)(w->ring + off);
}

/* The offset of the entry after the one at off of size sz. */
static inline size_t ent_next(const trace_wire *w, size_t off, size_t sz)
{
    off += sz;
    return w->wrapped && off == w->wend ? 0 : off;
}

static void drop_oldest(trace_wire *w)
{
    const wire_ent *e = ent_at(w, w->head);
    size_t sz = ent_size(e->len);
    w->dropped += e->nmsg;
    w->used -= sz;
    w->chunks--;
    w->head += sz;
    if (w->wrapped && w->head == w->wend) {
        w->head = 0;
        w->wrapped = false;
    }
}

/* Makes room for an entry of sz bytes (at most cap) at the write end. */
static void make_room(trace_wire *w, size_t sz)
{
    for (;;) {
        if (w->chunks == 0) {
            w->head = w->tail = 0;
            w->wrapped = false;
        }
        if (!w->wrapped) {
            if (w->cap - w->tail >= sz) {
                return;
            }
            w->wend = w->tail; /* the rest of the ring is skipped */
            w->tail = 0;
            w->wrapped = true;
        } else if (w->head - w->tail >= sz) {
            return;
        } else {
            drop_oldest(w);
        }
    }
}

/* trace_wire_append() of the n_parts pieces, n bytes in all, one after the other. Inline: with
 * one piece (every capture) it is the plain copy. */
static inline __attribute__((always_inline)) uint64_t append_parts(trace_wire *w,
                                                                   const trace_wire_chunk *c,
                                                                   const trace_wire_part *parts,
                                                                   size_t n_parts, size_t n)
{
    wire_ent h = {.conn = c->conn,
                  .ts_ns = c->ts_ns,
                  .wall_ns = c->wall_ns,
                  .first_seq = w->next_seq,
                  .len = (uint32_t)n,
                  .lead = c->lead,
                  .nmsg = c->nmsg,
                  .dir = c->dir,
                  .framing = c->framing,
                  .ser = c->ser};
    if (n > w->cap - sizeof(wire_ent) || n > UINT32_MAX) {
        h.len = 0;
        h.flags = WIRE_GAP;
        n = 0;
    }
    size_t sz = ent_size(n);
    make_room(w, sz);
    unsigned char *d = w->ring + w->tail;
    memcpy(d, &h, sizeof(h));
    d += sizeof(h);
    for (size_t i = 0; n && i < n_parts; i++) {
        if (parts[i].n) {
            memcpy(d, parts[i].p, parts[i].n);
            d += parts[i].n;
        }
    }
    w->tail += sz;
    w->used += sz;
    w->chunks++;
    w->appended++;
    w->next_seq += c->nmsg;
    return h.first_seq;
}

uint64_t trace_wire_append(trace_wire *w, const trace_wire_chunk *c, const void *p, size_t n)
{
    const trace_wire_part part = {p, n};
    return append_parts(w, c, &part, 1, n);
}

uint64_t trace_wire_message(trace_wire *w, uint64_t conn, uint8_t dir, uint8_t ser,
                            trace_wire_time t, uint32_t note, const void *p, size_t n)
{
    trace_wire_chunk c = {.conn = conn,
                          .ts_ns = t.ts_ns,
                          .wall_ns = t.wall_ns,
                          .lead = note, /* (no frames: the field holds the note) */
                          .nmsg = 1,
                          .dir = dir,
                          .framing = TRACE_WIRE_MESSAGE,
                          .ser = ser};
    return trace_wire_append(w, &c, p, n);
}

void trace_wire_fact_parts(trace_wire *w, uint64_t conn, trace_wire_time t,
                           const trace_wire_part *parts, size_t n_parts)
{
    trace_wire_chunk c = {.conn = conn,
                          .ts_ns = t.ts_ns,
                          .wall_ns = t.wall_ns,
                          .lead = TRACE_WIRE_NO_START,
                          .framing = TRACE_WIRE_FACT};
    size_t n = 0;
    for (size_t i = 0; i < n_parts; i++) {
        n += parts[i].n;
    }
    (void)append_parts(w, &c, parts, n_parts, n);
}

void trace_wire_fact(trace_wire *w, uint64_t conn, trace_wire_time t, const void *p, size_t n)
{
    const trace_wire_part part = {p, n};
    trace_wire_fact_parts(w, conn, t, &part, 1);
}

uint64_t trace_wire_next_seq(const trace_wire *w)
{
    return w->next_seq;
}

uint64_t trace_wire_first_seq(const trace_wire *w)
{
    return w->chunks ? ent_at(w, w->head)->first_seq : w->next_seq;
}

uint64_t trace_wire_appended(const trace_wire *w)
{
    return w->appended;
}

uint64_t trace_wire_dropped(const trace_wire *w)
{
    return w->dropped;
}

size_t trace_wire_chunks(const trace_wire *w)
{
    return w->chunks;
}

size_t trace_wire_used(const trace_wire *w)
{
    return w->used;
}

size_t trace_wire_capacity(const trace_wire *w)
{
    return w->cap;
}

/* --- Decoding ----------------------------------------------------------------------------------
 */

/* Where a stream's parser is: everything but the message's bytes, so that a chunk can be counted
 * on a copy first (how many messages it completes) and then decoded. */
typedef struct wire_pos {
    bool synced;     /* at a known place in the stream */
    bool skip_msg;   /* inside a message whose start is not held: its frames are skipped */
    bool in_msg;     /* inside a fragmented message being joined */
    uint8_t hdr[14]; /* the frame header being read */
    uint8_t hdr_have;
    bool in_payload;
    bool data; /* the frame is a data frame (its payload is the message's) */
    bool fin;
    bool masked;
    uint8_t mask[4];
    uint64_t need;   /* payload octets of the frame still to read */
    uint64_t offset; /* payload octets of the frame read (for the mask) */
} wire_pos;

typedef struct wire_stream {
    uint64_t key; /* conn << 1 | tx; 0: a free slot */
    uint64_t idx; /* the index of its last chunk decoded (trace_wire.appended - 1 then) */
    wire_pos pos;
    unsigned char *buf; /* the message being joined */
    size_t len, cap;
} wire_stream;

typedef struct wire_dec {
    wire_stream *tab;
    size_t mask; /* slots - 1 */
    size_t n;
    bool oom;
} wire_dec;

static wire_stream *stream_find(wire_dec *d, uint64_t key)
{
    if (d->n * 2 >= d->mask + 1) {
        size_t ncap = (d->mask + 1) * 2;
        wire_stream *nt = calloc(ncap, sizeof(*nt));
        if (!nt) {
            d->oom = true;
            return NULL;
        }
        for (size_t i = 0; i <= d->mask; i++) {
            if (d->tab[i].key) {
                size_t j = (size_t)(d->tab[i].key * 0x9E3779B97F4A7C15ull) & (ncap - 1);
                while (nt[j].key) {
                    j = (j + 1) & (ncap - 1);
                }
                nt[j] = d->tab[i];
            }
        }
        free(d->tab);
        d->tab = nt;
        d->mask = ncap - 1;
    }
    size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull) & d->mask;
    while (d->tab[i].key && d->tab[i].key != key) {
        i = (i + 1) & d->mask;
    }
    if (!d->tab[i].key) {
        d->tab[i].key = key;
        d->n++;
    }
    return &d->tab[i];
}

static bool buf_add(wire_stream *s, const unsigned char *p, size_t n, const uint8_t *mask,
                    uint64_t offset)
{
    if (s->cap - s->len < n) {
        size_t ncap = s->cap ? s->cap : 256;
        while (ncap - s->len < n) {
            ncap *= 2;
        }
        unsigned char *nb = realloc(s->buf, ncap);
        if (!nb) {
            return false;
        }
        s->buf = nb;
        s->cap = ncap;
    }
    unsigned char *out = s->buf + s->len;
    if (mask) {
        for (size_t i = 0; i < n; i++) {
            out[i] = p[i] ^ mask[(offset + i) & 3];
        }
    } else {
        memcpy(out, p, n);
    }
    s->len += n;
    return true;
}

/* The most a stream's buffer keeps between messages: a larger one (a large message joined) is
 * freed once its message is done, so a reader holds no more than this for each connection that
 * once sent or received a large message. */
#define WIRE_BUF_KEEP (64u * 1024u)

/* The stream's message is done (handed out or given up): its buffer emptied, and freed when
 * large. */
static void buf_done(wire_stream *s)
{
    s->len = 0;
    if (s->cap > WIRE_BUF_KEEP) {
        free(s->buf);
        s->buf = NULL;
        s->cap = 0;
    }
}

/* --- Frame headers (the capturer's scan and the decoder) ---------------------------------------
 */

/* What a frame header says. */
typedef struct wire_frame {
    uint64_t len; /* payload octets */
    uint8_t op;   /* WebSocket opcode; RawSocket: 1 (a message, as a final text frame) or 9 */
    bool fin;
    bool masked;
    uint8_t mask[4];
} wire_frame;

/* Reads the frame header at h, of which avail octets are there: its length in octets (WebSocket
 * 2 to 14, RawSocket 4) with *f filled when they are all there, else 0 (more are needed). */
static inline size_t frame_head(uint8_t framing, const uint8_t *h, size_t avail, wire_frame *f)
{
    if (framing == TRACE_WIRE_RAWSOCKET) {
        if (avail < 4) {
            return 0;
        }
        f->len = (uint64_t)h[1] << 16 | (uint64_t)h[2] << 8 | h[3];
        f->op = (h[0] & 0x07) == 0 ? 1 : 9; /* a message, or a PING or PONG */
        f->fin = true;
        f->masked = false;
        return 4;
    }
    if (avail < 2) {
        return 0;
    }
    uint8_t len7 = h[1] & 0x7f;
    size_t at = len7 == 126 ? 4 : len7 == 127 ? 10 : 2;
    f->masked = (h[1] & 0x80) != 0;
    size_t hl = at + (f->masked ? 4 : 0);
    if (avail < hl) {
        return 0;
    }
    f->len = len7;
    if (len7 == 126) {
        f->len = (uint64_t)h[2] << 8 | h[3];
    } else if (len7 == 127) {
        f->len = 0;
        for (int i = 0; i < 8; i++) {
            f->len = f->len << 8 | h[2 + i];
        }
    }
    if (f->masked) {
        memcpy(f->mask, h + at, 4);
    }
    f->op = h[0] & 0x0f;
    f->fin = (h[0] & 0x80) != 0;
    return hl;
}

/* --- The capturer's scan -----------------------------------------------------------------------
 */

void trace_wire_stream_init(trace_wire_stream *st, uint64_t conn, uint8_t dir, uint8_t framing,
                            uint8_t ser)
{
    memset(st, 0, sizeof(*st));
    st->conn = conn;
    st->dir = dir;
    st->framing = framing;
    st->ser = ser;
}

/* A frame header read (f, from its first octet on): into its payload, or (empty) past it. */
static inline uint32_t scan_frame(trace_wire_stream *st, const wire_frame *f)
{
    st->ends_msg = f->fin && f->op < 8;
    st->need = f->len;
    st->in_payload = f->len != 0;
    return f->len == 0 && st->ends_msg;
}

/* The usual run of frames, from a frame start at p[0]: whole frames with short headers (a
 * WebSocket length under 126, any RawSocket frame), counted from their first two octets alone;
 * returns where the first frame that is not such starts (n: none). */
static inline size_t scan_small(uint8_t framing, const unsigned char *p, size_t n, uint32_t *nmsg)
{
    /* Locals only: a store through nmsg may alias p's octets for the compiler. */
    size_t i = 0;
    uint32_t k = 0;
    if (framing == TRACE_WIRE_RAWSOCKET) {
        while (n - i >= 4) {
            size_t end = i + 4 + ((size_t)p[i + 1] << 16 | (size_t)p[i + 2] << 8 | p[i + 3]);
            if (end > n) {
                break;
            }
            k += (p[i] & 0x07) == 0;
            i = end;
        }
    } else {
        const unsigned char *q = p, *end = p + n;
        while (end - q >= 2) {
            unsigned b1 = q[1];
            unsigned len7 = b1 & 0x7fu;
            const unsigned char *next = q + 2 + ((b1 >> 5) & 4u) + len7; /* (4: a mask) */
            if (len7 >= 126 || next > end) {
                break;
            }
            k += (q[0] & 0x88u) == 0x80u; /* FIN, and a data frame's opcode (under 8) */
            q = next;
        }
        i = (size_t)(q - p);
    }
    *nmsg += k;
    return i;
}

/* Follows st's frames through p[0..n): the messages ending there; *lead the offset of the first
 * frame header starting there (TRACE_WIRE_NO_START: none). Whole headers are read where they lie,
 * a header split between chunks octet by octet; payloads are skipped by their length. */
static uint32_t scan(trace_wire_stream *st, const unsigned char *p, size_t n, uint32_t *lead)
{
    uint32_t nmsg = 0;
    size_t i = 0;
    *lead = TRACE_WIRE_NO_START;
    while (i < n) {
        if (st->in_payload) {
            if (st->need > n - i) {
                st->need -= n - i;
                break;
            }
            i += (size_t)st->need;
            st->need = 0;
            st->in_payload = false;
            nmsg += st->ends_msg;
            continue;
        }
        wire_frame f;
        if (st->hdr_have == 0) {
            if (*lead == TRACE_WIRE_NO_START) {
                *lead = (uint32_t)i;
            }
            i += scan_small(st->framing, p + i, n - i, &nmsg);
            size_t hl = i < n ? frame_head(st->framing, p + i, n - i, &f) : 0;
            if (hl) {
                i += hl;
                nmsg += scan_frame(st, &f);
                continue;
            }
            if (i == n) {
                break;
            }
        }
        st->hdr[st->hdr_have++] = p[i++];
        if (frame_head(st->framing, st->hdr, st->hdr_have, &f)) {
            st->hdr_have = 0;
            nmsg += scan_frame(st, &f);
        }
    }
    return nmsg;
}

uint64_t trace_wire_capture(trace_wire *w, trace_wire_stream *st, trace_wire_time t, const void *p,
                            size_t n)
{
    trace_wire_chunk c = {.conn = st->conn,
                          .ts_ns = t.ts_ns,
                          .wall_ns = t.wall_ns,
                          .dir = st->dir,
                          .framing = st->framing,
                          .ser = st->ser};
    c.nmsg = scan(st, p, n, &c.lead);
    uint64_t first = trace_wire_append(w, &c, p, n);
    st->last_chunk = w->appended - 1;
    return first;
}

uint64_t trace_wire_capture_whole(trace_wire *w, trace_wire_stream *st, trace_wire_time t,
                                  const void *p, size_t n, uint32_t nmsg)
{
    if (st->in_payload || st->hdr_have) {
        return trace_wire_capture(w, st, t, p, n); /* not at a frame start: follow them */
    }
    trace_wire_chunk c = {.conn = st->conn,
                          .ts_ns = t.ts_ns,
                          .wall_ns = t.wall_ns,
                          .lead = n ? 0 : TRACE_WIRE_NO_START,
                          .nmsg = nmsg,
                          .dir = st->dir,
                          .framing = st->framing,
                          .ser = st->ser};
    uint64_t first = trace_wire_append(w, &c, p, n);
    st->last_chunk = w->appended - 1;
    return first;
}

/* --- The decoder's frames -----------------------------------------------------------------------
 */

/* A complete header read: the frame's kind and length, and what it does to the message. Returns
 * whether the frame starts a new message (whose bytes replace whatever an unfinished one left). */
static bool header_done(wire_pos *q, const wire_frame *f)
{
    q->in_payload = true;
    q->offset = 0;
    q->need = f->len;
    q->masked = f->masked;
    if (f->masked) {
        memcpy(q->mask, f->mask, 4);
    }
    q->fin = f->fin;
    q->data = f->op < 8;
    if (!q->data) {
        return false; /* a control frame: not part of any message */
    }
    if (f->op != 0) { /* a new message (a text or binary frame) */
        q->skip_msg = false;
        q->in_msg = true;
        return true;
    }
    if (!q->in_msg) { /* a continuation of a message whose start is not held */
        q->skip_msg = true;
        q->in_msg = true;
    }
    return false;
}

typedef struct wire_emit {
    const wire_ent *e;
    uint64_t idx;      /* e's index */
    uint64_t seq;      /* of the next message to hand out */
    uint64_t last_seq; /* one past the chunk's last seq */
    uint64_t from_seq;
    trace_wire_fn fn;
    void *ctx;
    trace_wire_walk *walk;
    bool stop;
} wire_emit;

/* A message completed: counted (no stream: the counting pass) or handed out. */
static void complete(wire_stream *s, wire_emit *em, size_t *count)
{
    (*count)++;
    if (!s || !em) {
        return;
    }
    if (em->seq >= em->last_seq) {
        em->walk->mismatch++;
    } else if (!em->stop && em->seq >= em->from_seq) {
        trace_wire_msg m = {.seq = em->seq,
                            .conn = em->e->conn,
                            .ts_ns = em->e->ts_ns,
                            .wall_ns = em->e->wall_ns,
                            .dir = em->e->dir,
                            .ser = em->e->ser,
                            .data = s->buf,
                            .len = s->len,
                            .chunk = em->idx};
        em->walk->messages++;
        em->stop = !em->fn(em->ctx, em->seq, &m);
    }
    em->seq++;
    buf_done(s);
}

/* Parses n bytes at p from the position q; with s (the stream whose position q is) and em, joins
 * the messages' bytes and hands each complete one to em; returns the messages it completed. *oom
 * set when a message's buffer could not grow: em stops there. */
static size_t feed(wire_pos *q, uint8_t framing, const unsigned char *p, size_t n, wire_stream *s,
                   wire_emit *em, bool *oom)
{
    size_t done = 0;
    size_t i = 0;
    while (i < n) {
        if (!q->in_payload) {
            wire_frame f;
            q->hdr[q->hdr_have++] = p[i++];
            if (!frame_head(framing, q->hdr, q->hdr_have, &f)) {
                continue;
            }
            if (header_done(q, &f) && s) {
                buf_done(s); /* (a message left unfinished never ends: it has no seq) */
            }
        } else {
            size_t take = q->need < n - i ? (size_t)q->need : n - i;
            if (s && q->data && !q->skip_msg &&
                !buf_add(s, p + i, take, q->masked ? q->mask : NULL, q->offset)) {
                *oom = true; /* the walk ends here (trace_wire_decode(): WAMP_ENOMEM) */
                em->stop = true;
                q->skip_msg = true;
                buf_done(s);
            }
            q->need -= take;
            q->offset += take;
            i += take;
        }
        if (q->in_payload && q->need == 0) { /* the frame is complete */
            if (q->data && q->fin) {
                if (!q->skip_msg) {
                    complete(s, em, &done);
                } else if (s) {
                    buf_done(s);
                }
                q->in_msg = false;
                q->skip_msg = false;
            }
            q->in_payload = false;
            q->hdr_have = 0;
        }
    }
    return done;
}

/* A TRACE_WIRE_MESSAGE chunk: its one message (lost when it was too large to keep). */
static void message_decode(const wire_ent *e, wire_emit *em)
{
    if (em->stop || em->seq < em->from_seq) {
        return;
    }
    if (e->flags & WIRE_GAP) {
        em->walk->lost++;
        em->stop = !em->fn(em->ctx, em->seq, NULL);
        return;
    }
    trace_wire_msg m = {.seq = em->seq,
                        .conn = e->conn,
                        .ts_ns = e->ts_ns,
                        .wall_ns = e->wall_ns,
                        .dir = e->dir,
                        .ser = e->ser,
                        .data = (const unsigned char *)(e + 1),
                        .len = e->len,
                        .note = e->lead,
                        .chunk = em->idx};
    em->walk->messages++;
    em->stop = !em->fn(em->ctx, em->seq, &m);
}

/* Decodes one chunk: the stream resynchronised where it must be, its lost seqs first (those of
 * messages completing in it that the decoder cannot have: they began before what it holds), then
 * its messages. */
static void chunk_decode(wire_dec *d, const wire_ent *e, wire_emit *em)
{
    wire_stream *s = stream_find(d, e->conn << 1 | (e->dir == TRACE_TX));
    if (!s) {
        return;
    }
    s->idx = em->idx;
    const unsigned char *p = (const unsigned char *)(e + 1);
    size_t n = e->len;
    if (e->flags & WIRE_GAP) {
        memset(&s->pos, 0, sizeof(s->pos)); /* picks up at the next chunk's lead */
        buf_done(s);
        n = 0;
    } else if (!s->pos.synced) {
        memset(&s->pos, 0, sizeof(s->pos));
        buf_done(s);
        if (e->lead == TRACE_WIRE_NO_START || e->lead > n) {
            n = 0;
        } else {
            s->pos.synced = true;
            p += e->lead;
            n -= e->lead;
        }
    }
    /* How many of its messages the decoder will have: counted on a copy of the position. */
    wire_pos q = s->pos;
    bool oom = false;
    size_t have = n ? feed(&q, e->framing, p, n, NULL, NULL, &oom) : 0;
    size_t lost = e->nmsg > have ? e->nmsg - have : 0;
    for (size_t i = 0; i < lost; i++, em->seq++) {
        if (!em->stop && em->seq >= em->from_seq) {
            em->walk->lost++;
            em->stop = !em->fn(em->ctx, em->seq, NULL);
        }
    }
    if (n) {
        (void)feed(&s->pos, e->framing, p, n, s, em, &oom);
    }
    d->oom = d->oom || oom;
}

wamp_err trace_wire_decode(const trace_wire *w, uint64_t from_seq, trace_wire_fn fn, void *ctx,
                           trace_wire_walk *out)
{
    return trace_wire_decode_facts(w, from_seq, fn, NULL, ctx, out);
}

/* Hands the facts among count chunks of w from the one at off on to fact, early. */
static void facts_early(const trace_wire *w, size_t off, size_t count, trace_wire_fact_fn fact,
                        void *ctx)
{
    for (size_t k = 0; k < count; k++) {
        const wire_ent *e = ent_at(w, off);
        if (e->framing == TRACE_WIRE_FACT && !(e->flags & WIRE_GAP)) {
            fact(ctx, e->conn, e + 1, e->len, true);
        }
        off = ent_next(w, off, ent_size(e->len));
    }
}

/* Decodes count chunks of w from the one at off on, whose index is idx (facts handed to fact in
 * their place), until em stops or d runs out of memory (the chunks after that are passed over
 * undecoded); returns the offset of the last of the count chunks (off itself when count is 0). */
static size_t walk_chunks(wire_dec *d, const trace_wire *w, size_t off, uint64_t idx, size_t count,
                          wire_emit *em, trace_wire_fact_fn fact, void *ctx)
{
    size_t last = off;
    for (size_t k = 0; k < count; k++) {
        const wire_ent *e = ent_at(w, off);
        last = off;
        off = ent_next(w, off, ent_size(e->len));
        if (em->stop || d->oom) {
            continue;
        }
        em->idx = idx + k;
        if (e->framing == TRACE_WIRE_FACT) {
            if (fact && !(e->flags & WIRE_GAP)) {
                fact(ctx, e->conn, e + 1, e->len, false);
            }
        } else if (e->framing == TRACE_WIRE_MESSAGE) {
            em->seq = e->first_seq;
            message_decode(e, em);
        } else {
            em->e = e;
            em->seq = e->first_seq;
            em->last_seq = e->first_seq + e->nmsg;
            chunk_decode(d, e, em); /* (before from_seq: only the streams' state moves) */
        }
    }
    return last;
}

/* An empty stream table (16 slots); false without memory. */
static bool dec_init(wire_dec *d)
{
    *d = (wire_dec){.tab = calloc(16, sizeof(wire_stream)), .mask = 15};
    return d->tab != NULL;
}

static void dec_fini(wire_dec *d)
{
    for (size_t i = 0; d->tab && i <= d->mask; i++) {
        free(d->tab[i].buf);
    }
    free(d->tab);
    d->tab = NULL;
}

wamp_err trace_wire_decode_facts(const trace_wire *w, uint64_t from_seq, trace_wire_fn fn,
                                 trace_wire_fact_fn fact, void *ctx, trace_wire_walk *out)
{
    if (fact) {
        facts_early(w, w->head, w->chunks, fact, ctx);
    }
    trace_wire_walk walk = {.first_seq = trace_wire_first_seq(w), .next_seq = w->next_seq};
    wire_dec d;
    if (!dec_init(&d)) {
        if (out) {
            *out = walk;
        }
        return WAMP_ENOMEM;
    }
    wire_emit em = {.from_seq = from_seq, .fn = fn, .ctx = ctx, .walk = &walk};
    (void)walk_chunks(&d, w, w->head, w->appended - w->chunks, w->chunks, &em, fact, ctx);
    dec_fini(&d);
    if (out) {
        *out = walk;
    }
    return d.oom ? WAMP_ENOMEM : WAMP_OK;
}

/* --- The incremental reader ------------------------------------------------------------------ */

struct trace_wire_reader {
    wire_dec d;        /* its streams' parse states */
    bool started;      /* it has read (the fields below mean something) */
    uint64_t last_idx; /* the chunk it read last: its index (trace_wire.appended - 1 then) */
    size_t last_off;   /* ... and its offset */
    uint64_t next_idx; /* the chunk to read next */
    uint64_t next_seq; /* the seq to hand out next */
};

trace_wire_reader *trace_wire_reader_new(void)
{
    trace_wire_reader *r = calloc(1, sizeof(*r));
    if (r && !dec_init(&r->d)) {
        free(r);
        return NULL;
    }
    return r;
}

void trace_wire_reader_free(trace_wire_reader *r)
{
    if (r) {
        dec_fini(&r->d);
        free(r);
    }
}

uint64_t trace_wire_reader_next_seq(const trace_wire_reader *r)
{
    return r->next_seq;
}

size_t trace_wire_reader_buffered(const trace_wire_reader *r)
{
    size_t n = 0;
    for (size_t i = 0; i <= r->d.mask; i++) {
        n += r->d.tab[i].cap;
    }
    return n;
}

/* Every stream picked up again at its next frame start (what r held of them is gone). */
static void reader_resync(trace_wire_reader *r)
{
    for (size_t i = 0; i <= r->d.mask; i++) {
        memset(&r->d.tab[i].pos, 0, sizeof(r->d.tab[i].pos));
        buf_done(&r->d.tab[i]);
    }
    r->d.oom = false;
}

/* Forgets the streams none of whose chunks the ring holds any more (connections gone, or quiet
 * for a whole ring): a stream that goes on is picked up at its next frame start. Once the table
 * is at least half full of them. */
static void reader_forget(trace_wire_reader *r, uint64_t head_idx)
{
    wire_dec *d = &r->d;
    size_t gone = 0;
    for (size_t i = 0; i <= d->mask; i++) {
        gone += d->tab[i].key && d->tab[i].idx < head_idx;
    }
    if (gone < 16 || gone * 2 < d->n) {
        return;
    }
    wire_dec nd = {.tab = calloc(d->mask + 1, sizeof(wire_stream)), .mask = d->mask};
    if (!nd.tab) {
        return; /* (kept: tried again next time) */
    }
    for (size_t i = 0; i <= d->mask; i++) {
        wire_stream *s = &d->tab[i];
        if (!s->key) {
            continue;
        }
        if (s->idx < head_idx) {
            free(s->buf);
            continue;
        }
        wire_stream *t = stream_find(&nd, s->key); /* (no growth: fewer than before) */
        *t = *s;
    }
    free(d->tab);
    *d = nd;
}

wamp_err trace_wire_reader_next(trace_wire_reader *r, const trace_wire *w, trace_wire_fn fn,
                                trace_wire_fact_fn fact, void *ctx, trace_wire_walk *out)
{
    uint64_t head_idx = w->appended - w->chunks;
    trace_wire_walk walk = {.first_seq = trace_wire_first_seq(w), .next_seq = w->next_seq};
    size_t off = w->head;
    if (!r->started) {
        walk.skipped = walk.first_seq; /* (from seq 0) */
        r->next_idx = head_idx;
    } else if (r->next_idx < head_idx) {
        reader_resync(r); /* chunks it did not read are gone */
        walk.skipped = walk.first_seq - r->next_seq;
        r->next_idx = head_idx;
    } else if (r->last_idx >= head_idx) {
        off = ent_next(w, r->last_off, ent_size(ent_at(w, r->last_off)->len));
    }
    size_t count = (size_t)(w->appended - r->next_idx);
    if (fact && count) {
        facts_early(w, off, count, fact, ctx);
    }
    wire_emit em = {.fn = fn, .ctx = ctx, .walk = &walk};
    if (count) {
        r->last_off = walk_chunks(&r->d, w, off, r->next_idx, count, &em, fact, ctx);
        r->last_idx = w->appended - 1;
        r->started = true;
    }
    r->next_idx = w->appended;
    r->next_seq = w->next_seq;
    bool oom = r->d.oom;
    if (oom || em.stop) {
        /* The walk ended early: what it did not hand out is lost to it, and the streams' states
         * are those of where it stopped. */
        reader_resync(r);
    }
    reader_forget(r, w->appended - w->chunks);
    if (out) {
        *out = walk;
    }
    return oom ? WAMP_ENOMEM : WAMP_OK;
}
