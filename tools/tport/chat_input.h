/* tport chat: reading what the user types.  On a terminal with libedit
 * (Debian libedit-dev; tools/deps.txt), lines are edited and kept in a
 * history (arrow keys, Ctrl-R); without it, or when stdin is not a
 * terminal, lines are read as they come.  A line ending in a backslash
 * continues on the next; a line of three double quotes starts (and
 * another ends) a block of several lines. */
#ifndef TPORT_TOOL_CHAT_INPUT_H
#define TPORT_TOOL_CHAT_INPUT_H

#include <signal.h>
#include <stdbool.h>

/* Set by the SIGINT handler (chat_input_signals); the reader of input and
 * the generation loop clear it. */
extern volatile sig_atomic_t chat_interrupted;

/* Installs the SIGINT handler (no SA_RESTART: a blocking read returns). */
void chat_input_signals(void);

typedef struct chat_input {
    bool tty;        /* stdin and stdout are terminals: prompts, editing */
    bool edit;       /* libedit is in use                               */
} chat_input;

void chat_input_init(chat_input *in);
void chat_input_free(chat_input *in);
/* Whether this build has libedit. */
bool chat_input_has_libedit(void);

typedef enum { CHAT_LINE, CHAT_EOF, CHAT_CANCEL } chat_read;
/* The next message (malloc'd, without the final newline) in *out:
 * CHAT_LINE, CHAT_EOF at the end of input (Ctrl-D), CHAT_CANCEL when
 * Ctrl-C dropped what was being typed. */
chat_read chat_input_read(chat_input *in, char **out);

#endif
