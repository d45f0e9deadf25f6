/* tport: the tensorport command-line tool.  One subcommand per file. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tport/registry.h"
#include "tport/tport.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"backends", cmd_backends, "what backends were found, chosen, shadowed, rejected and why"},
    {"info", cmd_info, "container, versions, hyperparameters and tensors of a model file"},
    {"types", cmd_types, "every tensor type and layout revision, and who supports it"},
    {"convert", cmd_convert, "convert any readable model file to GGUF, optionally requantized"},
    {"chat", cmd_chat, "talk with a model in the terminal (its chat template, streaming)"},
    {"run", cmd_run, "generate text with a model"},
    {"perplexity", cmd_perplexity, "perplexity on a text, computed as llama-perplexity does"},
    {"imatrix", cmd_imatrix, "an importance matrix from a text, as llama-imatrix computes it"},
    {"tokenize", cmd_tokenize, "the token ids of a text, as llama.cpp's tokenizer gives them"},
    {"embed", cmd_embed, "the pooled embedding of a text or of token ids"},
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server for a model"},
    {"bench", cmd_bench, "prompt and generation speed"},
    {"check-backend", cmd_check_backend, "conformance of a backend against the reference"},
    {"synth", cmd_synth, "write a random-weight model of any supported architecture"},
    {"quantize", cmd_quantize, "quantize raw f32 values to any type and layout revision"},
    {"dequantize", cmd_dequantize, "decode raw quantized bytes of any type to f32"},
    {"demo", cmd_demo, "a small built-in graph, no download needed"},
};

int tool_fail(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tport: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

uint32_t tool_arch_u32(const tport_model_file *mf, const char *arch, const char *suffix) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const tport_kv *kv = tport_model_file_kv(mf, key);
    if (!kv)
        return 0;
    if (kv->type == TPORT_KV_U32 || kv->type == TPORT_KV_U64 || kv->type == TPORT_KV_U16 || kv->type == TPORT_KV_U8)
        return (uint32_t)kv->v.u;
    if (kv->type == TPORT_KV_I32 || kv->type == TPORT_KV_I64 || kv->type == TPORT_KV_I16 || kv->type == TPORT_KV_I8)
        return kv->v.i > 0 ? (uint32_t)kv->v.i : 0;
    return 0;
}

int tool_parse_long(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return tool_fail(2, "%s: %s needs an integer in [%ld, %ld], not '%s'", cmd, flag, lo, hi, s);
    *out = v;
    return 0;
}

static void usage(FILE *out) {
    fprintf(out, "usage: tport COMMAND [options]   (tport COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    /* OpenBLAS (the blas plug-in's library) starts its threads when it is
     * loaded and lets them spin for ~0.1 s after loading and after every
     * call: on a small machine that takes a core from the CPU backend's
     * threads and from start-up.  Sleeping at once costs a GEMM a wake-up.
     * Set here, before any thread exists; the user's own value wins. */
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("tport %s (backend ABI %d.%d)\n", TPORT_VERSION_STRING, TPORT_ABI_MAJOR, TPORT_ABI_MINOR);
        printf("optional parts: %s\n", *tport_build_features() ? tport_build_features() : "none");
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = commands[i].fn(argc - 1, argv + 1);
            tport_registry_shutdown(); /* explicit, never atexit: shut backends down, unload plug-ins */
            return rc;
        }
    usage(stderr);
    return tool_fail(2, "unknown command '%s'", argv[1]);
}
