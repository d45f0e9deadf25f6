/* bert (BERT, BGE, MiniLM, all-MiniLM sentence encoders): an encoder for
 * embeddings, no output head.  Learned positions and token types, a
 * LayerNorm on the embedding, post-norm blocks with biases, non-causal
 * attention (attention.causal false: every position sees every other, so
 * a sequence is one batch from position 0), GELU feed-forward; the last
 * layer's output is what tport_session_embed pools (mean or CLS, as
 * pooling_type says).
 *
 *   x = LN(token_embd[ids] + token_types[0] + position_embd[pos]) * token_embd_norm + b
 *   per layer:  x = LN(x + Wo attn(Wq x + bq, Wk x + bk, Wv x + bv) + bo) * attn_output_norm + b
 *               x = LN(x + W_down gelu(W_up x + b_up) + b_down) * layer_output_norm + b
 *   embedding = x (per token; pooled by the session)
 *
 * Token types are all 0 ("sentence A"), as llama.cpp hardcodes them.  The
 * post-norms sit in the pre-norm slots of their side (attn_norm: after
 * attention; ffn_norm: after the feed-forward). */
#include <math.h>
#include <stdio.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_G("token_types.weight", type_embd, DIM_EMBD, DIM_TOKEN_TYPES, TENSOR_OPTIONAL),
    ARCH_G("position_embd.weight", pos_embd, DIM_EMBD, DIM_CTX, 0),
    ARCH_G("token_embd_norm.weight", tok_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("token_embd_norm.bias", tok_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_q.bias", bq, DIM_Q, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_k.bias", bk, DIM_KV, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.bias", bv, DIM_KV, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_output_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_output_norm.bias", attn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_up.bias", b_up, DIM_FF, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_down.bias", b_down, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_F("layer_output_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("layer_output_norm.bias", ffn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
};

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_arch_bert_embed(b); /* NULL: logits asked for */
    return x ? tport_blk_output(b, tport_arch_bert_layers(b, x, false)) : NULL; /* no output_norm */
}

tport_tensor *tport_arch_bert_embed(tport_blk *b) {
    const tport_globals *w = &b->m->w;
    if (!b->hidden_out) {
        tport_error(TPORT_STATUS_UNSUPPORTED, "%s is an encoder: it gives embeddings (tport_session_embed), "
                    "not logits", b->m->arch->name);
        return NULL;
    }
    tport_tensor *x = b->hidden_in;
    if (!x) {
        x = tport_blk_embed(b); /* token (and learned position) embeddings */
        if (w->type_embd && x) {
            /* row 0 of the token types: positions[0] is 0 (a non-causal
             * batch starts at position 0: eval.c) */
            const int64_t one[1] = {1};
            tport_tensor *zero = tport_view(b->ctx, b->positions, 1, one, NULL, 0);
            x = tport_add(b->ctx, x, tport_get_rows(b->ctx, w->type_embd, zero));
        }
        x = x ? tport_blk_norm(b, x, w->tok_norm, w->tok_norm_b) : NULL;
    }
    return x;
}

tport_tensor *tport_arch_bert_layers(tport_blk *b, tport_tensor *x, bool swiglu) {
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *a = tport_blk_self_attention(b, il, x, kq_scale);
        x = a ? tport_blk_norm(b, tport_add(b->ctx, x, a), l->attn_norm, l->attn_norm_b) : NULL;
        tport_tensor *f = !x ? NULL : swiglu ? tport_blk_ffn_swiglu(b, l, x) : tport_blk_ffn_gelu(b, l, x);
        x = f ? tport_blk_norm(b, tport_add(b->ctx, x, f), l->ffn_norm, l->ffn_norm_b) : NULL;
    }
    return x;
}

/* synth: the encoder's keys (a converted file has them) */
static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    return tport_arch_bert_write_keys(w, "bert", sh);
}

tport_status tport_arch_bert_write_keys(tport_gguf_writer *w, const char *arch, const tport_model_shape *sh) {
    char key[96];
    snprintf(key, sizeof key, "%s.attention.causal", arch);
    tport_status st = tport_gguf_set_bool(w, key, false);
    return st ? st : tport_gguf_set_u32(w, "tokenizer.ggml.token_type_count", (uint32_t)sh->n_token_types);
}

const tport_arch tport_arch_bert = {
    .name = "bert",
    .about = "BERT, BGE, MiniLM sentence encoders (embeddings only)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = -1,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "attention.causal",
};
