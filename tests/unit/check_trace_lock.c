/* check_trace_lock.c: the data directory of persisted traces: created with its parents (mode
 * 0700), refused when it cannot be used, and locked so that a second owner is refused with a
 * message naming the directory and the holder's pid; the lock goes with its holder. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "tmp_dir.h"
#include "trace_lock.h"

static char tmpdir[256];

static void setup(void)
{
    tmp_dir_make(tmpdir, sizeof(tmpdir), "check_trace_lock");
}

static void teardown(void)
{
    (void)chmod(tmpdir, 0700);
    tmp_dir_remove(tmpdir);
}

START_TEST(test_creates_parents_0700)
{
    char dir[512], why[256] = "";
    snprintf(dir, sizeof(dir), "%s/a/b//c/data", tmpdir);
    trace_lock *lk = NULL;
    ck_assert_int_eq(trace_lock_acquire(dir, &lk, why, sizeof(why)), WAMP_OK);
    ck_assert_ptr_nonnull(lk);
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0077, 0); /* 0700 (umask may only remove bits) */
    char parent[512];
    snprintf(parent, sizeof(parent), "%s/a/b", tmpdir);
    ck_assert_int_eq(stat(parent, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    /* The pid of the holder is in the lock file. */
    char path[600], buf[32] = "";
    snprintf(path, sizeof(path), "%s/%s", dir, TRACE_LOCK_FILE);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
    fclose(f);
    ck_assert_int_eq(atol(buf), (long)getpid());
    trace_lock_release(lk);
    trace_lock_release(NULL);
}

END_TEST

START_TEST(test_second_owner_refused)
{
    char dir[512], why[512] = "";
    snprintf(dir, sizeof(dir), "%s/data", tmpdir);
    trace_lock *a = NULL, *b = NULL;
    ck_assert_int_eq(trace_lock_acquire(dir, &a, why, sizeof(why)), WAMP_OK);
    ck_assert_int_eq(trace_lock_acquire(dir, &b, why, sizeof(why)), WAMP_EEXIST);
    ck_assert_ptr_null(b);
    ck_assert_msg(strstr(why, dir) && strstr(why, "in use by another router"), "why: %s", why);
    char pid[32];
    snprintf(pid, sizeof(pid), "(pid %ld)", (long)getpid());
    ck_assert_msg(strstr(why, pid) != NULL, "why: %s", why);
    /* Another process is refused too; after release, it gets it. */
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        trace_lock *c = NULL;
        char w[512];
        _exit(trace_lock_acquire(dir, &c, w, sizeof(w)) == WAMP_EEXIST ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    trace_lock_release(a);
    ck_assert_int_eq(trace_lock_acquire(dir, &b, why, sizeof(why)), WAMP_OK);
    trace_lock_release(b);
}

END_TEST

START_TEST(test_lock_goes_with_a_killed_holder)
{
    char dir[512], why[512] = "";
    snprintf(dir, sizeof(dir), "%s/data", tmpdir);
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        trace_lock *c = NULL;
        char w[512];
        if (trace_lock_acquire(dir, &c, w, sizeof(w)) != WAMP_OK) {
            _exit(1);
        }
        (void)write(pipefd[1], "k", 1);
        pause();
        _exit(0);
    }
    char k;
    ck_assert_int_eq(read(pipefd[0], &k, 1), 1);
    trace_lock *b = NULL;
    ck_assert_int_eq(trace_lock_acquire(dir, &b, why, sizeof(why)), WAMP_EEXIST);
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    ck_assert_int_eq(trace_lock_acquire(dir, &b, why, sizeof(why)), WAMP_OK);
    trace_lock_release(b);
    close(pipefd[0]);
    close(pipefd[1]);
}

END_TEST

START_TEST(test_unusable_dir_refused)
{
    char why[512] = "";
    trace_lock *lk = NULL;
    /* A file where a parent should be. */
    char file[512], dir[600];
    snprintf(file, sizeof(file), "%s/plain", tmpdir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(dir, sizeof(dir), "%s/sub/data", file);
    ck_assert_int_eq(trace_lock_acquire(dir, &lk, why, sizeof(why)), WAMP_EDENIED);
    ck_assert_ptr_null(lk);
    ck_assert_msg(strstr(why, "cannot create data_dir") && strstr(why, dir), "why: %s", why);
    if (geteuid() != 0) {
        /* A directory this user cannot write (root could: skipped for root only). */
        char ro[512];
        snprintf(ro, sizeof(ro), "%s/ro", tmpdir);
        ck_assert_int_eq(mkdir(ro, 0500), 0);
        ck_assert_int_eq(trace_lock_acquire(ro, &lk, why, sizeof(why)), WAMP_EDENIED);
        ck_assert_msg(strstr(why, ro) && strstr(why, "not usable"), "why: %s", why);
        (void)chmod(ro, 0700);
    }
}

END_TEST

START_TEST(test_mkdir_p)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/x/y/z/", tmpdir);
    ck_assert_int_eq(trace_mkdir_p(dir, 0700), 0);
    ck_assert_int_eq(trace_mkdir_p(dir, 0700), 0); /* exists: fine */
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_int_eq(trace_mkdir_p("", 0700), -1);
}

END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trace_lock");
    TCase *c = tcase_create("lock");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_add_test(c, test_creates_parents_0700);
    tcase_add_test(c, test_second_owner_refused);
    tcase_add_test(c, test_lock_goes_with_a_killed_holder);
    tcase_add_test(c, test_unusable_dir_refused);
    tcase_add_test(c, test_mkdir_p);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
