/* trace_record.h: one captured trace record, and the small refcounted objects records share.
 *
 * A record is a fixed-size struct (a store keeps its parts: trace_store.h) holding references:
 *   - trace_peer: session_id, realm, authid, authrole of the peer session. The router creates one
 *     per session join and passes it with every message; each record takes a reference instead
 *     of copying four fields.
 *   - trace_str: an immutable string (the action URI, or a marker's name). Every record of one
 *     action shares one.
 *   - the message bytes: in a store, a copy in the record's entry (`bytes`/`len`; trace_store.h:
 *     no allocation per record) for a received message and a sent one of at most
 *     TRACE_STORE_COPY_MAX bytes, else `wire`: the very buffer the router encoded (a reference,
 *     no copy). CHALLENGE and AUTHENTICATE never keep wire bytes: they keep a re-encoded copy
 *     with the secret replaced by "***" (see trace_hub_capture.c). A trace without payload keeps
 *     a large message as its envelope alone (trace_strip.h).
 * Records are rendered to JSON only when a client reads them (trace_render.h).
 * Ownership: every reference is released by trace_record_fini(). Service thread only (the
 * refcounts are not atomic). */
#ifndef TRACE_RECORD_H
#define TRACE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wamp_buf.h"
#include "wamp_types.h"

/* Direction of a message, as seen by the router. The values are bits (filters use masks). */
typedef enum trace_dir {
    TRACE_RX = 1, /* the router received it from the session */
    TRACE_TX = 2  /* the router sent (or tried to send) it to the session */
} trace_dir;

/* msg_type of a marker record (mark_trace); never a WAMP message code (those are 1..70, and 0
 * stands for a received message that could not be decoded). */
#define TRACE_MSG_MARKER 255
/* msg_type of an action record (trace_level "action", trace_action.h): peer = the originator,
 * pc/ts = the anchor's, wire = the action part (MessagePack). Never a WAMP message code. */
#define TRACE_MSG_ACTION 254
/* msg_type of a connection record: an event of a transport connection outside any session (a
 * refused WebSocket handshake, ...); no peer, no direction, wire = the event as a JSON object
 * (trace_hub_on_connection()). Never a WAMP message code. */
#define TRACE_MSG_CONNECTION 253

/* Correlation flags (trace_record.flags). */
#define TRACE_CORR_HAS    0x01u /* corr holds a UUID */
#define TRACE_CORR_ANCHOR 0x02u /* the message that started the action */
#define TRACE_CORR_LAST   0x04u /* the message that completed the action */

#define TRACE_UUID_LEN    16
#define TRACE_UUID_STRLEN 37 /* "8-4-4-4-12" lowercase hex + NUL */

/* Bytes each record counts against a trace's max_bytes in addition to its wire bytes: the
 * struct in the ring plus a share of the peer/uri objects. A fixed figure so that the budget is
 * predictable; trace_record.c asserts that the struct fits in it. */
#define TRACE_RECORD_OVERHEAD 128

/* --- trace_peer ---------------------------------------------------------------------------- */

typedef struct trace_peer trace_peer;

/* New peer info with one reference. The strings are copied (NULL allowed: rendered as null);
 * one allocation. NULL on allocation failure. */
trace_peer *trace_peer_new(uint64_t session_id, const char *realm, const char *authid,
                           const char *authrole);

/* The head of every peer, for the inline reference functions below only: the capture path
 * takes and drops a reference per receiver of a fan-out (trace_hub_repeat()), where a call into
 * trace_record.c each cost more than the count itself. The rest of the struct is private. */
struct trace_peer_head {
    size_t refs;
};

/* Frees a peer whose last reference was dropped (trace_peer_unref()'s slow path). */
void trace_peer_free_(trace_peer *p);

/* Takes one more reference; returns p. */
static inline trace_peer *trace_peer_ref(trace_peer *p)
{
    ((struct trace_peer_head *)(void *)p)->refs++;
    return p;
}

/* Drops the reference *p (NULL-safe) and sets *p = NULL; frees at zero. */
static inline void trace_peer_unref(trace_peer **p)
{
    if (p && *p) {
        if (--((struct trace_peer_head *)(void *)*p)->refs == 0) {
            trace_peer_free_(*p);
        }
        *p = NULL;
    }
}

size_t trace_peer_refs(const trace_peer *p);
uint64_t trace_peer_session_id(const trace_peer *p);
/* Borrowed, valid while the caller holds a reference; NULL if unknown. */
const char *trace_peer_realm(const trace_peer *p);
const char *trace_peer_authid(const trace_peer *p);
const char *trace_peer_authrole(const trace_peer *p);
/* Bytes of the three strings together, a NUL after each present one (without strlen()). */
size_t trace_peer_text_bytes(const trace_peer *p);

/* --- trace_str ----------------------------------------------------------------------------- */

typedef struct trace_str trace_str;

/* New immutable copy of s (non-NULL) with one reference; NULL on allocation failure. */
trace_str *trace_str_new(const char *s);

/* The head of every string, for the inline functions below (as trace_peer_head: an action's URI
 * is referenced and released a few times per message on the capture path, and compared with
 * the text of each new action's URI). The text follows the head. */
struct trace_str_head {
    size_t refs;
    size_t len; /* of the text, without its NUL */
};

/* Frees a string whose last reference was dropped (trace_str_unref()'s slow path). */
void trace_str_free_(trace_str *s);

static inline trace_str *trace_str_ref(trace_str *s)
{
    ((struct trace_str_head *)(void *)s)->refs++;
    return s;
}

/* Drops the reference *s (NULL-safe) and sets *s = NULL; frees at zero. */
static inline void trace_str_unref(trace_str **s)
{
    if (s && *s) {
        if (--((struct trace_str_head *)(void *)*s)->refs == 0) {
            trace_str_free_(*s);
        }
        *s = NULL;
    }
}

size_t trace_str_refs(const trace_str *s);

/* Borrowed NUL-terminated text, valid while the caller holds a reference. */
static inline const char *trace_str_get(const trace_str *s)
{
    return (const char *)s + sizeof(struct trace_str_head);
}

/* The text's length (strlen() of trace_str_get()). */
static inline size_t trace_str_len(const trace_str *s)
{
    return ((const struct trace_str_head *)(const void *)s)->len;
}

/* The 8 bytes at p (unaligned). */
static inline uint64_t trace_load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* a[0..n) == b[0..n), a word at a time (strcmp() was a call, and a third of interning a URI). */
static inline bool trace_text_eq(const char *a, const char *b, size_t n)
{
    if (n < 8) {
        return memcmp(a, b, n) == 0;
    }
    uint64_t d = trace_load8(a + n - 8) ^ trace_load8(b + n - 8);
    for (size_t i = 0; i + 8 <= n; i += 8) {
        d |= trace_load8(a + i) ^ trace_load8(b + i);
    }
    return d == 0;
}

/* s's text is the n bytes at text. */
static inline bool trace_str_is(const trace_str *s, const char *text, size_t n)
{
    return trace_str_len(s) == n && trace_text_eq(trace_str_get(s), text, n);
}

/* --- trace_record -------------------------------------------------------------------------- */

/* Plain fields; peer, uri and wire are references owned by the record (NULL = none). Create by
 * filling a zeroed struct (trace_hub does it), copy with trace_record_clone(), release with
 * trace_record_fini(). */
typedef struct trace_record {
    uint64_t seq;     /* assigned by trace_store_append_take() */
    uint64_t pc_ns;   /* monotonic clock when captured */
    uint64_t ts_ns;   /* wall clock (ns since the epoch) when captured */
    trace_peer *peer; /* peer session; NULL for markers */
    trace_str *uri;   /* action URI, marker name; NULL if none */
    wamp_buf *wire;   /* message bytes in wire_ser (markers: meta as JSON); NULL if none */
    /* Message bytes in wire_ser when wire is NULL (a received message), NULL if none: in a
     * store, the copy in its entry (owned by the store, valid as long as the record is held);
     * elsewhere borrowed (the router's input, for the duration of the capture call). Read both
     * through trace_record_data(). */
    const unsigned char *bytes;
    const char *dropped; /* static string: why a tx message was not delivered; NULL = delivered */
    uint32_t ser_bytes[WAMP_SER_COUNT]; /* bytes per serializer (index wamp_ser), 0 = none */
    uint32_t len;                       /* of bytes */
    uint8_t corr[TRACE_UUID_LEN];       /* valid if flags & TRACE_CORR_HAS */
    uint8_t dir;                        /* trace_dir; 0 for markers */
    uint8_t msg_type;                   /* WAMP code, 0 = unknown (rx) or TRACE_MSG_MARKER */
    uint8_t wire_ser;                   /* wamp_ser of wire */
    uint8_t flags;                      /* TRACE_CORR_* */
} trace_record;

/* dst = src with its own references on every shared object. Cannot fail. */
void trace_record_clone(const trace_record *src, trace_record *dst);
/* Releases every reference held by r (NULL-safe) and zeroes it. */
void trace_record_fini(trace_record *r);
/* Releases every reference held by r (not NULL): its peer, uri and wire become NULL, the other
 * fields stay as they are. For storage that is overwritten or freed next (a store evicting its
 * oldest record), where zeroing the whole record would be wasted work on the capture path. */
void trace_record_release(trace_record *r);

/* The message bytes r keeps (wire's, else bytes) and their length in *len; NULL (and 0) if
 * none. Borrowed, valid as long as r is. */
static inline const void *trace_record_data(const trace_record *r, size_t *len)
{
    if (r->wire) {
        *len = wamp_buf_len(r->wire);
        return wamp_buf_cdata(r->wire);
    }
    *len = r->bytes ? r->len : 0;
    return r->bytes;
}

/* Bytes r counts against max_bytes: the length of its bytes + TRACE_RECORD_OVERHEAD. */
static inline size_t trace_record_cost(const trace_record *r)
{
    size_t len;
    (void)trace_record_data(r, &len);
    return len + TRACE_RECORD_OVERHEAD;
}

/* true if r is a marker record. */
bool trace_record_is_marker(const trace_record *r);
/* true if r is an action record (TRACE_MSG_ACTION). */
bool trace_record_is_action(const trace_record *r);
/* true if r is a connection record (TRACE_MSG_CONNECTION). */
bool trace_record_is_connection(const trace_record *r);

/* "rx" / "tx"; NULL for anything else (markers). Static string. */
const char *trace_dir_name(int dir);
/* "Publish", ..., "Marker" for TRACE_MSG_MARKER, "Connection" for TRACE_MSG_CONNECTION,
 * "Unknown" otherwise. Static string. */
const char *trace_msg_type_title(int type);

/* --- trace_rec_view ------------------------------------------------------------------------- */

/* One record to append, given by its parts, every pointer borrowed: what the capture path has
 * in hand (trace_hub_capture.c), so that a trace appends a message without building a
 * trace_record first: a persisted trace encodes it straight into its write buffer, an in-memory
 * one writes it straight into its store's entries (trace_store_append_view()). */
typedef struct trace_rec_view {
    uint64_t seq; /* must be the next seq */
    uint64_t pc_ns;
    uint64_t ts_ns;
    trace_peer *peer;    /* NULL = none */
    trace_str *uri;      /* NULL = none */
    const char *dropped; /* NULL = delivered */
    const uint8_t *corr; /* TRACE_UUID_LEN bytes if flags & TRACE_CORR_HAS */
    /* The message bytes: either a shared buffer (wire, whose identity lets the encoder write
     * the bytes of one message sent to many receivers once), or plain bytes (len of them), or
     * neither (no bytes kept). */
    const wamp_buf *wire;
    const void *bytes;
    size_t len;
    /* The message without its payload (trace_strip.h), env_len bytes, which a trace that does
     * not keep payloads (trace_app_payload false) keeps instead of the bytes above; NULL: made
     * for none (a small message, or one without payload), those traces keep the bytes above. */
    const void *env;
    size_t env_len;
    uint32_t ser_bytes[WAMP_SER_COUNT];
    uint8_t dir;
    uint8_t msg_type;
    uint8_t wire_ser; /* wamp_ser of the bytes */
    uint8_t flags;    /* TRACE_CORR_* */
    /* 0, or a number the caller gives one message and no other: records with the same key are
     * the same message but for peer and seq, so an encoder or a store takes the next one for a
     * repeat of the previous without comparing them field by field (trace_hub_repeat()). */
    uint64_t key;
} trace_rec_view;

/* The message bytes v gives (wire's, else bytes) and their length in *len; NULL (and 0) if
 * none. Borrowed as v's parts are. */
static inline const void *trace_rec_view_data(const trace_rec_view *v, size_t *len)
{
    if (v->wire) {
        *len = wamp_buf_len(v->wire);
        return wamp_buf_cdata(v->wire);
    }
    *len = v->bytes ? v->len : 0;
    return v->bytes;
}

/* *v = the view of record r's parts (borrowed as r holds them; seq as r's, key 0, no env). */
static inline void trace_rec_view_of(const trace_record *r, trace_rec_view *v)
{
    *v = (trace_rec_view){.seq = r->seq,
                          .pc_ns = r->pc_ns,
                          .ts_ns = r->ts_ns,
                          .peer = r->peer,
                          .uri = r->uri,
                          .dropped = r->dropped,
                          .corr = r->corr,
                          .wire = r->wire,
                          .bytes = r->wire ? NULL : r->bytes,
                          .len = r->wire || !r->bytes ? 0 : r->len,
                          .dir = r->dir,
                          .msg_type = r->msg_type,
                          .wire_ser = r->wire_ser,
                          .flags = r->flags};
    memcpy(v->ser_bytes, r->ser_bytes, sizeof(v->ser_bytes));
}

/* --- correlation UUIDs --------------------------------------------------------------------- */

/* a == b, for two UUIDs: two 8-byte compares (memcmp() is a call on the capture path). */
static inline bool trace_uuid_eq(const uint8_t a[TRACE_UUID_LEN], const uint8_t b[TRACE_UUID_LEN])
{
    uint64_t x[2], y[2];
    memcpy(x, a, TRACE_UUID_LEN);
    memcpy(y, b, TRACE_UUID_LEN);
    return ((x[0] ^ y[0]) | (x[1] ^ y[1])) == 0;
}

/* A random version-4 UUID (RFC 4122 layout) from libsodium's randombytes_buf();
 * sodium_init() must have run. */
void trace_uuid_new(uint8_t out[TRACE_UUID_LEN]);

/* A generator of version-4-layout UUIDs that never repeat within its lifetime, without a system
 * call per id (libsodium's randombytes_buf() is a getrandom() call each time): 64 random bits
 * fixed at init, then a counter through a keyed bijection (splitmix64), so consecutive ids look
 * unrelated. For correlation ids, which need uniqueness, not secrecy. Plain data, caller's
 * storage; trace_uuid_gen_init() seeds it (sodium_init() must have run). */
typedef struct trace_uuid_gen {
    uint64_t prefix;
    uint64_t key;
    uint64_t counter;
} trace_uuid_gen;

void trace_uuid_gen_init(trace_uuid_gen *g);
void trace_uuid_gen_next(trace_uuid_gen *g, uint8_t out[TRACE_UUID_LEN]);
/* Writes "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lowercase) and a NUL to out. */
void trace_uuid_format(const uint8_t uuid[TRACE_UUID_LEN], char out[TRACE_UUID_STRLEN]);

/* ns (a record's pc_ns or ts_ns, or a duration) -> float seconds, splitting whole seconds first
 * (keeps the sub-second digits a double can hold). */
static inline double trace_ns_to_seconds(uint64_t ns)
{
    return (double)(ns / 1000000000u) + (double)(ns % 1000000000u) / 1e9;
}

#endif /* TRACE_RECORD_H */
