/* tport serve: gpt-oss's "harmony" replies.  The model writes messages
 *   [<|start|>assistant][ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT]
 *   [ [<|constrain|>]TYPE]<|message|>BODY<|end|>
 * (the first one's <|start|>assistant is the prompt's); generation ends at
 * <|return|> after the final message or <|call|> after a tool call, both
 * end-of-generation control tokens that print nothing.  The analysis
 * channel is OpenAI's reasoning_content, the final channel (and commentary
 * without a recipient, a preamble) the content, a message to
 * functions.NAME a tool call with BODY as its arguments.  Messages to
 * other recipients (built-in tools) are dropped, as llama.cpp drops them. */
#ifndef TPORT_SERVE_HARMONY_H
#define TPORT_SERVE_HARMONY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct harmony_reply {
    char *reasoning; /* the analysis channel, messages joined by "\n"      */
    char *content;   /* final and preamble messages, joined by "\n"        */
    cJSON *calls;    /* OpenAI tool_calls (ids "call_<id>_<i>"), or NULL    */
} harmony_reply;

/* Splits text (what the model wrote after the prompt) into a reply; text
 * without a harmony header is all content.  A message cut short (the text
 * ends in it) counts with what it has, so a prefix of the text gives a
 * prefix of reasoning and content (for streaming).  Tool calls only with
 * want_calls (the request has tools).  False only when out of memory. */
bool harmony_parse(const char *text, bool want_calls, uint64_t id, harmony_reply *out);
void harmony_reply_free(harmony_reply *r);

/* How much of text a stream may parse now: all of it but a tail that may
 * be the start of a marker (<|end|>, <|channel|>, ...) still being
 * written, which a vocabulary without those tokens spells piece by piece. */
size_t harmony_settled(const char *text, size_t len);

/* The texts of the tokens that end a harmony reply (NULL-terminated). */
extern const char *const harmony_stop_texts[];

#endif
