/* The session file's reader (see session_file.h): hostile input, so every
 * field is checked before use; the fuzz target tests/fuzz/fuzz_session_file.c
 * drives it. */
#include <string.h>

#include "core/error.h"
#include "model/session_file.h"

static const char MAGIC[8] = {'T', 'P', 'S', 'E', 'S', 'S', 'N', 0};

uint64_t tport_fnv64(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void tport_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void tport_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p) {
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static tport_status bad(const char *name, size_t offset, const char *what) {
    return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset %zu: %s", name, offset, what);
}

/* a * b + c without overflow, or false */
static bool mul_add(uint64_t a, uint64_t b, uint64_t c, uint64_t *out) {
    if (b && a > (UINT64_MAX - c) / b)
        return false;
    *out = a * b + c;
    return true;
}

tport_status tport_session_file_parse(const uint8_t *buf, size_t len, const char *name, tport_session_file *out) {
    if (!name)
        name = "session";
    if (!buf || len < TPORT_SESSION_FILE_HEADER + 8)
        return bad(name, len, "truncated: shorter than a session file's header");
    if (memcmp(buf, MAGIC, sizeof MAGIC))
        return bad(name, 0, "not a tensorport session file (no TPSESSN magic)");
    tport_session_file f = {.version = get_u32(buf + 8)};
    if (f.version != TPORT_SESSION_FILE_VERSION)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset 8: session file version %u; this build reads "
                           "version %u", name, (unsigned)f.version, TPORT_SESSION_FILE_VERSION);
    if (get_u32(buf + 12) != TPORT_SESSION_FILE_HEADER)
        return bad(name, 12, "header size is not 56");
    f.model_id = get_u64(buf + 16);
    f.n_layer = get_u32(buf + 24);
    f.n_head_kv = get_u32(buf + 28);
    f.head_dim = get_u32(buf + 32);
    uint32_t type = get_u32(buf + 36);
    f.n_tokens = get_u32(buf + 40);
    f.n_ctx = get_u32(buf + 44);
    if (get_u64(buf + 48))
        return bad(name, 48, "reserved field is not 0");
    if (f.n_layer == 0 || f.n_layer > (1u << 16))
        return bad(name, 24, "n_layer out of range");
    if (f.n_head_kv == 0 || f.n_head_kv > (1u << 16) || f.head_dim == 0 || f.head_dim > (1u << 16))
        return bad(name, 28, "n_head_kv or head_dim out of range");
    if (type != TPORT_TYPE_F16 && type != TPORT_TYPE_F32)
        return bad(name, 36, "cache type is neither f16 nor f32");
    f.kv_type = (tport_type_id)type;
    if (f.n_tokens > (1u << 30) || f.n_tokens > f.n_ctx)
        return bad(name, 40, "n_tokens out of range (more than n_ctx)");
    uint64_t row = (uint64_t)f.n_head_kv * f.head_dim * (type == TPORT_TYPE_F16 ? 2u : 4u);
    uint64_t layer_bytes, kv_bytes, total;
    if (!mul_add(row, 2ull * f.n_tokens, 0, &layer_bytes) || !mul_add(layer_bytes, f.n_layer, 0, &kv_bytes) ||
        !mul_add(f.n_tokens, 4, TPORT_SESSION_FILE_HEADER + 8, &total) || kv_bytes > UINT64_MAX - total)
        return bad(name, 24, "sizes overflow");
    total += kv_bytes;
    if (total != (uint64_t)len)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset %zu: %s: the header describes %llu bytes, the "
                           "file has %zu", name, total > len ? len : (size_t)total,
                           total > len ? "truncated" : "trailing bytes", (unsigned long long)total, len);
    uint64_t sum = tport_fnv64(TPORT_FNV64_INIT, buf, len - 8);
    if (sum != get_u64(buf + len - 8))
        return bad(name, len - 8, "checksum mismatch: the file is corrupted");
    f.tokens = buf + TPORT_SESSION_FILE_HEADER;
    f.kv = f.tokens + 4 * (size_t)f.n_tokens;
    f.row_bytes = (size_t)row;
    *out = f;
    return TPORT_STATUS_OK;
}
