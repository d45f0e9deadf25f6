/* libFuzzer target: tport serve's parsers of model output, which a
 * prompt can steer anywhere: gpt-oss replies (harmony.c), whose parts are
 * never longer than the text and whose settled prefix parses too, and the
 * tool calls of every format (tool_calls.c). */
#include <stdlib.h>
#include <string.h>

#include "harmony.h"
#include "tool_calls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0; /* generated text holds no NUL: the parser reads up to one */
    size_t len = strlen(text);
    harmony_reply r;
    if (harmony_parse(text, size & 1, 1, &r)) {
        if ((r.reasoning && strlen(r.reasoning) > 2 * len + 1) || (r.content && strlen(r.content) > 2 * len + 1))
            abort();
        harmony_reply_free(&r);
    }
    size_t k = harmony_settled(text, len);
    if (k > len)
        abort();
    text[k] = 0;
    if (harmony_parse(text, true, 2, &r))
        harmony_reply_free(&r);
    memcpy(text, data, size); /* the whole text again */
    for (int f = TOOL_FMT_NONE; f <= TOOL_FMT_DEEPSEEK; f++) {
        char *content = NULL;
        cJSON *calls = tool_calls_parse((tool_format)f, text, 1, &content);
        if (content && strlen(content) > len)
            abort();
        cJSON_Delete(calls);
        free(content);
    }
    free(text);
    return 0;
}
