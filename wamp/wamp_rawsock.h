/* wamp_rawsock.h: WAMP-over-RawSocket, router side (WAMP spec, "RawSocket Transport"): the
 * 4-octet opening handshake (serializer and maximum length negotiation, error replies) and the
 * 4-octet length prefix framing (regular message, PING, PONG), as a pure state machine: bytes
 * go in in slices of any size (one byte at a time included), events come out one per call.
 * No sockets, no lws: the adapter (router/rt_lws_raw.c) writes what the events ask for.
 * Ownership: the caller owns the wamp_rawsock (caller storage, _init/_fini); it owns its
 * reassembly buffer. Frame payloads in events are borrowed (see wamp_rawsock_event). Service
 * thread only. */
#ifndef WAMP_RAWSOCK_H
#define WAMP_RAWSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wamp_buf.h"
#include "wamp_err.h"
#include "wamp_types.h"

#define WAMP_RAWSOCK_MAGIC  0x7F
#define WAMP_RAWSOCK_PREFIX 4             /* octets of the handshake and of each frame prefix */
#define WAMP_RAWSOCK_MIN    ((size_t)512) /* 2^9: LENGTH 0 */
#define WAMP_RAWSOCK_MAX    ((size_t)16777216) /* 2^24: LENGTH 15, the largest frame */

/* Transport message types (the TTT bits of a frame prefix). */
typedef enum wamp_rawsock_type {
    WAMP_RAWSOCK_MSG = 0, /* a serialized WAMP message */
    WAMP_RAWSOCK_PING = 1,
    WAMP_RAWSOCK_PONG = 2
} wamp_rawsock_type;

/* Handshake error codes (upper 4 bits of the error reply's second octet). */
typedef enum wamp_rawsock_hs_error {
    WAMP_RAWSOCK_ERR_SERIALIZER = 1, /* serializer unsupported */
    WAMP_RAWSOCK_ERR_MAX_LENGTH = 2, /* maximum message length unacceptable */
    WAMP_RAWSOCK_ERR_RESERVED = 3,   /* use of reserved bits (unsupported feature) */
    WAMP_RAWSOCK_ERR_CONNECTIONS = 4 /* maximum connection count reached */
} wamp_rawsock_hs_error;

/* What the router accepts. Plain data, copied by wamp_rawsock_init(). */
typedef struct wamp_rawsock_config {
    bool ser_json;    /* serializer 1 */
    bool ser_msgpack; /* serializer 2 */
    bool ser_cbor;    /* serializer 3 */
    /* Our receive limit in bytes. The handshake reply announces the largest 2^(9+n) (n 0..15)
     * not above it (512 when it is smaller), and that announced length is what incoming frames
     * are held to. */
    size_t max_len;
    /* A client whose announced receive limit is below this is refused with error 2 (maximum
     * message length unacceptable). 0 or <= 512 accepts every client. */
    size_t min_peer_len;
} wamp_rawsock_config;

typedef enum wamp_rawsock_event_kind {
    /* The client's handshake is acceptable: write reply (4 octets), then speak ser; the
     * router must not send messages longer than peer_max. */
    WAMP_RAWSOCK_EV_ACCEPTED = 1,
    /* The client's handshake is refused with `error`: write reply (the error reply), then
     * close. Every later feed returns WAMP_EPROTO. */
    WAMP_RAWSOCK_EV_REFUSED,
    /* One complete frame of `type`, payload data[0..len). */
    WAMP_RAWSOCK_EV_FRAME
} wamp_rawsock_event_kind;

typedef struct wamp_rawsock_event {
    wamp_rawsock_event_kind kind;
    uint8_t reply[WAMP_RAWSOCK_PREFIX]; /* ACCEPTED, REFUSED */
    wamp_ser ser;                       /* ACCEPTED */
    size_t peer_max;                    /* ACCEPTED: 2^(9+LENGTH) of the client */
    wamp_rawsock_hs_error error;        /* REFUSED */
    wamp_rawsock_type type;             /* FRAME */
    /* FRAME: borrowed, valid until the next wamp_rawsock_feed()/_fini() on this state. It points
     * into the caller's input when the frame arrived in one slice (no copy), else into the
     * reassembly buffer. */
    const unsigned char *data;
    size_t len;
    /* After WAMP_EPROTO/WAMP_ETOOBIG: a short static description for the log line. For
     * WAMP_ETOOBIG, len is the announced frame length. */
    const char *why;
} wamp_rawsock_event;

typedef enum wamp_rawsock_state {
    WAMP_RAWSOCK_HANDSHAKE,
    WAMP_RAWSOCK_PREFIX_STATE,
    WAMP_RAWSOCK_PAYLOAD,
    WAMP_RAWSOCK_FAILED
} wamp_rawsock_state;

/* Router-side state of one connection. Fields are private to wamp_rawsock.c. */
typedef struct wamp_rawsock {
    wamp_rawsock_config cfg;
    wamp_rawsock_state state;
    uint8_t our_exp; /* the LENGTH we announce */
    uint8_t head[WAMP_RAWSOCK_PREFIX];
    size_t head_have;
    wamp_rawsock_type type; /* of the frame being read */
    size_t need;            /* payload octets of the frame being read */
    wamp_buf *body;         /* reassembly of a frame that spans slices; NULL when unused */
} wamp_rawsock;

/* Starts in the handshake state. Never fails. */
void wamp_rawsock_init(wamp_rawsock *rs, const wamp_rawsock_config *cfg);
/* Frees the reassembly buffer. Idempotent; rs may be reinitialised afterwards. */
void wamp_rawsock_fini(wamp_rawsock *rs);

/* Our announced (and enforced) receive limit: 2^(9+n) for cfg.max_len as described above. */
size_t wamp_rawsock_max_len(const wamp_rawsock *rs);

/* Consumes input until one event is complete (or the input is used up). *used is always set
 * to the octets consumed; call again with the rest.
 *   WAMP_OK      *ev holds one event.
 *   WAMP_EAGAIN  every octet was consumed and no event is complete: feed more.
 *   WAMP_EPROTO  the peer broke the protocol (first octet not 0x7F, reserved prefix bits,
 *                reserved message type, bad 25th length bit, input after a refusal): fail the
 *                connection without a reply; ev->why says why. Stays failed.
 *   WAMP_ETOOBIG a frame longer than wamp_rawsock_max_len() was announced (ev->len): fail the
 *                connection. Stays failed.
 *   WAMP_ENOMEM  the reassembly buffer could not grow (state unchanged but for *used). */
wamp_err wamp_rawsock_feed(wamp_rawsock *rs, const void *in, size_t len, size_t *used,
                           wamp_rawsock_event *ev);

/* Writes the 4-octet prefix of a frame of len octets (len <= WAMP_RAWSOCK_MAX; exactly 2^24
 * uses the 25th length bit). WAMP_EINVAL (out untouched) when len is too big. */
wamp_err wamp_rawsock_prefix(uint8_t out[WAMP_RAWSOCK_PREFIX], wamp_rawsock_type type, size_t len);
/* Writes the handshake error reply for error. */
void wamp_rawsock_error_reply(uint8_t out[WAMP_RAWSOCK_PREFIX], wamp_rawsock_hs_error error);
/* Static English text of a handshake error code ("serializer unsupported", ...). */
const char *wamp_rawsock_error_name(wamp_rawsock_hs_error error);

#endif /* WAMP_RAWSOCK_H */
