/* rt_lws_front.h: the lws protocol of every WAMP listener ("websocket", "web" and "universal"
 * transports; plain, TLS and Unix): lws accepts each connection in its raw-skt role
 * (LWS_SERVER_OPTION_ADOPT_APPLY_LISTEN_ACCEPT_CONFIG) and hands the bytes to this protocol,
 * which speaks HTTP/1.1 and RFC 6455 itself (rt_lws_conn.h says how a connection goes on).
 * lws does the sockets, TLS, the event loop and the timers.
 *
 * Limits (wampscope.limits, configs/README.md): http_max_head octets of one request head (431
 * beyond), http_head_timeout to complete a head (from the accept, or from the first octet of a
 * later request), http_idle_timeout between requests of a keep-alive connection; a connection
 * over a time is closed without an answer (slowloris).
 * Ownership: lws owns the per-connection data (rt_lws_conn). Service thread only. */
#ifndef RT_LWS_FRONT_H
#define RT_LWS_FRONT_H

struct lws_protocols;

/* The lws protocol name (the vhost's listen_accept_protocol). */
#define RT_LWS_FRONT_PROTOCOL "wamp-front"

/* Writes the protocol entry into *out (one entry, not terminated). */
void rt_lws_front_protocol(struct lws_protocols *out);

#endif /* RT_LWS_FRONT_H */
