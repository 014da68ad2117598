/* check_rt_options.c: the option tables (rt_options.h): each option the spec names is refused
 * with a wrong type (its name in the reason), accepted with its type, and unknown options and
 * message types without a table pass. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "rt_options.h"

/* One option, a value of its type and one of a wrong type (JSON texts). */
typedef struct opt_case {
    wamp_msg_type type;
    const char *name;
    const char *good;
    const char *bad;
} opt_case;

static const opt_case cases[] = {
        {WAMP_MSG_PUBLISH, "acknowledge", "true", "1"},
        {WAMP_MSG_PUBLISH, "exclude_me", "false", "\"no\""},
        {WAMP_MSG_PUBLISH, "disclose_me", "true", "null"},
        {WAMP_MSG_PUBLISH, "retain", "true", "[]"},
        {WAMP_MSG_PUBLISH, "exclude", "[1, 2]", "[\"1\"]"},
        {WAMP_MSG_PUBLISH, "eligible", "[]", "5"},
        {WAMP_MSG_PUBLISH, "exclude_authid", "[\"a\"]", "[\"a\\u0000b\"]"},
        {WAMP_MSG_PUBLISH, "exclude_authrole", "[\"r\"]", "\"r\""},
        {WAMP_MSG_PUBLISH, "eligible_authid", "[\"a\"]", "[1]"},
        {WAMP_MSG_PUBLISH, "eligible_authrole", "[]", "{}"},
        {WAMP_MSG_PUBLISH, "transaction_hash", "\"h\"", "123"},
        {WAMP_MSG_PUBLISH, "forward_for", "[{\"session\": 1}]", "\"hello\""},
        {WAMP_MSG_SUBSCRIBE, "match", "\"prefix\"", "\"prefix\\u0000x\""},
        {WAMP_MSG_SUBSCRIBE, "get_retained", "false", "0"},
        {WAMP_MSG_SUBSCRIBE, "forward_for", "[]", "[1]"},
        {WAMP_MSG_CALL, "timeout", "0", "-1"},
        {WAMP_MSG_CALL, "receive_progress", "true", "\"yes\""},
        {WAMP_MSG_CALL, "disclose_me", "false", "1.5"},
        {WAMP_MSG_CALL, "transaction_hash", "\"t\"", "123"},
        {WAMP_MSG_CALL, "forward_for", "[]", "{}"},
        {WAMP_MSG_REGISTER, "match", "\"wildcard\"", "7"},
        {WAMP_MSG_REGISTER, "invoke", "\"roundrobin\"", "\"roundrobin\\u0000\""},
        {WAMP_MSG_REGISTER, "concurrency", "1", "0"},
        {WAMP_MSG_REGISTER, "disclose_caller", "true", "\"true\""},
        {WAMP_MSG_REGISTER, "force_reregister", "false", "1"},
        {WAMP_MSG_REGISTER, "forward_for", "[]", "\"x\""},
        {WAMP_MSG_CANCEL, "mode", "\"kill\"", "\"kill\\u0000x\""},
        {WAMP_MSG_CANCEL, "forward_for", "[]", "true"},
        {WAMP_MSG_YIELD, "progress", "true", "1"},
        {WAMP_MSG_YIELD, "forward_for", "[]", "null"},
};

static json_t *opts(const char *name, const char *value)
{
    json_t *v = json_loads(value, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    ck_assert_ptr_nonnull(v);
    json_t *o = json_object();
    json_object_set_new(o, name, v);
    return o;
}

START_TEST(test_every_option_typed)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const opt_case *c = &cases[i];
        char why[96] = "";
        json_t *o = opts(c->name, c->good);
        ck_assert_msg(rt_options_check(c->type, o, why, sizeof(why)), "%s %s: %s", c->name, c->good,
                      why);
        json_decref(o);
        o = opts(c->name, c->bad);
        ck_assert_msg(!rt_options_check(c->type, o, why, sizeof(why)), "%s %s", c->name, c->bad);
        ck_assert_msg(strstr(why, c->name) && strncmp(why, "option ", 7) == 0, "%s", why);
        json_decref(o);
    }
}

END_TEST

START_TEST(test_unknown_options_and_types_pass)
{
    char why[96] = "";
    json_t *o = opts("x_custom", "123");
    ck_assert(rt_options_check(WAMP_MSG_CALL, o, why, sizeof(why)));
    json_decref(o);
    /* ERROR's Details and other messages have no table. */
    o = opts("progress", "1");
    ck_assert(rt_options_check(WAMP_MSG_ERROR, o, why, sizeof(why)));
    json_decref(o);
    ck_assert(rt_options_check(WAMP_MSG_CALL, NULL, why, sizeof(why)));
    o = json_object();
    ck_assert(rt_options_check(WAMP_MSG_PUBLISH, o, why, sizeof(why)));
    json_decref(o);
    json_t *s = json_stringn("a\0b", 3);
    ck_assert(!rt_options_is_plain_string(s));
    json_decref(s);
    s = json_string("ab");
    ck_assert(rt_options_is_plain_string(s));
    json_decref(s);
    ck_assert(!rt_options_is_plain_string(NULL));
}

END_TEST

static Suite *options_suite(void)
{
    Suite *s = suite_create("rt_options");
    TCase *tc = tcase_create("options");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_every_option_typed);
    tcase_add_test(tc, test_unknown_options_and_types_pass);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(options_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
