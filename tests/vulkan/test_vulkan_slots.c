/* The vulkan plug-in's ABI 1.1 slots driven directly (dlopen, the host's
 * services table, graph views built here), with the binding range forced
 * to 64 KiB so weights larger than it go through the chunked path while
 * they live in device buffers:
 *   - device_info: device memory and async caps, alignment, buffer limit;
 *   - tensor_write / tensor_read round trips larger than the staging
 *     buffer, buffer_fill at unaligned edges, buffer_copy with a ticket,
 *     a host-staging buffer's host pointer;
 *   - compute_async + wait on device-resident tensors; a graph key replayed
 *     with new input data, a new bind key, forget_graph;
 *   - one-line errors, no crash: a buffer over the limit, ranges past a
 *     buffer's end, unknown handles and tickets, a freed buffer in a graph. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <tport/tport.h>

#include "registry/registry.h"
#include "vulkan_test.h"

#define NAME "test_vulkan_slots"
#define RANGE 65536

#ifndef TPORT_VULKAN_PLUGIN
int main(void) {
    vulkan_test_unavailable(NAME, "the vulkan plug-in was not built (Vulkan loader or glslc not found)");
}
#else

static const tport_backend_api *api;
static void *be;
static unsigned long long rng = 0x853c49e6748fea9bULL;

static tport_buffer alloc(uint32_t kind, uint64_t size, void **host) {
    tport_buffer b = 0;
    void *hp = NULL;
    tport_status st = api->buffer_alloc(be, 0, kind, TPORT_USAGE_COMPUTE, size, &b, host ? host : &hp);
    CHECK(st == TPORT_STATUS_OK && b != 0, "buffer_alloc(%llu): %s", (unsigned long long)size, tport_last_error());
    return b;
}

static tport_tensor_view view(tport_type_id type, int64_t n0, int64_t n1, tport_buffer buf, uint64_t off) {
    tport_tensor_view t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.type = type;
    for (int i = 0; i < 4; i++)
        t.src[i] = -1;
    t.ne[0] = n0, t.ne[1] = n1, t.ne[2] = t.ne[3] = 1;
    t.nb[0] = 4, t.nb[1] = 4 * (uint64_t)n0, t.nb[2] = t.nb[3] = t.nb[1] * (uint64_t)n1;
    t.buffer = buf;
    t.offset = off;
    t.name = "";
    return t;
}

static void round_trips(void) {
    const uint64_t n = 9u << 20; /* more than the 4 MiB staging buffer */
    tport_buffer b = alloc(TPORT_MEM_DEVICE, n + 4096, NULL);
    uint8_t *src = malloc(n), *back = malloc(n);
    for (uint64_t i = 0; i < n; i++)
        src[i] = (uint8_t)(test_rng_next(&rng) >> 56);
    tport_tensor_view t = view(TPORT_TYPE_F32, (int64_t)(n / 4), 1, b, 64);
    CHECK(api->tensor_write(be, b, 64, &t, src, n, NULL) == TPORT_STATUS_OK, "tensor_write: %s", tport_last_error());
    CHECK(api->tensor_read(be, b, 64, &t, back, n, NULL) == TPORT_STATUS_OK, "tensor_read: %s", tport_last_error());
    CHECK(!memcmp(src, back, n), "9 MiB round trip changed the bytes");

    /* fill with unaligned edges: exactly [67, 67 + 1001) changes */
    tport_ticket tk = 0;
    CHECK(api->buffer_fill(be, b, 67, 1001, 0xab, &tk) == TPORT_STATUS_OK, "buffer_fill: %s", tport_last_error());
    CHECK(api->wait(be, 0, tk, 5000000000ull) == TPORT_STATUS_OK, "wait(fill): %s", tport_last_error());
    CHECK(api->tensor_read(be, b, 0, &t, back, 2048, NULL) == TPORT_STATUS_OK, "read: %s", tport_last_error());
    bool ok = true;
    for (int i = 0; i < 2048; i++) {
        uint8_t want = i >= 67 && i < 67 + 1001 ? 0xab : i >= 64 ? src[i - 64] : back[i];
        ok = ok && back[i] == want;
    }
    CHECK(ok, "buffer_fill wrote outside [67, 1068) or not all of it");

    /* copy between buffers with a ticket */
    tport_buffer c = alloc(TPORT_MEM_DEVICE, 1 << 20, NULL);
    tport_ticket t1 = 0, t2 = 0;
    CHECK(api->buffer_copy(be, c, 8, b, 64 + 4096, 100000, &t1) == TPORT_STATUS_OK, "copy: %s", tport_last_error());
    CHECK(api->buffer_copy(be, c, 200008, b, 64, 1000, &t2) == TPORT_STATUS_OK, "copy: %s", tport_last_error());
    CHECK(t1 && t2 > t1, "tickets %llu, %llu do not grow", (unsigned long long)t1, (unsigned long long)t2);
    CHECK(api->wait(be, 0, t2, 5000000000ull) == TPORT_STATUS_OK, "wait(copy): %s", tport_last_error());
    CHECK(api->tensor_read(be, c, 8, &t, back, 100000, NULL) == TPORT_STATUS_OK, "read: %s", tport_last_error());
    CHECK(!memcmp(back, src + 4096, 100000), "buffer_copy moved other bytes");

    /* a host-staging buffer: the host writes through its pointer */
    void *hp = NULL;
    tport_buffer h = alloc(TPORT_MEM_HOST_STAGING, 4096, &hp);
    CHECK(hp != NULL, "a staging buffer came without a host pointer");
    if (hp) {
        memset(hp, 0x5c, 4096);
        CHECK(api->buffer_copy(be, c, 0, h, 0, 4096, NULL) == TPORT_STATUS_OK, "copy: %s", tport_last_error());
        CHECK(api->tensor_read(be, c, 0, &t, back, 4096, NULL) == TPORT_STATUS_OK, "read: %s", tport_last_error());
        CHECK(back[0] == 0x5c && back[4095] == 0x5c, "staging bytes did not arrive");
    }

    /* errors: one line each, nothing breaks */
    tport_device_info info = {.struct_size = sizeof info};
    api->device_info(be, 0, &info);
    tport_buffer none = 0;
    void *np = NULL;
    tport_status st = api->buffer_alloc(be, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, info.max_buffer_size + (1ull << 20),
                                        &none, &np);
    CHECK(st == TPORT_STATUS_OUT_OF_MEMORY && none == 0 && !strchr(tport_last_error(), '\n'),
          "a buffer over max_buffer_size: status %d '%s'", (int)st, tport_last_error());
    st = api->tensor_read(be, c, (1 << 20) - 10, &t, back, 100, NULL);
    CHECK(st == TPORT_STATUS_INVALID_ARGUMENT, "a read past the end: status %d", (int)st);
    st = api->tensor_write(be, (tport_buffer)0xdead0000beefull, 0, &t, src, 16, NULL);
    CHECK(st == TPORT_STATUS_INVALID_ARGUMENT, "a write to an unknown handle: status %d", (int)st);
    st = api->wait(be, 0, t2 + 1000, 1000);
    CHECK(st != TPORT_STATUS_OK, "a ticket never issued was waited on successfully");
    api->buffer_free(be, (tport_buffer)0x1234567ull); /* unknown: ignored */
    api->buffer_free(be, h);
    api->buffer_free(be, c);
    api->buffer_free(be, b);
    free(src);
    free(back);
}

/* d = W x + y with W [K, M] (K*M*4 bytes > the binding range: chunked). */
static void device_graph(void) {
    const int64_t K = 256, M = 200;
    const uint64_t wbytes = (uint64_t)K * M * 4;
    tport_buffer wbuf = alloc(TPORT_MEM_DEVICE, wbytes, NULL), act = alloc(TPORT_MEM_DEVICE, 65536, NULL);
    float *w = malloc(wbytes), x[256], x2[256], y[200], out[200];
    for (int64_t i = 0; i < K * M; i++)
        w[i] = test_rng_uniform(&rng);
    for (int i = 0; i < 256; i++)
        x[i] = test_rng_uniform(&rng), x2[i] = test_rng_uniform(&rng);
    for (int i = 0; i < 200; i++)
        y[i] = test_rng_uniform(&rng);
    tport_tensor_view tv[5];
    tv[0] = view(TPORT_TYPE_F32, K, M, wbuf, 0);
    tv[0].flags = TPORT_TENSOR_WEIGHT;
    tv[1] = view(TPORT_TYPE_F32, K, 1, act, 0);
    tv[2] = view(TPORT_TYPE_F32, M, 1, act, 4096);
    tv[3] = view(TPORT_TYPE_F32, M, 1, act, 8192);
    tv[3].op = TPORT_OP_MUL_MAT, tv[3].src[0] = 0, tv[3].src[1] = 1;
    tv[4] = view(TPORT_TYPE_F32, M, 1, act, 12288);
    tv[4].op = TPORT_OP_ADD, tv[4].src[0] = 3, tv[4].src[1] = 2;
    const tport_tensor_view *ptrs[5] = {&tv[0], &tv[1], &tv[2], &tv[3], &tv[4]};
    int32_t nodes[2] = {3, 4};
    tport_graph_view g = {.struct_size = sizeof g, .n_tensors = 5, .tensors = ptrs, .n_nodes = 2, .nodes = nodes,
                          .n_threads = 1, .graph_key = 0x1111, .bind_key = 0x2222};
    CHECK(api->supports_op(be, 0, &g, 3) && api->supports_op(be, 0, &g, 4), "mul_mat/add of device tensors declined");
    CHECK(api->tensor_write(be, wbuf, 0, &tv[0], w, wbytes, NULL) == TPORT_STATUS_OK, "%s", tport_last_error());
    CHECK(api->tensor_write(be, act, 4096, &tv[2], y, sizeof y, NULL) == TPORT_STATUS_OK, "%s", tport_last_error());
    for (int round = 0; round < 4; round++) {
        const float *xi = round % 2 ? x2 : x;
        if (round == 2) { /* the input moves: same structure, new bind key */
            tv[1].offset = 16384;
            g.bind_key = 0x3333;
        }
        if (round == 3)
            api->forget_graph(be, 0, g.graph_key);
        CHECK(api->tensor_write(be, act, tv[1].offset, &tv[1], xi, sizeof x, NULL) == TPORT_STATUS_OK, "%s",
              tport_last_error());
        tport_ticket tk = 0;
        tport_status st = api->compute_async(be, 0, &g, &tk);
        CHECK(st == TPORT_STATUS_OK, "compute_async (round %d): %s", round, tport_last_error());
        CHECK(api->wait(be, 0, tk, 30000000000ull) == TPORT_STATUS_OK, "wait: %s", tport_last_error());
        CHECK(api->tensor_read(be, act, 12288, &tv[4], out, sizeof out, NULL) == TPORT_STATUS_OK, "%s",
              tport_last_error());
        int bad = 0;
        for (int64_t i = 0; i < M; i++) {
            double s = y[i], mag = fabs(y[i]);
            for (int64_t k = 0; k < K; k++) {
                s += (double)w[i * K + k] * xi[k];
                mag += fabs((double)w[i * K + k] * xi[k]);
            }
            bad += fabs(out[i] - s) > 2e-5 * mag + 1e-6;
        }
        CHECK(bad == 0, "round %d (%s): %d of %d outputs wrong", round,
              round == 0   ? "recorded"
              : round == 1 ? "replayed with new input"
              : round == 2 ? "new bind key"
                           : "after forget_graph",
              bad, (int)M);
    }
    /* a graph naming a freed buffer: an error, not a crash */
    api->buffer_free(be, wbuf);
    g.graph_key = 0x4444;
    tport_status st = api->compute(be, 0, &g);
    CHECK(st != TPORT_STATUS_OK, "a graph with a freed buffer computed");
    printf("%s: freed buffer in a graph -> '%s'\n", NAME, tport_last_error());
    api->buffer_free(be, act);
    free(w);
}

int main(void) {
    setenv("TPORT_VULKAN_MAX_BUFFER", "65536", 1);
    void *lib = dlopen(TPORT_VULKAN_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "dlopen: %s", dlerror());
    if (!lib)
        return test_finish(NAME);
    tport_backend_entry_fn entry = (tport_backend_entry_fn)dlsym(lib, TPORT_BACKEND_ENTRY_NAME);
    api = entry ? entry(tport_host_services()) : NULL;
    CHECK(api && api->abi_minor >= 1 && api->struct_size >= TPORT_BACKEND_API_SIZE_1_1, "no ABI 1.1 table");
    if (!api || api->abi_minor < 1)
        return test_finish(NAME);
    CHECK(api->init(&be) == TPORT_STATUS_OK, "init: %s", tport_last_error());
    if (api->device_count(be) < 1) {
        api->shutdown(be);
        dlclose(lib);
        vulkan_test_unavailable(NAME, "the vulkan plug-in finds no device");
    }
    tport_device_info info = {.struct_size = sizeof info};
    CHECK(api->device_info(be, 0, &info) == TPORT_STATUS_OK, "device_info: %s", tport_last_error());
    CHECK((info.caps & TPORT_DEVICE_CAP_DEVICE_MEMORY) && (info.caps & TPORT_DEVICE_CAP_ASYNC),
          "caps %llx lack device memory or async", (unsigned long long)info.caps);
    CHECK(info.mem_alignment && !(info.mem_alignment & (info.mem_alignment - 1)), "alignment %llu",
          (unsigned long long)info.mem_alignment);
    CHECK(info.max_buffer_size > RANGE, "max_buffer_size %llu", (unsigned long long)info.max_buffer_size);
    printf("%s: %s — %s\n", NAME, info.name, info.description);
    round_trips();
    device_graph();
    api->shutdown(be);
    dlclose(lib);
    return test_finish(NAME);
}
#endif
