/* ctl_client.c: see ctl_client.h. One lws context with one client connection; the public calls
 * spin lws_service() until their condition holds. A 50 ms sul keeps the loop waking up, so
 * timeouts and the interrupt flag are checked even when the network is silent. */
#include "ctl_client.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libwebsockets.h>
#include <sodium.h>

#include "wamp_codec.h"
#include "wamp_types.h"

/* Largest message accepted from the router (a get_trace_data page of 10000 big records). */
#define CTL_MAX_RX  (512u * 1024u * 1024u)
#define CTL_TICK_US (50 * LWS_US_PER_MS)

typedef struct tx_item {
    struct tx_item *next;
    size_t len;
    unsigned char data[]; /* LWS_PRE bytes of headroom, then the message */
} tx_item;

typedef struct ev_item {
    struct ev_item *next;
    uint64_t sub;
    json_t *args;
} ev_item;

typedef enum cstate {
    ST_CONNECTING,
    ST_JOINING,
    ST_JOINED,
    ST_LEAVING,
    ST_CLOSED
} cstate;

struct ctl_client {
    struct lws_context *ctx;
    struct lws *wsi;
    lws_sorted_usec_list_t tick;
    const ctl_auth *auth;
    const char *realm;
    const char *url;
    int timeout_ms;
    volatile sig_atomic_t *interrupt;
    cstate state;
    ctl_error err; /* why the connection failed or closed (first reason wins) */
    unsigned char *rx;
    size_t rx_len, rx_cap;
    tx_item *tx_head, *tx_tail;
    ev_item *ev_head, *ev_tail;
    uint64_t next_request;
    /* The one request in flight (calls are sequential). */
    uint64_t req;
    bool req_done;
    json_t *req_reply; /* RESULT or ERROR message, or SUBSCRIBED */
};

static void set_err(ctl_error *e, ctl_error_kind kind, const char *uri, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void set_err(ctl_error *e, ctl_error_kind kind, const char *uri, const char *fmt, ...)
{
    e->kind = kind;
    snprintf(e->uri, sizeof(e->uri), "%s", uri ? uri : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    /* One line: cut at the first newline. */
    e->msg[strcspn(e->msg, "\r\n")] = '\0';
}

static void fail_conn(ctl_client *c, ctl_error_kind kind, const char *uri, const char *msg)
{
    if (c->err.kind == CTL_E_NONE) {
        set_err(&c->err, kind, uri, "%s", msg);
    }
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Queues one message (consumed) for the next WRITEABLE. */
static bool send_msg(ctl_client *c, json_t *msg_take)
{
    if (!msg_take || !c->wsi || c->state == ST_CLOSED) {
        json_decref(msg_take);
        return false;
    }
    char *text = json_dumps(msg_take, JSON_COMPACT);
    json_decref(msg_take);
    if (!text) {
        return false;
    }
    size_t len = strlen(text);
    tx_item *it = malloc(sizeof(*it) + LWS_PRE + len);
    if (!it) {
        free(text);
        return false;
    }
    it->next = NULL;
    it->len = len;
    memcpy(it->data + LWS_PRE, text, len);
    free(text);
    if (c->tx_tail) {
        c->tx_tail->next = it;
    } else {
        c->tx_head = it;
    }
    c->tx_tail = it;
    lws_callback_on_writable(c->wsi);
    return true;
}

static void hello(ctl_client *c)
{
    json_t *details = json_pack("{s:{s:{}, s:{}}}", "roles", "caller", "subscriber");
    if (!details || !ctl_auth_hello_details(c->auth, details)) {
        json_decref(details);
        fail_conn(c, CTL_E_LOCAL, NULL, "out of memory");
        return;
    }
    send_msg(c, json_pack("[i, s, o]", WAMP_MSG_HELLO, c->realm, details));
}

static const char *args0(const json_t *args)
{
    const char *s = json_string_value(json_array_get(args, 0));
    return s ? s : "";
}

static void on_challenge(ctl_client *c, const json_t *m)
{
    char why[256] = "";
    const char *method = json_string_value(json_array_get(m, 1));
    char *sig = ctl_auth_signature(c->auth, method, json_array_get(m, 2), why, sizeof(why));
    if (!sig) {
        fail_conn(c, CTL_E_AUTH, NULL, why);
        send_msg(c, json_pack("[i, {s:s}, s]", WAMP_MSG_ABORT, "message", why,
                              "wamp.error.authentication_failed"));
        return;
    }
    send_msg(c, json_pack("[i, s, {}]", WAMP_MSG_AUTHENTICATE, sig));
    sodium_memzero(sig, strlen(sig));
    free(sig);
}

static void on_message(ctl_client *c, json_t *m)
{
    json_int_t type = json_integer_value(json_array_get(m, 0));
    switch (type) {
    case WAMP_MSG_WELCOME:
        c->state = ST_JOINED;
        break;
    case WAMP_MSG_CHALLENGE:
        on_challenge(c, m);
        break;
    case WAMP_MSG_ABORT: {
        const char *reason = json_string_value(json_array_get(m, 2));
        const char *msg = json_string_value(json_object_get(json_array_get(m, 1), "message"));
        fail_conn(c, c->state == ST_JOINED ? CTL_E_LOST : CTL_E_AUTH, reason,
                  msg ? msg : "session aborted by the router");
        c->state = ST_CLOSED;
        break;
    }
    case WAMP_MSG_GOODBYE:
        if (c->state != ST_LEAVING) {
            send_msg(c, json_pack("[i, {}, s]", WAMP_MSG_GOODBYE, "wamp.close.goodbye_and_out"));
            fail_conn(c, CTL_E_LOST, json_string_value(json_array_get(m, 2)),
                      "the router closed the session");
        }
        c->state = ST_CLOSED;
        break;
    case WAMP_MSG_RESULT:
    case WAMP_MSG_SUBSCRIBED:
        if ((uint64_t)json_integer_value(json_array_get(m, 1)) == c->req && !c->req_done) {
            c->req_done = true;
            c->req_reply = json_incref(m);
        }
        break;
    case WAMP_MSG_ERROR:
        if ((uint64_t)json_integer_value(json_array_get(m, 2)) == c->req && !c->req_done) {
            c->req_done = true;
            c->req_reply = json_incref(m);
        }
        break;
    case WAMP_MSG_EVENT: {
        ev_item *ev = calloc(1, sizeof(*ev));
        if (!ev) {
            break;
        }
        ev->sub = (uint64_t)json_integer_value(json_array_get(m, 1));
        json_t *a = json_array_get(m, 4);
        ev->args = json_is_array(a) ? json_incref(a) : json_array();
        if (c->ev_tail) {
            c->ev_tail->next = ev;
        } else {
            c->ev_head = ev;
        }
        c->ev_tail = ev;
        break;
    }
    default:
        break;
    }
}

static int rx_chunk(ctl_client *c, struct lws *wsi, const void *in, size_t len)
{
    if (c->rx_len + len > CTL_MAX_RX) {
        fail_conn(c, CTL_E_LOCAL, NULL, "message from the router too big");
        return -1;
    }
    if (c->rx_len + len > c->rx_cap) {
        size_t cap = c->rx_cap ? c->rx_cap : 65536;
        while (cap < c->rx_len + len) {
            cap *= 2;
        }
        unsigned char *p = realloc(c->rx, cap);
        if (!p) {
            fail_conn(c, CTL_E_LOCAL, NULL, "out of memory");
            return -1;
        }
        c->rx = p;
        c->rx_cap = cap;
    }
    memcpy(c->rx + c->rx_len, in, len);
    c->rx_len += len;
    if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0) {
        return 0;
    }
    json_t *m = NULL;
    char why[128];
    wamp_err err = wamp_codec_decode(WAMP_SER_JSON, c->rx, c->rx_len, &m, why, sizeof(why));
    c->rx_len = 0;
    if (err != WAMP_OK || !json_is_array(m)) {
        json_decref(m);
        fail_conn(c, CTL_E_LOST, NULL, "undecodable message from the router");
        return -1;
    }
    on_message(c, m);
    json_decref(m);
    return 0;
}

static int client_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                     size_t len)
{
    ctl_client *c = lws_context_user(lws_get_context(wsi));
    (void)user;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        char msg[400];
        const char *what = in && len ? (const char *)in : "connection failed";
        int wlen = in && len ? (int)len : (int)strlen(what);
        bool tls_err = strncmp(c->url, "wss:", 4) == 0 && strstr(what, "SSL") != NULL;
        snprintf(msg, sizeof(msg), "cannot connect to %s: %.*s%s", c->url, wlen, what,
                 tls_err ? " (TLS handshake failed: is the router's certificate trusted? see "
                           "--ca-file)"
                         : "");
        fail_conn(c, CTL_E_CONNECT, NULL, msg);
        c->wsi = NULL;
        c->state = ST_CLOSED;
        return 0;
    }
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        c->state = ST_JOINING;
        hello(c);
        return 0;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        return rx_chunk(c, wsi, in, len);
    case LWS_CALLBACK_CLIENT_WRITEABLE: {
        tx_item *it = c->tx_head;
        if (!it) {
            return c->state == ST_CLOSED ? -1 : 0;
        }
        c->tx_head = it->next;
        if (!c->tx_head) {
            c->tx_tail = NULL;
        }
        int n = lws_write(wsi, it->data + LWS_PRE, it->len, LWS_WRITE_TEXT);
        bool ok = n >= 0 && (size_t)n == it->len;
        free(it);
        if (!ok) {
            fail_conn(c, CTL_E_LOST, NULL, "write to the router failed");
            return -1;
        }
        if (c->tx_head) {
            lws_callback_on_writable(wsi);
        } else if (c->state == ST_CLOSED) {
            return -1; /* our last words (GOODBYE / ABORT) are out */
        }
        return 0;
    }
    case LWS_CALLBACK_CLIENT_CLOSED:
        fail_conn(c, CTL_E_LOST, NULL, "connection closed by the router");
        c->wsi = NULL;
        c->state = ST_CLOSED;
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols protocols[] = {
        {.name = WAMP_SUBPROTOCOL_JSON, .callback = client_cb, .rx_buffer_size = 65536},
        {0},
};

static void tick_cb(lws_sorted_usec_list_t *sul)
{
    ctl_client *c = lws_container_of(sul, ctl_client, tick);
    lws_sul_schedule(c->ctx, 0, &c->tick, tick_cb, CTL_TICK_US);
}

/* Services until done(c) holds; false with e filled on timeout (timeout_ms >= 0), interrupt,
 * or a closed connection. */
static bool run_until(ctl_client *c, bool (*done)(const ctl_client *), int timeout_ms, ctl_error *e)
{
    int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : INT64_MAX;
    for (;;) {
        if (done(c)) {
            return true;
        }
        if (c->state == ST_CLOSED) {
            *e = c->err;
            if (e->kind == CTL_E_NONE) {
                set_err(e, CTL_E_LOST, NULL, "connection closed");
            }
            return false;
        }
        if (c->interrupt && *c->interrupt) {
            set_err(e, CTL_E_INTERRUPTED, NULL, "interrupted");
            return false;
        }
        if (now_ms() >= deadline) {
            set_err(e, CTL_E_TIMEOUT, NULL, "no answer from the router within %d ms", timeout_ms);
            return false;
        }
        if (lws_service(c->ctx, 0) < 0) {
            set_err(e, CTL_E_LOST, NULL, "event loop failed");
            return false;
        }
    }
}

static bool is_joined(const ctl_client *c)
{
    return c->state == ST_JOINED;
}

static bool req_is_done(const ctl_client *c)
{
    return c->req_done;
}

static bool has_event(const ctl_client *c)
{
    return c->ev_head != NULL;
}

static bool tx_drained_or_closed(const ctl_client *c)
{
    return c->tx_head == NULL || c->wsi == NULL;
}

static void client_free(ctl_client *c)
{
    if (!c) {
        return;
    }
    if (c->ctx) {
        lws_context_destroy(c->ctx);
    }
    while (c->tx_head) {
        tx_item *n = c->tx_head->next;
        free(c->tx_head);
        c->tx_head = n;
    }
    while (c->ev_head) {
        ev_item *n = c->ev_head->next;
        json_decref(c->ev_head->args);
        free(c->ev_head);
        c->ev_head = n;
    }
    json_decref(c->req_reply);
    free(c->rx);
    free(c);
}

void ctl_client_log_init(void)
{
    lws_set_log_level(0, NULL);
}

/* Long: the client's connection sequence (lws context, connect, WebSocket upgrade, HELLO,
 * authentication, WELCOME), each failure reported with its own ctl_error and unwound in one
 * place. */
bool ctl_client_open(const ctl_client_opts *o, ctl_client **out, ctl_error *e)
{
    static const ctl_auth anonymous = {.method = CTL_AUTH_ANONYMOUS};
    *out = NULL;
    memset(e, 0, sizeof(*e));
    char url[1024];
    if (snprintf(url, sizeof(url), "%s", o->url) >= (int)sizeof(url)) {
        set_err(e, CTL_E_USAGE, NULL, "URL too long");
        return false;
    }
    const char *prot = NULL, *host = NULL, *p = NULL;
    int port = 0;
    if (lws_parse_uri(url, &prot, &host, &port, &p) != 0 || !*host ||
        (strcmp(prot, "ws") != 0 && strcmp(prot, "wss") != 0)) {
        set_err(e, CTL_E_USAGE, NULL, "bad URL \"%s\" (expected ws://HOST:PORT/PATH)", o->url);
        return false;
    }
    bool tls = strcmp(prot, "wss") == 0;
    if (port == 0 || (port == 80 && tls && !strstr(o->url, ":80"))) {
        port = tls ? 443 : 80;
    }
    char path[1024];
    snprintf(path, sizeof(path), "/%s", p);

    ctl_client *c = calloc(1, sizeof(*c));
    if (!c) {
        set_err(e, CTL_E_LOCAL, NULL, "out of memory");
        return false;
    }
    c->auth = o->auth ? o->auth : &anonymous;
    c->realm = o->realm;
    c->url = o->url;
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    c->interrupt = o->interrupt;
    c->next_request = 1;
    c->state = ST_CONNECTING;

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof(info));
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols;
    info.user = c;
    info.gid = -1;
    info.uid = -1;
    if (tls) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.client_ssl_ca_filepath = o->ca_file;
    }
    c->ctx = lws_create_context(&info);
    if (!c->ctx) {
        set_err(e, CTL_E_LOCAL, NULL, "cannot create the libwebsockets context");
        client_free(c);
        return false;
    }
    lws_sul_schedule(c->ctx, 0, &c->tick, tick_cb, CTL_TICK_US);

    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof(ci));
    ci.context = c->ctx;
    ci.address = host;
    ci.port = port;
    ci.path = path;
    ci.host = host;
    ci.origin = host;
    ci.protocol = WAMP_SUBPROTOCOL_JSON;
    ci.ssl_connection = tls ? LCCSCF_USE_SSL : 0;
    ci.pwsi = &c->wsi;
    if (!lws_client_connect_via_info(&ci) && c->err.kind == CTL_E_NONE) {
        fail_conn(c, CTL_E_CONNECT, NULL, "cannot connect");
        c->state = ST_CLOSED;
    }
    if (!run_until(c, is_joined, c->timeout_ms, e)) {
        if (e->kind == CTL_E_LOST && c->state != ST_JOINED) {
            /* Closed during the opening handshake without an ABORT: not a WAMP router there,
             * or the WebSocket upgrade was refused. */
            e->kind = CTL_E_CONNECT;
            snprintf(e->msg, sizeof(e->msg),
                     "cannot connect: the server closed the connection "
                     "during the opening handshake");
        }
        client_free(c);
        return false;
    }
    *out = c;
    return true;
}

void ctl_client_close(ctl_client *c)
{
    if (!c) {
        return;
    }
    if (c->state == ST_JOINED && c->wsi) {
        c->state = ST_LEAVING;
        send_msg(c, json_pack("[i, {}, s]", WAMP_MSG_GOODBYE, "wamp.close.close_realm"));
        ctl_error e;
        volatile sig_atomic_t *saved = c->interrupt;
        c->interrupt = NULL; /* leaving after Ctrl-C must still say GOODBYE */
        (void)run_until(c, tx_drained_or_closed, 1000, &e);
        /* Wait briefly for the router's GOODBYE, then close the WebSocket. */
        int64_t deadline = now_ms() + 1000;
        while (c->state != ST_CLOSED && c->wsi && now_ms() < deadline) {
            if (lws_service(c->ctx, 0) < 0) {
                break;
            }
        }
        c->interrupt = saved;
    }
    client_free(c);
}

/* Sends msg (consumed) as request c->req and waits for its answer. */
static bool request(ctl_client *c, json_t *msg_take, json_t **reply, ctl_error *e)
{
    memset(e, 0, sizeof(*e));
    *reply = NULL;
    c->req_done = false;
    json_decref(c->req_reply);
    c->req_reply = NULL;
    if (c->state != ST_JOINED || !send_msg(c, msg_take)) {
        *e = c->err;
        if (e->kind == CTL_E_NONE) {
            set_err(e, CTL_E_LOST, NULL, "not connected");
        }
        return false;
    }
    if (!run_until(c, req_is_done, c->timeout_ms, e)) {
        return false;
    }
    *reply = c->req_reply;
    c->req_reply = NULL;
    return true;
}

static bool reply_error(json_t *reply, ctl_error *e)
{
    if (json_integer_value(json_array_get(reply, 0)) != WAMP_MSG_ERROR) {
        return false;
    }
    const char *uri = json_string_value(json_array_get(reply, 4));
    const char *msg = args0(json_array_get(reply, 5));
    set_err(e, CTL_E_WAMP, uri ? uri : "wamp.error.unknown", "%s", msg);
    return true;
}

bool ctl_client_call(ctl_client *c, const char *procedure, json_t *args_take, json_t *kwargs_take,
                     json_t **result, ctl_error *e)
{
    *result = NULL;
    c->req = c->next_request++;
    json_t *msg = json_pack("[i, I, {}, s, o, o]", WAMP_MSG_CALL, (json_int_t)c->req, procedure,
                            args_take ? args_take : json_array(),
                            kwargs_take ? kwargs_take : json_object());
    json_t *reply;
    if (!request(c, msg, &reply, e)) {
        return false;
    }
    if (reply_error(reply, e)) {
        json_decref(reply);
        return false;
    }
    json_t *a = json_array_get(reply, 3);
    *result = json_is_array(a) ? json_incref(a) : json_array();
    json_decref(reply);
    return *result != NULL;
}

bool ctl_client_subscribe(ctl_client *c, const char *topic, uint64_t *sub, ctl_error *e)
{
    c->req = c->next_request++;
    json_t *msg = json_pack("[i, I, {}, s]", WAMP_MSG_SUBSCRIBE, (json_int_t)c->req, topic);
    json_t *reply;
    if (!request(c, msg, &reply, e)) {
        return false;
    }
    if (reply_error(reply, e)) {
        json_decref(reply);
        return false;
    }
    *sub = (uint64_t)json_integer_value(json_array_get(reply, 2));
    json_decref(reply);
    return true;
}

bool ctl_client_next_event(ctl_client *c, int timeout_ms, uint64_t *sub, json_t **args,
                           ctl_error *e)
{
    memset(e, 0, sizeof(*e));
    *args = NULL;
    if (!c->ev_head && !run_until(c, has_event, timeout_ms, e)) {
        return false;
    }
    ev_item *ev = c->ev_head;
    c->ev_head = ev->next;
    if (!c->ev_head) {
        c->ev_tail = NULL;
    }
    *sub = ev->sub;
    *args = ev->args;
    free(ev);
    return true;
}
