/* rt_lws_raw.h: the RawSocket transport adapter: lws protocol "wamp-rawsocket" in the raw-skt
 * role, on a vhost of its own (LWS_SERVER_OPTION_ADOPT_APPLY_LISTEN_ACCEPT_CONFIG) over TCP or
 * a Unix socket. Thin (STYLE §6): wamp_rawsock does the handshake and framing; this file moves
 * bytes between lws and it, and frames to and from rt_router_attach / rt_session_on_message /
 * rt_session_tx_peek+pop / rt_session_on_closed.
 * Ownership: the vhost user pointer is the listener's rt_lws_ws_listener (owned by rt_lws); lws
 * owns the per-connection state. Service thread only. */
#ifndef RT_LWS_RAW_H
#define RT_LWS_RAW_H

#include <stddef.h>

#include "rt_config.h"

struct lws_protocols;

/* The lws protocol name of RawSocket connections (the vhost's listen_accept_protocol). */
#define RT_LWS_RAW_PROTOCOL "wamp-rawsocket"

/* Writes the "wamp-rawsocket" protocol entry for cfg into *out (one entry, not terminated). */
void rt_lws_raw_protocol(const rt_listener *cfg, struct lws_protocols *out);

#endif /* RT_LWS_RAW_H */
