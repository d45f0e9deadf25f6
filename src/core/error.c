#include "error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[512];

tport_status tport_verror(tport_status code, const char *fmt, va_list ap) {
    /* formatted aside first: callers wrap the previous error with
     * tport_error(s, "...: %s", tport_last_error()), and vsnprintf into
     * the buffer it reads from is undefined (it garbled the message) */
    char msg[sizeof last_error];
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(last_error, msg, sizeof msg);
    return code;
}

tport_status tport_error(tport_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tport_verror(code, fmt, ap);
    va_end(ap);
    return code;
}

void tport_clear_error(void) {
    last_error[0] = '\0';
}

const char *tport_last_error(void) {
    return last_error;
}

const char *tport_status_name(tport_status s) {
    switch (s) {
    case TPORT_STATUS_OK: return "ok";
    case TPORT_STATUS_ERROR: return "error";
    case TPORT_STATUS_UNSUPPORTED: return "unsupported";
    case TPORT_STATUS_INVALID_ARGUMENT: return "invalid argument";
    case TPORT_STATUS_OUT_OF_MEMORY: return "out of memory";
    case TPORT_STATUS_VERSION_MISMATCH: return "version mismatch";
    case TPORT_STATUS_DEVICE_LOST: return "device lost";
    case TPORT_STATUS_IO: return "i/o error";
    case TPORT_STATUS_BAD_FORMAT: return "bad format";
    case TPORT_STATUS_TIMEOUT: return "timeout";
    case TPORT_STATUS_NOT_ADDRESSABLE: return "not addressable";
    default: return "unknown status";
    }
}

int tport_log_level(void) {
    static int level = -1; /* benign race: every thread computes the same */
    if (level < 0) {
        const char *env = getenv("TPORT_LOG");
        int l = TPORT_LOG_WARN;
        if (env) {
            if (!strcmp(env, "error")) l = TPORT_LOG_ERROR;
            else if (!strcmp(env, "info")) l = TPORT_LOG_INFO;
            else if (!strcmp(env, "debug")) l = TPORT_LOG_DEBUG;
        }
        level = l;
    }
    return level;
}

void tport_vlog(int level, const char *fmt, va_list ap) {
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (level > tport_log_level() || level < 0 || level > TPORT_LOG_DEBUG)
        return;
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "tport %s: %s\n", names[level], line);
}

void tport_log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tport_vlog(level, fmt, ap);
    va_end(ap);
}
