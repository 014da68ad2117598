/* wamp_codec.h: bytes <-> message arrays, dispatching on the serializer.
 * JSON (wamp_json.c, jansson with JSON_ALLOW_NUL) and MessagePack (wamp_msgpack.c: our own
 * bounded decoder, msgpack-c's packer for encoding). Both decode into the same jansson value model:
 * MessagePack bin becomes the JSON binary convention string ("\0" + base64) and is encoded back
 * to bin. No state; service thread only (jansson values are not thread-safe). */
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

/* wamp_codec_decode() followed by wamp_msg_parse(). */
wamp_err wamp_codec_decode_msg(wamp_ser ser, const void *data, size_t len, wamp_msg *out, char *why,
                               size_t why_len);

/* Encodes value into a new buffer (*out, one reference) with WAMP_BUF_HEADROOM free before the
 * data. JSON is compact (no spaces), UTF-8, NUL bytes as \u0000. WAMP_EINVAL if value holds
 * something a serializer cannot carry (a real NaN); WAMP_ENOMEM. *out is NULL after failure. */
wamp_err wamp_codec_encode(wamp_ser ser, const json_t *value, wamp_buf **out);

/* "json" / "msgpack"; "unknown" otherwise. */
const char *wamp_ser_name(wamp_ser ser);

#endif /* WAMP_CODEC_H */
