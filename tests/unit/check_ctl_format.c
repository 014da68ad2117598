/* check_ctl_format.c: wampscope-ctl's tables and metadata lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "ctl_format.h"

static char *capture_row(const char *json_text, int width)
{
    json_error_t e;
    json_t *v = json_loads(json_text, 0, &e);
    ck_assert_ptr_nonnull(v);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ctl_format_record_row(f, v, width);
    fclose(f);
    json_decref(v);
    return buf;
}

START_TEST(test_record_row)
{
    char *row = capture_row("{\"seq\": 42, \"ts\": 1502829396.5978456, \"direction\": \"tx\","
                            "\"msg_type\": \"Event\", \"realm\": \"realm1\", \"session_id\": 77,"
                            "\"correlation\": \"d5d9bcec-a3eb-4f0e-875b-6933680bb546\","
                            "\"correlation_is_anchor\": false, \"correlation_is_last\": true,"
                            "\"uri\": \"com.example.on\", \"dropped\": \"queue_full\","
                            "\"msg\": [36, 1, 2, {}, [\"a long argument that gets cut\"]]}",
                            20);
    char seq[16], time[16], dir[8], type[16], realm[16], sess[24], uri[64], corr[16], flags[4];
    ck_assert_int_eq(sscanf(row, "%15s %15s %7s %15s %15s %23s %63s %15s %3s", seq, time, dir, type,
                            realm, sess, uri, corr, flags),
                     9);
    ck_assert_str_eq(seq, "42");
    ck_assert_str_eq(time, "20:36:36.597"); /* UTC time of day */
    ck_assert_str_eq(dir, "tx!");           /* ! = not delivered */
    ck_assert_str_eq(type, "Event");
    ck_assert_str_eq(realm, "realm1");
    ck_assert_str_eq(sess, "77");
    ck_assert_str_eq(uri, "com.example.on");
    ck_assert_str_eq(corr, "680bb546");
    ck_assert_str_eq(flags, "L");
    ck_assert_ptr_nonnull(strstr(row, "[36,1,2,{},[\"a lo...\n"));
    ck_assert_int_eq((int)strlen(strstr(row, "[36")), 20 + 1); /* width incl. "...", newline */
    free(row);
    /* A marker: no direction, session or correlation; the whole msg with width 0. */
    row = capture_row("{\"seq\": 0, \"ts\": 0.5, \"direction\": null, \"msg_type\": \"Marker\","
                      "\"realm\": null, \"session_id\": null, \"correlation\": null,"
                      "\"uri\": \"step 1\", \"msg\": {\"k\": 1}}",
                      0);
    ck_assert_ptr_nonnull(strstr(row, "00:00:00.500 -   Marker"));
    ck_assert_ptr_nonnull(strstr(row, "{\"k\":1}\n"));
    free(row);
}

END_TEST

START_TEST(test_action_row)
{
    const char *text =
            "{\"seq\": 7, \"pc\": 1.0, \"ts\": 1502829396.5978456, \"realm\": \"realm1\","
            "\"action\": \"call\", \"correlation\": \"d5d9bcec-a3eb-4f0e-875b-6933680bb546\","
            "\"uri\": \"com.example.add\", \"originator\": {\"session_id\": 77, \"authid\": \"a\","
            "\"authrole\": \"r\"}, \"responders\": [{\"session_id\": 8, \"authid\": null,"
            "\"authrole\": null}, {\"session_id\": 9, \"authid\": null, \"authrole\": null}],"
            "\"success\": false, \"duration\": 0.0123456}";
    json_t *v = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(v);
    ck_assert(ctl_format_is_action(v));
    json_decref(v);
    char *row = capture_row(text, 20);
    char seq[16], time[16], action[16], realm[16], sess[24], uri[64], resp[8], ok[8], dur[16],
            unit[8];
    ck_assert_int_eq(sscanf(row, "%15s %15s %15s %15s %23s %63s %7s %7s %15s %7s", seq, time,
                            action, realm, sess, uri, resp, ok, dur, unit),
                     10);
    ck_assert_str_eq(seq, "7");
    ck_assert_str_eq(time, "20:36:36.597");
    ck_assert_str_eq(action, "call");
    ck_assert_str_eq(realm, "realm1");
    ck_assert_str_eq(sess, "77"); /* the originator */
    ck_assert_str_eq(uri, "com.example.add");
    ck_assert_str_eq(resp, "2");
    ck_assert_str_eq(ok, "NO");
    ck_assert_str_eq(dur, "12.346");
    ck_assert_str_eq(unit, "ms");
    free(row);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ctl_format_actions_header(f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "ACTION"));
    ck_assert_ptr_nonnull(strstr(buf, "ORIGINATOR"));
    ck_assert_ptr_nonnull(strstr(buf, "DURATION"));
    free(buf);
    /* A message record is not one. */
    v = json_loads("{\"seq\": 1, \"msg_type\": \"Call\"}", 0, NULL);
    ck_assert(!ctl_format_is_action(v));
    json_decref(v);
}

END_TEST

START_TEST(test_traces_and_meta)
{
    json_t *m =
            json_pack("{s:s, s:s, s:s, s:f, s:i, s:i, s:i, s:n, s:{s:i}}", "id", "trace1", "status",
                      "stopped", "started", "2026-01-02T03:04:05.678Z", "runtime", 12.34, "records",
                      9, "dropped", 2, "next_seq", 11, "ended", "options", "limit", 5);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ctl_format_traces_header(f);
    ctl_format_trace_row(f, m);
    ctl_format_meta(f, m);
    fclose(f);
    char *row = strchr(buf, '\n') + 1;
    char id[32], status[16], started[32], runtime[16];
    int records, dropped;
    ck_assert_int_eq(sscanf(row, "%31s %15s %d %d %31s %15s", id, status, &records, &dropped,
                            started, runtime),
                     6);
    ck_assert_str_eq(id, "trace1");
    ck_assert_str_eq(status, "stopped");
    ck_assert_int_eq(records, 9);
    ck_assert_int_eq(dropped, 2);
    ck_assert_str_eq(started, "2026-01-02T03:04:05.678Z");
    ck_assert_str_eq(runtime, "12.3s");
    ck_assert_ptr_nonnull(strstr(buf, "\nrecords        9\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\nended          -\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\nruntime        12.340\n"));
    ck_assert_ptr_nonnull(strstr(buf, "\noptions        {\"limit\":5}\n"));
    free(buf);
    json_decref(m);
}

END_TEST

static Suite *ctl_format_suite(void)
{
    Suite *s = suite_create("ctl_format");
    TCase *tc = tcase_create("format");
    tcase_add_test(tc, test_record_row);
    tcase_add_test(tc, test_action_row);
    tcase_add_test(tc, test_traces_and_meta);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ctl_format_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
