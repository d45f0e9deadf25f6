/* tport serve: valid UTF-8 for JSON strings. */
#ifndef TPORT_SERVE_UTF8_H
#define TPORT_SERVE_UTF8_H

#include <stddef.h>

/* A malloc'd, NUL-terminated copy of n bytes in which every invalid UTF-8
 * sequence (and NUL) became U+FFFD; NULL if out of memory. */
char *utf8_clean(const char *s, size_t n);

#endif
