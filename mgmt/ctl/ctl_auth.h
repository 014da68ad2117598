/* ctl_auth.h: client-side WAMP authentication computations (spec "Authentication"): the
 * credentials wampscope-ctl was given, HELLO details for them, and the AUTHENTICATE signature
 * for a CHALLENGE (ticket, wampcra with optional PBKDF2 salting, cryptosign Ed25519).
 * Pure functions over libsodium and jansson (no I/O except ctl_auth_load_*), so they are unit
 * tested. Secrets live in sodium_malloc'd memory and are wiped by ctl_auth_fini().
 * sodium_init() must have run. */
#ifndef CTL_AUTH_H
#define CTL_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

typedef enum ctl_authmethod {
    CTL_AUTH_ANONYMOUS = 0,
    CTL_AUTH_TICKET,
    CTL_AUTH_WAMPCRA,
    CTL_AUTH_CRYPTOSIGN
} ctl_authmethod;

typedef struct ctl_auth {
    ctl_authmethod method;
    const char *authid;  /* borrowed; NULL = none sent */
    char *secret;        /* ticket or wampcra secret (sodium_malloc, NUL-terminated) or NULL */
    unsigned char *sk;   /* cryptosign: 64-byte Ed25519 secret key (sodium_malloc) or NULL */
    char pubkey_hex[65]; /* cryptosign: public key as hex */
} ctl_auth;

/* Zeroed, anonymous. */
void ctl_auth_init(ctl_auth *a);
/* Wipes and frees the secrets. */
void ctl_auth_fini(ctl_auth *a);

/* Sets a's ticket / wampcra secret to text (copied; a trailing newline is cut). false on
 * allocation failure or empty text. */
bool ctl_auth_set_secret(ctl_auth *a, ctl_authmethod method, const char *text);
/* Reads a secret (first line) from path. false with why filled on failure. */
bool ctl_auth_load_secret(ctl_auth *a, ctl_authmethod method, const char *path, char *why,
                          size_t why_len);
/* Cryptosign key from text: 64 hex characters of the 32-byte seed, alone or after
 * "private-key...:" on a line (Crossbar's key files). false if none is found. */
bool ctl_auth_set_cryptosign_text(ctl_auth *a, const char *text);
/* The same from a file. */
bool ctl_auth_load_cryptosign(ctl_auth *a, const char *path, char *why, size_t why_len);

/* Adds authmethods / authid / authextra (cryptosign: pubkey) to HELLO details (borrowed,
 * modified). false on allocation failure. */
bool ctl_auth_hello_details(const ctl_auth *a, json_t *details);

/* The AUTHENTICATE signature for CHALLENGE(method, extra): a new string (free()) or NULL with
 * why filled (method not ours, malformed extra). */
char *ctl_auth_signature(const ctl_auth *a, const char *method, const json_t *extra, char *why,
                         size_t why_len);

#endif /* CTL_AUTH_H */
