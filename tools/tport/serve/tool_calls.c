/* Tool calls: format detection, forcing grammars, parsing (tool_calls.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_schema.h"
#include "tool_calls.h"

/* DeepSeek's markers (fullwidth bars, U+2581 for spaces) */
#define DS_CALLS_BEGIN "<\357\275\234tool\342\226\201calls\342\226\201begin\357\275\234>"
#define DS_CALLS_END "<\357\275\234tool\342\226\201calls\342\226\201end\357\275\234>"
#define DS_CALL_BEGIN "<\357\275\234tool\342\226\201call\342\226\201begin\357\275\234>"
#define DS_CALL_END "<\357\275\234tool\342\226\201call\342\226\201end\357\275\234>"
#define DS_SEP "<\357\275\234tool\342\226\201sep\357\275\234>"

tool_format tool_format_detect(const char *t) {
    if (!t)
        return TOOL_FMT_NONE;
    if (strstr(t, "<|channel|>")) /* as llama.cpp tells gpt-oss's template */
        return TOOL_FMT_HARMONY;
    if (strstr(t, DS_CALLS_BEGIN))
        return TOOL_FMT_DEEPSEEK;
    if (strstr(t, "<tool_call>"))
        return TOOL_FMT_HERMES;
    if (strstr(t, "[TOOL_CALLS]"))
        return TOOL_FMT_MISTRAL;
    if (strstr(t, "<|python_tag|>") || strstr(t, "ipython"))
        return TOOL_FMT_LLAMA3;
    return TOOL_FMT_NONE;
}

const char *tool_format_name(tool_format f) {
    static const char *const names[] = {"none", "hermes", "llama3", "mistral", "harmony", "deepseek"};
    return names[f];
}

/* The key under which a format writes the arguments. */
static const char *args_key(tool_format f) { return f == TOOL_FMT_LLAMA3 ? "parameters" : "arguments"; }

char *tool_grammar(tool_format f, const char *tools_json, const char *name, serve_error *err) {
    if (f == TOOL_FMT_HARMONY || f == TOOL_FMT_DEEPSEEK) { /* a call is not one JSON object: not forced (yet) */
        snprintf(err->message, sizeof err->message,
                 "'tool_choice' \"required\" or a named function is not supported with the %s tool-call format",
                 f == TOOL_FMT_HARMONY ? "gpt-oss harmony" : "DeepSeek");
        err->param = "tool_choice";
        return NULL;
    }
    cJSON *tools = tools_json ? cJSON_Parse(tools_json) : NULL;
    cJSON *schema = cJSON_CreateObject(), *any = cJSON_AddArrayToObject(schema, "anyOf");
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *tn = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (!cJSON_IsString(tn) || (name && strcmp(tn->valuestring, name)))
            continue;
        /* {"name": <const>, "<arguments>": <parameters>}, in this order */
        cJSON *alt = cJSON_CreateObject(), *props;
        cJSON_AddStringToObject(alt, "type", "object");
        props = cJSON_AddObjectToObject(alt, "properties");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(props, "name"), "const", tn->valuestring);
        if (params && params->child)
            cJSON_AddItemToObject(props, args_key(f), cJSON_Duplicate(params, true));
        else
            cJSON_AddStringToObject(cJSON_AddObjectToObject(props, args_key(f)), "type", "object");
        cJSON *req = cJSON_AddArrayToObject(alt, "required");
        cJSON_AddItemToArray(req, cJSON_CreateString("name"));
        cJSON_AddItemToArray(req, cJSON_CreateString(args_key(f)));
        cJSON_AddItemToArray(any, alt);
    }
    char *g = NULL;
    if (any->child) {
        g = json_schema_to_gbnf(schema, err);
        if (!g) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            snprintf(err->message, sizeof err->message, "'tools': a tool's parameters: %.200s", why);
            err->param = "tools";
        }
    } else {
        snprintf(err->message, sizeof err->message, "'tool_choice' names no tool of 'tools'");
        err->param = "tool_choice";
    }
    cJSON_Delete(schema);
    cJSON_Delete(tools);
    if (!g)
        return NULL;
    /* the converter's start rule becomes "call"; the format's wrapping is the new root */
    char *at = strstr(g, "\nroot ::= ");
    static const char *const roots[] = {
        "",
        "root ::= \"<tool_call>\" \"\\n\"? call \"</tool_call>\"\n",
        "root ::= call\n",
        "root ::= \"[\" call (\",\" space call)* \"]\"\n",
    };
    /* a named function is called once; "required" may call several (Mistral's list) */
    const char *root = name && f == TOOL_FMT_MISTRAL ? "root ::= \"[\" call \"]\"\n" : roots[f];
    size_t n = strlen(g), extra = strlen(root);
    char *out = at ? malloc(n + extra + 1) : NULL;
    if (out) {
        memcpy(out, g, n + 1);
        memcpy(out + (at - g) + 1, "call", 4);
        memcpy(out + n, root, extra + 1);
    } else {
        snprintf(err->message, sizeof err->message, "out of memory");
    }
    free(g);
    return out;
}

static char *trimmed(const char *s, size_t n) {
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    char *o = malloc(n + 1);
    if (o) {
        memcpy(o, s, n);
        o[n] = 0;
    }
    return o;
}

/* One call object {"name", "<arguments>"} as an OpenAI tool call; NULL if
 * it is not one. */
static cJSON *openai_call(const cJSON *o, tool_format f, uint64_t id, int i) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, args_key(f));
    if (!args)
        args = cJSON_GetObjectItemCaseSensitive(o, f == TOOL_FMT_LLAMA3 ? "arguments" : "parameters");
    if (!cJSON_IsObject(o) || !cJSON_IsString(name) || (args && !cJSON_IsObject(args) && !cJSON_IsString(args)))
        return NULL;
    char *text = !args ? strdup("{}") : cJSON_IsString(args) ? strdup(args->valuestring) : cJSON_PrintUnformatted(args);
    if (!text)
        return NULL;
    cJSON *call = cJSON_CreateObject(), *fn;
    char cid[48];
    snprintf(cid, sizeof cid, "call_%llu_%d", (unsigned long long)id, i);
    cJSON_AddStringToObject(call, "id", cid);
    cJSON_AddStringToObject(call, "type", "function");
    fn = cJSON_AddObjectToObject(call, "function");
    cJSON_AddStringToObject(fn, "name", name->valuestring);
    cJSON_AddStringToObject(fn, "arguments", text);
    free(text);
    return call;
}

static cJSON *parse_json(const char *s, size_t n) {
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(s, n, &end, false);
    while (v && end < s + n && isspace((unsigned char)*end))
        end++;
    if (v && end != s + n) {
        cJSON_Delete(v);
        v = NULL;
    }
    return v;
}

static cJSON *parse_hermes(const char *text, uint64_t id, char **content) {
    size_t len = strlen(text), clen = 0;
    char *rest = malloc(len + 1);
    cJSON *calls = cJSON_CreateArray();
    const char *p = text;
    bool ok = rest && calls;
    while (ok) {
        const char *open = strstr(p, "<tool_call>");
        size_t keep = open ? (size_t)(open - p) : strlen(p);
        memcpy(rest + clen, p, keep);
        clen += keep;
        if (!open)
            break;
        const char *body = open + strlen("<tool_call>"), *close = strstr(body, "</tool_call>");
        size_t blen = close ? (size_t)(close - body) : strlen(body);
        cJSON *o = parse_json(body, blen);
        cJSON *call = o ? openai_call(o, TOOL_FMT_HERMES, id, cJSON_GetArraySize(calls)) : NULL;
        cJSON_Delete(o);
        if (!call) {
            ok = false; /* not a call after all: the whole text is content */
            break;
        }
        cJSON_AddItemToArray(calls, call);
        p = close ? close + strlen("</tool_call>") : body + blen;
    }
    if (!ok || !calls->child) {
        cJSON_Delete(calls);
        free(rest);
        *content = trimmed(text, len);
        return NULL;
    }
    *content = trimmed(rest, clen);
    free(rest);
    return calls;
}

/* Llama 3.x: the whole answer is one JSON call (or several separated by
 * ';'), maybe after <|python_tag|>; Mistral: a JSON array of calls. */
static cJSON *parse_whole(tool_format f, const char *text, uint64_t id, char **content) {
    const char *s = text;
    while (isspace((unsigned char)*s))
        s++;
    const char *tag = f == TOOL_FMT_LLAMA3 ? "<|python_tag|>" : "[TOOL_CALLS]";
    if (!strncmp(s, tag, strlen(tag)))
        s += strlen(tag);
    cJSON *calls = cJSON_CreateArray();
    bool ok = calls != NULL;
    if (f == TOOL_FMT_MISTRAL) {
        cJSON *arr = parse_json(s, strlen(s));
        const cJSON *o;
        ok = ok && cJSON_IsArray(arr) && arr->child;
        const cJSON *each = ok ? arr : NULL;
        cJSON_ArrayForEach(o, each) {
            cJSON *call = openai_call(o, f, id, cJSON_GetArraySize(calls));
            if (!call) {
                ok = false;
                break;
            }
            cJSON_AddItemToArray(calls, call);
        }
        cJSON_Delete(arr);
    } else {
        while (ok && *s) {
            const char *semi = strchr(s, ';');
            size_t n = semi ? (size_t)(semi - s) : strlen(s);
            cJSON *o = parse_json(s, n);
            cJSON *call = o ? openai_call(o, f, id, cJSON_GetArraySize(calls)) : NULL;
            cJSON_Delete(o);
            if (!call && semi) { /* a ';' inside a string: try the rest whole */
                o = parse_json(s, strlen(s));
                call = o ? openai_call(o, f, id, cJSON_GetArraySize(calls)) : NULL;
                cJSON_Delete(o);
                semi = NULL;
                n = strlen(s);
            }
            if (!call) {
                ok = false;
                break;
            }
            cJSON_AddItemToArray(calls, call);
            s += n + (semi ? 1 : 0);
            while (isspace((unsigned char)*s))
                s++;
        }
    }
    if (!ok || !calls->child) {
        cJSON_Delete(calls);
        *content = trimmed(text, strlen(text));
        return NULL;
    }
    *content = trimmed("", 0);
    return calls;
}

/* DeepSeek: content, then the calls' section.  Each call is
 * "function<｜tool▁sep｜>NAME\n```json\nARGS\n```" (R1, V3) or
 * "NAME<｜tool▁sep｜>ARGS" (V3.1) between its begin and end markers. */
static cJSON *ds_call(const char *s, size_t n, uint64_t id, int i) {
    const char *end = s + n, *sep = NULL;
    for (const char *q = s; q + strlen(DS_SEP) <= end && !sep; q++)
        if (!memcmp(q, DS_SEP, strlen(DS_SEP)))
            sep = q;
    if (!sep)
        return NULL;
    char *left = trimmed(s, (size_t)(sep - s));
    const char *r = sep + strlen(DS_SEP), *name = r, *args;
    size_t nlen;
    if (left && !strcmp(left, "function")) { /* NAME, a newline, a fenced JSON block */
        const char *nl = memchr(r, '\n', (size_t)(end - r));
        nlen = nl ? (size_t)(nl - r) : 0;
        args = nl ? nl + 1 : end;
        while (args < end && isspace((unsigned char)*args))
            args++;
        if ((size_t)(end - args) >= 7 && !memcmp(args, "```json", 7))
            args += 7;
        const char *close = end;
        while (close > args && isspace((unsigned char)close[-1]))
            close--;
        if (close - args >= 3 && !memcmp(close - 3, "```", 3))
            close -= 3;
        end = close;
    } else {
        name = s;
        nlen = (size_t)(sep - s);
        args = r;
    }
    free(left);
    while (nlen && isspace((unsigned char)*name))
        name++, nlen--;
    while (nlen && isspace((unsigned char)name[nlen - 1]))
        nlen--;
    cJSON *a = parse_json(args, (size_t)(end - args));
    if (!a || nlen == 0 || nlen > 64 || memchr(name, '\n', nlen) || !(cJSON_IsObject(a) || cJSON_IsString(a))) {
        cJSON_Delete(a);
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    char nm[65];
    memcpy(nm, name, nlen);
    nm[nlen] = 0;
    cJSON_AddStringToObject(o, "name", nm);
    cJSON_AddItemToObject(o, "arguments", a);
    cJSON *call = openai_call(o, TOOL_FMT_DEEPSEEK, id, i);
    cJSON_Delete(o);
    return call;
}

static cJSON *parse_deepseek(const char *text, uint64_t id, char **content) {
    const char *sec = strstr(text, DS_CALLS_BEGIN);
    cJSON *calls = sec ? cJSON_CreateArray() : NULL;
    const char *p = sec ? sec + strlen(DS_CALLS_BEGIN) : NULL, *after = "";
    bool ok = calls != NULL;
    while (ok) {
        while (isspace((unsigned char)*p))
            p++;
        if (!strncmp(p, DS_CALLS_END, strlen(DS_CALLS_END))) {
            after = p + strlen(DS_CALLS_END);
            break;
        }
        if (!*p)
            break; /* the section was cut short after a whole call */
        if (strncmp(p, DS_CALL_BEGIN, strlen(DS_CALL_BEGIN))) {
            ok = false;
            break;
        }
        p += strlen(DS_CALL_BEGIN);
        const char *e = strstr(p, DS_CALL_END);
        size_t n = e ? (size_t)(e - p) : strlen(p);
        cJSON *call = ds_call(p, n, id, cJSON_GetArraySize(calls));
        if (!call) {
            ok = false;
            break;
        }
        cJSON_AddItemToArray(calls, call);
        p += n + (e ? strlen(DS_CALL_END) : 0);
    }
    if (!ok || !calls->child) {
        cJSON_Delete(calls);
        *content = trimmed(text, strlen(text));
        return NULL;
    }
    /* the content around the section */
    size_t before = (size_t)(sec - text), rest = strlen(after);
    char *both = malloc(before + rest + 1);
    if (both) {
        memcpy(both, text, before);
        memcpy(both + before, after, rest + 1);
        *content = trimmed(both, before + rest);
        free(both);
    } else {
        *content = NULL;
    }
    return calls;
}

cJSON *tool_calls_parse(tool_format f, const char *text, uint64_t id, char **content) {
    switch (f) {
    case TOOL_FMT_DEEPSEEK:
        return parse_deepseek(text, id, content);
    case TOOL_FMT_HERMES:
        return parse_hermes(text, id, content);
    case TOOL_FMT_LLAMA3:
    case TOOL_FMT_MISTRAL:
        return parse_whole(f, text, id, content);
    default:
        *content = trimmed(text, strlen(text));
        return NULL;
    }
}
