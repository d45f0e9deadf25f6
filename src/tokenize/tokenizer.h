/* Tokenizers, as llama.cpp's llama_tokenize: SentencePiece BPE (GGUF
 * "llama", legacy llama files, llama2.c's tokenizer.bin), byte-level BPE
 * with merges and pre-tokenizers (GGUF "gpt2"), WordPiece ("bert"),
 * Unigram ("t5"), and the greedy tokenizer of ggml's example programs
 * (their GGML files).  See docs/tokenizers.md. */
#ifndef TPORT_TOKENIZE_TOKENIZER_H
#define TPORT_TOKENIZE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/model_file.h"
#include "tport/tport.h"

/* Token kinds, numbered as GGUF's tokenizer.ggml.token_type. */
enum {
    TPORT_TOKEN_NORMAL = 1,
    TPORT_TOKEN_UNKNOWN = 2,
    TPORT_TOKEN_CONTROL = 3,
    TPORT_TOKEN_USER_DEFINED = 4,
    TPORT_TOKEN_UNUSED = 5,
    TPORT_TOKEN_BYTE = 6,
};

/* tport_tokenizer is declared in tport/tport.h. */

/* The tokenizer a model file describes: "llama" (SentencePiece), "gpt2"
 * (byte-level BPE with merges and a pre-tokenizer), "gemma4", "bert"
 * (WordPiece) or "t5" (Unigram), with llama.cpp's defaults for what the
 * file leaves out.  Needs no tensors. */
tport_status tport_tokenizer_from_file(const tport_model_file *mf, tport_tokenizer **out);
/* Copies a model file's vocabulary (model "llama" only). */
tport_status tport_tokenizer_from_vocab(const tport_vocab *v, bool add_space_prefix,
                                        tport_tokenizer **out);
/* Reads llama2.c's tokenizer.bin: i32 max_token_length, then per token
 * f32 score, i32 len, bytes.  n_vocab is how many tokens the model has
 * (the file must hold at least that many); ids 1/2 are BOS/EOS. */
tport_status tport_tokenizer_load_llama2c(const char *path, int32_t n_vocab,
                                          tport_tokenizer **out);
void tport_tokenizer_free(tport_tokenizer *tk);

int32_t tport_tokenizer_n_tokens(const tport_tokenizer *tk);
tport_token tport_tokenizer_bos(const tport_tokenizer *tk);
tport_token tport_tokenizer_eos(const tport_tokenizer *tk);
/* Text of a token as stored (with U+2581 for spaces), or NULL. */
const char *tport_tokenizer_token_text(const tport_tokenizer *tk, tport_token id, uint32_t *len);
/* Id of a token text, or -1. */
tport_token tport_tokenizer_find(const tport_tokenizer *tk, const char *text, size_t len);

/* Tokenizes len bytes of text as llama.cpp's llama_tokenize: add_special
 * adds BOS/EOS where the vocabulary says so; parse_special matches the
 * text of control tokens too (user-defined ones always).  Writes at most
 * cap ids; returns the number the text needs, or -1 (out of memory), -2
 * (a Unigram vocabulary's precompiled_charsmap is malformed). */
int32_t tport_tokenizer_encode_ex(const tport_tokenizer *tk, const char *text, size_t len,
                                  bool add_special, bool parse_special, tport_token *ids, int32_t cap);
/* The same with parse_special = false. */
int32_t tport_tokenizer_encode(const tport_tokenizer *tk, const char *text, size_t len,
                               bool add_bos, tport_token *ids, int32_t cap);
/* Text of one token: U+2581 becomes a space, byte tokens their byte,
 * control tokens nothing; the leading space of the first token (prev is
 * -1 or BOS) is dropped.  Writes at most cap bytes; returns the number of
 * bytes the piece has. */
int32_t tport_tokenizer_decode(const tport_tokenizer *tk, tport_token prev, tport_token id,
                               char *buf, int32_t cap);

#endif
