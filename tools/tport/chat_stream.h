/* tport chat: the reply as it streams.  A reasoning model's thinking,
 * between <think> and </think>, is shown dimmed on a terminal, or not at
 * all with --hide-thinking; a tag split over several tokens is recognised
 * by holding back the bytes that could begin one.  gpt-oss's harmony
 * replies (chat_stream_harmony) show their messages without the headers:
 * the analysis channel as thinking, messages to a tool dimmed too, the
 * final channel as the answer. */
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
    bool harmony;          /* gpt-oss: <|channel|>...<|message|> headers */
    bool in_header;
    char header[96];       /* the header so far (its start if longer)   */
    size_t n_header;
} chat_stream;

void chat_stream_begin(chat_stream *s, FILE *out, bool color, bool hide);
/* The reply begins inside the thinking (the prompt opened it). */
void chat_stream_thinking(chat_stream *s);
void chat_stream_put(chat_stream *s, const char *text, size_t n);
/* The reply is in gpt-oss's harmony format (it starts in a header). */
void chat_stream_harmony(chat_stream *s);
/* Writes what is held back and ends the dimming. */
void chat_stream_end(chat_stream *s);

/* The answer of a harmony reply (its final and preamble messages, no
 * headers, no analysis, no tool calls), malloc'd: what the conversation
 * keeps of the turn, as gpt-oss's template wants it. */
char *chat_harmony_answer(const char *text);

#endif
