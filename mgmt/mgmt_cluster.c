/* mgmt_cluster.c: forwarding management calls between the nodes of a cluster (see
 * mgmt_cluster.h; the trust model is in mgmt/README.md "Cluster").
 *
 * Authorization happens once, on the node the client is connected to: the dealer let the CALL
 * through the management realm's permissions there. The node that runs the forwarded procedure
 * trusts that (the nodes of one cluster trust each other; the NATS credentials are the security
 * boundary) and logs who asked. */
#include "mgmt_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt_api.h"
#include "rt_hmap.h"
#include "rt_list.h"
#include "rt_local.h"
#include "rt_log.h"
#include "rt_options.h"
#include "rt_session.h"
#include "wamp_buf.h"

/* What the dealer answers for a local procedure's internal failure. */
#define MGMT_ERROR_RUNTIME "wamp.error.runtime_error"

/* One forwarded CALL waiting for the other node's answer. */
typedef struct mgmt_fwd {
    rt_list in_mc; /* in mgmt_cluster.fwds */
    mgmt_cluster *mc;
    rt_dealer_deferred *h; /* owned */
    char node[RT_CLUSTER_TOKEN_MAX + 1];
} mgmt_fwd;

/* One node's part in a fan-out (the argument of its request's reply callback). */
typedef struct mgmt_slot {
    struct mgmt_fan *fan;
    char node[RT_CLUSTER_TOKEN_MAX + 1];
} mgmt_slot;

/* A node_id "*" CALL waiting for the other nodes' answers. */
typedef struct mgmt_fan {
    rt_list in_mc; /* in mgmt_cluster.fans */
    mgmt_cluster *mc;
    rt_dealer_deferred *h; /* owned */
    json_t *map;           /* {node_id: result-or-error}, filled as the answers come */
    size_t pending;        /* requests not answered yet */
    mgmt_slot *slots;      /* owned */
    mgmt_cluster_finish_fn finish;
    json_t *finish_arg; /* owned */
} mgmt_fan;

struct mgmt_cluster {
    rt_router *rt;
    rt_cluster *c; /* borrowed; NULL once stopped */
    uint64_t sub;
    uint32_t timeout_ms; /* the cluster's request_timeout, for the timeout error */
    mgmt_cluster_run_fn run;
    void *run_ctx;
    rt_list fwds;
    rt_list fans;
};

/* --- The node that runs the procedure -------------------------------------------------------- */

/* {"args", "kwargs"} or {"error", "args", "kwargs"} of a reply a procedure filled (emptied). */
static json_t *answer_of(rt_local_reply *r)
{
    json_t *o = json_object();
    if (!o) {
        return NULL;
    }
    json_t *args = r->args;
    r->args = NULL;
    if (r->args_encoded) {
        /* Rendered in JSON for us (mgmt_who): parsed back into values to travel in the answer. */
        args = json_loadb((const char *)wamp_buf_cdata(r->args_encoded),
                          wamp_buf_len(r->args_encoded), JSON_ALLOW_NUL, NULL);
        wamp_buf_unref(&r->args_encoded);
        if (!args) {
            json_decref(o);
            json_decref(r->kwargs);
            r->kwargs = NULL;
            return NULL;
        }
    }
    if ((r->error_uri && json_object_set_new(o, "error", json_string(r->error_uri)) != 0) ||
        (args && json_object_set_new(o, "args", args) != 0) ||
        (r->kwargs && json_object_set_new(o, "kwargs", r->kwargs) != 0)) {
        json_decref(o);
        o = NULL;
    }
    r->kwargs = NULL;
    return o;
}

static void send_answer(mgmt_cluster *mc, const char *reply_subject, json_t *answer)
{
    char *text = answer ? json_dumps(answer, JSON_COMPACT) : NULL;
    wamp_err err = text ? rt_cluster_reply(mc->c, reply_subject, text, strlen(text)) : WAMP_ENOMEM;
    free(text);
    if (err == WAMP_ETOOBIG) {
        /* The caller still learns why, as for a local answer over its size limit. */
        static const char too_big[] = "{\"error\":\"" WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED
                                      "\",\"args\":[\"the answer exceeds the cluster link's "
                                      "message size limit (NATS max_payload): ask for less\"]}";
        err = rt_cluster_reply(mc->c, reply_subject, too_big, sizeof(too_big) - 1);
    }
    if (err != WAMP_OK) {
        RT_LOG_WARN(0, "cluster management: answer not sent: %s", wamp_strerror(err));
    }
}

static void on_request(void *arg, const char *subject, const char *reply_subject, const void *data,
                       size_t len)
{
    (void)subject;
    mgmt_cluster *mc = arg;
    if (!reply_subject || !mc->c) {
        return;
    }
    json_t *req = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
    json_t *caller = json_object_get(req, "caller");
    json_t *args = json_object_get(req, "args");
    json_t *kwargs = json_object_get(req, "kwargs");
    json_t *max = json_object_get(req, "max_message_size");
    const char *proc = json_string_value(json_object_get(req, "procedure"));
    rt_local_reply r = {0};
    wamp_err err;
    if (!proc || !json_is_array(args) || !json_is_object(kwargs) || !json_is_integer(max) ||
        json_integer_value(max) < 0) {
        RT_LOG_INFO(0, "cluster management: malformed request ignored (%zu bytes)", len);
        json_decref(req);
        return;
    }
    RT_LOG_DEBUG(0, "cluster management: %s for node %s session %lld (authid %s, role %s)", proc,
                 json_string_value(json_object_get(caller, "node_id")),
                 (long long)json_integer_value(json_object_get(caller, "session")),
                 json_string_value(json_object_get(caller, "authid")),
                 json_string_value(json_object_get(caller, "authrole")));
    mgmt_who who = {.ser = WAMP_SER_JSON, .max_message_size = (size_t)json_integer_value(max)};
    err = mc->run(mc->run_ctx, proc, &who, args, kwargs, &r);
    if (err == WAMP_ENOTFOUND) {
        err = rt_local_reply_error(&r, WAMP_ERROR_NO_SUCH_PROCEDURE, "no management procedure %s",
                                   proc);
    }
    if (err != WAMP_OK) {
        json_decref(r.args);
        json_decref(r.kwargs);
        wamp_buf_unref(&r.args_encoded);
        r = (rt_local_reply){0};
        err = rt_local_reply_error(&r, MGMT_ERROR_RUNTIME,
                                   "internal error in router procedure on node %s: %s",
                                   rt_cluster_node_id(mc->c), wamp_strerror(err));
    }
    json_t *answer = err == WAMP_OK ? answer_of(&r) : NULL;
    send_answer(mc, reply_subject, answer);
    json_decref(answer);
    json_decref(r.args);
    json_decref(r.kwargs);
    json_decref(req);
}

/* --- The node the client is on --------------------------------------------------------------- */

static void fwd_free(mgmt_fwd *f)
{
    rt_list_remove(&f->in_mc);
    rt_dealer_deferred_free(f->h);
    free(f);
}

/* The reply of a request to node with the link's outcome err: the node's answer (parsed into
 * *answer, which *r borrows the error URI from: free it after *r is used) or an error naming the
 * node. WAMP_ENOMEM. */
static wamp_err reply_of(const mgmt_cluster *mc, const char *node, wamp_err err, const void *data,
                         size_t len, rt_local_reply *r, json_t **answer)
{
    *answer = NULL;
    switch (err) {
    case WAMP_OK: {
        *answer = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
        json_t *uri = json_object_get(*answer, "error");
        json_t *args = json_object_get(*answer, "args");
        json_t *kwargs = json_object_get(*answer, "kwargs");
        if (!json_is_object(*answer) || (uri && !json_is_string(uri)) ||
            (args && !json_is_array(args)) || (kwargs && !json_is_object(kwargs))) {
            return rt_local_reply_error(r, MGMT_ERROR_RUNTIME,
                                        "node \"%s\" sent a malformed answer", node);
        }
        r->error_uri = json_string_value(uri); /* borrowed from *answer */
        r->args = json_incref(args);
        r->kwargs = json_incref(kwargs);
        return WAMP_OK;
    }
    case WAMP_EIO:
        return rt_local_reply_error(r, WAMP_ERROR_TIMEOUT,
                                    "node \"%s\" did not answer within %u ms", node,
                                    mc->timeout_ms);
    case WAMP_ENOTFOUND:
        return rt_local_reply_error(r, MGMT_ERROR_NO_SUCH_OBJECT,
                                    "node \"%s\" is gone (nobody serves its management calls)",
                                    node);
    case WAMP_ETOOBIG:
        return rt_local_reply_error(r, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                    "the call exceeds the cluster link's message size limit");
    default:
        return rt_local_reply_error(r, WAMP_ERROR_NETWORK_FAILURE,
                                    "node \"%s\" not reached: the cluster link is %s", node,
                                    err == WAMP_ECLOSED ? "down" : wamp_strerror(err));
    }
}

static void on_reply(void *arg, wamp_err err, const void *data, size_t len)
{
    mgmt_fwd *f = arg;
    rt_local_reply r = {0};
    json_t *answer;
    if (reply_of(f->mc, f->node, err, data, len, &r, &answer) == WAMP_OK) {
        rt_dealer_deferred *h = f->h;
        f->h = NULL;
        (void)rt_dealer_answer_deferred(f->mc->rt, h, &r);
    } else {
        json_decref(r.args);
        json_decref(r.kwargs);
    }
    json_decref(answer);
    fwd_free(f);
}

static json_t *request_of(const mgmt_cluster *mc, rt_session *caller, const char *procedure,
                          const json_t *args, const json_t *kwargs)
{
    const char *authid = rt_session_authid(caller);
    const char *authrole = rt_session_authrole(caller);
    return json_pack("{s:s, s:O, s:O, s:I, s:{s:s, s:I, s:s?, s:s?}}", "procedure", procedure,
                     "args", args, "kwargs", kwargs, "max_message_size",
                     (json_int_t)rt_session_peer(caller)->max_message_size, "caller", "node_id",
                     rt_cluster_node_id(mc->c), "session", (json_int_t)rt_session_id(caller),
                     "authid", authid, "authrole", authrole);
}

wamp_err mgmt_cluster_forward(mgmt_cluster *mc, rt_session *caller, const char *node_id,
                              const char *procedure, const json_t *args, const json_t *kwargs,
                              rt_local_reply *reply)
{
    if (!mc->c || !rt_cluster_has_node(mc->c, node_id)) {
        return rt_local_reply_error(reply, MGMT_ERROR_NO_SUCH_OBJECT, "no node \"%s\"", node_id);
    }
    json_t *req = request_of(mc, caller, procedure, args, kwargs);
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    mgmt_fwd *f = text ? calloc(1, sizeof(*f)) : NULL;
    wamp_err err = f ? rt_dealer_defer(caller, reply, &f->h) : WAMP_ENOMEM;
    if (err != WAMP_OK) {
        free(f);
        free(text);
        return err;
    }
    f->mc = mc;
    snprintf(f->node, sizeof(f->node), "%s", node_id);
    err = rt_cluster_request(mc->c, node_id, MGMT_CLUSTER_SERVICE, text, strlen(text), on_reply, f);
    free(text);
    if (err == WAMP_OK) {
        rt_list_add_tail(&mc->fwds, &f->in_mc);
        return WAMP_OK;
    }
    /* Not sent: answered now. */
    rt_dealer_deferred_free(f->h);
    free(f);
    reply->deferred = false;
    switch (err) {
    case WAMP_ENOTFOUND:
        return rt_local_reply_error(reply, MGMT_ERROR_NO_SUCH_OBJECT, "no node \"%s\"", node_id);
    case WAMP_ETOOBIG:
        return rt_local_reply_error(reply, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                    "the call exceeds the cluster link's message size limit");
    case WAMP_ECLOSED:
        return rt_local_reply_error(reply, WAMP_ERROR_NETWORK_FAILURE,
                                    "node \"%s\" not reached: the cluster link is down", node_id);
    default:
        return err;
    }
}

/* --- node_id "*": every node ------------------------------------------------------------------ */

/* A node's entry in the map of a fan-out, from its reply (emptied): the result's first value
 * (null when none), or {"error": URI, "args": [...]}. NULL on allocation failure. */
static json_t *entry_of(rt_local_reply *r)
{
    json_t *answer = answer_of(r);
    json_t *uri = json_object_get(answer, "error");
    json_t *args = json_object_get(answer, "args");
    json_t *e;
    if (uri) {
        e = json_pack("{s:O, s:o}", "error", uri, "args", args ? json_incref(args) : json_array());
    } else {
        e = json_array_get(args, 0) ? json_incref(json_array_get(args, 0)) : json_null();
    }
    json_decref(answer);
    return answer ? e : NULL;
}

/* args/kwargs of a call with node_id (a keyword wins, as rt_local_arg() reads it) set to node:
 * new references, NULL on allocation failure. */
static bool args_for(const json_t *args, const json_t *kwargs, const char *node, json_t **a,
                     json_t **k)
{
    *a = json_copy((json_t *)args);
    *k = json_copy((json_t *)kwargs);
    bool ok = *a && *k;
    if (ok && json_object_get(*k, "node_id")) {
        ok = json_object_set_new(*k, "node_id", json_string(node)) == 0;
    } else if (ok && json_array_size(*a) > 0) {
        ok = json_array_set_new(*a, 0, json_string(node)) == 0;
    }
    if (!ok) {
        json_decref(*a);
        json_decref(*k);
        *a = *k = NULL;
    }
    return ok;
}

/* Runs procedure here for a fan-out: the node's map entry (NULL on allocation failure). */
static json_t *run_here(const char *self_id, mgmt_cluster_run_fn run, void *run_ctx,
                        const char *procedure, const json_t *args, const json_t *kwargs)
{
    json_t *a, *k;
    if (!args_for(args, kwargs, self_id, &a, &k)) {
        return NULL;
    }
    rt_local_reply r = {0};
    mgmt_who who = {.ser = WAMP_SER_JSON, .max_message_size = 0};
    wamp_err err = run(run_ctx, procedure, &who, a, k, &r);
    json_decref(a);
    json_decref(k);
    if (err != WAMP_OK) {
        json_decref(r.args);
        json_decref(r.kwargs);
        wamp_buf_unref(&r.args_encoded);
        r = (rt_local_reply){0};
        if (rt_local_reply_error(&r, MGMT_ERROR_RUNTIME,
                                 "internal error in router procedure on node %s: %s", self_id,
                                 wamp_strerror(err)) != WAMP_OK) {
            return NULL;
        }
    }
    return entry_of(&r);
}

/* --- Cluster-wide traces kept in the cluster ------------------------------------------------- */

/* The bucket is "<cluster name>" + this; a key is a trace id (trace_key()). */
#define TRACES_BUCKET_SUFFIX "_traces"
/* Longest key: "=" and 2 hex digits per byte of the id. */
#define TRACE_KEY_MAX 256

static bool is_proc(const char *procedure, const char *name)
{
    return strcmp(procedure, name) == 0 ||
           (strncmp(procedure, "remote.tracing.", 15) == 0 && strcmp(procedure + 15, name) == 0);
}

/* The bucket's key of trace id: the id itself when it is a token, else "=" and its bytes in hex
 * ('=' is in no token). false when the id is too long for a key. */
static bool trace_key(const char *id, char *key, size_t size)
{
    if (rt_cluster_token_is_valid(id)) {
        snprintf(key, size, "%s", id);
        return true;
    }
    size_t n = strlen(id);
    if (2 * n + 2 > size) {
        return false;
    }
    key[0] = '=';
    for (size_t i = 0; i < n; i++) {
        snprintf(key + 1 + 2 * i, 3, "%02x", (unsigned)(unsigned char)id[i]);
    }
    return true;
}

/* PUT (value: the start_trace call's {"args", "kwargs"}) or DELETE of trace id's key. */
static void registry_write(mgmt_cluster *mc, const char *id, const json_t *args,
                           const json_t *kwargs)
{
    char key[TRACE_KEY_MAX], bucket[RT_CLUSTER_TOKEN_MAX + sizeof(TRACES_BUCKET_SUFFIX)];
    wamp_err err = WAMP_EINVAL;
    char *text = NULL;
    snprintf(bucket, sizeof(bucket), "%s" TRACES_BUCKET_SUFFIX, rt_cluster_name(mc->c));
    if (trace_key(id, key, sizeof(key))) {
        rt_cluster_kv_op op = {.kind = RT_CLUSTER_KV_DELETE, .bucket = bucket, .key = key};
        if (args) {
            json_t *v = json_pack("{s:O, s:O}", "args", args, "kwargs", kwargs);
            text = v ? json_dumps(v, JSON_COMPACT) : NULL;
            json_decref(v);
            op.kind = RT_CLUSTER_KV_PUT;
            op.value = text;
            op.len = text ? strlen(text) : 0;
        }
        err = args && !text ? WAMP_ENOMEM : rt_cluster_kv(mc->c, &op, NULL, NULL);
    }
    free(text);
    if (err != WAMP_OK) {
        RT_LOG_WARN(0,
                    "cluster management: cluster-wide trace \"%s\" not %s bucket %s: %s (nodes "
                    "that join %s)",
                    id, args ? "recorded in" : "removed from", bucket, wamp_strerror(err),
                    args ? "later do not start it" : "later start it again");
    }
}

/* A value of the bucket read at join: this node starts the trace (unless it has it already). */
static void on_trace_value(void *arg, const rt_cluster_kv_result *res)
{
    mgmt_cluster *mc = arg;
    if (!mc->c || res->err != WAMP_OK) {
        return;
    }
    json_t *v = json_loadb(res->value, res->len, 0, NULL);
    json_t *args = json_object_get(v, "args");
    json_t *kwargs = json_object_get(v, "kwargs");
    if (!json_is_array(args) || !json_is_object(kwargs)) {
        RT_LOG_INFO(0, "cluster management: malformed cluster-wide trace ignored (%zu bytes)",
                    res->len);
        json_decref(v);
        return;
    }
    json_t *e =
            run_here(rt_cluster_node_id(mc->c), mc->run, mc->run_ctx, "start_trace", args, kwargs);
    const char *uri = json_string_value(json_object_get(e, "error"));
    if (!uri) {
        RT_LOG_INFO(0, "cluster management: cluster-wide trace \"%s\" started on this node",
                    json_string_value(json_object_get(e, "id")));
    } else if (strcmp(uri, MGMT_ERROR_ALREADY_RUNNING) != 0 &&
               strcmp(uri, MGMT_ERROR_ALREADY_EXISTS) != 0) {
        RT_LOG_WARN(0, "cluster management: a cluster-wide trace not started on this node: %s",
                    json_string_value(json_array_get(json_object_get(e, "args"), 0)));
    }
    json_decref(e);
    json_decref(v);
}

static void on_trace_keys(void *arg, const rt_cluster_kv_result *res)
{
    mgmt_cluster *mc = arg;
    if (!mc->c || res->err != WAMP_OK) {
        return;
    }
    char bucket[RT_CLUSTER_TOKEN_MAX + sizeof(TRACES_BUCKET_SUFFIX)];
    snprintf(bucket, sizeof(bucket), "%s" TRACES_BUCKET_SUFFIX, rt_cluster_name(mc->c));
    for (size_t i = 0; i < res->n_keys; i++) {
        rt_cluster_kv_op op = {.kind = RT_CLUSTER_KV_GET, .bucket = bucket, .key = res->keys[i]};
        (void)rt_cluster_kv(mc->c, &op, on_trace_value, mc);
    }
}

/* This node joined (or joined again after the link came back): it starts the cluster-wide traces
 * that run. */
static void on_joined(void *arg)
{
    mgmt_cluster *mc = arg;
    char bucket[RT_CLUSTER_TOKEN_MAX + sizeof(TRACES_BUCKET_SUFFIX)];
    snprintf(bucket, sizeof(bucket), "%s" TRACES_BUCKET_SUFFIX, rt_cluster_name(mc->c));
    rt_cluster_kv_op op = {.kind = RT_CLUSTER_KV_KEYS, .bucket = bucket};
    wamp_err err = rt_cluster_kv(mc->c, &op, on_trace_keys, mc);
    if (err != WAMP_OK) {
        RT_LOG_WARN(0, "cluster management: cluster-wide traces not read: %s", wamp_strerror(err));
    }
}

static void fan_free(mgmt_fan *f)
{
    if (f->mc) {
        rt_list_remove(&f->in_mc);
    }
    rt_dealer_deferred_free(f->h);
    json_decref(f->map);
    json_decref(f->finish_arg);
    free(f->slots);
    free(f);
}

/* Sets node's entry (consumed; NULL: out of memory, the node is left out of the map). */
static void fan_set(mgmt_fan *f, const char *node, json_t *entry_take)
{
    if (entry_take) {
        (void)json_object_set_new(f->map, node, entry_take);
    }
}

/* The fan-out's answer into *r, once every node's entry is in. WAMP_ENOMEM. */
static wamp_err fan_answer(const mgmt_fan *f, rt_local_reply *r)
{
    if (!f->finish) {
        return rt_local_reply_value(r, json_incref(f->map));
    }
    json_t *v = f->finish(f->map, f->finish_arg);
    return v ? rt_local_reply_value(r, v)
             : rt_local_reply_error(r, MGMT_ERROR_RUNTIME,
                                    "the nodes' answers could not be combined (malformed or out "
                                    "of memory)");
}

static void on_fan_reply(void *arg, wamp_err err, const void *data, size_t len)
{
    mgmt_slot *s = arg;
    mgmt_fan *f = s->fan;
    rt_local_reply r = {0};
    json_t *answer;
    if (reply_of(f->mc, s->node, err, data, len, &r, &answer) == WAMP_OK) {
        fan_set(f, s->node, entry_of(&r));
    }
    json_decref(r.args);
    json_decref(r.kwargs);
    json_decref(answer);
    if (--f->pending > 0) {
        return;
    }
    r = (rt_local_reply){0};
    if (fan_answer(f, &r) == WAMP_OK) {
        rt_dealer_deferred *h = f->h;
        f->h = NULL;
        (void)rt_dealer_answer_deferred(f->mc->rt, h, &r);
    }
    fan_free(f);
}

/* Sends the fan-out's request to node s->node; its map entry at once when it cannot be sent. */
static void fan_send(mgmt_fan *f, mgmt_slot *s, rt_session *caller, const char *procedure,
                     const json_t *args, const json_t *kwargs)
{
    mgmt_cluster *mc = f->mc;
    json_t *a, *k;
    char *text = NULL;
    if (args_for(args, kwargs, s->node, &a, &k)) {
        json_t *req = request_of(mc, caller, procedure, a, k);
        text = req ? json_dumps(req, JSON_COMPACT) : NULL;
        json_decref(req);
        json_decref(a);
        json_decref(k);
    }
    if (!text) {
        return;
    }
    wamp_err err = rt_cluster_request(mc->c, s->node, MGMT_CLUSTER_SERVICE, text, strlen(text),
                                      on_fan_reply, s);
    free(text);
    if (err == WAMP_OK) {
        f->pending++;
        return;
    }
    rt_local_reply r = {0};
    json_t *answer;
    if (reply_of(mc, s->node, err, NULL, 0, &r, &answer) == WAMP_OK) {
        fan_set(f, s->node, entry_of(&r));
    }
    json_decref(r.args);
    json_decref(r.kwargs);
}

wamp_err mgmt_cluster_fanout(mgmt_cluster *mc, const char *self_id, mgmt_cluster_run_fn run,
                             void *run_ctx, rt_session *caller, const char *procedure,
                             const json_t *args, const json_t *kwargs,
                             mgmt_cluster_finish_fn finish, json_t *finish_arg_take,
                             rt_local_reply *reply)
{
    rt_cluster *c = mc ? mc->c : NULL;
    /* The other live nodes (this one is run here, member of the list or not: joining). */
    size_t n = c ? rt_cluster_node_count(c) : 0;
    mgmt_fan *f = calloc(1, sizeof(*f));
    mgmt_slot *slots = n ? calloc(n, sizeof(*slots)) : NULL;
    json_t *map = json_object();
    json_t *mine;
    size_t n_other = 0;
    wamp_err err = WAMP_ENOMEM;
    if (!f || (n && !slots) || !map) {
        goto fail;
    }
    f->map = map;
    f->slots = slots;
    f->finish = finish;
    f->finish_arg = finish_arg_take;
    finish_arg_take = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *id = rt_cluster_node_at(c, i);
        if (strcmp(id, self_id) != 0) {
            slots[n_other].fan = f;
            snprintf(slots[n_other++].node, sizeof(slots[0].node), "%s", id);
        }
    }
    if (n_other > 0) {
        err = rt_dealer_defer(caller, reply, &f->h);
        if (err != WAMP_OK) {
            goto fail;
        }
        f->mc = mc;
        rt_list_add_tail(&mc->fans, &f->in_mc);
    }
    /* A cluster-wide trace is kept in the cluster while it runs (mgmt/README.md): removed before
     * it stops, so that no node joining meanwhile starts it again. */
    json_t *id = rt_local_arg(args, kwargs, 2, "trace_id");
    if (c && (is_proc(procedure, "stop_trace") || is_proc(procedure, "delete_trace")) &&
        rt_options_is_plain_string(id)) {
        registry_write(mc, json_string_value(id), NULL, NULL);
    }
    /* Here first: this node's part is done before any other node's answer can arrive. */
    mine = run_here(self_id, run, run_ctx, procedure, args, kwargs);
    if (c && is_proc(procedure, "start_trace") && json_is_object(mine) &&
        json_is_string(json_object_get(mine, "id"))) {
        registry_write(mc, json_string_value(json_object_get(mine, "id")), args, kwargs);
    }
    fan_set(f, self_id, mine);
    for (size_t i = 0; i < n_other; i++) {
        fan_send(f, &slots[i], caller, procedure, args, kwargs);
    }
    if (f->pending > 0) {
        return WAMP_OK;
    }
    /* Every answer known now (no other node, or none reached): answered at once. */
    reply->deferred = false;
    err = fan_answer(f, reply);
    fan_free(f);
    return err;
fail:
    free(slots);
    free(f);
    json_decref(map);
    json_decref(finish_arg_take);
    return err;
}

/* --- Life cycle ------------------------------------------------------------------------------ */

wamp_err mgmt_cluster_new(rt_router *rt, rt_cluster *c, mgmt_cluster_run_fn run, void *run_ctx,
                          mgmt_cluster **out)
{
    mgmt_cluster *mc = calloc(1, sizeof(*mc));
    *out = NULL;
    if (!mc) {
        return WAMP_ENOMEM;
    }
    mc->rt = rt;
    mc->c = c;
    mc->timeout_ms = rt_cluster_request_timeout_ms(c);
    mc->run = run;
    mc->run_ctx = run_ctx;
    rt_list_init(&mc->fwds);
    rt_list_init(&mc->fans);
    wamp_err err = rt_cluster_serve(c, MGMT_CLUSTER_SERVICE, on_request, mc, &mc->sub);
    if (err != WAMP_OK) {
        free(mc);
        return err;
    }
    err = rt_cluster_add_on_joined(c, on_joined, mc);
    if (err != WAMP_OK) {
        rt_cluster_unserve(c, mc->sub);
        free(mc);
        return err;
    }
    if (rt_cluster_member_state_get(c) == RT_CLUSTER_MEMBER_JOINED) {
        on_joined(mc); /* joined before the API was attached (main() waits for the join) */
    }
    *out = mc;
    return WAMP_OK;
}

void mgmt_cluster_stop(mgmt_cluster *mc)
{
    if (mc && mc->c) {
        rt_cluster_unserve(mc->c, mc->sub);
        rt_cluster_remove_on_joined(mc->c, on_joined, mc);
        mc->c = NULL;
    }
}

void mgmt_cluster_free(mgmt_cluster *mc)
{
    if (!mc) {
        return;
    }
    mgmt_cluster_stop(mc);
    RT_LIST_FOREACH_SAFE(it, nx, &mc->fwds)
    {
        fwd_free(RT_CONTAINER_OF(it, mgmt_fwd, in_mc));
    }
    RT_LIST_FOREACH_SAFE(it, nx, &mc->fans)
    {
        fan_free(RT_CONTAINER_OF(it, mgmt_fan, in_mc));
    }
    free(mc);
}

rt_cluster *mgmt_cluster_get(const mgmt_cluster *mc)
{
    return mc ? mc->c : NULL;
}
