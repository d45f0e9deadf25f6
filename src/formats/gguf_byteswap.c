/* Tensor data of a big-endian GGUF v3 file (formats.md 2.4), swapped into
 * owned memory at load (the mapping is read-only).  Which bytes a
 * big-endian writer swapped follows gguf-py's gguf_convert_endian.py:
 * plain types per element; Q4_0 and Q8_0 their f16 scale d; Q4_K its f16
 * d and dmin; Q6_K its f16 d (after 208 bytes of quants); MXFP4 nothing
 * (byteswap_noop: bytes only); quant bytes stay as they are.  Any other type has no known big-endian layout and is
 * refused. */
#include <stdio.h>
#include <string.h>

#include "core/tensor.h"
#include "formats/mf_internal.h"

/* Where the 2-byte fields of one block sit, for the quantized types. */
typedef struct block_fields {
    uint64_t block_bytes;
    int n;
    uint64_t at[2];
} block_fields;

/* Element size for a plain type (1 = nothing to swap), 0 if quantized. */
static size_t plain_elem_size(tport_type_id t) {
    switch (t) {
    case TPORT_TYPE_F32: case TPORT_TYPE_I32: return 4;
    case TPORT_TYPE_F16: case TPORT_TYPE_BF16: case TPORT_TYPE_I16: return 2;
    case TPORT_TYPE_I8: return 1;
    default: return 0;
    }
}

static bool quant_fields(tport_type_id t, block_fields *f) {
    switch (t) {
    case TPORT_TYPE_Q4_0: *f = (block_fields){18, 1, {0, 0}}; return true;
    case TPORT_TYPE_Q8_0: *f = (block_fields){34, 1, {0, 0}}; return true;
    case TPORT_TYPE_Q4_K: *f = (block_fields){144, 2, {0, 2}}; return true;
    case TPORT_TYPE_Q6_K: *f = (block_fields){210, 1, {208, 0}}; return true;
    /* bytes only (an exponent byte, then nibbles): nothing to swap */
    case TPORT_TYPE_MXFP4: *f = (block_fields){17, 0, {0, 0}}; return true;
    default: return false;
    }
}

static tport_status swap_one(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t) {
    size_t es = plain_elem_size(t->type);
    block_fields f;
    if (es == 1 || t->nbytes == 0)
        return TPORT_STATUS_OK;
    if (es == 0 && !quant_fields(t->type, &f))
        return mf_fail(c, t->offset, "big-endian GGUF: tensor '%.64s' has type %s, whose big-endian block layout is not known",
                       t->name, tport_type_name(t->type));
    if (t->nbytes > SIZE_MAX)
        return mf_fail(c, t->offset, "tensor '%.64s' is too large", t->name);
    uint64_t unit = es ? es : f.block_bytes;
    if (t->nbytes % unit)
        return mf_fail(c, t->offset, "tensor '%.64s': %llu bytes is not a whole number of %llu-byte units",
                       t->name, (unsigned long long)t->nbytes, (unsigned long long)unit);
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    memcpy(dst, t->data, (size_t)t->nbytes);
    if (es) {
        mf_bswap_elems(dst, t->nbytes / es, es);
    } else {
        for (uint64_t b = 0; b < t->nbytes; b += f.block_bytes)
            for (int i = 0; i < f.n; i++)
                mf_bswap_elems(dst + b + f.at[i], 1, 2);
    }
    t->data = dst;
    return TPORT_STATUS_OK;
}

tport_status mf_gguf_swap_tensor_data(tport_model_file *mf, const mf_cursor *c) {
    for (int i = 0; i < mf->n_tensors; i++)
        MF_TRY(swap_one(mf, c, &mf->tensors[i]));
    size_t len = strlen(mf->notes);
    snprintf(mf->notes + len, sizeof mf->notes - len, "%sbig-endian GGUF: header and tensor data byte-swapped at load",
             len ? "; " : "");
    return TPORT_STATUS_OK;
}
