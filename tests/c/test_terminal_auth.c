/* Terminal login through the C face: config "terminalAuth":"embedder" advertises it; the service
 * handler receives `acph/terminal_auth` with the command to run (the agent's own command with the
 * method's args appended, env overlaid) and answers {"exitCode": n}; exit 0 relaunches the agent
 * (a new agent id) on which the call that failed with auth_required succeeds. */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

typedef struct {
    acph_host *host;
    const char *creds; /* what the "user" creates by logging in */
    int exit_code;
    _Atomic int logins;
} login;

static void on_service(void *user_data, uint64_t id, const char *method, const char *params, size_t len) {
    login *l = user_data;
    if (strcmp(method, "acph/terminal_auth") != 0) {
        EXPECT(ACPH_STATUS_OK, acph_service_fail(l->host, id, -32601, "not served here", 15, ERR));
        return;
    }
    atomic_fetch_add(&l->logins, 1);
    json *p = json_parse(params, len);
    CHECK(p != NULL);
    CHECK(strcmp(json_str(json_get(p, "methodId")), "mock-terminal") == 0);
    CHECK(strcmp(json_str(json_get(p, "command")), mock_agent_path()) == 0);
    const json *args = json_get(p, "args");
    CHECK(args && args->length == 3 && strcmp(json_str(json_at(args, 2)), "--login") == 0);
    CHECK(strcmp(json_str(json_get(json_get(p, "env"), "MOCK_LOGIN")), "1") == 0);
    json_free(p);
    if (l->exit_code == 0) {
        /* The user logged in: the login leaves its credentials behind. */
        FILE *f = fopen(l->creds, "w");
        CHECK(f != NULL);
        fputs("logged-in\n", f);
        fclose(f);
    }
    char answer[64];
    snprintf(answer, sizeof answer, "{\"exitCode\":%d}", l->exit_code);
    /* A malformed answer is refused and leaves the request pending. */
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_service_respond(l->host, id, "{\"ok\":true}", 11, ERR));
    EXPECT(ACPH_STATUS_OK, acph_service_respond(l->host, id, answer, strlen(answer), ERR));
}

static char *spec_with_creds(const char *creds) {
    char *base = mock_spec("auth-required");
    json *spec = json_parse(base, strlen(base));
    free(base);
    json *env = json_new_object();
    json_set(env, "ACP_MOCK_CREDENTIALS", json_new_string(creds));
    json_set(spec, "env", env);
    char *s = json_dump(spec);
    json_free(spec);
    return s;
}

int main(void) {
    const char *cwd = scratch_dir();
    char creds[1024];
    snprintf(creds, sizeof creds, "%s/credentials", cwd);
    char *spec = spec_with_creds(creds);
    char *opts = session_options(cwd);

    /* Without the runner: not advertised, refused locally. */
    acph_host *plain = make_host(NULL);
    uint64_t agent = 0, fresh = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, plain, acph_host_spawn(plain, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT_CALL(ACPH_STATUS_UNSUPPORTED, plain, acph_agent_terminal_auth(plain, agent, "mock-terminal", 13, CALL, ERR), &fresh, NULL);
    acph_host_free(plain);

    login l = {.creds = creds, .exit_code = 3};
    l.host = make_host("{\"terminalAuth\":\"embedder\"}");
    EXPECT(ACPH_STATUS_OK, acph_host_set_service_handler(l.host, on_service, &l, NULL, ERR));
    EXPECT_CALL(ACPH_STATUS_OK, l.host, acph_host_spawn(l.host, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT_CALL(ACPH_STATUS_AUTH_REQUIRED, l.host, acph_agent_new_session(l.host, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    /* An agent method is not a terminal login. */
    EXPECT_CALL(ACPH_STATUS_INVALID_ARGUMENT, l.host, acph_agent_terminal_auth(l.host, agent, "mock-login", 10, CALL, ERR), &fresh, NULL);
    /* A login that fails: auth_required, the agent keeps running. */
    EXPECT_CALL(ACPH_STATUS_AUTH_REQUIRED, l.host, acph_agent_terminal_auth(l.host, agent, "mock-terminal", 13, CALL, ERR), &fresh, NULL);
    EXPECT_CALL(ACPH_STATUS_AUTH_REQUIRED, l.host, acph_agent_new_session(l.host, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    /* A login that succeeds: a relaunched agent on which the failed call succeeds. */
    l.exit_code = 0;
    EXPECT_CALL(ACPH_STATUS_OK, l.host, acph_agent_terminal_auth(l.host, agent, "mock-terminal", 13, CALL, ERR), &fresh, NULL);
    CHECK(fresh != 0 && fresh != agent);
    CHECK(atomic_load(&l.logins) == 2);
    EXPECT_CALL(ACPH_STATUS_OK, l.host, acph_agent_new_session(l.host, fresh, opts, strlen(opts), CALL, ERR), &session, NULL);
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, l.host, acph_session_prompt_text(l.host, session, "hi", 2, CALL, ERR), NULL, &result);
    CHECK(strstr(result, "\"stopReason\":\"end_turn\"") != NULL);
    acph_string_free(result);
    /* The old agent was shut down: its agent_exited is in the stream. */
    event_list evs = {0};
    const acph_event *ev = NULL;
    do {
        ev = wait_kind(l.host, &evs, "agent_exited", T_WAIT);
    } while (ev->agent != agent);
    events_free(&evs);
    acph_host_free(l.host);
    free(spec);
    free(opts);
    printf("test_terminal_auth: ok\n");
    return 0;
}
