/* tport chat's reply stream (tools/tport/chat_stream.c): a reasoning
 * model's <think>...</think> dimmed on a terminal or hidden with
 * --hide-thinking, also when the tags arrive split over several tokens,
 * and text that only looks like the start of a tag passed through. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "chat_stream.h"

/* Streams the pieces; returns what was written (malloc'd). */
static char *stream_from(const char *const *pieces, bool color, bool hide, bool thinking) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    chat_stream s;
    chat_stream_begin(&s, f, color, hide);
    if (thinking)
        chat_stream_thinking(&s);
    for (int i = 0; pieces[i]; i++)
        chat_stream_put(&s, pieces[i], strlen(pieces[i]));
    chat_stream_end(&s);
    fclose(f);
    return buf;
}

static char *stream_harmony(const char *const *pieces, bool color, bool hide) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    chat_stream s;
    chat_stream_begin(&s, f, color, hide);
    chat_stream_harmony(&s);
    for (int i = 0; pieces[i]; i++)
        chat_stream_put(&s, pieces[i], strlen(pieces[i]));
    chat_stream_end(&s);
    fclose(f);
    return buf;
}

static char *stream(const char *const *pieces, bool color, bool hide) {
    return stream_from(pieces, color, hide, false);
}

int main(void) {
    const char *const split[] = {"Hi <th", "ink>let me", " think</th", "ink> The answer", " is 4 < 5.", NULL};
    char *plain = stream(split, false, false);
    CHECK(!strcmp(plain, "Hi <think>let me think</think> The answer is 4 < 5."), "plain: %s", plain);
    char *dim = stream(split, true, false);
    CHECK(!strcmp(dim, "Hi \033[2m<think>let me think</think>\033[0m The answer is 4 < 5."), "dim: %s", dim);
    char *hidden = stream(split, true, true);
    CHECK(!strcmp(hidden, "Hi  The answer is 4 < 5."), "hidden: %s", hidden);
    /* a tag never closed: the dimming ends with the reply */
    const char *const open[] = {"<think>", "still thinking <", NULL};
    char *unclosed = stream(open, true, false);
    CHECK(!strcmp(unclosed, "\033[2m<think>still thinking <\033[0m"), "unclosed: %s", unclosed);
    /* look-alikes pass */
    const char *const like[] = {"<thin", "g> <t", "hin", "k", NULL};
    char *lk = stream(like, true, true);
    CHECK(!strcmp(lk, "<thing> <thin" "k") || !strcmp(lk, "<thing> <think"), "look-alike: %s", lk);
    /* the prompt opened the thinking (DeepSeek-R1's template) */
    const char *const opened[] = {"hmm</thi", "nk>Four.", NULL};
    char *o1 = stream_from(opened, true, false, true), *o2 = stream_from(opened, true, true, true);
    CHECK(!strcmp(o1, "\033[2mhmm</think>\033[0mFour."), "opened by the prompt: %s", o1);
    CHECK(!strcmp(o2, "Four."), "opened by the prompt, hidden: %s", o2);
    free(o1);
    free(o2);
    /* gpt-oss: headers hidden, analysis as thinking, a call dimmed, the
     * final channel the answer; markers as whole tokens or split */
    const char *const oss[] = {"<|channel|>", "analysis", "<|message|>", "2+2 <is> 4.", "<|end|>", "<|start|>",
                               "assistant", "<|channel|>", "final", "<|message|>", "Four <|", "x.", NULL};
    char *h1 = stream_harmony(oss, true, false), *h2 = stream_harmony(oss, true, true);
    CHECK(!strcmp(h1, "\033[2m2+2 <is> 4.\033[0mFour <|x."), "harmony: %s", h1);
    CHECK(!strcmp(h2, "Four <|x."), "harmony, hidden: %s", h2);
    const char *const call[] = {"<|chan", "nel|>commentary to=functions.f <|constrain|>json<|mes", "sage|>{\"a\":1}",
                                NULL};
    char *h3 = stream_harmony(call, true, false), *h4 = stream_harmony(call, false, true);
    CHECK(!strcmp(h3, "\033[2m{\"a\":1}\033[0m"), "harmony call: %s", h3);
    CHECK(!strcmp(h4, ""), "harmony call, hidden: %s", h4);
    const char *const plain_oss[] = {"No", " header <|end", "|> here", NULL};
    char *h5 = stream_harmony(plain_oss, false, false);
    CHECK(!strcmp(h5, "No header  here"), "harmony, plain text: %s", h5);
    char *a = chat_harmony_answer("<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>final"
                                  "<|message|>Paris.");
    CHECK(a && !strcmp(a, "Paris."), "answer: %s", a ? a : "(null)");
    free(h1);
    free(h2);
    free(h3);
    free(h4);
    free(h5);
    free(a);
    free(plain);
    free(dim);
    free(hidden);
    free(unclosed);
    free(lk);
    return test_finish("test_chat_stream");
}
