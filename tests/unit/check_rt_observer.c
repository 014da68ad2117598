/* check_rt_observer.c: the observer list (rt_observer.h): registration order, members left NULL,
 * the deferred action_replied, detach at fini; and what a realm's broker, dealer and sessions
 * report to it in a running router. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "fake_transport.h"
#include "rt_core_int.h"
#include "rt_observer.h"
#include "rt_realm.h"
#include "rt_router.h"
#include "test_router.h"

/* What the recording observers saw, one line per call: "<name>:<event>[:<detail>]". */
static char LOG[4096];

static void note(const char *name, const char *event, const char *detail)
{
    size_t n = strlen(LOG);
    snprintf(LOG + n, sizeof(LOG) - n, "%s:%s%s%s;", name, event, detail ? ":" : "",
             detail ? detail : "");
}

static void rec_joined(void *ctx, rt_realm *r, rt_session *s)
{
    (void)r;
    (void)s;
    note(ctx, "joined", NULL);
}

static void rec_left(void *ctx, rt_realm *r, rt_session *s)
{
    (void)r;
    (void)s;
    note(ctx, "left", NULL);
}

static void rec_sub_added(void *ctx, rt_realm *r, rt_session *s, const rt_subscription *sub,
                          bool created)
{
    (void)r;
    (void)s;
    note(ctx, "sub+", created ? "new" : "old");
    (void)sub;
}

static void rec_sub_removed(void *ctx, rt_realm *r, rt_session *s, const rt_subscription *sub,
                            bool deleted)
{
    (void)r;
    (void)s;
    (void)sub;
    note(ctx, "sub-", deleted ? "gone" : "kept");
}

static void rec_reg_added(void *ctx, rt_realm *r, rt_session *s, uint64_t reg_id, bool created)
{
    (void)r;
    (void)s;
    (void)reg_id;
    note(ctx, "reg+", created ? "new" : "old");
}

static void rec_reg_removed(void *ctx, rt_realm *r, rt_session *s, uint64_t reg_id, const char *uri,
                            bool deleted)
{
    (void)r;
    (void)s;
    (void)reg_id;
    char d[128];
    snprintf(d, sizeof(d), "%s:%s", uri, deleted ? "gone" : "kept");
    note(ctx, "reg-", d);
}

static void rec_replied(void *ctx, rt_router *rt)
{
    (void)rt;
    note(ctx, "replied", NULL);
}

static void rec_detach(void *ctx)
{
    note(ctx, "detach", NULL);
}

static rt_observer full_observer(const char *name)
{
    return (rt_observer){.ctx = (void *)name,
                         .session_joined = rec_joined,
                         .session_left = rec_left,
                         .subscription_added = rec_sub_added,
                         .subscription_removed = rec_sub_removed,
                         .registration_added = rec_reg_added,
                         .registration_removed = rec_reg_removed,
                         .action_replied = rec_replied,
                         .detach = rec_detach};
}

START_TEST(test_order_and_null_members)
{
    LOG[0] = '\0';
    rt_observers l = {0};
    rt_observer a = full_observer("a");
    rt_observer b = {.ctx = (void *)"b", .subscription_added = rec_sub_added};
    rt_observer c = {.ctx = (void *)"c", .session_joined = rec_joined};
    ck_assert_int_eq(rt_observers_add(&l, &a), WAMP_OK);
    ck_assert_int_eq(rt_observers_add(&l, &b), WAMP_OK);
    ck_assert_int_eq(rt_observers_add(&l, &c), WAMP_OK);
    ck_assert_uint_eq(l.n, 3);
    /* The list keeps copies: changing the caller's struct changes nothing. */
    c.session_joined = NULL;
    rt_observers_session_joined(&l, NULL, NULL);
    rt_observers_subscription_added(&l, NULL, NULL, NULL, true);
    rt_observers_session_left(&l, NULL, NULL);
    rt_observers_registration_removed(&l, NULL, NULL, 7, "p", false);
    ck_assert_str_eq(LOG, "a:joined;c:joined;a:sub+:new;b:sub+:new;a:left;a:reg-:p:kept;");
    LOG[0] = '\0';
    rt_observers_fini(&l);
    ck_assert_str_eq(LOG, "a:detach;"); /* b and c have no detach */
    ck_assert_uint_eq(l.n, 0);
    ck_assert_ptr_null(l.v);
    rt_observers_session_joined(&l, NULL, NULL); /* empty after fini: nothing called */
    ck_assert_str_eq(LOG, "a:detach;");
}

END_TEST

START_TEST(test_replied_only_when_deferred)
{
    LOG[0] = '\0';
    rt_observers l = {0};
    rt_observer a = full_observer("a");
    rt_observer b = full_observer("b");
    ck_assert_int_eq(rt_observers_add(&l, &a), WAMP_OK);
    ck_assert_int_eq(rt_observers_add(&l, &b), WAMP_OK);
    rt_observers_replied(&l, NULL);
    ck_assert_str_eq(LOG, "");
    rt_observers_defer(&l);
    rt_observers_defer(&l); /* twice: still once */
    rt_observers_replied(&l, NULL);
    ck_assert_str_eq(LOG, "a:replied;b:replied;");
    ck_assert(!l.deferred);
    rt_observers_replied(&l, NULL);
    ck_assert_str_eq(LOG, "a:replied;b:replied;");
    LOG[0] = '\0';
    rt_observers_fini(&l);
    ck_assert_str_eq(LOG, "a:detach;b:detach;");
}

END_TEST

/* An action observer for the list tests: records the reports, keeps a mark with a counted
 * reference. */
static int MARK_REFS;

static void act_last(void *ctx, rt_router *rt)
{
    (void)rt;
    note(ctx, "last", NULL);
}

static void act_mark(void *ctx, rt_router *rt, rt_action_mark *out)
{
    (void)rt;
    note(ctx, "mark", NULL);
    memset(out->id, 7, sizeof(out->id));
    out->ref = &MARK_REFS;
    MARK_REFS++;
}

static void act_forget(void *ctx, rt_action_mark *m)
{
    ck_assert_ptr_eq(m->ref, &MARK_REFS);
    note(ctx, "forget", NULL);
    MARK_REFS--;
}

static void act_resume(void *ctx, rt_router *rt, const rt_action_mark *m)
{
    (void)rt;
    note(ctx, "resume", m->id[0] == 7 ? "7" : "?");
}

static void act_end(void *ctx, rt_router *rt)
{
    (void)rt;
    note(ctx, "end", NULL);
}

static void *act_stash(void *ctx, rt_router *rt)
{
    (void)rt;
    note(ctx, "stash", NULL);
    return ctx;
}

static void act_restore(void *ctx, rt_router *rt, void *saved)
{
    (void)rt;
    note(ctx, "restore", saved == ctx ? "same" : "other");
}

static rt_observer action_observer(const char *name, const unsigned *listening)
{
    return (rt_observer){.ctx = (void *)name,
                         .listening = listening,
                         .action_last = act_last,
                         .action_mark = act_mark,
                         .action_forget = act_forget,
                         .action_resume = act_resume,
                         .action_end = act_end,
                         .action_stash = act_stash,
                         .action_restore = act_restore};
}

/* The action reports reach the one action observer only while it listens (last, mark,
 * resume); ending, stashing, restoring and forgetting reach it always (what it opened or took
 * while it listened is closed or released after it stopped); a second action observer is
 * refused; a mark's reference is released once. */
START_TEST(test_action_reports_only_while_listening)
{
    LOG[0] = '\0';
    MARK_REFS = 0;
    unsigned listening = 0;
    rt_observers l = {0};
    ck_assert(!rt_observers_listening(&l));
    rt_observers_action_last(&l, NULL); /* no action observer: nothing happens */
    ck_assert_ptr_null(rt_observers_action_stash(&l, NULL));
    rt_observer plain = full_observer("p");
    rt_observer act = action_observer("a", &listening);
    ck_assert_int_eq(rt_observers_add(&l, &plain), WAMP_OK);
    ck_assert_int_eq(rt_observers_add(&l, &act), WAMP_OK);
    rt_observer other = action_observer("b", &listening);
    ck_assert_int_eq(rt_observers_add(&l, &other), WAMP_EEXIST);

    rt_action_mark m = {0};
    rt_observers_action_last(&l, NULL);
    rt_observers_action_mark(&l, NULL, &m);
    ck_assert(!rt_action_mark_is_set(&m));
    ck_assert(!rt_observers_action_resume(&l, NULL, &m));
    ck_assert_str_eq(LOG, "");

    listening = 1; /* a trace runs */
    ck_assert(rt_observers_listening(&l));
    rt_observers_action_last(&l, NULL);
    rt_observers_action_mark(&l, NULL, &m);
    ck_assert(rt_action_mark_is_set(&m));
    ck_assert_int_eq(MARK_REFS, 1);
    ck_assert(rt_observers_action_resume(&l, NULL, &m));
    rt_observers_action_end(&l, NULL);
    ck_assert_str_eq(LOG, "a:last;a:mark;a:resume:7;a:end;");
    LOG[0] = '\0';

    listening = 0; /* the trace stopped */
    ck_assert(!rt_observers_action_resume(&l, NULL, &m));
    void *saved = rt_observers_action_stash(&l, NULL);
    rt_observers_action_end(&l, NULL);
    rt_observers_action_restore(&l, NULL, saved);
    ck_assert_str_eq(LOG, "a:stash;a:end;a:restore:same;");

    LOG[0] = '\0';
    rt_action_mark moved = m; /* moving a mark moves its reference */
    m = (rt_action_mark){0};
    rt_observers_action_forget(&l, &m);
    ck_assert_int_eq(MARK_REFS, 1);
    rt_observers_action_forget(&l, &moved);
    rt_observers_action_forget(&l, &moved);
    ck_assert_int_eq(MARK_REFS, 0);
    ck_assert_ptr_null(moved.ref);
    ck_assert_str_eq(LOG, "a:forget;");

    LOG[0] = '\0';
    rt_observers_fini(&l);
    ck_assert_str_eq(LOG, "p:detach;");
    ck_assert(!rt_observers_listening(&l));
}

END_TEST

/* A realm's reports in a running router, after the meta API's observer. */
START_TEST(test_router_reports_to_realm_observers)
{
    test_router t;
    test_router_init(&t);
    rt_realm *r = rt_router_find_realm(t.rt, "realm1");
    ck_assert_ptr_nonnull(r);
    rt_observer o = full_observer("o");
    o.action_replied = NULL; /* router-wide only */
    o.detach = NULL;
    ck_assert_int_eq(rt_observers_add(rt_realm_observers(r), &o), WAMP_OK);
    LOG[0] = '\0';

    fake_conn *c1 = fake_conn_new_joined(t.rt, WAMP_SER_JSON, "realm1");
    fake_conn *c2 = fake_conn_new_joined(t.rt, WAMP_SER_JSON, "realm1");
    fake_conn *other = fake_conn_new_joined(t.rt, WAMP_SER_JSON, "realm2");
    ck_assert_str_eq(LOG, "o:joined;o:joined;"); /* realm2's join is not realm1's */
    LOG[0] = '\0';

    fake_conn_send(c1, "[32, 1, {}, \"com.example.topic\"]");
    fake_conn_send(c2, "[32, 2, {}, \"com.example.topic\"]");
    fake_conn_send(c1, "[64, 3, {}, \"com.example.proc\"]");
    fake_conn_send(other, "[32, 4, {}, \"com.example.topic\"]");
    ck_assert_str_eq(LOG, "o:sub+:new;o:sub+:old;o:reg+:new;");
    LOG[0] = '\0';

    /* c1 leaves without GOODBYE: its subscription (kept: c2 is still on it), its registration
     * (gone: the last callee), then the session. */
    fake_conn_disconnect(c1);
    ck_assert_str_eq(LOG, "o:sub-:kept;o:reg-:com.example.proc:gone;o:left;");
    LOG[0] = '\0';
    fake_conn_send(c2, "[34, 5, 1]"); /* no such subscription: ERROR, nothing reported */
    ck_assert_str_eq(LOG, "");

    fake_conn_free(c1);
    fake_conn_free(c2);
    fake_conn_free(other);
    test_router_fini(&t);
}

END_TEST

/* The routing reports: one observer of a list takes them; the dealer reports which INVOCATION a
 * CALL became before sending it, the broker the publication id of a PUBLISH. */
static uint64_t routed[4], pub[3];

static void on_routed(void *ctx, rt_session *caller, uint64_t call_id, rt_session *callee,
                      uint64_t inv_id)
{
    (void)ctx;
    routed[0] = rt_session_id(caller);
    routed[1] = call_id;
    routed[2] = rt_session_id(callee);
    routed[3] = inv_id;
}

static void on_published(void *ctx, rt_session *publisher, uint64_t request_id,
                         uint64_t publication_id)
{
    (void)ctx;
    pub[0] = rt_session_id(publisher);
    pub[1] = request_id;
    pub[2] = publication_id;
}

START_TEST(test_routing_reports)
{
    test_router t;
    test_router_init(&t);
    rt_observers *l = &t.rt->observers;
    rt_observer o = {.call_routed = on_routed, .published = on_published};
    ck_assert_int_eq(rt_observers_add(l, &o), WAMP_OK);
    rt_observer again = {.published = on_published};
    ck_assert_int_eq(rt_observers_add(l, &again), WAMP_EEXIST); /* one takes them */
    fake_conn *callee = fake_conn_new(t.rt, WAMP_SER_JSON);
    fake_conn *caller = fake_conn_new(t.rt, WAMP_SER_JSON);
    uint64_t callee_id = fake_conn_join(callee, "realm1");
    uint64_t caller_id = fake_conn_join(caller, "realm1");
    fake_conn_send(callee, "[64, 1, {}, \"com.example.proc\"]");
    json_decref(fake_conn_next(callee)); /* REGISTERED */
    fake_conn_send(caller, "[48, 77, {}, \"com.example.proc\", [1]]");
    json_t *inv = fake_conn_next(callee);
    ck_assert_int_eq(json_integer_value(json_array_get(inv, 0)), 68);
    ck_assert_uint_eq(routed[0], caller_id);
    ck_assert_uint_eq(routed[1], 77);
    ck_assert_uint_eq(routed[2], callee_id);
    ck_assert_uint_eq(routed[3], (uint64_t)json_integer_value(json_array_get(inv, 1)));
    json_decref(inv);
    fake_conn_send(caller, "[16, 9, {\"acknowledge\": true}, \"com.example.topic\"]");
    json_t *ack = fake_conn_next(caller);
    ck_assert_int_eq(json_integer_value(json_array_get(ack, 0)), 17);
    ck_assert_uint_eq(pub[0], caller_id);
    ck_assert_uint_eq(pub[1], 9);
    ck_assert_uint_eq(pub[2], (uint64_t)json_integer_value(json_array_get(ack, 2)));
    json_decref(ack);
    fake_conn_free(callee);
    fake_conn_free(caller);
    test_router_fini(&t);
}

END_TEST

static Suite *rt_observer_suite(void)
{
    Suite *s = suite_create("rt_observer");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_order_and_null_members);
    tcase_add_test(tc, test_action_reports_only_while_listening);
    tcase_add_test(tc, test_replied_only_when_deferred);
    tcase_add_test(tc, test_router_reports_to_realm_observers);
    tcase_add_test(tc, test_routing_reports);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rt_observer_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
