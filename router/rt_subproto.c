/* rt_subproto.c: WebSocket subprotocol negotiation (rt_subproto.h). */
#include "rt_subproto.h"

#include <stdio.h>
#include <string.h>

/* The router's order of preference: the most compact encoding first. One line per supported
 * serializer; a serializer added to the codecs becomes negotiable over WebSocket with its line
 * here (the WebSocket adapter builds its protocol table from these names) and its listener
 * flag in rt_lws_ws.c's enabled_sers(). */
static const struct {
    const char *name;
    wamp_ser ser;
} subprotos[] = {
        {WAMP_SUBPROTOCOL_MSGPACK, WAMP_SER_MSGPACK},
        {WAMP_SUBPROTOCOL_CBOR, WAMP_SER_CBOR},
        {WAMP_SUBPROTOCOL_JSON, WAMP_SER_JSON},
};

#define N_SUBPROTOS (sizeof(subprotos) / sizeof(subprotos[0]))

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

bool rt_subproto_next(const char *text, size_t len, size_t *pos, const char **tok, size_t *tok_len)
{
    size_t i = *pos;
    while (text && i < len) {
        size_t start = i;
        while (i < len && text[i] != ',') {
            i++;
        }
        size_t end = i;
        if (i < len) {
            i++; /* the comma */
        }
        while (start < end && is_ows(text[start])) {
            start++;
        }
        while (end > start && is_ows(text[end - 1])) {
            end--;
        }
        if (end > start) {
            *pos = i;
            *tok = text + start;
            *tok_len = end - start;
            return true;
        }
    }
    *pos = len;
    return false;
}

const char *rt_subproto_name(wamp_ser ser)
{
    for (size_t k = 0; k < N_SUBPROTOS; k++) {
        if (subprotos[k].ser == ser) {
            return subprotos[k].name;
        }
    }
    return NULL;
}

static bool tok_is(const char *tok, size_t tok_len, const char *name)
{
    return strlen(name) == tok_len && memcmp(tok, name, tok_len) == 0;
}

static bool offered(const char *text, size_t len, const char *name)
{
    size_t pos = 0;
    const char *tok;
    size_t tok_len;
    while (rt_subproto_next(text, len, &pos, &tok, &tok_len)) {
        if (tok_is(tok, tok_len, name)) {
            return true;
        }
    }
    return false;
}

bool rt_subproto_choose(const char *text, size_t len, unsigned enabled, wamp_ser *out)
{
    for (size_t k = 0; k < N_SUBPROTOS; k++) {
        if ((enabled & RT_SUBPROTO_BIT(subprotos[k].ser)) &&
            offered(text, len, subprotos[k].name)) {
            *out = subprotos[k].ser;
            return true;
        }
    }
    return false;
}

bool rt_subproto_list(unsigned enabled, char *buf, size_t len)
{
    size_t used = 0;
    if (len) {
        buf[0] = '\0';
    }
    for (size_t k = 0; k < N_SUBPROTOS; k++) {
        if (!(enabled & RT_SUBPROTO_BIT(subprotos[k].ser))) {
            continue;
        }
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", subprotos[k].name);
        if (n < 0 || (size_t)n >= len - used) {
            return false;
        }
        used += (size_t)n;
    }
    return true;
}
