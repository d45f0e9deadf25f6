/* `tport quantize` / `tport dequantize` end to end through the built tool
 * (TPORT_CLI_PATH): every error exits 2 with one "tport: ..." line, --help
 * and --list-rules work, --rule reaches the historical quantizers (checked
 * against the library), and with ../shared present the tool reproduces
 * every ggml vector of testdata/quant-current byte for byte from
 * input_4x256.f32 with --rows 4, and its decoded values. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_util.h"
#include "tport/tport.h"

static char dir[] = "/tmp/tport-cli-quant-XXXXXX";
static char err_text[4096];

/* Runs `tport <args>`; stdout into out (if not NULL), stderr into
 * err_text; returns the exit status. */
static int run(const char *args, char *out, size_t cap) {
    char cmd[8192], errf[512];
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", TPORT_CLI_PATH, args, errf);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char sink[4096];
    size_t n = 0;
    if (out) {
        n = fread(out, 1, cap - 1, p);
        out[n] = 0;
    } else {
        while (fread(sink, 1, sizeof sink, p) > 0) {
        }
    }
    const int st = pclose(p);
    FILE *e = fopen(errf, "rb");
    size_t ne = e ? fread(err_text, 1, sizeof err_text - 1, e) : 0;
    err_text[ne] = 0;
    if (e)
        fclose(e);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The failure contract: exit 2 and exactly one line starting "tport: ". */
static void expect_fail(const char *args) {
    const int rc = run(args, NULL, 0);
    const char *nl = strchr(err_text, '\n');
    CHECK(rc == 2, "`tport %s` exited %d, want 2", args, rc);
    CHECK(!strncmp(err_text, "tport: ", 7) && nl && nl[1] == 0, "`tport %s` stderr: [%s]", args, err_text);
}

static long read_file(const char *path, void *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    const size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return (long)n;
}

static void write_file(const char *path, const void *buf, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(buf, 1, n, f) == n, "cannot write %s", path);
    if (f)
        fclose(f);
}

static void check_errors_and_help(void) {
    char out[1 << 16], args[2048], f32[512], odd[512];
    CHECK(run("quantize --help", out, sizeof out) == 0 && strstr(out, "usage: tport quantize"), "quantize --help");
    CHECK(run("dequantize --help", out, sizeof out) == 0 && strstr(out, "usage: tport dequantize"), "--help");

    snprintf(f32, sizeof f32, "%s/ok.f32", dir);
    float x[64];
    for (int i = 0; i < 64; i++)
        x[i] = (float)(i - 30) / 7.0f;
    write_file(f32, x, sizeof x);
    snprintf(odd, sizeof odd, "%s/odd.f32", dir);
    write_file(odd, x, 6); /* not a whole number of f32 values */

    expect_fail("quantize");
    expect_fail("quantize --type");
    expect_fail("quantize --bogus");
    snprintf(args, sizeof args, "quantize --type q4_0 '%s/missing.f32' '%s/o'", dir, dir);
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type no_such_type '%s' '%s/o'", f32, dir);
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type q4_0 --rule amax7 '%s' '%s/o'", f32, dir); /* amax7 is QNT0's */
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type q4_0 '%s' '%s/o'", odd, dir);
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type q4_0 --rows 3 '%s' '%s/o'", f32, dir); /* 64 / 3 */
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type q4_0 --rows 4 '%s' '%s/o'", f32, dir); /* rows of 16 */
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type q4_0 --rows x '%s' '%s/o'", f32, dir);
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type q4_K '%s' '%s/o'", f32, dir); /* 64 < 256 */
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type i32 '%s' '%s/o'", f32, dir);
    expect_fail(args);
    snprintf(args, sizeof args, "quantize --type q4_0 '%s' '%s/no/such/dir/o'", f32, dir);
    expect_fail(args);
    expect_fail("dequantize");
    snprintf(args, sizeof args, "dequantize --type q4_0 '%s' '%s/o'", f32, dir); /* 256 bytes % 18 */
    expect_fail(args);
    snprintf(args, sizeof args, "dequantize --type nope '%s' '%s/o'", f32, dir);
    expect_fail(args);
    snprintf(args, sizeof args, "dequantize --type q4_0 '%s/missing' '%s/o'", dir, dir);
    expect_fail(args);
    expect_fail("quantize --list-rules --type nope");

    static char list[1 << 16];
    CHECK(run("quantize --list-rules", list, sizeof list) == 0, "--list-rules");
    CHECK(strstr(list, "q4_2_qnt0") && strstr(list, "rmse") && strstr(list, "flt-min") &&
              strstr(list, "max-8-trunc") && strstr(list, "ggml-ref"),
          "--list-rules lists the historical rules");
    CHECK(run("quantize --list-rules --type q4_0_qnt0", list, sizeof list) == 0 && strstr(list, "amax7") &&
              strstr(list, "max-8") && strstr(list, "2023-03-11") && !strstr(list, "q4_2_qnt0") &&
              strstr(list, "max-8          [default]") && !strstr(list, "amax7          [default]"),
          "--list-rules --type q4_0_qnt0: [%s]", list);

    /* Every rule of the historical types, through the tool and the library. */
    const char *types[] = {"q4_0_qnt0", "q4_1_qnt0", "q4_2_qnt0", "q4_3_qnt0", "q5_0_qnt0",
                           "q5_1_qnt0", "q8_0_qnt1", "q4_0_qnt1", "q4_1_qnt1"};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const tport_type_id id = (tport_type_id)tport_type_from_name(types[k]);
        for (int r = 0; r < tport_quant_rule_count(id); r++) {
            const char *rule = tport_quant_rule_name(id, r);
            snprintf(args, sizeof args, "quantize --type %s --rule %s --rows 2 '%s' '%s/h.q'", types[k], rule, f32,
                     dir);
            CHECK(run(args, NULL, 0) == 0, "%s: %s", args, err_text);
            uint8_t want[512], got[600];
            CHECK(tport_quantize(id, rule, x, want, 32) == 0 && tport_quantize(id, rule, x + 32, want + tport_row_size(id, 32), 32) == 0,
                  "library %s/%s", types[k], rule);
            snprintf(args, sizeof args, "%s/h.q", dir);
            const long n = read_file(args, got, sizeof got);
            CHECK(n == (long)tport_row_size(id, 64) && memcmp(got, want, (size_t)n) == 0, "%s/%s: tool != library",
                  types[k], rule);
            /* and back */
            snprintf(args, sizeof args, "dequantize --type %s '%s/h.q' '%s/h.f32'", types[k], dir, dir);
            CHECK(run(args, NULL, 0) == 0, "%s", err_text);
            float back[64], lib[64];
            snprintf(args, sizeof args, "%s/h.f32", dir);
            CHECK(read_file(args, back, sizeof back + 4) == (long)sizeof back, "%s/%s decoded size", types[k], rule);
            tport_dequantize(id, want, lib, 64);
            CHECK(memcmp(back, lib, sizeof lib) == 0, "%s/%s: decoded values", types[k], rule);
        }
    }
}

/* The shared ggml vectors, byte for byte. */
static int check_vectors(void) {
    char in[1024], buf[1024], path[256], args[4096];
    if (!test_shared_path("testdata/quant-current/input_4x256.f32", in, sizeof in))
        return 0;
    static const char *types[] = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K",
                                  "q3_K", "q4_K", "q5_K", "q6_K", "q8_K"};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        static uint8_t want[8192], got[8192];
        snprintf(path, sizeof path, "testdata/quant-current/%s.q", types[k]);
        const long nq = test_shared_path(path, buf, sizeof buf) ? read_file(buf, want, sizeof want) : -1;
        CHECK(nq > 0, "%s missing", path);
        snprintf(args, sizeof args, "quantize --type %s --rows 4 '%s' '%s/%s.q'", types[k], in, dir, types[k]);
        CHECK(run(args, NULL, 0) == 0, "%s: %s", args, err_text);
        snprintf(path, sizeof path, "%s/%s.q", dir, types[k]);
        CHECK(read_file(path, got, sizeof got) == nq && memcmp(got, want, (size_t)nq) == 0,
              "%s: the tool's bytes differ from ggml's", types[k]);

        snprintf(path, sizeof path, "testdata/quant-current/%s.deq.f32", types[k]);
        const long nd = test_shared_path(path, buf, sizeof buf) ? read_file(buf, want, sizeof want) : -1;
        CHECK(nd == 4096, "%s", path);
        snprintf(args, sizeof args, "dequantize --type %s '%s/%s.q' '%s/%s.f32'", types[k], dir, types[k], dir,
                 types[k]);
        CHECK(run(args, NULL, 0) == 0, "%s: %s", args, err_text);
        snprintf(path, sizeof path, "%s/%s.f32", dir, types[k]);
        CHECK(read_file(path, got, sizeof got) == nd && memcmp(got, want, (size_t)nd) == 0,
              "%s: the tool's decoded values differ from ggml's", types[k]);
    }
    return 1;
}

int main(void) {
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cannot create a temporary directory\n");
        return 1;
    }
    check_errors_and_help();
    const int had_data = check_vectors();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    if (!had_data && !test_failures)
        test_skip("test_quant_cli_quantize", "../shared/testdata/quant-current absent; vector part not run");
    return test_finish("test_quant_cli_quantize");
}
