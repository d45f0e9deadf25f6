/* The pipeline plan: which rank holds which layers, how many weight bytes
 * each reads, and what crosses the ranks per token. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

/* The layer a tensor belongs to ("blk.N.<...>"), or -1. */
static long layer_of(const char *name) {
    if (strncmp(name, "blk.", 4) != 0)
        return -1;
    char *end;
    long l = strtol(name + 4, &end, 10);
    return end != name + 4 && *end == '.' ? l : -1;
}

uint64_t dist_stage_weight_bytes(const tport_model_file *mf, int rank, int32_t l0, int32_t l1) {
    uint64_t sum = 0;
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        long l = layer_of(t->name);
        if (l >= 0 ? l >= l0 && l < l1 : rank == 0)
            sum += t->nbytes;
    }
    return sum;
}

static void mib(char *buf, size_t cap, uint64_t bytes) {
    if (bytes >= 1 << 20)
        snprintf(buf, cap, "%.2f MiB", (double)bytes / 1048576.0);
    else
        snprintf(buf, cap, "%.1f KiB", (double)bytes / 1024.0);
}

void dist_print_plan(FILE *out, const tport_model_file *mf, int n_ranks, const int32_t *begin, int32_t n_embd,
                     int micro_batch, const char *const *paths) {
    fprintf(out, "pipeline plan: %d ranks, %d layers, n_embd %d\n", n_ranks, (int)begin[n_ranks], (int)n_embd);
    fprintf(out, "%-5s %-10s %8s %14s  %s\n", "rank", "layers", "count", "weights", "holds");
    uint64_t total = 0;
    for (int r = 0; r < n_ranks; r++) {
        uint64_t b = dist_stage_weight_bytes(mf, r, begin[r], begin[r + 1]);
        total += b;
        char range[32], w[32];
        snprintf(range, sizeof range, "[%d, %d)", (int)begin[r], (int)begin[r + 1]);
        mib(w, sizeof w, b);
        fprintf(out, "%-5d %-10s %8d %14s  %s%s\n", r, range, (int)(begin[r + 1] - begin[r]), w,
               r == 0 ? "embedding, head, tokenizer, sampler; " : "", "its layers' KV cache");
    }
    char w[32];
    mib(w, sizeof w, total);
    uint64_t row = (uint64_t)n_embd * sizeof(float);
    fprintf(out, "total weights %s; each rank reads only its own share of the file\n", w);
    fprintf(out, "sent per generated token: %d hops x %" PRIu64 " bytes (n_embd f32) = %" PRIu64 " bytes\n", n_ranks,
           row, row * (uint64_t)n_ranks);
    fprintf(out, "sent per prompt token: %d hops x %" PRIu64 " bytes, plus %" PRIu64 " bytes back to rank 0 per "
           "evaluation (micro-batches of %d tokens)\n", n_ranks - 1, row, row, micro_batch);
    for (int r = 0; paths && r < n_ranks; r++)
        if (paths[r])
            fprintf(out, "rank %d reads %s\n", r, paths[r]);
}
