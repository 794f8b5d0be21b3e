/* The ordering contract of the C face (docs/FFI.md, "Events"): every event of a turn comes
 * before the call that started it completes, and a session's events stay in the stream until
 * pulled, however late.
 *
 * 1. A slow consumer over long turns, 20 runs: each prompt streams FLOOD chunks through a queue
 *    of 16 events (so the agent is held back by the consumer), the consumer sleeps while
 *    pulling; every chunk and the `turn_ended` of the turn are pulled before its
 *    `call_completed`, none after. Runs alternate acph_session_prompt and _prompt_text.
 * 2. Pulled late: two turns waited for with acph_call_wait with nobody pulling; pulled
 *    afterwards, every event of the session is there, once, in order, each call's
 *    call_completed included. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

#define RUNS 20
#define FLOOD 120

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

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void slow_consumer_sees_the_whole_turn_before_its_result(const char *cwd) {
    acph_host *h = make_host("{\"permission\":\"deny\",\"eventCapacity\":16}");
    char *spec = flood_spec(FLOOD);
    char *opts = session_options(cwd);
    uint64_t agent = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(spec);
    free(opts);
    acph_event *ev = NULL;
    while (acph_host_try_next_event(h, &ev) == ACPH_STATUS_OK) acph_event_free(ev);

    for (int run = 0; run < RUNS; run++) {
        uint64_t call = 0;
        if (run % 2 == 0) {
            EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "go", 2, &call, ERR));
        } else {
            static const char content[] = "[{\"type\":\"text\",\"text\":\"go\"}]";
            EXPECT(ACPH_STATUS_OK, acph_session_prompt(h, session, content, strlen(content), &call, ERR));
        }
        size_t chunks = 0, pulled = 0;
        uint64_t turn = 0;
        bool ended = false, completed = false, last_seq_ok = true;
        uint64_t last_seq = 0;
        while (!completed) {
            acph_status st = acph_host_next_event(h, T_WAIT, &ev);
            CHECK_MSG(st == ACPH_STATUS_OK, "no event within the wait");
            pulled++;
            if (ev->seq <= last_seq) last_seq_ok = false;
            last_seq = ev->seq;
            /* The slow consumer: the agent waits on the full queue meanwhile. */
            if (pulled % 8 == 0) sleep_ms(2);
            if (ev->kind == ACPH_EVENT_TURN_STARTED && ev->session == session) turn = ev->turn;
            if (ev->kind == ACPH_EVENT_SESSION_UPDATE && ev->session == session) {
                CHECK_MSG(!ended, "a session_update of the turn after its turn_ended");
                if (turn != 0 && ev->turn == turn) chunks++;
            }
            if (ev->kind == ACPH_EVENT_TURN_ENDED && ev->turn == turn) ended = true;
            if (ev->kind == ACPH_EVENT_CALL_COMPLETED && ev->call == call) {
                char detail[96];
                snprintf(detail, sizeof detail, "run %d: %zu of %d chunks, turn_ended %s before the result", run,
                         chunks, FLOOD, ended ? "pulled" : "not pulled");
                CHECK_MSG(ended && chunks == FLOOD, detail);
                json *result = NULL;
                CHECK(call_result(ev, NULL, &result));
                check_turn_result(result);
                uint64_t t = 0;
                CHECK(json_u64(json_get(result, "turn"), &t) && t == turn);
                json_free(result);
                completed = true;
            }
            acph_event_free(ev);
        }
        CHECK(last_seq_ok);
        /* Nothing of the turn is left behind the result. */
        while (acph_host_try_next_event(h, &ev) == ACPH_STATUS_OK) {
            CHECK_MSG(ev->turn != turn, "an event of the turn after its result");
            acph_event_free(ev);
        }
    }
    acph_host_free(h);
}

static void events_pulled_late_are_all_there(const char *cwd) {
    acph_host *h = make_host("{\"permission\":\"deny\"}");
    char *spec = flood_spec(FLOOD);
    char *opts = session_options(cwd);
    uint64_t agent = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(spec);
    free(opts);
    for (int i = 0; i < 2; i++) {
        char *result = NULL;
        EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, session, "go", 2, CALL, ERR), NULL, &result);
        acph_string_free(result);
    }
    sleep_ms(300);

    /* Everything since the spawn, nothing missing, nothing twice. */
    event_list evs = {0};
    acph_event *ev = NULL;
    while (acph_host_try_next_event(h, &ev) == ACPH_STATUS_OK) events_push(&evs, ev);
    check_seq_increasing(&evs);
    CHECK(find_kind(&evs, "agent_ready") != NULL);
    const acph_event *opened = find_kind(&evs, "session_opened");
    CHECK(opened && opened->session == session);
    CHECK(count_kind(&evs, "turn_started", NULL) == 2 && count_kind(&evs, "turn_ended", NULL) == 2);
    size_t chunks = count_kind(&evs, "session_update", "agent_message_chunk");
    char detail[64];
    snprintf(detail, sizeof detail, "%zu of %d chunks", chunks, 2 * FLOOD);
    CHECK_MSG(chunks == 2 * FLOOD, detail);
    for (size_t i = 0; i < evs.len; i++) {
        if (event_is(evs.items[i], "session_update")) CHECK(evs.items[i]->session == session);
    }
    /* Waited calls still post their call_completed (spawn, session, two prompts): the last event
     * is the second prompt's, after its turn_ended and nothing else of the session (a host-wide
     * notice such as `events_stalled` may come between on a loaded machine). */
    CHECK(count_kind(&evs, "call_completed", NULL) == 4);
    CHECK(evs.len >= 2 && event_is(evs.items[evs.len - 1], "call_completed"));
    size_t last_end = evs.len;
    for (size_t i = 0; i < evs.len; i++) {
        if (event_is(evs.items[i], "turn_ended")) last_end = i;
    }
    CHECK(last_end < evs.len - 1);
    for (size_t i = last_end + 1; i + 1 < evs.len; i++) {
        CHECK_MSG(evs.items[i]->session != session, evs.items[i]->kind_name);
    }
    events_free(&evs);
    acph_host_free(h);
}

int main(void) {
    const char *cwd = scratch_dir();
    slow_consumer_sees_the_whole_turn_before_its_result(cwd);
    events_pulled_late_are_all_there(cwd);
    printf("test_ordering: ok\n");
    return 0;
}
