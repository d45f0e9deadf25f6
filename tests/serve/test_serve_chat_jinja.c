/* tport serve with a model's own chat template: a copy of the tiny llama
 * GGUF gets a custom tokenizer.chat_template, and the server's chat path
 * (chat_jinja.c) must render it through the Jinja engine with the
 * vocabulary's BOS/EOS texts, tokenize special tokens, not double the
 * BOS, pass a template's refusal on as the client's error, and decline a
 * template that cannot render at all (the server then falls back to the
 * marker-detected formats). */
#include <unistd.h>

#include "chat_jinja.h"
#include "formats/gguf_write.h"
#include "formats/model_file.h"
#include "test_util.h"

static const char TEMPLATE[] =
    "{{ bos_token }}{% for m in messages %}"
    "{% if m.role == 'system' and not loop.first %}{{ raise_exception('system must come first') }}{% endif %}"
    "[{{ m.role | upper }}] {{ m.content | trim }}{% if m.role == 'assistant' %}{{ eos_token }}{% endif %}{{ '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}[ASSISTANT]{% endif %}";

/* The GGUF at src with tokenizer.chat_template set to tmpl, written to dst. */
static bool with_template(const char *src, const char *dst, const char *tmpl) {
    tport_model_file *mf = NULL;
    if (tport_model_file_open(src, &mf) != TPORT_STATUS_OK)
        return false;
    tport_gguf_writer *w = tport_gguf_writer_new();
    bool ok = w != NULL;
    for (int i = 0; ok && i < mf->n_kv; i++)
        if (strcmp(mf->kv[i].key, "general.alignment") && strcmp(mf->kv[i].key, "tokenizer.chat_template"))
            ok = tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]) == TPORT_STATUS_OK;
    ok = ok && tport_gguf_set_str(w, "tokenizer.chat_template", tmpl) == TPORT_STATUS_OK;
    for (int i = 0; ok && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        ok = tport_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes) == TPORT_STATUS_OK;
    }
    ok = ok && tport_gguf_write(w, dst) == TPORT_STATUS_OK;
    tport_gguf_writer_free(w);
    tport_model_file_close(mf);
    return ok;
}

int main(int argc, char **argv) {
    char src[1024], dst[1100];
    if (!test_shared_path("models/llama-2-tiny-random.gguf", src, sizeof src))
        test_skip("test_serve_chat_jinja", "models/llama-2-tiny-random.gguf is absent");
    /* --write-gguf PATH: only write the model with the template, for
     * test_serve_curl.sh to serve */
    if (argc == 3 && !strcmp(argv[1], "--write-gguf"))
        return with_template(src, argv[2], TEMPLATE) ? 0 : 1;
    /* --write-gguf PATH TEMPLATE-FILE: the model with a real template
     * (test_serve_tools.sh: the templates of ../shared/models/templates) */
    if (argc == 4 && !strcmp(argv[1], "--write-gguf")) {
        FILE *f = fopen(argv[3], "rb");
        char *t = f ? malloc(1 << 20) : NULL;
        size_t n = t ? fread(t, 1, (1 << 20) - 1, f) : 0;
        if (f)
            fclose(f);
        if (!t)
            return 1;
        t[n] = 0;
        bool ok = with_template(src, argv[2], t);
        free(t);
        return ok ? 0 : 1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dst, sizeof dst, "%s/tport-chat-jinja-%d.gguf", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    CHECK(with_template(src, dst, TEMPLATE), "writing %s: %s", dst, tport_last_error());
    tport_model *m = tport_model_load(dst, NULL);
    unlink(dst);
    CHECK(m != NULL, "%s", tport_last_error());
    if (!m)
        return test_finish("test_serve_chat_jinja");

    const char *tmpl = tport_model_meta_str(m, "tokenizer.chat_template");
    CHECK(tmpl && !strcmp(tmpl, TEMPLATE), "the template is in the file");
    chat_jinja j;
    CHECK(chat_jinja_init(&j, m, tmpl), "the template renders: %s", tport_last_error());
    CHECK(!strcmp(j.bos, "<s>") && !strcmp(j.eos, "</s>"), "bos/eos texts '%s' '%s'", j.bos, j.eos);

    serve_message msgs[] = {{.role = SERVE_ROLE_SYSTEM, .content = "Be brief."},
                            {.role = SERVE_ROLE_USER, .content = "  Hi  "},
                            {.role = SERVE_ROLE_ASSISTANT, .content = "Hello."},
                            {.role = SERVE_ROLE_USER, .content = "Bye"}};
    serve_error err;
    size_t len = 0;
    char *text = chat_jinja_render(&j, msgs, 4, true, NULL, &len, &err);
    const char *want = "<s>[SYSTEM] Be brief.\n[USER] Hi\n[ASSISTANT] Hello.</s>\n[USER] Bye\n[ASSISTANT]";
    CHECK(text && !strcmp(text, want) && len == strlen(want), "rendered '%s'", text ? text : err.message);
    free(text);

    /* tokens: the template's <s> and </s> are the special tokens, once */
    tport_token *ids = NULL;
    int32_t n = chat_jinja_prompt(m, &j, msgs, 4, NULL, &ids, &err);
    CHECK(n > 4, "%d tokens: %s", (int)n, n < 0 ? err.message : "");
    if (n > 4) {
        CHECK(ids[0] == tport_model_bos(m) && ids[1] != tport_model_bos(m), "one BOS, first");
        int eos = 0;
        for (int32_t i = 0; i < n; i++)
            eos += ids[i] == tport_model_eos(m);
        CHECK(eos == 1, "the assistant turn's </s> is the EOS token (%d found)", eos);
        tport_token ref[256];
        int32_t k = tport_tokenizer_tokenize(tport_model_tokenizer(m), want, strlen(want), false, true, ref, 256);
        CHECK(k == n && !memcmp(ref, ids, (size_t)n * sizeof *ids), "the same tokens as the text (%d vs %d)", (int)k, (int)n);
    }
    free(ids);

    /* the template refuses a conversation: the client's error, with its message */
    serve_message late_system[] = {{.role = SERVE_ROLE_USER, .content = "Hi"},
                                   {.role = SERVE_ROLE_SYSTEM, .content = "late"}};
    n = chat_jinja_prompt(m, &j, late_system, 2, NULL, &ids, &err);
    CHECK(n == -1 && strstr(err.message, "system must come first") && err.param && !strcmp(err.param, "messages"),
          "refusal: %d '%s'", (int)n, err.message);
    chat_jinja_free(&j);

    /* a template that never renders is declined, so the server falls back */
    CHECK(!chat_jinja_init(&j, m, "{{ raise_exception('unsupported') }}"), "a failing template is declined");
    CHECK(!chat_jinja_init(&j, m, "{% for %}"), "a broken template is declined");
    tport_model_free(m);
    return test_finish("test_serve_chat_jinja");
}
