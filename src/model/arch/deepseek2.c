/* deepseek2 (DeepSeek-V2, V2-Lite, V2.5, V3, R1 and the files converted
 * as deepseek2): multi-head latent attention in llama.cpp's absorbed form,
 * with the compressed latent as the cache, and a mixture of experts with
 * shared experts after n_layer_dense_lead dense layers.
 *
 *   x = token_embd[ids]
 *   per layer:  h = rms_norm(x) * attn_norm
 *     q      = Wq h, or Wq_b (rms_norm(Wq_a h) * q_a_norm)      [k_mla, n_head]
 *     q_nope, q_pe = q split at k_mla - n_rot;  q_pe = rope(q_pe)
 *     c, k_pe = Wkv_a h split at kv_lora;  c = rms_norm(c) * kv_a_norm;  k_pe = rope(k_pe)
 *     Q = [Wk_b^T q_nope | q_pe] per head,  K = [c | k_pe]   (one kv head, cached)
 *     o = softmax(Q K^T * mscale^2 / sqrt(k_mla)) c  per head,   x += Wo (Wv_b o)
 *     x += ffn(rms_norm(x) * ffn_norm): dense SwiGLU on the leading layers,
 *          else experts (softmax, or sigmoid with the choice biased by
 *          exp_probs_b; renormalised and scaled as the file says) plus the
 *          shared experts' SwiGLU
 *   logits = output (rms_norm(x_last) * output_norm)
 *
 * The cache row is [c | k_pe] (head_dim = kv_lora + n_rot, one kv head), as
 * llama.cpp keeps it; V is its first kv_lora values, so attention runs over
 * the whole row and keeps the first kv_lora of each head's result.
 * mscale (YaRN): attn_factor (1 + 0.1 ln(1/s)) (1 + 0.1 log_mul ln(1/s)), s
 * the frequency scale, log_mul the file's yarn_log_multiplier / 0.1, as
 * llama.cpp computes it.  Files from before the split of attn_kv_b into
 * attn_k_b and attn_v_b (no key_length_mla; key_length and value_length
 * are a head's K and V, one kv head per head) still load in llama.cpp,
 * which then runs them as plain multi-head attention over decompressed
 * K and V; here they are split at load instead (split_kv_b: an f32 copy
 * of attn_k_b and attn_v_b, 4 bytes a value whatever attn_kv_b's type)
 * and run by the same latent graph, which computes the same function.
 * Gating other than softmax and sigmoid is refused.  Grouped routing (expert_group_count >
 * 1): the choice among the experts of the expert_group_used_count groups
 * with the largest sums of their two best (TPORT_OP_EXPERT_GROUPS). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/arch/arch.h"
#include "model/model.h"
#include "quant/type_table.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q_a_norm.weight", attn_q_a_norm, DIM_Q_LORA, DIM_1, TENSOR_Q_LORA),
    ARCH_A("attn_kv_a_norm.weight", attn_kv_a_norm, DIM_KV_LORA, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q_MLA, TENSOR_NO_Q_LORA),
    ARCH_A("attn_q_a.weight", wq_a, DIM_EMBD, DIM_Q_LORA, TENSOR_Q_LORA),
    ARCH_A("attn_q_b.weight", wq_b, DIM_Q_LORA, DIM_Q_MLA, TENSOR_Q_LORA),
    ARCH_A("attn_kv_a_mqa.weight", wkv_a_mqa, DIM_EMBD, DIM_KV_A, 0),
    ARCH_A3("attn_k_b.weight", wk_b, DIM_QK_NOPE, DIM_KV_LORA, DIM_HEADS, TENSOR_KV_B_SPLIT),
    ARCH_A3("attn_v_b.weight", wv_b, DIM_KV_LORA, DIM_V_MLA, DIM_HEADS, TENSOR_KV_B_SPLIT),
    /* files converted before llama.cpp split it (split_kv_b below) */
    ARCH_A("attn_kv_b.weight", wkv_b, DIM_KV_LORA, DIM_KV_B, TENSOR_KV_B_UNSPLIT),
    ARCH_A("attn_output.weight", wo, DIM_O_MLA, DIM_EMBD, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, TENSOR_DENSE),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, TENSOR_DENSE),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, TENSOR_DENSE),
    ARCH_F("ffn_gate_inp.weight", ffn_gate_inp, DIM_EMBD, DIM_EXPERT, TENSOR_EXPERTS),
    /* DeepSeek-V3's selection bias: tport synth writes it with --with */
    ARCH_F("exp_probs_b.bias", ffn_exp_probs_b, DIM_EXPERT, DIM_1,
           TENSOR_EXPERTS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH | TENSOR_BIAS),
    ARCH_X("ffn_gate_exps.weight", ffn_gate_exps, DIM_EMBD, DIM_FF_EXP, 0),
    ARCH_X("ffn_down_exps.weight", ffn_down_exps, DIM_FF_EXP, DIM_EMBD, 0),
    ARCH_X("ffn_up_exps.weight", ffn_up_exps, DIM_EMBD, DIM_FF_EXP, 0),
    ARCH_F("ffn_gate_shexp.weight", ffn_gate_shexp, DIM_EMBD, DIM_FF_SHEXPS, TENSOR_EXPERTS),
    ARCH_F("ffn_down_shexp.weight", ffn_down_shexp, DIM_FF_SHEXPS, DIM_EMBD, TENSOR_EXPERTS),
    ARCH_F("ffn_up_shexp.weight", ffn_up_shexp, DIM_EMBD, DIM_FF_SHEXPS, TENSOR_EXPERTS),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
};

enum { GATING_NONE = 0, GATING_SOFTMAX = 1, GATING_SIGMOID = 2 };

static tport_status refuse(const tport_model_file *mf, const char *what) {
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: deepseek2 %s is not implemented", mf->path, what);
}

/* llama.cpp's load_arch_hparams for deepseek2, and what the graph needs. */
static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    uint32_t q_lora = 0, kv_lora = 0, k_mla = 0, v_mla = 0, lead = 0, shared = 0, gating = GATING_NONE, groups = 0,
             groups_used = 0, value_length = 0;
    if (!tport_arch_u32(mf, "attention.kv_lora_rank", &kv_lora) || kv_lora == 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: deepseek2 without attention.kv_lora_rank", mf->path);
    const bool has_k_mla = tport_arch_u32(mf, "attention.key_length_mla", &k_mla),
               has_v_mla = tport_arch_u32(mf, "attention.value_length_mla", &v_mla);
    const bool unsplit = tport_model_file_find(mf, "blk.0.attn_kv_b.weight") != NULL;
    if (unsplit && (has_k_mla || has_v_mla))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: deepseek2 with attn_kv_b and key_length_mla or "
                           "value_length_mla: the unsplit and the split form at once", mf->path);
    if (!unsplit && (!has_k_mla || !has_v_mla))
        return refuse(mf, "without key_length_mla and value_length_mla (and no attn_kv_b to split)");
    /* llama.cpp reads no Q rank for the "lite" shapes, and requires it otherwise */
    const bool lite = sh->n_layer == 27 || sh->n_layer == 26 || (sh->n_layer == 48 && sh->n_vocab == 128256);
    if (!lite && !tport_arch_u32(mf, "attention.q_lora_rank", &q_lora))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: deepseek2 without attention.q_lora_rank", mf->path);
    tport_arch_u32(mf, "attention.value_length", &value_length);
    if (unsplit) {
        /* llama.cpp's non-MLA reading: a head's K and V sizes are
         * key_length and value_length, every head its own kv head; the
         * latent graph's cache row is then set as a split file has it */
        if (sh->n_head_kv != sh->n_head || value_length == 0)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: deepseek2 with attn_kv_b wants as many kv heads as "
                               "heads and a value_length; the file has %d of %d and %u", mf->path, sh->n_head_kv,
                               sh->n_head, value_length);
        k_mla = (uint32_t)sh->head_dim;
        v_mla = value_length;
        sh->head_dim = (int32_t)kv_lora + sh->n_rot;
        sh->n_head_kv = 1;
        value_length = kv_lora;
        sh->mla_kv_b_unsplit = true;
    }
    tport_arch_u32(mf, "leading_dense_block_count", &lead);
    if (!tport_arch_u32(mf, "expert_shared_count", &shared))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: deepseek2 without expert_shared_count", mf->path);
    tport_arch_u32(mf, "expert_gating_func", &gating);
    tport_arch_u32(mf, "expert_group_count", &groups);
    tport_arch_u32(mf, "expert_group_used_count", &groups_used);
    float scale = 0.0f, log_mul = 0.0f;
    bool norm = false;
    tport_arch_f32(mf, "expert_weights_scale", &scale);
    tport_arch_bool(mf, "expert_weights_norm", &norm);
    if (tport_arch_f32(mf, "rope.scaling.yarn_log_multiplier", &log_mul))
        log_mul /= 0.1f; /* llama.cpp cancels the converter's factor */
    if (sh->n_head_kv != 1 || (int64_t)sh->head_dim != (int64_t)kv_lora + sh->n_rot || value_length != kv_lora)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: deepseek2 MLA wants 1 kv head of key length kv_lora_rank + rope dims (%u + %d) and "
                           "value length %u; the file has %d, %d and %u", mf->path, kv_lora, sh->n_rot, kv_lora,
                           sh->n_head_kv, sh->head_dim, value_length);
    if ((int64_t)k_mla <= sh->n_rot || v_mla == 0 || k_mla > 65536 || v_mla > 65536 || q_lora > 65536 ||
        kv_lora > 65536 || shared > 64)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: deepseek2 head sizes %u/%u, ranks %u/%u, %u shared "
                           "experts out of range", mf->path, k_mla, v_mla, q_lora, kv_lora, shared);
    if (lead > (uint32_t)sh->n_layer)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %u leading dense layers of %d", mf->path, lead,
                           sh->n_layer);
    if ((int32_t)lead < sh->n_layer && (sh->n_expert <= 0 || sh->n_expert_used <= 0 || sh->n_ff_exp <= 0))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: deepseek2 layers with experts but no expert counts or "
                           "expert_feed_forward_length", mf->path);
    if (gating == GATING_NONE)
        gating = GATING_SOFTMAX; /* llama.cpp: V2 and V2.5 files */
    if (gating != GATING_SOFTMAX && gating != GATING_SIGMOID)
        return refuse(mf, "expert gating function other than softmax and sigmoid");
    if (groups > 1 && (sh->n_expert % (int32_t)groups || sh->n_expert / (int32_t)groups < 2 || groups > 256 ||
                       groups_used < 1 || groups_used > groups))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %u of %u expert groups for %d experts", mf->path,
                           groups_used, groups, sh->n_expert);
    sh->n_lora_q = lite ? 0 : (int32_t)q_lora;
    sh->n_lora_kv = (int32_t)kv_lora;
    sh->head_dim_k_mla = (int32_t)k_mla;
    sh->head_dim_v_mla = (int32_t)v_mla;
    sh->n_layer_dense_lead = (int32_t)lead;
    sh->n_expert_shared = (int32_t)shared;
    sh->expert_sigmoid = gating == GATING_SIGMOID;
    sh->expert_weights_norm = norm;
    sh->expert_weights_scale = scale;
    sh->n_expert_groups = (int32_t)groups;
    sh->n_group_used = (int32_t)groups_used;
    sh->rope_yarn_log_mul = log_mul;
    /* llama.cpp's yarn_attn_factor: get_mscale(f, m) / get_mscale(f, m)
     * (deepseek2 takes mscale = mscale_all_dim), then 1 / (1 + 0.1 ln f) */
    if (sh->rope_ext_factor != 0.0f && log_mul != 0.0f) {
        float factor = 1.0f / sh->rope_scale, attn = 0.0f;
        sh->rope_attn_factor = 1.0f / (1.0f + 0.1f * logf(factor));
        if (tport_arch_f32(mf, "rope.scaling.attn_factor", &attn) && attn > 0.0f)
            sh->rope_attn_factor *= attn;
    }
    return TPORT_STATUS_OK;
}

static tport_status set_u32(tport_gguf_writer *w, const char *suffix, uint32_t v) {
    char key[96];
    snprintf(key, sizeof key, "deepseek2.%s", suffix);
    return tport_gguf_set_u32(w, key, v);
}

static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    tport_status st = TPORT_STATUS_OK;
    const struct {
        const char *suffix;
        int32_t v;
    } keys[] = {
        {"attention.q_lora_rank", sh->n_lora_q},
        {"attention.kv_lora_rank", sh->n_lora_kv},
        {"attention.key_length", sh->head_dim},
        {"attention.value_length", sh->n_lora_kv},
        {"attention.key_length_mla", sh->head_dim_k_mla},
        {"attention.value_length_mla", sh->head_dim_v_mla},
        {"leading_dense_block_count", sh->n_layer_dense_lead},
        {"expert_shared_count", sh->n_expert_shared},
        {"expert_gating_func", sh->expert_sigmoid ? GATING_SIGMOID : GATING_SOFTMAX},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && st == TPORT_STATUS_OK; i++)
        st = set_u32(w, keys[i].suffix, (uint32_t)keys[i].v);
    if (st == TPORT_STATUS_OK && sh->n_expert_groups > 1) {
        st = set_u32(w, "expert_group_count", (uint32_t)sh->n_expert_groups);
        if (st == TPORT_STATUS_OK)
            st = set_u32(w, "expert_group_used_count", (uint32_t)sh->n_group_used);
    }
    if (st == TPORT_STATUS_OK && sh->expert_weights_scale != 0.0f)
        st = tport_gguf_set_f32(w, "deepseek2.expert_weights_scale", sh->expert_weights_scale);
    if (st == TPORT_STATUS_OK && sh->expert_weights_norm)
        st = tport_gguf_set_bool(w, "deepseek2.expert_weights_norm", true);
    return st;
}

/* tport synth --key: the keys above, by their GGUF suffix */
static bool synth_key(tport_model_shape *sh, const char *suffix, double v) {
    if (!suffix) {
        /* defaults for the keys not given (a small V2-Lite-like shape;
         * without experts every layer dense, as the converter writes
         * non-MoE models), then the cache row and its single kv head */
        if (sh->n_lora_kv <= 0)
            sh->n_lora_kv = 32;
        if (sh->head_dim_k_mla <= sh->n_rot)
            sh->head_dim_k_mla = sh->n_rot + 16;
        if (sh->head_dim_v_mla <= 0)
            sh->head_dim_v_mla = 16;
        if (sh->n_expert == 0)
            sh->n_layer_dense_lead = sh->n_layer;
        else if (sh->n_expert_shared <= 0)
            sh->n_expert_shared = 1;
        sh->head_dim = sh->n_lora_kv + sh->n_rot;
        sh->n_head_kv = 1;
        sh->n_ff_shexp = 0;
        return true;
    }
    const int32_t i = v >= 0.0 && v <= 65536.0 ? (int32_t)v : 0;
    if (!strcmp(suffix, "attention.q_lora_rank"))
        sh->n_lora_q = i;
    else if (!strcmp(suffix, "attention.kv_lora_rank"))
        sh->n_lora_kv = i;
    else if (!strcmp(suffix, "attention.key_length_mla"))
        sh->head_dim_k_mla = i;
    else if (!strcmp(suffix, "attention.value_length_mla"))
        sh->head_dim_v_mla = i;
    else if (!strcmp(suffix, "leading_dense_block_count"))
        sh->n_layer_dense_lead = i;
    else if (!strcmp(suffix, "expert_shared_count"))
        sh->n_expert_shared = i;
    else if (!strcmp(suffix, "expert_gating_func"))
        sh->expert_sigmoid = i == GATING_SIGMOID;
    else if (!strcmp(suffix, "expert_weights_norm"))
        sh->expert_weights_norm = i != 0;
    else if (!strcmp(suffix, "expert_weights_scale"))
        sh->expert_weights_scale = (float)v;
    else if (!strcmp(suffix, "expert_group_count"))
        sh->n_expert_groups = i;
    else if (!strcmp(suffix, "expert_group_used_count"))
        sh->n_group_used = i;
    else
        return false;
    return true;
}

/* [ne0, ne1, ne2] view of t's floats at float offset `first`, rows nb1 and
 * nb2 floats apart */
static tport_tensor *view3(tport_blk *b, tport_tensor *t, int64_t ne0, int64_t ne1, int64_t ne2, int64_t nb1,
                           int64_t nb2, int64_t first) {
    const size_t f = sizeof(float);
    const int64_t ne[3] = {ne0, ne1, ne2};
    const size_t nb[3] = {f, (size_t)nb1 * f, (size_t)nb2 * f};
    return t ? tport_view(b->ctx, t, 3, ne, nb, (size_t)first * f) : NULL;
}

/* llama.cpp's kq_scale: mscale^2 / sqrt(k_mla), mscale from the RoPE
 * attention factor with the frequency scale's adjustment undone */
static float kq_scale(const tport_model_shape *sh) {
    const float inv = logf(1.0f / sh->rope_scale);
    const float attn_org = sh->rope_attn_factor * (1.0f + 0.1f * inv);
    const float mscale = attn_org * (1.0f + 0.1f * sh->rope_yarn_log_mul * inv);
    return mscale * mscale / sqrtf((float)sh->head_dim_k_mla);
}

static tport_tensor *mla_attention(tport_blk *b, int il, tport_tensor *h) {
    const tport_model_shape *sh = b->sh;
    const tport_layer *l = &b->m->layers[il];
    tport_ctx *ctx = b->ctx;
    const int64_t n = b->n, nh = sh->n_head, k_mla = sh->head_dim_k_mla, rot = sh->n_rot, nope = k_mla - rot,
                  lora = sh->n_lora_kv, row = lora + rot;
    tport_tensor *q = l->wq ? tport_mul_mat(ctx, l->wq, h)
                            : tport_mul_mat(ctx, l->wq_b, tport_blk_norm(b, tport_mul_mat(ctx, l->wq_a, h),
                                                                         l->attn_q_a_norm, NULL));
    tport_tensor *q_nope = view3(b, q, nope, nh, n, k_mla, k_mla * nh, 0);
    tport_tensor *q_pe = tport_blk_rope(b, il, tport_cont(ctx, view3(b, q, rot, nh, n, k_mla, k_mla * nh, nope)));
    /* per head: Wk_b [nope, lora] absorbs the unrotated part into the latent */
    tport_tensor *q_abs = tport_mul_mat(ctx, l->wk_b, tport_permute(ctx, q_nope, 0, 2, 1, 3)); /* [lora, n, nh] */
    tport_tensor *qc = tport_concat(ctx, tport_cont(ctx, tport_permute(ctx, q_abs, 0, 2, 1, 3)), q_pe, 0);

    tport_tensor *kv = tport_mul_mat(ctx, l->wkv_a_mqa, h); /* [lora + rot, n] */
    tport_tensor *c = tport_cont(ctx, view3(b, kv, lora, 1, n, row, row, 0));
    tport_tensor *k_pe = tport_blk_rope(b, il, tport_cont(ctx, view3(b, kv, rot, 1, n, row, row, lora)));
    c = tport_blk_norm(b, c, l->attn_kv_a_norm, NULL);
    tport_tensor *kc = tport_concat(ctx, c, k_pe, 0); /* [lora + rot, 1, n] */

    /* V is the row's latent part: attend over whole rows, keep the first
     * lora values of each head (the cache holds K; V's copy is the same) */
    tport_tensor *o = tport_blk_attention(b, il, qc, kc, kc, kq_scale(sh)); /* [row * nh, n] */
    tport_tensor *lat = view3(b, o, lora, nh, n, row, row * nh, 0);
    tport_tensor *ov = tport_mul_mat(ctx, l->wv_b, tport_permute(ctx, lat, 0, 2, 1, 3)); /* [v, n, nh] */
    tport_tensor *heads = tport_cont(ctx, tport_permute(ctx, ov, 0, 2, 1, 3));            /* [v, nh, n] */
    const int64_t ne[2] = {sh->head_dim_v_mla * nh, n};
    return tport_mul_mat(ctx, l->wo, tport_reshape(ctx, heads, 2, ne));
}

/* *out: a new f32 weight [ne0, ne1, ne2] named name, in memory the model
 * owns. */
static tport_status owned_f32(tport_model *m, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
                              tport_tensor **out) {
    const size_t bytes = ((size_t)(ne0 * ne1 * ne2) * sizeof(float) + 63) / 64 * 64;
    float *data = aligned_alloc(64, bytes);
    tport_status st = data ? tport_model_own(m, data) /* which frees it when it fails */
                           : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory for %s", name);
    tport_tensor *t = st ? NULL : tport_new_tensor_3d(m->wctx, TPORT_TYPE_F32, ne0, ne1, ne2);
    if (!st && !t)
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "cannot record tensor %s", name);
    if (st)
        return st;
    tport_tensor_set_data(t, data);
    tport_tensor_set_weight(t);
    tport_tensor_set_name(t, name);
    *out = t;
    return TPORT_STATUS_OK;
}

/* Cuts layer il's attn_kv_b [lora, n_head * (nope + v)] (per head nope K
 * rows, then v V rows) into attn_k_b [nope, lora, n_head] (each head's K
 * rows transposed) and attn_v_b [lora, v, n_head] (its V rows), as
 * llama.cpp's converter splits it, into f32 copies the model owns. */
static tport_status split_kv_b(tport_model *m, int32_t il) {
    const tport_model_shape *sh = &m->sh;
    tport_layer *l = &m->layers[il];
    const int64_t lora = sh->n_lora_kv, nh = sh->n_head, nope = (int64_t)sh->head_dim_k_mla - sh->n_rot,
                  v = sh->head_dim_v_mla;
    const tport_type_id type = tport_tensor_type(l->wkv_b);
    const tport_type_traits *tr = tport_traits(type);
    if (!tr || !tr->to_float)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: blk.%d.attn_kv_b.weight of type %u cannot be split "
                           "(it has no row-wise decoding)", m->file->path, (int)il, (unsigned)type);
    char kname[64], vname[64];
    snprintf(kname, sizeof kname, "blk.%d.attn_k_b.weight", (int)il);
    snprintf(vname, sizeof vname, "blk.%d.attn_v_b.weight", (int)il);
    tport_tensor *tk = NULL, *tv = NULL;
    tport_status st = owned_f32(m, kname, nope, lora, nh, &tk);
    if (!st)
        st = owned_f32(m, vname, lora, v, nh, &tv);
    if (st)
        return st;
    float *wk = tport_tensor_data(tk), *wv = tport_tensor_data(tv);
    /* a head's nope + v rows are consecutive: read once per head (as bind
     * reads 1-D weights: a copy, not the mapping) */
    const size_t row_bytes = tport_row_size(type, lora), head_bytes = (size_t)(nope + v) * row_bytes;
    uint8_t *raw = malloc(head_bytes);
    float *row = malloc((size_t)lora * sizeof *row);
    if (!raw || !row)
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory splitting blk.%d.attn_kv_b.weight", (int)il);
    const uint8_t *src = tport_tensor_data(l->wkv_b);
    for (int64_t h = 0; h < nh && !st; h++) {
        st = tport_model_file_copy(m->file, src + (size_t)h * head_bytes, raw, head_bytes);
        for (int64_t j = 0; j < nope + v && !st; j++) {
            tr->to_float(raw + (size_t)j * row_bytes, row, lora);
            for (int64_t k = 0; k < lora; k++) {
                if (j < nope)
                    wk[(h * lora + k) * nope + j] = row[k];
                else
                    wv[(h * v + (j - nope)) * lora + k] = row[k];
            }
        }
    }
    free(raw);
    free(row);
    if (st)
        return st;
    l->wk_b = tk;
    l->wv_b = tv;
    l->wkv_b = NULL; /* not read again: placement leaves it in the file */
    return TPORT_STATUS_OK;
}

static tport_status after_bind(tport_model *m) {
    for (int32_t il = m->layer_begin; il < m->layer_end && m->sh.mla_kv_b_unsplit; il++) {
        tport_status st = m->layers[il].wkv_b ? split_kv_b(m, il) : TPORT_STATUS_OK;
        if (st)
            return st;
    }
    return TPORT_STATUS_OK;
}

static tport_tensor *ffn(tport_blk *b, int il, tport_tensor *h) {
    const tport_layer *l = &b->m->layers[il];
    if (!l->ffn_gate_inp)
        return tport_blk_ffn_swiglu(b, l, h);
    const tport_moe_routing r = {.sigmoid = b->sh->expert_sigmoid, .renormalise = b->sh->expert_weights_norm,
                                 .scale = b->sh->expert_weights_scale, .probs_bias = l->ffn_exp_probs_b,
                                 .n_groups = b->sh->n_expert_groups, .n_group_used = b->sh->n_group_used};
    tport_tensor *moe = tport_blk_ffn_moe_routed(b, l, h, &r);
    if (b->sh->n_expert_shared <= 0)
        return moe;
    return tport_add(b->ctx, moe, tport_blk_ffn_shared_expert(b, l, h));
}

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        x = tport_add(b->ctx, mla_attention(b, il, tport_blk_norm(b, x, l->attn_norm, NULL)), x);
        x = tport_add(b->ctx, ffn(b, il, tport_blk_norm(b, x, l->ffn_norm, NULL)), x);
    }
    return tport_blk_output(b, x);
}

const tport_arch tport_arch_deepseek2 = {
    .name = "deepseek2",
    .about = "DeepSeek-V2, V2-Lite, V2.5, V3, R1 (multi-head latent attention, shared experts)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NORMAL,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .value_length_own = true,
    .after_bind = after_bind,
    .synth_key = synth_key,
    .math_keys = "rope.scaling.yarn_log_multiplier|expert_count|expert_used_count|"
                 "expert_shared_count|expert_feed_forward_length|leading_dense_block_count|"
                 "attention.q_lora_rank|attention.kv_lora_rank|attention.key_length_mla|"
                 "attention.value_length_mla|expert_weights_scale|expert_weights_norm|"
                 "expert_gating_func|expert_group_count|expert_group_used_count",
};
