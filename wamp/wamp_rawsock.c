/* wamp_rawsock.c: RawSocket handshake and framing state machine (see wamp_rawsock.h).
 *
 * Spec points this follows (WAMP spec, "RawSocket Transport"):
 * - Handshake octet 1 is 0x7F; anything else is not RawSocket: fail without a reply.
 * - Octet 2 is LENGTH (upper nibble, the client's receive limit 2^(9+LENGTH)) and SERIALIZER
 *   (lower nibble). An unsupported serializer gets error reply 1; like Crossbar (autobahn's
 *   RawSocketServerProtocol), the illegal serializer 0 gets it too, so the client learns why.
 * - Octets 3 and 4 are reserved and must be zero: error reply 3 (use of reserved bits).
 * - Frame prefix: RRRR XTTT + 24-bit length. RRRR must be zero; TTT 3..7 are reserved; X is a
 *   25th length bit, set only for a length of exactly 2^24 with the other bits clear.
 * - A frame longer than the limit we announced fails the connection. */
#include "wamp_rawsock.h"

#include <string.h>

/* A reassembly buffer that grew beyond this is freed once its frame was delivered. */
#define WAMP_RAWSOCK_KEEP ((size_t)64 * 1024)

/* Largest n in 0..15 with 2^(9+n) <= max (0 when max < 512). */
static uint8_t exp_for(size_t max)
{
    uint8_t n = 0;
    while (n < 15 && (WAMP_RAWSOCK_MIN << (n + 1)) <= max) {
        n++;
    }
    return n;
}

void wamp_rawsock_init(wamp_rawsock *rs, const wamp_rawsock_config *cfg)
{
    memset(rs, 0, sizeof(*rs));
    rs->cfg = *cfg;
    rs->state = WAMP_RAWSOCK_HANDSHAKE;
    rs->our_exp = exp_for(cfg->max_len);
}

void wamp_rawsock_fini(wamp_rawsock *rs)
{
    wamp_buf_unref(&rs->body);
}

size_t wamp_rawsock_max_len(const wamp_rawsock *rs)
{
    return WAMP_RAWSOCK_MIN << rs->our_exp;
}

void wamp_rawsock_error_reply(uint8_t out[WAMP_RAWSOCK_PREFIX], wamp_rawsock_hs_error error)
{
    out[0] = WAMP_RAWSOCK_MAGIC;
    out[1] = (uint8_t)(((unsigned)error & 0x0fu) << 4);
    out[2] = 0;
    out[3] = 0;
}

const char *wamp_rawsock_error_name(wamp_rawsock_hs_error error)
{
    switch (error) {
    case WAMP_RAWSOCK_ERR_SERIALIZER:
        return "serializer unsupported";
    case WAMP_RAWSOCK_ERR_MAX_LENGTH:
        return "maximum message length unacceptable";
    case WAMP_RAWSOCK_ERR_RESERVED:
        return "use of reserved bits";
    case WAMP_RAWSOCK_ERR_CONNECTIONS:
        return "maximum connection count reached";
    }
    return "unknown error";
}

wamp_err wamp_rawsock_prefix(uint8_t out[WAMP_RAWSOCK_PREFIX], wamp_rawsock_type type, size_t len)
{
    if (len > WAMP_RAWSOCK_MAX) {
        return WAMP_EINVAL;
    }
    uint8_t x = len == WAMP_RAWSOCK_MAX ? 0x08 : 0x00;
    out[0] = (uint8_t)(x | ((unsigned)type & 0x07u));
    out[1] = (uint8_t)((len >> 16) & 0xffu);
    out[2] = (uint8_t)((len >> 8) & 0xffu);
    out[3] = (uint8_t)(len & 0xffu);
    return WAMP_OK;
}

static wamp_err fail(wamp_rawsock *rs, wamp_rawsock_event *ev, wamp_err err, const char *why)
{
    rs->state = WAMP_RAWSOCK_FAILED;
    wamp_buf_unref(&rs->body);
    ev->why = why;
    return err;
}

static void refuse(wamp_rawsock *rs, wamp_rawsock_event *ev, wamp_rawsock_hs_error error)
{
    rs->state = WAMP_RAWSOCK_FAILED;
    ev->kind = WAMP_RAWSOCK_EV_REFUSED;
    ev->error = error;
    ev->why = wamp_rawsock_error_name(error);
    wamp_rawsock_error_reply(ev->reply, error);
}

/* The 4 handshake octets are in rs->head. */
static void handshake(wamp_rawsock *rs, wamp_rawsock_event *ev)
{
    unsigned ser = rs->head[1] & 0x0fu;
    unsigned lexp = (unsigned)rs->head[1] >> 4;
    size_t peer_max = WAMP_RAWSOCK_MIN << lexp;
    bool ok_ser = (ser == WAMP_SER_JSON && rs->cfg.ser_json) ||
                  (ser == WAMP_SER_MSGPACK && rs->cfg.ser_msgpack) ||
                  (ser == WAMP_SER_CBOR && rs->cfg.ser_cbor);
    if (!ok_ser) {
        refuse(rs, ev, WAMP_RAWSOCK_ERR_SERIALIZER);
        return;
    }
    if (rs->head[2] != 0 || rs->head[3] != 0) {
        refuse(rs, ev, WAMP_RAWSOCK_ERR_RESERVED);
        return;
    }
    if (peer_max < rs->cfg.min_peer_len) {
        refuse(rs, ev, WAMP_RAWSOCK_ERR_MAX_LENGTH);
        return;
    }
    ev->kind = WAMP_RAWSOCK_EV_ACCEPTED;
    ev->ser = (wamp_ser)ser;
    ev->peer_max = peer_max;
    ev->reply[0] = WAMP_RAWSOCK_MAGIC;
    ev->reply[1] = (uint8_t)((unsigned)(rs->our_exp << 4) | ser);
    ev->reply[2] = 0;
    ev->reply[3] = 0;
    rs->state = WAMP_RAWSOCK_PREFIX_STATE;
    rs->head_have = 0;
}

/* The 4 prefix octets are in rs->head: validate and start the payload. */
static wamp_err prefix(wamp_rawsock *rs, wamp_rawsock_event *ev)
{
    uint8_t b0 = rs->head[0];
    size_t n = ((size_t)rs->head[1] << 16) | ((size_t)rs->head[2] << 8) | rs->head[3];
    if (b0 & 0xf0u) {
        return fail(rs, ev, WAMP_EPROTO, "reserved bits set in a frame prefix");
    }
    unsigned type = b0 & 0x07u;
    if (type > WAMP_RAWSOCK_PONG) {
        return fail(rs, ev, WAMP_EPROTO, "reserved frame type");
    }
    if (b0 & 0x08u) {
        if (n != 0) {
            return fail(rs, ev, WAMP_EPROTO, "25th length bit set with a non-zero length");
        }
        n = WAMP_RAWSOCK_MAX;
    }
    if (n > wamp_rawsock_max_len(rs)) {
        ev->len = n;
        return fail(rs, ev, WAMP_ETOOBIG, "frame longer than the announced maximum length");
    }
    rs->type = (wamp_rawsock_type)type;
    rs->need = n;
    rs->head_have = 0;
    rs->state = WAMP_RAWSOCK_PAYLOAD;
    return WAMP_OK;
}

static void frame_done(wamp_rawsock *rs, wamp_rawsock_event *ev, const unsigned char *data,
                       size_t len)
{
    ev->kind = WAMP_RAWSOCK_EV_FRAME;
    ev->type = rs->type;
    ev->data = data;
    ev->len = len;
    rs->state = WAMP_RAWSOCK_PREFIX_STATE;
}

wamp_err wamp_rawsock_feed(wamp_rawsock *rs, const void *in, size_t len, size_t *used,
                           wamp_rawsock_event *ev)
{
    const unsigned char *p = in;
    size_t off = 0;
    memset(ev, 0, sizeof(*ev));
    *used = 0;
    if (rs->state == WAMP_RAWSOCK_FAILED) {
        ev->why = "input after the connection failed";
        return WAMP_EPROTO;
    }
    /* A frame delivered from the reassembly buffer last time: that buffer is free now. */
    if (rs->body && rs->state != WAMP_RAWSOCK_PAYLOAD) {
        if (wamp_buf_len(rs->body) > WAMP_RAWSOCK_KEEP) {
            wamp_buf_unref(&rs->body); /* idle connections stay small */
        } else {
            wamp_buf_clear(rs->body);
        }
    }
    while (off < len || (rs->state == WAMP_RAWSOCK_PAYLOAD && rs->need == 0)) {
        switch (rs->state) {
        case WAMP_RAWSOCK_HANDSHAKE:
            if (rs->head_have == 0 && p[off] != WAMP_RAWSOCK_MAGIC) {
                *used = off + 1;
                return fail(rs, ev, WAMP_EPROTO, "not a RawSocket handshake (first octet)");
            }
            rs->head[rs->head_have++] = p[off++];
            if (rs->head_have == WAMP_RAWSOCK_PREFIX) {
                handshake(rs, ev);
                *used = off;
                return WAMP_OK;
            }
            break;
        case WAMP_RAWSOCK_PREFIX_STATE:
            rs->head[rs->head_have++] = p[off++];
            if (rs->head_have == WAMP_RAWSOCK_PREFIX) {
                wamp_err err = prefix(rs, ev);
                if (err != WAMP_OK) {
                    *used = off;
                    return err;
                }
            }
            break;
        case WAMP_RAWSOCK_PAYLOAD: {
            size_t have = rs->body ? wamp_buf_len(rs->body) : 0;
            size_t avail = len - off;
            if (have == 0 && avail >= rs->need) {
                /* The whole payload is in this slice: no copy. */
                const unsigned char *d = p + off;
                off += rs->need;
                *used = off;
                frame_done(rs, ev, d, rs->need);
                return WAMP_OK;
            }
            size_t take = rs->need - have < avail ? rs->need - have : avail;
            wamp_err err = wamp_buf_append(&rs->body, p + off, take, rs->need);
            if (err != WAMP_OK) {
                *used = off;
                return err; /* ENOMEM: the frame stays incomplete; retry with the same input */
            }
            off += take;
            if (wamp_buf_len(rs->body) == rs->need) {
                *used = off;
                frame_done(rs, ev, wamp_buf_cdata(rs->body), rs->need);
                return WAMP_OK;
            }
            break;
        }
        case WAMP_RAWSOCK_FAILED:
            *used = off;
            ev->why = "input after the connection failed";
            return WAMP_EPROTO;
        }
    }
    *used = off;
    return WAMP_EAGAIN;
}
