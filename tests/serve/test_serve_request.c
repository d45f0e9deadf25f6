/* The request parser of tport serve: what it takes, what it refuses (with
 * the offending field named), and that it ignores fields it does not know. */
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
                       "\"stream_options\":{\"include_usage\":true},\"logit_bias\":{\"1\":2},\"vendor\":[1,{}]}";
    CHECK(parse(SERVE_REQ_COMPLETION, full, &r, &e), "%s", e.message);
    CHECK(r.prompt && !strcmp(r.prompt, "Hi") && !r.prompt_is_ids, "prompt");
    CHECK(r.max_tokens == 7 && r.have_temperature && r.temperature == 0.5f && r.have_top_p && r.top_p == 0.9f,
          "sampling");
    CHECK(r.have_top_k && r.top_k == 5 && r.have_min_p && r.have_seed && r.seed == 99, "more sampling");
    CHECK(r.n_stop == 2 && !strcmp(r.stop[1], "bc") && r.stream && r.include_usage, "stop, stream");
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
    refused(SERVE_REQ_COMPLETION, "{\"prompt\":\"x\",\"n\":3}", "n");
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
