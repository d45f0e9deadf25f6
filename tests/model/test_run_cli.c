/* `tport run` end to end: --ids output against refs.json (llama2.c and
 * llama.cpp greedy ids), --weight-type f32 keeping them and reporting the
 * conversion, streamed text equal to the decoded ids, seeded sampling
 * reproducible, and one-line errors with exit status 2. */
#include <sys/wait.h>

#include "json_min.h"
#include "../test_util.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

/* Runs a shell command; captures up to cap-1 bytes of stdout; returns the
 * exit status (or -1). */
static int run(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void ids_line(const json *ids, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; ids && i < ids->n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ",%d" : "%d", (int)ids->items[i].number);
    if (k < cap - 1) {
        buf[k++] = '\n';
        buf[k] = '\0';
    }
}

int main(void) {
    char refs_path[1024], stories[1024], tiny[1024], cmd[4096], out[65536], want[65536];
    if (!test_shared_path("refs/refs.json", refs_path, sizeof refs_path) ||
        !test_shared_path("models/stories260K.bin", stories, sizeof stories) ||
        !test_shared_path("models/llama-2-tiny-random.gguf", tiny, sizeof tiny))
        test_skip("test_run_cli", "../shared models or refs absent");
    json *refs = json_load(refs_path);
    CHECK(refs != NULL, "parse %s", refs_path);
    const json *s_ref = json_get(refs, "stories260K.bin"), *t_ref = json_get(refs, "llama-2-tiny-random.gguf");

    /* llama2.c checkpoint, BOS prompt (the default), greedy; llama2.c's KV
     * cache is f32 */
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --ids --temp 0 -n 64 --kv-type f32 2>/dev/null", TPORT_CLI, stories);
    CHECK(run(cmd, out, sizeof out) == 0, "tport run on stories260K failed");
    ids_line(json_get(s_ref, "generated_ids"), want, sizeof want);
    CHECK(!strcmp(out, want), "stories260K --ids:\n got  %s want %s", out, want);

    /* the same through --prompt-ids 1 and batch 1 */
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --prompt-ids 1 --ids --temp 0 -n 64 --batch 1 --threads 1 --kv-type f32 2>/dev/null",
             TPORT_CLI, stories);
    CHECK(run(cmd, out, sizeof out) == 0 && !strcmp(out, want), "stories260K --prompt-ids 1:\n got  %s", out);

    /* GGUF with its vocabulary: text prompt, greedy */
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p 'Once upon a time' --ids --temp 0 -n 32 2>/dev/null",
             TPORT_CLI, tiny);
    CHECK(run(cmd, out, sizeof out) == 0, "tport run on the tiny GGUF failed");
    const json *gen = json_get(t_ref, "generated_ids");
    ids_line(gen, want, sizeof want);
    CHECK(!strcmp(out, want), "tiny GGUF --ids:\n got  %s want %s", out, want);

    /* --weight-type f32: f16 -> f32 is lossless, so the same ids, and the
     * conversion is reported on stderr */
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p 'Once upon a time' --ids --temp 0 -n 32 --weight-type f32 2>&1",
             TPORT_CLI, tiny);
    CHECK(run(cmd, out, sizeof out) == 0 && strstr(out, "9 tensors f16 -> f32 (lossless) for backend cpu") &&
              strstr(out, want),
          "--weight-type f32:\n got  %s want %s", out, want);

    /* text mode: the prompt, then the decoded reference ids, then a newline */
    tport_model *m = tport_model_load(tiny, NULL);
    CHECK(m != NULL, "load: %s", tport_last_error());
    if (m && gen) {
        size_t k = (size_t)snprintf(want, sizeof want, "Once upon a time");
        tport_token prev = 931; /* last prompt token, "time" */
        for (size_t i = 0; i < 8 && i < gen->n; i++) {
            tport_token id = (tport_token)gen->items[i].number;
            k += (size_t)tport_token_to_text(m, prev, id, want + k, (int32_t)(sizeof want - k - 2));
            prev = id;
        }
        want[k++] = '\n';
        want[k] = '\0';
        snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p 'Once upon a time' --temp 0 -n 8 2>/dev/null", TPORT_CLI, tiny);
        CHECK(run(cmd, out, sizeof out) == 0 && !strcmp(out, want), "text mode:\n got  '%s'\n want '%s'", out, want);
    }
    tport_model_free(m);

    /* sampling: the same seed gives the same tokens, another seed others */
    char a[4096], b[4096];
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --ids --temp 1 --top-k 0 --top-p 1 --min-p 0 --seed 7 -n 24 2>/dev/null",
             TPORT_CLI, tiny);
    CHECK(run(cmd, a, sizeof a) == 0 && run(cmd, b, sizeof b) == 0 && !strcmp(a, b) && a[0],
          "seed 7 twice: '%s' vs '%s'", a, b);
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --ids --temp 1 --top-k 0 --top-p 1 --min-p 0 --seed 8 -n 24 2>/dev/null",
             TPORT_CLI, tiny);
    CHECK(run(cmd, b, sizeof b) == 0 && strcmp(a, b) != 0, "seeds 7 and 8 gave the same tokens");

    /* errors: exit 2 and exactly one line "tport: ..." on stderr */
    const char *bad[] = {
        "run -m /nonexistent/model.gguf",
        "run -m '%s' --bogus-flag 1",
        "run -m '%s' -n abc",
        "run -m '%s' --temp -1",
        "run -m '%s' --presence-penalty nan",
        "run -m '%s' --frequency-penalty x",
        "run -m '%s' -p 'Once upon a time' --ctx 3",
        "run -m '%s' --prompt-ids 1,99999 --ids",
        "run -m '%s' -p x --prompt-ids 1",
        "run -m '%s' --backend no-such-backend",
        "run -m '%s' --weight-type no-such-type",
        "run -m '%s' --weight-type q4_0 --backend no-such-backend",
        "run",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[1024];
        snprintf(args, sizeof args, bad[i], tiny);
        snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 >/dev/null", TPORT_CLI, args);
        int rc = run(cmd, out, sizeof out);
        char *nl = strchr(out, '\n');
        CHECK(rc == 2 && !strncmp(out, "tport: ", 7) && nl && nl[1] == '\0',
              "'tport %s': exit %d, stderr '%s'", args, rc, out);
    }
    /* a checkpoint without a vocabulary needs --ids */
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -n 2 2>&1 >/dev/null", TPORT_CLI, stories);
    CHECK(run(cmd, out, sizeof out) == 2 && strstr(out, "vocabulary"), "no vocabulary: '%s'", out);
    /* --help succeeds and documents the defaults */
    snprintf(cmd, sizeof cmd, "'%s' run --help", TPORT_CLI);
    CHECK(run(cmd, out, sizeof out) == 0 && strstr(out, "--prompt-ids") && strstr(out, "default"), "--help");
    /* every option the parser takes is in --help (as test_serve_curl.sh checks for serve) */
    const char *opts[] = {"--model", "--prompt", "--parse-special", "--prompt-ids", "-n N", "--temp", "--top-k",
                          "--top-p", "--min-p", "--repeat-penalty", "--presence-penalty", "--frequency-penalty",
                          "--repeat-last-n", "--seed", "--ids", "--backend", "--isolate", "--weight-type", "--threads",
                          "--tokenizer", "--ctx", "--batch", "--kv-type", "--plan", "PyTorch", "gptj"};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        CHECK(strstr(out, opts[i]) != NULL, "run --help lacks %s", opts[i]);

    json_free(refs);
    return test_finish("test_run_cli");
}
