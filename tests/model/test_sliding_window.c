/* A llama file with Mistral's sliding-window key: tensorport does not
 * implement windowed attention, so the context stops at the window, where
 * windowed and full attention are the same: the ids within the window equal
 * those of the same file without the key, and evaluating past it is an
 * error rather than a silently different result. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf_write.h"
#include "formats/model_file.h"
#include "greedy.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define WINDOW 16

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

int main(void) {
    const char *dir = getenv("TMPDIR");
    char plain[512], windowed[512], cmd[1024];
    snprintf(plain, sizeof plain, "%s/tport-swa-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    snprintf(windowed, sizeof windowed, "%s/tport-swa-%d-w.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' synth --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --vocab 300 --ctx 64 "
             "--seed 5 -o '%s' >/dev/null", TPORT_CLI, plain);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    CHECK(add_window_key(plain, windowed), "cannot write %s: %s", windowed, tport_last_error());
    tport_model *a = tport_model_load(plain, NULL), *b = tport_model_load(windowed, NULL);
    CHECK(a && b, "load: %s", tport_last_error());
    if (a && b) {
        CHECK(tport_model_n_ctx(a) == 64 && tport_model_n_ctx(b) == WINDOW, "contexts %d and %d",
              (int)tport_model_n_ctx(a), (int)tport_model_n_ctx(b));
        tport_token prompt[4] = {1, 20, 30, 40}, ia[WINDOW], ib[WINDOW];
        int na = greedy_ids(a, prompt, 4, ia, WINDOW - 4), nb = greedy_ids(b, prompt, 4, ib, WINDOW - 4);
        CHECK(na == WINDOW - 4 && first_difference(ia, na, ib, nb) < 0, "ids within the window differ");
        tport_session *s = tport_session_new(b, NULL);
        tport_token many[WINDOW + 1] = {0};
        CHECK(s && tport_session_eval(s, many, WINDOW + 1) != TPORT_STATUS_OK, "evaluated past the window");
        tport_session_free(s);
    }
    tport_model_free(a);
    tport_model_free(b);
    unlink(plain);
    unlink(windowed);
    return test_finish("test_sliding_window");
}
