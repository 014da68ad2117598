/* rt_auth.c: WAMP-Ticket, WAMP-CRA and WAMP-Cryptosign for static principals (see rt_auth.h).
 * Decisions follow Crossbar.io (crossbar/router/auth/{ticket,wampcra,cryptosign}.py): the
 * WAMP-CRA key is the configured secret as written (for salted users that is the derived key,
 * as autobahn's derive_key() computes it), the challenge is a JSON string with authid, authrole,
 * authmethod, authprovider, session, nonce and timestamp; cryptosign's challenge is 32 random
 * bytes in hex and the signature is accepted as autobahn sends it (signature || challenge). */
#include "rt_auth.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "wamp_kdf.h"
#include "wamp_types.h"
#include "wamp_ws.h"

struct rt_auth_pending {
    rt_auth_method method;
    const rt_auth_config *cfg;
    const rt_auth_principal *principal; /* borrowed from cfg once found */
    char *realm;
    char *authid;
    char wcs[RT_AUTH_WCS_LEN]; /* wampcra: the expected signature */
    uint8_t challenge[32];     /* cryptosign: the challenge sent */
    const uint8_t *pubkey;     /* cryptosign: the key named by authextra.pubkey, or NULL */
};

const char *rt_auth_method_name(rt_auth_method m)
{
    switch (m) {
    case RT_AUTH_ANONYMOUS:
        return "anonymous";
    case RT_AUTH_TICKET:
        return "ticket";
    case RT_AUTH_WAMPCRA:
        return "wampcra";
    case RT_AUTH_CRYPTOSIGN:
        return "cryptosign";
    case RT_AUTH_NONE:
        break;
    }
    return "";
}

static bool offered(rt_auth_method m, const rt_auth_config *cfg, bool anonymous_allowed)
{
    switch (m) {
    case RT_AUTH_ANONYMOUS:
        return anonymous_allowed;
    case RT_AUTH_TICKET:
        return cfg && cfg->ticket.enabled;
    case RT_AUTH_WAMPCRA:
        return cfg && cfg->wampcra.enabled;
    case RT_AUTH_CRYPTOSIGN:
        return cfg && cfg->cryptosign.enabled;
    case RT_AUTH_NONE:
        break;
    }
    return false;
}

rt_auth_method rt_auth_pick(const json_t *authmethods, const rt_auth_config *cfg,
                            bool anonymous_allowed)
{
    /* Crossbar (router/session.py): no authmethods (or an empty list) means ["anonymous"]; the
     * first of the client's methods the transport offers is used, and a failure there is final
     * (the client's later methods are not tried). */
    if (!json_is_array(authmethods) || json_array_size(authmethods) == 0) {
        return anonymous_allowed ? RT_AUTH_ANONYMOUS : RT_AUTH_NONE;
    }
    size_t i;
    const json_t *v;
    json_array_foreach(authmethods, i, v)
    {
        const char *name = json_string_value(v);
        for (rt_auth_method m = RT_AUTH_ANONYMOUS; name && m <= RT_AUTH_CRYPTOSIGN; m++) {
            if (strcmp(name, rt_auth_method_name(m)) == 0 && offered(m, cfg, anonymous_allowed)) {
                return m;
            }
        }
    }
    return RT_AUTH_NONE;
}

/* ---- Primitives ---------------------------------------------------------------------------- */

void rt_auth_wampcra_sign(const char *key, size_t key_len, const char *msg, size_t msg_len,
                          char out[RT_AUTH_WCS_LEN])
{
    crypto_auth_hmacsha256_state st;
    uint8_t mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_init(&st, (const uint8_t *)key, key_len);
    crypto_auth_hmacsha256_update(&st, (const uint8_t *)msg, msg_len);
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_bin2base64(out, RT_AUTH_WCS_LEN, mac, sizeof(mac), sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(&st, sizeof(st));
    sodium_memzero(mac, sizeof(mac));
}

wamp_err rt_auth_wampcra_derive_key(const char *secret, const char *salt, uint32_t iterations,
                                    uint32_t keylen, char *out, size_t out_len)
{
    if (keylen == 0 || keylen > 1024 ||
        out_len < sodium_base64_ENCODED_LEN(keylen, sodium_base64_VARIANT_ORIGINAL)) {
        return WAMP_EINVAL;
    }
    uint8_t key[1024];
    wamp_err err = wamp_pbkdf2_sha256((const uint8_t *)secret, strlen(secret),
                                      (const uint8_t *)salt, strlen(salt), iterations, key, keylen);
    if (err == WAMP_OK) {
        sodium_bin2base64(out, out_len, key, keylen, sodium_base64_VARIANT_ORIGINAL);
    }
    sodium_memzero(key, sizeof(key));
    return err;
}

bool rt_auth_cryptosign_verify(const uint8_t pubkey[32], const uint8_t challenge[32],
                               const char *sig_hex)
{
    uint8_t sig[96];
    size_t n = 0;
    size_t hex_len = sig_hex ? strlen(sig_hex) : 0;
    if ((hex_len != 128 && hex_len != 192) ||
        sodium_hex2bin(sig, sizeof(sig), sig_hex, hex_len, NULL, &n, NULL) != 0 ||
        n != hex_len / 2) {
        return false;
    }
    /* autobahn sends signature || signed message (Crossbar checks the message is the challenge:
     * without a channel binding it is the challenge itself). */
    if (n == 96 && sodium_memcmp(sig + 64, challenge, 32) != 0) {
        return false;
    }
    return crypto_sign_verify_detached(sig, challenge, 32, pubkey) == 0;
}

/* Equal strings, in time independent of where they differ: compares fixed-size hashes. */
static bool secret_equal(const char *a, const char *b)
{
    uint8_t ha[32], hb[32];
    crypto_generichash(ha, sizeof(ha), (const uint8_t *)a, strlen(a), NULL, 0);
    crypto_generichash(hb, sizeof(hb), (const uint8_t *)b, strlen(b), NULL, 0);
    bool eq = sodium_memcmp(ha, hb, sizeof(ha)) == 0;
    sodium_memzero(ha, sizeof(ha));
    sodium_memzero(hb, sizeof(hb));
    return eq;
}

/* ---- Handshake ----------------------------------------------------------------------------- */

rt_auth_pending *rt_auth_pending_new(rt_auth_method method, const rt_auth_config *cfg,
                                     const char *realm)
{
    rt_auth_pending *p = calloc(1, sizeof(*p));
    if (!p) {
        return NULL;
    }
    p->method = method;
    p->cfg = cfg;
    p->realm = strdup(realm ? realm : "");
    if (!p->realm) {
        free(p);
        return NULL;
    }
    return p;
}

void rt_auth_pending_free(rt_auth_pending *p)
{
    if (!p) {
        return;
    }
    free(p->realm);
    free(p->authid);
    sodium_memzero(p, sizeof(*p));
    free(p);
}

rt_auth_method rt_auth_pending_method(const rt_auth_pending *p)
{
    return p->method;
}

const char *rt_auth_pending_realm(const rt_auth_pending *p)
{
    return p->realm;
}

const char *rt_auth_pending_authid(const rt_auth_pending *p)
{
    return p->authid;
}

const char *rt_auth_pending_role(const rt_auth_pending *p)
{
    return p->principal ? p->principal->role : NULL;
}

__attribute__((format(printf, 3, 4))) static void deny(rt_auth_denial *d, const char *reason,
                                                       const char *fmt, ...)
{
    /* Cut to fit at a character boundary: the message goes into ABORT.Details as a string,
     * which must be UTF-8 (a cut inside a character made the ABORT go without it). */
    va_list ap;
    d->reason = reason;
    va_start(ap, fmt);
    (void)wamp_utf8_vsnprintf(d->message, sizeof(d->message), fmt, ap);
    va_end(ap);
    /* The message quotes the client's authid: keep it on one line. */
    for (char *c = d->message; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            *c = '?';
        }
    }
}

static bool principal_has_key(const rt_auth_principal *pr, const uint8_t key[32])
{
    for (size_t i = 0; i < pr->n_keys; i++) {
        if (memcmp(pr->keys[i], key, 32) == 0) {
            return true;
        }
    }
    return false;
}

/* ISO-8601 UTC with milliseconds and Z, as autobahn's util.utcnow(). */
static void format_utc(uint64_t wall_ns, char *buf, size_t len)
{
    time_t sec = (time_t)(wall_ns / 1000000000u);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char date[32];
    if (strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        date[0] = '\0';
    }
    snprintf(buf, len, "%s.%03uZ", date, (unsigned)((wall_ns / 1000000u) % 1000u));
}

static wamp_err begin_wampcra(rt_auth_pending *p, uint64_t session_id, uint64_t now_wall_ns,
                              json_t **extra)
{
    const rt_auth_principal *pr = p->principal;
    uint8_t rnd[48];
    char nonce[sodium_base64_ENCODED_LEN(48, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
    char ts[40];
    randombytes_buf(rnd, sizeof(rnd));
    sodium_bin2base64(nonce, sizeof(nonce), rnd, sizeof(rnd),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    format_utc(now_wall_ns, ts, sizeof(ts));
    json_t *ch = json_pack("{s:s, s:s?, s:s, s:s, s:I, s:s, s:s}", "authid", p->authid, "authrole",
                           pr->role, "authmethod", "wampcra", "authprovider", "static", "session",
                           (json_int_t)session_id, "nonce", nonce, "timestamp", ts);
    char *text = ch ? json_dumps(ch, JSON_COMPACT) : NULL;
    json_decref(ch);
    if (!text) {
        return WAMP_ENOMEM;
    }
    rt_auth_wampcra_sign(pr->secret, strlen(pr->secret), text, strlen(text), p->wcs);
    if (pr->salt) {
        *extra =
                json_pack("{s:s, s:s, s:I, s:I}", "challenge", text, "salt", pr->salt, "iterations",
                          (json_int_t)pr->iterations, "keylen", (json_int_t)pr->keylen);
    } else {
        *extra = json_pack("{s:s}", "challenge", text);
    }
    free(text);
    return *extra ? WAMP_OK : WAMP_ENOMEM;
}

/* Long: Crossbar's cryptosign rules in the order it applies them (channel binding, public key,
 * the principal by key or by authid, its realm), each ending the handshake with its own denial. */
static wamp_err begin_cryptosign(rt_auth_pending *p, const json_t *details, json_t **extra,
                                 rt_auth_denial *d)
{
    const rt_auth_method_config *m = &p->cfg->cryptosign;
    const json_t *authextra = json_object_get(details, "authextra");
    const json_t *binding = json_object_get(authextra, "channel_binding");
    if (binding && !json_is_null(binding)) {
        const char *b = json_string_value(binding);
        if (b && strcmp(b, "tls-unique") == 0) {
            deny(d, WAMP_ERROR_AUTHENTICATION_FAILED,
                 "channel binding \"tls-unique\" is not supported (use channel_binding null)");
        } else {
            deny(d, WAMP_ERROR_AUTHENTICATION_FAILED, "unknown channel binding requested");
        }
        return WAMP_OK;
    }
    const json_t *pk = json_object_get(authextra, "pubkey");
    uint8_t key[32];
    bool have_key = false;
    if (pk) {
        const char *hex = json_string_value(pk);
        size_t n = 0;
        if (!hex || json_string_length(pk) != 64 || strlen(hex) != 64 ||
            sodium_hex2bin(key, sizeof(key), hex, 64, NULL, &n, NULL) != 0 || n != 32) {
            deny(d, WAMP_ERROR_AUTHENTICATION_FAILED,
                 "authextra.pubkey must be an Ed25519 public key as 64 hex characters");
            return WAMP_OK;
        }
        have_key = true;
    }
    if (!p->authid) {
        /* Crossbar: without an authid the public key names the principal, if exactly one
         * principal lists it. */
        if (!have_key) {
            deny(d, WAMP_ERROR_NO_SUCH_PRINCIPAL,
                 "cannot identify client: no authid and no authextra.pubkey");
            return WAMP_OK;
        }
        const rt_auth_principal *found = NULL;
        for (size_t i = 0; i < m->n_principals; i++) {
            if (principal_has_key(&m->principals[i], key)) {
                if (found) {
                    deny(d, WAMP_ERROR_AUTHENTICATION_FAILED,
                         "cannot infer the authid: several principals have this public key");
                    return WAMP_OK;
                }
                found = &m->principals[i];
            }
        }
        if (!found) {
            deny(d, WAMP_ERROR_NO_SUCH_PRINCIPAL, "no principal has this public key");
            return WAMP_OK;
        }
        p->authid = strdup(found->authid);
        if (!p->authid) {
            return WAMP_ENOMEM;
        }
    }
    const rt_auth_principal *pr = rt_config_find_principal(m, p->authid);
    if (!pr) {
        deny(d, WAMP_ERROR_NO_SUCH_PRINCIPAL, "no principal with authid \"%s\" exists", p->authid);
        return WAMP_OK;
    }
    if (have_key) {
        for (size_t i = 0; i < pr->n_keys && !p->pubkey; i++) {
            if (memcmp(pr->keys[i], key, 32) == 0) {
                p->pubkey = pr->keys[i];
            }
        }
        if (!p->pubkey) {
            deny(d, WAMP_ERROR_AUTHENTICATION_FAILED,
                 "authextra.pubkey is not an authorized key of principal \"%s\"", p->authid);
            return WAMP_OK;
        }
    }
    if (pr->realm && strcmp(pr->realm, p->realm) != 0) {
        deny(d, WAMP_ERROR_NO_SUCH_REALM, "principal \"%s\" may not join realm \"%s\"", p->authid,
             p->realm);
        return WAMP_OK;
    }
    p->principal = pr;
    randombytes_buf(p->challenge, sizeof(p->challenge));
    char hex[65];
    sodium_bin2hex(hex, sizeof(hex), p->challenge, sizeof(p->challenge));
    *extra = json_pack("{s:s}", "challenge", hex);
    return *extra ? WAMP_OK : WAMP_ENOMEM;
}

wamp_err rt_auth_begin(rt_auth_pending *p, const json_t *hello_details, uint64_t session_id,
                       uint64_t now_wall_ns, json_t **extra, rt_auth_denial *d)
{
    *extra = NULL;
    d->reason = NULL;
    d->message[0] = '\0';
    const char *authid = json_string_value(json_object_get(hello_details, "authid"));
    if (authid && authid[0]) {
        p->authid = strdup(authid);
        if (!p->authid) {
            return WAMP_ENOMEM;
        }
    }
    if (p->method == RT_AUTH_CRYPTOSIGN) {
        return begin_cryptosign(p, hello_details, extra, d);
    }
    const rt_auth_method_config *m =
            p->method == RT_AUTH_TICKET ? &p->cfg->ticket : &p->cfg->wampcra;
    const rt_auth_principal *pr = rt_config_find_principal(m, p->authid);
    if (!pr) {
        if (p->authid) {
            deny(d, WAMP_ERROR_NO_SUCH_PRINCIPAL, "no principal with authid \"%s\" exists",
                 p->authid);
        } else {
            deny(d, WAMP_ERROR_NO_SUCH_PRINCIPAL, "no authid given (HELLO.Details.authid)");
        }
        return WAMP_OK;
    }
    p->principal = pr;
    if (p->method == RT_AUTH_TICKET) {
        *extra = json_object(); /* WAMP-Ticket: an empty Extra */
        return *extra ? WAMP_OK : WAMP_ENOMEM;
    }
    return begin_wampcra(p, session_id, now_wall_ns, extra);
}

bool rt_auth_verify(rt_auth_pending *p, const char *signature, rt_auth_denial *d)
{
    bool ok = false;
    const rt_auth_principal *pr = p->principal;
    d->reason = WAMP_ERROR_AUTHENTICATION_FAILED;
    d->message[0] = '\0';
    if (!pr || !signature) {
        deny(d, WAMP_ERROR_AUTHENTICATION_FAILED, "no authentication in progress");
        return false;
    }
    switch (p->method) {
    case RT_AUTH_TICKET:
        ok = secret_equal(signature, pr->secret);
        if (!ok) {
            deny(d, WAMP_ERROR_AUTHENTICATION_FAILED, "ticket is invalid");
        }
        break;
    case RT_AUTH_WAMPCRA:
        ok = secret_equal(signature, p->wcs);
        if (!ok) {
            deny(d, WAMP_ERROR_AUTHENTICATION_FAILED, "WAMP-CRA signature is invalid");
        }
        break;
    case RT_AUTH_CRYPTOSIGN:
        if (p->pubkey) {
            ok = rt_auth_cryptosign_verify(p->pubkey, p->challenge, signature);
        } else {
            for (size_t i = 0; i < pr->n_keys && !ok; i++) {
                ok = rt_auth_cryptosign_verify(pr->keys[i], p->challenge, signature);
            }
        }
        if (!ok) {
            deny(d, WAMP_ERROR_AUTHENTICATION_FAILED, "cryptosign signature is invalid");
        }
        break;
    default:
        deny(d, WAMP_ERROR_AUTHENTICATION_FAILED, "no authentication in progress");
        break;
    }
    /* One attempt per handshake: the expected values are no longer needed. */
    sodium_memzero(p->wcs, sizeof(p->wcs));
    sodium_memzero(p->challenge, sizeof(p->challenge));
    return ok;
}
