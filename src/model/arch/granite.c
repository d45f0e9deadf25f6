/* granite (IBM Granite 3.x dense): llama's graph with four multipliers
 * (llama.cpp's granite.cpp): the embedding times embedding_scale, each
 * attention and feed-forward output times residual_scale before it joins
 * the residual, attention.scale as the kq scale, the logits divided by
 * logit_scale.  rope.scaling.finetuned = false means no RoPE at all.
 *
 *   x = token_embd[ids] * embedding_scale
 *   per layer:  x += residual_scale Wo attn(rope(Wq h), rope(Wk h), Wv h; attention.scale),
 *                                                      h = rms_norm(x) * attn_norm
 *               x += residual_scale W_down (silu(W_gate h) * W_up h), h = rms_norm(x) * ffn_norm
 *   logits = output (rms_norm(x_last) * output_norm) / logit_scale */
#include <math.h>
#include <stdio.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_q.bias", bq, DIM_Q, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_k.bias", bk, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.bias", bv, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    /* tied in Granite 3.x; synth writes it, since a tied classifier under
     * the embedding multiplier makes a random model echo its input */
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
    ARCH_G("rope_freqs.weight", rope_freqs, DIM_ROT_HALF, DIM_1, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};

/* The multipliers synth writes: Granite 3.x's kinds of values (embedding
 * 12, residual 0.22, attention 1/128 ... logits / 8), but sized so that a
 * small random model still decides: its logits multiplied (divided by a
 * logit_scale below 1), as the gaps of the references need. */
static const float synth_embd = 6.0f, synth_residual = 0.5f, synth_attn = 0.125f, synth_logit = 0.25f;

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    /* llama.cpp: logit_scale is required; the others default to "none" */
    if (!tport_arch_f32(mf, "logit_scale", &sh->logit_scale) || !(sh->logit_scale != 0.0f))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: granite needs a non-zero %s.logit_scale", mf->path,
                           mf->arch);
    float f;
    if (tport_arch_f32(mf, "embedding_scale", &f) && f != 0.0f)
        sh->embd_scale = f;
    if (tport_arch_f32(mf, "residual_scale", &f) && f != 0.0f)
        sh->residual_scale = f;
    if (tport_arch_f32(mf, "attention.scale", &f))
        sh->attn_scale = f;
    bool finetuned = true;
    tport_arch_bool(mf, "rope.scaling.finetuned", &finetuned);
    if (!finetuned)
        sh->nope_every = 1; /* llama.cpp's rope_pattern: every layer without */
    return TPORT_STATUS_OK;
}

static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    bool synth = sh->logit_scale == 0.0f; /* a synthesized shape has none */
    struct {
        const char *suffix;
        float v;
    } keys[] = {
        {"embedding_scale", synth ? synth_embd : sh->embd_scale},
        {"residual_scale", synth ? synth_residual : sh->residual_scale},
        {"attention.scale", synth ? synth_attn : sh->attn_scale},
        {"logit_scale", synth ? synth_logit : sh->logit_scale},
    };
    tport_status st = TPORT_STATUS_OK;
    char key[96];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && st == TPORT_STATUS_OK; i++) {
        if (keys[i].v == 0.0f)
            continue;
        snprintf(key, sizeof key, "granite.%s", keys[i].suffix);
        st = tport_gguf_set_f32(w, key, keys[i].v);
    }
    return st;
}

static tport_tensor *scaled(tport_blk *b, tport_tensor *x, float s) {
    return s == 1.0f ? x : tport_scale(b->ctx, x, s);
}

static tport_tensor *build(tport_blk *b) {
    const tport_model_shape *sh = b->sh;
    tport_tensor *x = tport_blk_embed(b);
    if (!b->hidden_in)
        x = scaled(b, x, sh->embd_scale);
    float kq_scale = sh->attn_scale != 0.0f ? sh->attn_scale : 1.0f / sqrtf((float)sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *att = tport_blk_self_attention(b, il, tport_blk_norm(b, x, l->attn_norm, NULL), kq_scale);
        x = tport_add(b->ctx, scaled(b, att, sh->residual_scale), x);
        tport_tensor *ffn = tport_blk_ffn_swiglu(b, l, tport_blk_norm(b, x, l->ffn_norm, NULL));
        x = tport_add(b->ctx, scaled(b, ffn, sh->residual_scale), x);
    }
    tport_tensor *logits = tport_blk_output(b, x);
    return b->hidden_out ? logits : scaled(b, logits, 1.0f / sh->logit_scale);
}

const tport_arch tport_arch_granite = {
    .name = "granite",
    .about = "IBM Granite 3.x (dense)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NORMAL,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "attention.scale|logit_scale|embedding_scale|residual_scale",
};
