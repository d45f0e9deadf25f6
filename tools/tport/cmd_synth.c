/* tport synth: the command line of tport_synth_write (tport/synth.h),
 * which writes a GGUF file of any architecture this build runs with
 * random weights, for benchmarks and cross-checks with llama.cpp. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "tport/gguf.h"
#include "tport/model_file.h"
#include "tport/synth.h"
#include "tport/types.h"
#include "tport/tport.h"

#define SYNTH_MAX_LAYERS 512

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

/* A tiny default, quick to write and to run. */
static const synth_shape default_shape = {"tiny", 256, 2, 4, 4, 512, 512, 256};

typedef struct synth_opts {
    tport_synth_params p;
    const char *type_name;
    const char *experts_type_name; /* --experts-type (NULL: type_name) */
    const char *out;
    bool vocab_set;           /* --vocab given explicitly */
    char f32_suffix[TPORT_SYNTH_MAX_F32_KEYS][100];
    char key_suffix[TPORT_SYNTH_MAX_KEYS][72];
    const char *tensor_type_arg[TPORT_SYNTH_MAX_TENSOR_TYPES]; /* --tensor-type NAME=T as given */
    char tensor_type_name[TPORT_SYNTH_MAX_TENSOR_TYPES][96];
} synth_opts;

static void apply_shape(tport_synth_params *p, const synth_shape *s) {
    p->shape_name = s->name;
    p->dim = s->dim;
    p->layers = s->layers;
    p->heads = s->heads;
    p->kv_heads = s->kv_heads;
    p->ff = s->ff;
    p->vocab = s->vocab;
    p->ctx = s->ctx;
}

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
            "--experts-type T  type of the experts' stacks (default --type); the router (ffn_gate_inp)\n"
            "                  then stays f32, as llama-quantize keeps it: --type q8_0 --experts-type\n"
            "                  mxfp4 writes the bytes of llama-quantize's MXFP4_MOE\n"
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
            "--pooling none|mean|cls|last|rank   write ARCH.pooling_type (how embeddings pool)\n"
            "--rope-scaling none|linear|yarn|longrope [--rope-factor F] [--rope-orig-ctx N]\n"
            "                  [--rope-attn-factor F]   the rope.scaling.* keys\n"
            "--f32-key SUFFIX=F   write the key ARCH.SUFFIX as an f32 (up to 4; e.g.\n"
            "                  rope.scaling.yarn_beta_fast=16)\n"
            "--key SUFFIX=V    an architecture's own key ARCH.SUFFIX (up to 12; deepseek2:\n"
            "                  attention.kv_lora_rank=32, expert_gating_func=2, ...)\n"
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
    *o = (synth_opts){.p = tport_synth_params_default(), .type_name = "f32"};
    tport_synth_params *p = &o->p;
    apply_shape(p, &default_shape);
    struct {
        const char *flag;
        uint32_t *field;
        uint32_t lo, hi;
        bool set;
        uint32_t value;
    } dims[] = {
        {"--dim", &p->dim, 2, 65536, false, 0},
        {"--layers", &p->layers, 1, SYNTH_MAX_LAYERS, false, 0},
        {"--heads", &p->heads, 1, 1024, false, 0},
        {"--kv-heads", &p->kv_heads, 1, 1024, false, 0},
        {"--ff", &p->ff, 1, 1u << 20, false, 0},
        {"--vocab", &p->vocab, 1, 1u << 24, false, 0},
        {"--ctx", &p->ctx, 1, 1u << 24, false, 0},
        {"--head-size", &p->head_size, 2, 65536, false, 0},
        {"--rot", &p->rot, 2, 65536, false, 0},
        {"--window", &p->window, 1, 1u << 24, false, 0},
        {"--experts", &p->experts, 1, 4096, false, 0},
        {"--experts-used", &p->experts_used, 1, 256, false, 0},
        {"--expert-ff", &p->expert_ff, 1, 1u << 20, false, 0},
        {"--shared-ff", &p->shared_ff, 1, 1u << 20, false, 0},
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
            if (!v || !tool_arch_known(v))
                return tool_fail(2, "synth: --arch needs one of %s", tool_arch_list(archs, sizeof archs));
            p->arch = v;
            i++;
        } else if (!strcmp(a, "--no-parallel-residual")) {
            p->parallel_residual = false;
        } else if (!strcmp(a, "--out-gain") || !strcmp(a, "--norm-noise")) {
            char *end = NULL;
            float f = v ? strtof(v, &end) : -1.0f;
            bool gain = !strcmp(a, "--out-gain");
            if (!v || *end || !(gain ? f > 0.0f && f <= 1e3f : f >= 0.0f && f < 1.0f))
                return tool_fail(2, gain ? "synth: --out-gain needs a number in (0, 1000]"
                                         : "synth: --norm-noise needs a number in [0, 1)");
            *(gain ? &p->out_gain : &p->norm_noise) = f;
            i++;
        } else if (!strcmp(a, "--rope-base") || !strcmp(a, "--rope-base-swa") || !strcmp(a, "--rope-linear") ||
                   !strcmp(a, "--attn-softcap") || !strcmp(a, "--logit-softcap")) {
            char *end = NULL;
            float f = v ? strtof(v, &end) : -1.0f;
            if (!v || *end || !(f > 0.0f) || f > 1e9f)
                return tool_fail(2, "synth: %s needs a number > 0", a);
            *(!strcmp(a, "--rope-base")       ? &p->rope_base
              : !strcmp(a, "--rope-base-swa") ? &p->rope_base_swa
              : !strcmp(a, "--rope-linear")   ? &p->rope_linear
              : !strcmp(a, "--attn-softcap")  ? &p->attn_softcap
                                              : &p->logit_softcap) = f;
            i++;
        } else if (!strcmp(a, "--with")) {
            if (!v || p->n_with == TPORT_SYNTH_MAX_WITH)
                return tool_fail(2, "synth: --with needs a tensor name (at most %d)", TPORT_SYNTH_MAX_WITH);
            p->with[p->n_with++] = v;
            i++;
        } else if (!strcmp(a, "--rope-scaling")) {
            if (!v || (strcmp(v, "none") && strcmp(v, "linear") && strcmp(v, "yarn") && strcmp(v, "longrope")))
                return tool_fail(2, "synth: --rope-scaling needs none, linear, yarn or longrope");
            p->rope_scaling = v;
            i++;
        } else if (!strcmp(a, "--rope-factor") || !strcmp(a, "--rope-attn-factor")) {
            char *end = NULL;
            float f = v ? strtof(v, &end) : -1.0f;
            if (!v || *end || !(f > 0.0f) || f > 1e6f)
                return tool_fail(2, "synth: %s needs a number > 0", a);
            *(!strcmp(a, "--rope-factor") ? &p->rope_factor : &p->rope_attn_factor) = f;
            i++;
        } else if (!strcmp(a, "--f32-key")) {
            const char *eq = v ? strchr(v, '=') : NULL;
            char *end = NULL;
            float f = eq ? strtof(eq + 1, &end) : 0.0f;
            int k = p->n_f32_keys;
            if (!eq || eq == v || !eq[1] || *end || k == TPORT_SYNTH_MAX_F32_KEYS || !(f == f) ||
                (size_t)(eq - v) >= sizeof o->f32_suffix[k])
                return tool_fail(2, "synth: --f32-key needs SUFFIX=NUMBER (at most %d)", TPORT_SYNTH_MAX_F32_KEYS);
            snprintf(o->f32_suffix[k], sizeof o->f32_suffix[k], "%.*s", (int)(eq - v), v);
            p->f32_key_suffix[k] = o->f32_suffix[k];
            p->f32_key_value[k] = f;
            p->n_f32_keys++;
            i++;
        } else if (!strcmp(a, "--key")) {
            const char *eq = v ? strchr(v, '=') : NULL;
            char *end = NULL;
            double f = eq ? strtod(eq + 1, &end) : 0.0;
            int k = p->n_keys;
            if (!eq || eq == v || !eq[1] || *end || k == TPORT_SYNTH_MAX_KEYS || !(f == f) || eq - v > 64)
                return tool_fail(2, "synth: --key needs SUFFIX=NUMBER (at most %d)", TPORT_SYNTH_MAX_KEYS);
            snprintf(o->key_suffix[k], sizeof o->key_suffix[k], "%.*s", (int)(eq - v), v);
            p->key_suffix[k] = o->key_suffix[k];
            p->key_value[k] = f;
            p->n_keys++;
            i++;
        } else if (!strcmp(a, "--tensor-type")) {
            const char *eq = v ? strchr(v, '=') : NULL;
            int k = p->n_tensor_types;
            if (!eq || eq == v || !eq[1] || k == TPORT_SYNTH_MAX_TENSOR_TYPES ||
                (size_t)(eq - v) >= sizeof o->tensor_type_name[k])
                return tool_fail(2, "synth: --tensor-type needs NAME=TYPE (at most %d)", TPORT_SYNTH_MAX_TENSOR_TYPES);
            snprintf(o->tensor_type_name[k], sizeof o->tensor_type_name[k], "%.*s", (int)(eq - v), v);
            o->tensor_type_arg[k] = v;
            p->tensor_type_name[k] = o->tensor_type_name[k];
            p->n_tensor_types++;
            i++;
        } else if (!strcmp(a, "--pooling")) {
            if (!v)
                return tool_fail(2, "synth: --pooling needs none|mean|cls|last|rank");
            p->pooling = v; /* checked by tport_synth_write */
            i++;
        } else if (!strcmp(a, "--rope-orig-ctx")) {
            if (!parse_u32(v, 1, 1u << 24, &p->rope_orig_ctx))
                return tool_fail(2, "synth: --rope-orig-ctx needs a number in [1, 16777216]");
            i++;
        } else if (!strcmp(a, "--alibi-bias") || !strcmp(a, "--clamp-kqv")) {
            char *end = NULL;
            float f = v ? strtof(v, &end) : -1.0f;
            if (!v || *end || !(f >= 0.0f) || f > 1e6f)
                return tool_fail(2, "synth: %s needs a number >= 0", a);
            *(!strcmp(a, "--alibi-bias") ? &p->alibi_bias : &p->clamp_kqv) = f;
            i++;
        } else if (!strcmp(a, "--shape")) {
            const synth_shape *s = v ? find_shape(v) : NULL;
            if (!s)
                return tool_fail(2, "synth: --shape needs one of stories15M, stories110M, tinyllama-1.1b");
            apply_shape(p, s);
            i++;
        } else if (!strcmp(a, "--type")) {
            if (!v)
                return tool_fail(2, "synth: --type needs a type name");
            o->type_name = v;
            i++;
        } else if (!strcmp(a, "--experts-type")) {
            if (!v)
                return tool_fail(2, "synth: --experts-type needs a type name");
            o->experts_type_name = v;
            i++;
        } else if (!strcmp(a, "--vocab-from")) {
            if (!v)
                return tool_fail(2, "synth: --vocab-from needs a GGUF file");
            p->vocab_from = v;
            i++;
        } else if (!strcmp(a, "--seed")) {
            errno = 0;
            char *end = NULL;
            if (!v || !*v || *v == '-')
                return tool_fail(2, "synth: --seed needs a non-negative number");
            p->seed = strtoull(v, &end, 10);
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
    bool heads_set = false;
    for (size_t k = 0; k < n_dims; k++) {
        if (dims[k].set)
            *dims[k].field = dims[k].value;
        heads_set |= dims[k].set && !strcmp(dims[k].flag, "--heads");
        o->vocab_set |= dims[k].set && !strcmp(dims[k].flag, "--vocab");
    }
    if (heads_set && !kv_heads_set)
        p->kv_heads = p->heads; /* plain multi-head attention */
    if (!o->out) {
        usage(stderr);
        return tool_fail(2, "synth: no output file (-o FILE.gguf)");
    }
    return 0;
}

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

/* ---- command ------------------------------------------------------------ */

typedef struct progress_state {
    const char *path;
    int last_percent;         /* -1: nothing shown yet */
} progress_state;

/* Progress on stderr for files of 64 MiB of weights or more. */
static void progress(void *user, uint64_t done, uint64_t total) {
    progress_state *ps = user;
    if (total < (64u << 20))
        return;
    if (ps->last_percent < 0)
        fprintf(stderr, "synth: writing %s (%.0f MiB of weights)\n", ps->path, (double)total / 1048576.0);
    int percent = (int)(done * 100 / total);
    if (ps->last_percent < 0 || percent >= ps->last_percent + 10 || done == total) {
        fprintf(stderr, "synth: %3d%% (%.0f of %.0f MiB)\n", percent, (double)done / 1048576.0,
                (double)total / 1048576.0);
        ps->last_percent = percent;
    }
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
    o.p.type = (tport_type_id)type->info.id;
    for (int k = 0; k < o.p.n_tensor_types; k++) {
        const tport_type_traits *tt = find_type(strchr(o.tensor_type_arg[k], '=') + 1);
        if (!tt)
            return tool_fail(2, "synth: --tensor-type %s: unknown type or no quantizer for it", o.tensor_type_arg[k]);
        o.p.tensor_type[k] = (tport_type_id)tt->info.id;
    }
    if (o.experts_type_name) {
        const tport_type_traits *et = find_type(o.experts_type_name);
        if (!et)
            return tool_fail(2, "synth: unknown --experts-type '%s' or no quantizer for it (tport types lists them)",
                             o.experts_type_name);
        o.p.experts_type_set = true;
        o.p.experts_type = (tport_type_id)et->info.id;
    }
    progress_state ps = {.path = o.out, .last_percent = -1};
    o.p.progress = progress;
    o.p.progress_user = &ps;
    tport_synth_report r;
    tport_status st = tport_synth_write(&o.p, o.out, &r);
    if (st != TPORT_STATUS_OK)
        return tool_fail(st == TPORT_STATUS_INVALID_ARGUMENT ? 2 : 1, "%s", tport_last_error());
    if (o.p.vocab_from && o.vocab_set && r.vocab != o.p.vocab)
        fprintf(stderr, "synth: vocabulary of %s has %" PRIu32 " tokens; using that instead of %" PRIu32 "\n",
                o.p.vocab_from, r.vocab, o.p.vocab);
    if (r.n_fallback_block)
        fprintf(stderr, "synth: %d of %d weights have rows that are not a multiple of %s's block of %d; "
                "they use %s (as llama.cpp's quantizer does)\n", r.n_fallback_block, r.n_weights,
                type->info.name, (int)type->info.block_size, tport_traits(r.fallback_type)->info.name);
    if (r.n_fallback_f16)
        fprintf(stderr, "synth: %d of %d weights have rows that fit no block of %s; they use f16\n",
                r.n_fallback_f16, r.n_weights, type->info.name);
    printf("wrote %s: %s, dim %" PRIu32 ", %" PRIu32 " layers, %" PRIu32 " heads (%" PRIu32 " kv), ff %" PRIu32
           ", vocab %" PRIu32 ", ctx %" PRIu32 ", %s, %d tensors, %.2f MiB\n",
           o.out, o.p.arch, o.p.dim, o.p.layers, o.p.heads, o.p.kv_heads, o.p.ff, r.vocab, o.p.ctx,
           type->info.name, r.n_tensors, (double)r.weight_bytes / 1048576.0);
    return 0;
}
