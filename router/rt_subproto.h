/* rt_subproto.h: WebSocket subprotocol negotiation for WAMP, without sockets or lws.
 *
 * A client offers subprotocols in Sec-WebSocket-Protocol (RFC 6455 4.1 and 11.3.4): a
 * comma-separated list of tokens with optional whitespace around each, possibly spread over
 * several header lines (which HTTP joins with commas, RFC 7230 3.2.2). The router answers with
 * exactly one of them. It does not take the client's first choice: it takes the first entry of
 * its own order of preference (the table in rt_subproto.c: "wamp.2.msgpack", then
 * "wamp.2.json") that the listener enables and the client offered. Names are compared exactly
 * (case-sensitive, as libwebsockets and autobahn compare them); anything else offered, such as
 * "wamp.2.cbor", "wamp.2.json.batched", "wamp.2.ubjson" or "wamp.2.flatbuffers", is skipped.
 * Offers have no length limit here.
 * Pure functions over borrowed input; nothing is allocated. */
#ifndef RT_SUBPROTO_H
#define RT_SUBPROTO_H

#include <stdbool.h>
#include <stddef.h>

#include "wamp_types.h"

/* A set of serializers, as bits: RT_SUBPROTO_BIT(WAMP_SER_JSON) | ... */
#define RT_SUBPROTO_BIT(ser) (1u << (unsigned)(ser))

/* The next element of the offer text[0..len) from *pos on (start with *pos = 0): sets *tok and
 * *tok_len to it, without the whitespace (SP, HTAB) around it, advances *pos past it and its
 * comma and returns true; returns false at the end. Empty elements (",,", a trailing comma,
 * whitespace only) are skipped, as RFC 7230 7 asks of a recipient. text may hold any bytes. */
bool rt_subproto_next(const char *text, size_t len, size_t *pos, const char **tok, size_t *tok_len);

/* The subprotocol name of ser ("wamp.2.json"), or NULL if the router does not offer ser over
 * WebSocket. Static string. */
const char *rt_subproto_name(wamp_ser ser);

/* Chooses the subprotocol for the offer text[0..len) (NULL or empty: no header) among the
 * serializers in enabled (RT_SUBPROTO_BIT()s): true and *out = the first of the router's order
 * that is both enabled and offered; false (*out unchanged) when there is none. */
bool rt_subproto_choose(const char *text, size_t len, unsigned enabled, wamp_ser *out);

/* Writes the names of the serializers in enabled, in the router's order, as
 * "wamp.2.msgpack, wamp.2.json", into buf. Returns false if buf is too small (buf then holds
 * a cut, NUL-terminated prefix; nothing when len is 0). */
bool rt_subproto_list(unsigned enabled, char *buf, size_t len);

#endif /* RT_SUBPROTO_H */
