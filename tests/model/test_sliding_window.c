/* Sliding-window attention with a window-sized cache, on a llama file with
 * Mistral's sliding-window key (every layer windowed):
 *
 * - the context is not capped at the window;
 * - within the window the ids equal those of the file without the key;
 * - past it, a session whose cache is a ring of window + batch - 1 cells
 *   (the batch prompt in batches that wrap round the ring, and token by
 *   token with a ring of exactly the window) gives the logits of a session
 *   whose cache holds every position, masked with llama.cpp's rule (a key
 *   is masked when p_query - p_key >= n_swa), at every step;
 * - the window changes the result (the file without the key differs), and
 *   a ring's bytes are its cells', not the context's;
 * - in gemma3's pattern only the local layers keep a ring (of exactly the
 *   window, fed one token at a time), the global ones the context. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf_write.h"
#include "formats/model_file.h"
#include "greedy.h"
#include "model/model.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define WINDOW 8
#define CTX 64
#define PROMPT 20
#define STEPS 30

/* Copies src to dst with "llama.attention.sliding_window" = WINDOW added. */
static bool add_window_key(const char *src, const char *dst) {
    tport_model_file *mf = NULL;
    if (tport_model_file_open(src, &mf) != TPORT_STATUS_OK)
        return false;
    tport_gguf_writer *w = tport_gguf_writer_new();
    tport_status s = w ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    for (int i = 0; !s && i < mf->n_kv; i++)
        if (strcmp(mf->kv[i].key, "general.alignment"))
            s = tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]);
    if (!s)
        s = tport_gguf_set_u32(w, "llama.attention.sliding_window", WINDOW);
    for (int i = 0; !s && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        s = tport_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    if (!s)
        s = tport_gguf_write(w, dst);
    tport_gguf_writer_free(w);
    tport_model_file_close(mf);
    return s == TPORT_STATUS_OK;
}

/* Greedy continuation of the prompt in a session of n_batch (n_ctx CTX,
 * f32 cache): the ids, and every step's logits into logits[STEPS][n_vocab]. */
static int run(tport_model *m, int32_t n_batch, const tport_token *prompt, tport_token *ids, float *logits,
               size_t *layer0_bytes) {
    tport_session_params sp = {.n_ctx = CTX, .n_batch = n_batch, .kv_f32 = true};
    tport_session *s = tport_session_new(m, &sp);
    int32_t n_vocab = tport_model_n_vocab(m);
    int done = 0;
    if (s && tport_session_eval(s, prompt, PROMPT) == TPORT_STATUS_OK) {
        *layer0_bytes = tport_session_layer_cache_bytes(s, 0);
        while (done < STEPS) {
            const float *l = tport_session_logits(s);
            if (!l)
                break;
            memcpy(logits + (size_t)done * (size_t)n_vocab, l, (size_t)n_vocab * sizeof *l);
            tport_token best = 0;
            for (int32_t i = 1; i < n_vocab; i++)
                if (l[i] > l[best])
                    best = i;
            ids[done++] = best;
            if (done < STEPS && tport_session_eval(s, &best, 1) != TPORT_STATUS_OK)
                break;
        }
    }
    if (done < STEPS)
        fprintf(stderr, "  run (batch %d): %s\n", (int)n_batch, tport_last_error());
    tport_session_free(s);
    return done;
}

static float max_diff(const float *a, const float *b, size_t n) {
    float d = 0.0f;
    for (size_t i = 0; i < n; i++)
        d = fmaxf(d, fabsf(a[i] - b[i]));
    return d;
}

int main(void) {
    const char *dir = getenv("TMPDIR");
    char plain[512], windowed[512], cmd[1024];
    snprintf(plain, sizeof plain, "%s/tport-swa-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    snprintf(windowed, sizeof windowed, "%s/tport-swa-%d-w.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' synth --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --vocab 300 --ctx %d "
             "--seed 5 --out-gain 4 --norm-noise 0.5 -o '%s' >/dev/null", TPORT_CLI, CTX, plain);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    CHECK(add_window_key(plain, windowed), "cannot write %s: %s", windowed, tport_last_error());
    tport_model *a = tport_model_load(plain, NULL), *b = tport_model_load(windowed, NULL);
    CHECK(a && b, "load: %s", tport_last_error());
    if (a && b) {
        CHECK(tport_model_n_ctx(a) == CTX && tport_model_n_ctx(b) == CTX, "contexts %d and %d (the window "
              "must not cap it)", (int)tport_model_n_ctx(a), (int)tport_model_n_ctx(b));
        tport_token prompt[PROMPT], ia[WINDOW], ib[WINDOW];
        for (int i = 0; i < PROMPT; i++)
            prompt[i] = (tport_token)(1 + (i * 37) % 299);
        int na = greedy_ids(a, prompt, 4, ia, WINDOW - 4), nb = greedy_ids(b, prompt, 4, ib, WINDOW - 4);
        CHECK(na == WINDOW - 4 && first_difference(ia, na, ib, nb) < 0, "ids within the window differ");

        size_t nv = (size_t)tport_model_n_vocab(b), row = 2 /* heads */ * 16 /* head size */ * sizeof(float);
        float *full = malloc(STEPS * nv * sizeof(float)), *ring = malloc(STEPS * nv * sizeof(float));
        float *nowin = malloc(STEPS * nv * sizeof(float));
        tport_token ids_full[STEPS], ids_ring[STEPS], ids_nowin[STEPS];
        size_t bytes_full = 0, bytes_ring = 0, bytes_nowin = 0;
        /* a batch of the whole context: the ring would be longer than the
         * context, so the cache holds every position (cell = position) */
        int nf = full && ring && nowin ? run(b, CTX, prompt, ids_full, full, &bytes_full) : 0;
        CHECK(nf == STEPS && bytes_full == 2 * CTX * row, "full-cache run: %d steps, %zu bytes", nf, bytes_full);
        int nn = nf ? run(a, 6, prompt, ids_nowin, nowin, &bytes_nowin) : 0;
        CHECK(nn == STEPS && max_diff(full, nowin, nv) > 1e-3f, "the window changed nothing: it is not applied");
        /* batches of 6: a ring of 13 cells, the third batch wraps round it;
         * 1: a ring of exactly the window, token by token */
        const int32_t batches[] = {6, 1, 4};
        for (size_t k = 0; nf == STEPS && k < sizeof batches / sizeof batches[0]; k++) {
            int32_t nb_k = batches[k], cells = WINDOW + nb_k - 1;
            int nr = run(b, nb_k, prompt, ids_ring, ring, &bytes_ring);
            CHECK(nr == STEPS, "ring run (batch %d) stopped after %d steps", (int)nb_k, nr);
            CHECK(bytes_ring == 2 * (size_t)cells * row, "batch %d: layer 0 holds %zu bytes, not the %d cells of "
                  "its ring", (int)nb_k, bytes_ring, (int)cells);
            float d = nr == STEPS ? max_diff(full, ring, STEPS * nv) : INFINITY;
            CHECK(d < 1e-4f, "batch %d: logits differ from the full masked cache by %g", (int)nb_k, (double)d);
            CHECK(first_difference(ids_full, nf, ids_ring, nr) < 0, "batch %d: ids differ from the full cache",
                  (int)nb_k);
        }
        free(full);
        free(ring);
        free(nowin);
        /* the window must not limit the context: past it is fine */
        tport_session *s = tport_session_new(b, NULL);
        tport_token many[WINDOW + 1] = {0};
        CHECK(s && tport_session_eval(s, many, WINDOW + 1) == TPORT_STATUS_OK, "evaluating past the window: %s",
              tport_last_error());
        tport_session_free(s);
    }
    tport_model_free(a);
    tport_model_free(b);
    unlink(plain);
    unlink(windowed);

    /* gemma3's pattern: layers 0-4 and 6 local (rings of the window when
     * fed one token at a time), layer 5 global (the whole context) */
    snprintf(cmd, sizeof cmd, "'%s' synth --arch gemma3 --dim 64 --layers 7 --heads 4 --kv-heads 2 --head-size 32 "
             "--ff 128 --vocab 300 --ctx %d --window %d --seed 5 -o '%s' >/dev/null", TPORT_CLI, CTX, WINDOW, plain);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    tport_model *g = tport_model_load(plain, NULL);
    tport_session_params sp = {.n_ctx = CTX, .n_batch = 1, .kv_f32 = true};
    tport_session *s = g ? tport_session_new(g, &sp) : NULL;
    CHECK(s != NULL, "gemma3: %s", tport_last_error());
    for (int32_t il = 0; s && il < 7; il++) {
        size_t want = 2 * (size_t)(il == 5 ? CTX : WINDOW) * 2 /* kv heads */ * 32 /* head size */ * sizeof(float);
        CHECK(tport_session_layer_cache_bytes(s, il) == want, "gemma3 layer %d: %zu cache bytes, want %zu", (int)il,
              tport_session_layer_cache_bytes(s, il), want);
    }
    tport_session_free(s);
    tport_model_free(g);
    unlink(plain);
    return test_finish("test_sliding_window");
}
