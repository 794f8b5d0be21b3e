//! A session's stream that misses nothing: the pump logs each session's events from the moment
//! its open call (`session/new`, `load`, `resume`, `fork`) starts until its first turn ended, and
//! then each turn's events from its `turn_started` until its `turn_ended`. So `session.events()`,
//! which can only be called once the open call returned, still begins with the session's
//! `session_opened`, the updates the agent sent before the open response (the core delivers them
//! right after `session_opened`) and a load's replay, whatever the pump had already dispatched by
//! then; and a stream opened while a turn runs (e.g. in an asyncio task created just before
//! `await session.prompt()`) begins with that turn's `turn_started`. What a stream does not have
//! of the session, it counts (`Subscription.missed`).
//!
//! Rules (all under the pump's fan-out lock, so a stream gets the log and then every later event,
//! without a gap or a duplicate):
//! - While a `session/new` or `fork` is in flight the session id is unknown: every event of that
//!   agent that carries a session id is logged; when the call returns, only the new session's
//!   events are kept. A `load`/`resume` names its id: its log starts at that session's
//!   `session_opened` (anything of that id before it belongs to an earlier life of the session).
//! - The opening log ends with the session's first `turn_ended`; between turns streams start
//!   from now; a `turn_started` starts the turn's log, its `turn_ended` ends it. A `with` block's
//!   end releases the log (`release_open`). It is dropped when the session closes or its agent
//!   exits (a stream created afterwards ends at once), when every handle of the session is gone,
//!   or when the host closes. A supervised agent's exit (and the `session_closed` it causes) ends
//!   nothing: a restart follows, or `agent_failed`, or its shutdown (`Pump::finish_agent`).
//! - At most [`OPENING_CAP`] events and [`OPENING_BYTES`] of payload are kept (a turn's log lives
//!   as long as the turn); past either the oldest update is dropped and counted, and a stream
//!   built from the log reports the count (`Subscription.dropped`, within `missed`).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Weak};

use acp_host::{Event as CoreEvent, EventKind};

use crate::events::Pump;

/// Events kept per session before its first prompt (the core holds back as many early updates).
pub(crate) const OPENING_CAP: usize = 65_536;
/// Payload bytes kept per session log (a turn of large tool outputs must not pile up).
pub(crate) const OPENING_BYTES: usize = 64 << 20;

/// What an event costs a log: its payload and a bound for the rest of it.
fn cost(ev: &CoreEvent) -> usize {
    ev.data.get().len() + 128
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Logging the session's events (its opening, or the turn in flight).
    Logging,
    /// Between turns (or after a `with` block's end): streams start from now.
    Released,
    /// Closed, or its agent exited: streams end at once.
    Closed,
}

#[derive(Debug)]
struct Opening {
    agent: u64,
    /// `None` while a `session/new` or `fork` is in flight.
    session: Option<Arc<str>>,
    /// The id was known when the call started (`load`, `resume`).
    known: bool,
    /// The session's `session_opened` was logged.
    opened: bool,
    stage: Stage,
    events: VecDeque<Arc<CoreEvent>>,
    /// What `events` costs ([`cost`]).
    bytes: usize,
    dropped: u64,
    /// Events of the session the pump dispatched since it began (counted once its id is known).
    seen: u64,
    /// Prompt calls of this session's handles that have not returned to Python yet: a turn's
    /// log is kept until its call returned (an asyncio task created before
    /// `await session.prompt()` may first run after the turn ended, never after it returned).
    pins: u32,
    /// Its turn ended while a call was pinned: released when the last one returns.
    turn_over: bool,
    /// Before the id is known: drops per session id (only the new session's count is kept).
    dropped_by: HashMap<Arc<str>, u64>,
    handle: Weak<OpeningHandle>,
}

impl Opening {
    fn observe(&mut self, ev: &Arc<CoreEvent>, ends: Ends) {
        if ends.agent {
            self.finish(Stage::Closed);
            return;
        }
        let Some(s) = ev.session.as_deref() else {
            return;
        };
        match (self.stage, &self.session) {
            (Stage::Logging, None) => self.push(ev.clone()),
            (Stage::Logging, Some(mine)) if **mine == *s => {
                self.seen += 1;
                self.log(ev, ends)
            }
            (Stage::Released, Some(mine)) if **mine == *s => {
                self.seen += 1;
                if ends.session {
                    self.finish(Stage::Closed)
                } else if ev.kind == EventKind::TurnStarted {
                    // The turn's log: a stream opened while it runs gets all of it.
                    self.stage = Stage::Logging;
                    self.dropped = 0;
                    self.push(ev.clone());
                }
            }
            _ => {}
        }
    }

    /// An event of this session while logging.
    fn log(&mut self, ev: &Arc<CoreEvent>, ends: Ends) {
        if !self.opened {
            if ev.kind == EventKind::SessionOpened {
                self.opened = true;
            } else if self.known {
                return;
            }
        }
        match ev.kind {
            EventKind::TurnEnded if self.opened && self.pins == 0 => self.finish(Stage::Released),
            _ if ends.session && self.opened => self.finish(Stage::Closed),
            kind => {
                match kind {
                    EventKind::TurnEnded if self.opened => self.turn_over = true,
                    EventKind::TurnStarted => self.turn_over = false,
                    _ => {}
                }
                self.push(ev.clone())
            }
        }
    }

    fn push(&mut self, ev: Arc<CoreEvent>) {
        self.bytes += cost(&ev);
        while self.events.len() >= OPENING_CAP
            || (self.bytes > OPENING_BYTES && !self.events.is_empty())
        {
            // The oldest update goes (usually a replay's); `session_opened` and the host's own
            // events stay when they are near the front.
            let i = self
                .events
                .iter()
                .take(64)
                .position(|e| e.kind == EventKind::SessionUpdate)
                .unwrap_or(0);
            if let Some(old) = self.events.remove(i) {
                self.bytes = self.bytes.saturating_sub(cost(&old));
                match (&self.session, &old.session) {
                    (Some(_), _) => self.dropped += 1,
                    (None, Some(s)) => *self.dropped_by.entry(s.clone()).or_default() += 1,
                    (None, None) => {}
                }
            }
        }
        self.events.push_back(ev);
    }

    fn finish(&mut self, stage: Stage) {
        self.stage = stage;
        self.turn_over = false;
        self.events = VecDeque::new();
        self.bytes = 0;
        self.dropped_by = HashMap::new();
    }

    /// The open call returned `session`: keep that session's events only.
    fn bind(&mut self, session: Arc<str>) {
        if self.session.is_some() {
            return;
        }
        self.dropped = self.dropped_by.remove(&session).unwrap_or(0);
        self.seen = self.dropped;
        self.dropped_by = HashMap::new();
        let logged = std::mem::take(&mut self.events);
        self.bytes = 0;
        self.session = Some(session.clone());
        for ev in logged {
            if ev.session.as_deref() != Some(&*session) {
                continue;
            }
            self.seen += 1;
            if self.stage == Stage::Logging {
                // A logged event never ended the session (that would have ended the log).
                self.log(&ev, Ends::default());
            }
        }
    }
}

/// A `session_closed` because the agent's process ended (reopened after a supervised restart).
fn closed_by_exit(ev: &CoreEvent) -> bool {
    serde_json::from_str::<serde_json::Value>(ev.data.get())
        .is_ok_and(|d| d.get("reason").and_then(serde_json::Value::as_str) == Some("agent_exited"))
}

/// What a new stream of a session starts with.
pub(crate) enum Start {
    /// The session's log (how many of its events were dropped at the cap, and how many of the
    /// session's events it lacks in all), then live events.
    Log(VecDeque<Arc<CoreEvent>>, u64, u64),
    /// Live events only (and how many of the session's events came before).
    Live(u64),
    /// Nothing: the session is closed or its agent exited.
    Ended,
}

/// What an event ends, as the streams see it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ends {
    /// The agent's streams and those of its sessions (the agent is gone for good).
    pub(crate) agent: bool,
    /// The streams of the event's session.
    pub(crate) session: bool,
}

/// Every session log of a host (inside the pump's fan-out state).
#[derive(Debug, Default)]
pub(crate) struct Openings {
    logs: BTreeMap<u64, Opening>,
    next_id: u64,
    /// Agents that ended for good (`agent_exited`, or a supervised agent's `agent_failed` or
    /// shutdown): their streams end at once.
    exited: HashSet<u64>,
    /// Supervised agents: their `agent_exited` and the `session_closed` (`agent_exited`) of
    /// their sessions are followed by a restart (or `agent_failed`), so they end nothing.
    supervised: HashSet<u64>,
}

impl Openings {
    /// Whether a session is being logged or watched for its next turn (the pump then looks at
    /// every event, even when nobody subscribed).
    pub(crate) fn logging(&self) -> bool {
        self.logs.values().any(|o| o.stage != Stage::Closed)
    }

    pub(crate) fn supervise(&mut self, agent: u64) {
        self.supervised.insert(agent);
    }

    pub(crate) fn supervised(&self, agent: u64) -> bool {
        self.supervised.contains(&agent)
    }

    /// What `ev` ends, in dispatch order (tracks which agents ended).
    fn ends(&mut self, ev: &CoreEvent) -> Ends {
        let supervised = self.supervised.contains(&ev.agent);
        let agent = match ev.kind {
            EventKind::AgentExited => !supervised,
            EventKind::AgentFailed => true,
            EventKind::AgentRestarting => {
                // Registered after the agent had already died (between its handshake and the
                // end of `spawn`): it comes back after all.
                self.supervised.insert(ev.agent);
                self.exited.remove(&ev.agent);
                false
            }
            _ => false,
        };
        if agent {
            self.exited.insert(ev.agent);
        }
        let session = match ev.kind {
            EventKind::SessionLost => true,
            EventKind::SessionClosed => !(supervised && closed_by_exit(ev)),
            _ => false,
        };
        Ends { agent, session }
    }

    /// Look at a chunk of dispatched events (before it is handed to the subscriptions): what
    /// each one ends.
    pub(crate) fn observe(&mut self, events: &[Arc<CoreEvent>]) -> Vec<Ends> {
        let mut out = Vec::with_capacity(events.len());
        for ev in events {
            let ends = self.ends(ev);
            out.push(ends);
            if !ends.agent && ev.session.is_none() {
                continue;
            }
            for o in self.logs.values_mut() {
                if o.agent == ev.agent {
                    o.observe(ev, ends);
                }
            }
        }
        out
    }

    /// Nobody subscribed and no session is being logged: only what ends streams matters.
    pub(crate) fn observe_ends(&mut self, events: &[CoreEvent]) {
        for ev in events {
            let ends = self.ends(ev);
            if !ends.agent && !ends.session {
                continue;
            }
            let closed = if ends.agent {
                None
            } else {
                ev.session.as_deref()
            };
            for o in self.logs.values_mut() {
                if o.agent == ev.agent && (closed.is_none() || o.session.as_deref() == closed) {
                    o.finish(Stage::Closed);
                }
            }
        }
    }

    /// The agent was shut down: it ends for good.
    pub(crate) fn end_agent(&mut self, agent: u64) {
        self.exited.insert(agent);
        self.supervised.remove(&agent);
        for o in self.logs.values_mut() {
            if o.agent == agent {
                o.finish(Stage::Closed);
            }
        }
    }

    pub(crate) fn exited(&self, agent: u64) -> bool {
        self.exited.contains(&agent)
    }

    fn begin(
        &mut self,
        agent: u64,
        session: Option<Arc<str>>,
        pump: Weak<Pump>,
    ) -> Arc<OpeningHandle> {
        self.next_id += 1;
        let id = self.next_id;
        let handle = Arc::new(OpeningHandle { id, pump });
        let exited = self.exited.contains(&agent);
        self.logs.insert(
            id,
            Opening {
                agent,
                known: session.is_some(),
                session,
                opened: false,
                stage: if exited {
                    Stage::Closed
                } else {
                    Stage::Logging
                },
                events: VecDeque::new(),
                bytes: 0,
                dropped: 0,
                seen: 0,
                pins: 0,
                turn_over: false,
                dropped_by: HashMap::new(),
                handle: Arc::downgrade(&handle),
            },
        );
        handle
    }

    /// The newest log of `session` (a reopened id has several).
    fn newest(&self, agent: u64, session: &str) -> Option<&Opening> {
        self.logs
            .values()
            .rev()
            .find(|o| o.agent == agent && o.session.as_deref() == Some(session))
    }

    pub(crate) fn start(&self, agent: u64, session: &str) -> Start {
        match self.newest(agent, session) {
            Some(o) => match o.stage {
                Stage::Logging => {
                    let missed = o.seen.saturating_sub(o.events.len() as u64);
                    Start::Log(o.events.clone(), o.dropped, missed)
                }
                Stage::Released => Start::Live(o.seen),
                Stage::Closed => Start::Ended,
            },
            None if self.exited(agent) => Start::Ended,
            // No log of this session here (a pooled session's handle): from now on.
            None => Start::Live(0),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.logs.clear();
    }
}

/// Keeps a session's log alive: held by the open call while it runs, then by the session's
/// handles. The last one gone drops the log.
#[derive(Debug)]
pub(crate) struct OpeningHandle {
    id: u64,
    pump: Weak<Pump>,
}

impl Drop for OpeningHandle {
    fn drop(&mut self) {
        if let Some(p) = self.pump.upgrade() {
            p.with_openings(|o| {
                o.logs.remove(&self.id);
            });
        }
    }
}

impl Pump {
    /// Start logging for an open call of `agent` (`session`: the id, when the call names it).
    /// `None` when the pump has ended (events disabled, host closed): there is nothing to log.
    pub(crate) fn begin_open(
        self: &Arc<Self>,
        agent: u64,
        session: Option<&str>,
    ) -> Option<Arc<OpeningHandle>> {
        let weak = Arc::downgrade(self);
        self.with_openings(|o| o.begin(agent, session.map(Arc::from), weak))
    }

    /// The open call returned `session`.
    pub(crate) fn bind_open(&self, handle: &OpeningHandle, session: &str) {
        self.with_openings(|o| {
            if let Some(log) = o.logs.get_mut(&handle.id) {
                log.bind(Arc::from(session));
            }
        });
    }

    /// Another handle to the log of `session`, if it is still kept.
    pub(crate) fn opening_of(&self, agent: u64, session: &str) -> Option<Arc<OpeningHandle>> {
        // Upgraded under the lock; never dropped there (its Drop takes the lock).
        let weak = self.with_openings(|o| o.newest(agent, session).map(|l| l.handle.clone()));
        weak.flatten().and_then(|w| w.upgrade())
    }

    /// A prompt call of `handle`'s session starts: the turn's log outlives its `turn_ended`
    /// until [`Pump::unpin_turn`].
    pub(crate) fn pin_turn(&self, handle: &OpeningHandle) {
        self.with_openings(|o| {
            if let Some(log) = o.logs.get_mut(&handle.id) {
                log.pins += 1;
            }
        });
    }

    /// That prompt call returned to Python: a turn that ended meanwhile is released.
    pub(crate) fn unpin_turn(&self, handle: &OpeningHandle) {
        self.with_openings(|o| {
            if let Some(log) = o.logs.get_mut(&handle.id) {
                log.pins = log.pins.saturating_sub(1);
                if log.pins == 0 && log.turn_over && log.stage == Stage::Logging {
                    log.finish(Stage::Released);
                }
            }
        });
    }

    /// Stop logging `handle`'s session (it was closed, or forgotten by its `with` block): later
    /// streams start from now.
    pub(crate) fn release_open(&self, handle: &OpeningHandle) {
        self.with_openings(|o| {
            if let Some(log) = o.logs.get_mut(&handle.id)
                && log.stage == Stage::Logging
            {
                log.finish(Stage::Released);
            }
        });
    }
}
