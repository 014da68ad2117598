/* check_ctl_export.c: the JSON Lines and Chrome Trace Event converters of wampscope-ctl on a
 * fixed record set. The Chrome output is parsed back and checked against the format's rules:
 * every event has ph/ts/pid/tid, every used process/thread is named, X slices nest per thread,
 * every flow start comes before its one finish, both in the category of the slices they bind to
 * ("wamp"): the start at its action's slice, the finish ("bp": "e") at the zero-length slice of
 * its follower; every message record has a time of its own, also when records share a clock
 * reading (flows between two events of one time vanish in the DevTools trace engine). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "ctl_export.h"

/* Realm1: caller A (1001) and callee B (1002); two calls of A overlap without nesting (c1, c2),
 * a third nests inside c1 (c3). Realm2: D (2002) publishes, C (2001) gets the EVENT. A GOODBYE
 * without correlation and a marker. Times in seconds. */
static const char *const RECORDS[] = {
        "{\"seq\":0,\"ts\":100.0000,\"direction\":\"rx\",\"msg_type\":\"Call\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1001,\"authid\":\"alice\",\"authrole\":\"user\",\"correlation\":\"c1\","
        "\"correlation_is_anchor\":true,\"correlation_is_last\":false,\"uri\":\"com.add\","
        "\"msg\":[48,1,{},\"com.add\",[1,2]]}",
        "{\"seq\":1,\"ts\":100.00005,\"direction\":\"rx\",\"msg_type\":\"Call\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1001,\"authid\":\"alice\",\"authrole\":\"user\",\"correlation\":\"c2\","
        "\"correlation_is_anchor\":true,\"uri\":\"com.mul\",\"msg\":[48,2,{},\"com.mul\"]}",
        "{\"seq\":2,\"ts\":100.0001,\"direction\":\"tx\",\"msg_type\":\"Invocation\","
        "\"realm\":\"realm1\",\"session_id\":1002,\"authid\":\"bob\",\"authrole\":\"svc\","
        "\"correlation\":\"c1\",\"uri\":\"com.add\",\"msg\":[68,1,5,{}]}",
        "{\"seq\":3,\"ts\":100.00015,\"direction\":\"tx\",\"msg_type\":\"Invocation\","
        "\"realm\":\"realm1\",\"session_id\":1002,\"correlation\":\"c2\",\"uri\":\"com.mul\","
        "\"msg\":[68,2,6,{}]}",
        "{\"seq\":4,\"ts\":100.0002,\"direction\":\"rx\",\"msg_type\":\"Call\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1001,\"correlation\":\"c3\",\"correlation_is_anchor\":true,"
        "\"uri\":\"com.none\",\"msg\":[48,3,{},\"com.none\"]}",
        "{\"seq\":5,\"ts\":100.00025,\"direction\":\"tx\",\"msg_type\":\"Error\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1001,\"correlation\":\"c3\",\"correlation_is_last\":true,"
        "\"uri\":\"com.none\",\"msg\":[8,48,3,{},\"wamp.error.no_such_procedure\"]}",
        "{\"seq\":6,\"ts\":100.0003,\"direction\":\"rx\",\"msg_type\":\"Yield\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1002,\"correlation\":\"c1\",\"uri\":\"com.add\",\"msg\":[70,1,{},[3]]}",
        "{\"seq\":7,\"ts\":100.00035,\"direction\":\"rx\",\"msg_type\":\"Yield\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1002,\"correlation\":\"c2\",\"uri\":\"com.mul\",\"msg\":[70,2,{}]}",
        "{\"seq\":8,\"ts\":100.0004,\"direction\":\"tx\",\"msg_type\":\"Result\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1001,\"correlation\":\"c1\",\"correlation_is_last\":true,"
        "\"uri\":\"com.add\",\"msg\":[50,1,{},[3]]}",
        "{\"seq\":9,\"ts\":100.0005,\"direction\":\"tx\",\"msg_type\":\"Result\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1001,\"correlation\":\"c2\",\"correlation_is_last\":true,"
        "\"uri\":\"com.mul\",\"msg\":[50,2,{}]}",
        "{\"seq\":10,\"ts\":100.001,\"direction\":\"rx\",\"msg_type\":\"Publish\",\"realm\":"
        "\"realm2\","
        "\"session_id\":2002,\"correlation\":\"p1\",\"correlation_is_anchor\":true,"
        "\"uri\":\"com.topic\",\"msg\":[16,1,{\"acknowledge\":true},\"com.topic\"]}",
        "{\"seq\":11,\"ts\":100.0011,\"direction\":\"tx\",\"msg_type\":\"Event\",\"realm\":"
        "\"realm2\","
        "\"session_id\":2001,\"correlation\":\"p1\",\"uri\":\"com.topic\",\"msg\":[36,1,2,{}],"
        "\"dropped\":\"queue_full\"}",
        "{\"seq\":12,\"ts\":100.0012,\"direction\":\"tx\",\"msg_type\":\"Published\","
        "\"realm\":\"realm2\",\"session_id\":2002,\"correlation\":\"p1\","
        "\"correlation_is_last\":true,\"uri\":\"com.topic\",\"msg\":[17,1,2]}",
        "{\"seq\":13,\"ts\":100.002,\"direction\":\"rx\",\"msg_type\":\"Goodbye\",\"realm\":"
        "\"realm1\","
        "\"session_id\":1002,\"correlation\":null,\"uri\":null,"
        "\"msg\":[6,{\"message\":\"bye\\nnow\"},\"wamp.close.close_realm\"]}",
        /* Parenthesized: clang's -Wstring-concatenation takes a two-line last element for a
         * missing comma. */
        ("{\"seq\":14,\"ts\":100.003,\"direction\":null,\"msg_type\":\"Marker\",\"realm\":null,"
         "\"session_id\":null,\"correlation\":null,\"uri\":\"checkpoint\",\"msg\":{\"step\":2}}"),
};

#define N_RECORDS (sizeof(RECORDS) / sizeof(RECORDS[0]))

static json_t *record(size_t i)
{
    json_error_t e;
    json_t *r = json_loads(RECORDS[i], 0, &e);
    ck_assert_msg(r != NULL, "record %zu: %s", i, e.text);
    return r;
}

START_TEST(test_jsonl_lines_are_the_records)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < N_RECORDS; i++) {
        json_t *r = record(i);
        ck_assert(ctl_export_jsonl(f, r));
        json_decref(r);
    }
    fclose(f);
    size_t n = 0;
    for (char *line = buf, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1, n++) {
        *nl = '\0';
        json_error_t e;
        json_t *got = json_loads(line, 0, &e);
        ck_assert_ptr_nonnull(got);
        json_t *want = record(n);
        ck_assert(json_equal(got, want));
        json_decref(got);
        json_decref(want);
    }
    ck_assert_uint_eq(n, N_RECORDS); /* the "\n" inside the GOODBYE message stayed escaped */
    free(buf);
}

END_TEST

/* The Chrome document ctl_chrome writes for the records given as JSON text and other_data
 * (NULL: none); owned. A record that is not an object is refused along the way. */
static json_t *chrome_of(const char *const *recs, size_t n, const json_t *other)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ctl_chrome *c = ctl_chrome_new(f);
    ck_assert_ptr_nonnull(c);
    for (size_t i = 0; i < n; i++) {
        json_error_t e;
        json_t *r = json_loads(recs[i], 0, &e);
        ck_assert_msg(r != NULL, "record %zu: %s", i, e.text);
        ck_assert(ctl_chrome_add(c, r));
        json_decref(r);
    }
    json_t *not_object = json_array();
    ck_assert(!ctl_chrome_add(c, not_object));
    json_decref(not_object);
    ck_assert(ctl_chrome_finish(c, other));
    ctl_chrome_free(c);
    fclose(f);
    json_error_t e;
    json_t *doc = json_loads(buf, 0, &e);
    ck_assert_msg(doc != NULL, "chrome output is not JSON: %s", e.text);
    free(buf);
    return doc;
}

/* The Chrome document of RECORDS, with other_data {"trace": "t1"}. */
static json_t *chrome_doc(void)
{
    json_t *other = json_pack("{s:s}", "trace", "t1");
    json_t *doc = chrome_of(RECORDS, N_RECORDS, other);
    json_decref(other);
    return doc;
}

static const char *sget(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static json_int_t iget(const json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static double nget(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* The metadata name of a process (tid < 0) or thread; NULL if unnamed. */
static const char *meta_name(const json_t *events, json_int_t pid, json_int_t tid)
{
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        if (strcmp(sget(e, "ph"), "M") != 0 || iget(e, "pid") != pid) {
            continue;
        }
        if (tid < 0 && strcmp(sget(e, "name"), "process_name") == 0) {
            return sget(json_object_get(e, "args"), "name");
        }
        if (tid >= 0 && strcmp(sget(e, "name"), "thread_name") == 0 && iget(e, "tid") == tid) {
            return sget(json_object_get(e, "args"), "name");
        }
    }
    return NULL;
}

/* An action's slice (its args hold a correlation; a message's slice holds only its seq). */
static bool is_action_slice(const json_t *e)
{
    return strcmp(sget(e, "ph"), "X") == 0 &&
           json_object_get(json_object_get(e, "args"), "correlation") != NULL;
}

/* The action slice whose name is name (exactly one). */
static const json_t *slice_named(const json_t *events, const char *name)
{
    const json_t *found = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        if (is_action_slice(e) && strcmp(sget(e, "name"), name) == 0) {
            ck_assert_ptr_null(found);
            found = e;
        }
    }
    ck_assert_ptr_nonnull(found);
    return found;
}

START_TEST(test_chrome_structure)
{
    json_t *doc = chrome_doc();
    ck_assert_str_eq(sget(doc, "displayTimeUnit"), "ms");
    ck_assert_str_eq(sget(json_object_get(doc, "otherData"), "trace"), "t1");
    json_t *events = json_object_get(doc, "traceEvents");
    size_t n_instant = 0, n_action = 0, n_msg_slice = 0, n_s = 0, n_f = 0, i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        const char *ph = sget(e, "ph");
        ck_assert_ptr_nonnull(ph);
        ck_assert(json_is_number(json_object_get(e, "ts")));
        ck_assert(json_is_integer(json_object_get(e, "pid")));
        ck_assert(json_is_integer(json_object_get(e, "tid")));
        ck_assert_ptr_nonnull(sget(e, "name"));
        bool global = strcmp(ph, "i") == 0 && sget(e, "s") && strcmp(sget(e, "s"), "g") == 0;
        if (strcmp(ph, "M") != 0 && !global) {
            ck_assert_ptr_nonnull(meta_name(events, iget(e, "pid"), -1));
            ck_assert_ptr_nonnull(meta_name(events, iget(e, "pid"), iget(e, "tid")));
        }
        n_instant += strcmp(ph, "i") == 0;
        if (strcmp(ph, "X") == 0 || strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
            ck_assert_str_eq(sget(e, "cat"), "wamp");
        }
        if (strcmp(ph, "X") == 0) {
            n_action += is_action_slice(e);
            n_msg_slice += !is_action_slice(e);
        }
        n_s += strcmp(ph, "s") == 0;
        n_f += strcmp(ph, "f") == 0;
    }
    ck_assert_uint_eq(n_instant, N_RECORDS);
    ck_assert_uint_eq(n_action, 4); /* c1, c2, c3, p1 */
    /* Followers: c1 3, c2 3, c3 1, p1 2; each has a zero-length slice for its arrow. */
    ck_assert_uint_eq(n_msg_slice, 9);
    ck_assert_uint_eq(n_s, 9);
    ck_assert_uint_eq(n_f, 9);

    /* Every flow id: one s, then one f, same name, s not after f, s at a slice of its thread
     * that starts at s, and f ("bp": "e") at a zero-length slice of its thread at its time. */
    json_array_foreach(events, i, e)
    {
        if (strcmp(sget(e, "ph"), "s") != 0) {
            continue;
        }
        size_t j, finishes = 0;
        json_t *f;
        json_array_foreach(events, j, f)
        {
            if (strcmp(sget(f, "ph"), "f") == 0 && iget(f, "id") == iget(e, "id")) {
                finishes++;
                ck_assert_uint_gt(j, i);
                ck_assert_str_eq(sget(f, "bp"), "e");
                bool bound = false;
                size_t k;
                json_t *x;
                json_array_foreach(events, k, x)
                {
                    bound = bound ||
                            (strcmp(sget(x, "ph"), "X") == 0 && iget(x, "pid") == iget(f, "pid") &&
                             iget(x, "tid") == iget(f, "tid") && nget(x, "ts") == nget(f, "ts") &&
                             nget(x, "dur") == 0);
                }
                ck_assert(bound);
                ck_assert_str_eq(sget(f, "name"), sget(e, "name"));
                ck_assert(nget(f, "ts") >= nget(e, "ts"));
            }
        }
        ck_assert_uint_eq(finishes, 1);
        bool inside = false;
        json_array_foreach(events, j, f)
        {
            if (strcmp(sget(f, "ph"), "X") == 0 && iget(f, "pid") == iget(e, "pid") &&
                iget(f, "tid") == iget(e, "tid") && nget(f, "ts") == nget(e, "ts")) {
                inside = true;
            }
        }
        ck_assert(inside);
    }

    /* X nesting per thread: sort by (start, -end), stack of ends. */
    json_array_foreach(events, i, e)
    {
        if (strcmp(sget(e, "ph"), "X") != 0) {
            continue;
        }
        ck_assert(nget(e, "dur") >= 0);
        size_t j;
        json_t *o;
        json_array_foreach(events, j, o)
        {
            if (j == i || strcmp(sget(o, "ph"), "X") != 0 || iget(o, "pid") != iget(e, "pid") ||
                iget(o, "tid") != iget(e, "tid")) {
                continue;
            }
            double a0 = nget(e, "ts"), a1 = a0 + nget(e, "dur");
            double b0 = nget(o, "ts"), b1 = b0 + nget(o, "dur");
            bool disjoint = a1 <= b0 || b1 <= a0;
            bool nested = (a0 >= b0 && a1 <= b1) || (b0 >= a0 && b1 <= a1);
            ck_assert_msg(disjoint || nested, "%s and %s overlap on one thread", sget(e, "name"),
                          sget(o, "name"));
        }
    }

    /* The slices themselves. */
    const json_t *c1 = slice_named(events, "Call com.add");
    const json_t *c2 = slice_named(events, "Call com.mul");
    const json_t *c3 = slice_named(events, "Call com.none");
    const json_t *p1 = slice_named(events, "Publish com.topic");
    ck_assert(fabs(nget(c1, "ts") - 100.0000e6) < 0.5);
    ck_assert(fabs(nget(c1, "dur") - 400) < 0.5);
    ck_assert(fabs(nget(c2, "dur") - 450) < 0.5);
    ck_assert(fabs(nget(p1, "dur") - 200) < 0.5);
    ck_assert_str_eq(meta_name(events, iget(c1, "pid"), -1), "realm realm1");
    ck_assert_str_eq(meta_name(events, iget(p1, "pid"), -1), "realm realm2");
    ck_assert_str_eq(meta_name(events, iget(c1, "pid"), iget(c1, "tid")),
                     "session 1001 alice (user)");
    /* c3 nests in c1 on the session's own thread; c2 overlaps c1 and moved to a lane. */
    ck_assert_int_eq(iget(c3, "tid"), iget(c1, "tid"));
    ck_assert_int_ne(iget(c2, "tid"), iget(c1, "tid"));
    ck_assert_str_eq(meta_name(events, iget(c2, "pid"), iget(c2, "tid")),
                     "session 1001 (overlap 1)");

    /* Instants: thread scope with the record as args; the marker is global. */
    size_t markers = 0;
    json_array_foreach(events, i, e)
    {
        if (strcmp(sget(e, "ph"), "i") != 0) {
            continue;
        }
        json_t *args = json_object_get(e, "args");
        ck_assert(json_is_integer(json_object_get(args, "seq")));
        if (strcmp(sget(e, "s"), "g") == 0) {
            markers++;
            ck_assert_str_eq(sget(e, "name"), "Marker checkpoint");
            ck_assert_int_eq(iget(json_object_get(args, "msg"), "step"), 2);
        } else {
            ck_assert_str_eq(sget(e, "s"), "t");
            ck_assert_int_ne(iget(e, "tid"), 0);
        }
        if (iget(args, "seq") == 11) {
            ck_assert_str_eq(sget(args, "dropped"), "queue_full");
            ck_assert_str_eq(sget(e, "cat"), "tx");
            ck_assert_str_eq(meta_name(events, iget(e, "pid"), iget(e, "tid")), "session 2001");
        }
    }
    ck_assert_uint_eq(markers, 1);
    json_decref(doc);
}

END_TEST

START_TEST(test_chrome_empty_trace)
{
    json_t *doc = chrome_of(NULL, 0, NULL);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "traceEvents")), 0);
    ck_assert(json_is_object(json_object_get(doc, "otherData")));
    json_decref(doc);
    ctl_chrome_free(NULL);
}

END_TEST

/* Names longer than the converter's buffers (a topic of 400 'é', a realm and an authid of 200),
 * cut inside a character, must still make events: the records are any peer's, and one of them
 * used to fail the whole export. The names are cut at a character boundary. */
START_TEST(test_chrome_long_non_ascii_names)
{
    char uri[801], realm[401], authid[401];
    for (size_t i = 0; i < 400; i++) {
        memcpy(uri + 2 * i, "\xc3\xa9", 2);
    }
    uri[800] = '\0';
    memcpy(realm, uri, 400);
    realm[400] = '\0';
    authid[0] = 'x'; /* then 199 'é': the cuts fall at other offsets */
    memcpy(authid + 1, uri, 398);
    authid[399] = '\0';
    json_t *rec[] = {
            json_pack("{s:i, s:f, s:s, s:s, s:s, s:i, s:s, s:s, s:s}", "seq", 0, "ts", 1.5,
                      "direction", "rx", "msg_type", "Publish", "realm", realm, "session_id", 7,
                      "authid", authid, "authrole", "r", "uri", uri),
            json_pack("{s:i, s:f, s:s, s:s, s:s, s:{s:i}, s:s, s:s, s:f}", "seq", 1, "ts", 2.0,
                      "action", "publish", "realm", realm, "uri", uri, "originator", "session_id",
                      7, "correlation", "a1", "msg_type", "Publish", "duration", 0.001),
            json_pack("{s:i, s:f, s:s, s:s}", "seq", 2, "ts", 3.0, "msg_type", "Marker", "uri",
                      uri),
    };
    char *text[3];
    for (size_t i = 0; i < 3; i++) {
        ck_assert_ptr_nonnull(rec[i]);
        text[i] = json_dumps(rec[i], 0);
        json_decref(rec[i]);
    }
    json_t *doc = chrome_of((const char *const *)text, 3, NULL);
    const json_t *events = json_object_get(doc, "traceEvents");
    size_t i, named = 0;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        const char *name = sget(e, "name");
        ck_assert_ptr_nonnull(name);
        named += strncmp(name, "Publish \xc3\xa9", 9) == 0 ||
                 strncmp(name, "publish \xc3\xa9", 9) == 0 ||
                 strncmp(name, "Marker \xc3\xa9", 8) == 0;
    }
    ck_assert_uint_eq(named, 3);
    json_decref(doc);
    for (size_t k = 0; k < 3; k++) {
        free(text[k]);
    }
}

END_TEST

/* Action records (trace_level "action"): one complete slice each on the originator's track,
 * [ts, ts + duration], record in args, no instants; overlapping actions of one session go to
 * an overlap lane so that slices nest. */
START_TEST(test_chrome_action_records)
{
    static const char *const recs[] = {
            "{\"seq\": 0, \"pc\": 1.0, \"ts\": 100.0, \"realm\": \"realm1\", \"action\": \"call\","
            "\"correlation\": \"00000000-0000-4000-8000-000000000001\", \"uri\": \"com.add\","
            "\"originator\": {\"session_id\": 5, \"authid\": \"alice\", \"authrole\": \"user\"},"
            "\"responders\": [{\"session_id\": 6, \"authid\": null, \"authrole\": null}],"
            "\"success\": true, \"duration\": 0.5}",
            "{\"seq\": 1, \"pc\": 1.2, \"ts\": 100.2, \"realm\": \"realm1\", \"action\": "
            "\"publish\","
            "\"correlation\": \"00000000-0000-4000-8000-000000000002\", \"uri\": \"com.t\","
            "\"originator\": {\"session_id\": 5, \"authid\": \"alice\", \"authrole\": \"user\"},"
            "\"responders\": [], \"success\": true, \"duration\": 0.6}",
            "{\"seq\": 2, \"pc\": 1.3, \"ts\": 100.3, \"realm\": \"realm1\", \"action\": \"join\","
            "\"correlation\": \"00000000-0000-4000-8000-000000000003\", \"uri\": null,"
            "\"originator\": {\"session_id\": 7, \"authid\": null, \"authrole\": \"anonymous\"},"
            "\"responders\": [], \"success\": false, \"duration\": 0.0}",
    };
    json_t *doc = chrome_of(recs, sizeof(recs) / sizeof(recs[0]), NULL);
    json_t *events = json_object_get(doc, "traceEvents");
    size_t i, n_x = 0;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        ck_assert_str_ne(sget(e, "ph"), "i");
        ck_assert_str_ne(sget(e, "ph"), "s");
        n_x += strcmp(sget(e, "ph"), "X") == 0;
        if (strcmp(sget(e, "ph"), "X") == 0) {
            ck_assert_str_eq(sget(e, "cat"), "wamp");
        }
    }
    ck_assert_uint_eq(n_x, 3);
    const json_t *call = slice_named(events, "call com.add");
    ck_assert_double_eq_tol(nget(call, "ts"), 100.0e6, 1);
    ck_assert_double_eq_tol(nget(call, "dur"), 0.5e6, 1);
    ck_assert_str_eq(meta_name(events, iget(call, "pid"), -1), "realm realm1");
    ck_assert_str_eq(meta_name(events, iget(call, "pid"), iget(call, "tid")),
                     "session 5 alice (user)");
    json_t *args = json_object_get(call, "args");
    ck_assert_str_eq(sget(args, "action"), "call");
    ck_assert_uint_eq(json_array_size(json_object_get(args, "responders")), 1);
    /* The publish overlaps the call without nesting in it: another lane of session 5. */
    const json_t *pub = slice_named(events, "publish com.t");
    ck_assert_int_ne(iget(pub, "tid"), iget(call, "tid"));
    ck_assert_str_eq(meta_name(events, iget(pub, "pid"), iget(pub, "tid")),
                     "session 5 (overlap 1)");
    const json_t *join = slice_named(events, "join");
    ck_assert_double_eq(nget(join, "dur"), 0.0);
    ck_assert_str_eq(meta_name(events, iget(join, "pid"), iget(join, "tid")),
                     "session 7 (anonymous)");
    ck_assert(json_is_false(json_object_get(json_object_get(join, "args"), "success")));
    json_decref(doc);
}

END_TEST

/* The records of one received message and of what it causes share one clock reading (a PUBLISH,
 * its EVENTs and its PUBLISHED): each still gets a time of its own, in seq order, as close to the
 * reading as a double allows, so every flow joins two distinct times. A clock that went back is
 * not pushed forward. */
START_TEST(test_chrome_shared_reading)
{
    static const char *const recs[] = {
            "{\"seq\":1,\"ts\":1764150000.123456,\"direction\":\"rx\",\"msg_type\":"
            "\"Publish\",\"realm\":\"r\",\"session_id\":1,\"correlation\":\"p\",\"uri\":\"t\"}",
            "{\"seq\":2,\"ts\":1764150000.123456,\"direction\":\"tx\",\"msg_type\":"
            "\"Event\",\"realm\":\"r\",\"session_id\":2,\"correlation\":\"p\",\"uri\":\"t\"}",
            "{\"seq\":3,\"ts\":1764150000.123456,\"direction\":\"tx\",\"msg_type\":"
            "\"Event\",\"realm\":\"r\",\"session_id\":3,\"correlation\":\"p\",\"uri\":\"t\"}",
            "{\"seq\":4,\"ts\":1764150000.123456,\"direction\":\"tx\",\"msg_type\":"
            "\"Published\",\"realm\":\"r\",\"session_id\":1,\"correlation\":\"p\","
            "\"uri\":\"t\"}",
            ("{\"seq\":5,\"ts\":1764149999.5,\"direction\":\"rx\",\"msg_type\":\"Hello\","
             "\"realm\":\"r\",\"session_id\":4,\"correlation\":null,\"uri\":null}"),
    };
    json_t *doc = chrome_of(recs, sizeof(recs) / sizeof(recs[0]), NULL);
    json_t *events = json_object_get(doc, "traceEvents");
    double t[6] = {0};
    size_t i, n_flows = 0;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        if (strcmp(sget(e, "ph"), "i") == 0) {
            t[iget(json_object_get(e, "args"), "seq")] = nget(e, "ts");
        }
    }
    const double reading = 1764150000.123456e6;
    ck_assert(t[1] == reading);
    for (size_t k = 2; k <= 4; k++) {
        ck_assert(t[k] > t[k - 1]);
        ck_assert_double_eq_tol(t[k], reading, 1);
    }
    ck_assert(t[5] == 1764149999.5e6);
    json_array_foreach(events, i, e)
    {
        if (strcmp(sget(e, "ph"), "f") != 0) {
            continue;
        }
        n_flows++;
        size_t j;
        json_t *s;
        json_array_foreach(events, j, s)
        {
            if (strcmp(sget(s, "ph"), "s") == 0 && iget(s, "id") == iget(e, "id")) {
                ck_assert(nget(s, "ts") == t[1]);
                ck_assert(nget(e, "ts") > nget(s, "ts"));
            }
        }
    }
    ck_assert_uint_eq(n_flows, 3);
    json_decref(doc);
}

END_TEST

START_TEST(test_chrome_merged_nodes)
{
    /* A merged cluster-wide page: a CALL on node_b whose INVOCATION and YIELD are on node_a,
     * the RESULT back on node_b (one correlation), in realm1 on both nodes. */
    static const char *const recs[] = {
            "{\"node_id\":\"node_b\",\"seq\":0,\"ts\":100.0,\"direction\":\"rx\",\"msg_type\":"
            "\"Call\",\"realm\":\"realm1\",\"session_id\":7,\"correlation\":\"x\",\"uri\":\"u\"}",
            "{\"node_id\":\"node_a\",\"seq\":0,\"ts\":100.001,\"direction\":\"tx\",\"msg_type\":"
            "\"Invocation\",\"realm\":\"realm1\",\"session_id\":8,\"correlation\":\"x\","
            "\"uri\":\"u\"}",
            "{\"node_id\":\"node_a\",\"seq\":1,\"ts\":100.002,\"direction\":\"rx\",\"msg_type\":"
            "\"Yield\",\"realm\":\"realm1\",\"session_id\":8,\"correlation\":\"x\",\"uri\":\"u\"}",
            ("{\"node_id\":\"node_b\",\"seq\":1,\"ts\":100.003,\"direction\":\"tx\",\"msg_type\":"
             "\"Result\",\"realm\":\"realm1\",\"session_id\":7,\"correlation\":\"x\","
             "\"uri\":\"u\"}"),
    };
    json_t *doc = chrome_of(recs, sizeof(recs) / sizeof(recs[0]), NULL);
    json_t *events = json_object_get(doc, "traceEvents");
    /* One process per node, named after it; each record on its node's process. */
    json_int_t pid_of_node[2] = {0, 0}; /* node_a, node_b */
    size_t i, n_flows = 0, cross = 0;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        if (strcmp(sget(e, "ph"), "i") != 0) {
            continue;
        }
        json_t *a = json_object_get(e, "args");
        int k = strcmp(sget(a, "node_id"), "node_a") == 0 ? 0 : 1;
        ck_assert(pid_of_node[k] == 0 || pid_of_node[k] == iget(e, "pid"));
        pid_of_node[k] = iget(e, "pid");
    }
    ck_assert(pid_of_node[0] != 0 && pid_of_node[1] != 0 && pid_of_node[0] != pid_of_node[1]);
    ck_assert_str_eq(meta_name(events, pid_of_node[0], -1), "node node_a");
    ck_assert_str_eq(meta_name(events, pid_of_node[1], -1), "node node_b");
    /* The action slice on the caller's node; arrows to each follower, two of them to node_a. */
    const json_t *slice = slice_named(events, "Call u");
    ck_assert_int_eq(iget(slice, "pid"), pid_of_node[1]);
    json_array_foreach(events, i, e)
    {
        if (strcmp(sget(e, "ph"), "f") == 0) {
            n_flows++;
            cross += iget(e, "pid") == pid_of_node[0];
        }
    }
    ck_assert_uint_eq(n_flows, 3);
    ck_assert_uint_eq(cross, 2);
    json_decref(doc);
}

END_TEST

static Suite *ctl_export_suite(void)
{
    Suite *s = suite_create("ctl_export");
    TCase *tc = tcase_create("export");
    tcase_add_test(tc, test_jsonl_lines_are_the_records);
    tcase_add_test(tc, test_chrome_structure);
    tcase_add_test(tc, test_chrome_empty_trace);
    tcase_add_test(tc, test_chrome_long_non_ascii_names);
    tcase_add_test(tc, test_chrome_action_records);
    tcase_add_test(tc, test_chrome_shared_reading);
    tcase_add_test(tc, test_chrome_merged_nodes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ctl_export_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
