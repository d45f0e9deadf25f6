/* tport_synth_write (tport/synth.h): a GGUF file of any architecture of
 * the table with random weights.  The architecture's table says which
 * tensors, of which shapes, and which keys; this file adds the numbers. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "model/arch/arch.h"
#include "model/model.h"
#include "tport/gguf.h"
#include "tport/model_file.h"
#include "tport/synth.h"
#include "tport/types.h"

#define SYNTH_MAX_LAYERS 512
#define SYNTH_MAX_TENSORS (16 + 24 * SYNTH_MAX_LAYERS)
#define SYNTH_MIN_VOCAB 259 /* <unk> <s> </s> and 256 byte tokens */
#define SYNTH_NAME_LEN 64

typedef struct synth_tensor {
    char name[SYNTH_NAME_LEN];
    tport_type_id type;
    int n_dims;
    int64_t ne[3];            /* ne[2]: experts of a stack, else 1 */
    bool is_norm;
    bool is_bias;
    bool typed;               /* tensor_type chose its type */
    float gain;               /* the weights' amplitude is gain * sqrt(3 / fan_in) */
} synth_tensor;

typedef struct synth_ctx {
    const tport_synth_params *p;
    const tport_arch *arch;
    int n_tensors;
    synth_tensor tensors[SYNTH_MAX_TENSORS];
    bool too_many;       /* the plan had more than SYNTH_MAX_TENSORS    */
    float *row;          /* scratch: one row of floats                 */
    int64_t row_cap;
} synth_ctx;

tport_synth_params tport_synth_params_default(void) {
    return (tport_synth_params){.arch = "llama", .shape_name = "tiny", .dim = 256, .layers = 2, .heads = 4,
                                .kv_heads = 4, .ff = 512, .vocab = 512, .ctx = 256, .parallel_residual = true,
                                .alibi_bias = 8.0f, .out_gain = 1.0f, .type = TPORT_TYPE_F32, .seed = 1};
}

/* ---- types ------------------------------------------------------------- */

static bool type_fits(tport_type_id type, int64_t ne0) {
    const tport_type_traits *t = tport_traits(type);
    return t && t->from_float && t->info.block_size > 0 && ne0 % t->info.block_size == 0;
}

/* The type a weight with rows of ne0 gets: the requested one, or the
 * fallback llama.cpp's quantizer uses when ne0 is not a multiple of the
 * block (256-blocks to a 32-block type), or F16 when that fails too. */
static tport_type_id weight_type(tport_type_id want, int64_t ne0) {
    if (type_fits(want, ne0))
        return want;
    static const struct {
        tport_type_id type, fallback;
    } fallbacks[] = {
        {TPORT_TYPE_Q2_K, TPORT_TYPE_Q4_0}, {TPORT_TYPE_Q3_K, TPORT_TYPE_Q4_0},
        {TPORT_TYPE_Q4_K, TPORT_TYPE_Q5_0}, {TPORT_TYPE_Q5_K, TPORT_TYPE_Q5_1},
        {TPORT_TYPE_Q6_K, TPORT_TYPE_Q8_0}, {TPORT_TYPE_IQ4_XS, TPORT_TYPE_IQ4_NL},
    };
    for (size_t i = 0; i < sizeof fallbacks / sizeof fallbacks[0]; i++)
        if (fallbacks[i].type == want && type_fits(fallbacks[i].fallback, ne0))
            return fallbacks[i].fallback;
    return TPORT_TYPE_F16;
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
static tport_model_shape model_shape(const tport_synth_params *o, const tport_arch *arch) {
    const tport_synth_params *s = o;
    tport_model_shape sh = {
        .n_vocab = (int32_t)s->vocab, .n_ctx = (int32_t)s->ctx, .n_ctx_train = (int32_t)s->ctx,
        .n_embd = (int32_t)s->dim, .n_ff = (int32_t)s->ff, .n_layer = (int32_t)s->layers,
        .n_head = (int32_t)s->heads, .n_head_kv = (int32_t)s->kv_heads,
        .head_dim = (int32_t)(o->head_size ? o->head_size : s->dim / s->heads),
        .norm_eps = 1e-5f, .rope_base = o->rope_base > 0 ? o->rope_base : 10000.0f,
        .rope_scale = o->rope_linear > 0 ? 1.0f / o->rope_linear : 1.0f, .rope_mode = arch->rope_mode,
        .parallel_residual = o->parallel_residual, .max_alibi_bias = o->alibi_bias, .clamp_kqv = o->clamp_kqv,
        .n_swa = (int32_t)o->window, .rope_base_swa = o->rope_base_swa, .attn_softcap = o->attn_softcap,
        .logit_softcap = o->logit_softcap,
    };
    sh.n_rot = o->rot ? (int32_t)o->rot : sh.head_dim;
    sh.n_expert = (int32_t)o->experts;
    sh.n_expert_used = (int32_t)o->experts_used;
    /* BERT's token types: two ("sentence A/B"), where the table has them */
    for (int k = 0; k < arch->n_tensors; k++)
        if (arch->tensors[k].ne1 == DIM_TOKEN_TYPES)
            sh.n_token_types = 2;
    /* the experts' widths only where the table uses them (llama.cpp's
     * defaults: n_ff / n_used for an expert, n_ff for the shared one) */
    for (int k = 0; k < arch->n_tensors && o->experts; k++) {
        const tport_arch_tensor *t = &arch->tensors[k];
        if (t->ne0 == DIM_FF_EXP || t->ne1 == DIM_FF_EXP)
            sh.n_ff_exp = (int32_t)(o->expert_ff ? o->expert_ff : s->ff / o->experts_used);
        if (t->ne0 == DIM_FF_SHEXP || t->ne1 == DIM_FF_SHEXP)
            sh.n_ff_shexp = (int32_t)(o->shared_ff ? o->shared_ff : s->ff);
    }
    /* the architecture's own keys, then their consequences for the shape */
    for (int k = 0; k < o->n_keys && arch->synth_key; k++)
        arch->synth_key(&sh, o->key_suffix[k], o->key_value[k]);
    if (arch->synth_key)
        arch->synth_key(&sh, NULL, 0.0);
    return sh;
}

static void add_table_tensor(synth_ctx *c, const tport_arch_tensor *t, const tport_model_shape *sh, int layer,
                             tport_type_id type) {
    if (c->n_tensors == SYNTH_MAX_TENSORS) { /* 24 layer rows a layer or fewer fit */
        c->too_many = true;
        return;
    }
    char name[SYNTH_NAME_LEN];
    if (t->flags & TENSOR_LAYER)
        snprintf(name, sizeof name, t->name, layer);
    else
        snprintf(name, sizeof name, "%s", t->name);
    int n_dims = t->ne1 == DIM_1 ? 1 : t->ne2 ? 3 : 2;
    add_tensor(c, name, type, n_dims, tport_arch_dim_size(sh, t->ne0), n_dims == 1 ? 1 : tport_arch_dim_size(sh, t->ne1),
               t->ne2 ? tport_arch_dim_size(sh, t->ne2) : 1);
    c->tensors[c->n_tensors - 1].is_bias = (t->flags & TENSOR_BIAS) != 0;
    if (t->flags & TENSOR_BIAS) /* a row per expert too: f32, as converters write biases */
        c->tensors[c->n_tensors - 1].type = TPORT_TYPE_F32;
    /* the table's slot says which weights write into the residual stream */
    bool residual = (t->flags & TENSOR_LAYER) &&
                    (t->slot == offsetof(tport_layer, wo) || t->slot == offsetof(tport_layer, w_down) ||
                     t->slot == offsetof(tport_layer, ffn_down_exps) || t->slot == offsetof(tport_layer, ffn_down_shexp));
    /* a post-norm (gemma2, gemma3) is what writes the residual after its
     * projection, whose scale it normalizes away: it takes the gain */
    bool post_norm = (t->flags & TENSOR_LAYER) && (t->slot == offsetof(tport_layer, attn_post_norm) ||
                                                   t->slot == offsetof(tport_layer, ffn_post_norm));
    c->tensors[c->n_tensors - 1].gain = (residual && n_dims >= 2) || post_norm ? c->p->out_gain : 1.0f;
}

/* A tensor synth leaves out unless --with names it. */
static bool wanted(const tport_synth_params *p, const tport_arch_tensor *t) {
    for (int i = 0; i < p->n_with; i++)
        if (!strcmp(p->with[i], t->flags & TENSOR_LAYER ? t->name + strlen("blk.%d.") : t->name))
            return true;
    return false;
}

/* A layer tensor's type: the stacks' with experts_type_set, and then the
 * router f32 (llama-quantize never quantizes ffn_gate_inp); else type. */
static tport_type_id layer_type(const tport_synth_params *p, const tport_arch_tensor *t, tport_type_id type) {
    if (t->ne2 && p->experts_type_set)
        return p->experts_type;
    if (p->experts_type_set && t->slot == offsetof(tport_layer, ffn_gate_inp))
        return TPORT_TYPE_F32;
    return type;
}

/* In the table's order, except that the model-level tensors listed after
 * the first per-layer one come after all layers (as converters write). */
static void plan_tensors(synth_ctx *c, tport_type_id type) {
    const tport_synth_params *o = c->p;
    const tport_arch *arch = c->arch;
    tport_model_shape sh = model_shape(o, arch);
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
    for (uint32_t l = 0; l < o->layers; l++)
        for (int k = 0; k < arch->n_tensors; k++)
            if ((arch->tensors[k].flags & TENSOR_LAYER) &&
                (!(arch->tensors[k].flags & TENSOR_NO_SYNTH) || wanted(o, &arch->tensors[k])) &&
                tport_arch_layer_row_applies(&arch->tensors[k], &sh, (int)l))
                add_table_tensor(c, &arch->tensors[k], &sh, (int)l, layer_type(o, &arch->tensors[k], type));
}

/* tensor_type: each names a 2-D tensor of the plan and a type whose block
 * fits its rows (a recorded mix is applied exactly or refused). */
static tport_status apply_tensor_types(synth_ctx *c, const tport_synth_params *p) {
    for (int k = 0; k < p->n_tensor_types; k++) {
        const char *name = p->tensor_type_name[k];
        int i = 0;
        while (name && i < c->n_tensors && strcmp(c->tensors[i].name, name))
            i++;
        if (!name || i == c->n_tensors || c->tensors[i].n_dims < 2)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "synth: --tensor-type %s: no such 2-D tensor",
                               name ? name : "(null)");
        const tport_type_traits *ty = tport_traits(p->tensor_type[k]);
        if (!ty || !ty->from_float || !type_fits(p->tensor_type[k], c->tensors[i].ne[0]))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                               "synth: --tensor-type %s: no quantizer for the type, or its block does not divide "
                               "the rows", name);
        c->tensors[i].type = p->tensor_type[k];
        c->tensors[i].typed = true;
    }
    return TPORT_STATUS_OK;
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
    uint64_t state = c->p->seed ^ name_hash(t->name);
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
                double u = c->p->norm_noise > 0.0f ? (double)(splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0)
                                                : 0.5;
                c->row[i] = (float)((double)t->gain * (1.0 + (2.0 * u - 1.0) * (double)c->p->norm_noise));
            } else {
                double u = (double)(splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0); /* [0,1) */
                c->row[i] = (float)((2.0 * u - 1.0) * a);
            }
        }
        tr->from_float(c->row, out + (size_t)r * row_bytes, t->ne[0]);
    }
    return TPORT_STATUS_OK;
}

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

/* The index is the key's value (tport_pooling); -1: not a name. */
static const char *const pooling_names[] = {"none", "mean", "cls", "last", "rank"};

static int pooling_value(const char *name) {
    for (int i = 0; i < (int)(sizeof pooling_names / sizeof pooling_names[0]); i++)
        if (name && !strcmp(name, pooling_names[i]))
            return i;
    return -1;
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

static tport_status set_metadata(tport_gguf_writer *w, const tport_synth_params *p, const tport_arch *arch) {
    const tport_type_traits *type = tport_traits(p->type);
    char name[128], desc[160];
    snprintf(name, sizeof name, "synthetic %s %s", p->shape_name ? p->shape_name : "custom", type->info.name);
    snprintf(desc, sizeof desc, "random weights written by tport synth (seed %" PRIu64 ")", p->seed);
    TRY(tport_gguf_set_str(w, "general.architecture", arch->name));
    TRY(tport_gguf_set_str(w, "general.name", name));
    TRY(tport_gguf_set_str(w, "general.description", desc));
    TRY(tport_gguf_set_u32(w, "general.file_type", type->file_type > 0 ? (uint32_t)type->file_type : 0));
    TRY(tport_gguf_set_u32(w, "general.quantization_version", 2));
    tport_model_shape sh = model_shape(p, arch);
    TRY(tport_arch_write_common_keys(w, arch, &sh));
    if (arch->write_keys)
        TRY(arch->write_keys(w, &sh));
    char key[128];
    if (p->rope_scaling) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch->name);
        TRY(tport_gguf_set_str(w, key, p->rope_scaling));
    }
    if (p->rope_factor > 0.0f) {
        snprintf(key, sizeof key, "%s.rope.scaling.factor", arch->name);
        TRY(tport_gguf_set_f32(w, key, p->rope_factor));
    }
    if (p->rope_orig_ctx) {
        snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch->name);
        TRY(tport_gguf_set_u32(w, key, p->rope_orig_ctx));
    }
    if (p->rope_attn_factor > 0.0f) {
        snprintf(key, sizeof key, "%s.rope.scaling.attn_factor", arch->name);
        TRY(tport_gguf_set_f32(w, key, p->rope_attn_factor));
    }
    for (int i = 0; i < p->n_f32_keys; i++) {
        snprintf(key, sizeof key, "%s.%s", arch->name, p->f32_key_suffix[i]);
        TRY(tport_gguf_set_f32(w, key, p->f32_key_value[i]));
    }
    if (p->pooling) {
        snprintf(key, sizeof key, "%s.pooling_type", arch->name);
        TRY(tport_gguf_set_u32(w, key, (uint32_t)pooling_value(p->pooling)));
    }
    return TPORT_STATUS_OK;
}

/* ---- checks ------------------------------------------------------------- */


#define BAD(...) tport_error(TPORT_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

static tport_status check_params(const tport_synth_params *p, const tport_arch *arch) {
    if (!arch)
        return BAD("synth: architecture '%s' is not one this build runs", p->arch ? p->arch : "(null)");
    const tport_type_traits *type = tport_traits(p->type);
    if (!type || !type->from_float || !tport_type_is_weight(type) || strcmp(type->revision, "current"))
        return BAD("synth: type %d has no reference quantizer of a current layout", (int)p->type);
    if (p->dim < 2 || p->layers < 1 || p->layers > SYNTH_MAX_LAYERS || p->heads < 1 || p->kv_heads < 1 ||
        p->ff < 1 || p->vocab < 1 || p->ctx < 1)
        return BAD("synth: dim >= 2, 1..%d layers and at least one head, kv head, ff unit, token and "
                   "context position are needed", SYNTH_MAX_LAYERS);
    if (p->n_with < 0 || p->n_with > TPORT_SYNTH_MAX_WITH || p->n_f32_keys < 0 ||
        p->n_f32_keys > TPORT_SYNTH_MAX_F32_KEYS)
        return BAD("synth: at most %d optional tensors and %d f32 keys", TPORT_SYNTH_MAX_WITH,
                   TPORT_SYNTH_MAX_F32_KEYS);
    for (int w = 0; w < p->n_with; w++) {
        bool known = false;
        for (int k = 0; k < arch->n_tensors && !known; k++) {
            const tport_arch_tensor *t = &arch->tensors[k];
            known = p->with[w] && !strcmp(p->with[w], t->flags & TENSOR_LAYER ? t->name + strlen("blk.%d.") : t->name);
        }
        if (!known)
            return BAD("synth: --with %s: %s has no such tensor", p->with[w] ? p->with[w] : "(null)", arch->name);
    }
    if (!p->head_size && p->dim % p->heads)
        return BAD("synth: dim %" PRIu32 " is not a multiple of heads %" PRIu32, p->dim, p->heads);
    uint32_t hs = p->head_size ? p->head_size : p->dim / p->heads;
    if (arch->rope_mode >= 0 && hs % 2)
        return BAD("synth: head size %" PRIu32 " must be even (rotary embedding)", hs);
    if (p->rot && (p->rot > hs || p->rot % 2))
        return BAD("synth: --rot %" PRIu32 " must be even and at most the head size %" PRIu32, p->rot, hs);
    if (p->experts && (!p->experts_used || p->experts_used > p->experts))
        return BAD("synth: --experts %" PRIu32 " needs --experts-used in 1..%" PRIu32, p->experts, p->experts);
    if (!p->experts && (p->experts_used || p->expert_ff || p->shared_ff || p->experts_type_set))
        return BAD("synth: --experts-used, --expert-ff, --shared-ff and --experts-type need --experts");
    const tport_type_traits *et = p->experts_type_set ? tport_traits(p->experts_type) : NULL;
    if (p->experts_type_set &&
        (!et || !et->from_float || !tport_type_is_weight(et) || strcmp(et->revision, "current")))
        return BAD("synth: experts type %d has no reference quantizer of a current layout", (int)p->experts_type);
    if (p->kv_heads > p->heads || p->heads % p->kv_heads)
        return BAD("synth: heads %" PRIu32 " is not a multiple of kv-heads %" PRIu32, p->heads, p->kv_heads);
    if (p->n_tensor_types < 0 || p->n_tensor_types > TPORT_SYNTH_MAX_TENSOR_TYPES)
        return BAD("synth: at most %d tensors of their own type", TPORT_SYNTH_MAX_TENSOR_TYPES);
    if (p->n_keys < 0 || p->n_keys > TPORT_SYNTH_MAX_KEYS)
        return BAD("synth: at most %d architecture keys", TPORT_SYNTH_MAX_KEYS);
    for (int k = 0; k < p->n_keys; k++) {
        tport_model_shape probe = {0};
        const char *suffix = p->key_suffix[k];
        if (!suffix || !suffix[0] || strlen(suffix) > 64 || !(p->key_value[k] == p->key_value[k]) ||
            !arch->synth_key || !arch->synth_key(&probe, suffix, p->key_value[k]))
            return BAD("synth: --key %s: not a key of %s", suffix ? suffix : "(null)", arch->name);
    }
    for (int i = 0; i < p->n_f32_keys; i++)
        if (!p->f32_key_suffix[i] || !p->f32_key_suffix[i][0] || strlen(p->f32_key_suffix[i]) > 96)
            return BAD("synth: an f32 key needs a suffix of 1 to 96 characters");
    if (p->pooling && pooling_value(p->pooling) < 0)
        return BAD("synth: pooling '%s' is none of none, mean, cls, last, rank", p->pooling);
    return TPORT_STATUS_OK;
}

/* ---- the file ------------------------------------------------------------ */

tport_status tport_synth_write(const tport_synth_params *p_in, const char *path, tport_synth_report *report) {
    if (!p_in || !path)
        return BAD("synth: no parameters or no output file");
    tport_synth_params p = *p_in; /* the vocabulary of --vocab-from replaces p.vocab */
    const tport_arch *arch = tport_arch_find(p.arch ? p.arch : "llama");
    TRY(check_params(&p, arch));
    synth_ctx *c = calloc(1, sizeof *c);
    tport_gguf_writer *w = tport_gguf_writer_new();
    tport_status st = TPORT_STATUS_OK;
    tport_synth_report r = {0};
    if (!c || !w) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "synth: out of memory");
        goto done;
    }
    /* general.* and ARCH.* first, as llama.cpp's converter orders them. */
    st = set_metadata(w, &p, arch);
    if (st != TPORT_STATUS_OK)
        goto done;
    if (p.vocab_from) {
        uint32_t n_vocab = 0;
        st = copy_vocab(w, p.vocab_from, &n_vocab);
        if (st == TPORT_STATUS_OK && n_vocab != p.vocab) {
            p.vocab = n_vocab;
            char key[96];
            snprintf(key, sizeof key, "%s.vocab_size", arch->name);
            st = tport_gguf_set_u32(w, key, n_vocab);
        }
    } else {
        st = set_generated_vocab(w, p.vocab);
    }
    if (st != TPORT_STATUS_OK)
        goto done;

    c->p = &p;
    c->arch = arch;
    plan_tensors(c, p.type);
    if (c->too_many) {
        st = BAD("synth: %s with %" PRIu32 " layers has more than %d tensors", arch->name, p.layers,
                 SYNTH_MAX_TENSORS);
        goto done;
    }
    st = apply_tensor_types(c, &p);
    if (st != TPORT_STATUS_OK)
        goto done;
    c->row = malloc((size_t)c->row_cap * sizeof *c->row);
    if (!c->row) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "synth: out of memory");
        goto done;
    }
    r.vocab = p.vocab;
    r.n_tensors = c->n_tensors;
    r.fallback_type = TPORT_TYPE_F16;
    for (int i = 0; i < c->n_tensors && st == TPORT_STATUS_OK; i++) {
        const synth_tensor *t = &c->tensors[i];
        bool own_type = p.experts_type_set && (t->ne[2] > 1 || strstr(t->name, "ffn_gate_inp.weight"));
        if (!t->is_norm && !t->is_bias && !own_type && !t->typed) {
            r.n_weights++;
            if (t->type == TPORT_TYPE_F16 && p.type != TPORT_TYPE_F16)
                r.n_fallback_f16++;
            else if (t->type != p.type) {
                r.n_fallback_block++;
                r.fallback_type = t->type;
            }
        }
        r.weight_bytes += (uint64_t)tport_row_size(t->type, t->ne[0]) * (uint64_t)(t->ne[1] * t->ne[2]);
        st = tport_gguf_add_tensor_fill(w, t->name, t->type, t->n_dims, t->ne, fill_tensor, c);
    }
    if (st != TPORT_STATUS_OK)
        goto done;
    if (p.progress)
        tport_gguf_set_progress(w, p.progress, p.progress_user);
    st = tport_gguf_write(w, path);
    if (st == TPORT_STATUS_OK && report)
        *report = r;
done:
    tport_gguf_writer_free(w);
    if (c)
        free(c->row);
    free(c);
    return st;
}
