/* The helper's side of graph messages (src/isolate/
 * helper_graph.c): a well-formed message decodes into views over the
 * regions; every way of lying about counts, indices, offsets and lengths
 * is refused with a reason, never read past.  Each bad message is a copy
 * of the good one with one field bent, in a buffer of exactly its size
 * (ASan catches any read beyond). */
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "isolate/helper_graph.h"

static unsigned char region_mem[4096];
static helper_region regions[3] = {{0}, {.base = region_mem, .size = sizeof region_mem}, {0}};

typedef struct msg {
    iso_graph h;
    iso_tensor t[3];
    int32_t nodes[1];
    char blob[12]; /* params (4 bytes) + "abcdefgh" */
} msg;

static msg good(void) {
    msg m;
    memset(&m, 0, sizeof m);
    m.h = (iso_graph){.n_tensors = 3, .n_nodes = 1, .n_threads = 2, .blob_size = sizeof m.blob};
    for (int i = 0; i < 3; i++) {
        m.t[i] = (iso_tensor){.type = TPORT_TYPE_F32, .src = {-1, -1, -1, -1, -1, -1}, .ne = {8, 2, 1, 1},
                              .nb = {4, 32, 64, 64}, .region = 1, .offset = (uint64_t)i * 64};
    }
    m.t[2].op = TPORT_OP_SCALE;
    m.t[2].src[0] = 0;
    m.t[2].src[1] = 1;
    m.t[2].params_off = 0;
    m.t[2].params_size = 4;
    m.t[2].name_off = 4;
    m.t[2].name_len = 8;
    m.nodes[0] = 2;
    float scale = 0.5f;
    memcpy(m.blob, &scale, 4);
    memcpy(m.blob + 4, "abcdefgh", 8);
    return m;
}

/* Decodes a heap copy of exactly `size` bytes. */
static bool decode(helper_graph *g, const void *m, size_t size, char *why, size_t cap) {
    unsigned char *copy = malloc(size ? size : 1);
    memcpy(copy, m, size);
    bool ok = helper_graph_decode(g, copy, size, regions, 3, false, why, cap);
    free(copy);
    return ok;
}

#define BAD(field_change, reason_part)                                                                   \
    do {                                                                                                 \
        msg m = good();                                                                                  \
        field_change;                                                                                    \
        char why[256] = "";                                                                              \
        CHECK(!decode(&g, &m, sizeof m, why, sizeof why), "accepted: %s", #field_change);                \
        CHECK(strstr(why, reason_part) != NULL, "%s: reason '%s' lacks '%s'", #field_change, why, reason_part); \
    } while (0)

int main(void) {
    helper_graph g = {0};
    char why[256];
    msg m = good();
    CHECK(decode(&g, &m, sizeof m, why, sizeof why), "the good message was refused: %s", why);
    CHECK(g.view.n_tensors == 3 && g.view.n_nodes == 1 && g.view.nodes[0] == 2 && g.view.n_threads == 2, "counts");
    CHECK(g.recs[1].data == region_mem + 64 && g.recs[2].src[1] == 1, "locations or sources wrong");
    CHECK(g.recs[2].params_size == 4 && *(const float *)g.recs[2].params == 0.5f, "params wrong");
    CHECK(!strcmp(g.recs[2].name, "abcdefgh") && !strcmp(g.recs[0].name, ""), "names wrong");
    CHECK(((uintptr_t)g.recs[2].params & 15) == 0, "params not aligned");
    CHECK(g.view.graph_key && g.view.bind_key, "keys are 0");

    /* sizes and counts */
    CHECK(!decode(&g, &m, sizeof m - 1, why, sizeof why) && strstr(why, "does not match"), "short message: %s", why);
    CHECK(!decode(&g, &m, 8, why, sizeof why), "a message shorter than its header was accepted");
    BAD(m.h.n_tensors = -1, "out of range");
    BAD(m.h.n_tensors = 1 << 30, "out of range");
    BAD(m.h.n_nodes = 4, "out of range");
    BAD(m.h.n_threads = 0, "out of range");
    BAD(m.h.n_threads = 1 << 20, "out of range");
    BAD(m.h.blob_size = 13, "does not match");
    BAD(m.h.n_tensors = 2, "does not match");
    /* indices */
    BAD(m.t[2].src[0] = 3, "source 3 out of range");
    BAD(m.t[2].src[3] = -2, "out of range");
    BAD(m.nodes[0] = 3, "out of range");
    BAD(m.nodes[0] = -1, "out of range");
    /* memory */
    BAD(m.t[1].region = 2, "not mapped");
    BAD(m.t[1].region = 77, "not mapped");
    BAD(m.t[1].offset = 4096 - 63, "outside region");
    BAD(m.t[1].offset = UINT64_MAX - 8, "outside region");
    BAD(m.t[1].ne[1] = 200, "outside region");
    BAD(m.t[1].nb[1] = UINT64_MAX / 2, "outside region");
    BAD(m.t[1].ne[2] = -1, "negative");
    BAD(m.t[1].type = 9999, "outside region");
    /* blob */
    BAD(m.t[2].params_size = 300, "parameter block of 300");
    BAD(m.t[2].params_off = 9, "outside the message");
    BAD(m.t[2].name_len = 9, "outside the message");
    BAD(m.t[2].name_off = UINT32_MAX, "outside the message");
    BAD((m.t[2].name_len = 64, m.h.blob_size = 12), "outside the message");
    helper_graph_free(&g);
    return test_finish("test_isolate_decode");
}
