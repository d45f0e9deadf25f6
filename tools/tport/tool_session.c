/* What `tport run` and `tport chat` share about sessions: the prompt
 * cache on disk (--session) and making room in a full context. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

int tool_session_prompt(tport_session *s, const char *path, const tport_token *prompt, int32_t n,
                        int32_t *reused) {
    bool same = false; /* the file holds exactly this prompt: no need to write it again */
    if (path && access(path, F_OK) == 0) {
        if (tport_session_load(s, path) != TPORT_STATUS_OK)
            return tool_fail(2, "%s", tport_last_error());
        same = tport_session_pos(s) == n && !memcmp(tport_session_tokens(s), prompt, (size_t)n * sizeof *prompt);
    }
    /* the cached prefix kept, the last prompt token evaluated again for its logits */
    int32_t keep = tport_session_reuse_prefix(s, prompt, n);
    if (keep < 0 || tport_session_eval(s, prompt + keep, n - keep) != TPORT_STATUS_OK)
        return tool_fail(2, "%s", tport_last_error());
    *reused = keep;
    if (path && !same && tport_session_save(s, path) != TPORT_STATUS_OK)
        return tool_fail(2, "%s", tport_last_error());
    return 0;
}

int tool_make_room(tport_session *s, const tport_model *m, int32_t n_keep) {
    int32_t pos = tport_session_pos(s), n_ctx = tport_session_n_ctx(s);
    if (pos < n_ctx)
        return 0;
    if (!tport_model_can_shift(m)) {
        tport_session_shift(s, n_keep, 1); /* for its message */
        fprintf(stderr, "tport: the context of %d tokens is full; %s\n", (int)n_ctx, tport_last_error());
        return 1;
    }
    int32_t n_discard = (pos - n_keep) / 2;
    if (n_keep < 0 || n_discard <= 0) {
        fprintf(stderr, "tport: the context of %d tokens is full, and the %d tokens to keep leave nothing to "
                        "drop\n", (int)n_ctx, (int)n_keep);
        return 1;
    }
    if (tport_session_shift(s, n_keep, n_discard) != TPORT_STATUS_OK)
        return tool_fail(2, "%s", tport_last_error());
    return 0;
}
