/* rt_auth.h: WAMP authentication methods on libsodium: WAMP-Ticket, WAMP-CRA (HMAC-SHA256, with
 * PBKDF2-HMAC-SHA256 salted keys) and WAMP-Cryptosign (Ed25519), for static principals from the
 * configuration (rt_config.h rt_auth_config), as Crossbar.io does them.
 *
 * A handshake: rt_auth_begin() on HELLO picks the principal and builds CHALLENGE.Extra (or
 * denies), rt_auth_verify() checks AUTHENTICATE's signature. The pending state keeps the
 * expected signature / challenge until the session is welcomed or aborted; rt_auth_pending_free()
 * wipes it. Secrets are compared in constant time and never logged or returned in a message.
 * Ownership: the session owns its rt_auth_pending; the configuration outlives it (principals are
 * borrowed). Service thread only. */
#ifndef RT_AUTH_H
#define RT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rt_config.h"
#include "wamp_err.h"

typedef enum rt_auth_method {
    RT_AUTH_NONE = 0,
    RT_AUTH_ANONYMOUS,
    RT_AUTH_TICKET,
    RT_AUTH_WAMPCRA,
    RT_AUTH_CRYPTOSIGN
} rt_auth_method;

/* "anonymous", "ticket", "wampcra", "cryptosign" ("" for RT_AUTH_NONE). */
const char *rt_auth_method_name(rt_auth_method m);

/* The first of the client's HELLO.Details.authmethods (a list of strings; NULL = the client sent
 * none, which means ["anonymous"] as in Crossbar) that the listener offers: anonymous when
 * anonymous_allowed, the others when enabled in cfg (NULL = none). Unknown names are skipped.
 * RT_AUTH_NONE when nothing fits. */
rt_auth_method rt_auth_pick(const json_t *authmethods, const rt_auth_config *cfg,
                            bool anonymous_allowed);

/* Base64 of HMAC-SHA256(key, msg): 44 characters and a NUL (autobahn's compute_wcs). */
#define RT_AUTH_WCS_LEN 45
void rt_auth_wampcra_sign(const char *key, size_t key_len, const char *msg, size_t msg_len,
                          char out[RT_AUTH_WCS_LEN]);
/* autobahn's derive_key(secret, salt, iterations, keylen): base64 of PBKDF2-HMAC-SHA256 over the
 * UTF-8 bytes of secret and salt. out must hold sodium_base64_ENCODED_LEN(keylen, original
 * variant) bytes; WAMP_EINVAL if out_len is too small or a parameter is 0. */
wamp_err rt_auth_wampcra_derive_key(const char *secret, const char *salt, uint32_t iterations,
                                    uint32_t keylen, char *out, size_t out_len);
/* WAMP-Cryptosign: sig_hex is the hex of the Ed25519 signature of challenge (128 characters), or
 * of signature || challenge (192 characters, what autobahn sends). true if it verifies with
 * pubkey. */
bool rt_auth_cryptosign_verify(const uint8_t pubkey[32], const uint8_t challenge[32],
                               const char *sig_hex);

typedef struct rt_auth_pending rt_auth_pending;

/* Outcome of a step: on denial, reason is a wamp.error.* URI and message a one-line text for
 * ABORT.Details.message and the log (never a secret). */
typedef struct rt_auth_denial {
    const char *reason;
    char message[160];
} rt_auth_denial;

/* New pending handshake for method (ticket, wampcra or cryptosign) of cfg toward realm (copied),
 * NULL on allocation failure. */
rt_auth_pending *rt_auth_pending_new(rt_auth_method method, const rt_auth_config *cfg,
                                     const char *realm);
/* Wipes the expected secret material and frees. NULL-safe. */
void rt_auth_pending_free(rt_auth_pending *p);

/* HELLO: finds the principal (HELLO.Details.authid, and for cryptosign authextra.pubkey) and
 * builds CHALLENGE.Extra into *extra (owned by the caller). On denial returns WAMP_OK with *extra
 * NULL and d filled. session_id and now_wall_ns go into the WAMP-CRA challenge. WAMP_ENOMEM on
 * allocation failure. */
wamp_err rt_auth_begin(rt_auth_pending *p, const json_t *hello_details, uint64_t session_id,
                       uint64_t now_wall_ns, json_t **extra, rt_auth_denial *d);
/* AUTHENTICATE: true when signature is right; false with d filled otherwise. */
bool rt_auth_verify(rt_auth_pending *p, const char *signature, rt_auth_denial *d);

/* Borrowed, valid while p lives: */
rt_auth_method rt_auth_pending_method(const rt_auth_pending *p);
const char *rt_auth_pending_realm(const rt_auth_pending *p);
/* The authid claimed (HELLO) or established (after rt_auth_begin); NULL if none. */
const char *rt_auth_pending_authid(const rt_auth_pending *p);
/* The principal's role after rt_auth_begin succeeded; NULL if it has none. */
const char *rt_auth_pending_role(const rt_auth_pending *p);

#endif /* RT_AUTH_H */
