/* tport serve: OpenAI response bodies, and server-sent events for
 * "stream": true — one event per piece of text, then the finish reason,
 * the usage if asked for (stream_options.include_usage), and [DONE]. */
#ifndef TPORT_SERVE_STREAM_H
#define TPORT_SERVE_STREAM_H

#include "serve.h"

/* {"id","object","created","model","choices":[choice]} for a completion
 * (chat or not, chunk or whole); text NULL leaves the text out; finish
 * NULL writes null. */
cJSON *serve_body(const serve_server *srv, const char *id, bool chat, bool chunk, const char *text,
                  bool with_role, const char *finish);
void serve_add_usage(cJSON *body, int32_t n_prompt, int32_t n_gen);

/* The connection is done with its stream (access log written next):
 * copies the token counts into c and frees the slot if still held. */
void serve_stream_detach(serve_conn *c);

#endif
