/* tport synth: writes a GGUF v3 file of any architecture this build runs
 * (--arch, default llama) with random weights, for benchmarks and
 * cross-checks with llama.cpp (which loads it too).  The tensors and keys
 * come from the architecture's table in src/model/arch/: exactly the
 * tensors llama.cpp's loader creates (optional ones marked not to be
 * synthesized are left out), 1-D weights 1 (norms) or noise (biases).
 *
 * Weights are uniform in [-a, a] with a = sqrt(3 / fan_in) (standard
 * deviation 1/sqrt(fan_in)), so activations stay of order one through any
 * depth (--out-gain scales the ones that write the residual stream);
 * norms are exactly 1 (--norm-noise: near 1).  The random floats depend only on the seed
 * and the tensor, not on --type, so an F32 and a Q4_0 file of the same seed
 * hold the same model up to quantization.  2-D weights are quantized with
 * the reference quantizer of --type; a tensor whose row length does not
 * fit the type's block falls back the way llama.cpp's quantizer does. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "tport/gguf.h"
#include "tport/model_file.h"
#include "model/arch/arch.h"
#include "tport/types.h"
#include "tport/tport.h"

#define SYNTH_MAX_TENSORS (16 + 24 * SYNTH_MAX_LAYERS)
#define SYNTH_MAX_LAYERS 512
#define SYNTH_MIN_VOCAB 259 /* <unk> <s> </s> and 256 byte tokens */
#define SYNTH_NAME_LEN 64

typedef struct synth_shape {
    const char *name;
    uint32_t dim, layers, heads, kv_heads, ff, vocab, ctx;
} synth_shape;

/* Published shapes of the llama2.c "stories" models and TinyLlama-1.1B. */
static const synth_shape known_shapes[] = {
    {"stories15M", 288, 6, 6, 6, 768, 32000, 256},
    {"stories110M", 768, 12, 12, 12, 2048, 32000, 1024},
    {"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048},
};

#define SYNTH_MAX_TT 64

/* A tiny default, quick to write and to run. */
static const synth_shape default_shape = {"tiny", 256, 2, 4, 4, 512, 512, 256};

typedef struct synth_opts {
    synth_shape shape;
    const tport_arch *arch;
    uint32_t head_size, rot;  /* 0 = dim / heads, head size */
    bool parallel_residual;   /* gptneox */
    float alibi_bias, clamp_kqv; /* mpt */
    uint32_t window;          /* sliding window (gemma2, gemma3), 0 = none */
    /* RoPE base (0: 10000) and the local layers' own (0: not written),
     * linear scaling factor (0: none); soft-caps (0: the arch's default) */
    float rope_base, rope_base_swa, rope_linear, attn_softcap, logit_softcap;
    float out_gain;           /* scale of the weights writing the residual */
    float norm_noise;         /* norm weights uniform in [1 - n, 1 + n]     */
    const char *type_name;
    const char *vocab_from;
    const char *out;
    uint64_t seed;
    bool vocab_set;           /* --vocab given explicitly */
    /* mixture of experts: --experts, --experts-used, --expert-ff, --shared-ff */
    uint32_t experts, experts_used, expert_ff, shared_ff;
    const char *with[4];      /* --with: optional tensors synthesized too  */
    int n_with;
    /* --rope-scaling TYPE [--rope-factor F] [--rope-orig-ctx N]
     * [--rope-attn-factor F]: the rope.scaling.* keys (NULL: none) */
    const char *rope_scaling;
    float rope_factor, rope_attn_factor;
    uint32_t rope_orig_ctx;
    /* --f32-key SUFFIX=F: "<arch>.SUFFIX" written as an f32 (up to 4) */
    const char *f32_keys[4];
    float f32_vals[4];
    int n_f32;
    /* --tensor-type NAME=T: one tensor's type instead of --type's (a
     * llama-quantize mix such as Q4_K_M, recorded tensor by tensor) */
    const char *tt[SYNTH_MAX_TT];
    int n_tt;
} synth_opts;

typedef struct synth_tensor {
    char name[SYNTH_NAME_LEN];
    tport_type_id type;
    int n_dims;
    int64_t ne[3];            /* ne[2]: experts of a stack, else 1 */
    bool is_norm;
    bool is_bias;
    bool typed;               /* --tensor-type chose its type */
    float gain;               /* the weights' amplitude is gain * sqrt(3 / fan_in) */
} synth_tensor;

typedef struct synth_ctx {
    uint64_t seed;
    float out_gain, norm_noise;
    int n_tensors;
    synth_tensor tensors[SYNTH_MAX_TENSORS];
    float *row;          /* scratch: one row of floats                 */
    int64_t row_cap;
    bool show_progress;
    int last_percent;
} synth_ctx;

static void usage(FILE *out) {
    char archs[256];
    fprintf(out,
            "usage: tport synth [--arch A] [shape options] [--type T] [--vocab-from FILE.gguf] [--seed S] -o FILE.gguf\n"
            "--arch A          architecture (default llama): %s\n"
            "shape: --shape stories15M|stories110M|tinyllama-1.1b, then optionally any of\n"
            "       --dim N --layers N --heads N --kv-heads N --ff N --vocab N --ctx N\n"
            "       --head-size N (default dim / heads) --rot N (rotary dims, default the head size)\n"
            "       (without --shape: dim %u, layers %u, heads %u, ff %u, vocab %u, ctx %u)\n"
            "--no-parallel-residual   gptneox: sequential residual (default parallel, as Pythia)\n"
            "--alibi-bias F --clamp-kqv F   mpt: ALiBi max bias (default 8) and QKV clamp (default 0 = none)\n"
            "--window N        gemma2, gemma3: attention.sliding_window (gemma2 default 4096, gemma3 none)\n"
            "--rope-base F --rope-base-swa F --rope-linear F   RoPE base (default 10000), the sliding-window\n"
            "                  layers' base (gemma3), a linear scaling factor (gemma3)\n"
            "--attn-softcap F --logit-softcap F   gemma2 (defaults 50, 30), gemma3 (logits; default none)\n"
            "--experts N --experts-used K   a mixture of N experts, K a token (llama, qwen2moe)\n"
            "--expert-ff N --shared-ff N    an expert's and the shared expert's feed-forward width\n"
            "                  (qwen2moe; llama's experts are --ff wide)\n"
            "--type T          type of the 2-D weights: f32, f16, bf16, q8_0, q4_0, q4_k, ... (default f32)\n"
            "--tensor-type NAME=T   the 2-D tensor NAME (e.g. blk.1.ffn_down.weight) gets type T\n"
            "                  instead (up to 64; to write a llama-quantize mix such as Q4_K_M)\n"
            "--vocab-from F    copy the tokenizer (tokenizer.ggml.*) from a GGUF file; its size sets --vocab\n"
            "--seed S          random seed (default 1)\n"
            "--out-gain G      multiply the weights that write into the residual stream (attention\n"
            "                  output, feed-forward down; gemma2/gemma3's post-norms) by G (default 1).\n"
            "                  Random blocks with gain 1\n"
            "                  add about as much as the embedding holds, so a model whose classifier\n"
            "                  is its embedding mostly repeats its input; larger gains let the\n"
            "                  blocks decide\n"
            "--with NAME       also write the table's optional tensor NAME (rope_freqs.weight:\n"
            "                  RoPE frequency factors, drawn like norm weights), up to 4 times\n"
            "--rope-scaling none|linear|yarn|longrope [--rope-factor F] [--rope-orig-ctx N]\n"
            "                  [--rope-attn-factor F]   the rope.scaling.* keys\n"
            "--f32-key SUFFIX=F   write the key ARCH.SUFFIX as an f32 (up to 4; e.g.\n"
            "                  rope.scaling.yarn_beta_fast=16)\n"
            "--norm-noise F    norm weights uniform in [1 - F, 1 + F] instead of exactly 1, so that\n"
            "                  a graph using the wrong norm weight, or none, computes something else\n",
            tool_arch_list(archs, sizeof archs), default_shape.dim, default_shape.layers, default_shape.heads,
            default_shape.ff, default_shape.vocab, default_shape.ctx);
}

static bool parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out) {
    if (!s || !*s || *s == '-')
        return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = (uint32_t)v;
    return true;
}

static const synth_shape *find_shape(const char *name) {
    for (size_t i = 0; i < sizeof known_shapes / sizeof known_shapes[0]; i++)
        if (!strcasecmp(known_shapes[i].name, name))
            return &known_shapes[i];
    return NULL;
}

/* Shape options override --shape wherever they appear, so they are
 * collected first and applied after. */
static int parse_args(int argc, char **argv, synth_opts *o) {
    char archs[256];
    *o = (synth_opts){.shape = default_shape, .type_name = "f32", .seed = 1, .arch = tport_arch_find("llama"),
                      .parallel_residual = true, .alibi_bias = 8.0f, .out_gain = 1.0f};
    struct {
        const char *flag;
        uint32_t *field;
        uint32_t lo, hi;
        bool set;
        uint32_t value;
    } dims[] = {
        {"--dim", &o->shape.dim, 2, 65536, false, 0},
        {"--layers", &o->shape.layers, 1, SYNTH_MAX_LAYERS, false, 0},
        {"--heads", &o->shape.heads, 1, 1024, false, 0},
        {"--kv-heads", &o->shape.kv_heads, 1, 1024, false, 0},
        {"--ff", &o->shape.ff, 1, 1u << 20, false, 0},
        {"--vocab", &o->shape.vocab, 1, 1u << 24, false, 0},
        {"--ctx", &o->shape.ctx, 1, 1u << 24, false, 0},
        {"--head-size", &o->head_size, 2, 65536, false, 0},
        {"--rot", &o->rot, 2, 65536, false, 0},
        {"--window", &o->window, 1, 1u << 24, false, 0},
        {"--experts", &o->experts, 1, 4096, false, 0},
        {"--experts-used", &o->experts_used, 1, 256, false, 0},
        {"--expert-ff", &o->expert_ff, 1, 1u << 20, false, 0},
        {"--shared-ff", &o->shared_ff, 1, 1u << 20, false, 0},
    };
    const size_t n_dims = sizeof dims / sizeof dims[0];
    bool kv_heads_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        bool matched = false;
        for (size_t k = 0; k < n_dims; k++) {
            if (strcmp(a, dims[k].flag))
                continue;
            if (!parse_u32(v, dims[k].lo, dims[k].hi, &dims[k].value))
                return tool_fail(2, "synth: %s needs a number in [%" PRIu32 ", %" PRIu32 "]", a,
                                 dims[k].lo, dims[k].hi);
            dims[k].set = true;
            kv_heads_set |= !strcmp(a, "--kv-heads");
            matched = true;
            i++;
        }
        if (matched)
            continue;
        if (!strcmp(a, "--arch")) {
            o->arch = v ? tport_arch_find(v) : NULL;
            if (!o->arch)
                return tool_fail(2, "synth: --arch needs one of %s", tool_arch_list(archs, sizeof archs));
            i++;
        } else if (!strcmp(a, "--no-parallel-residual")) {
            o->parallel_residual = false;
        } else if (!strcmp(a, "--out-gain") || !strcmp(a, "--norm-noise")) {
            char *end = NULL;
            float f = v ? strtof(v, &end) : -1.0f;
            bool gain = !strcmp(a, "--out-gain");
            if (!v || *end || !(gain ? f > 0.0f && f <= 1e3f : f >= 0.0f && f < 1.0f))
                return tool_fail(2, gain ? "synth: --out-gain needs a number in (0, 1000]"
                                         : "synth: --norm-noise needs a number in [0, 1)");
            *(gain ? &o->out_gain : &o->norm_noise) = f;
            i++;
        } else if (!strcmp(a, "--rope-base") || !strcmp(a, "--rope-base-swa") || !strcmp(a, "--rope-linear") ||
                   !strcmp(a, "--attn-softcap") || !strcmp(a, "--logit-softcap")) {
            char *end = NULL;
            float f = v ? strtof(v, &end) : -1.0f;
            if (!v || *end || !(f > 0.0f) || f > 1e9f)
                return tool_fail(2, "synth: %s needs a number > 0", a);
            *(!strcmp(a, "--rope-base")       ? &o->rope_base
              : !strcmp(a, "--rope-base-swa") ? &o->rope_base_swa
              : !strcmp(a, "--rope-linear")   ? &o->rope_linear
              : !strcmp(a, "--attn-softcap")  ? &o->attn_softcap
                                              : &o->logit_softcap) = f;
            i++;
        } else if (!strcmp(a, "--with")) {
            if (!v || o->n_with == 4)
                return tool_fail(2, "synth: --with needs a tensor name (at most 4)");
            o->with[o->n_with++] = v;
            i++;
        } else if (!strcmp(a, "--rope-scaling")) {
            if (!v || (strcmp(v, "none") && strcmp(v, "linear") && strcmp(v, "yarn") && strcmp(v, "longrope")))
                return tool_fail(2, "synth: --rope-scaling needs none, linear, yarn or longrope");
            o->rope_scaling = v;
            i++;
        } else if (!strcmp(a, "--rope-factor") || !strcmp(a, "--rope-attn-factor")) {
            char *end = NULL;
            float f = v ? strtof(v, &end) : -1.0f;
            if (!v || *end || !(f > 0.0f) || f > 1e6f)
                return tool_fail(2, "synth: %s needs a number > 0", a);
            *(!strcmp(a, "--rope-factor") ? &o->rope_factor : &o->rope_attn_factor) = f;
            i++;
        } else if (!strcmp(a, "--f32-key")) {
            const char *eq = v ? strchr(v, '=') : NULL;
            char *end = NULL;
            float f = eq ? strtof(eq + 1, &end) : 0.0f;
            if (!eq || eq == v || !eq[1] || *end || o->n_f32 == 4 || !(f == f))
                return tool_fail(2, "synth: --f32-key needs SUFFIX=NUMBER (at most 4)");
            o->f32_keys[o->n_f32] = v;
            o->f32_vals[o->n_f32++] = f;
            i++;
        } else if (!strcmp(a, "--tensor-type")) {
            const char *eq = v ? strchr(v, '=') : NULL;
            if (!eq || eq == v || !eq[1] || o->n_tt == SYNTH_MAX_TT)
                return tool_fail(2, "synth: --tensor-type needs NAME=TYPE (at most %d)", SYNTH_MAX_TT);
            o->tt[o->n_tt++] = v;
            i++;
        } else if (!strcmp(a, "--rope-orig-ctx")) {
            if (!parse_u32(v, 1, 1u << 24, &o->rope_orig_ctx))
                return tool_fail(2, "synth: --rope-orig-ctx needs a number in [1, 16777216]");
            i++;
        } else if (!strcmp(a, "--alibi-bias") || !strcmp(a, "--clamp-kqv")) {
            char *end = NULL;
            float f = v ? strtof(v, &end) : -1.0f;
            if (!v || *end || !(f >= 0.0f) || f > 1e6f)
                return tool_fail(2, "synth: %s needs a number >= 0", a);
            *(!strcmp(a, "--alibi-bias") ? &o->alibi_bias : &o->clamp_kqv) = f;
            i++;
        } else if (!strcmp(a, "--shape")) {
            const synth_shape *s = v ? find_shape(v) : NULL;
            if (!s)
                return tool_fail(2, "synth: --shape needs one of stories15M, stories110M, tinyllama-1.1b");
            o->shape = *s;
            i++;
        } else if (!strcmp(a, "--type")) {
            if (!v)
                return tool_fail(2, "synth: --type needs a type name");
            o->type_name = v;
            i++;
        } else if (!strcmp(a, "--vocab-from")) {
            if (!v)
                return tool_fail(2, "synth: --vocab-from needs a GGUF file");
            o->vocab_from = v;
            i++;
        } else if (!strcmp(a, "--seed")) {
            errno = 0;
            char *end = NULL;
            if (!v || !*v || *v == '-')
                return tool_fail(2, "synth: --seed needs a non-negative number");
            o->seed = strtoull(v, &end, 10);
            if (errno || *end)
                return tool_fail(2, "synth: --seed needs a non-negative number");
            i++;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!v)
                return tool_fail(2, "synth: %s needs a file name", a);
            o->out = v;
            i++;
        } else {
            usage(stderr);
            return tool_fail(2, "synth: unknown argument '%s'", a);
        }
    }
    for (int w = 0; w < o->n_with; w++) {
        bool known = false;
        for (int k = 0; k < o->arch->n_tensors && !known; k++) {
            const tport_arch_tensor *t = &o->arch->tensors[k];
            known = !strcmp(o->with[w], t->flags & TENSOR_LAYER ? t->name + strlen("blk.%d.") : t->name);
        }
        if (!known)
            return tool_fail(2, "synth: --with %s: %s has no such tensor", o->with[w], o->arch->name);
    }
    bool heads_set = false;
    for (size_t k = 0; k < n_dims; k++) {
        if (dims[k].set)
            *dims[k].field = dims[k].value;
        heads_set |= dims[k].set && !strcmp(dims[k].flag, "--heads");
        o->vocab_set |= dims[k].set && !strcmp(dims[k].flag, "--vocab");
    }
    if (heads_set && !kv_heads_set)
        o->shape.kv_heads = o->shape.heads; /* plain multi-head attention */
    if (!o->out) {
        usage(stderr);
        return tool_fail(2, "synth: no output file (-o FILE.gguf)");
    }
    const synth_shape *s = &o->shape;
    if (!o->head_size && s->dim % s->heads)
        return tool_fail(2, "synth: dim %" PRIu32 " is not a multiple of heads %" PRIu32, s->dim, s->heads);
    uint32_t hs = o->head_size ? o->head_size : s->dim / s->heads;
    if (o->arch->rope_mode >= 0 && hs % 2)
        return tool_fail(2, "synth: head size %" PRIu32 " must be even (rotary embedding)", hs);
    if (o->rot && (o->rot > hs || o->rot % 2))
        return tool_fail(2, "synth: --rot %" PRIu32 " must be even and at most the head size %" PRIu32, o->rot, hs);
    if (o->experts && (!o->experts_used || o->experts_used > o->experts))
        return tool_fail(2, "synth: --experts %" PRIu32 " needs --experts-used in 1..%" PRIu32, o->experts, o->experts);
    if (!o->experts && (o->experts_used || o->expert_ff || o->shared_ff))
        return tool_fail(2, "synth: --experts-used, --expert-ff and --shared-ff need --experts");
    if (s->kv_heads > s->heads || s->heads % s->kv_heads)
        return tool_fail(2, "synth: heads %" PRIu32 " is not a multiple of kv-heads %" PRIu32, s->heads,
                         s->kv_heads);
    return 0;
}

/* ---- types ------------------------------------------------------------- */

/* Looks a type up by name, ignoring case ("q4_k" finds "q4_K"); only
 * current GGUF types with a reference quantizer qualify. */
static const tport_type_traits *find_type(const char *name) {
    for (int i = 0; i < tport_traits_count(); i++) {
        const tport_type_traits *t = tport_traits_at(i);
        /* q8_1 and q8_K exist only in memory, as the other side of dot products. */
        if (t && t->info.name && !strcasecmp(t->info.name, name) && t->from_float &&
            t->revision && !strcmp(t->revision, "current") && t->info.id != TPORT_TYPE_Q8_1 &&
            t->info.id != TPORT_TYPE_Q8_K)
            return t;
    }
    return NULL;
}

static tport_type_id type_by_name(const char *name, tport_type_id fallback) {
    const tport_type_traits *t = find_type(name);
    return t ? (tport_type_id)t->info.id : fallback;
}

static bool type_fits(tport_type_id type, int64_t ne0) {
    const tport_type_traits *t = tport_traits(type);
    return t && t->from_float && t->info.block_size > 0 && ne0 % t->info.block_size == 0;
}

/* The type a 2-D weight with rows of ne0 gets: the requested one, or the
 * fallback llama.cpp's quantizer uses when ne0 is not a multiple of the
 * block (256-blocks to a 32-block type), or F16 when that fails too. */
static tport_type_id weight_type(tport_type_id want, int64_t ne0) {
    if (type_fits(want, ne0))
        return want;
    const tport_type_traits *t = tport_traits(want);
    const char *name = t ? t->info.name : "";
    const char *alt = NULL;
    if (!strcasecmp(name, "q2_K") || !strcasecmp(name, "q3_K"))
        alt = "q4_0";
    else if (!strcasecmp(name, "q4_K"))
        alt = "q5_0";
    else if (!strcasecmp(name, "q5_K"))
        alt = "q5_1";
    else if (!strcasecmp(name, "q6_K"))
        alt = "q8_0";
    else if (!strcasecmp(name, "iq4_xs"))
        alt = "iq4_nl";
    tport_type_id alt_id = alt ? type_by_name(alt, TPORT_TYPE_F16) : TPORT_TYPE_F16;
    return type_fits(alt_id, ne0) ? alt_id : TPORT_TYPE_F16;
}

/* llama.cpp's general.file_type for a "mostly T" file (0 = all F32). */
static uint32_t llama_ftype(const char *name) {
    static const struct {
        const char *name;
        uint32_t ftype;
    } map[] = {
        {"f32", 0},   {"f16", 1},    {"q4_0", 2},   {"q4_1", 3},    {"q8_0", 7},
        {"q5_0", 8},  {"q5_1", 9},   {"q2_K", 10},  {"q3_K", 11},   {"q4_K", 14},
        {"q5_K", 16}, {"q6_K", 18},  {"iq4_nl", 25}, {"iq4_xs", 30}, {"bf16", 32},
        {"mxfp4", 38}, {"tq1_0", 36},  {"tq2_0", 37},  {"nvfp4", 39},   {"q1_0", 40},
        {"q2_0", 41},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcasecmp(map[i].name, name))
            return map[i].ftype;
    return 0;
}

/* ---- tensors ----------------------------------------------------------- */

static void add_tensor(synth_ctx *c, const char *name, tport_type_id type, int n_dims, int64_t ne0,
                       int64_t ne1, int64_t ne2) {
    synth_tensor *t = &c->tensors[c->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = n_dims == 1 ? TPORT_TYPE_F32 : weight_type(type, ne0);
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = n_dims == 1 ? 1 : ne1;
    t->ne[2] = n_dims == 3 ? ne2 : 1;
    t->is_norm = n_dims == 1;
    t->gain = 1.0f;
    if (ne0 > c->row_cap)
        c->row_cap = ne0;
}

/* The shape the architecture table is read with. */
static tport_model_shape model_shape(const synth_opts *o) {
    const synth_shape *s = &o->shape;
    tport_model_shape sh = {
        .n_vocab = (int32_t)s->vocab, .n_ctx = (int32_t)s->ctx, .n_ctx_train = (int32_t)s->ctx,
        .n_embd = (int32_t)s->dim, .n_ff = (int32_t)s->ff, .n_layer = (int32_t)s->layers,
        .n_head = (int32_t)s->heads, .n_head_kv = (int32_t)s->kv_heads,
        .head_dim = (int32_t)(o->head_size ? o->head_size : s->dim / s->heads),
        .norm_eps = 1e-5f, .rope_base = o->rope_base > 0 ? o->rope_base : 10000.0f,
        .rope_scale = o->rope_linear > 0 ? 1.0f / o->rope_linear : 1.0f, .rope_mode = o->arch->rope_mode,
        .parallel_residual = o->parallel_residual, .max_alibi_bias = o->alibi_bias, .clamp_kqv = o->clamp_kqv,
        .n_swa = (int32_t)o->window, .rope_base_swa = o->rope_base_swa, .attn_softcap = o->attn_softcap,
        .logit_softcap = o->logit_softcap,
    };
    sh.n_rot = o->rot ? (int32_t)o->rot : sh.head_dim;
    sh.n_expert = (int32_t)o->experts;
    sh.n_expert_used = (int32_t)o->experts_used;
    /* the experts' widths only where the table uses them (llama.cpp's
     * defaults: n_ff / n_used for an expert, n_ff for the shared one) */
    for (int k = 0; k < o->arch->n_tensors && o->experts; k++) {
        const tport_arch_tensor *t = &o->arch->tensors[k];
        if (t->ne0 == DIM_FF_EXP || t->ne1 == DIM_FF_EXP)
            sh.n_ff_exp = (int32_t)(o->expert_ff ? o->expert_ff : s->ff / o->experts_used);
        if (t->ne0 == DIM_FF_SHEXP || t->ne1 == DIM_FF_SHEXP)
            sh.n_ff_shexp = (int32_t)(o->shared_ff ? o->shared_ff : s->ff);
    }
    return sh;
}

static void add_table_tensor(synth_ctx *c, const tport_arch_tensor *t, const tport_model_shape *sh, int layer,
                             tport_type_id type) {
    char name[SYNTH_NAME_LEN];
    if (t->flags & TENSOR_LAYER)
        snprintf(name, sizeof name, t->name, layer);
    else
        snprintf(name, sizeof name, "%s", t->name);
    int n_dims = t->ne1 == DIM_1 ? 1 : t->ne2 ? 3 : 2;
    add_tensor(c, name, type, n_dims, tport_arch_dim_size(sh, t->ne0), n_dims == 1 ? 1 : tport_arch_dim_size(sh, t->ne1),
               t->ne2 ? tport_arch_dim_size(sh, t->ne2) : 1);
    c->tensors[c->n_tensors - 1].is_bias = (t->flags & TENSOR_BIAS) != 0;
    /* the table's slot says which weights write into the residual stream */
    bool residual = (t->flags & TENSOR_LAYER) &&
                    (t->slot == offsetof(tport_layer, wo) || t->slot == offsetof(tport_layer, w_down) ||
                     t->slot == offsetof(tport_layer, ffn_down_exps) || t->slot == offsetof(tport_layer, ffn_down_shexp));
    /* a post-norm (gemma2, gemma3) is what writes the residual after its
     * projection, whose scale it normalizes away: it takes the gain */
    bool post_norm = (t->flags & TENSOR_LAYER) && (t->slot == offsetof(tport_layer, attn_post_norm) ||
                                                   t->slot == offsetof(tport_layer, ffn_post_norm));
    c->tensors[c->n_tensors - 1].gain = (residual && n_dims >= 2) || post_norm ? c->out_gain : 1.0f;
}

/* A tensor synth leaves out unless --with names it. */
static bool wanted(const synth_opts *o, const tport_arch_tensor *t) {
    for (int i = 0; i < o->n_with; i++)
        if (!strcmp(o->with[i], t->flags & TENSOR_LAYER ? t->name + strlen("blk.%d.") : t->name))
            return true;
    return false;
}

/* In the table's order, except that the model-level tensors listed after
 * the first per-layer one come after all layers (as converters write). */
static void plan_tensors(synth_ctx *c, const synth_opts *o, tport_type_id type) {
    const tport_arch *arch = o->arch;
    tport_model_shape sh = model_shape(o);
    int first_layer = arch->n_tensors;
    for (int k = 0; k < arch->n_tensors; k++)
        if (arch->tensors[k].flags & TENSOR_LAYER) {
            first_layer = k;
            break;
        }
    for (int pass = 0; pass < 3; pass++)
        for (int k = 0; k < arch->n_tensors; k++) {
            const tport_arch_tensor *t = &arch->tensors[k];
            bool layer = (t->flags & TENSOR_LAYER) != 0;
            if (((t->flags & TENSOR_NO_SYNTH) && !wanted(o, t)) || !tport_arch_row_applies(t, &sh))
                continue;
            if (pass == 0 && !layer && k < first_layer)
                add_table_tensor(c, t, &sh, 0, type);
            if (pass == 2 && !layer && k > first_layer)
                add_table_tensor(c, t, &sh, 0, type);
        }
    for (uint32_t l = 0; l < o->shape.layers; l++)
        for (int k = 0; k < arch->n_tensors; k++)
            if ((arch->tensors[k].flags & TENSOR_LAYER) &&
                (!(arch->tensors[k].flags & TENSOR_NO_SYNTH) || wanted(o, &arch->tensors[k])) &&
                tport_arch_row_applies(&arch->tensors[k], &sh))
                add_table_tensor(c, &arch->tensors[k], &sh, (int)l, type);
}

/* splitmix64: a stream per tensor, independent of the order of writing. */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t name_hash(const char *s) { /* FNV-1a */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static tport_status fill_tensor(void *user, int index, void *dst, uint64_t nbytes) {
    synth_ctx *c = user;
    if (index < 0 || index >= c->n_tensors)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "synth: no tensor %d", index);
    const synth_tensor *t = &c->tensors[index];
    const tport_type_traits *tr = tport_traits(t->type);
    size_t row_bytes = tport_row_size(t->type, t->ne[0]);
    const int64_t rows = t->ne[1] * t->ne[2];
    if (!tr || !tr->from_float || row_bytes == 0 || (uint64_t)row_bytes * (uint64_t)rows != nbytes)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "synth: %s: unexpected size %" PRIu64, t->name,
                           nbytes);
    uint64_t state = c->seed ^ name_hash(t->name);
    const double a = (double)t->gain * sqrt(3.0 / (double)t->ne[0]);
    uint8_t *out = dst;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < t->ne[0]; i++) {
            if (t->is_bias) {
                /* biases: uniform in [-0.5, 0.5], large enough to matter */
                double u = (double)(splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0);
                c->row[i] = (float)(u - 0.5);
            } else if (t->is_norm) {
                /* the stream is only drawn from with noise: files without
                 * it stay what they were */
                double u = c->norm_noise > 0.0f ? (double)(splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0)
                                                : 0.5;
                c->row[i] = (float)((double)t->gain * (1.0 + (2.0 * u - 1.0) * (double)c->norm_noise));
            } else {
                double u = (double)(splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0); /* [0,1) */
                c->row[i] = (float)((2.0 * u - 1.0) * a);
            }
        }
        tr->from_float(c->row, out + (size_t)r * row_bytes, t->ne[0]);
    }
    return TPORT_STATUS_OK;
}

static void progress(void *user, uint64_t done, uint64_t total) {
    synth_ctx *c = user;
    if (!c->show_progress || total == 0)
        return;
    int percent = (int)(done * 100 / total);
    if (percent >= c->last_percent + 10 || done == total) {
        fprintf(stderr, "synth: %3d%% (%.0f of %.0f MiB)\n", percent, (double)done / 1048576.0,
                (double)total / 1048576.0);
        c->last_percent = percent;
    }
}

/* ---- metadata ---------------------------------------------------------- */

#define TRY(expr)                                   \
    do {                                            \
        tport_status try_s_ = (expr);               \
        if (try_s_ != TPORT_STATUS_OK)              \
            return try_s_;                          \
    } while (0)

/* A minimal SentencePiece ("llama") vocabulary: <unk>, <s>, </s>, the 256
 * byte tokens <0x00>..<0xFF>, the printable ASCII characters (space as
 * U+2581), then filler tokens "tokN". */
static tport_status set_generated_vocab(tport_gguf_writer *w, uint32_t n) {
    if (n < SYNTH_MIN_VOCAB)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "synth: a generated vocabulary needs at least %d tokens (got %" PRIu32 ")",
                           SYNTH_MIN_VOCAB, n);
    char **tokens = calloc(n, sizeof *tokens);
    float *scores = calloc(n, sizeof *scores);
    int32_t *types = calloc(n, sizeof *types);
    tport_status st = TPORT_STATUS_OK;
    if (!tokens || !scores || !types) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "synth: out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n && st == TPORT_STATUS_OK; i++) {
        char buf[32];
        if (i == 0)
            snprintf(buf, sizeof buf, "<unk>");
        else if (i == 1)
            snprintf(buf, sizeof buf, "<s>");
        else if (i == 2)
            snprintf(buf, sizeof buf, "</s>");
        else if (i < SYNTH_MIN_VOCAB)
            snprintf(buf, sizeof buf, "<0x%02X>", i - 3);
        else if (i < SYNTH_MIN_VOCAB + 95) {
            char ch = (char)(' ' + (i - SYNTH_MIN_VOCAB));
            if (ch == ' ')
                snprintf(buf, sizeof buf, "\xe2\x96\x81"); /* U+2581 */
            else
                snprintf(buf, sizeof buf, "%c", ch);
        } else
            snprintf(buf, sizeof buf, "tok%" PRIu32, i);
        tokens[i] = strdup(buf);
        if (!tokens[i])
            st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "synth: out of memory");
        types[i] = i == 0 ? 2 : i < 3 ? 3 : i < SYNTH_MIN_VOCAB ? 6 : 1;
        scores[i] = i < SYNTH_MIN_VOCAB ? 0.0f : -(float)(i - SYNTH_MIN_VOCAB);
    }
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_str(w, "tokenizer.ggml.model", "llama");
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_array(w, "tokenizer.ggml.tokens", TPORT_KV_STRING, tokens, n);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_array(w, "tokenizer.ggml.scores", TPORT_KV_F32, scores, n);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_array(w, "tokenizer.ggml.token_type", TPORT_KV_I32, types, n);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", true);
done:
    if (tokens)
        for (uint32_t i = 0; i < n; i++)
            free(tokens[i]);
    free(tokens);
    free(scores);
    free(types);
    return st;
}

/* Copies every tokenizer.* key of a GGUF file; *n_vocab gets its size. */
static tport_status copy_vocab(tport_gguf_writer *w, const char *path, uint32_t *n_vocab) {
    tport_model_file *mf = NULL;
    TRY(tport_model_file_open(path, &mf));
    tport_status st = TPORT_STATUS_OK;
    bool have_tokens = false;
    if (mf->container != TPORT_CONTAINER_GGUF)
        st = tport_error(TPORT_STATUS_BAD_FORMAT, "synth: %s is not a GGUF file", path);
    for (int i = 0; i < mf->n_kv && st == TPORT_STATUS_OK; i++) {
        const tport_kv *kv = &mf->kv[i];
        if (strncmp(kv->key, "tokenizer.", 10))
            continue;
        if (!strcmp(kv->key, "tokenizer.ggml.tokens")) {
            if (kv->type != TPORT_KV_ARRAY || kv->elem_type != TPORT_KV_STRING || kv->n_elems == 0 ||
                kv->n_elems > (1u << 24)) {
                st = tport_error(TPORT_STATUS_BAD_FORMAT, "synth: %s: tokenizer.ggml.tokens is not a usable "
                                 "string array", path);
                break;
            }
            *n_vocab = (uint32_t)kv->n_elems;
            have_tokens = true;
        }
        st = tport_gguf_set_kv(w, kv->key, kv);
    }
    if (st == TPORT_STATUS_OK && !have_tokens)
        st = tport_error(TPORT_STATUS_BAD_FORMAT, "synth: %s has no tokenizer.ggml.tokens", path);
    tport_model_file_close(mf);
    return st;
}

static tport_status set_metadata(tport_gguf_writer *w, const synth_opts *o, const char *type_name) {
    const synth_shape *s = &o->shape;
    const tport_arch *arch = o->arch;
    char name[128], desc[160];
    snprintf(name, sizeof name, "synthetic %s %s", s->name, type_name);
    snprintf(desc, sizeof desc, "random weights written by tport synth (seed %" PRIu64 ")", o->seed);
    TRY(tport_gguf_set_str(w, "general.architecture", arch->name));
    TRY(tport_gguf_set_str(w, "general.name", name));
    TRY(tport_gguf_set_str(w, "general.description", desc));
    TRY(tport_gguf_set_u32(w, "general.file_type", llama_ftype(type_name)));
    TRY(tport_gguf_set_u32(w, "general.quantization_version", 2));
    tport_model_shape sh = model_shape(o);
    TRY(tport_arch_write_common_keys(w, arch, &sh));
    if (arch->write_keys)
        TRY(arch->write_keys(w, &sh));
    char key[128];
    if (o->rope_scaling) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch->name);
        TRY(tport_gguf_set_str(w, key, o->rope_scaling));
    }
    if (o->rope_factor > 0.0f) {
        snprintf(key, sizeof key, "%s.rope.scaling.factor", arch->name);
        TRY(tport_gguf_set_f32(w, key, o->rope_factor));
    }
    if (o->rope_orig_ctx) {
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch->name);
        TRY(tport_gguf_set_u32(w, key, o->rope_orig_ctx));
    }
    if (o->rope_attn_factor > 0.0f) {
        snprintf(key, sizeof key, "%s.rope.scaling.attn_factor", arch->name);
        TRY(tport_gguf_set_f32(w, key, o->rope_attn_factor));
    }
    for (int i = 0; i < o->n_f32; i++) {
        snprintf(key, sizeof key, "%s.%.*s", arch->name, (int)(strchr(o->f32_keys[i], '=') - o->f32_keys[i]),
                 o->f32_keys[i]);
        TRY(tport_gguf_set_f32(w, key, o->f32_vals[i]));
    }
    return TPORT_STATUS_OK;
}

/* ---- command ------------------------------------------------------------ */

/* --tensor-type: each names a 2-D tensor of the plan and a type whose
 * block fits its rows (a recorded mix is applied exactly or refused). */
static tport_status apply_tensor_types(synth_ctx *c, const synth_opts *o) {
    for (int k = 0; k < o->n_tt; k++) {
        const char *eq = strchr(o->tt[k], '=');
        size_t len = (size_t)(eq - o->tt[k]);
        const tport_type_traits *ty = find_type(eq + 1);
        int i = 0;
        while (i < c->n_tensors && (strlen(c->tensors[i].name) != len || strncmp(c->tensors[i].name, o->tt[k], len)))
            i++;
        if (i == c->n_tensors || c->tensors[i].n_dims < 2)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "synth: --tensor-type %s: no such 2-D tensor",
                               o->tt[k]);
        if (!ty || !type_fits((tport_type_id)ty->info.id, c->tensors[i].ne[0]))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                               "synth: --tensor-type %s: unknown type, or its block does not divide the rows",
                               o->tt[k]);
        c->tensors[i].type = (tport_type_id)ty->info.id;
        c->tensors[i].typed = true;
    }
    return TPORT_STATUS_OK;
}

static int synth(synth_opts *o, const tport_type_traits *type) {
    synth_ctx *c = calloc(1, sizeof *c);
    tport_gguf_writer *w = tport_gguf_writer_new();
    int rc = 1;
    tport_status st = TPORT_STATUS_OK;
    if (!c || !w) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "synth: out of memory");
        goto done;
    }
    /* general.* and ARCH.* first, as llama.cpp's converter orders them. */
    st = set_metadata(w, o, type->info.name);
    if (st != TPORT_STATUS_OK)
        goto done;
    if (o->vocab_from) {
        uint32_t n_vocab = 0;
        uint32_t asked = o->shape.vocab;
        st = copy_vocab(w, o->vocab_from, &n_vocab);
        if (st == TPORT_STATUS_OK && n_vocab != asked) {
            if (o->vocab_set)
                fprintf(stderr, "synth: vocabulary of %s has %" PRIu32 " tokens; using that instead of %" PRIu32 "\n",
                    o->vocab_from, n_vocab, asked);
            o->shape.vocab = n_vocab;
            char key[96];
            snprintf(key, sizeof key, "%s.vocab_size", o->arch->name);
            st = tport_gguf_set_u32(w, key, n_vocab);
        }
    } else {
        st = set_generated_vocab(w, o->shape.vocab);
    }
    if (st != TPORT_STATUS_OK)
        goto done;

    c->seed = o->seed;
    c->out_gain = o->out_gain;
    c->norm_noise = o->norm_noise;
    plan_tensors(c, o, (tport_type_id)type->info.id);
    st = apply_tensor_types(c, o);
    if (st != TPORT_STATUS_OK)
        goto done;
    c->row = malloc((size_t)c->row_cap * sizeof *c->row);
    if (!c->row) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "synth: out of memory");
        goto done;
    }
    uint64_t total = 0;
    int n_weights = 0, n_fallback[2] = {0, 0}; /* [0] the 32-block type, [1] f16 */
    tport_type_id fallback32 = TPORT_TYPE_F16;
    for (int i = 0; i < c->n_tensors && st == TPORT_STATUS_OK; i++) {
        const synth_tensor *t = &c->tensors[i];
        if (!t->is_norm && !t->typed) {
            n_weights++;
            if (t->type == TPORT_TYPE_F16 && type->info.id != TPORT_TYPE_F16)
                n_fallback[1]++;
            else if (t->type != (tport_type_id)type->info.id) {
                n_fallback[0]++;
                fallback32 = t->type;
            }
        }
        total += (uint64_t)tport_row_size(t->type, t->ne[0]) * (uint64_t)(t->ne[1] * t->ne[2]);
        st = tport_gguf_add_tensor_fill(w, t->name, t->type, t->n_dims, t->ne, fill_tensor, c);
    }
    if (st != TPORT_STATUS_OK)
        goto done;
    if (n_fallback[0])
        fprintf(stderr, "synth: %d of %d weights have rows that are not a multiple of %s's block of %d; "
                "they use %s (as llama.cpp's quantizer does)\n", n_fallback[0], n_weights, type->info.name,
                (int)type->info.block_size, tport_traits(fallback32)->info.name);
    if (n_fallback[1])
        fprintf(stderr, "synth: %d of %d weights have rows that fit no block of %s; they use f16\n",
                n_fallback[1], n_weights, type->info.name);
    c->show_progress = total >= (64u << 20);
    c->last_percent = -100;
    tport_gguf_set_progress(w, progress, c);
    if (c->show_progress)
        fprintf(stderr, "synth: writing %s (%.0f MiB of weights)\n", o->out, (double)total / 1048576.0);
    st = tport_gguf_write(w, o->out);
    if (st == TPORT_STATUS_OK) {
        printf("wrote %s: %s, dim %" PRIu32 ", %" PRIu32 " layers, %" PRIu32 " heads (%" PRIu32
               " kv), ff %" PRIu32 ", vocab %" PRIu32 ", ctx %" PRIu32 ", %s, %d tensors, %.2f MiB\n",
               o->out, o->arch->name, o->shape.dim, o->shape.layers, o->shape.heads, o->shape.kv_heads, o->shape.ff,
               o->shape.vocab, o->shape.ctx, type->info.name, c->n_tensors, (double)total / 1048576.0);
        rc = 0;
    }
done:
    if (st != TPORT_STATUS_OK)
        rc = tool_fail(1, "%s", tport_last_error());
    tport_gguf_writer_free(w);
    if (c)
        free(c->row);
    free(c);
    return rc;
}

int cmd_synth(int argc, char **argv) {
    synth_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    const tport_type_traits *type = find_type(o.type_name);
    if (!type)
        return tool_fail(2, "synth: unknown type '%s' or no quantizer for it (tport types lists them)",
                         o.type_name);
    return synth(&o, type);
}
