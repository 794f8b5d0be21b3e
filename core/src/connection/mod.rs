//! The connection actor: one task per agent owns every piece of mutable connection state.
//!
//! Handles talk to it over a bounded command channel and get replies on oneshots. Inbound
//! notifications are applied strictly in arrival order; inbound requests are registered in order
//! and answered from spawned tasks, so the actor never awaits the embedder. Agent death fails
//! every pending call at once with [`Error::AgentExited`].

mod elicitation;
mod inbound;
mod io;
mod state;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::time::{DelayQueue, delay_queue};

pub(crate) use io::ReaderMsg;
use io::{reader_task, writer_task};
pub(crate) use state::AgentShared;
pub use state::{AgentInfo, PROTOCOL_VERSION};

use crate::error::{Error, ExitInfo, Result};
use crate::events::{EventBus, EventKind, PendingEvent, raw_json};
use crate::host::HostConfig;
use crate::permission::policy::{Grants, Subject, Verdict};
use crate::permission::{
    DecidedBy, Outcome, PermissionHandler, PermissionOption, PermissionRequest, Settled,
    allow_outcome, deny_outcome, tool_call,
};
use crate::services::ClientCapabilities;
use crate::services::terminal::TerminalManager;
use crate::session::SessionView;
use crate::transport::{AgentProcess, Transport};
use crate::wire::message::{self, Incoming, RawId, RpcError, codes};

/// Host-wide state shared by every connection.
#[derive(Debug)]
pub(crate) struct HostShared {
    pub bus: EventBus,
    pub config: HostConfig,
    pub next_turn: AtomicU64,
    pub next_permission: AtomicU64,
    /// Permission request id → (agent id, resolved?). Bounded: old resolved entries are trimmed.
    pub permissions: Mutex<BTreeMap<u64, (u64, bool)>>,
    pub next_elicitation: AtomicU64,
    /// Elicitation request id → (agent id, resolved?), bounded like `permissions`.
    pub elicitations: Mutex<BTreeMap<u64, (u64, bool)>>,
    /// Dropped when the host goes away: every actor then shuts its agent down.
    pub alive: watch::Receiver<()>,
    /// The effective policy (configured, or the preset implied by the permission handler).
    pub policy: crate::permission::policy::Policy,
}

const PERMISSION_MEMORY: usize = 8192;

impl HostShared {
    fn note_permission(&self, id: u64, agent: u64, resolved: bool) {
        note(&self.permissions, id, agent, resolved);
    }

    fn note_elicitation(&self, id: u64, agent: u64, resolved: bool) {
        note(&self.elicitations, id, agent, resolved);
    }

    /// (agent, resolved?) of an elicitation request this host has seen.
    pub(crate) fn elicitation_state(&self, id: u64) -> Option<(u64, bool)> {
        self.elicitations
            .lock()
            .ok()
            .and_then(|m| m.get(&id).copied())
    }
}

/// Remember which agent an embedder question belongs to (and whether it was answered), so a
/// late or unknown answer gets a precise error; resolved entries are trimmed past the bound.
fn note(map: &Mutex<BTreeMap<u64, (u64, bool)>>, id: u64, agent: u64, resolved: bool) {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.insert(id, (agent, resolved));
    while map.len() > PERMISSION_MEMORY {
        let Some((&oldest, _)) = map.iter().find(|(_, (_, r))| *r) else {
            break;
        };
        map.remove(&oldest);
    }
}

/// Run an embedder's decider: `make` builds its future. A panic while building or polling it
/// becomes an `Err` (the question is then answered the fail-closed way), never reaching the
/// actor.
pub(super) async fn guarded<T, F>(
    make: impl FnOnce() -> F,
    what: &str,
) -> std::result::Result<T, String>
where
    F: std::future::Future<Output = std::result::Result<T, String>>,
{
    let mut make = Some(make);
    let mut fut: Option<std::pin::Pin<Box<F>>> = None;
    std::future::poll_fn(|cx| {
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Some(make) = make.take() {
                fut = Some(Box::pin(make()));
            }
            match fut.as_mut() {
                Some(f) => f.as_mut().poll(cx),
                None => std::task::Poll::Ready(Err(format!("{what} decider is gone"))),
            }
        }));
        match step {
            Ok(poll) => poll,
            Err(_) => {
                fut = None;
                std::task::Poll::Ready(Err(format!("{what} decider panicked")))
            }
        }
    })
    .await
}

/// `permission_requested`'s payload, serialized straight from borrowed fields (no copy of the
/// tool call).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PermissionRequestedData<'a> {
    request_id: u64,
    session_id: &'a str,
    tool_call: &'a crate::wire::LazyJson,
    options: &'a [PermissionOption],
}

/// `permission_resolved`'s payload.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PermissionResolvedData<'a> {
    request_id: u64,
    session_id: &'a str,
    decided_by: DecidedBy,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    outcome: Option<&'a Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    option_kind: Option<&'a str>,
}

/// The result of `session/request_permission`.
#[derive(serde::Serialize)]
struct PermissionResult<'a> {
    outcome: &'a Outcome,
}

/// Poll a future once, with a waker that does nothing: its answer if it has one now. Whoever
/// polls it next registers the waker that counts.
pub(super) fn poll_once<F: std::future::Future + ?Sized>(
    fut: std::pin::Pin<&mut F>,
) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.poll(&mut cx) {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => None,
    }
}

/// Bookkeeping attached to an outbound request, applied when its response arrives.
#[derive(Debug)]
pub(crate) enum ReqCtx {
    Plain,
    Initialize,
    NewSession {
        cwd: String,
        extra: Vec<String>,
    },
    /// load (`replay` = true) or resume, for a known session id.
    OpenSession {
        id: Arc<str>,
        cwd: String,
        extra: Vec<String>,
        replay: bool,
        origin: &'static str,
    },
    ForkSession {
        cwd: String,
        extra: Vec<String>,
    },
    Prompt {
        session: Arc<str>,
        turn: u64,
        /// The turn's agent text and thought text, assembled from its chunks.
        text: Arc<Mutex<crate::session::TurnText>>,
    },
    SetModel {
        session: Arc<str>,
        model: String,
    },
    SetMode {
        session: Arc<str>,
        mode: String,
    },
    SetConfig {
        session: Arc<str>,
    },
    CloseSession {
        id: Arc<str>,
    },
    DeleteSession {
        id: Arc<str>,
    },
}

/// A command from a handle.
#[derive(Debug)]
pub(crate) enum Command {
    Request {
        /// Allocated by the handle (so a dropped caller can name it in `Abandon`).
        id: u64,
        method: Cow<'static, str>,
        params: Box<RawValue>,
        ctx: ReqCtx,
        timeout: Option<Duration>,
        reply: oneshot::Sender<Result<Box<RawValue>>>,
    },
    Cancel {
        session: Arc<str>,
        reply: oneshot::Sender<Result<()>>,
    },
    /// The caller stopped waiting for request `id`: tell the agent (`$/cancel_request`, or
    /// `session/cancel` for a prompt). The response is still processed when it comes.
    Abandon { id: u64 },
    RespondPermission {
        request_id: u64,
        option_id: Option<String>,
        reply: oneshot::Sender<Result<()>>,
    },
    RespondElicitation {
        request_id: u64,
        /// `Err(reason)`: the embedder's answer was unusable (answered `cancel`).
        answer: std::result::Result<crate::elicitation::ElicitationAnswer, String>,
        reply: oneshot::Sender<Result<()>>,
    },
    Shutdown {
        /// Why, when the host itself decided (e.g. a failed handshake); reported in `agent_exited`.
        error: Option<Value>,
        reply: oneshot::Sender<ExitInfo>,
    },
    /// Events from above the connection (the supervisor's), in order after this connection's;
    /// `reply` once they are queued.
    Emit {
        events: Vec<PendingEvent>,
        reply: oneshot::Sender<()>,
    },
}

/// Results of work the actor started but does not wait for.
#[derive(Debug)]
enum Completion {
    RequestTimeout(u64),
    CancelGraceElapsed(u64),
    PermissionAnswer {
        perm: u64,
        answer: std::result::Result<Option<String>, String>,
    },
    ElicitationAnswer {
        eid: u64,
        answer: std::result::Result<crate::elicitation::ElicitationAnswer, String>,
    },
    ElicitationTimeout(u64),
    PermissionTimeout(u64),
    WriterDone(std::result::Result<(), String>),
    /// A served fs/terminal request finished.
    Served(Box<inbound::ServedResult>),
    /// A terminal's command exited.
    TerminalExited {
        session: Arc<str>,
        terminal_id: String,
        exit: Option<crate::services::terminal::TerminalExit>,
    },
    ExitGraceElapsed,
}

#[derive(Debug)]
struct PendingOut {
    method: Cow<'static, str>,
    ctx: ReqCtx,
    reply: Option<oneshot::Sender<Result<Box<RawValue>>>>,
    timer: Option<delay_queue::Key>,
    /// A prompt whose session was cancelled (by the caller's abort or `session/cancel`):
    /// `timer` is now the grace for the agent to answer.
    aborted: bool,
}

/// A request the host gave up on (timeout, or an aborted prompt past its grace): its late answer
/// is reported, never applied.
#[derive(Debug)]
struct GaveUp {
    method: Cow<'static, str>,
    /// `(session, turn)` of a prompt.
    turn: Option<(Arc<str>, u64)>,
}

/// Deadlines the actor keeps in its one timer wheel (no sleeping task per request).
#[derive(Debug, Clone, Copy)]
enum Timer {
    Request(u64),
    Permission(u64),
    /// An aborted prompt's grace for the agent to answer `session/cancel`.
    CancelGrace(u64),
    Elicitation(u64),
}

#[derive(Debug)]
struct PermEntry {
    raw_id: RawId,
    session: Arc<str>,
    turn: Option<u64>,
    options: Vec<PermissionOption>,
    /// Set when a decider was handed the request (its `Settled`).
    settled: Option<watch::Sender<bool>>,
    /// The running decider, dropped once the request is resolved by anyone.
    decider: Option<tokio::task::AbortHandle>,
    /// What the policy matched against (for session grants).
    subject: Subject,
    /// The rule that decided, reported in `permission_resolved`.
    rule: Option<String>,
    timer: Option<delay_queue::Key>,
}

#[derive(Debug)]
enum SessionStatus {
    Open,
    /// load/resume in flight: updates are buffered until the response.
    Opening {
        replay: bool,
    },
}

#[derive(Debug)]
struct SessionEntry {
    view: Arc<Mutex<SessionView>>,
    status: SessionStatus,
    active_turn: Option<u64>,
    /// `session/cancel` was sent for the active turn: new permission requests get `cancelled`.
    cancelling: bool,
    /// A turn the host gave up on (timeout, aborted past its grace) that the agent has not
    /// answered yet: its late updates keep its turn id, its permission requests are cancelled.
    orphan_turn: Option<u64>,
    /// Where the active turn's message and thought chunks are assembled (its `TurnResult`).
    turn_text: Option<Arc<Mutex<crate::session::TurnText>>>,
    buffer: Vec<(Arc<str>, Box<RawValue>)>,
    /// Opened early during a long `session/load` replay: updates stay tagged `replay` until the
    /// load response arrives.
    replaying: bool,
}

type Reply = Box<dyn FnOnce() + Send>;

/// Events the host's queue had no room for, and the replies queued behind them.
///
/// The actor never waits for the event queue: what does not fit waits here, the actor stops
/// reading its agent until the queue has room again (backpressure on the agent's stdout), and
/// everything else (commands, timers, cancel, shutdown) keeps running.
#[derive(Default)]
struct Backlog {
    events: VecDeque<PendingEvent>,
    /// (number of events that must be queued first, reply), in order.
    replies: VecDeque<(u64, Reply)>,
    /// Events ever put into the backlog.
    entered: u64,
}

impl Backlog {
    /// Events of the backlog ever handed to the queue.
    fn queued(&self) -> u64 {
        self.entered - self.events.len() as u64
    }

    /// Replies whose events are all queued.
    fn ready_replies(&mut self) -> Vec<Reply> {
        let queued = self.queued();
        let mut ready = Vec::new();
        while self
            .replies
            .front()
            .is_some_and(|(mark, _)| *mark <= queued)
        {
            if let Some((_, r)) = self.replies.pop_front() {
                ready.push(r);
            }
        }
        ready
    }
}

/// Why the connection ended.
#[derive(Debug, Clone)]
enum Gone {
    Exited(ExitInfo),
    Shutdown(ExitInfo),
}

impl Gone {
    fn error(&self) -> Error {
        match self {
            Gone::Exited(info) => Error::AgentExited(info.clone()),
            Gone::Shutdown(_) => Error::Closed("agent was shut down".into()),
        }
    }
    fn info(&self) -> &ExitInfo {
        match self {
            Gone::Exited(i) | Gone::Shutdown(i) => i,
        }
    }
}

/// Sizes of the actor's channels.
const COMMAND_QUEUE: usize = 64;
const READER_QUEUE: usize = 16;
const RECENT_IDS: usize = 1024;
/// Events queued by one actor step before they are handed over.
const OUTBOX_MAX: usize = 512;

/// Start the reader, writer and actor tasks for `transport`; returns the command sender.
pub(crate) fn start(
    agent: u64,
    host: Arc<HostShared>,
    agent_shared: Arc<AgentShared>,
    caps: ClientCapabilities,
    transport: Transport,
) -> mpsc::Sender<Command> {
    let (cmd_tx, cmd_rx) = mpsc::channel(COMMAND_QUEUE);
    let (reader_tx, reader_rx) = mpsc::channel(READER_QUEUE);
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let out = io::Outbound::new(transport.writer);

    tokio::spawn(reader_task(
        transport.reader,
        host.config.max_line_bytes,
        host.config.wire_events,
        reader_tx,
    ));
    {
        let done_tx = done_tx.clone();
        let out = out.clone();
        tokio::spawn(async move {
            let res = writer_task(out).await;
            let _ = done_tx.send(Completion::WriterDone(res.map_err(|e| e.to_string())));
        });
    }
    let exit_watch = transport.process.as_ref().map(AgentProcess::exit_watch);
    if let Some(p) = &transport.process {
        let _ = agent_shared.pid.set(p.pid);
    }
    let actor = Actor {
        agent,
        host: host.clone(),
        shared: agent_shared,
        caps,
        out: io::OutHandle(out),
        process: transport.process,
        exit_watch,
        pending: HashMap::new(),
        recent: VecDeque::new(),
        recent_set: HashSet::new(),
        abandoned: HashMap::new(),
        perms: HashMap::new(),
        elicits: HashMap::new(),
        url_elicitations: VecDeque::new(),
        sessions: HashMap::new(),
        pending_new: 0,
        early: Vec::new(),
        done_tx,
        reader_open: true,
        exit_seen: false,
        noise: 0,
        gone: None,
        shutdown_error: None,
        outbox: Mutex::new(Vec::new()),
        replies: Mutex::new(Vec::new()),
        backlog: Mutex::new(Backlog::default()),
        stderr: transport.stderr,
        grants: Grants::default(),
        served: HashMap::new(),
        next_served: 0,
        timers: DelayQueue::new(),
        writer_dead: false,
        inbound_overflow: false,
        terminals: TerminalManager::new(host.config.terminal_limits),
    };
    tokio::spawn(actor.run(cmd_rx, reader_rx, done_rx));
    cmd_tx
}

struct Actor {
    agent: u64,
    host: Arc<HostShared>,
    shared: Arc<AgentShared>,
    caps: ClientCapabilities,
    out: io::OutHandle,
    process: Option<AgentProcess>,
    exit_watch: Option<watch::Receiver<Option<crate::transport::RawExit>>>,
    pending: HashMap<u64, PendingOut>,
    /// Recently answered outbound ids, to tell a duplicate response from an unknown one.
    recent: VecDeque<u64>,
    recent_set: HashSet<u64>,
    /// Ids we gave up on (timeout / caller gone): a late answer is expected and ignored.
    abandoned: HashMap<u64, GaveUp>,
    perms: HashMap<u64, PermEntry>,
    /// Pending `elicitation/create` requests, by host-wide id.
    elicits: HashMap<u64, elicitation::ElicitEntry>,
    /// Recent URL elicitation ids (for `elicitation/complete`), bounded.
    url_elicitations: VecDeque<String>,
    sessions: HashMap<Arc<str>, SessionEntry>,
    /// session/new or session/fork requests in flight (their session id is not known yet).
    pending_new: usize,
    /// Updates for unknown sessions while a session/new is in flight, in wire order.
    early: Vec<(Arc<str>, Arc<str>, Box<RawValue>)>,
    done_tx: mpsc::UnboundedSender<Completion>,
    reader_open: bool,
    exit_seen: bool,
    noise: u64,
    gone: Option<Gone>,
    shutdown_error: Option<Value>,
    /// Events of the current step.
    outbox: Mutex<Vec<PendingEvent>>,
    /// Replies to callers of the current step, sent once the step's events are queued.
    replies: Mutex<Vec<Reply>>,
    /// What did not fit into the host's event queue yet, in order (see `Backlog`).
    backlog: Mutex<Backlog>,
    /// The agent's stderr lines (spawned agents), emitted in order with everything else.
    stderr: Option<mpsc::Receiver<PendingEvent>>,
    /// In-memory session grants (`allow_always` answers); they die with the session.
    grants: Grants,
    /// fs/terminal requests being served (the agent's request ids): answered once their task
    /// reports back, or `-32800` if the agent withdraws them first.
    served: HashMap<RawId, inbound::Served>,
    next_served: u64,
    /// Request and permission deadlines.
    timers: DelayQueue<Timer>,
    /// Writing to the agent failed (or it stopped reading): nothing more is written.
    writer_dead: bool,
    /// The agent has too many requests pending; reported once per episode.
    inbound_overflow: bool,
    /// This agent's terminals; all killed when a session closes or the agent goes away.
    terminals: TerminalManager,
}

impl Actor {
    async fn run(
        mut self,
        mut cmd_rx: mpsc::Receiver<Command>,
        mut reader_rx: mpsc::Receiver<io::Batch>,
        mut done_rx: mpsc::UnboundedReceiver<Completion>,
    ) {
        let mut alive = self.host.alive.clone();
        let mut host_alive = true;
        let bus = self.host.bus.clone();
        let stall = self.host.config.event_stall_timeout;
        loop {
            self.flush();
            let backlogged = self.backlogged();
            let release = backlogged && stall.is_some() && self.has_waiting_replies();
            let exit_watch = self.exit_watch.clone();
            tokio::select! {
                Some(done) = done_rx.recv() => self.on_completion(done).await,
                Some(expired) = next_timer(&mut self.timers), if !self.timers.is_empty() => {
                    let done = match expired {
                        Timer::Request(id) => Completion::RequestTimeout(id),
                        Timer::CancelGrace(id) => Completion::CancelGraceElapsed(id),
                        Timer::Elicitation(eid) => Completion::ElicitationTimeout(eid),
                        Timer::Permission(perm) => Completion::PermissionTimeout(perm),
                    };
                    self.on_completion(done).await;
                }
                // Backpressure: while events wait for room, the agent is not read (nothing else
                // waits for the consumer).
                batch = reader_rx.recv(), if self.reader_open && !backlogged => match batch {
                    Some(batch) => {
                        for msg in batch.msgs {
                            self.on_reader(msg).await;
                        }
                    }
                    None => self.on_reader(ReaderMsg::Eof(None)).await,
                },
                Some(ev) = recv_stderr(&mut self.stderr), if !backlogged => self.emit(ev).await,
                () = bus.wait_room(), if backlogged => {}
                // Known answers go out at half the stall timeout, so a caller never gives up
                // (at the full timeout) on an answer the actor already holds.
                _ = bus.wait_stalled(stall.unwrap_or_default() / 2), if release => self.release_replies(),
                cmd = cmd_rx.recv() => match cmd {
                    Some(Command::Shutdown { reply, error }) => {
                        self.shutdown_error = error;
                        self.shutdown(&mut reader_rx).await;
                        let info = self.gone.as_ref().map(|g| g.info().clone()).unwrap_or_default();
                        let answer = move || {
                            let _ = reply.send(info);
                        };
                        self.flush();
                        if self.backlogged() {
                            // Nobody is pulling: the agent is down, say so now; its last events
                            // (`agent_exited`) follow in order once there is room.
                            answer();
                        } else {
                            self.defer(answer);
                        }
                    }
                    Some(cmd) => self.on_command(cmd).await,
                    None => {
                        // Every handle is gone: nobody can use this agent any more.
                        self.shutdown(&mut reader_rx).await;
                        self.hand_off_backlog();
                        break;
                    }
                },
                _ = wait_exit(exit_watch), if !self.exit_seen && self.gone.is_none() => {
                    self.exit_seen = true;
                    // Give the reader a moment to deliver what the agent wrote before exiting.
                    let tx = self.done_tx.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        let _ = tx.send(Completion::ExitGraceElapsed);
                    });
                }
                res = alive.changed(), if host_alive => {
                    if res.is_err() {
                        host_alive = false;
                        self.shutdown(&mut reader_rx).await;
                    }
                }
            }
        }
    }

    // ----- events ---------------------------------------------------------------------------

    /// Queue an event; it reaches the host's stream at the next flush (end of this step, or when
    /// the outbox is full). Order is preserved; batching amortises the queue's synchronisation.
    async fn emit(&self, ev: PendingEvent) {
        let full = {
            let mut out = self.outbox.lock().unwrap_or_else(|p| p.into_inner());
            out.push(ev);
            out.len() >= OUTBOX_MAX
        };
        if full {
            self.flush();
        }
    }

    /// Hand the step's events to the host's queue (what does not fit waits in the backlog; this
    /// never waits), then answer the callers whose events are all queued.
    fn flush(&self) {
        let batch = std::mem::take(&mut *self.outbox.lock().unwrap_or_else(|p| p.into_inner()));
        let replies = std::mem::take(&mut *self.replies.lock().unwrap_or_else(|p| p.into_inner()));
        if batch.is_empty() && replies.is_empty() && !self.backlogged() {
            return;
        }
        let ready = {
            let mut b = self.backlog.lock().unwrap_or_else(|p| p.into_inner());
            // A reply waits for its own step's events (and so for everything queued before
            // them); a step that made no events answers at once, even behind a backlog.
            let mark = if batch.is_empty() {
                b.queued()
            } else {
                b.entered + batch.len() as u64
            };
            b.entered += batch.len() as u64;
            b.events.extend(batch);
            b.replies.extend(replies.into_iter().map(|r| (mark, r)));
            self.host.bus.try_push(&mut b.events);
            b.ready_replies()
        };
        for reply in ready {
            reply();
        }
    }

    /// Whether events are waiting for room in the host's queue (then the agent is not read).
    fn backlogged(&self) -> bool {
        !self
            .backlog
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .events
            .is_empty()
    }

    fn has_waiting_replies(&self) -> bool {
        !self
            .backlog
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replies
            .is_empty()
    }

    /// Nobody has pulled for the stall timeout: answer the callers now (their results are known;
    /// their events stay queued, in order) rather than leave them hanging.
    fn release_replies(&self) {
        let replies: Vec<Reply> = {
            let mut b = self.backlog.lock().unwrap_or_else(|p| p.into_inner());
            b.replies.drain(..).map(|(_, r)| r).collect()
        };
        for reply in replies {
            reply();
        }
    }

    /// Answer a caller once the events of this step are in the stream: whoever awaits a call sees
    /// its events (`turn_ended`, `session_opened`, ...) already queued when the call returns.
    fn defer(&self, reply: impl FnOnce() + Send + 'static) {
        self.replies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Box::new(reply));
    }

    /// The actor is done; whatever is still in the backlog is delivered by a task of its own
    /// (which may wait for room: nobody else is waiting on it).
    fn hand_off_backlog(&self) {
        self.flush();
        let mut b = std::mem::take(&mut *self.backlog.lock().unwrap_or_else(|p| p.into_inner()));
        if b.events.is_empty() && b.replies.is_empty() {
            return;
        }
        let bus = self.host.bus.clone();
        tokio::spawn(async move {
            loop {
                bus.try_push(&mut b.events);
                for reply in b.ready_replies() {
                    reply();
                }
                if b.events.is_empty() {
                    break;
                }
                bus.wait_room().await;
            }
            for (_, reply) in b.replies.drain(..) {
                reply();
            }
        });
    }

    fn event(&self, kind: EventKind, data: Box<RawValue>) -> PendingEvent {
        PendingEvent::new(self.agent, kind, data)
    }

    async fn protocol_error(&self, reason: &str, message: String, extra: Value) {
        let mut data = serde_json::json!({ "reason": reason, "message": message });
        if let (Value::Object(d), Value::Object(e)) = (&mut data, extra) {
            d.extend(e);
        }
        tracing::debug!(agent = self.agent, reason, "protocol error");
        self.emit(self.event(EventKind::ProtocolError, raw_json(&data)))
            .await;
    }

    // ----- writing ----------------------------------------------------------------------------

    async fn write(&mut self, line: String) {
        if self.host.config.wire_events
            && let Ok(raw) = RawValue::from_string(line.clone())
        {
            let data = format!("{{\"direction\":\"out\",\"message\":{}}}", raw.get());
            if let Ok(data) = RawValue::from_string(data) {
                self.emit(self.event(EventKind::Wire, data)).await;
            }
        }
        if self.writer_dead {
            return;
        }
        let queued = self.out.send(line);
        if queued > self.host.config.max_outbound_bytes && self.gone.is_none() && !self.writer_dead
        {
            // The agent stopped reading its stdin while we keep having things to say: it is
            // stuck, and buffering for it without bound is how hosts run out of memory.
            tracing::warn!(
                agent = self.agent,
                queued,
                "agent is not reading its stdin; killing it"
            );
            self.protocol_error(
                "stdin_stalled",
                format!("agent stopped reading its stdin ({queued} bytes queued); killing it"),
                Value::Null,
            )
            .await;
            match &self.process {
                Some(p) => p.signal(crate::transport::GroupSignal::Kill),
                // No process to kill (a `connect` transport): end the connection ourselves.
                None => {
                    self.writer_failed(format!(
                        "agent stopped reading its input ({queued} bytes queued)"
                    ))
                    .await;
                }
            }
        }
    }

    /// The way to the agent is broken (write error, or it stopped reading): stop writing and
    /// take the connection down at once: a process is killed (its exit fails the pending calls
    /// with `agent_exited`), a `connect` transport fails them with `io` and ends.
    async fn writer_failed(&mut self, message: String) {
        if self.writer_dead || self.gone.is_some() {
            return;
        }
        self.writer_dead = true;
        if let Some(p) = &self.process {
            // A process we cannot write to is taken down at once; its exit then fails every
            // pending call with `agent_exited` (exit status and stderr tail: the useful error).
            tracing::debug!(agent = self.agent, %message, "killing the agent");
            p.signal(crate::transport::GroupSignal::Kill);
            return;
        }
        let error = Error::Io(Arc::new(std::io::Error::new(
            std::io::ErrorKind::BrokenPipe,
            message,
        )));
        self.fail_pending(&error).await;
        self.reader_open = false;
        self.agent_gone().await;
    }

    async fn respond_result(&mut self, id: &RawId, result: &Value) {
        let raw = raw_json(result);
        self.write(message::result_line(id, &raw)).await;
    }

    async fn respond_error(&mut self, id: &RawId, code: i64, msg: &str) {
        let err = RpcError {
            code,
            message: msg.to_owned(),
            data: None,
        };
        self.write(message::error_line(id, &err)).await;
    }

    // ----- commands ---------------------------------------------------------------------------

    async fn on_command(&mut self, cmd: Command) {
        match cmd {
            Command::Emit { events, reply } => {
                for ev in events {
                    self.emit(ev).await;
                }
                self.defer(move || {
                    let _ = reply.send(());
                });
            }
            Command::Request {
                id,
                method,
                params,
                ctx,
                timeout,
                reply,
            } => {
                if let Some(gone) = &self.gone {
                    let error = gone.error();
                    self.defer(move || {
                        let _ = reply.send(Err(error));
                    });
                    return;
                }
                if let Err(e) = self.before_request(&ctx).await {
                    self.defer(move || {
                        let _ = reply.send(Err(e));
                    });
                    return;
                }
                if let ReqCtx::Prompt { session, turn, .. } = &ctx {
                    // turn_started precedes everything the agent sends for the turn.
                    let prompt = serde_json::from_str::<Value>(params.get())
                        .ok()
                        .and_then(|mut p| p.get_mut("prompt").map(Value::take))
                        .unwrap_or(Value::Null);
                    let data = raw_json(&serde_json::json!({ "prompt": prompt }));
                    let ev = self
                        .event(EventKind::TurnStarted, data)
                        .session(Some(session.clone()))
                        .turn(Some(*turn));
                    self.emit(ev).await;
                }
                let line = message::request_line(id, &method, &params);
                let timer = timeout.map(|t| self.timers.insert(Timer::Request(id), t));
                self.pending.insert(
                    id,
                    PendingOut {
                        method,
                        ctx,
                        reply: Some(reply),
                        timer,
                        aborted: false,
                    },
                );
                self.write(line).await;
            }
            Command::Abandon { id } => {
                let Some(pending) = self.pending.get(&id) else {
                    return;
                };
                if let ReqCtx::Prompt { session, .. } = &pending.ctx {
                    if pending.aborted {
                        return;
                    }
                    let session = session.clone();
                    let _ = self.cancel_session(&session).await;
                } else {
                    let params = raw_json(&serde_json::json!({ "requestId": id }));
                    self.write(message::notification_line("$/cancel_request", &params))
                        .await;
                }
            }
            Command::Cancel { session, reply } => {
                let res = self.cancel_session(&session).await;
                self.defer(move || {
                    let _ = reply.send(res);
                });
            }
            Command::RespondPermission {
                request_id,
                option_id,
                reply,
            } => {
                let res = self.host_answer(request_id, Ok(option_id)).await;
                self.defer(move || {
                    let _ = reply.send(res);
                });
            }
            Command::RespondElicitation {
                request_id,
                answer,
                reply,
            } => {
                let res = self.elicitation_answer(request_id, answer).await;
                self.defer(move || {
                    let _ = reply.send(res);
                });
            }
            Command::Shutdown { reply, .. } => {
                // Handled by the run loop, which owns the reader channel to drain.
                let info = self
                    .gone
                    .as_ref()
                    .map(|g| g.info().clone())
                    .unwrap_or_default();
                self.defer(move || {
                    let _ = reply.send(info);
                });
            }
        }
    }

    /// State checks and bookkeeping that must happen in order with the wire, before sending.
    async fn before_request(&mut self, ctx: &ReqCtx) -> Result<()> {
        match ctx {
            ReqCtx::NewSession { .. } | ReqCtx::ForkSession { .. } => self.pending_new += 1,
            ReqCtx::OpenSession {
                id,
                cwd,
                extra,
                replay,
                ..
            } => {
                if let Some(existing) = self.sessions.get(id) {
                    if matches!(existing.status, SessionStatus::Opening { .. }) {
                        return Err(Error::Busy(format!("session {id} is already being opened")));
                    }
                    if existing.active_turn.is_some() {
                        return Err(Error::Busy(format!("session {id} has a turn in flight")));
                    }
                }
                let view = Arc::new(Mutex::new(SessionView::new(id, Some(cwd.clone()))));
                if let Ok(mut v) = view.lock() {
                    v.additional_directories = extra.clone();
                }
                self.sessions.insert(
                    id.clone(),
                    SessionEntry {
                        view,
                        status: SessionStatus::Opening { replay: *replay },
                        active_turn: None,
                        cancelling: false,
                        orphan_turn: None,
                        turn_text: None,
                        buffer: Vec::new(),
                        replaying: false,
                    },
                );
            }
            ReqCtx::Prompt {
                session,
                turn,
                text,
            } => {
                let Some(entry) = self.sessions.get_mut(session) else {
                    return Err(Error::NotFound(format!("session {session} is not open")));
                };
                if !matches!(entry.status, SessionStatus::Open) {
                    return Err(Error::Busy(format!("session {session} is still opening")));
                }
                if let Some(t) = entry.active_turn {
                    return Err(Error::Busy(format!(
                        "session {session} already has turn {t} in flight"
                    )));
                }
                entry.active_turn = Some(*turn);
                entry.cancelling = false;
                entry.orphan_turn = None;
                entry.turn_text = Some(text.clone());
                if let Ok(mut v) = entry.view.lock() {
                    v.active_turn = Some(*turn);
                }
            }
            ReqCtx::SetMode { session, .. } | ReqCtx::SetConfig { session }
                if !self.sessions.contains_key(session) =>
            {
                return Err(Error::NotFound(format!("session {session} is not open")));
            }
            _ => {}
        }
        Ok(())
    }

    /// Events that must precede the request on the wire (turn_started).
    async fn cancel_session(&mut self, session: &Arc<str>) -> Result<()> {
        if let Some(gone) = &self.gone {
            return Err(gone.error());
        }
        let params = raw_json(&serde_json::json!({ "sessionId": &**session }));
        self.write(message::notification_line("session/cancel", &params))
            .await;
        // The turn in flight gets `cancel_grace` to end; then the host gives up on it (an agent
        // that ignores the cancel holds neither the caller nor the session). The grace replaces
        // any prompt timeout.
        let grace = self.host.config.cancel_grace;
        let prompt = self.pending.iter_mut().find(|(_, p)| {
            !p.aborted && matches!(&p.ctx, ReqCtx::Prompt { session: s, .. } if s == session)
        });
        if let Some((&id, pending)) = prompt {
            pending.aborted = true;
            if let Some(key) = pending.timer.take() {
                self.timers.try_remove(&key);
            }
            pending.timer = Some(self.timers.insert(Timer::CancelGrace(id), grace));
        }
        if let Some(entry) = self.sessions.get_mut(session)
            && entry.active_turn.is_some()
        {
            entry.cancelling = true;
        }
        // The spec: after session/cancel, every pending permission request of the session is
        // answered `cancelled`.
        let ids: Vec<u64> = self
            .perms
            .iter()
            .filter(|(_, p)| p.session == *session)
            .map(|(&id, _)| id)
            .collect();
        for id in sorted(ids) {
            self.resolve_permission(id, Outcome::Cancelled, DecidedBy::Cancelled)
                .await;
        }
        // ... and so is every pending elicitation of the session.
        self.cancel_elicitations(Some(session), DecidedBy::Cancelled)
            .await;
        Ok(())
    }

    // ----- reader -----------------------------------------------------------------------------

    async fn on_reader(&mut self, msg: ReaderMsg) {
        match msg {
            ReaderMsg::Message { msg, lossy, raw } => {
                if let Some(raw) = raw {
                    let data = format!("{{\"direction\":\"in\",\"message\":{}}}", raw.get());
                    if let Ok(data) = RawValue::from_string(data) {
                        self.emit(self.event(EventKind::Wire, data)).await;
                    }
                }
                if lossy {
                    self.protocol_error(
                        "invalid_utf8",
                        "line was not valid UTF-8; decoded with U+FFFD replacements".into(),
                        Value::Null,
                    )
                    .await;
                }
                self.on_message(msg).await;
            }
            ReaderMsg::Noise { line, bytes } => {
                self.noise += 1;
                tracing::debug!(agent = self.agent, bytes, "non-JSON line on agent stdout");
                let data = serde_json::json!({ "line": line, "bytes": bytes, "count": self.noise });
                self.emit(self.event(EventKind::ProtocolNoise, raw_json(&data)))
                    .await;
            }
            ReaderMsg::TooLong { len } => {
                let limit = self.host.config.max_line_bytes;
                self.protocol_error(
                    "line_too_long",
                    format!("line of {len} bytes exceeds the {limit}-byte limit; skipped"),
                    serde_json::json!({ "bytes": len, "limit": limit }),
                )
                .await;
            }
            ReaderMsg::Eof(err) => {
                self.reader_open = false;
                if let Some(err) = err {
                    tracing::debug!(agent = self.agent, %err, "agent stdout read error");
                }
                self.agent_gone().await;
            }
        }
    }

    async fn on_message(&mut self, msg: Incoming) {
        match msg {
            Incoming::Update {
                session_id,
                update_kind,
                update,
            } => {
                self.on_update(session_id, update_kind, update).await;
            }
            Incoming::Response { id, result } => {
                let result = result.map_err(|e| Error::from_rpc(e.code, e.message, e.data));
                self.on_response(id, result).await;
            }
            Incoming::MalformedResponse { id, reason } => {
                self.protocol_error(
                    "invalid_response",
                    format!("{reason} (id {})", id.json()),
                    serde_json::json!({ "id": id.to_value() }),
                )
                .await;
                self.on_response(id, Err(Error::Protocol(reason))).await;
            }
            Incoming::Request { id, method, params } => self.on_request(id, method, params).await,
            Incoming::Notification { method, params } => self.on_notification(method, params).await,
            Incoming::Invalid { reason } => {
                self.protocol_error("invalid_message", reason, Value::Null)
                    .await;
            }
        }
    }

    async fn on_update(&mut self, key: Arc<str>, kind: Arc<str>, update: Box<RawValue>) {
        if let Some(entry) = self.sessions.get_mut(&key) {
            match entry.status {
                SessionStatus::Opening { .. } => {
                    entry.buffer.push((kind, update));
                    if entry.buffer.len() > self.host.config.early_update_limit {
                        // A very long replay: open the session now rather than buffer without bound.
                        self.open_session_now(&key, None, true).await;
                    }
                }
                SessionStatus::Open => {
                    let turn = entry.active_turn.or(entry.orphan_turn);
                    let replay = entry.replaying;
                    if let Some(text) = &entry.turn_text
                        && let Ok(mut t) = text.lock()
                    {
                        t.add_chunk(&kind, &update);
                    }
                    if let Ok(mut v) = entry.view.lock() {
                        v.apply_update(&kind, &update);
                    }
                    let coalesce = (self.host.config.coalesce_tool_call_updates
                        && &*kind == "tool_call_update")
                        .then(|| tool_call_id(&update))
                        .flatten();
                    self.emit(
                        self.event(EventKind::SessionUpdate, update)
                            .session(Some(key))
                            .turn(turn)
                            .replay(replay)
                            .coalesce(coalesce),
                    )
                    .await;
                }
            }
            return;
        }
        if self.pending_new > 0 {
            if self.early.len() < self.host.config.early_update_limit {
                // Probably the session a session/new in flight is about to name.
                self.early.push((key, kind, update));
                return;
            }
            // Too many to hold: deliver the held ones first, so that nothing overtakes them.
            for (session, _, held) in std::mem::take(&mut self.early) {
                self.emit(
                    self.event(EventKind::SessionUpdate, held)
                        .session(Some(session)),
                )
                .await;
            }
        }
        // An update for a session we do not know: still delivered (forward compatible).
        self.emit(
            self.event(EventKind::SessionUpdate, update)
                .session(Some(key)),
        )
        .await;
    }

    async fn on_notification(&mut self, method: Box<str>, params: Option<Box<RawValue>>) {
        match &*method {
            "$/cancel_request" => {
                let target = params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                    .and_then(|v| v.get("requestId").cloned());
                let Some(target) = target else { return };
                let found = self
                    .perms
                    .iter()
                    .find(|(_, p)| p.raw_id.to_value() == target)
                    .map(|(&id, _)| id);
                if found.is_none() && self.withdraw_served(&target).await {
                    return;
                }
                if found.is_none() && self.withdraw_elicitation(&target).await {
                    return;
                }
                if let Some(perm) = found {
                    // Exactly one response: -32800 for the withdrawn request.
                    if let Some(entry) = self.perms.get(&perm) {
                        let raw_id = entry.raw_id.clone();
                        self.respond_error(&raw_id, codes::REQUEST_CANCELLED, "request cancelled")
                            .await;
                    }
                    self.finish_permission(perm, None, DecidedBy::AgentCancelled)
                        .await;
                }
                // Requests we answer synchronously are already answered: nothing to do.
            }
            m if m.starts_with("$/") => {} // optional protocol notifications may be ignored
            "elicitation/complete" if self.host.config.elicitation.modes().url => {
                self.on_elicitation_complete(params.as_deref()).await;
            }
            _ => {
                let params = params_value(params.as_deref());
                let data = serde_json::json!({ "method": &*method, "params": params });
                let session = data["params"]
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(Arc::<str>::from);
                self.emit(
                    self.event(EventKind::ExtNotification, raw_json(&data))
                        .session(session),
                )
                .await;
            }
        }
    }

    async fn on_request(&mut self, id: RawId, method: Box<str>, params: Option<Box<RawValue>>) {
        if self.perms.values().any(|p| p.raw_id == id)
            || self.elicits.values().any(|e| e.raw_id == id)
            || self.served.contains_key(&id)
        {
            self.protocol_error(
                "duplicate_request_id",
                format!(
                    "agent reused request id {} while it is still pending",
                    id.json()
                ),
                serde_json::json!({ "id": id.to_value() }),
            )
            .await;
            return;
        }
        let limit = self.host.config.max_pending_agent_requests;
        if self.perms.len() + self.elicits.len() + self.served.len() >= limit {
            // Bounded against a flood: no entry, no task, no decider call for this one.
            self.respond_error(
                &id,
                codes::INTERNAL_ERROR,
                &format!("too many pending requests (limit {limit}); retry later"),
            )
            .await;
            if !self.inbound_overflow {
                self.inbound_overflow = true;
                self.protocol_error(
                    "too_many_requests",
                    format!("agent has {limit} requests pending; refusing more until some finish"),
                    serde_json::json!({ "limit": limit }),
                )
                .await;
            }
            return;
        }
        self.inbound_overflow = false;
        match &*method {
            "session/request_permission" => self.on_permission_request(id, params).await,
            "elicitation/create" if self.host.config.elicitation.modes().any() => {
                let params = params_value(params.as_deref());
                self.on_elicitation_request(id, params).await;
            }
            m if self.caps.serves(m) => self.on_service_request(id, method, params).await,
            m if m.starts_with('_') && self.host.config.ext.handler().is_some() => {
                let params = params_value(params.as_deref());
                self.on_ext_request(id, method, params);
            }
            _ => {
                self.respond_error(
                    &id,
                    codes::METHOD_NOT_FOUND,
                    &format!("method not found: {method}"),
                )
                .await;
            }
        }
    }

    // ----- responses --------------------------------------------------------------------------

    async fn on_response(&mut self, id: RawId, result: std::result::Result<Box<RawValue>, Error>) {
        let Some(num) = id.as_u64() else {
            self.protocol_error(
                "unknown_response_id",
                format!("response with id {} that this host never used", id.json()),
                serde_json::json!({ "id": id.to_value() }),
            )
            .await;
            return;
        };
        let Some(mut pending) = self.pending.remove(&num) else {
            if let Some(gave_up) = self.abandoned.remove(&num) {
                self.late_answer(num, gave_up, &result).await;
                return;
            }
            let (reason, what) = if self.recent_set.contains(&num) {
                ("duplicate_response", "a second response for request")
            } else {
                ("unknown_response_id", "a response for unknown request id")
            };
            self.protocol_error(
                reason,
                format!("{what} {num}; ignored"),
                serde_json::json!({ "id": num }),
            )
            .await;
            return;
        };
        self.remember_answered(num);
        if let Some(key) = pending.timer.take() {
            self.timers.try_remove(&key);
        }
        let reply = pending.reply.take();
        let outcome = match result {
            Ok(raw) => self.on_success(pending.method, pending.ctx, raw).await,
            Err(error) => {
                self.on_failure(pending.ctx, &error).await;
                Err(error)
            }
        };
        if let Some(reply) = reply {
            self.defer(move || {
                let _ = reply.send(outcome);
            });
        }
    }

    fn remember_answered(&mut self, id: u64) {
        self.recent.push_back(id);
        self.recent_set.insert(id);
        while self.recent.len() > RECENT_IDS {
            if let Some(old) = self.recent.pop_front() {
                self.recent_set.remove(&old);
            }
        }
    }

    async fn on_success(
        &mut self,
        method: Cow<'static, str>,
        ctx: ReqCtx,
        raw: Box<RawValue>,
    ) -> Result<Box<RawValue>> {
        match ctx {
            ReqCtx::Plain => Ok(raw),
            ReqCtx::Initialize => {
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                let info = AgentInfo::from_initialize(&value)?;
                let data = serde_json::json!({
                    "protocolVersion": info.protocol_version,
                    "agentInfo": info.agent_info,
                    "agentCapabilities": info.capabilities,
                    "authMethods": info.auth_methods,
                    "pid": self.process.as_ref().map(|p| p.pid),
                });
                let _ = self.shared.info.set(Arc::new(info));
                self.emit(self.event(EventKind::AgentReady, raw_json(&data)))
                    .await;
                Ok(raw)
            }
            ReqCtx::NewSession { cwd, extra } | ReqCtx::ForkSession { cwd, extra } => {
                self.pending_new = self.pending_new.saturating_sub(1);
                let origin = if method == "session/fork" {
                    "fork"
                } else {
                    "new"
                };
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                let Some(id) = value
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .map(Arc::<str>::from)
                else {
                    self.flush_early_if_idle().await;
                    return Err(Error::Protocol(format!(
                        "{method} response has no sessionId"
                    )));
                };
                let view = Arc::new(Mutex::new(SessionView::new(&id, Some(cwd))));
                if let Ok(mut v) = view.lock() {
                    v.additional_directories = extra;
                }
                if let Ok(mut v) = view.lock() {
                    v.apply_open_result(&value);
                }
                let buffered: Vec<_> = {
                    let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.early)
                        .into_iter()
                        .partition(|(s, _, _)| *s == id);
                    self.early = rest;
                    mine.into_iter().map(|(_, k, u)| (k, u)).collect()
                };
                self.sessions.insert(
                    id.clone(),
                    SessionEntry {
                        view,
                        status: SessionStatus::Opening { replay: false },
                        active_turn: None,
                        cancelling: false,
                        orphan_turn: None,
                        turn_text: None,
                        buffer: buffered,
                        replaying: false,
                    },
                );
                self.open_session_now(&id, Some((&value, origin)), false)
                    .await;
                self.flush_early_if_idle().await;
                Ok(raw)
            }
            ReqCtx::OpenSession { id, origin, .. } => {
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                self.open_session_now(&id, Some((&value, origin)), false)
                    .await;
                Ok(raw)
            }
            ReqCtx::Prompt { session, turn, .. } => {
                self.end_turn(&session, turn, Ok(&raw)).await;
                Ok(raw)
            }
            ReqCtx::SetModel { session, model } => {
                if let Some(entry) = self.sessions.get(&session)
                    && let Ok(mut v) = entry.view.lock()
                {
                    v.set_legacy_model(&model);
                }
                Ok(raw)
            }
            ReqCtx::SetMode { session, mode } => {
                if let Some(entry) = self.sessions.get(&session)
                    && let Ok(mut v) = entry.view.lock()
                {
                    v.set_mode(&mode);
                }
                Ok(raw)
            }
            ReqCtx::SetConfig { session } => {
                let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                if let Some(opts) = value.get("configOptions").filter(|o| o.is_array())
                    && let Some(entry) = self.sessions.get(&session)
                    && let Ok(mut v) = entry.view.lock()
                {
                    v.config_options = Some(opts.clone());
                }
                Ok(raw)
            }
            ReqCtx::CloseSession { id } => {
                self.close_session_locally(&id, "closed").await;
                Ok(raw)
            }
            ReqCtx::DeleteSession { id } => {
                if self.sessions.contains_key(&id) {
                    self.close_session_locally(&id, "deleted").await;
                }
                Ok(raw)
            }
        }
    }

    async fn on_failure(&mut self, ctx: ReqCtx, error: &Error) {
        match ctx {
            ReqCtx::NewSession { .. } | ReqCtx::ForkSession { .. } => {
                self.pending_new = self.pending_new.saturating_sub(1);
                self.flush_early_if_idle().await;
            }
            ReqCtx::OpenSession { id, .. } => {
                if let Some(entry) = self.sessions.get_mut(&id)
                    && matches!(entry.status, SessionStatus::Open)
                {
                    // Opened early during a replay that then failed: it stays open, live.
                    entry.replaying = false;
                    return;
                }
                // Never lose what the agent sent: deliver the buffered updates, then forget it.
                if let Some(entry) = self.sessions.remove(&id) {
                    let replay = matches!(entry.status, SessionStatus::Opening { replay: true });
                    for (_, update) in entry.buffer {
                        self.emit(
                            self.event(EventKind::SessionUpdate, update)
                                .session(Some(id.clone()))
                                .replay(replay),
                        )
                        .await;
                    }
                }
            }
            ReqCtx::Prompt { session, turn, .. } => self.end_turn(&session, turn, Err(error)).await,
            _ => {}
        }
    }

    /// Mark a session open: emit `session_opened`, then everything buffered for it in wire order.
    async fn open_session_now(
        &mut self,
        id: &Arc<str>,
        result: Option<(&Value, &str)>,
        partial: bool,
    ) {
        let Some(entry) = self.sessions.get_mut(id) else {
            return;
        };
        let replay = match entry.status {
            SessionStatus::Opening { replay } => replay,
            SessionStatus::Open => {
                // Already opened early (very long replay): the replay is over once the response
                // is here; apply the final result.
                if let Some((value, _)) = result {
                    entry.replaying = false;
                    if let Ok(mut v) = entry.view.lock() {
                        v.apply_open_result(value);
                    }
                }
                return;
            }
        };
        // Updates arriving after a load response are live again; a partial open keeps tagging
        // replays until the response.
        entry.status = if partial {
            SessionStatus::Opening { replay }
        } else {
            SessionStatus::Open
        };
        let buffer = std::mem::take(&mut entry.buffer);
        let view = entry.view.clone();
        let mut data = serde_json::json!({ "sessionId": &**id });
        {
            let mut v = view.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((value, origin)) = result {
                v.apply_open_result(value);
                data["origin"] = Value::from(origin);
            }
            data["cwd"] = v.cwd.clone().map(Value::from).unwrap_or(Value::Null);
            data["modes"] = v.modes.clone().unwrap_or(Value::Null);
            data["configOptions"] = v.config_options.clone().unwrap_or(Value::Null);
        }
        if partial {
            data["partial"] = Value::Bool(true);
        }
        if let Ok(mut map) = self.shared.sessions.lock() {
            map.insert(id.clone(), view.clone());
        }
        self.emit(
            self.event(EventKind::SessionOpened, raw_json(&data))
                .session(Some(id.clone())),
        )
        .await;
        for (kind, update) in buffer {
            if let Ok(mut v) = view.lock() {
                v.apply_update(&kind, &update);
            }
            self.emit(
                self.event(EventKind::SessionUpdate, update)
                    .session(Some(id.clone()))
                    .replay(replay),
            )
            .await;
        }
        if partial {
            // Keep streaming the rest of the replay as it comes, still tagged as replay.
            if let Some(entry) = self.sessions.get_mut(id) {
                entry.status = SessionStatus::Open;
                entry.replaying = replay;
            }
        }
    }

    /// When no session/new is in flight any more, early updates nobody claimed are delivered.
    async fn flush_early_if_idle(&mut self) {
        if self.pending_new > 0 {
            return;
        }
        for (session, _, update) in std::mem::take(&mut self.early) {
            self.emit(
                self.event(EventKind::SessionUpdate, update)
                    .session(Some(session)),
            )
            .await;
        }
    }

    /// Stop waiting for request `id`: its caller gets `error`, a prompt's turn ends with it
    /// (`turn_ended`) and becomes the session's orphan turn, and a late answer is reported by
    /// [`Actor::late_answer`]. Returns `None` when the request is no longer pending, else the
    /// prompt's session (if it was one).
    async fn give_up(&mut self, id: u64, error: Error) -> Option<Option<Arc<str>>> {
        let mut pending = self.pending.remove(&id)?;
        // The wheel already dropped this deadline; its key may be reused.
        pending.timer = None;
        let ctx = std::mem::replace(&mut pending.ctx, ReqCtx::Plain);
        let turn = match &ctx {
            ReqCtx::Prompt { session, turn, .. } => Some((session.clone(), *turn)),
            _ => None,
        };
        if let Some((session, turn)) = &turn
            && let Some(entry) = self.sessions.get_mut(session)
            && entry.active_turn == Some(*turn)
        {
            entry.orphan_turn = Some(*turn);
        }
        if self.abandoned.len() >= RECENT_IDS
            && let Some(&old) = self.abandoned.keys().next()
        {
            self.abandoned.remove(&old);
        }
        self.abandoned.insert(
            id,
            GaveUp {
                method: pending.method.clone(),
                turn: turn.clone(),
            },
        );
        self.on_failure(ctx, &error).await;
        if let Some(reply) = pending.reply.take() {
            self.defer(move || {
                let _ = reply.send(Err(error));
            });
        }
        Some(turn.map(|(s, _)| s))
    }

    /// The answer to a request the host gave up on: reported (`protocol_error`, reason
    /// `late_response`, with the session and turn of a prompt), never applied; the turn stops
    /// being the session's orphan.
    async fn late_answer(
        &mut self,
        id: u64,
        gave_up: GaveUp,
        result: &std::result::Result<Box<RawValue>, Error>,
    ) {
        let answer = match result {
            Ok(raw) => {
                serde_json::json!({ "result": serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null) })
            }
            Err(e) => serde_json::json!({ "error": e.to_json() }),
        };
        let mut data = serde_json::json!({
            "reason": "late_response",
            "message": format!("the agent answered {} request {id} after the host gave up on it; ignored", gave_up.method),
            "id": id,
            "method": &*gave_up.method,
        });
        if let (Value::Object(d), Value::Object(a)) = (&mut data, answer) {
            d.extend(a);
        }
        let (session, turn) = match gave_up.turn {
            Some((session, turn)) => {
                if let Some(entry) = self.sessions.get_mut(&session)
                    && entry.orphan_turn == Some(turn)
                {
                    entry.orphan_turn = None;
                }
                (Some(session), Some(turn))
            }
            None => (None, None),
        };
        self.emit(
            self.event(EventKind::ProtocolError, raw_json(&data))
                .session(session)
                .turn(turn),
        )
        .await;
    }

    async fn end_turn(
        &mut self,
        session: &Arc<str>,
        turn: u64,
        result: std::result::Result<&RawValue, &Error>,
    ) {
        let mut stop_reason = None;
        if let Some(entry) = self.sessions.get_mut(session) {
            if entry.active_turn == Some(turn) {
                entry.active_turn = None;
                entry.cancelling = false;
                entry.turn_text = None;
            }
            if let Ok(mut v) = entry.view.lock() {
                if v.active_turn == Some(turn) {
                    v.active_turn = None;
                }
                if let Ok(raw) = result {
                    #[derive(serde::Deserialize)]
                    struct Stop {
                        #[serde(rename = "stopReason")]
                        stop_reason: Option<String>,
                    }
                    stop_reason = serde_json::from_str::<Stop>(raw.get())
                        .ok()
                        .and_then(|s| s.stop_reason);
                    v.last_stop_reason = stop_reason.clone();
                }
            }
        }
        let data = match result {
            Ok(raw) if stop_reason.is_some() => raw.to_owned(),
            Ok(raw) => raw_json(&serde_json::json!({
                "stopReason": Value::Null,
                "error": { "kind": "protocol", "message": "prompt response has no stopReason" },
                "result": serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null),
            })),
            Err(e) => {
                raw_json(&serde_json::json!({ "stopReason": Value::Null, "error": e.to_json() }))
            }
        };
        self.emit(
            self.event(EventKind::TurnEnded, data)
                .session(Some(session.clone()))
                .turn(Some(turn)),
        )
        .await;
    }

    async fn close_session_locally(&mut self, id: &Arc<str>, reason: &str) {
        let perms: Vec<u64> = self
            .perms
            .iter()
            .filter(|(_, p)| p.session == *id)
            .map(|(&k, _)| k)
            .collect();
        for perm in sorted(perms) {
            self.resolve_permission(perm, Outcome::Cancelled, DecidedBy::Cancelled)
                .await;
        }
        self.cancel_elicitations(Some(id), DecidedBy::Cancelled)
            .await;
        // The session's terminals die with it; its grants are forgotten.
        self.grants.forget_session(id);
        let terminals = self.terminals.clone();
        let sid = id.to_string();
        tokio::spawn(async move { terminals.release_session(&sid).await });
        if let Some(entry) = self.sessions.remove(id)
            && let Ok(mut v) = entry.view.lock()
        {
            v.open = false;
        }
        if let Ok(mut map) = self.shared.sessions.lock() {
            map.remove(id);
        }
        let data = serde_json::json!({ "sessionId": &**id, "reason": reason });
        self.emit(
            self.event(EventKind::SessionClosed, raw_json(&data))
                .session(Some(id.clone())),
        )
        .await;
    }

    // ----- permissions ------------------------------------------------------------------------

    async fn on_permission_request(&mut self, id: RawId, params: Option<Box<RawValue>>) {
        let params = crate::permission::params::parse(params.as_deref());
        let session = params.session_id.as_deref().map(Arc::<str>::from);
        let options = params.options;
        let Some(session) = session else {
            self.respond_error(
                &id,
                codes::INVALID_PARAMS,
                "session/request_permission needs sessionId",
            )
            .await;
            self.protocol_error(
                "invalid_params",
                "session/request_permission without sessionId; answered -32602".into(),
                serde_json::json!({ "id": id.to_value() }),
            )
            .await;
            return;
        };
        if !self.sessions.contains_key(&session) {
            // Nobody is asked about a session this host never opened (or already closed).
            self.respond_error(
                &id,
                codes::INVALID_PARAMS,
                &format!("unknown session {session}"),
            )
            .await;
            self.protocol_error(
                "unknown_session",
                format!(
                    "session/request_permission for unknown session {session}; answered -32602"
                ),
                serde_json::json!({ "id": id.to_value(), "sessionId": &*session }),
            )
            .await;
            return;
        }
        let perm = self.host.next_permission.fetch_add(1, Ordering::Relaxed) + 1;
        let (turn, cancelling, view) = match self.sessions.get(&session) {
            Some(entry) => match (entry.active_turn, entry.orphan_turn) {
                // A turn the host gave up on: whatever it still asks is cancelled.
                (None, Some(orphan)) => (Some(orphan), true, Some(&entry.view)),
                (active, _) => (active, entry.cancelling, Some(&entry.view)),
            },
            None => (None, false, None),
        };
        // The request's own toolCall wins; fields it omits come from the announced tool call
        // (the request may also arrive before, or without, any tool_call). Kept as its text
        // unless a merge needs the tree: a tree is most of a round trip's allocations.
        let prepared = tool_call::prepare(params.tool_call, |id| {
            let view = view?.lock().ok()?;
            view.tool_call(id).cloned()
        });
        let Ok((tool_call, subject)) = prepared else {
            self.respond_error(
                &id,
                codes::INVALID_PARAMS,
                "session/request_permission: toolCall is not valid JSON",
            )
            .await;
            self.protocol_error(
                "invalid_params",
                "session/request_permission with a toolCall that is not valid JSON (a lone surrogate, a number out of range, or nesting over 128 levels); answered -32602".into(),
                serde_json::json!({ "id": id.to_value() }),
            )
            .await;
            return;
        };
        // Decided on what the policy reads; a request is only built for a decider to see.
        let verdict = match cancelling {
            true => None,
            false => Some(self.host.policy.evaluate(&subject)),
        };
        let granted =
            matches!(verdict, Some(Verdict::Ask)) && self.grants.is_granted(&session, &subject);
        let grant_key = if granted { Grants::key(&subject) } else { None };
        self.perms.insert(
            perm,
            PermEntry {
                raw_id: id,
                session: session.clone(),
                turn,
                options,
                settled: None,
                decider: None,
                subject,
                rule: None,
                timer: None,
            },
        );
        self.host.note_permission(perm, self.agent, false);
        let options = self
            .perms
            .get(&perm)
            .map(|p| &p.options[..])
            .unwrap_or_default();
        // With events off nothing would read it: not even serialized.
        if self.host.bus.enabled() {
            let data = PermissionRequestedData {
                request_id: perm,
                session_id: &session,
                tool_call: &tool_call,
                options,
            };
            let event = self
                .event(EventKind::PermissionRequested, raw_json(&data))
                .session(Some(session.clone()))
                .turn(turn);
            self.emit(event).await;
        }
        // 1. hard-deny rules, 2. allow rules and session grants, 3. the host — fail closed.
        let decided = match verdict {
            None => Some((Outcome::Cancelled, DecidedBy::Cancelled, None)),
            Some(Verdict::Deny { rule }) => {
                Some((deny_outcome(options, false), DecidedBy::Rule, Some(rule)))
            }
            Some(Verdict::Allow { rule }) => {
                let outcome =
                    allow_outcome(options).unwrap_or_else(|| deny_outcome(options, false));
                Some((outcome, DecidedBy::Rule, Some(rule)))
            }
            Some(Verdict::Ask) => match allow_outcome(options) {
                Some(outcome) if granted => Some((outcome, DecidedBy::Grant, grant_key)),
                _ => None,
            },
        };
        if let Some((outcome, by, rule)) = decided {
            self.resolve_permission_with(perm, outcome, by, rule).await;
            return;
        }
        match &self.host.config.permission {
            PermissionHandler::DenyAll => {
                let outcome = deny_outcome(options, false);
                let rule = Some("no permission decider (deny-all)".to_owned());
                self.resolve_permission_with(perm, outcome, DecidedBy::Rule, rule)
                    .await;
                return;
            }
            PermissionHandler::Decider(decider) => {
                let decider = decider.clone();
                let (settled_tx, settled) = Settled::new();
                let request = PermissionRequest {
                    request_id: perm,
                    agent: self.agent,
                    session_id: session.to_string(),
                    turn,
                    tool_call,
                    options: options.to_vec(),
                    settled,
                };
                if let Some(entry) = self.perms.get_mut(&perm) {
                    entry.settled = Some(settled_tx);
                }
                // The decider is the embedder's code: a panic, in `decide` itself or while its
                // future runs, must deny and never reach the actor (`guarded`).
                let mut answer = Box::pin(guarded(move || decider.decide(request), "permission"));
                // A decider that knows at once (a policy in code, a cache, a headless script)
                // is answered in this step: no task and no hop back, which is most of a round
                // trip's cost. Polled once with a no-op waker; a pending future moves to a task
                // of its own (whose polls register the real waker), aborted when the request is
                // resolved otherwise.
                if let Some(answer) = poll_once(answer.as_mut()) {
                    let _ = self.host_answer(perm, answer).await;
                    return;
                }
                let tx = self.done_tx.clone();
                let task = tokio::spawn(async move {
                    let answer = answer.await;
                    let _ = tx.send(Completion::PermissionAnswer { perm, answer });
                });
                if let Some(entry) = self.perms.get_mut(&perm) {
                    entry.decider = Some(task.abort_handle());
                }
            }
            PermissionHandler::Manual => {}
        }
        let timeout = self.host.config.permission_timeout;
        let key = self.timers.insert(Timer::Permission(perm), timeout);
        if let Some(entry) = self.perms.get_mut(&perm) {
            entry.timer = Some(key);
        } else {
            self.timers.try_remove(&key);
        }
    }

    /// An answer from the host (decider or `respond_permission`). First answer wins.
    async fn host_answer(
        &mut self,
        perm: u64,
        answer: std::result::Result<Option<String>, String>,
    ) -> Result<()> {
        let Some(entry) = self.perms.get(&perm) else {
            let known = self
                .host
                .permissions
                .lock()
                .map(|m| m.get(&perm).copied())
                .unwrap_or(None);
            return Err(match known {
                Some((agent, true)) if agent == self.agent => Error::AlreadyResolved(format!(
                    "permission request {perm} was already resolved"
                )),
                _ => Error::NotFound(format!("no pending permission request {perm}")),
            });
        };
        match answer {
            Ok(Some(option)) if entry.options.iter().any(|o| o.option_id == option) => {
                let always = entry
                    .options
                    .iter()
                    .any(|o| o.option_id == option && o.kind == "allow_always");
                if always {
                    // Remembered for this session only, in memory (docs/PERMISSIONS.md).
                    let (session, subject) = (entry.session.clone(), entry.subject.clone());
                    self.grants.grant(&session, &subject);
                }
                self.resolve_permission(perm, Outcome::Selected(option), DecidedBy::Host)
                    .await;
                Ok(())
            }
            Ok(Some(option)) => {
                let outcome = deny_outcome(&entry.options, false);
                self.resolve_permission(perm, outcome, DecidedBy::InvalidAnswer)
                    .await;
                Err(Error::InvalidArgument(format!(
                    "`{option}` is not one of the offered options; the request was denied"
                )))
            }
            Ok(None) => {
                let outcome = deny_outcome(&entry.options, false);
                self.resolve_permission(perm, outcome, DecidedBy::Host)
                    .await;
                Ok(())
            }
            Err(reason) => {
                tracing::debug!(agent = self.agent, perm, %reason, "permission decider failed; denying");
                let outcome = deny_outcome(&entry.options, false);
                self.resolve_permission(perm, outcome, DecidedBy::InvalidAnswer)
                    .await;
                Ok(())
            }
        }
    }

    /// Answer the agent and report the resolution (exactly once per request).
    async fn resolve_permission(&mut self, perm: u64, outcome: Outcome, by: DecidedBy) {
        self.resolve_permission_with(perm, outcome, by, None).await;
    }

    async fn resolve_permission_with(
        &mut self,
        perm: u64,
        outcome: Outcome,
        by: DecidedBy,
        rule: Option<String>,
    ) {
        let Some(entry) = self.perms.get_mut(&perm) else {
            return;
        };
        entry.rule = rule;
        let raw_id = entry.raw_id.clone();
        let line = message::result_line_of(&raw_id, &PermissionResult { outcome: &outcome });
        self.write(line).await;
        self.finish_permission(perm, Some(outcome), by).await;
    }

    /// Forget a permission request and emit `permission_resolved`.
    async fn finish_permission(&mut self, perm: u64, outcome: Option<Outcome>, by: DecidedBy) {
        let Some(entry) = self.perms.remove(&perm) else {
            return;
        };
        if let Some(key) = &entry.timer {
            self.timers.try_remove(key);
        }
        if let Some(settled) = &entry.settled {
            let _ = settled.send(true);
        }
        if let Some(decider) = &entry.decider {
            decider.abort();
        }
        self.host.note_permission(perm, self.agent, true);
        let option_kind = match &outcome {
            Some(Outcome::Selected(id)) => entry
                .options
                .iter()
                .find(|x| &x.option_id == id)
                .map(|o| o.kind.as_str()),
            _ => None,
        };
        if !self.host.bus.enabled() {
            return;
        }
        let data = PermissionResolvedData {
            request_id: perm,
            session_id: &entry.session,
            decided_by: by,
            rule: entry.rule.as_deref(),
            outcome: outcome.as_ref(),
            option_kind,
        };
        self.emit(
            self.event(EventKind::PermissionResolved, raw_json(&data))
                .session(Some(entry.session.clone()))
                .turn(entry.turn),
        )
        .await;
    }

    // ----- completions ------------------------------------------------------------------------

    async fn on_completion(&mut self, done: Completion) {
        match done {
            Completion::RequestTimeout(id) => {
                let cfg = &self.host.config;
                let Some(pending) = self.pending.get(&id) else {
                    return;
                };
                let limit = match pending.ctx {
                    ReqCtx::Prompt { .. } => cfg.prompt_timeout,
                    _ => cfg.request_timeout,
                };
                let error = Error::Timeout {
                    what: pending.method.to_string(),
                    after_ms: limit.map(|d| d.as_millis() as u64).unwrap_or(0),
                };
                let Some(session) = self.give_up(id, error).await else {
                    return;
                };
                let params = raw_json(&serde_json::json!({ "requestId": id }));
                self.write(message::notification_line("$/cancel_request", &params))
                    .await;
                if let Some(session) = session {
                    // A timed-out turn is also cancelled the ACP way, so the agent stops working.
                    let _ = self.cancel_session(&session).await;
                }
            }
            Completion::CancelGraceElapsed(id) => {
                // `session/cancel` went out; the agent ignored it.
                self.give_up(id, Error::Cancelled).await;
            }
            Completion::PermissionAnswer { perm, answer } => {
                let _ = self.host_answer(perm, answer).await;
            }
            Completion::ElicitationAnswer { eid, answer } => {
                let _ = self.elicitation_answer(eid, answer).await;
            }
            Completion::ElicitationTimeout(eid) => {
                if let Some(entry) = self.elicits.get_mut(&eid) {
                    // The wheel already dropped this deadline; its key may be reused.
                    entry.timer = None;
                }
                self.resolve_elicitation(
                    eid,
                    crate::elicitation::ElicitationAnswer::Cancel,
                    DecidedBy::Timeout,
                    None,
                )
                .await;
            }
            Completion::PermissionTimeout(perm) => {
                if let Some(entry) = self.perms.get_mut(&perm) {
                    // The wheel already dropped this deadline; its key may be reused.
                    entry.timer = None;
                    let outcome = deny_outcome(&entry.options, false);
                    self.resolve_permission(perm, outcome, DecidedBy::Timeout)
                        .await;
                }
            }
            Completion::Served(done) => self.on_served(*done).await,
            Completion::TerminalExited {
                session,
                terminal_id,
                exit,
            } => {
                let data = serde_json::json!({
                    "terminalId": terminal_id,
                    "exitCode": exit.as_ref().and_then(|e| e.exit_code),
                    "signal": exit.as_ref().and_then(|e| e.signal.clone()),
                });
                self.emit(
                    self.event(EventKind::TerminalExited, raw_json(&data))
                        .session(Some(session)),
                )
                .await;
            }
            Completion::WriterDone(res) => {
                if let Err(e) = res {
                    tracing::debug!(agent = self.agent, error = %e, "writing to agent stdin failed");
                    // Nothing more can reach the agent: every pending call fails now rather
                    // than wait for an answer to a request it never got.
                    self.writer_failed(format!("writing to the agent failed: {e}"))
                        .await;
                }
            }
            Completion::ExitGraceElapsed => {
                if self.gone.is_none() && self.reader_open {
                    // The process exited but something still holds its stdout open: stop waiting.
                    self.reader_open = false;
                    self.agent_gone().await;
                }
            }
        }
    }

    // ----- the end ----------------------------------------------------------------------------

    /// The agent's stdout ended (or the process exited and the grace elapsed).
    async fn agent_gone(&mut self) {
        if self.gone.is_some() {
            return;
        }
        self.flush();
        let info = match &self.process {
            Some(p) => {
                let mut exit = p.wait_exit(Duration::from_millis(500)).await;
                if exit.is_none() {
                    // stdout closed but the process lingers: take it down.
                    self.out.close();
                    exit = p.shutdown(self.host.config.shutdown_grace).await;
                }
                exit
            }
            None => None,
        };
        self.drain_stderr(Duration::from_millis(500)).await;
        let info = match &self.process {
            Some(p) => p.exit_info(info),
            None => ExitInfo::default(),
        };
        self.finish(Gone::Exited(info), "exited").await;
    }

    /// Orderly shutdown requested by the embedder (or the host going away).
    async fn shutdown(&mut self, reader_rx: &mut mpsc::Receiver<io::Batch>) {
        if self.gone.is_some() {
            return;
        }
        self.flush();
        self.out.close();
        let grace = self.host.config.shutdown_grace;
        // Run the ladder while still taking what the agent writes meanwhile (in order, as usual):
        // an agent blocked on a full stdout pipe could not see its stdin close.
        let process = self.process.take();
        let bus = self.host.bus.clone();
        let info = {
            let ladder = async {
                match &process {
                    Some(p) => {
                        let exit = p.shutdown(grace).await;
                        p.exit_info(exit)
                    }
                    None => {
                        tokio::time::sleep(grace).await;
                        ExitInfo::default()
                    }
                }
            };
            tokio::pin!(ladder);
            loop {
                self.flush();
                let backlogged = self.backlogged();
                tokio::select! {
                    info = &mut ladder => break info,
                    () = bus.wait_room(), if backlogged => {}
                    Some(ev) = recv_stderr(&mut self.stderr), if !backlogged => self.emit(ev).await,
                    batch = reader_rx.recv(), if self.reader_open && !backlogged => match batch {
                        Some(batch) => {
                            for msg in batch.msgs {
                                match msg {
                                    ReaderMsg::Eof(_) => self.reader_open = false,
                                    other => self.on_reader(other).await,
                                }
                            }
                        }
                        None => self.reader_open = false,
                    },
                }
                if process.is_none() && !self.reader_open {
                    break ExitInfo::default();
                }
            }
        };
        self.drain_stderr(Duration::from_millis(200)).await;
        let info = match &process {
            // The tail may have grown while stderr was drained.
            Some(p) => ExitInfo {
                stderr_tail: p.exit_info(None).stderr_tail,
                ..info
            },
            None => info,
        };
        self.process = process;
        self.finish(Gone::Shutdown(info), "shutdown").await;
    }

    /// Every outbound request fails now with `error`, in id order (turns end with it).
    async fn fail_pending(&mut self, error: &Error) {
        let mut ids: Vec<u64> = self.pending.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if let Some(mut pending) = self.pending.remove(&id) {
                if let Some(key) = pending.timer.take() {
                    self.timers.try_remove(&key);
                }
                self.on_failure(std::mem::replace(&mut pending.ctx, ReqCtx::Plain), error)
                    .await;
                if let Some(reply) = pending.reply.take() {
                    let error = error.clone();
                    self.defer(move || {
                        let _ = reply.send(Err(error));
                    });
                }
            }
        }
    }

    async fn finish(&mut self, gone: Gone, reason: &str) {
        self.gone = Some(gone.clone());
        let error = gone.error();
        // 1. every outbound request fails at once (turns end with the error)
        self.fail_pending(&error).await;
        // Nobody is left to answer served requests; every terminal is killed.
        self.served.clear();
        self.terminals.release_all().await;
        // 2. pending permission requests resolve as disconnected (nobody left to answer)
        let perms: Vec<u64> = self.perms.keys().copied().collect();
        for perm in sorted(perms) {
            self.finish_permission(perm, None, DecidedBy::Disconnected)
                .await;
        }
        let mut elicits: Vec<u64> = self.elicits.keys().copied().collect();
        elicits.sort_unstable();
        for eid in elicits {
            self.finish_elicitation(eid, None, DecidedBy::Disconnected, None)
                .await;
        }
        // 3. anything still buffered is delivered, then sessions close
        let early = std::mem::take(&mut self.early);
        for (session, _, update) in early {
            self.emit(
                self.event(EventKind::SessionUpdate, update)
                    .session(Some(session)),
            )
            .await;
        }
        let mut open: Vec<Arc<str>> = self.sessions.keys().cloned().collect();
        open.sort();
        for id in open {
            if let Some(entry) = self.sessions.remove(&id) {
                let replay = matches!(entry.status, SessionStatus::Opening { replay: true });
                for (_, update) in entry.buffer {
                    self.emit(
                        self.event(EventKind::SessionUpdate, update)
                            .session(Some(id.clone()))
                            .replay(replay),
                    )
                    .await;
                }
                if let Ok(mut v) = entry.view.lock() {
                    v.open = false;
                    v.active_turn = None;
                }
                let why = if reason == "shutdown" {
                    "shutdown"
                } else {
                    "agent_exited"
                };
                let data = serde_json::json!({ "sessionId": &*id, "reason": why });
                self.emit(
                    self.event(EventKind::SessionClosed, raw_json(&data))
                        .session(Some(id)),
                )
                .await;
            }
        }
        if let Ok(mut map) = self.shared.sessions.lock() {
            map.clear();
        }
        // 4. and finally the agent itself
        let info = gone.info();
        let data = serde_json::json!({
            "reason": reason,
            "exitCode": info.code,
            "signal": info.signal,
            "stderrTail": info.stderr_tail,
        });
        let mut data = data;
        if let Some(error) = self.shutdown_error.take() {
            data["error"] = error;
        }
        let _ = self.shared.exit.set(info.clone());
        self.shared.exited.notify_waiters();
        // Nothing of this agent follows `agent_exited`: late stderr only reaches the tail.
        self.stderr = None;
        self.emit(self.event(EventKind::AgentExited, raw_json(&data)))
            .await;
    }

    /// Take the agent's remaining stderr lines until its stderr closes (bounded by `limit`).
    async fn drain_stderr(&mut self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while self.stderr.is_some() {
            match tokio::time::timeout_at(deadline, recv_stderr(&mut self.stderr)).await {
                Ok(Some(ev)) => self.emit(ev).await,
                Ok(None) => {}
                Err(_) => break,
            }
        }
    }
}

/// The next expired deadline (call only while the wheel is not empty).
async fn next_timer(timers: &mut DelayQueue<Timer>) -> Option<Timer> {
    std::future::poll_fn(|cx| timers.poll_expired(cx))
        .await
        .map(|e| e.into_inner())
}

/// The next stderr event; pending for ever once there is no (more) stderr.
async fn recv_stderr(rx: &mut Option<mpsc::Receiver<PendingEvent>>) -> Option<PendingEvent> {
    match rx {
        Some(r) => {
            let ev = r.recv().await;
            if ev.is_none() {
                *rx = None;
            }
            ev
        }
        None => std::future::pending().await,
    }
}

async fn wait_exit(rx: Option<watch::Receiver<Option<crate::transport::RawExit>>>) {
    match rx {
        Some(mut rx) => {
            let _ = rx.wait_for(Option::is_some).await;
        }
        None => std::future::pending().await,
    }
}

/// A request's or notification's params as a `Value` (`Null` when absent or not JSON).
/// The `toolCallId` of a `tool_call_update` (only parsed when coalescing is on).
fn tool_call_id(update: &RawValue) -> Option<Arc<str>> {
    #[derive(serde::Deserialize)]
    struct Id<'a> {
        #[serde(rename = "toolCallId", borrow)]
        id: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Id<'_>>(update.get())
        .ok()
        .map(|i| Arc::from(&*i.id))
}

fn params_value(params: Option<&RawValue>) -> Value {
    params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null)
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// Re-exported for the host module.
pub(crate) type SessionMap = HashMap<Arc<str>, Arc<Mutex<SessionView>>>;
