/* Architectures: one file per architecture in this folder holds its tensor
 * table, its hyperparameter keys and its graph builder; arch_table.c lists
 * them.  The loader, `tport synth` and `tport info` all read the same
 * table, so adding an architecture is one file and one row there. */
#ifndef TPORT_MODEL_ARCH_H
#define TPORT_MODEL_ARCH_H


#include <stddef.h>

#include "core/error.h"
#include "formats/gguf_write.h"
#include "model/blocks.h"
#include "model/model.h"

/* The dimensions a tensor's shape is written in. */
typedef enum tport_arch_dim {
    DIM_1 = 0,    /* absent dimension (1-D tensors)             */
    DIM_EMBD,     /* n_embd                                     */
    DIM_VOCAB,    /* n_vocab                                    */
    DIM_FF,       /* n_ff                                       */
    DIM_Q,        /* n_head * head_dim                          */
    DIM_KV,       /* n_head_kv * head_dim                       */
    DIM_QKV,      /* DIM_Q + 2 * DIM_KV (fused [Q|K|V] rows)    */
    DIM_CTX,      /* the trained context (position embeddings)  */
    DIM_EXPERT,   /* n_expert (the third dimension of a stack)  */
    DIM_FF_EXP,   /* an expert's feed-forward width (n_ff_exp)  */
    DIM_FF_SHEXP, /* the shared expert's (n_ff_shexp)           */
    DIM_HEAD,     /* head_dim (per-head Q/K norms)              */
    DIM_ROT_HALF, /* n_rot / 2 (RoPE frequency factors)         */
    DIM_FF2,      /* 2 n_ff (fused [gate|up] rows, phi3)         */
    /* multi-head latent attention (deepseek2) */
    DIM_Q_LORA,   /* Q's low rank (n_lora_q)                     */
    DIM_KV_LORA,  /* the latent KV width (n_lora_kv)             */
    DIM_KV_A,     /* n_lora_kv + n_rot (latent and rotated key)  */
    DIM_QK_NOPE,  /* head_dim_k_mla - n_rot (a head's unrotated)  */
    DIM_V_MLA,    /* head_dim_v_mla                              */
    DIM_Q_MLA,    /* n_head * head_dim_k_mla                     */
    DIM_O_MLA,    /* n_head * head_dim_v_mla                     */
    DIM_HEADS,    /* n_head: per-head K/V stacks, attention sinks */
    DIM_KV_B,     /* n_head * (head_dim_k_mla - n_rot + head_dim_v_mla) */
    DIM_FF_SHEXPS,/* n_ff_exp * n_expert_shared (deepseek2)      */
    DIM_TOKEN_TYPES, /* tokenizer.ggml.token_type_count (BERT)  */
} tport_arch_dim;

enum {
    TENSOR_LAYER = 1u << 0,    /* one per block: the name has a %d          */
    TENSOR_OPTIONAL = 1u << 1, /* the file may lack it                      */
    TENSOR_BIAS = 1u << 2,     /* additive (1-D, or a row per expert): synth
                                  fills it with noise, always f32         */
    TENSOR_NO_SYNTH = 1u << 3, /* optional and not written by tport synth   */
    TENSOR_FFN = 1u << 4,      /* a layer's feed-forward side (else its
                                  attention side): where its matrices run,
                                  its vectors live (weight placement)      */
    TENSOR_EXPERTS = 1u << 5,  /* part of a mixture of experts: required
                                  when the shape has experts, else absent  */
    TENSOR_DENSE = 1u << 6,    /* the dense feed-forward of an architecture
                                  that may have experts instead: required
                                  when the shape has none, else absent     */
    /* with n_layer_dense_lead (deepseek2) the leading layers are dense and
     * the rest have experts, so TENSOR_DENSE and TENSOR_EXPERTS are read
     * per layer (tport_arch_layer_row_applies) */
    TENSOR_Q_LORA = 1u << 7,   /* only when Q has a low rank (n_lora_q > 0) */
    TENSOR_NO_Q_LORA = 1u << 8, /* only when it has not                     */
    TENSOR_KV_B_SPLIT = 1u << 9,   /* only when !mla_kv_b_unsplit          */
    TENSOR_KV_B_UNSPLIT = 1u << 10, /* only when mla_kv_b_unsplit          */
};

typedef struct tport_arch_tensor {
    const char *name;          /* GGUF name; "blk.%d." prefix for layers  */
    unsigned short slot;       /* offsetof in tport_layer / tport_globals */
    unsigned char ne0, ne1;    /* tport_arch_dim                          */
    unsigned flags;
    unsigned char ne2;         /* a third dimension (DIM_EXPERT), else 0  */
} tport_arch_tensor;

#define ARCH_G(name, field, d0, d1, fl) {name, offsetof(tport_globals, field), d0, d1, fl, 0}
/* A layer's tensors: ARCH_A on the attention side (its norms, QKV, output
 * projection and their biases), ARCH_F on the feed-forward side. */
#define ARCH_A(name, field, d0, d1, fl) {"blk.%d." name, offsetof(tport_layer, field), d0, d1, (fl) | TENSOR_LAYER, 0}
#define ARCH_F(name, field, d0, d1, fl) \
    {"blk.%d." name, offsetof(tport_layer, field), d0, d1, (fl) | TENSOR_LAYER | TENSOR_FFN, 0}

/* A per-head stack of matrices [d0, d1, d2] on the attention side. */
#define ARCH_A3(name, field, d0, d1, d2, fl) {"blk.%d." name, offsetof(tport_layer, field), d0, d1, (fl) | TENSOR_LAYER, d2}

/* A stack of experts' matrices [d0, d1, n_expert] on the feed-forward side. */
#define ARCH_X(name, field, d0, d1, fl) \
    {"blk.%d." name, offsetof(tport_layer, field), d0, d1, (fl) | TENSOR_LAYER | TENSOR_FFN | TENSOR_EXPERTS, \
     DIM_EXPERT}

typedef enum tport_norm_kind { NORM_RMS, NORM_LAYER } tport_norm_kind;

struct tport_arch {
    const char *name;             /* general.architecture                     */
    const char *about;            /* the families it covers, for `tport info` */
    const tport_arch_tensor *tensors;
    int n_tensors;
    tport_norm_kind norm;
    int rope_mode;                /* TPORT_ROPE_NORMAL / _NEOX, -1 = none     */
    /* Its converter writes no rope.dimension_count when RoPE turns the
     * whole head (synth and convert write files the same way). */
    bool whole_head_rope_unwritten;
    /* Reads the architecture's own keys after the common ones (may be
     * NULL); refuses what the graph cannot run. */
    tport_status (*hparams)(const tport_model_file *mf, tport_model_shape *sh);
    /* The forward pass of one batch: returns the logits tensor of the last
     * token (NULL with the error set). */
    tport_tensor *(*build)(tport_blk *b);
    /* Writes the architecture's own GGUF keys for sh (tport synth,
     * tport convert); the common ones are written by the caller. */
    tport_status (*write_keys)(tport_gguf_writer *w, const tport_model_shape *sh);
    /* Rearranges weights of a GGML-container file after binding (layouts
     * that differ from GGUF's); may be NULL. */
    tport_status (*fix_legacy)(tport_model *m);
    /* Derives, after binding a file of any container, weights the file
     * holds in an older form (deepseek2: attn_k_b and attn_v_b cut from
     * attn_kv_b); may be NULL. */
    tport_status (*after_bind)(tport_model *m);
    /* Its hparams reads attention.value_length itself (deepseek2: it may
     * differ from key_length); else the two must agree. */
    bool value_length_own;
    /* The keys of arch_math.c's table ("ARCH." suffixes, "a|b") that this
     * architecture's graph implements: a file asking for one of them runs
     * here and is refused by an architecture that does not list it.  NULL:
     * none beyond what every architecture reads. */
    const char *math_keys;
    /* tport synth --key SUFFIX=V: sets the shape's field of an
     * architecture's own key (write_keys writes it); false: not one of its
     * keys.  Called with suffix NULL after the options, to finish the
     * shape.  May be NULL. */
    bool (*synth_key)(tport_model_shape *sh, const char *suffix, double v);
};

/* The GGUF name of a GGML-container file's tensor (the reverse of
 * mf_example_name_at, layers 0..n_layer-1); false if the architecture's
 * example layout has no such name.
 * *qkv_interleaved says the tensor is gpt-neox's per-head [q,k,v] fused
 * projection, whose rows GGUF stores as [Q|K|V]. */
bool tport_arch_gguf_name(const tport_arch *arch, const char *file_name, int n_layer, char *out, size_t cap,
                          bool *qkv_interleaved);

/* The file's tensor for a table name ("blk.%d." names with layer il): the
 * name itself, or in a GGML-container file the example layout's name for
 * it (mf_example_name_at). */
const tport_mf_tensor *tport_arch_file_tensor(const tport_model_file *mf, const tport_arch *arch,
                                              const char *table_name, int il, char *name, size_t cap);

/* tport_qkv_deinterleave (public, tport/model_file.h) re-orders GPT-NeoX's
 * per-head fused QKV rows (or its bias: rows of one element); the loader
 * and tport convert both use it. */

/* The architecture of that GGUF name, or NULL. */
const tport_arch *tport_arch_find(const char *name);
int tport_arch_count(void);
const tport_arch *tport_arch_at(int i);
/* The size of a table dimension for a shape. */
int64_t tport_arch_dim_size(const tport_model_shape *sh, int dim);

/* Shared by the architecture files: a float key "<arch>.<suffix>". */
bool tport_arch_f32(const tport_model_file *mf, const char *suffix, float *out);
/* A u32 (or i32) key "<arch>.<suffix>" up to 2^30; *out unchanged when
 * absent.  Returns whether it was present. */
bool tport_arch_u32(const tport_model_file *mf, const char *suffix, uint32_t *out);
/* A bool key "<arch>.<suffix>"; *out unchanged when absent.  Returns
 * whether it was present. */
bool tport_arch_bool(const tport_model_file *mf, const char *suffix, bool *out);
/* Gemma 2/3's sliding-window pattern: "<arch>.attention.sliding_window_pattern"
 * as a count (layer il local when il % period < period - 1), or
 * default_period when absent; refuses the per-layer array form. */
tport_status tport_arch_swa_period(const tport_model_file *mf, int32_t default_period, int32_t *out);
/* The feed-forward, attention and output parts Gemma 2 and 3 share: the
 * embedding scaled by sqrt(n_embd), and a layer with post-norms:
 * x += post_norm(attn(norm x)); x += ffn_post_norm(geglu(ffn_norm x)). */
tport_tensor *tport_arch_gemma_layer(tport_blk *b, tport_tensor *x, int il, float q_scale);
/* Gemma's Q scale (gemma_pytorch's query_pre_attn_scalar): 1/sqrt(n_embd /
 * n_head) for the 27B models (n_layer == layers_27b), else 1/sqrt(head_dim). */
float tport_arch_gemma_q_scale(const tport_model_shape *sh, int32_t layers_27b);

/* The GGUF keys every architecture has ("<arch>.context_length" ..., the
 * norm epsilon of its norm kind, the rotary keys if it uses RoPE). */
tport_status tport_arch_write_common_keys(tport_gguf_writer *w, const tport_arch *arch, const tport_model_shape *sh);
/* The sequential LayerNorm block of gpt2, starcoder, mpt, bloom:
 * x += attn(ln1 x); x += ffn_gelu(ln2 x). */
tport_tensor *tport_arch_sequential_ln_block(tport_blk *b, tport_tensor *x, int il);
/* Whether row t is in a file of shape sh: rows of experts only with
 * experts, dense feed-forward rows of a mixture-of-experts architecture
 * only without (tport synth writes, the loader requires, those). */
bool tport_arch_row_applies(const tport_arch_tensor *t, const tport_model_shape *sh);
/* The same for layer il of a layer row: the leading n_layer_dense_lead
 * layers have the dense rows, the others the experts' (deepseek2). */
bool tport_arch_layer_row_applies(const tport_arch_tensor *t, const tport_model_shape *sh, int il);

extern const tport_arch tport_arch_llama, tport_arch_gpt2, tport_arch_starcoder, tport_arch_qwen2,
    tport_arch_gptneox, tport_arch_phi2, tport_arch_falcon, tport_arch_mpt, tport_arch_bloom, tport_arch_gemma,
    tport_arch_gptj, tport_arch_gemma2, tport_arch_gemma3, tport_arch_qwen2moe, tport_arch_qwen3moe,
    tport_arch_olmoe, tport_arch_granitemoe, tport_arch_gptoss;
extern const tport_arch tport_arch_bert, tport_arch_nomic_bert;
/* The BERT family's parts (bert.c): the embedding (token types' row 0,
 * the embedding LayerNorm; logits refused), the post-norm layers with a
 * GELU or SwiGLU feed-forward, the synth keys (non-causal, token types). */
tport_tensor *tport_arch_bert_embed(tport_blk *b);
tport_tensor *tport_arch_bert_layers(tport_blk *b, tport_tensor *x, bool swiglu);
tport_status tport_arch_bert_write_keys(tport_gguf_writer *w, const char *arch, const tport_model_shape *sh);
extern const tport_arch tport_arch_qwen3, tport_arch_olmo2, tport_arch_granite, tport_arch_smollm3, tport_arch_phi3,
    tport_arch_mistral3, tport_arch_deepseek2, tport_arch_cohere2;

#endif
