/* tport serve: turning a request's prompt into tokens. */
#ifndef TPORT_SERVE_PROMPT_H
#define TPORT_SERVE_PROMPT_H

#include "chat_template.h"
#include "request.h"
#include "tport/tport.h"

/* Tokenizes a completion prompt (text with BOS, or ids checked against the
 * vocabulary) or a rendered chat (special markers in markup become their
 * tokens when the vocabulary has them).  Returns the count, or -1 with
 * err filled. */
int32_t prompt_from_text(const tport_model *m, const char *text, bool add_bos, tport_token **out,
                          serve_error *err);
int32_t prompt_from_ids(const tport_model *m, const int32_t *ids, int32_t n, tport_token **out, serve_error *err);
int32_t prompt_from_chat(const tport_model *m, const chat_prompt *p, const char *const *markers,
                          tport_token **out, serve_error *err);

#endif
