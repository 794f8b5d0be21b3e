/* The log callback (acph_host_new_with_log, acph_host_set_log_handler) and `progress` events:
 * records for spawn and handshake arrive as JSON on the host's log thread, none without a
 * callback or below `logLevel`, none after removal or after acph_host_free; a blocked callback
 * does not stall an agent; `progressEvents` reports spawn and handshake in order, and an agent
 * that does not answer `initialize` in time as `waiting` then `failed`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

/* ----- a log collector ----- */

#define MAX_RECORDS 512

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    json *records[MAX_RECORDS];
    acph_log_level levels[MAX_RECORDS];
    size_t len;
    atomic_int finalized;
    atomic_int calls;
    atomic_int bad;           /* a call that broke the contract (text, length, thread) */
    atomic_int after_free;    /* set by the test once acph_host_free returned */
    atomic_int called_after;  /* calls seen after that */
    atomic_int slow_ms;       /* the callback sleeps this long first */
    acph_host *host;          /* set: the first call makes a blocking pull on it */
    atomic_int pulled;        /* 1 + the status of that pull */
    bool gated;               /* the callback waits for `open` before taking a record */
    bool open;
} collector;

static void collector_init(collector *c) {
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
}

static void collector_free(collector *c) {
    for (size_t i = 0; i < c->len; i++) json_free(c->records[i]);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
}

static void log_cb(void *user, acph_log_level level, const char *text, size_t len) {
    collector *c = user;
    atomic_fetch_add(&c->calls, 1);
    if (atomic_load(&c->after_free)) atomic_fetch_add(&c->called_after, 1);
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strcmp(name, "acph-log") != 0 || strlen(text) != len) atomic_fetch_add(&c->bad, 1);
    if (c->host && atomic_load(&c->pulled) == 0) {
        /* The log thread is not a library thread: blocking functions work there. */
        acph_event *ev = NULL;
        acph_status st = acph_host_next_event(c->host, 1, &ev);
        acph_event_free(ev);
        atomic_store(&c->pulled, 1 + (int)st);
    }
    int slow = atomic_load(&c->slow_ms);
    if (slow) nanosleep(&(struct timespec){0, slow * 1000000L}, NULL);
    json *r = json_parse(text, len);
    pthread_mutex_lock(&c->mu);
    while (c->gated && !c->open) pthread_cond_wait(&c->cv, &c->mu);
    if (r && c->len < MAX_RECORDS) {
        c->levels[c->len] = level;
        c->records[c->len++] = r;
    } else {
        atomic_fetch_add(&c->bad, 1);
        json_free(r);
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void log_fin(void *user) { atomic_fetch_add(&((collector *)user)->finalized, 1); }

static size_t record_count(collector *c) {
    pthread_mutex_lock(&c->mu);
    size_t n = c->len;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static bool starts_with(const char *s, const char *prefix) { return s && strncmp(s, prefix, strlen(prefix)) == 0; }
static bool str_eq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Wait until a record of `agent` (0: any) whose message starts with `prefix` arrived; its index. */
static size_t wait_agent_record(collector *c, const char *prefix, uint64_t agent) {
    uint64_t until = now_ms() + T_WAIT;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        for (size_t i = 0; i < c->len; i++) {
            uint64_t a = 0;
            if (agent && !(json_u64(json_get(c->records[i], "agent"), &a) && a == agent)) continue;
            if (starts_with(json_str(json_get(c->records[i], "message")), prefix)) {
                pthread_mutex_unlock(&c->mu);
                return i;
            }
        }
        if (now_ms() > until) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    test_fail(__FILE__, __LINE__, "a log record", prefix);
    return 0;
}

static size_t wait_record(collector *c, const char *prefix) { return wait_agent_record(c, prefix, 0); }

static void wait_finalized(collector *c, int want) {
    uint64_t until = now_ms() + T_WAIT;
    while (atomic_load(&c->finalized) < want && now_ms() < until) {
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(atomic_load(&c->finalized) == want);
}

static const char *const LEVELS[] = {"", "error", "warn", "info", "debug", "trace"};

/* Every record is exactly the core's shape, and its level number matches its level name. */
static void check_shapes(collector *c, uint64_t agent) {
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->len; i++) {
        const json *r = c->records[i];
        char *text = json_dump(r);
        CHECK_MSG(r->type == JSON_OBJECT && r->length == 6, text);
        const char *level = json_str(json_get(r, "level"));
        CHECK_MSG(c->levels[i] >= ACPH_LOG_ERROR && c->levels[i] <= ACPH_LOG_TRACE, text);
        CHECK_MSG(level && strcmp(level, LEVELS[c->levels[i]]) == 0, text);
        CHECK_MSG(json_str(json_get(r, "target")) && json_str(json_get(r, "message")), text);
        CHECK_MSG(json_get(r, "session") != NULL, text);
        const char *at = json_str(json_get(r, "at"));
        CHECK_MSG(at && strlen(at) == 24 && at[10] == 'T' && at[23] == 'Z', text);
        uint64_t a = 0;
        CHECK_MSG(json_is_null(json_get(r, "agent")) || (json_u64(json_get(r, "agent"), &a) && a == agent), text);
        free(text);
    }
    pthread_mutex_unlock(&c->mu);
}

/* "phase stage" of the progress events in `l`, joined with ';'. */
static void progress_steps(const event_list *l, char *out, size_t n, uint64_t agent) {
    out[0] = 0;
    for (size_t i = 0; i < l->len; i++) {
        if (!event_is(l->items[i], "progress")) continue;
        CHECK(l->items[i]->agent == agent);
        json *ev = event_json(l->items[i]);
        const json *d = json_get(ev, "data");
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s %s;", json_str(json_get(d, "phase")), json_str(json_get(d, "stage")));
        json_free(ev);
    }
}

static acph_host *logged_host(const char *config, collector *c) {
    acph_host *h = NULL;
    EXPECT(ACPH_STATUS_OK, acph_host_new_with_log(config, strlen(config), log_cb, c, log_fin, &h, ERR));
    CHECK(h != NULL);
    return h;
}

static uint64_t spawn(acph_host *h, const char *scenario) {
    char *spec = mock_spec(scenario);
    uint64_t agent = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    return agent;
}

/* ----- the tests ----- */

/* Records for spawn and handshake, progress events in order, the exit logged before free
 * returns, and no call after it. */
static void spawn_and_handshake(void) {
    collector c;
    collector_init(&c);
    acph_host *h = logged_host("{\"progressEvents\":true}", &c);
    uint64_t agent = spawn(h, NULL);
    event_list evs = {0};
    const acph_event *ev = NULL;
    do {
        ev = wait_kind(h, &evs, "progress", T_WAIT);
        json *j = event_json(ev);
        const json *d = json_get(j, "data");
        bool last = str_eq(json_str(json_get(d, "phase")), "handshake") && str_eq(json_str(json_get(d, "stage")), "done");
        uint64_t ms = 0;
        CHECK(json_u64(json_get(d, "elapsedMs"), &ms) && json_get(d, "bytes") && json_get(d, "message"));
        json_free(j);
        if (last) break;
    } while (1);
    char steps[256];
    progress_steps(&evs, steps, sizeof steps, agent);
    CHECK_MSG(strcmp(steps, "spawn started;spawn done;handshake started;handshake done;") == 0, steps);
    CHECK(find_kind(&evs, "agent_ready") != NULL);
    events_free(&evs);

    size_t i = wait_record(&c, "handshake done");
    pthread_mutex_lock(&c.mu);
    CHECK(c.levels[i] == ACPH_LOG_INFO);
    CHECK(str_eq(json_str(json_get(c.records[i], "target")), "handshake"));
    uint64_t a = 0;
    CHECK(json_u64(json_get(c.records[i], "agent"), &a) && a == agent);
    pthread_mutex_unlock(&c.mu);
    wait_record(&c, "spawn done");
    check_shapes(&c, agent);

    /* A slow callback: free still waits until the shutdown's records were delivered. */
    atomic_store(&c.slow_ms, 100);
    acph_host_free(h);
    /* The shutdown's records were delivered before free returned, then the finalizer ran. */
    CHECK(atomic_load(&c.finalized) == 1);
    bool exited = false;
    pthread_mutex_lock(&c.mu);
    for (size_t k = 0; k < c.len; k++) {
        const char *m = json_str(json_get(c.records[k], "message"));
        exited |= m && strstr(m, "exited") != NULL;
    }
    pthread_mutex_unlock(&c.mu);
    CHECK_MSG(exited, "the agent's exit is logged before acph_host_free returns");
    atomic_store(&c.after_free, 1);
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    CHECK(atomic_load(&c.called_after) == 0 && atomic_load(&c.bad) == 0);
    collector_free(&c);
}

/* No callback, or records below `logLevel`: nothing arrives; no progress events by default. */
static void nothing_without_a_callback(void) {
    collector c;
    collector_init(&c);
    /* A NULL callback: a plain host; the finalizer runs at once, nothing ever arrives. */
    acph_host *h = NULL;
    EXPECT(ACPH_STATUS_OK, acph_host_new_with_log("{}", 2, NULL, &c, log_fin, &h, ERR));
    CHECK(atomic_load(&c.finalized) == 1);
    /* Such a host has no log thread: a callback cannot be added later (and is not finalized). */
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_host_set_log_handler(h, log_cb, &c, log_fin, ERR));
    EXPECT(ACPH_STATUS_OK, acph_host_set_log_handler(h, NULL, NULL, NULL, ERR));
    CHECK(atomic_load(&c.finalized) == 1);
    uint64_t agent = spawn(h, NULL);
    event_list evs = {0};
    wait_kind(h, &evs, "agent_ready", T_WAIT);
    CHECK(find_kind(&evs, "progress") == NULL); /* progressEvents is off by default */
    events_free(&evs);
    EXPECT(ACPH_STATUS_OK, acph_agent_release(h, agent, ERR));
    acph_host_free(h);
    CHECK(atomic_load(&c.calls) == 0);

    /* `logLevel: "error"`: a healthy spawn and exit make no record at that level. */
    h = logged_host("{\"logLevel\":\"error\"}", &c);
    agent = spawn(h, NULL);
    EXPECT(ACPH_STATUS_OK, acph_agent_release(h, agent, ERR));
    acph_host_free(h);
    CHECK(atomic_load(&c.finalized) == 2);
    CHECK(atomic_load(&c.calls) == 0);

    /* A bad config: the finalizer runs before acph_host_new_with_log returns. */
    EXPECT(ACPH_STATUS_INVALID_CONFIG, acph_host_new_with_log("{\"logLevel\":\"loud\"}", 19, log_cb, &c, log_fin, &h, ERR));
    CHECK(atomic_load(&c.finalized) == 3 && atomic_load(&c.calls) == 0);
    collector_free(&c);
}

/* Removing the callback stops the records (once its finalizer ran); a new one gets them. */
static void unregister_and_replace(void) {
    collector c, d;
    collector_init(&c);
    collector_init(&d);
    acph_host *h = logged_host("{}", &c);
    spawn(h, NULL);
    wait_record(&c, "handshake done");
    EXPECT(ACPH_STATUS_OK, acph_host_set_log_handler(h, NULL, NULL, NULL, ERR));
    wait_finalized(&c, 1);
    int calls = atomic_load(&c.calls);
    spawn(h, NULL);
    d.host = h;
    EXPECT(ACPH_STATUS_OK, acph_host_set_log_handler(h, log_cb, &d, log_fin, ERR));
    uint64_t third = spawn(h, NULL);
    wait_agent_record(&d, "handshake done", third);
    int pulled = atomic_load(&d.pulled) - 1;
    CHECK_MSG(pulled == ACPH_STATUS_OK || pulled == ACPH_STATUS_EMPTY, acph_status_str((acph_status)pulled));
    acph_host_free(h);
    CHECK(atomic_load(&c.calls) == calls && atomic_load(&c.finalized) == 1);
    CHECK(atomic_load(&d.finalized) == 1 && atomic_load(&d.bad) == 0);
    collector_free(&c);
    collector_free(&d);
}

/* A callback that blocks does not stall the agent: spawn and a turn complete while it waits;
 * the records then arrive, in order. */
static void a_blocked_callback_stalls_nothing(void) {
    collector c;
    collector_init(&c);
    c.gated = true;
    acph_host *h = logged_host("{\"progressEvents\":true}", &c);
    uint64_t agent = spawn(h, NULL);
    event_list evs = {0};
    wait_kind(h, &evs, "agent_ready", T_WAIT);
    events_free(&evs);
    CHECK(record_count(&c) == 0);
    pthread_mutex_lock(&c.mu);
    c.open = true;
    pthread_cond_broadcast(&c.cv);
    pthread_mutex_unlock(&c.mu);
    size_t started = wait_record(&c, "spawn started");
    size_t done = wait_record(&c, "handshake done");
    CHECK(started < done);
    EXPECT(ACPH_STATUS_OK, acph_agent_release(h, agent, ERR));
    acph_host_free(h);
    CHECK(atomic_load(&c.finalized) == 1 && atomic_load(&c.bad) == 0);
    collector_free(&c);
}

/* C has no permission handler, but an answer that is not an offered option is the same failure:
 * the request is denied (`invalid_answer`) and the log says why, as a `permission` warning. */
static void a_bad_permission_answer_is_logged(void) {
    collector c;
    collector_init(&c);
    acph_host *h = logged_host("{\"permission\":\"manual\",\"logLevel\":\"warn\"}", &c);
    uint64_t agent = spawn(h, NULL);
    char *opts = session_options(scratch_dir());
    uint64_t session = 0, call = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, opts, strlen(opts), CALL, ERR), &session, NULL);
    free(opts);
    EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(h, session, "Take some notes", 15, &call, ERR));
    event_list evs = {0};
    const acph_event *req = wait_kind(h, &evs, "permission_requested", T_WAIT);
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_permission_respond(h, req->request, "bogus-option", 12, ERR));
    const acph_event *resolved = wait_kind(h, &evs, "permission_resolved", T_WAIT);
    CHECK_MSG(strstr(resolved->json, "\"decidedBy\":\"invalid_answer\"") != NULL, resolved->json);
    wait_call(h, &evs, call, T_WAIT);
    events_free(&evs);
    size_t i = wait_record(&c, "permission request");
    pthread_mutex_lock(&c.mu);
    const json *r = c.records[i];
    CHECK(c.levels[i] == ACPH_LOG_WARN && str_eq(json_str(json_get(r, "target")), "permission"));
    CHECK(str_eq(json_str(json_get(r, "session")), "sess_1"));
    const char *m = json_str(json_get(r, "message"));
    CHECK_MSG(m && strstr(m, "bogus-option") != NULL, m);
    /* `warn`: the healthy spawn's `info` records were never made. */
    for (size_t k = 0; k < c.len; k++) CHECK(c.levels[k] <= ACPH_LOG_WARN);
    pthread_mutex_unlock(&c.mu);
    check_shapes(&c, agent);
    acph_host_free(h);
    CHECK(atomic_load(&c.finalized) == 1 && atomic_load(&c.bad) == 0);
    collector_free(&c);
}

/* An agent that sleeps past `requestTimeoutMs` before answering `initialize`: `waiting` after
 * about 5 s (saying what is awaited), then `failed`; the log hears the wait as a warning. */
static void a_silent_agent_is_reported_waiting(void) {
    collector c;
    collector_init(&c);
    acph_host *h = logged_host("{\"progressEvents\":true,\"requestTimeoutMs\":6500}", &c);
    json *spec = json_new_object();
    json_set(spec, "command", json_new_string(mock_agent_path()));
    json *args = json_new_array();
    json_push(args, json_new_string("--sleep"));
    json_push(args, json_new_string("7000"));
    json_set(spec, "args", args);
    char *text = json_dump(spec);
    json_free(spec);
    uint64_t agent = 0;
    acph_error *e = NULL;
    EXPECT_CALL_E(ACPH_STATUS_TIMEOUT, h, acph_host_spawn(h, text, strlen(text), CALL, ERR), &agent, NULL, &e);
    /* The call's own timeout (it completed): not a wait that gave up on a running call. */
    CHECK_MSG(strstr(e->data, "\"running\"") == NULL, e->data);
    acph_error_free(e);
    free(text);
    event_list evs = {0};
    uint64_t id = 0;
    for (;;) {
        const acph_event *ev = wait_kind(h, &evs, "progress", T_WAIT);
        json *j = event_json(ev);
        const json *d = json_get(j, "data");
        id = ev->agent;
        bool failed = str_eq(json_str(json_get(d, "stage")), "failed");
        if (str_eq(json_str(json_get(d, "stage")), "waiting")) {
            uint64_t ms = 0;
            CHECK(json_u64(json_get(d, "elapsedMs"), &ms) && ms >= 4900);
            const char *m = json_str(json_get(d, "message"));
            CHECK_MSG(m && strstr(m, "initialize") != NULL, m);
        }
        json_free(j);
        if (failed) break;
    }
    char steps[256];
    progress_steps(&evs, steps, sizeof steps, id);
    CHECK_MSG(strcmp(steps, "spawn started;spawn done;handshake started;handshake waiting;handshake failed;") == 0,
              steps);
    events_free(&evs);
    size_t i = wait_record(&c, "handshake waiting");
    pthread_mutex_lock(&c.mu);
    CHECK(c.levels[i] == ACPH_LOG_WARN);
    pthread_mutex_unlock(&c.mu);
    wait_record(&c, "handshake failed");
    check_shapes(&c, id);
    acph_host_free(h);
    CHECK(atomic_load(&c.finalized) == 1);
    collector_free(&c);
}

int main(void) {
    spawn_and_handshake();
    nothing_without_a_callback();
    unregister_and_replace();
    a_blocked_callback_stalls_nothing();
    a_bad_permission_answer_is_logged();
    a_silent_agent_is_reported_waiting();
    printf("logs_progress: ok\n");
    return 0;
}
