/* fs and terminal requests routed to the embedder: the service callback answers some requests inside
 * the callback and hands others to a worker thread; the host applies roots and policy first and
 * reports the usual fs_read / fs_write / terminal_created events. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

typedef struct {
    acph_host *host;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t write_request; /* handed to the worker */
    char *written;          /* what the agent wrote, as the editor saw it */
    bool stop;
    _Atomic int reads, writes, terminal_calls, finalized;
    char methods[512];
} services;

static void respond(acph_host *h, uint64_t id, const char *json_text) {
    EXPECT(ACPH_STATUS_OK, acph_service_respond(h, id, json_text, strlen(json_text), ERR));
}

static void on_service(void *user_data, uint64_t id, const char *method, const char *params, size_t len) {
    services *s = user_data;
    CHECK(strlen(params) == len);
    json *p = json_parse(params, len);
    CHECK(p != NULL);
    pthread_mutex_lock(&s->mu);
    strncat(s->methods, method, sizeof s->methods - strlen(s->methods) - 2);
    strcat(s->methods, " ");
    pthread_mutex_unlock(&s->mu);
    if (strcmp(method, "fs/read_text_file") == 0) {
        atomic_fetch_add(&s->reads, 1);
        CHECK(strcmp(json_str(json_get(p, "sessionId")), "sess_1") == 0);
        CHECK(strstr(json_str(json_get(p, "path")), "/README.md") != NULL);
        /* A result that does not fit the method is refused and leaves the request pending. */
        EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_service_respond(s->host, id, "{\"text\":1}", 10, ERR));
        respond(s->host, id, "{\"content\":\"# unsaved buffer\\n\"}");
        EXPECT(ACPH_STATUS_ALREADY_RESOLVED, acph_service_respond(s->host, id, "{\"content\":\"\"}", 14, ERR));
    } else if (strcmp(method, "fs/write_text_file") == 0) {
        atomic_fetch_add(&s->writes, 1);
        pthread_mutex_lock(&s->mu);
        s->written = strdup(json_str(json_get(p, "content")));
        s->write_request = id;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
    } else if (strcmp(method, "terminal/create") == 0) {
        atomic_fetch_add(&s->terminal_calls, 1);
        CHECK(strcmp(json_str(json_get(p, "command")), "echo") == 0);
        respond(s->host, id, "{\"terminalId\":\"ide-term-1\"}");
    } else if (strcmp(method, "terminal/wait_for_exit") == 0) {
        atomic_fetch_add(&s->terminal_calls, 1);
        CHECK(strcmp(json_str(json_get(p, "terminalId")), "ide-term-1") == 0);
        respond(s->host, id, "{\"exitCode\":0,\"signal\":null}");
    } else if (strcmp(method, "terminal/output") == 0) {
        atomic_fetch_add(&s->terminal_calls, 1);
        respond(s->host, id, "{\"output\":\"hello from the IDE terminal\\n\",\"truncated\":false,\"exitStatus\":{\"exitCode\":0}}");
    } else if (strcmp(method, "terminal/release") == 0) {
        atomic_fetch_add(&s->terminal_calls, 1);
        respond(s->host, id, "{}");
    } else {
        EXPECT(ACPH_STATUS_OK, acph_service_fail(s->host, id, -32601, "not served here", 15, ERR));
    }
    json_free(p);
}

static void on_finalize(void *user_data) { atomic_fetch_add(&((services *)user_data)->finalized, 1); }

static void *worker(void *arg) {
    services *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->write_request && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    uint64_t id = s->write_request;
    pthread_mutex_unlock(&s->mu);
    if (id) respond(s->host, id, "{}");
    return NULL;
}

int main(void) {
    services s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.host = make_host("{\"permission\":\"manual\",\"fs\":\"embedder\",\"terminal\":\"embedder\"}");
    EXPECT(ACPH_STATUS_OK, acph_host_set_service_handler(s.host, on_service, &s, on_finalize, ERR));
    pthread_t w;
    CHECK(pthread_create(&w, NULL, worker, &s) == 0);

    char *spec = mock_spec(NULL);
    uint64_t agent = 0, session = 0, call = 0;
    EXPECT_CALL(ACPH_STATUS_OK, s.host, acph_host_spawn(s.host, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    /* The handshake advertised what the embedder serves. */
    const char *cwd = scratch_dir();
    char *opts = session_options(cwd);
    EXPECT_CALL(ACPH_STATUS_OK, s.host, acph_agent_new_session(s.host, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(s.host, session, "notes", 5, &call, ERR));
    event_list evs = {0};
    const acph_event *req = wait_kind(s.host, &evs, "permission_requested", T_WAIT);
    json *j = event_json(req);
    const json *options = json_get(json_get(j, "data"), "options");
    const char *allow = NULL;
    for (size_t i = 0; i < options->length; i++)
        if (strcmp(json_str(json_get(json_at(options, i), "kind")), "allow_once") == 0)
            allow = json_str(json_get(json_at(options, i), "optionId"));
    EXPECT(ACPH_STATUS_OK, acph_permission_respond(s.host, req->request, allow, strlen(allow), ERR));
    json_free(j);
    const acph_event *done = wait_call(s.host, &evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);
    CHECK(pthread_join(w, NULL) == 0);

    CHECK_MSG(atomic_load(&s.reads) == 1 && atomic_load(&s.writes) == 1, s.methods);
    CHECK_MSG(atomic_load(&s.terminal_calls) == 4, s.methods);
    CHECK(s.written != NULL && strlen(s.written) > 0);
    /* The editor served the write: nothing reached the disk. */
    char path[600];
    snprintf(path, sizeof path, "%s/notes.txt", cwd);
    struct stat st;
    CHECK(stat(path, &st) != 0);
    /* The usual events, with the embedder's answers. */
    const acph_event *r = find_kind(&evs, "fs_read");
    CHECK(r && strstr(r->json, "\"outcome\":\"ok\"") && strstr(r->json, "\"bytes\":17"));
    const acph_event *wr = find_kind(&evs, "fs_write");
    CHECK(wr && strstr(wr->json, "\"outcome\":\"ok\""));
    const acph_event *tc = find_kind(&evs, "terminal_created");
    CHECK(tc && strstr(tc->json, "\"terminalId\":\"ide-term-1\""));
    CHECK(strstr(s.written, "Notes from acp-mock-agent") != NULL);
    /* The agent embedded the IDE's terminal in its tool call, then completed it. */
    size_t embedded = 0, completed = 0;
    for (size_t i = 0; i < evs.len; i++) {
        if (event_is(evs.items[i], "session_update") && strstr(evs.items[i]->json, "\"terminalId\":\"ide-term-1\""))
            embedded++;
        if (strstr(evs.items[i]->json, "\"status\":\"completed\"")) completed++;
    }
    CHECK(embedded == 1 && completed >= 1);

    EXPECT_CALL(ACPH_STATUS_OK, s.host, acph_agent_shutdown(s.host, agent, CALL, ERR), NULL, NULL);
    /* Removing the handler runs its finalizer. */
    EXPECT(ACPH_STATUS_OK, acph_host_set_service_handler(s.host, NULL, NULL, NULL, ERR));
    CHECK(atomic_load(&s.finalized) == 1);
    events_free(&evs);
    acph_host_free(s.host);
    free(s.written);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    printf("test_services: ok\n");
    return 0;
}
