/* How far ahead the kernels that stream weights once (generation: the x8
 * one- and two-column kernels, cpu_mul_mat_gen.c) prefetch.  The best
 * distance is a property of the memory system, not of the code, so it is
 * chosen here at init.  Interleaved A/B, TinyLlama tg16/tg32, medians of 3:
 * - 2-vCPU Zen 5 (EPYC), 512-bit kernels: 4 KiB against none, q4_K 39.1 ->
 *   50.9 t/s at 1 thread; against 1 KiB, q4_0 37.7 -> 47.0;
 * - 2-vCPU Intel Xeon with AMX (RESULTS run 28), 512-bit kernels: 2 KiB against 4,
 *   q4_K 17.7 -> 25.4 t/s at 1 thread and 34.8 -> 47.7 at 2, q4_0 23.2 ->
 *   26.5, q8_0 13.4 -> 15.0, f16 6.54 -> 7.07 (1 KiB: 24.9, 25.9, 14.5);
 * - 256-bit kernels on a 2-vCPU Zen 3: 1 KiB (512 bytes gained less, 2 KiB
 *   no more).
 * TPORT_CPU_PREFETCH=<bytes> overrides, for measuring another machine. */
#include <stdlib.h>

#include "cpu_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

uintptr_t cpu_stream_ahead = 1024;

#if defined(__AVX512F__)
static bool cpu_is_amd(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned max, ebx, ecx, edx;
    if (!__get_cpuid(0, &max, &ebx, &ecx, &edx))
        return false;
    return ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u; /* "AuthenticAMD" */
#else
    return false;
#endif
}
#endif

void cpu_prefetch_init(void) {
#if defined(__AVX512F__)
    cpu_stream_ahead = cpu_is_amd() ? 4096 : 2048;
#else
    cpu_stream_ahead = 1024;
#endif
    const char *e = getenv("TPORT_CPU_PREFETCH");
    if (e && *e) {
        char *end;
        unsigned long v = strtoul(e, &end, 10);
        if (*end || v > 65536 || v % 64)
            cpu_host->log(TPORT_LOG_WARN, "cpu: TPORT_CPU_PREFETCH=%s is not a multiple of 64 up to 65536; ignored", e);
        else
            cpu_stream_ahead = (uintptr_t)v;
    }
}
