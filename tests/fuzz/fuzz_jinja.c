/* libFuzzer target: any bytes as a Jinja chat template.  Up to the first
 * NUL byte is the template; what follows, if anything, is the JSON
 * context, else a fixed conversation with tools and tool calls is used.
 * Rendering must succeed or fail cleanly within the limits, and the
 * reported length must match the output. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tport/tport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char CONTEXT[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi\"},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\","
    " \"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1.5}}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"ok\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t tlen = nul ? (size_t)(nul - data) : size;
    char *ctx = NULL;
    if (nul) {
        size_t clen = size - tlen - 1;
        ctx = malloc(clen + 1);
        if (!ctx)
            return 0;
        memcpy(ctx, nul + 1, clen);
        ctx[clen] = 0;
    }
    tport_template_limits lim = {.max_output = 1 << 20, .max_memory = 64 << 20, .max_steps = 200000, .now = 1768478400};
    size_t n = 0;
    char *out = tport_template_render((const char *)data, tlen, ctx ? ctx : CONTEXT, &lim, &n);
    if (out && (n > lim.max_output || out[n] != 0))
        abort();
    free(out);
    free(ctx);
    return 0;
}
