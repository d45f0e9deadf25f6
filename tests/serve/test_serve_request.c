/* The request parser of tport serve: what it takes, what it refuses (with
 * the offending field named), that it ignores fields it does not know, and
 * that fields it does not implement pass only with their defaults. */
#include "request.h"
#include "test_util.h"

static bool parse(serve_kind k, const char *body, serve_request *r, serve_error *e) {
    return serve_request_parse(k, body, strlen(body), 512, r, e);
}

/* A body that must fail, naming `param` (NULL = none). */
static void refused(serve_kind k, const char *body, const char *param) {
    serve_request r;
    serve_error e;
    bool ok = parse(k, body, &r, &e);
    CHECK(!ok, "accepted: %s", body);
    CHECK(!ok && e.message[0], "no message for: %s", body);
    CHECK(!ok && (param ? e.param && !strcmp(e.param, param) : !e.param), "param %s, want %s for: %s",
          e.param ? e.param : "NULL", param ? param : "NULL", body);
    serve_request_free(&r);
}

int main(void) {
    serve_request r;
    serve_error e;
    const char *full = "{\"prompt\":\"Hi\",\"max_tokens\":7,\"temperature\":0.5,\"top_p\":0.9,\"top_k\":5,"
                       "\"min_p\":0.1,\"seed\":99,\"stop\":[\"a\",\"bc\"],\"stream\":true,"
                       "\"stream_options\":{\"include_usage\":true},\"presence_penalty\":0.5,\"frequency_penalty\":-1.5,"
                       "\"repeat_penalty\":1.1,\"repeat_last_n\":32,\"vendor\":[1,{}]}";
    CHECK(parse(SERVE_REQ_COMPLETION, full, &r, &e), "%s", e.message);
    CHECK(r.prompt && !strcmp(r.prompt, "Hi") && !r.prompt_is_ids, "prompt");
    CHECK(r.max_tokens == 7 && r.have_temperature && r.temperature == 0.5f && r.have_top_p && r.top_p == 0.9f,
          "sampling");
    CHECK(r.have_top_k && r.top_k == 5 && r.have_min_p && r.have_seed && r.seed == 99, "more sampling");
    CHECK(r.n_stop == 2 && !strcmp(r.stop[1], "bc") && r.stream && r.include_usage, "stop, stream");
    CHECK(r.have_presence && r.presence_penalty == 0.5f && r.have_frequency && r.frequency_penalty == -1.5f &&
          r.have_repeat_penalty && r.repeat_penalty == 1.1f && r.have_repeat_last_n && r.repeat_last_n == 32,
          "penalties");
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"repeat_last_n\":-1}", &r, &e) && r.have_repeat_last_n &&
          r.repeat_last_n == 512 && !r.have_presence && !r.have_frequency && !r.have_repeat_penalty,
          "repeat_last_n -1 is the context (512 here); absent penalties stay unset");
    serve_request_free(&r);

    /* the defaults of the fields not implemented yet pass: what the openai
     * and LangChain clients send when nothing was asked for */
    const char *defaults[] = {
        "\"n\":1", "\"n\":null", "\"n\":2", "\"logprobs\":true", "\"logprobs\":true,\"top_logprobs\":2", "\"logit_bias\":{\"15043\":-100}",
        "\"response_format\":{\"type\":\"json_object\"}", "\"json_schema\":{}", "\"best_of\":1", "\"logprobs\":false", "\"logprobs\":null", "\"top_logprobs\":0",
        "\"n_probs\":0", "\"logit_bias\":{}", "\"logit_bias\":[]", "\"logit_bias\":null",
        "\"response_format\":{\"type\":\"text\"}", "\"tools\":[]", "\"tool_choice\":\"none\"", "\"tool_choice\":\"auto\"",
        "\"functions\":[]", "\"function_call\":\"auto\"", "\"echo\":false", "\"suffix\":\"\"", "\"grammar\":\"\"",
        "\"modalities\":[\"text\"]", "\"audio\":null", "\"verbosity\":\"medium\"", "\"parallel_tool_calls\":true",
        "\"user\":\"u-1\"", "\"model\":\"gpt-4o\"", "\"store\":false", "\"metadata\":{\"k\":\"v\"}",
        "\"service_tier\":\"auto\"", "\"stream_options\":{\"include_obfuscation\":false}", "\"n_predict\":-1",
        "\"ignore_eos\":false", "\"mirostat\":0", "\"typical_p\":1", "\"top_n_sigma\":-1",
    };
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"prompt\":\"x\",%s}", defaults[i]);
        CHECK(parse(SERVE_REQ_COMPLETION, body, &r, &e), "default refused: %s: %s", body, e.message);
        serve_request_free(&r);
        snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],%s}", defaults[i]);
        CHECK(parse(SERVE_REQ_CHAT, body, &r, &e), "default refused: %s: %s", body, e.message);
        serve_request_free(&r);
    }
    /* ... and anything else is refused, naming the field (both endpoints) */
    static const struct {
        const char *body, *param;
    } asks[] = {
        {"\"n\":0", "n"}, {"\"n\":17", "n"}, {"\"n\":1.5", "n"}, {"\"best_of\":3", "best_of"},
        {"\"logprobs\":\"yes\"", "logprobs"}, {"\"logprobs\":21", "logprobs"}, {"\"top_logprobs\":21", "top_logprobs"},
        {"\"n_probs\":3", "n_probs"}, {"\"logit_bias\":{\"abc\":1}", "logit_bias"},
        {"\"logit_bias\":{\"5\":200}", "logit_bias"}, {"\"logit_bias\":{\"-5\":1}", "logit_bias"},
        {"\"logit_bias\":[[15043]]", "logit_bias"}, {"\"logit_bias\":7", "logit_bias"},
        {"\"response_format\":{\"type\":\"xml\"}", "response_format"},
        {"\"response_format\":{\"type\":\"json_schema\"}", "response_format"},
        {"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"string\",\"pattern\":\"a+\"}}}",
         "response_format"},
        {"\"response_format\":\"json\"", "response_format"}, {"\"json_schema\":{\"type\":\"object\",\"oneOf\":[]}", "json_schema"},
        {"\"grammar\":7", "grammar"}, {"\"grammar\":\"r ::= x\",\"json_schema\":{}", "json_schema"},
        {"\"tools\":[{\"type\":\"function\",\"function\":{\"description\":\"no name\"}}]", "tools"},
        {"\"tools\":[{\"type\":\"retrieval\"}]", "tools"}, {"\"tools\":{}", "tools"},
        {"\"tool_choice\":\"required\"", "tool_choice"},
        {"\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}", "tool_choice"},
        {"\"functions\":[{\"name\":\"f\"}]", "functions"}, {"\"function_call\":{\"name\":\"f\"}", "function_call"},
        {"\"echo\":true", "echo"}, {"\"suffix\":\"end\"", "suffix"}, {"\"audio\":{\"voice\":\"alloy\"}", "audio"},
        {"\"modalities\":[\"text\",\"audio\"]", "modalities"}, {"\"web_search_options\":{}", "web_search_options"},
        {"\"reasoning_effort\":\"low\"", "reasoning_effort"}, {"\"verbosity\":\"low\"", "verbosity"},
        {"\"n_predict\":5", "n_predict"}, {"\"ignore_eos\":1", "ignore_eos"}, {"\"mirostat\":2", "mirostat"},
        {"\"typical_p\":0.5", "typical_p"}, {"\"dynatemp_range\":0.5", "dynatemp_range"},
        {"\"xtc_probability\":0.5", "xtc_probability"}, {"\"dry_multiplier\":0.8", "dry_multiplier"},
        {"\"top_n_sigma\":1", "top_n_sigma"}, {"\"user\":7", "user"}, {"\"metadata\":[]", "metadata"},
        {"\"store\":\"yes\"", "store"}, {"\"parallel_tool_calls\":1", "parallel_tool_calls"},
        {"\"presence_penalty\":-2.5", "presence_penalty"}, {"\"frequency_penalty\":\"1\"", "frequency_penalty"},
        {"\"repeat_penalty\":0", "repeat_penalty"}, {"\"repeat_last_n\":-2", "repeat_last_n"},
        {"\"stream_options\":{\"include_obfuscation\":1}", "include_obfuscation"},
    };
    for (size_t i = 0; i < sizeof asks / sizeof *asks; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"prompt\":\"x\",%s}", asks[i].body);
        refused(SERVE_REQ_COMPLETION, body, asks[i].param);
        snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],%s}", asks[i].body);
        refused(SERVE_REQ_CHAT, body, asks[i].param);
    }
    /* the message names the field, or the schema keyword */
    CHECK(!parse(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                 "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"object\","
                 "\"properties\":{\"a\":{\"type\":\"string\",\"format\":\"date\"}}}}}}", &r, &e) &&
          strstr(e.message, "'format'"), "message: %s", e.message);
    serve_request_free(&r);
    CHECK(!parse(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":2}", &r, &e) &&
          e.param && !strcmp(e.param, "top_logprobs"), "chat: top_logprobs without logprobs");
    serve_request_free(&r);

    /* implemented: ignore_eos (llama-server's), n, logprobs, logit_bias, structured output */
    CHECK(parse(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"ignore_eos\":true}", &r, &e) && r.ignore_eos,
          "ignore_eos: %s", e.message);
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\"}", &r, &e) && !r.ignore_eos, "ignore_eos by default");
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":3,\"logprobs\":true,"
                "\"top_logprobs\":4,\"logit_bias\":{\"15043\":-100,\"7\":2.5}}", &r, &e), "%s", e.message);
    CHECK(r.n_choices == 3 && r.logprobs && r.top_logprobs == 4 && r.n_bias == 2 && r.bias_ids[0] == 15043 &&
          r.bias_vals[0] == -100 && r.bias_ids[1] == 7 && r.bias_vals[1] == 2.5f, "chat n, logprobs, bias");
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"logprobs\":3,\"logit_bias\":[[9,false]]}", &r, &e) &&
          r.logprobs && r.top_logprobs == 3 && r.n_bias == 1 && r.bias_vals[0] < -1e30f && r.n_choices == 1,
          "completion logprobs k, llama-server bias pairs: %s", e.message);
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                "\"response_format\":{\"type\":\"json_object\"}}", &r, &e) && r.grammar &&
          strstr(r.grammar, "root ::=") && !strcmp(r.grammar_param, "response_format"), "json_object: %s", e.message);
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"grammar\":\"root ::= [a-z]\"}", &r, &e) && r.grammar &&
          !strcmp(r.grammar, "root ::= [a-z]") && !strcmp(r.grammar_param, "grammar"), "grammar: %s", e.message);
    serve_request_free(&r);
    /* tool-call conversations: malformed calls are refused; good ones keep
     * their fields for the template, arguments as an object */
    refused(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"1\"}]}]}",
            "messages");
    refused(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[{\"id\":\"1\","
            "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}]}", "messages");
    refused(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"tool\",\"content\":\"42\",\"tool_call_id\":7}]}", "messages");
    CHECK(parse(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\","
                "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\": 1}\"}}]},"
                "{\"role\":\"tool\",\"content\":\"42\",\"tool_call_id\":\"c1\"}],\"tools\":[{\"type\":\"function\","
                "\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}",
                &r, &e), "%s", e.message);
    CHECK(r.n_messages == 2 && r.messages[0].content_null && r.messages[0].tool_json &&
          !strcmp(r.messages[0].tool_json, "{\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                  "\"arguments\":{\"a\":1}}}]}") && r.messages[1].role == SERVE_ROLE_TOOL && r.messages[1].tool_json &&
          !strcmp(r.messages[1].tool_json, "{\"tool_call_id\":\"c1\"}") && r.tools_json &&
          r.tool_choice == SERVE_TOOLS_NAMED && !strcmp(r.tool_name, "f"),
          "tool fields: %s | %s", r.n_messages > 0 && r.messages[0].tool_json ? r.messages[0].tool_json : "-",
          r.n_messages > 1 && r.messages[1].tool_json ? r.messages[1].tool_json : "-");
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"content\":\"a\",\"tool_calls\":[]}]}", &r, &e),
          "empty tool_calls: %s", e.message);
    serve_request_free(&r);

    /* defaults, nulls as defaults, token-id prompts, one-string arrays */
    CHECK(parse(SERVE_REQ_COMPLETION, "{\"prompt\":[1,2,3],\"max_tokens\":null,\"stop\":\"x\",\"seed\":-1}", &r, &e),
          "%s", e.message);
    CHECK(r.prompt_is_ids && r.n_prompt_ids == 3 && r.prompt_ids[2] == 3 && r.max_tokens == -1 && r.n_stop == 1 &&
          !r.have_seed && !r.have_temperature && !r.stream, "ids prompt");
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_COMPLETION, "{\"prompt\":[\"one\"],\"max_completion_tokens\":3}", &r, &e), "%s", e.message);
    CHECK(r.prompt && !strcmp(r.prompt, "one") && r.max_tokens == 3, "array of one string, max_completion_tokens");
    serve_request_free(&r);

    /* chat: roles, parts joined, null content */
    CHECK(parse(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"developer\",\"content\":\"S\"},{\"role\":\"user\","
                "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
                "{\"role\":\"assistant\",\"content\":null,\"name\":\"x\"}]}", &r, &e), "%s", e.message);
    CHECK(r.n_messages == 3 && r.messages[0].role == SERVE_ROLE_SYSTEM && !strcmp(r.messages[1].content, "ab") &&
          r.messages[2].role == SERVE_ROLE_ASSISTANT && !strcmp(r.messages[2].content, ""), "messages");
    serve_request_free(&r);

    CHECK(parse(SERVE_REQ_TOKENIZE, "{\"content\":\"x y\",\"add_special\":true,\"with_pieces\":false}", &r, &e) &&
          !strcmp(r.content, "x y") && r.add_special, "tokenize");
    serve_request_free(&r);
    CHECK(parse(SERVE_REQ_DETOKENIZE, "{\"tokens\":[0,31999]}", &r, &e) && r.n_tokens == 2 && r.tokens[1] == 31999,
          "detokenize");
    serve_request_free(&r);

    /* refused, with the field named */
    refused(SERVE_REQ_COMPLETION, "", NULL);
    refused(SERVE_REQ_COMPLETION, "{", NULL);
    refused(SERVE_REQ_COMPLETION, "\"prompt\"", NULL);
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\"} trailing", NULL);
    refused(SERVE_REQ_COMPLETION, "{}", "prompt");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":7}", "prompt");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":[]}", "prompt");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":[\"a\",\"b\"]}", "prompt");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":[1,2.5]}", "prompt");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":[1,-1]}", "prompt");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":[1,3e10]}", "prompt");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"max_tokens\":\"3\"}", "max_tokens");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"max_tokens\":0}", "max_tokens");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"max_tokens\":513}", "max_tokens");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"max_tokens\":1e300}", "max_tokens");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"max_completion_tokens\":-4}", "max_completion_tokens");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"temperature\":-0.1}", "temperature");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"temperature\":true}", "temperature");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"top_p\":1.01}", "top_p");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"top_k\":-1}", "top_k");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"min_p\":2}", "min_p");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"seed\":0.5}", "seed");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"presence_penalty\":3}", "presence_penalty");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"n\":-3}", "n");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"stream\":1}", "stream");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"stream_options\":[]}", "stream_options");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"stream_options\":{\"include_usage\":\"y\"}}", "include_usage");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"stop\":[1]}", "stop");
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop");
    char longstop[400];
    snprintf(longstop, sizeof longstop, "{\"prompt\":\"x\",\"stop\":\"%0300d\"}", 0);
    refused(SERVE_REQ_COMPLETION, longstop, "stop");
    refused(SERVE_REQ_CHAT, "{\"messages\":{}}", "messages");
    refused(SERVE_REQ_CHAT, "{\"messages\":[]}", "messages");
    refused(SERVE_REQ_CHAT, "{\"messages\":[7]}", "messages");
    refused(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"bot\",\"content\":\"x\"}]}", "messages");
    refused(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}", "messages");
    refused(SERVE_REQ_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[\"x\"]}]}", "messages");
    refused(SERVE_REQ_TOKENIZE, "{\"content\":5}", "content");
    refused(SERVE_REQ_DETOKENIZE, "{\"tokens\":\"1 2\"}", "tokens");
    refused(SERVE_REQ_DETOKENIZE, "{\"tokens\":[null]}", "tokens");

    /* deep nesting and huge arrays end in an error, not a crash */
    size_t depth = 200000;
    char *deep = malloc(2 * depth + 32);
    CHECK(deep != NULL, "alloc");
    if (deep) {
        size_t k = (size_t)sprintf(deep, "{\"prompt\":\"x\",\"v\":");
        memset(deep + k, '[', depth);
        memset(deep + k + depth, ']', depth);
        strcpy(deep + k + 2 * depth, "}");
        refused(SERVE_REQ_COMPLETION, deep, NULL);
        free(deep);
    }
    /* a NUL inside the length is refused, not read past */
    serve_request_parse(SERVE_REQ_COMPLETION, "{\"prompt\":\"a\0b\"}", 16, 512, &r, &e);
    serve_request_free(&r);
    return test_finish("test_serve_request");
}
