/* bench_memcpy.c: the CPU cost of a plain memcpy per octet, for the sizes given, as the yardstick
 * of run_compare.sh's "cycles per byte" table (what the router's CPU time per message grows by
 * with the payload, against what copying the same octets costs). A tool, not a test.
 *
 * Usage: bench-memcpy [SIZE...]   (default 1024 16384 65536)
 * Each size: one source and one destination buffer of SIZE octets (warm in the caches, as a
 * message just received is), copied over and over for about 0.2 s of process CPU time. Prints
 * one line per size:  MEMCPY size=16384 ns_per_byte=0.0123 copies=123456 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Called through a volatile pointer so that the compiler cannot drop or merge the copies. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

int main(int argc, char **argv)
{
    static const size_t defaults[] = {1024, 16384, 65536};
    size_t nsizes = argc > 1 ? (size_t)(argc - 1) : sizeof(defaults) / sizeof(defaults[0]);
    for (size_t k = 0; k < nsizes; k++) {
        size_t size = argc > 1 ? strtoul(argv[k + 1], NULL, 10) : defaults[k];
        if (size == 0) {
            fprintf(stderr, "bench-memcpy: sizes are positive integers\n");
            return 2;
        }
        unsigned char *src = malloc(size), *dst = malloc(size);
        if (!src || !dst) {
            fprintf(stderr, "bench-memcpy: out of memory\n");
            return 1;
        }
        memset(src, 'x', size);
        memset(dst, 0, size);
        unsigned long copies = 0;
        double t0 = cpu_seconds(), t;
        do {
            for (int i = 0; i < 64; i++) {
                copy_fn(dst, src, size);
                src[copies % size] ^= 1; /* the next copy is not of the same octets */
                copies++;
            }
            t = cpu_seconds() - t0;
        } while (t < 0.2);
        printf("MEMCPY size=%zu ns_per_byte=%.5f copies=%lu\n", size,
               t * 1e9 / ((double)copies * (double)size), copies);
        free(src);
        free(dst);
    }
    return 0;
}
