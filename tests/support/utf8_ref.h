/* utf8_ref.h: a plain UTF-8 decoder (RFC 3629) written apart from the validator under test
 * (wamp_ws's), the reference that the WebSocket suite and fuzz target check it against. */
#ifndef UTF8_REF_H
#define UTF8_REF_H

#include <stdbool.h>
#include <stddef.h>

/* True when the n bytes at s are valid UTF-8: shortest forms only, no surrogates, nothing past
 * U+10FFFF. */
bool utf8_ref_valid(const unsigned char *s, size_t n);

#endif
