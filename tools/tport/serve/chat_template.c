/* Chat formats, detected and laid out as llama.cpp's llm_chat_detect_template
 * and llm_chat_apply_template do for these families (src/llama-chat.cpp). */
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"

static const char *const names[CHAT_N_FORMATS] = {
    "chatml", "llama2", "llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "llama3", "mistral-v1", "mistral-v3",
    "mistral-v3-tekken", "mistral-v7", "mistral-v7-tekken", "gemma", "phi3", "zephyr",
};

const char *chat_name(chat_format f) { return f >= 0 && f < CHAT_N_FORMATS ? names[f] : "unknown"; }

const char *chat_names(void) {
    return "chatml llama2 llama2-sys llama2-sys-bos llama2-sys-strip llama3 mistral-v1 mistral-v3 "
           "mistral-v3-tekken mistral-v7 mistral-v7-tekken gemma phi3 zephyr";
}

chat_format chat_from_name(const char *name) {
    for (int i = 0; name && i < CHAT_N_FORMATS; i++)
        if (!strcmp(name, names[i]))
            return (chat_format)i;
    return CHAT_UNKNOWN;
}

chat_format chat_detect(const char *t) {
    if (!t || !*t)
        return CHAT_UNKNOWN;
#define HAS(s) (strstr(t, (s)) != NULL)
    if (HAS("<|im_start|>"))
        return CHAT_CHATML;
    if (!strncmp(t, "mistral", 7) || HAS("[INST]")) {
        if (HAS("[SYSTEM_PROMPT]"))
            return CHAT_MISTRAL_V7;
        if (HAS("' [INST] ' + system_message") || HAS("[AVAILABLE_TOOLS]"))
            return HAS(" [INST]") ? CHAT_MISTRAL_V1 : HAS("\"[INST]\"") ? CHAT_MISTRAL_V3_TEKKEN : CHAT_MISTRAL_V3;
        if (!HAS("<<SYS>>"))
            return CHAT_LLAMA2;
        return HAS("content.strip()") ? CHAT_LLAMA2_SYS_STRIP
               : HAS("bos_token + '[INST]") ? CHAT_LLAMA2_SYS_BOS : CHAT_LLAMA2_SYS;
    }
    if (HAS("<|assistant|>") && HAS("<|end|>"))
        return CHAT_PHI3;
    if (HAS("<|user|>") && HAS("<|endoftext|>"))
        return CHAT_ZEPHYR;
    if (HAS("<start_of_turn>"))
        return CHAT_GEMMA;
    if (HAS("<|start_header_id|>") && HAS("<|end_header_id|>"))
        return CHAT_LLAMA3;
#undef HAS
    return CHAT_UNKNOWN;
}

static const char *const markers_chatml[] = {"<|im_start|>", "<|im_end|>", NULL};
static const char *const markers_llama2[] = {"<s>", "</s>", NULL};
static const char *const markers_llama3[] = {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", NULL};
static const char *const markers_mistral[] = {"[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "</s>", NULL};
static const char *const markers_gemma[] = {"<start_of_turn>", "<end_of_turn>", NULL};
static const char *const markers_phi3[] = {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>", NULL};
static const char *const markers_zephyr[] = {"<|system|>", "<|user|>", "<|assistant|>", "<|endoftext|>", NULL};

const char *const *chat_markers(chat_format f) {
    switch (f) {
    case CHAT_CHATML: return markers_chatml;
    case CHAT_LLAMA2: case CHAT_LLAMA2_SYS: case CHAT_LLAMA2_SYS_BOS: case CHAT_LLAMA2_SYS_STRIP:
        return markers_llama2;
    case CHAT_LLAMA3: return markers_llama3;
    case CHAT_MISTRAL_V1: case CHAT_MISTRAL_V3: case CHAT_MISTRAL_V3_TEKKEN: case CHAT_MISTRAL_V7:
    case CHAT_MISTRAL_V7_TEKKEN:
        return markers_mistral;
    case CHAT_GEMMA: return markers_gemma;
    case CHAT_PHI3: return markers_phi3;
    case CHAT_ZEPHYR: return markers_zephyr;
    default: return markers_chatml;
    }
}

const char *chat_end_of_turn(chat_format f) {
    switch (f) {
    case CHAT_CHATML: return "<|im_end|>";
    case CHAT_LLAMA3: return "<|eot_id|>";
    case CHAT_GEMMA: return "<end_of_turn>";
    case CHAT_PHI3: return "<|end|>";
    case CHAT_ZEPHYR: return "<|endoftext|>";
    default: return "</s>"; /* llama2 and mistral end a turn with EOS */
    }
}

static void put(chat_prompt *p, const char *s, size_t n, bool markup) {
    if (p->failed)
        return;
    if (p->len + n + 1 > p->cap) {
        size_t cap = (p->cap ? p->cap * 2 : 256);
        while (cap < p->len + n + 1)
            cap *= 2;
        char *t = realloc(p->text, cap);
        if (t)
            p->text = t;
        unsigned char *m = t ? realloc(p->markup, cap) : NULL;
        if (m)
            p->markup = m;
        if (!t || !m) {
            p->failed = true;
            return;
        }
        p->cap = cap;
    }
    memcpy(p->text + p->len, s, n);
    memset(p->markup + p->len, markup, n);
    p->len += n;
    p->text[p->len] = 0;
}

static void mk(chat_prompt *p, const char *s) { put(p, s, strlen(s), true); }

/* Message content; trimmed of surrounding whitespace where llama.cpp trims. */
static void content(chat_prompt *p, const char *s, bool trim) {
    size_t n = strlen(s);
    if (trim) {
        while (n && strchr(" \t\n\r", *s))
            s++, n--;
        while (n && strchr(" \t\n\r", s[n - 1]))
            n--;
    }
    put(p, s, n, false);
}

static const char *role_name(serve_role r) {
    return r == SERVE_ROLE_SYSTEM ? "system" : r == SERVE_ROLE_USER ? "user" : "assistant";
}

static void render_llama2(chat_format f, const serve_message *m, int n, chat_prompt *p) {
    bool sys_blocks = f != CHAT_LLAMA2, strip = f == CHAT_LLAMA2_SYS_STRIP;
    bool inside_turn = true; /* the BOS before the first [INST] comes from the tokenizer */
    mk(p, "[INST] ");
    for (int i = 0; i < n; i++) {
        if (!inside_turn) {
            inside_turn = true;
            mk(p, f == CHAT_LLAMA2_SYS_BOS ? "<s>[INST] " : "[INST] ");
        }
        if (m[i].role == SERVE_ROLE_SYSTEM) {
            if (sys_blocks)
                mk(p, "<<SYS>>\n");
            content(p, m[i].content, strip);
            mk(p, sys_blocks ? "\n<</SYS>>\n\n" : "\n");
        } else if (m[i].role == SERVE_ROLE_USER) {
            content(p, m[i].content, strip);
            mk(p, " [/INST]");
        } else {
            content(p, m[i].content, strip);
            mk(p, "</s>");
            inside_turn = false;
        }
    }
}

static void render_mistral(chat_format f, const serve_message *m, int n, chat_prompt *p) {
    if (f == CHAT_MISTRAL_V7 || f == CHAT_MISTRAL_V7_TEKKEN) {
        const char *sp = f == CHAT_MISTRAL_V7 ? " " : "";
        for (int i = 0; i < n; i++) {
            if (m[i].role == SERVE_ROLE_SYSTEM) {
                mk(p, "[SYSTEM_PROMPT]");
                mk(p, sp);
                content(p, m[i].content, false);
                mk(p, "[/SYSTEM_PROMPT]");
            } else if (m[i].role == SERVE_ROLE_USER) {
                mk(p, "[INST]");
                mk(p, sp);
                content(p, m[i].content, false);
                mk(p, "[/INST]");
            } else {
                mk(p, sp);
                content(p, m[i].content, false);
                mk(p, "</s>");
            }
        }
        return;
    }
    const char *lead = f == CHAT_MISTRAL_V1 ? " " : "", *trail = f == CHAT_MISTRAL_V3_TEKKEN ? "" : " ";
    bool inside_turn = false;
    for (int i = 0; i < n; i++) {
        if (!inside_turn) {
            mk(p, lead);
            mk(p, "[INST]");
            mk(p, trail);
            inside_turn = true;
        }
        if (m[i].role == SERVE_ROLE_SYSTEM) {
            content(p, m[i].content, false);
            mk(p, "\n\n");
        } else if (m[i].role == SERVE_ROLE_USER) {
            content(p, m[i].content, false);
            mk(p, lead);
            mk(p, "[/INST]");
        } else {
            mk(p, trail);
            content(p, m[i].content, f == CHAT_MISTRAL_V3);
            mk(p, "</s>");
            inside_turn = false;
        }
    }
}

static bool blank(const char *s) {
    return s[strspn(s, " \t\n\r")] == 0;
}

static void render_gemma(const serve_message *m, int n, chat_prompt *p) {
    /* gemma has no system role: the system texts so far (trimmed, joined)
     * open the next user turn */
    int pending = 0; /* first system message not yet written */
    for (int i = 0; i < n; i++) {
        if (m[i].role == SERVE_ROLE_SYSTEM)
            continue;
        bool model = m[i].role == SERVE_ROLE_ASSISTANT;
        mk(p, model ? "<start_of_turn>model\n" : "<start_of_turn>user\n");
        if (!model) {
            bool any = false;
            for (int k = pending; k < i; k++)
                if (m[k].role == SERVE_ROLE_SYSTEM && !blank(m[k].content)) {
                    content(p, m[k].content, true);
                    any = true;
                }
            if (any)
                mk(p, "\n\n");
            pending = i + 1;
        }
        content(p, m[i].content, true);
        mk(p, "<end_of_turn>\n");
    }
    mk(p, "<start_of_turn>model\n");
}

bool chat_render(chat_format f, const serve_message *m, int n, chat_prompt *p) {
    memset(p, 0, sizeof *p);
    switch (f) {
    case CHAT_LLAMA2:
    case CHAT_LLAMA2_SYS:
    case CHAT_LLAMA2_SYS_BOS:
    case CHAT_LLAMA2_SYS_STRIP:
        render_llama2(f, m, n, p);
        break;
    case CHAT_MISTRAL_V1:
    case CHAT_MISTRAL_V3:
    case CHAT_MISTRAL_V3_TEKKEN:
    case CHAT_MISTRAL_V7:
    case CHAT_MISTRAL_V7_TEKKEN:
        render_mistral(f, m, n, p);
        break;
    case CHAT_GEMMA:
        render_gemma(m, n, p);
        break;
    case CHAT_LLAMA3:
        for (int i = 0; i < n; i++) {
            mk(p, "<|start_header_id|>");
            mk(p, role_name(m[i].role));
            mk(p, "<|end_header_id|>\n\n");
            content(p, m[i].content, true);
            mk(p, "<|eot_id|>");
        }
        mk(p, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case CHAT_PHI3:
    case CHAT_ZEPHYR:
        for (int i = 0; i < n; i++) {
            mk(p, "<|");
            mk(p, role_name(m[i].role));
            mk(p, "|>\n");
            content(p, m[i].content, false);
            mk(p, f == CHAT_PHI3 ? "<|end|>\n" : "<|endoftext|>\n");
        }
        mk(p, "<|assistant|>\n");
        break;
    default: /* chatml */
        for (int i = 0; i < n; i++) {
            mk(p, "<|im_start|>");
            mk(p, role_name(m[i].role));
            mk(p, "\n");
            content(p, m[i].content, false);
            mk(p, "<|im_end|>\n");
        }
        mk(p, "<|im_start|>assistant\n");
        break;
    }
    if (!p->failed && !p->text)
        put(p, "", 0, true); /* an empty rendering is still a string */
    return !p->failed;
}

void chat_prompt_free(chat_prompt *p) {
    free(p->text);
    free(p->markup);
    memset(p, 0, sizeof *p);
}
