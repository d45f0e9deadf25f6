/* The real files in ../shared/models (written by other people's tools):
 * read them and compare with the facts their README states. */
#include <math.h>

#include "formats/model_file.h"
#include "../test_util.h"

static int tested;

/* Opens ../shared/models/NAME; NULL (after saying "skipped") when absent or
 * (after a failed check) when it does not open. */
static tport_model_file *open_shared_model(const char *name) {
    char rel[256], buf[512];
    snprintf(rel, sizeof rel, "models/%s", name);
    const char *path = test_shared_path(rel, buf, sizeof buf);
    if (!path) {
        printf("%s: skipped (absent)\n", name);
        return NULL;
    }
    tested++;
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "open %s: %s", name, tport_last_error());
    return s == TPORT_STATUS_OK ? mf : NULL;
}

static void test_stories260k(void) {
    tport_model_file *mf = open_shared_model("stories260K.bin");
    if (!mf)
        return;
    const tport_mf_hparams *hp = &mf->hp;
    /* README: dim 64, 5 layers, 8 heads, 4 KV heads, vocab 512, seq len 512 */
    CHECK(mf->container == TPORT_CONTAINER_LLAMA2C && mf->version == 0, "legacy llama2.c");
    CHECK(hp->n_embd == 64 && hp->n_layer == 5 && hp->n_head == 8 && hp->n_head_kv == 4 && hp->n_vocab == 512 &&
              hp->n_ctx == 512,
          "hparams %u %u %u %u %u %u", hp->n_embd, hp->n_layer, hp->n_head, hp->n_head_kv, hp->n_vocab, hp->n_ctx);
    CHECK(hp->n_rot == 8 && hp->rope_mode == TPORT_ROPE_NORMAL, "rope");
    CHECK(mf->n_tensors == 2 + 9 * 5, "shared classifier: %d tensors", mf->n_tensors);
    CHECK(tport_model_file_find(mf, "output.weight") == NULL, "no separate classifier");
    const tport_mf_tensor *g = tport_model_file_find(mf, "blk.4.ffn_gate.weight");
    const tport_mf_tensor *d = tport_model_file_find(mf, "blk.4.ffn_down.weight");
    CHECK(g && d && g->ne[0] == 64 && g->ne[1] == hp->n_ff && d->ne[0] == hp->n_ff && d->ne[1] == 64, "ffn shapes");
    /* trained weights: norms are finite and mostly positive, embeddings finite */
    const tport_mf_tensor *n = tport_model_file_find(mf, "output_norm.weight");
    int pos = 0, finite = 1;
    for (int i = 0; n && i < 64; i++) {
        float v = ((const float *)n->data)[i];
        pos += v > 0;
        finite &= isfinite(v);
    }
    CHECK(n && finite && pos > 48, "output_norm looks trained (%d positive)", pos);
    const tport_mf_tensor *e = tport_model_file_find(mf, "token_embd.weight");
    double sum2 = 0;
    for (int i = 0; e && i < 64 * 512; i++)
        sum2 += (double)((const float *)e->data)[i] * ((const float *)e->data)[i];
    CHECK(e && isfinite(sum2) && sum2 > 0, "embedding finite and non-zero");
    /* the last tensor ends where the RoPE tables begin */
    const tport_mf_tensor *last = &mf->tensors[mf->n_tensors - 1];
    CHECK(last->offset + last->nbytes + 2 * 512 * 4 * 4 == mf->file_size, "layout covers the file");
    tport_model_file_close(mf);
}

static void test_tiny_gguf(void) {
    tport_model_file *mf = open_shared_model("llama-2-tiny-random.gguf");
    if (!mf)
        return;
    CHECK(mf->container == TPORT_CONTAINER_GGUF && mf->version == 3, "GGUF v3");
    CHECK(!strcmp(mf->arch, "llama"), "arch %s", mf->arch);
    const tport_vocab *v = &mf->vocab;
    CHECK(v->n_tokens == 32000 && mf->hp.n_vocab == 32000, "32000 tokens");
    CHECK(!strcmp(v->model, "llama"), "tokenizer model %s", v->model);
    CHECK(v->n_tokens == 32000 && !strcmp(v->tokens[0], "<unk>") && !strcmp(v->tokens[1], "<s>") &&
              !strcmp(v->tokens[2], "</s>"),
          "special tokens");
    CHECK(v->bos == 1 && v->eos == 2, "bos %d eos %d", v->bos, v->eos);
    CHECK(v->scores && v->token_type && v->token_type[1] == 3, "scores, token types (<s> is control)");
    /* byte tokens <0x00>..<0xFF> follow the three specials in the llama vocabulary */
    CHECK(v->n_tokens > 258 && !strcmp(v->tokens[3], "<0x00>") && v->token_type[3] == 6, "byte tokens");
    const tport_mf_tensor *e = tport_model_file_find(mf, "token_embd.weight");
    CHECK(e && e->ne[0] == mf->hp.n_embd && e->ne[1] == 32000, "token_embd shape");
    uint64_t end = 0;
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        CHECK(t->offset >= mf->data_offset && t->offset % mf->alignment == 0, "tensor %s aligned", t->name);
        if (t->offset + t->nbytes > end)
            end = t->offset + t->nbytes;
    }
    CHECK(end <= mf->file_size && end + mf->alignment > mf->file_size, "tensor data reaches the end of the file");
    CHECK(tport_model_file_find(mf, "blk.0.attn_q.weight") && tport_model_file_find(mf, "output_norm.weight"),
          "llama tensor names");
    tport_model_file_close(mf);
}

int main(void) {
    test_stories260k();
    test_tiny_gguf();
    if (!tested)
        test_skip("test_formats_real_files", "no files in ../shared/models");
    return test_finish("test_formats_real_files");
}
