/* fuzz_json.c: the JSON decoder on arbitrary bytes. Properties: never crashes or leaks; what it
 * accepts parses or is refused by wamp_msg_parse() cleanly, and round-trips: encoding it in JSON
 * and in MessagePack and decoding again gives the same value (binary strings included).
 * As a message, the receive path's parse into fields agrees with the full parse
 * (fuzz_parse_fields()). */
#include <jansson.h>
#include <sodium.h>

#include "fuzz.h"
#include "wamp_codec.h"
#include "wamp_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        ready = sodium_init() >= 0;
    }
    fuzz_parse_fields(WAMP_SER_JSON, data, size);
    json_t *v = NULL;
    char why[WAMP_WHY_LEN];
    if (wamp_codec_decode(WAMP_SER_JSON, data, size, &v, why, sizeof(why)) != WAMP_OK) {
        FUZZ_CHECK(v == NULL);
        return 0;
    }
    fuzz_round_trip(WAMP_SER_JSON, v);
    fuzz_round_trip(WAMP_SER_MSGPACK, v);
    wamp_msg m;
    if (wamp_msg_parse(v, &m, why, sizeof(why)) == WAMP_OK) { /* consumes v */
        wamp_msg_fini(&m);
    }
    return 0;
}
