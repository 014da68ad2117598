/* wamp_sha1.h: SHA-1 (FIPS 180-4), for the WebSocket handshake's Sec-WebSocket-Accept value
 * (RFC 6455 4.2.2) only. Not for anything security related. No state; any thread. */
#ifndef WAMP_SHA1_H
#define WAMP_SHA1_H

#include <stddef.h>

#define WAMP_SHA1_LEN 20

/* Writes the 20-octet digest of len octets at data into out. */
void wamp_sha1(const void *data, size_t len, unsigned char out[WAMP_SHA1_LEN]);

#endif /* WAMP_SHA1_H */
