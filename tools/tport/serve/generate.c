/* The generation loop of tport serve, token by token over the public
 * session API: the same steps as `tport run`, plus stop handling. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"

bool gen_init(gen_job *j, const tport_model *m, tport_session *s, int32_t n_ctx, tport_sampler *sm,
              tport_token *prompt, int32_t n_prompt, int32_t max_tokens, char *const *stop, int n_stop, const char *end_of_turn) {
    *j = (gen_job){.m = m, .s = s, .sm = sm, .prompt = prompt, .n_prompt = n_prompt, .max_tokens = max_tokens, .n_ctx = n_ctx,
                   .prev = n_prompt ? prompt[n_prompt - 1] : -1};
    j->stop_ids[0] = tport_model_eos(m);
    j->stop_ids[1] = end_of_turn ? tport_token_lookup(m, end_of_turn, strlen(end_of_turn)) : -1;
    /* copies: a streaming job outlives the request it came from */
    bool ok = true;
    for (int i = 0; i < n_stop && i < SERVE_MAX_STOP; i++)
        ok &= (j->stop[j->n_stop++] = strdup(stop[i])) != NULL;
    if (end_of_turn && j->stop_ids[1] < 0) /* not a token: stop at its text */
        ok &= (j->stop[j->n_stop++] = strdup(end_of_turn)) != NULL;
    return ok;
}

static void finish(gen_job *j, const char *reason) {
    j->done = true;
    j->finish_reason = reason;
}

static bool append(gen_job *j, const char *s, size_t n) {
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? 2 * j->cap : 256;
        while (cap < j->len + n + 1)
            cap *= 2;
        char *t = realloc(j->text, cap);
        if (!t)
            return false;
        j->text = t;
        j->cap = cap;
    }
    memcpy(j->text + j->len, s, n);
    j->len += n;
    j->text[j->len] = 0;
    return true;
}

/* A stop string inside the text ends it there. */
static bool cut_at_stop(gen_job *j, size_t before) {
    for (int i = 0; i < j->n_stop; i++) {
        size_t n = j->stop[i] ? strlen(j->stop[i]) : 0;
        if (!n)
            continue;
        size_t from = before >= n ? before - n + 1 : 0;
        for (size_t k = from; k + n <= j->len; k++)
            if (!memcmp(j->text + k, j->stop[i], n)) {
                j->len = k;
                j->text[k] = 0;
                return true;
            }
    }
    return false;
}

static bool step_failed(gen_job *j, const char *why) {
    snprintf(j->error, sizeof j->error, "%s", why);
    j->failed = true;
    j->done = true;
    j->finish_reason = "stop";
    return false;
}

bool gen_step(gen_job *j) {
    if (j->done)
        return false;
    tport_status st;
    if (!j->started) {
        j->started = true;
        for (int32_t i = 0; i < j->n_prompt; i++)
            tport_sampler_accept(j->sm, j->prompt[i]);
        st = tport_session_eval(j->s, j->prompt, j->n_prompt);
    } else {
        st = tport_session_eval(j->s, &j->prev, 1);
    }
    if (st != TPORT_STATUS_OK)
        return step_failed(j, tport_last_error());
    tport_token id = tport_sampler_sample(j->sm, tport_session_logits(j->s), tport_model_n_vocab(j->m));
    if (id < 0)
        return step_failed(j, "sampling failed");
    if (id == j->stop_ids[0] || id == j->stop_ids[1]) {
        finish(j, "stop");
        return false;
    }
    tport_sampler_accept(j->sm, id);
    char piece[256];
    int32_t k = tport_token_to_text(j->m, j->prev, id, piece, (int32_t)sizeof piece);
    size_t before = j->len;
    if (!append(j, piece, (size_t)k))
        return step_failed(j, "out of memory");
    j->prev = id;
    j->n_gen++;
    if (cut_at_stop(j, before))
        finish(j, "stop");
    else if (j->n_gen >= j->max_tokens || j->n_prompt + j->n_gen >= j->n_ctx)
        finish(j, "length"); /* asked for no more, or the context is full */
    return !j->done;
}

void gen_cut(gen_job *j) {
    if (!j->done)
        finish(j, "length");
}

/* Bytes at the end that could begin a stop string. */
static size_t stop_prefix_hold(const gen_job *j) {
    size_t hold = 0;
    for (int i = 0; i < j->n_stop; i++) {
        size_t n = j->stop[i] ? strlen(j->stop[i]) : 0;
        if (!n)
            continue;
        for (size_t h = n - 1; h > hold; h--)
            if (h <= j->len && !memcmp(j->text + j->len - h, j->stop[i], h)) {
                hold = h;
                break;
            }
    }
    return hold;
}

/* Where a UTF-8 sequence still incomplete at `end` begins, or end. */
static size_t utf8_complete(const char *s, size_t start, size_t end) {
    for (size_t back = 1; back <= 3 && back <= end - start; back++) {
        unsigned char c = (unsigned char)s[end - back];
        if ((c & 0xC0) == 0x80)
            continue; /* continuation byte */
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > back ? end - back : end;
    }
    return end;
}

char *gen_take(gen_job *j) {
    size_t end = j->len;
    if (!j->done) {
        size_t hold = stop_prefix_hold(j);
        end = end - hold > j->emitted ? end - hold : j->emitted;
        end = utf8_complete(j->text, j->emitted, end);
    }
    char *out = utf8_clean(j->text ? j->text + j->emitted : "", end - j->emitted);
    if (out)
        j->emitted = end;
    return out;
}

void gen_free(gen_job *j) {
    free(j->prompt);
    free(j->text);
    for (int i = 0; i < j->n_stop; i++)
        free(j->stop[i]);
    j->n_stop = 0;
    j->prompt = NULL;
    j->text = NULL;
}
