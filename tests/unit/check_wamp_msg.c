/* check_wamp_msg.c: wamp_msg_parse() acceptance and rejection for every message type, the
 * ownership rules of parse/fini, type names, and the message builders. Inputs are written as
 * JSON text and loaded with jansson directly, so this suite does not depend on the codec. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "alloc_count.h"
#include "wamp_codec.h"
#include "wamp_msg.h"
#include "wamp_rd.h"

#define LOAD_FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

static json_t *load(const char *text)
{
    json_error_t err;
    json_t *v = json_loads(text, LOAD_FLAGS, &err);
    ck_assert_msg(v != NULL, "test input '%s' is not JSON: %s", text, err.text);
    return v;
}

/* Asserts json_equal(got, expected text); consumes got. */
static void assert_json_take(json_t *got, const char *expected)
{
    ck_assert_ptr_nonnull(got);
    json_t *want = load(expected);
    char *dump = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    ck_assert_msg(json_equal(got, want), "got %s, expected %s", dump, expected);
    free(dump);
    json_decref(want);
    json_decref(got);
}

/* ---- valid messages ---- */

struct valid_case {
    const char *json;
    wamp_msg_type type;
    wamp_msg_type req_type;
    uint64_t id;
    uint64_t id2;
    const char *uri;
    bool dict;
    bool args;
    bool kwargs;
};

static const struct valid_case valid_cases[] = {
        {"[1,\"realm1\",{\"roles\":{}}]", WAMP_MSG_HELLO, 0, 0, 0, "realm1", true, false, false},
        {"[2,9007199254740992,{}]", WAMP_MSG_WELCOME, 0, 9007199254740992ULL, 0, NULL, true, false,
         false},
        {"[3,{\"message\":\"m\"},\"wamp.error.no_such_realm\"]", WAMP_MSG_ABORT, 0, 0, 0,
         "wamp.error.no_such_realm", true, false, false},
        /* The spec's RFC draft: ABORT may carry Arguments and ArgumentsKw (xconn clients). */
        {"[3,{},\"wamp.close.normal\",[\"bye\"],{\"why\":1}]", WAMP_MSG_ABORT, 0, 0, 0,
         "wamp.close.normal", true, true, true},
        {"[4,\"wampcra\",{\"challenge\":\"c\"}]", WAMP_MSG_CHALLENGE, 0, 0, 0, "wampcra", true,
         false, false},
        {"[5,\"c2ln\",{}]", WAMP_MSG_AUTHENTICATE, 0, 0, 0, "c2ln", true, false, false},
        {"[6,{},\"wamp.close.normal\"]", WAMP_MSG_GOODBYE, 0, 0, 0, "wamp.close.normal", true,
         false, false},
        {"[8,48,123,{},\"wamp.error.no_such_procedure\"]", WAMP_MSG_ERROR, WAMP_MSG_CALL, 123, 0,
         "wamp.error.no_such_procedure", true, false, false},
        {"[8,32,1,{},\"wamp.error.invalid_uri\",[\"a\"]]", WAMP_MSG_ERROR, WAMP_MSG_SUBSCRIBE, 1, 0,
         "wamp.error.invalid_uri", true, true, false},
        {"[8,68,7,{},\"app.error\",[],{\"k\":1}]", WAMP_MSG_ERROR, WAMP_MSG_INVOCATION, 7, 0,
         "app.error", true, true, true},
        {"[16,1,{},\"com.t\"]", WAMP_MSG_PUBLISH, 0, 1, 0, "com.t", true, false, false},
        {"[16,2,{},\"com.t\",[1,2]]", WAMP_MSG_PUBLISH, 0, 2, 0, "com.t", true, true, false},
        {"[16,3,{},\"com.t\",[],{\"a\":1}]", WAMP_MSG_PUBLISH, 0, 3, 0, "com.t", true, true, true},
        {"[17,1,2]", WAMP_MSG_PUBLISHED, 0, 1, 2, NULL, false, false, false},
        {"[32,1,{\"match\":\"prefix\"},\"com.\"]", WAMP_MSG_SUBSCRIBE, 0, 1, 0, "com.", true, false,
         false},
        {"[33,1,2]", WAMP_MSG_SUBSCRIBED, 0, 1, 2, NULL, false, false, false},
        {"[34,1,2]", WAMP_MSG_UNSUBSCRIBE, 0, 1, 2, NULL, false, false, false},
        {"[35,1]", WAMP_MSG_UNSUBSCRIBED, 0, 1, 0, NULL, false, false, false},
        {"[35,1,{\"reason\":\"x\"}]", WAMP_MSG_UNSUBSCRIBED, 0, 1, 0, NULL, true, false, false},
        {"[36,1,2,{}]", WAMP_MSG_EVENT, 0, 1, 2, NULL, true, false, false},
        {"[36,1,2,{},[1]]", WAMP_MSG_EVENT, 0, 1, 2, NULL, true, true, false},
        {"[36,1,2,{},[1],{\"a\":null}]", WAMP_MSG_EVENT, 0, 1, 2, NULL, true, true, true},
        {"[48,1,{},\"com.p\"]", WAMP_MSG_CALL, 0, 1, 0, "com.p", true, false, false},
        {"[48,1,{},\"com.p\",[\"x\"]]", WAMP_MSG_CALL, 0, 1, 0, "com.p", true, true, false},
        {"[48,1,{},\"com.p\",[],{}]", WAMP_MSG_CALL, 0, 1, 0, "com.p", true, true, true},
        {"[49,1,{\"mode\":\"kill\"}]", WAMP_MSG_CANCEL, 0, 1, 0, NULL, true, false, false},
        {"[50,1,{}]", WAMP_MSG_RESULT, 0, 1, 0, NULL, true, false, false},
        {"[50,1,{},[1]]", WAMP_MSG_RESULT, 0, 1, 0, NULL, true, true, false},
        {"[50,1,{},[1],{}]", WAMP_MSG_RESULT, 0, 1, 0, NULL, true, true, true},
        {"[64,1,{},\"com.p\"]", WAMP_MSG_REGISTER, 0, 1, 0, "com.p", true, false, false},
        {"[65,1,2]", WAMP_MSG_REGISTERED, 0, 1, 2, NULL, false, false, false},
        {"[66,1,2]", WAMP_MSG_UNREGISTER, 0, 1, 2, NULL, false, false, false},
        {"[67,1]", WAMP_MSG_UNREGISTERED, 0, 1, 0, NULL, false, false, false},
        {"[67,1,{}]", WAMP_MSG_UNREGISTERED, 0, 1, 0, NULL, true, false, false},
        {"[68,1,2,{}]", WAMP_MSG_INVOCATION, 0, 1, 2, NULL, true, false, false},
        {"[68,1,2,{},[true]]", WAMP_MSG_INVOCATION, 0, 1, 2, NULL, true, true, false},
        {"[68,1,2,{},[],{\"a\":[]}]", WAMP_MSG_INVOCATION, 0, 1, 2, NULL, true, true, true},
        {"[69,1,{}]", WAMP_MSG_INTERRUPT, 0, 1, 0, NULL, true, false, false},
        {"[70,1,{}]", WAMP_MSG_YIELD, 0, 1, 0, NULL, true, false, false},
        {"[70,1,{},[1]]", WAMP_MSG_YIELD, 0, 1, 0, NULL, true, true, false},
        {"[70,1,{\"progress\":true},[1],{\"b\":2}]", WAMP_MSG_YIELD, 0, 1, 0, NULL, true, true,
         true},
};

/* A received envelope's empty Details/Options is the shared empty object, in every serializer
 * the one-pass reader's fast paths cover; a dict with keys is the message's own. */
START_TEST(test_parsed_empty_dicts_shared)
{
    json_t *empty = wamp_rd_empty_map();
    ck_assert_ptr_nonnull(empty);
    static const char call_json[] = "[48, 1, { }, \"com.example.p\", [1]]";
    static const unsigned char call_mp[] = {0x95, 0x30, 0x01, 0x80, 0xad, 'c', 'o',
                                            'm',  '.',  'e',  'x',  'a',  'm', 'p',
                                            'l',  'e',  '.',  'p',  0x91, 0x01};
    wamp_msg m;
    char why[WAMP_WHY_LEN];
    ck_assert_int_eq(
            wamp_msg_parse_bytes(WAMP_SER_JSON, call_json, strlen(call_json), &m, why, sizeof(why)),
            WAMP_OK);
    ck_assert_ptr_eq(m.dict, empty);
    wamp_msg_fini(&m);
    ck_assert_int_eq(
            wamp_msg_parse_bytes(WAMP_SER_MSGPACK, call_mp, sizeof(call_mp), &m, why, sizeof(why)),
            WAMP_OK);
    ck_assert_ptr_eq(m.dict, empty);
    ck_assert_str_eq(m.uri, "com.example.p");
    wamp_msg_fini(&m);
    static const char opts_json[] = "[48, 2, {\"timeout\": 5}, \"com.example.p\"]";
    ck_assert_int_eq(
            wamp_msg_parse_bytes(WAMP_SER_JSON, opts_json, strlen(opts_json), &m, why, sizeof(why)),
            WAMP_OK);
    ck_assert_ptr_ne(m.dict, empty);
    ck_assert_int_eq(json_integer_value(json_object_get(m.dict, "timeout")), 5);
    wamp_msg_fini(&m);
    /* Still empty after all of them; a plain reader makes its own objects. */
    ck_assert_uint_eq(json_object_size(empty), 0);
    json_t *v = NULL;
    ck_assert_int_eq(wamp_codec_decode(WAMP_SER_JSON, "[{}]", 4, &v, why, sizeof(why)), WAMP_OK);
    ck_assert_ptr_ne(json_array_get(v, 0), empty);
    json_decref(v);
    json_decref(empty);
}

END_TEST

/* Messages built without a dict share one empty {} (no allocation per message); one given is
 * used as it is. */
START_TEST(test_built_empty_dicts_shared)
{
    json_t *a = wamp_msg_new_invocation(1, 2, NULL, NULL, NULL);
    json_t *b = wamp_msg_new_result(3, NULL, json_pack("[i]", 7), NULL);
    json_t *own = json_object();
    json_t *c = wamp_msg_new_result(4, own, NULL, NULL);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    json_t *da = json_array_get(a, 3), *db = json_array_get(b, 2);
    ck_assert(json_is_object(da) && json_object_size(da) == 0);
    ck_assert_ptr_eq(da, db);
    ck_assert_ptr_eq(json_array_get(c, 2), own);
    char *text = json_dumps(b, JSON_COMPACT);
    ck_assert_str_eq(text, "[50,3,{},[7]]");
    free(text);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    /* Still alive and empty for the next message. */
    json_t *d = wamp_msg_new_yield(5, NULL, NULL, NULL);
    ck_assert_ptr_eq(json_array_get(d, 2), da);
    ck_assert_uint_eq(json_object_size(json_array_get(d, 2)), 0);
    json_decref(d);
}

END_TEST

START_TEST(test_parse_valid)
{
    const struct valid_case *c = &valid_cases[_i];
    json_t *root = load(c->json);
    wamp_msg m;
    char why[WAMP_WHY_LEN] = "";
    ck_assert_msg(wamp_msg_parse(root, &m, why, sizeof(why)) == WAMP_OK, "%s: %s", c->json, why);
    ck_assert_ptr_eq(m.root, root);
    ck_assert_int_eq(m.type, c->type);
    ck_assert_int_eq(m.req_type, c->req_type);
    ck_assert_uint_eq(m.id, c->id);
    ck_assert_uint_eq(m.id2, c->id2);
    if (c->uri) {
        ck_assert_ptr_nonnull(m.uri);
        ck_assert_str_eq(m.uri, c->uri);
    } else {
        ck_assert_ptr_null(m.uri);
    }
    /* The slots point into the array itself (borrowed), at the position the spec gives. */
    ck_assert(c->dict ? json_is_object(m.dict) : m.dict == NULL);
    ck_assert(c->args ? json_is_array(m.args) : m.args == NULL);
    ck_assert(c->kwargs ? json_is_object(m.kwargs) : m.kwargs == NULL);
    size_t n = json_array_size(root);
    if (c->kwargs) {
        ck_assert_ptr_eq(m.kwargs, json_array_get(root, n - 1));
        ck_assert_ptr_eq(m.args, json_array_get(root, n - 2));
    } else if (c->args) {
        ck_assert_ptr_eq(m.args, json_array_get(root, n - 1));
    }
    wamp_msg_fini(&m);
    ck_assert_ptr_null(m.root);
    ck_assert_int_eq(m.type, 0);
    wamp_msg_fini(&m); /* fini twice is harmless */
    wamp_msg_fini(NULL);
}

END_TEST

/* ---- rejections ---- */

struct reject_case {
    const char *json;
    const char *why; /* expected substring of the reason */
};

static const struct reject_case reject_cases[] = {
        /* Not a message at all. */
        {"{\"a\":1}", "must be a list"},
        {"\"hello\"", "must be a list"},
        {"42", "must be a list"},
        {"null", "must be a list"},
        {"[]", "must not be empty"},
        {"[\"1\",\"realm\",{}]", "message type must be an integer"},
        {"[1.0,\"realm\",{}]", "message type must be an integer"},
        {"[true,\"realm\",{}]", "message type must be an integer"},
        {"[null]", "message type must be an integer"},
        {"[99,1]", "unknown message type 99"},
        {"[0]", "unknown message type 0"},
        {"[-1,1]", "unknown message type -1"},
        {"[7,1,{}]", "unknown message type 7"},
        {"[71,1,{}]", "unknown message type 71"},
        {"[9007199254740993,1]", "unknown message type 9007199254740993"},
        /* Arity: too few and too many for every type. */
        {"[1,\"r\"]", "HELLO: expected 3 elements, got 2"},
        {"[1,\"r\",{},1]", "HELLO: expected 3 elements, got 4"},
        {"[1]", "HELLO: expected 3 elements, got 1"},
        {"[2,1]", "WELCOME: expected 3 elements, got 2"},
        {"[2,1,{},1]", "WELCOME: expected 3 elements, got 4"},
        {"[3,{}]", "ABORT: expected 3 to 5 elements, got 2"},
        {"[3,{},\"u\",[],{},1]", "ABORT: expected 3 to 5 elements, got 6"},
        {"[3,{},\"u\",1]", "ABORT: element 3 (Arguments) must be a list"},
        {"[4,\"m\"]", "CHALLENGE: expected 3 elements, got 2"},
        {"[4,\"m\",{},1]", "CHALLENGE: expected 3 elements, got 4"},
        {"[5,\"s\"]", "AUTHENTICATE: expected 3 elements, got 2"},
        {"[5,\"s\",{},{}]", "AUTHENTICATE: expected 3 elements, got 4"},
        {"[6,{}]", "GOODBYE: expected 3 elements, got 2"},
        {"[6,{},\"u\",[]]", "GOODBYE: expected 3 elements, got 4"},
        {"[8,48,1,{}]", "ERROR: expected 5 to 7 elements, got 4"},
        {"[8,48,1,{},\"u\",[],{},1]", "ERROR: expected 5 to 7 elements, got 8"},
        {"[16,1,{}]", "PUBLISH: expected 4 to 6 elements, got 3"},
        {"[16,1,{},\"t\",[],{},1]", "PUBLISH: expected 4 to 6 elements, got 7"},
        {"[17,1]", "PUBLISHED: expected 3 elements, got 2"},
        {"[17,1,2,3]", "PUBLISHED: expected 3 elements, got 4"},
        {"[32,1,{}]", "SUBSCRIBE: expected 4 elements, got 3"},
        {"[32,1,{},\"t\",[]]", "SUBSCRIBE: expected 4 elements, got 5"},
        {"[33,1]", "SUBSCRIBED: expected 3 elements, got 2"},
        {"[33,1,2,3]", "SUBSCRIBED: expected 3 elements, got 4"},
        {"[34,1]", "UNSUBSCRIBE: expected 3 elements, got 2"},
        {"[34,1,2,{}]", "UNSUBSCRIBE: expected 3 elements, got 4"},
        {"[35]", "UNSUBSCRIBED: expected 2 to 3 elements, got 1"},
        {"[35,1,{},1]", "UNSUBSCRIBED: expected 2 to 3 elements, got 4"},
        {"[36,1,2]", "EVENT: expected 4 to 6 elements, got 3"},
        {"[36,1,2,{},[],{},1]", "EVENT: expected 4 to 6 elements, got 7"},
        {"[48,1,{}]", "CALL: expected 4 to 6 elements, got 3"},
        {"[48,1,{},\"p\",[],{},1]", "CALL: expected 4 to 6 elements, got 7"},
        {"[49,1]", "CANCEL: expected 3 elements, got 2"},
        {"[49,1,{},1]", "CANCEL: expected 3 elements, got 4"},
        {"[50,1]", "RESULT: expected 3 to 5 elements, got 2"},
        {"[50,1,{},[],{},1]", "RESULT: expected 3 to 5 elements, got 6"},
        {"[64,1,{}]", "REGISTER: expected 4 elements, got 3"},
        {"[64,1,{},\"p\",[]]", "REGISTER: expected 4 elements, got 5"},
        {"[65,1]", "REGISTERED: expected 3 elements, got 2"},
        {"[65,1,2,3]", "REGISTERED: expected 3 elements, got 4"},
        {"[66,1]", "UNREGISTER: expected 3 elements, got 2"},
        {"[66,1,2,3]", "UNREGISTER: expected 3 elements, got 4"},
        {"[67]", "UNREGISTERED: expected 2 to 3 elements, got 1"},
        {"[67,1,{},1]", "UNREGISTERED: expected 2 to 3 elements, got 4"},
        {"[68,1,2]", "INVOCATION: expected 4 to 6 elements, got 3"},
        {"[68,1,2,{},[],{},1]", "INVOCATION: expected 4 to 6 elements, got 7"},
        {"[69,1]", "INTERRUPT: expected 3 elements, got 2"},
        {"[69,1,{},1]", "INTERRUPT: expected 3 elements, got 4"},
        {"[70,1]", "YIELD: expected 3 to 5 elements, got 2"},
        {"[70,1,{},[],{},1]", "YIELD: expected 3 to 5 elements, got 6"},
        /* Field types, every field of every type. */
        {"[1,1,{}]", "HELLO: element 1 (Realm) must be a string"},
        {"[1,\"r\",[]]", "HELLO: element 2 (Details) must be a dict"},
        {"[1,\"realm\\u0000x\",{}]", "HELLO: element 1 (Realm) must not contain NUL bytes"},
        {"[2,\"1\",{}]", "WELCOME: element 1 (Session) must be an integer in [1, 2^53]"},
        {"[2,1,null]", "WELCOME: element 2 (Details) must be a dict"},
        {"[3,[],\"u\"]", "ABORT: element 1 (Details) must be a dict"},
        {"[3,{},1]", "ABORT: element 2 (Reason) must be a string"},
        {"[4,null,{}]", "CHALLENGE: element 1 (AuthMethod) must be a string"},
        {"[4,\"m\",\"x\"]", "CHALLENGE: element 2 (Extra) must be a dict"},
        {"[5,{},{}]", "AUTHENTICATE: element 1 (Signature) must be a string"},
        {"[5,\"s\",[]]", "AUTHENTICATE: element 2 (Extra) must be a dict"},
        {"[6,\"x\",\"u\"]", "GOODBYE: element 1 (Details) must be a dict"},
        {"[6,{},{}]", "GOODBYE: element 2 (Reason) must be a string"},
        {"[6,{},\"wamp.close\\u0000.normal\"]", "GOODBYE: element 2 (Reason) must not contain NUL"},
        {"[8,\"48\",1,{},\"u\"]", "ERROR: element 1 (REQUEST.Type) must be an integer"},
        {"[8,48.0,1,{},\"u\"]", "ERROR: element 1 (REQUEST.Type) must be an integer"},
        {"[8,99,1,{},\"u\"]", "ERROR: element 1 (REQUEST.Type) must be a known message type"},
        {"[8,7,1,{},\"u\"]", "ERROR: element 1 (REQUEST.Type) must be a known message type"},
        {"[8,-48,1,{},\"u\"]", "ERROR: element 1 (REQUEST.Type) must be a known message type"},
        {"[8,48,0,{},\"u\"]", "ERROR: element 2 (REQUEST.Request) must be an integer in"},
        {"[8,48,1,[],\"u\"]", "ERROR: element 3 (Details) must be a dict"},
        {"[8,48,1,{},2]", "ERROR: element 4 (Error) must be a string"},
        {"[8,48,1,{},\"u\\u0000\"]", "ERROR: element 4 (Error) must not contain NUL bytes"},
        {"[8,48,1,{},\"u\",{}]", "ERROR: element 5 (Arguments) must be a list"},
        {"[8,48,1,{},\"u\",[],[]]", "ERROR: element 6 (ArgumentsKw) must be a dict"},
        {"[16,1.5,{},\"t\"]", "PUBLISH: element 1 (Request) must be an integer in [1, 2^53]"},
        {"[16,1,[],\"t\"]", "PUBLISH: element 2 (Options) must be a dict"},
        {"[16,1,{},null]", "PUBLISH: element 3 (Topic) must be a string"},
        {"[16,1,{},\"a\\u0000b\"]", "PUBLISH: element 3 (Topic) must not contain NUL bytes"},
        {"[16,1,{},\"t\",{\"a\":1}]", "PUBLISH: element 4 (Arguments) must be a list"},
        {"[16,1,{},\"t\",[],\"x\"]", "PUBLISH: element 5 (ArgumentsKw) must be a dict"},
        {"[17,0,1]", "PUBLISHED: element 1 (PUBLISH.Request) must be an integer in [1, 2^53]"},
        {"[17,1,0]", "PUBLISHED: element 2 (Publication) must be an integer in [1, 2^53]"},
        {"[32,-1,{},\"t\"]", "SUBSCRIBE: element 1 (Request) must be an integer in [1, 2^53]"},
        {"[32,1,\"o\",\"t\"]", "SUBSCRIBE: element 2 (Options) must be a dict"},
        {"[32,1,{},[\"t\"]]", "SUBSCRIBE: element 3 (Topic) must be a string"},
        {"[32,1,{},\"t\\u0000\"]", "SUBSCRIBE: element 3 (Topic) must not contain NUL bytes"},
        {"[33,true,2]", "SUBSCRIBED: element 1 (SUBSCRIBE.Request) must be an integer"},
        {"[33,1,true]", "SUBSCRIBED: element 2 (Subscription) must be an integer in [1, 2^53]"},
        {"[34,\"1\",2]", "UNSUBSCRIBE: element 1 (Request) must be an integer in [1, 2^53]"},
        {"[34,1,\"2\"]", "UNSUBSCRIBE: element 2 (SUBSCRIBED.Subscription) must be an integer"},
        {"[35,0]", "UNSUBSCRIBED: element 1 (UNSUBSCRIBE.Request) must be an integer in"},
        {"[35,1,[]]", "UNSUBSCRIBED: element 2 (Details) must be a dict"},
        {"[36,0,2,{}]", "EVENT: element 1 (SUBSCRIBED.Subscription) must be an integer in"},
        {"[36,1,9007199254740993,{}]", "EVENT: element 2 (PUBLISHED.Publication) must be an"},
        {"[36,1,2,1]", "EVENT: element 3 (Details) must be a dict"},
        {"[36,1,2,{},{}]", "EVENT: element 4 (Arguments) must be a list"},
        {"[36,1,2,{},[],[]]", "EVENT: element 5 (ArgumentsKw) must be a dict"},
        {"[48,[],{},\"p\"]", "CALL: element 1 (Request) must be an integer in [1, 2^53]"},
        {"[48,1,null,\"p\"]", "CALL: element 2 (Options) must be a dict"},
        {"[48,1,{},1]", "CALL: element 3 (Procedure) must be a string"},
        {"[48,1,{},\"p\\u0000q\"]", "CALL: element 3 (Procedure) must not contain NUL bytes"},
        /* ArgumentsKw without the Arguments slot before it. */
        {"[48,1,{},\"p\",{\"a\":1}]", "CALL: element 4 (Arguments) must be a list"},
        {"[48,1,{},\"p\",null]", "CALL: element 4 (Arguments) must be a list"},
        {"[48,1,{},\"p\",[],[1]]", "CALL: element 5 (ArgumentsKw) must be a dict"},
        {"[49,0,{}]", "CANCEL: element 1 (CALL.Request) must be an integer in [1, 2^53]"},
        {"[49,1,[]]", "CANCEL: element 2 (Options) must be a dict"},
        {"[50,-5,{}]", "RESULT: element 1 (CALL.Request) must be an integer in [1, 2^53]"},
        {"[50,1,true]", "RESULT: element 2 (Details) must be a dict"},
        {"[50,1,{},{}]", "RESULT: element 3 (Arguments) must be a list"},
        {"[50,1,{},[],[]]", "RESULT: element 4 (ArgumentsKw) must be a dict"},
        {"[64,1e3,{},\"p\"]", "REGISTER: element 1 (Request) must be an integer in [1, 2^53]"},
        {"[64,1,1,\"p\"]", "REGISTER: element 2 (Options) must be a dict"},
        {"[64,1,{},[\"p\"]]", "REGISTER: element 3 (Procedure) must be a string"},
        {"[64,1,{},\"\\u0000\"]", "REGISTER: element 3 (Procedure) must not contain NUL bytes"},
        {"[65,null,1]", "REGISTERED: element 1 (REGISTER.Request) must be an integer"},
        {"[65,1,1.0]", "REGISTERED: element 2 (Registration) must be an integer in [1, 2^53]"},
        {"[66,false,1]", "UNREGISTER: element 1 (Request) must be an integer in [1, 2^53]"},
        {"[66,1,{}]", "UNREGISTER: element 2 (REGISTERED.Registration) must be an integer"},
        {"[67,-1]", "UNREGISTERED: element 1 (UNREGISTER.Request) must be an integer in"},
        {"[67,1,\"x\"]", "UNREGISTERED: element 2 (Details) must be a dict"},
        {"[68,\"1\",2,{}]", "INVOCATION: element 1 (Request) must be an integer in [1, 2^53]"},
        {"[68,1,null,{}]", "INVOCATION: element 2 (REGISTERED.Registration) must be an integer"},
        {"[68,1,2,[]]", "INVOCATION: element 3 (Details) must be a dict"},
        {"[68,1,2,{},\"a\"]", "INVOCATION: element 4 (Arguments) must be a list"},
        {"[68,1,2,{},[],true]", "INVOCATION: element 5 (ArgumentsKw) must be a dict"},
        {"[69,0,{}]", "INTERRUPT: element 1 (INVOCATION.Request) must be an integer in"},
        {"[69,1,null]", "INTERRUPT: element 2 (Options) must be a dict"},
        {"[70,2.5,{}]", "YIELD: element 1 (INVOCATION.Request) must be an integer in"},
        {"[70,1,[]]", "YIELD: element 2 (Options) must be a dict"},
        {"[70,1,{},{\"a\":1}]", "YIELD: element 3 (Arguments) must be a list"},
        {"[70,1,{},[],null]", "YIELD: element 4 (ArgumentsKw) must be a dict"},
};

START_TEST(test_parse_reject)
{
    const struct reject_case *c = &reject_cases[_i];
    json_t *root = load(c->json);
    json_incref(root); /* keep one reference to check that parse released its own */
    wamp_msg m;
    memset(&m, 0x5a, sizeof(m));
    char why[WAMP_WHY_LEN] = "";
    ck_assert_int_eq(wamp_msg_parse(root, &m, why, sizeof(why)), WAMP_EPROTO);
    ck_assert_msg(strstr(why, c->why) != NULL, "%s: why '%s', expected '%s'", c->json, why, c->why);
    ck_assert_ptr_null(m.root);
    ck_assert_ptr_null(m.uri);
    ck_assert_ptr_null(m.dict);
    ck_assert_uint_eq(m.id, 0);
    ck_assert_int_eq(m.type, 0);
    if (!json_is_null(root)) { /* null is a static singleton without a real count */
        ck_assert_uint_eq(root->refcount, 1);
    }
    json_decref(root);
}

END_TEST

/* Bad IDs in every ID position kind: Request (id) and Publication (id2). */
static const char *const bad_ids[] = {
        "0",
        "-1",
        "9007199254740993",
        "9223372036854775807",
        "-9223372036854775808",
        "1.5",
        "1.0",
        "true",
        "false",
        "\"1\"",
        "null",
        "[1]",
        "{}",
};

START_TEST(test_parse_bad_ids)
{
    char text[128];
    char why[WAMP_WHY_LEN];
    wamp_msg m;
    snprintf(text, sizeof(text), "[48,%s,{},\"com.p\"]", bad_ids[_i]);
    ck_assert_int_eq(wamp_msg_parse(load(text), &m, why, sizeof(why)), WAMP_EPROTO);
    ck_assert_str_eq(why, "CALL: element 1 (Request) must be an integer in [1, 2^53]");
    snprintf(text, sizeof(text), "[17,1,%s]", bad_ids[_i]);
    ck_assert_int_eq(wamp_msg_parse(load(text), &m, why, sizeof(why)), WAMP_EPROTO);
    ck_assert_str_eq(why, "PUBLISHED: element 2 (Publication) must be an integer in [1, 2^53]");
}

END_TEST

START_TEST(test_parse_id_bounds)
{
    wamp_msg m;
    ck_assert_int_eq(wamp_msg_parse(load("[17,1,9007199254740992]"), &m, NULL, 0), WAMP_OK);
    ck_assert_uint_eq(m.id, 1);
    ck_assert_uint_eq(m.id2, WAMP_ID_MAX);
    wamp_msg_fini(&m);
}

END_TEST

START_TEST(test_parse_why_exact_and_optional)
{
    wamp_msg m;
    char why[WAMP_WHY_LEN];
    ck_assert_int_eq(wamp_msg_parse(load("[48,1,{},2]"), &m, why, sizeof(why)), WAMP_EPROTO);
    ck_assert_str_eq(why, "CALL: element 3 (Procedure) must be a string");
    ck_assert_int_eq(wamp_msg_parse(load("[99]"), &m, why, sizeof(why)), WAMP_EPROTO);
    ck_assert_str_eq(why, "unknown message type 99");
    /* why may be NULL, and a short buffer is truncated, never overrun. */
    ck_assert_int_eq(wamp_msg_parse(load("[99]"), &m, NULL, 0), WAMP_EPROTO);
    char tiny[6];
    memset(tiny, 'x', sizeof(tiny));
    ck_assert_int_eq(wamp_msg_parse(load("[99]"), &m, tiny, 5), WAMP_EPROTO);
    ck_assert_str_eq(tiny, "unkn");
    ck_assert_int_eq(tiny[5], 'x');
}

END_TEST

START_TEST(test_parse_null_root)
{
    wamp_msg m;
    char why[WAMP_WHY_LEN];
    ck_assert_int_eq(wamp_msg_parse(NULL, &m, why, sizeof(why)), WAMP_EPROTO);
    ck_assert_ptr_null(m.root);
}

END_TEST

START_TEST(test_parse_success_owns_root)
{
    json_t *root = load("[48,7,{},\"com.p\",[1]]");
    json_incref(root);
    wamp_msg m;
    ck_assert_int_eq(wamp_msg_parse(root, &m, NULL, 0), WAMP_OK);
    ck_assert_uint_eq(root->refcount, 2);
    wamp_msg_fini(&m);
    ck_assert_uint_eq(root->refcount, 1);
    json_decref(root);
}

END_TEST

/* ---- names ---- */

static const struct {
    int type;
    const char *name;
    const char *title;
} names[] = {
        {1, "HELLO", "Hello"},
        {2, "WELCOME", "Welcome"},
        {3, "ABORT", "Abort"},
        {4, "CHALLENGE", "Challenge"},
        {5, "AUTHENTICATE", "Authenticate"},
        {6, "GOODBYE", "Goodbye"},
        {8, "ERROR", "Error"},
        {16, "PUBLISH", "Publish"},
        {17, "PUBLISHED", "Published"},
        {32, "SUBSCRIBE", "Subscribe"},
        {33, "SUBSCRIBED", "Subscribed"},
        {34, "UNSUBSCRIBE", "Unsubscribe"},
        {35, "UNSUBSCRIBED", "Unsubscribed"},
        {36, "EVENT", "Event"},
        {48, "CALL", "Call"},
        {49, "CANCEL", "Cancel"},
        {50, "RESULT", "Result"},
        {64, "REGISTER", "Register"},
        {65, "REGISTERED", "Registered"},
        {66, "UNREGISTER", "Unregister"},
        {67, "UNREGISTERED", "Unregistered"},
        {68, "INVOCATION", "Invocation"},
        {69, "INTERRUPT", "Interrupt"},
        {70, "YIELD", "Yield"},
};

#define N_NAMES (sizeof(names) / sizeof(names[0]))

START_TEST(test_type_names)
{
    size_t known = 0;
    for (int t = -5; t <= 300; t++) {
        size_t i = 0;
        while (i < N_NAMES && names[i].type != t) {
            i++;
        }
        if (i < N_NAMES) {
            known++;
            ck_assert(wamp_msg_type_is_known(t));
            ck_assert_str_eq(wamp_msg_type_name(t), names[i].name);
            ck_assert_str_eq(wamp_msg_type_title(t), names[i].title);
        } else {
            ck_assert_msg(!wamp_msg_type_is_known(t), "type %d", t);
            ck_assert_str_eq(wamp_msg_type_name(t), "UNKNOWN");
            ck_assert_str_eq(wamp_msg_type_title(t), "Unknown");
        }
    }
    ck_assert_uint_eq(known, N_NAMES);
}

END_TEST

/* ---- builders ---- */

/* Checks the builder output against the expected array and that it parses as its type. */
static void check_built(json_t *msg, const char *expected)
{
    ck_assert_ptr_nonnull(msg);
    wamp_msg m;
    char why[WAMP_WHY_LEN] = "";
    json_incref(msg);
    ck_assert_msg(wamp_msg_parse(msg, &m, why, sizeof(why)) == WAMP_OK, "%s: %s", expected, why);
    wamp_msg_fini(&m);
    assert_json_take(msg, expected);
}

START_TEST(test_builders_router_side)
{
    check_built(wamp_msg_new_welcome(5, NULL), "[2,5,{}]");
    check_built(wamp_msg_new_welcome(WAMP_ID_MAX, json_pack("{s:s}", "authid", "joe")),
                "[2,9007199254740992,{\"authid\":\"joe\"}]");
    check_built(wamp_msg_new_abort(NULL, "wamp.error.no_such_realm"),
                "[3,{},\"wamp.error.no_such_realm\"]");
    check_built(wamp_msg_new_goodbye(json_pack("{s:s}", "message", "bye"), "wamp.close.normal"),
                "[6,{\"message\":\"bye\"},\"wamp.close.normal\"]");
    check_built(
            wamp_msg_new_error(WAMP_MSG_CALL, 7, NULL, "wamp.error.no_such_procedure", NULL, NULL),
            "[8,48,7,{},\"wamp.error.no_such_procedure\"]");
    check_built(wamp_msg_new_error(WAMP_MSG_SUBSCRIBE, 7, NULL, "e", json_pack("[i]", 1), NULL),
                "[8,32,7,{},\"e\",[1]]");
    check_built(
            wamp_msg_new_error(WAMP_MSG_INVOCATION, 7, NULL, "e", NULL, json_pack("{s:i}", "a", 1)),
            "[8,68,7,{},\"e\",[],{\"a\":1}]");
    check_built(wamp_msg_new_error(WAMP_MSG_REGISTER, 7, json_object(), "e", json_array(),
                                   json_object()),
                "[8,64,7,{},\"e\",[],{}]");
    check_built(wamp_msg_new_published(1, WAMP_ID_MAX), "[17,1,9007199254740992]");
    check_built(wamp_msg_new_subscribed(2, 3), "[33,2,3]");
    check_built(wamp_msg_new_unsubscribed(3), "[35,3]");
    check_built(wamp_msg_new_event(4, 5, NULL, NULL, NULL), "[36,4,5,{}]");
    check_built(wamp_msg_new_event(4, 5, json_pack("{s:i}", "publisher", 9),
                                   json_pack("[s,n]", "x"), json_pack("{s:b}", "k", 1)),
                "[36,4,5,{\"publisher\":9},[\"x\",null],{\"k\":true}]");
    check_built(wamp_msg_new_result(6, NULL, json_pack("[f]", 1.5), NULL), "[50,6,{},[1.5]]");
    check_built(wamp_msg_new_result(6, NULL, NULL, json_pack("{s:s}", "k", "v")),
                "[50,6,{},[],{\"k\":\"v\"}]");
    check_built(wamp_msg_new_registered(7, 8), "[65,7,8]");
    check_built(wamp_msg_new_unregistered(9), "[67,9]");
    check_built(wamp_msg_new_invocation(10, 11, NULL, json_pack("[i]", -1), NULL),
                "[68,10,11,{},[-1]]");
    check_built(wamp_msg_new_invocation(10, 11, NULL, NULL, NULL), "[68,10,11,{}]");
    check_built(wamp_msg_new_interrupt(12, json_pack("{s:s}", "mode", "kill")),
                "[69,12,{\"mode\":\"kill\"}]");
}

END_TEST

START_TEST(test_builders_client_side)
{
    check_built(wamp_msg_new_hello("realm1", NULL), "[1,\"realm1\",{}]");
    check_built(wamp_msg_new_publish(1, NULL, "com.t", NULL, NULL), "[16,1,{},\"com.t\"]");
    check_built(wamp_msg_new_publish(1, json_pack("{s:b}", "acknowledge", 1), "com.t",
                                     json_pack("[i]", 1), json_pack("{}")),
                "[16,1,{\"acknowledge\":true},\"com.t\",[1],{}]");
    check_built(wamp_msg_new_subscribe(2, NULL, "com.t"), "[32,2,{},\"com.t\"]");
    check_built(wamp_msg_new_unsubscribe(3, 4), "[34,3,4]");
    check_built(wamp_msg_new_call(5, NULL, "com.p", NULL, json_pack("{s:i}", "x", 1)),
                "[48,5,{},\"com.p\",[],{\"x\":1}]");
    check_built(wamp_msg_new_call(5, NULL, "com.p", NULL, NULL), "[48,5,{},\"com.p\"]");
    check_built(wamp_msg_new_register(6, json_pack("{s:s}", "match", "prefix"), "com."),
                "[64,6,{\"match\":\"prefix\"},\"com.\"]");
    check_built(wamp_msg_new_unregister(7, 8), "[66,7,8]");
    check_built(wamp_msg_new_yield(9, NULL, json_pack("[i,i]", 1, 2), NULL), "[70,9,{},[1,2]]");
    check_built(wamp_msg_new_yield(9, NULL, NULL, NULL), "[70,9,{}]");
}

END_TEST

/* _take arguments are consumed when the builder fails: under LSan (CK_FORK), a leak here
 * fails the test. A NULL or invalid-UTF-8 string is the failure we can provoke without OOM. */
START_TEST(test_builders_consume_on_failure)
{
    json_t *details = json_object();
    json_t *args = json_array();
    json_t *kwargs = json_object();
    json_incref(details);
    json_incref(args);
    json_incref(kwargs);
    ck_assert_ptr_null(wamp_msg_new_call(1, details, NULL, args, kwargs));
    ck_assert_uint_eq(details->refcount, 1);
    ck_assert_uint_eq(args->refcount, 1);
    ck_assert_uint_eq(kwargs->refcount, 1);
    json_incref(details);
    json_incref(args);
    json_incref(kwargs);
    ck_assert_ptr_null(wamp_msg_new_error(WAMP_MSG_CALL, 1, details, "bad\xff", args, kwargs));
    ck_assert_uint_eq(details->refcount, 1);
    ck_assert_uint_eq(args->refcount, 1);
    ck_assert_uint_eq(kwargs->refcount, 1);
    json_decref(details);
    json_decref(args);
    json_decref(kwargs);
    ck_assert_ptr_null(wamp_msg_new_publish(1, json_object(), NULL, NULL, json_object()));
    ck_assert_ptr_null(wamp_msg_new_hello(NULL, json_object()));
    ck_assert_ptr_null(wamp_msg_new_abort(json_object(), NULL));
    ck_assert_ptr_null(wamp_msg_new_goodbye(NULL, "\xc3"));
    ck_assert_ptr_null(wamp_msg_new_subscribe(1, json_object(), NULL));
    ck_assert_ptr_null(wamp_msg_new_register(1, json_object(), NULL));
}

END_TEST

/* Allocation failure injection through jansson's allocator hook (forked tests make the
 * file-scope counters safe): allocation number fail_at, counting from 0, fails. */
static size_t fail_at;
static size_t alloc_seq;

static void *failing_malloc(size_t n)
{
    if (alloc_seq++ == fail_at) {
        return NULL;
    }
    return malloc(n);
}

/* Every allocation a builder makes fails in turn: it returns NULL and still releases its _take
 * arguments (LSan would report them at the forked child's exit), until it succeeds. */
START_TEST(test_builders_oom)
{
    size_t failures = 0;
    for (fail_at = 0;; fail_at++) {
        json_t *args = json_pack("[i,s]", 1, "x");
        json_t *kwargs = json_pack("{s:i}", "k", 2);
        alloc_seq = 0;
        json_set_alloc_funcs(failing_malloc, free);
        json_t *call = wamp_msg_new_call(7, NULL, "com.p", args, kwargs);
        json_set_alloc_funcs(malloc, free);
        if (call) {
            check_built(call, "[48,7,{},\"com.p\",[1,\"x\"],{\"k\":2}]");
            break;
        }
        failures++;
    }
    ck_assert_uint_ge(failures, 5);
    failures = 0;
    for (fail_at = 0;; fail_at++) {
        json_t *kwargs = json_pack("{s:i}", "k", 2);
        alloc_seq = 0;
        json_set_alloc_funcs(failing_malloc, free);
        /* NULL details and NULL args: the builder allocates {} and [] itself. */
        json_t *err = wamp_msg_new_error(WAMP_MSG_CALL, 7, NULL, "app.error", NULL, kwargs);
        json_set_alloc_funcs(malloc, free);
        if (err) {
            check_built(err, "[8,48,7,{},\"app.error\",[],{\"k\":2}]");
            break;
        }
        failures++;
    }
    ck_assert_uint_ge(failures, 5);
}

END_TEST

/* ---- parsed into fields ---- */

/* wamp_msg_parse_bytes_fields() of text (JSON) in ser agrees with wamp_msg_parse_bytes(): the
 * same result and reason, the same fields, and wamp_msg_make_root() the same list. Returns
 * whether the message was read into fields (no list). */
static bool bytes_agree(wamp_ser ser, const void *data, size_t len)
{
    wamp_msg full, lean;
    char why_full[WAMP_WHY_LEN] = "", why_lean[WAMP_WHY_LEN] = "";
    wamp_err err = wamp_msg_parse_bytes(ser, data, len, &full, why_full, sizeof(why_full));
    memset(&lean, 0x5a, sizeof(lean));
    ck_assert_int_eq(wamp_msg_parse_bytes_fields(ser, data, len, &lean, why_lean, sizeof(why_lean)),
                     err);
    bool as_fields = err == WAMP_OK && lean.root == NULL;
    if (err != WAMP_OK) {
        ck_assert_str_eq(why_lean, why_full);
        ck_assert_ptr_null(lean.root);
        ck_assert_ptr_null(lean.dict);
    } else {
        ck_assert_int_eq(lean.type, full.type);
        ck_assert_int_eq(lean.req_type, full.req_type);
        ck_assert_uint_eq(lean.id, full.id);
        ck_assert_uint_eq(lean.id2, full.id2);
        ck_assert(lean.uri ? full.uri && strcmp(lean.uri, full.uri) == 0 : !full.uri);
        ck_assert(lean.dict ? json_equal(lean.dict, full.dict) : !full.dict);
        ck_assert_int_eq(lean.ser, full.ser);
        ck_assert_ptr_eq(lean.args_raw.p, full.args_raw.p);
        ck_assert_uint_eq(lean.args_raw.len, full.args_raw.len);
        ck_assert_ptr_eq(lean.kwargs_raw.p, full.kwargs_raw.p);
        ck_assert_uint_eq(lean.kwargs_raw.len, full.kwargs_raw.len);
        json_t *dict = lean.dict;
        ck_assert_int_eq(wamp_msg_make_root(&lean), WAMP_OK);
        ck_assert_int_eq(wamp_msg_make_root(&lean), WAMP_OK); /* a no-op the second time */
        ck_assert(json_equal(lean.root, full.root));
        ck_assert_ptr_eq(lean.dict, dict); /* still valid: the list holds it */
    }
    wamp_msg_fini(&lean);
    wamp_msg_fini(&full);
    return as_fields;
}

/* bytes_agree() of the message written as JSON text, in ser. */
static bool fields_agree(const char *text, wamp_ser ser)
{
    if (ser == WAMP_SER_JSON) {
        return bytes_agree(ser, text, strlen(text));
    }
    wamp_buf *b = NULL;
    json_t *v = load(text);
    ck_assert_int_eq(wamp_codec_encode(ser, v, &b), WAMP_OK);
    json_decref(v);
    bool as_fields = bytes_agree(ser, wamp_buf_cdata(b), wamp_buf_len(b));
    wamp_buf_unref(&b);
    return as_fields;
}

/* MessagePack forms the envelope's direct read takes or leaves to the reader: every one reads
 * as the full parse reads it. */
START_TEST(test_parse_fields_msgpack_forms)
{
    static const struct {
        unsigned char b[24];
        size_t len;
        bool as_fields;
    } cases[] = {
            /* [48, 1, {}, "a.b"]; ids as uint8/16/32/64 and as a signed int64 */
            {{0x94, 0x30, 0x01, 0x80, 0xa3, 'a', '.', 'b'}, 8, true},
            {{0x94, 0x30, 0xcc, 0x80, 0x80, 0xa3, 'a', '.', 'b'}, 9, true},
            {{0x94, 0x30, 0xcd, 0x01, 0x00, 0x80, 0xa3, 'a', '.', 'b'}, 10, true},
            {{0x94, 0x30, 0xce, 0, 1, 0, 0, 0x80, 0xa3, 'a', '.', 'b'}, 12, true},
            {{0x94, 0x30, 0xcf, 0, 0x20, 0, 0, 0, 0, 0, 0, 0x80, 0xa3, 'a', '.', 'b'}, 16, true},
            {{0x94, 0x30, 0xcf, 0, 0x20, 0, 0, 0, 0, 0, 1, 0x80, 0xa3, 'a', '.', 'b'}, 16, false},
            {{0x94, 0x30, 0xd3, 0, 0, 0, 0, 0, 0, 0, 5, 0x80, 0xa3, 'a', '.', 'b'}, 16, true},
            /* URI as str8, str16; with a NUL; invalid UTF-8; truncated */
            {{0x94, 0x30, 0x01, 0x80, 0xd9, 3, 'a', '.', 'b'}, 9, true},
            {{0x94, 0x30, 0x01, 0x80, 0xda, 0, 3, 'a', '.', 'b'}, 10, true},
            {{0x94, 0x30, 0x01, 0x80, 0xa3, 'a', 0, 'b'}, 8, false},
            {{0x94, 0x30, 0x01, 0x80, 0xa2, 0xc3, 0x28}, 7, false},
            {{0x94, 0x30, 0x01, 0x80, 0xa3, 'a', '.'}, 7, false},
            /* payload: args, args + kwargs, kwargs not a map, trailing byte, array16 head */
            {{0x95, 0x30, 0x01, 0x80, 0xa1, 'p', 0x92, 0x01, 0xa1, 'x'}, 10, true},
            {{0x96, 0x30, 0x01, 0x80, 0xa1, 'p', 0x90, 0x81, 0xa1, 'k', 0xc3}, 11, true},
            {{0x96, 0x30, 0x01, 0x80, 0xa1, 'p', 0x90, 0x91, 0xc3}, 9, false},
            {{0x95, 0x30, 0x01, 0x80, 0xa1, 'p', 0x90, 0x00}, 8, false},
            {{0x94, 0x30, 0x01, 0x80, 0xa1, 'p', 0x00}, 7, false},
            {{0xdc, 0, 4, 0x30, 0x01, 0x80, 0xa1, 'p'}, 8, true},
            /* Options with a key; ERROR with its request type; a count beyond the input */
            {{0x94, 0x30, 0x01, 0x81, 0xa1, 'k', 0xc3, 0xa1, 'p'}, 9, true},
            {{0x95, 0x08, 0x30, 0x01, 0x80, 0xa1, 'e'}, 7, true},
            {{0x95, 0x08, 0x31, 0x01, 0x80, 0xa1, 'e'}, 7, true},
            {{0x95, 0x08, 0x07, 0x01, 0x80, 0xa1, 'e'}, 7, false},
            {{0x97, 0x30, 0x01, 0x80, 0xa1, 'p'}, 6, false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_msg(bytes_agree(WAMP_SER_MSGPACK, cases[i].b, cases[i].len) == cases[i].as_fields,
                      "case %zu", i);
    }
}

END_TEST

START_TEST(test_parse_fields_agrees)
{
    for (wamp_ser ser = WAMP_SER_JSON; ser <= WAMP_SER_CBOR; ser++) {
        for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
            /* Every valid message here has a short URI: read into fields. */
            ck_assert_msg(fields_agree(valid_cases[i].json, ser), "%s", valid_cases[i].json);
        }
        for (size_t i = 0; i < sizeof(reject_cases) / sizeof(reject_cases[0]); i++) {
            (void)fields_agree(reject_cases[i].json, ser);
        }
        for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++) {
            char text[96];
            snprintf(text, sizeof(text), "[48,%s,{},\"a.b\"]", bad_ids[i]);
            (void)fields_agree(text, ser);
        }
    }
    /* Malformed bytes and the wrong arity, as the full parse reports them. */
    ck_assert(!fields_agree("[48,1,{},\"a.b\",[1],{},[]]", WAMP_SER_JSON));
    ck_assert(!fields_agree("[48,1,{}]", WAMP_SER_JSON));
    ck_assert(!fields_agree("[48,1,{}, \"a.b\"", WAMP_SER_JSON));
    ck_assert(!fields_agree("[48,1,{},\"a.b\"] x", WAMP_SER_JSON));
    ck_assert(!fields_agree("[48,1,{\"a\":1,\"a\":2},\"a.b\"]", WAMP_SER_JSON));
    ck_assert(!fields_agree("[48,1,{},\"a\\u0000b\"]", WAMP_SER_JSON));
}

END_TEST

/* A message refused for its arity, its unknown type or a type that is not an integer is
 * validated to its end, but the elements the refusal does not look at are not built as jansson
 * values: built, each "[]" costs some 130 bytes, and one 16 MiB message of them from a peer that
 * has not even sent HELLO would take over 700 MiB and seconds of the service thread. */
START_TEST(test_refused_elements_not_built)
{
    enum {
        EXTRA = 10000
    };

    static const struct {
        const char *head, *tail, *why;
    } cases[] = {
            {"[1,\"realm1\",{}", "]", "HELLO: expected 3 elements, got 10003"},
            {"[99", "]", "unknown message type 99"},
            {"[[[]", "]]", "message type must be an integer"},
    };

    alloc_count_install();
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t head = strlen(cases[c].head), tail = strlen(cases[c].tail);
        char *text = malloc(head + 3 * EXTRA + tail);
        ck_assert_ptr_nonnull(text);
        memcpy(text, cases[c].head, head);
        size_t n = head;
        for (size_t i = 0; i < EXTRA; i++, n += 3) {
            memcpy(text + n, ",[]", 3);
        }
        memcpy(text + n, cases[c].tail, tail);
        n += tail;
        wamp_msg m;
        char why[WAMP_WHY_LEN];
        size_t before = alloc_count_json();
        ck_assert_int_eq(wamp_msg_parse_bytes_fields(WAMP_SER_JSON, text, n, &m, why, sizeof(why)),
                         WAMP_EPROTO);
        size_t built = alloc_count_json() - before;
        ck_assert_str_eq(why, cases[c].why);
        ck_assert_msg(built < 100, "%s...: %zu jansson allocations", cases[c].head, built);
        /* Malformed input among them is still reported as such. */
        text[n - 2] = ',';
        ck_assert_int_eq(wamp_msg_parse_bytes(WAMP_SER_JSON, text, n, &m, why, sizeof(why)),
                         WAMP_EPROTO);
        ck_assert_msg(strstr(why, "at offset"), "%s", why);
        free(text);
    }
    /* MessagePack: the same arity error, from an array16 of one HELLO and 10,000 empty arrays. */
    size_t n = 12 + EXTRA;
    unsigned char *mp = malloc(n);
    ck_assert_ptr_nonnull(mp);
    memcpy(mp, "\xdc\x27\x13\x01\xa6realm1\x80", 12);
    memset(mp + 12, 0x90, n - 12);
    wamp_msg m;
    char why[WAMP_WHY_LEN];
    size_t before = alloc_count_json();
    ck_assert_int_eq(wamp_msg_parse_bytes_fields(WAMP_SER_MSGPACK, mp, n, &m, why, sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_str_eq(why, "HELLO: expected 3 elements, got 10003");
    ck_assert_uint_lt(alloc_count_json() - before, 100);
    free(mp);
}

END_TEST

/* text: head, then n times unit, then tail (malloc'd; its length in *len). */
static char *repeat(const char *head, const char *unit, size_t n, const char *tail, size_t *len)
{
    size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
    char *s = malloc(h + u * n + t + 1);
    ck_assert_ptr_nonnull(s);
    memcpy(s, head, h);
    for (size_t i = 0; i < n; i++) {
        memcpy(s + h + u * i, unit, u);
    }
    memcpy(s + h + u * n, tail, t + 1);
    *len = h + u * n + t;
    return s;
}

/* Details/Options hold at most WAMP_MSG_VALUES_MAX values (the dict, the list in it and its
 * empty lists here), in both parses and both serializers, and so does a payload decoded for the
 * router's own procedures: the jansson values built for a message stay bounded whatever its
 * size. A list or dict where an id or a URI belongs is not built at all, and is refused as any
 * other value there. */
START_TEST(test_envelope_values_bounded)
{
    const size_t fits = WAMP_MSG_VALUES_MAX - 2; /* + the dict and its list */
    char why[WAMP_WHY_LEN];
    wamp_msg m;
    for (size_t extra = 0; extra < 2; extra++) {
        size_t len;
        char *text = repeat("[1,\"realm1\",{\"x\":[[]", ",[]", fits - 1 + extra, "]}]", &len);
        /* JSON, read into fields and through the full parse */
        wamp_err want = extra ? WAMP_EPROTO : WAMP_OK;
        ck_assert_int_eq(
                wamp_msg_parse_bytes_fields(WAMP_SER_JSON, text, len, &m, why, sizeof(why)), want);
        if (!extra) {
            ck_assert_uint_eq(json_array_size(json_object_get(m.dict, "x")), fits);
            wamp_msg_fini(&m);
        } else {
            ck_assert_str_eq(why, "HELLO: element 2 (Details) holds more than 131072 values");
        }
        ck_assert_int_eq(wamp_msg_parse_bytes(WAMP_SER_JSON, text, len, &m, why, sizeof(why)),
                         want);
        if (!extra) {
            wamp_msg_fini(&m);
        }
        free(text);
        /* MessagePack: [1, "realm1", {"x": [[], ...]}] with an array32 */
        size_t n = fits + extra, mlen = 17 + n;
        unsigned char *mp = malloc(mlen);
        ck_assert_ptr_nonnull(mp);
        memcpy(mp, "\x93\x01\xa6realm1\x81\xa1x\xdd", 13);
        for (int b = 0; b < 4; b++) {
            mp[13 + b] = (unsigned char)(n >> (24 - 8 * b));
        }
        memset(mp + 17, 0x90, n);
        ck_assert_int_eq(
                wamp_msg_parse_bytes_fields(WAMP_SER_MSGPACK, mp, mlen, &m, why, sizeof(why)),
                want);
        if (!extra) {
            wamp_msg_fini(&m);
        } else {
            ck_assert_str_eq(why, "HELLO: element 2 (Details) holds more than 131072 values");
        }
        free(mp);
    }
    /* A message of a million empty lists in its Options builds no more than the bound: about
     * four jansson allocations a value (an empty list is two, and the list holding them grows),
     * where the million would take four million. */
    alloc_count_install();
    size_t len;
    char *text = repeat("[16,1,{\"x\":[[]", ",[]", 1000000, "]},\"a.b\"]", &len);
    size_t before = alloc_count_json();
    ck_assert_int_eq(wamp_msg_parse_bytes_fields(WAMP_SER_JSON, text, len, &m, why, sizeof(why)),
                     WAMP_EPROTO);
    ck_assert_uint_le(alloc_count_json() - before, 5 * (size_t)WAMP_MSG_VALUES_MAX);
    free(text);

    /* Where an id or the URI belongs: not built, refused as a null would be. */
    static const struct {
        const char *as_null, *head, *tail;
    } places[] = {{"[16,null,{},\"a.b\"]", "[16,[[]", "],{},\"a.b\"]"},
                  {"[16,1,{},null]", "[16,1,{},{\"k\":[[]", "]}]"}};

    for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
        char null_why[WAMP_WHY_LEN];
        ck_assert_int_eq(wamp_msg_parse_bytes(WAMP_SER_JSON, places[i].as_null,
                                              strlen(places[i].as_null), &m, null_why,
                                              sizeof(null_why)),
                         WAMP_EPROTO);
        text = repeat(places[i].head, ",[]", 10000, places[i].tail, &len);
        before = alloc_count_json();
        ck_assert_int_eq(wamp_msg_parse_bytes(WAMP_SER_JSON, text, len, &m, why, sizeof(why)),
                         WAMP_EPROTO);
        ck_assert_uint_lt(alloc_count_json() - before, 100);
        ck_assert_str_eq(why, null_why);
        free(text);
    }
    /* A payload decoded for a router procedure: the same bound, per payload. */
    for (size_t extra = 0; extra < 2; extra++) {
        text = repeat("[48,1,{},\"wamp.session.list\",[[]", ",[]", WAMP_MSG_VALUES_MAX - 2 + extra,
                      "]]", &len);
        ck_assert_int_eq(
                wamp_msg_parse_bytes_fields(WAMP_SER_JSON, text, len, &m, why, sizeof(why)),
                WAMP_OK);
        ck_assert_int_eq(wamp_msg_decode_payload(&m, why, sizeof(why)),
                         extra ? WAMP_EPROTO : WAMP_OK);
        ck_assert(extra ? m.args == NULL : json_array_size(m.args) == WAMP_MSG_VALUES_MAX - 1);
        wamp_msg_fini(&m);
        free(text);
    }
}

END_TEST

/* One shared integer per known code, the first element of the lists wamp_msg_make_root()
 * makes. */
START_TEST(test_code_values_shared)
{
    json_t *call = wamp_msg_code_value(WAMP_MSG_CALL);
    ck_assert_int_eq(json_integer_value(call), WAMP_MSG_CALL);
    json_t *again = wamp_msg_code_value(WAMP_MSG_CALL);
    ck_assert_ptr_eq(again, call);
    ck_assert_ptr_null(wamp_msg_code_value(7));
    ck_assert_ptr_null(wamp_msg_code_value(-1));
    ck_assert_ptr_null(wamp_msg_code_value(WAMP_MSG_TYPE_MAX + 1));
    static const char text[] = "[48,1,{},\"a.b\"]";
    wamp_msg m;
    ck_assert_int_eq(wamp_msg_parse_bytes_fields(WAMP_SER_JSON, text, strlen(text), &m, NULL, 0),
                     WAMP_OK);
    ck_assert_int_eq(wamp_msg_make_root(&m), WAMP_OK);
    ck_assert_ptr_eq(json_array_get(m.root, 0), call);
    wamp_msg_fini(&m);
    ck_assert_int_eq(json_integer_value(call), WAMP_MSG_CALL);
    json_decref(again);
    json_decref(call);
}

END_TEST

/* A URI as long as the inline buffer or longer takes the full parse (a list); one byte shorter
 * is read into fields. */
START_TEST(test_parse_fields_long_uri)
{
    char uri[WAMP_MSG_URI_INLINE + 1];
    char text[WAMP_MSG_URI_INLINE + 32];
    for (size_t n = WAMP_MSG_URI_INLINE - 1; n <= WAMP_MSG_URI_INLINE; n++) {
        memset(uri, 'u', n);
        uri[n] = '\0';
        snprintf(text, sizeof(text), "[48,7,{\"x\":[1]},\"%s\",[]]", uri);
        ck_assert(fields_agree(text, WAMP_SER_JSON) == (n < WAMP_MSG_URI_INLINE));
        ck_assert(fields_agree(text, WAMP_SER_MSGPACK) == (n < WAMP_MSG_URI_INLINE));
    }
}

END_TEST

static Suite *wamp_msg_suite(void)
{
    Suite *s = suite_create("wamp_msg");
    TCase *tc = tcase_create("parse");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_parse_valid, 0,
                        (int)(sizeof(valid_cases) / sizeof(valid_cases[0])));
    tcase_add_loop_test(tc, test_parse_reject, 0,
                        (int)(sizeof(reject_cases) / sizeof(reject_cases[0])));
    tcase_add_loop_test(tc, test_parse_bad_ids, 0, (int)(sizeof(bad_ids) / sizeof(bad_ids[0])));
    tcase_add_test(tc, test_built_empty_dicts_shared);
    tcase_add_test(tc, test_parsed_empty_dicts_shared);
    tcase_add_test(tc, test_parse_id_bounds);
    tcase_add_test(tc, test_parse_why_exact_and_optional);
    tcase_add_test(tc, test_parse_null_root);
    tcase_add_test(tc, test_parse_success_owns_root);
    tcase_add_test(tc, test_parse_fields_agrees);
    tcase_add_test(tc, test_parse_fields_long_uri);
    tcase_add_test(tc, test_parse_fields_msgpack_forms);
    tcase_add_test(tc, test_code_values_shared);
    tcase_add_test(tc, test_refused_elements_not_built);
    tcase_add_test(tc, test_envelope_values_bounded);
    suite_add_tcase(s, tc);

    tc = tcase_create("names_builders");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_type_names);
    tcase_add_test(tc, test_builders_router_side);
    tcase_add_test(tc, test_builders_client_side);
    tcase_add_test(tc, test_builders_consume_on_failure);
    tcase_add_test(tc, test_builders_oom);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wamp_msg_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
