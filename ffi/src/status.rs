//! Status codes (`acph_status`), the owned error object (`acph_error`) and the one mapping from
//! core errors to both.

use acp_host::Error;
use serde_json::Value;

/// The result of every fallible call. The numbers are stable and never reused; new codes are
/// added in the block of their family (0–99 success, 100–199 caller mistakes, 200–299 outcomes
/// reported by the host or the agent, 900–999 bugs).
///
/// `acph_status_str` gives each code's stable snake_case name, which is also the `kind` of the
/// error object and the error kind the Node and Python faces use.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum acph_status {
    /// Success.
    ACPH_STATUS_OK = 0,
    /// No event is ready (`acph_host_try_next_event`), or the timeout of `acph_host_next_event`
    /// elapsed without one. Not an error.
    ACPH_STATUS_EMPTY = 1,
    /// A required pointer argument was NULL.
    ACPH_STATUS_NULL_ARGUMENT = 100,
    /// A string argument was not valid UTF-8.
    ACPH_STATUS_INVALID_UTF8 = 101,
    /// A JSON argument did not parse.
    ACPH_STATUS_INVALID_JSON = 102,
    /// An argument was well-formed but not acceptable (an unknown field of a non-option argument,
    /// a relative path, an option id that was not offered, JSON nested deeper than the message
    /// depth limit, a descriptor `acph_host_connect` cannot use, ...). Also the core's
    /// `invalid_argument`.
    ACPH_STATUS_INVALID_ARGUMENT = 103,
    /// An option document was rejected by the core's option table (docs/OPTIONS.md): the host
    /// configuration, an agent spec, session options or pool settings (not JSON, an unknown
    /// field, a wrong type or range, a bad policy, a `cwd` that is not an existing directory).
    /// The error's `data` is `{"path": ...}`, the same path every face reports.
    ACPH_STATUS_INVALID_CONFIG = 104,
    /// The handle (agent, session, call) is unknown to this host: never issued, issued by another
    /// host, or released (a call id by `acph_call_wait` returning its outcome, or
    /// `acph_call_free`).
    ACPH_STATUS_STALE_ID = 105,
    /// The request was already answered (a second `acph_permission_respond` or
    /// `acph_service_respond`), or already resolved by someone else (timeout, cancel, exit); or
    /// the call `acph_call_cancel` names has already completed.
    ACPH_STATUS_ALREADY_RESOLVED = 106,
    /// A blocking function (`acph_call_wait` or `acph_host_next_event` with a timeout) was called
    /// from a library thread (inside a callback). Callbacks may only call the non-blocking
    /// functions; see docs/FFI.md.
    ACPH_STATUS_WRONG_THREAD = 107,
    /// The agent exited while the operation was pending (or before it was started).
    ACPH_STATUS_AGENT_EXITED = 200,
    /// The operation did not complete in time: the host's request timeout (the call failed), or
    /// `acph_call_wait`'s `timeout_ms` (the call keeps running; the error's `data.running` is
    /// true).
    ACPH_STATUS_TIMEOUT = 201,
    /// The agent does not advertise the capability this call needs; nothing was sent.
    ACPH_STATUS_UNSUPPORTED = 202,
    /// The agent broke the protocol in a way that prevents this operation.
    ACPH_STATUS_PROTOCOL = 203,
    /// The agent answered with a JSON-RPC error (code and data in the error object's `data`).
    ACPH_STATUS_AGENT_ERROR = 204,
    /// The agent requires `authenticate` first.
    ACPH_STATUS_AUTH_REQUIRED = 205,
    /// The agent speaks a protocol version this host does not.
    ACPH_STATUS_VERSION_UNSUPPORTED = 206,
    /// The agent command could not be started.
    ACPH_STATUS_SPAWN_FAILED = 207,
    /// An I/O error: the agent's pipes, or a registry install (its cache directory, the archive,
    /// the embedder's fetch hook).
    ACPH_STATUS_IO = 208,
    /// The host (or the agent connection) is shut down or shutting down.
    ACPH_STATUS_CLOSED = 209,
    /// The operation was cancelled (`acph_call_cancel`, or the agent answered -32800).
    ACPH_STATUS_CANCELLED = 210,
    /// The session is busy (a turn in flight, still opening).
    ACPH_STATUS_BUSY = 211,
    /// The thing named is not known: a session that is not open, a permission, elicitation or
    /// service request id this host never issued.
    ACPH_STATUS_NOT_FOUND = 212,
    /// A call gave up because the event queue is full and nobody has pulled an event for the
    /// stall timeout (`eventStallTimeoutMs`); pull events (from another thread than one blocked in
    /// `acph_call_wait`) while calls are pending. The call was abandoned (a prompt is cancelled).
    ACPH_STATUS_EVENTS_STALLED = 213,
    /// An error kind this version of the C ABI does not know (a newer core); see the error's
    /// `kind`.
    ACPH_STATUS_OTHER = 299,
    /// A bug: a panic was caught at the boundary. The host may be unusable; free it.
    ACPH_STATUS_PANIC = 900,
    /// A bug: an internal invariant failed.
    ACPH_STATUS_INTERNAL = 901,
}

use acph_status::*;

/// Every status, for tests and `acph_status_str`.
pub(crate) const ALL_STATUSES: &[acph_status] = &[
    ACPH_STATUS_OK,
    ACPH_STATUS_EMPTY,
    ACPH_STATUS_NULL_ARGUMENT,
    ACPH_STATUS_INVALID_UTF8,
    ACPH_STATUS_INVALID_JSON,
    ACPH_STATUS_INVALID_ARGUMENT,
    ACPH_STATUS_INVALID_CONFIG,
    ACPH_STATUS_STALE_ID,
    ACPH_STATUS_ALREADY_RESOLVED,
    ACPH_STATUS_WRONG_THREAD,
    ACPH_STATUS_AGENT_EXITED,
    ACPH_STATUS_TIMEOUT,
    ACPH_STATUS_UNSUPPORTED,
    ACPH_STATUS_PROTOCOL,
    ACPH_STATUS_AGENT_ERROR,
    ACPH_STATUS_AUTH_REQUIRED,
    ACPH_STATUS_VERSION_UNSUPPORTED,
    ACPH_STATUS_SPAWN_FAILED,
    ACPH_STATUS_IO,
    ACPH_STATUS_CLOSED,
    ACPH_STATUS_CANCELLED,
    ACPH_STATUS_BUSY,
    ACPH_STATUS_NOT_FOUND,
    ACPH_STATUS_EVENTS_STALLED,
    ACPH_STATUS_OTHER,
    ACPH_STATUS_PANIC,
    ACPH_STATUS_INTERNAL,
];

impl acph_status {
    /// The stable snake_case name (NUL-terminated for C).
    pub(crate) fn name_c(self) -> &'static str {
        match self {
            ACPH_STATUS_OK => "ok\0",
            ACPH_STATUS_EMPTY => "empty\0",
            ACPH_STATUS_NULL_ARGUMENT => "null_argument\0",
            ACPH_STATUS_INVALID_UTF8 => "invalid_utf8\0",
            ACPH_STATUS_INVALID_JSON => "invalid_json\0",
            ACPH_STATUS_INVALID_ARGUMENT => "invalid_argument\0",
            ACPH_STATUS_INVALID_CONFIG => "invalid_config\0",
            ACPH_STATUS_STALE_ID => "stale_id\0",
            ACPH_STATUS_ALREADY_RESOLVED => "already_resolved\0",
            ACPH_STATUS_WRONG_THREAD => "wrong_thread\0",
            ACPH_STATUS_AGENT_EXITED => "agent_exited\0",
            ACPH_STATUS_TIMEOUT => "timeout\0",
            ACPH_STATUS_UNSUPPORTED => "unsupported\0",
            ACPH_STATUS_PROTOCOL => "protocol\0",
            ACPH_STATUS_AGENT_ERROR => "agent_error\0",
            ACPH_STATUS_AUTH_REQUIRED => "auth_required\0",
            ACPH_STATUS_VERSION_UNSUPPORTED => "version_unsupported\0",
            ACPH_STATUS_SPAWN_FAILED => "spawn_failed\0",
            ACPH_STATUS_IO => "io\0",
            ACPH_STATUS_CLOSED => "closed\0",
            ACPH_STATUS_CANCELLED => "cancelled\0",
            ACPH_STATUS_BUSY => "busy\0",
            ACPH_STATUS_NOT_FOUND => "not_found\0",
            ACPH_STATUS_EVENTS_STALLED => "events_stalled\0",
            ACPH_STATUS_OTHER => "other\0",
            ACPH_STATUS_PANIC => "panic\0",
            ACPH_STATUS_INTERNAL => "internal\0",
        }
    }

    /// The name without the NUL.
    pub(crate) fn name(self) -> &'static str {
        let n = self.name_c();
        &n[..n.len() - 1]
    }

    pub(crate) fn from_u32(code: u32) -> Option<acph_status> {
        ALL_STATUSES.iter().copied().find(|s| *s as u32 == code)
    }

    /// The status for a core error kind (`Error::kind`).
    pub(crate) fn from_kind(kind: &str) -> acph_status {
        match kind {
            "agent_exited" => ACPH_STATUS_AGENT_EXITED,
            "timeout" => ACPH_STATUS_TIMEOUT,
            "unsupported" => ACPH_STATUS_UNSUPPORTED,
            "protocol" => ACPH_STATUS_PROTOCOL,
            "agent_error" => ACPH_STATUS_AGENT_ERROR,
            "auth_required" => ACPH_STATUS_AUTH_REQUIRED,
            "version_unsupported" => ACPH_STATUS_VERSION_UNSUPPORTED,
            "invalid_argument" => ACPH_STATUS_INVALID_ARGUMENT,
            "invalid_config" => ACPH_STATUS_INVALID_CONFIG,
            "spawn_failed" => ACPH_STATUS_SPAWN_FAILED,
            "io" => ACPH_STATUS_IO,
            "closed" => ACPH_STATUS_CLOSED,
            "cancelled" => ACPH_STATUS_CANCELLED,
            "busy" => ACPH_STATUS_BUSY,
            "not_found" => ACPH_STATUS_NOT_FOUND,
            "already_resolved" => ACPH_STATUS_ALREADY_RESOLVED,
            "events_stalled" => ACPH_STATUS_EVENTS_STALLED,
            _ => ACPH_STATUS_OTHER,
        }
    }
}

/// A failed call, before it becomes an `acph_error` (when the caller asked for one).
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub status: acph_status,
    /// The stable kind string: the status name, or the core's kind for `ACPH_STATUS_OTHER`.
    pub kind: String,
    pub message: String,
    /// Boxed: keeps `Result<_, Failure>` small on every success path.
    pub data: Box<Value>,
}

impl Failure {
    pub fn new(status: acph_status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            kind: status.name().to_owned(),
            message: message.into(),
            data: Box::new(Value::Null),
        }
    }

    pub fn with_data(mut self, data: Value) -> Failure {
        self.data = Box::new(data);
        self
    }

    pub fn null(what: &str) -> Failure {
        Failure::new(ACPH_STATUS_NULL_ARGUMENT, format!("`{what}` is NULL"))
    }

    pub fn stale(what: &str, id: u64) -> Failure {
        Failure::new(
            ACPH_STATUS_STALE_ID,
            format!("no {what} {id} in this host (never issued, from another host, or released)"),
        )
    }

    /// A request id (permission, elicitation, service request) this host never issued: the same
    /// `not_found` as in every other face (docs/ERRORS.md). `stale_id` is for handles.
    pub fn unknown_request(what: &str, id: u64) -> Failure {
        Failure::new(
            ACPH_STATUS_NOT_FOUND,
            format!("no {what} {id} in this host (never issued, or from another host)"),
        )
    }

    pub fn closed() -> Failure {
        Failure::new(ACPH_STATUS_CLOSED, "closed: the host is shutting down")
    }

    pub fn wrong_thread(what: &str) -> Failure {
        Failure::new(
            ACPH_STATUS_WRONG_THREAD,
            format!(
                "{what} blocks and must not be called from a library thread (a callback): \
                 poll with a timeout of 0, or wait on a thread of your own"
            ),
        )
    }

    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(ACPH_STATUS_INVALID_ARGUMENT, message)
    }

    pub fn json(what: &str, e: &serde_json::Error) -> Failure {
        // JSON nested past serde_json's own limit (128) parses in principle: it is too deep,
        // like JSON nested past the message depth limit (`invalid_argument` in every face).
        if e.to_string().starts_with("recursion limit exceeded") {
            return Failure::new(
                ACPH_STATUS_INVALID_ARGUMENT,
                format!(
                    "`{what}` nests arrays and objects deeper than {} levels",
                    acp_host::wire::MAX_JSON_DEPTH
                ),
            );
        }
        Failure::new(
            ACPH_STATUS_INVALID_JSON,
            format!("`{what}` is not valid JSON: {e}"),
        )
    }

    /// JSON that would make a message nest deeper than the limit (`wire::depth::check_fits`).
    pub fn too_deep(what: &str, e: &acp_host::Error) -> Failure {
        Failure::new(ACPH_STATUS_INVALID_ARGUMENT, format!("`{what}`: {e}"))
    }

    pub fn panic(payload: &(dyn std::any::Any + Send)) -> Failure {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic payload".to_owned());
        Failure::new(ACPH_STATUS_PANIC, format!("internal panic (a bug): {what}"))
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::from(&e)
    }
}

impl From<&Error> for Failure {
    fn from(e: &Error) -> Failure {
        let status = acph_status::from_kind(e.kind());
        Failure {
            status,
            kind: e.kind().to_owned(),
            message: e.to_string(),
            data: Box::new(e.data()),
        }
    }
}

/// The owned error object written to an `acph_error **error_out` parameter when a call fails.
/// Read its fields, then free it with `acph_error_free`. Every string is NUL-terminated UTF-8
/// owned by the error (valid until `acph_error_free`). Only the library creates and frees these;
/// fields may be appended in later minor versions.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct acph_error {
    /// The same status the call returned.
    pub code: acph_status,
    /// Stable snake_case kind: the name of `code` (`acph_status_str`), or for `ACPH_STATUS_OTHER`
    /// the core's own kind string.
    pub kind: *const std::ffi::c_char,
    /// Human-readable message (one line, no trailing newline).
    pub message: *const std::ffi::c_char,
    /// Structured details as JSON (`null` when there are none), e.g. `{"code":-32002,"data":…}`
    /// for `agent_error`, `{"exitCode":3,"signal":null,"stderrTail":"…"}` for `agent_exited`.
    pub data: *const std::ffi::c_char,
}
