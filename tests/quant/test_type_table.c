/* The type table is the only place a type's facts live (issue 38): this
 * test walks its rows and checks that every consumer agrees with them.
 *   - the public type info and the model-file readers' sizes come from it;
 *   - each row's successor is a current row of a weight type, of the same
 *     family unless the family has no current layout;
 *   - file types (llama_ftype) are unique and only on current rows;
 *   - a row-grouped row (Q4_0_4_4 ..) is row_groups.c's, re-encodes
 *     losslessly to its successor, and is converted at load (below);
 *   - the QK64 revision of a K-quant is found through the table;
 *   - conformance tries mul_mat and get_rows for every weight type, and
 *     load-time conversion never targets an activation or integer type;
 *   - the CPU backend's compile-time block sizes (it is a plug-in and sees
 *     only backend.h; its kernels need the sizes as constants) agree. */
#include <string.h>

#include "../test_util.h"
#include "formats/mf_internal.h"
#include "model/placement.h"
#include "quant/convert.h"
#include "quant/row_groups.h"
#include "quant/type_table.h"
#include "registry/conformance_internal.h"
#include "tport/tport.h"

/* The CPU plug-in's block-size constants (a header of static inlines). */
#include "../../backends/cpu/quant/quant_kernels.h"

static void check_cpu_block_sizes(void) {
    static const struct {
        tport_type_id id;
        unsigned bytes;
    } cpu[] = {
        {TPORT_TYPE_Q4_0, BQ4_0},   {TPORT_TYPE_Q4_1, BQ4_1},           {TPORT_TYPE_Q5_0, BQ5_0},
        {TPORT_TYPE_Q5_1, BQ5_1},   {TPORT_TYPE_Q8_0, BQ8_0},           {TPORT_TYPE_Q8_1, BQ8_1},
        {TPORT_TYPE_Q2_K, BQ2_K},   {TPORT_TYPE_Q3_K, BQ3_K},           {TPORT_TYPE_Q4_K, BQ4_K},
        {TPORT_TYPE_Q5_K, BQ5_K},   {TPORT_TYPE_Q6_K, BQ6_K},           {TPORT_TYPE_Q8_K, BQ8_K},
        {TPORT_TYPE_IQ4_NL, BIQ4_NL}, {TPORT_TYPE_IQ4_XS, BIQ4_XS},     {TPORT_TYPE_MXFP4, BMXFP4},
        {TPORT_TYPE_Q4_0_QNT1, BQ4_0_F32}, {TPORT_TYPE_Q4_1_QNT1, BQ4_1_F32}, {TPORT_TYPE_Q4_2_QNT0, BQ4_2},
        {TPORT_TYPE_Q4_3_QNT0, BQ4_3}, {TPORT_TYPE_Q8_0_QNT1, BQ8_0_F32},
    };
    for (size_t i = 0; i < sizeof cpu / sizeof cpu[0]; i++) {
        const tport_type_traits *t = tport_traits(cpu[i].id);
        CHECK(t && t->info.block_bytes == cpu[i].bytes, "type %u: the CPU backend's block size %u disagrees",
              cpu[i].id, cpu[i].bytes);
    }
}

int main(void) {
    int n = tport_traits_count();
    CHECK(n > 20, "%d rows", n);
    int n_cases = check_cases(NULL, 0);
    check_case *cases = calloc((size_t)n_cases, sizeof *cases);
    CHECK(cases != NULL, "out of memory");
    if (cases)
        check_cases(cases, n_cases);
    for (int i = 0; i < n; i++) {
        const tport_type_traits *t = tport_traits_at(i);
        const tport_type_info *pub = tport_type_get(t->info.id);
        CHECK(pub && pub->block_size == t->info.block_size && pub->block_bytes == t->info.block_bytes,
              "%s: tport_type_get disagrees", t->info.name);
        int64_t block = 0;
        uint64_t bytes = 0;
        CHECK(mf_type_size(t->info.id, &block, &bytes) && block == t->info.block_size &&
                  bytes == t->info.block_bytes, "%s: the readers' size disagrees", t->info.name);
        CHECK(i == 0 || tport_traits_at(i - 1)->info.id < t->info.id, "%s: rows not sorted by id", t->info.name);
        /* the successor */
        const tport_type_traits *s = tport_traits(t->successor);
        bool current = !strcmp(t->revision, "current");
        CHECK(s && !strcmp(s->revision, "current"), "%s: successor is not a current row", t->info.name);
        CHECK(!current || t->successor == t->info.id, "%s: a current row is not its own successor", t->info.name);
        if (s && !current && tport_type_revision(t, "current"))
            CHECK(!strcmp(s->family, t->family), "%s: successor of another family though %s has a current row",
                  t->info.name, t->family);
        /* a row-grouped type is a weight only in files: its successor is
         * what backends compute with */
        const bool grouped = (t->flags & TPORT_TYPEF_ROW_GROUPS) != 0;
        CHECK(tport_type_is_weight(t) == tport_type_is_weight(s) || (grouped && tport_type_is_weight(s)),
              "%s: weight and successor disagree", t->info.name);
        const tport_row_group *g = tport_row_group_of(t->info.id);
        CHECK(grouped == (g != NULL) && (!g || (g->base == t->successor && !t->to_float && !t->from_float &&
                                                !strcmp(s->family, t->family))),
              "%s: row groups disagree with the row", t->info.name);
        CHECK(!grouped || tport_conversion_kind(t->info.id, t->successor) == TPORT_CONV_LOSSLESS,
              "%s: re-encoding to the successor is not lossless", t->info.name);
        /* file types */
        CHECK(t->file_type < 0 || current, "%s: a historical row has a file type", t->info.name);
        for (int k = 0; k < i; k++)
            CHECK(t->file_type < 0 || tport_traits_at(k)->file_type != t->file_type, "%s and %s: file type %d twice",
                  tport_traits_at(k)->info.name, t->info.name, t->file_type);
        CHECK(!(t->flags & TPORT_TYPEF_ACTIVATION) || t->file_type < 0, "%s: activation type with a file type",
              t->info.name);
        /* QK64: exactly the K-quant families with such a row */
        tport_type_id qk64 = 0;
        const tport_type_traits *rev = tport_type_revision(t, "qk64");
        bool has = mf_qk64_type(t->info.id, &qk64);
        CHECK(has == (current && rev != NULL), "%s: QK64 revision lookup", t->info.name);
        CHECK(!has || qk64 == rev->info.id, "%s: QK64 revision id", t->info.name);
        /* conformance and conversion */
        int mul_mat = 0, get_rows = 0;
        for (int c = 0; cases && c < n_cases; c++) {
            mul_mat += cases[c].op == TPORT_OP_MUL_MAT && cases[c].src[0].type == t->info.id;
            get_rows += cases[c].op == TPORT_OP_GET_ROWS && cases[c].src[0].type == t->info.id;
        }
        if (tport_type_is_weight(t))
            CHECK(mul_mat > 0 && get_rows > 0, "%s: conformance has %d mul_mat, %d get_rows cases", t->info.name,
                  mul_mat, get_rows);
    }
    tport_type_id targets[64];
    int nt = tport_weight_conversion_targets(TPORT_TYPE_F32, 256, targets, 64);
    CHECK(nt > 5, "%d conversion targets of f32", nt);
    for (int k = 0; k < nt && k < 64; k++)
        CHECK(tport_type_is_weight(tport_traits(targets[k])), "conversion target %s", tport_traits(targets[k])->info.name);
    /* a row-grouped weight's first load-time target is its base type */
    CHECK(tport_weight_conversion_targets(TPORT_TYPE_Q4_0_8_8, 256, targets, 64) > 0 &&
              targets[0] == TPORT_TYPE_Q4_0, "q4_0_8x8 is converted to q4_0 first");
    CHECK(tport_weight_conversion_targets(TPORT_TYPE_IQ4_NL_4_4, 256, targets, 64) > 0 &&
              targets[0] == TPORT_TYPE_IQ4_NL, "iq4_nl_4x4 is converted to iq4_nl first");
    free(cases);
    check_cpu_block_sizes();
    return test_finish("test_type_table");
}
