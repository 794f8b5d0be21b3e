-- GENERATED from include/acp_host.h by ffi/tests/integration/lua_cdef.rs; do not edit. Regenerate with
-- `ACPH_UPDATE_LUA_CDEF=1 cargo test -p acp-host-ffi --test integration lua_cdef::` after the header changes.
--
-- The C ABI of libacp_host for LuaJIT's FFI (Neovim, any LuaJIT program), as a C11
-- compiler sees the header. Reference: docs/FFI.md. Usage:
--
--   local acph = require('acp_host_cdef')   -- declares the ABI (once per Lua state)
--   local lib = ffi.load('acp_host')        -- or a path to libacp_host.so
--   assert(lib.acph_abi_version() == acph.ABI_VERSION)
--
-- Enum values and the integer macros are reachable as `lib.ACPH_...` (also `ffi.C.ACPH_...`)
-- and as fields of the returned table.
local ffi = require('ffi')

local cdef = [==[
static const uint32_t ACPH_VERSION_MAJOR = 0;
static const uint32_t ACPH_VERSION_MINOR = 1;
static const uint32_t ACPH_VERSION_PATCH = 0;
static const uint32_t ACPH_VERSION_NUMBER = 1000;
static const uint32_t ACPH_ABI_VERSION = 2;
static const uint32_t ACPH_TIMEOUT_INFINITE = 0xffffffff;
enum acph_status
 {
    ACPH_STATUS_OK = 0,
    ACPH_STATUS_EMPTY = 1,
    ACPH_STATUS_NULL_ARGUMENT = 100,
    ACPH_STATUS_INVALID_UTF8 = 101,
    ACPH_STATUS_INVALID_JSON = 102,
    ACPH_STATUS_INVALID_ARGUMENT = 103,
    ACPH_STATUS_INVALID_CONFIG = 104,
    ACPH_STATUS_STALE_ID = 105,
    ACPH_STATUS_ALREADY_RESOLVED = 106,
    ACPH_STATUS_WRONG_THREAD = 107,
    ACPH_STATUS_AGENT_EXITED = 200,
    ACPH_STATUS_TIMEOUT = 201,
    ACPH_STATUS_UNSUPPORTED = 202,
    ACPH_STATUS_PROTOCOL = 203,
    ACPH_STATUS_AGENT_ERROR = 204,
    ACPH_STATUS_AUTH_REQUIRED = 205,
    ACPH_STATUS_VERSION_UNSUPPORTED = 206,
    ACPH_STATUS_SPAWN_FAILED = 207,
    ACPH_STATUS_IO = 208,
    ACPH_STATUS_CLOSED = 209,
    ACPH_STATUS_CANCELLED = 210,
    ACPH_STATUS_BUSY = 211,
    ACPH_STATUS_NOT_FOUND = 212,
    ACPH_STATUS_EVENTS_STALLED = 213,
    ACPH_STATUS_OTHER = 299,
    ACPH_STATUS_PANIC = 900,
    ACPH_STATUS_INTERNAL = 901,
};
typedef uint32_t acph_status;
enum acph_log_level
 {
    ACPH_LOG_ERROR = 1,
    ACPH_LOG_WARN = 2,
    ACPH_LOG_INFO = 3,
    ACPH_LOG_DEBUG = 4,
    ACPH_LOG_TRACE = 5,
};
typedef uint32_t acph_log_level;
enum acph_event_kind
 {
    ACPH_EVENT_UNKNOWN = 0,
    ACPH_EVENT_AGENT_READY = 1,
    ACPH_EVENT_AGENT_EXITED = 2,
    ACPH_EVENT_SESSION_OPENED = 3,
    ACPH_EVENT_SESSION_CLOSED = 4,
    ACPH_EVENT_SESSION_UPDATE = 5,
    ACPH_EVENT_TURN_STARTED = 6,
    ACPH_EVENT_TURN_ENDED = 7,
    ACPH_EVENT_PERMISSION_REQUESTED = 8,
    ACPH_EVENT_PERMISSION_RESOLVED = 9,
    ACPH_EVENT_FS_READ = 10,
    ACPH_EVENT_FS_WRITE = 11,
    ACPH_EVENT_TERMINAL_CREATED = 12,
    ACPH_EVENT_TERMINAL_EXITED = 13,
    ACPH_EVENT_AGENT_STDERR = 14,
    ACPH_EVENT_PROTOCOL_NOISE = 15,
    ACPH_EVENT_PROTOCOL_ERROR = 16,
    ACPH_EVENT_EXT_NOTIFICATION = 17,
    ACPH_EVENT_WIRE = 18,
    ACPH_EVENT_CALL_COMPLETED = 19,
    ACPH_EVENT_ELICITATION_REQUESTED = 20,
    ACPH_EVENT_ELICITATION_RESOLVED = 21,
    ACPH_EVENT_ELICITATION_COMPLETED = 22,
    ACPH_EVENT_EXT_REQUEST = 23,
    ACPH_EVENT_SERVICE_REQUESTED = 24,
    ACPH_EVENT_AGENT_RESTARTING = 25,
    ACPH_EVENT_AGENT_RESTARTED = 26,
    ACPH_EVENT_AGENT_FAILED = 27,
    ACPH_EVENT_SESSION_LOST = 28,
    ACPH_EVENT_PROGRESS = 29,
    ACPH_EVENT_STEER = 30,
};
typedef uint32_t acph_event_kind;
typedef struct acph_fetch_sink acph_fetch_sink;
typedef struct acph_host acph_host;
typedef struct acph_registry acph_registry;
typedef struct acph_error {
    acph_status code;
    const char *kind;
    const char *message;
    const char *data;
} acph_error;
typedef void (*acph_log_fn)(void *user_data,
                            acph_log_level level,
                            const char *record_json,
                            size_t record_len);
typedef void (*acph_free_fn)(void *user_data);
typedef void (*acph_wakeup_fn)(void *user_data);
typedef void (*acph_service_fn)(void *user_data,
                                uint64_t request_id,
                                const char *method,
                                const char *params_json,
                                size_t params_len);
typedef struct acph_event {
    uint64_t seq;
    uint64_t agent;
    uint64_t session;
    uint64_t turn;
    uint64_t request;
    uint64_t call;
    acph_event_kind kind;
    bool replay;
    const char *kind_name;
    const char *session_id;
    size_t session_id_len;
    const char *json;
    size_t json_len;
} acph_event;
typedef int (*acph_fetch_fn)(void *user_data,
                             const char *url,
                             size_t url_len,
                             struct acph_fetch_sink *sink);
typedef void (*acph_progress_fn)(void *user_data, const char *progress_json, size_t progress_len);
const char *acph_version(void);
uint32_t acph_abi_version(void);
const char *acph_status_str(uint32_t status);
void acph_error_free(struct acph_error *error);
void acph_string_free(char *string);
acph_status acph_methods_json(char **json_out, struct acph_error **error_out);
acph_status acph_content_from_file(const char *path,
                                   size_t path_len,
                                   char **json_out,
                                   struct acph_error **error_out);
acph_status acph_host_new(const char *config_json,
                          size_t config_len,
                          struct acph_host **host_out,
                          struct acph_error **error_out);
acph_status acph_host_new_with_log(const char *config_json,
                                   size_t config_len,
                                   acph_log_fn log,
                                   void *user_data,
                                   acph_free_fn finalizer,
                                   struct acph_host **host_out,
                                   struct acph_error **error_out);
acph_status acph_host_set_log_handler(struct acph_host *host,
                                      acph_log_fn log,
                                      void *user_data,
                                      acph_free_fn finalizer,
                                      struct acph_error **error_out);
void acph_host_free(struct acph_host *host);
acph_status acph_host_shutdown(struct acph_host *host, struct acph_error **error_out);
acph_status acph_host_set_wakeup(struct acph_host *host,
                                 acph_wakeup_fn callback,
                                 void *user_data,
                                 acph_free_fn finalizer,
                                 struct acph_error **error_out);
acph_status acph_host_event_fd(const struct acph_host *host,
                               int *fd_out,
                               struct acph_error **error_out);
acph_status acph_host_set_service_handler(struct acph_host *host,
                                          acph_service_fn callback,
                                          void *user_data,
                                          acph_free_fn finalizer,
                                          struct acph_error **error_out);
acph_status acph_service_respond(struct acph_host *host,
                                 uint64_t request_id,
                                 const char *result_json,
                                 size_t result_len,
                                 struct acph_error **error_out);
acph_status acph_service_fail(struct acph_host *host,
                              uint64_t request_id,
                              int64_t code,
                              const char *message,
                              size_t message_len,
                              struct acph_error **error_out);
acph_status acph_host_next_event(struct acph_host *host,
                                 uint32_t timeout_ms,
                                 struct acph_event **event_out);
acph_status acph_host_try_next_event(struct acph_host *host, struct acph_event **event_out);
void acph_event_free(struct acph_event *event);
acph_status acph_call_wait(struct acph_host *host,
                           uint64_t call,
                           uint32_t timeout_ms,
                           uint64_t *id_out,
                           char **result_out,
                           struct acph_error **error_out);
acph_status acph_call_free(struct acph_host *host, uint64_t call, struct acph_error **error_out);
acph_status acph_call_cancel(struct acph_host *host, uint64_t call, struct acph_error **error_out);
acph_status acph_host_spawn(struct acph_host *host,
                            const char *spec_json,
                            size_t spec_len,
                            uint64_t *call_out,
                            struct acph_error **error_out);
acph_status acph_agent_info(struct acph_host *host,
                            uint64_t agent,
                            char **json_out,
                            struct acph_error **error_out);
acph_status acph_agent_authenticate(struct acph_host *host,
                                    uint64_t agent,
                                    const char *method_id,
                                    size_t method_len,
                                    uint64_t *call_out,
                                    struct acph_error **error_out);
acph_status acph_agent_terminal_auth(struct acph_host *host,
                                     uint64_t agent,
                                     const char *method_id,
                                     size_t method_len,
                                     uint64_t *call_out,
                                     struct acph_error **error_out);
acph_status acph_agent_logout(struct acph_host *host,
                              uint64_t agent,
                              uint64_t *call_out,
                              struct acph_error **error_out);
acph_status acph_agent_ext_request(struct acph_host *host,
                                   uint64_t agent,
                                   const char *method,
                                   size_t method_len,
                                   const char *params_json,
                                   size_t params_len,
                                   uint64_t *call_out,
                                   struct acph_error **error_out);
acph_status acph_agent_shutdown(struct acph_host *host,
                                uint64_t agent,
                                uint64_t *call_out,
                                struct acph_error **error_out);
acph_status acph_agent_release(struct acph_host *host,
                               uint64_t agent,
                               struct acph_error **error_out);
acph_status acph_agent_new_session(struct acph_host *host,
                                   uint64_t agent,
                                   const char *options_json,
                                   size_t options_len,
                                   uint64_t *call_out,
                                   struct acph_error **error_out);
acph_status acph_agent_load_session(struct acph_host *host,
                                    uint64_t agent,
                                    const char *session_id,
                                    size_t session_id_len,
                                    const char *options_json,
                                    size_t options_len,
                                    uint64_t *call_out,
                                    struct acph_error **error_out);
acph_status acph_agent_resume_session(struct acph_host *host,
                                      uint64_t agent,
                                      const char *session_id,
                                      size_t session_id_len,
                                      const char *options_json,
                                      size_t options_len,
                                      uint64_t *call_out,
                                      struct acph_error **error_out);
acph_status acph_agent_fork_session(struct acph_host *host,
                                    uint64_t agent,
                                    const char *session_id,
                                    size_t session_id_len,
                                    const char *options_json,
                                    size_t options_len,
                                    uint64_t *call_out,
                                    struct acph_error **error_out);
acph_status acph_agent_list_sessions(struct acph_host *host,
                                     uint64_t agent,
                                     const char *params_json,
                                     size_t params_len,
                                     uint64_t *call_out,
                                     struct acph_error **error_out);
acph_status acph_agent_delete_session(struct acph_host *host,
                                      uint64_t agent,
                                      const char *session_id,
                                      size_t session_id_len,
                                      uint64_t *call_out,
                                      struct acph_error **error_out);
acph_status acph_agent_session_status(struct acph_host *host,
                                      uint64_t agent,
                                      const char *session_id,
                                      size_t session_id_len,
                                      uint64_t *call_out,
                                      struct acph_error **error_out);
acph_status acph_agent_set_session_title(struct acph_host *host,
                                         uint64_t agent,
                                         const char *session_id,
                                         size_t session_id_len,
                                         const char *title,
                                         size_t title_len,
                                         uint64_t *call_out,
                                         struct acph_error **error_out);
acph_status acph_agent_archive_session(struct acph_host *host,
                                       uint64_t agent,
                                       const char *session_id,
                                       size_t session_id_len,
                                       uint64_t *call_out,
                                       struct acph_error **error_out);
acph_status acph_agent_unarchive_session(struct acph_host *host,
                                         uint64_t agent,
                                         const char *session_id,
                                         size_t session_id_len,
                                         uint64_t *call_out,
                                         struct acph_error **error_out);
acph_status acph_agent_session_options(struct acph_host *host,
                                       uint64_t agent,
                                       const char *options_json,
                                       size_t options_len,
                                       const char *session_id,
                                       size_t session_id_len,
                                       uint64_t *call_out,
                                       struct acph_error **error_out);
acph_status acph_host_connect(struct acph_host *host,
                              ptrdiff_t read_fd,
                              ptrdiff_t write_fd,
                              uint64_t *call_out,
                              struct acph_error **error_out);
acph_status acph_host_find_session(struct acph_host *host,
                                   uint64_t agent,
                                   const char *session_id,
                                   size_t session_id_len,
                                   uint64_t *session_out,
                                   struct acph_error **error_out);
acph_status acph_session_id(struct acph_host *host,
                            uint64_t session,
                            char **id_out,
                            size_t *len_out,
                            struct acph_error **error_out);
acph_status acph_session_agent(struct acph_host *host,
                               uint64_t session,
                               uint64_t *agent_out,
                               struct acph_error **error_out);
acph_status acph_session_state(struct acph_host *host,
                               uint64_t session,
                               char **json_out,
                               struct acph_error **error_out);
acph_status acph_session_prompt(struct acph_host *host,
                                uint64_t session,
                                const char *content_json,
                                size_t content_len,
                                uint64_t *call_out,
                                struct acph_error **error_out);
acph_status acph_session_prompt_text(struct acph_host *host,
                                     uint64_t session,
                                     const char *text,
                                     size_t text_len,
                                     uint64_t *call_out,
                                     struct acph_error **error_out);
acph_status acph_session_steer(struct acph_host *host,
                               uint64_t session,
                               const char *content_json,
                               size_t content_len,
                               uint64_t *call_out,
                               struct acph_error **error_out);
acph_status acph_session_cancel(struct acph_host *host,
                                uint64_t session,
                                struct acph_error **error_out);
acph_status acph_session_set_mode(struct acph_host *host,
                                  uint64_t session,
                                  const char *mode_id,
                                  size_t mode_len,
                                  uint64_t *call_out,
                                  struct acph_error **error_out);
acph_status acph_session_models(struct acph_host *host,
                                uint64_t session,
                                char **json_out,
                                struct acph_error **error_out);
acph_status acph_session_set_model(struct acph_host *host,
                                   uint64_t session,
                                   const char *model_id,
                                   size_t model_len,
                                   uint64_t *call_out,
                                   struct acph_error **error_out);
acph_status acph_session_set_config_option(struct acph_host *host,
                                           uint64_t session,
                                           const char *config_id,
                                           size_t config_len,
                                           const char *value_json,
                                           size_t value_len,
                                           uint64_t *call_out,
                                           struct acph_error **error_out);
acph_status acph_session_close(struct acph_host *host,
                               uint64_t session,
                               uint64_t *call_out,
                               struct acph_error **error_out);
acph_status acph_session_cancel_tool_call(struct acph_host *host,
                                          uint64_t session,
                                          const char *tool_call_id,
                                          size_t tool_call_id_len,
                                          uint64_t *call_out,
                                          struct acph_error **error_out);
acph_status acph_session_cancel_terminal(struct acph_host *host,
                                         uint64_t session,
                                         const char *terminal_id,
                                         size_t terminal_id_len,
                                         uint64_t *call_out,
                                         struct acph_error **error_out);
acph_status acph_permission_respond(struct acph_host *host,
                                    uint64_t request_id,
                                    const char *option_id,
                                    size_t option_len,
                                    struct acph_error **error_out);
acph_status acph_elicitation_respond(struct acph_host *host,
                                     uint64_t request_id,
                                     const char *answer_json,
                                     size_t answer_len,
                                     struct acph_error **error_out);
acph_status acph_permission_answer(struct acph_host *host,
                                   uint64_t request_id,
                                   const char *option_id,
                                   size_t option_len,
                                   uint64_t *call_out,
                                   struct acph_error **error_out);
acph_status acph_elicitation_answer(struct acph_host *host,
                                    uint64_t request_id,
                                    const char *answer_json,
                                    size_t answer_len,
                                    uint64_t *call_out,
                                    struct acph_error **error_out);
acph_status acph_pool_new(struct acph_host *host,
                          const char *spec_json,
                          size_t spec_len,
                          const char *pool_json,
                          size_t pool_len,
                          uint64_t *pool_out,
                          struct acph_error **error_out);
acph_status acph_pool_ready(struct acph_host *host,
                            uint64_t pool,
                            uint64_t *call_out,
                            struct acph_error **error_out);
acph_status acph_pool_open_session(struct acph_host *host,
                                   uint64_t pool,
                                   const char *options_json,
                                   size_t options_len,
                                   uint64_t *call_out,
                                   struct acph_error **error_out);
acph_status acph_pool_release_session(struct acph_host *host,
                                      uint64_t session,
                                      uint64_t *call_out,
                                      struct acph_error **error_out);
acph_status acph_pool_stats(struct acph_host *host,
                            uint64_t pool,
                            char **json_out,
                            struct acph_error **error_out);
acph_status acph_pool_shutdown(struct acph_host *host,
                               uint64_t pool,
                               uint64_t *call_out,
                               struct acph_error **error_out);
acph_status acph_pool_release(struct acph_host *host, uint64_t pool, struct acph_error **error_out);
acph_status acph_registry_from_file(const char *path,
                                    size_t path_len,
                                    struct acph_registry **registry_out,
                                    struct acph_error **error_out);
acph_status acph_registry_from_json(const char *json,
                                    size_t json_len,
                                    struct acph_registry **registry_out,
                                    struct acph_error **error_out);
void acph_registry_free(struct acph_registry *registry);
acph_status acph_registry_version(const struct acph_registry *registry,
                                  char **version_out,
                                  struct acph_error **error_out);
acph_status acph_registry_agents(const struct acph_registry *registry,
                                 char **json_out,
                                 struct acph_error **error_out);
acph_status acph_registry_agent(const struct acph_registry *registry,
                                const char *id,
                                size_t id_len,
                                char **json_out,
                                struct acph_error **error_out);
acph_status acph_registry_resolve(const struct acph_registry *registry,
                                  const char *id,
                                  size_t id_len,
                                  const char *options_json,
                                  size_t options_len,
                                  char **json_out,
                                  struct acph_error **error_out);
acph_status acph_registry_is_installed(const struct acph_registry *registry,
                                       const char *id,
                                       size_t id_len,
                                       const char *options_json,
                                       size_t options_len,
                                       bool *installed_out,
                                       struct acph_error **error_out);
acph_status acph_registry_install(struct acph_host *host,
                                  const struct acph_registry *registry,
                                  const char *id,
                                  size_t id_len,
                                  const char *options_json,
                                  size_t options_len,
                                  acph_fetch_fn fetch,
                                  acph_progress_fn progress,
                                  void *user_data,
                                  acph_free_fn finalizer,
                                  uint64_t *call_out,
                                  struct acph_error **error_out);
acph_status acph_fetch_sink_write(struct acph_fetch_sink *sink,
                                  const uint8_t *data,
                                  size_t len,
                                  struct acph_error **error_out);
acph_status acph_fetch_sink_fail(struct acph_fetch_sink *sink,
                                 const char *message,
                                 size_t message_len,
                                 struct acph_error **error_out);
]==]

-- Declaring twice in one Lua state is an error in LuaJIT ("attempt to redefine"): declare
-- only when no earlier copy did.
if not pcall(ffi.typeof, 'struct acph_event') then
  ffi.cdef(cdef)
end

return {
  cdef = cdef,
  VERSION_STRING = '0.1.0',
  VERSION_MAJOR = 0,
  VERSION_MINOR = 1,
  VERSION_PATCH = 0,
  VERSION_NUMBER = 1000,
  ABI_VERSION = 2,
  TIMEOUT_INFINITE = 0xffffffff,
}
