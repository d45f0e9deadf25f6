/* Subcommands of the tport tool; each lives in its own cmd_<name>.c. */
#ifndef TPORT_TOOL_COMMANDS_H
#define TPORT_TOOL_COMMANDS_H

#include <stdio.h>

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
int cmd_serve(int argc, char **argv);

/* Writes s as a JSON string: quotes, backslashes and control bytes escaped;
 * bytes that are not valid UTF-8 (model files hold anything) become U+FFFD.
 * NULL is written as "". */
void tool_json_string(FILE *f, const char *s);

/* Prints "tport: <message>" on stderr; returns `status` for `return fail(..)`. */
int tool_fail(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The architectures this build runs, "llama, gpt2, ..." (the library's
 * table), into buf. */
const char *tool_arch_list(char *buf, size_t cap);

/* Reads all of `path` (at most about max_bytes) into a malloc'd buffer;
 * NULL after printing "tport: ..." on failure (tool_rawfile.c). */
void *tool_read_all(const char *path, size_t max_bytes, size_t *size);
/* Writes n bytes to `path`; 0, or 2 after printing "tport: ...". */
int tool_write_all(const char *path, const void *data, size_t n);

#endif
