/* wamp_cbor.h: the CBOR serializer ("wamp.2.cbor", RawSocket serializer 3), RFC 8949.
 * Decoding goes through the token reader (wamp_rd.h: definite lengths only, no tags, simple
 * values false/true/null only); this module encodes: jansson values (for router-built messages,
 * wamp_codec_encode()) and the head helper the streaming writer uses. Output is preferred
 * serialization for integers and lengths (shortest head), reals as float64, definite lengths.
 * No state. */
#ifndef WAMP_CBOR_H
#define WAMP_CBOR_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "wamp_buf.h"
#include "wamp_err.h"

/* Writes the head of major type major (0..7) with argument v into out (9 bytes of room) in its
 * shortest form; returns its length (1, 2, 3, 5 or 9). */
size_t wamp_cbor_head(unsigned char *out, unsigned major, uint64_t v);
/* Writes d as a CBOR float64 (0xfb and the 8 bytes of the IEEE 754 value, big-endian) into
 * out (9 bytes of room); returns 9. */
size_t wamp_cbor_f64(unsigned char *out, double d);

/* Encodes value into a new buffer (*out, one reference) with WAMP_BUF_HEADROOM free before it.
 * Strings "\0" + canonical padded base64 become byte strings (the WAMP binary convention), other
 * strings text strings. WAMP_EINVAL for NaN/Inf reals and nesting deeper than
 * WAMP_CODEC_MAX_DEPTH (this also stops reference cycles); WAMP_ENOMEM. *out is NULL after
 * failure. */
wamp_err wamp_cbor_encode(const json_t *value, wamp_buf **out);

/* Appends the encoding of value to *buf (unshared; may move). On failure *buf keeps what was
 * written before the call plus possibly part of the value: callers discard it. */
wamp_err wamp_cbor_encode_append(const json_t *value, wamp_buf **buf);

#endif /* WAMP_CBOR_H */
