//! Events in Python: the `Event` class (the docs/EVENTS.md envelope, `data` parsed lazily) and
//! `Subscription`, a stream over one of the core's hub readers (`acp_host::EventHub`: the host
//! reader, a live reader of every event or one agent's, a session reader). The hub decides where
//! a stream starts, when it ends, what it left out and when a prompt's turn counts as delivered;
//! this module only carries its events into Python (docs/EVENTS.md, "Readers").
//!
//! Each subscription has a forwarder task that pulls the reader in batches into the
//! subscription's own queue of at most `capacity` events (the host's `eventCapacity`, at least
//! one batch). A batch counts as handed on (the hub's turn delivery) once it is in that queue, so
//! a sync script can open `session.events()`, call `session.prompt()` and read the stream after
//! it returned. While the queue is full the forwarder stops pulling, the reader and then the
//! core's queue fill, and the host stops reading the agents (nothing is dropped).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use acp_host::events::Scope;
use acp_host::{Event as CoreEvent, EventHub, EventKind, HubReader};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;
use pyo3::{IntoPyObjectExt, intern};
use tokio::sync::{Semaphore, mpsc, watch};

/// Events pulled from a reader at once and handed to a subscriber in one chunk.
pub(crate) const BATCH: usize = 1024;

type Chunk = Vec<Arc<CoreEvent>>;

/// The host's hub (`None` when events are disabled: every stream is empty and ended), and what
/// its subscriptions share.
#[derive(Debug)]
pub(crate) struct Streams {
    hub: Option<EventHub>,
    /// A subscription's queue (events).
    capacity: usize,
    /// The host is closing: a full subscription nobody pulls is given up after [`CLOSE_GRACE`].
    closing: watch::Sender<bool>,
}

impl Streams {
    pub(crate) fn new(hub: Option<EventHub>, capacity: usize) -> Streams {
        Streams {
            hub,
            capacity: capacity.max(BATCH),
            closing: watch::channel(false).0,
        }
    }

    /// `host.events()`: the host reader the first time (it also holds what came before it), a
    /// live reader of every event after (as Kotlin's `host.events()`).
    pub(crate) fn host(&self) -> Subscription {
        let reader = self
            .hub
            .as_ref()
            .map(|h| h.take_host().unwrap_or_else(|| h.subscribe(Scope::All)));
        let left_out = reader.as_ref().map_or(0, HubReader::dropped);
        self.open(reader, left_out)
    }

    /// `agent.events()`: the agent's events from now on, until its last one.
    pub(crate) fn agent(&self, agent: u64) -> Subscription {
        let reader = self.hub.as_ref().map(|h| h.subscribe(Scope::Agent(agent)));
        self.open(reader, 0)
    }

    /// `session.events()`: the session's events from the oldest its history holds.
    pub(crate) fn session(&self, agent: u64, session: &str) -> Subscription {
        let reader = self.hub.as_ref().map(|h| h.session(agent, session));
        let left_out = reader.as_ref().map_or(0, HubReader::missed);
        self.open(reader, left_out)
    }

    /// A prompt's answer waits for this: its turn's `turn_ended` is in every open stream of the
    /// session (`events_stalled` after `eventStallTimeoutMs` when one nobody pulls is full).
    pub(crate) async fn turn_delivered(
        &self,
        agent: u64,
        session: &str,
        turn: u64,
    ) -> acp_host::Result<()> {
        match &self.hub {
            Some(h) => h.turn_delivered(agent, session, turn).await,
            None => Ok(()),
        }
    }

    /// The host is closing: its streams end once they have what is queued.
    pub(crate) fn close(&self) {
        self.closing.send_replace(true);
    }

    fn open(&self, reader: Option<HubReader>, left_out: u64) -> Subscription {
        let (tx, rx) = mpsc::unbounded_channel();
        let room = Arc::new(Semaphore::new(self.capacity));
        // Without a reader the sender goes here: the subscription is empty and ended.
        let task = reader.map(|r| {
            let forwarding = forward(r, tx, room.clone(), self.closing.subscribe());
            crate::rt().spawn(forwarding).abort_handle()
        });
        Subscription {
            state: Arc::new(tokio::sync::Mutex::new(SubState {
                rx,
                buf: VecDeque::new(),
                room: room.clone(),
            })),
            room,
            ended: AtomicBool::new(false),
            left_out,
            task,
        }
    }
}

/// How long a closing host still waits for a full subscription's reader to make room.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// Move the reader's events into the subscription's queue, waiting for room; ends (dropping the
/// reader and the sender) when the reader ended, the subscription closed, or (once the host is
/// closing) it did not make room within [`CLOSE_GRACE`]: a stream nobody pulls must not keep
/// every other stream of a closed host from ending.
async fn forward(
    reader: HubReader,
    tx: mpsc::UnboundedSender<Chunk>,
    room: Arc<Semaphore>,
    mut closing: watch::Receiver<bool>,
) {
    loop {
        // Coming back for more tells the hub the previous chunk was handed on.
        let chunk = reader.next_batch(BATCH).await;
        if chunk.is_empty() {
            return;
        }
        let n = u32::try_from(chunk.len()).unwrap_or(u32::MAX);
        let given_up = async {
            let _ = closing.wait_for(|c| *c).await;
            tokio::time::sleep(CLOSE_GRACE).await;
        };
        tokio::select! {
            permit = room.acquire_many(n) => match permit {
                Ok(permit) => permit.forget(),
                Err(_) => return,
            },
            () = given_up => return,
        }
        if tx.send(chunk).is_err() {
            return;
        }
    }
}

#[derive(Debug)]
struct SubState {
    rx: mpsc::UnboundedReceiver<Chunk>,
    buf: VecDeque<Arc<CoreEvent>>,
    room: Arc<Semaphore>,
}

impl SubState {
    /// Move a received chunk into the buffer and give its room back to the forwarder.
    fn take(&mut self, chunk: Chunk) {
        self.room.add_permits(chunk.len());
        self.buf.extend(chunk);
    }
}

/// A stream of events (`for ev in sub`, or batches with `next_batch` / `next_batch_async`).
/// Ends (StopIteration / `None`) when its hub reader ended (docs/EVENTS.md, "The one
/// session-stream rule"; the host's streams when it closes) and everything was taken.
#[pyclass(frozen, module = "acp_host._native")]
#[derive(Debug)]
pub(crate) struct Subscription {
    state: Arc<tokio::sync::Mutex<SubState>>,
    room: Arc<Semaphore>,
    /// A pull saw the end (the buffer is empty and the forwarder let go).
    ended: AtomicBool,
    /// What the reader left out before its first event (`missed` / `dropped`).
    left_out: u64,
    /// The forwarder (`None`: events are disabled).
    task: Option<tokio::task::AbortHandle>,
}

impl Subscription {
    fn stop(&self) {
        self.room.close();
        // The forwarder goes, and with it the reader: the hub no longer waits for this stream.
        if let Some(t) = &self.task {
            t.abort();
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.stop();
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
            // What the forwarder handed over already counts as ready (`next(timeout=0)` gets it).
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

    /// How many events the stream left out before its first one, reported (the hub's count):
    /// for a session stream, those its bounded history no longer held when the stream was
    /// opened; for the host's first stream, those dropped before it was opened; else 0. The
    /// same as `missed`.
    #[getter]
    fn dropped(&self) -> u64 {
        self.left_out
    }

    /// How many events the stream left out before its first one (see `dropped`).
    #[getter]
    fn missed(&self) -> u64 {
        self.left_out
    }

    /// Stop receiving; the hub forgets this stream's reader (and stops waiting for it).
    fn close(&self) {
        // Without the state lock: another thread or task may be waiting in it. Readers see the
        // closed room and end; the buffered events go with the last reference.
        self.stop();
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
