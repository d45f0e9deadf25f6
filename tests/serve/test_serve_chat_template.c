/* Chat templates of tport serve against llama.cpp: for real model
 * templates (data/chat_template_refs.json, taken from llama.cpp's own
 * test-chat-template.cpp), the detected family and the rendered prompt
 * must be what llama.cpp's llama_chat_apply_template gives. */
#include <cjson/cJSON.h>

#include "chat_template.h"
#include "test_util.h"

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) == (size_t)n)
        s[n] = 0;
    else {
        free(s);
        s = NULL;
    }
    fclose(f);
    return s;
}

static serve_role role_of(const char *r) {
    return !strcmp(r, "system") ? SERVE_ROLE_SYSTEM : !strcmp(r, "user") ? SERVE_ROLE_USER : SERVE_ROLE_ASSISTANT;
}

/* Content bytes must never count as markup (no control tokens from users). */
static bool content_is_plain(const chat_prompt *p, const serve_message *m, int n) {
    for (int i = 0; i < n; i++) {
        const char *hit = strstr(p->text, m[i].content);
        for (size_t k = 0; hit && k < strlen(m[i].content); k++)
            if (p->markup[(size_t)(hit - p->text) + k])
                return false;
    }
    return true;
}

int main(void) {
    char *json = read_text(TPORT_SERVE_DATA "/chat_template_refs.json");
    CHECK(json != NULL, "cannot read %s", TPORT_SERVE_DATA "/chat_template_refs.json");
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    CHECK(root != NULL, "bad JSON");
    const cJSON *conv = cJSON_GetObjectItem(root, "conversation"), *cases = cJSON_GetObjectItem(root, "cases");
    serve_message msgs[16];
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, conv) {
        msgs[n].role = role_of(cJSON_GetArrayItem(e, 0)->valuestring);
        msgs[n].content = cJSON_GetArrayItem(e, 1)->valuestring;
        n++;
    }
    CHECK(n == 6, "conversation of %d messages", n);
    int n_cases = 0;
    cJSON_ArrayForEach(e, cases) {
        const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
        const char *format = cJSON_GetObjectItem(e, "format")->valuestring;
        const char *tmpl = cJSON_GetObjectItem(e, "template")->valuestring;
        const char *expected = cJSON_GetObjectItem(e, "expected")->valuestring;
        chat_format f = chat_from_name(format);
        CHECK(f != CHAT_UNKNOWN, "%s: unknown format %s", name, format);
        /* zephyr and the -tekken v7 are named, not in llama.cpp's cases */
        if (strcmp(format, "mistral-v3-tekken"))
            CHECK(chat_detect(tmpl) == f, "%s: detected %s, llama.cpp %s", name, chat_name(chat_detect(tmpl)), format);
        chat_prompt p;
        CHECK(chat_render(f, msgs, n, &p), "%s: render failed", name);
        CHECK(p.text && !strcmp(p.text, expected), "%s (%s):\n got      '%s'\n llama.cpp '%s'", name, format,
              p.text ? p.text : "(null)", expected);
        CHECK(content_is_plain(&p, msgs, n), "%s: message content marked as markup", name);
        chat_prompt_free(&p);
        n_cases++;
    }
    CHECK(n_cases >= 12, "only %d cases", n_cases);
    /* the tekken v3 template is told apart from v3 by its "[INST]" literal */
    CHECK(chat_detect("{{ \"[INST]\" + m }}[AVAILABLE_TOOLS]") == CHAT_MISTRAL_V3_TEKKEN, "v3-tekken");

    /* zephyr: HuggingFaceH4/zephyr-7b-beta's template markers; layout as
     * llama.cpp's LLM_CHAT_TEMPLATE_ZEPHYR */
    CHECK(chat_detect("{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
                      "message['content'] + eos_token }}{% endif %}<|assistant|>{{ '<|endoftext|>' }}") == CHAT_ZEPHYR,
          "zephyr detection");
    chat_prompt p;
    chat_render(CHAT_ZEPHYR, msgs + 1, 1, &p);
    CHECK(!strcmp(p.text, "<|user|>\nHello<|endoftext|>\n<|assistant|>\n"), "zephyr: '%s'", p.text);
    chat_prompt_free(&p);

    /* nothing recognisable: unknown, and the server falls back to chatml */
    CHECK(chat_detect(NULL) == CHAT_UNKNOWN && chat_detect("") == CHAT_UNKNOWN &&
          chat_detect("{{ messages }}") == CHAT_UNKNOWN, "unknown templates");
    CHECK(CHAT_DEFAULT == CHAT_CHATML, "default");
    for (int i = 0; i < CHAT_N_FORMATS; i++)
        CHECK(chat_from_name(chat_name((chat_format)i)) == i && strstr(chat_names(), chat_name((chat_format)i)),
              "name %d", i);
    CHECK(chat_from_name("jinja") == CHAT_UNKNOWN && chat_from_name(NULL) == CHAT_UNKNOWN, "bad names");
    /* the end-of-turn markers that stop generation */
    CHECK(!strcmp(chat_end_of_turn(CHAT_CHATML), "<|im_end|>") && !strcmp(chat_end_of_turn(CHAT_LLAMA3), "<|eot_id|>") &&
          !strcmp(chat_end_of_turn(CHAT_GEMMA), "<end_of_turn>") && !strcmp(chat_end_of_turn(CHAT_PHI3), "<|end|>"),
          "end of turn");
    cJSON_Delete(root);
    free(json);
    return test_finish("test_serve_chat_template");
}
