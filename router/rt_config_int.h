/* rt_config_int.h: what the files of the configuration loader share (not a public interface).
 *
 * The loader is split by config area: rt_config_rules.c (the generic JSON rules: key paths,
 * key tables, typed getters, field tables, lists, error collection), rt_config_realm.c (realms,
 * roles, permissions), rt_config_endpoint.c (endpoints, TLS, serializers, WebSocket options),
 * rt_config_auth.c (transport and management credentials), rt_config_transport.c (transports),
 * rt_config_web.c (a web transport's paths), rt_config_net.c (trusted networks),
 * rt_config_wampscope.c (the worker's "wampscope" object) and rt_config.c (top level, controller,
 * worker, public API).
 *
 * Errors: every refusal goes through cfg_refuse(), which records one line ("key.path: why") in
 * the load's rt_config_diag and returns WAMP_EINVAL. A parser that gets WAMP_EINVAL from a part
 * it can skip goes on with the next part (the next key, list item, section), so that one load
 * reports every error of a file; the load fails if any error was recorded. WAMP_ENOMEM stops
 * everything (cfg_stop()). A parser never relies on a part that failed: fields of a refused part
 * may be NULL or partly filled, and rt_config_free() frees any partly filled config.
 * Ownership: the cfg_ctx lives on the loader's stack; the diag belongs to the caller. */
#ifndef RT_CONFIG_INT_H
#define RT_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "rt_config.h"

#define KIB ((json_int_t)1024)
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)

/* Longest key path kept for messages; longer ones are cut (the message stays one line). */
#define CFG_PATH_MAX 256
/* Longest message, key path included; longer ones are cut. */
#define CFG_MSG_MAX 1024
/* The one warning that names the ignored keys stops listing them at about this length. */
#define CFG_IGNORED_MAX 2048

#define DEF_ANONYMOUS_ROLE "anonymous"

typedef struct cfg_ctx {
    rt_config_diag *diag; /* where errors and warnings go */
    /* Directory that relative file names (TLS key and certificate) are resolved against, as
     * Crossbar resolves them against its node directory; NULL = the working directory. */
    const char *base_dir;
    char ignored[CFG_IGNORED_MAX]; /* ", "-separated key paths of ignored keys, for the warning */
    size_t n_ignored;
    bool oom; /* an allocation failed: the load fails with WAMP_ENOMEM */
} cfg_ctx;

typedef struct cfg_path {
    char s[CFG_PATH_MAX];
} cfg_path;

/* true when parsing must stop at once (out of memory); a refusal lets it go on. */
static inline bool cfg_stop(wamp_err err)
{
    return err != WAMP_OK && err != WAMP_EINVAL;
}

/* The worse of two results: ENOMEM over EINVAL over OK. */
static inline wamp_err cfg_worse(wamp_err a, wamp_err b)
{
    return cfg_stop(a) ? a : cfg_stop(b) ? b : a != WAMP_OK ? a : b;
}

/* ---- Messages and key paths ---------------------------------------------------------------- */

/* Replaces control characters by '?': values quoted from the file never break a line. */
void cfg_one_line(char *s);
/* Records "path: <fmt>" as an error ("(top level)" for an empty path); returns WAMP_EINVAL. */
__attribute__((format(printf, 3, 4))) wamp_err cfg_refuse(cfg_ctx *c, const char *path,
                                                          const char *fmt, ...);
/* Records msg as it is (no key path); returns WAMP_EINVAL. */
wamp_err cfg_error(cfg_ctx *c, const char *msg);
/* Marks the load out of memory; returns WAMP_ENOMEM. */
wamp_err cfg_oom(cfg_ctx *c);
/* "parent.key", or parent["key"] for a key that is not plain; a path that does not fit ends in
 * "...". */
cfg_path cfg_key(const char *parent, const char *key);
/* "parent[i]". */
cfg_path cfg_index(const char *parent, size_t i);
/* Replaces *out (freed) with a copy of s. */
wamp_err cfg_dup(cfg_ctx *c, const char *s, char **out);
/* Records a warning (one line); WAMP_ENOMEM when it cannot. */
wamp_err cfg_warn(cfg_ctx *c, const char *msg);
/* Adds path to the keys that the one warning names as ignored. */
void cfg_note_ignored(cfg_ctx *c, const char *path);

/* ---- Key tables ---------------------------------------------------------------------------- */

typedef enum key_kind {
    KEY_PARSED,      /* the caller parses the value */
    KEY_REFUSED,     /* known to Crossbar, not supported: refused with `why` */
    KEY_META,        /* a string, ignored without a warning (no Crossbar feature: "$schema") */
    KEY_IGN_ANY,     /* accepted and ignored (named in the warning), any value */
    KEY_IGN_BOOL,    /* accepted and ignored, must be a boolean */
    KEY_IGN_INT,     /* accepted and ignored, must be an integer lo..hi */
    KEY_IGN_STRING,  /* accepted and ignored, must be a string */
    KEY_IGN_STRINGS, /* accepted and ignored, must be a list of strings */
    KEY_IGN_OBJECT,  /* accepted and ignored, must be an object */
    KEY_ONLY_TRUE,   /* accepted only as true (what wampscope always does); else refused: why */
    KEY_ONLY_FALSE   /* accepted only as false; else refused with `why` */
} key_kind;

typedef struct key_rule {
    const char *key;
    key_kind kind;
    json_int_t lo, hi;
    const char *why;
} key_rule;

/* Table entries. clang-format would spread each one-line macro over five lines. */
/* clang-format off */
#define K_PARSED(k)          {.key = (k), .kind = KEY_PARSED}
#define K_REFUSED(k, w)      {.key = (k), .kind = KEY_REFUSED, .why = (w)}
#define K_IGN(k, kd)         {.key = (k), .kind = (kd)}
#define K_IGN_INT(k, l, h)   {.key = (k), .kind = KEY_IGN_INT, .lo = (l), .hi = (h)}
#define K_ONLY(k, kd, w)     {.key = (k), .kind = (kd), .why = (w)}
/* clang-format on */
#define N_RULES(a) (sizeof(a) / sizeof((a)[0]))

/* A table of integer settings stored into a struct (redis' config table): one row per key with
 * its type, place, default, range and unit. cfg_fields_default() writes the defaults,
 * cfg_fields_parse() reads the present keys, checks their ranges and reports every bad one. */
typedef enum cfg_type {
    CFG_BOOL, /* bool (lo, hi unused) */
    CFG_SIZE, /* size_t */
    CFG_U32,  /* uint32_t */
    CFG_U64   /* uint64_t */
} cfg_type;

typedef struct cfg_field {
    const char *key;
    cfg_type type;
    size_t offset;
    json_int_t def, lo, hi;
    const char *unit; /* appended to the range in messages ("bytes", "ms"), or NULL */
} cfg_field;

/* clang-format off */
#define CFG_FIELD(k, ty, st, m, d, l, h, u) \
    {.key = (k), .type = (ty), .offset = offsetof(st, m), .def = (d), .lo = (l), .hi = (h), \
     .unit = (u)}
/* clang-format on */

void cfg_fields_default(const cfg_field *f, size_t n, void *base);
/* Every key of o that has a row is checked and stored; o's other keys are left to the caller. */
wamp_err cfg_fields_parse(cfg_ctx *c, const char *path, const json_t *o, const cfg_field *f,
                          size_t n, void *base);

/* obj must be an object whose every key has a rule in rules or a row in fields (NULL, 0 for
 * none). Reports every unknown, refused or mistyped key; notes the ignored ones. Returns
 * WAMP_EINVAL only when obj is not an object (the caller cannot go on). */
wamp_err cfg_check_keys_fields(cfg_ctx *c, const char *path, const json_t *obj,
                               const key_rule *rules, size_t n, const cfg_field *fields,
                               size_t n_fields);
wamp_err cfg_check_keys(cfg_ctx *c, const char *path, const json_t *obj, const key_rule *rules,
                        size_t n);

/* A type value Crossbar knows at some key, with why wampscope refuses it (NULL: accepted). */
typedef struct type_rule {
    const char *type;
    const char *why;
} type_rule;

/* o must be an object with a string "type" (borrowed into *type) that types lists as accepted;
 * a listed but unsupported type is refused with its reason, an unlisted one as unknown. */
wamp_err cfg_check_type(cfg_ctx *c, const char *path, const json_t *o, const type_rule *types,
                        size_t n, const char **type);

/* ---- Typed getters: absent keys leave *out unchanged (the default) -------------------------- */

bool cfg_is_string_list(const json_t *v);
wamp_err cfg_opt_bool(cfg_ctx *c, const char *path, const json_t *obj, const char *key, bool *out);
/* unit is appended to the message ("bytes", "ms") or NULL. */
wamp_err cfg_opt_int(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                     json_int_t lo, json_int_t hi, const char *unit, json_int_t *out);
/* Borrowed string (valid while the JSON tree lives) or NULL when absent. */
wamp_err cfg_opt_str(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                     const char **out);
wamp_err cfg_req_str(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                     const char **out);
/* "id" by Crossbar's configuration item ID rule. */
wamp_err cfg_opt_id(cfg_ctx *c, const char *path, const json_t *obj, const char **out);
/* The value of key, one of names[0..n-1] (quoted in the message), as its index into *out. */
wamp_err cfg_opt_enum(cfg_ctx *c, const char *path, const json_t *obj, const char *key,
                      const char *const *names, size_t n, int *out);

/* ---- Lists --------------------------------------------------------------------------------- */

/* Parses items[i] (zeroed, item_size bytes) from v, the list's i-th value at path. Earlier
 * items are parsed (or refused) already, for duplicate checks. */
typedef wamp_err (*cfg_item_fn)(cfg_ctx *c, const char *path, const json_t *v, void *items,
                                size_t i, void *arg);

/* v (at path) must be a list. Allocates one zeroed item per entry (at least one, so that the
 * array is non-NULL also for an empty list) and parses each with fn, going on after a refused
 * one. *items and *n are set as soon as the array exists, also on failure: the caller owns the
 * array and frees it (and what its items hold) either way. */
wamp_err cfg_parse_list(cfg_ctx *c, const char *path, const json_t *v, size_t item_size,
                        cfg_item_fn fn, void *arg, void **items, size_t *n);
/* rt_config_net.c: one network, "a.b.c.d/n", "x::y/n" or a bare address; host bits zero. */
wamp_err cfg_parse_cidr(cfg_ctx *c, const char *path, const char *text, rt_cidr *out);

/* ---- The areas ----------------------------------------------------------------------------- */

/* rt_config_realm.c: the worker's "realms" (at least one; names unique). */
wamp_err cfg_parse_realms(cfg_ctx *c, const char *path, const json_t *w, rt_config *cfg);
void cfg_free_realms(rt_config *cfg);

/* rt_config_endpoint.c */
wamp_err cfg_parse_endpoint(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l);
/* "ws://host[:port][/path]" -> its path ("/" when absent). */
wamp_err cfg_parse_ws_url(cfg_ctx *c, const char *path, const char *url, char **out_path);
wamp_err cfg_parse_serializers(cfg_ctx *c, const char *path, const json_t *v, rt_listener *l);
wamp_err cfg_parse_max_connections(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l);
wamp_err cfg_parse_ws_options(cfg_ctx *c, const char *path, const json_t *o, const rt_limits *lim,
                              rt_listener *l);

/* A required file name (key of o) whose file the router can read now (refused at start, with
 * the path, rather than by a library later). A relative name is resolved against the config
 * file's directory; *out (freed first) gets the resolved name. */
wamp_err cfg_readable_file(cfg_ctx *c, const char *path, const json_t *o, const char *key,
                           char **out);

/* rt_config_auth.c */
wamp_err cfg_parse_auth(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l);
/* wampscope.management.auth (principals' role defaults to "admin"). */
wamp_err cfg_parse_mgmt_auth(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg);
void cfg_free_auth(rt_auth_config *a);

/* rt_config_transport.c: the worker's "transports" (at least one). */
wamp_err cfg_parse_transports(cfg_ctx *c, const char *path, const json_t *w, rt_config *cfg);
void cfg_free_listeners(rt_config *cfg);
/* rt_config_ws.c: "id" into l->id (unchanged when absent), by Crossbar's ID rule. */
wamp_err cfg_parse_listener_id(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l);
/* The transport's "endpoint" into l, which every listening transport needs ("is required"). */
wamp_err cfg_parse_required_endpoint(cfg_ctx *c, const char *path, const json_t *o, rt_listener *l);
/* A "websocket" transport (is_transport) or a WebSocket path service, into l. */
wamp_err cfg_parse_ws_service(cfg_ctx *c, const char *path, const json_t *o, bool is_transport,
                              const rt_limits *lim, rt_listener *l);

/* rt_config_web.c: a web transport's "paths". */
/* Listener entries reserved by the caller for WebSocket paths after the first: each becomes a
 * listener of its own (its path, serializers, options and auth) that shares the web
 * transport's socket (shares_port), as a universal transport's RawSocket part does. */
typedef struct cfg_spares {
    rt_listener *l;
    cfg_path *kp; /* the key path of each entry's part (where its "id" goes), for messages */
    size_t n;     /* entries reserved */
    size_t used;  /* entries filled */
} cfg_spares;

/* Crossbar's path key rule (checkconfig.py _WEB_PATH_PAT_STR): ^([a-z0-9A-Z_\-]+|/)$. */
bool cfg_web_path_key_is_valid(const char *k);
/* The URL path of key under prefix ("" at the top): "ws" -> "<prefix>/ws", "/" -> the prefix
 * ("/" at the top). */
cfg_path cfg_web_key_prefix(const char *prefix, const char *key);
/* The same into *out, refused at key path kp when it does not fit a cfg_path (a cut path would
 * serve the service elsewhere). */
wamp_err cfg_web_url(cfg_ctx *c, const char *kp, const char *prefix, const char *key,
                     cfg_path *out);
/* A WebSocket path service at key path kp serving URL path url: into l if it is the
 * transport's first (*has_ws false, then set), else into the next spare. */
wamp_err cfg_parse_ws_path(cfg_ctx *c, const char *kp, const json_t *svc, const char *url,
                           const rt_limits *lim, rt_listener *l, cfg_spares *spares, bool *has_ws);
/* The "paths" object at pp of a web transport or a universal transport's "web" part into l
 * (HTTP services in l->web, WebSocket paths by cfg_parse_ws_path()); has_ws: the transport has
 * its first WebSocket path already. */
wamp_err cfg_parse_web_services(cfg_ctx *c, const char *pp, const json_t *paths, bool has_ws,
                                const rt_limits *lim, rt_listener *l, cfg_spares *spares);
/* WebSocket path services in a "paths" object, nested ones included (listeners to reserve). */
size_t cfg_count_ws_paths(const json_t *paths);
/* Frees l->web and what its entries hold. */
void cfg_free_web_paths(rt_listener *l);

/* rt_config_net.c */
wamp_err cfg_parse_trusted(cfg_ctx *c, const char *path, const json_t *v, rt_config *cfg);
wamp_err cfg_default_trusted(cfg_ctx *c, rt_config *cfg);

/* rt_config_wampscope.c */
wamp_err cfg_wampscope_defaults(cfg_ctx *c, rt_config *cfg);
wamp_err cfg_parse_wampscope(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg);
/* rt_config_cluster.c: wampscope.cluster (sets cfg->cluster, also when refused). */
wamp_err cfg_parse_cluster(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg);
/* With wampscope.cluster: controller.id (given or the host name) must be a cluster node id. */
wamp_err cfg_check_cluster_node_id(cfg_ctx *c, const rt_config *cfg);
void cfg_free_cluster(rt_config *cfg);

#endif /* RT_CONFIG_INT_H */
