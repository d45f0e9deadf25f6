/* How far ahead the kernels that stream weights once (generation: the x8
 * one- and two-column kernels, cpu_mul_mat_gen.c, the row kernels of
 * quant/: dot_avx512.c, some of the AVX2 ones) prefetch.  The best
 * distance is a property of the memory system, not of the code, so it is
 * chosen here at init, per CPU:
 * - AMD (a Zen 5), 512-bit kernels: 4 KiB; it beat no prefetch and 1 KiB
 *   clearly, and 3 or 8 KiB were no better (RESULTS run 14);
 * - Intel (the Xeon with AMX of RESULTS run 28), 512-bit kernels: 2 KiB;
 *   4 KiB, right for the Zen 5, was much too far there, and 1 KiB a
 *   little short;
 *   f16 rows (cpu_mul_mat_gen.c) want 3 KiB there, while f32 rows and
 *   q4_K were slower at 3 KiB than at 2, so f16 has its own distance
 *   (RESULTS run 29);
 * - 256-bit kernels (a Zen 3): 1 KiB; 512 bytes gained less and 2 KiB no
 *   more (RESULTS run 13).
 * The 512-bit Q4_K kernels of 3..8 columns (batches, serve steps: q4_K_z
 * for 3 and 4, q4_K_z2, q4_K_zw for 5..8) spread their prefetches over a
 * super-block (1184 bytes) of compute, slower per byte than the streaming
 * kernels, and want their own distance, cpu_batch_ahead:
 * - AMD (the Zen 5): 8 KiB.  For 8 columns one super-block ahead, as
 *   tuned on the Xeon, left the kernel waiting on memory, far slower from
 *   DRAM than from L2; 4 KiB closed part of that, 8 KiB most, and 12, 16
 *   and 32 KiB no more.  The 3- and 4-column kernels, which did not
 *   prefetch, gained most at 8 KiB too, less at 4 and 16 KiB (RESULTS
 *   run 50).  The Q8_0 and Q4_0 kernels of 3 and 4 columns (legacy_z,
 *   legacy_z2) did not prefetch either and waited likewise; 8 KiB ahead
 *   serves them too (RESULTS run 51), and Q6_K's of 3..8 (q6_z, RESULTS
 *   run 54);
 * - others: 1184 bytes (the Xeon's for 5..8 columns).
 * TPORT_CPU_PREFETCH=<bytes> overrides, for measuring another machine. */
#include <stdlib.h>

#include "cpu_internal.h"
#include "cpu_quant.h"

uintptr_t cpu_stream_ahead = 1024, cpu_stream_ahead_f16 = 1024, cpu_batch_ahead = 1184;

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
    cpu_batch_ahead = amd ? 8192 : 1184;
#else
    cpu_stream_ahead = cpu_stream_ahead_f16 = 1024;
    cpu_batch_ahead = 1184;
#endif
    const char *e = getenv("TPORT_CPU_PREFETCH");
    if (e && *e) {
        char *end;
        unsigned long v = strtoul(e, &end, 10);
        if (*end || v > 65536 || v % 64)
            cpu_host->log(TPORT_LOG_WARN, "cpu: TPORT_CPU_PREFETCH=%s is not a multiple of 64 up to 65536; ignored", e);
        else
            cpu_stream_ahead = cpu_stream_ahead_f16 = cpu_batch_ahead = (uintptr_t)v;
    }
    cpuq_stream_ahead = cpu_stream_ahead; /* the row kernels of quant/ */
}
