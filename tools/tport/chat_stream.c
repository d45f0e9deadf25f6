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

void chat_stream_put(chat_stream *s, const char *text, size_t n) {
    for (size_t i = 0; i < n; i++) {
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
