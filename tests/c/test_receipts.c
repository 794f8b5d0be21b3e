/* Delivery receipts through the C ABI (docs/EVENTS.md, "Delivery receipts"):
 * acph_permission_answer / acph_elicitation_answer start a call whose result is the answer's
 * receipt (`delivered`, or `uncertain` when the pipe fails mid-write); an answer refused at once
 * carries its `rejected` receipt (with the request's state) in the error's data; the resolution
 * event carries the same receipt. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

/* A manual host, the agent of `scenario`, and its first turn started. */
static acph_host *start(const char *scenario, event_list *evs) {
    acph_host *h = make_host("{\"permission\":\"manual\",\"elicitation\":\"manual\"}");
    char *spec = mock_spec(scenario);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(h, spec, strlen(spec), &call, ERR));
    free(spec);
    const acph_event *done = wait_call(h, evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    uint64_t agent = 0;
    CHECK(json_u64(json_get(result, "agent"), &agent));
    json_free(result);
    char *opts = session_options(scratch_dir());
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session(h, agent, opts, strlen(opts), &call, ERR));
    free(opts);
    done = wait_call(h, evs, call, T_WAIT);
    CHECK(call_result(done, NULL, &result));
    uint64_t session = 0;
    CHECK(json_u64(json_get(result, "session"), &session));
    json_free(result);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "x", 1, &call, ERR));
    return h;
}

/* `data.receipt.<key>` of an event or of an error's data, compared with `want`. */
static bool receipt_is(const json *receipt, const char *key, const char *want) {
    const char *got = json_str(json_get(receipt, key));
    return got && strcmp(got, want) == 0;
}

static bool error_receipt(acph_error *err, const char *state, const char *code) {
    json *d = json_parse(err->data, strlen(err->data));
    const json *r = json_get(d, "receipt");
    bool ok = receipt_is(r, "status", "rejected") && receipt_is(r, "state", state) && receipt_is(r, "code", code);
    json_free(d);
    acph_error_free(err);
    return ok;
}

static void permission(void) {
    event_list evs = {0};
    acph_host *h = start("permission-write", &evs);
    const acph_event *req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    uint64_t id = req->request;
    char *receipt = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_permission_answer(h, id, "allow-once", 10, CALL, ERR), NULL, &receipt);
    CHECK_MSG(strcmp(receipt, "{\"status\":\"delivered\"}") == 0, receipt);
    acph_string_free(receipt);
    const acph_event *resolved = wait_kind(h, &evs, "permission_resolved", T_WAIT);
    json *re = event_json(resolved);
    CHECK(receipt_is(json_get(json_get(re, "data"), "receipt"), "status", "delivered"));
    json_free(re);
    /* A second answer: refused at once, the request unavailable. */
    acph_error *err = NULL;
    uint64_t call = 0;
    EXPECT_E(ACPH_STATUS_ALREADY_RESOLVED, acph_permission_answer(h, id, NULL, 0, &call, ERR), &err);
    CHECK(error_receipt(err, "unavailable", "already_resolved"));
    EXPECT_E(ACPH_STATUS_NOT_FOUND, acph_permission_answer(h, id + 1000, NULL, 0, &call, ERR), &err);
    CHECK(error_receipt(err, "unavailable", "not_found"));
    events_free(&evs);
    acph_host_free(h);
}

static void broken_pipe(void) {
    event_list evs = {0};
    acph_host *h = start("receipt-broken-pipe", &evs);
    const acph_event *req = wait_kind(h, &evs, "elicitation_requested", T_WAIT);
    uint64_t id = req->request;
    /* An answer that cannot be read: refused, the request still pending. */
    acph_error *err = NULL;
    uint64_t call = 0;
    EXPECT_E(ACPH_STATUS_INVALID_JSON, acph_elicitation_answer(h, id, "{nope", 5, &call, ERR), &err);
    CHECK(error_receipt(err, "pending", "invalid_json"));
    /* A note larger than the pipe holds: the agent stops reading, then exits mid-write. */
    size_t n = 1u << 20;
    const char *head = "{\"action\":\"accept\",\"content\":{\"note\":\"";
    char *answer = malloc(strlen(head) + n + 4);
    CHECK(answer != NULL);
    strcpy(answer, head);
    memset(answer + strlen(head), 'n', n);
    strcpy(answer + strlen(head) + n, "\"}}");
    char *receipt = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_elicitation_answer(h, id, answer, strlen(answer), CALL, ERR), NULL, &receipt);
    free(answer);
    json *r = json_parse(receipt, strlen(receipt));
    CHECK_MSG(receipt_is(r, "status", "uncertain") && receipt_is(r, "code", "io"), receipt);
    const acph_event *resolved = wait_kind(h, &evs, "elicitation_resolved", T_WAIT);
    json *re = event_json(resolved);
    CHECK(json_equal(json_get(json_get(re, "data"), "receipt"), r));
    json_free(re);
    json_free(r);
    acph_string_free(receipt);
    events_free(&evs);
    acph_host_free(h);
}

int main(void) {
    permission();
    broken_pipe();
    printf("test_receipts: ok\n");
    return 0;
}
