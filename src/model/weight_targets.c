/* Which types a weight can be converted to at load, in order of preference
 * (see placement.h).  The order is a documented rule, not a measurement:
 * a lossless target keeps every value, so the smallest one wins; among
 * lossy targets the same family keeps the block structure (typically a
 * scale rounded to f16), and otherwise more bits per weight means a
 * smaller requantization error. */
#include <stdbool.h>
#include <string.h>

#include "model/placement.h"
#include "quant/convert.h"
#include "quant/type_table.h"

typedef struct target {
    tport_type_id id;
    int tier;     /* 0 lossless, 1 lossy same family, 2 lossy other */
    double bpw;
} target;

/* true if a should come before b */
static bool better(const target *a, const target *b) {
    if (a->tier != b->tier)
        return a->tier < b->tier;
    if (a->bpw != b->bpw)
        return a->tier == 0 ? a->bpw < b->bpw : a->bpw > b->bpw;
    return a->id < b->id;
}

int tport_weight_conversion_targets(tport_type_id from, int64_t ne0, tport_type_id *out, int cap) {
    const tport_type_traits *f = tport_traits(from);
    if (!f || ne0 <= 0)
        return 0;
    target list[64];
    int n = 0;
    for (int i = 0; i < tport_traits_count() && n < (int)(sizeof list / sizeof list[0]); i++) {
        const tport_type_traits *t = tport_traits_at(i);
        if (!t || t->info.id == from || t->info.block_size <= 0 || ne0 % t->info.block_size)
            continue;
        tport_conv_kind kind = tport_conversion_kind(from, t->info.id);
        if (kind != TPORT_CONV_LOSSLESS && kind != TPORT_CONV_LOSSY)
            continue;
        /* activation types (Q8_1, Q8_K) and integers: never weights */
        if (!tport_type_is_weight(t))
            continue;
        target c = {t->info.id, 0, t->bits_per_weight};
        if (kind == TPORT_CONV_LOSSY)
            c.tier = f->family && t->family && !strcmp(f->family, t->family) ? 1 : 2;
        /* insertion sort: the table is a few dozen rows */
        int k = n++;
        while (k > 0 && better(&c, &list[k - 1])) {
            list[k] = list[k - 1];
            k--;
        }
        list[k] = c;
    }
    for (int i = 0; i < n && i < cap; i++)
        out[i] = list[i].id;
    return n;
}
