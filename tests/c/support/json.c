/* A small JSON DOM for the C tests. Strict enough for the traces (RFC 8259 syntax, \u escapes
 * with surrogate pairs), not tuned for speed. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;
    const char *end;
    int depth;
} parser;

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        abort();
    }
    return p;
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "out of memory\n");
        abort();
    }
    return q;
}

static json *new_value(json_type t) {
    json *v = xmalloc(sizeof *v);
    memset(v, 0, sizeof *v);
    v->type = t;
    return v;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static json *parse_value(parser *ps);

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static void put_utf8(char **buf, size_t *len, size_t *cap, unsigned cp) {
    char tmp[4];
    size_t n;
    if (cp < 0x80) { tmp[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { tmp[0] = (char)(0xC0 | (cp >> 6)); tmp[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        tmp[0] = (char)(0xE0 | (cp >> 12)); tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        tmp[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        tmp[0] = (char)(0xF0 | (cp >> 18)); tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); tmp[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, tmp, n);
    *len += n;
}

static char *parse_string_raw(parser *ps, size_t *len_out) {
    if (ps->p >= ps->end || *ps->p != '"') return NULL;
    ps->p++;
    size_t cap = 16, len = 0;
    char *buf = xmalloc(cap);
    while (ps->p < ps->end) {
        unsigned char c = (unsigned char)*ps->p++;
        if (c == '"') {
            buf[len] = 0;
            *len_out = len;
            return buf;
        }
        if (c < 0x20) break;
        if (c == '\\') {
            if (ps->p >= ps->end) break;
            char e = *ps->p++;
            unsigned cp;
            switch (e) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (ps->end - ps->p < 4 || !hex4(ps->p, &cp)) goto fail;
                ps->p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u' && hex4(ps->p + 2, &lo) &&
                        lo >= 0xDC00 && lo <= 0xDFFF) {
                        ps->p += 6;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else {
                        cp = 0xFFFD;
                    }
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    cp = 0xFFFD;
                }
                break;
            default: goto fail;
            }
            put_utf8(&buf, &len, &cap, cp);
            continue;
        }
        if (len + 2 > cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        buf[len++] = (char)c;
    }
fail:
    free(buf);
    return NULL;
}

static json *parse_number(parser *ps) {
    const char *start = ps->p;
    if (ps->p < ps->end && *ps->p == '-') ps->p++;
    if (ps->p >= ps->end) return NULL;
    if (*ps->p == '0') ps->p++;
    else if (*ps->p >= '1' && *ps->p <= '9') while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    else return NULL;
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return NULL;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') return NULL;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    }
    size_t n = (size_t)(ps->p - start);
    char *tmp = xmalloc(n + 1);
    memcpy(tmp, start, n);
    tmp[n] = 0;
    json *v = new_value(JSON_NUMBER);
    v->number = strtod(tmp, NULL);
    free(tmp);
    return v;
}

static int literal(parser *ps, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return 0;
    ps->p += n;
    return 1;
}

static json *parse_value(parser *ps) {
    skip_ws(ps);
    if (ps->p >= ps->end || ps->depth > 200) return NULL;
    char c = *ps->p;
    if (c == '{') {
        ps->p++;
        ps->depth++;
        json *obj = json_new_object();
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            ps->depth--;
            return obj;
        }
        for (;;) {
            skip_ws(ps);
            size_t klen;
            char *key = parse_string_raw(ps, &klen);
            if (!key) goto obj_fail;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') { free(key); goto obj_fail; }
            ps->p++;
            json *val = parse_value(ps);
            if (!val) { free(key); goto obj_fail; }
            obj->items = xrealloc(obj->items, (obj->length + 1) * sizeof *obj->items);
            obj->keys = xrealloc(obj->keys, (obj->length + 1) * sizeof *obj->keys);
            obj->items[obj->length] = val;
            obj->keys[obj->length] = key;
            obj->length++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
            if (ps->p < ps->end && *ps->p == '}') { ps->p++; ps->depth--; return obj; }
            goto obj_fail;
        }
    obj_fail:
        json_free(obj);
        return NULL;
    }
    if (c == '[') {
        ps->p++;
        ps->depth++;
        json *arr = json_new_array();
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            ps->depth--;
            return arr;
        }
        for (;;) {
            json *val = parse_value(ps);
            if (!val) goto arr_fail;
            json_push(arr, val);
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
            if (ps->p < ps->end && *ps->p == ']') { ps->p++; ps->depth--; return arr; }
            goto arr_fail;
        }
    arr_fail:
        json_free(arr);
        return NULL;
    }
    if (c == '"') {
        size_t len;
        char *s = parse_string_raw(ps, &len);
        if (!s) return NULL;
        json *v = new_value(JSON_STRING);
        v->string = s;
        v->length = len;
        return v;
    }
    if (literal(ps, "true")) return json_new_bool(true);
    if (literal(ps, "false")) return json_new_bool(false);
    if (literal(ps, "null")) return json_new_null();
    return parse_number(ps);
}

json *json_parse(const char *text, size_t len) {
    parser ps = {text, text + len, 0};
    json *v = parse_value(&ps);
    if (!v) return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        json_free(v);
        return NULL;
    }
    return v;
}

void json_free(json *v) {
    if (!v) return;
    if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->length; i++) {
            json_free(v->items[i]);
            if (v->keys) free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    free(v->string);
    free(v);
}

const json *json_get(const json *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < obj->length; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

const json *json_at(const json *arr, size_t i) {
    if (!arr || arr->type != JSON_ARRAY || i >= arr->length) return NULL;
    return arr->items[i];
}

const char *json_str(const json *v) { return v && v->type == JSON_STRING ? v->string : NULL; }

bool json_u64(const json *v, uint64_t *out) {
    if (!v || v->type != JSON_NUMBER || v->number < 0 || floor(v->number) != v->number) return false;
    *out = (uint64_t)v->number;
    return true;
}

bool json_is_null(const json *v) { return !v || v->type == JSON_NULL; }

bool json_equal(const json *a, const json *b) {
    if (!a || !b) return a == b;
    if (a->type != b->type) return false;
    switch (a->type) {
    case JSON_NULL: return true;
    case JSON_BOOL: return a->boolean == b->boolean;
    case JSON_NUMBER: return a->number == b->number;
    case JSON_STRING: return a->length == b->length && memcmp(a->string, b->string, a->length) == 0;
    case JSON_ARRAY:
        if (a->length != b->length) return false;
        for (size_t i = 0; i < a->length; i++)
            if (!json_equal(a->items[i], b->items[i])) return false;
        return true;
    case JSON_OBJECT:
        if (a->length != b->length) return false;
        for (size_t i = 0; i < a->length; i++)
            if (!json_equal(a->items[i], json_get(b, a->keys[i]))) return false;
        return true;
    }
    return false;
}

typedef struct {
    char *buf;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *sb, const char *s, size_t n) {
    if (sb->len + n + 1 > sb->cap) {
        sb->cap = (sb->len + n + 1) * 2;
        sb->buf = xrealloc(sb->buf, sb->cap);
    }
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = 0;
}

static void sb_str(sbuf *sb, const char *s, size_t n) {
    sb_put(sb, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; sb_put(sb, esc, 2); }
        else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); sb_put(sb, esc, 6); }
        else sb_put(sb, (const char *)&s[i], 1);
    }
    sb_put(sb, "\"", 1);
}

static void dump(sbuf *sb, const json *v) {
    char num[64];
    switch (v->type) {
    case JSON_NULL: sb_put(sb, "null", 4); break;
    case JSON_BOOL: v->boolean ? sb_put(sb, "true", 4) : sb_put(sb, "false", 5); break;
    case JSON_NUMBER:
        if (floor(v->number) == v->number && fabs(v->number) < 1e15)
            snprintf(num, sizeof num, "%.0f", v->number);
        else
            snprintf(num, sizeof num, "%.17g", v->number);
        sb_put(sb, num, strlen(num));
        break;
    case JSON_STRING: sb_str(sb, v->string, v->length); break;
    case JSON_ARRAY:
        sb_put(sb, "[", 1);
        for (size_t i = 0; i < v->length; i++) {
            if (i) sb_put(sb, ",", 1);
            dump(sb, v->items[i]);
        }
        sb_put(sb, "]", 1);
        break;
    case JSON_OBJECT:
        sb_put(sb, "{", 1);
        for (size_t i = 0; i < v->length; i++) {
            if (i) sb_put(sb, ",", 1);
            sb_str(sb, v->keys[i], strlen(v->keys[i]));
            sb_put(sb, ":", 1);
            dump(sb, v->items[i]);
        }
        sb_put(sb, "}", 1);
        break;
    }
}

char *json_dump(const json *v) {
    sbuf sb = {NULL, 0, 0};
    sb_put(&sb, "", 0);
    if (v) dump(&sb, v);
    else sb_put(&sb, "<none>", 6);
    return sb.buf;
}

json *json_new_null(void) { return new_value(JSON_NULL); }

json *json_new_bool(bool b) {
    json *v = new_value(JSON_BOOL);
    v->boolean = b;
    return v;
}

json *json_new_u64(uint64_t n) {
    json *v = new_value(JSON_NUMBER);
    v->number = (double)n;
    return v;
}

json *json_new_string(const char *s) {
    json *v = new_value(JSON_STRING);
    v->length = strlen(s);
    v->string = xmalloc(v->length + 1);
    memcpy(v->string, s, v->length + 1);
    return v;
}

json *json_new_object(void) { return new_value(JSON_OBJECT); }
json *json_new_array(void) { return new_value(JSON_ARRAY); }

void json_set(json *obj, const char *key, json *value) {
    for (size_t i = 0; i < obj->length; i++) {
        if (strcmp(obj->keys[i], key) == 0) {
            json_free(obj->items[i]);
            obj->items[i] = value;
            return;
        }
    }
    obj->items = xrealloc(obj->items, (obj->length + 1) * sizeof *obj->items);
    obj->keys = xrealloc(obj->keys, (obj->length + 1) * sizeof *obj->keys);
    size_t n = strlen(key);
    obj->keys[obj->length] = xmalloc(n + 1);
    memcpy(obj->keys[obj->length], key, n + 1);
    obj->items[obj->length] = value;
    obj->length++;
}

void json_push(json *arr, json *value) {
    arr->items = xrealloc(arr->items, (arr->length + 1) * sizeof *arr->items);
    arr->items[arr->length++] = value;
}

void json_remove(json *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return;
    for (size_t i = 0; i < obj->length; i++) {
        if (strcmp(obj->keys[i], key) == 0) {
            json_free(obj->items[i]);
            free(obj->keys[i]);
            memmove(&obj->items[i], &obj->items[i + 1], (obj->length - i - 1) * sizeof *obj->items);
            memmove(&obj->keys[i], &obj->keys[i + 1], (obj->length - i - 1) * sizeof *obj->keys);
            obj->length--;
            return;
        }
    }
}

json *json_clone(const json *v) {
    json *c = new_value(v->type);
    c->boolean = v->boolean;
    c->number = v->number;
    if (v->type == JSON_STRING) {
        c->length = v->length;
        c->string = xmalloc(v->length + 1);
        memcpy(c->string, v->string, v->length + 1);
    } else if (v->type == JSON_ARRAY) {
        for (size_t i = 0; i < v->length; i++) json_push(c, json_clone(v->items[i]));
    } else if (v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->length; i++) json_set(c, v->keys[i], json_clone(v->items[i]));
    }
    return c;
}

char *read_file(const char *path, size_t *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        size_t n = fread(buf + len, 1, 4096, f);
        len += n;
        if (n < 4096) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    if (len_out) *len_out = len;
    return buf;
}
