/* wamp_types.h: WAMP v2 protocol constants (message codes, serializers, error and close URIs).
 * Constants only. */
#ifndef WAMP_TYPES_H
#define WAMP_TYPES_H

#include <stdint.h>

/* Message type codes (WAMP spec, "Message Codes and Direction"). */
typedef enum wamp_msg_type {
    WAMP_MSG_HELLO = 1,
    WAMP_MSG_WELCOME = 2,
    WAMP_MSG_ABORT = 3,
    WAMP_MSG_CHALLENGE = 4,
    WAMP_MSG_AUTHENTICATE = 5,
    WAMP_MSG_GOODBYE = 6,
    WAMP_MSG_ERROR = 8,
    WAMP_MSG_PUBLISH = 16,
    WAMP_MSG_PUBLISHED = 17,
    WAMP_MSG_SUBSCRIBE = 32,
    WAMP_MSG_SUBSCRIBED = 33,
    WAMP_MSG_UNSUBSCRIBE = 34,
    WAMP_MSG_UNSUBSCRIBED = 35,
    WAMP_MSG_EVENT = 36,
    WAMP_MSG_CALL = 48,
    WAMP_MSG_CANCEL = 49,
    WAMP_MSG_RESULT = 50,
    WAMP_MSG_REGISTER = 64,
    WAMP_MSG_REGISTERED = 65,
    WAMP_MSG_UNREGISTER = 66,
    WAMP_MSG_UNREGISTERED = 67,
    WAMP_MSG_INVOCATION = 68,
    WAMP_MSG_INTERRUPT = 69,
    WAMP_MSG_YIELD = 70
} wamp_msg_type;

/* Largest message type code; tables indexed by type have WAMP_MSG_TYPE_MAX + 1 entries. */
#define WAMP_MSG_TYPE_MAX 70

/* Serializers. The values are the RawSocket serializer ids (1 = JSON, 2 = MessagePack,
 * 3 = CBOR), and the lws protocol ids of the matching WebSocket subprotocols. */
typedef enum wamp_ser {
    WAMP_SER_JSON = 1,
    WAMP_SER_MSGPACK = 2,
    WAMP_SER_CBOR = 3
} wamp_ser;

/* Arrays indexed by wamp_ser have WAMP_SER_COUNT entries (index 0 unused). */
#define WAMP_SER_COUNT 4

#define WAMP_SUBPROTOCOL_JSON    "wamp.2.json"
#define WAMP_SUBPROTOCOL_MSGPACK "wamp.2.msgpack"
#define WAMP_SUBPROTOCOL_CBOR    "wamp.2.cbor"

/* IDs are integers in [1, 2^53] (spec: "IDs in the global, router and session scopes"). */
#define WAMP_ID_MAX ((uint64_t)9007199254740992ULL)

/* Error URIs (spec "Predefined URIs"). */
#define WAMP_ERROR_INVALID_URI                "wamp.error.invalid_uri"
#define WAMP_ERROR_NO_SUCH_PROCEDURE          "wamp.error.no_such_procedure"
#define WAMP_ERROR_PROCEDURE_ALREADY_EXISTS   "wamp.error.procedure_already_exists"
#define WAMP_ERROR_NO_SUCH_REGISTRATION       "wamp.error.no_such_registration"
#define WAMP_ERROR_NO_SUCH_SUBSCRIPTION       "wamp.error.no_such_subscription"
#define WAMP_ERROR_INVALID_ARGUMENT           "wamp.error.invalid_argument"
#define WAMP_ERROR_PROTOCOL_VIOLATION         "wamp.error.protocol_violation"
#define WAMP_ERROR_NOT_AUTHORIZED             "wamp.error.not_authorized"
#define WAMP_ERROR_AUTHORIZATION_FAILED       "wamp.error.authorization_failed"
#define WAMP_ERROR_AUTHENTICATION_FAILED      "wamp.error.authentication_failed"
#define WAMP_ERROR_NO_AUTH_METHOD             "wamp.error.no_auth_method"
#define WAMP_ERROR_NO_SUCH_REALM              "wamp.error.no_such_realm"
#define WAMP_ERROR_NO_SUCH_ROLE               "wamp.error.no_such_role"
#define WAMP_ERROR_NO_SUCH_PRINCIPAL          "wamp.error.no_such_principal"
#define WAMP_ERROR_NO_SUCH_SESSION            "wamp.error.no_such_session"
#define WAMP_ERROR_CANCELED                   "wamp.error.canceled"
#define WAMP_ERROR_TIMEOUT                    "wamp.error.timeout"
#define WAMP_ERROR_OPTION_NOT_ALLOWED         "wamp.error.option_not_allowed"
#define WAMP_ERROR_OPTION_DISALLOWED_DISCLOSE "wamp.error.option_disallowed.disclose_me"
#define WAMP_ERROR_NETWORK_FAILURE            "wamp.error.network_failure"
#define WAMP_ERROR_UNAVAILABLE                "wamp.error.unavailable"
#define WAMP_ERROR_NO_AVAILABLE_CALLEE        "wamp.error.no_available_callee"
#define WAMP_ERROR_FEATURE_NOT_SUPPORTED      "wamp.error.feature_not_supported"
#define WAMP_ERROR_PAYLOAD_SIZE_EXCEEDED      "wamp.error.payload_size_exceeded"
#define WAMP_ERROR_SYSTEM_SHUTDOWN            "wamp.error.system_shutdown"
#define WAMP_ERROR_CLOSE_REALM                "wamp.error.close_realm"
#define WAMP_ERROR_GOODBYE_AND_OUT            "wamp.error.goodbye_and_out"

/* Close reasons (GOODBYE / ABORT). */
#define WAMP_CLOSE_NORMAL          "wamp.close.normal"
#define WAMP_CLOSE_SYSTEM_SHUTDOWN "wamp.close.system_shutdown"
#define WAMP_CLOSE_CLOSE_REALM     "wamp.close.close_realm"
#define WAMP_CLOSE_GOODBYE_AND_OUT "wamp.close.goodbye_and_out"
#define WAMP_CLOSE_KILLED          "wamp.close.killed"

#endif /* WAMP_TYPES_H */
