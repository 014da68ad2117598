/* wamp_err.c: wamp_strerror() generated from the WAMP_ERR_MAP table. */
#include "wamp_err.h"

const char *wamp_strerror(wamp_err err)
{
    switch (err) {
#define WAMP_ERR_CASE(name, value, msg) \
    case WAMP_##name:                   \
        return msg;
        WAMP_ERR_MAP(WAMP_ERR_CASE)
#undef WAMP_ERR_CASE
    }
    return "unknown error";
}
