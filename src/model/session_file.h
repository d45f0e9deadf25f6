/* The session file (tport_session_save/load): a session's tokens and
 * their KV cache, for one model.  Little-endian throughout:
 *
 *   offset  size  field
 *   0       8     magic "TPSESSN\0"
 *   8       4     u32 format version (TPORT_SESSION_FILE_VERSION)
 *   12      4     u32 header bytes (56 in version 1)
 *   16      8     u64 model identity (tport_model_identity)
 *   24      4     u32 n_layer
 *   28      4     u32 n_head_kv
 *   32      4     u32 head_dim
 *   36      4     u32 cache type (tport_type_id: f16 or f32)
 *   40      4     u32 n_tokens
 *   44      4     u32 n_ctx of the session that wrote it (informational)
 *   48      8     reserved, 0
 *   56            n_tokens i32 token ids
 *                 per layer: K rows then V rows of positions [0, n_tokens),
 *                 each head_dim * n_head_kv elements of the cache type
 *   end - 8 8     u64 FNV-1a 64 of every byte before it
 *
 * The reader trusts nothing: every size is checked against overflow and
 * the file's length, which must match exactly, and the checksum must
 * agree, before anything is used. */
#ifndef TPORT_MODEL_SESSION_FILE_H
#define TPORT_MODEL_SESSION_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "tport/tport.h"

#define TPORT_SESSION_FILE_VERSION 1u
#define TPORT_SESSION_FILE_HEADER 56u

typedef struct tport_session_file {
    uint32_t version;
    uint64_t model_id;
    uint32_t n_layer, n_head_kv, head_dim;
    tport_type_id kv_type;
    uint32_t n_tokens, n_ctx;
    const uint8_t *tokens;       /* n_tokens little-endian i32             */
    const uint8_t *kv;           /* per layer K then V, row_bytes x n_tokens each */
    size_t row_bytes;            /* one position of one layer's K (or V)   */
} tport_session_file;

/* Checks a whole file in memory (len bytes; name for messages) and
 * describes it in *out, pointing into buf.  TPORT_STATUS_BAD_FORMAT
 * "NAME: offset N: what is wrong" for anything malformed, truncated or
 * corrupted; a version other than 1 is named. */
tport_status tport_session_file_parse(const uint8_t *buf, size_t len, const char *name, tport_session_file *out);

/* FNV-1a 64 of n bytes, continuing from h (start with TPORT_FNV64_INIT). */
#define TPORT_FNV64_INIT 0xcbf29ce484222325ull
uint64_t tport_fnv64(uint64_t h, const void *p, size_t n);

/* Little-endian fields. */
void tport_put_u32(uint8_t *p, uint32_t v);
void tport_put_u64(uint8_t *p, uint64_t v);

#endif
