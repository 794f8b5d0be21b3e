/* The unstable session methods besides fork through the C face: acph_agent_session_status,
 * acph_agent_set_session_title, acph_agent_archive_session, acph_agent_unarchive_session,
 * acph_agent_session_options. Opt-in (`"unstable"` in the config) and gated on the agent's
 * capabilities (ACPH_STATUS_UNSUPPORTED, nothing sent), typed JSON results, the agent's errors
 * (ACPH_STATUS_AGENT_ERROR) and malformed answers (ACPH_STATUS_PROTOCOL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

#define ALL_UNSTABLE                                                                                   \
    "{\"wireEvents\":true,\"unstable\":[\"session/status\",\"session/set_title\",\"session/archive\"," \
    "\"session/unarchive\",\"session/options\"]}"

static uint64_t spawn(acph_host *h, const char *scenario) {
    char *spec = mock_spec(scenario);
    uint64_t agent = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    return agent;
}

/* Every call once on `sid`, each expected to end with `want`. */
static void all_five(acph_host *h, uint64_t agent, const char *sid, const char *opts, acph_status want) {
    size_t n = strlen(sid);
    EXPECT_CALL(want, h, acph_agent_session_status(h, agent, sid, n, CALL, ERR), NULL, NULL);
    EXPECT_CALL(want, h, acph_agent_set_session_title(h, agent, sid, n, "t", 1, CALL, ERR), NULL, NULL);
    EXPECT_CALL(want, h, acph_agent_archive_session(h, agent, sid, n, CALL, ERR), NULL, NULL);
    EXPECT_CALL(want, h, acph_agent_unarchive_session(h, agent, sid, n, CALL, ERR), NULL, NULL);
    EXPECT_CALL(want, h, acph_agent_session_options(h, agent, opts, strlen(opts), sid, n, CALL, ERR), NULL, NULL);
}

static bool sent(const event_list *l, const char *method) {
    char needle[96];
    snprintf(needle, sizeof needle, "\"method\":\"%s\"", method);
    for (size_t i = 0; i < l->len; i++)
        if (l->items[i]->kind == ACPH_EVENT_WIRE && strstr(l->items[i]->json, needle)) return true;
    return false;
}

static void refused_without_opt_in_or_capability(const char *opts) {
    /* The agent advertises them; the host did not opt in. */
    acph_host *h = make_host("{\"wireEvents\":true}");
    uint64_t agent = spawn(h, "unstable-sessions");
    all_five(h, agent, "sess_stored", opts, ACPH_STATUS_UNSUPPORTED);
    acph_error *err = NULL;
    EXPECT_CALL_E(ACPH_STATUS_UNSUPPORTED, h, acph_agent_session_status(h, agent, "sess_stored", 11, CALL, ERR), NULL, NULL, &err);
    CHECK(err && strstr(err->message, "session/status") != NULL);
    acph_error_free(err);
    event_list evs = {0};
    acph_event *ev = NULL;
    while (acph_host_next_event(h, 200, &ev) == ACPH_STATUS_OK) events_push(&evs, ev);
    CHECK(!sent(&evs, "session/status") && !sent(&evs, "session/options") && !sent(&evs, "session/archive"));
    events_free(&evs);
    acph_host_free(h);
    /* Opted in; the default mock advertises none of them. */
    h = make_host(ALL_UNSTABLE);
    agent = spawn(h, NULL);
    all_five(h, agent, "sess_1", opts, ACPH_STATUS_UNSUPPORTED);
    acph_host_free(h);
    /* A name that is not an opt-in method is a config error. */
    acph_host *bad = NULL;
    const char *typo = "{\"unstable\":[\"session/titles\"]}";
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_host_new(typo, strlen(typo), &bad, ERR), &err);
    CHECK(bad == NULL && err && strstr(err->message, "session/titles") != NULL);
    acph_error_free(err);
}

static void served(const char *cwd, const char *opts) {
    acph_host *h = make_host(ALL_UNSTABLE);
    uint64_t agent = spawn(h, "unstable-sessions");
    uint64_t session = 0;
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);

    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_session_status(h, agent, "sess_1", 6, CALL, ERR), NULL, &result);
    CHECK_MSG(strcmp(result, "{\"status\":\"open\",\"reported\":\"open\"}") == 0, result);
    acph_string_free(result);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_session_status(h, agent, "_mock_custom_status", 19, CALL, ERR), NULL, &result);
    CHECK_MSG(strcmp(result, "{\"status\":\"saved\",\"reported\":\"_hibernating\"}") == 0, result);
    acph_string_free(result);

    const char *title = "  Release notes ";
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_set_session_title(h, agent, "sess_1", 6, title, strlen(title), CALL, ERR), NULL, &result);
    CHECK_MSG(strcmp(result, "{\"title\":\"Release notes\"}") == 0, result);
    acph_string_free(result);

    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_session_options(h, agent, opts, strlen(opts), NULL, 0, CALL, ERR), NULL, &result);
    json *d = json_parse(result, strlen(result));
    CHECK(d && strcmp(json_str(json_get(json_get(d, "modes"), "currentModeId")), "ask") == 0);
    CHECK(json_at(json_get(d, "configOptions"), 0) != NULL);
    json_free(d);
    acph_string_free(result);

    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_archive_session(h, agent, "sess_1", 6, CALL, ERR), NULL, &result);
    CHECK(strcmp(result, "{}") == 0);
    acph_string_free(result);
    event_list evs = {0};
    const acph_event *closed = wait_kind(h, &evs, "session_closed", T_WAIT);
    CHECK(closed->session == session && strstr(closed->json, "\"reason\":\"archived\"") != NULL);
    events_free(&evs);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_list_sessions(h, agent, NULL, 0, CALL, ERR), NULL, &result);
    CHECK_MSG(strstr(result, "\"sessionId\":\"sess_1\"") == NULL, result);
    acph_string_free(result);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_unarchive_session(h, agent, "sess_1", 6, CALL, ERR), NULL, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_list_sessions(h, agent, NULL, 0, CALL, ERR), NULL, &result);
    CHECK_MSG(strstr(result, "\"title\":\"Release notes\"") != NULL, result);
    acph_string_free(result);

    /* The agent's errors and malformed answers. */
    all_five(h, agent, "sess_nope", opts, ACPH_STATUS_AGENT_ERROR);
    acph_error *err = NULL;
    EXPECT_CALL_E(ACPH_STATUS_AGENT_ERROR, h, acph_agent_set_session_title(h, agent, "sess_1", 6, " ", 1, CALL, ERR), NULL, NULL, &err);
    CHECK(err && strstr(err->data, "-32602") != NULL);
    acph_error_free(err);
    EXPECT_CALL(ACPH_STATUS_PROTOCOL, h, acph_agent_session_status(h, agent, "_mock_malformed", 15, CALL, ERR), NULL, NULL);
    EXPECT_CALL(ACPH_STATUS_PROTOCOL, h, acph_agent_set_session_title(h, agent, "_mock_malformed", 15, "x", 1, CALL, ERR), NULL, NULL);
    EXPECT_CALL(ACPH_STATUS_PROTOCOL, h, acph_agent_session_options(h, agent, opts, strlen(opts), "_mock_malformed", 15, CALL, ERR), NULL, NULL);
    /* Bad arguments fail at the call. */
    const char *relative = "{\"cwd\":\"relative\"}";
    EXPECT_CALL(ACPH_STATUS_INVALID_CONFIG, h, acph_agent_session_options(h, agent, relative, strlen(relative), NULL, 0, CALL, ERR), NULL, NULL);
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_agent_session_status(h, agent, NULL, 0, NULL, ERR));
    (void)cwd;
    acph_host_free(h);
}

int main(void) {
    const char *cwd = scratch_dir();
    char *opts = session_options(cwd);
    refused_without_opt_in_or_capability(opts);
    served(cwd, opts);
    free(opts);
    printf("test_unstable_sessions: ok\n");
    return 0;
}
