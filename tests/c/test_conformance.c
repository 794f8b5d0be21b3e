/* Cross-face conformance through the C ABI: every case of fixtures/scenarios/conformance/cases.json
 * runs against the mock agent with a fresh host, and the normalised event trace must equal
 * expected/<case>.json, element by element (fixtures/scenarios/conformance/README.md). The C
 * runner also drops `call_completed`, which only this face emits. Ops run through the
 * asynchronous calls, each awaited through its call_completed event.
 * Usage: test_conformance [CASE...] (default: every case). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef _WIN32
#include <process.h>
#else
#include <unistd.h>
#endif
#include "support/portable.h"

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

typedef struct {
    acph_host *h;
    bool auto_allow;
    const json *elicitation; /* the case's answers by mode, or NULL */
    const json *ext;         /* the case's extension answers by method, or NULL */
    bool terminal_auth;      /* the case logs in through the service handler */
    uint64_t agent, session;
    event_list evs;  /* every event, owned */
    json *trace;     /* normalised events */
    bool exited;     /* agent_exited seen */
    size_t turn_ended_seen;
    const char *name;
} runner;

static json *normalise(const acph_event *ev) {
    if (ev->kind == ACPH_EVENT_AGENT_STDERR || ev->kind == ACPH_EVENT_TERMINAL_EXITED ||
        ev->kind == ACPH_EVENT_CALL_COMPLETED)
        return NULL;
    json *e = event_json(ev);
    json *out = json_new_object();
    json_set(out, "kind", json_clone(json_get(e, "kind")));
    const json *session = json_get(e, "session");
    json_set(out, "session", session ? json_clone(session) : json_new_null());
    const json *turn = json_get(e, "turn");
    json_set(out, "turn", turn ? json_clone(turn) : json_new_null());
    json_set(out, "replay", json_clone(json_get(e, "replay")));
    json *data = json_clone(json_get(e, "data"));
    if (ev->kind == ACPH_EVENT_AGENT_READY) json_remove(data, "pid");
    if (ev->kind == ACPH_EVENT_AGENT_EXITED) json_remove(data, "stderrTail");
    json_set(out, "data", data);
    json_free(e);
    return out;
}

static bool matches(const acph_event *ev, const char *spec) {
    const char *colon = strchr(spec, ':');
    if (!colon) return strcmp(ev->kind_name, spec) == 0;
    size_t n = (size_t)(colon - spec);
    if (strlen(ev->kind_name) != n || strncmp(ev->kind_name, spec, n) != 0) return false;
    json *e = event_json(ev);
    const char *u = json_str(json_get(json_get(e, "data"), "sessionUpdate"));
    bool m = u && strcmp(u, colon + 1) == 0;
    json_free(e);
    return m;
}

/* An event pulled already, from index `from` on: `spec` matches, or `call` completed. */
static const acph_event *pulled(const runner *r, size_t from, const char *spec, uint64_t call) {
    for (size_t i = from; i < r->evs.len; i++) {
        const acph_event *ev = r->evs.items[i];
        if (spec && matches(ev, spec)) return ev;
        if (call && ev->kind == ACPH_EVENT_CALL_COMPLETED && ev->call == call) return ev;
    }
    return NULL;
}

/* Pull events until `spec` matches or the call completes (whichever is asked). A call that
   completed while another one was awaited (a steer's during its prompt) is found among the
   events pulled already. */
static const acph_event *pump(runner *r, const char *spec, uint64_t call) {
    if (call) {
        const acph_event *done = pulled(r, 0, NULL, call);
        if (done) return done;
    }
    uint64_t deadline = now_ms() + T_WAIT;
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline) {
            fprintf(stderr, "%s: timed out waiting for %s / call %llu\n", r->name, spec ? spec : "-",
                    (unsigned long long)call);
            exit(1);
        }
        acph_event *ev = NULL;
        acph_status st = acph_host_next_event(r->h, (uint32_t)(deadline - now), &ev);
        if (st == ACPH_STATUS_EMPTY) continue;
        CHECK(st == ACPH_STATUS_OK);
        events_push(&r->evs, ev);
        json *n = normalise(ev);
        if (n) json_push(r->trace, n);
        /* Only the current agent's exit ends the case (a terminal login relaunches the agent). */
        if (ev->kind == ACPH_EVENT_AGENT_EXITED && (r->agent == 0 || ev->agent == r->agent)) r->exited = true;
        if (ev->kind == ACPH_EVENT_TURN_ENDED) r->turn_ended_seen++;
        if (ev->kind == ACPH_EVENT_PERMISSION_REQUESTED && r->auto_allow) {
            json *j = event_json(ev);
            const json *options = json_get(json_get(j, "data"), "options");
            for (size_t i = 0; options && i < options->length; i++) {
                const json *o = json_at(options, i);
                if (strcmp(json_str(json_get(o, "kind")), "allow_once") == 0) {
                    const char *id = json_str(json_get(o, "optionId"));
                    EXPECT(ACPH_STATUS_OK, acph_permission_respond(r->h, ev->request, id, strlen(id), ERR));
                    break;
                }
            }
            json_free(j);
        }
        if (ev->kind == ACPH_EVENT_ELICITATION_REQUESTED && r->elicitation) {
            /* The case's answer for this mode, through the manual API. */
            json *j = event_json(ev);
            const char *mode = json_str(json_get(json_get(j, "data"), "mode"));
            const json *answer = mode ? json_get(r->elicitation, mode) : NULL;
            CHECK_MSG(answer != NULL, "an elicitation in a mode the case did not advertise");
            char *text = json_dump(answer);
            EXPECT(ACPH_STATUS_OK, acph_elicitation_respond(r->h, ev->request, text, strlen(text), ERR));
            free(text);
            json_free(j);
        }
        if (spec && matches(ev, spec)) return ev;
        if (call && ev->kind == ACPH_EVENT_CALL_COMPLETED && ev->call == call) return ev;
    }
}

/* Await a call; check it against `expect` ("error:<kind>" or NULL = success). */
static json *await_call(runner *r, uint64_t call, const char *what, const char *expect) {
    const acph_event *done = pump(r, NULL, call);
    char *kind = NULL;
    json *result = NULL;
    bool ok = call_result(done, &kind, &result);
    const char *want = expect && strncmp(expect, "error:", 6) == 0 ? expect + 6 : NULL;
    if (want && (ok || strcmp(kind, want) != 0)) {
        fprintf(stderr, "%s: %s: expected error %s, got %s\n", r->name, what, want, ok ? "success" : kind);
        exit(1);
    }
    if (!want && !ok) {
        fprintf(stderr, "%s: %s failed: %s\n", r->name, what, kind);
        exit(1);
    }
    free(kind);
    return result;
}

/* A call whose value is checked: `expect` is "error:<kind>", the value `pick` takes from the
   result (a string), or NULL (success). */
static void await_value(runner *r, uint64_t call, const char *what, const char *expect,
                        const char *(*pick)(const json *)) {
    bool want_error = expect && strncmp(expect, "error:", 6) == 0;
    json *result = await_call(r, call, what, want_error ? expect : NULL);
    if (expect && !want_error) {
        const char *got = pick(result);
        if (!got || strcmp(got, expect) != 0) {
            fprintf(stderr, "%s: %s: got %s, want %s\n", r->name, what, got ? got : "(none)", expect);
            exit(1);
        }
    }
    json_free(result);
}

static const char *pick_outcome(const json *v) { return json_str(json_get(v, "outcome")); }
static const char *pick_status(const json *v) { return json_str(json_get(v, "status")); }
static const char *pick_title(const json *v) { return json_str(json_get(v, "title")); }
static const char *pick_mode(const json *v) { return json_str(json_get(json_get(v, "modes"), "currentModeId")); }

/* Steer the current session with one text block. */
static uint64_t steer(runner *r, const char *text) {
    json *blocks = json_new_array();
    json *block = json_new_object();
    json_set(block, "type", json_new_string("text"));
    json_set(block, "text", json_new_string(text));
    json_push(blocks, block);
    char *content = json_dump(blocks);
    json_free(blocks);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_session_steer(r->h, r->session, content, strlen(content), &call, ERR));
    free(content);
    return call;
}

/* The op's `sessionId`, else the current session's (owned). */
static char *op_session_id(runner *r, const json *op) {
    const char *sid = json_str(json_get(op, "sessionId"));
    if (sid) return strdup(sid);
    char *id = NULL;
    EXPECT(ACPH_STATUS_OK, acph_session_id(r->h, r->session, &id, NULL, ERR));
    char *copy = strdup(id);
    acph_string_free(id);
    return copy;
}

/* The extension handler: answers from the case's table (called on a library thread). */
static void on_ext(void *user_data, uint64_t id, const char *method, const char *params, size_t len) {
    runner *r = user_data;
    if (strcmp(method, "acph/terminal_auth") == 0 && r->terminal_auth) {
        /* The "user" logs in: the login leaves the credentials file the mock agent looks for. */
        json *p = json_parse(params, len);
        const char *path = json_str(json_get(json_get(p, "env"), "ACP_MOCK_CREDENTIALS"));
        CHECK(path != NULL);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        fputs("logged-in\n", f);
        fclose(f);
        json_free(p);
        EXPECT(ACPH_STATUS_OK, acph_service_respond(r->h, id, "{\"exitCode\":0}", 14, ERR));
        return;
    }
    if (!r->ext) {
        EXPECT(ACPH_STATUS_OK, acph_service_fail(r->h, id, -32601, "method not found", 16, ERR));
        return;
    }
    const json *entry = json_get(r->ext, method);
    const json *result = entry ? json_get(entry, "result") : NULL;
    if (result) {
        char *text = json_dump(result);
        EXPECT(ACPH_STATUS_OK, acph_service_respond(r->h, id, text, strlen(text), ERR));
        free(text);
        return;
    }
    const json *error = entry ? json_get(entry, "error") : NULL;
    int64_t code = -32601;
    const char *message = "method not found";
    if (error) {
        const json *cv = json_get(error, "code");
        if (cv && cv->type == JSON_NUMBER) code = (int64_t)cv->number;
        if (json_str(json_get(error, "message"))) message = json_str(json_get(error, "message"));
    }
    EXPECT(ACPH_STATUS_OK, acph_service_fail(r->h, id, code, message, strlen(message), ERR));
}

/* What a case's agent is: the mock agent (`record`: recorded into that file), or the recording
   `replay` played back inside the host (its report written to `report`). */
typedef struct {
    const char *record;
    const char *replay;
    const char *report;
} source;

static json *run_case(const json *c, const char *cwd, source src) {
    runner r = {0};
    r.name = json_str(json_get(c, "name"));
    r.trace = json_new_array();
    const char *permission = json_str(json_get(c, "permission"));
    if (!permission) permission = "deny";
    r.auto_allow = strcmp(permission, "allow") == 0;
    json *config = json_new_object();
    json_set(config, "permission", json_new_string(strcmp(permission, "deny") == 0 ? "deny" : "manual"));
    uint64_t max_line = 0;
    if (json_u64(json_get(c, "maxLineBytes"), &max_line)) json_set(config, "maxLineBytes", json_new_u64(max_line));
    r.ext = json_get(c, "ext");
    if (r.ext) json_set(config, "ext", json_new_string("embedder"));
    const json *login = json_get(c, "terminalAuth");
    r.terminal_auth = login && login->type == JSON_BOOL && login->boolean;
    if (r.terminal_auth) json_set(config, "terminalAuth", json_new_string("embedder"));
    r.elicitation = json_get(c, "elicitation");
    if (r.elicitation) {
        json *modes = json_new_array();
        if (json_get(r.elicitation, "form")) json_push(modes, json_new_string("form"));
        if (json_get(r.elicitation, "url")) json_push(modes, json_new_string("url"));
        json_set(config, "elicitation", json_new_string("manual"));
        json_set(config, "elicitationModes", modes);
    }
    uint64_t grace = 0;
    if (json_u64(json_get(c, "cancelGraceMs"), &grace)) json_set(config, "cancelGraceMs", json_new_u64(grace));
    const json *unstable = json_get(c, "unstable");
    if (unstable) {
        json *names = json_new_array();
        for (size_t i = 0; i < unstable->length; i++) json_push(names, json_new_string(json_str(json_at(unstable, i))));
        json_set(config, "unstable", names);
    }
    if (src.record) {
        json *rec = json_new_object();
        json_set(rec, "file", json_new_string(src.record));
        json_set(config, "record", rec);
    }
    char *config_text = json_dump(config);
    json_free(config);
    r.h = make_host(config_text);
    free(config_text);
    if (r.ext || r.terminal_auth) EXPECT(ACPH_STATUS_OK, acph_host_set_service_handler(r.h, on_ext, &r, NULL, ERR));

    /* The mock agent's credentials file: a fresh path per case (a terminal login creates it). */
    char creds[1024];
    snprintf(creds, sizeof creds, "%s/credentials-%s", scratch_dir(), r.name);
    remove(creds);
    json *spec_json;
    if (src.replay) {
        json *replay = json_new_object();
        json_set(replay, "file", json_new_string(src.replay));
        json_set(replay, "pace", json_new_string("fast"));
        json_set(replay, "report", json_new_string(src.report));
        spec_json = json_new_object();
        json_set(spec_json, "replay", replay);
    } else {
        char *base = mock_spec(json_str(json_get(c, "scenario")));
        spec_json = json_parse(base, strlen(base));
        free(base);
        json *env = json_new_object();
        json_set(env, "ACP_MOCK_CREDENTIALS", json_new_string(creds));
        json_set(spec_json, "env", env);
    }
    char *spec = json_dump(spec_json);
    json_free(spec_json);
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_host_spawn(r.h, spec, strlen(spec), &call, ERR));
    free(spec);
    const char *spawn_expect = json_str(json_get(c, "spawnExpect"));
    json *result = await_call(&r, call, "spawn", spawn_expect);
    if (spawn_expect) {
        if (!r.exited) pump(&r, "agent_exited", 0);
        goto done;
    }
    CHECK(json_u64(json_get(result, "agent"), &r.agent));
    json_free(result);
    char *opts = session_options(cwd);
    const json *ops = json_get(c, "ops");
    for (size_t i = 0; i < ops->length; i++) {
        const json *op = json_at(ops, i);
        const char *what = json_str(json_get(op, "op"));
        const char *expect = json_str(json_get(op, "expect"));
        if (strcmp(what, "new_session") == 0 || strcmp(what, "load_session") == 0 ||
            strcmp(what, "resume_session") == 0 || strcmp(what, "fork_session") == 0) {
            const char *sid = json_str(json_get(op, "sessionId"));
            if (what[0] == 'n')
                EXPECT(ACPH_STATUS_OK, acph_agent_new_session(r.h, r.agent, opts, strlen(opts), &call, ERR));
            else if (what[0] == 'l')
                EXPECT(ACPH_STATUS_OK, acph_agent_load_session(r.h, r.agent, sid, strlen(sid), opts, strlen(opts), &call, ERR));
            else if (what[0] == 'f')
                EXPECT(ACPH_STATUS_OK, acph_agent_fork_session(r.h, r.agent, sid, strlen(sid), opts, strlen(opts), &call, ERR));
            else
                EXPECT(ACPH_STATUS_OK, acph_agent_resume_session(r.h, r.agent, sid, strlen(sid), opts, strlen(opts), &call, ERR));
            result = await_call(&r, call, what, expect);
            if (result) CHECK(json_u64(json_get(result, "session"), &r.session));
            json_free(result);
        } else if (strcmp(what, "prompt") == 0) {
            size_t ended_before = r.turn_ended_seen;
            const json *content = json_get(op, "content");
            if (content) {
                char *blocks = json_dump(content);
                EXPECT(ACPH_STATUS_OK, acph_session_prompt(r.h, r.session, blocks, strlen(blocks), &call, ERR));
                free(blocks);
            } else {
                const char *text = json_str(json_get(op, "text"));
                EXPECT(ACPH_STATUS_OK, acph_session_prompt_text(r.h, r.session, text, strlen(text), &call, ERR));
            }
            const char *steer_on = json_str(json_get(op, "steerOn"));
            /* Awaiting the steer pulls events: a cancelOn/abortOn among them counts. */
            size_t mark = r.evs.len;
            if (steer_on) {
                pump(&r, steer_on, 0);
                mark = r.evs.len;
                uint64_t steered = steer(&r, json_str(json_get(op, "steer")));
                await_value(&r, steered, "steer", json_str(json_get(op, "steerExpect")), pick_outcome);
            }
            const char *cancel_on = json_str(json_get(op, "cancelOn"));
            if (cancel_on) {
                if (!pulled(&r, mark, cancel_on, 0)) pump(&r, cancel_on, 0);
                EXPECT(ACPH_STATUS_OK, acph_session_cancel(r.h, r.session, ERR));
            }
            /* v2: cancel the tool call / terminal the matching update names; the call's result
             * is the agent's acceptance (the confirming update follows in the trace). */
            static const char *const cancel_keys[2][2] = {{"cancelToolCallOn", "toolCallId"},
                                                          {"cancelTerminalOn", "terminalId"}};
            for (int k = 0; k < 2; k++) {
                const char *on = json_str(json_get(op, cancel_keys[k][0]));
                if (!on) continue;
                json *ej = event_json(pump(&r, on, 0));
                const char *id = json_str(json_get(json_get(ej, "data"), cancel_keys[k][1]));
                CHECK(id != NULL);
                uint64_t cancel_call = 0;
                if (k == 0)
                    EXPECT(ACPH_STATUS_OK, acph_session_cancel_tool_call(r.h, r.session, id, strlen(id), &cancel_call, ERR));
                else
                    EXPECT(ACPH_STATUS_OK, acph_session_cancel_terminal(r.h, r.session, id, strlen(id), &cancel_call, ERR));
                json_free(ej);
                /* Waited for directly, not by pumping: the pump would take (and drop) the prompt's
                 * call_completed when the turn ends before this call's completion is queued. */
                char *text = NULL;
                EXPECT(ACPH_STATUS_OK, acph_call_wait(r.h, cancel_call, T_WAIT, NULL, &text, ERR));
                CHECK_MSG(text && strcmp(text, "{}") == 0, text);
                acph_string_free(text);
            }
            const char *abort_on = json_str(json_get(op, "abortOn"));
            if (abort_on) {
                if (!pulled(&r, mark, abort_on, 0)) pump(&r, abort_on, 0);
                EXPECT(ACPH_STATUS_OK, acph_call_cancel(r.h, call, ERR));
            }
            bool want_error = expect && strncmp(expect, "error:", 6) == 0;
            result = await_call(&r, call, "prompt", want_error ? expect : NULL);
            if (!want_error) {
                const char *stop = json_str(json_get(result, "stopReason"));
                if (strcmp(stop, expect) != 0) {
                    fprintf(stderr, "%s: prompt: stop reason %s, want %s\n", r.name, stop, expect);
                    exit(1);
                }
            }
            json_free(result);
            /* Let the turn's events land before the next op (a prompt refused locally,
             * `unsupported`, has no turn). */
            bool refused = expect && strcmp(expect, "error:unsupported") == 0;
            /* `turns`: a queued steer is a turn of its own after the prompt's. */
            uint64_t turns = 1;
            json_u64(json_get(op, "turns"), &turns);
            while (!refused && r.turn_ended_seen < ended_before + turns) pump(&r, "turn_ended", 0);
        } else if (strcmp(what, "steer") == 0) {
            size_t ended_before = r.turn_ended_seen;
            call = steer(&r, json_str(json_get(op, "text")));
            await_value(&r, call, what, expect, pick_outcome);
            if (expect && strcmp(expect, "prompted") == 0 && r.turn_ended_seen == ended_before) pump(&r, "turn_ended", 0);
        } else if (strcmp(what, "session_status") == 0 || strcmp(what, "set_title") == 0 ||
                   strcmp(what, "archive_session") == 0 || strcmp(what, "unarchive_session") == 0) {
            char *sid = op_session_id(&r, op);
            const char *(*pick)(const json *) = NULL;
            if (strcmp(what, "session_status") == 0) {
                EXPECT(ACPH_STATUS_OK, acph_agent_session_status(r.h, r.agent, sid, strlen(sid), &call, ERR));
                pick = pick_status;
            } else if (strcmp(what, "set_title") == 0) {
                const char *title = json_str(json_get(op, "title"));
                EXPECT(ACPH_STATUS_OK, acph_agent_set_session_title(r.h, r.agent, sid, strlen(sid), title, strlen(title), &call, ERR));
                pick = pick_title;
            } else if (strcmp(what, "archive_session") == 0) {
                EXPECT(ACPH_STATUS_OK, acph_agent_archive_session(r.h, r.agent, sid, strlen(sid), &call, ERR));
            } else {
                EXPECT(ACPH_STATUS_OK, acph_agent_unarchive_session(r.h, r.agent, sid, strlen(sid), &call, ERR));
            }
            free(sid);
            if (pick) {
                await_value(&r, call, what, expect, pick);
            } else {
                json_free(await_call(&r, call, what, expect));
            }
        } else if (strcmp(what, "session_options") == 0) {
            const char *sid = json_str(json_get(op, "sessionId"));
            EXPECT(ACPH_STATUS_OK, acph_agent_session_options(r.h, r.agent, opts, strlen(opts), sid, sid ? strlen(sid) : 0, &call, ERR));
            await_value(&r, call, what, expect, pick_mode);
        } else if (strcmp(what, "set_mode") == 0) {
            const char *mode = json_str(json_get(op, "modeId"));
            EXPECT(ACPH_STATUS_OK, acph_session_set_mode(r.h, r.session, mode, strlen(mode), &call, ERR));
            json_free(await_call(&r, call, what, expect));
        } else if (strcmp(what, "set_config_option") == 0) {
            const char *id = json_str(json_get(op, "configId"));
            char *value = json_dump(json_get(op, "value"));
            EXPECT(ACPH_STATUS_OK, acph_session_set_config_option(r.h, r.session, id, strlen(id), value, strlen(value), &call, ERR));
            free(value);
            json_free(await_call(&r, call, what, expect));
        } else if (strcmp(what, "set_model") == 0) {
            const char *model = json_str(json_get(op, "modelId"));
            EXPECT(ACPH_STATUS_OK, acph_session_set_model(r.h, r.session, model, strlen(model), &call, ERR));
            json_free(await_call(&r, call, what, expect));
        } else if (strcmp(what, "logout") == 0) {
            EXPECT(ACPH_STATUS_OK, acph_agent_logout(r.h, r.agent, &call, ERR));
            json_free(await_call(&r, call, what, expect));
        } else if (strcmp(what, "authenticate") == 0) {
            const char *m = json_str(json_get(op, "methodId"));
            EXPECT(ACPH_STATUS_OK, acph_agent_authenticate(r.h, r.agent, m, strlen(m), &call, ERR));
            json_free(await_call(&r, call, what, expect));
        } else if (strcmp(what, "list_sessions") == 0) {
            EXPECT(ACPH_STATUS_OK, acph_agent_list_sessions(r.h, r.agent, NULL, 0, &call, ERR));
            json_free(await_call(&r, call, what, expect));
        } else if (strcmp(what, "close_session") == 0) {
            EXPECT(ACPH_STATUS_OK, acph_session_close(r.h, r.session, &call, ERR));
            json_free(await_call(&r, call, what, expect));
        } else if (strcmp(what, "delete_session") == 0) {
            const char *sid = json_str(json_get(op, "sessionId"));
            EXPECT(ACPH_STATUS_OK, acph_agent_delete_session(r.h, r.agent, sid, strlen(sid), &call, ERR));
            json_free(await_call(&r, call, what, expect));
        } else if (strcmp(what, "terminal_auth") == 0) {
            const char *m = json_str(json_get(op, "methodId"));
            EXPECT(ACPH_STATUS_OK, acph_agent_terminal_auth(r.h, r.agent, m, strlen(m), &call, ERR));
            result = await_call(&r, call, what, expect);
            if (result) {
                /* The old agent's agent_exited came before the call completed; go on with the new one. */
                CHECK(json_u64(json_get(result, "agent"), &r.agent));
                r.exited = false;
            }
            json_free(result);
        } else if (strcmp(what, "shutdown") == 0) {
            EXPECT(ACPH_STATUS_OK, acph_agent_shutdown(r.h, r.agent, &call, ERR));
            json_free(await_call(&r, call, what, NULL));
        } else {
            fprintf(stderr, "%s: unknown op %s\n", r.name, what);
            exit(1);
        }
    }
    free(opts);
    if (!r.exited) pump(&r, "agent_exited", 0);
done:
    check_seq_increasing(&r.evs);
    events_free(&r.evs);
    acph_host_free(r.h);
    return r.trace;
}

static void write_files(const json *doc, const char *cwd) {
    if (mkdir(cwd, 0755) != 0 && errno != EEXIST) test_fail(__FILE__, __LINE__, "mkdir", cwd);
    const json *files = json_get(doc, "files");
    for (size_t i = 0; files && i < files->length; i++) {
        char path[1024], tmp[1100];
        snprintf(path, sizeof path, "%s/%s", cwd, files->keys[i]);
        const json *content = files->items[i];
        /* Other faces' runs share this directory (side by side in scripts/test): a file already
           right is left alone, another one replaced at once (a rename), never seen empty. */
        size_t have_len = 0;
        char *have = read_file(path, &have_len);
        int same = have && have_len == content->length && memcmp(have, content->string, have_len) == 0;
        free(have);
        if (same) continue;
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        CHECK(f != NULL);
        CHECK(fwrite(content->string, 1, content->length, f) == content->length);
        fclose(f);
#ifdef _WIN32
        remove(path); /* Windows' rename does not replace; nothing runs beside this there */
#endif
        CHECK(rename(tmp, path) == 0);
    }
}

/* A trace as a replay inside the host gives it: no process, so no exit code, signal or stderr
   tail, nor the message of an `agent_exited` error that names them. */
static void without_process(json *v) {
    if (!v) return;
    if (v->type == JSON_OBJECT) {
        json_remove(v, "exitCode");
        json_remove(v, "signal");
        json_remove(v, "stderrTail");
        const char *kind = json_str(json_get(v, "kind"));
        if (kind && strcmp(kind, "agent_exited") == 0 && json_str(json_get(v, "message"))) json_remove(v, "message");
    }
    if (v->type == JSON_OBJECT || v->type == JSON_ARRAY)
        for (size_t i = 0; i < v->length; i++) without_process(v->items[i]);
}

static const json *case_named(const json *doc, const char *name) {
    const json *cases = json_get(doc, "cases");
    for (size_t i = 0; i < cases->length; i++)
        if (strcmp(json_str(json_get(json_at(cases, i), "name")), name) == 0) return json_at(cases, i);
    return NULL;
}

static json *read_json(const char *path) {
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) return NULL;
    json *v = json_parse(text, len);
    free(text);
    return v;
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Replaying (docs/RECORDING.md; fixtures/recordings/faces/cases.json): with ACP_RECORDINGS_OUT,
   this face's recordings of the listed cases are written to DIR/c/; then every face's recording
   replays through this face to the expected trace with no divergence, and a changed permission
   answer is reported as a divergence. Returns the failures. */
static size_t replays(const json *doc, const char *cwd) {
    char path[1400], dir[1400], file[1600], report[1600], faces_dir[1024];
    /* fixtures/recordings/faces, spelt without `..` (the core refuses a path with one). */
    snprintf(faces_dir, sizeof faces_dir, "%s", fixtures_dir());
    char *slash = strrchr(faces_dir, '/');
    CHECK(slash != NULL);
    snprintf(slash, sizeof faces_dir - (size_t)(slash - faces_dir), "/recordings/faces");
    snprintf(path, sizeof path, "%s/cases.json", faces_dir);
    json *faces_doc = read_json(path);
    CHECK_MSG(faces_doc != NULL, path);
    const json *names = json_get(faces_doc, "cases");
    size_t failed = 0;
    const char *out = getenv("ACP_RECORDINGS_OUT");
    if (out && *out) {
        snprintf(path, sizeof path, "%s/c", out);
        if (mkdir(out, 0755) != 0 && errno != EEXIST) test_fail(__FILE__, __LINE__, "mkdir", out);
        if (mkdir(path, 0755) != 0 && errno != EEXIST) test_fail(__FILE__, __LINE__, "mkdir", path);
        for (size_t i = 0; i < names->length; i++) {
            const char *name = json_str(json_at(names, i));
            snprintf(file, sizeof file, "%s/%s.acprec.jsonl", path, name);
            remove(file);
            write_files(doc, cwd);
            json_free(run_case(case_named(doc, name), cwd, (source){.record = file}));
            printf("conformance: recorded %s\n", file);
        }
    }
    static const char *faces[] = {"c", "kotlin", "node", "python", "rust"};
    for (size_t f = 0; f < sizeof faces / sizeof *faces; f++) {
        snprintf(dir, sizeof dir, "%s/%s", faces_dir, faces[f]);
        if (!is_dir(dir)) {
            printf("replay %s: skipped: no recordings of this face yet (scripts/gen-recordings)\n", faces[f]);
            continue;
        }
        for (size_t i = 0; i < names->length; i++) {
            const char *name = json_str(json_at(names, i));
            snprintf(file, sizeof file, "%s/%s.acprec.jsonl", dir, name);
            if (!is_file(file)) {
                printf("replay %s/%s: no recording %s\n", faces[f], name, file);
                failed++;
                continue;
            }
            snprintf(report, sizeof report, "%s/replay-%s-%s.json", scratch_dir(), faces[f], name);
            remove(report);
            write_files(doc, cwd);
            json *got = run_case(case_named(doc, name), cwd, (source){.replay = file, .report = report});
            snprintf(path, sizeof path, "%s/conformance/expected/%s.json", fixtures_dir(), name);
            json *want_doc = read_json(path);
            CHECK_MSG(want_doc != NULL, path);
            json *want = json_clone(json_get(want_doc, "events"));
            without_process(want);
            without_process(got);
            json *r = read_json(report);
            uint64_t divergences = 1;
            const json *complete = r ? json_get(r, "complete") : NULL;
            if (!r || !json_u64(json_get(r, "divergenceCount"), &divergences) || divergences != 0 || !complete ||
                complete->type != JSON_BOOL || !complete->boolean) {
                char *t = r ? json_dump(r) : NULL;
                printf("replay %s/%s: the replay diverged: %s\n", faces[f], name, t ? t : "(no report)");
                free(t);
                failed++;
            } else if (!json_equal(want, got)) {
                size_t n = want->length < got->length ? want->length : got->length, at = n;
                for (size_t k = 0; k < n; k++)
                    if (!json_equal(json_at(want, k), json_at(got, k))) {
                        at = k;
                        break;
                    }
                char *w = json_dump(json_at(want, at)), *g = json_dump(json_at(got, at));
                printf("replay %s/%s: trace differs at event %zu\n  want: %s\n  got:  %s\n", faces[f], name, at, w, g);
                free(w);
                free(g);
                failed++;
            } else {
                printf("replay %s/%s: ok (%zu events, no divergence)\n", faces[f], name, got->length);
            }
            json_free(r);
            json_free(want);
            json_free(want_doc);
            json_free(got);
        }
        /* The changed case: another permission answer than recorded is a divergence. */
        const json *changed = json_get(faces_doc, "changed");
        const char *name = json_str(json_get(changed, "case"));
        snprintf(file, sizeof file, "%s/%s.acprec.jsonl", dir, name);
        snprintf(report, sizeof report, "%s/replay-changed-%s.json", scratch_dir(), faces[f]);
        remove(report);
        json *c = json_clone(case_named(doc, name));
        json_set(c, "permission", json_new_string(json_str(json_get(changed, "permission"))));
        write_files(doc, cwd);
        json_free(run_case(c, cwd, (source){.replay = file, .report = report}));
        json_free(c);
        json *r = read_json(report);
        const json *ds = r ? json_get(r, "divergences") : NULL;
        bool found = false;
        for (size_t k = 0; ds && k < ds->length; k++) {
            const char *kind = json_str(json_get(json_at(ds, k), "kind"));
            const char *method = json_str(json_get(json_at(ds, k), "method"));
            found = found || (kind && method && strcmp(kind, "answer_differs") == 0 &&
                              strcmp(method, "session/request_permission") == 0);
        }
        printf("replay %s/%s with another permission answer: %s\n", faces[f], name,
               found ? "ok (answer_differs of session/request_permission)" : "NOT reported");
        if (!found) failed++;
        json_free(r);
    }
    json_free(faces_doc);
    return failed;
}

int main(int argc, char **argv) {
    char path[1024];
    snprintf(path, sizeof path, "%s/conformance/cases.json", fixtures_dir());
    size_t len = 0;
    char *text = read_file(path, &len);
    CHECK_MSG(text != NULL, path);
    json *doc = json_parse(text, len);
    free(text);
    CHECK(doc != NULL);
    const char *cwd = json_str(json_get(doc, "cwd"));
    const json *cases = json_get(doc, "cases");
    size_t ran = 0, failed = 0;
    for (size_t i = 0; i < cases->length; i++) {
        const json *c = json_at(cases, i);
        const char *name = json_str(json_get(c, "name"));
        bool wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            if (strcmp(argv[a], name) == 0) wanted = true;
        if (!wanted) continue;
        write_files(doc, cwd);
        json *got = run_case(c, cwd, (source){0});
        snprintf(path, sizeof path, "%s/conformance/expected/%s.json", fixtures_dir(), name);
        text = read_file(path, &len);
        CHECK_MSG(text != NULL, path);
        json *want_doc = json_parse(text, len);
        free(text);
        CHECK(want_doc != NULL);
        const json *want = json_get(want_doc, "events");
        size_t n = want->length < got->length ? want->length : got->length, at = n;
        for (size_t k = 0; k < n; k++) {
            if (!json_equal(json_at(want, k), json_at(got, k))) {
                at = k;
                break;
            }
        }
        ran++;
        if (at == n && want->length == got->length) {
            printf("conformance %s: ok (%zu events)\n", name, got->length);
        } else {
            failed++;
            char *w = json_dump(json_at(want, at)), *g = json_dump(json_at(got, at));
            printf("conformance %s: trace differs at event %zu\n  want: %s\n  got:  %s\n", name, at, w, g);
            free(w);
            free(g);
        }
        json_free(want_doc);
        json_free(got);
    }
    if (argc < 2) failed += replays(doc, cwd);
    json_free(doc);
    printf("test_conformance: %zu cases, %zu failed\n", ran, failed);
    CHECK(ran > 0);
    return failed ? 1 : 0;
}
