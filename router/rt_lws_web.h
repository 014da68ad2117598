/* rt_lws_web.h: the HTTP side of a web transport's listener: requests that are not a WebSocket
 * upgrade on the WAMP path are answered by the services of rt_http.h (static files, redirects,
 * nodeinfo, the trace viewer) and by the HTTP bridge of rt_bridge.h (publisher, caller). Thin: it
 * copies the request into an rt_http_req, writes the rt_http_resp's headers, and streams its body
 * (a file in chunks, one lws_write per HTTP_WRITEABLE, never the whole file in memory). Called from
 * the "http" protocol of rt_lws_ws.c, whose per-connection data it uses. Ownership: the
 * per-connection state (RT_LWS_WEB_PSS_SIZE bytes, allocated and zeroed by lws) owns the answer
 * being sent until it is written or the connection closes. Service thread only. */
#ifndef RT_LWS_WEB_H
#define RT_LWS_WEB_H

#include <stdbool.h>
#include <stddef.h>

#include "rt_lws_ws.h"

struct lws;

/* Bytes of per-connection data the "http" protocol must reserve for this adapter. */
size_t rt_lws_web_pss_size(void);

/* true when lis has HTTP services (a web transport with paths besides its WebSocket one). */
bool rt_lws_web_enabled(const rt_lws_ws_listener *lis);

/* LWS_CALLBACK_HTTP on such a listener, path = lws's `in` (decoded, without the query). Answers
 * the request; returns what the callback returns (-1: close the connection). */
int rt_lws_web_on_http(struct lws *wsi, void *pss, const char *path);

/* LWS_CALLBACK_HTTP_BODY: a piece of the body of an HTTP bridge request (rt_bridge.h); over
 * the path's post_body_limit it is answered 413 and the connection closes. Returns -1 to
 * close. */
int rt_lws_web_on_body(struct lws *wsi, void *pss, const void *in, size_t len);

/* LWS_CALLBACK_HTTP_BODY_COMPLETION: the whole body of an HTTP bridge request is in: its
 * PUBLISH or CALL goes to the router in a session of its own, whose answer HTTP_WRITEABLE
 * writes. Returns -1 to close. */
int rt_lws_web_on_body_done(struct lws *wsi, void *pss);

/* LWS_CALLBACK_HTTP_WRITEABLE: the next chunk of the body. Returns -1 to close. */
int rt_lws_web_on_writeable(struct lws *wsi, void *pss);

/* LWS_CALLBACK_CLOSED_HTTP and LWS_CALLBACK_HTTP_DROP_PROTOCOL: frees an unfinished answer,
 * and ends an HTTP bridge request's session (a call it made is cancelled). */
void rt_lws_web_on_closed(void *pss);

#endif /* RT_LWS_WEB_H */
