/* tmp_dir.h: scratch directories for the suites that write files (persisted traces). */
#ifndef TMP_DIR_H
#define TMP_DIR_H

#include <stddef.h>

/* Makes a new directory /tmp/<prefix>.XXXXXX and puts its path in out (fails the running test
 * if it cannot). */
void tmp_dir_make(char *out, size_t n, const char *prefix);

/* Removes path: a file, or a directory with everything in it (errors ignored). */
void tmp_dir_remove(const char *path);

#endif
