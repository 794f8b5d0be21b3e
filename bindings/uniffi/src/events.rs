//! The host's event stream, pulled: `next_batch` waits for at least one event and returns what is
//! queued (up to `max`), so a consumer that stops pulling stops the agents' stdout being read
//! (the core's backpressure) and nothing is dropped. Kotlin wraps it in a `Flow`.

use std::sync::Arc;

use serde::Deserialize;

use crate::runtime::on_rt;

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

/// Until the embedder takes the stream, events are drained into this buffer (bounded like the
/// core's queue, the oldest dropped first) so a host whose events nobody reads never stalls its
/// agents (`events_stalled`); the first puller gets the buffer, then the live stream.
#[derive(Debug, Default)]
struct Early {
    queue: std::collections::VecDeque<acp_host::Event>,
    bytes: usize,
    dropped: u64,
}

/// The core's stream plus the drain that runs until the stream is taken.
#[derive(Debug)]
pub(crate) struct Pending {
    inner: Arc<acp_host::EventStream>,
    early: Arc<std::sync::Mutex<Early>>,
    stop: Arc<tokio::sync::Notify>,
    drain: tokio::task::JoinHandle<()>,
}

impl Pending {
    /// Start draining `stream` (inside the runtime) into a buffer of at most `max_events` /
    /// `max_bytes`.
    pub(crate) fn start(
        stream: acp_host::EventStream,
        max_events: usize,
        max_bytes: usize,
    ) -> Pending {
        let inner = Arc::new(stream);
        let early = Arc::new(std::sync::Mutex::new(Early::default()));
        let stop = Arc::new(tokio::sync::Notify::new());
        let drain = crate::runtime::rt().spawn({
            let (inner, early, stop) = (inner.clone(), early.clone(), stop.clone());
            async move {
                loop {
                    let ev = tokio::select! {
                        biased;
                        () = stop.notified() => return,
                        ev = inner.next() => ev,
                    };
                    let Some(ev) = ev else { return };
                    let Ok(mut e) = early.lock() else { return };
                    e.bytes += ev.data.get().len();
                    e.queue.push_back(ev);
                    while e.queue.len() > max_events.max(1)
                        || (e.bytes > max_bytes && e.queue.len() > 1)
                    {
                        if let Some(old) = e.queue.pop_front() {
                            e.bytes -= old.data.get().len();
                            e.dropped += 1;
                        }
                    }
                }
            }
        });
        Pending {
            inner,
            early,
            stop,
            drain,
        }
    }

    /// Hand the stream to its reader: the drain stops (it is awaited before the first pull).
    pub(crate) fn take(self) -> EventStream {
        self.stop.notify_one();
        EventStream {
            inner: self.inner,
            early: self.early,
            drain: std::sync::Mutex::new(Some(self.drain)),
        }
    }
}

/// The host's single event stream ([`crate::Host::event_stream`]).
#[derive(Debug, uniffi::Object)]
pub struct EventStream {
    inner: Arc<acp_host::EventStream>,
    early: Arc<std::sync::Mutex<Early>>,
    /// The drain of [`Pending`], awaited once before the first pull.
    drain: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl EventStream {
    /// Up to `limit` events from the buffer of events that arrived before the stream was taken.
    fn early(&self, limit: usize) -> Vec<RawEvent> {
        let Ok(mut e) = self.early.lock() else {
            return Vec::new();
        };
        let n = limit.min(e.queue.len());
        let out: Vec<RawEvent> = e
            .queue
            .drain(..n)
            .map(|ev| RawEvent::from_core(&ev))
            .collect();
        e.bytes = e.queue.iter().map(|ev| ev.data.get().len()).sum();
        out
    }
}

#[uniffi::export]
impl EventStream {
    /// Wait for the next events: at least one, at most `max` (1 when 0). Empty only when the
    /// stream ended (the host was shut down and everything was delivered).
    pub async fn next_batch(&self, max: u32) -> Vec<RawEvent> {
        let limit = (max as usize).max(1);
        let drain = self.drain.lock().ok().and_then(|mut d| d.take());
        if let Some(drain) = drain {
            let _ = on_rt(drain).await;
        }
        let early = self.early(limit);
        if !early.is_empty() {
            return early;
        }
        let inner = self.inner.clone();
        on_rt(async move {
            let mut buf = Vec::with_capacity(limit.min(1024));
            inner.next_batch(&mut buf, limit).await;
            buf.iter().map(RawEvent::from_core).collect()
        })
        .await
    }

    /// How many events were dropped because they arrived before the stream was taken and the
    /// buffer that holds them (as large as the core's queue) was full.
    pub fn dropped_before_taken(&self) -> u64 {
        self.early.lock().map(|e| e.dropped).unwrap_or(0)
    }

    /// True once the stream ended and everything was delivered.
    pub fn is_ended(&self) -> bool {
        self.drain.lock().map(|d| d.is_none()).unwrap_or(true)
            && self
                .early
                .lock()
                .map(|e| e.queue.is_empty())
                .unwrap_or(true)
            && self.inner.is_ended()
    }
}
