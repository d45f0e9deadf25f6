/* tport types [--json]: every tensor type and layout revision tensorport
 * knows (id, name, family, revision, block size, bytes per block, bits per
 * weight, where and when the layout was defined), and which active backends
 * support a MUL_MAT with that type as weights and F32 activations.  A
 * backend is asked with a tiny graph (weights [256 x 4], activations
 * [256 x 1]); one without supports_op, or that says no on every device,
 * does not support the type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tport/types.h"
#include "tport/registry.h"
#include "tport/tport.h"

#define PROBE_K 256 /* a multiple of every block size */
#define PROBE_M 4
#define MAX_BACKENDS 32

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport types [--json]\n\n"
            "Lists every tensor type and quantization layout revision: id, name,\n"
            "family, revision (current, qnt0, qnt1), block size, bytes per block,\n"
            "bits per weight, where and when the layout was defined, and which\n"
            "active backends support a MUL_MAT with it as src0 and F32 as src1.\n\n"
            "  --json   one JSON document on stdout\n"
            "  --help   this text\n");
}

/* Does backend b support dst = mul_mat(weights of `t`, f32 activations)? */
static int backend_supports(int b, const tport_type_traits *t, void *buf) {
    const int64_t bs = t->info.block_size;
    const uint64_t row = (uint64_t)(PROBE_K / bs) * t->info.block_bytes;
    tport_tensor_view w = {.struct_size = sizeof(tport_tensor_view), .op = TPORT_OP_NONE, .type = t->info.id,
                           .src = {-1, -1, -1, -1}, .src_more = {-1, -1}, .ne = {PROBE_K, PROBE_M, 1, 1},
                           .nb = {t->info.block_bytes, row, row * PROBE_M, row * PROBE_M},
                           .data = buf, .flags = TPORT_TENSOR_WEIGHT, .name = "weights"};
    tport_tensor_view a = {.struct_size = sizeof(tport_tensor_view), .op = TPORT_OP_NONE,
                           .type = TPORT_TYPE_F32, .src = {-1, -1, -1, -1}, .src_more = {-1, -1}, .ne = {PROBE_K, 1, 1, 1},
                           .nb = {4, 4 * PROBE_K, 4 * PROBE_K, 4 * PROBE_K},
                           .data = (char *)buf + 65536, .flags = TPORT_TENSOR_INPUT, .name = "activations"};
    tport_tensor_view d = {.struct_size = sizeof(tport_tensor_view), .op = TPORT_OP_MUL_MAT,
                           .type = TPORT_TYPE_F32, .src = {0, 1, -1, -1}, .ne = {PROBE_M, 1, 1, 1},
                           .nb = {4, 4 * PROBE_M, 4 * PROBE_M, 4 * PROBE_M},
                           .data = (char *)buf + 2 * 65536, .flags = TPORT_TENSOR_OUTPUT, .name = "out"};
    const tport_tensor_view *tensors[3] = {&w, &a, &d};
    const int32_t nodes[1] = {2};
    const tport_graph_view g = {.struct_size = sizeof(tport_graph_view), .n_tensors = 3, .tensors = tensors,
                                .n_nodes = 1, .nodes = nodes, .n_threads = 1};
    return tport_backend_supports(b, &g, 2);
}

int cmd_types(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return tool_fail(2, "types: unknown option '%s'", argv[i]);
        }
    }
    tport_registry_init();
    int nb = tport_backend_count();
    if (nb > MAX_BACKENDS)
        nb = MAX_BACKENDS;
    /* probe buffers: weights, activations, output (zeroed, never computed) */
    void *buf = calloc(3, 65536);
    if (!buf)
        return tool_fail(1, "types: out of memory");
    const int nt = tport_traits_count();
    unsigned char *sup = calloc((size_t)nt * MAX_BACKENDS, 1);
    if (!sup) {
        free(buf);
        return tool_fail(1, "types: out of memory");
    }
    for (int i = 0; i < nt; i++)
        for (int b = 0; b < nb; b++)
            sup[i * MAX_BACKENDS + b] = (unsigned char)backend_supports(b, tport_traits_at(i), buf);

    if (json) {
        printf("{\n  \"backends\": [");
        for (int b = 0; b < nb; b++) {
            printf("%s", b ? ", " : "");
            tool_json_string(stdout, tport_backend_name(b));
        }
        printf("],\n  \"types\": [\n");
        for (int i = 0; i < nt; i++) {
            const tport_type_traits *t = tport_traits_at(i);
            const tport_type_traits *vt = tport_traits(t->info.vec_dot_type);
            printf("    {\"id\": %u, \"name\": ", t->info.id);
            tool_json_string(stdout, t->info.name);
            printf(", \"family\": ");
            tool_json_string(stdout, t->family);
            printf(", \"revision\": ");
            tool_json_string(stdout, t->revision);
            printf(", \"block_size\": %lld, \"block_bytes\": %llu, \"bits_per_weight\": %.4g, \"quantized\": %s,",
                   (long long)t->info.block_size, (unsigned long long)t->info.block_bytes, t->bits_per_weight,
                   t->info.is_quantized ? "true" : "false");
            printf(" \"vec_dot_type\": ");
            tool_json_string(stdout, vt ? vt->info.name : "");
            printf(", \"dequantize\": %s, \"quantize\": %s, \"defined_in\": ", t->to_float ? "true" : "false",
                   t->from_float ? "true" : "false");
            tool_json_string(stdout, t->defined_in);
            printf(", \"supported_by\": [");
            int first = 1;
            for (int b = 0; b < nb; b++) {
                if (!sup[i * MAX_BACKENDS + b])
                    continue;
                printf("%s", first ? "" : ", ");
                tool_json_string(stdout, tport_backend_name(b));
                first = 0;
            }
            printf("]}%s\n", i + 1 < nt ? "," : "");
        }
        printf("  ]\n}\n");
    } else {
        printf("%-4s %-10s %-7s %-8s %5s %5s %6s  %-16s %s\n", "ID", "NAME", "FAMILY", "REVISION", "BLOCK", "BYTES",
               "BITS/W", "SUPPORTED BY", "DEFINED IN");
        for (int i = 0; i < nt; i++) {
            const tport_type_traits *t = tport_traits_at(i);
            char who[256] = "";
            size_t len = 0;
            for (int b = 0; b < nb && len < sizeof who; b++)
                if (sup[i * MAX_BACKENDS + b])
                    len += (size_t)snprintf(who + len, sizeof who - len, "%s%s", len ? "," : "",
                                            tport_backend_name(b));
            printf("%-4u %-10s %-7s %-8s %5lld %5llu %6.4g  %-16s %s\n", t->info.id, t->info.name, t->family,
                   t->revision, (long long)t->info.block_size, (unsigned long long)t->info.block_bytes,
                   t->bits_per_weight, len ? who : "-", t->defined_in);
        }
        printf("\n%d types; active backends:", nt);
        for (int b = 0; b < nb; b++)
            printf(" %s", tport_backend_name(b));
        printf("%s\n", nb ? "" : " none");
    }
    free(sup);
    free(buf);
    return 0;
}
