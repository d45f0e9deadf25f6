/* Synthetic model files: a GGUF v3 file of any architecture this build
 * runs, with random weights, for benchmarks and cross-checks with
 * llama.cpp (which loads it too).  The tensors and keys come from the
 * architecture's table: exactly the tensors llama.cpp's loader creates
 * (optional ones marked not to be synthesized are left out unless `with`
 * names them).
 *
 * Weights are uniform in [-a, a] with a = sqrt(3 / fan_in) (standard
 * deviation 1/sqrt(fan_in)), so activations stay of order one through any
 * depth (out_gain scales the ones that write the residual stream); norms
 * are exactly 1 (norm_noise: near 1); biases uniform in [-0.5, 0.5].  The
 * random floats depend only on the seed and the tensor name, not on the
 * type, so an F32 and a Q4_0 file of the same seed hold the same model up
 * to quantization.  2-D and 3-D weights are quantized with the reference
 * quantizer of `type`; a tensor whose row length does not fit the type's
 * block falls back the way llama.cpp's quantizer does. */
#ifndef TPORT_SYNTH_H
#define TPORT_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "tport/tport.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define TPORT_SYNTH_MAX_WITH 4
#define TPORT_SYNTH_MAX_F32_KEYS 4
#define TPORT_SYNTH_MAX_KEYS 12
#define TPORT_SYNTH_MAX_TENSOR_TYPES 64

typedef struct tport_synth_params {
    const char *arch;            /* architecture name (tport_arch_name_at)   */
    const char *shape_name;      /* written into general.name                */
    uint32_t dim, layers, heads, kv_heads, ff, vocab, ctx;
    uint32_t head_size, rot;     /* 0: dim / heads; 0: the head size         */
    bool parallel_residual;      /* gptneox: x + attn(ln1 x) + ffn(ln2 x)    */
    float alibi_bias, clamp_kqv; /* mpt: ALiBi max bias, QKV clamp (0: none) */
    uint32_t window;             /* attention.sliding_window, 0: none        */
    /* RoPE base (0: 10000), the local layers' own (0: not written), linear
     * scaling factor (0: none); soft-caps (0: the architecture's default) */
    float rope_base, rope_base_swa, rope_linear, attn_softcap, logit_softcap;
    float out_gain;              /* scale of the weights writing the residual */
    float norm_noise;            /* norm weights uniform in [1 - n, 1 + n]    */
    /* mixture of experts (0 experts: dense); expert widths 0: llama.cpp's
     * defaults (ff / experts_used for an expert, ff for the shared one) */
    uint32_t experts, experts_used, expert_ff, shared_ff;
    /* optional tensors of the table to write too, without "blk.%d." */
    const char *with[TPORT_SYNTH_MAX_WITH];
    int n_with;
    /* rope.scaling.* keys: type (NULL: none), factor, original context,
     * attention factor (0: not written) */
    const char *rope_scaling;
    float rope_factor, rope_attn_factor;
    uint32_t rope_orig_ctx;
    /* "<arch>.<suffix>" keys written as f32 */
    const char *f32_key_suffix[TPORT_SYNTH_MAX_F32_KEYS];
    float f32_key_value[TPORT_SYNTH_MAX_F32_KEYS];
    int n_f32_keys;
    /* an architecture's own keys "<arch>.<suffix>" (deepseek2:
     * attention.kv_lora_rank, expert_gating_func, ...): the architecture
     * says which it knows and writes them with their consequences */
    const char *key_suffix[TPORT_SYNTH_MAX_KEYS];
    double key_value[TPORT_SYNTH_MAX_KEYS];
    int n_keys;
    /* <arch>.pooling_type as a name: "none", "mean", "cls", "last" or
     * "rank" (tport_pooling's values); NULL: no key */
    const char *pooling;
    tport_type_id type;          /* of the 2-D and 3-D weights               */
    /* with experts_type_set, the experts' stacks take experts_type and the
     * router (ffn_gate_inp) stays f32, as llama-quantize's MoE mixes do */
    bool experts_type_set;
    tport_type_id experts_type;
    /* single 2-D tensors (full names: blk.1.ffn_down.weight) of a type of
     * their own, whose block must divide their rows: a llama-quantize mix
     * such as Q4_K_M, recorded tensor by tensor */
    const char *tensor_type_name[TPORT_SYNTH_MAX_TENSOR_TYPES];
    tport_type_id tensor_type[TPORT_SYNTH_MAX_TENSOR_TYPES];
    int n_tensor_types;
    uint64_t seed;
    /* copy tokenizer.* from this GGUF file (its size replaces vocab), else
     * a generated SentencePiece vocabulary of `vocab` tokens (>= 259) */
    const char *vocab_from;
    /* called while the weights are written (may be NULL) */
    void (*progress)(void *user, uint64_t done, uint64_t total);
    void *progress_user;
} tport_synth_params;

/* What was written. */
typedef struct tport_synth_report {
    uint32_t vocab;              /* the vocabulary size in the file          */
    int n_tensors, n_weights;    /* all tensors; those quantized to `type`
                                    or its fallbacks                        */
    int n_fallback_block;        /* weights with rows the type's block does
                                    not divide, written as fallback_type    */
    tport_type_id fallback_type;
    int n_fallback_f16;          /* weights that fit no block: f16           */
    uint64_t weight_bytes;       /* the tensor data written                  */
} tport_synth_report;

/* llama, a tiny shape (dim 256, 2 layers, 4 heads, ff 512, vocab 512,
 * ctx 256), F32, seed 1, parallel residual, ALiBi bias 8, gains 1. */
tport_synth_params tport_synth_params_default(void);
/* Checks p (TPORT_STATUS_INVALID_ARGUMENT naming what is wrong), writes
 * the file and fills *report (may be NULL). */
tport_status tport_synth_write(const tport_synth_params *p, const char *path, tport_synth_report *report);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* TPORT_SYNTH_H */
