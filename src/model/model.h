/* Private to src/model: the loaded model and its session.  Every
 * architecture keeps its weights in the same slots (tport_globals,
 * tport_layer); its table in src/model/arch/ says which slots it uses and
 * with which shapes, and its graph builder reads them. */
#ifndef TPORT_MODEL_MODEL_H
#define TPORT_MODEL_MODEL_H


#include <pthread.h>

#include "core/tensor.h"
#include "formats/model_file.h"
#include "tokenize/tokenizer.h"
#include "tport/tport.h"

typedef struct tport_arch tport_arch;

/* Per-block weight slots of every architecture; NULL where unused. */
typedef struct tport_layer {
    tport_tensor *attn_norm, *attn_norm_b, *attn_norm2, *attn_norm2_b;
    tport_tensor *wqkv, *bqkv, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo;
    tport_tensor *ffn_norm, *ffn_norm_b;
    tport_tensor *w_gate, *w_up, *b_up, *w_down, *b_down;
    /* Q/K norms (GGUF attn_q_norm, attn_k_norm: per head, or over the
     * whole projection, by the norm's length) and the
     * norms after attention and after the feed-forward (GGUF
     * post_attention_norm, post_ffw_norm) */
    tport_tensor *attn_q_norm, *attn_k_norm, *attn_post_norm, *ffn_post_norm;
    /* mixture of experts: the router [n_embd, n_expert], the stacks of the
     * experts' matrices [in, out, n_expert], a shared expert and its gate */
    tport_tensor *ffn_gate_inp, *ffn_gate_exps, *ffn_up_exps, *ffn_down_exps;
    tport_tensor *ffn_gate_inp_shexp, *ffn_gate_shexp, *ffn_up_shexp, *ffn_down_shexp;
    /* gpt-oss: attention sinks [n_head] (logits that join each head's
     * softmax denominator), the router's bias [n_expert] and the experts'
     * biases [out, n_expert] (added by expert id) */
    tport_tensor *attn_sinks, *ffn_gate_inp_b, *ffn_gate_exps_b, *ffn_up_exps_b, *ffn_down_exps_b;
    /* DeepSeek-V3's expert selection bias [n_expert] */
    tport_tensor *ffn_exp_probs_b;
    /* multi-head latent attention (deepseek2): Q through a low rank
     * (wq_a, its norm, wq_b) or wq; the latent KV and the rotated key part
     * (wkv_a_mqa, the latent's norm); the per-head absorbed K and V
     * projections [nope, kv_lora, n_head] and [kv_lora, v, n_head]; an
     * old file's unsplit [kv_lora, n_head * (nope + v)] they are cut from */
    tport_tensor *wq_a, *wq_b, *attn_q_a_norm, *wkv_a_mqa, *attn_kv_a_norm, *wk_b, *wv_b, *wkv_b;
} tport_layer;

/* Model-level weight slots. */
typedef struct tport_globals {
    tport_tensor *tok_embd, *pos_embd, *tok_norm, *tok_norm_b;
    tport_tensor *type_embd;     /* BERT's token types: row 0 is added   */
    tport_tensor *output_norm, *output_norm_b, *output, *output_b;
    /* RoPE frequency factors: Llama 3's rope_freqs; LongRoPE's long and
     * short factors (phi3), one of which the shape picks */
    tport_tensor *rope_freqs, *rope_long, *rope_short;
} tport_globals;

/* Hyperparameters after defaults were filled in and checked. */
typedef struct tport_model_shape {
    int32_t n_vocab, n_ctx, n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_rot;
    int32_t n_ctx_train;       /* context_length as the file gives it       */
    float norm_eps, rope_base, rope_scale;
    int rope_mode;             /* TPORT_ROPE_*, or -1: no rotary embedding */
    bool parallel_residual;    /* gptneox: x + attn(ln1 x) + ffn(ln2 x)     */
    float max_alibi_bias;      /* > 0: ALiBi slopes in the softmax          */
    float clamp_kqv;           /* > 0: the fused QKV clamped to [-c, c]     */
    /* Sliding-window attention: n_swa > 0 is the window of the local
     * layers (a query at p sees keys at p - n_swa < k <= p, llama.cpp's
     * LLAMA_SWA_TYPE_STANDARD); with swa_period 0 every layer is local,
     * else layer il is when il % swa_period < swa_period - 1.  Local
     * layers rotate with their own RoPE base and scale. */
    int32_t n_swa, swa_period;
    float rope_base_swa, rope_scale_swa;
    float attn_softcap;        /* > 0: scores = cap tanh(scores / cap)      */
    float logit_softcap;       /* > 0: logits = cap tanh(logits / cap)      */
    /* mixture of experts (0 experts: a dense feed-forward) */
    int32_t n_expert, n_expert_used;
    int32_t n_ff_exp;          /* expert_feed_forward_length (0: absent)    */
    int32_t n_ff_shexp;        /* expert_shared_feed_forward_length         */
    /* RoPE beyond base and linear scale, as llama.cpp computes its
     * parameters (TPORT_OP_ROPE_EXT): YaRN's ext_factor (1 for scaling
     * type yarn), the factor on cos and sin, the betas, the trained
     * context YaRN and LongRoPE refer to */
    float rope_ext_factor, rope_attn_factor, rope_beta_fast, rope_beta_slow;
    int32_t rope_n_ctx_orig;
    int32_t nope_every;        /* > 0: layers il with (il + 1) % n == 0
                                  have no RoPE (smollm3)                    */
    /* granite's multipliers (1 elsewhere): the embedding, each block's
     * output before it joins the residual, the logits (divided by) */
    float embd_scale, residual_scale, logit_scale;
    float attn_scale;          /* > 0: the attention's kq scale (granite)   */
    /* deepseek2: multi-head latent attention (its cache row is head_dim =
     * n_lora_kv + n_rot, one kv head), the head sizes K and V decompress
     * to, Q's low rank (0: none) */
    int32_t n_lora_q, n_lora_kv, head_dim_k_mla, head_dim_v_mla;
    bool mla_kv_b_unsplit; /* the file has attn_kv_b, not attn_k_b/attn_v_b */
    int32_t n_layer_dense_lead; /* leading layers with a dense feed-forward */
    int32_t n_expert_shared;    /* shared experts (width n_ff_exp each)     */
    /* routing beyond softmax-then-top-k: sigmoid gating, the weights
     * renormalised and scaled, experts chosen within the n_group_used best
     * of n_expert_groups groups (1: no groups) */
    bool expert_sigmoid, expert_weights_norm;
    float expert_weights_scale; /* 0 or 1: unscaled                         */
    int32_t n_expert_groups, n_group_used;
    float rope_yarn_log_mul;    /* deepseek2's mscale_all_dim (0: none)     */
    int32_t n_token_types;     /* tokenizer.ggml.token_type_count (BERT)    */
    bool non_causal;           /* attention.causal false: every position
                                  sees every other (one batch from 0)      */
    int32_t pooling;           /* <arch>.pooling_type (TPORT_POOLING_*), or
                                  -1 when the file has no such key          */
} tport_model_shape;

/* Whether V is read from the K cache (deepseek2's latent rows: V is their
 * first n_lora_kv values), so that a layer keeps no V cache. */
static inline bool tport_shape_v_in_k(const tport_model_shape *sh) {
    return sh->n_lora_kv > 0;
}

/* Whether layer il attends through the sliding window. */
static inline bool tport_shape_layer_swa(const tport_model_shape *sh, int32_t il) {
    return sh->n_swa > 0 && (sh->swa_period <= 0 || il % sh->swa_period < sh->swa_period - 1);
}

struct tport_model {
    tport_model_file *file;      /* owns the mapping the weights point into */
    const tport_arch *arch;
    tport_model_shape sh;
    tport_tokenizer *tok;        /* NULL when there is no vocabulary        */
    char *backend;               /* forced backend name or NULL             */
    int n_threads;
    tport_ctx *wctx;             /* weight tensor records (no data arena)   */
    tport_globals w;
    tport_layer *layers;         /* n_layer entries; only [layer_begin,
                                    layer_end) are bound (a pipeline stage) */
    int32_t layer_begin, layer_end;
    bool has_embedding, has_head;
    float *norm_f32;             /* 1-D weights (norms, biases) converted to
                                    f32, if the file stores another type   */
    size_t norm_used, norm_cap;  /* floats                                 */
    void **converted;            /* weights converted or copied at load    */
    int n_converted, cap_converted;
    char *placement_report;      /* the conversion lines logged at load,
                                    '\n'-separated; NULL if none          */
    tport_tensor **resident;     /* weights with a copy in a backend's memory */
    int n_resident, cap_resident;
    bool quick_start;            /* tport_model_params.quick_start           */
    struct tport_deferred *deferred; /* uploads still pending: NULL if none
                                    (weight_residency.c)                   */
    pthread_mutex_t lost_lock;   /* re-placement after a lost device        */
};

/* A weight and the backend that runs its consumer op (placement's answer). */
typedef struct tport_weight_home {
    tport_tensor *weight;
    const struct tport_active_backend *backend;
} tport_weight_home;
/* Uploads each weight once into its backend's memory where that backend
 * has memory of its own (or keeps weights in a layout of its own); see
 * weight_residency.c.  A refused upload leaves the weight in host memory. */
tport_status tport_model_upload_weights(tport_model *m, const tport_weight_home *homes, int n);
/* Before a batch of n tokens: waits for the uploads a host-memory backend
 * deferred (its copies of weights, in its own layout), unless this is a
 * quick-start model's first batch and a short one, which reads the file's
 * layout instead.  Thread-safe. */
tport_status tport_model_settle_uploads(const tport_model *m, int32_t n);
/* Uploads still deferred (not yet waited for). */
int tport_model_deferred_uploads(const tport_model *m);
/* Frees the backends' copies (only those of lost backends if lost_only);
 * the weights fall back to the file's bytes. */
void tport_model_release_weights(tport_model *m, bool lost_only);
/* Bytes of weights resident in the named backend's memory. */
uint64_t tport_model_resident_bytes(const tport_model *m, const char *backend);

/* Fills the shape from the file's hyperparameters and tensor shapes, with
 * the architecture's own keys; refuses anything inconsistent. */
tport_status tport_model_shape_from_file(const tport_model_file *mf, const tport_arch *arch,
                                         tport_model_shape *sh);
/* Creates weight records pointing into the file's data for every tensor of
 * the architecture's table, and checks every shape against m->sh. */
tport_status tport_model_bind_weights(tport_model *m);

/* What tport_model_layer_weights lists: the 2-D weights mul_mat consumes
 * and the 1-D ones (norms, biases), of the attention or the feed-forward
 * side of a layer (the architecture table's TENSOR_FFN). */
enum {
    TPORT_LAYER_ATTN_MATRICES = 1u << 0,
    TPORT_LAYER_FFN_MATRICES = 1u << 1,
    TPORT_LAYER_ATTN_VECTORS = 1u << 2,
    TPORT_LAYER_FFN_VECTORS = 1u << 3,
    TPORT_LAYER_ALL = 15u,
};
/* The slots of layer il's weights of those kinds, in the order of the
 * architecture's table (slots of absent optional tensors hold NULL); only
 * the table's rows, so a slot no row names is never listed.  Returns how
 * many were written to out (at most cap). */
int tport_model_layer_weights(tport_model *m, int32_t il, unsigned kinds, tport_tensor ***out, int cap);
/* The weight whose backend runs the layer's attention (attn_k or attn_qkv). */
const tport_tensor *tport_layer_attention_weight(const tport_layer *l);

/* Hands buf (from aligned_alloc or malloc) to the model, which frees it
 * with itself; on failure frees buf and records the error. */
tport_status tport_model_own(tport_model *m, void *buf);

/* Maps every 2-D weight onto the backend that will run its consumer op
 * (the forced one, or the first in preference order that takes it in the
 * file's type or a type it converts to) and converts what that backend
 * does not take, or everything to weight_type when given (NULL = keep).
 * Reports each conversion at warn level; see weight_placement.c. */
tport_status tport_model_place_weights(tport_model *m, const char *backend, const char *weight_type,
                                       const char *place);

/* Which backend ran how many nodes of each op in one evaluation. */
#define TPORT_TALLY_ROWS 48
typedef struct tport_node_tally {
    int32_t n_rows;
    struct {
        const char *backend; /* interned by the scheduler: lives forever */
        const char *op;      /* static string                           */
        int32_t count;
    } rows[TPORT_TALLY_ROWS];
    tport_sched_stats stats;     /* what the evaluation moved between memories */
} tport_node_tally;

/* One layer's KV cache: host memory (k, v) or a device's (k_res, v_res,
 * with k == v == NULL), on the device that runs the layer's attention;
 * elements of `type`, f16 (the default, as llama.cpp's) or f32. */
typedef struct tport_kv_layer {
    void *k, *v;
    tport_residency k_res, v_res;
    tport_type_id type;
    /* positions the cache holds: n_ctx, or for a sliding-window layer a
     * ring of the window plus one batch (position p in cell p % n_cells),
     * so that its memory does not grow with the context */
    int32_t n_cells;
} tport_kv_layer;

/* The inputs of weight products (weight_inputs.c, for
 * tport_session_watch_weights): rows copied where a product's input is not
 * plain rows (a view, an expert product's broadcast input). */
typedef struct tport_weight_stage {
    float *x;
    int32_t *mat;
    int64_t cap_x, cap_mat;
} tport_weight_stage;
/* Marks the f32 input of every weight product of g (and an expert
 * product's ids) a result of g, so that compute keeps them in host memory. */
tport_status tport_weight_inputs_mark(tport_graph *g);
/* After compute: fn for each weight product of g marked so, in node order. */
tport_status tport_weight_inputs_report(const tport_graph *g, tport_weight_stage *s, tport_weight_input_fn fn,
                                        void *user);
void tport_weight_stage_free(tport_weight_stage *s);

typedef struct tport_eval_cache tport_eval_cache;

/* One evaluation: n tokens at positions pos..pos+n-1 through layers
 * [layer_begin, layer_end), reading and extending those layers' caches
 * (per layer [head_dim, n_head_kv, n_cells]; a ring of n_cells < n_ctx
 * takes batches of at most n_cells - n_swa + 1 tokens); writes the last token's
 * n_vocab logits, or the hidden state when hidden_out is set. */
typedef struct tport_model_eval {
    const tport_model *m;
    const tport_kv_layer *kv;    /* n_layer caches                          */
    int32_t n_ctx;
    int32_t pos;
    const tport_token *ids;      /* NULL when hidden_in is given            */
    const float *hidden_in;      /* [n_embd, n] entering layer_begin        */
    int32_t n;
    int32_t layer_begin, layer_end; /* the layers to run                    */
    float *hidden_out;           /* NULL: final norm + logits; else the state
                                    leaving layer_end - 1 ([n_embd, n], or
                                    the last row with hidden_out_last)     */
    bool hidden_out_last;
    bool hidden_normed;          /* hidden_out after the final norm (what
                                    embeddings pool): needs the head       */
    int n_threads;
    const char *backend;
    float *logits;               /* n_vocab floats, or n x n_vocab with logits_all */
    bool logits_all;             /* every token's logits, not only the last's */
    tport_node_tally *tally;     /* filled after compute if not NULL        */
    tport_workspace *ws;         /* lends the graph's memory, or NULL       */
    tport_eval_cache *cache;     /* keeps the graph for the next call, or NULL */
    tport_weight_input_fn watch; /* the weight products' inputs, or NULL    */
    void *watch_user;
} tport_model_eval;
tport_status tport_model_eval_batch(const tport_model_eval *e);

/* One sequence of a multi-sequence evaluation: n tokens at positions
 * pos.. in its own caches; its last token's n_vocab logits go to logits.
 * kv_id names the caches' placement (it changes when they are placed
 * anew): a kept graph is run again only for the same ids. */
typedef struct tport_eval_seq {
    const tport_kv_layer *kv;    /* n_layer caches                          */
    uint64_t kv_id;
    int32_t pos, n;
    const tport_token *ids;
    float *logits;
} tport_eval_seq;
/* Several sequences of one model in one graph: the products over all
 * their rows at once, attention per sequence over its own cache.  e gives
 * the model, context, threads, backend, tally, workspace and cache; its
 * kv, pos, ids, n, logits and pipeline fields are unused (every layer, ids
 * in, logits out). */
tport_status tport_model_eval_seqs(const tport_model_eval *e, const tport_eval_seq *seqs, int32_t n_seqs);

/* Bytes of layer il's K and V caches in a session (0 for a layer it does
 * not hold): what a sliding-window layer's ring costs. */
size_t tport_session_layer_cache_bytes(const tport_session *s, int32_t il);

/* The last evaluation's graph, kept by a session: the next evaluation of
 * the same shape (the same n, n_kv rounded to 32, layers and inputs) only
 * refills the inputs and moves the cache stores to its position instead of
 * building, planning and freeing a graph again.  drop forgets the graph
 * (a KV cache that moved, a failure); free drops and frees. */
tport_eval_cache *tport_eval_cache_new(void);
void tport_eval_cache_drop(tport_eval_cache *c);
void tport_eval_cache_free(tport_eval_cache *c);
/* Evaluations that built a graph and that reused one, since new; the
 * session's (NULL: zeros). */
void tport_eval_cache_counts(const tport_eval_cache *c, int64_t *built, int64_t *reused);
void tport_session_graph_counts(const tport_session *s, int64_t *built, int64_t *reused);

#endif
