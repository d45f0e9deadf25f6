/* tport_session_embed against llama.cpp: for each file of
 * data/embed_refs.json (regenerated here with this tree's `tport synth`
 * and the recorded recipe), the mean, CLS and last pooled embeddings of
 * the recorded ids must be llama.cpp's (llama_get_embeddings_seq with
 * embeddings on, an f32 KV cache; llamacpp_embed.cpp) within 3e-4 of the
 * vector's largest element (measured on the machine that made them:
 * llama below 5e-7, gemma3 up to 7.6e-5; other CPUs sum in other
 * orders), and not all alike (the pooling is applied).
 * Also: the session holds the tokens afterwards, no logits, and the
 * pooling a file declares is read (none for these). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "json_min.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif
#ifndef TPORT_MODEL_TEST_DATA
#error "TPORT_MODEL_TEST_DATA must name tests/model/data"
#endif

static float compare(const float *got, const json *want, int32_t n, float *scale) {
    float d = 0;
    *scale = 0;
    for (int32_t i = 0; i < n; i++) {
        d = fmaxf(d, fabsf(got[i] - (float)want->items[i].number));
        *scale = fmaxf(*scale, fabsf((float)want->items[i].number));
    }
    return d;
}

int main(void) {
    json *refs = json_load(TPORT_MODEL_TEST_DATA "/embed_refs.json");
    const json *models = refs ? json_get(refs, "models") : NULL;
    CHECK(models && models->n >= 2, "cannot read embed_refs.json");
    const char *dir = getenv("TMPDIR");
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/tport-embed-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    static const struct {
        const char *key;
        tport_pooling pooling;
    } kinds[] = {{"mean", TPORT_POOLING_MEAN}, {"cls", TPORT_POOLING_CLS}, {"last", TPORT_POOLING_LAST}};
    for (size_t mi = 0; models && mi < models->n; mi++) {
        const json *mj = &models->items[mi], *name = json_get(mj, "name"), *synth = json_get(mj, "synth"),
                   *runs = json_get(mj, "runs");
        if (!name || !synth || !runs)
            continue;
        snprintf(cmd, sizeof cmd, "'%s' synth %s -o '%s' >/dev/null", TPORT_CLI, synth->str, path);
        CHECK(system(cmd) == 0, "failed: %s", cmd);
        tport_model *m = tport_model_load(path, NULL);
        CHECK(m != NULL, "%s: %s", name->str, tport_last_error());
        if (!m)
            continue;
        CHECK(tport_model_pooling(m) == -1, "%s: a pooling type the file does not declare", name->str);
        int32_t ne = tport_model_n_embd(m);
        tport_session_params sp = {.kv_f32 = true, .n_batch = 4}; /* the prompt in several batches */
        tport_session *s = tport_session_new(m, &sp);
        float *got = malloc((size_t)ne * 3 * sizeof *got);
        for (size_t ri = 0; s && got && ri < runs->n; ri++) {
            const json *ids_j = json_get(&runs->items[ri], "prompt_ids");
            tport_token ids[64];
            int32_t n = ids_j && ids_j->n <= 64 ? (int32_t)ids_j->n : 0;
            for (int32_t i = 0; i < n; i++)
                ids[i] = (tport_token)ids_j->items[i].number;
            for (int k = 0; k < 3; k++) {
                const json *want = json_get(&runs->items[ri], kinds[k].key);
                float *e = got + (size_t)k * (size_t)ne;
                CHECK(want && (int32_t)want->n == ne, "%s: no %s reference", name->str, kinds[k].key);
                CHECK(tport_session_embed(s, ids, n, kinds[k].pooling, e) == TPORT_STATUS_OK, "%s: %s", name->str,
                      tport_last_error());
                float scale = 0, d = want && (int32_t)want->n == ne ? compare(e, want, ne, &scale) : INFINITY;
                printf("  %s %s: max |diff| %g against max |value| %g\n", name->str, kinds[k].key, (double)d,
                       (double)scale);
                CHECK(scale > 0 && d <= 3e-4f * scale, "%s %s: differs from llama.cpp by %g", name->str,
                      kinds[k].key, (double)d);
            }
            CHECK(memcmp(got, got + ne, (size_t)ne * sizeof *got) && memcmp(got + ne, got + 2 * ne,
                                                                           (size_t)ne * sizeof *got),
                  "%s: the poolings give the same vector", name->str);
            CHECK(tport_session_pos(s) == n && !tport_session_logits(s) &&
                  !memcmp(tport_session_tokens(s), ids, (size_t)n * sizeof *ids),
                  "%s: the session after embedding", name->str);
        }
        CHECK(s && tport_session_embed(s, (const tport_token[]){1}, 1, TPORT_POOLING_RANK, got) ==
                       TPORT_STATUS_UNSUPPORTED, "rank pooling accepted");
        CHECK(s && tport_session_embed(s, NULL, 1, TPORT_POOLING_MEAN, got) == TPORT_STATUS_INVALID_ARGUMENT,
              "no tokens accepted");
        free(got);
        tport_session_free(s);
        tport_model_free(m);
        unlink(path);
    }
    json_free(refs);
    return test_finish("test_embeddings");
}
