/* fuzz.h: the libFuzzer entry point every tests/fuzz/fuzz_*.c target defines, and the check
 * that turns a broken property into a crash libFuzzer (and replay_main.c) reports. */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "wamp_buf.h"
#include "wamp_err.h"
#include "wamp_types.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* v, encoded in ser and decoded again, is equal to itself (a value the serializer cannot carry,
 * e.g. nesting past the encoder's limit, is skipped). Aborts otherwise (support.c). */
void fuzz_round_trip(wamp_ser ser, const json_t *v);

/* data (in serializer from) written by the streaming transcoder in serializer to: the output
 * (owned: wamp_buf_unref()), or NULL when the transcoder refused it; *err says why (support.c). */
wamp_buf *fuzz_transcode(wamp_ser from, const void *data, size_t size, wamp_ser to, wamp_err *err);

/* wamp_msg_parse_bytes_fields() of data in ser agrees with wamp_msg_parse_bytes(): the same
 * result and reason; on success the same fields, and wamp_msg_make_root() the same list. Aborts
 * otherwise (support.c). */
void fuzz_parse_fields(wamp_ser ser, const void *data, size_t size);

/* a and b hold the same bytes (both non-NULL). */
bool fuzz_buf_equal(const wamp_buf *a, const wamp_buf *b);

#define FUZZ_CHECK(cond)                                                                \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                    \
        }                                                                               \
    } while (0)

#endif /* FUZZ_H */
