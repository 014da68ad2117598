/* check_rt_cluster_dealer.c: calls crossing nodes over the fake bus (tests/support/fake_cluster.c)
 * with a stub dealer on each node: results with payload and caller disclosure, progressive
 * results, errors, the three cancel modes, timeouts, the caller leaving, the callee's or the
 * caller's node killed, or restarted at once (before the others' lists missed it), either node's
 * link down for a heartbeat and back, the limits, malformed envelopes, and payload passthru
 * (ppt_*) options both ways. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_clock.h"
#include "fake_cluster.h"
#include "rt_cluster.h"
#include "rt_cluster_dealer.h"

#define HB_MS    1000
#define TTL_MS   4000
#define GRACE_MS 1000
/* Where the sender's id starts in an envelope (after version, kind, flags, ser, xid, corr). */
#define HEAD_FROM_AT (4 + 8 + RT_CRPC_CORR_LEN)

/* What a node's stub dealer saw and does. */
typedef struct stub {
    rt_cluster_dealer *cd;
    const char *invoke_error; /* invoke answers this error (NULL: takes the call) */
    bool answer_on_kill;      /* cancel kill: answers wamp.error.canceled from inside */
    uint64_t next_inv;
    /* invoke */
    size_t n_invoked;
    uint64_t inv;
    char from[64], proc[128], authid[64], args[128];
    char ppt[128]; /* the call's ppt_* keys as sorted JSON, "" for none */
    uint64_t caller;
    bool disclose, receive_progress, has_corr;
    wamp_ser ser;
    /* cancel */
    size_t n_cancel;
    rt_crpc_mode mode;
    uint64_t cancel_inv;
    /* answer */
    size_t n_answers;
    char error[128], ans_args[128];
    char ans_ppt[128]; /* the answer's ppt_* keys as sorted JSON, "" for none */
    bool progress, ans_corr;
    uint64_t session, request;
} stub;

typedef struct node {
    rt_cluster *c;
    fake_link *l;
    stub st;
} node;

static fake_clock clk;
static fake_bus *bus;
static node nodes[3];
static rt_cluster_dealer_options opts;

static void copy_slice(char *dst, size_t cap, wamp_slice s)
{
    size_t n = s.len < cap - 1 ? s.len : cap - 1;
    if (n) {
        memcpy(dst, s.p, n);
    }
    dst[n] = '\0';
}

/* v as compact sorted JSON into dst ("" for NULL). */
static void dump(char *dst, size_t cap, const json_t *v)
{
    char *text = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    snprintf(dst, cap, "%s", text ? text : "");
    free(text);
}

static const char *stub_invoke(void *ctx, const char *from, const rt_crpc_call *call,
                               uint64_t *invocation)
{
    stub *s = ctx;
    s->n_invoked++;
    snprintf(s->from, sizeof(s->from), "%s", from);
    snprintf(s->proc, sizeof(s->proc), "%s", call->procedure);
    snprintf(s->authid, sizeof(s->authid), "%s", call->authid ? call->authid : "");
    copy_slice(s->args, sizeof(s->args), call->payload.args);
    s->caller = call->caller;
    s->disclose = call->disclose;
    s->receive_progress = call->receive_progress;
    s->has_corr = call->corr && call->corr[0] == 0xAB;
    s->ser = call->payload.ser;
    dump(s->ppt, sizeof(s->ppt), call->ppt);
    if (s->invoke_error) {
        return s->invoke_error;
    }
    *invocation = s->inv = ++s->next_inv;
    return NULL;
}

static void stub_cancel(void *ctx, const char *realm, uint64_t invocation, rt_crpc_mode mode)
{
    stub *s = ctx;
    ck_assert_str_eq(realm, "realm1");
    s->n_cancel++;
    s->mode = mode;
    s->cancel_inv = invocation;
    if (mode == RT_CRPC_KILL && s->answer_on_kill) {
        rt_crpc_answer a = {.error = "wamp.error.canceled"};
        ck_assert(rt_cluster_dealer_answer(s->cd, invocation, &a));
    }
}

static void stub_answer(void *ctx, const rt_crpc_caller *to, const rt_crpc_answer *a)
{
    stub *s = ctx;
    ck_assert_str_eq(to->realm, "realm1");
    s->n_answers++;
    snprintf(s->error, sizeof(s->error), "%s", a->error ? a->error : "");
    copy_slice(s->ans_args, sizeof(s->ans_args), a->payload.args);
    dump(s->ans_ppt, sizeof(s->ans_ppt), a->ppt);
    s->progress = a->progress;
    s->ans_corr = to->corr != NULL;
    s->session = to->session;
    s->request = to->request;
}

static const rt_cluster_dealer_ops stub_ops = {stub_invoke, stub_cancel, stub_answer};

static void setup(void)
{
    clk.now_us = 1000000;
    bus = fake_bus_new(&clk);
    ck_assert_ptr_nonnull(bus);
    memset(nodes, 0, sizeof(nodes));
    opts = (rt_cluster_dealer_options){.max_message = 4096,
                                       .max_calls_out = 100,
                                       .max_calls_in = 100,
                                       .peer_grace_ms = GRACE_MS,
                                       .first_xid = 1};
}

static void teardown(void)
{
    for (size_t i = 0; i < 3; i++) {
        rt_cluster_dealer_free(nodes[i].st.cd);
    }
    fake_bus_free(bus);
    for (size_t i = 0; i < 3; i++) {
        rt_cluster_free(nodes[i].c);
    }
}

/* Node i (id "a", "b", "c") joined, with its module and stub. */
static node *start(size_t i)
{
    static const char *const ids[] = {"a", "b", "c"};
    node *n = &nodes[i];
    n->c = fake_cluster_member_new(bus, &clk, ids[i], i + 1, HB_MS, TTL_MS, 500, &n->l);
    ck_assert_ptr_nonnull(n->c);
    ck_assert_int_eq(rt_cluster_dealer_new(n->c, &opts, &stub_ops, &n->st, &n->st.cd), WAMP_OK);
    fake_link_set_up(n->l, true);
    fake_bus_run(bus);
    return n;
}

/* kill -9 of node n. */
static void kill_node(node *n)
{
    rt_cluster_dealer_free(n->st.cd);
    fake_link_free(n->l);
    rt_cluster_free(n->c);
    memset(n, 0, sizeof(*n));
}

/* Advances the clock by ms in 100 ms ticks, running every live node and the bus. */
static void run_ms(uint64_t ms)
{
    fake_bus_run(bus);
    for (uint64_t t = 0; t < ms; t += 100) {
        fake_clock_advance_ms(&clk, 100);
        for (size_t i = 0; i < 3; i++) {
            if (nodes[i].c) {
                rt_cluster_tick(nodes[i].c);
                rt_cluster_dealer_tick(nodes[i].st.cd, clk.now_us);
            }
        }
        fake_bus_run(bus);
    }
}

static const uint8_t corr[RT_CRPC_CORR_LEN] = {0xAB, 1, 2, 3};

/* A call of com.example.add from session 7 (request req) on `from` to node `to`. */
static wamp_err call(node *from, const char *to, uint64_t req, bool progress, uint64_t deadline)
{
    static const char args[] = "[1,2]";
    rt_crpc_call c = {.realm = "realm1",
                      .procedure = "com.example.add",
                      .caller = 7,
                      .disclose = true,
                      .authid = "alice",
                      .authrole = "user",
                      .receive_progress = progress,
                      .corr = corr,
                      .payload = {WAMP_SER_JSON, {(const unsigned char *)args, 5}, {NULL, 0}}};
    return rt_cluster_dealer_call(from->st.cd, to, req, &c, deadline);
}

static bool answer(node *n, uint64_t inv, const char *error, bool progress, const char *args)
{
    rt_crpc_answer a = {.error = error,
                        .progress = progress,
                        .payload = {args ? WAMP_SER_JSON : 0,
                                    {(const unsigned char *)args, args ? strlen(args) : 0},
                                    {NULL, 0}}};
    return rt_cluster_dealer_answer(n->st.cd, inv, &a);
}

static rt_cluster_dealer_stats stats(node *n)
{
    rt_cluster_dealer_stats s;
    rt_cluster_dealer_stats_get(n->st.cd, &s);
    return s;
}

START_TEST(test_call_result)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 11, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(a->st.n_invoked, 1);
    ck_assert_str_eq(a->st.from, "b");
    ck_assert_str_eq(a->st.proc, "com.example.add");
    ck_assert_str_eq(a->st.args, "[1,2]");
    ck_assert_int_eq(a->st.ser, WAMP_SER_JSON);
    ck_assert_uint_eq(a->st.caller, 7);
    ck_assert(a->st.disclose);
    ck_assert_str_eq(a->st.authid, "alice");
    ck_assert(a->st.has_corr);
    ck_assert_uint_eq(stats(a).pending_in, 1);
    ck_assert_uint_eq(stats(b).pending_out, 1);
    ck_assert(answer(a, a->st.inv, NULL, false, "[3]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "");
    ck_assert_str_eq(b->st.ans_args, "[3]");
    ck_assert_uint_eq(b->st.session, 7);
    ck_assert_uint_eq(b->st.request, 11);
    ck_assert(b->st.ans_corr);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    ck_assert_uint_eq(stats(b).pending_out, 0);
    /* A second answer to the same invocation finds nothing. */
    ck_assert(!answer(a, a->st.inv, NULL, false, "[4]"));
    ck_assert_uint_eq(stats(b).calls_out, 1);
    ck_assert_uint_eq(stats(a).calls_in, 1);
}

END_TEST

START_TEST(test_progressive_results)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, true, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(a->st.receive_progress);
    ck_assert(answer(a, a->st.inv, NULL, true, "[1]"));
    ck_assert(answer(a, a->st.inv, NULL, true, "[2]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert(b->st.progress);
    ck_assert_str_eq(b->st.ans_args, "[2]");
    ck_assert_uint_eq(stats(b).pending_out, 1);
    ck_assert(answer(a, a->st.inv, NULL, false, "[3]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 3);
    ck_assert(!b->st.progress);
    ck_assert_uint_eq(stats(b).pending_out, 0);
    /* A caller that did not ask for progress gets the final result only. */
    ck_assert_int_eq(call(b, "a", 2, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(!a->st.receive_progress);
    ck_assert(answer(a, a->st.inv, NULL, true, "[1]"));
    ck_assert(answer(a, a->st.inv, "com.example.oops", false, "[\"no\"]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 4);
    ck_assert_str_eq(b->st.error, "com.example.oops");
    ck_assert_str_eq(b->st.ans_args, "[\"no\"]");
}

END_TEST

START_TEST(test_invoke_refused)
{
    node *a = start(0), *b = start(1);
    a->st.invoke_error = "wamp.error.no_such_procedure";
    ck_assert_int_eq(call(b, "a", 5, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.no_such_procedure");
    ck_assert_uint_eq(b->st.request, 5);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    ck_assert_uint_eq(stats(b).pending_out, 0);
    /* Unknown nodes and this node are not called. */
    ck_assert_int_eq(call(b, "zz", 6, false, 0), WAMP_ENOTFOUND);
    ck_assert_int_eq(call(b, "b", 6, false, 0), WAMP_ENOTFOUND);
}

END_TEST

START_TEST(test_cancel_modes)
{
    node *a = start(0), *b = start(1);
    /* skip: B forgets the call, A forgets it without interrupting; the late answer is lost. */
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    uint64_t inv = a->st.inv;
    ck_assert(rt_cluster_dealer_cancel(b->st.cd, 7, 1, RT_CRPC_SKIP));
    ck_assert(!rt_cluster_dealer_cancel(b->st.cd, 7, 1, RT_CRPC_SKIP));
    fake_bus_run(bus);
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_int_eq(a->st.mode, RT_CRPC_SKIP);
    ck_assert_uint_eq(a->st.cancel_inv, inv);
    ck_assert(!answer(a, inv, NULL, false, "[1]"));
    ck_assert_uint_eq(b->st.n_answers, 0);
    /* kill: A interrupts, the callee's answer still reaches B. */
    ck_assert_int_eq(call(b, "a", 2, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(rt_cluster_dealer_cancel(b->st.cd, 7, 2, RT_CRPC_KILL));
    fake_bus_run(bus);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILL);
    ck_assert_uint_eq(stats(b).pending_out, 1);
    ck_assert(answer(a, a->st.inv, "wamp.error.canceled", false, NULL));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.canceled");
    ck_assert_uint_eq(b->st.request, 2);
    /* kill answered from inside the dealer's cancel (a callee that cannot cancel). */
    a->st.answer_on_kill = true;
    ck_assert_int_eq(call(b, "a", 3, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(rt_cluster_dealer_cancel(b->st.cd, 7, 3, RT_CRPC_KILL));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert_uint_eq(b->st.request, 3);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    /* killnowait: both forget it at once. */
    ck_assert_int_eq(call(b, "a", 4, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(rt_cluster_dealer_cancel(b->st.cd, 7, 4, RT_CRPC_KILLNOWAIT));
    fake_bus_run(bus);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILLNOWAIT);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    ck_assert_uint_eq(stats(b).pending_out, 0);
    ck_assert_uint_eq(b->st.n_answers, 2);
}

END_TEST

START_TEST(test_timeout)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, clk.now_us + 300 * 1000), WAMP_OK);
    ck_assert_int_eq(call(b, "a", 2, false, clk.now_us + 5000 * 1000), WAMP_OK);
    run_ms(200);
    ck_assert_uint_eq(b->st.n_answers, 0);
    run_ms(200);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.timeout");
    ck_assert_uint_eq(b->st.request, 1);
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILLNOWAIT);
    ck_assert_uint_eq(stats(b).timeouts, 1);
    ck_assert_uint_eq(stats(a).pending_in, 1);
    /* The other call still completes normally and leaves the deadline list. */
    ck_assert(answer(a, a->st.inv, NULL, false, "[9]"));
    run_ms(6000);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert_str_eq(b->st.error, "");
    ck_assert_uint_eq(stats(b).timeouts, 1);
}

END_TEST

START_TEST(test_caller_left)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    ck_assert_int_eq(call(b, "a", 2, false, clk.now_us + 1000 * 1000), WAMP_OK);
    fake_bus_run(bus);
    rt_cluster_dealer_caller_left(b->st.cd, 7);
    fake_bus_run(bus);
    ck_assert_uint_eq(a->st.n_cancel, 2);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILLNOWAIT);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    ck_assert_uint_eq(stats(b).pending_out, 0);
    run_ms(2000);
    ck_assert_uint_eq(b->st.n_answers, 0);
}

END_TEST

START_TEST(test_callee_node_killed)
{
    node *a = start(0), *b = start(1), *c = start(2);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    ck_assert_int_eq(call(b, "c", 2, false, 0), WAMP_OK);
    fake_bus_run(bus);
    kill_node(a);
    run_ms(TTL_MS + 2 * HB_MS + 100);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.canceled");
    ck_assert_uint_eq(b->st.request, 1);
    ck_assert_uint_eq(stats(b).node_gone, 1);
    /* The call to c is untouched. */
    ck_assert(answer(c, c->st.inv, NULL, false, "[1]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert_uint_eq(b->st.request, 2);
    ck_assert_int_eq(call(b, "a", 3, false, 0), WAMP_ENOTFOUND);
}

END_TEST

START_TEST(test_caller_node_killed)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    uint64_t inv = a->st.inv;
    kill_node(b);
    run_ms(TTL_MS + 2 * HB_MS + GRACE_MS + 100);
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILLNOWAIT);
    ck_assert_uint_eq(a->st.cancel_inv, inv);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    ck_assert(!answer(a, inv, NULL, false, "[1]"));
}

END_TEST

START_TEST(test_link_down_and_back)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    fake_link_set_up(b->l, false);
    run_ms(100);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.network_failure");
    ck_assert_uint_eq(stats(b).link_down, 1);
    ck_assert_int_eq(call(b, "a", 2, false, 0), WAMP_ECLOSED);
    /* A drops B's call once B is gone from its list. */
    run_ms(TTL_MS + 2 * HB_MS + GRACE_MS + 100);
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    fake_link_set_up(b->l, true);
    run_ms(HB_MS * 2);
    ck_assert_int_eq(call(b, "a", 3, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(answer(a, a->st.inv, NULL, false, "[1]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert_uint_eq(b->st.request, 3);
    ck_assert_str_eq(b->st.error, "");
}

END_TEST

/* Node i killed with kill -9 and started again at once: the same id, another instance; it joins
 * once its old key expired, before the other nodes' lists missed it twice. The first `lose`
 * messages the new process publishes are lost (1: its join announcement, 2: and the heartbeat
 * reading behind it). Returns the node once it joined again; *missed says whether `other` ever
 * lost it from its list meanwhile. */
static node *restart(size_t i, node *other, size_t lose, bool *missed)
{
    static const char *const ids[] = {"a", "b", "c"};
    kill_node(&nodes[i]);
    node *n = &nodes[i];
    n->c = fake_cluster_member_new(bus, &clk, ids[i], 77 + i, HB_MS, TTL_MS, 500, &n->l);
    ck_assert_ptr_nonnull(n->c);
    ck_assert_int_eq(rt_cluster_dealer_new(n->c, &opts, &stub_ops, &n->st, &n->st.cd), WAMP_OK);
    fake_link_drop(n->l, lose);
    fake_link_set_up(n->l, true);
    *missed = false;
    for (int t = 0; t < 100 && rt_cluster_member_state_get(n->c) != RT_CLUSTER_MEMBER_JOINED; t++) {
        run_ms(100);
        *missed |= !rt_cluster_has_node(other->c, ids[i]);
    }
    ck_assert_int_eq(rt_cluster_member_state_get(n->c), RT_CLUSTER_MEMBER_JOINED);
    return n;
}

/* The caller's node restarts at once: the node it calls cancels the old process's calls when the
 * new one joins (their callees are interrupted), and a late answer to one of them reaches no one,
 * least of all the new process's callers. */
START_TEST(test_caller_node_restarted)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    uint64_t old_inv = a->st.inv;
    bool missed;
    b = restart(1, a, 0, &missed);
    ck_assert(!missed); /* (what makes it hard: a never saw b go) */
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILLNOWAIT);
    ck_assert_uint_eq(a->st.cancel_inv, old_inv);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    ck_assert_uint_eq(stats(a).node_gone, 1);
    ck_assert_int_eq(call(b, "a", 50, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(!answer(a, old_inv, NULL, false, "[\"old\"]")); /* forgotten */
    ck_assert(answer(a, a->st.inv, NULL, false, "[\"new\"]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_uint_eq(b->st.request, 50);
    ck_assert_str_eq(b->st.ans_args, "[\"new\"]");
}

END_TEST

/* The callee's node restarts at once: its callers on other nodes get wamp.error.network_failure
 * when it joins again, not a wait without end. */
START_TEST(test_callee_node_restarted)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    bool missed;
    a = restart(0, b, 0, &missed);
    ck_assert(!missed);
    run_ms(HB_MS);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_uint_eq(b->st.request, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.network_failure");
    ck_assert_uint_eq(stats(b).pending_out, 0);
    ck_assert_uint_eq(stats(b).node_gone, 1);
    /* The new process serves. */
    ck_assert_int_eq(call(b, "a", 2, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(answer(a, a->st.inv, NULL, false, "[2]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert_str_eq(b->st.error, "");
}

END_TEST

/* The callee's node restarts at once and both of its join messages are lost (the bus is
 * at-most-once): its next heartbeat reading tells the caller's node, whose callers waiting on
 * the old process then get wamp.error.network_failure, and the new process gets CANCEL
 * killnowait for each (ignored: it never had them). A call the new process took before that
 * reading came is failed too, and canceled there. */
START_TEST(test_callee_node_restarted_unannounced)
{
    node *a = start(0), *b = start(1);
    run_ms(HB_MS); /* b has heard a's heartbeat */
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    bool missed;
    a = restart(0, b, 2, &missed);
    ck_assert(!missed);
    ck_assert_uint_eq(fake_bus_dropped(bus), 2);
    ck_assert_uint_eq(b->st.n_answers, 0);                /* b cannot know yet */
    ck_assert_int_eq(call(b, "a", 2, false, 0), WAMP_OK); /* to the new process */
    fake_bus_run(bus);
    ck_assert_uint_eq(a->st.n_invoked, 1);
    run_ms(HB_MS);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert_str_eq(b->st.error, "wamp.error.network_failure");
    ck_assert_uint_eq(stats(b).pending_out, 0);
    ck_assert_uint_eq(stats(b).node_gone, 2);
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILLNOWAIT);
    ck_assert_uint_eq(a->st.cancel_inv, a->st.inv);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    /* The new process serves. */
    ck_assert_int_eq(call(b, "a", 3, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert(answer(a, a->st.inv, NULL, false, "[3]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 3);
    ck_assert_uint_eq(b->st.request, 3);
    ck_assert_str_eq(b->st.error, "");
}

END_TEST

/* The caller's node restarts at once, its announcement lost: its heartbeat reading tells the
 * callee's node of the join, which leaves the calls served for it (one of them could be of the
 * new process): the old one ends when its callee answers, and a call of the new process is
 * answered. */
START_TEST(test_caller_node_restarted_unannounced)
{
    node *a = start(0), *b = start(1);
    run_ms(HB_MS);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    uint64_t old_inv = a->st.inv;
    bool missed;
    opts.first_xid = 1000; /* the new process's own (random in the router) */
    b = restart(1, a, 1, &missed);
    ck_assert(!missed);
    ck_assert_int_eq(call(b, "a", 50, false, 0), WAMP_OK);
    fake_bus_run(bus);
    uint64_t new_inv = a->st.inv;
    run_ms(HB_MS);
    ck_assert_uint_eq(a->st.n_cancel, 0);
    ck_assert_uint_eq(stats(a).pending_in, 2);
    ck_assert(answer(a, old_inv, NULL, false, "[\"old\"]")); /* into the void */
    ck_assert(answer(a, new_inv, NULL, false, "[\"new\"]"));
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_uint_eq(b->st.request, 50);
    ck_assert_str_eq(b->st.ans_args, "[\"new\"]");
}

END_TEST

/* The callee's node loses its link for a heartbeat (less than node_ttl): it ends the calls it
 * served (their callees interrupted) and, when it joins again, its callers on other nodes learn
 * that theirs are over. */
START_TEST(test_callee_link_flap)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    fake_link_set_up(a->l, false);
    run_ms(HB_MS);
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILLNOWAIT);
    ck_assert_uint_eq(b->st.n_answers, 0); /* (b cannot know yet) */
    fake_link_set_up(a->l, true);
    run_ms(2 * HB_MS);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.network_failure");
    ck_assert_uint_eq(stats(b).pending_out, 0);
}

END_TEST

/* The caller's node loses its link for a heartbeat: it answers its caller at once, and when it
 * joins again, the callee's node cancels the call (no call held there for a caller long gone). */
START_TEST(test_caller_link_flap)
{
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, clk.now_us + 2000 * 1000), WAMP_OK);
    fake_bus_run(bus);
    uint64_t inv = a->st.inv;
    fake_link_set_up(b->l, false);
    run_ms(HB_MS);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.network_failure");
    ck_assert_uint_eq(stats(a).pending_in, 1);
    fake_link_set_up(b->l, true);
    run_ms(2 * HB_MS);
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_uint_eq(a->st.cancel_inv, inv);
    ck_assert_uint_eq(stats(a).pending_in, 0);
}

END_TEST

START_TEST(test_limits)
{
    opts.max_calls_out = 2;
    opts.max_calls_in = 1;
    opts.max_message = 200;
    node *a = start(0), *b = start(1);
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    ck_assert_int_eq(call(b, "a", 2, false, 0), WAMP_OK);
    ck_assert_int_eq(call(b, "a", 3, false, 0), WAMP_EAGAIN);
    fake_bus_run(bus);
    /* A serves one: the second is refused. */
    ck_assert_uint_eq(a->st.n_invoked, 1);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.error, "wamp.error.unavailable");
    ck_assert_uint_eq(b->st.request, 2);
    ck_assert_uint_eq(stats(a).refused, 1);
    ck_assert_uint_eq(stats(b).refused, 1);
    /* An answer over max_message becomes payload_size_exceeded; a progressive one also ends the
     * call and interrupts the callee. */
    char big[300];
    memset(big, '1', sizeof(big) - 1);
    big[0] = '[';
    big[sizeof(big) - 2] = ']';
    big[sizeof(big) - 1] = '\0';
    ck_assert(answer(a, a->st.inv, NULL, true, big));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert_str_eq(b->st.error, "wamp.error.payload_size_exceeded");
    ck_assert_uint_eq(a->st.n_cancel, 1);
    ck_assert_int_eq(a->st.mode, RT_CRPC_KILLNOWAIT);
    ck_assert_uint_eq(stats(a).too_big, 1);
    ck_assert_uint_eq(stats(a).pending_in, 0);
    /* A call over max_message is not sent. */
    rt_crpc_call c = {.realm = "realm1",
                      .procedure = "p",
                      .payload = {WAMP_SER_JSON, {(const unsigned char *)big, 299}, {NULL, 0}}};
    ck_assert_int_eq(rt_cluster_dealer_call(b->st.cd, "a", 9, &c, 0), WAMP_ETOOBIG);
    ck_assert_uint_eq(stats(b).pending_out, 0);
}

END_TEST

/* Payload passthru mode: the call's ppt_* keys (only those) reach A, a YIELD's and an ERROR's come
 * back to B; a ppt_* object that is not acceptable makes the envelope malformed. */
START_TEST(test_payload_passthru)
{
    node *a = start(0), *b = start(1);
    json_t *opts_ppt =
            json_pack("{s:s, s:s, s:i}", "ppt_scheme", "x_test", "ppt_keyid", "k1", "timeout", 5);
    static const char args[] = "[\"\\u0000AQID\"]";
    rt_crpc_call c = {
            .realm = "realm1",
            .procedure = "com.example.ppt",
            .caller = 7,
            .ppt = opts_ppt,
            .payload = {WAMP_SER_JSON, {(const unsigned char *)args, sizeof(args) - 1}, {NULL, 0}}};
    ck_assert_int_eq(rt_cluster_dealer_call(b->st.cd, "a", 1, &c, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(a->st.n_invoked, 1);
    ck_assert_str_eq(a->st.ppt, "{\"ppt_keyid\":\"k1\",\"ppt_scheme\":\"x_test\"}");
    ck_assert_str_eq(a->st.args, args);
    json_t *ans_ppt = json_pack("{s:s, s:b}", "ppt_scheme", "x_test", "progress", 0);
    rt_crpc_answer ans = {.ppt = ans_ppt,
                          .payload = {WAMP_SER_JSON, {(const unsigned char *)"[1]", 3}, {NULL, 0}}};
    ck_assert(rt_cluster_dealer_answer(a->st.cd, a->st.inv, &ans));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_str_eq(b->st.ans_ppt, "{\"ppt_scheme\":\"x_test\"}");
    /* An ERROR's ppt_* keys; a call without any has none. */
    ck_assert_int_eq(rt_cluster_dealer_call(b->st.cd, "a", 2, &c, 0), WAMP_OK);
    fake_bus_run(bus);
    ans.error = "com.example.failed";
    ck_assert(rt_cluster_dealer_answer(a->st.cd, a->st.inv, &ans));
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 2);
    ck_assert_str_eq(b->st.error, "com.example.failed");
    ck_assert_str_eq(b->st.ans_ppt, "{\"ppt_scheme\":\"x_test\"}");
    ck_assert_int_eq(call(b, "a", 3, false, 0), WAMP_OK); /* xid 3 */
    fake_bus_run(bus);
    ck_assert_str_eq(a->st.ppt, "");
    json_decref(opts_ppt);
    json_decref(ans_ppt);
    /* A YIELD from "a" for xid 3 whose ppt_* object is not acceptable, then one that is. */
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    static const char *const ppts[] = {"{\"ppt_scheme\":1}", "{\"ppt_keyid\":\"k\"}", "[1]",
                                       "{\"ppt_scheme\":\"y\"}"};
    for (size_t i = 0; i < 4; i++) {
        unsigned char forged[96];
        size_t n = 0, len = strlen(ppts[i]);
        forged[n++] = 1;
        forged[n++] = 3; /* YIELD */
        forged[n++] = 4; /* ppt */
        forged[n++] = 0;
        forged[n++] = 3; /* xid 3, little-endian */
        memset(forged + n, 0, 7 + RT_CRPC_CORR_LEN);
        n += 7 + RT_CRPC_CORR_LEN;
        forged[n++] = 1;
        forged[n++] = 0;
        forged[n++] = 'a';
        forged[n++] = (unsigned char)len;
        forged[n++] = 0;
        memcpy(forged + n, ppts[i], len);
        n += len;
        memset(forged + n, 0, 8); /* no payload */
        n += 8;
        ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.node.b.rpc", NULL, forged, n), WAMP_OK);
        fake_bus_run(bus);
        ck_assert_uint_eq(stats(b).malformed, i < 3 ? i + 1 : 3);
    }
    ck_assert_uint_eq(b->st.n_answers, 3);
    ck_assert_uint_eq(b->st.request, 3);
    ck_assert_str_eq(b->st.ans_ppt, "{\"ppt_scheme\":\"y\"}");
    fake_link_free(raw);
}

END_TEST

static unsigned char spied[512];
static size_t spied_len;

static void spy(void *arg, const char *subject, const char *reply, const void *data, size_t len)
{
    (void)arg;
    (void)subject;
    (void)reply;
    ck_assert_uint_le(len, sizeof(spied));
    memcpy(spied, data, len);
    spied_len = len;
}

START_TEST(test_malformed_envelopes)
{
    node *a = start(0), *b = start(1);
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    uint64_t sub;
    ck_assert_int_eq(fake_link_ops.subscribe(raw, "wsc.node.a.rpc", NULL, spy, NULL, &sub),
                     WAMP_OK);
    static const unsigned char junk[] = {1, 9, 0, 0, 1, 2, 3};
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.node.a.rpc", NULL, junk, sizeof(junk)),
                     WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(a).malformed, 1);
    /* A real CALL, seen by the spy, then replayed cut short at every length: each is dropped. */
    ck_assert_int_eq(call(b, "a", 1, false, 0), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(a->st.n_invoked, 1);
    ck_assert_uint_gt(spied_len, 40);
    for (size_t n = 0; n < spied_len; n++) {
        ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.node.a.rpc", NULL, spied, n), WAMP_OK);
    }
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(a).malformed, 1 + spied_len);
    ck_assert_uint_eq(a->st.n_invoked, 1);
    /* A YIELD for B's call coming from a node that does not hold it ("c") is not taken. */
    unsigned char forged[64];
    size_t n = 0;
    forged[n++] = 1;
    forged[n++] = 3; /* YIELD */
    forged[n++] = 0;
    forged[n++] = 0;
    forged[n++] = 1; /* xid 1, little-endian */
    memset(forged + n, 0, 7 + RT_CRPC_CORR_LEN);
    n += 7 + RT_CRPC_CORR_LEN;
    forged[n++] = 1;
    forged[n++] = 0;
    forged[n++] = 'c';
    memset(forged + n, 0, 8); /* no payload */
    n += 8;
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.node.b.rpc", NULL, forged, n), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(b).malformed, 0);
    ck_assert_uint_eq(stats(b).unmatched, 1);
    ck_assert_uint_eq(b->st.n_answers, 0);
    /* The same from "a" is B's answer. */
    forged[HEAD_FROM_AT + 2] = 'a';
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.node.b.rpc", NULL, forged, n), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(b->st.n_answers, 1);
    ck_assert_uint_eq(b->st.request, 1);
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rt_cluster_dealer");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_call_result);
    tcase_add_test(tc, test_progressive_results);
    tcase_add_test(tc, test_invoke_refused);
    tcase_add_test(tc, test_cancel_modes);
    tcase_add_test(tc, test_timeout);
    tcase_add_test(tc, test_caller_left);
    tcase_add_test(tc, test_callee_node_killed);
    tcase_add_test(tc, test_caller_node_killed);
    tcase_add_test(tc, test_link_down_and_back);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_caller_node_restarted);
    tcase_add_test(tc, test_callee_node_restarted);
    tcase_add_test(tc, test_callee_node_restarted_unannounced);
    tcase_add_test(tc, test_caller_node_restarted_unannounced);
    tcase_add_test(tc, test_callee_link_flap);
    tcase_add_test(tc, test_caller_link_flap);
    tcase_add_test(tc, test_malformed_envelopes);
    tcase_add_test(tc, test_payload_passthru);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
