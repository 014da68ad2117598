/* wamp_codec.c: serializer dispatch. The serializers live in wamp_json.c and wamp_msgpack.c. */
#include "wamp_codec.h"

#include <stdio.h>
#include <string.h>

#include "wamp_json.h"
#include "wamp_msgpack.h"

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
    }
    if (why && why_len) {
        snprintf(why, why_len, "unknown serializer %d", (int)ser);
    }
    return WAMP_EINVAL;
}

wamp_err wamp_codec_decode_msg(wamp_ser ser, const void *data, size_t len, wamp_msg *out, char *why,
                               size_t why_len)
{
    json_t *root;
    memset(out, 0, sizeof(*out));
    wamp_err err = wamp_codec_decode(ser, data, len, &root, why, why_len);
    if (err != WAMP_OK) {
        return err;
    }
    return wamp_msg_parse(root, out, why, why_len);
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
    }
    return "unknown";
}
