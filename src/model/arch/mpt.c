/* mpt (MPT-7B/30B, Replit-code in GGUF): gpt2's sequential LayerNorm
 * block where every bias is optional, ALiBi instead of positions (when
 * max_alibi_bias > 0; else optional learned position embeddings), the fused
 * QKV clamped to [-clamp_kqv, clamp_kqv] when set.  Files with Q/K
 * LayerNorms or activation scales are refused. */
#include "model/arch/arch.h"

#define OPT_BIAS (TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH)

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_G("position_embd.weight", pos_embd, DIM_EMBD, DIM_CTX, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_norm.bias", attn_norm_b, DIM_EMBD, DIM_1, OPT_BIAS),
    ARCH_A("attn_qkv.weight", wqkv, DIM_EMBD, DIM_QKV, 0),
    ARCH_A("attn_qkv.bias", bqkv, DIM_QKV, DIM_1, OPT_BIAS),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, OPT_BIAS),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_norm.bias", ffn_norm_b, DIM_EMBD, DIM_1, OPT_BIAS),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_down.bias", b_down, DIM_EMBD, DIM_1, OPT_BIAS),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_up.bias", b_up, DIM_FF, DIM_1, OPT_BIAS),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.bias", output_norm_b, DIM_EMBD, DIM_1, OPT_BIAS),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};


static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++)
        x = tport_arch_sequential_ln_block(b, x, il);
    return tport_blk_output(b, x);
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    static const char *const unsupported[] = {"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight",
                                              "blk.0.ffn_act.scales"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (tport_model_file_find(mf, unsupported[i]))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: mpt with %s is not supported", mf->path,
                               unsupported[i]);
    tport_arch_f32(mf, "attention.clamp_kqv", &sh->clamp_kqv);
    tport_arch_f32(mf, "attention.max_alibi_bias", &sh->max_alibi_bias);
    if (!(sh->max_alibi_bias >= 0.0f) || !(sh->clamp_kqv >= 0.0f))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: negative max_alibi_bias or clamp_kqv", mf->path);
    return TPORT_STATUS_OK;
}

static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    tport_status st = tport_gguf_set_f32(w, "mpt.attention.max_alibi_bias", sh->max_alibi_bias);
    if (st == TPORT_STATUS_OK && sh->clamp_kqv > 0)
        st = tport_gguf_set_f32(w, "mpt.attention.clamp_kqv", sh->clamp_kqv);
    return st;
}

const tport_arch tport_arch_mpt = {
    .name = "mpt",
    .about = "MPT-7B, MPT-30B",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = -1,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "attention.clamp_kqv|attention.max_alibi_bias",
};
