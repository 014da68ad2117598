/* ctl_client.h: a small blocking WAMP client (caller + subscriber roles, JSON serializer) on a
 * libwebsockets client connection, for wampscope-ctl.
 *
 * Every call runs the lws service loop until its answer arrives, the connection is lost, the
 * timeout passes or *interrupt becomes non-zero (SIGINT). EVENTs that arrive meanwhile are
 * queued and handed out by ctl_client_next_event().
 * Authentication (HELLO authmethods): ticket, wampcra (with salted secrets) and cryptosign, as the
 * WAMP spec's "Authentication" section describes; anonymous when no credential is given.
 * Ownership: the client owns its lws context; values returned to the caller are the caller's.
 * Single-threaded. */
#ifndef CTL_CLIENT_H
#define CTL_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ctl_auth.h"

typedef struct ctl_client ctl_client;

/* What went wrong; ctl_main.c maps kinds to exit statuses. */
typedef enum ctl_error_kind {
    CTL_E_NONE = 0,
    CTL_E_USAGE,       /* bad URL or arguments */
    CTL_E_CONNECT,     /* TCP / WebSocket connection failed (refused, unreachable, handshake) */
    CTL_E_AUTH,        /* the router answered HELLO/AUTHENTICATE with ABORT */
    CTL_E_WAMP,        /* the router answered a CALL or SUBSCRIBE with ERROR (uri holds it) */
    CTL_E_LOST,        /* the connection closed while waiting */
    CTL_E_TIMEOUT,     /* no answer in time */
    CTL_E_INTERRUPTED, /* *interrupt became non-zero */
    CTL_E_LOCAL        /* out of memory, a local file, a credential that cannot be read */
} ctl_error_kind;

typedef struct ctl_error {
    ctl_error_kind kind;
    char uri[160]; /* the WAMP error / ABORT reason URI, "" if none */
    char msg[512]; /* one human-readable line */
} ctl_error;

typedef struct ctl_client_opts {
    const char *url;      /* ws://host:port/path or wss://... */
    const char *realm;    /* realm to join */
    const ctl_auth *auth; /* credentials (NULL = anonymous) */
    int timeout_ms;       /* per connect / call */
    const char *ca_file;  /* wss://: PEM file of the CA(s) to trust instead of the system\'s */
    volatile sig_atomic_t *interrupt; /* may be NULL */
} ctl_client_opts;

/* Silences libwebsockets' own logging (errors reach the user as ctl_error lines). Call once
 * from main() before ctl_client_open(). */
void ctl_client_log_init(void);

/* Connects and joins. true with *out set; false with e filled (CTL_E_USAGE, CTL_E_CONNECT,
 * CTL_E_AUTH, CTL_E_TIMEOUT, CTL_E_INTERRUPTED, CTL_E_LOCAL) and *out NULL. */
bool ctl_client_open(const ctl_client_opts *o, ctl_client **out, ctl_error *e);
/* Leaves (GOODBYE, waiting briefly for the answer) and frees. NULL-safe. */
void ctl_client_close(ctl_client *c);

/* CALLs procedure with args / kwargs (consumed; NULL = none). true: *result = the RESULT's
 * Arguments list (owned; an empty list if none). false: e filled (CTL_E_WAMP with the error
 * URI and args[0] as msg, or a transport kind). */
bool ctl_client_call(ctl_client *c, const char *procedure, json_t *args_take, json_t *kwargs_take,
                     json_t **result, ctl_error *e);

/* SUBSCRIBEs to topic; *sub = the subscription id. */
bool ctl_client_subscribe(ctl_client *c, const char *topic, uint64_t *sub, ctl_error *e);

/* The next queued or arriving EVENT: *sub = its subscription, *args = its Arguments (owned,
 * an empty list if none). Waits up to timeout_ms (-1: without limit). false with e->kind
 * CTL_E_TIMEOUT, CTL_E_LOST or CTL_E_INTERRUPTED. */
bool ctl_client_next_event(ctl_client *c, int timeout_ms, uint64_t *sub, json_t **args,
                           ctl_error *e);

#endif /* CTL_CLIENT_H */
