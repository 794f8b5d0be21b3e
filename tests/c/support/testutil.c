#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "portable.h"
#ifdef _WIN32
#include <windows.h>
#endif

void test_fail(const char *file, int line, const char *what, const char *detail) {
    fprintf(stderr, "FAIL %s:%d: %s%s%s\n", file, line, what, detail ? ": " : "", detail ? detail : "");
    fflush(stderr);
    exit(1);
}

void expect_status(const char *file, int line, const char *call, acph_status got, acph_error *err,
                   acph_status want, acph_error **keep) {
    if (got != want) {
        char detail[2048];
        snprintf(detail, sizeof detail, "got %s (%u), want %s (%u)%s%s%s%s", acph_status_str(got),
                 (unsigned)got, acph_status_str(want), (unsigned)want, err ? "; error: " : "",
                 err ? err->message : "", err ? " data=" : "", err ? err->data : "");
        acph_error_free(err);
        test_fail(file, line, call, detail);
    }
    if (err) {
        /* An error object is written exactly when the call failed. */
        if (got == ACPH_STATUS_OK) test_fail(file, line, call, "error object written on success");
        if (err->code != got) test_fail(file, line, call, "error->code differs from the status");
        if (strcmp(err->kind, acph_status_str(got)) != 0 && got != ACPH_STATUS_OTHER)
            test_fail(file, line, call, "error->kind differs from acph_status_str");
        if (!err->message || !err->data) test_fail(file, line, call, "error fields missing");
    } else if (got != ACPH_STATUS_OK && got != ACPH_STATUS_EMPTY) {
        test_fail(file, line, call, "no error object for a failure");
    }
    if (keep) *keep = err;
    else acph_error_free(err);
}

acph_status call_sync(acph_host *h, acph_status started, const uint64_t *call, uint32_t timeout_ms,
                      uint64_t *id_out, char **result_out, acph_error **err) {
    if (started != ACPH_STATUS_OK) return started;
    return acph_call_wait(h, *call, timeout_ms, id_out, result_out, err);
}

static const char *env_or_fail(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "FAIL: environment variable %s is not set (run through scripts/test-c)\n", name);
        exit(1);
    }
    return v;
}

const char *mock_agent_path(void) { return env_or_fail("ACPH_MOCK_AGENT"); }
const char *fixtures_dir(void) { return env_or_fail("ACPH_FIXTURES"); }

const char *scratch_dir(void) {
    static char path[512];
    if (!path[0]) {
        const char *base = getenv("ACPH_SCRATCH");
        if (!base || !*base) base = "/tmp";
        snprintf(path, sizeof path, "%s/acph-c-XXXXXX", base);
        if (!mkdtemp(path)) test_fail(__FILE__, __LINE__, "mkdtemp", strerror(errno));
    }
    return path;
}

char *mock_spec(const char *scenario) {
    json *spec = json_new_object();
    json_set(spec, "command", json_new_string(mock_agent_path()));
    json *args = json_new_array();
    if (scenario) {
        json_push(args, json_new_string("--scenario"));
        json_push(args, json_new_string(scenario));
    }
    json_set(spec, "args", args);
    char *s = json_dump(spec);
    json_free(spec);
    return s;
}

char *session_options(const char *cwd) {
    json *o = json_new_object();
    json_set(o, "cwd", json_new_string(cwd));
    char *s = json_dump(o);
    json_free(o);
    return s;
}

acph_host *make_host(const char *config_json) {
    acph_host *h = NULL;
    EXPECT(ACPH_STATUS_OK,
           acph_host_new(config_json, config_json ? strlen(config_json) : 0, &h, ERR));
    CHECK(h != NULL);
    return h;
}

void events_push(event_list *l, acph_event *ev) {
    if (l->len == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->items = realloc(l->items, l->cap * sizeof *l->items);
        CHECK(l->items != NULL);
    }
    l->items[l->len++] = ev;
}

void events_free(event_list *l) {
    for (size_t i = 0; i < l->len; i++) acph_event_free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->len = l->cap = 0;
}

acph_event *next_event(acph_host *h, uint32_t timeout_ms) {
    acph_event *ev = NULL;
    acph_status st = acph_host_next_event(h, timeout_ms, &ev);
    if (st != ACPH_STATUS_OK) test_fail(__FILE__, __LINE__, "next_event", acph_status_str(st));
    CHECK(ev != NULL);
    CHECK(ev->json != NULL && strlen(ev->json) == ev->json_len);
    CHECK(ev->kind_name != NULL);
    return ev;
}

bool event_is(const acph_event *ev, const char *kind_name) { return strcmp(ev->kind_name, kind_name) == 0; }

static void describe_tail(const event_list *l, char *buf, size_t n) {
    size_t off = 0;
    buf[0] = 0;
    size_t start = l->len > 12 ? l->len - 12 : 0;
    for (size_t i = start; i < l->len && off + 40 < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s ", l->items[i]->kind_name);
}

const acph_event *wait_kind(acph_host *h, event_list *l, const char *kind_name, uint32_t timeout_ms) {
    uint64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline) break;
        acph_event *ev = NULL;
        acph_status st = acph_host_next_event(h, (uint32_t)(deadline - now), &ev);
        if (st == ACPH_STATUS_EMPTY) break;
        if (st != ACPH_STATUS_OK) test_fail(__FILE__, __LINE__, "wait_kind: next_event", acph_status_str(st));
        events_push(l, ev);
        if (event_is(ev, kind_name)) return ev;
    }
    char buf[1024], detail[1200];
    describe_tail(l, buf, sizeof buf);
    snprintf(detail, sizeof detail, "timed out waiting for %s; last kinds: %s", kind_name, buf);
    test_fail(__FILE__, __LINE__, "wait_kind", detail);
    return NULL;
}

const acph_event *wait_call(acph_host *h, event_list *l, uint64_t call, uint32_t timeout_ms) {
    uint64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline) break;
        acph_event *ev = NULL;
        acph_status st = acph_host_next_event(h, (uint32_t)(deadline - now), &ev);
        if (st == ACPH_STATUS_EMPTY) break;
        if (st != ACPH_STATUS_OK) test_fail(__FILE__, __LINE__, "wait_call: next_event", acph_status_str(st));
        events_push(l, ev);
        if (ev->kind == ACPH_EVENT_CALL_COMPLETED && ev->call == call) {
            EXPECT(ACPH_STATUS_OK, acph_call_free(h, call, ERR));
            return ev;
        }
    }
    char buf[1024], detail[1200];
    describe_tail(l, buf, sizeof buf);
    snprintf(detail, sizeof detail, "timed out waiting for call %llu; last kinds: %s",
             (unsigned long long)call, buf);
    test_fail(__FILE__, __LINE__, "wait_call", detail);
    return NULL;
}

json *event_json(const acph_event *ev) {
    json *j = json_parse(ev->json, ev->json_len);
    CHECK_MSG(j != NULL, ev->json);
    return j;
}

bool call_result(const acph_event *ev, char **kind_out, json **result_out) {
    CHECK(ev->kind == ACPH_EVENT_CALL_COMPLETED);
    json *j = event_json(ev);
    const json *data = json_get(j, "data");
    const json *ok = json_get(data, "ok");
    CHECK(ok && ok->type == JSON_BOOL);
    uint64_t call = 0;
    CHECK(json_u64(json_get(data, "call"), &call) && call == ev->call);
    bool is_ok = ok->boolean;
    if (kind_out) {
        const char *k = json_str(json_get(json_get(data, "error"), "kind"));
        *kind_out = k ? strdup(k) : NULL;
    }
    if (result_out) {
        const json *r = json_get(data, "result");
        *result_out = r ? json_clone(r) : NULL;
    }
    json_free(j);
    return is_ok;
}

void check_turn_result(const json *r) {
    static const char *const fields[] = {"turn", "stopReason", "usage", "raw", "text", "thought", "textTruncated"};
    const size_t n = sizeof fields / sizeof fields[0];
    CHECK(r != NULL && r->type == JSON_OBJECT);
    char *text = json_dump(r);
    CHECK_MSG(r->length == n, text);
    for (size_t i = 0; i < n; i++) CHECK_MSG(json_get(r, fields[i]) != NULL, fields[i]);
    uint64_t turn = 0;
    CHECK_MSG(json_u64(json_get(r, "turn"), &turn) && turn != 0, text);
    CHECK_MSG(json_str(json_get(r, "stopReason")) != NULL, text);
    CHECK_MSG(json_get(r, "raw")->type == JSON_OBJECT, text);
    CHECK_MSG(json_str(json_get(r, "text")) != NULL && json_str(json_get(r, "thought")) != NULL, text);
    CHECK_MSG(json_get(r, "textTruncated")->type == JSON_BOOL, text);
    const json *usage = json_get(r, "usage");
    CHECK_MSG(usage->type == JSON_NULL || usage->type == JSON_OBJECT, text);
    free(text);
}

size_t count_kind(const event_list *l, const char *kind_name, const char *update) {
    size_t n = 0;
    for (size_t i = 0; i < l->len; i++) {
        if (!event_is(l->items[i], kind_name)) continue;
        if (update) {
            json *j = event_json(l->items[i]);
            const char *u = json_str(json_get(json_get(j, "data"), "sessionUpdate"));
            if (u && strcmp(u, update) == 0) n++;
            json_free(j);
        } else {
            n++;
        }
    }
    return n;
}

const acph_event *find_kind(const event_list *l, const char *kind_name) {
    for (size_t i = 0; i < l->len; i++)
        if (event_is(l->items[i], kind_name)) return l->items[i];
    return NULL;
}

void check_seq_increasing(const event_list *l) {
    for (size_t i = 1; i < l->len; i++) CHECK(l->items[i - 1]->seq < l->items[i]->seq);
}

long agent_pid(const event_list *l) {
    const acph_event *ready = find_kind(l, "agent_ready");
    CHECK(ready != NULL);
    json *j = event_json(ready);
    uint64_t pid = 0;
    CHECK(json_u64(json_get(json_get(j, "data"), "pid"), &pid));
    json_free(j);
    return (long)pid;
}

#ifdef _WIN32
/* Alive until it has exited (an exited process keeps its pid while a handle is open). */
bool pid_alive(long pid) {
    HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (!h) return false;
    DWORD code = 0;
    BOOL queried = GetExitCodeProcess(h, &code);
    CloseHandle(h);
    return queried && code == STILL_ACTIVE;
}
#else
bool pid_alive(long pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    size_t len = 0;
    char *stat = read_file(path, &len);
    if (!stat) return false;
    const char *close_paren = strrchr(stat, ')');
    bool alive = true;
    if (close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X')) alive = false;
    free(stat);
    return alive;
}
#endif

bool wait_gone(long pid, int timeout_ms) {
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    while (now_ms() < deadline) {
        if (!pid_alive(pid)) return true;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return !pid_alive(pid);
}

uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
