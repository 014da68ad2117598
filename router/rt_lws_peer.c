/* rt_lws_peer.c: see rt_lws_peer.h. */
#include "rt_lws_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <libwebsockets.h>

#include "rt_router.h"

void rt_lws_fill_peer(struct lws *wsi, rt_peer *peer)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char ip[INET6_ADDRSTRLEN];
    memset(&ss, 0, sizeof(ss));
    if (getpeername(lws_get_socket_fd(wsi), (struct sockaddr *)&ss, &sl) != 0) {
        return;
    }
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        const unsigned char *b = (const unsigned char *)&a->sin_addr;
        if (inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip))) {
            snprintf(peer->addr, sizeof(peer->addr), "%s:%u", ip, ntohs(a->sin_port));
        }
        peer->is_loopback = b[0] == 127;
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        const unsigned char *b = a->sin6_addr.s6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
            /* An IPv4 client on a dual-stack socket: show it as IPv4. */
            if (inet_ntop(AF_INET, b + 12, ip, sizeof(ip))) {
                snprintf(peer->addr, sizeof(peer->addr), "%s:%u", ip, ntohs(a->sin6_port));
            }
            peer->is_loopback = b[12] == 127;
        } else {
            if (inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip))) {
                snprintf(peer->addr, sizeof(peer->addr), "[%s]:%u", ip, ntohs(a->sin6_port));
            }
            peer->is_loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
        }
    }
}

void rt_lws_on_ssl_info(struct lws *wsi, const void *in, const char *listener_id)
{
    const struct lws_ssl_info *si = in;
    /* SSL_accept() ended (rt_lws.c sets the TLS vhosts' ssl_info_event_mask to SSL_CB_EXIT):
     * done (ret 1), would block (ret < 0 and nothing on OpenSSL's error queue, which lws
     * clears before each SSL_accept()), or failed: then the queue holds why, and lws closes
     * the connection without telling the protocol (lws 4.1.6 tls-server.c, "SSL_accept
     * failed"): this is the only place a failure shows. */
    if (!si || !(si->where & SSL_CB_EXIT) || si->ret > 0) {
        return;
    }
    unsigned long e = ERR_peek_error();
    if (e == 0 || ERR_GET_LIB(e) != ERR_LIB_SSL) {
        return; /* would block, or a socket error (a reset) */
    }
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
    if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        return; /* closed before its handshake was through: a port probe, not a failure */
    }
#endif
    const char *why = ERR_reason_error_string(e); /* "http request", "wrong version number" */
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    rt_lws_fill_peer(wsi, &peer);
    rt_router_refused_handshake(lws_context_user(lws_get_context(wsi)), RT_REFUSAL_TLS, listener_id,
                                peer.addr, why ? why : "SSL_accept failed");
}
