/* The registry: discovery order, every refusal case (each fake plug-in
 * breaks one rule and must be skipped with the right reason while the CPU
 * backend keeps working), shadowing, preference order, the current
 * directory rule, tport_backend_load, isolated probing of a crashing
 * plug-in, and the real CPU variants.
 *
 * Each scenario sets the environment, discovers, checks the report, and
 * shuts the registry down so the next one starts fresh. */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/registry.h"
#include "registry/search_path.h"
#include "../test_util.h"
#include "tport/tport.h"
#include "registry_expect.h"

static int index_of(const char *name) {
    for (int i = 0; i < tport_backend_count(); i++)
        if (!strcmp(tport_backend_name(i), name))
            return i;
    return -1;
}

static void cpu_still_works(void) {
    const tport_active_backend *cpu = tport_registry_find("cpu");
    CHECK(cpu != NULL, "no active cpu backend");
    CHECK(cpu && cpu->n_devices >= 1, "cpu has no devices");
}

static void reset_env(void) {
    unsetenv("TPORT_BACKEND_PATH");
    unsetenv("TPORT_BACKEND");
    unsetenv("TPORT_BACKEND_PROBE");
}

static void scenario_embedded_only(void) {
    reset_env();
    CHECK(tport_backend_count() >= 1, "no backends at all");
    tport_candidate_report r;
    CHECK(tport_registry_candidate(0, &r), "empty report");
    CHECK(!strcmp(r.origin, "embedded") && !strcmp(r.name, "cpu"), "first candidate is %s/%s", r.origin, r.name);
    CHECK(r.status == TPORT_CANDIDATE_ACTIVE, "embedded cpu is %s: %s", tport_candidate_status_name(r.status), r.reason);
    CHECK(r.abi_major == TPORT_ABI_MAJOR && r.abi_minor == TPORT_ABI_MINOR, "embedded ABI %u.%u", r.abi_major, r.abi_minor);
    cpu_still_works();
    tport_registry_shutdown();
}

static void scenario_refusals(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH", FAKE_DIR, 1);
    expect("libfake_good.so", TPORT_CANDIDATE_ACTIVE, NULL);
    expect("libfake_garbage.so", TPORT_CANDIDATE_REJECTED, "not loadable");
    expect("libfake_no_entry.so", TPORT_CANDIDATE_REJECTED, "no 'tport_backend_entry' symbol");
    expect("libfake_null_entry.so", TPORT_CANDIDATE_REJECTED, "simulated: no driver installed");
    char want[96];
    snprintf(want, sizeof want, "plug-in speaks backend ABI 2.%d, this host speaks 1.%d", TPORT_ABI_MINOR, TPORT_ABI_MINOR);
    expect("libfake_major2.so", TPORT_CANDIDATE_REJECTED, want);
    expect("libfake_small_struct.so", TPORT_CANDIDATE_REJECTED, "ABI 1.0 needs at least");
    expect("libfake_missing_slot.so", TPORT_CANDIDATE_REJECTED, "required slot 'compute' is NULL");
#if defined(__aarch64__)
    expect("libfake_isa.so", TPORT_CANDIDATE_REJECTED, "needs avx2");
#else
    expect("libfake_isa.so", TPORT_CANDIDATE_REJECTED, "needs neon");
#endif
    expect("libfake_score0.so", TPORT_CANDIDATE_REJECTED, "score 0");
    expect("libfake_init_fail.so", TPORT_CANDIDATE_REJECTED, "init failed (device lost): simulated init failure");
    expect("libfake_no_devices.so", TPORT_CANDIDATE_REJECTED, "no devices");
    expect("libfake_twin_high.so", TPORT_CANDIDATE_ACTIVE, NULL);
    expect("libfake_twin_low.so", TPORT_CANDIDATE_SHADOWED, "score 7 beats 5");
    /* compatibility: an older build and a newer-minor build both load */
    expect("libfake_abi_1_0.so", TPORT_CANDIDATE_ACTIVE, NULL);
    expect("libfake_newer_minor.so", TPORT_CANDIDATE_ACTIVE, NULL);
    tport_candidate_report r;
    /* built against the frozen 1.0 header: negotiated 1.0, so the host
     * reads none of the 1.1 slots and gives it host memory only */
    if (find_candidate("libfake_abi_1_0.so", &r))
        CHECK(r.abi_minor == 0, "1.0 plug-in negotiated minor %u", r.abi_minor);
    const tport_active_backend *abi10 = tport_registry_find("abi10");
    CHECK(abi10 && !abi10->mem.device_memory && !abi10->mem.buffer_alloc && !abi10->mem.tensor_write &&
              !abi10->mem.compute_async && !abi10->mem.caps,
          "the 1.0 plug-in got 1.1 features");
    if (find_candidate("libfake_newer_minor.so", &r))
        CHECK(r.abi_minor == TPORT_ABI_MINOR, "1.7 plug-in negotiated minor %u, host has %d", r.abi_minor,
              TPORT_ABI_MINOR);
    if (find_candidate("libfake_good.so", &r)) {
        CHECK(r.n_devices == 1 && !strcmp(r.devices[0].name, "fake0"), "fake device not reported");
        CHECK(r.devices[0].kind == TPORT_DEVICE_ACCEL, "fake device kind %d", r.devices[0].kind);
        CHECK(!strcmp(r.version, "test-1") && r.score == 5, "version %s score %d", r.version, r.score);
    }
    /* folder entries are taken in name order */
    int prev = -1, n = tport_registry_candidate_count();
    char last[PATH_MAX] = "";
    for (int i = 0; i < n; i++) {
        tport_registry_candidate(i, &r);
        if (strcmp(r.origin, "TPORT_BACKEND_PATH"))
            continue;
        CHECK(strcmp(last, r.path) < 0, "%s comes after %s", r.path, last);
        snprintf(last, sizeof last, "%s", r.path);
        prev = i;
    }
    CHECK(prev > 10, "expected the fake plug-ins in the report (last index %d)", prev);
    /* non-CPU backends come before the CPU */
    CHECK(index_of("fake") >= 0 && index_of("fake") < index_of("cpu"), "fake at %d, cpu at %d", index_of("fake"),
          index_of("cpu"));
    CHECK(index_of("twin") >= 0 && index_of("twin") < index_of("fake"), "twin (score 7) at %d should precede fake (5) at %d",
          index_of("twin"), index_of("fake"));
    const tport_active_backend *twin = tport_registry_find("twin");
    CHECK(twin && twin->score == 7, "the higher-scoring twin is not the active one");
    cpu_still_works();
    tport_registry_shutdown();

    /* TPORT_BACKEND overrides the order */
    setenv("TPORT_BACKEND", "cpu, fake", 1);
    CHECK(index_of("cpu") == 0 && index_of("fake") == 1, "TPORT_BACKEND=cpu,fake gave cpu %d fake %d", index_of("cpu"),
          index_of("fake"));
    tport_registry_shutdown();
}

static void scenario_shadow_embedded(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH", FAKE_SPECIAL_DIR "/libfake_cpu_high.so", 1);
    expect("(embedded)", TPORT_CANDIDATE_SHADOWED, "shadowed by");
    expect("libfake_cpu_high.so", TPORT_CANDIDATE_ACTIVE, NULL);
    const tport_active_backend *cpu = tport_registry_find("cpu");
    CHECK(cpu && cpu->path && strstr(cpu->path, "libfake_cpu_high.so"), "cpu is not the high-scoring plug-in");
    tport_registry_shutdown();
}

static void scenario_current_directory(void) {
    reset_env();
    char cwd[PATH_MAX];
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    CHECK(chdir(FAKE_DIR) == 0, "chdir %s", FAKE_DIR);
    /* empty entries are not '.' */
    setenv("TPORT_BACKEND_PATH", "::", 1);
    CHECK(!find_candidate("libfake_good.so", &(tport_candidate_report){0}), "an empty entry searched the current directory");
    CHECK(index_of("fake") < 0, "fake loaded from the current directory");
    tport_registry_shutdown();
    /* a relative entry is the user's explicit choice */
    setenv("TPORT_BACKEND_PATH", "libfake_good.so", 1);
    expect("./libfake_good.so", TPORT_CANDIDATE_ACTIVE, NULL);
    tport_registry_shutdown();
    CHECK(chdir(cwd) == 0, "chdir back");
}

static void scenario_api_load(void) {
    reset_env();
    CHECK(tport_backend_load(FAKE_DIR "/libfake_good.so") == TPORT_STATUS_OK, "load: %s", tport_last_error());
    CHECK(index_of("fake") >= 0, "fake not active after tport_backend_load");
    expect("libfake_good.so", TPORT_CANDIDATE_ACTIVE, NULL);
    tport_status st = tport_backend_load(FAKE_DIR "/libfake_major2.so");
    CHECK(st == TPORT_STATUS_VERSION_MISMATCH, "major 2 gave %s", tport_status_name(st));
    CHECK(strstr(tport_last_error(), "ABI 2.") && strstr(tport_last_error(), "speaks 1."), "message '%s' does not name both versions",
          tport_last_error());
    CHECK(tport_backend_load(FAKE_DIR "/libfake_init_fail.so") != TPORT_STATUS_OK, "init failure not reported");
    CHECK(tport_backend_load(FAKE_DIR "/missing.so") != TPORT_STATUS_OK, "missing file not reported");
    CHECK(tport_backend_load(FAKE_DIR "/libfake_good.so") == TPORT_STATUS_OK, "loading twice is harmless");
    cpu_still_works();
    tport_registry_shutdown();
}

static void scenario_probe(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH",
           FAKE_SPECIAL_DIR "/libfake_crash_entry.so:" FAKE_SPECIAL_DIR "/libfake_crash_init.so:" FAKE_DIR
                            "/libfake_good.so",
           1);
    tport_registry_set_probe(true);
    expect("libfake_crash_entry.so", TPORT_CANDIDATE_REJECTED, "crashed in probe during entry: SIGILL");
    expect("libfake_crash_init.so", TPORT_CANDIDATE_REJECTED, "crashed in probe during init: SIGABRT");
    expect("libfake_good.so", TPORT_CANDIDATE_ACTIVE, NULL);
    cpu_still_works();
    tport_registry_set_probe(false);
    tport_registry_shutdown();
}

static void scenario_cpu_variants(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH", CPU_VARIANT_DIR, 1);
    int n = tport_registry_candidate_count(), variants = 0, active_cpu = 0;
    const uint64_t host = tport_isa_host();
    for (int i = 0; i < n; i++) {
        tport_candidate_report r;
        tport_registry_candidate(i, &r);
        if (!strcmp(r.name, "cpu") && r.status == TPORT_CANDIDATE_ACTIVE)
            active_cpu++;
        /* the folder also holds other in-tree plug-ins (blas): only the
         * libtport-cpu-* files are CPU variants */
        if (strcmp(r.origin, "TPORT_BACKEND_PATH") || !strstr(r.path, "/libtport-cpu-"))
            continue;
        variants++;
        CHECK(!strcmp(r.name, "cpu"), "%s is named '%s' (%s)", r.path, r.name, r.reason);
        bool lacks = (r.required_isa & ~host) != 0;
        bool refused_for_isa = r.status == TPORT_CANDIDATE_REJECTED && strstr(r.reason, "needs ");
        CHECK(lacks == refused_for_isa, "%s: needs 0x%llx, host 0x%llx, status %s (%s)", r.path,
              (unsigned long long)r.required_isa, (unsigned long long)host, tport_candidate_status_name(r.status), r.reason);
        if (!lacks)
            CHECK(r.status != TPORT_CANDIDATE_REJECTED, "%s rejected: %s", r.path, r.reason);
    }
#if defined(__x86_64__)
    CHECK(variants == 3, "found %d cpu variants in %s", variants, CPU_VARIANT_DIR);
#endif
    CHECK(active_cpu == 1, "%d active cpu backends", active_cpu);
    tport_registry_shutdown();
}

/* Shutdown unloads the plug-ins, unless TPORT_NO_UNLOAD=1. */
static bool mapped(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static void scenario_unload(void) {
    reset_env();
    const char *good = FAKE_DIR "/libfake_good.so", *low = FAKE_DIR "/libfake_twin_low.so";
    setenv("TPORT_BACKEND_PATH", FAKE_DIR "/libfake_good.so:" FAKE_DIR "/libfake_twin_low.so:" FAKE_DIR
                                 "/libfake_twin_high.so", 1);
    tport_registry_init();
    CHECK(mapped(good), "an active plug-in is not mapped");
    CHECK(!mapped(low), "a shadowed plug-in stayed mapped");
    tport_registry_shutdown();
    CHECK(!mapped(good), "still mapped after shutdown");
    setenv("TPORT_NO_UNLOAD", "1", 1);
    tport_registry_init();
    tport_registry_shutdown();
    CHECK(mapped(good), "TPORT_NO_UNLOAD=1 did not keep the library mapped");
    unsetenv("TPORT_NO_UNLOAD");
}

/* Linked statically, the library's code is in the executable: the
 * installed folder is then <exe dir>/../<libdir>/tport/backends. */
static void scenario_installed_dir(void) {
    char exe[PATH_MAX], want[PATH_MAX + 64], dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(n > 0, "readlink /proc/self/exe");
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(want, sizeof want, "%s/../", exe);
    tport_installed_backend_dir(dir, sizeof dir);
    CHECK(!strncmp(dir, want, strlen(want)) && strstr(dir, "/tport/backends"), "installed dir '%s', expected under '%s'",
          dir, want);
}

/* With AVX-512 masked off (TPORT_ISA_DISABLE), the real avx512 variant
 * must be refused for its ISA before any of its code runs, and another
 * cpu take its place. */
static void scenario_isa_disable(void) {
#if defined(__x86_64__)
    reset_env();
    setenv("TPORT_ISA_DISABLE", "avx512f", 1);
    setenv("TPORT_BACKEND_PATH", CPU_VARIANT_DIR, 1);
    CHECK(!(tport_isa_host() & TPORT_ISA_AVX512F), "TPORT_ISA_DISABLE ignored");
    expect("libtport-cpu-avx512.so", TPORT_CANDIDATE_REJECTED, "needs avx512f");
    const tport_active_backend *cpu = tport_registry_find("cpu");
    CHECK(cpu && (!cpu->path || !strstr(cpu->path, "avx512")), "the avx512 variant is active");
    tport_registry_shutdown();
    unsetenv("TPORT_ISA_DISABLE");
#endif
}

static void scenario_table_check(void) {
    /* the host clamps a plug-in that claims a minor above its own */
    tport_backend_api t = {0};
    t.struct_size = sizeof t + 24;
    t.abi_major = TPORT_ABI_MAJOR;
    t.abi_minor = TPORT_ABI_MINOR + 7;
    uint32_t minor = 99;
    char why[256];
    CHECK(!tport_backend_table_check(&t, tport_host_services(), &minor, why, sizeof why), "empty table accepted");
    CHECK(strstr(why, "'name'"), "reason: %s", why);
    CHECK(minor == TPORT_ABI_MINOR, "negotiated %u", minor);
}

int main(void) {
    scenario_embedded_only();
    scenario_refusals();
    scenario_shadow_embedded();
    scenario_current_directory();
    scenario_api_load();
    scenario_probe();
    scenario_cpu_variants();
    scenario_unload();
    scenario_installed_dir();
    scenario_isa_disable();
    scenario_table_check();
    return test_finish("test_registry");
}
