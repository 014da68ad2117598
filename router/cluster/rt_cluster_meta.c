/* rt_cluster_meta.c: the meta API across the nodes of a cluster (see rt_cluster_meta.h).
 *
 * Request to another node's service: {"realm", "procedure", "args", "kwargs"}, or with
 * "topic": {"uri", "match"} instead of an id argument (the node looks its own id up first).
 * Answer: {"result": value} or {"error": uri}. */
#include "rt_cluster_meta.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_config.h"
#include "rt_dealer.h"
#include "rt_hmap.h"
#include "rt_list.h"
#include "rt_local.h"
#include "rt_log.h"
#include "rt_meta.h"
#include "rt_realm.h"
#include "wamp_types.h"

/* How the nodes' answers of one procedure combine (rt_cluster_meta.h). */
typedef enum merge_kind {
    MERGE_SUM,    /* integers added */
    MERGE_CONCAT, /* arrays joined */
    MERGE_MATCH,  /* arrays joined, null = empty, null when empty */
    MERGE_LISTS,  /* {exact, prefix, wildcard} each joined */
    MERGE_FIRST   /* this node's non-null value, else the first other node's */
} merge_kind;

/* The procedures that find an id of a kind by its topic, and describe one. */
typedef struct id_kind {
    const char *lookup, *get;
} id_kind;

static const id_kind subscription = {"wamp.subscription.lookup", "wamp.subscription.get"};
static const id_kind registration = {"wamp.registration.lookup", "wamp.registration.get"};

static const struct {
    const char *uri;
    merge_kind how;
    const id_kind *by_topic; /* the id argument stands for this kind's URI and match policy */
} procs[] = {
        {"wamp.session.count", MERGE_SUM, NULL},
        {"wamp.session.list", MERGE_CONCAT, NULL},
        {"wamp.session.get", MERGE_FIRST, NULL},
        {"wamp.subscription.list", MERGE_LISTS, NULL},
        {"wamp.subscription.lookup", MERGE_FIRST, NULL},
        {"wamp.subscription.match", MERGE_MATCH, NULL},
        {"wamp.subscription.get", MERGE_FIRST, NULL},
        {"wamp.subscription.list_subscribers", MERGE_CONCAT, &subscription},
        {"wamp.subscription.count_subscribers", MERGE_SUM, &subscription},
        {"wamp.registration.list", MERGE_LISTS, NULL},
        {"wamp.registration.lookup", MERGE_FIRST, NULL},
        {"wamp.registration.match", MERGE_FIRST, NULL},
        {"wamp.registration.get", MERGE_FIRST, NULL},
        {"wamp.registration.list_callees", MERGE_CONCAT, &registration},
        {"wamp.registration.count_callees", MERGE_SUM, &registration},
};

#define N_PROCS (sizeof(procs) / sizeof(procs[0]))

/* The ctx of one replaced procedure of one realm. */
typedef struct meta_slot {
    rt_cluster_meta *m;
    rt_realm *realm;
    size_t proc;
} meta_slot;

/* One other node's part in a gather (its request's callback argument). */
typedef struct gather_part {
    struct gather *g;
    char node[RT_CLUSTER_TOKEN_MAX + 1];
} gather_part;

/* A CALL waiting for the other nodes' answers. */
typedef struct gather {
    rt_list in_m; /* in rt_cluster_meta.gathers */
    rt_cluster_meta *m;
    rt_dealer_deferred *h; /* owned */
    size_t proc;
    json_t *acc;          /* merged results so far (owned; NULL: no node has one yet) */
    rt_local_reply local; /* this node's answer, for when no node has a result */
    size_t pending;
    gather_part *parts; /* owned */
} gather;

struct rt_cluster_meta {
    rt_router *rt;
    rt_cluster *c;
    uint64_t sub;
    meta_slot *slots; /* owned, n_slots (realms serving the meta API x N_PROCS) */
    size_t n_slots;
    rt_list gathers;
};

static size_t proc_index(const char *uri)
{
    for (size_t i = 0; uri && i < N_PROCS; i++) {
        if (strcmp(procs[i].uri, uri) == 0) {
            return i;
        }
    }
    return N_PROCS;
}

/* This node's answer of procedure uri on realm r (rt_meta.c's procedure, no caller). */
static wamp_err run_local(rt_realm *r, const char *uri, const json_t *args, const json_t *kwargs,
                          rt_local_reply *reply)
{
    rt_local_proc_fn fn = rt_meta_proc(uri);
    return fn ? fn(r, NULL, args, kwargs, reply) : WAMP_ENOTFOUND;
}

static void reply_clear(rt_local_reply *r)
{
    json_decref(r->args);
    json_decref(r->kwargs);
    r->args = r->kwargs = NULL;
    r->error_uri = NULL;
}

/* The result value of a reply (borrowed), NULL for an error. */
static json_t *result_of(const rt_local_reply *r)
{
    return r->error_uri ? NULL : json_array_get(r->args, 0);
}

/* --- The node that answers --------------------------------------------------------------- */

/* The request's id argument: given, or this node's id of the request's topic (null if none). */
static json_t *args_here(rt_realm *r, size_t proc, const json_t *req)
{
    const json_t *topic = json_object_get(req, "topic");
    json_t *args = json_object_get(req, "args");
    if (!topic || !procs[proc].by_topic) {
        return json_is_array(args) ? json_incref(args) : NULL;
    }
    json_t *la = json_pack("[O, {s:O}]", json_object_get(topic, "uri"), "match",
                           json_object_get(topic, "match"));
    json_t *kw = json_object();
    rt_local_reply lr = {0};
    json_t *id = NULL;
    if (la && kw && run_local(r, procs[proc].by_topic->lookup, la, kw, &lr) == WAMP_OK) {
        id = json_integer_value(result_of(&lr)) > 0 ? json_pack("[O]", result_of(&lr)) : NULL;
    }
    reply_clear(&lr);
    json_decref(la);
    json_decref(kw);
    return id;
}

static void answer_request(rt_cluster_meta *m, const char *reply_subject, json_t *answer_take)
{
    char *text = answer_take ? json_dumps(answer_take, JSON_COMPACT) : NULL;
    json_decref(answer_take);
    wamp_err err = text ? rt_cluster_reply(m->c, reply_subject, text, strlen(text)) : WAMP_ENOMEM;
    free(text);
    if (err == WAMP_ETOOBIG) {
        static const char too_big[] = "{\"error\":\"" WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED "\"}";
        err = rt_cluster_reply(m->c, reply_subject, too_big, sizeof(too_big) - 1);
    }
    if (err != WAMP_OK) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(m->rt), "cluster meta answers lost", 0,
                       "cluster meta: answer not sent: %s", wamp_strerror(err));
    }
}

static void on_request(void *arg, const char *subject, const char *reply_subject, const void *data,
                       size_t len)
{
    (void)subject;
    rt_cluster_meta *m = arg;
    if (!reply_subject) {
        return;
    }
    json_t *req = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
    const char *realm = json_string_value(json_object_get(req, "realm"));
    size_t proc = proc_index(json_string_value(json_object_get(req, "procedure")));
    json_t *kwargs = json_object_get(req, "kwargs");
    rt_realm *r = realm ? rt_router_find_realm(m->rt, realm) : NULL;
    if (proc == N_PROCS || !json_is_object(kwargs) || !r || !rt_realm_has_meta_api(r)) {
        RT_LOG_LIMITED(RT_LOG_LEVEL_INFO, rt_router_now_us(m->rt), "cluster meta bad requests", 0,
                       "cluster meta: request not understood (%zu bytes)", len);
        answer_request(m, reply_subject, json_pack("{s:s}", "error", WAMP_ERROR_INVALID_ARGUMENT));
        json_decref(req);
        return;
    }
    json_t *args = args_here(r, proc, req);
    rt_local_reply lr = {0};
    json_t *answer = NULL;
    if (!args) { /* no such id or topic here */
        answer = json_pack("{s:n}", "error");
    } else if (run_local(r, procs[proc].uri, args, kwargs, &lr) == WAMP_OK) {
        answer = lr.error_uri ? json_pack("{s:s}", "error", lr.error_uri)
                              : json_pack("{s:O}", "result", result_of(&lr));
    }
    answer_request(m, reply_subject, answer);
    reply_clear(&lr);
    json_decref(args);
    json_decref(req);
}

/* --- The node the caller is on ------------------------------------------------------------- */

static void join_arrays(json_t *acc, const json_t *v)
{
    if (json_is_array(acc) && json_is_array(v)) {
        (void)json_array_extend(acc, (json_t *)v);
    }
}

/* Adds one node's result (borrowed) to g->acc; false when it cannot be one: a count that is not
 * a non-negative integer, or that takes the sum past the integer range (another node, or any
 * process on the bus, sent it). */
static bool merge(gather *g, json_t *v)
{
    if (procs[g->proc].how == MERGE_SUM &&
        (!json_is_integer(v) || json_integer_value(v) < 0 ||
         (json_is_integer(g->acc) &&
          json_integer_value(v) > LLONG_MAX - json_integer_value(g->acc)))) {
        return false;
    }
    if (!g->acc) {
        g->acc = procs[g->proc].how == MERGE_MATCH && json_is_null(v) ? json_array()
                                                                      : json_deep_copy(v);
        return true;
    }
    switch (procs[g->proc].how) {
    case MERGE_SUM:
        if (json_is_integer(g->acc)) {
            (void)json_integer_set(g->acc, json_integer_value(g->acc) + json_integer_value(v));
        }
        break;
    case MERGE_CONCAT:
    case MERGE_MATCH:
        join_arrays(g->acc, v);
        break;
    case MERGE_LISTS: {
        const char *key;
        json_t *list;
        json_object_foreach(g->acc, key, list)
        {
            join_arrays(list, json_object_get(v, key));
        }
        break;
    }
    case MERGE_FIRST:
        if (json_is_null(g->acc) && !json_is_null(v)) {
            json_decref(g->acc);
            g->acc = json_deep_copy(v);
        }
        break;
    }
    return true;
}

static void gather_free(gather *g)
{
    rt_list_remove(&g->in_m);
    rt_dealer_deferred_free(g->h);
    json_decref(g->acc);
    reply_clear(&g->local);
    free(g->parts);
    free(g);
}

/* The merged answer into *r: the results, or this node's error when no node had one. */
static wamp_err gather_answer(gather *g, rt_local_reply *r)
{
    if (!g->acc) {
        *r = g->local;
        g->local = (rt_local_reply){0};
        return WAMP_OK;
    }
    json_t *v = g->acc;
    g->acc = NULL;
    if (procs[g->proc].how == MERGE_MATCH && json_array_size(v) == 0) {
        json_decref(v);
        v = json_null(); /* spec: null when nothing matches */
    }
    return rt_local_reply_value(r, v);
}

static void part_missing(gather_part *p, const char *why)
{
    rt_cluster_meta *m = p->g->m;
    RT_LOG_LIMITED(RT_LOG_LEVEL_WARN, rt_router_now_us(m->rt), "cluster meta nodes missing", 0,
                   "cluster meta: node %s did not answer %s (%s): answered with the nodes that did",
                   p->node, procs[p->g->proc].uri, why);
}

static void on_reply(void *arg, wamp_err err, const void *data, size_t len)
{
    gather_part *p = arg;
    gather *g = p->g;
    if (err != WAMP_OK) {
        part_missing(p, wamp_strerror(err));
    } else {
        json_t *ans = json_loadb(data, len, JSON_ALLOW_NUL, NULL);
        json_t *v = json_object_get(ans, "result");
        const char *e = json_string_value(json_object_get(ans, "error"));
        if (v && !merge(g, v)) {
            part_missing(p, "answer not understood");
        } else if (!v && (!json_is_object(ans) ||
                          (e && strcmp(e, WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED) == 0))) {
            part_missing(p, e ? e : "answer not understood");
        }
        json_decref(ans);
    }
    if (--g->pending > 0) {
        return;
    }
    rt_local_reply r = {0};
    if (gather_answer(g, &r) == WAMP_OK) {
        rt_dealer_deferred *h = g->h;
        g->h = NULL;
        (void)rt_dealer_answer_deferred(g->m->rt, h, &r);
    }
    reply_clear(&r);
    gather_free(g);
}

/* The request for the other nodes (owned text), NULL on allocation failure. */
static char *request_text(const meta_slot *s, const json_t *args, const json_t *kwargs,
                          const rt_local_reply *local)
{
    json_t *req = json_pack("{s:s, s:s, s:O, s:O}", "realm", rt_realm_name(s->realm), "procedure",
                            procs[s->proc].uri, "args", args, "kwargs", kwargs);
    const id_kind *kind = procs[s->proc].by_topic;
    if (req && kind && !local->error_uri) {
        /* An id of this node: the others answer for their own id of its URI and policy. */
        rt_local_reply gr = {0};
        json_t *d = NULL;
        if (run_local(s->realm, kind->get, args, kwargs, &gr) == WAMP_OK) {
            d = result_of(&gr);
        }
        json_t *topic = d ? json_pack("{s:O, s:O}", "uri", json_object_get(d, "uri"), "match",
                                      json_object_get(d, "match"))
                          : NULL;
        if (!topic || json_object_set_new(req, "topic", topic) != 0) {
            json_decref(req);
            req = NULL;
        }
        reply_clear(&gr);
    }
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    return text;
}

/* true when this node's answer is the answer (no other node asked): a bad argument, a found
 * get/lookup/match, or a list of one session of this node (a session is on one node only). */
static bool is_final(const meta_slot *s, const json_t *args, const json_t *kwargs,
                     const rt_local_reply *local)
{
    if (local->error_uri) {
        return strcmp(local->error_uri, WAMP_ERROR_INVALID_ARGUMENT) == 0;
    }
    json_t *v = result_of(local);
    if (procs[s->proc].how == MERGE_LISTS) {
        json_t *only = json_object_get(kwargs, "session_id");
        only = only ? only : rt_local_arg(args, kwargs, 0, "session");
        return only && !json_is_null(only);
    }
    return procs[s->proc].how == MERGE_FIRST && v && !json_is_null(v);
}

/* Asks the other live nodes; false when none was asked (g is then not deferred). */
static bool scatter(gather *g, const char *text)
{
    rt_cluster *c = g->m->c;
    size_t n = rt_cluster_node_count(c);
    if (n == 0 || !(g->parts = calloc(n, sizeof(*g->parts)))) {
        return false;
    }
    const char *self = rt_cluster_node_id(c);
    for (size_t i = 0; i < n; i++) {
        gather_part *p = &g->parts[i];
        const char *id = rt_cluster_node_at(c, i);
        if (strcmp(id, self) == 0) {
            continue;
        }
        p->g = g;
        snprintf(p->node, sizeof(p->node), "%s", id);
        wamp_err err =
                rt_cluster_request(c, id, RT_CLUSTER_META_SERVICE, text, strlen(text), on_reply, p);
        if (err == WAMP_OK) {
            g->pending++;
        } else {
            part_missing(p, wamp_strerror(err));
        }
    }
    return g->pending > 0;
}

static wamp_err meta_call(void *ctx, rt_session *caller, const json_t *args, const json_t *kwargs,
                          rt_local_reply *reply)
{
    meta_slot *s = ctx;
    wamp_err err = run_local(s->realm, procs[s->proc].uri, args, kwargs, reply);
    if (err != WAMP_OK || is_final(s, args, kwargs, reply) || rt_cluster_node_count(s->m->c) < 2) {
        return err;
    }
    char *text = request_text(s, args, kwargs, reply);
    gather *g = text ? calloc(1, sizeof(*g)) : NULL;
    if (!g) {
        free(text); /* this node's answer alone */
        return WAMP_OK;
    }
    g->m = s->m;
    g->proc = s->proc;
    g->local = *reply;
    *reply = (rt_local_reply){.request = g->local.request};
    rt_list_add_tail(&s->m->gathers, &g->in_m);
    if (!g->local.error_uri) {
        (void)merge(g, result_of(&g->local));
    }
    bool asked = rt_dealer_defer(caller, reply, &g->h) == WAMP_OK && scatter(g, text);
    free(text);
    if (!asked) {
        /* Nobody asked: this node's answer at once (gather_free() drops g->h). */
        reply->deferred = false;
        reply->error_uri = g->local.error_uri;
        reply->args = g->local.args;
        reply->kwargs = g->local.kwargs;
        g->local = (rt_local_reply){0};
        gather_free(g);
    }
    return WAMP_OK;
}

/* --- Life cycle ---------------------------------------------------------------------------- */

/* Puts rt_meta.c's procedures back for the first n slots. */
static void restore(rt_cluster_meta *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        meta_slot *s = &m->slots[i];
        rt_dealer *d = rt_realm_dealer(s->realm);
        rt_dealer_unregister_local(d, procs[s->proc].uri);
        (void)rt_dealer_register_local(d, procs[s->proc].uri, rt_meta_proc(procs[s->proc].uri),
                                       s->realm);
    }
}

wamp_err rt_cluster_meta_new(rt_router *rt, rt_cluster *c, rt_cluster_meta **out)
{
    *out = NULL;
    const rt_config *cfg = rt_router_config(rt);
    rt_cluster_meta *m = calloc(1, sizeof(*m));
    meta_slot *slots = calloc(cfg->n_realms * N_PROCS + 1, sizeof(*slots));
    if (!m || !slots) {
        free(m);
        free(slots);
        return WAMP_ENOMEM;
    }
    m->rt = rt;
    m->c = c;
    m->slots = slots;
    rt_list_init(&m->gathers);
    for (size_t i = 0; i < cfg->n_realms; i++) {
        rt_realm *r = rt_router_find_realm(rt, cfg->realms[i].name);
        for (size_t j = 0; r && rt_realm_has_meta_api(r) && j < N_PROCS; j++) {
            slots[m->n_slots++] = (meta_slot){.m = m, .realm = r, .proc = j};
        }
    }
    wamp_err err = rt_cluster_serve(c, RT_CLUSTER_META_SERVICE, on_request, m, &m->sub);
    for (size_t i = 0; err == WAMP_OK && i < m->n_slots; i++) {
        rt_dealer *d = rt_realm_dealer(slots[i].realm);
        rt_dealer_unregister_local(d, procs[slots[i].proc].uri);
        err = rt_dealer_register_local(d, procs[slots[i].proc].uri, meta_call, &slots[i]);
        if (err != WAMP_OK) {
            restore(m, i + 1);
            rt_cluster_unserve(c, m->sub);
        }
    }
    if (err != WAMP_OK) {
        free(slots);
        free(m);
        return err;
    }
    *out = m;
    return WAMP_OK;
}

void rt_cluster_meta_free(rt_cluster_meta *m)
{
    if (!m) {
        return;
    }
    rt_cluster_unserve(m->c, m->sub);
    restore(m, m->n_slots);
    RT_LIST_FOREACH_SAFE(it, nx, &m->gathers)
    {
        gather_free(RT_CONTAINER_OF(it, gather, in_m));
    }
    free(m->slots);
    free(m);
}
