/* ctl_main.c: wampscope-ctl, the command-line management client (README.md "wampscope-ctl").
 * Parses the command line, connects (ctl_client), runs one command against the management API
 * (mgmt/README.md) and maps failures to the documented exit statuses. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "ctl_auth.h"
#include "ctl_client.h"
#include "ctl_export.h"
#include "ctl_format.h"
#include "mgmt_uri.h"

#define PROC(name)  MGMT_PREFIX name
#define TOPIC(name) MGMT_TOPIC_PREFIX name

/* Exit statuses (also in the --help text). */
enum {
    EX_OK = 0,
    EX_FAIL = 1,     /* local failure: I/O, lost connection, timeout */
    EX_USAGE = 2,    /* bad command line */
    EX_CONNECT = 3,  /* cannot connect to the router */
    EX_AUTH = 4,     /* the router refused the session (ABORT: authentication, authorization,
                      * no such realm) */
    EX_NOTFOUND = 5, /* unknown trace, node or worker */
    EX_REFUSED = 6,  /* the router refused the request (any other error URI) */
    /* Internal: Ctrl-C during a command for which it is the normal end (tail). */
    EX_INTERRUPTED_END = -2
};

#define DEFAULT_URL   "ws://127.0.0.1:8080/ws"
#define DEFAULT_REALM "mgmt"

static const char usage_text[] =
        "usage: wampscope-ctl [--url URL] [--realm REALM] [--node ID] [--worker ID]\n"
        "                     [--authid ID] [--ticket-file F | --secret-file F | --key-file F]\n"
        "                     [--timeout SECONDS] [--ca-file F] [--no-color] [--wide]\n"
        "                     COMMAND [ARGS...]\n"
        "\n"
        "The management client of the wampscope WAMP router.\n"
        "\n"
        "Commands:\n"
        "  nodes                 list the nodes\n"
        "  workers               list the workers of the node\n"
        "  traces                table of the traces (id, status, records, dropped, started, "
        "runtime)\n"
        "  start [ID] [OPTIONS]  start a trace (ID omitted: the router names it)\n"
        "  stop ID               stop a trace (its records stay readable)\n"
        "  delete ID             delete a stopped trace and its records\n"
        "  show ID               a trace's metadata\n"
        "  stats                 the worker's counters and gauges (--watch [S]: refresh)\n"
        "  data ID               a trace's records (table, or --json)\n"
        "  wire                  the wire capture's messages (table, or --json)\n"
        "  tail ID               follow a trace's records live (Ctrl-C ends)\n"
        "  export ID             write a whole trace to a file (JSON Lines or Chrome trace)\n"
        "  mark [ID] NAME        add a marker record to one trace or to every running one\n"
        "  help [COMMAND]        this text, or a command's\n"
        "\n"
        "Global options:\n"
        "  --url URL        router WebSocket URL (env WAMPSCOPE_URL; default " DEFAULT_URL ")\n"
        "  --realm REALM    management realm (default " DEFAULT_REALM ")\n"
        "  --node ID        node (default: the first the router lists); '*': every node\n"
        "                   (start, stop, delete, mark, show: a map of the answers;\n"
        "                   traces: a table per node;\n"
        "                   data, export: every node's records merged in time order;\n"
        "                   tail: every node's live records, each naming its node)\n"
        "  --worker ID      worker (default: the first the node lists)\n"
        "  --timeout S      seconds to wait for the router per request (default 30)\n"
        "  --ca-file F      wss:// URLs: trust the CA certificate(s) in PEM file F\n"
        "                   (default: the system\'s CAs)\n"
        "  --no-color       no colours (also env NO_COLOR; never when stdout is no terminal)\n"
        "  --wide           tables at full width (default: fit the terminal, cutting the\n"
        "                   MSG, URI and REALM columns, leaving out REALM, CORR, SESSION)\n"
        "Authentication (default anonymous; secrets never on the command line):\n"
        "  --authid ID         the authid to announce (env WAMPSCOPE_AUTHID)\n"
        "  --ticket-file F     ticket auth, ticket on F's first line (or env WAMPSCOPE_TICKET)\n"
        "  --secret-file F     wampcra auth, secret on F's first line (or env WAMPSCOPE_SECRET)\n"
        "  --key-file F        cryptosign auth, Ed25519 seed as 64 hex digits in F\n"
        "                      (or env WAMPSCOPE_KEY_FILE)\n"
        "\n"
        "Exit status: 0 ok, 1 local failure (I/O, connection lost, timeout), 2 usage error,\n"
        "3 cannot connect, 4 session refused (ABORT: authentication failed, not authorized,\n"
        "no such realm), 5 unknown trace/node/worker\n"
        "(crossbar.error.no_such_object / no_such_worker), 6 request refused by the router\n"
        "(any other error; the error URI is printed).\n";

typedef struct cmd cmd;

typedef struct ctl {
    const char *url;
    const char *realm;
    const char *node;
    const char *worker;
    const char *ca_file;
    json_t *node_owned;   /* keeps a discovered node id alive */
    json_t *worker_owned; /* likewise for the worker */
    ctl_auth auth;
    int timeout_ms;
    ctl_client *cl;
    const cmd *command;
    bool interrupt_is_end; /* Ctrl-C ends the command normally (tail) */
    bool wide;             /* --wide: tables at full width */
    int argc;              /* the command's arguments (after its name) */
    char **argv;
} ctl;

struct cmd {
    const char *name;
    int (*run)(ctl *c);
    const char *help;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void errline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* v's text, "?" when it is not a string (a router may answer anything). */
static const char *str_or_q(const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? s : "?";
}

/* The seqs a trace gives out are integers in [0, 2^53]: a seq (first_seq, next_seq, from_seq,
 * to_seq, a record's seq) read from an answer is clamped to that range, so that the arithmetic
 * on it (the next seq, the seqs held, a gap's size) cannot overflow whatever a router answers. */
#define CTL_SEQ_MAX (1LL << 53)

static long long seq_of(const json_t *v)
{
    json_int_t n = json_integer_value(v);
    return n < 0 ? 0 : n > CTL_SEQ_MAX ? CTL_SEQ_MAX : (long long)n;
}

/* Colour on fd: a terminal, and NO_COLOR unset or empty (https://no-color.org; --no-color sets
 * it, so the environment is the one place that says so). */
static bool colour_on(int fd)
{
    const char *nc = getenv("NO_COLOR");
    return !(nc && *nc) && isatty(fd);
}

static void errline(const char *fmt, ...)
{
    va_list ap;
    bool red = colour_on(STDERR_FILENO);
    va_start(ap, fmt);
    fputs(red ? "\033[31mwampscope-ctl: " : "wampscope-ctl: ", stderr);
    ctl_format_vclean(stderr, fmt, ap); /* error URIs and messages come from the router */
    fputs(red ? "\033[0m\n" : "\n", stderr);
    va_end(ap);
}

/* Columns of the terminal on stdout (0 when it is none). */
static int terminal_columns(void)
{
    struct winsize ws;
    if (!isatty(STDOUT_FILENO)) {
        return 0;
    }
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        return ws.ws_col;
    }
    const char *env = getenv("COLUMNS");
    int n = env ? atoi(env) : 0;
    return n > 0 ? n : 80;
}

/* How a command's tables look: --wide: full width; --width N (width >= 0): full width, MSG cut
 * at N; else the terminal's width, or (not a terminal) MSG cut at 60. */
static ctl_style table_style(const ctl *c, int width)
{
    ctl_style st = {.columns = 0, .msg_width = 0, .color = colour_on(STDOUT_FILENO)};
    if (c->wide) {
        return st;
    }
    if (width >= 0) {
        st.msg_width = width;
        return st;
    }
    st.columns = terminal_columns();
    st.msg_width = st.columns ? 0 : 60;
    return st;
}

/* Prints e as one line and returns the exit status for it. */
static int fail(const ctl_error *e)
{
    switch (e->kind) {
    case CTL_E_CONNECT:
        errline("%s", e->msg);
        return EX_CONNECT;
    case CTL_E_AUTH:
        errline("the router refused the session: %s%s%s", e->uri, *e->uri ? ": " : "", e->msg);
        return EX_AUTH;
    case CTL_E_WAMP:
        errline("%s: %s", e->uri, e->msg);
        return strcmp(e->uri, "crossbar.error.no_such_object") == 0 ||
                               strcmp(e->uri, "crossbar.error.no_such_worker") == 0
                       ? EX_NOTFOUND
                       : EX_REFUSED;
    case CTL_E_USAGE:
        errline("%s", e->msg);
        return EX_USAGE;
    case CTL_E_INTERRUPTED:
        errline("interrupted");
        return EX_FAIL;
    default:
        errline("%s%s%s", e->msg, *e->uri ? ": " : "", e->uri);
        return EX_FAIL;
    }
}

static int usage_error(const ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage_error(const ctl *c, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c && c->command) {
        errline("%s: %s (see: wampscope-ctl %s --help)", c->command->name, msg, c->command->name);
    } else {
        errline("%s (see: wampscope-ctl --help)", msg);
    }
    return EX_USAGE;
}

/* --name VALUE or --name=VALUE at argv[*i]; advances *i past the value. */
static bool opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) {
        return false;
    }
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return true;
    }
    if (argv[*i][n] != '\0') {
        return false;
    }
    *val = *i + 1 < argc ? argv[++*i] : NULL;
    return true;
}

static bool parse_int(const char *s, long long min, long long max, long long *out)
{
    if (!s || !*s) {
        return false;
    }
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max) {
        return false;
    }
    *out = v;
    return true;
}

/* --- Calls ---------------------------------------------------------------------------------- */

/* Prints a failed call's error; a management procedure unknown to the realm means the session
 * is not on the management realm. Returns the exit status. */
static int fail_call(const ctl *c, const char *proc, const ctl_error *e)
{
    if (e->kind == CTL_E_WAMP && strcmp(e->uri, "wamp.error.no_such_procedure") == 0 &&
        strncmp(proc, PROC(""), strlen(PROC(""))) == 0) {
        errline("%s: %s (is --realm the management realm? it is \"%s\")", e->uri, e->msg, c->realm);
        return EX_REFUSED;
    }
    return fail(e);
}

/* Calls proc; on success *res = RESULT args[0] (owned, JSON null if none). On failure prints
 * the error and returns its exit status (non-zero). */
static int call(ctl *c, const char *proc, json_t *args_take, json_t **res)
{
    ctl_error e;
    json_t *result;
    *res = NULL;
    if (!args_take) {
        errline("out of memory");
        return EX_FAIL;
    }
    if (!ctl_client_call(c->cl, proc, args_take, NULL, &result, &e)) {
        return e.kind == CTL_E_INTERRUPTED && c->interrupt_is_end ? EX_INTERRUPTED_END
                                                                  : fail_call(c, proc, &e);
    }
    json_t *v = json_array_get(result, 0);
    *res = v ? json_incref(v) : json_null();
    json_decref(result);
    return EX_OK;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool every_node(const ctl *c)
{
    return c->node && strcmp(c->node, "*") == 0;
}

/* Fills c->node / c->worker with the first listed when not given (--node '*' stays, its worker
 * found on the first node). */
static int resolve_target(ctl *c, bool want_worker)
{
    json_t *v;
    int rc;
    const char *given = c->node;
    bool every = every_node(c);
    if (!c->node || (every && want_worker && !c->worker)) {
        if ((rc = call(c, PROC("list_nodes"), json_array(), &v)) != EX_OK) {
            return rc;
        }
        if (!json_is_string(json_array_get(v, 0))) {
            json_decref(v);
            errline("the router lists no node");
            return EX_NOTFOUND;
        }
        c->node_owned = v;
        c->node = json_string_value(json_array_get(v, 0));
    }
    if (want_worker && !c->worker) {
        /* --node '*': the worker of the first node (every node runs one of the same id). */
        if ((rc = call(c, PROC("list_workers"), json_pack("[s]", c->node), &v)) != EX_OK) {
            return rc;
        }
        if (!json_is_string(json_array_get(v, 0))) {
            json_decref(v);
            errline("node \"%s\" lists no worker", c->node);
            return EX_NOTFOUND;
        }
        c->worker_owned = v;
        c->worker = json_string_value(json_array_get(v, 0));
    }
    if (every) {
        c->node = given;
    }
    return EX_OK;
}

/* [node, worker, id]: a new args list for the trace procedures. */
static json_t *target_args_id(const ctl *c, const char *id)
{
    return json_pack("[s, s, s]", c->node, c->worker, id);
}

static void print_json(const json_t *v)
{
    char *s = ctl_format_json(v, true);
    if (s) {
        puts(s);
        free(s);
    }
}

/* Splits the command arguments into positionals (returned in pos, at most max) and flags
 * handled by fn(c, argc, argv, &i) (which returns false for an unknown flag). */
typedef int (*flag_fn)(ctl *c, void *state, int argc, char **argv, int *i);

/* Return values of flag_fn besides EX_OK / EX_USAGE. */
#define FLAG_UNKNOWN (-1)

static int parse_cmd_args(ctl *c, void *state, flag_fn fn, const char **pos, int max, int *npos)
{
    *npos = 0;
    for (int i = 0; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (strcmp(a, "--") == 0) {
            for (i++; i < c->argc; i++) {
                if (*npos == max) {
                    return usage_error(c, "too many arguments");
                }
                pos[(*npos)++] = c->argv[i];
            }
            break;
        }
        if (strcmp(a, "--wide") == 0) {
            c->wide = true;
            continue;
        }
        if (strcmp(a, "--no-color") == 0) {
            setenv("NO_COLOR", "1", 1);
            continue;
        }
        if (a[0] == '-' && a[1] != '\0') {
            int rc = fn ? fn(c, state, c->argc, c->argv, &i) : FLAG_UNKNOWN;
            if (rc == FLAG_UNKNOWN) {
                return usage_error(c, "unknown option %s", a);
            }
            if (rc != EX_OK) {
                return rc;
            }
            continue;
        }
        if (*npos == max) {
            return usage_error(c, "unexpected argument \"%s\"", a);
        }
        pos[(*npos)++] = a;
    }
    return EX_OK;
}

/* A flag without value: --json. */
static int flag_json(ctl *c, void *state, int argc, char **argv, int *i)
{
    (void)c;
    (void)argc;
    if (strcmp(argv[*i], "--json") == 0) {
        *(bool *)state = true;
        return EX_OK;
    }
    return FLAG_UNKNOWN;
}

/* --- Commands ------------------------------------------------------------------------------- */

static int cmd_nodes(ctl *c)
{
    const char *pos[1];
    int n, rc;
    bool json = false;
    if ((rc = parse_cmd_args(c, &json, flag_json, pos, 0, &n)) != EX_OK) {
        return rc;
    }
    json_t *v;
    if ((rc = call(c, PROC("list_nodes"), json_array(), &v)) != EX_OK) {
        return rc;
    }
    if (json) {
        print_json(v);
    } else {
        size_t i;
        json_t *s;
        json_array_foreach(v, i, s)
        {
            ctl_format_clean(stdout, "%s", str_or_q(s));
            putchar('\n');
        }
    }
    json_decref(v);
    return EX_OK;
}

/* --node '*' for the commands that ask one node a question: proc(node, ...args) of every live
 * node in id order; each answer goes to each(c, node, answer, ctx) (which takes it). A node that
 * fails is reported (its error line names the procedure) and the others still run; returns the
 * last failure's exit status, or EX_OK. */
static int on_every_node(ctl *c, const char *proc, const char *worker,
                         void (*each)(ctl *c, const char *node, json_t *answer, void *ctx),
                         void *ctx)
{
    json_t *nodes;
    int rc = call(c, PROC("list_nodes"), json_array(), &nodes);
    if (rc != EX_OK) {
        return rc;
    }
    int worst = EX_OK;
    size_t i;
    json_t *nv;
    json_array_foreach(nodes, i, nv)
    {
        const char *node = json_string_value(nv);
        json_t *v;
        if (!node) {
            continue;
        }
        int r = call(c, proc, worker ? json_pack("[s, s]", node, worker) : json_pack("[s]", node),
                     &v);
        if (r != EX_OK) {
            errline("node \"%s\" left out (the error above)", node);
            worst = r;
            continue;
        }
        each(c, node, v, ctx);
    }
    json_decref(nodes);
    return worst;
}

/* workers --node '*': "NODE WORKER" lines; --json: {node_id: [worker ids]} (into ctx). */
static void workers_each(ctl *c, const char *node, json_t *answer, void *ctx)
{
    (void)c;
    if (ctx) {
        (void)json_object_set_new(ctx, node, answer);
        return;
    }
    size_t i;
    json_t *s;
    json_array_foreach(answer, i, s)
    {
        ctl_format_clean(stdout, "%s %s", node, str_or_q(s));
        putchar('\n');
    }
    json_decref(answer);
}

static int cmd_workers(ctl *c)
{
    const char *pos[1];
    int n, rc;
    bool json = false;
    if ((rc = parse_cmd_args(c, &json, flag_json, pos, 0, &n)) != EX_OK ||
        (rc = resolve_target(c, false)) != EX_OK) {
        return rc;
    }
    if (every_node(c)) {
        json_t *map = json ? json_object() : NULL;
        rc = on_every_node(c, PROC("list_workers"), NULL, workers_each, map);
        if (map) {
            print_json(map);
            json_decref(map);
        }
        return rc;
    }
    json_t *v;
    if ((rc = call(c, PROC("list_workers"), json_pack("[s]", c->node), &v)) != EX_OK) {
        return rc;
    }
    if (json) {
        print_json(v);
    } else {
        size_t i;
        json_t *s;
        json_array_foreach(v, i, s)
        {
            ctl_format_clean(stdout, "%s", str_or_q(s));
            putchar('\n');
        }
    }
    json_decref(v);
    return EX_OK;
}

typedef struct traces_flags {
    bool json;
    bool running;
} traces_flags;

static int flag_traces(ctl *c, void *state, int argc, char **argv, int *i)
{
    traces_flags *f = state;
    (void)c;
    (void)argc;
    if (strcmp(argv[*i], "--json") == 0) {
        f->json = true;
    } else if (strcmp(argv[*i], "--running") == 0) {
        f->running = true;
    } else {
        return FLAG_UNKNOWN;
    }
    return EX_OK;
}

static int traces_of_every_node(ctl *c, const traces_flags *f);

/* The metadata of the traces ids of c->node (get_trace each; one deleted meanwhile is left out)
 * into *metas (a new array, also on failure). */
static int trace_metas(ctl *c, const json_t *ids, json_t **metas)
{
    *metas = json_array();
    size_t i;
    json_t *id;
    json_array_foreach(ids, i, id)
    {
        json_t *m;
        int rc = call(c, PROC("get_trace"), target_args_id(c, json_string_value(id)), &m);
        if (rc == EX_NOTFOUND) {
            continue; /* deleted between the two calls */
        }
        if (rc != EX_OK) {
            return rc;
        }
        json_array_append_new(*metas, m);
    }
    return EX_OK;
}

static int cmd_traces(ctl *c)
{
    const char *pos[1];
    int n, rc;
    traces_flags f = {0};
    if ((rc = parse_cmd_args(c, &f, flag_traces, pos, 0, &n)) != EX_OK ||
        (rc = resolve_target(c, true)) != EX_OK) {
        return rc;
    }
    if (every_node(c)) {
        return traces_of_every_node(c, &f);
    }
    json_t *ids;
    if ((rc = call(c, PROC("list_traces"), json_pack("[s, s, b]", c->node, c->worker, !f.running),
                   &ids)) != EX_OK) {
        return rc;
    }
    json_t *metas;
    rc = trace_metas(c, ids, &metas);
    json_decref(ids);
    if (rc == EX_OK) {
        if (f.json) {
            print_json(metas);
        } else {
            ctl_style st = table_style(c, -1);
            ctl_format_traces(stdout, &st, metas);
        }
    }
    json_decref(metas);
    return rc;
}

/* traces --node '*': every node's traces (list_traces "*"), nodes in id order; --json: the map
 * {node_id: [metadata]} (a node's error as the API gives it), else one table per node under its
 * id. */
static int traces_of_every_node(ctl *c, const traces_flags *f)
{
    json_t *map;
    int rc =
            call(c, PROC("list_traces"), json_pack("[s, s, b]", "*", c->worker, !f->running), &map);
    if (rc != EX_OK) {
        return rc;
    }
    json_t *out = json_object();
    const char **nodes = calloc(json_object_size(map) + 1, sizeof(*nodes));
    size_t n_nodes = 0;
    if (!out || !nodes) {
        errline("out of memory");
        json_decref(out);
        json_decref(map);
        free(nodes);
        return EX_FAIL;
    }
    const char *node;
    json_t *ids;
    json_object_foreach(map, node, ids)
    {
        nodes[n_nodes++] = node;
    }
    qsort(nodes, n_nodes, sizeof(*nodes), cmp_cstr);
    const char *every = c->node;
    for (size_t k = 0; rc == EX_OK && k < n_nodes; k++) {
        ids = json_object_get(map, nodes[k]);
        if (!json_is_array(ids)) { /* {"error", "args"} */
            json_object_set(out, nodes[k], ids);
            continue;
        }
        json_t *metas;
        c->node = nodes[k];
        rc = trace_metas(c, ids, &metas);
        c->node = every;
        json_object_set_new(out, nodes[k], metas);
    }
    if (rc == EX_OK && f->json) {
        print_json(out);
    } else if (rc == EX_OK) {
        ctl_style st = table_style(c, -1);
        for (size_t k = 0; k < n_nodes; k++) {
            json_t *v = json_object_get(out, nodes[k]);
            fputs(k ? "\nnode " : "node ", stdout);
            ctl_format_clean(stdout, "%s", nodes[k]);
            putchar('\n');
            if (json_is_array(v)) {
                ctl_format_traces(stdout, &st, v);
            } else {
                ctl_format_clean(stdout, "  %s: %s", str_or_q(json_object_get(v, "error")),
                                 str_or_q(json_array_get(json_object_get(v, "args"), 0)));
                putchar('\n');
            }
        }
    }
    free(nodes);
    json_decref(out);
    json_decref(map);
    return rc;
}

/* start: every trace option as a flag (mgmt/README.md "trace_options"). */
typedef struct start_flags {
    json_t *opts;
    json_t *uris; /* strings until --match is known */
    const char *match;
    bool json;
} start_flags;

static int append_list(start_flags *f, const char *key, json_t *v_take)
{
    json_t *l = json_object_get(f->opts, key);
    if (!l) {
        l = json_array();
        json_object_set_new(f->opts, key, l);
    }
    return json_array_append_new(l, v_take) == 0 ? EX_OK : EX_FAIL;
}

/* Long: one branch per option of `start`, in the order its --help lists them, each turned into
 * its trace option. */
static int flag_start(ctl *c, void *state, int argc, char **argv, int *i)
{
    start_flags *f = state;
    const char *v = NULL;
    long long n;

    static const struct {
        const char *flag, *key;
        long long min, max;
    } ints[] = {
            {"--limit", "limit", 1, INT64_MAX},
            {"--max-bytes", "max_bytes", 1, INT64_MAX},
            {"--duration", "duration", 1, INT64_MAX},
            {"--max-records", "max_records", 1, INT64_MAX},
            {"--batching-period", "batching_period", 1, INT64_MAX},
    };

    const char *a = argv[*i];
    if (strcmp(a, "--json") == 0) {
        f->json = true;
        return EX_OK;
    }
    if (strcmp(a, "--payload") == 0 || strcmp(a, "--no-payload") == 0) {
        json_object_set_new(f->opts, "trace_app_payload", json_boolean(a[2] == 'p'));
        return EX_OK;
    }
    if (strcmp(a, "--persist") == 0) {
        json_object_set_new(f->opts, "persist", json_true());
        return EX_OK;
    }
    for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++) {
        if (opt_value(argc, argv, i, ints[k].flag, &v)) {
            if (!parse_int(v, ints[k].min, ints[k].max, &n)) {
                return usage_error(c, "%s needs a positive integer", ints[k].flag);
            }
            json_object_set_new(f->opts, ints[k].key, json_integer((json_int_t)n));
            return EX_OK;
        }
    }
    if (opt_value(argc, argv, i, "--realm", &v)) {
        return v ? append_list(f, "realms", json_string(v))
                 : usage_error(c, "--realm needs a value");
    }
    if (opt_value(argc, argv, i, "--uri", &v)) {
        return v ? (json_array_append_new(f->uris, json_string(v)) == 0 ? EX_OK : EX_FAIL)
                 : usage_error(c, "--uri needs a value");
    }
    if (opt_value(argc, argv, i, "--match", &v)) {
        if (!v ||
            (strcmp(v, "exact") != 0 && strcmp(v, "prefix") != 0 && strcmp(v, "wildcard") != 0)) {
            return usage_error(c, "--match needs exact, prefix or wildcard");
        }
        f->match = v;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--type", &v)) {
        if (!v) {
            return usage_error(c, "--type needs a message type");
        }
        /* Comma-separated lists too: --type Call,Result. */
        char buf[512];
        snprintf(buf, sizeof(buf), "%s", v);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            append_list(f, "msg_types", json_string(t));
        }
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--direction", &v)) {
        if (!v) {
            return usage_error(c, "--direction needs rx, tx or both");
        }
        json_object_set_new(f->opts, "direction", json_string(v));
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--session", &v)) {
        if (!parse_int(v, 0, INT64_MAX, &n)) {
            return usage_error(c, "--session needs a session id");
        }
        return append_list(f, "session_ids", json_integer((json_int_t)n));
    }
    if (opt_value(argc, argv, i, "--authid", &v)) {
        return v ? append_list(f, "authids", json_string(v))
                 : usage_error(c, "--authid needs a value");
    }
    if (opt_value(argc, argv, i, "--authrole", &v)) {
        return v ? append_list(f, "authroles", json_string(v))
                 : usage_error(c, "--authrole needs a value");
    }
    if (opt_value(argc, argv, i, "--trace-level", &v)) {
        if (!v) {
            return usage_error(c, "--trace-level needs message or action");
        }
        json_object_set_new(f->opts, "trace_level", json_string(v));
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--options", &v)) {
        json_error_t jerr;
        json_t *o = v ? json_loads(v, 0, &jerr) : NULL;
        if (!json_is_object(o)) {
            json_decref(o);
            return usage_error(c, "--options needs a JSON object");
        }
        json_object_update_missing(f->opts, o); /* flags win over --options */
        json_decref(o);
        return EX_OK;
    }
    return FLAG_UNKNOWN;
}

static int cmd_start(ctl *c)
{
    const char *pos[1];
    int n, rc;
    start_flags f = {.opts = json_object(), .uris = json_array()};
    if (!f.opts || !f.uris) {
        json_decref(f.opts);
        json_decref(f.uris);
        return EX_FAIL;
    }
    rc = parse_cmd_args(c, &f, flag_start, pos, 1, &n);
    if (rc == EX_OK && json_array_size(f.uris) > 0) {
        json_t *list = json_array();
        size_t i;
        json_t *u;
        json_array_foreach(f.uris, i, u)
        {
            json_array_append_new(list,
                                  f.match ? json_pack("{s:O, s:s}", "uri", u, "match", f.match)
                                          : json_incref(u));
        }
        json_object_set_new(f.opts, "uris", list);
    } else if (rc == EX_OK && f.match) {
        rc = usage_error(c, "--match applies to --uri, and no --uri was given");
    }
    json_decref(f.uris);
    if (rc != EX_OK || (rc = resolve_target(c, true)) != EX_OK) {
        json_decref(f.opts);
        return rc;
    }
    /* No option flag: null options, the trace's defaults (for "flight-recorder", restarted
     * after its delete, the configured ones; an empty object would replace them). */
    json_t *opts = f.opts;
    if (json_object_size(opts) == 0) {
        json_decref(opts);
        opts = NULL;
    }
    json_t *m;
    rc = call(c, PROC("start_trace"),
              json_pack("[s, s, s?, o?]", c->node, c->worker, n ? pos[0] : NULL, opts), &m);
    if (rc != EX_OK) {
        return rc;
    }
    if (f.json || every_node(c)) { /* '*': the map {node_id: metadata-or-error} */
        print_json(m);
    } else {
        ctl_format_meta(stdout, m);
    }
    json_decref(m);
    return EX_OK;
}

/* stop / delete / show: one ID, optional --json. */
static int one_id(ctl *c, const char **id, bool *json)
{
    const char *pos[1];
    int n, rc;
    if ((rc = parse_cmd_args(c, json, flag_json, pos, 1, &n)) != EX_OK) {
        return rc;
    }
    if (n != 1) {
        return usage_error(c, "a trace ID is needed");
    }
    *id = pos[0];
    return resolve_target(c, true);
}

/* stop / show: one trace's metadata from proc, printed as a table or (--json) as JSON. */
static int meta_cmd(ctl *c, const char *proc)
{
    const char *id = NULL;
    bool json = false;
    int rc = one_id(c, &id, &json);
    json_t *m;
    if (rc != EX_OK || (rc = call(c, proc, target_args_id(c, id), &m)) != EX_OK) {
        return rc;
    }
    if (json || every_node(c)) { /* '*': the map {node_id: metadata-or-error} */
        print_json(m);
    } else {
        ctl_format_meta(stdout, m);
    }
    json_decref(m);
    return EX_OK;
}

static int cmd_stop(ctl *c)
{
    return meta_cmd(c, PROC("stop_trace"));
}

static int cmd_delete(ctl *c)
{
    const char *id = NULL;
    bool json = false;
    int rc = one_id(c, &id, &json);
    json_t *m;
    if (rc != EX_OK || (rc = call(c, PROC("delete_trace"), target_args_id(c, id), &m)) != EX_OK) {
        return rc;
    }
    if (every_node(c)) { /* {node_id: null-or-error} */
        print_json(m);
    } else {
        printf("deleted %s\n", id);
    }
    json_decref(m);
    return EX_OK;
}

static int cmd_show(ctl *c)
{
    return meta_cmd(c, PROC("get_trace"));
}

/* Arguments of one get_trace_data call for a page of at most limit records. */
typedef json_t *(*data_args_fn)(const ctl *c, const void *ctx, long long limit);

/* Calls get_trace_data with args_of(c, ctx, limit) and sets *answer to the first element of its
 * result (a new reference). While the router answers wamp.error.payload_size_exceeded (a page
 * of limit records would exceed its message size limit) the page is asked again, half as long. */
static int data_call(ctl *c, data_args_fn args_of, const void *ctx, long long limit,
                     json_t **answer)
{
    *answer = NULL;
    for (;;) {
        json_t *args = args_of(c, ctx, limit);
        ctl_error e;
        json_t *result = NULL;
        if (!args) {
            errline("out of memory");
            return EX_FAIL;
        }
        if (ctl_client_call(c->cl, PROC("get_trace_data"), args, NULL, &result, &e)) {
            json_t *v = json_array_get(result, 0);
            *answer = v ? json_incref(v) : json_null();
            json_decref(result);
            return EX_OK;
        }
        if (e.kind == CTL_E_WAMP && strcmp(e.uri, "wamp.error.payload_size_exceeded") == 0 &&
            limit > 1) {
            limit /= 2;
            continue;
        }
        return e.kind == CTL_E_INTERRUPTED && c->interrupt_is_end
                       ? EX_INTERRUPTED_END
                       : fail_call(c, PROC("get_trace_data"), &e);
    }
}

typedef struct page_req {
    const char *id;
    long long from, to;
} page_req;

static json_t *page_args(const ctl *c, const void *ctx, long long limit)
{
    const page_req *r = ctx;
    return json_pack("[s, s, s, I, o, I]", c->node, c->worker, r->id, (json_int_t)r->from,
                     r->to < 0 ? json_null() : json_integer((json_int_t)r->to), (json_int_t)limit);
}

/* One get_trace_data page: records with from <= seq <= to (to < 0: no bound), at most limit
 * (fewer when the router's message size limit needs it: data_call()). */
static int page(ctl *c, const char *id, long long from, long long to, long long limit,
                json_t **records)
{
    page_req r = {.id = id, .from = from, .to = to};
    int rc = data_call(c, page_args, &r, limit, records);
    if (rc == EX_OK && !json_is_array(*records)) {
        json_decref(*records);
        *records = NULL;
        errline("get_trace_data: the router answered something else than a list");
        return EX_FAIL;
    }
    return rc;
}

typedef struct merged_req {
    const char *id;
    const json_t *cursor;
    const json_t *to;
} merged_req;

static json_t *merged_args(const ctl *c, const void *ctx, long long limit)
{
    const merged_req *r = ctx;
    return json_pack("[s, s, s, O, O, I]", "*", c->worker, r->id, r->cursor, r->to,
                     (json_int_t)limit);
}

/* --node '*': one merged page of every node's records from *cursor (an integer or the map
 * {node_id: seq} of the previous page's "next", replaced by this page's) up to to ({node_id:
 * last seq}: merged_range()), at most limit (fewer when the router's message size limit needs
 * it: data_call()). A node's error is reported once on stderr (reported: the nodes already
 * reported, a JSON object). */
static int merged_page(ctl *c, const char *id, json_t **cursor, const json_t *to, long long limit,
                       json_t *reported, json_t **records)
{
    *records = NULL;
    merged_req r = {.id = id, .cursor = *cursor, .to = to};
    json_t *v = NULL;
    int rc = data_call(c, merged_args, &r, limit, &v);
    if (rc != EX_OK) {
        return rc;
    }
    json_t *recs = json_object_get(v, "records");
    json_t *next = json_object_get(v, "next");
    if (!json_is_array(recs) || !json_is_object(next)) {
        json_decref(v);
        errline("get_trace_data: the router answered no merged page");
        return EX_FAIL;
    }
    const char *node;
    json_t *err;
    json_object_foreach(json_object_get(v, "errors"), node, err)
    {
        if (!json_object_get(reported, node)) {
            errline("node %s: %s: %s", node, str_or_q(json_object_get(err, "error")),
                    str_or_q(json_array_get(json_object_get(err, "args"), 0)));
            json_object_set_new(reported, node, json_true());
        }
    }
    json_decref(*cursor);
    *cursor = json_incref(next);
    *records = json_incref(recs);
    json_decref(v);
    return EX_OK;
}

/* What a merged reading reads, from meta (get_trace "*": {node_id: metadata or error}): of each
 * node the seqs its trace held then. *to (the merged pages' to_seq) maps each node that held
 * any to its last seq, and *first (unless NULL) to its first_seq; nodes that held none or
 * answered an error are in neither. Returns the seqs held in all (new objects in *to, *first). */
static long long merged_range(const json_t *meta, json_t **to, json_t **first)
{
    long long total = 0;
    *to = json_object();
    if (first) {
        *first = json_object();
    }
    const char *node;
    json_t *m;
    json_object_foreach((json_t *)meta, node, m)
    {
        json_t *f = json_object_get(m, "first_seq");
        json_t *n = json_object_get(m, "next_seq");
        long long held = seq_of(n) - seq_of(f);
        if (json_is_integer(f) && json_is_integer(n) && held > 0) { /* (not an error) */
            total = total < CTL_SEQ_MAX ? total + held : total;     /* stays in range */
            json_object_set_new(*to, node, json_integer(seq_of(n) - 1));
            if (first) {
                json_object_set(*first, node, f);
            }
        }
    }
    return total;
}

/* data / tail: client-side record filters. A record must match every kind given, and one of
 * the values of each kind: --type (msg_type, or an action record's action; case-insensitive,
 * comma lists too), --session (session_id, or the originator's), --uri (exact, or a prefix when
 * it ends in '*'), --dir (rx or tx; action records have none). The values are borrowed from
 * argv. */
#define FILTER_MAX 16

typedef struct rec_filter {
    const char *types[FILTER_MAX];
    long long sessions[FILTER_MAX];
    const char *uris[FILTER_MAX];
    const char *dir;
    int ntypes, nsessions, nuris;
} rec_filter;

static int flag_filter(ctl *c, rec_filter *f, int argc, char **argv, int *i)
{
    const char *v;
    long long n;
    if (opt_value(argc, argv, i, "--type", &v)) {
        if (!v || !*v || f->ntypes == FILTER_MAX) {
            return usage_error(c, "--type needs a message type (at most %d)", FILTER_MAX);
        }
        f->types[f->ntypes++] = v;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--session", &v)) {
        if (!parse_int(v, 0, INT64_MAX, &n) || f->nsessions == FILTER_MAX) {
            return usage_error(c, "--session needs a session id (at most %d)", FILTER_MAX);
        }
        f->sessions[f->nsessions++] = n;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--uri", &v)) {
        if (!v || !*v || f->nuris == FILTER_MAX) {
            return usage_error(c, "--uri needs a URI (at most %d)", FILTER_MAX);
        }
        f->uris[f->nuris++] = v;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--dir", &v)) {
        if (!v || (strcmp(v, "rx") != 0 && strcmp(v, "tx") != 0)) {
            return usage_error(c, "--dir needs rx or tx");
        }
        f->dir = v;
        return EX_OK;
    }
    return FLAG_UNKNOWN;
}

/* word in the comma-separated list, case-insensitively. */
static bool list_has(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncasecmp(p, word, n) == 0) {
            return true;
        }
        p += len + (p[len] == ',');
    }
    return false;
}

/* Whether rec passes the filters. A gap item (the API's, or one this client adds for what a
 * trace dropped before it read it) always does: it stands for records that may have matched. */
static bool filter_match(const rec_filter *f, const json_t *rec)
{
    if (json_is_string(json_object_get(rec, "kind"))) {
        return true;
    }
    bool action = ctl_format_is_action(rec);
    if (f->ntypes) {
        const char *t = json_string_value(json_object_get(rec, action ? "action" : "msg_type"));
        bool hit = false;
        for (int k = 0; t && k < f->ntypes && !hit; k++) {
            hit = list_has(f->types[k], t);
        }
        if (!hit) {
            return false;
        }
    }
    if (f->nsessions) {
        json_t *sid = action ? json_object_get(json_object_get(rec, "originator"), "session_id")
                             : json_object_get(rec, "session_id");
        bool hit = false;
        for (int k = 0; json_is_integer(sid) && k < f->nsessions && !hit; k++) {
            hit = (long long)json_integer_value(sid) == f->sessions[k];
        }
        if (!hit) {
            return false;
        }
    }
    if (f->nuris) {
        const char *u = json_string_value(json_object_get(rec, "uri"));
        bool hit = false;
        for (int k = 0; u && k < f->nuris && !hit; k++) {
            size_t len = strlen(f->uris[k]);
            hit = f->uris[k][len - 1] == '*' ? strncmp(u, f->uris[k], len - 1) == 0
                                             : strcmp(u, f->uris[k]) == 0;
        }
        if (!hit) {
            return false;
        }
    }
    if (f->dir) {
        const char *d = json_string_value(json_object_get(rec, "direction"));
        return d && strcmp(d, f->dir) == 0;
    }
    return true;
}

static bool filter_active(const rec_filter *f)
{
    return f->ntypes || f->nsessions || f->nuris || f->dir;
}

typedef struct data_flags {
    long long from, to, limit;
    int width;
    bool json;
    rec_filter filt;
} data_flags;

static int flag_data(ctl *c, void *state, int argc, char **argv, int *i)
{
    data_flags *f = state;
    const char *v;
    int rc = flag_filter(c, &f->filt, argc, argv, i);
    if (rc != FLAG_UNKNOWN) {
        return rc;
    }
    if (strcmp(argv[*i], "--json") == 0) {
        f->json = true;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--from", &v)) {
        return parse_int(v, 0, INT64_MAX, &f->from) ? EX_OK
                                                    : usage_error(c, "--from needs a seq >= 0");
    }
    if (opt_value(argc, argv, i, "--to", &v)) {
        return parse_int(v, 0, INT64_MAX, &f->to) ? EX_OK : usage_error(c, "--to needs a seq >= 0");
    }
    if (opt_value(argc, argv, i, "--limit", &v)) {
        return parse_int(v, 1, INT64_MAX, &f->limit) ? EX_OK
                                                     : usage_error(c, "--limit needs N >= 1");
    }
    if (opt_value(argc, argv, i, "--width", &v)) {
        long long w;
        if (!parse_int(v, 0, 100000, &w)) {
            return usage_error(c, "--width needs N >= 0");
        }
        f->width = (int)w;
        return EX_OK;
    }
    return FLAG_UNKNOWN;
}

/* A gap item for the seqs first..last that a trace dropped before this client read them (a page
 * read after it began with a later seq than the one asked for), in the shape of the API's gap
 * items (mgmt/README.md "Gap items") with the reason "dropped". NULL without memory. */
static json_t *dropped_item(long long first, long long last)
{
    return json_pack("{s:I, s:s, s:s, s:I, s:I, s:s}", "seq", (json_int_t)last, "kind", "gap",
                     "msg_type", "Gap", "from_seq", (json_int_t)first, "to_seq", (json_int_t)last,
                     "reason", "dropped");
}

/* Reading a trace item by item in seq order, *next the seq expected: the gap item for what the
 * trace dropped before item r when r starts past it (r's first seq: a record's own, a gap item's
 * from_seq), else NULL; *next then goes past r. */
static json_t *gap_before(const json_t *r, long long *next)
{
    const char *key = json_is_string(json_object_get(r, "kind")) ? "from_seq" : "seq";
    long long first = seq_of(json_object_get(r, key));
    json_t *gap = first > *next ? dropped_item(*next, first - 1) : NULL;
    *next = seq_of(json_object_get(r, "seq")) + 1;
    return gap;
}

/* gap_before() for the merged reading (--node '*'), record by record in the pages' order: expect
 * maps each node to the seq next expected of it (absent: nothing of it read yet, and nothing
 * before its first item reported). The gap item names its node. A node's items come in its seq
 * order, so a jump between two of them is what the node's trace dropped before a page read it. */
static json_t *node_gap_before(json_t *expect, const json_t *r)
{
    const char *node = json_string_value(json_object_get(r, "node_id"));
    if (!node) {
        return NULL;
    }
    json_t *e = json_object_get(expect, node);
    long long next = e ? (long long)json_integer_value(e) : LLONG_MAX;
    json_t *gap = gap_before(r, &next);
    json_object_set_new(expect, node, json_integer(next));
    if (gap) {
        json_object_set_new(gap, "node_id", json_string(node));
    }
    return gap;
}

/* Reading pages into all, left items at most: the gap item (consumed; NULL: none) of what went
 * missing before record r, when it counts (report), then r if it passes the filters. */
static void take_item(json_t *all, json_t *gap, bool report, const json_t *r,
                      const rec_filter *filt, long long *left)
{
    if (gap && report && *left > 0) {
        json_array_append(all, gap);
        (*left)--;
    }
    json_decref(gap);
    if (*left > 0 && filter_match(filt, r)) {
        json_array_append(all, (json_t *)(uintptr_t)r);
        (*left)--;
    }
}

/* data's and wire's output: the records as a table fitting the terminal (an action trace's its
 * own columns; merged records their node first) or, with --json, as a JSON list. */
static void print_records(ctl *c, const data_flags *f, const json_t *all, bool merged)
{
    if (f->json) {
        print_json(all);
        return;
    }
    ctl_style st = table_style(c, f->width);
    ctl_format_fit_seq(&st, all);
    if (merged) {
        printf("%-12s ", "NODE");
    }
    if (ctl_format_is_action(json_array_get(all, 0))) {
        ctl_format_actions_header(stdout, &st);
    } else {
        ctl_format_records_header(stdout, &st);
    }
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r)
    {
        if (merged) {
            ctl_format_clean(stdout, "%-12s ", str_or_q(json_object_get(r, "node_id")));
        }
        ctl_format_record_row(stdout, &st, r);
    }
}

/* wire: the wire capture's messages (get_wire_data) from --from on, paged and printed as data
 * prints a trace's records; what the ring let go between two pages, a gap item "dropped". */
static int cmd_wire(ctl *c)
{
    int n, rc;
    data_flags f = {.from = 0, .to = -1, .limit = 100, .width = -1};
    if ((rc = parse_cmd_args(c, &f, flag_data, NULL, 0, &n)) != EX_OK) {
        return rc;
    }
    if (f.to >= 0) {
        return usage_error(c, "--to does not apply to wire");
    }
    if ((rc = resolve_target(c, true)) != EX_OK) {
        return rc;
    }
    if (every_node(c)) {
        return usage_error(c, "--node '*' does not apply to wire: name one node");
    }
    json_t *all = json_array();
    long long from = f.from, left = f.limit;
    bool paged = false, filtering = filter_active(&f.filt);
    while (left > 0) {
        long long want = filtering ? 1000 : left < 10000 ? left : 10000;
        json_t *res;
        rc = call(c, PROC("get_wire_data"),
                  json_pack("[s, s, I, I]", c->node, c->worker, (json_int_t)from, (json_int_t)want),
                  &res);
        if (rc != EX_OK) {
            break;
        }
        json_t *recs = json_object_get(res, "records");
        if (!json_is_array(recs) || json_array_size(recs) == 0) {
            json_decref(res);
            break;
        }
        size_t k;
        json_t *r;
        json_array_foreach(recs, k, r)
        {
            take_item(all, gap_before(r, &from), paged, r, &f.filt, &left);
            paged = true;
        }
        json_decref(res);
    }
    if (rc == EX_OK) {
        print_records(c, &f, all, false);
    }
    json_decref(all);
    return rc;
}

/* Long: a command driver: flags, one node or every node, paging loop, output format, each a few
 * lines in sequence. */
static int cmd_data(ctl *c)
{
    const char *pos[1];
    int n, rc;
    data_flags f = {.from = 0, .to = -1, .limit = 100, .width = -1};
    if ((rc = parse_cmd_args(c, &f, flag_data, pos, 1, &n)) != EX_OK) {
        return rc;
    }
    if (n != 1) {
        return usage_error(c, "a trace ID is needed");
    }
    if ((rc = resolve_target(c, true)) != EX_OK) {
        return rc;
    }
    /* Pages of at most 10000 (the API's bound) until limit records or an empty page; with
     * filters, pages of 1000 until limit records matched. */
    bool merged = every_node(c);
    if (merged && f.to >= 0) {
        return usage_error(c, "--to does not apply with --node '*' (pages go by each node's seq)");
    }
    /* --node '*': of each node, what its trace held when data began (a running trace is read
     * up to there, so that no node's records wait for another's clock). */
    json_t *to = NULL;
    if (merged) {
        json_t *meta;
        if ((rc = call(c, PROC("get_trace"), target_args_id(c, pos[0]), &meta)) != EX_OK) {
            return rc;
        }
        (void)merged_range(meta, &to, NULL);
        json_decref(meta);
    }
    bool filtering = filter_active(&f.filt);
    json_t *all = json_array();
    long long from = f.from, left = f.limit;
    json_t *cursor = merged ? json_integer(f.from) : NULL;
    json_t *reported = merged ? json_object() : NULL;
    json_t *expect = merged ? json_object() : NULL; /* node_gap_before() */
    bool paged = false;
    while (left > 0) {
        json_t *recs;
        long long want = filtering ? 1000 : left < 10000 ? left : 10000;
        rc = merged ? merged_page(c, pos[0], &cursor, to, want, reported, &recs)
                    : page(c, pos[0], from, f.to, want, &recs);
        if (rc != EX_OK) {
            break;
        }
        size_t got = json_array_size(recs);
        if (got == 0) {
            json_decref(recs);
            break;
        }
        size_t k;
        json_t *r;
        long long asked = from;
        json_array_foreach(recs, k, r)
        {
            /* Once something (of that node) was read: what the trace dropped meanwhile (a busy
             * trace moves on while it is read), a gap item where it was, whatever the filters. */
            json_t *gap = merged ? node_gap_before(expect, r) : gap_before(r, &from);
            take_item(all, gap, merged || paged, r, &f.filt, &left);
            paged = true;
        }
        json_decref(recs);
        if (!merged && from <= asked) {
            break; /* a page that does not move on (only from a router that is not ours) */
        }
    }
    json_decref(cursor);
    json_decref(to);
    json_decref(reported);
    json_decref(expect);
    if (rc != EX_OK) {
        json_decref(all);
        return rc;
    }
    print_records(c, &f, all, merged);
    json_decref(all);
    return EX_OK;
}

/* tail: follows on_trace_data; gaps (a late start, records published before we subscribed,
 * lost events) are filled with get_trace_data. Ends on Ctrl-C or when the trace stops. */
typedef struct tail_flags {
    long long lines;
    int width;
    bool json;
    rec_filter filt;
    ctl_style style;
} tail_flags;

static int flag_tail(ctl *c, void *state, int argc, char **argv, int *i)
{
    tail_flags *f = state;
    const char *v;
    int rc = flag_filter(c, &f->filt, argc, argv, i);
    if (rc != FLAG_UNKNOWN) {
        return rc;
    }
    if (strcmp(argv[*i], "--json") == 0) {
        f->json = true;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "-n", &v) || opt_value(argc, argv, i, "--lines", &v)) {
        return parse_int(v, 0, INT64_MAX, &f->lines) ? EX_OK : usage_error(c, "-n needs N >= 0");
    }
    if (opt_value(argc, argv, i, "--width", &v)) {
        long long w;
        if (!parse_int(v, 0, 100000, &w)) {
            return usage_error(c, "--width needs N >= 0");
        }
        f->width = (int)w;
        return EX_OK;
    }
    return FLAG_UNKNOWN;
}

static void tail_print(const tail_flags *f, const json_t *rec)
{
    if (!filter_match(&f->filt, rec)) {
        return;
    }
    if (f->json) {
        ctl_export_jsonl(stdout, rec);
    } else {
        const char *node = json_string_value(json_object_get(rec, "node_id"));
        if (node) {
            ctl_format_clean(stdout, "%-12s ", node);
        }
        ctl_format_record_row(stdout, &f->style, rec);
    }
}

/* Prints records with seq >= *next from recs (node: the node they are from, added to each as
 * node_id, or NULL); advances *next. */
static void tail_records(const tail_flags *f, const json_t *recs, const char *node, long long *next)
{
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
    {
        long long seq = seq_of(json_object_get(r, "seq"));
        if (seq < *next) {
            continue;
        }
        /* Seqs the trace dropped before they could be read (a fill that came too late): a gap
         * item where they were. */
        json_t *gap = gap_before(r, next);
        if (gap) {
            if (node) {
                json_object_set_new(gap, "node_id", json_string(node));
            }
            tail_print(f, gap);
            json_decref(gap);
        }
        if (node) {
            json_object_set_new(r, "node_id", json_string(node));
        }
        tail_print(f, r);
    }
    fflush(stdout);
}

/* Prints every held record from *next up to to (< 0: the newest); node: added to each record as
 * node_id (tail --node '*'), or NULL. */
static int tail_fill(ctl *c, const char *id, const tail_flags *f, const char *node, long long *next,
                     long long to)
{
    for (;;) {
        if (to >= 0 && *next > to) {
            return EX_OK;
        }
        json_t *recs;
        int rc = page(c, id, *next, to, 1000, &recs);
        if (rc != EX_OK) {
            return rc;
        }
        size_t got = json_array_size(recs);
        /* (Records the trace dropped before this page: a gap item where they were.) */
        tail_records(f, recs, node, next);
        json_decref(recs);
        if (got == 0) {
            return EX_OK;
        }
    }
}

static int tail_run(ctl *c);

/* Ctrl-C is tail's normal end, whatever it was doing: exit status 0, nothing on stderr. */
static int cmd_tail(ctl *c)
{
    c->interrupt_is_end = true;
    int rc = tail_run(c);
    return rc == EX_INTERRUPTED_END ? EX_OK : rc;
}

/* tail_fill() of node's records (page() reads c->node); with node_col each names its node. */
static int tail_fill_node(ctl *c, const char *id, const tail_flags *f, const char *node,
                          bool node_col, long long *next, long long to)
{
    const char *was = c->node;
    c->node = node;
    int rc = tail_fill(c, id, f, node_col ? node : NULL, next, to);
    c->node = was;
    return rc;
}

/* Adds node's cursor from its get_trace metadata m: next[node] = the first seq to print (the
 * last f->lines held), running[node] = true while its trace runs. */
static void tail_cursor(const json_t *m, const tail_flags *f, const char *node, json_t *next,
                        json_t *running)
{
    long long first = seq_of(json_object_get(m, "first_seq"));
    long long n = seq_of(json_object_get(m, "next_seq")) - f->lines;
    json_object_set_new(next, node, json_integer(n < first ? first : n));
    const char *status = json_string_value(json_object_get(m, "status"));
    if (status && strcmp(status, "running") == 0) {
        json_object_set_new(running, node, json_true());
    }
}

/* Follows trace id on the nodes of next ({node: first seq to print}): their records up to now,
 * then their live records as they come (on_trace_data reaches this node for every node's trace;
 * another node's, or another trace's, are skipped), a node's gap filled from that node; ends
 * when the trace stopped on every node of running ({node: true}), or at Ctrl-C (EX_OK). With
 * node_col each record names its node. sub_data/sub_stop: the caller's subscriptions, made
 * before it read where the trace stood.
 * Long: the backlog, then the live loop with its gap filling and stops, sharing the cursors. */
static int tail_follow(ctl *c, const char *id, const tail_flags *f, uint64_t sub_data,
                       uint64_t sub_stop, json_t *next, json_t *running, bool node_col)
{
    int rc = EX_OK;
    const char *node;
    json_t *v;
    json_object_foreach(next, node, v)
    {
        long long seq = (long long)json_integer_value(v);
        if ((rc = tail_fill_node(c, id, f, node, node_col, &seq, -1)) != EX_OK) {
            return rc;
        }
        json_object_set_new(next, node, json_integer(seq));
    }
    while (rc == EX_OK && json_object_size(running) > 0) {
        uint64_t sub;
        json_t *args;
        ctl_error e;
        if (!ctl_client_next_event(c->cl, -1, &sub, &args, &e)) {
            return e.kind == CTL_E_INTERRUPTED ? EX_OK : fail(&e);
        }
        const char *from = json_string_value(json_array_get(args, 0));
        const char *tid = json_string_value(json_array_get(args, 2));
        json_t *cur = from ? json_object_get(next, from) : NULL;
        if (!tid || strcmp(tid, id) != 0 || !cur) {
            json_decref(args);
            continue;
        }
        long long seq = (long long)json_integer_value(cur);
        if (sub == sub_data) {
            json_t *recs = json_array_get(args, 4);
            long long seq0 = seq_of(json_object_get(json_array_get(recs, 0), "seq"));
            if (json_array_size(recs) > 0 && seq0 > seq) {
                rc = tail_fill_node(c, id, f, from, node_col, &seq, seq0 - 1);
            }
            tail_records(f, recs, node_col ? from : NULL, &seq);
        } else if (sub == sub_stop) {
            rc = tail_fill_node(c, id, f, from, node_col, &seq, -1);
            json_object_del(running, from);
        }
        json_object_set_new(next, from, json_integer(seq));
        json_decref(args);
    }
    return rc;
}

/* tail ID: the last f.lines records of trace id, then its live records until it stops. With
 * --node '*' (get_trace "*" names the nodes that hold it): every node's, each naming its node,
 * until the trace stopped on every node.
 * Long: a command driver: flags, subscriptions, where the trace stands on each node, the
 * header, then tail_follow(). */
static int tail_run(ctl *c)
{
    const char *pos[1];
    int n, rc;
    tail_flags f = {.lines = 10, .width = -1};
    if ((rc = parse_cmd_args(c, &f, flag_tail, pos, 1, &n)) != EX_OK) {
        return rc;
    }
    if (n != 1) {
        return usage_error(c, "a trace ID is needed");
    }
    const char *id = pos[0];
    ctl_error e;
    uint64_t sub_data, sub_stop;
    if ((rc = resolve_target(c, true)) != EX_OK) {
        return rc;
    }
    if (!ctl_client_subscribe(c->cl, TOPIC("on_trace_data"), &sub_data, &e) ||
        !ctl_client_subscribe(c->cl, TOPIC("on_trace_stopped"), &sub_stop, &e)) {
        return e.kind == CTL_E_INTERRUPTED ? EX_OK : fail(&e);
    }
    json_t *m;
    if ((rc = call(c, PROC("get_trace"), target_args_id(c, id), &m)) != EX_OK) {
        return rc;
    }
    bool every = every_node(c);
    bool actions = false;
    json_t *next = json_object(), *running = json_object();
    if (every) { /* {node_id: metadata-or-error} */
        const char *node;
        json_t *nm;
        json_object_foreach(m, node, nm)
        {
            if (json_object_get(nm, "error")) {
                errline("node %s: %s: %s", node, str_or_q(json_object_get(nm, "error")),
                        str_or_q(json_array_get(json_object_get(nm, "args"), 0)));
            } else {
                tail_cursor(nm, &f, node, next, running);
            }
        }
    } else {
        const char *level =
                json_string_value(json_object_get(json_object_get(m, "options"), "trace_level"));
        actions = level && strcmp(level, "action") == 0;
        tail_cursor(m, &f, c->node, next, running);
    }
    json_decref(m);
    f.style = table_style(c, f.width);
    /* SEQ as wide as the seqs where the trace stands, ten times over (it goes on growing). */
    const char *nn;
    json_t *nv;
    json_object_foreach(next, nn, nv)
    {
        long long s = (long long)json_integer_value(nv);
        ctl_format_fit_seq_to(&f.style, s < LLONG_MAX / 10 ? s * 10 : s);
    }
    if (!f.json) {
        if (every) {
            printf("%-12s ", "NODE");
        }
        if (actions) {
            ctl_format_actions_header(stdout, &f.style);
        } else {
            ctl_format_records_header(stdout, &f.style);
        }
    }
    rc = tail_follow(c, id, &f, sub_data, sub_stop, next, running, every);
    bool all_stopped = json_object_size(running) == 0;
    json_decref(next);
    json_decref(running);
    if (rc == EX_OK && all_stopped) {
        fprintf(stderr, "wampscope-ctl: trace %s stopped%s\n", id, every ? " on every node" : "");
    }
    return rc;
}

/* export: pages through the whole trace into a file. */
typedef struct export_flags {
    const char *format;
    const char *out;
    long long page;
} export_flags;

static int flag_export(ctl *c, void *state, int argc, char **argv, int *i)
{
    export_flags *f = state;
    const char *v;
    if (opt_value(argc, argv, i, "--format", &v) || opt_value(argc, argv, i, "-f", &v)) {
        if (!v || (strcmp(v, "jsonl") != 0 && strcmp(v, "chrome") != 0)) {
            return usage_error(c, "--format needs jsonl or chrome");
        }
        f->format = v;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "-o", &v) || opt_value(argc, argv, i, "--output", &v)) {
        if (!v) {
            return usage_error(c, "-o needs a file name (- for stdout)");
        }
        f->out = v;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--page", &v)) {
        return parse_int(v, 1, 10000, &f->page) ? EX_OK : usage_error(c, "--page needs 1..10000");
    }
    return FLAG_UNKNOWN;
}

static void progress(long long done, long long total)
{
    int width = 30;
    int pct = total > 0 ? (int)(done * 100 / total) : 100;
    pct = pct > 100 ? 100 : pct;
    int fill = pct * width / 100;
    fprintf(stderr, "\r[%.*s%*s] %3d%% %lld/%lld records", fill, "##############################",
            width - fill, "", pct, done, total);
    fflush(stderr);
}

/* An export under way. One node: the seqs the trace held when it began, [from, to], and no
 * further (a busy trace would be chased for ever); what the trace drops before a page reads it
 * (a running flight recorder moves on while it is read) is missing from the copy, and each such
 * range is said where it would be (a gap item in the JSON Lines) and counted (lost, gaps). --node
 * '*': the merged pages from cursor, of each node the seqs its trace held when the export
 * began, from expect (node_gap_before()) up to to_map ({node_id: last seq}: merged_range()),
 * with the same gap items; a node that answers an error is left out from then on (said on
 * stderr). */
typedef struct export_run {
    ctl *c;
    const char *id;
    long long page;
    bool merged;
    FILE *out;
    ctl_chrome *ch; /* the Chrome export; NULL: JSON Lines */
    json_t *cursor, *reported, *expect, *to_map;
    long long from, to, total, done, lost, gaps;
} export_run;

/* Releases what the export run holds (the JSON it read with). */
static void export_run_fini(export_run *x)
{
    json_decref(x->cursor);
    json_decref(x->reported);
    json_decref(x->expect);
    json_decref(x->to_map);
}

/* export: a gap item (consumed; NULL: none) counted, and written unless the export is Chrome's. */
static bool export_gap(export_run *x, json_t *gap)
{
    bool ok = true;
    if (gap) {
        long long n = seq_of(json_object_get(gap, "to_seq")) -
                      seq_of(json_object_get(gap, "from_seq")) + 1;
        x->lost = x->lost < CTL_SEQ_MAX ? x->lost + n : x->lost; /* stays in range */
        x->gaps++;
        ok = x->ch || ctl_export_jsonl(x->out, gap);
    }
    json_decref(gap);
    return ok;
}

/* Whether a merged export has read every node's range: each node's cursor past its last seq,
 * but a node's that answered an error. */
static bool merged_done(const export_run *x)
{
    const char *node;
    json_t *last;
    json_object_foreach(x->to_map, node, last)
    {
        json_t *next = json_object_get(x->cursor, node);
        if (!json_object_get(x->reported, node) &&
            (!json_is_integer(next) || json_integer_value(next) <= json_integer_value(last))) {
            return false;
        }
    }
    return true;
}

/* The last seqs of each node's range that its trace dropped before they were read (merged). */
static bool merged_end_gaps(export_run *x)
{
    bool ok = true;
    const char *node;
    json_t *last;
    json_object_foreach(x->to_map, node, last)
    {
        long long from = (long long)json_integer_value(json_object_get(x->expect, node));
        long long to = (long long)json_integer_value(last);
        if (ok && !json_object_get(x->reported, node) && from <= to) {
            json_t *gap = dropped_item(from, to);
            json_object_set_new(gap, "node_id", json_string(node));
            ok = export_gap(x, gap);
        }
    }
    return ok;
}

/* Writes one item of a page (counted in done), after a gap item for the seqs dropped before it
 * (a merged page holds no item past its node's range: to_seq). */
static bool export_item(export_run *x, const json_t *r)
{
    if (!export_gap(x, x->merged ? node_gap_before(x->expect, r) : gap_before(r, &x->from))) {
        return false;
    }
    x->done++;
    return x->ch ? ctl_chrome_add(x->ch, r) : ctl_export_jsonl(x->out, r);
}

/* Pages through the trace into x->out, a progress bar on a terminal. EX_OK, or a failed call's
 * status; *ok false when writing failed. */
static int export_pages(export_run *x, bool *ok)
{
    bool bar = isatty(STDERR_FILENO);
    int rc = EX_OK;
    while (*ok && (x->merged || x->from <= x->to)) {
        json_t *recs;
        rc = x->merged
                     ? merged_page(x->c, x->id, &x->cursor, x->to_map, x->page, x->reported, &recs)
                     : page(x->c, x->id, x->from, x->to, x->page, &recs);
        if (rc != EX_OK) {
            *ok = false;
            break;
        }
        size_t got = json_array_size(recs);
        size_t i;
        json_t *r;
        json_array_foreach(recs, i, r)
        {
            *ok = *ok && export_item(x, r);
        }
        json_decref(recs);
        if (bar) {
            progress(x->done, x->total > x->done ? x->total : x->done);
        }
        if (got == 0 || (x->merged && merged_done(x))) {
            break;
        }
    }
    /* The last records the trace held at the start, dropped before they were read. */
    if (*ok && x->merged) {
        *ok = merged_end_gaps(x);
    } else if (*ok && x->from <= x->to) {
        *ok = export_gap(x, dropped_item(x->from, x->to));
    }
    if (bar) {
        fputc('\n', stderr);
    }
    return rc;
}

/* The seqs the metadata m says a trace holds (next_seq - first_seq). */
static long long held_seqs(const json_t *m)
{
    return seq_of(json_object_get(m, "next_seq")) - seq_of(json_object_get(m, "first_seq"));
}

/* Long: the arguments, the output file and its cleanup on every failure, in one place (the
 * paging is export_pages()). */
static int cmd_export(ctl *c)
{
    const char *pos[1];
    int n, rc;
    export_flags f = {.page = 1000};
    if ((rc = parse_cmd_args(c, &f, flag_export, pos, 1, &n)) != EX_OK) {
        return rc;
    }
    if (n != 1) {
        return usage_error(c, "a trace ID is needed");
    }
    if (!f.format || !f.out) {
        return usage_error(c, "--format jsonl|chrome and -o FILE are needed");
    }
    const char *id = pos[0];
    json_t *meta;
    if ((rc = resolve_target(c, true)) != EX_OK ||
        (rc = call(c, PROC("get_trace"), target_args_id(c, id), &meta)) != EX_OK) {
        return rc;
    }
    /* --node '*': get_trace answered {node_id: metadata-or-error}; the records of every node,
     * merged in time order, each naming its node. */
    export_run x = {.c = c, .id = id, .page = f.page, .merged = every_node(c), .to = -1};
    if (x.merged) {
        x.cursor = json_integer(0);
        x.reported = json_object();
        x.total = merged_range(meta, &x.to_map, &x.expect);
    } else {
        x.total = held_seqs(meta);
        x.from = seq_of(json_object_get(meta, "first_seq"));
        x.to = x.from + x.total - 1;
    }
    bool to_stdout = strcmp(f.out, "-") == 0;
    x.out = to_stdout ? stdout : fopen(f.out, "w");
    if (!x.out) {
        errline("cannot write %s: %s", f.out, strerror(errno));
        json_decref(meta);
        export_run_fini(&x);
        return EX_FAIL;
    }
    bool chrome = strcmp(f.format, "chrome") == 0;
    x.ch = chrome ? ctl_chrome_new(x.out) : NULL;
    bool ok = !chrome || x.ch;
    rc = export_pages(&x, &ok);
    if (ok && chrome) {
        json_t *other =
                json_pack("{s:s, s:O, s:I, s:I}", "exported_by", "wampscope-ctl", "trace", meta,
                          "records", (json_int_t)x.done, "records_missing", (json_int_t)x.lost);
        ok = other && ctl_chrome_finish(x.ch, other);
        json_decref(other);
    }
    ctl_chrome_free(x.ch);
    json_decref(meta);
    export_run_fini(&x);
    if (fflush(x.out) != 0 || ferror(x.out)) {
        ok = false;
    }
    if (!to_stdout && fclose(x.out) != 0) {
        ok = false;
    }
    if (!ok) {
        if (rc == EX_OK) {
            errline("cannot write %s", f.out);
            rc = EX_FAIL;
        }
        if (!to_stdout) {
            unlink(f.out);
        }
        return rc;
    }
    fprintf(stderr, "wampscope-ctl: exported %lld records of trace %s to %s (%s)\n", x.done, id,
            to_stdout ? "stdout" : f.out, f.format);
    if (x.lost) {
        fprintf(stderr,
                "wampscope-ctl: %lld records the trace held when the export began were dropped "
                "before they could be read (%lld gap%s%s); a larger --page or a larger trace "
                "limit keeps more of them\n",
                x.lost, x.gaps, x.gaps == 1 ? "" : "s", chrome ? "" : ", marked in the file");
    }
    return EX_OK;
}

/* mark [ID] NAME [--meta JSON] */
typedef struct mark_flags {
    json_t *meta;
    bool json;
} mark_flags;

static int flag_mark(ctl *c, void *state, int argc, char **argv, int *i)
{
    mark_flags *f = state;
    const char *v;
    if (strcmp(argv[*i], "--json") == 0) {
        f->json = true;
        return EX_OK;
    }
    if (opt_value(argc, argv, i, "--meta", &v)) {
        json_error_t jerr;
        json_decref(f->meta);
        f->meta = v ? json_loads(v, 0, &jerr) : NULL;
        if (!json_is_object(f->meta)) {
            return usage_error(c, "--meta needs a JSON object");
        }
        return EX_OK;
    }
    return FLAG_UNKNOWN;
}

static int cmd_mark(ctl *c)
{
    const char *pos[2];
    int n, rc;
    mark_flags f = {0};
    rc = parse_cmd_args(c, &f, flag_mark, pos, 2, &n);
    if (rc == EX_OK && n == 0) {
        rc = usage_error(c, "a marker NAME is needed");
    }
    if (rc != EX_OK || (rc = resolve_target(c, true)) != EX_OK) {
        json_decref(f.meta);
        return rc;
    }
    const char *id = n == 2 ? pos[0] : NULL;
    const char *name = pos[n - 1];
    json_t *res;
    rc = call(c, PROC("mark_trace"),
              json_pack("[s, s, s?, s, o]", c->node, c->worker, id, name,
                        f.meta ? f.meta : json_object()),
              &res);
    if (rc != EX_OK) {
        return rc;
    }
    if (f.json || every_node(c)) { /* '*': {node_id: seq-or-{trace_id: seq}-or-error} */
        print_json(res);
    } else if (json_is_integer(res)) {
        printf("%s: marker \"%s\" is seq %lld\n", id, name, (long long)json_integer_value(res));
    } else if (json_object_size(res) == 0) {
        fprintf(stderr, "wampscope-ctl: no running trace to mark\n");
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(res, k, v)
        {
            ctl_format_clean(stdout, "%s: marker \"%s\" is seq %lld", k, name,
                             (long long)json_integer_value(v));
            putchar('\n');
        }
    }
    json_decref(res);
    return EX_OK;
}

/* stats [--watch [S]] [--json]: get_worker's stats; --watch repeats every S seconds (default
 * 2) with each counter's rate since the previous sample, until Ctrl-C. */
typedef struct stats_flags {
    long long every;
    bool watch;
    bool json;
} stats_flags;

static int flag_stats(ctl *c, void *state, int argc, char **argv, int *i)
{
    stats_flags *f = state;
    const char *a = argv[*i];
    if (strcmp(a, "--json") == 0) {
        f->json = true;
        return EX_OK;
    }
    if (strncmp(a, "--watch=", 8) == 0) {
        f->watch = true;
        return parse_int(a + 8, 1, 86400, &f->every) ? EX_OK
                                                     : usage_error(c, "--watch needs 1..86400 s");
    }
    if (strcmp(a, "--watch") == 0) {
        f->watch = true;
        /* The seconds are optional: take the next argument when it is a number. */
        if (*i + 1 < argc && parse_int(argv[*i + 1], 1, 86400, &f->every)) {
            ++*i;
        }
        return EX_OK;
    }
    return FLAG_UNKNOWN;
}

static double monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* stats --node '*': one table per node (a blank line between); --json: {node_id: stats}. */
typedef struct stats_every {
    bool json;
    json_t *map;
    size_t n;
} stats_every;

static void stats_each(ctl *c, const char *node, json_t *answer, void *ctx)
{
    stats_every *e = ctx;
    if (e->json) {
        (void)json_object_set_new(e->map, node, answer);
        return;
    }
    ctl_style st = table_style(c, -1);
    if (e->n++) {
        fputc('\n', stdout);
    }
    ctl_format_stats(stdout, &st, node, answer, NULL, 0);
    json_decref(answer);
}

static int stats_run(ctl *c)
{
    const char *pos[1];
    int n, rc;
    stats_flags f = {.every = 2};
    if ((rc = parse_cmd_args(c, &f, flag_stats, pos, 0, &n)) != EX_OK ||
        (rc = resolve_target(c, true)) != EX_OK) {
        return rc;
    }
    if (every_node(c)) {
        if (f.watch) {
            return usage_error(c, "stats --watch follows one node: give --node ID");
        }
        stats_every e = {.json = f.json, .map = f.json ? json_object() : NULL};
        rc = on_every_node(c, PROC("get_worker"), c->worker, stats_each, &e);
        if (e.map) {
            print_json(e.map);
            json_decref(e.map);
        }
        return rc;
    }
    c->interrupt_is_end = f.watch;
    bool clear = f.watch && !f.json && isatty(STDOUT_FILENO);
    json_t *prev = NULL;
    double prev_t = 0;
    for (;;) {
        json_t *w;
        if ((rc = call(c, PROC("get_worker"), json_pack("[s, s]", c->node, c->worker), &w)) !=
            EX_OK) {
            break;
        }
        double now = monotonic_s();
        if (f.json) {
            print_json(w);
        } else {
            ctl_style st = table_style(c, -1);
            if (clear) {
                fputs("\033[H\033[2J", stdout); /* home, erase the screen */
            } else if (prev) {
                fputc('\n', stdout);
            }
            ctl_format_stats(stdout, &st, c->node, w, prev, now - prev_t);
        }
        fflush(stdout);
        json_decref(prev);
        prev = w;
        prev_t = now;
        if (!f.watch) {
            break;
        }
        /* Sleep in the client's event loop (keeps the session serviced; Ctrl-C ends it). */
        ctl_error e;
        uint64_t sub;
        json_t *args;
        if (ctl_client_next_event(c->cl, (int)(f.every * 1000), &sub, &args, &e)) {
            json_decref(args);
        } else if (e.kind == CTL_E_INTERRUPTED) {
            break;
        } else if (e.kind != CTL_E_TIMEOUT) {
            rc = fail(&e);
            break;
        }
    }
    json_decref(prev);
    return rc;
}

/* Ctrl-C is the normal end of stats --watch. */
static int cmd_stats(ctl *c)
{
    int rc = stats_run(c);
    return rc == EX_INTERRUPTED_END ? EX_OK : rc;
}

static const cmd commands[] = {
        {"nodes", cmd_nodes,
         "usage: wampscope-ctl nodes [--json]\n"
         "Lists the node ids (crossbarfabriccenter.list_nodes).\n"},
        {"workers", cmd_workers,
         "usage: wampscope-ctl [--node ID|'*'] workers [--json]\n"
         "Lists the worker ids of the node (crossbarfabriccenter.list_workers); --node '*':\n"
         "\"NODE WORKER\" lines of every node (--json: {node_id: [worker ids]}).\n"},
        {"traces", cmd_traces,
         "usage: wampscope-ctl traces [--running] [--json]\n"
         "Table of the traces, oldest first: id, status, records held, records dropped by the\n"
         "trace's limits, start time, runtime. --running: only running traces; --json: the\n"
         "metadata objects.\n"},
        {"start", cmd_start,
         "usage: wampscope-ctl start [ID] [OPTIONS]\n"
         "Starts a trace (without ID the router names it trace1, trace2, ...) and prints its\n"
         "metadata. Options (the API's trace_options; filters combine with AND, repeated\n"
         "values of one filter with OR):\n"
         "  --realm REALM          only sessions of this realm (repeatable)\n"
         "  --uri URI              only actions on this URI (repeatable)\n"
         "  --match exact|prefix|wildcard   how every --uri matches (default exact)\n"
         "  --type TYPE            only these message types, e.g. Call,Result (repeatable)\n"
         "  --direction rx|tx|both\n"
         "  --session ID, --authid ID, --authrole ROLE   only these peers (repeatable)\n"
         "  --payload / --no-payload   keep / drop Arguments and ArgumentsKw\n"
         "  --limit N              records held (oldest dropped beyond)\n"
         "  --max-bytes N          bytes held\n"
         "  --duration S           stop after S seconds\n"
         "  --max-records N        stop after N records\n"
         "  --batching-period MS   live feed period\n"
         "  --persist              persist the records (refused by routers without it)\n"
         "  --trace-level message|action  action: one record per completed action\n"
         "  --options JSON         any trace_options object (the flags above win)\n"
         "  --json                 print the metadata as JSON\n"},
        {"stop", cmd_stop,
         "usage: wampscope-ctl stop ID [--json]\n"
         "Stops a trace; its records stay readable until it is deleted.\n"},
        {"delete", cmd_delete,
         "usage: wampscope-ctl delete ID\n"
         "Deletes a stopped trace and its records.\n"},
        {"show", cmd_show,
         "usage: wampscope-ctl show ID [--json]\n"
         "Prints a trace's metadata.\n"},
        {"data", cmd_data,
         "usage: wampscope-ctl data ID [--from SEQ] [--to SEQ] [--limit N] [--json]\n"
         "                          [--wide | --width N] [FILTERS]\n"
         "Prints the records with from <= seq <= to (default: from the oldest held, up to the\n"
         "newest), at most N (default 100) that pass the filters, as a table or with --json as\n"
         "the API's record objects (a JSON list). The table fits the terminal (MSG, URI and\n"
         "REALM cut with \"...\"; narrow terminals leave out REALM, then CORR, then SESSION);\n"
         "--wide prints every column whole; --width N: every column, MSG cut to N characters\n"
         "(0 = whole); not on a terminal, MSG is cut to 60. An Error's MSG starts with its\n"
         "error URI, an Abort's with its reason. An action trace's records: SEQ TIME ACTION\n"
         "REALM ORIGINATOR URI RESP (responders) SUCCESS DURATION. Records the trace drops\n"
         "between two pages of the reading (a busy flight recorder moves on) show as a Gap\n"
         "item with reason \"dropped\" where they were, whatever the filters. --node '*':\n"
         "every node's records up to where its trace stood when data began, merged in time\n"
         "order (--to does not apply).\n"
         "Filters (client-side; kinds combine with AND, repeated values with OR):\n"
         "  --type TYPE      msg_type (action records: action), e.g. Call,Error; any case\n"
         "  --session ID     session_id (action records: the originator's)\n"
         "  --uri URI        the record's uri; a trailing * matches a prefix\n"
         "  --dir rx|tx      direction (leaves out action records and markers)\n"},
        {"wire", cmd_wire,
         "usage: wampscope-ctl wire [--from SEQ] [--limit N] [--json] [--wide | --width N]\n"
         "                          [FILTERS]\n"
         "Prints the wire capture's messages (wampscope.tracing.wire_capture; get_wire_data)\n"
         "from seq SEQ on (default: the oldest it holds), at most N (default 100) that pass\n"
         "the filters, as data prints a trace's records: each message as it went over the\n"
         "wire, its session while that is joined. A message the capture holds only in part is\n"
         "a Gap item \"lost\"; what it lets go between two pages, a Gap item \"dropped\".\n"
         "Table and FILTERS as for data. Exit status 6 when the router runs no wire capture.\n"},
        {"tail", cmd_tail,
         "usage: wampscope-ctl tail ID [-n N] [--json] [--wide | --width N] [FILTERS]\n"
         "Prints the last N records (default 10; counted before filtering), then every new\n"
         "record as it arrives (the live on_trace_data feed; gaps are filled with\n"
         "get_trace_data, and what the trace dropped before it could be read shows as a Gap\n"
         "item with reason \"dropped\"). Ends when the trace stops, or on Ctrl-C (exit\n"
         "status 0). --json: one record object per line. Table and FILTERS as for data\n"
         "(--type, --session, --uri, --dir).\n"},
        {"stats", cmd_stats,
         "usage: wampscope-ctl stats [--watch [S]] [--json]\n"
         "Prints the worker's stats (get_worker): what the router holds now (sessions, queued\n"
         "messages and bytes, subscriptions, registrations, pending calls, retained events)\n"
         "and its counters since start (sessions, messages and bytes rx/tx, refusals, ...);\n"
         "on a node of a cluster also its cluster link (state, live nodes, messages and bytes\n"
         "in and out, drops) and each other node's clock offset in seconds.\n"
         "--watch: again every S seconds (default 2) with each counter's rate per second,\n"
         "until Ctrl-C (exit status 0). --json: get_worker's answer as JSON.\n"
         "--node '*': every node's stats, one table each (--json: {node_id: stats}); not with\n"
         "--watch.\n"},
        {"export", cmd_export,
         "usage: wampscope-ctl export ID --format jsonl|chrome -o FILE [--page N]\n"
         "Pages through the whole trace (get_trace_data, N records per page, default 1000)\n"
         "and writes it to FILE (- = stdout): jsonl = one record object per line; chrome =\n"
         "Chrome Trace Event JSON for Perfetto / chrome://tracing (a process per realm, a\n"
         "thread per session, an instant per message, a slice per action with flow arrows\n"
         "from the anchor to each follower). A progress bar on a terminal. It stops where\n"
         "the trace stood when it began; records the trace drops before they are read (a\n"
         "busy flight recorder moves on) are missing, and said so: a gap item with reason\n"
         "\"dropped\" in the JSON Lines, records_missing in the Chrome file, a count on\n"
         "stderr. --node '*': of every node what its trace held when the export began,\n"
         "merged in time order (at once, whatever the nodes' clocks), a node's gap items\n"
         "naming it.\n"},
        {"mark", cmd_mark,
         "usage: wampscope-ctl mark [ID] NAME [--meta JSON] [--json]\n"
         "Adds a marker record (msg_type Marker, NAME as uri, the --meta object as msg) to\n"
         "trace ID, or without ID to every running trace, and prints the marker's seq(s).\n"},
};

static const cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            return false;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return true;
        }
    }
    return false;
}

/* Credentials from the flags, else from the environment. */
static int setup_auth(ctl *c, const char *ticket_file, const char *secret_file,
                      const char *key_file)
{
    char why[300];
    int given = (ticket_file != NULL) + (secret_file != NULL) + (key_file != NULL);
    if (given > 1) {
        return usage_error(NULL, "give one of --ticket-file, --secret-file, --key-file");
    }
    if (!c->auth.authid && getenv("WAMPSCOPE_AUTHID") && *getenv("WAMPSCOPE_AUTHID")) {
        c->auth.authid = getenv("WAMPSCOPE_AUTHID");
    }
    if (ticket_file || secret_file) {
        bool ok = ctl_auth_load_secret(&c->auth, ticket_file ? CTL_AUTH_TICKET : CTL_AUTH_WAMPCRA,
                                       ticket_file ? ticket_file : secret_file, why, sizeof(why));
        if (!ok) {
            errline("%s", why);
            return EX_USAGE;
        }
        return EX_OK;
    }
    if (!key_file && getenv("WAMPSCOPE_KEY_FILE") && *getenv("WAMPSCOPE_KEY_FILE")) {
        key_file = getenv("WAMPSCOPE_KEY_FILE");
    }
    if (key_file) {
        if (!ctl_auth_load_cryptosign(&c->auth, key_file, why, sizeof(why))) {
            errline("%s", why);
            return EX_USAGE;
        }
        return EX_OK;
    }
    const char *t = getenv("WAMPSCOPE_TICKET");
    const char *s = getenv("WAMPSCOPE_SECRET");
    if (t && *t && !ctl_auth_set_secret(&c->auth, CTL_AUTH_TICKET, t)) {
        errline("WAMPSCOPE_TICKET: unusable");
        return EX_USAGE;
    }
    if (!(t && *t) && s && *s && !ctl_auth_set_secret(&c->auth, CTL_AUTH_WAMPCRA, s)) {
        errline("WAMPSCOPE_SECRET: unusable");
        return EX_USAGE;
    }
    return EX_OK;
}

/* Long: the global options, one branch each, then the command table's dispatch and the signal
 * setup around it. */
int main(int argc, char **argv)
{
    ctl c;
    memset(&c, 0, sizeof(c));
    ctl_auth_init(&c.auth);
    c.url = getenv("WAMPSCOPE_URL");
    if (!c.url || !*c.url) {
        c.url = DEFAULT_URL;
    }
    c.realm = DEFAULT_REALM;
    c.timeout_ms = 30000;
    const char *ticket_file = NULL, *secret_file = NULL, *key_file = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *v = NULL;
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            return EX_OK;
        }
        if (strcmp(a, "--no-color") == 0) {
            setenv("NO_COLOR", "1", 1);
            continue;
        }
        if (strcmp(a, "--wide") == 0) {
            c.wide = true;
            continue;
        }
        if (strcmp(a, "--version") == 0) {
            printf("wampscope-ctl %s\n", CTL_VERSION);
            return EX_OK;
        }
        const char **slot = NULL;
        if (opt_value(argc, argv, &i, "--url", &v)) {
            slot = &c.url;
        } else if (opt_value(argc, argv, &i, "--realm", &v)) {
            slot = &c.realm;
        } else if (opt_value(argc, argv, &i, "--node", &v)) {
            slot = &c.node;
        } else if (opt_value(argc, argv, &i, "--worker", &v)) {
            slot = &c.worker;
        } else if (opt_value(argc, argv, &i, "--ca-file", &v)) {
            slot = &c.ca_file;
        } else if (opt_value(argc, argv, &i, "--authid", &v)) {
            slot = &c.auth.authid;
        } else if (opt_value(argc, argv, &i, "--ticket-file", &v)) {
            slot = &ticket_file;
        } else if (opt_value(argc, argv, &i, "--secret-file", &v)) {
            slot = &secret_file;
        } else if (opt_value(argc, argv, &i, "--key-file", &v)) {
            slot = &key_file;
        } else if (opt_value(argc, argv, &i, "--timeout", &v)) {
            long long s;
            if (!parse_int(v, 1, 86400, &s)) {
                return usage_error(NULL, "--timeout needs seconds (1..86400)");
            }
            c.timeout_ms = (int)(s * 1000);
            continue;
        } else {
            return usage_error(NULL, "unknown option %s", a);
        }
        if (!v || !*v) {
            return usage_error(NULL, "%s needs a value", a);
        }
        *slot = v;
    }
    if (i >= argc) {
        fputs(usage_text, stderr);
        return EX_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        const cmd *h = i + 1 < argc ? find_cmd(argv[i + 1]) : NULL;
        if (i + 1 < argc && !h) {
            return usage_error(NULL, "unknown command \"%s\"", argv[i + 1]);
        }
        fputs(h ? h->help : usage_text, stdout);
        return EX_OK;
    }
    c.command = find_cmd(argv[i]);
    if (!c.command) {
        return usage_error(NULL, "unknown command \"%s\"", argv[i]);
    }
    c.argc = argc - i - 1;
    c.argv = argv + i + 1;
    if (wants_help(c.argc, c.argv)) {
        fputs(c.command->help, stdout);
        return EX_OK;
    }
    if (sodium_init() < 0) {
        errline("libsodium failed to initialise");
        return EX_FAIL;
    }
    int rc = setup_auth(&c, ticket_file, secret_file, key_file);
    if (rc != EX_OK) {
        ctl_auth_fini(&c.auth);
        return rc;
    }
    /* Ctrl-C interrupts the event loop (no SA_RESTART: poll() returns EINTR) and ends the
     * command cleanly: tail leaves with GOODBYE and exit status 0. */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    ctl_client_log_init();

    ctl_error e;
    ctl_client_opts o = {.url = c.url,
                         .realm = c.realm,
                         .auth = &c.auth,
                         .timeout_ms = c.timeout_ms,
                         .ca_file = c.ca_file,
                         .interrupt = &interrupted};
    if (!ctl_client_open(&o, &c.cl, &e)) {
        rc = fail(&e);
    } else {
        rc = c.command->run(&c);
        ctl_client_close(c.cl);
    }
    json_decref(c.node_owned);
    json_decref(c.worker_owned);
    ctl_auth_fini(&c.auth);
    return rc;
}
