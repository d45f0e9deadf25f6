/* Test helper: writes the llama model of a tport_model_file again, as GGUF
 * v3 (through the formats GGUF writer) or in a pre-GGUF container (GGML,
 * GGMF v1, GGJT v1-v3, built byte by byte from the documented layout with
 * tests/formats/byte_builder.h), with every matrix whose rows allow it
 * converted to one type.  Norms stay f32; the legacy containers get a
 * vocabulary of n_vocab dummy tokens and an explicit output.weight, as
 * their readers require. */
#ifndef TPORT_TEST_MODEL_WRITER_H
#define TPORT_TEST_MODEL_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/model_file.h"
#include "quant/convert.h"

#define MW_MAGIC_GGML 0x67676d6cu
#define MW_MAGIC_GGMF 0x67676d66u
#define MW_MAGIC_GGJT 0x67676a74u

typedef struct mw_result {
    int n_converted;           /* matrices converted to mat_type          */
    int n_kept_f32;            /* matrices whose rows do not fit its blocks */
    tport_conv_kind worst;     /* the costliest conversion made            */
} mw_result;

/* mat_type must be a current (GGUF) type. */
bool mw_write_gguf(const tport_model_file *src, tport_type_id mat_type, const char *path, mw_result *res);

/* magic MW_MAGIC_*, version (ignored for GGML); mat_code is the on-disk
 * ggml type code for mat_type at that container's quantization version
 * (0 f32, 1 f16, 2 q4_0, 3 q4_1, 8 q8_0). */
bool mw_write_legacy(const tport_model_file *src, uint32_t magic, uint32_t version, tport_type_id mat_type,
                     uint32_t mat_code, const char *path, mw_result *res);

/* A fresh temporary file name (cap >= 256); the file exists, empty. */
void mw_temp_path(char *path, const char *tag);

#endif
