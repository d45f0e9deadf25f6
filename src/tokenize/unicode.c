/* Unicode lookups over the generated tables, UTF-8 and GPT-2's byte
 * alphabet.  Decoding mirrors llama.cpp's unicode_cpt_from_utf8 (lead byte
 * decides the length, continuation bytes must be 10xxxxxx, no check for
 * overlong forms) so that invalid input splits exactly as there. */
#include "tokenize/unicode.h"

enum tport_ucat tport_unicode_category(uint32_t cpt) {
    if (cpt >= 0x110000)
        return TPORT_UCAT_UNDEFINED;
    size_t lo = 0, hi = tport_unicode_cat_ranges_n; /* last range starting <= cpt */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((tport_unicode_cat_ranges[mid] >> 8) <= cpt)
            lo = mid;
        else
            hi = mid;
    }
    return (enum tport_ucat)(tport_unicode_cat_ranges[lo] & 0xFF);
}

bool tport_unicode_is_space(uint32_t cpt) {
    if (cpt < 0x80)
        return cpt == ' ' || (cpt >= 0x09 && cpt <= 0x0D);
    size_t lo = 0, hi = tport_unicode_white_space_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tport_unicode_white_space[mid] < cpt)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < tport_unicode_white_space_n && tport_unicode_white_space[lo] == cpt;
}

uint32_t tport_unicode_tolower_ascii(uint32_t cpt) {
    return cpt >= 'A' && cpt <= 'Z' ? cpt + 32 : cpt;
}

size_t tport_utf8_len(unsigned char lead) {
    static const unsigned char by_high_nibble[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                     1, 1, 1, 1, 2, 2, 3, 4};
    return by_high_nibble[lead >> 4];
}

static bool cont(const char *s, size_t i) { return ((unsigned char)s[i] & 0xC0) == 0x80; }

uint32_t tport_utf8_decode(const char *s, size_t n, size_t *used) {
    const unsigned char c = (unsigned char)s[0];
    *used = 1;
    if (!(c & 0x80))
        return c;
    if (!(c & 0x40))
        return 0xFFFD;
    if (!(c & 0x20)) {
        if (n < 2 || !cont(s, 1))
            return 0xFFFD;
        *used = 2;
        return ((uint32_t)(c & 0x1F) << 6) | ((unsigned char)s[1] & 0x3F);
    }
    if (!(c & 0x10)) {
        if (n < 3 || !cont(s, 1) || !cont(s, 2))
            return 0xFFFD;
        *used = 3;
        return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)((unsigned char)s[1] & 0x3F) << 6) |
               ((unsigned char)s[2] & 0x3F);
    }
    if (!(c & 0x08)) {
        if (n < 4 || !cont(s, 1) || !cont(s, 2) || !cont(s, 3))
            return 0xFFFD;
        *used = 4;
        return ((uint32_t)(c & 0x07) << 18) | ((uint32_t)((unsigned char)s[1] & 0x3F) << 12) |
               ((uint32_t)((unsigned char)s[2] & 0x3F) << 6) | ((unsigned char)s[3] & 0x3F);
    }
    return 0xFFFD;
}

size_t tport_utf8_encode(uint32_t cpt, char *out) {
    if (cpt > 0x10FFFF)
        cpt = 0xFFFD;
    if (cpt < 0x80) {
        out[0] = (char)cpt;
        return 1;
    }
    if (cpt < 0x800) {
        out[0] = (char)(0xC0 | (cpt >> 6));
        out[1] = (char)(0x80 | (cpt & 0x3F));
        return 2;
    }
    if (cpt < 0x10000) {
        out[0] = (char)(0xE0 | (cpt >> 12));
        out[1] = (char)(0x80 | ((cpt >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cpt & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cpt >> 18));
    out[1] = (char)(0x80 | ((cpt >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cpt >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cpt & 0x3F));
    return 4;
}

/* GPT-2 keeps the printable Latin-1 bytes ('!'..'~', 0xA1..0xAC,
 * 0xAE..0xFF) as themselves and numbers the other 68 bytes, in order,
 * from U+0100. */
static bool gpt2_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

/* The unprintable bytes are 0x00-0x20 (33), 0x7F-0xA0 (34) and 0xAD. */
uint32_t tport_gpt2_byte_to_cpt(uint8_t b) {
    if (gpt2_printable(b))
        return b;
    if (b <= 0x20)
        return 0x100u + b;
    if (b <= 0xA0)
        return 0x100u + 33 + (b - 0x7Fu);
    return 0x100u + 67; /* 0xAD */
}

int tport_gpt2_cpt_to_byte(uint32_t cpt) {
    if (cpt < 0x100)
        return gpt2_printable(cpt) ? (int)cpt : -1;
    uint32_t n = cpt - 0x100;
    if (n < 33)
        return (int)n;
    if (n < 67)
        return (int)(0x7F + n - 33);
    return n == 67 ? 0xAD : -1;
}

uint32_t tport_unicode_tolower(uint32_t cpt) {
    size_t lo = 0, hi = tport_unicode_lower_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tport_unicode_lower[mid][0] < cpt)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < tport_unicode_lower_n && tport_unicode_lower[lo][0] == cpt ? tport_unicode_lower[lo][1] : cpt;
}

uint32_t tport_unicode_nfd_first(uint32_t cpt) {
    size_t lo = 0, hi = tport_unicode_nfd_n; /* the first range ending at or after cpt */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tport_unicode_nfd[mid][1] < cpt)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < tport_unicode_nfd_n && tport_unicode_nfd[lo][0] <= cpt ? tport_unicode_nfd[lo][2] : cpt;
}
