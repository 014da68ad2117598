/* wamp_msgpack.h: the MessagePack serializer ("wamp.2.msgpack", RawSocket serializer 2).
 * Decoding is our own bounded recursive decoder from bytes to jansson values (msgpack-c's
 * unpacker stops at 32 levels of nesting); encoding uses msgpack-c's msgpack_packer. MessagePack
 * bin is mapped to the WAMP JSON binary convention, a string "\0" + base64 (standard alphabet,
 * padded), and such strings are encoded back to bin. Used through wamp_codec.h; the contracts
 * below are wamp_codec_decode()/wamp_codec_encode() restricted to MessagePack. No state. */
#ifndef WAMP_MSGPACK_H
#define WAMP_MSGPACK_H

#include <stddef.h>

#include <jansson.h>

#include "wamp_buf.h"
#include "wamp_err.h"

/* Decodes exactly len bytes holding one MessagePack value into a new value (*out, one
 * reference). WAMP_EPROTO (reason in why when why != NULL) for: truncated input, trailing bytes,
 * the never-used byte 0xc1, ext/fixext, map keys that are not str, NUL bytes in map keys
 * (jansson's JSON parser refuses them too), duplicate keys, invalid UTF-8 in str, uint64 above
 * INT64_MAX, NaN/Inf floats, nesting deeper than WAMP_CODEC_MAX_DEPTH (counted as jansson does:
 * the root value is at depth 1). Every length is checked against the remaining input before
 * anything is allocated. WAMP_ENOMEM on allocation failure. *out is NULL after failure. */
wamp_err wamp_msgpack_decode(const void *data, size_t len, json_t **out, char *why, size_t why_len);

/* Encodes value into a new buffer (*out, one reference): integers in their shortest form,
 * reals as float64, strings "\0" + valid padded base64 as bin, other strings as str. WAMP_EINVAL
 * for NaN/Inf reals, containers nested deeper than WAMP_CODEC_MAX_DEPTH (this also stops
 * reference cycles) or sizes above 2^32 - 1; WAMP_ENOMEM. *out is NULL after failure. */
wamp_err wamp_msgpack_encode(const json_t *value, wamp_buf **out);

/* Appends the encoding of value to *buf (unshared; may move). On failure *buf keeps what was
 * written before the call plus possibly part of the value: callers discard it. */
wamp_err wamp_msgpack_encode_append(const json_t *value, wamp_buf **buf);

#endif /* WAMP_MSGPACK_H */
