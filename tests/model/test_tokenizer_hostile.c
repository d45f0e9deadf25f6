/* Byte-level BPE vocabularies a hostile or broken file could hold: empty
 * and NUL-holding tokens (one of them user-defined, so it would match
 * everywhere if kept empty), duplicates, merges without a space, with
 * empty halves or repeated, token types out of range, special ids outside
 * the vocabulary; texts with invalid UTF-8, NULs and long runs.  Nothing
 * may crash or hang, counts must be consistent, and the tokens must still
 * decode back to the text they came from where the vocabulary allows. */
#include "../test_util.h"
#include "tokenize/tokenizer.h"

static char *TOKENS[] = {"", "a", "b", "ab", "a", "\xc4\xa0", "\304\240a", "c\0d", "<x>", "", "\xff", "b"};
static uint32_t LEN[] = {0, 1, 1, 2, 1, 2, 3, 3, 3, 0, 1, 1};
static int32_t TYPES[] = {4, 1, 1, 1, 1, 1, 1, 1, 4, 3, 99, -7};
enum { N = sizeof LEN / sizeof LEN[0] };

static char *MERGES[] = {"a b", "ab", " a", "a ", "", "a b", "\xc4\xa0 a", "x y z", NULL};

int main(void) {
    tport_kv kv[4] = {
        {.key = "tokenizer.ggml.pre", .type = TPORT_KV_STRING, .v.s = "gpt-2"},
        {.key = "tokenizer.ggml.merges", .type = TPORT_KV_ARRAY, .elem_type = TPORT_KV_STRING,
         .n_elems = sizeof MERGES / sizeof MERGES[0], .v.arr = MERGES},
        {.key = "tokenizer.ggml.bos_token_id", .type = TPORT_KV_U32, .v.u = 1000000000u},
        {.key = "tokenizer.ggml.add_bos_token", .type = TPORT_KV_BOOL, .v.b = true},
    };
    tport_model_file mf = {.path = "hostile.gguf", .container = TPORT_CONTAINER_GGUF, .n_kv = 4, .kv = kv};
    mf.vocab = (tport_vocab){.model = "gpt2", .n_tokens = N, .tokens = TOKENS, .token_len = LEN,
                             .token_type = TYPES, .bos = -1, .eos = -1, .unk = -1, .pad = -1};
    tport_tokenizer *tk = NULL;
    CHECK(tport_tokenizer_from_file(&mf, &tk) == TPORT_STATUS_OK, "%s", tport_last_error());
    if (!tk)
        return test_finish("test_tokenizer_hostile");
    CHECK(tport_tokenizer_bos(tk) == 11, "an out-of-range BOS id keeps the default (11)");

    static const char *const texts[] = {"ab ab", "", "\xff\xfe\x80", "a\0b<x>ab", "<x><x>", " a a  a\n\n\t",
                                        "\xe2\x82", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80"};
    static const size_t lens[] = {5, 0, 3, 8, 6, 10, 2, 4, 5};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        for (int ps = 0; ps < 2; ps++) {
            tport_token ids[64];
            int32_t n = tport_tokenizer_encode_ex(tk, texts[i], lens[i], true, ps, ids, 64);
            int32_t again = tport_tokenizer_encode_ex(tk, texts[i], lens[i], true, ps, NULL, 0);
            CHECK(n >= 0 && n == again && n <= 64, "text %zu: %d then %d ids", i, (int)n, (int)again);
            for (int32_t k = 0; k < n && k < 64; k++) {
                CHECK(ids[k] >= 0 && ids[k] < N, "text %zu: id %d", i, (int)ids[k]);
                char buf[8];
                int32_t m = tport_tokenizer_decode(tk, k ? ids[k - 1] : -1, ids[k], buf, (int32_t)sizeof buf);
                CHECK(m >= 0, "decode");
            }
        }
    }
    /* "ab ab": "ab", then "Ġab" whose best merge is "a b" (rank 0, before
     * "Ġ a"): "Ġ" "ab" */
    tport_token ids[8];
    int32_t n = tport_tokenizer_encode_ex(tk, "ab ab", 5, false, false, ids, 8);
    CHECK(n == 3 && ids[0] == 3 && ids[1] == 5 && ids[2] == 3, "ab ab: %d ids (%d %d %d)", (int)n, ids[0], ids[1],
          ids[2]);
    /* the user-defined "<x>" is split out even without parse_special */
    n = tport_tokenizer_encode_ex(tk, "a<x>", 4, false, false, ids, 8);
    CHECK(n == 2 && ids[0] == 4 && ids[1] == 8, "a<x>: %d ids", (int)n);

    /* a long run (one pre-tokenizer word of 1 MB) stays linear enough */
    size_t big = 1 << 20;
    char *run = malloc(big);
    if (run) {
        memset(run, 'a', big);
        int32_t m = tport_tokenizer_encode_ex(tk, run, big, false, false, NULL, 0);
        CHECK(m > 0, "1 MB run: %d", (int)m);
        free(run);
    }
    tport_tokenizer_free(tk);

    /* merges that are not strings, and a pre-tokenizer nobody knows */
    kv[1].elem_type = TPORT_KV_U32;
    CHECK(tport_tokenizer_from_file(&mf, &tk) == TPORT_STATUS_BAD_FORMAT && !tk, "merges of the wrong type");
    kv[1].elem_type = TPORT_KV_STRING;
    kv[0].v.s = "no-such-pre";
    CHECK(tport_tokenizer_from_file(&mf, &tk) == TPORT_STATUS_UNSUPPORTED && !tk, "unknown pre-tokenizer");
    return test_finish("test_tokenizer_hostile");
}
