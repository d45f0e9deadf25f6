/* Sharded safetensors (Hugging Face: model-0000K-of-0000N.safetensors with
 * model.safetensors.index.json) written here byte by byte: opened through
 * the index, the folder or any shard they give the same tensors as the one
 * file holding them all, zero copy from each shard, and (from the real tiny
 * llama, written in Hugging Face's names and q/k order) the same ids from
 * tport run.  Hostile indexes (paths out of the folder, tensors in the
 * wrong shard, missing shards, ...) are refused naming the file. */
#include <sys/stat.h>
#include <sys/wait.h>

#include "byte_builder.h"
#include "formats/model_file.h"
#include "../test_util.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

static char dir[256];

typedef struct st_tensor {
    char name[96];
    const char *dtype;
    int n_dims;
    int64_t shape[4]; /* row-major, outermost first */
    const void *data;
    size_t nbytes;
} st_tensor;

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n, "write %s", path);
    if (f)
        fclose(f);
}

static void write_text(const char *rel, const char *text) {
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    write_bytes(path, text, strlen(text));
}

/* One safetensors file with tensors [from, to). */
static void write_st(const char *rel, const st_tensor *t, int from, int to) {
    /* rel is at most 400 bytes */
    bb json = {0}, file = {0};
    size_t off = 0;
    char buf[512];
    bb_raw(&json, "{\"__metadata__\": {\"format\": \"pt\"}", 34);
    for (int i = from; i < to; i++) {
        int n = snprintf(buf, sizeof buf, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [", t[i].name, t[i].dtype);
        for (int d = 0; d < t[i].n_dims; d++)
            n += snprintf(buf + n, sizeof buf - (size_t)n, d ? ", %lld" : "%lld", (long long)t[i].shape[d]);
        n += snprintf(buf + n, sizeof buf - (size_t)n, "], \"data_offsets\": [%zu, %zu]}", off, off + t[i].nbytes);
        bb_raw(&json, buf, (size_t)n);
        off += t[i].nbytes;
    }
    bb_u8(&json, '}');
    while (json.n % 8)
        bb_u8(&json, ' ');
    bb_u64(&file, json.n);
    bb_raw(&file, json.p, json.n);
    for (int i = from; i < to; i++)
        bb_raw(&file, t[i].data, t[i].nbytes);
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    write_bytes(path, file.p, file.n);
    bb_free(&json);
    bb_free(&file);
}

/* The index for shards `sub`/model-0000K-of-0000N.safetensors holding
 * tensors [cut[k], cut[k + 1]). */
static void write_sharded(const char *sub, const st_tensor *t, const int *cut, int n) {
    char path[800], rel[400];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    mkdir(path, 0755);
    bb idx = {0};
    bb_raw(&idx, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {", 47);
    for (int k = 0; k < n; k++) {
        snprintf(rel, sizeof rel, "%s/model-%05d-of-%05d.safetensors", sub, k + 1, n);
        write_st(rel, t, cut[k], cut[k + 1]);
        for (int i = cut[k]; i < cut[k + 1]; i++) {
            char line[300];
            int m = snprintf(line, sizeof line, "%s\"%s\": \"model-%05d-of-%05d.safetensors\"", i ? ", " : "", t[i].name,
                             k + 1, n);
            bb_raw(&idx, line, (size_t)m);
        }
    }
    bb_raw(&idx, "}}", 2);
    snprintf(rel, sizeof rel, "%s/model.safetensors.index.json", sub);
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    write_bytes(path, idx.p, idx.n);
    bb_free(&idx);
}

static int run_q(const char *cmd, char *out, size_t cap, bool quiet) {
    char full[4096];
    snprintf(full, sizeof full, "%s %s", cmd, quiet ? "2>/dev/null" : "2>&1");
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool in_map(const tport_model_file *f, const void *p) {
    return (const uint8_t *)p >= (const uint8_t *)f->map && (const uint8_t *)p < (const uint8_t *)f->map + f->map_size;
}

/* The model read from `path` has the tensors of `one` (same names, types,
 * shapes and bytes); those the reader did not change point into a shard's
 * mapping. */
static void check_same(const char *what, const char *path, const tport_model_file *one, uint32_t n_shards) {
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "%s: open %s: %s", what, path, tport_last_error());
    if (!mf)
        return;
    CHECK(mf->n_tensors == one->n_tensors && mf->n_parts == n_shards && mf->n_part_files == n_shards,
          "%s: %d tensors in %u shards (want %d in %u)", what, mf->n_tensors, mf->n_parts, one->n_tensors, n_shards);
    CHECK(!strcmp(mf->arch, one->arch) && mf->hp.n_embd == one->hp.n_embd && mf->hp.n_layer == one->hp.n_layer &&
              mf->hp.n_head == one->hp.n_head,
          "%s: hyperparameters from config.json", what);
    int zero_copy = 0;
    for (int i = 0; i < one->n_tensors; i++) {
        const tport_mf_tensor *a = &one->tensors[i], *b = tport_model_file_find(mf, a->name);
        CHECK(b && b->type == a->type && b->n_dims == a->n_dims && !memcmp(b->ne, a->ne, sizeof a->ne) &&
                  b->nbytes == a->nbytes && !memcmp(b->data, a->data, (size_t)a->nbytes),
              "%s: tensor '%s' equals the one file's", what, a->name);
        if (b && b->part > 0 && b->part <= mf->n_part_files)
            zero_copy += in_map(mf->part_files[b->part - 1], b->data);
    }
    CHECK(zero_copy > 0, "%s: tensors point into the shards' mappings (%d)", what, zero_copy);
    tport_model_file_close(mf);
}

/* ---- a small synthetic model: always runs ------------------------------ */

static void test_synthetic(void) {
    enum { E = 8, V = 5 };
    static float q[E * E], k[E * E], emb[V * E], norm[E];
    for (int i = 0; i < E * E; i++)
        q[i] = (float)i, k[i] = (float)-i;
    for (int i = 0; i < V * E; i++)
        emb[i] = 0.5f * (float)i;
    for (int i = 0; i < E; i++)
        norm[i] = 1.0f + (float)i;
    st_tensor t[4] = {{"model.embed_tokens.weight", "F32", 2, {V, E}, emb, sizeof emb},
                      {"model.layers.0.self_attn.q_proj.weight", "F32", 2, {E, E}, q, sizeof q},
                      {"model.layers.0.self_attn.k_proj.weight", "F32", 2, {E, E}, k, sizeof k},
                      {"model.norm.weight", "F32", 1, {E}, norm, sizeof norm}};
    const char *cfg = "{\"model_type\": \"llama\", \"hidden_size\": 8, \"num_attention_heads\": 2, "
                      "\"num_key_value_heads\": 2, \"num_hidden_layers\": 1, \"vocab_size\": 5, "
                      "\"intermediate_size\": 16}";
    write_st("model.safetensors", t, 0, 4);
    write_text("config.json", cfg);
    static const int cut[4] = {0, 1, 3, 4};
    write_sharded("syn", t, cut, 3);
    write_text("syn/config.json", cfg);
    char one_path[400], path[600];
    snprintf(one_path, sizeof one_path, "%s/model.safetensors", dir);
    tport_model_file *one = NULL;
    tport_status s = tport_model_file_open(one_path, &one);
    if (s != TPORT_STATUS_OK && strstr(tport_last_error(), "without")) {
        printf("sharded safetensors: skipped (%s)\n", tport_last_error());
        return;
    }
    CHECK(s == TPORT_STATUS_OK, "one file: %s", tport_last_error());
    if (!one)
        return;
    snprintf(path, sizeof path, "%s/syn/model.safetensors.index.json", dir);
    check_same("synthetic, through the index", path, one, 3);
    snprintf(path, sizeof path, "%s/syn", dir);
    check_same("synthetic, the folder", path, one, 3);
    snprintf(path, sizeof path, "%s/syn/", dir);
    check_same("synthetic, the folder/", path, one, 3);
    snprintf(path, sizeof path, "%s/syn/model-00002-of-00003.safetensors", dir);
    check_same("synthetic, the second shard", path, one, 3);
    /* every byte of the index and of a shard flipped, and every length of
     * the index cut: an error or a model, never a crash */
    bb index = {0}, shard = {0};
    snprintf(path, sizeof path, "%s/syn/model.safetensors.index.json", dir);
    FILE *f = fopen(path, "rb");
    char chunk[4096];
    size_t got;
    while (f && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        bb_raw(&index, chunk, got);
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/syn/model-00002-of-00003.safetensors", dir);
    f = fopen(path, "rb");
    while (f && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        bb_raw(&shard, chunk, got);
    if (f)
        fclose(f);
    int errors = 0, tries = 0;
    for (int which = 0; which < 3; which++) {
        bb *b = which == 1 ? &shard : &index;
        for (size_t i = 0; i < b->n; i += which == 1 ? 7 : 1) {
            char idx_path[600], dir_path[600];
            snprintf(idx_path, sizeof idx_path, "%s/syn/model.safetensors.index.json", dir);
            snprintf(dir_path, sizeof dir_path, "%s/syn", dir);
            if (which == 2) { /* the index cut to i bytes */
                write_bytes(idx_path, index.p, i);
            } else {
                b->p[i] ^= 0x41;
                write_bytes(which ? path : idx_path, b->p, b->n);
                b->p[i] ^= 0x41;
            }
            tport_model_file *m = NULL;
            tport_status st = tport_model_file_open(dir_path, &m);
            tries++;
            errors += st != TPORT_STATUS_OK;
            CHECK(st == TPORT_STATUS_OK || st == TPORT_STATUS_BAD_FORMAT || st == TPORT_STATUS_IO,
                  "corruption %d at %zu: status %d", which, i, (int)st);
            tport_model_file_close(m);
        }
        write_bytes(path, shard.p, shard.n); /* both restored */
        snprintf(chunk, sizeof chunk, "%s/syn/model.safetensors.index.json", dir);
        write_bytes(chunk, index.p, index.n);
    }
    CHECK(errors > tries / 2, "corruptions detected: %d of %d", errors, tries);
    bb_free(&index);
    bb_free(&shard);
    /* a folder holding one model.safetensors opens it */
    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(dir, &mf) == TPORT_STATUS_OK && mf && mf->n_tensors == 4 && mf->n_parts == 0,
          "a folder with model.safetensors: %s", tport_last_error());
    tport_model_file_close(mf);
    tport_model_file_close(one);
}

/* ---- hostile indexes and shards ------------------------------------------ */

static void expect_refused(const char *what, const char *index_json, const char *open_rel, const char *want,
                           const char *file) {
    static const float v[4] = {1, 2, 3, 4};
    st_tensor t[2] = {{"model.norm.weight", "F32", 1, {2}, v, 8}, {"lm_head.weight", "F32", 1, {2}, v + 2, 8}};
    static const int cut[3] = {0, 1, 2};
    write_sharded("bad", t, cut, 2);
    if (index_json)
        write_text("bad/model.safetensors.index.json", index_json);
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, open_rel);
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    const char *e = tport_last_error();
    CHECK(s != TPORT_STATUS_OK && !mf && strstr(e, want) && strstr(e, file), "%s: refused with '%s' naming %s: %s",
          what, want, file, s ? e : "opened");
    tport_model_file_close(mf);
}

#define SHARD1 "model-00001-of-00002.safetensors"
#define SHARD2 "model-00002-of-00002.safetensors"
#define IDX "bad/model.safetensors.index.json"

static void test_hostile(void) {
    /* the set itself reads */
    expect_refused("a shard tensor the index does not list",
                   "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\", \"x.weight\": \"" SHARD2 "\"}}", IDX,
                   "does not list", SHARD2);
    static const struct {
        const char *what, *json, *want;
    } bad[] = {
        {"parent folder", "{\"weight_map\": {\"model.norm.weight\": \"../" SHARD1 "\", \"lm_head.weight\": \"" SHARD2 "\"}}",
         "plain file name"},
        {"absolute path", "{\"weight_map\": {\"model.norm.weight\": \"/etc/passwd\"}}", "plain file name"},
        {"sub-folder", "{\"weight_map\": {\"model.norm.weight\": \"sub/" SHARD1 "\"}}", "plain file name"},
        {"not .safetensors", "{\"weight_map\": {\"model.norm.weight\": \"config.json\"}}", "plain file name"},
        {"hidden dot name", "{\"weight_map\": {\"model.norm.weight\": \"..safetensors\"}}", "plain file name"},
        {"backslash", "{\"weight_map\": {\"model.norm.weight\": \"..\\\\x.safetensors\"}}", "plain file name"},
        {"not a string", "{\"weight_map\": {\"model.norm.weight\": 5}}", "plain file name"},
        {"no weight_map object", "{\"weight_map\": [1, 2]}", "weight_map"},
        {"empty weight_map", "{\"weight_map\": {}}", "no tensors"},
        {"not JSON", "{\"weight_map\": {\"a\": ", "not valid JSON"},
        {"a tensor twice", "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\", \"model.norm.weight\": \"" SHARD2
                           "\", \"lm_head.weight\": \"" SHARD2 "\"}}", "twice"},
        {"tensors swapped between shards", "{\"weight_map\": {\"model.norm.weight\": \"" SHARD2 "\", \"lm_head.weight\": \"" SHARD1 "\"}}",
         "puts in"},
        {"listed but absent", "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\", \"lm_head.weight\": \"" SHARD2
                              "\", \"x.weight\": \"" SHARD2 "\"}}", "does not hold it"},
        {"missing shard", "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\", \"lm_head.weight\": \"model-00009-of-00009.safetensors\"}}",
         "No such file"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_refused(bad[i].what, bad[i].json, IDX, bad[i].want, "model.safetensors.index.json");
    /* a shard that is not safetensors */
    static const float v[2] = {1, 2};
    st_tensor t[1] = {{"model.norm.weight", "F32", 1, {2}, v, 8}};
    write_sharded("bad", t, (const int[]){0, 1}, 1);
    write_text("bad/model-00001-of-00001.safetensors", "GGUF\3\0\0\0 not really");
    char path[600];
    snprintf(path, sizeof path, "%s/bad/model.safetensors.index.json", dir);
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s != TPORT_STATUS_OK && strstr(tport_last_error(), "model-00001-of-00001.safetensors"), "bad shard: %s",
          tport_last_error());
    /* a shard that is itself an index (naming itself): refused, not read recursively */
    const char *self = "{\"weight_map\": {\"model.norm.weight\": \"loop.safetensors\"}}";
    write_text("bad/model.safetensors.index.json", self);
    write_text("bad/loop.safetensors", self);
    s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "where a shard was expected") &&
              strstr(tport_last_error(), "loop.safetensors"),
          "an index as a shard: %s", tport_last_error());
    /* a shard that the index beside it does not list */
    expect_refused("shard not listed", "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\"}}", "bad/" SHARD2,
                   "does not list", SHARD2);
    /* from memory the index is checked, the shards cannot be read */
    const char *ok = "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\"}}";
    s = tport_model_file_open_memory(ok, strlen(ok), "mem-index", &mf);
    CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "from memory"), "from memory: %s",
          tport_last_error());
    const char *esc = "{\"weight_map\": {\"model.norm.weight\": \"../../etc/x.safetensors\"}}";
    s = tport_model_file_open_memory(esc, strlen(esc), "mem-index", &mf);
    CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "plain file name"), "from memory, escape: %s",
          tport_last_error());
    /* a folder with no model */
    snprintf(path, sizeof path, "%s/empty", dir);
    mkdir(path, 0755);
    s = tport_model_file_open(path, &mf);
    CHECK(s != TPORT_STATUS_OK && strstr(tport_last_error(), "model.safetensors.index.json"), "empty folder: %s",
          tport_last_error());
}

/* ---- the real tiny llama in Hugging Face's layout -------------------------- */

/* GGUF's name -> Hugging Face's. */
static bool hf_name(const char *g, char *out, size_t cap) {
    static const char *const map[][2] = {
        {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"},   {"attn_v", "self_attn.v_proj"},
        {"attn_output", "self_attn.o_proj"}, {"attn_norm", "input_layernorm"}, {"ffn_norm", "post_attention_layernorm"},
        {"ffn_gate", "mlp.gate_proj"},  {"ffn_up", "mlp.up_proj"},         {"ffn_down", "mlp.down_proj"}};
    if (!strcmp(g, "token_embd.weight"))
        return snprintf(out, cap, "model.embed_tokens.weight") > 0;
    if (!strcmp(g, "output_norm.weight"))
        return snprintf(out, cap, "model.norm.weight") > 0;
    if (!strcmp(g, "output.weight"))
        return snprintf(out, cap, "lm_head.weight") > 0;
    int layer, n = 0;
    char part[64];
    if (sscanf(g, "blk.%d.%63[a-z_].weight%n", &layer, part, &n) != 2 || g[n])
        return false;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(part, map[i][0]))
            return snprintf(out, cap, "model.layers.%d.%s.weight", layer, map[i][1]) > 0;
    return false;
}

/* Meta/GGUF q/k rows -> Hugging Face's rotate-half order (the reader
 * un-permutes them back): HF row h*hd + j*hd/2 + i = row h*hd + 2i + j. */
static void *hf_permute(const tport_mf_tensor *t, uint32_t n_head) {
    int64_t rows = t->ne[1], hd = rows / n_head;
    size_t rb = (size_t)(t->nbytes / (uint64_t)rows);
    uint8_t *out = malloc((size_t)t->nbytes);
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r / hd, rem = r % hd, i = rem / 2, j = rem % 2;
        memcpy(out + (size_t)(h * hd + j * (hd / 2) + i) * rb, (const uint8_t *)t->data + (size_t)r * rb, rb);
    }
    return out;
}

static void ids_of(const char *model, char *ids, size_t cap) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s --prompt-ids 1,2,3 -n 8 --ids --temp 0", model);
    int st = run_q(cmd, ids, cap, true);
    CHECK(st == 0 && strchr(ids, ','), "run %s: %d %s", model, st, ids);
}

static void test_real(void) {
    char buf[512];
    const char *src = test_shared_path("models/llama-2-tiny-random.gguf", buf, sizeof buf);
    if (!src) {
        printf("sharded real model: skipped (llama-2-tiny-random.gguf absent)\n");
        return;
    }
    tport_model_file *g = NULL;
    CHECK(tport_model_file_open(src, &g) == TPORT_STATUS_OK, "open %s", src);
    if (!g)
        return;
    st_tensor *t = calloc((size_t)g->n_tensors, sizeof *t);
    void **owned = calloc((size_t)g->n_tensors, sizeof *owned);
    bool ok = true;
    for (int i = 0; i < g->n_tensors; i++) {
        const tport_mf_tensor *x = &g->tensors[i];
        ok = ok && hf_name(x->name, t[i].name, sizeof t[i].name) && (x->type == TPORT_TYPE_F32 || x->type == TPORT_TYPE_F16);
        t[i].dtype = x->type == TPORT_TYPE_F32 ? "F32" : "F16";
        t[i].n_dims = x->n_dims;
        for (int d = 0; d < x->n_dims; d++)
            t[i].shape[d] = x->ne[x->n_dims - 1 - d];
        t[i].data = x->data;
        t[i].nbytes = (size_t)x->nbytes;
        bool q = strstr(x->name, "attn_q.weight") != NULL, k = strstr(x->name, "attn_k.weight") != NULL;
        if (q || k)
            t[i].data = owned[i] = hf_permute(x, q ? g->hp.n_head : g->hp.n_head_kv);
    }
    CHECK(ok, "the real model maps to Hugging Face names and dtypes");
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"model_type\": \"llama\", \"hidden_size\": %u, \"intermediate_size\": %u, \"num_hidden_layers\": %u, "
             "\"num_attention_heads\": %u, \"num_key_value_heads\": %u, \"vocab_size\": %u, "
             "\"max_position_embeddings\": %u, \"rms_norm_eps\": %g}",
             g->hp.n_embd, g->hp.n_ff, g->hp.n_layer, g->hp.n_head, g->hp.n_head_kv, g->hp.n_vocab, g->hp.n_ctx,
             (double)g->hp.norm_eps);
    char path[600];
    snprintf(path, sizeof path, "%s/hf1", dir);
    mkdir(path, 0755);
    write_st("hf1/model.safetensors", t, 0, g->n_tensors);
    write_text("hf1/config.json", cfg);
    int cut[4] = {0, g->n_tensors / 3, 2 * g->n_tensors / 3, g->n_tensors};
    write_sharded("hf3", t, cut, 3);
    write_text("hf3/config.json", cfg);

    tport_model_file *one = NULL;
    snprintf(path, sizeof path, "%s/hf1/model.safetensors", dir);
    CHECK(tport_model_file_open(path, &one) == TPORT_STATUS_OK, "one file: %s", tport_last_error());
    if (one) {
        snprintf(path, sizeof path, "%s/hf3", dir);
        check_same("real, the folder", path, one, 3);
        /* un-permuted back: the q/k bytes are the GGUF file's again */
        const tport_mf_tensor *a = tport_model_file_find(one, "blk.0.attn_q.weight"),
                              *b = tport_model_file_find(g, "blk.0.attn_q.weight");
        CHECK(a && b && a->nbytes == b->nbytes && !memcmp(a->data, b->data, (size_t)a->nbytes),
              "q un-permuted to the GGUF file's bytes");
    }
    tport_model_file_close(one);
    static char want[4096], got[4096], out[1 << 16];
    ids_of(src, want, sizeof want);
    snprintf(path, sizeof path, "%s/hf1", dir);
    ids_of(path, got, sizeof got);
    CHECK(!strcmp(want, got), "one safetensors file gives the GGUF file's ids:\n%s\nvs\n%s", want, got);
    snprintf(path, sizeof path, "%s/hf3", dir);
    ids_of(path, got, sizeof got);
    CHECK(!strcmp(want, got), "the sharded folder gives the same ids:\n%s\nvs\n%s", want, got);
    snprintf(path, sizeof path, "%s/hf3/model-00003-of-00003.safetensors", dir);
    ids_of(path, got, sizeof got);
    CHECK(!strcmp(want, got), "the last shard gives the same ids:\n%s\nvs\n%s", want, got);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, TPORT_CLI " info %s/hf3/model.safetensors.index.json", dir);
    CHECK(run_q(cmd, out, sizeof out, false) == 0 && strstr(out, "files:") && strstr(out, "model-00002-of-00003"),
          "info lists the shards: %.500s", out);
    for (int i = 0; i < g->n_tensors; i++)
        free(owned[i]);
    free(owned);
    free(t);
    tport_model_file_close(g);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/tport-shard-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    test_synthetic();
    test_hostile();
    test_real();
    char cmd[400], out[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    run_q(cmd, out, sizeof out, true);
    return test_finish("test_formats_sharded");
}
