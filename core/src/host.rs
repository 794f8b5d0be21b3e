//! The public entry points: [`Host`], [`Agent`], [`Session`].

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};

use crate::connection::{self, AgentInfo, AgentShared, Command, HostShared, ReqCtx};
use crate::elicitation::{ElicitationAnswer, ElicitationHandler};
use crate::error::{Error, ExitInfo, Result};
use crate::events::{Consumer, Event, EventBus, Pulled, QueueLimits, Waker, raw_json};
use crate::permission::PermissionHandler;
use crate::permission::policy::{Operation, Policy};
use crate::services::fs::FsLimits;
use crate::services::terminal::TerminalLimits;
use crate::services::{ClientCapabilities, FsService, TerminalService};
use crate::session::{ModelSwitch, Models, SessionView};
use crate::transport::{AgentSpec, Transport, spawn_agent};

/// Name and version sent as `clientInfo` in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

impl Default for ClientInfo {
    fn default() -> Self {
        ClientInfo {
            name: "acp-host".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// Host-wide settings. Every limit is bounded by default.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub client_info: ClientInfo,
    /// Capacity of the event queue, in events. When it is full the agents' stdout is not read
    /// (backpressure); nothing else waits for it.
    pub event_capacity: usize,
    /// Capacity of the event queue, in bytes (payloads plus a per-event estimate).
    pub event_queue_bytes: usize,
    /// A call whose answer cannot arrive because the event queue is full and nobody has pulled an
    /// event for this long fails with [`Error::EventsStalled`] instead of hanging (a prompt is
    /// then cancelled, as for any abandoned call). Answers already known are delivered after half
    /// this time, their events still queued.
    /// `None`: wait for ever.
    pub event_stall_timeout: Option<Duration>,
    /// When false no events are queued at all (for embedders that only use return values).
    pub events_enabled: bool,
    /// Longest accepted line from an agent; longer lines are skipped and reported.
    pub max_line_bytes: usize,
    /// Timeout of control requests (initialize, session/new, load, ...). Prompts have none: a
    /// turn ends when the agent says so, or with `cancel`.
    pub request_timeout: Option<Duration>,
    /// Optional limit for a whole prompt turn. When it elapses the turn fails with `timeout` and
    /// the host sends `session/cancel` (default: none).
    pub prompt_timeout: Option<Duration>,
    /// How long a cancelled turn ([`Session::cancel`], [`Session::prompt_abortable`], a face's
    /// abort signal or task cancellation) waits after `session/cancel` for the agent's answer
    /// before the host gives up on it with `cancelled` (agents that ignore the cancel cannot
    /// hold the caller or the session).
    pub cancel_grace: Duration,
    /// How long a permission request may wait for the host before it is denied.
    pub permission_timeout: Duration,
    /// Grace between the rungs of the shutdown ladder (stdin EOF → SIGTERM → SIGKILL).
    pub shutdown_grace: Duration,
    /// How much of the agent's stderr is kept for exit errors.
    pub stderr_tail_bytes: usize,
    /// Emit raw `wire` events for every message in and out (protocol log views).
    pub wire_events: bool,
    /// Who answers permission requests no rule decided.
    pub permission: PermissionHandler,
    /// Who answers `elicitation/create` (forms and URL consent), and which modes are advertised.
    /// Default: not supported (nothing advertised; requests answered -32601).
    pub elicitation: ElicitationHandler,
    /// How long an elicitation may wait for the embedder before it is answered `cancel`.
    pub elicitation_timeout: Duration,
    /// Who serves the agent's `_`-prefixed extension requests (`None`: answered -32601).
    pub ext: crate::services::ExtService,
    /// The policy (rules, presets, hard-deny). `None`: the `deny-all` preset without a decider,
    /// the `ask` preset with one (`PermissionHandler::Decider` or `Manual`). docs/PERMISSIONS.md.
    pub policy: Option<Policy>,
    /// Extra sandbox roots for every session, besides its cwd and additional directories.
    pub roots: Vec<PathBuf>,
    /// Who serves `fs/*` (built-in sandbox by default).
    pub fs: FsService,
    /// Who serves `terminal/*` (built-in terminal manager by default).
    pub terminal: TerminalService,
    pub fs_limits: FsLimits,
    pub terminal_limits: TerminalLimits,
    /// Bytes queued for an agent that stopped reading its stdin before it is killed (or, for a
    /// `connect` transport, before the connection is ended).
    pub max_outbound_bytes: usize,
    /// Requests from the agent (permission, fs, terminal) pending at once; more are refused at
    /// once with a JSON-RPC error (no task, no decider call).
    pub max_pending_agent_requests: usize,
    /// Updates buffered while a session is being opened (early updates, load replay) before the
    /// session is opened early and the rest streams.
    pub early_update_limit: usize,
    /// Unstable ACP methods the embedder opts into (`"session/fork"`; see
    /// [`crate::protocol::OPT_IN_METHODS`]). Without it their call fails locally with
    /// `unsupported` and nothing is sent.
    pub unstable: Vec<String>,
    /// Coalesce bursts of `tool_call_update`s: an update for the same tool call as the last
    /// event still waiting in the queue (not yet pulled) is merged into it (newer fields win;
    /// `_meta.acpHost.coalesced` counts the updates it stands for) instead of queued. For agents
    /// that resend the whole accumulated output in every update and consumers that fall behind.
    /// Off by default: every update is then delivered as sent.
    pub coalesce_tool_call_updates: bool,
    /// Who runs the agent's terminal logins ([`crate::auth`]): with a runner the host advertises
    /// `auth.terminal` and [`Agent::terminal_auth`] works. Default: nobody.
    pub terminal_auth: crate::auth::TerminalAuth,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            client_info: ClientInfo::default(),
            event_capacity: QueueLimits::default().max_events,
            event_queue_bytes: QueueLimits::default().max_bytes,
            event_stall_timeout: Some(Duration::from_secs(3)),
            events_enabled: true,
            max_line_bytes: 64 * 1024 * 1024,
            request_timeout: Some(Duration::from_secs(120)),
            prompt_timeout: None,
            cancel_grace: Duration::from_secs(2),
            permission_timeout: Duration::from_secs(300),
            shutdown_grace: Duration::from_secs(2),
            stderr_tail_bytes: 64 * 1024,
            wire_events: false,
            permission: PermissionHandler::DenyAll,
            elicitation: ElicitationHandler::Unsupported,
            elicitation_timeout: Duration::from_secs(300),
            ext: crate::services::ExtService::Unsupported,
            policy: None,
            roots: Vec::new(),
            fs: FsService::Builtin,
            terminal: TerminalService::Builtin,
            fs_limits: FsLimits::default(),
            terminal_limits: TerminalLimits::default(),
            max_outbound_bytes: 64 * 1024 * 1024,
            max_pending_agent_requests: 1024,
            early_update_limit: 65_536,
            unstable: Vec::new(),
            coalesce_tool_call_updates: false,
            terminal_auth: crate::auth::TerminalAuth::Unsupported,
        }
    }
}

/// The embeddable host. Cheap to clone; dropping the last clone shuts every agent down.
#[derive(Debug, Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

/// The host's weak view of an agent: it must not keep the agent alive.
type AgentSlot = (
    mpsc::WeakSender<Command>,
    Arc<AgentShared>,
    Option<AgentSpec>,
);

#[derive(Debug)]
struct HostInner {
    shared: Arc<HostShared>,
    events: Mutex<Option<Consumer>>,
    next_agent: AtomicU64,
    agents: Mutex<BTreeMap<u64, AgentSlot>>,
    _alive: watch::Sender<()>,
}

impl Host {
    /// Create a host. Agents are spawned on the ambient tokio runtime.
    pub fn new(config: HostConfig) -> Host {
        let policy = config
            .policy
            .clone()
            .unwrap_or_else(|| match config.permission {
                PermissionHandler::DenyAll => Policy::default(),
                // A built-in preset name cannot fail; if it ever did, fail closed.
                _ => Policy::preset("ask").unwrap_or_default(),
            });
        let limits = QueueLimits {
            max_events: config.event_capacity,
            max_bytes: config.event_queue_bytes,
        };
        let (bus, rx) = EventBus::new(
            limits,
            config.events_enabled,
            config.coalesce_tool_call_updates,
        );
        let (alive_tx, alive_rx) = watch::channel(());
        let shared = Arc::new(HostShared {
            bus,
            config,
            next_turn: AtomicU64::new(0),
            next_permission: AtomicU64::new(0),
            permissions: Mutex::new(BTreeMap::new()),
            next_elicitation: AtomicU64::new(0),
            elicitations: Mutex::new(BTreeMap::new()),
            alive: alive_rx,
            policy,
        });
        Host {
            inner: Arc::new(HostInner {
                shared,
                events: Mutex::new(rx),
                next_agent: AtomicU64::new(0),
                agents: Mutex::new(BTreeMap::new()),
                _alive: alive_tx,
            }),
        }
    }

    pub fn config(&self) -> &HostConfig {
        &self.inner.shared.config
    }

    /// The host's event stream. There is exactly one; the first call takes it (later calls return
    /// `None`). Pull it continuously: when it is full, agents are not read (backpressure).
    pub fn events(&self) -> Option<EventStream> {
        self.inner
            .events
            .lock()
            .ok()
            .and_then(|mut e| e.take())
            .map(|rx| EventStream { rx })
    }

    /// Capabilities this host advertises in `initialize`: what it serves and its policy can ever
    /// allow. Under `deny-all` or `read-only` (without allow rules for `write` / `execute`) an
    /// agent is told there are no file writes and no terminals, so it does not plan on them.
    pub fn client_capabilities(&self) -> ClientCapabilities {
        let served = self.served_capabilities();
        let policy = &self.inner.shared.policy;
        ClientCapabilities {
            read_text_file: served.read_text_file && policy.can_allow(Operation::Read),
            write_text_file: served.write_text_file && policy.can_allow(Operation::Write),
            terminal: served.terminal && policy.can_allow(Operation::Execute),
            elicitation: served.elicitation,
            terminal_auth: served.terminal_auth,
        }
    }

    /// The methods dispatched to the services. An agent that calls one it was not offered still
    /// gets the policy's refusal (and the embedder its event), not a bare "method not found".
    fn served_capabilities(&self) -> ClientCapabilities {
        let cfg = &self.inner.shared.config;
        let fs = !matches!(cfg.fs, FsService::Disabled);
        ClientCapabilities {
            read_text_file: fs,
            write_text_file: fs,
            terminal: !matches!(cfg.terminal, TerminalService::Disabled),
            elicitation: cfg.elicitation.modes(),
            terminal_auth: matches!(cfg.terminal_auth, crate::auth::TerminalAuth::Runner(_)),
        }
    }

    /// The effective permission policy.
    pub fn policy(&self) -> &Policy {
        &self.inner.shared.policy
    }

    /// Spawn an agent process and perform the handshake.
    pub async fn spawn(&self, spec: AgentSpec) -> Result<Agent> {
        let id = self.inner.next_agent.fetch_add(1, Ordering::Relaxed) + 1;
        let cfg = &self.inner.shared.config;
        let transport = spawn_agent(&spec, id, cfg.stderr_tail_bytes)?;
        self.start(id, transport, Some(spec)).await
    }

    /// Speak ACP over an existing byte stream pair (in-memory duplex, a socket the embedder owns).
    pub async fn connect<R, W>(&self, reader: R, writer: W) -> Result<Agent>
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let id = self.inner.next_agent.fetch_add(1, Ordering::Relaxed) + 1;
        let transport = Transport {
            reader: Box::pin(reader),
            writer: Box::pin(writer),
            process: None,
            stderr: None,
        };
        self.start(id, transport, None).await
    }

    async fn start(&self, id: u64, transport: Transport, spec: Option<AgentSpec>) -> Result<Agent> {
        let shared = Arc::new(AgentShared::default());
        let caps = self.served_capabilities();
        let cmd = connection::start(
            id,
            self.inner.shared.clone(),
            shared.clone(),
            caps,
            transport,
        );
        if let Ok(mut agents) = self.inner.agents.lock() {
            agents.retain(|_, (tx, _, _)| tx.strong_count() > 0);
            agents.insert(id, (cmd.downgrade(), shared.clone(), spec.clone()));
        }
        let agent = Agent {
            inner: Arc::new(AgentInner {
                id,
                cmd,
                shared,
                host: self.inner.shared.clone(),
                spec,
                owner: Arc::downgrade(&self.inner),
            }),
        };
        let cfg = &self.inner.shared.config;
        let params = serde_json::json!({
            "protocolVersion": connection::PROTOCOL_VERSION,
            "clientCapabilities": self.client_capabilities().to_json(),
            "clientInfo": { "name": cfg.client_info.name, "version": cfg.client_info.version },
        });
        match agent
            .request(
                "initialize",
                &params,
                ReqCtx::Initialize,
                cfg.request_timeout,
            )
            .await
        {
            Ok(_) => Ok(agent),
            Err(e) => {
                // Version mismatch, timeout, early death: the agent is not usable; take it down.
                agent.shutdown_because(Some(e.to_json())).await;
                Err(e)
            }
        }
    }

    /// Answer a pending permission request (from any task): `Some(option_id)` selects an offered
    /// option, `None` denies. An option id that was not offered denies and returns an error; a
    /// request that was already resolved returns [`Error::AlreadyResolved`] and changes nothing.
    pub async fn respond_permission(
        &self,
        request_id: u64,
        option_id: Option<String>,
    ) -> Result<()> {
        let agent = self
            .inner
            .shared
            .permissions
            .lock()
            .ok()
            .and_then(|m| m.get(&request_id).copied());
        let Some((agent, resolved)) = agent else {
            return Err(Error::NotFound(format!(
                "no permission request {request_id}"
            )));
        };
        if resolved {
            return Err(Error::AlreadyResolved(format!(
                "permission request {request_id} was already resolved"
            )));
        }
        let Some(agent) = self.agent(agent) else {
            return Err(Error::AlreadyResolved(format!(
                "permission request {request_id}: its agent is gone"
            )));
        };
        let (tx, rx) = oneshot::channel();
        agent
            .send(Command::RespondPermission {
                request_id,
                option_id,
                reply: tx,
            })
            .await?;
        rx.await.map_err(|_| closed())?
    }

    /// Answer a pending elicitation request (from any task). Accepted form content is checked
    /// against the requested schema: invalid content answers `cancel` and returns an error; a
    /// request that was already resolved returns [`Error::AlreadyResolved`] and changes nothing.
    pub async fn respond_elicitation(
        &self,
        request_id: u64,
        answer: ElicitationAnswer,
    ) -> Result<()> {
        self.answer_elicitation(request_id, Ok(answer)).await
    }

    /// Refuse a pending elicitation because the embedder's answer was unusable (a face got
    /// something that is not an answer): the agent gets `cancel`, and `elicitation_resolved`
    /// says `invalid_answer` with `reason`. Errors as for [`Host::respond_elicitation`].
    pub async fn reject_elicitation(&self, request_id: u64, reason: String) -> Result<()> {
        self.answer_elicitation(request_id, Err(reason)).await
    }

    async fn answer_elicitation(
        &self,
        request_id: u64,
        answer: std::result::Result<ElicitationAnswer, String>,
    ) -> Result<()> {
        let Some((agent, resolved)) = self.inner.shared.elicitation_state(request_id) else {
            return Err(Error::NotFound(format!(
                "no elicitation request {request_id}"
            )));
        };
        if resolved {
            return Err(Error::AlreadyResolved(format!(
                "elicitation request {request_id} was already resolved"
            )));
        }
        let Some(agent) = self.agent(agent) else {
            return Err(Error::AlreadyResolved(format!(
                "elicitation request {request_id}: its agent is gone"
            )));
        };
        let (tx, rx) = oneshot::channel();
        agent
            .send(Command::RespondElicitation {
                request_id,
                answer,
                reply: tx,
            })
            .await?;
        rx.await.map_err(|_| closed())?
    }

    /// For faces whose calls return at once and complete as events (the C ABI): put the outcome of
    /// call `call` into the event stream, in order with everything else, as a `call_completed`
    /// event `{"call", "ok": true, "result"}` or `{"call", "ok": false, "error": {kind, message,
    /// data}}`. `agent` is 0 when the call belongs to no agent.
    pub async fn report_call(
        &self,
        call: u64,
        agent: u64,
        result: std::result::Result<Value, &Error>,
    ) {
        let data = match result {
            Ok(v) => serde_json::json!({ "call": call, "ok": true, "result": v }),
            Err(e) => serde_json::json!({ "call": call, "ok": false, "error": e.to_json() }),
        };
        let ev = crate::events::PendingEvent::new(
            agent,
            crate::events::EventKind::CallCompleted,
            raw_json(&data),
        );
        self.inner.shared.bus.emit(ev).await;
    }

    /// For the C ABI's pull-side services: put an agent's request for the embedder into the
    /// event stream as a `service_requested` event `{"requestId", "method", "params"}` (`session`
    /// from `params.sessionId`); the face answers it by request id. `agent` is 0 when unknown.
    pub async fn report_service_request(
        &self,
        agent: u64,
        request_id: u64,
        method: &str,
        params: &Value,
    ) {
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .map(Arc::<str>::from);
        let data = serde_json::json!({
            "requestId": request_id,
            "method": method,
            "params": params,
        });
        let ev = crate::events::PendingEvent::new(
            agent,
            crate::events::EventKind::ServiceRequested,
            raw_json(&data),
        )
        .session(session);
        self.inner.shared.bus.emit(ev).await;
    }

    /// A handle to a live agent by id.
    pub fn agent(&self, id: u64) -> Option<Agent> {
        let agents = self.inner.agents.lock().ok()?;
        let (weak, shared, spec) = agents.get(&id)?;
        let cmd = weak.upgrade()?;
        Some(Agent {
            inner: Arc::new(AgentInner {
                id,
                cmd,
                shared: shared.clone(),
                host: self.inner.shared.clone(),
                spec: spec.clone(),
                owner: Arc::downgrade(&self.inner),
            }),
        })
    }

    /// End the event stream after the events queued so far: pullers get those, then the end
    /// (`None`); anything that happens later is not queued. For faces that end their stream
    /// once [`Host::shutdown`] returned.
    pub fn close_events(&self) {
        self.inner.shared.bus.close();
    }

    /// Shut every agent down (ladder: stdin EOF → SIGTERM → SIGKILL), concurrently.
    pub async fn shutdown(&self) {
        let ids: Vec<u64> = self
            .inner
            .agents
            .lock()
            .map(|a| a.keys().copied().collect())
            .unwrap_or_default();
        let mut tasks = Vec::new();
        for id in ids {
            if let Some(agent) = self.agent(id) {
                tasks.push(tokio::spawn(async move { agent.shutdown().await }));
            }
        }
        for t in tasks {
            let _ = t.await;
        }
    }
}

fn closed() -> Error {
    Error::Closed("agent connection ended".into())
}

/// The host's single event stream.
#[derive(Debug)]
pub struct EventStream {
    rx: Consumer,
}

impl EventStream {
    /// The next event; `None` when the host is gone and everything was delivered.
    pub async fn next(&self) -> Option<Event> {
        self.rx.next().await
    }

    /// The next event if one is ready.
    pub fn try_next(&self) -> Option<Event> {
        match self.rx.try_pull() {
            Pulled::Event(ev) => Some(ev),
            Pulled::Empty | Pulled::Ended => None,
        }
    }

    /// Up to `limit` events at once (at least one unless the stream ended); for faces that hand
    /// events across a boundary in batches.
    pub async fn next_batch(&self, buf: &mut Vec<Event>, limit: usize) -> usize {
        self.rx.next_batch(buf, limit).await
    }

    /// Blocking variant for non-async callers (not to be used inside a runtime thread).
    pub fn blocking_next(&self) -> Option<Event> {
        match self.rx.blocking_pull(None) {
            Pulled::Event(ev) => Some(ev),
            Pulled::Empty | Pulled::Ended => None,
        }
    }

    /// Blocking pull with a timeout (`None`: for ever), for threads outside any runtime. `None`
    /// on timeout or at the end of the stream; [`EventStream::is_ended`] tells which.
    pub fn blocking_next_timeout(&self, timeout: Option<Duration>) -> Option<Event> {
        match self.rx.blocking_pull(timeout) {
            Pulled::Event(ev) => Some(ev),
            Pulled::Empty | Pulled::Ended => None,
        }
    }

    /// Whether no event is queued right now.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// Whether the stream ended (the host is gone) and every event was pulled.
    pub fn is_ended(&self) -> bool {
        self.rx.is_ended()
    }

    /// Register a function called when the stream goes from empty to non-empty and when it
    /// ends (at once if events are already waiting): for event loops that pull on a wake-up.
    /// It runs on a library thread (or the thread that made the event), must be quick and
    /// must not block or pull events itself. `None` removes it.
    pub fn set_waker(&self, waker: Option<Waker>) {
        self.rx.set_waker(waker);
    }
}

/// Options of `session/new` (and of load/resume/fork).
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Absolute working directory of the session.
    pub cwd: String,
    /// Extra roots (absolute); sent only when the agent supports `additionalDirectories`.
    pub additional_directories: Vec<String>,
    /// MCP server configurations, in ACP shape.
    pub mcp_servers: Vec<Value>,
}

impl SessionOptions {
    pub fn new(cwd: impl Into<String>) -> Self {
        SessionOptions {
            cwd: cwd.into(),
            ..Default::default()
        }
    }

    fn params(
        &self,
        info: &AgentInfo,
        session_id: Option<&str>,
        mcp_required: bool,
    ) -> Result<Value> {
        if !std::path::Path::new(&self.cwd).is_absolute() {
            return Err(Error::InvalidArgument(format!(
                "cwd must be an absolute path, got `{}`",
                self.cwd
            )));
        }
        let mut p = serde_json::json!({ "cwd": self.cwd });
        if let Some(id) = session_id {
            p["sessionId"] = Value::from(id);
        }
        if mcp_required || !self.mcp_servers.is_empty() {
            p["mcpServers"] = Value::from(self.mcp_servers.clone());
        }
        if !self.additional_directories.is_empty() {
            if !info.session_capability("additionalDirectories") {
                return Err(Error::Unsupported(
                    "agent does not advertise sessionCapabilities.additionalDirectories".into(),
                ));
            }
            if let Some(bad) = self
                .additional_directories
                .iter()
                .find(|d| !std::path::Path::new(d).is_absolute())
            {
                return Err(Error::InvalidArgument(format!(
                    "additional directory must be absolute: `{bad}`"
                )));
            }
            p["additionalDirectories"] = Value::from(self.additional_directories.clone());
        }
        Ok(p)
    }
}

/// A connected, initialized agent. Cheap to clone; when every handle (including sessions) is
/// dropped, the agent is shut down.
#[derive(Debug, Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

#[derive(Debug)]
struct AgentInner {
    id: u64,
    cmd: mpsc::Sender<Command>,
    shared: Arc<AgentShared>,
    host: Arc<HostShared>,
    /// How it was started (`None` for `connect`): terminal login relaunches it.
    spec: Option<AgentSpec>,
    /// The host, to relaunch the agent (weak: an agent does not keep its host alive).
    owner: std::sync::Weak<HostInner>,
}

impl Agent {
    /// The host's id for this agent (the `agent` field of events).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// What the agent negotiated in `initialize`.
    pub fn info(&self) -> Option<&AgentInfo> {
        self.inner.shared.info.get()
    }

    /// The agent's process id (leader of its process group); `None` for `Host::connect` agents.
    pub fn pid(&self) -> Option<u32> {
        self.inner.shared.pid.get().copied()
    }

    /// How the agent ended, once it has.
    pub fn exit_info(&self) -> Option<&ExitInfo> {
        self.inner.shared.exit.get()
    }

    /// Resolves once the agent has ended (its [`Agent::exit_info`] is set; its `agent_exited`
    /// event is being queued), at once if it already has.
    pub async fn exited(&self) {
        loop {
            let woken = self.inner.shared.exited.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.exit_info().is_some() {
                return;
            }
            woken.await;
        }
    }

    fn require_info(&self) -> Result<&AgentInfo> {
        self.info()
            .ok_or_else(|| Error::Closed("agent not initialized".into()))
    }

    /// The agent's info, if its capabilities allow `method` (the method table's gate); else
    /// `Unsupported` naming the capability, and nothing is sent.
    fn require_gate(&self, method: &str) -> Result<&AgentInfo> {
        let info = self.require_info()?;
        match crate::protocol::method(method) {
            Some(m) if !m.allowed_by_agent(&info.capabilities) => Err(Error::Unsupported(format!(
                "agent does not advertise {} ({method})",
                m.gate.describe()
            ))),
            _ => Ok(info),
        }
    }

    async fn send(&self, cmd: Command) -> Result<()> {
        self.inner.cmd.send(cmd).await.map_err(|_| closed())
    }

    async fn request(
        &self,
        method: impl Into<Cow<'static, str>>,
        params: &Value,
        ctx: ReqCtx,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        self.request_abortable(method, params, ctx, timeout, std::future::pending())
            .await
    }

    /// [`Agent::request`] that settles once `abort` resolves: at once with [`Error::Cancelled`]
    /// (the agent gets `$/cancel_request`), or for a prompt after `session/cancel` and at most
    /// `HostConfig::cancel_grace` waiting for the agent's answer (returned when it comes in time).
    /// The request stays registered: a late answer ends the turn (`turn_ended`) exactly once.
    async fn request_abortable(
        &self,
        method: impl Into<Cow<'static, str>>,
        params: &Value,
        ctx: ReqCtx,
        timeout: Option<Duration>,
        abort: impl Future<Output = ()>,
    ) -> Result<Box<RawValue>> {
        let is_prompt = matches!(ctx, ReqCtx::Prompt { .. });
        let id = self
            .inner
            .shared
            .next_request
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        let (tx, rx) = oneshot::channel();
        self.send(Command::Request {
            id,
            method: method.into(),
            params: raw_json(params),
            ctx,
            timeout,
            reply: tx,
        })
        .await?;
        // If this future is dropped before the answer, the agent is told (best effort).
        let mut guard = InFlight {
            cmd: &self.inner.cmd,
            id,
            done: false,
        };
        let gone = |agent: &Agent| {
            agent
                .exit_info()
                .cloned()
                .map(Error::AgentExited)
                .unwrap_or_else(closed)
        };
        let host = &self.inner.host;
        let stall = host
            .config
            .event_stall_timeout
            .filter(|_| host.bus.enabled());
        let mut rx = rx;
        let stalled = async {
            match stall {
                Some(limit) => host.bus.wait_stalled(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(stalled, abort);
        let mut aborted = false;
        let res = loop {
            tokio::select! {
                biased;
                r = &mut rx => break r.unwrap_or_else(|_| Err(gone(self))),
                waited = &mut stalled => match rx.try_recv() {
                    // The answer made it after all: prefer it.
                    Ok(r) => break r,
                    // Abandoned (the agent is told, a prompt is cancelled) by the guard.
                    Err(_) => {
                        return Err(Error::EventsStalled {
                            waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                        });
                    }
                },
                () = &mut abort, if !aborted => {
                    if !is_prompt {
                        // The guard sends `$/cancel_request`; the caller has its answer now.
                        return Err(Error::Cancelled);
                    }
                    // The actor sends `session/cancel` (cancelling the session's pending
                    // permission requests) and answers within `cancel_grace`: the agent's own
                    // answer if it comes in time, else `cancelled`.
                    aborted = true;
                    let _ = self.inner.cmd.send(Command::Abandon { id }).await;
                }
            }
        };
        guard.done = true;
        res
    }

    fn control_timeout(&self) -> Option<Duration> {
        self.inner.host.config.request_timeout
    }

    /// Send an extension request (a `_`-prefixed method, e.g. `_vendor/thing`) and get its raw
    /// result. Any other method is refused with `invalid_argument` (the protocol's own methods
    /// go through their typed calls, which keep the session and turn bookkeeping).
    pub async fn ext_request(&self, method: &str, params: &Value) -> Result<Value> {
        if !method.starts_with('_') {
            return Err(Error::InvalidArgument(format!(
                "`{method}` is not an extension method (they start with `_`)"
            )));
        }
        let raw = self
            .request(
                method.to_owned(),
                params,
                ReqCtx::Plain,
                self.control_timeout(),
            )
            .await?;
        Ok(serde_json::from_str(raw.get()).unwrap_or(Value::Null))
    }

    /// `authenticate` with one of the advertised agent-type auth methods.
    /// The agent's `authMethods`, parsed: which need `authenticate` and which a terminal login.
    pub fn auth_methods(&self) -> Vec<crate::auth::AuthMethodInfo> {
        self.info()
            .map(|i| {
                i.auth_methods
                    .iter()
                    .filter_map(crate::auth::AuthMethodInfo::parse)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Terminal login ([`crate::auth`]): run the login of `method_id` (a `terminal` method, or one
    /// with the legacy `_meta["terminal-auth"]`) through `HostConfig::terminal_auth`; when it
    /// exits 0, shut this agent down and start it again from the same spec (a new handshake),
    /// and return the new agent. Retry the call that failed with `auth_required` on it; sessions
    /// of this agent are gone (`load`/`resume` them on the new one). A login that exits non-zero
    /// is `auth_required` and leaves this agent running. `authenticate` is never sent.
    pub async fn terminal_auth(&self, method_id: &str) -> Result<Agent> {
        let crate::auth::TerminalAuth::Runner(runner) =
            self.inner.host.config.terminal_auth.clone()
        else {
            return Err(Error::Unsupported(
                "terminal login needs a runner (HostConfig::terminal_auth)".into(),
            ));
        };
        let Some(spec) = self.inner.spec.clone() else {
            return Err(Error::Unsupported(
                "terminal login relaunches the agent: this one was not spawned by the host".into(),
            ));
        };
        let info = self.require_info()?;
        let method = info.auth_method(method_id).ok_or_else(|| {
            Error::InvalidArgument(format!("agent does not offer auth method `{method_id}`"))
        })?;
        let command = crate::auth::terminal_command(method, &spec).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "auth method `{method_id}` is not a terminal login (use authenticate)"
            ))
        })?;
        let code = crate::services::serving(self.inner.id, runner.run(command))
            .await
            .map_err(|e| Error::AuthRequired {
                message: format!("terminal login `{method_id}` could not run: {e}"),
                data: None,
            })?;
        if code != 0 {
            return Err(Error::AuthRequired {
                message: format!("terminal login `{method_id}` exited with status {code}"),
                data: Some(serde_json::json!({ "exitCode": code })),
            });
        }
        let host = self
            .inner
            .owner
            .upgrade()
            .map(|inner| Host { inner })
            .ok_or_else(|| Error::Closed("the host is gone".into()))?;
        self.shutdown().await;
        host.spawn(spec).await
    }

    pub async fn authenticate(&self, method_id: &str) -> Result<()> {
        let info = self.require_info()?;
        match info.auth_method(method_id) {
            None if !info.auth_methods.is_empty() => {
                return Err(Error::InvalidArgument(format!(
                    "agent does not offer auth method `{method_id}`"
                )));
            }
            Some(m)
                if m.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t != "agent") =>
            {
                return Err(Error::Unsupported(format!(
                    "auth method `{method_id}` is not an `agent` method (a terminal login: use \
                     terminal_auth, which relaunches the agent)"
                )));
            }
            _ => {}
        }
        let params = serde_json::json!({ "methodId": method_id });
        self.request(
            "authenticate",
            &params,
            ReqCtx::Plain,
            self.control_timeout(),
        )
        .await?;
        Ok(())
    }

    /// `logout` (needs `agentCapabilities.auth.logout`): the agent forgets its credentials;
    /// calls that need them fail with `auth_required` until `authenticate` again.
    pub async fn logout(&self) -> Result<()> {
        self.require_gate("logout")?;
        self.request(
            "logout",
            &serde_json::json!({}),
            ReqCtx::Plain,
            self.control_timeout(),
        )
        .await?;
        Ok(())
    }

    /// `session/new`.
    pub async fn new_session(&self, options: SessionOptions) -> Result<Session> {
        let info = self.require_info()?;
        let params = options.params(info, None, true)?;
        let raw = self
            .request(
                "session/new",
                &params,
                ReqCtx::NewSession {
                    cwd: options.cwd.clone(),
                    extra: options.additional_directories.clone(),
                },
                self.control_timeout(),
            )
            .await?;
        self.session_from_result(&raw, None)
    }

    /// `session/load` (needs `loadSession`): the agent replays the conversation, delivered as
    /// `session_update` events with `replay: true` after `session_opened`.
    pub async fn load_session(&self, session_id: &str, options: SessionOptions) -> Result<Session> {
        self.require_gate("session/load")?;
        self.open_existing("session/load", session_id, options, true, "load")
            .await
    }

    /// `session/resume` (needs `sessionCapabilities.resume`): reopen without replay.
    pub async fn resume_session(
        &self,
        session_id: &str,
        options: SessionOptions,
    ) -> Result<Session> {
        self.require_gate("session/resume")?;
        self.open_existing("session/resume", session_id, options, false, "resume")
            .await
    }

    async fn open_existing(
        &self,
        method: &'static str,
        session_id: &str,
        options: SessionOptions,
        replay: bool,
        origin: &'static str,
    ) -> Result<Session> {
        let info = self.require_info()?;
        let params = options.params(info, Some(session_id), method == "session/load")?;
        let id: Arc<str> = Arc::from(session_id);
        let ctx = ReqCtx::OpenSession {
            id: id.clone(),
            cwd: options.cwd.clone(),
            extra: options.additional_directories.clone(),
            replay,
            origin,
        };
        let raw = self
            .request(method, &params, ctx, self.control_timeout())
            .await?;
        self.session_from_result(&raw, Some(id))
    }

    /// `session/fork` (unstable: needs `"session/fork"` in [`HostConfig::unstable`], and the
    /// agent's `sessionCapabilities.fork`): a new session that starts from `session_id`'s history.
    pub async fn fork_session(&self, session_id: &str, options: SessionOptions) -> Result<Session> {
        if !self
            .inner
            .host
            .config
            .unstable
            .iter()
            .any(|m| m == "session/fork")
        {
            return Err(Error::Unsupported(
                "session/fork is an unstable ACP method: opt in with `unstable: [\"session/fork\"]` \
                 in the host's config"
                    .into(),
            ));
        }
        let info = self.require_gate("session/fork")?;
        let params = options.params(info, Some(session_id), false)?;
        let raw = self
            .request(
                "session/fork",
                &params,
                ReqCtx::ForkSession {
                    cwd: options.cwd.clone(),
                    extra: options.additional_directories.clone(),
                },
                self.control_timeout(),
            )
            .await?;
        self.session_from_result(&raw, None)
    }

    fn session_from_result(&self, raw: &RawValue, known: Option<Arc<str>>) -> Result<Session> {
        let id: Arc<str> = match known {
            Some(id) => id,
            None => {
                let v: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                match v.get("sessionId").and_then(Value::as_str) {
                    Some(s) => Arc::from(s),
                    None => return Err(Error::Protocol("response has no sessionId".into())),
                }
            }
        };
        let view = self
            .inner
            .shared
            .session_view(&id)
            .ok_or_else(|| Error::Closed(format!("session {id} closed while opening")))?;
        Ok(Session {
            agent: self.clone(),
            id,
            view,
        })
    }

    /// `session/list` (needs `sessionCapabilities.list`). Returns `{sessions, nextCursor?}`.
    pub async fn list_sessions(&self, cwd: Option<&str>, cursor: Option<&str>) -> Result<Value> {
        self.require_gate("session/list")?;
        let mut params = serde_json::json!({});
        if let Some(cwd) = cwd {
            params["cwd"] = Value::from(cwd);
        }
        if let Some(c) = cursor {
            params["cursor"] = Value::from(c);
        }
        let raw = self
            .request(
                "session/list",
                &params,
                ReqCtx::Plain,
                self.control_timeout(),
            )
            .await?;
        Ok(serde_json::from_str(raw.get()).unwrap_or(Value::Null))
    }

    /// `session/close` (needs `sessionCapabilities.close`).
    pub async fn close_session(&self, session_id: &str) -> Result<()> {
        self.require_gate("session/close")?;
        let params = serde_json::json!({ "sessionId": session_id });
        let ctx = ReqCtx::CloseSession {
            id: Arc::from(session_id),
        };
        self.request("session/close", &params, ctx, self.control_timeout())
            .await?;
        Ok(())
    }

    /// `session/delete` (needs `sessionCapabilities.delete`).
    pub async fn delete_session(&self, session_id: &str) -> Result<()> {
        self.require_gate("session/delete")?;
        let params = serde_json::json!({ "sessionId": session_id });
        let ctx = ReqCtx::DeleteSession {
            id: Arc::from(session_id),
        };
        self.request("session/delete", &params, ctx, self.control_timeout())
            .await?;
        Ok(())
    }

    /// A handle to an open session of this agent.
    pub fn session(&self, session_id: &str) -> Option<Session> {
        let view = self.inner.shared.session_view(session_id)?;
        Some(Session {
            agent: self.clone(),
            id: Arc::from(session_id),
            view,
        })
    }

    /// Shut the agent down (ladder: stdin EOF → grace → SIGTERM → grace → SIGKILL, to its whole
    /// process group). Pending calls fail with `closed`. Returns how it ended.
    pub async fn shutdown(&self) -> ExitInfo {
        self.shutdown_because(None).await
    }

    async fn shutdown_because(&self, error: Option<Value>) -> ExitInfo {
        if let Some(info) = self.exit_info() {
            return info.clone();
        }
        let (tx, rx) = oneshot::channel();
        if self
            .inner
            .cmd
            .send(Command::Shutdown { reply: tx, error })
            .await
            .is_err()
        {
            return self.exit_info().cloned().unwrap_or_default();
        }
        rx.await.unwrap_or_default()
    }
}

/// Sends `Command::Abandon` when a request future is dropped before its answer arrived.
struct InFlight<'a> {
    cmd: &'a mpsc::Sender<Command>,
    id: u64,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.cmd.try_send(Command::Abandon { id: self.id });
        }
    }
}

/// The result of a prompt turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    /// The host's turn id (the `turn` field of events).
    pub turn: u64,
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`, `cancelled` (or a future value).
    pub stop_reason: String,
    /// `usage` of the prompt response, when the agent sent it.
    pub usage: Option<Value>,
    /// The whole prompt response.
    pub raw: Value,
    /// The agent's message text of this turn, assembled from its `agent_message_chunk` text
    /// blocks (so a script can print the answer without reading events).
    pub text: String,
    /// The thought text (`agent_thought_chunk`), kept apart from `text`.
    pub thought: String,
    /// `text` or `thought` reached `session::TURN_TEXT_LIMIT` (4 MiB) and was cut there.
    pub text_truncated: bool,
}

/// An open session. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Session {
    agent: Agent,
    id: Arc<str>,
    view: Arc<Mutex<SessionView>>,
}

impl Session {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// A snapshot of the materialised session state.
    pub fn state(&self) -> SessionView {
        self.view.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Send a prompt and wait for the turn to end. `content` is an array of ACP content blocks;
    /// blocks the agent did not advertise (image, audio, embedded resources) are refused locally.
    pub async fn prompt(&self, content: Vec<Value>) -> Result<TurnResult> {
        self.prompt_abortable(content, std::future::pending()).await
    }

    /// [`Session::prompt`] with a Stop button: once `abort` resolves, `session/cancel` is sent
    /// (pending permission requests of the session are answered `cancelled` at once) and the
    /// agent has `HostConfig::cancel_grace` to end the turn. Its answer (normally stop reason
    /// `cancelled`) is returned when it comes in time; otherwise the call fails with
    /// [`Error::Cancelled`]. Either way it settles: an agent that ignores the cancel cannot hold
    /// the caller. Late events of the turn still arrive with its turn id, and a late answer ends
    /// the turn (`turn_ended`) once. Dropping the future instead abandons the turn at once (the
    /// agent also gets `session/cancel`).
    pub async fn prompt_abortable(
        &self,
        content: Vec<Value>,
        abort: impl Future<Output = ()>,
    ) -> Result<TurnResult> {
        let info = self.agent.require_info()?;
        check_prompt(info, &content)?;
        let turn = self
            .agent
            .inner
            .host
            .next_turn
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        let params = serde_json::json!({ "sessionId": &*self.id, "prompt": content });
        let text = Arc::new(Mutex::new(crate::session::TurnText::default()));
        let ctx = ReqCtx::Prompt {
            session: self.id.clone(),
            turn,
            text: text.clone(),
        };
        let timeout = self.agent.inner.host.config.prompt_timeout;
        let raw = self
            .agent
            .request_abortable("session/prompt", &params, ctx, timeout, abort)
            .await?;
        let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        let stop_reason = value
            .get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::Protocol("prompt response has no stopReason".into()))?;
        let text = text.lock().map(|t| t.clone()).unwrap_or_default();
        Ok(TurnResult {
            turn,
            stop_reason,
            usage: value.get("usage").cloned(),
            raw: value,
            text: text.text,
            thought: text.thought,
            text_truncated: text.truncated,
        })
    }

    /// Convenience: prompt with one text block.
    pub async fn prompt_text(&self, text: &str) -> Result<TurnResult> {
        self.prompt(vec![serde_json::json!({ "type": "text", "text": text })])
            .await
    }

    /// `session/cancel`: the agent should end the turn with `cancelled`; every pending permission
    /// request of this session is answered `cancelled` at once. The turn in flight then has
    /// `HostConfig::cancel_grace` to end; if the agent ignores the cancel, the host gives up on
    /// it: its `prompt` call fails with [`Error::Cancelled`] and the turn ends (`turn_ended`
    /// with that error). Late updates keep the turn id; a late answer is reported as a
    /// `protocol_error` (`late_response`), never applied.
    pub async fn cancel(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.agent
            .send(Command::Cancel {
                session: self.id.clone(),
                reply: tx,
            })
            .await?;
        rx.await.map_err(|_| closed())?
    }

    /// `session/set_mode` (the agent must have returned `modes` with that mode id).
    pub async fn set_mode(&self, mode_id: &str) -> Result<()> {
        let modes = self.state().modes;
        let Some(modes) = modes else {
            return Err(Error::Unsupported(
                "agent did not return session modes".into(),
            ));
        };
        let known = modes
            .get("availableModes")
            .and_then(Value::as_array)
            .is_some_and(|m| {
                m.iter()
                    .any(|x| x.get("id").and_then(Value::as_str) == Some(mode_id))
            });
        if !known {
            return Err(Error::InvalidArgument(format!("unknown mode `{mode_id}`")));
        }
        let params = serde_json::json!({ "sessionId": &*self.id, "modeId": mode_id });
        let ctx = ReqCtx::SetMode {
            session: self.id.clone(),
            mode: mode_id.to_owned(),
        };
        self.agent
            .request(
                "session/set_mode",
                &params,
                ctx,
                self.agent.control_timeout(),
            )
            .await?;
        Ok(())
    }

    /// `session/set_config_option`; returns the complete updated option list.
    pub async fn set_config_option(&self, config_id: &str, value: Value) -> Result<Value> {
        let options = self.state().config_options;
        let Some(options) = options else {
            return Err(Error::Unsupported(
                "agent did not return config options".into(),
            ));
        };
        let option = options
            .as_array()
            .and_then(|o| {
                o.iter()
                    .find(|x| x.get("id").and_then(Value::as_str) == Some(config_id))
            })
            .cloned();
        let Some(option) = option else {
            return Err(Error::InvalidArgument(format!(
                "unknown config option `{config_id}`"
            )));
        };
        let mut params =
            serde_json::json!({ "sessionId": &*self.id, "configId": config_id, "value": value });
        if option.get("type").and_then(Value::as_str) == Some("boolean") {
            params["type"] = Value::from("boolean");
        }
        let ctx = ReqCtx::SetConfig {
            session: self.id.clone(),
        };
        let raw = self
            .agent
            .request(
                "session/set_config_option",
                &params,
                ctx,
                self.agent.control_timeout(),
            )
            .await?;
        let v: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
        Ok(v.get("configOptions").cloned().unwrap_or(Value::Null))
    }

    /// The models the agent offers for this session, and the current one: from its config
    /// option of category `model` (ACP v1), else from the legacy `models` of the session/new
    /// (load, resume) response that older agents send. `None` when the agent offers no choice.
    pub fn models(&self) -> Option<Models> {
        Models::of(&self.state())
    }

    /// Switch the session's model: through the `model` config option when the agent has one
    /// (`session/set_config_option`), else through the legacy `session/set_model` for agents
    /// that only answer that. `model_id` must be one the agent offered.
    pub async fn set_model(&self, model_id: &str) -> Result<()> {
        let Some(models) = self.models() else {
            return Err(Error::Unsupported(
                "agent offers no model choice (no `model` config option, no `models`)".into(),
            ));
        };
        if !models.available.iter().any(|m| m.id == model_id) {
            return Err(Error::InvalidArgument(format!(
                "unknown model `{model_id}`"
            )));
        }
        match &models.via {
            ModelSwitch::ConfigOption(config_id) => {
                self.set_config_option(config_id, Value::from(model_id))
                    .await?;
            }
            ModelSwitch::Legacy => {
                let params = serde_json::json!({ "sessionId": &*self.id, "modelId": model_id });
                let ctx = ReqCtx::SetModel {
                    session: self.id.clone(),
                    model: model_id.to_owned(),
                };
                self.agent
                    .request(
                        "session/set_model",
                        &params,
                        ctx,
                        self.agent.control_timeout(),
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// `session/close` for this session.
    pub async fn close(&self) -> Result<()> {
        self.agent.close_session(&self.id).await
    }
}

/// Refuse prompt content the agent did not advertise (nothing is sent).
fn check_prompt(info: &AgentInfo, content: &[Value]) -> Result<()> {
    for (i, block) in content.iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let needs = match kind {
            "text" | "resource_link" => None,
            "image" => Some("image"),
            "audio" => Some("audio"),
            "resource" => Some("embeddedContext"),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "prompt block {i} has unknown type `{other}`"
                )));
            }
        };
        if let Some(cap) = needs
            && !info.prompt_capability(cap)
        {
            return Err(Error::Unsupported(format!(
                "prompt block {i} is `{kind}` but the agent does not advertise promptCapabilities.{cap}"
            )));
        }
    }
    Ok(())
}
