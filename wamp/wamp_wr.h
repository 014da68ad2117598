/* wamp_wr.h: a streaming writer of one value, in a serializer's encoding (JSON, MessagePack or
 * CBOR) or as a jansson tree, without building the value first.
 *
 * For large replies the router renders from its own data (trace records: get_trace_data pages
 * of up to 10,000 records): building a jansson tree of every record and freeing it again costs
 * more than everything else. The writer emits the encoding directly, can copy a value that is
 * already encoded in its serializer as it is (wamp_wr_raw), and falls back to encoding a jansson
 * value (wamp_wr_json) where a value exists only as one. Its tree mode (WAMP_WR_TREE) builds
 * the same value as jansson, so one rendering function serves both uses.
 *
 * Usage: wamp_wr_init(), then exactly one value (containers nest: wamp_wr_array(n) is followed
 * by n values and wamp_wr_end(); wamp_wr_map(n) by n pairs of wamp_wr_key() and a value, and
 * wamp_wr_end()), then wamp_wr_finish_buf() / wamp_wr_finish_tree(). Counts are required up
 * front because MessagePack headers carry them; a mismatch is reported by finish (WAMP_EINVAL).
 * Errors are sticky: after the first failure (allocation, size limit, misuse) every call does
 * nothing and finish returns the error, so writers need not check each call.
 * Ownership: the writer owns what it builds until finish hands it over; wamp_wr_fini() releases
 * whatever is left (always call it; it is a no-op after a successful finish). Service thread
 * only. */
#ifndef WAMP_WR_H
#define WAMP_WR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "wamp_buf.h"
#include "wamp_err.h"
#include "wamp_types.h"

/* Serializer value for tree mode: the writer builds a jansson value. */
#define WAMP_WR_TREE 0

/* Deepest container nesting the writer itself tracks (values passed to wamp_wr_json() and
 * wamp_wr_raw() may nest deeper). */
#define WAMP_WR_MAX_DEPTH 32

typedef struct wamp_wr_level {
    size_t left;   /* values (arrays) or pairs (maps) still expected at this level */
    bool is_map;   /* the level is a map */
    bool want_val; /* map: a key was written, its value comes next */
    bool first;    /* JSON: no element written yet (no comma before the next) */
    json_t *node;  /* tree mode: the container being filled */
    char *key;     /* tree mode: the pending key (owned, NUL-terminated, may hold NUL) */
    size_t key_len;
} wamp_wr_level;

typedef struct wamp_wr {
    int ser; /* WAMP_SER_JSON, WAMP_SER_MSGPACK, WAMP_SER_CBOR or WAMP_WR_TREE */
    wamp_err err;
    size_t max;     /* byte limit of the encoding (0 = none) */
    wamp_buf *buf;  /* encoding modes: the output */
    json_t *root;   /* tree mode: the finished value */
    unsigned depth; /* open containers */
    bool done;      /* the one top-level value is complete */
    wamp_wr_level lv[WAMP_WR_MAX_DEPTH];
} wamp_wr;

/* ser: WAMP_SER_JSON, WAMP_SER_MSGPACK, WAMP_SER_CBOR or WAMP_WR_TREE. cap: initial buffer
 * size hint.
 * max: WAMP_ETOOBIG once the encoding would exceed max bytes (0 = no limit; ignored in tree
 * mode). Cannot fail (an allocation failure shows at finish). */
void wamp_wr_init(wamp_wr *w, int ser, size_t cap, size_t max);
/* Releases everything not handed over. NULL-safe, idempotent. */
void wamp_wr_fini(wamp_wr *w);

void wamp_wr_array(wamp_wr *w, size_t n);
void wamp_wr_map(wamp_wr *w, size_t n);
/* Closes the innermost container (all its announced elements must have been written). */
void wamp_wr_end(wamp_wr *w);
/* A map key (NUL-terminated UTF-8). */
void wamp_wr_key(wamp_wr *w, const char *key);
/* A map key of n bytes of UTF-8 (may hold NUL). */
void wamp_wr_keyn(wamp_wr *w, const char *key, size_t n);

void wamp_wr_str(wamp_wr *w, const char *s);            /* NUL-terminated UTF-8 */
void wamp_wr_strn(wamp_wr *w, const char *s, size_t n); /* n bytes of UTF-8, may hold NUL */
void wamp_wr_str_or_null(wamp_wr *w, const char *s);    /* null when s is NULL */
/* Binary: MessagePack bin, CBOR byte string, JSON (and tree mode) "\0" + base64 string. */
void wamp_wr_bin(wamp_wr *w, const void *p, size_t n);
void wamp_wr_int(wamp_wr *w, int64_t v);
/* Any unsigned value; above INT64_MAX not in tree mode (WAMP_ERANGE: jansson has no uint64). */
void wamp_wr_uint(wamp_wr *w, uint64_t v);
void wamp_wr_real(wamp_wr *w, double v); /* finite; NaN/inf -> WAMP_EINVAL */
void wamp_wr_bool(wamp_wr *w, bool v);
void wamp_wr_null(wamp_wr *w);
/* A jansson value (borrowed), encoded as the codecs encode it (wamp_codec.h: binary strings
 * become MessagePack bin). Tree mode: inserted with a new reference (not copied). */
void wamp_wr_json(wamp_wr *w, const json_t *v);
/* One complete value already encoded in the writer's serializer (e.g. stored message bytes),
 * copied as it is. The caller vouches for it being exactly one well-formed value. Not allowed
 * in tree mode (WAMP_EINVAL). */
void wamp_wr_raw(wamp_wr *w, const void *p, size_t n);

/* One value encoded in src_ser (WAMP_SER_JSON / _MSGPACK / _CBOR), written in the writer's
 * encoding, exactly (the value model of wamp_rd.h): copied as it is when the encodings are the
 * same (the caller vouches for it being one valid value); otherwise streamed token by token
 * through wamp_rd, in O(n), without building a value: integers keep their value (uint64
 * included), reals stay reals, binary becomes the target's binary (JSON: "\0" + base64), strings
 * keep their NUL bytes. Tree mode builds the value with wamp_codec_decode_value() (WAMP_ERANGE
 * for integers above INT64_MAX). Malformed input makes the writer fail with WAMP_EPROTO. */
void wamp_wr_transcode(wamp_wr *w, int src_ser, const void *p, size_t n);

/* The messages a router sends most, written without a writer: [code, id, id2 (left out when
 * 0), {}, Arguments, ArgumentsKw] in ser (WAMP_SER_JSON or WAMP_SER_MSGPACK), with Arguments and
 * ArgumentsKw given as one encoded value each in that same serializer (the caller vouches for
 * them; length 0: absent; ArgumentsKw without Arguments is preceded by []). Byte for byte what
 * the writer (and the codec) would write. Into *out (one reference) or WAMP_ENOMEM; WAMP_EINVAL
 * for another serializer (nothing written: use the writer). */
wamp_err wamp_wr_ids_message(int ser, int code, uint64_t id, uint64_t id2, const void *args,
                             size_t args_len, const void *kwargs, size_t kwargs_len,
                             wamp_buf **out);

/* The current error (WAMP_OK while none). */
wamp_err wamp_wr_error(const wamp_wr *w);

/* Hands over the encoding (one reference, WAMP_BUF_HEADROOM free before it). Fails with the
 * sticky error, or WAMP_EINVAL if the value is incomplete or the writer is in tree mode. */
wamp_err wamp_wr_finish_buf(wamp_wr *w, wamp_buf **out);
/* Tree mode: hands over the value (one reference). */
wamp_err wamp_wr_finish_tree(wamp_wr *w, json_t **out);

#endif /* WAMP_WR_H */
