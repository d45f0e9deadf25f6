/* tport chat: the conversation (its messages), rendered into the model's
 * prompt with the model's own chat template (tport_template_render, the
 * engine `tport serve` uses), or ChatML when the model has none (as
 * llama.cpp does), and kept on disk beside the session's cache. */
#ifndef TPORT_TOOL_CHAT_CONV_H
#define TPORT_TOOL_CHAT_CONV_H

#include <stdbool.h>
#include <stddef.h>

#include "tport/tport.h"

typedef struct chat_msg {
    char *role;     /* "system", "user", "assistant" */
    char *content;
} chat_msg;

typedef struct chat_conv {
    chat_msg *msgs;
    int n, cap;
    const char *tmpl;        /* the template's text                       */
    char *owned_tmpl;        /* --chat-template-file's text, or NULL      */
    char *bos, *eos;         /* the vocabulary's texts, "" when absent    */
} chat_conv;

/* The model's template, the file's (when tmpl_file is not NULL) or
 * ChatML; a template that does not render a one-message conversation is
 * refused.  0, or 2 after printing why. */
int chat_conv_init(chat_conv *c, const tport_model *m, const char *tmpl_file);
void chat_conv_free(chat_conv *c);
/* Appends a message (copies); false when out of memory. */
bool chat_conv_add(chat_conv *c, const char *role, const char *content);
/* Removes message i. */
void chat_conv_remove(chat_conv *c, int i);
/* Drops every message except a leading system one. */
void chat_conv_clear(chat_conv *c);

/* The first n messages as tokens (the rendered text with special tokens
 * parsed, BOS added unless the template wrote it), with the assistant's
 * generation prompt when gen_prompt.  Returns the count (*out malloc'd),
 * or -1 with the reason in err.  *thinking (if not NULL) tells whether the
 * text ends inside a <think> block: a reasoning template that opens the
 * reply's thinking itself. */
int32_t chat_conv_tokens(const chat_conv *c, const tport_model *m, int n, bool gen_prompt, tport_token **out,
                         bool *thinking, char *err, size_t err_cap);

/* The messages as text lines (role, tab, content with \\, \n, \t
 * escaped): path is written atomically; load replaces c's messages.  0, or
 * 2 after printing why. */
int chat_conv_save(const chat_conv *c, const char *path);
int chat_conv_load(chat_conv *c, const char *path);

#endif
