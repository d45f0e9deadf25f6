/* Out-of-process plug-ins through the registry: each crashy plug-in
 * (crashy_backend.c) runs isolated and misbehaves at a known call.  For
 * every case the host must survive, say in one line what happened, answer
 * TPORT_STATUS_DEVICE_LOST from then on, and leave nothing behind: no
 * child process (not even a zombie), no shared-memory mapping, no extra
 * descriptor.  Also: a good isolated plug-in computes right through the
 * shared regions (views that alias included), crashes while loading or in
 * init reject the plug-in, a helper of another protocol version is
 * refused with both versions named, the helper's environment and
 * descriptors are the documented ones, and the helper dies with its host. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../test_util.h"
#include "registry/registry.h"
#include "registry_expect.h"
#include "tport/tport.h"

/* The file of crashy plug-in `name`, and its base name. */
static const char *CRASHY(const char *name) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/lib%s.so", CRASHY_DIR, name);
    return buf;
}
static const char *lib_of(const char *name) {
    static char buf[128];
    snprintf(buf, sizeof buf, "lib%s.so", name);
    return buf;
}

static int count_dir(const char *path, bool own) {
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return own ? n - 1 : n; /* own: opendir's descriptor is listed too */
}

static int count_fds(void) {
    return count_dir("/proc/self/fd", true);
}

/* True if this process has any child, running or zombie (not reaped). */
static bool has_children(void) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static bool shm_mapped(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    while (fgets(line, sizeof line, f))
        found |= strstr(line, "tport-isolate") != NULL;
    fclose(f);
    return found;
}

/* The pid of our one child helper (first one listed), or -1. */
static pid_t helper_pid(void) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "r");
    int pid = -1;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = -1;
        fclose(f);
    }
    return pid;
}

/* stderr into a file for the duration of a case. */
static int saved_stderr = -1;
static char capture_path[] = "/tmp/tport-isolate-test-XXXXXX";
static int capture_fd = -1;

static void capture_begin(void) {
    fflush(stderr);
    capture_fd = mkstemp(capture_path);
    saved_stderr = fcntl(2, F_DUPFD_CLOEXEC, 10);
    dup2(capture_fd, 2);
}

static void capture_end(char *out, size_t cap) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    ssize_t n = pread(capture_fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(capture_fd);
    unlink(capture_path);
    strcpy(capture_path + strlen(capture_path) - 6, "XXXXXX");
    fputs(out, stderr); /* still shown in the test log */
}

static void setup(const char *plugin, const char *isolate) {
    tport_registry_shutdown();
    setenv("TPORT_BACKEND_HOST", HELPER_PATH, 1);
    setenv("TPORT_BACKEND_PATH", plugin, 1);
    setenv("TPORT_BACKEND_ISOLATE", isolate, 1);
    tport_registry_init();
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* y = a + b over n floats, run on `backend` (NULL: the best). */
typedef struct add_graph {
    tport_ctx *ctx;
    tport_tensor *a, *b, *y;
    tport_graph *g;
} add_graph;

static add_graph add_new(int64_t n) {
    add_graph t;
    t.ctx = tport_ctx_new(1 << 20);
    t.a = tport_new_tensor_1d(t.ctx, TPORT_TYPE_F32, n);
    t.b = tport_new_tensor_1d(t.ctx, TPORT_TYPE_F32, n);
    float *a = tport_tensor_data(t.a), *b = tport_tensor_data(t.b);
    for (int64_t i = 0; i < n; i++) {
        a[i] = (float)i;
        b[i] = 0.5f * (float)(i % 7);
    }
    t.y = tport_add(t.ctx, t.a, t.b);
    t.g = tport_graph_new(t.ctx);
    tport_graph_add(t.g, t.y);
    return t;
}

static bool add_right(const add_graph *t) {
    const float *y = tport_tensor_data(t->y);
    int64_t n = tport_tensor_nelements(t->y);
    for (int64_t i = 0; y && i < n; i++)
        if (y[i] != (float)i + 0.5f * (float)(i % 7))
            return false;
    return y != NULL;
}

static tport_status add_run(add_graph *t, const char *backend) {
    float *y = tport_tensor_data(t->y);
    if (y)
        memset(y, 0xff, (size_t)tport_tensor_nbytes(t->y)); /* no stale right answer */
    tport_compute_params p = {.n_threads = 1, .backend = backend};
    return tport_graph_compute(t->g, &p);
}

static void add_free(add_graph *t) {
    tport_graph_free(t->g);
    tport_ctx_free(t->ctx);
}

static void leaves_nothing(const char *what, int fds_before) {
    CHECK(!has_children(), "%s: a child process (or zombie) is left", what);
    CHECK(!shm_mapped(), "%s: a shared-memory region is still mapped", what);
    CHECK(count_fds() == fds_before, "%s: %d descriptors, %d before", what, count_fds(), fds_before);
}

/* A plug-in that misbehaves at its 3rd compute call. */
static void compute_fault(const char *file, const char *cause, const char *timeout) {
    if (timeout)
        setenv("TPORT_COMPUTE_TIMEOUT", timeout, 1);
    else
        unsetenv("TPORT_COMPUTE_TIMEOUT");
    tport_registry_shutdown();
    const int fds = count_fds();
    char log[8192];
    capture_begin();
    setup(CRASHY(file), "crashy");
    const tport_active_backend *b = tport_registry_find("crashy");
    CHECK(b != NULL, "%s: not active", file);
    tport_candidate_report r;
    CHECK(find_candidate(lib_of(file), &r) && r.isolated, "%s: not reported as isolated", file);
    add_graph t = add_new(256);
    for (int call = 1; b && call <= 2; call++) {
        tport_status st = add_run(&t, "crashy");
        CHECK(st == TPORT_STATUS_OK && add_right(&t), "%s: call %d: %s", file, call, tport_last_error());
    }
    tport_status st = add_run(&t, "crashy");
    CHECK(st == TPORT_STATUS_DEVICE_LOST, "%s: 3rd call gave %d (%s)", file, (int)st, tport_last_error());
    char want[200];
    snprintf(want, sizeof want, "backend crashy lost: %s during compute of split 0", cause);
    CHECK(!strcmp(tport_last_error(), want), "%s: error '%s', expected '%s'", file, tport_last_error(), want);
    CHECK(!has_children(), "%s: the helper was not reaped", file);
    /* every later call: DEVICE_LOST at once */
    if (b) {
        long long t0 = now_ms();
        tport_graph_view v = {.struct_size = sizeof v, .n_threads = 1};
        CHECK(b->api->compute(b->state, 0, &v) == TPORT_STATUS_DEVICE_LOST, "%s: compute after loss", file);
        tport_buffer buf = 0;
        void *hp = NULL;
        CHECK(b->api->buffer_alloc(b->state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_COMPUTE, 64, &buf, &hp) ==
                  TPORT_STATUS_DEVICE_LOST, "%s: buffer_alloc after loss", file);
        CHECK(now_ms() - t0 < 200, "%s: calls after the loss took %lld ms", file, now_ms() - t0);
    }
    /* the other backends finish the job */
    st = add_run(&t, NULL);
    CHECK(st == TPORT_STATUS_OK && add_right(&t), "%s: the cpu did not take over: %s", file, tport_last_error());
    add_free(&t);
    tport_registry_shutdown();
    capture_end(log, sizeof log);
    /* the scheduler's error is the one report; the proxy adds no line */
    CHECK(!strstr(log, "lost:"), "%s: a second report of the loss: %s", file, log);
    leaves_nothing(file, fds);
    unsetenv("TPORT_COMPUTE_TIMEOUT");
}

/* A good isolated plug-in: right answers, strided and aliasing views
 * staged correctly, buffers of the 1.1 path, clean shutdown. */
static void good_plugin(void) {
    tport_registry_shutdown();
    const int fds = count_fds();
    setup(CRASHY("crashy_never"), "all");
    const tport_active_backend *b = tport_registry_find("crashy");
    CHECK(b && b->abi_minor == TPORT_ABI_MINOR, "isolated backend missing or not 1.1");
    add_graph t = add_new(1000);
    for (int i = 0; i < 5; i++)
        CHECK(add_run(&t, "crashy") == TPORT_STATUS_OK && add_right(&t), "good: run %d: %s", i, tport_last_error());
    CHECK(!strcmp(tport_graph_node_backend(t.g, 0), "crashy"), "good: ran on %s", tport_graph_node_backend(t.g, 0));
    add_free(&t);
    CHECK(shm_mapped(), "good: no shared region while running");
    /* chained adds into one buffer: y1 = a + b; y2 = y1 + a (reads y1) */
    {
        tport_ctx *ctx = tport_ctx_new(1 << 20);
        tport_tensor *a = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, 16, 4);
        float *ad = tport_tensor_data(a);
        for (int i = 0; i < 64; i++)
            ad[i] = (float)i;
        tport_tensor *y1 = tport_add(ctx, a, a);
        tport_tensor *y2 = tport_add(ctx, y1, a);
        tport_graph *g = tport_graph_new(ctx);
        tport_graph_add(g, y2);
        tport_compute_params p = {.n_threads = 1, .backend = "crashy"};
        CHECK(tport_graph_compute(g, &p) == TPORT_STATUS_OK, "chain: %s", tport_last_error());
        const float *y = tport_tensor_data(y2);
        bool ok = y != NULL;
        for (int i = 0; ok && i < 64; i++)
            ok = y[i] == 3.0f * (float)i;
        CHECK(ok, "chain: wrong result");
        tport_graph_free(g);
        tport_ctx_free(ctx);
    }
    /* the 1.1 slots on the proxy: a buffer, upload, fill, copy, download */
    if (b) {
        const tport_backend_api *api = b->api;
        tport_device_info info = {.struct_size = sizeof info};
        CHECK(api->device_info(b->state, 0, &info) == TPORT_STATUS_OK &&
                  (info.caps & TPORT_DEVICE_CAP_DEVICE_MEMORY), "device memory cap missing");
        tport_buffer buf = 0;
        void *hp = (void *)1;
        CHECK(api->buffer_alloc(b->state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, 4096, &buf, &hp) ==
                  TPORT_STATUS_OK && buf && !hp, "buffer_alloc");
        float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
        tport_ticket tk = 7;
        CHECK(api->tensor_write(b->state, buf, 64, NULL, in, sizeof in, &tk) == TPORT_STATUS_OK && tk == 0, "write");
        CHECK(api->buffer_copy(b->state, buf, 1024, buf, 64, sizeof in, NULL) == TPORT_STATUS_OK, "copy");
        CHECK(api->buffer_fill(b->state, buf, 1024, 4, 0, NULL) == TPORT_STATUS_OK, "fill");
        CHECK(api->tensor_read(b->state, buf, 1024, NULL, out, sizeof out, NULL) == TPORT_STATUS_OK, "read");
        CHECK(out[0] == 0 && out[1] == 2 && out[7] == 8, "round trip: %g %g %g", out[0], out[1], out[7]);
        CHECK(api->tensor_read(b->state, buf, 4090, NULL, out, sizeof out, NULL) == TPORT_STATUS_INVALID_ARGUMENT,
              "a read past the end was allowed");
        CHECK(api->tensor_read(b->state, buf + 99, 0, NULL, out, 4, NULL) == TPORT_STATUS_INVALID_ARGUMENT,
              "a foreign handle was accepted");
        /* a graph over the buffer: y = x + x with both in device memory */
        tport_tensor_view tv[2];
        for (int i = 0; i < 2; i++)
            tv[i] = (tport_tensor_view){.struct_size = sizeof tv[i], .type = TPORT_TYPE_F32, .src = {-1, -1, -1, -1}, .src_more = {-1, -1},
                                        .ne = {8, 1, 1, 1}, .nb = {4, 32, 32, 32}, .name = "x", .buffer = buf,
                                        .offset = 64};
        tv[1].op = TPORT_OP_ADD;
        tv[1].src[0] = tv[1].src[1] = 0;
        tv[1].offset = 2048;
        const tport_tensor_view *ptrs[2] = {&tv[0], &tv[1]};
        int32_t node = 1;
        tport_graph_view v = {.struct_size = sizeof v, .n_tensors = 2, .tensors = ptrs, .n_nodes = 1, .nodes = &node,
                              .n_threads = 1, .graph_key = 1, .bind_key = 1};
        tport_status st = api->compute(b->state, 0, &v);
        CHECK(st == TPORT_STATUS_OK, "device-memory compute: %s", tport_last_error());
        CHECK(api->tensor_read(b->state, buf, 2048, NULL, out, sizeof out, NULL) == TPORT_STATUS_OK &&
                  out[0] == 2 && out[7] == 16, "device-memory compute result %g %g", out[0], out[7]);
        tv[1].offset = 4096 - 16; /* the result would end past the buffer */
        CHECK(api->compute(b->state, 0, &v) == TPORT_STATUS_INVALID_ARGUMENT, "out-of-buffer tensor accepted");
        api->buffer_free(b->state, buf);
    }
    /* a weights buffer written whole from a file mapping shares the file */
    if (b) {
        const tport_backend_api *api = b->api;
        char path[] = "/tmp/tport-isolate-weights-XXXXXX";
        int fd = mkstemp(path);
        float w[1024];
        for (int i = 0; i < 1024; i++)
            w[i] = (float)i;
        CHECK(fd >= 0 && write(fd, w, sizeof w) == (ssize_t)sizeof w, "temp file");
        const float *map = mmap(NULL, sizeof w, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        tport_buffer buf = 0;
        void *hp = NULL;
        CHECK(map != MAP_FAILED && api->buffer_alloc(b->state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, sizeof w,
                                                     &buf, &hp) == TPORT_STATUS_OK, "weights buffer");
        CHECK(api->tensor_write(b->state, buf, 0, NULL, map, sizeof w, NULL) == TPORT_STATUS_OK, "weights upload");
        munmap((void *)map, sizeof w);
        unlink(path);
        char maps[64], line[512];
        snprintf(maps, sizeof maps, "/proc/%d/maps", (int)helper_pid());
        FILE *f = fopen(maps, "r");
        bool shared = false;
        while (f && fgets(line, sizeof line, f))
            shared |= strstr(line, path + 5) != NULL;
        if (f)
            fclose(f);
        CHECK(shared, "the helper does not map the weights' file");
        float out[4] = {0};
        CHECK(api->tensor_read(b->state, buf, 400, NULL, out, sizeof out, NULL) == TPORT_STATUS_OK && out[0] == 100 &&
                  out[3] == 103, "read from the file's pages: %g %g", out[0], out[3]);
        float two[2] = {-1, -2}; /* written again: shared memory, the other bytes kept */
        CHECK(api->tensor_write(b->state, buf, 8, NULL, two, sizeof two, NULL) == TPORT_STATUS_OK, "rewrite");
        CHECK(api->tensor_read(b->state, buf, 0, NULL, out, sizeof out, NULL) == TPORT_STATUS_OK && out[0] == 0 &&
                  out[1] == 1 && out[2] == -1 && out[3] == -2, "after the rewrite: %g %g %g %g", out[0], out[1],
              out[2], out[3]);
        api->buffer_free(b->state, buf);
    }
    /* what the helper got: the documented descriptors and environment */
    pid_t hp = helper_pid();
    CHECK(hp > 0, "no helper process");
    if (hp > 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd", (int)hp);
        int n = count_dir(path, false);
        CHECK(n == 4, "the helper has %d descriptors (0, 1, 2 and the socket expected)", n);
        snprintf(path, sizeof path, "/proc/%d/environ", (int)hp);
        FILE *f = fopen(path, "r");
        char env[16384];
        size_t len = f ? fread(env, 1, sizeof env - 1, f) : 0;
        if (f)
            fclose(f);
        env[len] = '\0';
        bool secret = false, log = false;
        for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
            secret |= !strncmp(env + i, "ISOLATE_TEST_SECRET=", 20);
            log |= !strncmp(env + i, "TPORT_LOG=", 10);
        }
        CHECK(!secret, "the helper inherited a variable outside the allow-list");
        CHECK(log, "the helper lost TPORT_LOG (on the allow-list)");
    }
    tport_registry_shutdown();
    leaves_nothing("good", fds);
}

/* Crashes before the plug-in is usable reject it; others keep working. */
static void load_fault(const char *file, const char *part1, const char *part2) {
    tport_registry_shutdown();
    const int fds = count_fds();
    char log[8192];
    capture_begin();
    setup(CRASHY(file), "all");
    expect(lib_of(file), TPORT_CANDIDATE_REJECTED, part1);
    expect(lib_of(file), TPORT_CANDIDATE_REJECTED, part2);
    CHECK(tport_registry_find("cpu") != NULL, "%s: cpu gone", file);
    tport_registry_shutdown();
    capture_end(log, sizeof log);
    CHECK(strstr(log, "tport: backend ") && strstr(log, part1), "%s: no line naming '%s'", file, part1);
    leaves_nothing(file, fds);
}

/* A crash in supports_op loses the device; the node runs elsewhere. */
static void supports_fault(void) {
    tport_registry_shutdown();
    const int fds = count_fds();
    char log[8192];
    capture_begin();
    setup(CRASHY("crashy_supports_segv"), "crashy");
    add_graph t = add_new(64);
    CHECK(add_run(&t, NULL) == TPORT_STATUS_OK && add_right(&t), "supports: %s", tport_last_error());
    CHECK(!strcmp(tport_graph_node_backend(t.g, 0), "cpu"), "supports: ran on %s", tport_graph_node_backend(t.g, 0));
    add_free(&t);
    tport_registry_shutdown();
    capture_end(log, sizeof log);
    CHECK(strstr(log, "tport: backend crashy lost: killed by signal 11 (SIGSEGV) during supports_op") != NULL,
          "supports: line missing");
    leaves_nothing("supports", fds);
}

static void version_mismatch(void) {
    tport_registry_shutdown();
    const int fds = count_fds();
    char log[8192];
    capture_begin();
    setup(CRASHY("crashy_never"), "all");
    tport_registry_shutdown();
    setenv("TPORT_BACKEND_HOST", HELPER_V99_PATH, 1);
    setenv("TPORT_BACKEND_PATH", CRASHY("crashy_never"), 1);
    tport_registry_init();
    expect("libcrashy_never.so", TPORT_CANDIDATE_REJECTED, "isolation protocol 99, this host speaks 2");
    expect("libcrashy_never.so", TPORT_CANDIDATE_REJECTED, "the host speaks isolation protocol 2, this helper speaks 99");
    tport_registry_shutdown();
    capture_end(log, sizeof log);
    CHECK(strstr(log, "tport: backend libcrashy_never.so refused: the helper speaks isolation protocol 99") != NULL,
          "version: no refusal line");
    leaves_nothing("version", fds);
}

/* A helper whose replies are malformed: refused while loading, lost after. */
static void evil_helper(int mode, bool loads, const char *part) {
    tport_registry_shutdown();
    const int fds = count_fds();
    char log[8192], m[8];
    snprintf(m, sizeof m, "%d", mode);
    setenv("ISO_EVIL_MODE", m, 1);
    setenv("TPORT_ISOLATE_ENV", "ISO_EVIL_MODE", 1);
    capture_begin();
    setenv("TPORT_BACKEND_HOST", HELPER_EVIL_PATH, 1);
    setenv("TPORT_BACKEND_PATH", CRASHY("crashy_never"), 1);
    setenv("TPORT_BACKEND_ISOLATE", "all", 1);
    tport_registry_init();
    if (!loads) {
        expect("libcrashy_never.so", TPORT_CANDIDATE_REJECTED, part);
    } else {
        CHECK(tport_registry_find("evil") != NULL, "evil %d: not active", mode);
        add_graph t = add_new(64);
        CHECK(add_run(&t, NULL) == TPORT_STATUS_OK && add_right(&t), "evil %d: %s", mode, tport_last_error());
        CHECK(!strcmp(tport_graph_node_backend(t.g, 0), "cpu"), "evil %d: ran on %s", mode,
              tport_graph_node_backend(t.g, 0));
        add_free(&t);
    }
    tport_registry_shutdown();
    capture_end(log, sizeof log);
    if (loads)
        CHECK(strstr(log, "tport: backend evil lost: ") && strstr(log, part), "evil %d: no line with '%s'", mode, part);
    leaves_nothing("evil helper", fds);
    unsetenv("ISO_EVIL_MODE");
    unsetenv("TPORT_ISOLATE_ENV");
}

/* The helper ends when its host is killed. */
static void host_death(void) {
    int pfd[2];
    CHECK(pipe(pfd) == 0, "pipe");
    pid_t host = fork();
    if (host == 0) {
        close(pfd[0]);
        setup(CRASHY("crashy_never"), "all");
        int helper = helper_pid();
        if (write(pfd[1], &helper, sizeof helper) != sizeof helper)
            _exit(1);
        for (;;)
            pause();
    }
    close(pfd[1]);
    int helper = -1;
    CHECK(read(pfd[0], &helper, sizeof helper) == sizeof helper && helper > 0, "no helper pid from the host");
    close(pfd[0]);
    kill(host, SIGKILL);
    waitpid(host, NULL, 0);
    bool gone = false;
    for (int i = 0; i < 200 && helper > 0 && !gone; i++) {
        char path[64], state = '?';
        snprintf(path, sizeof path, "/proc/%d/stat", helper);
        FILE *f = fopen(path, "r");
        if (!f) {
            gone = true;
            break;
        }
        int pid;
        char comm[64];
        if (fscanf(f, "%d %63s %c", &pid, comm, &state) == 3 && (state == 'Z' || state == 'X'))
            gone = true;
        fclose(f);
        usleep(10000);
    }
    CHECK(gone, "the helper %d outlived its host", helper);
}

int main(void) {
    setenv("TPORT_LOG", "warn", 1);
    setenv("ISOLATE_TEST_SECRET", "1", 1);
    unsetenv("TPORT_BACKEND");
    good_plugin();
    compute_fault("crashy_segv", "killed by signal 11 (SIGSEGV)", NULL);
    compute_fault("crashy_abort", "killed by signal 6 (SIGABRT)", NULL);
    compute_fault("crashy_ill", "killed by signal 4 (SIGILL)", NULL);
    compute_fault("crashy_exit", "exited with status 3 (a plug-in must not exit)", NULL);
    compute_fault("crashy_garbage", "malformed reply (bad framing), killed", NULL);
    compute_fault("crashy_hang", "no answer within 1 s (TPORT_COMPUTE_TIMEOUT), killed", "1");
    load_fault("crashy_init_abort", "killed by signal 6 (SIGABRT)", "during init");
    load_fault("crashy_entry_ill", "killed by signal 4 (SIGILL)", "step entry");
    supports_fault();
    version_mismatch();
    evil_helper(1, false, "malformed reply (message type");
    evil_helper(2, false, "malformed load reply");
    evil_helper(3, false, "malformed reply (bad framing)");
    evil_helper(4, false, "malformed reply (bad framing)");
    evil_helper(5, true, "malformed supports_op reply, killed during supports_op");
    evil_helper(6, true, "malformed reply (message type");
    host_death();
    return test_finish("test_isolate");
}
