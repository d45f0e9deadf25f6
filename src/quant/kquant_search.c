/* Scale searches of the k-quant reference quantizers; see the header.
 * Every expression keeps ggml's association order: e.g. w*x[i]*l is
 * (w*x[i])*l, with l converted to float. */
#include "kquant_search.h"

#include "quant_impl.h"

#define GROUP_MAX_EPS 1e-15f

static float rmse_weight(int rmse_type, const float *qw, const float *x, int i) {
    if (qw)
        return qw[i];
    switch (rmse_type) {
    case 1: return x[i] * x[i];
    case 2: return 1;
    case 3: return fabsf(x[i]);
    default: return sqrtf(fabsf(x[i]));
    }
}

float tport_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type, const float *qw) {
    float amax;
    const float max = q_max_by_abs(x, n, &amax);
    if (amax < GROUP_MAX_EPS) { /* all zero (or NaN) */
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    float iscale = (float)-nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; ++i) {
            const int l = q_nearest_int(iscale * x[i]);
            L[i] = (int8_t)(nmax + q_max_i(-nmax, q_min_i(nmax - 1, l)));
        }
        return 1 / iscale;
    }
    bool return_early = false;
    if (rmse_type < 0) {
        rmse_type = -rmse_type;
        return_early = true;
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = q_nearest_int(iscale * x[i]);
        l = q_max_i(-nmax, q_min_i(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        const float w = rmse_weight(rmse_type, qw, x, i);
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    if (return_early)
        return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0)
            continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = q_nearest_int(iscale * x[i]);
            l = q_max_i(-nmax, q_min_i(nmax - 1, l));
            const float w = rmse_weight(rmse_type, qw, x, i);
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = q_nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + q_max_i(-nmax, q_min_i(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float tport_make_q3_quants(int n, int nmax, const float *x, int8_t *L, bool do_rmse) {
    float amax;
    const float max = q_max_by_abs(x, n, &amax);
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    const float iscale = (float)-nmax / max;
    if (do_rmse) {
        float sumlx = 0, suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = q_nearest_int(iscale * x[i]);
            l = q_max_i(-nmax, q_min_i(nmax - 1, l));
            L[i] = (int8_t)l;
            const float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        for (int itry = 0; itry < 5; ++itry) {
            int n_changed = 0;
            for (int i = 0; i < n; ++i) {
                const float w = x[i] * x[i];
                float slx = sumlx - w * x[i] * (float)L[i];
                if (slx > 0) {
                    float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                    int new_l = q_nearest_int(x[i] * sl2 / slx);
                    new_l = q_max_i(-nmax, q_min_i(nmax - 1, new_l));
                    if (new_l != L[i]) {
                        slx += w * x[i] * (float)new_l;
                        sl2 += w * (float)new_l * (float)new_l;
                        if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                            L[i] = (int8_t)new_l;
                            sumlx = slx;
                            suml2 = sl2;
                            ++n_changed;
                        }
                    }
                }
            }
            if (!n_changed)
                break;
        }
        for (int i = 0; i < n; ++i)
            L[i] = (int8_t)(L[i] + nmax);
        return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
    }
    for (int i = 0; i < n; ++i) {
        int l = q_nearest_int(iscale * x[i]);
        l = q_max_i(-nmax, q_min_i(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
    }
    return 1 / iscale;
}

float tport_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                             float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                             bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0)
        min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = q_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)q_max_i(0, q_min_i(nmax, l));
        float diff = scale * (float)L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = q_nearest_int(iscale * (x[i] - min));
            l = q_max_i(0, q_min_i(nmax, l));
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * (float)l;
            sum_l2 += w * (float)l * (float)l;
            sum_xl += w * (float)l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i)
                    L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}
