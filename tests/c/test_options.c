/* Every case of tests/options/cases.json (ACPH_OPTION_CASES) through the C ABI, as a C program
 * hands its options over: `host` to acph_host_new, `agent` to acph_host_spawn (ok cases
 * really spawn the mock agent), `session` to acph_agent_new_session on a spawned mock agent (both
 * waited for with acph_call_wait),
 * `pool` to acph_pool_new over the mock agent's spec. Each must give the case's outcome: ok, or
 * the error kind and data.path (a case whose `except` names "c" is ok here: the option is the C
 * face's own). Prints one line per case; fails on any difference. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/portable.h"
#include "support/testutil.h"

/* `text` with every `from` replaced by `to` (malloc'd). */
static char *replace_all(const char *text, const char *from, const char *to) {
    size_t n = 0, fl = strlen(from), tl = strlen(to);
    for (const char *p = strstr(text, from); p; p = strstr(p + fl, from)) n++;
    char *out = malloc(strlen(text) + n * (tl > fl ? tl - fl : 0) + 1);
    CHECK(out != NULL);
    char *o = out;
    for (const char *p = text;;) {
        const char *hit = strstr(p, from);
        if (!hit) {
            strcpy(o, p);
            break;
        }
        memcpy(o, p, (size_t)(hit - p));
        o += hit - p;
        memcpy(o, to, tl);
        o += tl;
        p = hit + fl;
    }
    return out;
}

/* A path as the inside of a JSON string. */
static char *json_inner(const char *path) {
    json *s = json_new_string(path);
    char *quoted = json_dump(s);
    json_free(s);
    size_t n = strlen(quoted);
    memmove(quoted, quoted + 1, n - 2);
    quoted[n - 2] = '\0';
    return quoted;
}

static void write_file(const char *path, const char *content) {
    FILE *f = fopen(path, "w");
    CHECK_MSG(f != NULL, path);
    fputs(content, f);
    fclose(f);
}

/* "ok", or "KIND PATH" of a failed call (malloc'd); frees `err`. */
static char *outcome(acph_status st, acph_error *err) {
    char *out = NULL;
    if (st == ACPH_STATUS_OK) return strdup("ok");
    CHECK(err != NULL && err->code == st);
    json *data = json_parse(err->data, strlen(err->data));
    const char *path = json_str(json_get(data, "path"));
    size_t n = strlen(err->kind) + (path ? strlen(path) : 6) + 2;
    out = malloc(n);
    snprintf(out, n, "%s %s", err->kind, path ? path : "(none)");
    json_free(data);
    acph_error_free(err);
    return out;
}

static char *expected(const json *c) {
    const json *e = json_get(c, "expect");
    if (json_str(e)) return strdup(json_str(e));
    const json *except = json_get(e, "except");
    for (size_t i = 0; except && i < except->length; i++) {
        if (strcmp(json_str(json_at(except, i)), "c") == 0) return strdup("ok");
    }
    const char *kind = json_str(json_get(e, "kind")), *path = json_str(json_get(e, "path"));
    CHECK(kind && path);
    size_t n = strlen(kind) + strlen(path) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%s %s", kind, path);
    return out;
}

int main(void) {
    const char *file = getenv("ACPH_OPTION_CASES");
    CHECK_MSG(file && *file, "ACPH_OPTION_CASES is not set");
    size_t len = 0;
    char *text = read_file(file, &len);
    CHECK_MSG(text != NULL, file);

    /* The placeholders, for this machine. */
    const char *dir = scratch_dir();
    char missing[600], regular[600], policy[600];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    snprintf(regular, sizeof regular, "%s/file.txt", dir);
    snprintf(policy, sizeof policy, "%s/policy.json", dir);
    write_file(regular, "x");
    write_file(policy, "{\"preset\": \"read-only\"}");
    const char *names[] = {"$DIR", "$MISSING", "$FILE", "$POLICY", "$MOCK"};
    const char *values[] = {dir, missing, regular, policy, mock_agent_path()};
    /* $MISSING before $DIR would not matter: no placeholder is a prefix of another. */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *v = json_inner(values[i]);
        char *next = replace_all(text, names[i], v);
        free(v);
        free(text);
        text = next;
    }
    json *doc = json_parse(text, strlen(text));
    CHECK_MSG(doc != NULL, "cases.json does not parse");
    free(text);
    const json *cases = json_get(doc, "cases");
    CHECK(cases && cases->length >= 50);
    const size_t total = cases->length;

    /* Sessions open on one spawned mock agent; pools over its spec. */
    acph_host *shared = make_host(NULL);
    char *spec = mock_spec(NULL);
    uint64_t agent = 0;
    EXPECT_CALL(ACPH_STATUS_OK, shared, acph_host_spawn(shared, spec, strlen(spec), CALL, ERR), &agent, NULL);

    size_t failures = 0, counts[4] = {0};
    for (size_t i = 0; i < cases->length; i++) {
        const json *c = json_at(cases, i);
        const char *name = json_str(json_get(c, "name"));
        const char *document = json_str(json_get(c, "document"));
        char *body = json_dump(json_get(c, "doc"));
        acph_error *err = NULL;
        acph_status st;
        if (strcmp(document, "host") == 0) {
            acph_host *h = NULL;
            st = acph_host_new(body, strlen(body), &h, &err);
            CHECK((st == ACPH_STATUS_OK) == (h != NULL));
            acph_host_free(h);
            counts[0]++;
        } else if (strcmp(document, "agent") == 0) {
            acph_host *h = make_host(NULL);
            uint64_t a = 0;
            uint64_t call = 0;
            st = call_sync(h, acph_host_spawn(h, body, strlen(body), &call, &err), &call, T_WAIT, &a, NULL, &err);
            CHECK((st == ACPH_STATUS_OK) == (a != 0));
            acph_host_free(h);
            counts[1]++;
        } else if (strcmp(document, "session") == 0) {
            uint64_t s = 0;
            uint64_t call = 0;
            st = call_sync(shared, acph_agent_new_session(shared, agent, body, strlen(body), &call, &err), &call,
                           T_WAIT, &s, NULL, &err);
            CHECK((st == ACPH_STATUS_OK) == (s != 0));
            counts[2]++;
        } else if (strcmp(document, "pool") == 0) {
            uint64_t pool = 0;
            st = acph_pool_new(shared, spec, strlen(spec), body, strlen(body), &pool, &err);
            CHECK((st == ACPH_STATUS_OK) == (pool != 0));
            if (pool) EXPECT(ACPH_STATUS_OK, acph_pool_release(shared, pool, ERR));
            counts[3]++;
        } else {
            test_fail(__FILE__, __LINE__, "unknown document", document);
            return 1;
        }
        char *got = outcome(st, err);
        char *want = expected(c);
        bool same = strcmp(got, want) == 0;
        printf("%s %-8s %-50s %s%s%s\n", same ? "ok  " : "FAIL", document, name, got, same ? "" : ", want ",
               same ? "" : want);
        if (!same) failures++;
        free(got);
        free(want);
        free(body);
    }
    free(spec);
    json_free(doc);
    acph_event *ev = NULL;
    while (acph_host_try_next_event(shared, &ev) == ACPH_STATUS_OK) acph_event_free(ev);
    acph_host_free(shared);
    /* Every kind of document was fed. */
    CHECK(counts[0] > 0 && counts[1] > 0 && counts[2] > 0 && counts[3] > 0);
    if (failures) {
        char detail[64];
        snprintf(detail, sizeof detail, "%zu case(s) differ", failures);
        test_fail(__FILE__, __LINE__, "tests/options/cases.json through the C ABI", detail);
    }
    printf("test_options: ok (%zu cases)\n", total);
    return 0;
}
