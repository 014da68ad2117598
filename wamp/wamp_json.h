/* wamp_json.h: the JSON serializer ("wamp.2.json", RawSocket serializer 1) on jansson.
 * Binary values travel as strings "\0" + base64 (spec "Binary support" in JSON); jansson keeps
 * them as they are because decoding uses JSON_ALLOW_NUL. Used through wamp_codec.h; the
 * contracts below are wamp_codec_decode()/wamp_codec_encode() restricted to JSON. No state. */
#ifndef WAMP_JSON_H
#define WAMP_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "wamp_buf.h"
#include "wamp_err.h"

/* Parses exactly len bytes (one JSON text, any value type, trailing whitespace allowed) into a
 * new value (*out, one reference). Duplicate object keys, invalid UTF-8, NUL bytes in keys,
 * integers outside int64 and nesting deeper than WAMP_CODEC_MAX_DEPTH are WAMP_EPROTO (reason
 * in why when why != NULL). WAMP_ENOMEM on allocation failure, except that jansson 2.14 reports
 * a failed string allocation in its lexer as a syntax error, which comes out as WAMP_EPROTO
 * (and its lexer ignores a failed growth of its token buffer, so under memory pressure a string
 * may even lose bytes: a jansson 2.14 bug). *out is NULL after failure. */
wamp_err wamp_json_decode(const void *data, size_t len, json_t **out, char *why, size_t why_len);

/* Compact UTF-8 JSON of value, written straight into a new buffer (*out, one reference): the
 * bytes jansson's encoder writes with JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17),
 * by our own writer (reals and values nested deeper than 32 containers by jansson's). Reals use
 * 17 significant digits (exact round trip). WAMP_EINVAL for a value jansson's encoder refuses
 * (a string that is not UTF-8, a reference cycle; jansson's own internal allocation failures
 * also surface here), WAMP_ENOMEM if the buffer cannot grow. *out is NULL after failure. */
wamp_err wamp_json_encode(const json_t *value, wamp_buf **out);

/* Appends the encoding of value to *buf (unshared; may move). On failure *buf keeps what was
 * written before the call plus possibly part of the value: callers discard it. */
wamp_err wamp_json_encode_append(const json_t *value, wamp_buf **buf);

#endif /* WAMP_JSON_H */
