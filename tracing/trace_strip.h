/* trace_strip.h: a message without its application payload, for the traces that do not keep it
 * (trace option trace_app_payload false: the flight recorder's default). Such a trace renders a
 * message without Arguments and ArgumentsKw anyway (trace_render.h); a large message is kept as
 * its envelope's bytes alone, so that what the trace holds, and what capturing costs, does not
 * grow with the payload.
 * The stripped bytes are the message's own bytes up to the end of the element before
 * Arguments, in its serializer, with the array's length changed to match: JSON closes the array
 * after that element; MessagePack and CBOR rewrite the array header's count in place (same
 * header width, so a few bytes of it may be a longer form than needed, which every decoder
 * reads). Pure functions, no state. */
#ifndef TRACE_STRIP_H
#define TRACE_STRIP_H

#include <stdbool.h>
#include <stddef.h>

#include "wamp_buf.h"
#include "wamp_types.h"

/* Messages longer than this many bytes are kept without their payload by the traces that keep
 * none; shorter ones whole (rendered without it all the same): below it, reading the envelope
 * to find where the payload starts costs more than copying the payload along. */
#define TRACE_STRIP_MIN 2048

/* Position of Arguments in a message of this WAMP type (PUBLISH, EVENT, CALL, INVOCATION: 4;
 * RESULT, YIELD: 3; ERROR: 5); 0 for a type without a payload. */
size_t trace_payload_index(int msg_type);

/* The message data[0..len) of msg_type in ser without its Arguments and ArgumentsKw, written
 * to out when it fits in cap bytes; returns its length (always below len; a return above cap
 * means nothing was written: call again with that much room). 0 when there is nothing to strip:
 * a type without payload, a message that has none, or bytes that do not read as such a message
 * (the caller keeps the bytes as they are). Reads the envelope's elements only (the payload is
 * neither read nor validated). */
size_t trace_strip_payload(wamp_ser ser, int msg_type, const void *data, size_t len,
                           unsigned char *out, size_t cap);

struct json_t;

/* Secrets (the router's own rule for every record a trace keeps, and for the wire capture's):
 * true when msg is a CHALLENGE or an AUTHENTICATE array (its first element the code 4 or 5). */
bool trace_strip_holds_secret(const struct json_t *msg);
/* Replaces the secret of such an array (a private copy) with "***": the Signature of
 * AUTHENTICATE [5, Signature, Extra], the Extra of CHALLENGE [4, AuthMethod, Extra]; a malformed
 * one (another arity) gets every element after the code replaced. false without memory. */
bool trace_strip_redact(struct json_t *msg);
/* What a record may keep of msg when it holds a secret (trace_strip_holds_secret()): *out, a
 * redacted copy encoded in ser, NULL without memory (then nothing of it may be kept). Returns
 * whether msg holds one; msg itself is not changed. */
bool trace_strip_redacted(wamp_ser ser, const struct json_t *msg, wamp_buf **out);

#endif /* TRACE_STRIP_H */
