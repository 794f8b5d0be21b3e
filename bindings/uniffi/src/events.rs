//! The host's event stream, pulled: `next_batch` waits for at least one event and returns what is
//! queued (up to `max`), so a consumer that stops pulling stops the agents' stdout being read
//! (the core's backpressure) and nothing is dropped. Kotlin wraps it in a `Flow`.

use std::sync::Arc;

use serde::Deserialize;

use crate::runtime::on_rt;
use acp_host::HubReader;

/// One event of the envelope in docs/EVENTS.md. `data` is the payload as JSON text (for
/// protocol-derived events the ACP JSON exactly as the agent sent it).
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct RawEvent {
    /// Strictly increasing per host: the one total order.
    pub seq: u64,
    /// When the host observed it (RFC 3339, UTC, milliseconds).
    pub at: String,
    /// The host's id for the agent (0: none).
    pub agent: u64,
    pub session: Option<String>,
    pub turn: Option<u64>,
    /// The kind (snake_case; unknown future kinds must be tolerated).
    pub kind: String,
    /// True for updates replayed by `session/load`.
    pub replay: bool,
    /// For `session_update`: `data.sessionUpdate` (the update's discriminator).
    pub update_kind: Option<String>,
    /// For `session_update` whose `content` is a text block (message, thought and user chunks):
    /// its text, so a UI can append it without parsing `data`.
    pub text: Option<String>,
    pub data: String,
    /// For the supervisor's kinds (`agent_restarting`, `agent_restarted`, `agent_failed`,
    /// `session_lost`): their `data`, typed.
    #[uniffi(default = None)]
    pub supervisor: Option<SupervisorEvent>,
    /// Only on the first event a session stream yields, when the session's history had
    /// overflowed before the stream was opened: how many of its events were left out.
    #[uniffi(default = None)]
    pub dropped: Option<u64>,
}

/// An error as an event carries it: `{kind, message, data}` (kinds in docs/ERRORS.md).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct EventError {
    /// The stable error kind (`agent_exited`, `spawn_failed`, `unsupported`, …).
    pub kind: String,
    pub message: String,
    /// The kind's details as JSON text (`agent_exited`: `{exitCode, signal, stderrTail}`), or
    /// null.
    pub data: Option<String>,
}

/// How a session came back after a restart.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RecoveredSession {
    pub session_id: String,
    /// `resume` or `load` (a load replays the conversation as `replay` updates first).
    pub via: String,
}

/// The data of a supervised agent's events (docs/EVENTS.md).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum SupervisorEvent {
    /// `agent_restarting`: the process ended (or the previous attempt failed, `error` says
    /// why); restart attempt number `attempt` starts after the delay, in milliseconds.
    AgentRestarting {
        attempt: u32,
        max_restarts: u32,
        delay_ms: u64,
        error: EventError,
    },
    /// `agent_restarted`: the new process (`pid`) is the agent's; its `Agent` and `Session`
    /// objects reach it. `lost`: the session ids that could not be reopened.
    AgentRestarted {
        attempt: u32,
        pid: Option<u32>,
        recovered: Vec<RecoveredSession>,
        lost: Vec<String>,
    },
    /// `agent_failed`: the supervisor gave up after `attempts` attempts; the agent stays down.
    AgentFailed { attempts: u32, error: EventError },
    /// `session_lost`: a session that could not be reopened on the restarted agent.
    SessionLost {
        session_id: String,
        error: EventError,
    },
}

impl From<acp_host::events::payload::ErrorInfo> for EventError {
    fn from(e: acp_host::events::payload::ErrorInfo) -> EventError {
        EventError {
            kind: e.kind,
            message: e.message,
            data: e.data.filter(|d| !d.is_null()).map(|d| d.to_string()),
        }
    }
}

impl SupervisorEvent {
    fn of(ev: &acp_host::Event) -> Option<SupervisorEvent> {
        use acp_host::EventKind as K;
        use acp_host::events::Payload as P;
        if !matches!(
            ev.kind,
            K::AgentRestarting | K::AgentRestarted | K::AgentFailed | K::SessionLost
        ) {
            return None;
        }
        Some(match ev.decode().payload {
            P::AgentRestarting(p) => SupervisorEvent::AgentRestarting {
                attempt: p.attempt,
                max_restarts: p.max_restarts,
                delay_ms: p.delay_ms,
                error: p.error.into(),
            },
            P::AgentRestarted(p) => SupervisorEvent::AgentRestarted {
                attempt: p.attempt,
                pid: p.pid,
                recovered: p
                    .recovered
                    .into_iter()
                    .map(|r| RecoveredSession {
                        session_id: r.session_id,
                        via: r.via,
                    })
                    .collect(),
                lost: p.lost,
            },
            P::AgentFailed(p) => SupervisorEvent::AgentFailed {
                attempts: p.attempts,
                error: p.error.into(),
            },
            P::SessionLost(p) => SupervisorEvent::SessionLost {
                session_id: p.session_id,
                error: p.error.into(),
            },
            _ => return None,
        })
    }
}

impl RawEvent {
    pub(crate) fn from_core(ev: &acp_host::Event) -> RawEvent {
        let (update_kind, text) = if ev.kind == acp_host::EventKind::SessionUpdate {
            match serde_json::from_str::<UpdateKind>(ev.data.get()) {
                Ok(u) => (
                    u.session_update,
                    u.content
                        .filter(|c| c.kind.as_deref() == Some("text"))
                        .and_then(|c| c.text),
                ),
                Err(_) => (None, None),
            }
        } else {
            (None, None)
        };
        RawEvent {
            seq: ev.seq,
            at: acp_host::events::format_timestamp(ev.at),
            agent: ev.agent,
            session: ev.session.as_deref().map(str::to_owned),
            turn: ev.turn,
            kind: ev.kind.as_str().to_owned(),
            replay: ev.replay,
            update_kind,
            text,
            data: ev.data.get().to_owned(),
            supervisor: SupervisorEvent::of(ev),
            dropped: None,
        }
    }
}

/// The discriminator of an update and its text content (the rest is not parsed here; a
/// `content` that is not one content block, e.g. a tool call's list, is ignored).
#[derive(serde::Deserialize)]
struct UpdateKind {
    #[serde(rename = "sessionUpdate")]
    session_update: Option<String>,
    #[serde(default, deserialize_with = "block_or_none")]
    content: Option<Block>,
}

#[derive(serde::Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
}

fn block_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Block>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

// The core's host reader or one of its live readers (`acp_host::EventHub`).
/// One of the host's event streams ([`crate::Host::event_stream`]; any number may be open, each
/// sees every event from its start, in `seq` order).
#[derive(Debug, uniffi::Object)]
pub struct EventStream {
    reader: Arc<HubReader>,
}

impl EventStream {
    pub(crate) fn new(reader: HubReader) -> EventStream {
        EventStream {
            reader: Arc::new(reader),
        }
    }
}

impl Drop for EventStream {
    /// Closing the stream (a Kotlin collection that ended) drops later events, so a reader that
    /// went away never stalls the agents (also while a pull is still in flight).
    fn drop(&mut self) {
        self.reader.close();
    }
}

/// Up to `max` (1 when 0) events of `reader`, waiting for at least one; empty once it ended.
async fn pull(reader: &Arc<HubReader>, max: u32) -> Vec<RawEvent> {
    let reader = reader.clone();
    on_rt(async move {
        reader
            .next_batch((max as usize).max(1))
            .await
            .iter()
            .map(|e| RawEvent::from_core(e))
            .collect()
    })
    .await
}

#[uniffi::export]
impl EventStream {
    /// Wait for the next events: at least one, at most `max` (1 when 0). Empty only when the
    /// stream ended (the host was shut down and everything was delivered).
    pub async fn next_batch(&self, max: u32) -> Vec<RawEvent> {
        pull(&self.reader, max).await
    }

    /// How many events were dropped because they arrived before the first stream was opened and
    /// the buffer that holds them (as large as the core's queue) was full (0 for later streams).
    pub fn dropped_before_taken(&self) -> u64 {
        self.reader.dropped()
    }

    /// True once the stream ended and everything was delivered.
    pub fn is_ended(&self) -> bool {
        self.reader.is_ended()
    }
}

/// The events of one session (`Session.eventStream`; Kotlin `session.events()`): from the
/// oldest its bounded history still holds (from `session_opened` unless the history overflowed:
/// then the first event's `dropped` says how many were left out), then live, until its
/// `session_closed` or the host's end. While it is open, `prompt` returns only after it has
/// handed on the turn's `turn_ended`.
// The core's session reader (`acp_host::EventHub`).
#[derive(Debug, uniffi::Object)]
pub struct SessionEventStream {
    reader: Arc<HubReader>,
    first: std::sync::atomic::AtomicBool,
}

impl SessionEventStream {
    pub(crate) fn new(reader: HubReader) -> SessionEventStream {
        SessionEventStream {
            reader: Arc::new(reader),
            first: std::sync::atomic::AtomicBool::new(true),
        }
    }
}

impl Drop for SessionEventStream {
    fn drop(&mut self) {
        self.reader.close();
    }
}

#[uniffi::export]
impl SessionEventStream {
    /// Wait for the session's next events: at least one, at most `max` (1 when 0). Empty only
    /// when the stream ended (its `session_closed` was delivered, or the host ended). Calling
    /// it again says the previous batch was handed on.
    pub async fn next_batch(&self, max: u32) -> Vec<RawEvent> {
        let mut out = pull(&self.reader, max).await;
        let missed = self.reader.missed();
        if let Some(e) = out.first_mut()
            && self.first.swap(false, std::sync::atomic::Ordering::SeqCst)
            && missed > 0
        {
            e.dropped = Some(missed);
        }
        out
    }

    /// How many of the session's events were left out before this stream's first one (its
    /// history had overflowed before the stream was opened); 0 normally.
    pub fn missed(&self) -> u64 {
        self.reader.missed()
    }
}
