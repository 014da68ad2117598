/* trace_options.c: trace_options JSON -> trace_options, one checker per key. */
#include "trace_options.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "trace_record.h"
#include "wamp_msg.h"
#include "wamp_types.h"

__attribute__((format(printf, 3, 4))) static wamp_err fail_why(char *why, size_t why_len,
                                                               const char *fmt, ...)
{
    if (why && why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return WAMP_EINVAL;
}

bool trace_msg_type_parse(const char *name, int *out)
{
    if (!name) {
        return false;
    }
    if (strcasecmp(name, "Marker") == 0) {
        *out = TRACE_MSG_MARKER;
        return true;
    }
    if (strcasecmp(name, "Unknown") == 0) {
        *out = 0;
        return true;
    }
    if (strcasecmp(name, "Connection") == 0) {
        *out = TRACE_MSG_CONNECTION;
        return true;
    }
    for (int t = 1; t <= WAMP_MSG_TYPE_MAX; t++) {
        if (wamp_msg_type_is_known(t) && strcasecmp(name, wamp_msg_type_title(t)) == 0) {
            *out = t;
            return true;
        }
    }
    return false;
}

/* A string without embedded NUL bytes (jansson strings may hold them: JSON_ALLOW_NUL). */
static const char *plain_string(const json_t *v)
{
    if (!json_is_string(v)) {
        return NULL;
    }
    const char *s = json_string_value(v);
    return strlen(s) == json_string_length(v) ? s : NULL;
}

/* Checks that v is a non-empty array of at most TRACE_OPT_LIST_MAX entries. */
static wamp_err check_list(const char *key, const json_t *v, char *why, size_t why_len)
{
    if (!json_is_array(v)) {
        return fail_why(why, why_len, "%s: must be a list", key);
    }
    size_t n = json_array_size(v);
    if (n == 0) {
        return fail_why(why, why_len, "%s: must not be empty (leave it out to trace all)", key);
    }
    if (n > TRACE_OPT_LIST_MAX) {
        return fail_why(why, why_len, "%s: at most %u entries (got %zu)", key, TRACE_OPT_LIST_MAX,
                        n);
    }
    return WAMP_OK;
}

/* A list of non-empty strings, copied into *out. */
static wamp_err parse_strings(const char *key, const json_t *v, char ***out, size_t *n_out,
                              char *why, size_t why_len)
{
    wamp_err err = check_list(key, v, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    size_t n = json_array_size(v);
    char **list = calloc(n, sizeof(*list));
    if (!list) {
        return WAMP_ENOMEM;
    }
    *out = list;
    for (size_t i = 0; i < n; i++) {
        const char *s = plain_string(json_array_get(v, i));
        if (!s || !*s) {
            return fail_why(why, why_len, "%s[%zu]: must be a non-empty string", key, i);
        }
        list[i] = strdup(s);
        if (!list[i]) {
            return WAMP_ENOMEM;
        }
        *n_out = i + 1;
    }
    return WAMP_OK;
}

static wamp_err opt_realms(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    return parse_strings("realms", v, &o->realms, &o->n_realms, why, why_len);
}

static wamp_err opt_authids(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    return parse_strings("authids", v, &o->authids, &o->n_authids, why, why_len);
}

static wamp_err opt_authroles(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    return parse_strings("authroles", v, &o->authroles, &o->n_authroles, why, why_len);
}

/* One "uris" entry: a plain string (exact; "*" = everything) or {"uri": s, "match": m} with
 * match one of "exact" (the default), "prefix", "wildcard". Patterns are checked with the loose
 * URI rules; prefix and wildcard patterns may have empty components ("com.example." or
 * "com..update"), and the prefix "" matches every URI. Returns *all = true for "*". */
static wamp_err parse_uri_entry(size_t i, const json_t *e, trace_uri_pat *pat, bool *all, char *why,
                                size_t why_len)
{
    const char *uri;
    wamp_match m = WAMP_MATCH_EXACT;
    if (json_is_string(e)) {
        uri = plain_string(e);
        if (uri && strcmp(uri, "*") == 0) {
            *all = true;
            return WAMP_OK;
        }
    } else if (json_is_object(e)) {
        const char *k;
        const json_t *val;
        json_object_foreach((json_t *)e, k, val)
        {
            if (strcmp(k, "uri") != 0 && strcmp(k, "match") != 0) {
                return fail_why(why, why_len, "uris[%zu]: unknown key \"%s\" (expected uri, match)",
                                i, k);
            }
        }
        uri = plain_string(json_object_get(e, "uri"));
        if (!uri) {
            return fail_why(why, why_len, "uris[%zu].uri: must be a string", i);
        }
        const json_t *mv = json_object_get(e, "match");
        if (mv && !wamp_match_parse(plain_string(mv), &m)) {
            return fail_why(why, why_len,
                            "uris[%zu].match: must be \"exact\", \"prefix\" or \"wildcard\"", i);
        }
    } else {
        return fail_why(why, why_len,
                        "uris[%zu]: must be a string or {\"uri\": ..., \"match\": ...}", i);
    }
    if (!uri) {
        return fail_why(why, why_len, "uris[%zu]: must not contain NUL bytes", i);
    }
    bool ok;
    switch (m) {
    case WAMP_MATCH_PREFIX:
        ok = *uri == '\0' || wamp_uri_is_valid(uri, WAMP_URI_LOOSE_EMPTY);
        break;
    case WAMP_MATCH_WILDCARD:
        ok = wamp_uri_is_valid(uri, WAMP_URI_LOOSE_EMPTY);
        break;
    case WAMP_MATCH_EXACT:
    default:
        ok = wamp_uri_is_valid(uri, WAMP_URI_LOOSE);
        break;
    }
    if (!ok) {
        return fail_why(why, why_len, "uris[%zu]: \"%s\" is not a valid %s URI pattern", i, uri,
                        wamp_match_name(m));
    }
    pat->uri = strdup(uri);
    pat->match = m;
    return pat->uri ? WAMP_OK : WAMP_ENOMEM;
}

static wamp_err opt_uris(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    wamp_err err = check_list("uris", v, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    size_t n = json_array_size(v);
    o->uris = calloc(n, sizeof(*o->uris));
    if (!o->uris) {
        return WAMP_ENOMEM;
    }
    bool all = false;
    for (size_t i = 0; i < n; i++) {
        bool star = false;
        err = parse_uri_entry(i, json_array_get(v, i), &o->uris[o->n_uris], &star, why, why_len);
        if (err != WAMP_OK) {
            return err;
        }
        if (star) {
            all = true;
        } else {
            o->n_uris++;
        }
    }
    if (all) {
        /* "*" anywhere in the list: no URI restriction (messages without a URI included). */
        for (size_t i = 0; i < o->n_uris; i++) {
            free(o->uris[i].uri);
        }
        free(o->uris);
        o->uris = NULL;
        o->n_uris = 0;
    }
    return WAMP_OK;
}

static wamp_err opt_msg_types(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    wamp_err err = check_list("msg_types", v, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    o->msg_types[0] = o->msg_types[1] = 0;
    o->has_msg_types = true;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const char *name = plain_string(json_array_get(v, i));
        int t;
        if (!trace_msg_type_parse(name, &t)) {
            if (!name) {
                return fail_why(why, why_len, "msg_types[%zu]: must be a string", i);
            }
            return fail_why(why, why_len,
                            "msg_types[%zu]: unknown message type \"%s\" (names as in records: "
                            "\"Publish\", \"Event\", \"Call\", ...)",
                            i, name);
        }
        /* Markers are added on request (mark_trace) and never filtered: the name is accepted
         * but has no bit. Connection records are no message: a flag
         * (trace_filter_keeps_connections()). */
        if (t == TRACE_MSG_CONNECTION) {
            o->msg_connections = true;
        } else if (t != TRACE_MSG_MARKER) {
            o->msg_types[t / 64] |= (uint64_t)1 << (t % 64);
        }
    }
    return WAMP_OK;
}

static wamp_err opt_direction(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    const char *s = plain_string(v);
    if (s && strcmp(s, "rx") == 0) {
        o->direction = TRACE_RX;
    } else if (s && strcmp(s, "tx") == 0) {
        o->direction = TRACE_TX;
    } else if (s && strcmp(s, "both") == 0) {
        o->direction = TRACE_RX | TRACE_TX;
    } else {
        return fail_why(why, why_len, "direction: must be \"rx\", \"tx\" or \"both\"");
    }
    return WAMP_OK;
}

static wamp_err opt_session_ids(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    wamp_err err = check_list("session_ids", v, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    size_t n = json_array_size(v);
    o->session_ids = calloc(n, sizeof(*o->session_ids));
    if (!o->session_ids) {
        return WAMP_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        json_int_t id = json_is_integer(e) ? json_integer_value(e) : 0;
        if (id < 1 || (uint64_t)id > WAMP_ID_MAX) {
            return fail_why(why, why_len,
                            "session_ids[%zu]: must be a session id (an integer from 1 to 2^53)",
                            i);
        }
        o->session_ids[i] = (uint64_t)id;
        o->n_session_ids = i + 1;
    }
    return WAMP_OK;
}

static wamp_err opt_trace_app_payload(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    if (!json_is_boolean(v)) {
        return fail_why(why, why_len, "trace_app_payload: must be true or false");
    }
    o->trace_app_payload = json_is_true(v);
    return WAMP_OK;
}

/* An integer option in [lo, hi]. */
static wamp_err int_in_range(const char *key, const json_t *v, uint64_t lo, uint64_t hi,
                             uint64_t *out, char *why, size_t why_len)
{
    if (!json_is_integer(v)) {
        return fail_why(why, why_len, "%s: must be an integer from %" PRIu64 " to %" PRIu64, key,
                        lo, hi);
    }
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x < lo || (uint64_t)x > hi) {
        return fail_why(why, why_len,
                        "%s: must be an integer from %" PRIu64 " to %" PRIu64
                        " (got %" JSON_INTEGER_FORMAT ")",
                        key, lo, hi, x);
    }
    *out = (uint64_t)x;
    return WAMP_OK;
}

static wamp_err opt_limit(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    uint64_t x = 0;
    wamp_err err = int_in_range("limit", v, 1, TRACE_OPT_LIMIT_MAX, &x, why, why_len);
    if (err == WAMP_OK) {
        o->limit = (size_t)x;
    }
    return err;
}

static wamp_err opt_max_bytes(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    return int_in_range("max_bytes", v, TRACE_OPT_MAX_BYTES_MIN, TRACE_OPT_MAX_BYTES_MAX,
                        &o->max_bytes, why, why_len);
}

/* Seconds, integer or real, or null. */
static wamp_err opt_duration(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    if (json_is_null(v)) {
        o->duration_ns = 0;
        return WAMP_OK;
    }
    if (!json_is_number(v)) {
        return fail_why(why, why_len, "duration: must be a number of seconds (1 to %d) or null",
                        TRACE_OPT_DURATION_MAX);
    }
    double s = json_number_value(v);
    if (!(s >= 1.0 && s <= (double)TRACE_OPT_DURATION_MAX)) {
        return fail_why(why, why_len, "duration: must be from 1 to %d seconds (got %g)",
                        TRACE_OPT_DURATION_MAX, s);
    }
    o->duration_ns = (uint64_t)(s * 1e9 + 0.5); /* s in [1, 86400]: no overflow, no libm */
    return WAMP_OK;
}

static wamp_err opt_max_records(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    if (json_is_null(v)) {
        o->max_records = 0;
        return WAMP_OK;
    }
    return int_in_range("max_records", v, 1, TRACE_OPT_MAX_RECORDS_MAX, &o->max_records, why,
                        why_len);
}

static wamp_err opt_batching_period(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    uint64_t x = 0;
    wamp_err err = int_in_range("batching_period", v, TRACE_OPT_BATCH_MIN, TRACE_OPT_BATCH_MAX, &x,
                                why, why_len);
    if (err == WAMP_OK) {
        o->batching_period = (uint32_t)x;
    }
    return err;
}

static wamp_err opt_persist(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    if (!json_is_boolean(v)) {
        return fail_why(why, why_len, "persist: must be true or false");
    }
    o->persist = json_is_true(v);
    return WAMP_OK;
}

static wamp_err opt_persist_max_bytes(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    return int_in_range("persist_max_bytes", v, TRACE_OPT_PERSIST_BYTES_MIN,
                        TRACE_OPT_PERSIST_BYTES_MAX, &o->persist_max_bytes, why, why_len);
}

/* Whole seconds, or null (no age limit). */
static wamp_err opt_persist_max_age(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    uint64_t s = 0;
    if (json_is_null(v)) {
        o->persist_max_age_ns = 0;
        return WAMP_OK;
    }
    wamp_err err =
            int_in_range("persist_max_age", v, 1, TRACE_OPT_PERSIST_AGE_MAX, &s, why, why_len);
    if (err == WAMP_OK) {
        o->persist_max_age_ns = s * 1000000000u;
    }
    return err;
}

static wamp_err opt_trace_level(const json_t *v, trace_options *o, char *why, size_t why_len)
{
    const char *s = plain_string(v);
    if (s && strcmp(s, "message") == 0) {
        o->action_level = false;
        return WAMP_OK;
    }
    if (s && strcmp(s, "action") == 0) {
        o->action_level = true;
        return WAMP_OK;
    }
    return fail_why(why, why_len, "trace_level: must be \"message\" or \"action\"");
}

typedef wamp_err (*opt_fn)(const json_t *v, trace_options *o, char *why, size_t why_len);

/* The table of ../mgmt/README.md "trace_options", in its order (also the order of the
 * effective-options echo). A filter list given as null is absent: everything passes, as the echo
 * shows it (null), so that a trace's options as read start a trace with the same ones. */
static const struct opt_spec {
    const char *key;
    opt_fn parse;
    bool null_is_absent;
} opt_specs[] = {
        {"realms", opt_realms, true},
        {"uris", opt_uris, true},
        {"msg_types", opt_msg_types, true},
        {"direction", opt_direction, false},
        {"session_ids", opt_session_ids, true},
        {"authids", opt_authids, true},
        {"authroles", opt_authroles, true},
        {"trace_app_payload", opt_trace_app_payload, false},
        {"limit", opt_limit, false},
        {"max_bytes", opt_max_bytes, false},
        {"duration", opt_duration, false},
        {"max_records", opt_max_records, false},
        {"batching_period", opt_batching_period, false},
        {"persist", opt_persist, false},
        {"trace_level", opt_trace_level, false},
        {"persist_max_bytes", opt_persist_max_bytes, false},
        {"persist_max_age", opt_persist_max_age, false},
};

#define N_OPT_SPECS (sizeof(opt_specs) / sizeof(opt_specs[0]))

static bool known_key(const char *k)
{
    for (size_t i = 0; i < N_OPT_SPECS; i++) {
        if (strcmp(opt_specs[i].key, k) == 0) {
            return true;
        }
    }
    return false;
}

/* The effective value of key for the echo: lists as given (null when absent), scalars with
 * their defaults filled in. */
static json_t *effective(const trace_options *o, const json_t *given, const char *key)
{
    const json_t *v = given ? json_object_get(given, key) : NULL;
    if (strcmp(key, "direction") == 0) {
        return json_string(o->direction == TRACE_RX   ? "rx"
                           : o->direction == TRACE_TX ? "tx"
                                                      : "both");
    }
    if (strcmp(key, "trace_app_payload") == 0) {
        return json_boolean(o->trace_app_payload);
    }
    if (strcmp(key, "limit") == 0) {
        return json_integer((json_int_t)o->limit);
    }
    if (strcmp(key, "max_bytes") == 0) {
        return json_integer((json_int_t)o->max_bytes);
    }
    if (strcmp(key, "duration") == 0) {
        return v ? json_deep_copy(v) : json_null();
    }
    if (strcmp(key, "max_records") == 0) {
        return o->max_records ? json_integer((json_int_t)o->max_records) : json_null();
    }
    if (strcmp(key, "batching_period") == 0) {
        return json_integer((json_int_t)o->batching_period);
    }
    if (strcmp(key, "persist") == 0) {
        return json_boolean(o->persist);
    }
    if (strcmp(key, "persist_max_bytes") == 0) {
        return json_integer((json_int_t)o->persist_max_bytes);
    }
    if (strcmp(key, "persist_max_age") == 0) {
        return o->persist_max_age_ns
                       ? json_integer((json_int_t)(o->persist_max_age_ns / 1000000000u))
                       : json_null();
    }
    if (strcmp(key, "trace_level") == 0) {
        return json_string(o->action_level ? "action" : "message");
    }
    return v ? json_deep_copy(v) : json_null();
}

wamp_err trace_options_parse(const json_t *j, trace_options *out, char *why, size_t why_len)
{
    return trace_options_parse_with(j, NULL, out, why, why_len);
}

/* A configured default: 0 = builtin, otherwise clamped into [lo, hi]. */
static uint64_t default_in_range(uint64_t v, uint64_t builtin, uint64_t lo, uint64_t hi)
{
    if (v == 0) {
        return builtin;
    }
    return v < lo ? lo : v > hi ? hi : v;
}

wamp_err trace_options_parse_with(const json_t *j, const trace_option_defaults *defaults,
                                  trace_options *out, char *why, size_t why_len)
{
    wamp_err err = WAMP_OK;
    memset(out, 0, sizeof(*out));
    out->msg_types[0] = out->msg_types[1] = UINT64_MAX;
    out->direction = TRACE_RX | TRACE_TX;
    out->trace_app_payload = true;
    out->limit = (size_t)default_in_range(defaults ? defaults->limit : 0, TRACE_OPT_LIMIT_DEFAULT,
                                          1, TRACE_OPT_LIMIT_MAX);
    out->max_bytes =
            default_in_range(defaults ? defaults->max_bytes : 0, TRACE_OPT_MAX_BYTES_DEFAULT,
                             TRACE_OPT_MAX_BYTES_MIN, TRACE_OPT_MAX_BYTES_MAX);
    out->batching_period = TRACE_OPT_BATCH_DEFAULT;
    out->persist_max_bytes = default_in_range(
            defaults ? defaults->persist_max_bytes : 0, TRACE_OPT_PERSIST_BYTES_DEFAULT,
            TRACE_OPT_PERSIST_BYTES_MIN, TRACE_OPT_PERSIST_BYTES_MAX);
    out->persist_max_age_ns = defaults && defaults->persist_max_age_s
                                      ? (defaults->persist_max_age_s > TRACE_OPT_PERSIST_AGE_MAX
                                                 ? TRACE_OPT_PERSIST_AGE_MAX
                                                 : defaults->persist_max_age_s) *
                                                1000000000u
                                      : 0;
    if (json_is_null(j)) {
        j = NULL;
    }
    if (j && !json_is_object(j)) {
        err = fail_why(why, why_len, "trace_options: must be an object (or null for defaults)");
        goto fail;
    }
    if (j) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)j, k, v)
        {
            if (!known_key(k)) {
                err = fail_why(why, why_len, "%s: unknown option", k);
                goto fail;
            }
        }
        for (size_t i = 0; i < N_OPT_SPECS; i++) {
            v = json_object_get(j, opt_specs[i].key);
            if (v && !(json_is_null(v) && opt_specs[i].null_is_absent)) {
                err = opt_specs[i].parse(v, out, why, why_len);
                if (err != WAMP_OK) {
                    goto fail;
                }
            }
        }
    }
    if (out->action_level && out->direction != (TRACE_RX | TRACE_TX)) {
        /* An action trace filters on the anchor, which the router always receives. */
        err = fail_why(why, why_len,
                       "direction: must be \"both\" with trace_level \"action\" (the filter "
                       "applies to each action's anchor message)");
        goto fail;
    }
    out->json = json_object();
    if (!out->json) {
        err = WAMP_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < N_OPT_SPECS; i++) {
        if (json_object_set_new(out->json, opt_specs[i].key, effective(out, j, opt_specs[i].key)) !=
            0) {
            err = WAMP_ENOMEM;
            goto fail;
        }
    }
    return WAMP_OK;

fail:
    if (err == WAMP_ENOMEM) {
        fail_why(why, why_len, "trace_options: out of memory");
    }
    trace_options_fini(out);
    return err;
}

static void free_strings(char **list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i]);
    }
    free(list);
}

void trace_options_fini(trace_options *o)
{
    if (!o) {
        return;
    }
    free_strings(o->realms, o->n_realms);
    free_strings(o->authids, o->n_authids);
    free_strings(o->authroles, o->n_authroles);
    for (size_t i = 0; i < o->n_uris; i++) {
        free(o->uris[i].uri);
    }
    free(o->uris);
    free(o->session_ids);
    json_decref(o->json);
    memset(o, 0, sizeof(*o));
}
