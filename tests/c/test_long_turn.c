/* The documented quick start (each call waited for with acph_call_wait, events drained
 * afterwards) on a long turn: the turn completes, and right after the wait returns every one of
 * its events can be pulled without waiting. With a small queue and nobody pulling, the waited
 * prompt fails fast with ACPH_STATUS_EVENTS_STALLED instead of hanging. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

#define UPDATES 20000

static char *flood_spec(int n) {
    json *spec = json_new_object();
    json_set(spec, "command", json_new_string(mock_agent_path()));
    json *args = json_new_array();
    char count[32];
    snprintf(count, sizeof count, "%d", n);
    json_push(args, json_new_string("--flood"));
    json_push(args, json_new_string(count));
    json_set(spec, "args", args);
    char *s = json_dump(spec);
    json_free(spec);
    return s;
}

static void quick_start_long_turn(const char *cwd) {
    acph_host *h = make_host("{\"permission\":\"deny\"}");
    char *spec = flood_spec(UPDATES);
    char *opts = session_options(cwd);
    uint64_t agent = 0, session = 0;
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "go", 2, &call, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_wait(h, call, ACPH_TIMEOUT_INFINITE, NULL, &result, ERR));
    CHECK(strstr(result, "\"stopReason\":\"end_turn\"") != NULL);
    acph_string_free(result);
    free(spec);
    free(opts);

    /* Everything the calls caused is pullable now: no waiting. */
    event_list evs = {0};
    acph_event *ev = NULL;
    while (acph_host_try_next_event(h, &ev) == ACPH_STATUS_OK) events_push(&evs, ev);
    size_t updates = count_kind(&evs, "session_update", NULL);
    if (updates != UPDATES) {
        char detail[64];
        snprintf(detail, sizeof detail, "%zu of %d", updates, UPDATES);
        test_fail(__FILE__, __LINE__, "session_update events pulled after the call returned", detail);
    }
    CHECK(find_kind(&evs, "agent_ready") != NULL);
    CHECK(find_kind(&evs, "session_opened") != NULL);
    CHECK(count_kind(&evs, "turn_ended", NULL) == 1);
    /* The turn's last event; only the prompt's own call_completed may follow it. */
    size_t last = evs.len - 1;
    if (event_is(evs.items[last], "call_completed") && evs.items[last]->call == call) last--;
    CHECK(event_is(evs.items[last], "turn_ended"));
    check_seq_increasing(&evs);
    long pid = agent_pid(&evs);
    events_free(&evs);
    acph_host_free(h);
    CHECK(wait_gone(pid, 5000));
}

static void nobody_pulls_fails_fast(const char *cwd) {
    acph_host *h = make_host(
        "{\"permission\":\"deny\",\"eventCapacity\":64,\"eventStallTimeoutMs\":300,\"shutdownGraceMs\":500}");
    char *spec = flood_spec(UPDATES);
    char *opts = session_options(cwd);
    uint64_t agent = 0, session = 0;
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    uint64_t started = now_ms();
    acph_error *err = NULL;
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "go", 2, &call, ERR));
    acph_status st = acph_call_wait(h, call, ACPH_TIMEOUT_INFINITE, NULL, &result, &err);
    uint64_t took = now_ms() - started;
    CHECK(st == ACPH_STATUS_EVENTS_STALLED);
    CHECK(err != NULL && strcmp(err->kind, "events_stalled") == 0);
    acph_error_free(err);
    CHECK(took < 10000);
    CHECK(result == NULL); /* out-params are written only on success */
    free(spec);
    free(opts);

    /* The turn was abandoned (session/cancel): pulling now shows it end, in order. */
    event_list evs = {0};
    const acph_event *ended = wait_kind(h, &evs, "turn_ended", T_WAIT);
    CHECK(ended != NULL);
    check_seq_increasing(&evs);
    long pid = agent_pid(&evs);
    events_free(&evs);
    acph_host_free(h);
    CHECK(wait_gone(pid, 5000));
}

int main(void) {
    const char *cwd = scratch_dir();
    quick_start_long_turn(cwd);
    nobody_pulls_fails_fast(cwd);
    printf("test_long_turn: ok\n");
    return 0;
}
