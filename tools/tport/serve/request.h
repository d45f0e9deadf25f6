/* tport serve: the JSON bodies of the OpenAI-style requests, parsed and
 * checked before any model work.  Needs only cJSON, so the fuzz target
 * (tests/fuzz/fuzz_serve_request.c) drives it without a model. */
#ifndef TPORT_SERVE_REQUEST_H
#define TPORT_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERVE_MAX_STOP 4         /* OpenAI's limit on `stop` strings      */
#define SERVE_MAX_STOP_LEN 256
#define SERVE_MAX_MESSAGES 1024
#define SERVE_MAX_CHOICES 16     /* n                                     */
#define SERVE_MAX_TOP_LOGPROBS 20

typedef enum serve_kind {
    SERVE_REQ_COMPLETION,        /* POST /v1/completions                  */
    SERVE_REQ_CHAT,              /* POST /v1/chat/completions             */
    SERVE_REQ_TOKENIZE,          /* POST /tokenize                        */
    SERVE_REQ_DETOKENIZE,        /* POST /detokenize                      */
} serve_kind;

typedef enum serve_role { SERVE_ROLE_SYSTEM, SERVE_ROLE_USER, SERVE_ROLE_ASSISTANT, SERVE_ROLE_TOOL } serve_role;

typedef struct serve_message {
    serve_role role;
    char *content;               /* text parts joined; never NULL         */
    bool content_null;           /* the request's content was null        */
    /* a JSON object of the message's tool fields (tool_calls with their
     * arguments as objects, tool_call_id, name), or NULL: the template
     * sees them as Hugging Face passes them */
    char *tool_json;
} serve_message;

typedef enum serve_tool_choice {
    SERVE_TOOLS_NONE,            /* no tools, or tool_choice "none"       */
    SERVE_TOOLS_AUTO,            /* the model may call one                */
    SERVE_TOOLS_REQUIRED,        /* it must call one                      */
    SERVE_TOOLS_NAMED,           /* it must call tool_name                */
} serve_tool_choice;
#define SERVE_MAX_TOOLS 128

typedef struct serve_request {
    serve_kind kind;
    /* completions: the prompt as text, or as token ids */
    char *prompt;
    int32_t *prompt_ids, n_prompt_ids;
    bool prompt_is_ids;
    /* chat */
    serve_message *messages;
    int n_messages;
    /* sampling and stopping; max_tokens -1 = the server's default */
    int64_t max_tokens;
    bool have_temperature, have_top_p, have_top_k, have_min_p, have_seed;
    float temperature, top_p, min_p;
    int32_t top_k;
    uint64_t seed;
    /* penalties (tport_sampler_params'); have_* false = the sampler's default */
    bool have_presence, have_frequency, have_repeat_penalty, have_repeat_last_n;
    float presence_penalty, frequency_penalty, repeat_penalty;
    int32_t repeat_last_n;
    char *stop[SERVE_MAX_STOP];
    int n_stop;
    /* several choices; log-probabilities (completions: logprobs = k puts
     * the best k in top_logprobs); logit_bias as (id, bias) pairs */
    int n_choices;
    bool logprobs;
    int top_logprobs;
    int32_t *bias_ids;
    float *bias_vals;
    int n_bias;
    bool ignore_eos;              /* llama-server's: never stop at an end of generation */
    /* structured output as GBNF (from grammar, json_schema or
     * response_format), and the field it came from, for errors */
    char *grammar;
    const char *grammar_param;
    /* tools: the array as JSON text (for the template), and the choice */
    char *tools_json;
    serve_tool_choice tool_choice;
    char tool_name[128];
    bool stream, include_usage;
    /* tokenize / detokenize */
    char *content;
    bool add_special;
    int32_t *tokens, n_tokens;
} serve_request;

/* An error for the client: the message and the offending field (or NULL). */
typedef struct serve_error {
    char message[256];
    const char *param;
} serve_error;

/* Parses len bytes of body as a request of `kind`.  Fields it does not know
 * are ignored; a known field of the wrong type or out of range fails with
 * err filled, and so does a field that would change the answer in a way
 * the server does not implement (n > 1, logprobs, response_format, tools,
 * logit_bias, ...) when it holds anything but its default.  max_tokens is only checked against [1, max_tokens_cap]
 * here (the context length); the prompt's length is checked later.
 * Returns true on success; serve_request_free releases either way. */
bool serve_request_parse(serve_kind kind, const char *body, size_t len, int64_t max_tokens_cap,
                         serve_request *req, serve_error *err);
void serve_request_free(serve_request *req);

#endif
