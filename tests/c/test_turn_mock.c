/* A full turn against the mock agent, through the asynchronous calls and the event stream, with
 * the permission request answered manually, then the same turn with each call waited for by
 * acph_call_wait on this thread (the events drained afterwards, call_completed included). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static const char *option_of_kind(const json *data, const char *kind) {
    const json *options = json_get(data, "options");
    for (size_t i = 0; options && i < options->length; i++) {
        const json *o = json_at(options, i);
        if (strcmp(json_str(json_get(o, "kind")), kind) == 0) return json_str(json_get(o, "optionId"));
    }
    return NULL;
}

static void asynchronous_turn(const char *cwd) {
    acph_host *h = make_host("{\"permission\":\"manual\",\"shutdownGraceMs\":500}");
    event_list evs = {0};

    char *spec = mock_spec(NULL);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(h, spec, strlen(spec), &call, ERR));
    free(spec);
    CHECK(call != 0);
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    uint64_t agent = 0;
    CHECK(json_u64(json_get(result, "agent"), &agent) && agent == 1);
    CHECK(strcmp(json_str(json_get(json_get(result, "agentInfo"), "name")), "acp-mock-agent") == 0);
    json_free(result);
    CHECK(done->agent == agent);
    CHECK(find_kind(&evs, "agent_ready") != NULL);
    CHECK(find_kind(&evs, "agent_ready")->agent == agent);

    char *info = NULL;
    EXPECT(ACPH_STATUS_OK, acph_agent_info(h, agent, &info, ERR));
    CHECK(strstr(info, "\"protocolVersion\":1") != NULL);
    CHECK(strstr(info, "\"exited\":null") != NULL);
    acph_string_free(info);

    char *opts = session_options(cwd);
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session(h, agent, opts, strlen(opts), &call, ERR));
    free(opts);
    done = wait_call(h, &evs, call, T_WAIT);
    CHECK(call_result(done, NULL, &result));
    uint64_t session = 0;
    CHECK(json_u64(json_get(result, "session"), &session) && session != 0);
    CHECK(strcmp(json_str(json_get(result, "sessionId")), "sess_1") == 0);
    json_free(result);
    const acph_event *opened = find_kind(&evs, "session_opened");
    CHECK(opened != NULL && opened->session == session);
    CHECK(opened->session_id && strcmp(opened->session_id, "sess_1") == 0 && opened->session_id_len == 6);

    char *sid = NULL;
    size_t sid_len = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_id(h, session, &sid, &sid_len, ERR));
    CHECK(strcmp(sid, "sess_1") == 0 && sid_len == 6);
    acph_string_free(sid);
    uint64_t owner = 0, found = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_agent(h, session, &owner, ERR));
    CHECK(owner == agent);
    EXPECT(ACPH_STATUS_OK, acph_host_find_session(h, agent, "sess_1", 6, &found, ERR));
    CHECK(found == session);

    const char *prompt = "[{\"type\":\"text\",\"text\":\"Take some notes\"}]";
    EXPECT(ACPH_STATUS_OK, acph_session_prompt(h, session, prompt, strlen(prompt), &call, ERR));
    /* Answer the permission request as it comes: allow once. */
    const acph_event *req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    CHECK(req->request != 0 && req->session == session && req->turn != 0);
    json *rj = event_json(req);
    const char *allow = option_of_kind(json_get(rj, "data"), "allow_once");
    CHECK(allow != NULL);
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, req->request, allow, strlen(allow), ERR));
    json_free(rj);
    done = wait_call(h, &evs, call, T_WAIT);
    CHECK(call_result(done, NULL, &result));
    check_turn_result(result);
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    uint64_t turn = 0;
    CHECK(json_u64(json_get(result, "turn"), &turn) && turn == 1);
    json_free(result);

    /* The turn as events, in order. */
    const acph_event *started = find_kind(&evs, "turn_started");
    const acph_event *ended = find_kind(&evs, "turn_ended");
    const acph_event *resolved = find_kind(&evs, "permission_resolved");
    CHECK(started && ended && resolved);
    CHECK(started->turn == 1 && ended->turn == 1 && started->session == session);
    CHECK(started->seq < req->seq && req->seq < resolved->seq && resolved->seq < ended->seq);
    CHECK(ended->seq < done->seq);
    CHECK(resolved->request == req->request);
    CHECK(strstr(resolved->json, "\"decidedBy\":\"host\"") != NULL);
    CHECK(count_kind(&evs, "session_update", "agent_message_chunk") >= 4);
    CHECK(count_kind(&evs, "session_update", "tool_call") == 1);
    CHECK(count_kind(&evs, "fs_write", NULL) == 1);
    CHECK(count_kind(&evs, "terminal_created", NULL) == 1);
    check_seq_increasing(&evs);
    /* The built-in fs service wrote the note inside the session's cwd. */
    char path[600];
    snprintf(path, sizeof path, "%s/notes.txt", cwd);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 0);

    char *state = NULL;
    EXPECT(ACPH_STATUS_OK, acph_session_state(h, session, &state, ERR));
    json *sj = json_parse(state, strlen(state));
    CHECK(sj != NULL);
    CHECK(strcmp(json_str(json_get(sj, "lastStopReason")), "end_turn") == 0);
    CHECK(json_get(sj, "toolCalls")->length == 1);
    json_free(sj);
    acph_string_free(state);

    long pid = agent_pid(&evs);
    EXPECT(ACPH_STATUS_OK, acph_agent_shutdown(h, agent, &call, ERR));
    done = wait_call(h, &evs, call, T_WAIT);
    CHECK(call_result(done, NULL, NULL));
    const acph_event *exited = find_kind(&evs, "agent_exited");
    CHECK(exited && exited->agent == agent && exited->seq < done->seq);
    CHECK(wait_gone(pid, 5000));
    /* The id stays valid: calls now fail with closed (the agent was shut down). */
    opts = session_options(cwd);
    EXPECT_CALL(ACPH_STATUS_CLOSED, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    events_free(&evs);
    acph_host_free(h);
}

static void blocking_turn(const char *cwd) {
    /* Default config: permission requests are denied by the deny-all policy. */
    acph_host *h = make_host(NULL);
    char *spec = mock_spec(NULL);
    uint64_t agent = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    char *opts = session_options(cwd);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_set_mode(h, session, "code", 4, CALL, ERR), NULL, NULL);
    char *options = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h,
                acph_session_set_config_option(h, session, "model", 5, "\"mock-large\"", 12, CALL, ERR), NULL,
                &options);
    CHECK(strncmp(options, "{\"configOptions\":[", 18) == 0);
    CHECK(strstr(options, "\"currentValue\":\"mock-large\"") != NULL);
    acph_string_free(options);
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, session, "hello", 5, CALL, ERR), NULL, &result);
    CHECK(strstr(result, "\"stopReason\":\"end_turn\"") != NULL);
    json *parsed = json_parse(result, strlen(result));
    check_turn_result(parsed);
    /* The turn's text, as the other faces return it. */
    CHECK_MSG(strlen(json_str(json_get(parsed, "text"))) > 0, result);
    json_free(parsed);
    acph_string_free(result);
    /* Content from files: an image (the mock accepts images) and audio (it does not: refused
     * locally, nothing sent), a text file embedded as a resource. */
    char path[1024], prompt[4096];
    snprintf(path, sizeof path, "%s/pic.png", cwd);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    fwrite("\x89PNG", 1, 4, f);
    fclose(f);
    char *block = NULL;
    EXPECT(ACPH_STATUS_OK, acph_content_from_file(path, strlen(path), &block, ERR));
    CHECK(strstr(block, "\"mimeType\":\"image/png\"") && strstr(block, "\"data\":\"iVBORw==\""));
    snprintf(prompt, sizeof prompt, "[{\"type\":\"text\",\"text\":\"look\"},%s]", block);
    acph_string_free(block);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt(h, session, prompt, strlen(prompt), CALL, ERR), NULL, &result);
    acph_string_free(result);
    snprintf(path, sizeof path, "%s/voice.wav", cwd);
    f = fopen(path, "wb");
    CHECK(f != NULL);
    fwrite("RIFF", 1, 4, f);
    fclose(f);
    EXPECT(ACPH_STATUS_OK, acph_content_from_file(path, strlen(path), &block, ERR));
    snprintf(prompt, sizeof prompt, "[%s]", block);
    acph_string_free(block);
    EXPECT_CALL(ACPH_STATUS_UNSUPPORTED, h, acph_session_prompt(h, session, prompt, strlen(prompt), CALL, ERR), NULL, &result);
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_content_from_file("rel.png", 7, &block, ERR));
    char *list = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_list_sessions(h, agent, NULL, 0, CALL, ERR), NULL, &list);
    CHECK(strstr(list, "\"sess_1\"") != NULL);
    acph_string_free(list);
    /* session/fork is unstable: without the opt-in it is refused locally. */
    uint64_t fork = 0;
    opts = session_options(cwd);
    EXPECT_CALL(ACPH_STATUS_UNSUPPORTED, h, acph_agent_fork_session(h, agent, "sess_1", 6, opts, strlen(opts), CALL, ERR), &fork, NULL);
    free(opts);

    /* The events of all this are queued meanwhile, in order. */
    event_list evs = {0};
    wait_kind(h, &evs, "turn_ended", T_WAIT);
    CHECK(find_kind(&evs, "permission_resolved") != NULL);
    CHECK(strstr(find_kind(&evs, "permission_resolved")->json, "\"decidedBy\":\"rule\"") != NULL);
    check_seq_increasing(&evs);
    CHECK(evs.items[0]->seq == 1);

    char *exit_json = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_shutdown(h, agent, CALL, ERR), NULL, &exit_json);
    CHECK(strstr(exit_json, "\"exitCode\":0") != NULL);
    acph_string_free(exit_json);
    wait_kind(h, &evs, "agent_exited", T_WAIT);

    /* Orderly shutdown: the stream ends with ACPH_STATUS_CLOSED. */
    EXPECT(ACPH_STATUS_OK, acph_host_shutdown(h, ERR));
    acph_event *ev = NULL;
    acph_status st;
    while ((st = acph_host_next_event(h, T_WAIT, &ev)) == ACPH_STATUS_OK) events_push(&evs, ev);
    CHECK(st == ACPH_STATUS_CLOSED);
    CHECK(acph_host_try_next_event(h, &ev) == ACPH_STATUS_CLOSED);
    /* Waited calls still posted their call_completed (spawn, session, mode, config option, two
     * prompts, list, shutdown at least), each for an id the wait already released. */
    size_t completed = 0;
    for (size_t i = 0; i < evs.len; i++) {
        if (evs.items[i]->kind != ACPH_EVENT_CALL_COMPLETED) continue;
        completed++;
        EXPECT(ACPH_STATUS_STALE_ID, acph_call_free(h, evs.items[i]->call, ERR));
    }
    CHECK(completed >= 8);
    spec = mock_spec(NULL);
    EXPECT_CALL(ACPH_STATUS_CLOSED, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    events_free(&evs);
    acph_host_free(h);
}

/* session/fork behind the `unstable` opt-in: a new session (own handle and id, origin "fork")
 * that takes prompts; an unknown name in `unstable` is a config error. */
static void forked_session(const char *cwd) {
    acph_host *bad = NULL;
    const char *typo = "{\"unstable\":[\"session/forks\"]}";
    acph_error *err = NULL;
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_host_new(typo, strlen(typo), &bad, ERR), &err);
    CHECK(err && strstr(err->message, "session/forks") != NULL);
    acph_error_free(err);

    acph_host *h = make_host("{\"unstable\":[\"session/fork\"]}");
    char *spec = mock_spec(NULL);
    uint64_t agent = 0, session = 0, fork = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    char *opts = session_options(cwd);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_fork_session(h, agent, "sess_1", 6, opts, strlen(opts), CALL, ERR), &fork, NULL);
    free(opts);
    CHECK(fork != 0 && fork != session);
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, fork, "hello", 5, CALL, ERR), NULL, &result);
    CHECK(strstr(result, "\"stopReason\":\"end_turn\"") != NULL);
    acph_string_free(result);
    event_list evs = {0};
    wait_kind(h, &evs, "turn_ended", T_WAIT);
    size_t opened = 0;
    for (size_t i = 0; i < evs.len; i++) {
        if (evs.items[i]->kind != ACPH_EVENT_SESSION_OPENED) continue;
        opened++;
        if (evs.items[i]->session == fork) CHECK(strstr(evs.items[i]->json, "\"origin\":\"fork\"") != NULL);
    }
    CHECK(opened == 2);
    events_free(&evs);
    acph_host_free(h);
}

int main(void) {
    const char *cwd = scratch_dir();
    asynchronous_turn(cwd);
    blocking_turn(cwd);
    forked_session(cwd);
    printf("test_turn_mock: ok\n");
    return 0;
}
