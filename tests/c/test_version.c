/* Version macros, runtime version and ABI functions, and the status table. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp_host.h"
#include "support/testutil.h"

#define STR2(x) #x
#define STR(x) STR2(x)

int main(void) {
    /* The macros agree with each other... */
    const char *from_parts = STR(ACPH_VERSION_MAJOR) "." STR(ACPH_VERSION_MINOR) "." STR(ACPH_VERSION_PATCH);
    CHECK(strcmp(from_parts, ACPH_VERSION_STRING) == 0);
    CHECK(ACPH_VERSION_NUMBER == ACPH_VERSION_MAJOR * 1000000 + ACPH_VERSION_MINOR * 1000 + ACPH_VERSION_PATCH);
#if ACPH_VERSION_NUMBER < 1000
#error "ACPH_VERSION_NUMBER is usable in #if"
#endif
    /* ... with the library ... */
    CHECK(strcmp(acph_version(), ACPH_VERSION_STRING) == 0);
    CHECK(acph_abi_version() == ACPH_ABI_VERSION);
    CHECK(ACPH_ABI_VERSION >= 1);
    /* ... and with Cargo's version (passed by scripts/test-c from Cargo.toml). */
    const char *cargo = getenv("ACPH_CARGO_VERSION");
    CHECK_MSG(cargo && strcmp(cargo, acph_version()) == 0, cargo);

    /* Every status has its stable name; unknown numbers are "unknown". */
    struct { acph_status s; const char *name; } table[] = {
        {ACPH_STATUS_OK, "ok"}, {ACPH_STATUS_EMPTY, "empty"},
        {ACPH_STATUS_NULL_ARGUMENT, "null_argument"}, {ACPH_STATUS_INVALID_UTF8, "invalid_utf8"},
        {ACPH_STATUS_INVALID_JSON, "invalid_json"}, {ACPH_STATUS_INVALID_ARGUMENT, "invalid_argument"},
        {ACPH_STATUS_INVALID_CONFIG, "invalid_config"}, {ACPH_STATUS_STALE_ID, "stale_id"},
        {ACPH_STATUS_ALREADY_RESOLVED, "already_resolved"}, {ACPH_STATUS_WRONG_THREAD, "wrong_thread"},
        {ACPH_STATUS_AGENT_EXITED, "agent_exited"}, {ACPH_STATUS_TIMEOUT, "timeout"},
        {ACPH_STATUS_UNSUPPORTED, "unsupported"}, {ACPH_STATUS_PROTOCOL, "protocol"},
        {ACPH_STATUS_AGENT_ERROR, "agent_error"}, {ACPH_STATUS_AUTH_REQUIRED, "auth_required"},
        {ACPH_STATUS_VERSION_UNSUPPORTED, "version_unsupported"}, {ACPH_STATUS_SPAWN_FAILED, "spawn_failed"},
        {ACPH_STATUS_IO, "io"}, {ACPH_STATUS_CLOSED, "closed"}, {ACPH_STATUS_CANCELLED, "cancelled"},
        {ACPH_STATUS_BUSY, "busy"}, {ACPH_STATUS_NOT_FOUND, "not_found"}, {ACPH_STATUS_OTHER, "other"},
        {ACPH_STATUS_PANIC, "panic"}, {ACPH_STATUS_INTERNAL, "internal"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) CHECK_MSG(strcmp(acph_status_str(table[i].s), table[i].name) == 0, table[i].name);
    /* The numbers are part of the ABI. */
    CHECK(ACPH_STATUS_NULL_ARGUMENT == 100 && ACPH_STATUS_STALE_ID == 105 && ACPH_STATUS_AGENT_EXITED == 200);
    CHECK(ACPH_STATUS_PANIC == 900 && ACPH_EVENT_CALL_COMPLETED == 19 && ACPH_EVENT_UNKNOWN == 0);
    CHECK(strcmp(acph_status_str(4242), "unknown") == 0);
    CHECK(strcmp(acph_status_str(UINT32_MAX), "unknown") == 0);

    /* The method table (docs/PROTOCOL.md) as JSON: every stable method, with its C call. */
    char *methods = NULL;
    CHECK(acph_methods_json(&methods, NULL) == ACPH_STATUS_OK && methods);
    CHECK(strstr(methods, "{\"c\":\"acph_session_prompt\"") || strstr(methods, "\"acph_session_prompt\""));
    CHECK(strstr(methods, "\"name\":\"elicitation/create\""));
    CHECK(strstr(methods, "\"gate\":\"agentCapabilities.loadSession\""));
    acph_string_free(methods);
    CHECK(acph_methods_json(NULL, NULL) == ACPH_STATUS_NULL_ARGUMENT);

    /* Freeing NULL is a no-op everywhere. */
    acph_host_free(NULL);
    acph_event_free(NULL);
    acph_error_free(NULL);
    acph_string_free(NULL);
    printf("test_version: %s (ABI %u) ok\n", acph_version(), (unsigned)acph_abi_version());
    return 0;
}
