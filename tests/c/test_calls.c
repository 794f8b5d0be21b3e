/* One wait for every asynchronous call (docs/FFI.md, "Calls"): acph_call_wait, acph_call_free,
 * acph_call_cancel and the rules of call ids.
 *
 * - A wait after an event thread already pulled the call's call_completed still gets the
 *   outcome: the same result JSON, and the primary id (agent, session handle, else 0).
 * - A wait with timeout 0 polls; a wait that times out leaves the call running and owned, and a
 *   second wait gets the outcome.
 * - Releasing a running call (acph_call_free) does not cancel it; its completion leaks nothing
 *   and its call_completed still arrives. A released id is stale_id for wait, free and cancel.
 * - Out-params are written only on success; the call's own error comes with its status.
 * - On a library thread (a callback) a wait with a timeout is wrong_thread; a poll is not.
 * - With "events": false nothing is queued, and every call is still waited for.
 * - acph_host_free releases the ids left (running and completed): nothing leaks. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t spawn(acph_host *h, event_list *evs) {
    char *spec = mock_spec(NULL);
    uint64_t call = 0, agent = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(h, spec, strlen(spec), &call, ERR));
    free(spec);
    EXPECT(ACPH_STATUS_OK, acph_call_wait(h, call, T_WAIT, &agent, NULL, ERR));
    CHECK(agent != 0);
    if (evs) wait_kind(h, evs, "agent_ready", T_WAIT);
    return agent;
}

static uint64_t new_session(acph_host *h, uint64_t agent) {
    char *opts = session_options(scratch_dir());
    uint64_t session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    CHECK(session != 0);
    return session;
}

/* The allow option of a `permission_requested` event (malloc'd). */
static char *allow_option(const acph_event *req) {
    json *j = event_json(req);
    const json *options = json_get(json_get(j, "data"), "options");
    char *allow = NULL;
    for (size_t i = 0; options && i < options->length; i++)
        if (strcmp(json_str(json_get(json_at(options, i), "kind")), "allow_once") == 0)
            allow = strdup(json_str(json_get(json_at(options, i), "optionId")));
    json_free(j);
    CHECK(allow != NULL);
    return allow;
}

static void answer_next_permission(acph_host *h, event_list *evs) {
    const acph_event *req = wait_kind(h, evs, "permission_requested", T_WAIT);
    char *allow = allow_option(req);
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, req->request, allow, strlen(allow), ERR));
    free(allow);
}

/* ----- an event thread pulls call_completed first; the wait still gets the outcome ----- */

typedef struct {
    acph_host *h;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t watch;   /* the call whose call_completed to remember */
    json *seen;       /* its `data` once pulled */
    bool stop;
    event_list evs;
} puller;

static void *pull_thread(void *arg) {
    puller *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        bool stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop) break;
        acph_event *ev = NULL;
        acph_status st = acph_host_next_event(p->h, 50, &ev);
        if (st == ACPH_STATUS_EMPTY) continue;
        CHECK(st == ACPH_STATUS_OK);
        events_push(&p->evs, ev);
        if (ev->kind != ACPH_EVENT_CALL_COMPLETED) continue;
        json *j = event_json(ev);
        pthread_mutex_lock(&p->mu);
        if (ev->call == p->watch && !p->seen) {
            p->seen = json_clone(json_get(j, "data"));
            pthread_cond_broadcast(&p->cv);
        }
        pthread_mutex_unlock(&p->mu);
        json_free(j);
    }
    return NULL;
}

static json *seen_completion(puller *p, uint64_t call) {
    pthread_mutex_lock(&p->mu);
    while (!p->seen) pthread_cond_wait(&p->cv, &p->mu);
    json *data = p->seen;
    p->seen = NULL;
    pthread_mutex_unlock(&p->mu);
    uint64_t id = 0;
    CHECK(json_u64(json_get(data, "call"), &id) && id == call);
    return data;
}

/* acph_call_wait (a poll) after the event thread saw the call complete: the same result, and the
 * primary id (`primary` of the result; NULL: 0), which is returned. */
static uint64_t check_waited_after_event(acph_host *h, puller *p, uint64_t call, const char *primary) {
    json *data = seen_completion(p, call);
    CHECK(json_get(data, "ok")->boolean);
    uint64_t id = 12345;
    char *result = NULL;
    EXPECT(ACPH_STATUS_OK, acph_call_wait(h, call, 0, &id, &result, ERR));
    json *r = json_parse(result, strlen(result));
    CHECK_MSG(r && json_equal(r, json_get(data, "result")), result);
    uint64_t want = 0;
    if (primary) CHECK(json_u64(json_get(r, primary), &want) && want != 0);
    CHECK(id == want);
    json_free(r);
    acph_string_free(result);
    json_free(data);
    /* Released by that wait. */
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_wait(h, call, 0, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_free(h, call, ERR));
    return id;
}

static void a_wait_after_the_event_gets_the_outcome(void) {
    acph_host *h = make_host(NULL);
    puller p = {.h = h};
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, pull_thread, &p) == 0);

    char *spec = mock_spec(NULL);
    uint64_t call = 0;
    /* Watched before its call_completed can be pulled (the lock is held over the call). */
    pthread_mutex_lock(&p.mu);
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(h, spec, strlen(spec), &call, ERR));
    p.watch = call;
    pthread_mutex_unlock(&p.mu);
    free(spec);
    /* A spawn's id is the agent; a session's its handle; a prompt has none (0). */
    uint64_t agent = check_waited_after_event(h, &p, call, "agent");

    char *opts = session_options(scratch_dir());
    pthread_mutex_lock(&p.mu);
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session(h, agent, opts, strlen(opts), &call, ERR));
    p.watch = call;
    pthread_mutex_unlock(&p.mu);
    free(opts);
    uint64_t session = check_waited_after_event(h, &p, call, "session");

    uint64_t found = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_find_session(h, agent, "sess_1", 6, &found, ERR));
    CHECK(found == session);
    pthread_mutex_lock(&p.mu);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "hello", 5, &call, ERR));
    p.watch = call;
    pthread_mutex_unlock(&p.mu);
    check_waited_after_event(h, &p, call, NULL);

    pthread_mutex_lock(&p.mu);
    p.stop = true;
    pthread_mutex_unlock(&p.mu);
    CHECK(pthread_join(th, NULL) == 0);
    check_seq_increasing(&p.evs);
    events_free(&p.evs);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    acph_host_free(h);
}

/* ----- polls, timeouts, cancel, free ----- */

static void a_timed_out_wait_leaves_the_call_running(void) {
    acph_host *h = make_host("{\"permission\":\"manual\"}");
    event_list evs = {0};
    uint64_t agent = spawn(h, &evs);
    uint64_t session = new_session(h, agent);

    /* The prompt waits for a permission answer: a poll returns at once, a wait times out. */
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "one", 3, &call, ERR));
    wait_kind(h, &evs, "permission_requested", T_WAIT);
    uint64_t id = 777;
    char *result = (char *)"untouched";
    acph_error *err = NULL;
    uint64_t t0 = now_ms();
    EXPECT_E(ACPH_STATUS_TIMEOUT, acph_call_wait(h, call, 0, &id, &result, ERR), &err);
    CHECK(now_ms() - t0 < 5000);
    CHECK_MSG(strstr(err->data, "\"running\":true") && strstr(err->data, "\"afterMs\":0"), err->data);
    acph_error_free(err);
    t0 = now_ms();
    EXPECT(ACPH_STATUS_TIMEOUT, acph_call_wait(h, call, 200, &id, &result, ERR));
    CHECK(now_ms() - t0 >= 190);
    /* Out-params untouched on failure. */
    CHECK(id == 777 && strcmp(result, "untouched") == 0);
    /* Still the caller's and still running: answered now, the next wait gets the turn. */
    const acph_event *req = find_kind(&evs, "permission_requested");
    char *allow = allow_option(req);
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, req->request, allow, strlen(allow), ERR));
    free(allow);
    EXPECT(ACPH_STATUS_OK, acph_call_wait(h, call, T_WAIT, &id, &result, ERR));
    CHECK(id == 0 && strstr(result, "\"stopReason\":\"end_turn\"") != NULL);
    acph_string_free(result);

    /* Cancelled after a timed-out wait: the next wait gets the cancelled turn. */
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "two", 3, &call, ERR));
    wait_kind(h, &evs, "permission_requested", T_WAIT);
    EXPECT(ACPH_STATUS_TIMEOUT, acph_call_wait(h, call, 50, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_cancel(h, call, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_cancel(h, call, ERR)); /* again while it settles: no change */
    EXPECT(ACPH_STATUS_OK, acph_call_wait(h, call, T_WAIT, NULL, &result, ERR));
    CHECK_MSG(strstr(result, "\"stopReason\":\"cancelled\"") != NULL, result);
    acph_string_free(result);
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_cancel(h, call, ERR));

    /* A call that fails gives its own status and error (here the agent's answer to an extension
     * method it does not know), and is released by the wait. */
    EXPECT(ACPH_STATUS_OK, acph_agent_ext_request(h, agent, "_acph/nope", 10, NULL, 0, &call, ERR));
    id = 555;
    result = NULL;
    EXPECT_E(ACPH_STATUS_AGENT_ERROR, acph_call_wait(h, call, T_WAIT, &id, &result, ERR), &err);
    CHECK_MSG(strstr(err->data, "-32601") != NULL, err->data);
    CHECK(id == 555 && result == NULL);
    acph_error_free(err);
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_wait(h, call, 0, NULL, NULL, ERR));
    events_free(&evs);
    acph_host_free(h);
}

static void a_running_call_released_completes_quietly(void) {
    acph_host *h = make_host("{\"permission\":\"manual\"}");
    event_list evs = {0};
    uint64_t agent = spawn(h, &evs);
    uint64_t session = new_session(h, agent);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "one", 3, &call, ERR));
    /* Released while running: not cancelled (the turn goes on to its permission request). */
    EXPECT(ACPH_STATUS_OK, acph_call_free(h, call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_free(h, call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_wait(h, call, 0, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_cancel(h, call, ERR));
    answer_next_permission(h, &evs);
    /* It completes (end_turn, not cancelled); its call_completed still arrives; the id stays
     * released. */
    const acph_event *done;
    do done = wait_kind(h, &evs, "call_completed", T_WAIT);
    while (done->call != call);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_wait(h, call, 0, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_free(h, call, ERR));

    /* A completed call released without a wait: its outcome goes. */
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "two", 3, &call, ERR));
    answer_next_permission(h, &evs);
    do done = wait_kind(h, &evs, "call_completed", T_WAIT);
    while (done->call != call);
    EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_call_cancel(h, call, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_free(h, call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_call_wait(h, call, 0, NULL, NULL, ERR));

    /* Left to acph_host_free: one completed, one running (waiting for a permission answer). */
    uint64_t completed = 0, running = 0;
    char *opts = session_options(scratch_dir());
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session(h, agent, opts, strlen(opts), &completed, ERR));
    free(opts);
    do done = wait_kind(h, &evs, "call_completed", T_WAIT);
    while (done->call != completed);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "three", 5, &running, ERR));
    wait_kind(h, &evs, "permission_requested", T_WAIT);
    events_free(&evs);
    acph_host_free(h);
}

/* Two threads wait for the same call: one gets the outcome, the other stale_id. */
typedef struct {
    acph_host *h;
    uint64_t call;
    acph_status status;
} waiter;

static void *wait_thread(void *arg) {
    waiter *w = arg;
    char *result = NULL;
    w->status = acph_call_wait(w->h, w->call, T_WAIT, NULL, &result, NULL);
    acph_string_free(result);
    return NULL;
}

static void two_waiters_one_outcome(void) {
    acph_host *h = make_host("{\"permission\":\"manual\"}");
    event_list evs = {0};
    uint64_t agent = spawn(h, &evs);
    uint64_t session = new_session(h, agent);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "one", 3, &call, ERR));
    waiter w[2] = {{h, call, ACPH_STATUS_INTERNAL}, {h, call, ACPH_STATUS_INTERNAL}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, wait_thread, &w[i]) == 0);
    sleep_ms(50);
    answer_next_permission(h, &evs);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(th[i], NULL) == 0);
    CHECK((w[0].status == ACPH_STATUS_OK && w[1].status == ACPH_STATUS_STALE_ID) ||
          (w[1].status == ACPH_STATUS_OK && w[0].status == ACPH_STATUS_STALE_ID));
    events_free(&evs);
    acph_host_free(h);
}

/* ----- on a library thread ----- */

typedef struct {
    acph_host *h;
    _Atomic uint64_t call;
    _Atomic int ran;
    _Atomic int wait_status;
    _Atomic int infinite_status;
    _Atomic int poll_status;
} in_callback;

/* The service callback (a library thread) while the prompt waits for its answer. */
static void on_service(void *user_data, uint64_t request_id, const char *method, const char *params,
                       size_t len) {
    (void)params, (void)len;
    in_callback *c = user_data;
    uint64_t call = atomic_load(&c->call);
    if (call != 0 && atomic_fetch_add(&c->ran, 1) == 0) {
        atomic_store(&c->wait_status, (int)acph_call_wait(c->h, call, 100, NULL, NULL, NULL));
        atomic_store(&c->infinite_status, (int)acph_call_wait(c->h, call, ACPH_TIMEOUT_INFINITE, NULL, NULL, NULL));
        /* The prompt is waiting for this very request: a poll finds it running. */
        atomic_store(&c->poll_status, (int)acph_call_wait(c->h, call, 0, NULL, NULL, NULL));
    }
    const char *answer = strcmp(method, "fs/read_text_file") == 0 ? "{\"content\":\"# a project\\n\"}" : NULL;
    acph_service_respond(c->h, request_id, answer, answer ? strlen(answer) : 0, NULL);
}

static void waiting_on_a_library_thread_is_wrong_thread(void) {
    acph_host *h = make_host("{\"permission\":\"manual\",\"fs\":\"embedder\"}");
    in_callback c = {.h = h};
    EXPECT(ACPH_STATUS_OK, acph_host_set_service_handler(h, on_service, &c, NULL, ERR));
    event_list evs = {0};
    uint64_t agent = spawn(h, &evs);
    uint64_t session = new_session(h, agent);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "notes", 5, &call, ERR));
    atomic_store(&c.call, call);
    /* Allowed, the turn reads README.md through the service callback. */
    answer_next_permission(h, &evs);
    char *result = NULL;
    EXPECT(ACPH_STATUS_OK, acph_call_wait(h, call, T_WAIT, NULL, &result, ERR));
    CHECK_MSG(strstr(result, "\"stopReason\":\"end_turn\"") != NULL, result);
    acph_string_free(result);
    CHECK(atomic_load(&c.ran) >= 1);
    CHECK(atomic_load(&c.wait_status) == ACPH_STATUS_WRONG_THREAD);
    CHECK(atomic_load(&c.infinite_status) == ACPH_STATUS_WRONG_THREAD);
    CHECK(atomic_load(&c.poll_status) == ACPH_STATUS_TIMEOUT);
    events_free(&evs);
    acph_host_free(h);
}

/* ----- no event stream ----- */

static void calls_without_events(void) {
    acph_host *h = make_host("{\"events\":false}");
    uint64_t agent = spawn(h, NULL);
    uint64_t session = new_session(h, agent);
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, session, "hello", 5, CALL, ERR), NULL, &result);
    CHECK(strstr(result, "\"stopReason\":\"end_turn\"") != NULL);
    acph_string_free(result);
    acph_event *ev = NULL;
    CHECK(acph_host_try_next_event(h, &ev) == ACPH_STATUS_CLOSED && ev == NULL);
    acph_host_free(h);
}

int main(void) {
    a_wait_after_the_event_gets_the_outcome();
    a_timed_out_wait_leaves_the_call_running();
    a_running_call_released_completes_quietly();
    two_waiters_one_outcome();
    waiting_on_a_library_thread_is_wrong_thread();
    calls_without_events();
    printf("test_calls: ok\n");
    return 0;
}
