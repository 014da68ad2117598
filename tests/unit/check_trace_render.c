/* check_trace_render.c: records, metadata and periods as JSON (mgmt/README.md), payload stripping,
 * and secrets: redacted in the output and absent from the stored bytes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "trace.h"
#include "trace_hub.h"
#include "trace_record.h"
#include "trace_render.h"
#include "trace_store.h"
#include "wamp_codec.h"
#include "wamp_types.h"
#include "wamp_wr.h"

#define PC0 ((uint64_t)129852050601509u)     /* 129852.050601509 s */
#define TS0 ((uint64_t)1502829396597845600u) /* 2017-08-15T20:36:36.597Z */
#define MS  ((uint64_t)1000000u)

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    ck_assert_msg(j != NULL, "bad test JSON %s: %s", text, jerr.text);
    return j;
}

static void assert_json_eq(const json_t *got, const char *expect_text)
{
    json_t *expect = load(expect_text);
    char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    ck_assert_msg(json_equal(got, expect), "got %s, expected %s", g, expect_text);
    free(g);
    json_decref(expect);
}

static bool contains(const unsigned char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++) {
        if (memcmp(hay + i, needle, k) == 0) {
            return true;
        }
    }
    return false;
}

/* A record of msg (JSON text) encoded in ser. */
static trace_record rec_of(const char *msg_text, wamp_ser ser)
{
    trace_record r;
    memset(&r, 0, sizeof(r));
    json_t *m = load(msg_text);
    ck_assert_int_eq(wamp_codec_encode(ser, m, &r.wire), WAMP_OK);
    r.msg_type = (uint8_t)json_integer_value(json_array_get(m, 0));
    json_decref(m);
    r.wire_ser = (uint8_t)ser;
    r.ser_bytes[ser] = (uint32_t)wamp_buf_len(r.wire);
    r.dir = TRACE_RX;
    return r;
}

START_TEST(test_record_every_field)
{
    static const uint8_t corr[TRACE_UUID_LEN] = {0xd5, 0xd9, 0xbc, 0xec, 0xa3, 0xeb, 0x4f, 0x0e,
                                                 0x87, 0x5b, 0x69, 0x33, 0x68, 0x0b, 0xb5, 0x46};
    trace_record r = rec_of("[36,5,6,{},[\"x\"],{\"k\":1}]", WAMP_SER_MSGPACK);
    r.seq = 4;
    r.pc_ns = PC0;
    r.ts_ns = TS0;
    r.dir = TRACE_TX;
    r.msg_type = WAMP_MSG_EVENT;
    r.peer = trace_peer_new(1457801355183687u, "realm1", "E4MW-VYUX", "anonymous");
    r.uri = trace_str_new("com.example.oncounter");
    memcpy(r.corr, corr, sizeof(corr));
    r.flags = TRACE_CORR_HAS | TRACE_CORR_ANCHOR;
    r.ser_bytes[WAMP_SER_JSON] = 118;
    json_t *o = trace_render_record(&r, true);
    ck_assert_ptr_nonnull(o);
    ck_assert_uint_eq(json_object_size(o), 15); /* no "dropped" */
    ck_assert_int_eq(json_integer_value(json_object_get(o, "seq")), 4);
    ck_assert(fabs(json_real_value(json_object_get(o, "pc")) - 129852.050601509) < 1e-9);
    ck_assert(fabs(json_real_value(json_object_get(o, "ts")) - 1502829396.5978456) < 1e-6);
    json_object_del(o, "pc");
    json_object_del(o, "ts");
    char mp_len[64];
    snprintf(mp_len, sizeof(mp_len), "%u", (unsigned)wamp_buf_len(r.wire));
    char expect[1024];
    snprintf(expect, sizeof(expect),
             "{\"seq\": 4, \"direction\": \"tx\", \"msg_type\": \"Event\", \"realm\": \"realm1\", "
             "\"session_id\": 1457801355183687, \"authid\": \"E4MW-VYUX\", "
             "\"authrole\": \"anonymous\", "
             "\"correlation\": \"d5d9bcec-a3eb-4f0e-875b-6933680bb546\", "
             "\"correlation_is_anchor\": true, \"correlation_is_last\": false, "
             "\"uri\": \"com.example.oncounter\", "
             "\"serializations\": {\"json\": 118, \"msgpack\": %s}, "
             "\"msg\": [36, 5, 6, {}, [\"x\"], {\"k\": 1}]}",
             mp_len);
    assert_json_eq(o, expect);
    json_decref(o);
    trace_record_fini(&r);
}

END_TEST

START_TEST(test_record_nulls_and_dropped)
{
    trace_record r = rec_of("[50,3,{}]", WAMP_SER_JSON);
    r.dir = TRACE_TX;
    r.dropped = "queue_full";
    /* No peer, no uri, no correlation. */
    json_t *o = trace_render_record(&r, true);
    ck_assert_uint_eq(json_object_size(o), 16);
    json_object_del(o, "pc");
    json_object_del(o, "ts");
    assert_json_eq(o, "{\"seq\": 0, \"direction\": \"tx\", \"msg_type\": \"Result\", "
                      "\"realm\": null, \"session_id\": null, \"authid\": null, "
                      "\"authrole\": null, \"correlation\": null, "
                      "\"correlation_is_anchor\": false, \"correlation_is_last\": false, "
                      "\"uri\": null, \"serializations\": {\"json\": 9}, \"msg\": [50, 3, {}], "
                      "\"dropped\": \"queue_full\"}");
    json_decref(o);
    /* No bytes at all: msg null, serializations empty. */
    wamp_buf_unref(&r.wire);
    memset(r.ser_bytes, 0, sizeof(r.ser_bytes));
    r.dropped = NULL;
    o = trace_render_record(&r, true);
    ck_assert(json_is_null(json_object_get(o, "msg")));
    ck_assert_uint_eq(json_object_size(json_object_get(o, "serializations")), 0);
    ck_assert_ptr_null(json_object_get(o, "dropped"));
    json_decref(o);
    trace_record_fini(&r);
}

END_TEST

START_TEST(test_payload_stripped_when_app_payload_false)
{
    static const struct {
        const char *full;
        const char *envelope;
    } cases[] = {
            {"[16,1,{},\"com.t\",[1],{\"a\":1}]", "[16,1,{},\"com.t\"]"},
            {"[16,1,{},\"com.t\",[1]]", "[16,1,{},\"com.t\"]"},
            {"[16,1,{},\"com.t\"]", "[16,1,{},\"com.t\"]"},
            {"[36,1,2,{},[1],{\"a\":1}]", "[36,1,2,{}]"},
            {"[48,1,{},\"com.p\",[],{\"a\":1}]", "[48,1,{},\"com.p\"]"},
            {"[50,1,{},[1]]", "[50,1,{}]"},
            {"[68,1,2,{},[1],{}]", "[68,1,2,{}]"},
            {"[70,1,{},[1],{}]", "[70,1,{}]"},
            {"[8,48,1,{},\"com.err\",[\"why\"],{}]", "[8,48,1,{},\"com.err\"]"},
            {"[32,1,{},\"com.t\"]", "[32,1,{},\"com.t\"]"},
            {"[1,\"realm1\",{\"roles\":{}}]", "[1,\"realm1\",{\"roles\":{}}]"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_MSGPACK; ser++) {
            trace_record r = rec_of(cases[i].full, (wamp_ser)ser);
            json_t *full = trace_render_record(&r, true);
            json_t *bare = trace_render_record(&r, false);
            assert_json_eq(json_object_get(full, "msg"), cases[i].full);
            assert_json_eq(json_object_get(bare, "msg"), cases[i].envelope);
            /* The stored bytes are the wire bytes either way. */
            ck_assert_uint_eq(wamp_buf_len(r.wire), r.ser_bytes[ser]);
            json_decref(full);
            json_decref(bare);
            trace_record_fini(&r);
        }
    }
}

END_TEST

START_TEST(test_binary_as_json_convention)
{
    /* MessagePack bin 01 02 03 decodes to the JSON binary convention "\0" + base64. */
    trace_record r = rec_of("[36,1,2,{},[\"\\u0000AQID\"]]", WAMP_SER_MSGPACK);
    ck_assert(contains(wamp_buf_cdata(r.wire), wamp_buf_len(r.wire), "\xc4\x03\x01\x02\x03"));
    json_t *o = trace_render_record(&r, true);
    const json_t *s = json_array_get(json_array_get(json_object_get(o, "msg"), 4), 0);
    ck_assert_uint_eq(json_string_length(s), 5);
    ck_assert_mem_eq(json_string_value(s), "\0AQID", 5);
    json_decref(o);
    trace_record_fini(&r);
}

END_TEST

START_TEST(test_uuid_and_time_formats)
{
    char buf[TRACE_UUID_STRLEN];
    uint8_t u[TRACE_UUID_LEN];
    for (int i = 0; i < 16; i++) {
        u[i] = (uint8_t)(i * 17);
    }
    trace_uuid_format(u, buf);
    ck_assert_str_eq(buf, "00112233-4455-6677-8899-aabbccddeeff");
    char iso[TRACE_ISO_LEN];
    trace_format_iso8601(TS0, iso);
    ck_assert_str_eq(iso, "2017-08-15T20:36:36.597Z");
    trace_format_iso8601(0, iso);
    ck_assert_str_eq(iso, "1970-01-01T00:00:00.000Z");
    trace_format_iso8601(951782400999999999u, iso); /* a leap day, 999.999999 ms truncated */
    ck_assert_str_eq(iso, "2000-02-29T00:00:00.999Z");
    ck_assert(trace_ns_to_seconds(1500000000u) == 1.5);
    ck_assert(fabs(trace_ns_to_seconds(PC0) - 129852.050601509) < 1e-9);
}

END_TEST

/* --- secrets, through the capture path ----------------------------------------------------- */

static trace_hub *hub_with_trace(trace **t)
{
    trace_hub *h = trace_hub_new(4, "mgmt");
    char why[128];
    ck_assert_int_eq(trace_hub_start(h, "t", NULL, PC0, TS0, t, why, sizeof(why)), WAMP_OK);
    return h;
}

/* Offers msg_text received in ser; parsed as the router would (msg NULL if it does not parse
 * as a WAMP message). Returns the stored record. */
static const trace_record *offer_rx(trace_hub *h, trace *t, const char *msg_text, wamp_ser ser,
                                    int ctx_type, wamp_buf **wire_out)
{
    json_t *m = load(msg_text);
    wamp_buf *wire = NULL;
    ck_assert_int_eq(wamp_codec_encode(ser, m, &wire), WAMP_OK);
    json_decref(m);
    wamp_msg parsed;
    bool ok = wamp_codec_decode_msg(ser, wamp_buf_cdata(wire), wamp_buf_len(wire), &parsed, NULL,
                                    0) == WAMP_OK;
    trace_ctx c = {.direction = TRACE_RX, .msg_type = ctx_type, .session_id = 5};
    trace_input in = {.pc_ns = PC0,
                      .ts_ns = TS0,
                      .ser = ser,
                      .bytes = wamp_buf_cdata(wire),
                      .len = wamp_buf_len(wire),
                      .msg = ok ? parsed.root : NULL};
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    if (ok) {
        wamp_msg_fini(&parsed);
    }
    *wire_out = wire;
    const trace_store *st = trace_get_store(t);
    static trace_record rec; /* read right away by the caller */
    return trace_store_get(st, trace_store_next_seq(st) - 1, &rec);
}

START_TEST(test_authenticate_signature_never_stored)
{
    trace *t;
    trace_hub *h = hub_with_trace(&t);
    for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_MSGPACK; ser++) {
        wamp_buf *wire;
        const trace_record *r = offer_rx(h, t, "[5,\"s3cr3t-signature\",{\"nonce\":\"n1\"}]",
                                         (wamp_ser)ser, WAMP_MSG_AUTHENTICATE, &wire);
        ck_assert(contains(wamp_buf_cdata(wire), wamp_buf_len(wire), "s3cr3t"));
        ck_assert_ptr_nonnull(r->wire);
        ck_assert_ptr_ne(r->wire, wire);
        size_t len;
        const void *data = trace_record_data(r, &len);
        ck_assert(!contains(data, len, "s3cr3t"));
        ck_assert_uint_eq(r->wire_ser, (unsigned)ser);
        /* serializations reports what crossed the wire. */
        ck_assert_uint_eq(r->ser_bytes[ser], wamp_buf_len(wire));
        json_t *o = trace_render_record(r, true);
        assert_json_eq(json_object_get(o, "msg"), "[5,\"***\",{\"nonce\":\"n1\"}]");
        ck_assert_str_eq(json_string_value(json_object_get(o, "msg_type")), "Authenticate");
        json_decref(o);
        wamp_buf_unref(&wire);
    }
    trace_hub_free(h);
}

END_TEST

START_TEST(test_challenge_extra_never_stored)
{
    trace *t;
    trace_hub *h = hub_with_trace(&t);
    json_t *m = load("[4,\"wampcra\",{\"challenge\":\"{\\\"nonce\\\":\\\"N0NCE\\\"}\","
                     "\"salt\":\"PEPPER\",\"iterations\":1000}]");
    wamp_buf *wire = NULL;
    ck_assert_int_eq(wamp_codec_encode(WAMP_SER_MSGPACK, m, &wire), WAMP_OK);
    trace_ctx c = {.direction = TRACE_TX, .msg_type = WAMP_MSG_CHALLENGE, .session_id = 5};
    trace_input in = {.pc_ns = PC0, .ts_ns = TS0, .ser = WAMP_SER_MSGPACK, .wire = wire, .msg = m};
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    /* The router's buffer was not kept (not even referenced). */
    ck_assert_uint_eq(wamp_buf_refs(wire), 1);
    const trace_record *r = trace_store_get(trace_get_store(t), 0, &(trace_record){0});
    ck_assert(!contains(wamp_buf_cdata(r->wire), wamp_buf_len(r->wire), "PEPPER"));
    ck_assert(!contains(wamp_buf_cdata(r->wire), wamp_buf_len(r->wire), "N0NCE"));
    ck_assert_uint_eq(r->ser_bytes[WAMP_SER_MSGPACK], wamp_buf_len(wire));
    json_t *o = trace_render_record(r, true);
    assert_json_eq(json_object_get(o, "msg"), "[4,\"wampcra\",\"***\"]");
    json_decref(o);
    /* The router's message itself is untouched. */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(m, 2), "salt")), "PEPPER");
    json_decref(m);
    wamp_buf_unref(&wire);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_malformed_and_undecodable_input)
{
    trace *t;
    trace_hub *h = hub_with_trace(&t);
    /* An AUTHENTICATE with the wrong arity does not parse: every field after the code goes. */
    wamp_buf *wire;
    const trace_record *r =
            offer_rx(h, t, "[5,\"s3cr3t\",{},\"more-s3cr3t\"]", WAMP_SER_JSON, 0, &wire);
    size_t len;
    const void *data = trace_record_data(r, &len);
    ck_assert(!contains(data, len, "s3cr3t"));
    json_t *o = trace_render_record(r, true);
    assert_json_eq(json_object_get(o, "msg"), "[5,\"***\",\"***\",\"***\"]");
    ck_assert_str_eq(json_string_value(json_object_get(o, "msg_type")), "Unknown");
    json_decref(o);
    wamp_buf_unref(&wire);
    /* Another malformed message is kept as received, and renders as its JSON value. */
    r = offer_rx(h, t, "[16,\"not-an-id\",{},\"com.t\"]", WAMP_SER_JSON, 0, &wire);
    data = trace_record_data(r, &len);
    ck_assert_uint_eq(len, wamp_buf_len(wire));
    ck_assert_mem_eq(data, wamp_buf_cdata(wire), wamp_buf_len(wire));
    o = trace_render_record(r, true);
    assert_json_eq(json_object_get(o, "msg"), "[16,\"not-an-id\",{},\"com.t\"]");
    json_decref(o);
    wamp_buf_unref(&wire);
    /* Bytes that do not decode at all are not kept (they could not be shown), but counted. */
    static const char garbage[] = "[5,\"s3cr3t";
    trace_ctx c = {.direction = TRACE_RX, .msg_type = 0, .session_id = 5};
    trace_input in = {.pc_ns = PC0,
                      .ts_ns = TS0,
                      .ser = WAMP_SER_JSON,
                      .bytes = garbage,
                      .len = sizeof(garbage) - 1};
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    r = trace_store_get(trace_get_store(t), 2, &(trace_record){0});
    ck_assert_ptr_null(r->wire);
    o = trace_render_record(r, true);
    ck_assert(json_is_null(json_object_get(o, "msg")));
    ck_assert_int_eq(
            json_integer_value(json_object_get(json_object_get(o, "serializations"), "json")),
            sizeof(garbage) - 1);
    json_decref(o);
    trace_hub_free(h);
}

END_TEST

/* --- metadata, pages, markers, periods ---------------------------------------------------- */

START_TEST(test_metadata)
{
    trace_hub *h = trace_hub_new(4, "mgmt");
    trace *t;
    char why[128];
    json_t *opts = load("{\"realms\": [\"realm1\"], \"limit\": 2}");
    ck_assert_int_eq(trace_hub_start(h, "t1", opts, PC0, TS0, &t, why, sizeof(why)), WAMP_OK);
    json_decref(opts);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(trace_mark(t, "m", NULL, PC0, TS0, &(uint64_t){0}), WAMP_OK);
    }
    json_t *meta = trace_render_meta(t, "node1", "router1", PC0 + 2500 * MS);
    ck_assert_uint_eq(json_object_size(meta), 15);
    ck_assert(fabs(json_real_value(json_object_get(meta, "runtime")) - 2.5) < 1e-9);
    json_object_del(meta, "runtime");
    const json_t *echo = json_object_get(meta, "options");
    ck_assert_int_eq(json_integer_value(json_object_get(echo, "limit")), 2);
    assert_json_eq(json_object_get(echo, "realms"), "[\"realm1\"]");
    ck_assert_uint_eq(json_object_size(echo), 17);
    json_object_del(meta, "options");
    char expect[600];
    snprintf(expect, sizeof(expect),
             "{\"id\": \"t1\", \"node_id\": \"node1\", \"worker_id\": \"router1\", "
             "\"status\": \"running\", \"started\": \"2017-08-15T20:36:36.597Z\", "
             "\"ended\": null, \"first_seq\": 1, \"next_seq\": 3, \"records\": 2, "
             "\"dropped\": 1, \"bytes\": %llu, \"persistent_id\": null, \"stop_reason\": null}",
             (unsigned long long)trace_store_bytes(trace_get_store(t)));
    assert_json_eq(meta, expect);
    json_decref(meta);
    trace_hub_stop(h, "t1", PC0 + 4000 * MS, TS0 + 4000 * MS, NULL);
    meta = trace_render_meta(t, NULL, NULL, PC0 + 9000 * MS);
    ck_assert(fabs(json_real_value(json_object_get(meta, "runtime")) - 4.0) < 1e-9);
    ck_assert_str_eq(json_string_value(json_object_get(meta, "status")), "stopped");
    ck_assert_str_eq(json_string_value(json_object_get(meta, "ended")), "2017-08-15T20:36:40.597Z");
    ck_assert_str_eq(json_string_value(json_object_get(meta, "stop_reason")), "stopped");
    ck_assert(json_is_null(json_object_get(meta, "node_id")));
    json_decref(meta);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_pages_and_markers)
{
    trace_hub *h = trace_hub_new(4, "mgmt");
    trace *t;
    char why[128];
    json_t *opts = load("{\"trace_app_payload\": false}");
    ck_assert_int_eq(trace_hub_start(h, "t", opts, PC0, TS0, &t, why, sizeof(why)), WAMP_OK);
    json_decref(opts);
    json_t *meta = load("{\"who\": \"ops\", \"args\": [1, 2]}");
    uint64_t seq;
    ck_assert_int_eq(trace_mark(t, "deploy", meta, PC0 + MS, TS0 + MS, &seq), WAMP_OK);
    json_decref(meta);
    static const char pub[] = "[16,1,{},\"com.t\",[1,2,3]]";
    trace_ctx c = {.direction = TRACE_RX, .msg_type = WAMP_MSG_PUBLISH, .session_id = 5};
    trace_input in = {
            .pc_ns = PC0, .ts_ns = TS0, .ser = WAMP_SER_JSON, .bytes = pub, .len = sizeof(pub) - 1};
    for (int i = 0; i < 5; i++) {
        trace_hub_on_message(h, &c, &in);
    }
    json_t *page = trace_render_records(t, 0, TRACE_SEQ_NONE, 2);
    ck_assert_uint_eq(json_array_size(page), 2);
    json_t *m = json_array_get(page, 0);
    json_object_del(m, "pc");
    json_object_del(m, "ts");
    /* A marker keeps its meta whole (payload stripping is for messages). */
    assert_json_eq(m, "{\"seq\": 0, \"direction\": null, \"msg_type\": \"Marker\", "
                      "\"realm\": null, \"session_id\": null, \"authid\": null, "
                      "\"authrole\": null, \"correlation\": null, "
                      "\"correlation_is_anchor\": false, \"correlation_is_last\": false, "
                      "\"uri\": \"deploy\", \"serializations\": {}, "
                      "\"msg\": {\"who\": \"ops\", \"args\": [1, 2]}}");
    /* The trace's trace_app_payload applies to pages. */
    assert_json_eq(json_object_get(json_array_get(page, 1), "msg"), "[16,1,{},\"com.t\"]");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(page, 1), "session_id")), 5);
    json_decref(page);
    page = trace_render_records(t, 3, 4, 100);
    ck_assert_uint_eq(json_array_size(page), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(page, 1), "seq")), 4);
    json_decref(page);
    page = trace_render_records(t, 6, TRACE_SEQ_NONE, 100);
    ck_assert_uint_eq(json_array_size(page), 0);
    json_decref(page);
    trace_hub_free(h);
}

END_TEST

START_TEST(test_period_render)
{
    trace_batch b = {.period = 3,
                     .first_seq = 10,
                     .last_seq = 12,
                     .period_start_ns = TS0,
                     .finished_ns = TS0 + 200 * MS};
    json_t *o = trace_render_batch(&b);
    assert_json_eq(o, "{\"period\": 3, \"first_seq\": 10, \"last_seq\": 12, "
                      "\"period_start\": \"2017-08-15T20:36:36.597Z\", "
                      "\"finished_ts\": \"2017-08-15T20:36:36.797Z\"}");
    json_decref(o);
}

END_TEST

/* --- pages written straight to the wire ---------------------------------------------------- */

/* trace_render_records_to() in JSON, MessagePack and CBOR decodes to exactly the tree that
 * trace_render_records() builds, for every kind of record: both serializers' stored bytes (the
 * one copied as it is, the other transcoded), binary payloads, stripped payloads, secrets,
 * malformed and undecodable input, markers, dropped tx records, peers and correlation. */
static void assert_wire_pages_equal_tree(const trace *t)
{
    json_t *tree = trace_render_records(t, 0, TRACE_SEQ_NONE, 1000);
    ck_assert_ptr_nonnull(tree);
    ck_assert_uint_ge(json_array_size(tree), 10);
    for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_CBOR; ser++) {
        wamp_wr w;
        wamp_wr_init(&w, ser, 16, 0);
        trace_render_records_to(t, 0, TRACE_SEQ_NONE, 1000, &w);
        wamp_buf *out = NULL;
        ck_assert_int_eq(wamp_wr_finish_buf(&w, &out), WAMP_OK);
        wamp_wr_fini(&w);
        json_t *back = NULL;
        char why[128] = "";
        ck_assert_msg(wamp_codec_decode((wamp_ser)ser, wamp_buf_cdata(out), wamp_buf_len(out),
                                        &back, why, sizeof(why)) == WAMP_OK,
                      "ser %d: %s", ser, why);
        char *g = json_dumps(back, JSON_COMPACT | JSON_SORT_KEYS);
        char *e = json_dumps(tree, JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_msg(json_equal(back, tree), "ser %d:\n got %.1500s\nwant %.1500s", ser, g, e);
        free(g);
        free(e);
        json_decref(back);
        /* A page larger than the limit is refused, not cut. */
        wamp_wr_init(&w, ser, 16, wamp_buf_len(out) - 1);
        trace_render_records_to(t, 0, TRACE_SEQ_NONE, 1000, &w);
        wamp_buf *cut = NULL;
        ck_assert_int_eq(wamp_wr_finish_buf(&w, &cut), WAMP_ETOOBIG);
        ck_assert_ptr_null(cut);
        wamp_wr_fini(&w);
        wamp_buf_unref(&out);
    }
    json_decref(tree);
}

START_TEST(test_wire_pages_equal_tree)
{
    static const uint8_t corr[TRACE_UUID_LEN] = {1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13};
    static const char *const msgs[] = {
            "[16,1,{\"acknowledge\":true},\"com.t\",[1,\"\\u0000AAEC\",{\"x\":[true,null]}],"
            "{\"k\":\"\\u00e9\\n\\\"q\\\"\"}]",
            "[48,7,{},\"com.p\",[2.5,-3,9007199254740992]]",
            "[70,7,{},[\"ok\"]]",
            "[5,\"s3cr3t-signature\",{\"nonce\":\"n1\"}]",
            "[16,\"not-an-id\",{},\"com.t\"]",
            "[1,\"realm1\",{\"roles\":{\"caller\":{}}}]",
    };
    for (int payload = 0; payload <= 1; payload++) {
        trace_hub *h = trace_hub_new(4, "mgmt");
        trace *t;
        char why[128];
        json_t *opts = json_pack("{s:b}", "trace_app_payload", payload);
        ck_assert_int_eq(trace_hub_start(h, "t", opts, PC0, TS0, &t, why, sizeof(why)), WAMP_OK);
        json_decref(opts);
        json_t *meta = load("{\"who\": \"ops\", \"bin\": \"\\u0000AQI=\", \"n\": [1, 2]}");
        uint64_t seq;
        ck_assert_int_eq(trace_mark(t, "deploy \"v2\"", meta, PC0, TS0, &seq), WAMP_OK);
        json_decref(meta);
        trace_peer *peer = trace_peer_new(77, "realm1", "alice", "user\tröle");
        for (int ser = WAMP_SER_JSON; ser <= WAMP_SER_CBOR; ser++) {
            for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
                json_t *m = load(msgs[i]);
                wamp_buf *wire = NULL;
                ck_assert_int_eq(wamp_codec_encode((wamp_ser)ser, m, &wire), WAMP_OK);
                json_decref(m);
                wamp_msg parsed;
                bool ok = wamp_codec_decode_msg((wamp_ser)ser, wamp_buf_cdata(wire),
                                                wamp_buf_len(wire), &parsed, NULL, 0) == WAMP_OK;
                trace_ctx c = {.direction = (i % 2) ? TRACE_TX : TRACE_RX,
                               .msg_type = ok ? (int)parsed.type : 0,
                               .session_id = 77,
                               .uri = i == 1 ? "com.p" : NULL};
                trace_input in = {.pc_ns = PC0 + i * MS,
                                  .ts_ns = TS0 + i * MS,
                                  .peer = peer,
                                  .ser = (wamp_ser)ser,
                                  .correlation = i < 3 ? corr : NULL,
                                  .correlation_is_anchor = i == 0,
                                  .correlation_is_last = i == 2,
                                  .wire = (i % 2) ? wire : NULL,
                                  .bytes = wamp_buf_cdata(wire),
                                  .len = wamp_buf_len(wire),
                                  .msg = ok ? parsed.root : NULL,
                                  .dropped = i == 3 ? "queue_full" : NULL};
                in.ser_bytes[ser] = (uint32_t)wamp_buf_len(wire);
                ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
                if (ok) {
                    wamp_msg_fini(&parsed);
                }
                wamp_buf_unref(&wire);
            }
        }
        static const char garbage[] = "[5,\"s3cr3t";
        trace_ctx c = {.direction = TRACE_RX, .msg_type = 0, .session_id = 77};
        trace_input in = {.pc_ns = PC0,
                          .ts_ns = TS0,
                          .ser = WAMP_SER_JSON,
                          .bytes = garbage,
                          .len = sizeof(garbage) - 1};
        ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
        trace_peer_unref(&peer);
        assert_wire_pages_equal_tree(t);
        trace_hub_free(h);
    }
}

END_TEST

/* What jansson cannot hold renders exactly on the wire: a CBOR record with 2^64-1, a NUL in a
 * key and binary, read as a JSON page (and as a CBOR page: the record's own bytes). */
START_TEST(test_wire_page_exact_payload)
{
    trace_hub *h = trace_hub_new(4, "mgmt");
    trace *t;
    char why[128];
    json_t *opts = json_pack("{s:b}", "trace_app_payload", 1);
    ck_assert_int_eq(trace_hub_start(h, "t", opts, PC0, TS0, &t, why, sizeof(why)), WAMP_OK);
    json_decref(opts);
    /* [36, 5, 6, {"ppt_scheme": "x"}, [2^64-1, "a\0b"], {"k\0": h'0102'}] */
    static const unsigned char ev[] = "\x86\x18\x24\x05\x06\xa1\x6appt_scheme\x61x"
                                      "\x82\x1b\xff\xff\xff\xff\xff\xff\xff\xff\x63"
                                      "a\x00"
                                      "b\xa1\x62k\x00\x42\x01\x02";
    wamp_msg m; /* as the router hands it over: parsed, the payload as bytes */
    ck_assert_int_eq(wamp_codec_decode_msg(WAMP_SER_CBOR, ev, sizeof(ev) - 1, &m, why, sizeof(why)),
                     WAMP_OK);
    trace_ctx c = {.direction = TRACE_RX, .msg_type = WAMP_MSG_EVENT, .session_id = 9};
    trace_input in = {.pc_ns = PC0,
                      .ts_ns = TS0,
                      .ser = WAMP_SER_CBOR,
                      .bytes = ev,
                      .len = sizeof(ev) - 1,
                      .msg = m.root};
    ck_assert_uint_eq(trace_hub_on_message(h, &c, &in), 1);
    wamp_msg_fini(&m);
    wamp_wr w;
    wamp_wr_init(&w, WAMP_SER_JSON, 16, 0);
    trace_render_records_to(t, 0, TRACE_SEQ_NONE, 10, &w);
    wamp_buf *out = NULL;
    ck_assert_int_eq(wamp_wr_finish_buf(&w, &out), WAMP_OK);
    wamp_wr_fini(&w);
    ck_assert_msg(contains(wamp_buf_cdata(out), wamp_buf_len(out),
                           "\"msg\":[36,5,6,{\"ppt_scheme\":\"x\"},[18446744073709551615,"
                           "\"a\\u0000b\"],{\"k\\u0000\":\"\\u0000AQI=\"}]"),
                  "%.*s", (int)wamp_buf_len(out), wamp_buf_cdata(out));
    ck_assert(contains(wamp_buf_cdata(out), wamp_buf_len(out), "\"serializations\":{\"cbor\":"));
    wamp_buf_unref(&out);
    wamp_wr_init(&w, WAMP_SER_CBOR, 16, 0);
    trace_render_records_to(t, 0, TRACE_SEQ_NONE, 10, &w);
    ck_assert_int_eq(wamp_wr_finish_buf(&w, &out), WAMP_OK);
    wamp_wr_fini(&w);
    ck_assert(wamp_buf_len(out) > sizeof(ev) - 1);
    bool found = false;
    for (size_t i = 0; !found && i + sizeof(ev) - 1 <= wamp_buf_len(out); i++) {
        found = memcmp(wamp_buf_cdata(out) + i, ev, sizeof(ev) - 1) == 0;
    }
    ck_assert_msg(found, "the CBOR page holds the record's bytes as they came");
    wamp_buf_unref(&out);
    trace_hub_free(h);
}

END_TEST

static Suite *trace_render_suite(void)
{
    Suite *s = suite_create("trace_render");
    TCase *rec = tcase_create("record");
    tcase_set_timeout(rec, 10);
    tcase_add_test(rec, test_record_every_field);
    tcase_add_test(rec, test_record_nulls_and_dropped);
    tcase_add_test(rec, test_payload_stripped_when_app_payload_false);
    tcase_add_test(rec, test_binary_as_json_convention);
    tcase_add_test(rec, test_uuid_and_time_formats);
    suite_add_tcase(s, rec);
    TCase *sec = tcase_create("secrets");
    tcase_set_timeout(sec, 10);
    tcase_add_test(sec, test_authenticate_signature_never_stored);
    tcase_add_test(sec, test_challenge_extra_never_stored);
    tcase_add_test(sec, test_malformed_and_undecodable_input);
    suite_add_tcase(s, sec);
    TCase *meta = tcase_create("metadata");
    tcase_set_timeout(meta, 10);
    tcase_add_test(meta, test_metadata);
    tcase_add_test(meta, test_pages_and_markers);
    tcase_add_test(meta, test_period_render);
    tcase_add_test(meta, test_wire_pages_equal_tree);
    tcase_add_test(meta, test_wire_page_exact_payload);
    suite_add_tcase(s, meta);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trace_render_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
