/* trace_lock.c: data directory creation, permission check and flock (see trace_lock.h). */
#include "trace_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct trace_lock {
    int fd;
};

int trace_mkdir_p(const char *dir, unsigned mode)
{
    size_t n = strlen(dir);
    if (n == 0) {
        errno = ENOENT;
        return -1;
    }
    char *path = strdup(dir);
    if (!path) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    /* Each prefix that ends before a '/' (skipping the root and repeated slashes), then the
     * whole path. */
    for (size_t i = 1; i <= n && rc == 0; i++) {
        if (i < n && path[i] != '/') {
            continue;
        }
        if (i < n && path[i - 1] == '/') {
            continue;
        }
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, (mode_t)mode) != 0) {
            struct stat st;
            if (errno != EEXIST) {
                rc = -1;
            } else if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
                errno = EEXIST;
                rc = -1;
            }
        }
        path[i] = saved;
    }
    int e = errno;
    free(path);
    errno = e;
    return rc;
}

/* The pid a holder wrote into the lock file, 0 if none can be read. */
static long holder_pid(int fd)
{
    char buf[32];
    ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);
    if (r <= 0) {
        return 0;
    }
    buf[r] = '\0';
    char *end;
    long pid = strtol(buf, &end, 10);
    return end != buf && pid > 0 ? pid : 0;
}

wamp_err trace_lock_acquire(const char *data_dir, trace_lock **out, char *why, size_t why_len)
{
    *out = NULL;
    char *path = NULL;
    int fd = -1;
    wamp_err err = WAMP_EDENIED;
    if (trace_mkdir_p(data_dir, 0700) != 0) {
        snprintf(why, why_len, "cannot create data_dir %s: %s", data_dir, strerror(errno));
        return WAMP_EDENIED;
    }
    if (access(data_dir, R_OK | W_OK | X_OK) != 0) {
        snprintf(why, why_len, "data_dir %s is not usable (read, write and search needed): %s",
                 data_dir, strerror(errno));
        return WAMP_EDENIED;
    }
    size_t n = strlen(data_dir) + sizeof("/" TRACE_LOCK_FILE);
    path = malloc(n);
    if (!path) {
        return WAMP_ENOMEM;
    }
    snprintf(path, n, "%s/%s", data_dir, TRACE_LOCK_FILE);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, why_len, "cannot open the lock file %s: %s", path, strerror(errno));
        goto fail;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            long pid = holder_pid(fd);
            char who[48] = "";
            if (pid) {
                snprintf(who, sizeof(who), " (pid %ld)", pid);
            }
            snprintf(why, why_len,
                     "data_dir %s is in use by another router%s: it holds the lock %s; give "
                     "each router its own tracing.data_dir",
                     data_dir, who, path);
            err = WAMP_EEXIST;
        } else {
            snprintf(why, why_len, "cannot lock %s: %s", path, strerror(errno));
        }
        goto fail;
    }
    /* Who holds it, for the message of the next one (best effort: the lock is the flock). */
    char pid[32];
    int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        /* The lock holds without it. */
    }
    trace_lock *lk = malloc(sizeof(*lk));
    if (!lk) {
        err = WAMP_ENOMEM;
        goto fail;
    }
    lk->fd = fd;
    free(path);
    *out = lk;
    return WAMP_OK;

fail:
    if (fd >= 0) {
        close(fd);
    }
    free(path);
    return err;
}

void trace_lock_release(trace_lock *lk)
{
    if (!lk) {
        return;
    }
    (void)flock(lk->fd, LOCK_UN);
    close(lk->fd);
    free(lk);
}
