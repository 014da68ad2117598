/* check_trace_filter.c: trace filters compiled from trace_options, matched against trace_ctx. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "trace_filter.h"
#include "trace_options.h"
#include "wamp_types.h"

/* A filter from options JSON text (NULL = defaults), management realm "mgmt". */
static trace_filter *filter_of_mgmt(const char *json, const char *mgmt)
{
    json_t *j = NULL;
    if (json) {
        json_error_t jerr;
        j = json_loads(json, 0, &jerr);
        ck_assert_msg(j != NULL, "bad test JSON: %s", jerr.text);
    }
    trace_options o;
    char why[200] = "";
    ck_assert_msg(trace_options_parse(j, &o, why, sizeof(why)) == WAMP_OK, "%s", why);
    json_decref(j);
    trace_filter *f = trace_filter_new(&o, mgmt);
    /* The filter keeps copies: the options go away right now. */
    trace_options_fini(&o);
    ck_assert_ptr_nonnull(f);
    return f;
}

static trace_filter *filter_of(const char *json)
{
    return filter_of_mgmt(json, "mgmt");
}

/* A PUBLISH received from session 7 (realm1, alice, user) on com.example.topic. */
static trace_ctx ctx(void)
{
    trace_ctx c = {.direction = TRACE_RX,
                   .msg_type = WAMP_MSG_PUBLISH,
                   .session_id = 7,
                   .realm = "realm1",
                   .authid = "alice",
                   .authrole = "user",
                   .uri = "com.example.topic"};
    return c;
}

/* The hub tests a filter that keeps everything inline; any restriction sends it to
 * trace_filter_match(). */
START_TEST(test_keeps_all)
{
    static const char *restricting[] = {
            "{\"direction\": \"rx\"}",
            "{\"msg_types\": [\"Publish\", \"Event\"]}",
            "{\"realms\": [\"realm1\"]}",
            "{\"session_ids\": [7]}",
            "{\"authids\": [\"alice\"]}",
            "{\"authroles\": [\"user\"]}",
            "{\"uris\": [{\"uri\": \"com.\", \"match\": \"prefix\"}]}",
    };
    const char *keeping[] = {NULL, "{\"direction\": \"both\"}", "{\"limit\": 10}"};
    for (size_t i = 0; i < sizeof(keeping) / sizeof(keeping[0]); i++) {
        trace_filter *f = filter_of(keeping[i]);
        ck_assert_msg(trace_filter_keeps_all(f), "%s", keeping[i] ? keeping[i] : "defaults");
        trace_filter_free(f);
    }
    for (size_t i = 0; i < sizeof(restricting) / sizeof(restricting[0]); i++) {
        trace_filter *f = filter_of(restricting[i]);
        ck_assert_msg(!trace_filter_keeps_all(f), "%s", restricting[i]);
        trace_filter_free(f);
    }
}

END_TEST

START_TEST(test_defaults_match_everything_but_mgmt)
{
    trace_filter *f = filter_of(NULL);
    trace_ctx c = ctx();
    ck_assert(trace_filter_match(f, &c));
    c.direction = TRACE_TX;
    c.msg_type = WAMP_MSG_EVENT;
    ck_assert(trace_filter_match(f, &c));
    /* Undecodable input (type 0), no realm / ids / uri: still traced by default. */
    trace_ctx bare = {.direction = TRACE_RX, .msg_type = 0};
    ck_assert(trace_filter_match(f, &bare));
    c.realm = "mgmt";
    ck_assert(!trace_filter_match(f, &c));
    trace_filter_free(f);
    trace_filter_free(NULL);
}

END_TEST

START_TEST(test_direction)
{
    trace_filter *rx = filter_of("{\"direction\": \"rx\"}");
    trace_filter *tx = filter_of("{\"direction\": \"tx\"}");
    trace_filter *both = filter_of("{\"direction\": \"both\"}");
    trace_ctx c = ctx();
    ck_assert(trace_filter_match(rx, &c));
    ck_assert(!trace_filter_match(tx, &c));
    ck_assert(trace_filter_match(both, &c));
    c.direction = TRACE_TX;
    ck_assert(!trace_filter_match(rx, &c));
    ck_assert(trace_filter_match(tx, &c));
    ck_assert(trace_filter_match(both, &c));
    trace_filter_free(rx);
    trace_filter_free(tx);
    trace_filter_free(both);
}

END_TEST

START_TEST(test_msg_types)
{
    trace_filter *f = filter_of("{\"msg_types\": [\"Publish\", \"EVENT\", \"yield\", \"Marker\"]}");
    trace_ctx c = ctx();
    ck_assert(trace_filter_match(f, &c));
    c.msg_type = WAMP_MSG_EVENT;
    ck_assert(trace_filter_match(f, &c));
    c.msg_type = WAMP_MSG_YIELD; /* 70: the second mask word */
    ck_assert(trace_filter_match(f, &c));
    c.msg_type = WAMP_MSG_CALL;
    ck_assert(!trace_filter_match(f, &c));
    c.msg_type = WAMP_MSG_HELLO;
    ck_assert(!trace_filter_match(f, &c));
    c.msg_type = 0; /* undecodable: not one of the listed types */
    ck_assert(!trace_filter_match(f, &c));
    c.msg_type = -1; /* out of any table: never matches, never indexes out of bounds */
    ck_assert(!trace_filter_match(f, &c));
    c.msg_type = 500;
    ck_assert(!trace_filter_match(f, &c));
    trace_filter_free(f);
    /* "Unknown", the records of received bytes that did not decode: those alone. */
    f = filter_of("{\"msg_types\": [\"Unknown\"]}");
    trace_ctx bare = {.direction = TRACE_RX, .msg_type = 0};
    ck_assert(trace_filter_match(f, &bare));
    c.msg_type = WAMP_MSG_PUBLISH;
    ck_assert(!trace_filter_match(f, &c));
    ck_assert(!trace_filter_keeps_connections(f));
    trace_filter_free(f);
}

END_TEST

/* Connection records: kept by a filter that restricts nothing, or one whose msg_types names
 * "Connection" and that restricts no realm, URI or peer (they have none). */
START_TEST(test_keeps_connections)
{
    static const struct {
        const char *json;
        bool keeps;
    } cases[] = {
            {NULL, true},
            {"{\"msg_types\": [\"Connection\"]}", true},
            {"{\"msg_types\": [\"Call\", \"connection\"], \"direction\": \"rx\"}", true},
            {"{\"msg_types\": [\"Call\"]}", false},
            {"{\"direction\": \"rx\"}", false},
            {"{\"msg_types\": [\"Connection\"], \"realms\": [\"realm1\"]}", false},
            {"{\"msg_types\": [\"Connection\"], \"uris\": [\"a.b\"]}", false},
            {"{\"msg_types\": [\"Connection\"], \"session_ids\": [7]}", false},
            {"{\"msg_types\": [\"Connection\"], \"authids\": [\"a\"]}", false},
            {"{\"msg_types\": [\"Connection\"], \"authroles\": [\"r\"]}", false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        trace_filter *f = filter_of(cases[i].json);
        ck_assert_msg(trace_filter_keeps_connections(f) == cases[i].keeps, "%s",
                      cases[i].json ? cases[i].json : "defaults");
        trace_filter_free(f);
    }
    /* Naming it selects no message. */
    trace_filter *f = filter_of("{\"msg_types\": [\"Connection\"]}");
    trace_ctx c = ctx();
    ck_assert(!trace_filter_match(f, &c));
    trace_filter_free(f);
}

END_TEST

START_TEST(test_realms)
{
    trace_filter *f = filter_of("{\"realms\": [\"realm1\", \"realm2\"]}");
    trace_ctx c = ctx();
    ck_assert(trace_filter_match(f, &c));
    c.realm = "realm2";
    ck_assert(trace_filter_match(f, &c));
    c.realm = "realm3";
    ck_assert(!trace_filter_match(f, &c));
    c.realm = "realm"; /* whole names only */
    ck_assert(!trace_filter_match(f, &c));
    c.realm = NULL;
    ck_assert(!trace_filter_match(f, &c));
    trace_filter_free(f);
}

END_TEST

START_TEST(test_mgmt_realm_exclusion)
{
    trace_ctx c = ctx();
    c.realm = "mgmt";
    /* Excluded by default, and by a realms list that does not name it. */
    trace_filter *def = filter_of(NULL);
    trace_filter *other = filter_of("{\"realms\": [\"realm1\"]}");
    ck_assert(!trace_filter_match(def, &c));
    ck_assert(!trace_filter_match(other, &c));
    /* Included when realms names it, alone or with others. */
    trace_filter *named = filter_of("{\"realms\": [\"mgmt\"]}");
    trace_filter *both = filter_of("{\"realms\": [\"realm1\", \"mgmt\"]}");
    ck_assert(trace_filter_match(named, &c));
    ck_assert(trace_filter_match(both, &c));
    /* Other filters still apply to the management realm. */
    trace_filter *named_tx = filter_of("{\"realms\": [\"mgmt\"], \"direction\": \"tx\"}");
    ck_assert(!trace_filter_match(named_tx, &c));
    /* The rule follows the name given at creation. */
    trace_filter *custom = filter_of_mgmt(NULL, "admin");
    ck_assert(trace_filter_match(custom, &c));
    c.realm = "admin";
    ck_assert(!trace_filter_match(custom, &c));
    /* No management realm: nothing excluded. */
    trace_filter *none = filter_of_mgmt(NULL, NULL);
    ck_assert(trace_filter_match(none, &c));
    trace_filter_free(def);
    trace_filter_free(other);
    trace_filter_free(named);
    trace_filter_free(both);
    trace_filter_free(named_tx);
    trace_filter_free(custom);
    trace_filter_free(none);
}

END_TEST

START_TEST(test_uris_exact_and_plain_strings)
{
    trace_filter *f = filter_of("{\"uris\": [\"com.example.topic\", "
                                "{\"uri\": \"com.other\", \"match\": \"exact\"}, "
                                "{\"uri\": \"com.third\"}]}");
    trace_ctx c = ctx();
    ck_assert(trace_filter_match(f, &c));
    c.uri = "com.other";
    ck_assert(trace_filter_match(f, &c));
    c.uri = "com.third";
    ck_assert(trace_filter_match(f, &c));
    c.uri = "com.example.topic.sub"; /* exact is not prefix */
    ck_assert(!trace_filter_match(f, &c));
    c.uri = "com.example";
    ck_assert(!trace_filter_match(f, &c));
    c.uri = NULL; /* messages without an action URI do not match a URI filter */
    ck_assert(!trace_filter_match(f, &c));
    trace_filter_free(f);
}

END_TEST

START_TEST(test_uris_prefix_and_wildcard)
{
    trace_filter *p = filter_of("{\"uris\": [{\"uri\": \"com.example.\", \"match\": \"prefix\"}]}");
    trace_filter *w =
            filter_of("{\"uris\": [{\"uri\": \"com..update\", \"match\": \"wildcard\"}]}");
    trace_ctx c = ctx();
    c.uri = "com.example.a.b";
    ck_assert(trace_filter_match(p, &c));
    ck_assert(!trace_filter_match(w, &c));
    c.uri = "com.examples";
    ck_assert(!trace_filter_match(p, &c));
    c.uri = "com.user.update";
    ck_assert(trace_filter_match(w, &c));
    ck_assert(!trace_filter_match(p, &c));
    c.uri = "com.user.x.update"; /* one component per empty pattern component */
    ck_assert(!trace_filter_match(w, &c));
    c.uri = "com.user.updated";
    ck_assert(!trace_filter_match(w, &c));
    trace_filter_free(p);
    trace_filter_free(w);
    /* "" as a prefix matches every URI (but still not "no URI"). */
    trace_filter *all = filter_of("{\"uris\": [{\"uri\": \"\", \"match\": \"prefix\"}]}");
    c.uri = "x";
    ck_assert(trace_filter_match(all, &c));
    c.uri = NULL;
    ck_assert(!trace_filter_match(all, &c));
    trace_filter_free(all);
}

END_TEST

START_TEST(test_uris_star_means_all)
{
    trace_filter *f = filter_of("{\"uris\": [\"com.a\", \"*\"]}");
    trace_ctx c = ctx();
    ck_assert(trace_filter_match(f, &c));
    c.uri = NULL; /* "*" lifts the URI restriction entirely */
    ck_assert(trace_filter_match(f, &c));
    trace_filter_free(f);
}

END_TEST

START_TEST(test_sessions_authids_authroles)
{
    trace_filter *s = filter_of("{\"session_ids\": [3, 7]}");
    trace_filter *a = filter_of("{\"authids\": [\"bob\", \"alice\"]}");
    trace_filter *r = filter_of("{\"authroles\": [\"user\"]}");
    trace_ctx c = ctx();
    ck_assert(trace_filter_match(s, &c));
    ck_assert(trace_filter_match(a, &c));
    ck_assert(trace_filter_match(r, &c));
    c.session_id = 8;
    c.authid = "carol";
    c.authrole = "admin";
    ck_assert(!trace_filter_match(s, &c));
    ck_assert(!trace_filter_match(a, &c));
    ck_assert(!trace_filter_match(r, &c));
    c.authid = NULL;
    c.authrole = NULL;
    ck_assert(!trace_filter_match(a, &c));
    ck_assert(!trace_filter_match(r, &c));
    trace_filter_free(s);
    trace_filter_free(a);
    trace_filter_free(r);
}

END_TEST

START_TEST(test_keys_combine_with_and)
{
    trace_filter *f =
            filter_of("{\"realms\": [\"realm1\"], \"msg_types\": [\"Publish\", \"Event\"], "
                      "\"direction\": \"rx\", \"session_ids\": [7], "
                      "\"authids\": [\"alice\"], \"authroles\": [\"user\"], "
                      "\"uris\": [{\"uri\": \"com.example\", \"match\": \"prefix\"}]}");
    trace_ctx c = ctx();
    ck_assert(trace_filter_match(f, &c));
    /* Each key on its own can reject. */
    trace_ctx v;
    v = c;
    v.realm = "realm2";
    ck_assert(!trace_filter_match(f, &v));
    v = c;
    v.msg_type = WAMP_MSG_CALL;
    ck_assert(!trace_filter_match(f, &v));
    v = c;
    v.direction = TRACE_TX;
    ck_assert(!trace_filter_match(f, &v));
    v = c;
    v.session_id = 1;
    ck_assert(!trace_filter_match(f, &v));
    v = c;
    v.authid = "bob";
    ck_assert(!trace_filter_match(f, &v));
    v = c;
    v.authrole = "guest";
    ck_assert(!trace_filter_match(f, &v));
    v = c;
    v.uri = "org.example";
    ck_assert(!trace_filter_match(f, &v));
    trace_filter_free(f);
}

END_TEST

static Suite *trace_filter_suite(void)
{
    Suite *s = suite_create("trace_filter");
    TCase *tc = tcase_create("filter");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_defaults_match_everything_but_mgmt);
    tcase_add_test(tc, test_keeps_all);
    tcase_add_test(tc, test_direction);
    tcase_add_test(tc, test_msg_types);
    tcase_add_test(tc, test_keeps_connections);
    tcase_add_test(tc, test_realms);
    tcase_add_test(tc, test_mgmt_realm_exclusion);
    tcase_add_test(tc, test_uris_exact_and_plain_strings);
    tcase_add_test(tc, test_uris_prefix_and_wildcard);
    tcase_add_test(tc, test_uris_star_means_all);
    tcase_add_test(tc, test_sessions_authids_authroles);
    tcase_add_test(tc, test_keys_combine_with_and);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trace_filter_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
