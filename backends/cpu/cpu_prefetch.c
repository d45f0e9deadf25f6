/* How far ahead the kernels that stream weights once (generation: the x8
 * one- and two-column kernels, cpu_mul_mat_gen.c) prefetch.  The best
 * distance is a property of the memory system, not of the code, so it is
 * chosen here at init.  Interleaved A/B, TinyLlama tg16/tg32, medians of 3:
 * - 2-vCPU Zen 5 (EPYC), 512-bit kernels: 4 KiB against none, q4_K 39.1 ->
 *   50.9 t/s at 1 thread; against 1 KiB, q4_0 37.7 -> 47.0;
 * - 2-vCPU Intel Xeon with AMX (RESULTS run 28), 512-bit kernels: 2 KiB
 *   against 4, q4_K 17.7 -> 25.4 t/s at 1 thread and 34.8 -> 47.7 at 2,
 *   q4_0 23.2 -> 26.5, q8_0 13.4 -> 15.0, f16 6.54 -> 7.07 (1 KiB: 24.9,
 *   25.9, 14.5);
 *   f16 rows (cpu_mul_mat_gen.c) want 3 KiB there: TinyLlama tg16 7.08 ->
 *   7.27-7.39 at 1 thread and 13.7-14.0 -> 14.8 at 2, stories110M tg64
 *   77.6-78.8 -> 82.2-84.0; f32 rows and q4_K do not (stories110M f32
 *   40.0-40.4 -> 36.7-37.1, TinyLlama q4_K 26.6 -> 25.1), so f16 has its
 *   own distance;
 * - 256-bit kernels on a 2-vCPU Zen 3: 1 KiB (512 bytes gained less, 2 KiB
 *   no more).
 * TPORT_CPU_PREFETCH=<bytes> overrides, for measuring another machine. */
#include <stdlib.h>

#include "cpu_internal.h"

uintptr_t cpu_stream_ahead = 1024, cpu_stream_ahead_f16 = 1024;

#if defined(__AVX512F__) /* x86 */
#include <cpuid.h>

static bool cpu_is_amd(void) {
    unsigned max, ebx, ecx, edx;
    if (!__get_cpuid(0, &max, &ebx, &ecx, &edx))
        return false;
    return ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u; /* "AuthenticAMD" */
}
#endif

void cpu_prefetch_init(void) {
#if defined(__AVX512F__)
    bool amd = cpu_is_amd();
    cpu_stream_ahead = amd ? 4096 : 2048;
    cpu_stream_ahead_f16 = amd ? 4096 : 3072;
#else
    cpu_stream_ahead = cpu_stream_ahead_f16 = 1024;
#endif
    const char *e = getenv("TPORT_CPU_PREFETCH");
    if (e && *e) {
        char *end;
        unsigned long v = strtoul(e, &end, 10);
        if (*end || v > 65536 || v % 64)
            cpu_host->log(TPORT_LOG_WARN, "cpu: TPORT_CPU_PREFETCH=%s is not a multiple of 64 up to 65536; ignored", e);
        else
            cpu_stream_ahead = cpu_stream_ahead_f16 = (uintptr_t)v;
    }
}
