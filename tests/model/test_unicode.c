/* src/tokenize/unicode.c: categories and White_Space from the generated
 * Unicode 15.1 table (values as UnicodeData.txt / PropList.txt state
 * them), UTF-8 decoding with llama.cpp's U+FFFD rule, and GPT-2's byte
 * alphabet (printable Latin-1 bytes as themselves, the other 68 bytes
 * numbered from U+0100 in order). */
#include "../test_util.h"
#include "tokenize/unicode.h"

int main(void) {
    static const struct { uint32_t cpt; enum tport_ucat cat; } cats[] = {
        {'A', TPORT_UCAT_LETTER}, {'z', TPORT_UCAT_LETTER}, {'5', TPORT_UCAT_NUMBER}, {' ', TPORT_UCAT_SEPARATOR},
        {'\n', TPORT_UCAT_CONTROL}, {'!', TPORT_UCAT_PUNCTUATION}, {'$', TPORT_UCAT_SYMBOL}, {'`', TPORT_UCAT_SYMBOL},
        {0x00BD, TPORT_UCAT_NUMBER},      /* VULGAR FRACTION ONE HALF, No */
        {0x0301, TPORT_UCAT_MARK},        /* COMBINING ACUTE ACCENT */
        {0x0660, TPORT_UCAT_NUMBER},      /* ARABIC-INDIC DIGIT ZERO */
        {0x3000, TPORT_UCAT_SEPARATOR},   /* IDEOGRAPHIC SPACE */
        {0x4E00, TPORT_UCAT_LETTER},      /* first of a First>/Last> range */
        {0x9FFF, TPORT_UCAT_LETTER},      /* last of it (Unicode 14+) */
        {0xAC00, TPORT_UCAT_LETTER},      /* HANGUL SYLLABLE GA, a range */
        {0x2026, TPORT_UCAT_PUNCTUATION}, /* HORIZONTAL ELLIPSIS */
        {0x1F600, TPORT_UCAT_SYMBOL},     /* GRINNING FACE */
        {0xE000, TPORT_UCAT_CONTROL},     /* private use, Co */
        {0x0378, TPORT_UCAT_UNDEFINED},   /* unassigned */
        {0x2EBF0, TPORT_UCAT_LETTER},     /* CJK Extension I: Unicode 15.1, as llama.cpp's table */
        {0x2EE5D, TPORT_UCAT_LETTER}, {0x2EE5E, TPORT_UCAT_UNDEFINED}, {0x31EF, TPORT_UCAT_SYMBOL},
        {0x10FFFF, TPORT_UCAT_UNDEFINED}, {0x110000, TPORT_UCAT_UNDEFINED},
    };
    for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++)
        CHECK(tport_unicode_category(cats[i].cpt) == cats[i].cat, "U+%04X: category %d, want %d",
              (unsigned)cats[i].cpt, (int)tport_unicode_category(cats[i].cpt), (int)cats[i].cat);
    static const uint32_t spaces[] = {0x09, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x202F, 0x3000};
    for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
        CHECK(tport_unicode_is_space(spaces[i]), "U+%04X is White_Space", (unsigned)spaces[i]);
    static const uint32_t not_spaces[] = {0x08, 0x1C, 0x200B, 0x180E, 0xFEFF, 'a'};
    for (size_t i = 0; i < sizeof not_spaces / sizeof not_spaces[0]; i++)
        CHECK(!tport_unicode_is_space(not_spaces[i]), "U+%04X is not White_Space", (unsigned)not_spaces[i]);
    CHECK(tport_unicode_version[0] != '\0', "the table names its Unicode version");

    size_t used = 0;
    CHECK(tport_utf8_decode("\xc3\xa9", 2, &used) == 0xE9 && used == 2, "two-byte sequence");
    CHECK(tport_utf8_decode("\xf0\x9f\x98\x80", 4, &used) == 0x1F600 && used == 4, "four-byte sequence");
    CHECK(tport_utf8_decode("\x80x", 2, &used) == 0xFFFD && used == 1, "stray continuation byte");
    CHECK(tport_utf8_decode("\xe2\x82", 2, &used) == 0xFFFD && used == 1, "truncated sequence");
    CHECK(tport_utf8_decode("\xe2(x", 3, &used) == 0xFFFD && used == 1, "bad continuation");
    CHECK(tport_utf8_decode("\xf8\x80\x80\x80\x80", 5, &used) == 0xFFFD && used == 1, "five-byte lead");
    char u[4];
    CHECK(tport_utf8_encode(0x20AC, u) == 3 && !memcmp(u, "\xe2\x82\xac", 3), "encode U+20AC");
    CHECK(tport_utf8_encode(0x110000, u) == 3 && !memcmp(u, "\xef\xbf\xbd", 3), "out of range -> U+FFFD");

    unsigned n = 0;
    int bijective = 1;
    for (unsigned b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        uint32_t want = printable ? b : 0x100 + n++;
        bijective &= tport_gpt2_byte_to_cpt((uint8_t)b) == want && tport_gpt2_cpt_to_byte(want) == (int)b;
    }
    CHECK(bijective && n == 68, "GPT-2 byte alphabet (%u remapped bytes)", n);
    CHECK(tport_gpt2_byte_to_cpt(' ') == 0x120 && tport_gpt2_byte_to_cpt('\n') == 0x10A, "space is U+0120, LF U+010A");
    CHECK(tport_gpt2_cpt_to_byte(0x144) == -1 && tport_gpt2_cpt_to_byte(' ') == -1, "no byte for U+0144 or ' '");
    return test_finish("test_unicode");
}
