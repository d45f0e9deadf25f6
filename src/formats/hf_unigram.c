/* A Unigram tokenizer.json's normalizer and pre-tokenizer, read as the GGUF
 * flags of llama.cpp's UGM tokenizer (what conversion/t5.py writes from
 * SentencePiece's normalizer_spec): the precompiled charsmap,
 * add_space_prefix and remove_extra_whitespaces.
 *
 * transformers' SpmConverter wrote three shapes of the same SentencePiece
 * normalizer over the years, all read here:
 *   - Precompiled, then pre-tokenizer Sequence[WhitespaceSplit, Metaspace]
 *     (2020): words split at white space, each with a U+2581 in front;
 *   - Sequence[Precompiled, Replace(/ {2,}/, " ")] with Metaspace (2021-23);
 *   - Sequence[Precompiled, Strip(right), Replace(/ {2,}/, "\u2581")] with
 *     Metaspace (2024 on).
 * The last two merge runs of spaces, the first drops them between words:
 * all are remove_extra_whitespaces.  Precompiled alone (or nothing) with a
 * Metaspace is a normalizer that keeps every space.  Metaspace's
 * prepend_scheme "always" (or add_prefix_space true) is add_space_prefix,
 * "never" is not; "first" (only before the first fragment, where llama.cpp
 * prefixes every fragment) and anything else is refused, naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

#if defined(TPORT_HAVE_CJSON)

#include <cjson/cJSON.h>

static const char SP[] = "\xe2\x96\x81"; /* U+2581 */

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }
static const char *str_of(const cJSON *o, const char *key) {
    const cJSON *j = item(o, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}
static const char *type_of(const cJSON *o) {
    const char *t = str_of(o, "type");
    return t ? t : "(no type)";
}

static tport_status refuse(const char *path, const char *what, const char *name) {
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: a Unigram tokenizer with %s '%s' is not supported", path,
                       what, name);
}

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 (padding optional); NULL if malformed or out of memory. */
static uint8_t *b64_decode(tport_model_file *mf, const char *s, size_t *out_len) {
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '=')
        n--;
    uint8_t *out = mf_alloc(mf, n / 4 * 3 + 3);
    if (!out)
        return NULL;
    size_t k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0)
            return NULL;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[k++] = (uint8_t)(acc >> bits);
        }
    }
    *out_len = k;
    return out;
}

static bool is_space_run(const cJSON *replace, const char *content) {
    const cJSON *pattern = item(replace, "pattern");
    const char *re = str_of(pattern, "Regex"), *c = str_of(replace, "content");
    return re && c && !strcmp(re, " {2,}") && !strcmp(c, content);
}

static tport_status read_normalizer(tport_model_file *mf, const char *path, const cJSON *norm,
                                    mf_unigram_norm *out) {
    if (!norm || cJSON_IsNull(norm))
        return TPORT_STATUS_OK;
    const cJSON *list[8];
    int n = 0;
    if (!strcmp(type_of(norm), "Sequence")) {
        const cJSON *seq = item(norm, "normalizers");
        if (!cJSON_IsArray(seq))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: normalizer Sequence without normalizers", path);
        for (const cJSON *e = seq->child; e; e = e->next)
            if (n < 8)
                list[n++] = e;
            else
                return refuse(path, "a normalizer Sequence of more than", "8");
    } else {
        list[n++] = norm;
    }
    int at = 0;
    if (at < n && !strcmp(type_of(list[at]), "Precompiled")) {
        const cJSON *cm = item(list[at], "precompiled_charsmap");
        if (cJSON_IsString(cm) && cm->valuestring[0]) {
            out->charsmap = b64_decode(mf, cm->valuestring, &out->charsmap_len);
            if (!out->charsmap)
                return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: precompiled_charsmap is not base64", path);
        } else if (!cJSON_IsNull(cm) && !cJSON_IsString(cm)) {
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: precompiled_charsmap is not a string", path);
        }
        at++;
    }
    if (at + 1 == n && !strcmp(type_of(list[at]), "Replace") && is_space_run(list[at], " ")) {
        out->remove_ws = true;
        at++;
    } else if (at + 2 == n && !strcmp(type_of(list[at]), "Strip") && !cJSON_IsTrue(item(list[at], "strip_left")) &&
               cJSON_IsTrue(item(list[at], "strip_right")) && !strcmp(type_of(list[at + 1]), "Replace") &&
               is_space_run(list[at + 1], SP)) {
        out->remove_ws = true;
        at += 2;
    }
    if (at < n)
        return refuse(path, "normalizer", type_of(list[at]));
    return TPORT_STATUS_OK;
}

static tport_status read_metaspace(const char *path, const cJSON *m, mf_unigram_norm *out) {
    const char *rep = str_of(m, "replacement");
    if (rep && strcmp(rep, SP))
        return refuse(path, "a Metaspace replacement", rep);
    const char *scheme = str_of(m, "prepend_scheme");
    const cJSON *aps = item(m, "add_prefix_space");
    if (scheme) {
        if (!strcmp(scheme, "always"))
            out->add_prefix = true;
        else if (!strcmp(scheme, "never"))
            out->add_prefix = false;
        else
            return refuse(path, "Metaspace prepend_scheme", scheme);
    } else {
        out->add_prefix = !cJSON_IsFalse(aps); /* tokenizers' default: true */
    }
    return TPORT_STATUS_OK;
}

static tport_status read_pre(const char *path, const cJSON *pre, mf_unigram_norm *out) {
    if (!pre || cJSON_IsNull(pre))
        return refuse(path, "pre-tokenizer", "(none: no Metaspace)");
    const char *type = type_of(pre);
    if (!strcmp(type, "Metaspace"))
        return read_metaspace(path, pre, out);
    if (strcmp(type, "Sequence"))
        return refuse(path, "pre-tokenizer", type);
    const cJSON *seq = item(pre, "pretokenizers");
    const cJSON *a = cJSON_IsArray(seq) ? seq->child : NULL, *b = a ? a->next : NULL;
    if (a && b && !b->next && !strcmp(type_of(a), "WhitespaceSplit") && !strcmp(type_of(b), "Metaspace")) {
        out->remove_ws = true;
        return read_metaspace(path, b, out);
    }
    for (const cJSON *e = a; e; e = e->next)
        if (strcmp(type_of(e), "Metaspace"))
            return refuse(path, "pre-tokenizer", type_of(e));
    return refuse(path, "pre-tokenizer", "Sequence");
}

tport_status mf_hf_unigram_norm(tport_model_file *mf, const char *path, const struct cJSON *root,
                                mf_unigram_norm *out) {
    memset(out, 0, sizeof *out);
    const cJSON *model = item(root, "model");
    if (cJSON_IsTrue(item(model, "byte_fallback")))
        return refuse(path, "byte_fallback", "true"); /* llama.cpp's UGM has none: unknown stays unknown */
    MF_TRY(read_normalizer(mf, path, item(root, "normalizer"), out));
    return read_pre(path, item(root, "pre_tokenizer"), out);
}

#endif
