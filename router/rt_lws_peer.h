/* rt_lws_peer.h: the TCP peer of a libwebsockets connection, as the adapters report it (logs,
 * connection records, trusted networks). Adapter side only (includes <libwebsockets.h> through
 * its callers). */
#ifndef RT_LWS_PEER_H
#define RT_LWS_PEER_H

#include "rt_transport.h"

struct lws;

/* Fills peer->addr ("ip:port" / "[ip6]:port"; IPv4-mapped shown as IPv4) and is_loopback from
 * the connection's TCP peer. Leaves them as they are for other sockets (Unix). Shared by the
 * WebSocket, web and RawSocket adapters. */
void rt_lws_fill_peer(struct lws *wsi, rt_peer *peer);

#endif /* RT_LWS_PEER_H */
