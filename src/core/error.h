/* The one error style of tensorport: a function returns a tport_status (or
 * NULL) and records a message for the calling thread with tport_error(). */
#ifndef TPORT_CORE_ERROR_H
#define TPORT_CORE_ERROR_H

#include <stdarg.h>

#include "tport/tport.h"

#if defined(__GNUC__)
#define TPORT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TPORT_PRINTF(a, b)
#endif

/* tport_error and tport_clear_error are public (tport.h). */
tport_status tport_verror(tport_status code, const char *fmt, va_list ap);

/* Logging: TPORT_LOG=error|warn|info|debug (default warn) on stderr. */
void tport_log(int level, const char *fmt, ...) TPORT_PRINTF(2, 3);
void tport_vlog(int level, const char *fmt, va_list ap);
int tport_log_level(void);

#endif
