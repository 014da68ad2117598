/* rt_config.c: Crossbar.io node configuration (version 2) -> rt_config: the top level, the
 * controller, the one router worker, and the public API.
 *
 * The validator walks the JSON tree once. Every object is first checked against a table of the
 * keys wampscope knows there (key_rule, rt_config_rules.c): a key not in the table is refused as
 * unknown; a key Crossbar knows but wampscope cannot honour is refused with the reason; a key
 * that has no effect in wampscope is type-checked, ignored and named in one warning; the rest is
 * parsed by the area's file (rt_config_int.h lists them). Every refusal names the full key path
 * ("workers[0].transports[1].endpoint.port: ...") and parsing goes on, so one load reports every
 * error. Key names, types and defaults follow crossbar/common/checkconfig.py and
 * crossbar/router/role.py; configs/README.md lists every decision. The result is built in place
 * and freed with rt_config_free() on any failure, so a partially filled config is always
 * freeable. */
#include "rt_config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "rt_config_int.h"

#define DEF_WORKER_ID "router1"
/* A configuration file larger than this is refused before parsing. */
#define CFG_FILE_MAX ((size_t)(16 * MIB))

/* ---- Worker, controller, top level ---------------------------------------------------------- */

static const key_rule worker_option_rules[] = {
        /* Meaningful only to Crossbar's Python worker processes. */
        K_IGN("title", KEY_IGN_STRING),
        K_IGN("python", KEY_IGN_STRING),
        K_IGN("pythonpath", KEY_IGN_STRINGS),
        /* Data handed to router components, which wampscope does not run. */
        K_IGN("extra", KEY_IGN_ANY),
        K_ONLY("disabled", KEY_ONLY_FALSE, "a disabled router worker leaves nothing to run"),
        K_ONLY("expose_controller", KEY_ONLY_FALSE, "not supported"),
        K_ONLY("expose_shared", KEY_ONLY_FALSE, "not supported"),
        /* A scheduling hint for the worker process. */
        K_IGN("cpu_affinity", KEY_IGN_ANY),
        K_REFUSED("env", "not supported (set the environment of the wampscope process)"),
};

static const key_rule router_rules[] = {
        K_PARSED("type"),
        K_PARSED("id"),
        K_PARSED("options"),
        K_PARSED("realms"),
        K_PARSED("transports"),
        K_PARSED("components"),
        K_PARSED("connections"),
        K_PARSED("wampscope"),
        /* Crossbar's debugging shell into the worker process: wampscope has none to offer, and
         * leaving it out opens nothing. */
        K_IGN("manhole", KEY_IGN_OBJECT),
};

/* Keys that Crossbar allows to hold a list, which wampscope accepts only empty. */
static wamp_err check_empty_list(cfg_ctx *c, const char *path, const json_t *o, const char *key,
                                 const char *why)
{
    const json_t *v = json_object_get(o, key);
    if (!v) {
        return WAMP_OK;
    }
    cfg_path kp = cfg_key(path, key);
    if (!json_is_array(v)) {
        return cfg_refuse(c, kp.s, "must be a list");
    }
    return json_array_size(v) == 0 ? WAMP_OK : cfg_refuse(c, kp.s, "%s", why);
}

/* Section by section; a refused section does not stop the next one. */
static wamp_err parse_router_sections(cfg_ctx *c, const char *path, const json_t *w, rt_config *cfg)
{
    wamp_err err = cfg_check_keys(c, path, w, router_rules, N_RULES(router_rules));
    const char *id = NULL;
    if (cfg_opt_id(c, path, w, &id) == WAMP_OK && id) {
        err = cfg_worse(err, cfg_dup(c, id, &cfg->worker_id));
    }
    if (json_object_get(w, "options")) {
        err = cfg_worse(err,
                        cfg_check_keys(c, cfg_key(path, "options").s, json_object_get(w, "options"),
                                       worker_option_rules, N_RULES(worker_option_rules)));
    }
    err = cfg_worse(err, check_empty_list(c, path, w, "components",
                                          "router components are not supported: run them as "
                                          "separate WAMP clients that connect to one of this "
                                          "router's transports"));
    err = cfg_worse(err, check_empty_list(c, path, w, "connections",
                                          "router connections are not supported"));
    /* "wampscope" first: the transports default to its limits. */
    if (!cfg_stop(err) && json_object_get(w, "wampscope")) {
        err = cfg_worse(err, cfg_parse_wampscope(c, cfg_key(path, "wampscope").s,
                                                 json_object_get(w, "wampscope"), cfg));
    }
    if (!cfg_stop(err)) {
        err = cfg_worse(err, cfg_parse_realms(c, path, w, cfg));
    }
    if (!cfg_stop(err)) {
        err = cfg_worse(err, cfg_parse_transports(c, path, w, cfg));
    }
    return err;
}

static wamp_err parse_router(cfg_ctx *c, const char *path, const json_t *w, rt_config *cfg)
{
    wamp_err err = parse_router_sections(c, path, w, cfg);
    if (cfg_stop(err)) {
        return err;
    }
    if (cfg->limits.max_queue_bytes < cfg->limits.max_message_size) {
        cfg_path lp = cfg_key(cfg_key(path, "wampscope").s, "limits");
        err = cfg_refuse(c, cfg_key(lp.s, "max_queue_bytes").s,
                         "%zu is smaller than max_message_size (%zu bytes): a queue must hold at "
                         "least one message",
                         cfg->limits.max_queue_bytes, cfg->limits.max_message_size);
    }
    for (size_t i = 0; cfg->mgmt_enabled && cfg->mgmt_realm && i < cfg->n_realms; i++) {
        if (cfg->realms[i].name && strcmp(cfg->realms[i].name, cfg->mgmt_realm) == 0) {
            cfg_path mp = cfg_key(cfg_key(path, "wampscope").s, "management");
            err = cfg_refuse(c, cfg_key(mp.s, "realm").s,
                             "\"%s\" is also an application realm (realms[%zu]); pick another "
                             "name",
                             cfg->mgmt_realm, i);
        }
    }
    /* An HTTP bridge request joins its realm without a HELLO, past the management realm's
     * access rules (protected mode, management credentials): it may not act there. */
    for (size_t l = 0; cfg->mgmt_enabled && cfg->mgmt_realm && l < cfg->n_listeners; l++) {
        const rt_listener *li = &cfg->listeners[l];
        for (size_t i = 0; i < li->n_web; i++) {
            const rt_web_path *wp = &li->web[i];
            if ((wp->kind == RT_WEB_PUBLISHER || wp->kind == RT_WEB_CALLER) && wp->realm &&
                strcmp(wp->realm, cfg->mgmt_realm) == 0) {
                err = cfg_refuse(c, cfg_key(path, "transports").s,
                                 "the HTTP bridge path %s of transport %s acts in the management "
                                 "realm \"%s\", which its requests would join past the "
                                 "management realm's access rules: use an application realm",
                                 wp->prefix, li->id ? li->id : "(unnamed)", cfg->mgmt_realm);
            }
        }
    }
    return err;
}

static const key_rule controller_option_rules[] = {
        K_IGN("title", KEY_IGN_STRING),
        /* wampscope starts its one worker at once. */
        K_IGN("enable_parallel_worker_start", KEY_IGN_BOOL),
        K_PARSED("shutdown"),
};

/* Crossbar's node shutdown modes (checkconfig.py NODE_SHUTDOWN_MODES). They decide when the node
 * exits as workers come and go; wampscope's one router worker is the process itself, so every
 * mode ends the same way and the value is only checked. */
static bool shutdown_mode_is_valid(const json_t *v)
{
    static const char *const modes[] = {
            "shutdown_on_shutdown_requested",
            "shutdown_on_worker_exit",
            "shutdown_on_worker_exit_with_error",
            "shutdown_on_last_worker_exit",
    };
    const char *s = json_string_value(v);
    for (size_t i = 0; s && i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(s, modes[i]) == 0) {
            return true;
        }
    }
    return false;
}

static wamp_err check_shutdown_modes(cfg_ctx *c, const char *path, const json_t *v)
{
    bool ok = json_is_string(v) ? shutdown_mode_is_valid(v) : json_is_array(v);
    for (size_t i = 0; ok && json_is_array(v) && i < json_array_size(v); i++) {
        ok = shutdown_mode_is_valid(json_array_get(v, i));
    }
    if (!ok) {
        return cfg_refuse(c, path,
                          "must be one of (or a list of) \"shutdown_on_shutdown_requested\", "
                          "\"shutdown_on_worker_exit\", \"shutdown_on_worker_exit_with_error\", "
                          "\"shutdown_on_last_worker_exit\"");
    }
    return WAMP_OK;
}

static const key_rule controller_rules[] = {
        K_PARSED("id"),
        K_PARSED("options"),
        K_IGN("manhole", KEY_IGN_OBJECT), /* see router_rules */
        K_REFUSED("connections", "controller connections are not supported"),
        K_REFUSED("keyring", "node keys are not supported"),
        /* Keys of Crossbar's "edge" and "master" personalities (Crossbar FX / XBR). */
        K_REFUSED("fabric", "Crossbar FX management uplinks are not supported (wampscope has its "
                            "own management realm)"),
        K_REFUSED("fabric-center", "Crossbar FX master settings are not supported"),
        K_REFUSED("blockchain", "XBR blockchain settings are not supported"),
        K_REFUSED("ipfs", "IPFS settings are not supported"),
        K_ONLY("enable_docker", KEY_ONLY_FALSE, "Docker control is not supported"),
};

static wamp_err parse_controller(cfg_ctx *c, const char *path, const json_t *o, rt_config *cfg)
{
    wamp_err err = cfg_check_keys(c, path, o, controller_rules, N_RULES(controller_rules));
    const char *id = NULL;
    if (err == WAMP_OK && cfg_opt_id(c, path, o, &id) == WAMP_OK && id) {
        err = cfg_dup(c, id, &cfg->node_id);
    }
    const json_t *opts = json_object_get(o, "options");
    if (err == WAMP_OK && opts) {
        cfg_path op = cfg_key(path, "options");
        err = cfg_check_keys(c, op.s, opts, controller_option_rules,
                             N_RULES(controller_option_rules));
        const json_t *shutdown = json_object_get(opts, "shutdown");
        if (err == WAMP_OK && shutdown) {
            err = check_shutdown_modes(c, cfg_key(op.s, "shutdown").s, shutdown);
        }
    }
    return err;
}

static const key_rule root_rules[] = {
        K_IGN("$schema", KEY_META),
        K_PARSED("version"),
        K_PARSED("controller"),
        K_PARSED("workers"),
};

/* Crossbar's worker types (crossbar/personality.py, crossbar/edge/personality.py) other than
 * "router", and why wampscope has no such worker. */
static const type_rule other_workers[] = {
        {"container", "container workers are not supported: wampscope runs no components; run "
                      "them as separate WAMP clients that connect to one of this router's "
                      "transports"},
        {"guest", "guest workers are not supported: start the program on its own (e.g. as a "
                  "systemd service) and, if it is a WAMP client, let it connect to one of this "
                  "router's transports"},
        {"proxy", "proxy workers are not supported (wampscope runs one router per process)"},
        {"websocket-testee", "WebSocket testee workers are not supported"},
        {"hostmonitor", "host monitor workers are not supported"},
        {"xbrmm", "XBR market maker workers are not supported"},
};

/* workers[i]: refuses every worker that is not the one router; returns the router's index or
 * -1 when there is none. */
static long find_router(cfg_ctx *c, const json_t *workers, wamp_err *err)
{
    long router = -1;
    for (size_t i = 0; i < json_array_size(workers); i++) {
        cfg_path wp = cfg_index("workers", i);
        cfg_path tp = cfg_key(wp.s, "type");
        const json_t *w = json_array_get(workers, i);
        const char *type = NULL;
        if (!json_is_object(w)) {
            *err = cfg_refuse(c, wp.s, "must be an object");
            continue;
        }
        if (cfg_req_str(c, wp.s, w, "type", &type) != WAMP_OK) {
            *err = WAMP_EINVAL;
            continue;
        }
        const type_rule *other = NULL;
        for (size_t k = 0; k < N_RULES(other_workers); k++) {
            other = strcmp(other_workers[k].type, type) == 0 ? &other_workers[k] : other;
        }
        if (other) {
            *err = cfg_refuse(c, tp.s, "%s", other->why);
        } else if (strcmp(type, "router") != 0) {
            *err = cfg_refuse(c, tp.s,
                              "worker type \"%s\" is not supported (wampscope runs one router "
                              "worker)",
                              type);
        } else if (router >= 0) {
            *err = cfg_refuse(c, tp.s,
                              "a second router worker is not supported (wampscope runs one "
                              "router per process; workers[%ld] is the router)",
                              router);
        } else {
            router = (long)i;
        }
    }
    return router;
}

static wamp_err parse_root(cfg_ctx *c, const json_t *root, rt_config *cfg)
{
    if (!json_is_object(root)) {
        return cfg_refuse(c, "", "must be an object");
    }
    wamp_err err = cfg_check_keys(c, "", root, root_rules, N_RULES(root_rules));
    /* Crossbar requires "version": 2 (a missing version means 1 and is refused as too old);
     * wampscope only reads version 2 and lets it be omitted. */
    const json_t *version = json_object_get(root, "version");
    if (version && (!json_is_integer(version) || json_integer_value(version) != 2)) {
        err = cfg_refuse(c, "version", "must be 2 (Crossbar node configuration version 2)");
    }
    const json_t *controller = json_object_get(root, "controller");
    if (controller) {
        err = cfg_worse(err, parse_controller(c, "controller", controller, cfg));
    }
    const json_t *workers = json_object_get(root, "workers");
    if (cfg_stop(err) || (workers && !json_is_array(workers))) {
        return cfg_stop(err) ? err : cfg_refuse(c, "workers", "must be a list");
    }
    long router = workers ? find_router(c, workers, &err) : -1;
    if (router < 0) {
        return cfg_refuse(c, "workers", "must contain one worker of type \"router\"");
    }
    cfg_path rp = cfg_index("workers", (size_t)router);
    return cfg_worse(err, parse_router(c, rp.s, json_array_get(workers, (size_t)router), cfg));
}

static wamp_err set_defaults(cfg_ctx *c, rt_config *cfg)
{
    wamp_err err = cfg_wampscope_defaults(c, cfg);
    if (err == WAMP_OK) {
        err = cfg_dup(c, DEF_WORKER_ID, &cfg->worker_id);
    }
    return err;
}

/* Crossbar's default node ID is the host name. */
static wamp_err default_node_id(cfg_ctx *c, rt_config *cfg)
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0 || !host[0]) {
        return cfg_dup(c, "localhost", &cfg->node_id);
    }
    host[sizeof(host) - 1] = '\0';
    return cfg_dup(c, host, &cfg->node_id);
}

/* ---- Public API ----------------------------------------------------------------------------- */

void rt_config_diag_fini(rt_config_diag *d)
{
    if (!d) {
        return;
    }
    for (size_t i = 0; i < d->n_errors; i++) {
        free(d->errors[i]);
    }
    for (size_t i = 0; i < d->n_warnings; i++) {
        free(d->warnings[i]);
    }
    free(d->errors);
    free(d->warnings);
    memset(d, 0, sizeof(*d));
}

/* The one warning that names every key accepted and ignored (see configs/README.md, "Moving a
 * Crossbar config over"). */
static wamp_err warn_ignored(cfg_ctx *c)
{
    if (!c->n_ignored) {
        return WAMP_OK;
    }
    char msg[CFG_IGNORED_MAX + 128];
    snprintf(msg, sizeof(msg), "%zu key(s) with no effect in wampscope, ignored: %s", c->n_ignored,
             c->ignored);
    return cfg_warn(c, msg);
}

static wamp_err parse_json(cfg_ctx *c, const json_t *root, rt_config **out)
{
    size_t errors_before = c->diag->n_errors + c->diag->n_errors_dropped;
    rt_config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg) {
        return cfg_oom(c);
    }
    wamp_err rc = set_defaults(c, cfg);
    if (rc == WAMP_OK) {
        rc = parse_root(c, root, cfg);
    }
    if (rc == WAMP_OK && !cfg->node_id) {
        rc = default_node_id(c, cfg);
    }
    if (rc == WAMP_OK) {
        rc = cfg_check_cluster_node_id(c, cfg);
    }
    if (!cfg_stop(rc)) {
        rc = cfg_worse(rc, warn_ignored(c));
    }
    if (rc == WAMP_OK && c->diag->n_errors + c->diag->n_errors_dropped > errors_before) {
        rc = WAMP_EINVAL; /* a refusal in a part whose caller went on */
    }
    if (c->oom) {
        rc = WAMP_ENOMEM;
    }
    if (rc != WAMP_OK) {
        rt_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return WAMP_OK;
}

static wamp_err parse_with(const char *text, size_t len, const char *base_dir, rt_config **out,
                           rt_config_diag *diag)
{
    cfg_ctx c = {.diag = diag, .base_dir = base_dir};
    json_error_t jerr;

    if (!out) {
        return cfg_refuse(&c, "", "no output pointer");
    }
    *out = NULL;
    if (!text) {
        return cfg_refuse(&c, "", "no configuration text");
    }
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char msg[CFG_MSG_MAX];
        snprintf(msg, sizeof(msg), "JSON syntax error at line %d, column %d: %s", jerr.line,
                 jerr.column, jerr.text);
        cfg_error(&c, msg);
        return c.oom ? WAMP_ENOMEM : WAMP_EINVAL;
    }
    wamp_err rc = parse_json(&c, root, out);
    json_decref(root);
    return rc;
}

wamp_err rt_config_parse(const char *text, size_t len, const char *base_dir, rt_config **out,
                         rt_config_diag *diag)
{
    rt_config_diag local = {0};
    wamp_err rc = parse_with(text, len, base_dir, out, diag ? diag : &local);
    rt_config_diag_fini(&local);
    return rc;
}

/* Reads all of f into a NUL-terminated heap buffer, growing it as needed (f may be a pipe).
 * On failure writes the reason into msg and returns NULL. */
static char *read_all(FILE *f, size_t *len, wamp_err *rc, char *msg, size_t msg_len)
{
    size_t cap = 64 * 1024;
    size_t n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (ferror(f)) {
            snprintf(msg, msg_len, "cannot read: %s", strerror(errno));
            *rc = WAMP_EIO;
            free(buf);
            return NULL;
        }
        if (n < cap) {
            buf[n] = '\0';
            *len = n;
            return buf;
        }
        if (cap >= CFG_FILE_MAX) {
            snprintf(msg, msg_len, "larger than %zu bytes", CFG_FILE_MAX);
            *rc = WAMP_EINVAL;
            free(buf);
            return NULL;
        }
        cap *= 2;
        char *grown = realloc(buf, cap + 1);
        if (!grown) {
            free(buf);
        }
        buf = grown;
    }
    snprintf(msg, msg_len, "out of memory");
    *rc = WAMP_ENOMEM;
    return NULL;
}

/* The directory of the file path names, made absolute (so that a later change of the working
 * directory does not matter); NULL when out of memory. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir || dir[0] == '/') {
        return dir;
    }
    char cwd[4096];
    if (!getcwd(cwd, sizeof(cwd))) {
        return dir; /* relative, as given */
    }
    bool here = strcmp(dir, ".") == 0;
    size_t n = strlen(cwd) + 1 + strlen(dir) + 1;
    char *abs = malloc(n);
    if (abs) {
        snprintf(abs, n, "%s%s%s", cwd, here ? "" : "/", here ? "" : dir);
    }
    free(dir);
    return abs;
}

static wamp_err parse_file_with(const char *path, rt_config **out, rt_config_diag *diag)
{
    cfg_ctx c = {.diag = diag};
    char msg[CFG_MSG_MAX];
    char *text = NULL;
    char *dir = NULL;
    size_t len = 0;
    wamp_err rc = WAMP_OK;

    if (out) {
        *out = NULL;
    }
    if (!path) {
        return cfg_refuse(&c, "", "no configuration file name");
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, sizeof(msg), "cannot open: %s", strerror(errno));
        cfg_error(&c, msg);
        return WAMP_EIO;
    }
    text = read_all(f, &len, &rc, msg, sizeof(msg));
    fclose(f);
    if (!text) {
        cfg_error(&c, msg);
        return rc;
    }
    dir = dir_of(path);
    rc = dir ? parse_with(text, len, dir, out, diag) : cfg_oom(&c);
    free(dir);
    free(text);
    return rc;
}

wamp_err rt_config_parse_file(const char *path, rt_config **out, rt_config_diag *diag)
{
    rt_config_diag local = {0};
    wamp_err rc = parse_file_with(path, out, diag ? diag : &local);
    rt_config_diag_fini(&local);
    return rc;
}

wamp_err rt_config_parse_default(rt_config **out, rt_config_diag *diag)
{
    return rt_config_parse(rt_config_default_json, rt_config_default_json_len, NULL, out, diag);
}

/* The first error of d (or what rc says) into err, after prefix. */
static void first_error(wamp_err rc, const rt_config_diag *d, const char *prefix, char *err,
                        size_t err_len)
{
    if (!err || !err_len) {
        return;
    }
    err[0] = '\0';
    if (rc == WAMP_OK) {
        return;
    }
    const char *m = rc == WAMP_ENOMEM ? "out of memory"
                    : d->n_errors     ? d->errors[0]
                                      : wamp_strerror(rc);
    snprintf(err, err_len, "%s%s", prefix, m);
}

wamp_err rt_config_load_string(const char *text, size_t len, rt_config **out, char *err,
                               size_t err_len)
{
    rt_config_diag d = {0};
    wamp_err rc = rt_config_parse(text, len, NULL, out, &d);
    first_error(rc, &d, "", err, err_len);
    rt_config_diag_fini(&d);
    return rc;
}

wamp_err rt_config_load_file(const char *path, rt_config **out, char *err, size_t err_len)
{
    rt_config_diag d = {0};
    char prefix[CFG_MSG_MAX];
    snprintf(prefix, sizeof(prefix), "%s%s", path ? path : "", path ? ": " : "");
    wamp_err rc = rt_config_parse_file(path, out, &d);
    first_error(rc, &d, prefix, err, err_len);
    rt_config_diag_fini(&d);
    return rc;
}

wamp_err rt_config_load_default(rt_config **out, char *err, size_t err_len)
{
    rt_config_diag d = {0};
    wamp_err rc = rt_config_parse_default(out, &d);
    first_error(rc, &d, "embedded default configuration: ", err, err_len);
    rt_config_diag_fini(&d);
    return rc;
}

void rt_config_free(rt_config *cfg)
{
    if (!cfg) {
        return;
    }
    cfg_free_realms(cfg);
    cfg_free_listeners(cfg);
    free(cfg->node_id);
    free(cfg->worker_id);
    free(cfg->mgmt_realm);
    free(cfg->mgmt_trusted);
    json_decref(cfg->mgmt_origins);
    if (cfg->mgmt_auth) {
        cfg_free_auth(cfg->mgmt_auth);
        free(cfg->mgmt_auth);
    }
    free(cfg->tracing_data_dir);
    json_decref(cfg->tracing_flight_recorder);
    free(cfg->log_level);
    free(cfg->metrics_interface);
    free(cfg->metrics_path);
    cfg_free_cluster(cfg);
    free(cfg);
}

const rt_realm_config *rt_config_find_realm(const rt_config *cfg, const char *name)
{
    if (!cfg || !name) {
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_realms; i++) {
        if (strcmp(cfg->realms[i].name, name) == 0) {
            return &cfg->realms[i];
        }
    }
    return NULL;
}

const rt_auth_principal *rt_config_find_principal(const rt_auth_method_config *m,
                                                  const char *authid)
{
    for (size_t i = 0; authid && i < m->n_principals; i++) {
        if (strcmp(m->principals[i].authid, authid) == 0) {
            return &m->principals[i];
        }
    }
    return NULL;
}
