/* The bits of Unicode the tokenizers need: UTF-8 decoding exactly as
 * llama.cpp's unicode.cpp does it, general-category groups, White_Space
 * and GPT-2's byte <-> code point mapping.  The tables come from the
 * Unicode Character Database through tools/unicode/gen_unicode_table.py. */
#ifndef TPORT_TOKENIZE_UNICODE_H
#define TPORT_TOKENIZE_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* General-category groups (\p{N}, \p{L}, ...); unassigned is UNDEFINED. */
enum tport_ucat {
    TPORT_UCAT_UNDEFINED = 0,
    TPORT_UCAT_NUMBER = 1,
    TPORT_UCAT_LETTER = 2,
    TPORT_UCAT_SEPARATOR = 3,
    TPORT_UCAT_MARK = 4,
    TPORT_UCAT_PUNCTUATION = 5,
    TPORT_UCAT_SYMBOL = 6,
    TPORT_UCAT_CONTROL = 7,
};

/* Generated tables (unicode_table.c). */
extern const char tport_unicode_version[];
extern const uint32_t tport_unicode_cat_ranges[];
extern const size_t tport_unicode_cat_ranges_n;
extern const uint32_t tport_unicode_white_space[];
extern const size_t tport_unicode_white_space_n;

enum tport_ucat tport_unicode_category(uint32_t cpt);
bool tport_unicode_is_space(uint32_t cpt);
/* Lowercase as far as the pre-tokenizers look (contractions 's 't 're 've
 * 'm 'll 'd): no code point but A-Z lowercases into those letters, which
 * the table generator checks. */
uint32_t tport_unicode_tolower_ascii(uint32_t cpt);

/* For the WordPiece normalizer (generated, unicode_fold.c through
 * tools/unicode/gen_unicode_fold.py): the simple lowercase mapping, and
 * the first code point of a character's canonical decomposition (what is
 * left of "é" once its accent is stripped); both give cpt itself when the
 * database has nothing. */
extern const uint32_t tport_unicode_lower[][2];
extern const size_t tport_unicode_lower_n;
extern const uint32_t tport_unicode_nfd[][3];
extern const size_t tport_unicode_nfd_n;
uint32_t tport_unicode_tolower(uint32_t cpt);
uint32_t tport_unicode_nfd_first(uint32_t cpt);

/* Decodes one code point at s[0..n) (n > 0) and sets *used; an invalid or
 * truncated sequence gives U+FFFD and uses one byte, as llama.cpp does. */
uint32_t tport_utf8_decode(const char *s, size_t n, size_t *used);
/* Encodes cpt (at most 0x10FFFF; larger ones become U+FFFD) into out[4];
 * returns the byte count. */
size_t tport_utf8_encode(uint32_t cpt, char *out);
/* Bytes of the sequence a lead byte starts (1 for stray bytes). */
size_t tport_utf8_len(unsigned char lead);

/* GPT-2's byte-level alphabet: the code point standing for byte b, and
 * back (-1 for a code point that stands for no byte). */
uint32_t tport_gpt2_byte_to_cpt(uint8_t b);
int tport_gpt2_cpt_to_byte(uint32_t cpt);

#endif
