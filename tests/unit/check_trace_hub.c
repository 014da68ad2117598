/* check_trace_hub.c: the trace registry (names, duplicates, limits, stop/delete), auto-stop,
 * live-feed batching, and the capture path (filters first, shared bytes, no allocation when
 * nothing is kept). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "alloc_count.h"
#include "tmp_dir.h"
#include "trace.h"
#include "trace_hub.h"
#include "trace_record.h"
#include "trace_render.h"
#include "trace_store.h"
#include "trace_strip.h"
#include "wamp_buf.h"
#include "wamp_codec.h"
#include "wamp_types.h"

#define PC0 ((uint64_t)5000000000u)          /* monotonic base: 5 s */
#define TS0 ((uint64_t)1700000000000000000u) /* wall base: 2023-11-14T22:13:20Z */
#define MS  ((uint64_t)1000000u)

static trace_hub *hub_of(size_t max)
{
    trace_hub *h = trace_hub_new(max, "mgmt");
    ck_assert_ptr_nonnull(h);
    return h;
}

/* A hub of 4 traces persisting into a new temporary directory (its path in dir, for
 * tmp_dir_remove()), in segments of segment_bytes (0 = the default). */
static trace_hub *persisted_hub(char *dir, size_t dir_len, uint64_t segment_bytes)
{
    tmp_dir_make(dir, dir_len, "check_trace_hub");
    trace_hub *h = hub_of(4);
    trace_persist_config pc = {.data_dir = dir, .segment_bytes = segment_bytes};
    ck_assert_int_eq(trace_hub_set_persist(h, &pc), WAMP_OK);
    return h;
}

/* Starts a trace at PC0 + at_ms; options as JSON text (NULL = defaults). */
static trace *start_at(trace_hub *h, const char *id, const char *opts, uint64_t at_ms)
{
    json_t *j = opts ? json_loads(opts, 0, NULL) : NULL;
    ck_assert(!opts || j);
    trace *t = NULL;
    char why[200] = "";
    wamp_err err =
            trace_hub_start(h, id, j, PC0 + at_ms * MS, TS0 + at_ms * MS, &t, why, sizeof(why));
    ck_assert_msg(err == WAMP_OK, "start %s: %s (%s)", id ? id : "(null)", wamp_strerror(err), why);
    json_decref(j);
    ck_assert_ptr_nonnull(t);
    return t;
}

static trace *start(trace_hub *h, const char *id, const char *opts)
{
    return start_at(h, id, opts, 0);
}

static const char publish_json[] = "[16,1,{},\"com.example.topic\",[1,2]]";

/* A PUBLISH received from session 7 in realm1 at PC0 + at_ms. */
static size_t offer_rx_at(trace_hub *h, const char *realm, uint64_t at_ms)
{
    trace_ctx c = {.direction = TRACE_RX,
                   .msg_type = WAMP_MSG_PUBLISH,
                   .session_id = 7,
                   .realm = realm,
                   .authid = "alice",
                   .authrole = "user",
                   .uri = "com.example.topic"};
    trace_input in = {.pc_ns = PC0 + at_ms * MS,
                      .ts_ns = TS0 + at_ms * MS,
                      .ser = WAMP_SER_JSON,
                      .bytes = publish_json,
                      .len = sizeof(publish_json) - 1};
    return trace_hub_on_message(h, &c, &in);
}

static size_t offer_rx(trace_hub *h)
{
    return offer_rx_at(h, "realm1", 0);
}

static size_t held(const trace *t)
{
    return trace_store_records(trace_get_store(t));
}

START_TEST(test_names_trace1_trace2)
{
    trace_hub *h = hub_of(8);
    ck_assert_str_eq(trace_id(start(h, NULL, NULL)), "trace1");
    ck_assert_str_eq(trace_id(start(h, "trace3", NULL)), "trace3");
    ck_assert_str_eq(trace_id(start(h, NULL, NULL)), "trace2");
    /* trace3 is taken: skipped. */
    ck_assert_str_eq(trace_id(start(h, NULL, NULL)), "trace4");
    /* Names are not reused after a delete. */
    ck_assert_int_eq(trace_hub_stop(h, "trace4", PC0, TS0, NULL), WAMP_OK);
    ck_assert_int_eq(trace_hub_delete(h, "trace4"), WAMP_OK);
    ck_assert_str_eq(trace_id(start(h, NULL, NULL)), "trace5");
    /* Listing is oldest first. */
    const char *order[] = {"trace1", "trace3", "trace2", "trace5"};
    ck_assert_uint_eq(trace_hub_count(h), 4);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_str_eq(trace_id(trace_hub_at(h, i)), order[i]);
    }
    ck_assert_ptr_null(trace_hub_at(h, 4));
    ck_assert_ptr_eq(trace_hub_find(h, "trace2"), trace_hub_at(h, 2));
    ck_assert_ptr_null(trace_hub_find(h, "trace4"));
    ck_assert_ptr_null(trace_hub_find(h, NULL));
    trace_hub_free(h);
    trace_hub_free(NULL);
}

END_TEST

START_TEST(test_duplicate_running_vs_stopped)
{
    trace_hub *h = hub_of(8);
    trace *a = start(h, "a", NULL);
    trace *out = NULL;
    char why[200];
    ck_assert_int_eq(trace_hub_start(h, "a", NULL, PC0, TS0, &out, why, sizeof(why)), WAMP_EEXIST);
    ck_assert_ptr_eq(out, a);
    ck_assert(trace_is_running(out)); /* -> crossbar.error.already_running */
    ck_assert_ptr_nonnull(strstr(why, "already running"));
    ck_assert_int_eq(trace_hub_stop(h, "a", PC0, TS0, &out), WAMP_OK);
    ck_assert_ptr_eq(out, a);
    ck_assert_int_eq(trace_hub_start(h, "a", NULL, PC0, TS0, &out, why, sizeof(why)), WAMP_EEXIST);
    ck_assert_ptr_eq(out, a);
    ck_assert(!trace_is_running(out)); /* -> crossbar.error.already_exists */
    ck_assert_ptr_nonnull(strstr(why, "delete it first"));
    /* After delete, the id is free again. */
    ck_assert_int_eq(trace_hub_delete(h, "a"), WAMP_OK);
    start(h, "a", NULL);
    ck_assert_uint_eq(trace_hub_count(h), 1);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_stop_and_delete_errors)
{
    trace_hub *h = hub_of(8);
    trace *out = (trace *)1;
    ck_assert_int_eq(trace_hub_stop(h, "nope", PC0, TS0, &out), WAMP_ENOTFOUND);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(trace_hub_delete(h, "nope"), WAMP_ENOTFOUND);
    ck_assert_int_eq(trace_hub_delete(h, NULL), WAMP_ENOTFOUND);
    trace *t = start(h, "t", NULL);
    ck_assert_int_eq(trace_hub_delete(h, "t"), WAMP_EDENIED); /* running: not_stopped */
    ck_assert_uint_eq(trace_hub_count(h), 1);
    ck_assert_int_eq(trace_hub_stop(h, "t", PC0 + 5 * MS, TS0 + 5 * MS, NULL), WAMP_OK);
    /* Stopping again is not an error and changes nothing. */
    ck_assert_int_eq(trace_hub_stop(h, "t", PC0 + 9 * MS, TS0 + 9 * MS, NULL), WAMP_OK);
    ck_assert_uint_eq(trace_ended_ns(t), TS0 + 5 * MS);
    ck_assert_str_eq(trace_stop_reason_name(trace_get_stop_reason(t)), "stopped");
    ck_assert_int_eq(trace_hub_delete(h, "t"), WAMP_OK);
    ck_assert_uint_eq(trace_hub_count(h), 0);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_max_traces)
{
    trace_hub *h = hub_of(2);
    ck_assert_uint_eq(trace_hub_max_traces(h), 2);
    start(h, "a", NULL);
    start(h, "b", NULL);
    trace *out = (trace *)1;
    char why[200] = "";
    ck_assert_int_eq(trace_hub_start(h, "c", NULL, PC0, TS0, &out, why, sizeof(why)), WAMP_ETOOBIG);
    ck_assert_ptr_null(out);
    ck_assert_ptr_nonnull(strstr(why, "too many traces"));
    /* An auto name is not consumed by a refused start. */
    ck_assert_int_eq(trace_hub_start(h, NULL, NULL, PC0, TS0, &out, why, sizeof(why)),
                     WAMP_ETOOBIG);
    /* Stopped traces count (they hold records) until deleted. */
    trace_hub_stop(h, "a", PC0, TS0, NULL);
    ck_assert_int_eq(trace_hub_start(h, "c", NULL, PC0, TS0, &out, why, sizeof(why)), WAMP_ETOOBIG);
    ck_assert_int_eq(trace_hub_delete(h, "a"), WAMP_OK);
    ck_assert_str_eq(trace_id(start(h, NULL, NULL)), "trace1");
    ck_assert_ptr_null(trace_hub_new(0, "mgmt"));
    trace_hub_free(h);
}

END_TEST

/* The flight recorder's reserved id: its own slot outside max_traces, restart with the reserved
 * options when start_trace gives none. */
START_TEST(test_reserved_id_outside_max_traces)
{
    trace_hub *h = hub_of(1);
    json_t *fo = json_loads("{\"limit\": 7, \"trace_app_payload\": false}", 0, NULL);
    ck_assert_int_eq(trace_hub_reserve(h, "fr", fo), WAMP_OK);
    json_decref(fo); /* copied */
    /* One reserved id per hub; ids and options are checked. */
    ck_assert_int_eq(trace_hub_reserve(h, "other", NULL), WAMP_EINVAL);
    trace_hub *h2 = hub_of(1);
    ck_assert_int_eq(trace_hub_reserve(h2, "", NULL), WAMP_EINVAL);
    json_t *arr = json_array();
    ck_assert_int_eq(trace_hub_reserve(h2, "x", arr), WAMP_EINVAL);
    json_decref(arr);
    trace_hub_free(h2);

    trace *fr = start(h, "fr", NULL);
    ck_assert_uint_eq(trace_get_options(fr)->limit, 7);
    ck_assert(!trace_get_options(fr)->trace_app_payload);
    /* max_traces 1 and the reserved trace running: one trace of the user's own still fits. */
    trace *mine = start(h, NULL, NULL);
    ck_assert_str_eq(trace_id(mine), "trace1");
    ck_assert_uint_eq(trace_get_options(mine)->limit, TRACE_OPT_LIMIT_DEFAULT);
    ck_assert_uint_eq(trace_hub_count(h), 2);
    trace *out = NULL;
    char why[200] = "";
    ck_assert_int_eq(trace_hub_start(h, "two", NULL, PC0, TS0, &out, why, sizeof(why)),
                     WAMP_ETOOBIG);
    ck_assert_str_eq(why, "too many traces: 1 are held (running or stopped), the limit is 1; "
                          "delete stopped traces first");
    /* Both record. */
    ck_assert_uint_eq(offer_rx(h), 2);
    ck_assert_uint_eq(held(fr), 1);
    ck_assert_uint_eq(held(mine), 1);
    /* Stopped, deleted and restarted with the reserved options (null options) while the user's
     * trace holds the only counted slot. */
    ck_assert_int_eq(trace_hub_stop(h, "fr", PC0, TS0, NULL), WAMP_OK);
    ck_assert_int_eq(trace_hub_start(h, "fr", NULL, PC0, TS0, &out, why, sizeof(why)), WAMP_EEXIST);
    ck_assert_int_eq(trace_hub_delete(h, "fr"), WAMP_OK);
    json_t *jnull = json_null();
    ck_assert_int_eq(trace_hub_start(h, "fr", jnull, PC0, TS0, &out, why, sizeof(why)), WAMP_OK);
    json_decref(jnull);
    ck_assert_uint_eq(trace_get_options(out)->limit, 7);
    ck_assert_int_eq(trace_hub_stop(h, "fr", PC0, TS0, NULL), WAMP_OK);
    ck_assert_int_eq(trace_hub_delete(h, "fr"), WAMP_OK);
    /* Given options win over the reserved ones. */
    fr = start(h, "fr", "{\"limit\": 3}");
    ck_assert_uint_eq(trace_get_options(fr)->limit, 3);
    ck_assert(trace_get_options(fr)->trace_app_payload);
    ck_assert_uint_eq(trace_hub_count(h), 2);
    /* Deleting the user's trace frees its slot; the reserved one never takes it. */
    ck_assert_int_eq(trace_hub_stop(h, "trace1", PC0, TS0, NULL), WAMP_OK);
    ck_assert_int_eq(trace_hub_delete(h, "trace1"), WAMP_OK);
    start(h, "again", NULL);
    ck_assert_uint_eq(trace_hub_count(h), 2);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_invalid_options_and_id)
{
    trace_hub *h = hub_of(4);
    json_t *bad = json_pack("{s:i}", "limit", 0);
    trace *out = (trace *)1;
    char why[200] = "";
    ck_assert_int_eq(trace_hub_start(h, "x", bad, PC0, TS0, &out, why, sizeof(why)), WAMP_EINVAL);
    ck_assert_ptr_null(out);
    ck_assert_str_eq(why, "limit: must be an integer from 1 to 10000000 (got 0)");
    ck_assert_uint_eq(trace_hub_count(h), 0);
    ck_assert(!trace_hub_is_active(h));
    json_decref(bad);
    ck_assert_int_eq(trace_hub_start(h, "", NULL, PC0, TS0, &out, why, sizeof(why)), WAMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "trace_id:"));
    ck_assert_int_eq(trace_hub_start(h, "a\nb", NULL, PC0, TS0, &out, why, sizeof(why)),
                     WAMP_EINVAL);
    char long_id[TRACE_ID_MAX + 2];
    memset(long_id, 'x', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    ck_assert_int_eq(trace_hub_start(h, long_id, NULL, PC0, TS0, &out, why, sizeof(why)),
                     WAMP_EINVAL);
    /* The id is checked before the limit: still EINVAL with a full hub. */
    trace_hub *full = hub_of(1);
    start(full, "only", NULL);
    ck_assert_int_eq(trace_hub_start(full, "", NULL, PC0, TS0, &out, why, sizeof(why)),
                     WAMP_EINVAL);
    trace_hub_free(full);
    long_id[TRACE_ID_MAX] = '\0';
    ck_assert(trace_id_is_valid(long_id));
    ck_assert_uint_eq(trace_hub_count(h), 0);
    /* A refused auto-named start does not consume the name. */
    json_t *bad2 = json_pack("{s:i}", "persist", 1);
    ck_assert_int_eq(trace_hub_start(h, NULL, bad2, PC0, TS0, &out, why, sizeof(why)), WAMP_EINVAL);
    json_decref(bad2);
    ck_assert_str_eq(trace_id(start(h, NULL, NULL)), "trace1");
    trace_hub_free(h);
}

END_TEST

START_TEST(test_is_active_only_while_running)
{
    trace_hub *h = hub_of(4);
    ck_assert(!trace_hub_is_active(h));
    start(h, "a", NULL);
    ck_assert(trace_hub_is_active(h));
    start(h, "b", NULL);
    trace_hub_stop(h, "a", PC0, TS0, NULL);
    ck_assert(trace_hub_is_active(h));
    trace_hub_stop(h, "b", PC0, TS0, NULL);
    ck_assert(!trace_hub_is_active(h));
    trace_hub_delete(h, "a");
    ck_assert(!trace_hub_is_active(h));
    start(h, "c", NULL);
    start(h, "d", NULL);
    ck_assert(trace_hub_is_active(h));
    trace_hub_shutdown(h, PC0 + MS, TS0 + MS);
    ck_assert(!trace_hub_is_active(h));
    ck_assert_str_eq(trace_stop_reason_name(trace_get_stop_reason(trace_hub_find(h, "c"))),
                     "shutdown");
    ck_assert_str_eq(trace_stop_reason_name(trace_get_stop_reason(trace_hub_find(h, "d"))),
                     "shutdown");
    /* b keeps its own reason. */
    ck_assert_str_eq(trace_stop_reason_name(trace_get_stop_reason(trace_hub_find(h, "b"))),
                     "stopped");
    ck_assert_uint_eq(offer_rx(h), 0);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_stop_keeps_records_readable)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "t", NULL);
    for (int i = 0; i < 5; i++) {
        ck_assert_uint_eq(offer_rx(h), 1);
    }
    trace_hub_stop(h, "t", PC0 + MS, TS0 + MS, NULL);
    ck_assert_uint_eq(offer_rx(h), 0); /* stopped: nothing more */
    const trace_store *st = trace_get_store(t);
    ck_assert_uint_eq(trace_store_records(st), 5);
    ck_assert_uint_eq(trace_store_next_seq(st), 5);
    const trace_record *r = trace_store_get(st, 4, &(trace_record){0});
    ck_assert_ptr_nonnull(r);
    size_t len;
    const void *data = trace_record_data(r, &len);
    ck_assert_uint_eq(len, sizeof(publish_json) - 1);
    ck_assert_mem_eq(data, publish_json, sizeof(publish_json) - 1);
    /* Appending to a stopped trace stores nothing. */
    trace_record extra;
    memset(&extra, 0, sizeof(extra));
    ck_assert_uint_eq(trace_append_take(t, &extra), TRACE_SEQ_NONE);
    ck_assert_uint_eq(held(t), 5);
    trace_hub_free(h);
}

END_TEST

/* The effective limit / max_bytes of t: in its store (whose budget is held to
 * TRACE_STORE_HOLD_MAX) and in the options its metadata shows. */
static void assert_limits(const trace *t, size_t limit, uint64_t max_bytes)
{
    ck_assert_uint_eq(trace_store_limit(trace_get_store(t)), limit);
    ck_assert_uint_eq(trace_store_max_bytes(trace_get_store(t)),
                      max_bytes < TRACE_STORE_HOLD_MAX ? max_bytes : TRACE_STORE_HOLD_MAX);
    const trace_options *o = trace_get_options(t);
    ck_assert_uint_eq(o->limit, limit);
    ck_assert_uint_eq(o->max_bytes, max_bytes);
    ck_assert_int_eq(json_integer_value(json_object_get(o->json, "limit")), (json_int_t)limit);
    ck_assert_int_eq(json_integer_value(json_object_get(o->json, "max_bytes")),
                     (json_int_t)max_bytes);
}

START_TEST(test_configured_defaults)
{
    trace_hub *h = hub_of(8);
    /* Built-in defaults until set. */
    assert_limits(start(h, "builtin", NULL), TRACE_OPT_LIMIT_DEFAULT, TRACE_OPT_MAX_BYTES_DEFAULT);

    trace_hub_set_defaults(h, 3, 4096);
    trace *d = start(h, "defaults", NULL);
    assert_limits(d, 3, 4096);
    assert_limits(start(h, "other_opts", "{\"direction\": \"rx\"}"), 3, 4096);
    /* Explicit values win, each on its own. */
    assert_limits(start(h, "explicit", "{\"limit\": 7, \"max_bytes\": 2048}"), 7, 2048);
    assert_limits(start(h, "limit_only", "{\"limit\": 7}"), 7, 4096);
    assert_limits(start(h, "bytes_only", "{\"max_bytes\": 2048}"), 3, 2048);
    /* Traces already held keep theirs. */
    assert_limits(trace_hub_find(h, "builtin"), TRACE_OPT_LIMIT_DEFAULT,
                  TRACE_OPT_MAX_BYTES_DEFAULT);
    /* The default limit is enforced: the oldest records are dropped beyond it. */
    for (int i = 0; i < 5; i++) {
        offer_rx(h);
    }
    ck_assert_uint_eq(held(d), 3);
    ck_assert_uint_eq(trace_store_dropped(trace_get_store(d)), 2);
    ck_assert_uint_eq(held(trace_hub_find(h, "explicit")), 5);

    /* 0 keeps (restores) the built-in defaults, one field at a time. */
    trace_hub_set_defaults(h, 0, 4096);
    assert_limits(start(h, "zero_limit", NULL), TRACE_OPT_LIMIT_DEFAULT, 4096);
    trace_hub_set_defaults(h, 3, 0);
    assert_limits(start(h, "zero_bytes", NULL), 3, TRACE_OPT_MAX_BYTES_DEFAULT);
    trace_hub_free(h);

    /* Out-of-range defaults are clamped into the options' ranges. */
    h = hub_of(2);
    trace_hub_set_defaults(h, (size_t)TRACE_OPT_LIMIT_MAX + 1, 1);
    assert_limits(start(h, "low", NULL), TRACE_OPT_LIMIT_MAX, TRACE_OPT_MAX_BYTES_MIN);
    trace_hub_set_defaults(h, 1, TRACE_OPT_MAX_BYTES_MAX + 1);
    assert_limits(start(h, "high", NULL), 1, TRACE_OPT_MAX_BYTES_MAX);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_duration_auto_stop)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "t", "{\"duration\": 2}");
    trace *other = start(h, "u", NULL);
    trace_hub_tick(h, PC0 + 1999 * MS, TS0 + 1999 * MS, NULL, NULL);
    ck_assert(trace_is_running(t));
    ck_assert_uint_eq(trace_runtime_ns(t, PC0 + 1999 * MS), 1999 * MS);
    trace_hub_tick(h, PC0 + 2000 * MS, TS0 + 2000 * MS, NULL, NULL);
    ck_assert(!trace_is_running(t));
    ck_assert(trace_is_running(other));
    ck_assert_int_eq(trace_get_stop_reason(t), TRACE_STOP_DURATION);
    ck_assert_str_eq(trace_stop_reason_name(TRACE_STOP_DURATION), "duration");
    ck_assert_uint_eq(trace_ended_ns(t), TS0 + 2000 * MS);
    ck_assert_uint_eq(trace_runtime_ns(t, PC0 + 9000 * MS), 2000 * MS);
    /* Still active: u runs. Once u stops too, the hub goes quiet. */
    ck_assert(trace_hub_is_active(h));
    trace_hub_stop(h, "u", PC0, TS0, NULL);
    ck_assert(!trace_hub_is_active(h));
    trace_hub_free(h);
}

END_TEST

START_TEST(test_max_records_auto_stop)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "t", "{\"max_records\": 3}");
    ck_assert_uint_eq(offer_rx_at(h, "realm1", 1), 1);
    ck_assert_uint_eq(offer_rx_at(h, "realm1", 2), 1);
    ck_assert(trace_is_running(t));
    ck_assert_uint_eq(offer_rx_at(h, "realm1", 3), 1); /* the third is kept, then it stops */
    ck_assert(!trace_is_running(t));
    ck_assert(!trace_hub_is_active(h));
    ck_assert_int_eq(trace_get_stop_reason(t), TRACE_STOP_MAX_RECORDS);
    ck_assert_str_eq(trace_stop_reason_name(TRACE_STOP_MAX_RECORDS), "max_records");
    ck_assert_uint_eq(trace_ended_ns(t), TS0 + 3 * MS);
    ck_assert_uint_eq(offer_rx_at(h, "realm1", 4), 0);
    ck_assert_uint_eq(held(t), 3);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_batching_periods_tile)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "t", "{\"batching_period\": 200}");
    trace_batch b;
    uint64_t next_first = 0;
    /* Period 0 [0, 200): nothing before it ends. */
    ck_assert(!trace_take_batch(t, PC0 + 100 * MS, TS0 + 100 * MS, &b));
    offer_rx_at(h, "realm1", 150);
    offer_rx_at(h, "realm1", 160);
    offer_rx_at(h, "realm1", 170);
    ck_assert(!trace_take_batch(t, PC0 + 199 * MS, TS0 + 199 * MS, &b));
    ck_assert(trace_take_batch(t, PC0 + 200 * MS, TS0 + 200 * MS, &b));
    ck_assert_uint_eq(b.period, 0);
    ck_assert_uint_eq(b.first_seq, next_first);
    ck_assert_uint_eq(b.last_seq, 2);
    ck_assert_uint_eq(b.period_start_ns, TS0);
    ck_assert_uint_eq(b.finished_ns, TS0 + 200 * MS);
    next_first = b.last_seq + 1;
    /* Period 1 [200, 400). */
    ck_assert(!trace_take_batch(t, PC0 + 300 * MS, TS0 + 300 * MS, &b));
    offer_rx_at(h, "realm1", 350);
    offer_rx_at(h, "realm1", 390);
    ck_assert(trace_take_batch(t, PC0 + 400 * MS, TS0 + 400 * MS, &b));
    ck_assert_uint_eq(b.period, 1);
    ck_assert_uint_eq(b.first_seq, next_first);
    ck_assert_uint_eq(b.last_seq, 4);
    ck_assert_uint_eq(b.period_start_ns, TS0 + 200 * MS);
    next_first = b.last_seq + 1;
    /* Idle periods 2 and 3: nothing. */
    ck_assert(!trace_take_batch(t, PC0 + 600 * MS, TS0 + 600 * MS, &b));
    ck_assert(!trace_take_batch(t, PC0 + 800 * MS, TS0 + 800 * MS, &b));
    /* Period 4 [800, 1000), taken late (at 1150): the numbering stays aligned. */
    offer_rx_at(h, "realm1", 900);
    ck_assert(trace_take_batch(t, PC0 + 1150 * MS, TS0 + 1150 * MS, &b));
    ck_assert_uint_eq(b.period, 4);
    ck_assert_uint_eq(b.first_seq, next_first);
    ck_assert_uint_eq(b.last_seq, 5);
    ck_assert_uint_eq(b.period_start_ns, TS0 + 800 * MS);
    next_first = b.last_seq + 1;
    /* Period 5 [1000, 1200) holds 1150..1199; a stop at 1190 flushes at once. */
    offer_rx_at(h, "realm1", 1160);
    offer_rx_at(h, "realm1", 1170);
    trace_hub_stop(h, "t", PC0 + 1190 * MS, TS0 + 1190 * MS, NULL);
    ck_assert(trace_take_batch(t, PC0 + 1191 * MS, TS0 + 1191 * MS, &b));
    ck_assert_uint_eq(b.period, 5);
    ck_assert_uint_eq(b.first_seq, next_first);
    ck_assert_uint_eq(b.last_seq, 7);
    ck_assert_uint_eq(b.finished_ns, TS0 + 1190 * MS);
    ck_assert_uint_eq(b.last_seq + 1, trace_store_next_seq(trace_get_store(t)));
    ck_assert(!trace_take_batch(t, PC0 + 5000 * MS, TS0 + 5000 * MS, &b));
    trace_hub_free(h);
}

END_TEST

/* Records what trace_hub_tick() reports. */
typedef struct events_log {
    char seen[512];
    uint64_t next_first;
    bool tiles;
} events_log;

static void log_batch(void *ctx, trace *t, const trace_batch *b)
{
    events_log *log = ctx;
    char line[96];
    snprintf(line, sizeof(line), "batch %s %llu-%llu;", trace_id(t),
             (unsigned long long)b->first_seq, (unsigned long long)b->last_seq);
    strncat(log->seen, line, sizeof(log->seen) - strlen(log->seen) - 1);
    log->tiles = log->tiles && b->first_seq == log->next_first;
    log->next_first = b->last_seq + 1;
}

static void log_stopped(void *ctx, trace *t)
{
    events_log *log = ctx;
    char line[64];
    snprintf(line, sizeof(line), "stopped %s %s;", trace_id(t),
             trace_stop_reason_name(trace_get_stop_reason(t)));
    strncat(log->seen, line, sizeof(log->seen) - strlen(log->seen) - 1);
}

START_TEST(test_tick_reports_batches_then_stop_once)
{
    trace_hub *h = hub_of(4);
    start(h, "t", "{\"batching_period\": 100, \"duration\": 1}");
    trace_hub_events ev = {.on_batch = log_batch, .on_stopped = log_stopped};
    events_log log = {.tiles = true};
    for (uint64_t ms = 0; ms <= 1500; ms += 10) {
        if (ms % 30 == 0 && ms < 1000) {
            offer_rx_at(h, "realm1", ms);
        }
        if (ms % 100 == 0) {
            trace_hub_tick(h, PC0 + ms * MS, TS0 + ms * MS, &ev, &log);
        }
    }
    ck_assert(log.tiles);
    ck_assert_uint_eq(log.next_first, 34); /* 0, 30, ..., 990: 34 records, all batched */
    /* The stop is reported exactly once, after the last batch. */
    const char *stop = strstr(log.seen, "stopped t duration;");
    ck_assert_ptr_nonnull(stop);
    ck_assert_str_eq(stop, "stopped t duration;");
    /* Without events the caller takes the notice itself, once. */
    start(h, "u", NULL);
    trace_hub_stop(h, "u", PC0, TS0, NULL);
    trace_hub_tick(h, PC0 + 2000 * MS, TS0 + 2000 * MS, NULL, NULL);
    ck_assert(trace_take_stop_notice(trace_hub_find(h, "u")));
    ck_assert(!trace_take_stop_notice(trace_hub_find(h, "u")));
    trace_hub_free(h);
}

END_TEST

START_TEST(test_rx_bytes_copied_into_each_store)
{
    trace_hub *h = hub_of(4);
    trace *a = start(h, "a", NULL);
    trace *b = start(h, "b", "{\"direction\": \"rx\"}");
    trace *c = start(h, "c", "{\"direction\": \"tx\"}");
    ck_assert_uint_eq(offer_rx(h), 2);
    const trace_record *ra = trace_store_get(trace_get_store(a), 0, &(trace_record){0});
    const trace_record *rb = trace_store_get(trace_get_store(b), 0, &(trace_record){0});
    ck_assert_ptr_nonnull(ra);
    ck_assert_ptr_nonnull(rb);
    ck_assert_uint_eq(held(c), 0);
    /* A copy in each store's ring, no buffer object; not the caller's memory. */
    size_t la, lb;
    const void *da = trace_record_data(ra, &la);
    const void *db = trace_record_data(rb, &lb);
    ck_assert_ptr_null(ra->wire);
    ck_assert_ptr_nonnull(da);
    ck_assert_ptr_nonnull(db);
    ck_assert_ptr_ne(da, db);
    ck_assert_ptr_ne(da, (const void *)publish_json);
    ck_assert_uint_eq(la, sizeof(publish_json) - 1);
    ck_assert_uint_eq(lb, sizeof(publish_json) - 1);
    ck_assert_mem_eq(da, publish_json, sizeof(publish_json) - 1);
    ck_assert_mem_eq(db, publish_json, sizeof(publish_json) - 1);
    ck_assert_uint_eq(trace_store_bytes(trace_get_store(a)),
                      sizeof(publish_json) - 1 + TRACE_RECORD_OVERHEAD);
    ck_assert_uint_eq(ra->wire_ser, WAMP_SER_JSON);
    ck_assert_uint_eq(ra->ser_bytes[WAMP_SER_JSON], sizeof(publish_json) - 1);
    ck_assert_uint_eq(ra->ser_bytes[WAMP_SER_MSGPACK], 0);
    /* The peer and uri built from the context are shared as well. */
    ck_assert_ptr_eq(ra->peer, rb->peer);
    ck_assert_uint_eq(trace_peer_refs(ra->peer), 2);
    ck_assert_str_eq(trace_peer_realm(ra->peer), "realm1");
    ck_assert_uint_eq(trace_peer_session_id(ra->peer), 7);
    ck_assert_ptr_eq(ra->uri, rb->uri);
    ck_assert_str_eq(trace_str_get(ra->uri), "com.example.topic");
    ck_assert_uint_eq(ra->dir, TRACE_RX);
    ck_assert_uint_eq(ra->msg_type, WAMP_MSG_PUBLISH);
    trace_hub_stop(h, "a", PC0, TS0, NULL);
    ck_assert_int_eq(trace_hub_delete(h, "a"), WAMP_OK);
    ck_assert_mem_eq(trace_record_data(rb, &lb), publish_json, sizeof(publish_json) - 1);
    trace_hub_free(h);
}

END_TEST

/* r keeps the bytes of wire (a small message: a copy in its store's ring, r->wire NULL),
 * the same copy as every other record checked with the same *shared (NULL before the first):
 * a fan-out's repeats borrow their message's one copy. */
static void ck_keeps_copy(const trace_record *r, const wamp_buf *wire, const void **shared)
{
    size_t len = 0;
    const void *data = trace_record_data(r, &len);
    ck_assert_ptr_null(r->wire);
    ck_assert_uint_eq(len, wamp_buf_len(wire));
    ck_assert_mem_eq(data, wamp_buf_cdata(wire), len);
    ck_assert_ptr_ne(data, wamp_buf_cdata(wire));
    if (*shared) {
        ck_assert_ptr_eq(data, *shared);
    }
    *shared = data;
}

/* A sent message of payload_len payload bytes recorded in two traces: a small one is copied into
 * each store's ring (the router's buffer gains no reference), one larger than
 * TRACE_STORE_COPY_MAX is referenced (no copy). */
static void check_tx_keeps(size_t payload_len, bool copied)
{
    trace_hub *h = hub_of(4);
    trace *a = start(h, "a", NULL);
    start(h, "b", NULL);
    char *text = malloc(payload_len + 1);
    memset(text, 'x', payload_len);
    text[payload_len] = '\0';
    json_t *event = json_pack("[i,i,i,{},[s]]", 36, 5, 6, text);
    free(text);
    wamp_buf *json_wire = NULL, *mp_wire = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, event, &json_wire), WAMP_OK);
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_MSGPACK, event, &mp_wire), WAMP_OK);
    ck_assert(copied == (wamp_buf_len(mp_wire) <= TRACE_STORE_COPY_MAX));
    trace_peer *peer = trace_peer_new(9, "realm1", "bob", "user");
    trace_str *uri = trace_str_new("com.example.topic");
    uint8_t corr[TRACE_UUID_LEN] = {1, 2, 3};
    trace_ctx c = {.direction = TRACE_TX,
                   .msg_type = WAMP_MSG_EVENT,
                   .session_id = 9,
                   .realm = "realm1",
                   .authid = "bob",
                   .authrole = "user",
                   .uri = "com.example.topic"};
    trace_input in = {.pc_ns = PC0,
                      .ts_ns = TS0,
                      .peer = peer,
                      .uri = uri,
                      .correlation = corr,
                      .correlation_is_last = true,
                      .ser = WAMP_SER_MSGPACK,
                      .wire = mp_wire,
                      .msg = event,
                      .ser_bytes = {[WAMP_SER_JSON] = wamp_buf_len(json_wire),
                                    [WAMP_SER_MSGPACK] = wamp_buf_len(mp_wire)}};
    const unsigned char *bytes_before = wamp_buf_cdata(mp_wire);
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 2);
    const trace_record *r = trace_store_get(trace_get_store(a), 0, &(trace_record){0});
    size_t len = 0;
    const void *data = trace_record_data(r, &len);
    ck_assert_uint_eq(len, wamp_buf_len(mp_wire));
    ck_assert_mem_eq(data, bytes_before, len);
    if (copied) {
        /* Copied: the records hold no reference on the router's buffer. */
        ck_assert_uint_eq(wamp_buf_refs(mp_wire), 1);
        ck_assert_ptr_null(r->wire);
        ck_assert_ptr_ne(data, bytes_before);
    } else {
        /* No copy: both records point at the router's buffer, which gained two references. */
        ck_assert_uint_eq(wamp_buf_refs(mp_wire), 3);
        ck_assert_ptr_eq(r->wire, mp_wire);
        ck_assert_ptr_eq(data, bytes_before);
    }
    ck_assert_uint_eq(r->wire_ser, WAMP_SER_MSGPACK);
    ck_assert_uint_eq(r->ser_bytes[WAMP_SER_JSON], wamp_buf_len(json_wire));
    ck_assert_uint_eq(r->ser_bytes[WAMP_SER_MSGPACK], wamp_buf_len(mp_wire));
    /* The router's peer and uri objects are referenced, not copied. */
    ck_assert_ptr_eq(r->peer, peer);
    ck_assert_uint_eq(trace_peer_refs(peer), 3);
    ck_assert_ptr_eq(r->uri, uri);
    ck_assert_uint_eq(trace_str_refs(uri), 3);
    ck_assert_mem_eq(r->corr, corr, TRACE_UUID_LEN);
    ck_assert_uint_eq(r->flags, TRACE_CORR_HAS | TRACE_CORR_LAST);
    ck_assert_ptr_null(r->dropped);
    /* A drop with a static reason string. */
    in.dropped = "queue_full";
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 2);
    ck_assert_str_eq(trace_store_get(trace_get_store(a), 1, &(trace_record){0})->dropped,
                     "queue_full");
    trace_hub_free(h);
    ck_assert_uint_eq(wamp_buf_refs(mp_wire), 1);
    ck_assert_uint_eq(trace_peer_refs(peer), 1);
    ck_assert_uint_eq(trace_str_refs(uri), 1);
    trace_peer_unref(&peer);
    trace_str_unref(&uri);
    wamp_buf_unref(&json_wire);
    wamp_buf_unref(&mp_wire);
    json_decref(event);
}

START_TEST(test_tx_small_is_copied)
{
    check_tx_keeps(5, true);
}

END_TEST

START_TEST(test_tx_large_takes_a_reference_on_the_wire_buffer)
{
    check_tx_keeps(TRACE_STORE_COPY_MAX, false);
}

END_TEST

START_TEST(test_tx_dropped_before_encoding)
{
    trace_hub *h = hub_of(4);
    trace *a = start(h, "a", NULL);
    json_t *result = json_loads("[50,3,{},[42]]", 0, NULL);
    trace_ctx c = {.direction = TRACE_TX, .msg_type = WAMP_MSG_RESULT, .session_id = 3};
    trace_input in = {.pc_ns = PC0,
                      .ts_ns = TS0,
                      .ser = WAMP_SER_JSON,
                      .msg = result,
                      .dropped = "session_closed"};
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    const trace_record *r = trace_store_get(trace_get_store(a), 0, &(trace_record){0});
    /* Encoded here (rare path) so that the record still shows the message; nothing went on
     * the wire, so no serialization sizes. */
    ck_assert_ptr_nonnull(r->wire);
    ck_assert_mem_eq(wamp_buf_cdata(r->wire), "[50,3,{},[42]]", 14);
    ck_assert_uint_eq(r->ser_bytes[WAMP_SER_JSON], 0);
    ck_assert_str_eq(r->dropped, "session_closed");
    ck_assert_ptr_null(r->uri);
    json_decref(result);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_filters_choose_traces)
{
    trace_hub *h = hub_of(4);
    trace *all = start(h, "all", NULL);
    trace *r2 = start(h, "r2", "{\"realms\": [\"realm2\"]}");
    trace *m = start(h, "m", "{\"realms\": [\"mgmt\"]}");
    ck_assert_uint_eq(offer_rx_at(h, "realm1", 0), 1);
    ck_assert_uint_eq(offer_rx_at(h, "realm2", 0), 2);
    /* The management realm: only the trace that names it. */
    ck_assert_uint_eq(offer_rx_at(h, "mgmt", 0), 1);
    ck_assert_uint_eq(held(all), 2);
    ck_assert_uint_eq(held(r2), 1);
    ck_assert_uint_eq(held(m), 1);
    /* "all" keeps everything (tested inline by the hub) until it stops. */
    ck_assert(trace_keeps_all(all));
    ck_assert(!trace_keeps_all(r2));
    ck_assert_int_eq(trace_hub_stop(h, "all", PC0, TS0, NULL), WAMP_OK);
    ck_assert_uint_eq(offer_rx_at(h, "realm1", 0), 0);
    ck_assert_uint_eq(offer_rx_at(h, "realm2", 0), 1);
    ck_assert_uint_eq(held(all), 2);
    trace_hub_free(h);
}

END_TEST

/* Offers a tx EVENT with a wire buffer, a peer and a uri, and checks that nothing was
 * allocated, referenced or stored. */
static void assert_offer_costs_nothing(trace_hub *h, const char *realm)
{
    wamp_buf *wire = wamp_buf_new_copy("[36,1,2,{}]", 11);
    trace_peer *peer = trace_peer_new(1, realm, "a", "r");
    trace_str *uri = trace_str_new("com.x");
    json_t *msg = json_loads("[36,1,2,{}]", 0, NULL);
    trace_ctx c = {.direction = TRACE_TX,
                   .msg_type = WAMP_MSG_EVENT,
                   .session_id = 1,
                   .realm = realm,
                   .uri = "com.x"};
    trace_input in = {.pc_ns = PC0,
                      .ts_ns = TS0,
                      .peer = peer,
                      .uri = uri,
                      .ser = WAMP_SER_JSON,
                      .wire = wire,
                      .msg = msg};
    size_t mallocs = alloc_count_mallocs(), json_allocs = alloc_count_json();
    size_t kept = 0;
    for (int i = 0; i < 1000; i++) {
        kept += trace_hub_on_message(h, &c, &in);
    }
    size_t mallocs_after = alloc_count_mallocs(), json_allocs_after = alloc_count_json();
    ck_assert_uint_eq(kept, 0);
    ck_assert_uint_eq(json_allocs_after, json_allocs);
    ck_assert_uint_eq(mallocs_after, mallocs); /* meaningful in ASan builds, see top */
    ck_assert_uint_eq(wamp_buf_refs(wire), 1);
    ck_assert_uint_eq(trace_peer_refs(peer), 1);
    ck_assert_uint_eq(trace_str_refs(uri), 1);
    wamp_buf_unref(&wire);
    trace_peer_unref(&peer);
    trace_str_unref(&uri);
    json_decref(msg);
}

START_TEST(test_no_allocation_when_idle_or_rejected)
{
    trace_hub *h = hub_of(4);
    /* Nothing running at all. */
    assert_offer_costs_nothing(h, "realm1");
    /* Running traces whose filters reject the message. */
    trace *rx = start(h, "rx", "{\"direction\": \"rx\"}");
    trace *r9 = start(h, "r9", "{\"realms\": [\"realm9\"], \"uris\": [\"com.y\"]}");
    trace *def = start(h, "def", NULL);
    assert_offer_costs_nothing(h, "mgmt"); /* def excludes the management realm */
    trace_hub_stop(h, "def", PC0, TS0, NULL);
    assert_offer_costs_nothing(h, "realm1");
    ck_assert_uint_eq(held(rx) + held(r9) + held(def), 0);
    ck_assert_uint_eq(trace_store_next_seq(trace_get_store(rx)), 0);
#if ALLOC_COUNT_EVERY_MALLOC
    /* Sanity check of the hook itself: keeping a rx message allocates. */
    size_t before = alloc_count_mallocs();
    ck_assert_uint_eq(offer_rx(h), 1);
    ck_assert_uint_gt(alloc_count_mallocs(), before);
#endif
    trace_hub_free(h);
}

END_TEST

START_TEST(test_markers)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "t", "{\"msg_types\": [\"Call\"]}");
    offer_rx(h); /* filtered out */
    json_t *meta = json_pack("{s:s}", "note", "before deploy");
    uint64_t seq = 99;
    ck_assert_int_eq(trace_mark(t, "deploy", meta, PC0 + MS, TS0 + MS, &seq), WAMP_OK);
    ck_assert_uint_eq(seq, 0);
    ck_assert_int_eq(trace_mark(t, "again", NULL, PC0 + MS, TS0 + MS, &seq), WAMP_OK);
    ck_assert_uint_eq(seq, 1);
    const trace_record *r = trace_store_get(trace_get_store(t), 0, &(trace_record){0});
    ck_assert(trace_record_is_marker(r));
    ck_assert_str_eq(trace_str_get(r->uri), "deploy");
    ck_assert_mem_eq(wamp_buf_cdata(r->wire), "{\"note\":\"before deploy\"}", 24);
    ck_assert_int_eq(trace_mark(t, "", NULL, PC0, TS0, &seq), WAMP_EINVAL);
    json_t *arr = json_array();
    ck_assert_int_eq(trace_mark(t, "x", arr, PC0, TS0, &seq), WAMP_EINVAL);
    json_decref(arr);
    trace_hub_stop(h, "t", PC0, TS0, NULL);
    ck_assert_int_eq(trace_mark(t, "late", NULL, PC0, TS0, &seq), WAMP_ECLOSED);
    ck_assert_uint_eq(held(t), 2);
    json_decref(meta);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_connection_records)
{
    trace_hub *h = hub_of(6);
    trace *all = start(h, "all", NULL);
    trace *calls = start(h, "calls", "{\"msg_types\": [\"Call\"]}");
    trace *conns = start(h, "conns", "{\"msg_types\": [\"connection\", \"Call\"]}");
    trace *realm = start(h, "realm", "{\"msg_types\": [\"Connection\"], \"realms\": [\"realm1\"]}");
    trace *stopped = start(h, "stopped", NULL);
    trace_hub_stop(h, "stopped", PC0, TS0, NULL);
    json_t *info = json_pack("{s:s, s:s, s:s, s:s}", "event", "refused", "reason", "subprotocol",
                             "transport", "t1", "peer", "127.0.0.1:5555");
    /* Only running traces that keep everything, or that name "Connection" in msg_types and
     * restrict no realm, URI or peer, take it. */
    ck_assert_uint_eq(trace_hub_on_connection(h, info, PC0 + MS, TS0 + MS), 2);
    ck_assert_uint_eq(held(all), 1);
    ck_assert_uint_eq(held(calls), 0);
    ck_assert_uint_eq(held(conns), 1);
    ck_assert_uint_eq(held(realm), 0);
    ck_assert_uint_eq(held(stopped), 0);
    const trace_record *r = trace_store_get(trace_get_store(all), 0, &(trace_record){0});
    ck_assert(trace_record_is_connection(r));
    ck_assert(!trace_record_is_marker(r));
    ck_assert_ptr_null(r->peer);
    ck_assert_ptr_null(r->uri);
    json_t *j = trace_render_record(r, true);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(json_object_get(j, "msg_type")), "Connection");
    ck_assert(json_is_null(json_object_get(j, "direction")));
    ck_assert(json_is_null(json_object_get(j, "session_id")));
    ck_assert(json_is_null(json_object_get(j, "uri")));
    ck_assert(json_equal(json_object_get(j, "msg"), info));
    json_decref(j);
    /* Not an object: nothing stored. */
    json_t *arr = json_array();
    ck_assert_uint_eq(trace_hub_on_connection(h, arr, PC0, TS0), 0);
    ck_assert_uint_eq(held(all), 1);
    json_decref(arr);
    json_decref(info);
    trace_hub_free(h);
}

END_TEST

/* A persisted trace keeps connection records like any other and reads them back the same. */
START_TEST(test_connection_records_persisted)
{
    char dir[256];
    trace_hub *h = persisted_hub(dir, sizeof(dir), 0);
    trace *p = start(h, "p", "{\"persist\": true}");
    offer_rx(h);
    json_t *info = json_pack("{s:s, s:s}", "event", "refused", "reason", "path");
    ck_assert_uint_eq(trace_hub_on_connection(h, info, PC0 + MS, TS0 + MS), 1);
    offer_rx(h);
    json_t *recs = trace_render_records(p, 0, TRACE_SEQ_NONE, 10);
    ck_assert_uint_eq(json_array_size(recs), 3);
    json_t *c = json_array_get(recs, 1);
    ck_assert_str_eq(json_string_value(json_object_get(c, "msg_type")), "Connection");
    ck_assert(json_is_null(json_object_get(c, "session_id")));
    ck_assert(json_equal(json_object_get(c, "msg"), info));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(recs, 2), "msg_type")),
                     "Publish");
    json_decref(recs);
    json_decref(info);
    trace_hub_free(h);
    tmp_dir_remove(dir);
}

END_TEST

START_TEST(test_peer_and_uri_slots_filled_lazily)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "t", "{\"realms\": [\"realm2\"]}");
    trace_peer *peer_slot = NULL;
    trace_str *uri_slot = NULL;
    static const char bytes[] = "[48,1,{},\"com.p\",[]]";
    trace_ctx c = {.direction = TRACE_RX,
                   .msg_type = WAMP_MSG_CALL,
                   .session_id = 3,
                   .realm = "realm1",
                   .authid = "a",
                   .authrole = "r",
                   .uri = "com.p"};
    trace_input in = {.pc_ns = PC0,
                      .ts_ns = TS0,
                      .peer_slot = &peer_slot,
                      .uri_slot = &uri_slot,
                      .ser = WAMP_SER_JSON,
                      .bytes = bytes,
                      .len = sizeof(bytes) - 1};
    /* Rejected by the filter: the slots stay empty and nothing is allocated. */
    size_t mallocs = alloc_count_mallocs();
    size_t kept = trace_hub_on_message(h, &c, &in); /* no ck_assert around it: Check allocates */
    size_t mallocs_after = alloc_count_mallocs();
    ck_assert_uint_eq(kept, 0);
    ck_assert_uint_eq(mallocs_after, mallocs);
    ck_assert_ptr_null(peer_slot);
    ck_assert_ptr_null(uri_slot);
    /* Kept: created once, cached for the caller, reused by the next message. */
    c.realm = "realm2";
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    ck_assert_ptr_nonnull(peer_slot);
    ck_assert_ptr_nonnull(uri_slot);
    trace_peer *first_peer = peer_slot;
    trace_str *first_uri = uri_slot;
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    ck_assert_ptr_eq(peer_slot, first_peer);
    ck_assert_ptr_eq(uri_slot, first_uri);
    ck_assert_uint_eq(trace_peer_refs(peer_slot), 3); /* the caller's + two records */
    ck_assert_uint_eq(trace_str_refs(uri_slot), 4);   /* and the hub's URI cache */
    ck_assert_str_eq(trace_peer_realm(peer_slot), "realm2");
    ck_assert_str_eq(trace_str_get(uri_slot), "com.p");
    ck_assert_ptr_eq(trace_store_get(trace_get_store(t), 1, &(trace_record){0})->uri, uri_slot);
    /* A message without a URI leaves the uri slot alone. */
    c.uri = NULL;
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    ck_assert_ptr_null(trace_store_get(trace_get_store(t), 2, &(trace_record){0})->uri);
    trace_hub_free(h);
    ck_assert_uint_eq(trace_peer_refs(peer_slot), 1);
    ck_assert_uint_eq(trace_str_refs(uri_slot), 1);
    trace_peer_unref(&peer_slot);
    trace_str_unref(&uri_slot);
}

END_TEST

/* Every action needs its URI as a trace_str: the hub keeps one per URI text for the actions
 * that follow (no allocation per PUBLISH or CALL), and a different text, in the same cache
 * entry or not, never gets another's. */
START_TEST(test_action_uris_interned)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "t", NULL);
    trace_peer *peer = trace_peer_new(3, "realm1", "a", "r");
    trace_ctx c = {.direction = TRACE_RX,
                   .msg_type = WAMP_MSG_PUBLISH,
                   .session_id = 3,
                   .realm = "realm1",
                   .uri = "com.topic"};
    trace_str *slots[4] = {NULL, NULL, NULL, NULL};
    /* Four actions: two of com.topic, then a URI of another text, then com.topic again. */
    const char *uris[4] = {"com.topic", "com.topic", "com.other", "com.topic"};
    for (size_t i = 0; i < 4; i++) {
        c.uri = uris[i];
        trace_input in = {.pc_ns = PC0, .ts_ns = TS0, .peer = peer, .uri_slot = &slots[i]};
        ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
        ck_assert_ptr_nonnull(slots[i]);
        ck_assert_str_eq(trace_str_get(slots[i]), uris[i]);
    }
    ck_assert_ptr_eq(slots[1], slots[0]);
    ck_assert_ptr_ne(slots[2], slots[0]);
    /* Without a slot, each kept message still gets the shared object. */
    c.uri = "com.other";
    trace_input in = {.pc_ns = PC0, .ts_ns = TS0, .peer = peer};
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    ck_assert_ptr_eq(trace_store_get(trace_get_store(t), 4, &(trace_record){0})->uri, slots[2]);
    /* 2048 other texts (they cover every entry of the cache): com.topic's entry is replaced, and
     * a lookup after that makes a new object of the right text, never returns another text's. */
    char text[32];
    for (int i = 0; i < 2048; i++) {
        snprintf(text, sizeof(text), "com.t%d", i);
        c.uri = text;
        trace_input k = {.pc_ns = PC0, .ts_ns = TS0, .peer = peer};
        ck_assert_uint_eq(trace_hub_on_message(h, &c, &k), 1);
        ck_assert_str_eq(trace_str_get(trace_store_get(trace_get_store(t), 5 + (uint64_t)i,
                                                       &(trace_record){0})
                                               ->uri),
                         text);
    }
    c.uri = "com.topic";
    trace_input again = {.pc_ns = PC0, .ts_ns = TS0, .peer = peer};
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &again), 1);
    const trace_str *now = trace_store_get(trace_get_store(t), 2053, &(trace_record){0})->uri;
    ck_assert_str_eq(trace_str_get(now), "com.topic");
    ck_assert_ptr_ne(now, slots[0]);
    trace_hub_free(h);
    /* The hub released its cache: the callers' slots hold the last references. */
    ck_assert_uint_eq(trace_str_refs(slots[0]), 3); /* slots 0, 1 and 3 (the record's went) */
    ck_assert_uint_eq(trace_str_refs(slots[2]), 1);
    for (size_t i = 0; i < 4; i++) {
        trace_str_unref(&slots[i]);
    }
    trace_peer_unref(&peer);
}

END_TEST

/* An EVENT (wire, decoded: event) of the action corr on uri sent to peer at PC0, offered to the
 * hub as the router does: the last of its action or not, delivered or dropped. */
static size_t offer_event(trace_hub *h, trace_peer *peer, trace_str *uri, const uint8_t *corr,
                          const wamp_buf *wire, const json_t *event, bool last, const char *dropped)
{
    trace_ctx c = {.direction = TRACE_TX,
                   .msg_type = WAMP_MSG_EVENT,
                   .session_id = trace_peer_session_id(peer),
                   .realm = trace_peer_realm(peer),
                   .authid = trace_peer_authid(peer),
                   .authrole = trace_peer_authrole(peer),
                   .uri = trace_str_get(uri)};
    trace_input in = {.pc_ns = PC0,
                      .ts_ns = TS0,
                      .peer = peer,
                      .uri = uri,
                      .correlation = corr,
                      .correlation_is_last = last,
                      .ser = WAMP_SER_JSON,
                      .wire = wire,
                      .msg = event,
                      .ser_bytes = {[WAMP_SER_JSON] = wamp_buf_len(wire)},
                      .dropped = dropped};
    return trace_hub_on_message(h, &c, &in);
}

/* What the repeat tests send: an EVENT encoded twice (two buffers of one message), the peers of
 * three receivers, the topic and a correlation. */
typedef struct repeat_fix {
    json_t *event;
    wamp_buf *wire, *other;
    trace_peer *peers[3];
    trace_str *uri;
    uint8_t corr[TRACE_UUID_LEN];
} repeat_fix;

static void repeat_fix_init(repeat_fix *f)
{
    memset(f, 0, sizeof(*f));
    f->event = json_loads("[36,5,6,{},[\"hello\"]]", 0, NULL);
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, f->event, &f->wire), WAMP_OK);
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, f->event, &f->other), WAMP_OK);
    const char *who[3] = {"bob", "carol", "dave"};
    for (size_t i = 0; i < 3; i++) {
        f->peers[i] = trace_peer_new(9 + i, "realm1", who[i], "user");
    }
    f->uri = trace_str_new("com.example.topic");
    f->corr[0] = 1;
    f->corr[1] = 2;
    f->corr[2] = 3;
}

/* After the hub is freed: nothing of f is referenced any more. */
static void repeat_fix_fini(repeat_fix *f)
{
    ck_assert_uint_eq(wamp_buf_refs(f->wire), 1);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_uint_eq(trace_peer_refs(f->peers[i]), 1);
        trace_peer_unref(&f->peers[i]);
    }
    ck_assert_uint_eq(trace_str_refs(f->uri), 1);
    trace_str_unref(&f->uri);
    wamp_buf_unref(&f->wire);
    wamp_buf_unref(&f->other);
    json_decref(f->event);
}

/* The router's way with the flight recorder (one trace in memory, the fast path): an EVENT
 * recorded through trace_hub_record_fast(); its next receivers pushed (trace_hub_repeat_push(),
 * only while the hub keeps that buffer) go straight to the trace's store, and not into a trace
 * stopped meanwhile. */
static bool fast_event(trace_hub *h, trace_peer *peer, trace_str *uri, const uint8_t *corr,
                       const wamp_buf *wire)
{
    trace_fast f;
    memset(&f, 0, sizeof(f));
    f.v.pc_ns = PC0;
    f.v.ts_ns = TS0;
    f.v.peer = peer;
    f.v.uri = uri;
    f.v.corr = corr;
    f.v.flags = TRACE_CORR_HAS;
    f.v.wire = wire;
    f.v.dir = TRACE_TX;
    f.v.msg_type = WAMP_MSG_EVENT;
    f.v.wire_ser = WAMP_SER_JSON;
    return trace_hub_record_fast(h, &f);
}

START_TEST(test_repeat_push_fast_store)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "fr", NULL);
    ck_assert(trace_hub_fast_ready(h));
    repeat_fix x;
    repeat_fix_init(&x);
    const wamp_buf *wire = x.wire, *other = x.other;
    trace_peer *const *peers = x.peers;
    trace_str *uri = x.uri;
    const uint8_t *corr = x.corr;
    const trace_store *st = trace_get_store(t);
    ck_assert(!trace_hub_repeat_push(h, wire, peers[1])); /* nothing kept */
    ck_assert(fast_event(h, peers[0], uri, corr, wire));
    ck_assert_ptr_eq(trace_hub_repeat_wire(h), wire);
    ck_assert(!trace_hub_repeat_push(h, other, peers[1]));
    ck_assert(!trace_hub_repeat_push(h, wire, NULL));
    ck_assert(trace_hub_repeat_push(h, wire, peers[1]));
    trace_hub_repeat_close(h, false);
    ck_assert(trace_hub_repeat_push(h, wire, peers[2]));
    trace_hub_repeat_close(h, true); /* the action's last: appended now */
    ck_assert_uint_eq(trace_store_records(st), 3);
    ck_assert_uint_eq(trace_store_messages(st), 1);
    for (uint64_t i = 0; i < 3; i++) {
        const trace_record *r = trace_store_get(st, i, &(trace_record){0});
        ck_assert_ptr_eq(r->peer, peers[i]);
        ck_assert_ptr_eq(r->uri, uri);
        ck_assert_mem_eq(r->corr, corr, TRACE_UUID_LEN);
        ck_assert_uint_eq(r->flags, TRACE_CORR_HAS | (i == 2 ? TRACE_CORR_LAST : 0));
    }
    /* Anything else recorded: the hub forgets the buffer. */
    ck_assert(fast_event(h, peers[0], uri, corr, wire));
    ck_assert_uint_eq(offer_rx(h), 1);
    ck_assert_ptr_null(trace_hub_repeat_wire(h));
    ck_assert(!trace_hub_repeat_push(h, wire, peers[1]));
    /* Kept again, then the trace stops (as a trace's own limit stops it): nothing more in it. */
    ck_assert(fast_event(h, peers[0], uri, corr, wire));
    size_t held = trace_store_records(st);
    ck_assert(trace_hub_repeat_push(h, wire, peers[1]));
    trace_stop(t, TRACE_STOP_STOPPED, PC0, TS0);
    trace_hub_flush(h);
    ck_assert_uint_eq(trace_store_records(st), held);
    trace_hub_free(h);
    repeat_fix_fini(&x);
}

END_TEST

/* trace_hub_repeat(): the next receiver of the message just recorded is appended without
 * matching or building anything, but only when that is certain to record the same thing as the
 * usual path: the same buffer, clock reading and correlation, a message kept for it (tx,
 * delivered, not its action's last), and every running trace blind to the peer (persisted
 * traces get a byte in their run, in-memory ones a copy of the previous record). */
START_TEST(test_repeat_only_when_certain)
{
    char dir[256];
    trace_hub *h = persisted_hub(dir, sizeof(dir), 0);
    trace *p = start(h, "p", "{\"persist\": true}");
    repeat_fix x;
    repeat_fix_init(&x);
    json_t *event = x.event;
    wamp_buf *wire = x.wire, *other = x.other;
    trace_peer *const *peers = x.peers;
    trace_str *uri = x.uri;
    const uint8_t *corr = x.corr;
    uint8_t corr2[TRACE_UUID_LEN] = {1, 2, 4};
    /* Nothing recorded yet. */
    ck_assert(!trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, NULL), 1);
    /* Referenced by the hub (kept for a repeat) and the trace's encoder (its block's buffer). */
    ck_assert_uint_eq(wamp_buf_refs(wire), 3);
    /* Anything that differs: no. */
    ck_assert(!trace_hub_repeat(h, other, peers[1], corr, PC0, false));
    ck_assert(!trace_hub_repeat(h, NULL, peers[1], corr, PC0, false));
    ck_assert(!trace_hub_repeat(h, wire, NULL, corr, PC0, false));
    ck_assert(!trace_hub_repeat(h, wire, peers[1], corr2, PC0, false));
    ck_assert(!trace_hub_repeat(h, wire, peers[1], NULL, PC0, false));
    ck_assert(!trace_hub_repeat(h, wire, peers[1], corr, PC0 + 1, false));
    ck_assert_uint_eq(trace_next_seq(p), 1);
    /* The same message to two more sessions. */
    ck_assert(trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    ck_assert(trace_hub_repeat(h, wire, peers[2], corr, PC0, false));
    /* Gathered, appended at the next call into the hub. */
    ck_assert_uint_eq(trace_next_seq(p), 1);
    trace_hub_flush(h);
    ck_assert_uint_eq(trace_next_seq(p), 3);
    trace_hub_flush(h); /* nothing more */
    ck_assert_uint_eq(trace_next_seq(p), 3);
    /* And to the last receiver: the action's last record. */
    ck_assert(trace_hub_repeat(h, wire, peers[0], corr, PC0, true));
    ck_assert_uint_eq(trace_next_seq(p), 4);
    json_t *recs = trace_render_records(p, 0, TRACE_SEQ_NONE, 10);
    ck_assert_uint_eq(json_array_size(recs), 4);
    json_t *lr = json_array_get(recs, 3);
    ck_assert(json_is_true(json_object_get(lr, "correlation_is_last")));
    ck_assert_int_eq(json_integer_value(json_object_get(lr, "session_id")), 9);
    ck_assert(json_is_false(json_object_get(json_array_get(recs, 2), "correlation_is_last")));
    for (size_t i = 0; i < 3; i++) {
        json_t *r = json_array_get(recs, i);
        ck_assert_int_eq(json_integer_value(json_object_get(r, "session_id")), (json_int_t)(9 + i));
        json_t *first = json_deep_copy(json_array_get(recs, 0));
        json_t *mine = json_deep_copy(r);
        const char *keys[] = {"seq", "session_id", "authid"};
        for (size_t k = 0; k < 3; k++) {
            json_object_del(first, keys[k]);
            json_object_del(mine, keys[k]);
        }
        ck_assert(json_equal(first, mine)); /* all else equal */
        json_decref(first);
        json_decref(mine);
    }
    json_decref(recs);
    /* A message the hub must not keep: its action's last, a drop, a received one. */
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, true, NULL), 1);
    ck_assert(!trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, "queue_full"), 1);
    ck_assert(!trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, NULL), 1);
    ck_assert_uint_eq(offer_rx(h), 1); /* anything recorded in between */
    ck_assert(!trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    /* An in-memory trace beside it gets its repeats too: the previous record with this peer. */
    trace *m = start(h, "m", NULL);
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, NULL), 2);
    ck_assert(trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    ck_assert(trace_hub_repeat(h, wire, peers[2], corr, PC0, true));
    trace_hub_flush(h);
    ck_assert_uint_eq(trace_store_records(trace_get_store(m)), 3);
    const void *copy = NULL;
    for (uint64_t i = 0; i < 3; i++) {
        const trace_record *r = trace_store_get(trace_get_store(m), i, &(trace_record){0});
        ck_assert_ptr_eq(r->peer, peers[i]);
        ck_keeps_copy(r, wire, &copy);
        ck_assert_ptr_eq(r->uri, uri);
        ck_assert_uint_eq(r->flags, TRACE_CORR_HAS | (i == 2 ? TRACE_CORR_LAST : 0));
        ck_assert_mem_eq(r->corr, corr, TRACE_UUID_LEN);
        ck_assert_uint_eq(r->msg_type, WAMP_MSG_EVENT);
        ck_assert_uint_eq(r->ser_bytes[WAMP_SER_JSON], wamp_buf_len(wire));
    }
    trace_stop(m, TRACE_STOP_STOPPED, PC0, TS0);
    /* A trace that reads the peer: every receiver goes the usual way. */
    start(h, "who", "{\"persist\": true, \"authids\": [\"carol\"]}");
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, NULL), 1);
    ck_assert(!trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    ck_assert_int_eq(trace_hub_stop(h, "who", PC0, TS0, NULL), WAMP_OK);
    /* Kept again; a trace stopped meanwhile (max_records...) gets nothing more. */
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, NULL), 1);
    uint64_t next = trace_next_seq(p);
    trace_stop(p, TRACE_STOP_STOPPED, PC0, TS0);
    ck_assert(trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    trace_hub_flush(h);
    ck_assert_uint_eq(trace_next_seq(p), next);
    /* Deleting a trace forgets the message. */
    ck_assert_int_eq(trace_hub_delete(h, "who"), WAMP_OK);
    ck_assert(!trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    trace_hub_free(h);
    repeat_fix_fini(&x);
    tmp_dir_remove(dir);
}

END_TEST

/* A large message (over TRACE_STRIP_MIN) in a trace without payload (trace_app_payload false,
 * in memory and persisted) is kept as its envelope alone; the trace with payload keeps it whole,
 * and both render the same message without the payload, with the sizes of the whole message. A
 * fan-out's further receivers share the stripped copy; a small message is kept whole. */
START_TEST(test_large_message_kept_without_payload)
{
    char dir[256];
    trace_hub *h = persisted_hub(dir, sizeof(dir), 0);
    trace *full = start(h, "full", NULL);
    trace *env = start(h, "env", "{\"trace_app_payload\": false}");
    trace *disk = start(h, "disk", "{\"trace_app_payload\": false, \"persist\": true}");
    char *big = malloc(TRACE_STRIP_MIN + 1);
    memset(big, 'p', TRACE_STRIP_MIN);
    big[TRACE_STRIP_MIN] = '\0';
    json_t *event = json_pack("[i,i,i,{s:s},[s],{s:i}]", 36, 5, 6, "topic", "com.t", big, "k", 1);
    free(big);
    wamp_buf *wire = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, event, &wire), WAMP_OK);
    trace_peer *peers[3];
    for (size_t i = 0; i < 3; i++) {
        peers[i] = trace_peer_new(9 + i, "realm1", "bob", "user");
    }
    trace_str *uri = trace_str_new("com.t");
    uint8_t corr[TRACE_UUID_LEN] = {4};
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, NULL), 3);
    ck_assert(trace_hub_repeat(h, wire, peers[1], corr, PC0, false));
    ck_assert(trace_hub_repeat(h, wire, peers[2], corr, PC0, true));
    trace_hub_flush(h);
    const char *envelope = "[36,5,6,{\"topic\":\"com.t\"}]";
    const void *shared = NULL;
    for (uint64_t s = 0; s < 3; s++) {
        size_t len = 0;
        const void *data = trace_record_data(
                trace_store_get(trace_get_store(env), s, &(trace_record){0}), &len);
        ck_assert_uint_eq(len, strlen(envelope));
        ck_assert_mem_eq(data, envelope, len);
        ck_assert(!shared || data == shared);
        shared = data;
        ck_assert_uint_eq(trace_store_get(trace_get_store(env), s, &(trace_record){0})
                                  ->ser_bytes[WAMP_SER_JSON],
                          wamp_buf_len(wire));
        (void)trace_record_data(trace_store_get(trace_get_store(full), s, &(trace_record){0}),
                                &len);
        ck_assert_uint_eq(len, wamp_buf_len(wire));
    }
    ck_assert_uint_eq(trace_store_bytes(trace_get_store(env)),
                      3 * (strlen(envelope) + TRACE_RECORD_OVERHEAD));
    /* Rendered without payload, the three traces say the same. */
    json_t *want = trace_render_records(env, 0, TRACE_SEQ_NONE, 10);
    ck_assert_uint_eq(json_array_size(want), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(want, 2), "session_id")),
                     11);
    json_t *m = json_object_get(json_array_get(want, 0), "msg");
    ck_assert_uint_eq(json_array_size(m), 4);
    ck_assert_int_eq(json_integer_value(json_array_get(m, 0)), 36);
    json_t *from_disk = trace_render_records(disk, 0, TRACE_SEQ_NONE, 10);
    ck_assert(json_equal(want, from_disk));
    json_t *whole = trace_render_records(full, 0, TRACE_SEQ_NONE, 10);
    ck_assert_uint_eq(json_array_size(json_object_get(json_array_get(whole, 0), "msg")), 6);
    json_decref(want);
    json_decref(from_disk);
    json_decref(whole);
    /* A small message: kept whole by every trace. */
    json_t *small = json_loads("[36,5,6,{},[\"s\"]]", 0, NULL);
    wamp_buf *swire = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, small, &swire), WAMP_OK);
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, swire, small, true, NULL), 3);
    size_t len = 0;
    (void)trace_record_data(trace_store_get(trace_get_store(env), 3, &(trace_record){0}), &len);
    ck_assert_uint_eq(len, wamp_buf_len(swire));
    trace_hub_free(h);
    for (size_t i = 0; i < 3; i++) {
        trace_peer_unref(&peers[i]);
    }
    trace_str_unref(&uri);
    wamp_buf_unref(&wire);
    wamp_buf_unref(&swire);
    json_decref(event);
    json_decref(small);
    tmp_dir_remove(dir);
}

END_TEST

/* In-memory traces take a fan-out's receivers as repeat records: a small ring keeps the newest
 * receivers with their own peers, the action's last one flagged; a trace with max_records takes
 * exactly up to it and stops; every reference comes back once the traces are gone. */
START_TEST(test_repeat_in_memory_limits)
{
    trace_hub *h = hub_of(4);
    trace *small = start(h, "small", "{\"limit\": 3}");
    trace *capped = start(h, "capped", "{\"max_records\": 70}");
    json_t *event = json_loads("[36,5,6,{},[\"hello\"]]", 0, NULL);
    wamp_buf *wire = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, event, &wire), WAMP_OK);

    enum {
        N = 100 /* more than the hub gathers at once */
    };

    trace_peer *peers[N];
    for (size_t i = 0; i < N; i++) {
        peers[i] = trace_peer_new(100 + i, "realm1", "bob", "user");
    }
    trace_str *uri = trace_str_new("com.example.topic");
    uint8_t corr[TRACE_UUID_LEN] = {5};
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, NULL), 2);
    for (size_t i = 1; i < N; i++) {
        ck_assert(trace_hub_repeat(h, wire, peers[i], corr, PC0, i == N - 1));
    }
    trace_hub_flush(h);
    const trace_store *st = trace_get_store(small);
    ck_assert_uint_eq(trace_store_next_seq(st), N);
    ck_assert_uint_eq(trace_store_records(st), 3);
    const void *copy = NULL;
    for (uint64_t s = N - 3; s < N; s++) {
        const trace_record *r = trace_store_get(st, s, &(trace_record){0});
        ck_assert_ptr_eq(r->peer, peers[s]);
        ck_keeps_copy(r, wire, &copy);
        ck_assert_ptr_eq(r->uri, uri);
        ck_assert_uint_eq(r->flags, TRACE_CORR_HAS | (s == N - 1 ? TRACE_CORR_LAST : 0));
    }
    ck_assert_uint_eq(trace_next_seq(capped), 70);
    ck_assert(!trace_is_running(capped));
    ck_assert_int_eq(trace_get_stop_reason(capped), TRACE_STOP_MAX_RECORDS);
    ck_assert_ptr_eq(trace_store_get(trace_get_store(capped), 69, &(trace_record){0})->peer,
                     peers[69]);
    ck_assert_uint_eq(trace_store_get(trace_get_store(capped), 69, &(trace_record){0})->flags,
                      TRACE_CORR_HAS);
    json_t *recs = trace_render_records(small, 0, TRACE_SEQ_NONE, 10);
    ck_assert_uint_eq(json_array_size(recs), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(recs, 2), "session_id")),
                     100 + N - 1);
    ck_assert(json_is_true(json_object_get(json_array_get(recs, 2), "correlation_is_last")));
    json_decref(recs);
    trace_hub_free(h);
    ck_assert_uint_eq(wamp_buf_refs(wire), 1);
    ck_assert_uint_eq(trace_str_refs(uri), 1);
    for (size_t i = 0; i < N; i++) {
        ck_assert_uint_eq(trace_peer_refs(peers[i]), 1);
        trace_peer_unref(&peers[i]);
    }
    trace_str_unref(&uri);
    wamp_buf_unref(&wire);
    json_decref(event);
}

END_TEST

/* A fan-out to more receivers than the hub gathers at once (64), across the encoder's block
 * boundaries (every 256 seqs) and segment rotations: every receiver's record reads back in
 * order with its own peer; a trace with max_records takes exactly up to it. */
START_TEST(test_repeat_large_fan_out)
{
    char dir[256];
    trace_hub *h = persisted_hub(dir, sizeof(dir), 4096);
    trace *p = start(h, "p", "{\"persist\": true}");
    trace *q = start(h, "q", "{\"persist\": true, \"max_records\": 100}");
    json_t *event = json_loads("[36,5,6,{},[\"hello\"]]", 0, NULL);
    wamp_buf *wire = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_JSON, event, &wire), WAMP_OK);

    enum {
        N = 700
    };

    trace_peer **peers = calloc(N, sizeof(*peers));
    ck_assert_ptr_nonnull(peers);
    for (size_t i = 0; i < N; i++) {
        char authid[16];
        snprintf(authid, sizeof(authid), "a%zu", i % 300); /* > 256: the table fills */
        peers[i] = trace_peer_new(100 + i % 300, "realm1", authid, "user");
    }
    trace_str *uri = trace_str_new("com.example.topic");
    uint8_t corr[TRACE_UUID_LEN] = {7};
    ck_assert_uint_eq(offer_event(h, peers[0], uri, corr, wire, event, false, NULL), 2);
    for (size_t i = 1; i < N; i++) {
        ck_assert(trace_hub_repeat(h, wire, peers[i], corr, PC0, i == N - 1));
    }
    trace_hub_flush(h);
    ck_assert_uint_eq(trace_next_seq(p), N);
    ck_assert_uint_gt(trace_persist_segments(trace_get_persist(p)), 1);
    ck_assert_uint_eq(trace_next_seq(q), 100);
    ck_assert(!trace_is_running(q));
    ck_assert_int_eq(trace_get_stop_reason(q), TRACE_STOP_MAX_RECORDS);
    trace *both[] = {p, q};
    for (size_t k = 0; k < 2; k++) {
        size_t want = k ? 100 : N;
        json_t *recs = trace_render_records(both[k], 0, TRACE_SEQ_NONE, 10000);
        ck_assert_uint_eq(json_array_size(recs), want);
        for (size_t i = 0; i < want; i++) {
            json_t *r = json_array_get(recs, i);
            ck_assert_int_eq(json_integer_value(json_object_get(r, "seq")), (json_int_t)i);
            ck_assert_int_eq(json_integer_value(json_object_get(r, "session_id")),
                             (json_int_t)(100 + i % 300));
            char authid[16];
            snprintf(authid, sizeof(authid), "a%zu", i % 300);
            ck_assert_str_eq(json_string_value(json_object_get(r, "authid")), authid);
            ck_assert_str_eq(json_string_value(json_object_get(r, "uri")), "com.example.topic");
            ck_assert_str_eq(json_string_value(json_object_get(r, "msg_type")), "Event");
            ck_assert(json_is_true(json_object_get(r, "correlation_is_last")) == (i == N - 1));
            ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r, "msg"), 0)), 36);
        }
        json_decref(recs);
    }
    trace_hub_free(h);
    for (size_t i = 0; i < N; i++) {
        ck_assert_uint_eq(trace_peer_refs(peers[i]), 1);
        trace_peer_unref(&peers[i]);
    }
    free(peers);
    trace_str_unref(&uri);
    wamp_buf_unref(&wire);
    json_decref(event);
    tmp_dir_remove(dir);
}

END_TEST

/* A fed trace (the flight recorder read from the wire capture): the capture path passes it by,
 * trace_hub_feed() appends to it alone through its filter, trace_skip() gives messages its limit
 * would drop their seqs as dropped, trace_lose() counts the ones its feeder lost. */
START_TEST(test_fed_trace)
{
    trace_hub *h = hub_of(4);
    trace *t = start(h, "fr", "{\"trace_app_payload\": false}");
    ck_assert(trace_hub_fast_ready(h));
    trace_hub_set_fed(h, t);
    ck_assert(trace_is_fed(t) && trace_is_running(t));
    ck_assert(!trace_hub_is_active(h)); /* the capture path costs its one branch */
    ck_assert(!trace_hub_fast_ready(h));
    trace *other = start(h, "other", NULL);
    ck_assert(trace_hub_is_active(h));
    ck_assert_uint_eq(*trace_hub_active_word(h), 1);
    ck_assert(trace_hub_fast_ready(h)); /* "other" is the fast trace: it runs alone */
    ck_assert_uint_eq(offer_rx(h), 1);  /* "other" alone */
    ck_assert_uint_eq(held(t), 0);
    ck_assert_uint_eq(held(other), 1);
    json_t *info = json_object();
    ck_assert_uint_eq(trace_hub_on_connection(h, info, PC0, TS0), 1);
    json_decref(info);
    ck_assert_uint_eq(held(t), 0);

    /* Fed: the message's bytes as parsed (no JSON tree), its peer made from the context. */
    trace_ctx c = {.direction = TRACE_RX,
                   .msg_type = WAMP_MSG_PUBLISH,
                   .session_id = 7,
                   .realm = "realm1",
                   .uri = "com.example.topic"};
    trace_input in = {.pc_ns = PC0 + 3 * MS,
                      .ts_ns = TS0 + 3 * MS,
                      .ser = WAMP_SER_JSON,
                      .bytes = publish_json,
                      .len = sizeof(publish_json) - 1,
                      .bytes_parsed = true};
    ck_assert_uint_eq(trace_hub_feed(h, t, &c, &in), 1);
    ck_assert_uint_eq(held(other), 2); /* fed to t alone (other: the PUBLISH, the connection) */
    trace_record r;
    ck_assert_ptr_nonnull(trace_store_get(trace_get_store(t), 0, &r));
    ck_assert_uint_eq(r.msg_type, WAMP_MSG_PUBLISH);
    ck_assert_uint_eq(r.pc_ns, PC0 + 3 * MS);
    ck_assert_uint_eq(trace_peer_session_id(r.peer), 7);
    ck_assert_str_eq(trace_str_get(r.uri), "com.example.topic");
    ck_assert_uint_eq(r.len, sizeof(publish_json) - 1);
    ck_assert_mem_eq(r.bytes, publish_json, r.len);
    /* Its filter holds: nothing of the management realm. */
    c.realm = "mgmt";
    ck_assert_uint_eq(trace_hub_feed(h, t, &c, &in), 0);
    /* Skipped: seqs given out, counted as dropped, with what was held (as its limit drops). */
    trace_skip(t, 5);
    ck_assert_uint_eq(trace_next_seq(t), 6);
    ck_assert_uint_eq(trace_first_seq(t), 6);
    ck_assert_uint_eq(trace_dropped(t), 6);
    /* Lost: counted, no seqs. */
    ck_assert_uint_eq(trace_lost(t), 0);
    trace_lose(t, 2);
    ck_assert_uint_eq(trace_lost(t), 2);
    ck_assert_uint_eq(trace_next_seq(t), 6);
    ck_assert_uint_eq(trace_dropped(t), 6);
    c.realm = "realm1";
    ck_assert_uint_eq(trace_hub_feed(h, t, &c, &in), 1);
    ck_assert_uint_eq(trace_next_seq(t), 7);
    ck_assert_uint_eq(trace_records(t), 1);
    /* A CHALLENGE fed is redacted as the capture path redacts it. */
    static const char challenge[] = "[4,\"wampcra\",{\"challenge\":\"s3cret\"}]";
    trace_ctx cc = {.direction = TRACE_TX, .msg_type = WAMP_MSG_CHALLENGE, .realm = "realm1"};
    trace_input ci = {.ser = WAMP_SER_JSON, .bytes = challenge, .len = sizeof(challenge) - 1};
    ck_assert_uint_eq(trace_hub_feed(h, t, &cc, &ci), 1);
    ck_assert_ptr_nonnull(trace_store_get(trace_get_store(t), 7, &r));
    const char *kept = r.wire ? (const char *)wamp_buf_cdata(r.wire) : (const char *)r.bytes;
    size_t n = r.wire ? wamp_buf_len(r.wire) : r.len;
    char text[128] = "";
    ck_assert_uint_lt(n, sizeof(text));
    memcpy(text, kept, n);
    ck_assert_ptr_null(strstr(text, "s3cret"));
    ck_assert_ptr_nonnull(strstr(text, "***"));
    /* Stopped: nothing more. */
    ck_assert_int_eq(trace_hub_stop(h, "fr", PC0, TS0, NULL), WAMP_OK);
    ck_assert_uint_eq(trace_hub_feed(h, t, &c, &in), 0);
    trace_skip(t, 3);
    trace_lose(t, 3);
    ck_assert_uint_eq(trace_next_seq(t), 8);
    ck_assert_uint_eq(trace_lost(t), 2);
    ck_assert_uint_eq(trace_hub_stop(h, "other", PC0, TS0, NULL), WAMP_OK);
    ck_assert(!trace_hub_is_active(h));
    trace_hub_free(h);
}

END_TEST

static Suite *trace_hub_suite(void)
{
    Suite *s = suite_create("trace_hub");
    TCase *reg = tcase_create("registry");
    tcase_set_timeout(reg, 10);
    tcase_add_test(reg, test_names_trace1_trace2);
    tcase_add_test(reg, test_duplicate_running_vs_stopped);
    tcase_add_test(reg, test_stop_and_delete_errors);
    tcase_add_test(reg, test_max_traces);
    tcase_add_test(reg, test_reserved_id_outside_max_traces);
    tcase_add_test(reg, test_invalid_options_and_id);
    tcase_add_test(reg, test_is_active_only_while_running);
    tcase_add_test(reg, test_stop_keeps_records_readable);
    tcase_add_test(reg, test_configured_defaults);
    suite_add_tcase(s, reg);
    TCase *life = tcase_create("lifecycle");
    tcase_set_timeout(life, 10);
    tcase_add_test(life, test_duration_auto_stop);
    tcase_add_test(life, test_max_records_auto_stop);
    tcase_add_test(life, test_batching_periods_tile);
    tcase_add_test(life, test_tick_reports_batches_then_stop_once);
    tcase_add_test(life, test_markers);
    tcase_add_test(life, test_connection_records);
    tcase_add_test(life, test_connection_records_persisted);
    suite_add_tcase(s, life);
    TCase *cap = tcase_create("capture");
    tcase_set_timeout(cap, 10);
    tcase_add_test(cap, test_rx_bytes_copied_into_each_store);
    tcase_add_test(cap, test_tx_small_is_copied);
    tcase_add_test(cap, test_tx_large_takes_a_reference_on_the_wire_buffer);
    tcase_add_test(cap, test_tx_dropped_before_encoding);
    tcase_add_test(cap, test_large_message_kept_without_payload);
    tcase_add_test(cap, test_filters_choose_traces);
    tcase_add_test(cap, test_no_allocation_when_idle_or_rejected);
    tcase_add_test(cap, test_peer_and_uri_slots_filled_lazily);
    tcase_add_test(cap, test_action_uris_interned);
    tcase_add_test(cap, test_repeat_only_when_certain);
    tcase_add_test(cap, test_repeat_push_fast_store);
    tcase_add_test(cap, test_repeat_large_fan_out);
    tcase_add_test(cap, test_fed_trace);
    tcase_add_test(cap, test_repeat_in_memory_limits);
    suite_add_tcase(s, cap);
    return s;
}

int main(void)
{
    alloc_count_install();
    SRunner *sr = srunner_create(trace_hub_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
