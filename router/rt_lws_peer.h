/* rt_lws_peer.h: the TCP peer of a libwebsockets connection, as the adapters report it (logs,
 * connection records, trusted networks), and its failed TLS handshakes. Adapter side only
 * (includes <libwebsockets.h> through its callers). */
#ifndef RT_LWS_PEER_H
#define RT_LWS_PEER_H

#include "rt_transport.h"

struct lws;

/* Fills peer->addr ("ip:port" / "[ip6]:port"; IPv4-mapped shown as IPv4) and is_loopback from
 * the connection's TCP peer. Leaves them as they are for other sockets (Unix). Shared by the
 * WebSocket, web and RawSocket adapters. */
void rt_lws_fill_peer(struct lws *wsi, rt_peer *peer);

/* LWS_CALLBACK_SSL_INFO (in: the struct lws_ssl_info) on a connection of a TLS listener whose
 * vhost asks for SSL_CB_EXIT: when SSL_accept() failed, the refused handshake is counted,
 * logged and recorded (rt_router_refused_handshake(), reason "tls", detail OpenSSL's reason,
 * e.g. "http request") for listener_id. Anything else (done, would block, a connection closed
 * before it sent a whole handshake) is ignored. Shared by the WebSocket and RawSocket
 * adapters (lws hands the event to the protocol the connection is bound to). */
void rt_lws_on_ssl_info(struct lws *wsi, const void *in, const char *listener_id);

#endif /* RT_LWS_PEER_H */
