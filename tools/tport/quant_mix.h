/* llama-quantize's file types ("mixes": Q4_K_M, IQ3_M, ...) and its choice
 * of each tensor's type (llama.cpp src/llama-quant.cpp:
 * tensor_allows_quantization, llama_tensor_get_type_impl,
 * tensor_type_fallback, tensor_requires_imatrix), as one table of rules in
 * quant_mix.c.  `tport convert --type MIX` plans a file with it. */
#ifndef TPORT_TOOL_QUANT_MIX_H
#define TPORT_TOOL_QUANT_MIX_H

#include <stdbool.h>
#include <stdint.h>

#include "tport/types.h"

/* One llama_ftype: the name llama-quantize takes, its number (written as
 * general.file_type) and the type most tensors get. */
typedef struct qmix_ftype {
    const char *name;
    int ftype;
    tport_type_id base;
    const char *about;
} qmix_ftype;

/* The ftype called `name` (case-insensitive, llama-quantize's spelling and
 * aliases: Q4_K = Q4_K_M ...), NULL if none. */
const qmix_ftype *qmix_find(const char *name);
/* The i-th ftype (for listings), NULL past the end. */
const qmix_ftype *qmix_at(int i);

/* What the rules read of the model (llama_hparams). */
typedef struct qmix_model {
    const char *arch;         /* general.architecture                  */
    uint32_t n_layer;         /* ARCH.block_count                      */
    uint32_t n_head, n_head_kv; /* of layer 0; n_gqa = n_head/n_head_kv  */
    uint32_t n_expert;        /* ARCH.expert_count, 0 if none          */
} qmix_model;

/* One tensor of the file, as named in the output. */
typedef struct qmix_tensor {
    const char *name;
    int n_dims;
    int64_t ne[4];
    tport_type_id type;       /* its type in the source                */
} qmix_tensor;

typedef struct qmix_options {
    bool pure;                /* --pure: no mix, every tensor the base type */
    bool has_imatrix;         /* an importance matrix is given              */
    int64_t output_type;      /* --output-tensor-type, -1 if not given      */
    int64_t token_embd_type;  /* --token-embedding-type, -1 if not given    */
} qmix_options;

/* The type of every tensor (out[i] for tensors[i]), as llama-quantize
 * chooses it; quantize[i] says whether llama-quantize would quantize it at
 * all (false: copied as it is, out[i] = its type).  The rules count
 * tensors in llama.cpp's order (by layer, then name), whatever the order of
 * `tensors`.  Returns 0, or -1 with an error message (n_layer unknown, a
 * layer number out of range) in err. */
int qmix_plan(const qmix_ftype *ft, const qmix_model *m, const qmix_options *o, const qmix_tensor *tensors, int n,
              tport_type_id *out, bool *quantize, int *n_fallback, char *err, size_t err_len);

/* llama-quantize refuses to write `type` into tensor `name` of a file of
 * type ft without an importance matrix (IQ1/IQ2/IQ3_XXS, Q2_K in Q2_K_S). */
bool qmix_requires_imatrix(const qmix_ftype *ft, const char *name, tport_type_id type);

#endif
