/* The architecture table is the only list of an architecture's weights
 * (src/model/arch/README.md).  For every architecture this build runs, a
 * file synthesized from its table is loaded and:
 *   - every weight slot the loader filled (any field of tport_layer and
 *     tport_globals) is a row of the table, and every filled layer slot is
 *     listed by tport_model_layer_weights, which placement, conversion and
 *     --plan walk: a slot bound outside the table would never be placed;
 *   - the attention and feed-forward sides split matrices and vectors as
 *     the rows say;
 *   - attn_output reads the attention's width, [n_head * head_dim, n_embd],
 *     in every table (a file whose heads do not make the embedding, like
 *     Gemma-7B's, is read with one shape everywhere). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "model/arch/arch.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

static bool row_names_slot(const tport_arch *a, bool layer, size_t slot) {
    for (int k = 0; k < a->n_tensors; k++)
        if (((a->tensors[k].flags & TENSOR_LAYER) != 0) == layer && a->tensors[k].slot == slot)
            return true;
    return false;
}

static bool has_flag(const tport_arch *a, unsigned flag) {
    for (int k = 0; k < a->n_tensors; k++)
        if (a->tensors[k].flags & flag)
            return true;
    return false;
}

/* deepseek2's per-head K and V projections [.., .., n_head] (4 heads) */
static bool per_head(const tport_tensor *t) {
    return strstr(tport_tensor_name(t), "attn_k_b") || strstr(tport_tensor_name(t), "attn_v_b");
}

/* experts: synthesized with a mixture of 4 experts, 2 a token */
static void check_arch(const tport_arch *a, const char *dir, bool experts) {
    for (int k = 0; k < a->n_tensors; k++)
        if (strstr(a->tensors[k].name, "attn_output.weight"))
            CHECK((a->tensors[k].ne0 == DIM_Q || a->tensors[k].ne0 == DIM_O_MLA) && a->tensors[k].ne1 == DIM_EMBD,
                  "%s: attn_output is not [DIM_Q, DIM_EMBD]", a->name);
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, a->name);
    snprintf(cmd, sizeof cmd, "'%s' synth --arch %s --dim 64 --layers 2 --heads 4 --ff 128 --vocab 512 --ctx 64 "
             "%s -o '%s' >/dev/null 2>&1", TPORT_CLI, a->name, experts ? "--experts 4 --experts-used 2" : "", path);
    if (system(cmd) != 0) {
        CHECK(false, "%s: tport synth failed", a->name);
        return;
    }
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "%s: load: %s", a->name, tport_last_error());
    if (!m)
        return;
    /* the structs hold tensor pointers only: walk them as arrays */
    tport_tensor *const *g = (tport_tensor *const *)(const void *)&m->w;
    for (size_t i = 0; i < sizeof m->w / sizeof *g; i++)
        if (g[i] && !(i * sizeof *g == offsetof(tport_globals, output) && g[i] == m->w.tok_embd))
            CHECK(row_names_slot(a, false, i * sizeof *g), "%s: global slot %zu bound outside the table", a->name, i);
    for (int32_t il = 0; il < m->sh.n_layer; il++) {
        tport_tensor **slots[64];
        int n = tport_model_layer_weights(m, il, TPORT_LAYER_ALL, slots, 64);
        tport_tensor **fields = (tport_tensor **)(void *)&m->layers[il];
        int filled = 0;
        for (size_t i = 0; i < sizeof m->layers[il] / sizeof *fields; i++) {
            if (!fields[i])
                continue;
            filled++;
            bool listed = false;
            for (int k = 0; k < n; k++)
                listed = listed || slots[k] == &fields[i];
            CHECK(listed, "%s: layer %d slot %zu is bound but not listed", a->name, (int)il, i);
            CHECK(row_names_slot(a, true, i * sizeof *fields), "%s: layer slot %zu outside the table", a->name, i);
        }
        CHECK(filled > 0, "%s: layer %d has no weights", a->name, (int)il);
        /* the sides: matrices 2-D, vectors 1-D, and together all of them */
        static const unsigned kinds[4] = {TPORT_LAYER_ATTN_MATRICES, TPORT_LAYER_FFN_MATRICES,
                                          TPORT_LAYER_ATTN_VECTORS, TPORT_LAYER_FFN_VECTORS};
        int total = 0;
        for (int k = 0; k < 4; k++) {
            tport_tensor **part[64];
            int np = tport_model_layer_weights(m, il, kinds[k], part, 64);
            total += np;
            for (int j = 0; j < np; j++) {
                if (!*part[j])
                    continue;
                /* a bias per expert (gpt-oss: [out, 4]) is a vector too;
                 * per-head stacks (deepseek2's K/V) have 4 heads */
                const char *name = tport_tensor_name(*part[j]);
                int64_t ne1 = tport_tensor_ne(*part[j], 1), ne2 = tport_tensor_ne(*part[j], 2);
                bool bias_rows = strstr(name, "_exps.bias") != NULL, stack = strstr(name, "_exps") && !bias_rows;
                CHECK(bias_rows ? k >= 2 && ne1 == 4 && ne2 == 1
                                : (ne1 > 1) == (k < 2) && ne2 == (stack || per_head(*part[j]) ? 4 : 1),
                      "%s: layer %d: %s listed as a %s", a->name, (int)il, name, k < 2 ? "matrix" : "vector");
            }
        }
        CHECK(total == n, "%s: the four kinds list %d slots, all of them %d", a->name, total, n);
        tport_tensor **attn[64];
        CHECK(tport_model_layer_weights(m, il, TPORT_LAYER_ATTN_MATRICES, attn, 64) > 0,
              "%s: no attention matrices", a->name);
    }
    tport_model_free(m);
    unlink(path);
}

int main(void) {
    char dir[] = "/tmp/tport-arch-table-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    for (int i = 0; i < tport_arch_count(); i++) {
        const tport_arch *a = tport_arch_at(i);
        /* an architecture whose feed-forward may be experts: both forms,
         * and a file without its dense rows must have experts */
        bool moe = has_flag(a, TENSOR_EXPERTS), dense_too = !moe || has_flag(a, TENSOR_DENSE);
        if (dense_too)
            check_arch(a, dir, false);
        if (moe)
            check_arch(a, dir, true);
    }
    rmdir(dir);
    return test_finish("test_arch_table");
}
