/* Private to src/model: the loaded llama model and its session. */
#ifndef TPORT_MODEL_MODEL_H
#define TPORT_MODEL_MODEL_H

#include "formats/model_file.h"
#include "model/tokenizer.h"
#include "tport/tport.h"

typedef struct tport_llama_layer {
    tport_tensor *attn_norm, *wq, *wk, *wv, *wo;
    tport_tensor *ffn_norm, *w_gate, *w_up, *w_down;
} tport_llama_layer;

/* Hyperparameters after defaults were filled in and checked. */
typedef struct tport_llama_shape {
    int32_t n_vocab, n_ctx, n_embd, n_ff, n_layer, n_head, n_head_kv, head_dim, n_rot;
    float norm_eps, rope_base, rope_scale;
    int rope_mode;
} tport_llama_shape;

struct tport_model {
    tport_model_file *file;      /* owns the mapping the weights point into */
    tport_llama_shape sh;
    tport_tokenizer *tok;        /* NULL when there is no vocabulary        */
    char *backend;               /* forced backend name or NULL             */
    int n_threads;
    tport_ctx *wctx;             /* weight tensor records (no data arena)   */
    tport_tensor *tok_embd, *output_norm, *output;
    tport_llama_layer *layers;
    float *norm_f32;             /* norm weights converted to f32, if the
                                    file stores them in another type      */
    size_t norm_used, norm_cap;  /* floats                                 */
    void **converted;            /* weights converted or copied at load    */
    int n_converted, cap_converted;
    char *placement_report;      /* the conversion lines logged at load,
                                    '\n'-separated; NULL if none          */
};

/* Fills the shape from the file's hyperparameters and tensor shapes;
 * refuses anything inconsistent. */
tport_status tport_llama_shape_from_file(const tport_model_file *mf, tport_llama_shape *sh);
/* Creates weight records pointing into the file's data and checks every
 * shape against sh. */
tport_status tport_llama_bind_weights(tport_model *m);

/* Hands buf (from aligned_alloc or malloc) to the model, which frees it
 * with itself; on failure frees buf and records the error. */
tport_status tport_model_own(tport_model *m, void *buf);

/* Maps every 2-D weight onto the backend that will run its consumer op
 * (the forced one, or the first in preference order that takes it in the
 * file's type or a type it converts to) and converts what that backend
 * does not take, or everything to weight_type when given (NULL = keep).
 * Reports each conversion at warn level; see weight_placement.c. */
tport_status tport_llama_place_weights(tport_model *m, const char *backend, const char *weight_type);

/* One evaluation: n tokens at positions pos..pos+n-1, reading and
 * extending the caches (per layer [head_dim, n_head_kv, n_ctx] f32);
 * writes the last token's n_vocab logits. */
/* Which backend ran how many nodes of each op in one evaluation. */
#define TPORT_TALLY_ROWS 48
typedef struct tport_node_tally {
    int32_t n_rows;
    struct {
        const char *backend; /* interned by the scheduler: lives forever */
        const char *op;      /* static string                           */
        int32_t count;
    } rows[TPORT_TALLY_ROWS];
} tport_node_tally;

typedef struct tport_llama_eval {
    const tport_model *m;
    void **k_cache, **v_cache;   /* n_layer buffers each, of kv_type        */
    tport_type_id kv_type;       /* TPORT_TYPE_F16 or TPORT_TYPE_F32        */
    int32_t n_ctx;
    int32_t pos;
    const tport_token *ids;
    int32_t n;
    int n_threads;
    const char *backend;
    float *logits;
    tport_node_tally *tally;     /* filled after compute if not NULL        */
} tport_llama_eval;
tport_status tport_llama_eval_batch(const tport_llama_eval *e);

#endif
