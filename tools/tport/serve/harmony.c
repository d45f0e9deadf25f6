/* gpt-oss harmony replies (harmony.h).  The facts are llama.cpp's
 * (common/chat.cpp, common_chat_params_init_gpt_oss): the header forms,
 * the optional constraint, the stray "<|channel|>commentary" before the
 * analysis or final channel. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harmony.h"

const char *const harmony_stop_texts[] = {"<|return|>", "<|call|>", NULL};

static const char START[] = "<|start|>", CHANNEL[] = "<|channel|>", MESSAGE[] = "<|message|>", TO[] = " to=";

typedef struct buf {
    char *s;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *g = realloc(b->s, cap);
        if (!g) {
            b->oom = true;
            return;
        }
        b->s = g;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

/* One more message of a kind: a newline between messages. */
static void add_message(buf *b, bool *any, const char *s, size_t n) {
    if (*any)
        put(b, "\n", 1);
    put(b, s, n);
    *any = true;
}

/* The first of the needles in [p, end), or end. */
static const char *first_of(const char *p, const char *end, const char *const *needles) {
    const char *best = end;
    for (int i = 0; needles[i]; i++) {
        size_t n = strlen(needles[i]);
        for (const char *q = p; q + n <= best; q++)
            if (!memcmp(q, needles[i], n)) {
                best = q;
                break;
            }
    }
    return best;
}

/* Last occurrence of needle in [p, end), or NULL. */
static const char *last_of(const char *p, const char *end, const char *needle) {
    size_t n = strlen(needle), len = (size_t)(end - p);
    for (size_t k = len >= n ? len - n + 1 : 0; k-- > 0;)
        if (!memcmp(p + k, needle, n))
            return p + k;
    return NULL;
}

/* A word of [A-Za-z0-9_.-] at p (up to end): its length. */
static size_t word(const char *p, const char *end) {
    size_t n = 0;
    while (p + n < end && (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '-' || p[n] == '.'))
        n++;
    return n;
}

static bool starts(const char *p, const char *end, const char *s) {
    size_t n = strlen(s);
    return (size_t)(end - p) >= n && !memcmp(p, s, n);
}

/* An OpenAI tool call; NULL if args is not JSON. */
static cJSON *make_call(const char *name, size_t nlen, const char *args, size_t alen, uint64_t id, int i) {
    while (alen && isspace((unsigned char)*args))
        args++, alen--;
    while (alen && isspace((unsigned char)args[alen - 1]))
        alen--;
    const char *stop = NULL;
    cJSON *v = alen ? cJSON_ParseWithLengthOpts(args, alen, &stop, false) : NULL;
    if (!v || stop != args + alen || nlen == 0 || nlen > 64) {
        cJSON_Delete(v);
        return NULL;
    }
    char *text = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    char cid[48], fname[65];
    snprintf(cid, sizeof cid, "call_%llu_%d", (unsigned long long)id, i);
    memcpy(fname, name, nlen);
    fname[nlen] = 0;
    cJSON *call = text ? cJSON_CreateObject() : NULL;
    if (call) {
        cJSON_AddStringToObject(call, "id", cid);
        cJSON_AddStringToObject(call, "type", "function");
        cJSON *fn = cJSON_AddObjectToObject(call, "function");
        cJSON_AddStringToObject(fn, "name", fname);
        cJSON_AddStringToObject(fn, "arguments", text);
    }
    free(text);
    return call;
}

bool harmony_parse(const char *text, bool want_calls, uint64_t id, harmony_reply *out) {
    *out = (harmony_reply){0};
    static const char *const header_starts[] = {START, CHANNEL, NULL};
    static const char *const body_ends[] = {"<|end|>", "<|call|>", "<|return|>", START, NULL};
    buf reasoning = {0}, content = {0};
    bool any_r = false, any_c = false;
    cJSON *calls = NULL;
    const char *p = text, *end = text + strlen(text);
    while (p < end) {
        bool header = starts(p, end, START) || starts(p, end, CHANNEL) || (p == text && starts(p, end, TO));
        if (!header && p == text && strncmp(TO, p, (size_t)(end - p)) == 0)
            break; /* the start of a " to=" header, not yet whole */
        if (!header) { /* plain text up to the next header */
            const char *q = first_of(p + 1, end, header_starts);
            add_message(&content, &any_c, p, (size_t)(q - p));
            p = q;
            continue;
        }
        const char *msg = first_of(p, end, (const char *const[]){MESSAGE, NULL});
        if (msg == end)
            break; /* the header is not finished: nothing of it yet */
        const char *body = msg + strlen(MESSAGE), *stop = first_of(body, end, body_ends);
        const char *next = stop; /* a <|start|> begins the next message */
        for (int k = 0; k < 3; k++)
            if (starts(stop, end, body_ends[k]))
                next = stop + strlen(body_ends[k]); /* past <|end|>, <|call|>, <|return|> */
        /* the header: [<|start|>ROLE][ to=R]<|channel|>CH[ to=R][ [<|constrain|>]TYPE] */
        const char *to = NULL, *ch = last_of(p, msg, CHANNEL);
        for (const char *q = p; q + strlen(TO) <= msg; q++)
            if (!memcmp(q, TO, strlen(TO)))
                to = q + strlen(TO); /* the last one names the recipient */
        size_t ch_len = ch ? word(ch + strlen(CHANNEL), msg) : 0;
        const char *chan = ch ? ch + strlen(CHANNEL) : "";
        size_t to_len = to ? word(to, msg) : 0;
        if (to && starts(to, to + to_len, "functions.")) {
            const char *name = to + strlen("functions.");
            size_t nlen = to_len - strlen("functions.");
            cJSON *call = NULL;
            if (want_calls) {
                if (!calls)
                    calls = cJSON_CreateArray();
                call = calls ? make_call(name, nlen, body, (size_t)(stop - body), id, cJSON_GetArraySize(calls))
                             : NULL;
                if (call)
                    cJSON_AddItemToArray(calls, call);
                else /* not a call after all (cut short, not JSON): the text is kept */
                    add_message(&content, &any_c, body, (size_t)(stop - body));
            }
        } else if (to && !starts(to, to + to_len, "assistant")) {
            /* a built-in tool's message (browser, python): dropped */
        } else if (ch_len == 8 && !memcmp(chan, "analysis", 8)) {
            add_message(&reasoning, &any_r, body, (size_t)(stop - body));
        } else {
            add_message(&content, &any_c, body, (size_t)(stop - body));
        }
        p = next;
    }
    if (calls && !calls->child) {
        cJSON_Delete(calls);
        calls = NULL;
    }
    if (reasoning.oom || content.oom) {
        free(reasoning.s);
        free(content.s);
        cJSON_Delete(calls);
        return false;
    }
    out->reasoning = reasoning.s;
    out->content = content.s;
    out->calls = calls;
    return true;
}

size_t harmony_settled(const char *text, size_t len) {
    static const char *const markers[] = {START, CHANNEL, MESSAGE, "<|constrain|>", "<|end|>", "<|call|>",
                                          "<|return|>", NULL};
    const char *lt = NULL;
    for (size_t k = len; k-- > 0;)
        if (text[k] == '<') {
            lt = text + k;
            break;
        }
    if (!lt)
        return len;
    size_t tail = len - (size_t)(lt - text);
    for (int i = 0; markers[i]; i++)
        if (tail < strlen(markers[i]) && !memcmp(lt, markers[i], tail))
            return (size_t)(lt - text);
    return len;
}

void harmony_reply_free(harmony_reply *r) {
    free(r->reasoning);
    free(r->content);
    cJSON_Delete(r->calls);
    *r = (harmony_reply){0};
}
