/* Picking the next token from logits, in llama.cpp's order: penalties
 * (repetition, frequency, presence) -> top-k -> top-p -> min-p -> temperature -> a draw from the
 * softmax.  Temperature 0 is greedy (argmax after the penalty; ties go to
 * the smallest id).  The draw uses a seeded splitmix64 generator, so a run
 * with the same seed and logits picks the same tokens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tport/tport.h"

typedef struct candidate {
    tport_token id;
    float logit;
} candidate;

struct tport_sampler {
    tport_sampler_params p;
    uint64_t rng;
    tport_token *history;   /* ring of the last repeat_last_n accepted ids */
    int32_t n_history, next;
    int32_t *count;         /* per id, zero between calls; count_cap ids  */
    int32_t count_cap;
    float *work;            /* the penalized logits of sample(); cand_cap  */
    candidate *cand;
    int32_t cand_cap;
    tport_logit_bias *bias; /* OpenAI's logit_bias, added first       */
    int32_t n_bias;
};

tport_sampler_params tport_sampler_defaults(void) {
    tport_sampler_params p = {
        .temperature = 0.8f,
        .top_k = 40,
        .top_p = 0.95f,
        .min_p = 0.05f,
        .repeat_penalty = 1.0f,
        .repeat_last_n = 64,
        .seed = 42,
        .frequency_penalty = 0.0f,
        .presence_penalty = 0.0f,
    };
    return p;
}

tport_sampler *tport_sampler_new(const tport_sampler_params *p) {
    tport_sampler_params d = p ? *p : tport_sampler_defaults();
    if (!(d.temperature >= 0) || d.top_k < 0 || !(d.top_p > 0 && d.top_p <= 1) ||
        !(d.min_p >= 0 && d.min_p <= 1) || !(d.repeat_penalty > 0) || !isfinite(d.repeat_penalty) ||
        d.repeat_last_n < 0 || d.repeat_last_n > (1 << 20) || !isfinite(d.frequency_penalty) ||
        !isfinite(d.presence_penalty)) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                    "sampler: bad parameters (temperature %g, top_k %d, top_p %g, min_p %g, "
                    "repeat_penalty %g, repeat_last_n %d, frequency_penalty %g, presence_penalty %g)",
                    d.temperature, (int)d.top_k, d.top_p, d.min_p, d.repeat_penalty,
                    (int)d.repeat_last_n, d.frequency_penalty, d.presence_penalty);
        return NULL;
    }
    tport_sampler *sm = calloc(1, sizeof *sm);
    if (!sm) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "sampler: out of memory");
        return NULL;
    }
    sm->p = d;
    sm->rng = d.seed;
    if (d.repeat_last_n > 0) {
        sm->history = malloc((size_t)d.repeat_last_n * sizeof *sm->history);
        if (!sm->history) {
            free(sm);
            tport_error(TPORT_STATUS_OUT_OF_MEMORY, "sampler: out of memory");
            return NULL;
        }
    }
    return sm;
}

void tport_sampler_free(tport_sampler *sm) {
    if (!sm)
        return;
    free(sm->history);
    free(sm->count);
    free(sm->work);
    free(sm->cand);
    free(sm->bias);
    free(sm);
}

void tport_sampler_accept(tport_sampler *sm, tport_token id) {
    if (!sm || sm->p.repeat_last_n <= 0)
        return;
    sm->history[sm->next] = id;
    sm->next = (sm->next + 1) % sm->p.repeat_last_n;
    if (sm->n_history < sm->p.repeat_last_n)
        sm->n_history++;
}

/* splitmix64: uniform in [0, 1) */
static double next_uniform(tport_sampler *sm) {
    uint64_t z = (sm->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* Descending logit; equal logits by ascending id, so the order is total. */
static int by_logit_desc(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The k first candidates (id i, logit w[i]) of the n in by_logit_desc's
 * order, sorted, into c[0, k): the same k, in the same order, as sorting
 * all n would give (the order is total), without sorting all n or even
 * writing them out.  A heap of the best k seen so far keeps its worst at
 * the root; over a large vocabulary almost every candidate loses to that
 * root at the first comparison, so selecting costs a pass and sorting k,
 * where sorting a 128k vocabulary costs tens of passes per token (issue
 * 42: the sampler's share of a serve step). */
static void sift_down(candidate *h, int32_t k, int32_t i) {
    for (;;) {
        int32_t worst = i, l = 2 * i + 1, r = l + 1;
        if (l < k && by_logit_desc(&h[l], &h[worst]) > 0)
            worst = l;
        if (r < k && by_logit_desc(&h[r], &h[worst]) > 0)
            worst = r;
        if (worst == i)
            return;
        candidate t = h[i];
        h[i] = h[worst];
        h[worst] = t;
        i = worst;
    }
}

static void select_top(candidate *c, const float *w, int32_t n, int32_t k) {
    for (int32_t i = 0; i < k; i++)
        c[i] = (candidate){i, w[i]};
    for (int32_t i = k / 2 - 1; i >= 0; i--)
        sift_down(c, k, i);
    for (int32_t i = k; i < n; i++) {
        candidate x = {i, w[i]};
        if (by_logit_desc(&x, &c[0]) < 0) { /* better than the worst kept */
            c[0] = x;
            sift_down(c, k, 0);
        }
    }
    qsort(c, (size_t)k, sizeof *c, by_logit_desc);
}

/* llama.cpp's penalties (llama_sampler_penalties_apply): each id that
 * occurs c > 0 times in the history is penalized once: a positive logit is
 * divided by the repetition penalty, any other multiplied (dividing a
 * negative one would raise it), then c * frequency + presence is
 * subtracted, computed in float as there, so the results are bit-equal.
 * Counting goes through a per-id array, so a call costs O(history), not
 * O(history^2); the array is left all zero for the next call. */
static tport_status penalize(tport_sampler *sm, float *logits, int32_t n_vocab) {
    float rep = sm->p.repeat_penalty, freq = sm->p.frequency_penalty, pres = sm->p.presence_penalty;
    if (sm->n_history == 0 || (rep == 1.0f && freq == 0.0f && pres == 0.0f))
        return TPORT_STATUS_OK;
    if (n_vocab > sm->count_cap) {
        int32_t *c = calloc((size_t)n_vocab, sizeof *c);
        if (!c)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "sampler: out of memory");
        free(sm->count);
        sm->count = c;
        sm->count_cap = n_vocab;
    }
    int32_t *count = sm->count;
    for (int32_t i = 0; i < sm->n_history; i++) {
        tport_token id = sm->history[i];
        if (id >= 0 && id < n_vocab) /* ids outside the logits have nothing to penalize */
            count[id]++;
    }
    for (int32_t i = 0; i < sm->n_history; i++) {
        tport_token id = sm->history[i];
        if (id < 0 || id >= n_vocab || count[id] == 0)
            continue; /* out of range, or done at its first occurrence */
        float x = logits[id];
        x = x <= 0 ? x * rep : x / rep;
        logits[id] = x - ((float)count[id] * freq + pres);
        count[id] = 0;
    }
    return TPORT_STATUS_OK;
}

tport_status tport_sampler_apply_penalties(tport_sampler *sm, float *logits, int32_t n_vocab) {
    if (!sm || !logits || n_vocab <= 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "sampler: apply_penalties needs a sampler and logits");
    return penalize(sm, logits, n_vocab);
}

/* The greedy pick over raw logits, 4 lanes at a time (GCC and clang
 * vector extensions, portable across targets): a scalar argmax compares
 * and branches per logit, an order of magnitude slower over a 128k
 * vocabulary (RESULTS run 38).  x > a keeps a for a NaN x, so NaN is never
 * chosen over a number; a lane never holds NaN. */
typedef float sampler_f4 __attribute__((vector_size(16)));
typedef int32_t sampler_i4 __attribute__((vector_size(16)));

static sampler_f4 max4(sampler_f4 x, sampler_f4 a) {
    sampler_i4 gt = x > a;
    return (sampler_f4)(((sampler_i4)x & gt) | ((sampler_i4)a & ~gt));
}

static sampler_f4 load4(const float *p) {
    sampler_f4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The largest of l[b, e), NaN left out (-inf if nothing else). */
static float block_max(const float *l, int32_t b, int32_t e) {
    sampler_f4 a0 = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, a1 = a0, a2 = a0, a3 = a0;
    int32_t i = b;
    for (; i + 16 <= e; i += 16) { /* four chains: the max's latency, not its rate, bounds one */
        a0 = max4(load4(l + i), a0);
        a1 = max4(load4(l + i + 4), a1);
        a2 = max4(load4(l + i + 8), a2);
        a3 = max4(load4(l + i + 12), a3);
    }
    sampler_f4 a = max4(max4(a0, a1), max4(a2, a3));
    float m = -INFINITY;
    for (int k = 0; k < 4; k++)
        m = a[k] > m ? a[k] : m;
    for (; i < e; i++)
        m = l[i] > m ? l[i] : m;
    return m;
}

/* The first id of the largest logit (NaN as -inf; 0 when all are -inf or
 * NaN): the block maxima, then the first match in the first block that
 * holds it, the same id as a scalar scan with `>`. */
static tport_token first_argmax(const float *l, int32_t n) {
    enum { BLOCK = 1024 };
    float m = -INFINITY;
    int32_t at = -1;
    for (int32_t b = 0; b < n; b += BLOCK) {
        float bm = block_max(l, b, n - b < BLOCK ? n : b + BLOCK);
        if (bm > m) {
            m = bm;
            at = b;
        }
    }
    if (at < 0)
        return 0;
    for (int32_t i = at; i < n; i++)
        if (l[i] == m)
            return i;
    return 0; /* not reached: block at holds m */
}

/* Greedy with logit biases and nothing else, without copying the logits:
 * the argmax of the logits as they are, unless a biased id changes it.
 * The unbiased ids keep their logits, so the best of them is the raw
 * argmax when that id is unbiased (a biased id of equal raw logit and
 * smaller id would have been the raw argmax); then only the biased ids'
 * new values can beat it.  -1 when this does not decide (the raw argmax
 * is biased, a biased value is NaN, too many biases): the caller copies.
 * tport serve biases every ignore_eos request, and copying a 128k
 * vocabulary per token and slot costs more than the pick (issue 42). */
static tport_token biased_argmax(const tport_sampler *sm, const float *logits, int32_t n_vocab) {
    enum { MAX_BIASES = 64 }; /* each biased id rescans the list */
    if (sm->n_bias > MAX_BIASES)
        return -1;
    tport_token best = first_argmax(logits, n_vocab);
    float best_v = isnan(logits[best]) ? -INFINITY : logits[best];
    for (int32_t i = 0; i < sm->n_bias; i++)
        if (sm->bias[i].id == best)
            return -1;
    for (int32_t i = 0; i < sm->n_bias; i++) {
        tport_token id = sm->bias[i].id;
        if (id < 0 || id >= n_vocab)
            continue;
        bool first = true; /* each id once, its biases added in order as the copy does */
        for (int32_t j = 0; j < i && first; j++)
            first = sm->bias[j].id != id;
        if (!first)
            continue;
        float v = isnan(logits[id]) ? -INFINITY : logits[id];
        for (int32_t j = i; j < sm->n_bias; j++)
            if (sm->bias[j].id == id)
                v += sm->bias[j].bias;
        if (isnan(v))
            return -1;
        if (v > best_v || (v == best_v && id < best)) {
            best = id;
            best_v = v;
        }
    }
    return best;
}

tport_token tport_sampler_sample(tport_sampler *sm, const float *logits, int32_t n_vocab) {
    if (!sm || !logits || n_vocab <= 0)
        return -1;
    bool no_penalty = sm->n_history == 0 || (sm->p.repeat_penalty == 1.0f && sm->p.frequency_penalty == 0.0f &&
                                             sm->p.presence_penalty == 0.0f);
    if (sm->p.temperature <= 0 && no_penalty && sm->n_bias == 0) {
        /* greedy with nothing to add: the argmax of the logits as they
         * are (NaN as -inf, so never chosen over a number), without the
         * copy below -- a vocabulary of 128k is 512 KiB written and read
         * again per token, for every slot of tport serve (issue 42) */
        return first_argmax(logits, n_vocab);
    }
    if (sm->p.temperature <= 0 && no_penalty) {
        tport_token id = biased_argmax(sm, logits, n_vocab);
        if (id >= 0)
            return id;
    }
    if (n_vocab > sm->cand_cap) {
        candidate *c = realloc(sm->cand, (size_t)n_vocab * sizeof *c);
        if (c)
            sm->cand = c;
        float *w = realloc(sm->work, (size_t)n_vocab * sizeof *w);
        if (w)
            sm->work = w;
        if (!c || !w)
            return -1;
        sm->cand_cap = n_vocab;
    }
    float *w = sm->work;
    for (int32_t i = 0; i < n_vocab; i++)
        w[i] = isnan(logits[i]) ? -INFINITY : logits[i];
    for (int32_t i = 0; i < sm->n_bias; i++)
        if (sm->bias[i].id >= 0 && sm->bias[i].id < n_vocab)
            w[sm->bias[i].id] += sm->bias[i].bias;
    if (penalize(sm, w, n_vocab) != TPORT_STATUS_OK)
        return -1;
    if (sm->p.temperature <= 0) /* greedy: the first largest, no candidates */
        /* only +inf plus a bias of -inf is NaN here: a scan with '>' from
         * a NaN w[0] keeps 0, one from a number never takes a NaN (tport
         * serve's ignore_eos biases every request, issue 42) */
        return isnan(w[0]) ? 0 : first_argmax(w, n_vocab);
    candidate *c = sm->cand;
    int32_t n = n_vocab;
    if (sm->p.top_k > 0 && sm->p.top_k < n) {
        n = sm->p.top_k;
        select_top(c, w, n_vocab, n); /* what the sort below gives first, alone */
    } else {
        for (int32_t i = 0; i < n_vocab; i++)
            c[i] = (candidate){i, w[i]};
        qsort(c, (size_t)n_vocab, sizeof *c, by_logit_desc);
    }
    if (!isfinite(c[0].logit))
        return c[0].id; /* nothing to weigh: +inf wins, or all are -inf */
    if (sm->p.top_p < 1.0f) {
        /* softmax of what is left; keep the shortest prefix reaching top_p */
        double sum = 0, cum = 0;
        for (int32_t i = 0; i < n; i++)
            sum += exp((double)c[i].logit - c[0].logit);
        for (int32_t i = 0; i < n; i++) {
            cum += exp((double)c[i].logit - c[0].logit) / sum;
            if (cum >= sm->p.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (sm->p.min_p > 0.0f) {
        /* p_i >= min_p * p_max  <=>  logit_i >= logit_max + log(min_p) */
        double floor_logit = c[0].logit + log(sm->p.min_p);
        int32_t keep = 1;
        while (keep < n && c[keep].logit >= floor_logit)
            keep++;
        n = keep;
    }
    double sum = 0;
    for (int32_t i = 0; i < n; i++)
        sum += exp(((double)c[i].logit - c[0].logit) / sm->p.temperature);
    double r = next_uniform(sm) * sum, cum = 0;
    for (int32_t i = 0; i < n; i++) {
        cum += exp(((double)c[i].logit - c[0].logit) / sm->p.temperature);
        if (r < cum)
            return c[i].id;
    }
    return c[n - 1].id;
}

tport_status tport_sampler_set_logit_bias(tport_sampler *sm, const tport_logit_bias *biases, int32_t n) {
    if (!sm || n < 0 || (n && !biases))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "sampler: set_logit_bias needs a sampler and n >= 0");
    for (int32_t i = 0; i < n; i++)
        if (isnan(biases[i].bias) || biases[i].bias == INFINITY)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "sampler: logit bias %g for token %d", biases[i].bias,
                               (int)biases[i].id);
    tport_logit_bias *b = NULL;
    if (n && !(b = malloc((size_t)n * sizeof *b)))
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "sampler: out of memory");
    if (n)
        memcpy(b, biases, (size_t)n * sizeof *b);
    free(sm->bias);
    sm->bias = b;
    sm->n_bias = n;
    return TPORT_STATUS_OK;
}
