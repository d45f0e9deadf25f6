/* tport_batch_eval (continuous batching): sessions of one model with
 * different prompts, at different positions, evaluated together one token
 * each per step (and now and then a chunk of several tokens for one of
 * them) must give what each gives alone with tport_session_eval:
 *
 * - the same greedy ids at every step, for every session;
 * - logits bit for bit where the products sum each row the same way for
 *   one row and for several (EXACT below), else within a small tolerance
 *   (quantized weights take the CPU backend's batch kernels from 4 rows
 *   on, whose sums run in another order than one row's);
 *
 * on models synthesized to cover the attention variants (flash attention
 * over f16 caches, ALiBi and soft-capping through the unfused ops,
 * gemma3's sliding-window rings wrapping round, a mixture of experts).
 * Sessions join the batch late and leave it early, so its graph is built
 * anew and kept for other shapes.  Bad batches are refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define N_SESS 5
#define STEPS 44
#define CTX 96
#define MAX_PROMPT 20

/* Session i's prompt length and the steps it is in the batch [join, leave). */
static const int prompt_len[N_SESS] = {3, 20, 7, 1, 12};
static const int join_at[N_SESS] = {0, 0, 5, 0, 9};
static const int leave_at[N_SESS] = {STEPS, 30, STEPS, 37, STEPS};
/* At step chunk_step, session chunk_sess takes CHUNK tokens at once
 * (the head then reads the last row of each sequence). */
#define CHUNK 4
static const int chunk_step = 12, chunk_sess = 2;

typedef struct run_out {
    tport_token ids[N_SESS][STEPS + CHUNK];
    float *logits; /* [N_SESS][STEPS][n_vocab] */
    int n[N_SESS];
} run_out;

static tport_token argmax(const float *l, int32_t nv) {
    tport_token best = 0;
    for (int32_t i = 1; i < nv; i++)
        if (l[i] > l[best])
            best = i;
    return best;
}

static void make_prompt(int i, tport_token *p, int32_t nv) {
    for (int k = 0; k < prompt_len[i]; k++)
        p[k] = (tport_token)(1 + (k * 37 + i * 101) % (nv - 1));
}

/* Steps of session i: its greedy id after each step (the prompt is step
 * join_at[i]'s input); at chunk_step, chunk_sess's input is its last id
 * followed by CHUNK - 1 fixed ids. */
static int chunk_tokens(int i, int step, tport_token last, tport_token *in) {
    in[0] = last;
    if (i != chunk_sess || step != chunk_step)
        return 1;
    for (int k = 1; k < CHUNK; k++)
        in[k] = (tport_token)(5 + 11 * k);
    return CHUNK;
}

/* Every session alone. */
static bool run_alone(tport_model *m, const tport_session_params *sp, run_out *o) {
    int32_t nv = tport_model_n_vocab(m);
    for (int i = 0; i < N_SESS; i++) {
        tport_session *s = tport_session_new(m, sp);
        tport_token p[MAX_PROMPT];
        make_prompt(i, p, nv);
        if (!s || tport_session_eval(s, p, prompt_len[i]) != TPORT_STATUS_OK) {
            fprintf(stderr, "  alone %d: %s\n", i, tport_last_error());
            tport_session_free(s);
            return false;
        }
        o->n[i] = 0;
        for (int step = join_at[i]; step < leave_at[i]; step++) {
            const float *l = tport_session_logits(s);
            memcpy(o->logits + ((size_t)i * STEPS + (size_t)step) * (size_t)nv, l, (size_t)nv * sizeof *l);
            tport_token id = argmax(l, nv), in[CHUNK];
            o->ids[i][o->n[i]++] = id;
            int k = chunk_tokens(i, step, id, in);
            if (step + 1 < leave_at[i] && tport_session_eval(s, in, k) != TPORT_STATUS_OK) {
                fprintf(stderr, "  alone %d step %d: %s\n", i, step, tport_last_error());
                tport_session_free(s);
                return false;
            }
        }
        tport_session_free(s);
    }
    return true;
}

/* The same steps, every session that is in at a step in one batch. */
static bool run_batched(tport_model *m, const tport_session_params *sp, run_out *o) {
    int32_t nv = tport_model_n_vocab(m);
    tport_session *s[N_SESS] = {0};
    tport_batch *b = tport_batch_new(m);
    bool ok = b != NULL;
    for (int i = 0; i < N_SESS && ok; i++) {
        tport_token p[MAX_PROMPT];
        make_prompt(i, p, nv);
        ok = (s[i] = tport_session_new(m, sp)) && tport_session_eval(s[i], p, prompt_len[i]) == TPORT_STATUS_OK;
        o->n[i] = 0;
    }
    tport_token in[N_SESS][CHUNK];
    for (int step = 0; step < STEPS && ok; step++) {
        tport_batch_item items[N_SESS];
        int n_items = 0;
        /* the order changes with who is in: late joiners go first */
        for (int r = 0; r < N_SESS; r++) {
            int i = (r + step / 10) % N_SESS;
            if (step < join_at[i] || step >= leave_at[i])
                continue;
            const float *l = tport_session_logits(s[i]);
            if (!l) {
                ok = false;
                break;
            }
            memcpy(o->logits + ((size_t)i * STEPS + (size_t)step) * (size_t)nv, l, (size_t)nv * sizeof *l);
            tport_token id = argmax(l, nv);
            o->ids[i][o->n[i]++] = id;
            int k = chunk_tokens(i, step, id, in[i]);
            if (step + 1 < leave_at[i])
                items[n_items++] = (tport_batch_item){s[i], in[i], k};
        }
        if (ok && n_items && tport_batch_eval(b, items, n_items) != TPORT_STATUS_OK) {
            fprintf(stderr, "  batch step %d: %s\n", step, tport_last_error());
            ok = false;
        }
    }
    for (int i = 0; i < N_SESS; i++)
        tport_session_free(s[i]);
    tport_batch_free(b);
    return ok;
}

/* What the batch refuses. */
static void check_refusals(tport_model *m, const char *path) {
    tport_session_params a = {.n_ctx = 32, .n_batch = 2}, c = {.n_ctx = 48};
    tport_session *s1 = tport_session_new(m, &a), *s2 = tport_session_new(m, &a), *s3 = tport_session_new(m, &c);
    tport_batch *b = tport_batch_new(m);
    const tport_token t[3] = {1, 2, 3};
    CHECK(s1 && s2 && s3 && b, "setup: %s", tport_last_error());
    if (s1 && s2 && s3 && b) {
        tport_batch_item same[2] = {{s1, t, 1}, {s1, t, 1}};
        CHECK(tport_batch_eval(b, same, 2) == TPORT_STATUS_INVALID_ARGUMENT, "a session twice accepted");
        tport_batch_item ctx[2] = {{s1, t, 1}, {s3, t, 1}};
        CHECK(tport_batch_eval(b, ctx, 2) == TPORT_STATUS_INVALID_ARGUMENT, "different contexts accepted");
        tport_batch_item many[2] = {{s1, t, 3}, {s2, t, 1}};
        CHECK(tport_batch_eval(b, many, 2) == TPORT_STATUS_INVALID_ARGUMENT, "more than n_batch accepted");
        tport_batch_item none[1] = {{s1, t, 0}};
        CHECK(tport_batch_eval(b, none, 1) == TPORT_STATUS_INVALID_ARGUMENT, "no tokens accepted");
        const tport_token bad[1] = {tport_model_n_vocab(m)};
        tport_batch_item oov[2] = {{s1, t, 1}, {s2, bad, 1}};
        CHECK(tport_batch_eval(b, oov, 2) == TPORT_STATUS_INVALID_ARGUMENT, "a token outside the vocabulary");
        CHECK(tport_session_pos(s1) == 0 && tport_session_pos(s2) == 0, "a refused batch moved a session on");
        tport_batch_item ok[2] = {{s1, t, 2}, {s2, t + 1, 1}};
        CHECK(tport_batch_eval(b, ok, 2) == TPORT_STATUS_OK, "%s", tport_last_error());
        CHECK(tport_session_pos(s1) == 2 && tport_session_pos(s2) == 1 && tport_session_logits(s1) &&
              tport_session_logits(s2), "positions %d, %d", (int)tport_session_pos(s1), (int)tport_session_pos(s2));
        const tport_token *h = tport_session_tokens(s1);
        CHECK(h && h[0] == 1 && h[1] == 2, "the session's tokens");
        tport_model *other = tport_model_load(path, NULL);
        tport_session *so = other ? tport_session_new(other, &a) : NULL;
        tport_batch_item mixed[2] = {{s1, t, 1}, {so, t, 1}};
        CHECK(so && tport_batch_eval(b, mixed, 2) == TPORT_STATUS_INVALID_ARGUMENT, "another model's session");
        tport_session_free(so);
        tport_model_free(other);
    }
    CHECK(tport_batch_eval(NULL, NULL, 0) == TPORT_STATUS_INVALID_ARGUMENT, "NULL batch accepted");
    CHECK(tport_batch_new(NULL) == NULL, "a batch of no model");
    tport_batch_free(b);
    tport_session_free(s1);
    tport_session_free(s2);
    tport_session_free(s3);
}

typedef struct model_case {
    const char *name, *synth;
    bool kv_f32;
    bool exact; /* logits bit for bit (else within tol of the largest) */
    float tol;
} model_case;

/* Through a SIMD plug-in (TPORT_BACKEND_PATH) the products of one row
 * and of several do not always sum in the same order (its one-row
 * kernels are not its batch kernels): the ids must still be equal, the
 * logits within this share of the largest (the last bits: 3.5e-7 seen).
 * The mixtures of experts are left to the embedded backend there: last
 * bits can change which of two nearly tied experts a token takes */
#define PLUGIN_TOL 1e-5f

int main(void) {
    const char *dir = getenv("TMPDIR");
    const char *plugin_path = getenv("TPORT_BACKEND_PATH");
    const bool plugin = plugin_path && *plugin_path;
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/tport-batch-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    /* dense f32 and f16 weights take the CPU backend's generation kernel
     * for one row and its few-column kernel for several, which sum in
     * another order: ids equal, logits close; quantized weights (what is
     * served) give the same bits, through every attention variant and
     * both architectures with experts and attention of their own */
    static const model_case cases[] = {
        {"llama f32", "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128", false, false, 5e-4f},
        {"llama f16", "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --type f16", false, false, 5e-4f},
        {"llama q8_0", "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --type q8_0", false, true, 0},
        {"llama q4_k", "--dim 256 --layers 2 --heads 4 --kv-heads 2 --ff 256 --type q4_k", false, true, 0},
        /* as Q4_K_M: V in Q6_K beside the Q4_K Q and K of the same
         * activations (the plug-ins' packing shared between them is
         * test_cpu_repack's mixed_packing) */
        {"llama q4_k, q6_k v", "--dim 256 --layers 2 --heads 4 --kv-heads 2 --ff 256 --type q4_k "
                               "--tensor-type blk.0.attn_v.weight=q6_k --tensor-type blk.1.attn_v.weight=q6_k",
         false, true, 0},
        /* wide enough that each sequence's one-token attention runs on
         * 2 threads: the nodes of the step, of different lengths, each
         * whole on one thread (cpu_graph.c's plan_whole_nodes) */
        {"llama q4_k, 16 heads", "--dim 1024 --layers 2 --heads 16 --kv-heads 16 --ff 256 --type q4_k", false, true,
         0},
        {"gemma3 window 8", "--arch gemma3 --dim 64 --layers 3 --heads 4 --kv-heads 2 --head-size 32 --ff 128 "
                            "--window 8 --type q8_0", true, true, 0},
        {"gemma2 soft-capping", "--arch gemma2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 128 "
                                "--window 16 --type q8_0", false, true, 0},
        {"mpt ALiBi", "--arch mpt --dim 64 --layers 2 --heads 4 --ff 128 --type q8_0", false, true, 0},
        {"llama experts", "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --experts 4 --experts-used 2 "
                          "--type q8_0", false, true, 0},
        /* as published: MXFP4 experts and an f32 router (llama-quantize
         * never quantizes ffn_gate_inp).  In a batch the router's product
         * takes the CPU backend's dense GEMM (from 4 rows on), whose sums
         * run in another order than one row's; where two experts nearly
         * tie that can change the choice of one: with this seed one step
         * of one session, 0.0216 against a largest logit of 4.07 (with
         * the dense GEMM turned off the bits were equal) */
        {"gpt-oss mxfp4, f32 router", "--arch gpt-oss --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 "
                                      "--ff 128 --experts 8 --experts-used 2 --expert-ff 64 --window 8 --type q8_0 "
                                      "--experts-type mxfp4",
         true, false, 1e-2f},
        /* sinks, sliding windows, ADD_ID and the clamped SwiGLU: every
         * weight q8_0, so the same bits */
        {"gpt-oss sinks", "--arch gpt-oss --dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 128 "
                          "--experts 8 --experts-used 2 --expert-ff 64 --window 8 --type q8_0",
         true, true, 0},
        /* the latent cache (V read from K's rows), past 32 positions in
         * several sessions (session 1 reaches 49).  The ranks fit q8_0's
         * blocks: with q_lora_rank 24 and key_length_mla 40, attn_q_b and
         * attn_k_b fell back to f16, whose dense GEMM sums in another
         * order (0.03 on session 1's logits from step 10, then another
         * greedy id at step 21; with the dense GEMM off, equal bits) */
        {"deepseek2 latent cache", "--arch deepseek2 --dim 64 --layers 3 --heads 4 --head-size 48 --rot 16 --ff 128 "
                                   "--experts 8 --experts-used 2 --expert-ff 32 --key attention.q_lora_rank=32 "
                                   "--key attention.kv_lora_rank=32 --key attention.key_length_mla=48 "
                                   "--key attention.value_length_mla=32 --key leading_dense_block_count=1 "
                                   "--key expert_shared_count=1 --type q8_0",
         false, true, 0},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const model_case *mc = &cases[ci];
        if (plugin && strstr(mc->synth, "--experts")) {
            printf("  %s: skipped through a plug-in (its last bits may flip a router's near tie: "
                   "0.07 on deepseek2's logits in a clang build)\n", mc->name);
            continue;
        }
        snprintf(cmd, sizeof cmd, "'%s' synth %s --vocab 300 --ctx %d --seed %d --out-gain 4 -o '%s' >/dev/null",
                 TPORT_CLI, mc->synth, CTX, (int)ci + 3, path);
        CHECK(system(cmd) == 0, "failed: %s", cmd);
        tport_model_params mp = {.n_threads = 2};
        tport_model *m = tport_model_load(path, &mp);
        CHECK(m != NULL, "%s: %s", mc->name, tport_last_error());
        if (!m)
            continue;
        if (ci == 0)
            check_refusals(m, path);
        int32_t nv = tport_model_n_vocab(m);
        tport_session_params sp = {.n_ctx = CTX, .n_batch = 8, .kv_f32 = mc->kv_f32};
        run_out *alone = calloc(1, sizeof *alone), *batch = calloc(1, sizeof *batch);
        size_t n_logits = (size_t)N_SESS * STEPS * (size_t)nv;
        alone->logits = calloc(n_logits, sizeof(float));
        batch->logits = calloc(n_logits, sizeof(float));
        bool ok = run_alone(m, &sp, alone);
        CHECK(ok, "%s: alone", mc->name);
        ok = ok && run_batched(m, &sp, batch);
        CHECK(ok, "%s: batched", mc->name);
        float worst = 0, scale = 0;
        size_t differ = 0;
        for (int i = 0; ok && i < N_SESS; i++) {
            CHECK(alone->n[i] == batch->n[i] && !memcmp(alone->ids[i], batch->ids[i], sizeof(tport_token) *
                                                        (size_t)alone->n[i]),
                  "%s: session %d: greedy ids differ from its run alone", mc->name, i);
            for (int step = join_at[i]; step < leave_at[i]; step++) {
                const size_t at = ((size_t)i * STEPS + (size_t)step) * (size_t)nv;
                for (int32_t v = 0; v < nv; v++) {
                    float a = alone->logits[at + (size_t)v], d = fabsf(a - batch->logits[at + (size_t)v]);
                    differ += memcmp(&alone->logits[at + (size_t)v], &batch->logits[at + (size_t)v], sizeof a) != 0;
                    worst = d > worst ? d : worst;
                    scale = fabsf(a) > scale ? fabsf(a) : scale;
                }
            }
        }
        printf("  %s: %zu logits differ in their bits, max |diff| %g (max |logit| %g)\n", mc->name, differ,
               (double)worst, (double)scale);
        if (mc->exact && !plugin)
            CHECK(ok && differ == 0, "%s: %zu logits are not bit for bit those of the session alone", mc->name,
                  differ);
        else
            CHECK(ok && scale > 0 && worst <= (mc->exact ? PLUGIN_TOL : mc->tol) * scale,
                  "%s: max |diff| %g against max |logit| %g", mc->name, (double)worst, (double)scale);
        free(alone->logits);
        free(batch->logits);
        free(alone);
        free(batch);
        tport_model_free(m);
        unlink(path);
    }
    return test_finish("test_batch_eval");
}
