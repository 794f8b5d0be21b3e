/* A permission prompt answered from another thread: the main thread is blocked in acph_call_wait
 * on a prompt, an event thread pulls events and hands each permission request to a "UI" thread, which
 * answers it with acph_permission_respond. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

typedef struct {
    acph_host *host;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t pending_request; /* handed from the event thread to the UI thread */
    char option[128];
    bool stop;
    event_list evs;           /* owned by the event thread until joined */
    _Atomic int answered;
    pthread_t answered_on;
} shared;

static void *event_thread(void *arg) {
    shared *s = arg;
    for (;;) {
        acph_event *ev = NULL;
        acph_status st = acph_host_next_event(s->host, 200, &ev);
        if (st == ACPH_STATUS_CLOSED) break;
        if (st == ACPH_STATUS_EMPTY) {
            pthread_mutex_lock(&s->mu);
            bool stop = s->stop;
            pthread_mutex_unlock(&s->mu);
            if (stop) break;
            continue;
        }
        CHECK(st == ACPH_STATUS_OK);
        events_push(&s->evs, ev);
        if (ev->kind == ACPH_EVENT_PERMISSION_REQUESTED) {
            json *j = event_json(ev);
            const json *options = json_get(json_get(j, "data"), "options");
            const char *allow = NULL;
            for (size_t i = 0; options && i < options->length; i++)
                if (strcmp(json_str(json_get(json_at(options, i), "kind")), "allow_once") == 0)
                    allow = json_str(json_get(json_at(options, i), "optionId"));
            CHECK(allow != NULL && strlen(allow) < sizeof s->option);
            pthread_mutex_lock(&s->mu);
            s->pending_request = ev->request;
            strcpy(s->option, allow);
            pthread_cond_broadcast(&s->cv);
            pthread_mutex_unlock(&s->mu);
            json_free(j);
        }
    }
    return NULL;
}

static void *ui_thread(void *arg) {
    shared *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->pending_request && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    uint64_t request = s->pending_request;
    char option[128];
    strcpy(option, s->option);
    pthread_mutex_unlock(&s->mu);
    if (!request) return NULL;
    /* "The user thinks for a moment." */
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    acph_error *err = NULL;
    acph_status st = acph_permission_respond(s->host, request, option, strlen(option), &err);
    if (st != ACPH_STATUS_OK) test_fail(__FILE__, __LINE__, "acph_permission_respond", err ? err->message : "");
    /* A second answer from this thread is refused. */
    CHECK(acph_permission_respond(s->host, request, NULL, 0, NULL) == ACPH_STATUS_ALREADY_RESOLVED);
    s->answered_on = pthread_self();
    atomic_store(&s->answered, 1);
    return NULL;
}

int main(void) {
    shared s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.host = make_host("{\"permission\":\"manual\"}");
    pthread_t ev_t, ui_t;
    CHECK(pthread_create(&ev_t, NULL, event_thread, &s) == 0);
    CHECK(pthread_create(&ui_t, NULL, ui_thread, &s) == 0);

    char *spec = mock_spec(NULL);
    uint64_t agent = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, s.host, acph_host_spawn(s.host, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    char *opts = session_options(scratch_dir());
    EXPECT_CALL(ACPH_STATUS_OK, s.host, acph_agent_new_session(s.host, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, s.host, acph_session_prompt_text(s.host, session, "Take some notes", 15, CALL, ERR), NULL, &result);
    CHECK(strstr(result, "\"stopReason\":\"end_turn\"") != NULL);
    acph_string_free(result);
    CHECK(atomic_load(&s.answered) == 1);
    CHECK(!pthread_equal(s.answered_on, pthread_self()));
    EXPECT_CALL(ACPH_STATUS_OK, s.host, acph_agent_shutdown(s.host, agent, CALL, ERR), NULL, NULL);
    /* Orderly end: shutdown, the event thread sees the end of the stream. */
    EXPECT(ACPH_STATUS_OK, acph_host_shutdown(s.host, ERR));
    CHECK(pthread_join(ev_t, NULL) == 0);
    pthread_mutex_lock(&s.mu);
    s.stop = true;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    CHECK(pthread_join(ui_t, NULL) == 0);

    const acph_event *resolved = find_kind(&s.evs, "permission_resolved");
    CHECK(resolved != NULL && strstr(resolved->json, "\"decidedBy\":\"host\"") != NULL);
    CHECK(strstr(resolved->json, "\"optionKind\":\"allow_once\"") != NULL);
    /* Allowed: the agent completed its tool call. */
    size_t completed = 0;
    for (size_t i = 0; i < s.evs.len; i++)
        if (strstr(s.evs.items[i]->json, "\"sessionUpdate\":\"tool_call_update\"") &&
            strstr(s.evs.items[i]->json, "\"status\":\"completed\""))
            completed++;
    CHECK(completed >= 1);
    /* agent_exited is the agent's last event (a terminal_exited may land anywhere; the waited
     * calls' call_completed may be queued a moment after their wait returned). */
    const acph_event *exited = find_kind(&s.evs, "agent_exited");
    CHECK(exited != NULL);
    for (size_t i = 0; i < s.evs.len; i++)
        CHECK(s.evs.items[i]->seq <= exited->seq || event_is(s.evs.items[i], "terminal_exited") ||
              event_is(s.evs.items[i], "call_completed"));
    check_seq_increasing(&s.evs);
    events_free(&s.evs);
    acph_host_free(s.host);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    printf("test_permission_thread: ok\n");
    return 0;
}
