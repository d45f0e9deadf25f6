/* tport convert IN OUT.gguf [--type T]: any readable model file to GGUF v3
 * with the llama metadata llama.cpp expects, optionally requantizing the
 * 2-D weights.  Tensors in historical layouts (which no current reader
 * understands) are converted to the nearest current type.  With
 * --split-max-size / --split-max-tensors the output is a split GGUF laid
 * out as llama.cpp's gguf-split writes it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "convert_arch.h"
#include "imatrix_file.h"
#include "quant_mix.h"
#include "tport/gguf.h"
#include "tport/model_file.h"
#include "tport/types.h"
#include "tport/tport.h"

typedef struct plan {
    const tport_mf_tensor *src;
    tport_type_id to;
    const char *why; /* NULL: unchanged */
    int64_t heads, head_rows; /* > 0: per-head [q,k,v] rows to [Q|K|V] */
    bool mix;                 /* quantized row by row as llama-quantize does */
    const float *weights;     /* its importance matrix (ne[0] per expert), or NULL */
} plan;

typedef struct job {
    plan *plans;
    int n;
    bool progress;
    bool quiet;
    bool failed;
} job;

static const char *tname(tport_type_id t) {
    const tport_type_info *ti = tport_type_get(t);
    return ti && ti->name ? ti->name : "?";
}

/* The current type a tensor of a historical layout revision becomes: its
 * row's successor in the type table, f16 where the row length is not
 * whole blocks of it (QK64 rows of other than 256 elements). */
static tport_type_id nearest_current(const tport_mf_tensor *src) {
    const tport_type_traits *t = tport_traits(src->type);
    if (!t)
        return src->type;
    const tport_type_traits *to = tport_traits(t->successor);
    return to && src->ne[0] % to->info.block_size ? TPORT_TYPE_F16 : t->successor;
}

/* llama_ftype of a "mostly T" file (the type table's file_type; 0 for a
 * type no llama_ftype names). */
static uint32_t ftype_of(tport_type_id type) {
    const tport_type_traits *t = tport_traits(type);
    return t && t->file_type >= 0 ? (uint32_t)t->file_type : 0;
}

static int64_t n_elements(const tport_mf_tensor *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

static void progress_bar(void *user, uint64_t done, uint64_t total) {
    const job *j = user;
    if (!j->progress || total == 0)
        return;
    int w = 40, fill = (int)((double)done / (double)total * w);
    fprintf(stderr, "\r[%.*s%*s] %3d%%", fill, "########################################", w - fill, "",
            (int)(100.0 * (double)done / (double)total));
    if (done == total)
        fputc('\n', stderr);
}

static tport_status fill_converted(void *user, int i, void *dst, uint64_t nbytes);

static tport_status fill_tensor(void *user, int i, void *dst, uint64_t nbytes) {
    job *j = user;
    const plan *p = &j->plans[i];
    tport_status s = fill_converted(user, i, dst, nbytes);
    if (s == TPORT_STATUS_OK && p->heads > 0)
        s = convert_arch_deinterleave(dst, nbytes, p->src->ne[1] > 1 ? p->src->ne[1] : p->src->ne[0], p->heads,
                                      p->head_rows);
    return s;
}

/* llama-quantize's way: each row decoded to f32, then quantized by
 * ggml_quantize_chunk's rule with the importance weights of its expert. */
static tport_status fill_mix(job *j, const plan *p, void *dst) {
    const tport_mf_tensor *t = p->src;
    const int64_t ne0 = t->ne[0], rows_per_expert = t->ne[1], nrows = ne0 ? n_elements(t) / ne0 : 0;
    const size_t in_row = tport_row_size(t->type, ne0), out_row = tport_row_size(p->to, ne0);
    float *row = malloc(sizeof(float) * (size_t)(ne0 ? ne0 : 1));
    if (!row) {
        j->failed = true;
        return TPORT_STATUS_OUT_OF_MEMORY;
    }
    tport_status s = TPORT_STATUS_OK;
    for (int64_t r = 0; !s && r < nrows; r++) {
        const void *in = (const uint8_t *)t->data + (size_t)r * in_row;
        s = tport_dequantize(t->type, in, row, ne0);
        const float *w = p->weights ? p->weights + (r / rows_per_expert) * ne0 : NULL;
        if (!s)
            s = tport_quantize_rows(p->to, row, (uint8_t *)dst + (size_t)r * out_row, 1, ne0, w);
    }
    free(row);
    if (s) {
        j->failed = true;
        return s;
    }
    if (!j->quiet) {
        if (j->progress)
            fputc('\r', stderr);
        fprintf(stderr, "%-32s %-10s -> %-8s%s\n", t->name, tname(t->type), tname(p->to),
                p->weights ? "  (importance-weighted)" : "");
    }
    return TPORT_STATUS_OK;
}

static tport_status fill_converted(void *user, int i, void *dst, uint64_t nbytes) {
    job *j = user;
    const plan *p = &j->plans[i];
    if (p->mix && p->to != p->src->type)
        return fill_mix(j, p, dst);
    if (p->to == p->src->type) {
        memcpy(dst, p->src->data, (size_t)nbytes);
        return TPORT_STATUS_OK;
    }
    tport_conversion rep = {0};
    /* by rows: a row-grouped type converts only as a whole tensor */
    const int64_t ne0 = p->src->ne[0];
    tport_status s = tport_convert_rows(p->src->type, p->src->data, p->to, dst, ne0, ne0 ? n_elements(p->src) / ne0 : 0,
                                        &rep);
    if (s != TPORT_STATUS_OK) {
        j->failed = true;
        return s;
    }
    if (j->quiet)
        return TPORT_STATUS_OK;
    if (j->progress)
        fputc('\r', stderr);
    fprintf(stderr, "%-32s %-10s -> %-8s %-9s rmse %.3g max err %.3g%s%s\n", p->src->name, tname(p->src->type),
            tname(p->to), tport_conv_kind_name(rep.kind), rep.rmse, rep.max_abs_err, p->why ? "  " : "",
            p->why ? p->why : "");
    return TPORT_STATUS_OK;
}

/* Token types for a vocabulary that has none (pre-GGUF files), as the
 * GGUF converters derived them: unknown, control, byte, normal. */
static int32_t *derive_token_types(const tport_vocab *v) {
    int32_t *tt = malloc((size_t)(v->n_tokens ? v->n_tokens : 1) * sizeof *tt);
    if (!tt)
        return NULL;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        const char *s = v->tokens[i];
        unsigned hex;
        char end;
        if (i == v->unk)
            tt[i] = 2;
        else if (i == v->bos || i == v->eos)
            tt[i] = 3;
        else if (strlen(s) == 6 && sscanf(s, "<0x%2x%c", &hex, &end) == 2 && end == '>')
            tt[i] = 6;
        else
            tt[i] = 1;
    }
    return tt;
}

static tport_status set_tokenizer(tport_gguf_writer *w, const tport_model_file *mf, int32_t **owned_tt);

/* A pre-GGUF file of another architecture (the ggml examples' gpt-2, gpt-j,
 * gpt-neox): the reader already put its hyperparameters in the kv list
 * under GGUF's key names for the arch. */
static tport_status set_other_metadata(tport_gguf_writer *w, const tport_model_file *mf, int32_t **owned_tt) {
    tport_status s = tport_gguf_set_str(w, "general.architecture", mf->arch);
    const char *base = strrchr(mf->path, '/');
    s = s ? s : tport_gguf_set_str(w, "general.name", base ? base + 1 : mf->path);
    for (int i = 0; !s && i < mf->n_kv; i++)
        if (strncmp(mf->kv[i].key, "general.", 8))
            s = tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]);
    return s ? s : set_tokenizer(w, mf, owned_tt);
}

static tport_status set_llama_metadata(tport_gguf_writer *w, const tport_model_file *mf, int32_t **owned_tt) {
    const tport_mf_hparams *hp = &mf->hp;
    tport_status s = tport_gguf_set_str(w, "general.architecture", "llama");
    const char *base = strrchr(mf->path, '/');
    s = s ? s : tport_gguf_set_str(w, "general.name", base ? base + 1 : mf->path);
    s = s ? s : tport_gguf_set_u32(w, "llama.context_length", hp->n_ctx ? hp->n_ctx : 2048);
    s = s ? s : tport_gguf_set_u32(w, "llama.embedding_length", hp->n_embd);
    s = s ? s : tport_gguf_set_u32(w, "llama.block_count", hp->n_layer);
    s = s ? s : tport_gguf_set_u32(w, "llama.feed_forward_length", hp->n_ff);
    s = s ? s : tport_gguf_set_u32(w, "llama.rope.dimension_count", hp->n_rot);
    s = s ? s : tport_gguf_set_u32(w, "llama.attention.head_count", hp->n_head);
    s = s ? s : tport_gguf_set_u32(w, "llama.attention.head_count_kv", hp->n_head_kv);
    s = s ? s : tport_gguf_set_f32(w, "llama.attention.layer_norm_rms_epsilon", hp->norm_eps);
    s = s ? s : tport_gguf_set_f32(w, "llama.rope.freq_base", hp->rope_freq_base);
    if (!s && hp->rope_freq_scale != 1.0f) {
        s = tport_gguf_set_str(w, "llama.rope.scaling.type", "linear");
        s = s ? s : tport_gguf_set_f32(w, "llama.rope.scaling.factor", 1.0f / hp->rope_freq_scale);
    }
    return s ? s : set_tokenizer(w, mf, owned_tt);
}

static tport_status set_tokenizer(tport_gguf_writer *w, const tport_model_file *mf, int32_t **owned_tt) {
    const tport_vocab *v = &mf->vocab;
    tport_status s = TPORT_STATUS_OK;
    if (v->n_tokens <= 0)
        return s;
    s = tport_gguf_set_str(w, "tokenizer.ggml.model", v->model[0] ? v->model : "llama");
    s = s ? s : tport_gguf_set_array(w, "tokenizer.ggml.tokens", TPORT_KV_STRING, v->tokens, (uint64_t)v->n_tokens);
    if (!s && v->scores)
        s = tport_gguf_set_array(w, "tokenizer.ggml.scores", TPORT_KV_F32, v->scores, (uint64_t)v->n_tokens);
    const int32_t *tt = v->token_type;
    if (!tt)
        tt = *owned_tt = derive_token_types(v);
    if (!s && tt)
        s = tport_gguf_set_array(w, "tokenizer.ggml.token_type", TPORT_KV_I32, tt, (uint64_t)v->n_tokens);
    if (!s && v->bos >= 0)
        s = tport_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
    if (!s && v->eos >= 0)
        s = tport_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
    if (!s && v->unk >= 0)
        s = tport_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)v->unk);
    if (!s && v->pad >= 0)
        s = tport_gguf_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->pad);
    if (!s)
        s = tport_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    return s;
}

static void usage(FILE *f) {
    fprintf(f, "usage: tport convert IN OUT.gguf [--type T] [--vocab TOKENIZER.bin] [--vocab-from F.gguf] [--ctx N] [--quiet]\n"
               "                     [--split-max-size N[K|M|G]] [--split-max-tensors N]\n"
               "                     [--imatrix F] [--pure] [--output-tensor-type T] [--token-embedding-type T]\n\n"
               "Writes any readable model file (GGUF v1-v3, GGML, GGMF, GGJT v1-v3, llama2.c,\n"
               "safetensors, PyTorch .pth/.bin/.pt) as GGUF v3 with llama.cpp's metadata keys.\n"
               "A file holding only some of a model's tensors is written with all it has,\n"
               "after a warning naming what a complete model would also need.\n"
               "  --type T   a llama-quantize file type (Q4_K_M, Q5_K_S, IQ3_M, Q8_0, MXFP4_MOE, ...;\n"
               "             any case; --type list names them): each tensor gets the type\n"
               "             llama-quantize gives it, bytes as llama-quantize's, and general.file_type\n"
               "             is T's.  A tensor type that is no file type (nvfp4, q8_1, ...): every 2-D\n"
               "             weight becomes T; each converted tensor is listed with its conversion\n"
               "             kind and error\n"
               "  --imatrix F  an importance matrix (llama-imatrix's GGUF or legacy .dat file)\n"
               "             for the quantizers that take one; IQ1_*, IQ2_XXS/XS/S, IQ3_XXS and\n"
               "             Q2_K_S files need one, as with llama-quantize\n"
               "  --pure     with a file type: every tensor its base type (no mix)\n"
               "  --output-tensor-type T, --token-embedding-type T   with a file type: these\n"
               "             tensors' types\n"
               "  --vocab F  the vocabulary for a file without one (llama2.c checkpoints):\n"
               "             llama2.c's tokenizer.bin with as many tokens as the model\n"
               "  --vocab-from F  the tokenizer.* keys of a GGUF file with as many tokens, replacing\n"
               "             the file's vocabulary (the ggml examples' files have no BPE merges,\n"
               "             which llama.cpp requires: take them from ggml-vocab-gpt-2.gguf)\n"
               "  --ctx N    the context length to record (pre-GGUF files do not store one;\n"
               "             the default for them is LLaMA's 2048)\n"
               "  --quiet    no per-tensor lines, no progress bar\n"
               "  --split-max-size N[K|M|G]  write a split GGUF whose parts hold at most N bytes of\n"
               "             tensor data each (decimal units, as llama.cpp's gguf-split counts)\n"
               "  --split-max-tensors N      write a split GGUF of at most N tensors per part\n"
               "             A split is written as OUT-00001-of-0000K.gguf ... (OUT without its\n"
               "             .gguf), metadata in the first part, as gguf-split lays it out; with\n"
               "             both limits a part ends at whichever is reached first.\n"
               "             llama.cpp opens it from its first part, tport from any part.\n"
               "IN may be a split GGUF (any part), a safetensors file, shard, index or folder.\n"
               "Tensors in historical layouts (q4_0_qnt0, ...) become the nearest current type.\n");
}

/* "N", "NK", "NM", "NG": decimal units as gguf-split's --split-max-size. */
static bool parse_size(const char *s, uint64_t *out) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t unit = 1;
    if (*end == 'K' || *end == 'k')
        unit = 1000, end++;
    else if (*end == 'M' || *end == 'm')
        unit = 1000 * 1000, end++;
    else if (*end == 'G' || *end == 'g')
        unit = 1000 * 1000 * 1000, end++;
    if (end == s || *end || s[0] == '-' || v == 0 || v > UINT64_MAX / unit)
        return false;
    *out = (uint64_t)v * unit;
    return true;
}

/* OUT names the split's prefix; a trailing .gguf is not part of it. */
static char *split_prefix(const char *out) {
    size_t n = strlen(out);
    if (n > 5 && !strcmp(out + n - 5, ".gguf"))
        n -= 5;
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, out, n);
        p[n] = '\0';
    }
    return p;
}

static bool is_split_key(const char *key) {
    return !strcmp(key, "split.no") || !strcmp(key, "split.count") || !strcmp(key, "split.tensors.count");
}

static void list_mixes(void) {
    printf("llama-quantize file types (tport convert --type NAME):\n");
    for (int i = 0; qmix_at(i); i++)
        printf("  %-10s %2d  %s\n", qmix_at(i)->name, qmix_at(i)->ftype, qmix_at(i)->about);
}

/* A current tensor type named by --output-tensor-type and the like. */
static int64_t current_type(const char *name) {
    const int64_t t = tport_type_from_name(name);
    const tport_type_traits *tt = t >= 0 ? tport_traits((tport_type_id)t) : NULL;
    return tt && tt->successor == tt->info.id && tt->from_float ? t : -1;
}

/* The mix plan (quant_mix.h) of every tensor, under its output name, and
 * the importance weights of each, checked as llama-quantize checks them. */
static tport_status plan_mix(const tport_model_file *mf, const char *in, const qmix_ftype *ft, const qmix_options *o,
                             const tport_imatrix *im, job *j) {
    const int n = mf->n_tensors;
    qmix_tensor *qt = calloc((size_t)(n ? n : 1), sizeof *qt);
    char (*names)[128] = calloc((size_t)(n ? n : 1), sizeof *names);
    tport_type_id *types = calloc((size_t)(n ? n : 1), sizeof *types);
    bool *quant = calloc((size_t)(n ? n : 1), sizeof *quant);
    tport_status s = (!qt || !names || !types || !quant) ? TPORT_STATUS_OUT_OF_MEMORY : TPORT_STATUS_OK;
    for (int i = 0; !s && i < n; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        int64_t heads, head_rows;
        if (!tport_model_file_gguf_name(mf, t->name, names[i], sizeof names[i], &heads, &head_rows))
            snprintf(names[i], sizeof names[i], "%s", t->name);
        qt[i] = (qmix_tensor){.name = names[i], .n_dims = t->n_dims, .type = t->type};
        memcpy(qt[i].ne, t->ne, sizeof qt[i].ne);
    }
    const char *arch = mf->arch[0] ? mf->arch : "llama";
    const qmix_model m = {.arch = arch,
                          .n_layer = mf->hp.n_layer ? mf->hp.n_layer : tool_arch_u32(mf, arch, "block_count"),
                          .n_head = mf->hp.n_head,
                          .n_head_kv = mf->hp.n_head_kv ? mf->hp.n_head_kv : mf->hp.n_head,
                          .n_expert = tool_arch_u32(mf, arch, "expert_count")};
    char err[256];
    int n_fallback = 0;
    if (!s && qmix_plan(ft, &m, o, qt, n, types, quant, &n_fallback, err, sizeof err))
        s = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: %s", in, err);
    for (int i = 0; !s && i < n; i++) {
        plan *p = &j->plans[i];
        if (!quant[i] || types[i] == qt[i].type)
            continue;
        p->to = types[i];
        p->mix = true;
        p->why = NULL;
        const float *w = NULL;
        if (im) {
            int64_t nw = 0;
            w = tport_imatrix_find(im, names[i], &nw);
            if (w && nw != qt[i].ne[0] * qt[i].ne[2]) {
                /* llama-quantize ignores a token_embd entry of another size */
                if (strcmp(names[i], "token_embd.weight") && strcmp(names[i], "per_layer_token_embd.weight"))
                    s = tport_error(TPORT_STATUS_BAD_FORMAT, "imatrix size %lld is different from tensor size %lld for %s",
                                    (long long)nw, (long long)(qt[i].ne[0] * qt[i].ne[2]), names[i]);
                w = NULL;
            }
            if (w && qt[i].ne[3] != 1)
                s = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: importance weights of a 4-D tensor", names[i]);
        }
        p->weights = w;
        if (!s && !w && qmix_requires_imatrix(ft, names[i], types[i]))
            s = tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                            "%s: tensor %s would be %s, which llama-quantize writes only with an importance "
                            "matrix (--imatrix FILE%s)", ft->name, names[i], tname(types[i]),
                            im ? "; this one has no entry for it" : "");
        /* the rows are decoded to f32, then quantized as ggml's chunk
         * functions do (some types only with weights: checked above) */
        const tport_type_traits *from = tport_traits(qt[i].type);
        if (!s && (!from || !from->to_float || (from->flags & TPORT_TYPEF_ROW_GROUPS)))
            s = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tensor '%s': its type %s does not decode row by row "
                            "(convert it to f32 first)", in, names[i], tname(qt[i].type));
    }
    if (!s && n_fallback && !j->quiet)
        fprintf(stderr, "%s: %d tensor(s) fell back to another type: their rows are not whole blocks\n", ft->name,
                n_fallback);
    free(qt);
    free(names);
    free(types);
    free(quant);
    return s;
}

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *type_name = NULL, *vocab = NULL, *vocab_from = NULL;
    const char *imatrix_path = NULL, *out_type_name = NULL, *embd_type_name = NULL;
    bool quiet = false, pure = false;
    long ctx = 0;
    tport_gguf_split_limits split = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--type") && i + 1 < argc) {
            type_name = argv[++i];
        } else if (!strcmp(argv[i], "--imatrix") && i + 1 < argc) {
            imatrix_path = argv[++i];
        } else if (!strcmp(argv[i], "--output-tensor-type") && i + 1 < argc) {
            out_type_name = argv[++i];
        } else if (!strcmp(argv[i], "--token-embedding-type") && i + 1 < argc) {
            embd_type_name = argv[++i];
        } else if (!strcmp(argv[i], "--pure")) {
            pure = true;
        } else if (!strcmp(argv[i], "--vocab") && i + 1 < argc) {
            vocab = argv[++i];
        } else if (!strcmp(argv[i], "--vocab-from") && i + 1 < argc) {
            vocab_from = argv[++i];
        } else if (!strcmp(argv[i], "--ctx") && i + 1 < argc) {
            char *end;
            ctx = strtol(argv[++i], &end, 10);
            if (*end || ctx <= 0 || ctx > INT32_MAX)
                return tool_fail(2, "convert: --ctx needs a positive number, not '%s'", argv[i]);
        } else if (!strcmp(argv[i], "--split-max-size") && i + 1 < argc) {
            if (!parse_size(argv[++i], &split.max_bytes))
                return tool_fail(2, "convert: --split-max-size needs a positive size such as 2G, 500M or 4096, not '%s'",
                                 argv[i]);
        } else if (!strcmp(argv[i], "--split-max-tensors") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v <= 0 || v > INT32_MAX)
                return tool_fail(2, "convert: --split-max-tensors needs a positive number, not '%s'", argv[i]);
            split.max_tensors = (uint32_t)v;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            usage(stderr);
            return tool_fail(2, "convert: unknown option '%s'", argv[i]);
        } else if (!in) {
            in = argv[i];
        } else if (!out) {
            out = argv[i];
        } else {
            usage(stderr);
            return tool_fail(2, "convert: too many arguments");
        }
    }
    if (type_name && !strcmp(type_name, "list")) {
        list_mixes();
        return 0;
    }
    if (!in || !out) {
        usage(stderr);
        return tool_fail(2, "convert: need an input and an output file");
    }
    int64_t target = -1;
    const qmix_ftype *mix = qmix_find(type_name);
    qmix_options mopt = {.pure = pure, .output_type = -1, .token_embd_type = -1};
    if (!mix && (pure || imatrix_path || out_type_name || embd_type_name))
        return tool_fail(2, "convert: --pure, --imatrix, --output-tensor-type and --token-embedding-type go with a "
                         "llama-quantize file type (--type Q4_K_M, ...; --type list)");
    if (out_type_name && (mopt.output_type = current_type(out_type_name)) < 0)
        return tool_fail(2, "convert: --output-tensor-type: '%s' is not a current tensor type", out_type_name);
    if (embd_type_name && (mopt.token_embd_type = current_type(embd_type_name)) < 0)
        return tool_fail(2, "convert: --token-embedding-type: '%s' is not a current tensor type", embd_type_name);
    if (type_name && !mix) {
        target = tport_type_from_name(type_name);
        const tport_type_traits *tt = target >= 0 ? tport_traits((tport_type_id)target) : NULL;
        if (!tt || tt->successor != tt->info.id)
            return tool_fail(2, "convert: '%s' is not a current tensor type (see tport types)", type_name);
    }
    tport_imatrix *im = NULL;
    if (imatrix_path && !(im = tport_imatrix_load(imatrix_path)))
        return tool_fail(2, "%s", tport_last_error());
    mopt.has_imatrix = im != NULL;
    tport_model_file *mf;
    if (tport_model_file_open(in, &mf) != TPORT_STATUS_OK) {
        tport_imatrix_free(im);
        return tool_fail(2, "%s", tport_last_error());
    }
    const tport_mf_tensor *unknown = tport_model_file_unknown_tensor(mf);
    if (unknown) {
        int rc = tool_fail(2, "convert: %s: tensor '%s' has type id %u, a type this build does not know", in,
                           unknown->name, unknown->unknown_type);
        tport_model_file_close(mf);
        tport_imatrix_free(im);
        return rc;
    }
    if (vocab && tport_model_file_load_llama2c_vocab(mf, vocab) != TPORT_STATUS_OK) {
        int rc = tool_fail(2, "%s", tport_last_error());
        tport_model_file_close(mf);
        tport_imatrix_free(im);
        return rc;
    }
    if (mf->notes[0] && !quiet)
        fprintf(stderr, "%s: %s\n", in, mf->notes);
    if (mf->n_missing) /* even with --quiet: the output will not run */
        fprintf(stderr, "%s: warning: not a complete model, writing the %d tensors it has: %s\n", in, mf->n_tensors,
                mf->missing);

    job j = {.plans = calloc((size_t)(mf->n_tensors ? mf->n_tensors : 1), sizeof(plan)), .n = mf->n_tensors,
             .progress = !quiet && isatty(2), .quiet = quiet};
    tport_gguf_writer *w = tport_gguf_writer_new();
    int32_t *owned_tt = NULL;
    tport_status s = (!j.plans || !w) ? TPORT_STATUS_OUT_OF_MEMORY : TPORT_STATUS_OK;
    int n_changed = 0;
    uint64_t type_bytes[256] = {0};
    for (int i = 0; !s && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        plan *p = &j.plans[i];
        p->src = t;
        p->to = t->type;
        const tport_type_traits *tt = tport_traits(t->type);
        if (tt && tt->successor != t->type) { /* a revision or removed type */
            p->to = nearest_current(t);
            p->why = "(historical layout -> nearest current type)";
        }
    }
    if (!s && mix)
        s = plan_mix(mf, in, mix, &mopt, im, &j);
    for (int i = 0; !s && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        plan *p = &j.plans[i];
        const tport_type_info *ti = target >= 0 ? tport_type_get((tport_type_id)target) : NULL;
        if (ti && t->n_dims == 2 && t->ne[0] % ti->block_size == 0)
            p->to = (tport_type_id)target, p->why = NULL;
        else if (ti && t->n_dims == 2 && !quiet)
            fprintf(stderr, "%-32s %-10s kept: row length %lld is not a multiple of %s's block of %lld\n", t->name,
                    tname(p->to), (long long)t->ne[0], ti->name, (long long)ti->block_size);
        if (p->to != t->type && !p->mix && tport_conversion_kind(t->type, p->to) == TPORT_CONV_IMPOSSIBLE)
            s = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tensor '%s': no conversion from %s to %s", in, t->name,
                            tname(t->type), tname(p->to));
        if (p->to != t->type)
            n_changed++;
        if (t->n_dims == 2 && p->to < 256)
            type_bytes[p->to] += t->nbytes;
        /* the ggml examples' files: GGUF names (and layouts) for llama.cpp */
        char gguf_name[128];
        bool renamed = tport_model_file_gguf_name(mf, t->name, gguf_name, sizeof gguf_name, &p->heads, &p->head_rows);
        if (!s)
            s = tport_gguf_add_tensor_fill(w, renamed ? gguf_name : t->name, p->to, t->n_dims, t->ne, fill_tensor, &j);
    }
    /* metadata: a GGUF source keeps its keys; others get llama's */
    if (!s && mf->container == TPORT_CONTAINER_GGUF) {
        /* the source's alignment and split layout do not describe the output */
        for (int i = 0; !s && i < mf->n_kv; i++)
            if (strcmp(mf->kv[i].key, "general.alignment") && !is_split_key(mf->kv[i].key))
                s = tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]);
    } else if (!s && tport_model_file_kv(mf, "general.architecture")) {
        /* a reader that writes GGUF's keys itself (Hugging Face folders):
         * they are what llama.cpp's converter writes, taken as they are */
        for (int i = 0; !s && i < mf->n_kv; i++)
            s = tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]);
    } else if (!s) {
        if (!strcmp(mf->arch, "llama"))
            s = set_llama_metadata(w, mf, &owned_tt);
        else if (mf->arch[0] && mf->n_kv > 0)
            s = set_other_metadata(w, mf, &owned_tt);
        else
            s = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: architecture '%s' cannot be converted", in, mf->arch);
    }
    if (!s && vocab_from)
        s = convert_vocab_from(w, vocab_from, mf->vocab.n_tokens);
    if (!s && im) { /* what llama-quantize records of its importance matrix */
        char v[128];
        snprintf(v, sizeof v, "%s", imatrix_path);
        s = tport_gguf_set_str(w, "quantize.imatrix.file", v);
        if (!s && tport_imatrix_dataset(im)[0])
            s = tport_gguf_set_str(w, "quantize.imatrix.dataset", tport_imatrix_dataset(im));
        s = s ? s : tport_gguf_set_u32(w, "quantize.imatrix.entries_count", (uint32_t)tport_imatrix_count(im));
        if (!s && tport_imatrix_chunks(im) > 0)
            s = tport_gguf_set_u32(w, "quantize.imatrix.chunks_count", tport_imatrix_chunks(im));
    }
    if (!s && mix) {
        s = tport_gguf_set_u32(w, "general.file_type", (uint32_t)mix->ftype);
    } else if (!s && (target >= 0 || mf->container != TPORT_CONTAINER_GGUF || n_changed)) {
        tport_type_id mostly = TPORT_TYPE_F32;
        for (int t = 0; t < 256; t++)
            if (type_bytes[t] > type_bytes[mostly])
                mostly = (tport_type_id)t;
        s = tport_gguf_set_u32(w, "general.file_type", ftype_of(mostly));
    }
    if (!s && ctx > 0) {
        char key[64];
        snprintf(key, sizeof key, "%s.context_length", mf->arch[0] ? mf->arch : "llama");
        s = tport_gguf_set_u32(w, key, (uint32_t)ctx);
    }
    if (!s)
        s = tport_gguf_set_u32(w, "general.quantization_version", 2);
    bool splitting = split.max_bytes || split.max_tensors;
    char *prefix = splitting ? split_prefix(out) : NULL;
    uint32_t n_parts = 0;
    if (!s && splitting && !prefix)
        s = TPORT_STATUS_OUT_OF_MEMORY;
    if (!s) {
        tport_gguf_set_progress(w, progress_bar, &j);
        s = splitting ? tport_gguf_write_split(w, prefix, &split, &n_parts) : tport_gguf_write(w, out);
    }
    int rc = 0;
    if (s)
        rc = tool_fail(s == TPORT_STATUS_BAD_FORMAT ? 2 : 1, "%s", tport_last_error());
    else if (!quiet && splitting)
        fprintf(stderr, "wrote %s-00001-of-%05u.gguf ... (%u parts): GGUF v3, %d tensors (%d converted), "
                "%d metadata keys + 3 split keys\n", prefix, n_parts, n_parts, mf->n_tensors, n_changed,
                tport_gguf_n_kv(w));
    else if (!quiet)
        fprintf(stderr, "wrote %s: GGUF v3, %d tensors (%d converted), %d metadata keys\n", out, mf->n_tensors,
                n_changed, tport_gguf_n_kv(w));
    free(prefix);
    tport_gguf_writer_free(w);
    free(owned_tt);
    free(j.plans);
    tport_model_file_close(mf);
    tport_imatrix_free(im);
    return rc;
}
