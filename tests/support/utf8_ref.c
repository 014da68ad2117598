#include "utf8_ref.h"

bool utf8_ref_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], need, cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xe0) == 0xc0) {
            need = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            need = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            need = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i - 1 < need) {
            return false;
        }
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return false;
            }
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        static const unsigned min[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[need] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return false;
        }
        i += need + 1;
    }
    return true;
}
