/* Model files are untrusted: a GGUF whose tensors or hyperparameters do not
 * fit together must be refused by tport_model_load with a message naming
 * the problem, never crash.  A consistent variant of the same tiny file
 * loads and evaluates (no ../shared data needed). */
#include "../test_util.h"
#include "formats/gguf_write.h"
#include "tport/tport.h"

enum { E = 8, FF = 16, V = 16 };

typedef struct variant {
    const char *what, *expect; /* expect: a word of the error, NULL = loads */
    const char *arch;
    uint32_t layers, heads, heads_kv, rot;
    const char *skip;          /* tensor left out                        */
    const char *bad;           /* tensor written with a wrong shape       */
} variant;

static float data[V * E * 4];

static tport_status add(tport_gguf_writer *w, const variant *v, const char *name, int64_t ne0, int64_t ne1) {
    if (v->skip && !strcmp(v->skip, name))
        return TPORT_STATUS_OK;
    if (v->bad && !strcmp(v->bad, name))
        ne1 = ne1 > 1 ? ne1 - 1 : 2; /* one row short (or one too many) */
    int64_t ne[2] = {ne0, ne1};
    return tport_gguf_add_tensor(w, name, TPORT_TYPE_F32, ne1 > 1 ? 2 : 1, ne, data,
                                 (uint64_t)(ne0 * ne1) * sizeof(float));
}

static int write_model(const char *path, const variant *v) {
    tport_gguf_writer *w = tport_gguf_writer_new();
    if (!w)
        return -1;
    tport_gguf_set_str(w, "general.architecture", v->arch);
    char key[64];
    snprintf(key, sizeof key, "%s.block_count", v->arch);
    tport_gguf_set_u32(w, key, v->layers);
    snprintf(key, sizeof key, "%s.embedding_length", v->arch);
    tport_gguf_set_u32(w, key, E);
    snprintf(key, sizeof key, "%s.feed_forward_length", v->arch);
    tport_gguf_set_u32(w, key, FF);
    snprintf(key, sizeof key, "%s.attention.head_count", v->arch);
    tport_gguf_set_u32(w, key, v->heads);
    snprintf(key, sizeof key, "%s.attention.head_count_kv", v->arch);
    tport_gguf_set_u32(w, key, v->heads_kv);
    snprintf(key, sizeof key, "%s.rope.dimension_count", v->arch);
    tport_gguf_set_u32(w, key, v->rot);
    snprintf(key, sizeof key, "%s.context_length", v->arch);
    tport_gguf_set_u32(w, key, 32);
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", v->arch);
    tport_gguf_set_f32(w, key, 1e-5f);
    int64_t kv = v->heads && v->heads_kv ? (int64_t)E / v->heads * v->heads_kv : E;
    tport_status st = add(w, v, "token_embd.weight", E, V);
    st = st ? st : add(w, v, "output_norm.weight", E, 1);
    st = st ? st : add(w, v, "output.weight", E, V);
    /* always one layer of tensors, whatever block_count says */
    st = st ? st : add(w, v, "blk.0.attn_norm.weight", E, 1);
    st = st ? st : add(w, v, "blk.0.attn_q.weight", E, E);
    st = st ? st : add(w, v, "blk.0.attn_k.weight", E, kv);
    st = st ? st : add(w, v, "blk.0.attn_v.weight", E, kv);
    st = st ? st : add(w, v, "blk.0.attn_output.weight", E, E);
    st = st ? st : add(w, v, "blk.0.ffn_norm.weight", E, 1);
    st = st ? st : add(w, v, "blk.0.ffn_gate.weight", E, FF);
    st = st ? st : add(w, v, "blk.0.ffn_up.weight", E, FF);
    st = st ? st : add(w, v, "blk.0.ffn_down.weight", FF, E);
    st = st ? st : tport_gguf_write(w, path);
    tport_gguf_writer_free(w);
    return st == TPORT_STATUS_OK ? 0 : -1;
}

int main(void) {
    unsigned long long rng = 5;
    for (size_t i = 0; i < sizeof data / sizeof data[0]; i++)
        data[i] = 0.5f * test_rng_uniform(&rng);
    const variant variants[] = {
        {"consistent", NULL, "llama", 1, 2, 2, 4, NULL, NULL},
        {"grouped-query", NULL, "llama", 1, 2, 1, 4, NULL, NULL},
        {"attn_q one row short", "attn_q", "llama", 1, 2, 2, 4, NULL, "blk.0.attn_q.weight"},
        {"ffn_down missing", "ffn_down", "llama", 1, 2, 2, 4, "blk.0.ffn_down.weight", NULL},
        {"output with another vocabulary", "output.weight", "llama", 1, 2, 2, 4, NULL, "output.weight"},
        {"3 heads for n_embd 8", "heads", "llama", 1, 3, 3, 2, NULL, NULL},
        {"2 heads over 3 kv heads", "heads", "llama", 1, 2, 3, 4, NULL, NULL},
        {"rope wider than a head", "rope", "llama", 1, 2, 2, 6, NULL, NULL},
        {"two layers declared, one stored", "blk.1", "llama", 2, 2, 2, 4, NULL, NULL},
        {"no layers", "hyperparameters", "llama", 0, 2, 2, 4, NULL, NULL},
        {"another architecture", "architecture", "rwkv6", 1, 2, 2, 4, NULL, NULL},
        {"no token embedding", "token_embd", "llama", 1, 2, 2, 4, "token_embd.weight", NULL},
    };
    const char *path = "test_model_hostile.gguf";
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const variant *v = &variants[i];
        CHECK(write_model(path, v) == 0, "%s: cannot write the file: %s", v->what, tport_last_error());
        tport_model *m = tport_model_load(path, NULL);
        if (!v->expect) {
            CHECK(m != NULL, "%s: load failed: %s", v->what, tport_last_error());
            tport_session *s = m ? tport_session_new(m, NULL) : NULL;
            tport_token ids[3] = {1, 5, 7};
            CHECK(s && tport_session_eval(s, ids, 3) == TPORT_STATUS_OK && tport_session_logits(s),
                  "%s: eval failed: %s", v->what, tport_last_error());
            CHECK(tport_model_n_vocab(m) == V && tport_model_n_ctx(m) == 32, "%s: shape", v->what);
            CHECK(tport_tokenize(m, "x", true, ids, 3) == -1, "%s: no vocabulary, no tokenizing", v->what);
            tport_session_free(s);
        } else {
            CHECK(m == NULL && strstr(tport_last_error(), v->expect),
                  "%s: want an error about '%s', got %s", v->what, v->expect,
                  m ? "a loaded model" : tport_last_error());
        }
        tport_model_free(m);
    }
    remove(path);
    return test_finish("test_model_hostile");
}
