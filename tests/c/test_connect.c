/* acph_host_connect: ACP over a stream the embedder opened. The mock agent connects out to a
 * loopback listener this test opens on 127.0.0.1:0 (`--connect`; the library never listens):
 * a turn over the socket (one descriptor for both directions), the same over a pipe pair to the
 * agent's stdio waited for with acph_call_wait, the peer going away mid-turn (the prompt completes
 * with agent_exited at once), and bad descriptors (a typed error; nothing taken). On Windows
 * (cross-compiled, under Wine) the socket cases and bad handles; the pipe pair is POSIX only. */
#define _POSIX_C_SOURCE 200809L
#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#else
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#endif
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

#ifdef _WIN32
/* Windows (under Wine in scripts/test-windows): a SOCKET, the mock agent started with
 * CreateProcess. */
typedef SOCKET sock_t;
typedef HANDLE proc_t;
#define close_sock closesocket

static proc_t start_mock_connecting(const char *addr, const char *scenario) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "\"%s\" --connect %s%s%s", mock_agent_path(), addr, scenario ? " --scenario " : "",
             scenario ? scenario : "");
    STARTUPINFOA si = {0};
    si.cb = sizeof si;
    PROCESS_INFORMATION pi = {0};
    CHECK_MSG(CreateProcessA(NULL, cmd, NULL, NULL, FALSE, 0, NULL, NULL, &si, &pi), cmd);
    CloseHandle(pi.hThread);
    return pi.hProcess;
}

static void kill_mock(proc_t p) { TerminateProcess(p, 9); }

/* The exit code (waits). */
static int mock_exit(proc_t p) {
    CHECK(WaitForSingleObject(p, 30000) == WAIT_OBJECT_0);
    DWORD code = 0;
    GetExitCodeProcess(p, &code);
    CloseHandle(p);
    return (int)code;
}

static void sleep_ms(long ms) { Sleep((DWORD)ms); }
#else
typedef int sock_t;
typedef pid_t proc_t;
#define close_sock close
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

static proc_t start_mock_connecting(const char *addr, const char *scenario) {
    const char *args[] = {"--connect", addr, scenario ? "--scenario" : NULL, scenario, NULL};
    return start_mock(args, NULL);
}

static void kill_mock(proc_t p) { kill(p, SIGKILL); }

/* The exit code (waits); -1 for a signal. */
static int mock_exit(proc_t pid) {
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }
#endif

/* A listener on 127.0.0.1:0, the mock agent connected to it (plus `scenario`), the accepted
 * socket. */
static sock_t agent_on_a_socket(const char *scenario, proc_t *proc) {
    sock_t l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l != (sock_t)-1);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(l, (struct sockaddr *)&a, &len) == 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    *proc = start_mock_connecting(addr, scenario);
    sock_t s = accept(l, NULL, NULL);
    CHECK_MSG(s != (sock_t)-1, "accept");
    close_sock(l);
    return s;
}

static void a_turn_over_a_socket(void) {
    proc_t pid;
    sock_t s = agent_on_a_socket(NULL, &pid);
    acph_host *h = make_host("{\"permission\":\"deny\"}");
    event_list evs = {0};
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_connect(h, (intptr_t)s, (intptr_t)s, &call, ERR));
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
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
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
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_shutdown(h, agent, CALL, ERR), NULL, &exit_json);
    acph_string_free(exit_json);
    CHECK_MSG(mock_exit(pid) == 0, "the connected agent did not exit cleanly");
    EXPECT(ACPH_STATUS_OK, acph_agent_release(h, agent, ERR));
    events_free(&evs);
    acph_host_free(h);
#ifndef _WIN32
    /* The library closed the socket it owned. */
    CHECK(!fd_open(s));
#endif
}

#ifndef _WIN32

/* A container's stdio, as pipes, each call waited for with acph_call_wait: two descriptors. */
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
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_connect(h, from_agent[0], to_agent[1], CALL, ERR), &agent, NULL);
    CHECK(agent != 0);
    char *opts = session_options(scratch_dir());
    uint64_t session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    char *result = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, session, "hello", 5, CALL, ERR), NULL, &result);
    json *r = json_parse(result, strlen(result));
    check_turn_result(r);
    json_free(r);
    acph_string_free(result);
    /* Freeing the host closes both descriptors: the agent reads EOF and exits. */
    acph_host_free(h);
    CHECK(!fd_open(from_agent[0]) && !fd_open(to_agent[1]));
    CHECK(mock_exit(pid) == 0);
}
#endif

static void the_peer_going_away_fails_the_turn_at_once(void) {
    proc_t pid;
    sock_t s = agent_on_a_socket("hang", &pid);
    acph_host *h = make_host(NULL);
    event_list evs = {0};
    uint64_t agent = 0, session = 0, call = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_connect(h, (intptr_t)s, (intptr_t)s, CALL, ERR), &agent, NULL);
    char *opts = session_options(scratch_dir());
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "hang", 4, &call, ERR));
    wait_kind(h, &evs, "turn_started", T_WAIT);
    sleep_ms(200);
    kill_mock(pid);
    mock_exit(pid);
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

#ifdef _WIN32
static void bad_descriptors_are_typed_errors(void) {
    acph_host *h = make_host(NULL);
    uint64_t call = 0, agent = 0;
    /* INVALID_HANDLE_VALUE, NULL, and a value that names no handle. */
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_host_connect(h, -1, -1, &call, ERR));
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_host_connect(h, 0, 0, &call, ERR));
    EXPECT_CALL(ACPH_STATUS_INVALID_ARGUMENT, h, acph_host_connect(h, 0x7ffff0, 0x7ffff4, CALL, ERR), &agent, NULL);
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_host_connect(h, -1, -1, NULL, ERR));
    CHECK(call == 0 && agent == 0);
    acph_host_free(h);
}
#else
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
    EXPECT_CALL(ACPH_STATUS_INVALID_ARGUMENT, h, acph_host_connect(h, fds[0], fds[1], CALL, ERR), &agent, NULL);
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

#endif

int main(void) {
#ifdef _WIN32
    WSADATA wsa;
    CHECK(WSAStartup(MAKEWORD(2, 2), &wsa) == 0);
#else
    signal(SIGPIPE, SIG_IGN);
#endif
    bad_descriptors_are_typed_errors();
    a_turn_over_a_socket();
#ifndef _WIN32
    a_turn_over_a_pipe_pair();
#endif
    the_peer_going_away_fails_the_turn_at_once();
    printf("test_connect: ok\n");
    return 0;
}
