/* A full turn against an agent nobody here wrote: the official TypeScript SDK's example agent
 * (npm @agentclientprotocol/sdk 1.9.0, fixtures/interop/ts-agent). It streams chunks and tool
 * calls, then asks permission for an edit; we allow it from the event stream. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

int main(void) {
    const char *agent_cmd = getenv("ACPH_TS_AGENT");
    CHECK_MSG(agent_cmd && *agent_cmd, "ACPH_TS_AGENT is not set");
    acph_host *h = make_host("{\"permission\":\"manual\"}");
    json *spec = json_new_object();
    json_set(spec, "command", json_new_string(agent_cmd));
    char *spec_text = json_dump(spec);
    json_free(spec);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(h, spec_text, strlen(spec_text), &call, ERR));
    free(spec_text);
    event_list evs = {0};
    json *result = NULL;
    CHECK(call_result(wait_call(h, &evs, call, T_WAIT), NULL, &result));
    uint64_t agent = 0;
    CHECK(json_u64(json_get(result, "agent"), &agent));
    uint64_t version = 0;
    CHECK(json_u64(json_get(result, "protocolVersion"), &version) && version == 1);
    json_free(result);

    char *opts = session_options(scratch_dir());
    uint64_t session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    char *sid = NULL;
    size_t sid_len = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_id(h, session, &sid, &sid_len, ERR));
    CHECK(sid_len == 32); /* 32 hex characters, random */
    acph_string_free(sid);

    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "Update the config", 17, &call, ERR));
    const acph_event *req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    CHECK(req->session == session);
    json *j = event_json(req);
    const json *data = json_get(j, "data");
    /* Exactly two options: allow / reject. The tool call is merged with the announced call_2. */
    CHECK(json_get(data, "options")->length == 2);
    CHECK(strcmp(json_str(json_get(json_get(data, "toolCall"), "toolCallId")), "call_2") == 0);
    CHECK(strcmp(json_str(json_get(json_get(data, "toolCall"), "title")), "Modifying critical configuration file") == 0);
    json_free(j);
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(h, req->request, "allow", 5, ERR));
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    CHECK(call_result(done, NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);

    CHECK(count_kind(&evs, "session_update", "tool_call") == 2);
    CHECK(count_kind(&evs, "session_update", "agent_message_chunk") == 3);
    size_t call2_completed = 0, perfect = 0;
    for (size_t i = 0; i < evs.len; i++) {
        if (evs.items[i]->kind != ACPH_EVENT_SESSION_UPDATE) continue; /* call_completed repeats the text */
        const char *js = evs.items[i]->json;
        if (strstr(js, "\"toolCallId\":\"call_2\"") && strstr(js, "\"status\":\"completed\"")) call2_completed++;
        if (strstr(js, "Perfect! I've successfully updated the configuration.")) perfect++;
    }
    CHECK(call2_completed == 1 && perfect == 1);
    const acph_event *resolved = find_kind(&evs, "permission_resolved");
    CHECK(resolved && strstr(resolved->json, "\"optionId\":\"allow\"") && strstr(resolved->json, "\"decidedBy\":\"host\""));
    check_seq_increasing(&evs);

    long pid = agent_pid(&evs);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_shutdown(h, agent, CALL, ERR), NULL, NULL);
    wait_kind(h, &evs, "agent_exited", T_WAIT);
    CHECK(wait_gone(pid, 5000));
    events_free(&evs);
    acph_host_free(h);
    printf("test_turn_ts: ok\n");
    return 0;
}
