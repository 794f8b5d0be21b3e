/* ACP v2 tool_call/cancel and terminal/cancel through the C face: acph_session_cancel_tool_call
 * and acph_session_cancel_terminal. The result is the agent's acceptance (`{}`); the failures
 * are decided by the core: ACPH_STATUS_UNSUPPORTED on a v1 connection or when the latest update
 * does not advertise capabilities.cancel, ACPH_STATUS_INVALID_ARGUMENT for an unknown id,
 * ACPH_STATUS_AGENT_ERROR when the agent refuses. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static void open_session(acph_host *h, const char *opts, uint64_t *session) {
    char *spec = mock_spec("v2-cancel");
    uint64_t agent = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), NULL, &result);
    json *j = json_parse(result, strlen(result));
    CHECK(json_u64(json_get(j, "session"), session));
    json_free(j);
    acph_string_free(result);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Cancel `id` (a tool call when `tool`) once the host knows it; returns the call's status. */
static acph_status cancel(acph_host *h, uint64_t session, bool tool, const char *id, char **result) {
    acph_error *err = NULL;
    uint64_t call = 0;
    acph_status st = tool ? acph_session_cancel_tool_call(h, session, id, strlen(id), &call, &err)
                          : acph_session_cancel_terminal(h, session, id, strlen(id), &call, &err);
    st = call_sync(h, st, &call, T_WAIT, NULL, result, &err);
    acph_error_free(err);
    return st;
}

/* Prompt a turn that waits for the cancel of `id`; cancel it as soon as it is known. */
static void run_cancelling(acph_host *h, uint64_t session, bool tool, const char *id) {
    uint64_t turn = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "go", 2, &turn, ERR));
    char *result = NULL;
    acph_status st;
    for (int i = 0; (st = cancel(h, session, tool, id, &result)) == ACPH_STATUS_INVALID_ARGUMENT && i < 3000; i++)
        sleep_ms(10);
    CHECK(st == ACPH_STATUS_OK);
    CHECK_MSG(result && strcmp(result, "{}") == 0, result);
    acph_string_free(result);
    char *done = NULL;
    EXPECT(ACPH_STATUS_OK, acph_call_wait(h, turn, T_WAIT, NULL, &done, ERR));
    CHECK_MSG(strstr(done, "\"stopReason\":\"end_turn\"") != NULL, done);
    acph_string_free(done);
}

int main(void) {
    char *opts = session_options(scratch_dir());
    uint64_t session = 0;
    const char *v2 = "{\"unstable\":[\"protocol/v2\"]}";

    /* v1 connection (no opt-in): unsupported, nothing sent. */
    acph_host *h = make_host("{}");
    open_session(h, opts, &session);
    CHECK(cancel(h, session, true, "call_1", NULL) == ACPH_STATUS_UNSUPPORTED);
    CHECK(cancel(h, session, false, "term_1", NULL) == ACPH_STATUS_UNSUPPORTED);
    acph_host_free(h);

    h = make_host(v2);
    open_session(h, opts, &session);
    /* Unknown ids. */
    CHECK(cancel(h, session, true, "call_1", NULL) == ACPH_STATUS_INVALID_ARGUMENT);
    CHECK(cancel(h, session, false, "nope", NULL) == ACPH_STATUS_INVALID_ARGUMENT);
    /* Accepted, then confirmed by the updates that clear the capability. */
    run_cancelling(h, session, true, "call_1");
    CHECK(cancel(h, session, true, "call_1", NULL) == ACPH_STATUS_UNSUPPORTED);
    run_cancelling(h, session, false, "term_2");
    CHECK(cancel(h, session, false, "term_2", NULL) == ACPH_STATUS_UNSUPPORTED);
    /* Turn 3: work that does not advertise cancel, and one the agent refuses. */
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, session, "three", 5, CALL, ERR), NULL, NULL);
    CHECK(cancel(h, session, true, "call_3", NULL) == ACPH_STATUS_UNSUPPORTED);
    CHECK(cancel(h, session, false, "term_3", NULL) == ACPH_STATUS_UNSUPPORTED);
    CHECK(cancel(h, session, true, "refused_3", NULL) == ACPH_STATUS_AGENT_ERROR);
    /* Bad arguments fail at the call. */
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_session_cancel_tool_call(h, session, NULL, 0, NULL, ERR));
    acph_host_free(h);
    free(opts);
    printf("test_v2_cancel: ok\n");
    return 0;
}
