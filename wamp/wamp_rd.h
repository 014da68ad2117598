/* wamp_rd.h: a validating, non-recursive reader of one value in a serializer's encoding (JSON,
 * MessagePack or CBOR), yielding tokens instead of building a value.
 *
 * The value model is the same for the three serializers: null, bool, integers in [-2^63,
 * 2^64 - 1] (WAMP_TOK_INT for int64, WAMP_TOK_UINT above INT64_MAX), finite doubles, UTF-8
 * strings (which may hold NUL bytes), binary, arrays and maps with string keys. Binary is
 * MessagePack bin, a CBOR byte string, or in JSON a string "\0" + canonical padded base64 (the
 * WAMP binary convention); a JSON string starting with NUL whose rest is not such base64 stays
 * a string. JSON numbers with a fraction or exponent are reals, other numbers integers.
 *
 * Refused (WAMP_EPROTO, reason in wamp_rd_why()): truncated input, trailing bytes (JSON:
 * anything but whitespace), invalid UTF-8, NaN/Inf, integers outside [-2^63, 2^64 - 1],
 * nesting deeper than WAMP_CODEC_MAX_DEPTH containers, map keys that are not strings,
 * MessagePack ext/fixext and the byte 0xc1, CBOR tags (except bignums, tags 2 and 3, whose
 * value lies in the integer range: they read as that integer), CBOR simple values other than
 * false/true/null (undefined included), and CBOR indefinite-length items (no WAMP client emits
 * them; a chunked string would have to be copied to be yielded as one token). Duplicate map
 * keys are not checked here (a payload is the application's; wamp_val_decode() refuses them).
 *
 * JSON containers carry no count, so for JSON the first wamp_rd_next() validates the whole
 * input in a pre-pass that records every container's count (unless the reader was started by
 * wamp_rd_init_one_pass()); after that the token stream is the same for all serializers. Tokens are
 * borrowed: string and binary pointers point into the input or into the reader's scratch space and
 * are valid until the next call. Ownership: the caller owns the wamp_rd (usually on the stack);
 * wamp_rd_fini() frees its scratch. The input is borrowed and must stay valid while the reader is
 * used. */
#ifndef WAMP_RD_H
#define WAMP_RD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "wamp_err.h"
#include "wamp_types.h"

typedef enum wamp_tok_kind {
    WAMP_TOK_NULL,
    WAMP_TOK_BOOL,
    WAMP_TOK_INT,   /* i */
    WAMP_TOK_UINT,  /* u, always above INT64_MAX */
    WAMP_TOK_REAL,  /* d, finite */
    WAMP_TOK_STR,   /* p, len: UTF-8, may hold NUL */
    WAMP_TOK_BIN,   /* p, len */
    WAMP_TOK_ARRAY, /* count elements follow, then WAMP_TOK_END */
    WAMP_TOK_MAP,   /* count pairs (a STR key, then a value) follow, then WAMP_TOK_END */
    WAMP_TOK_END    /* closes the innermost container; is_map tells which kind */
} wamp_tok_kind;

typedef struct wamp_tok {
    wamp_tok_kind kind;
    bool is_key; /* a map key (always WAMP_TOK_STR) */
    bool first;  /* the first element (or key) of its container; false for END and values */
    bool is_map; /* END: closes a map */
    bool in_map; /* the token's container is a map (keys and values) */
    bool b;
    int64_t i;
    uint64_t u;
    double d;
    const unsigned char *p;
    size_t len;
    size_t count;   /* ARRAY / MAP */
    unsigned depth; /* containers open around this token (the top-level value: 0) */
} wamp_tok;

typedef struct wamp_rd_level {
    size_t left; /* elements (arrays) or pairs (maps) still to read; JSON: unused */
    size_t cidx; /* JSON pre-pass: index of this container's count */
    bool is_map;
    bool key_next; /* maps: the next token is a key */
    bool first;    /* nothing read yet at this level */
} wamp_rd_level;

#define WAMP_RD_INLINE_LEVELS 24

typedef struct wamp_rd {
    wamp_ser ser;
    wamp_err err; /* sticky */
    const unsigned char *start, *p, *end;
    const unsigned char *tok_start; /* first byte of the last token */
    const unsigned char *tok_end;   /* byte after the last token */
    unsigned depth;
    bool done;     /* the top-level value is complete */
    bool counting; /* JSON pre-pass running */
    bool counted;  /* JSON pre-pass done */
    bool one_pass; /* JSON without the pre-pass: container counts are 0 (wamp_rd_init_one_pass) */
    /* wamp_rd_json(): an empty map that is an array's element comes back as the shared
     * wamp_rd_empty_map() (false after init; wamp_msg_parse_bytes() sets it for envelopes) */
    bool share_empty_map;
    /* wamp_rd_json(): values it may still build, over every call on this reader, and the limit
     * it started from (wamp_rd_limit_values(); no limit after init) */
    size_t values_left, values_max;
    wamp_rd_level *lv;
    size_t lv_cap;
    wamp_rd_level lv_inline[WAMP_RD_INLINE_LEVELS];
    size_t *counts; /* JSON: counts of the containers in document order */
    size_t n_counts, counts_cap, counts_next;
    unsigned char *scratch; /* JSON strings with escapes; JSON binary; numbers */
    size_t scratch_cap;
    char why[120];
} wamp_rd;

/* Starts reading exactly n bytes of p as one value in ser (WAMP_SER_JSON, _MSGPACK, _CBOR).
 * Cannot fail; an unknown serializer shows at the first wamp_rd_next() (WAMP_EINVAL). */
void wamp_rd_init(wamp_rd *r, wamp_ser ser, const void *p, size_t n);
/* As wamp_rd_init(), but JSON is read in one pass, without the pre-pass: ARRAY and MAP tokens
 * carry count 0 (use wamp_rd_at_end() to find a container's end), and malformed input is
 * reported when the reader reaches it, not at the first wamp_rd_next(). The binary serializers
 * read as with wamp_rd_init(). */
void wamp_rd_init_one_pass(wamp_rd *r, wamp_ser ser, const void *p, size_t n);
/* MessagePack or CBOR: as wamp_rd_init() on the one value p[0..n), a definite-length array
 * whose head and first elements the caller has read itself: reading starts at offset at, inside
 * that array, with left of its elements still to come (then its END, and no byte after it). The
 * caller vouches for what lies before at; everything from at on is checked as usual. */
void wamp_rd_init_in_array(wamp_rd *r, wamp_ser ser, const void *p, size_t n, size_t at,
                           size_t left);
/* Frees the scratch space. NULL-safe, idempotent. */
void wamp_rd_fini(wamp_rd *r);
/* Bounds the jansson values wamp_rd_json() builds on r, over all its calls: each array, map and
 * scalar counts one (map keys do not). Beyond, wamp_rd_json() fails with WAMP_EPROTO ("more than
 * max values"): a value built costs many times its encoded size (an empty list, two bytes, about
 * 130 bytes as a jansson array), which the limit bounds. Call after init, before reading. */
void wamp_rd_limit_values(wamp_rd *r, size_t max);

/* The next token into *t. WAMP_OK; WAMP_EPROTO for malformed input (see above); WAMP_ENOMEM;
 * WAMP_EINVAL when the value is already complete. Errors are sticky. The token that completes
 * the top-level value also checks that no bytes follow it. */
wamp_err wamp_rd_next(wamp_rd *r, wamp_tok *t);
/* Reads the next whole value (validating it) and hands back its encoded bytes: a slice of the
 * input (for JSON without surrounding whitespace), and its kind (the first token's: ARRAY, MAP,
 * STR, ...) when kind is not NULL. Same errors as wamp_rd_next(). JSON and MessagePack
 * containers are read without yielding tokens (same rules, same errors). */
wamp_err wamp_rd_skip(wamp_rd *r, const unsigned char **p, size_t *n, wamp_tok_kind *kind);
/* true when the innermost open container has no element left, so the next token is its END
 * (JSON: the next byte after whitespace closes it); false outside any container and after an
 * error. Reads nothing. */
bool wamp_rd_at_end(wamp_rd *r);
/* true when the next value, the top-level value or an array's next element, is an array or a
 * map (so that a caller may skip it instead of building it); false for anything else, at a
 * container's end and after an error. Reads nothing and validates nothing. */
bool wamp_rd_next_is_container(wamp_rd *r);
/* true once the top-level value has been read completely. */
bool wamp_rd_done(const wamp_rd *r);
/* Reason of the last error ("" when none). */
const char *wamp_rd_why(const wamp_rd *r);

/* Reads the next whole value into a new jansson value (*out, one reference): binary as the
 * "\0" + base64 string, map keys with their NUL bytes (jansson 2.14 length-aware keys). Beyond
 * wamp_rd_next()'s errors: WAMP_EPROTO for a duplicate map key; WAMP_ERANGE for an integer above
 * INT64_MAX (jansson has no uint64; wamp_rd_why() names the value and its offset), reported only
 * once the rest of the value has read as well-formed. The reader is unusable after an error.
 * *out is NULL after failure. */
wamp_err wamp_rd_json(wamp_rd *r, json_t **out);

/* A new reference to the one empty jansson object shared by the envelopes decoded with
 * share_empty_map and by the messages wamp_msg's builders make without a dict: an RPC call
 * handles four of them, each otherwise a new object (two allocations and a hash table). Never
 * modified: whoever adds keys to a dict makes its own. Made on first use (service thread), kept
 * for the process's life. NULL on allocation failure. */
json_t *wamp_rd_empty_map(void);
/* Validates that p[0..n) is exactly one value in ser. WAMP_OK, WAMP_EPROTO (reason in why),
 * WAMP_ENOMEM, WAMP_EINVAL (unknown serializer). */
wamp_err wamp_rd_validate(wamp_ser ser, const void *p, size_t n, char *why, size_t why_len);

/* UTF-8 as RFC 3629 defines it (no overlong forms, no surrogates, nothing above U+10FFFF);
 * NUL is allowed. */
bool wamp_utf8_valid(const void *s, size_t n);

/* The value of the hexadecimal digit c (0-9, a-f, A-F), or -1. */
int wamp_hex_digit(unsigned char c);
/* If s[0..len) is canonical padded standard base64 (as the WAMP binary convention and
 * libsodium's strict decoder want it), decodes it into out (room for len / 4 * 3 bytes), sets
 * *out_len and returns true; false otherwise (out is then unspecified). */
bool wamp_b64_decode(const char *s, size_t len, unsigned char *out, size_t *out_len);
/* True if s[0..len) has the shape of padded standard base64 (length, alphabet, padding; the
 * trailing bits are left to the decoder); *bin_len is then its decoded size. */
bool wamp_b64_shape_ok(const char *s, size_t len, size_t *bin_len);
/* The WAMP JSON binary convention for p[0..n): the string "\0" + standard padded base64. New
 * reference; NULL on allocation failure. */
json_t *wamp_b64_string_new(const void *p, size_t n);

#endif /* WAMP_RD_H */
