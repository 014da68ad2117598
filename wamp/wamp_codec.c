/* wamp_codec.c: serializer dispatch (the serializers live in wamp_json.c, wamp_msgpack.c and
 * wamp_cbor.c) and the jansson builder over the token reader (wamp_rd.c). */
#include "wamp_codec.h"

#include <stdio.h>
#include <string.h>

#include "wamp_cbor.h"
#include "wamp_json.h"
#include "wamp_msgpack.h"
#include "wamp_rd.h"

wamp_err wamp_codec_decode(wamp_ser ser, const void *data, size_t len, json_t **out, char *why,
                           size_t why_len)
{
    if (!out) {
        return WAMP_EINVAL;
    }
    *out = NULL;
    if (!data && len) {
        return WAMP_EINVAL;
    }
    switch (ser) {
    case WAMP_SER_JSON:
        return wamp_json_decode(data ? data : "", len, out, why, why_len);
    case WAMP_SER_MSGPACK:
        return wamp_msgpack_decode(data, len, out, why, why_len);
    case WAMP_SER_CBOR: {
        wamp_err err = wamp_codec_decode_value(ser, data, len, out, why, why_len);
        return err == WAMP_ERANGE ? WAMP_EPROTO : err;
    }
    }
    if (why && why_len) {
        snprintf(why, why_len, "unknown serializer %d", (int)ser);
    }
    return WAMP_EINVAL;
}

wamp_err wamp_codec_decode_msg(wamp_ser ser, const void *data, size_t len, wamp_msg *out, char *why,
                               size_t why_len)
{
    return wamp_msg_parse_bytes(ser, data, len, out, why, why_len);
}

wamp_err wamp_codec_encode(wamp_ser ser, const json_t *value, wamp_buf **out)
{
    if (!out) {
        return WAMP_EINVAL;
    }
    *out = NULL;
    switch (ser) {
    case WAMP_SER_JSON:
        return wamp_json_encode(value, out);
    case WAMP_SER_MSGPACK:
        return wamp_msgpack_encode(value, out);
    case WAMP_SER_CBOR:
        return wamp_cbor_encode(value, out);
    }
    return WAMP_EINVAL;
}

const char *wamp_ser_name(wamp_ser ser)
{
    switch (ser) {
    case WAMP_SER_JSON:
        return "json";
    case WAMP_SER_MSGPACK:
        return "msgpack";
    case WAMP_SER_CBOR:
        return "cbor";
    }
    return "unknown";
}

wamp_err wamp_codec_decode_value(wamp_ser ser, const void *data, size_t len, json_t **out,
                                 char *why, size_t why_len)
{
    wamp_rd r;
    wamp_rd_init(&r, ser, data, len);
    wamp_err err = wamp_rd_json(&r, out);
    if (err != WAMP_OK && why && why_len) {
        snprintf(why, why_len, "%s", wamp_rd_why(&r));
    }
    wamp_rd_fini(&r);
    return err;
}
