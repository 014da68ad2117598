/* rt_session.h: one WAMP session (one transport connection): the session state machine
 * (HELLO [-> CHALLENGE -> AUTHENTICATE] -> WELCOME | ABORT, GOODBYE both ways), the rx entry
 * point from the adapter, and the per-session outgoing queue of encoded messages.
 * Ownership: the router owns the session; the adapter holds a borrowed pointer until it calls
 * rt_session_on_closed(), which frees it. Nothing else frees a session. Service thread only. */
#ifndef RT_SESSION_H
#define RT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_router.h"
#include "wamp_buf.h"
#include "wamp_err.h"
#include "wamp_msg.h"

/* --- Adapter -> core ---------------------------------------------------------------------- */

/* One whole, reassembled message (borrowed; copied or decoded before return). Malformed input
 * is answered per protocol (ABORT/ERROR, then close) and returns WAMP_OK. A non-OK return means
 * the session is unusable (out of memory): the adapter closes the connection at once. */
wamp_err rt_session_on_message(rt_session *s, const void *data, size_t len);

/* Borrowed: the oldest queued outgoing message, NULL when the queue is empty. Valid until the
 * next rt_session_tx_pop() or rt_session_on_closed(). Its headroom may be used for framing. */
wamp_buf *rt_session_tx_peek(rt_session *s);
/* Borrowed: the oldest queued outgoing messages in order, at most max, into out (out[0] is
 * rt_session_tx_peek()'s); returns how many. Each stays valid while it is queued (popping the
 * ones before it does not move it), within the adapter's write callback. */
size_t rt_session_tx_peek_n(rt_session *s, wamp_buf **out, size_t max);
/* Drops the oldest queued message (after the adapter has written it completely). */
void rt_session_tx_pop(rt_session *s);

/* The connection is gone (peer closed, error, or after a requested close). Cleans up
 * subscriptions, registrations and pending calls, leaves the realm and frees s. NULL-safe. */
void rt_session_on_closed(rt_session *s);

/* A session the router opens for itself (the HTTP bridge, rt_bridge.h): joins realm_name as
 * authid/role (copied) without a HELLO, with authmethod "anonymous"; the WELCOME is queued like
 * any other. s must be waiting for its HELLO. The session limits apply as to a HELLO (over one:
 * ABORT queued, s closing, WAMP_OK). WAMP_ENOTFOUND: no such realm or role (s is unchanged);
 * WAMP_ENOMEM. */
wamp_err rt_session_join_internal(rt_session *s, const char *realm_name, const char *authid,
                                  const char *role);

/* --- Inside the core ---------------------------------------------------------------------- */

typedef enum rt_session_state {
    RT_SESSION_ESTABLISHED, /* transport up, waiting for HELLO */
    RT_SESSION_CHALLENGED,  /* CHALLENGE sent, waiting for AUTHENTICATE */
    RT_SESSION_AUTH_FAILED, /* authentication failed: ABORT follows after auth_failure_delay */
    RT_SESSION_JOINED,      /* WELCOME sent */
    RT_SESSION_CLOSING,     /* GOODBYE sent, waiting for the peer's GOODBYE */
    RT_SESSION_CLOSED       /* close requested from the transport; ignores further input */
} rt_session_state;

uint64_t rt_session_id(const rt_session *s);
struct rt_wire_conn;

rt_session_state rt_session_state_get(const rt_session *s);
wamp_ser rt_session_ser(const rt_session *s);
rt_realm *rt_session_realm(const rt_session *s);
const char *rt_session_authid(const rt_session *s);
const char *rt_session_authrole(const rt_session *s);
const rt_peer *rt_session_peer(const rt_session *s);
rt_router *rt_session_router(const rt_session *s);

/* A payload (Arguments, ArgumentsKw) carried as encoded bytes in ser, never decoded by the
 * router: the sender's own bytes, borrowed from the received message while it is handled
 * (rt_payload_of()), or an owned copy (rt_payload_dup(), one buffer `own` holding both) for
 * whatever keeps it longer (retained events). ser 0: no payload. A slice of length 0 is absent. */
typedef struct rt_payload {
    wamp_ser ser;
    wamp_slice args, kwargs;
    wamp_buf *own; /* NULL for a borrowed payload */
} rt_payload;

/* The payload of m (parsed from bytes), borrowing m's slices; ser 0 when m has none. */
rt_payload rt_payload_of(const wamp_msg *m);
/* An owned copy of p into *out (*out is zeroed on failure: WAMP_ENOMEM). */
wamp_err rt_payload_dup(const rt_payload *p, rt_payload *out);
/* Drops the owned copy (NULL-safe, idempotent) and zeroes *p. */
void rt_payload_fini(rt_payload *p);

/* A message to send to several sessions, encoded at most once per serializer. Its envelope is
 * either msg, a jansson list (one reference, owned), or given by its fields (msg NULL:
 * rt_encoded_init_fields()): [type, id, id2 (when not 0), dict], written straight to each
 * serializer's bytes without a list being built (one is made, into msg, only for a trace of a
 * message that could not be encoded: the hub then encodes the list). buf[ser] is filled on first
 * use and shared by every receiving queue. With a payload, the payload's Arguments/ArgumentsKw
 * follow the envelope on the wire: copied as they are for a receiver with the payload's serializer,
 * transcoded exactly (wamp_wr_transcode()) for the others. */
typedef struct rt_encoded {
    json_t *msg;
    uint64_t id[2];     /* fields: the ids after the code (id[1] 0: absent) */
    json_t *dict;       /* fields: Details/Options (owned; NULL: {}) */
    bool fields;        /* the envelope is the fields above */
    rt_payload payload; /* borrowed view: must outlive the sends (rt_encoded_fini() leaves it) */
    wamp_buf *buf[WAMP_SER_COUNT];
    int type; /* the WAMP code: msg's, read once at init (0 if msg is NULL), or the fields' */
} rt_encoded;

/* Takes msg_take into a new rt_encoded (msg NULL is allowed: the caller checks for OOM). */
void rt_encoded_init(rt_encoded *e, json_t *msg_take);
/* Takes msg_take (an envelope) with payload p (borrowed; NULL or ser 0: none). */
void rt_encoded_init_payload(rt_encoded *e, json_t *msg_take, const rt_payload *p);
/* The envelope [type, id, id2, dict] by its fields (id2 0: [type, id, dict]), for the messages
 * whose envelope is ids and a dict (EVENT, RESULT, INVOCATION); takes dict_take (NULL: {});
 * payload p as for rt_encoded_init_payload(). Cannot fail. */
void rt_encoded_init_fields(rt_encoded *e, wamp_msg_type type, uint64_t id, uint64_t id2,
                            json_t *dict_take, const rt_payload *p);
void rt_encoded_fini(rt_encoded *e);
/* Encodes e for ser unless done already. WAMP_ENOMEM, WAMP_EINVAL (not encodable). */
wamp_err rt_encoded_encode(rt_encoded *e, wamp_ser ser);

/* Queues e to s, encoding it for s's serializer if not done yet. A full queue disconnects the
 * session (slow consumer) and a closed session drops the message: both return WAMP_OK.
 * WAMP_ETOOBIG: the encoded message is larger than the receiver's max_message_size; it was not
 * queued (the caller may answer with wamp.error.payload_size_exceeded). WAMP_ENOMEM: allocation
 * failure. WAMP_EINVAL: the message cannot be encoded in s's serializer (not queued). */
wamp_err rt_session_send_encoded(rt_session *s, rt_encoded *e);
/* Queues the message head_take (a message list, consumed) with one more element appended whose
 * encoding in s's serializer is tail (borrowed; e.g. a reply's Arguments rendered straight to
 * the wire), without decoding tail. Same rules as rt_session_send_encoded(); tracing sees head's
 * type and the whole encoded message. */
wamp_err rt_session_send_with_tail(rt_session *s, json_t *head_take, const wamp_buf *tail);
/* Queues one message to s (consumes msg_take, which may be NULL after a failed builder:
 * WAMP_ENOMEM). Same rules as rt_session_send_encoded(). */
wamp_err rt_session_send(rt_session *s, json_t *msg_take);
/* rt_session_send() of the envelope head_take followed by payload p (borrowed). */
wamp_err rt_session_send_payload(rt_session *s, json_t *head_take, const rt_payload *p);
/* rt_session_send_payload() of the envelope [type, id, id2, dict] (rt_encoded_init_fields(): takes
 * dict_take) followed by payload p (borrowed; NULL: none). */
wamp_err rt_session_send_fields(rt_session *s, wamp_msg_type type, uint64_t id, uint64_t id2,
                                json_t *dict_take, const rt_payload *p);
/* Sends ERROR for request (req_type, request) with uri and an optional one-line message as
 * args[0]. */
wamp_err rt_session_send_error(rt_session *s, wamp_msg_type req_type, uint64_t request,
                               const char *uri, const char *message);
/* Protocol violation: log why, send ABORT(wamp.error.protocol_violation, {"message": why}) and
 * close with 1002. */
void rt_session_protocol_violation(rt_session *s, const char *why);
/* Marks the session closed (no more input handled, nothing more queued) and asks the transport
 * to close once the queue is written. drop_queue: discard what is queued except the message
 * being written (slow consumer). Idempotent. */
void rt_session_close(rt_session *s, uint16_t code, const char *reason, bool drop_queue);

#endif /* RT_SESSION_H */
