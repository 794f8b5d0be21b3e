/* The header compiles as strict C11 (-pedantic -Wall -Wextra -Werror) and may be included twice. */
#include "acp_host.h"
#include "acp_host.h"

#if !defined(ACPH_VERSION_MAJOR) || !defined(ACPH_VERSION_MINOR) || !defined(ACPH_VERSION_PATCH)
#error "version macros missing"
#endif

/* Types are usable as declared. */
static acph_status (*const spawn_fn)(acph_host *, const char *, size_t, uint64_t *, acph_error **) = acph_host_spawn;
static acph_event_kind kind = ACPH_EVENT_CALL_COMPLETED;

int header_c_check(void);
int header_c_check(void) {
    acph_status st = ACPH_STATUS_OK;
    return (int)st + (int)(kind != ACPH_EVENT_CALL_COMPLETED) + (spawn_fn == 0);
}
