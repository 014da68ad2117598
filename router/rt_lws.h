/* rt_lws.h: the libwebsockets runtime of the router: one lws context (its user pointer is the
 * rt_router), one vhost per configured listener, a 100 ms tick, SIGTERM/SIGINT through a
 * signalfd adopted into the loop, the service loop and the ordered teardown (STYLE §7).
 * Ownership: rt_lws borrows the router (which must outlive it) and owns the lws context.
 * Service thread only; lws's own poll loop is the only loop. */
#ifndef RT_LWS_H
#define RT_LWS_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_router.h"
#include "wamp_err.h"

typedef struct rt_lws rt_lws;

typedef struct rt_lws_options {
    /* Overrides the port of the first WebSocket listener (0 = ephemeral); -1 = keep. */
    int port_override;
} rt_lws_options;

/* Routes libwebsockets' own log lines to rt_log: errors and warnings always, notices at
 * debug level. Library-global: call once from main() after the rt_log level is set. */
void rt_lws_log_init(void);

/* Creates the context and starts listening on every listener of rt's config. SIGTERM and
 * SIGINT must already be blocked (sigprocmask) in the calling thread: they are read from a
 * signalfd. On failure returns WAMP_EIO (cannot listen: err names interface:port) or
 * WAMP_ENOMEM, writes a one-line message into err, and nothing is left allocated. */
wamp_err rt_lws_new(rt_router *rt, const rt_lws_options *opt, rt_lws **out, char *err,
                    size_t err_len);

/* Number of listeners (as in the config, in order). */
size_t rt_lws_listener_count(const rt_lws *l);
/* The port listener i really listens on (lws_get_vhost_listen_port); 0 for a Unix socket. */
int rt_lws_listener_port(const rt_lws *l, size_t i);
/* Writes "ws://HOST:PORT/PATH" for listener i into buf (HOST: the interface, 0.0.0.0 for all
 * interfaces, IPv6 in brackets); "rs://HOST:PORT" or "rs://unix:PATH" for a RawSocket listener
 * (autobahn's URL forms); "wss://", "rss://" with TLS. Returns false if buf is too small. */
bool rt_lws_listener_url(const rt_lws *l, size_t i, char *buf, size_t len);

/* Writes "http://HOST:PORT/PATH" of the metrics listener (wampscope.metrics) into buf; false
 * if there is none or buf is too small. */
bool rt_lws_metrics_url(const rt_lws *l, char *buf, size_t len);

/* Runs the service loop. The first signal starts rt_router_begin_shutdown(); the loop ends
 * when rt_router_shutdown_done() or at a second signal. WAMP_OK on a clean stop, WAMP_EIO if
 * lws_service() failed. */
wamp_err rt_lws_run(rt_lws *l);

/* A function of another loop-driven module (the cluster link) that the service loop calls on
 * the service thread after every 100 ms tick and soon after each rt_lws_wake(); NULL = none. */
void rt_lws_set_service_hook(rt_lws *l, void (*fn)(void *ctx), void *ctx);
/* Thread-safe (lws_cancel_service()): makes the loop call the service hook soon. ctx is the
 * rt_lws. */
void rt_lws_wake(void *ctx);

/* Destroys the context (lws delivers CLOSED, hence rt_session_on_closed(), for every live
 * connection), then frees l. NULL-safe. Free the router only after this. */
void rt_lws_free(rt_lws *l);

#endif /* RT_LWS_H */
