/* support.c: properties shared by the codec fuzz targets (fuzz.h). */
#include "fuzz.h"
#include "wamp_codec.h"

void fuzz_round_trip(wamp_ser ser, const json_t *v)
{
    wamp_buf *enc = NULL;
    wamp_err err = wamp_codec_encode(ser, v, &enc);
    if (err == WAMP_EINVAL) {
        return;
    }
    FUZZ_CHECK(err == WAMP_OK);
    json_t *back = NULL;
    FUZZ_CHECK(wamp_codec_decode(ser, wamp_buf_cdata(enc), wamp_buf_len(enc), &back, NULL, 0) ==
               WAMP_OK);
    FUZZ_CHECK(json_equal(back, v));
    json_decref(back);
    wamp_buf_unref(&enc);
}
