/* The model layer's answers about an open model file (the functions at
 * the end of tport/model_file.h): the architecture table read for
 * programs that inspect or convert files without loading them. */
#include <string.h>

#include "arch/arch.h"
#include "arch/arch_math.h"
#include "core/error.h"
#include "model.h"

static const tport_arch *arch_of(const tport_model_file *mf) {
    return tport_arch_find(mf->arch[0] ? mf->arch : "llama");
}

const tport_model_file *tport_model_file_of(const tport_model *m) {
    return m ? m->file : NULL;
}

tport_status tport_model_file_shape(const tport_model_file *mf, tport_file_shape *out) {
    if (!mf || !out)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "model_file_shape: NULL argument");
    const tport_arch *arch = arch_of(mf);
    if (!arch)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: architecture '%s' is not supported", mf->path, mf->arch);
    tport_model_shape sh;
    tport_status st = tport_model_shape_from_file(mf, arch, &sh);
    if (st != TPORT_STATUS_OK)
        return st;
    *out = (tport_file_shape){.n_vocab = sh.n_vocab, .n_ctx = sh.n_ctx, .n_embd = sh.n_embd, .n_ff = sh.n_ff,
                              .n_layer = sh.n_layer, .n_head = sh.n_head, .n_head_kv = sh.n_head_kv,
                              .head_dim = sh.head_dim};
    return TPORT_STATUS_OK;
}

bool tport_model_file_refusal(const tport_model_file *mf, char *why, size_t cap) {
    const tport_arch *arch = mf ? arch_of(mf) : NULL;
    return arch && tport_arch_refusal(mf, arch, why, cap);
}

bool tport_model_file_gguf_name(const tport_model_file *mf, const char *name, char *out, size_t cap,
                                int64_t *interleave_heads, int64_t *head_rows) {
    const tport_arch *arch = mf->container == TPORT_CONTAINER_GGML ? tport_arch_find(mf->arch) : NULL;
    bool qkv = false;
    *interleave_heads = *head_rows = 0;
    if (!arch || !tport_arch_gguf_name(arch, name, (int)mf->hp.n_layer, out, cap, &qkv))
        return false;
    if (qkv && mf->hp.n_head > 0) {
        *interleave_heads = mf->hp.n_head;
        *head_rows = mf->hp.n_embd / mf->hp.n_head;
    }
    return true;
}
