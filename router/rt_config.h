/* rt_config.h: the router's configuration, read from a Crossbar.io node configuration file
 * (version 2: controller + one worker of type "router" with realms and transports), plus
 * wampscope's own keys under the worker's "wampscope" object. See configs/README.md.
 * Ownership: rt_config_parse*() and rt_config_load_*() return an owned, immutable config;
 * everything inside belongs to it. Free with rt_config_free(). Unknown keys and unsupported
 * Crossbar features are refused (every error of a file at once, rt_config_diag); keys that have no
 * effect in wampscope are ignored and named in one warning. The loader lives in rt_config*.c
 * (rt_config_int.h). */
#ifndef RT_CONFIG_H
#define RT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wamp_err.h"
#include "wamp_uri.h"

/* limits.slow_consumer: what happens when a message does not fit a session's outgoing queue. */
typedef enum rt_slow_consumer_policy {
    RT_SLOW_CONSUMER_DISCONNECT = 0,     /* "disconnect": close 1008 (the default) */
    RT_SLOW_CONSUMER_DROP_OLDEST_EVENTS, /* "drop_oldest_events": queued EVENTs make room */
} rt_slow_consumer_policy;

/* Limits. Defaults in parentheses. */
typedef struct rt_limits {
    size_t max_message_size; /* bytes of one incoming or outgoing message (16 MiB) */
    /* RawSocket: a client announcing a smaller receive limit is refused with handshake error 2
     * (512 = every client; 0, as in a zeroed hand-built config, too). */
    size_t rawsocket_min_length;
    size_t max_queue_bytes;    /* bytes queued for one session before it is disconnected (64 MiB) */
    size_t max_queue_messages; /* messages queued for one session (1,000,000) */
    rt_slow_consumer_policy slow_consumer; /* when the queue is full (disconnect) */
    uint32_t hello_timeout_ms;             /* connection must send HELLO within this (10,000) */
    uint32_t shutdown_grace_ms; /* SIGTERM: wait this long for sessions to close (2,000) */
    /* CALL.Options.timeout above this is capped to it (3,600,000; 0 = no cap). */
    uint32_t max_call_timeout_ms;
    /* Event retention, per realm: topics with a retained event, and their bytes (topic, args and
     * kwargs as compact JSON, and the publication's black/white lists). 0, as in a zeroed
     * hand-built config, means the default. */
    size_t max_retained_topics; /* (RT_DEF_MAX_RETAINED_TOPICS) */
    size_t max_retained_bytes;  /* (RT_DEF_MAX_RETAINED_BYTES) */
    /* a failed authentication is answered with ABORT after this delay, to slow down guessing
     * (1,000; 0 = at once) */
    uint32_t auth_failure_delay_ms;
    /* A connection being closed must finish writing its queue and close frame within this,
     * or it is dropped (a peer that never reads would otherwise hold it forever) (5,000). */
    uint32_t close_timeout_ms;
    /* Sessions: joined at once in all realms / in one realm; a HELLO beyond is answered with
     * ABORT wampscope.error.limit_reached (100,000 / 100,000). 0, as in a zeroed hand-built
     * config, means no limit. */
    size_t max_sessions;
    size_t max_sessions_per_realm;
    /* Per session: calls it has pending (routed to a callee, not yet answered), subscriptions,
     * registrations. A CALL / SUBSCRIBE / REGISTER beyond is answered with ERROR
     * wampscope.error.limit_reached (10,000 / 100,000 / 10,000; 0 = no limit). */
    size_t max_pending_calls;
    size_t max_subscriptions;
    size_t max_registrations;
    /* HTTP on WAMP listeners (rt_lws_front.c): octets of one request head, the empty line
     * included (16,384; more is answered 431); the time a connection has to complete a request
     * head, from its accept or from the first octet of a later request (10,000); the time a
     * keep-alive connection may stay idle between requests (30,000). Over either time the
     * connection is closed without an answer. 0, as in a zeroed hand-built config, means the
     * default. */
    size_t http_max_head;
    uint32_t http_head_timeout_ms;
    uint32_t http_idle_timeout_ms;
} rt_limits;

#define RT_DEF_MAX_RETAINED_TOPICS 10000
#define RT_DEF_MAX_RETAINED_BYTES  ((size_t)16 * 1024 * 1024)

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
    bool no_meta_api; /* options.enable_meta_api false: no wamp.session.* etc. (rt_meta.h) */
} rt_realm_config;

/* One static principal of a transport's (or the management realm's) "auth" section: a ticket
 * principal, a WAMP-CRA user or a cryptosign principal (Crossbar's static authentication). */
typedef struct rt_auth_principal {
    char *authid;
    char *role;   /* "role"; NULL when absent (joining then fails with wamp.error.no_such_role) */
    char *secret; /* ticket: "ticket"; wampcra: "secret" (the HMAC key as written, for salted users
                   * the derived key, as in Crossbar), possibly read from "${VAR}". Wiped on free.
                   * NULL for cryptosign. */
    char *salt;   /* wampcra "salt"; NULL = unsalted */
    uint32_t iterations; /* wampcra "iterations" (1000 when salted and absent, as Crossbar) */
    uint32_t keylen;     /* wampcra "keylen" (32 when salted and absent) */
    char *realm;         /* cryptosign "realm"; NULL = any realm */
    uint8_t (*keys)[32]; /* cryptosign "authorized_keys": Ed25519 public keys */
    size_t n_keys;
} rt_auth_principal;

/* The static principals of one method; enabled when the method's key is present. */
typedef struct rt_auth_method_config {
    bool enabled;
    rt_auth_principal *principals;
    size_t n_principals;
} rt_auth_method_config;

/* A parsed "auth" section (see configs/README.md, "auth"). */
typedef struct rt_auth_config {
    rt_auth_method_config ticket;
    rt_auth_method_config wampcra;
    rt_auth_method_config cryptosign;
} rt_auth_config;

typedef enum rt_transport_kind {
    RT_TRANSPORT_WEBSOCKET, /* "websocket", or a "web" transport's websocket path */
    RT_TRANSPORT_RAWSOCKET  /* "rawsocket": WAMP-over-RawSocket */
} rt_transport_kind;

/* One HTTP service of a "web" transport (or of a universal transport's "web" part) next to its
 * WebSocket path: Crossbar's path services that wampscope serves (configs/README.md, "web
 * transport"; served by router/rt_http.h). */
typedef enum rt_web_kind {
    RT_WEB_STATIC,    /* "static": the files of a directory */
    RT_WEB_REDIRECT,  /* "redirect": 302 to url */
    RT_WEB_NODEINFO,  /* "nodeinfo": a page with the node ID and version */
    RT_WEB_VIEWER,    /* "wampscope-trace-viewer": the trace viewer embedded in the binary */
    RT_WEB_JSON,      /* "json": a fixed JSON value */
    RT_WEB_PUBLISHER, /* "publisher": Crossbar's HTTP bridge, POST JSON -> PUBLISH */
    RT_WEB_CALLER     /* "caller": Crossbar's HTTP bridge, POST JSON -> CALL -> its RESULT */
} rt_web_kind;

/* options.mime_types entry of a static path: file name extension (with its dot, as Crossbar
 * writes it: ".svg") -> Content-Type. */
typedef struct rt_mime_type {
    char *ext;
    char *type;
} rt_mime_type;

/* The timeout of an HTTP bridge call whose options give none (a caller path's
 * options.call_timeout, ms). */
#define RT_BRIDGE_CALL_TIMEOUT_MS 60000u

typedef struct rt_web_path {
    /* The URL path the service answers under: "/" (the root: every request no other path
     * takes), "/key", or "/outer/inner" for a service in a nested "path" service. */
    char *prefix;
    rt_web_kind kind;
    char *directory;    /* static: absolute directory ("directory", relative to the config's) */
    bool listing;       /* static: options.enable_directory_listing (false) */
    int64_t cache_secs; /* static: options.cache_timeout, seconds (43200); -1 = null: none */
    char *default_file; /* static: options.default_file, served instead of a 404; or NULL */
    rt_mime_type *mime_types; /* static: options.mime_types, checked before the built-in table */
    size_t n_mime_types;
    char *url; /* redirect: the Location */
    /* json: "value" serialized (compact, or indented with options.prettify), body_len bytes;
     * no_store: options.discourage_caching */
    char *body;
    size_t body_len;
    bool no_store;
    /* publisher, caller (router/rt_bridge.h): the realm and role the requests act in; the
     * largest request body (options.post_body_limit, bytes); options.require_tls; caller: the
     * timeout of a call whose options give none (options.call_timeout, ms). */
    char *realm;
    char *role;
    size_t post_body_limit;
    bool require_tls;
    uint32_t call_timeout_ms;
    /* Signed requests (options.key, options.secret; both or neither; the secret is wiped when
     * the config is freed) and options.timestamp_delta_limit (seconds, 300; 0 = no limit). */
    char *sign_key;
    char *sign_secret;
    uint32_t timestamp_delta_secs;
    /* options.require_ip: the networks requests must come from; none = any. */
    struct rt_cidr *require_ip;
    size_t n_require_ip;
} rt_web_path;

typedef struct rt_listener {
    char *id; /* transport "id", or "transport<N>" */
    rt_transport_kind kind;
    char *interface; /* endpoint.interface; NULL = all interfaces (Crossbar's default) */
    int port;        /* endpoint.port, 0..65535 (0 = ephemeral); 0 for a Unix socket */
    char *unix_path; /* endpoint "type": "unix": the socket file's path; NULL for TCP */
    bool shared;     /* endpoint.shared: SO_REUSEPORT, other processes may listen on the port */
    /* endpoint.tls (TCP only): TLS through lws's vhost TLS (wss://, rss://). All NULL = plain.
     * The files were readable when the config was loaded. */
    char *tls_key;         /* tls.key: PEM private key file */
    char *tls_certificate; /* tls.certificate: PEM certificate file, chain appended */
    char *tls_ciphers;     /* tls.ciphers: OpenSSL cipher list (TLS <= 1.2); NULL = default */
    char *path;            /* HTTP path of the WebSocket endpoint, "/" or "/ws" etc.; NULL for
                            * RawSocket */
    bool any_path; /* a "websocket" transport: WAMP on every request path, as in Crossbar (path
                    * is only the one printed); false on a web or universal transport's path */
    bool ser_json; /* "serializers" contains "json" (default both) */
    bool ser_msgpack;
    bool ser_cbor;
    /* options.max_message_size, defaults to limits.max_message_size. RawSocket announces and
     * enforces the largest power of two 512..16 MiB not above it (wamp_rawsock.h). */
    size_t max_message_size;
    /* The RawSocket part of a "universal" transport: it has no socket of its own but shares
     * the one of listeners[shares_port_of] (the transport's WebSocket part, always an earlier
     * entry), which tells the protocols apart by the first octet (0x7F = RawSocket). Its
     * endpoint fields are copies of that listener's. */
    bool shares_port;
    size_t shares_port_of;
    /* options.max_connections: connections this listener holds at once (a universal
     * transport's parts count apart); 0 = no limit. Over it, RawSocket answers the handshake
     * with error 4 and WebSocket upgrades get HTTP 503 (rt_lws_ws.c, rt_lws_raw.c). */
    size_t max_connections;
    uint32_t auto_ping_interval_ms; /* options.auto_ping_interval (0 = off) */
    uint32_t auto_ping_timeout_ms;  /* options.auto_ping_timeout */
    /* auth.anonymous.role; "anonymous" when the transport has no "auth" section (Crossbar's
     * default); NULL when an "auth" section exists without "anonymous" (anonymous refused). */
    char *anonymous_role;
    rt_auth_config auth; /* auth.ticket / auth.wampcra / auth.cryptosign */
    /* A web transport's (or universal transport's "web" part's) HTTP services besides its
     * WebSocket path, in the file's order; NULL/0 for other transports. */
    rt_web_path *web;
    size_t n_web;
} rt_listener;

typedef enum rt_ip_family {
    RT_IP_NONE = 0,
    RT_IP_V4,
    RT_IP_V6
} rt_ip_family;

/* An IP network ("a.b.c.d/n", "x::y/n"), or a single address with prefix 32 / 128. */
typedef struct rt_cidr {
    rt_ip_family family;
    uint8_t addr[16]; /* network byte order; IPv4 in addr[0..3], the rest zero */
    unsigned prefix;  /* 0..32 (IPv4) or 0..128 (IPv6) */
} rt_cidr;

/* "255.255.255.255/32" and "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128" fit, with NUL. */
#define RT_CIDR_STRLEN 52

/* The flight recorder: an always-on trace of this name (wampscope.tracing.flight_recorder). */
#define RT_FLIGHT_RECORDER_ID    "flight-recorder"
#define RT_FLIGHT_RECORDER_LIMIT 10000 /* its default limit, in records */
/* The largest wire capture (wampscope.tracing.wire_capture): a read decodes the ring from its
 * oldest chunk and follows every action in it (its correlation), about 5 ms per MiB held, while
 * the service loop waits. */
#define RT_WIRE_CAPTURE_MAX ((uint64_t)8 << 20)
/* The wire capture's size for a flight recorder read from it when wire_capture does not say. */
#define RT_FLIGHT_WIRE_DEFAULT ((uint64_t)4 << 20)

/* wampscope.cluster: this node's link to a cluster of nodes over NATS (configs/README.md,
 * "cluster"). Secrets (password, token) are wiped when the config is freed. */
typedef struct rt_cluster_config {
    char *name;     /* prefix of every subject and bucket (default "wampscope") */
    char **servers; /* nats.servers: "nats://host:port" or "tls://host:port" URLs (at least 1) */
    size_t n_servers;
    char *user; /* nats.user + nats.password, or NULL */
    char *password;
    char *token;           /* nats.token, or NULL */
    char *creds;           /* nats.creds: a NATS credentials file (resolved path), or NULL */
    bool tls;              /* nats.tls present: TLS to the servers */
    char *tls_ca;          /* nats.tls.ca: CA certificates file, or NULL (system CAs) */
    char *tls_certificate; /* nats.tls.certificate + key: client certificate, or NULL */
    char *tls_key;
    uint32_t connect_timeout_ms; /* one connection attempt (2,000) */
    uint32_t reconnect_wait_ms;  /* between attempts (1,000) */
    uint32_t request_timeout_ms; /* requests to other nodes, and key-value operations (2,000) */
    uint32_t heartbeat_ms;       /* membership heartbeat (1,000) */
    uint32_t node_ttl_ms;        /* a node's key lives this long after its last heartbeat (4,000) */
    size_t max_pending_bytes;    /* cluster bytes queued in either direction (8 MiB) */
    size_t max_calls;            /* calls in flight to other nodes, and served for them (10,000) */
    size_t max_registrations;    /* registrations this node announces (100,000) */
    bool send_asap; /* each NATS publish written at once, not by cnats' flusher (false) */
    /* another node's wall clock further off than this is logged (1,000; 0: never) */
    uint32_t max_clock_offset_ms;
} rt_cluster_config;

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
    /* wampscope.tracing.default_limit / default_max_bytes: limit and max_bytes of traces whose
     * options do not set them (defaults 100000 records, 64 MiB). 0, as in a zeroed hand-built
     * config, means the built-in default. */
    size_t tracing_default_limit;
    uint64_t tracing_default_max_bytes;
    /* Persisted traces (wampscope.tracing.*): data_dir (NULL = "./wampscope-data", relative to
     * the working directory), segment_bytes (rotation size; 0 = 16 MiB), fsync ("interval" 0,
     * "batch" 1, "never" 2: trace_fsync_mode), fsync_interval ms (0 = 1000), and the defaults
     * of the retention options persist_max_bytes (0 = 1 GiB) and persist_max_age (seconds,
     * 0 = no age limit). */
    char *tracing_data_dir;
    uint64_t tracing_segment_bytes;
    int tracing_fsync;
    uint32_t tracing_fsync_interval_ms;
    uint64_t tracing_write_backlog; /* bytes queued for a persisted trace's writer thread */
    /* wampscope.tracing.wire_capture: bytes of the wire capture's ring (trace_wire.h), at most
     * RT_WIRE_CAPTURE_MAX; 0 = no wire capture (the default). */
    uint64_t tracing_wire_capture;
    uint64_t tracing_persist_max_bytes;
    uint64_t tracing_persist_max_age_s;
    /* wampscope.tracing.flight_recorder: the trace_options (owned JSON object) of the always-on
     * trace RT_FLIGHT_RECORDER_ID that the router starts at startup: limit
     * RT_FLIGHT_RECORDER_LIMIT and trace_app_payload false, with the configured options over
     * them, already checked by trace_options_parse(). NULL = no flight recorder
     * ("flight_recorder": false, and a zeroed hand-built config). The loader's default is on. */
    struct json_t *tracing_flight_recorder;
    /* wampscope.tracing.flight_recorder.from_wire (the loader's default: true, unless the options
     * persist): the flight recorder's records are read from the wire capture when someone reads
     * them (rt_flight.h) rather than recorded per message; the wire capture then runs, of
     * RT_FLIGHT_WIRE_DEFAULT bytes unless wire_capture says. A zeroed hand-built config: false. */
    bool tracing_flight_from_wire;
    char *log_level; /* wampscope.log_level or NULL (then the command line decides) */
    /* wampscope.metrics: an HTTP listener of its own serving the Prometheus text (rt_metrics.h)
     * on metrics_path (default "/metrics"). TCP only, no TLS; metrics_interface NULL = all
     * interfaces; metrics_port 0 = ephemeral. */
    bool metrics_enabled;
    char *metrics_interface;
    int metrics_port;
    char *metrics_path;
    /* wampscope.management.trusted_networks: peers that protected mode admits anonymously as
     * admin (default 127.0.0.0/8 and ::1/128). The loader always sets a non-NULL array (also for
     * an empty list, which admits nobody). NULL, as in a zeroed hand-built config, means the
     * default loopback rule. Host bits are zero; no entry is IPv4-mapped (::ffff:0:0/96). */
    rt_cidr *mgmt_trusted;
    size_t n_mgmt_trusted;
    /* wampscope.management.allowed_origins: web origins ("http://host:port", compared without
     * regard to case) whose pages protected mode admits too; NULL or [] for none. A page of the
     * router's own origin (an Origin equal to the handshake's Host) needs no entry. */
    struct json_t *mgmt_origins;
    /* wampscope.management.auth: credentials for the management realm (principals' role
     * defaults to "admin"). NULL = protected mode (anonymous admin from trusted networks). When
     * set, protected mode is off and every session on the management realm authenticates with
     * these principals, whatever its transport's "auth" says. */
    rt_auth_config *mgmt_auth;
    /* wampscope.cluster, or NULL: a single node (no NATS connection, no thread). */
    rt_cluster_config *cluster;
} rt_config;

/* What one load found: every error (each one line starting with its key path, e.g.
 * "workers[0].transports[1].endpoint.port: must be an integer 0..65535"; at most
 * RT_CONFIG_ERRORS_MAX kept, the rest counted) and its warnings (e.g. the one line that names the
 * Crossbar keys that have no effect in wampscope). Caller storage: zero it before the load, free
 * what it holds with rt_config_diag_fini(). A diag may be passed to several loads (it grows). */
#define RT_CONFIG_ERRORS_MAX 100

typedef struct rt_config_diag {
    char **errors;
    size_t n_errors;
    size_t n_errors_dropped;
    char **warnings;
    size_t n_warnings;
} rt_config_diag;

/* NULL-safe; frees the messages and zeroes d. */
void rt_config_diag_fini(rt_config_diag *d);

/* Parses the JSON text of a configuration. Relative TLS file names are resolved against base_dir
 * (NULL = the working directory). WAMP_OK: *out is the config (warnings may be in diag).
 * Otherwise *out is NULL and diag holds every error: WAMP_EINVAL (a bad configuration) or
 * WAMP_ENOMEM (perhaps with fewer messages). */
wamp_err rt_config_parse(const char *text, size_t len, const char *base_dir, rt_config **out,
                         rt_config_diag *diag);
/* Reads path and parses it; relative TLS file names are resolved against the file's directory
 * (as Crossbar resolves them against its node directory). Also WAMP_EIO (the file cannot be
 * read, the reason in diag). Messages do not repeat the path. */
wamp_err rt_config_parse_file(const char *path, rt_config **out, rt_config_diag *diag);
/* The embedded default (configs/default.json compiled in; no file directory: the working
 * directory is used). */
wamp_err rt_config_parse_default(rt_config **out, rt_config_diag *diag);
/* That embedded configuration's JSON text, rt_config_default_json_len bytes and a NUL (generated
 * from configs/default.json by embed_config.cmake), for a tool that changes it before parsing
 * (tests/bench/bench_core.c). */
extern const char rt_config_default_json[];
extern const size_t rt_config_default_json_len;

/* The same loads with only the first error: on failure the message is written into err (cut to
 * err_len; err may be NULL), warnings are dropped. rt_config_load_file()'s message starts with
 * the path, rt_config_load_default()'s with "embedded default configuration". */
wamp_err rt_config_load_string(const char *text, size_t len, rt_config **out, char *err,
                               size_t err_len);
wamp_err rt_config_load_file(const char *path, rt_config **out, char *err, size_t err_len);
wamp_err rt_config_load_default(rt_config **out, char *err, size_t err_len);

/* One integer setting of the "wampscope" object as the loader's tables hold it. */
typedef struct rt_config_setting {
    const char *section; /* "limits" or "tracing" */
    const char *key;     /* "max_message_size", ... */
    long long def, min, max;
    const char *unit; /* "bytes", "ms", "records", "seconds", or NULL for a count */
} rt_config_setting;

/* The i-th integer setting of wampscope.limits and wampscope.tracing, in table order (static
 * strings); false past the last. The loader reads, checks and defaults them from the same
 * rows, so documentation can be checked against them (check_rt_config does, for
 * configs/README.md). */
bool rt_config_setting_get(size_t i, rt_config_setting *out);

/* NULL-safe. */
void rt_config_free(rt_config *cfg);
/* Borrowed: the realm config with that name, or NULL. */
const rt_realm_config *rt_config_find_realm(const rt_config *cfg, const char *name);

/* Borrowed: the principal with authid in m, or NULL. */
const rt_auth_principal *rt_config_find_principal(const rt_auth_method_config *m,
                                                  const char *authid);

/* Parses a peer address as rt_peer.addr holds it ("127.0.0.1:54321", "[::1]:5555"), or a bare
 * address ("10.1.2.3", "::1"), into a single address (prefix 32 or 128). An IPv4-mapped IPv6
 * address (::ffff:a.b.c.d) becomes the IPv4 address a.b.c.d. false (out zeroed) when text is
 * NULL, "" or anything else. */
bool rt_config_parse_peer_addr(const char *text, rt_cidr *out);
/* true when addr (an address from rt_config_parse_peer_addr(); its prefix is ignored) lies in
 * one of cfg's management trusted networks (the default loopback rule when cfg->mgmt_trusted is
 * NULL). IPv4 addresses match IPv4 networks only, IPv6 addresses IPv6 networks only. */
bool rt_config_is_trusted(const rt_config *cfg, const rt_cidr *addr);
/* true when addr (as for rt_config_is_trusted()) lies in one of nets[0..n). */
bool rt_config_addr_in(const rt_cidr *nets, size_t n, const rt_cidr *addr);
/* Whether two listening interfaces (a listener's interface, NULL = all) share addresses, so that
 * one port cannot serve both: one of them is all interfaces (NULL, or the wildcard address
 * "0.0.0.0" or "::", which on Linux takes IPv4 too), or they are the same address. */
bool rt_config_interfaces_overlap(const char *a, const char *b);
/* The listener of cfg, other than listener skip (SIZE_MAX: none), that listens on TCP port on an
 * interface overlapping iface with a socket of its own (not a part sharing its transport's):
 * its index, or cfg->n_listeners when none does. One such port serves one listener only. */
size_t rt_config_listener_on_port(const rt_config *cfg, size_t skip, const char *iface, int port);
/* rt_config_parse_peer_addr() + rt_config_is_trusted(); an unparsable address is not trusted. */
bool rt_config_peer_is_trusted(const rt_config *cfg, const char *peer_addr);
/* Writes "a.b.c.d/n" or "x::y/n" into buf (RT_CIDR_STRLEN bytes suffice); "" if len is too small
 * or the family is not RT_IP_V4/RT_IP_V6. */
void rt_config_format_cidr(const rt_cidr *net, char *buf, size_t len);
/* Writes the management trusted networks as "127.0.0.0/8, ::1/128" into buf ("" when the list
 * is empty); a list that does not fit ends in ", ..." or is cut to "...". len 0 writes nothing. */
void rt_config_format_trusted(const rt_config *cfg, char *buf, size_t len);

#endif /* RT_CONFIG_H */
