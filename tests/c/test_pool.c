/* Pools through the C ABI (acph_pool_*): process-per-session gives each session its own process
 * and release ends it; the cap refuses a session with `busy`; shared mode packs sessions; on a
 * pooled session a second prompt waits its turn instead of failing `busy` (async calls and two
 * threads), `acph_session_cancel` drops the queued prompts without sending them, a cancelled or
 * timed-out queued prompt leaves the line, release fails the queued ones `closed`; shutdown and
 * acph_host_free leave no process; a bad pool document is `invalid_config` with `data.path`, and
 * stale ids are `stale_id`. Processes are followed by their `agent_ready` / `agent_exited`
 * events. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static uint64_t new_pool(acph_host *h, const char *scenario, const char *pool_json) {
    char *spec = mock_spec(scenario);
    uint64_t pool = 0;
    EXPECT(ACPH_STATUS_OK, acph_pool_new(h, spec, strlen(spec), pool_json, strlen(pool_json), &pool, ERR));
    free(spec);
    CHECK(pool != 0);
    return pool;
}

/* The `agent` of an open session's result JSON (freed). */
static uint64_t agent_of(char *result) {
    json *r = json_parse(result, strlen(result));
    uint64_t agent = 0, session = 0;
    CHECK_MSG(r && json_u64(json_get(r, "agent"), &agent) && json_u64(json_get(r, "session"), &session), result);
    json_free(r);
    acph_string_free(result);
    return agent;
}

/* Open a pooled session (waited for) and pull its `session_opened`; `*agent_out` is its agent. */
static uint64_t open_pooled(acph_host *h, uint64_t pool, event_list *evs, uint64_t *agent_out) {
    char *opts = session_options(scratch_dir());
    uint64_t session = 0;
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_open_session(h, pool, opts, strlen(opts), CALL, ERR), &session, &result);
    free(opts);
    uint64_t agent = agent_of(result);
    CHECK(session != 0 && agent != 0);
    const acph_event *opened = wait_kind(h, evs, "session_opened", T_WAIT);
    CHECK(opened->session == session && opened->agent == agent);
    uint64_t owner = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_agent(h, session, &owner, ERR));
    CHECK(owner == agent);
    if (agent_out) *agent_out = agent;
    return session;
}

/* The pid in the `agent_ready` event of `agent` (already pulled). */
static long pid_of(const event_list *l, uint64_t agent) {
    for (size_t i = 0; i < l->len; i++) {
        const acph_event *ev = l->items[i];
        if (ev->agent != agent || !event_is(ev, "agent_ready")) continue;
        json *j = event_json(ev);
        uint64_t pid = 0;
        CHECK(json_u64(json_get(json_get(j, "data"), "pid"), &pid));
        json_free(j);
        return (long)pid;
    }
    CHECK_MSG(false, "no agent_ready for the agent");
    return 0;
}

/* The `agent_exited` of `agent`: already pulled, or pull until it comes. */
static void wait_exited(acph_host *h, event_list *evs, uint64_t agent) {
    for (size_t i = 0; i < evs->len; i++)
        if (evs->items[i]->agent == agent && event_is(evs->items[i], "agent_exited")) return;
    for (;;) {
        const acph_event *ev = wait_kind(h, evs, "agent_exited", T_WAIT);
        if (ev->agent == agent) return;
    }
}

/* Pull until `n` events of a kind have been seen in all. */
static void wait_count(acph_host *h, event_list *evs, const char *kind, size_t n) {
    while (count_kind(evs, kind, NULL) < n) wait_kind(h, evs, kind, T_WAIT);
}

static json *stats(acph_host *h, uint64_t pool) {
    char *text = NULL;
    EXPECT(ACPH_STATUS_OK, acph_pool_stats(h, pool, &text, ERR));
    json *j = json_parse(text, strlen(text));
    CHECK_MSG(j != NULL, text);
    acph_string_free(text);
    return j;
}

static uint64_t stat_of(acph_host *h, uint64_t pool, const char *key) {
    json *j = stats(h, pool);
    uint64_t n = 0;
    CHECK_MSG(json_u64(json_get(j, key), &n), key);
    json_free(j);
    return n;
}

static char *stop_reason_of(const char *result_json) {
    json *r = json_parse(result_json, strlen(result_json));
    CHECK_MSG(r != NULL, result_json);
    check_turn_result(r);
    const char *s = json_str(json_get(r, "stopReason"));
    CHECK(s != NULL);
    char *out = strdup(s);
    json_free(r);
    return out;
}

static void prompt_ends(acph_host *h, uint64_t session, const char *want) {
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, session, "hi", 2, CALL, ERR), NULL, &result);
    char *stop = stop_reason_of(result);
    CHECK_MSG(strcmp(stop, want) == 0, stop);
    free(stop);
    acph_string_free(result);
}

/* A completed prompt call: its stop reason (ok) or its error kind, malloc'd; `*ok` tells which. */
static char *call_outcome(const acph_event *done, bool *ok) {
    char *kind = NULL;
    json *result = NULL;
    *ok = call_result(done, &kind, &result);
    if (!*ok) {
        json_free(result);
        CHECK(kind != NULL);
        return kind;
    }
    free(kind);
    check_turn_result(result);
    const char *s = json_str(json_get(result, "stopReason"));
    CHECK(s != NULL);
    char *out = strdup(s);
    json_free(result);
    return out;
}

static uint64_t prompt_async(acph_host *h, uint64_t session, const char *text) {
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, text, strlen(text), &call, ERR));
    CHECK(call != 0);
    return call;
}

/* The `call_completed` of `call`: already pulled, or the next to come. */
static const acph_event *completion(acph_host *h, event_list *evs, uint64_t call) {
    for (size_t i = 0; i < evs->len; i++)
        if (evs->items[i]->kind == ACPH_EVENT_CALL_COMPLETED && evs->items[i]->call == call) return evs->items[i];
    return wait_call(h, evs, call, T_WAIT);
}

static void expect_call(acph_host *h, event_list *evs, uint64_t call, bool want_ok, const char *want) {
    bool ok = false;
    char *got = call_outcome(completion(h, evs, call), &ok);
    char detail[256];
    snprintf(detail, sizeof detail, "call %llu: %s %s, wanted %s %s", (unsigned long long)call,
             ok ? "ok" : "error", got, want_ok ? "ok" : "error", want);
    CHECK_MSG(ok == want_ok && strcmp(got, want) == 0, detail);
    free(got);
}

/* ------------------------------------------------------------------------------------------ */

static void process_per_session_and_the_cap(void) {
    acph_host *h = make_host("{\"shutdownGraceMs\":500}");
    event_list evs = {0};
    uint64_t pool = new_pool(h, NULL, "{\"mode\":\"process-per-session\",\"warmSpares\":1,\"maxAgents\":2}");
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_ready(h, pool, CALL, ERR), NULL, NULL);
    CHECK(stat_of(h, pool, "spares") == 1);

    uint64_t a1 = 0, a2 = 0;
    uint64_t s1 = open_pooled(h, pool, &evs, &a1);
    /* The spare taken is being refilled: this session gets the refill (no `busy` at the cap). */
    uint64_t s2 = open_pooled(h, pool, &evs, &a2);
    CHECK(a1 != a2 && s1 != s2);
    long p1 = pid_of(&evs, a1), p2 = pid_of(&evs, a2);
    CHECK(p1 != p2 && pid_alive(p1) && pid_alive(p2));
    CHECK(stat_of(h, pool, "agents") == 2 && stat_of(h, pool, "sessions") == 2);

    /* The cap: a third session needs a third process. */
    char *opts = session_options(scratch_dir());
    uint64_t s3 = 0;
    acph_error *err = NULL;
    EXPECT_CALL_E(ACPH_STATUS_BUSY, h, acph_pool_open_session(h, pool, opts, strlen(opts), CALL, ERR), &s3, NULL,
                  &err);
    CHECK(err != NULL && strcmp(err->kind, "busy") == 0 && s3 == 0);
    acph_error_free(err);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_pool_open_session(h, pool, opts, strlen(opts), &call, ERR));
    expect_call(h, &evs, call, false, "busy");

    prompt_ends(h, s1, "end_turn");
    prompt_ends(h, s2, "end_turn");

    /* The pooled agent answers acph_agent_info; the pool owns its lifecycle. */
    char *info = NULL;
    EXPECT(ACPH_STATUS_OK, acph_agent_info(h, a1, &info, ERR));
    CHECK(strstr(info, "\"exited\":null") != NULL);
    acph_string_free(info);
    EXPECT(ACPH_STATUS_STALE_ID, acph_agent_release(h, a1, ERR));
    EXPECT_CALL(ACPH_STATUS_INVALID_ARGUMENT, h, acph_session_close(h, s1, CALL, ERR), NULL, NULL);

    /* Release ends the session's process; its handle is stale from then on. */
    EXPECT(ACPH_STATUS_OK, acph_pool_release_session(h, s1, &call, ERR));
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_session_prompt_text(h, s1, "late", 4, CALL, ERR), NULL, NULL);
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_pool_release_session(h, s1, CALL, ERR), NULL, NULL);
    completion(h, &evs, call);
    wait_exited(h, &evs, a1);
    CHECK(wait_gone(p1, 10000));
    CHECK(pid_alive(p2));
    EXPECT(ACPH_STATUS_STALE_ID, acph_agent_info(h, a1, &info, ERR));

    /* Room again under the cap. */
    uint64_t a3 = 0;
    uint64_t s4 = open_pooled(h, pool, &evs, &a3);
    CHECK(a3 != a1 && a3 != a2);
    long p3 = pid_of(&evs, a3);
    prompt_ends(h, s4, "end_turn");
    CHECK(stat_of(h, pool, "sessions") == 2);

    /* Shutdown ends every process of the pool; the id stays until released. */
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_shutdown(h, pool, CALL, ERR), NULL, NULL);
    wait_exited(h, &evs, a2);
    wait_exited(h, &evs, a3);
    CHECK(wait_gone(p2, 10000) && wait_gone(p3, 10000));
    json *st = stats(h, pool);
    static const char none[] = "{\"agents\":0,\"spares\":0,\"starting\":0,\"sessions\":0}";
    json *zero = json_parse(none, strlen(none));
    CHECK(json_equal(st, zero));
    json_free(st);
    json_free(zero);
    EXPECT_CALL(ACPH_STATUS_CLOSED, h, acph_pool_open_session(h, pool, opts, strlen(opts), CALL, ERR), &s3, NULL);
    CHECK(call_sync(h, acph_session_prompt_text(h, s2, "gone", 4, &call, NULL), &call, T_WAIT, NULL, NULL, NULL) !=
          ACPH_STATUS_OK);
    free(opts);

    EXPECT(ACPH_STATUS_OK, acph_pool_release(h, pool, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_pool_release(h, pool, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_pool_stats(h, pool, &info, ERR));
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_session_prompt_text(h, s2, "x", 1, CALL, ERR), NULL, NULL);
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_pool_release_session(h, s4, CALL, ERR), NULL, NULL);
    events_free(&evs);
    acph_host_free(h);
}

static void shared_mode_packs_sessions(void) {
    acph_host *h = make_host("{\"shutdownGraceMs\":500}");
    event_list evs = {0};
    uint64_t pool = new_pool(h, NULL, "{\"mode\":\"shared\",\"maxSessionsPerAgent\":2,\"warmSpares\":0,\"maxAgents\":2}");
    uint64_t a1 = 0, a2 = 0, a3 = 0;
    uint64_t s1 = open_pooled(h, pool, &evs, &a1);
    uint64_t s2 = open_pooled(h, pool, &evs, &a2);
    uint64_t s3 = open_pooled(h, pool, &evs, &a3);
    CHECK(a1 == a2 && a3 != a1);
    CHECK(stat_of(h, pool, "agents") == 2 && stat_of(h, pool, "sessions") == 3);
    prompt_ends(h, s2, "end_turn");
    /* Releasing a session of a shared process keeps the process for the others. */
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_release_session(h, s1, CALL, ERR), NULL, NULL);
    CHECK(pid_alive(pid_of(&evs, a1)));
    prompt_ends(h, s2, "end_turn");
    (void)s3;
    long p1 = pid_of(&evs, a1), p3 = pid_of(&evs, a3);
    /* Release without a shutdown first: the pool's processes go in the background. */
    EXPECT(ACPH_STATUS_OK, acph_pool_release(h, pool, ERR));
    wait_exited(h, &evs, a1);
    wait_exited(h, &evs, a3);
    CHECK(wait_gone(p1, 10000) && wait_gone(p3, 10000));
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_session_prompt_text(h, s2, "x", 1, CALL, ERR), NULL, NULL);
    events_free(&evs);
    acph_host_free(h);
}

/* Two prompts on one pooled session: the second, sent while the first waits for a permission
 * answer, queues instead of failing `busy`, and runs once the first has ended. */
static void a_second_prompt_queues(void) {
    acph_host *h = make_host("{\"permission\":\"manual\",\"shutdownGraceMs\":500}");
    event_list evs = {0};
    uint64_t pool = new_pool(h, NULL, "{\"warmSpares\":0}");
    uint64_t session = open_pooled(h, pool, &evs, NULL);

    uint64_t first = prompt_async(h, session, "first");
    const acph_event *req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    uint64_t first_turn = req->turn;
    /* The first turn is blocked on the permission request: the second call certainly overlaps. */
    uint64_t second = prompt_async(h, session, "second");
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, req->request, NULL, 0, ERR));
    req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    CHECK(req->turn != first_turn);
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, req->request, NULL, 0, ERR));
    expect_call(h, &evs, first, true, "end_turn");
    expect_call(h, &evs, second, true, "end_turn");

    /* The turns ran one after the other. */
    const char *want[] = {"turn_started", "turn_ended", "turn_started", "turn_ended"};
    size_t n = 0;
    for (size_t i = 0; i < evs.len; i++) {
        const acph_event *ev = evs.items[i];
        if (!event_is(ev, "turn_started") && !event_is(ev, "turn_ended")) continue;
        CHECK(n < 4 && event_is(ev, want[n]) && ev->session == session);
        CHECK(ev->turn == (n < 2 ? first_turn : req->turn));
        n++;
    }
    CHECK(n == 4);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_shutdown(h, pool, CALL, ERR), NULL, NULL);
    events_free(&evs);
    acph_host_free(h);
}

typedef struct {
    acph_host *h;
    uint64_t session;
    acph_status status;
    char *result;
} prompter;

static void *prompt_thread(void *arg) {
    prompter *p = arg;
    uint64_t call = 0;
    p->status = call_sync(p->h, acph_session_prompt_text(p->h, p->session, "from a thread", 13, &call, NULL), &call,
                          T_WAIT, NULL, &p->result, NULL);
    return NULL;
}

/* A prompt from two threads at once, each waiting for its own: both end `end_turn`, one turn after
 * the other. */
static void two_threads_prompt_one_session(void) {
    acph_host *h = make_host("{\"shutdownGraceMs\":500}");
    event_list evs = {0};
    uint64_t pool = new_pool(h, NULL, "{\"warmSpares\":0}");
    uint64_t session = open_pooled(h, pool, &evs, NULL);
    prompter ps[2] = {{h, session, ACPH_STATUS_INTERNAL, NULL}, {h, session, ACPH_STATUS_INTERNAL, NULL}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, prompt_thread, &ps[i]) == 0);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(th[i], NULL) == 0);
    uint64_t turns[2];
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(ps[i].status == ACPH_STATUS_OK, acph_status_str(ps[i].status));
        char *stop = stop_reason_of(ps[i].result);
        CHECK_MSG(strcmp(stop, "end_turn") == 0, stop);
        free(stop);
        json *r = json_parse(ps[i].result, strlen(ps[i].result));
        CHECK(json_u64(json_get(r, "turn"), &turns[i]));
        json_free(r);
        acph_string_free(ps[i].result);
    }
    CHECK(turns[0] != turns[1]);
    /* Sequential: every turn_started is followed by its own turn_ended before the next start. */
    size_t ended = 0;
    uint64_t open_turn = 0;
    while (ended < 2) {
        acph_event *ev = next_event(h, T_WAIT);
        events_push(&evs, ev);
        if (ev->session != session) continue;
        if (ev->kind == ACPH_EVENT_TURN_STARTED) {
            CHECK_MSG(open_turn == 0, "a turn started while another ran");
            open_turn = ev->turn;
        } else if (ev->kind == ACPH_EVENT_TURN_ENDED) {
            CHECK(ev->turn == open_turn);
            open_turn = 0;
            ended++;
        }
    }
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_shutdown(h, pool, CALL, ERR), NULL, NULL);
    events_free(&evs);
    acph_host_free(h);
}

/* Cancel drops the queued prompts (never sent); acph_call_cancel takes a queued prompt out of the
 * line without wedging it (a wait that times out does not: the prompt stays in line); release
 * fails the queued ones `closed`. */
static void cancel_drops_the_queued_prompts(void) {
    acph_host *h = make_host("{\"shutdownGraceMs\":500}");
    event_list evs = {0};
    uint64_t pool = new_pool(h, "wait-for-cancel", "{\"warmSpares\":0}");
    uint64_t agent = 0;
    uint64_t session = open_pooled(h, pool, &evs, &agent);

    uint64_t a = prompt_async(h, session, "running");
    wait_kind(h, &evs, "turn_started", T_WAIT);
    uint64_t b = prompt_async(h, session, "queued");
    EXPECT(ACPH_STATUS_OK, acph_session_cancel(h, session, ERR));
    uint64_t c = prompt_async(h, session, "after the cancel");
    expect_call(h, &evs, a, true, "cancelled");
    expect_call(h, &evs, b, false, "cancelled");
    /* The prompt called after the cancel runs: the second turn to start (b never did). */
    wait_count(h, &evs, "turn_started", 2);
    CHECK(count_kind(&evs, "turn_started", NULL) == 2);

    /* acph_call_cancel of a queued prompt: it completes `cancelled` and is never sent. */
    uint64_t d = prompt_async(h, session, "queued, then called off");
    EXPECT(ACPH_STATUS_OK, acph_call_cancel(h, d, ERR));
    expect_call(h, &evs, d, false, "cancelled");
    /* A wait that times out leaves a queued prompt in line (still running, still the caller's);
     * acph_call_cancel then takes it out, and a second wait gets `cancelled`. */
    uint64_t late = prompt_async(h, session, "too late");
    EXPECT(ACPH_STATUS_TIMEOUT, acph_call_wait(h, late, 100, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_TIMEOUT, acph_call_wait(h, late, 0, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_cancel(h, late, ERR));
    EXPECT(ACPH_STATUS_CANCELLED, acph_call_wait(h, late, T_WAIT, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_OK, acph_session_cancel(h, session, ERR));
    expect_call(h, &evs, c, true, "cancelled");
    CHECK(count_kind(&evs, "turn_started", NULL) == 2);

    /* The line is not wedged: the next prompt runs. */
    uint64_t e = prompt_async(h, session, "next");
    wait_count(h, &evs, "turn_started", 3);
    CHECK(count_kind(&evs, "turn_started", NULL) == 3);
    /* Released with a prompt waiting: it fails `closed`; the running turn ends; the process goes. */
    uint64_t f = prompt_async(h, session, "queued at release");
    long pid = pid_of(&evs, agent);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_release_session(h, session, CALL, ERR), NULL, NULL);
    expect_call(h, &evs, f, false, "closed");
    completion(h, &evs, e);
    wait_exited(h, &evs, agent);
    CHECK(wait_gone(pid, 10000));
    CHECK(count_kind(&evs, "turn_started", NULL) == 3);
    EXPECT(ACPH_STATUS_OK, acph_pool_release(h, pool, ERR));
    events_free(&evs);
    acph_host_free(h);
}

/* An open abandoned midway (acph_call_cancel, also after a wait that timed out) gives its place
 * under the cap back: the next session opens, and shutdown does not wait for a start nobody
 * finishes. */
static void an_abandoned_open_gives_its_place_back(void) {
    acph_host *h = make_host("{\"shutdownGraceMs\":500}");
    event_list evs = {0};
    uint64_t pool = new_pool(h, NULL, "{\"warmSpares\":0,\"maxAgents\":1}");
    char *opts = session_options(scratch_dir());
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_pool_open_session(h, pool, opts, strlen(opts), &call, ERR));
    acph_status cancelled = acph_call_cancel(h, call, NULL);
    bool ok = false;
    json *result = NULL;
    char *kind = NULL;
    ok = call_result(completion(h, &evs, call), &kind, &result);
    if (ok) { /* it finished first: give it back */
        uint64_t session = 0;
        CHECK(json_u64(json_get(result, "session"), &session));
        EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_release_session(h, session, CALL, ERR), NULL, NULL);
    } else {
        CHECK(cancelled == ACPH_STATUS_OK && kind && strcmp(kind, "cancelled") == 0);
    }
    printf("abandoned open: %s\n", ok ? "finished before the cancel" : "cancelled");
    free(kind);
    json_free(result);
    uint64_t session = 0;
    EXPECT(ACPH_STATUS_OK, acph_pool_open_session(h, pool, opts, strlen(opts), &call, ERR));
    acph_status st = acph_call_wait(h, call, 1, &session, NULL, NULL);
    printf("open waited for 1 ms: %s\n", acph_status_str(st));
    if (st == ACPH_STATUS_TIMEOUT) {
        acph_status c = acph_call_cancel(h, call, NULL);
        CHECK(c == ACPH_STATUS_OK || c == ACPH_STATUS_ALREADY_RESOLVED);
        st = acph_call_wait(h, call, T_WAIT, &session, NULL, NULL);
        CHECK_MSG(st == ACPH_STATUS_OK || st == ACPH_STATUS_CANCELLED, acph_status_str(st));
    }
    if (st == ACPH_STATUS_OK) EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_release_session(h, session, CALL, ERR), NULL, NULL);
    else CHECK_MSG(st == ACPH_STATUS_CANCELLED, acph_status_str(st));
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_open_session(h, pool, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    prompt_ends(h, session, "end_turn");
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_shutdown(h, pool, CALL, ERR), NULL, NULL);
    CHECK(stat_of(h, pool, "starting") == 0 && stat_of(h, pool, "agents") == 0);
    events_free(&evs);
    acph_host_free(h);
}

/* acph_host_free with a pool holding warm spares and a session: no process outlives the host. */
static void host_free_ends_the_pool(void) {
    acph_host *h = make_host("{\"shutdownGraceMs\":500}");
    event_list evs = {0};
    uint64_t pool = new_pool(h, NULL, "{\"warmSpares\":2,\"maxAgents\":3}");
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_pool_ready(h, pool, CALL, ERR), NULL, NULL);
    uint64_t agent = 0;
    open_pooled(h, pool, &evs, &agent);
    long pids[3];
    size_t n = 0;
    for (size_t i = 0; i < evs.len; i++)
        if (event_is(evs.items[i], "agent_ready")) pids[n++] = pid_of(&evs, evs.items[i]->agent);
    CHECK(n >= 2); /* two spares (the session took one), maybe the refill already */
    /* The spare taken is refilled (the third process). */
    while (n < 3) {
        const acph_event *ev = wait_kind(h, &evs, "agent_ready", T_WAIT);
        pids[n++] = pid_of(&evs, ev->agent);
    }
    CHECK(pid_of(&evs, agent) == pids[0] || pid_of(&evs, agent) == pids[1]);
    events_free(&evs);
    acph_host_free(h);
    for (size_t i = 0; i < n; i++) CHECK(wait_gone(pids[i], 10000));
}

static void bad_pool_documents_and_stale_ids(void) {
    acph_host *h = make_host(NULL);
    char *spec = mock_spec(NULL);
    /* The core's paths (`pool.*`), as in every face. */
    static const struct {
        const char *doc, *says, *path;
    } bad[] = {
        {"{\"mode\":\"per-session\"}", "mode", "pool.mode"},
        {"{\"maxSessionsPerAgent\":2}", "shared", "pool.maxSessionsPerAgent"},
        {"{\"mode\":\"shared\",\"maxSessionsPerAgent\":0}", "maxSessionsPerAgent", "pool.maxSessionsPerAgent"},
        {"{\"maxAgents\":0}", "maxAgents", "pool.maxAgents"},
        {"{\"warmSpares\":3,\"maxAgents\":2}", "warmSpares", "pool.warmSpares"},
        {"{\"warmSpare\":1}", "warmSpare", "pool.warmSpare"},
        {"{\"idleTimeoutMs\":-1}", "idleTimeoutMs", "pool.idleTimeoutMs"},
        {"[1]", "object", "pool"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t pool = 0;
        acph_error *err = NULL;
        EXPECT_E(ACPH_STATUS_INVALID_CONFIG,
                 acph_pool_new(h, spec, strlen(spec), bad[i].doc, strlen(bad[i].doc), &pool, ERR), &err);
        CHECK(pool == 0);
        CHECK(err != NULL && strcmp(err->kind, "invalid_config") == 0);
        CHECK_MSG(strstr(err->message, bad[i].says) != NULL, err->message);
        json *data = json_parse(err->data, strlen(err->data));
        CHECK_MSG(data && json_str(json_get(data, "path")) && strcmp(json_str(json_get(data, "path")), bad[i].path) == 0,
                  err->data);
        json_free(data);
        acph_error_free(err);
    }
    uint64_t pool = 0;
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_pool_new(h, spec, strlen(spec), "{mode", 5, &pool, ERR));
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_pool_new(h, "{\"cmd\":\"x\"}", 11, NULL, 0, &pool, ERR));
    static const char bad_restart[] = "{\"command\":\"x\",\"restart\":{\"maxRestart\":1}}";
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_pool_new(h, bad_restart, strlen(bad_restart), NULL, 0, &pool, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_pool_new(h, spec, strlen(spec), NULL, 0, NULL, ERR));
    CHECK(pool == 0);

    /* Ids never issued (or of another kind) are stale. */
    uint64_t stale = 987654321, out = 0, call = 0;
    char *text = NULL;
    char *opts = session_options(scratch_dir());
    EXPECT(ACPH_STATUS_STALE_ID, acph_pool_stats(h, stale, &text, ERR));
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_pool_ready(h, stale, CALL, ERR), NULL, NULL);
    EXPECT(ACPH_STATUS_STALE_ID, acph_pool_ready(h, stale, &call, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_pool_open_session(h, stale, opts, strlen(opts), &call, ERR));
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_pool_open_session(h, stale, opts, strlen(opts), CALL, ERR), &out, NULL);
    EXPECT(ACPH_STATUS_STALE_ID, acph_pool_shutdown(h, stale, &call, ERR));
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_pool_shutdown(h, stale, CALL, ERR), NULL, NULL);
    EXPECT(ACPH_STATUS_STALE_ID, acph_pool_release(h, stale, ERR));
    EXPECT(ACPH_STATUS_STALE_ID, acph_pool_release_session(h, stale, &call, ERR));
    EXPECT_CALL(ACPH_STATUS_STALE_ID, h, acph_pool_release_session(h, stale, CALL, ERR), NULL, NULL);
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_pool_stats(NULL, stale, &text, ERR));
    CHECK(call == 0 && out == 0 && text == NULL);

    /* A plain session is not a pool's; a session option error is the usual one. */
    uint64_t agent = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    EXPECT_CALL(ACPH_STATUS_INVALID_ARGUMENT, h, acph_pool_release_session(h, session, CALL, ERR), NULL, NULL);
    prompt_ends(h, session, "end_turn");
    EXPECT(ACPH_STATUS_OK, acph_pool_new(h, spec, strlen(spec), "{\"warmSpares\":0}", 16, &pool, ERR));
    EXPECT_CALL(ACPH_STATUS_INVALID_CONFIG, h, acph_pool_open_session(h, pool, "{}", 2, CALL, ERR), &out, NULL);
    CHECK(stat_of(h, pool, "agents") == 0 && stat_of(h, pool, "starting") == 0);
    free(opts);
    free(spec);
    acph_host_free(h);
}

int main(void) {
    bad_pool_documents_and_stale_ids();
    process_per_session_and_the_cap();
    shared_mode_packs_sessions();
    a_second_prompt_queues();
    two_threads_prompt_one_session();
    cancel_drops_the_queued_prompts();
    an_abandoned_open_gives_its_place_back();
    host_free_ends_the_pool();
    puts("test_pool: ok");
    return 0;
}
