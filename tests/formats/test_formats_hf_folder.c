/* Hugging Face folders (config.json, model.safetensors, tokenizer.json,
 * tokenizer_config.json), written here from GGUF files as Hugging Face
 * stores the same models (q/k in rotate-half order, GPT-2's Conv1D weights
 * transposed, merges as transformers derives them for SentencePiece):
 *  - tokenizers: for the vocabularies of llama.cpp's suite (gpt-2,
 *    llama-bpe, qwen2, llama-spm) every test string gives the ids llama.cpp
 *    gave on the GGUF vocabulary (.out);
 *  - llama-2-tiny-random, and every architecture of hf_writer.h's SPECS
 *    (llama, qwen2, gemma, gpt2, phi2, gptneox, bloom, falcon, mpt,
 *    starcoder, gptj, the issue-40 families, the mixtures of experts,
 *    qwen2moe (a gated shared expert), granitemoe (fused 3-D experts),
 *    deepseek2 (MLA: kv_b_proj split into attn_k_b / attn_v_b; grouped
 *    sigmoid routing; YaRN), gpt-oss (dense experts: [n_expert, in,
 *    out], gate/up interleaved; MXFP4 blocks without scales refused) and mistral3 (a multimodal wrapper: text_config,
 *    language_model.*, a vision tensor dropped);
 *    synthesized with GPT-2's vocabulary): the folder
 *    gives the GGUF's tensors byte for byte, its hyperparameters and its
 *    greedy ids; `tport convert FOLDER out.gguf` is loaded by llama.cpp
 *    (when node-llama-cpp is there; not gptj, which it lacks), which
 *    tokenizes every suite string and generates exactly as on the original
 *    GGUF;
 *  - encoders (bert, nomic-bert; mean pooling from sentence-transformers'
 *    modules.json): the folder gives the GGUF's tensors and exactly its
 *    embedding (tport embed --ids);
 *  - an unknown architecture and a hostile tokenizer.json are refused. */
#include "hf_writer.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

/* ---- the vocabulary suite ------------------------------------------------------- */
static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)sz + 1);
    *n = fread(buf, 1, (size_t)sz, f);
    buf[*n] = '\0';
    fclose(f);
    return buf;
}

#define SEP "\n__ggml_vocab_test__\n"

/* Every .inp string of vocab `name` through the folder's tokenizer equals
 * the .out ids.  Returns the number of strings. */
static int check_suite(const char *folder, const char *name) {
    char rel[128], buf[512], buf2[512];
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf.inp", name);
    const char *inp = test_shared_path(rel, buf, sizeof buf);
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf.out", name);
    const char *outp = test_shared_path(rel, buf2, sizeof buf2);
    if (!inp || !outp)
        return 0;
    tport_tokenizer *tk = tport_tokenizer_load(folder);
    CHECK(tk != NULL, "%s: tokenizer of the folder: %s", name, tport_last_error());
    if (!tk)
        return 0;
    size_t ni, no;
    char *in = read_all(inp, &ni), *out = read_all(outp, &no);
    int n = 0, bad = 0;
    char *ip = in, *op = out;
    tport_token ids[4096];
    while (ip && op && *op) {
        char *sep = strstr(ip, SEP), *eol = strchr(op, '\n');
        if (!sep || !eol)
            break;
        int32_t k = tport_tokenizer_tokenize(tk, ip, (size_t)(sep - ip), false, false, ids, 4096);
        char got[8192] = "";
        size_t g = 0;
        for (int32_t i = 0; i < k && g < sizeof got - 16; i++)
            g += (size_t)snprintf(got + g, sizeof got - g, " %d", (int)ids[i]);
        *eol = '\0';
        if (strcmp(got, op) && bad++ < 5)
            CHECK(0, "%s string %d '%.*s': folder gives [%s], llama.cpp [%s]", name, n, (int)(sep - ip), ip, got, op);
        n++;
        ip = sep + strlen(SEP);
        op = eol + 1;
    }
    CHECK(bad == 0, "%s: %d of %d strings differ", name, bad, n);
    printf("%s: %d suite strings tokenized by the folder as llama.cpp does on the GGUF\n", name, n);
    free(in);
    free(out);
    tport_tokenizer_free(tk);
    return n;
}

static const char *spm_or(const char *pre) { return strcmp(pre, "spm") ? pre : "default"; }

static void suite_folder(const char *vocab_name, const char *pre, const char *cls, const char *model_type) {
    char rel[128], buf[512];
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf", vocab_name);
    const char *src = test_shared_path(rel, buf, sizeof buf);
    if (!src) {
        printf("%s: skipped (absent)\n", rel);
        return;
    }
    tport_model_file *g = NULL;
    CHECK(tport_model_file_open(src, &g) == TPORT_STATUS_OK, "%s: %s", src, tport_last_error());
    if (!g)
        return;
    char name[64];
    snprintf(name, sizeof name, "tok-%s", vocab_name);
    char *folder = make_folder(name);
    write_tokenizer(folder, g, pre);
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cfg, "architectures"), cJSON_CreateString(cls));
    cJSON_AddStringToObject(cfg, "model_type", model_type);
    bool gpt2 = !strcmp(model_type, "gpt2");
    cJSON_AddNumberToObject(cfg, gpt2 ? "n_embd" : "hidden_size", 8);
    cJSON_AddNumberToObject(cfg, gpt2 ? "n_layer" : "num_hidden_layers", 1);
    cJSON_AddNumberToObject(cfg, gpt2 ? "n_head" : "num_attention_heads", 2);
    cJSON_AddNumberToObject(cfg, gpt2 ? "n_positions" : "max_position_embeddings", 64);
    write_json(folder, "config.json", cfg);
    float w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    st_tensor t = {.dtype = "F32", .n_dims = 1, .shape = {8}, .data = w, .nbytes = sizeof w};
    snprintf(t.name, sizeof t.name, "%s", gpt2 ? "transformer.ln_f.weight" : "model.norm.weight");
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    write_safetensors(path, &t, 1);
    CHECK(check_suite(folder, vocab_name) > 10, "%s: suite strings", vocab_name);
    /* the folder's tokenizer keys: what the GGUF has */
    tport_model_file *f = NULL;
    CHECK(tport_model_file_open(folder, &f) == TPORT_STATUS_OK, "%s: %s", folder, tport_last_error());
    if (f) {
        CHECK(f->vocab.n_tokens == g->vocab.n_tokens, "%s: %d tokens, GGUF %d", vocab_name, f->vocab.n_tokens,
              g->vocab.n_tokens);
        int diff = 0;
        for (int32_t i = 0; i < f->vocab.n_tokens && i < g->vocab.n_tokens; i++)
            diff += strcmp(f->vocab.tokens[i], g->vocab.tokens[i]) != 0 ||
                    (g->vocab.token_type && f->vocab.token_type[i] != g->vocab.token_type[i]);
        CHECK(diff == 0, "%s: %d tokens differ in text or type from the GGUF's", vocab_name, diff);
        const tport_kv *p = tport_model_file_kv(f, "tokenizer.ggml.pre");
        CHECK(p && !strcmp(p->v.s, spm_or(pre)), "%s: tokenizer.ggml.pre %s", vocab_name, p ? p->v.s : "absent");
        CHECK(f->vocab.bos == g->vocab.bos && f->vocab.eos == g->vocab.eos, "%s: bos %d eos %d, GGUF %d %d",
              vocab_name, f->vocab.bos, f->vocab.eos, g->vocab.bos, g->vocab.eos);
        tport_model_file_close(f);
    }
    tport_model_file_close(g);
}

static void model_case(const char *what, const char *gguf, const char *pre, const char *suite, const arch_spec *sp) {
    tport_model_file *g = NULL;
    CHECK(tport_model_file_open(gguf, &g) == TPORT_STATUS_OK, "%s: %s", gguf, tport_last_error());
    if (!g)
        return;
    char *folder = make_folder(what);
    write_tokenizer(folder, g, pre);
    write_model(folder, g, sp);
    write_config(folder, g, sp);
    const tport_mf_hparams *hp = &g->hp;
    tport_model_file *f = NULL;
    CHECK(tport_model_file_open(folder, &f) == TPORT_STATUS_OK, "%s: %s", folder, tport_last_error());
    if (f) {
        check_same_tensors(what, g, f);
        CHECK(!strcmp(f->arch, g->arch), "%s: arch %s, GGUF %s", what, f->arch, g->arch);
        CHECK(f->hp.n_embd == hp->n_embd && f->hp.n_layer == hp->n_layer && f->hp.n_ff == hp->n_ff &&
                  (f->hp.n_head_kv ? f->hp.n_head_kv : f->hp.n_head) == (hp->n_head_kv ? hp->n_head_kv : hp->n_head) &&
                  (!hp->n_rot || f->hp.n_rot == hp->n_rot) && f->hp.n_ctx == hp->n_ctx,
              "%s: hyperparameters differ from the GGUF's: embd %u/%u layer %u/%u ff %u/%u kv %u/%u rot %u/%u ctx %u/%u",
              what, f->hp.n_embd, hp->n_embd, f->hp.n_layer, hp->n_layer, f->hp.n_ff, hp->n_ff, f->hp.n_head_kv,
              hp->n_head_kv, f->hp.n_rot, hp->n_rot, f->hp.n_ctx, hp->n_ctx);
        const tport_kv *ct = tport_model_file_kv(f, "tokenizer.chat_template");
        CHECK(ct && strstr(ct->v.s, "messages"), "%s: chat template from tokenizer_config.json", what);
        tport_model_file_close(f);
    }
    check_same_run(what, gguf, folder, "Once upon a time");
    char out[600], cmd[1400];
    snprintf(out, sizeof out, "%s/%s.gguf", dir, what);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert '%s' '%s' --quiet 2>&1", folder, out);
    CHECK(system(cmd) == 0, "%s", cmd);
    tport_model_file *c = NULL;
    CHECK(tport_model_file_open(out, &c) == TPORT_STATUS_OK, "%s: %s", out, tport_last_error());
    if (c) {
        check_same_tensors(what, g, c);
        const tport_kv *k = tport_model_file_kv(c, "tokenizer.ggml.model"), *gk = tport_model_file_kv(g, "tokenizer.ggml.model");
        CHECK(k && gk && !strcmp(k->v.s, gk->v.s), "%s: tokenizer.ggml.model", what);
        tport_model_file_close(c);
    }
    check_same_run(what, gguf, out, "Once upon a time");
    if (sp->llama_cpp)
        check_llama_cpp(what, gguf, out, suite);
    tport_model_file_close(g);
}

/* An encoder's folder (sentence-transformers' mean pooling in modules.json,
 * no tokenizer: ids in): the GGUF's tensors, pooling and embedding. */
static void encoder_case(const arch_spec *sp) {
    char gguf[600], cmd[1400], a[1 << 14], b[1 << 14];
    snprintf(gguf, sizeof gguf, "%s/%s-synth.gguf", dir, sp->arch);
    snprintf(cmd, sizeof cmd, TPORT_CLI " synth --arch %s %s -o '%s' >/dev/null 2>&1", sp->arch, sp->synth, gguf);
    CHECK(system(cmd) == 0, "%s", cmd);
    tport_model_file *g = NULL;
    CHECK(tport_model_file_open(gguf, &g) == TPORT_STATUS_OK, "%s: %s", gguf, tport_last_error());
    if (!g)
        return;
    char *folder = make_folder(sp->arch), path[600];
    write_model(folder, g, sp);
    write_config(folder, g, sp);
    snprintf(path, sizeof path, "%s/modules.json", folder);
    write_text(path, "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
                     " {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
                     "\"sentence_transformers.models.Pooling\"}]");
    snprintf(path, sizeof path, "%s/1_Pooling", folder);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/1_Pooling/config.json", folder);
    write_text(path, "{\"word_embedding_dimension\": 64, \"pooling_mode_cls_token\": false, "
                     "\"pooling_mode_mean_tokens\": true}");
    tport_model_file *f = NULL;
    CHECK(tport_model_file_open(folder, &f) == TPORT_STATUS_OK, "%s: %s", folder, tport_last_error());
    if (f) {
        check_same_tensors(sp->arch, g, f);
        char key[64];
        snprintf(key, sizeof key, "%s.pooling_type", sp->arch);
        const tport_kv *pk = tport_model_file_kv(f, key);
        snprintf(key, sizeof key, "%s.attention.causal", sp->arch);
        const tport_kv *ck = tport_model_file_kv(f, key);
        CHECK(!strcmp(f->arch, sp->arch) && pk && pk->v.u == 1 && ck && !ck->v.b, "%s: arch %s, pooling %d, causal %d",
              sp->arch, f->arch, pk ? (int)pk->v.u : -1, ck ? (int)ck->v.b : -1);
        tport_model_file_close(f);
    }
    snprintf(cmd, sizeof cmd, TPORT_CLI " embed -m '%s' --ids 1,5,9,2,77,3 --threads 1 2>&1", gguf);
    bool ok_a = run_cmd(cmd, a, sizeof a);
    snprintf(cmd, sizeof cmd, TPORT_CLI " embed -m '%s' --ids 1,5,9,2,77,3 --threads 1 2>&1", folder);
    bool ok_b = run_cmd(cmd, b, sizeof b);
    CHECK(ok_a && ok_b && strstr(a, "\"pooling\": \"mean\"") && !strcmp(a, b), "%s: tport embed\n  GGUF:   %.300s\n  folder: %.300s",
          sp->arch, a, b);
    printf("%s: the folder's embedding equals the GGUF's: %.120s...\n", sp->arch, b);
    /* without modules.json: no pooling (llama.cpp's default for an encoder), refused by embed */
    snprintf(path, sizeof path, "%s/modules.json", folder);
    unlink(path);
    snprintf(cmd, sizeof cmd, TPORT_CLI " embed -m '%s' --ids 1,5,9 2>&1", folder);
    CHECK(!run_cmd(cmd, b, sizeof b) && strstr(b, "pooling"), "%s: no modules.json: %.300s", sp->arch, b);
    tport_model_file_close(g);
}

/* ---- refusals ----------------------------------------------------------------- */
static void refusals(void) {
    char *folder = make_folder("bad");
    float w[8] = {0};
    st_tensor t = {.name = "model.norm.weight", .dtype = "F32", .n_dims = 1, .shape = {8}, .data = w, .nbytes = sizeof w};
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    write_safetensors(path, &t, 1);
    snprintf(path, sizeof path, "%s/config.json", folder);
    write_text(path, "{\"architectures\": [\"MambaForCausalLM\"], \"model_type\": \"mamba\"}");
    tport_model_file *f = NULL;
    CHECK(tport_model_file_open(folder, &f) != TPORT_STATUS_OK && strstr(tport_last_error(), "MambaForCausalLM"),
          "an unknown architecture is refused naming it: %s", tport_last_error());
    tport_model_file_close(f);
    f = NULL;
    write_text(path, "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
                     "\"num_attention_heads\": 2}");
    static const char *const hostile[][2] = {
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", "Unigram"},
        {"{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}",
         "two tokens"},
        {"{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 99999999}, \"merges\": []}}",
         "2^24"},
        {"{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": "
         "[\"a c\"]}}",
         "not in the vocabulary"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": "
         "\"Whitespace\"}}",
         "ByteLevel"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [7]}, \"pre_tokenizer\": {\"type\": "
         "\"ByteLevel\"}}",
         "merges[0]"},
        {"{\"model\": ", "not valid JSON"},
    };
    /* experts: an index past num_local_experts, a missing expert, two of
     * one expert: each refused, naming what */
    char moe_path[512];
    snprintf(moe_path, sizeof moe_path, "%s/config.json", folder);
    write_text(moe_path, "{\"architectures\": [\"MixtralForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
                         "\"num_attention_heads\": 2, \"num_local_experts\": 2, \"num_experts_per_tok\": 1}");
    float ew[32] = {0};
    static const char *const moe_cases[][3] = {
        {"model.layers.0.block_sparse_moe.experts.5.w1.weight", NULL, "expert 5 of 2"},
        {"model.layers.0.block_sparse_moe.experts.0.w1.weight", NULL, "missing"},
        {"model.layers.0.block_sparse_moe.experts.0.w1.weight", "model.layers.0.block_sparse_moe.experts.00.w1.weight",
         "repeated"},
    };
    snprintf(moe_path, sizeof moe_path, "%s/model.safetensors", folder);
    for (size_t i = 0; i < sizeof moe_cases / sizeof moe_cases[0]; i++) {
        st_tensor et[2] = {{.dtype = "F32", .n_dims = 2, .shape = {4, 8}, .data = ew, .nbytes = sizeof ew},
                           {.dtype = "F32", .n_dims = 2, .shape = {4, 8}, .data = ew, .nbytes = sizeof ew}};
        snprintf(et[0].name, sizeof et[0].name, "%s", moe_cases[i][0]);
        if (moe_cases[i][1])
            snprintf(et[1].name, sizeof et[1].name, "%s", moe_cases[i][1]);
        write_safetensors(moe_path, et, moe_cases[i][1] ? 2 : 1);
        f = NULL;
        tport_status st = tport_model_file_open(folder, &f);
        CHECK(st != TPORT_STATUS_OK && strstr(tport_last_error(), moe_cases[i][2]),
              "experts case %zu refused with '%s': %s", i, moe_cases[i][2], st ? tport_last_error() : "opened");
        tport_model_file_close(f);
    }
    write_safetensors(moe_path, &t, 1);
    /* configs whose meaning the mapping does not implement, refused naming it */
    static const char *const configs[][2] = {
        {"{\"architectures\": [\"Mistral3ForConditionalGeneration\"], \"text_config\": {\"model_type\": "
         "\"mistral4\", \"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 2}}",
         "mistral4"},
        {"{\"architectures\": [\"Mistral3ForConditionalGeneration\"], \"text_config\": {\"hidden_size\": 8, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"rope_parameters\": {\"rope_type\": \"yarn\"}}}",
         "yarn"},
        {"{\"architectures\": [\"Qwen2MoeForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"num_experts\": 2, \"num_experts_per_tok\": 1, \"norm_topk_prob\": true}",
         "norm_topk_prob"},
        {"{\"architectures\": [\"NomicBertModel\"], \"n_embd\": 8, \"n_layer\": 1, \"n_head\": 2, \"n_inner\": 8, "
         "\"n_positions\": 2048, \"max_trained_positions\": 2048, \"activation_function\": \"gelu\", "
         "\"moe_every_n_layers\": 2}", "nomic-bert-moe"},
        {"{\"architectures\": [\"NomicBertModel\"], \"n_embd\": 8, \"n_layer\": 1, \"n_head\": 2, \"n_inner\": 8, "
         "\"n_positions\": 4096, \"activation_function\": \"swiglu\"}", "n_positions 4096"},
        {"{\"architectures\": [\"GraniteMoeForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"num_local_experts\": 2, \"num_experts_per_tok\": 1, "
         "\"shared_intermediate_size\": 16}", "shared_intermediate_size"},
        {"{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"qk_rope_head_dim\": 2, \"qk_nope_head_dim\": 2, \"v_head_dim\": 2, "
         "\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 40}}", "original_max_position_embeddings"},
        {"{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"qk_rope_head_dim\": 2, \"qk_nope_head_dim\": 2, \"v_head_dim\": 2, "
         "\"n_routed_experts\": 2, \"num_experts_per_tok\": 1, \"moe_intermediate_size\": 4, "
         "\"scoring_func\": \"sqrtsoftplus\"}", "sqrtsoftplus"},
        {"{\"architectures\": [\"GptOssForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"swiglu_limit\": 10.0}", "swiglu_limit"},
        {"{\"architectures\": [\"GptOssForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 2, "
         "\"num_attention_heads\": 2, \"layer_types\": [\"full_attention\", \"full_attention\"]}", "layer_types[0]"},
        {"{\"architectures\": [\"BertModel\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"position_embedding_type\": \"relative_key\"}", "relative_key"},
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        write_text(path, configs[i][0]);
        f = NULL;
        tport_status st = tport_model_file_open(folder, &f);
        CHECK(st != TPORT_STATUS_OK && strstr(tport_last_error(), configs[i][1]), "config %zu refused with '%s': %s",
              i, configs[i][1], st ? tport_last_error() : "opened");
        tport_model_file_close(f);
    }
    /* gpt-oss's MXFP4 experts: blocks without their scales are refused
     * (tests/formats/test_hf_gptoss_mxfp4.sh runs whole MXFP4 folders) */
    uint8_t blocks[64] = {0};
    st_tensor mx = {.name = "model.layers.0.mlp.experts.down_proj_blocks", .dtype = "U8", .n_dims = 4,
                    .shape = {1, 2, 2, 16}, .data = blocks, .nbytes = sizeof blocks};
    write_safetensors(moe_path, &mx, 1);
    write_text(path, "{\"architectures\": [\"GptOssForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 1, "
                     "\"num_attention_heads\": 2, \"num_local_experts\": 1, \"num_experts_per_tok\": 1, "
                     "\"intermediate_size\": 64, \"sliding_window\": 8}");
    f = NULL;
    CHECK(tport_model_file_open(folder, &f) != TPORT_STATUS_OK && strstr(tport_last_error(), "without their scales"),
          "MXFP4 blocks without scales refused: %s", f ? "opened" : tport_last_error());
    tport_model_file_close(f);
    write_safetensors(moe_path, &t, 1);
    write_text(path, "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 8, \"num_hidden_layers\": 1, "
                     "\"num_attention_heads\": 2}");
    snprintf(path, sizeof path, "%s/tokenizer.json", folder);
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        write_text(path, hostile[i][0]);
        f = NULL;
        tport_status st = tport_model_file_open(folder, &f);
        CHECK(st != TPORT_STATUS_OK && strstr(tport_last_error(), hostile[i][1]),
              "hostile tokenizer.json %zu refused with '%s': %s", i, hostile[i][1], st ? tport_last_error() : "opened");
        tport_model_file_close(f);
    }
}

/* ---- SentencePiece tokenizer.model ------------------------------------------- */
static void pb_varint(FILE *f, uint64_t v) {
    do {
        fputc((int)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)), f);
        v >>= 7;
    } while (v);
}

/* A ModelProto with g's pieces (field 1: {1 text, 2 score, 3 type}), and
 * a normalizer spec (field 3) that the reader skips. */
static void write_spm_model(const char *folder, const tport_model_file *g) {
    const tport_vocab *v = &g->vocab;
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizer.model", folder);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "open %s", path);
    if (!f)
        return;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        size_t len = strlen(v->tokens[i]);
        int32_t type = v->token_type ? v->token_type[i] : 1;
        size_t vlen = 1, tmp = len;
        while (tmp > 0x7f) {
            tmp >>= 7;
            vlen++;
        }
        fputc(0x0a, f); /* field 1, length-delimited */
        pb_varint(f, 1 + vlen + len + 5 + 2);
        fputc(0x0a, f);
        pb_varint(f, len);
        fwrite(v->tokens[i], 1, len, f);
        float score = v->scores ? v->scores[i] : 0.0f;
        fputc(0x15, f); /* field 2, fixed32 */
        fwrite(&score, 4, 1, f);
        fputc(0x18, f); /* field 3, varint */
        fputc(type, f);
    }
    static const uint8_t normalizer[] = {0x1a, 0x06, 0x0a, 0x04, 'n', 'm', 'f', 'c'};
    fwrite(normalizer, 1, sizeof normalizer, f);
    fclose(f);
}

/* A folder with SentencePiece's tokenizer.model and no tokenizer.json
 * (Llama 2 as Meta's HF conversion ships it): the same tokens, types,
 * scores and suite ids as the GGUF vocabulary it was written from. */
static void spm_model_folder(const char *vocab_name) {
    char rel[128], buf[512];
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf", vocab_name);
    const char *src = test_shared_path(rel, buf, sizeof buf);
    if (!src) {
        printf("%s: skipped (absent)\n", rel);
        return;
    }
    tport_model_file *g = NULL;
    CHECK(tport_model_file_open(src, &g) == TPORT_STATUS_OK, "%s: %s", src, tport_last_error());
    if (!g)
        return;
    char name[64];
    snprintf(name, sizeof name, "spm-model-%s", vocab_name);
    char *folder = make_folder(name);
    write_spm_model(folder, g);
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cfg, "architectures"), cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddStringToObject(cfg, "model_type", "llama");
    cJSON_AddNumberToObject(cfg, "hidden_size", 8);
    cJSON_AddNumberToObject(cfg, "num_hidden_layers", 1);
    cJSON_AddNumberToObject(cfg, "num_attention_heads", 2);
    cJSON_AddNumberToObject(cfg, "max_position_embeddings", 64);
    cJSON_AddNumberToObject(cfg, "vocab_size", g->vocab.n_tokens);
    cJSON_AddNumberToObject(cfg, "bos_token_id", g->vocab.bos);
    cJSON_AddNumberToObject(cfg, "eos_token_id", g->vocab.eos);
    write_json(folder, "config.json", cfg);
    cJSON *tcfg = cJSON_CreateObject();
    cJSON_AddBoolToObject(tcfg, "add_bos_token", true);
    cJSON_AddBoolToObject(tcfg, "add_eos_token", false);
    write_json(folder, "tokenizer_config.json", tcfg);
    float w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    st_tensor t = {.dtype = "F32", .n_dims = 1, .shape = {8}, .data = w, .nbytes = sizeof w};
    snprintf(t.name, sizeof t.name, "model.norm.weight");
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    write_safetensors(path, &t, 1);
    CHECK(check_suite(folder, vocab_name) > 10, "%s (tokenizer.model): suite strings", vocab_name);
    tport_model_file *f = NULL;
    CHECK(tport_model_file_open(folder, &f) == TPORT_STATUS_OK, "%s: %s", folder, tport_last_error());
    if (f) {
        const tport_vocab *a = &f->vocab, *b = &g->vocab;
        CHECK(a->n_tokens == b->n_tokens && a->scores && a->token_type, "%s (tokenizer.model): %d tokens, GGUF %d",
              vocab_name, a->n_tokens, b->n_tokens);
        int diff = 0;
        for (int32_t i = 0; a->scores && a->token_type && i < a->n_tokens && i < b->n_tokens; i++)
            diff += strcmp(a->tokens[i], b->tokens[i]) != 0 || a->scores[i] != b->scores[i] ||
                    a->token_type[i] != (b->token_type[i] == 4 ? 1 : b->token_type[i]);
        CHECK(diff == 0, "%s (tokenizer.model): %d tokens differ in text, score or type", vocab_name, diff);
        CHECK(a->bos == b->bos && a->eos == b->eos, "%s (tokenizer.model): bos %d eos %d, GGUF %d %d", vocab_name,
              a->bos, a->eos, b->bos, b->eos);
        tport_model_file_close(f);
    }
    /* a truncated tokenizer.model is refused, naming the file */
    snprintf(path, sizeof path, "%s/tokenizer.model", folder);
    CHECK(truncate(path, 1000) == 0, "truncate %s", path);
    f = NULL;
    CHECK(tport_model_file_open(folder, &f) != TPORT_STATUS_OK && strstr(tport_last_error(), "tokenizer.model"),
          "a truncated tokenizer.model: %s", f ? "opened" : tport_last_error());
    tport_model_file_close(f);
    tport_model_file_close(g);
}

int main(void) {
    char buf[512];
    if (!test_shared_path("models/vocab/ggml-vocab-gpt-2.gguf", buf, sizeof buf))
        test_skip("test_formats_hf_folder", "../shared/models/vocab absent");
    snprintf(dir, sizeof dir, "%s/tport-hf-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    suite_folder("gpt-2", "gpt-2", "GPT2LMHeadModel", "gpt2");
    suite_folder("llama-bpe", "llama-bpe", "LlamaForCausalLM", "llama");
    suite_folder("qwen2", "qwen2", "Qwen2ForCausalLM", "qwen2");
    suite_folder("llama-spm", "spm", "LlamaForCausalLM", "llama");
    spm_model_folder("llama-spm");
    refusals();

    const char *tiny = test_shared_path("models/llama-2-tiny-random.gguf", buf, sizeof buf);
    if (tiny)
        model_case("llama-tiny", tiny, "spm", "llama-spm", &SPECS[0]);
    char cmd[1400], vocab[512];
    if (test_shared_path("models/vocab/ggml-vocab-gpt-2.gguf", vocab, sizeof vocab))
        for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++) {
            char gguf[600];
            /* the folder names the model (general.name); llama.cpp's vocabulary
             * loader takes a name containing "phi3" for Phi-3's vocabulary and
             * looks up its special tokens, which gpt-2's vocabulary lacks */
            const char *what = !strcmp(SPECS[i].arch, "phi3")                   ? "phi-three"
                               : !strcmp(SPECS[i].cls, "MixtralForCausalLM") ? "mixtral"
                                                                             : SPECS[i].arch;
            snprintf(gguf, sizeof gguf, "%s/%s-synth.gguf", dir, what);
            snprintf(cmd, sizeof cmd, TPORT_CLI " synth --arch %s %s --vocab-from '%s' -o '%s' >/dev/null 2>&1",
                     SPECS[i].arch, SPECS[i].synth, vocab, gguf);
            CHECK(system(cmd) == 0, "%s", cmd);
            model_case(what, gguf, "gpt-2", "gpt-2", &SPECS[i]);
        }
    for (size_t i = 0; i < sizeof ENCODER_SPECS / sizeof ENCODER_SPECS[0]; i++)
        encoder_case(&ENCODER_SPECS[i]);
    run_llama_cpp();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    return test_finish("test_formats_hf_folder");
}
