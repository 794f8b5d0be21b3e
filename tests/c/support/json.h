/* A small JSON DOM for the C tests (parse, compare, print, build). Not part of the library. */
#ifndef ACPH_TEST_JSON_H
#define ACPH_TEST_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json {
    json_type type;
    bool boolean;
    double number;
    char *string;        /* JSON_STRING: UTF-8, NUL-terminated (may contain NULs: see length) */
    size_t length;       /* JSON_STRING: bytes; JSON_ARRAY/OBJECT: items */
    struct json **items; /* JSON_ARRAY / JSON_OBJECT values */
    char **keys;         /* JSON_OBJECT keys */
} json;

/* Parse `len` bytes; NULL on a syntax error. Free with json_free. */
json *json_parse(const char *text, size_t len);
void json_free(json *v);

/* Lookups (NULL when absent or of another type). */
const json *json_get(const json *obj, const char *key);
const json *json_at(const json *arr, size_t i);
const char *json_str(const json *v);                 /* NULL unless a string */
bool json_u64(const json *v, uint64_t *out);         /* false unless a non-negative integer */
bool json_is_null(const json *v);                    /* true when NULL or JSON null */

/* Deep equality; object keys compared as sets. */
bool json_equal(const json *a, const json *b);
/* Compact JSON text (keys in their order); free with free(). */
char *json_dump(const json *v);

/* Building. */
json *json_new_null(void);
json *json_new_bool(bool b);
json *json_new_u64(uint64_t n);
json *json_new_string(const char *s);
json *json_new_object(void);
json *json_new_array(void);
/* Takes ownership of `value`; replaces an existing key. */
void json_set(json *obj, const char *key, json *value);
void json_push(json *arr, json *value);
/* Remove (and free) a key of an object; no-op when absent. */
void json_remove(json *obj, const char *key);
/* Deep copy. */
json *json_clone(const json *v);

/* Read a whole file (NUL-terminated, malloc'd); NULL on error. */
char *read_file(const char *path, size_t *len_out);

#endif
