/* Event-loop integration without a thread of our own: a single-threaded loop blocked in poll()
 * on the host's event fd and on a self-pipe written by the wake-up callback drives a whole
 * session (spawn, session, prompt, permission, shutdown) through the asynchronous calls. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

typedef struct {
    int pipe_w;
    _Atomic int wakeups;
    _Atomic int on_main_thread;
    pthread_t main_thread;
    _Atomic int finalized;
} wake_ctx;

static void on_wake(void *user_data) {
    wake_ctx *w = user_data;
    atomic_fetch_add(&w->wakeups, 1);
    if (pthread_equal(pthread_self(), w->main_thread)) atomic_store(&w->on_main_thread, 1);
    char b = 1;
    ssize_t n = write(w->pipe_w, &b, 1); /* like uv_async_send: just schedule a pull */
    (void)n;
}

static void on_finalize(void *user_data) { atomic_fetch_add(&((wake_ctx *)user_data)->finalized, 1); }

static bool fd_readable(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

typedef struct {
    acph_host *h;
    int event_fd, pipe_r;
    event_list evs;
} loop;

/* One loop iteration: wait for either fd, then drain the queue. Returns the events taken. */
static size_t loop_once(loop *l, int timeout_ms) {
    struct pollfd fds[2] = {{l->event_fd, POLLIN, 0}, {l->pipe_r, POLLIN, 0}};
    int n = poll(fds, 2, timeout_ms);
    CHECK(n >= 0 || errno == EINTR);
    if (fds[1].revents & POLLIN) {
        char buf[64];
        while (read(l->pipe_r, buf, sizeof buf) > 0) {
        }
    }
    size_t taken = 0;
    for (;;) {
        acph_event *ev = NULL;
        acph_status st = acph_host_try_next_event(l->h, &ev);
        if (st == ACPH_STATUS_EMPTY) break;
        CHECK(st == ACPH_STATUS_OK);
        events_push(&l->evs, ev);
        taken++;
    }
    /* Drained: the fd stays readable only while something waits. An event may arrive right
     * after the EMPTY pull (and a wake-up may land just after its event was pulled): a pull
     * then takes it or clears the fd. A readable fd that pulls never clear is a stale wake-up. */
    for (int spins = 0; fd_readable(l->event_fd); spins++) {
        CHECK(spins < 10000);
        acph_event *ev = NULL;
        acph_status st = acph_host_try_next_event(l->h, &ev);
        if (st == ACPH_STATUS_OK) {
            events_push(&l->evs, ev);
            taken++;
        } else {
            CHECK(st == ACPH_STATUS_EMPTY);
        }
    }
    return taken;
}

static const acph_event *loop_until_call(loop *l, uint64_t call) {
    uint64_t deadline = now_ms() + T_WAIT;
    size_t seen = l->evs.len;
    while (now_ms() < deadline) {
        loop_once(l, 1000);
        for (; seen < l->evs.len; seen++) {
            acph_event *ev = l->evs.items[seen];
            if (ev->kind == ACPH_EVENT_PERMISSION_REQUESTED) {
                /* Answer from inside the loop: take the allow_once option. */
                json *j = event_json(ev);
                const json *options = json_get(json_get(j, "data"), "options");
                for (size_t i = 0; options && i < options->length; i++) {
                    const json *o = json_at(options, i);
                    if (strcmp(json_str(json_get(o, "kind")), "allow_once") == 0) {
                        const char *id = json_str(json_get(o, "optionId"));
                        EXPECT(ACPH_STATUS_OK, acph_permission_respond(l->h, ev->request, id, strlen(id), ERR));
                    }
                }
                json_free(j);
            }
            if (ev->kind == ACPH_EVENT_CALL_COMPLETED && ev->call == call) return ev;
        }
    }
    test_fail(__FILE__, __LINE__, "loop_until_call", "timed out");
    return NULL;
}

int main(void) {
    wake_ctx w = {0};
    w.main_thread = pthread_self();
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
    w.pipe_w = p[1];

    loop l = {0};
    l.h = make_host("{\"permission\":\"manual\"}");
    l.pipe_r = p[0];
    EXPECT(ACPH_STATUS_OK, acph_host_event_fd(l.h, &l.event_fd, ERR));
    CHECK(l.event_fd >= 0);
    CHECK(!fd_readable(l.event_fd));
    EXPECT(ACPH_STATUS_OK, acph_host_set_wakeup(l.h, on_wake, &w, on_finalize, ERR));

    /* Nothing happens: poll times out. */
    CHECK(loop_once(&l, 50) == 0);

    char *spec = mock_spec(NULL);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(l.h, spec, strlen(spec), &call, ERR));
    free(spec);
    json *result = NULL;
    CHECK(call_result(loop_until_call(&l, call), NULL, &result));
    uint64_t agent = 0;
    CHECK(json_u64(json_get(result, "agent"), &agent));
    json_free(result);

    char *opts = session_options(scratch_dir());
    EXPECT(ACPH_STATUS_OK, acph_agent_new_session(l.h, agent, opts, strlen(opts), &call, ERR));
    free(opts);
    CHECK(call_result(loop_until_call(&l, call), NULL, &result));
    uint64_t session = 0;
    CHECK(json_u64(json_get(result, "session"), &session));
    json_free(result);

    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(l.h, session, "Take some notes", 15, &call, ERR));
    CHECK(call_result(loop_until_call(&l, call), NULL, &result));
    CHECK(strcmp(json_str(json_get(result, "stopReason")), "end_turn") == 0);
    json_free(result);
    CHECK(find_kind(&l.evs, "permission_resolved") != NULL);

    EXPECT(ACPH_STATUS_OK, acph_agent_shutdown(l.h, agent, &call, ERR));
    CHECK(call_result(loop_until_call(&l, call), NULL, NULL));

    /* The end of the stream also wakes the loop: the fd stays readable and pulls say CLOSED. */
    EXPECT(ACPH_STATUS_OK, acph_host_shutdown(l.h, ERR));
    uint64_t deadline = now_ms() + T_WAIT;
    for (;;) {
        CHECK(now_ms() < deadline);
        struct pollfd fds[1] = {{l.event_fd, POLLIN, 0}};
        if (poll(fds, 1, 1000) != 1) continue;
        acph_event *ev = NULL;
        acph_status st = acph_host_try_next_event(l.h, &ev);
        if (st == ACPH_STATUS_CLOSED) break;
        if (st == ACPH_STATUS_OK) events_push(&l.evs, ev);
    }
    CHECK(fd_readable(l.event_fd));

    /* The callback ran on library threads only, and at least once per burst. */
    CHECK(atomic_load(&w.wakeups) >= 4);
    CHECK(atomic_load(&w.on_main_thread) == 0);
    check_seq_increasing(&l.evs);
    /* After agent_exited only the shutdown's call_completed (and a late terminal_exited). */
    const acph_event *exited = find_kind(&l.evs, "agent_exited");
    CHECK(exited != NULL);
    for (size_t i = 0; i < l.evs.len; i++)
        CHECK(l.evs.items[i]->seq <= exited->seq || event_is(l.evs.items[i], "call_completed") ||
              event_is(l.evs.items[i], "terminal_exited"));
    events_free(&l.evs);
    acph_host_free(l.h);
    CHECK(atomic_load(&w.finalized) == 1);
    close(p[0]);
    close(p[1]);
    printf("test_poll: ok (%d wake-ups)\n", atomic_load(&w.wakeups));
    return 0;
}
