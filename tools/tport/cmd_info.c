/* tport info FILE [--json]: what a model file holds — container and
 * versions, architecture, hyperparameters, tokenizer, metadata and the
 * tensor table. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "tport/model_file.h"
#include "tport/types.h"
#include "tport/tport.h"

static const char *type_name(const tport_mf_tensor *t, char *buf, size_t cap) {
    const tport_type_info *ti = t->unknown_type ? NULL : tport_type_get(t->type);
    if (ti && ti->name)
        return ti->name;
    /* a newer ggml's type: its raw id */
    snprintf(buf, cap, "type%u?", t->unknown_type ? t->unknown_type : t->type);
    return buf;
}

static const char *ftype_name(uint32_t ft) {
    static const char *const names[] = {"all f32", "mostly f16", "mostly q4_0", "mostly q4_1",
                                        "mostly q4_1, some f16", "mostly q4_2", "mostly q4_3", "mostly q8_0",
                                        "mostly q5_0", "mostly q5_1", "q2_k", "q3_k_s", "q3_k_m", "q3_k_l",
                                        "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k"};
    if (ft < sizeof names / sizeof names[0])
        return names[ft];
    /* later file types name one type each (25 iq4_nl, 38 mxfp4 ...): the
     * type table's rows say which */
    static char buf[48];
    for (int i = 0; i < tport_traits_count(); i++)
        if (tport_traits_at(i)->file_type == (int)ft) {
            snprintf(buf, sizeof buf, "mostly %s", tport_traits_at(i)->info.name);
            return buf;
        }
    return "other";
}

static const char *kv_type_name(tport_kv_type t) {
    static const char *const names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                        "bool", "string", "array", "u64", "i64", "f64"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}


static void print_scalar(FILE *f, const tport_kv *kv, bool json) {
    switch (kv->type) {
    case TPORT_KV_U8: case TPORT_KV_U16: case TPORT_KV_U32: case TPORT_KV_U64:
        fprintf(f, "%" PRIu64, kv->v.u);
        break;
    case TPORT_KV_I8: case TPORT_KV_I16: case TPORT_KV_I32: case TPORT_KV_I64:
        fprintf(f, "%" PRId64, kv->v.i);
        break;
    case TPORT_KV_F32: case TPORT_KV_F64:
        if (kv->v.f != kv->v.f || kv->v.f - kv->v.f != 0) /* NaN, inf: not JSON numbers */
            fprintf(f, json ? "null" : "%g", kv->v.f);
        else
            fprintf(f, "%.9g", kv->v.f);
        break;
    case TPORT_KV_BOOL:
        fputs(kv->v.b ? "true" : "false", f);
        break;
    case TPORT_KV_STRING:
        if (json)
            tool_json_string(f, kv->v.s);
        else
            fprintf(f, "\"%.80s\"%s", kv->v.s, strlen(kv->v.s) > 80 ? "..." : "");
        break;
    default:
        fputs(json ? "null" : "?", f);
    }
}

static void print_value(FILE *f, const tport_kv *kv, bool json) {
    if (kv->type != TPORT_KV_ARRAY) {
        print_scalar(f, kv, json);
        return;
    }
    if (json)
        fprintf(f, "{\"array\": \"%s\", \"n\": %" PRIu64 "}", kv_type_name(kv->elem_type), kv->n_elems);
    else
        fprintf(f, "[%s x %" PRIu64 "]", kv_type_name(kv->elem_type), kv->n_elems);
}

/* Files without an architecture name (llama2.c, early GGML) run as llama. */
static bool runnable(const tport_model_file *mf) {
    return tport_arch_supported(mf->arch[0] ? mf->arch : "llama");
}

/* Why a file of an architecture this build runs would still be refused
 * (keys or tensors asking for math it does not implement); NULL if not. */
static const char *refusal(const tport_model_file *mf, char *why, size_t cap) {
    return tport_model_file_refusal(mf, why, cap) ? why : NULL;
}

/* Tensors held by the file of this part (0: the model file itself). */
static int part_tensors(const tport_model_file *mf, uint32_t part) {
    int n = 0;
    for (int i = 0; i < mf->n_tensors; i++)
        n += mf->tensors[i].part == part;
    return n;
}

/* A split GGUF or sharded safetensors: each file, its size and tensors. */
static void print_parts(const tport_model_file *mf) {
    if (mf->n_part_files == 0)
        return;
    printf("files:         %u\n", mf->n_part_files + 1);
    for (uint32_t p = 0; p <= mf->n_part_files; p++) {
        const tport_model_file *f = p ? mf->part_files[p - 1] : mf;
        printf("  [%u] %s (%" PRIu64 " bytes, %d tensors)\n", p, f->path, f->file_size, part_tensors(mf, p));
    }
}

static void print_text(const tport_model_file *mf) {
    const tport_mf_hparams *hp = &mf->hp;
    char buf[32];
    printf("file:          %s (%" PRIu64 " bytes)\n", mf->path, mf->file_size);
    printf("container:     %s", tport_container_name(mf->container));
    if (mf->container == TPORT_CONTAINER_LLAMA2C && mf->version == 0)
        printf(" (legacy, unversioned)");
    else if (mf->container == TPORT_CONTAINER_PYTORCH)
        printf(mf->version ? " (zip archive)" : " (legacy pickle stream)");
    else if (mf->container != TPORT_CONTAINER_GGML && mf->container != TPORT_CONTAINER_SAFETENSORS)
        printf(" v%u", mf->version);
    if (mf->big_endian)
        printf(" (big-endian)");
    if (mf->n_parts > 1)
        printf(" (%u parts)", mf->n_parts);
    printf("\n");
    if (mf->quant_version >= 0)
        printf("quantization:  version %d\n", mf->quant_version);
    printf("file type:     %u (%s)\n", mf->file_type, ftype_name(mf->file_type));
    if (mf->container == TPORT_CONTAINER_GGML && mf->quant_version > 0)
        printf("stored ftype:  %u (quantization version * 1000 + file type, as the ggml examples write it)\n",
               (uint32_t)mf->quant_version * 1000 + mf->file_type);
    if (mf->alignment)
        printf("alignment:     %u\n", mf->alignment);
    print_parts(mf);
    if (mf->notes[0])
        printf("note:          %s\n", mf->notes);
    if (mf->n_missing)
        printf("warning:       not a complete model (%d tensors as stored): %s\n", mf->n_tensors, mf->missing);
    printf("architecture:  %s\n", mf->arch[0] ? mf->arch : "(unknown)");
    char why[512];
    const char *refused = refusal(mf, why, sizeof why);
    if (refused)
        printf("runs:          no, it needs what this build's %s does not implement: %s\n", mf->arch, refused);
    else
        printf("runs:          %s\n", runnable(mf) ? "yes, this build runs this architecture"
                                                   : "no, this build does not run this architecture");
    size_t arch_len = strlen(mf->arch);
    if (arch_len && strcmp(mf->arch, "llama") && mf->n_kv > 0) {
        /* another architecture (ggml examples, GGUF): tport_mf_hparams
         * does not describe it; its "ARCH.*" keys do */
        printf("hyperparameters: (%s)\n", mf->arch);
        for (int i = 0; i < mf->n_kv; i++) {
            if (strncmp(mf->kv[i].key, mf->arch, arch_len) || mf->kv[i].key[arch_len] != '.')
                continue;
            printf("  %-40s ", mf->kv[i].key);
            print_value(stdout, &mf->kv[i], false);
            printf("\n");
        }
    } else {
        printf("hyperparameters:\n");
        printf("  n_vocab %u  n_ctx %u  n_embd %u  n_ff %u  n_layer %u\n", hp->n_vocab, hp->n_ctx, hp->n_embd,
               hp->n_ff, hp->n_layer);
        printf("  n_head %u  n_head_kv %u  n_rot %u  norm_eps %g\n", hp->n_head, hp->n_head_kv, hp->n_rot,
               (double)hp->norm_eps);
        printf("  rope: %s, freq_base %g, freq_scale %g\n", hp->rope_mode == TPORT_ROPE_NEOX ? "neox" : "normal",
               (double)hp->rope_freq_base, (double)hp->rope_freq_scale);
    }
    const tport_vocab *v = &mf->vocab;
    if (v->n_tokens > 0)
        printf("tokenizer:     %s, %d tokens%s, bos %d, eos %d, unk %d, pad %d, add_bos %s\n",
               v->model[0] ? v->model : "?", v->n_tokens, v->scores ? " with scores" : "", v->bos, v->eos, v->unk,
               v->pad, v->add_bos ? "yes" : "no");
    else
        printf("tokenizer:     none in the file\n");
    if (mf->n_kv > 0 && (!strcmp(mf->arch, "llama") || mf->container == TPORT_CONTAINER_GGUF)) {
        printf("metadata (%d keys):\n", mf->n_kv);
        for (int i = 0; i < mf->n_kv; i++) {
            printf("  %-40s %-7s ", mf->kv[i].key, kv_type_name(mf->kv[i].type));
            print_value(stdout, &mf->kv[i], false);
            printf("\n");
        }
    }
    printf("tensors (%d):\n", mf->n_tensors);
    printf("  %-32s %-10s %-24s %12s %12s\n", "name", "type", "shape", "bytes", "offset");
    uint64_t total_bytes = 0, total_elems = 0;
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        char shape[64];
        int n = 0;
        uint64_t elems = 1;
        for (int d = 0; d < t->n_dims; d++) {
            n += snprintf(shape + n, sizeof shape - (size_t)n, d ? " x %" PRId64 : "%" PRId64, t->ne[d]);
            if (n >= (int)sizeof shape)
                n = (int)sizeof shape - 1;
        }
        for (int d = 0; d < 4; d++)
            elems *= (uint64_t)t->ne[d];
        total_bytes += t->nbytes;
        total_elems += elems;
        char bytes[24] = "?"; /* a type this build does not know: size unknown */
        if (!t->unknown_type)
            snprintf(bytes, sizeof bytes, "%" PRIu64, t->nbytes);
        printf("  %-32s %-10s %-24s %12s %12" PRIu64, t->name, type_name(t, buf, sizeof buf), shape, bytes,
               t->offset);
        if (mf->n_part_files)
            printf("  in [%u]", t->part);
        printf("\n");
    }
    printf("total:         %d tensors, %" PRIu64 " parameters, %" PRIu64 " bytes (%.2f MiB)\n", mf->n_tensors,
           total_elems, total_bytes, (double)total_bytes / (1024.0 * 1024.0));
}

static void print_json(const tport_model_file *mf) {
    const tport_mf_hparams *hp = &mf->hp;
    const tport_vocab *v = &mf->vocab;
    char buf[32];
    printf("{\"file\": ");
    tool_json_string(stdout, mf->path);
    printf(", \"file_size\": %" PRIu64 ", \"container\": \"%s\", \"version\": %u, \"quantization_version\": %d",
           mf->file_size, tport_container_name(mf->container), mf->version, mf->quant_version);
    printf(", \"big_endian\": %s, \"parts\": %u", mf->big_endian ? "true" : "false", mf->n_parts ? mf->n_parts : 1);
    printf(", \"files\": [");
    for (uint32_t p = 0; p <= mf->n_part_files; p++) {
        const tport_model_file *f = p ? mf->part_files[p - 1] : mf;
        printf(p ? ", {\"path\": " : "{\"path\": ");
        tool_json_string(stdout, f->path);
        printf(", \"bytes\": %" PRIu64 ", \"tensors\": %d}", f->file_size, part_tensors(mf, p));
    }
    printf("]");
    printf(", \"file_type\": %u, \"alignment\": %u, \"note\": ", mf->file_type, mf->alignment);
    tool_json_string(stdout, mf->notes);
    printf(", \"complete\": %s, \"missing\": ", mf->n_missing ? "false" : "true");
    tool_json_string(stdout, mf->missing);
    printf(", \"architecture\": ");
    tool_json_string(stdout, mf->arch);
    char why[512];
    const char *refused = refusal(mf, why, sizeof why);
    printf(", \"runnable\": %s", runnable(mf) && !refused ? "true" : "false");
    if (refused) {
        printf(", \"not_implemented\": ");
        tool_json_string(stdout, refused);
    }
    printf(",\n \"hparams\": {\"n_vocab\": %u, \"n_ctx\": %u, \"n_embd\": %u, \"n_ff\": %u, \"n_layer\": %u, "
           "\"n_head\": %u, \"n_head_kv\": %u, \"n_rot\": %u, \"norm_eps\": %.9g, \"rope_freq_base\": %.9g, "
           "\"rope_freq_scale\": %.9g, \"rope_mode\": \"%s\"}",
           hp->n_vocab, hp->n_ctx, hp->n_embd, hp->n_ff, hp->n_layer, hp->n_head, hp->n_head_kv, hp->n_rot,
           (double)hp->norm_eps, (double)hp->rope_freq_base, (double)hp->rope_freq_scale,
           hp->rope_mode == TPORT_ROPE_NEOX ? "neox" : "normal");
    printf(",\n \"tokenizer\": {\"model\": ");
    tool_json_string(stdout, v->model);
    printf(", \"n_tokens\": %d, \"has_scores\": %s, \"bos\": %d, \"eos\": %d, \"unk\": %d, \"pad\": %d, "
           "\"add_bos\": %s}",
           v->n_tokens, v->scores ? "true" : "false", v->bos, v->eos, v->unk, v->pad, v->add_bos ? "true" : "false");
    printf(",\n \"metadata\": {");
    for (int i = 0; i < mf->n_kv; i++) {
        printf(i ? ",\n  " : "\n  ");
        tool_json_string(stdout, mf->kv[i].key);
        printf(": ");
        print_value(stdout, &mf->kv[i], true);
    }
    printf("},\n \"tensors\": [");
    uint64_t total_bytes = 0, total_elems = 0;
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        uint64_t elems = 1;
        for (int d = 0; d < 4; d++)
            elems *= (uint64_t)t->ne[d];
        total_bytes += t->nbytes;
        total_elems += elems;
        printf(i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        tool_json_string(stdout, t->name);
        printf(", \"type\": \"%s\", \"type_id\": %u, \"shape\": [", type_name(t, buf, sizeof buf),
               t->unknown_type ? t->unknown_type : t->type);
        for (int d = 0; d < t->n_dims; d++)
            printf(d ? ", %" PRId64 : "%" PRId64, t->ne[d]);
        printf("], \"bytes\": %" PRIu64 ", \"offset\": %" PRIu64 ", \"file\": %u}", t->nbytes, t->offset, t->part);
    }
    printf("],\n \"totals\": {\"tensors\": %d, \"parameters\": %" PRIu64 ", \"bytes\": %" PRIu64 "}}\n",
           mf->n_tensors, total_elems, total_bytes);
}

static void usage(FILE *f) {
    fprintf(f, "usage: tport info FILE [--json]\n\n"
               "Shows what a model file holds: container and version, quantization version,\n"
               "architecture, hyperparameters, tokenizer, metadata and every tensor (name,\n"
               "type, shape, bytes, offset).  Reads GGUF v1-v3, GGML, GGMF, GGJT v1-v3,\n"
               "llama2.c checkpoints, safetensors and PyTorch checkpoints (.pth/.bin/.pt,\n"
               "read without running their pickles).  A model in several files opens from\n"
               "any of them and is shown whole, with its files: a split GGUF from any part\n"
               "(NAME-0000K-of-0000N.gguf), sharded safetensors from the index\n"
               "(model.safetensors.index.json), any shard or the folder.  A valid file\n"
               "that holds only some of a model's tensors is shown as it is, with a\n"
               "warning naming what a complete model would also need.  --json prints\n"
               "one JSON document.\n");
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            usage(stderr);
            return tool_fail(2, "info: unknown option '%s'", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            usage(stderr);
            return tool_fail(2, "info: more than one file given");
        }
    }
    if (!path) {
        usage(stderr);
        return tool_fail(2, "info: no file given");
    }
    tport_model_file *mf;
    if (tport_model_file_open(path, &mf) != TPORT_STATUS_OK)
        return tool_fail(2, "%s", tport_last_error());
    if (json)
        print_json(mf);
    else
        print_text(mf);
    tport_model_file_close(mf);
    return 0;
}
