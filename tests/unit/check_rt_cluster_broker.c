/* check_rt_cluster_broker.c: publish/subscribe across three nodes, each a router of its own
 * (tests/support/test_router.c) with its sessions on the fake transport, linked by the fake bus:
 * exact, prefix and wildcard interest, one message per interested node and each EVENT once,
 * every PUBLISH option, retained events on another node (one per topic in the cluster: a node
 * holding a later one answers an older notice, ties by node id, and a node tells its own again
 * when it joins after its link was down), a node leaving, the link down, the size limit and
 * messages that are not valid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "fake_clock.h"
#include "fake_cluster.h"
#include "fake_transport.h"
#include "rt_broker.h"
#include "rt_cluster.h"
#include "rt_cluster_broker.h"
#include "rt_cluster_envelope.h"
#include "rt_metrics.h"
#include "rt_realm.h"
#include "test_router.h"
#include "wamp_types.h"

#define HB_MS   1000
#define TTL_MS  4000
#define N_NODES 3

typedef struct node {
    test_router t;
    rt_cluster *c;
    fake_link *l;
    rt_cluster_broker *cb;
} node;

static fake_clock clk;
static fake_bus *bus;
static node nodes[N_NODES];

/* Every connection a test made, with its node, freed by kill_node() and teardown. */
#define MAX_CONNS 32

static struct {
    fake_conn *c;
    size_t node;
} conns[MAX_CONNS];

static fake_conn *track(fake_conn *c, size_t node_i)
{
    for (size_t i = 0; i < MAX_CONNS; i++) {
        if (!conns[i].c) {
            conns[i].c = c;
            conns[i].node = node_i;
            return c;
        }
    }
    ck_abort_msg("too many connections");
    return NULL;
}

/* Frees the connections of node_i (every node: N_NODES). */
static void free_conns(size_t node_i)
{
    for (size_t i = 0; i < MAX_CONNS; i++) {
        if (conns[i].c && (node_i == N_NODES || conns[i].node == node_i)) {
            fake_conn_free(conns[i].c);
            conns[i].c = NULL;
        }
    }
}

/* The test freed c itself (a session leaving). */
static void untrack(fake_conn *c)
{
    for (size_t i = 0; i < MAX_CONNS; i++) {
        if (conns[i].c == c) {
            conns[i].c = NULL;
        }
    }
    fake_conn_free(c);
}

static void start_node(size_t i, size_t max_message)
{
    static const char *const ids[] = {"a", "b", "c"};
    node *n = &nodes[i];
    test_router_init(&n->t);
    n->t.clock.now_us = clk.now_us;
    if (max_message) {
        n->t.cfg.limits.max_message_size = max_message;
    }
    n->c = fake_cluster_member_new(bus, &n->t.clock, ids[i], i + 1, HB_MS, TTL_MS, 500, &n->l);
    ck_assert_ptr_nonnull(n->c);
    rt_cluster_broker_options bo = {.ops = &fake_link_ops,
                                    .link = n->l,
                                    .instance = i + 1,
                                    .beat_ms = HB_MS,
                                    .hold_ms = TTL_MS,
                                    .max_entries = 1000};
    ck_assert_int_eq(rt_cluster_broker_new(n->t.rt, n->c, &bo, &n->cb), WAMP_OK);
    fake_link_set_up(n->l, true);
    fake_bus_run(bus);
    ck_assert_int_eq(rt_cluster_member_state_get(n->c), RT_CLUSTER_MEMBER_JOINED);
}

static void setup_sized(size_t max_message)
{
    clk.now_us = 1000000;
    bus = fake_bus_new(&clk);
    ck_assert_ptr_nonnull(bus);
    memset(nodes, 0, sizeof(nodes));
    memset(conns, 0, sizeof(conns));
    for (size_t i = 0; i < N_NODES; i++) {
        start_node(i, max_message);
    }
}

static void setup(void)
{
    setup_sized(0);
}

/* A kill -9 of node i: no leave, its link vanishes. Its sessions go with its router. */
static void kill_node(size_t i)
{
    node *n = &nodes[i];
    rt_cluster_broker_free(n->cb); /* first: its sessions' leaving is not announced */
    free_conns(i);
    fake_link_free(n->l);
    rt_cluster_free(n->c);
    test_router_fini(&n->t);
    memset(n, 0, sizeof(*n));
}

static void teardown(void)
{
    for (size_t i = 0; i < N_NODES; i++) {
        if (nodes[i].cb) {
            rt_cluster_broker_free(nodes[i].cb);
        }
    }
    free_conns(N_NODES);
    fake_bus_free(bus);
    for (size_t i = 0; i < N_NODES; i++) {
        if (nodes[i].c) {
            rt_cluster_free(nodes[i].c);
            test_router_fini(&nodes[i].t);
        }
    }
}

/* Advances every clock by ms in 100 ms ticks, running every live node and the bus. */
static void run_ms(uint64_t ms)
{
    fake_bus_run(bus);
    for (uint64_t t = 0; t < ms; t += 100) {
        fake_clock_advance_ms(&clk, 100);
        for (size_t i = 0; i < N_NODES; i++) {
            if (nodes[i].c) {
                fake_clock_advance_ms(&nodes[i].t.clock, 100);
                rt_cluster_tick(nodes[i].c);
                rt_cluster_broker_tick(nodes[i].cb);
            }
        }
        fake_bus_run(bus);
    }
}

static fake_conn *joined(size_t node_i, wamp_ser ser)
{
    return track(fake_conn_new_joined(nodes[node_i].t.rt, ser, "realm1"), node_i);
}

/* SUBSCRIBE with options (JSON text); returns the subscription id. The table's delta goes out. */
static int64_t subscribe_opts(fake_conn *c, const char *topic, const char *opts)
{
    fake_conn_send(c, "[32, 7, %s, \"%s\"]", opts, topic);
    json_t *m = fake_conn_next(c);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    int64_t id = fake_msg_int(m, 2);
    json_decref(m);
    fake_bus_run(bus);
    return id;
}

static int64_t subscribe(fake_conn *c, const char *topic)
{
    return subscribe_opts(c, topic, "{}");
}

static rt_cluster_broker_stats stats(size_t i)
{
    rt_cluster_broker_stats st;
    rt_cluster_broker_stats_get(nodes[i].cb, &st);
    return st;
}

/* The next message of c is an EVENT for sub; returns it (owned). */
static json_t *expect_event(fake_conn *c, int64_t sub)
{
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_EVENT);
    ck_assert_int_eq(fake_msg_int(m, 1), sub);
    return m;
}

static json_int_t details_int(const json_t *ev, const char *key)
{
    return json_integer_value(json_object_get(json_array_get(ev, 3), key));
}

static const char *details_str(const json_t *ev, const char *key)
{
    return json_string_value(json_object_get(json_array_get(ev, 3), key));
}

START_TEST(test_event_reaches_subscribers_on_other_nodes_once)
{
    fake_conn *pub = joined(0, WAMP_SER_JSON);
    fake_conn *sa = joined(0, WAMP_SER_JSON);
    fake_conn *sb1 = joined(1, WAMP_SER_JSON);
    fake_conn *sb2 = joined(1, WAMP_SER_MSGPACK);
    fake_conn *sc = joined(2, WAMP_SER_MSGPACK);
    int64_t ida = subscribe(sa, "com.x.t");
    int64_t idb = subscribe(sb1, "com.x.t");
    ck_assert_int_eq(subscribe(sb2, "com.x.t"), idb);
    int64_t idc = subscribe(sc, "com.x.t");
    fake_conn_send(pub, "[16, 5, {\"acknowledge\": true}, \"com.x.t\", [1, \"two\"], {\"k\": 3}]");
    fake_bus_run(bus);
    json_t *ack = fake_conn_next(pub);
    ck_assert_int_eq(fake_msg_int(ack, 0), WAMP_MSG_PUBLISHED);
    json_int_t publication = fake_msg_int(ack, 2);
    json_decref(ack);

    struct {
        fake_conn *c;
        int64_t sub;
    } rx[] = {{sa, ida}, {sb1, idb}, {sb2, idb}, {sc, idc}};

    for (size_t i = 0; i < 4; i++) {
        json_t *ev = expect_event(rx[i].c, rx[i].sub);
        ck_assert_int_eq(fake_msg_int(ev, 2), publication); /* one id cluster-wide */
        json_t *want = json_pack("[i, s]", 1, "two");
        ck_assert(json_equal(json_array_get(ev, 4), want));
        json_decref(want);
        ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(ev, 5), "k")), 3);
        json_decref(ev);
        ck_assert_uint_eq(fake_conn_pending(rx[i].c), 0);
    }
    ck_assert_uint_eq(fake_conn_pending(pub), 0);
    /* One message per interested node, whatever the number of its subscribers. */
    ck_assert_uint_eq(stats(0).events_out, 2);
    ck_assert_uint_eq(stats(1).events_in, 1);
    ck_assert_uint_eq(stats(2).events_in, 1);
    /* A topic only A subscribes to goes nowhere else. */
    subscribe(sa, "com.only.a");
    fake_conn_send(pub, "[16, 6, {}, \"com.only.a\", [1]]");
    fake_bus_run(bus);
    json_decref(fake_conn_next(sa));
    ck_assert_uint_eq(stats(0).events_out, 2);
    ck_assert_uint_eq(stats(1).events_in + stats(2).events_in, 2);
}

END_TEST

START_TEST(test_patterns_match_with_the_broker_rules)
{
    fake_conn *pub = joined(0, WAMP_SER_JSON);
    fake_conn *sb = joined(1, WAMP_SER_JSON);
    fake_conn *sc = joined(2, WAMP_SER_JSON);
    int64_t exact = subscribe(sb, "com.p.q.r");
    int64_t prefix = subscribe_opts(sb, "com.p", "{\"match\": \"prefix\"}");
    int64_t wild = subscribe_opts(sb, "com..q.", "{\"match\": \"wildcard\"}");
    int64_t cwild = subscribe_opts(sc, "com.p..zz", "{\"match\": \"wildcard\"}");
    ck_assert_uint_eq(stats(0).remote_interest, 4);
    fake_conn_send(pub, "[16, 5, {}, \"com.p.q.r\", []]");
    fake_bus_run(bus);
    /* B: one message, an EVENT per matching subscription (as on one node); C: nothing. */
    ck_assert_uint_eq(stats(1).events_in, 1);
    ck_assert_uint_eq(stats(2).events_in, 0);
    ck_assert_uint_eq(fake_conn_pending(sb), 3);
    int64_t seen[3];
    for (int i = 0; i < 3; i++) {
        json_t *ev = fake_conn_next(sb);
        seen[i] = fake_msg_int(ev, 1);
        if (seen[i] != exact) {
            ck_assert_str_eq(details_str(ev, "topic"), "com.p.q.r");
        }
        json_decref(ev);
    }
    ck_assert(seen[0] != seen[1] && seen[1] != seen[2] && seen[0] != seen[2]);
    ck_assert(seen[0] == exact || seen[0] == prefix || seen[0] == wild);
    fake_conn_send(pub, "[16, 6, {}, \"com.p.x.zz\", []]");
    fake_conn_send(pub, "[16, 7, {}, \"com.px.q.zz\", []]");
    fake_bus_run(bus);
    json_t *ev = expect_event(sc, cwild);
    ck_assert_str_eq(details_str(ev, "topic"), "com.p.x.zz");
    json_decref(ev);
    ck_assert_uint_eq(fake_conn_pending(sc), 0);
    ev = expect_event(sb, prefix); /* com.p.x.zz */
    json_decref(ev);
    ev = expect_event(sb, prefix); /* com.px.q.zz: a prefix is a prefix of the string */
    json_decref(ev);
    ev = expect_event(sb, wild); /* com.px.q.zz */
    json_decref(ev);
    ck_assert_uint_eq(fake_conn_pending(sb), 0);
    /* The last subscriber leaves: the interest goes, nothing is sent any more. */
    untrack(sb);
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(0).remote_interest, 1);
    uint64_t out = stats(0).events_out;
    fake_conn_send(pub, "[16, 8, {}, \"com.p.q.r\", []]");
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(0).events_out, out);
}

END_TEST

/* A session joined to realm1 on node i; *id its session id, authid its WELCOME's authid. */
static fake_conn *joined_id(size_t node_i, wamp_ser ser, uint64_t *id, char *authid, size_t len)
{
    fake_conn *c = track(fake_conn_new(nodes[node_i].t.rt, ser), node_i);
    json_t *w = fake_conn_welcome(c, "[1, \"realm1\", {\"roles\": {\"subscriber\": {}, "
                                     "\"publisher\": {}}}]");
    *id = (uint64_t)fake_msg_int(w, 1);
    const char *a = json_string_value(json_object_get(json_array_get(w, 2), "authid"));
    snprintf(authid, len, "%s", a ? a : "");
    json_decref(w);
    return c;
}

/* Publishes options on com.o from pub; returns which of the n conns got an EVENT (bit i). */
static unsigned publish_to(fake_conn *pub, const char *opts, fake_conn **rx, size_t n)
{
    fake_conn_send(pub, "[16, 9, %s, \"com.o\", [\"x\"]]", opts);
    fake_bus_run(bus);
    unsigned got = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = fake_conn_pending(rx[i]);
        ck_assert_uint_le(k, 1);
        got |= k ? 1u << i : 0;
        fake_conn_clear(rx[i]);
    }
    return got;
}

START_TEST(test_options_apply_on_the_receiving_node)
{
    uint64_t pid, b1, b2, c1;
    char pauth[64], b1auth[64], other[64];
    fake_conn *pub = joined_id(0, WAMP_SER_JSON, &pid, pauth, sizeof(pauth));
    fake_conn *rx[3];
    rx[0] = joined_id(1, WAMP_SER_JSON, &b1, b1auth, sizeof(b1auth));
    rx[1] = joined_id(1, WAMP_SER_MSGPACK, &b2, other, sizeof(other));
    rx[2] = joined_id(2, WAMP_SER_JSON, &c1, other, sizeof(other));
    for (int i = 0; i < 3; i++) {
        subscribe(rx[i], "com.o");
    }
    char o[256];
    ck_assert_uint_eq(publish_to(pub, "{}", rx, 3), 7u);
    snprintf(o, sizeof(o), "{\"exclude\": [%llu]}", (unsigned long long)b1);
    ck_assert_uint_eq(publish_to(pub, o, rx, 3), 6u);
    snprintf(o, sizeof(o), "{\"eligible\": [%llu, %llu]}", (unsigned long long)c1,
             (unsigned long long)pid);
    ck_assert_uint_eq(publish_to(pub, o, rx, 3), 4u);
    snprintf(o, sizeof(o), "{\"exclude_authid\": [\"%s\"]}", b1auth);
    ck_assert_uint_eq(publish_to(pub, o, rx, 3), 6u);
    snprintf(o, sizeof(o), "{\"eligible_authid\": [\"%s\"]}", b1auth);
    ck_assert_uint_eq(publish_to(pub, o, rx, 3), 1u);
    ck_assert_uint_eq(publish_to(pub, "{\"exclude_authrole\": [\"anonymous\"]}", rx, 3), 0u);
    ck_assert_uint_eq(publish_to(pub, "{\"eligible_authrole\": [\"nobody\"]}", rx, 3), 0u);
    ck_assert_uint_eq(publish_to(pub, "{\"eligible_authrole\": [\"anonymous\"]}", rx, 3), 7u);
    /* Publisher disclosure reaches the other nodes; without it nothing is disclosed. */
    fake_conn_send(pub, "[16, 10, {\"disclose_me\": true}, \"com.o\", [\"x\"]]");
    fake_conn_send(pub, "[16, 11, {}, \"com.o\", [\"y\"]]");
    fake_bus_run(bus);
    for (int i = 0; i < 3; i++) {
        json_t *ev = fake_conn_next(rx[i]);
        ck_assert_int_eq(details_int(ev, "publisher"), (json_int_t)pid);
        ck_assert_str_eq(details_str(ev, "publisher_authid"), pauth);
        ck_assert_str_eq(details_str(ev, "publisher_authrole"), "anonymous");
        json_decref(ev);
        ev = fake_conn_next(rx[i]);
        ck_assert_ptr_null(json_object_get(json_array_get(ev, 3), "publisher"));
        json_decref(ev);
    }
    /* A bad option is refused on A, as on one node: nothing goes out. */
    uint64_t out = stats(0).events_out;
    fake_conn_send(pub, "[16, 12, {\"acknowledge\": true, \"exclude\": [\"x\"]}, \"com.o\"]");
    fake_bus_run(bus);
    fake_expect_error(pub, WAMP_MSG_PUBLISH, 12, WAMP_ERROR_INVALID_ARGUMENT);
    ck_assert_uint_eq(stats(0).events_out, out);
}

END_TEST

/* Retained-event notices seen on the bus: how many, and the last one's node, topic and time. */
typedef struct notices {
    int n;
    char node[16];
    char topic[64];
    uint64_t wall_ns;
} notices;

static void on_notice(void *arg, const char *subject, const char *reply, const void *data,
                      size_t len)
{
    (void)subject;
    (void)reply;
    notices *nt = arg;
    json_t *m = json_loadb(data, len, 0, NULL);
    ck_assert_ptr_nonnull(m);
    nt->n++;
    snprintf(nt->node, sizeof(nt->node), "%s", json_string_value(json_object_get(m, "n")));
    snprintf(nt->topic, sizeof(nt->topic), "%s", json_string_value(json_object_get(m, "t")));
    nt->wall_ns = (uint64_t)json_integer_value(json_object_get(m, "w"));
    json_decref(m);
}

/* Node id (on link l) tells the others it retained an event on com.r.one at wall_ns. */
static void drop_notice(fake_link *l, const char *id, uint64_t wall_ns)
{
    char text[128];
    snprintf(text, sizeof(text), "{\"n\":\"%s\",\"r\":\"realm1\",\"t\":\"com.r.one\",\"w\":%llu}",
             id, (unsigned long long)wall_ns);
    ck_assert_int_eq(fake_link_ops.publish(l, "wsc.ret.drop", NULL, text, strlen(text)), WAMP_OK);
    fake_bus_run(bus);
}

START_TEST(test_retained_events_served_from_the_node_holding_them)
{
    fake_conn *pa = joined(0, WAMP_SER_JSON);
    fake_conn *pc = joined(2, WAMP_SER_JSON);
    fake_conn *sb = joined(1, WAMP_SER_MSGPACK);
    fake_conn_send(pa, "[16, 1, {\"retain\": true, \"disclose_me\": true}, \"com.r.one\", "
                       "[1]]");
    fake_conn_send(pc, "[16, 1, {\"retain\": true}, \"com.r.two\", [2]]");
    fake_bus_run(bus);
    /* An exact subscription gets A's; a pattern one gets both, after SUBSCRIBED. */
    fake_conn_send(sb, "[32, 1, {\"get_retained\": true}, \"com.r.one\"]");
    fake_bus_run(bus);
    json_t *m = fake_conn_next(sb);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_SUBSCRIBED);
    int64_t sub = fake_msg_int(m, 2);
    json_decref(m);
    m = expect_event(sb, sub);
    ck_assert(json_is_true(json_object_get(json_array_get(m, 3), "retained")));
    ck_assert_int_gt(details_int(m, "publisher"), 0);
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(m, 4), 0)), 1);
    json_decref(m);
    ck_assert_uint_eq(fake_conn_pending(sb), 0);
    int64_t psub = subscribe_opts(sb, "com.r", "{\"match\": \"prefix\", \"get_retained\": true}");
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(sb), 2);
    int sum = 0;
    for (int i = 0; i < 2; i++) {
        m = expect_event(sb, psub);
        ck_assert(json_is_true(json_object_get(json_array_get(m, 3), "retained")));
        sum += (int)json_integer_value(json_array_get(json_array_get(m, 4), 0));
        json_decref(m);
    }
    ck_assert_int_eq(sum, 3);
    /* C retains com.r.one anew: A drops its own, so one event per topic remains. */
    fake_conn_send(pc, "[16, 2, {\"retain\": true}, \"com.r.one\", [11]]");
    fake_bus_run(bus);
    fake_conn_clear(sb);
    fake_conn *sa = joined(0, WAMP_SER_JSON);
    psub = subscribe_opts(sa, "com.r", "{\"match\": \"prefix\", \"get_retained\": true}");
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(sa), 2);
    sum = 0;
    for (int i = 0; i < 2; i++) {
        m = expect_event(sa, psub);
        sum += (int)json_integer_value(json_array_get(json_array_get(m, 4), 0));
        json_decref(m);
    }
    ck_assert_int_eq(sum, 13);
    /* A drop notice older than the event held (crossing a newer retain, or from a node whose
     * clock is behind) leaves it, and C answers with its own, so that the other node drops its
     * event: one per topic in the cluster. */
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    notices seen = {0};
    uint64_t s_seen;
    ck_assert_int_eq(fake_link_ops.subscribe(raw, "wsc.ret.drop", NULL, on_notice, &seen, &s_seen),
                     WAMP_OK);
    drop_notice(raw, "z", 1);
    fake_conn_clear(sa);
    int64_t one = subscribe_opts(sa, "com.r.one", "{\"get_retained\": true}");
    fake_bus_run(bus);
    m = expect_event(sa, one); /* C's, still held */
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(m, 4), 0)), 11);
    json_decref(m);
    ck_assert_int_eq(seen.n, 1);
    ck_assert_str_eq(seen.node, "c");
    ck_assert_str_eq(seen.topic, "com.r.one");
    uint64_t held_ns = seen.wall_ns;
    ck_assert_uint_gt(held_ns, 1);
    /* A notice of the same time: the node whose id sorts last keeps its event. "b" < "c": C
     * keeps it (and says so); "d" > "c": C drops it, and says nothing. */
    drop_notice(raw, "b", held_ns);
    ck_assert_int_eq(seen.n, 2);
    ck_assert_uint_eq(seen.wall_ns, held_ns);
    drop_notice(raw, "d", held_ns);
    ck_assert_int_eq(seen.n, 2);
    fake_conn_clear(sa);
    one = subscribe_opts(sa, "com.r.one", "{\"get_retained\": true}");
    fake_bus_run(bus);
    (void)one;
    ck_assert_uint_eq(fake_conn_pending(sa), 0); /* no retained event left */
    fake_link_free(raw);
}

END_TEST

START_TEST(test_killed_node_loses_its_interest)
{
    fake_conn *pub = joined(0, WAMP_SER_JSON);
    fake_conn *sb = joined(1, WAMP_SER_JSON);
    fake_conn *sc = joined(2, WAMP_SER_JSON);
    subscribe(sb, "com.k");
    subscribe(sc, "com.k");
    run_ms(HB_MS + 100); /* A sees both in its node list */
    ck_assert_uint_eq(stats(0).remote_interest, 2);
    (void)sc;
    kill_node(2);
    run_ms(TTL_MS - 500);
    ck_assert_uint_eq(stats(0).remote_interest, 2); /* until its key expired */
    run_ms(2 * HB_MS + 500);
    ck_assert_uint_eq(stats(0).remote_interest, 1);
    fake_conn_send(pub, "[16, 1, {}, \"com.k\", []]");
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(sb), 1);
    ck_assert_uint_eq(stats(0).events_dropped, 0);
}

END_TEST

START_TEST(test_link_down_drops_events_then_interest)
{
    fake_conn *pub = joined(0, WAMP_SER_JSON);
    fake_conn *sa = joined(0, WAMP_SER_JSON);
    fake_conn *sb = joined(1, WAMP_SER_JSON);
    subscribe(sa, "com.d");
    subscribe(sb, "com.d");
    run_ms(HB_MS + 100);
    fake_link_set_up(nodes[0].l, false);
    fake_bus_run(bus);
    /* Local routing goes on; the event for B is dropped and counted. */
    fake_conn_send(pub, "[16, 1, {}, \"com.d\", []]");
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(sa), 1);
    ck_assert_uint_eq(fake_conn_pending(sb), 0);
    ck_assert_uint_eq(stats(0).events_dropped, 1);
    ck_assert_uint_eq(stats(0).remote_interest, 1);
    /* The counters are in the metrics. */
    rt_router_set_cluster_broker(nodes[0].t.rt, nodes[0].cb);
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(rt_metrics_render(nodes[0].t.rt, NULL, &text, &len), WAMP_OK);
    rt_router_set_cluster_broker(nodes[0].t.rt, NULL);
    ck_assert_ptr_nonnull(strstr(text, "\nwampscope_cluster_events_dropped_total 1\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nwampscope_cluster_remote_subscriptions 1\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nwampscope_cluster_events_total{direction=\"out\"} "));
    free(text);
    run_ms(TTL_MS + 200);
    ck_assert_uint_eq(stats(0).remote_interest, 0);
    /* Back up: the snapshots restore the interest both ways. */
    fake_link_set_up(nodes[0].l, true);
    run_ms(HB_MS);
    ck_assert_uint_eq(stats(0).remote_interest, 1);
    fake_conn_send(pub, "[16, 2, {}, \"com.d\", []]");
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(sb), 1);
}

END_TEST

/* The retained events of topic com.p a node's new subscriber gets: their first arguments. */
static int retained_args(size_t node_i)
{
    fake_conn *s = joined(node_i, WAMP_SER_JSON);
    int64_t sub = subscribe_opts(s, "com.p", "{\"get_retained\": true}");
    run_ms(600); /* (the other nodes' answers, within the request timeout) */
    int sum = 0;
    while (fake_conn_pending(s)) {
        json_t *m = expect_event(s, sub);
        sum = sum * 100 + (int)json_integer_value(json_array_get(json_array_get(m, 4), 0));
        json_decref(m);
    }
    return sum;
}

START_TEST(test_one_retained_event_after_a_link_outage)
{
    /* A retains, then loses its link; B retains on the same topic meanwhile (its notice cannot
     * reach A). When A is back, its join tells the others its retained event again: B's, the
     * later, stays, and A drops its own. */
    fake_conn *pa = joined(0, WAMP_SER_JSON);
    fake_conn *pb = joined(1, WAMP_SER_JSON);
    run_ms(HB_MS + 100);
    fake_conn_send(pa, "[16, 1, {\"retain\": true}, \"com.p\", [1]]");
    fake_bus_run(bus);
    fake_link_set_up(nodes[0].l, false);
    fake_bus_run(bus);
    run_ms(100);
    /* (Retained after A's by the wall clock: the broker dates retained events by the real one.) */
    fake_conn_send(pb, "[16, 1, {\"retain\": true}, \"com.p\", [2]]");
    fake_bus_run(bus);
    fake_link_set_up(nodes[0].l, true);
    run_ms(HB_MS);
    ck_assert_int_eq(retained_args(0), 2);
    ck_assert_int_eq(retained_args(2), 2);
}

END_TEST

/* Retained events held by node i's realm1. */
static size_t retained_on(size_t i)
{
    return rt_broker_retained_count(rt_realm_broker(rt_router_find_realm(nodes[i].t.rt, "realm1")));
}

/* What a listener on the notice subjects saw: single notices, batches and their entries. */
static size_t seen_single, seen_batches, seen_entries;

static void count_notices(void *arg, const char *subject, const char *reply, const void *data,
                          size_t len)
{
    (void)arg;
    (void)reply;
    json_t *m = json_loadb(data, len, 0, NULL);
    if (strcmp(subject, "wsc.ret.drops") == 0) {
        seen_batches++;
        seen_entries += json_array_size(json_object_get(m, "d"));
    } else {
        seen_single++;
    }
    json_decref(m);
}

/* s publishes a retained event with argument arg on each of the n topics
 * com.r.<k>. */
static void retain_many(fake_conn *s, int n, int arg)
{
    for (int k = 0; k < n; k++) {
        fake_conn_send(s, "[16, %d, {\"retain\": true}, \"com.r.%d\", [%d]]", k + 1, k, arg);
    }
    fake_bus_run(bus);
}

START_TEST(test_rejoin_notices_go_in_batches)
{
    /* As test_one_retained_event_after_a_link_outage, on 300 topics: A's join tells its 300
     * retained events in a few messages, B answers its later ones the same way, and then B holds
     * every topic's event and A none. */
    fake_conn *pa = joined(0, WAMP_SER_JSON);
    fake_conn *pb = joined(1, WAMP_SER_JSON);
    run_ms(HB_MS + 100);
    retain_many(pa, 300, 1);
    ck_assert_uint_eq(retained_on(0), 300);
    fake_link_set_up(nodes[0].l, false);
    fake_bus_run(bus);
    run_ms(100);
    retain_many(pb, 300, 2);
    ck_assert_uint_eq(retained_on(0), 300); /* (it heard nothing) */
    ck_assert_uint_eq(retained_on(1), 300);
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    uint64_t id;
    ck_assert_int_eq(fake_link_ops.subscribe(raw, "wsc.ret.drop", NULL, count_notices, NULL, &id),
                     WAMP_OK);
    ck_assert_int_eq(fake_link_ops.subscribe(raw, "wsc.ret.drops", NULL, count_notices, NULL, &id),
                     WAMP_OK);
    seen_single = seen_batches = seen_entries = 0;
    fake_link_set_up(nodes[0].l, true);
    run_ms(HB_MS);
    ck_assert_uint_eq(retained_on(0), 0);
    ck_assert_uint_eq(retained_on(1), 300);
    ck_assert_uint_eq(retained_on(2), 0);
    ck_assert_uint_eq(seen_single, 0);
    ck_assert_uint_eq(seen_entries, 600); /* A's 300, and B's 300 answers */
    ck_assert_uint_ge(seen_batches, 2);
    ck_assert_uint_le(seen_batches, 6);
    ck_assert_uint_eq(stats(1).events_bad, 0);
}

END_TEST

START_TEST(test_bad_notice_batches_are_counted)
{
    /* Batches that are not valid are counted and ignored; a valid entry of a batch with a bad
     * one is still taken. */
    fake_conn *pb = joined(1, WAMP_SER_JSON);
    retain_many(pb, 2, 2);
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    const char *bad[] = {
            "",
            "{\"n\": \"z\", \"r\": \"realm1\"}",
            "{\"n\": \"z\", \"r\": \"nope\", \"d\": []}",
            "{\"n\": \"z\", \"r\": \"realm1\", \"d\": {}}",
            "{\"n\": \"z\", \"r\": \"realm1\", \"d\": [[\"com.r.0\"], 7, [\"com.r.1\", "
            "4000000000000000000]]}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.ret.drops", NULL, bad[i], strlen(bad[i])),
                         WAMP_OK);
    }
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(1).events_bad, 5);
    /* The last one's valid entry, later than B's event on com.r.1, dropped it. */
    ck_assert_uint_eq(retained_on(1), 1);
}

END_TEST

/* The first arguments of the retained events on topic that a new subscription of c gets, as
 * digits in the order they came (0: none). */
static int retained_digits(fake_conn *c, const char *topic)
{
    fake_conn_clear(c);
    int64_t sub = subscribe_opts(c, topic, "{\"get_retained\": true}");
    run_ms(600); /* (the other nodes' answers, within the request timeout) */
    int digits = 0;
    while (fake_conn_pending(c)) {
        json_t *m = expect_event(c, sub);
        digits = digits * 10 + (int)json_integer_value(json_array_get(json_array_get(m, 4), 0));
        json_decref(m);
    }
    return digits;
}

START_TEST(test_listed_retained_events_keep_the_one_for_all)
{
    /* Spec "Event Retention": a subscriber gets the most recent retained event it would have
     * received. An event retained with black/white lists therefore leaves the topic's earlier
     * event for all to the sessions its lists leave out, across nodes as on one node
     * (rt_broker_retained.c). */
    uint64_t xid, yid;
    char auth[64];
    fake_conn *pa = joined(0, WAMP_SER_JSON);
    fake_conn *pb = joined(1, WAMP_SER_JSON);
    fake_conn *x = joined_id(2, WAMP_SER_JSON, &xid, auth, sizeof(auth));
    fake_conn *y = joined_id(2, WAMP_SER_JSON, &yid, auth, sizeof(auth));
    run_ms(HB_MS + 100);
    fake_conn_send(pa, "[16, 1, {\"retain\": true}, \"com.l\", [1]]");
    fake_bus_run(bus);
    fake_conn_send(pb, "[16, 1, {\"retain\": true, \"eligible\": [%llu]}, \"com.l\", [2]]",
                   (unsigned long long)xid);
    fake_bus_run(bus);
    ck_assert_int_eq(retained_digits(y, "com.l"), 1); /* A still holds its event for all */
    /* B retains an event for all, then a listed one, on com.m; a notice of an event for all
     * retained between them (node z) takes B's event for all, not its later listed one, and B
     * does not answer it (it holds no later event for all). */
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    notices seen = {0};
    uint64_t s_seen;
    ck_assert_int_eq(fake_link_ops.subscribe(raw, "wsc.ret.drop", NULL, on_notice, &seen, &s_seen),
                     WAMP_OK);
    fake_conn_send(pb, "[16, 2, {\"retain\": true}, \"com.m\", [3]]");
    fake_bus_run(bus);
    ck_assert_int_eq(seen.n, 1);
    uint64_t w3 = seen.wall_ns;
    fake_conn_send(pb, "[16, 3, {\"retain\": true, \"eligible\": [%llu]}, \"com.m\", [4]]",
                   (unsigned long long)xid);
    fake_bus_run(bus);
    char text[128];
    snprintf(text, sizeof(text), "{\"n\":\"z\",\"r\":\"realm1\",\"t\":\"com.m\",\"w\":%llu}",
             (unsigned long long)(w3 + 1));
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.ret.drop", NULL, text, strlen(text)), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_str_eq(seen.node, "b");
    ck_assert_uint_eq(seen.wall_ns, w3); /* no answer from B */
    ck_assert_int_eq(retained_digits(y, "com.m"), 0);
    ck_assert_int_eq(retained_digits(x, "com.m"), 4);
    fake_link_free(raw);
}

END_TEST

START_TEST(test_bad_messages_are_counted_and_ignored)
{
    fake_conn *sb = joined(1, WAMP_SER_JSON);
    subscribe(sb, "com.b");
    fake_link *raw = fake_link_new(bus, NULL);
    fake_link_set_up(raw, true);
    fake_bus_run(bus);
    rt_broker_pub p = {.topic = "com.b", .publication = 5};
    rt_cluster_bytes ok = {0}, nope = {0}, target = {0};
    ck_assert(rt_cluster_envelope_add(&ok, "z", "realm1", &p, NULL));
    ck_assert(rt_cluster_envelope_add(&nope, "z", "nope", &p, NULL)); /* no such realm */
    uint64_t t[2] = {1, 2};
    ck_assert(rt_cluster_envelope_add(&target, "z", "realm1", &p, t)); /* not an event */

    const struct {
        const void *p;
        size_t len;
    } bad[] = {
            {"", 0}, {"garbage", 7}, {ok.p, ok.len - 1}, {nope.p, nope.len}, {target.p, target.len},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.node.b.ev", NULL, bad[i].p, bad[i].len),
                         WAMP_OK);
    }
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(1).events_bad, 5);
    ck_assert_uint_eq(stats(1).events_in, 0);
    ck_assert_uint_eq(fake_conn_pending(sb), 0);
    /* A valid one from a node that sent it by hand is delivered. */
    ck_assert_int_eq(fake_link_ops.publish(raw, "wsc.node.b.ev", NULL, ok.p, ok.len), WAMP_OK);
    fake_bus_run(bus);
    ck_assert_uint_eq(stats(1).events_in, 1);
    json_t *ev = fake_conn_next(sb);
    ck_assert_int_eq(fake_msg_int(ev, 2), 5);
    json_decref(ev);
    free(ok.p);
    free(nope.p);
    free(target.p);
}

END_TEST

START_TEST(test_event_carries_the_publication_correlation)
{
    fake_conn *pub = joined(0, WAMP_SER_JSON);
    fake_conn *sb = joined(1, WAMP_SER_MSGPACK);
    subscribe(sb, "com.c");
    trace *ta = test_router_start_trace(&nodes[0].t, "ta", NULL);
    trace *tb = test_router_start_trace(&nodes[1].t, "tb", NULL);
    fake_conn_send(pub, "[16, 1, {}, \"com.c\", [1]]");
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(sb), 1);
    json_t *ra = test_router_records(ta);
    json_t *rb = test_router_records(tb);
    ck_assert_uint_ge(json_array_size(ra), 1);
    ck_assert_uint_ge(json_array_size(rb), 1);
    json_t *publish = json_array_get(ra, 0);
    json_t *event = json_array_get(rb, json_array_size(rb) - 1);
    ck_assert_str_eq(json_string_value(json_object_get(publish, "msg_type")), "Publish");
    ck_assert_str_eq(json_string_value(json_object_get(event, "msg_type")), "Event");
    const char *corr = json_string_value(json_object_get(publish, "correlation"));
    ck_assert_ptr_nonnull(corr);
    ck_assert_str_eq(json_string_value(json_object_get(event, "correlation")), corr);
    ck_assert_str_eq(json_string_value(json_object_get(event, "uri")), "com.c");
    /* The action completes on the publisher's node: the PUBLISH there (nothing follows it). */
    ck_assert(json_is_false(json_object_get(event, "correlation_is_last")));
    ck_assert(json_is_true(json_object_get(publish, "correlation_is_last")));
    json_decref(ra);
    json_decref(rb);
}

END_TEST

static void setup_small(void)
{
    setup_sized(1500);
}

START_TEST(test_event_over_the_size_limit_is_dropped)
{
    fake_conn *pub = joined(0, WAMP_SER_JSON);
    fake_conn *sb = joined(1, WAMP_SER_JSON);
    subscribe(sb, "com.s");
    fake_conn_send(pub, "[16, 1, {}, \"com.s\", [\"%01200d\"]]", 0);
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(sb), 1);
    fake_conn_clear(sb);
    fake_conn_send(pub, "[16, 2, {}, \"com.s\", [\"%01495d\"]]", 0);
    fake_bus_run(bus);
    ck_assert_uint_eq(fake_conn_pending(sb), 0);
    ck_assert_uint_eq(stats(0).events_dropped, 1);
    ck_assert_uint_eq(stats(0).events_out, 1);
}

END_TEST

static Suite *rt_cluster_broker_suite(void)
{
    Suite *s = suite_create("rt_cluster_broker");
    TCase *tc = tcase_create("pubsub");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_event_reaches_subscribers_on_other_nodes_once);
    tcase_add_test(tc, test_patterns_match_with_the_broker_rules);
    tcase_add_test(tc, test_options_apply_on_the_receiving_node);
    tcase_add_test(tc, test_retained_events_served_from_the_node_holding_them);
    tcase_add_test(tc, test_killed_node_loses_its_interest);
    tcase_add_test(tc, test_link_down_drops_events_then_interest);
    tcase_add_test(tc, test_one_retained_event_after_a_link_outage);
    tcase_add_test(tc, test_rejoin_notices_go_in_batches);
    tcase_add_test(tc, test_bad_notice_batches_are_counted);
    tcase_add_test(tc, test_listed_retained_events_keep_the_one_for_all);
    tcase_add_test(tc, test_bad_messages_are_counted_and_ignored);
    tcase_add_test(tc, test_event_carries_the_publication_correlation);
    suite_add_tcase(s, tc);
    TCase *small = tcase_create("limits");
    tcase_add_checked_fixture(small, setup_small, teardown);
    tcase_set_timeout(small, 20);
    tcase_add_test(small, test_event_over_the_size_limit_is_dropped);
    suite_add_tcase(s, small);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_cluster_broker_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
