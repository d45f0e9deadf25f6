/* PyTorch checkpoints: the zip archive or the legacy stream, then the
 * llama layout.  Hugging Face files (pytorch_model.bin, names
 * model.layers.N.self_attn.q_proj.weight ...) take config.json and have
 * their q/k un-permuted; Meta files (consolidated.00.pth, names
 * layers.N.attention.wq.weight ...) take params.json.  Names are mapped to
 * GGUF's as for the other formats. */
#include <string.h>

#include "formats/pytorch_internal.h"

bool mf_pytorch_sniff(const mf_cursor *c) {
    return (c->size >= 4 && !memcmp(c->data, "PK\x03\x04", 4)) || mf_pytorch_legacy_sniff(c);
}

tport_status mf_read_pytorch(tport_model_file *mf, mf_cursor *c) {
    mf->container = TPORT_CONTAINER_PYTORCH;
#ifdef TPORT_NO_PYTORCH
    return mf_fail(c, 0, "PyTorch checkpoint, but tensorport was built without PyTorch support "
                   "(-DTPORT_PYTORCH=OFF; it needs libzip-dev)");
#endif
    bool legacy = mf_pytorch_legacy_sniff(c), hf = false;
    mf->version = legacy ? 0 : 1; /* 0: the legacy pickle stream, 1: the zip archive */
    MF_TRY(legacy ? pt_read_legacy(mf, c, &hf) : pt_read_zip(mf, c, &hf));
    /* the llama file type of the matrices' prevailing type (0 f32, 1 f16, 32 bf16) */
    uint64_t bytes[3] = {0};
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        int k = t->type == TPORT_TYPE_F32 ? 0 : t->type == TPORT_TYPE_F16 ? 1 : t->type == TPORT_TYPE_BF16 ? 2 : -1;
        if (k >= 0 && t->n_dims == 2)
            bytes[k] += t->nbytes;
    }
    mf->file_type = bytes[1] > bytes[0] && bytes[1] >= bytes[2] ? 1 : bytes[2] > bytes[0] ? 32 : 0;
    return hf ? mf_apply_hf_config(mf, c) : mf_apply_meta_params(mf, c);
}
