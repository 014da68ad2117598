/* ctl_auth.c: see ctl_auth.h. */
#include "ctl_auth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wamp_kdf.h"

void ctl_auth_init(ctl_auth *a)
{
    memset(a, 0, sizeof(*a));
}

void ctl_auth_fini(ctl_auth *a)
{
    if (a->secret) {
        sodium_free(a->secret); /* sodium_free wipes before freeing */
    }
    if (a->sk) {
        sodium_free(a->sk);
    }
    ctl_auth_init(a);
}

bool ctl_auth_set_secret(ctl_auth *a, ctl_authmethod method, const char *text)
{
    size_t n = strcspn(text, "\r\n");
    if (n == 0) {
        return false;
    }
    char *s = sodium_malloc(n + 1);
    if (!s) {
        return false;
    }
    memcpy(s, text, n);
    s[n] = '\0';
    if (a->secret) {
        sodium_free(a->secret);
    }
    a->secret = s;
    a->method = method;
    return true;
}

/* Reads a small file (<= 64 KiB) into sodium_malloc'd memory, NUL-terminated. */
static char *read_secret_file(const char *path, char *why, size_t why_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "cannot read %s", path);
        return NULL;
    }
    size_t cap = 65536;
    char *buf = sodium_malloc(cap + 1);
    if (!buf) {
        fclose(f);
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    size_t n = fread(buf, 1, cap, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad) {
        sodium_free(buf);
        snprintf(why, why_len, "cannot read %s", path);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

bool ctl_auth_load_secret(ctl_auth *a, ctl_authmethod method, const char *path, char *why,
                          size_t why_len)
{
    char *buf = read_secret_file(path, why, why_len);
    if (!buf) {
        return false;
    }
    bool ok = ctl_auth_set_secret(a, method, buf);
    sodium_free(buf);
    if (!ok) {
        snprintf(why, why_len, "%s: no secret on its first line", path);
    }
    return ok;
}

/* The first run of exactly 64 hex digits at or after p (NULL if none). */
static const char *find_hex64(const char *p)
{
    while (*p) {
        size_t n = 0;
        while (isxdigit((unsigned char)p[n])) {
            n++;
        }
        if (n == 64) {
            return p;
        }
        p += n ? n : 1;
    }
    return NULL;
}

bool ctl_auth_set_cryptosign_text(ctl_auth *a, const char *text)
{
    const char *hex = NULL;
    const char *line = strstr(text, "private-key");
    if (line) {
        const char *colon = strchr(line, ':');
        hex = colon ? find_hex64(colon + 1) : NULL;
    }
    if (!hex) {
        hex = find_hex64(text);
    }
    if (!hex) {
        return false;
    }
    unsigned char seed[crypto_sign_SEEDBYTES];
    size_t got = 0;
    if (sodium_hex2bin(seed, sizeof(seed), hex, 64, NULL, &got, NULL) != 0 || got != sizeof(seed)) {
        return false;
    }
    unsigned char *sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
    if (!sk) {
        sodium_memzero(seed, sizeof(seed));
        return false;
    }
    unsigned char pk[crypto_sign_PUBLICKEYBYTES];
    crypto_sign_seed_keypair(pk, sk, seed);
    sodium_memzero(seed, sizeof(seed));
    if (a->sk) {
        sodium_free(a->sk);
    }
    a->sk = sk;
    sodium_bin2hex(a->pubkey_hex, sizeof(a->pubkey_hex), pk, sizeof(pk));
    a->method = CTL_AUTH_CRYPTOSIGN;
    return true;
}

bool ctl_auth_load_cryptosign(ctl_auth *a, const char *path, char *why, size_t why_len)
{
    char *buf = read_secret_file(path, why, why_len);
    if (!buf) {
        return false;
    }
    bool ok = ctl_auth_set_cryptosign_text(a, buf);
    sodium_free(buf);
    if (!ok) {
        snprintf(why, why_len, "%s: no Ed25519 private key (64 hex digits) found", path);
    }
    return ok;
}

static const char *method_name(ctl_authmethod m)
{
    switch (m) {
    case CTL_AUTH_TICKET:
        return "ticket";
    case CTL_AUTH_WAMPCRA:
        return "wampcra";
    case CTL_AUTH_CRYPTOSIGN:
        return "cryptosign";
    default:
        return "anonymous";
    }
}

bool ctl_auth_hello_details(const ctl_auth *a, json_t *details)
{
    bool ok = json_object_set_new(details, "authmethods",
                                  json_pack("[s]", method_name(a->method))) == 0;
    if (ok && a->authid) {
        ok = json_object_set_new(details, "authid", json_string(a->authid)) == 0;
    }
    if (ok && a->method == CTL_AUTH_CRYPTOSIGN) {
        ok = json_object_set_new(details, "authextra",
                                 json_pack("{s:s}", "pubkey", a->pubkey_hex)) == 0;
    }
    return ok;
}

static char *base64_dup(const unsigned char *bin, size_t len)
{
    size_t cap = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
    char *s = malloc(cap);
    if (s) {
        sodium_bin2base64(s, cap, bin, len, sodium_base64_VARIANT_ORIGINAL);
    }
    return s;
}

/* WAMP-CRA: signature = base64(HMAC-SHA256(key, challenge)); key = the secret, or with a salt
 * in the challenge the base64 of PBKDF2-HMAC-SHA256(secret, salt, iterations, keylen). */
static char *wampcra_signature(const ctl_auth *a, const json_t *extra, char *why, size_t why_len)
{
    const char *challenge = json_string_value(json_object_get(extra, "challenge"));
    if (!challenge) {
        snprintf(why, why_len, "wampcra challenge without extra.challenge");
        return NULL;
    }
    const char *salt = json_string_value(json_object_get(extra, "salt"));
    char *derived = NULL;
    const char *key = a->secret;
    if (salt) {
        json_int_t iterations = json_integer_value(json_object_get(extra, "iterations"));
        json_int_t keylen = json_integer_value(json_object_get(extra, "keylen"));
        iterations = iterations > 0 ? iterations : 1000;
        keylen = keylen > 0 ? keylen : 32;
        if (iterations > 10000000 || keylen > 1024) {
            snprintf(why, why_len, "wampcra challenge with unreasonable iterations or keylen");
            return NULL;
        }
        unsigned char *dk = sodium_malloc((size_t)keylen);
        if (!dk) {
            snprintf(why, why_len, "out of memory");
            return NULL;
        }
        /* iterations and keylen are > 0 here: no WAMP_EINVAL. */
        (void)wamp_pbkdf2_sha256((const uint8_t *)a->secret, strlen(a->secret),
                                 (const uint8_t *)salt, strlen(salt), (uint32_t)iterations, dk,
                                 (size_t)keylen);
        derived = base64_dup(dk, (size_t)keylen);
        sodium_free(dk);
        if (!derived) {
            snprintf(why, why_len, "out of memory");
            return NULL;
        }
        key = derived;
    }
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)key, strlen(key));
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)challenge, strlen(challenge));
    crypto_auth_hmacsha256_final(&st, mac);
    if (derived) {
        sodium_memzero(derived, strlen(derived));
        free(derived);
    }
    char *sig = base64_dup(mac, sizeof(mac));
    if (!sig) {
        snprintf(why, why_len, "out of memory");
    }
    return sig;
}

/* WAMP-Cryptosign: extra.challenge is 32 bytes as hex; the signature is the hex of the Ed25519
 * signed message, i.e. the 64-byte signature followed by the challenge (as Autobahn sends it). */
static char *cryptosign_signature(const ctl_auth *a, const json_t *extra, char *why, size_t why_len)
{
    const char *hex = json_string_value(json_object_get(extra, "challenge"));
    unsigned char challenge[32];
    size_t got = 0;
    if (!hex || strlen(hex) != 64 ||
        sodium_hex2bin(challenge, sizeof(challenge), hex, 64, NULL, &got, NULL) != 0 ||
        got != sizeof(challenge)) {
        snprintf(why, why_len, "cryptosign challenge without 32 bytes of hex in extra.challenge");
        return NULL;
    }
    unsigned char signed_msg[crypto_sign_BYTES + sizeof(challenge)];
    crypto_sign_detached(signed_msg, NULL, challenge, sizeof(challenge), a->sk);
    memcpy(signed_msg + crypto_sign_BYTES, challenge, sizeof(challenge));
    char *sig = malloc(sizeof(signed_msg) * 2 + 1);
    if (!sig) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    sodium_bin2hex(sig, sizeof(signed_msg) * 2 + 1, signed_msg, sizeof(signed_msg));
    return sig;
}

char *ctl_auth_signature(const ctl_auth *a, const char *method, const json_t *extra, char *why,
                         size_t why_len)
{
    if (!method || strcmp(method, method_name(a->method)) != 0) {
        snprintf(why, why_len, "the router asked for authmethod \"%s\", we offered \"%s\"",
                 method ? method : "?", method_name(a->method));
        return NULL;
    }
    switch (a->method) {
    case CTL_AUTH_TICKET: {
        char *s = strdup(a->secret);
        if (!s) {
            snprintf(why, why_len, "out of memory");
        }
        return s;
    }
    case CTL_AUTH_WAMPCRA:
        return wampcra_signature(a, extra, why, why_len);
    case CTL_AUTH_CRYPTOSIGN:
        return cryptosign_signature(a, extra, why, why_len);
    default:
        snprintf(why, why_len, "unexpected CHALLENGE for an anonymous session");
        return NULL;
    }
}
