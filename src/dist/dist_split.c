/* Layers per rank in proportion to --split.  Boundaries are rounded
 * cumulative shares, so the result depends only on the weights and the
 * layer count and every rank computes the same split. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "tport/tport.h"
#include "dist/dist_internal.h"

static tport_status parse_weights(const char *split, int n_ranks, double *w) {
    const char *p = split;
    int n = 0;
    for (;;) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno || !(x > 0) || !isfinite(x) || (*end && *end != ','))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "--split '%s': give %d positive numbers "
                               "separated by commas, one per rank", split, n_ranks);
        if (n < n_ranks)
            w[n] = x;
        n++;
        if (!*end)
            break;
        p = end + 1;
    }
    if (n != n_ranks)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "--split '%s' has %d values for %d ranks", split, n,
                           n_ranks);
    return TPORT_STATUS_OK;
}

tport_status dist_split_layers(const char *split, int n_ranks, int32_t n_layer, int32_t *begin) {
    if (n_ranks < 1 || n_ranks > DIST_MAX_RANKS)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%d ranks: at most %d are supported", n_ranks,
                           DIST_MAX_RANKS);
    if (n_ranks > n_layer)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%d ranks but the model has %d layer%s: at most one "
                           "rank per layer", n_ranks, (int)n_layer, n_layer == 1 ? "" : "s");
    double w[DIST_MAX_RANKS], total = 0;
    for (int r = 0; r < n_ranks; r++)
        w[r] = 1;
    if (split) {
        tport_status st = parse_weights(split, n_ranks, w);
        if (st != TPORT_STATUS_OK)
            return st;
    }
    for (int r = 0; r < n_ranks; r++)
        total += w[r];
    double acc = 0;
    begin[0] = 0;
    for (int r = 0; r < n_ranks; r++) {
        acc += w[r];
        begin[r + 1] = r + 1 == n_ranks ? n_layer : (int32_t)lround((double)n_layer * acc / total);
        if (begin[r + 1] <= begin[r])
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "--split '%s' leaves rank %d without a layer "
                               "(the model has %d)", split ? split : "", r, (int)n_layer);
    }
    return TPORT_STATUS_OK;
}
