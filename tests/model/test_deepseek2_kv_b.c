/* deepseek2 files from before llama.cpp split attn_kv_b into attn_k_b and
 * attn_v_b (no key_length_mla; key_length and value_length a head's K and
 * V, one kv head per head): llama.cpp still loads them, and so does
 * tport, splitting attn_kv_b at load.  A tport-synth file (f32, so the
 * split copies are the same values) is rewritten in the old form, with
 * attn_kv_b joined from its attn_k_b and attn_v_b as the old converter
 * wrote it; both must give the same logits bit for bit, step by step.
 * The head sizes differ (nope 24, latent 32, V 16), so a transposition
 * or a mixed-up row would show.  Then attn_kv_b in q8_0: the same logits
 * as the split file whose attn_k_b and attn_v_b are those q8_0 rows
 * decoded (the split copies are f32).  An old file whose kv heads are
 * not its heads is refused, naming them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "tport/gguf.h"
#include "tport/model_file.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define LAYERS 2
#define HEADS 4
#define NOPE 24
#define ROT 16
#define LORA 32
#define V 16
#define STEPS 12

static const char *const mla_keys[] = {"deepseek2.attention.key_length_mla", "deepseek2.attention.value_length_mla",
                                       "deepseek2.attention.key_length", "deepseek2.attention.value_length",
                                       "deepseek2.attention.head_count_kv", "general.alignment"};

static bool is_mla_key(const char *key) {
    for (size_t i = 0; i < sizeof mla_keys / sizeof mla_keys[0]; i++)
        if (!strcmp(key, mla_keys[i]))
            return true;
    return false;
}

/* What write_form writes: the old form with attn_kv_b in f32 or q8_0, or
 * the split form with attn_k_b/attn_v_b decoded from attn_kv_b's q8_0. */
typedef enum form { OLD_F32, OLD_Q8_0, SPLIT_FROM_Q8_0 } form;

/* attn_kv_b joined from layer il's attn_k_b and attn_v_b (f32): per head
 * NOPE rows of K (attn_k_b's rows transposed), then V rows. */
static bool join_kv_b(const tport_model_file *mf, int il, float *kv_b) {
    char kn[64], vn[64];
    snprintf(kn, sizeof kn, "blk.%d.attn_k_b.weight", il);
    snprintf(vn, sizeof vn, "blk.%d.attn_v_b.weight", il);
    const tport_mf_tensor *kt = tport_model_file_find(mf, kn), *vt = tport_model_file_find(mf, vn);
    if (!kt || !vt || kt->type != TPORT_TYPE_F32 || vt->type != TPORT_TYPE_F32 || kt->ne[0] != NOPE ||
        kt->ne[1] != LORA || kt->ne[2] != HEADS || vt->ne[0] != LORA || vt->ne[1] != V || vt->ne[2] != HEADS) {
        fprintf(stderr, "  layer %d: attn_k_b/attn_v_b not the f32 shapes this test writes\n", il);
        return false;
    }
    const float *k = kt->data, *v = vt->data;
    for (int h = 0; h < HEADS; h++)
        for (int j = 0; j < NOPE + V; j++)
            for (int c = 0; c < LORA; c++)
                kv_b[((size_t)h * (NOPE + V) + (size_t)j) * LORA + (size_t)c] =
                    j < NOPE ? k[((size_t)h * LORA + (size_t)c) * NOPE + (size_t)j]
                             : v[((size_t)h * V + (size_t)(j - NOPE)) * LORA + (size_t)c];
    return true;
}

#define KV_B_N (HEADS * (NOPE + V) * LORA)

/* src in form f, to dst, with head_count_kv kv_heads (the old forms). */
static bool write_form(const char *src, const char *dst, form f, uint32_t kv_heads) {
    tport_model_file *mf = NULL;
    if (tport_model_file_open(src, &mf) != TPORT_STATUS_OK)
        return false;
    tport_gguf_writer *w = tport_gguf_writer_new();
    tport_status s = w ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    const bool old = f != SPLIT_FROM_Q8_0;
    for (int i = 0; !s && i < mf->n_kv; i++)
        if (!old ? strcmp(mf->kv[i].key, "general.alignment") != 0 : !is_mla_key(mf->kv[i].key))
            s = tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]);
    if (!s && old)
        s = tport_gguf_set_u32(w, "deepseek2.attention.key_length", NOPE + ROT);
    if (!s && old)
        s = tport_gguf_set_u32(w, "deepseek2.attention.value_length", V);
    if (!s && old)
        s = tport_gguf_set_u32(w, "deepseek2.attention.head_count_kv", kv_heads);
    for (int i = 0; !s && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        if (!strstr(t->name, "attn_k_b") && !strstr(t->name, "attn_v_b"))
            s = tport_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    /* borrowed by the writer until it writes: buffers per layer */
    static float kv_b[LAYERS][KV_B_N], k_b[LAYERS][HEADS * LORA * NOPE], v_b[LAYERS][HEADS * V * LORA];
    static uint8_t q8[LAYERS][KV_B_N / 32 * 34];
    for (int il = 0; !s && il < LAYERS; il++) {
        if (!join_kv_b(mf, il, kv_b[il])) {
            s = TPORT_STATUS_ERROR;
            break;
        }
        char name[64];
        const int64_t ne[2] = {LORA, HEADS * (NOPE + V)};
        if (f == OLD_F32) {
            snprintf(name, sizeof name, "blk.%d.attn_kv_b.weight", il);
            s = tport_gguf_add_tensor(w, name, TPORT_TYPE_F32, 2, ne, kv_b[il], sizeof kv_b[il]);
            continue;
        }
        s = tport_quantize_rows(TPORT_TYPE_Q8_0, kv_b[il], q8[il], ne[1], ne[0], NULL);
        if (!s && f == OLD_Q8_0) {
            snprintf(name, sizeof name, "blk.%d.attn_kv_b.weight", il);
            s = tport_gguf_add_tensor(w, name, TPORT_TYPE_Q8_0, 2, ne, q8[il], sizeof q8[il]);
            continue;
        }
        /* the split form of the decoded rows */
        float row[LORA];
        for (int h = 0; !s && h < HEADS; h++)
            for (int j = 0; !s && j < NOPE + V; j++) {
                s = tport_dequantize(TPORT_TYPE_Q8_0, q8[il] + ((size_t)h * (NOPE + V) + (size_t)j) * 34, row, LORA);
                for (int c = 0; c < LORA; c++) {
                    if (j < NOPE)
                        k_b[il][((size_t)h * LORA + (size_t)c) * NOPE + (size_t)j] = row[c];
                    else
                        v_b[il][((size_t)h * V + (size_t)(j - NOPE)) * LORA + (size_t)c] = row[c];
                }
            }
        const int64_t kne[3] = {NOPE, LORA, HEADS}, vne[3] = {LORA, V, HEADS};
        snprintf(name, sizeof name, "blk.%d.attn_k_b.weight", il);
        if (!s)
            s = tport_gguf_add_tensor(w, name, TPORT_TYPE_F32, 3, kne, k_b[il], sizeof k_b[il]);
        snprintf(name, sizeof name, "blk.%d.attn_v_b.weight", il);
        if (!s)
            s = tport_gguf_add_tensor(w, name, TPORT_TYPE_F32, 3, vne, v_b[il], sizeof v_b[il]);
    }
    if (!s)
        s = tport_gguf_write(w, dst);
    tport_gguf_writer_free(w);
    tport_model_file_close(mf);
    return s == TPORT_STATUS_OK;
}

/* Greedy steps of path's model from a fixed prompt: the logits of each. */
static bool run(const char *path, float *logits, int32_t *nv) {
    tport_model_params mp = {.n_threads = 2};
    tport_model *m = tport_model_load(path, &mp);
    tport_session_params sp = {.n_ctx = 64};
    tport_session *s = m ? tport_session_new(m, &sp) : NULL;
    bool ok = s != NULL;
    if (ok) {
        *nv = tport_model_n_vocab(m);
        tport_token p[7] = {1, 17, 42, 99, 150, 201, 7};
        ok = tport_session_eval(s, p, 7) == TPORT_STATUS_OK;
        for (int step = 0; ok && step < STEPS; step++) {
            const float *l = tport_session_logits(s);
            memcpy(logits + (size_t)step * (size_t)*nv, l, (size_t)*nv * sizeof *l);
            tport_token best = 0;
            for (int32_t i = 1; i < *nv; i++)
                best = l[i] > l[best] ? i : best;
            ok = tport_session_eval(s, &best, 1) == TPORT_STATUS_OK;
        }
    }
    if (!ok)
        fprintf(stderr, "  %s: %s\n", path, tport_last_error());
    tport_session_free(s);
    tport_model_free(m);
    return ok;
}

int main(void) {
    const char *dir = getenv("TMPDIR");
    char split[512], old[512], ref[512], cmd[2048];
    snprintf(split, sizeof split, "%s/tport-ds2-split-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    snprintf(old, sizeof old, "%s/tport-ds2-kv_b-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    snprintf(ref, sizeof ref, "%s/tport-ds2-ref-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    snprintf(cmd, sizeof cmd,
             "'%s' synth --arch deepseek2 --dim 64 --layers %d --heads %d --rot %d --ff 128 --experts 4 "
             "--experts-used 2 --expert-ff 32 --key attention.q_lora_rank=32 --key attention.kv_lora_rank=%d "
             "--key attention.key_length_mla=%d --key attention.value_length_mla=%d "
             "--key leading_dense_block_count=1 --key expert_shared_count=1 --type f32 --vocab 300 --ctx 64 "
             "--seed 5 --out-gain 4 -o '%s' >/dev/null",
             TPORT_CLI, LAYERS, HEADS, ROT, LORA, NOPE + ROT, V, split);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    static const struct {
        const char *what;
        form ref, old;
    } cases[] = {{"f32", OLD_F32 /* unused: the synth file */, OLD_F32},
                 {"q8_0", SPLIT_FROM_Q8_0, OLD_Q8_0}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bool own_ref = cases[ci].ref == SPLIT_FROM_Q8_0;
        CHECK(!own_ref || write_form(split, ref, cases[ci].ref, HEADS), "cannot write the reference: %s",
              tport_last_error());
        CHECK(write_form(split, old, cases[ci].old, HEADS), "cannot write the old form: %s", tport_last_error());
        static float a[STEPS * 512], b[STEPS * 512];
        int32_t nv_a = 0, nv_b = 0;
        bool ok = run(own_ref ? ref : split, a, &nv_a) && run(old, b, &nv_b);
        CHECK(ok && nv_a == nv_b && nv_a <= 512, "%s: the two files did not both run", cases[ci].what);
        if (!ok || nv_a != nv_b || nv_a > 512)
            continue;
        size_t differ = 0, n = (size_t)STEPS * (size_t)nv_a;
        float spread = 0;
        for (size_t i = 0; i < n; i++) {
            differ += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
            spread = a[i] - a[0] > spread ? a[i] - a[0] : spread;
        }
        printf("  attn_kv_b %s split at load: %zu of %zu logits differ in their bits\n", cases[ci].what, differ, n);
        CHECK(spread > 0, "%s: the logits are flat: the comparison would show nothing", cases[ci].what);
        CHECK(differ == 0, "%s: %zu logits of the old form differ from the split file's", cases[ci].what, differ);
    }

    /* llama.cpp's old graph is multi-head: an old file with fewer kv heads
     * than heads means something else */
    CHECK(write_form(split, old, OLD_F32, 1), "cannot write the old form: %s", tport_last_error());
    tport_model *m = tport_model_load(old, NULL);
    CHECK(!m && strstr(tport_last_error(), "kv heads"), "an old file with 1 kv head of %d: %s", HEADS,
          m ? "loaded" : tport_last_error());
    tport_model_free(m);
    unlink(split);
    unlink(old);
    unlink(ref);
    return test_finish("test_deepseek2_kv_b");
}
