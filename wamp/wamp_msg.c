/* wamp_msg.c: structural validation of decoded WAMP messages, type names and builders.
 * One static table describes every message type (spec "Message Definitions"); wamp_msg_parse
 * walks it, so arity and field rules live in one place. */
#include "wamp_msg.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "wamp_rd.h"

/* What one element of a message must be, and which wamp_msg slot receives it. */
enum field_kind {
    FK_NONE = 0,
    FK_ID,      /* id in [1, 2^53] -> m->id */
    FK_ID2,     /* id in [1, 2^53] -> m->id2 */
    FK_REQTYPE, /* known message code -> m->req_type (ERROR only) */
    FK_DICT,    /* object -> m->dict */
    FK_URI,     /* string without NUL bytes -> m->uri (URIs, AuthMethod, Signature) */
    FK_ARGS,    /* array -> m->args */
    FK_KWARGS   /* object -> m->kwargs */
};

/* Fields after the type code: at most 6 (ERROR). */
#define MSG_MAX_FIELDS 6

struct msg_spec {
    const char *name;  /* "CALL"; NULL for codes that are not WAMP messages */
    const char *title; /* "Call" */
    unsigned char min; /* arity range, type code included */
    unsigned char max;
    unsigned char kind[MSG_MAX_FIELDS];
    const char *field[MSG_MAX_FIELDS]; /* spec names, for diagnostics */
};

#define SPEC(code, nm, ttl, lo, hi, kinds, fields) \
    [code] = {.name = nm, .title = ttl, .min = lo, .max = hi, .kind = kinds, .field = fields}
#define K(...)      \
    {               \
        __VA_ARGS__ \
    }
#define N(...)      \
    {               \
        __VA_ARGS__ \
    }

static const struct msg_spec msg_specs[WAMP_MSG_TYPE_MAX + 1] = {
        SPEC(WAMP_MSG_HELLO, "HELLO", "Hello", 3, 3, K(FK_URI, FK_DICT), N("Realm", "Details")),
        SPEC(WAMP_MSG_WELCOME, "WELCOME", "Welcome", 3, 3, K(FK_ID, FK_DICT),
             N("Session", "Details")),
        /* (Arguments and ArgumentsKw since the spec's RFC draft; xconn clients send them) */
        SPEC(WAMP_MSG_ABORT, "ABORT", "Abort", 3, 5, K(FK_DICT, FK_URI, FK_ARGS, FK_KWARGS),
             N("Details", "Reason", "Arguments", "ArgumentsKw")),
        SPEC(WAMP_MSG_CHALLENGE, "CHALLENGE", "Challenge", 3, 3, K(FK_URI, FK_DICT),
             N("AuthMethod", "Extra")),
        SPEC(WAMP_MSG_AUTHENTICATE, "AUTHENTICATE", "Authenticate", 3, 3, K(FK_URI, FK_DICT),
             N("Signature", "Extra")),
        SPEC(WAMP_MSG_GOODBYE, "GOODBYE", "Goodbye", 3, 3, K(FK_DICT, FK_URI),
             N("Details", "Reason")),
        SPEC(WAMP_MSG_ERROR, "ERROR", "Error", 5, 7,
             K(FK_REQTYPE, FK_ID, FK_DICT, FK_URI, FK_ARGS, FK_KWARGS),
             N("REQUEST.Type", "REQUEST.Request", "Details", "Error", "Arguments", "ArgumentsKw")),
        SPEC(WAMP_MSG_PUBLISH, "PUBLISH", "Publish", 4, 6,
             K(FK_ID, FK_DICT, FK_URI, FK_ARGS, FK_KWARGS),
             N("Request", "Options", "Topic", "Arguments", "ArgumentsKw")),
        SPEC(WAMP_MSG_PUBLISHED, "PUBLISHED", "Published", 3, 3, K(FK_ID, FK_ID2),
             N("PUBLISH.Request", "Publication")),
        SPEC(WAMP_MSG_SUBSCRIBE, "SUBSCRIBE", "Subscribe", 4, 4, K(FK_ID, FK_DICT, FK_URI),
             N("Request", "Options", "Topic")),
        SPEC(WAMP_MSG_SUBSCRIBED, "SUBSCRIBED", "Subscribed", 3, 3, K(FK_ID, FK_ID2),
             N("SUBSCRIBE.Request", "Subscription")),
        SPEC(WAMP_MSG_UNSUBSCRIBE, "UNSUBSCRIBE", "Unsubscribe", 3, 3, K(FK_ID, FK_ID2),
             N("Request", "SUBSCRIBED.Subscription")),
        SPEC(WAMP_MSG_UNSUBSCRIBED, "UNSUBSCRIBED", "Unsubscribed", 2, 3, K(FK_ID, FK_DICT),
             N("UNSUBSCRIBE.Request", "Details")),
        SPEC(WAMP_MSG_EVENT, "EVENT", "Event", 4, 6, K(FK_ID, FK_ID2, FK_DICT, FK_ARGS, FK_KWARGS),
             N("SUBSCRIBED.Subscription", "PUBLISHED.Publication", "Details", "Arguments",
               "ArgumentsKw")),
        SPEC(WAMP_MSG_CALL, "CALL", "Call", 4, 6, K(FK_ID, FK_DICT, FK_URI, FK_ARGS, FK_KWARGS),
             N("Request", "Options", "Procedure", "Arguments", "ArgumentsKw")),
        SPEC(WAMP_MSG_CANCEL, "CANCEL", "Cancel", 3, 3, K(FK_ID, FK_DICT),
             N("CALL.Request", "Options")),
        SPEC(WAMP_MSG_RESULT, "RESULT", "Result", 3, 5, K(FK_ID, FK_DICT, FK_ARGS, FK_KWARGS),
             N("CALL.Request", "Details", "Arguments", "ArgumentsKw")),
        SPEC(WAMP_MSG_REGISTER, "REGISTER", "Register", 4, 4, K(FK_ID, FK_DICT, FK_URI),
             N("Request", "Options", "Procedure")),
        SPEC(WAMP_MSG_REGISTERED, "REGISTERED", "Registered", 3, 3, K(FK_ID, FK_ID2),
             N("REGISTER.Request", "Registration")),
        SPEC(WAMP_MSG_UNREGISTER, "UNREGISTER", "Unregister", 3, 3, K(FK_ID, FK_ID2),
             N("Request", "REGISTERED.Registration")),
        SPEC(WAMP_MSG_UNREGISTERED, "UNREGISTERED", "Unregistered", 2, 3, K(FK_ID, FK_DICT),
             N("UNREGISTER.Request", "Details")),
        SPEC(WAMP_MSG_INVOCATION, "INVOCATION", "Invocation", 4, 6,
             K(FK_ID, FK_ID2, FK_DICT, FK_ARGS, FK_KWARGS),
             N("Request", "REGISTERED.Registration", "Details", "Arguments", "ArgumentsKw")),
        SPEC(WAMP_MSG_INTERRUPT, "INTERRUPT", "Interrupt", 3, 3, K(FK_ID, FK_DICT),
             N("INVOCATION.Request", "Options")),
        SPEC(WAMP_MSG_YIELD, "YIELD", "Yield", 3, 5, K(FK_ID, FK_DICT, FK_ARGS, FK_KWARGS),
             N("INVOCATION.Request", "Options", "Arguments", "ArgumentsKw")),
};

#undef SPEC
#undef K
#undef N

static const struct msg_spec *spec_of(long long type)
{
    if (type < 0 || type > WAMP_MSG_TYPE_MAX || !msg_specs[type].name) {
        return NULL;
    }
    return &msg_specs[type];
}

bool wamp_msg_type_is_known(int type)
{
    return spec_of(type) != NULL;
}

const char *wamp_msg_type_name(int type)
{
    const struct msg_spec *s = spec_of(type);
    return s ? s->name : "UNKNOWN";
}

const char *wamp_msg_type_title(int type)
{
    const struct msg_spec *s = spec_of(type);
    return s ? s->title : "Unknown";
}

__attribute__((format(printf, 3, 4))) static void why_set(char *why, size_t why_len,
                                                          const char *fmt, ...)
{
    if (!why || why_len == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
}

/* Spec "IDs": integers in [1, 2^53]. Reals, booleans and strings are not IDs. */
static bool id_ok(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v)) {
        return false;
    }
    json_int_t i = json_integer_value(v);
    if (i < 1 || (uint64_t)i > WAMP_ID_MAX) {
        return false;
    }
    *out = (uint64_t)i;
    return true;
}

/* Checks element idx (the idx-th field after the type code, 0-based) and stores it in *m.
 * Returns the complaint ("must be ...") or NULL when the field is fine. */
static const char *field_check(enum field_kind kind, json_t *v, wamp_msg *m)
{
    switch (kind) {
    case FK_ID:
        return id_ok(v, &m->id) ? NULL : "must be an integer in [1, 2^53]";
    case FK_ID2:
        return id_ok(v, &m->id2) ? NULL : "must be an integer in [1, 2^53]";
    case FK_REQTYPE: {
        if (!json_is_integer(v)) {
            return "must be an integer";
        }
        json_int_t t = json_integer_value(v);
        if (!spec_of(t)) {
            return "must be a known message type";
        }
        m->req_type = (wamp_msg_type)t;
        return NULL;
    }
    case FK_DICT:
        if (!json_is_object(v)) {
            return "must be a dict";
        }
        m->dict = v;
        return NULL;
    case FK_URI: {
        if (!json_is_string(v)) {
            return "must be a string";
        }
        const char *s = json_string_value(v);
        /* JSON_ALLOW_NUL and MessagePack let "\u0000" through; C strings would truncate. */
        if (memchr(s, '\0', json_string_length(v))) {
            return "must not contain NUL bytes";
        }
        m->uri = s;
        m->uri_len = json_string_length(v);
        return NULL;
    }
    case FK_ARGS:
        if (!json_is_array(v)) {
            return "must be a list";
        }
        m->args = v;
        return NULL;
    case FK_KWARGS:
        if (!json_is_object(v)) {
            return "must be a dict";
        }
        m->kwargs = v;
        return NULL;
    case FK_NONE:
        break;
    }
    return "is not expected";
}

wamp_err wamp_msg_parse(json_t *root, wamp_msg *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_array(root)) {
        why_set(why, why_len, "message must be a list");
        goto fail;
    }
    size_t n = json_array_size(root);
    if (n == 0) {
        why_set(why, why_len, "message must not be empty");
        goto fail;
    }
    json_t *code = json_array_get(root, 0);
    if (!json_is_integer(code)) {
        why_set(why, why_len, "message type must be an integer");
        goto fail;
    }
    json_int_t type = json_integer_value(code);
    const struct msg_spec *spec = spec_of(type);
    if (!spec) {
        why_set(why, why_len, "unknown message type %lld", (long long)type);
        goto fail;
    }
    if (n < spec->min || n > spec->max) {
        if (spec->min == spec->max) {
            why_set(why, why_len, "%s: expected %u elements, got %zu", spec->name, spec->min, n);
        } else {
            why_set(why, why_len, "%s: expected %u to %u elements, got %zu", spec->name, spec->min,
                    spec->max, n);
        }
        goto fail;
    }
    out->type = (wamp_msg_type)type;
    for (size_t i = 1; i < n; i++) {
        const char *bad = field_check(spec->kind[i - 1], json_array_get(root, i), out);
        if (bad) {
            why_set(why, why_len, "%s: element %zu (%s) %s", spec->name, i, spec->field[i - 1],
                    bad);
            goto fail;
        }
    }
    out->root = root;
    return WAMP_OK;

fail:
    json_decref(root);
    memset(out, 0, sizeof(*out));
    return WAMP_EPROTO;
}

/* Element i's place in a message of type spec: true for Arguments / ArgumentsKw. */
static bool is_payload(const struct msg_spec *spec, size_t i)
{
    return i >= 1 && i - 1 < MSG_MAX_FIELDS &&
           (spec->kind[i - 1] == FK_ARGS || spec->kind[i - 1] == FK_KWARGS);
}

/* Long: one pass of the token reader over a whole message, field by field against the message
 * type's layout, validating the rest before reporting a bad field; split, the reader's state
 * would travel through every step. */
wamp_err wamp_msg_parse_bytes(wamp_ser ser, const void *data, size_t len, wamp_msg *out, char *why,
                              size_t why_len)
{
    memset(out, 0, sizeof(*out));
    wamp_rd r;
    wamp_tok t;
    json_t *root = NULL, *v = NULL;
    wamp_slice raw[2] = {{NULL, 0}, {NULL, 0}};
    wamp_err err;
    /* One pass: the envelope is decoded and the payload validated as the reader reaches them,
     * and the message is checked only once all of it has read as well-formed. */
    wamp_rd_init_one_pass(&r, ser, data, len);
    r.share_empty_map = true; /* the envelope's {}: never modified (wamp_msg.h) */
    if ((err = wamp_rd_next(&r, &t)) != WAMP_OK) {
        goto rd_fail;
    }
    if (t.kind != WAMP_TOK_ARRAY) {
        /* Validate the rest first: malformed input is reported as such. */
        while (!wamp_rd_done(&r) && (err = wamp_rd_next(&r, &t)) == WAMP_OK) {
        }
        if (err != WAMP_OK) {
            goto rd_fail;
        }
        why_set(why, why_len, "message must be a list");
        err = WAMP_EPROTO;
        goto fail;
    }
    size_t n = 0;
    const struct msg_spec *spec = NULL;
    root = json_array();
    if (!root) {
        err = WAMP_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; !wamp_rd_at_end(&r); i++, n++) {
        /* Only what the checks look at is built: the code and the elements its type has, and of
         * those a list or dict only where a dict belongs (at most WAMP_MSG_VALUES_MAX values).
         * Elements past the type's arity, those after an unknown code, and a list or dict in
         * the place of the code, an id or a URI are validated but not built: the message is
         * refused for them anyway, and as jansson values they would cost many times their size
         * (a "[]" some 130 bytes). */
        bool extra = spec ? i >= spec->max : i > 0;
        /* (spec is known from the element after the code on) */
        bool scalar_place =
                !extra && (!spec || (!is_payload(spec, i) && spec->kind[i - 1] != FK_DICT));
        bool misplaced = scalar_place && wamp_rd_next_is_container(&r);
        if (extra || misplaced) {
            const unsigned char *skipped;
            size_t skipped_len;
            if ((err = wamp_rd_skip(&r, &skipped, &skipped_len, NULL)) != WAMP_OK) {
                goto rd_fail;
            }
            /* A list or dict in a scalar's place: wamp_msg_parse() refuses the null as it would
             * have refused it ("must be an integer", "must be a string"). */
            if (misplaced && json_array_append_new(root, json_null()) != 0) {
                err = WAMP_ENOMEM;
                goto fail;
            }
            continue;
        }
        if (spec && is_payload(spec, i)) {
            wamp_tok_kind kind;
            size_t k = spec->kind[i - 1] == FK_ARGS ? 0 : 1;
            if ((err = wamp_rd_skip(&r, &raw[k].p, &raw[k].len, &kind)) != WAMP_OK) {
                goto rd_fail;
            }
            if (kind != (k == 0 ? WAMP_TOK_ARRAY : WAMP_TOK_MAP)) {
                /* Validate the rest, then report the field. */
                while (!wamp_rd_done(&r) && (err = wamp_rd_next(&r, &t)) == WAMP_OK) {
                }
                if (err != WAMP_OK) {
                    goto rd_fail;
                }
                why_set(why, why_len, "%s: element %zu (%s) must be a %s", spec->name, i,
                        spec->field[i - 1], k == 0 ? "list" : "dict");
                err = WAMP_EPROTO;
                goto fail;
            }
            continue;
        }
        wamp_rd_limit_values(&r, WAMP_MSG_VALUES_MAX);
        err = wamp_rd_json(&r, &v);
        if (err == WAMP_ERANGE) {
            /* Malformed input further on is reported as such: read the rest first. */
            char range_why[sizeof(r.why)];
            snprintf(range_why, sizeof(range_why), "%s", r.why);
            r.err = WAMP_OK;
            while (!wamp_rd_done(&r) && (err = wamp_rd_next(&r, &t)) == WAMP_OK) {
            }
            if (err == WAMP_OK) {
                snprintf(r.why, sizeof(r.why), "%s", range_why);
            }
            err = WAMP_EPROTO;
        }
        if (err != WAMP_OK && spec && r.values_left == 0) {
            why_set(why, why_len, "%s: element %zu (%s) holds %s", spec->name, i,
                    spec->field[i - 1], wamp_rd_why(&r));
            goto fail;
        }
        if (err != WAMP_OK) {
            goto rd_fail;
        }
        if (json_array_append_new(root, v) != 0) {
            v = NULL;
            err = WAMP_ENOMEM;
            goto fail;
        }
        if (i == 0 && json_is_integer(v)) {
            spec = spec_of(json_integer_value(v));
        }
        v = NULL;
    }
    if ((err = wamp_rd_next(&r, &t)) != WAMP_OK) {
        goto rd_fail;
    }
    wamp_rd_fini(&r);
    if (spec && (n < spec->min || n > spec->max)) {
        /* wamp_msg_parse() sees the envelope only: the arity is checked on the whole. */
        if (spec->min == spec->max) {
            why_set(why, why_len, "%s: expected %u elements, got %zu", spec->name, spec->min, n);
        } else {
            why_set(why, why_len, "%s: expected %u to %u elements, got %zu", spec->name, spec->min,
                    spec->max, n);
        }
        json_decref(root);
        return WAMP_EPROTO;
    }
    err = wamp_msg_parse(root, out, why, why_len);
    if (err == WAMP_OK) {
        out->ser = ser;
        out->args_raw = raw[0];
        out->kwargs_raw = raw[1];
    }
    return err;

rd_fail:
    why_set(why, why_len, "%s", wamp_rd_why(&r));
fail:
    wamp_rd_fini(&r);
    json_decref(root);
    memset(out, 0, sizeof(*out));
    return err == WAMP_ENOMEM ? err : WAMP_EPROTO;
}

/* An id (FK_ID, FK_ID2) or a request type (FK_REQTYPE) v into its field of *out; false when it
 * is not one. */
static bool set_int_field(enum field_kind kind, uint64_t v, wamp_msg *out)
{
    if (kind == FK_ID || kind == FK_ID2) {
        if (v < 1 || v > WAMP_ID_MAX) {
            return false;
        }
        *(kind == FK_ID ? &out->id : &out->id2) = v;
        return true;
    }
    if (kind != FK_REQTYPE || v > WAMP_MSG_TYPE_MAX || !spec_of((long long)v)) {
        return false;
    }
    out->req_type = (wamp_msg_type)v;
    return true;
}

/* The URI (UTF-8, checked by the caller) of len bytes at p copied into out->uri_buf (the bytes are
 * borrowed); false for one with a NUL byte or too long for the buffer (the full parse takes
 * those). */
static bool set_uri(wamp_msg *out, const void *p, size_t len)
{
    if (len >= sizeof(out->uri_buf) || memchr(p, '\0', len)) {
        return false;
    }
    memcpy(out->uri_buf, p, len);
    out->uri_buf[len] = '\0';
    out->uri = out->uri_buf;
    out->uri_len = len;
    return true;
}

/* Element (after the code) of a message of type spec read as a scalar token into its field of
 * *out; false when it is not what the field must be. */
static bool field_token(enum field_kind kind, const wamp_tok *t, wamp_msg *out)
{
    switch (kind) {
    case FK_ID:
    case FK_ID2:
    case FK_REQTYPE:
        return t->kind == WAMP_TOK_INT && t->i >= 0 && set_int_field(kind, (uint64_t)t->i, out);
    case FK_URI:
        return t->kind == WAMP_TOK_STR && set_uri(out, t->p, t->len);
    default:
        return false;
    }
}

/* Element n (after the code) of a message of type spec into *out; false when it is not what
 * the message must hold there (or the reader failed). */
static bool field_read(wamp_rd *r, const struct msg_spec *spec, size_t n, wamp_msg *out)
{
    enum field_kind kind = spec->kind[n - 1];
    if (kind == FK_ARGS || kind == FK_KWARGS) {
        wamp_slice *raw = kind == FK_ARGS ? &out->args_raw : &out->kwargs_raw;
        wamp_tok_kind k;
        return wamp_rd_skip(r, &raw->p, &raw->len, &k) == WAMP_OK &&
               k == (kind == FK_ARGS ? WAMP_TOK_ARRAY : WAMP_TOK_MAP);
    }
    if (kind == FK_DICT) {
        json_t *v = NULL;
        wamp_rd_limit_values(r, WAMP_MSG_VALUES_MAX);
        if (wamp_rd_json(r, &v) != WAMP_OK || !json_is_object(v)) {
            json_decref(v);
            return false;
        }
        out->dict = v;
        return true;
    }
    wamp_tok t;
    return wamp_rd_next(r, &t) == WAMP_OK && field_token(kind, &t, out);
}

/* A MessagePack integer in [0, 2^64 - 1] in its unsigned forms at *p (before end), *p moved
 * past it; false for anything else. */
static bool mp_uint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    const unsigned char *q = *p;
    if (q >= end) {
        return false;
    }
    unsigned char tag = *q++;
    if (tag <= 0x7f) {
        *v = tag;
        *p = q;
        return true;
    }
    size_t len = (size_t)1 << ((tag - 0xcc) & 3);
    if (tag < 0xcc || tag > 0xcf || (size_t)(end - q) < len) {
        return false;
    }
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        x = x << 8 | q[i];
    }
    *v = x;
    *p = q + len;
    return true;
}

/* One element of the envelope (not the payload) of a MessagePack message in the forms clients
 * write (unsigned integers, a string of up to 255 bytes, the empty map) at *p, *p moved past it;
 * false for anything else (the reader then takes it). */
static bool mp_field(enum field_kind kind, const unsigned char **p, const unsigned char *end,
                     wamp_msg *out)
{
    uint64_t v;
    const unsigned char *q = *p;
    if (kind == FK_ID || kind == FK_ID2 || kind == FK_REQTYPE) {
        return mp_uint(p, end, &v) && set_int_field(kind, v, out);
    }
    if (kind == FK_DICT) {
        if (q >= end || *q != 0x80) {
            return false;
        }
        *p = q + 1;
        out->dict = wamp_rd_empty_map(); /* never modified (wamp_msg.h) */
        return out->dict != NULL;
    }
    if (kind != FK_URI || q >= end) {
        return false;
    }
    size_t len;
    if ((*q & 0xe0) == 0xa0) {
        len = *q++ & 0x1fu;
    } else if (*q == 0xd9 && end - q >= 2) {
        len = q[1];
        q += 2;
    } else {
        return false;
    }
    if ((size_t)(end - q) < len || !wamp_utf8_valid(q, len) || !set_uri(out, q, len)) {
        return false;
    }
    *p = q + len;
    return true;
}

/* parse_fields() of MessagePack: the envelope read from the bytes themselves (the token reader
 * costs more than the few forms it holds), the payload through the reader, started inside the
 * message's array. false for anything else (what it set in out is the caller's to release). */
static bool mp_envelope(const unsigned char *d, size_t len, wamp_msg *out)
{
    if (len < 2 || (d[0] & 0xf0) != 0x90 || d[1] > 0x7f) {
        return false;
    }
    const unsigned char *p = d + 2, *end = d + len;
    size_t count = d[0] & 0x0fu;
    const struct msg_spec *spec = spec_of(d[1]);
    if (!spec || count < spec->min || count > spec->max) {
        return false;
    }
    out->type = (wamp_msg_type)d[1];
    size_t n = 1;
    for (; n < count && spec->kind[n - 1] != FK_ARGS && spec->kind[n - 1] != FK_KWARGS; n++) {
        if (!mp_field(spec->kind[n - 1], &p, end, out)) {
            return false;
        }
    }
    if (n == count) {
        return p == end;
    }
    wamp_rd r;
    wamp_tok t;
    wamp_rd_init_in_array(&r, WAMP_SER_MSGPACK, d, len, (size_t)(p - d), count - n);
    bool ok = true;
    for (; ok && n < count; n++) {
        ok = field_read(&r, spec, n, out);
    }
    ok = ok && wamp_rd_next(&r, &t) == WAMP_OK && wamp_rd_done(&r);
    wamp_rd_fini(&r);
    return ok;
}

/* Forgets what a parse into fields that failed set in out (its dict). */
static void fields_reset(wamp_msg *out)
{
    json_decref(out->dict);
    memset(out, 0, offsetof(wamp_msg, uri_buf));
}

/* wamp_msg_parse_bytes_fields() of a well-formed message whose every element is what its type
 * requires: the envelope read into out's fields, no list. false for anything else (out zeroed,
 * nothing held): the full parse then reads it and says what is wrong. */
static bool parse_fields(wamp_ser ser, const void *data, size_t len, wamp_msg *out)
{
    memset(out, 0, offsetof(wamp_msg, uri_buf));
    if (ser == WAMP_SER_MSGPACK) {
        if (mp_envelope(data, len, out)) {
            out->ser = ser;
            return true;
        }
        fields_reset(out);
    }
    wamp_rd r;
    wamp_tok t;
    const struct msg_spec *spec = NULL;
    size_t n = 0;
    wamp_rd_init_one_pass(&r, ser, data, len);
    r.share_empty_map = true; /* the envelope's {}: never modified (wamp_msg.h) */
    bool ok = wamp_rd_next(&r, &t) == WAMP_OK && t.kind == WAMP_TOK_ARRAY && !wamp_rd_at_end(&r) &&
              wamp_rd_next(&r, &t) == WAMP_OK && t.kind == WAMP_TOK_INT &&
              (spec = spec_of(t.i)) != NULL;
    for (n = 1; ok && !wamp_rd_at_end(&r); n++) {
        ok = n < spec->max && field_read(&r, spec, n, out);
    }
    ok = ok && n >= spec->min && wamp_rd_next(&r, &t) == WAMP_OK && wamp_rd_done(&r);
    wamp_rd_fini(&r);
    if (!ok) {
        fields_reset(out);
        return false;
    }
    out->type = (wamp_msg_type)(spec - msg_specs);
    out->ser = ser;
    return true;
}

wamp_err wamp_msg_parse_bytes_fields(wamp_ser ser, const void *data, size_t len, wamp_msg *out,
                                     char *why, size_t why_len)
{
    if (parse_fields(ser, data, len, out)) {
        return WAMP_OK;
    }
    return wamp_msg_parse_bytes(ser, data, len, out, why, why_len);
}

json_t *wamp_msg_code_value(int type)
{
    static json_t *codes[WAMP_MSG_TYPE_MAX + 1];
    if (!spec_of(type)) {
        return NULL;
    }
    if (!codes[type]) {
        codes[type] = json_integer(type);
    }
    return json_incref(codes[type]);
}

wamp_err wamp_msg_make_root(wamp_msg *m)
{
    if (m->root) {
        return WAMP_OK;
    }
    const struct msg_spec *spec = spec_of(m->type);
    json_t *a = json_array();
    bool ok = a && spec && json_array_append_new(a, wamp_msg_code_value((int)m->type)) == 0;
    json_t *dict = m->dict; /* m's reference: the list takes it */
    for (size_t i = 0; ok && i < MSG_MAX_FIELDS; i++) {
        json_t *v = NULL;
        enum field_kind kind = spec->kind[i];
        if (kind == FK_ID || kind == FK_ID2) {
            v = json_integer((json_int_t)(kind == FK_ID ? m->id : m->id2));
        } else if (kind == FK_REQTYPE) {
            v = json_integer(m->req_type);
        } else if (kind == FK_URI) {
            /* UTF-8 without NUL bytes: the reader and parse_fields() checked it. */
            v = json_stringn_nocheck(m->uri, strlen(m->uri));
        } else if (kind == FK_DICT && dict) {
            v = dict;
            dict = NULL;
        } else {
            break; /* the payload, or an absent optional dict: the envelope ends */
        }
        /* json_array_append_new() consumes v, even when it fails (v NULL included). */
        ok = json_array_append_new(a, v) == 0;
    }
    if (!ok) {
        json_decref(a);
        if (!dict) {
            m->dict = NULL; /* its reference went with the list */
        }
        return WAMP_ENOMEM;
    }
    m->root = a;
    return WAMP_OK;
}

wamp_err wamp_msg_decode_payload(wamp_msg *m, char *why, size_t why_len)
{
    if (m->args || m->kwargs || !m->ser) {
        return WAMP_OK;
    }
    static const char *const names[] = {"Arguments", "ArgumentsKw"};
    const wamp_slice *raw[] = {&m->args_raw, &m->kwargs_raw};
    json_t *v[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        if (raw[k]->len == 0) {
            continue;
        }
        wamp_rd r;
        wamp_rd_init(&r, m->ser, raw[k]->p, raw[k]->len);
        wamp_rd_limit_values(&r, WAMP_MSG_VALUES_MAX);
        wamp_err err = wamp_rd_json(&r, &v[k]);
        if (err != WAMP_OK) {
            why_set(why, why_len, "%s: %s", names[k], wamp_rd_why(&r));
            wamp_rd_fini(&r);
            json_decref(v[0]);
            return err;
        }
        wamp_rd_fini(&r);
    }
    m->args = v[0];
    m->kwargs = v[1];
    m->payload_owned = true;
    return WAMP_OK;
}

const char *wamp_msg_ppt_check(const json_t *dict, bool *present)
{
    static const char *const known[] = {"ppt_scheme", "ppt_serializer", "ppt_cipher", "ppt_keyid"};
    *present = false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)(uintptr_t)dict, key, v)
    {
        if (strncmp(key, "ppt_", 4) != 0) {
            continue;
        }
        *present = true;
        bool is_known = false;
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
            is_known = is_known || strcmp(key, known[i]) == 0;
        }
        if (!is_known) {
            return "unknown payload passthru option (ppt_scheme, ppt_serializer, ppt_cipher and "
                   "ppt_keyid are defined)";
        }
        if (!json_is_string(v)) {
            return "payload passthru options ppt_* must be strings";
        }
    }
    json_t *scheme = json_object_get(dict, "ppt_scheme");
    if (*present && json_string_length(scheme) == 0) {
        return "payload passthru mode needs ppt_scheme (a non-empty string)";
    }
    return NULL;
}

int wamp_msg_ppt_copy(json_t *dst, const json_t *src)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)(uintptr_t)src, key, v)
    {
        if (strncmp(key, "ppt_", 4) == 0 && json_object_set(dst, key, v) != 0) {
            return -1;
        }
    }
    return 0;
}

void wamp_msg_fini(wamp_msg *m)
{
    if (!m) {
        return;
    }
    if (m->payload_owned) {
        json_decref(m->args);
        json_decref(m->kwargs);
    }
    if (!m->root) {
        json_decref(m->dict); /* parsed into fields: m's own reference */
    }
    json_decref(m->root);
    memset(m, 0, offsetof(wamp_msg, uri_buf));
}

/* Builders. Every item handed to msg_build() is owned by it: items are appended in order and
 * all of them are released if any is NULL (an earlier allocation failed) or an append fails, so
 * the public builders can create their items inline without leaking on the failure path. */
static json_t *msg_build(json_t **items, size_t n)
{
    json_t *a = json_array();
    bool ok = a != NULL;
    for (size_t i = 0; i < n; i++) {
        if (!items[i]) {
            ok = false;
        } else if (ok) {
            /* json_array_append_new() consumes the item even when it fails. */
            ok = json_array_append_new(a, items[i]) == 0;
        } else {
            json_decref(items[i]);
        }
    }
    if (!ok) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *id_new(uint64_t id)
{
    return json_integer((json_int_t)id);
}

/* The Details/Options {} of every message built without one: the shared empty object (see
 * wamp_rd_empty_map()), not a new one per message. */
static json_t *dict_or_empty(json_t *dict_take)
{
    return dict_take ? dict_take : wamp_rd_empty_map();
}

/* Appends the optional Arguments / ArgumentsKw tail to items[*n]. Arguments is emitted as []
 * when only ArgumentsKw is given, because ArgumentsKw can only follow Arguments. */
static void tail_add(json_t **items, size_t *n, json_t *args_take, json_t *kwargs_take)
{
    if (kwargs_take) {
        items[(*n)++] = args_take ? args_take : json_array();
        items[(*n)++] = kwargs_take;
    } else if (args_take) {
        items[(*n)++] = args_take;
    }
}

json_t *wamp_msg_new_welcome(uint64_t session, json_t *details_take)
{
    json_t *items[] = {json_integer(WAMP_MSG_WELCOME), id_new(session),
                       dict_or_empty(details_take)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_abort(json_t *details_take, const char *reason)
{
    json_t *items[] = {json_integer(WAMP_MSG_ABORT), dict_or_empty(details_take),
                       json_string(reason)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_goodbye(json_t *details_take, const char *reason)
{
    json_t *items[] = {json_integer(WAMP_MSG_GOODBYE), dict_or_empty(details_take),
                       json_string(reason)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_error(wamp_msg_type req_type, uint64_t request, json_t *details_take,
                           const char *error, json_t *args_take, json_t *kwargs_take)
{
    json_t *items[7] = {json_integer(WAMP_MSG_ERROR), json_integer(req_type), id_new(request),
                        dict_or_empty(details_take), json_string(error)};
    size_t n = 5;
    tail_add(items, &n, args_take, kwargs_take);
    return msg_build(items, n);
}

json_t *wamp_msg_new_published(uint64_t request, uint64_t publication)
{
    json_t *items[] = {json_integer(WAMP_MSG_PUBLISHED), id_new(request), id_new(publication)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_subscribed(uint64_t request, uint64_t subscription)
{
    json_t *items[] = {json_integer(WAMP_MSG_SUBSCRIBED), id_new(request), id_new(subscription)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_unsubscribed(uint64_t request)
{
    json_t *items[] = {json_integer(WAMP_MSG_UNSUBSCRIBED), id_new(request)};
    return msg_build(items, 2);
}

json_t *wamp_msg_new_event(uint64_t subscription, uint64_t publication, json_t *details_take,
                           json_t *args_take, json_t *kwargs_take)
{
    json_t *items[6] = {json_integer(WAMP_MSG_EVENT), id_new(subscription), id_new(publication),
                        dict_or_empty(details_take)};
    size_t n = 4;
    tail_add(items, &n, args_take, kwargs_take);
    return msg_build(items, n);
}

json_t *wamp_msg_new_result(uint64_t request, json_t *details_take, json_t *args_take,
                            json_t *kwargs_take)
{
    json_t *items[5] = {json_integer(WAMP_MSG_RESULT), id_new(request),
                        dict_or_empty(details_take)};
    size_t n = 3;
    tail_add(items, &n, args_take, kwargs_take);
    return msg_build(items, n);
}

json_t *wamp_msg_new_registered(uint64_t request, uint64_t registration)
{
    json_t *items[] = {json_integer(WAMP_MSG_REGISTERED), id_new(request), id_new(registration)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_unregistered(uint64_t request)
{
    json_t *items[] = {json_integer(WAMP_MSG_UNREGISTERED), id_new(request)};
    return msg_build(items, 2);
}

json_t *wamp_msg_new_invocation(uint64_t request, uint64_t registration, json_t *details_take,
                                json_t *args_take, json_t *kwargs_take)
{
    json_t *items[6] = {json_integer(WAMP_MSG_INVOCATION), id_new(request), id_new(registration),
                        dict_or_empty(details_take)};
    size_t n = 4;
    tail_add(items, &n, args_take, kwargs_take);
    return msg_build(items, n);
}

json_t *wamp_msg_new_interrupt(uint64_t request, json_t *options_take)
{
    json_t *items[] = {json_integer(WAMP_MSG_INTERRUPT), id_new(request),
                       dict_or_empty(options_take)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_hello(const char *realm, json_t *details_take)
{
    json_t *items[] = {json_integer(WAMP_MSG_HELLO), json_string(realm),
                       dict_or_empty(details_take)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_publish(uint64_t request, json_t *options_take, const char *topic,
                             json_t *args_take, json_t *kwargs_take)
{
    json_t *items[6] = {json_integer(WAMP_MSG_PUBLISH), id_new(request),
                        dict_or_empty(options_take), json_string(topic)};
    size_t n = 4;
    tail_add(items, &n, args_take, kwargs_take);
    return msg_build(items, n);
}

json_t *wamp_msg_new_subscribe(uint64_t request, json_t *options_take, const char *topic)
{
    json_t *items[] = {json_integer(WAMP_MSG_SUBSCRIBE), id_new(request),
                       dict_or_empty(options_take), json_string(topic)};
    return msg_build(items, 4);
}

json_t *wamp_msg_new_unsubscribe(uint64_t request, uint64_t subscription)
{
    json_t *items[] = {json_integer(WAMP_MSG_UNSUBSCRIBE), id_new(request), id_new(subscription)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_call(uint64_t request, json_t *options_take, const char *procedure,
                          json_t *args_take, json_t *kwargs_take)
{
    json_t *items[6] = {json_integer(WAMP_MSG_CALL), id_new(request), dict_or_empty(options_take),
                        json_string(procedure)};
    size_t n = 4;
    tail_add(items, &n, args_take, kwargs_take);
    return msg_build(items, n);
}

json_t *wamp_msg_new_register(uint64_t request, json_t *options_take, const char *procedure)
{
    json_t *items[] = {json_integer(WAMP_MSG_REGISTER), id_new(request),
                       dict_or_empty(options_take), json_string(procedure)};
    return msg_build(items, 4);
}

json_t *wamp_msg_new_unregister(uint64_t request, uint64_t registration)
{
    json_t *items[] = {json_integer(WAMP_MSG_UNREGISTER), id_new(request), id_new(registration)};
    return msg_build(items, 3);
}

json_t *wamp_msg_new_yield(uint64_t request, json_t *options_take, json_t *args_take,
                           json_t *kwargs_take)
{
    json_t *items[5] = {json_integer(WAMP_MSG_YIELD), id_new(request), dict_or_empty(options_take)};
    size_t n = 3;
    tail_add(items, &n, args_take, kwargs_take);
    return msg_build(items, n);
}
