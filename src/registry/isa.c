/* What instruction-set features this machine can run: cpuid for what the
 * CPU has, XGETBV for what the OS saves on context switches (AVX and
 * AVX-512 registers are unusable unless XCR0 enables their state). */
#include <stdio.h>
#include <string.h>

#include "registry.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    /* xgetbv with ecx = 0; written as bytes so no -mxsave is needed */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static uint64_t detect(void) {
    unsigned a, b, c, d;
    uint64_t isa = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const bool osxsave = c & (1u << 27);
    const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    const bool avx_state = (xcr0 & 0x6) == 0x6;           /* SSE + AVX state  */
    const bool avx512_state = avx_state && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM */
    if (c & (1u << 20)) isa |= TPORT_ISA_SSE42;
    if (avx_state) {
        if (c & (1u << 28)) isa |= TPORT_ISA_AVX;
        if (c & (1u << 12)) isa |= TPORT_ISA_FMA;
        if (c & (1u << 29)) isa |= TPORT_ISA_F16C;
    }
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf >= 7 && avx_state) {
        __cpuid_count(7, 0, a, b, c, d);
        if (b & (1u << 5)) isa |= TPORT_ISA_AVX2;
        if (avx512_state) {
            if (b & (1u << 16)) isa |= TPORT_ISA_AVX512F;
            if (b & (1u << 17)) isa |= TPORT_ISA_AVX512DQ;
            if (b & (1u << 30)) isa |= TPORT_ISA_AVX512BW;
            if (b & (1u << 31)) isa |= TPORT_ISA_AVX512VL;
            if (c & (1u << 11)) isa |= TPORT_ISA_AVX512VNNI;
            unsigned a1, b1, c1, d1;
            __cpuid_count(7, 1, a1, b1, c1, d1);
            (void)b1, (void)c1, (void)d1;
            if (a1 & (1u << 5)) isa |= TPORT_ISA_AVX512BF16;
        }
    }
    return isa;
}
#elif defined(__aarch64__)
static uint64_t detect(void) {
    return TPORT_ISA_NEON; /* mandatory on AArch64 */
}
#else
static uint64_t detect(void) {
    return 0;
}
#endif

static const struct {
    uint64_t bit;
    const char *name;
} isa_names[] = {
    {TPORT_ISA_SSE42, "sse4.2"},         {TPORT_ISA_AVX, "avx"},
    {TPORT_ISA_AVX2, "avx2"},            {TPORT_ISA_FMA, "fma"},
    {TPORT_ISA_F16C, "f16c"},            {TPORT_ISA_AVX512F, "avx512f"},
    {TPORT_ISA_AVX512BW, "avx512bw"},    {TPORT_ISA_AVX512VL, "avx512vl"},
    {TPORT_ISA_AVX512DQ, "avx512dq"},    {TPORT_ISA_AVX512VNNI, "avx512vnni"},
    {TPORT_ISA_AVX512BF16, "avx512bf16"}, {TPORT_ISA_NEON, "neon"},
};

/* TPORT_ISA_DISABLE="avx512f,avx2": features to treat as absent, to try a
 * lower variant or to test the refusal path on a machine that has them. */
static uint64_t disabled_by_user(void) {
    const char *env = tport_registry_getenv("TPORT_ISA_DISABLE");
    uint64_t mask = 0;
    while (env && *env) {
        size_t n = strcspn(env, ", ");
        for (size_t i = 0; n && i < sizeof isa_names / sizeof isa_names[0]; i++)
            if (strlen(isa_names[i].name) == n && !strncmp(env, isa_names[i].name, n))
                mask |= isa_names[i].bit;
        env += n;
        env += strspn(env, ", ");
    }
    return mask;
}

uint64_t tport_isa_host(void) {
    static uint64_t cached;
    static bool done; /* benign race: every thread computes the same value */
    if (!done) {
        cached = detect();
        done = true;
    }
    return cached & ~disabled_by_user();
}

void tport_isa_names(uint64_t isa, char *buf, size_t cap) {
    size_t used = 0;
    if (!cap)
        return;
    buf[0] = '\0';
    uint64_t known = 0;
    for (size_t i = 0; i < sizeof isa_names / sizeof isa_names[0]; i++) {
        known |= isa_names[i].bit;
        if (isa & isa_names[i].bit) {
            int n = snprintf(buf + used, cap - used, "%s%s", used ? " " : "", isa_names[i].name);
            if (n < 0 || (size_t)n >= cap - used)
                return;
            used += (size_t)n;
        }
    }
    if (isa & ~known)
        snprintf(buf + used, cap - used, "%sunknown(0x%llx)", used ? " " : "",
                 (unsigned long long)(isa & ~known));
}
