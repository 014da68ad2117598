/* rt_transport.h: the only seam between the router core and a transport adapter (rt_lws_ws.c,
 * rt_lws_raw.c). The core calls these; they never re-enter the core. `tp` is the adapter's
 * per-connection state (borrowed; valid until the adapter calls rt_session_on_closed()). */
#ifndef RT_TRANSPORT_H
#define RT_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rt_transport_ops {
    /* The session has queued messages: ask for a writable callback. */
    void (*want_write)(void *tp);
    /* Close the connection once the queued messages are written (so a final ABORT/GOODBYE goes
     * out). code is a WebSocket close code (1000 normal, 1002 protocol error, 1009 too big,
     * 1011 internal error, 1001 going away); reason is short text (may be copied, borrowed). */
    void (*close)(void *tp, uint16_t code, const char *reason);
} rt_transport_ops;

/* Facts about the peer, given at attach time (copied by the router). */
typedef struct rt_peer {
    char addr[64];           /* "127.0.0.1:54321" or "[::1]:5555"; "" if unknown */
    bool is_loopback;        /* connection came from 127.0.0.0/8 or ::1 */
    const char *listener_id; /* borrowed from the config; may be NULL */
    size_t max_message_size; /* limit of this transport */
    /* A WebSocket opened by a web page of another origin than the router's (its Origin header
     * neither the handshake's Host nor in wampscope.management.allowed_origins): the page's
     * loopback address is no trust of its own (protected mode refuses it the management realm). */
    bool foreign_origin;
} rt_peer;

#endif /* RT_TRANSPORT_H */
