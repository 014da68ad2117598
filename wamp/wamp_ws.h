/* wamp_ws.h: the WebSocket protocol (RFC 6455), server side, as a pure state machine like
 * wamp_rawsock.h: the opening handshake's accept key, the receive side's frame parser (masking
 * required, fragmentation, control frames, UTF-8 of text messages, the size limit) and the send
 * side's frame headers. Bytes go in in slices of any size (one byte at a time included), events
 * come out one per call. No sockets, no lws: the adapter writes what the events ask for.
 *
 * Receive rules (each violation is WAMP_EPROTO with the close code to send):
 *   - every client frame is masked (5.1), else 1002;
 *   - RSV1..3 are zero (no extension is ever negotiated), else 1002;
 *   - opcodes 0, 1, 2, 8, 9, 10 only, else 1002;
 *   - control frames (8, 9, 10) have FIN set and at most 125 payload octets, else 1002;
 *   - a continuation frame only inside a fragmented message, a new data frame only outside
 *     one, else 1002;
 *   - the 64-bit length has its top bit clear, else 1002;
 *   - a text message is valid UTF-8 (checked as the fragments arrive, so a message that can
 *     never become valid fails at its first bad octet), else 1007;
 *   - a data message (all its fragments) is at most cfg.max_message octets, else 1009, decided
 *     from the frame header before its payload is read;
 *   - a CLOSE payload is empty or a 2-octet code valid on the wire (1000-1003, 1007-1014,
 *     3000-4999) followed by valid UTF-8, else 1002 (1007 for the reason's UTF-8).
 *
 * Ownership: the caller owns the wamp_ws (caller storage, _init/_fini); it owns its reassembly
 * buffer. Payloads in events are borrowed (see wamp_ws_event). Service thread only. */
#ifndef WAMP_WS_H
#define WAMP_WS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wamp_buf.h"
#include "wamp_err.h"

/* The largest frame header the server writes (no mask): 2 + 8 octets. */
#define WAMP_WS_HEADER_MAX 10
/* The largest control frame payload. */
#define WAMP_WS_CONTROL_MAX 125
/* Length of a Sec-WebSocket-Accept value (base64 of a SHA-1), without the terminating NUL. */
#define WAMP_WS_ACCEPT_LEN 28

_Static_assert(WAMP_BUF_HEADROOM >= WAMP_WS_HEADER_MAX, "headroom must hold a frame header");

typedef enum wamp_ws_opcode {
    WAMP_WS_OP_CONT = 0x0,
    WAMP_WS_OP_TEXT = 0x1,
    WAMP_WS_OP_BINARY = 0x2,
    WAMP_WS_OP_CLOSE = 0x8,
    WAMP_WS_OP_PING = 0x9,
    WAMP_WS_OP_PONG = 0xA
} wamp_ws_opcode;

/* Close codes (RFC 6455 7.4.1) the router sends or reports. */
typedef enum wamp_ws_close_code {
    WAMP_WS_CLOSE_NORMAL = 1000,
    WAMP_WS_CLOSE_GOING_AWAY = 1001,
    WAMP_WS_CLOSE_PROTOCOL = 1002,
    WAMP_WS_CLOSE_UNSUPPORTED = 1003,
    WAMP_WS_CLOSE_NO_STATUS = 1005, /* reported for a CLOSE without payload; never sent */
    WAMP_WS_CLOSE_INVALID_DATA = 1007,
    WAMP_WS_CLOSE_POLICY = 1008,
    WAMP_WS_CLOSE_TOO_BIG = 1009,
    WAMP_WS_CLOSE_INTERNAL = 1011
} wamp_ws_close_code;

/* Plain data, copied by wamp_ws_init(). */
typedef struct wamp_ws_config {
    size_t max_message; /* octets of one reassembled data message; 0 = no limit */
} wamp_ws_config;

typedef enum wamp_ws_event_kind {
    /* One complete data message (text or binary), its fragments joined and unmasked. */
    WAMP_WS_EV_MESSAGE = 1,
    WAMP_WS_EV_PING, /* answer with a PONG carrying the same payload */
    WAMP_WS_EV_PONG,
    /* The peer's CLOSE: answer with a CLOSE (echo the code, or 1000) unless one was sent, then
     * close the TCP connection. Every later feed returns WAMP_ECLOSED. */
    WAMP_WS_EV_CLOSE
} wamp_ws_event_kind;

typedef struct wamp_ws_event {
    wamp_ws_event_kind kind;
    bool binary; /* MESSAGE: opcode 2 (else text) */
    /* MESSAGE, PING, PONG: the payload; CLOSE: the reason (UTF-8, not NUL-terminated).
     * Borrowed, valid until the next wamp_ws_feed()/_fini() on this state. It points into the
     * caller's input (unmasked in place) when the message arrived as one frame in one slice,
     * else into the reassembly buffer. */
    const unsigned char *data;
    size_t len;
    /* CLOSE: the peer's code (WAMP_WS_CLOSE_NO_STATUS when it sent none). After WAMP_EPROTO:
     * the code to close with (1002, 1007 or 1009). */
    uint16_t code;
    /* After WAMP_EPROTO: a short static description for the log line and the close reason
     * (at most 123 octets). */
    const char *why;
} wamp_ws_event;

/* One connection's receive state. Fields are private to wamp_ws.c. */
typedef struct wamp_ws {
    wamp_ws_config cfg;
    uint8_t state;       /* parser state */
    uint8_t head[14];    /* frame header being read */
    uint8_t head_have;   /* octets of it read */
    uint8_t head_need;   /* octets the header has (2..14), once known */
    uint8_t opcode;      /* of the frame being read */
    bool fin;            /* of the frame being read */
    uint8_t mask[4];     /* of the frame being read */
    uint8_t mask_pos;    /* next mask octet (payload offset mod 4) */
    uint8_t msg_opcode;  /* TEXT or BINARY while a fragmented message is open, else 0 */
    uint64_t need;       /* payload octets of the frame still to read */
    uint32_t utf8_state; /* incremental UTF-8 check of the open text message */
    wamp_buf *msg;       /* reassembly of a message that spans frames or slices; NULL unused */
    uint8_t ctl[WAMP_WS_CONTROL_MAX]; /* a control frame's payload split across slices */
    uint8_t ctl_len;
} wamp_ws;

/* Starts at the first frame header (the handshake is the adapter's). Never fails. */
void wamp_ws_init(wamp_ws *ws, const wamp_ws_config *cfg);
/* Frees the reassembly buffer. Idempotent; ws may be reinitialised afterwards. */
void wamp_ws_fini(wamp_ws *ws);

/* Consumes input until one event is complete (or the input is used up); unmasks payload in
 * place (in is written). *used is always set to the octets consumed; call again with the rest.
 *   WAMP_OK      *ev holds one event.
 *   WAMP_EAGAIN  every octet was consumed and no event is complete: feed more.
 *   WAMP_EPROTO  the peer broke the protocol: send CLOSE with ev->code and ev->why, then close
 *                the connection (no further data frames are read). Stays failed.
 *   WAMP_ECLOSED input after the peer's CLOSE: ignore it.
 *   WAMP_ENOMEM  the reassembly buffer could not grow (close with 1011). */
wamp_err wamp_ws_feed(wamp_ws *ws, unsigned char *in, size_t len, size_t *used, wamp_ws_event *ev);

/* Direct reads of a large payload: while the parser is inside a data frame's payload, the place
 * in the reassembly buffer where the frame's next octets go (grown for min(rest of the frame,
 * max) octets), *room set to that many; NULL (*room 0) anywhere else (a frame header, a control
 * frame, closed or failed) and when the buffer cannot grow. The adapter writes up to *room
 * octets there as received (masked), e.g. with one recv() from its socket instead of many small
 * slices, then calls wamp_ws_rx_commit(). Nothing else may be fed in between. */
unsigned char *wamp_ws_rx_space(wamp_ws *ws, size_t max, size_t *room);
/* n (<= the last *room) octets were written at wamp_ws_rx_space(): unmasked in place and checked
 * as wamp_ws_feed() would (UTF-8 of text). Returns WAMP_OK with the MESSAGE event when they
 * complete the message, WAMP_EAGAIN when more is to come, WAMP_EPROTO (1007) for invalid UTF-8,
 * WAMP_EINVAL (nothing done) when n is more than there is room for. */
wamp_err wamp_ws_rx_commit(wamp_ws *ws, size_t n, wamp_ws_event *ev);

/* Writes the header of a server frame (FIN set when fin, no mask) for a payload of len octets
 * into out and returns its length (2, 4 or 10). */
size_t wamp_ws_header(uint8_t out[WAMP_WS_HEADER_MAX], wamp_ws_opcode op, bool fin, uint64_t len);

/* Writes a whole CLOSE frame (header, code, reason cut to fit 125 octets at a UTF-8 character
 * boundary) into out (at least 2 + WAMP_WS_CONTROL_MAX octets) and returns its length. code 0
 * writes a CLOSE without payload. */
size_t wamp_ws_close_frame(uint8_t out[2 + WAMP_WS_CONTROL_MAX], uint16_t code, const char *reason);

/* true when key is a valid Sec-WebSocket-Key: base64 of 16 octets (24 characters, "==" end);
 * surrounding whitespace is not allowed (the HTTP parser strips it). */
bool wamp_ws_key_valid(const char *key, size_t len);
/* Writes the Sec-WebSocket-Accept value of key (base64 of SHA-1(key + the RFC's GUID)) and a
 * NUL into out. WAMP_EINVAL (out untouched) when !wamp_ws_key_valid(key, len). */
wamp_err wamp_ws_accept(const char *key, size_t len, char out[WAMP_WS_ACCEPT_LEN + 1]);

/* The length of the UTF-8 text s (len octets) cut to at most max octets at a character
 * boundary: len when it is no longer, else max backed up over the continuation octets of the
 * character that s[max] is inside. */
size_t wamp_utf8_cut(const char *s, size_t len, size_t max);
/* vsnprintf() into out (cap octets, cap > 0), a text that does not fit cut at a character
 * boundary, so that what formats as UTF-8 stays UTF-8 (a string cut inside a character is no JSON
 * string: jansson refuses it). Returns the length written. */
size_t wamp_utf8_vsnprintf(char *out, size_t cap, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));
size_t wamp_utf8_snprintf(char *out, size_t cap, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* When the valid UTF-8 at s (n octets left) starts with a character a terminal acts on rather
 * than shows: a C1 control (U+0080..U+009F; U+009B is CSI, U+009D OSC), or a bidirectional
 * override or isolate (U+202A..U+202E, U+2066..U+2069), which reorder what follows: its length
 * in octets, its code point in *cp; else 0. */
size_t wamp_utf8_term_control(const unsigned char *s, size_t n, unsigned *cp);

/* Incremental UTF-8 validation (also used for text frames): state starts at
 * WAMP_UTF8_ACCEPT; feed chunks with wamp_utf8_step(); WAMP_UTF8_REJECT is final; the text is
 * valid when the state is WAMP_UTF8_ACCEPT at its end. Overlong forms, surrogates and code
 * points above U+10FFFF are rejected. */
#define WAMP_UTF8_ACCEPT 0u
#define WAMP_UTF8_REJECT 1u
uint32_t wamp_utf8_step(uint32_t state, const unsigned char *s, size_t n);

#endif /* WAMP_WS_H */
