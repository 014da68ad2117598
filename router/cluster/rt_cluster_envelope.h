/* rt_cluster_envelope.h: a publication as it travels between the nodes of a cluster
 * (rt_cluster_broker.h): a compact binary header, then the payload's Arguments and ArgumentsKw
 * bytes as the publisher's serializer encoded them. All integers big-endian:
 *   u8 version (1), u8 flags (1 publisher, 2 correlation, 4 options, 8 JSON payload, 16 target),
 *   u64 publication, u8 serializer (0: no payload bytes), u32 args bytes, u32 kwargs bytes,
 *   str node, str realm, str topic (str: u16 length + bytes),
 *   [publisher]   u64 session, ostr authid, ostr authrole (ostr: a str, or u16 0xffff = absent),
 *   [correlation] 16 bytes,
 *   [options]     u32 length + JSON object: the PUBLISH options a receiver applies (eligible*,
 *                 exclude*, ppt_*; nothing else is sent),
 *   [JSON payload] u32 length + JSON array or "null", u32 length + JSON object or "null" (the
 *                 payload of a publication that has no payload bytes),
 *   [target]      u64 session, u64 subscription (a retained event for one subscriber),
 *   args bytes, kwargs bytes.
 * Several envelopes may follow each other in one message (retained events).
 * Socket-free, no state: every function is pure. */
#ifndef RT_CLUSTER_ENVELOPE_H
#define RT_CLUSTER_ENVELOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rt_broker.h"

/* A growable byte string (p owned, free() it). */
typedef struct rt_cluster_bytes {
    unsigned char *p;
    size_t len, cap;
} rt_cluster_bytes;

/* One envelope as read: pub's pointers borrow from the envelope and the data it was read from. */
typedef struct rt_cluster_envelope {
    const char *node, *realm;
    rt_broker_pub pub;
    bool has_target;
    uint64_t session, sub; /* the target, when has_target */
    uint8_t corr[RT_BROKER_CORRELATION_LEN];
    char *strs;                      /* owned: node, realm, topic, authid, authrole */
    json_t *options, *args, *kwargs; /* owned */
} rt_cluster_envelope;

/* Appends the envelope of p (published on node in realm; target: {session, subscription} of a
 * retained event, or NULL) to out. false on allocation failure, or a string over 65,534 bytes
 * (out is then as it was). */
bool rt_cluster_envelope_add(rt_cluster_bytes *out, const char *node, const char *realm,
                             const rt_broker_pub *p, const uint64_t *target);
/* Reads the envelope at the start of data into *e (release it with rt_cluster_envelope_fini()
 * even on failure). Returns the bytes it took, 0 if they are not a valid envelope (a truncated or
 * malformed header, a topic that is not a valid URI, lengths past the end). */
size_t rt_cluster_envelope_read(const void *data, size_t len, rt_cluster_envelope *e);
void rt_cluster_envelope_fini(rt_cluster_envelope *e);

#endif /* RT_CLUSTER_ENVELOPE_H */
