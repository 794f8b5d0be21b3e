/* Supervised agents through the C ABI (the spec's `restart` member): a bad policy is
 * `invalid_config` and starts nothing; an agent that crashes mid-turn fails the prompt with
 * `agent_exited`, is restarted under the same agent id (`agent_restarting`, `agent_restarted`)
 * and the same session handle prompts again; an agent that cannot start again ends in
 * `agent_failed` and reports `restartsExhausted`. The agent is the mock behind a small shell
 * wrapper that counts its starts in a directory and sources `start.N` (else `start.rest`) before
 * exec'ing the mock, so each start can crash or fail (as core/tests/integration/supervisor.rs does). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "support/portable.h"

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static const char WRAPPER[] =
    "d=$0; m=$1; n=$(( $(cat \"$d/starts\" 2>/dev/null || echo 0) + 1 )); echo $n > \"$d/starts\"; ARGS=\"\"\n"
    "if [ -f \"$d/start.$n\" ]; then . \"$d/start.$n\"; elif [ -f \"$d/start.rest\" ]; then . \"$d/start.rest\"; fi\n"
    "exec \"$m\" $ARGS";

/* A fresh directory for one case's wrapper state (start files, start count, the mock's sessions). */
static char *case_dir(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", scratch_dir(), name);
    CHECK_MSG(mkdir(path, 0700) == 0, strerror(errno));
    char *dir = strdup(path);
    CHECK(dir != NULL);
    return dir;
}

static void write_start(const char *dir, const char *which, const char *body) {
    char path[1024];
    snprintf(path, sizeof path, "%s/start.%s", dir, which);
    FILE *f = fopen(path, "w");
    CHECK_MSG(f != NULL, path);
    fputs(body, f);
    fputc('\n', f);
    CHECK(fclose(f) == 0);
}

/* How many times the wrapper ran. */
static unsigned starts(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/starts", dir);
    char *text = read_file(path, NULL);
    if (!text) return 0;
    unsigned n = (unsigned)strtoul(text, NULL, 10);
    free(text);
    return n;
}

/* The wrapper spec; `restart` is the policy's JSON text, spliced in as is. */
static char *wrapper_spec(const char *dir, const char *restart) {
    json *spec = json_new_object();
    json_set(spec, "command", json_new_string("/bin/sh"));
    json *args = json_new_array();
    json_push(args, json_new_string("-c"));
    json_push(args, json_new_string(WRAPPER));
    json_push(args, json_new_string(dir));
    json_push(args, json_new_string(mock_agent_path()));
    json_set(spec, "args", args);
    json *env = json_new_object();
    json_set(env, "ACP_MOCK_STATE_DIR", json_new_string(dir));
    json_set(env, "ACP_MOCK_EXIT_ON", json_new_null());
    json_set(env, "ACP_MOCK_CREDENTIALS", json_new_null());
    json_set(spec, "env", env);
    char *head = json_dump(spec);
    json_free(spec);
    /* `{...}` → `{...,"restart":<restart>}` */
    size_t n = strlen(head) + strlen(restart) + 16;
    char *s = malloc(n);
    if (!s) abort();
    snprintf(s, n, "%.*s,\"restart\":%s}", (int)(strlen(head) - 1), head, restart);
    free(head);
    return s;
}

static json *agent_info(acph_host *h, uint64_t agent) {
    char *text = NULL;
    EXPECT(ACPH_STATUS_OK, acph_agent_info(h, agent, &text, ERR));
    json *j = json_parse(text, strlen(text));
    CHECK_MSG(j != NULL, text);
    acph_string_free(text);
    return j;
}

static bool restarts_exhausted(acph_host *h, uint64_t agent) {
    json *info = agent_info(h, agent);
    const json *v = json_get(info, "restartsExhausted");
    CHECK(v != NULL && v->type == JSON_BOOL);
    bool b = v->boolean;
    json_free(info);
    return b;
}

static uint64_t u64_at(const json *data, const char *key) {
    uint64_t n = 0;
    CHECK_MSG(json_u64(json_get(data, key), &n), key);
    return n;
}

static bool str_is(const json *v, const char *want) {
    const char *s = json_str(v);
    return s && strcmp(s, want) == 0;
}

static uint64_t open_session(acph_host *h, uint64_t agent, event_list *evs) {
    char *opts = session_options(scratch_dir());
    uint64_t session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    wait_kind(h, evs, "session_opened", T_WAIT);
    return session;
}

static char *prompt_stop_reason(acph_host *h, uint64_t session, const char *text) {
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, session, text, strlen(text), CALL, ERR), NULL, &result);
    json *r = json_parse(result, strlen(result));
    CHECK(r != NULL);
    char *stop = strdup(json_str(json_get(r, "stopReason")));
    json_free(r);
    acph_string_free(result);
    return stop;
}

/* A policy the core refuses is the typed config error, and nothing is started. */
static void bad_policy_is_refused(void) {
    char *dir = case_dir("bad");
    acph_host *h = make_host(NULL);
    static const struct {
        const char *policy, *says, *path;
    } bad[] = {
        /* The core's paths, as in every face. */
        {"{\"maxRestart\":3}", "maxRestart", "restart.maxRestart"},
        {"{\"backoffMs\":-5}", "backoffMs", "restart.backoffMs"},
        {"{\"maxRestarts\":\"3\"}", "maxRestarts", "restart.maxRestarts"},
        {"[3]", "object", "restart"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *spec = wrapper_spec(dir, bad[i].policy);
        uint64_t agent = 4242;
        acph_error *err = NULL;
        EXPECT_CALL_E(ACPH_STATUS_INVALID_CONFIG, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL, &err);
        CHECK(agent == 4242); /* out-params are written only on success */
        CHECK(strcmp(err->kind, "invalid_config") == 0);
        CHECK_MSG(strstr(err->message, bad[i].says) != NULL, err->message);
        json *data = json_parse(err->data, strlen(err->data));
        CHECK_MSG(str_is(json_get(data, "path"), bad[i].path), err->data);
        json_free(data);
        acph_error_free(err);
        /* The asynchronous form refuses it the same way, without a call. */
        uint64_t call = 0;
        EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_host_spawn(h, spec, strlen(spec), &call, ERR));
        CHECK(call == 0);
        free(spec);
    }
    CHECK(starts(dir) == 0);
    acph_event *ev = NULL;
    CHECK(acph_host_try_next_event(h, &ev) == ACPH_STATUS_EMPTY && ev == NULL);
    acph_host_free(h);
    free(dir);
}

static void crash_mid_turn_is_restarted(void) {
    char *dir = case_dir("crash");
    write_start(dir, "1", "ARGS=\"--scenario crash-mid-turn\"");
    acph_host *h = make_host(NULL);
    event_list evs = {0};
    char *spec = wrapper_spec(dir, "{\"maxRestarts\":3,\"backoffMs\":20,\"maxBackoffMs\":200}");
    uint64_t agent = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    uint64_t session = open_session(h, agent, &evs);
    long first_pid = agent_pid(&evs);
    CHECK(!restarts_exhausted(h, agent));

    /* The turn in flight fails with the typed exit status. */
    acph_error *err = NULL;
    EXPECT_CALL_E(ACPH_STATUS_AGENT_EXITED, h, acph_session_prompt_text(h, session, "go", 2, CALL, ERR), NULL, NULL, &err);
    CHECK_MSG(strstr(err->data, "\"exitCode\":3") != NULL, err->data);
    acph_error_free(err);

    size_t before = evs.len;
    const acph_event *restarted = wait_kind(h, &evs, "agent_restarted", T_WAIT);
    check_seq_increasing(&evs);
    /* The crash as for any agent, then the restart: one agent id throughout. */
    const char *want[] = {"session_closed", "agent_exited", "agent_restarting", "agent_ready", "session_opened",
                          "agent_restarted"};
    size_t w = 0;
    const acph_event *restarting = NULL, *reopened = NULL;
    for (size_t i = before; i < evs.len; i++) {
        const acph_event *ev = evs.items[i];
        /* The turn's own events (its call's call_completed too) and the agents' stderr lines
         * (their timing is the OS's). */
        if (event_is(ev, "agent_stderr") || event_is(ev, "turn_started") || event_is(ev, "session_update") ||
            event_is(ev, "turn_ended") || event_is(ev, "call_completed"))
            continue;
        CHECK(ev->agent == agent);
        CHECK_MSG(w < sizeof want / sizeof want[0] && event_is(ev, want[w]), ev->kind_name);
        w++;
        if (event_is(ev, "agent_restarting")) restarting = ev;
        if (event_is(ev, "session_opened")) reopened = ev;
    }
    CHECK(w == sizeof want / sizeof want[0]);
    CHECK(restarting->kind == ACPH_EVENT_AGENT_RESTARTING);
    json *rj = event_json(restarting);
    const json *rd = json_get(rj, "data");
    CHECK(u64_at(rd, "attempt") == 1 && u64_at(rd, "maxRestarts") == 3);
    CHECK(str_is(json_get(json_get(rd, "error"), "kind"), "agent_exited"));
    json_free(rj);
    /* The reopened session keeps its handle. */
    CHECK(reopened->session == session);
    CHECK(strstr(reopened->json, "\"origin\":\"resume\"") != NULL);

    CHECK(restarted->kind == ACPH_EVENT_AGENT_RESTARTED && restarted->agent == agent);
    json *dj = event_json(restarted);
    const json *d = json_get(dj, "data");
    CHECK(u64_at(d, "attempt") == 1);
    long new_pid = (long)u64_at(d, "pid");
    CHECK(new_pid != first_pid && pid_alive(new_pid));
    const json *recovered = json_get(d, "recovered");
    CHECK(recovered && recovered->type == JSON_ARRAY && recovered->length == 1);
    char sid[256];
    snprintf(sid, sizeof sid, "%.*s", (int)reopened->session_id_len, reopened->session_id);
    CHECK(str_is(json_get(json_at(recovered, 0), "sessionId"), sid));
    CHECK(str_is(json_get(json_at(recovered, 0), "via"), "resume"));
    const json *lost = json_get(d, "lost");
    CHECK(lost && lost->type == JSON_ARRAY && lost->length == 0);
    json_free(dj);
    CHECK(wait_gone(first_pid, 5000));

    /* The same handles reach the new process. */
    char *stop = prompt_stop_reason(h, session, "again");
    CHECK_MSG(strcmp(stop, "end_turn") == 0, stop);
    free(stop);
    json *info = agent_info(h, agent);
    CHECK(json_is_null(json_get(info, "exited")));
    json_free(info);
    CHECK(!restarts_exhausted(h, agent));
    CHECK(starts(dir) == 2);

    /* Shutdown ends supervision: the agent is not started again. */
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_shutdown(h, agent, CALL, ERR), NULL, NULL);
    CHECK(wait_gone(new_pid, 5000));
    acph_event *ev = NULL;
    while (acph_host_next_event(h, 300, &ev) == ACPH_STATUS_OK) {
        CHECK_MSG(!event_is(ev, "agent_restarting"), ev->json);
        events_push(&evs, ev);
    }
    CHECK(starts(dir) == 2);
    events_free(&evs);
    acph_host_free(h);
    free(dir);
}

static void an_agent_that_cannot_start_again_fails(void) {
    char *dir = case_dir("fail");
    /* The first process exits on the prompt; every later start fails before the handshake. */
    write_start(dir, "1", "export ACP_MOCK_EXIT_ON=session/prompt");
    write_start(dir, "rest", "echo 'cannot start' >&2; exit 7");
    acph_host *h = make_host(NULL);
    event_list evs = {0};
    char *spec = wrapper_spec(dir, "{\"maxRestarts\":2,\"backoffMs\":20,\"maxBackoffMs\":100}");
    uint64_t agent = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    uint64_t session = open_session(h, agent, &evs);
    long pid = agent_pid(&evs);

    EXPECT_CALL(ACPH_STATUS_AGENT_EXITED, h, acph_session_prompt_text(h, session, "go", 2, CALL, ERR), NULL, NULL);
    const acph_event *failed = wait_kind(h, &evs, "agent_failed", T_WAIT);
    check_seq_increasing(&evs);
    CHECK(failed->kind == ACPH_EVENT_AGENT_FAILED && failed->agent == agent);
    json *fj = event_json(failed);
    CHECK(u64_at(json_get(fj, "data"), "attempts") == 2);
    CHECK(json_str(json_get(json_get(json_get(fj, "data"), "error"), "kind")) != NULL);
    json_free(fj);
    /* Two attempts, numbered, each announced; none succeeded. */
    uint64_t attempt = 0;
    for (size_t i = 0; i < evs.len; i++) {
        if (!event_is(evs.items[i], "agent_restarting")) continue;
        CHECK(evs.items[i]->agent == agent);
        json *j = event_json(evs.items[i]);
        CHECK(u64_at(json_get(j, "data"), "attempt") == ++attempt);
        json_free(j);
    }
    CHECK(attempt == 2);
    CHECK(count_kind(&evs, "agent_restarted", NULL) == 0);
    CHECK(starts(dir) == 3);
    CHECK(wait_gone(pid, 5000));

    /* Terminal: it stays down, says so, and its calls fail with the exit status. */
    CHECK(restarts_exhausted(h, agent));
    json *info = agent_info(h, agent);
    CHECK(!json_is_null(json_get(info, "exited")));
    json_free(info);
    EXPECT_CALL(ACPH_STATUS_AGENT_EXITED, h, acph_session_prompt_text(h, session, "again", 5, CALL, ERR), NULL, NULL);
    char *opts = session_options(scratch_dir());
    uint64_t s2 = 0;
    EXPECT_CALL(ACPH_STATUS_AGENT_EXITED, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &s2, NULL);
    free(opts);
    /* Nothing more happens: no start, no event but those two calls' own call_completed. */
    acph_event *ev = NULL;
    acph_status st;
    while ((st = acph_host_next_event(h, 300, &ev)) == ACPH_STATUS_OK) {
        CHECK_MSG(ev->kind == ACPH_EVENT_CALL_COMPLETED, ev->kind_name);
        acph_event_free(ev);
    }
    CHECK(st == ACPH_STATUS_EMPTY);
    CHECK(starts(dir) == 3);
    events_free(&evs);
    acph_host_free(h);
    free(dir);
}

int main(void) {
    bad_policy_is_refused();
    crash_mid_turn_is_restarted();
    an_agent_that_cannot_start_again_fails();
    printf("test_supervisor: ok\n");
    return 0;
}
