/* Pre-tokenizers of byte-level BPE vocabularies: the regex splits of
 * llama.cpp's llm_tokenizer_bpe (llama-vocab.cpp) and unicode.cpp, done
 * by hand over code points.  A pre-tokenizer is a list of passes; each
 * pass splits every piece the previous one left.  Two kinds of pass:
 *
 * - "custom" passes (GPT-2's and Llama 3's patterns), which llama.cpp
 *   also implements by hand: transcribed step by step, quirks included;
 * - "search" passes for the simple patterns llama.cpp hands to std::regex:
 *   a match function says how long a match starting at a position is, the
 *   leftmost match wins, and the text between matches is a piece too
 *   (unicode_regex_split_stl).  std::regex sees \p{..} through llama.cpp's
 *   category collapsing and non-ASCII white space as U+000B, which the
 *   class predicates below reproduce. */
#include <stdlib.h>
#include <string.h>

#include "tokenize/tokenizer_impl.h"
#include "tokenize/unicode.h"

/* The code points of one piece; positions outside it read as "nothing". */
typedef struct span {
    const uint32_t *c;
    size_t ini, end;
} span;

static bool in(const span *s, size_t p) { return p >= s->ini && p < s->end; }
static uint32_t at(const span *s, size_t p) { return in(s, p) ? s->c[p] : 0xFFFFFFFFu; }
static bool is_l(const span *s, size_t p) { return in(s, p) && tport_unicode_category(s->c[p]) == TPORT_UCAT_LETTER; }
static bool is_n(const span *s, size_t p) { return in(s, p) && tport_unicode_category(s->c[p]) == TPORT_UCAT_NUMBER; }
static bool is_ws(const span *s, size_t p) { return in(s, p) && tport_unicode_is_space(s->c[p]); }
/* [^\s\p{L}\p{N}], inside the piece */
static bool is_other(const span *s, size_t p) { return in(s, p) && !is_ws(s, p) && !is_l(s, p) && !is_n(s, p); }
static bool is_m(const span *s, size_t p) { return in(s, p) && tport_unicode_category(s->c[p]) == TPORT_UCAT_MARK; }

/* Growing list of piece lengths (in code points). */
typedef struct pieces {
    size_t *len;
    size_t n, cap;
    bool oom;
} pieces;

static void add_len(pieces *o, size_t n) {
    if (n == 0 || o->oom)
        return;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 64;
        size_t *g = realloc(o->len, cap * sizeof *g);
        if (!g) {
            o->oom = true;
            return;
        }
        o->len = g;
        o->cap = cap;
    }
    o->len[o->n++] = n;
}

/* A piece ends at `end`; *prev is where the last one ended. */
static void cut(pieces *o, size_t *prev, size_t end) {
    add_len(o, end - *prev);
    *prev = end;
}

/* 's 't 're 've 'm 'll 'd (lowercased first if fold): length or 0. */
static size_t contraction(const span *s, size_t pos, bool fold) {
    if (at(s, pos) != '\'' || !in(s, pos + 1))
        return 0;
    uint32_t a = at(s, pos + 1), b = in(s, pos + 2) ? at(s, pos + 2) : 0;
    if (fold) {
        a = tport_unicode_tolower_ascii(a);
        b = tport_unicode_tolower_ascii(b);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (unicode_regex_split_custom_gpt2) */
static void split_gpt2(const span *s, pieces *o) {
    size_t prev = s->ini;
    for (size_t pos = s->ini; pos < s->end;) {
        uint32_t c = at(s, pos);
        size_t k = contraction(s, pos, false);
        if (k) {
            cut(o, &prev, pos += k);
            continue;
        }
        size_t f = c == ' ' ? pos + 1 : pos; /* where the class is tested */
        bool (*run)(const span *, size_t) = is_l(s, f) ? is_l : is_n(s, f) ? is_n : is_other(s, f) ? is_other : NULL;
        if (run) {
            for (pos = f; run(s, pos); pos++) {
            }
            cut(o, &prev, pos);
            continue;
        }
        size_t nws = 0;
        while (is_ws(s, pos + nws))
            nws++;
        if (nws > 1 && in(s, pos + nws)) { /* \s+(?!\S): leave the last one */
            cut(o, &prev, pos += nws - 1);
            continue;
        }
        if (nws > 0) {
            cut(o, &prev, pos += nws);
            continue;
        }
        cut(o, &prev, ++pos);
    }
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}
 * | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with D = 3 (Llama 3) or 1 (Qwen2): unicode_regex_split_custom_llama3
 * and _qwen2, which differ only there.  With marks (Qwen3.5, _qwen35),
 * letter runs are [\p{L}\p{M}]+ and the punctuation class excludes \p{M}
 * too. */
static bool is_lm(const span *s, size_t p, bool marks) { return is_l(s, p) || (marks && is_m(s, p)); }

static void split_llama3(const span *s, pieces *o, size_t max_digits, bool marks) {
    size_t prev = s->ini;
    for (size_t pos = s->ini; pos < s->end;) {
        uint32_t c = at(s, pos);
        size_t k = contraction(s, pos, true);
        if (k) {
            cut(o, &prev, pos += k);
            continue;
        }
        if (!(c == '\r' || c == '\n' || is_n(s, pos)) && (is_lm(s, pos, marks) || is_lm(s, pos + 1, marks))) {
            for (pos++; is_lm(s, pos, marks); pos++) {
            }
            cut(o, &prev, pos);
            continue;
        }
        if (is_n(s, pos)) {
            size_t ini = pos;
            while (is_n(s, pos)) {
                if (++pos - ini >= max_digits) {
                    cut(o, &prev, pos);
                    ini = pos;
                }
            }
            cut(o, &prev, pos);
            continue;
        }
        /* llama.cpp tests the class after an optional space but requires
         * only the current position to exist, so a lone trailing space
         * is taken here */
        size_t f = c == ' ' ? pos + 1 : pos;
        if (!is_ws(s, f) && !is_lm(s, f, marks) && !is_n(s, f) && in(s, pos)) {
            for (pos = f; is_other(s, pos) && !(marks && is_m(s, pos)); pos++) {
            }
            while (at(s, pos) == '\r' || at(s, pos) == '\n')
                pos++;
            cut(o, &prev, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (is_ws(s, pos + nws)) {
            uint32_t w = at(s, pos + nws);
            if (w == '\r' || w == '\n')
                last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) {
            cut(o, &prev, pos = last_rn);
            continue;
        }
        if (nws > 1 && in(s, pos + nws)) {
            cut(o, &prev, pos += nws - 1);
            continue;
        }
        if (nws > 0) {
            cut(o, &prev, pos += nws);
            continue;
        }
        cut(o, &prev, ++pos);
    }
}

/* [^\n]+|[\n]+: runs of newlines and runs of anything else
 * (unicode_regex_split_custom_newlines). */
static void split_newlines(const span *s, pieces *o) {
    size_t prev = s->ini;
    for (size_t pos = s->ini; pos < s->end;) {
        bool nl = at(s, pos) == '\n';
        while (in(s, pos) && (at(s, pos) == '\n') == nl)
            pos++;
        cut(o, &prev, pos);
    }
}

/* ---- search passes ------------------------------------------------------ */

/* What std::regex sees of a code point: non-ASCII white space is U+000B. */
static uint32_t seen(uint32_t c) { return c >= 0x80 && tport_unicode_is_space(c) ? 0x0B : c; }
static bool ascii_space(uint32_t c) { return c == ' ' || (c >= 0x09 && c <= 0x0D); }
static bool has(const char *set, uint32_t c) { return c != 0 && c < 0x80 && strchr(set, (int)c) != NULL; }
static enum tport_ucat cat_seen(uint32_t c) {
    uint32_t v = seen(c);
    return v == 0x0B && c != 0x0B ? TPORT_UCAT_SEPARATOR : tport_unicode_category(v);
}

/* [\p{P}\$\+<=>\^~\|]+ (default) and the same with ` (falcon) */
static size_t m_punct_default(const span *s, size_t p) {
    size_t q = p;
    while (in(s, q) && (cat_seen(s->c[q]) == TPORT_UCAT_PUNCTUATION || has("$+<=>^~|", s->c[q])))
        q++;
    return q - p;
}
static size_t m_punct_falcon(const span *s, size_t p) {
    size_t q = p;
    while (in(s, q) && (cat_seen(s->c[q]) == TPORT_UCAT_PUNCTUATION || has("$+<=>^~|`", s->c[q])))
        q++;
    return q - p;
}
/* \p{N}+ and \p{N} */
static size_t m_numbers(const span *s, size_t p) {
    size_t q = p;
    while (in(s, q) && cat_seen(s->c[q]) == TPORT_UCAT_NUMBER)
        q++;
    return q - p;
}
static size_t m_number(const span *s, size_t p) {
    return in(s, p) && cat_seen(s->c[p]) == TPORT_UCAT_NUMBER;
}
/* [0-9][0-9][0-9] */
static size_t m_three_digits(const span *s, size_t p) {
    for (size_t i = 0; i < 3; i++)
        if (!in(s, p + i) || s->c[p + i] < '0' || s->c[p + i] > '9')
            return 0;
    return 3;
}
/* ' ?[^(\s|.,!?…。，、।۔،)]+' (bloom, poro, gpt3-finnish, viking) */
static bool bloom_char(uint32_t c) {
    c = seen(c);
    static const uint32_t stop[] = {0x2026, 0x3002, 0xFF0C, 0x3001, 0x0964, 0x06D4, 0x060C};
    if (ascii_space(c) || has("(|.,!?)", c))
        return false;
    for (size_t i = 0; i < sizeof stop / sizeof stop[0]; i++)
        if (c == stop[i])
            return false;
    return true;
}
static size_t m_bloom(const span *s, size_t p) {
    size_t q = p;
    if (at(s, q) == ' ' && in(s, q + 1) && bloom_char(s->c[q + 1]))
        q++;
    if (!in(s, q) || !bloom_char(s->c[q]))
        return 0;
    while (in(s, q) && bloom_char(s->c[q]))
        q++;
    return q - p;
}

/* DeepSeek's pre-tokenizers spell their classes out as code point ranges
 * (llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM): cased letters of
 * Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee, Glagolitic, ... */
typedef struct cp_range {
    uint32_t lo, hi;
} cp_range;

static const cp_range DEEPSEEK_LETTERS[] = {
    {0x0041, 0x005A}, {0x0061, 0x007A}, {0x00B5, 0x00B5}, {0x00C0, 0x00D6}, {0x00D8, 0x00F6},
    {0x00F8, 0x01BA}, {0x01BC, 0x01BF}, {0x01C4, 0x0293}, {0x0295, 0x02AF}, {0x0370, 0x0373},
    {0x0376, 0x0377}, {0x037B, 0x037D}, {0x037F, 0x037F}, {0x0386, 0x0386}, {0x0388, 0x038A},
    {0x038C, 0x038C}, {0x038E, 0x03A1}, {0x03A3, 0x03F5}, {0x03F7, 0x0481}, {0x048A, 0x052F},
    {0x0531, 0x0556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107},
    {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
    {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F},
    {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F},
    {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
/* [!-/:-~！-／：-～‘-‟　-。] */
static const cp_range DEEPSEEK_PUNCT[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};
/* [一-龥ࠀ-一가-퟿] */
static const cp_range DEEPSEEK_CJK[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};

static bool in_ranges(const cp_range *r, size_t n, uint32_t c) {
    c = seen(c);
    for (size_t i = 0; i < n; i++)
        if (c >= r[i].lo && c <= r[i].hi)
            return true;
    return false;
}
#define IN(table, c) in_ranges(table, sizeof table / sizeof table[0], c)

static bool ds_letter(uint32_t c) { return IN(DEEPSEEK_LETTERS, c); }
static bool ds_punct(uint32_t c) { return IN(DEEPSEEK_PUNCT, c); }
static bool ds_cjk(uint32_t c) { return IN(DEEPSEEK_CJK, c); }
static bool cat_letter(uint32_t c) { return cat_seen(c) == TPORT_UCAT_LETTER; }
static bool cat_punct(uint32_t c) { return cat_seen(c) == TPORT_UCAT_PUNCTUATION; }

/* \s?X+ for a class X that holds no white space. */
static size_t opt_space_run(const span *s, size_t p, bool (*x)(uint32_t)) {
    size_t q = p;
    if (in(s, q) && ascii_space(seen(s->c[q])) && in(s, q + 1) && x(s->c[q + 1]))
        q++;
    if (!in(s, q) || !x(s->c[q]))
        return 0;
    while (in(s, q) && x(s->c[q]))
        q++;
    return q - p;
}

static size_t m_cr_or_lf(const span *s, size_t p) { return at(s, p) == '\r' || at(s, p) == '\n'; }
static size_t m_ds_letters(const span *s, size_t p) { return opt_space_run(s, p, ds_letter); }
static size_t m_ds_punct(const span *s, size_t p) { return opt_space_run(s, p, ds_punct); }
static size_t m_sp_letters(const span *s, size_t p) { return opt_space_run(s, p, cat_letter); }
static size_t m_sp_punct(const span *s, size_t p) { return opt_space_run(s, p, cat_punct); }
static size_t m_ds_cjk(const span *s, size_t p) {
    size_t q = p;
    while (in(s, q) && ds_cjk(s->c[q]))
        q++;
    return q - p;
}
/* \s+$ : white space reaching the end of the piece */
static size_t m_trailing_space(const span *s, size_t p) {
    size_t q = p;
    while (in(s, q) && ascii_space(seen(s->c[q])))
        q++;
    return q > p && q == s->end ? q - p : 0;
}

/* Tekken (Mistral) and GPT-4o (also Llama 4): case-aware words,
 *   [^\r\n\p{L}\p{N}]?U*L+C? | [^\r\n\p{L}\p{N}]?U+L*C? | \p{N}{1,D}
 *   | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * where U is a letter but not a-z, L a letter but not A-Z (llama.cpp's
 * ((?=[\p{L}])([^a-z])) lookaheads; other scripts' letters are both), C
 * an optional 's 't 're 've 'm 'll 'd (GPT-4o only) and D 1 (Tekken) or 3.
 * Matched as std::regex backtracks: U* gives back letters until L+ fits. */
/* with marks, U and L take \p{M} too (Granite embedding multilingual) */
static bool is_lm_cased(const span *s, size_t p, bool marks) { return is_l(s, p) || (marks && is_m(s, p)); }
static bool up_letter(const span *s, size_t p, bool marks) {
    return is_lm_cased(s, p, marks) && !(s->c[p] >= 'a' && s->c[p] <= 'z');
}
static bool low_letter(const span *s, size_t p, bool marks) {
    return is_lm_cased(s, p, marks) && !(s->c[p] >= 'A' && s->c[p] <= 'Z');
}
static bool lead_char(const span *s, size_t p) {
    return in(s, p) && s->c[p] != '\r' && s->c[p] != '\n' && !is_l(s, p) && !is_n(s, p);
}

/* U*L+ (first) or U+L* (second) from q: the end, or 0 if no match */
static size_t cased_word(const span *s, size_t q, bool first, bool marks) {
    size_t u = q;
    while (up_letter(s, u, marks))
        u++;
    if (first) {
        for (size_t k = u;; k--) { /* U* as long as L+ still fits after it */
            if (low_letter(s, k, marks)) {
                size_t e = k;
                while (low_letter(s, e, marks))
                    e++;
                return e;
            }
            if (k == q)
                return 0;
        }
    }
    if (u == q)
        return 0;
    while (low_letter(s, u, marks))
        u++;
    return u;
}

/* (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]) at p: its length */
static size_t cased_contraction(const span *s, size_t p) { return contraction(s, p, true); }

static size_t m_cased(const span *s, size_t p, bool suffix, size_t max_digits, bool marks) {
    for (int alt = 0; alt < 2; alt++) {
        for (int lead = 1; lead >= 0; lead--) {
            if (lead && !lead_char(s, p))
                continue;
            size_t e = cased_word(s, p + (size_t)lead, alt == 0, marks);
            if (e) {
                if (suffix)
                    e += cased_contraction(s, e);
                return e - p;
            }
        }
    }
    if (is_n(s, p)) {
        size_t q = p;
        while (is_n(s, q) && q - p < max_digits)
            q++;
        return q - p;
    }
    size_t f = at(s, p) == ' ' && is_other(s, p + 1) ? p + 1 : p;
    if (is_other(s, f)) {
        while (is_other(s, f))
            f++;
        while (at(s, f) == '\r' || at(s, f) == '\n' || at(s, f) == '/')
            f++;
        return f - p;
    }
    size_t nws = 0, last_rn = 0;
    while (is_ws(s, p + nws)) {
        uint32_t w = at(s, p + nws);
        if (w == '\r' || w == '\n')
            last_rn = p + nws + 1;
        nws++;
    }
    if (last_rn)
        return last_rn - p;
    if (nws > 1 && in(s, p + nws))
        return nws - 1;
    return nws ? nws : 1;
}

static size_t m_tekken(const span *s, size_t p) { return m_cased(s, p, false, 1, false); }
static size_t m_gpt4o(const span *s, size_t p) { return m_cased(s, p, true, 3, false); }
static size_t m_granite_multi(const span *s, size_t p) { return m_cased(s, p, true, 3, true); }

/* DeepSeek V3 (also Hunyuan dense, JoyAI; LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM):
 *   \p{N}{1,3}  then  [一-龥぀-ゟ゠-ヿ]+  then
 *   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
 *   | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ | ?[\p{P}\p{S}]+[\r\n]*
 *   | \s*[\r\n]+ | \s+(?!\S) | \s+
 * all three through std::regex (the first and last on llama.cpp's
 * category-collapsed text), so alternatives are tried in order. */
static size_t m_digits3(const span *s, size_t p) {
    size_t q = p;
    while (q - p < 3 && in(s, q) && cat_seen(s->c[q]) == TPORT_UCAT_NUMBER)
        q++;
    return q - p;
}
static bool ds3_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x309F) || (c >= 0x30A0 && c <= 0x30FF);
}
static size_t m_ds3_cjk(const span *s, size_t p) {
    size_t q = p;
    while (in(s, q) && ds3_cjk(s->c[q]))
        q++;
    return q - p;
}
static bool ascii_alpha(uint32_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static bool ascii_punct(uint32_t c) { return c > 0x20 && c < 0x7F && !ascii_alpha(c) && !(c >= '0' && c <= '9'); }
static bool c_lm(const span *s, size_t p) {
    enum tport_ucat k = in(s, p) ? cat_seen(s->c[p]) : TPORT_UCAT_UNDEFINED;
    return in(s, p) && (k == TPORT_UCAT_LETTER || k == TPORT_UCAT_MARK);
}
static bool c_ps(const span *s, size_t p) {
    enum tport_ucat k = in(s, p) ? cat_seen(s->c[p]) : TPORT_UCAT_UNDEFINED;
    return in(s, p) && (k == TPORT_UCAT_PUNCTUATION || k == TPORT_UCAT_SYMBOL);
}
static bool c_sp(const span *s, size_t p) { return in(s, p) && ascii_space(seen(s->c[p])); }

static size_t m_ds3_main(const span *s, size_t p) {
    uint32_t c = at(s, p);
    size_t q = p;
    if (in(s, p) && ascii_punct(c) && in(s, p + 1) && ascii_alpha(s->c[p + 1])) {
        for (q = p + 1; in(s, q) && ascii_alpha(s->c[q]); q++) {
        }
        return q - p;
    }
    /* the optional lead is anything but CR, LF, letters, punctuation and
     * symbols: white space, digits, marks, controls */
    bool lead = in(s, p) && c != '\r' && c != '\n' && !c_ps(s, p) && !(cat_seen(c) == TPORT_UCAT_LETTER);
    if ((lead && c_lm(s, p + 1)) || c_lm(s, p)) {
        for (q = p + 1; c_lm(s, q); q++) {
        }
        return q - p;
    }
    q = c == ' ' && c_ps(s, p + 1) ? p + 1 : p;
    if (c_ps(s, q)) {
        while (c_ps(s, q))
            q++;
        while (at(s, q) == '\r' || at(s, q) == '\n')
            q++;
        return q - p;
    }
    size_t nws = 0, last_rn = 0;
    while (c_sp(s, p + nws)) {
        uint32_t w = at(s, p + nws);
        if (w == '\r' || w == '\n')
            last_rn = p + nws + 1;
        nws++;
    }
    if (last_rn)
        return last_rn - p;
    if (nws > 1 && in(s, p + nws)) /* \s+(?!\S): leave the last one */
        return nws - 1;
    return nws; /* 0: no alternative matches here (a digit or control alone) */
}

/* AFMoE's kana, CJK, Thai, Lao, Khmer, Myanmar, Hangul... runs, the code
 * points of its regex as written (豈 is U+8C48 there, not U+F900) */
static const cp_range AFMOE_CJK[] = {
    {0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x8C48, 0xFAFF}, {0x3040, 0x309F}, {0x30A0, 0x30FF},
    {0xFF65, 0xFF9F}, {0x2F00, 0x2FDF}, {0x0E40, 0x0E7F}, {0x0E80, 0x0EFF}, {0x1780, 0x17FF},
    {0x1000, 0x109F}, {0xAA60, 0xAA7F}, {0xA9E0, 0xA9FF}, {0xAC00, 0xD7AF}, {0x1100, 0x11FF},
};
static size_t m_afmoe_cjk(const span *s, size_t p) {
    size_t q = p;
    while (in(s, q) && IN(AFMOE_CJK, s->c[q]))
        q++;
    return q - p;
}

/* Digit runs in threes from the right (unicode_regex_split_custom_afmoe,
 * also tiny_aya's \d{1,3}(?=(?:\d{3})*\b)): the leading one or two digits
 * go with the text before them, as llama.cpp cuts. */
static void split_afmoe_digits(const span *s, pieces *o) {
    size_t prev = s->ini;
    for (size_t pos = s->ini; pos < s->end;) {
        if (!is_n(s, pos)) {
            pos++;
            continue;
        }
        size_t ini = pos;
        while (is_n(s, pos))
            pos++;
        size_t cur = ini + (pos - ini) % 3;
        if (cur > ini)
            cut(o, &prev, cur);
        for (; cur < pos; cur += 3)
            cut(o, &prev, cur + 3);
    }
    cut(o, &prev, s->end);
}

/* The Llama 3 family of patterns as std::regex runs them (not llama.cpp's
 * hand-written splitters), on the category-collapsed text:
 *   [contractions] | [^\r\n\p{L}\p{N}]?L+[contraction]? | \p{N}{1,D}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 * with L = \p{L} or [\p{L}\p{M}], [\r\n/]* after punctuation for some. */
typedef struct std_words {
    bool lead_contraction, marks, suffix, trail_rn, trail_slash;
    bool trail_one; /* [\r\n/]? rather than [\r\n/]* (EXAONE MoE)       */
    bool spaced;    /* (?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+: words joined by single spaces */
    bool cascade;   /* \s{512}(?!\S)|\s{256}(?!\S)|...|\s{1,2}(?!\S)|\s{1} (Jais 2) */
    size_t max_digits;
} std_words;

static bool c_l(const span *s, size_t p) { return in(s, p) && cat_seen(s->c[p]) == TPORT_UCAT_LETTER; }
static bool c_n(const span *s, size_t p) { return in(s, p) && cat_seen(s->c[p]) == TPORT_UCAT_NUMBER; }
static bool c_other(const span *s, size_t p) { return in(s, p) && !c_sp(s, p) && !c_l(s, p) && !c_n(s, p); }

static size_t m_std_words(const span *s, size_t p, const std_words *w) {
    uint32_t c = at(s, p);
    size_t q;
    if (w->lead_contraction && (q = contraction(s, p, true)) > 0)
        return q;
    bool lead = in(s, p) && c != '\r' && c != '\n' && !c_l(s, p) && !c_n(s, p);
#define LM(x) (c_l(s, x) || (w->marks && in(s, x) && cat_seen(s->c[x]) == TPORT_UCAT_MARK))
#define MARK(x) (in(s, x) && cat_seen(s->c[x]) == TPORT_UCAT_MARK)
    if (w->spaced && ((lead && c_l(s, p + 1)) || c_l(s, p))) {
        for (q = c_l(s, p) ? p + 1 : p + 2;;) {
            if (c_l(s, q) || MARK(q))
                q++;
            else if (at(s, q) == ' ' && c_l(s, q + 1))
                q += 2;
            else
                return q - p;
        }
    }
#undef MARK
    if (!w->spaced && ((lead && LM(p + 1)) || LM(p))) {
        for (q = p + 1; LM(q); q++) {
        }
        if (w->suffix)
            q += contraction(s, q, true);
        return q - p;
    }
#undef LM
    if (c_n(s, p)) {
        for (q = p; c_n(s, q) && q - p < w->max_digits; q++) {
        }
        return q - p;
    }
    q = c == ' ' && c_other(s, p + 1) ? p + 1 : p;
    if (c_other(s, q)) {
        while (c_other(s, q))
            q++;
        while (w->trail_rn && (at(s, q) == '\r' || at(s, q) == '\n' || (w->trail_slash && at(s, q) == '/'))) {
            q++;
            if (w->trail_one)
                break;
        }
        return q - p;
    }
    size_t nws = 0, last_rn = 0;
    while (c_sp(s, p + nws)) {
        uint32_t x = at(s, p + nws);
        if (x == '\r' || x == '\n')
            last_rn = p + nws + 1;
        nws++;
    }
    if (last_rn)
        return last_rn - p;
    if (w->cascade && nws) { /* the first width whose end is not before a non-space */
        static const size_t widths[] = {512, 256, 128, 64, 32, 16, 8, 4, 2, 1};
        for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
            if (widths[i] < nws || (widths[i] == nws && !in(s, p + nws)))
                return widths[i];
        return 1;
    }
    if (nws > 1 && in(s, p + nws))
        return nws - 1;
    return nws;
}

/* EXAONE MoE: letters with their marks, words joined by single spaces */
static size_t m_exaone_moe(const span *s, size_t p) {
    static const std_words w = {.lead_contraction = true, .spaced = true, .max_digits = 1, .trail_rn = true,
                                .trail_slash = true, .trail_one = true};
    return m_std_words(s, p, &w);
}
/* Jais 2: Llama 3's pattern, white space cut in powers of two */
static size_t m_jais2(const span *s, size_t p) {
    static const std_words w = {.lead_contraction = true, .max_digits = 3, .trail_rn = true, .cascade = true};
    return m_std_words(s, p, &w);
}
/* Youtu: Hangul, CJK punctuation, Bopomofo, CJK and kana runs first */
static const cp_range YOUTU_HANGUL[] = {{0xAC00, 0xD7A3}, {0x3131, 0x318E}};
static const cp_range YOUTU_PUNCT[] = {{0xFF01, 0xFF01}, {0x2026, 0x2026}, {0x201C, 0x201D}, {0x2018, 0x2019},
                                       {0x2014, 0x2014}, {0xFF1A, 0xFF1B}, {0xFF0C, 0xFF0C}, {0x3001, 0x303F},
                                       {0xFE30, 0xFE4F}};
static const cp_range YOUTU_BOPOMOFO[] = {{0x3105, 0x312F}};
static const cp_range YOUTU_CJK[] = {{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}};
static size_t m_youtu_scripts(const span *s, size_t p) {
    size_t q = p;
#define RUN(t)                                          \
    if (in(s, q) && IN(t, s->c[q])) {                   \
        while (in(s, q) && IN(t, s->c[q]))              \
            q++;                                        \
        return q - p;                                   \
    }
    RUN(YOUTU_HANGUL)
    RUN(YOUTU_PUNCT)
    RUN(YOUTU_BOPOMOFO)
    RUN(YOUTU_CJK)
#undef RUN
    return 0;
}
static size_t m_youtu(const span *s, size_t p) {
    static const std_words w = {.marks = true, .suffix = true, .max_digits = 1, .trail_rn = true, .trail_slash = true};
    return m_std_words(s, p, &w);
}

/* Seed-Coder: one digit, punctuation without a line break after it */
static size_t m_seed_coder(const span *s, size_t p) {
    static const std_words w = {.lead_contraction = true, .max_digits = 1};
    return m_std_words(s, p, &w);
}
/* Ling (bailingmoe, bailingmoe2, llada-moe): one digit; \s*[\r\n] ends
 * where \s*[\r\n]+ does */
static size_t m_bailing(const span *s, size_t p) {
    static const std_words w = {.lead_contraction = true, .max_digits = 1, .trail_rn = true};
    return m_std_words(s, p, &w);
}
/* MiniCPM 5: any number of digits (after the \p{N}{1,3} pass) */
static size_t m_minicpm5(const span *s, size_t p) {
    static const std_words w = {.lead_contraction = true, .max_digits = (size_t)-1, .trail_rn = true};
    return m_std_words(s, p, &w);
}
/* Tiny Aya, Cohere2 MoE: GPT-4o's pattern with marks, whose case classes
 * std::regex collapses to letters */
static size_t m_tiny_aya(const span *s, size_t p) {
    static const std_words w = {.marks = true, .suffix = true, .max_digits = 3, .trail_rn = true, .trail_slash = true};
    return m_std_words(s, p, &w);
}

typedef size_t (*match_fn)(const span *, size_t);

/* Leftmost matches and the gaps between them, as regex_iterator gives. */
static void split_search(const span *s, pieces *o, match_fn match) {
    size_t gap = s->ini;
    for (size_t pos = s->ini; pos < s->end;) {
        size_t m = match(s, pos);
        if (m == 0) {
            pos++;
            continue;
        }
        add_len(o, pos - gap);
        add_len(o, m);
        pos += m;
        gap = pos;
    }
    add_len(o, s->end - gap);
}

/* ---- pre-tokenizers ---------------------------------------------------- */

typedef enum pass_kind {
    PASS_GPT2,
    PASS_LLAMA3,
    PASS_QWEN2,
    PASS_QWEN35,
    PASS_NEWLINES,
    PASS_AFMOE_DIGITS,
    PASS_SEARCH
} pass_kind;
typedef struct pass {
    pass_kind kind;
    match_fn match;
} pass;

#define MAX_PASSES 6

static int passes_of(tport_pretok pre, pass *p) {
    int n = 0;
    switch (pre) {
    case TPORT_PRE_GPT2:
        p[n++] = (pass){PASS_GPT2, NULL};
        break;
    case TPORT_PRE_LLAMA3:
        p[n++] = (pass){PASS_LLAMA3, NULL};
        break;
    case TPORT_PRE_QWEN2:
        p[n++] = (pass){PASS_QWEN2, NULL};
        break;
    case TPORT_PRE_QWEN35:
        p[n++] = (pass){PASS_QWEN35, NULL};
        break;
    case TPORT_PRE_NEWLINES:
        p[n++] = (pass){PASS_NEWLINES, NULL};
        break;
    case TPORT_PRE_STARCODER:
        p[n++] = (pass){PASS_SEARCH, m_number};
        p[n++] = (pass){PASS_GPT2, NULL};
        break;
    case TPORT_PRE_FALCON:
        p[n++] = (pass){PASS_SEARCH, m_punct_falcon};
        p[n++] = (pass){PASS_GPT2, NULL};
        p[n++] = (pass){PASS_SEARCH, m_three_digits};
        break;
    case TPORT_PRE_BLOOM:
        p[n++] = (pass){PASS_SEARCH, m_bloom};
        break;
    case TPORT_PRE_VIKING:
        p[n++] = (pass){PASS_SEARCH, m_bloom};
        p[n++] = (pass){PASS_SEARCH, m_number};
        break;
    case TPORT_PRE_DEEPSEEK_LLM:
        p[n++] = (pass){PASS_SEARCH, m_cr_or_lf};
        p[n++] = (pass){PASS_SEARCH, m_ds_letters};
        p[n++] = (pass){PASS_SEARCH, m_ds_punct};
        p[n++] = (pass){PASS_SEARCH, m_trailing_space};
        p[n++] = (pass){PASS_SEARCH, m_ds_cjk};
        p[n++] = (pass){PASS_SEARCH, m_numbers};
        break;
    case TPORT_PRE_DEEPSEEK_CODER:
        p[n++] = (pass){PASS_SEARCH, m_cr_or_lf};
        p[n++] = (pass){PASS_SEARCH, m_sp_letters};
        p[n++] = (pass){PASS_SEARCH, m_sp_punct};
        p[n++] = (pass){PASS_SEARCH, m_ds_cjk};
        p[n++] = (pass){PASS_SEARCH, m_number};
        break;
    case TPORT_PRE_DEEPSEEK3:
        p[n++] = (pass){PASS_SEARCH, m_digits3};
        p[n++] = (pass){PASS_SEARCH, m_ds3_cjk};
        p[n++] = (pass){PASS_SEARCH, m_ds3_main};
        break;
    case TPORT_PRE_AFMOE:
        p[n++] = (pass){PASS_AFMOE_DIGITS, NULL};
        p[n++] = (pass){PASS_SEARCH, m_afmoe_cjk};
        p[n++] = (pass){PASS_SEARCH, m_ds3_main};
        break;
    case TPORT_PRE_TINY_AYA:
        p[n++] = (pass){PASS_AFMOE_DIGITS, NULL};
        p[n++] = (pass){PASS_SEARCH, m_tiny_aya};
        break;
    case TPORT_PRE_SEED_CODER:
        p[n++] = (pass){PASS_SEARCH, m_seed_coder};
        break;
    case TPORT_PRE_BAILINGMOE:
        p[n++] = (pass){PASS_SEARCH, m_bailing};
        break;
    case TPORT_PRE_MINICPM5:
        p[n++] = (pass){PASS_SEARCH, m_digits3};
        p[n++] = (pass){PASS_SEARCH, m_minicpm5};
        break;
    case TPORT_PRE_GRANITE_MULTI:
        p[n++] = (pass){PASS_SEARCH, m_granite_multi};
        break;
    case TPORT_PRE_EXAONE_MOE:
        p[n++] = (pass){PASS_SEARCH, m_exaone_moe};
        break;
    case TPORT_PRE_JAIS2:
        p[n++] = (pass){PASS_SEARCH, m_jais2};
        break;
    case TPORT_PRE_YOUTU:
        p[n++] = (pass){PASS_SEARCH, m_youtu_scripts};
        p[n++] = (pass){PASS_SEARCH, m_youtu};
        break;
    case TPORT_PRE_LAGUNA:
        p[n++] = (pass){PASS_NEWLINES, NULL};
        p[n++] = (pass){PASS_QWEN2, NULL};
        break;
    case TPORT_PRE_TEKKEN:
        p[n++] = (pass){PASS_SEARCH, m_tekken};
        break;
    case TPORT_PRE_GPT4O:
        p[n++] = (pass){PASS_SEARCH, m_gpt4o};
        break;
    case TPORT_PRE_DEFAULT:
    default:
        p[n++] = (pass){PASS_SEARCH, m_punct_default};
        p[n++] = (pass){PASS_GPT2, NULL};
        p[n++] = (pass){PASS_SEARCH, m_numbers};
        p[n++] = (pass){PASS_SEARCH, m_three_digits};
        break;
    }
    return n;
}

bool tport_pretok_supported(tport_pretok pre) {
    pass p[MAX_PASSES];
    return passes_of(pre, p) >= 0;
}

static int run_pass(const pass *ps, const uint32_t *cpt, const pieces *in_p, pieces *out) {
    size_t start = 0;
    for (size_t i = 0; i < in_p->n; i++) {
        span s = {cpt, start, start + in_p->len[i]};
        switch (ps->kind) {
        case PASS_GPT2:
            split_gpt2(&s, out);
            break;
        case PASS_LLAMA3:
            split_llama3(&s, out, 3, false);
            break;
        case PASS_QWEN2:
            split_llama3(&s, out, 1, false);
            break;
        case PASS_QWEN35:
            split_llama3(&s, out, 1, true);
            break;
        case PASS_NEWLINES:
            split_newlines(&s, out);
            break;
        case PASS_AFMOE_DIGITS:
            split_afmoe_digits(&s, out);
            break;
        case PASS_SEARCH:
            split_search(&s, out, ps->match);
            break;
        }
        start = s.end;
    }
    return out->oom ? -1 : 0;
}

int tport_pretokenize(tport_pretok pre, const char *text, size_t len, bool byte_encode, char **buf,
                      size_t **word_len, size_t *n_words) {
    *buf = NULL;
    *word_len = NULL;
    *n_words = 0;
    pass ps[MAX_PASSES];
    int np = passes_of(pre, ps);
    if (np < 0)
        return -1;
    uint32_t *cpt = malloc((len ? len : 1) * sizeof *cpt);
    if (!cpt)
        return -1;
    size_t n = 0;
    for (size_t off = 0, used = 0; off < len; off += used)
        cpt[n++] = tport_utf8_decode(text + off, len - off, &used);
    pieces cur = {0};
    add_len(&cur, n);
    int rc = cur.oom ? -1 : 0;
    for (int i = 0; i < np && rc == 0; i++) {
        pieces next = {0};
        rc = run_pass(&ps[i], cpt, &cur, &next);
        free(cur.len);
        cur = next;
    }
    /* each code point becomes its UTF-8 bytes, with byte_encode each byte
     * one GPT-2 code point of at most 2 bytes */
    char *out = rc == 0 ? malloc(n * 8 + 1) : NULL;
    if (!out)
        rc = -1;
    size_t k = 0, start = 0;
    for (size_t w = 0; rc == 0 && w < cur.n; w++) {
        size_t before = k;
        for (size_t i = start; i < start + cur.len[w]; i++) {
            char u[4];
            size_t m = tport_utf8_encode(cpt[i], u);
            for (size_t j = 0; j < m; j++)
                if (byte_encode)
                    k += tport_utf8_encode(tport_gpt2_byte_to_cpt((uint8_t)u[j]), out + k);
                else
                    out[k++] = u[j];
        }
        start += cur.len[w];
        cur.len[w] = k - before; /* now in bytes */
    }
    free(cpt);
    if (rc != 0) {
        free(out);
        free(cur.len);
        return -1;
    }
    *buf = out;
    *word_len = cur.len;
    *n_words = cur.n;
    return 0;
}
