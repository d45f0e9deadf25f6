/* Load-time weight placement with the CPU backend alone:
 *  - the order of conversion targets (lossless smallest first, then lossy
 *    same family, then lossy by bits per weight) and that every target is
 *    convertible and fits the rows;
 *  - the file's types stay, zero-copy, when the backend takes them;
 *  - weight type f32 on llama-2-tiny-random.gguf (f16 -> f32, lossless)
 *    gives llama.cpp's ids (refs.json) exactly and says so;
 *  - a lossy weight type converts what fits its blocks, keeps the rest,
 *    and still generates; unknown or unquantizable types are refused. */
#include <string.h>

#include "../test_util.h"
#include "greedy.h"
#include "json_min.h"
#include "model/model.h"
#include "model/placement.h"
#include "quant/convert.h"
#include "quant/type_table.h"

static const char *name = "test_weight_placement";

static int position(const tport_type_id *list, int n, tport_type_id id) {
    for (int i = 0; i < n; i++)
        if (list[i] == id)
            return i;
    return -1;
}

static void check_targets(void) {
    tport_type_id t[64];
    int n = tport_weight_conversion_targets(TPORT_TYPE_Q4_0_QNT0, 64, t, 64);
    CHECK(n >= 4 && t[0] == TPORT_TYPE_Q4_0_QNT1 && t[1] == TPORT_TYPE_F32,
          "q4_0_qnt0: lossless targets first, smallest first (%s, %s)", n > 0 ? tport_type_get(t[0])->name : "-",
          n > 1 ? tport_type_get(t[1])->name : "-");
    CHECK(n >= 4 && !strcmp(tport_traits(t[2])->family, "q4_0"), "q4_0_qnt0: then the same family (%s)",
          n > 2 ? tport_type_get(t[2])->name : "-");
    int f16 = position(t, n, TPORT_TYPE_F16), bf16 = position(t, n, TPORT_TYPE_BF16),
        q8 = position(t, n, TPORT_TYPE_Q8_0), q2k = position(t, n, TPORT_TYPE_Q2_K);
    CHECK(f16 > 2 && f16 < bf16 && bf16 < q8 && q2k < 0, "q4_0_qnt0: then by bits (f16 %d, bf16 %d, q8_0 %d), no "
          "256-blocks for rows of 64 (q2_K %d)", f16, bf16, q8, q2k);
    CHECK(position(t, n, TPORT_TYPE_Q4_0_QNT0) < 0 && position(t, n, TPORT_TYPE_I32) < 0,
          "neither the type itself nor a type without a quantizer");
    for (int i = 0; i < n && i < 64; i++) {
        tport_conv_kind k = tport_conversion_kind(TPORT_TYPE_Q4_0_QNT0, t[i]);
        CHECK(k == TPORT_CONV_LOSSLESS || k == TPORT_CONV_LOSSY, "target %s is convertible",
              tport_type_get(t[i])->name);
        CHECK(64 % tport_type_get(t[i])->block_size == 0, "target %s fits rows of 64", tport_type_get(t[i])->name);
        if (i > 0)
            CHECK(k >= tport_conversion_kind(TPORT_TYPE_Q4_0_QNT0, t[i - 1]), "lossless before lossy (%d)", i);
    }
    n = tport_weight_conversion_targets(TPORT_TYPE_F16, 8, t, 64);
    CHECK(n == 2 && t[0] == TPORT_TYPE_F32 && t[1] == TPORT_TYPE_BF16, "f16 rows of 8: f32, then bf16 (%d)", n);
    n = tport_weight_conversion_targets(TPORT_TYPE_F32, 256, t, 64);
    CHECK(n > 3 && t[0] == TPORT_TYPE_F16 && position(t, n, TPORT_TYPE_Q4_K) > position(t, n, TPORT_TYPE_Q8_0),
          "f32: nothing lossless; f16 first, q8_0 before q4_K");
    CHECK(tport_weight_conversion_targets(9999, 64, t, 64) == 0, "an unknown type has no targets");
}

static void check_tiny(const char *path, const json *ref) {
    tport_model_params keep = {0}, to_f32 = {.weight_type = "f32"};
    tport_model *m = tport_model_load(path, &keep);
    CHECK(m != NULL, "load: %s", tport_last_error());
    if (m) {
        const tport_mf_tensor *t = tport_model_file_find(m->file, "blk.0.attn_q.weight");
        CHECK(t && t->data == tport_tensor_data(m->layers[0].wq) && tport_tensor_type(m->layers[0].wq) == TPORT_TYPE_F16,
              "the CPU takes f16: zero-copy");
        CHECK(m->placement_report == NULL, "no conversion, no report");
    }
    tport_model_free(m);

    m = tport_model_load(path, &to_f32);
    CHECK(m != NULL, "load with weight type f32: %s", tport_last_error());
    if (!m)
        return;
    const tport_tensor *w[] = {m->w.tok_embd, m->w.output, m->layers[0].wq, m->layers[0].w_down};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        CHECK(tport_tensor_type(w[i]) == TPORT_TYPE_F32, "%s is f32", tport_tensor_name(w[i]));
    CHECK(m->placement_report &&
              !strcmp(m->placement_report, "9 tensors f16 -> f32 (lossless) for backend cpu, as weight type f32 was asked for"),
          "report: %s", m->placement_report ? m->placement_report : "(none)");
    expect_reference_ids(m, ref, name, "llama-2-tiny-random with weight type f32");
    tport_model_free(m);
}

static void check_stories_lossy(const char *path) {
    tport_model_params q8 = {.weight_type = "q8_0"};
    tport_model *m = tport_model_load(path, &q8);
    CHECK(m != NULL, "load with weight type q8_0: %s", tport_last_error());
    if (m) {
        /* rows of 64 fit q8_0's blocks of 32; ffn_down's rows of 172 do not */
        CHECK(tport_tensor_type(m->layers[0].wq) == TPORT_TYPE_Q8_0 &&
                  tport_tensor_type(m->w.tok_embd) == TPORT_TYPE_Q8_0 &&
                  tport_tensor_type(m->layers[4].w_down) == TPORT_TYPE_F32,
              "q8_0 where the rows fit, f32 elsewhere");
        CHECK(m->placement_report && strstr(m->placement_report, "31 tensors f32 -> q8_0 (lossy: rmse ") &&
                  strstr(m->placement_report, "for backend cpu") &&
                  strstr(m->placement_report, "\n5 tensors not converted to q8_0: rows of 172 elements are not "
                                              "whole blocks of 32"),
              "lossy conversions report their error: %s", m->placement_report ? m->placement_report : "(none)");
        tport_token bos = 1, ids[8];
        CHECK(greedy_ids(m, &bos, 1, ids, 8) == 8, "the q8_0 model generates");
    }
    tport_model_free(m);

    const char *bad[] = {"no-such-type", "i32"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tport_model_params p = {.weight_type = bad[i]};
        m = tport_model_load(path, &p);
        CHECK(!m && strstr(tport_last_error(), bad[i]), "weight type %s is refused: '%s'", bad[i], tport_last_error());
        tport_model_free(m);
    }
    tport_model_params forced = {.backend = "cpu", .weight_type = "f16"};
    m = tport_model_load(path, &forced);
    CHECK(m && tport_tensor_type(m->layers[1].w_up) == TPORT_TYPE_F16 &&
              tport_tensor_type(m->layers[1].w_down) == TPORT_TYPE_F16,
          "forced cpu with weight type f16: %s", m ? "wrong types" : tport_last_error());
    tport_model_free(m);
}

int main(void) {
    check_targets();
    char refs_path[1024], stories[1024], tiny[1024];
    json *refs = test_shared_path("refs/refs.json", refs_path, sizeof refs_path) ? json_load(refs_path) : NULL;
    int ran = 0;
    if (refs && test_shared_path("models/llama-2-tiny-random.gguf", tiny, sizeof tiny)) {
        check_tiny(tiny, json_get(refs, "llama-2-tiny-random.gguf"));
        ran++;
    }
    if (test_shared_path("models/stories260K.bin", stories, sizeof stories)) {
        check_stories_lossy(stories);
        ran++;
    }
    json_free(refs);
    if (!ran && !test_failures)
        test_skip(name, "../shared/models or refs absent (conversion targets checked)");
    return test_finish(name);
}
