/* tport serve: options, model loading with a progress line, the slots, the
 * HTTP daemon, and a graceful stop on SIGINT/SIGTERM. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../commands.h"
#include "serve.h"

#define DEFAULT_MAX_CTX 4096
#define DEFAULT_PORT 8080
#define DEFAULT_QUEUE 16
#define DEFAULT_MAX_BODY (1u << 20)
#define DEFAULT_MAX_TOKENS 256
#define DRAIN_SECONDS 10

typedef struct serve_opts {
    const char *model, *host, *api_key, *backend, *chat_template, *alias, *tokenizer;
    long port, parallel, queue, ctx, threads, max_body, max_tokens, stream_ms;
    bool no_warmup;
} serve_opts;

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport serve -m FILE [options]\n"
            "\n"
            "An OpenAI-compatible HTTP server: GET /health, GET /v1/models,\n"
            "POST /v1/completions, POST /v1/chat/completions (\"stream\": true for\n"
            "server-sent events), POST /v1/embeddings, POST /tokenize,\n"
            "POST /detokenize, GET /metrics (Prometheus text), GET /slots.  One\n"
            "access-log line per request goes to stderr.  SIGINT/SIGTERM stop it\n"
            "gracefully: no new requests, streams in flight end with [DONE] (up to %d s).\n"
            "Requests may set max_tokens, stop, seed, n, temperature, top_p, top_k,\n"
            "min_p, presence_penalty, frequency_penalty, repeat_penalty, repeat_last_n\n"
            "(the prompt counts as seen, as in llama-server), logit_bias, ignore_eos,\n"
            "logprobs / top_logprobs, response_format (json_object, json_schema),\n"
            "grammar (GBNF), tools / tool_choice (through the model's chat template;\n"
            "calls come back as tool_calls).  A session keeps its tokens after a\n"
            "request, and a new request reuses the longest common prompt prefix.  A\n"
            "field the server does not implement (best_of, echo, suffix, mirostat, ...)\n"
            "is answered 400 naming it unless it holds its default.\n"
            "\n"
            "  -m, --model FILE        model file: GGUF v1-v3, GGML/GGMF/GGJT v1-v3, llama2.c,\n"
            "                          safetensors, PyTorch (.pth/.bin/.pt); architectures\n"
            "                          as tport run --help lists them\n"
            "  --host ADDR             address to listen on (default 127.0.0.1); another\n"
            "                          than loopback without --api-key prints a warning\n"
            "  --port N                port, 0 = any free one (default %d); the port is\n"
            "                          printed as \"listening on http://HOST:PORT\"\n"
            "  --parallel N            sessions, each with its own KV cache, serving N\n"
            "                          requests at once (default 1); their steps run\n"
            "                          together, one evaluation per step (prompts in\n"
            "                          chunks of 64 tokens)\n"
            "  --queue N               requests that may wait for a session; more get 503\n"
            "                          (default %d)\n"
            "  --stream-ms MS          with %d or more streams generating, each stream's\n"
            "                          text goes out at most every MS ms, the tokens of\n"
            "                          the steps between together (waking every slot's\n"
            "                          thread every step costs the cores the model needs);\n"
            "                          0: token by token always (default %d)\n"
            "  --ctx N                 context length of each session (default: the\n"
            "                          model's, at most %d)\n"
            "  --api-key KEY           require \"Authorization: Bearer KEY\" (all but /health)\n"
            "  --chat-template NAME    chat format instead of the model's own\n"
            "                          tokenizer.chat_template (rendered as Jinja): %s;\n"
            "                          a model without a template that renders uses the\n"
            "                          format its markers suggest, else chatml\n"
            "  --max-body BYTES        largest request body, else 413 (default %u)\n"
            "  --max-tokens N          tokens to generate when a request gives no\n"
            "                          max_tokens (default %d)\n"
            "  --alias NAME            model id in /v1/models and responses (default:\n"
            "                          the file name)\n"
            "  --backend NAME          force a backend (default: the best for each operation)\n"
            "  --threads N             threads per evaluation, 0 = all cores (default 0)\n"
            "  --tokenizer FILE        llama2.c tokenizer.bin for files without a vocabulary\n"
            "  --no-warmup             do not evaluate one token in each session at start\n"
            "                          (by default the first requests do not pay for\n"
            "                          building the graphs and touching the caches)\n",
            DRAIN_SECONDS, DEFAULT_PORT, DEFAULT_QUEUE, BATCHER_HOLD_FROM, BATCHER_STREAM_MS, DEFAULT_MAX_CTX,
            chat_names(), DEFAULT_MAX_BODY, DEFAULT_MAX_TOKENS);
}

static int parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
    return tool_parse_long("serve", flag, s, lo, hi, out);
}

static int parse_args(int argc, char **argv, serve_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--no-warmup")) {
            o->no_warmup = true;
            continue;
        }
        if (i + 1 >= argc)
            return tool_fail(2, "serve: %s %s", a[0] == '-' ? "missing value after" : "unexpected argument", a);
        const char *v = argv[++i];
        int rc = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--host")) o->host = v;
        else if (!strcmp(a, "--api-key")) o->api_key = v;
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--chat-template")) o->chat_template = v;
        else if (!strcmp(a, "--alias")) o->alias = v;
        else if (!strcmp(a, "--tokenizer")) o->tokenizer = v;
        else if (!strcmp(a, "--port")) rc = parse_long(a, v, 0, 65535, &o->port);
        else if (!strcmp(a, "--parallel")) rc = parse_long(a, v, 1, 256, &o->parallel);
        else if (!strcmp(a, "--queue")) rc = parse_long(a, v, 0, 4096, &o->queue);
        else if (!strcmp(a, "--stream-ms")) rc = parse_long(a, v, 0, 10000, &o->stream_ms);
        else if (!strcmp(a, "--ctx")) rc = parse_long(a, v, 0, INT_MAX, &o->ctx);
        else if (!strcmp(a, "--threads")) rc = parse_long(a, v, 0, 1024, &o->threads);
        else if (!strcmp(a, "--max-body")) rc = parse_long(a, v, 64, 1L << 30, &o->max_body);
        else if (!strcmp(a, "--max-tokens")) rc = parse_long(a, v, 1, INT_MAX, &o->max_tokens);
        else return tool_fail(2, "serve: unknown option '%s' (see tport serve --help)", a);
        if (rc)
            return rc;
    }
    if (!o->model)
        return tool_fail(2, "serve: no model (-m FILE); see tport serve --help");
    if (o->chat_template && chat_from_name(o->chat_template) == CHAT_UNKNOWN)
        return tool_fail(2, "serve: unknown --chat-template '%s' (one of: %s)", o->chat_template, chat_names());
    if (o->api_key && !o->api_key[0])
        return tool_fail(2, "serve: --api-key is empty");
    return 0;
}

/* One token (BOS, else token 0) through each session and back out, before
 * the first request, as llama-server warms up at start: the first
 * requests' time to first token then does not include building the
 * step's graph and writing the KV cache's first pages (issue 42).  A
 * failure here is reported and left to the requests. */
static void warm_up(slot_pool *p, const tport_model *m) {
    double t0 = serve_now_ms();
    tport_token t = tport_model_bos(m) >= 0 ? tport_model_bos(m) : 0;
    for (int i = 0; i < p->n; i++) {
        tport_status st = tport_session_eval(p->sessions[i], &t, 1);
        tport_session_reset(p->sessions[i]);
        if (st != TPORT_STATUS_OK) {
            fprintf(stderr, "tport serve: warm-up of session %d failed: %s\n", i, tport_last_error());
            return;
        }
    }
    fprintf(stderr, "tport serve: warmed up %d session%s in %.0f ms\n", p->n, p->n == 1 ? "" : "s",
            serve_now_ms() - t0);
}

/* Loopback: 127.0.0.0/8 or ::1, for every address the host resolves to. */
static bool is_loopback(const char *host) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, NULL, &hints, &ai))
        return false;
    bool all = ai != NULL;
    for (struct addrinfo *p = ai; p; p = p->ai_next) {
        if (p->ai_family == AF_INET)
            all &= (ntohl(((struct sockaddr_in *)(void *)p->ai_addr)->sin_addr.s_addr) >> 24) == 127;
        else if (p->ai_family == AF_INET6)
            all &= !memcmp(&((struct sockaddr_in6 *)(void *)p->ai_addr)->sin6_addr, &in6addr_loopback,
                           sizeof in6addr_loopback);
        else
            all = false;
    }
    freeaddrinfo(ai);
    return all;
}

/* A line every two seconds while the model loads. */
typedef struct load_progress {
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    bool done;
    const char *path;
} load_progress;

static void *progress_thread(void *arg) {
    load_progress *lp = arg;
    double t0 = serve_now_ms();
    pthread_mutex_lock(&lp->lock);
    while (!lp->done) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += 2;
        if (pthread_cond_timedwait(&lp->done_cv, &lp->lock, &t) == ETIMEDOUT && !lp->done)
            fprintf(stderr, "tport serve: loading %s ... %.0f s\n", lp->path, (serve_now_ms() - t0) / 1e3);
    }
    pthread_mutex_unlock(&lp->lock);
    return NULL;
}

static tport_model *load_model(const serve_opts *o) {
    struct stat st;
    double mib = stat(o->model, &st) ? 0 : (double)st.st_size / (1 << 20);
    fprintf(stderr, "tport serve: loading %s (%.1f MiB) ...\n", o->model, mib);
    load_progress lp = {.path = o->model};
    pthread_mutex_init(&lp.lock, NULL);
    pthread_cond_init(&lp.done_cv, NULL);
    pthread_t th;
    bool ticking = pthread_create(&th, NULL, progress_thread, &lp) == 0;
    tport_model_params mp = {.backend = o->backend, .n_threads = (int)o->threads, .tokenizer_path = o->tokenizer};
    tport_model *m = tport_model_load(o->model, &mp);
    pthread_mutex_lock(&lp.lock);
    lp.done = true;
    pthread_cond_signal(&lp.done_cv);
    pthread_mutex_unlock(&lp.lock);
    if (ticking)
        pthread_join(th, NULL);
    pthread_cond_destroy(&lp.done_cv);
    pthread_mutex_destroy(&lp.lock);
    return m;
}

/* The chat template: --chat-template's format; else the model's own
 * template through the Jinja engine; else (no template, or one the engine
 * cannot render) the format its markers suggest, or the default. */
static void pick_template(const serve_opts *o, const tport_model *m, serve_server *srv) {
    srv->jinja.tmpl = NULL;
    if (o->chat_template) {
        fprintf(stderr, "tport serve: chat template %s (--chat-template)\n", o->chat_template);
        srv->chat = chat_from_name(o->chat_template);
        srv->end_of_turn = chat_end_of_turn(srv->chat);
        return;
    }
    const char *jinja = tport_model_meta_str(m, "tokenizer.chat_template");
    chat_format f = chat_detect(jinja);
    if (jinja && chat_jinja_init(&srv->jinja, m, jinja)) {
        srv->tools = tool_format_detect(jinja);
        fprintf(stderr, "tport serve: chat template: the model's tokenizer.chat_template (Jinja), tool calls: %s\n",
                tool_format_name(srv->tools));
        srv->chat = f;
        /* the family's end-of-turn marker when the markers name one; the
         * model's end-of-generation tokens stop it in any case */
        srv->end_of_turn = f != CHAT_UNKNOWN ? chat_end_of_turn(f) : NULL;
        if (srv->tools == TOOL_FMT_HARMONY) /* <|end|> closes a message, not the reply: <|return|>, <|call|> do */
            srv->end_of_turn = NULL;
        return;
    }
    if (jinja)
        fprintf(stderr, "tport serve: tokenizer.chat_template does not render (%s)\n", tport_last_error());
    if (f != CHAT_UNKNOWN) {
        fprintf(stderr, "tport serve: chat template %s (detected from tokenizer.chat_template)\n", chat_name(f));
    } else {
        fprintf(stderr, "tport serve: %s; using the default chat template %s (choose with --chat-template)\n",
                jinja ? "tokenizer.chat_template not recognised" : "the model has no tokenizer.chat_template",
                chat_name(CHAT_DEFAULT));
        f = CHAT_DEFAULT;
    }
    srv->chat = f;
    srv->end_of_turn = chat_end_of_turn(f);
}

static void model_id(const serve_opts *o, const tport_model *m, char *buf, size_t cap) {
    (void)m;
    const char *base = strrchr(o->model, '/');
    snprintf(buf, cap, "%s", o->alias ? o->alias : base ? base + 1 : o->model);
}

/* Stop accepting, let in-flight requests finish (streams end with [DONE]). */
static void drain(serve_server *srv, struct MHD_Daemon *d) {
    int idle, busy, waiting;
    slot_pool_counts(&srv->slots, &idle, &busy, &waiting);
    fprintf(stderr, "tport serve: shutting down (%d requests in flight, %d waiting)\n", busy, waiting);
    atomic_store(&srv->stopping, true);
    slot_pool_close(&srv->slots);
    MHD_socket ls = MHD_quiesce_daemon(d);
    for (int i = 0; i < DRAIN_SECONDS * 20; i++) {
        slot_pool_counts(&srv->slots, &idle, &busy, &waiting);
        if (!busy && !waiting && atomic_load(&srv->open_streams) == 0)
            break;
        usleep(50 * 1000);
    }
    MHD_stop_daemon(d);
    if (ls != MHD_INVALID_SOCKET)
        close(ls);
}

int cmd_serve(int argc, char **argv) {
    serve_opts o = {.host = "127.0.0.1", .port = DEFAULT_PORT, .parallel = 1, .queue = DEFAULT_QUEUE,
                    .stream_ms = BATCHER_STREAM_MS, .max_body = DEFAULT_MAX_BODY, .max_tokens = DEFAULT_MAX_TOKENS};
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!o.api_key && !is_loopback(o.host))
        fprintf(stderr, "tport serve: warning: listening on %s (not loopback) without --api-key: anyone who can "
                        "reach this machine can use the model\n", o.host);

    /* SIGINT/SIGTERM are taken by sigwait below; every thread started from
     * here on inherits the blocked mask. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    double t0 = serve_now_ms();
    tport_model *m = load_model(&o);
    if (!m)
        return tool_fail(2, "%s", tport_last_error());
    if (tport_tokenize(m, "", false, NULL, 0) < 0) {
        tport_model_free(m);
        return tool_fail(2, "serve: %s has no vocabulary (give --tokenizer FILE)", o.model);
    }
    static serve_server srv; /* static: connection threads may outlive a frame in theory */
    memset(&srv, 0, sizeof srv);
    srv.model = m;
    srv.created = (long)time(NULL);
    srv.n_ctx = o.ctx ? (int32_t)o.ctx : tport_model_n_ctx(m);
    if (!o.ctx && srv.n_ctx > DEFAULT_MAX_CTX)
        srv.n_ctx = DEFAULT_MAX_CTX;
    srv.max_body = (size_t)o.max_body;
    srv.api_key = o.api_key;
    srv.default_max_tokens = (int32_t)o.max_tokens;
    pick_template(&o, m, &srv);
    atomic_init(&srv.stopping, false);
    atomic_init(&srv.open_streams, 0);
    atomic_init(&srv.next_id, 1);
    model_id(&o, m, srv.model_id, sizeof srv.model_id);

    tport_session_params sp = {.n_ctx = srv.n_ctx, .n_batch = GEN_PROMPT_CHUNK, .n_threads = (int)o.threads};
    if (!slot_pool_init(&srv.slots, m, &sp, (int)o.parallel, (int)o.queue)) {
        rc = tool_fail(2, "serve: %s", tport_last_error()[0] ? tport_last_error() : "out of memory");
        slot_pool_destroy(&srv.slots);
        chat_jinja_free(&srv.jinja);
        tport_model_free(m);
        return rc;
    }
    batcher_set_stream_ms(&srv.slots.batcher, (double)o.stream_ms);
    if (!o.no_warmup)
        warm_up(&srv.slots, m);
    double w = (double)tport_model_weight_bytes(m) / (1 << 20), kv = (double)tport_model_kv_bytes(m, srv.n_ctx) / (1 << 20);
    fprintf(stderr, "tport serve: loaded in %.0f ms; memory: weights %.1f MiB (once) + KV cache %.1f MiB x %ld "
            "slots (ctx %d) = %.1f MiB\n", serve_now_ms() - t0, w, kv, o.parallel, (int)srv.n_ctx,
            w + kv * (double)o.parallel);

    int port = 0;
    struct MHD_Daemon *d = serve_http_start(&srv, o.host, (int)o.port, &port);
    if (!d) {
        slot_pool_destroy(&srv.slots);
        chat_jinja_free(&srv.jinja);
        tport_model_free(m);
        return 2;
    }
    bool v6 = strchr(o.host, ':') != NULL;
    fprintf(stderr, "tport serve: listening on http://%s%s%s:%d (%ld parallel, queue %ld)\n", v6 ? "[" : "", o.host,
            v6 ? "]" : "", port, o.parallel, o.queue);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    drain(&srv, d);
    slot_pool_destroy(&srv.slots);
    chat_jinja_free(&srv.jinja);
    tport_model_free(m);
    fprintf(stderr, "tport serve: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return 0;
}
