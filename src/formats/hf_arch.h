/* The table that maps a Hugging Face config.json onto tensorport's
 * architectures (hf_arch.c): one hf_arch row per Hugging Face model class,
 * kept in one file per group of families (hf_arch_classic.c,
 * hf_arch_dense.c, hf_arch_moe.c, hf_arch_encoder.c), over the shared
 * pieces of hf_arch_keys.c.  A new family is its rows, its keys function
 * and its name tables in one of those files, plus nothing elsewhere. */
#ifndef TPORT_FORMATS_HF_ARCH_H
#define TPORT_FORMATS_HF_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/mf_internal.h"

#ifdef TPORT_HAVE_CJSON

struct cJSON;

enum {
    HF_TRANSPOSE = 1u << 0, /* a Conv1D weight ([in, out]): stored transposed */
    HF_DROP = 1u << 1,      /* a buffer the converter leaves out               */
    HF_QKV_GROUPS = 1u << 2,/* fused QKV rows in kv groups [q.. k v] per group (GPT-NeoX,
                               BLOOM: one group per head; Falcon) -> [Q|K|V] */
    HF_EXPERT = 1u << 3,    /* one expert's matrix ("experts.%d." in the name): stacked
                               into GGUF's [in, out, n_expert] (a copy at load) */
    HF_KV_B = 1u << 5,      /* MLA's kv_b_proj [n_head (nope + v), kv_lora]: split into
                               attn_k_b [n_head, kv_lora, nope] (transposed) and attn_v_b
                               [n_head, v, kv_lora], as the converter does (copies) */
    HF_EXPERTS_T = 1u << 6, /* gpt-oss's [n_expert, in, out] experts: each transposed */
    HF_INTERLEAVED = 1u << 7, /* gpt-oss's gate_up: gate and up alternate (rows of a
                               weight, values of a bias): split into gate and up */
    HF_MXFP4_BLOCKS = 1u << 8, /* gpt-oss's MXFP4 experts, U8 codes: joined with their */
    HF_MXFP4_SCALES = 1u << 9, /* U8 exponents into one MXFP4 tensor (hf_mxfp4.c)  */
    HF_SPLIT_GATE_UP = 1u << 4, /* JetMoE's fused experts [n_expert, 2 ff, in]: the first ff
                               rows of each expert are the gate ("ffn_gate_exps"), the
                               rest the up projection ("ffn_up_exps"; a copy at load) */
};

typedef struct hf_name {
    const char *hf, *gguf;  /* layer names: after the layer prefix, "blk.%d." + gguf */
    unsigned flags;
} hf_name;

typedef struct hf_ctx {
    tport_model_file *mf;
    const mf_cursor *c;
    const struct cJSON *cfg;
    const char *arch;
} hf_ctx;

typedef struct hf_arch {
    const char *gguf;                /* the architecture (general.architecture)   */
    const char *const *classes;      /* config.json "architectures" entries        */
    const char *model_type;          /* config.json "model_type" without them      */
    const char *const *layer_prefixes; /* printf patterns with one %d              */
    const hf_name *globals, *layer;
    bool permute_qk;                 /* Llama: HF's rotate-half q/k rows          */
    bool norm_plus_one;              /* Gemma: weights stored as w + 1            */
    bool tied_output_copy;           /* GPT-2, BLOOM: output.weight written from
                                        the embedding when the file has none     */
    tport_status (*keys)(hf_ctx *h);
    const hf_name *renamed;          /* layer names the reader's llama renaming
                                        (tensor_names.c) gave that mean another
                                        tensor here (NULL: none)                 */
} hf_arch;

/* The rows, in the order find_arch tries them (a config without
 * "architectures" takes the first row of its model_type). */
extern const hf_arch hf_archs_classic[], hf_archs_dense[], hf_archs_moe[], hf_archs_encoder[];
extern const size_t hf_archs_classic_count, hf_archs_dense_count, hf_archs_moe_count, hf_archs_encoder_count;

/* ---- shared by the rows (hf_arch_keys.c) ---- */
bool hf_ends_with(const char *s, const char *suffix);
bool hf_cfg_u32(const struct cJSON *cfg, const char *key, uint32_t *out);
bool hf_cfg_f32(const struct cJSON *cfg, const char *key, float *out);
/* "<arch>.<suffix>" = config[key] (the first present of `|`-separated
 * keys); a required key that is absent is an error naming it. */
tport_status hf_key_u32(hf_ctx *h, const char *suffix, const char *keys, bool required, uint32_t *out);
/* "<arch>.<suffix>" = config[key], or dflt when absent and `always`. */
tport_status hf_key_f32(hf_ctx *h, const char *suffix, const char *key, float dflt, bool always);
tport_status hf_add_u32(hf_ctx *h, const char *suffix, uint32_t v);
tport_status hf_common_keys(hf_ctx *h, uint32_t *n_embd, uint32_t *n_head);
tport_status hf_rope_keys(hf_ctx *h);
/* the base keys that later families extend */
tport_status hf_llama_keys(hf_ctx *h);
tport_status hf_qwen2_keys(hf_ctx *h);
tport_status hf_qwen3_keys(hf_ctx *h);   /* hf_arch_dense.c */
tport_status hf_granite_keys(hf_ctx *h); /* hf_arch_dense.c */
extern const char *const HF_LLAMA_LAYERS[];
extern const hf_name HF_LLAMA_GLOBALS[], HF_LLAMA_LAYER[], HF_POST_NORM_RENAMED[];

#endif /* TPORT_HAVE_CJSON */
#endif
