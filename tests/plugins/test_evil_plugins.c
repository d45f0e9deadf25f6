/* Plug-ins nobody should ship, loaded anyway: every one must be refused or
 * contained with a one-line reason while the cpu backend keeps working.
 *  - tables: minor not negotiated, major 0, absurd or tiny struct_size,
 *    reserved set; names NULL/empty/too long/unterminated/not [A-Za-z0-9_.-];
 *    versions NULL or 5000 bytes of non-text; unknown ISA bits; negative or
 *    huge scores; negative or huge device counts; device_info garbage;
 *    init leaving the state NULL or returning status 12345; an entry symbol
 *    that is data; host services called with bad arguments.
 *  - graph runs: a backend that claims everything and fails compute (with a
 *    100 KB message, or an unknown status); a "cpu" plug-in that declines
 *    everything (the embedded cpu stays as fallback).
 *  - probing: entry or init that hangs (killed after TPORT_PROBE_TIMEOUT),
 *    init that calls exit().
 *  - the search path: the same file three times (by name, symlink), FIFOs,
 *    folders named x.so, non-ELF and foreign-architecture files, 2000
 *    missing entries, an over-long entry, a folder of 2000 non-plug-ins.
 *  - TPORT_BACKEND with unknown, duplicate and empty names.
 *  - 50 load/unload cycles (clean under ASan). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry/registry.h"
#include "../test_util.h"
#include "tport/tport.h"
#include "registry_expect.h"

#define EVIL(file) FAKE_EVIL_DIR "/" file

static bool printable_line(const char *s, size_t max) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return n <= max;
}

static int index_of(const char *name) {
    for (int i = 0; i < tport_backend_count(); i++)
        if (!strcmp(tport_backend_name(i), name))
            return i;
    return -1;
}

static void cpu_still_works(void) {
    const tport_active_backend *cpu = tport_registry_find("cpu");
    CHECK(cpu != NULL && cpu->n_devices >= 1, "no working cpu backend");
}

static void reset_env(void) {
    unsetenv("TPORT_BACKEND_PATH");
    unsetenv("TPORT_BACKEND");
    unsetenv("TPORT_BACKEND_PROBE");
    unsetenv("TPORT_PROBE_TIMEOUT");
}

/* Every report entry: reasons, names, versions and device strings are one
 * printable line of bounded length. */
static void report_is_sane(void) {
    int n = tport_registry_candidate_count();
    for (int i = 0; i < n; i++) {
        tport_candidate_report r;
        tport_registry_candidate(i, &r);
        CHECK(printable_line(r.reason, 255), "%s: reason is not one printable line", r.path);
        CHECK(printable_line(r.name, 63), "%s: name is not printable", r.path);
        CHECK(printable_line(r.version, 63), "%s: version is not printable or too long", r.path);
        CHECK(r.n_devices >= 0 && r.n_devices <= TPORT_REPORT_MAX_DEVICES, "%s: %d devices stored", r.path,
              r.n_devices);
        for (int d = 0; d < r.n_devices; d++) {
            CHECK(printable_line(r.devices[d].name, 63), "%s: device %d name", r.path, d);
            CHECK(printable_line(r.devices[d].description, 127), "%s: device %d description", r.path, d);
        }
    }
}

static void scenario_tables(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH",
           EVIL("libevil_minor99.so") ":" EVIL("libevil_major0.so") ":" EVIL("libevil_size_huge.so") ":" EVIL(
               "libevil_size_tiny.so") ":" EVIL("libevil_reserved.so") ":" EVIL("libevil_name1.so") ":" EVIL(
               "libevil_name2.so") ":" EVIL("libevil_name3.so") ":" EVIL("libevil_name4.so") ":" EVIL(
               "libevil_name5.so") ":" EVIL("libevil_name6.so") ":" EVIL("libevil_name7.so") ":" EVIL(
               "libevil_version_null.so") ":" EVIL("libevil_version_long.so") ":" EVIL("libevil_isa_unknown.so") ":" EVIL(
               "libevil_score_negative.so") ":" EVIL("libevil_score_huge.so") ":" EVIL(
               "libevil_devices_negative.so") ":" EVIL("libevil_devices_huge.so") ":" EVIL(
               "libevil_device_garbage.so") ":" EVIL("libevil_null_state.so") ":" EVIL("libevil_init_12345.so") ":" EVIL(
               "libevil_host_abuse.so") ":" EVIL("libevil_data_entry.so"),
           1);
    /* a plug-in that did not negotiate down is clamped to the host's minor */
    expect("libevil_minor99.so", TPORT_CANDIDATE_ACTIVE, NULL);
    tport_candidate_report r;
    if (find_candidate("libevil_minor99.so", &r))
        CHECK(r.abi_minor == TPORT_ABI_MINOR, "minor 99 negotiated to %u", r.abi_minor);
    expect("libevil_major0.so", TPORT_CANDIDATE_REJECTED, "plug-in speaks backend ABI 0.");
    expect("libevil_size_huge.so", TPORT_CANDIDATE_REJECTED, "implausibly large");
    expect("libevil_size_tiny.so", TPORT_CANDIDATE_REJECTED, "too small");
    expect("libevil_reserved.so", TPORT_CANDIDATE_ACTIVE, NULL); /* reserved is ignored */
    expect("libevil_name1.so", TPORT_CANDIDATE_REJECTED, "required slot 'name' is NULL");
    expect("libevil_name2.so", TPORT_CANDIDATE_REJECTED, "name is empty");
    expect("libevil_name3.so", TPORT_CANDIDATE_REJECTED, "outside [A-Za-z0-9_.-]");
    expect("libevil_name4.so", TPORT_CANDIDATE_REJECTED, "outside [A-Za-z0-9_.-]");
    expect("libevil_name5.so", TPORT_CANDIDATE_REJECTED, "outside [A-Za-z0-9_.-]");
    expect("libevil_name6.so", TPORT_CANDIDATE_REJECTED, "longer than 63 bytes");
    expect("libevil_name7.so", TPORT_CANDIDATE_REJECTED, "longer than 63 bytes");
    expect("libevil_version_null.so", TPORT_CANDIDATE_ACTIVE, NULL);
    expect("libevil_version_long.so", TPORT_CANDIDATE_ACTIVE, NULL);
    if (find_candidate("libevil_version_long.so", &r))
        CHECK(strlen(r.version) == 63 && r.version[10] == '?', "long version kept as '%s'", r.version);
    expect("libevil_isa_unknown.so", TPORT_CANDIDATE_REJECTED, "needs unknown(0x10000000000)");
    expect("libevil_score_negative.so", TPORT_CANDIDATE_REJECTED, "score -5 is negative");
    expect("libevil_score_huge.so", TPORT_CANDIDATE_ACTIVE, NULL);
    expect("libevil_devices_negative.so", TPORT_CANDIDATE_REJECTED, "device_count returned -3");
    expect("libevil_devices_huge.so", TPORT_CANDIDATE_ACTIVE, NULL);
    if (find_candidate("libevil_devices_huge.so", &r))
        CHECK(r.n_devices == TPORT_REPORT_MAX_DEVICES, "%d devices stored for 1<<30", r.n_devices);
    expect("libevil_device_garbage.so", TPORT_CANDIDATE_ACTIVE, NULL);
    if (find_candidate("libevil_device_garbage.so", &r) && r.n_devices == 3) {
        CHECK(strlen(r.devices[0].name) == 63 && r.devices[0].name[0] == '?', "garbage name '%s'", r.devices[0].name);
        CHECK(strstr(r.devices[1].description, "device_info failed"), "device 1: '%s'", r.devices[1].description);
        CHECK(r.devices[0].struct_size == sizeof(tport_device_info), "struct_size %u kept", r.devices[0].struct_size);
    }
    expect("libevil_null_state.so", TPORT_CANDIDATE_ACTIVE, NULL); /* a NULL state is allowed */
    const tport_active_backend *ns = tport_registry_find("nullstate");
    CHECK(ns && ns->state == NULL && ns->n_devices == 1, "nullstate not active with its NULL state");
    expect("libevil_init_12345.so", TPORT_CANDIDATE_REJECTED, "init failed (unknown status 12345): init says 12345");
    expect("libevil_host_abuse.so", TPORT_CANDIDATE_ACTIVE, NULL); /* else the reason names the service */
    expect("libevil_data_entry.so", TPORT_CANDIDATE_REJECTED, "is not a function");
    report_is_sane();
    cpu_still_works();
    tport_registry_shutdown();
}

/* x + y on whatever backend the scheduler picks; returns the status and
 * checks the values when it succeeds. */
static tport_status run_add(const tport_compute_params *params, bool with_mul_mat) {
    tport_ctx *ctx = tport_ctx_new(1u << 20);
    tport_tensor *x = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, 8, 2);
    tport_tensor *y = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, 8, 2);
    static float xd[16], yd[16];
    for (int i = 0; i < 16; i++) {
        xd[i] = (float)i;
        yd[i] = 0.5f * (float)i;
    }
    tport_tensor_set_data(x, xd);
    tport_tensor_set_data(y, yd);
    tport_tensor *z = tport_add(ctx, x, y);
    if (with_mul_mat)
        z = tport_mul_mat(ctx, x, z); /* [2 x 2]: dot products of rows */
    tport_graph *g = tport_graph_new(ctx);
    CHECK(tport_graph_add(g, z) == TPORT_STATUS_OK, "graph: %s", tport_last_error());
    tport_status st = tport_graph_compute(g, params);
    if (st == TPORT_STATUS_OK) {
        const float *zd = tport_tensor_data(z);
        if (!with_mul_mat) {
            for (int i = 0; i < 16; i++)
                CHECK(zd[i] == 1.5f * (float)i, "z[%d] = %g", i, zd[i]);
        } else {
            /* z[i,j] = sum_k x[k,i] * 1.5 x[k,j] */
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    double want = 0;
                    for (int k = 0; k < 8; k++)
                        want += 1.5 * xd[i * 8 + k] * xd[j * 8 + k];
                    CHECK(zd[j * 2 + i] == (float)want, "mul_mat[%d,%d] = %g, want %g", i, j, zd[j * 2 + i], want);
                }
        }
    }
    tport_graph_free(g);
    tport_ctx_free(ctx);
    return st;
}

static void scenario_compute_failures(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH", EVIL("libevil_compute_fails.so") ":" EVIL("libevil_compute_12345.so"), 1);
    setenv("TPORT_BACKEND", "liar,liar2", 1);
    tport_status st = run_add(NULL, false);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", tport_last_error());
    CHECK(st == TPORT_STATUS_INVALID_ARGUMENT, "liar's compute failure gave %s", tport_status_name(st));
    CHECK(strstr(msg, "liar") && strstr(msg, "evil compute failure"), "message '%.200s' lacks the plug-in's words", msg);
    CHECK(strlen(msg) < 1024, "a 100 KB plug-in message was stored whole (%zu bytes)", strlen(msg));
    setenv("TPORT_BACKEND", "liar2,liar", 1);
    tport_registry_shutdown();
    st = run_add(NULL, false);
    CHECK(st != TPORT_STATUS_OK, "compute status 12345 was taken for success");
    CHECK(strstr(tport_last_error(), "liar2"), "message '%.200s' does not name the backend", tport_last_error());
    /* every other backend keeps working: the cpu, asked by name */
    tport_compute_params on_cpu = {.n_threads = 1, .backend = "cpu"};
    CHECK(run_add(&on_cpu, true) == TPORT_STATUS_OK, "cpu beside the liars: %s", tport_last_error());
    tport_registry_shutdown();
}

/* ABI 1.3: a plug-in that negotiated 1.2 is never given a 1.3 op (here
 * rope_ext), however eagerly it claims nodes; it is still given the ops
 * it knows (plain rope), which it fails, so it was first in line. */
static tport_status run_rope(bool ext) {
    tport_ctx *ctx = tport_ctx_new(1u << 20);
    tport_tensor *x = tport_new_tensor_3d(ctx, TPORT_TYPE_F32, 4, 1, 2);
    tport_tensor *pos = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, 2);
    static float xd[8] = {1, 0, 0, 1, 1, 0, 0, 1};
    static int32_t pd[2] = {0, 1};
    tport_tensor_set_data(x, xd);
    tport_tensor_set_data(pos, pd);
    tport_params_rope_ext p = {.n_dims = 4, .mode = TPORT_ROPE_NORMAL, .freq_base = 10000.0f, .freq_scale = 1.0f,
                               .attn_factor = 2.0f};
    tport_tensor *y = ext ? tport_rope_ext(ctx, x, pos, NULL, &p) : tport_rope(ctx, x, pos, 4, TPORT_ROPE_NORMAL,
                                                                                  10000.0f, 1.0f);
    tport_graph *g = tport_graph_new(ctx);
    CHECK(tport_graph_add(g, y) == TPORT_STATUS_OK, "graph: %s", tport_last_error());
    tport_status st = tport_graph_compute(g, NULL);
    if (st == TPORT_STATUS_OK && ext) {
        const float *yd = tport_tensor_data(y); /* token 1, pair 0: 2 (cos 1, sin 1) */
        CHECK(fabsf(yd[4] - 2.0f * cosf(1.0f)) < 1e-6f && fabsf(yd[5] - 2.0f * sinf(1.0f)) < 1e-6f,
              "rope_ext beside a 1.2 plug-in: %g %g", yd[4], yd[5]);
    }
    tport_graph_free(g);
    tport_ctx_free(ctx);
    return st;
}

static void scenario_minor_ops(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH", EVIL("libevil_old_minor.so"), 1);
    setenv("TPORT_BACKEND", "old12,cpu", 1);
    const tport_active_backend *old = tport_registry_find("old12");
    CHECK(old && old->abi_minor == 2, "old12 negotiated minor %u", old ? old->abi_minor : 99u);
    CHECK(run_rope(true) == TPORT_STATUS_OK, "rope_ext was given to a 1.2 plug-in: %s", tport_last_error());
    CHECK(run_rope(false) != TPORT_STATUS_OK && strstr(tport_last_error(), "old12"),
          "plain rope did not reach old12 first: %s", tport_last_error());
    tport_registry_shutdown();
}

static void scenario_cpu_shadowed_by_nothing(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH", EVIL("libevil_cpu_nothing.so"), 1);
    expect("libevil_cpu_nothing.so", TPORT_CANDIDATE_ACTIVE, NULL);
    expect("(embedded)", TPORT_CANDIDATE_SHADOWED, "kept as fallback");
    tport_candidate_report r;
    CHECK(find_candidate("(embedded)", &r) && r.fallback, "embedded cpu not marked as fallback");
    const tport_active_backend *first = tport_registry_find("cpu");
    CHECK(first && first->path && strstr(first->path, "libevil_cpu_nothing.so"), "the plug-in is not the cpu");
    int n = tport_registry_active_count();
    const tport_active_backend *last = n > 0 ? tport_registry_active(n - 1) : NULL;
    CHECK(last && !last->path && last->fallback, "the embedded cpu is not last in the active list");
    tport_compute_params p = {.n_threads = 1};
    CHECK(run_add(&p, true) == TPORT_STATUS_OK, "graph behind a do-nothing cpu: %s", tport_last_error());
    tport_registry_shutdown();

    /* a "cpu" plug-in that does handle the basics keeps the plain shadowing */
    setenv("TPORT_BACKEND_PATH", FAKE_SPECIAL_DIR "/libfake_cpu_high.so", 1);
    CHECK(find_candidate("(embedded)", &r) && !r.fallback && r.status == TPORT_CANDIDATE_SHADOWED,
          "embedded kept although the winner adds: %s", r.reason);
    CHECK(run_add(&p, false) == TPORT_STATUS_OK, "add on the high cpu: %s", tport_last_error());
    tport_status st = run_add(&p, true);
    CHECK(st != TPORT_STATUS_OK && strstr(tport_last_error(), "mul_mat"), "mul_mat: %s, '%s'", tport_status_name(st),
          tport_last_error());
    tport_registry_shutdown();
}

static void scenario_probe(void) {
    reset_env();
    setenv("TPORT_PROBE_TIMEOUT", "1", 1);
    setenv("TPORT_BACKEND_PATH",
           EVIL("libevil_hang_entry.so") ":" EVIL("libevil_hang_init.so") ":" EVIL("libevil_exit_init.so") ":" EVIL(
               "libevil_data_entry.so") ":" FAKE_DIR "/libfake_good.so",
           1);
    tport_registry_set_probe(true);
    time_t t0 = time(NULL);
    expect("libevil_hang_entry.so", TPORT_CANDIDATE_REJECTED, "hung in probe during entry");
    expect("libevil_hang_init.so", TPORT_CANDIDATE_REJECTED, "hung in probe during init");
    expect("libevil_exit_init.so", TPORT_CANDIDATE_REJECTED, "during init (a plug-in must not exit)");
    expect("libevil_data_entry.so", TPORT_CANDIDATE_REJECTED, "is not a function");
    expect("libfake_good.so", TPORT_CANDIDATE_ACTIVE, NULL);
    CHECK(time(NULL) - t0 < 10, "probing took %lld s", (long long)(time(NULL) - t0));
    cpu_still_works();
    tport_registry_set_probe(false);
    tport_registry_shutdown();
}

/* Writes `n` bytes of `src` to `dst`, patching the ELF machine field. */
static bool write_foreign_elf(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb");
    if (!in)
        return false;
    FILE *out = fopen(dst, "wb");
    if (!out) {
        fclose(in);
        return false;
    }
    unsigned char buf[4096];
    size_t n, total = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (total == 0 && n > 20) {
#if defined(__x86_64__)
            buf[18] = 183; /* EM_AARCH64 */
#else
            buf[18] = 62; /* EM_X86_64 */
#endif
            buf[19] = 0;
        }
        fwrite(buf, 1, n, out);
        total += n;
    }
    fclose(in);
    return fclose(out) == 0 && total > 0;
}

#define CROWD EVIL_SCRATCH_DIR "/crowd"

static void make_scratch(void) {
    mkdir(EVIL_SCRATCH_DIR, 0755);
    /* a FIFO named like a plug-in, named directly and inside a folder */
    unlink(EVIL_SCRATCH_DIR "/fifo.so");
    CHECK(mkfifo(EVIL_SCRATCH_DIR "/fifo.so", 0644) == 0, "mkfifo: %s", strerror(errno));
    mkdir(EVIL_SCRATCH_DIR "/dir.so", 0755);
    FILE *f = fopen(EVIL_SCRATCH_DIR "/notelf.so", "w");
    if (f) {
        fputs("\x7f" "ELF but not really\n", f);
        fclose(f);
    }
    CHECK(write_foreign_elf(FAKE_DIR "/libfake_good.so", EVIL_SCRATCH_DIR "/foreign.so"), "foreign ELF");
    unlink(EVIL_SCRATCH_DIR "/link.so");
    CHECK(symlink(FAKE_DIR "/libfake_good.so", EVIL_SCRATCH_DIR "/link.so") == 0, "symlink: %s", strerror(errno));
    /* a folder of 2000 files and 100 folders that are not plug-ins */
    mkdir(CROWD, 0755);
    char p[PATH_MAX];
    for (int i = 0; i < 2000; i++) {
        snprintf(p, sizeof p, CROWD "/file%04d.txt", i);
        int fd = open(p, O_CREAT | O_WRONLY, 0644);
        if (fd >= 0)
            close(fd);
    }
    for (int i = 0; i < 100; i++) {
        snprintf(p, sizeof p, CROWD "/sub%03d%s", i, i % 2 ? ".so" : "");
        mkdir(p, 0755);
    }
    unlink(CROWD "/pipe.so");
    mkfifo(CROWD "/pipe.so", 0644);
}

static void scenario_search_path(void) {
    reset_env();
    make_scratch();
    size_t cap = 2000 * 64 + 8192;
    char *list = malloc(cap), *w = list;
    if (!list)
        return;
    w += snprintf(w, cap, "%s/libfake_good.so:%s/link.so:%s/libfake_good.so:%s/fifo.so:%s/dir.so:%s:%s/notelf.so:%s/foreign.so",
                  FAKE_DIR, EVIL_SCRATCH_DIR, FAKE_DIR, EVIL_SCRATCH_DIR, EVIL_SCRATCH_DIR, CROWD, EVIL_SCRATCH_DIR,
                  EVIL_SCRATCH_DIR);
    for (int i = 0; i < 2000; i++)
        w += snprintf(w, cap - (size_t)(w - list), ":/nonexistent/tport-%d/lib%d.so", i, i);
    *w++ = ':';
    for (int i = 0; i < 5000; i++) /* longer than PATH_MAX */
        *w++ = 'L';
    *w = '\0';
    setenv("TPORT_BACKEND_PATH", list, 1);
    free(list);

    time_t t0 = time(NULL);
    tport_registry_init();
    CHECK(time(NULL) - t0 < 10, "discovery took %lld s", (long long)(time(NULL) - t0));
    int n = tport_registry_candidate_count(), fakes = 0, missing = 0, from_crowd = 0;
    for (int i = 0; i < n; i++) {
        tport_candidate_report r;
        tport_registry_candidate(i, &r);
        fakes += !strcmp(r.name, "fake");
        missing += strstr(r.path, "/nonexistent/") && strstr(r.reason, "no such file");
        from_crowd += strstr(r.path, "/crowd/") != NULL;
    }
    CHECK(fakes == 1, "the same file (twice by name, once by symlink) gave %d candidates", fakes);
    CHECK(missing == 2000, "%d of 2000 missing entries reported as missing", missing);
    CHECK(from_crowd == 0, "%d candidates from a folder without plug-ins", from_crowd);
    expect("libfake_good.so", TPORT_CANDIDATE_ACTIVE, NULL);
    expect("/fifo.so", TPORT_CANDIDATE_REJECTED, "not a regular file (a FIFO)");
    expect("/notelf.so", TPORT_CANDIDATE_REJECTED, "not loadable");
    expect("/foreign.so", TPORT_CANDIDATE_REJECTED, "not loadable");
    report_is_sane();
    cpu_still_works();
    tport_registry_shutdown();

    /* tport_backend_load on a FIFO must not block either */
    CHECK(tport_backend_load(EVIL_SCRATCH_DIR "/fifo.so") != TPORT_STATUS_OK, "a FIFO loaded");
    CHECK(strstr(tport_last_error(), "FIFO"), "FIFO message: %s", tport_last_error());
    CHECK(tport_backend_load(EVIL_SCRATCH_DIR "/dir.so") != TPORT_STATUS_OK, "a folder loaded");
    tport_registry_shutdown();
}

static void scenario_preference_names(void) {
    reset_env();
    setenv("TPORT_BACKEND_PATH", FAKE_DIR "/libfake_good.so", 1);
    setenv("TPORT_BACKEND", "nosuch,,cpu, cpu ,, ,fake,nosuch,", 1);
    CHECK(index_of("cpu") == 0 && index_of("fake") == 1, "cpu at %d, fake at %d", index_of("cpu"), index_of("fake"));
    tport_registry_shutdown();
    char big[20000];
    size_t k = 0;
    while (k + 8 < sizeof big) {
        memcpy(big + k, "zz,,,,,,", 8);
        k += 8;
    }
    big[k] = '\0';
    setenv("TPORT_BACKEND", big, 1);
    CHECK(index_of("fake") >= 0 && index_of("cpu") >= 0, "a huge TPORT_BACKEND lost backends");
    tport_registry_shutdown();
}

static void scenario_load_unload_loop(void) {
    reset_env();
    for (int i = 0; i < 50; i++) {
        tport_status st = tport_backend_load(FAKE_DIR "/libfake_good.so");
        CHECK(st == TPORT_STATUS_OK, "cycle %d: %s", i, tport_last_error());
        CHECK(tport_backend_load(EVIL("libevil_host_abuse.so")) == TPORT_STATUS_OK, "cycle %d: %s", i,
              tport_last_error());
        CHECK(index_of("fake") >= 0 && index_of("abuser") >= 0, "cycle %d: not active", i);
        tport_registry_shutdown();
    }
}

int main(void) {
    alarm(240); /* a hang anywhere here is a failure, not a stuck CI job */
    scenario_tables();
    scenario_compute_failures();
    scenario_minor_ops();
    scenario_cpu_shadowed_by_nothing();
    scenario_probe();
    scenario_search_path();
    scenario_preference_names();
    scenario_load_unload_loop();
    return test_finish("test_evil_plugins");
}
