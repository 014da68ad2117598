/* rt_config.h: the router's configuration, read from a Crossbar.io node configuration file
 * (version 2: controller + one worker of type "router" with realms and transports), plus
 * wampscope's own keys under the worker's "wampscope" object. See configs/README.md.
 * Ownership: rt_config_load_*() return an owned, immutable config; everything inside belongs to
 * it. Free with rt_config_free(). Unknown keys and unsupported Crossbar features are refused. */
#ifndef RT_CONFIG_H
#define RT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wamp_err.h"
#include "wamp_uri.h"

/* Limits. Defaults in parentheses. */
typedef struct rt_limits {
    size_t max_message_size;   /* bytes of one incoming or outgoing message (16 MiB) */
    size_t max_queue_bytes;    /* bytes queued for one session before it is disconnected (64 MiB) */
    size_t max_queue_messages; /* messages queued for one session (1,000,000) */
    uint32_t hello_timeout_ms; /* connection must send HELLO within this (10,000) */
    uint32_t shutdown_grace_ms; /* SIGTERM: wait this long for sessions to close (2,000) */
} rt_limits;

/* One role's permission on a URI pattern (Crossbar "permissions" entry). */
typedef struct rt_permission {
    char *uri;        /* pattern; "" with PREFIX = everything */
    wamp_match match; /* "match" key; without it Crossbar's star convention decides: no "*" =
                       * exact, one trailing "*" = prefix ("*" alone = everything), other "*"s =
                       * wildcard (see configs/README.md) */
    bool allow_call, allow_register, allow_publish, allow_subscribe;
    bool disclose_caller, disclose_publisher;
} rt_permission;

typedef struct rt_role {
    char *name;
    rt_permission *permissions;
    size_t n_permissions;
} rt_role;

typedef struct rt_realm_config {
    char *name;
    rt_role *roles;
    size_t n_roles;
} rt_realm_config;

typedef enum rt_transport_kind {
    RT_TRANSPORT_WEBSOCKET /* "websocket", or a "web" transport's websocket path */
} rt_transport_kind;

typedef struct rt_listener {
    char *id; /* transport "id", or "transport<N>" */
    rt_transport_kind kind;
    char *interface; /* endpoint.interface; NULL = all interfaces (Crossbar's default) */
    int port;        /* endpoint.port, 0..65535 (0 = ephemeral) */
    char *path;      /* HTTP path of the WebSocket endpoint, "/" or "/ws" etc. */
    bool ser_json;   /* "serializers" contains "json" (default both) */
    bool ser_msgpack;
    size_t max_message_size; /* options.max_message_size, defaults to limits.max_message_size */
    uint32_t auto_ping_interval_ms; /* options.auto_ping_interval (0 = off) */
    uint32_t auto_ping_timeout_ms;  /* options.auto_ping_timeout */
    /* auth.anonymous.role; "anonymous" when the transport has no "auth" section (Crossbar's
     * default); NULL when an "auth" section exists without "anonymous" (anonymous refused). */
    char *anonymous_role;
} rt_listener;

typedef struct rt_config {
    char *node_id;   /* controller.id; default: host name */
    char *worker_id; /* workers[i].id; default "router1" */
    rt_realm_config *realms;
    size_t n_realms;
    rt_listener *listeners;
    size_t n_listeners;
    rt_limits limits;          /* wampscope.limits */
    char *mgmt_realm;          /* wampscope.management.realm (default "mgmt") */
    bool mgmt_enabled;         /* wampscope.management.enabled (default true) */
    size_t tracing_max_traces; /* wampscope.tracing.max_traces (default 16) */
    char *log_level;           /* wampscope.log_level or NULL (then the command line decides) */
} rt_config;

/* Parses the JSON text of a configuration. On failure returns WAMP_EINVAL (or WAMP_ENOMEM) and
 * writes a one-line message naming the offending key path (e.g.
 * "workers[0].transports[1].endpoint.port: must be an integer 0..65535") into err. */
wamp_err rt_config_load_string(const char *text, size_t len, rt_config **out, char *err,
                               size_t err_len);
/* Reads path and parses it; the message in err starts with the path. */
wamp_err rt_config_load_file(const char *path, rt_config **out, char *err, size_t err_len);
/* The embedded default (configs/default.json compiled in). */
wamp_err rt_config_load_default(rt_config **out, char *err, size_t err_len);
/* NULL-safe. */
void rt_config_free(rt_config *cfg);
/* Borrowed: the realm config with that name, or NULL. */
const rt_realm_config *rt_config_find_realm(const rt_config *cfg, const char *name);

#endif /* RT_CONFIG_H */
