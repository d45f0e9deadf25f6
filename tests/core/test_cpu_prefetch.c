/* The CPU backend's prefetch distances (backends/cpu/cpu_prefetch.c),
 * compiled here as in the AVX-512 variant: the defaults for this CPU, the
 * batch kernels' own distance (cpu_batch_ahead: 8 KiB on AMD, 1184 bytes
 * elsewhere), and TPORT_CPU_PREFETCH setting every distance, or none when
 * it is not a multiple of 64 up to 65536. */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200112L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <cpuid.h>
#include <stdarg.h>

#include "../test_util.h"
#include "cpu_internal.h"
#include "cpu_quant.h"

/* What cpu_prefetch.c takes from the rest of the backend. */
uintptr_t cpuq_stream_ahead;
static int warnings;
static void count_log(int32_t level, const char *fmt, ...) {
    (void)level, (void)fmt;
    warnings++;
}
static tport_host_api host = {.log = count_log};
const tport_host_api *cpu_host = &host;

static bool is_amd(void) {
    unsigned max, ebx, ecx, edx;
    return __get_cpuid(0, &max, &ebx, &ecx, &edx) && ebx == 0x68747541u && edx == 0x69746e65u &&
           ecx == 0x444d4163u;
}

int main(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) /* cpu_prefetch.c is built for it here */
        test_skip("test_cpu_prefetch", "no AVX-512");
    const bool amd = is_amd();
    const uintptr_t stream = amd ? 4096 : 2048, f16 = amd ? 4096 : 3072, batch = amd ? 8192 : 1184;

    unsetenv("TPORT_CPU_PREFETCH");
    cpu_prefetch_init();
    CHECK(cpu_stream_ahead == stream, "stream %zu", (size_t)cpu_stream_ahead);
    CHECK(cpu_stream_ahead_f16 == f16, "f16 %zu", (size_t)cpu_stream_ahead_f16);
    CHECK(cpu_batch_ahead == batch, "batch %zu", (size_t)cpu_batch_ahead);
    CHECK(cpuq_stream_ahead == stream, "quant %zu", (size_t)cpuq_stream_ahead);
    CHECK(warnings == 0, "%d warnings", warnings);

    setenv("TPORT_CPU_PREFETCH", "1536", 1);
    cpu_prefetch_init();
    CHECK(cpu_stream_ahead == 1536 && cpu_stream_ahead_f16 == 1536 && cpu_batch_ahead == 1536 &&
              cpuq_stream_ahead == 1536,
          "override: %zu %zu %zu %zu", (size_t)cpu_stream_ahead, (size_t)cpu_stream_ahead_f16,
          (size_t)cpu_batch_ahead, (size_t)cpuq_stream_ahead);
    CHECK(warnings == 0, "%d warnings", warnings);

    setenv("TPORT_CPU_PREFETCH", "1000", 1); /* not a multiple of 64: ignored, with a warning */
    cpu_prefetch_init();
    CHECK(cpu_stream_ahead == stream && cpu_batch_ahead == batch, "ignored: %zu %zu", (size_t)cpu_stream_ahead,
          (size_t)cpu_batch_ahead);
    CHECK(warnings == 1, "%d warnings", warnings);
    return test_finish("test_cpu_prefetch");
}
