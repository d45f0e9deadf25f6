/* tport serve: one generation on one slot's session — the prompt (its
 * prefix already in the slot's cache is kept), then a token at a time,
 * with stop tokens, stop strings, an optional grammar, log-probabilities
 * and UTF-8-safe output. */
#ifndef TPORT_SERVE_GENERATE_H
#define TPORT_SERVE_GENERATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "batcher.h"
#include "prompt.h"
#include "request.h"
#include "tport/tport.h"
#include "utf8.h"

#define GEN_MAX_TOP 20            /* OpenAI's limit on top_logprobs        */
#define GEN_PROMPT_CHUNK 64       /* prompt tokens per step: the sessions' n_batch */

/* What a request asks to generate, owned apart from the request (a
 * streaming answer outlives it); every choice (n > 1) starts from it. */
typedef struct gen_spec {
    tport_sampler_params sp;      /* choice i draws with seed sp.seed + i  */
    tport_logit_bias *bias;
    int32_t n_bias;
    bool ignore_eos;              /* the end-of-generation tokens get a bias of -inf */
    tport_grammar *grammar;       /* NULL = free text                     */
    tport_token *prompt;
    int32_t n_prompt, max_tokens;
    char *stop[SERVE_MAX_STOP + 1];
    int n_stop;
    int n_choices;
    bool logprobs;
    int top_logprobs;
    int tool_format;              /* a tool_format: parse calls out, 0 = none */
    bool harmony;                 /* a gpt-oss chat reply: split its channels (harmony.h) */
} gen_spec;
void gen_spec_free(gen_spec *s);

typedef struct gen_logprob {
    tport_token id;
    float logprob;
    size_t start, end;            /* its bytes in the text                 */
    int n_top;
    tport_token top_id[GEN_MAX_TOP];
    float top_lp[GEN_MAX_TOP];
} gen_logprob;

typedef struct gen_job {
    const tport_model *m;
    tport_session *s;
    batcher *bt;                  /* decoding steps go through it, or NULL */
    int slot;                     /* s's slot in bt                      */
    atomic_bool joined;           /* generating in bt's steps            */
    atomic_bool in_flight;        /* prev handed to bt, not yet waited for */
    const gen_spec *spec;
    tport_sampler *sm;
    tport_grammar_state *gs;
    int32_t n_ctx, n_prompt, n_cached, max_tokens, n_gen;
    tport_token stop_ids[4];      /* EOS, the template's end of turn, <|return|>, <|call|> */
    int n_stop_ids;
    char *stop[SERVE_MAX_STOP + 1];
    int n_stop;
    char *text;                   /* everything generated so far        */
    size_t len, cap, emitted;     /* bytes; emitted <= len              */
    gen_logprob *lp;              /* per generated token, if asked      */
    int32_t n_lp, cap_lp, lp_sent;
    float *work;                  /* masked logits (grammar)            */
    tport_token prev;
    double prompt_ms, gen_ms;     /* time in the prompt's evaluation, and after */
    bool started, done, failed;
    bool continued;               /* the step thread sampled for the job (batcher_wait) */
    const char *finish_reason;    /* "stop" or "length" once done       */
    char error[256];
} gen_job;

/* Sets up choice `choice` of spec (which must outlive the job) on session
 * s, slot `slot` of bt (NULL: every step on s alone); end_of_turn is an
 * extra stop marker (chat), or NULL.  false with j->error on failure
 * (gen_free either way). */
bool gen_init(gen_job *j, const tport_model *m, tport_session *s, batcher *bt, int slot, int32_t n_ctx,
              const gen_spec *spec, int choice, const char *end_of_turn);
/* Evaluates the prompt (first call; in chunks of GEN_PROMPT_CHUNK) or
 * the last token, in the batcher's steps (else on the session alone),
 * and samples the next one.  false once done (or failed: j->failed,
 * j->error).  In the batcher's steps, the new token is handed in before
 * it returns (the session is the batcher's until the next call, or
 * gen_leave, waits for the step). */
bool gen_step(gen_job *j);
/* The job takes no more steps: the batcher stops waiting for it (done by
 * the end of the generation, gen_cut and gen_free; before its slot is
 * handed on, a job that stops early must have left).  It first waits
 * for a token still in a step. */
void gen_leave(gen_job *j);
/* Ends the generation early (shutdown): finish_reason "length". */
void gen_cut(gen_job *j);
/* The bytes that may be sent now: complete UTF-8, and not a possible start
 * of a stop string (unless done).  Advances j->emitted; returns a malloc'd
 * valid UTF-8 string (invalid bytes become U+FFFD), or NULL if out of memory. */
char *gen_take(gen_job *j);
/* The log-probability records of the text taken so far and not yet
 * returned: [*from, *to). */
void gen_take_logprobs(gen_job *j, int32_t *from, int32_t *to);
void gen_free(gen_job *j);

#endif
