/* Writes the small sample files of every format into a folder: the seed
 * corpus of the fuzz targets (.ci/fuzz). */
#include <stdio.h>

#include "gguf_big_endian.h"
#include "sample_files.h"

static int save(const char *dir, const char *name, bb *b) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->p, 1, b->n, f) != b->n) {
        perror(path);
        return 1;
    }
    fclose(f);
    bb_free(b);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: fuzz_make_seeds DIR [PICKLE_DIR]\n");
        return 2;
    }
    int rc = 0;
    bb b = {0};
    char name[64];
    for (int v = 1; v <= 3; v++) {
        sample_gguf(&b, v);
        snprintf(name, sizeof name, "gguf-v%d", v);
        rc |= save(argv[1], name, &b);
    }
    sample_gguf(&b, 3);
    rc |= !gguf_to_big_endian(b.p, b.n);
    rc |= save(argv[1], "gguf-v3-big-endian", &b);
    for (int v = 0; v <= 2; v++) {
        sample_llama2c(&b, v);
        snprintf(name, sizeof name, "llama2c-v%d", v);
        rc |= save(argv[1], name, &b);
    }
    const struct { const char *name; uint32_t magic, version; } legacy[] = {
        {"ggml", 0x67676d6cu, 0}, {"ggmf-v1", 0x67676d66u, 1}, {"ggjt-v1", 0x67676a74u, 1},
        {"ggjt-v2", 0x67676a74u, 2}, {"ggjt-v3", 0x67676a74u, 3}};
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++) {
        sample_legacy(&b, legacy[i].magic, legacy[i].version);
        rc |= save(argv[1], legacy[i].name, &b);
    }
    const struct { const char *name; int arch; int32_t ftype; int bytes; } examples[] = {
        {"ggml-gpt2-qnt0", SAMPLE_GPT2, 2, 20},           {"ggml-gptj-qnt1", SAMPLE_GPTJ, 1002, 20},
        {"ggml-gptneox-qnt2", SAMPLE_NEOX, 2002, 18},     {"ggml-starcoder-qnt1", SAMPLE_STARCODER, 1002, 20},
        {"ggml-mpt-qnt2", SAMPLE_MPT, 2002, 18}};
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        sample_ggml_example(&b, examples[i].arch, 32, examples[i].ftype, 2, 32, examples[i].bytes, NULL);
        rc |= save(argv[1], examples[i].name, &b);
    }
    uint8_t blk[38];
    float want[64];
    sample_qk64_q4k_block(blk, want);
    sample_ggjt3_kquant(&b, 64, 12, blk, 38, 2 * 38);
    rc |= save(argv[1], "ggjt-v3-qk64", &b);
    const char *st = "{\"__metadata__\": {}, \"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [2, 2], "
                     "\"data_offsets\": [0, 16]}}";
    bb_u64(&b, strlen(st));
    bb_raw(&b, st, strlen(st));
    bb_zeros(&b, 16);
    rc |= save(argv[1], "safetensors", &b);
    sample_pytorch_legacy(&b);
    rc |= save(argv[1], "pytorch-legacy", &b);
    if (argc > 2) { /* the pickle target's corpus: a state dict pickle */
        const int size[2] = {3, 2}, stride[2] = {1, 3};
        sample_pickle_state_dict(&b, "model.layers.0.self_attn.q_proj.weight", "0", 6, 0, size, stride);
        rc |= save(argv[2], "state-dict", &b);
        sample_pytorch_legacy(&b);
        rc |= save(argv[2], "legacy-stream", &b);
    }
    return rc;
}
