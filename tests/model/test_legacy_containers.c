/* The llama issue's item 8: the same model converted to every container and
 * quantization revision it can be expressed in gives the same ids where the
 * conversion is lossless.  stories260K.bin (llama2.c, f32) is written as
 * GGUF v3 and as each pre-GGUF container (GGML, GGMF v1, GGJT v1-v3), all
 * f32, and each must give llama2.c's greedy ids (refs.json) exactly.  Then
 * its matrices are quantized to q4_0_qnt0 (GGJT v1: interleaved nibbles,
 * f32 scales) and that file re-encoded losslessly to q4_0_qnt1 (GGJT v2:
 * split nibbles): the two must give the same ids as each other. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../test_util.h"
#include "greedy.h"
#include "json_min.h"
#include "model/model.h"
#include "model_writer.h"

#define MAX_IDS 64

static const char *name = "test_legacy_containers";

/* Loads path and checks what was read; greedy ids from BOS into ids. */
static int ids_of(const char *path, tport_container container, uint32_t version, tport_token *ids, int n) {
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load %s: %s", path, tport_last_error());
    if (!m)
        return 0;
    CHECK(m->file->container == container && m->file->version == version, "%s read as %s v%u", path,
          tport_container_name(m->file->container), (unsigned)m->file->version);
    CHECK(m->sh.n_head_kv == 4 && m->sh.n_head == 8, "%s: %d heads, %d kv heads", path, m->sh.n_head,
          m->sh.n_head_kv);
    CHECK(m->placement_report == NULL, "%s: the CPU takes every type, yet: %s", path,
          m->placement_report ? m->placement_report : "");
    /* GGML and GGMF do not align tensor data; the weights the model uses
     * must be (f32, q4_0_qnt0/1 blocks start with an f32) */
    int misaligned = 0;
    const tport_tensor *top[] = {m->w.tok_embd, m->w.output, m->w.output_norm};
    for (size_t k = 0; k < 3; k++)
        misaligned += (uintptr_t)tport_tensor_data(top[k]) % 4 != 0;
    for (int32_t i = 0; i < m->sh.n_layer; i++) {
        const tport_layer *l = &m->layers[i];
        const tport_tensor *w[] = {l->attn_norm, l->wq, l->wk, l->wv, l->wo, l->ffn_norm, l->w_gate, l->w_up, l->w_down};
        for (size_t k = 0; k < sizeof w / sizeof w[0]; k++)
            misaligned += (uintptr_t)tport_tensor_data(w[k]) % 4 != 0;
    }
    CHECK(misaligned == 0, "%s: %d weights are not 4-byte aligned", path, misaligned);
    tport_token bos = 1;
    int got = greedy_ids(m, &bos, 1, ids, n);
    tport_model_free(m);
    return got;
}

int main(void) {
    char refs_path[1024], stories[1024];
    if (!test_shared_path("refs/refs.json", refs_path, sizeof refs_path) ||
        !test_shared_path("models/stories260K.bin", stories, sizeof stories))
        test_skip(name, "../shared/models/stories260K.bin or refs/refs.json absent");
    json *refs = json_load(refs_path);
    const json *gen = refs ? json_get(json_get(refs, "stories260K.bin"), "generated_ids") : NULL;
    CHECK(gen && gen->n > 0, "refs.json has no stories260K.bin generated_ids");
    tport_model_file *src = NULL;
    CHECK(tport_model_file_open(stories, &src) == TPORT_STATUS_OK, "open %s: %s", stories, tport_last_error());
    if (!gen || !src) {
        json_free(refs);
        tport_model_file_close(src);
        return test_finish(name);
    }
    int n_ref = gen->n < MAX_IDS ? (int)gen->n : MAX_IDS;
    tport_token ref[MAX_IDS], ids[MAX_IDS];
    for (int i = 0; i < n_ref; i++)
        ref[i] = (tport_token)gen->items[i].number;

    /* f32 in every container */
    static const struct {
        const char *what;
        uint32_t magic, version; /* magic 0: GGUF v3 */
        tport_container container;
    } f32_files[] = {
        {"gguf v3", 0, 3, TPORT_CONTAINER_GGUF},
        {"ggml (unversioned)", MW_MAGIC_GGML, 0, TPORT_CONTAINER_GGML},
        {"ggmf v1", MW_MAGIC_GGMF, 1, TPORT_CONTAINER_GGMF},
        {"ggjt v1", MW_MAGIC_GGJT, 1, TPORT_CONTAINER_GGJT},
        {"ggjt v2", MW_MAGIC_GGJT, 2, TPORT_CONTAINER_GGJT},
        {"ggjt v3", MW_MAGIC_GGJT, 3, TPORT_CONTAINER_GGJT},
    };
    for (size_t i = 0; i < sizeof f32_files / sizeof f32_files[0]; i++) {
        char path[256];
        mw_result res;
        mw_temp_path(path, "legacy");
        bool written = f32_files[i].magic
                           ? mw_write_legacy(src, f32_files[i].magic, f32_files[i].version, TPORT_TYPE_F32, 0, path, &res)
                           : mw_write_gguf(src, TPORT_TYPE_F32, path, &res);
        CHECK(written && res.n_converted == 0, "writing stories260K as %s", f32_files[i].what);
        int got = written ? ids_of(path, f32_files[i].container, f32_files[i].version, ids, n_ref) : 0;
        int diff = first_difference(ids, got, ref, n_ref);
        CHECK(diff < 0, "%s: id %d differs from llama2.c (%d vs %d)", f32_files[i].what, diff,
              diff >= 0 && diff < got ? (int)ids[diff] : -1, diff >= 0 ? (int)ref[diff] : -1);
        printf("%s: stories260K as %-18s f32: %d/%d greedy ids match llama2.c\n", name, f32_files[i].what,
               diff < 0 ? n_ref : diff, n_ref);
        remove(path);
    }

    /* q4_0_qnt0 (GGJT v1), then re-encoded losslessly as q4_0_qnt1 (GGJT v2) */
    char qnt0_path[256], qnt1_path[256];
    mw_result r0, r1;
    mw_temp_path(qnt0_path, "qnt0");
    mw_temp_path(qnt1_path, "qnt1");
    bool w0 = mw_write_legacy(src, MW_MAGIC_GGJT, 1, TPORT_TYPE_Q4_0_QNT0, 2, qnt0_path, &r0);
    /* ffn_down's rows of 172 are not whole blocks of 32: those stay f32 */
    CHECK(w0 && r0.n_converted == 2 + 6 * 5 && r0.n_kept_f32 == 5 && r0.worst == TPORT_CONV_LOSSY,
          "q4_0_qnt0 file: %d quantized, %d kept f32", r0.n_converted, r0.n_kept_f32);
    tport_model_file *qnt0 = NULL;
    CHECK(w0 && tport_model_file_open(qnt0_path, &qnt0) == TPORT_STATUS_OK, "reopen: %s", tport_last_error());
    const tport_mf_tensor *wq0 = qnt0 ? tport_model_file_find(qnt0, "blk.0.attn_q.weight") : NULL;
    CHECK(wq0 && wq0->type == TPORT_TYPE_Q4_0_QNT0, "GGJT v1 q4_0 reads as q4_0_qnt0");
    bool w1 = qnt0 && mw_write_legacy(qnt0, MW_MAGIC_GGJT, 2, TPORT_TYPE_Q4_0_QNT1, 2, qnt1_path, &r1);
    CHECK(w1 && r1.n_converted == 2 + 6 * 5 && r1.worst == TPORT_CONV_LOSSLESS,
          "q4_0_qnt0 -> q4_0_qnt1 must be lossless (%d converted, kind %s)", r1.n_converted,
          tport_conv_kind_name(r1.worst));
    tport_model_file_close(qnt0);
    tport_token ids0[MAX_IDS], ids1[MAX_IDS];
    int n0 = w0 ? ids_of(qnt0_path, TPORT_CONTAINER_GGJT, 1, ids0, n_ref) : 0;
    int n1 = w1 ? ids_of(qnt1_path, TPORT_CONTAINER_GGJT, 2, ids1, n_ref) : 0;
    int diff = first_difference(ids0, n0, ids1, n1);
    CHECK(n0 == n_ref && diff < 0, "q4_0_qnt0 and q4_0_qnt1 files differ at id %d", diff);
    int same_as_f32 = first_difference(ids0, n0, ref, n_ref);
    printf("%s: q4_0_qnt0 (ggjt v1) and q4_0_qnt1 (ggjt v2): %d/%d greedy ids identical "
           "(quantized vs f32 reference: %s)\n", name, diff < 0 ? n0 : diff, n_ref,
           same_as_f32 < 0 ? "all equal" : "differ, as quantization changes logits");
    remove(qnt0_path);
    remove(qnt1_path);

    tport_model_file_close(src);
    json_free(refs);
    return test_finish(name);
}
