/* The tokenizer's vocabulary: construction from a model file, lookup, and
 * decoding of one token.  Encoding is in tokenizer_bpe.c. */
#include "tokenize/tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenize/unicode.h"

/* U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's stand-in for a space. */
static const char SPM_SPACE[] = "\xe2\x96\x81";

tport_tokenizer *tport_tokenizer_alloc(int32_t n_tokens) {
    if (n_tokens <= 0 || n_tokens > (1 << 26))
        return NULL;
    tport_tokenizer *tk = calloc(1, sizeof *tk);
    if (!tk)
        return NULL;
    tk->n_tokens = n_tokens;
    tk->text = calloc((size_t)n_tokens, sizeof *tk->text);
    tk->len = calloc((size_t)n_tokens, sizeof *tk->len);
    tk->score = calloc((size_t)n_tokens, sizeof *tk->score);
    tk->type = calloc((size_t)n_tokens, sizeof *tk->type);
    tk->attr = calloc((size_t)n_tokens, sizeof *tk->attr);
    tk->bos = tk->eos = tk->unk = tk->sep = -1;
    tk->add_space_prefix = true;
    tk->add_bos = true; /* SentencePiece's default */
    if (!tk->text || !tk->len || !tk->score || !tk->type || !tk->attr) {
        tport_tokenizer_free(tk);
        return NULL;
    }
    return tk;
}

void tport_tokenizer_free(tport_tokenizer *tk) {
    if (!tk)
        return;
    if (tk->text)
        for (int32_t i = 0; i < tk->n_tokens; i++)
            free(tk->text[i]);
    free(tk->text);
    free(tk->len);
    free(tk->score);
    free(tk->type);
    free(tk->attr);
    free(tk->hash);
    free(tk->merges);
    free(tk->merge_pool);
    free(tk->special);
    free(tk->charsmap);
    free(tk);
}

static uint32_t hash_bytes(const char *s, size_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

tport_token tport_tokenizer_find(const tport_tokenizer *tk, const char *text, size_t len) {
    if (!tk || !tk->hash)
        return -1;
    uint32_t mask = tk->hash_cap - 1;
    for (uint32_t i = hash_bytes(text, len) & mask;; i = (i + 1) & mask) {
        int32_t slot = tk->hash[i];
        if (slot == 0)
            return -1;
        int32_t id = slot - 1;
        if (tk->len[id] == len && memcmp(tk->text[id], text, len) == 0)
            return id;
    }
}

int tport_byte_token_value(const char *s, uint32_t len) {
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
              : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

char *tport_spm_escape(const char *s, uint32_t n, uint32_t *out_len) {
    uint32_t spaces = 0;
    for (uint32_t i = 0; i < n; i++)
        spaces += s[i] == ' ';
    char *t = malloc((size_t)n + 2u * spaces + 1);
    if (!t)
        return NULL;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(t + k, SPM_SPACE, 3);
            k += 3;
        } else {
            t[k++] = s[i];
        }
    }
    t[k] = '\0';
    *out_len = k;
    return t;
}

/* Pre-GGUF llama files carry no token types and some converters stored
 * spaces instead of U+2581: detect that (no token has U+2581) so such
 * vocabularies tokenize like the SentencePiece original. */
static bool uses_plain_spaces(const tport_vocab *v) {
    bool plain = false;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        const char *s = v->tokens[i];
        uint32_t n = s ? v->token_len[i] : 0;
        for (uint32_t k = 0; k < n; k++) {
            if (s[k] == ' ')
                plain = true;
            else if (k + 3 <= n && memcmp(s + k, SPM_SPACE, 3) == 0)
                return false;
        }
    }
    return plain;
}

static int32_t infer_type(const tport_vocab *v, int32_t id) {
    if (id == v->unk)
        return TPORT_TOKEN_UNKNOWN;
    if (id == v->bos || id == v->eos)
        return TPORT_TOKEN_CONTROL;
    if (v->tokens[id] && tport_byte_token_value(v->tokens[id], v->token_len[id]) >= 0)
        return TPORT_TOKEN_BYTE;
    return TPORT_TOKEN_NORMAL;
}

tport_status tport_tokenizer_index(tport_tokenizer *tk) {
    uint32_t cap = 16;
    while (cap < (uint32_t)tk->n_tokens * 2u)
        cap *= 2;
    free(tk->hash);
    tk->hash = calloc(cap, sizeof *tk->hash);
    if (!tk->hash)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory");
    tk->hash_cap = cap;
    uint32_t mask = cap - 1;
    for (int32_t id = 0; id < tk->n_tokens; id++) {
        const char *s = tk->text[id];
        uint32_t n = tk->len[id];
        uint32_t i = hash_bytes(s, n) & mask;
        for (;; i = (i + 1) & mask) {
            int32_t slot = tk->hash[i];
            if (slot == 0)
                break;
            int32_t other = slot - 1;
            if (tk->len[other] == n && memcmp(tk->text[other], s, n) == 0)
                break; /* duplicate text: the later id replaces it */
        }
        tk->hash[i] = id + 1;
    }
    /* Byte fallback goes through the text "<0xXX>", as in llama.cpp. */
    for (int b = 0; b < 256; b++) {
        char buf[8];
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        tk->byte_token[b] = tport_tokenizer_find(tk, buf, 6);
    }
    return TPORT_STATUS_OK;
}

void tport_tokenizer_attrs_from_types(tport_tokenizer *tk) {
    for (int32_t i = 0; i < tk->n_tokens; i++) {
        switch (tk->type[i]) {
        case TPORT_TOKEN_NORMAL: tk->attr[i] = TPORT_ATTR_NORMAL; break;
        case TPORT_TOKEN_UNKNOWN: tk->attr[i] = TPORT_ATTR_UNKNOWN; break;
        case TPORT_TOKEN_CONTROL: tk->attr[i] = TPORT_ATTR_CONTROL; break;
        case TPORT_TOKEN_USER_DEFINED: tk->attr[i] = TPORT_ATTR_USER_DEFINED; break;
        case TPORT_TOKEN_UNUSED: tk->attr[i] = TPORT_ATTR_UNUSED; break;
        case TPORT_TOKEN_BYTE: tk->attr[i] = TPORT_ATTR_BYTE; break;
        default: tk->attr[i] = 0; break; /* undefined */
        }
    }
}

typedef struct len_id {
    uint32_t len;
    tport_token id;
} len_id;

/* longer text first; equal lengths by id, for a stable order */
static int by_length(const void *a, const void *b) {
    const len_id *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

tport_status tport_tokenizer_index_special(tport_tokenizer *tk) {
    free(tk->special);
    tk->special = NULL;
    tk->n_special = 0;
    int32_t n = 0;
    for (int32_t i = 0; i < tk->n_tokens; i++)
        n += (tk->attr[i] & (TPORT_ATTR_CONTROL | TPORT_ATTR_USER_DEFINED | TPORT_ATTR_UNKNOWN)) != 0;
    if (n == 0)
        return TPORT_STATUS_OK;
    tk->special = malloc((size_t)n * sizeof *tk->special);
    len_id *order = malloc((size_t)n * sizeof *order);
    if (!tk->special || !order) {
        free(order);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory");
    }
    for (int32_t i = 0, k = 0; i < tk->n_tokens; i++)
        if (tk->attr[i] & (TPORT_ATTR_CONTROL | TPORT_ATTR_USER_DEFINED | TPORT_ATTR_UNKNOWN))
            order[k++] = (len_id){tk->len[i], i};
    qsort(order, (size_t)n, sizeof *order, by_length);
    for (int32_t k = 0; k < n; k++)
        tk->special[k] = order[k].id;
    tk->n_special = n;
    free(order);
    return TPORT_STATUS_OK;
}

/* llama.cpp names an empty token "[EMPTY_<id>]" so that no token has
 * empty text (an empty special token would match everywhere). */
static char *copy_text(const char *src, uint32_t n, int32_t id, uint32_t *out_len) {
    char tmp[32];
    if (n == 0) {
        n = (uint32_t)snprintf(tmp, sizeof tmp, "[EMPTY_%d]", (int)id);
        src = tmp;
    }
    char *t = malloc((size_t)n + 1);
    if (t) {
        memcpy(t, src, n);
        t[n] = '\0';
    }
    *out_len = n;
    return t;
}

tport_status tport_tokenizer_copy_tokens(tport_tokenizer *tk, const tport_vocab *v, bool escape) {
    for (int32_t i = 0; i < v->n_tokens; i++) {
        uint32_t n = v->tokens[i] ? v->token_len[i] : 0;
        const char *src = v->tokens[i] ? v->tokens[i] : "";
        if (escape && n > 0)
            tk->text[i] = tport_spm_escape(src, n, &n);
        else
            tk->text[i] = copy_text(src, n, i, &n);
        if (!tk->text[i])
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory");
        tk->len[i] = n;
        tk->score[i] = v->scores ? v->scores[i] : 0.0f;
        tk->type[i] = v->token_type ? v->token_type[i] : infer_type(v, i);
    }
    tport_tokenizer_attrs_from_types(tk);
    return TPORT_STATUS_OK;
}

tport_status tport_tokenizer_from_vocab(const tport_vocab *v, bool add_space_prefix,
                                        tport_tokenizer **out) {
    *out = NULL;
    if (!v || v->n_tokens <= 0 || !v->tokens || !v->token_len)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "tokenizer: the file has no vocabulary");
    if (strcmp(v->model, "llama") != 0)
        return tport_error(TPORT_STATUS_UNSUPPORTED,
                           "tokenizer: model '%s' is not supported (only 'llama')", v->model);
    tport_tokenizer *tk = tport_tokenizer_alloc(v->n_tokens);
    if (!tk)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: %d tokens", (int)v->n_tokens);
    tport_status st = tport_tokenizer_copy_tokens(tk, v, uses_plain_spaces(v));
    if (st != TPORT_STATUS_OK) {
        tport_tokenizer_free(tk);
        return st;
    }
    tk->bos = v->bos >= 0 && v->bos < v->n_tokens ? v->bos : -1;
    tk->eos = v->eos >= 0 && v->eos < v->n_tokens ? v->eos : -1;
    tk->unk = v->unk >= 0 && v->unk < v->n_tokens ? v->unk : -1;
    tk->add_space_prefix = add_space_prefix;
    st = tport_tokenizer_index(tk);
    if (st == TPORT_STATUS_OK)
        st = tport_tokenizer_index_special(tk);
    if (st != TPORT_STATUS_OK) {
        tport_tokenizer_free(tk);
        return st;
    }
    *out = tk;
    return TPORT_STATUS_OK;
}

int32_t tport_tokenizer_n_tokens(const tport_tokenizer *tk) { return tk ? tk->n_tokens : 0; }
tport_token tport_tokenizer_bos(const tport_tokenizer *tk) { return tk ? tk->bos : -1; }
tport_token tport_tokenizer_eos(const tport_tokenizer *tk) { return tk ? tk->eos : -1; }

const char *tport_tokenizer_token_text(const tport_tokenizer *tk, tport_token id, uint32_t *len) {
    if (!tk || id < 0 || id >= tk->n_tokens)
        return NULL;
    if (len)
        *len = tk->len[id];
    return tk->text[id];
}

/* Appends n bytes to buf if they fit; always counts them. */
static void put(char *buf, int32_t cap, int32_t *pos, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++, (*pos)++)
        if (buf && *pos < cap)
            buf[*pos] = s[i];
}

/* GPT-2's alphabet back to bytes (llama_decode_text); a code point that
 * stands for no byte is shown as llama.cpp shows it. */
static int32_t decode_bpe_text(const char *s, uint32_t n, char *buf, int32_t cap) {
    int32_t pos = 0;
    for (uint32_t i = 0; i < n;) {
        size_t used;
        uint32_t c = tport_utf8_decode(s + i, n - i, &used);
        int b = tport_gpt2_cpt_to_byte(c);
        if (b >= 0) {
            char ch = (char)b;
            put(buf, cap, &pos, &ch, 1);
        } else {
            char u[4], hex[16];
            size_t m = tport_utf8_encode(c, u);
            put(buf, cap, &pos, "[UNK_BYTE_0x", 12);
            for (size_t k = 0; k < m; k++) {
                snprintf(hex, sizeof hex, "%02x", (unsigned char)u[k]);
                put(buf, cap, &pos, hex, 2);
            }
            put(buf, cap, &pos, s, n);
            put(buf, cap, &pos, "]", 1);
        }
        i += (uint32_t)used;
    }
    return pos;
}

/* llama.cpp's token_to_piece for BPE vocabularies, special = false. */
static int32_t decode_bpe(const tport_tokenizer *tk, tport_token id, char *buf, int32_t cap) {
    uint16_t a = tk->attr[id];
    int32_t pos = 0;
    if (a & (TPORT_ATTR_UNKNOWN | TPORT_ATTR_CONTROL))
        return 0;
    if (a & TPORT_ATTR_USER_DEFINED) {
        put(buf, cap, &pos, tk->text[id], tk->len[id]);
        return pos;
    }
    if ((a & TPORT_ATTR_NORMAL) && tk->spm_bpe) { /* U+2581 back to spaces */
        const char *s = tk->text[id];
        for (uint32_t i = 0; i < tk->len[id];) {
            bool space = i + 3 <= tk->len[id] && !memcmp(s + i, "\xe2\x96\x81", 3);
            put(buf, cap, &pos, space ? " " : s + i, 1);
            i += space ? 3 : 1;
        }
        return pos;
    }
    if (a & TPORT_ATTR_NORMAL)
        return decode_bpe_text(tk->text[id], tk->len[id], buf, cap);
    if (a & TPORT_ATTR_BYTE) {
        int b = tport_byte_token_value(tk->text[id], tk->len[id]);
        if (b < 0) {
            size_t used;
            b = tk->len[id] ? tport_gpt2_cpt_to_byte(tport_utf8_decode(tk->text[id], tk->len[id], &used)) : -1;
        }
        if (b >= 0) {
            char ch = (char)b;
            put(buf, cap, &pos, &ch, 1);
        }
    }
    return pos;
}

int32_t tport_tokenizer_decode(const tport_tokenizer *tk, tport_token prev, tport_token id,
                               char *buf, int32_t cap) {
    if (!tk || id < 0 || id >= tk->n_tokens)
        return 0;
    if (tk->kind == TPORT_TOK_BPE)
        return decode_bpe(tk, id, buf, cap);
    if (tk->kind == TPORT_TOK_GREEDY) { /* the examples print the raw bytes */
        int32_t pos = 0;
        put(buf, cap, &pos, tk->text[id], tk->len[id]);
        return pos;
    }
    if (tk->attr[id] & TPORT_ATTR_CONTROL)
        return 0; /* also tokens re-marked as control at load */
    int32_t pos = 0;
    const char *s = tk->text[id];
    uint32_t n = tk->len[id];
    switch (tk->type[id]) {
    case TPORT_TOKEN_CONTROL:
    case TPORT_TOKEN_UNUSED:
        return 0;
    case TPORT_TOKEN_UNKNOWN:
        put(buf, cap, &pos, "\xe2\x96\x85", 3); /* what llama.cpp prints */
        return pos;
    case TPORT_TOKEN_BYTE: {
        int b = tport_byte_token_value(s, n);
        if (b >= 0) {
            char c = (char)b;
            put(buf, cap, &pos, &c, 1);
            return pos;
        }
        break;
    }
    default:
        break;
    }
    bool first = prev < 0 || prev == tk->bos;
    for (uint32_t i = 0; i < n;) {
        if (n - i >= 3 && memcmp(s + i, SPM_SPACE, 3) == 0) {
            if (!(first && pos == 0 && i == 0 && tk->add_space_prefix))
                put(buf, cap, &pos, " ", 1);
            i += 3;
        } else {
            if (first && i == 0 && s[0] == ' ' && tk->add_space_prefix) {
                i++; /* a vocabulary that stores plain spaces */
                continue;
            }
            put(buf, cap, &pos, s + i, 1);
            i++;
        }
    }
    return pos;
}
