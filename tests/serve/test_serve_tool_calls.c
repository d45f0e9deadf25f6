/* Tool calls read back from model output (tools/tport/serve/tool_calls.c):
 * the format a template shows, and DeepSeek's calls in the R1 / V3 form
 * (function<｜tool▁sep｜>NAME, a fenced JSON block) and the V3.1 form
 * (NAME<｜tool▁sep｜>ARGS), with the content around them; output that is
 * not a whole call stays content. */
#include "test_util.h"
#include "tool_calls.h"

#define B "<\357\275\234tool\342\226\201calls\342\226\201begin\357\275\234>"
#define E "<\357\275\234tool\342\226\201calls\342\226\201end\357\275\234>"
#define CB "<\357\275\234tool\342\226\201call\342\226\201begin\357\275\234>"
#define CE "<\357\275\234tool\342\226\201call\342\226\201end\357\275\234>"
#define SEP "<\357\275\234tool\342\226\201sep\357\275\234>"

/* text -> content, calls as "name args;..." */
static void expect(tool_format f, const char *text, const char *content, const char *calls) {
    char *got_content = NULL;
    cJSON *c = tool_calls_parse(f, text, 3, &got_content);
    char got[512] = "";
    int i = 0;
    for (cJSON *k = c ? c->child : NULL; k; k = k->next, i++) {
        const cJSON *fn = cJSON_GetObjectItem(k, "function");
        char want_id[32];
        snprintf(want_id, sizeof want_id, "call_3_%d", i);
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(k, "id"));
        CHECK(id && !strcmp(id, want_id), "id %s", id ? id : "(none)");
        size_t n = strlen(got);
        snprintf(got + n, sizeof got - n, "%s %s;", cJSON_GetStringValue(cJSON_GetObjectItem(fn, "name")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(fn, "arguments")));
    }
    CHECK(!strcmp(got, calls), "calls '%s', want '%s' in: %s", got, calls, text);
    CHECK(got_content && !strcmp(got_content, content), "content '%s', want '%s' in: %s",
          got_content ? got_content : "(null)", content, text);
    cJSON_Delete(c);
    free(got_content);
}

int main(void) {
    CHECK(tool_format_detect("{{'<\357\275\234Assistant\357\275\234>" B CB "' + tool['type'] + '" SEP "'") ==
              TOOL_FMT_DEEPSEEK,
          "DeepSeek template");
    CHECK(tool_format_detect("{{- '<|channel|>' }}") == TOOL_FMT_HARMONY, "gpt-oss template");
    CHECK(tool_format_detect("<tool_call>") == TOOL_FMT_HERMES, "hermes template");
    CHECK(!strcmp(tool_format_name(TOOL_FMT_DEEPSEEK), "deepseek"), "name");
    /* R1 / V3: two calls, content before */
    expect(TOOL_FMT_DEEPSEEK,
           "Let me check." B CB "function" SEP "get_weather\n```json\n{\"city\": \"Paris\"}\n```" CE CB "function" SEP
           "get_time\n```json\n{\"zone\":1}\n```" CE E,
           "Let me check.", "get_weather {\"city\":\"Paris\"};get_time {\"zone\":1};");
    /* V3.1: NAME<｜tool▁sep｜>ARGS; the end marker missing (cut at EOS) */
    expect(TOOL_FMT_DEEPSEEK, B CB "get_weather" SEP "{\"city\":\"Oslo\",\"unit\":\"c\"}" CE, "",
           "get_weather {\"city\":\"Oslo\",\"unit\":\"c\"};");
    /* not JSON, no separator, a name over lines: all content */
    expect(TOOL_FMT_DEEPSEEK, "x" B CB "f" SEP "{oops" CE E, "x" B CB "f" SEP "{oops" CE E, "");
    expect(TOOL_FMT_DEEPSEEK, B CB "f {}" CE E, B CB "f {}" CE E, "");
    expect(TOOL_FMT_DEEPSEEK, "  plain answer ", "plain answer", "");
    /* the other formats still read */
    expect(TOOL_FMT_HERMES, "a<tool_call>{\"name\":\"f\",\"arguments\":{\"x\":1}}</tool_call>", "a", "f {\"x\":1};");
    /* a forced call is refused for the formats whose calls are not one JSON object */
    serve_error err = {.param = NULL};
    char *g = tool_grammar(TOOL_FMT_DEEPSEEK, "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]", NULL, &err);
    CHECK(!g && err.param && !strcmp(err.param, "tool_choice") && strstr(err.message, "DeepSeek"), "forced: %s",
          err.message);
    free(g);
    return test_finish("test_serve_tool_calls");
}
