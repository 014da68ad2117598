/* fuzz_cbor.c: the CBOR token reader on arbitrary bytes. Properties: never crashes or leaks;
 * what it accepts, the transcoder writes as MessagePack and JSON that read back as valid and
 * come back to the same CBOR (preferred serialization, by way of MessagePack, which carries
 * every value exactly); the jansson builder agrees with the reader (it accepts, or refuses only
 * for a value jansson cannot hold or a duplicate key); what the reader refuses, the transcoder
 * refuses too.
 * As a message, the receive path's parse into fields agrees with the full parse
 * (fuzz_parse_fields()). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "fuzz.h"
#include "wamp_codec.h"
#include "wamp_rd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        ready = sodium_init() >= 0;
    }
    fuzz_parse_fields(WAMP_SER_CBOR, data, size);
    wamp_err valid = wamp_rd_validate(WAMP_SER_CBOR, data, size, NULL, 0);
    wamp_err err;
    wamp_buf *mp = fuzz_transcode(WAMP_SER_CBOR, data, size, WAMP_SER_MSGPACK, &err);
    wamp_buf *js = fuzz_transcode(WAMP_SER_CBOR, data, size, WAMP_SER_JSON, &err);
    json_t *v = NULL;
    wamp_err dec = wamp_codec_decode_value(WAMP_SER_CBOR, data, size, &v, NULL, 0);
    if (valid != WAMP_OK) {
        FUZZ_CHECK(valid == WAMP_EPROTO && !mp && !js && dec == WAMP_EPROTO && !v);
        return 0;
    }
    FUZZ_CHECK(mp && js);
    FUZZ_CHECK(dec == WAMP_OK || dec == WAMP_ERANGE || dec == WAMP_EPROTO);
    FUZZ_CHECK(wamp_rd_validate(WAMP_SER_MSGPACK, wamp_buf_cdata(mp), wamp_buf_len(mp), NULL, 0) ==
               WAMP_OK);
    FUZZ_CHECK(wamp_rd_validate(WAMP_SER_JSON, wamp_buf_cdata(js), wamp_buf_len(js), NULL, 0) ==
               WAMP_OK);
    /* CBOR -> MessagePack -> CBOR is the preferred serialization of the input: once more
     * through MessagePack, it stays the same bytes. */
    wamp_buf *c1 = fuzz_transcode(WAMP_SER_MSGPACK, wamp_buf_cdata(mp), wamp_buf_len(mp),
                                  WAMP_SER_CBOR, &err);
    FUZZ_CHECK(c1);
    wamp_buf *mp2 = fuzz_transcode(WAMP_SER_CBOR, wamp_buf_cdata(c1), wamp_buf_len(c1),
                                   WAMP_SER_MSGPACK, &err);
    FUZZ_CHECK(mp2 && fuzz_buf_equal(mp2, mp));
    if (v) {
        /* The jansson value through the jansson encoder and back (compared as JSON text:
         * json_equal() does not see NUL bytes in keys). */
        wamp_buf *enc = NULL;
        FUZZ_CHECK(wamp_codec_encode(WAMP_SER_CBOR, v, &enc) == WAMP_OK);
        json_t *back = NULL;
        FUZZ_CHECK(wamp_codec_decode(WAMP_SER_CBOR, wamp_buf_cdata(enc), wamp_buf_len(enc), &back,
                                     NULL, 0) == WAMP_OK);
        char *t1 = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
        char *t2 = json_dumps(back, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
        FUZZ_CHECK(t1 && t2 && strcmp(t1, t2) == 0);
        free(t1);
        free(t2);
        json_decref(back);
        wamp_buf_unref(&enc);
        json_decref(v);
    }
    wamp_buf_unref(&mp2);
    wamp_buf_unref(&c1);
    wamp_buf_unref(&mp);
    wamp_buf_unref(&js);
    return 0;
}
