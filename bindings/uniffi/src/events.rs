//! The host's event stream, pulled: `next_batch` waits for at least one event and returns what is
//! queued (up to `max`), so a consumer that stops pulling stops the agents' stdout being read
//! (the core's backpressure) and nothing is dropped. Kotlin wraps it in a `Flow`.

use std::sync::Arc;

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
    pub data: String,
}

impl RawEvent {
    pub(crate) fn from_core(ev: &acp_host::Event) -> RawEvent {
        let update_kind = if ev.kind == acp_host::EventKind::SessionUpdate {
            serde_json::from_str::<UpdateKind>(ev.data.get())
                .ok()
                .and_then(|u| u.session_update)
        } else {
            None
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
            data: ev.data.get().to_owned(),
        }
    }
}

/// Only the discriminator of an update (the rest of the payload is not parsed here).
#[derive(serde::Deserialize)]
struct UpdateKind {
    #[serde(rename = "sessionUpdate")]
    session_update: Option<String>,
}

/// The host's single event stream ([`crate::Host::events`]).
#[derive(Debug, uniffi::Object)]
pub struct EventStream {
    inner: Arc<acp_host::EventStream>,
}

impl EventStream {
    pub(crate) fn new(inner: acp_host::EventStream) -> EventStream {
        EventStream {
            inner: Arc::new(inner),
        }
    }
}

#[uniffi::export]
impl EventStream {
    /// Wait for the next events: at least one, at most `max` (1 when 0). Empty only when the
    /// stream ended (the host was shut down and everything was delivered).
    pub async fn next_batch(&self, max: u32) -> Vec<RawEvent> {
        let inner = self.inner.clone();
        let limit = (max as usize).max(1);
        on_rt(async move {
            let mut buf = Vec::with_capacity(limit.min(1024));
            inner.next_batch(&mut buf, limit).await;
            buf.iter().map(RawEvent::from_core).collect()
        })
        .await
    }

    /// The events already queued (at most `max`), without waiting.
    pub fn try_next_batch(&self, max: u32) -> Vec<RawEvent> {
        let mut out = Vec::new();
        while out.len() < (max as usize).max(1) {
            match self.inner.try_next() {
                Some(ev) => out.push(RawEvent::from_core(&ev)),
                None => break,
            }
        }
        out
    }

    /// True once the stream ended and everything was delivered.
    pub fn is_ended(&self) -> bool {
        self.inner.is_ended()
    }
}
