/* rt_lws_ws.h: the WebSocket transport adapter: the lws protocol table of one listener
 * ("http", "wamp.2.json", "wamp.2.msgpack") and its callbacks. Thin: it translates lws events
 * into rt_router_attach / rt_session_on_message / rt_session_tx_peek+pop / rt_session_on_closed
 * and does WebSocket framing, nothing else (STYLE §6).
 * Ownership: rt_lws owns every rt_lws_ws_listener (one per vhost, the vhost's user pointer) and
 * the protocol tables; lws owns the per-connection state. Service thread only. */
#ifndef RT_LWS_WS_H
#define RT_LWS_WS_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_config.h"
#include "rt_transport.h"
#include "wamp_types.h"

struct lws;
struct lws_protocols;

/* Entries rt_lws_ws_protocols() writes at most: "http", one WAMP subprotocol per serializer,
 * the terminator. */
#define RT_LWS_WS_PROTOCOLS_MAX (WAMP_SER_COUNT + 1)

/* Bytes of the send scratch buffer (see rt_lws_ws_listener.tx_scratch). */
#define RT_LWS_WS_SCRATCH ((size_t)64 * 1024)

/* One WebSocket path of a vhost: its listener config and its connection counter (against its
 * options.max_connections; owned by rt_lws). */
typedef struct rt_lws_ws_path {
    const rt_listener *cfg;
    size_t *conns;
} rt_lws_ws_path;

/* What the callbacks of one listener's vhost need; the vhost user pointer. Plain data. */
typedef struct rt_lws_ws_listener {
    const rt_listener *cfg; /* borrowed from the config */
    /* The WebSocket paths served on this vhost: paths[0] is cfg's, then the further paths of a
     * web transport (listeners that share cfg's socket). Owned by rt_lws. */
    const rt_lws_ws_path *paths;
    size_t n_paths;
    /* The RawSocket part sharing this listener's port (a universal transport), or NULL. The
     * RawSocket adapter uses it, when set, instead of cfg. Borrowed from the config. */
    const rt_listener *raw_cfg;
    const bool *tearing_down; /* true while lws_context_destroy() runs: ops stop calling lws */
    /* Connections the RawSocket part (adopted) holds now, against its options.max_connections
     * (the WebSocket paths' are in paths); owned by rt_lws, counted by the adapter. */
    size_t *raw_conns;
    /* RT_LWS_WS_SCRATCH bytes where small outgoing messages are framed together for one write;
     * free again when lws_write() returns, so one buffer serves every connection (owned by
     * rt_lws, shared by all listeners; single thread). */
    unsigned char *tx_scratch;
} rt_lws_ws_listener;

/* Fills out[0..RT_LWS_WS_PROTOCOLS_MAX) with the protocol table of lis: protocols[0] "http"
 * (hands plain HTTP to rt_lws_web.h on a web transport with HTTP services and refuses it
 * elsewhere; chooses the subprotocol of a WebSocket upgrade with rt_subproto.h and
 * refuses, with an HTTP status, one that offers none of its path's WAMP subprotocols or comes
 * on no path of lis unless cfg->any_path), then one entry per serializer that one of lis's
 * paths enables, named by rt_subproto_name() ("wamp.2.json", id WAMP_SER_JSON; ...), then the
 * terminator. Returns the
 * number of WAMP subprotocols (0: the listener can accept nothing). */
size_t rt_lws_ws_protocols(const rt_lws_ws_listener *lis, struct lws_protocols *out);

#endif /* RT_LWS_WS_H */
