/* bench_ws.h: minimal non-blocking WebSocket client (RFC 6455) for the load generator.
 * One bench_ws per TCP connection: connect, HTTP/1.1 upgrade with one Sec-WebSocket-Protocol,
 * masked frames out (one frame per message), unmasked frames in (7/16/64-bit lengths,
 * fragmented messages reassembled, PING answered with PONG, CLOSE echoed).
 * The connection registers itself in the caller's epoll set with data.ptr = the bench_ws and
 * toggles EPOLLOUT itself while output is pending. Ownership: the caller owns the bench_ws
 * (bench_ws_free); it owns its socket and buffers. Single thread (the bench loop). */
#ifndef BENCH_WS_H
#define BENCH_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "wamp_err.h"

typedef struct bench_ws bench_ws;

/* Where to connect, from a ws://host[:port][/path] URL. */
typedef struct bench_ws_url {
    char host[256];
    char port[8];
    char path[512];
    struct sockaddr_storage addr; /* resolved by bench_ws_url_parse */
    socklen_t addr_len;
} bench_ws_url;

typedef enum bench_ws_state {
    BENCH_WS_CONNECTING = 0, /* TCP connect in progress */
    BENCH_WS_HANDSHAKE,      /* upgrade request sent, waiting for 101 */
    BENCH_WS_OPEN,
    BENCH_WS_CLOSING, /* our CLOSE sent, waiting for the peer's */
    BENCH_WS_CLOSED   /* peer closed, error, or close handshake done: stop using it */
} bench_ws_state;

typedef struct bench_ws_callbacks {
    /* The upgrade succeeded with the requested subprotocol. */
    void (*on_open)(void *user);
    /* One whole data message. data is borrowed: valid only during the call. The callee may call
     * bench_ws_send() on any connection, but must not free this one. */
    void (*on_message)(void *user, const unsigned char *data, size_t len, bool binary);
} bench_ws_callbacks;

/* Parses url (ws:// only) and resolves host (numeric or name) to url->addr. WAMP_EINVAL with a
 * message in why on a malformed URL or a name that does not resolve. */
wamp_err bench_ws_url_parse(const char *url, bench_ws_url *out, char *why, size_t why_len);

/* Starts a non-blocking connect to url and adds the socket to epfd. subprotocol is copied.
 * binary selects BINARY (true) or TEXT (false) frames for bench_ws_send(). NULL on failure
 * (socket, connect or epoll error, or allocation failure), with a message in why. */
bench_ws *bench_ws_new(const bench_ws_url *url, const char *subprotocol, bool binary, int epfd,
                       const bench_ws_callbacks *cb, void *user, char *why, size_t why_len);

/* NULL-safe; removes the socket from the epoll set and closes it. */
void bench_ws_free(bench_ws *ws);

/* Handles the epoll events reported for ws: connect completion, handshake, incoming frames
 * (callbacks run from here), pending output. Returns WAMP_OK while the connection is usable;
 * WAMP_ECLOSED once the peer closed (cleanly or not); WAMP_EPROTO for a handshake or framing
 * error; WAMP_EIO for a socket error; WAMP_ENOMEM. After a non-OK return the state is
 * BENCH_WS_CLOSED and bench_ws_error() says why. */
wamp_err bench_ws_on_event(bench_ws *ws, uint32_t events);

/* Queues one message as a single masked frame (TEXT or BINARY as chosen at creation). Nothing is
 * written until bench_ws_flush(). WAMP_ECLOSED if the connection is not OPEN; WAMP_ENOMEM. */
wamp_err bench_ws_send(bench_ws *ws, const void *data, size_t len);

/* Writes as much queued output as the socket takes; arms EPOLLOUT for the rest. WAMP_EIO (and
 * state CLOSED) on a socket error; WAMP_OK otherwise, also when nothing was queued. */
wamp_err bench_ws_flush(bench_ws *ws);

/* Queues a CLOSE frame with status code (1000 = normal) and enters BENCH_WS_CLOSING. No-op
 * unless OPEN. */
void bench_ws_close(bench_ws *ws, uint16_t code);

bench_ws_state bench_ws_get_state(const bench_ws *ws);

/* The user pointer given to bench_ws_new() (borrowed). */
void *bench_ws_user(const bench_ws *ws);

/* Bytes queued but not yet written. */
size_t bench_ws_pending(const bench_ws *ws);

/* Static-lifetime (per connection) text of the last failure; "" if none. */
const char *bench_ws_error(const bench_ws *ws);

#endif /* BENCH_WS_H */
