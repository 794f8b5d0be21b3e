//! The public event envelope: one ordered, sequence-numbered stream per host.
//!
//! Every face emits exactly [`Event::to_json`]; the shape is documented in `docs/EVENTS.md`.

mod bus;
mod decode;
pub mod hub;
pub mod payload;
pub mod payload_v2;

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::value::RawValue;

pub(crate) use bus::{Consumer, EventBus, Pulled};
pub use bus::{QueueLimits, Waker};
pub use decode::{DecodeNote, Decoded, Payload, lenient, lenient_value};
pub use hub::{EventHub, HubLimits, HubReader, Scope};

/// Decode the `data` of an event of `kind` given as JSON text (what [`Event::decode`] does; for
/// events that crossed a face as JSON).
pub fn decode_data(kind: EventKind, data: &str) -> Decoded {
    decode::decode(kind, data)
}

/// What happened. The string form (`as_str`) is the `kind` field of the JSON envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    AgentReady,
    AgentExited,
    SessionOpened,
    SessionClosed,
    SessionUpdate,
    TurnStarted,
    TurnEnded,
    PermissionRequested,
    PermissionResolved,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationCompleted,
    FsRead,
    FsWrite,
    TerminalCreated,
    TerminalExited,
    AgentStderr,
    ProtocolNoise,
    ProtocolError,
    ExtNotification,
    ExtRequest,
    Wire,
    /// The outcome of a call made through a face's asynchronous call API (C).
    CallCompleted,
    /// An agent's request for the embedder, delivered as an event to be answered by id (C ABI
    /// only: its pull-side services, `"services": "events"`).
    ServiceRequested,
    /// A supervised agent's process died; a restart follows after `delayMs`.
    AgentRestarting,
    /// The restart succeeded: the agent's handles reach the new process.
    AgentRestarted,
    /// The supervisor gave up (restarts exhausted): the agent stays down. Terminal.
    AgentFailed,
    /// A session of a restarted agent could not be reopened.
    SessionLost,
    /// A slow step (spawn, handshake, login) started, is still waiting, ended or failed.
    Progress,
    /// A steer (`Session::steer`) was injected, queued, prompted, rejected or failed.
    Steer,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventKind; 30] = [
        EventKind::AgentReady,
        EventKind::AgentExited,
        EventKind::SessionOpened,
        EventKind::SessionClosed,
        EventKind::SessionUpdate,
        EventKind::TurnStarted,
        EventKind::TurnEnded,
        EventKind::PermissionRequested,
        EventKind::PermissionResolved,
        EventKind::ElicitationRequested,
        EventKind::ElicitationResolved,
        EventKind::ElicitationCompleted,
        EventKind::FsRead,
        EventKind::FsWrite,
        EventKind::TerminalCreated,
        EventKind::TerminalExited,
        EventKind::AgentStderr,
        EventKind::ProtocolNoise,
        EventKind::ProtocolError,
        EventKind::ExtNotification,
        EventKind::ExtRequest,
        EventKind::Wire,
        EventKind::CallCompleted,
        EventKind::ServiceRequested,
        EventKind::AgentRestarting,
        EventKind::AgentRestarted,
        EventKind::AgentFailed,
        EventKind::SessionLost,
        EventKind::Progress,
        EventKind::Steer,
    ];

    /// The kind named `name` (the `kind` field of the JSON envelope).
    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The stable snake_case name used on every face.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::AgentReady => "agent_ready",
            EventKind::AgentExited => "agent_exited",
            EventKind::SessionOpened => "session_opened",
            EventKind::SessionClosed => "session_closed",
            EventKind::SessionUpdate => "session_update",
            EventKind::TurnStarted => "turn_started",
            EventKind::TurnEnded => "turn_ended",
            EventKind::PermissionRequested => "permission_requested",
            EventKind::PermissionResolved => "permission_resolved",
            EventKind::ElicitationRequested => "elicitation_requested",
            EventKind::ElicitationResolved => "elicitation_resolved",
            EventKind::ElicitationCompleted => "elicitation_completed",
            EventKind::FsRead => "fs_read",
            EventKind::FsWrite => "fs_write",
            EventKind::TerminalCreated => "terminal_created",
            EventKind::TerminalExited => "terminal_exited",
            EventKind::AgentStderr => "agent_stderr",
            EventKind::ProtocolNoise => "protocol_noise",
            EventKind::ProtocolError => "protocol_error",
            EventKind::ExtNotification => "ext_notification",
            EventKind::ExtRequest => "ext_request",
            EventKind::Wire => "wire",
            EventKind::CallCompleted => "call_completed",
            EventKind::ServiceRequested => "service_requested",
            EventKind::AgentRestarting => "agent_restarting",
            EventKind::AgentRestarted => "agent_restarted",
            EventKind::AgentFailed => "agent_failed",
            EventKind::SessionLost => "session_lost",
            EventKind::Progress => "progress",
            EventKind::Steer => "steer",
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One observable thing, in the host's total order.
#[derive(Debug, Clone)]
pub struct Event {
    /// Strictly increasing per host; the one total order.
    pub seq: u64,
    /// When the host observed it.
    pub at: SystemTime,
    /// The host's id for the agent.
    pub agent: u64,
    /// The ACP session id, when the event belongs to a session.
    pub session: Option<Arc<str>>,
    /// The host's turn id (per host, increasing), when the event belongs to a prompt turn.
    pub turn: Option<u64>,
    pub kind: EventKind,
    /// True for updates replayed by `session/load`.
    pub replay: bool,
    /// The payload: for protocol-derived events the ACP JSON exactly as the agent sent it.
    pub data: Box<RawValue>,
}

impl Event {
    /// The envelope as compact JSON (documented in `docs/EVENTS.md`).
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.data.get().len() + 128);
        out.push_str("{\"seq\":");
        out.push_str(itoa(self.seq).as_str());
        out.push_str(",\"at\":\"");
        out.push_str(&format_timestamp(self.at));
        out.push_str("\",\"agent\":");
        out.push_str(itoa(self.agent).as_str());
        if let Some(session) = &self.session {
            out.push_str(",\"session\":");
            push_json_string(&mut out, session);
        }
        if let Some(turn) = self.turn {
            out.push_str(",\"turn\":");
            out.push_str(itoa(turn).as_str());
        }
        out.push_str(",\"kind\":\"");
        out.push_str(self.kind.as_str());
        out.push_str("\",\"replay\":");
        out.push_str(if self.replay { "true" } else { "false" });
        out.push_str(",\"data\":");
        out.push_str(self.data.get());
        out.push('}');
        out
    }

    /// The envelope as a `serde_json::Value` (convenience for tests and faces).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.to_json()).unwrap_or(serde_json::Value::Null)
    }

    /// Parse `data` into a `serde_json::Value`.
    pub fn data_value(&self) -> serde_json::Value {
        serde_json::from_str(self.data.get()).unwrap_or(serde_json::Value::Null)
    }

    /// `data` typed by kind ([`payload`] types; ACP parts from the pinned
    /// `agent-client-protocol-schema`), decoded leniently: what does not fit is repaired or left
    /// [`Payload::Unknown`], with [`Decoded::notes`] saying what and where. Decodes on every call
    /// (nothing is decoded on the host's hot path); keep the result when you need it twice.
    pub fn decode(&self) -> Decoded {
        decode::decode(self.kind, self.data.get())
    }

    /// For `session_update` events: the `sessionUpdate` discriminator.
    pub fn update_kind(&self) -> Option<String> {
        if self.kind != EventKind::SessionUpdate {
            return None;
        }
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(rename = "sessionUpdate")]
            session_update: Option<String>,
        }
        serde_json::from_str::<Head>(self.data.get())
            .ok()
            .and_then(|h| h.session_update)
    }
}

fn itoa(n: u64) -> String {
    n.to_string()
}

fn push_json_string(out: &mut String, s: &str) {
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

/// RFC 3339 UTC with millisecond precision, e.g. `2026-11-30T14:00:00.123Z`: the `at` of every
/// event in every face (the faces call this; there is one implementation).
pub fn format_timestamp(at: SystemTime) -> String {
    let dt = time::OffsetDateTime::from(at);
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    dt.format(&fmt).unwrap_or_default()
}

/// A JSON payload for an event, from any serialisable value.
pub(crate) fn raw_json<T: serde::Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| empty_object())
}

pub(crate) fn empty_object() -> Box<RawValue> {
    // `{}` is valid JSON; from_string cannot fail on it.
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| unreachable_raw())
}

#[allow(clippy::unwrap_used)]
fn unreachable_raw() -> Box<RawValue> {
    serde_json::value::to_raw_value(&serde_json::Value::Null).unwrap()
}

/// An event before it gets its place in the total order.
#[derive(Debug)]
pub(crate) struct PendingEvent {
    pub agent: u64,
    pub session: Option<Arc<str>>,
    pub turn: Option<u64>,
    pub kind: EventKind,
    pub replay: bool,
    pub data: Box<RawValue>,
    /// For a `tool_call_update` when coalescing is on: its `toolCallId`.
    pub coalesce: Option<Arc<str>>,
}

impl PendingEvent {
    pub fn new(agent: u64, kind: EventKind, data: Box<RawValue>) -> Self {
        PendingEvent {
            agent,
            session: None,
            turn: None,
            kind,
            replay: false,
            data,
            coalesce: None,
        }
    }
    pub fn session(mut self, session: Option<Arc<str>>) -> Self {
        self.session = session;
        self
    }
    pub fn turn(mut self, turn: Option<u64>) -> Self {
        self.turn = turn;
        self
    }
    pub fn replay(mut self, replay: bool) -> Self {
        self.replay = replay;
        self
    }
    pub fn coalesce(mut self, tool_call_id: Option<Arc<str>>) -> Self {
        self.coalesce = tool_call_id;
        self
    }

    pub(crate) fn into_event(self, seq: u64, at: SystemTime) -> Event {
        Event {
            seq,
            at,
            agent: self.agent,
            session: self.session,
            turn: self.turn,
            kind: self.kind,
            replay: self.replay,
            data: self.data,
        }
    }
}
