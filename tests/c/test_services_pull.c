/* Pull-side services ("services": "events"): the agents' fs and terminal requests arrive as
 * service_requested events on the thread that pulls, and are answered there with
 * acph_service_respond / acph_service_fail. No service callback is ever set, so no library
 * thread runs embedder code. Also: answering twice, an unknown id, a request left unanswered when
 * its agent exits, and the config / handler combinations that are refused. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static void respond(acph_host *h, uint64_t id, const char *json_text) {
    EXPECT(ACPH_STATUS_OK, acph_service_respond(h, id, json_text, strlen(json_text), ERR));
}

static int finalized;
static void on_finalize(void *user_data) { (void)user_data; finalized++; }
static void never_called(void *user_data, uint64_t id, const char *method, const char *params, size_t len) {
    (void)user_data; (void)id; (void)method; (void)params; (void)len;
    test_fail(__FILE__, __LINE__, "the service callback ran", NULL);
}

/* The first allow_once option of a permission_requested event. */
static char *allow_option(const acph_event *ev) {
    json *j = event_json(ev);
    const json *options = json_get(json_get(j, "data"), "options");
    char *allow = NULL;
    for (size_t i = 0; options && i < options->length; i++)
        if (strcmp(json_str(json_get(json_at(options, i), "kind")), "allow_once") == 0)
            allow = strdup(json_str(json_get(json_at(options, i), "optionId")));
    json_free(j);
    CHECK(allow != NULL);
    return allow;
}

static void refused_configs(void) {
    acph_host *h = NULL;
    const char *no_events = "{\"services\":\"events\",\"events\":false}";
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_host_new(no_events, strlen(no_events), &h, ERR));
    const char *typo = "{\"services\":\"event\"}";
    acph_error *e = NULL;
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_host_new(typo, strlen(typo), &h, ERR), &e);
    CHECK(strstr(e->data, "\"services\"") != NULL);
    acph_error_free(e);
    CHECK(h == NULL);
}

int main(void) {
    refused_configs();
    acph_host *h = make_host("{\"permission\":\"manual\",\"fs\":\"embedder\",\"terminal\":\"embedder\","
                             "\"services\":\"events\"}");
    /* There is no callback to set on such a host; a refused callback's finalizer does not run
     * (the caller keeps user_data). Removing (NULL) is harmless. */
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_host_set_service_handler(h, never_called, NULL, on_finalize, ERR));
    CHECK(finalized == 0);
    EXPECT(ACPH_STATUS_OK, acph_host_set_service_handler(h, NULL, NULL, NULL, ERR));

    char *spec = mock_spec(NULL);
    uint64_t agent = 0, session = 0, call = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    const char *cwd = scratch_dir();
    char *opts = session_options(cwd);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "notes", 5, &call, ERR));

    /* One thread: pull, answer permissions and service requests as they come. */
    event_list evs = {0};
    char methods[512] = "";
    char *written = NULL;
    int reads = 0, writes = 0, terminal_calls = 0;
    const acph_event *done = NULL;
    while (!done) {
        acph_event *ev = next_event(h, T_WAIT);
        events_push(&evs, ev);
        if (ev->kind == ACPH_EVENT_PERMISSION_REQUESTED) {
            char *allow = allow_option(ev);
            EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, ev->request, allow, strlen(allow), ERR));
            free(allow);
        } else if (ev->kind == ACPH_EVENT_CALL_COMPLETED && ev->call == call) {
            done = ev;
        } else if (ev->kind == ACPH_EVENT_SERVICE_REQUESTED) {
            CHECK(strcmp(ev->kind_name, "service_requested") == 0);
            json *j = event_json(ev);
            const json *data = json_get(j, "data");
            uint64_t rid = 0;
            CHECK(json_u64(json_get(data, "requestId"), &rid) && rid == ev->request && rid != 0);
            /* The envelope names the agent and the session asking. */
            CHECK(ev->agent == agent && ev->session == session);
            CHECK(ev->session_id && strcmp(ev->session_id, "sess_1") == 0);
            const char *method = json_str(json_get(data, "method"));
            const json *params = json_get(data, "params");
            CHECK(method && params);
            strncat(methods, method, sizeof methods - strlen(methods) - 2);
            strcat(methods, " ");
            if (strcmp(method, "fs/read_text_file") == 0) {
                reads++;
                CHECK(strstr(json_str(json_get(params, "path")), "/README.md") != NULL);
                /* A result that does not fit is refused and leaves the request pending. */
                EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_service_respond(h, rid, "{\"text\":1}", 10, ERR));
                /* The editor's unsaved buffer, not the (absent) file on disk. */
                respond(h, rid, "{\"content\":\"# unsaved buffer\\n\"}");
                /* Answering twice, either way, is already_resolved. */
                EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_service_respond(h, rid, "{\"content\":\"\"}", 14, ERR));
                EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_service_fail(h, rid, -32002, "gone", 4, ERR));
            } else if (strcmp(method, "fs/write_text_file") == 0) {
                writes++;
                written = strdup(json_str(json_get(params, "content")));
                /* fs/write_text_file takes no result: NULL answers {}. */
                EXPECT(ACPH_STATUS_OK, acph_service_respond(h, rid, NULL, 0, ERR));
            } else if (strcmp(method, "terminal/create") == 0) {
                terminal_calls++;
                CHECK(strcmp(json_str(json_get(params, "command")), "echo") == 0);
                respond(h, rid, "{\"terminalId\":\"ide-term-1\"}");
            } else if (strcmp(method, "terminal/wait_for_exit") == 0) {
                terminal_calls++;
                respond(h, rid, "{\"exitCode\":0,\"signal\":null}");
            } else if (strcmp(method, "terminal/output") == 0) {
                terminal_calls++;
                respond(h, rid, "{\"output\":\"hello from the IDE terminal\\n\",\"truncated\":false,\"exitStatus\":{\"exitCode\":0}}");
            } else if (strcmp(method, "terminal/release") == 0) {
                terminal_calls++;
                respond(h, rid, "{}");
            } else {
                EXPECT(ACPH_STATUS_OK, acph_service_fail(h, rid, -32601, "not served here", 15, ERR));
            }
            json_free(j);
        }
    }
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);
    CHECK_MSG(reads == 1 && writes == 1 && terminal_calls == 4, methods);
    /* What the user notices: the agent read the unsaved buffer (17 bytes), the write reached the
     * editor and not the disk, the IDE terminal is the one the agent embedded. */
    const acph_event *r = find_kind(&evs, "fs_read");
    CHECK(r && strstr(r->json, "\"outcome\":\"ok\"") && strstr(r->json, "\"bytes\":17"));
    const acph_event *wr = find_kind(&evs, "fs_write");
    CHECK(wr && strstr(wr->json, "\"outcome\":\"ok\""));
    CHECK(written && strstr(written, "Notes from acp-mock-agent") != NULL);
    char path[600];
    snprintf(path, sizeof path, "%s/notes.txt", cwd);
    struct stat st;
    CHECK(stat(path, &st) != 0);
    const acph_event *tc = find_kind(&evs, "terminal_created");
    CHECK(tc && strstr(tc->json, "\"terminalId\":\"ide-term-1\""));
    /* service_requested precedes the outcome event it led to. */
    const acph_event *sr = find_kind(&evs, "service_requested");
    CHECK(sr && sr->seq < r->seq);
    /* An id this host never issued. */
    EXPECT(ACPH_STATUS_NOT_FOUND, acph_service_respond(h, UINT64_MAX - 7, "{}", 2, ERR));
    events_free(&evs);

    /* A second turn on a fresh agent: its fs read is left unanswered and the agent exits. The
     * request is abandoned; answering it afterwards is already_resolved, and the turn ends with
     * the agent's exit. */
    uint64_t agent2 = 0, session2 = 0, call2 = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent2, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent2, opts, strlen(opts), CALL, ERR), &session2, NULL);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session2, "notes", 5, &call2, ERR));
    uint64_t pending = 0;
    while (!pending) {
        acph_event *ev = next_event(h, T_WAIT);
        events_push(&evs, ev);
        if (ev->kind == ACPH_EVENT_PERMISSION_REQUESTED) {
            char *allow = allow_option(ev);
            EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, ev->request, allow, strlen(allow), ERR));
            free(allow);
        } else if (ev->kind == ACPH_EVENT_SERVICE_REQUESTED) {
            CHECK(ev->agent == agent2 && ev->session == session2);
            pending = ev->request;
        }
    }
    uint64_t shutdown_call = 0;
    EXPECT(ACPH_STATUS_OK, acph_agent_shutdown(h, agent2, &shutdown_call, ERR));
    const acph_event *exited = wait_kind(h, &evs, "agent_exited", T_WAIT);
    CHECK(exited->agent == agent2);
    EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_service_respond(h, pending, "{\"content\":\"late\"}", 18, ERR));
    EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_service_fail(h, pending, -32002, "late", 4, ERR));
    /* Both calls complete (in either order): the turn with the shutdown's `closed`. */
    const acph_event *turn = NULL, *down = NULL;
    size_t seen = 0;
    while (!turn || !down) {
        for (; seen < evs.len; seen++) {
            acph_event *ev = evs.items[seen];
            if (ev->kind != ACPH_EVENT_CALL_COMPLETED) continue;
            if (ev->call == call2) turn = ev;
            if (ev->call == shutdown_call) down = ev;
        }
        if (!turn || !down) events_push(&evs, next_event(h, T_WAIT));
    }
    char *kind = NULL;
    CHECK(!call_result(turn, &kind, NULL));
    CHECK_MSG(strcmp(kind, "closed") == 0 || strcmp(kind, "agent_exited") == 0, kind);
    free(kind);
    CHECK(call_result(down, NULL, NULL));
    /* The abandoned read is not reported after the agent's end (give a late report a moment). */
    acph_event *late = NULL;
    while (acph_host_next_event(h, 300, &late) == ACPH_STATUS_OK) events_push(&evs, late);
    for (size_t i = 0; i < evs.len; i++)
        if (evs.items[i]->seq > exited->seq) CHECK_MSG(evs.items[i]->kind == ACPH_EVENT_CALL_COMPLETED, evs.items[i]->json);
    events_free(&evs);

    /* A request pending when the host is freed: freeing is safe, nothing is left behind. */
    uint64_t agent3 = 0, session3 = 0, call3 = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent3, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent3, opts, strlen(opts), CALL, ERR), &session3, NULL);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session3, "notes", 5, &call3, ERR));
    const acph_event *perm = wait_kind(h, &evs, "permission_requested", T_WAIT);
    char *allow = allow_option(perm);
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, perm->request, allow, strlen(allow), ERR));
    free(allow);
    wait_kind(h, &evs, "service_requested", T_WAIT);
    long pid = agent_pid(&evs);
    events_free(&evs);
    free(spec);
    free(opts);
    free(written);
    acph_host_free(h);
    CHECK(pid <= 0 || wait_gone(pid, 5000));
    CHECK(finalized == 0);
    printf("test_services_pull: ok\n");
    return 0;
}
