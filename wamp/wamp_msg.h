/* wamp_msg.h: a typed, validated view of one WAMP message.
 * The envelope (type code, ids, URI, Details/Options dict) is a jansson array (the same value
 * model for every serializer; binary values are strings "\0" + base64, the WAMP JSON
 * convention); wamp_msg owns one reference on it. A message parsed from bytes
 * (wamp_msg_parse_bytes()) keeps its payload, Arguments and ArgumentsKw, as the sender's bytes:
 * slices of the input, validated (wamp_rd.h) but not converted, so that every integer in
 * [-2^63, 2^64 - 1], every string (NUL bytes included) and every binary reaches the receivers as
 * it was sent. Those slices are borrowed from the input and valid only as long as it is; what
 * must outlive it copies them. wamp_msg_decode_payload() builds jansson values of the payload
 * for the few consumers that look inside (the router's own procedures). Every other pointer is
 * borrowed from the envelope and valid until wamp_msg_fini().
 * A message parsed into fields (wamp_msg_parse_bytes_fields(), the router's receive path) has no
 * list: root is NULL, the ids and code are in their fields, the URI is copied into uri_buf and
 * dict is m's own reference, until wamp_msg_make_root() makes the list for a consumer that reads
 * one (a trace). Service thread only. */
#ifndef WAMP_MSG_H
#define WAMP_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "wamp_err.h"
#include "wamp_types.h"

/* Field mapping (spec message formats; "dict" is Details, Options or Extra):
 *   HELLO        [1, Realm|uri, Details|dict]                  uri=realm, dict
 *   WELCOME      [2, Session|id, Details|dict]                 id, dict
 *   ABORT        [3, Details|dict, Reason|uri]                 dict, uri
 *   CHALLENGE    [4, AuthMethod|string, Extra|dict]            uri=authmethod, dict
 *   AUTHENTICATE [5, Signature|string, Extra|dict]             uri=signature, dict
 *   GOODBYE      [6, Details|dict, Reason|uri]                 dict, uri
 *   ERROR        [8, REQUEST.Type|int, REQUEST.Request|id, Details|dict, Error|uri, Args?, Kw?]
 *                                                              req_type, id, dict, uri, args,
 * kwargs PUBLISH      [16, Request|id, Options|dict, Topic|uri, Args?, Kw?]  id, dict, uri, args,
 * kwargs PUBLISHED    [17, PUBLISH.Request|id, Publication|id]      id, id2 SUBSCRIBE    [32,
 * Request|id, Options|dict, Topic|uri]     id, dict, uri SUBSCRIBED   [33, SUBSCRIBE.Request|id,
 * Subscription|id]   id, id2 UNSUBSCRIBE  [34, Request|id, SUBSCRIBED.Subscription|id]  id, id2
 *   UNSUBSCRIBED [35, UNSUBSCRIBE.Request|id, Details|dict?]   id, dict (NULL if absent)
 *   EVENT        [36, Subscription|id, Publication|id, Details|dict, Args?, Kw?]
 *                                                              id=subscription, id2=publication
 *   CALL         [48, Request|id, Options|dict, Procedure|uri, Args?, Kw?]
 *   CANCEL       [49, CALL.Request|id, Options|dict]           id, dict
 *   RESULT       [50, CALL.Request|id, Details|dict, Args?, Kw?]
 *   REGISTER     [64, Request|id, Options|dict, Procedure|uri]
 *   REGISTERED   [65, REGISTER.Request|id, Registration|id]    id, id2
 *   UNREGISTER   [66, Request|id, REGISTERED.Registration|id]  id, id2
 *   UNREGISTERED [67, UNREGISTER.Request|id, Details|dict?]    id, dict (NULL if absent)
 *   INVOCATION   [68, Request|id, Registration|id, Details|dict, Args?, Kw?]
 *                                                              id=request, id2=registration
 *   INTERRUPT    [69, INVOCATION.Request|id, Options|dict]     id, dict
 *   YIELD        [70, INVOCATION.Request|id, Options|dict, Args?, Kw?]
 * Absent fields are 0 / NULL. ArgumentsKw may only follow Arguments (possibly empty). */
/* Bytes of one encoded value, borrowed. len 0 = absent. */
typedef struct wamp_slice {
    const unsigned char *p;
    size_t len;
} wamp_slice;

/* URIs up to this many bytes (the NUL included) are kept in a message parsed into fields. */
#define WAMP_MSG_URI_INLINE 128

/* The most values an envelope (the elements but Arguments and ArgumentsKw, and what its
 * Details/Options hold) may hold, and so may each payload wamp_msg_decode_payload() builds
 * (wamp_rd_limit_values(): an array, map or scalar counts one, a map key none). Beyond, the
 * message is malformed (WAMP_EPROTO, "more than 131072 values"): built as jansson values, a
 * message of empty lists would cost some 45 times its size (742 MiB for 16 MiB) and seconds of
 * the service loop, whoever sent it. A PUBLISH's "eligible" list of 100,000 session ids fits. */
#define WAMP_MSG_VALUES_MAX 131072

typedef struct wamp_msg {
    json_t *root; /* owned: the message array (parsed from bytes: without the payload); NULL
                   * when parsed into fields (until wamp_msg_make_root()) */
    wamp_msg_type type;
    wamp_msg_type req_type; /* ERROR only: type of the request it answers */
    uint64_t id;
    uint64_t id2;
    const char *uri; /* NUL-terminated; URIs are checked for NUL bytes by wamp_msg_parse */
    size_t uri_len;  /* strlen(uri) */
    json_t *dict;    /* borrowed from root; without root, m's own reference */
    /* Parsed from a jansson tree: borrowed from root. Parsed from bytes: NULL until
     * wamp_msg_decode_payload(), then owned by m. */
    json_t *args;
    json_t *kwargs;
    wamp_ser ser;          /* parsed from bytes: the serializer of args_raw/kwargs_raw; else 0 */
    wamp_slice args_raw;   /* parsed from bytes: Arguments as received (borrowed) */
    wamp_slice kwargs_raw; /* parsed from bytes: ArgumentsKw as received (borrowed) */
    bool payload_owned;    /* args/kwargs were built by wamp_msg_decode_payload() */
    char uri_buf[WAMP_MSG_URI_INLINE]; /* parsed into fields: the URI (last: not cleared) */
} wamp_msg;

/* Diagnostic text for a rejected message, for the log and for ABORT/ERROR args. */
#define WAMP_WHY_LEN 160

/* Validates the structure of root and fills *out. Consumes root (success and failure): on
 * success out->root owns it, on failure it is released and *out is zeroed.
 * Checks: root is an array whose first element is a known message code; exact arity per type;
 * each field's type (ids integers in [1, 2^53], Request.Type a known code, dicts are objects,
 * Arguments an array, ArgumentsKw an object, URI and string fields strings without NUL bytes).
 * URI *syntax* is NOT checked here: the router answers a bad topic/procedure with ERROR
 * wamp.error.invalid_uri (see wamp_uri.h), which is not a protocol violation.
 * WAMP_EPROTO with a reason in why (if why != NULL) when the message is malformed. */
wamp_err wamp_msg_parse(json_t *root, wamp_msg *out, char *why, size_t why_len);

/* One whole message of len bytes in ser: the envelope is decoded into out->root and checked as
 * wamp_msg_parse() checks it (an empty Details/Options is the shared wamp_rd_empty_map(): a
 * received message's dict is read, never modified); Arguments and ArgumentsKw are validated by
 * the token reader (wamp_rd.h) and kept as slices of data (out->args_raw, out->kwargs_raw,
 * out->ser), valid as long as data is. WAMP_EPROTO with a reason in why for malformed input
 * (whatever wamp_rd refuses, anywhere in the message; a duplicate key or an integer above INT64_MAX
 * in the envelope, or more than WAMP_MSG_VALUES_MAX values in it; Arguments not a list,
 * ArgumentsKw not a dict; the wamp_msg_parse() rules);
 * WAMP_ENOMEM. *out is zeroed after failure. */
wamp_err wamp_msg_parse_bytes(wamp_ser ser, const void *data, size_t len, wamp_msg *out, char *why,
                              size_t why_len);

/* wamp_msg_parse_bytes() without the envelope's list, for the receive path: a message whose
 * every element is what its type requires and whose URI is shorter than WAMP_MSG_URI_INLINE is
 * read into out's fields (out->root NULL; see above), with no jansson value made but a non-empty
 * dict; anything else goes through wamp_msg_parse_bytes() (same checks, same errors; out->root
 * is then set). out may not be copied (uri may point into it). */
wamp_err wamp_msg_parse_bytes_fields(wamp_ser ser, const void *data, size_t len, wamp_msg *out,
                                     char *why, size_t why_len);
/* A new reference to the jansson integer of the known message code type, one per code, shared
 * by the lists wamp_msg_make_root() makes (and the router's other envelope lists) as
 * wamp_rd_empty_map() is: never modified, made on first use (service thread), kept for the
 * process's life. NULL for an unknown code or on allocation failure. */
json_t *wamp_msg_code_value(int type);
/* Makes m->root, the envelope's list, from the fields of a message parsed into fields (it takes
 * m's reference on the dict, which stays valid through the list); a no-op when m has a root.
 * WAMP_ENOMEM (m->root stays NULL; m->dict may be NULL then). */
wamp_err wamp_msg_make_root(wamp_msg *m);

/* Builds m->args / m->kwargs (owned by m, released by wamp_msg_fini()) from the payload slices
 * of a message parsed from bytes, for a consumer that needs the values; a no-op (WAMP_OK) when
 * they exist already or the message has no payload. WAMP_ERANGE when a value cannot be
 * represented (an integer above INT64_MAX: why names it and says where), WAMP_EPROTO for a
 * duplicate map key or a payload of more than WAMP_MSG_VALUES_MAX values, WAMP_ENOMEM.
 * m->args/kwargs stay NULL after failure. */
wamp_err wamp_msg_decode_payload(wamp_msg *m, char *why, size_t why_len);

/* Payload passthru mode (WAMP Advanced Profile "Payload Passthru Mode"): the ppt_* keys of an
 * Options/Details dict (CALL, INVOCATION, YIELD, RESULT, ERROR, PUBLISH, EVENT). Sets *present
 * when dict has any key starting with "ppt_". Returns NULL when they are acceptable (none, or
 * ppt_scheme a non-empty string and ppt_serializer, ppt_cipher, ppt_keyid strings when present;
 * schemes are the application's: "mqtt", "wamp.eth" and custom "x_..." ones alike), else what
 * is wrong (an unknown ppt_* key included), for an ERROR wamp.error.invalid_argument. */
const char *wamp_msg_ppt_check(const json_t *dict, bool *present);
/* Copies every ppt_* key of src (NULL-safe) into the dict dst. 0, or -1 on allocation failure
 * (dst then holds part of them). */
int wamp_msg_ppt_copy(json_t *dst, const json_t *src);

/* Releases the reference on m->root (and decoded payload values) (NULL-safe) and zeroes *m. */
void wamp_msg_fini(wamp_msg *m);

/* "HELLO", "PUBLISH", ... for a known type; "UNKNOWN" otherwise. Static string. */
const char *wamp_msg_type_name(int type);
/* Trace/record style name: "Hello", "Publish", ..., "Unknown". Static string. */
const char *wamp_msg_type_title(int type);
/* true if type is a known WAMP message code. */
bool wamp_msg_type_is_known(int type);

/* Builders. Each returns a new message array (one reference, owned by the caller), or NULL on
 * allocation failure. `_take` arguments (dict/args/kwargs) are consumed even on failure; NULL
 * dict means {}: one empty object shared by every message built so (never add keys to a built
 * message's dict: build the dict first); NULL args/kwargs are omitted (args is emitted as []
 * when only kwargs is given). */
json_t *wamp_msg_new_welcome(uint64_t session, json_t *details_take);
json_t *wamp_msg_new_abort(json_t *details_take, const char *reason);
json_t *wamp_msg_new_goodbye(json_t *details_take, const char *reason);
json_t *wamp_msg_new_error(wamp_msg_type req_type, uint64_t request, json_t *details_take,
                           const char *error, json_t *args_take, json_t *kwargs_take);
json_t *wamp_msg_new_published(uint64_t request, uint64_t publication);
json_t *wamp_msg_new_subscribed(uint64_t request, uint64_t subscription);
json_t *wamp_msg_new_unsubscribed(uint64_t request);
json_t *wamp_msg_new_event(uint64_t subscription, uint64_t publication, json_t *details_take,
                           json_t *args_take, json_t *kwargs_take);
json_t *wamp_msg_new_result(uint64_t request, json_t *details_take, json_t *args_take,
                            json_t *kwargs_take);
json_t *wamp_msg_new_registered(uint64_t request, uint64_t registration);
json_t *wamp_msg_new_unregistered(uint64_t request);
json_t *wamp_msg_new_invocation(uint64_t request, uint64_t registration, json_t *details_take,
                                json_t *args_take, json_t *kwargs_take);
json_t *wamp_msg_new_interrupt(uint64_t request, json_t *options_take);
/* Client-side messages (for tests, the management client and the benchmark). */
json_t *wamp_msg_new_hello(const char *realm, json_t *details_take);
json_t *wamp_msg_new_publish(uint64_t request, json_t *options_take, const char *topic,
                             json_t *args_take, json_t *kwargs_take);
json_t *wamp_msg_new_subscribe(uint64_t request, json_t *options_take, const char *topic);
json_t *wamp_msg_new_unsubscribe(uint64_t request, uint64_t subscription);
json_t *wamp_msg_new_call(uint64_t request, json_t *options_take, const char *procedure,
                          json_t *args_take, json_t *kwargs_take);
json_t *wamp_msg_new_register(uint64_t request, json_t *options_take, const char *procedure);
json_t *wamp_msg_new_unregister(uint64_t request, uint64_t registration);
json_t *wamp_msg_new_yield(uint64_t request, json_t *options_take, json_t *args_take,
                           json_t *kwargs_take);

#endif /* WAMP_MSG_H */
