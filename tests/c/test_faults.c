/* Every fault scenario of the mock agent, through the C ABI: no hang, no crash, a typed status,
 * the documented events, and no process left behind. Usage: test_faults SCENARIO. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

typedef struct {
    acph_host *h;
    uint64_t agent, session;
    event_list evs;
    long pid;
} fixture;

static void start(fixture *f, const char *config, const char *scenario) {
    memset(f, 0, sizeof *f);
    f->h = make_host(config);
    char *spec = mock_spec(scenario);
    EXPECT_CALL(ACPH_STATUS_OK, f->h, acph_host_spawn(f->h, spec, strlen(spec), CALL, ERR), &f->agent, NULL);
    free(spec);
    char *opts = session_options(scratch_dir());
    EXPECT_CALL(ACPH_STATUS_OK, f->h, acph_agent_new_session(f->h, f->agent, opts, strlen(opts), CALL, ERR), &f->session, NULL);
    free(opts);
    wait_kind(f->h, &f->evs, "session_opened", T_WAIT);
    f->pid = agent_pid(&f->evs);
}

static void finish(fixture *f) {
    EXPECT_CALL(ACPH_STATUS_OK, f->h, acph_agent_shutdown(f->h, f->agent, CALL, ERR), NULL, NULL);
    if (!find_kind(&f->evs, "agent_exited")) wait_kind(f->h, &f->evs, "agent_exited", T_WAIT);
    CHECK(wait_gone(f->pid, 5000));
    check_seq_increasing(&f->evs);
    events_free(&f->evs);
    acph_host_free(f->h);
}

/* Prompt (waited for) and collect the turn's events; returns the stop reason (malloc'd). */
static char *turn(fixture *f, const char *text) {
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, f->h, acph_session_prompt_text(f->h, f->session, text, strlen(text), CALL, ERR), NULL, &result);
    json *r = json_parse(result, strlen(result));
    CHECK(r != NULL);
    char *stop = strdup(json_str(json_get(r, "stopReason")));
    json_free(r);
    acph_string_free(result);
    wait_kind(f->h, &f->evs, "turn_ended", T_WAIT);
    return stop;
}

static size_t protocol_errors(const event_list *l, const char *reason) {
    size_t n = 0;
    for (size_t i = 0; i < l->len; i++) {
        if (!event_is(l->items[i], "protocol_error")) continue;
        json *j = event_json(l->items[i]);
        const char *r = json_str(json_get(json_get(j, "data"), "reason"));
        if (!reason || (r && strcmp(r, reason) == 0)) n++;
        json_free(j);
    }
    return n;
}

static void crash_mid_turn(void) {
    fixture f;
    start(&f, NULL, "crash-mid-turn");
    acph_error *err = NULL;
    EXPECT_CALL_E(ACPH_STATUS_AGENT_EXITED, f.h, acph_session_prompt_text(f.h, f.session, "go", 2, CALL, ERR), NULL, NULL, &err);
    json *data = json_parse(err->data, strlen(err->data));
    uint64_t code = 0;
    CHECK(json_u64(json_get(data, "exitCode"), &code) && code == 3);
    CHECK(strstr(json_str(json_get(data, "stderrTail")), "fatal: mock crash") != NULL);
    CHECK(strstr(err->message, "exit code 3") != NULL);
    json_free(data);
    acph_error_free(err);
    wait_kind(f.h, &f.evs, "agent_exited", T_WAIT);
    CHECK(count_kind(&f.evs, "session_update", "agent_message_chunk") == 2);
    const acph_event *ended = find_kind(&f.evs, "turn_ended");
    CHECK(ended && strstr(ended->json, "\"kind\":\"agent_exited\"") != NULL);
    CHECK(ended->seq < find_kind(&f.evs, "session_closed")->seq);
    const acph_event *exited = f.evs.items[f.evs.len - 1];
    CHECK(event_is(exited, "agent_exited") && strstr(exited->json, "\"exitCode\":3") != NULL);
    CHECK(wait_gone(f.pid, 5000));
    /* Later calls fail at once with the same status. */
    EXPECT_CALL(ACPH_STATUS_AGENT_EXITED, f.h, acph_session_prompt_text(f.h, f.session, "again", 5, CALL, ERR), NULL, NULL);
    char *opts = session_options(scratch_dir());
    uint64_t s2 = 0;
    EXPECT_CALL(ACPH_STATUS_AGENT_EXITED, f.h, acph_agent_new_session(f.h, f.agent, opts, strlen(opts), CALL, ERR), &s2, NULL);
    free(opts);
    finish(&f);
}

static void hang(void) {
    fixture f;
    start(&f, "{\"shutdownGraceMs\":300,\"cancelGraceMs\":300}", "hang");
    /* A wait gives up after its timeout; the prompt keeps running, so a poll finds it running
     * too. Released without a cancel, its turn stays in flight: another prompt is `busy`. */
    uint64_t call = 0, t0 = now_ms();
    acph_error *err = NULL;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(f.h, f.session, "go", 2, &call, ERR));
    EXPECT_E(ACPH_STATUS_TIMEOUT, acph_call_wait(f.h, call, 300, NULL, NULL, ERR), &err);
    CHECK(now_ms() - t0 < 20000);
    CHECK_MSG(strstr(err->data, "\"running\":true") != NULL, err->data);
    acph_error_free(err);
    EXPECT(ACPH_STATUS_TIMEOUT, acph_call_wait(f.h, call, 0, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_free(f.h, call, ERR));
    EXPECT_CALL(ACPH_STATUS_BUSY, f.h, acph_session_prompt_text(f.h, f.session, "again", 5, CALL, ERR), NULL, NULL);

    /* In a second session: cancelled after a timed-out wait, the prompt settles as `cancelled`
     * after the cancel grace (the mock ignores the cancel), and the session takes the next
     * prompt, which stays pending until the agent is shut down. */
    char *opts = session_options(scratch_dir());
    uint64_t s2 = 0;
    EXPECT_CALL(ACPH_STATUS_OK, f.h, acph_agent_new_session(f.h, f.agent, opts, strlen(opts), CALL, ERR), &s2, NULL);
    free(opts);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(f.h, s2, "third", 5, &call, ERR));
    EXPECT(ACPH_STATUS_TIMEOUT, acph_call_wait(f.h, call, 300, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_OK, acph_call_cancel(f.h, call, ERR));
    EXPECT(ACPH_STATUS_CANCELLED, acph_call_wait(f.h, call, T_WAIT, NULL, NULL, ERR));
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(f.h, s2, "fourth", 6, &call, ERR));
    const acph_event *started;
    size_t seen_starts = 0;
    do {
        started = wait_kind(f.h, &f.evs, "turn_started", T_WAIT);
        if (started->session == s2) seen_starts++;
    } while (seen_starts < 2);
    uint64_t shut = 0;
    EXPECT(ACPH_STATUS_OK, acph_agent_shutdown(f.h, f.agent, &shut, ERR));
    EXPECT(ACPH_STATUS_CLOSED, acph_call_wait(f.h, call, T_WAIT, NULL, NULL, ERR));
    const acph_event *done = wait_call(f.h, &f.evs, shut, T_WAIT);
    CHECK(call_result(done, NULL, NULL));
    CHECK(wait_gone(f.pid, 5000));
    finish(&f);
}

static void garbage_stdout(void) {
    fixture f;
    start(&f, NULL, "garbage-stdout");
    char *stop = turn(&f, "noise");
    CHECK(strcmp(stop, "end_turn") == 0);
    free(stop);
    size_t noise = 0;
    for (size_t i = 0; i < f.evs.len; i++) {
        if (!event_is(f.evs.items[i], "protocol_noise")) continue;
        json *j = event_json(f.evs.items[i]);
        uint64_t count = 0;
        CHECK(json_u64(json_get(json_get(j, "data"), "count"), &count) && count == ++noise);
        json_free(j);
    }
    CHECK(noise == 3); /* plain text, truncated JSON, a DEBUG line */
    CHECK(protocol_errors(&f.evs, "invalid_message") == 2); /* JSON that is not JSON-RPC */
    CHECK(count_kind(&f.evs, "session_update", "agent_message_chunk") == 3);
    finish(&f);
}

static void huge_line(void) {
    /* Over the configured limit: skipped and reported; the connection survives. */
    fixture f;
    start(&f, "{\"maxLineBytes\":1048576}", "huge-line");
    char *stop = turn(&f, "big");
    CHECK(strcmp(stop, "end_turn") == 0);
    free(stop);
    CHECK(protocol_errors(&f.evs, "line_too_long") == 1);
    CHECK(count_kind(&f.evs, "session_update", "agent_message_chunk") == 1);
    finish(&f);
    /* Under the default 64 MiB limit the 2 MiB line arrives as one event. */
    start(&f, NULL, "huge-line");
    stop = turn(&f, "big");
    CHECK(strcmp(stop, "end_turn") == 0);
    free(stop);
    CHECK(protocol_errors(&f.evs, NULL) == 0);
    size_t big = 0;
    for (size_t i = 0; i < f.evs.len; i++)
        if (f.evs.items[i]->json_len > 2000000) big++;
    CHECK(big == 1);
    finish(&f);
}

static void invalid_utf8(void) {
    fixture f;
    start(&f, NULL, "invalid-utf8");
    char *stop = turn(&f, "bytes");
    CHECK(strcmp(stop, "end_turn") == 0);
    free(stop);
    CHECK(protocol_errors(&f.evs, "invalid_utf8") == 1);
    size_t lossy = 0;
    for (size_t i = 0; i < f.evs.len; i++)
        if (event_is(f.evs.items[i], "session_update") && strstr(f.evs.items[i]->json, "\xEF\xBF\xBD")) lossy++;
    CHECK(lossy == 1);
    CHECK(count_kind(&f.evs, "session_update", "agent_message_chunk") == 3);
    finish(&f);
}

static void unknown_response_id(void) {
    fixture f;
    start(&f, NULL, "unknown-response-id");
    char *stop = turn(&f, "x");
    CHECK(strcmp(stop, "end_turn") == 0);
    free(stop);
    CHECK(protocol_errors(&f.evs, NULL) >= 2);
    CHECK(protocol_errors(&f.evs, NULL) == protocol_errors(&f.evs, "unknown_response_id"));
    finish(&f);
}

static void duplicate_response(void) {
    fixture f;
    start(&f, NULL, "duplicate-response");
    char *stop = turn(&f, "1");
    CHECK(strcmp(stop, "end_turn") == 0);
    free(stop);
    stop = turn(&f, "2");
    CHECK(strcmp(stop, "end_turn") == 0);
    free(stop);
    CHECK(protocol_errors(&f.evs, "duplicate_response") == 1);
    size_t answered_once = 0;
    for (size_t i = 0; i < f.evs.len; i++)
        if (strstr(f.evs.items[i]->json, "Turn 2 answered once.")) answered_once++;
    CHECK(answered_once == 1);
    finish(&f);
}

static void ignore_cancel(void) {
    fixture f;
    start(&f, NULL, "ignore-cancel");
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(f.h, f.session, "go", 2, &call, ERR));
    const acph_event *chunk;
    do {
        chunk = wait_kind(f.h, &f.evs, "session_update", T_WAIT);
    } while (!strstr(chunk->json, "try to cancel me"));
    EXPECT(ACPH_STATUS_OK, acph_session_cancel(f.h, f.session, ERR));
    const acph_event *done = wait_call(f.h, &f.evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    /* The agent ignored the cancel: its own stop reason is reported as it is. */
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);
    CHECK(count_kind(&f.evs, "session_update", "agent_message_chunk") == 4);
    finish(&f);
}

static void ignore_stdin_eof(void) {
    fixture f;
    start(&f, "{\"shutdownGraceMs\":300}", "ignore-stdin-eof");
    char *stop = turn(&f, "hi");
    CHECK(strcmp(stop, "end_turn") == 0);
    free(stop);
    uint64_t t0 = now_ms();
    char *exit_json = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, f.h, acph_agent_shutdown(f.h, f.agent, CALL, ERR), NULL, &exit_json);
    CHECK(now_ms() - t0 < 10000);
#ifdef _WIN32
    /* It had to be killed: TerminateJobObject ends it with exit code 1 (there are no signals). */
    CHECK_MSG(strstr(exit_json, "\"exitCode\":1,") != NULL && strstr(exit_json, "\"signal\":null"),
              exit_json);
#else
    /* It had to be killed: a signal, not an exit code. */
    CHECK_MSG(strstr(exit_json, "\"signal\":\"SIG") != NULL, exit_json);
#endif
    acph_string_free(exit_json);
    CHECK(wait_gone(f.pid, 5000));
    finish(&f);
}

static void stderr_flood(void) {
    fixture f;
    start(&f, NULL, "stderr-flood");
    /* 20,000 stderr lines are 20,000 events: more than the queue holds. Waiting for the prompt
     * with nobody pulling events would stall the agent (backpressure), so pull while the turn
     * runs. */
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(f.h, f.session, "log", 3, &call, ERR));
    const acph_event *done = wait_call(f.h, &f.evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);
    /* stderr is drained concurrently with stdout: lines may still arrive after the turn. */
    for (size_t n = count_kind(&f.evs, "agent_stderr", NULL); n < 20000; n++)
        wait_kind(f.h, &f.evs, "agent_stderr", T_WAIT);
    CHECK(count_kind(&f.evs, "agent_stderr", NULL) == 20000);
    finish(&f);
}

static void version_mismatch(void) {
    acph_host *h = make_host(NULL);
    char *spec = mock_spec("version-mismatch");
    uint64_t agent = 0;
    acph_error *err = NULL;
    EXPECT_CALL_E(ACPH_STATUS_VERSION_UNSUPPORTED, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL, &err);
    CHECK(agent == 0); /* out-params are written only on success */
    CHECK(strstr(err->data, "\"agentVersion\":2") != NULL);
    acph_error_free(err);
    /* The asynchronous spawn fails the same way, after the agent's only event. */
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(h, spec, strlen(spec), &call, ERR));
    free(spec);
    event_list evs = {0};
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    char *kind = NULL;
    CHECK(!call_result(done, &kind, NULL));
    CHECK(strcmp(kind, "version_unsupported") == 0);
    free(kind);
    CHECK(count_kind(&evs, "agent_exited", NULL) == 2);
    const acph_event *exited = find_kind(&evs, "agent_exited");
    json *ej = event_json(exited);
    CHECK(strcmp(json_str(json_get(json_get(json_get(ej, "data"), "error"), "kind")), "version_unsupported") == 0);
    json_free(ej);
    CHECK(count_kind(&evs, "agent_ready", NULL) == 0);
    /* No agent id was handed out. */
    EXPECT(ACPH_STATUS_STALE_ID, acph_agent_info(h, exited->agent, &kind, ERR));
    events_free(&evs);
    acph_host_free(h);
}

static const char *option_of_kind(const json *data, const char *kind) {
    const json *options = json_get(data, "options");
    for (size_t i = 0; options && i < options->length; i++) {
        const json *o = json_at(options, i);
        if (strcmp(json_str(json_get(o, "kind")), kind) == 0) return json_str(json_get(o, "optionId"));
    }
    return NULL;
}

static void slow_read(void) {
    fixture f;
    start(&f, "{\"permission\":\"manual\"}", "slow-read");
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(f.h, f.session, "slow", 4, &call, ERR));
    const acph_event *req = wait_kind(f.h, &f.evs, "permission_requested", T_WAIT);
    json *j = event_json(req);
    const char *allow = option_of_kind(json_get(j, "data"), "allow_once");
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(f.h, req->request, allow, strlen(allow), ERR));
    json_free(j);
    const acph_event *done = wait_call(f.h, &f.evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);
    size_t got = 0;
    for (size_t i = 0; i < f.evs.len; i++)
        if (f.evs.items[i]->kind == ACPH_EVENT_SESSION_UPDATE && strstr(f.evs.items[i]->json, "Got: selected")) got++;
    CHECK(got == 1);
    /* The call's result carries the turn's assembled text. */
    CHECK(strstr(done->json, "\"text\":\"I read slowly now. Got: selected\"") != NULL);
    finish(&f);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_faults SCENARIO\n");
        return 2;
    }
    static const struct { const char *name; void (*run)(void); } cases[] = {
        {"crash-mid-turn", crash_mid_turn},
        {"hang", hang},
        {"garbage-stdout", garbage_stdout},
        {"huge-line", huge_line},
        {"invalid-utf8", invalid_utf8},
        {"unknown-response-id", unknown_response_id},
        {"duplicate-response", duplicate_response},
        {"ignore-cancel", ignore_cancel},
        {"ignore-stdin-eof", ignore_stdin_eof},
        {"stderr-flood", stderr_flood},
        {"version-mismatch", version_mismatch},
        {"slow-read", slow_read},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(cases[i].name, argv[1]) == 0) {
            cases[i].run();
            printf("test_faults %s: ok\n", argv[1]);
            return 0;
        }
    }
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
}
