/* tport run: generate text (or token ids) with a model.  Generated
 * text streams to stdout, flushed per token; timings go to stderr. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "dist/dist.h"
#include "tport/tport.h"

#define DEFAULT_N_PREDICT 64
#define DEFAULT_MAX_CTX 4096

static void usage(FILE *out) {
    tport_sampler_params d = tport_sampler_defaults();
    char archs[256];
    fprintf(out,
            "usage: tport run -m FILE [-p TEXT | --prompt-ids 1,2,3] [options]\n"
            "\n"
            "Generates tokens with a model and streams the text to stdout. Load time and\n"
            "prompt/generation speed go to stderr.\n"
            "Architectures: %s.\n"
            "\n"
            "  -m, --model FILE        model file: GGUF v1-v3, GGML/GGMF/GGJT v1-v3, llama2.c,\n"
            "                          safetensors, PyTorch (.pth/.bin/.pt, read without\n"
            "                          running their pickles)\n"
            "  -p, --prompt TEXT       prompt text, tokenized as llama.cpp does (BOS/EOS as the\n"
            "                          file says; special-token text is plain text unless\n"
            "                          --parse-special); default: BOS only\n"
            "  --parse-special         the text of control tokens in the prompt (<|eot_id|>,\n"
            "                          <|im_start|>, ...) becomes those tokens\n"
            "  --prompt-ids LIST       prompt as comma-separated token ids, used as given\n"
            "  -n N                    tokens to generate (default %d); stops early at EOS\n"
            "  --temp T                temperature, 0 = greedy (default %g)\n"
            "  --top-k K               keep the K most likely tokens, 0 = off (default %d)\n"
            "  --top-p P               nucleus sampling, 1 = off (default %g)\n"
            "  --min-p P               drop tokens below P x the best one, 0 = off (default %g)\n"
            "  --repeat-penalty R      llama.cpp repetition penalty, 1 = off (default %g)\n"
            "  --presence-penalty P    subtract P from the logit of every token seen in the\n"
            "                          last --repeat-last-n, 0 = off (default %g)\n"
            "  --frequency-penalty F   subtract F x the times it was seen there, 0 = off\n"
            "                          (default %g)\n"
            "  --repeat-last-n N       tokens (prompt included) the penalties look back over\n"
            "                          (default %d)\n"
            "  --seed S                random seed (default %llu; same seed, same output)\n"
            "  --ids                   print the generated token ids, comma-separated, instead of text\n"
            "  --backend NAME          force a backend (default: the best for each operation)\n"
            "  --isolate NAME          run the plug-in NAME (or all) in a helper process: a crash\n"
            "                          or hang there costs that device, not the run\n"
            "  --weight-type T         convert every weight matrix to type T at load (f32, q8_0,\n"
            "                          ...; see tport types); default: keep the file's types\n"
            "                          where the backend takes them, converting the rest\n"
            "  --place PATTERN=BACKEND[,...]  weights whose names match the extended regular\n"
            "                          expression PATTERN live where BACKEND runs them (as llama.cpp's\n"
            "                          -ot), e.g. --place exps=cpu: every expert stack on the CPU\n"
            "  --cpu-experts N         the expert stacks of the first N layers on the CPU\n"
            "  --threads N             threads, 0 = all cores (default 0)\n"
            "  --tokenizer FILE        llama2.c tokenizer.bin for files without a vocabulary\n"
            "  --ctx N                 context length (default: the model's, at most %d)\n"
            "  --batch N               prompt tokens per evaluation (default 64)\n"
            "  --kv-type T             KV cache type: f16 (default, as llama.cpp) or f32\n"
            "  --no-context-shift      stop when the context is full (default: drop the older half\n"
            "                          of the tokens after --keep and go on, moving the KV cache;\n"
            "                          models without RoPE stop)\n"
            "  --keep N                prompt tokens (after BOS) a context shift keeps, -1 = the\n"
            "                          whole prompt (default 0)\n"
            "  --session FILE          reuse the KV cache saved in FILE for the prompt's longest\n"
            "                          common beginning, and save the prompt's cache there\n"
            "                          (llama.cpp's --prompt-cache); refuses another model's file\n"
            "  --plan                  after generating, print on stderr which backend holds which\n"
            "                          layers and weight bytes, what each ran, and the copies and\n"
            "                          bytes moved between host and device memory per token\n",
            tool_arch_list(archs, sizeof archs), DEFAULT_N_PREDICT, d.temperature, (int)d.top_k, d.top_p, d.min_p, d.repeat_penalty,
            d.presence_penalty, d.frequency_penalty, (int)d.repeat_last_n, (unsigned long long)d.seed, DEFAULT_MAX_CTX);
    fputs(tport_dist_usage(), out);
}

typedef struct run_opts {
    const char *model, *prompt, *prompt_ids, *backend, *tokenizer, *weight_type, *session, *place;
    long cpu_experts;      /* --cpu-experts N, 0 = none */
    char place_buf[4096];  /* --place and --cpu-experts as one list */
    long n_predict, threads, ctx, batch, keep;
    bool ids, parse_special, plan, kv_f32, no_shift;
    tport_sampler_params sp;
} run_opts;

static int parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
    return tool_parse_long("run", flag, s, lo, hi, out);
}

static int parse_float(const char *flag, const char *s, double lo, double hi, float *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return tool_fail(2, "run: %s needs a number in [%g, %g], not '%s'", flag, lo, hi, s);
    *out = (float)v;
    return 0;
}

static int parse_args(int argc, char **argv, run_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--ids")) {
            o->ids = true;
            continue;
        }
        if (!strcmp(a, "--parse-special")) {
            o->parse_special = true;
            continue;
        }
        if (!strcmp(a, "--plan")) {
            o->plan = true;
            continue;
        }
        if (!strcmp(a, "--no-context-shift")) {
            o->no_shift = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        if (i + 1 >= argc)
            return tool_fail(2, "run: %s %s", a[0] == '-' ? "missing value after" : "unexpected argument", a);
        const char *v = argv[++i];
        long l = 0;
        int rc = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "--prompt-ids")) o->prompt_ids = v;
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--isolate")) {
            if (tport_backend_isolate(v) != TPORT_STATUS_OK)
                return tool_fail(2, "run: --isolate needs a backend name, not '%s'", v);
        } else if (!strcmp(a, "--tokenizer")) o->tokenizer = v;
        else if (!strcmp(a, "--session")) o->session = v;
        else if (!strcmp(a, "--keep")) rc = parse_long(a, v, -1, INT_MAX, &o->keep);
        else if (!strcmp(a, "--weight-type")) o->weight_type = v;
        else if (!strcmp(a, "--place")) o->place = v;
        else if (!strcmp(a, "--cpu-experts")) rc = parse_long(a, v, 0, 4096, &o->cpu_experts);
        else if (!strcmp(a, "--kv-type")) {
            if (strcmp(v, "f16") && strcmp(v, "f32"))
                return tool_fail(2, "run: --kv-type needs f16 or f32, not '%s'", v);
            o->kv_f32 = !strcmp(v, "f32");
        }
        else if (!strcmp(a, "-n")) rc = parse_long(a, v, 0, INT_MAX, &o->n_predict);
        else if (!strcmp(a, "--threads")) rc = parse_long(a, v, 0, 1024, &o->threads);
        else if (!strcmp(a, "--ctx")) rc = parse_long(a, v, 0, INT_MAX, &o->ctx);
        else if (!strcmp(a, "--batch")) rc = parse_long(a, v, 1, 1 << 16, &o->batch);
        else if (!strcmp(a, "--temp")) rc = parse_float(a, v, 0, 1e6, &o->sp.temperature);
        else if (!strcmp(a, "--top-p")) rc = parse_float(a, v, 1e-9, 1, &o->sp.top_p);
        else if (!strcmp(a, "--min-p")) rc = parse_float(a, v, 0, 1, &o->sp.min_p);
        else if (!strcmp(a, "--repeat-penalty")) rc = parse_float(a, v, 1e-6, 1e6, &o->sp.repeat_penalty);
        else if (!strcmp(a, "--presence-penalty")) rc = parse_float(a, v, -1e6, 1e6, &o->sp.presence_penalty);
        else if (!strcmp(a, "--frequency-penalty")) rc = parse_float(a, v, -1e6, 1e6, &o->sp.frequency_penalty);
        else if (!strcmp(a, "--top-k")) {
            if (!(rc = parse_long(a, v, 0, INT_MAX, &l))) o->sp.top_k = (int32_t)l;
        } else if (!strcmp(a, "--repeat-last-n")) {
            if (!(rc = parse_long(a, v, 0, 1 << 20, &l))) o->sp.repeat_last_n = (int32_t)l;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-')
                return tool_fail(2, "run: --seed needs a non-negative integer, not '%s'", v);
            o->sp.seed = s;
        } else {
            return tool_fail(2, "run: unknown option '%s' (see tport run --help)", a);
        }
        if (rc)
            return rc;
    }
    if (!o->model)
        return tool_fail(2, "run: no model (-m FILE); see tport run --help");
    if (o->prompt && o->prompt_ids)
        return tool_fail(2, "run: give either -p or --prompt-ids, not both");
    return 0;
}

/* "1,2,3" -> ids; returns the count or -1 after printing the error. */
static int32_t parse_ids(const char *s, int32_t n_vocab, tport_token **out) {
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    tport_token *ids = malloc(cap * sizeof *ids);
    if (!ids)
        return tool_fail(2, "run: out of memory"), -1;
    int32_t n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v >= n_vocab || (*end && *end != ',')) {
            free(ids);
            tool_fail(2, "run: --prompt-ids: '%s' is not a list of token ids in [0, %d)", s, (int)n_vocab);
            return -1;
        }
        ids[n++] = (tport_token)v;
        if (!*end)
            break;
        p = end + 1;
    }
    *out = ids;
    return n;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int32_t build_prompt(const run_opts *o, const tport_model *m, tport_token **ids) {
    if (o->prompt_ids)
        return parse_ids(o->prompt_ids, tport_model_n_vocab(m), ids);
    if (o->prompt) {
        const tport_tokenizer *tk = tport_model_tokenizer(m);
        size_t len = strlen(o->prompt);
        int32_t n = tk ? tport_tokenizer_tokenize(tk, o->prompt, len, true, o->parse_special, NULL, 0)
                       : tport_tokenize(m, o->prompt, true, NULL, 0);
        if (n < 0)
            return tool_fail(2, "%s", tport_last_error()), -1;
        *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof **ids);
        if (!*ids)
            return tool_fail(2, "run: out of memory"), -1;
        if (tk)
            tport_tokenizer_tokenize(tk, o->prompt, len, true, o->parse_special, *ids, n);
        else
            tport_tokenize(m, o->prompt, true, *ids, n);
        if (n == 0) {
            free(*ids);
            return tool_fail(2, "run: the prompt is empty and the model has no BOS token"), -1;
        }
        return n;
    }
    tport_token bos = tport_model_bos(m);
    if (bos < 0)
        return tool_fail(2, "run: the model has no BOS token; give -p or --prompt-ids"), -1;
    *ids = malloc(sizeof **ids);
    if (!*ids)
        return tool_fail(2, "run: out of memory"), -1;
    (*ids)[0] = bos;
    return 1;
}

/* Streams one generated token as text or as an id. */
static void emit(const run_opts *o, const tport_model *m, tport_token prev, tport_token id, int index) {
    if (o->ids) {
        printf(index ? ",%d" : "%d", (int)id);
    } else {
        char buf[256];
        int32_t k = tport_token_to_text(m, prev, id, buf, (int32_t)sizeof buf);
        fwrite(buf, 1, (size_t)k, stdout);
    }
    fflush(stdout);
}

/* Makes what a quick-start load left for later; its time to *ms.  Returns
 * the tool's exit status: 0, or 2 after saying why. */
static int finish_copies(tport_model *m, double *ms) {
    double f0 = now_ms();
    if (tport_model_finish_load(m) != TPORT_STATUS_OK)
        return tool_fail(2, "%s", tport_last_error());
    *ms = now_ms() - f0;
    return 0;
}

int cmd_run(int argc, char **argv) {
    run_opts o = {.n_predict = DEFAULT_N_PREDICT, .sp = tport_sampler_defaults()};
    tport_dist *dist = NULL; /* under mpirun: rank 0 runs this, the others serve */
    int rc = tport_dist_begin("run", &argc, argv, &dist);
    if (rc)
        return rc;
    rc = parse_args(argc, argv, &o);
    if (rc)
        return tport_dist_end(dist, rc < 0 ? 0 : rc);

    /* --cpu-experts N: "^blk\.(0|1|...)\.ffn_[a-z]+_exps\.=cpu" after --place's own */
    size_t used = (size_t)snprintf(o.place_buf, sizeof o.place_buf, "%s", o.place ? o.place : "");
    for (long l = 0; l < o.cpu_experts && used < sizeof o.place_buf; l++)
        used += (size_t)snprintf(o.place_buf + used, sizeof o.place_buf - used, "%s%ld",
                                 l == 0 ? (used ? ",^blk\\.(" : "^blk\\.(") : "|", l);
    if (o.cpu_experts > 0 && used < sizeof o.place_buf)
        used += (size_t)snprintf(o.place_buf + used, sizeof o.place_buf - used, ")\\.ffn_[a-z]+_exps\\.=cpu");
    if (used >= sizeof o.place_buf)
        return tool_fail(2, "run: --place and --cpu-experts: more than %zu characters", sizeof o.place_buf - 1);

    double t0 = now_ms();
    /* one run: the first token first (the backends' copies of the weights are made after it) */
    tport_model_params mp = {.backend = o.backend, .n_threads = (int)o.threads, .tokenizer_path = o.tokenizer,
                             .weight_type = o.weight_type, .quick_start = true,
                             .place = o.place_buf[0] ? o.place_buf : NULL};
    bool stop = false;
    if (dist && (rc = tport_dist_start(dist, o.model, &mp, &stop), stop))
        return tport_dist_end(dist, rc);
    tport_model *m = tport_dist_model_load(dist, o.model, &mp);
    if (!m)
        return tport_dist_end(dist, tool_fail(2, "%s", tport_last_error()));
    if (!o.ids && tport_tokenize(m, "", false, NULL, 0) < 0) {
        tport_model_free(m);
        return tport_dist_end(dist, tool_fail(2, "%s has no vocabulary: use --ids (with --prompt-ids), or "
                                                 "--tokenizer FILE", o.model));
    }
    tport_token *prompt = NULL;
    int32_t n_prompt = build_prompt(&o, m, &prompt);
    if (n_prompt < 0) {
        tport_model_free(m);
        return tport_dist_end(dist, 2);
    }
    /* the KV cache is allocated for the whole context: by default the
     * model's, capped so a long-context model does not take gigabytes */
    int32_t n_ctx = o.ctx ? (int32_t)o.ctx : tport_model_n_ctx(m);
    if (!o.ctx && n_ctx > DEFAULT_MAX_CTX)
        n_ctx = DEFAULT_MAX_CTX;
    tport_session *s = NULL;
    tport_sampler *sm = NULL;
    int status = 0;
    if (n_prompt > n_ctx) {
        status = tool_fail(2, "run: the prompt has %d tokens but the context holds %d", (int)n_prompt, (int)n_ctx);
        goto done;
    }
    tport_session_params spar = {.n_ctx = n_ctx, .n_batch = (int32_t)o.batch, .n_threads = (int)o.threads,
                                 .kv_f32 = o.kv_f32};
    s = tport_dist_session_new(dist, m, &spar);
    sm = tport_sampler_new(&o.sp);
    if (!s || !sm) {
        status = tool_fail(2, "%s", tport_last_error());
        goto done;
    }
    double t1 = now_ms();
    fprintf(stderr, "tport run: loaded %s in %.1f ms\n", o.model, t1 - t0);
    if (o.prompt && !o.ids) {
        fputs(o.prompt, stdout);
        fflush(stdout);
    }
    for (int32_t i = 0; i < n_prompt; i++)
        tport_sampler_accept(sm, prompt[i]);
    /* the quick start's copies, timed apart: before a longer prompt (which
     * would wait for them), else after the first token */
    bool copies_first = n_prompt > TPORT_QUICK_START_TOKENS;
    double finish_ms = 0;
    if (copies_first) {
        if ((status = finish_copies(m, &finish_ms)))
            goto done;
        t1 += finish_ms;
    }
    int32_t reused = 0;
    if (o.session) {
        if (dist) {
            status = tool_fail(2, "run: --session is not available under mpirun");
            goto done;
        }
        if ((status = tool_session_prompt(s, o.session, prompt, n_prompt, &reused)))
            goto done;
        fprintf(stderr, "tport run: session %s: %d of %d prompt tokens reused\n", o.session, (int)reused,
                (int)n_prompt);
    } else if (tport_dist_eval(dist, s, prompt, n_prompt) != TPORT_STATUS_OK) {
        status = tool_fail(2, "%s", tport_last_error());
        goto done;
    }
    /* a context shift keeps BOS and --keep prompt tokens after it */
    tport_token bos = tport_model_bos(m);
    int32_t n_keep = o.keep < 0 ? n_prompt : (int32_t)o.keep + (bos >= 0 && prompt[0] == bos);
    if (n_keep > n_prompt)
        n_keep = n_prompt;
    int n_shifts = 0;
    double t2 = now_ms();
    tport_token prev = prompt[n_prompt - 1], eos = tport_model_eos(m);
    int n_gen = 0;
    while (n_gen < o.n_predict) {
        tport_token id = tport_sampler_sample(sm, tport_session_logits(s), tport_model_n_vocab(m));
        if (id < 0) {
            status = tool_fail(2, "run: sampling failed");
            break;
        }
        if (id == eos)
            break;
        tport_sampler_accept(sm, id);
        emit(&o, m, prev, id, n_gen);
        n_gen++;
        prev = id;
        if (n_gen == o.n_predict)
            break;
        if (tport_session_pos(s) >= n_ctx) {
            if (o.no_shift || dist) {
                fprintf(stderr, "tport run: the context of %d tokens is full%s\n", (int)n_ctx,
                        dist ? " (no context shift under mpirun)" : "");
                break;
            }
            int room = tool_make_room(s, m, n_keep);
            if (room) {
                status = room == 2 ? 2 : 0;
                break;
            }
            n_shifts++;
        }
        if (n_gen == 1 && !copies_first && (status = finish_copies(m, &finish_ms)))
            break;
        if (tport_dist_eval(dist, s, &id, 1) != TPORT_STATUS_OK) {
            status = tool_fail(2, "%s", tport_last_error());
            break;
        }
    }
    if (o.ids || n_gen > 0)
        putchar('\n');
    fflush(stdout);
    double t3 = now_ms();
    fprintf(stderr, "tport run: prompt %d tokens in %.1f ms (%.1f tokens/s)\n", (int)n_prompt, t2 - t1,
            t2 > t1 ? n_prompt * 1e3 / (t2 - t1) : 0.0);
    if (finish_ms > 0.05)
        fprintf(stderr, "tport run: the backends' copies of the weights made in %.1f ms %s\n", finish_ms,
                copies_first ? "before the prompt" : "after the first token");
    if (!copies_first)
        t3 -= finish_ms;
    fprintf(stderr, "tport run: generated %d tokens in %.1f ms (%.1f tokens/s)\n", n_gen, t3 - t2,
            t3 > t2 ? n_gen * 1e3 / (t3 - t2) : 0.0);
    if (n_shifts)
        fprintf(stderr, "tport run: the context was full %d time%s: shifted, keeping %d tokens\n", n_shifts,
                n_shifts == 1 ? "" : "s", (int)n_keep);
    if (o.plan) {
        char plan[4096];
        if (tport_session_plan(s, m, plan, sizeof plan) > 0)
            fprintf(stderr, "tport run: plan%s:\n%s", n_gen > 1 ? " (the last evaluation is one token)" : "", plan);
    }
done:
    tport_sampler_free(sm);
    tport_session_free(s);
    free(prompt);
    tport_model_free(m);
    return tport_dist_end(dist, status);
}
