/* Reading the user's lines (see chat_input.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_input.h"

#ifdef TPORT_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

volatile sig_atomic_t chat_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    chat_interrupted = 1;
}

void chat_input_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a read in progress returns EINTR */
    sigaction(SIGINT, &sa, NULL);
}

bool chat_input_has_libedit(void) {
#ifdef TPORT_HAVE_LIBEDIT
    return true;
#else
    return false;
#endif
}

void chat_input_init(chat_input *in) {
    in->tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    in->edit = false;
#ifdef TPORT_HAVE_LIBEDIT
    if (in->tty) {
        /* our handler, not libedit's: Ctrl-C at the prompt drops the line */
        rl_catch_signals = 0;
        using_history();
        in->edit = true;
    }
#endif
}

void chat_input_free(chat_input *in) {
#ifdef TPORT_HAVE_LIBEDIT
    if (in->edit)
        clear_history();
#endif
    in->edit = false;
}

/* One physical line, without its newline: 1, 0 at EOF, -1 interrupted. */
static int read_line(chat_input *in, const char *prompt, char **line) {
    *line = NULL;
#ifdef TPORT_HAVE_LIBEDIT
    if (in->edit) {
        char *l = readline(prompt);
        if (chat_interrupted) {
            free(l);
            return -1;
        }
        if (!l)
            return 0;
        *line = l;
        return 1;
    }
#endif
    if (in->tty) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    size_t cap = 0;
    errno = 0;
    ssize_t n = getline(line, &cap, stdin);
    if (n < 0) {
        free(*line);
        *line = NULL;
        if (chat_interrupted || errno == EINTR) {
            clearerr(stdin);
            return -1;
        }
        return 0;
    }
    if (n && (*line)[n - 1] == '\n')
        (*line)[--n] = 0;
    if (n && (*line)[n - 1] == '\r')
        (*line)[--n] = 0;
    return 1;
}

static bool append(char **msg, size_t *len, const char *s, size_t n, bool newline) {
    char *m = realloc(*msg, *len + n + 2);
    if (!m)
        return false;
    memcpy(m + *len, s, n);
    *len += n;
    if (newline)
        m[(*len)++] = '\n';
    m[*len] = 0;
    *msg = m;
    return true;
}

chat_read chat_input_read(chat_input *in, char **out) {
    char *msg = NULL, *line;
    size_t len = 0;
    bool block = false, more = false;
    chat_interrupted = 0;
    for (;;) {
        int r = read_line(in, block || more ? "... " : "> ", &line);
        if (r <= 0) {
            free(msg);
            if (r < 0) {
                chat_interrupted = 0;
                if (in->tty)
                    fputs("\n", stdout);
                return CHAT_CANCEL;
            }
            return CHAT_EOF;
        }
        size_t n = strlen(line);
        bool ok = true;
        if (!strcmp(line, "\"\"\"")) {
            if (block) {
                free(line);
                break; /* the block's end */
            }
            block = true;
        } else if (block) {
            ok = append(&msg, &len, line, n, true);
        } else if (n && line[n - 1] == '\\') {
            ok = append(&msg, &len, line, n - 1, true);
            more = true;
        } else {
            ok = append(&msg, &len, line, n, false);
            free(line);
            break;
        }
        free(line);
        if (!ok) {
            free(msg);
            return CHAT_EOF;
        }
    }
    if (!msg && !(msg = calloc(1, 1)))
        return CHAT_EOF;
    if (block && len && msg[len - 1] == '\n')
        msg[--len] = 0;
#ifdef TPORT_HAVE_LIBEDIT
    if (in->edit && *msg)
        add_history(msg);
#endif
    *out = msg;
    return CHAT_LINE;
}
