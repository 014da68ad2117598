/* fuzz_msgpack.c: the MessagePack decoder on arbitrary bytes. Properties: never crashes or
 * leaks; what it accepts round-trips through both encoders; and the streaming transcoder
 * (wamp_wr_transcode, used for get_trace_data pages on bytes the decoder accepted) turns every
 * accepted input into JSON that decodes to the same value. On input the decoder refuses, the
 * transcoder is only required not to crash (it does not re-validate UTF-8 or duplicate keys).
 * As a message, the receive path's parse into fields agrees with the full parse
 * (fuzz_parse_fields()). */
#include <stdbool.h>

#include <jansson.h>
#include <sodium.h>

#include "fuzz.h"
#include "wamp_codec.h"
#include "wamp_msg.h"

/* The transcoder's JSON for data, decoded (NULL when it refused the input or, with
 * must_decode false, wrote JSON that does not decode). */
static json_t *transcoded(const uint8_t *data, size_t size, bool must_decode)
{
    wamp_err err;
    wamp_buf *out = fuzz_transcode(WAMP_SER_MSGPACK, data, size, WAMP_SER_JSON, &err);
    if (err != WAMP_OK) {
        FUZZ_CHECK(err == WAMP_EPROTO);
        return NULL;
    }
    json_t *v = NULL;
    err = wamp_codec_decode(WAMP_SER_JSON, wamp_buf_cdata(out), wamp_buf_len(out), &v, NULL, 0);
    FUZZ_CHECK(err == WAMP_OK || !must_decode);
    wamp_buf_unref(&out);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        ready = sodium_init() >= 0;
    }
    fuzz_parse_fields(WAMP_SER_MSGPACK, data, size);
    json_t *v = NULL;
    char why[WAMP_WHY_LEN];
    wamp_err err = wamp_codec_decode(WAMP_SER_MSGPACK, data, size, &v, why, sizeof(why));
    json_t *t = transcoded(data, size, err == WAMP_OK);
    if (err != WAMP_OK) {
        FUZZ_CHECK(v == NULL);
        json_decref(t);
        return 0;
    }
    FUZZ_CHECK(t != NULL && json_equal(t, v));
    json_decref(t);
    fuzz_round_trip(WAMP_SER_MSGPACK, v);
    fuzz_round_trip(WAMP_SER_JSON, v);
    wamp_msg m;
    if (wamp_msg_parse(v, &m, why, sizeof(why)) == WAMP_OK) { /* consumes v */
        wamp_msg_fini(&m);
    }
    return 0;
}
