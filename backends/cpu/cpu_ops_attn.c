/* flash_attn: attention that reads the KV cache where it lies.
 *
 *   dst[:, h, t] = sum_j p_j v_j,  p = softmax_j(scale * q[:, h, t] . k_j + mask[j, t])
 *
 * with k_j, v_j the rows of kv head g = h / (n_head / n_head_kv) (f32 or
 * f16, strided views of the cache: no copy, no transpose of V).
 *
 * Work is cut into tiles of queries that share one kv head: consecutive
 * query heads of a group (grouped-query attention) and then consecutive
 * tokens, so each K and V row is loaded once per tile and used for every
 * query in it.  Per tile: the scores of every key (up to the last key any
 * query of the tile may see), a softmax over them, then the weighted sum
 * of V rows.  Threads claim tiles one at a time from an atomic counter,
 * which balances the growing key ranges of a causal prompt.  Four ways
 * through (fa_path), the first three for head sizes a multiple of VF_LEN:
 * - FA_HEADS, one token from a cache that keeps a token's heads side by
 *   side (the runtime's): each thread streams its heads' part of every
 *   row instead of working in tiles;
 * - FA_TRANSPOSED, several queries per kv head (a prompt): tiles of
 *   FA_TRANSPOSED_TILE queries against the head's keys transposed, blocks of
 *   keys as vectors;
 * - FA_ONE, one query per kv head from a head-major cache: key by key;
 * - FA_PORTABLE, any head size: scalar, in tiles of FA_TILE.
 *
 * FLASH_ATTN_EXT (ABI 1.3) adds soft-capping, as ggml computes it: the
 * scores are made with scale / cap and no mask, then each becomes
 * cap tanh(s) + mask before the softmax (cap_scores); and sinks: a head's
 * sink joins the softmax's maximum and denominator, with no value. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_vf.h"

#define FA_TILE 4
/* Queries of an FA_TRANSPOSED tile (a multiple of 4), and keys per block
 * of its scores (see FA_TRANSPOSED below). */
#define FA_TRANSPOSED_TILE 16
#if VF_SIMD
#define FA_KVEC (VF_LEN == 16 ? 4 : 2)
#define FA_KB (FA_KVEC * VF_LEN)
/* Floats per row of the transposed keys: n_kv rounded up to a block,
 * plus one cache line.  With a row of 512 keys (2 KiB), the 64 rows of a
 * block's keys would fall on 2 of the 64 sets of L1 and evict each other. */
static int64_t keys_stride(int64_t n_kv) {
    return (n_kv + FA_KB - 1) / FA_KB * FA_KB + 16;
}
#endif

#define FA_DECODE_HEADS 32 /* query heads of one token whose scores one pass keeps (a multiple of 4) */

typedef struct fa_tile {
    int cnt;                               /* queries, 1..FA_TILE (FA_TRANSPOSED: ..FA_TRANSPOSED_TILE) */
    const float *q[FA_TRANSPOSED_TILE];
    const float *mask[FA_TRANSPOSED_TILE]; /* NULL: no mask */
    float *out[FA_TRANSPOSED_TILE];
    float *s[FA_TRANSPOSED_TILE];          /* scores, then probabilities [n_kv] */
    float inv[FA_TILE];                    /* 1 / sum of the probabilities, 0 for an all -inf row */
    const uint8_t *k;                      /* row 0 of the tile's kv head */
    const uint8_t *v[FA_TILE];             /* row 0 of query i's V: the same kv head for a
                                            * tile, one a head side by side for one token */
    size_t k_nb1, v_nb1;
    int64_t hd, kv_end;
    float scale;
    /* FLASH_ATTN_EXT: cap > 0 scores without the mask, capped after
     * (cap_scores) with cap_mask; sink[i] of query i when has_sink */
    float cap;
    const float *cap_mask[FA_TRANSPOSED_TILE];
    bool has_sink;
    float sink[FA_TRANSPOSED_TILE];
} fa_tile;

/* The four ways through (see the top). */
typedef enum fa_path { FA_HEADS, FA_TRANSPOSED, FA_ONE, FA_PORTABLE } fa_path;

static fa_path path_of(const cpu_op *op) {
#if VF_SIMD
    const tport_tensor_view *q = op->src[0], *k = op->src[1], *v = op->src[2];
    int64_t n = q->ne[2], group = q->ne[1] / k->ne[2];
    /* a token's heads side by side in a cache row, or a single kv head */
    bool side_by_side = k->ne[2] == 1 || (k->nb[2] < k->nb[1] && v->nb[2] < v->nb[1]);
    if (q->ne[0] % VF_LEN == 0) {
        if (n == 1 && side_by_side)
            return FA_HEADS;
        return group * n > 1 ? FA_TRANSPOSED : FA_ONE;
    }
#else
    (void)op;
#endif
    return FA_PORTABLE;
}

bool cpu_flash_attn_one_token(const cpu_op *op) {
    return path_of(op) == FA_HEADS;
}

/* Queries per tile of the tile paths. */
static int tile_queries(fa_path path) {
    return path == FA_TRANSPOSED ? FA_TRANSPOSED_TILE : path == FA_ONE ? 1 : FA_TILE;
}

/* A thread's scratch: the scores, [rows][n_kv] floats, then (tile paths)
 * each token's visible_end, then the transposed keys (FA_TRANSPOSED) or
 * a K or V row and FA_TILE accumulators in f32 (FA_PORTABLE). */
size_t cpu_flash_attn_thread_scratch(const cpu_op *op) {
    int64_t hd = op->src[0]->ne[0], n_head = op->src[0]->ne[1], n = op->src[0]->ne[2], n_kv = op->src[1]->ne[1];
    fa_path path = path_of(op);
    size_t rows = (size_t)(path == FA_HEADS ? (n_head < FA_DECODE_HEADS ? n_head : FA_DECODE_HEADS)
                                            : tile_queries(path));
    size_t floats = rows * (size_t)n_kv, ends = path == FA_HEADS ? 0 : (size_t)n;
#if VF_SIMD
    if (path == FA_TRANSPOSED)
        floats += (size_t)hd * (size_t)keys_stride(n_kv);
#endif
    if (path == FA_PORTABLE)
        floats += (size_t)(2 + FA_TILE) * (size_t)hd;
    return floats * sizeof(float) + ends * sizeof(int64_t) + 3 * 64; /* 3 alignments to 64 */
}

/* ---- softmax over each query's scores ------------------------------------ */
/* s := cap tanh(s) + mask over [0, n): soft-capping after scores made
 * with scale / cap and no mask (ggml's order) */
static void cap_scores(float *s, const float *mask, int64_t n, float cap) {
    for (int64_t j = 0; j < n; j++)
        s[j] = cap * tanhf(s[j]) + (mask ? mask[j] : 0.0f);
}

/* s[0..n) := exp(s - max) and returns 1 / sum, or 0 if every s is -inf
 * (then s is all zeros).  A sink (NULL: none) counts in the maximum and
 * the sum only. */
static float softmax_in_place(float *s, int64_t n, const float *sink) {
    float max = -INFINITY;
    int64_t j = 0;
#if VF_SIMD
    vf vmax = vf_set1(-INFINITY);
    for (; j + VF_LEN <= n; j += VF_LEN)
        vmax = vf_max(vmax, vf_loadu(s + j));
    max = vf_reduce_max(vmax);
#endif
    for (; j < n; j++)
        max = s[j] > max ? s[j] : max;
    float scores_max = max;
    if (sink && *sink > max)
        max = *sink;
    if (scores_max == -INFINITY) {
        memset(s, 0, (size_t)n * sizeof *s);
        return 0.0f;
    }
    double sum = 0.0;
    j = 0;
#if VF_SIMD
    vf vm = vf_set1(max), vsum = vf_zero();
    for (; j + VF_LEN <= n; j += VF_LEN) {
        vf e = vf_exp(vf_sub(vf_loadu(s + j), vm));
        vf_storeu(s + j, e);
        vsum = vf_add(vsum, e);
    }
    sum = vf_reduce_add(vsum);
#endif
    for (; j < n; j++) {
        float e = s[j] == -INFINITY ? 0.0f : expf(s[j] - max);
        s[j] = e;
        sum += e;
    }
    if (sink)
        sum += expf(*sink - max);
    return (float)(1.0 / sum);
}

/* ---- SIMD: head size a multiple of VF_LEN --------------------------------- */
#if VF_SIMD
VF_INLINE vf load_kv(const uint8_t *row, int64_t i, bool f16) {
    if (f16)
        return vf_load_f16(row + 2 * i);
    return vf_loadu((const float *)(const void *)row + i);
}

/* A kv head's rows lie a whole cache row apart (every head of a token is
 * stored together: 1.5 KiB for stories110M), so a 4 KiB page holds only a
 * few rows of a head and the hardware prefetchers, which stay inside a
 * page, fall behind: the loops fetch row j + FA_PREFETCH themselves, which
 * made generation at depth clearly faster; 8 keys ahead was faster than
 * 32 or 64 (RESULTS, the session 8 checks after run 12). */
#define FA_PREFETCH 8

/* bytes of one K or V element */
VF_INLINE size_t kv_elem(bool f16) {
    return f16 ? 2 : 4;
}

/* bytes [from, from + bytes) of row j + FA_PREFETCH */
VF_INLINE void prefetch_row(const uint8_t *rows, size_t nb1, int64_t j, size_t from, size_t bytes) {
    vf_prefetch((uintptr_t)rows + (uintptr_t)(j + FA_PREFETCH) * nb1 + from, bytes);
}

/* the bytes of a K or V row */
VF_INLINE size_t row_bytes(const fa_tile *t, bool f16) {
    return (size_t)t->hd * kv_elem(f16);
}

/* The four sums of a0..a3 (each folded to 8 lanes first where a vector
 * is 16). */
VF_INLINE __m128 vf_hsum4(vf a0, vf a1, vf a2, vf a3) {
#if VF_LEN == 16
    return cpu_hsum4(vf_fold8(a0), vf_fold8(a1), vf_fold8(a2), vf_fold8(a3));
#else
    return cpu_hsum4(a0, a1, a2, a3);
#endif
}

/* The scores of a single query (generation from a head-major cache, which
 * the heads-side-by-side path below does not take), four keys at a time: the
 * query's vectors are loaded once for all four, four independent sums keep
 * more of the cache's rows in flight, and one tree of horizontal adds
 * gives the four scores. */
VF_INLINE void scores_one(const fa_tile *t, bool f16) {
    const float *q = t->q[0], *mask = t->mask[0];
    float *s = t->s[0];
    int64_t j = 0;
    for (; j + 4 <= t->kv_end; j += 4) {
        const uint8_t *k0 = t->k + (size_t)j * t->k_nb1, *k1 = k0 + t->k_nb1, *k2 = k1 + t->k_nb1,
                      *k3 = k2 + t->k_nb1;
        for (int u = 0; u < 4; u++)
            prefetch_row(t->k, t->k_nb1, j + u, 0, row_bytes(t, f16));
        vf a0 = vf_zero(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t c = 0; c < t->hd; c += VF_LEN) {
            const vf qv = vf_loadu(q + c);
            a0 = vf_fmadd(load_kv(k0, c, f16), qv, a0);
            a1 = vf_fmadd(load_kv(k1, c, f16), qv, a1);
            a2 = vf_fmadd(load_kv(k2, c, f16), qv, a2);
            a3 = vf_fmadd(load_kv(k3, c, f16), qv, a3);
        }
        __m128 sc = _mm_mul_ps(vf_hsum4(a0, a1, a2, a3), _mm_set1_ps(t->scale));
        if (mask)
            sc = _mm_add_ps(sc, _mm_loadu_ps(mask + j));
        _mm_storeu_ps(s + j, sc);
    }
    for (; j < t->kv_end; j++) {
        const uint8_t *kr = t->k + (size_t)j * t->k_nb1;
        vf a = vf_zero();
        for (int64_t c = 0; c < t->hd; c += VF_LEN)
            a = vf_fmadd(load_kv(kr, c, f16), vf_loadu(q + c), a);
        s[j] = vf_reduce_add(a) * t->scale + (mask ? mask[j] : 0.0f);
    }
}

/* out[:, c0 .. c0 + nv VF_LEN) of every query of the tile; shared: the
 * queries read one V row (t->v[0]'s), loaded once for all of them */
VF_INLINE void values_simd(const fa_tile *t, int cnt, int nv, int64_t c0, bool f16, bool shared) {
    vf acc[FA_TILE][8];
    for (int i = 0; i < cnt; i++)
        for (int u = 0; u < nv; u++)
            acc[i][u] = vf_zero();
    size_t from = (size_t)c0 * kv_elem(f16), bytes = (size_t)(nv * VF_LEN) * kv_elem(f16);
    for (int64_t j = 0; j < t->kv_end; j++) {
        size_t off = (size_t)j * t->v_nb1;
        for (int i = 0; i < (shared ? 1 : cnt); i++)
            prefetch_row(t->v[i], t->v_nb1, j, from, bytes);
        if (shared) {
            vf vv[8];
            for (int u = 0; u < nv; u++)
                vv[u] = load_kv(t->v[0] + off, c0 + VF_LEN * u, f16);
            for (int i = 0; i < cnt; i++) {
                vf p = vf_set1(t->s[i][j]);
                for (int u = 0; u < nv; u++)
                    acc[i][u] = vf_fmadd(p, vv[u], acc[i][u]);
            }
        } else {
            for (int i = 0; i < cnt; i++) {
                vf p = vf_set1(t->s[i][j]);
                for (int u = 0; u < nv; u++)
                    acc[i][u] = vf_fmadd(p, load_kv(t->v[i] + off, c0 + VF_LEN * u, f16), acc[i][u]);
            }
        }
    }
    for (int i = 0; i < cnt; i++)
        for (int u = 0; u < nv; u++)
            vf_storeu(t->out[i] + c0 + VF_LEN * u, vf_mul(acc[i][u], vf_set1(t->inv[i])));
}

/* AVX2 has 16 registers: 2 vectors of V per pass keep cnt x 2 accumulators
 * in them; AVX-512's 32 take 4.  A single query (generation) has room for
 * 8 accumulators: V's rows, the largest read of a token at depth, are then
 * read in one pass for heads of up to 8 vectors instead of in several. */
#define FA_NV (VF_LEN == 16 ? 4 : 2)
#define FA_NV1 8

/* the softmax of the tile's scores and the weighted sums of V */
VF_INLINE void tile_values(fa_tile *t, int cnt, bool f16, bool shared) {
    for (int i = 0; i < cnt; i++)
        t->inv[i] = softmax_in_place(t->s[i], t->kv_end, t->has_sink ? &t->sink[i] : NULL);
    int64_t c = 0;
    if (cnt == 1)
        for (; c + FA_NV1 * VF_LEN <= t->hd; c += FA_NV1 * VF_LEN)
            values_simd(t, 1, FA_NV1, c, f16, true);
    for (; c + FA_NV * VF_LEN <= t->hd; c += FA_NV * VF_LEN)
        values_simd(t, cnt, FA_NV, c, f16, shared);
    for (; c < t->hd; c += VF_LEN)
        values_simd(t, cnt, 1, c, f16, shared);
}

/* One query: its scores key by key, then its values. */
static void one_query_f16(fa_tile *t) {
    scores_one(t, true);
    if (t->cap > 0.0f)
        cap_scores(t->s[0], t->cap_mask[0], t->kv_end, t->cap);
    tile_values(t, 1, true, true);
}

static void one_query_f32(fa_tile *t) {
    scores_one(t, false);
    if (t->cap > 0.0f)
        cap_scores(t->s[0], t->cap_mask[0], t->kv_end, t->cap);
    tile_values(t, 1, false, true);
}

/* ---- FA_TRANSPOSED: many queries per kv head (a prompt) ---------------------
 * Scored key by key, every dot product ends in a horizontal sum, which
 * costs about as much as its multiply-adds.  A prompt has many
 * queries per kv head, so a thread keeps the head's keys transposed
 * (kt[d][j], f32) and scores four queries against FA_KB keys at a time: a
 * row of kt is a vector of keys, a query element a broadcast, and the
 * scores come out as rows of keys, ready for the softmax.  A thread
 * transposes the keys of a head once, extending them as its tiles reach
 * further into the cache. */
typedef struct fa_keys {
    float *kt;          /* [hd][stride] */
    int64_t stride;     /* keys_stride(n_kv) */
    int64_t n_kv;
    const uint8_t *k;   /* row 0 of the kv head they are of; NULL: none yet */
    int64_t end;        /* keys [0, end) are in kt, a multiple of VF_LEN */
} fa_keys;

/* kt holds keys [0, end) of tile t's kv head (keys past n_kv as zeros) */
VF_INLINE void keys_extend(fa_keys *kt, const fa_tile *t, int64_t end, bool f16) {
    if (kt->k != t->k) {
        kt->k = t->k;
        kt->end = 0;
    }
    for (; kt->end < end; kt->end += VF_LEN)
        for (int64_t d0 = 0; d0 < t->hd; d0 += VF_LEN) {
            vf r[VF_LEN];
            for (int i = 0; i < VF_LEN; i++)
                r[i] = kt->end + i < kt->n_kv ? load_kv(t->k + (size_t)(kt->end + i) * t->k_nb1, d0, f16) : vf_zero();
            vf_transpose(r);
            for (int i = 0; i < VF_LEN; i++)
                vf_storeu(kt->kt + (size_t)(d0 + i) * (size_t)kt->stride + kt->end, r[i]);
        }
}

/* The scores of NQ (1..4) queries of t from i0 on, keys [j0, j0 + FA_KB)
 * cut at end: s = scale q . k + mask. */
VF_INLINE void scores_block(const fa_tile *t, const fa_keys *kt, int i0, int64_t j0, int64_t end, const int NQ) {
    vf acc[4][FA_KVEC];
    for (int i = 0; i < NQ; i++)
        for (int u = 0; u < FA_KVEC; u++)
            acc[i][u] = vf_zero();
    const float *kp = kt->kt + j0;
    for (int64_t d = 0; d < t->hd; d++, kp += kt->stride) {
        vf kv[FA_KVEC];
        for (int u = 0; u < FA_KVEC; u++)
            kv[u] = vf_loadu(kp + VF_LEN * u);
        for (int i = 0; i < NQ; i++) {
            const vf q = vf_set1(t->q[i0 + i][d]);
            for (int u = 0; u < FA_KVEC; u++)
                acc[i][u] = vf_fmadd(kv[u], q, acc[i][u]);
        }
    }
    const vf scale = vf_set1(t->scale);
    for (int i = 0; i < NQ; i++) {
        float *s = t->s[i0 + i];
        const float *mask = t->mask[i0 + i];
        for (int u = 0; u < FA_KVEC; u++) {
            int64_t j = j0 + VF_LEN * u;
            vf v = vf_mul(acc[i][u], scale);
            if (j + VF_LEN <= end) {
                if (mask)
                    v = vf_add(v, vf_loadu(mask + j));
                vf_storeu(s + j, v);
            } else if (j < end) { /* the mask has n_kv entries: past end it may not */
                float tail[VF_LEN];
                vf_storeu(tail, v);
                for (int64_t e = j; e < end; e++)
                    s[e] = tail[e - j] + (mask ? mask[e] : 0.0f);
            }
        }
    }
}

/* An FA_TRANSPOSED tile: t->cnt queries of one kv head, ends[i] one past
 * the last key query i sees.  The scores of every four, then each four's
 * softmax and values (tile_values). */
VF_INLINE void transposed_tile(fa_tile *t, fa_keys *kt, const int64_t *ends, bool f16) {
    keys_extend(kt, t, (t->kv_end + FA_KB - 1) / FA_KB * FA_KB, f16);
    int64_t four_end[FA_TRANSPOSED_TILE / 4];
    for (int i0 = 0; i0 < t->cnt; i0 += 4) {
        four_end[i0 / 4] = 0;
        for (int i = i0; i < t->cnt && i < i0 + 4; i++)
            four_end[i0 / 4] = ends[i] > four_end[i0 / 4] ? ends[i] : four_end[i0 / 4];
    }
    /* key blocks outer: a block of kt (hd x FA_KB floats) stays in L1 for every four */
    for (int64_t j0 = 0; j0 < t->kv_end; j0 += FA_KB)
        for (int i0 = 0; i0 < t->cnt; i0 += 4) {
            int64_t end = four_end[i0 / 4];
            if (j0 >= end)
                continue;
            switch (t->cnt - i0 < 4 ? t->cnt - i0 : 4) {
            case 1: scores_block(t, kt, i0, j0, end, 1); break;
            case 2: scores_block(t, kt, i0, j0, end, 2); break;
            case 3: scores_block(t, kt, i0, j0, end, 3); break;
            default: scores_block(t, kt, i0, j0, end, 4); break;
            }
        }
    if (t->cap > 0.0f) /* the keys up to its four's end: those past its own are masked here */
        for (int i = 0; i < t->cnt; i++)
            cap_scores(t->s[i], t->cap_mask[i], four_end[i / 4], t->cap);
    for (int i0 = 0; i0 < t->cnt; i0 += 4) {
        fa_tile f = {.cnt = t->cnt - i0 < 4 ? t->cnt - i0 : 4, .k_nb1 = t->k_nb1, .v_nb1 = t->v_nb1, .hd = t->hd,
                     .kv_end = four_end[i0 / 4], .scale = t->scale, .has_sink = t->has_sink};
        if (f.kv_end == 0) {
            for (int i = 0; i < f.cnt; i++)
                memset(t->out[i0 + i], 0, (size_t)t->hd * sizeof(float));
            continue;
        }
        for (int i = 0; i < f.cnt; i++) {
            f.s[i] = t->s[i0 + i];
            f.out[i] = t->out[i0 + i];
            f.v[i] = t->v[0];
            f.sink[i] = t->sink[i0 + i];
        }
        switch (f.cnt) {
        case 1: tile_values(&f, 1, f16, true); break;
        case 2: tile_values(&f, 2, f16, true); break;
        case 3: tile_values(&f, 3, f16, true); break;
        default: tile_values(&f, 4, f16, true); break;
        }
    }
}

static void transposed_tile_f16(fa_tile *t, fa_keys *kt, const int64_t *ends) {
    transposed_tile(t, kt, ends, true);
}

static void transposed_tile_f32(fa_tile *t, fa_keys *kt, const int64_t *ends) {
    transposed_tile(t, kt, ends, false);
}

/* ---- one query token (generation): a thread's heads side by side ----------
 * A token's K (and V) row holds every kv head one after another (1.5 KiB
 * for stories110M).  Head by head, the tile path reads 128 bytes of a row
 * and jumps a whole row to the next key: at depth the prefetchers lose
 * that stream and each key waits on memory.  Here a thread takes a range
 * of kv heads and reads its part of every row in one run: the scores of
 * all its query heads key by key, then V for four query heads at a time.
 * Per head and key the arithmetic is the tile path's. */
typedef struct fa_decode {
    const tport_tensor_view *q, *d;
    const uint8_t *k, *v;       /* row 0 of kv head 0 */
    size_t k_nb1, k_nb2, v_nb1, v_nb2;
    const float *mask;          /* NULL: no mask */
    float *s;                   /* scores of query head h0 + i at s + i * n_kv */
    int64_t hd, group, n_kv, kv_end;
    float scale;
    float cap;                  /* > 0: mask (then NULL) applied by cap_scores */
    const float *cap_mask;
    const float *sinks;         /* [n_head], or NULL */
} fa_decode;

VF_INLINE const float *decode_q(const fa_decode *a, int64_t h) {
    return (const float *)(const void *)cpu_row(a->q, h, 0, 0);
}

/* scores of query heads [h0, h1) for every key; shared: each four heads
 * from h0 on read one kv head (grouped-query attention), whose K vectors
 * are then converted once for the four */
VF_INLINE void decode_scores(const fa_decode *a, int64_t h0, int64_t h1, bool f16, bool shared) {
    const uint8_t *first = a->k + (size_t)(h0 / a->group) * a->k_nb2;
    size_t span = (size_t)((h1 - 1) / a->group - h0 / a->group) * a->k_nb2 + (size_t)a->hd * kv_elem(f16);
    for (int64_t j = 0; j < a->kv_end; j++) {
        const uint8_t *row = a->k + (size_t)j * a->k_nb1;
        prefetch_row(first, a->k_nb1, j, 0, span);
        int64_t h = h0;
        for (; h + 4 <= h1; h += 4) {
            const uint8_t *k0 = row + (size_t)(h / a->group) * a->k_nb2,
                          *k1 = row + (size_t)((h + 1) / a->group) * a->k_nb2,
                          *k2 = row + (size_t)((h + 2) / a->group) * a->k_nb2,
                          *k3 = row + (size_t)((h + 3) / a->group) * a->k_nb2;
            const float *q0 = decode_q(a, h), *q1 = decode_q(a, h + 1), *q2 = decode_q(a, h + 2),
                        *q3 = decode_q(a, h + 3);
            vf a0 = vf_zero(), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t c = 0; c < a->hd; c += VF_LEN) {
                if (shared) {
                    const vf kv = load_kv(k0, c, f16);
                    a0 = vf_fmadd(kv, vf_loadu(q0 + c), a0);
                    a1 = vf_fmadd(kv, vf_loadu(q1 + c), a1);
                    a2 = vf_fmadd(kv, vf_loadu(q2 + c), a2);
                    a3 = vf_fmadd(kv, vf_loadu(q3 + c), a3);
                } else {
                    a0 = vf_fmadd(load_kv(k0, c, f16), vf_loadu(q0 + c), a0);
                    a1 = vf_fmadd(load_kv(k1, c, f16), vf_loadu(q1 + c), a1);
                    a2 = vf_fmadd(load_kv(k2, c, f16), vf_loadu(q2 + c), a2);
                    a3 = vf_fmadd(load_kv(k3, c, f16), vf_loadu(q3 + c), a3);
                }
            }
            float sc[4];
            _mm_storeu_ps(sc, _mm_mul_ps(vf_hsum4(a0, a1, a2, a3), _mm_set1_ps(a->scale)));
            for (int i = 0; i < 4; i++)
                a->s[(h + i - h0) * a->n_kv + j] = sc[i] + (a->mask ? a->mask[j] : 0.0f);
        }
        for (; h < h1; h++) {
            const uint8_t *kr = row + (size_t)(h / a->group) * a->k_nb2;
            const float *q = decode_q(a, h);
            vf acc = vf_zero();
            for (int64_t c = 0; c < a->hd; c += VF_LEN)
                acc = vf_fmadd(load_kv(kr, c, f16), vf_loadu(q + c), acc);
            a->s[(h - h0) * a->n_kv + j] = vf_reduce_add(acc) * a->scale + (a->mask ? a->mask[j] : 0.0f);
        }
    }
}

/* query heads [h0, h1), at most FA_DECODE_HEADS: their scores, then each
 * four of them as a tile whose queries read their own heads' V rows */
VF_INLINE void decode_heads(const fa_decode *a, int64_t h0, int64_t h1, bool f16, bool shared) {
    decode_scores(a, h0, h1, f16, shared);
    if (a->cap > 0.0f)
        for (int64_t h = h0; h < h1; h++)
            cap_scores(a->s + (h - h0) * a->n_kv, a->cap_mask, a->kv_end, a->cap);
    fa_tile t = {.v_nb1 = a->v_nb1, .hd = a->hd, .kv_end = a->kv_end, .has_sink = a->sinks != NULL};
    for (int64_t h = h0; h < h1; h += 4) {
        int cnt = (int)(h1 - h < 4 ? h1 - h : 4);
        for (int i = 0; i < cnt; i++) {
            if (a->sinks)
                t.sink[i] = a->sinks[h + i];
            t.s[i] = a->s + (h + i - h0) * a->n_kv;
            t.out[i] = (float *)(void *)cpu_row(a->d, h + i, 0, 0);
            t.v[i] = a->v + (size_t)((h + i) / a->group) * a->v_nb2;
        }
        if (cnt == 4)
            tile_values(&t, 4, f16, shared);
        else
            tile_values(&t, cnt, f16, shared);
    }
}

static void decode_heads_f16(const fa_decode *a, int64_t h0, int64_t h1) {
    if (a->group % 4 == 0)
        decode_heads(a, h0, h1, true, true);
    else
        decode_heads(a, h0, h1, true, false);
}

static void decode_heads_f32(const fa_decode *a, int64_t h0, int64_t h1) {
    if (a->group % 4 == 0)
        decode_heads(a, h0, h1, false, true);
    else
        decode_heads(a, h0, h1, false, false);
}
#endif

/* ---- portable path --------------------------------------------------------- */
static const float *kv_row_f32(const tport_tensor_view *kv, const uint8_t *row, int64_t hd, float *buf) {
    if (kv->type == TPORT_TYPE_F32)
        return (const float *)(const void *)row;
    cpu_row_to_f32(kv, row, hd, buf);
    return buf;
}

static void tile_portable(fa_tile *t, const tport_tensor_view *k, const tport_tensor_view *v, float *rowbuf,
                          float *acc) {
    int64_t hd = t->hd;
    for (int64_t j = 0; j < t->kv_end; j++) {
        const float *kr = kv_row_f32(k, t->k + (size_t)j * t->k_nb1, hd, rowbuf);
        for (int i = 0; i < t->cnt; i++) {
            float d = 0.0f;
            for (int64_t c = 0; c < hd; c++)
                d += t->q[i][c] * kr[c];
            t->s[i][j] = d * t->scale + (t->mask[i] ? t->mask[i][j] : 0.0f);
        }
    }
    for (int i = 0; i < t->cnt; i++) {
        if (t->cap > 0.0f)
            cap_scores(t->s[i], t->cap_mask[i], t->kv_end, t->cap);
        t->inv[i] = softmax_in_place(t->s[i], t->kv_end, t->has_sink ? &t->sink[i] : NULL);
    }
    memset(acc, 0, (size_t)(t->cnt * hd) * sizeof *acc);
    for (int64_t j = 0; j < t->kv_end; j++) {
        const float *vr = kv_row_f32(v, t->v[0] + (size_t)j * t->v_nb1, hd, rowbuf);
        for (int i = 0; i < t->cnt; i++) {
            float p = t->s[i][j];
            for (int64_t c = 0; c < hd; c++)
                acc[i * hd + c] += p * vr[c];
        }
    }
    for (int i = 0; i < t->cnt; i++)
        for (int64_t c = 0; c < hd; c++)
            t->out[i][c] = acc[i * hd + c] * t->inv[i];
}

/* One past the last key a query with this mask row may see: the row's
 * -inf tail (the future of a causal prompt, the cache's unused end) is
 * skipped. */
static int64_t visible_end(const float *mask, int64_t n_kv) {
    int64_t j = n_kv;
    while (j > 0 && mask[j - 1] == -INFINITY)
        j--;
    return j;
}

static void *align64(void *p) {
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* The node's scale (divided by the cap when soft-capping), cap, sinks. */
typedef struct fa_ext {
    float scale, cap;
    const float *sinks;
} fa_ext;

static fa_ext ext_of(const cpu_op *op) {
    tport_params_flash_attn_ext p = {0};
    memcpy(&p, op->dst->params,
           op->dst->op == TPORT_OP_FLASH_ATTN_EXT ? sizeof p : sizeof(tport_params_flash_attn));
    fa_ext e = {.scale = p.scale, .cap = p.softcap > 0.0f ? p.softcap : 0.0f};
    if (e.cap > 0.0f)
        e.scale = p.scale / e.cap;
    if (op->dst->op == TPORT_OP_FLASH_ATTN_EXT && op->src[4])
        e.sinks = (const float *)op->src[4]->data;
    return e;
}

#if VF_SIMD
/* One token, heads side by side in a cache row: each thread takes a range
 * of query heads and streams its part of the rows.  The ranges are whole
 * groups when there are kv heads for every thread (a group's heads then
 * share the K and V rows they read), else fours of a group (one kv head,
 * as in multi-query attention, split over the threads).  A node marked
 * whole (several sequences' nodes side by side) goes to one thread. */
static void heads_task(cpu_op *op, float *scores, int nth) {
    const tport_tensor_view *d = op->dst, *q = op->src[0], *k = op->src[1], *v = op->src[2], *m = op->src[3];
    int64_t hd = q->ne[0], n_head = q->ne[1], n_kv = k->ne[1], n_kvh = k->ne[2], group = n_head / n_kvh;
    fa_ext p = ext_of(op);
    const float *mask = m ? (const float *)(const void *)cpu_row(m, 0, 0, 0) : NULL;
    fa_decode a = {.q = q, .d = d, .k = k->data, .v = v->data, .k_nb1 = k->nb[1], .k_nb2 = k->nb[2],
                   .v_nb1 = v->nb[1], .v_nb2 = v->nb[2], .mask = p.cap > 0.0f ? NULL : mask, .s = scores,
                   .hd = hd, .group = group, .n_kv = n_kv, .kv_end = mask ? visible_end(mask, n_kv) : n_kv,
                   .scale = p.scale, .cap = p.cap, .cap_mask = mask, .sinks = p.sinks};
    int64_t unit = n_kvh >= nth ? group : group % 4 == 0 ? 4 : 1, per = (n_head + nth - 1) / nth;
    int64_t chunk = op->whole ? n_head : (per + unit - 1) / unit * unit, c0, c1;
    while (cpu_claim(op, n_head, chunk, &c0, &c1))
        for (int64_t h0 = c0; h0 < c1; h0 += FA_DECODE_HEADS) {
            /* FA_DECODE_HEADS is a multiple of 4: a four of a group stays
             * in one pass */
            int64_t h1 = h0 + FA_DECODE_HEADS < c1 ? h0 + FA_DECODE_HEADS : c1;
            if (a.kv_end == 0) {
                for (int64_t h = h0; h < h1; h++)
                    memset(cpu_row(d, h, 0, 0), 0, (size_t)hd * sizeof(float));
            } else if (k->type == TPORT_TYPE_F16) {
                decode_heads_f16(&a, h0, h1);
            } else {
                decode_heads_f32(&a, h0, h1);
            }
        }
}
#endif

static void fa_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *q = op->src[0], *k = op->src[1], *v = op->src[2], *m = op->src[3];
    int64_t hd = q->ne[0], n = q->ne[2], n_kv = k->ne[1], n_kvh = k->ne[2];
    int64_t group = q->ne[1] / n_kvh, per_group = group * n;
    fa_path path = path_of(op);
    float *scratch = align64(cpu_thread_scratch(op, ith));
#if VF_SIMD
    if (path == FA_HEADS) {
        heads_task(op, scratch, nth);
        return;
    }
#endif
    int tile_q = tile_queries(path);
    int64_t tiles_per_group = (per_group + tile_q - 1) / tile_q, n_tiles = n_kvh * tiles_per_group;
    fa_ext p = ext_of(op);

    /* the layout of cpu_flash_attn_thread_scratch */
    fa_tile t = {.k_nb1 = k->nb[1], .v_nb1 = v->nb[1], .hd = hd, .scale = p.scale, .cap = p.cap,
                 .has_sink = p.sinks != NULL};
    for (int i = 0; i < tile_q; i++)
        t.s[i] = scratch + (size_t)i * (size_t)n_kv;
    /* each token's visible_end, found once per thread rather than once per
     * head: scanning the mask for every tile took 4.6 % of a stories110M
     * pp512 */
    int64_t *ends = align64(scratch + (size_t)tile_q * (size_t)n_kv);
    for (int64_t i = 0; i < n; i++)
        ends[i] = -1;
    float *rowbuf = align64(ends + n), *acc = rowbuf + 2 * hd; /* FA_PORTABLE */
#if VF_SIMD
    fa_keys keys = {.kt = rowbuf, .stride = keys_stride(n_kv), .n_kv = n_kv}; /* FA_TRANSPOSED */
#endif
    int64_t qend[FA_TRANSPOSED_TILE]; /* one past the last key query i of a tile sees */

    /* One token from a head-major cache: a kv head's tiles go to one
     * thread, so its second tile reads K and V from that core's L2 rather
     * than from memory again */
    int64_t chunk = n == 1 && n_kvh >= nth ? tiles_per_group : 1;
    int64_t t0, t1;
    while (cpu_claim(op, n_tiles, chunk, &t0, &t1))
    for (int64_t tile = t0; tile < t1; tile++) {
        int64_t g = tile / tiles_per_group, first = (tile % tiles_per_group) * tile_q;
        t.cnt = (int)(per_group - first < tile_q ? per_group - first : tile_q);
        t.kv_end = 0; /* one past the last key some query of the tile sees */
        for (int i = 0; i < t.cnt; i++) {
            int64_t qi = first + i, h = g * group + qi % group, tok = qi / group;
            t.q[i] = (const float *)(const void *)cpu_row(q, h, tok, 0);
            t.out[i] = (float *)(void *)cpu_row(d, h, tok, 0);
            const float *mrow = m ? (const float *)(const void *)cpu_row(m, tok, 0, 0) : NULL;
            t.mask[i] = p.cap > 0.0f ? NULL : mrow;
            t.cap_mask[i] = mrow;
            if (p.sinks)
                t.sink[i] = p.sinks[h];
            if (m && ends[tok] < 0)
                ends[tok] = visible_end(mrow, n_kv);
            qend[i] = m ? ends[tok] : n_kv;
            t.kv_end = qend[i] > t.kv_end ? qend[i] : t.kv_end;
        }
        t.k = (const uint8_t *)k->data + (size_t)g * k->nb[2];
        for (int i = 0; i < FA_TILE; i++)
            t.v[i] = (const uint8_t *)v->data + (size_t)g * v->nb[2];
        if (t.kv_end == 0) {
            for (int i = 0; i < t.cnt; i++)
                memset(t.out[i], 0, (size_t)hd * sizeof(float));
            continue;
        }
        switch (path) {
#if VF_SIMD
        case FA_TRANSPOSED:
            if (k->type == TPORT_TYPE_F16)
                transposed_tile_f16(&t, &keys, qend);
            else
                transposed_tile_f32(&t, &keys, qend);
            break;
        case FA_ONE:
            if (k->type == TPORT_TYPE_F16)
                one_query_f16(&t);
            else
                one_query_f32(&t);
            break;
#endif
        default: tile_portable(&t, k, v, rowbuf, acc); break;
        }
    }
}

void cpu_run_flash_attn(cpu_ctx *ctx, cpu_op *op) {
    cpu_parallel(ctx, fa_task, op, op->nth);
}
