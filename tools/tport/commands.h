/* Subcommands of the tport tool; each lives in its own cmd_<name>.c. */
#ifndef TPORT_TOOL_COMMANDS_H
#define TPORT_TOOL_COMMANDS_H

#include <stdio.h>

#include "tport/model_file.h"
#include "tport/tport.h"

int cmd_backends(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_types(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_check_backend(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_dequantize(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_imatrix(int argc, char **argv);

/* Writes s as a JSON string: quotes, backslashes and control bytes escaped;
 * bytes that are not valid UTF-8 (model files hold anything) become U+FFFD.
 * NULL is written as "". */
void tool_json_string(FILE *f, const char *s);

/* The integer key ARCH.SUFFIX of a model file (expert_count ...) as an
 * unsigned count; 0 when absent, negative or not an integer. */
uint32_t tool_arch_u32(const tport_model_file *mf, const char *arch, const char *suffix);

/* Parses the integer value s of option `flag` of command `cmd` into *out,
 * within [lo, hi]; 0, or tool_fail's 2 naming the option. */
int tool_parse_long(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out);

/* Prints "tport: <message>" on stderr; returns `status` for `return fail(..)`. */
int tool_fail(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The architectures this build runs, "llama, gpt2, ..." (the library's
 * table), into buf. */
const char *tool_arch_list(char *buf, size_t cap);
/* Whether this build runs the architecture NAME. */
bool tool_arch_known(const char *name);

/* Reads all of `path` (at most about max_bytes) into a malloc'd buffer;
 * NULL after printing "tport: ..." on failure (tool_rawfile.c). */
void *tool_read_all(const char *path, size_t max_bytes, size_t *size);
/* Writes n bytes to `path`; 0, or 2 after printing "tport: ...". */
int tool_write_all(const char *path, const void *data, size_t n);

/* The tokens of the whole text file at path, as llama.cpp's tools
 * tokenize their -f file (tool_text.c); NULL after printing
 * "tport: WHAT: ..." on failure. */
tport_token *tool_tokenize_file(const tport_model *m, const char *path, const char *what, int32_t *n_out);
/* Whether the vocabulary adds BOS (llama.cpp's llama_vocab_get_add_bos). */
bool tool_adds_bos(const tport_model *m);
/* -log p(tok) under logits, as llama-perplexity's and llama-imatrix's
 * log_softmax: float max and differences, double sum of expf. */
double tool_neg_log_prob(const float *logits, int32_t n_vocab, tport_token tok);

/* --session FILE (tool_session.c): evaluates the n tokens of prompt in s,
 * first reusing the cache saved in path (when it exists) for the longest
 * common beginning, then saving the prompt's cache there if it changed;
 * *reused gets the tokens not evaluated again.  The last token is always
 * evaluated, so the logits are there.  0, or 2 after printing why. */
int tool_session_prompt(tport_session *s, const char *path, const tport_token *prompt, int32_t n,
                        int32_t *reused);

/* When s is full: a context shift keeping the first n_keep positions and
 * dropping half of the rest.  0 when there is room now; 1 (after saying
 * why on stderr) when the model cannot shift or n_keep leaves nothing to
 * drop; 2 after printing an error. */
int tool_make_room(tport_session *s, const tport_model *m, int32_t n_keep);

/* --session FILE (tool_session.c): evaluates the n tokens of prompt in s,
 * first reusing the cache saved in path (when it exists) for the longest
 * common beginning, then saving the prompt's cache there if it changed;
 * *reused gets the tokens not evaluated again.  The last token is always
 * evaluated, so the logits are there.  0, or 2 after printing why. */
int tool_session_prompt(tport_session *s, const char *path, const tport_token *prompt, int32_t n,
                        int32_t *reused);

/* When s is full: a context shift keeping the first n_keep positions and
 * dropping half of the rest.  0 when there is room now; 1 (after saying
 * why on stderr) when the model cannot shift or n_keep leaves nothing to
 * drop; 2 after printing an error. */
int tool_make_room(tport_session *s, const tport_model *m, int32_t n_keep);

#endif
