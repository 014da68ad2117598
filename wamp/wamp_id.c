/* wamp_id.c: WAMP IDs from libsodium's CSPRNG and from per-scope counters. */
#include "wamp_id.h"

#include <sodium.h>

#include "wamp_types.h"

/* WAMP_ID_MAX is 2^53, so WAMP_ID_MAX - 1 masks the low 53 bits: a uniform draw from
 * [0, 2^53 - 1], shifted to [1, 2^53] (spec "IDs": global scope, uniform distribution). */
_Static_assert((WAMP_ID_MAX & (WAMP_ID_MAX - 1)) == 0, "WAMP_ID_MAX must be a power of two");

/* randombytes_buf() is one getrandom(2) system call per call: with one call per ID, a PUBLISH
 * (whose publication ID is global scope) cost a system call, measured at 8-10% of the router's
 * CPU in pub/sub. The draws are taken from a pool refilled 64 IDs at a time instead. IDs are
 * identifiers, not secrets: pooling only means that the next few IDs sit in memory before use.
 * Single-threaded, as every user of this library (the router's service thread, the CLI). */
#define ID_POOL 64
static uint64_t id_pool[ID_POOL];
static unsigned id_pool_left;

uint64_t wamp_id_random(void)
{
    if (id_pool_left == 0) {
        randombytes_buf(id_pool, sizeof(id_pool));
        id_pool_left = ID_POOL;
    }
    uint64_t r = id_pool[--id_pool_left];
    return (r & (WAMP_ID_MAX - 1)) + 1;
}

uint64_t wamp_idgen_next(wamp_idgen *g)
{
    /* Spec "IDs": router- and session-scope IDs are sequential from 1; after 2^53 the counter
     * starts again at 1 (0 is never a valid ID). */
    if (g->last >= WAMP_ID_MAX) {
        g->last = 1;
    } else {
        g->last++;
    }
    return g->last;
}

bool wamp_id_is_valid(int64_t v)
{
    return v >= 1 && (uint64_t)v <= WAMP_ID_MAX;
}
