/* Greedy generation on vulkan against the CPU backend, on the shared
 * models (stories260K, llama-2-tiny-random) and on files synthesized with
 * `tport synth` (f32, f16, q8_0, q4_0, q4_k, q6_k).  Both sessions are fed
 * the CPU's choice each step; every step compares the logits (max
 * difference) and the arg-max.  The CPU backend is the best installed
 * variant (the plug-ins beside the vulkan one), as for a user.  The ids
 * must be equal; the one exception allowed is a near tie — the CPU's best
 * two logits within 0.02 — which float rounding decides: on these random
 * models a last-bit difference flips an 8-bit rounding of an activation a
 * layer later, and the CPU backend's own -O0 and -O3 builds disagree at
 * such a step.  Such a step is reported.  Logits must agree to 0.1 of
 * (|logit| + 1): broken kernels are off by far more.  3 prompt tokens, 16
 * generated, both sessions continuing from the CPU's choice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tport/tport.h>

#include "vulkan_test.h"

#define NAME "test_vulkan_models"
#define STEPS 16
#define NEAR_TIE 0.02

#ifndef TPORT_VULKAN_PLUGIN
int main(void) {
    vulkan_test_unavailable(NAME, "the vulkan plug-in was not built (Vulkan loader or glslc not found)");
}
#else

static int argmax(const float *l, int n, float *gap) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[best])
            best = i;
    float second = -INFINITY;
    for (int i = 0; i < n; i++)
        if (i != best && l[i] > second)
            second = l[i];
    *gap = l[best] - second;
    return best;
}

static void compare(const char *path, const char *what) {
    tport_model_params mp[2] = {{.backend = "cpu", .n_threads = 2}, {.backend = "vulkan", .n_threads = 2}};
    tport_model *m[2] = {NULL, NULL};
    tport_session *s[2] = {NULL, NULL};
    for (int r = 0; r < 2; r++) {
        m[r] = tport_model_load(path, &mp[r]);
        CHECK(m[r] != NULL, "%s: load on %s: %s", what, mp[r].backend, tport_last_error());
        /* both with an f32 KV cache: the cpu's default is f16, the
         * vulkan backend keeps f32 */
        tport_session_params sp = {.kv_f32 = true};
        s[r] = m[r] ? tport_session_new(m[r], &sp) : NULL;
    }
    if (!s[0] || !s[1])
        goto out;
    tport_token prompt[3] = {1, 5, 9};
    for (int r = 0; r < 2; r++)
        CHECK(tport_session_eval(s[r], prompt, 3) == TPORT_STATUS_OK, "%s: prompt: %s", what, tport_last_error());
    int n_vocab = tport_model_n_vocab(m[0]), same = 0, ties = 0;
    double worst = 0;
    char ids[STEPS * 8] = "";
    for (int step = 0; step < STEPS; step++) {
        const float *lc = tport_session_logits(s[0]), *lv = tport_session_logits(s[1]);
        if (!lc || !lv)
            break;
        float gap_c, gap_v;
        int bc = argmax(lc, n_vocab, &gap_c), bv = argmax(lv, n_vocab, &gap_v);
        for (int i = 0; i < n_vocab; i++)
            worst = fmax(worst, fabs((double)lc[i] - lv[i]) / (fabs((double)lc[i]) + 1.0));
        if (bc == bv) {
            same++;
        } else {
            ties++;
            CHECK(gap_c < NEAR_TIE, "%s: step %d: vulkan picks %d, cpu %d, whose lead is %.3g (not a near tie)", what,
                  step, bv, bc, (double)gap_c);
            printf("%s: %s: step %d is a near tie (cpu's lead %.2g): cpu %d, vulkan %d\n", NAME, what, step,
                   (double)gap_c, bc, bv);
        }
        size_t len = strlen(ids);
        snprintf(ids + len, sizeof ids - len, "%s%d", step ? "," : "", bc);
        tport_token t = bc; /* both continue from the cpu's choice */
        for (int r = 0; r < 2; r++)
            CHECK(tport_session_eval(s[r], &t, 1) == TPORT_STATUS_OK, "%s: step %d: %s", what, step,
                  tport_last_error());
    }
    CHECK(worst < 0.1, "%s: logits differ from the cpu's by up to %.3g (relative)", what, worst);
    printf("%s: %-26s %2d/%d ids equal, %d near ties, logits within %.1e: %s\n", NAME, what, same, STEPS, ties, worst,
           ids);
out:
    for (int r = 0; r < 2; r++) {
        tport_session_free(s[r]);
        tport_model_free(m[r]);
    }
}

int main(void) {
    unsetenv("TPORT_BACKEND");
    /* the folder of the plug-in holds the CPU variants too */
    char folder[1024];
    snprintf(folder, sizeof folder, "%s", TPORT_VULKAN_PLUGIN);
    char *slash = strrchr(folder, '/');
    if (slash)
        *slash = '\0';
    setenv("TPORT_BACKEND_PATH", folder, 1);
    bool found = false;
    for (int i = 0; i < tport_backend_count(); i++)
        found = found || !strcmp(tport_backend_name(i), "vulkan");
    if (!found)
        vulkan_test_unavailable(NAME, "the vulkan plug-in has no device here");
    char buf[1024];
    const char *shared[] = {"models/stories260K.bin", "models/llama-2-tiny-random.gguf"};
    for (int i = 0; i < 2; i++) {
        const char *p = test_shared_path(shared[i], buf, sizeof buf);
        if (p)
            compare(p, shared[i] + 7);
        else
            printf("%s: %s skipped (absent from ../shared)\n", NAME, shared[i]);
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tport-vkmodels-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        CHECK(0, "cannot create a scratch folder");
        return test_finish(NAME);
    }
    const char *types[] = {"f32", "f16", "q8_0", "q4_0", "q4_k", "q6_k"};
    for (int i = 0; i < 6; i++) {
        char path[700], cmd[1600], what[64];
        snprintf(path, sizeof path, "%s/synth_%s.gguf", dir, types[i]);
        snprintf(cmd, sizeof cmd, "'%s' synth --type %s --kv-heads 2 --seed %d -o '%s' >/dev/null", TPORT_CLI,
                 types[i], 3 + i, path);
        int st = system(cmd);
        CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed", cmd);
        snprintf(what, sizeof what, "synthesized %s", types[i]);
        compare(path, what);
        remove(path);
    }
    rmdir(dir);
    return test_finish(NAME);
}
#endif
