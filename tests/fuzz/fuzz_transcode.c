/* fuzz_transcode.c: the exact transcoder agrees with itself. The first input byte picks the
 * source serializer (JSON, MessagePack, CBOR), the rest is the value. Properties: never crashes
 * or leaks; input the reader refuses, every other serializer's transcode refuses too; accepted
 * input written in each serializer T reads back as valid T, and its canonical form (transcoded
 * to MessagePack, then to CBOR) is the source's: every pairing is exact. The one exception is
 * the JSON binary convention: a text string "\0" + canonical base64 becomes binary in JSON, so
 * values holding such a string skip the comparison through JSON. */
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "fuzz.h"
#include "wamp_codec.h"
#include "wamp_rd.h"

static const wamp_ser SERS[] = {WAMP_SER_JSON, WAMP_SER_MSGPACK, WAMP_SER_CBOR};

/* Canonical CBOR of a valid value (MessagePack first: every hop a real transcode). */
static wamp_buf *canon(wamp_ser ser, const void *data, size_t size)
{
    wamp_err err;
    wamp_buf *mp = ser == WAMP_SER_MSGPACK
                           ? NULL
                           : fuzz_transcode(ser, data, size, WAMP_SER_MSGPACK, &err);
    FUZZ_CHECK(ser == WAMP_SER_MSGPACK || mp);
    wamp_buf *c = mp ? fuzz_transcode(WAMP_SER_MSGPACK, wamp_buf_cdata(mp), wamp_buf_len(mp),
                                      WAMP_SER_CBOR, &err)
                     : fuzz_transcode(WAMP_SER_MSGPACK, data, size, WAMP_SER_CBOR, &err);
    FUZZ_CHECK(c);
    wamp_buf_unref(&mp);
    return c;
}

/* The value (canonical CBOR) holds a text string that JSON would turn into binary. */
static bool json_ambiguous(const wamp_buf *c)
{
    wamp_rd r;
    wamp_tok t;
    bool found = false;
    wamp_rd_init(&r, WAMP_SER_CBOR, wamp_buf_cdata(c), wamp_buf_len(c));
    while (!found && !wamp_rd_done(&r) && wamp_rd_next(&r, &t) == WAMP_OK) {
        if (t.kind == WAMP_TOK_STR && !t.is_key && t.len > 0 && t.p[0] == 0) {
            unsigned char *bin = malloc(t.len);
            size_t n;
            found = bin && wamp_b64_decode((const char *)t.p + 1, t.len - 1, bin, &n);
            free(bin);
        }
    }
    wamp_rd_fini(&r);
    return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        ready = sodium_init() >= 0;
    }
    if (size == 0) {
        return 0;
    }
    wamp_ser src = SERS[data[0] % 3];
    data++;
    size--;
    wamp_err valid = wamp_rd_validate(src, data, size, NULL, 0);
    if (valid != WAMP_OK) {
        FUZZ_CHECK(valid == WAMP_EPROTO);
        for (int i = 0; i < 3; i++) {
            wamp_err err;
            wamp_buf *b = SERS[i] == src ? NULL : fuzz_transcode(src, data, size, SERS[i], &err);
            FUZZ_CHECK(!b && (SERS[i] == src || err == WAMP_EPROTO));
        }
        return 0;
    }
    wamp_buf *want = canon(src, data, size);
    bool skip_json = json_ambiguous(want);
    for (int i = 0; i < 3; i++) {
        wamp_err err;
        wamp_buf *b = fuzz_transcode(src, data, size, SERS[i], &err);
        FUZZ_CHECK(b && err == WAMP_OK);
        FUZZ_CHECK(wamp_rd_validate(SERS[i], wamp_buf_cdata(b), wamp_buf_len(b), NULL, 0) ==
                   WAMP_OK);
        if (!(skip_json && SERS[i] == WAMP_SER_JSON)) {
            wamp_buf *got = canon(SERS[i], wamp_buf_cdata(b), wamp_buf_len(b));
            FUZZ_CHECK(fuzz_buf_equal(got, want));
            wamp_buf_unref(&got);
        }
        wamp_buf_unref(&b);
    }
    wamp_buf_unref(&want);
    return 0;
}
