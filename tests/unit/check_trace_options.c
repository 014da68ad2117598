/* check_trace_options.c: trace_options parsing: defaults, every key valid / wrong type / out of
 * range, unknown keys, persistence options, and trace_level (action: direction must be "both"). */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "trace_options.h"
#include "trace_record.h"
#include "wamp_types.h"

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    ck_assert_msg(j != NULL, "bad test JSON %s: %s", text, jerr.text);
    return j;
}

/* Parses text; asserts success. */
static void parse_ok(const char *text, trace_options *o)
{
    json_t *j = load(text);
    char why[256] = "";
    wamp_err err = trace_options_parse(j, o, why, sizeof(why));
    ck_assert_msg(err == WAMP_OK, "%s refused: %s", text, why);
    json_decref(j);
}

/* Parses text; asserts WAMP_EINVAL with a message starting with `prefix` (the option's name). */
static void parse_bad(const char *text, const char *prefix)
{
    json_t *j = load(text);
    char why[256] = "";
    trace_options o;
    wamp_err err = trace_options_parse(j, &o, why, sizeof(why));
    ck_assert_msg(err == WAMP_EINVAL, "%s accepted (err %d)", text, (int)err);
    ck_assert_msg(strncmp(why, prefix, strlen(prefix)) == 0, "%s: message \"%s\" lacks \"%s\"",
                  text, why, prefix);
    /* Zeroed after failure. */
    ck_assert_ptr_null(o.json);
    ck_assert_ptr_null(o.realms);
    ck_assert_ptr_null(o.uris);
    trace_options_fini(&o);
    json_decref(j);
}

static void assert_defaults(const trace_options *o)
{
    ck_assert_uint_eq(o->n_realms, 0);
    ck_assert_uint_eq(o->n_uris, 0);
    ck_assert(!o->has_msg_types);
    ck_assert_uint_eq(o->msg_types[0], UINT64_MAX);
    ck_assert_uint_eq(o->msg_types[1], UINT64_MAX);
    ck_assert_uint_eq(o->direction, TRACE_RX | TRACE_TX);
    ck_assert_uint_eq(o->n_session_ids, 0);
    ck_assert_uint_eq(o->n_authids, 0);
    ck_assert_uint_eq(o->n_authroles, 0);
    ck_assert(o->trace_app_payload);
    ck_assert_uint_eq(o->limit, 100000);
    ck_assert_uint_eq(o->max_bytes, 64u * 1024 * 1024);
    ck_assert_uint_eq(o->duration_ns, 0);
    ck_assert_uint_eq(o->max_records, 0);
    ck_assert_uint_eq(o->batching_period, 200);
    /* The echo has every key with its effective value. */
    const char *expect = "{\"realms\": null, \"uris\": null, \"msg_types\": null, "
                         "\"direction\": \"both\", \"session_ids\": null, \"authids\": null, "
                         "\"authroles\": null, \"trace_app_payload\": true, \"limit\": 100000, "
                         "\"max_bytes\": 67108864, \"duration\": null, \"max_records\": null, "
                         "\"batching_period\": 200, \"persist\": false, "
                         "\"trace_level\": \"message\", \"persist_max_bytes\": 1073741824, "
                         "\"persist_max_age\": null}";
    json_t *e = load(expect);
    ck_assert_msg(json_equal(o->json, e), "echo: %s", json_dumps(o->json, JSON_COMPACT));
    json_decref(e);
}

START_TEST(test_defaults)
{
    trace_options o;
    char why[64];
    ck_assert_int_eq(trace_options_parse(NULL, &o, why, sizeof(why)), WAMP_OK);
    assert_defaults(&o);
    trace_options_fini(&o);
    parse_ok("null", &o);
    assert_defaults(&o);
    trace_options_fini(&o);
    parse_ok("{}", &o);
    assert_defaults(&o);
    trace_options_fini(&o);
    trace_options_fini(&o); /* twice: harmless */
    trace_options_fini(NULL);
}

END_TEST

START_TEST(test_every_key_valid)
{
    trace_options o;
    parse_ok("{\"realms\": [\"realm1\", \"mgmt\"], "
             "\"uris\": [\"com.a\", {\"uri\": \"com.b.\", \"match\": \"prefix\"}, "
             "{\"uri\": \"com..c\", \"match\": \"wildcard\"}, {\"uri\": \"com.d\"}], "
             "\"msg_types\": [\"Publish\", \"event\", \"YIELD\", \"Marker\"], "
             "\"direction\": \"tx\", \"session_ids\": [1, 9007199254740992], "
             "\"authids\": [\"alice\"], \"authroles\": [\"user\", \"admin\"], "
             "\"trace_app_payload\": false, \"limit\": 10000000, \"max_bytes\": 1024, "
             "\"duration\": 1.5, \"max_records\": 77, \"batching_period\": 10, "
             "\"persist\": false, \"trace_level\": \"message\"}",
             &o);
    ck_assert_uint_eq(o.n_realms, 2);
    ck_assert_str_eq(o.realms[1], "mgmt");
    ck_assert_uint_eq(o.n_uris, 4);
    ck_assert_str_eq(o.uris[0].uri, "com.a");
    ck_assert_int_eq(o.uris[0].match, WAMP_MATCH_EXACT);
    ck_assert_int_eq(o.uris[1].match, WAMP_MATCH_PREFIX);
    ck_assert_int_eq(o.uris[2].match, WAMP_MATCH_WILDCARD);
    ck_assert_int_eq(o.uris[3].match, WAMP_MATCH_EXACT);
    ck_assert(o.has_msg_types);
    ck_assert_uint_eq(o.msg_types[0],
                      ((uint64_t)1 << WAMP_MSG_PUBLISH) | ((uint64_t)1 << WAMP_MSG_EVENT));
    ck_assert_uint_eq(o.msg_types[1], (uint64_t)1 << (WAMP_MSG_YIELD - 64));
    ck_assert_uint_eq(o.direction, TRACE_TX);
    ck_assert_uint_eq(o.n_session_ids, 2);
    ck_assert_uint_eq(o.session_ids[1], WAMP_ID_MAX);
    ck_assert_uint_eq(o.n_authids, 1);
    ck_assert_uint_eq(o.n_authroles, 2);
    ck_assert(!o.trace_app_payload);
    ck_assert_uint_eq(o.limit, 10000000);
    ck_assert_uint_eq(o.max_bytes, 1024);
    ck_assert_uint_eq(o.duration_ns, 1500000000u);
    ck_assert_uint_eq(o.max_records, 77);
    ck_assert_uint_eq(o.batching_period, 10);
    /* Lists are echoed as given. */
    ck_assert_uint_eq(json_array_size(json_object_get(o.json, "uris")), 4);
    ck_assert_str_eq(json_string_value(json_object_get(o.json, "direction")), "tx");
    ck_assert_int_eq(json_integer_value(json_object_get(o.json, "max_records")), 77);
    ck_assert(json_real_value(json_object_get(o.json, "duration")) == 1.5);
    trace_options_fini(&o);
    /* Other valid forms: integer duration, nulls, both directions, range ends. */
    parse_ok("{\"duration\": 86400, \"max_records\": null, \"direction\": \"both\", "
             "\"limit\": 1, \"batching_period\": 10000, \"max_bytes\": 1099511627776}",
             &o);
    ck_assert_uint_eq(o.duration_ns, 86400ull * 1000000000u);
    ck_assert_uint_eq(o.limit, 1);
    ck_assert_uint_eq(o.batching_period, 10000);
    trace_options_fini(&o);
    parse_ok("{\"duration\": null, \"direction\": \"rx\"}", &o);
    ck_assert_uint_eq(o.direction, TRACE_RX);
    ck_assert_uint_eq(o.duration_ns, 0);
    ck_assert(json_is_null(json_object_get(o.json, "duration")));
    trace_options_fini(&o);
}

END_TEST

START_TEST(test_echo_starts_the_same_trace)
{
    /* A trace's options as its metadata shows them (every key, null for an absent filter list)
     * start a trace with the same options: what a client that restarts a trace, or copies one,
     * sends back. */
    const char *given[] = {
            "{}",
            "{\"limit\": 10000, \"trace_app_payload\": false}",
            "{\"realms\": [\"realm1\"], \"uris\": [{\"uri\": \"com.\", \"match\": \"prefix\"}], "
            "\"msg_types\": [\"Call\"], \"session_ids\": [7], \"authids\": [\"a\"], "
            "\"authroles\": [\"r\"], \"duration\": 60, \"max_records\": 5, \"persist\": true, "
            "\"persist_max_age\": 3600}",
            "{\"trace_level\": \"action\", \"direction\": \"both\", \"max_bytes\": 4096}",
    };
    for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
        trace_options a, b;
        parse_ok(given[i], &a);
        char why[256] = "";
        ck_assert_msg(trace_options_parse(a.json, &b, why, sizeof(why)) == WAMP_OK,
                      "%s: its echo refused: %s", given[i], why);
        ck_assert_msg(json_equal(a.json, b.json), "%s: echo %s, then %s", given[i],
                      json_dumps(a.json, JSON_COMPACT), json_dumps(b.json, JSON_COMPACT));
        ck_assert_uint_eq(a.n_realms, b.n_realms);
        ck_assert_uint_eq(a.n_uris, b.n_uris);
        ck_assert_int_eq(a.has_msg_types, b.has_msg_types);
        ck_assert_uint_eq(a.n_session_ids, b.n_session_ids);
        ck_assert_uint_eq(a.n_authids, b.n_authids);
        ck_assert_uint_eq(a.n_authroles, b.n_authroles);
        trace_options_fini(&a);
        trace_options_fini(&b);
    }
    /* A null filter list is the list left out: everything passes. */
    trace_options o;
    parse_ok("{\"realms\": null, \"uris\": null, \"msg_types\": null, \"session_ids\": null, "
             "\"authids\": null, \"authroles\": null}",
             &o);
    assert_defaults(&o);
    trace_options_fini(&o);
}

END_TEST

START_TEST(test_uris_star_and_prefix_all)
{
    trace_options o;
    parse_ok("{\"uris\": [\"*\"]}", &o);
    ck_assert_uint_eq(o.n_uris, 0);
    ck_assert_ptr_null(o.uris);
    /* The echo keeps what the client sent. */
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(o.json, "uris"), 0)), "*");
    trace_options_fini(&o);
    parse_ok("{\"uris\": [\"com.a\", \"*\", {\"uri\": \"x\", \"match\": \"prefix\"}]}", &o);
    ck_assert_uint_eq(o.n_uris, 0);
    trace_options_fini(&o);
    parse_ok("{\"uris\": [{\"uri\": \"\", \"match\": \"prefix\"}]}", &o);
    ck_assert_uint_eq(o.n_uris, 1);
    trace_options_fini(&o);
}

END_TEST

/* Wrong types, out of range, malformed entries: each message names the option. */
START_TEST(test_invalid_values_name_the_option)
{
    static const struct {
        const char *json;
        const char *prefix;
    } cases[] = {
            {"{\"realms\": \"realm1\"}", "realms:"},
            {"{\"realms\": []}", "realms:"},
            {"{\"realms\": [1]}", "realms[0]:"},
            {"{\"realms\": [\"a\", \"\"]}", "realms[1]:"},
            {"{\"uris\": \"com.a\"}", "uris:"},
            {"{\"uris\": []}", "uris:"},
            {"{\"uris\": [5]}", "uris[0]:"},
            {"{\"uris\": [\"com..a\"]}", "uris[0]:"},
            {"{\"uris\": [\"com.a\", \"not a uri\"]}", "uris[1]:"},
            {"{\"uris\": [{\"match\": \"prefix\"}]}", "uris[0].uri:"},
            {"{\"uris\": [{\"uri\": \"com.a\", \"match\": \"regex\"}]}", "uris[0].match:"},
            {"{\"uris\": [{\"uri\": \"com.a\", \"match\": 1}]}", "uris[0].match:"},
            {"{\"uris\": [{\"uri\": \"com.a\", \"extra\": 1}]}", "uris[0]:"},
            {"{\"uris\": [{\"uri\": \"com a\", \"match\": \"wildcard\"}]}", "uris[0]:"},
            {"{\"msg_types\": \"Publish\"}", "msg_types:"},
            {"{\"msg_types\": []}", "msg_types:"},
            {"{\"msg_types\": [\"Publish\", \"Publsh\"]}", "msg_types[1]:"},
            {"{\"msg_types\": [16]}", "msg_types[0]:"},
            {"{\"msg_types\": [\"Gap\"]}", "msg_types[0]:"},
            {"{\"direction\": \"in\"}", "direction:"},
            {"{\"direction\": null}", "direction:"},
            {"{\"session_ids\": [0]}", "session_ids[0]:"},
            {"{\"session_ids\": [1, 9007199254740993]}", "session_ids[1]:"},
            {"{\"session_ids\": [\"7\"]}", "session_ids[0]:"},
            {"{\"session_ids\": [1.0]}", "session_ids[0]:"},
            {"{\"session_ids\": 7}", "session_ids:"},
            {"{\"authids\": [null]}", "authids[0]:"},
            {"{\"authids\": {}}", "authids:"},
            {"{\"authroles\": [\"\"]}", "authroles[0]:"},
            {"{\"trace_app_payload\": 1}", "trace_app_payload:"},
            {"{\"trace_app_payload\": \"false\"}", "trace_app_payload:"},
            {"{\"limit\": 0}", "limit:"},
            {"{\"limit\": 10000001}", "limit:"},
            {"{\"limit\": -5}", "limit:"},
            {"{\"limit\": 100.0}", "limit:"},
            {"{\"limit\": \"100\"}", "limit:"},
            {"{\"limit\": null}", "limit:"},
            {"{\"max_bytes\": 1023}", "max_bytes:"},
            {"{\"max_bytes\": 1099511627777}", "max_bytes:"},
            {"{\"max_bytes\": true}", "max_bytes:"},
            {"{\"duration\": 0}", "duration:"},
            {"{\"duration\": 0.5}", "duration:"},
            {"{\"duration\": 86401}", "duration:"},
            {"{\"duration\": -1}", "duration:"},
            {"{\"duration\": \"60\"}", "duration:"},
            {"{\"max_records\": 0}", "max_records:"},
            {"{\"max_records\": 1.5}", "max_records:"},
            {"{\"max_records\": -1}", "max_records:"},
            {"{\"batching_period\": 9}", "batching_period:"},
            {"{\"batching_period\": 10001}", "batching_period:"},
            {"{\"batching_period\": null}", "batching_period:"},
            {"{\"persist\": \"no\"}", "persist:"},
            {"{\"persist_max_bytes\": 65535}", "persist_max_bytes:"},
            {"{\"persist_max_bytes\": null}", "persist_max_bytes:"},
            {"{\"persist_max_age\": 0}", "persist_max_age:"},
            {"{\"persist_max_age\": 1.5}", "persist_max_age:"},
            {"{\"trace_level\": \"packet\"}", "trace_level:"},
            {"{\"trace_level\": 1}", "trace_level:"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        parse_bad(cases[i].json, cases[i].prefix);
    }
}

END_TEST

START_TEST(test_unknown_key_and_non_object)
{
    parse_bad("{\"limit\": 5, \"filter\": {}}", "filter: unknown option");
    parse_bad("{\"Realms\": [\"a\"]}", "Realms: unknown option");
    parse_bad("[]", "trace_options:");
    parse_bad("\"realm1\"", "trace_options:");
    parse_bad("42", "trace_options:");
}

END_TEST

START_TEST(test_trace_level_and_persist_options)
{
    trace_options o;
    parse_ok("{\"persist\": false, \"trace_level\": \"message\"}", &o);
    ck_assert(!o.persist);
    ck_assert(!o.action_level);
    ck_assert_str_eq(json_string_value(json_object_get(o.json, "trace_level")), "message");
    trace_options_fini(&o);
    /* Action level: the filter applies to anchors, which the router receives: direction must
     * stay "both" (given or not). */
    parse_ok("{\"trace_level\": \"action\", \"msg_types\": [\"Call\"]}", &o);
    ck_assert(o.action_level);
    ck_assert_str_eq(json_string_value(json_object_get(o.json, "trace_level")), "action");
    trace_options_fini(&o);
    parse_ok("{\"trace_level\": \"action\", \"direction\": \"both\"}", &o);
    ck_assert(o.action_level);
    trace_options_fini(&o);
    parse_bad("{\"trace_level\": \"action\", \"direction\": \"rx\"}",
              "direction: must be \"both\"");
    parse_bad("{\"direction\": \"tx\", \"trace_level\": \"action\"}",
              "direction: must be \"both\"");
    parse_bad("{\"trace_level\": \"actions\"}", "trace_level: must be");
    parse_bad("{\"trace_level\": 1}", "trace_level: must be");
    /* Persistence and its retention options. */
    parse_ok("{\"persist\": true, \"persist_max_bytes\": 65536, \"persist_max_age\": 3600}", &o);
    ck_assert(o.persist);
    ck_assert_uint_eq(o.persist_max_bytes, 65536);
    ck_assert_uint_eq(o.persist_max_age_ns, 3600ull * 1000000000u);
    ck_assert(json_is_true(json_object_get(o.json, "persist")));
    ck_assert_int_eq(json_integer_value(json_object_get(o.json, "persist_max_age")), 3600);
    trace_options_fini(&o);
    /* Configured defaults of the retention options. */
    trace_option_defaults d = {.persist_max_bytes = 1 << 20, .persist_max_age_s = 60};
    json_t *j = load("{\"persist\": true}");
    char why[128];
    ck_assert_int_eq(trace_options_parse_with(j, &d, &o, why, sizeof(why)), WAMP_OK);
    ck_assert_uint_eq(o.persist_max_bytes, 1 << 20);
    ck_assert_uint_eq(o.persist_max_age_ns, 60ull * 1000000000u);
    trace_options_fini(&o);
    json_decref(j);
}

END_TEST

START_TEST(test_why_is_optional)
{
    json_t *j = load("{\"limit\": 0}");
    trace_options o;
    ck_assert_int_eq(trace_options_parse(j, &o, NULL, 0), WAMP_EINVAL);
    json_decref(j);
}

END_TEST

START_TEST(test_msg_type_names)
{
    int t = -1;
    ck_assert(trace_msg_type_parse("Publish", &t));
    ck_assert_int_eq(t, WAMP_MSG_PUBLISH);
    ck_assert(trace_msg_type_parse("unsubscribed", &t));
    ck_assert_int_eq(t, WAMP_MSG_UNSUBSCRIBED);
    ck_assert(trace_msg_type_parse("Marker", &t));
    ck_assert_int_eq(t, TRACE_MSG_MARKER);
    /* Every record title parses back to its code. */
    for (int code = 1; code <= WAMP_MSG_TYPE_MAX; code++) {
        if (strcmp(trace_msg_type_title(code), "Unknown") != 0) {
            ck_assert(trace_msg_type_parse(trace_msg_type_title(code), &t));
            ck_assert_int_eq(t, code);
        }
    }
    /* The names of records that are no WAMP message of a known type. */
    ck_assert(trace_msg_type_parse("Unknown", &t));
    ck_assert_int_eq(t, 0);
    ck_assert(trace_msg_type_parse("connection", &t));
    ck_assert_int_eq(t, TRACE_MSG_CONNECTION);
    ck_assert_str_eq(trace_msg_type_title(TRACE_MSG_CONNECTION), "Connection");
    ck_assert(!trace_msg_type_parse("Gap", &t));
    ck_assert(!trace_msg_type_parse("", &t));
    ck_assert(!trace_msg_type_parse(NULL, &t));
}

END_TEST

static Suite *trace_options_suite(void)
{
    Suite *s = suite_create("trace_options");
    TCase *tc = tcase_create("options");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_every_key_valid);
    tcase_add_test(tc, test_echo_starts_the_same_trace);
    tcase_add_test(tc, test_uris_star_and_prefix_all);
    tcase_add_test(tc, test_invalid_values_name_the_option);
    tcase_add_test(tc, test_unknown_key_and_non_object);
    tcase_add_test(tc, test_trace_level_and_persist_options);
    tcase_add_test(tc, test_why_is_optional);
    tcase_add_test(tc, test_msg_type_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trace_options_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
