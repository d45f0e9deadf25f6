/* The llama graph and sessions against other implementations' output in
 * ../shared/refs/refs.json: llama2.c on stories260K.bin (greedy ids, first
 * logits) and llama.cpp on llama-2-tiny-random.gguf (prompt ids, greedy
 * ids).  Also: batched and token-by-token evaluation agree, reset works,
 * and a context overflow is an error. */
#include <math.h>

#include "json_min.h"
#include "../test_util.h"
#include "tport/tport.h"

static tport_token argmax(const float *v, int32_t n) {
    tport_token best = 0;
    for (int32_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

/* Greedy generation of n ids after the prompt; returns how many matched. */
static int greedy_matches(tport_session *s, int32_t n_vocab, const json *want) {
    int matched = 0;
    for (size_t i = 0; i < want->n; i++) {
        const float *logits = tport_session_logits(s);
        if (!logits)
            break;
        tport_token id = argmax(logits, n_vocab);
        if ((double)id != want->items[i].number) {
            fprintf(stderr, "  generated id %zu: %d, reference %d\n", i, (int)id, (int)want->items[i].number);
            break;
        }
        matched++;
        if (i + 1 < want->n && tport_session_eval(s, &id, 1) != TPORT_STATUS_OK) {
            fprintf(stderr, "  eval: %s\n", tport_last_error());
            break;
        }
    }
    return matched;
}

static void check_stories(const json *ref, const char *path) {
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load %s: %s", path, tport_last_error());
    if (!m)
        return;
    CHECK(tport_model_n_vocab(m) == 512 && tport_model_n_ctx(m) == 512, "stories260K: vocab %d, ctx %d",
          (int)tport_model_n_vocab(m), (int)tport_model_n_ctx(m));
    CHECK(tport_model_bos(m) == 1 && tport_model_eos(m) == 2, "llama2.c BOS/EOS");
    /* llama2.c keeps its KV cache in f32: so does the session compared with it */
    tport_session_params f32kv = {.kv_f32 = true};
    tport_session *s = tport_session_new(m, &f32kv);
    CHECK(s != NULL, "session: %s", tport_last_error());
    const json *prompt = json_get(ref, "prompt_ids"), *gen = json_get(ref, "generated_ids");
    const json *first = json_get(ref, "logits_after_bos_first16");
    CHECK(prompt && gen && first && prompt->n == 1, "refs.json entry for stories260K.bin is incomplete");
    if (s && prompt && gen && first && prompt->n == 1) {
        tport_token bos = (tport_token)prompt->items[0].number;
        CHECK(tport_session_eval(s, &bos, 1) == TPORT_STATUS_OK, "eval BOS: %s", tport_last_error());
        const float *logits = tport_session_logits(s);
        double worst = 0;
        for (size_t i = 0; logits && i < first->n; i++)
            worst = fmax(worst, fabs(logits[i] - first->items[i].number));
        CHECK(logits && worst < 1e-4, "first logits after BOS differ by %g", worst);
        printf("test_llama_refs: stories260K first %zu logits within %.2g of llama2.c\n", first->n, worst);
        /* the default f16 cache rounds K and V to 11 bits: close, not equal */
        tport_session *h = tport_session_new(m, NULL);
        CHECK(h && tport_session_eval(h, &bos, 1) == TPORT_STATUS_OK, "f16 cache: eval BOS");
        const float *lh = h ? tport_session_logits(h) : NULL;
        double worst16 = 0;
        for (size_t i = 0; lh && i < first->n; i++)
            worst16 = fmax(worst16, fabs(lh[i] - first->items[i].number));
        CHECK(lh && worst16 < 2e-2, "f16 cache: first logits after BOS differ by %g", worst16);
        printf("test_llama_refs: stories260K with an f16 cache: first logits within %.2g of llama2.c\n", worst16);
        tport_session_free(h);
        int ok = greedy_matches(s, tport_model_n_vocab(m), gen);
        CHECK(ok == (int)gen->n, "stories260K: %d of %zu greedy ids match llama2.c", ok, gen->n);
        printf("test_llama_refs: stories260K %d/%zu greedy ids match llama2.c\n", ok, gen->n);

        /* batched prompt == token by token: the mask and cache are right */
        tport_token seq[12] = {1};
        for (int i = 1; i < 12; i++)
            seq[i] = (tport_token)gen->items[i - 1].number;
        tport_session_params one = {.n_batch = 1, .kv_f32 = true}, four = {.n_batch = 5, .kv_f32 = true};
        tport_session *a = tport_session_new(m, &one), *b = tport_session_new(m, &four);
        CHECK(a && b, "sessions");
        if (a && b) {
            CHECK(tport_session_eval(a, seq, 12) == TPORT_STATUS_OK, "eval batch 1");
            CHECK(tport_session_eval(b, seq, 12) == TPORT_STATUS_OK, "eval batch 5");
            const float *la = tport_session_logits(a), *lb = tport_session_logits(b);
            double d = 0;
            for (int32_t i = 0; la && lb && i < tport_model_n_vocab(m); i++)
                d = fmax(d, fabs(la[i] - lb[i]));
            CHECK(la && lb && d < 1e-4, "batch sizes 1 and 5 disagree by %g", d);
            CHECK(tport_session_pos(a) == 12, "position %d after 12 tokens", (int)tport_session_pos(a));
            /* reset, then the first step again gives the BOS logits */
            tport_session_reset(a);
            CHECK(tport_session_pos(a) == 0 && !tport_session_logits(a), "reset");
            CHECK(tport_session_eval(a, seq, 1) == TPORT_STATUS_OK, "eval after reset");
            la = tport_session_logits(a);
            CHECK(la && fabs(la[0] - first->items[0].number) < 1e-4, "logits after reset");
        }
        tport_session_free(a);
        tport_session_free(b);

        /* overflowing the context is refused */
        tport_session_params small = {.n_ctx = 4};
        tport_session *c = tport_session_new(m, &small);
        CHECK(c && tport_session_eval(c, seq, 5) != TPORT_STATUS_OK && tport_last_error()[0],
              "5 tokens in a context of 4 must fail");
        tport_token bad = 512;
        CHECK(c && tport_session_eval(c, &bad, 1) != TPORT_STATUS_OK, "token id 512 must fail");
        tport_session_free(c);
    }
    tport_session_free(s);
    tport_model_free(m);
}

static void check_tiny_random(const json *ref, const char *path) {
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load %s: %s", path, tport_last_error());
    if (!m)
        return;
    const json *text = json_get(ref, "prompt_text"), *prompt = json_get(ref, "prompt_ids");
    const json *gen = json_get(ref, "generated_ids");
    CHECK(text && prompt && gen, "refs.json entry for the tiny random model is incomplete");
    tport_token ids[64];
    int32_t n = text ? tport_tokenize(m, text->str, true, ids, 64) : -1;
    int same = prompt && n == (int32_t)prompt->n;
    for (int32_t i = 0; same && i < n; i++)
        same = ids[i] == (tport_token)prompt->items[i].number;
    CHECK(same, "the GGUF vocabulary tokenizes the prompt as llama.cpp does (%d ids)", (int)n);
    tport_session *s = tport_session_new(m, NULL);
    CHECK(s != NULL, "session: %s", tport_last_error());
    if (s && same && gen) {
        CHECK(tport_session_eval(s, ids, n) == TPORT_STATUS_OK, "eval prompt: %s", tport_last_error());
        int ok = greedy_matches(s, tport_model_n_vocab(m), gen);
        CHECK(ok == (int)gen->n, "tiny random: %d of %zu greedy ids match llama.cpp", ok, gen->n);
        printf("test_llama_refs: llama-2-tiny-random %d/%zu greedy ids match llama.cpp\n", ok, gen->n);
    }
    tport_session_free(s);
    tport_model_free(m);
}

int main(void) {
    char refs_path[1024], path[1024];
    if (!test_shared_path("refs/refs.json", refs_path, sizeof refs_path))
        test_skip("test_llama_refs", "../shared/refs/refs.json absent");
    json *refs = json_load(refs_path);
    CHECK(refs != NULL, "cannot parse %s", refs_path);

    /* a missing or malformed file is an error with a message, not a crash */
    CHECK(tport_model_load("/nonexistent/model.gguf", NULL) == NULL && tport_last_error()[0],
          "loading a missing file must fail with a message");
    CHECK(tport_model_load(refs_path, NULL) == NULL && tport_last_error()[0],
          "loading a JSON file as a model must fail with a message");

    int ran = 0;
    if (refs && test_shared_path("models/stories260K.bin", path, sizeof path)) {
        check_stories(json_get(refs, "stories260K.bin"), path);
        ran++;
    }
    if (refs && test_shared_path("models/llama-2-tiny-random.gguf", path, sizeof path)) {
        check_tiny_random(json_get(refs, "llama-2-tiny-random.gguf"), path);
        ran++;
    }
    json_free(refs);
    if (!ran)
        test_skip("test_llama_refs", "../shared/models absent");
    return test_finish("test_llama_refs");
}
