/* libFuzzer target: any bytes as a session file (src/model/session_file.h).
 * The first byte picks a mode: odd, the target writes the correct checksum
 * over the last 8 bytes first, so the fuzzer also reaches what follows the
 * checksum check.  A file the reader accepts must lie within the input:
 * every token and cache byte it points at is read here (ASan checks). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/session_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t len = size - 1;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, len);
    if ((data[0] & 1) && len >= 8)
        tport_put_u64(buf + len - 8, tport_fnv64(TPORT_FNV64_INIT, buf, len - 8));
    tport_session_file f;
    if (tport_session_file_parse(buf, len, "fuzz", &f) == TPORT_STATUS_OK) {
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < 4 * (size_t)f.n_tokens; i++)
            sink ^= f.tokens[i];
        size_t kv = f.row_bytes * 2 * (size_t)f.n_tokens * f.n_layer;
        for (size_t i = 0; i < kv; i++)
            sink ^= f.kv[i];
        (void)sink;
    }
    free(buf);
    return 0;
}
