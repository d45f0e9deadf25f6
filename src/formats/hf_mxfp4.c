/* gpt-oss's MXFP4 experts as Hugging Face checkpoints store them
 * (transformers' Mxfp4 quantizer) -> ggml's MXFP4 blocks.
 *
 * The checkpoint keeps a matrix in two U8 tensors: `*_blocks` [n_expert,
 * rows, K/32, 16], the 32 E2M1 codes of a block two a byte with element 2i
 * in the low nibble of byte i, and `*_scales` [n_expert, rows, K/32], the
 * block's E8M0 exponent.  ggml's block_mxfp4 is {u8 e; u8 qs[16]} with
 * element j in the low nibble of qs[j] and element j + 16 in its high
 * nibble (what convert_hf_to_gguf.py's GptOssModel.repack_mxfp4 writes).
 * The nibble orders differ and the scale sits inside ggml's block, so no
 * view of the file's bytes can be the GGUF tensor: it is made once at load
 * into owned memory.  Codes and exponents are only moved, never decoded:
 * lossless.  gate_up's rows alternate gate and up (as its bias's values);
 * they are split in the same pass. */
#include <stdio.h>
#include <string.h>

#include "formats/mf_internal.h"

enum { MX_QK = 32, MX_BLOCK = 17 };

/* One block: exponent e and the 16 bytes of Hugging Face's nibble order. */
static void repack_block(uint8_t *dst, uint8_t e, const uint8_t *src) {
    dst[0] = e;
    for (int j = 0; j < 16; j++) {
        int shift = (j & 1) * 4; /* element j: byte j/2; element j + 16: byte 8 + j/2 */
        uint8_t lo = (uint8_t)((src[j >> 1] >> shift) & 0x0F);
        uint8_t hi = (uint8_t)((src[8 + (j >> 1)] >> shift) & 0x0F);
        dst[1 + j] = (uint8_t)(lo | hi << 4);
    }
}

/* Rows first, first + step, ... of each expert, n_rows of them, into dst. */
static void repack_rows(uint8_t *dst, const uint8_t *blocks, const uint8_t *scales, uint64_t n_exp, uint64_t rows,
                        uint64_t nb, uint64_t first, uint64_t step, uint64_t n_rows) {
    for (uint64_t e = 0; e < n_exp; e++)
        for (uint64_t r = 0; r < n_rows; r++) {
            uint64_t src_row = e * rows + first + r * step;
            uint8_t *d = dst + (e * n_rows + r) * nb * MX_BLOCK;
            for (uint64_t b = 0; b < nb; b++)
                repack_block(d + b * MX_BLOCK, scales[src_row * nb + b], blocks + (src_row * nb + b) * 16);
        }
}

tport_status mf_hf_mxfp4_join(tport_model_file *mf, const mf_cursor *c, const tport_mf_tensor *blocks,
                              const tport_mf_tensor *scales, const char *name, bool interleaved,
                              uint32_t n_expert, tport_mf_tensor *out, tport_mf_tensor *up) {
    if (blocks->type != MF_TYPE_U8 || scales->type != MF_TYPE_U8)
        return mf_fail(c, blocks->offset, "tensors %s, %s: MXFP4 blocks and scales must have dtype U8",
                       blocks->name, scales->name);
    if (blocks->n_dims != 4 || blocks->ne[0] != 16)
        return mf_fail(c, blocks->offset, "tensor %s: MXFP4 blocks must be U8 [n_expert, rows, K/32, 16]",
                       blocks->name);
    if (scales->n_dims != 3 || scales->ne[0] != blocks->ne[1] || scales->ne[1] != blocks->ne[2] ||
        scales->ne[2] != blocks->ne[3])
        return mf_fail(c, scales->offset, "tensor %s: MXFP4 scales must be U8 [%lld, %lld, %lld] as the blocks "
                       "of %s", scales->name, (long long)blocks->ne[3], (long long)blocks->ne[2],
                       (long long)blocks->ne[1], blocks->name);
    uint64_t nb = (uint64_t)blocks->ne[1], rows = (uint64_t)blocks->ne[2], n_exp = (uint64_t)blocks->ne[3];
    if (!nb || !rows || !n_exp || (n_expert && n_exp != n_expert) || (interleaved && rows % 2))
        return mf_fail(c, blocks->offset, "tensor %s: %llu experts of %llu rows (config.json: %u experts%s)",
                       blocks->name, (unsigned long long)n_exp, (unsigned long long)rows, n_expert,
                       interleaved ? "; interleaved gate/up need an even row count" : "");
    /* the blocks lie inside the file, so n_exp * rows * nb * 16 fits; the
     * repacked size is 17/16 of it */
    uint64_t n_rows = interleaved ? rows / 2 : rows, part = n_exp * n_rows * nb * MX_BLOCK;
    uint8_t *d = mf_alloc(mf, (size_t)part), *u = interleaved ? mf_alloc(mf, (size_t)part) : NULL;
    char *nm = mf_strndup(mf, name, strlen(name));
    if (!d || !nm || (interleaved && !u))
        return TPORT_STATUS_OUT_OF_MEMORY;
    repack_rows(d, blocks->data, scales->data, n_exp, rows, nb, 0, interleaved ? 2 : 1, n_rows);
    *out = *blocks;
    out->name = nm;
    out->type = TPORT_TYPE_MXFP4;
    out->n_dims = 3;
    out->ne[0] = (int64_t)(nb * MX_QK);
    out->ne[1] = (int64_t)n_rows;
    out->ne[2] = (int64_t)n_exp;
    out->ne[3] = 1;
    out->nbytes = part;
    out->data = d;
    if (!interleaved)
        return TPORT_STATUS_OK;
    const char *at = strstr(name, "gate");
    if (!at)
        return mf_fail(c, blocks->offset, "tensor %s: interleaved experts must map to a gate", blocks->name);
    char up_name[192];
    snprintf(up_name, sizeof up_name, "%.*sup%s", (int)(at - name), name, at + 4);
    char *un = mf_strndup(mf, up_name, strlen(up_name));
    if (!un)
        return TPORT_STATUS_OUT_OF_MEMORY;
    repack_rows(u, blocks->data, scales->data, n_exp, rows, nb, 1, 2, n_rows);
    *up = *out;
    up->name = un;
    up->data = u;
    return TPORT_STATUS_OK;
}
