/* rt_bridge.c: see rt_bridge.h. The error texts are those of Crossbar's log categories
 * (crossbar/_log_categories.py, AR4xx), which its bridge puts into the "error" of the answer. */
#include "rt_bridge.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "wamp_rd.h"
#include "wamp_types.h"

void rt_bridge_answer_fini(rt_bridge_answer *a)
{
    if (a) {
        free(a->body);
        a->body = NULL;
        a->len = 0;
    }
}

/* Takes v: the answer is status with v as its body. */
static wamp_err answer_take(unsigned status, json_t *v, rt_bridge_answer *out)
{
    out->status = status;
    out->body = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(v);
    if (!out->body) {
        return WAMP_ENOMEM;
    }
    out->len = strlen(out->body);
    return WAMP_OK;
}

wamp_err rt_bridge_deny(unsigned status, const char *error, rt_bridge_answer *out)
{
    return answer_take(status, json_pack("{s:s, s:[], s:{}}", "error", error, "args", "kwargs"),
                       out);
}

/* Copies [s, s+n) trimmed of blanks and lowercased into out (cap bytes); false if too long. */
static bool trimmed_lower(const char *s, size_t n, char *out, size_t cap)
{
    while (n > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) {
        n--;
    }
    if (n >= cap) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        out[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
    }
    out[n] = '\0';
    return true;
}

/* Crossbar's Content-Type rule: absent, or "application/json" with at most a UTF-8 charset.
 * NULL when acceptable, else the error text (why_buf may hold it). */
static const char *content_type_error(const char *ct, char *why_buf, size_t why_len)
{
    if (!ct) {
        return NULL;
    }
    char part[128];
    const char *semi = strchr(ct, ';');
    size_t n = semi ? (size_t)(semi - ct) : strlen(ct);
    if (!trimmed_lower(ct, n, part, sizeof(part)) || strcmp(part, "application/json") != 0) {
        snprintf(why_buf, why_len,
                 "Non-accepted content type. (must be one of 'application/json', not '%.64s')",
                 trimmed_lower(ct, n, part, sizeof(part)) ? part : "?");
        return why_buf;
    }
    while (semi) {
        const char *p = semi + 1;
        semi = strchr(p, ';');
        n = semi ? (size_t)(semi - p) : strlen(p);
        if (!trimmed_lower(p, n, part, sizeof(part))) {
            return "Non-accepted request encoding, must be UTF-8.";
        }
        const char *eq = strchr(part, '=');
        if (eq && strncmp(part, "charset", (size_t)(eq - part)) == 0 && eq - part == 7) {
            char v[32];
            if (!trimmed_lower(eq + 1, strlen(eq + 1), v, sizeof(v)) ||
                (strcmp(v, "utf-8") != 0 && strcmp(v, "utf8") != 0)) {
                return "Non-accepted request encoding, must be UTF-8.";
            }
        }
    }
    return NULL;
}

wamp_err rt_bridge_too_long(const rt_web_path *w, size_t length, rt_bridge_answer *out)
{
    char why[128];
    snprintf(why, sizeof(why), "Request too long. (%zu is longer than accepted %zu)", length,
             w->post_body_limit);
    return rt_bridge_deny(413, why, out);
}

wamp_err rt_bridge_check(const rt_web_path *w, const rt_bridge_req *req, bool *proceed,
                         rt_bridge_answer *deny)
{
    char why[160];
    *proceed = false;
    if (strcmp(req->method, "POST") != 0 && strcmp(req->method, "PUT") != 0) {
        snprintf(why, sizeof(why),
                 "Method not accepted by the REST bridge. (%.16s not allowed, only POST, PUT)",
                 req->method);
        return rt_bridge_deny(405, why, deny);
    }
    const char *bad = content_type_error(req->content_type, why, sizeof(why));
    if (bad) {
        return rt_bridge_deny(400, bad, deny);
    }
    if (req->content_length >= 0 && (uint64_t)req->content_length > w->post_body_limit) {
        return rt_bridge_too_long(w, (size_t)req->content_length, deny);
    }
    rt_cidr peer;
    if (w->n_require_ip && !(rt_config_parse_peer_addr(req->peer_addr, &peer) &&
                             rt_config_addr_in(w->require_ip, w->n_require_ip, &peer))) {
        return rt_bridge_deny(400, "Request denied based on IP address.", deny);
    }
    if (w->require_tls && !req->tls) {
        /* Crossbar denies it with its generic 400 text (log category AR400). */
        return rt_bridge_deny(400, "Malformed request to the REST bridge.", deny);
    }
    *proceed = true;
    return WAMP_OK;
}

/* Digits s[0..n) as a number; false if any is not a digit. */
static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (the days_from_civil algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool rt_bridge_parse_timestamp(const char *s, int64_t *unix_ms)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, sec;
    if (strlen(s) < 22 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || s[10] != 'T' || !digits(s + 11, 2, &h) ||
        s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec) ||
        s[19] != '.') {
        return false;
    }
    const char *f = s + 20;
    int n = 0;
    int64_t frac_us = 0;
    while (n < 6 && f[n] >= '0' && f[n] <= '9') {
        frac_us = frac_us * 10 + (f[n] - '0');
        n++;
    }
    if (n == 0 || f[n] != 'Z' || f[n + 1] != '\0') {
        return false;
    }
    for (int k = n; k < 6; k++) {
        frac_us *= 10;
    }
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
        h > 23 || mi > 59 || sec > 59) {
        return false;
    }
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    *unix_ms = secs * 1000 + frac_us / 1000;
    return true;
}

/* Python's int(): optional blanks and sign, then decimal digits. */
static bool is_int_text(const char *s)
{
    while (*s == ' ') {
        s++;
    }
    if (*s == '+' || *s == '-') {
        s++;
    }
    if (!(*s >= '0' && *s <= '9')) {
        return false;
    }
    while (*s >= '0' && *s <= '9') {
        s++;
    }
    while (*s == ' ') {
        s++;
    }
    return *s == '\0';
}

static wamp_err missing(const char *what, rt_bridge_answer *deny)
{
    char why[192];
    snprintf(why, sizeof(why), "REST bridge signature was invalid (missing mandatory field - %s).",
             what);
    return rt_bridge_deny(400, why, deny);
}

wamp_err rt_bridge_verify(const rt_web_path *w, const rt_bridge_sig *q, const unsigned char *body,
                          size_t len, int64_t now_unix_ms, bool *ok, rt_bridge_answer *deny)
{
    char why[256];
    bool signed_path = w->sign_secret != NULL;
    *ok = false;
    if (signed_path && !q->key) {
        return missing("'key' field missing", deny);
    }
    if (q->timestamp) {
        int64_t ts = 0;
        if (!rt_bridge_parse_timestamp(q->timestamp, &ts)) {
            snprintf(why, sizeof(why),
                     "REST bridge signature was invalid (invalid timestamp '%.64s' (must be "
                     "UTC/ISO-8601, e.g. '2011-10-14T16:59:51.123Z')).",
                     q->timestamp);
            return rt_bridge_deny(400, why, deny);
        }
        int64_t delta = ts > now_unix_ms ? ts - now_unix_ms : now_unix_ms - ts;
        if (w->timestamp_delta_secs && delta > (int64_t)w->timestamp_delta_secs * 1000) {
            return rt_bridge_deny(400, "Request expired, too old timestamp.", deny);
        }
    } else if (signed_path) {
        return missing("signed request required, but mandatory 'timestamp' field missing", deny);
    }
    const char *vals[] = {q->seq, q->nonce};
    for (size_t i = 0; i < 2; i++) {
        if (vals[i] && !is_int_text(vals[i])) {
            snprintf(why, sizeof(why),
                     "REST bridge signature was invalid (invalid %s '%.32s' (must be an "
                     "integer)).",
                     i == 0 ? "sequence number" : "nonce", vals[i]);
            return rt_bridge_deny(400, why, deny);
        }
        if (!vals[i] && signed_path) {
            return missing(i == 0 ? "'seq' field missing" : "'nonce' field missing", deny);
        }
    }
    if (!signed_path) {
        *ok = true;
        return WAMP_OK;
    }
    if (!q->signature) {
        return missing("'signature' field missing", deny);
    }
    if (strcmp(q->key, w->sign_key) != 0) {
        return rt_bridge_deny(401, "REST bridge signature key not valid.", deny);
    }
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)w->sign_secret, strlen(w->sign_secret));
    const char *parts[] = {q->key, q->timestamp, q->seq, q->nonce};
    for (size_t i = 0; i < 4; i++) {
        crypto_auth_hmacsha256_update(&st, (const unsigned char *)parts[i], strlen(parts[i]));
    }
    crypto_auth_hmacsha256_update(&st, body, len);
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_memzero(&st, sizeof(st));
    char want[sodium_base64_ENCODED_LEN(crypto_auth_hmacsha256_BYTES,
                                        sodium_base64_VARIANT_URLSAFE)];
    sodium_bin2base64(want, sizeof(want), mac, sizeof(mac), sodium_base64_VARIANT_URLSAFE);
    size_t n = strlen(want);
    if (strlen(q->signature) != n || sodium_memcmp(want, q->signature, n) != 0) {
        return rt_bridge_deny(401, "REST bridge signature secret not valid.", deny);
    }
    *ok = true;
    return WAMP_OK;
}

/* PUBLISH options Crossbar's publisher passes on (publisher.py: PublishOptions(...)). */
static const char *const publish_options[] = {
        "retain",  "exclude_me",      "exclude_authid",    "exclude_authrole",
        "exclude", "eligible_authid", "eligible_authrole", "eligible",
};

/* The WAMP options of the request's "options" object o (may be NULL); NULL with *why set when
 * they are not acceptable, NULL with *why NULL when out of memory. */
static json_t *wamp_options(const rt_web_path *w, const json_t *o, const char **why)
{
    *why = NULL;
    json_t *out = json_object();
    if (!out) {
        return NULL;
    }
    if (w->kind == RT_WEB_PUBLISHER) {
        for (size_t i = 0; i < sizeof(publish_options) / sizeof(publish_options[0]); i++) {
            json_t *v = json_object_get(o, publish_options[i]);
            if (v && !json_is_null(v) && json_object_set(out, publish_options[i], v)) {
                goto fail;
            }
        }
        if (json_object_set_new(out, "acknowledge", json_true())) {
            goto fail;
        }
        return out;
    }
    json_t *t = json_object_get(o, "timeout");
    json_int_t ms = w->call_timeout_ms;
    if (t && !json_is_null(t)) {
        if (!json_is_integer(t) || json_integer_value(t) < 0) {
            *why = "Request body was valid JSON, but not well formed (options.timeout must be "
                   "a non-negative integer, ms).";
            goto fail;
        }
        ms = json_integer_value(t);
    }
    /* 0 is "no timeout" in WAMP; the bridge still bounds the wait with its default. */
    if (ms == 0) {
        ms = w->call_timeout_ms;
    }
    if (ms > 0 && json_object_set_new(out, "timeout", json_integer(ms))) {
        goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* A member that Crossbar reads with `event[k] if k in event and event[k] else default`: absent,
 * null, or empty counts as the default. */
static bool is_unset(const json_t *v)
{
    return !v || json_is_null(v) || json_is_false(v) ||
           (json_is_array(v) && json_array_size(v) == 0) ||
           (json_is_object(v) && json_object_size(v) == 0);
}

/* Long: the request body's checks in order (UTF-8, a JSON object, the URI, args, kwargs,
 * options), each answered with its own 400 text, then the message built; one exit frees the
 * temporaries. */
wamp_err rt_bridge_message(const rt_web_path *w, const unsigned char *body, size_t len,
                           uint64_t request, char **msg, size_t *msg_len, rt_bridge_answer *deny)
{
    *msg = NULL;
    *msg_len = 0;
    const char *key = w->kind == RT_WEB_PUBLISHER ? "topic" : "procedure";
    char why[160];
    const char *bad = NULL;
    json_t *req = NULL;
    json_t *opts = NULL;
    json_t *m = NULL;
    wamp_err err = WAMP_OK;
    if (!wamp_utf8_valid(body, len)) {
        bad = "Non-decodable request body, was not UTF-8.";
        goto deny;
    }
    req = json_loadb((const char *)body, len, JSON_ALLOW_NUL, NULL);
    if (!req) {
        bad = "Request body was invalid JSON.";
        goto deny;
    }
    if (!json_is_object(req)) {
        bad = "Request body was valid JSON, but not well formed (must be a dict).";
        goto deny;
    }
    const json_t *uri = json_object_get(req, key);
    if (!uri) {
        snprintf(why, sizeof(why),
                 "Request body was valid JSON, but not well formed (missing key '%s').", key);
        bad = why;
        goto deny;
    }
    if (!json_is_string(uri)) {
        snprintf(why, sizeof(why),
                 "Request body was valid JSON, but not well formed ('%s' must be a string).", key);
        bad = why;
        goto deny;
    }
    json_t *args = json_object_get(req, "args");
    json_t *kwargs = json_object_get(req, "kwargs");
    json_t *o = json_object_get(req, "options");
    if (!is_unset(args) && !json_is_array(args)) {
        bad = "Request body was valid JSON, but not well formed ('args' must be a list).";
        goto deny;
    }
    if (!is_unset(kwargs) && !json_is_object(kwargs)) {
        bad = "Request body was valid JSON, but not well formed ('kwargs' must be a dict).";
        goto deny;
    }
    if (!is_unset(o) && !json_is_object(o)) {
        bad = "Request body was valid JSON, but not well formed ('options' must be a dict).";
        goto deny;
    }
    opts = wamp_options(w, json_is_object(o) ? o : NULL, &bad);
    if (!opts) {
        if (bad) {
            goto deny;
        }
        err = WAMP_ENOMEM;
        goto fail;
    }
    m = json_pack("[I, I, O, O]",
                  (json_int_t)(w->kind == RT_WEB_PUBLISHER ? WAMP_MSG_PUBLISH : WAMP_MSG_CALL),
                  (json_int_t)request, opts, uri);
    bool has_args = !is_unset(args);
    bool has_kwargs = !is_unset(kwargs);
    if (!m || (has_args && json_array_append(m, args)) ||
        (!has_args && has_kwargs && json_array_append_new(m, json_array())) ||
        (has_kwargs && json_array_append(m, kwargs))) {
        err = WAMP_ENOMEM;
        goto fail;
    }
    *msg = json_dumps(m, JSON_COMPACT);
    if (!*msg) {
        err = WAMP_ENOMEM;
        goto fail;
    }
    *msg_len = strlen(*msg);
    goto fail; /* done: free the temporaries */
deny:
    err = rt_bridge_deny(400, bad, deny);
fail:
    json_decref(m);
    json_decref(opts);
    json_decref(req);
    return err;
}

/* Crossbar's caller: autobahn's call() gives None, the one positional result, or a CallResult
 * (several results or keyword results), written as {"args": [value]} or {"args", "kwargs"}
 * (each only when not empty). */
static json_t *result_body(json_t *args, json_t *kwargs)
{
    size_t na = json_is_array(args) ? json_array_size(args) : 0;
    size_t nk = json_is_object(kwargs) ? json_object_size(kwargs) : 0;
    if (na <= 1 && nk == 0) {
        json_t *v = na ? json_incref(json_array_get(args, 0)) : json_null();
        return json_pack("{s:[o]}", "args", v);
    }
    json_t *r = json_object();
    if (r && na && json_object_set(r, "args", args)) {
        json_decref(r);
        return NULL;
    }
    if (r && nk && json_object_set(r, "kwargs", kwargs)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

wamp_err rt_bridge_answer_of(const json_t *msg, uint64_t request, bool *is_answer,
                             rt_bridge_answer *out)
{
    *is_answer = false;
    json_t *type = json_array_get(msg, 0);
    if (!json_is_integer(type)) {
        return WAMP_OK;
    }
    json_int_t t = json_integer_value(type);
    if (t == WAMP_MSG_ABORT || t == WAMP_MSG_GOODBYE) {
        /* The router ends the request's session (a session limit, shutting down): 503 with
         * its reason and message. */
        json_t *reason = json_array_get(msg, 2);
        json_t *message = json_object_get(json_array_get(msg, 1), "message");
        *is_answer = true;
        return answer_take(
                503,
                json_pack("{s:s, s:o, s:{}}", "error",
                          json_is_string(reason) ? json_string_value(reason) : "", "args",
                          json_is_string(message) ? json_pack("[O]", message) : json_array(),
                          "kwargs"),
                out);
    }
    size_t at = t == WAMP_MSG_ERROR ? 2 : 1; /* ERROR: [8, type, request, ...] */
    json_t *id = json_array_get(msg, at);
    if (!json_is_integer(id) || (uint64_t)json_integer_value(id) != request) {
        return WAMP_OK;
    }
    json_t *v = NULL;
    if (t == WAMP_MSG_PUBLISHED) {
        v = json_pack("{s:O}", "id", json_array_get(msg, 2));
    } else if (t == WAMP_MSG_RESULT) {
        v = result_body(json_array_get(msg, 3), json_array_get(msg, 4));
    } else if (t == WAMP_MSG_ERROR) {
        json_t *args = json_array_get(msg, 5);
        json_t *kwargs = json_array_get(msg, 6);
        v = json_pack("{s:O, s:o, s:o}", "error", json_array_get(msg, 4), "args",
                      json_is_array(args) ? json_incref(args) : json_array(), "kwargs",
                      json_is_object(kwargs) ? json_incref(kwargs) : json_object());
    } else {
        return WAMP_OK;
    }
    *is_answer = true;
    return answer_take(200, v, out);
}
