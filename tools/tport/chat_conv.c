/* The conversation of tport chat (see chat_conv.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_conv.h"
#include "commands.h"

/* llama.cpp's default when a model has no template */
static const char CHATML[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

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

/* A JSON string of s into f (the context's messages). */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p == '\r')
            fputs("\\r", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The template's context for the first n messages. */
static char *context_json(const chat_conv *c, int n, bool gen_prompt) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("{\"messages\": [", f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ", {\"role\": " : "{\"role\": ", f);
        json_str(f, c->msgs[i].role);
        fputs(", \"content\": ", f);
        json_str(f, c->msgs[i].content);
        fputc('}', f);
    }
    fprintf(f, "], \"tools\": null, \"documents\": null, \"add_generation_prompt\": %s, \"bos_token\": ",
            gen_prompt ? "true" : "false");
    json_str(f, c->bos);
    fputs(", \"eos_token\": ", f);
    json_str(f, c->eos);
    fputc('}', f);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}

int chat_conv_init(chat_conv *c, const tport_model *m, const char *tmpl_file) {
    memset(c, 0, sizeof *c);
    if (tmpl_file) {
        size_t size = 0;
        char *t = tool_read_all(tmpl_file, 1 << 20, &size);
        if (!t)
            return 2;
        char *z = malloc(size + 1); /* NUL-terminated */
        if (z) {
            memcpy(z, t, size);
            z[size] = 0;
        }
        free(t);
        if (!z)
            return tool_fail(2, "chat: out of memory");
        c->owned_tmpl = z;
        c->tmpl = c->owned_tmpl;
    } else {
        const char *t = tport_model_meta_str(m, "tokenizer.chat_template");
        c->tmpl = t && *t ? t : CHATML;
    }
    c->bos = token_text(m, tport_model_bos(m));
    c->eos = token_text(m, tport_model_eos(m));
    if (!c->bos || !c->eos)
        return tool_fail(2, "chat: out of memory");
    /* the template must render a conversation before the first message */
    chat_conv probe = *c;
    chat_msg hello = {"user", "Hello"};
    probe.msgs = &hello;
    probe.n = 1;
    char *ctx = context_json(&probe, 1, true);
    char *out = ctx ? tport_template_render(c->tmpl, strlen(c->tmpl), ctx, NULL, NULL) : NULL;
    free(ctx);
    if (!out)
        return tool_fail(2, "chat: the chat template does not render: %s (give one with --chat-template-file)",
                         tport_last_error());
    free(out);
    return 0;
}

void chat_conv_free(chat_conv *c) {
    for (int i = 0; i < c->n; i++) {
        free(c->msgs[i].role);
        free(c->msgs[i].content);
    }
    free(c->msgs);
    free(c->owned_tmpl);
    free(c->bos);
    free(c->eos);
    memset(c, 0, sizeof *c);
}

bool chat_conv_add(chat_conv *c, const char *role, const char *content) {
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        chat_msg *m = realloc(c->msgs, (size_t)cap * sizeof *m);
        if (!m)
            return false;
        c->msgs = m;
        c->cap = cap;
    }
    chat_msg *m = &c->msgs[c->n];
    m->role = strdup(role);
    m->content = strdup(content);
    if (!m->role || !m->content) {
        free(m->role);
        free(m->content);
        return false;
    }
    c->n++;
    return true;
}

void chat_conv_remove(chat_conv *c, int i) {
    if (i < 0 || i >= c->n)
        return;
    free(c->msgs[i].role);
    free(c->msgs[i].content);
    memmove(c->msgs + i, c->msgs + i + 1, (size_t)(c->n - i - 1) * sizeof *c->msgs);
    c->n--;
}

void chat_conv_clear(chat_conv *c) {
    int first = c->n && !strcmp(c->msgs[0].role, "system") ? 1 : 0;
    while (c->n > first)
        chat_conv_remove(c, c->n - 1);
}

/* The last occurrence of needle in the len bytes of text, or NULL. */
static const char *last_of(const char *text, size_t len, const char *needle) {
    size_t nl = strlen(needle);
    for (size_t i = len >= nl ? len - nl + 1 : 0; i-- > 0;)
        if (!memcmp(text + i, needle, nl))
            return text + i;
    return NULL;
}

int32_t chat_conv_tokens(const chat_conv *c, const tport_model *m, int n, bool gen_prompt, tport_token **out,
                         bool *thinking, char *err, size_t err_cap) {
    const tport_tokenizer *tk = tport_model_tokenizer(m);
    char *ctx = context_json(c, n, gen_prompt);
    size_t len = 0;
    char *text = ctx ? tport_template_render(c->tmpl, strlen(c->tmpl), ctx, NULL, &len) : NULL;
    free(ctx);
    if (!text) {
        snprintf(err, err_cap, "%s", tport_last_error());
        return -1;
    }
    if (thinking) {
        const char *open = last_of(text, len, "<think>"), *close = last_of(text, len, "</think>");
        *thinking = open && (!close || close < open);
    }
    /* a template that writes {{ bos_token }} has its BOS already */
    size_t bl = strlen(c->bos);
    bool add_special = !(bl && len >= bl && !memcmp(text, c->bos, bl));
    int32_t k = tport_tokenizer_tokenize(tk, text, len, add_special, true, NULL, 0);
    *out = k >= 0 ? malloc((size_t)(k ? k : 1) * sizeof **out) : NULL;
    if (*out)
        tport_tokenizer_tokenize(tk, text, len, add_special, true, *out, k);
    free(text);
    if (!*out) {
        snprintf(err, err_cap, "%s", k < 0 ? tport_last_error() : "out of memory");
        return -1;
    }
    return k;
}

static void put_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else if (*s == '\t')
            fputs("\\t", f);
        else
            fputc(*s, f);
    }
}

int chat_conv_save(const chat_conv *c, const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return tool_fail(2, "chat: cannot write %s: %s", tmp, strerror(errno));
    fputs("tport-chat 1\n", f);
    for (int i = 0; i < c->n; i++) {
        put_escaped(f, c->msgs[i].role);
        fputc('\t', f);
        put_escaped(f, c->msgs[i].content);
        fputc('\n', f);
    }
    if (fclose(f) || rename(tmp, path)) {
        remove(tmp);
        return tool_fail(2, "chat: cannot write %s", path);
    }
    return 0;
}

/* Undoes put_escaped in place. */
static void unescape(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '\\' && r[1]) {
            r++;
            *w++ = *r == 'n' ? '\n' : *r == 't' ? '\t' : *r;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
}

int chat_conv_load(chat_conv *c, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return tool_fail(2, "chat: cannot open %s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    int rc = n < 0 || strcmp(line, "tport-chat 1\n") ? tool_fail(2, "chat: %s is not a tport chat file", path) : 0;
    chat_conv fresh = *c;
    fresh.msgs = NULL;
    fresh.n = fresh.cap = 0;
    while (!rc && (n = getline(&line, &cap, f)) >= 0) {
        if (n && line[n - 1] == '\n')
            line[n - 1] = 0;
        char *tab = strchr(line, '\t');
        if (!tab) {
            rc = tool_fail(2, "chat: %s: a line without a role", path);
            break;
        }
        *tab = 0;
        unescape(line);
        unescape(tab + 1);
        if (strcmp(line, "system") && strcmp(line, "user") && strcmp(line, "assistant"))
            rc = tool_fail(2, "chat: %s: unknown role '%s'", path, line);
        else if (!chat_conv_add(&fresh, line, tab + 1))
            rc = tool_fail(2, "chat: out of memory");
    }
    free(line);
    fclose(f);
    if (rc) {
        for (int i = 0; i < fresh.n; i++) {
            free(fresh.msgs[i].role);
            free(fresh.msgs[i].content);
        }
        free(fresh.msgs);
        return rc;
    }
    for (int i = 0; i < c->n; i++) {
        free(c->msgs[i].role);
        free(c->msgs[i].content);
    }
    free(c->msgs);
    c->msgs = fresh.msgs;
    c->n = fresh.n;
    c->cap = fresh.cap;
    return 0;
}
