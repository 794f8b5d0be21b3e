/* Helpers shared by the C tests: checks, hosts, events, processes. Not part of the library. */
#ifndef ACPH_TESTUTIL_H
#define ACPH_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acp_host.h"
#include "json.h"

/* Default wait for anything the mock agent does (generous: valgrind is slow). */
#define T_WAIT 60000u

void test_fail(const char *file, int line, const char *what, const char *detail);

#define CHECK(cond)                                                 \
    do {                                                            \
        if (!(cond)) test_fail(__FILE__, __LINE__, #cond, NULL);    \
    } while (0)

#define CHECK_MSG(cond, detail)                                     \
    do {                                                            \
        if (!(cond)) test_fail(__FILE__, __LINE__, #cond, (detail)); \
    } while (0)

/* `EXPECT(status, call)`: `call` passes `ERR` as its `acph_error **error_out`; the status must be
 * `status` (the error, if any, is printed on a mismatch and freed). */
#define ERR (&t_err)
#define EXPECT(status, call)                                                        \
    do {                                                                            \
        acph_error *t_err = NULL;                                                   \
        acph_status t_st = (call);                                                  \
        expect_status(__FILE__, __LINE__, #call, t_st, t_err, (status), NULL);      \
    } while (0)
/* Same, but the error object is kept in `*(errp)` (NULL on success). */
#define EXPECT_E(status, call, errp)                                                \
    do {                                                                            \
        acph_error *t_err = NULL;                                                   \
        acph_status t_st = (call);                                                  \
        expect_status(__FILE__, __LINE__, #call, t_st, t_err, (status), (errp));    \
    } while (0)

void expect_status(const char *file, int line, const char *call, acph_status got, acph_error *err,
                   acph_status want, acph_error **keep);

/* `EXPECT_CALL(status, host, start, id_out, result_out)`: `start` is an asynchronous call given
 * `CALL` as its `call_out` and `ERR` as its `error_out`. The status checked is the start's when
 * it failed (no call was started), else acph_call_wait's (T_WAIT): the call's own outcome, which
 * releases the call. `id_out` and `result_out` go to acph_call_wait (NULL: not wanted). */
#define CALL (&t_call)
#define EXPECT_CALL(status, host, start, id_out, result_out) \
    EXPECT_CALL_E(status, host, start, id_out, result_out, NULL)
/* Same, but the error object is kept in `*(errp)` (NULL on success). */
#define EXPECT_CALL_E(status, host, start, id_out, result_out, errp)                               \
    do {                                                                                          \
        uint64_t t_call = 0;                                                                      \
        acph_error *t_err = NULL;                                                                 \
        acph_status t_st = (start);                                                               \
        if (t_st == ACPH_STATUS_OK)                                                               \
            t_st = acph_call_wait((host), t_call, T_WAIT, (id_out), (result_out), &t_err);        \
        expect_status(__FILE__, __LINE__, #start, t_st, t_err, (status), (errp));                 \
    } while (0)
/* The function form, for a status kept rather than checked: `started` is what the asynchronous
 * call returned (it wrote `*call` on success); then acph_call_wait for up to `timeout_ms`. */
acph_status call_sync(acph_host *h, acph_status started, const uint64_t *call, uint32_t timeout_ms,
                      uint64_t *id_out, char **result_out, acph_error **err);

/* Paths given by scripts/test-c through the environment. */
const char *mock_agent_path(void);
const char *fixtures_dir(void);
/* A fresh scratch directory for this test (absolute; created). */
const char *scratch_dir(void);

/* `{"command": <mock>, "args": ["--scenario", scenario]}`; free(). `scenario` NULL: default. */
char *mock_spec(const char *scenario);
/* `{"cwd": cwd}`; free(). */
char *session_options(const char *cwd);

acph_host *make_host(const char *config_json);

/* ----- events ----- */
typedef struct {
    acph_event **items;
    size_t len, cap;
} event_list;

void events_push(event_list *l, acph_event *ev);
void events_free(event_list *l);
/* The next event (fails the test after `timeout_ms`, or when the stream ended). */
acph_event *next_event(acph_host *h, uint32_t timeout_ms);
/* Pull events into `l` until one of kind `kind_name` arrives (inclusive); returns it. */
const acph_event *wait_kind(acph_host *h, event_list *l, const char *kind_name, uint32_t timeout_ms);
/* Pull until the `call_completed` of `call`; returns it, and releases the call (acph_call_free,
 * which must succeed: an event loop's way of letting go of an id it has the outcome of). */
const acph_event *wait_call(acph_host *h, event_list *l, uint64_t call, uint32_t timeout_ms);
/* Parse an event's JSON (free with json_free). */
json *event_json(const acph_event *ev);
/* For a call_completed event: true if ok; else `kind_out` (may be NULL) receives the error kind
 * (malloc'd). `result_out` (may be NULL) receives a clone of `result`. */
bool call_result(const acph_event *ev, char **kind_out, json **result_out);
/* A prompt's result has exactly the core's fields (`TurnResult::to_json`): turn, stopReason,
 * usage, raw, text, thought, textTruncated, and nothing else. */
void check_turn_result(const json *result);
/* Count events of a kind (and, when `update` is not NULL, of that sessionUpdate). */
size_t count_kind(const event_list *l, const char *kind_name, const char *update);
/* The first event of a kind, or NULL. */
const acph_event *find_kind(const event_list *l, const char *kind_name);
bool event_is(const acph_event *ev, const char *kind_name);
/* Events must have strictly increasing seq. */
void check_seq_increasing(const event_list *l);

/* ----- processes ----- */
long agent_pid(const event_list *l);
bool pid_alive(long pid);
bool wait_gone(long pid, int timeout_ms);
uint64_t now_ms(void);

#endif
