/* Writes the GGML-container file that ggml's example programs (gpt-2,
 * starcoder, mpt, gpt-neox) read, holding the weights of a GGUF model
 * written by `tport synth` (f32): the example's hparams header, its
 * vocabulary (with an i32 count first, except gpt-neox and mpt), its
 * tensor names (the arch's legacy_names), gpt-neox's query_key_value per
 * head interleaved.  Optionally some 2-D tensors are
 * quantized, as the examples' quantize tools do (formats.md 1.3-1.6). */
#ifndef TPORT_TESTS_GGML_EXAMPLE_WRITER_H
#define TPORT_TESTS_GGML_EXAMPLE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/model_file.h"
#include "model/arch/arch.h"

typedef enum {
    EXAMPLE_VOCAB_AS_GGUF, /* the GGUF token strings unchanged (GPT-2's byte-to-unicode form) */
    EXAMPLE_VOCAB_BYTES,   /* each token's raw bytes, as the gpt-2/gpt-j/starcoder converters write */
    EXAMPLE_VOCAB_LATIN1,  /* each raw byte as the UTF-8 of U+00XX, as mpt's converter (ggml, June 2023) writes */
} example_vocab_form;

typedef struct example_write_opts {
    example_vocab_form vocab;
    bool expand_mqa;               /* c_attn's one K,V head repeated n_head times (ggml's starcoder converter) */
    int32_t ftype;                 /* the header's ftype (qnt * 1000 + ftype); 0 = all f32 */
    int qtype;                     /* tensorport type of the quantized tensors, -1 = none */
    const char *rule;              /* tport_quantize rule, NULL = the default */
    int32_t qcode;                 /* the ggml type id written for them */
    const char *const *quantized;  /* example names of the tensors to quantize */
    int n_quantized;
} example_write_opts;

/* false (with a line on stderr) on failure. */
bool ggml_example_write(const tport_model_file *mf, const tport_arch *arch, const char *path,
                        const example_write_opts *o);

#endif
