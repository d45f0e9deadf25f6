/* The model's chat template through tport_template_render: the request's
 * messages become the JSON context Hugging Face would pass (messages,
 * tools and documents as None, add_generation_prompt, bos_token,
 * eos_token), and the output is tokenized with special tokens parsed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chat_jinja.h"

static char *token_text(const tport_model *m, tport_token id) {
    size_t n = 0;
    const char *t = id >= 0 ? tport_token_text(m, id, &n) : NULL;
    char *s = malloc(n + 1);
    if (s) {
        if (t)
            memcpy(s, t, n);
        s[t ? n : 0] = 0;
    }
    return s;
}

static int32_t fail(serve_error *err, const char *msg) {
    snprintf(err->message, sizeof err->message, "%s", msg);
    err->param = NULL;
    return -1;
}

bool chat_jinja_init(chat_jinja *j, const tport_model *m, const char *tmpl) {
    j->tmpl = tmpl;
    j->bos = token_text(m, tport_model_bos(m));
    j->eos = token_text(m, tport_model_eos(m));
    if (!j->bos || !j->eos) {
        chat_jinja_free(j);
        return false;
    }
    serve_message probe = {.role = SERVE_ROLE_USER, .content = "Hello"};
    serve_error err;
    size_t len;
    char *text = chat_jinja_render(j, &probe, 1, true, NULL, &len, &err);
    free(text);
    if (!text)
        chat_jinja_free(j);
    return text != NULL;
}

void chat_jinja_free(chat_jinja *j) {
    free(j->bos);
    free(j->eos);
    j->bos = j->eos = NULL;
}

static char *context_json(const chat_jinja *j, const serve_message *msgs, int n, bool add_generation_prompt,
                          const char *tools_json) {
    static const char *const roles[] = {"system", "user", "assistant", "tool"};
    cJSON *root = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(root, "messages");
    for (int i = 0; list && i < n; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddItemToArray(list, m);
        cJSON_AddStringToObject(m, "role", roles[msgs[i].role]);
        if (msgs[i].content_null && msgs[i].tool_json)
            cJSON_AddNullToObject(m, "content"); /* an assistant turn of tool calls only, as OpenAI sends it */
        else
            cJSON_AddStringToObject(m, "content", msgs[i].content);
        cJSON *extra = msgs[i].tool_json ? cJSON_Parse(msgs[i].tool_json) : NULL;
        for (cJSON *e = extra ? extra->child : NULL; e; e = e->next)
            cJSON_AddItemToObject(m, e->string, cJSON_Duplicate(e, true));
        cJSON_Delete(extra);
    }
    cJSON *tools = tools_json ? cJSON_Parse(tools_json) : NULL;
    if (tools)
        cJSON_AddItemToObject(root, "tools", tools);
    else
        cJSON_AddNullToObject(root, "tools");
    cJSON_AddNullToObject(root, "documents");
    cJSON_AddBoolToObject(root, "add_generation_prompt", add_generation_prompt);
    cJSON_AddStringToObject(root, "bos_token", j->bos);
    cJSON_AddStringToObject(root, "eos_token", j->eos);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

char *chat_jinja_render(const chat_jinja *j, const serve_message *msgs, int n, bool add_generation_prompt,
                        const char *tools_json, size_t *len, serve_error *err) {
    char *ctx = context_json(j, msgs, n, add_generation_prompt, tools_json);
    if (!ctx) {
        fail(err, "out of memory");
        return NULL;
    }
    char *text = tport_template_render(j->tmpl, strlen(j->tmpl), ctx, NULL, len);
    free(ctx);
    if (!text) {
        snprintf(err->message, sizeof err->message, "%s", tport_last_error());
        err->param = "messages";
    }
    return text;
}

int32_t chat_jinja_prompt(const tport_model *m, const chat_jinja *j, const serve_message *msgs, int n,
                          const char *tools_json, tport_token **out, serve_error *err) {
    const tport_tokenizer *tk = tport_model_tokenizer(m);
    if (!tk)
        return fail(err, "the model has no vocabulary");
    size_t len;
    char *text = chat_jinja_render(j, msgs, n, true, tools_json, &len, err);
    if (!text)
        return -1;
    /* a template that writes {{ bos_token }} has its BOS; adding another
     * would give the model two */
    size_t bl = strlen(j->bos);
    bool add_special = !(bl && len >= bl && !memcmp(text, j->bos, bl));
    int32_t k = tport_tokenizer_tokenize(tk, text, len, add_special, true, NULL, 0);
    *out = k >= 0 ? malloc((size_t)(k ? k : 1) * sizeof **out) : NULL;
    if (*out)
        tport_tokenizer_tokenize(tk, text, len, add_special, true, *out, k);
    free(text);
    if (k < 0)
        return fail(err, tport_last_error());
    return *out ? k : fail(err, "out of memory");
}
