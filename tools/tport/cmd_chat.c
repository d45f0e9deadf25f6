/* tport chat: a conversation with a model in the terminal.  Each turn the
 * whole conversation is rendered with the model's chat template and
 * tokenized; the session's cache already holds its longest common
 * beginning (the earlier turns), so only the new part is evaluated.  When
 * the conversation outgrows the context, the oldest turns after the system
 * prompt are dropped and the cache is shifted over them (RoPE re-applied,
 * tport_session_shift) instead of evaluating the rest again; a reply that
 * fills the context mid-way shifts by half of what follows the system
 * prompt.  Ctrl-C stops a reply, Ctrl-D (or /quit) ends the program; a
 * pipe gives one message per line and gets plain replies. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chat_conv.h"
#include "chat_input.h"
#include "chat_stream.h"
#include "commands.h"
#include "tport/tport.h"

#define DEFAULT_MAX_CTX 4096

typedef struct chat_opts {
    const char *model, *system, *tmpl_file, *backend, *session, *tokenizer;
    long ctx, threads, batch, n_predict;
    bool kv_f32, hide_thinking;
    tport_sampler_params sp;
} chat_opts;

typedef struct chat {
    const chat_opts *o;
    tport_model *m;
    tport_session *s;
    tport_sampler *sm;
    chat_conv conv;
    chat_input in;
    int32_t n_ctx, n_vocab;
    tport_token stops[12];
    int n_stops;
    bool harmony;              /* gpt-oss: harmony replies (chat_stream.h) */
    /* the figures /stats shows */
    int32_t prompt_tokens, reply_tokens;
    double prompt_ms, reply_ms;
    int n_shifts, n_dropped;
} chat;

static void usage(FILE *out) {
    tport_sampler_params d = tport_sampler_defaults();
    fprintf(out,
            "usage: tport chat -m FILE [--system TEXT] [--ctx N] [options]\n"
            "\n"
            "Talks with a model: each message you type is added to the conversation, which\n"
            "is rendered with the model's chat template (ChatML when it has none) and the\n"
            "reply streams as it is generated. A reasoning model's thinking (<think>...) is\n"
            "shown dimmed. When the conversation outgrows the context, the oldest turns after\n"
            "the system prompt are dropped and the KV cache is shifted over them.\n"
            "\n"
            "Typing: on a terminal, lines are edited and remembered (%s); a line ending in\n"
            "\\ continues on the next; a line of \"\"\" starts and ends a block of lines.\n"
            "Ctrl-C stops the reply being written (or drops the line being typed); Ctrl-D quits.\n"
            "When stdin is not a terminal, each line is a message and each reply is printed\n"
            "as one plain line of text.\n"
            "\n"
            "Commands:\n"
            "  /reset          forget the conversation (the system prompt stays)\n"
            "  /system TEXT    set the system prompt (and forget the conversation)\n"
            "  /save FILE      save the conversation: FILE (tokens and KV cache, the model's\n"
            "                  identity) and FILE.chat (the messages)\n"
            "  /load FILE      continue a conversation /save wrote, for the same model\n"
            "  /stats          tokens in the context, prompt and reply speed, context shifts\n"
            "  /help           this list\n"
            "  /quit           end (as Ctrl-D)\n"
            "\n"
            "Options:\n"
            "  -m, --model FILE        the model (any file tport run reads, with a vocabulary)\n"
            "  --system TEXT           system prompt\n"
            "  --chat-template-file F  a Jinja chat template instead of the model's\n"
            "  --hide-thinking         do not show a reasoning model's thinking\n"
            "  --session FILE          continue the conversation saved in FILE (if it exists)\n"
            "                          and save it there after each reply, as /save FILE\n"
            "  -n N                    at most N tokens per reply, -1 = until the model ends\n"
            "                          its turn (default -1)\n"
            "  --ctx N                 context length (default: the model's, at most %d)\n"
            "  --temp T                temperature, 0 = greedy (default %g)\n"
            "  --top-k K               (default %d)   --top-p P (default %g)   --min-p P (default %g)\n"
            "  --repeat-penalty R      (default %g)   --repeat-last-n N (default %d)\n"
            "  --presence-penalty P    (default %g)   --frequency-penalty F (default %g)\n"
            "  --seed S                random seed (default %llu)\n"
            "  --threads N             threads, 0 = all cores (default 0)\n"
            "  --batch N               prompt tokens per evaluation (default 64)\n"
            "  --kv-type T             KV cache type: f16 (default) or f32\n"
            "  --backend NAME          force a backend\n"
            "  --tokenizer FILE        llama2.c tokenizer.bin for files without a vocabulary\n",
            chat_input_has_libedit() ? "libedit" : "this build has no libedit: plain lines", DEFAULT_MAX_CTX,
            d.temperature, (int)d.top_k, d.top_p, d.min_p, d.repeat_penalty, (int)d.repeat_last_n,
            d.presence_penalty, d.frequency_penalty, (unsigned long long)d.seed);
}

static int parse_num(const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi))
        return tool_fail(2, "chat: %s needs a number in [%g, %g], not '%s'", flag, lo, hi, v);
    *out = x;
    return 0;
}

static int parse_args(int argc, char **argv, chat_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--hide-thinking")) {
            o->hide_thinking = true;
            continue;
        }
        if (i + 1 >= argc)
            return tool_fail(2, "chat: %s %s", a[0] == '-' ? "missing value after" : "unexpected argument", a);
        const char *v = argv[++i];
        double x = 0;
        int rc = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--system")) o->system = v;
        else if (!strcmp(a, "--chat-template-file")) o->tmpl_file = v;
        else if (!strcmp(a, "--session")) o->session = v;
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--tokenizer")) o->tokenizer = v;
        else if (!strcmp(a, "--kv-type")) {
            if (strcmp(v, "f16") && strcmp(v, "f32"))
                return tool_fail(2, "chat: --kv-type needs f16 or f32, not '%s'", v);
            o->kv_f32 = !strcmp(v, "f32");
        } else if (!strcmp(a, "-n")) {
            if (!(rc = parse_num(a, v, -1, INT_MAX, &x))) o->n_predict = (long)x;
        } else if (!strcmp(a, "--ctx")) {
            if (!(rc = parse_num(a, v, 0, INT_MAX, &x))) o->ctx = (long)x;
        } else if (!strcmp(a, "--threads")) {
            if (!(rc = parse_num(a, v, 0, 1024, &x))) o->threads = (long)x;
        } else if (!strcmp(a, "--batch")) {
            if (!(rc = parse_num(a, v, 1, 1 << 16, &x))) o->batch = (long)x;
        } else if (!strcmp(a, "--temp")) {
            if (!(rc = parse_num(a, v, 0, 1e6, &x))) o->sp.temperature = (float)x;
        } else if (!strcmp(a, "--top-k")) {
            if (!(rc = parse_num(a, v, 0, INT_MAX, &x))) o->sp.top_k = (int32_t)x;
        } else if (!strcmp(a, "--top-p")) {
            if (!(rc = parse_num(a, v, 1e-9, 1, &x))) o->sp.top_p = (float)x;
        } else if (!strcmp(a, "--min-p")) {
            if (!(rc = parse_num(a, v, 0, 1, &x))) o->sp.min_p = (float)x;
        } else if (!strcmp(a, "--repeat-penalty")) {
            if (!(rc = parse_num(a, v, 1e-6, 1e6, &x))) o->sp.repeat_penalty = (float)x;
        } else if (!strcmp(a, "--repeat-last-n")) {
            if (!(rc = parse_num(a, v, 0, 1 << 20, &x))) o->sp.repeat_last_n = (int32_t)x;
        } else if (!strcmp(a, "--presence-penalty")) {
            if (!(rc = parse_num(a, v, -1e6, 1e6, &x))) o->sp.presence_penalty = (float)x;
        } else if (!strcmp(a, "--frequency-penalty")) {
            if (!(rc = parse_num(a, v, -1e6, 1e6, &x))) o->sp.frequency_penalty = (float)x;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-')
                return tool_fail(2, "chat: --seed needs a non-negative integer, not '%s'", v);
            o->sp.seed = s;
        } else {
            return tool_fail(2, "chat: unknown option '%s' (see tport chat --help)", a);
        }
        if (rc)
            return rc;
    }
    if (!o->model)
        return tool_fail(2, "chat: no model (-m FILE); see tport chat --help");
    return 0;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int32_t common_prefix(const tport_token *a, int32_t na, const tport_token *b, int32_t nb) {
    int32_t k = 0;
    while (k < na && k < nb && a[k] == b[k])
        k++;
    return k;
}

/* Tokens of the leading system message alone (with BOS), which a context
 * shift keeps: the common beginning of its rendering and the whole
 * conversation's t (n tokens). */
static int32_t system_tokens(chat *c, const tport_token *t, int32_t n) {
    bool sys = c->conv.n && !strcmp(c->conv.msgs[0].role, "system");
    if (!sys) /* BOS alone (a template may refuse an empty conversation) */
        return n && t[0] == tport_model_bos(c->m) ? 1 : 0;
    tport_token *st = NULL;
    char err[256];
    int32_t k = chat_conv_tokens(&c->conv, c->m, 1, false, &st, NULL, err, sizeof err);
    int32_t keep = k > 0 ? common_prefix(st, k, t, n) : 0;
    free(st);
    return keep;
}

/* The conversation fitted to the context, as tokens: the oldest turns
 * after the system prompt (a user message and what follows it up to the
 * next one) are dropped while it leaves less than `room` tokens for the
 * reply.  -1 after printing why. */
static int32_t fitted_tokens(chat *c, int32_t room, tport_token **t, bool *thinking) {
    char err[512];
    for (;;) {
        int32_t n = chat_conv_tokens(&c->conv, c->m, c->conv.n, true, t, thinking, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "tport chat: %s\n", err);
            return -1;
        }
        if (n + room <= c->n_ctx)
            return n;
        int first = c->conv.n && !strcmp(c->conv.msgs[0].role, "system") ? 1 : 0;
        /* the last message (the one being answered) always stays */
        int end = first + 1;
        while (end < c->conv.n - 1 && strcmp(c->conv.msgs[end].role, "user"))
            end++;
        if (end >= c->conv.n) {
            if (n < c->n_ctx)
                return n; /* less room for the reply than asked */
            fprintf(stderr, "tport chat: the message takes %d tokens; the context holds %d\n", (int)n,
                    (int)c->n_ctx);
            free(*t);
            return -1;
        }
        free(*t);
        for (int i = first; i < end; i++)
            chat_conv_remove(&c->conv, first);
        c->n_dropped += end - first;
    }
}

/* After turns were dropped from the conversation: the cache holds
 * [kept | dropped | rest] and t begins [kept | rest ...]; shifting the
 * dropped span away keeps the rest's cache instead of evaluating it
 * again.  Finds the span's length by matching the rest. */
static void shift_over_dropped(chat *c, const tport_token *t, int32_t n) {
    int32_t pos = tport_session_pos(c->s);
    const tport_token *h = tport_session_tokens(c->s);
    int32_t keep = common_prefix(h, pos, t, n);
    if (keep >= pos || keep >= n || !tport_model_can_shift(c->m))
        return;
    for (int32_t d = 1; keep + d < pos; d++) {
        int32_t len = pos - keep - d < n - keep ? pos - keep - d : n - keep;
        if (len > 32)
            len = 32;
        if (len < 4 && keep + d + len < pos)
            continue; /* too short a match to trust unless it reaches the end */
        if (!memcmp(h + keep + d, t + keep, (size_t)len * sizeof *t)) {
            if (tport_session_shift(c->s, keep, d) == TPORT_STATUS_OK)
                c->n_shifts++;
            else
                fprintf(stderr, "tport chat: %s\n", tport_last_error());
            return;
        }
    }
}

static void add_stop(chat *c, tport_token id) {
    for (int i = 0; i < c->n_stops; i++)
        if (c->stops[i] == id)
            return;
    if (id >= 0 && c->n_stops < (int)(sizeof c->stops / sizeof *c->stops))
        c->stops[c->n_stops++] = id;
}

static bool is_stop(const chat *c, tport_token id) {
    for (int i = 0; i < c->n_stops; i++)
        if (c->stops[i] == id)
            return true;
    return false;
}

/* Answers the conversation's last (user) message: prompt, then the reply
 * streamed and added to the conversation. */
static void reply(chat *c) {
    int32_t room = c->o->n_predict > 0 ? (int32_t)c->o->n_predict : c->n_ctx / 4;
    if (room > c->n_ctx / 2)
        room = c->n_ctx / 2;
    tport_token *t = NULL;
    int dropped = c->n_dropped;
    bool thinking = false;
    int32_t n = fitted_tokens(c, room, &t, &thinking);
    if (n < 0) {
        chat_conv_remove(&c->conv, c->conv.n - 1);
        if (!c->in.tty) /* one reply line per message, an empty one here */
            fputc('\n', stdout);
        return;
    }
    if (c->n_dropped != dropped)
        shift_over_dropped(c, t, n);
    int32_t n_keep = system_tokens(c, t, n);
    double t0 = now_ms();
    int32_t k = tport_session_reuse_prefix(c->s, t, n); /* the cache's common prefix */
    if (k < 0 || tport_session_eval(c->s, t + k, n - k)) {
        fprintf(stderr, "tport chat: %s\n", tport_last_error());
        free(t);
        chat_conv_remove(&c->conv, c->conv.n - 1);
        if (!c->in.tty)
            fputc('\n', stdout);
        return;
    }
    for (int32_t i = k; i < n; i++)
        tport_sampler_accept(c->sm, t[i]);
    c->prompt_tokens = n - k;
    c->prompt_ms = now_ms() - t0;

    const tport_tokenizer *tk = tport_model_tokenizer(c->m);
    chat_stream out;
    chat_stream_begin(&out, stdout, c->in.tty, c->o->hide_thinking);
    if (thinking)
        chat_stream_thinking(&out);
    if (c->harmony)
        chat_stream_harmony(&out);
    char *text = NULL;
    size_t len = 0;
    tport_token prev = t[n - 1];
    free(t);
    int32_t made = 0;
    double t1 = now_ms();
    chat_interrupted = 0;
    while (c->o->n_predict < 0 || made < c->o->n_predict) {
        if (chat_interrupted)
            break;
        tport_token id = tport_sampler_sample(c->sm, tport_session_logits(c->s), c->n_vocab);
        if (id < 0 || is_stop(c, id))
            break;
        tport_sampler_accept(c->sm, id);
        char piece[256];
        int32_t pl = tport_tokenizer_piece(tk, prev, id, piece, (int32_t)sizeof piece);
        if (pl > (int32_t)sizeof piece)
            pl = (int32_t)sizeof piece;
        char *grown = pl > 0 ? realloc(text, len + (size_t)pl + 1) : text;
        if (pl > 0 && grown) {
            text = grown;
            memcpy(text + len, piece, (size_t)pl);
            len += (size_t)pl;
            text[len] = 0;
            chat_stream_put(&out, piece, (size_t)pl);
        }
        made++;
        prev = id;
        if (tport_session_pos(c->s) >= c->n_ctx) {
            int r = tool_make_room(c->s, c->m, n_keep);
            if (r)
                break;
            c->n_shifts++;
        }
        if (tport_session_eval(c->s, &id, 1)) {
            fprintf(stderr, "\ntport chat: %s\n", tport_last_error());
            break;
        }
    }
    chat_stream_end(&out);
    c->reply_tokens = made;
    c->reply_ms = now_ms() - t1;
    if (chat_interrupted && c->in.tty)
        fputs(" [stopped]", stdout);
    chat_interrupted = 0;
    fputc('\n', stdout);
    fflush(stdout);
    char *answer = c->harmony && text ? chat_harmony_answer(text) : NULL; /* the template adds the headers */
    chat_conv_add(&c->conv, "assistant", answer ? answer : text ? text : "");
    free(answer);
    free(text);
}

static void stats(const chat *c) {
    printf("context: %d of %d tokens; messages: %d; turns dropped: %d; context shifts: %d\n",
           (int)tport_session_pos(c->s), (int)c->n_ctx, c->conv.n, c->n_dropped, c->n_shifts);
    printf("last prompt: %d tokens in %.1f ms (%.1f tokens/s); last reply: %d tokens in %.1f ms (%.1f tokens/s)\n",
           (int)c->prompt_tokens, c->prompt_ms, c->prompt_ms > 0 ? c->prompt_tokens * 1e3 / c->prompt_ms : 0.0,
           (int)c->reply_tokens, c->reply_ms, c->reply_ms > 0 ? c->reply_tokens * 1e3 / c->reply_ms : 0.0);
}

static int save(chat *c, const char *path, bool quiet) {
    char conv[4096];
    snprintf(conv, sizeof conv, "%s.chat", path);
    if (tport_session_save(c->s, path)) {
        fprintf(stderr, "tport chat: %s\n", tport_last_error());
        return 2;
    }
    if (chat_conv_save(&c->conv, conv))
        return 2;
    if (!quiet)
        printf("saved %d messages and %d tokens to %s and %s\n", c->conv.n, (int)tport_session_pos(c->s), path,
               conv);
    return 0;
}

static int load(chat *c, const char *path) {
    char conv[4096];
    snprintf(conv, sizeof conv, "%s.chat", path);
    if (access(conv, R_OK))
        return tool_fail(2, "chat: %s: no conversation beside it (%s); /save writes both", path, conv);
    if (tport_session_load(c->s, path))
        return tool_fail(2, "chat: %s", tport_last_error());
    if (chat_conv_load(&c->conv, conv)) {
        tport_session_reset(c->s);
        return 2;
    }
    return 0;
}

static void set_system(chat *c, const char *text) {
    chat_conv_clear(&c->conv);
    if (c->conv.n)
        chat_conv_remove(&c->conv, 0);
    if (text && *text) {
        chat_conv_add(&c->conv, "system", text);
        /* to the front: clear left at most the old system message, removed */
    }
}

/* A line that starts with '/': returns false for /quit. */
static bool command(chat *c, const char *line) {
    const char *arg = strchr(line, ' ');
    size_t cl = arg ? (size_t)(arg - line) : strlen(line);
    while (arg && *arg == ' ')
        arg++;
#define IS(name) (cl == strlen(name) && !strncmp(line, name, cl))
    if (IS("/quit") || IS("/exit"))
        return false;
    if (IS("/help")) {
        printf("/reset  /system TEXT  /save FILE  /load FILE  /stats  /help  /quit   (tport chat --help)\n");
    } else if (IS("/reset")) {
        chat_conv_clear(&c->conv);
        printf("conversation cleared\n");
    } else if (IS("/system")) {
        set_system(c, arg);
        printf(arg && *arg ? "system prompt set; conversation cleared\n" : "system prompt removed\n");
    } else if (IS("/stats")) {
        stats(c);
    } else if (IS("/save") || IS("/load")) {
        if (!arg || !*arg)
            fprintf(stderr, "tport chat: %.*s needs a file name\n", (int)cl, line);
        else if (IS("/save"))
            save(c, arg, false);
        else if (!load(c, arg))
            printf("loaded %d messages and %d tokens from %s\n", c->conv.n, (int)tport_session_pos(c->s), arg);
    } else {
        fprintf(stderr, "tport chat: unknown command %.*s (/help lists them)\n", (int)cl, line);
    }
#undef IS
    fflush(stdout);
    return true;
}

int cmd_chat(int argc, char **argv) {
    chat_opts o = {.n_predict = -1, .sp = tport_sampler_defaults()};
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    chat c = {.o = &o};
    tport_model_params mp = {.backend = o.backend, .n_threads = (int)o.threads, .tokenizer_path = o.tokenizer};
    c.m = tport_model_load(o.model, &mp);
    if (!c.m)
        return tool_fail(2, "%s", tport_last_error());
    int status = 0;
    if (!tport_model_tokenizer(c.m)) {
        status = tool_fail(2, "chat: %s has no vocabulary (give --tokenizer FILE)", o.model);
        goto done;
    }
    if ((status = chat_conv_init(&c.conv, c.m, o.tmpl_file)))
        goto done;
    c.n_ctx = o.ctx ? (int32_t)o.ctx : tport_model_n_ctx(c.m);
    if (!o.ctx && c.n_ctx > DEFAULT_MAX_CTX)
        c.n_ctx = DEFAULT_MAX_CTX;
    c.n_vocab = tport_model_n_vocab(c.m);
    tport_session_params sp = {.n_ctx = c.n_ctx, .n_batch = (int32_t)o.batch, .n_threads = (int)o.threads,
                               .kv_f32 = o.kv_f32};
    c.s = tport_session_new(c.m, &sp);
    c.sm = tport_sampler_new(&o.sp);
    if (!c.s || !c.sm) {
        status = tool_fail(2, "%s", tport_last_error());
        goto done;
    }
    /* the end of a turn: EOS, and the markers of the common templates
     * when the vocabulary has them as single tokens */
    add_stop(&c, tport_model_eos(c.m));
    static const char *const ends[] = {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>",
                                       "<|END_OF_TURN_TOKEN|>", "<|return|>", "<|call|>"};
    /* gpt-oss (harmony): <|end|> closes a message, <|return|> and <|call|> the turn */
    c.harmony = tport_token_lookup(c.m, "<|channel|>", 11) >= 0 && tport_token_lookup(c.m, "<|return|>", 10) >= 0;
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++)
        if (!(c.harmony && !strcmp(ends[i], "<|end|>")))
            add_stop(&c, tport_token_lookup(c.m, ends[i], strlen(ends[i])));
    if (o.system)
        chat_conv_add(&c.conv, "system", o.system);
    if (o.session && access(o.session, F_OK) == 0 && (status = load(&c, o.session)))
        goto done;
    chat_input_init(&c.in);
    chat_input_signals();
    if (c.in.tty)
        printf("tport chat: %s, context %d tokens%s. /help for commands, Ctrl-D to quit.\n", o.model, (int)c.n_ctx,
               c.conv.n ? " (conversation loaded)" : "");
    for (;;) {
        char *line = NULL;
        chat_read r = chat_input_read(&c.in, &line);
        if (r == CHAT_EOF) {
            if (c.in.tty)
                fputc('\n', stdout);
            break;
        }
        if (r == CHAT_CANCEL)
            continue;
        if (line[0] == '/') {
            bool go_on = command(&c, line);
            free(line);
            if (!go_on)
                break;
            continue;
        }
        if (!*line && c.in.tty) {
            free(line);
            continue;
        }
        bool ok = chat_conv_add(&c.conv, "user", line);
        free(line);
        if (!ok) {
            status = tool_fail(2, "chat: out of memory");
            break;
        }
        reply(&c);
        if (o.session && save(&c, o.session, true))
            status = 2;
    }
    chat_input_free(&c.in);
done:
    chat_conv_free(&c.conv);
    tport_sampler_free(c.sm);
    tport_session_free(c.s);
    tport_model_free(c.m);
    return status;
}
