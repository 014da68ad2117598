/* wamp_ws.c: the WebSocket protocol, server side (see wamp_ws.h for the rules).
 *
 * The receive side is one loop over the input slice with four states: reading a frame header,
 * reading a payload, closed (after the peer's CLOSE) and failed. A header the slice holds whole
 * is read where it lies; one split across slices is collected in ws->head (at most 14 octets)
 * and then read the same way. A header is checked as soon as its first two octets are known
 * (mask bit, RSV, opcode, control frame and fragmentation rules) and again when its length is
 * complete (top bit, the message limit), so nothing of a refused frame's payload is ever read.
 * A data frame that is unfragmented and lies whole in the slice is unmasked in place and handed
 * out without a copy; every other data frame is unmasked straight into the reassembly buffer,
 * which exists only from the first such frame of a message to the call after the one that
 * handed the message out. */
#include "wamp_ws.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "wamp_rd.h"
#include "wamp_scan.h"
#include "wamp_sha1.h"

enum {
    ST_HEAD = 0,
    ST_PAYLOAD,
    ST_CLOSED,
    ST_FAILED
};

/* The reassembly buffer is grown ahead for the rest of a frame up to this many octets: a frame
 * that arrives in pieces is copied once without a chain of reallocations, and a header that
 * announces more than its sender delivers costs no more than this. */
#define WS_RESERVE 65536u

/* The failures, by index (kept in head[0] once failed, so a failed state answers the same). */
enum {
    F_UNMASKED = 0,
    F_RSV,
    F_OPCODE,
    F_CTL_FRAGMENTED,
    F_CTL_LONG,
    F_CONT_OUTSIDE,
    F_DATA_INSIDE,
    F_LEN_TOP_BIT,
    F_TOO_BIG,
    F_UTF8,
    F_CLOSE_LEN,
    F_CLOSE_CODE,
    F_CLOSE_UTF8,
    F_NOMEM
};

static const struct {
    uint16_t code;
    const char *why;
} failures[] = {
        [F_UNMASKED] = {WAMP_WS_CLOSE_PROTOCOL, "unmasked client frame"},
        [F_RSV] = {WAMP_WS_CLOSE_PROTOCOL, "reserved bits set without an extension"},
        [F_OPCODE] = {WAMP_WS_CLOSE_PROTOCOL, "unknown opcode"},
        [F_CTL_FRAGMENTED] = {WAMP_WS_CLOSE_PROTOCOL, "fragmented control frame"},
        [F_CTL_LONG] = {WAMP_WS_CLOSE_PROTOCOL, "control frame over 125 octets"},
        [F_CONT_OUTSIDE] = {WAMP_WS_CLOSE_PROTOCOL, "continuation frame outside a message"},
        [F_DATA_INSIDE] = {WAMP_WS_CLOSE_PROTOCOL, "data frame inside a fragmented message"},
        [F_LEN_TOP_BIT] = {WAMP_WS_CLOSE_PROTOCOL, "64-bit frame length with the top bit set"},
        [F_TOO_BIG] = {WAMP_WS_CLOSE_TOO_BIG, "message too big"},
        [F_UTF8] = {WAMP_WS_CLOSE_INVALID_DATA, "invalid UTF-8 in a text message"},
        [F_CLOSE_LEN] = {WAMP_WS_CLOSE_PROTOCOL, "close frame with a 1-octet payload"},
        [F_CLOSE_CODE] = {WAMP_WS_CLOSE_PROTOCOL, "close frame with an invalid code"},
        [F_CLOSE_UTF8] = {WAMP_WS_CLOSE_INVALID_DATA, "close reason is not valid UTF-8"},
        [F_NOMEM] = {WAMP_WS_CLOSE_INTERNAL, "out of memory"},
};

static const char WS_GUID[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* --- UTF-8 ----------------------------------------------------------------------------------- */

/* An open sequence is state = need << 2 | lo << 8 | hi << 16: need continuation octets are
 * still to come and the next one must lie in [lo, hi]. need 0 is WAMP_UTF8_ACCEPT (0); the
 * low bit alone is WAMP_UTF8_REJECT. */
static uint32_t utf8_open(unsigned need, unsigned lo, unsigned hi)
{
    return (uint32_t)need << 2 | (uint32_t)lo << 8 | (uint32_t)hi << 16;
}

static uint32_t utf8_next(uint32_t state, unsigned c)
{
    unsigned need = (state >> 2) & 3u;
    if (c < ((state >> 8) & 0xffu) || c > ((state >> 16) & 0xffu)) {
        return WAMP_UTF8_REJECT;
    }
    return need > 1 ? utf8_open(need - 1, 0x80, 0xbf) : WAMP_UTF8_ACCEPT;
}

uint32_t wamp_utf8_step(uint32_t state, const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (state != WAMP_UTF8_ACCEPT) {
        if (state == WAMP_UTF8_REJECT || i == n) {
            return state;
        }
        state = utf8_next(state, s[i++]);
    }
    while (i < n) {
        i += wamp_scan_ascii(s + i, n - i); /* ASCII runs 32 octets at a time (wamp_scan.h) */
        if (i == n) {
            break;
        }
        unsigned c = s[i];
        unsigned need;
        unsigned lo = 0x80;
        unsigned hi = 0xbf;
        if (c < 0xc2) {
            return WAMP_UTF8_REJECT; /* continuation octet, or overlong 2-octet lead */
        } else if (c < 0xe0) {
            need = 1;
        } else if (c < 0xf0) {
            need = 2;
            lo = c == 0xe0 ? 0xa0 : lo; /* overlong */
            hi = c == 0xed ? 0x9f : hi; /* surrogates */
        } else if (c < 0xf5) {
            need = 3;
            lo = c == 0xf0 ? 0x90 : lo; /* overlong */
            hi = c == 0xf4 ? 0x8f : hi; /* above U+10FFFF */
        } else {
            return WAMP_UTF8_REJECT;
        }
        i++;
        if (n - i < need) {
            /* The sequence goes on in the next chunk: check what is here octet by octet. */
            state = utf8_open(need, lo, hi);
            while (i < n && state != WAMP_UTF8_REJECT) {
                state = utf8_next(state, s[i++]);
            }
            return state;
        }
        if (s[i] < lo || s[i] > hi) {
            return WAMP_UTF8_REJECT;
        }
        for (unsigned k = 1; k < need; k++) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return WAMP_UTF8_REJECT;
            }
        }
        i += need;
    }
    return WAMP_UTF8_ACCEPT;
}

/* --- Receive side ---------------------------------------------------------------------------- */

void wamp_ws_init(wamp_ws *ws, const wamp_ws_config *cfg)
{
    memset(ws, 0, sizeof(*ws));
    ws->cfg = *cfg;
    ws->state = ST_HEAD;
}

void wamp_ws_fini(wamp_ws *ws)
{
    wamp_buf_unref(&ws->msg);
}

/* Writes src[0..n) XORed with the mask, starting at mask octet pos, to dst (dst == src
 * unmasks in place); returns the next position. *ascii: every unmasked octet is below 0x80 (a
 * text frame's UTF-8 check then has nothing to do: one pass over the octets, not two). Sixteen
 * octets at a time with SSE2, then eight through unaligned 64-bit loads and stores (memcpy: one
 * instruction where the target allows it), the last 0..7 one by one. */
static uint8_t unmask_to(unsigned char *dst, const unsigned char *src, size_t n,
                         const uint8_t mask[4], uint8_t pos, bool *ascii)
{
    uint32_t m32;
    memcpy(&m32, mask, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* The word whose octet k is mask[(pos + k) % 4]. */
    if (pos) {
        m32 = m32 >> (8 * pos) | m32 << (32 - 8 * pos);
    }
#else
    uint8_t rot[4] = {mask[pos & 3u], mask[(pos + 1) & 3u], mask[(pos + 2) & 3u],
                      mask[(pos + 3) & 3u]};
    memcpy(&m32, rot, 4);
#endif
    uint64_t m = (uint64_t)m32 << 32 | m32;
    uint64_t high = 0;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i mv = _mm_set1_epi32((int)m32); /* SSE2 implies little-endian x86 */
    __m128i acc = _mm_setzero_si128();
    for (; n - i >= 16; i += 16) {
        __m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + i)), mv);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), v);
        acc = _mm_or_si128(acc, v);
    }
    high = (uint64_t)_mm_movemask_epi8(acc);
#endif
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, sizeof(w));
        w ^= m;
        memcpy(dst + i, &w, sizeof(w));
        high |= w & 0x8080808080808080ULL;
    }
    while (i < n) {
        dst[i] = src[i] ^ mask[pos];
        high |= dst[i] & 0x80u;
        i++;
        pos = (pos + 1) & 3u;
    }
    *ascii = high == 0;
    return pos;
}

static wamp_err fail(wamp_ws *ws, unsigned f, wamp_ws_event *ev)
{
    ws->state = ST_FAILED;
    ws->head[0] = (uint8_t)f;
    memset(ev, 0, sizeof(*ev));
    ev->code = failures[f].code;
    ev->why = failures[f].why;
    return f == F_NOMEM ? WAMP_ENOMEM : WAMP_EPROTO;
}

static size_t msg_len(const wamp_ws *ws)
{
    return ws->msg ? wamp_buf_len(ws->msg) : 0;
}

/* The header's first two octets are known: applies every rule they decide and sets head_need.
 * Returns a failure index or -1. */
static int head_first(wamp_ws *ws)
{
    uint8_t b0 = ws->head[0];
    uint8_t b1 = ws->head[1];
    uint8_t op = b0 & 0x0fu;
    unsigned len7 = b1 & 0x7fu;
    if (!(b1 & 0x80u)) {
        return F_UNMASKED;
    }
    if (b0 & 0x70u) {
        return F_RSV;
    }
    if (op > WAMP_WS_OP_BINARY && (op < WAMP_WS_OP_CLOSE || op > WAMP_WS_OP_PONG)) {
        return F_OPCODE;
    }
    ws->fin = (b0 & 0x80u) != 0;
    ws->opcode = op;
    if (op >= WAMP_WS_OP_CLOSE) {
        if (!ws->fin) {
            return F_CTL_FRAGMENTED;
        }
        if (len7 > WAMP_WS_CONTROL_MAX) {
            return F_CTL_LONG;
        }
    } else if (op == WAMP_WS_OP_CONT) {
        if (ws->msg_opcode == 0) {
            return F_CONT_OUTSIDE;
        }
    } else if (ws->msg_opcode != 0) {
        return F_DATA_INSIDE;
    }
    ws->head_need = (uint8_t)(2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4);
    return -1;
}

/* The whole header h[0..head_need) is known: its length, the mask, the message limit; a new data
 * message starts here. Returns a failure index or -1. */
static int head_done(wamp_ws *ws, const uint8_t *h)
{
    unsigned len7 = h[1] & 0x7fu;
    const uint8_t *p = h + 2;
    uint64_t len = len7;
    if (len7 == 126) {
        len = (uint64_t)p[0] << 8 | p[1];
        p += 2;
    } else if (len7 == 127) {
        len = 0;
        for (unsigned i = 0; i < 8; i++) {
            len = len << 8 | p[i];
        }
        if (len >> 63) {
            return F_LEN_TOP_BIT;
        }
        p += 8;
    }
    memcpy(ws->mask, p, 4);
    ws->mask_pos = 0;
    ws->need = len;
    ws->ctl_len = 0;
    if (ws->opcode >= WAMP_WS_OP_CLOSE) {
        return -1;
    }
    uint64_t so_far = ws->opcode == WAMP_WS_OP_CONT ? msg_len(ws) : 0;
    uint64_t max = ws->cfg.max_message ? ws->cfg.max_message : SIZE_MAX;
    if (len > max || so_far > max - len) {
        return F_TOO_BIG;
    }
    if (ws->opcode != WAMP_WS_OP_CONT) {
        ws->msg_opcode = ws->opcode;
        ws->utf8_state = WAMP_UTF8_ACCEPT;
    }
    return -1;
}

static bool close_code_valid(unsigned code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

/* A control frame's payload p[0..n) is complete (unmasked). */
static wamp_err control_done(wamp_ws *ws, const unsigned char *p, size_t n, wamp_ws_event *ev)
{
    memset(ev, 0, sizeof(*ev));
    ev->data = p;
    ev->len = n;
    if (ws->opcode == WAMP_WS_OP_PING) {
        ev->kind = WAMP_WS_EV_PING;
        return WAMP_OK;
    }
    if (ws->opcode == WAMP_WS_OP_PONG) {
        ev->kind = WAMP_WS_EV_PONG;
        return WAMP_OK;
    }
    ev->kind = WAMP_WS_EV_CLOSE;
    ev->code = WAMP_WS_CLOSE_NO_STATUS;
    if (n == 1) {
        return fail(ws, F_CLOSE_LEN, ev);
    }
    if (n >= 2) {
        unsigned code = (unsigned)p[0] << 8 | p[1];
        if (!close_code_valid(code)) {
            return fail(ws, F_CLOSE_CODE, ev);
        }
        if (wamp_utf8_step(WAMP_UTF8_ACCEPT, p + 2, n - 2) != WAMP_UTF8_ACCEPT) {
            return fail(ws, F_CLOSE_UTF8, ev);
        }
        ev->code = (uint16_t)code;
        ev->data = p + 2;
        ev->len = n - 2;
    }
    ws->state = ST_CLOSED;
    return WAMP_OK;
}

/* Unmasks n payload octets of the data frame being read from src to dst (may be the same) and
 * checks a text message's UTF-8 as far as it goes; false when it can never become valid. */
static bool unmask_data(wamp_ws *ws, unsigned char *dst, const unsigned char *src, size_t n)
{
    bool ascii;
    ws->mask_pos = unmask_to(dst, src, n, ws->mask, ws->mask_pos, &ascii);
    if (ws->msg_opcode == WAMP_WS_OP_TEXT && !(ascii && ws->utf8_state == WAMP_UTF8_ACCEPT)) {
        ws->utf8_state = wamp_utf8_step(ws->utf8_state, dst, n);
    }
    return ws->utf8_state != WAMP_UTF8_REJECT;
}

/* A data message is complete in p[0..n). */
static wamp_err message_done(wamp_ws *ws, const unsigned char *p, size_t n, wamp_ws_event *ev)
{
    bool binary = ws->msg_opcode == WAMP_WS_OP_BINARY;
    ws->msg_opcode = 0;
    if (!binary && ws->utf8_state != WAMP_UTF8_ACCEPT) {
        return fail(ws, F_UTF8, ev);
    }
    memset(ev, 0, sizeof(*ev));
    ev->kind = WAMP_WS_EV_MESSAGE;
    ev->binary = binary;
    ev->data = p;
    ev->len = n;
    return WAMP_OK;
}

/* Long: the frame parser's state machine in one loop (header where it lies or gathered, payload
 * unmasked in place or into the reassembly buffer, control frames, message end), so that each
 * state hands over to the next without a call on the hot path of every WebSocket message. */
wamp_err wamp_ws_feed(wamp_ws *ws, unsigned char *in, size_t len, size_t *used, wamp_ws_event *ev)
{
    size_t off = 0;
    wamp_err err = WAMP_EAGAIN;
    if (ws->msg && ws->msg_opcode == 0) {
        /* The message it held was handed out by the previous call: an idle connection holds
         * no buffer. */
        wamp_buf_unref(&ws->msg);
    }
    if (ws->state == ST_FAILED) {
        *used = 0;
        return fail(ws, ws->head[0], ev);
    }
    if (ws->state == ST_CLOSED) {
        *used = 0;
        return WAMP_ECLOSED;
    }
    for (;;) {
        if (ws->state == ST_HEAD) {
            if (off == len) {
                break;
            }
            int f = -1;
            if (ws->head_have == 0 && len - off >= 2) {
                /* Fast path: the header is read where it lies when the slice holds it all. */
                ws->head[0] = in[off];
                ws->head[1] = in[off + 1];
                f = head_first(ws);
                if (f < 0 && len - off >= ws->head_need) {
                    f = head_done(ws, in + off);
                    off += ws->head_need;
                    ws->head_need = 0;
                    ws->state = ST_PAYLOAD;
                } else {
                    ws->head_have = 2;
                    off += 2;
                }
            } else {
                size_t want = (ws->head_need ? ws->head_need : 2u) - ws->head_have;
                size_t take = len - off < want ? len - off : want;
                for (size_t i = 0; i < take; i++) { /* at most 12: cheaper than a memcpy call */
                    ws->head[ws->head_have + i] = in[off + i];
                }
                ws->head_have = (uint8_t)(ws->head_have + take);
                off += take;
                if (ws->head_need == 0 && ws->head_have == 2) {
                    f = head_first(ws);
                }
                if (f < 0 && ws->head_need != 0 && ws->head_have == ws->head_need) {
                    f = head_done(ws, ws->head);
                    ws->head_have = 0;
                    ws->head_need = 0;
                    ws->state = ST_PAYLOAD;
                }
            }
            if (f >= 0) {
                err = fail(ws, (unsigned)f, ev);
                break;
            }
            continue;
        }
        /* ST_PAYLOAD */
        size_t avail = len - off;
        size_t take = ws->need < avail ? (size_t)ws->need : avail;
        unsigned char *p = in + off;
        if (avail == 0 && ws->need > 0) {
            break;
        }
        ws->need -= take;
        off += take;
        bool frame_done = ws->need == 0;
        if (frame_done) {
            ws->state = ST_HEAD;
        }
        if (ws->opcode >= WAMP_WS_OP_CLOSE) {
            if (frame_done && ws->ctl_len == 0) {
                bool ascii;
                unmask_to(p, p, take, ws->mask, 0, &ascii);
                err = control_done(ws, p, take, ev);
                break;
            }
            bool ascii;
            ws->mask_pos =
                    unmask_to(ws->ctl + ws->ctl_len, p, take, ws->mask, ws->mask_pos, &ascii);
            ws->ctl_len = (uint8_t)(ws->ctl_len + take);
            if (frame_done) {
                err = control_done(ws, ws->ctl, ws->ctl_len, ev);
                break;
            }
            continue;
        }
        /* Zero copy when the whole unfragmented frame is in this slice; else unmasked straight
         * into the reassembly buffer, reserving for the rest of the frame up to WS_RESERVE. */
        bool zero_copy = frame_done && ws->fin && ws->opcode != WAMP_WS_OP_CONT && msg_len(ws) == 0;
        unsigned char *dst = p;
        if (!zero_copy && take > 0) {
            dst = wamp_buf_reserve(&ws->msg,
                                   take + (ws->need < WS_RESERVE ? (size_t)ws->need : WS_RESERVE));
            if (!dst) {
                err = fail(ws, F_NOMEM, ev);
                break;
            }
        }
        if (!unmask_data(ws, dst, p, take)) {
            err = fail(ws, F_UTF8, ev);
            break;
        }
        if (zero_copy) {
            err = message_done(ws, p, take, ev);
            break;
        }
        if (take > 0) {
            wamp_buf_commit(ws->msg, take);
        }
        if (frame_done && ws->fin) {
            err = message_done(ws, ws->msg ? wamp_buf_cdata(ws->msg) : p, msg_len(ws), ev);
            break;
        }
    }
    *used = off;
    return err;
}

/* Inside a data frame's payload with octets still to come (what wamp_ws_rx_space() needs). */
static bool in_data_payload(const wamp_ws *ws)
{
    return ws->state == ST_PAYLOAD && ws->opcode < WAMP_WS_OP_CLOSE && ws->need > 0;
}

unsigned char *wamp_ws_rx_space(wamp_ws *ws, size_t max, size_t *room)
{
    *room = 0;
    if (!in_data_payload(ws) || max == 0) {
        return NULL;
    }
    size_t n = ws->need < max ? (size_t)ws->need : max;
    unsigned char *dst = wamp_buf_reserve(&ws->msg, n);
    if (dst) {
        *room = n;
    }
    return dst;
}

wamp_err wamp_ws_rx_commit(wamp_ws *ws, size_t n, wamp_ws_event *ev)
{
    unsigned char *p = in_data_payload(ws) && n <= ws->need ? wamp_buf_tail(ws->msg, n) : NULL;
    if (!p) {
        return WAMP_EINVAL;
    }
    if (!unmask_data(ws, p, p, n)) {
        return fail(ws, F_UTF8, ev);
    }
    wamp_buf_commit(ws->msg, n);
    ws->need -= n;
    if (ws->need > 0) {
        return WAMP_EAGAIN;
    }
    ws->state = ST_HEAD;
    if (!ws->fin) {
        return WAMP_EAGAIN;
    }
    return message_done(ws, wamp_buf_cdata(ws->msg), msg_len(ws), ev);
}

/* --- Send side and handshake ----------------------------------------------------------------- */

size_t wamp_ws_header(uint8_t out[WAMP_WS_HEADER_MAX], wamp_ws_opcode op, bool fin, uint64_t len)
{
    out[0] = (uint8_t)((fin ? 0x80u : 0u) | ((unsigned)op & 0x0fu));
    if (len < 126) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len <= 0xffff) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (unsigned i = 0; i < 8; i++) {
        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    }
    return 10;
}

size_t wamp_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max) {
        return len;
    }
    /* Cut before a continuation octet would split a character: back up to its lead. */
    while (max > 0 && ((unsigned char)s[max] & 0xc0u) == 0x80u) {
        max--;
    }
    return max;
}

size_t wamp_utf8_vsnprintf(char *out, size_t cap, const char *fmt, va_list ap)
{
    int n = vsnprintf(out, cap, fmt, ap);
    if (n < 0) {
        out[0] = '\0';
        return 0;
    }
    if ((size_t)n < cap) {
        return (size_t)n;
    }
    /* Cut: the last character is kept only if all its octets made it. */
    size_t end = cap - 1, lead = end;
    while (lead > 0 && ((unsigned char)out[lead - 1] & 0xC0u) == 0x80u) {
        lead--;
    }
    if (lead > 0 && (unsigned char)out[lead - 1] >= 0xC0u) {
        unsigned char c = (unsigned char)out[lead - 1];
        size_t need = c >= 0xF0u ? 4 : c >= 0xE0u ? 3 : 2;
        if (end - (lead - 1) < need) {
            end = lead - 1;
            out[end] = '\0';
        }
    }
    return end;
}

size_t wamp_utf8_snprintf(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = wamp_utf8_vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n;
}

size_t wamp_utf8_term_control(const unsigned char *s, size_t n, unsigned *cp)
{
    if (n >= 2 && s[0] == 0xC2 && s[1] >= 0x80 && s[1] <= 0x9F) {
        *cp = s[1];
        return 2;
    }
    if (n >= 3 && s[0] == 0xE2 &&
        ((s[1] == 0x80 && s[2] >= 0xAA && s[2] <= 0xAE) ||
         (s[1] == 0x81 && s[2] >= 0xA6 && s[2] <= 0xA9))) {
        *cp = 0x2000u + ((unsigned)(s[1] & 0x3F) << 6) + (s[2] & 0x3Fu);
        return 3;
    }
    return 0;
}

size_t wamp_ws_close_frame(uint8_t out[2 + WAMP_WS_CONTROL_MAX], uint16_t code, const char *reason)
{
    if (code == 0) {
        return wamp_ws_header(out, WAMP_WS_OP_CLOSE, true, 0);
    }
    size_t rlen = reason ? wamp_utf8_cut(reason, strlen(reason), WAMP_WS_CONTROL_MAX - 2) : 0;
    size_t h = wamp_ws_header(out, WAMP_WS_OP_CLOSE, true, 2 + rlen);
    out[h] = (uint8_t)(code >> 8);
    out[h + 1] = (uint8_t)code;
    if (rlen > 0) {
        memcpy(out + h + 2, reason, rlen);
    }
    return h + 2 + rlen;
}

bool wamp_ws_key_valid(const char *key, size_t len)
{
    /* 16 octets are 22 digits and "==". The last digit carries 2 bits of the key and 4 bits
     * that a canonical encoder leaves zero; any digit still decodes to 16 octets, so it is
     * accepted (clients differ). */
    size_t bin_len = 0;
    return key && len == 24 && wamp_b64_shape_ok(key, len, &bin_len) && bin_len == 16;
}

wamp_err wamp_ws_accept(const char *key, size_t len, char out[WAMP_WS_ACCEPT_LEN + 1])
{
    if (!wamp_ws_key_valid(key, len)) {
        return WAMP_EINVAL;
    }
    char kg[24 + sizeof(WS_GUID)];
    unsigned char digest[WAMP_SHA1_LEN];
    memcpy(kg, key, 24);
    memcpy(kg + 24, WS_GUID, sizeof(WS_GUID) - 1);
    wamp_sha1(kg, 24 + sizeof(WS_GUID) - 1, digest);
    sodium_bin2base64(out, WAMP_WS_ACCEPT_LEN + 1, digest, sizeof(digest),
                      sodium_base64_VARIANT_ORIGINAL);
    return WAMP_OK;
}
