/* The architectures this build runs (one row each), and helpers their
 * files share. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "formats/model_file.h"
#include "model/arch/arch.h"

static const tport_arch *const archs[] = {
    &tport_arch_llama, &tport_arch_gpt2, &tport_arch_starcoder, &tport_arch_qwen2, &tport_arch_gptneox,
    &tport_arch_phi2,  &tport_arch_falcon, &tport_arch_mpt,     &tport_arch_bloom, &tport_arch_gemma,
    &tport_arch_gptj, &tport_arch_gemma2, &tport_arch_gemma3, &tport_arch_qwen2moe, &tport_arch_qwen3moe,
    &tport_arch_olmoe, &tport_arch_granitemoe,
    /* issue 40's dense families */
    &tport_arch_qwen3, &tport_arch_olmo2, &tport_arch_granite, &tport_arch_smollm3, &tport_arch_phi3,
    &tport_arch_mistral3, &tport_arch_deepseek2, &tport_arch_cohere2,
    /* issue 41's gpt-oss */
    &tport_arch_gptoss,
    /* embeddings (issue 42) */
    &tport_arch_bert, &tport_arch_nomic_bert,
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

const char *tport_arch_name_at(int i) {
    const tport_arch *a = i >= 0 && i < tport_arch_count() ? tport_arch_at(i) : NULL;
    return a ? a->name : NULL;
}

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

bool tport_arch_u32(const tport_model_file *mf, const char *suffix, uint32_t *out) {
    const tport_kv *kv = arch_kv(mf, suffix);
    if (!kv || (kv->type != TPORT_KV_U32 && kv->type != TPORT_KV_I32) || kv->v.u > (1u << 30))
        return false;
    *out = (uint32_t)kv->v.u;
    return true;
}

bool tport_arch_bool(const tport_model_file *mf, const char *suffix, bool *out) {
    const tport_kv *kv = arch_kv(mf, suffix);
    if (!kv || kv->type != TPORT_KV_BOOL)
        return false;
    *out = kv->v.b;
    return true;
}

static tport_status set_u32(tport_gguf_writer *w, const char *arch, const char *suffix, uint32_t v) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return tport_gguf_set_u32(w, key, v);
}

static tport_status set_f32(tport_gguf_writer *w, const char *arch, const char *suffix, float v) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return tport_gguf_set_f32(w, key, v);
}

tport_status tport_arch_write_common_keys(tport_gguf_writer *w, const tport_arch *arch, const tport_model_shape *sh) {
    const char *a = arch->name;
    struct {
        const char *suffix;
        int32_t v;
    } keys[] = {
        {"vocab_size", sh->n_vocab},          {"context_length", sh->n_ctx_train},
        {"embedding_length", sh->n_embd},     {"block_count", sh->n_layer},
        {"feed_forward_length", sh->n_ff},    {"attention.head_count", sh->n_head},
        {"attention.head_count_kv", sh->n_head_kv},
    };
    tport_status st = TPORT_STATUS_OK;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && st == TPORT_STATUS_OK; i++)
        st = set_u32(w, a, keys[i].suffix, (uint32_t)keys[i].v);
    if (st == TPORT_STATUS_OK)
        st = set_f32(w, a, arch->norm == NORM_RMS ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon",
                     sh->norm_eps);
    if (st == TPORT_STATUS_OK && arch->rope_mode >= 0 &&
        !(arch->whole_head_rope_unwritten && sh->n_rot == sh->head_dim))
        st = set_u32(w, a, "rope.dimension_count", (uint32_t)sh->n_rot);
    if (st == TPORT_STATUS_OK && arch->rope_mode >= 0)
        st = set_f32(w, a, "rope.freq_base", sh->rope_base);
    /* a mixture of experts: the counts, and the widths its table uses */
    struct {
        const char *suffix;
        int32_t v;
    } moe[] = {{"expert_count", sh->n_expert}, {"expert_used_count", sh->n_expert_used},
               {"expert_feed_forward_length", sh->n_ff_exp}, {"expert_shared_feed_forward_length", sh->n_ff_shexp}};
    for (size_t i = 0; i < sizeof moe / sizeof moe[0] && st == TPORT_STATUS_OK && sh->n_expert; i++)
        if (moe[i].v > 0)
            st = set_u32(w, a, moe[i].suffix, (uint32_t)moe[i].v);
    if (st == TPORT_STATUS_OK && sh->head_dim * sh->n_head != sh->n_embd) {
        st = set_u32(w, a, "attention.key_length", (uint32_t)sh->head_dim);
        if (st == TPORT_STATUS_OK)
            st = set_u32(w, a, "attention.value_length", (uint32_t)sh->head_dim);
    }
    return st;
}

tport_tensor *tport_arch_sequential_ln_block(tport_blk *b, tport_tensor *x, int il) {
    const tport_layer *l = &b->m->layers[il];
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    tport_tensor *att = tport_blk_self_attention(b, il, tport_blk_norm(b, x, l->attn_norm, l->attn_norm_b), kq_scale);
    x = tport_add(b->ctx, att, x);
    return tport_add(b->ctx, tport_blk_ffn_gelu(b, l, tport_blk_norm(b, x, l->ffn_norm, l->ffn_norm_b)), x);
}

const tport_mf_tensor *tport_arch_file_tensor(const tport_model_file *mf, const tport_arch *arch,
                                              const char *table_name, int il, char *name, size_t cap) {
    const char *pattern = table_name;
    const char *gguf, *file;
    for (int i = 0; mf->container == TPORT_CONTAINER_GGML && mf_example_name_at(arch->name, i, &gguf, &file); i++)
        if (!strcmp(gguf, table_name)) {
            pattern = file;
            break;
        }
    /* patterns come from the tables in this folder: at most one %d */
    if (strstr(pattern, "%d"))
        snprintf(name, cap, pattern, il);
    else
        snprintf(name, cap, "%s", pattern);
    return tport_model_file_find(mf, name);
}

bool tport_arch_gguf_name(const tport_arch *arch, const char *file_name, int n_layer, char *out, size_t cap,
                          bool *qkv_interleaved) {
    *qkv_interleaved = false;
    const char *gguf, *legacy;
    for (int i = 0; mf_example_name_at(arch->name, i, &gguf, &legacy); i++) {
        bool layered = strstr(legacy, "%d") != NULL;
        for (int il = 0; il < (layered ? n_layer : 1); il++) {
            char name[128];
            snprintf(name, sizeof name, legacy, il);
            if (strcmp(name, file_name))
                continue;
            snprintf(out, cap, gguf, il);
            *qkv_interleaved = arch->fix_legacy && strstr(gguf, "attn_qkv");
            return true;
        }
    }
    return false;
}

void tport_qkv_deinterleave(void *dst, const void *src, size_t heads, size_t hd, size_t row_bytes) {
    for (size_t h = 0; h < heads; h++)
        for (size_t part = 0; part < 3; part++)
            memcpy((uint8_t *)dst + (part * heads * hd + h * hd) * row_bytes,
                   (const uint8_t *)src + (h * 3 * hd + part * hd) * row_bytes, hd * row_bytes);
}
