/* rt_cluster_envelope.c: the wire form of a publication between nodes (rt_cluster_envelope.h). */
#include "rt_cluster_envelope.h"

#include <stdlib.h>
#include <string.h>

#include "wamp_uri.h"

#define VERSION   1
#define F_PUB     1u
#define F_CORR    2u
#define F_OPTIONS 4u
#define F_JSON    8u
#define F_TARGET  16u
#define STR_MAX   0xfffeu
#define STR_NONE  0xffffu

static bool add(rt_cluster_bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) {
            cap *= 2;
        }
        unsigned char *np = realloc(b->p, cap);
        if (!np) {
            return false;
        }
        b->p = np;
        b->cap = cap;
    }
    if (n) {
        memcpy(b->p + b->len, p, n);
    }
    b->len += n;
    return true;
}

static bool add_uint(rt_cluster_bytes *b, uint64_t v, size_t bytes)
{
    unsigned char t[8];
    for (size_t i = 0; i < bytes; i++) {
        t[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    }
    return add(b, t, bytes);
}

/* s NULL: absent (only where the format allows it). */
static bool add_str(rt_cluster_bytes *b, const char *s)
{
    if (!s) {
        return add_uint(b, STR_NONE, 2);
    }
    size_t n = strlen(s);
    return n <= STR_MAX && add_uint(b, n, 2) && add(b, s, n);
}

static bool add_json(rt_cluster_bytes *b, const json_t *v)
{
    if (!v) {
        return add_uint(b, 4, 4) && add(b, "null", 4);
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t n = text ? strlen(text) : 0;
    bool ok = text && add_uint(b, n, 4) && add(b, text, n);
    free(text);
    return ok;
}

/* The options a receiver applies: black/white lists and ppt_*; NULL when there are none. */
static json_t *receiver_options(const json_t *opts, bool *oom)
{
    json_t *out = NULL;
    const char *key;
    json_t *v;
    *oom = false;
    json_object_foreach((json_t *)opts, key, v)
    {
        if (strncmp(key, "eligible", 8) != 0 && strncmp(key, "exclude", 7) != 0 &&
            strncmp(key, "ppt_", 4) != 0) {
            continue;
        }
        if (strcmp(key, "exclude_me") == 0) {
            continue; /* the publisher is not on the receiving node */
        }
        if ((!out && !(out = json_object())) || json_object_set(out, key, v) != 0) {
            *oom = true;
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

bool rt_cluster_envelope_add(rt_cluster_bytes *out, const char *node, const char *realm,
                             const rt_broker_pub *p, const uint64_t *target)
{
    size_t start = out->len;
    bool oom;
    json_t *opts = p->options ? receiver_options(p->options, &oom) : NULL;
    if (p->options && oom) {
        return false;
    }
    bool bytes = p->payload.ser != 0;
    bool json = !bytes && (p->args || p->kwargs);
    unsigned flags = (p->disclose ? F_PUB : 0) | (p->correlation ? F_CORR : 0) |
                     (opts ? F_OPTIONS : 0) | (json ? F_JSON : 0) | (target ? F_TARGET : 0);
    bool ok = add_uint(out, VERSION, 1) && add_uint(out, flags, 1) &&
              add_uint(out, p->publication, 8) && add_uint(out, bytes ? p->payload.ser : 0, 1) &&
              add_uint(out, bytes ? p->payload.args.len : 0, 4) &&
              add_uint(out, bytes ? p->payload.kwargs.len : 0, 4) && add_str(out, node) &&
              add_str(out, realm) && add_str(out, p->topic);
    if (ok && p->disclose) {
        ok = add_uint(out, p->publisher, 8) && add_str(out, p->publisher_authid) &&
             add_str(out, p->publisher_authrole);
    }
    if (ok && p->correlation) {
        ok = add(out, p->correlation, RT_BROKER_CORRELATION_LEN);
    }
    if (ok && opts) {
        ok = add_json(out, opts);
    }
    if (ok && json) {
        ok = add_json(out, p->args) && add_json(out, p->kwargs);
    }
    if (ok && target) {
        ok = add_uint(out, target[0], 8) && add_uint(out, target[1], 8);
    }
    if (ok && bytes) {
        ok = add(out, p->payload.args.p, p->payload.args.len) &&
             add(out, p->payload.kwargs.p, p->payload.kwargs.len);
    }
    json_decref(opts);
    if (!ok) {
        out->len = start;
    }
    return ok;
}

/* ---- Reading ------------------------------------------------------------------------------- */

typedef struct reader {
    const unsigned char *p;
    size_t left;
    bool bad;
} reader;

static uint64_t get_uint(reader *r, size_t bytes)
{
    if (r->bad || r->left < bytes) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++) {
        v = v << 8 | r->p[i];
    }
    r->p += bytes;
    r->left -= bytes;
    return v;
}

static const unsigned char *get_bytes(reader *r, size_t n)
{
    if (r->bad || r->left < n) {
        r->bad = true;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

/* A string (copied into *strs, NUL-terminated; *strs advances); NULL when absent (optional) or
 * not valid (r->bad set). */
static const char *get_str(reader *r, char **strs, bool optional)
{
    size_t n = (size_t)get_uint(r, 2);
    if (r->bad || (n == STR_NONE && !optional)) {
        r->bad = true;
        return NULL;
    }
    if (n == STR_NONE) {
        return NULL;
    }
    const unsigned char *p = get_bytes(r, n);
    if (!p || memchr(p, '\0', n)) {
        r->bad = true;
        return NULL;
    }
    char *s = *strs;
    memcpy(s, p, n);
    s[n] = '\0';
    *strs += n + 1;
    return s;
}

/* The bytes get_str() copies for the header's strings (node, realm, topic, and authid and
 * authrole with F_PUB), each with its NUL, read on a copy of the reader: the strings alone, not
 * the rest of the message (the payload, the envelopes after this one). A truncated header counts
 * what it holds; reading it then fails. */
static size_t strs_size(reader r, unsigned flags)
{
    size_t total = 0, n_strs = flags & F_PUB ? 5 : 3;
    for (size_t i = 0; i < n_strs; i++) {
        if (i == 3) {
            (void)get_uint(&r, 8); /* the publisher's session, between topic and authid */
        }
        size_t n = (size_t)get_uint(&r, 2);
        if (n != STR_NONE && get_bytes(&r, n)) {
            total += n;
        }
        total++;
    }
    return total;
}

static json_t *get_json(reader *r)
{
    size_t n = (size_t)get_uint(r, 4);
    const unsigned char *p = get_bytes(r, n);
    json_error_t jerr;
    json_t *v = p ? json_loadb((const char *)p, n, JSON_DECODE_ANY, &jerr) : NULL;
    if (!v) {
        r->bad = true;
    }
    return v;
}

size_t rt_cluster_envelope_read(const void *data, size_t len, rt_cluster_envelope *e)
{
    memset(e, 0, sizeof(*e));
    reader r = {.p = data, .left = len};
    unsigned version = (unsigned)get_uint(&r, 1);
    unsigned flags = (unsigned)get_uint(&r, 1);
    rt_broker_pub *p = &e->pub;
    p->publication = get_uint(&r, 8);
    unsigned ser = (unsigned)get_uint(&r, 1);
    size_t al = (size_t)get_uint(&r, 4), kl = (size_t)get_uint(&r, 4);
    if (r.bad || version != VERSION || ser >= WAMP_SER_COUNT || (ser == 0 && (al || kl))) {
        return 0;
    }
    if (!(e->strs = malloc(strs_size(r, flags)))) {
        return 0;
    }
    char *strs = e->strs;
    e->node = get_str(&r, &strs, false);
    e->realm = get_str(&r, &strs, false);
    p->topic = get_str(&r, &strs, false);
    if (flags & F_PUB) {
        p->disclose = true;
        p->publisher = get_uint(&r, 8);
        p->publisher_authid = get_str(&r, &strs, true);
        p->publisher_authrole = get_str(&r, &strs, true);
    }
    const unsigned char *corr = flags & F_CORR ? get_bytes(&r, RT_BROKER_CORRELATION_LEN) : NULL;
    if (corr) {
        memcpy(e->corr, corr, sizeof(e->corr));
        p->correlation = e->corr;
    }
    if (flags & F_OPTIONS) {
        e->options = get_json(&r);
        r.bad = r.bad || !json_is_object(e->options);
        p->options = e->options;
    }
    if (flags & F_JSON) {
        e->args = get_json(&r);
        e->kwargs = get_json(&r);
        r.bad = r.bad || !(json_is_array(e->args) || json_is_null(e->args)) ||
                !(json_is_object(e->kwargs) || json_is_null(e->kwargs));
        p->args = json_is_array(e->args) ? e->args : NULL;
        p->kwargs = json_is_object(e->kwargs) ? e->kwargs : NULL;
    }
    if (flags & F_TARGET) {
        e->has_target = true;
        e->session = get_uint(&r, 8);
        e->sub = get_uint(&r, 8);
    }
    if (r.bad || (uint64_t)al + kl > r.left || !wamp_uri_is_valid(p->topic, WAMP_URI_LOOSE)) {
        return 0;
    }
    if (ser) {
        p->payload.ser = (wamp_ser)ser;
        p->payload.args = (wamp_slice){al ? r.p : NULL, al};
        p->payload.kwargs = (wamp_slice){kl ? r.p + al : NULL, kl};
    }
    return len - r.left + al + kl;
}

void rt_cluster_envelope_fini(rt_cluster_envelope *e)
{
    free(e->strs);
    json_decref(e->options);
    json_decref(e->args);
    json_decref(e->kwargs);
    memset(e, 0, sizeof(*e));
}
