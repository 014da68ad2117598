/* check_rt_metrics.c: the Prometheus text of the router (rt_metrics.h), and the per-message
 * counters and trace-level lines behind it (rt_wirelog.h). A small parser written here checks the
 * exposition format's rules on every rendering (HELP and TYPE before the samples of each family,
 * names and label names well formed, counters ending in _total, no family or series twice,
 * values numeric, label values escaped; a histogram's buckets cumulative in ascending le, up to
 * +Inf, which its _count equals); the tests check that the values follow the router
 * (sessions per realm and transport, messages per type and serializer, limits, traces). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_cluster.h"
#include "fake_transport.h"
#include "log_capture.h"
#include "rt_cluster.h"
#include "rt_log.h"
#include "rt_metrics.h"
#include "rt_router.h"
#include "rt_trace_wire.h"
#include "test_router.h"
#include "tmp_dir.h"
#include "trace.h"
#include "trace_hub.h"

static test_router T;
static rt_listener listeners[2];

/* test_router with two listeners, "ws1" and "rs1". */
static void setup(void)
{
    test_router_init(&T);
    rt_router_free(T.rt);
    memset(listeners, 0, sizeof(listeners));
    listeners[0].id = "ws1";
    listeners[0].kind = RT_TRANSPORT_WEBSOCKET;
    listeners[1].id = "rs1";
    listeners[1].kind = RT_TRANSPORT_RAWSOCKET;
    for (size_t i = 0; i < 2; i++) {
        listeners[i].anonymous_role = "anonymous";
        listeners[i].max_message_size = 1 << 20;
        listeners[i].ser_json = listeners[i].ser_msgpack = true;
    }
    T.cfg.listeners = listeners;
    T.cfg.n_listeners = 2;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
}

static void teardown(void)
{
    test_router_fini(&T);
}

static fake_conn *conn_on(const char *listener, wamp_ser ser)
{
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    snprintf(peer.addr, sizeof(peer.addr), "127.0.0.1:50000");
    peer.is_loopback = true;
    peer.listener_id = listener;
    peer.max_message_size = 1 << 20;
    return fake_conn_new_peer(T.rt, ser, &peer);
}

/* conn_on() + fake_conn_join(). */
static fake_conn *joined_on(const char *listener, wamp_ser ser, const char *realm)
{
    fake_conn *c = conn_on(listener, ser);
    fake_conn_join(c, realm);
    return c;
}

/* --- The format checker --------------------------------------------------------------------- */

static bool is_name(const char *s, size_t n, bool colon)
{
    if (n == 0) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  (colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
        if (!ok) {
            return false;
        }
    }
    return true;
}

#define MAX_SEEN 4096

typedef struct checker {
    char *families[MAX_SEEN];
    size_t n_families;
    char *series[MAX_SEEN];
    size_t n_series;
    char family[128]; /* the current one */
    bool family_counter;
    bool family_histogram;
    bool help_seen;
    /* The histogram series being checked: its labels but le, the last le and bucket, the +Inf
     * bucket (-1 until seen). */
    char h_labels[256];
    double h_le;
    double h_bucket;
    double h_inf;
} checker;

static bool seen(char **list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(list[i], s) == 0) {
            return true;
        }
    }
    return false;
}

/* A histogram's sample (name n bytes long, value v): _bucket{...,le} cumulative in ascending le
 * up to +Inf, then _sum, then _count equal to the +Inf bucket. */
static void check_histogram(checker *c, const char *line, size_t n, double v)
{
    const char *suffix = line + strlen(c->family);
    size_t sl = n - strlen(c->family);
    const char *labels = line[n] == '{' ? line + n + 1 : line + n;
    if (sl == 7 && strncmp(suffix, "_bucket", 7) == 0) {
        const char *le = strstr(line, "le=\"");
        ck_assert_msg(le && le > line + n && (le[-1] == ',' || le[-1] == '{'),
                      "bucket without le: \"%s\"", line);
        size_t bl = le[-1] == ',' ? (size_t)(le - 1 - labels) : 0;
        ck_assert_uint_lt(bl, sizeof(c->h_labels));
        if (strlen(c->h_labels) != bl || strncmp(c->h_labels, labels, bl) != 0) {
            ck_assert_msg(c->h_inf < 0, "series before \"%s\" without _count", line);
            memcpy(c->h_labels, labels, bl);
            c->h_labels[bl] = '\0';
            c->h_le = -INFINITY;
            c->h_bucket = 0;
        }
        double lv = strncmp(le + 4, "+Inf\"", 5) == 0 ? INFINITY : strtod(le + 4, NULL);
        ck_assert_msg(lv > c->h_le, "le not ascending in \"%s\"", line);
        ck_assert_msg(v >= c->h_bucket, "bucket not cumulative in \"%s\"", line);
        c->h_le = lv;
        c->h_bucket = v;
        if (isinf(lv)) {
            c->h_inf = v;
        }
    } else if (sl == 4 && strncmp(suffix, "_sum", 4) == 0) {
        ck_assert_msg(isinf(c->h_le) && c->h_le > 0, "_sum before +Inf: \"%s\"", line);
    } else {
        ck_assert_msg(sl == 6 && strncmp(suffix, "_count", 6) == 0,
                      "sample \"%s\" outside its histogram %s", line, c->family);
        size_t bl = line[n] == '{' ? strcspn(labels, "}") : 0;
        ck_assert_msg(c->h_inf >= 0 && strlen(c->h_labels) == bl &&
                              strncmp(c->h_labels, labels, bl) == 0,
                      "_count without its buckets: \"%s\"", line);
        ck_assert_msg(v == c->h_inf, "_count is not the +Inf bucket: \"%s\"", line);
        c->h_inf = -1;
    }
}

/* Checks one sample line; returns its value. */
static double check_sample(checker *c, const char *line)
{
    size_t n = strcspn(line, "{ ");
    ck_assert_msg(is_name(line, n, true), "bad metric name in \"%s\"", line);
    size_t fl = strlen(c->family);
    ck_assert_msg((c->family_histogram ? n > fl : n == fl) && strncmp(line, c->family, fl) == 0,
                  "sample \"%s\" outside its family %s", line, c->family);
    const char *p = line + n;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            size_t k = strcspn(p, "=");
            ck_assert_msg(is_name(p, k, false), "bad label name in \"%s\"", line);
            p += k;
            ck_assert_msg(p[0] == '=' && p[1] == '"', "label without value in \"%s\"", line);
            p += 2;
            while (*p != '"') {
                ck_assert_msg(*p && *p != '\n', "unterminated label value in \"%s\"", line);
                if (*p == '\\') {
                    ck_assert_msg(p[1] == '\\' || p[1] == '"' || p[1] == 'n',
                                  "bad escape in \"%s\"", line);
                    p++;
                }
                p++;
            }
            p++;
            ck_assert_msg(*p == ',' || *p == '}', "bad label list in \"%s\"", line);
            if (*p == ',') {
                p++;
            }
        }
        p++;
    }
    size_t key_len = (size_t)(p - line);
    ck_assert_msg(*p == ' ', "no value in \"%s\"", line);
    char *end = NULL;
    double v = strtod(p + 1, &end);
    ck_assert_msg(end && end != p + 1 && *end == '\0', "bad value in \"%s\"", line);
    ck_assert_msg(!isnan(v), "NaN in \"%s\"", line);
    if (c->family_counter || c->family_histogram) {
        ck_assert_msg(v >= 0, "negative counter in \"%s\"", line);
    }
    if (c->family_histogram) {
        check_histogram(c, line, n, v);
    }
    char *key = strndup(line, key_len);
    ck_assert_msg(!seen(c->series, c->n_series, key), "series twice: %s", key);
    ck_assert_uint_lt(c->n_series, MAX_SEEN);
    c->series[c->n_series++] = key;
    return v;
}

/* Checks the whole text; fails the test on the first broken rule. */
static void check_format(const char *text)
{
    checker *c = calloc(1, sizeof(*c));
    ck_assert_ptr_nonnull(c);
    c->h_inf = -1;
    ck_assert_msg(text[0] && text[strlen(text) - 1] == '\n', "text must end in a newline");
    char *copy = strdup(text);
    char *save = NULL;
    size_t samples = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# HELP ", 7) == 0) {
            const char *name = line + 7;
            size_t n = strcspn(name, " ");
            ck_assert_msg(is_name(name, n, true), "bad name in \"%s\"", line);
            ck_assert_msg(name[n] == ' ' && name[n + 1], "HELP without text: \"%s\"", line);
            ck_assert_uint_lt(n, sizeof(c->family));
            memcpy(c->family, name, n);
            c->family[n] = '\0';
            ck_assert_msg(!seen(c->families, c->n_families, c->family), "family twice: %s",
                          c->family);
            c->families[c->n_families++] = strdup(c->family);
            c->help_seen = true;
        } else if (strncmp(line, "# TYPE ", 7) == 0) {
            const char *name = line + 7;
            size_t n = strcspn(name, " ");
            ck_assert_msg(c->help_seen && strncmp(name, c->family, n) == 0 &&
                                  strlen(c->family) == n,
                          "TYPE without its HELP: \"%s\"", line);
            const char *type = name + n + 1;
            ck_assert_msg(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
                                  strcmp(type, "histogram") == 0,
                          "unknown type in \"%s\"", line);
            ck_assert_msg(c->h_inf < 0, "histogram before %s without _count", c->family);
            c->family_counter = strcmp(type, "counter") == 0;
            c->family_histogram = strcmp(type, "histogram") == 0;
            c->h_labels[0] = '\0';
            c->h_le = -INFINITY;
            size_t fl = strlen(c->family);
            bool total = fl > 6 && strcmp(c->family + fl - 6, "_total") == 0;
            ck_assert_msg(c->family_counter == total, "%s: counters and only they end in _total",
                          c->family);
            ck_assert_msg(strncmp(c->family, "wampscope_", 10) == 0 ||
                                  strncmp(c->family, "process_", 8) == 0,
                          "%s: no wampscope_ prefix", c->family);
            c->help_seen = false;
        } else {
            ck_assert_msg(line[0] != '#', "unknown comment \"%s\"", line);
            ck_assert_msg(!c->help_seen, "sample before TYPE: \"%s\"", line);
            check_sample(c, line);
            samples++;
        }
    }
    ck_assert_uint_gt(samples, 0);
    ck_assert_msg(c->h_inf < 0, "histogram %s without _count", c->family);
    for (size_t i = 0; i < c->n_families; i++) {
        free(c->families[i]);
    }
    for (size_t i = 0; i < c->n_series; i++) {
        free(c->series[i]);
    }
    free(copy);
    free(c);
}

/* The rendering of T.rt (format-checked; owned). */
static char *render(const rt_metrics_proc *proc)
{
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(rt_metrics_render(T.rt, proc, &text, &len), WAMP_OK);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(strlen(text), len);
    check_format(text);
    return text;
}

/* The value of the series key (name with its labels exactly as rendered); -1 if absent. */
static double value_of(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, n) == 0 && p[n] == ' ') {
            return strtod(p + n + 1, NULL);
        }
    }
    return -1;
}

/* --- Tests ---------------------------------------------------------------------------------- */

START_TEST(test_format_of_an_idle_router)
{
    char *text = render(NULL);
    ck_assert(value_of(text, "wampscope_sessions_opened_total") == 0);
    ck_assert(value_of(text, "wampscope_connections{transport=\"ws1\"}") == 0);
    ck_assert(value_of(text, "wampscope_sessions{realm=\"realm1\",transport=\"rs1\"}") == 0);
    ck_assert(value_of(text, "wampscope_traces") == 0);
    ck_assert(value_of(text, "wampscope_handshakes_refused_total{reason=\"subprotocol\"}") == 0);
    ck_assert(value_of(text, "wampscope_handshakes_refused_total{reason=\"tls\"}") == 0);
    ck_assert_ptr_null(strstr(text, "process_"));
    free(text);
}

END_TEST

START_TEST(test_cluster_link)
{
    /* Without a cluster: no cluster family. */
    char *text = render(NULL);
    ck_assert_ptr_null(strstr(text, "wampscope_cluster_"));
    free(text);
    fake_bus *bus = fake_bus_new(&T.clock);
    fake_link *l = NULL;
    rt_cluster *c = fake_cluster_member_new(bus, &T.clock, "testnode", 1, 1000, 4000, 500, &l);
    ck_assert_ptr_nonnull(c);
    rt_router_set_cluster(T.rt, c);
    ck_assert_ptr_eq(rt_router_cluster(T.rt), c);
    text = render(NULL);
    ck_assert(value_of(text, "wampscope_cluster_link_state{state=\"connecting\"}") == 1);
    ck_assert(value_of(text, "wampscope_cluster_link_state{state=\"up\"}") == 0);
    ck_assert(value_of(text, "wampscope_cluster_nodes") == 1);
    free(text);
    fake_link_set_up(l, true);
    fake_bus_run(bus);
    text = render(NULL);
    ck_assert(value_of(text, "wampscope_cluster_link_state{state=\"up\"}") == 1);
    ck_assert(value_of(text, "wampscope_cluster_link_state{state=\"connecting\"}") == 0);
    ck_assert(value_of(text, "wampscope_cluster_messages_total{direction=\"out\"}") > 0);
    ck_assert(value_of(text, "wampscope_cluster_bytes_total{direction=\"out\"}") > 0);
    ck_assert(value_of(text, "wampscope_cluster_reconnects_total") == 0);
    ck_assert(value_of(text, "wampscope_cluster_dropped_total") == 0);
    free(text);
    fake_link_set_up(l, false);
    fake_bus_run(bus);
    fake_link_set_up(l, true);
    fake_bus_run(bus);
    text = render(NULL);
    ck_assert(value_of(text, "wampscope_cluster_reconnects_total") == 1);
    free(text);
    rt_router_set_cluster(T.rt, NULL);
    fake_bus_free(bus);
    rt_cluster_free(c);
}

END_TEST

START_TEST(test_sessions_by_realm_and_transport)
{
    fake_conn *a = joined_on("ws1", WAMP_SER_JSON, "realm1");
    fake_conn *b = joined_on("rs1", WAMP_SER_MSGPACK, "realm2");
    fake_conn *c = conn_on("rs1", WAMP_SER_JSON); /* attached, not joined */
    char *text = render(NULL);
    ck_assert(value_of(text, "wampscope_sessions{realm=\"realm1\",transport=\"ws1\"}") == 1);
    ck_assert(value_of(text, "wampscope_sessions{realm=\"realm1\",transport=\"rs1\"}") == 0);
    ck_assert(value_of(text, "wampscope_sessions{realm=\"realm2\",transport=\"rs1\"}") == 1);
    ck_assert(value_of(text, "wampscope_connections{transport=\"rs1\"}") == 2);
    ck_assert(value_of(text, "wampscope_connections{transport=\"ws1\"}") == 1);
    ck_assert(value_of(text, "wampscope_sessions_opened_total") == 3);
    free(text);
    fake_conn_free(b);
    text = render(NULL);
    ck_assert(value_of(text, "wampscope_sessions{realm=\"realm2\",transport=\"rs1\"}") == 0);
    ck_assert(value_of(text, "wampscope_sessions_closed_total") == 1);
    free(text);
    fake_conn_free(a);
    fake_conn_free(c);
}

END_TEST

START_TEST(test_messages_by_type_and_serializer)
{
    fake_conn *a = joined_on("ws1", WAMP_SER_JSON, "realm1");
    fake_conn *b = joined_on("ws1", WAMP_SER_MSGPACK, "realm1");
    fake_conn_send(a, "[48, 1, {}, \"com.example.none\"]");
    fake_conn_send(a, "[48, 2, {}, \"com.example.none\"]");
    fake_conn_clear(a);
    static const char junk[] = "not wamp";
    fake_conn_send_raw(b, junk, sizeof(junk) - 1);
    char *text = render(NULL);
    ck_assert(value_of(text,
                       "wampscope_messages_received_total{type=\"CALL\",serializer=\"json\"}") ==
              2);
    ck_assert(value_of(text, "wampscope_messages_sent_total{type=\"ERROR\",serializer=\"json\"}") ==
              2);
    ck_assert(
            value_of(text,
                     "wampscope_messages_received_total{type=\"HELLO\",serializer=\"msgpack\"}") ==
            1);
    ck_assert(value_of(text,
                       "wampscope_messages_sent_total{type=\"WELCOME\",serializer=\"msgpack\"}") ==
              1);
    ck_assert(value_of(text, "wampscope_messages_received_total{type=\"undecodable\","
                             "serializer=\"msgpack\"}") == 1);
    ck_assert(value_of(text, "wampscope_protocol_violations_total") == 1);
    /* The per-type counters add up to the totals get_worker reports. */
    const rt_router_stats *st = rt_router_stats_get(T.rt);
    uint64_t rx = 0, tx = 0;
    for (int ser = 0; ser < WAMP_SER_COUNT; ser++) {
        for (int t = 0; t < RT_STATS_TYPE_SLOTS; t++) {
            rx += st->messages_rx_by_type[ser][t];
            tx += st->messages_tx_by_type[ser][t];
        }
    }
    ck_assert_uint_eq(st->messages_rx, 5); /* 2 HELLO, 2 CALL, 1 undecodable */
    ck_assert_uint_eq(rx, st->messages_rx);
    ck_assert_uint_eq(tx, st->messages_tx);
    ck_assert(value_of(text, "wampscope_received_bytes_total") == (double)st->bytes_rx);
    ck_assert(value_of(text, "wampscope_sent_bytes_total") == (double)st->bytes_tx);
    free(text);
    fake_conn_free(a);
    fake_conn_free(b);
}

END_TEST

START_TEST(test_traces_labelled_by_id)
{
    test_router_start_trace(&T, "t1", NULL);
    /* A trace id may hold quotes and backslashes: escaped in the label value. */
    test_router_start_trace(&T, "odd\"id\\", NULL);
    fake_conn *a = joined_on("ws1", WAMP_SER_JSON, "realm1");
    char *text = render(NULL);
    ck_assert(value_of(text, "wampscope_traces") == 2);
    ck_assert(value_of(text, "wampscope_trace_running{trace=\"t1\"}") == 1);
    ck_assert(value_of(text, "wampscope_trace_captured_records_total{trace=\"t1\"}") >= 2);
    ck_assert(value_of(text, "wampscope_trace_records{trace=\"t1\"}") >= 2);
    ck_assert(value_of(text, "wampscope_trace_running{trace=\"odd\\\"id\\\\\"}") == 1);
    free(text);
    fake_conn_free(a);
}

END_TEST

/* The wire capture's figures, only when it runs (its ring, what it captured and let go). */
START_TEST(test_wire_capture)
{
    char *text = render(NULL);
    ck_assert_ptr_null(strstr(text, "wampscope_wire_capture"));
    free(text);
    rt_router_free(T.rt);
    T.cfg.tracing_wire_capture = 4096;
    T.rt = rt_router_new(&T.cfg, fake_clock_now, &T.clock);
    ck_assert_ptr_nonnull(T.rt);
    rt_wire_conn *wc = rt_wire_conn_start(T.rt, NULL, TRACE_WIRE_WEBSOCKET, WAMP_SER_JSON, 0);
    ck_assert_ptr_nonnull(wc);
    unsigned char frames[2 + 100];
    frames[0] = 0x81; /* a final text frame of 100 octets */
    frames[1] = 100;
    memset(frames + 2, 'x', 100);
    for (int i = 0; i < 100; i++) { /* 100 messages in chunks of 152 octets: some let go */
        rt_wire_conn_tx(T.rt, wc, frames, sizeof(frames));
    }
    text = render(NULL);
    ck_assert(value_of(text, "wampscope_wire_capture_messages_total") == 100);
    double dropped = value_of(text, "wampscope_wire_capture_dropped_messages_total");
    ck_assert(dropped > 0 && dropped < 100);
    ck_assert(value_of(text, "wampscope_wire_capture_capacity_bytes") == 4096);
    double used = value_of(text, "wampscope_wire_capture_bytes");
    ck_assert(used == (100 - dropped) * (TRACE_WIRE_CHUNK_HEADER + 104));
    free(text);
    rt_wire_conn_free(wc);
}

END_TEST

START_TEST(test_persisted_trace_fsyncs)
{
    /* A persisted trace whose every write is fsynced: its fsyncs as a histogram, and every
     * record it holds once it stopped counted as persisted. An in-memory trace has neither. */
    char dir[256];
    tmp_dir_make(dir, sizeof(dir), "check_rt_metrics");
    trace_persist_config pc = {.data_dir = dir, .fsync = TRACE_FSYNC_BATCH};
    ck_assert_int_eq(trace_hub_set_persist(rt_router_trace_hub(T.rt), &pc), WAMP_OK);
    trace *t = test_router_start_trace(&T, "p1", "{\"persist\": true}");
    test_router_start_trace(&T, "m1", NULL);
    fake_conn *a = joined_on("ws1", WAMP_SER_JSON, "realm1");
    ck_assert(trace_stop(t, TRACE_STOP_STOPPED, 2, 2));
    uint64_t records = trace_records(t);
    ck_assert_uint_ge(records, 2);
    char *text = render(NULL);
    ck_assert(value_of(text, "wampscope_trace_records_persisted_total{trace=\"p1\"}") ==
              (double)records);
    double count = value_of(text, "wampscope_trace_fsync_seconds_count{trace=\"p1\"}");
    ck_assert(count >= 2); /* the segment and its index at least */
    ck_assert(value_of(text, "wampscope_trace_fsync_seconds_bucket{trace=\"p1\",le=\"+Inf\"}") ==
              count);
    ck_assert(value_of(text, "wampscope_trace_fsync_seconds_bucket{trace=\"p1\",le=\"2.5\"}") >= 0);
    ck_assert(value_of(text, "wampscope_trace_fsync_seconds_sum{trace=\"p1\"}") > 0);
    ck_assert(value_of(text, "wampscope_trace_fsync_seconds_count{trace=\"m1\"}") == -1);
    ck_assert(value_of(text, "wampscope_trace_records_persisted_total{trace=\"m1\"}") == -1);
    free(text);
    fake_conn_free(a);
    ck_assert_int_eq(trace_hub_delete(rt_router_trace_hub(T.rt), "p1"), WAMP_OK);
    tmp_dir_remove(dir);
}

END_TEST

START_TEST(test_refused_handshakes_by_reason)
{
    rt_router_refused_handshake(T.rt, RT_REFUSAL_PATH, "ws1", "10.0.0.1:4000", NULL);
    rt_router_refused_handshake(T.rt, RT_REFUSAL_PATH, "ws1", "10.0.0.1:4001", NULL);
    rt_router_refused_handshake(T.rt, RT_REFUSAL_SUBPROTOCOL, "ws1", "10.0.0.1:4002", NULL);
    char *text = render(NULL);
    ck_assert(value_of(text, "wampscope_handshakes_refused_total{reason=\"path\"}") == 2);
    ck_assert(value_of(text, "wampscope_handshakes_refused_total{reason=\"subprotocol\"}") == 1);
    ck_assert(value_of(text, "wampscope_handshakes_refused_total{reason=\"request\"}") == 0);
    free(text);
}

END_TEST

/* The web transports' answers by status class, as get_worker's http_responses_*xx. */
START_TEST(test_http_responses_by_class)
{
    static const unsigned statuses[] = {200, 200, 304, 404, 503, 101, 99, 600};
    for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        rt_router_http_response(T.rt, statuses[i]);
    }
    char *text = render(NULL);

    static const struct {
        const char *cls;
        double n;
    } want[] = {{"1xx", 1}, {"2xx", 2}, {"3xx", 1}, {"4xx", 1}, {"5xx", 1}};

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char key[96];
        snprintf(key, sizeof(key), "wampscope_http_responses_total{class=\"%s\"}", want[i].cls);
        ck_assert_msg(value_of(text, key) == want[i].n, "%s", key);
    }
    free(text);
}

END_TEST

START_TEST(test_process_figures)
{
    rt_metrics_proc p;
    ck_assert(rt_metrics_proc_read(&p));
    ck_assert_uint_gt(p.resident_bytes, 0);
    ck_assert_uint_ge(p.virtual_bytes, p.resident_bytes);
    ck_assert_uint_ge(p.open_fds, 3); /* stdin, stdout, stderr */
    ck_assert_uint_ge(p.max_fds, p.open_fds);
    ck_assert(p.start_time_seconds > 1e9);
    ck_assert(p.cpu_seconds >= 0);
    char *text = render(&p);
    ck_assert(value_of(text, "process_open_fds") == (double)p.open_fds);
    ck_assert(value_of(text, "process_resident_memory_bytes") == (double)p.resident_bytes);
    ck_assert(value_of(text, "process_start_time_seconds") > 1e9);
    free(text);
}

END_TEST

START_TEST(test_trace_level_lines)
{
    fake_conn *a = joined_on("ws1", WAMP_SER_JSON, "realm1");
    log_capture lc;
    /* At debug: no message lines. */
    rt_log_set_level(RT_LOG_LEVEL_DEBUG);
    log_capture_begin(&lc);
    fake_conn_send(a, "[48, 1, {}, \"com.example.none\"]");
    fake_conn_clear(a);
    char *out = log_capture_end(&lc);
    ck_assert_uint_eq(log_count_lines(out, "rx CALL"), 0);
    free(out);
    /* At trace: one line per message in and out, with its session, realm and size, and never
     * its payload. */
    rt_log_set_level(RT_LOG_LEVEL_TRACE);
    log_capture_begin(&lc);
    fake_conn_send(a, "[48, 2, {}, \"com.example.none\", [\"secret-arg\"]]");
    fake_conn_clear(a);
    out = log_capture_end(&lc);
    rt_log_set_level(RT_LOG_LEVEL_INFO);
    ck_assert_uint_eq(log_count_lines(out, "TRACE"), 2);
    ck_assert_uint_eq(log_count_lines(out, "rx CALL (json) dir=rx type=CALL realm=realm1 bytes="),
                      1);
    ck_assert_uint_eq(log_count_lines(out, "tx ERROR (json) dir=tx type=ERROR realm=realm1"), 1);
    ck_assert_ptr_null(strstr(out, "secret-arg"));
    free(out);
    fake_conn_free(a);
}

END_TEST

static Suite *rt_metrics_suite(void)
{
    Suite *s = suite_create("rt_metrics");
    TCase *tc = tcase_create("render");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_format_of_an_idle_router);
    tcase_add_test(tc, test_sessions_by_realm_and_transport);
    tcase_add_test(tc, test_cluster_link);
    tcase_add_test(tc, test_messages_by_type_and_serializer);
    tcase_add_test(tc, test_traces_labelled_by_id);
    tcase_add_test(tc, test_wire_capture);
    tcase_add_test(tc, test_persisted_trace_fsyncs);
    tcase_add_test(tc, test_refused_handshakes_by_reason);
    tcase_add_test(tc, test_http_responses_by_class);
    tcase_add_test(tc, test_process_figures);
    tcase_add_test(tc, test_trace_level_lines);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_metrics_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
