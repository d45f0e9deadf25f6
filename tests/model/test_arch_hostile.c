/* What the architectures refuse: a tport-synth file of each, rewritten with
 * one thing wrong (a tensor missing, a key missing or out of range, a
 * tensor the graph would ignore but must not), must fail to load with a
 * message naming the problem; the unchanged file loads. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf_write.h"
#include "formats/model_file.h"
#include "../test_util.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

typedef struct variant {
    const char *what, *synth;
    const char *drop_tensor;   /* left out, or NULL                   */
    const char *drop_key;      /* left out, or NULL                   */
    const char *f32_key;       /* set to f32_value, or NULL            */
    float f32_value;
    const char *extra_tensor;  /* a copy of blk.0.attn_norm.weight named so */
    const char *expect;        /* in the error; NULL = must load      */
} variant;

/* src rewritten as v says, to dst. */
static bool rewrite(const char *src, const char *dst, const variant *v) {
    tport_model_file *mf = NULL;
    if (tport_model_file_open(src, &mf) != TPORT_STATUS_OK)
        return false;
    tport_gguf_writer *w = tport_gguf_writer_new();
    tport_status s = w ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    for (int i = 0; !s && i < mf->n_kv; i++)
        if (strcmp(mf->kv[i].key, "general.alignment") && (!v->drop_key || strcmp(mf->kv[i].key, v->drop_key)))
            s = tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]);
    if (!s && v->f32_key)
        s = tport_gguf_set_f32(w, v->f32_key, v->f32_value);
    for (int i = 0; !s && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        if (!v->drop_tensor || strcmp(t->name, v->drop_tensor))
            s = tport_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    const tport_mf_tensor *norm = tport_model_file_find(mf, "blk.0.attn_norm.weight");
    if (!s && v->extra_tensor && norm)
        s = tport_gguf_add_tensor(w, v->extra_tensor, norm->type, norm->n_dims, norm->ne, norm->data, norm->nbytes);
    if (!s)
        s = tport_gguf_write(w, dst);
    tport_gguf_writer_free(w);
    tport_model_file_close(mf);
    return s == TPORT_STATUS_OK;
}

/* deepseek2 with the defaults of its synth keys, one layer of experts */
#define DS2 "--arch deepseek2 --rot 8 --experts 4 --experts-used 2"

int main(void) {
    const char *base = "--dim 32 --layers 1 --heads 2 --ff 64 --vocab 300 --ctx 32";
    const variant variants[] = {
        {"gpt2 as written", "--arch gpt2", NULL, NULL, NULL, 0, NULL, NULL},
        {"gpt2 without position embeddings", "--arch gpt2", "position_embd.weight", NULL, NULL, 0, NULL,
         "position_embd.weight is missing"},
        {"gpt2 without a QKV bias", "--arch gpt2", "blk.0.attn_qkv.bias", NULL, NULL, 0, NULL,
         "blk.0.attn_qkv.bias is missing"},
        {"gptneox without use_parallel_residual", "--arch gptneox", NULL, "gptneox.use_parallel_residual", NULL, 0,
         NULL, "use_parallel_residual"},
        {"gptneox without output", "--arch gptneox", "output.weight", NULL, NULL, 0, NULL, "output.weight is missing"},
        {"falcon with partial rotary", "--arch falcon", NULL, NULL, NULL, 0, NULL, NULL},
        {"mpt with a negative ALiBi bias", "--arch mpt", NULL, NULL, "mpt.attention.max_alibi_bias", -1.0f, NULL,
         "max_alibi_bias"},
        {"mpt with activation scales", "--arch mpt", NULL, NULL, NULL, 0, "blk.0.ffn_act.scales", "ffn_act.scales"},
        {"gemma with an output matrix", "--arch gemma", NULL, NULL, NULL, 0, "output.weight", "output.weight"},
        {"phi2 without its output bias", "--arch phi2", "output.bias", NULL, NULL, 0, NULL, "output.bias is missing"},
        {"bloom without the embedding norm", "--arch bloom", "token_embd_norm.weight", NULL, NULL, 0, NULL,
         "token_embd_norm.weight is missing"},
        {"qwen2 without biases (they are optional)", "--arch qwen2", "blk.0.attn_q.bias", NULL, NULL, 0, NULL, NULL},
        {"deepseek2 as written", DS2, NULL, NULL, NULL, 0, NULL, NULL},
        /* (an old file, attn_kv_b in place of both: test_deepseek2_kv_b) */
        {"deepseek2 split, without key_length_mla", DS2, NULL, "deepseek2.attention.key_length_mla", NULL, 0, NULL,
         "key_length_mla"},
        {"deepseek2 with attn_kv_b besides attn_k_b/attn_v_b", DS2, NULL, NULL, NULL, 0, "blk.0.attn_kv_b.weight",
         "attn_kv_b"},
        {"deepseek2 without expert_shared_count", DS2, NULL, "deepseek2.expert_shared_count", NULL, 0, NULL,
         "expert_shared_count"},
        {"deepseek2 without its per-head V", DS2, "blk.0.attn_v_b.weight", NULL, NULL, 0, NULL,
         "blk.0.attn_v_b.weight is missing"},
    };
    const char *dir = getenv("TMPDIR");
    char src[512], dst[512], cmd[2048];
    snprintf(src, sizeof src, "%s/tport-arch-hostile-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    snprintf(dst, sizeof dst, "%s/tport-arch-hostile-%d-x.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const variant *v = &variants[i];
        /* falcon's rotary must cover the head: --rot 8 of 16 is the error */
        bool partial = strstr(v->what, "partial") != NULL;
        snprintf(cmd, sizeof cmd, "'%s' synth %s %s%s -o '%s' >/dev/null", TPORT_CLI, v->synth, base,
                 partial ? " --rot 8" : "", src);
        CHECK(system(cmd) == 0, "%s: failed: %s", v->what, cmd);
        CHECK(rewrite(src, dst, v), "%s: cannot rewrite: %s", v->what, tport_last_error());
        tport_model *m = tport_model_load(dst, NULL);
        const char *expect = partial ? "rotates whole heads" : v->expect;
        if (!expect)
            CHECK(m != NULL, "%s: load failed: %s", v->what, tport_last_error());
        else
            CHECK(m == NULL && strstr(tport_last_error(), expect), "%s: want an error about '%s', got %s", v->what,
                  expect, m ? "a loaded model" : tport_last_error());
        tport_model_free(m);
    }
    unlink(src);
    unlink(dst);
    return test_finish("test_arch_hostile");
}
