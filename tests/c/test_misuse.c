/* Misuse from a language without a borrow checker: NULL arguments, invalid UTF-8 and JSON, stale
 * and foreign ids, answering twice, blocking inside a callback, calls after shutdown, and freeing
 * a host with operations pending. Every one is a status code, never a crash or a leak. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static void null_arguments(void) {
    acph_host *h = make_host(NULL);
    uint64_t id = 0;
    char *s = NULL;
    acph_event *ev = NULL;
    acph_error *err = NULL;
    int fd = -1;
    const char *spec = "{\"command\":\"x\"}";
    /* A NULL host. */
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_spawn(NULL, spec, strlen(spec), &id, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_shutdown(NULL, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_event_fd(NULL, &fd, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_permission_respond(NULL, 1, NULL, 0, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_session_cancel(NULL, 1, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_agent_info(NULL, 1, &s, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_call_wait(NULL, 1, 0, &id, &s, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_call_free(NULL, 1, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_call_cancel(NULL, 1, ERR));
    CHECK(acph_host_next_event(NULL, 0, &ev) == ACPH_STATUS_NULL_ARGUMENT);
    CHECK(acph_host_try_next_event(NULL, &ev) == ACPH_STATUS_NULL_ARGUMENT);
    /* NULL out-params: refused before anything happens (no call is started). */
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_new(NULL, 0, NULL, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_spawn(h, spec, strlen(spec), NULL, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_event_fd(h, NULL, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_session_id(h, 1, NULL, NULL, ERR));
    CHECK(acph_host_try_next_event(h, NULL) == ACPH_STATUS_NULL_ARGUMENT);
    /* NULL required strings. */
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_spawn(h, NULL, 5, &id, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_agent_authenticate(h, 1, NULL, 0, &id, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_session_prompt_text(h, 1, NULL, 0, &id, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_service_fail(h, 1, -32603, NULL, 0, ERR));
    /* The error object says which argument. */
    EXPECT_E(ACPH_STATUS_NULL_ARGUMENT, acph_host_spawn(h, spec, strlen(spec), NULL, ERR), &err);
    CHECK(strcmp(err->kind, "null_argument") == 0 && strstr(err->message, "call_out") != NULL);
    CHECK(strcmp(err->data, "null") == 0);
    acph_error_free(err);
    /* A NULL error_out is fine: the status alone. */
    CHECK(acph_host_spawn(h, NULL, 0, &id, NULL) == ACPH_STATUS_NULL_ARGUMENT);
    /* Nothing was started: no event. */
    CHECK(acph_host_try_next_event(h, &ev) == ACPH_STATUS_EMPTY && ev == NULL);
    acph_host_free(h);
}

static void bad_strings_and_json(void) {
    acph_host *h = NULL;
    acph_error *err = NULL;
    /* Config: not JSON, unknown field, bad policy, bad value. */
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_host_new("{", 1, &h, ERR));
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_host_new("{\"permision\":\"manual\"}", 22, &h, ERR), &err);
    CHECK(strstr(err->data, "\"path\":\"permision\"") != NULL);
    acph_error_free(err);
    const char *bad_policy = "{\"policy\":{\"rules\":[{\"action\":\"permit\"}]}}";
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_host_new(bad_policy, strlen(bad_policy), &h, ERR), &err);
    CHECK(strstr(err->message, "rules[0].action") != NULL);
    /* The same path as every face reports (docs/ERRORS.md). */
    CHECK(strstr(err->data, "\"path\":\"policy.rules[0].action\"") != NULL);
    acph_error_free(err);
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_host_new("{\"eventCapacity\":0}", 19, &h, ERR));
    EXPECT(ACPH_STATUS_INVALID_UTF8, acph_host_new("{\"x\":\"\xff\"}", 9, &h, ERR));
    CHECK(h == NULL);

    h = make_host(NULL);
    uint64_t id = 0;
    EXPECT(ACPH_STATUS_INVALID_UTF8, acph_host_spawn(h, "\xc3\x28", 2, &id, ERR));
    /* An agent spec is an option document: the core's invalid_config, as for the host's. */
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_host_spawn(h, "{\"command\":", 11, &id, ERR));
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_host_spawn(h, "{\"cmd\":\"x\"}", 11, &id, ERR));
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_host_spawn(h, "[]", 2, &id, ERR));
    /* Lengths are honoured: the bytes after `len` are not read (here: a valid prefix). */
    char *spec = mock_spec("version-mismatch");
    size_t spec_len = strlen(spec);
    char *spec_and_junk = malloc(spec_len + 3);
    memcpy(spec_and_junk, spec, spec_len);
    memcpy(spec_and_junk + spec_len, "\xff\xff", 3);
    uint64_t agent = 0;
    EXPECT_CALL(ACPH_STATUS_VERSION_UNSUPPORTED, h, acph_host_spawn(h, spec_and_junk, spec_len, CALL, ERR), &agent, NULL);
    free(spec_and_junk);
    free(spec);
    /* A command that does not exist: spawn_failed (or, where exec failures surface as an exit, as
     * under valgrind, agent_exited with exit code 127). */
    acph_error *e = NULL;
    const char *missing = "{\"command\":\"/nonexistent/agent\"}";
    uint64_t call = 0;
    acph_status st = call_sync(h, acph_host_spawn(h, missing, strlen(missing), &call, &e), &call, T_WAIT, &agent,
                               NULL, &e);
    CHECK(st == ACPH_STATUS_SPAWN_FAILED || (st == ACPH_STATUS_AGENT_EXITED && strstr(e->data, "127")));
    acph_error_free(e);
    CHECK(agent == 0);
    acph_host_free(h);
}

static void stale_and_foreign_ids(void) {
    acph_host *a = make_host("{\"permission\":\"manual\"}");
    acph_host *b = make_host("{\"permission\":\"manual\"}");
    uint64_t agent = 0, session = 0, call = 0, out = 0;
    char *spec = mock_spec(NULL);
    EXPECT_CALL(ACPH_STATUS_OK, a, acph_host_spawn(a, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    char *opts = session_options(scratch_dir());
    EXPECT_CALL(ACPH_STATUS_OK, a, acph_agent_new_session(a, agent, opts, strlen(opts), CALL, ERR), &session, NULL);

    /* Never issued. */
    EXPECT(ACPH_STATUS_STALE_ID, acph_agent_new_session(a, 999, opts, strlen(opts), &call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_session_prompt_text(a, 123456789, "x", 1, &call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_session_cancel(a, 0, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_cancel(a, 987654321, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_wait(a, 987654321, 0, &out, NULL, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_free(a, 987654321, ERR));
    EXPECT(ACPH_STATUS_NOT_FOUND, acph_permission_respond(a, 4242, NULL, 0, ERR));
    EXPECT(ACPH_STATUS_NOT_FOUND, acph_service_respond(a, 5555555, "{}", 2, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_host_find_session(a, agent, "sess_nope", 9, &out, ERR));
    /* Foreign: another host's ids. */
    EXPECT(ACPH_STATUS_STALE_ID, acph_session_prompt_text(b, session, "x", 1, &call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_session_agent(b, session, &out, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_agent_new_session(b, agent, opts, strlen(opts), &call, ERR));
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session(a, agent, opts, strlen(opts), &call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_wait(b, call, 0, &out, NULL, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_free(b, call, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_wait(a, call, T_WAIT, &out, NULL, ERR));

    /* Released: the agent's id and its sessions' handles become stale. */
    event_list evs = {0};
    wait_kind(a, &evs, "session_opened", T_WAIT);
    long pid = agent_pid(&evs);
    EXPECT(ACPH_STATUS_OK, acph_agent_release(a, agent, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_agent_release(a, agent, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_session_prompt_text(a, session, "x", 1, &call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_agent_info(a, agent, (char **)&spec, ERR));
    wait_kind(a, &evs, "agent_exited", T_WAIT);
    CHECK(wait_gone(pid, 5000));
    free(opts);
    events_free(&evs);
    acph_host_free(b);
    acph_host_free(a);
}

static const char *option_of_kind(const json *data, const char *kind) {
    const json *options = json_get(data, "options");
    for (size_t i = 0; options && i < options->length; i++) {
        const json *o = json_at(options, i);
        if (strcmp(json_str(json_get(o, "kind")), kind) == 0) return json_str(json_get(o, "optionId"));
    }
    return NULL;
}

static void answering_twice(void) {
    acph_host *h = make_host("{\"permission\":\"manual\"}");
    uint64_t agent = 0, session = 0, call = 0;
    char *spec = mock_spec(NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    char *opts = session_options(scratch_dir());
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    event_list evs = {0};

    /* Turn 1: allow, then answer again (twice more). */
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "one", 3, &call, ERR));
    const acph_event *req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    json *j = event_json(req);
    char *allow = strdup(option_of_kind(json_get(j, "data"), "allow_once"));
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, req->request, allow, strlen(allow), ERR));
    EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_permission_respond(h, req->request, allow, strlen(allow), ERR));
    EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_permission_respond(h, req->request, NULL, 0, ERR));
    uint64_t first = req->request;
    json_free(j);
    const acph_event *resolved = wait_kind(h, &evs, "permission_resolved", T_WAIT);
    CHECK(resolved->request == first && strstr(resolved->json, "\"decidedBy\":\"host\"") != NULL);
    /* After the resolution too. */
    EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_permission_respond(h, first, allow, strlen(allow), ERR));
    free(allow);
    wait_call(h, &evs, call, T_WAIT);

    /* Turn 2: an option that was not offered denies (fail-closed) and says so. */
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "two", 3, &call, ERR));
    req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    CHECK(req->request > first);
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_permission_respond(h, req->request, "bogus", 5, ERR));
    EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_permission_respond(h, req->request, NULL, 0, ERR));
    resolved = wait_kind(h, &evs, "permission_resolved", T_WAIT);
    CHECK(strstr(resolved->json, "\"decidedBy\":\"invalid_answer\"") != NULL);
    wait_call(h, &evs, call, T_WAIT);

    /* Turn 3: deny with NULL. Invalid UTF-8 as an option is refused before anything is sent. */
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "three", 5, &call, ERR));
    req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    EXPECT(ACPH_STATUS_INVALID_UTF8, acph_permission_respond(h, req->request, "\xff", 1, ERR));
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, req->request, NULL, 0, ERR));
    resolved = wait_kind(h, &evs, "permission_resolved", T_WAIT);
    CHECK(strstr(resolved->json, "\"optionKind\":\"reject_once\"") != NULL);
    const acph_event *done;
    do done = wait_kind(h, &evs, "call_completed", T_WAIT);
    while (done->call != call);
    CHECK(call_result(done, NULL, NULL));
    /* Cancelling a completed call changes nothing: its outcome is still there, until released. */
    EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_call_cancel(h, call, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_wait(h, call, 0, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_cancel(h, call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_free(h, call, ERR));
    events_free(&evs);
    acph_host_free(h);
}

/* ----- blocking inside a callback ----- */
typedef struct {
    acph_host *host;
    _Atomic int calls;
    _Atomic int next_event_status;
    _Atomic int spawn_status;
    _Atomic int wait_status;
    _Atomic int poll_status;
    _Atomic int free_status;
    _Atomic int try_status;
    _Atomic int finalized;
    _Atomic int done;
} wake_ctx;

static void on_wake(void *user_data) {
    wake_ctx *c = user_data;
    if (atomic_fetch_add(&c->calls, 1) != 0) return;
    acph_event *ev = NULL;
    atomic_store(&c->next_event_status, (int)acph_host_next_event(c->host, 100, &ev));
    acph_event_free(ev);
    /* Starting a call is fine; waiting for it is not, polling it is. */
    uint64_t call = 0;
    const char *spec = "{\"command\":\"/nonexistent\"}";
    atomic_store(&c->spawn_status, (int)acph_host_spawn(c->host, spec, strlen(spec), &call, NULL));
    atomic_store(&c->wait_status, (int)acph_call_wait(c->host, call, 100, NULL, NULL, NULL));
    acph_status polled = acph_call_wait(c->host, call, 0, NULL, NULL, NULL);
    atomic_store(&c->poll_status, (int)polled);
    /* Still running: released here (a poll that got the outcome released it already). */
    atomic_store(&c->free_status, (int)(polled == ACPH_STATUS_TIMEOUT ? acph_call_free(c->host, call, NULL)
                                                                      : ACPH_STATUS_OK));
    /* Non-blocking calls are fine. */
    ev = NULL;
    atomic_store(&c->try_status, (int)acph_host_try_next_event(c->host, &ev));
    acph_event_free(ev);
    atomic_store(&c->done, 1);
}

static void on_finalize(void *user_data) {
    wake_ctx *c = user_data;
    atomic_fetch_add(&c->finalized, 1);
}

static void blocking_in_a_callback(void) {
    wake_ctx c = {0};
    c.host = make_host(NULL);
    EXPECT(ACPH_STATUS_OK, acph_host_set_wakeup(c.host, on_wake, &c, on_finalize, ERR));
    char *spec = mock_spec(NULL);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(c.host, spec, strlen(spec), &call, ERR));
    free(spec);
    uint64_t t0 = now_ms();
    while (!atomic_load(&c.done) && now_ms() - t0 < T_WAIT) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(atomic_load(&c.done));
    CHECK(atomic_load(&c.next_event_status) == ACPH_STATUS_WRONG_THREAD);
    CHECK(atomic_load(&c.spawn_status) == ACPH_STATUS_OK);
    CHECK(atomic_load(&c.wait_status) == ACPH_STATUS_WRONG_THREAD);
    int polled = atomic_load(&c.poll_status);
    CHECK(polled == ACPH_STATUS_TIMEOUT || polled == ACPH_STATUS_SPAWN_FAILED || polled == ACPH_STATUS_AGENT_EXITED);
    CHECK(atomic_load(&c.free_status) == ACPH_STATUS_OK);
    CHECK(atomic_load(&c.try_status) == ACPH_STATUS_OK || atomic_load(&c.try_status) == ACPH_STATUS_EMPTY);
    /* Replacing the callback runs the old finalizer once. */
    EXPECT(ACPH_STATUS_OK, acph_host_set_wakeup(c.host, NULL, NULL, NULL, ERR));
    CHECK(atomic_load(&c.finalized) == 1);
    acph_host_free(c.host);
    CHECK(atomic_load(&c.finalized) == 1);
}

static void after_shutdown(void) {
    acph_host *h = make_host(NULL);
    char *spec = mock_spec(NULL);
    uint64_t agent = 0, call = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT(ACPH_STATUS_OK, acph_host_shutdown(h, ERR));
    EXPECT(ACPH_STATUS_OK, acph_host_shutdown(h, ERR)); /* idempotent */
    EXPECT(ACPH_STATUS_CLOSED, acph_host_spawn(h, spec, strlen(spec), &call, ERR));
    EXPECT_CALL(ACPH_STATUS_CLOSED, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    event_list evs = {0};
    acph_event *ev = NULL;
    acph_status st;
    while ((st = acph_host_next_event(h, T_WAIT, &ev)) == ACPH_STATUS_OK) events_push(&evs, ev);
    CHECK(st == ACPH_STATUS_CLOSED);
    /* The agent's exit ends the stream; only the spawn's call_completed may come after it (a
     * waited call's event may be queued a moment after its wait returned). */
    size_t last = evs.len;
    while (last > 0 && event_is(evs.items[last - 1], "call_completed")) last--;
    CHECK(last > 0 && event_is(evs.items[last - 1], "agent_exited"));
    CHECK(count_kind(&evs, "call_completed", NULL) == 1);
    /* The event fd stays readable once the stream has ended (pollers see the end). */
    int fd = -1;
#ifdef _WIN32
    /* There is no event fd off Unix (the wake-up callback stands in for it). */
    EXPECT(ACPH_STATUS_UNSUPPORTED, acph_host_event_fd(h, &fd, ERR));
#else
    EXPECT(ACPH_STATUS_OK, acph_host_event_fd(h, &fd, ERR));
    CHECK(fd >= 0);
#endif
    events_free(&evs);
    acph_host_free(h);
}

/* ----- free with operations pending ----- */
static void on_service(void *user_data, uint64_t request_id, const char *method, const char *params, size_t len) {
    (void)method, (void)params, (void)len;
    *(uint64_t *)user_data = request_id; /* never answered */
}

static void free_with_operations_pending(void) {
    acph_host *h = make_host("{\"permission\":\"manual\",\"fs\":\"embedder\",\"shutdownGraceMs\":300}");
    uint64_t service_request = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_set_service_handler(h, on_service, &service_request, NULL, ERR));
    char *spec = mock_spec("hang");
    uint64_t hang_agent = 0, hang_session = 0, call = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &hang_agent, NULL);
    free(spec);
    char *opts = session_options(scratch_dir());
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, hang_agent, opts, strlen(opts), CALL, ERR), &hang_session, NULL);
    /* A prompt that never ends. */
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, hang_session, "go", 2, &call, ERR));
    /* A permission request nobody answers, and an fs request the embedder never answers. */
    spec = mock_spec(NULL);
    uint64_t agent = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "go", 2, &call, ERR));
    event_list evs = {0};
    wait_kind(h, &evs, "permission_requested", T_WAIT);
    /* A spawn and a session still in flight, and events nobody pulls. */
    spec = mock_spec(NULL);
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(h, spec, strlen(spec), &call, ERR));
    free(spec);
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session(h, agent, opts, strlen(opts), &call, ERR));
    free(opts);
    long pids[2];
    size_t n = 0;
    for (size_t i = 0; i < evs.len && n < 2; i++) {
        if (!event_is(evs.items[i], "agent_ready")) continue;
        json *j = event_json(evs.items[i]);
        uint64_t pid = 0;
        CHECK(json_u64(json_get(json_get(j, "data"), "pid"), &pid));
        pids[n++] = (long)pid;
        json_free(j);
    }
    CHECK(n == 2);
    uint64_t t0 = now_ms();
    acph_host_free(h);
    CHECK(now_ms() - t0 < 15000);
    CHECK(wait_gone(pids[0], 5000) && wait_gone(pids[1], 5000));
    /* Events taken before the free stay valid. */
    for (size_t i = 0; i < evs.len; i++) CHECK(strlen(evs.items[i]->json) == evs.items[i]->json_len);
    events_free(&evs);
}

int main(void) {
    null_arguments();
    bad_strings_and_json();
    stale_and_foreign_ids();
    answering_twice();
    blocking_in_a_callback();
    after_shutdown();
    free_with_operations_pending();
    printf("test_misuse: ok\n");
    return 0;
}
