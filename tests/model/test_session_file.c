/* Sessions on disk (tport_session_save/load, tport run --session):
 * - a loaded session continues exactly as the saved one (bit-identical
 *   logits for the same cache type; within 1e-2 when an f16 file is loaded
 *   into an f32 cache: f16 -> f32 is exact, but the saver's own cache
 *   rounded nothing the loader's did), on stories260K and a synthesized
 *   llama with grouped KV heads;
 * - another model's file is refused naming it, the session unchanged;
 * - every truncation of a file, a flipped byte anywhere, another version,
 *   more tokens than the context: errors, never a crash;
 * - tport run --session: the second run reuses the prompt's cache and
 *   prints the same ids; a longer prompt reuses the common beginning;
 *   another model's file stops the run with exit status 2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_util.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

static char tmpdir[256];

static int run_cmd(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    *len = b && fread(b, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

static int argmax(const float *x, int32_t n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* Saves after a prompt, loads into fresh sessions (same and other cache
 * type), and compares the continuations. */
static void check_roundtrip(const char *label, const char *path, const char *other_model) {
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "%s: load: %s", label, tport_last_error());
    if (!m)
        return;
    int32_t nv = tport_model_n_vocab(m);
    char file[512];
    snprintf(file, sizeof file, "%s/session-%d.tps", tmpdir, (int)getpid());
    tport_token prompt[40];
    prompt[0] = 1;
    for (int i = 1; i < 40; i++)
        prompt[i] = (tport_token)((i * 97 + 11) % nv);
    for (int f32 = 0; f32 < 2; f32++) {
        tport_session_params sp = {.n_ctx = 64, .kv_f32 = f32};
        tport_session *a = tport_session_new(m, &sp), *b = tport_session_new(m, &sp);
        CHECK(a && b, "%s: sessions", label);
        if (!a || !b)
            break;
        CHECK(tport_session_eval(a, prompt, 40) == 0, "%s: eval", label);
        CHECK(tport_session_save(a, file) == TPORT_STATUS_OK, "%s: save: %s", label, tport_last_error());
        CHECK(tport_session_load(b, file) == TPORT_STATUS_OK, "%s: load: %s", label, tport_last_error());
        CHECK(tport_session_pos(b) == 40 && !memcmp(tport_session_tokens(b), prompt, sizeof prompt),
              "%s: loaded tokens", label);
        CHECK(tport_session_logits(b) == NULL, "%s: no logits right after a load", label);
        /* ten greedy tokens: the same ids and bit-identical logits */
        int same = 0;
        for (int i = 0; i < 10; i++) {
            tport_token x = argmax(tport_session_logits(a), nv);
            if (tport_session_eval(a, &x, 1) || tport_session_eval(b, &x, 1))
                break;
            same += !memcmp(tport_session_logits(a), tport_session_logits(b), (size_t)nv * sizeof(float));
        }
        CHECK(same == 10, "%s (%s cache): %d of 10 continuations bit-identical after a load", label,
              f32 ? "f32" : "f16", same);
        printf("%s (%s cache): saved and loaded, 10 of 10 continuations bit-identical\n", label,
               f32 ? "f32" : "f16");

        /* the file into the other cache type */
        tport_session_params sq = {.n_ctx = 64, .kv_f32 = !f32};
        tport_session *c = tport_session_new(m, &sq), *d = tport_session_new(m, &sq);
        CHECK(c && d && tport_session_load(c, file) == 0, "%s: load into the other type: %s", label,
              tport_last_error());
        if (c && d && tport_session_pos(c) == 40) {
            tport_token x = prompt[39];
            tport_session_truncate(c, 39);
            CHECK(tport_session_eval(c, &x, 1) == 0 && tport_session_eval(d, prompt, 40) == 0, "%s: eval", label);
            double diff = 0;
            for (int32_t i = 0; i < nv; i++)
                diff = fmax(diff, fabs(tport_session_logits(c)[i] - tport_session_logits(d)[i]));
            printf("%s: an %s file in an %s cache: max |logit diff| %.3g against a fresh evaluation\n", label,
                   f32 ? "f32" : "f16", f32 ? "f16" : "f32", diff);
            CHECK(diff < 1e-2, "%s: other cache type differs by %g", label, diff);
        }
        tport_session_free(c);
        tport_session_free(d);

        /* a context too small for the file */
        tport_session_params small = {.n_ctx = 16, .kv_f32 = f32};
        tport_session *e = tport_session_new(m, &small);
        CHECK(e && tport_session_load(e, file) == TPORT_STATUS_INVALID_ARGUMENT && strstr(tport_last_error(), "context"),
              "%s: 40 tokens into a context of 16: %s", label, tport_last_error());
        tport_session_free(e);

        /* another model's file */
        if (other_model) {
            tport_model *o = tport_model_load(other_model, NULL);
            tport_session *os = o ? tport_session_new(o, &sp) : NULL;
            tport_token one = 1;
            CHECK(os && tport_session_eval(os, &one, 1) == 0, "other model: %s", tport_last_error());
            if (os) {
                CHECK(tport_session_load(os, file) == TPORT_STATUS_INVALID_ARGUMENT &&
                          strstr(tport_last_error(), "another model"),
                      "%s: another model's file: %s", label, tport_last_error());
                printf("%s: into another model: %s\n", label, tport_last_error());
                CHECK(tport_session_pos(os) == 1 && tport_session_logits(os), "refused load changed the session");
            }
            tport_session_free(os);
            tport_model_free(o);
        }

        /* every truncation, flipped bytes, another version */
        size_t len = 0;
        unsigned char *buf = slurp(file, &len);
        CHECK(buf && len > 64, "%s: read back", label);
        char bad[600];
        snprintf(bad, sizeof bad, "%s.bad", file);
        int refused = 0, tried = 0;
        tport_token one = 1;
        tport_session_reset(b);
        tport_session_eval(b, &one, 1);
        for (size_t cut = 0; buf && cut < len; cut += cut < 80 ? 1 : len / 97 + 1) {
            spit(bad, buf, cut);
            tried++;
            refused += tport_session_load(b, bad) == TPORT_STATUS_BAD_FORMAT;
        }
        CHECK(refused == tried, "%s: %d of %d truncated files refused", label, refused, tried);
        CHECK(tport_session_pos(b) == 1, "%s: a refused file changed the session", label);
        refused = tried = 0;
        for (size_t at = 0; buf && at < len; at += at < 64 ? 1 : len / 131 + 1) {
            buf[at] ^= 0x10;
            spit(bad, buf, len);
            buf[at] ^= 0x10;
            tried++;
            tport_status st = tport_session_load(b, bad);
            refused += st == TPORT_STATUS_BAD_FORMAT || st == TPORT_STATUS_INVALID_ARGUMENT;
        }
        CHECK(refused == tried, "%s: %d of %d corrupted files refused", label, refused, tried);
        if (buf) {
            buf[8] = 2; /* version 2 */
            spit(bad, buf, len);
            CHECK(tport_session_load(b, bad) == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "version 2"),
                  "%s: version 2: %s", label, tport_last_error());
            spit(bad, (const unsigned char *)"not a session at all, just text", 31);
            CHECK(tport_session_load(b, bad) == TPORT_STATUS_BAD_FORMAT, "text file");
        }
        printf("%s: truncated, corrupted and versioned files refused\n", label);
        remove(bad);
        free(buf);
        tport_session_free(a);
        tport_session_free(b);
    }
    remove(file);
    tport_model_free(m);
}

static void check_run_cli(const char *model, const char *other) {
    char cmd[4096], out1[8192], out2[8192], err[8192], file[512];
    snprintf(file, sizeof file, "%s/run-session-%d.tps", tmpdir, (int)getpid());
    remove(file);
    const char *ids = "1,40,80,120,160,200,240,280,320,360,400,440,480,20,60,100";
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --prompt-ids %s --ids --temp 0 -n 24 --session '%s' 2>&1",
             TPORT_CLI, model, ids, file);
    CHECK(run_cmd(cmd, out1, sizeof out1) == 0 && strstr(out1, "0 of 16 prompt tokens reused"),
          "first run --session: %s", out1);
    CHECK(access(file, F_OK) == 0, "run --session wrote no file");
    CHECK(run_cmd(cmd, out2, sizeof out2) == 0 && strstr(out2, "15 of 16 prompt tokens reused"),
          "second run --session: %s", out2);
    /* the ids line (the only line of digits) must be the same */
    char *l1 = strstr(out1, "\n") ? out1 : out1, *l2 = out2;
    for (char *p = strtok(l1, "\n"); p; p = strtok(NULL, "\n"))
        if (*p >= '0' && *p <= '9') {
            l1 = p;
            break;
        }
    for (char *p = strtok(l2, "\n"); p; p = strtok(NULL, "\n"))
        if (*p >= '0' && *p <= '9') {
            l2 = p;
            break;
        }
    CHECK(!strcmp(l1, l2), "ids differ with a reused session:\n %s\n %s", l1, l2);
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --prompt-ids %s,7,8,9 --ids --temp 0 -n 4 --session '%s' 2>&1",
             TPORT_CLI, model, ids, file);
    CHECK(run_cmd(cmd, err, sizeof err) == 0 && strstr(err, "16 of 19 prompt tokens reused"), "longer prompt: %s",
          err);
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --prompt-ids 1,2,3 --ids --temp 0 -n 4 --session '%s' 2>&1",
             TPORT_CLI, other, file);
    CHECK(run_cmd(cmd, err, sizeof err) == 2 && strstr(err, "another model"), "another model's session: %s", err);
    printf("tport run --session: reused, same ids; another model's file refused\n");
    remove(file);
}

int main(void) {
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s", t ? t : "/tmp");
    char stories[1024], llama[512], other[512], cmd[2048];
    snprintf(llama, sizeof llama, "%s/tport-session-llama-%d.gguf", tmpdir, (int)getpid());
    snprintf(other, sizeof other, "%s/tport-session-other-%d.gguf", tmpdir, (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' synth --arch llama --dim 128 --heads 4 --kv-heads 2 --layers 2 --ctx 128 "
             "--out-gain 4 --seed 7 -o '%s' >/dev/null 2>&1 && '%s' synth --arch llama --dim 128 --heads 4 "
             "--kv-heads 2 --layers 2 --ctx 128 --seed 8 -o '%s' >/dev/null 2>&1",
             TPORT_CLI, llama, TPORT_CLI, other);
    CHECK(system(cmd) == 0, "synth");
    check_roundtrip("synthetic llama", llama, other);
    if (test_shared_path("models/stories260K.bin", stories, sizeof stories))
        check_roundtrip("stories260K", stories, llama);
    else
        printf("stories260K: skipped (../shared/models/stories260K.bin absent)\n");
    check_run_cli(llama, other);
    remove(llama);
    remove(other);
    return test_finish("test_session_file");
}
