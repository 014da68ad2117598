/* main.c: command line, configuration, library-global state, wiring, run, teardown.
 *
 * Library-global state, all set here, once, before the loop (STYLE §5):
 *   - the signal mask: SIGTERM and SIGINT blocked (rt_lws reads them from a signalfd);
 *   - SIGXFSZ ignored: a persisted trace over a file-size limit gets EFBIG from write(2) and
 *     stops with io_error, instead of the signal killing the router;
 *   - jansson's and wamp_buf's allocator (rt_jalloc: free lists of small blocks; first, before
 *     any jansson value exists; its lists are released at exit), sodium_init() and
 *     json_object_seed(0);
 *   - with wampscope.cluster, cnats' library state (released by rt_nats_node_free());
 *   - the rt_log level, format and target (syslog opened here), its session lookup (the
 *     router, while it exists), and lws_set_log_level() through rt_lws_log_init().
 * Exit status: 0 clean shutdown (or --help/--version/--check-config), 1 runtime failure,
 * 2 usage or configuration error. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <libwebsockets.h>
#include <sodium.h>

#include "mgmt_api.h"
#include "rt_config.h"
#include "rt_jalloc.h"
#include "rt_log.h"
#include "rt_lws.h"
#include "rt_nats_node.h"
#include "rt_router.h"
#include "trace_lock.h"
#include "trace_persist.h"

#ifndef RT_VERSION
#error "RT_VERSION comes from CMake (router/CMakeLists.txt)"
#endif

#define EXIT_USAGE 2

typedef struct main_args {
    const char *config_path;
    const char *ports_file;
    const char *log_level;
    const char *log_format;
    const char *log_target;
    int port; /* -1 = from the config */
    bool check_config;
} main_args;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wampscope [-c FILE] [--port N] [--ports-file FILE] [--log-level LEVEL]\n"
            "                 [--log-format FORMAT] [--log-target TARGET] [--check-config]\n"
            "                 [--version] [--help]\n"
            "\n"
            "  -c, --config FILE    Crossbar-style node configuration (default: the embedded\n"
            "                       configuration, 127.0.0.1:8080/ws)\n"
            "  --port N             port of the first WebSocket listener (0 = any free port)\n"
            "  --ports-file FILE    after listening, write one URL per listener (ws://, rs://) "
            "to FILE\n"
            "                       (and the metrics listener's http:// URL, if configured)\n"
            "  --log-level LEVEL    error, warn, info (default), debug or trace (debug, and one\n"
            "                       line per WAMP message; tracing is the better tool)\n"
            "  --loglevel LEVEL     the same (Crossbar's spelling)\n"
            "  --log-format FORMAT  text (default) or json (one JSON object a line)\n"
            "  --log-target TARGET  stderr (default) or syslog (daemon facility; journald)\n"
            "  --check-config       validate the configuration, list every error, and exit\n"
            "  --version            print the version and exit\n"
            "  --help               print this help and exit\n");
}

/* Returns -1 to continue, or the exit status.
 * Long: one case per command-line option of getopt_long(), in the order --help lists them. */
static int parse_args(int argc, char **argv, main_args *a)
{
    enum {
        OPT_PORT = 256,
        OPT_PORTS_FILE,
        OPT_LOG_LEVEL,
        OPT_LOG_FORMAT,
        OPT_LOG_TARGET,
        OPT_CHECK,
        OPT_VERSION,
        OPT_HELP
    };
    static const struct option opts[] = {
            {"config", required_argument, NULL, 'c'},
            {"port", required_argument, NULL, OPT_PORT},
            {"ports-file", required_argument, NULL, OPT_PORTS_FILE},
            {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
            {"loglevel", required_argument, NULL, OPT_LOG_LEVEL},
            {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
            {"log-target", required_argument, NULL, OPT_LOG_TARGET},
            {"check-config", no_argument, NULL, OPT_CHECK},
            {"version", no_argument, NULL, OPT_VERSION},
            {"help", no_argument, NULL, OPT_HELP},
            {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof(*a));
    a->port = -1;
    int c;
    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            a->config_path = optarg;
            break;
        case OPT_PORT: {
            char *end = NULL;
            errno = 0;
            long p = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || p < 0 || p > 65535) {
                fprintf(stderr, "wampscope: --port: expected 0..65535, got \"%s\"\n", optarg);
                return EXIT_USAGE;
            }
            a->port = (int)p;
            break;
        }
        case OPT_PORTS_FILE:
            a->ports_file = optarg;
            break;
        case OPT_LOG_LEVEL:
            a->log_level = optarg;
            break;
        case OPT_LOG_FORMAT: {
            rt_log_format fmt;
            if (!rt_log_format_parse(optarg, &fmt)) {
                fprintf(stderr, "wampscope: --log-format: expected text or json, got \"%s\"\n",
                        optarg);
                return EXIT_USAGE;
            }
            a->log_format = optarg;
            break;
        }
        case OPT_LOG_TARGET: {
            rt_log_target target;
            if (!rt_log_target_parse(optarg, &target)) {
                fprintf(stderr, "wampscope: --log-target: expected stderr or syslog, got \"%s\"\n",
                        optarg);
                return EXIT_USAGE;
            }
            a->log_target = optarg;
            break;
        }
        case OPT_CHECK:
            a->check_config = true;
            break;
        case OPT_VERSION:
            printf("wampscope %s (libwebsockets %s)\n", RT_VERSION, lws_get_library_version());
            return EXIT_SUCCESS;
        case 'h':
        case OPT_HELP:
            usage(stdout);
            return EXIT_SUCCESS;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "wampscope: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return EXIT_USAGE;
    }
    return -1;
}

/* The router's log is JSON on stderr (--log-format json, not with --check-config, whose output
 * is for a person): then every start-up message is a JSON log line too, so that every line on
 * stderr parses. */
static bool json_stderr(const main_args *a)
{
    return a->log_format && strcmp(a->log_format, "json") == 0 && !a->check_config &&
           !(a->log_target && strcmp(a->log_target, "syslog") == 0);
}

/* A start-up message: a log line of level lv when the log is JSON on stderr, else
 * "wampscope: ..." on stderr. Whole, however long: the configuration's warning that names every
 * ignored key runs to a few KiB (cut only when out of memory). */
__attribute__((format(printf, 3, 4))) static void say(const main_args *a, rt_log_level lv,
                                                      const char *fmt, ...)
{
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    char *msg = n >= 0 && (size_t)n >= sizeof(small) ? malloc((size_t)n + 1) : NULL;
    if (msg) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    if (json_stderr(a)) {
        rt_log(lv, 0, "%s", msg ? msg : small);
    } else {
        fprintf(stderr, "wampscope: %s\n", msg ? msg : small);
    }
    free(msg);
}

/* Every error and warning of the configuration, one a line on stderr, each starting with the
 * file; a refused configuration ends with the count. */
static void report_config(const main_args *a, wamp_err e, const rt_config_diag *d)
{
    const char *src = a->config_path ? a->config_path : "embedded default configuration";
    for (size_t i = 0; i < d->n_warnings; i++) {
        say(a, RT_LOG_LEVEL_WARN, "%s: warning: %s", src, d->warnings[i]);
    }
    for (size_t i = 0; i < d->n_errors; i++) {
        say(a, RT_LOG_LEVEL_ERR, "%s: %s", src, d->errors[i]);
    }
    if (d->n_errors_dropped) {
        say(a, RT_LOG_LEVEL_ERR, "%s: %zu more error(s) not shown", src, d->n_errors_dropped);
    }
    if (e == WAMP_ENOMEM) {
        say(a, RT_LOG_LEVEL_ERR, "%s: out of memory", src);
    } else if (e != WAMP_OK) {
        say(a, RT_LOG_LEVEL_ERR, "%s: %zu error(s), configuration refused", src,
            d->n_errors + d->n_errors_dropped);
    }
}

/* --port N moves the first WebSocket listener to N (rt_lws_new()). On the port of another
 * listener, or of the metrics listener, on an overlapping interface, libwebsockets would share
 * one socket between them and one of them would never be reached (the configuration refuses
 * such ports; the command line must too). False, with a message, when N is such a port. */
static bool port_option_is_free(const main_args *a, const rt_config *cfg)
{
    size_t w = 0;
    while (w < cfg->n_listeners && cfg->listeners[w].kind != RT_TRANSPORT_WEBSOCKET) {
        w++;
    }
    if (a->port <= 0 || w == cfg->n_listeners) {
        return true;
    }
    const char *iface = cfg->listeners[w].interface;
    size_t k = rt_config_listener_on_port(cfg, w, iface, a->port);
    if (k < cfg->n_listeners) {
        say(a, RT_LOG_LEVEL_ERR, "--port %d: transport %s listens on this port already", a->port,
            cfg->listeners[k].id ? cfg->listeners[k].id : "?");
        return false;
    }
    if (cfg->metrics_enabled && cfg->metrics_port == a->port &&
        rt_config_interfaces_overlap(iface, cfg->metrics_interface)) {
        say(a, RT_LOG_LEVEL_ERR,
            "--port %d: the metrics listener (wampscope.metrics) listens on this port already",
            a->port);
        return false;
    }
    return true;
}

/* The command line wins over the config's wampscope.log_level. */
static bool apply_log_level(const main_args *a, const rt_config *cfg)
{
    const char *s = a->log_level ? a->log_level : cfg->log_level;
    rt_log_level lv = RT_LOG_LEVEL_INFO;
    if (s && !rt_log_level_parse(s, &lv)) {
        say(a, RT_LOG_LEVEL_ERR, "%s: unknown log level \"%s\" (error, warn, info, debug, trace)",
            a->log_level ? "--log-level" : "wampscope.log_level", s);
        return false;
    }
    rt_log_set_level(lv);
    return true;
}

/* --log-format and --log-target (checked by parse_args()). */
static void apply_log_output(const main_args *a)
{
    rt_log_format fmt = RT_LOG_FORMAT_TEXT;
    rt_log_target target = RT_LOG_TARGET_STDERR;
    if (a->log_format) {
        rt_log_format_parse(a->log_format, &fmt);
    }
    if (a->log_target) {
        rt_log_target_parse(a->log_target, &target);
    }
    rt_log_set_output(fmt, target);
}

static void log_start(const rt_config *cfg)
{
    char realms[512];
    size_t o = 0;
    realms[0] = '\0';
    for (size_t i = 0; i < cfg->n_realms && o < sizeof(realms); i++) {
        int n = snprintf(realms + o, sizeof(realms) - o, "%s%s", i ? ", " : "",
                         cfg->realms[i].name);
        if (n < 0) {
            break;
        }
        o += (size_t)n;
    }
    RT_LOG_INFO(0, "wampscope %s starting: node %s, worker %s, realms: %s", RT_VERSION,
                cfg->node_id ? cfg->node_id : "?", cfg->worker_id ? cfg->worker_id : "?",
                cfg->n_realms ? realms : "(none)");
    if (rt_log_get_level() >= RT_LOG_LEVEL_TRACE) {
        RT_LOG_INFO(0, "log level trace: one line per WAMP message received and sent (type, "
                       "session, realm, size; never the payload). Message tracing is the better "
                       "tool: it keeps the messages themselves, filtered, at a fraction of the "
                       "cost (wampscope-ctl start, see wampscope-ctl(1))");
    }
}

/* Prints and logs one "listening on URL" line per listener; writes the URLs to ports_file
 * (if given) atomically: FILE.tmp, then rename, so a reader never sees a partial file. */
static bool announce(const rt_lws *l, const char *ports_file)
{
    char tmp[4096];
    FILE *f = NULL;
    if (ports_file) {
        int n = snprintf(tmp, sizeof(tmp), "%s.tmp", ports_file);
        if (n < 0 || (size_t)n >= sizeof(tmp)) {
            RT_LOG_ERR(0, "--ports-file: path too long");
            return false;
        }
        f = fopen(tmp, "w");
        if (!f) {
            RT_LOG_ERR(0, "cannot write %s: %s", tmp, strerror(errno));
            return false;
        }
    }
    bool ok = true;
    for (size_t i = 0; i < rt_lws_listener_count(l); i++) {
        char url[512];
        if (!rt_lws_listener_url(l, i, url, sizeof(url))) {
            snprintf(url, sizeof(url), "ws://?:%d/", rt_lws_listener_port(l, i));
        }
        printf("listening on %s\n", url);
        RT_LOG_INFO(0, "listening on %s", url);
        if (f && fprintf(f, "%s\n", url) < 0) {
            ok = false;
        }
    }
    char murl[512];
    if (rt_lws_metrics_url(l, murl, sizeof(murl))) {
        printf("metrics on %s\n", murl);
        RT_LOG_INFO(0, "serving metrics on %s", murl);
        if (f && fprintf(f, "%s\n", murl) < 0) {
            ok = false;
        }
    }
    fflush(stdout);
    if (f) {
        if (fclose(f) != 0) {
            ok = false;
        }
        if (!ok || rename(tmp, ports_file) != 0) {
            RT_LOG_ERR(0, "cannot write %s: %s", ports_file, strerror(errno));
            remove(tmp);
            return false;
        }
    }
    return ok;
}

/* Long: the program's start and its ordered teardown, step by step (configuration, logging,
 * router, management API, cluster, adapter, service loop), each step's failure unwinding what
 * the steps before it made: one sequence reads best in one place. */
int main(int argc, char **argv)
{
    rt_jalloc_install();
    main_args args;
    int rc = parse_args(argc, argv, &args);
    if (rc >= 0) {
        return rc;
    }

    /* Before anything else, so that a signal during start-up waits in the signalfd. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        fprintf(stderr, "wampscope: sigprocmask: %s\n", strerror(errno));
        return EXIT_FAILURE;
    }
    signal(SIGXFSZ, SIG_IGN);
    if (sodium_init() < 0) {
        fprintf(stderr, "wampscope: libsodium initialisation failed\n");
        return EXIT_FAILURE;
    }
    json_object_seed(0);

    rt_config *cfg = NULL;
    rt_router *rt = NULL;
    mgmt_api *mgmt = NULL;
    rt_lws *l = NULL;
    rt_nats_node *cluster = NULL;
    trace_lock *data_lock = NULL;
    char err[512];
    rt_config_diag diag = {0};
    wamp_err e = args.config_path ? rt_config_parse_file(args.config_path, &cfg, &diag)
                                  : rt_config_parse_default(&cfg, &diag);
    if (json_stderr(&args)) {
        rt_log_set_output(RT_LOG_FORMAT_JSON, RT_LOG_TARGET_STDERR);
    }
    report_config(&args, e, &diag);
    rt_config_diag_fini(&diag);
    if (e != WAMP_OK) {
        return EXIT_USAGE;
    }
    if (!apply_log_level(&args, cfg) || !port_option_is_free(&args, cfg)) {
        rt_config_free(cfg);
        return EXIT_USAGE;
    }
    if (args.check_config) {
        printf("%s: configuration OK (%zu listener(s), %zu realm(s))\n",
               args.config_path ? args.config_path : "(embedded default)", cfg->n_listeners,
               cfg->n_realms);
        rt_config_free(cfg);
        return EXIT_SUCCESS;
    }
    apply_log_output(&args);
    rt_lws_log_init();
    log_start(cfg);

    rc = EXIT_FAILURE;
    /* The data directory of persisted traces is this router's alone, from before the reload of
     * the traces found there until exit (a second router on it would mark them crashed). */
    e = trace_lock_acquire(cfg->tracing_data_dir ? cfg->tracing_data_dir
                                                 : TRACE_PERSIST_DATA_DIR_DEFAULT,
                           &data_lock, err, sizeof(err));
    if (e != WAMP_OK) {
        say(&args, RT_LOG_LEVEL_ERR, "%s", e == WAMP_ENOMEM ? "out of memory" : err);
        goto done;
    }
    rt = rt_router_new(cfg, NULL, NULL);
    if (!rt) {
        say(&args, RT_LOG_LEVEL_ERR, "out of memory");
        goto done;
    }
    rt_log_set_session_lookup(rt_router_log_session_info, rt);
    if (cfg->mgmt_enabled) {
        e = mgmt_api_new(rt, rt_router_wall_ns(rt), &mgmt);
        if (e != WAMP_OK) {
            say(&args, RT_LOG_LEVEL_ERR, "cannot start the management API: %s", wamp_strerror(e));
            goto done;
        }
        char nets[1024];
        rt_config_format_trusted(cfg, nets, sizeof(nets));
        if (cfg->mgmt_auth) {
            const rt_auth_config *a = cfg->mgmt_auth;
            RT_LOG_INFO(0,
                        "management realm \"%s\": protected mode off, authentication required "
                        "(%s%s%s%zu principal(s), wampscope.management.auth)",
                        cfg->mgmt_realm, a->ticket.enabled ? "ticket, " : "",
                        a->wampcra.enabled ? "wampcra, " : "",
                        a->cryptosign.enabled ? "cryptosign, " : "",
                        a->ticket.n_principals + a->wampcra.n_principals +
                                a->cryptosign.n_principals);
        } else if (nets[0]) {
            RT_LOG_INFO(0,
                        "management realm \"%s\" in protected mode: anonymous sessions from "
                        "%s only (role admin)",
                        cfg->mgmt_realm, nets);
        } else {
            RT_LOG_INFO(0,
                        "management realm \"%s\" in protected mode: no trusted networks, "
                        "anonymous sessions refused",
                        cfg->mgmt_realm);
        }
    }
    if (cfg->cluster) {
        e = rt_nats_node_start(rt, cfg, &cluster, err, sizeof(err));
        if (e != WAMP_OK) {
            RT_LOG_ERR(0, "%s", err);
            fprintf(stderr, "wampscope: %s\n", err);
            goto done;
        }
        rt_router_set_cluster(rt, rt_nats_node_cluster(cluster));
        e = mgmt ? mgmt_api_set_cluster(mgmt, rt_nats_node_cluster(cluster)) : WAMP_OK;
        if (e != WAMP_OK) {
            say(&args, RT_LOG_LEVEL_ERR, "cannot serve the management API to the cluster: %s",
                wamp_strerror(e));
            goto done;
        }
    }
    rt_lws_options opt = {.port_override = args.port};
    e = rt_lws_new(rt, &opt, &l, err, sizeof(err));
    if (e != WAMP_OK) {
        if (!json_stderr(&args)) {
            RT_LOG_ERR(0, "%s", err);
        }
        say(&args, RT_LOG_LEVEL_ERR, "%s", err);
        goto done;
    }
    if (cluster) {
        rt_lws_set_service_hook(l, rt_nats_node_service, cluster);
        rt_nats_node_set_wake(cluster, rt_lws_wake, l);
    }
    if (!announce(l, args.ports_file)) {
        goto done;
    }
    if (rt_lws_run(l) == WAMP_OK) {
        rc = EXIT_SUCCESS;
    }
done:
    /* Order matters: lws delivers CLOSED (rt_session_on_closed) for every live connection
     * while the router still exists; traces record until then, and stop (persisted ones
     * flushed and synced) before anything is freed; the router borrows the config. The
     * cluster link stops waking the loop before the loop goes, and leaves once the node takes
     * no more clients. */
    if (cluster) {
        rt_nats_node_set_wake(cluster, NULL, NULL);
    }
    if (mgmt) {
        (void)mgmt_api_set_cluster(mgmt, NULL);
    }
    if (rt) {
        rt_router_set_cluster(rt, NULL);
    }
    rt_lws_free(l);
    rt_nats_node_free(cluster);
    if (rt) {
        rt_router_end_shutdown(rt);
    }
    mgmt_api_free(mgmt);
    rt_log_set_session_lookup(NULL, NULL);
    rt_router_free(rt);
    trace_lock_release(data_lock); /* after the traces' last writes */
    if (rc == EXIT_SUCCESS) {
        RT_LOG_INFO(0, "stopped");
    }
    rt_config_free(cfg);
    rt_log_close();
    return rc;
}
