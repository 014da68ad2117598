/* rt_lws_http.h: the metrics listener (wampscope.metrics): a plain HTTP vhost whose one path
 * answers GET with the Prometheus text of the router (rt_metrics.h). Thin: it asks the core for
 * the text and writes it. Ownership: owned by rt_lws (created after its context, freed after
 * the context is destroyed); borrows the router. Service thread only. */
#ifndef RT_LWS_HTTP_H
#define RT_LWS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_router.h"
#include "wamp_err.h"

struct lws_context;
typedef struct rt_lws_http rt_lws_http;

/* Creates the metrics vhost on ctx when rt's config has wampscope.metrics; *out NULL (and
 * WAMP_OK) when it has not. WAMP_EIO (cannot listen; err names interface:port) or WAMP_ENOMEM
 * with a message in err; *out NULL then. */
wamp_err rt_lws_http_new(struct lws_context *ctx, rt_router *rt, rt_lws_http **out, char *err,
                         size_t err_len);
/* "http://HOST:PORT/PATH" of the listener into buf; false if h is NULL or buf too small. */
bool rt_lws_http_url(const rt_lws_http *h, char *buf, size_t len);
/* NULL-safe. Call after lws_context_destroy() (which closes its connections). */
void rt_lws_http_free(rt_lws_http *h);

#endif /* RT_LWS_HTTP_H */
