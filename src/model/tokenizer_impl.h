/* Private to the tokenizer files: the vocabulary and its lookup table. */
#ifndef TPORT_MODEL_TOKENIZER_IMPL_H
#define TPORT_MODEL_TOKENIZER_IMPL_H

#include "model/tokenizer.h"

struct tport_tokenizer {
    int32_t n_tokens;
    char **text;          /* NUL-terminated, len[i] bytes (may hold NULs) */
    uint32_t *len;
    float *score;
    int32_t *type;        /* TPORT_TOKEN_*                                */
    tport_token bos, eos, unk;
    bool add_space_prefix;
    /* open-addressing hash of text -> id; slots hold id+1, 0 = empty */
    uint32_t hash_cap;    /* a power of two                               */
    int32_t *hash;
    tport_token byte_token[256]; /* <0xXX> ids, -1 if absent              */
};

/* Allocates an empty tokenizer for n tokens (arrays zeroed). */
tport_tokenizer *tport_tokenizer_alloc(int32_t n_tokens);
/* Builds the hash and the byte table once text/len/type are filled; a
 * later duplicate text wins, as in llama.cpp's token_to_id map. */
tport_status tport_tokenizer_index(tport_tokenizer *tk);

/* Copy of s (n bytes) with every ' ' replaced by U+2581, NUL-terminated;
 * NULL if out of memory. */
char *tport_spm_escape(const char *s, uint32_t n, uint32_t *out_len);
/* "<0xXX>": the byte value, else -1. */
int tport_byte_token_value(const char *s, uint32_t len);

#endif
