/* tport serve: tool calls in the model's own format.  The format is read
 * off the chat template (what it tells the model to write); a forced call
 * (tool_choice "required" or a named function) is a grammar built from
 * the tools' parameter schemas; the output is parsed back into OpenAI's
 * message.tool_calls.  Formats: Hermes / Qwen (<tool_call>{json}</tool_call>),
 * Llama 3.x (a JSON object {"name", "parameters"}, after <|python_tag|> or
 * alone), Mistral ([TOOL_CALLS][{"name", "arguments"}, ...]), gpt-oss's
 * harmony (<|channel|>commentary to=functions.NAME ...<|message|>{args};
 * harmony.h), DeepSeek (<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
 * ```json ... ```<｜tool▁call▁end｜> as R1 and V3 write it, or
 * <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{args}<｜tool▁call▁end｜> as V3.1). */
#ifndef TPORT_SERVE_TOOL_CALLS_H
#define TPORT_SERVE_TOOL_CALLS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "request.h"

/* TOOL_FMT_HARMONY (gpt-oss) is parsed by harmony.c, with the channels. */
typedef enum tool_format {
    TOOL_FMT_NONE,
    TOOL_FMT_HERMES,
    TOOL_FMT_LLAMA3,
    TOOL_FMT_MISTRAL,
    TOOL_FMT_HARMONY,
    TOOL_FMT_DEEPSEEK /* <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>... (R1 / V3 and V3.1 forms) */
} tool_format;

/* The format a chat template asks for; TOOL_FMT_NONE if none is seen. */
tool_format tool_format_detect(const char *tmpl);
const char *tool_format_name(tool_format f);

/* GBNF for exactly one call (or, for Mistral, a list) of one of the tools
 * (only `name` when not NULL), arguments as each tool's parameters schema
 * says.  NULL with err filled (param "tools") if a schema is refused. */
char *tool_grammar(tool_format f, const char *tools_json, const char *name, serve_error *err);

/* The calls in text as OpenAI's tool_calls array (arguments as JSON text,
 * ids "call_<id>_<i>"), or NULL when it holds none (or not in the format:
 * then it is all content).  *content gets the rest of the text, trimmed
 * (malloc'd). */
cJSON *tool_calls_parse(tool_format f, const char *text, uint64_t id, char **content);

#endif
