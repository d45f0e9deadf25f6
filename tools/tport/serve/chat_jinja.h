/* tport serve: the model's own chat template (tokenizer.chat_template),
 * rendered by the library's Jinja engine as Hugging Face renders it, with
 * the request's messages, add_generation_prompt and the vocabulary's BOS
 * and EOS texts.  The marker-detected formats of chat_template.h remain
 * for models without a template, for --chat-template, and for templates
 * the engine cannot render. */
#ifndef TPORT_SERVE_CHAT_JINJA_H
#define TPORT_SERVE_CHAT_JINJA_H

#include <stdbool.h>

#include "request.h"
#include "tport/tport.h"

typedef struct chat_jinja {
    const char *tmpl;     /* the model's, lives as long as the model */
    char *bos, *eos;      /* token texts; "" when the vocabulary has none */
} chat_jinja;

/* Takes the template and the BOS/EOS texts, then renders a one-message
 * conversation as a check; false (tport_last_error() says why) when the
 * template does not render, so the caller falls back to a format. */
bool chat_jinja_init(chat_jinja *j, const tport_model *m, const char *tmpl);
void chat_jinja_free(chat_jinja *j);

/* The rendered conversation (malloc'd, *len its length) with the tools
 * (a JSON array's text, or NULL for none), or NULL with err
 * filled: a template may refuse a conversation (raise_exception), which is
 * the client's error. */
char *chat_jinja_render(const chat_jinja *j, const serve_message *msgs, int n, bool add_generation_prompt,
                        const char *tools_json, size_t *len, serve_error *err);

/* The rendered conversation as tokens: special tokens in the text become
 * their ids, as llama.cpp tokenizes a rendered template; BOS is added as
 * the vocabulary asks unless the template already wrote it.  Returns the
 * count, or -1 with err filled. */
int32_t chat_jinja_prompt(const tport_model *m, const chat_jinja *j, const serve_message *msgs, int n,
                          const char *tools_json, tport_token **out, serve_error *err);

#endif
