/* What in a file changes the computation, and which architectures
 * implement it.  A file whose keys or tensors ask for math this build does
 * not do is refused with one line naming them, rather than run with the
 * part left out (Llama 3.1's rope_freqs.weight, YaRN, soft-capping, experts
 * ...).  Keys outside "ARCH." (general.*, tokenizer.*, split.*, ...) and
 * tensors the table calls harmless are ignored.
 *
 * Keys: every "ARCH.*" key must have a row; one without is refused too,
 * since a key a converter writes is there because some graph reads it.
 * Tensors: a tensor the architecture's own table (src/model/arch/NAME.c)
 * does not name is looked up here; a tensor here that changes the math is
 * refused, one that does not is ignored, and one in neither table is
 * ignored with the loader's note (weights.c), as it always was. */
#include <stdio.h>
#include <string.h>

#include "model/arch/arch.h"
#include "model/arch/arch_math.h"

/* When a present key changes what the graph must compute. */
typedef enum math_when {
    WHEN_NEVER,     /* implemented (read by the loader) or no effect      */
    WHEN_PRESENT,   /* any value                                          */
    WHEN_NONZERO,   /* a number other than 0 (or true)                    */
    WHEN_NOT_ONE,   /* a number other than 1                              */
    WHEN_FALSE,     /* a boolean false (attention.causal)                 */
    WHEN_NOT_IN,    /* a string outside `values`                          */
} math_when;

typedef struct math_row {
    const char *name;   /* key after "ARCH.", or tensor name ("%d" a layer) */
    math_when when;
    /* architectures whose graph implements it, "a|b", where that is not
     * said by the architecture itself: a key is implemented by the
     * architectures that list it in their math_keys (arch.h), a tensor by
     * those whose table names it */
    const char *archs;
    const char *values; /* WHEN_NOT_IN: the implemented values, "a|b"     */
    const char *what;   /* the math it changes, for the message           */
} math_row;

static const math_row keys[] = {
    {"context_length", WHEN_NEVER, NULL, NULL, "trained context"},
    {"embedding_length", WHEN_NEVER, NULL, NULL, "width"},
    {"block_count", WHEN_NEVER, NULL, NULL, "layers"},
    {"feed_forward_length", WHEN_NEVER, NULL, NULL, "feed-forward width"},
    {"vocab_size", WHEN_NEVER, NULL, NULL, "vocabulary size"},
    {"attention.head_count", WHEN_NEVER, NULL, NULL, "heads"},
    {"attention.head_count_kv", WHEN_NEVER, NULL, NULL, "kv heads"},
    {"attention.key_length", WHEN_NEVER, NULL, NULL, "head size"},
    {"attention.value_length", WHEN_NEVER, NULL, NULL, "head size"},
    {"attention.layer_norm_rms_epsilon", WHEN_NEVER, NULL, NULL, "norm epsilon"},
    {"attention.layer_norm_epsilon", WHEN_NEVER, NULL, NULL, "norm epsilon"},
    {"rope.dimension_count", WHEN_NEVER, NULL, NULL, "rotary dimensions"},
    {"rope.freq_base", WHEN_NEVER, NULL, NULL, "RoPE base"},
    {"rope.scale_linear", WHEN_NEVER, NULL, NULL, "linear RoPE scaling"},
    {"rope.scaling.factor", WHEN_NEVER, NULL, NULL, "linear RoPE scaling"},
    /* YaRN's and LongRoPE's trained context (weights.c) */
    {"rope.scaling.original_context_length", WHEN_NEVER, NULL, NULL, "RoPE scaling's trained context"},
    {"rope.scaling.finetuned", WHEN_NEVER, NULL, NULL, "a note"},
    /* read by llama.cpp's deepseek2 only (yarn's mscale_all_dims) */
    {"rope.scaling.yarn_log_multiplier", WHEN_NONZERO, NULL, NULL, "YaRN's log multiplier"},
    /* llama.cpp reads no key for these (mistral3 reads the betas): its
     * defaults (ext 1 for yarn, betas 32 and 1) apply whatever a file
     * says, and so do ours */
    {"rope.scaling.yarn_ext_factor", WHEN_NEVER, NULL, NULL, "YaRN (llama.cpp ignores the key)"},
    {"rope.scaling.yarn_attn_factor", WHEN_NEVER, NULL, NULL, "YaRN (llama.cpp ignores the key)"},
    {"rope.scaling.yarn_beta_fast", WHEN_NEVER, NULL, NULL, "YaRN (llama.cpp ignores the key)"},
    {"rope.scaling.yarn_beta_slow", WHEN_NEVER, NULL, NULL, "YaRN (llama.cpp ignores the key)"},
    /* none, linear, yarn: weights.c, blocks.c (ROPE_EXT); longrope: phi3 */
    {"rope.scaling.type", WHEN_NOT_IN, "phi3", "none|linear|yarn", "RoPE scaling"},
    {"rope.scaling.attn_factor", WHEN_NEVER, NULL, NULL, "cos and sin scaled (ROPE_EXT)"},
    {"rope.scaling.alpha", WHEN_NOT_ONE, NULL, NULL, "NTK-aware RoPE scaling"},
    {"rope.freq_base_swa", WHEN_PRESENT, NULL, NULL, "a RoPE base of the sliding-window layers"},
    {"rope.dimension_count_swa", WHEN_PRESENT, NULL, NULL, "rotary dimensions of the sliding-window layers"},
    {"rope.dimension_sections", WHEN_PRESENT, NULL, NULL, "multimodal RoPE sections"},
    /* every layer windowed, unless the architecture says which (a ring
     * of the window per local layer: session.c, test_sliding_window) */
    {"attention.sliding_window", WHEN_NEVER, NULL, NULL, "sliding-window attention"},
    {"attention.sliding_window_pattern", WHEN_PRESENT, NULL, NULL, "sliding-window layers mixed with full ones"},
    {"attention.causal", WHEN_FALSE, NULL, NULL, "non-causal attention"},
    {"attention.scale", WHEN_NONZERO, NULL, NULL, "an attention scale of its own"},
    {"attention.clamp_kqv", WHEN_NONZERO, NULL, NULL, "Q/K/V clamping"},
    {"attention.max_alibi_bias", WHEN_NONZERO, NULL, NULL, "ALiBi"},
    {"use_parallel_residual", WHEN_NEVER, "gptneox", NULL, "the residual form"},
    {"attn_logit_softcapping", WHEN_NONZERO, NULL, NULL, "attention soft-capping"},
    {"final_logit_softcapping", WHEN_NONZERO, NULL, NULL, "logit soft-capping"},
    {"router_logit_softcapping", WHEN_NONZERO, NULL, NULL, "router soft-capping"},
    {"logit_scale", WHEN_NOT_ONE, NULL, NULL, "scaled logits"},
    {"embedding_scale", WHEN_NOT_ONE, NULL, NULL, "a scaled embedding"},
    {"residual_scale", WHEN_NOT_ONE, NULL, NULL, "a scaled residual"},
    {"expert_count", WHEN_NONZERO, NULL, NULL, "mixture of experts"},
    {"expert_used_count", WHEN_NONZERO, NULL, NULL, "mixture of experts"},
    {"expert_shared_count", WHEN_NONZERO, NULL, NULL, "shared experts"},
    {"expert_feed_forward_length", WHEN_NONZERO, NULL, NULL, "mixture of experts"},
    {"expert_shared_feed_forward_length", WHEN_NONZERO, NULL, NULL, "a shared expert"},
    {"leading_dense_block_count", WHEN_NONZERO, NULL, NULL, "mixture of experts"},
    {"attention.q_lora_rank", WHEN_NONZERO, NULL, NULL, "low-rank attention (MLA)"},
    {"attention.kv_lora_rank", WHEN_NONZERO, NULL, NULL, "low-rank attention (MLA)"},
    {"attention.key_length_mla", WHEN_PRESENT, NULL, NULL, "multi-head latent attention"},
    {"attention.value_length_mla", WHEN_PRESENT, NULL, NULL, "multi-head latent attention"},
    {"expert_weights_scale", WHEN_NONZERO, NULL, NULL, "scaled expert weights"},
    {"expert_weights_norm", WHEN_NONZERO, NULL, NULL, "renormalised expert weights"},
    {"expert_gating_func", WHEN_NONZERO, NULL, NULL, "the experts' gating function"},
    {"expert_group_count", WHEN_NONZERO, NULL, NULL, "grouped expert routing"},
    {"expert_group_used_count", WHEN_NONZERO, NULL, NULL, "grouped expert routing"},
    {"pooling_type", WHEN_NEVER, NULL, NULL, "pooling of embeddings (not generation)"},
    {"tensor_data_layout", WHEN_NEVER, NULL, NULL, "a note of the converter"},
};

static const math_row tensors[] = {
    /* implemented where the architecture's table names it (llama) */
    {"rope_freqs.weight", WHEN_PRESENT, NULL, NULL, "RoPE frequency factors, Llama 3's scaling"},
    /* implemented where the architecture's table names them (qwen3, olmo2) */
    {"blk.%d.attn_q_norm.weight", WHEN_PRESENT, NULL, NULL, "Q norm"},
    {"blk.%d.attn_k_norm.weight", WHEN_PRESENT, NULL, NULL, "K norm"},
    {"blk.%d.attn_sinks.weight", WHEN_PRESENT, NULL, NULL, "attention sinks"},
    {"blk.%d.attn_post_norm.weight", WHEN_PRESENT, NULL, NULL, "a norm after attention"},
    {"blk.%d.post_attention_norm.weight", WHEN_PRESENT, NULL, NULL, "a norm after attention"},
    {"blk.%d.post_ffw_norm.weight", WHEN_PRESENT, NULL, NULL, "a norm after the feed-forward"},
    {"blk.%d.ffn_gate_inp.weight", WHEN_PRESENT, NULL, NULL, "mixture of experts"},
    {"blk.%d.ffn_gate_exps.weight", WHEN_PRESENT, NULL, NULL, "mixture of experts"},
    {"blk.%d.ffn_up_exps.weight", WHEN_PRESENT, NULL, NULL, "mixture of experts"},
    {"blk.%d.ffn_down_exps.weight", WHEN_PRESENT, NULL, NULL, "mixture of experts"},
    {"blk.%d.ffn_gate_shexp.weight", WHEN_PRESENT, NULL, NULL, "shared experts"},
    {"blk.%d.ffn_up_shexp.weight", WHEN_PRESENT, NULL, NULL, "shared experts"},
    {"blk.%d.ffn_down_shexp.weight", WHEN_PRESENT, NULL, NULL, "shared experts"},
    {"blk.%d.exp_probs_b.bias", WHEN_PRESENT, NULL, NULL, "an expert selection bias"},
    {"blk.%d.attn_kv_b.weight", WHEN_PRESENT, NULL, NULL, "MLA's unsplit kv_b (re-convert: attn_k_b/attn_v_b)"},
    /* old conversions kept the rotary inverse frequencies, which are the
     * ones RoPE computes */
    {"blk.%d.attn_rot_embd", WHEN_NEVER, NULL, NULL, "RoPE's own frequencies"},
};

/* "a|b" holds s */
static bool in_list(const char *list, const char *s) {
    size_t n = strlen(s);
    for (const char *p = list; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, s, n))
            return true;
        p = bar ? bar + 1 : NULL;
    }
    return false;
}

/* name matches pattern, where "%d" stands for one or more digits */
static bool matches(const char *pattern, const char *name) {
    while (*pattern) {
        if (pattern[0] == '%' && pattern[1] == 'd') {
            if (*name < '0' || *name > '9')
                return false;
            while (*name >= '0' && *name <= '9')
                name++;
            pattern += 2;
        } else if (*pattern++ != *name++) {
            return false;
        }
    }
    return *name == '\0';
}

static bool number_of(const tport_kv *kv, double *out) {
    switch (kv->type) {
    case TPORT_KV_U8: case TPORT_KV_U16: case TPORT_KV_U32: case TPORT_KV_U64:
        *out = (double)kv->v.u;
        return true;
    case TPORT_KV_I8: case TPORT_KV_I16: case TPORT_KV_I32: case TPORT_KV_I64:
        *out = (double)kv->v.i;
        return true;
    case TPORT_KV_F32: case TPORT_KV_F64:
        *out = kv->v.f;
        return true;
    case TPORT_KV_BOOL:
        *out = kv->v.b ? 1.0 : 0.0;
        return true;
    default:
        return false;
    }
}

/* Whether a key of this row, with this value, asks for math `arch` lacks.
 * A value of an unexpected type is taken as asking for it. */
static bool key_refused(const math_row *r, const tport_kv *kv, const tport_arch *arch) {
    if (r->when == WHEN_NEVER || (r->archs && in_list(r->archs, arch->name)) || in_list(arch->math_keys, r->name))
        return false;
    double x;
    switch (r->when) {
    case WHEN_NONZERO:
        return !number_of(kv, &x) || x != 0.0;
    case WHEN_NOT_ONE:
        return !number_of(kv, &x) || x != 1.0;
    case WHEN_FALSE:
        return kv->type != TPORT_KV_BOOL || !kv->v.b;
    case WHEN_NOT_IN:
        return kv->type != TPORT_KV_STRING || !in_list(r->values, kv->v.s);
    default:
        return true;
    }
}

/* Whether the architecture's own table names this tensor. */
static bool arch_has_tensor(const tport_arch *arch, const char *name) {
    for (int k = 0; k < arch->n_tensors; k++)
        if (matches(arch->tensors[k].name, name))
            return true;
    return false;
}

/* Adds "item" to the list in why, "; " between items; a list that does
 * not fit ends in "...". */
static void append(char *why, size_t cap, size_t *len, int *n, const char *item) {
    (*n)++;
    if (cap < 4 || *len >= cap - 1)
        return;
    int k = snprintf(why + *len, cap - *len, "%s%s", *n > 1 ? "; " : "", item);
    if (k < 0 || (size_t)k >= cap - *len) {
        memcpy(why + cap - 4, "...", 4);
        *len = cap - 1;
    } else {
        *len += (size_t)k;
    }
}

bool tport_arch_refusal(const tport_model_file *mf, const tport_arch *arch, char *why, size_t cap) {
    if (cap)
        why[0] = '\0';
    if (!mf || !arch || mf->container != TPORT_CONTAINER_GGUF)
        return false; /* older containers have no such keys or tensors */
    size_t len = 0, plen = strlen(mf->arch);
    int n = 0;
    char item[256];
    for (int i = 0; i < mf->n_kv; i++) {
        const tport_kv *kv = &mf->kv[i];
        if (!plen || strncmp(kv->key, mf->arch, plen) || kv->key[plen] != '.')
            continue;
        const char *suffix = kv->key + plen + 1;
        const math_row *row = NULL;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !row; k++)
            if (!strcmp(keys[k].name, suffix))
                row = &keys[k];
        if (!row) {
            snprintf(item, sizeof item, "%s (a key this build does not know)", kv->key);
            append(why, cap, &len, &n, item);
        } else if (key_refused(row, kv, arch)) {
            if (kv->type == TPORT_KV_STRING)
                snprintf(item, sizeof item, "%s = %.64s (%s)", kv->key, kv->v.s, row->what);
            else
                snprintf(item, sizeof item, "%s (%s)", kv->key, row->what);
            append(why, cap, &len, &n, item);
        }
    }
    /* a tensor whose type id this build does not know: its bytes mean
     * nothing to it (the first such tensor, and how many there are) */
    int n_unknown = 0;
    const tport_mf_tensor *unknown = NULL;
    for (int i = 0; i < mf->n_tensors; i++)
        if (mf->tensors[i].unknown_type && !n_unknown++)
            unknown = &mf->tensors[i];
    if (unknown) {
        snprintf(item, sizeof item, "tensor %s of type id %u, a type this build does not know%s", unknown->name,
                 unknown->unknown_type, n_unknown > 1 ? " (and more)" : "");
        append(why, cap, &len, &n, item);
    }
    /* one item per row: a per-layer tensor is named by its pattern */
    for (size_t k = 0; k < sizeof tensors / sizeof tensors[0]; k++) {
        const math_row *r = &tensors[k];
        if (r->when == WHEN_NEVER || (r->archs && in_list(r->archs, arch->name)))
            continue;
        const char *first = NULL;
        int count = 0;
        for (int i = 0; i < mf->n_tensors; i++)
            if (matches(r->name, mf->tensors[i].name) && !arch_has_tensor(arch, mf->tensors[i].name) &&
                !count++)
                first = mf->tensors[i].name;
        const char *d = strstr(r->name, "%d"); /* "blk.N.x" names all of them */
        if (count > 1 && d) {
            snprintf(item, sizeof item, "tensor %.*sN%s in %d layers (%s)", (int)(d - r->name), r->name, d + 2,
                     count, r->what);
            append(why, cap, &len, &n, item);
        } else if (count) {
            snprintf(item, sizeof item, "tensor %s (%s)", first, r->what);
            append(why, cap, &len, &n, item);
        }
    }
    return n > 0;
}
