/* Steering through the C ABI (acph_session_steer, docs/STEERING.md): without the opt-in it is
 * `unsupported`; an agent that advertises steering takes the text into the running turn
 * (`injected`, the turn it joined); one that does not gets it as the next prompt when the turn
 * ends (`queued`, then `prompted` with its own turn_started/turn_ended); a cancel rejects the
 * queued steers (`rejected`, reason `cancelled`) and nothing more is prompted. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static const char *OPT_IN = "{\"unstable\":[\"_session/steering\"]}";

static uint64_t open_session(acph_host *h, const char *scenario) {
    char *spec = mock_spec(scenario);
    char *opts = session_options(scratch_dir());
    uint64_t agent = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(spec);
    free(opts);
    return session;
}

/* Steer with one text block, waited for; the result JSON (json_free). */
static json *steer(acph_host *h, uint64_t session, const char *text) {
    char content[256];
    snprintf(content, sizeof content, "[{\"type\":\"text\",\"text\":\"%s\"}]", text);
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_steer(h, session, content, strlen(content), CALL, ERR), NULL,
                &result);
    json *r = json_parse(result, strlen(result));
    CHECK_MSG(r != NULL, result);
    acph_string_free(result);
    return r;
}

static bool outcome_is(const json *j, const char *want) {
    const char *got = json_str(json_get(j, "outcome"));
    return got && strcmp(got, want) == 0;
}

/* The `steer` events pulled so far with this outcome. */
static size_t steers_with(const event_list *l, const char *outcome, const acph_event **first) {
    size_t n = 0;
    for (size_t i = 0; i < l->len; i++) {
        if (!event_is(l->items[i], "steer")) continue;
        json *j = event_json(l->items[i]);
        if (outcome_is(json_get(j, "data"), outcome)) {
            if (n++ == 0 && first) *first = l->items[i];
        }
        json_free(j);
    }
    return n;
}

static void without_the_opt_in_it_is_unsupported(void) {
    acph_host *h = make_host("{}");
    uint64_t session = open_session(h, "steering");
    const char *content = "[{\"type\":\"text\",\"text\":\"hi\"}]";
    EXPECT_CALL(ACPH_STATUS_UNSUPPORTED, h, acph_session_steer(h, session, content, strlen(content), CALL, ERR),
                NULL, NULL);
    acph_host_free(h);
}

static void injected_into_the_running_turn(void) {
    acph_host *h = make_host(OPT_IN);
    event_list evs = {0};
    uint64_t session = open_session(h, "steering");
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "go", 2, &call, ERR));
    const acph_event *started = wait_kind(h, &evs, "turn_started", T_WAIT);
    uint64_t turn = started->turn;
    json *r = steer(h, session, "go left");
    CHECK(outcome_is(r, "injected"));
    uint64_t joined = 0, id = 0;
    CHECK(json_u64(json_get(r, "turn"), &joined) && joined == turn);
    CHECK(json_u64(json_get(r, "steer"), &id) && id != 0);
    json_free(r);
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "text")), "workingsteered: go left done") == 0);
    json_free(result);
    const acph_event *ev = NULL;
    CHECK(steers_with(&evs, "injected", &ev) == 1);
    CHECK(ev->turn == turn && ev->session == session);
    CHECK(count_kind(&evs, "turn_started", NULL) == 1);
    events_free(&evs);
    acph_host_free(h);
}

static void queued_then_prompted_as_the_next_turn(void) {
    acph_host *h = make_host(OPT_IN);
    event_list evs = {0};
    uint64_t session = open_session(h, "no-steering");
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "go", 2, &call, ERR));
    uint64_t first = wait_kind(h, &evs, "turn_started", T_WAIT)->turn;
    json *r = steer(h, session, "next");
    CHECK(outcome_is(r, "queued"));
    CHECK(json_get(r, "turn") && json_get(r, "turn")->type == JSON_NULL);
    json_free(r);
    wait_kind(h, &evs, "turn_ended", T_WAIT);
    const acph_event *second = wait_kind(h, &evs, "turn_started", T_WAIT);
    CHECK(second->turn == first + 1);
    json *sj = event_json(second);
    CHECK(strcmp(json_str(json_get(json_at(json_get(json_get(sj, "data"), "prompt"), 0), "text")), "next") == 0);
    json_free(sj);
    const acph_event *ended = wait_kind(h, &evs, "turn_ended", T_WAIT);
    CHECK(ended->turn == first + 1);
    const acph_event *prompted = NULL;
    CHECK(steers_with(&evs, "queued", NULL) == 1);
    CHECK(steers_with(&evs, "prompted", &prompted) == 1);
    CHECK(prompted->turn == first + 1);
    events_free(&evs);
    acph_host_free(h);
}

static void a_cancel_rejects_the_queued_steer(void) {
    acph_host *h = make_host(OPT_IN);
    event_list evs = {0};
    uint64_t session = open_session(h, "no-steering");
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "go", 2, &call, ERR));
    wait_kind(h, &evs, "turn_started", T_WAIT);
    json *r = steer(h, session, "never");
    CHECK(outcome_is(r, "queued"));
    json_free(r);
    EXPECT(ACPH_STATUS_OK, acph_session_cancel(h, session, ERR));
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "cancelled") == 0);
    json_free(result);
    const acph_event *rejected = NULL;
    CHECK(steers_with(&evs, "rejected", &rejected) == 1);
    json *j = event_json(rejected);
    CHECK(strcmp(json_str(json_get(json_get(j, "data"), "reason")), "cancelled") == 0);
    json_free(j);
    /* Nothing more is prompted. */
    acph_event *ev = NULL;
    while (acph_host_next_event(h, 300, &ev) == ACPH_STATUS_OK) events_push(&evs, ev);
    CHECK(count_kind(&evs, "turn_started", NULL) == 1);
    events_free(&evs);
    acph_host_free(h);
}

int main(void) {
    without_the_opt_in_it_is_unsupported();
    injected_into_the_running_turn();
    queued_then_prompted_as_the_next_turn();
    a_cancel_rejects_the_queued_steer();
    puts("test_steer: ok");
    return 0;
}
