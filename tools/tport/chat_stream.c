/* The streamed reply with its thinking dimmed or hidden (chat_stream.h). */
#include <string.h>

#include "chat_stream.h"

#define DIM "\033[2m"
#define RESET "\033[0m"

void chat_stream_begin(chat_stream *s, FILE *out, bool color, bool hide) {
    memset(s, 0, sizeof *s);
    s->out = out;
    s->color = color;
    s->hide = hide;
}

static void emit(chat_stream *s, const char *p, size_t n) {
    if (s->in_think && s->hide)
        return;
    fwrite(p, 1, n, s->out);
    s->n_shown += n;
}

static void toggle(chat_stream *s, const char *tag) {
    bool entering = !s->in_think;
    if (entering) {
        s->in_think = true;
        if (s->color && !s->hide)
            fputs(DIM, s->out);
        emit(s, tag, strlen(tag));
    } else {
        emit(s, tag, strlen(tag));
        if (s->color && !s->hide)
            fputs(RESET, s->out);
        s->in_think = false;
    }
}

void chat_stream_thinking(chat_stream *s) {
    if (!s->in_think && s->color && !s->hide)
        fputs(DIM, s->out);
    s->in_think = true;
}

void chat_stream_harmony(chat_stream *s) {
    s->harmony = true;
    s->in_header = true;
}

static bool ends_with(const char *s, size_t n, const char *tag) {
    size_t t = strlen(tag);
    return n >= t && !memcmp(s + n - t, tag, t);
}

/* A header byte; at <|message|> the body begins, as thinking for the
 * analysis channel and for messages to a tool. */
static void header_byte(chat_stream *s, char c) {
    if (s->n_header + 1 < sizeof s->header)
        s->header[s->n_header++] = c;
    else /* keep the tail, where <|message|> will show */
        memmove(s->header + 40, s->header + 41, sizeof s->header - 42), s->header[sizeof s->header - 2] = c;
    size_t n = s->n_header;
    if (!ends_with(s->header, n, "<|message|>"))
        return;
    s->header[n] = 0;
    s->in_header = false;
    s->n_header = 0;
    if (strstr(s->header, "analysis") || strstr(s->header, " to=")) {
        if (s->color && !s->hide)
            fputs(DIM, s->out);
        s->in_think = true;
    }
}

/* A body's end: <|end|> closes it, <|start|> or <|channel|> opens the next
 * header; held back while the pending bytes could begin one of them. */
static void body_put(chat_stream *s) {
    static const char *const tags[] = {"<|end|>", "<|start|>", "<|channel|>"};
    while (s->n_pending) {
        bool prefix = false;
        for (int t = 0; t < 3; t++) {
            size_t tl = strlen(tags[t]), k = s->n_pending < tl ? s->n_pending : tl;
            if (memcmp(s->pending, tags[t], k))
                continue;
            if (k < tl) {
                prefix = true;
                continue;
            }
            if (s->in_think && s->color && !s->hide)
                fputs(RESET, s->out);
            s->in_think = false;
            s->in_header = true; /* after <|end|> only a header can follow */
            s->n_header = 0;
            for (size_t i = 0; t > 0 && i < tl; i++)
                header_byte(s, tags[t][i]);
            s->n_pending = 0;
            return;
        }
        if (prefix)
            return;
        emit(s, s->pending, 1);
        memmove(s->pending, s->pending + 1, --s->n_pending);
    }
}

/* Could the header so far begin "<|" or " to="? */
static bool header_like(const chat_stream *s) {
    const char *h = s->header;
    size_t n = s->n_header;
    if (h[0] == '<')
        return n < 2 || h[1] == '|';
    return h[0] == ' ' && !memcmp(h, " to=", n < 4 ? n : 4);
}

static void harmony_put(chat_stream *s, char c) {
    if (s->in_header) {
        header_byte(s, c);
        if (!s->in_header || header_like(s))
            return;
        /* plain text, not a header: it is shown as it is */
        s->in_header = false;
        for (size_t i = 0; i < s->n_header; i++) {
            s->pending[s->n_pending++] = s->header[i];
            body_put(s);
        }
        s->n_header = 0;
        return;
    }
    s->pending[s->n_pending++] = c;
    body_put(s);
}

char *chat_harmony_answer(const char *text) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    chat_stream s;
    chat_stream_begin(&s, f, false, true);
    chat_stream_harmony(&s);
    chat_stream_put(&s, text, strlen(text));
    chat_stream_end(&s);
    fclose(f);
    return buf;
}

void chat_stream_put(chat_stream *s, const char *text, size_t n) {
    for (size_t i = 0; s->harmony && i < n; i++)
        harmony_put(s, text[i]);
    for (size_t i = 0; !s->harmony && i < n; i++) {
        s->pending[s->n_pending++] = text[i];
        /* resolve pending: a whole tag, a prefix of one, or plain bytes */
        while (s->n_pending) {
            const char *tag = s->in_think ? "</think>" : "<think>";
            size_t tl = strlen(tag);
            size_t k = s->n_pending < tl ? s->n_pending : tl;
            if (!memcmp(s->pending, tag, k)) {
                if (k == tl) {
                    s->n_pending = 0;
                    toggle(s, tag);
                }
                break; /* a prefix: wait for more */
            }
            emit(s, s->pending, 1);
            memmove(s->pending, s->pending + 1, --s->n_pending);
        }
    }
    fflush(s->out);
}

void chat_stream_end(chat_stream *s) {
    emit(s, s->pending, s->n_pending);
    s->n_pending = 0;
    if (s->in_think && s->color && !s->hide)
        fputs(RESET, s->out);
    s->in_think = false;
    fflush(s->out);
}
