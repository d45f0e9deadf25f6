/* A minimal JSON reader for the model tests' reference files (refs.json,
 * data/tokenizer_refs.json): objects, arrays, strings (with \uXXXX escapes
 * and surrogate pairs), numbers, true/false/null. */
#ifndef TPORT_TESTS_JSON_MIN_H
#define TPORT_TESTS_JSON_MIN_H

#include <stddef.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json {
    json_kind kind;
    double number;          /* JSON_NUMBER, JSON_BOOL (0/1) */
    char *str;              /* JSON_STRING (NUL-terminated, str_len bytes) */
    size_t str_len;
    size_t n;               /* JSON_ARRAY / JSON_OBJECT */
    struct json *items;     /* n values */
    char **keys;            /* JSON_OBJECT: n keys */
} json;

/* Parses a whole file; NULL if it cannot be read or parsed. */
json *json_load(const char *path);
void json_free(json *j);
/* Member of an object, or NULL. */
const json *json_get(const json *obj, const char *key);

#endif
