//! The readers every face needs on top of the host's single ordered stream, built once here.
//!
//! [`EventHub::start`] takes the host's [`EventStream`](crate::EventStream) and pumps it into:
//! - the **host reader** ([`EventHub::take_host`], once): every event from the host's start;
//! - **live readers** ([`EventHub::subscribe`]): every event, or one agent's, from now on (an
//!   agent's ends after that agent's last event);
//! - **session readers** ([`EventHub::session`]): one session's events from the oldest its
//!   bounded history still holds (its `session_opened`, or a load's replay, unless the history
//!   overflowed: then [`HubReader::missed`] says how many were left out), then live, until the
//!   session's last event was handed on or the host's stream ended.
//!
//! Last events (docs/EVENTS.md, "The one session-stream rule"): a session's is its
//! `session_closed` without `"restart": true` or its `session_lost`; an agent's is `agent_failed`
//! or an `agent_exited` without `"restart": true`, and it ends its sessions' readers too. A
//! supervised agent's crash is marked `restart`, so its readers live on across the restart.
//!
//! And [`EventHub::turn_delivered`]: a prompt's answer waits until its turn's `turn_ended` reached
//! every open reader of its session, so a caller that sees the answer has seen the turn's events.
//!
//! Bounds (the host's options): the host reader holds at most `eventCapacity` events /
//! `eventQueueBytes` bytes. Before it is taken the oldest are dropped and counted
//! ([`HubReader::dropped`]), so a host whose events nobody reads never stalls its agents; once
//! taken, a full host reader makes the pump wait. A live reader is bounded the same way and makes
//! the pump wait when full. A session's history holds at most `earlyUpdateLimit` events /
//! `eventQueueBytes` bytes; its oldest are evicted only when no open reader of the session still
//! has to read them, else the pump waits. While the pump waits the core's queue fills and the
//! agents are no longer read (docs/EVENTS.md, "Backpressure"): nothing is lost silently. A reader
//! that is dropped frees whatever it held up. Closed sessions keep their history for late readers,
//! at most [`CLOSED_KEPT`] of them; histories of sessions never opened, at most [`STRAYS_KEPT`].
//!
//! Pulls come in three shapes over one state: async ([`HubReader::next_batch`]), blocking with a
//! timeout for threads outside any runtime ([`HubReader::blocking_next_batch`]) and non-blocking
//! ([`HubReader::try_next_batch`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::{Event, EventKind};
use crate::host::{EventStream, HostConfig};

/// Closed sessions whose history is kept for late readers (older ones are forgotten).
pub const CLOSED_KEPT: usize = 64;
/// Histories of sessions never opened (updates an agent sent for a session id the host does not
/// know are still delivered) kept while nobody reads them: an agent that makes up ids cannot
/// make the hub keep a history per id.
pub const STRAYS_KEPT: usize = 64;
/// Turn ends remembered per session (a prompt looks its own up right after it returns).
const TURN_ENDS_KEPT: usize = 64;
/// Events the pump takes from the core at once.
const PUMP_BATCH: usize = 1024;
/// Ended agents remembered (so a reader of one opened later ends at once). Past it the oldest are
/// forgotten: a reader opened for such an agent then waits until the host's stream ends.
pub const ENDED_AGENTS_KEPT: usize = 65_536;

/// Whether `ev` carries `"restart": true` (a supervisor follows; docs/EVENTS.md).
fn restarts(ev: &Event) -> bool {
    #[derive(serde::Deserialize)]
    struct Mark {
        #[serde(default)]
        restart: bool,
    }
    serde_json::from_str::<Mark>(ev.data.get()).is_ok_and(|m| m.restart)
}

/// Whether `ev` is its agent's last event: `agent_failed`, or `agent_exited` without `restart`.
fn ends_agent(ev: &Event) -> bool {
    match ev.kind {
        EventKind::AgentFailed => true,
        EventKind::AgentExited => !restarts(ev),
        _ => false,
    }
}

/// Whether `ev` is its session's last event: `session_lost`, or `session_closed` without
/// `restart` (a supervised agent's session reopens under the same id).
fn ends_session(ev: &Event) -> bool {
    match ev.kind {
        EventKind::SessionLost => true,
        EventKind::SessionClosed => !restarts(ev),
        _ => false,
    }
}

/// What an event costs a bound: its payload and an estimate for the envelope.
fn size(ev: &Event) -> usize {
    ev.data.get().len() + 128
}

type Key = (u64, Arc<str>);

/// The hub's bounds, from the host's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubLimits {
    /// Events a host or live reader holds (`eventCapacity`).
    pub max_events: usize,
    /// Bytes a reader or a session's history holds (`eventQueueBytes`).
    pub max_bytes: usize,
    /// Events a session's history holds (`earlyUpdateLimit`).
    pub history_events: usize,
    /// How long [`EventHub::turn_delivered`] waits while nothing moves (`eventStallTimeoutMs`;
    /// `None`: for ever).
    pub stall: Option<Duration>,
}

impl HubLimits {
    pub fn from_config(config: &HostConfig) -> HubLimits {
        HubLimits {
            max_events: config.event_capacity.max(1),
            max_bytes: config.event_queue_bytes.max(1),
            history_events: config.early_update_limit.max(1),
            stall: config.event_stall_timeout,
        }
    }
}

/// Which events a live reader sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every event.
    All,
    /// The events of one agent (by the host's id).
    Agent(u64),
}

impl Scope {
    fn accepts(self, ev: &Event) -> bool {
        match self {
            Scope::All => true,
            Scope::Agent(a) => ev.agent == a,
        }
    }
}

/// A bounded queue of its own: the host reader's and each live reader's.
#[derive(Debug, Default)]
struct Queue {
    events: VecDeque<Arc<Event>>,
    bytes: usize,
    closed: bool,
}

impl Queue {
    fn full(&self, limits: &HubLimits, n: usize) -> bool {
        !self.events.is_empty()
            && (self.events.len() >= limits.max_events || self.bytes + n > limits.max_bytes)
    }

    fn push(&mut self, ev: Arc<Event>) {
        self.bytes += size(&ev);
        self.events.push_back(ev);
    }

    fn take(&mut self, limit: usize) -> Vec<Arc<Event>> {
        let n = limit.min(self.events.len());
        let out: Vec<_> = self.events.drain(..n).collect();
        self.bytes -= out.iter().map(|e| size(e)).sum::<usize>();
        out
    }

    fn close(&mut self) {
        self.closed = true;
        self.events = VecDeque::new();
        self.bytes = 0;
    }
}

#[derive(Debug, Default)]
struct HostQueue {
    queue: Queue,
    /// Dropped before the reader was taken.
    dropped: u64,
    taken: bool,
}

#[derive(Debug)]
struct LiveReader {
    scope: Scope,
    queue: Queue,
}

/// One session's history and the cursors of its readers.
#[derive(Debug, Default)]
struct History {
    events: VecDeque<Arc<Event>>,
    /// The index (in the session's whole sequence of events) of `events[0]`.
    base: u64,
    bytes: usize,
    /// (turn, index of its `turn_ended`).
    turn_ends: VecDeque<(u64, u64)>,
    readers: HashMap<u64, Cursor>,
    closed: bool,
    /// The index of its last event (`ends_session`), until it is opened again.
    finished_at: Option<u64>,
    /// Its `session_opened` was seen.
    opened: bool,
}

#[derive(Debug, Clone, Copy)]
struct Cursor {
    /// The index of the next event it takes.
    next: u64,
    /// Everything before this was taken and the reader came back for more (handed on).
    done: u64,
}

impl History {
    fn end(&self) -> u64 {
        self.base + self.events.len() as u64
    }
}

#[derive(Debug, Default)]
struct State {
    host: HostQueue,
    live: HashMap<u64, LiveReader>,
    sessions: HashMap<Key, History>,
    closed: VecDeque<Key>,
    /// Sessions whose history began without a `session_opened`, oldest first.
    strays: VecDeque<Key>,
    next_reader: u64,
    /// The core's stream ended (the host shut down and everything was pumped).
    ended: bool,
    /// Agents whose last event was pumped (at most [`ENDED_AGENTS_KEPT`], oldest first).
    ended_agents: std::collections::HashSet<u64>,
    ended_order: VecDeque<u64>,
}

impl State {
    fn agent_ended(&self, agent: u64) -> bool {
        self.ended_agents.contains(&agent)
    }
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Wakes async waiters (pump, readers, turn waits) after any change.
    changed: Notify,
    /// Wakes blocking readers after any change.
    changed_cv: Condvar,
    limits: HubLimits,
}

/// The host's readers, fed by one pump task (see the module docs). Cheap to clone.
#[derive(Debug, Clone)]
pub struct EventHub {
    shared: Arc<Shared>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(&self) {
        self.changed.notify_waiters();
        self.changed_cv.notify_all();
    }

    /// Whether `ev` fits now (evicting what may be evicted from its session's history).
    fn room(&self, s: &mut State, ev: &Event) -> bool {
        let (l, n) = (&self.limits, size(ev));
        let h = &s.host.queue;
        if s.host.taken && !h.closed && h.full(l, n) {
            return false;
        }
        if s.live
            .values()
            .any(|r| r.scope.accepts(ev) && r.queue.full(l, n))
        {
            return false;
        }
        if let Some(id) = &ev.session
            && let Some(log) = s.sessions.get_mut(&(ev.agent, id.clone()))
        {
            while !log.events.is_empty()
                && (log.events.len() >= l.history_events || log.bytes + n > l.max_bytes)
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
        let l = &self.limits;
        let h = &mut s.host;
        if !h.queue.closed {
            h.queue.push(ev.clone());
            if !h.taken {
                while h.queue.events.len() > l.max_events
                    || (h.queue.bytes > l.max_bytes && h.queue.events.len() > 1)
                {
                    if let Some(old) = h.queue.events.pop_front() {
                        h.queue.bytes -= size(&old);
                        h.dropped += 1;
                    }
                }
            }
        }
        for r in s.live.values_mut() {
            if r.scope.accepts(&ev) {
                r.queue.push(ev.clone());
            }
        }
        if ends_agent(&ev) && s.ended_agents.insert(ev.agent) {
            s.ended_order.push_back(ev.agent);
            while s.ended_order.len() > ENDED_AGENTS_KEPT {
                if let Some(old) = s.ended_order.pop_front() {
                    s.ended_agents.remove(&old);
                }
            }
        }
        let Some(id) = ev.session.clone() else { return };
        let key = (ev.agent, id);
        let log = match s.sessions.entry(key.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                if ev.kind != EventKind::SessionOpened {
                    s.strays.push_back(key.clone());
                }
                e.insert(History::default())
            }
        };
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
            EventKind::SessionOpened => {
                log.closed = false;
                log.finished_at = None;
                log.opened = true;
            }
            _ => {}
        }
        if ends_session(&ev) {
            log.finished_at = Some(log.end());
        }
        let closed = log.closed;
        log.bytes += size(&ev);
        log.events.push_back(ev);
        while s.strays.len() > STRAYS_KEPT {
            if let Some(old) = s.strays.pop_front()
                && s.sessions
                    .get(&old)
                    .is_some_and(|l| !l.opened && l.readers.is_empty())
            {
                s.sessions.remove(&old);
            }
        }
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

    /// Hand `ev` to every reader and history, waiting while one is full.
    async fn put(&self, ev: Arc<Event>) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.lock();
                if self.room(&mut s, &ev) {
                    self.push(&mut s, ev);
                    drop(s);
                    self.wake();
                    return;
                }
            }
            notified.await;
        }
    }
}

impl EventHub {
    /// A hub over the host's stream, pumped by a task spawned on `runtime`.
    pub fn start(
        stream: EventStream,
        config: &HostConfig,
        runtime: &tokio::runtime::Handle,
    ) -> EventHub {
        let hub = EventHub::new(HubLimits::from_config(config));
        let pump = hub.clone();
        runtime.spawn(async move { pump.pump(stream).await });
        hub
    }

    /// Move everything `stream` yields into the readers, then end them (what [`EventHub::start`]
    /// runs; for embedders that run it on a task of their own).
    pub async fn pump(&self, stream: EventStream) {
        let mut buf = Vec::with_capacity(PUMP_BATCH);
        while stream.next_batch(&mut buf, PUMP_BATCH).await > 0 {
            for ev in buf.drain(..) {
                self.shared.put(Arc::new(ev)).await;
            }
        }
        self.end();
    }

    /// A hub without a pump: fed by [`EventHub::feed`] or [`EventHub::pump`], ended by
    /// [`EventHub::end`].
    pub fn new(limits: HubLimits) -> EventHub {
        let limits = HubLimits {
            max_events: limits.max_events.max(1),
            max_bytes: limits.max_bytes.max(1),
            history_events: limits.history_events.max(1),
            stall: limits.stall,
        };
        EventHub {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                changed: Notify::new(),
                changed_cv: Condvar::new(),
                limits,
            }),
        }
    }

    /// Hand one event to the readers, waiting while one is full (what the pump does).
    pub async fn feed(&self, ev: Event) {
        self.shared.put(Arc::new(ev)).await;
    }

    /// End every reader once it has what was fed (what the pump does when the host's stream ends).
    pub fn end(&self) {
        self.shared.lock().ended = true;
        self.shared.wake();
    }

    pub fn limits(&self) -> HubLimits {
        self.shared.limits
    }

    /// Whether the host's stream ended (everything was pumped).
    pub fn is_ended(&self) -> bool {
        self.shared.lock().ended
    }

    /// The host reader: every event from the host's start (less what was dropped before this
    /// call, [`HubReader::dropped`]). `None` when it was taken already.
    pub fn take_host(&self) -> Option<HubReader> {
        let mut s = self.shared.lock();
        if s.host.taken {
            return None;
        }
        s.host.taken = true;
        drop(s);
        Some(self.reader(Kind::Host, 0))
    }

    /// A live reader: the events of `scope` from now on.
    pub fn subscribe(&self, scope: Scope) -> HubReader {
        let mut s = self.shared.lock();
        s.next_reader += 1;
        let id = s.next_reader;
        s.live.insert(
            id,
            LiveReader {
                scope,
                queue: Queue::default(),
            },
        );
        drop(s);
        self.reader(Kind::Live(id), 0)
    }

    /// A reader of one session: from the oldest event its history still holds, then live.
    pub fn session(&self, agent: u64, session: &str) -> HubReader {
        let mut s = self.shared.lock();
        s.next_reader += 1;
        let id = s.next_reader;
        let key: Key = (agent, Arc::from(session));
        let log = s.sessions.entry(key.clone()).or_default();
        let base = log.base;
        log.readers.insert(
            id,
            Cursor {
                next: base,
                done: base,
            },
        );
        drop(s);
        self.reader(Kind::Session(key, id), base)
    }

    fn reader(&self, kind: Kind, missed: u64) -> HubReader {
        HubReader {
            hub: self.clone(),
            kind,
            missed,
        }
    }

    /// Wait until turn `turn` of the session has its `turn_ended` in the session's history and
    /// every open reader of the session has handed it on (took it and came back for more).
    /// `EventsStalled` when nothing moves for `eventStallTimeoutMs`; at once when the host's
    /// stream ended.
    pub async fn turn_delivered(&self, agent: u64, session: &str, turn: u64) -> crate::Result<()> {
        let key: Key = (agent, Arc::from(session));
        let shared = &*self.shared;
        loop {
            let notified = shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let s = shared.lock();
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
            match shared.limits.stall {
                Some(d) => {
                    if tokio::time::timeout(d, notified).await.is_err() {
                        return Err(crate::Error::EventsStalled {
                            waited_ms: u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
                        });
                    }
                }
                None => notified.await,
            }
        }
    }
}

#[derive(Debug)]
enum Kind {
    Host,
    Live(u64),
    Session(Key, u64),
}

/// One pull's outcome (under the lock).
enum Step {
    Events(Vec<Arc<Event>>),
    Wait,
    Ended,
}

/// A reader of the hub (see [`EventHub`]). Dropping it (or [`HubReader::close`]) frees what it
/// held up: the pump no longer waits for it.
#[derive(Debug)]
pub struct HubReader {
    hub: EventHub,
    kind: Kind,
    missed: u64,
}

impl HubReader {
    /// For a session reader: how many of the session's events were left out before its first one
    /// (its history had overflowed before the reader was opened); 0 otherwise.
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// For the host reader: how many events were dropped before it was taken; 0 otherwise.
    pub fn dropped(&self) -> u64 {
        match self.kind {
            Kind::Host => self.hub.shared.lock().host.dropped,
            _ => 0,
        }
    }

    /// Whether the reader ended and everything was taken (a later pull returns nothing).
    pub fn is_ended(&self) -> bool {
        let mut s = self.hub.shared.lock();
        match self.kind {
            Kind::Host => s.host.queue.closed || (s.ended && s.host.queue.events.is_empty()),
            _ => matches!(self.step(&mut s, 0).0, Step::Ended),
        }
    }

    /// Take up to `limit` events (`limit` 0: look only). A session reader's pull also says that
    /// what it took before was handed on (see [`EventHub::turn_delivered`]). The flag: whether
    /// it changed anything others wait for (room for the pump, a cursor for a turn wait).
    fn step(&self, s: &mut State, limit: usize) -> (Step, bool) {
        let mut ended = s.ended;
        let queue = match &self.kind {
            Kind::Host => Some(&mut s.host.queue),
            Kind::Live(id) => {
                if let Some(Scope::Agent(a)) = s.live.get(id).map(|r| r.scope) {
                    ended |= s.agent_ended(a);
                }
                s.live.get_mut(id).map(|r| &mut r.queue)
            }
            Kind::Session(key, id) => return session_step(s, key, *id, limit),
        };
        let step = match queue {
            None => Step::Ended,
            Some(q) if q.closed => Step::Ended,
            Some(q) if !q.events.is_empty() && limit > 0 => Step::Events(q.take(limit)),
            Some(q) if q.events.is_empty() && ended => Step::Ended,
            Some(_) => Step::Wait,
        };
        let changed = matches!(step, Step::Events(_));
        (step, changed)
    }

    /// Without waiting: up to `limit` events (at least 1), an empty list when none is ready,
    /// `None` once the reader ended.
    pub fn try_next_batch(&self, limit: usize) -> Option<Vec<Arc<Event>>> {
        let (step, changed) = self.step(&mut self.hub.shared.lock(), limit.max(1));
        if changed {
            self.hub.shared.wake();
        }
        match step {
            Step::Events(v) => Some(v),
            Step::Wait => Some(Vec::new()),
            Step::Ended => None,
        }
    }

    /// Wait for up to `limit` events (at least 1). Empty only once the reader ended.
    pub async fn next_batch(&self, limit: usize) -> Vec<Arc<Event>> {
        let shared = &*self.hub.shared;
        loop {
            let notified = shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (step, changed) = self.step(&mut shared.lock(), limit.max(1));
            if changed {
                // Room for the pump, or a cursor a turn wait looks at. (Only then: waking on
                // every pull would have two idle readers wake each other for ever.)
                shared.wake();
            }
            match step {
                Step::Events(v) => return v,
                Step::Ended => return Vec::new(),
                Step::Wait => notified.await,
            }
        }
    }

    /// Blocking [`HubReader::next_batch`] for threads outside any runtime: waits up to `timeout`
    /// (`None`: for ever). `Some(empty)` when the time ran out, `None` once the reader ended.
    pub fn blocking_next_batch(
        &self,
        limit: usize,
        timeout: Option<Duration>,
    ) -> Option<Vec<Arc<Event>>> {
        let shared = &*self.hub.shared;
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut s = shared.lock();
        loop {
            let (step, changed) = self.step(&mut s, limit.max(1));
            if changed {
                shared.wake();
            }
            match step {
                Step::Events(v) => return Some(v),
                Step::Ended => return None,
                Step::Wait => {}
            }
            s = match deadline {
                None => shared.changed_cv.wait(s).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Some(Vec::new());
                    }
                    shared
                        .changed_cv
                        .wait_timeout(s, left)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|p| p.into_inner().0)
                }
            };
        }
    }

    /// Stop reading: what it holds is dropped and the pump no longer waits for it. For the host
    /// reader, later events are dropped too (a host reader that went away never stalls the
    /// agents).
    pub fn close(&self) {
        let mut s = self.hub.shared.lock();
        match &self.kind {
            Kind::Host => s.host.queue.close(),
            Kind::Live(id) => {
                s.live.remove(id);
            }
            Kind::Session(key, id) => {
                if let Some(log) = s.sessions.get_mut(key) {
                    log.readers.remove(id);
                }
            }
        }
        drop(s);
        self.hub.shared.wake();
    }
}

impl Drop for HubReader {
    fn drop(&mut self) {
        self.close();
    }
}

fn session_step(s: &mut State, key: &Key, id: u64, limit: usize) -> (Step, bool) {
    let ended = s.ended || s.agent_ended(key.0);
    let Some(log) = s.sessions.get_mut(key) else {
        return (Step::Ended, false);
    };
    // Nothing after the session's last event is handed on (an agent's late update for it).
    let (base, end) = (log.base, log.finished_at.map_or(log.end(), |at| at + 1));
    let Some(r) = log.readers.get_mut(&id) else {
        return (Step::Ended, false);
    };
    let from = r.next.max(base);
    let mut moved = false;
    if limit > 0 {
        // Coming back for more: everything taken before was handed on.
        moved = r.done != r.next;
        r.done = r.next;
        if from < end {
            let to = end.min(from + limit as u64);
            r.next = to;
            let out = log
                .events
                .range((from - base) as usize..(to - base) as usize)
                .cloned()
                .collect();
            return (Step::Events(out), true);
        }
    } else if from < end {
        return (Step::Wait, false);
    }
    // Caught up: ended once its last event was taken, or its agent's.
    if ended || log.finished_at.is_some_and(|at| from > at) {
        (Step::Ended, moved)
    } else {
        (Step::Wait, moved)
    }
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
