/* tport serve: one generation on one slot's session — the prompt, then a
 * token at a time, with stop tokens, stop strings and UTF-8-safe output. */
#ifndef TPORT_SERVE_GENERATE_H
#define TPORT_SERVE_GENERATE_H

#include <stdbool.h>
#include <stddef.h>

#include "prompt.h"
#include "request.h"
#include "tport/tport.h"
#include "utf8.h"

typedef struct gen_job {
    const tport_model *m;
    tport_session *s;
    tport_sampler *sm;
    tport_token *prompt;
    int32_t n_ctx, n_prompt, max_tokens, n_gen;
    tport_token stop_ids[2];      /* EOS and the template's end of turn, -1 = none */
    char *stop[SERVE_MAX_STOP + 1];
    int n_stop;
    char *text;                   /* everything generated so far        */
    size_t len, cap, emitted;     /* bytes; emitted <= len              */
    tport_token prev;
    bool started, done, failed;
    const char *finish_reason;    /* "stop" or "length" once done       */
    char error[256];
} gen_job;

/* Sets up a job that owns prompt; the session and sampler stay the
 * caller's.  end_of_turn is an extra stop marker (chat), or NULL. */
bool gen_init(gen_job *j, const tport_model *m, tport_session *s, int32_t n_ctx, tport_sampler *sm,
              tport_token *prompt, int32_t n_prompt, int32_t max_tokens, char *const *stop, int n_stop, const char *end_of_turn);
/* Evaluates the prompt (first call) or the last token, and samples the
 * next one.  false once done (or failed: j->failed, j->error). */
bool gen_step(gen_job *j);
/* Ends the generation early (shutdown): finish_reason "length". */
void gen_cut(gen_job *j);
/* The bytes that may be sent now: complete UTF-8, and not a possible start
 * of a stop string (unless done).  Advances j->emitted; returns a malloc'd
 * valid UTF-8 string (invalid bytes become U+FFFD), or NULL if out of memory. */
char *gen_take(gen_job *j);
void gen_free(gen_job *j);

#endif
