/* wamp_kdf.h: key derivation shared by the router (WAMP-CRA salted secrets, rt_auth.c) and the
 * management client (mgmt/ctl/ctl_auth.c). Stateless, thread-safe (libsodium, initialised by
 * the program). */
#ifndef WAMP_KDF_H
#define WAMP_KDF_H

#include <stddef.h>
#include <stdint.h>

#include "wamp_err.h"

/* PBKDF2 (RFC 8018) with HMAC-SHA256 as PRF: out_len bytes derived from the password and salt,
 * as autobahn's auth.derive_key() computes them for WAMP-CRA. WAMP_EINVAL when iterations or
 * out_len is 0 (out untouched). Intermediate values are wiped. */
wamp_err wamp_pbkdf2_sha256(const uint8_t *password, size_t password_len, const uint8_t *salt,
                            size_t salt_len, uint32_t iterations, uint8_t *out, size_t out_len);

#endif /* WAMP_KDF_H */
