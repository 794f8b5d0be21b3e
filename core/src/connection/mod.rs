//! The connection actor: one task per agent owns every piece of mutable connection state.
//!
//! Handles talk to it over a bounded command channel and get replies on oneshots. Inbound
//! notifications are applied strictly in arrival order; inbound requests are registered in order
//! and answered from spawned tasks, so the actor never awaits the embedder. Agent death fails
//! every pending call at once with [`Error::AgentExited`].
//!
//! This file holds the actor's state, its run loop and what it does when its own work completes;
//! each kind of step has a file: `commands` (from handles), `dispatch` (from the agent),
//! `responses`, `permission`, `elicitation`, `inbound` (fs/terminal), `output` (events and lines
//! out), `lifecycle` (the end).

mod answer;
mod commands;
mod dispatch;
mod elicitation;
mod inbound;
mod io;
mod lifecycle;
mod output;
mod permission;
mod receipts;
mod responses;
mod state;
mod steer;
#[cfg(test)]
mod terminal_exit_tests;
mod v2;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::time::{DelayQueue, delay_queue};

pub(crate) use io::ReaderMsg;
use io::{reader_task, writer_task};
pub(crate) use state::AgentShared;
pub use state::{AgentInfo, PROTOCOL_VERSION, PROTOCOL_VERSION_2, steering_supported};

use crate::error::{Error, ExitInfo, Result};
use crate::events::{EventBus, PendingEvent, raw_json};
use crate::host::HostConfig;
use crate::permission::policy::{Grants, Subject};
use crate::permission::{DecidedBy, PermissionOption, deny_outcome};
use crate::services::ClientCapabilities;
use crate::services::terminal::TerminalManager;
use crate::session::SessionView;
use crate::transport::{AgentProcess, Transport};
use crate::wire::message::{self, RawId};

/// Host-wide state shared by every connection.
#[derive(Debug)]
pub(crate) struct HostShared {
    pub bus: EventBus,
    pub config: HostConfig,
    pub next_turn: AtomicU64,
    /// Steer ids (`Session::steer`), per host.
    pub next_steer: AtomicU64,
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

/// Bookkeeping attached to an outbound request, applied when its response arrives.
#[derive(Debug)]
pub(crate) enum ReqCtx {
    Plain,
    /// `offered`: the protocol version `initialize` offered (1, or 2 with `protocol/v2`).
    Initialize {
        offered: u16,
    },
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
    /// `_session/steering` into `turn` (see `steer.rs`).
    Steer(steer::SteerCtx),
    /// `session/archive`: the agent closes an active session first, so an open one closes here.
    ArchiveSession {
        id: Arc<str>,
    },
    /// `session/set_title`: the stored title becomes the open session's view title.
    SetTitle {
        session: Arc<str>,
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
        reply: oneshot::Sender<Result<crate::Receipt>>,
    },
    RespondElicitation {
        request_id: u64,
        /// `Err(reason)`: the embedder's answer was unusable (answered `cancel`).
        answer: std::result::Result<crate::elicitation::ElicitationAnswer, String>,
        reply: oneshot::Sender<Result<crate::Receipt>>,
    },
    Shutdown {
        /// Why, when the host itself decided (e.g. a failed handshake); reported in `agent_exited`.
        error: Option<Value>,
        reply: oneshot::Sender<ExitInfo>,
    },
    /// `Session::steer`: into the running turn, or queued as the session's next prompt.
    Steer {
        session: Arc<str>,
        steer: u64,
        /// The content blocks (checked by the handle).
        prompt: Value,
        reply: oneshot::Sender<Result<crate::session::SteerResult>>,
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
        terminal_id: String,
    },
    ExitGraceElapsed,
    /// A parked answer's receipt is known (`receipts.rs`).
    Receipt {
        key: u64,
        receipt: crate::Receipt,
    },
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
    /// A v2 prompt the agent accepted (its `messageId`): it stays pending until the session's
    /// `state_update` to `idle` ends the turn (`v2.rs`).
    accepted: Option<Arc<str>>,
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
    /// Why the host's answer was not used (`invalid_answer`), for `permission_resolved`.
    reason: Option<String>,
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
    /// v2: the active turn is work the agent started by itself (no prompt pending).
    agent_turn: bool,
    /// v2: an `idle` that ended the turn before the prompt's acceptance arrived.
    early_idle: Option<Value>,
    /// Steers waiting to be the session's next prompt, and those in flight (see `steer.rs`).
    steers: steer::Steers,
}

type Reply = Box<dyn FnOnce() + Send>;

/// Where a request's caller waits for its raw result.
type ReplyTx = oneshot::Sender<Result<Box<RawValue>>>;

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
    recorder: Option<crate::record::Recorder>,
) -> mpsc::Sender<Command> {
    let (cmd_tx, cmd_rx) = mpsc::channel(COMMAND_QUEUE);
    let (reader_tx, reader_rx) = mpsc::channel(READER_QUEUE);
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    // Half of the bound for answers to the agent's requests, the rest for the host's own lines.
    let budget = answer::Budget::new(host.config.max_outbound_bytes / 2);
    let own_room = host.config.max_outbound_bytes - budget.total();
    let out = io::Outbound::new(transport.writer, own_room);

    tokio::spawn(reader_task(
        transport.reader,
        host.config.max_line_bytes,
        host.config.wire_events || recorder.is_some(),
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
        receipts: receipts::Receipts::default(),
        elicits: HashMap::new(),
        url_elicitations: VecDeque::new(),
        sessions: HashMap::new(),
        pending_new: 0,
        early: Vec::new(),
        done_tx,
        reader_open: true,
        exit_seen: false,
        reader_batches: 0,
        exit_grace: (0, 0),
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
        budget,
        timers: DelayQueue::new(),
        writer_dead: false,
        inbound_overflow: false,
        terminals: TerminalManager::new(host.config.terminal_limits),
        terminal_exits: HashMap::new(),
        recorder: recorder.map(Mutex::new),
        recorded_line: None,
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
    /// Resolution events waiting for their answer's receipt.
    receipts: receipts::Receipts,
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
    /// Batches taken from the reader (its progress, which the exit grace watches).
    reader_batches: u64,
    /// The exit grace: the reader's progress when it was last armed, and how often it was
    /// re-armed because the reader was still delivering.
    exit_grace: (u64, u32),
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
    /// Bytes of answers to the agent's requests in flight (see `answer`).
    budget: answer::Budget,
    /// Request and permission deadlines.
    timers: DelayQueue<Timer>,
    /// Writing to the agent failed (or it stopped reading): nothing more is written.
    writer_dead: bool,
    /// The agent has too many requests pending; reported once per episode.
    inbound_overflow: bool,
    /// This agent's terminals; all killed when a session closes or the agent goes away.
    terminals: TerminalManager,
    /// Built-in terminals whose exit is not reported yet, by id (bounded by the terminal limits:
    /// an entry goes when its exit is reported).
    terminal_exits: HashMap<String, inbound::ExitWatch>,
    /// This connection's recording (`HostConfig::record`), fed the raw lines and the events.
    recorder: Option<Mutex<crate::record::Recorder>>,
    /// The recording's index of the agent's line being handled, while it is (its update's event
    /// refers to it instead of repeating it: docs/RECORDING.md, format 2).
    recorded_line: Option<u64>,
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
                Some(done) = done_rx.recv() => match done {
                    Completion::ExitGraceElapsed => self.exit_grace_elapsed(reader_rx.is_empty()).await,
                    done => self.on_completion(done).await,
                },
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
                    Some(mut batch) => {
                        self.reader_batches += 1;
                        self.settle_before_input().await;
                        let msgs = std::mem::take(&mut batch.msgs);
                        self.attach_batch(&mut batch);
                        for msg in msgs {
                            self.on_reader(msg, batch.arrival()).await;
                        }
                    }
                    None => self.on_reader(ReaderMsg::Eof(None), io::Arrival::default()).await,
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
                        // Every handle is gone: nobody can use this agent any more (nor restart
                        // it: this end is its last).
                        self.shared.supervised.store(false, std::sync::atomic::Ordering::SeqCst);
                        self.shutdown(&mut reader_rx).await;
                        self.hand_off_backlog();
                        break;
                    }
                },
                _ = wait_exit(exit_watch), if !self.exit_seen && self.gone.is_none() => {
                    self.exit_seen = true;
                    self.arm_exit_grace();
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

    // ----- the process exited before its stdout ended ------------------------------------------

    /// Give the reader a moment to deliver what the agent wrote before exiting.
    fn arm_exit_grace(&mut self) {
        self.exit_grace.0 = self.reader_batches;
        let tx = self.done_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(EXIT_GRACE).await;
            let _ = tx.send(Completion::ExitGraceElapsed);
        });
    }

    /// The exit grace elapsed with the agent's stdout still open. What the agent wrote before it
    /// exited is never cut off: while lines wait to be taken (the reader's queue is not empty, or
    /// events wait for room) or the reader delivered some during the grace, it is armed again
    /// (the last only [`EXIT_GRACE_REARMS`] times: a descendant holding stdout and writing for
    /// ever). Otherwise something still holds stdout open without writing: stop waiting.
    async fn exit_grace_elapsed(&mut self, reader_idle: bool) {
        if self.gone.is_some() || !self.reader_open {
            return;
        }
        let waiting = !reader_idle || self.backlogged();
        let progressed = self.reader_batches != self.exit_grace.0;
        if waiting || (progressed && self.exit_grace.1 < EXIT_GRACE_REARMS) {
            if !waiting {
                self.exit_grace.1 += 1;
            }
            self.arm_exit_grace();
            return;
        }
        self.reader_open = false;
        self.agent_gone().await;
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
                let _ = self
                    .write(message::notification_line("$/cancel_request", &params))
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
            Completion::TerminalExited { terminal_id } => {
                self.terminal_exited(&terminal_id, true).await;
            }
            Completion::WriterDone(res) => {
                if let Err(e) = res {
                    self.host.config.log.emit(
                        crate::log::Level::Warn,
                        "transport",
                        Some(self.agent),
                        None,
                        || format!("writing to the agent's stdin failed: {e}"),
                    );
                    // Nothing more can reach the agent: every pending call fails now rather
                    // than wait for an answer to a request it never got.
                    self.writer_failed(format!("writing to the agent failed: {e}"))
                        .await;
                }
            }
            Completion::ExitGraceElapsed => self.exit_grace_elapsed(true).await,
            Completion::Receipt { key, receipt } => self.receipt_known(key, receipt).await,
        }
    }
}

/// How long the reader may take to deliver what an exited agent wrote, per step.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// Steps granted to a reader that keeps delivering after the agent exited (10 s in all).
const EXIT_GRACE_REARMS: u32 = 20;

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

/// A request's or notification's params as a `Value` (`Null` when absent or not JSON).
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
