/* tport serve: a JSON Schema (structured output) as a GBNF grammar for
 * tport_grammar_parse.  Needs only cJSON, so it is fuzzed with the request
 * parser. */
#ifndef TPORT_SERVE_JSON_SCHEMA_H
#define TPORT_SERVE_JSON_SCHEMA_H

#include <cjson/cJSON.h>

#include "request.h"

/* The grammar (malloc'd) of the JSON values schema allows; NULL for any
 * JSON object (response_format json_object).  NULL on failure with err
 * naming the unsupported keyword (param "response_format"). */
char *json_schema_to_gbnf(const cJSON *schema, serve_error *err);

#endif
