/* llama.cpp's gguf-split (tools/gguf-split/gguf-split.cpp, split_strategy
 * and write) replayed through ggml's own gguf API, loaded at run time from
 * node-llama-cpp's prebuilt libggml-base: the parts it writes are what
 * gguf-split writes, so a test can compare tport's parts with them byte
 * for byte.  The few ggml prototypes are declared here (ggml's headers are
 * not installed with the npm package); they are ggml's C API as of
 * node-llama-cpp 3.21.1 (llama.cpp tag in llama/llama.cpp.info.json). */
#ifndef TPORT_TEST_GGUF_SPLIT_REFERENCE_H
#define TPORT_TEST_GGUF_SPLIT_REFERENCE_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct gguf_context;
struct ggml_context;
struct ggml_tensor;
struct gguf_init_params {
    bool no_alloc;
    struct ggml_context **ctx;
};

typedef struct gguf_api {
    void *lib;
    struct gguf_context *(*init_from_file)(const char *, struct gguf_init_params);
    struct gguf_context *(*init_empty)(void);
    void (*free_ctx)(struct gguf_context *);
    void (*ggml_free)(struct ggml_context *);
    int64_t (*n_tensors)(const struct gguf_context *);
    const char *(*tensor_name)(const struct gguf_context *, int64_t);
    int64_t (*find_tensor)(const struct gguf_context *, const char *);
    size_t (*tensor_offset)(const struct gguf_context *, int64_t);
    size_t (*data_offset)(const struct gguf_context *);
    void (*set_kv)(struct gguf_context *, const struct gguf_context *);
    void (*set_u16)(struct gguf_context *, const char *, uint16_t);
    void (*set_i32)(struct gguf_context *, const char *, int32_t);
    void (*add_tensor)(struct gguf_context *, const struct ggml_tensor *);
    size_t (*meta_size)(const struct gguf_context *);
    void (*meta_data)(const struct gguf_context *, void *);
    struct ggml_tensor *(*get_tensor)(struct ggml_context *, const char *);
    size_t (*nbytes)(const struct ggml_tensor *);
} gguf_api;

/* false (with a message in why) if the library or a symbol is missing */
static inline bool gguf_api_load(gguf_api *g, const char *lib_path, char *why, size_t cap) {
    g->lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) {
        snprintf(why, cap, "%s", dlerror());
        return false;
    }
    struct {
        void **slot;
        const char *name;
    } syms[] = {{(void **)&g->init_from_file, "gguf_init_from_file"}, {(void **)&g->init_empty, "gguf_init_empty"},
                {(void **)&g->free_ctx, "gguf_free"},                 {(void **)&g->ggml_free, "ggml_free"},
                {(void **)&g->n_tensors, "gguf_get_n_tensors"},       {(void **)&g->tensor_name, "gguf_get_tensor_name"},
                {(void **)&g->find_tensor, "gguf_find_tensor"},       {(void **)&g->tensor_offset, "gguf_get_tensor_offset"},
                {(void **)&g->data_offset, "gguf_get_data_offset"},   {(void **)&g->set_kv, "gguf_set_kv"},
                {(void **)&g->set_u16, "gguf_set_val_u16"},           {(void **)&g->set_i32, "gguf_set_val_i32"},
                {(void **)&g->add_tensor, "gguf_add_tensor"},         {(void **)&g->meta_size, "gguf_get_meta_size"},
                {(void **)&g->meta_data, "gguf_get_meta_data"},       {(void **)&g->get_tensor, "ggml_get_tensor"},
                {(void **)&g->nbytes, "ggml_nbytes"}};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(g->lib, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(why, cap, "%s: no symbol %s", lib_path, syms[i].name);
            return false;
        }
    }
    return true;
}

#define GSR_MAX_PARTS 256

/* gguf-split IN PREFIX with --split-max-tensors max_tensors or (when
 * max_bytes > 0) --split-max-size max_bytes; returns the part count, 0 on
 * error. */
static inline int gguf_split_reference(const gguf_api *g, const char *in, const char *prefix, int64_t max_tensors,
                                       uint64_t max_bytes) {
    struct ggml_context *meta = NULL;
    struct gguf_context *src = g->init_from_file(in, (struct gguf_init_params){true, &meta});
    if (!src)
        return 0;
    int64_t n = g->n_tensors(src);
    struct gguf_context *outs[GSR_MAX_PARTS];
    int n_out = 0;
    struct gguf_context *cur = NULL;
    bool ok = true;
    size_t curr = 0;
    for (int64_t i = -1; i < n && ok; i++) {
        bool split = i < 0; /* the first part */
        size_t nb = 0;
        struct ggml_tensor *t = NULL;
        if (i >= 0) {
            t = g->get_tensor(meta, g->tensor_name(src, i));
            nb = (g->nbytes(t) + 31) / 32 * 32;
            split = max_bytes ? curr + nb > max_bytes : (i > 0 && i % max_tensors == 0);
            curr = split ? nb : curr + nb;
        }
        if (split) { /* new_ctx_out */
            if (cur)
                outs[n_out++] = cur;
            ok = n_out < GSR_MAX_PARTS - 1;
            cur = g->init_empty();
            if (n_out == 0)
                g->set_kv(cur, src);
            g->set_u16(cur, "split.no", (uint16_t)n_out);
            g->set_u16(cur, "split.count", 0);
            g->set_i32(cur, "split.tensors.count", (int32_t)n);
        }
        if (t)
            g->add_tensor(cur, t);
    }
    outs[n_out++] = cur;
    FILE *fin = fopen(in, "rb");
    ok = ok && fin;
    for (int k = 0; k < n_out; k++) {
        g->set_u16(outs[k], "split.count", (uint16_t)n_out);
        char path[1024];
        snprintf(path, sizeof path, "%s-%05d-of-%05d.gguf", prefix, k + 1, n_out);
        FILE *f = ok ? fopen(path, "wb") : NULL;
        ok = ok && f;
        size_t ms = g->meta_size(outs[k]);
        void *buf = malloc(ms);
        if (ok && buf) {
            g->meta_data(outs[k], buf);
            ok = fwrite(buf, 1, ms, f) == ms;
        }
        free(buf);
        for (int64_t i = 0; ok && i < g->n_tensors(outs[k]); i++) {
            const char *name = g->tensor_name(outs[k], i);
            size_t nb = g->nbytes(g->get_tensor(meta, name));
            size_t off = g->data_offset(src) + g->tensor_offset(src, g->find_tensor(src, name));
            char *d = calloc(1, (nb + 31) / 32 * 32);
            ok = d && fseek(fin, (long)off, SEEK_SET) == 0 && fread(d, 1, nb, fin) == nb &&
                 fwrite(d, 1, (nb + 31) / 32 * 32, f) == (nb + 31) / 32 * 32;
            free(d);
        }
        if (f)
            fclose(f);
        g->free_ctx(outs[k]);
    }
    if (fin)
        fclose(fin);
    g->free_ctx(src);
    g->ggml_free(meta);
    return ok ? n_out : 0;
}

#endif
