/* wamp_scan.h: the byte-class scans over long runs that the readers (wamp_rd.c) and the
 * WebSocket parser (wamp_ws.c) spend their per-byte time in, as inline functions: 16 or 32 octets
 * per step with SSE2 (every x86-64 has it), 8 per step through 64-bit words elsewhere. Each
 * returns how many leading octets are of the plain class, so a caller skips them and handles the
 * first other octet (and the short tail) itself. Pure functions of their input; no state. */
#ifndef WAMP_SCAN_H
#define WAMP_SCAN_H

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Octets at the start of s[0..n) below 0x80 (ASCII: nothing for a UTF-8 validator to do). */
static inline size_t wamp_scan_ascii(const unsigned char *s, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    for (; n - i >= 32; i += 32) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
        if (_mm_movemask_epi8(_mm_or_si128(a, b)) != 0) {
            break;
        }
    }
    for (; n - i >= 16; i += 16) {
        unsigned bits = (unsigned)_mm_movemask_epi8(
                _mm_loadu_si128((const __m128i *)(const void *)(s + i)));
        if (bits) {
            return i + (size_t)__builtin_ctz(bits);
        }
    }
#else
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, sizeof(w));
        if (w & 0x8080808080808080ULL) {
            break;
        }
    }
#endif
    while (i < n && s[i] < 0x80) {
        i++;
    }
    return i;
}

#if defined(__SSE2__)
/* 0xff in each of the 16 octets at s that is '"', '\\', below 0x20 or above 0x7f. */
static inline __m128i wamp_scan_json_special16(const unsigned char *s)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    /* Signed compare: octets 0x80..0xff are negative, so "below 0x20" takes them too. */
    __m128i low = _mm_cmpgt_epi8(_mm_set1_epi8(0x20), v);
    return _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                        low);
}
#endif

/* Octets at the start of s[0..n) that a JSON string holds as they are: none is '"', '\\', below
 * 0x20 or above 0x7f (so a run of them needs neither unescaping nor UTF-8 validation). */
static inline size_t wamp_scan_json_plain(const unsigned char *s, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    for (; n - i >= 32; i += 32) {
        __m128i m =
                _mm_or_si128(wamp_scan_json_special16(s + i), wamp_scan_json_special16(s + i + 16));
        if (_mm_movemask_epi8(m) != 0) {
            break;
        }
    }
    for (; n - i >= 16; i += 16) {
        unsigned bits = (unsigned)_mm_movemask_epi8(wamp_scan_json_special16(s + i));
        if (bits) {
            return i + (size_t)__builtin_ctz(bits);
        }
    }
#else
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    for (; n - i >= 8; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, sizeof(w));
        /* Each test is exact about whether some octet matches, which is all that is asked. */
        uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
        if ((((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & high) {
            break;
        }
    }
#endif
    while (i < n && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20 && s[i] < 0x80) {
        i++;
    }
    return i;
}

#endif /* WAMP_SCAN_H */
