/* tport convert's handling of the ggml examples' files (convert_arch.c). */
#ifndef TPORT_TOOLS_CONVERT_ARCH_H
#define TPORT_TOOLS_CONVERT_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "tport/gguf.h"
#include "tport/model_file.h"

/* (GGUF names of their tensors: tport_model_file_gguf_name.) */
/* Re-orders n_rows rows of data from per-head [q,k,v] to [Q|K|V]. */
tport_status convert_arch_deinterleave(void *data, uint64_t nbytes, int64_t n_rows, int64_t heads, int64_t hd);
/* Every tokenizer.* key of a GGUF file with n_tokens tokens. */
tport_status convert_vocab_from(tport_gguf_writer *w, const char *path, int32_t n_tokens);

#endif
