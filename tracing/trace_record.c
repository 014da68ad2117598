/* trace_record.c: records, shared peer info and strings, correlation UUIDs. */
#include "trace_record.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "wamp_msg.h"

_Static_assert(sizeof(trace_record) <= TRACE_RECORD_OVERHEAD,
               "TRACE_RECORD_OVERHEAD must cover the record struct");

/* One allocation: the struct, then the three strings back to back. */
struct trace_peer {
    struct trace_peer_head h; /* refs: read inline (trace_record.h) */
    uint64_t session_id;
    const char *realm; /* into text[], or NULL */
    const char *authid;
    const char *authrole;
    size_t text_bytes; /* of text[] */
    char text[];
};

static size_t opt_len(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

static const char *opt_put(char **pos, const char *s)
{
    if (!s) {
        return NULL;
    }
    size_t n = strlen(s) + 1;
    char *dst = *pos;
    memcpy(dst, s, n);
    *pos += n;
    return dst;
}

trace_peer *trace_peer_new(uint64_t session_id, const char *realm, const char *authid,
                           const char *authrole)
{
    size_t n = opt_len(realm) + opt_len(authid) + opt_len(authrole);
    trace_peer *p = malloc(sizeof(*p) + n);
    if (!p) {
        return NULL;
    }
    char *pos = p->text;
    p->h.refs = 1;
    p->text_bytes = n;
    p->session_id = session_id;
    p->realm = opt_put(&pos, realm);
    p->authid = opt_put(&pos, authid);
    p->authrole = opt_put(&pos, authrole);
    return p;
}

void trace_peer_free_(trace_peer *p)
{
    free(p);
}

size_t trace_peer_refs(const trace_peer *p)
{
    return p->h.refs;
}

uint64_t trace_peer_session_id(const trace_peer *p)
{
    return p->session_id;
}

const char *trace_peer_realm(const trace_peer *p)
{
    return p->realm;
}

const char *trace_peer_authid(const trace_peer *p)
{
    return p->authid;
}

const char *trace_peer_authrole(const trace_peer *p)
{
    return p->authrole;
}

size_t trace_peer_text_bytes(const trace_peer *p)
{
    return p->text_bytes;
}

struct trace_str {
    struct trace_str_head h; /* read inline (trace_record.h) */
    char text[];             /* right after the head: trace_str_get() */
};

_Static_assert(offsetof(struct trace_str, text) == sizeof(struct trace_str_head),
               "trace_str_get() finds the text right after the head");

trace_str *trace_str_new(const char *s)
{
    size_t n = strlen(s) + 1;
    trace_str *t = malloc(sizeof(*t) + n);
    if (!t) {
        return NULL;
    }
    t->h.refs = 1;
    t->h.len = n - 1;
    memcpy(t->text, s, n);
    return t;
}

void trace_str_free_(trace_str *s)
{
    free(s);
}

size_t trace_str_refs(const trace_str *s)
{
    return s->h.refs;
}

void trace_record_clone(const trace_record *src, trace_record *dst)
{
    *dst = *src;
    if (dst->peer) {
        trace_peer_ref(dst->peer);
    }
    if (dst->uri) {
        trace_str_ref(dst->uri);
    }
    if (dst->wire) {
        wamp_buf_ref(dst->wire);
    }
}

void trace_record_release(trace_record *r)
{
    trace_peer_unref(&r->peer);
    trace_str_unref(&r->uri);
    wamp_buf_unref(&r->wire);
    r->bytes = NULL; /* the store's or the caller's: nothing to release */
}

void trace_record_fini(trace_record *r)
{
    static const trace_record zero;
    if (!r) {
        return;
    }
    trace_record_release(r);
    /* A struct copy, not memset(): compilers turn a 96-byte memset into `rep stos`, whose
     * start-up cost showed in capture profiles; the copy is a few vector moves. */
    *r = zero;
}

bool trace_record_is_marker(const trace_record *r)
{
    return r->msg_type == TRACE_MSG_MARKER;
}

bool trace_record_is_action(const trace_record *r)
{
    return r->msg_type == TRACE_MSG_ACTION;
}

bool trace_record_is_connection(const trace_record *r)
{
    return r->msg_type == TRACE_MSG_CONNECTION;
}

const char *trace_dir_name(int dir)
{
    switch (dir) {
    case TRACE_RX:
        return "rx";
    case TRACE_TX:
        return "tx";
    default:
        return NULL;
    }
}

const char *trace_msg_type_title(int type)
{
    if (type == TRACE_MSG_MARKER) {
        return "Marker";
    }
    if (type == TRACE_MSG_CONNECTION) {
        return "Connection";
    }
    return wamp_msg_type_title(type);
}

/* RFC 4122 section 4.4: version 4 in the high nibble of octet 6, variant 10x in octet 8. */
static void uuid_set_v4(uint8_t out[TRACE_UUID_LEN])
{
    out[6] = (uint8_t)((out[6] & 0x0fu) | 0x40u);
    out[8] = (uint8_t)((out[8] & 0x3fu) | 0x80u);
}

void trace_uuid_new(uint8_t out[TRACE_UUID_LEN])
{
    randombytes_buf(out, TRACE_UUID_LEN);
    uuid_set_v4(out);
}

void trace_uuid_gen_init(trace_uuid_gen *g)
{
    uint8_t seed[16];
    randombytes_buf(seed, sizeof(seed));
    uuid_set_v4(seed); /* octet 6 (the prefix's version) fixed here, octet 8 per id */
    memcpy(&g->prefix, seed, 8);
    memcpy(&g->key, seed + 8, 8);
    g->counter = 0;
}

void trace_uuid_gen_next(trace_uuid_gen *g, uint8_t out[TRACE_UUID_LEN])
{
    uint64_t z = (++g->counter) ^ g->key;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    /* The variant in octet 8, z's first octet in memory: leaves 62 of the 64 mixed bits,
     * collisions stay out of reach. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    z = (z & ~(uint64_t)0xc0u) | 0x80u;
#else
    z = (z & ~((uint64_t)0xc0u << 56)) | ((uint64_t)0x80u << 56);
#endif
    /* The 16 octets written by one store where the CPU has one: the action's records copy them
     * at once, and a 16-octet load of what two 8-octet stores (or octet updates) just wrote waits
     * for them to reach the cache instead of being forwarded (a stall of about 13 % of
     * rt_trace_rx()'s time in a profile). */
#ifdef __SSE2__
    _mm_storeu_si128((__m128i *)(void *)out, _mm_set_epi64x((long long)z, (long long)g->prefix));
#else
    memcpy(out, &g->prefix, 8);
    memcpy(out + 8, &z, 8);
#endif
}

void trace_uuid_format(const uint8_t uuid[TRACE_UUID_LEN], char out[TRACE_UUID_STRLEN])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < TRACE_UUID_LEN; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out[o++] = '-';
        }
        out[o++] = hex[uuid[i] >> 4];
        out[o++] = hex[uuid[i] & 0x0f];
    }
    out[o] = '\0';
}
