/* tport chat: the reply as it streams.  A reasoning model's thinking,
 * between <think> and </think>, is shown dimmed on a terminal, or not at
 * all with --hide-thinking; a tag split over several tokens is recognised
 * by holding back the bytes that could begin one. */
#ifndef TPORT_TOOL_CHAT_STREAM_H
#define TPORT_TOOL_CHAT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct chat_stream {
    FILE *out;
    bool color;            /* ANSI dim for the thinking                 */
    bool hide;             /* --hide-thinking                           */
    bool in_think;
    char pending[16];      /* a possible beginning of the next tag      */
    size_t n_pending;
    size_t n_shown;        /* bytes written (thinking excluded when hidden) */
} chat_stream;

void chat_stream_begin(chat_stream *s, FILE *out, bool color, bool hide);
/* The reply begins inside the thinking (the prompt opened it). */
void chat_stream_thinking(chat_stream *s);
void chat_stream_put(chat_stream *s, const char *text, size_t n);
/* Writes what is held back and ends the dimming. */
void chat_stream_end(chat_stream *s);

#endif
