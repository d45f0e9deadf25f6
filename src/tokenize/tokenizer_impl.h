/* Private to the tokenizer files: the vocabulary, its lookup tables and
 * the per-family settings (llama.cpp's llama_vocab::impl, in C). */
#ifndef TPORT_TOKENIZE_TOKENIZER_IMPL_H
#define TPORT_TOKENIZE_TOKENIZER_IMPL_H

#include "tokenize/tokenizer.h"

/* Token attributes, as llama.cpp keeps them beside the GGUF token type
 * (several can be set: a re-marked token is USER_DEFINED|CONTROL). */
enum {
    TPORT_ATTR_UNKNOWN = 1 << 0,
    TPORT_ATTR_UNUSED = 1 << 1,
    TPORT_ATTR_NORMAL = 1 << 2,
    TPORT_ATTR_CONTROL = 1 << 3,
    TPORT_ATTR_USER_DEFINED = 1 << 4,
    TPORT_ATTR_BYTE = 1 << 5,
    TPORT_ATTR_LSTRIP = 1 << 6, /* eat white space before the token */
    TPORT_ATTR_RSTRIP = 1 << 7, /* and after it                      */
};

typedef enum tport_tok_kind {
    TPORT_TOK_SPM = 0, /* SentencePiece-style: scores, U+2581, <0xXX>     */
    TPORT_TOK_BPE,     /* byte-level BPE: ranked merges, GPT-2 alphabet   */
    TPORT_TOK_GREEDY,  /* ggml's 2023 examples: raw-byte tokens, no merges,
                          longest match per word (gpt_tokenize)           */
    TPORT_TOK_WPM,     /* WordPiece (BERT): normalized words, longest pieces */
    TPORT_TOK_UGM,     /* Unigram (T5): charsmap normalizer, Viterbi       */
} tport_tok_kind;

/* Pre-tokenizers (GGUF tokenizer.ggml.pre), grouped as llama.cpp groups
 * the names; each is a list of regex passes (tokenizer_pretok.c). */
typedef enum tport_pretok {
    TPORT_PRE_DEFAULT = 0,
    TPORT_PRE_GPT2,
    TPORT_PRE_LLAMA3,
    TPORT_PRE_QWEN2,
    TPORT_PRE_STARCODER,
    TPORT_PRE_FALCON,
    TPORT_PRE_BLOOM,
    TPORT_PRE_VIKING,
    TPORT_PRE_DEEPSEEK_LLM,
    TPORT_PRE_DEEPSEEK_CODER,
    TPORT_PRE_TEKKEN,
    TPORT_PRE_GPT4O,
    TPORT_PRE_QWEN35,  /* Qwen2 with combining marks in letter runs */
    TPORT_PRE_NEWLINES, /* [^\n]+|[\n]+ (Gemma 4)                     */
    TPORT_PRE_DEEPSEEK3, /* DeepSeek V3, Hunyuan dense, JoyAI          */
    TPORT_PRE_LAGUNA,   /* [^\n]+|[\n]+ then Qwen2                     */
    TPORT_PRE_AFMOE,    /* digits by threes, Asian scripts, DeepSeek V3's words */
    TPORT_PRE_TINY_AYA, /* digits by threes, GPT-4o's words with marks */
    TPORT_PRE_SEED_CODER,
    TPORT_PRE_BAILINGMOE,
    TPORT_PRE_MINICPM5,
    TPORT_PRE_GRANITE_MULTI, /* GPT-4o's lookaheads with marks        */
    TPORT_PRE_EXAONE_MOE,
    TPORT_PRE_JAIS2,
    TPORT_PRE_YOUTU,
} tport_pretok;

typedef struct tport_merge_slot {
    uint32_t off;          /* left then right text in merge_pool          */
    uint32_t left_len, right_len;
    int32_t rank;          /* -1 = empty slot                              */
} tport_merge_slot;

struct tport_tokenizer {
    int32_t n_tokens;
    char **text;          /* NUL-terminated, len[i] bytes (may hold NULs) */
    uint32_t *len;
    float *score;
    int32_t *type;        /* TPORT_TOKEN_* as stored (or inferred)        */
    uint16_t *attr;       /* TPORT_ATTR_*                                 */
    tport_token bos, eos, unk;
    bool add_space_prefix;
    bool add_bos, add_eos; /* what add_special adds                       */
    tport_tok_kind kind;
    tport_pretok pre;
    bool ignore_merges;   /* a pre-token that is a token is taken whole   */
    /* SentencePiece-style BPE (Gemma 4, llama.cpp's escape_whitespaces
     * without byte_encode): spaces become U+2581 before pre-tokenization,
     * words are raw UTF-8, unknown bytes are <0xXX> tokens, a word of
     * newlines that is a token is taken whole */
    bool spm_bpe;
    /* WordPiece: BERT's normalizer (lowercase, strip accents), the longest
     * token in bytes, and the separator add_special appends */
    bool wpm_lowercase, wpm_strip_accents;
    uint32_t max_token_len;
    tport_token sep;
    /* Unigram (tokenizer_ugm.c): a copy of the precompiled charsmap (u32
     * size, double array, replacement strings at repl_off), whether runs of
     * spaces merge (remove_extra_whitespaces), the unknown token's score,
     * and which bytes start a user-defined token (a bitmap) */
    uint8_t *charsmap;
    size_t charsmap_size, n_xcda, repl_off;
    bool ugm_merge_spaces;
    float ugm_unk_score;
    uint8_t ugm_user_first[32];
    /* open-addressing hash of text -> id; slots hold id+1, 0 = empty */
    uint32_t hash_cap;    /* a power of two                               */
    int32_t *hash;
    tport_token byte_token[256]; /* <0xXX> ids, -1 if absent              */
    /* BPE merges: (left, right) -> rank; first occurrence wins */
    tport_merge_slot *merges;
    uint32_t merge_cap;   /* a power of two, 0 if none                    */
    char *merge_pool;     /* the texts, back to back                     */
    size_t merge_pool_used, merge_pool_cap;
    /* control, user-defined and unknown tokens, longest text first: what
     * the text is split at before pre-tokenization */
    tport_token *special;
    int32_t n_special;
};

/* Allocates an empty tokenizer for n tokens (arrays zeroed). */
tport_tokenizer *tport_tokenizer_alloc(int32_t n_tokens);
/* Builds the hash and the byte table once text/len/type are filled; a
 * later duplicate text wins, as in llama.cpp's token_to_id map. */
tport_status tport_tokenizer_index(tport_tokenizer *tk);
/* Copies a file's tokens (text, score, type -> attr); escape: replace
 * plain spaces by U+2581 (pre-GGUF SentencePiece vocabularies). */
tport_status tport_tokenizer_copy_tokens(tport_tokenizer *tk, const tport_vocab *v, bool escape);
/* attr[] from type[]; then the special-token list. */
void tport_tokenizer_attrs_from_types(tport_tokenizer *tk);
tport_status tport_tokenizer_index_special(tport_tokenizer *tk);

/* Copy of s (n bytes) with every ' ' replaced by U+2581, NUL-terminated;
 * NULL if out of memory. */
char *tport_spm_escape(const char *s, uint32_t n, uint32_t *out_len);
/* "<0xXX>": the byte value, else -1. */
int tport_byte_token_value(const char *s, uint32_t len);

/* Merge rank of (left, right), or -1. */
int32_t tport_bpe_rank(const tport_tokenizer *tk, const char *l, size_t ln, const char *r, size_t rn);
/* Makes room for n merges of `bytes` text bytes in all. */
tport_status tport_bpe_reserve_merges(tport_tokenizer *tk, size_t n, size_t bytes);
/* Adds a merge "left right" (split at the first space after byte 0, as
 * llama.cpp does); a pair seen before keeps its first rank.  Within what
 * was reserved. */
void tport_bpe_add_merge(tport_tokenizer *tk, const char *s, size_t n, int32_t rank);

/* Output of the encoders: ids are counted always, stored up to cap. */
typedef struct tport_tok_out {
    tport_token *ids;
    int32_t cap, n;
} tport_tok_out;

static inline void tport_tok_emit(tport_tok_out *o, tport_token id) {
    if (o->n < o->cap)
        o->ids[o->n] = id;
    o->n++;
}

/* One fragment of raw text (no special tokens in it).  0 or -1 (OOM). */
int tport_spm_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len,
                              bool space_prefix, tport_tok_out *out);
int tport_greedy_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len,
                                 tport_tok_out *out);
int tport_bpe_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len,
                              tport_tok_out *out);
/* Unigram: -2 when the charsmap is malformed (an index past its end). */
int tport_ugm_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len, tport_tok_out *out);
/* Copies a precompiled charsmap (checked: header and sizes; indexes are
 * checked as they are used). */
tport_status tport_ugm_set_charsmap(tport_tokenizer *tk, const uint8_t *data, size_t size);
/* Once attributes are final: the unknown score and user-defined starts. */
void tport_ugm_finish(tport_tokenizer *tk);
int tport_wpm_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len, tport_tok_out *out);

/* Pre-tokenization: splits len bytes of UTF-8 into words, re-encoded in
 * GPT-2's byte alphabet when byte_encode (invalid UTF-8 counts as U+FFFD,
 * as in llama.cpp), else as UTF-8.
 * *buf holds the words back to back, (*word_len)[i] their byte lengths;
 * both malloc'd.  0, or -1 (out of memory). */
bool tport_pretok_supported(tport_pretok pre);
int tport_pretokenize(tport_pretok pre, const char *text, size_t len, bool byte_encode, char **buf,
                      size_t **word_len, size_t *n_words);

#endif
