/* tmp_dir.c: see tmp_dir.h. */
#include "tmp_dir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

void tmp_dir_make(char *out, size_t n, const char *prefix)
{
    snprintf(out, n, "/tmp/%s.XXXXXX", prefix);
    ck_assert_ptr_nonnull(mkdtemp(out));
}

void tmp_dir_remove(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        char sub[1024];
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        tmp_dir_remove(sub);
    }
    closedir(d);
    rmdir(path);
}
