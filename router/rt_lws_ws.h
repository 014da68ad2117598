/* rt_lws_ws.h: what every connection of a WAMP listener shares: the listener (the vhost user
 * pointer) and its WebSocket paths. The WebSocket itself is rt_lws_ws.c (rt_lws_conn.h).
 * Ownership: rt_lws owns every rt_lws_ws_listener (one per vhost, the vhost's user pointer).
 * Service thread only. */
#ifndef RT_LWS_WS_H
#define RT_LWS_WS_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_config.h"
#include "rt_transport.h"
#include "wamp_types.h"

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

#endif /* RT_LWS_WS_H */
