/* bench_sha1.h: SHA-1 (FIPS 180-4), used only to check the WebSocket handshake's
 * Sec-WebSocket-Accept value (RFC 6455 section 4.2.2). Not for anything security related.
 * No state; any thread. */
#ifndef BENCH_SHA1_H
#define BENCH_SHA1_H

#include <stddef.h>

#define BENCH_SHA1_LEN 20

/* Writes the 20-byte digest of len bytes at data into out. */
void bench_sha1(const void *data, size_t len, unsigned char out[BENCH_SHA1_LEN]);

#endif /* BENCH_SHA1_H */
