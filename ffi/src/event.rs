//! The event struct handed to C (`acph_event`) and its kind enum.

use std::ffi::c_char;

use acp_host::EventKind;

/// The kind of an event. The numbers are stable. Each kind's `data` (inside `json`) is documented
/// in docs/EVENTS.md and has a JSON schema: `schema/events.schema.json#/properties/<kind_name>`
/// (ACP shapes such as `SessionUpdate` under its `$defs`). `ACPH_EVENT_UNKNOWN` stands for kinds added
/// after this version of the header: read `kind_name` (and `json`) for those, and tolerate them.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum acph_event_kind {
    ACPH_EVENT_UNKNOWN = 0,
    /// `data`: `#/properties/agent_ready`.
    ACPH_EVENT_AGENT_READY = 1,
    /// `data`: `#/properties/agent_exited`.
    ACPH_EVENT_AGENT_EXITED = 2,
    /// `data`: `#/properties/session_opened`.
    ACPH_EVENT_SESSION_OPENED = 3,
    /// `data`: `#/properties/session_closed`.
    ACPH_EVENT_SESSION_CLOSED = 4,
    /// `data`: `#/properties/session_update`.
    ACPH_EVENT_SESSION_UPDATE = 5,
    /// `data`: `#/properties/turn_started`.
    ACPH_EVENT_TURN_STARTED = 6,
    /// `data`: `#/properties/turn_ended`.
    ACPH_EVENT_TURN_ENDED = 7,
    /// `data`: `#/properties/permission_requested`.
    ACPH_EVENT_PERMISSION_REQUESTED = 8,
    /// `data`: `#/properties/permission_resolved`.
    ACPH_EVENT_PERMISSION_RESOLVED = 9,
    /// `data`: `#/properties/fs_read`.
    ACPH_EVENT_FS_READ = 10,
    /// `data`: `#/properties/fs_write`.
    ACPH_EVENT_FS_WRITE = 11,
    /// `data`: `#/properties/terminal_created`.
    ACPH_EVENT_TERMINAL_CREATED = 12,
    /// `data`: `#/properties/terminal_exited`.
    ACPH_EVENT_TERMINAL_EXITED = 13,
    /// `data`: `#/properties/agent_stderr`.
    ACPH_EVENT_AGENT_STDERR = 14,
    /// `data`: `#/properties/protocol_noise`.
    ACPH_EVENT_PROTOCOL_NOISE = 15,
    /// `data`: `#/properties/protocol_error`.
    ACPH_EVENT_PROTOCOL_ERROR = 16,
    /// `data`: `#/properties/ext_notification`.
    ACPH_EVENT_EXT_NOTIFICATION = 17,
    /// `data`: `#/properties/wire`.
    ACPH_EVENT_WIRE = 18,
    /// `data`: `#/properties/call_completed`.
    ACPH_EVENT_CALL_COMPLETED = 19,
    /// `data`: `#/properties/elicitation_requested`.
    ACPH_EVENT_ELICITATION_REQUESTED = 20,
    /// `data`: `#/properties/elicitation_resolved`.
    ACPH_EVENT_ELICITATION_RESOLVED = 21,
    /// `data`: `#/properties/elicitation_completed`.
    ACPH_EVENT_ELICITATION_COMPLETED = 22,
    /// `data`: `#/properties/ext_request`.
    ACPH_EVENT_EXT_REQUEST = 23,
    /// `data`: `#/properties/service_requested` (`{"requestId", "method", "params"}`): with
    /// `"services": "events"`, a request for the embedder; `request` is the id to pass to
    /// `acph_service_respond` / `acph_service_fail`.
    ACPH_EVENT_SERVICE_REQUESTED = 24,
    /// `data`: `#/properties/agent_restarting` (`{"attempt", "maxRestarts", "delayMs", "error"}`):
    /// a supervised agent (spec `restart`) died; attempt `attempt` starts after `delayMs`.
    ACPH_EVENT_AGENT_RESTARTING = 25,
    /// `data`: `#/properties/agent_restarted` (`{"attempt", "pid", "recovered", "lost"}`): the
    /// agent id and its session handles reach the new process.
    ACPH_EVENT_AGENT_RESTARTED = 26,
    /// `data`: `#/properties/agent_failed` (`{"attempts", "error"}`): the supervisor gave up; the
    /// agent stays down. Its last event.
    ACPH_EVENT_AGENT_FAILED = 27,
    /// `data`: `#/properties/session_lost` (`{"sessionId", "error"}`): a session of a restarted
    /// agent could not be reopened; its handle no longer reaches a session.
    ACPH_EVENT_SESSION_LOST = 28,
    /// `data`: `#/properties/progress` (`{"phase", "stage", "elapsedMs", "bytes", "message"}`):
    /// spawn, handshake or login started, still waiting, done or failed (`progressEvents`).
    ACPH_EVENT_PROGRESS = 29,
    /// `data`: `#/properties/steer`.
    ACPH_EVENT_STEER = 30,
}

/// One event, owned by the caller: free it with `acph_event_free`. Read-only; only the library
/// allocates these, and fields may be appended in later minor versions. Every pointer is valid
/// until `acph_event_free` (also after `acph_host_free`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct acph_event {
    /// Strictly increasing per host, starting at 1: the one total order (`seq` of the JSON).
    pub seq: u64,
    /// The agent id (`agent` of the JSON); 0 for a `call_completed` that belongs to no agent.
    pub agent: u64,
    /// The session handle (the `uint64_t` the session calls take) when the event belongs to a
    /// session this host has a handle for, else 0. `session_id` is the ACP string id.
    pub session: u64,
    /// The turn id (`turn` of the JSON), 0 when the event belongs to no turn.
    pub turn: u64,
    /// `permission_requested` / `permission_resolved`: the request id to pass to
    /// `acph_permission_respond`; `elicitation_requested` / `elicitation_resolved`: the one to
    /// pass to `acph_elicitation_respond` (`data.requestId`); `service_requested`: the one to pass
    /// to `acph_service_respond` / `acph_service_fail` (`data.requestId`); else 0.
    pub request: u64,
    /// `call_completed`: the call id returned by the asynchronous call (`data.call`; still the
    /// caller's to release: `acph_call_free`, or `acph_call_wait` for the outcome); else 0.
    pub call: u64,
    /// The kind; `ACPH_EVENT_UNKNOWN` for kinds newer than this header.
    pub kind: acph_event_kind,
    /// `true` for updates replayed by `session/load`.
    pub replay: bool,
    /// The kind as its snake_case name (`kind` of the JSON), NUL-terminated, static.
    pub kind_name: *const c_char,
    /// The ACP session id (NUL-terminated, `session_id_len` bytes before the NUL), or NULL.
    pub session_id: *const c_char,
    pub session_id_len: usize,
    /// The whole event as JSON, exactly as every face emits it (docs/EVENTS.md); NUL-terminated,
    /// `json_len` bytes before the NUL. It nests arrays and objects at most 102 levels deep
    /// (agent messages nested past 100 levels are refused, not forwarded), so a JSON parser with
    /// a recursion limit of 128 or more (cJSON's is 1,000) reads every event.
    pub json: *const c_char,
    pub json_len: usize,
}

/// The C kind and its static NUL-terminated name.
pub(crate) fn kind_of(kind: EventKind) -> (acph_event_kind, &'static str) {
    use acph_event_kind::*;
    match kind {
        EventKind::AgentReady => (ACPH_EVENT_AGENT_READY, "agent_ready\0"),
        EventKind::AgentExited => (ACPH_EVENT_AGENT_EXITED, "agent_exited\0"),
        EventKind::SessionOpened => (ACPH_EVENT_SESSION_OPENED, "session_opened\0"),
        EventKind::SessionClosed => (ACPH_EVENT_SESSION_CLOSED, "session_closed\0"),
        EventKind::SessionUpdate => (ACPH_EVENT_SESSION_UPDATE, "session_update\0"),
        EventKind::TurnStarted => (ACPH_EVENT_TURN_STARTED, "turn_started\0"),
        EventKind::TurnEnded => (ACPH_EVENT_TURN_ENDED, "turn_ended\0"),
        EventKind::PermissionRequested => {
            (ACPH_EVENT_PERMISSION_REQUESTED, "permission_requested\0")
        }
        EventKind::PermissionResolved => (ACPH_EVENT_PERMISSION_RESOLVED, "permission_resolved\0"),
        EventKind::FsRead => (ACPH_EVENT_FS_READ, "fs_read\0"),
        EventKind::FsWrite => (ACPH_EVENT_FS_WRITE, "fs_write\0"),
        EventKind::TerminalCreated => (ACPH_EVENT_TERMINAL_CREATED, "terminal_created\0"),
        EventKind::TerminalExited => (ACPH_EVENT_TERMINAL_EXITED, "terminal_exited\0"),
        EventKind::AgentStderr => (ACPH_EVENT_AGENT_STDERR, "agent_stderr\0"),
        EventKind::ProtocolNoise => (ACPH_EVENT_PROTOCOL_NOISE, "protocol_noise\0"),
        EventKind::ProtocolError => (ACPH_EVENT_PROTOCOL_ERROR, "protocol_error\0"),
        EventKind::ExtNotification => (ACPH_EVENT_EXT_NOTIFICATION, "ext_notification\0"),
        EventKind::Wire => (ACPH_EVENT_WIRE, "wire\0"),
        EventKind::CallCompleted => (ACPH_EVENT_CALL_COMPLETED, "call_completed\0"),
        EventKind::ElicitationRequested => {
            (ACPH_EVENT_ELICITATION_REQUESTED, "elicitation_requested\0")
        }
        EventKind::ElicitationResolved => {
            (ACPH_EVENT_ELICITATION_RESOLVED, "elicitation_resolved\0")
        }
        EventKind::ElicitationCompleted => {
            (ACPH_EVENT_ELICITATION_COMPLETED, "elicitation_completed\0")
        }
        EventKind::ExtRequest => (ACPH_EVENT_EXT_REQUEST, "ext_request\0"),
        EventKind::ServiceRequested => (ACPH_EVENT_SERVICE_REQUESTED, "service_requested\0"),
        EventKind::AgentRestarting => (ACPH_EVENT_AGENT_RESTARTING, "agent_restarting\0"),
        EventKind::AgentRestarted => (ACPH_EVENT_AGENT_RESTARTED, "agent_restarted\0"),
        EventKind::AgentFailed => (ACPH_EVENT_AGENT_FAILED, "agent_failed\0"),
        EventKind::SessionLost => (ACPH_EVENT_SESSION_LOST, "session_lost\0"),
        EventKind::Progress => (ACPH_EVENT_PROGRESS, "progress\0"),
        EventKind::Steer => (ACPH_EVENT_STEER, "steer\0"),
        other => (ACPH_EVENT_UNKNOWN, unknown_name(other)),
    }
}

/// A kind newer than this mapping: its name, leaked once per kind (there are few).
fn unknown_name(kind: EventKind) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashMap<&'static str, &'static str>>> = OnceLock::new();
    let name = kind.as_str();
    let names = NAMES.get_or_init(Default::default);
    let mut names = names.lock().unwrap_or_else(|p| p.into_inner());
    names
        .entry(name)
        .or_insert_with(|| Box::leak(format!("{name}\0").into_boxed_str()))
}
