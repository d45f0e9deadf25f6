/* ONNX decoders read as weights: llama-2-tiny-random's weights written as
 * ONNX by Debian's python3-onnx (onnx_write.py) in the forms exports take
 * (torch.onnx's [in, out] "onnx::MatMul_N" initializers named by their
 * nodes, external data in model.onnx.data, onnxruntime-genai's names with
 * float_data), beside the config.json and tokenizer files they were
 * exported with.  Each gives the GGUF's tensors byte for byte, its greedy
 * ids, and `tport convert` makes a GGUF llama.cpp runs as the original.
 * Quantized graphs, external data leaving the folder and weights whose
 * node names no module are refused, naming them. */
#include "hf_writer.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif
#ifndef TPORT_ONNX_WRITER
#error "TPORT_ONNX_WRITER must name onnx_write.py"
#endif

static const char *python;

static bool find_python(void) {
    static const char *const candidates[] = {"python3", "/usr/bin/python3"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import onnx, numpy' >/dev/null 2>&1", candidates[i]);
        if (system(cmd) == 0) {
            python = candidates[i];
            return true;
        }
    }
    return false;
}

static void write_folder(const char *folder, const tport_model_file *g) {
    write_tokenizer(folder, g, "spm");
    write_config(folder, g, &SPECS[0]);
}

static char *onnx_folder(const char *src, const char *form, const tport_model_file *g, char *model, size_t cap) {
    char *folder = make_folder(form), cmd[1600];
    write_folder(folder, g);
    snprintf(model, cap, "%s/model.onnx", folder);
    snprintf(cmd, sizeof cmd, "%s '%s' '%s' %s '%s'", python, TPORT_ONNX_WRITER, src, form, model);
    CHECK(system(cmd) == 0, "%s", cmd);
    return folder;
}

int main(void) {
    char buf[512];
    const char *tiny = test_shared_path("models/llama-2-tiny-random.gguf", buf, sizeof buf);
    if (!tiny)
        test_skip("test_formats_onnx", "models/llama-2-tiny-random.gguf absent");
    if (!find_python())
        test_skip("test_formats_onnx", "python3 with onnx (python3-onnx) not installed");
    snprintf(dir, sizeof dir, "%s/tport-onnx-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    tport_model_file *g = NULL;
    CHECK(tport_model_file_open(tiny, &g) == TPORT_STATUS_OK, "%s: %s", tiny, tport_last_error());
    if (!g)
        return test_finish("test_formats_onnx");
    char src[400];
    snprintf(src, sizeof src, "%s", make_folder("src"));
    write_folder(src, g);
    write_model(src, g, &SPECS[0]);

    static const char *const forms[] = {"torch", "external", "genai"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char model[600], what[64], out[600], cmd[1600], info[4096];
        onnx_folder(src, forms[i], g, model, sizeof model);
        snprintf(what, sizeof what, "onnx-%s", forms[i]);
        tport_model_file *f = NULL;
        CHECK(tport_model_file_open(model, &f) == TPORT_STATUS_OK, "%s: %s", model, tport_last_error());
        if (f) {
            CHECK(f->container == TPORT_CONTAINER_ONNX, "%s: container %s", what, tport_container_name(f->container));
            CHECK(!strcmp(f->arch, "llama"), "%s: arch %s", what, f->arch);
            CHECK(strstr(f->notes, "opset 17") && strstr(f->notes, "tport-test") && strstr(f->notes, "input_ids"),
                  "%s: notes name opset, producer and inputs: %s", what, f->notes);
            check_same_tensors(what, g, f);
            CHECK(f->vocab.n_tokens == g->vocab.n_tokens, "%s: vocabulary from tokenizer.json", what);
            tport_model_file_close(f);
        }
        snprintf(cmd, sizeof cmd, TPORT_CLI " info '%s' 2>&1", model);
        CHECK(run_cmd(cmd, info, sizeof info) && strstr(info, "onnx") && strstr(info, "opset"),
              "%s: tport info: %.300s", what, info);
        check_same_run(what, tiny, model, "Once upon a time");
        snprintf(out, sizeof out, "%s/%s.gguf", dir, what);
        snprintf(cmd, sizeof cmd, TPORT_CLI " convert '%s' '%s' --quiet 2>&1", model, out);
        CHECK(system(cmd) == 0, "%s", cmd);
        tport_model_file *c = NULL;
        CHECK(tport_model_file_open(out, &c) == TPORT_STATUS_OK, "%s: %s", out, tport_last_error());
        if (c) {
            check_same_tensors(what, g, c);
            tport_model_file_close(c);
        }
        check_llama_cpp(what, tiny, out, "llama-spm");
    }

    static const char *const refused[][2] = {
        {"quant", "MatMulNBits"},
        {"escape", "inside the model's folder"},
        {"anon", "names no module"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char model[600];
        onnx_folder(src, refused[i][0], g, model, sizeof model);
        tport_model_file *f = NULL;
        tport_status st = tport_model_file_open(model, &f);
        CHECK(st != TPORT_STATUS_OK && strstr(tport_last_error(), refused[i][1]), "%s refused with '%s': %s",
              refused[i][0], refused[i][1], st ? tport_last_error() : "opened");
        if (st)
            printf("%s: refused: %s\n", refused[i][0], tport_last_error());
        tport_model_file_close(f);
    }
    /* no config.json beside the model */
    char model[600], cfg[700];
    onnx_folder(src, "torch", g, model, sizeof model);
    snprintf(cfg, sizeof cfg, "%s/torch/config.json", dir);
    unlink(cfg);
    tport_model_file *f = NULL;
    CHECK(tport_model_file_open(model, &f) != TPORT_STATUS_OK && strstr(tport_last_error(), "config.json"),
          "without config.json: %s", tport_last_error());
    tport_model_file_close(f);
    /* hostile bytes: every prefix of the model fails cleanly or opens */
    onnx_folder(src, "genai", g, model, sizeof model);
    size_t n;
    FILE *fp = fopen(model, "rb");
    fseek(fp, 0, SEEK_END);
    n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *bytes = malloc(n);
    CHECK(fread(bytes, 1, n, fp) == n, "read %s", model);
    fclose(fp);
    int refusals = 0;
    for (size_t cut = 1; cut < n; cut += n / 97 + 1) {
        f = NULL;
        if (tport_model_file_open_memory(bytes, cut, "cut.onnx", &f) != TPORT_STATUS_OK)
            refusals++;
        tport_model_file_close(f);
    }
    CHECK(refusals > 50, "cut ONNX files are refused (%d)", refusals);
    free(bytes);
    tport_model_file_close(g);
    char cmd[400];
    run_llama_cpp();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    return test_finish("test_formats_onnx");
}
