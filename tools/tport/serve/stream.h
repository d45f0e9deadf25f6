/* tport serve: OpenAI response bodies, and server-sent events for
 * "stream": true — one event per piece of text, then the finish reason
 * (per choice, n > 1 streaming one after the other), the usage if asked
 * for (stream_options.include_usage), and [DONE]. */
#ifndef TPORT_SERVE_STREAM_H
#define TPORT_SERVE_STREAM_H

#include "serve.h"

/* {"id","object","created","model","choices":[]} */
cJSON *serve_envelope(const serve_server *srv, const char *id, bool chat, bool chunk);
/* One choice: text NULL leaves the text out; finish NULL writes null;
 * logprobs (taken) NULL writes null. */
cJSON *serve_choice(bool chat, bool chunk, int index, const char *text, bool with_role, const char *finish,
                    cJSON *logprobs);
/* An envelope with one choice of index 0. */
cJSON *serve_body(const serve_server *srv, const char *id, bool chat, bool chunk, const char *text,
                  bool with_role, const char *finish);
void serve_add_usage(cJSON *body, int32_t n_prompt, int32_t n_gen, int32_t n_cached);
/* The log-probabilities of records [from, to) of j in OpenAI's chat
 * ("content": [...]) or completions (tokens, token_logprobs, ...) shape. */
cJSON *serve_logprobs(const tport_model *m, const gen_job *j, int32_t from, int32_t to, bool chat);

/* Parses the model's tool calls out of text into the choice: the message
 * (or, chunk, the delta) gets tool_calls, its content the rest (null when
 * empty), finish_reason "tool_calls"; no calls: the choice is unchanged. */
void serve_choice_tools(cJSON *choice, bool chunk, int format, const char *text, uint64_t id);

/* gpt-oss: the harmony reply in text into the choice (harmony.h): the
 * message (or delta) gets reasoning_content, content, and with want_calls
 * tool_calls (finish_reason "tool_calls"). */
void serve_choice_harmony(cJSON *choice, bool chunk, const char *text, bool want_calls, uint64_t id);

/* The connection is done with its stream (access log written next):
 * copies the token counts into c and frees the slot if still held. */
void serve_stream_detach(serve_conn *c);

#endif
