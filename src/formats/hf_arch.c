/* Hugging Face config.json -> an architecture of tensorport's table, its
 * GGUF keys and its GGUF tensor names and layouts, as llama.cpp's
 * convert_hf_to_gguf.py writes them (the keys it sets for that model
 * class, the names of gguf-py's tensor map, and its layout changes: Llama's
 * q/k un-permuted, GPT-2's Conv1D weights transposed and its tied output
 * written, Gemma's RMS-norm weights stored + 1).  One row per Hugging Face
 * model class (the rows: hf_arch.h); a class not listed is refused,
 * naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "formats/hf_arch.h"

#ifdef TPORT_HAVE_CJSON

#include <cjson/cJSON.h>

static const struct {
    const hf_arch *rows;
    const size_t *count;
} FAMILIES[] = {{hf_archs_classic, &hf_archs_classic_count},
                {hf_archs_dense, &hf_archs_dense_count},
                {hf_archs_moe, &hf_archs_moe_count},
                {hf_archs_encoder, &hf_archs_encoder_count}};
enum { N_FAMILIES = sizeof FAMILIES / sizeof FAMILIES[0] };

/* The row for config.json: its first "architectures" entry, else its
 * "model_type", else (an old Llama config) llama. */
static tport_status find_arch(const tport_model_file *mf, const cJSON *cfg, const hf_arch **out) {
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
    const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    for (size_t f = 0; f < N_FAMILIES; f++)
        for (const hf_arch *a = FAMILIES[f].rows; a < FAMILIES[f].rows + *FAMILIES[f].count; a++) {
            if (cJSON_IsString(first)) {
                for (const char *const *c = a->classes; *c; c++)
                    if (!strcmp(*c, first->valuestring)) {
                        *out = a;
                        return TPORT_STATUS_OK;
                    }
            } else if (!cJSON_IsString(mt) || !strcmp(mt->valuestring, a->model_type)) {
                *out = a;
                return TPORT_STATUS_OK;
            }
        }
    char known[256] = "";
    size_t k = 0;
    const char *const *prev = NULL; /* rows of one class list are adjacent: name it once */
    for (size_t f = 0; f < N_FAMILIES; f++)
        for (const hf_arch *a = FAMILIES[f].rows; a < FAMILIES[f].rows + *FAMILIES[f].count; prev = a->classes, a++)
            for (const char *const *c = a->classes; *c && a->classes != prev; c++)
                if (k < sizeof known)
                    k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", k ? ", " : "", *c);
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: architecture '%s' is not supported (known: %s)",
                       mf->path, cJSON_IsString(first) ? first->valuestring
                                 : cJSON_IsString(mt)  ? mt->valuestring
                                                       : "?",
                       known);
}

/* ---- names and layouts ----------------------------------------------------------- */
static bool is_gguf_name(const char *n) {
    return !strncmp(n, "blk.", 4) || !strcmp(n, "token_embd.weight") || !strcmp(n, "output_norm.weight") ||
           !strcmp(n, "output.weight") || !strcmp(n, "rope_factors_long.weight") ||
           !strcmp(n, "rope_factors_short.weight"); /* phi3_keys makes these from config.json */
}

/* The GGUF name of an HF tensor: OK with *gguf set, or *gguf NULL to
 * drop it; UNSUPPORTED naming a tensor the architecture does not have. */
static tport_status rename_one(const tport_model_file *mf, const hf_arch *a, const char *name, char *out, size_t cap,
                               unsigned *flags, uint32_t *expert) {
    *flags = 0;
    *expert = 0;
    for (const hf_name *g = a->globals; g->hf; g++)
        if (!strcmp(name, g->hf)) {
            *flags = g->flags;
            if (g->gguf)
                snprintf(out, cap, "%s", g->gguf);
            return TPORT_STATUS_OK;
        }
    for (const char *const *p = a->layer_prefixes; *p; p++) {
        const char *pct = strstr(*p, "%d");
        size_t pre = (size_t)(pct - *p);
        if (strncmp(name, *p, pre) || name[pre] < '0' || name[pre] > '9')
            continue;
        char *end;
        unsigned long il = strtoul(name + pre, &end, 10);
        if (il > 100000 || strncmp(end, pct + 2, strlen(pct + 2)))
            continue;
        const char *rest = end + strlen(pct + 2);
        for (const hf_name *l = a->layer; l->hf; l++) {
            const char *e = (l->flags & HF_EXPERT) ? strstr(l->hf, "%d") : NULL;
            if (e) { /* "...experts.%d.rest": the expert index goes to *expert */
                size_t pre_e = (size_t)(e - l->hf);
                char *end_e;
                if (strncmp(rest, l->hf, pre_e) || rest[pre_e] < '0' || rest[pre_e] > '9')
                    continue;
                unsigned long ie = strtoul(rest + pre_e, &end_e, 10);
                if (ie > 65535 || strcmp(end_e, e + 2))
                    continue;
                *flags = l->flags;
                *expert = (uint32_t)ie;
                snprintf(out, cap, "blk.%lu.%s", il, l->gguf);
                return TPORT_STATUS_OK;
            }
            if (!strcmp(rest, l->hf)) {
                *flags = l->flags;
                if (l->gguf)
                    snprintf(out, cap, "blk.%lu.%s", il, l->gguf);
                return TPORT_STATUS_OK;
            }
        }
    }
    if (is_gguf_name(name)) {
        snprintf(out, cap, "%s", name);
        /* "blk.N." + a name the reader's llama renaming gave */
        const char *rest = !strncmp(name, "blk.", 4) ? strchr(name + 4, '.') : NULL;
        for (const hf_name *r = a->renamed; rest && r && r->hf; r++)
            if (!strcmp(rest + 1, r->hf))
                snprintf(out, cap, "%.*s%s", (int)(rest + 1 - name), name, r->gguf);
        return TPORT_STATUS_OK;
    }
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tensor '%.100s' is not part of a %s model", mf->path, name,
                       a->gguf);
}

tport_status mf_transpose_2d(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t) {
    uint64_t es = t->type == TPORT_TYPE_F32 ? 4 : t->type == TPORT_TYPE_F16 || t->type == TPORT_TYPE_BF16 ? 2 : 0;
    if (t->n_dims != 2 || !es)
        return mf_fail(c, t->offset, "tensor %s: a weight to transpose must be 2-D f32, f16 or bf16", t->name);
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    const uint8_t *src = t->data;
    int64_t r = t->ne[1], k = t->ne[0]; /* src: r rows of k; dst: k rows of r */
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < k; j++)
            memcpy(dst + ((uint64_t)j * (uint64_t)r + (uint64_t)i) * es, src + ((uint64_t)i * (uint64_t)k + (uint64_t)j) * es,
                   (size_t)es);
    t->data = dst;
    t->ne[0] = r;
    t->ne[1] = k;
    return TPORT_STATUS_OK;
}

/* Gemma stores RMS-norm weights as w - 1 (it multiplies by 1 + w); GGUF
 * has them + 1, in f32 as the converter writes every norm. */
static tport_status plus_one(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t) {
    if (t->n_dims != 1 || (t->type != TPORT_TYPE_F32 && t->type != TPORT_TYPE_F16 && t->type != TPORT_TYPE_BF16))
        return mf_fail(c, t->offset, "tensor %s: a norm weight must be 1-D f32, f16 or bf16", t->name);
    float *dst = mf_alloc_array(mf, (uint64_t)t->ne[0], sizeof(float));
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int64_t i = 0; i < t->ne[0]; i++) {
        float v;
        if (t->type == TPORT_TYPE_F32)
            memcpy(&v, (const uint8_t *)t->data + 4 * i, 4);
        else {
            uint16_t h;
            memcpy(&h, (const uint8_t *)t->data + 2 * i, 2);
            v = t->type == TPORT_TYPE_F16 ? tport_fp16_to_fp32(h) : tport_bf16_to_fp32(h);
        }
        dst[i] = v + 1.0f;
    }
    t->data = dst;
    t->type = TPORT_TYPE_F32;
    t->nbytes = (uint64_t)t->ne[0] * 4;
    return TPORT_STATUS_OK;
}

/* Hugging Face q/k rows of each head are [first halves of the pairs,
 * second halves]; Meta/GGUF order interleaves them.  Row r of the result
 * (head h, pair i, member j) comes from HF row h*hd + j*hd/2 + i. */
static tport_status unpermute(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t, uint32_t n_head) {
    if (t->n_dims != 2 || n_head == 0 || t->ne[1] % n_head || (t->ne[1] / n_head) % 2)
        return mf_fail(c, t->offset, "tensor %s: shape does not split into %u heads", t->name, n_head);
    int64_t rows = t->ne[1], hd = rows / n_head;
    uint64_t row_bytes = t->nbytes / (uint64_t)rows;
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r / hd, rem = r % hd, i = rem / 2, j = rem % 2;
        int64_t src = h * hd + j * (hd / 2) + i;
        memcpy(dst + (uint64_t)r * row_bytes, (const uint8_t *)t->data + (uint64_t)src * row_bytes, (size_t)row_bytes);
    }
    t->data = dst;
    return TPORT_STATUS_OK;
}

/* The kv heads key of the architecture (head_count without one). */
static uint32_t kv_u32(const tport_model_file *mf, const char *arch, const char *suffix) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    for (int i = 0; i < mf->n_kv; i++)
        if (!strcmp(mf->kv[i].key, key) && mf->kv[i].type == TPORT_KV_U32)
            return (uint32_t)mf->kv[i].v.u;
    return 0;
}

/* Fused QKV rows stored as n_kv groups of (n_head/n_kv query heads, one
 * key head, one value head), head_dim rows each (GPT-NeoX and BLOOM: a
 * group per head; Falcon: the "jploski" rearrangement) -> GGUF's [Q|K|V].
 * Works for the weight (rows of ne[0]) and the bias (rows of 1). */
static tport_status regroup_qkv(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t, uint32_t n_head,
                                uint32_t n_kv) {
    int64_t rows = t->n_dims == 1 ? t->ne[0] : t->ne[1];
    if (t->n_dims > 2 || !n_head || !n_kv || n_head % n_kv || rows % (int64_t)(n_head + 2 * n_kv))
        return mf_fail(c, t->offset, "tensor %s: %lld rows do not split into %u query and 2 x %u kv heads", t->name,
                       (long long)rows, n_head, n_kv);
    int64_t hd = rows / (n_head + 2 * n_kv), q_per = n_head / n_kv;
    uint64_t row_bytes = t->nbytes / (uint64_t)rows;
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    const uint8_t *src = t->data;
    uint64_t block = (uint64_t)hd * row_bytes;
    for (int64_t g = 0; g < (int64_t)n_kv; g++) {
        const uint8_t *grp = src + (uint64_t)(g * (q_per + 2)) * block;
        memcpy(dst + (uint64_t)(g * q_per) * block, grp, (size_t)(q_per * (int64_t)block));
        memcpy(dst + (uint64_t)(n_head + g) * block, grp + (uint64_t)q_per * block, (size_t)block);
        memcpy(dst + (uint64_t)(n_head + n_kv + g) * block, grp + (uint64_t)(q_per + 1) * block, (size_t)block);
    }
    t->data = dst;
    return TPORT_STATUS_OK;
}

/* Expert e's matrix t into the stack of its name among the kept tensors
 * (made at the first expert seen): every expert of the file's
 * expert_count exactly once, all of one type and shape. */
static tport_status stack_expert(hf_ctx *h, int kept, const tport_mf_tensor *t, const char *name, uint32_t e,
                                 uint8_t *seen) {
    tport_model_file *mf = h->mf;
    uint32_t n_exp = kv_u32(mf, h->arch, "expert_count");
    if (t->n_dims != 2 || !n_exp || e >= n_exp)
        return mf_fail(h->c, t->offset, "tensor %s: expert %u of %u, or not a matrix", t->name, e, n_exp);
    int k = 0;
    while (k < kept && strcmp(mf->tensors[k].name, name))
        k++;
    if (k == kept) {
        if (t->nbytes > UINT64_MAX / n_exp)
            return mf_fail(h->c, t->offset, "tensor %s: too large", t->name);
        uint8_t *data = mf_alloc(mf, (size_t)(t->nbytes * n_exp));
        char *nm = mf_strndup(mf, name, strlen(name));
        if (!data || !nm)
            return TPORT_STATUS_OUT_OF_MEMORY;
        tport_mf_tensor s = *t;
        s.name = nm;
        s.n_dims = 3;
        s.ne[2] = n_exp;
        s.nbytes = t->nbytes * n_exp;
        s.data = data;
        mf->tensors[kept] = s;
        memset(seen + (size_t)kept * n_exp, 0, n_exp);
    }
    tport_mf_tensor *s = &mf->tensors[k];
    if (s->type != t->type || s->ne[0] != t->ne[0] || s->ne[1] != t->ne[1] || seen[(size_t)k * n_exp + e])
        return mf_fail(h->c, t->offset, "tensor %s: expert %u repeated, or of another type or shape than the "
                       "others of %s", t->name, e, name);
    seen[(size_t)k * n_exp + e] = 1;
    memcpy((uint8_t *)s->data + (uint64_t)e * t->nbytes, t->data, (size_t)t->nbytes);
    return TPORT_STATUS_OK;
}

/* A multimodal wrapper's text tensor: "language_model." taken out of the
 * name (as the converter does) and the reader's llama renaming applied to
 * the rest; its vision tower and projector are not part of the text model
 * (the converter writes them to a separate mmproj file).  Returns false
 * for a tensor to drop. */
static bool text_part_name(const char *name, char *out, size_t cap) {
    if (strstr(name, "vision_tower.") || strstr(name, "multi_modal_projector."))
        return false;
    const char *lm = strstr(name, "language_model.");
    char tmp[192];
    if (!lm) {
        snprintf(out, cap, "%s", name);
        return true;
    }
    snprintf(tmp, sizeof tmp, "%.*s%s", (int)(lm - name), name, lm + strlen("language_model."));
    if (!mf_normalize_llama_name(tmp, out, cap))
        snprintf(out, cap, "%s", tmp);
    return true;
}

/* t (fused [in, 2 ff, n_expert] in GGUF's order) becomes its gate half;
 * *up its up half under the name with "gate" made "up". */
static tport_status split_gate_up(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t, tport_mf_tensor *up) {
    if (t->n_dims != 3 || t->ne[1] % 2 || t->ne[0] <= 0 || t->ne[2] <= 0)
        return mf_fail(c, t->offset, "tensor %s: fused experts must be [n_expert, 2 x ff, n_embd]", t->name);
    uint64_t rows = (uint64_t)t->ne[1] * (uint64_t)t->ne[2], half = t->nbytes / 2;
    if (t->nbytes % rows)
        return mf_fail(c, t->offset, "tensor %s: rows of a block-quantized type cannot be split", t->name);
    uint64_t row = t->nbytes / rows, part = (uint64_t)(t->ne[1] / 2) * row; /* one expert's half */
    uint8_t *g = mf_alloc(mf, (size_t)half), *u = mf_alloc(mf, (size_t)half);
    const char *at = strstr(t->name, "gate");
    char name[192];
    snprintf(name, sizeof name, "%.*sup%s", at ? (int)(at - t->name) : 0, t->name, at ? at + 4 : "");
    char *nm = mf_strndup(mf, name, strlen(name));
    if (!g || !u || !nm || !at)
        return at ? TPORT_STATUS_OUT_OF_MEMORY : mf_fail(c, t->offset, "tensor %s: not a gate", t->name);
    for (int64_t e = 0; e < t->ne[2]; e++) {
        const uint8_t *src = (const uint8_t *)t->data + (uint64_t)e * 2 * part;
        memcpy(g + (uint64_t)e * part, src, (size_t)part);
        memcpy(u + (uint64_t)e * part, src + part, (size_t)part);
    }
    t->ne[1] /= 2;
    t->nbytes = half;
    *up = *t;
    t->data = g;
    up->data = u;
    up->name = nm;
    return TPORT_STATUS_OK;
}

/* kv_b_proj (GGUF order: ne [kv_lora, n_head (nope + v)]) -> t = attn_k_b
 * ne [nope, kv_lora, n_head] (each head's nope rows transposed), *vb =
 * attn_v_b ne [kv_lora, v, n_head] (each head's v rows). */
static tport_status split_kv_b(hf_ctx *h, tport_mf_tensor *t, tport_mf_tensor *vb) {
    tport_model_file *mf = h->mf;
    uint32_t n_head = kv_u32(mf, h->arch, "attention.head_count"), k_mla = kv_u32(mf, h->arch, "attention.key_length_mla");
    uint32_t rope = kv_u32(mf, h->arch, "rope.dimension_count"), v = kv_u32(mf, h->arch, "attention.value_length_mla");
    uint64_t es = t->type == TPORT_TYPE_F32 ? 4 : t->type == TPORT_TYPE_F16 || t->type == TPORT_TYPE_BF16 ? 2 : 0;
    int64_t nope = (int64_t)k_mla - (int64_t)rope, rank = t->ne[0];
    if (t->n_dims != 2 || !es || !n_head || nope <= 0 || !v || t->ne[1] != (int64_t)n_head * (nope + v))
        return mf_fail(h->c, t->offset, "tensor %s: kv_b_proj must be 2-D f32, f16 or bf16 of %u heads x (%lld + %u) "
                       "rows", t->name, n_head, (long long)nope, v);
    uint64_t kb_bytes = (uint64_t)n_head * (uint64_t)nope * (uint64_t)rank * es;
    uint64_t vb_bytes = (uint64_t)n_head * v * (uint64_t)rank * es;
    uint8_t *kb = mf_alloc(mf, (size_t)kb_bytes), *vbd = mf_alloc(mf, (size_t)vb_bytes);
    char *nm = mf_strndup(mf, t->name, strlen(t->name));
    char *k_at = nm ? strstr(nm, "attn_k_b") : NULL;
    if (!kb || !vbd || !nm || !k_at)
        return TPORT_STATUS_OUT_OF_MEMORY;
    k_at[5] = 'v'; /* "attn_v_b..." */
    const uint8_t *src = t->data;
    for (int64_t hh = 0; hh < (int64_t)n_head; hh++) {
        const uint8_t *head = src + (uint64_t)hh * (uint64_t)(nope + v) * (uint64_t)rank * es;
        for (int64_t j = 0; j < nope; j++) /* k_b[h][r][j] = kv_b[h][j][r] */
            for (int64_t r = 0; r < rank; r++)
                memcpy(kb + (((uint64_t)hh * (uint64_t)rank + (uint64_t)r) * (uint64_t)nope + (uint64_t)j) * es,
                       head + ((uint64_t)j * (uint64_t)rank + (uint64_t)r) * es, (size_t)es);
        memcpy(vbd + (uint64_t)hh * v * (uint64_t)rank * es, head + (uint64_t)nope * (uint64_t)rank * es,
               (size_t)((uint64_t)v * (uint64_t)rank * es));
    }
    *vb = *t;
    vb->name = nm;
    vb->n_dims = 3;
    vb->ne[0] = rank;
    vb->ne[1] = v;
    vb->ne[2] = n_head;
    vb->nbytes = vb_bytes;
    vb->data = vbd;
    t->n_dims = 3;
    t->ne[0] = nope;
    t->ne[1] = rank;
    t->ne[2] = n_head;
    t->nbytes = kb_bytes;
    t->data = kb;
    return TPORT_STATUS_OK;
}

/* Each expert's matrix of a 3-D stack transposed (ne0 and ne1 swapped). */
static tport_status transpose_experts(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t) {
    uint64_t es = t->type == TPORT_TYPE_F32 ? 4 : t->type == TPORT_TYPE_F16 || t->type == TPORT_TYPE_BF16 ? 2 : 0;
    if (t->n_dims != 3 || !es)
        return mf_fail(c, t->offset, "tensor %s: experts to transpose must be 3-D f32, f16 or bf16", t->name);
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    uint64_t k = (uint64_t)t->ne[0], r = (uint64_t)t->ne[1], one = k * r * es;
    for (uint64_t e = 0; e < (uint64_t)t->ne[2]; e++)
        for (uint64_t i = 0; i < r; i++)
            for (uint64_t j = 0; j < k; j++)
                memcpy(dst + e * one + (j * r + i) * es, (const uint8_t *)t->data + e * one + (i * k + j) * es,
                       (size_t)es);
    t->data = dst;
    t->ne[0] = (int64_t)r;
    t->ne[1] = (int64_t)k;
    return TPORT_STATUS_OK;
}

/* gate and up alternating: a weight's rows of each expert (3-D), or a
 * bias's values of each expert (2-D [2 ff, n_expert]); t keeps the even
 * ones (gate), *up gets the odd ones under the name with "gate" -> "up". */
static tport_status split_interleaved(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t,
                                      tport_mf_tensor *up) {
    bool w = t->n_dims == 3;
    uint64_t es = t->type == TPORT_TYPE_F32 ? 4 : t->type == TPORT_TYPE_F16 || t->type == TPORT_TYPE_BF16 ? 2 : 0;
    int64_t pairs_dim = w ? t->ne[1] : t->ne[0], outer = w ? t->ne[2] : t->ne[1];
    const char *at = strstr(t->name, "gate");
    if ((t->n_dims != 2 && !w) || !es || pairs_dim % 2 || !at)
        return mf_fail(c, t->offset, "tensor %s: interleaved gate/up must be f32, f16 or bf16 with an even size",
                       t->name);
    uint64_t unit = w ? (uint64_t)t->ne[0] * es : es; /* a row, or a value */
    uint64_t half = t->nbytes / 2, n_pairs = (uint64_t)pairs_dim / 2;
    uint8_t *g = mf_alloc(mf, (size_t)half), *u = mf_alloc(mf, (size_t)half);
    char name[192];
    snprintf(name, sizeof name, "%.*sup%s", (int)(at - t->name), t->name, at + 4);
    char *nm = mf_strndup(mf, name, strlen(name));
    if (!g || !u || !nm)
        return TPORT_STATUS_OUT_OF_MEMORY;
    const uint8_t *src = t->data;
    for (uint64_t o = 0; o < (uint64_t)outer; o++)
        for (uint64_t p = 0; p < n_pairs; p++) {
            memcpy(g + (o * n_pairs + p) * unit, src + (o * 2 * n_pairs + 2 * p) * unit, (size_t)unit);
            memcpy(u + (o * n_pairs + p) * unit, src + (o * 2 * n_pairs + 2 * p + 1) * unit, (size_t)unit);
        }
    if (w)
        t->ne[1] /= 2;
    else
        t->ne[0] /= 2;
    t->nbytes = half;
    *up = *t;
    t->data = g;
    up->data = u;
    up->name = nm;
    return TPORT_STATUS_OK;
}

/* DeepSeek-V3's multi-token-prediction layers: past block_count. */
static bool past_last_layer(const hf_ctx *h, const char *gguf_name) {
    uint32_t n_layer = kv_u32(h->mf, h->arch, "block_count");
    return !strcmp(h->arch, "deepseek2") && !strncmp(gguf_name, "blk.", 4) && strtoul(gguf_name + 4, NULL, 10) >= n_layer;
}

static tport_status map_tensors(hf_ctx *h, const hf_arch *a, bool wrapper) {
    tport_model_file *mf = h->mf;
    int kept = 0;
    uint32_t n_exp = kv_u32(mf, h->arch, "expert_count");
    uint8_t *seen = n_exp ? mf_alloc_array(mf, (uint64_t)mf->n_tensors * n_exp, 1) : NULL;
    /* the up halves of fused experts, appended after the loop */
    tport_mf_tensor *ups = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, sizeof *ups);
    uint8_t *stacked = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, 1); /* kept index: a stack made here */
    int n_ups = 0, n_mx = 0;
    /* MXFP4 blocks or scales waiting for their other half */
    tport_mf_tensor *mx = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, sizeof *mx);
    unsigned *mx_flags = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, sizeof *mx_flags);
    char **mx_gguf = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, sizeof *mx_gguf);
    int n_joined = 0;
    if ((n_exp && !seen) || !ups || !stacked || !mx || !mx_flags || !mx_gguf)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int i = 0; i < mf->n_tensors; i++) {
        tport_mf_tensor t = mf->tensors[i];
        char name[192];
        unsigned flags;
        uint32_t expert;
        name[0] = '\0';
        char text_name[192];
        if (wrapper && !text_part_name(t.name, text_name, sizeof text_name))
            continue;
        MF_TRY(rename_one(mf, a, wrapper ? text_name : t.name, name, sizeof name, &flags, &expert));
        if ((flags & HF_DROP) || past_last_layer(h, name[0] ? name : t.name))
            continue;
        if (t.type == MF_TYPE_U8 && !(flags & (HF_MXFP4_BLOCKS | HF_MXFP4_SCALES)))
            return mf_fail(h->c, t.offset, "tensor %s: dtype U8 is read only as MXFP4 blocks and scales (gpt-oss "
                           "experts), not as %s", t.name, name[0] ? name : t.name);
        if (flags & (HF_MXFP4_BLOCKS | HF_MXFP4_SCALES)) {
            int k = 0; /* its other half, if seen (the pending keep their HF names) */
            while (k < n_mx && (strcmp(mx_gguf[k], name) || mx_flags[k] == flags))
                k++;
            if (k == n_mx) {
                if (!(mx_gguf[n_mx] = mf_strndup(mf, name, strlen(name))))
                    return TPORT_STATUS_OUT_OF_MEMORY;
                mx[n_mx] = t;
                mx_flags[n_mx++] = flags;
                continue;
            }
            bool is_blocks = (flags & HF_MXFP4_BLOCKS) != 0;
            tport_mf_tensor b = is_blocks ? t : mx[k], sc = is_blocks ? mx[k] : t;
            MF_TRY(mf_hf_mxfp4_join(mf, h->c, &b, &sc, name, (flags & HF_INTERLEAVED) != 0, n_exp, &t,
                                    &ups[n_ups]));
            if (flags & HF_INTERLEAVED)
                n_ups++;
            n_mx--;
            mx[k] = mx[n_mx];
            mx_gguf[k] = mx_gguf[n_mx];
            mx_flags[k] = mx_flags[n_mx];
            if (!n_joined++)
                mf_add_note(mf, "gpt-oss MXFP4 experts (U8 blocks + E8M0 scales) repacked into ggml MXFP4 "
                            "blocks at load (lossless)");
            mf->tensors[kept++] = t;
            continue;
        }
        if (flags & HF_EXPERT) {
            int k = 0;
            while (k < kept && strcmp(mf->tensors[k].name, name))
                k++;
            MF_TRY(stack_expert(h, kept, &t, name, expert, seen));
            if (k == kept)
                stacked[kept++] = 1;
            continue;
        }
        if (strcmp(name, t.name) && !(t.name = mf_strndup(mf, name, strlen(name))))
            return TPORT_STATUS_OUT_OF_MEMORY;
        if (flags & HF_TRANSPOSE)
            MF_TRY(mf_transpose_2d(mf, h->c, &t));
        if (flags & HF_SPLIT_GATE_UP)
            MF_TRY(split_gate_up(mf, h->c, &t, &ups[n_ups++]));
        if (flags & HF_KV_B)
            MF_TRY(split_kv_b(h, &t, &ups[n_ups++]));
        if (flags & HF_EXPERTS_T)
            MF_TRY(transpose_experts(mf, h->c, &t));
        if (flags & HF_INTERLEAVED)
            MF_TRY(split_interleaved(mf, h->c, &t, &ups[n_ups++]));
        if (flags & HF_QKV_GROUPS) {
            uint32_t nh = kv_u32(mf, h->arch, "attention.head_count");
            uint32_t nkv = kv_u32(mf, h->arch, "attention.head_count_kv");
            MF_TRY(regroup_qkv(mf, h->c, &t, nh, nkv ? nkv : nh));
        }
        if (a->norm_plus_one && hf_ends_with(t.name, "norm.weight"))
            MF_TRY(plus_one(mf, h->c, &t));
        mf->tensors[kept++] = t;
    }
    if (n_mx)
        return mf_fail(h->c, mx[0].offset, "tensor %s: MXFP4 %s without their %s (%s)", mx[0].name,
                       mx_flags[0] & HF_MXFP4_BLOCKS ? "blocks" : "scales",
                       mx_flags[0] & HF_MXFP4_BLOCKS ? "scales" : "blocks", mx_gguf[0]);
    for (int k = 0; seen && k < kept; k++)
        if (stacked[k] && memchr(seen + (size_t)k * n_exp, 0, n_exp))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %s: an expert's matrix is missing", mf->path,
                               mf->tensors[k].name);
    mf->n_tensors = kept;
    if (n_ups) {
        MF_TRY(mf_reserve_tensors(mf, n_ups));
        memcpy(mf->tensors + mf->n_tensors, ups, (size_t)n_ups * sizeof *ups);
        mf->n_tensors += n_ups;
        kept = mf->n_tensors;
    }
    MF_TRY(mf_check_unique_names(mf, h->c));
    if (a->permute_qk) {
        uint32_t nh = 0, nkv = 0;
        char key[96];
        snprintf(key, sizeof key, "%s.attention.head_count", h->arch);
        for (int i = 0; i < mf->n_kv; i++)
            if (!strcmp(mf->kv[i].key, key))
                nh = (uint32_t)mf->kv[i].v.u;
        snprintf(key, sizeof key, "%s.attention.head_count_kv", h->arch);
        for (int i = 0; i < mf->n_kv; i++)
            if (!strcmp(mf->kv[i].key, key))
                nkv = (uint32_t)mf->kv[i].v.u;
        for (int i = 0; i < mf->n_tensors; i++) {
            tport_mf_tensor *t = &mf->tensors[i];
            if (!strncmp(t->name, "blk.", 4) && hf_ends_with(t->name, ".attn_q.weight"))
                MF_TRY(unpermute(mf, h->c, t, nh));
            else if (!strncmp(t->name, "blk.", 4) && hf_ends_with(t->name, ".attn_k.weight"))
                MF_TRY(unpermute(mf, h->c, t, nkv ? nkv : nh));
        }
        mf_add_note(mf, "Hugging Face q/k weights un-permuted to Meta/GGUF order at load");
    }
    if (a->tied_output_copy && !tport_model_file_find(mf, "output.weight")) {
        const tport_mf_tensor *e = tport_model_file_find(mf, "token_embd.weight");
        if (e) { /* the same bytes under a second name, zero copy */
            tport_mf_tensor copy = *e;
            if (!(copy.name = mf_strndup(mf, "output.weight", 13)))
                return TPORT_STATUS_OUT_OF_MEMORY;
            MF_TRY(mf_reserve_tensors(mf, 1));
            mf->tensors[mf->n_tensors++] = copy;
        }
    }
    return TPORT_STATUS_OK;
}

tport_status mf_hf_map_config(tport_model_file *mf, const mf_cursor *c, const cJSON *cfg) {
    const hf_arch *a = NULL;
    MF_TRY(find_arch(mf, cfg, &a));
    hf_ctx h = {.mf = mf, .c = c, .cfg = cfg, .arch = a->gguf};
    MF_TRY(mf_kv_add_str(mf, "general.architecture", a->gguf));
    const char *base = strrchr(mf->path, '/');
    char name[128];
    /* the folder's name, as the converter names the model without a name in config.json */
    if (base && base > mf->path) {
        const char *dir = base - 1;
        while (dir > mf->path && dir[-1] != '/')
            dir--;
        snprintf(name, sizeof name, "%.*s", (int)(base - dir), dir);
    } else
        snprintf(name, sizeof name, "%s", mf->path);
    MF_TRY(mf_kv_add_str(mf, "general.name", name));
    /* a multimodal wrapper's text hyperparameters are in text_config: over
     * the top level, as the converter merges them */
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
    cJSON *merged = NULL;
    if (cJSON_IsObject(tc)) {
        if (!(merged = cJSON_Duplicate(cfg, true)))
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: config.json: out of memory", mf->path);
        for (const cJSON *e = tc->child; e; e = e->next) {
            cJSON *copy = e->string ? cJSON_Duplicate(e, true) : NULL;
            cJSON_DeleteItemFromObjectCaseSensitive(merged, e->string ? e->string : "");
            if (!copy || !cJSON_AddItemToObject(merged, e->string, copy)) {
                cJSON_Delete(copy);
                cJSON_Delete(merged);
                return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: config.json: out of memory", mf->path);
            }
        }
        h.cfg = merged;
    }
    tport_status st = a->keys(&h);
    if (st == TPORT_STATUS_OK)
        st = map_tensors(&h, a, merged != NULL);
    cJSON_Delete(merged);
    return st;
}

#endif
