/* tport serve: chat formats.  As llama.cpp does, a model's
 * tokenizer.chat_template is recognised by its distinctive markers and one
 * of a few known formats is applied: for --chat-template, and for models
 * whose template is missing or does not render with the Jinja engine
 * (chat_jinja.h renders the others). */
#ifndef TPORT_SERVE_CHAT_TEMPLATE_H
#define TPORT_SERVE_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "request.h"

typedef enum chat_format {
    CHAT_UNKNOWN = -1,
    CHAT_CHATML,          /* also qwen: <|im_start|>role\n...<|im_end|>\n */
    CHAT_LLAMA2,          /* [INST] ... [/INST] answer</s>, system as text */
    CHAT_LLAMA2_SYS,      /* the same with <<SYS>> system blocks          */
    CHAT_LLAMA2_SYS_BOS,  /* ... and <s> before each later [INST]         */
    CHAT_LLAMA2_SYS_STRIP,/* ... and contents stripped of spaces          */
    CHAT_LLAMA3,          /* <|start_header_id|>role<|end_header_id|>     */
    CHAT_MISTRAL_V1,
    CHAT_MISTRAL_V3,
    CHAT_MISTRAL_V3_TEKKEN,
    CHAT_MISTRAL_V7,
    CHAT_MISTRAL_V7_TEKKEN,
    CHAT_GEMMA,           /* <start_of_turn>user|model                    */
    CHAT_PHI3,            /* <|user|>\n...<|end|>\n                       */
    CHAT_ZEPHYR,          /* <|user|>\n...<|endoftext|>\n                 */
    CHAT_N_FORMATS
} chat_format;

/* What the server uses when the model has no template or one it does not
 * recognise: chatml, as llama.cpp does. */
#define CHAT_DEFAULT CHAT_CHATML

/* Detects the format from a Jinja template's markers; CHAT_UNKNOWN if none. */
chat_format chat_detect(const char *jinja);
/* By name ("chatml", "llama2", ...); CHAT_UNKNOWN if not one. */
chat_format chat_from_name(const char *name);
const char *chat_name(chat_format f);
/* Space-separated names, for --help and error messages. */
const char *chat_names(void);

/* A rendered conversation: the text plus, per byte, whether it is markup
 * written by the template (where special tokens such as <|im_end|> are
 * recognised) or message content (always plain text, so a user cannot
 * inject control tokens). */
typedef struct chat_prompt {
    char *text;
    unsigned char *markup;
    size_t len, cap;
    bool failed;          /* out of memory */
} chat_prompt;

/* Renders the messages followed by the opening of the assistant's turn. */
bool chat_render(chat_format f, const serve_message *msgs, int n, chat_prompt *out);
void chat_prompt_free(chat_prompt *p);

/* The special markers of a format (NULL-terminated): looked up as single
 * tokens in markup, and the end-of-turn marker stops generation. */
const char *const *chat_markers(chat_format f);
const char *chat_end_of_turn(chat_format f);

#endif
