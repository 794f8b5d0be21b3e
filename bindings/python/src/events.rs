//! Events in Python: the `Event` class (the docs/EVENTS.md envelope, `data` parsed lazily), the
//! pump that fans the host's single ordered stream out to subscriptions (host-wide, per agent,
//! per session), and `Subscription` (sync `__next__` plus batched awaitable pulls).
//!
//! Backpressure: a subscription holds at most `capacity` events (the host's `event_capacity`, at
//! least one batch); while a subscriber does not pull, the pump waits for room, the core's queue
//! fills and the host stops reading the agents (nothing is dropped).
//! Events that arrive while nobody is subscribed are discarded, so a script that never looks at
//! events never stalls its agents; only the sessions being opened keep their first events
//! (`opening.rs`), so that a session's stream can start at its beginning.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use acp_host::{Event as CoreEvent, EventKind, EventStream};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;
use pyo3::{IntoPyObjectExt, intern};
use tokio::sync::{Semaphore, mpsc, watch};

use crate::opening::{Ends, Openings, Start};

/// Events pulled from the core at once and handed to a subscriber in one chunk.
pub(crate) const BATCH: usize = 1024;

type Chunk = Vec<Arc<CoreEvent>>;

/// Which events a subscription sees, and which event ends it.
#[derive(Debug, Clone)]
pub(crate) enum Filter {
    All,
    Agent(u64),
    Session(u64, Arc<str>),
}

impl Filter {
    fn accepts(&self, ev: &CoreEvent) -> bool {
        match self {
            Filter::All => true,
            Filter::Agent(a) => ev.agent == *a,
            Filter::Session(a, s) => ev.agent == *a && ev.session.as_deref() == Some(&**s),
        }
    }

    /// After delivering this event the subscription ends (`ends`: what the event ends, see
    /// `Openings::ends`).
    fn ends_with(&self, ev: &CoreEvent, ends: Ends) -> bool {
        match self {
            Filter::All => false,
            Filter::Agent(a) => ev.agent == *a && ends.agent,
            Filter::Session(a, s) => {
                ev.agent == *a
                    && (ends.agent || (ends.session && ev.session.as_deref() == Some(&**s)))
            }
        }
    }

    fn of_agent(&self, agent: u64) -> bool {
        match self {
            Filter::All => false,
            Filter::Agent(a) | Filter::Session(a, _) => *a == agent,
        }
    }
}

#[derive(Debug)]
struct Sub {
    id: u64,
    filter: Filter,
    tx: mpsc::UnboundedSender<Chunk>,
    /// Room for events in this subscription (the pump takes, the consumer gives back).
    room: Arc<Semaphore>,
}

/// What the pump hands events to, under one lock: a subscription either gets a session's log
/// (`opening.rs`) or the chunk being dispatched, never both and never neither.
#[derive(Debug, Default)]
struct Fanout {
    subs: Vec<Sub>,
    openings: Openings,
}

/// The fan-out state shared by the pump task and the subscriptions.
#[derive(Debug)]
pub(crate) struct Pump {
    state: Mutex<Fanout>,
    next_id: AtomicU64,
    capacity: usize,
    closing: watch::Sender<bool>,
    ended: watch::Sender<bool>,
    /// Agents shut down by the embedder: their streams end once what is queued was delivered.
    finished: mpsc::UnboundedSender<u64>,
    /// The last turns whose `turn_ended` every subscription was handed: `(agent, turn)`.
    turns_ended: Mutex<VecDeque<(u64, u64)>>,
    turn_ended: tokio::sync::Notify,
    /// The host's `eventStallTimeoutMs`: how long a prompt waits for its turn's events to reach
    /// the streams (a stream nobody pulls holds them up).
    stall: Option<Duration>,
}

/// Turns remembered as delivered (a prompt looks its own up right after it returned).
const TURNS_KEPT: usize = 4096;

/// What woke the pump.
enum Step {
    Events,
    Finished(u64),
    Closing,
}

impl Pump {
    /// Start pumping `stream` on the runtime.
    pub(crate) fn start(
        stream: Option<EventStream>,
        capacity: usize,
        stall: Option<Duration>,
    ) -> Arc<Pump> {
        let (closing, closing_rx) = watch::channel(false);
        let (ended, _) = watch::channel(false);
        let (finished, finished_rx) = mpsc::unbounded_channel();
        let pump = Arc::new(Pump {
            state: Mutex::new(Fanout::default()),
            next_id: AtomicU64::new(1),
            capacity: capacity.max(BATCH),
            closing,
            ended,
            finished,
            turns_ended: Mutex::new(VecDeque::new()),
            turn_ended: tokio::sync::Notify::new(),
            stall,
        });
        match stream {
            Some(stream) => {
                let p = pump.clone();
                crate::rt().spawn(async move { p.run(stream, closing_rx, finished_rx).await });
            }
            None => {
                pump.ended.send_replace(true);
            }
        }
        pump
    }

    async fn run(
        self: Arc<Self>,
        stream: EventStream,
        mut closing: watch::Receiver<bool>,
        mut finished: mpsc::UnboundedReceiver<u64>,
    ) {
        let mut buf: Vec<CoreEvent> = Vec::with_capacity(BATCH);
        loop {
            let step = tokio::select! {
                biased;
                // First: `drain` delivers everything queued before it anyway.
                Some(agent) = finished.recv() => Step::Finished(agent),
                n = stream.next_batch(&mut buf, BATCH) => {
                    if n == 0 {
                        break;
                    }
                    Step::Events
                }
                _ = closing.wait_for(|c| *c) => Step::Closing,
            };
            match step {
                Step::Events => self.dispatch(&mut buf).await,
                Step::Finished(agent) => {
                    // Everything the agent's shutdown produced is queued already: deliver it,
                    // then end its streams.
                    self.drain(&stream, &mut buf).await;
                    self.end_agent(agent);
                }
                Step::Closing => {
                    // Everything the shutdown produced is queued already: deliver it, then end.
                    self.drain(&stream, &mut buf).await;
                    break;
                }
            }
        }
        // Under the lock, so that `subscribe` either lands before the clear or sees `ended`.
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.subs.clear();
        st.openings.clear();
        // `send_replace`: `send` stores nothing while nobody holds a receiver.
        self.ended.send_replace(true);
        self.turn_ended.notify_waiters();
    }

    /// Remember the turns `events` end: they are in every stream now.
    fn turns_delivered<'a>(&self, events: impl Iterator<Item = &'a CoreEvent>) {
        let mut any = false;
        if let Ok(mut t) = self.turns_ended.lock() {
            for ev in events.filter(|e| e.kind == EventKind::TurnEnded) {
                if let Some(turn) = ev.turn {
                    if t.len() >= TURNS_KEPT {
                        t.pop_front();
                    }
                    t.push_back((ev.agent, turn));
                    any = true;
                }
            }
        }
        if any {
            self.turn_ended.notify_waiters();
        }
    }

    /// Wait until `turn`'s `turn_ended` was handed to every subscription, so that a prompt
    /// returns only once every event of its turn is in the session's streams. Without events,
    /// or once the pump ended, at once; fails with `events_stalled` after the host's
    /// `eventStallTimeoutMs` when a stream nobody pulls holds the pump up.
    pub(crate) async fn turn_in_streams(&self, agent: u64, turn: u64) -> acp_host::Result<()> {
        let wait = async {
            loop {
                let notified = self.turn_ended.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if *self.ended.borrow() {
                    return;
                }
                if self
                    .turns_ended
                    .lock()
                    .map_or(true, |t| t.contains(&(agent, turn)))
                {
                    return;
                }
                notified.await;
            }
        };
        match self.stall {
            None => {
                wait.await;
                Ok(())
            }
            Some(limit) => tokio::time::timeout(limit, wait).await.map_err(|_| {
                acp_host::Error::EventsStalled {
                    waited_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                }
            }),
        }
    }

    /// Dispatch what is queued in the core right now.
    async fn drain(&self, stream: &EventStream, buf: &mut Vec<CoreEvent>) {
        loop {
            while buf.len() < BATCH {
                match stream.try_next() {
                    Some(ev) => buf.push(ev),
                    None => break,
                }
            }
            if buf.is_empty() {
                return;
            }
            self.dispatch(buf).await;
        }
    }

    /// The embedder shut `agent` down: end its streams (and its sessions') once the events
    /// queued so far were delivered. A supervised agent's `agent_exited` does not end them (a
    /// restart may follow), and a shutdown while it is down between two processes emits nothing.
    pub(crate) fn finish_agent(&self, agent: u64) {
        let _ = self.finished.send(agent);
    }

    fn end_agent(&self, agent: u64) {
        if let Ok(mut st) = self.state.lock() {
            st.openings.end_agent(agent);
            // Dropping a subscription's sender ends it after the chunks it holds.
            st.subs.retain(|s| !s.filter.of_agent(agent));
        }
    }

    /// `agent` is supervised (spawned with a restart policy): its `agent_exited` does not end
    /// its streams.
    pub(crate) fn supervise(&self, agent: u64) {
        if let Ok(mut st) = self.state.lock() {
            st.openings.supervise(agent);
        }
    }

    pub(crate) fn is_supervised(&self, agent: u64) -> bool {
        self.state
            .lock()
            .is_ok_and(|st| st.openings.supervised(agent))
    }

    /// `f` on the session logs, unless the pump has ended (then there is nothing to log).
    pub(crate) fn with_openings<R>(&self, f: impl FnOnce(&mut Openings) -> R) -> Option<R> {
        let mut st = self.state.lock().ok()?;
        if *self.ended.borrow() {
            return None;
        }
        Some(f(&mut st.openings))
    }

    async fn dispatch(&self, buf: &mut Vec<CoreEvent>) {
        type Target = (u64, Filter, mpsc::UnboundedSender<Chunk>, Arc<Semaphore>);
        let (targets, events): (Vec<Target>, (Chunk, Vec<Ends>)) = {
            let Ok(mut st) = self.state.lock() else {
                buf.clear();
                return;
            };
            if st.subs.is_empty() && !st.openings.logging() {
                st.openings.observe_ends(buf);
                drop(st);
                self.turns_delivered(buf.iter());
                buf.clear();
                return;
            }
            let events: Chunk = buf.drain(..).map(Arc::new).collect();
            // Logged under the same lock as the targets are taken: see `Fanout`.
            let ends = st.openings.observe(&events);
            let targets = st
                .subs
                .iter()
                .map(|s| (s.id, s.filter.clone(), s.tx.clone(), s.room.clone()))
                .collect();
            (targets, (events, ends))
        };
        let (events, ends) = events;
        for (id, filter, tx, room) in targets {
            let (chunk, ends) = match filter {
                Filter::All => (events.clone(), false),
                ref f => {
                    let mut ended = false;
                    let mut chunk = Vec::new();
                    for (ev, e) in events.iter().zip(&ends) {
                        if f.accepts(ev) {
                            chunk.push(ev.clone());
                        }
                        if f.ends_with(ev, *e) {
                            ended = true;
                            break;
                        }
                    }
                    (chunk, ended)
                }
            };
            let gone = !chunk.is_empty() && !deliver(&tx, &room, chunk, &self.closing).await;
            if gone || ends {
                self.remove(id);
            }
        }
        self.turns_delivered(events.iter().map(|e| &**e));
    }

    /// A subscription to the events `filter` accepts from now on; a session's starts with the
    /// session's log when it is still kept (`opening.rs`), and one of a closed session or an exited
    /// agent ends at once.
    pub(crate) fn subscribe(self: &Arc<Self>, filter: Filter) -> Subscription {
        let (tx, rx) = mpsc::unbounded_channel();
        let room = Arc::new(Semaphore::new(self.capacity));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut buf = VecDeque::new();
        let mut dropped = 0;
        let mut missed = 0;
        // If the pump already ended, the sender is dropped here: the subscription is empty and done.
        if let Ok(mut st) = self.state.lock()
            && !*self.ended.borrow()
        {
            let start = match &filter {
                Filter::All => Start::Live(0),
                Filter::Agent(a) if st.openings.exited(*a) => Start::Ended,
                Filter::Agent(_) => Start::Live(0),
                Filter::Session(a, s) => st.openings.start(*a, s),
            };
            let live = match start {
                Start::Log(log, n, m) => {
                    buf = log;
                    dropped = n;
                    missed = m;
                    true
                }
                Start::Live(m) => {
                    missed = m;
                    true
                }
                Start::Ended => false,
            };
            if live {
                st.subs.push(Sub {
                    id,
                    filter,
                    tx,
                    room: room.clone(),
                });
            }
        }
        Subscription {
            id,
            state: Arc::new(tokio::sync::Mutex::new(SubState {
                rx,
                buf,
                room: room.clone(),
            })),
            room,
            ended: AtomicBool::new(false),
            dropped,
            missed,
            pump: Arc::downgrade(self),
        }
    }

    pub(crate) fn remove(&self, id: u64) {
        if let Ok(mut st) = self.state.lock() {
            st.subs.retain(|s| s.id != id);
        }
    }

    /// Deliver what is queued, then end every subscription (the host is closing).
    pub(crate) fn close(&self) {
        let _ = self.closing.send(true);
    }
}

#[derive(Debug)]
struct SubState {
    rx: mpsc::UnboundedReceiver<Chunk>,
    buf: VecDeque<Arc<CoreEvent>>,
    room: Arc<Semaphore>,
}

impl SubState {
    /// Move a received chunk into the buffer and give its room back to the pump.
    fn take(&mut self, chunk: Chunk) {
        self.room.add_permits(chunk.len());
        self.buf.extend(chunk);
    }
}

/// How long a closing host still waits for a full subscription's reader to make room.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// Wait for room, then hand the chunk over; false when the subscriber is gone, or (once the host
/// is closing) did not make room within [`CLOSE_GRACE`]: a stream nobody pulls must not keep
/// every other stream of a closed host from ending.
async fn deliver(
    tx: &mpsc::UnboundedSender<Chunk>,
    room: &Semaphore,
    chunk: Chunk,
    closing: &watch::Sender<bool>,
) -> bool {
    let n = u32::try_from(chunk.len()).unwrap_or(u32::MAX);
    let mut closing = closing.subscribe();
    let given_up = async move {
        let _ = closing.wait_for(|c| *c).await;
        tokio::time::sleep(CLOSE_GRACE).await;
    };
    tokio::select! {
        permit = room.acquire_many(n) => match permit {
            Ok(permit) => permit.forget(),
            Err(_) => return false,
        },
        () = given_up => return false,
    }
    tx.send(chunk).is_ok()
}

/// A stream of events (`for ev in sub`, or batches with `next_batch` / `next_batch_async`).
/// Ends (StopIteration / `None`) when the host closes, or, for an agent or session stream,
/// after that agent's `agent_exited` / that session's `session_closed`; a supervised agent's
/// streams continue across its restarts and end after `agent_failed`, `session_lost`, a close,
/// or its shutdown.
#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct Subscription {
    id: u64,
    state: Arc<tokio::sync::Mutex<SubState>>,
    room: Arc<Semaphore>,
    /// A pull saw the end (the buffer is empty and the pump let go of this subscription).
    ended: AtomicBool,
    /// Events of the session's log dropped at its cap before this stream began.
    dropped: u64,
    /// Events of the session dispatched before this stream began that it does not have.
    missed: u64,
    pump: std::sync::Weak<Pump>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.room.close();
        if let Some(p) = self.pump.upgrade() {
            p.remove(self.id);
        }
    }
}

enum Pulled {
    Event(Arc<CoreEvent>),
    Ended,
    TimedOut,
}

impl Subscription {
    /// Wait (GIL released) for the next event, checking signals; `timeout` None = for ever.
    fn pull(&self, py: Python<'_>, timeout: Option<Duration>) -> PyResult<Pulled> {
        if self.room.is_closed() || self.ended.load(Ordering::SeqCst) {
            return Ok(Pulled::Ended);
        }
        if let Ok(mut st) = self.state.try_lock() {
            // What the pump handed over already counts as ready (`next(timeout=0)` gets it).
            if st.buf.is_empty()
                && let Ok(chunk) = st.rx.try_recv()
            {
                st.take(chunk);
            }
            if let Some(ev) = st.buf.pop_front() {
                return Ok(Pulled::Event(ev));
            }
        }
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            let tick = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return Ok(Pulled::TimedOut);
                    }
                    left.min(crate::SIGNAL_TICK)
                }
                None => crate::SIGNAL_TICK,
            };
            let state = self.state.clone();
            let got = crate::detach(py, move || {
                crate::rt().block_on(async move {
                    let mut st = match tokio::time::timeout(tick, state.lock()).await {
                        Ok(st) => st,
                        Err(_) => return None,
                    };
                    if let Some(ev) = st.buf.pop_front() {
                        return Some(Pulled::Event(ev));
                    }
                    match tokio::time::timeout(tick, st.rx.recv()).await {
                        Ok(Some(chunk)) => {
                            st.take(chunk);
                            st.buf.pop_front().map(Pulled::Event)
                        }
                        Ok(None) => Some(Pulled::Ended),
                        Err(_) => None,
                    }
                })
            })?;
            match got {
                _ if self.room.is_closed() => return Ok(Pulled::Ended),
                Some(Pulled::Ended) => {
                    // Later pulls answer at once, without leaving Python again.
                    self.ended.store(true, Ordering::SeqCst);
                    return Ok(Pulled::Ended);
                }
                Some(p) => return Ok(p),
                None => py.check_signals()?,
            }
        }
    }
}

#[pymethods]
impl Subscription {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Event>> {
        match self.pull(py, None)? {
            Pulled::Event(ev) => Ok(Some(Event::new(ev))),
            _ => Ok(None),
        }
    }

    /// The next event; `None` when the stream ended; raises `TimeoutError` after `timeout` s.
    #[pyo3(signature = (timeout=None))]
    fn next(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Event>> {
        let timeout = timeout.map(|t| crate::seconds("timeout", t)).transpose()?;
        match self.pull(py, timeout)? {
            Pulled::Event(ev) => Ok(Some(Event::new(ev))),
            Pulled::Ended => Ok(None),
            Pulled::TimedOut => Err(crate::errors::local(
                py,
                "timeout",
                format!(
                    "no event within {:.3} s",
                    timeout.unwrap_or_default().as_secs_f64()
                ),
            )),
        }
    }

    /// Up to `limit` events that are ready (waits for at least one): a list, or `None` at the end.
    #[pyo3(signature = (limit=1024))]
    fn next_batch<'py>(
        &self,
        py: Python<'py>,
        limit: usize,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let first = match self.pull(py, None)? {
            Pulled::Event(ev) => ev,
            _ => return Ok(None),
        };
        let mut out = vec![Event::new(first)];
        if let Ok(mut st) = self.state.try_lock() {
            take_ready(&mut st, &mut out, limit);
        }
        Ok(Some(PyList::new(py, out)?))
    }

    /// Without waiting: the events that are ready (a possibly empty list), or `None` at the end.
    #[pyo3(signature = (limit=1024))]
    fn try_next_batch(&self, limit: usize) -> Option<Vec<Event>> {
        if self.room.is_closed() {
            return None;
        }
        let Ok(mut st) = self.state.try_lock() else {
            return Some(Vec::new());
        };
        let mut out = Vec::new();
        take_ready(&mut st, &mut out, limit);
        if out.is_empty() && st.rx.is_closed() && st.rx.is_empty() {
            return None;
        }
        Some(out)
    }

    /// Awaitable `next_batch`: resolves to a list of up to `limit` events, or `None` at the end.
    #[pyo3(signature = (limit=1024))]
    fn next_batch_async<'py>(&self, py: Python<'py>, limit: usize) -> PyResult<Bound<'py, PyAny>> {
        let state = self.state.clone();
        let room = self.room.clone();
        crate::awaitable(py, async move {
            let mut st = state.lock().await;
            let mut out = Vec::new();
            if st.buf.is_empty() && !room.is_closed() {
                match st.rx.recv().await {
                    Some(chunk) => st.take(chunk),
                    None => return Ok(None),
                }
            }
            if room.is_closed() {
                return Ok(None);
            }
            take_ready(&mut st, &mut out, limit);
            Ok::<_, acp_host::Error>(Some(out))
        })
    }

    /// How many of the session's first events this stream lacks because its log reached its
    /// cap (the oldest updates were dropped); 0 for host and agent streams.
    #[getter]
    fn dropped(&self) -> u64 {
        self.dropped
    }

    /// How many of the session's events, from its `session_opened` on, this stream does not
    /// have (`dropped` included): 0 for a stream opened before the session's first turn ended,
    /// the events before the turn in flight for one opened during a turn, every earlier event
    /// for one opened between turns. 0 for host and agent streams and a pooled session's.
    #[getter]
    fn missed(&self) -> u64 {
        self.missed
    }

    /// Stop receiving; the pump forgets this subscription (and stops waiting for it).
    fn close(&self) {
        self.room.close();
        if let Some(p) = self.pump.upgrade() {
            p.remove(self.id);
        }
        // Without the state lock: another thread or task may be waiting in it. Readers see the
        // closed room and end; the buffered events go with the last reference.
    }
}

fn take_ready(st: &mut SubState, out: &mut Vec<Event>, limit: usize) {
    let limit = limit.max(1);
    loop {
        while out.len() < limit {
            match st.buf.pop_front() {
                Some(ev) => out.push(Event::new(ev)),
                None => break,
            }
        }
        if out.len() >= limit {
            return;
        }
        match st.rx.try_recv() {
            Ok(chunk) => st.take(chunk),
            Err(_) => return,
        }
    }
}

static JSON_LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Decode JSON the host hands over (within the core's nesting limit). What this interpreter
/// cannot decode (nesting past its recursion limit, an integer longer than
/// `sys.get_int_max_str_digits()`) raises `ProtocolError` (kind `protocol`), with `json`'s own
/// exception as its cause: never a bare `RecursionError` or `ValueError`.
pub(crate) fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    // `json.loads` is Python code: see `crate::python_code`.
    let loaded = crate::python_code(py, || {
        let loads = JSON_LOADS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import("json")?.getattr("loads")?.unbind())
        })?;
        loads.bind(py).call1((text,))
    });
    loaded.map_err(|e| {
        let decoding = e.is_instance_of::<pyo3::exceptions::PyValueError>(py)
            || e.is_instance_of::<pyo3::exceptions::PyRecursionError>(py);
        if !decoding {
            return e; // KeyboardInterrupt, MemoryError, ...: not about the text
        }
        let typed = crate::errors::local(
            py,
            "protocol",
            format!("the event's JSON cannot be decoded by this interpreter: {e}"),
        );
        typed.set_cause(py, Some(e));
        typed
    })
}

/// One event of the host's ordered stream: exactly the docs/EVENTS.md envelope.
#[pyclass(frozen, module = "acp_host", name = "Event")]
pub(crate) struct Event {
    ev: Arc<CoreEvent>,
    data: PyOnceLock<Py<PyAny>>,
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("ev", &self.ev)
            .finish_non_exhaustive()
    }
}

impl Event {
    fn new(ev: Arc<CoreEvent>) -> Event {
        Event {
            ev,
            data: PyOnceLock::new(),
        }
    }
}

/// The kind's name, interned (`None` for a kind this list does not name yet: see `Event::kind`).
fn kind_str<'py>(
    py: Python<'py>,
    kind: EventKind,
) -> Option<&'py Bound<'py, pyo3::types::PyString>> {
    Some(match kind {
        EventKind::AgentReady => intern!(py, "agent_ready"),
        EventKind::AgentExited => intern!(py, "agent_exited"),
        EventKind::SessionOpened => intern!(py, "session_opened"),
        EventKind::SessionClosed => intern!(py, "session_closed"),
        EventKind::SessionUpdate => intern!(py, "session_update"),
        EventKind::TurnStarted => intern!(py, "turn_started"),
        EventKind::TurnEnded => intern!(py, "turn_ended"),
        EventKind::PermissionRequested => intern!(py, "permission_requested"),
        EventKind::PermissionResolved => intern!(py, "permission_resolved"),
        EventKind::ElicitationRequested => intern!(py, "elicitation_requested"),
        EventKind::ElicitationResolved => intern!(py, "elicitation_resolved"),
        EventKind::ElicitationCompleted => intern!(py, "elicitation_completed"),
        EventKind::FsRead => intern!(py, "fs_read"),
        EventKind::FsWrite => intern!(py, "fs_write"),
        EventKind::TerminalCreated => intern!(py, "terminal_created"),
        EventKind::TerminalExited => intern!(py, "terminal_exited"),
        EventKind::AgentStderr => intern!(py, "agent_stderr"),
        EventKind::ProtocolNoise => intern!(py, "protocol_noise"),
        EventKind::ProtocolError => intern!(py, "protocol_error"),
        EventKind::ExtNotification => intern!(py, "ext_notification"),
        EventKind::ExtRequest => intern!(py, "ext_request"),
        EventKind::Wire => intern!(py, "wire"),
        EventKind::CallCompleted => intern!(py, "call_completed"),
        EventKind::AgentRestarting => intern!(py, "agent_restarting"),
        EventKind::AgentRestarted => intern!(py, "agent_restarted"),
        EventKind::AgentFailed => intern!(py, "agent_failed"),
        EventKind::SessionLost => intern!(py, "session_lost"),
        _ => return None,
    })
}

#[pymethods]
impl Event {
    /// Strictly increasing per host, from 1, without gaps.
    #[getter]
    fn seq(&self) -> u64 {
        self.ev.seq
    }

    /// When the host observed it: RFC 3339, UTC, milliseconds.
    #[getter]
    fn at(&self) -> String {
        format_timestamp(self.ev.at)
    }

    /// The host's id for the agent.
    #[getter]
    fn agent(&self) -> u64 {
        self.ev.agent
    }

    /// The ACP `sessionId`, when the event belongs to a session.
    #[getter]
    fn session(&self) -> Option<&str> {
        self.ev.session.as_deref()
    }

    /// The host's turn id, when the event belongs to a prompt turn.
    #[getter]
    fn turn(&self) -> Option<u64> {
        self.ev.turn
    }

    #[getter]
    fn kind<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyString> {
        match kind_str(py, self.ev.kind) {
            Some(s) => s.clone(),
            // A kind added to the core later still arrives by its name (never as "unknown").
            None => pyo3::types::PyString::intern(py, self.ev.kind.as_str()),
        }
    }

    #[getter]
    fn replay(&self) -> bool {
        self.ev.replay
    }

    /// The payload (parsed on first access): the ACP JSON as the agent sent it, or the host's
    /// documented fields.
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let v = self.data.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(json_loads(py, self.ev.data.get())?.unbind())
        })?;
        Ok(v.clone_ref(py))
    }

    /// The payload as the JSON text it arrived as.
    #[getter]
    fn data_json(&self) -> &str {
        self.ev.data.get()
    }

    /// For `session_update` events: the `sessionUpdate` discriminator (else `None`).
    #[getter]
    fn update_kind(&self) -> Option<String> {
        self.ev.update_kind()
    }

    /// The envelope as compact JSON (docs/EVENTS.md).
    fn to_json(&self) -> String {
        self.ev.to_json()
    }

    /// The envelope as a dict (`session`/`turn` present only when set, as in the JSON).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_loads(py, &self.ev.to_json())
    }

    fn __repr__(&self) -> String {
        let mut s = format!(
            "Event(seq={}, kind={:?}, agent={}",
            self.ev.seq,
            self.ev.kind.as_str(),
            self.ev.agent
        );
        if let Some(sess) = &self.ev.session {
            s.push_str(&format!(", session={:?}", &**sess));
        }
        if let Some(t) = self.ev.turn {
            s.push_str(&format!(", turn={t}"));
        }
        let data = self.ev.data.get();
        if data.len() > 120 {
            let mut cut = 120;
            while !data.is_char_boundary(cut) {
                cut -= 1;
            }
            s.push_str(&format!(", data={}…)", &data[..cut]));
        } else {
            s.push_str(&format!(", data={data})"));
        }
        s
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<Event>() {
            Ok(o) => {
                let o = o.get();
                (self.ev.seq == o.ev.seq && self.ev.to_json() == o.ev.to_json()).into_py_any(py)
            }
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __hash__(&self) -> u64 {
        self.ev.seq ^ (self.ev.agent << 48)
    }
}

/// RFC 3339 UTC with millisecond precision, e.g. `2026-11-30T14:00:00.123Z`: the core's formatter.
pub(crate) fn format_timestamp(at: SystemTime) -> String {
    acp_host::events::format_timestamp(at)
}
