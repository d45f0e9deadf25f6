/*
 * tport/tport.h — the tensorport application API.
 *
 * Tensors and lazily recorded operations, graphs built from result tensors,
 * and their execution on the best available backends.  Backends themselves
 * are plug-ins; see tport/backend.h for that side.
 *
 * Conventions:
 * - Shapes follow ggml: ne[0] is the innermost dimension; nb[] are byte
 *   strides.  Up to 4 dimensions.
 * - Functions that can fail return a tport_status (0 = TPORT_STATUS_OK) or
 *   NULL; tport_last_error() then says why (per thread).
 * - Op constructors return NULL if an argument is NULL or shapes do not fit,
 *   so a chain of ops can be checked once at the end.
 */
#ifndef TPORT_TPORT_H
#define TPORT_TPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "backend.h" /* ids: types, ops, statuses */

#ifdef __cplusplus
extern "C" {
#endif
/* libtport exports exactly what its public headers declare (it is built
 * with hidden visibility; tests/tools/test_exports checks the list). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define TPORT_VERSION_MAJOR 0
#define TPORT_VERSION_MINOR 1
#define TPORT_VERSION_PATCH 0
#define TPORT_VERSION_STRING "0.1.0"

/* The optional parts this build of the library has, space-separated, each
 * "name(library version)", e.g. "safetensors(cJSON 1.7.15) pytorch(libzip
 * 1.7.3)"; "" if none.  Plug-in backends are listed by tport backends. */
const char *tport_build_features(void);

/* ---- errors -------------------------------------------------------------- */
const char *tport_last_error(void);              /* "" if none          */
const char *tport_status_name(tport_status s);
/* For code layered on the library (the tools, the MPI layer, plug-in
 * hosts), so that its failures read like the library's own: records the
 * printf-style message as this thread's tport_last_error() and returns
 * code; tport_clear_error() empties it. */
#if defined(__GNUC__)
tport_status tport_error(tport_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#else
tport_status tport_error(tport_status code, const char *fmt, ...);
#endif
void tport_clear_error(void);
/* "mul_mat", "rope", ... ; "unknown" for an id this build does not know. */
const char *tport_op_name(tport_op_id op);

/* ---- types --------------------------------------------------------------- */
/* NULL for an unknown id.  The traits are the same the plug-ins see. */
const tport_type_info *tport_type_get(tport_type_id type);
/* Looks a type up by name ("f32", "q4_0", "q4_0_qnt0"); -1 if unknown. */
int64_t tport_type_from_name(const char *name);
/* Bytes of a row of n elements (n a multiple of the block size). */
size_t tport_row_size(tport_type_id type, int64_t n);

/* ---- contexts and tensors ------------------------------------------------ */
typedef struct tport_ctx tport_ctx;
typedef struct tport_tensor tport_tensor;
typedef struct tport_graph tport_graph;

/* A context owns tensor records and, if data_bytes > 0, an arena from which
 * tport_new_tensor gives leaves their data.  With data_bytes == 0 leaves
 * have no data until tport_tensor_set_data. */
tport_ctx *tport_ctx_new(size_t data_bytes);
void tport_ctx_free(tport_ctx *ctx);

tport_tensor *tport_new_tensor(tport_ctx *ctx, tport_type_id type, int n_dims, const int64_t *ne);
tport_tensor *tport_new_tensor_1d(tport_ctx *ctx, tport_type_id type, int64_t ne0);
tport_tensor *tport_new_tensor_2d(tport_ctx *ctx, tport_type_id type, int64_t ne0, int64_t ne1);
tport_tensor *tport_new_tensor_3d(tport_ctx *ctx, tport_type_id type, int64_t ne0, int64_t ne1, int64_t ne2);
tport_tensor *tport_new_tensor_4d(tport_ctx *ctx, tport_type_id type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);

tport_type_id tport_tensor_type(const tport_tensor *t);
tport_op_id tport_tensor_op(const tport_tensor *t); /* TPORT_OP_NONE: a leaf */
int64_t tport_tensor_ne(const tport_tensor *t, int dim);
size_t tport_tensor_nb(const tport_tensor *t, int dim);
int64_t tport_tensor_nelements(const tport_tensor *t);
size_t tport_tensor_nbytes(const tport_tensor *t);
bool tport_tensor_is_contiguous(const tport_tensor *t);
void *tport_tensor_data(const tport_tensor *t);  /* NULL until computed/set */
void tport_tensor_set_data(tport_tensor *t, void *data); /* leaves only  */
tport_tensor *tport_tensor_set_name(tport_tensor *t, const char *name);
const char *tport_tensor_name(const tport_tensor *t);
/* Marks a leaf as a constant weight (backends may cache it). */
void tport_tensor_set_weight(tport_tensor *t);

/* ---- ops (recorded, not computed) ---------------------------------------- */
tport_tensor *tport_get_rows(tport_ctx *ctx, tport_tensor *a, tport_tensor *ids);
tport_tensor *tport_add(tport_ctx *ctx, tport_tensor *a, tport_tensor *b);
tport_tensor *tport_mul(tport_ctx *ctx, tport_tensor *a, tport_tensor *b);
tport_tensor *tport_scale(tport_ctx *ctx, tport_tensor *a, float s);
tport_tensor *tport_mul_mat(tport_ctx *ctx, tport_tensor *a, tport_tensor *b);
tport_tensor *tport_rms_norm(tport_ctx *ctx, tport_tensor *a, float eps);
tport_tensor *tport_norm(tport_ctx *ctx, tport_tensor *a, float eps);
tport_tensor *tport_rope(tport_ctx *ctx, tport_tensor *a, tport_tensor *pos,
                         int n_dims, int mode, float freq_base, float freq_scale);
tport_tensor *tport_soft_max(tport_ctx *ctx, tport_tensor *a, tport_tensor *mask, float scale);
/* Fused attention, TPORT_OP_FLASH_ATTN in backend.h: q [hd, n_head, n] f32,
 * k and v [hd, n_kv, n_head_kv] f32 or f16 (v not transposed; strided views
 * of a cache are read in place), mask NULL or f32 [n_kv, >= n]; the result
 * is f32 [hd, n_head, n]. */
tport_tensor *tport_flash_attn(tport_ctx *ctx, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                               tport_tensor *mask, float scale);
/* RoPE with frequency factors and YaRN (TPORT_OP_ROPE_EXT, ABI 1.3): ff
 * NULL or f32 [>= n_dims/2]; p as backend.h describes it. */
tport_tensor *tport_rope_ext(tport_ctx *ctx, tport_tensor *a, tport_tensor *pos, tport_tensor *ff,
                             const tport_params_rope_ext *p);
/* tport_flash_attn plus soft-capping (softcap > 0) and attention sinks
 * (NULL or f32 [n_head]): TPORT_OP_FLASH_ATTN_EXT, ABI 1.3. */
tport_tensor *tport_flash_attn_ext(tport_ctx *ctx, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                                   tport_tensor *mask, tport_tensor *sinks, float scale, float softcap);
tport_tensor *tport_silu(tport_ctx *ctx, tport_tensor *a);
tport_tensor *tport_gelu(tport_ctx *ctx, tport_tensor *a);
tport_tensor *tport_swiglu(tport_ctx *ctx, tport_tensor *a, tport_tensor *b);
/* The GELU llama.cpp's CPU backend computes (through f16, see backend.h
 * TPORT_OP_GELU_F16), the erf GELU, tanh, clamp to [min, max]. */
tport_tensor *tport_gelu_f16(tport_ctx *ctx, tport_tensor *a);
tport_tensor *tport_gelu_erf(tport_ctx *ctx, tport_tensor *a);
tport_tensor *tport_tanh(tport_ctx *ctx, tport_tensor *a);
tport_tensor *tport_clamp(tport_ctx *ctx, tport_tensor *a, float min, float max);
/* soft_max with ALiBi: per head h (dim 2 of a) the mask is multiplied by
 * the head's slope from max_bias, as ggml's soft_max_ext does. */
tport_tensor *tport_soft_max_ext(tport_ctx *ctx, tport_tensor *a, tport_tensor *mask, float scale,
                                 float max_bias);
/* Mixture of experts (backend.h, ABI 1.3): the expert-indexed product of
 * the stack as [K, N, E] with b [K, 1 or n_used, T] for ids [n_used, T]
 * (i32) gives [N, n_used, T]; the ids of the k largest values of each row
 * (descending, ties by index) as i32 [k, ...]; sigmoid; the sum of each
 * row [1, ...]; a / b broadcast as tport_mul; a [n, n_used, T] plus
 * bias row ids[i, t] of bias [n, E]. */
tport_tensor *tport_mul_mat_id(tport_ctx *ctx, tport_tensor *as, tport_tensor *b, tport_tensor *ids);
tport_tensor *tport_argsort_top_k(tport_ctx *ctx, tport_tensor *a, int k);
tport_tensor *tport_sigmoid(tport_ctx *ctx, tport_tensor *a);
tport_tensor *tport_sum_rows(tport_ctx *ctx, tport_tensor *a);
tport_tensor *tport_div(tport_ctx *ctx, tport_tensor *a, tport_tensor *b);
tport_tensor *tport_add_id(tport_ctx *ctx, tport_tensor *a, tport_tensor *bias, tport_tensor *ids);
/* gpt-oss's clamped SwiGLU of gate and up (same shape, f32):
 * min(gate, limit) sigmoid(alpha min(gate, limit)) (clamp(up, +-limit) + 1)
 * (TPORT_OP_SWIGLU_OAI). */
tport_tensor *tport_swiglu_oai(tport_ctx *ctx, tport_tensor *gate, tport_tensor *up, float alpha, float limit);
/* Grouped routing (TPORT_OP_EXPERT_GROUPS, ABI 1.4): a's values outside
 * the n_group_used best of n_group groups (by the sum of each group's two
 * largest) become -inf. */
tport_tensor *tport_expert_groups(tport_ctx *ctx, tport_tensor *a, int n_group, int n_group_used);
/* Copies a into b's memory (converting type; same element count, shapes
 * may differ); returns the node to compute, a view of b.  Add it to the
 * graph before the nodes that read b. */
tport_tensor *tport_cpy(tport_ctx *ctx, tport_tensor *a, tport_tensor *b);
tport_tensor *tport_cont(tport_ctx *ctx, tport_tensor *a);
tport_tensor *tport_concat(tport_ctx *ctx, tport_tensor *a, tport_tensor *b, int dim);
/* Views cost nothing: they share a's data.  tport_view takes n_dims sizes
 * and n_dims byte strides starting with nb[0] (NULL = contiguous; strides of
 * dimensions past n_dims follow contiguously); offset is in bytes from a's
 * first element, and the view must lie inside a.  tport_reshape needs a
 * contiguous input.  tport_permute moves source dimension i to position
 * ax_i (ggml's convention); tport_transpose swaps dimensions 0 and 1. */
tport_tensor *tport_view(tport_ctx *ctx, tport_tensor *a, int n_dims, const int64_t *ne,
                         const size_t *nb, size_t offset);
tport_tensor *tport_reshape(tport_ctx *ctx, tport_tensor *a, int n_dims, const int64_t *ne);
tport_tensor *tport_permute(tport_ctx *ctx, tport_tensor *a, int ax0, int ax1, int ax2, int ax3);
tport_tensor *tport_transpose(tport_ctx *ctx, tport_tensor *a);

/* ---- graphs ------------------------------------------------------------- */
/* Builds the graph of everything `out` depends on, in topological order.
 * More results can be added; each becomes an output kept after compute. */
tport_graph *tport_graph_new(tport_ctx *ctx);
tport_status tport_graph_add(tport_graph *g, tport_tensor *out);
int tport_graph_n_nodes(const tport_graph *g);

typedef struct tport_compute_params {
    int n_threads;          /* 0 = number of cores                        */
    const char *backend;    /* force one backend by name, or NULL = best  */
} tport_compute_params;

/* What one compute moved between host memory and backends' own memory
 * (ABI 1.1 devices): staged copies at split boundaries, inputs, results. */
typedef struct tport_sched_stats {
    int32_t n_splits;    /* runs of consecutive nodes on one backend      */
    int32_t n_uploads;   /* staged copies into a device's memory          */
    int32_t n_downloads; /* staged copies out of a device's memory        */
    uint64_t bytes_up, bytes_down;
} tport_sched_stats;
/* The figures of the last tport_graph_compute of g (zeros before). */
tport_sched_stats tport_graph_stats(const tport_graph *g);

/* Plans memory for intermediates (reusing dead buffers), assigns every node
 * to a backend and runs it.  Outputs stay valid until the graph is freed or
 * computed again. */
tport_status tport_graph_compute(tport_graph *g, const tport_compute_params *params);
/* Bytes the memory planner needs for intermediates (after planning). */
size_t tport_graph_peak_bytes(const tport_graph *g);
/* A workspace: memory for graph intermediates that outlives graphs.  A
 * graph given one plans into it (growing it when too small) instead of
 * allocating its own, so a program that builds a graph per token reuses
 * the same pages.  It serves one graph at a time: computing another graph
 * with it overwrites the results of the first.  Set it before the graph's
 * first compute; it must outlive the graph. */
typedef struct tport_workspace tport_workspace;
tport_workspace *tport_workspace_new(void);
void tport_workspace_free(tport_workspace *ws);
tport_status tport_graph_set_workspace(tport_graph *g, tport_workspace *ws);
/* Name of the backend that ran node i in the last compute, or NULL. */
const char *tport_graph_node_backend(const tport_graph *g, int i);
tport_tensor *tport_graph_node(const tport_graph *g, int i);
void tport_graph_free(tport_graph *g);

/* ---- backends ------------------------------------------------------------ */
/* Loads a plug-in file now (in addition to TPORT_BACKEND_PATH discovery). */
tport_status tport_backend_load(const char *path);
/* Runs plug-ins named `name` ("all": every plug-in file) out of process,
 * in the helper tport-backend-host: a crash or hang there costs that
 * device, not the program (TPORT_BACKEND_ISOLATE=name,... does the same).
 * Call before the first use of the backends; takes effect at discovery. */
tport_status tport_backend_isolate(const char *name);
int tport_backend_count(void);            /* active backends          */
const char *tport_backend_name(int i);    /* in preference order      */

/* ---- quantization -------------------------------------------------------- */
/* Reference quantize/dequantize of n elements (a multiple of the type's block size). rule = NULL for the default rule, else a name from tport_quant_rule_name(). */
tport_status tport_quantize(tport_type_id type, const char *rule, const float *src, void *dst, int64_t n);
tport_status tport_dequantize(tport_type_id type, const void *src, float *dst, int64_t n);
/* What ggml_quantize_chunk (so llama-quantize) writes for nrows rows of
 * n_per_row elements: weights NULL, or n_per_row importance weights (one
 * per column, an imatrix entry) shared by the rows.  Types that ggml
 * quantizes only with weights (IQ2_XXS, IQ2_XS, IQ1_S) need them; a type
 * whose weighted quantizer tport lacks is refused (UNSUPPORTED) when
 * weights are given, never quantized without them. */
tport_status tport_quantize_rows(tport_type_id type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                                 const float *weights);
int tport_quant_rule_count(tport_type_id type);
const char *tport_quant_rule_name(tport_type_id type, int i);   /* NULL if out of range */
const char *tport_quant_rule_about(tport_type_id type, int i);  /* period, commit */
/* What converting `from` to `to` costs: the same bytes; a re-encoding
 * that keeps every decoded value bit for bit; dequantize and requantize;
 * or not possible (an unknown type, a target with no quantizer). */
typedef enum tport_conv_kind {
    TPORT_CONV_IDENTITY = 0,
    TPORT_CONV_LOSSLESS = 1,
    TPORT_CONV_LOSSY = 2,
    TPORT_CONV_IMPOSSIBLE = 3,
} tport_conv_kind;
/* The kind, the elements converted and the error of the decoded result
 * against the decoded source (0 for lossless conversions). */
typedef struct tport_conversion {
    tport_conv_kind kind;
    int64_t n;
    double rmse;
    double max_abs_err;
} tport_conversion;
tport_conv_kind tport_conversion_kind(tport_type_id from, tport_type_id to);
const char *tport_conv_kind_name(tport_conv_kind kind); /* "identity", "lossless", ... */
/* n elements, a multiple of both block sizes; report may be NULL. */
tport_status tport_convert_data(tport_type_id from, const void *src, tport_type_id to, void *dst, int64_t n,
                                tport_conversion *report);
/* A whole tensor of nrows rows of ne0 elements, and the one way to convert
 * from a removed row-grouped type (rows of such a type are not whole on
 * their own: it is re-encoded losslessly to its base type first). */
tport_status tport_convert_rows(tport_type_id from, const void *src, tport_type_id to, void *dst, int64_t ne0,
                                int64_t nrows, tport_conversion *report);

/* ---- models and sessions ------------------------------------------------- */
typedef struct tport_model tport_model;
typedef struct tport_session tport_session;
typedef int32_t tport_token;

typedef struct tport_model_params {
    const char *backend;     /* force a backend by name, NULL = best        */
    int n_threads;           /* 0 = number of cores                         */
    const char *tokenizer_path; /* llama2.c tokenizer.bin for files without
                                   a vocabulary (llama2.c checkpoints)     */
    const char *weight_type; /* convert every 2-D weight to this type at
                                load ("f32", "q8_0", ...); NULL = keep the
                                file's types where the backend takes them */
    /* One stage of a pipeline (src/dist): bind, place and convert only
     * layers [layer_begin, layer_end) (0, 0 = every layer); no_embedding
     * leaves out token_embd (unless a tied classifier needs it), no_head the
     * final norm and output.  Parts of the mapped file that are left out
     * are never read. */
    int32_t layer_begin, layer_end;
    bool no_embedding, no_head;
    /* Time to the first token first: a backend that keeps copies of the
     * weights (the CPU: in huge pages, Q4_0/Q8_0/Q4_K interleaved) may
     * make them after the first batch instead of at load, and a first
     * batch of at most TPORT_QUICK_START_TOKENS tokens then reads the file.
     * Later batches (and a longer first one) wait for the copies (once).
     * For one-shot runs; a server or a benchmark leaves it off and makes
     * the copies at load. */
    bool quick_start;
    /* Placement overrides, as llama.cpp's -ot: "PATTERN=BACKEND[,...]", a
     * weight whose name matches the POSIX extended regular expression
     * PATTERN (the first that does) lives where BACKEND runs its consumer
     * ("exps=cpu": every expert stack on the CPU); NULL = none.  A backend
     * that does not take the weight is an error naming both. */
    const char *place;
} tport_model_params;
#define TPORT_QUICK_START_TOKENS 32

/* Weight placement at load: each matrix goes to the first backend in
 * preference order (or the forced one) that runs its consumer (mul_mat,
 * get_rows) in the file's type or in a type it converts to.  Unsupported
 * types are converted (lossless re-encodings first, else the lossy type
 * with the most bits) and every conversion is reported on stderr at warn
 * level: "N tensors FROM -> TO (lossless|lossy: rmse, max error) for
 * backend NAME".  Weights kept in the file's type stay zero-copy. */

/* Loads a model from any readable file: llama, or another architecture
 * this build runs (tport_arch_supported). */
tport_model *tport_model_load(const char *path, const tport_model_params *params);
/* Does now what a quick_start load left for later (the next batch would do
 * it): lets a caller time it apart.  Without quick_start, or done, a no-op. */
tport_status tport_model_finish_load(tport_model *m);
void tport_model_free(tport_model *m);
/* The model's architecture as GGUF names it ("llama", "gpt2", ...). */
const char *tport_model_arch(const tport_model *m);
/* Whether this build can run a model of that architecture name. */
bool tport_arch_supported(const char *arch);
/* The name of the i-th architecture this build runs (from 0; NULL past
 * the last), in the order of its table. */
const char *tport_arch_name_at(int i);
int32_t tport_model_n_vocab(const tport_model *m);
int32_t tport_model_n_ctx(const tport_model *m);
int32_t tport_model_n_embd(const tport_model *m);
int32_t tport_model_n_layer(const tport_model *m);  /* in the file, loaded or not */
tport_token tport_model_bos(const tport_model *m);   /* -1 if none */
tport_token tport_model_eos(const tport_model *m);   /* -1 if none */

/* Tokenizes text (SentencePiece, byte-level BPE or llama2.c vocabulary);
 * add_bos is llama.cpp's add_special (BOS/EOS as the file says), special
 * token text is plain text.  Writes at most cap ids; returns the number of
 * ids the text needs (which may be larger than cap), or -1 on error (no
 * vocabulary). */
int32_t tport_tokenize(const tport_model *m, const char *text, bool add_bos,
                       tport_token *ids, int32_t cap);
/* The text of one token (byte tokens decode to their byte); `prev` is the
 * token before it (-1 at the start), for the leading-space rule.  Returns
 * the number of bytes written to buf (at most cap). */
int32_t tport_token_to_text(const tport_model *m, tport_token prev, tport_token id,
                            char *buf, int32_t cap);

/* ---- tokenizers on their own -------------------------------------------- */
/* A model file's vocabulary without its weights: any file tensorport
 * reads, including llama.cpp's vocabulary-only GGUF files.  SentencePiece
 * ("llama") and byte-level BPE ("gpt2": merges plus the pre-tokenizer that
 * tokenizer.ggml.pre names) tokenize as llama.cpp's llama_tokenize. */
typedef struct tport_tokenizer tport_tokenizer;
tport_tokenizer *tport_tokenizer_load(const char *path);
void tport_tokenizer_free(tport_tokenizer *tk);
/* The model's tokenizer (owned by the model), or NULL if it has none. */
const tport_tokenizer *tport_model_tokenizer(const tport_model *m);
int32_t tport_tokenizer_n_tokens(const tport_tokenizer *tk);
/* add_special: BOS/EOS as the file's add_bos_token/add_eos_token (or the
 * tokenizer type's default) say; parse_special: the text of control
 * tokens (<|im_start|>, <s>, ...) becomes those tokens, otherwise it is
 * plain text (user-defined tokens are matched either way).  Writes at most
 * cap ids; returns how many the text needs, or -1 on error. */
int32_t tport_tokenizer_tokenize(const tport_tokenizer *tk, const char *text, size_t len,
                                 bool add_special, bool parse_special, tport_token *ids, int32_t cap);
/* The text of one token as generation prints it (control tokens print
 * nothing; `prev` is the token before, -1 at the start).  Returns the
 * number of bytes the piece has; writes at most cap of them. */
int32_t tport_tokenizer_piece(const tport_tokenizer *tk, tport_token prev, tport_token id,
                              char *buf, int32_t cap);

/* A string metadata value of the model file ("tokenizer.chat_template",
 * "general.name"), or NULL if absent or not a string; lives as long as m. */
const char *tport_model_meta_str(const tport_model *m, const char *key);
/* The id of the token whose text is exactly len bytes of text (special
 * tokens such as "<|im_end|>" included), or -1 if there is none. */
tport_token tport_token_lookup(const tport_model *m, const char *text, size_t len);
/* The vocabulary's text of token id as stored (special tokens such as
 * "<s>" or "<|im_end|>" as written, what a chat template's bos_token and
 * eos_token are), or NULL if id is out of range or the model has no
 * vocabulary; *len (if not NULL) gets its length.  Lives as long as m. */
const char *tport_token_text(const tport_model *m, tport_token id, size_t *len);
/* The text of n tokens, as tport_token_to_text gives them one after the
 * other (the first without a previous token).  Writes at most cap bytes, no
 * NUL; returns the number of bytes the text needs, or -1 on error (no
 * vocabulary, an id outside it). */
int32_t tport_detokenize(const tport_model *m, const tport_token *ids, int32_t n, char *buf, int32_t cap);
/* Bytes the weights take in memory, and the KV cache of a session with
 * n_ctx positions (0 = the model's context). */
size_t tport_model_weight_bytes(const tport_model *m);
size_t tport_model_kv_bytes(const tport_model *m, int32_t n_ctx);

/* Threads: sessions of one model may run in different threads at once (one
 * thread per session; the model, its tokenizer and weights are read-only
 * after load).  Their evaluations are serialised inside tport_graph_compute
 * by one process-wide lock, because the backend ABI promises each backend
 * a single calling thread; sampling and tokenizing run in parallel.  To
 * evaluate several sessions' tokens in one step instead, see tport_batch
 * below. */
typedef struct tport_session_params {
    int32_t n_ctx;           /* 0 = the model's context length             */
    int32_t n_batch;         /* prompt tokens per evaluation, 0 = 64       */
    int n_threads;           /* 0 = the model's setting                    */
    bool kv_f32;             /* KV cache in f32; default f16, as llama.cpp */
} tport_session_params;

tport_session *tport_session_new(tport_model *m, const tport_session_params *params);
void tport_session_free(tport_session *s);
/* Evaluates n tokens at the next positions (prompts in batches of n_batch,
 * then one at a time); logits of the last token become available. */
tport_status tport_session_eval(tport_session *s, const tport_token *ids, int32_t n);
const float *tport_session_logits(const tport_session *s); /* n_vocab floats */
/* Like tport_session_eval, and writes every token's logits to `logits`
 * (n x n_vocab floats, token-major): what perplexity and scoring need. */
tport_status tport_session_eval_all(tport_session *s, const tport_token *ids, int32_t n, float *logits);

/* A pipeline stage's evaluation: the model's loaded layers run on n
 * tokens at the next positions, starting from token ids (through the
 * embedding) or from hidden_in, the n_embd floats per token that leave the
 * previous stage's last layer.  With hidden_out the state leaving the last
 * loaded layer is written there (every token's row, or only the last one);
 * without it the final norm and output run and the last token's logits
 * become available.  head_only runs no layer and does not advance the
 * position: hidden_in goes straight through the final norm and output
 * (the head of a pipeline whose last stage runs elsewhere). */
typedef struct tport_stage_io {
    const tport_token *ids;    /* n ids, or NULL when hidden_in is given  */
    const float *hidden_in;    /* n x n_embd floats, token-major          */
    int32_t n;
    float *hidden_out;         /* NULL: logits; else n (or 1) x n_embd    */
    bool out_last_only;
    bool head_only;
    bool normed;               /* hidden_out after the final norm (the
                                  last stage only): what embeddings pool  */
} tport_stage_io;
tport_status tport_session_eval_stage(tport_session *s, const tport_stage_io *io);
int32_t tport_session_pos(const tport_session *s);
void tport_session_reset(tport_session *s);
/* What the last evaluation moved between host and device memory (*last),
 * the sum since the session began or was reset (*total), and how many
 * evaluations that was; any pointer may be NULL. */
tport_status tport_session_stats(const tport_session *s, tport_sched_stats *last, tport_sched_stats *total,
                                 int32_t *n_evals);
/* The plan in words, one line per backend (its layers, resident weight
 * bytes, the nodes it ran in the last evaluation) and one for the copies
 * the last evaluation staged; the length written, -1 on error. */
int32_t tport_session_plan(const tport_session *s, const tport_model *m, char *buf, size_t cap);
/* Backend whose memory holds layer i's weights, NULL for host memory. */
const char *tport_model_layer_backend(const tport_model *m, int32_t layer);
/* Bytes of weights resident in the named backend's own memory or layout. */
uint64_t tport_model_resident_bytes(const tport_model *m, const char *backend);
/* What ran where in the last evaluation, grouped by backend and op: row i
 * gives the backend and op names and returns its node count; 0 past the
 * last row. */
int32_t tport_session_placement(const tport_session *s, int32_t i, const char **backend, const char **op);

/* ---- the inputs of weight products (importance matrices) ---------------- */
/* What one matrix product with a weight of the model read in an
 * evaluation: n_rows rows of n_cols f32 activations, row r at
 * x + r * n_cols.  A weight of several matrices (n_mat > 1: an expert
 * stack, or a batched 3-D weight) says in mat[r] which matrix row r went
 * through (0 <= mat[r] < n_mat; mat is NULL when n_mat is 1).  routed:
 * the product is an expert-indexed one (mul_mat_id), whose rows are one
 * per token and chosen expert; otherwise every matrix saw every token's
 * row.  What llama-imatrix collects, from the same products. */
typedef struct tport_weight_input {
    const char *weight;     /* its name in the file: "blk.0.attn_q.weight" */
    int64_t n_cols, n_rows;
    const float *x;
    int32_t n_mat;
    const int32_t *mat;
    bool routed;
} tport_weight_input;
/* Called once per weight product of an evaluation, in graph order, after
 * the step computed and before the evaluation returns; the data is valid
 * during the call only.  A status other than OK fails the evaluation. */
typedef tport_status (*tport_weight_input_fn)(void *user, const tport_weight_input *in);
/* While fn is set (NULL turns it off), every evaluation of s through
 * tport_session_eval, _eval_all and _eval_stage keeps the f32 inputs of
 * its products with weights (the graph marks them results, so whichever
 * backend runs a product hands them back to host memory) and gives them
 * to fn.  Products whose input is not f32 are not reported (none of the
 * built-in architectures has one); a step evaluated again after a lost
 * device is not reported twice. */
tport_status tport_session_watch_weights(tport_session *s, tport_weight_input_fn fn, void *user);

/* ---- batches of sessions (continuous batching) ---------------------------- */
/* One evaluation for tokens of several sessions of the same model: the
 * matrix products run over the rows of all of them together (the weights
 * are read once per step, not once per session), while each session's
 * tokens take their own positions, go to its own KV cache and attend over
 * it alone.  Afterwards each session is as if tport_session_eval had
 * evaluated its tokens: its position moved on, its last token's logits in
 * tport_session_logits.  With quantized weights (q8_0, q4_k, ...) those
 * logits are bit for bit the ones the session gets alone; dense f32/f16
 * weights go through CPU kernels that sum one row and several rows in
 * different orders, so there they may differ in the last bits
 * (tests/model/test_batch_eval.c asserts both, and equal greedy ids).
 *
 * A batch keeps the graph of its last step (and the memory it ran in) for
 * the next one of the same shape: the same sessions in the same order,
 * each with as many tokens.  Items: distinct sessions of the batch's model,
 * each with 1..n_batch tokens (its session's n_batch) that fit its context,
 * every session with the same n_ctx; a pipeline stage cannot batch.  While
 * the call runs, no other thread may use the batch or those sessions.  On
 * a lost device each session finishes alone (tport_session_eval, which
 * re-places its work); on any other failure no session moves on.  After
 * a failure, an item's session has logits (tport_session_logits) if and
 * only if it moved on. */
typedef struct tport_batch tport_batch;
typedef struct tport_batch_item {
    tport_session *session;
    const tport_token *ids;
    int32_t n;
} tport_batch_item;
tport_batch *tport_batch_new(tport_model *m);
void tport_batch_free(tport_batch *b);
tport_status tport_batch_eval(tport_batch *b, const tport_batch_item *items, int32_t n_items);

/* ---- long conversations: truncation and context shift -------------------- */
/* The session's context (positions its cache holds), and the tokens it
 * has evaluated: tport_session_pos() of them, valid until the next call
 * that changes the session. */
int32_t tport_session_n_ctx(const tport_session *s);
const tport_token *tport_session_tokens(const tport_session *s);
/* Forgets every position from n on (0 <= n <= pos), keeping the cache of
 * the first n tokens (a prompt cache: a new prompt that starts with them
 * evaluates only the rest); the next evaluation continues at n, and the
 * logits are unavailable until then.  A model with sliding-window layers
 * refuses to go back further than their rings still hold. */
tport_status tport_session_truncate(tport_session *s, int32_t n);
/* The prompt cache in one call, before evaluating a prompt of n tokens:
 * keeps the longest common prefix of the tokens s holds and prompt, less
 * the prompt's last token when the prefix is the whole prompt (it is
 * evaluated again, for its logits), and truncates s there; where a model's
 * sliding-window rings no longer hold what that prefix needs, s starts over
 * (tport_session_reset).  Returns the tokens kept, k: the caller evaluates
 * prompt + k, n - k tokens (n = 0: s is emptied).  -1 on a bad argument. */
int32_t tport_session_reuse_prefix(tport_session *s, const tport_token *prompt, int32_t n);
/* Context shift (llama.cpp's): drops the n_discard positions after the
 * first n_keep and moves the later ones down by n_discard, re-rotating
 * their cached keys (RoPE) by -n_discard instead of evaluating them again.
 * Afterwards the cache holds what a fresh evaluation of the kept tokens
 * would give, up to rounding (an f16 cache rounds the moved keys once
 * more; tests/model/test_context_shift.c measures the difference in the
 * logits).  The logits are unavailable until the next evaluation.  Models
 * whose positions are not rotary (learned position embeddings, ALiBi)
 * return TPORT_STATUS_UNSUPPORTED; so does a pipeline stage. */
tport_status tport_session_shift(tport_session *s, int32_t n_keep, int32_t n_discard);
/* Whether tport_session_shift works for the model's architecture. */
bool tport_model_can_shift(const tport_model *m);

/* ---- embeddings ------------------------------------------------------------ */
/* How a sequence's per-token states become one embedding (the values of
 * GGUF's <arch>.pooling_type, llama.cpp's enum llama_pooling_type). */
typedef enum tport_pooling {
    TPORT_POOLING_NONE = 0, /* one embedding per token: not pooled        */
    TPORT_POOLING_MEAN = 1,
    TPORT_POOLING_CLS = 2,  /* the first token's                          */
    TPORT_POOLING_LAST = 3, /* the last token's                           */
    TPORT_POOLING_RANK = 4, /* a reranker's classification head           */
} tport_pooling;
/* The pooling the file declares; a decoder file without the key (made
 * for generation) pools its last token, which for a causal model is the
 * only state that has seen the whole sequence (llama-server's
 * --pooling last); an encoder (bert) without it: none, as llama.cpp. */
tport_pooling tport_model_pooling(const tport_model *m);
/* Whether the model gives logits (generation); false for an encoder
 * (bert), which gives only embeddings. */
bool tport_model_generates(const tport_model *m);
/* The pooled embedding of ids (n >= 1): the session is reset and ids
 * evaluated from position 0 (its earlier tokens are gone afterwards);
 * the final hidden state after the output norm (before the output head),
 * pooled as tport_model_pooling says, then divided by its Euclidean norm
 * when normalize (llama-server's default, embd_normalize 2).  An encoder
 * (bert: non-causal attention) sees ids as one batch.  Writes
 * tport_model_n_embd floats to out (cap floats of room); refuses pooling
 * none and rank, and a model loaded without its head. */
tport_status tport_session_embed(tport_session *s, const tport_token *ids, int32_t n, bool normalize, float *out,
                                 int32_t cap);
/* out = in divided by a norm, as llama-server's embd_normalize (llama.cpp's
 * common_embd_normalize): -1 none, 0 scaled so that the largest magnitude
 * is 32760 (an int16 range), 1 taxicab (sum of magnitudes), 2 Euclidean
 * (tport_session_embed's normalize), p > 2 the p-norm.  A zero vector
 * stays zero; in and out may be the same array. */
void tport_embd_normalize(const float *in, float *out, int32_t n, int32_t norm);

/* ---- sessions on disk ---------------------------------------------------- */
/* The model's identity: a 64-bit hash of its file's metadata and tensor
 * table (names, types, shapes), the same for every load of the same file. */
uint64_t tport_model_identity(const tport_model *m);
/* Writes the session's tokens and their KV cache to path (the format is in
 * src/model/session_file.h: versioned, the model's identity, a checksum),
 * replacing the file atomically. */
tport_status tport_session_save(const tport_session *s, const char *path);
/* Reads a file tport_session_save wrote into s: afterwards s holds its
 * tokens (tport_session_tokens) and their cache, at position n; the logits
 * are unavailable until the next evaluation (a caller that wants the last
 * token's logits truncates by one and evaluates it again).  Refuses, with
 * s unchanged, a file of another model (TPORT_STATUS_INVALID_ARGUMENT,
 * naming both), of another format version, or with more tokens than s's
 * context; a truncated or corrupted file is TPORT_STATUS_BAD_FORMAT. */
tport_status tport_session_load(tport_session *s, const char *path);

typedef struct tport_sampler_params {
    float temperature;       /* 0 = greedy                                  */
    int32_t top_k;           /* 0 = off                                     */
    float top_p;             /* 1 = off                                     */
    float min_p;             /* 0 = off                                     */
    float repeat_penalty;    /* 1 = off                                     */
    int32_t repeat_last_n;   /* tokens the penalties look back over         */
    uint64_t seed;
    /* OpenAI's penalties, as llama.cpp applies them: an id seen c > 0 times
     * in the last repeat_last_n tokens loses c * frequency_penalty +
     * presence_penalty from its logit (after the repetition penalty).
     * 0 = off; any finite value. */
    float frequency_penalty;
    float presence_penalty;
} tport_sampler_params;
typedef struct tport_sampler tport_sampler;
tport_sampler_params tport_sampler_defaults(void);
tport_sampler *tport_sampler_new(const tport_sampler_params *p);
void tport_sampler_free(tport_sampler *sm);
/* Picks the next token from logits (n_vocab values), after the penalties
 * of tport_sampler_apply_penalties; -1 on error. */
tport_token tport_sampler_sample(tport_sampler *sm, const float *logits, int32_t n_vocab);
/* Adds id to the history the penalties look at (the last repeat_last_n
 * ids): the prompt's tokens (as llama-server does) and each chosen one. */
void tport_sampler_accept(tport_sampler *sm, tport_token id);
/* Applies the repetition, frequency and presence penalties to logits in
 * place, exactly as tport_sampler_sample does before it picks (and as
 * llama.cpp's llama_sampler_init_penalties does). */
tport_status tport_sampler_apply_penalties(tport_sampler *sm, float *logits, int32_t n_vocab);


/* Logit biases, as OpenAI's logit_bias: each listed id gets bias added to
 * its logit before the penalties (llama.cpp's order); -INFINITY bans the
 * id.  Replaces any earlier list; n = 0 clears it.  Ids outside the
 * logits given to sample are ignored. */
typedef struct tport_logit_bias {
    tport_token id;
    float bias;
} tport_logit_bias;
tport_status tport_sampler_set_logit_bias(tport_sampler *sm, const tport_logit_bias *biases, int32_t n);

/* ---- grammars (constrained sampling) ------------------------------------ */
/* A grammar in GBNF, llama.cpp's notation (rules "name ::= ...", string
 * literals, [character sets], [^negated], ., groups, * + ? {m} {m,} {m,n},
 * # comments).  The text is treated as untrusted: any error (syntax, an
 * undefined rule, left recursion, a count or size limit) returns NULL
 * with tport_last_error() naming it.  root: the start rule (NULL = "root"). */
typedef struct tport_grammar tport_grammar;
tport_grammar *tport_grammar_parse(const char *text, size_t len, const char *root);
void tport_grammar_free(tport_grammar *g);

/* Where one generation stands in a grammar.  Use: before each sample,
 * tport_grammar_apply masks the logits (tokens that cannot continue the
 * text get -INFINITY; the end ids, e.g. EOS and an end-of-turn token,
 * stay only where the grammar may end); after each chosen token
 * tport_grammar_accept moves on.  The text matched is each token's
 * tport_tokenizer_piece, UTF-8 that may split a character across tokens.
 * The grammar and tokenizer must outlive the state.  A greedy caller may
 * first sample without the mask and call apply only when
 * tport_grammar_allows refuses the pick: the same token results, cheaper. */
typedef struct tport_grammar_state tport_grammar_state;
tport_grammar_state *tport_grammar_state_new(const tport_grammar *g, const tport_tokenizer *tk);
void tport_grammar_state_free(tport_grammar_state *st);
/* TPORT_STATUS_INVALID_ARGUMENT when no token is left (a grammar that
 * cannot go on and may not end, or one that needs a character no token
 * gives). */
tport_status tport_grammar_apply(tport_grammar_state *st, float *logits, int32_t n_vocab, const tport_token *end_ids,
                                 int32_t n_end);
bool tport_grammar_allows(tport_grammar_state *st, tport_token id);
tport_status tport_grammar_accept(tport_grammar_state *st, tport_token id);
bool tport_grammar_can_end(const tport_grammar_state *st);  /* complete text */
bool tport_grammar_must_end(const tport_grammar_state *st); /* and no more  */

/* ---- chat templates (Jinja) ---------------------------------------------- */
/* A model's own chat template (its tokenizer.chat_template) rendered as
 * Hugging Face transformers renders it: jinja2 with trim_blocks,
 * lstrip_blocks and the loop-controls extension ({% break %},
 * {% continue %}), inside the immutable sandbox (list.append and other
 * mutating methods fail), plus transformers' globals raise_exception(msg)
 * and strftime_now(fmt), its tojson(ensure_ascii=False, indent=None,
 * separators=None, sort_keys=False) filter (json.dumps, not jinja2's
 * HTML-safe one) and {% generation %} blocks, which render their text.
 *
 * The context is a JSON object; each key becomes a template variable:
 * "messages" (a list of {"role", "content", "tool_calls", ...}), "tools",
 * "add_generation_prompt", "bos_token", "eos_token" and whatever else the
 * template reads (e.g. "enable_thinking").  A variable that is absent is
 * jinja2's Undefined, so pass "tools": null only where Python would.  The
 * engine reads the JSON itself (no optional library is needed) and keeps
 * the key order, which tojson and loops over dicts show.
 *
 * Templates come from model files, so rendering is bounded: by output size,
 * memory, evaluation steps and nesting depth (the limits below; 0 picks the
 * default).  Any failure -- a syntax error, raise_exception(), a limit, an
 * undefined value used where jinja2 fails -- returns NULL and
 * tport_last_error() gives the message with the template line. */
typedef struct tport_template_limits {
    size_t max_output;       /* bytes of output; default 16 MiB            */
    size_t max_memory;       /* bytes for the whole render; default 256 MiB */
    uint64_t max_steps;      /* evaluation steps; default 50 million       */
    int32_t max_depth;       /* nesting of syntax, macros, values; 500     */
    int64_t now;             /* strftime_now's time, Unix seconds (local
                                time is used, as Python's datetime.now());
                                0 = the current time                       */
} tport_template_limits;

/* Renders template (len bytes) with the JSON context (NUL-terminated; NULL
 * for none).  Returns the output, NUL-terminated, to free() with free();
 * *out_len (if not NULL) gets its length, as the output may hold NULs. */
char *tport_template_render(const char *tmpl, size_t len, const char *context_json,
                            const tport_template_limits *limits, size_t *out_len);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* TPORT_TPORT_H */
