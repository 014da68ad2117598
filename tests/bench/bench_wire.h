/* bench_wire.h: the generator's hot path on the wire, for both serializers.
 * - bench_tmpl: a request encoded once with wamp_codec_encode() (e.g. CALL, YIELD, PUBLISH) in
 *   which the request id is a sentinel; rendering writes the bytes with the real id patched in,
 *   so sending costs a memcpy instead of building and encoding a json_t.
 * - bench_wire_peek(): reads a received message's type and the integers after it (request id,
 *   subscription id, ...) without decoding the rest, and optionally the first integer argument.
 * The generator cross-checks both against the full wamp_codec decoder on the first messages of
 * every session (see wamp_bench.c), so a disagreement cannot go unnoticed. No state; any thread. */
#ifndef BENCH_WIRE_H
#define BENCH_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "wamp_err.h"
#include "wamp_types.h"

/* Placeholder id used when building templates: the largest WAMP id minus one, so that every
 * real id renders in at most as many bytes as the placeholder (JSON digits, MessagePack uint). */
#define BENCH_WIRE_SENTINEL ((uint64_t)9007199254740991ULL)

#define BENCH_TMPL_MAX_SLOTS 4

typedef struct bench_tmpl {
    unsigned char *bytes; /* owned: the message encoded with the sentinel in every id slot */
    size_t len;
    size_t slot_len; /* encoded length of the sentinel */
    size_t nslots;
    size_t slot_off[BENCH_TMPL_MAX_SLOTS];
    wamp_ser ser;
} bench_tmpl;

/* Encodes msg (borrowed; ids to patch hold BENCH_WIRE_SENTINEL) with ser and records where the
 * sentinel occurs. WAMP_EINVAL if it occurs nowhere or more than BENCH_TMPL_MAX_SLOTS times;
 * encoder errors as wamp_codec_encode(). *t is zeroed on failure. */
wamp_err bench_tmpl_init(bench_tmpl *t, wamp_ser ser, const json_t *msg);
/* NULL-safe; frees the bytes and zeroes *t. */
void bench_tmpl_fini(bench_tmpl *t);
/* Writes the message with id (1..BENCH_WIRE_SENTINEL) in every slot to out, which has room for
 * at least t->len bytes. Returns the length written. */
size_t bench_tmpl_render(const bench_tmpl *t, uint64_t id, unsigned char *out);

typedef struct bench_wire_head {
    int type;       /* message code */
    unsigned nids;  /* how many leading integers were read into id[] */
    uint64_t id[2]; /* the integers right after the code (negative or too-big ones stop it) */
    bool has_arg0;  /* EVENT/RESULT/INVOCATION: Arguments[0] was a non-negative integer */
    uint64_t arg0;
} bench_wire_head;

/* Reads the head of one encoded message. With want_arg0, also skips the dict that follows the
 * ids of EVENT (2 ids), INVOCATION (2 ids) and RESULT (1 id) and reads Arguments[0].
 * false if the bytes do not start with [<integer>, ... (the caller then uses the full decoder). */
bool bench_wire_peek(wamp_ser ser, const unsigned char *p, size_t len, bool want_arg0,
                     bench_wire_head *out);

#endif /* BENCH_WIRE_H */
