/* A Hugging Face folder's tokenizer: tokenizer.json (the `tokenizers`
 * library's file) and tokenizer_config.json (special tokens, add_bos,
 * the chat template) become the tokenizer.* keys llama.cpp's
 * convert_hf_to_gguf.py writes, so the runtime tokenizer and tport convert
 * read them as they read a GGUF file's.
 *
 * Two BPE kinds are read; anything else is refused, naming it:
 *  - byte-level BPE (GPT-2, Llama 3, Qwen2: a ByteLevel pre-tokenizer):
 *    tokenizer.ggml.model "gpt2", the merges, and tokenizer.ggml.pre
 *    named from the pre-tokenizer's structure and split regex.  The
 *    converter names it from a hash of the tokens a reference text gives
 *    (which needs the `tokenizers` library); the regexes below are the ones
 *    behind those hashes, so the same folder gets the same name.
 *  - SentencePiece BPE as Hugging Face stores Llama's tokenizer.model
 *    (byte_fallback, `▁` for spaces): tokenizer.ggml.model "llama".
 *    tokenizer.json has no scores, and llama.cpp's SentencePiece tokenizer
 *    merges by score, so the scores are recovered from the merge order
 *    (transformers built the merges sorted by the pieces' scores): a piece
 *    first made by merge r gets -r.  The converter's tokenizer.json-only
 *    path writes -1000 for every piece, which makes llama.cpp merge left to
 *    right instead; the types are those of its SentencePiece path
 *    (unknown, control, byte, user-defined, normal).
 * Unigram (T5, XLM-R) becomes tokenizer.ggml.model "t5" (read_unigram;
 * the normalizer and pre-tokenizer in hf_unigram.c).
 * A folder with SentencePiece's tokenizer.model and no tokenizer.json
 * gets the converter's SentencePiece path (spm_model.c reads the pieces;
 * see spm_folder below).
 * tokenizer.json is hostile input: ids are bounded, duplicates refused,
 * every merge's parts must be tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/mf_internal.h"

#if !defined(TPORT_HAVE_CJSON)

tport_status mf_hf_tokenizer(tport_model_file *mf, const mf_cursor *c, const struct cJSON *config) {
    (void)mf, (void)c, (void)config;
    return TPORT_STATUS_OK;
}

#else

#include <cjson/cJSON.h>

#define MAX_TOKENIZER_BYTES (256u << 20)
#define MAX_TOKENS (1 << 24)

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

/* NAME beside model_path (malloc'ed path). */
static char *beside(const char *model_path, const char *name) {
    const char *slash = strrchr(model_path, '/');
    size_t dir_len = slash ? (size_t)(slash - model_path) + 1 : 0, name_len = strlen(name);
    char *path = malloc(dir_len + name_len + 1);
    if (path) {
        memcpy(path, model_path, dir_len);
        memcpy(path + dir_len, name, name_len + 1);
    }
    return path;
}

/* The whole file (NUL-terminated, malloc'ed) or NULL if absent; a file
 * over `cap` bytes is an error. */
static tport_status slurp(const char *path, size_t cap, char **out, size_t *len) {
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return TPORT_STATUS_OK;
    if ((uint64_t)st.st_size > cap)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %lld bytes, more than the %zu MiB limit", path,
                           (long long)st.st_size, cap >> 20);
    FILE *f = fopen(path, "rb");
    if (!f)
        return tport_error(TPORT_STATUS_IO, "%s: cannot open", path);
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!buf)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return TPORT_STATUS_OK;
}

static cJSON *parse_beside(const char *model_path, const char *name, tport_status *st, char **path_out) {
    char *path = beside(model_path, name), *text = NULL;
    size_t len = 0;
    *st = path ? slurp(path, MAX_TOKENIZER_BYTES, &text, &len) : TPORT_STATUS_OUT_OF_MEMORY;
    cJSON *j = NULL;
    if (!*st && text) {
        j = cJSON_ParseWithLength(text, len);
        if (!j)
            *st = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: not valid JSON", path);
    }
    free(text);
    if (path_out)
        *path_out = path;
    else
        free(path);
    return j;
}

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }
static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *j = item(o, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}
static bool is_type(const cJSON *o, const char *type) {
    const char *t = str_of(o, "type");
    return t && !strcmp(t, type);
}

/* ---- a string -> id table ---------------------------------------------------- */
typedef struct id_map {
    uint32_t cap; /* a power of two */
    int32_t *slot;
    char **tokens;
} id_map;

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static bool map_init(id_map *m, int32_t n, char **tokens) {
    m->cap = 16;
    while (m->cap < (uint32_t)n * 2u)
        m->cap <<= 1;
    m->slot = malloc(m->cap * sizeof *m->slot);
    m->tokens = tokens;
    if (!m->slot)
        return false;
    memset(m->slot, 0xff, m->cap * sizeof *m->slot);
    for (int32_t i = 0; i < n; i++) {
        if (!tokens[i])
            continue;
        uint32_t h = hash_str(tokens[i]) & (m->cap - 1);
        while (m->slot[h] >= 0 && strcmp(tokens[m->slot[h]], tokens[i]))
            h = (h + 1) & (m->cap - 1);
        if (m->slot[h] < 0)
            m->slot[h] = i; /* the first id wins, as in a dict built in id order */
    }
    return true;
}

static int32_t map_get(const id_map *m, const char *s) {
    uint32_t h = hash_str(s) & (m->cap - 1);
    while (m->slot[h] >= 0) {
        if (!strcmp(m->tokens[m->slot[h]], s))
            return m->slot[h];
        h = (h + 1) & (m->cap - 1);
    }
    return -1;
}

/* ---- pieces of the reading --------------------------------------------------- */
typedef struct hf_tok {
    tport_model_file *mf;
    const char *path;        /* tokenizer.json, for messages */
    const cJSON *root, *model, *tcfg, *config;
    int32_t n;               /* tokens in the GGUF list            */
    int32_t n_base;          /* tokens of model.vocab               */
    char **tokens;           /* owned by mf                         */
    int32_t *types;          /* owned by mf                         */
    uint8_t *added, *special;/* per id (malloc'ed)                  */
    bool spm;                /* SentencePiece BPE (byte fallback)   */
    id_map map;
} hf_tok;

static tport_status bad(const hf_tok *t, const char *what) {
    return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %s", t->path, what);
}

static bool json_id(const cJSON *j, int32_t *id) {
    uint64_t v;
    if (!mf_json_uint(j, &v) || v >= MAX_TOKENS)
        return false;
    *id = (int32_t)v;
    return true;
}

/* Token count: every id of model.vocab and added_tokens, padded to
 * config.json's vocab_size as the converter pads it ([PADn] tokens). */
/* Raises *max, the highest token id of model.vocab, to the highest of
 * added_tokens and to config.json's vocab_size - 1 (padding rows); an
 * empty vocabulary or a bad added token is refused. */
static tport_status raise_max_id(hf_tok *t, const cJSON *added, int32_t *max) {
    int32_t id;
    for (const cJSON *a = added ? added->child : NULL; a; a = a->next)
        if (!json_id(item(a, "id"), &id) || !cJSON_IsString(item(a, "content")))
            return bad(t, "added_tokens: an entry without an id below 2^24 or a content");
        else
            *max = id > *max ? id : *max;
    uint64_t cfg_n = 0;
    if (t->config && mf_json_uint(item(t->config, "vocab_size"), &cfg_n) && cfg_n < MAX_TOKENS &&
        (int64_t)cfg_n > *max + 1)
        *max = (int32_t)cfg_n - 1;
    if (*max < 0)
        return bad(t, "model.vocab is empty");
    return TPORT_STATUS_OK;
}

static tport_status count_tokens(hf_tok *t, const cJSON *vocab, const cJSON *added) {
    int32_t max = -1, id;
    t->n_base = 0;
    for (const cJSON *e = vocab->child; e; e = e->next) {
        if (!e->string || !json_id(e, &id))
            return bad(t, "model.vocab: an entry is not a token with an id below 2^24");
        max = id > max ? id : max;
        t->n_base++;
    }
    MF_TRY(raise_max_id(t, added, &max));
    t->n = max + 1;
    return TPORT_STATUS_OK;
}

static tport_status fill_tokens(hf_tok *t, const cJSON *vocab, const cJSON *added) {
    tport_model_file *mf = t->mf;
    t->tokens = mf_alloc_array(mf, (uint64_t)t->n, sizeof(char *));
    t->types = mf_alloc_array(mf, (uint64_t)t->n, sizeof(int32_t));
    t->added = calloc((size_t)t->n, 1);
    t->special = calloc((size_t)t->n, 1);
    if (!t->tokens || !t->types || !t->added || !t->special)
        return TPORT_STATUS_OUT_OF_MEMORY;
    int32_t id = 0;
    for (const cJSON *e = vocab->child; e; e = e->next) {
        if (!json_id(e, &id)) /* checked by the count above: cannot happen */
            return bad(t, "model.vocab: a token id that is not a number below the limit");
        if (t->tokens[id]) {
            char msg[160];
            snprintf(msg, sizeof msg, "model.vocab: id %d given to two tokens", (int)id);
            return bad(t, msg);
        }
        if (!(t->tokens[id] = mf_strndup(mf, e->string, strlen(e->string))))
            return TPORT_STATUS_OUT_OF_MEMORY;
    }
    for (const cJSON *a = added ? added->child : NULL; a; a = a->next) {
        if (!json_id(item(a, "id"), &id))
            return bad(t, "added_tokens: an id that is not a number below the limit");
        const char *content = item(a, "content")->valuestring;
        if (!(t->tokens[id] = mf_strndup(mf, content, strlen(content))))
            return TPORT_STATUS_OUT_OF_MEMORY;
        t->added[id] = 1;
        t->special[id] = cJSON_IsTrue(item(a, "special"));
    }
    for (int32_t i = 0; i < t->n; i++)
        if (!t->tokens[i]) { /* a hole in the ids: the converter's placeholder */
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%d]", (int)i);
            if (!(t->tokens[i] = mf_strndup(mf, pad, strlen(pad))))
                return TPORT_STATUS_OUT_OF_MEMORY;
            t->types[i] = TT_UNUSED;
        }
    return map_init(&t->map, t->n, t->tokens) ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
}

/* convert_hf_to_gguf's does_token_look_special. */
static bool looks_special(const char *s) {
    size_t n = strlen(s);
    if (!strcmp(s, "<pad>") || !strcmp(s, "<mask>") || !strcmp(s, "<2mass>") || !strcmp(s, "[@BOS@]"))
        return true;
    if (n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>"))
        return true;
    static const char fw_open[] = "<\xef\xbd\x9c", fw_close[] = "\xef\xbd\x9c>"; /* <｜ ... ｜> */
    if (n >= 8 && !strncmp(s, fw_open, 4) && !strcmp(s + n - 4, fw_close))
        return true;
    return n >= 8 && !strncmp(s, "<unused", 7) && s[n - 1] == '>';
}

static bool is_byte_token(const char *s) {
    static const char hex[] = "0123456789abcdefABCDEF";
    return strlen(s) == 6 && !strncmp(s, "<0x", 3) && s[5] == '>' && s[3] && strchr(hex, s[3]) && s[4] &&
           strchr(hex, s[4]);
}

/* The content of a tokenizer_config special-token entry (a string, or an
 * AddedToken object). */
static const char *special_content(const cJSON *j) {
    if (cJSON_IsString(j))
        return j->valuestring;
    return cJSON_IsObject(j) ? str_of(j, "content") : NULL;
}

/* The id of tokenizer_config's `<typ>_token` (found among added_tokens,
 * as gguf-py's SpecialVocab looks), else config.json's `<typ>_token_id`. */
static int32_t special_id(const hf_tok *t, const cJSON *added, const char *typ) {
    char key[48];
    snprintf(key, sizeof key, "%s_token", typ);
    const char *content = t->tcfg ? special_content(item(t->tcfg, key)) : NULL;
    int32_t id;
    for (const cJSON *a = added ? added->child : NULL; content && a; a = a->next) {
        const char *c = str_of(a, "content");
        if (c && !strcmp(c, content) && json_id(item(a, "id"), &id) && id < t->n)
            return id;
    }
    snprintf(key, sizeof key, "%s_token_id", typ);
    if (t->config && json_id(item(t->config, key), &id) && id < t->n)
        return id;
    return -1;
}

static void set_types(hf_tok *t, int32_t unk) {
    for (int32_t i = 0; i < t->n; i++) {
        if (t->types[i] == TT_UNUSED)
            continue;
        const char *s = t->tokens[i];
        if (t->spm) { /* the SentencePiece path's types */
            if (i == unk)
                t->types[i] = TT_UNKNOWN;
            else if (t->special[i])
                t->types[i] = TT_CONTROL;
            else if (is_byte_token(s))
                t->types[i] = TT_BYTE;
            else if (t->added[i])
                t->types[i] = TT_USER;
            else
                t->types[i] = TT_NORMAL;
        } else if (t->added[i])
            t->types[i] = t->special[i] || looks_special(s) ? TT_CONTROL : TT_USER;
        else
            t->types[i] = TT_NORMAL;
    }
}

/* A merge as "left right": tokenizers writes either that string or a
 * [left, right] pair (then spaces inside a part become U+0120, as gguf-py
 * does). */
static char *merge_text(tport_model_file *mf, const cJSON *m) {
    if (cJSON_IsString(m))
        return mf_strndup(mf, m->valuestring, strlen(m->valuestring));
    if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) != 2)
        return NULL;
    const cJSON *a = cJSON_GetArrayItem(m, 0), *b = cJSON_GetArrayItem(m, 1);
    if (!cJSON_IsString(a) || !cJSON_IsString(b))
        return NULL;
    size_t na = strlen(a->valuestring), nb = strlen(b->valuestring);
    char *out = mf_alloc(mf, 2 * (na + nb) + 2), *p = out;
    if (!out)
        return NULL;
    for (const char *s = a->valuestring;; s = b->valuestring) {
        for (; *s; s++)
            if (*s == ' ')
                *p++ = (char)0xc4, *p++ = (char)0xa0;
            else
                *p++ = *s;
        if (s == b->valuestring + nb)
            break;
        *p++ = ' ';
    }
    *p = '\0';
    return out;
}

/* Splits "left right" at its one separating space (parts hold none). */
static bool split_merge(const char *m, char *left, char *right, size_t cap) {
    const char *sp = strchr(m, ' ');
    if (!sp || strchr(sp + 1, ' ') || (size_t)(sp - m) >= cap || strlen(sp + 1) >= cap || sp == m || !sp[1])
        return false;
    memcpy(left, m, (size_t)(sp - m));
    left[sp - m] = '\0';
    strcpy(right, sp + 1);
    return true;
}

static tport_status read_merges(hf_tok *t, char ***out, uint64_t *n_out) {
    const cJSON *merges = item(t->model, "merges");
    if (!cJSON_IsArray(merges))
        return bad(t, "model.merges is missing");
    int n = cJSON_GetArraySize(merges);
    char **m = mf_alloc_array(t->mf, n ? (uint64_t)n : 1, sizeof(char *));
    if (!m)
        return TPORT_STATUS_OUT_OF_MEMORY;
    int i = 0;
    for (const cJSON *e = merges->child; e; e = e->next, i++)
        if (!(m[i] = merge_text(t->mf, e))) {
            char msg[96];
            snprintf(msg, sizeof msg, "model.merges[%d] is not \"a b\" nor [a, b]", i);
            return bad(t, msg);
        }
    *out = m;
    *n_out = (uint64_t)n;
    return TPORT_STATUS_OK;
}

/* SentencePiece scores from the merge order (see the top of the file). */
static tport_status spm_scores(hf_tok *t, char **merges, uint64_t n_merges, float **out) {
    float *scores = mf_alloc_array(t->mf, (uint64_t)t->n, sizeof(float));
    char *left = malloc(4096), *right = malloc(4096), *joined = malloc(8192);
    tport_status st = scores && left && right && joined ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    for (int32_t i = 0; !st && i < t->n; i++) /* below every merged piece until a merge makes it */
        scores[i] = t->types[i] == TT_NORMAL ? -(float)(n_merges + (uint64_t)i) : 0.0f;
    uint8_t *seen = st ? NULL : calloc((size_t)t->n, 1);
    if (!st && !seen)
        st = TPORT_STATUS_OUT_OF_MEMORY;
    for (uint64_t r = 0; !st && r < n_merges; r++) {
        if (!split_merge(merges[r], left, right, 4096)) {
            char msg[96];
            snprintf(msg, sizeof msg, "model.merges[%llu] is not two tokens", (unsigned long long)r);
            st = bad(t, msg);
            break;
        }
        snprintf(joined, 8192, "%s%s", left, right);
        int32_t id = map_get(&t->map, joined);
        if (id < 0 || map_get(&t->map, left) < 0 || map_get(&t->map, right) < 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "model.merges[%llu] ('%.40s') names a token not in the vocabulary",
                     (unsigned long long)r, merges[r]);
            st = bad(t, msg);
            break;
        }
        if (!seen[id] && t->types[id] == TT_NORMAL)
            scores[id] = -(float)r;
        seen[id] = 1;
    }
    free(seen);
    free(left);
    free(right);
    free(joined);
    *out = scores;
    return st;
}

/* ---- the pre-tokenizer's name ------------------------------------------------- */
static const struct {
    const char *name, *regex;
} SPLIT_REGEXES[] = {
    {"llama-bpe", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                  "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    {"qwen2", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
              "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
};

static bool has_byte_level(const cJSON *pre) {
    if (!pre)
        return false;
    if (is_type(pre, "ByteLevel"))
        return true;
    const cJSON *seq = item(pre, "pretokenizers");
    for (const cJSON *p = cJSON_IsArray(seq) ? seq->child : NULL; p; p = p->next)
        if (is_type(p, "ByteLevel"))
            return true;
    return false;
}

/* gpt-2: ByteLevel alone with its own (GPT-2) regex; llama-bpe / qwen2: a
 * Split on their regex, then ByteLevel without one. */
static tport_status pre_name(const hf_tok *t, const char **name) {
    const cJSON *pre = item(t->root, "pre_tokenizer");
    if (is_type(pre, "ByteLevel")) {
        const cJSON *re = item(pre, "use_regex");
        if (!re || cJSON_IsTrue(re)) {
            *name = "gpt-2";
            return TPORT_STATUS_OK;
        }
    }
    const cJSON *seq = is_type(pre, "Sequence") ? item(pre, "pretokenizers") : NULL;
    if (cJSON_GetArraySize(seq) == 2 && is_type(cJSON_GetArrayItem(seq, 0), "Split") &&
        is_type(cJSON_GetArrayItem(seq, 1), "ByteLevel")) {
        const cJSON *pattern = item(cJSON_GetArrayItem(seq, 0), "pattern");
        const char *re = pattern ? str_of(pattern, "Regex") : NULL;
        for (size_t i = 0; re && i < sizeof SPLIT_REGEXES / sizeof SPLIT_REGEXES[0]; i++)
            if (!strcmp(re, SPLIT_REGEXES[i].regex)) {
                *name = SPLIT_REGEXES[i].name;
                return TPORT_STATUS_OK;
            }
        char msg[200];
        snprintf(msg, sizeof msg, "pre-tokenizer Split pattern '%.100s' is not one llama.cpp names "
                 "(known: gpt-2, llama-bpe, qwen2)", re ? re : "(not a Regex)");
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: %s", t->path, msg);
    }
    const char *type = pre ? str_of(pre, "type") : NULL;
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: pre-tokenizer '%s' is not supported (known: ByteLevel as "
                       "gpt-2, Split + ByteLevel as llama-bpe or qwen2)", t->path, type ? type : "none");
}

/* ---- special tokens, add_bos/add_eos, chat template ------------------------- */
/* add_bos/add_eos from a TemplateProcessing post-processor: a special token
 * before (after) the sequence "A". */
static void template_adds(const hf_tok *t, int32_t bos, int32_t eos, int *add_bos, int *add_eos) {
    const cJSON *pp = item(t->root, "post_processor");
    /* a Sequence of processors (gguf-py looks at each), RobertaProcessing
     * (XLM-R: <s> A </s>, as gguf-py's SpecialVocab reads it) */
    const cJSON *list = is_type(pp, "Sequence") ? item(pp, "processors") : NULL;
    for (const cJSON *p = cJSON_IsArray(list) ? list->child : NULL; p; p = p->next)
        if (is_type(p, "TemplateProcessing") || is_type(p, "RobertaProcessing"))
            pp = p;
    if (is_type(pp, "RobertaProcessing")) {
        *add_bos = *add_eos = 1;
        return;
    }
    const cJSON *single = is_type(pp, "TemplateProcessing") ? item(pp, "single") : NULL;
    int n = cJSON_GetArraySize(single);
    if (!cJSON_IsArray(single) || n == 0)
        return;
    const cJSON *first = item(cJSON_GetArrayItem(single, 0), "SpecialToken");
    const cJSON *last = item(cJSON_GetArrayItem(single, n - 1), "SpecialToken");
    const char *fid = first ? str_of(first, "id") : NULL, *lid = last ? str_of(last, "id") : NULL;
    *add_bos = fid && bos >= 0 && !strcmp(fid, t->tokens[bos]);
    *add_eos = lid && eos >= 0 && !strcmp(lid, t->tokens[eos]);
}

static tport_status chat_templates(hf_tok *t) {
    tport_model_file *mf = t->mf;
    const cJSON *ct = t->tcfg ? item(t->tcfg, "chat_template") : NULL;
    if (cJSON_IsString(ct))
        return mf_kv_add_str(mf, "tokenizer.chat_template", ct->valuestring);
    for (const cJSON *e = cJSON_IsArray(ct) ? ct->child : NULL; e; e = e->next) {
        const char *name = str_of(e, "name"), *tmpl = str_of(e, "template");
        if (!name || !tmpl)
            continue;
        char key[160];
        if (!strcmp(name, "default"))
            snprintf(key, sizeof key, "tokenizer.chat_template");
        else
            snprintf(key, sizeof key, "tokenizer.chat_template.%.120s", name);
        MF_TRY(mf_kv_add_str(mf, key, tmpl));
    }
    if (ct)
        return TPORT_STATUS_OK;
    /* newer transformers save it as its own file */
    char *path = beside(mf->path, "chat_template.jinja"), *text = NULL;
    size_t len = 0;
    tport_status st = path ? slurp(path, 16u << 20, &text, &len) : TPORT_STATUS_OUT_OF_MEMORY;
    free(path);
    if (!st && text)
        st = mf_kv_add_str(mf, "tokenizer.chat_template", text);
    free(text);
    return st;
}

static tport_status write_specials(hf_tok *t, const cJSON *added) {
    static const struct {
        const char *typ, *key;
    } SPECIALS[] = {{"bos", "tokenizer.ggml.bos_token_id"},     {"eos", "tokenizer.ggml.eos_token_id"},
                    {"unk", "tokenizer.ggml.unknown_token_id"}, {"sep", "tokenizer.ggml.seperator_token_id"},
                    {"pad", "tokenizer.ggml.padding_token_id"}, {"cls", "tokenizer.ggml.cls_token_id"},
                    {"mask", "tokenizer.ggml.mask_token_id"}};
    int32_t bos = special_id(t, added, "bos"), eos = special_id(t, added, "eos");
    for (size_t i = 0; i < sizeof SPECIALS / sizeof SPECIALS[0]; i++) {
        int32_t id = special_id(t, added, SPECIALS[i].typ);
        if (id >= 0)
            MF_TRY(mf_kv_add_u32(t->mf, SPECIALS[i].key, (uint32_t)id));
    }
    int add_bos = -1, add_eos = -1;
    template_adds(t, bos, eos, &add_bos, &add_eos);
    const cJSON *ab = t->tcfg ? item(t->tcfg, "add_bos_token") : NULL;
    const cJSON *ae = t->tcfg ? item(t->tcfg, "add_eos_token") : NULL;
    if (cJSON_IsBool(ab))
        add_bos = cJSON_IsTrue(ab);
    if (cJSON_IsBool(ae))
        add_eos = cJSON_IsTrue(ae);
    if (add_bos >= 0)
        MF_TRY(mf_kv_add_bool(t->mf, "tokenizer.ggml.add_bos_token", add_bos));
    if (add_eos >= 0)
        MF_TRY(mf_kv_add_bool(t->mf, "tokenizer.ggml.add_eos_token", add_eos));
    return chat_templates(t);
}

/* SentencePiece as tokenizer.json: byte fallback, and the space-to-▁
 * normalizer or Metaspace pre-tokenizer.  Whether it prepends ▁ to the
 * text (llama.cpp's add_space_prefix, true unless said). */
static bool spm_prefix(const cJSON *root) {
    const cJSON *norm = item(root, "normalizer");
    const cJSON *seq = is_type(norm, "Sequence") ? item(norm, "normalizers") : NULL;
    for (const cJSON *n = cJSON_IsArray(seq) ? seq->child : norm; n; n = seq ? n->next : NULL)
        if (is_type(n, "Prepend"))
            return true;
    const cJSON *pre = item(root, "pre_tokenizer");
    if (is_type(pre, "Metaspace")) {
        const char *scheme = str_of(pre, "prepend_scheme");
        return !scheme || strcmp(scheme, "never");
    }
    return false;
}

/* Unigram (T5, XLM-R): model.vocab is [[piece, score], ...] in id order;
 * types as the converter's tokenizer.json path (conversion/bert.py) gives
 * them: unk_id unknown, special added tokens control, other added tokens
 * user-defined, the rest normal; then llama.cpp's UGM keys (hf_unigram.c). */
static tport_status read_unigram(hf_tok *t, const cJSON *added) {
    tport_model_file *mf = t->mf;
    const cJSON *vocab = item(t->model, "vocab");
    if (!cJSON_IsArray(vocab))
        return bad(t, "model.vocab is not an array of [piece, score]");
    int32_t unk;
    if (!json_id(item(t->model, "unk_id"), &unk))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: a Unigram model without unk_id is not supported", t->path);
    mf_unigram_norm norm;
    MF_TRY(mf_hf_unigram_norm(mf, t->path, t->root, &norm));
    /* count: the pieces, added tokens and config.json's vocab_size */
    int32_t n = 0, max = -1, id;
    for (const cJSON *e = vocab->child; e; e = e->next, n++)
        if (n >= MAX_TOKENS || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(cJSON_GetArrayItem(e, 0)) ||
            !cJSON_IsNumber(cJSON_GetArrayItem(e, 1)))
            return bad(t, "model.vocab: an entry is not [piece, score] (or more than 2^24 of them)");
    max = n - 1;
    MF_TRY(raise_max_id(t, added, &max));
    if (unk > max)
        return bad(t, "model.unk_id is not a token");
    t->n = max + 1;
    t->tokens = mf_alloc_array(mf, (uint64_t)t->n, sizeof(char *));
    t->types = mf_alloc_array(mf, (uint64_t)t->n, sizeof(int32_t));
    float *scores = mf_alloc_array(mf, (uint64_t)t->n, sizeof(float));
    t->added = calloc((size_t)t->n, 1);
    t->special = calloc((size_t)t->n, 1);
    if (!t->tokens || !t->types || !scores || !t->added || !t->special)
        return TPORT_STATUS_OUT_OF_MEMORY;
    id = 0;
    for (const cJSON *e = vocab->child; e; e = e->next, id++) {
        const char *piece = cJSON_GetArrayItem(e, 0)->valuestring;
        if (!(t->tokens[id] = mf_strndup(mf, piece, strlen(piece))))
            return TPORT_STATUS_OUT_OF_MEMORY;
        scores[id] = (float)cJSON_GetArrayItem(e, 1)->valuedouble;
        t->types[id] = TT_NORMAL;
    }
    for (const cJSON *a = added ? added->child : NULL; a; a = a->next) {
        json_id(item(a, "id"), &id);
        const char *content = item(a, "content")->valuestring;
        if (!t->tokens[id] && !(t->tokens[id] = mf_strndup(mf, content, strlen(content))))
            return TPORT_STATUS_OUT_OF_MEMORY;
        else if (strcmp(t->tokens[id], content)) {
            char msg[160];
            snprintf(msg, sizeof msg, "added_tokens: id %d is '%.40s' in model.vocab", (int)id, t->tokens[id]);
            return bad(t, msg);
        }
        t->types[id] = cJSON_IsTrue(item(a, "special")) ? TT_CONTROL : TT_USER;
    }
    for (int32_t i = 0; i < t->n; i++)
        if (!t->tokens[i]) { /* the converter's placeholder */
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%d]", (int)i);
            if (!(t->tokens[i] = mf_strndup(mf, pad, strlen(pad))))
                return TPORT_STATUS_OUT_OF_MEMORY;
            t->types[i] = TT_UNUSED;
            scores[i] = -10000.0f;
        }
    t->types[unk] = TT_UNKNOWN;
    MF_TRY(mf_kv_add_str(mf, "tokenizer.ggml.model", "t5"));
    MF_TRY(mf_kv_add_str(mf, "tokenizer.ggml.pre", "default"));
    MF_TRY(mf_kv_add_array(mf, "tokenizer.ggml.tokens", TPORT_KV_STRING, (uint64_t)t->n, t->tokens));
    MF_TRY(mf_kv_add_array(mf, "tokenizer.ggml.scores", TPORT_KV_F32, (uint64_t)t->n, scores));
    MF_TRY(mf_kv_add_array(mf, "tokenizer.ggml.token_type", TPORT_KV_I32, (uint64_t)t->n, t->types));
    MF_TRY(mf_kv_add_bool(mf, "tokenizer.ggml.add_space_prefix", norm.add_prefix));
    MF_TRY(mf_kv_add_bool(mf, "tokenizer.ggml.remove_extra_whitespaces", norm.remove_ws));
    if (norm.charsmap_len > 0)
        MF_TRY(mf_kv_add_array(mf, "tokenizer.ggml.precompiled_charsmap", TPORT_KV_U8, norm.charsmap_len,
                               norm.charsmap));
    /* tokenizer_config.json's unk_token, if any, replaces it */
    MF_TRY(mf_kv_add_u32(mf, "tokenizer.ggml.unknown_token_id", (uint32_t)unk));
    return write_specials(t, added);
}

static tport_status read_tokenizer(hf_tok *t) {
    tport_model_file *mf = t->mf;
    const char *mtype = str_of(t->model, "type");
    const cJSON *added0 = item(t->root, "added_tokens");
    if (mtype && !strcmp(mtype, "Unigram")) {
        if (added0 && !cJSON_IsArray(added0))
            return bad(t, "added_tokens is not an array");
        return read_unigram(t, added0);
    }
    if (!mtype || strcmp(mtype, "BPE"))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tokenizer model '%s' is not supported (BPE, Unigram)",
                           t->path, mtype ? mtype : "(none)");
    const cJSON *vocab = item(t->model, "vocab"), *added = item(t->root, "added_tokens");
    if (!cJSON_IsObject(vocab))
        return bad(t, "model.vocab is not an object");
    if (added && !cJSON_IsArray(added))
        return bad(t, "added_tokens is not an array");
    bool byte_fallback = cJSON_IsTrue(item(t->model, "byte_fallback"));
    t->spm = byte_fallback;
    if (!t->spm && !has_byte_level(item(t->root, "pre_tokenizer")))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: a BPE tokenizer with neither byte fallback "
                           "(SentencePiece) nor a ByteLevel pre-tokenizer is not supported", t->path);
    MF_TRY(count_tokens(t, vocab, added));
    MF_TRY(fill_tokens(t, vocab, added));
    int32_t unk = special_id(t, added, "unk");
    set_types(t, unk);
    char **merges = NULL;
    uint64_t n_merges = 0;
    MF_TRY(read_merges(t, &merges, &n_merges));
    const char *pre = "default";
    if (!t->spm)
        MF_TRY(pre_name(t, &pre));
    MF_TRY(mf_kv_add_str(mf, "tokenizer.ggml.model", t->spm ? "llama" : "gpt2"));
    MF_TRY(mf_kv_add_str(mf, "tokenizer.ggml.pre", pre));
    MF_TRY(mf_kv_add_array(mf, "tokenizer.ggml.tokens", TPORT_KV_STRING, (uint64_t)t->n, t->tokens));
    if (t->spm) {
        float *scores;
        MF_TRY(spm_scores(t, merges, n_merges, &scores));
        MF_TRY(mf_kv_add_array(mf, "tokenizer.ggml.scores", TPORT_KV_F32, (uint64_t)t->n, scores));
    }
    MF_TRY(mf_kv_add_array(mf, "tokenizer.ggml.token_type", TPORT_KV_I32, (uint64_t)t->n, t->types));
    if (!t->spm)
        MF_TRY(mf_kv_add_array(mf, "tokenizer.ggml.merges", TPORT_KV_STRING, n_merges, merges));
    if (t->spm && !spm_prefix(t->root))
        MF_TRY(mf_kv_add_bool(mf, "tokenizer.ggml.add_space_prefix", false));
    return write_specials(t, added);
}

/* ---- tokenizer.model without tokenizer.json ----------------------------------- */
/* The converter's SentencePiece path (_create_vocab_sentencepiece, which
 * Llama-family classes try first): config.json's vocab_size ids (else the
 * pieces'), "[PADi]" unused tokens scored -10000 where no piece is; a
 * piece keeps its score and its type when unknown, control, unused or
 * byte, else it is normal (user-defined pieces too, as there); then
 * added_tokens.json (user-defined) and tokenizer_config.json's
 * added_tokens_decoder (control when special or looking special, else
 * user-defined with U+2581 as spaces), both scored -1000.  Special ids come
 * from config.json's *_token_id, as gguf-py's SpecialVocab finds them
 * without a tokenizer.json. */
static tport_status set_added(hf_tok *t, float *scores, int32_t id, const char *content, int32_t type) {
    if (id < 0 || id >= t->n)
        return TPORT_STATUS_OK; /* the converter ignores ids out of range */
    size_t len = strlen(content);
    char *text = mf_strndup(t->mf, content, len);
    if (!text)
        return TPORT_STATUS_OUT_OF_MEMORY;
    if (type == TT_USER) /* pre-normalized spaces: U+2581 (3 bytes) -> ' ' */
        for (char *s = text, *d = text; ; ) {
            if (!strncmp(s, "\xe2\x96\x81", 3)) {
                *d++ = ' ';
                s += 3;
            } else if (!(*d++ = *s++)) {
                break;
            }
        }
    t->tokens[id] = text;
    t->types[id] = type;
    scores[id] = -1000.0f;
    return TPORT_STATUS_OK;
}

static tport_status spm_added(hf_tok *t, float *scores) {
    tport_status st;
    cJSON *added = parse_beside(t->mf->path, "added_tokens.json", &st, NULL);
    int32_t id;
    for (const cJSON *a = cJSON_IsObject(added) ? added->child : NULL; !st && a; a = a->next)
        if (json_id(a, &id))
            st = set_added(t, scores, id, a->string, TT_USER);
    cJSON_Delete(added);
    const cJSON *dec = t->tcfg ? item(t->tcfg, "added_tokens_decoder") : NULL;
    for (const cJSON *a = cJSON_IsObject(dec) ? dec->child : NULL; !st && a; a = a->next) {
        const char *content = str_of(a, "content");
        char *end = NULL;
        long v = strtol(a->string, &end, 10);
        if (!content || !*a->string || *end || v < 0 || v >= MAX_TOKENS)
            continue;
        bool control = cJSON_IsTrue(item(a, "special")) || looks_special(content);
        st = set_added(t, scores, (int32_t)v, content, control ? TT_CONTROL : TT_USER);
    }
    return st;
}

static tport_status read_spm_model(hf_tok *t, const uint8_t *data, size_t size) {
    tport_model_file *mf = t->mf;
    spm_piece *pieces = NULL;
    int32_t n_pieces = 0;
    MF_TRY(mf_spm_parse(data, size, t->path, &pieces, &n_pieces));
    uint64_t cfg_n = 0;
    t->n = t->config && mf_json_uint(item(t->config, "vocab_size"), &cfg_n) && cfg_n > 0 && cfg_n < MAX_TOKENS
               ? (int32_t)cfg_n
               : n_pieces;
    /* the converter pads to vocab_size; real folders pad by a few hundred
     * at most, a hostile one would make millions of placeholders */
    if (t->n > n_pieces + (1 << 16)) {
        free(pieces);
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json's vocab_size %d is far beyond the %d pieces "
                           "of tokenizer.model", t->path, (int)t->n, (int)n_pieces);
    }
    t->tokens = mf_alloc_array(mf, (uint64_t)t->n, sizeof(char *));
    t->types = mf_alloc_array(mf, (uint64_t)t->n, sizeof(int32_t));
    float *scores = mf_alloc_array(mf, (uint64_t)t->n, sizeof(float));
    tport_status st = t->tokens && t->types && scores ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    for (int32_t i = 0; i < t->n && !st; i++) {
        if (i < n_pieces) {
            const spm_piece *p = &pieces[i];
            t->tokens[i] = mf_strndup(mf, p->text, p->len);
            scores[i] = p->score;
            t->types[i] = p->type == TT_UNKNOWN || p->type == TT_CONTROL || p->type == TT_UNUSED ||
                                  p->type == TT_BYTE
                              ? p->type
                              : TT_NORMAL;
        } else {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%d]", (int)i);
            t->tokens[i] = mf_strndup(mf, pad, strlen(pad));
            scores[i] = -10000.0f;
            t->types[i] = TT_UNUSED;
        }
        if (!t->tokens[i])
            st = TPORT_STATUS_OUT_OF_MEMORY;
    }
    free(pieces);
    if (!st)
        st = spm_added(t, scores);
    if (!st)
        st = mf_kv_add_str(mf, "tokenizer.ggml.model", "llama");
    if (!st)
        st = mf_kv_add_str(mf, "tokenizer.ggml.pre", "default");
    if (!st)
        st = mf_kv_add_array(mf, "tokenizer.ggml.tokens", TPORT_KV_STRING, (uint64_t)t->n, t->tokens);
    if (!st)
        st = mf_kv_add_array(mf, "tokenizer.ggml.scores", TPORT_KV_F32, (uint64_t)t->n, scores);
    if (!st)
        st = mf_kv_add_array(mf, "tokenizer.ggml.token_type", TPORT_KV_I32, (uint64_t)t->n, t->types);
    return st ? st : write_specials(t, NULL);
}

/* A folder with tokenizer.model and no tokenizer.json. */
static tport_status spm_folder(tport_model_file *mf, const cJSON *config) {
    char *path = beside(mf->path, "tokenizer.model"), *data = NULL;
    size_t len = 0;
    tport_status st = path ? slurp(path, MAX_TOKENIZER_BYTES, &data, &len) : TPORT_STATUS_OUT_OF_MEMORY;
    if (st || !data) {
        free(path);
        return st;
    }
    cJSON *tcfg = parse_beside(mf->path, "tokenizer_config.json", &st, NULL);
    hf_tok t = {.mf = mf, .path = path, .tcfg = tcfg, .config = config};
    if (!st)
        st = read_spm_model(&t, (const uint8_t *)data, len);
    cJSON_Delete(tcfg);
    free(data);
    free(path);
    if (!st)
        mf_add_note(mf, "tokenizer from tokenizer.model");
    return st;
}

tport_status mf_hf_tokenizer(tport_model_file *mf, const mf_cursor *c, const struct cJSON *config) {
    (void)c;
    if (mf->borrowed)
        return TPORT_STATUS_OK;
    tport_status st;
    char *path = NULL;
    cJSON *root = parse_beside(mf->path, "tokenizer.json", &st, &path);
    if (!root) {
        free(path);
        return st ? st : spm_folder(mf, config);
    }
    cJSON *tcfg = parse_beside(mf->path, "tokenizer_config.json", &st, NULL);
    hf_tok t = {.mf = mf, .path = path, .root = root, .model = item(root, "model"), .tcfg = tcfg,
                .config = config};
    if (!st && !cJSON_IsObject(t.model))
        st = bad(&t, "no \"model\" object");
    if (!st)
        st = read_tokenizer(&t);
    free(t.added);
    free(t.special);
    free(t.map.slot);
    cJSON_Delete(tcfg);
    cJSON_Delete(root);
    free(path);
    if (!st)
        mf_add_note(mf, "tokenizer from tokenizer.json");
    return st;
}

#endif
