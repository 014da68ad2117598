/* wamp_id.h: WAMP IDs (spec "IDs"). Global-scope IDs (session, publication) are drawn uniformly
 * from [1, 2^53] with libsodium's randombytes (sodium_init() must have run), drawn 64 at a time
 * into a pool (one system call per 64 IDs; not thread-safe: one thread only); router- and
 * session-scope IDs (subscription, registration, request) come from a counter that starts at 1
 * and wraps from 2^53 back to 1. */
#ifndef WAMP_ID_H
#define WAMP_ID_H

#include <stdbool.h>
#include <stdint.h>

typedef struct wamp_idgen {
    uint64_t last; /* 0 = nothing issued yet */
} wamp_idgen;

/* Uniform random ID in [1, 2^53]. */
uint64_t wamp_id_random(void);
/* Next counter ID in [1, 2^53]. */
uint64_t wamp_idgen_next(wamp_idgen *g);
/* true if v is in [1, 2^53]. */
bool wamp_id_is_valid(int64_t v);

#endif /* WAMP_ID_H */
