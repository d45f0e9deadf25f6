/* Freezes the layout of backend ABI 1.0 and 1.1 on x86-64 System V: sizeof and
 * offsetof of every struct and the value of every published id.  These
 * numbers are the ABI itself (plug-ins built against them exist), so they
 * are written out by hand here and never regenerated from the header: a
 * layout change without a major bump, or a renumbered id, fails this test.
 * Appending at the end of a struct in a new minor keeps every number below
 * (only sizeof grows: that check is `>=` for the structs and exact for the
 * *_SIZE_1_0 macros). */
#include <stddef.h>

#include "../test_util.h"
#include "tport/backend.h"

#define FROZEN(expr, value) \
    CHECK((long long)(expr) == (long long)(value), "%s is %lld, frozen at %lld", #expr, (long long)(expr), \
          (long long)(value))
#define AT_LEAST(expr, value) \
    CHECK((long long)(expr) >= (long long)(value), "%s is %lld, was %lld in 1.0", #expr, (long long)(expr), \
          (long long)(value))

static void layouts(void) {
    FROZEN(offsetof(tport_type_info, struct_size), 0);
    FROZEN(offsetof(tport_type_info, id), 4);
    FROZEN(offsetof(tport_type_info, name), 8);
    FROZEN(offsetof(tport_type_info, block_size), 16);
    FROZEN(offsetof(tport_type_info, block_bytes), 24);
    FROZEN(offsetof(tport_type_info, is_quantized), 32);
    FROZEN(offsetof(tport_type_info, vec_dot_type), 36);
    FROZEN(TPORT_TYPE_INFO_SIZE_1_0, 40);
    AT_LEAST(sizeof(tport_type_info), 40);

    FROZEN(offsetof(tport_host_api, struct_size), 0);
    FROZEN(offsetof(tport_host_api, abi_major), 4);
    FROZEN(offsetof(tport_host_api, abi_minor), 8);
    FROZEN(offsetof(tport_host_api, reserved), 12);
    FROZEN(offsetof(tport_host_api, log), 16);
    FROZEN(offsetof(tport_host_api, error), 24);
    FROZEN(offsetof(tport_host_api, type_info), 32);
    FROZEN(offsetof(tport_host_api, to_float), 40);
    FROZEN(offsetof(tport_host_api, from_float), 48);
    FROZEN(TPORT_HOST_API_SIZE_1_0, 56);
    AT_LEAST(sizeof(tport_host_api), 56);

    FROZEN(offsetof(tport_tensor_view, struct_size), 0);
    FROZEN(offsetof(tport_tensor_view, op), 4);
    FROZEN(offsetof(tport_tensor_view, type), 8);
    FROZEN(offsetof(tport_tensor_view, src), 12);
    FROZEN(sizeof(((tport_tensor_view *)0)->src), 16);
    FROZEN(offsetof(tport_tensor_view, ne), 32);
    FROZEN(offsetof(tport_tensor_view, nb), 64);
    FROZEN(offsetof(tport_tensor_view, data), 96);
    FROZEN(offsetof(tport_tensor_view, params), 104);
    FROZEN(offsetof(tport_tensor_view, params_size), 112);
    FROZEN(offsetof(tport_tensor_view, flags), 116);
    FROZEN(offsetof(tport_tensor_view, name), 120);
    FROZEN(TPORT_TENSOR_VIEW_SIZE_1_0, 128);
    AT_LEAST(sizeof(tport_tensor_view), 128);

    FROZEN(offsetof(tport_graph_view, struct_size), 0);
    FROZEN(offsetof(tport_graph_view, n_tensors), 4);
    FROZEN(offsetof(tport_graph_view, tensors), 8);
    FROZEN(offsetof(tport_graph_view, n_nodes), 16);
    FROZEN(offsetof(tport_graph_view, nodes), 24);
    FROZEN(offsetof(tport_graph_view, n_threads), 32);
    FROZEN(TPORT_GRAPH_VIEW_SIZE_1_0, 36);
    AT_LEAST(sizeof(tport_graph_view), 40);

    FROZEN(offsetof(tport_device_info, struct_size), 0);
    FROZEN(offsetof(tport_device_info, kind), 4);
    FROZEN(offsetof(tport_device_info, name), 8);
    FROZEN(sizeof(((tport_device_info *)0)->name), 64);
    FROZEN(offsetof(tport_device_info, description), 72);
    FROZEN(sizeof(((tport_device_info *)0)->description), 128);
    FROZEN(offsetof(tport_device_info, memory_total), 200);
    FROZEN(offsetof(tport_device_info, memory_free), 208);
    FROZEN(TPORT_DEVICE_INFO_SIZE_1_0, 216);
    AT_LEAST(sizeof(tport_device_info), 216);

    FROZEN(offsetof(tport_backend_api, struct_size), 0);
    FROZEN(offsetof(tport_backend_api, abi_major), 4);
    FROZEN(offsetof(tport_backend_api, abi_minor), 8);
    FROZEN(offsetof(tport_backend_api, reserved), 12);
    FROZEN(offsetof(tport_backend_api, name), 16);
    FROZEN(offsetof(tport_backend_api, version), 24);
    FROZEN(offsetof(tport_backend_api, required_isa), 32);
    FROZEN(offsetof(tport_backend_api, score), 40);
    FROZEN(offsetof(tport_backend_api, init), 48);
    FROZEN(offsetof(tport_backend_api, shutdown), 56);
    FROZEN(offsetof(tport_backend_api, device_count), 64);
    FROZEN(offsetof(tport_backend_api, device_info), 72);
    FROZEN(offsetof(tport_backend_api, supports_op), 80);
    FROZEN(offsetof(tport_backend_api, compute), 88);
    FROZEN(TPORT_BACKEND_API_SIZE_1_0, 96);
    AT_LEAST(sizeof(tport_backend_api), 96);

    FROZEN(sizeof(tport_params_scale), 4);
    FROZEN(sizeof(tport_params_norm), 4);
    FROZEN(sizeof(tport_params_soft_max), 4);
    FROZEN(sizeof(tport_params_concat), 4);
    FROZEN(sizeof(tport_params_flash_attn), 4); /* 1.1 */
    FROZEN(sizeof(tport_params_rope), 16);
    FROZEN(offsetof(tport_params_rope, mode), 4);
    FROZEN(offsetof(tport_params_rope, freq_base), 8);
    FROZEN(offsetof(tport_params_rope, freq_scale), 12);
    /* 1.1: the ops of the architectures beyond llama */
    FROZEN(sizeof(tport_params_clamp), 8);
    FROZEN(offsetof(tport_params_clamp, max), 4);
    FROZEN(sizeof(tport_params_soft_max_ext), 8);
    FROZEN(offsetof(tport_params_soft_max_ext, max_bias), 4);
    FROZEN(TPORT_MAX_SRC, 4);
    FROZEN(TPORT_MAX_DIMS, 4);
}

/* What 1.1 appended; frozen the same way from now on. */
static void layouts_1_1(void) {
    FROZEN(offsetof(tport_tensor_view, buffer), 128);
    FROZEN(offsetof(tport_tensor_view, offset), 136);
    FROZEN(TPORT_TENSOR_VIEW_SIZE_1_1, 144);
    AT_LEAST(sizeof(tport_tensor_view), 144);

    FROZEN(offsetof(tport_graph_view, graph_key), 40);
    FROZEN(offsetof(tport_graph_view, bind_key), 48);
    FROZEN(TPORT_GRAPH_VIEW_SIZE_1_1, 56);

    FROZEN(offsetof(tport_device_info, caps), 216);
    FROZEN(offsetof(tport_device_info, mem_alignment), 224);
    FROZEN(offsetof(tport_device_info, max_buffer_size), 232);
    FROZEN(TPORT_DEVICE_INFO_SIZE_1_1, 240);

    FROZEN(offsetof(tport_backend_api, buffer_alloc), 96);
    FROZEN(offsetof(tport_backend_api, buffer_free), 104);
    FROZEN(offsetof(tport_backend_api, tensor_alloc_size), 112);
    FROZEN(offsetof(tport_backend_api, tensor_write), 120);
    FROZEN(offsetof(tport_backend_api, tensor_read), 128);
    FROZEN(offsetof(tport_backend_api, buffer_fill), 136);
    FROZEN(offsetof(tport_backend_api, buffer_copy), 144);
    FROZEN(offsetof(tport_backend_api, import_host), 152);
    FROZEN(offsetof(tport_backend_api, compute_async), 160);
    FROZEN(offsetof(tport_backend_api, wait), 168);
    FROZEN(offsetof(tport_backend_api, forget_graph), 176);
    FROZEN(TPORT_BACKEND_API_SIZE_1_1, 184);

    FROZEN(sizeof(tport_buffer), 8);
    FROZEN(sizeof(tport_ticket), 8);
}

/* 1.3, the mixture-of-experts ops (ids 22..27) and their parameters. */
static void ids_1_3_moe(void) {
    FROZEN(TPORT_ABI_MINOR >= 3, 1);
    FROZEN(TPORT_OP_MUL_MAT_ID, 22);
    FROZEN(TPORT_OP_ARGSORT_TOP_K, 23);
    FROZEN(TPORT_OP_SIGMOID, 24);
    FROZEN(TPORT_OP_SUM_ROWS, 25);
    FROZEN(TPORT_OP_DIV, 26);
    FROZEN(TPORT_OP_ADD_ID, 27);
    FROZEN(TPORT_OP_SWIGLU_OAI, 28);
    FROZEN(sizeof(tport_params_swiglu_oai), 8);
    FROZEN(offsetof(tport_params_swiglu_oai, limit), 4);
    FROZEN(sizeof(tport_params_top_k), 4);
    FROZEN(offsetof(tport_params_top_k, k), 0);
}

/* 1.4, grouped expert routing. */
static void ids_1_4(void) {
    FROZEN(TPORT_ABI_MINOR >= 4, 1);
    FROZEN(TPORT_OP_EXPERT_GROUPS, 32);
    FROZEN(sizeof(tport_params_expert_groups), 8);
    FROZEN(offsetof(tport_params_expert_groups, n_group_used), 4);
}

/* 1.5, a device's f16 operands in f32 products. */
static void ids_1_5(void) {
    FROZEN(TPORT_ABI_MINOR >= 5, 1);
    FROZEN(TPORT_DEVICE_CAP_F16_PRODUCTS, 1u << 4);
}

static void ids_1_1(void) {
    FROZEN(TPORT_STATUS_TIMEOUT, 9);
    FROZEN(TPORT_STATUS_NOT_ADDRESSABLE, 10);
    FROZEN(TPORT_DEVICE_CAP_DEVICE_MEMORY, 1u << 0);
    FROZEN(TPORT_DEVICE_CAP_HOST_READABLE, 1u << 1);
    FROZEN(TPORT_DEVICE_CAP_ASYNC, 1u << 2);
    FROZEN(TPORT_DEVICE_CAP_IMPORT_HOST, 1u << 3);
    FROZEN(TPORT_MEM_DEVICE, 1);
    FROZEN(TPORT_MEM_HOST_STAGING, 2);
    FROZEN(TPORT_USAGE_WEIGHTS, 1);
    FROZEN(TPORT_USAGE_COMPUTE, 2);
}

/* What 1.3 appended (dense families; the MoE ids freeze beside these). */
static void layouts_1_3(void) {
    FROZEN(offsetof(tport_tensor_view, src_more), 144);
    FROZEN(TPORT_TENSOR_VIEW_SIZE_1_3, 152);
    AT_LEAST(sizeof(tport_tensor_view), 152);
    FROZEN(sizeof(tport_params_rope_ext), 36);
    FROZEN(offsetof(tport_params_rope_ext, mode), 4);
    FROZEN(offsetof(tport_params_rope_ext, freq_base), 8);
    FROZEN(offsetof(tport_params_rope_ext, freq_scale), 12);
    FROZEN(offsetof(tport_params_rope_ext, ext_factor), 16);
    FROZEN(offsetof(tport_params_rope_ext, attn_factor), 20);
    FROZEN(offsetof(tport_params_rope_ext, beta_fast), 24);
    FROZEN(offsetof(tport_params_rope_ext, beta_slow), 28);
    FROZEN(offsetof(tport_params_rope_ext, n_ctx_orig), 32);
    FROZEN(sizeof(tport_params_flash_attn_ext), 8);
    FROZEN(offsetof(tport_params_flash_attn_ext, softcap), 4);
    FROZEN(TPORT_OP_ROPE_EXT, 21);
    FROZEN(TPORT_OP_FLASH_ATTN_EXT, 49);
}

static void ids(void) {
    FROZEN(TPORT_ABI_MAJOR, 1);
    FROZEN(TPORT_STATUS_OK, 0);
    FROZEN(TPORT_STATUS_ERROR, 1);
    FROZEN(TPORT_STATUS_UNSUPPORTED, 2);
    FROZEN(TPORT_STATUS_INVALID_ARGUMENT, 3);
    FROZEN(TPORT_STATUS_OUT_OF_MEMORY, 4);
    FROZEN(TPORT_STATUS_VERSION_MISMATCH, 5);
    FROZEN(TPORT_STATUS_DEVICE_LOST, 6);
    FROZEN(TPORT_STATUS_IO, 7);
    FROZEN(TPORT_STATUS_BAD_FORMAT, 8);
    FROZEN(TPORT_LOG_ERROR, 0);
    FROZEN(TPORT_LOG_DEBUG, 3);

    FROZEN(TPORT_TYPE_F32, 0);
    FROZEN(TPORT_TYPE_F16, 1);
    FROZEN(TPORT_TYPE_Q4_0, 2);
    FROZEN(TPORT_TYPE_Q4_1, 3);
    FROZEN(TPORT_TYPE_Q5_0, 6);
    FROZEN(TPORT_TYPE_Q5_1, 7);
    FROZEN(TPORT_TYPE_Q8_0, 8);
    FROZEN(TPORT_TYPE_Q8_1, 9);
    FROZEN(TPORT_TYPE_Q2_K, 10);
    FROZEN(TPORT_TYPE_Q3_K, 11);
    FROZEN(TPORT_TYPE_Q4_K, 12);
    FROZEN(TPORT_TYPE_Q5_K, 13);
    FROZEN(TPORT_TYPE_Q6_K, 14);
    FROZEN(TPORT_TYPE_Q8_K, 15);
    FROZEN(TPORT_TYPE_IQ2_XXS, 16); /* 1.3 */
    FROZEN(TPORT_TYPE_IQ2_XS, 17);  /* 1.3 */
    FROZEN(TPORT_TYPE_IQ3_XXS, 18); /* 1.3 */
    FROZEN(TPORT_TYPE_IQ1_S, 19);   /* 1.3 */
    FROZEN(TPORT_TYPE_IQ4_NL, 20);
    FROZEN(TPORT_TYPE_IQ3_S, 21); /* 1.3 */
    FROZEN(TPORT_TYPE_IQ2_S, 22); /* 1.3 */
    FROZEN(TPORT_TYPE_IQ4_XS, 23);
    FROZEN(TPORT_TYPE_I8, 24);
    FROZEN(TPORT_TYPE_I16, 25);
    FROZEN(TPORT_TYPE_I32, 26);
    FROZEN(TPORT_TYPE_I64, 27);   /* 1.3 */
    FROZEN(TPORT_TYPE_F64, 28);   /* 1.3 */
    FROZEN(TPORT_TYPE_IQ1_M, 29); /* 1.3 */
    FROZEN(TPORT_TYPE_BF16, 30);
    FROZEN(TPORT_TYPE_Q4_0_4_4, 31);
    FROZEN(TPORT_TYPE_Q4_0_4_8, 32);
    FROZEN(TPORT_TYPE_Q4_0_8_8, 33);
    FROZEN(TPORT_TYPE_IQ4_NL_4_4, 36);
    FROZEN(TPORT_TYPE_TQ1_0, 34); /* 1.3 */
    FROZEN(TPORT_TYPE_TQ2_0, 35); /* 1.3 */
    FROZEN(TPORT_TYPE_MXFP4, 39); /* 1.2 */
    FROZEN(TPORT_TYPE_NVFP4, 40); /* 1.3 */
    FROZEN(TPORT_TYPE_Q1_0, 41);  /* 1.3 */
    FROZEN(TPORT_TYPE_Q2_0, 42);  /* 1.3 */
    FROZEN(TPORT_TYPE_Q4_0_QNT0, 200);
    FROZEN(TPORT_TYPE_Q4_1_QNT0, 201);
    FROZEN(TPORT_TYPE_Q4_2_QNT0, 202);
    FROZEN(TPORT_TYPE_Q4_3_QNT0, 203);
    FROZEN(TPORT_TYPE_Q5_0_QNT0, 204);
    FROZEN(TPORT_TYPE_Q5_1_QNT0, 205);
    FROZEN(TPORT_TYPE_Q8_0_QNT1, 206);
    FROZEN(TPORT_TYPE_Q4_0_QNT1, 207);
    FROZEN(TPORT_TYPE_Q4_1_QNT1, 208);
    FROZEN(TPORT_TYPE_Q2_K_QK64, 209);
    FROZEN(TPORT_TYPE_Q3_K_QK64, 210);
    FROZEN(TPORT_TYPE_Q4_K_QK64, 211);
    FROZEN(TPORT_TYPE_Q5_K_QK64, 212);
    FROZEN(TPORT_TYPE_Q6_K_QK64, 213);

    FROZEN(TPORT_OP_NONE, 0);
    FROZEN(TPORT_OP_GET_ROWS, 1);
    FROZEN(TPORT_OP_ADD, 2);
    FROZEN(TPORT_OP_MUL, 3);
    FROZEN(TPORT_OP_SCALE, 4);
    FROZEN(TPORT_OP_MUL_MAT, 5);
    FROZEN(TPORT_OP_RMS_NORM, 6);
    FROZEN(TPORT_OP_NORM, 7);
    FROZEN(TPORT_OP_ROPE, 8);
    FROZEN(TPORT_OP_SOFT_MAX, 9);
    FROZEN(TPORT_OP_SILU, 10);
    FROZEN(TPORT_OP_GELU, 11);
    FROZEN(TPORT_OP_SWIGLU, 12);
    FROZEN(TPORT_OP_CPY, 13);
    FROZEN(TPORT_OP_CONT, 14);
    FROZEN(TPORT_OP_CONCAT, 15);
    FROZEN(TPORT_OP_GELU_F16, 16);
    FROZEN(TPORT_OP_GELU_ERF, 17);
    FROZEN(TPORT_OP_TANH, 18);
    FROZEN(TPORT_OP_CLAMP, 19);
    FROZEN(TPORT_OP_SOFT_MAX_EXT, 20);
    FROZEN(TPORT_OP_FLASH_ATTN, 48);
    FROZEN(TPORT_ROPE_NORMAL, 0);
    FROZEN(TPORT_ROPE_NEOX, 2);

    FROZEN(TPORT_ISA_SSE42, 1u << 0);
    FROZEN(TPORT_ISA_AVX, 1u << 1);
    FROZEN(TPORT_ISA_AVX2, 1u << 2);
    FROZEN(TPORT_ISA_FMA, 1u << 3);
    FROZEN(TPORT_ISA_F16C, 1u << 4);
    FROZEN(TPORT_ISA_AVX512F, 1u << 5);
    FROZEN(TPORT_ISA_AVX512BW, 1u << 6);
    FROZEN(TPORT_ISA_AVX512VL, 1u << 7);
    FROZEN(TPORT_ISA_AVX512DQ, 1u << 8);
    FROZEN(TPORT_ISA_AVX512VNNI, 1u << 9);
    FROZEN(TPORT_ISA_AVX512BF16, 1u << 10);
    FROZEN(TPORT_ISA_NEON, 1u << 16);

    FROZEN(TPORT_DEVICE_CPU, 1);
    FROZEN(TPORT_DEVICE_GPU, 2);
    FROZEN(TPORT_DEVICE_ACCEL, 3);
    FROZEN(TPORT_DEVICE_REMOTE, 4);
    FROZEN(TPORT_TENSOR_INPUT, 1);
    FROZEN(TPORT_TENSOR_WEIGHT, 2);
    FROZEN(TPORT_TENSOR_OUTPUT, 4);
}

int main(void) {
#if !defined(__x86_64__) || !defined(__linux__) || defined(__ILP32__)
    test_skip("test_abi_layout", "the frozen numbers are for x86-64 System V");
#endif
    layouts();
    ids();
    layouts_1_1();
    ids_1_1();
    ids_1_3_moe();
    ids_1_4();
    ids_1_5();
    layouts_1_3();
    return test_finish("test_abi_layout");
}
