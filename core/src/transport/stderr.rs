//! Agent stderr: always drained, kept as a bounded tail for exit errors, reported as events.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncRead;

use tokio::sync::mpsc;

use crate::events::{EventKind, PendingEvent, raw_json};
use crate::wire::{Frame, LineReader};

/// Bounded tail of the agent's stderr, shared with the connection for exit reports.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail {
    inner: Arc<Mutex<TailInner>>,
}

#[derive(Debug, Default)]
struct TailInner {
    bytes: VecDeque<u8>,
    limit: usize,
}

impl StderrTail {
    pub fn new(limit: usize) -> Self {
        StderrTail {
            inner: Arc::new(Mutex::new(TailInner {
                bytes: VecDeque::new(),
                limit,
            })),
        }
    }

    fn push_line(&self, line: &[u8]) {
        let mut t = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let limit = t.limit;
        t.bytes.extend(line.iter().copied());
        t.bytes.push_back(b'\n');
        let excess = t.bytes.len().saturating_sub(limit);
        if excess > 0 {
            t.bytes.drain(..excess);
        }
    }

    /// The tail as text (lossy), starting at a line boundary when it was truncated.
    pub fn snapshot(&self) -> String {
        let t = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (a, b) = t.bytes.as_slices();
        let mut v = Vec::with_capacity(a.len() + b.len());
        v.extend_from_slice(a);
        v.extend_from_slice(b);
        String::from_utf8_lossy(&v).into_owned()
    }
}

/// Longest stderr line reported as one event; longer lines are cut into the tail and reported
/// truncated. Keeps a hostile agent from making us buffer without bound.
const MAX_STDERR_LINE: usize = 64 * 1024;

pub(crate) async fn drain_stderr<R: AsyncRead + Unpin>(
    reader: R,
    tail: StderrTail,
    events: mpsc::Sender<PendingEvent>,
    agent: u64,
) {
    let mut lines = LineReader::new(reader, MAX_STDERR_LINE);
    // Once the connection stops taking lines (it reported `agent_exited`), keep draining into
    // the tail only: a silent pipe would block the agent.
    let mut events = Some(events);
    let mut send = async |ev: PendingEvent| {
        if let Some(tx) = &events
            && tx.send(ev).await.is_err()
        {
            events = None;
        }
    };
    loop {
        match lines.next_frame().await {
            Ok(Some(Frame::Line(line))) => {
                tail.push_line(&line);
                let text = String::from_utf8_lossy(&line);
                tracing::debug!(agent, line = %text, "agent stderr");
                send(PendingEvent::new(
                    agent,
                    EventKind::AgentStderr,
                    raw_json(&serde_json::json!({ "line": text })),
                ))
                .await;
            }
            Ok(Some(Frame::TooLong { len })) => {
                tail.push_line(format!("[stderr line of {len} bytes omitted]").as_bytes());
                send(PendingEvent::new(
                    agent,
                    EventKind::AgentStderr,
                    raw_json(&serde_json::json!({ "line": "", "omittedBytes": len })),
                ))
                .await;
            }
            Ok(None) | Err(_) => break,
        }
    }
}
