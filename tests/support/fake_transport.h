/* fake_transport.h: an in-process transport for core tests. A fake_conn attaches a session to
 * a router through rt_transport_ops that only record what the core asked for; the test feeds
 * messages as JSON text (encoded to the connection's serializer) and reads back the decoded
 * messages the router queued, exactly as a client would receive them.
 * Ownership: the test owns each fake_conn (fake_conn_free); the router owns the session until
 * the fake transport reports it closed (fake_conn_drain after a close request, or
 * fake_conn_disconnect). */
#ifndef FAKE_TRANSPORT_H
#define FAKE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "rt_router.h"
#include "rt_session.h"
#include "wamp_buf.h"
#include "wamp_types.h"

typedef struct fake_conn {
    rt_router *rt;
    rt_session *s; /* NULL once closed */
    wamp_ser ser;
    bool want_write; /* the core asked for a writable callback */
    bool close_requested;
    uint16_t close_code;
    char close_reason[64];
    json_t *inbox; /* decoded messages received, oldest first */
    size_t bytes_received;
} fake_conn;

/* Attaches a new connection (peer 127.0.0.1, loopback). Aborts the test on failure. */
fake_conn *fake_conn_new(rt_router *rt, wamp_ser ser);
/* Like fake_conn_new with a given peer. */
fake_conn *fake_conn_new_peer(rt_router *rt, wamp_ser ser, const rt_peer *peer);
/* Disconnects (if still attached) and frees. NULL-safe. */
void fake_conn_free(fake_conn *c);
/* The peer drops the connection: rt_session_on_closed(). */
void fake_conn_disconnect(fake_conn *c);

/* Sends the message given as JSON text (printf-style), encoded with the connection's
 * serializer. Returns rt_session_on_message()'s result. */
wamp_err fake_conn_send(fake_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Feeds raw bytes as one message. */
wamp_err fake_conn_send_raw(fake_conn *c, const void *data, size_t len);
/* Writes out everything queued (decoding it into the inbox); if a close was requested and the
 * queue is empty, closes the session like the real adapter does. */
void fake_conn_drain(fake_conn *c);
/* Drains, then removes and returns the oldest received message (owned), or NULL. */
json_t *fake_conn_next(fake_conn *c);
/* Drains and returns the number of messages waiting in the inbox. */
size_t fake_conn_pending(fake_conn *c);
/* Drains and discards every received message. */
void fake_conn_clear(fake_conn *c);

/* Sends the message given as JSON text (printf-style, normally a HELLO) and asserts that the
 * reply is WELCOME; returns the WELCOME (owned). */
json_t *fake_conn_welcome(fake_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* WELCOME.Details.roles.<role>.features.<feature> is true in welcome. */
bool fake_welcome_feature(const json_t *welcome, const char *role, const char *feature);

/* A new session joined to realm1 whose HELLO announces the client roles role_a and role_b, both
 * with features.payload_passthru_mode when ppt (plain roles otherwise); asserts that the
 * WELCOME announces the feature for router_role ("broker", "dealer"). */
fake_conn *fake_conn_new_ppt(rt_router *rt, wamp_ser ser, bool ppt, const char *role_a,
                             const char *role_b, const char *router_role);

/* HELLO to realm with the usual client roles; asserts WELCOME and returns the session id. */
uint64_t fake_conn_join(fake_conn *c, const char *realm);

/* fake_conn_new() + fake_conn_join(). */
fake_conn *fake_conn_new_joined(rt_router *rt, wamp_ser ser, const char *realm);

/* Asserts the next message is ERROR answering (req_type, request) with error uri. */
void fake_expect_error(fake_conn *c, int req_type, int64_t request, const char *uri);
/* The same, and the ERROR's first argument (the message) contains text. */
void fake_expect_error_text(fake_conn *c, int req_type, int64_t request, const char *uri,
                            const char *text);
/* Asserts the next message is ABORT with reason uri. */
void fake_expect_abort(fake_conn *c, const char *uri);

/* Takes the next frame the router queued for c as it encoded it, bypassing the inbox (one
 * reference: wamp_buf_unref()); NULL if none. */
wamp_buf *fake_conn_next_raw(fake_conn *c);
/* Asserts b is non-NULL and ends with the n bytes of tail (a payload ends its message); what
 * names the case in the failure message. */
void fake_assert_tail(const wamp_buf *b, const void *tail, size_t n, const char *what);

/* Message helpers for assertions. */
int64_t fake_msg_int(const json_t *msg, size_t i);
const char *fake_msg_str(const json_t *msg, size_t i);

#endif /* FAKE_TRANSPORT_H */
