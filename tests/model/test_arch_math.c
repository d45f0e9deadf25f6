/* Files asking for math this build does not implement are refused, never
 * run wrong (src/model/arch/arch_math.c).  Each case copies a synthesized
 * llama or gemma file with one key or tensor added and checks: `tport run`
 * exits non-zero with one line naming the key or tensor; `tport info`
 * still shows the file and says why it would not run; the library's load
 * fails with the name in its error.  Harmless extras (general.*,
 * tokenizer.*, an implemented rope scaling type, zero experts) still run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_util.h"
#include "formats/gguf_write.h"
#include "formats/model_file.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

typedef enum { ADD_STR, ADD_U32, ADD_F32, ADD_TENSOR } add_kind;

typedef struct add_case {
    const char *base;    /* "llama" or "gemma": which synthesized file */
    add_kind kind;
    const char *name;    /* key, or tensor ("%d": one per layer)        */
    const char *str;     /* ADD_STR value                               */
    double num;          /* ADD_U32 / ADD_F32 value, ADD_TENSOR length  */
    const char *named;   /* what the refusal must name; NULL: it runs   */
} add_case;

static const add_case cases[] = {
    {"gemma", ADD_TENSOR, "rope_freqs.weight", NULL, 16, "rope_freqs.weight"},
    {"llama", ADD_STR, "llama.rope.scaling.type", "longrope", 0, "llama.rope.scaling.type = longrope"},
    {"llama", ADD_F32, "llama.rope.scaling.yarn_log_multiplier", NULL, 0.1, "llama.rope.scaling.yarn_log_multiplier"},
    {"llama", ADD_F32, "llama.attn_logit_softcapping", NULL, 50, "llama.attn_logit_softcapping"},
    {"gemma", ADD_F32, "gemma.attn_logit_softcapping", NULL, 50, "gemma.attn_logit_softcapping"},
    {"gemma", ADD_F32, "gemma.final_logit_softcapping", NULL, 30, "gemma.final_logit_softcapping"},
    {"llama", ADD_U32, "llama.attention.sliding_window_pattern", NULL, 2,
     "llama.attention.sliding_window_pattern"},
    /* llama implements experts (Mixtral), not shared ones */
    {"llama", ADD_U32, "llama.expert_shared_count", NULL, 2, "llama.expert_shared_count"},
    {"llama", ADD_F32, "llama.attention.clamp_kqv", NULL, 8, "llama.attention.clamp_kqv"},
    {"llama", ADD_F32, "llama.rope.freq_base_swa", NULL, 10000, "llama.rope.freq_base_swa"},
    {"llama", ADD_U32, "llama.some_future_key", NULL, 1, "llama.some_future_key"},
    {"llama", ADD_TENSOR, "blk.%d.attn_q_norm.weight", NULL, 16, "blk.N.attn_q_norm.weight in 2 layers"},
    {"llama", ADD_TENSOR, "blk.%d.attn_sinks.weight", NULL, 4, "blk.N.attn_sinks.weight in 2 layers"},
    /* harmless or implemented: these run */
    {"llama", ADD_STR, "general.source.url", "https://example.com", 0, NULL},
    {"llama", ADD_STR, "tokenizer.ggml.pre", "default", 0, NULL},
    {"llama", ADD_STR, "llama.rope.scaling.type", "linear", 0, NULL},
    /* implemented since ABI 1.3's ROPE_EXT */
    {"llama", ADD_TENSOR, "rope_freqs.weight", NULL, 8, NULL},
    {"llama", ADD_STR, "llama.rope.scaling.type", "yarn", 0, NULL},
    {"llama", ADD_F32, "llama.rope.scaling.attn_factor", NULL, 0.9, NULL},
    {"llama", ADD_U32, "llama.expert_count", NULL, 0, NULL},
    {"llama", ADD_U32, "llama.attention.sliding_window", NULL, 32, NULL},
};

/* Copies src to dst with the case's key or tensor added. */
static bool write_with(const char *src, const char *dst, const add_case *c) {
    tport_model_file *mf = NULL;
    if (tport_model_file_open(src, &mf) != TPORT_STATUS_OK)
        return false;
    tport_gguf_writer *w = tport_gguf_writer_new();
    tport_status s = w ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    for (int i = 0; !s && i < mf->n_kv; i++)
        if (strcmp(mf->kv[i].key, "general.alignment"))
            s = tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]);
    if (!s && c->kind == ADD_STR)
        s = tport_gguf_set_str(w, c->name, c->str);
    else if (!s && c->kind == ADD_U32)
        s = tport_gguf_set_u32(w, c->name, (uint32_t)c->num);
    else if (!s && c->kind == ADD_F32)
        s = tport_gguf_set_f32(w, c->name, (float)c->num);
    for (int i = 0; !s && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        s = tport_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    float ones[64]; /* the writer keeps the pointer until tport_gguf_write */
    for (int i = 0; i < 64; i++)
        ones[i] = 1.0f;
    if (!s && c->kind == ADD_TENSOR) {
        int64_t ne[1] = {(int64_t)c->num};
        bool per_layer = strstr(c->name, "%d") != NULL;
        for (int l = 0; !s && l < (per_layer ? 2 : 1); l++) {
            char name[96];
            if (per_layer)
                snprintf(name, sizeof name, c->name, l); /* the case's pattern has one %d */
            else
                snprintf(name, sizeof name, "%s", c->name);
            s = tport_gguf_add_tensor(w, name, TPORT_TYPE_F32, 1, ne, ones, (size_t)ne[0] * sizeof(float));
        }
    }
    if (!s)
        s = tport_gguf_write(w, dst);
    tport_gguf_writer_free(w);
    tport_model_file_close(mf);
    return s == TPORT_STATUS_OK;
}

/* Runs cmd; returns its exit status and the number of lines of its output
 * (stdout and stderr) that hold `needle` (all lines when NULL), and whether
 * any line holds `also`. */
static int run_cmd(const char *cmd, const char *needle, int *lines, const char *also, bool *has_also) {
    *lines = 0;
    if (has_also)
        *has_also = false;
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        *lines += !needle || strstr(line, needle);
        if (also && has_also && strstr(line, also))
            *has_also = true;
    }
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void check_case(const add_case *c, const char *src, const char *dst) {
    CHECK(write_with(src, dst, c), "%s: cannot write the file: %s", c->name, tport_last_error());
    char cmd[2048];
    int lines = 0;
    bool has = false;
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --prompt-ids 1,2,3 -n 2 --temp 0 --ids 2>&1", TPORT_CLI, dst);
    int rc = run_cmd(cmd, c->named, &lines, NULL, NULL);
    tport_model *m = tport_model_load(dst, NULL);
    if (c->named) {
        CHECK(rc != 0 && lines == 1, "%s: tport run exit %d, %d lines naming %s (want non-zero, 1)", c->name, rc,
              lines, c->named);
        CHECK(!m && strstr(tport_last_error(), c->named), "%s: load %s, error '%s'", c->name,
              m ? "succeeded" : "failed", m ? "" : tport_last_error());
        snprintf(cmd, sizeof cmd, "'%s' info '%s' 2>&1", TPORT_CLI, dst);
        rc = run_cmd(cmd, "runs:          no, it needs", &lines, c->named, &has);
        CHECK(rc == 0 && lines == 1 && has, "%s: tport info exit %d, %d 'runs: no' lines, names it: %d", c->name,
              rc, lines, (int)has);
    } else {
        CHECK(rc == 0, "%s: tport run exit %d on a harmless key", c->name, rc);
        CHECK(m != NULL, "%s: load failed: %s", c->name, tport_last_error());
    }
    tport_model_free(m);
    unlink(dst);
}

int main(void) {
    const char *dir = getenv("TMPDIR");
    char llama[512], gemma[512], dst[512], cmd[1024];
    dir = dir && *dir ? dir : "/tmp";
    snprintf(llama, sizeof llama, "%s/tport-math-%d-llama.gguf", dir, (int)getpid());
    snprintf(gemma, sizeof gemma, "%s/tport-math-%d-gemma.gguf", dir, (int)getpid());
    snprintf(dst, sizeof dst, "%s/tport-math-%d-case.gguf", dir, (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' synth --dim 64 --layers 2 --heads 4 --ff 128 --vocab 300 --ctx 64 --seed 5 "
             "-o '%s' >/dev/null", TPORT_CLI, llama);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    snprintf(cmd, sizeof cmd, "'%s' synth --arch gemma --dim 64 --layers 2 --heads 4 --kv-heads 1 --head-size 32 "
             "--ff 128 --vocab 300 --ctx 64 --seed 5 -o '%s' >/dev/null", TPORT_CLI, gemma);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    /* the unchanged files run */
    tport_model *m = tport_model_load(llama, NULL);
    CHECK(m != NULL, "load %s: %s", llama, tport_last_error());
    tport_model_free(m);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i], !strcmp(cases[i].base, "gemma") ? gemma : llama, dst);
    unlink(llama);
    unlink(gemma);
    return test_finish("test_arch_math");
}
