/* check_wamp_uri.c: URI validation under the four rules, and exact/prefix/wildcard matching. */
#include <stdbool.h>
#include <stdlib.h>

#include <check.h>

#include "wamp_uri.h"

struct uri_case {
    const char *uri;
    bool loose;
    bool strict;
    bool loose_empty;
    bool strict_empty;
};

/* Expected values follow the spec's regular expressions ("URIs"), e.g. loose
 * ^([^\s\.#]+\.)*([^\s\.#]+)$ and strict-with-empty ^(([0-9a-z_]+\.)|\.)*([0-9a-z_]+)?$,
 * except that "" is never valid. */
static const struct uri_case uri_cases[] = {
        {"com.myapp.topic1", true, true, true, true},
        {"com", true, true, true, true},
        {"a_b.c9.0", true, true, true, true},
        {"wamp.error.invalid_uri", true, true, true, true},
        {"", false, false, false, false},
        {"com.", false, false, true, true},
        {".com", false, false, true, true},
        {"com..update", false, false, true, true},
        {".", false, false, true, true},
        {"..", false, false, true, true},
        {"com.MyApp", true, false, true, false},
        {"com.my-app", true, false, true, false},
        {"com.myapp.*", true, false, true, false},
        {"caf\xc3\xa9.menu", true, false, true, false},
        {"com..My", false, false, true, false},
        {"com.my app", false, false, false, false},
        {"com.my#app", false, false, false, false},
        {"#", false, false, false, false},
        {"com.my\tapp", false, false, false, false},
        {"com.my\napp", false, false, false, false},
        {"com.my\rapp", false, false, false, false},
        {"com.my\vapp", false, false, false, false},
        {"com.my\fapp", false, false, false, false},
        {" com", false, false, false, false},
        /* \s in the spec's (Python) regexes also matches Unicode whitespace. */
        {"com.my\x1f"
         "app",
         false, false, false, false},
        {"com.my\xc2\xa0"
         "app",
         false, false, false, false}, /* U+00A0 */
        {"com.my\xc2\x85"
         "app",
         false, false, false, false},                       /* U+0085 */
        {"com.\xe1\x9a\x80", false, false, false, false},   /* U+1680 */
        {"com.\xe2\x80\x80", false, false, false, false},   /* U+2000 */
        {"com.\xe2\x80\x8a", false, false, false, false},   /* U+200A */
        {"com.\xe2\x80\xa8", false, false, false, false},   /* U+2028 */
        {"com.\xe2\x80\xa9", false, false, false, false},   /* U+2029 */
        {"com.\xe2\x80\xaf", false, false, false, false},   /* U+202F */
        {"com.\xe2\x81\x9f", false, false, false, false},   /* U+205F */
        {"com.\xe3\x80\x80..", false, false, false, false}, /* U+3000 */
        {"com.\xe2\x80\x8b", true, false, true, false},     /* U+200B is not \s */
        {"com.\xe2\x80\xa7", true, false, true, false},     /* U+2027 neither */
        {"com.\xc2\xa9", true, false, true, false},         /* U+00A9 */
        {"com.\x7f", true, false, true, false},
        {"com. ", false, false, false, false},
};

START_TEST(test_uri_validation_table)
{
    const struct uri_case *c = &uri_cases[_i];
    ck_assert_msg(wamp_uri_is_valid(c->uri, WAMP_URI_LOOSE) == c->loose, "loose '%s'", c->uri);
    ck_assert_msg(wamp_uri_is_valid(c->uri, WAMP_URI_STRICT) == c->strict, "strict '%s'", c->uri);
    ck_assert_msg(wamp_uri_is_valid(c->uri, WAMP_URI_LOOSE_EMPTY) == c->loose_empty,
                  "loose_empty '%s'", c->uri);
    ck_assert_msg(wamp_uri_is_valid(c->uri, WAMP_URI_STRICT_EMPTY) == c->strict_empty,
                  "strict_empty '%s'", c->uri);
}

END_TEST

START_TEST(test_uri_null_invalid)
{
    ck_assert(!wamp_uri_is_valid(NULL, WAMP_URI_LOOSE));
    ck_assert(!wamp_uri_is_valid(NULL, WAMP_URI_STRICT));
    ck_assert(!wamp_uri_is_valid(NULL, WAMP_URI_LOOSE_EMPTY));
    ck_assert(!wamp_uri_is_valid(NULL, WAMP_URI_STRICT_EMPTY));
}

END_TEST

struct match_case {
    const char *pattern;
    wamp_match m;
    const char *uri;
    bool expect;
};

static const struct match_case match_cases[] = {
        {"com.a", WAMP_MATCH_EXACT, "com.a", true},
        {"com.a", WAMP_MATCH_EXACT, "com.ab", false},
        {"com.ab", WAMP_MATCH_EXACT, "com.a", false},
        {"com.a", WAMP_MATCH_EXACT, "COM.A", false},
        /* Prefix is a plain string prefix, not component-wise. */
        {"com.a", WAMP_MATCH_PREFIX, "com.ab", true},
        {"com.a", WAMP_MATCH_PREFIX, "com.a", true},
        {"com.a", WAMP_MATCH_PREFIX, "com.a.b.c", true},
        {"com.a.", WAMP_MATCH_PREFIX, "com.a", false},
        {"com.b", WAMP_MATCH_PREFIX, "com.a.b", false},
        {"", WAMP_MATCH_PREFIX, "anything", true},
        /* Wildcard: same number of components, empty pattern components match any one. */
        {"com..update", WAMP_MATCH_WILDCARD, "com.myapp.update", true},
        {"com..update", WAMP_MATCH_WILDCARD, "com.x.update", true},
        {"com..update", WAMP_MATCH_WILDCARD, "com.update", false},
        {"com..update", WAMP_MATCH_WILDCARD, "com.a.b.update", false},
        {"com..update", WAMP_MATCH_WILDCARD, "com.a.updatex", false},
        {"com..update", WAMP_MATCH_WILDCARD, "org.a.update", false},
        {"com..update", WAMP_MATCH_WILDCARD, "com.a.update.x", false},
        {"..", WAMP_MATCH_WILDCARD, "a.b.c", true},
        {"..", WAMP_MATCH_WILDCARD, "a.b", false},
        {"..", WAMP_MATCH_WILDCARD, "a.b.c.d", false},
        {".a", WAMP_MATCH_WILDCARD, "x.a", true},
        {"a.", WAMP_MATCH_WILDCARD, "a.x", true},
        {"a.", WAMP_MATCH_WILDCARD, "a", false},
        {"", WAMP_MATCH_WILDCARD, "com", true},
        {"", WAMP_MATCH_WILDCARD, "com.a", false},
        {"a.b", WAMP_MATCH_WILDCARD, "a.b", true},
        {"a.b", WAMP_MATCH_WILDCARD, "a.bc", false},
        {"a.bc", WAMP_MATCH_WILDCARD, "a.b", false},
        {"a.b", WAMP_MATCH_WILDCARD, "a.c", false},
};

START_TEST(test_uri_match_table)
{
    const struct match_case *c = &match_cases[_i];
    ck_assert_msg(wamp_uri_matches(c->pattern, c->m, c->uri) == c->expect, "%s '%s' vs '%s'",
                  wamp_match_name(c->m), c->pattern, c->uri);
}

END_TEST

START_TEST(test_uri_match_null)
{
    ck_assert(!wamp_uri_matches(NULL, WAMP_MATCH_EXACT, "a"));
    ck_assert(!wamp_uri_matches("a", WAMP_MATCH_PREFIX, NULL));
    ck_assert(!wamp_uri_matches(NULL, WAMP_MATCH_WILDCARD, NULL));
}

END_TEST

START_TEST(test_match_parse_and_name)
{
    wamp_match m = WAMP_MATCH_EXACT;
    ck_assert(wamp_match_parse("prefix", &m));
    ck_assert_int_eq(m, WAMP_MATCH_PREFIX);
    ck_assert(wamp_match_parse("wildcard", &m));
    ck_assert_int_eq(m, WAMP_MATCH_WILDCARD);
    ck_assert(wamp_match_parse("exact", &m));
    ck_assert_int_eq(m, WAMP_MATCH_EXACT);
    m = WAMP_MATCH_PREFIX;
    ck_assert(!wamp_match_parse("Exact", &m));
    ck_assert(!wamp_match_parse("", &m));
    ck_assert(!wamp_match_parse("regex", &m));
    ck_assert(!wamp_match_parse(NULL, &m));
    ck_assert_int_eq(m, WAMP_MATCH_PREFIX); /* unchanged on failure */
    ck_assert_str_eq(wamp_match_name(WAMP_MATCH_EXACT), "exact");
    ck_assert_str_eq(wamp_match_name(WAMP_MATCH_PREFIX), "prefix");
    ck_assert_str_eq(wamp_match_name(WAMP_MATCH_WILDCARD), "wildcard");
}

END_TEST

static Suite *wamp_uri_suite(void)
{
    Suite *s = suite_create("wamp_uri");
    TCase *tc = tcase_create("uri");
    tcase_set_timeout(tc, 10);
    tcase_add_loop_test(tc, test_uri_validation_table, 0,
                        (int)(sizeof(uri_cases) / sizeof(uri_cases[0])));
    tcase_add_test(tc, test_uri_null_invalid);
    tcase_add_loop_test(tc, test_uri_match_table, 0,
                        (int)(sizeof(match_cases) / sizeof(match_cases[0])));
    tcase_add_test(tc, test_uri_match_null);
    tcase_add_test(tc, test_match_parse_and_name);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_uri_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
