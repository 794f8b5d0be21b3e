/*
 * acph_example: run one prompt turn against an ACP agent through libacp_host, printing every
 * event as one JSON line (docs/EVENTS.md). A single-threaded event loop: poll() on the host's
 * event fd, then drain the queue with acph_host_try_next_event. Every step is an asynchronous
 * call whose outcome arrives as a `call_completed` event; the call id is then given back with
 * acph_call_free (a thread of its own could acph_call_wait for it instead).
 *
 *   cc -std=c11 acph_example.c $(pkg-config --cflags --libs acp_host) -o acph_example
 *   ./acph_example [--permission allow|deny] [--cwd DIR] [--prompt TEXT] -- AGENT_COMMAND [ARGS...]
 *
 * With --permission allow, permission requests are answered with the agent's allow_once option;
 * otherwise they are denied (the request is answered "reject"). Exit status 0 when the turn ended.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acp_host.h"

/* Append `s` to `buf` as a JSON string. */
static void json_string(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf);
    if (n + 1 < cap) buf[n++] = '"';
    for (; *s && n + 8 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { buf[n++] = '\\'; buf[n++] = (char)c; }
        else if (c < 0x20) n += (size_t)snprintf(buf + n, cap - n, "\\u%04x", c);
        else buf[n++] = (char)c;
    }
    if (n + 1 < cap) buf[n++] = '"';
    buf[n] = 0;
}

static int fail(const char *what, acph_status st, acph_error *err) {
    fprintf(stderr, "acph_example: %s: %s%s%s\n", what, acph_status_str(st), err ? ": " : "",
            err ? err->message : "");
    acph_error_free(err);
    return 1;
}

/* A tiny matcher for the one field we need from an event's JSON: `"optionId":"..."` of the first
 * option of kind allow_once. Real programs use a JSON library. */
static int allow_once_option(const char *json, char *out, size_t cap) {
    const char *k = strstr(json, "\"kind\":\"allow_once\"");
    if (!k) return 0;
    /* The option object around it: search backwards for its start. */
    const char *start = k;
    while (start > json && *start != '{') start--;
    const char *id = strstr(start, "\"optionId\":\"");
    if (!id) return 0;
    id += strlen("\"optionId\":\"");
    const char *end = strchr(id, '"');
    if (!end || (size_t)(end - id) >= cap) return 0;
    memcpy(out, id, (size_t)(end - id));
    out[end - id] = 0;
    return 1;
}

int main(int argc, char **argv) {
    const char *permission = "deny", *prompt = "Take some notes";
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return 1;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--permission") == 0 && i + 1 < argc) permission = argv[++i];
        else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc) snprintf(cwd, sizeof cwd, "%s", argv[++i]);
        else if (strcmp(argv[i], "--prompt") == 0 && i + 1 < argc) prompt = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--permission allow|deny] [--cwd DIR] [--prompt TEXT] -- AGENT [ARGS...]\n", argv[0]);
            return 2;
        }
    }
    if (i + 1 >= argc) {
        fprintf(stderr, "acph_example: no agent command after --\n");
        return 2;
    }
    if (acph_abi_version() != ACPH_ABI_VERSION) {
        fprintf(stderr, "acph_example: built for ABI %d, library has %u\n", ACPH_ABI_VERSION, acph_abi_version());
        return 1;
    }

    char spec[8192] = "{\"command\":";
    json_string(spec, sizeof spec, argv[i + 1]);
    strncat(spec, ",\"args\":[", sizeof spec - strlen(spec) - 1);
    for (int a = i + 2; a < argc; a++) {
        if (a > i + 2) strncat(spec, ",", sizeof spec - strlen(spec) - 1);
        json_string(spec, sizeof spec, argv[a]);
    }
    strncat(spec, "]}", sizeof spec - strlen(spec) - 1);
    char options[PATH_MAX + 64] = "{\"cwd\":";
    json_string(options, sizeof options, cwd);
    strncat(options, "}", sizeof options - strlen(options) - 1);

    /* Manual permission answers: this loop decides. */
    const char *config = "{\"permission\":\"manual\"}";
    acph_host *host = NULL;
    acph_error *err = NULL;
    acph_status st = acph_host_new(config, strlen(config), &host, &err);
    if (st != ACPH_STATUS_OK) return fail("acph_host_new", st, err);
    int fd = -1;
    if ((st = acph_host_event_fd(host, &fd, &err)) != ACPH_STATUS_OK) return fail("event fd", st, err);

    uint64_t call = 0, agent = 0, session = 0;
    enum { SPAWNING, OPENING, PROMPTING, STOPPING, DONE } phase = SPAWNING;
    int exit_code = 1;
    if ((st = acph_host_spawn(host, spec, strlen(spec), &call, &err)) != ACPH_STATUS_OK) return fail("spawn", st, err);

    while (phase != DONE) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 60000) == 0) {
            fprintf(stderr, "acph_example: no event for 60 s\n");
            break;
        }
        acph_event *ev = NULL;
        while (phase != DONE && (st = acph_host_try_next_event(host, &ev)) == ACPH_STATUS_OK) {
            printf("%s\n", ev->json);
            if (ev->kind == ACPH_EVENT_SESSION_OPENED && !session) {
                session = ev->session; /* the handle the session calls take */
            } else if (ev->kind == ACPH_EVENT_PERMISSION_REQUESTED) {
                char option[256];
                int allow = strcmp(permission, "allow") == 0 && allow_once_option(ev->json, option, sizeof option);
                st = acph_permission_respond(host, ev->request, allow ? option : NULL, allow ? strlen(option) : 0, &err);
                if (st != ACPH_STATUS_OK) fail("permission", st, err), err = NULL;
            } else if (ev->kind == ACPH_EVENT_CALL_COMPLETED && ev->call == call) {
                /* The outcome is in the event: release the id (the host keeps every call's
                 * outcome for acph_call_wait until it is released). */
                if ((st = acph_call_free(host, call, &err)) != ACPH_STATUS_OK) fail("release", st, err), err = NULL;
                int ok = strstr(ev->json, "\"ok\":true") != NULL;
                if (!ok) {
                    fprintf(stderr, "acph_example: step failed\n");
                    phase = phase == STOPPING ? DONE : STOPPING;
                    if (phase == STOPPING && agent) st = acph_agent_shutdown(host, agent, &call, &err);
                    else phase = DONE;
                } else if (phase == SPAWNING) {
                    agent = ev->agent;
                    st = acph_agent_new_session(host, agent, options, strlen(options), &call, &err);
                    phase = OPENING;
                } else if (phase == OPENING) {
                    /* `session` was taken from the session_opened event (see below). */
                    st = acph_session_prompt_text(host, session, prompt, strlen(prompt), &call, &err);
                    phase = PROMPTING;
                } else if (phase == PROMPTING) {
                    exit_code = 0;
                    st = acph_agent_shutdown(host, agent, &call, &err);
                    phase = STOPPING;
                } else if (phase == STOPPING) {
                    phase = DONE;
                }
                if (st != ACPH_STATUS_OK) {
                    fail("call", st, err);
                    err = NULL;
                    phase = DONE;
                }
            }
            acph_event_free(ev);
            ev = NULL;
        }
    }
    fflush(stdout);
    acph_host_free(host);
    return exit_code;
}
