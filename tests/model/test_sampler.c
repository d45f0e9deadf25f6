/* Sampling with hand-made logits: greedy, llama.cpp's repetition, frequency
 * and presence penalties (hand-computed values; test_sampler_llama_cpp
 * compares with llama.cpp itself), top-k, top-p, min-p, temperature
 * (observed frequencies against the softmax), seeded reproducibility and
 * parameter checks. */
#include <math.h>

#include "../test_util.h"
#include "tport/tport.h"

static tport_sampler_params params(float temp, int32_t top_k, float top_p, float min_p) {
    tport_sampler_params p = tport_sampler_defaults();
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.repeat_penalty = 1.0f;
    return p;
}

/* Frequencies of n_draws samples over n ids. */
static void histogram(const tport_sampler_params *p, const float *logits, int n, int n_draws,
                      double *freq) {
    tport_sampler *sm = tport_sampler_new(p);
    CHECK(sm != NULL, "sampler_new: %s", tport_last_error());
    for (int i = 0; i < n; i++)
        freq[i] = 0;
    int bad = 0;
    for (int d = 0; sm && d < n_draws; d++) {
        tport_token t = tport_sampler_sample(sm, logits, n);
        if (t >= 0 && t < n)
            freq[t] += 1.0 / n_draws;
        else
            bad++;
    }
    CHECK(bad == 0, "%d samples out of range", bad);
    tport_sampler_free(sm);
}

int main(void) {
    /* greedy: argmax, the smallest id on ties */
    {
        tport_sampler_params p = params(0, 0, 1, 0);
        tport_sampler *sm = tport_sampler_new(&p);
        const float a[5] = {0.1f, 3.0f, -2.0f, 2.9f, 3.0f};
        CHECK(tport_sampler_sample(sm, a, 5) == 1, "greedy argmax (tie to the smallest id)");
        const float b[3] = {-INFINITY, -5.0f, -7.0f};
        CHECK(tport_sampler_sample(sm, b, 3) == 1, "greedy with -inf");
        tport_sampler_free(sm);
    }
    /* greedy over a vocabulary of Llama 3's size (the vectorized pick):
     * the first id of the largest, NaN never picked, ties across its
     * blocks and lanes, the odd tail, all -inf/NaN -> 0 */
    {
        enum { N = 128256 };
        static float v[N];
        tport_sampler_params p = params(0, 0, 1, 0);
        tport_sampler *sm = tport_sampler_new(&p);
        uint64_t r = 7;
        int bad = 0;
        for (int t = 0; t < 200; t++) {
            int32_t n = N - t; /* every tail length */
            for (int32_t i = 0; i < n; i++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                v[i] = (float)(int)(r >> 54) * 0.125f - 64.0f; /* few values: many ties */
                if ((r >> 20) % 97 == 0)
                    v[i] = NAN;
            }
            if (t % 3 == 0)
                v[(r >> 8) % (uint64_t)n] = NAN;
            if (t % 7 == 1)
                v[n - 1] = 1000.0f; /* the largest in the tail */
            int32_t want = 0;
            float bv = isnan(v[0]) ? -INFINITY : v[0];
            for (int32_t i = 1; i < n; i++)
                if (v[i] > bv)
                    bv = v[i], want = i;
            bad += tport_sampler_sample(sm, v, n) != want;
        }
        CHECK(bad == 0, "vectorized greedy differs from the scalar argmax %d times in 200", bad);
        for (int32_t i = 0; i < 1000; i++)
            v[i] = i % 2 ? NAN : -INFINITY;
        CHECK(tport_sampler_sample(sm, v, 1000) == 0, "all -inf or NaN: id 0");
        v[0] = NAN, v[700] = -0.0f, v[900] = 0.0f;
        CHECK(tport_sampler_sample(sm, v, 1000) == 700, "-0 and +0 tie: the first");
        tport_sampler_free(sm);
        /* with a logit bias (tport serve's ignore_eos): the same pick
         * after the bias; +inf biased by -inf is NaN, never picked but
         * at id 0, where the scalar scan kept it */
        sm = tport_sampler_new(&p);
        tport_logit_bias bias[2] = {{3, -INFINITY}, {9000, 20.0f}};
        CHECK(tport_sampler_set_logit_bias(sm, bias, 2) == TPORT_STATUS_OK, "bias: %s", tport_last_error());
        for (int32_t i = 0; i < 10000; i++)
            v[i] = (float)(i % 37) * 0.25f;
        v[3] = 100.0f;
        CHECK(tport_sampler_sample(sm, v, 10000) == 9000, "biased greedy: id 3 out, 9000 lifted from 2.25 to 22.25");
        v[9000] = -30.0f;
        CHECK(tport_sampler_sample(sm, v, 10000) == 36, "biased greedy: the first of the largest left");
        v[3] = INFINITY, v[0] = 1.0f;
        CHECK(tport_sampler_sample(sm, v, 10000) == 36, "+inf biased -inf (NaN) is not picked");
        tport_logit_bias b0 = {0, -INFINITY};
        v[0] = INFINITY;
        CHECK(tport_sampler_set_logit_bias(sm, &b0, 1) == TPORT_STATUS_OK &&
                  tport_sampler_sample(sm, v, 10000) == 0, "NaN at id 0: 0, as the scalar scan");
        tport_sampler_free(sm);
        /* biased greedy against a scalar reference (the biases added to a
         * copy in order, NaN as -inf, the first largest; a NaN at id 0
         * kept), with the raw argmax biased or not, ids biased twice,
         * biases that tie the raw best from below and above it, NaN */
        int differ = 0;
        static float w[N];
        for (int t = 0; t < 300; t++) {
            enum { M = 5000 };
            for (int32_t i = 0; i < M; i++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                v[i] = (float)(int)(r >> 59) * 0.5f; /* 0 .. 15.5: many ties */
                if (i < M / 2 && v[i] > 14.0f)
                    v[i] = 14.0f; /* the best late: biased ids before it may tie */
                if ((r >> 20) % 211 == 0)
                    v[i] = t % 5 == 0 && (r >> 30) % 2 ? INFINITY : NAN;
            }
            tport_logit_bias bs[6];
            int nb = 1 + (int)((r >> 10) % 6);
            for (int k = 0; k < nb; k++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                tport_token id = k && (r >> 40) % 4 == 0 ? bs[0].id : (tport_token)((r >> 33) % (k % 2 ? M : M / 2));
                float b = (r >> 20) % 5 == 0 ? -INFINITY : (float)((int)((r >> 24) % 9) - 4) * 0.5f;
                bs[k] = (tport_logit_bias){id, b};
            }
            if (t % 4 == 0) { /* bias the raw best id */
                int32_t at = 0;
                for (int32_t i = 1; i < M; i++)
                    if (!isnan(v[i]) && (isnan(v[at]) || v[i] > v[at]))
                        at = i;
                bs[0].id = at;
            }
            for (int32_t i = 0; i < M; i++)
                w[i] = isnan(v[i]) ? -INFINITY : v[i];
            for (int k = 0; k < nb; k++)
                w[bs[k].id] += bs[k].bias;
            int32_t want = 0;
            for (int32_t i = 1; i < M && !isnan(w[0]); i++)
                if (w[i] > w[want])
                    want = i;
            sm = tport_sampler_new(&p);
            differ += !sm || tport_sampler_set_logit_bias(sm, bs, nb) != TPORT_STATUS_OK ||
                      tport_sampler_sample(sm, v, M) != want;
            tport_sampler_free(sm);
        }
        CHECK(differ == 0, "biased greedy differs from the scalar reference %d times in 300", differ);
    }
    /* repetition penalty: positive logits divided, negative multiplied */
    {
        tport_sampler_params p = params(0, 0, 1, 0);
        p.repeat_penalty = 1.2f;
        p.repeat_last_n = 2;
        tport_sampler *sm = tport_sampler_new(&p);
        const float a[3] = {2.0f, 1.9f, -1.0f};
        CHECK(tport_sampler_sample(sm, a, 3) == 0, "no history, no penalty");
        tport_sampler_accept(sm, 0);
        CHECK(tport_sampler_sample(sm, a, 3) == 1, "2.0/1.2 < 1.9");
        tport_sampler_accept(sm, 0); /* the same id twice is penalized once */
        const float b[3] = {1.9f, 1.5f, -1.0f};
        CHECK(tport_sampler_sample(sm, b, 3) == 0, "penalized once: 1.9/1.2 = 1.58 > 1.5");
        const float c[2] = {-1.0f, -1.1f};
        CHECK(tport_sampler_sample(sm, c, 2) == 1, "negative logit multiplied: -1.2 < -1.1");
        /* window of 2: after 1, 1 the id 0 is no longer penalized */
        tport_sampler_accept(sm, 1);
        tport_sampler_accept(sm, 1);
        CHECK(tport_sampler_sample(sm, a, 3) == 0, "id 0 left the penalty window");
        tport_sampler_free(sm);
    }
    /* frequency and presence penalties (llama.cpp's), hand-computed: an id
     * seen c times loses c * 0.5 + 0.25, after the repetition penalty */
    {
        tport_sampler_params p = params(0, 0, 1, 0);
        p.repeat_penalty = 2.0f;
        p.frequency_penalty = 0.5f;
        p.presence_penalty = 0.25f;
        p.repeat_last_n = 4;
        tport_sampler *sm = tport_sampler_new(&p);
        CHECK(sm != NULL, "sampler_new: %s", tport_last_error());
        float a[6] = {4.0f, -1.0f, 3.0f, 0.0f, 1.0f, 7.0f};
        CHECK(sm && tport_sampler_apply_penalties(sm, a, 6) == TPORT_STATUS_OK && a[0] == 4.0f && a[5] == 7.0f,
              "no history, no change");
        /* 9 and -3 are outside the vocabulary; then 2, 0, 2, 1 stay in the window of 4 */
        const tport_token hist[] = {5, 9, -3, 2, 0, 2, 1};
        for (size_t i = 0; sm && i < sizeof hist / sizeof *hist; i++)
            tport_sampler_accept(sm, hist[i]);
        CHECK(sm && tport_sampler_apply_penalties(sm, a, 6) == TPORT_STATUS_OK, "apply: %s", tport_last_error());
        /* 0: 4/2 - (0.5 + 0.25); 1: -1*2 - 0.75; 2 twice: 3/2 - (1.0 + 0.25); 5 left the window */
        CHECK(a[0] == 1.25f && a[1] == -2.75f && a[2] == 0.25f && a[3] == 0.0f && a[4] == 1.0f && a[5] == 7.0f,
              "penalized: %g %g %g %g %g %g", a[0], a[1], a[2], a[3], a[4], a[5]);
        /* sample applies the same penalties: 2.9 -> 2.9/2 - 1.25 = 0.2 loses to 0.3 */
        const float b[4] = {0.1f, -5.0f, 2.9f, 0.3f};
        CHECK(sm && tport_sampler_sample(sm, b, 4) == 3, "sample picks after the penalties");
        CHECK(tport_sampler_apply_penalties(NULL, a, 6) != TPORT_STATUS_OK &&
              tport_sampler_apply_penalties(sm, a, 0) != TPORT_STATUS_OK, "bad arguments refused");
        tport_sampler_free(sm);
    }
    /* a negative presence penalty favours what was seen; no repetition penalty */
    {
        tport_sampler_params p = params(0, 0, 1, 0);
        p.presence_penalty = -1.0f;
        tport_sampler *sm = tport_sampler_new(&p);
        tport_sampler_accept(sm, 1);
        const float a[2] = {1.5f, 1.0f};
        CHECK(tport_sampler_sample(sm, a, 2) == 1, "presence -1 lifts id 1 to 2.0 over 1.5");
        tport_sampler_free(sm);
    }
    /* top-k = 1 is greedy whatever the temperature */
    {
        tport_sampler_params p = params(5.0f, 1, 1, 0);
        tport_sampler *sm = tport_sampler_new(&p);
        const float a[4] = {0.0f, 0.5f, 0.4f, 0.49f};
        int all = 1;
        for (int i = 0; i < 200; i++)
            all &= tport_sampler_sample(sm, a, 4) == 1;
        CHECK(all, "top_k 1 always picks the argmax");
        tport_sampler_free(sm);
    }
    /* top-k over a vocabulary of Llama 3's size keeps exactly the k first
     * of the full order (logit descending, ties to the smaller id), with
     * few distinct logits (ties across the cut) and with many: at a
     * temperature so high that the k kept are near equally likely, every
     * draw is one of them and each of them is drawn */
    for (int pass = 0; pass < 2; pass++) {
        enum { N = 128256, K = 40, DRAWS = 4000 };
        int levels = pass ? 1 << 20 : 50;
        static float v[N];
        static int order[N];
        uint64_t r = 11;
        for (int i = 0; i < N; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            v[i] = (float)((r >> 33) % (uint64_t)levels) / 8.0f;
            order[i] = i;
        }
        /* the reference: the K best by a plain selection over the order */
        for (int k = 0; k < K; k++) {
            int best = k;
            for (int i = k + 1; i < N; i++) {
                int a = order[i], b = order[best];
                if (v[a] > v[b] || (v[a] == v[b] && a < b))
                    best = i;
            }
            int t = order[k];
            order[k] = order[best];
            order[best] = t;
        }
        tport_sampler_params q = params(1e4f, K, 1, 0);
        tport_sampler *sm = tport_sampler_new(&q);
        int seen[K] = {0}, outside = 0;
        for (int d = 0; sm && d < DRAWS; d++) {
            tport_token t = tport_sampler_sample(sm, v, N);
            int at = -1;
            for (int k = 0; k < K; k++)
                if (order[k] == t)
                    at = k;
            if (at < 0)
                outside++;
            else
                seen[at]++;
        }
        int missing = 0;
        for (int k = 0; k < K; k++)
            missing += seen[k] == 0;
        CHECK(sm && outside == 0 && missing == 0, "top_k %d of %d (%d levels): %d draws outside, %d kept never drawn",
              K, N, levels, outside, missing);
        tport_sampler_free(sm);
    }
    const float logits[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    double f[4];
    /* temperature 1, nothing cut: frequencies follow the softmax */
    tport_sampler_params p = params(1.0f, 0, 1, 0);
    histogram(&p, logits, 4, 40000, f);
    CHECK(fabs(f[0] - 0.5) < 0.015 && fabs(f[1] - 0.3) < 0.015 && fabs(f[2] - 0.15) < 0.015 &&
          fabs(f[3] - 0.05) < 0.01, "T=1 frequencies %.3f %.3f %.3f %.3f", f[0], f[1], f[2], f[3]);
    /* temperature 0.5 squares the probabilities (then renormalizes) */
    p = params(0.5f, 0, 1, 0);
    histogram(&p, logits, 4, 40000, f);
    {
        double z = 0.25 + 0.09 + 0.0225 + 0.0025;
        CHECK(fabs(f[0] - 0.25 / z) < 0.015 && fabs(f[1] - 0.09 / z) < 0.015,
              "T=0.5 frequencies %.3f %.3f, want %.3f %.3f", f[0], f[1], 0.25 / z, 0.09 / z);
    }
    /* top-k 2: only the two best, renormalized */
    p = params(1.0f, 2, 1, 0);
    histogram(&p, logits, 4, 40000, f);
    CHECK(f[2] == 0 && f[3] == 0 && fabs(f[0] - 0.625) < 0.015, "top_k 2: %.3f %.3f %.3f %.3f",
          f[0], f[1], f[2], f[3]);
    /* top-p 0.7: 0.5 < 0.7 <= 0.8, so ids 0 and 1 */
    p = params(1.0f, 0, 0.7f, 0);
    histogram(&p, logits, 4, 40000, f);
    CHECK(f[2] == 0 && f[3] == 0 && f[1] > 0.3, "top_p 0.7: %.3f %.3f %.3f %.3f", f[0], f[1],
          f[2], f[3]);
    /* top-p 0.81: three ids */
    p = params(1.0f, 0, 0.81f, 0);
    histogram(&p, logits, 4, 40000, f);
    CHECK(f[2] > 0.1 && f[3] == 0, "top_p 0.81: %.3f %.3f %.3f %.3f", f[0], f[1], f[2], f[3]);
    /* min-p 0.2: keep p >= 0.1, so ids 0, 1, 2 */
    p = params(1.0f, 0, 1, 0.2f);
    histogram(&p, logits, 4, 40000, f);
    CHECK(f[2] > 0.1 && f[3] == 0, "min_p 0.2: %.3f %.3f %.3f %.3f", f[0], f[1], f[2], f[3]);
    /* min-p 0.7: keep p >= 0.35, only id 0 */
    p = params(1.0f, 0, 1, 0.7f);
    histogram(&p, logits, 4, 2000, f);
    CHECK(f[0] > 0.9999 && f[1] == 0 && f[2] == 0 && f[3] == 0, "min_p 0.7: %.3f", f[0]);

    /* the same seed gives the same run, another seed another run */
    {
        float flat[100];
        for (int i = 0; i < 100; i++)
            flat[i] = 0;
        tport_sampler_params q = params(1.0f, 0, 1, 0);
        q.seed = 1234;
        tport_sampler *a = tport_sampler_new(&q), *b = tport_sampler_new(&q);
        q.seed = 1235;
        tport_sampler *c = tport_sampler_new(&q);
        int same_ab = 1, same_ac = 1;
        for (int i = 0; i < 50; i++) {
            tport_token x = tport_sampler_sample(a, flat, 100);
            same_ab &= x == tport_sampler_sample(b, flat, 100);
            same_ac &= x == tport_sampler_sample(c, flat, 100);
        }
        CHECK(same_ab, "same seed, same tokens");
        CHECK(!same_ac, "another seed, other tokens");
        tport_sampler_free(a);
        tport_sampler_free(b);
        tport_sampler_free(c);
    }
    /* bad parameters are refused with a message */
    p = params(-1.0f, 0, 1, 0);
    CHECK(tport_sampler_new(&p) == NULL && tport_last_error()[0], "negative temperature");
    p = params(1.0f, 0, 0.0f, 0);
    CHECK(tport_sampler_new(&p) == NULL, "top_p 0");
    p = params(1.0f, 0, 1, 0);
    p.repeat_penalty = 0;
    CHECK(tport_sampler_new(&p) == NULL, "repeat_penalty 0");
    p = params(1.0f, 0, 1, 0);
    p.frequency_penalty = INFINITY;
    CHECK(tport_sampler_new(&p) == NULL, "frequency_penalty inf");
    p = params(1.0f, 0, 1, 0);
    p.presence_penalty = NAN;
    CHECK(tport_sampler_new(&p) == NULL, "presence_penalty NaN");
    return test_finish("test_sampler");
}
