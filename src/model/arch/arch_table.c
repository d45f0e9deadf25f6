/* The architectures this build runs (one row each), and helpers their
 * files share. */
#include <stdio.h>
#include <string.h>

#include "model/arch/arch.h"

static const tport_arch *const archs[] = {
    &tport_arch_llama,
};

int tport_arch_count(void) { return (int)(sizeof archs / sizeof archs[0]); }

const tport_arch *tport_arch_at(int i) { return i >= 0 && i < tport_arch_count() ? archs[i] : NULL; }

const tport_arch *tport_arch_find(const char *name) {
    for (int i = 0; name && i < tport_arch_count(); i++)
        if (!strcmp(archs[i]->name, name))
            return archs[i];
    return NULL;
}

bool tport_arch_supported(const char *arch) { return tport_arch_find(arch) != NULL; }

static const tport_kv *arch_kv(const tport_model_file *mf, const char *suffix) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    return tport_model_file_kv(mf, key);
}

bool tport_arch_f32(const tport_model_file *mf, const char *suffix, float *out) {
    const tport_kv *kv = arch_kv(mf, suffix);
    if (!kv || (kv->type != TPORT_KV_F32 && kv->type != TPORT_KV_F64))
        return false;
    *out = (float)kv->v.f;
    return true;
}

bool tport_arch_bool(const tport_model_file *mf, const char *suffix, bool *out) {
    const tport_kv *kv = arch_kv(mf, suffix);
    if (!kv || kv->type != TPORT_KV_BOOL)
        return false;
    *out = kv->v.b;
    return true;
}

tport_status tport_arch_write_common_keys(tport_gguf_writer *w, const char *arch, const tport_model_shape *sh) {
    char key[96];
    struct {
        const char *suffix;
        int32_t v;
    } keys[] = {
        {"vocab_size", sh->n_vocab},          {"context_length", sh->n_ctx_train},
        {"embedding_length", sh->n_embd},     {"block_count", sh->n_layer},
        {"feed_forward_length", sh->n_ff},    {"attention.head_count", sh->n_head},
        {"attention.head_count_kv", sh->n_head_kv},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, keys[i].suffix);
        tport_status st = tport_gguf_set_u32(w, key, (uint32_t)keys[i].v);
        if (st != TPORT_STATUS_OK)
            return st;
    }
    return TPORT_STATUS_OK;
}
