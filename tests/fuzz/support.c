/* support.c: properties shared by the codec fuzz targets (fuzz.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "wamp_codec.h"
#include "wamp_msg.h"
#include "wamp_wr.h"

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

wamp_buf *fuzz_transcode(wamp_ser from, const void *data, size_t size, wamp_ser to, wamp_err *err)
{
    wamp_wr w;
    wamp_buf *out = NULL;
    wamp_wr_init(&w, (int)to, 64, 0);
    wamp_wr_transcode(&w, (int)from, data, size);
    *err = wamp_wr_finish_buf(&w, &out);
    wamp_wr_fini(&w);
    return out;
}

bool fuzz_buf_equal(const wamp_buf *a, const wamp_buf *b)
{
    return wamp_buf_len(a) == wamp_buf_len(b) &&
           memcmp(wamp_buf_cdata(a), wamp_buf_cdata(b), wamp_buf_len(a)) == 0;
}

/* a and b are the same value: json_equal(), or (for objects with a NUL byte in a key, which
 * json_equal() looks up by the key's C string and so never finds) the same compact text. */
static bool same_json(const json_t *a, const json_t *b)
{
    if (json_equal(a, b)) {
        return true;
    }
    char *ta = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
    char *tb = json_dumps(b, JSON_ENCODE_ANY | JSON_COMPACT);
    bool same = ta && tb && strcmp(ta, tb) == 0;
    free(ta);
    free(tb);
    return same;
}

void fuzz_parse_fields(wamp_ser ser, const void *data, size_t size)
{
    wamp_msg full, lean;
    char why_full[WAMP_WHY_LEN] = "", why_lean[WAMP_WHY_LEN] = "";
    wamp_err err = wamp_msg_parse_bytes(ser, data, size, &full, why_full, sizeof(why_full));
    FUZZ_CHECK(wamp_msg_parse_bytes_fields(ser, data, size, &lean, why_lean, sizeof(why_lean)) ==
               err);
    if (err != WAMP_OK) {
        FUZZ_CHECK(strcmp(why_lean, why_full) == 0 && !lean.root && !lean.dict);
        return;
    }
    FUZZ_CHECK(lean.type == full.type && lean.req_type == full.req_type && lean.id == full.id &&
               lean.id2 == full.id2 && lean.ser == full.ser);
    FUZZ_CHECK(lean.uri ? full.uri && strcmp(lean.uri, full.uri) == 0 : !full.uri);
    FUZZ_CHECK(lean.dict ? same_json(lean.dict, full.dict) : !full.dict);
    FUZZ_CHECK(lean.args_raw.p == full.args_raw.p && lean.args_raw.len == full.args_raw.len);
    FUZZ_CHECK(lean.kwargs_raw.p == full.kwargs_raw.p &&
               lean.kwargs_raw.len == full.kwargs_raw.len);
    if (wamp_msg_make_root(&lean) == WAMP_OK) {
        FUZZ_CHECK(same_json(lean.root, full.root));
    }
    wamp_msg_fini(&lean);
    wamp_msg_fini(&full);
}
