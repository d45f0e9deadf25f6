/* gpt-oss harmony replies (tools/tport/serve/harmony.c): model output as
 * tport serve's generation gives it (<|channel|>, <|message|>, <|start|>,
 * <|constrain|>, <|end|> printed; <|return|> and <|call|> end generation
 * and print nothing) split into reasoning_content, content and tool_calls,
 * in the header forms llama.cpp's gpt-oss parser accepts; and every prefix
 * of a reply giving a prefix of its parts (what streaming relies on). */
#include "harmony.h"
#include "test_util.h"

static const char *s_or(const char *s) { return s ? s : ""; }

/* text -> reasoning, content, and the calls as "name args;..." */
static void expect(const char *text, bool want_calls, const char *reasoning, const char *content, const char *calls) {
    harmony_reply r;
    CHECK(harmony_parse(text, want_calls, 7, &r), "parse: %s", text);
    CHECK(!strcmp(s_or(r.reasoning), reasoning), "reasoning '%s', want '%s' in: %s", s_or(r.reasoning), reasoning,
          text);
    CHECK(!strcmp(s_or(r.content), content), "content '%s', want '%s' in: %s", s_or(r.content), content, text);
    char got[512] = "";
    int i = 0;
    for (cJSON *c = r.calls ? r.calls->child : NULL; c; c = c->next, i++) {
        const cJSON *fn = cJSON_GetObjectItem(c, "function");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));
        char want_id[32];
        snprintf(want_id, sizeof want_id, "call_7_%d", i);
        CHECK(id && !strcmp(id, want_id), "call id %s", s_or(id));
        CHECK(!strcmp(s_or(cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"))), "function"), "type");
        size_t n = strlen(got);
        snprintf(got + n, sizeof got - n, "%s %s;", s_or(cJSON_GetStringValue(cJSON_GetObjectItem(fn, "name"))),
                 s_or(cJSON_GetStringValue(cJSON_GetObjectItem(fn, "arguments"))));
    }
    CHECK(!strcmp(got, calls), "calls '%s', want '%s' in: %s", got, calls, text);
    harmony_reply_free(&r);
}

/* Every prefix ending between tokens (the markers are single tokens, so
 * the text never ends inside one) gives prefixes of the whole reply's parts. */
static void prefixes(const char *text) {
    harmony_reply whole;
    CHECK(harmony_parse(text, false, 0, &whole), "parse");
    size_t n = strlen(text);
    char *p = malloc(n + 1);
    size_t last_r = 0, last_c = 0;
    for (size_t k = 0; p && k <= n; k++) {
        memcpy(p, text, k);
        p[k] = 0;
        const char *lt = strrchr(p, '<');
        if (lt && !strchr(lt, '>'))
            continue;
        harmony_reply r;
        CHECK(harmony_parse(p, false, 0, &r), "parse");
        size_t nr = strlen(s_or(r.reasoning)), nc = strlen(s_or(r.content));
        CHECK(!strncmp(s_or(whole.reasoning), s_or(r.reasoning), nr), "prefix %zu: reasoning '%s'", k,
              s_or(r.reasoning));
        CHECK(!strncmp(s_or(whole.content), s_or(r.content), nc), "prefix %zu: content '%s'", k, s_or(r.content));
        CHECK(nr >= last_r && nc >= last_c, "prefix %zu: shrank", k);
        last_r = nr, last_c = nc;
        harmony_reply_free(&r);
    }
    free(p);
    harmony_reply_free(&whole);
}

int main(void) {
    const char *think = "<|channel|>analysis<|message|>User asks weather. Need tool.<|end|>";
    /* reasoning then the answer (generation ended at <|return|>) */
    expect("<|channel|>analysis<|message|>Simple.<|end|><|start|>assistant<|channel|>final<|message|>Hello there!",
           true, "Simple.", "Hello there!", "");
    /* a tool call, recipient in the channel header, <|constrain|>json */
    char buf[512];
    snprintf(buf, sizeof buf,
             "%s<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
             "{\"location\": \"Paris\"}",
             think);
    expect(buf, true, "User asks weather. Need tool.", "", "get_weather {\"location\":\"Paris\"};");
    /* without tools in the request the call is not reported */
    expect(buf, false, "User asks weather. Need tool.", "", "");
    /* recipient in the role header; constraint without <|constrain|> */
    expect(" to=functions.sum<|channel|>commentary json<|message|>{\"a\":1,\"b\":2}", true, "", "",
           "sum {\"a\":1,\"b\":2};");
    /* a preamble (commentary without recipient) is content; two calls */
    expect("<|channel|>commentary<|message|>Checking both.<|end|><|start|>assistant<|channel|>commentary "
           "to=functions.a<|message|>{}<|end|><|start|>assistant<|channel|>commentary to=functions.b_2"
           "<|constrain|>json<|message|>{\"x\":[1]}",
           true, "", "Checking both.", "a {};b_2 {\"x\":[1]};");
    /* the stray commentary channel gpt-oss-20b writes before analysis/final */
    expect("<|channel|>commentary<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>commentary "
           "to=assistant<|channel|>final<|message|>done",
           false, "hmm", "done", "");
    /* a built-in tool's message is dropped, as llama.cpp does */
    expect("<|channel|>analysis<|message|>look<|end|><|start|>assistant<|channel|>analysis to=browser.search "
           "code<|message|>{\"query\":\"x\"}<|call|>",
           true, "look", "", "");
    /* arguments that are not JSON (cut short): kept as content, not a call */
    expect("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": ", true, "", "{\"a\": ", "");
    /* plain text (no harmony header) is all content; nothing yet from a half header */
    expect("Just text.", true, "", "Just text.", "");
    expect("<|channel|>final", true, "", "", "");
    expect(" to", true, "", "", "");
    /* two analysis messages join with a newline; unfinished final counts */
    expect("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|>"
           "<|start|>assistant<|channel|>final<|message|>par",
           false, "a\nb", "par", "");
    expect("", true, "", "", "");
    prefixes("<|channel|>analysis<|message|>a b<|end|><|start|>assistant<|channel|>analysis<|message|>c<|end|>"
             "<|start|>assistant<|channel|>final<|message|>the end");
    prefixes(" to=functions.sum<|channel|>commentary json<|message|>{\"a\":1}");
    /* a marker being spelled is held back from a stream; a plain '<' is not */
    const char *t = "<|channel|>final<|message|>a<b<|en";
    CHECK(harmony_settled(t, strlen(t)) == strlen(t) - 4, "held %zu", harmony_settled(t, strlen(t)));
    CHECK(harmony_settled(t, strlen(t) - 4) == strlen(t) - 4, "a < b");
    CHECK(harmony_settled("x<", 2) == 1 && harmony_settled("x<|end|>", 8) == 8 && harmony_settled("", 0) == 0,
          "settled");
    /* the ends of generation */
    CHECK(!strcmp(harmony_stop_texts[0], "<|return|>") && !strcmp(harmony_stop_texts[1], "<|call|>") &&
              !harmony_stop_texts[2],
          "stop texts");
    return test_finish("test_serve_harmony");
}
