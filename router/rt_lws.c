/* rt_lws.c: the lws context, one vhost per listener, the 100 ms tick, signals and the service
 * loop (STYLE §7).
 *
 * Signals: main() blocks SIGTERM and SIGINT; here they are read from a signalfd that lws polls
 * as a raw file (LWS_ADOPT_RAW_FILE_DESC) on a vhost of its own that listens on nothing. The
 * first signal starts the router's graceful shutdown, a second one stops the loop at once.
 *
 * WAMP listeners: every accepted connection goes to lws's raw-skt role and the protocol of
 * rt_lws_front.h (HTTP/1.1, WebSocket, and RawSocket on a universal transport, all ours); a
 * RawSocket listener's to rt_lws_raw.h. lws does the sockets, TLS, the loop and the timers.
 *
 * Shared listener (endpoint.shared): lws 4.1 sets SO_REUSEPORT only when it runs several
 * service threads, so wampscope opens that socket itself and lws watches it as a raw file on
 * the signal vhost; each accepted connection is adopted onto the listener's vhost, which
 * listens on nothing itself (CONTEXT_PORT_NO_LISTEN_SERVER), in the raw-skt role with the
 * listener's protocol, as lws does for the other listeners. */
/* SO_REUSEPORT is a BSD socket option: glibc declares it for _DEFAULT_SOURCE, not for the
 * _POSIX_C_SOURCE the build sets. */
#define _DEFAULT_SOURCE

#include "rt_lws.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "rt_config.h"
#include "rt_log.h"
#include "rt_lws_front.h"
#include "rt_lws_http.h"
#include "rt_lws_raw.h"
#include "rt_lws_ws.h"

#define RT_LWS_TICK_US ((lws_usec_t)100 * LWS_US_PER_MS)

/* Protocol table entries of one vhost: ours, the terminator. */
#define RT_LWS_PROTOCOLS_MAX 2

/* Unix socket files get this mode: owner and group may connect (configs/README.md). */
#define RT_LWS_UNIX_MODE 0660

typedef struct rt_lws_listener {
    rt_lws_ws_listener ws; /* the vhost user pointer */
    rt_lws_ws_path *paths; /* owned: ws.paths, the WebSocket paths served on the vhost */
    struct lws_protocols protocols[RT_LWS_PROTOCOLS_MAX];
    struct lws_vhost *vh;
    int port; /* the port really listened on */
    /* endpoint.shared: the listening socket wampscope opened with SO_REUSEPORT (lws 4.1 sets
     * it only with several service threads); its connections are adopted onto vh. */
    int share_fd;
    /* Connections held now (options.max_connections), counted by the adapters through
     * ws.paths[].conns (this listener's own, or of a listener sharing its socket) and
     * ws.raw_conns. */
    size_t ws_conns;
    size_t raw_conns;
    /* A Unix socket file we created (removed at exit if it is still ours). */
    bool unix_made;
    dev_t unix_dev;
    ino_t unix_ino;
} rt_lws_listener;

struct rt_lws {
    rt_router *rt;
    const rt_config *cfg;
    struct lws_context *ctx;
    rt_lws_listener *listeners; /* cfg->n_listeners entries */
    unsigned char *tx_scratch;  /* RT_LWS_WS_SCRATCH bytes, shared by every listener */
    size_t n_listeners;
    struct lws_protocols sig_protocols[3]; /* rt-signal, rt-share, terminator */
    struct lws_vhost *sig_vh;              /* listens on nothing; watches the descriptors */
    int sigfd;      /* ours until adopted; lws closes it with the wsi afterwards */
    bool sigfd_lws; /* adopted */
    lws_sorted_usec_list_t tick;
    unsigned signals; /* signals received */
    bool stopping;    /* leave the loop now (second signal) */
    bool tearing_down;
    rt_lws_http *metrics;    /* wampscope.metrics; NULL = none */
    void (*hook)(void *ctx); /* rt_lws_set_service_hook() */
    void *hook_ctx;
};

/* --- lws logs ------------------------------------------------------------------------------- */

static void log_sink(int level, const char *line)
{
    rt_log_level lv = RT_LOG_LEVEL_DEBUG;
    if (level & LLL_ERR) {
        lv = RT_LOG_LEVEL_ERR;
    } else if (level & LLL_WARN) {
        lv = RT_LOG_LEVEL_WARN;
    }
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) {
        n--;
    }
    /* lws logs some failures once per event a peer causes (an accept() failing while file
     * descriptors run out, for one): rate-limited like every such line, with the monotonic clock
     * (the router's own; the sink has no router to ask). */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    RT_LOG_LIMITED_N(RT_LOG_BURST_CONN, lv, now_us, "libwebsockets", 0, "lws: %.*s", (int)n, line);
}

void rt_lws_log_init(void)
{
    int levels = LLL_ERR | LLL_WARN;
    if (rt_log_get_level() >= RT_LOG_LEVEL_DEBUG) {
        levels |= LLL_NOTICE;
    }
    lws_set_log_level(levels, log_sink);
}

/* --- Tick and signals ----------------------------------------------------------------------- */

static void tick_cb(lws_sorted_usec_list_t *sul)
{
    rt_lws *l = lws_container_of(sul, rt_lws, tick);
    rt_router_tick(l->rt);
    if (l->hook) {
        l->hook(l->hook_ctx);
    }
    lws_sul_schedule(l->ctx, 0, &l->tick, tick_cb, RT_LWS_TICK_US);
}

static void on_signal(rt_lws *l, uint32_t signo)
{
    const char *name = signo == SIGINT ? "SIGINT" : "SIGTERM";
    if (++l->signals == 1) {
        RT_LOG_INFO(0, "%s received: shutting down", name);
        rt_router_begin_shutdown(l->rt);
    } else {
        RT_LOG_WARN(0, "%s received again: stopping now", name);
        l->stopping = true;
    }
}

static int sig_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
    (void)user;
    (void)in;
    (void)len;
    if (reason == LWS_CALLBACK_EVENT_WAIT_CANCELLED) {
        /* lws_cancel_service() (rt_lws_wake()) broadcasts this to every vhost's protocols,
         * with a stand-in wsi whose vhost is set; this vhost is ours alone. */
        rt_lws *hl = lws_get_vhost_user(lws_get_vhost(wsi));
        if (hl && hl->hook) {
            hl->hook(hl->hook_ctx);
        }
        return 0;
    }
    if (reason != LWS_CALLBACK_RAW_RX_FILE) {
        return 0;
    }
    rt_lws *l = lws_get_vhost_user(lws_get_vhost(wsi));
    struct signalfd_siginfo si;
    while (read(l->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        on_signal(l, si.ssi_signo);
    }
    return 0;
}

/* A shared listener's socket is readable: accept what is waiting and hand each connection to
 * the listener's vhost, as lws does for its own listening sockets. */
static int share_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    (void)user;
    (void)in;
    (void)len;
    if (reason != LWS_CALLBACK_RAW_RX_FILE) {
        return 0;
    }
    rt_lws *l = lws_get_vhost_user(lws_get_vhost(wsi));
    int lfd = (int)lws_get_socket_fd(wsi);
    for (size_t i = 0; i < l->n_listeners; i++) {
        rt_lws_listener *ll = &l->listeners[i];
        if (!ll->ws.cfg->shared || ll->ws.cfg->shares_port || ll->share_fd != lfd) {
            continue;
        }
        for (;;) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0 &&
                (fcntl(fd, F_SETFL, O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)) {
                close(fd);
                continue;
            }
            if (fd < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(l->rt), "accept failed", 0,
                                   "accept on a shared listener: %s", strerror(errno));
                }
                break;
            }
            /* Raw-skt role (no LWS_ADOPT_HTTP), TLS if the vhost has it; adoption failures
             * close fd (lws_adopt_descriptor_vhost). */
            lws_sock_file_fd_type u;
            u.sockfd = fd;
            (void)lws_adopt_descriptor_vhost(ll->vh, LWS_ADOPT_SOCKET | LWS_ADOPT_ALLOW_SSL, u,
                                             ll->ws.cfg->kind == RT_TRANSPORT_RAWSOCKET
                                                     ? RT_LWS_RAW_PROTOCOL
                                                     : RT_LWS_FRONT_PROTOCOL,
                                             NULL);
        }
        break;
    }
    return 0;
}

static wamp_err signals_init(rt_lws *l, char *err, size_t err_len)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    l->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (l->sigfd < 0) {
        snprintf(err, err_len, "signalfd: %s", strerror(errno));
        return WAMP_EIO;
    }
    l->sig_protocols[0].name = "rt-signal";
    l->sig_protocols[0].callback = sig_cb;
    l->sig_protocols[1].name = "rt-share";
    l->sig_protocols[1].callback = share_cb;

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.vhost_name = "rt-signal";
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = l->sig_protocols;
    info.user = l;
    struct lws_vhost *vh = lws_create_vhost(l->ctx, &info);
    lws_sock_file_fd_type u;
    u.filefd = (lws_filefd_type)l->sigfd;
    if (!vh || !lws_adopt_descriptor_vhost(vh, LWS_ADOPT_RAW_FILE_DESC, u, "rt-signal", NULL)) {
        snprintf(err, err_len, "cannot watch the signal descriptor");
        return WAMP_EIO;
    }
    l->sigfd_lws = true;
    l->sig_vh = vh;
    return WAMP_OK;
}

/* --- Listeners ------------------------------------------------------------------------------ */

static const char *host_of(const rt_listener *cfg)
{
    return cfg->interface ? cfg->interface : "0.0.0.0";
}

static bool host_port(const rt_listener *cfg, int port, char *buf, size_t len)
{
    const char *host = host_of(cfg);
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(buf, len, "%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
    return n >= 0 && (size_t)n < len;
}

/* Before lws binds a Unix socket path (lws 4.1 unlinks whatever is there first): refuse a
 * path that is not a socket, or a socket some process still accepts on; a stale socket file
 * (connection refused) may be replaced. */
static wamp_err unix_path_check(const rt_listener *cfg, char *err, size_t err_len)
{
    struct stat st;
    const char *path = cfg->unix_path;
    if (lstat(path, &st) != 0) {
        return WAMP_OK; /* absent: bind decides (e.g. a missing directory) */
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, err_len,
                 "cannot listen on %s (listener %s): the file exists and is not a "
                 "socket",
                 path, cfg->id ? cfg->id : "?");
        return WAMP_EIO;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket: %s", strerror(errno));
        return WAMP_EIO;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int e = errno;
    close(fd);
    if (r == 0) {
        snprintf(err, err_len,
                 "cannot listen on %s (listener %s): another process is listening "
                 "on it",
                 path, cfg->id ? cfg->id : "?");
        return WAMP_EIO;
    }
    RT_LOG_INFO(0, "replacing stale Unix socket file %s (%s)", path, strerror(e));
    return WAMP_OK;
}

/* endpoint.shared: opens the listening socket with SO_REUSEPORT on the listener's address and
 * port, and has lws watch it (share_cb() accepts). The address is an IP literal (rt_config
 * checks it) or, absent, every IPv4 interface. */
static wamp_err share_listen(rt_lws *l, rt_lws_listener *ll, int port, char *err, size_t err_len)
{
    const rt_listener *cfg = ll->ws.cfg;
    const char *host = host_of(cfg);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *a4 = (struct sockaddr_in *)(void *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)(void *)&ss;
    socklen_t sl = sizeof(*a4);
    int af = AF_INET;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
    } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        af = AF_INET6;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        sl = sizeof(*a6);
    } else {
        snprintf(err, err_len, "listener %s: \"shared\" needs an IP address as interface",
                 cfg->id ? cfg->id : "?");
        return WAMP_EINVAL;
    }
    char where[128];
    host_port(cfg, port, where, sizeof(where));
    int one = 1;
    int fd = socket(af, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 ||
        (af == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
        bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
        }
        snprintf(err, err_len, "cannot listen on %s (listener %s, shared): %s", where,
                 cfg->id ? cfg->id : "?", strerror(e));
        return WAMP_EIO;
    }
    sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        port = ntohs(af == AF_INET ? a4->sin_port : a6->sin6_port);
    }
    lws_sock_file_fd_type u;
    u.filefd = (lws_filefd_type)fd;
    if (!lws_adopt_descriptor_vhost(l->sig_vh, LWS_ADOPT_RAW_FILE_DESC, u, "rt-share", NULL)) {
        snprintf(err, err_len, "cannot watch the shared socket of %s (listener %s)", where,
                 cfg->id ? cfg->id : "?");
        return WAMP_EIO;
    }
    ll->share_fd = fd; /* lws closes it with its wsi */
    ll->port = port;
    return WAMP_OK;
}

/* Long: a listener's protocol list (its own, a universal transport's RawSocket part, the further
 * WebSocket paths sharing its port) and its vhost's creation info for every kind of listener
 * (WebSocket, RawSocket, universal, Unix socket, TLS), with the lws 4.1 workarounds each needs,
 * before the one lws_create_vhost() call and its error report. */
static wamp_err listener_init(rt_lws *l, size_t i, int port, char *err, size_t err_len)
{
    const rt_listener *cfg = &l->cfg->listeners[i];
    rt_lws_listener *ll = &l->listeners[i];
    char where[128];
    ll->ws.cfg = cfg;
    ll->ws.tearing_down = &l->tearing_down;
    ll->ws.raw_conns = &ll->raw_conns;
    ll->ws.tx_scratch = l->tx_scratch;
    if (cfg->shares_port) {
        /* The RawSocket part of a universal transport, or a further WebSocket path of a web
         * transport: served by the vhost of the listener whose socket it shares (an earlier
         * one), set up there. */
        ll->port = l->listeners[cfg->shares_port_of].port;
        return WAMP_OK;
    }
    bool raw = cfg->kind == RT_TRANSPORT_RAWSOCKET;
    /* A universal transport's RawSocket part and the further WebSocket paths, sharing this
     * listener's socket. */
    const rt_listener *part = NULL;
    size_t n_paths = 1;
    for (size_t j = i + 1; !raw && j < l->cfg->n_listeners; j++) {
        const rt_listener *m = &l->cfg->listeners[j];
        if (m->shares_port && m->shares_port_of == i) {
            if (m->kind == RT_TRANSPORT_RAWSOCKET) {
                part = m;
            } else {
                n_paths++;
            }
        }
    }
    ll->ws.raw_cfg = part;
    ll->paths = calloc(n_paths, sizeof(*ll->paths));
    if (!ll->paths) {
        snprintf(err, err_len, "out of memory");
        return WAMP_ENOMEM;
    }
    ll->paths[0] = (rt_lws_ws_path){.cfg = cfg, .conns = &ll->ws_conns};
    for (size_t j = i + 1, k = 1; !raw && j < l->cfg->n_listeners; j++) {
        const rt_listener *m = &l->cfg->listeners[j];
        if (m->shares_port && m->shares_port_of == i && m->kind != RT_TRANSPORT_RAWSOCKET) {
            ll->paths[k++] = (rt_lws_ws_path){.cfg = m, .conns = &l->listeners[j].ws_conns};
        }
    }
    ll->ws.paths = ll->paths;
    ll->ws.n_paths = n_paths;
    memset(ll->protocols, 0, sizeof(ll->protocols));
    if (raw) {
        rt_lws_raw_protocol(cfg, &ll->protocols[0]);
    } else {
        rt_lws_front_protocol(&ll->protocols[0]);
    }
    bool sers = false;
    for (size_t k = 0; k < n_paths; k++) {
        const rt_listener *pc = ll->paths[k].cfg;
        sers = sers || pc->ser_json || pc->ser_msgpack || pc->ser_cbor;
    }
    if (!sers) {
        snprintf(err, err_len, "listener %s enables no serializer", cfg->id ? cfg->id : "?");
        return WAMP_EINVAL;
    }
    if (cfg->unix_path) {
        wamp_err e = unix_path_check(cfg, err, err_len);
        if (e != WAMP_OK) {
            return e;
        }
    }

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.vhost_name = cfg->id ? cfg->id : "wamp";
    info.iface = cfg->unix_path ? cfg->unix_path : cfg->interface;
    info.port = cfg->unix_path ? 0 : port;
    if (cfg->shared) {
        /* wampscope opens the socket (share_listen()); the vhost serves what it accepts. */
        info.iface = NULL;
        info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
    }
    info.protocols = ll->protocols;
    info.user = &ll->ws;
    /* Without this, lws 4.1 treats an address it cannot bind as an interface that may come up
     * later: the vhost is created, listens on nothing and retries every second. */
    info.options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    /* Every accepted connection goes straight to the raw-skt role and our protocol. */
    info.options |= LWS_SERVER_OPTION_ADOPT_APPLY_LISTEN_ACCEPT_CONFIG;
    info.listen_accept_role = "raw-skt";
    info.listen_accept_protocol = raw ? RT_LWS_RAW_PROTOCOL : RT_LWS_FRONT_PROTOCOL;
    if (cfg->unix_path) {
        info.options |= LWS_SERVER_OPTION_UNIX_SOCK;
    }
    if (cfg->tls_certificate) {
        /* lws 4.1 loads the certificate with SSL_CTX_use_certificate_chain_file(): a chain
         * appended to the file is sent too. A client that does not speak TLS fails its
         * handshake and is dropped (no LWS_SERVER_OPTION_ALLOW_NON_SSL_ON_SSL_PORT). */
        info.ssl_cert_filepath = cfg->tls_certificate;
        info.ssl_private_key_filepath = cfg->tls_key;
        info.ssl_cipher_list = cfg->tls_ciphers;
        /* lws 4.1 sets up a vhost's TLS only when the vhost's own options carry this too
         * (tls-server.c, lws_context_init_server_ssl). */
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        /* Every end of SSL_accept() reaches the protocol as LWS_CALLBACK_SSL_INFO: lws 4.1
         * closes a connection whose TLS handshake failed without any other callback
         * (rt_lws_on_ssl_info()). */
        info.ssl_info_event_mask = SSL_CB_EXIT;
    }
    /* lws 4.1.6 binds an IPv6 socket when IPv6 is enabled, and its lws_interface_to_sa() then
     * writes an IPv4 literal into the sockaddr_in6 at the wrong offset: "127.0.0.1" would
     * listen on all interfaces. An IPv4 literal therefore gets an IPv4-only vhost. */
    struct in_addr a4;
    if (cfg->interface && inet_pton(AF_INET, cfg->interface, &a4) == 1) {
        info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    }
    errno = 0;
    ll->vh = lws_create_vhost(l->ctx, &info);
    if (!ll->vh) {
        int e = errno;
        if (cfg->unix_path) {
            snprintf(where, sizeof(where), "%s", cfg->unix_path);
        } else {
            host_port(cfg, port, where, sizeof(where));
        }
        if (cfg->tls_certificate) {
            /* errno says nothing about a TLS failure; lws logged OpenSSL's reason. */
            snprintf(err, err_len,
                     "cannot listen on %s (listener %s) with certificate %s and key %s: see "
                     "the log above",
                     where, cfg->id ? cfg->id : "?", cfg->tls_certificate, cfg->tls_key);
        } else {
            snprintf(err, err_len, "cannot listen on %s (listener %s): %s", where,
                     cfg->id ? cfg->id : "?", e ? strerror(e) : "see the log above");
        }
        return WAMP_EIO;
    }
    if (cfg->shared) {
        return share_listen(l, ll, port, err, err_len);
    }
    ll->port = cfg->unix_path ? 0 : lws_get_vhost_listen_port(ll->vh);
    if (cfg->unix_path) {
        struct stat st;
        if (lstat(cfg->unix_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
            ll->unix_made = true;
            ll->unix_dev = st.st_dev;
            ll->unix_ino = st.st_ino;
        }
        if (chmod(cfg->unix_path, RT_LWS_UNIX_MODE) != 0) {
            snprintf(err, err_len, "cannot set the mode of %s (listener %s): %s", cfg->unix_path,
                     cfg->id ? cfg->id : "?", strerror(errno));
            return WAMP_EIO;
        }
    }
    return WAMP_OK;
}

/* Removes the socket file of a Unix listener if it is still the one we made. */
static void unix_cleanup(const rt_lws_listener *ll)
{
    struct stat st;
    const char *path = ll->ws.cfg ? ll->ws.cfg->unix_path : NULL;
    if (!ll->unix_made || !path) {
        return;
    }
    if (lstat(path, &st) == 0 && st.st_dev == ll->unix_dev && st.st_ino == ll->unix_ino) {
        unlink(path);
    }
}

/* --- Life cycle ----------------------------------------------------------------------------- */

wamp_err rt_lws_new(rt_router *rt, const rt_lws_options *opt, rt_lws **out, char *err,
                    size_t err_len)
{
    wamp_err e = WAMP_ENOMEM;
    *out = NULL;
    rt_lws *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, err_len, "out of memory");
        return WAMP_ENOMEM;
    }
    l->rt = rt;
    l->cfg = rt_router_config(rt);
    l->sigfd = -1;
    l->tx_scratch = malloc(RT_LWS_WS_SCRATCH);
    if (l->cfg->n_listeners) {
        l->listeners = calloc(l->cfg->n_listeners, sizeof(*l->listeners));
    }
    if (!l->tx_scratch || (l->cfg->n_listeners && !l->listeners)) {
        snprintf(err, err_len, "out of memory");
        goto fail;
    }

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    /* Vhosts are created one per listener below; the context only carries the router. */
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
    for (size_t i = 0; i < l->cfg->n_listeners; i++) {
        if (l->cfg->listeners[i].tls_certificate) {
            info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        }
    }
    info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
    info.user = rt;
    l->ctx = lws_create_context(&info);
    if (!l->ctx) {
        snprintf(err, err_len, "cannot create the libwebsockets context");
        goto fail;
    }
    e = signals_init(l, err, err_len);
    if (e != WAMP_OK) {
        goto fail;
    }

    bool overridden = false;
    for (size_t i = 0; i < l->cfg->n_listeners; i++) {
        int port = l->cfg->listeners[i].port;
        if (opt && opt->port_override >= 0 && !overridden &&
            l->cfg->listeners[i].kind == RT_TRANSPORT_WEBSOCKET) {
            port = opt->port_override;
            overridden = true;
        }
        e = listener_init(l, i, port, err, err_len);
        if (e != WAMP_OK) {
            goto fail;
        }
        l->n_listeners++;
    }

    e = rt_lws_http_new(l->ctx, rt, &l->metrics, err, err_len);
    if (e != WAMP_OK) {
        goto fail;
    }

    lws_sul_schedule(l->ctx, 0, &l->tick, tick_cb, RT_LWS_TICK_US);
    *out = l;
    return WAMP_OK;
fail:
    rt_lws_free(l);
    return e;
}

size_t rt_lws_listener_count(const rt_lws *l)
{
    return l->n_listeners;
}

int rt_lws_listener_port(const rt_lws *l, size_t i)
{
    return l->listeners[i].port;
}

bool rt_lws_listener_url(const rt_lws *l, size_t i, char *buf, size_t len)
{
    const rt_listener *cfg = l->listeners[i].ws.cfg;
    char where[128];
    int n;
    if (cfg->kind == RT_TRANSPORT_RAWSOCKET) {
        /* autobahn's RawSocket URL forms (autobahn/rawsocket/util.py). */
        if (cfg->unix_path) {
            n = snprintf(buf, len, "rs://unix:%s", cfg->unix_path);
        } else if (!host_port(cfg, l->listeners[i].port, where, sizeof(where))) {
            return false;
        } else {
            n = snprintf(buf, len, "%s://%s", cfg->tls_certificate ? "rss" : "rs", where);
        }
        return n >= 0 && (size_t)n < len;
    }
    if (!host_port(cfg, l->listeners[i].port, where, sizeof(where))) {
        return false;
    }
    if (!cfg->path) {
        /* A web transport with HTTP services only. */
        n = snprintf(buf, len, "%s://%s/", cfg->tls_certificate ? "https" : "http", where);
        return n >= 0 && (size_t)n < len;
    }
    const char *path = cfg->path;
    n = snprintf(buf, len, "%s://%s%s%s", cfg->tls_certificate ? "wss" : "ws", where,
                 path[0] == '/' ? "" : "/", path);
    return n >= 0 && (size_t)n < len;
}

bool rt_lws_metrics_url(const rt_lws *l, char *buf, size_t len)
{
    return rt_lws_http_url(l->metrics, buf, len);
}

wamp_err rt_lws_run(rt_lws *l)
{
    while (!l->stopping && !rt_router_shutdown_done(l->rt)) {
        if (lws_service(l->ctx, 0) < 0) {
            RT_LOG_ERR(0, "the libwebsockets service loop failed");
            return WAMP_EIO;
        }
    }
    return WAMP_OK;
}

void rt_lws_set_service_hook(rt_lws *l, void (*fn)(void *ctx), void *ctx)
{
    l->hook = fn;
    l->hook_ctx = ctx;
}

void rt_lws_wake(void *ctx)
{
    lws_cancel_service(((rt_lws *)ctx)->ctx);
}

void rt_lws_free(rt_lws *l)
{
    if (!l) {
        return;
    }
    l->tearing_down = true;
    if (l->ctx) {
        lws_sul_cancel(&l->tick);
        /* Closes every connection: each gets LWS_CALLBACK_CLOSED -> rt_session_on_closed(). */
        lws_context_destroy(l->ctx);
    }
    rt_lws_http_free(l->metrics);
    if (l->sigfd >= 0 && !l->sigfd_lws) {
        close(l->sigfd);
    }
    for (size_t i = 0; l->listeners && i < l->cfg->n_listeners; i++) {
        unix_cleanup(&l->listeners[i]);
        free(l->listeners[i].paths);
    }
    free(l->listeners);
    free(l->tx_scratch);
    free(l);
}
