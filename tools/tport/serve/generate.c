/* The generation loop of tport serve, token by token over the public
 * session API: the same steps as `tport run`, plus the prompt cache, stop
 * handling, grammars (tport_grammar_*) and log-probabilities.  The prompt
 * (in chunks) and each later token go through the slots' batcher, in one
 * step with the other slots' tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "generate.h"
#include "harmony.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void gen_spec_free(gen_spec *s) {
    free(s->bias);
    tport_grammar_free(s->grammar);
    free(s->prompt);
    for (int i = 0; i < s->n_stop; i++)
        free(s->stop[i]);
    memset(s, 0, sizeof *s);
}

static bool fail_init(gen_job *j, const char *why) {
    snprintf(j->error, sizeof j->error, "%s", why);
    j->failed = j->done = true;
    return false;
}

bool gen_init(gen_job *j, const tport_model *m, tport_session *s, batcher *bt, int slot, int32_t n_ctx,
              const gen_spec *spec, int choice, const char *end_of_turn) {
    *j = (gen_job){.m = m, .s = s, .bt = bt, .slot = slot, .spec = spec, .n_prompt = spec->n_prompt,
                   .max_tokens = spec->max_tokens, .n_ctx = n_ctx,
                   .prev = spec->n_prompt ? spec->prompt[spec->n_prompt - 1] : -1};
    tport_token eos = tport_model_eos(m);
    tport_token eot = end_of_turn ? tport_token_lookup(m, end_of_turn, strlen(end_of_turn)) : -1;
    if (eos >= 0)
        j->stop_ids[j->n_stop_ids++] = eos;
    if (eot >= 0 && eot != eos)
        j->stop_ids[j->n_stop_ids++] = eot;
    /* gpt-oss's ends of generation, which llama.cpp knows by their text */
    for (int i = 0; harmony_stop_texts[i]; i++) {
        tport_token t = tport_token_lookup(m, harmony_stop_texts[i], strlen(harmony_stop_texts[i]));
        if (t >= 0 && t != eos && t != eot)
            j->stop_ids[j->n_stop_ids++] = t;
    }
    for (int i = 0; i < spec->n_stop; i++)
        if (!(j->stop[j->n_stop++] = strdup(spec->stop[i])))
            return fail_init(j, "out of memory");
    if (end_of_turn && eot < 0 && !(j->stop[j->n_stop++] = strdup(end_of_turn))) /* not a token: its text */
        return fail_init(j, "out of memory");
    tport_sampler_params sp = spec->sp;
    sp.seed += (uint64_t)choice; /* several choices differ, and each is reproducible */
    if (!(j->sm = tport_sampler_new(&sp)))
        return fail_init(j, tport_last_error());
    /* ignore_eos, as llama-server does it: the ends of generation are never
     * sampled (a bias of -inf after the request's own), so nothing stops
     * early but max_tokens, the context and the stop strings */
    int32_t n_bias = spec->n_bias + (spec->ignore_eos ? j->n_stop_ids : 0);
    tport_logit_bias *bias = n_bias ? malloc((size_t)n_bias * sizeof *bias) : NULL;
    if (n_bias && !bias)
        return fail_init(j, "out of memory");
    for (int32_t i = 0; i < spec->n_bias; i++)
        bias[i] = spec->bias[i];
    if (spec->ignore_eos) {
        for (int i = 0; i < j->n_stop_ids; i++)
            bias[spec->n_bias + i] = (tport_logit_bias){j->stop_ids[i], -INFINITY};
        j->n_stop_ids = 0;
    }
    tport_status st = n_bias ? tport_sampler_set_logit_bias(j->sm, bias, n_bias) : TPORT_STATUS_OK;
    free(bias);
    if (st != TPORT_STATUS_OK)
        return fail_init(j, tport_last_error());
    if (spec->grammar) {
        const tport_tokenizer *tk = tport_model_tokenizer(m);
        if (!tk || !(j->gs = tport_grammar_state_new(spec->grammar, tk)))
            return fail_init(j, tk ? tport_last_error() : "the model has no vocabulary");
    }
    /* in the steps from now on: the step being gathered waits for this
     * prompt rather than leaving it to the one after (batcher.c) */
    if (bt) {
        batcher_join(bt, slot);
        atomic_store(&j->joined, true);
    }
    return true;
}

void gen_leave(gen_job *j) {
    if (atomic_exchange(&j->in_flight, false)) /* the session is the batcher's until then */
        (void)batcher_wait(j->bt, j->slot, NULL, 0, NULL, NULL);
    if (atomic_exchange(&j->joined, false))
        batcher_leave(j->bt, j->slot);
}

static void finish(gen_job *j, const char *reason) {
    j->done = true;
    j->finish_reason = reason;
    gen_leave(j);
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

/* A stop string inside the text ends it there (and the log-probabilities
 * of the tokens cut off go too). */
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
                while (j->n_lp > 0 && j->lp[j->n_lp - 1].start >= k)
                    j->n_lp--;
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
    gen_leave(j);
    return false;
}

/* The prompt, less the prefix the slot's cache holds already (at least
 * its last token is evaluated again, for its logits): in the batcher's
 * steps, a chunk a step, beside the other slots' tokens (the job joins
 * them here), else on the session alone.  why gets a failure's reason. */
static tport_status eval_prompt(gen_job *j, char *why, size_t cap) {
    const tport_token *p = j->spec->prompt;
    int32_t common = tport_session_reuse_prefix(j->s, p, j->n_prompt);
    tport_status st = common < 0 ? TPORT_STATUS_INVALID_ARGUMENT : TPORT_STATUS_OK;
    if (common >= 0)
        j->n_cached = common;
    if (!st && !j->bt)
        st = tport_session_eval(j->s, p + common, j->n_prompt - common);
    if (!st && j->bt) {
        batcher_join(j->bt, j->slot); /* joined in gen_init; again after gen_leave */
        atomic_store(&j->joined, true);
        for (int32_t done = common, k; done < j->n_prompt && !st; done += k) {
            k = j->n_prompt - done < GEN_PROMPT_CHUNK ? j->n_prompt - done : GEN_PROMPT_CHUNK;
            st = batcher_eval(j->bt, j->slot, j->s, p + done, k, why, cap);
        }
        return st;
    }
    if (st)
        snprintf(why, cap, "%s", tport_last_error());
    return st;
}

static bool is_stop_id(const gen_job *j, tport_token id) {
    for (int i = 0; i < j->n_stop_ids; i++)
        if (id == j->stop_ids[i])
            return true;
    return false;
}

/* The next token: sampled, then (with a grammar) checked, and only when
 * the grammar refuses it sampled again from the masked logits (llama.cpp
 * does the same).  Greedy, that is the masked argmax; sampling without
 * truncation (top_k 0, top_p 1, min_p 0) it is exactly the masked
 * distribution (an allowed t: p(t) + P(refused) p(t) / P(allowed) =
 * p(t) / P(allowed)); with truncation, the kept sets before and after the
 * mask may differ a little, as in llama.cpp.  Computing the mask over the
 * whole vocabulary at every step costs far more. */
static tport_token pick(gen_job *j, const float *logits, int32_t n_vocab) {
    tport_token id = tport_sampler_sample(j->sm, logits, n_vocab);
    if (!j->gs || id < 0)
        return id;
    if (is_stop_id(j, id) ? tport_grammar_can_end(j->gs) : tport_grammar_allows(j->gs, id))
        return id;
    if (!j->work && !(j->work = malloc((size_t)n_vocab * sizeof *j->work)))
        return -1;
    memcpy(j->work, logits, (size_t)n_vocab * sizeof *j->work);
    if (tport_grammar_apply(j->gs, j->work, n_vocab, j->stop_ids, j->n_stop_ids) != TPORT_STATUS_OK)
        return -2;
    return tport_sampler_sample(j->sm, j->work, n_vocab);
}

/* log-softmax of the model's logits: the chosen token's and the best k */
static bool record_logprob(gen_job *j, const float *logits, int32_t n_vocab, tport_token id, size_t start) {
    if (j->n_lp == j->cap_lp) {
        int32_t cap = j->cap_lp ? 2 * j->cap_lp : 32;
        gen_logprob *g = realloc(j->lp, (size_t)cap * sizeof *g);
        if (!g)
            return false;
        j->lp = g;
        j->cap_lp = cap;
    }
    float mx = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++)
        if (logits[i] > mx)
            mx = logits[i];
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum += exp((double)logits[i] - mx);
    float lse = mx + (float)log(sum);
    gen_logprob *r = &j->lp[j->n_lp++];
    *r = (gen_logprob){.id = id, .logprob = logits[id] - lse, .start = start};
    int k = j->spec->top_logprobs;
    for (int32_t i = 0; i < n_vocab && k > 0; i++) { /* insertion into the best k, ties to the smaller id */
        float lp = logits[i] - lse;
        if (r->n_top == k && !(lp > r->top_lp[k - 1]))
            continue;
        int at = r->n_top < k ? r->n_top++ : k - 1;
        while (at > 0 && lp > r->top_lp[at - 1]) {
            r->top_lp[at] = r->top_lp[at - 1];
            r->top_id[at] = r->top_id[at - 1];
            at--;
        }
        r->top_lp[at] = lp;
        r->top_id[at] = i;
    }
    return true;
}

static bool after_step(gen_job *j);

/* after_step run by the batcher's step thread (batcher_wait's next): the
 * job's thread sleeps in batcher_wait until it is over.  The token in
 * flight has been evaluated: the batcher may run this again after the
 * step of the token it hands in, the job's thread sleeping on (held). */
static void next_on_step_thread(void *arg) {
    gen_job *j = arg;
    atomic_store(&j->in_flight, false);
    j->continued = true;
    (void)after_step(j);
}

/* Whether the step thread may sample for the job: every slot's next step
 * waits for it meanwhile, so not with a grammar (whose mask over the
 * vocabulary can take milliseconds), log-probabilities (an exp per
 * vocabulary entry) or sampling that sorts the whole vocabulary (top_k
 * 0); the batcher bounds the time it spends so too. */
static bool cheap_to_sample(const gen_job *j) {
    const tport_sampler_params *p = &j->spec->sp;
    return !j->gs && !j->spec->logprobs && (p->temperature <= 0 || p->top_k > 0);
}

bool gen_step(gen_job *j) {
    if (j->done)
        return false;
    tport_status st;
    double t0 = now_ms();
    if (!j->started) {
        j->started = true;
        for (int32_t i = 0; i < j->n_prompt; i++)
            tport_sampler_accept(j->sm, j->spec->prompt[i]);
        char why[sizeof j->error];
        st = eval_prompt(j, why, sizeof why);
        j->prompt_ms += now_ms() - t0;
        if (st != TPORT_STATUS_OK)
            return step_failed(j, why);
    } else if (atomic_exchange(&j->in_flight, false)) {
        char why[sizeof j->error];
        st = batcher_wait(j->bt, j->slot, why, sizeof why, cheap_to_sample(j) ? next_on_step_thread : NULL, j);
        j->gen_ms += now_ms() - t0;
        if (st != TPORT_STATUS_OK)
            return step_failed(j, why);
        if (j->continued) { /* sampled, and the next token handed in, by the step thread */
            j->continued = false;
            return !j->done;
        }
    } else if (atomic_load(&j->joined)) {
        char why[sizeof j->error];
        st = batcher_eval(j->bt, j->slot, j->s, &j->prev, 1, why, sizeof why);
        j->gen_ms += now_ms() - t0;
        if (st != TPORT_STATUS_OK)
            return step_failed(j, why);
    } else {
        st = tport_session_eval(j->s, &j->prev, 1);
        j->gen_ms += now_ms() - t0;
    }
    if (st != TPORT_STATUS_OK)
        return step_failed(j, tport_last_error());
    return after_step(j);
}

/* The token after the step: sampled, its text appended, the ends
 * checked, and (generating on) handed in for the next step. */
static bool after_step(gen_job *j) {
    const float *logits = tport_session_logits(j->s);
    int32_t n_vocab = tport_model_n_vocab(j->m);
    tport_token id = pick(j, logits, n_vocab);
    if (id == -2)
        return step_failed(j, tport_last_error());
    if (id < 0)
        return step_failed(j, "sampling failed");
    if (is_stop_id(j, id)) {
        finish(j, "stop");
        return false;
    }
    tport_sampler_accept(j->sm, id);
    if (j->gs && tport_grammar_accept(j->gs, id) != TPORT_STATUS_OK)
        return step_failed(j, tport_last_error());
    char piece[256];
    int32_t k = tport_token_to_text(j->m, j->prev, id, piece, (int32_t)sizeof piece);
    size_t before = j->len;
    if ((j->spec->logprobs && !record_logprob(j, logits, n_vocab, id, before)) || !append(j, piece, (size_t)k))
        return step_failed(j, "out of memory");
    if (j->spec->logprobs)
        j->lp[j->n_lp - 1].end = j->len;
    j->prev = id;
    j->n_gen++;
    if (cut_at_stop(j, before))
        finish(j, "stop");
    else if (j->gs && tport_grammar_must_end(j->gs))
        finish(j, "stop"); /* the grammar is complete and allows nothing more */
    else if (j->n_gen >= j->max_tokens || j->n_prompt + j->n_gen >= j->n_ctx)
        finish(j, "length"); /* asked for no more, or the context is full */
    /* the next step starts without waiting for this token's text to be
     * sent: the caller sends it while the step runs, and the next
     * gen_step waits for the step (issue 42: every slot's sending was
     * between two steps, 8 slots on 2 cores) */
    if (!j->done && atomic_load(&j->joined)) {
        batcher_submit(j->bt, j->slot, j->s, &j->prev, 1);
        atomic_store(&j->in_flight, true);
    }
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

void gen_take_logprobs(gen_job *j, int32_t *from, int32_t *to) {
    *from = j->lp_sent;
    int32_t n = j->lp_sent;
    while (n < j->n_lp && (j->done || j->lp[n].end <= j->emitted))
        n++;
    *to = j->lp_sent = n;
}

void gen_free(gen_job *j) {
    gen_leave(j);
    free(j->text);
    free(j->lp);
    free(j->work);
    for (int i = 0; i < j->n_stop; i++)
        free(j->stop[i]);
    tport_sampler_free(j->sm);
    tport_grammar_state_free(j->gs);
    memset(j, 0, sizeof *j);
}
