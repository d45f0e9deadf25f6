/* `tport synth --vocab-from`: the tokenizer of a real GGUF file
 * (llama-2-tiny-random.gguf, 32000 tokens) is copied exactly, and the
 * vocabulary size of the model follows it.  A file that is not GGUF is
 * refused. */
#include "../test_util.h"
#include "formats/model_file.h"
#include "tool_run.h"

#define NAME "test_synth_vocab_from"

int main(void) {
    char src[1024], other[1024], dir[4096], out[4200], args[9000];
    if (!test_shared_path("models/llama-2-tiny-random.gguf", src, sizeof src))
        test_skip(NAME, "../shared/models/llama-2-tiny-random.gguf absent");
    if (!tool_scratch_dir(dir, sizeof dir, "vocab"))
        return 1;
    snprintf(out, sizeof out, "%s/v.gguf", dir);
    snprintf(args, sizeof args, "synth --dim 64 --layers 1 --heads 4 --ff 64 --vocab-from '%s' -o '%s' >/dev/null",
             src, out);
    CHECK(tool_run(args) == 0, "synth --vocab-from failed");

    tport_model_file *a = NULL, *b = NULL;
    CHECK(tport_model_file_open(src, &a) == TPORT_STATUS_OK, "open %s: %s", src, tport_last_error());
    CHECK(tport_model_file_open(out, &b) == TPORT_STATUS_OK, "open %s: %s", out, tport_last_error());
    if (a && b) {
        const tport_vocab *va = &a->vocab, *vb = &b->vocab;
        CHECK(va->n_tokens == 32000 && vb->n_tokens == va->n_tokens, "tokens %d -> %d", va->n_tokens, vb->n_tokens);
        CHECK(!strcmp(va->model, vb->model), "tokenizer model %s -> %s", va->model, vb->model);
        CHECK(va->bos == vb->bos && va->eos == vb->eos && va->unk == vb->unk, "special ids differ");
        int same_text = va->n_tokens == vb->n_tokens, same_score = same_text, same_type = same_text;
        for (int32_t i = 0; same_text && i < va->n_tokens; i++) {
            same_text &= va->token_len[i] == vb->token_len[i] && !memcmp(va->tokens[i], vb->tokens[i], va->token_len[i]);
            same_score &= !va->scores || (vb->scores && va->scores[i] == vb->scores[i]);
            same_type &= !va->token_type || (vb->token_type && va->token_type[i] == vb->token_type[i]);
        }
        CHECK(same_text && same_score && same_type, "token texts %d, scores %d, types %d", same_text, same_score,
              same_type);
        CHECK(b->hp.n_vocab == 32000, "n_vocab %u", b->hp.n_vocab);
        const tport_mf_tensor *e = tport_model_file_find(b, "token_embd.weight");
        const tport_mf_tensor *o = tport_model_file_find(b, "output.weight");
        CHECK(e && e->ne[1] == 32000 && o && o->ne[1] == 32000, "embedding/output rows follow the vocabulary");
    }
    tport_model_file_close(a);
    tport_model_file_close(b);
    remove(out);

    if (test_shared_path("models/stories260K.bin", other, sizeof other)) {
        snprintf(out, sizeof out, "%s/w.gguf", dir);
        snprintf(args, sizeof args, "synth --dim 64 --vocab-from '%s' -o '%s' >/dev/null 2>&1", other, out);
        CHECK(tool_run(args) != 0, "--vocab-from a llama2.c checkpoint accepted");
        remove(out);
    }
    rmdir(dir);
    return test_finish(NAME);
}
