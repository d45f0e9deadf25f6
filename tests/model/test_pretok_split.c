/* The Tekken, GPT-4o, Granite multilingual (97m), EXAONE MoE and Jais 2
 * pre-tokenizers split text as an ECMAScript regex
 * engine splits it with llama.cpp's regex strings (data/
 * tokenizer_split_refs.json, from JavaScript's engine, see
 * data/make_pretok_split_refs.mjs): case-aware words where std::regex
 * gives letters back (U*L+), contractions, digit groups, punctuation runs
 * with trailing newlines and slashes, white space.  Ids cannot show these
 * splits when no merge crosses them, so the pieces are compared. */
#include "../test_util.h"
#include "json_min.h"
#include "tokenize/tokenizer_impl.h"
#include "tokenize/unicode.h"

/* Piece w of the pre-tokenizer's output, back from GPT-2's alphabet. */
static size_t raw_piece(const char *w, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t used;
        int b = tport_gpt2_cpt_to_byte(tport_utf8_decode(w + i, n - i, &used));
        out[k++] = (char)(b < 0 ? '?' : b);
        i += used;
    }
    return k;
}

int main(void) {
    json *refs = json_load(TPORT_MODEL_TEST_DATA "/tokenizer_split_refs.json");
    CHECK(refs != NULL, "cannot read tokenizer_split_refs.json");
    const json *texts = refs ? json_get(refs, "texts") : NULL, *pieces = refs ? json_get(refs, "pieces") : NULL;
    static const struct { const char *name; tport_pretok pre; } pres[] = {
        {"tekken", TPORT_PRE_TEKKEN},         {"gpt-4o", TPORT_PRE_GPT4O},   {"granite-embed-multi-97m", TPORT_PRE_GRANITE_MULTI},
        {"exaone-moe", TPORT_PRE_EXAONE_MOE}, {"jais-2", TPORT_PRE_JAIS2}};
    for (size_t p = 0; texts && pieces && p < sizeof pres / sizeof pres[0]; p++) {
        const json *want = json_get(pieces, pres[p].name);
        CHECK(want && want->n == texts->n, "%s: no reference", pres[p].name);
        int ok = 0;
        for (size_t i = 0; want && i < texts->n; i++) {
            const json *t = &texts->items[i], *w = &want->items[i];
            char *buf = NULL;
            size_t *len = NULL, n = 0;
            CHECK(tport_pretokenize(pres[p].pre, t->str, t->str_len, true, &buf, &len, &n) == 0, "pretokenize");
            int same = n == w->n;
            size_t off = 0;
            for (size_t k = 0; same && k < n; k++) {
                char raw[256];
                size_t m = len[k] < 64 ? raw_piece(buf + off, len[k], raw) : 0;
                same = m == w->items[k].str_len && !memcmp(raw, w->items[k].str, m);
                off += len[k];
            }
            CHECK(same, "%s: \"%s\": %zu pieces, want %zu", pres[p].name, t->str, n, w->n);
            ok += same;
            free(buf);
            free(len);
        }
        printf("%s: %d/%zu texts split as the ECMAScript regex\n", pres[p].name, ok, texts->n);
    }
    json_free(refs);
    return test_finish("test_pretok_split");
}
