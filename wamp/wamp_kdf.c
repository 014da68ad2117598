/* wamp_kdf.c: see wamp_kdf.h. */
#include "wamp_kdf.h"

#include <string.h>

#include <sodium.h>

wamp_err wamp_pbkdf2_sha256(const uint8_t *password, size_t password_len, const uint8_t *salt,
                            size_t salt_len, uint32_t iterations, uint8_t *out, size_t out_len)
{
    if (iterations == 0 || out_len == 0) {
        return WAMP_EINVAL;
    }
    /* The PRF keyed with the password once; each HMAC starts from a copy of that state. */
    crypto_auth_hmacsha256_state keyed, st;
    uint8_t u[crypto_auth_hmacsha256_BYTES], t[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_init(&keyed, password, password_len);
    for (uint32_t block = 1; out_len > 0; block++) {
        uint8_t be[4] = {(uint8_t)(block >> 24), (uint8_t)(block >> 16), (uint8_t)(block >> 8),
                         (uint8_t)block};
        st = keyed; /* U1 = PRF(P, S || INT(i)) */
        crypto_auth_hmacsha256_update(&st, salt, salt_len);
        crypto_auth_hmacsha256_update(&st, be, sizeof(be));
        crypto_auth_hmacsha256_final(&st, u);
        memcpy(t, u, sizeof(t));
        for (uint32_t j = 1; j < iterations; j++) { /* Uj = PRF(P, Uj-1); T ^= Uj */
            st = keyed;
            crypto_auth_hmacsha256_update(&st, u, sizeof(u));
            crypto_auth_hmacsha256_final(&st, u);
            for (size_t k = 0; k < sizeof(t); k++) {
                t[k] ^= u[k];
            }
        }
        size_t n = out_len < sizeof(t) ? out_len : sizeof(t);
        memcpy(out, t, n);
        out += n;
        out_len -= n;
    }
    sodium_memzero(&keyed, sizeof(keyed));
    sodium_memzero(&st, sizeof(st));
    sodium_memzero(u, sizeof(u));
    sodium_memzero(t, sizeof(t));
    return WAMP_OK;
}
