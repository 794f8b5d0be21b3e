//! One pump between the core's single event stream and this face's readers: the host stream
//! (`Host.eventStream`, Kotlin `host.events()`) and any number of session streams
//! (`Session.eventStream`, Kotlin `session.events()`).
//!
//! Why: a session stream must miss nothing of its session whenever it is opened after
//! `session_opened` (so each session keeps a bounded history, and a stream says how much of it
//! was left out), and `prompt()` must not return before the turn's events reached the streams
//! that read that session (so a prompt waits until every open session stream has taken the
//! turn's `turn_ended` and come back for more — the Kotlin flow has then emitted it).
//!
//! Bounds and backpressure: the host stream holds at most `eventCapacity` events /
//! `eventQueueBytes` bytes once taken (before, the oldest are dropped and counted, so a host
//! whose events nobody reads never stalls its agents); a session's history holds at most
//! `earlyUpdateLimit` events / `eventQueueBytes` bytes, its oldest dropped only when no open
//! stream of the session still has to read it. When a reader is full, the pump waits: the core's
//! queue fills and the agents are no longer read. Nothing is dropped silently.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use acp_host::{Event, EventKind};
use tokio::sync::Notify;

use crate::error::AcpError;

/// Closed sessions whose history is kept for late readers.
const CLOSED_KEPT: usize = 64;
/// Turn ends remembered per session (a prompt looks its own up right after it returns).
const TURN_ENDS_KEPT: usize = 64;

type Key = (u64, Arc<str>);

fn size(ev: &Event) -> usize {
    ev.data.get().len() + 128
}

#[derive(Debug, Default)]
struct HostQueue {
    events: VecDeque<Arc<Event>>,
    bytes: usize,
    /// Dropped before the stream was taken.
    dropped: u64,
    taken: bool,
    closed: bool,
}

#[derive(Debug, Default)]
struct Log {
    events: VecDeque<Arc<Event>>,
    /// The index (in the session's whole sequence of events) of `events[0]`.
    base: u64,
    bytes: usize,
    /// (turn, index of its `turn_ended`).
    turn_ends: VecDeque<(u64, u64)>,
    /// Open streams: id → the index of the next event it takes, and what it has handed on.
    readers: HashMap<u64, Reader>,
    closed: bool,
}

#[derive(Debug, Clone, Copy)]
struct Reader {
    next: u64,
    /// Everything before this was taken and the reader came back for more.
    done: u64,
}

impl Log {
    fn end(&self) -> u64 {
        self.base + self.events.len() as u64
    }
}

#[derive(Debug, Default)]
struct State {
    host: HostQueue,
    sessions: HashMap<Key, Log>,
    closed: VecDeque<Key>,
    next_reader: u64,
    /// The core's stream ended (the host was shut down and everything was pulled).
    ended: bool,
}

#[derive(Debug)]
pub(crate) struct Hub {
    state: Mutex<State>,
    changed: Notify,
    max_events: usize,
    max_bytes: usize,
    history_events: usize,
    stall: Option<Duration>,
}

impl Hub {
    /// Start pumping `stream` (inside the runtime).
    pub(crate) fn start(stream: acp_host::EventStream, config: &acp_host::HostConfig) -> Arc<Hub> {
        let hub = Arc::new(Hub {
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            max_events: config.event_capacity.max(1),
            max_bytes: config.event_queue_bytes.max(1),
            history_events: config.early_update_limit.max(1),
            stall: config.event_stall_timeout,
        });
        let pump = hub.clone();
        crate::runtime::rt().spawn(async move {
            while let Some(ev) = stream.next().await {
                pump.put(Arc::new(ev)).await;
            }
            if let Some(mut s) = pump.lock() {
                s.ended = true;
            }
            pump.changed.notify_waiters();
        });
        hub
    }

    fn lock(&self) -> Option<MutexGuard<'_, State>> {
        self.state.lock().ok()
    }

    /// Hand `ev` to the host queue and its session's history, waiting while a reader is full.
    async fn put(&self, ev: Arc<Event>) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let Some(mut s) = self.lock() else { return };
                if self.room(&mut s, &ev) {
                    self.push(&mut s, ev);
                    drop(s);
                    self.changed.notify_waiters();
                    return;
                }
            }
            notified.await;
        }
    }

    /// Whether `ev` fits now (evicting what may be evicted).
    fn room(&self, s: &mut State, ev: &Event) -> bool {
        let n = size(ev);
        let h = &s.host;
        if h.taken
            && !h.closed
            && !h.events.is_empty()
            && (h.events.len() >= self.max_events || h.bytes + n > self.max_bytes)
        {
            return false;
        }
        if let Some(id) = &ev.session
            && let Some(log) = s.sessions.get_mut(&(ev.agent, id.clone()))
        {
            while !log.events.is_empty()
                && (log.events.len() >= self.history_events || log.bytes + n > self.max_bytes)
            {
                if log.readers.values().any(|r| r.next <= log.base) {
                    return false;
                }
                if let Some(old) = log.events.pop_front() {
                    log.bytes -= size(&old);
                    log.base += 1;
                }
            }
        }
        true
    }

    fn push(&self, s: &mut State, ev: Arc<Event>) {
        let n = size(&ev);
        let h = &mut s.host;
        if !h.closed {
            h.events.push_back(ev.clone());
            h.bytes += n;
            if !h.taken {
                while h.events.len() > self.max_events
                    || (h.bytes > self.max_bytes && h.events.len() > 1)
                {
                    if let Some(old) = h.events.pop_front() {
                        h.bytes -= size(&old);
                        h.dropped += 1;
                    }
                }
            }
        }
        let Some(id) = ev.session.clone() else { return };
        let key = (ev.agent, id);
        let log = s.sessions.entry(key.clone()).or_default();
        if ev.kind == EventKind::TurnEnded
            && let Some(turn) = ev.turn
        {
            log.turn_ends.push_back((turn, log.end()));
            if log.turn_ends.len() > TURN_ENDS_KEPT {
                log.turn_ends.pop_front();
            }
        }
        match ev.kind {
            EventKind::SessionClosed => log.closed = true,
            EventKind::SessionOpened => log.closed = false,
            _ => {}
        }
        let closed = log.closed;
        log.bytes += n;
        log.events.push_back(ev);
        if closed {
            s.closed.retain(|k| *k != key);
            s.closed.push_back(key);
            while s.closed.len() > CLOSED_KEPT {
                if let Some(old) = s.closed.pop_front()
                    && s.sessions
                        .get(&old)
                        .is_some_and(|l| l.closed && l.readers.is_empty())
                {
                    s.sessions.remove(&old);
                }
            }
        }
    }

    /// The host stream is taken: from now on it is bounded by backpressure, not by dropping.
    pub(crate) fn take_host(&self) -> bool {
        let Some(mut s) = self.lock() else {
            return false;
        };
        let taken = !s.host.taken;
        s.host.taken = true;
        taken
    }

    /// Up to `limit` events of the host stream; waits for at least one. Empty: the stream ended.
    pub(crate) async fn next_host(&self, limit: usize) -> Vec<Arc<Event>> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let Some(mut s) = self.lock() else {
                    return Vec::new();
                };
                let h = &mut s.host;
                if h.closed {
                    return Vec::new();
                }
                if !h.events.is_empty() {
                    let n = limit.min(h.events.len());
                    let out: Vec<_> = h.events.drain(..n).collect();
                    h.bytes -= out.iter().map(|e| size(e)).sum::<usize>();
                    drop(s);
                    self.changed.notify_waiters();
                    return out;
                }
                if s.ended {
                    return Vec::new();
                }
            }
            notified.await;
        }
    }

    pub(crate) fn close_host(&self) {
        if let Some(mut s) = self.lock() {
            s.host.closed = true;
            s.host.events.clear();
            s.host.bytes = 0;
        }
        self.changed.notify_waiters();
    }

    pub(crate) fn host_dropped(&self) -> u64 {
        self.lock().map(|s| s.host.dropped).unwrap_or(0)
    }

    pub(crate) fn host_ended(&self) -> bool {
        self.lock()
            .map(|s| s.host.closed || (s.ended && s.host.events.is_empty()))
            .unwrap_or(true)
    }

    /// A new reader of a session, from the oldest event its history still holds; with how
    /// many of the session's events were left out before that one.
    pub(crate) fn open_session(&self, agent: u64, session: &str) -> (u64, u64) {
        let Some(mut s) = self.lock() else {
            return (0, 0);
        };
        s.next_reader += 1;
        let id = s.next_reader;
        let log = s.sessions.entry((agent, Arc::from(session))).or_default();
        let base = log.base;
        log.readers.insert(
            id,
            Reader {
                next: base,
                done: base,
            },
        );
        (id, base)
    }

    /// Up to `limit` events of a session for reader `id`; waits for at least one. Empty: the
    /// session was closed (its `session_closed` was delivered) or the host ended.
    pub(crate) async fn next_session(
        &self,
        agent: u64,
        session: &str,
        id: u64,
        limit: usize,
    ) -> Vec<Arc<Event>> {
        let key: Key = (agent, Arc::from(session));
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let Some(mut s) = self.lock() else {
                    return Vec::new();
                };
                let ended = s.ended;
                let Some(log) = s.sessions.get_mut(&key) else {
                    return Vec::new();
                };
                let (base, end) = (log.base, log.end());
                let Some(r) = log.readers.get_mut(&id) else {
                    return Vec::new();
                };
                // Coming back for more: everything taken before was handed on.
                let moved = r.done != r.next;
                r.done = r.next;
                let from = r.next.max(base);
                if from < end {
                    let to = end.min(from + limit as u64);
                    r.next = to;
                    let out: Vec<_> = log
                        .events
                        .range((from - base) as usize..(to - base) as usize)
                        .cloned()
                        .collect();
                    drop(s);
                    self.changed.notify_waiters();
                    return out;
                }
                let last_closed = log
                    .events
                    .back()
                    .is_some_and(|e| e.kind == EventKind::SessionClosed);
                if ended || (log.closed && last_closed) {
                    return Vec::new();
                }
                drop(s);
                if moved {
                    // A prompt waiting for this reader may go on.
                    self.changed.notify_waiters();
                }
            }
            notified.await;
        }
    }

    pub(crate) fn close_session(&self, agent: u64, session: &str, id: u64) {
        if let Some(mut s) = self.lock()
            && let Some(log) = s.sessions.get_mut(&(agent, Arc::from(session)))
        {
            log.readers.remove(&id);
        }
        self.changed.notify_waiters();
    }

    /// Wait until turn `turn` of the session has its `turn_ended` in the session's history and
    /// every open stream of the session has handed it on. `EventsStalled` when nothing moves
    /// for `eventStallTimeoutMs`.
    pub(crate) async fn delivered(
        &self,
        agent: u64,
        session: &str,
        turn: u64,
    ) -> Result<(), AcpError> {
        let key: Key = (agent, Arc::from(session));
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let Some(s) = self.lock() else { return Ok(()) };
                if s.ended {
                    return Ok(());
                }
                if let Some(log) = s.sessions.get(&key)
                    && let Some(&(_, at)) = log.turn_ends.iter().find(|(t, _)| *t == turn)
                    && log.readers.values().all(|r| r.done > at)
                {
                    return Ok(());
                }
            }
            match self.stall {
                Some(d) => {
                    if tokio::time::timeout(d, notified).await.is_err() {
                        return Err(AcpError::EventsStalled {
                            detail: format!(
                                "turn {turn} ended, but an open event stream of its session took nothing for {} ms (a prompt awaited inside that session's own collector waits for itself: launch it instead)",
                                d.as_millis()
                            ),
                            data: None,
                        });
                    }
                }
                None => notified.await,
            }
        }
    }
}
