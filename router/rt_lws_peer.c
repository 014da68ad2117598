/* rt_lws_peer.c: see rt_lws_peer.h. */
#include "rt_lws_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <libwebsockets.h>

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
