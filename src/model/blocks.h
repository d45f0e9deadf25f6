/* The parts every architecture's graph is built from: embeddings, norms,
 * the QKV projection (fused or separate, with optional biases and clamp),
 * rotary embedding, attention over the KV cache, the feed-forward variants
 * and the output head.  An architecture's builder strings them together. */
#ifndef TPORT_MODEL_BLOCKS_H
#define TPORT_MODEL_BLOCKS_H

#include "model/model.h"
#include "registry/registry.h"

/* Where new keys or values go in a layer's cache: the cache's view dst at
 * (pos % cells) * row bytes, which a graph kept for reuse moves
 * (tport_view_move; the cpy node into it follows).  A batch that wraps
 * round a sliding-window ring writes its tail at cell 0 with a second
 * copy, which does not move (the graph is kept only for the same split). */
typedef struct tport_blk_store {
    tport_tensor *dst;
    size_t row;
    int32_t cells;
    int32_t seq; /* the sequence whose position moves it */
} tport_blk_store;

/* One sequence of a batch: rows [first, first + n) of the batch, at
 * positions pos.., stored in and attending over its own caches through
 * its own masks ([n_kv, n] and, when a layer has a window, [n_kv_swa, n]
 * over the ring's cells).  A session's batch is one sequence; a batch of
 * several sessions (tport_batch_eval) has one each, and only attention
 * looks at the split: every other node runs over all rows at once. */
typedef struct tport_blk_seq {
    const tport_kv_layer *kv; /* per layer */
    int32_t first, n, pos, n_kv, n_kv_swa;
    tport_tensor *mask, *mask_swa;
} tport_blk_seq;

/* The state of one batch's graph while it is built. */
typedef struct tport_blk {
    tport_ctx *ctx;
    tport_graph *g;
    const tport_model *m;
    const tport_model_shape *sh;
    tport_tensor *ids, *positions;        /* inputs: [n] i32, [n] i32           */
    const tport_blk_seq *seqs;            /* the batch's sequences (>= 1)       */
    int32_t n_seqs;
    /* several sequences: the rows the head reads (the last of each,
     * i32 [n_seqs]), or NULL when every row is one (one token each) */
    tport_tensor *out_rows;
    /* the host's copy of token_embd's rows for ids (in token_embd's type)
     * and 0..n-1, or NULL: get_rows reads token_embd itself */
    tport_tensor *rows, *row_ids;
    int32_t n, n_ctx;                     /* rows of the batch, context         */
    bool fused_attn;                      /* attention as one flash_attn node   */
    /* a pipeline stage: the layers to run, the hidden state entering the
     * first ([n_embd, n], NULL: embed the ids), and whether the state
     * leaving the last is the result instead of the head's logits */
    int32_t layer_begin, layer_end;
    tport_tensor *hidden_in;
    bool hidden_out, hidden_out_last;
    bool hidden_normed; /* hidden_out after the final norm (embeddings) */
    bool logits_all; /* the head runs on every row, not only the last */
    /* where tport_blk_attention notes its cache stores (room for two a
     * layer), or NULL */
    tport_blk_store *stores;
    int n_stores, cap_stores;
} tport_blk;

/* token_embd[ids] (plus position_embd[positions] when the model has it);
 * a later pipeline stage's hidden_in instead.  Builders that transform the
 * embedding further do so only when hidden_in is NULL. */
tport_tensor *tport_blk_embed(tport_blk *b);
/* The architecture's norm of x (RMS or LayerNorm), times w, plus bias
 * when given (w may be NULL: no scale). */
tport_tensor *tport_blk_norm(tport_blk *b, tport_tensor *x, tport_tensor *w, tport_tensor *bias);
/* x W^T + bias (bias may be NULL). */
tport_tensor *tport_blk_linear(tport_blk *b, tport_tensor *w, tport_tensor *bias, tport_tensor *x);
/* Q [head_dim, n_head, n], K and V [head_dim, n_head_kv, n] of layer l from
 * h: the fused attn_qkv (split at [Q|K|V], clamped when the shape says so)
 * or attn_q/k/v, biases where present, Q and K normed by attn_q_norm and
 * attn_k_norm where present (over the whole projection or per head, by
 * the norm's length); Q and K rotated when the architecture uses RoPE. */
tport_status tport_blk_qkv(tport_blk *b, const tport_layer *l, tport_tensor *h, tport_tensor **q,
                           tport_tensor **k, tport_tensor **v);
/* The same for layer il (-1: the layer l is): no RoPE on the shape's NoPE
 * layers, a sliding-window layer's own RoPE base and scale. */
tport_status tport_blk_qkv_layer(tport_blk *b, int il, const tport_layer *l, tport_tensor *h, tport_tensor **q,
                                 tport_tensor **k, tport_tensor **v);
/* Stores k and v in layer il's cache and attends: softmax(K^T q * kq_scale
 * + mask [+ ALiBi]) V, as [n_head * head_dim, n]; with the shape's
 * attn_softcap the scaled scores pass through cap tanh(s / cap) before the
 * mask (one FLASH_ATTN_EXT node when attention is fused, else the unfused
 * ops of llama.cpp's graph without flash attention).  A sliding-window
 * layer reads its ring through the window's mask.  With several sequences
 * each one's rows of q, k and v go to its own cache and attend over it
 * alone; the results are concatenated in row order. */
tport_tensor *tport_blk_attention(tport_blk *b, int il, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                                  float kq_scale);
/* Rotary embedding of t [head_dim, heads, n] for layer il: none on a NoPE
 * layer, a sliding-window layer's own base and scale, ROPE_EXT where
 * frequency factors, YaRN or an attention factor need it. */
tport_tensor *tport_blk_rope(tport_blk *b, int il, tport_tensor *t);
/* Attention of layer il from its normed input h, through attn_output. */
tport_tensor *tport_blk_self_attention(tport_blk *b, int il, tport_tensor *h, float kq_scale);
/* down(silu(gate h) * up h) */
tport_tensor *tport_blk_ffn_swiglu(tport_blk *b, const tport_layer *l, tport_tensor *h);
/* A mixture of experts (blocks_moe.c): softmax routing to the
 * n_expert_used best of n_expert SwiGLU experts, their weights
 * renormalised to sum 1 when asked (Mixtral, Qwen3-MoE) or not (OLMoE,
 * Qwen2-MoE). */
tport_tensor *tport_blk_ffn_moe(tport_blk *b, const tport_layer *l, tport_tensor *h, bool renormalise);
/* gpt-oss's mixture (blocks_moe.c): the n_expert_used largest of the
 * router's logits plus its bias, their softmax as weights, experts with
 * biases (add_id) and the clamped SwiGLU (alpha, limit). */
tport_tensor *tport_blk_ffn_moe_oai(tport_blk *b, const tport_layer *l, tport_tensor *h, float alpha, float limit);
/* How a mixture of experts routes beyond softmax: sigmoid gating, a bias
 * added for the choice only ([n_expert], or NULL), the chosen weights
 * renormalised, then scaled (0 or 1: not). */
typedef struct tport_moe_routing {
    bool sigmoid, renormalise;
    float scale;
    tport_tensor *probs_bias;
    /* > 1: the choice only among the experts of the n_group_used best of
     * n_groups groups (TPORT_OP_EXPERT_GROUPS, DeepSeek-V3) */
    int32_t n_groups, n_group_used;
} tport_moe_routing;
tport_tensor *tport_blk_ffn_moe_routed(tport_blk *b, const tport_layer *l, tport_tensor *h,
                                       const tport_moe_routing *r);
/* The shared expert of Qwen2-MoE: its SwiGLU times sigmoid(gate h). */
tport_tensor *tport_blk_ffn_shared_expert(tport_blk *b, const tport_layer *l, tport_tensor *h);
/* The layer's experts where it has them (ffn_gate_inp), else its dense
 * SwiGLU. */
tport_tensor *tport_blk_ffn_swiglu_or_moe(tport_blk *b, const tport_layer *l, tport_tensor *h, bool renormalise);
/* The pre-norm decoder most families share (llama, mistral3, qwen2/3,
 * smollm3, the mixtures of experts built on them): per layer
 * x += attention(rms_norm(x) * attn_norm), x += ffn(rms_norm(x) * ffn_norm)
 * with the layer's dense SwiGLU or its experts (renormalised as asked),
 * then the head.  An architecture whose build is exactly this points at
 * it from a one-line build of its own. */
tport_tensor *tport_blk_decoder(tport_blk *b, bool renormalise_experts);
/* down(gelu(gate h) * up h) */
tport_tensor *tport_blk_ffn_geglu(tport_blk *b, const tport_layer *l, tport_tensor *h);
/* down(gelu(up h + b_up)) + b_down */
tport_tensor *tport_blk_ffn_gelu(tport_blk *b, const tport_layer *l, tport_tensor *h);
/* Whether attention is one flash_attn node: unless a backend other than
 * the CPU is forced (it must run every node, and gets the unfused ops). */
bool tport_blk_fused_attn(const char *forced_backend);
/* Whether backend b runs the nodes that write layer caches of kv_type and
 * read them (cache_probe.c), for n_ctx positions and batches of n_batch:
 * only then may a layer's cache live in b's memory. */
bool tport_blk_cache_runs_on(const tport_active_backend *b, const tport_model *m, tport_type_id kv_type,
                             int32_t n_ctx, int32_t n_batch);
/* Logits of the last token (of each sequence): output(norm(x) with
 * output_norm) + output_b, soft-capped when the shape says so;
 * for a stage before the last, x itself (or its last row); with
 * hidden_normed, norm(x) with output_norm (what embeddings pool, as
 * llama.cpp's result_norm). */
tport_tensor *tport_blk_output(tport_blk *b, tport_tensor *x);

#endif
