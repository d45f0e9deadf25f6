/* A tokenizer from a model file's metadata, with llama.cpp's defaults and
 * quirks (llama_vocab::impl::load):
 *
 * - "llama" (SentencePiece): BOS 1, EOS 2, UNK 0, add BOS, no EOS;
 *   "gpt2" (byte-level BPE): BOS = EOS = 11 (!), no BOS added except for
 *   the Llama 3 family of pre-tokenizers; "t5" (Unigram): EOS 1, UNK 2, no
 *   BOS, add EOS; then the file's ids and its
 *   tokenizer.ggml.add_bos_token / add_eos_token override.
 * - Tokens whose text marks the end of a turn or generation (<|eot_id|>,
 *   <|im_end|>, <|endoftext|>, ...) and the fill-in-the-middle tokens
 *   become control tokens whatever type the file stored: converters often
 *   stored them as normal or user-defined, and a user-defined token would
 *   be matched in plain text and printed, a normal one would be neither
 *   recognized as special nor hidden in output.
 * - Phi-3 strips white space after special tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenize/tokenizer_impl.h"

static const tport_kv *kv_of(const tport_model_file *mf, const char *key) { return tport_model_file_kv(mf, key); }

static bool kv_bool(const tport_model_file *mf, const char *key, bool *b) {
    const tport_kv *kv = kv_of(mf, key);
    if (!kv || kv->type != TPORT_KV_BOOL)
        return false;
    *b = kv->v.b;
    return true;
}

/* An integer key that names a token id in [0, n). */
static bool kv_id(const tport_model_file *mf, const char *key, int32_t n, tport_token *id) {
    const tport_kv *kv = kv_of(mf, key);
    if (!kv)
        return false;
    int64_t v;
    switch (kv->type) {
    case TPORT_KV_U8: case TPORT_KV_U16: case TPORT_KV_U32: case TPORT_KV_U64:
        v = kv->v.u > INT32_MAX ? -1 : (int64_t)kv->v.u;
        break;
    case TPORT_KV_I8: case TPORT_KV_I16: case TPORT_KV_I32: case TPORT_KV_I64:
        v = kv->v.i;
        break;
    default:
        return false;
    }
    if (v < 0 || v >= n) {
        tport_log(TPORT_LOG_WARN, "%s: %s = %lld is outside the vocabulary; ignored", mf->path, key, (long long)v);
        return false;
    }
    *id = (tport_token)v;
    return true;
}

static const char *kv_str(const tport_model_file *mf, const char *key) {
    const tport_kv *kv = kv_of(mf, key);
    return kv && kv->type == TPORT_KV_STRING ? kv->v.s : NULL;
}

/* ---- pre-tokenizer names (llama-vocab.cpp) ------------------------------ */

typedef struct pre_name {
    const char *name;
    tport_pretok pre;
    bool ignore_merges, add_bos;
} pre_name;

static const pre_name PRE_NAMES[] = {
    {"default", TPORT_PRE_DEFAULT, false, false},
    {"llama3", TPORT_PRE_LLAMA3, true, true},
    {"llama-v3", TPORT_PRE_LLAMA3, true, true},
    {"llama-bpe", TPORT_PRE_LLAMA3, true, true},
    {"falcon3", TPORT_PRE_LLAMA3, true, true},
    {"falcon-h1", TPORT_PRE_LLAMA3, true, true},
    {"pixtral", TPORT_PRE_LLAMA3, true, true},
    {"midm-2.0", TPORT_PRE_LLAMA3, true, true},
    {"lfm2", TPORT_PRE_LLAMA3, true, true},
    {"jina-v5-nano", TPORT_PRE_LLAMA3, true, true},
    {"dbrx", TPORT_PRE_LLAMA3, false, false},
    {"smaug-bpe", TPORT_PRE_LLAMA3, false, false},
    {"glm4", TPORT_PRE_LLAMA3, false, false},
    {"chatglm-bpe", TPORT_PRE_LLAMA3, false, false},
    {"deepseek-llm", TPORT_PRE_DEEPSEEK_LLM, false, false},
    {"deepseek-coder", TPORT_PRE_DEEPSEEK_CODER, false, false},
    {"deepseek-v3", TPORT_PRE_DEEPSEEK3, false, false},
    {"hunyuan-dense", TPORT_PRE_DEEPSEEK3, false, false},
    {"joyai-llm", TPORT_PRE_DEEPSEEK3, false, false},
    {"laguna", TPORT_PRE_LAGUNA, false, false},
    {"afmoe", TPORT_PRE_AFMOE, false, false},
    {"tiny_aya", TPORT_PRE_TINY_AYA, false, false},
    {"cohere2moe", TPORT_PRE_TINY_AYA, false, false},
    {"seed-coder", TPORT_PRE_SEED_CODER, false, false},
    {"bailingmoe", TPORT_PRE_BAILINGMOE, false, false},
    {"bailingmoe2", TPORT_PRE_BAILINGMOE, false, false},
    {"llada-moe", TPORT_PRE_BAILINGMOE, false, false},
    {"minicpm5", TPORT_PRE_MINICPM5, true, false},
    {"granite-embed-multi-97m", TPORT_PRE_GRANITE_MULTI, true, false},
    {"exaone-moe", TPORT_PRE_EXAONE_MOE, false, false},
    {"jais-2", TPORT_PRE_JAIS2, false, false},
    {"youtu", TPORT_PRE_YOUTU, true, false},
    {"falcon", TPORT_PRE_FALCON, false, false},
    {"mpt", TPORT_PRE_GPT2, false, false},
    {"olmo", TPORT_PRE_GPT2, false, false},
    {"jais", TPORT_PRE_GPT2, false, false},
    {"trillion", TPORT_PRE_GPT2, false, false},
    {"granite-docling", TPORT_PRE_GPT2, false, false},
    {"gpt-2", TPORT_PRE_GPT2, false, false},
    {"phi-2", TPORT_PRE_GPT2, false, false},
    {"jina-es", TPORT_PRE_GPT2, false, false},
    {"jina-de", TPORT_PRE_GPT2, false, false},
    {"gigachat", TPORT_PRE_GPT2, false, false},
    {"jina-v2-es", TPORT_PRE_GPT2, false, false},
    {"jina-v2-de", TPORT_PRE_GPT2, false, false},
    {"a.x-4.0", TPORT_PRE_GPT2, false, false},
    {"mellum", TPORT_PRE_GPT2, false, false},
    {"modern-bert", TPORT_PRE_GPT2, false, false},
    {"exaone4", TPORT_PRE_GPT2, false, false},
    {"starcoder", TPORT_PRE_STARCODER, false, false},
    {"refact", TPORT_PRE_STARCODER, false, false},
    {"command-r", TPORT_PRE_STARCODER, false, false},
    {"smollm", TPORT_PRE_STARCODER, false, false},
    {"codeshell", TPORT_PRE_STARCODER, false, false},
    {"exaone", TPORT_PRE_STARCODER, false, false},
    {"minerva-7b", TPORT_PRE_STARCODER, false, false},
    {"mellum2", TPORT_PRE_STARCODER, false, false},
    {"qwen2", TPORT_PRE_QWEN2, false, false},
    {"deepseek-r1-qwen", TPORT_PRE_QWEN2, false, false},
    {"kormo", TPORT_PRE_QWEN2, false, false},
    {"f2llmv2", TPORT_PRE_QWEN2, false, false},
    {"megrez", TPORT_PRE_QWEN2, false, false},
    {"stablelm2", TPORT_PRE_QWEN2, false, false},
    {"hunyuan", TPORT_PRE_QWEN2, false, false},
    {"solar-open", TPORT_PRE_QWEN2, false, false},
    {"grok-2", TPORT_PRE_QWEN2, false, false},
    {"qwen35", TPORT_PRE_QWEN35, false, false},
    {"gemma4", TPORT_PRE_NEWLINES, false, false},
    {"bloom", TPORT_PRE_BLOOM, false, false},
    {"poro-chat", TPORT_PRE_BLOOM, false, false},
    {"gpt3-finnish", TPORT_PRE_BLOOM, false, false},
    {"viking", TPORT_PRE_VIKING, false, false},
    {"tekken", TPORT_PRE_TEKKEN, true, true},
    {"gpt-4o", TPORT_PRE_GPT4O, false, false},
    {"llama4", TPORT_PRE_GPT4O, false, false},
    {"kanana2", TPORT_PRE_GPT4O, false, false},
    {"talkie", TPORT_PRE_GPT4O, false, false},
    {"minimax-m2", TPORT_PRE_GPT4O, false, false},
};

static tport_status set_pre(tport_tokenizer *tk, const tport_model_file *mf) {
    const char *name = kv_str(mf, "tokenizer.ggml.pre");
    if (!name) {
        tport_log(TPORT_LOG_WARN, "%s: no tokenizer.ggml.pre: using the 'default' pre-tokenizer (as llama.cpp)",
                  mf->path);
        name = "default";
    }
    for (size_t i = 0; i < sizeof PRE_NAMES / sizeof PRE_NAMES[0]; i++) {
        const pre_name *p = &PRE_NAMES[i];
        if (strcmp(p->name, name) != 0)
            continue;
        if (!tport_pretok_supported(p->pre))
            break;
        tk->pre = p->pre;
        tk->ignore_merges = p->ignore_merges;
        tk->add_bos = p->add_bos;
        if (!strcmp(name, "glm4") || !strcmp(name, "chatglm-bpe"))
            tk->bos = -1; /* llama.cpp drops the BOS default for GLM */
        return TPORT_STATUS_OK;
    }
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: pre-tokenizer '%s' is not supported", mf->path, name);
}

static tport_status load_merges(tport_tokenizer *tk, const tport_model_file *mf) {
    const tport_kv *kv = kv_of(mf, "tokenizer.ggml.merges");
    if (!kv)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: the BPE vocabulary has no tokenizer.ggml.merges",
                           mf->path);
    if (kv->type != TPORT_KV_ARRAY || kv->elem_type != TPORT_KV_STRING)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tokenizer.ggml.merges is not an array of strings",
                           mf->path);
    if (kv->n_elems > INT32_MAX / 4)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %llu merges", mf->path, (unsigned long long)kv->n_elems);
    char **m = kv->v.arr;
    size_t bytes = 0;
    for (uint64_t i = 0; i < kv->n_elems; i++) {
        bytes += m[i] ? strlen(m[i]) : 0;
        if (bytes > UINT32_MAX)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: merges too long", mf->path);
    }
    tport_status st = tport_bpe_reserve_merges(tk, (size_t)kv->n_elems, bytes);
    if (st != TPORT_STATUS_OK)
        return st;
    for (uint64_t i = 0; i < kv->n_elems; i++)
        if (m[i])
            tport_bpe_add_merge(tk, m[i], strlen(m[i]), (int32_t)i);
    return TPORT_STATUS_OK;
}

/* ---- control-token detection ------------------------------------------- */

static void mark(tport_tokenizer *tk, const char *text, uint16_t set) {
    tport_token id = tport_tokenizer_find(tk, text, strlen(text));
    if (id >= 0)
        tk->attr[id] |= set;
}

/* A special-token slot llama.cpp fills from metadata or, failing that,
 * from the first token with one of these texts, which it makes control. */
typedef struct slot {
    const char *keys[2];
    const char *texts[12];
} slot;

static const slot SLOTS[] = {
    {{"tokenizer.ggml.eot_token_id"},
     {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
      "_<EOT>", "[EOT]", "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>", "<end_of_utterance>"}},
    {{"tokenizer.ggml.eom_token_id"}, {"<|eom_id|>"}},
    {{"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
     {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\357\275\234fim\342\226\201begin\357\275\234>", "<PRE>",
      "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
    {{"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
     {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\357\275\234fim\342\226\201hole\357\275\234>", "<SUF>",
      "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
    {{"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"},
     {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\357\275\234fim\342\226\201end\357\275\234>", "<MID>",
      "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
    {{"tokenizer.ggml.fim_pad_token_id"}, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
    {{"tokenizer.ggml.fim_rep_token_id"}, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
    {{"tokenizer.ggml.fim_sep_token_id"}, {"<|file_sep|>"}},
};

/* Texts of end-of-generation tokens: always control. */
static const char *const EOG_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>", "[e~[",
};

static bool has(const tport_tokenizer *tk, const char *text) {
    return tport_tokenizer_find(tk, text, strlen(text)) >= 0;
}

static void mark_control_tokens(tport_tokenizer *tk, const tport_model_file *mf) {
    for (size_t s = 0; s < sizeof SLOTS / sizeof SLOTS[0]; s++) {
        tport_token id;
        bool given = false;
        for (int k = 0; k < 2 && SLOTS[s].keys[k]; k++)
            given |= kv_id(mf, SLOTS[s].keys[k], tk->n_tokens, &id);
        if (given)
            continue;
        /* llama.cpp walks an unordered_map, so with several candidates in
         * one vocabulary which one it takes is unspecified; we take the
         * first in its list */
        for (int t = 0; t < 12 && SLOTS[s].texts[t]; t++) {
            id = tport_tokenizer_find(tk, SLOTS[s].texts[t], strlen(SLOTS[s].texts[t]));
            if (id >= 0) {
                tk->attr[id] |= TPORT_ATTR_CONTROL;
                break;
            }
        }
    }
    for (int32_t i = 0; i < tk->n_tokens; i++) /* control tokens named "unused" */
        if ((tk->attr[i] & TPORT_ATTR_CONTROL) && strstr(tk->text[i], "unused")) /* up to a NUL, as strstr there */
            tk->attr[i] |= TPORT_ATTR_UNUSED;
    for (size_t i = 0; i < sizeof EOG_TEXTS / sizeof EOG_TEXTS[0]; i++)
        mark(tk, EOG_TEXTS[i], TPORT_ATTR_CONTROL);
    /* gpt-oss: always printed */
    static const char *const shown[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
    for (size_t i = 0; i < 4; i++) {
        tport_token id = tport_tokenizer_find(tk, shown[i], strlen(shown[i]));
        if (id >= 0)
            tk->attr[id] = TPORT_ATTR_USER_DEFINED;
    }
    /* o200k_harmony and solar-open: <|end|> is not an end of generation */
    bool call = has(tk, "<|call|>") || has(tk, "<|calls|>");
    if (has(tk, "<|end|>") && call && (has(tk, "<|return|>") || has(tk, "<|flush|>")))
        tk->attr[tport_tokenizer_find(tk, "<|end|>", 7)] = TPORT_ATTR_USER_DEFINED;
    /* gemma4 and paddleocr: </s> is a normal token */
    if (has(tk, "<|tool_response>") && has(tk, "</s>"))
        tk->attr[tport_tokenizer_find(tk, "</s>", 4)] = TPORT_ATTR_NORMAL;
}

/* Per-model attributes llama.cpp sets after building its special list. */
static void strip_attrs(tport_tokenizer *tk, const tport_model_file *mf) {
    const char *name = kv_str(mf, "general.name");
    const char *pre = kv_str(mf, "tokenizer.ggml.pre");
    const char *arch = kv_str(mf, "general.architecture");
    char lower[256] = "";
    for (size_t i = 0; name && name[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    bool jina = pre && (strstr(pre, "jina-v2-de") || strstr(pre, "jina-v2-es") || strstr(pre, "jina-v2-code"));
    jina |= arch && (strstr(arch, "nomic-bert-moe") || strstr(arch, "jina-bert-v3"));
    if (jina) {
        mark(tk, "<mask>", TPORT_ATTR_LSTRIP);
    } else if (strstr(lower, "phi-3") || strstr(lower, "phi3")) {
        for (int32_t i = 0; i < tk->n_special; i++)
            tk->attr[tk->special[i]] |= TPORT_ATTR_RSTRIP;
        mark(tk, "</s>", TPORT_ATTR_RSTRIP);
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t i = 0; i < 3; i++) {
            tport_token id = tport_tokenizer_find(tk, keep[i], strlen(keep[i]));
            if (id >= 0)
                tk->attr[id] &= (uint16_t)~TPORT_ATTR_RSTRIP;
        }
    } else if (strstr(lower, "modern-bert")) {
        mark(tk, "[MASK]", TPORT_ATTR_LSTRIP);
    }
}

/* ---- loading ------------------------------------------------------------ */

/* spm_bpe: Gemma 4's SentencePiece-style BPE, whose pre-tokenizer is
 * fixed (llama.cpp ignores tokenizer.ggml.pre there). */
static tport_status new_bpe(const tport_model_file *mf, bool spm_bpe, tport_tokenizer **out) {
    const tport_vocab *v = &mf->vocab;
    tport_tokenizer *tk = tport_tokenizer_alloc(v->n_tokens);
    if (!tk)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: %d tokens", (int)v->n_tokens);
    *out = tk;
    tk->kind = TPORT_TOK_BPE;
    tk->add_space_prefix = false;
    tk->add_bos = false;
    tk->bos = tk->eos = 11 < v->n_tokens ? 11 : -1; /* llama.cpp's BPE default */
    tport_status st = tport_tokenizer_copy_tokens(tk, v, false);
    if (st == TPORT_STATUS_OK)
        st = tport_tokenizer_index(tk);
    tk->spm_bpe = spm_bpe;
    tk->pre = TPORT_PRE_NEWLINES;
    if (st == TPORT_STATUS_OK && !spm_bpe)
        st = set_pre(tk, mf);
    if (st == TPORT_STATUS_OK)
        st = load_merges(tk, mf);
    return st;
}

/* WordPiece (BERT): llama.cpp's defaults are [CLS] 101 as BOS, [UNK] 100,
 * [SEP] 102 appended by add_special, no EOS; the normalizer lowercases
 * and strips accents unless the file says otherwise. */
static tport_status new_wpm(const tport_model_file *mf, tport_tokenizer **out) {
    const tport_vocab *v = &mf->vocab;
    tport_tokenizer *tk = tport_tokenizer_alloc(v->n_tokens);
    if (!tk)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: %d tokens", (int)v->n_tokens);
    *out = tk;
    tk->kind = TPORT_TOK_WPM;
    tk->add_space_prefix = tk->add_eos = false;
    tk->add_bos = true;
    tk->bos = 101 < v->n_tokens ? 101 : -1;
    tk->unk = 100 < v->n_tokens ? 100 : -1;
    tk->sep = 102 < v->n_tokens ? 102 : -1;
    tk->eos = -1;
    tk->wpm_lowercase = true;
    kv_bool(mf, "tokenizer.ggml.normalizer.lowercase", &tk->wpm_lowercase);
    tk->wpm_strip_accents = tk->wpm_lowercase;
    kv_bool(mf, "tokenizer.ggml.normalizer.strip_accents", &tk->wpm_strip_accents);
    kv_id(mf, "tokenizer.ggml.seperator_token_id", v->n_tokens, &tk->sep); /* sic, as GGUF spells it */
    tport_status st = tport_tokenizer_copy_tokens(tk, v, false);
    for (int32_t i = 0; st == TPORT_STATUS_OK && i < tk->n_tokens; i++)
        if (tk->len[i] > tk->max_token_len)
            tk->max_token_len = tk->len[i];
    return st == TPORT_STATUS_OK ? tport_tokenizer_index(tk) : st;
}

/* Unigram (GGUF "t5"): llama.cpp's defaults are EOS 1, UNK 2, no BOS, add
 * EOS; add_space_prefix and remove_extra_whitespaces false unless the file
 * says; spaces are always escaped to U+2581.  The precompiled charsmap, if
 * any, must be an array of (u)int8. */
static tport_status new_ugm(const tport_model_file *mf, tport_tokenizer **out) {
    const tport_vocab *v = &mf->vocab;
    tport_tokenizer *tk = tport_tokenizer_alloc(v->n_tokens);
    if (!tk)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: %d tokens", (int)v->n_tokens);
    *out = tk;
    tk->kind = TPORT_TOK_UGM;
    tk->add_bos = false;
    tk->add_eos = true;
    tk->bos = -1;
    tk->eos = 1 < v->n_tokens ? 1 : -1;
    tk->unk = 2 < v->n_tokens ? 2 : -1;
    tk->add_space_prefix = false;
    kv_bool(mf, "tokenizer.ggml.add_space_prefix", &tk->add_space_prefix);
    kv_bool(mf, "tokenizer.ggml.remove_extra_whitespaces", &tk->ugm_merge_spaces);
    kv_id(mf, "tokenizer.ggml.bos_token_id", v->n_tokens, &tk->bos);
    kv_id(mf, "tokenizer.ggml.eos_token_id", v->n_tokens, &tk->eos);
    kv_id(mf, "tokenizer.ggml.unknown_token_id", v->n_tokens, &tk->unk);
    if (tk->unk < 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: the Unigram vocabulary has no unknown token", mf->path);
    const tport_kv *cm = kv_of(mf, "tokenizer.ggml.precompiled_charsmap");
    tport_status st = TPORT_STATUS_OK;
    if (cm) {
        if (cm->type != TPORT_KV_ARRAY || (cm->elem_type != TPORT_KV_U8 && cm->elem_type != TPORT_KV_I8))
            return tport_error(TPORT_STATUS_BAD_FORMAT,
                               "%s: tokenizer.ggml.precompiled_charsmap is not an array of (u)int8", mf->path);
        st = tport_ugm_set_charsmap(tk, cm->v.arr, (size_t)cm->n_elems);
        if (st != TPORT_STATUS_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", tport_last_error());
            return tport_error(st, "%s: tokenizer.ggml.%s", mf->path, why);
        }
    }
    st = tport_tokenizer_copy_tokens(tk, v, false);
    for (int32_t i = 0; st == TPORT_STATUS_OK && i < tk->n_tokens; i++)
        if (tk->len[i] > tk->max_token_len)
            tk->max_token_len = tk->len[i];
    return st == TPORT_STATUS_OK ? tport_tokenizer_index(tk) : st;
}

/* A GGML file of ggml's example programs: raw-byte tokens, no merges. */
static tport_status new_greedy(const tport_model_file *mf, tport_tokenizer **out) {
    const tport_vocab *v = &mf->vocab;
    tport_tokenizer *tk = tport_tokenizer_alloc(v->n_tokens);
    if (!tk)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: %d tokens", (int)v->n_tokens);
    *out = tk;
    tk->kind = TPORT_TOK_GREEDY;
    tk->add_space_prefix = tk->add_bos = tk->add_eos = false;
    tk->bos = v->bos >= 0 && v->bos < v->n_tokens ? v->bos : -1;
    tk->eos = v->eos >= 0 && v->eos < v->n_tokens ? v->eos : -1;
    tport_status st = tport_tokenizer_copy_tokens(tk, v, false);
    return st == TPORT_STATUS_OK ? tport_tokenizer_index(tk) : st;
}

tport_status tport_tokenizer_from_file(const tport_model_file *mf, tport_tokenizer **out) {
    *out = NULL;
    const tport_vocab *v = &mf->vocab;
    if (v->n_tokens <= 0 || !v->tokens || !v->token_len)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: the file has no vocabulary", mf->path);
    tport_tokenizer *tk = NULL;
    tport_status st;
    bool gguf = mf->container == TPORT_CONTAINER_GGUF;
    if (!strcmp(v->model, "llama")) {
        bool prefix = true;
        kv_bool(mf, "tokenizer.ggml.add_space_prefix", &prefix);
        st = tport_tokenizer_from_vocab(v, prefix, &tk);
        if (st == TPORT_STATUS_OK && gguf) { /* SentencePiece defaults where the file says nothing */
            if (!kv_of(mf, "tokenizer.ggml.bos_token_id"))
                tk->bos = 1 < v->n_tokens ? 1 : -1;
            if (!kv_of(mf, "tokenizer.ggml.eos_token_id"))
                tk->eos = 2 < v->n_tokens ? 2 : -1;
            if (!kv_of(mf, "tokenizer.ggml.unknown_token_id"))
                tk->unk = 0;
        }
    } else if (!strcmp(v->model, "gpt2") && !gguf && !kv_of(mf, "tokenizer.ggml.merges")) {
        st = new_greedy(mf, &tk);
        if (st != TPORT_STATUS_OK)
            tport_tokenizer_free(tk);
        else
            *out = tk;
        return st; /* no special tokens: the examples split at none */
    } else if (!strcmp(v->model, "bert")) {
        st = new_wpm(mf, &tk);
        if (st == TPORT_STATUS_OK) {
            kv_id(mf, "tokenizer.ggml.bos_token_id", tk->n_tokens, &tk->bos);
            kv_id(mf, "tokenizer.ggml.unknown_token_id", tk->n_tokens, &tk->unk);
        }
    } else if (!strcmp(v->model, "t5")) {
        st = new_ugm(mf, &tk);
    } else if (!strcmp(v->model, "gemma4")) {
        /* SentencePiece-style BPE; llama.cpp names its pre-tokenizer
         * "gemma4" whatever the file says, has no default special ids and
         * always adds BOS */
        st = new_bpe(mf, true, &tk);
        if (st == TPORT_STATUS_OK) {
            tk->bos = tk->eos = -1;
            kv_id(mf, "tokenizer.ggml.bos_token_id", tk->n_tokens, &tk->bos);
            kv_id(mf, "tokenizer.ggml.eos_token_id", tk->n_tokens, &tk->eos);
            kv_id(mf, "tokenizer.ggml.unknown_token_id", tk->n_tokens, &tk->unk);
        }
    } else if (!strcmp(v->model, "gpt2")) {
        st = new_bpe(mf, false, &tk);
        if (st == TPORT_STATUS_OK) {
            kv_id(mf, "tokenizer.ggml.bos_token_id", tk->n_tokens, &tk->bos);
            kv_id(mf, "tokenizer.ggml.eos_token_id", tk->n_tokens, &tk->eos);
            kv_id(mf, "tokenizer.ggml.unknown_token_id", tk->n_tokens, &tk->unk);
        }
    } else {
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tokenizer '%s' is not supported (llama, gpt2, gemma4, bert, t5)", mf->path,
                           v->model);
    }
    if (st == TPORT_STATUS_OK) {
        kv_bool(mf, "tokenizer.ggml.add_bos_token", &tk->add_bos);
        if (tk->spm_bpe) /* llama.cpp overrides a false add_bos_token for Gemma 4 */
            tk->add_bos = true;
        if (tk->kind != TPORT_TOK_UGM) /* Unigram adds EOS unless the file says */
            tk->add_eos = false;
        kv_bool(mf, "tokenizer.ggml.add_eos_token", &tk->add_eos);
        mark_control_tokens(tk, mf);
        st = tport_tokenizer_index_special(tk);
    }
    if (st == TPORT_STATUS_OK)
        strip_attrs(tk, mf);
    if (st == TPORT_STATUS_OK && tk->kind == TPORT_TOK_UGM)
        tport_ugm_finish(tk);
    if (st != TPORT_STATUS_OK) {
        tport_tokenizer_free(tk);
        return st;
    }
    *out = tk;
    return TPORT_STATUS_OK;
}

tport_tokenizer *tport_tokenizer_load(const char *path) {
    if (!path) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tokenizer_load: no path");
        return NULL;
    }
    tport_model_file *mf = NULL;
    if (tport_model_file_open(path, &mf) != TPORT_STATUS_OK)
        return NULL;
    tport_tokenizer *tk = NULL;
    tport_status st = tport_tokenizer_from_file(mf, &tk);
    tport_model_file_close(mf);
    return st == TPORT_STATUS_OK ? tk : NULL;
}
