/* wamp_codec.h: bytes <-> jansson values, dispatching on the serializer.
 * JSON (wamp_json.c, jansson with JSON_ALLOW_NUL), MessagePack (wamp_msgpack.c: our own
 * bounded decoder, msgpack-c's packer for encoding) and CBOR (decoded through the token reader
 * wamp_rd.h, encoded by wamp_cbor.c). All decode into the same jansson value model: binary
 * becomes the JSON binary convention string ("\0" + base64) and is encoded back to the
 * serializer's binary. jansson has no uint64: payloads that may hold one are carried as bytes
 * (wamp_msg.h) and transcoded exactly (wamp_wr_transcode()); jansson values are built only for
 * the envelope and for the router's own procedures. No state; service thread only. */
#ifndef WAMP_CODEC_H
#define WAMP_CODEC_H

#include <stddef.h>

#include <jansson.h>

#include "wamp_buf.h"
#include "wamp_err.h"
#include "wamp_msg.h"
#include "wamp_types.h"

/* Deepest nesting of arrays/maps accepted by either decoder (jansson's own parser limit is the
 * same value, so JSON and MessagePack peers get identical treatment). */
#define WAMP_CODEC_MAX_DEPTH 2048

/* Decodes one whole message payload (exactly len bytes, no trailing data) into a new value
 * (*out, one reference). WAMP_EPROTO with a reason in why on malformed input: syntax errors,
 * truncation, trailing bytes, invalid UTF-8, nesting deeper than WAMP_CODEC_MAX_DEPTH,
 * MessagePack ext types and non-string map keys, integers outside the int64 range, NaN/Inf.
 * WAMP_ENOMEM on allocation failure. *out is NULL after any failure. */
wamp_err wamp_codec_decode(wamp_ser ser, const void *data, size_t len, json_t **out, char *why,
                           size_t why_len);

/* One whole value (exactly len bytes) in any serializer, through the token reader (wamp_rd.h),
 * into a new jansson value (*out, one reference). WAMP_EPROTO (reason in why) for what the
 * reader refuses and for duplicate map keys; WAMP_ERANGE (why names the value and its offset)
 * for an integer above INT64_MAX, which jansson cannot hold; WAMP_ENOMEM; WAMP_EINVAL for an
 * unknown serializer. Map keys may hold NUL bytes (jansson 2.14 length-aware keys). *out is NULL
 * after failure. */
wamp_err wamp_codec_decode_value(wamp_ser ser, const void *data, size_t len, json_t **out,
                                 char *why, size_t why_len);

/* wamp_msg_parse_bytes(): the envelope decoded, the payload (Arguments, ArgumentsKw) validated
 * and kept as slices of data (see wamp_msg.h). */
wamp_err wamp_codec_decode_msg(wamp_ser ser, const void *data, size_t len, wamp_msg *out, char *why,
                               size_t why_len);

/* Encodes value into a new buffer (*out, one reference) with WAMP_BUF_HEADROOM free before the
 * data. JSON is compact (no spaces), UTF-8, NUL bytes as \u0000. WAMP_EINVAL if value holds
 * something a serializer cannot carry (a real NaN); WAMP_ENOMEM. *out is NULL after failure. */
wamp_err wamp_codec_encode(wamp_ser ser, const json_t *value, wamp_buf **out);

/* "json" / "msgpack" / "cbor"; "unknown" otherwise. */
const char *wamp_ser_name(wamp_ser ser);

#endif /* WAMP_CODEC_H */
