/* trace_lock.h: the data directory of persisted traces, prepared and locked at start-up.
 *
 * One router owns a data directory at a time: trace_lock_acquire() creates the directory with
 * its missing parents (mode 0700 for each one it creates, like `mkdir -p -m 0700`), checks that
 * it can be read, written and searched, and takes an exclusive flock(2) on <data_dir>/.lock,
 * into which it writes its pid. A second router on the same directory fails there with a
 * message naming the directory and the holder's pid, before it reloads (and could mark as
 * crashed, or delete) the first one's traces. The lock is the kernel's: it goes with the
 * process (kill -9 included), so a stale .lock file never blocks a restart.
 * flock(2) locks belong to an open file description, so two acquisitions in one process
 * conflict as well (tests rely on it). Not for NFS before Linux 2.6.12.
 * Ownership: the caller owns the trace_lock; trace_lock_release() unlocks and frees it. */
#ifndef TRACE_LOCK_H
#define TRACE_LOCK_H

#include <stddef.h>

#include "wamp_err.h"

/* The lock file's name in the data directory (a dot name: never taken for a trace). */
#define TRACE_LOCK_FILE ".lock"

typedef struct trace_lock trace_lock;

/* Creates data_dir (and its parents) if missing, checks its permissions and locks it.
 * WAMP_OK with *out set; WAMP_EEXIST if another process (or another trace_lock) holds it;
 * WAMP_EDENIED if the directory cannot be created, used or locked; WAMP_ENOMEM. On failure
 * *out is NULL and why holds one line naming the directory ("data_dir <dir> is in use by
 * another router (pid 1234)", "cannot create data_dir <dir>: Permission denied", ...). */
wamp_err trace_lock_acquire(const char *data_dir, trace_lock **out, char *why, size_t why_len);

/* Unlocks (the .lock file stays) and frees; NULL-safe. */
void trace_lock_release(trace_lock *lk);

/* mkdir -p: creates dir and every missing parent with mode (umask applies). 0, or -1 with
 * errno (EEXIST if a component is not a directory). */
int trace_mkdir_p(const char *dir, unsigned mode);

#endif /* TRACE_LOCK_H */
