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

struct mgmt_cluster {
    rt_router *rt;
    rt_cluster *c; /* borrowed; NULL once stopped */
    uint64_t sub;
    uint32_t timeout_ms; /* the cluster's request_timeout, for the timeout error */
    mgmt_cluster_run_fn run;
    void *run_ctx;
    rt_list fwds;
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

static void on_reply(void *arg, wamp_err err, const void *data, size_t len)
{
    mgmt_fwd *f = arg;
    mgmt_cluster *mc = f->mc;
    rt_local_reply r = {0};
    json_t *answer = NULL;
    wamp_err e = WAMP_OK;
    switch (err) {
    case WAMP_OK: {
        answer = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
        json_t *uri = json_object_get(answer, "error");
        json_t *args = json_object_get(answer, "args");
        json_t *kwargs = json_object_get(answer, "kwargs");
        if (!json_is_object(answer) || (uri && !json_is_string(uri)) ||
            (args && !json_is_array(args)) || (kwargs && !json_is_object(kwargs))) {
            e = rt_local_reply_error(&r, MGMT_ERROR_RUNTIME, "node \"%s\" sent a malformed answer",
                                     f->node);
            break;
        }
        r.error_uri = json_string_value(uri); /* borrowed from answer until it is sent */
        r.args = json_incref(args);
        r.kwargs = json_incref(kwargs);
        break;
    }
    case WAMP_EIO:
        e = rt_local_reply_error(&r, WAMP_ERROR_TIMEOUT, "node \"%s\" did not answer within %u ms",
                                 f->node, mc->timeout_ms);
        break;
    case WAMP_ENOTFOUND:
        e = rt_local_reply_error(&r, MGMT_ERROR_NO_SUCH_OBJECT,
                                 "node \"%s\" is gone (nobody serves its management calls)",
                                 f->node);
        break;
    case WAMP_ETOOBIG:
        e = rt_local_reply_error(&r, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED,
                                 "the call exceeds the cluster link's message size limit");
        break;
    default:
        e = rt_local_reply_error(&r, WAMP_ERROR_NETWORK_FAILURE,
                                 "node \"%s\" not reached: the cluster link is %s", f->node,
                                 err == WAMP_ECLOSED ? "down" : wamp_strerror(err));
        break;
    }
    if (e == WAMP_OK) {
        rt_dealer_deferred *h = f->h;
        f->h = NULL;
        (void)rt_dealer_answer_deferred(mc->rt, h, &r);
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
    wamp_err err = rt_cluster_serve(c, MGMT_CLUSTER_SERVICE, on_request, mc, &mc->sub);
    if (err != WAMP_OK) {
        free(mc);
        return err;
    }
    *out = mc;
    return WAMP_OK;
}

void mgmt_cluster_stop(mgmt_cluster *mc)
{
    if (mc && mc->c) {
        rt_cluster_unserve(mc->c, mc->sub);
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
    free(mc);
}

rt_cluster *mgmt_cluster_get(const mgmt_cluster *mc)
{
    return mc ? mc->c : NULL;
}
