/* Parts of a split GGUF built byte by byte from llama.cpp's layout
 * (gguf-split.cpp: every part a GGUF v3 file; metadata in the first; the
 * keys split.no u16, split.tensors.count i32, split.count u16 in each, in
 * that order),
 * and a safetensors index.  Used by the split tests and the fuzz seeds. */
#ifndef TPORT_TEST_SPLIT_FILES_H
#define TPORT_TEST_SPLIT_FILES_H

#include "byte_builder.h"

static inline void sf_str(bb *b, const char *s) {
    bb_u64(b, strlen(s));
    bb_raw(b, s, strlen(s));
}

/* One part: `n` f32 tensors of 4 elements named names[0..n), values
 * seed + i; split.no = no, split.count = count, split.tensors.count =
 * total; the first part (meta) also has general.architecture.
 * count_type is split.count's GGUF value type: 2 (u16, as llama.cpp
 * writes it) or 4 (u32, which llama.cpp and tport refuse). */
static inline void sample_split_part(bb *b, uint16_t no, uint16_t count, int32_t total, const char *const *names,
                                     int n, bool meta, uint32_t count_type, float seed) {
    bb_raw(b, "GGUF", 4);
    bb_u32(b, 3);
    bb_u64(b, (uint64_t)n);
    bb_u64(b, meta ? 4 : 3);
    if (meta)
        sf_str(b, "general.architecture"), bb_u32(b, 8), sf_str(b, "llama");
    sf_str(b, "split.no"), bb_u32(b, 2), bb_u16(b, no);
    sf_str(b, "split.tensors.count"), bb_u32(b, 5), bb_i32(b, total);
    sf_str(b, "split.count"), bb_u32(b, count_type);
    if (count_type == 2)
        bb_u16(b, count);
    else
        bb_u32(b, count);
    for (int i = 0; i < n; i++) {
        sf_str(b, names[i]);
        bb_u32(b, 1), bb_u64(b, 4), bb_u32(b, 0), bb_u64(b, (uint64_t)i * 32);
    }
    bb_pad_to(b, 32);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 4; k++)
            bb_f32(b, seed + (float)i + 0.25f * (float)k);
        bb_zeros(b, 16); /* each tensor padded to 32 */
    }
}

#endif
