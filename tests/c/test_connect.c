/* acph_host_connect: ACP over a stream the embedder opened. The mock agent connects out to a
 * loopback listener this test opens on 127.0.0.1:0 (`--connect`; the library never listens):
 * a turn over the socket (one descriptor for both directions), the same over a pipe pair to the
 * agent's stdio with the blocking variant, the peer going away mid-turn (the prompt completes
 * with agent_exited at once), and bad descriptors (a typed error; nothing taken). POSIX only. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

extern char **environ;

/* The mock agent started with `args` (NULL-terminated, after the program), its pid. */
static pid_t start_mock(const char *const *args, posix_spawn_file_actions_t *fa) {
    const char *argv[16] = {mock_agent_path()};
    size_t n = 1;
    for (; args[n - 1] && n < 15; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = 0;
    int rc = posix_spawn(&pid, argv[0], fa, NULL, (char *const *)argv, environ);
    CHECK_MSG(rc == 0, strerror(rc));
    return pid;
}

/* A listener on 127.0.0.1:0, the mock agent connected to it (plus `scenario`), the accepted
 * socket. */
static int agent_on_a_socket(const char *scenario, pid_t *pid) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l >= 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    const char *args[] = {"--connect", addr, scenario ? "--scenario" : NULL, scenario, NULL};
    *pid = start_mock(args, NULL);
    int s = accept(l, NULL, NULL);
    CHECK_MSG(s >= 0, strerror(errno));
    close(l);
    return s;
}

static int exit_status(pid_t pid) {
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    return status;
}

static bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

static void a_turn_over_a_socket(void) {
    pid_t pid = 0;
    int s = agent_on_a_socket(NULL, &pid);
    acph_host *h = make_host("{\"permission\":\"deny\"}");
    event_list evs = {0};
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_connect(h, s, s, &call, ERR));
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    json *result = NULL;
    CHECK(call_result(done, NULL, &result));
    uint64_t agent = 0;
    CHECK(json_u64(json_get(result, "agent"), &agent) && agent != 0);
    CHECK(strcmp(json_str(json_get(json_get(result, "agentInfo"), "name")), "acp-mock-agent") == 0);
    json_free(result);
    const acph_event *ready = find_kind(&evs, "agent_ready");
    CHECK(ready && ready->agent == agent && ready->seq < done->seq);

    char *opts = session_options(scratch_dir());
    uint64_t session = 0;
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session_wait(h, agent, opts, strlen(opts), T_WAIT, &session, ERR));
    free(opts);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "hello", 5, &call, ERR));
    done = wait_call(h, &evs, call, T_WAIT);
    CHECK(call_result(done, NULL, &result));
    check_turn_result(result);
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);
    const acph_event *ended = find_kind(&evs, "turn_ended");
    CHECK(ended && ended->seq < done->seq);
    CHECK(count_kind(&evs, "session_update", NULL) > 0);
    check_seq_increasing(&evs);

    /* Shutting the agent down closes our writing end: the agent sees EOF and leaves. */
    char *exit_json = NULL;
    EXPECT(ACPH_STATUS_OK, acph_agent_shutdown_wait(h, agent, T_WAIT, &exit_json, ERR));
    acph_string_free(exit_json);
    int st = exit_status(pid);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the connected agent did not exit cleanly");
    EXPECT(ACPH_STATUS_OK, acph_agent_release(h, agent, ERR));
    events_free(&evs);
    acph_host_free(h);
    /* The library closed the socket it owned. */
    CHECK(!fd_open(s));
}

/* A container's stdio, as pipes: the blocking variant, two descriptors. */
static void a_turn_over_a_pipe_pair(void) {
    int to_agent[2], from_agent[2];
    CHECK(pipe(to_agent) == 0 && pipe(from_agent) == 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to_agent[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from_agent[1], 1);
    posix_spawn_file_actions_addclose(&fa, to_agent[1]);
    posix_spawn_file_actions_addclose(&fa, from_agent[0]);
    const char *args[] = {NULL};
    pid_t pid = start_mock(args, &fa);
    posix_spawn_file_actions_destroy(&fa);
    close(to_agent[0]);
    close(from_agent[1]);

    acph_host *h = make_host(NULL);
    uint64_t agent = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_connect_wait(h, from_agent[0], to_agent[1], T_WAIT, &agent, ERR));
    CHECK(agent != 0);
    char *opts = session_options(scratch_dir());
    uint64_t session = 0;
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session_wait(h, agent, opts, strlen(opts), T_WAIT, &session, ERR));
    free(opts);
    char *result = NULL;
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text_wait(h, session, "hello", 5, T_WAIT, &result, ERR));
    json *r = json_parse(result, strlen(result));
    check_turn_result(r);
    json_free(r);
    acph_string_free(result);
    /* Freeing the host closes both descriptors: the agent reads EOF and exits. */
    acph_host_free(h);
    CHECK(!fd_open(from_agent[0]) && !fd_open(to_agent[1]));
    int st = exit_status(pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void the_peer_going_away_fails_the_turn_at_once(void) {
    pid_t pid = 0;
    int s = agent_on_a_socket("hang", &pid);
    acph_host *h = make_host(NULL);
    event_list evs = {0};
    uint64_t agent = 0, session = 0, call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_connect_wait(h, s, s, T_WAIT, &agent, ERR));
    char *opts = session_options(scratch_dir());
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session_wait(h, agent, opts, strlen(opts), T_WAIT, &session, ERR));
    free(opts);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "hang", 4, &call, ERR));
    wait_kind(h, &evs, "turn_started", T_WAIT);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    kill(pid, SIGKILL);
    exit_status(pid);
    uint64_t t0 = now_ms();
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    uint64_t took = now_ms() - t0;
    char *kind = NULL;
    CHECK(!call_result(done, &kind, NULL));
    CHECK_MSG(kind && strcmp(kind, "agent_exited") == 0, kind);
    free(kind);
    /* Promptly: the stream's end, not a timeout. */
    CHECK_MSG(took < 5000, "the prompt took more than 5 s to fail after the peer went away");
    /* The turn's end and the agent's exit come before the call's completion. */
    const acph_event *ended = find_kind(&evs, "turn_ended");
    const acph_event *exited = find_kind(&evs, "agent_exited");
    CHECK(ended && exited && exited->agent == agent && ended->seq < done->seq);
    events_free(&evs);
    acph_host_free(h);
}

static void bad_descriptors_are_typed_errors(void) {
    acph_host *h = make_host(NULL);
    uint64_t call = 0, agent = 0;
    acph_error *err = NULL;
    EXPECT_E(ACPH_STATUS_INVALID_ARGUMENT, acph_host_connect(h, -1, -1, &call, ERR), &err);
    CHECK(strstr(err->message, "read_fd") != NULL);
    acph_error_free(err);
    /* A descriptor that is not open. */
    int fds[2];
    CHECK(pipe(fds) == 0);
    close(fds[0]);
    close(fds[1]);
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_host_connect(h, fds[0], fds[1], &call, ERR));
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_host_connect_wait(h, fds[0], fds[1], T_WAIT, &agent, ERR));
    /* A regular file cannot be polled; the wrong ends of a pipe; nothing is taken. */
    char path[600];
    snprintf(path, sizeof path, "%s/connect-file", scratch_dir());
    int f = open(path, O_RDWR | O_CREAT, 0600);
    CHECK(f >= 0);
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_host_connect(h, f, f, &call, ERR));
    CHECK(fd_open(f));
    CHECK(pipe(fds) == 0);
    EXPECT_E(ACPH_STATUS_INVALID_ARGUMENT, acph_host_connect(h, fds[1], fds[0], &call, ERR), &err);
    CHECK_MSG(strstr(err->message, "writing only") != NULL, err->message);
    acph_error_free(err);
    /* A good read end with a bad write end: the read end is given back as it was. */
    int before = fcntl(fds[0], F_GETFL);
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_host_connect(h, fds[0], f + 1000, &call, ERR));
    CHECK(fd_open(fds[0]) && fcntl(fds[0], F_GETFL) == before);
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_connect(h, fds[0], fds[1], NULL, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_connect(NULL, fds[0], fds[1], &call, ERR));
    CHECK(fd_open(fds[0]) && fd_open(fds[1]));
    CHECK(call == 0 && agent == 0);
    close(fds[0]);
    close(fds[1]);
    close(f);
    acph_host_free(h);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    bad_descriptors_are_typed_errors();
    a_turn_over_a_socket();
    a_turn_over_a_pipe_pair();
    the_peer_going_away_fails_the_turn_at_once();
    printf("test_connect: ok\n");
    return 0;
}
