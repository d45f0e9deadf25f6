/* IQ4_NL and IQ4_XS: bit-exact with real ggml (vectors in data/iq4, made
 * as data/iq4/README.md says; the input comes from ../shared), and
 * dequantization of hand-built blocks from the public layout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "core/fp16.h"
#include "quant/type_table.h"

static const int8_t kvalues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

static int read_exact(const char *path, void *buf, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    const size_t got = fread(buf, 1, n + 1, f);
    fclose(f);
    return got == n;
}

static void test_hand_built(void) {
    /* IQ4_NL: {f16 d; u8 qs[16]}, element j low nibble, j+16 high nibble */
    uint8_t nl[18];
    const uint16_t d = tport_fp32_to_fp16(0.25f);
    memcpy(nl, &d, 2);
    for (int j = 0; j < 16; j++)
        nl[2 + j] = (uint8_t)(j | (15 - j) << 4);
    float y[256];
    tport_traits(TPORT_TYPE_IQ4_NL)->to_float(nl, y, 32);
    for (int j = 0; j < 16; j++) {
        CHECK(y[j] == 0.25f * kvalues[j], "iq4_nl[%d] = %g", j, (double)y[j]);
        CHECK(y[j + 16] == 0.25f * kvalues[15 - j], "iq4_nl[%d] = %g", j + 16, (double)y[j + 16]);
    }
    /* IQ4_XS: {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]};
     * group g scale = (4 bits of scales_l[g/2] | 2 bits of scales_h) - 32 */
    uint8_t xs[136] = {0};
    const uint16_t d2 = tport_fp32_to_fp16(0.5f);
    memcpy(xs, &d2, 2);
    int ls[8] = {0, 1, 31, 32, 33, 47, 63, 17};
    uint16_t sh = 0;
    for (int g = 0; g < 8; g++) {
        xs[4 + g / 2] = (uint8_t)(xs[4 + g / 2] | (ls[g] & 15) << 4 * (g % 2));
        sh = (uint16_t)(sh | (ls[g] >> 4) << 2 * g);
    }
    memcpy(xs + 2, &sh, 2);
    for (int i = 0; i < 128; i++)
        xs[8 + i] = (uint8_t)(((i * 7) & 15) | ((i * 3 + 5) & 15) << 4);
    tport_traits(TPORT_TYPE_IQ4_XS)->to_float(xs, y, 256);
    for (int g = 0; g < 8; g++)
        for (int j = 0; j < 16; j++) {
            const uint8_t b = xs[8 + 16 * g + j];
            const float dl = 0.5f * (float)(ls[g] - 32);
            CHECK(y[32 * g + j] == dl * kvalues[b & 15] && y[32 * g + j + 16] == dl * kvalues[b >> 4],
                  "iq4_xs group %d element %d: %g", g, j, (double)y[32 * g + j]);
        }
}

static void test_vectors(void) {
    char path[1024];
    float x[1024], want_deq[1024], deq[1024];
    if (!test_shared_path("testdata/quant-current/input_4x256.f32", path, sizeof path) ||
        !read_exact(path, x, sizeof x)) {
        printf("test_quant_iq4: vectors skipped (../shared/testdata/quant-current absent)\n");
        return;
    }
    static const struct {
        const char *name;
        tport_type_id id;
    } types[] = {{"iq4_nl", TPORT_TYPE_IQ4_NL}, {"iq4_xs", TPORT_TYPE_IQ4_XS}};
    for (int k = 0; k < 2; k++) {
        const tport_type_traits *t = tport_traits(types[k].id);
        const size_t rb = (size_t)(256 / t->info.block_size) * t->info.block_bytes, bb = t->info.block_bytes;
        uint8_t want[4 * 256], q[4 * 256];
        snprintf(path, sizeof path, "%s/%s.q", TPORT_QUANT_TEST_DATA, types[k].name);
        CHECK(read_exact(path, want, 4 * rb), "cannot read %s", path);
        snprintf(path, sizeof path, "%s/%s.deq.f32", TPORT_QUANT_TEST_DATA, types[k].name);
        CHECK(read_exact(path, want_deq, sizeof want_deq), "cannot read %s", path);
        for (int r = 0; r < 4; r++)
            t->from_float(x + 256 * r, q + rb * r, 256);
        int bad = 0, skipped = 0;
        for (size_t blk = 0; blk < 4 * rb / bb; blk++) {
            const uint8_t *a = q + blk * bb, *b = want + blk * bb;
            /* IQ4_NL block with scale 0: ggml leaves the nibbles unset */
            const int unspecified = types[k].id == TPORT_TYPE_IQ4_NL && b[0] == 0 && b[1] == 0;
            if (unspecified) {
                skipped++;
                CHECK(memcmp(a, b, 2) == 0, "block %zu scale", blk);
                for (size_t i = 2; i < bb; i++)
                    CHECK(a[i] == 0x88, "zero block nibbles %02x", a[i]);
                continue;
            }
            if (memcmp(a, b, bb) != 0 && bad++ == 0)
                fprintf(stderr, "%s: first differing block %zu\n", types[k].name, blk);
        }
        CHECK(bad == 0, "%s: %d blocks differ from ggml", types[k].name, bad);
        t->to_float(want, deq, 1024);
        CHECK(memcmp(deq, want_deq, sizeof deq) == 0, "%s: dequantize differs from ggml", types[k].name);
        printf("%s: quantize %s (%d zero blocks' nibbles not compared), dequantize %s\n", types[k].name,
               bad ? "DIFFERS" : "bit-exact", skipped,
               memcmp(deq, want_deq, sizeof deq) ? "DIFFERS" : "bit-exact");
    }
}

int main(void) {
    test_hand_built();
    test_vectors();
    return test_finish("test_quant_iq4");
}
