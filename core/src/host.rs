//! The public entry point: [`Host`] (with [`HostConfig`]) and its [`EventStream`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{oneshot, watch};

use crate::agent::{Agent, AgentInner, Link, closed};
use crate::connection::{self, AgentShared, Command, HostShared, ReqCtx};
use crate::elicitation::{ElicitationAnswer, ElicitationHandler};
use crate::error::{Error, Result};
use crate::events::{Consumer, Event, EventBus, Pulled, QueueLimits, Waker, raw_json};
use crate::permission::PermissionHandler;
use crate::permission::policy::{Operation, Policy};
use crate::progress::{Phase, Stage, Step};
use crate::receipt::{Receipt, RequestState};
use crate::services::fs::FsLimits;
use crate::services::terminal::TerminalLimits;
use crate::services::{ClientCapabilities, FsService, TerminalService};
use crate::transport::{AgentSpec, Transport, open_agent};

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
    /// Record every connection to a file (docs/RECORDING.md); `None`: no recording.
    pub record: Option<crate::record::RecordConfig>,
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
    /// The most the queue to an agent's stdin ever holds (64 MiB). Half of it is the budget for
    /// answers to the agent's own requests in flight (read, encoded, queued, until written): an
    /// answer waits for room instead of piling up, and one that could never fit is an error for
    /// that request (a read's content is held to `min(fs_limits.max_read_bytes, half of this)` as
    /// JSON text). The other half is for the host's own lines: when they fill it the agent has
    /// stopped reading its stdin and is killed (a `connect` transport ended), and a request
    /// larger than it fails with `invalid_argument`, unsent. docs/ARCHITECTURE.md.
    pub max_outbound_bytes: usize,
    /// Requests from the agent (permission, fs, terminal) pending at once; more are refused at
    /// once with a JSON-RPC error (no task, no decider call).
    pub max_pending_agent_requests: usize,
    /// Updates buffered while a session is being opened (early updates, load replay) before the
    /// session is opened early and the rest streams.
    pub early_update_limit: usize,
    /// Unstable ACP methods the embedder opts into (`"session/fork"`; see
    /// [`crate::protocol::OPT_IN_METHODS`]). Without it their call fails locally with
    /// `unsupported` and nothing is sent. `"protocol/v2"` makes `initialize` offer the draft
    /// ACP v2 (an agent answering 1 gets v1, as without it; docs/PROTOCOL.md).
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
    /// The embedder's log hook (off by default; the library never prints). [`crate::log`].
    pub log: crate::log::LogHook,
    /// Emit `progress` events for spawn, handshake and login (off by default: an event
    /// consumer that counts an agent's events sees none it did not ask for). The log hook gets
    /// the same steps either way.
    pub progress_events: bool,
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
            record: None,
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
            log: crate::log::LogHook::default(),
            progress_events: false,
        }
    }
}

/// The embeddable host. Cheap to clone; dropping the last clone shuts every agent down.
#[derive(Debug, Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

#[derive(Debug)]
pub(crate) struct HostInner {
    shared: Arc<HostShared>,
    events: Mutex<Option<Consumer>>,
    next_agent: AtomicU64,
    /// Connections opened (numbers the recordings of `record.file`).
    connections: AtomicU64,
    /// The host's weak view of its agents: it must not keep an agent alive.
    agents: Mutex<BTreeMap<u64, std::sync::Weak<AgentInner>>>,
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
            next_steer: AtomicU64::new(0),
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
                connections: AtomicU64::new(0),
                agents: Mutex::new(BTreeMap::new()),
                _alive: alive_tx,
            }),
        }
    }

    pub(crate) fn from_inner(inner: Arc<HostInner>) -> Host {
        Host { inner }
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
        let step = Step::new(Phase::Spawn);
        // The program (a replay: `replay FILE`), which status lines name.
        let what = match spec.replay {
            Some(_) => spec.display(),
            None => spec.command.clone(),
        };
        self.progress(id, step.report(Stage::Started, None, Some(what)))
            .await;
        let transport = match open_agent(&spec, id, cfg.stderr_tail_bytes) {
            Ok(t) => t,
            Err(e) => {
                self.progress(id, step.report(Stage::Failed, None, Some(e.to_string())))
                    .await;
                return Err(e);
            }
        };
        self.progress(id, step.report(Stage::Done, None, None))
            .await;
        self.start(id, transport, Some(spec)).await
    }

    /// Report a step of agent `id` as a `progress` event and to the log hook.
    pub(crate) async fn progress(&self, id: u64, p: crate::progress::Progress) {
        progress_to(&self.inner.shared, id, p).await;
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
        let restart = spec.as_ref().and_then(|s| s.restart.clone());
        let agent = self.open(id, transport, spec);
        if let Ok(mut agents) = self.inner.agents.lock() {
            agents.retain(|_, a| a.strong_count() > 0);
            agents.insert(id, agent.downgrade());
        }
        self.handshake(&agent).await?;
        if let Some(policy) = restart {
            crate::orchestration::supervisor::supervise(&agent, policy);
        }
        Ok(agent)
    }

    /// A new connection over `transport`, as agent `id` (not registered, not initialized).
    pub(crate) fn open(&self, id: u64, transport: Transport, spec: Option<AgentSpec>) -> Agent {
        let shared = Arc::new(AgentShared::default());
        let n = self.inner.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let recorder = self.inner.shared.config.record.as_ref().and_then(|config| {
            let log = &self.inner.shared.config.log;
            match crate::record::Recorder::start(config, id, n, spec.as_ref()) {
                Ok(r) => {
                    log.emit(crate::log::Level::Info, "record", Some(id), None, || {
                        format!("recording this connection to {}", r.path().display())
                    });
                    Some(r)
                }
                Err(e) => {
                    log.emit(crate::log::Level::Warn, "record", Some(id), None, || {
                        format!("not recording this connection: {e}")
                    });
                    None
                }
            }
        });
        let cmd = connection::start(
            id,
            self.inner.shared.clone(),
            shared.clone(),
            self.served_capabilities(),
            transport,
            recorder,
        );
        Agent::new(
            id,
            Link { cmd, shared },
            self.inner.shared.clone(),
            spec,
            Arc::downgrade(&self.inner),
        )
    }

    /// Spawn `spec`'s process as agent `id` (a supervised agent's restart).
    pub(crate) fn respawn(&self, id: u64, spec: &AgentSpec) -> Result<Agent> {
        let transport = open_agent(spec, id, self.inner.shared.config.stderr_tail_bytes)?;
        Ok(self.open(id, transport, Some(spec.clone())))
    }

    /// `initialize`; an agent that fails it is shut down.
    pub(crate) async fn handshake(&self, agent: &Agent) -> Result<()> {
        let cfg = &self.inner.shared.config;
        let caps = self.client_capabilities();
        let info =
            serde_json::json!({ "name": cfg.client_info.name, "version": cfg.client_info.version });
        let mut params = serde_json::json!({
            "protocolVersion": connection::PROTOCOL_VERSION,
            "clientCapabilities": caps.to_json(),
            "clientInfo": info,
        });
        if cfg
            .unstable
            .iter()
            .any(|u| u == crate::protocol::PROTOCOL_V2)
        {
            // Offer v2 with its own field names, and keep v1's beside them: an agent that only
            // speaks v1 answers 1 and reads the v1 fields as ever (the fallback loses nothing).
            params["protocolVersion"] = connection::PROTOCOL_VERSION_2.into();
            params["info"] = info;
            params["capabilities"] = caps.to_json_v2();
        }
        let offered = params["protocolVersion"].as_u64().unwrap_or(1) as u16;
        let step = Step::new(Phase::Handshake);
        let id = agent.id();
        self.progress(id, step.report(Stage::Started, None, None))
            .await;
        let answer = agent.request(
            "initialize",
            &params,
            ReqCtx::Initialize { offered },
            cfg.request_timeout,
        );
        let answer = waiting(
            &self.inner.shared,
            id,
            step,
            "the agent's `initialize` answer",
            answer,
        )
        .await;
        match answer {
            Ok(_) => {
                self.progress(id, step.report(Stage::Done, None, None))
                    .await;
                Ok(())
            }
            Err(e) => {
                self.progress(id, step.report(Stage::Failed, None, Some(e.to_string())))
                    .await;
                // Version mismatch, timeout, early death: the agent is not usable; take it down.
                agent.shutdown_because(Some(e.to_json())).await;
                Err(e)
            }
        }
    }

    /// Answer a pending permission request (from any task): `Some(option_id)` selects an offered
    /// option, `None` denies. An option id that was not offered denies and returns an error; a
    /// request that was already resolved returns `already_resolved` and changes nothing.
    ///
    /// `Ok`: the answer resolved the request; its [`Receipt`] says whether the answer's line
    /// reached the agent (`delivered`, `uncertain`, or `rejected` when the agent's stdin was
    /// closed before it was written), waiting at most [`crate::receipt::RECEIPT_WAIT`] for the
    /// write. `Err`: the answer was not used; the error's `data.receipt` is its `rejected`
    /// receipt ([`Error::receipt`]). `permission_resolved` carries the same receipt.
    pub async fn respond_permission(
        &self,
        request_id: u64,
        option_id: Option<String>,
    ) -> Result<Receipt> {
        self.respond_permission_inner(request_id, option_id)
            .await
            .map_err(|e| e.rejecting(RequestState::Unavailable))
    }

    async fn respond_permission_inner(
        &self,
        request_id: u64,
        option_id: Option<String>,
    ) -> Result<Receipt> {
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
    ///
    /// The receipt and errors as for [`Host::respond_permission`].
    pub async fn respond_elicitation(
        &self,
        request_id: u64,
        answer: ElicitationAnswer,
    ) -> Result<Receipt> {
        self.answer_elicitation(request_id, Ok(answer)).await
    }

    /// Refuse a pending elicitation because the embedder's answer was unusable (a face got
    /// something that is not an answer): the agent gets `cancel`, and `elicitation_resolved`
    /// says `invalid_answer` with `reason`. Errors as for [`Host::respond_elicitation`].
    pub async fn reject_elicitation(&self, request_id: u64, reason: String) -> Result<Receipt> {
        self.answer_elicitation(request_id, Err(reason)).await
    }

    async fn answer_elicitation(
        &self,
        request_id: u64,
        answer: std::result::Result<ElicitationAnswer, String>,
    ) -> Result<Receipt> {
        self.answer_elicitation_inner(request_id, answer)
            .await
            .map_err(|e| e.rejecting(RequestState::Unavailable))
    }

    /// What became of a permission request an answer is rejected for before it reaches the core
    /// (a face could not read the answer): `pending` while it still waits for an answer.
    pub fn permission_request_state(&self, request_id: u64) -> RequestState {
        let state = self
            .inner
            .shared
            .permissions
            .lock()
            .ok()
            .and_then(|m| m.get(&request_id).copied());
        self.pending_or_not(state)
    }

    /// As [`Host::permission_request_state`], for an elicitation request.
    pub fn elicitation_request_state(&self, request_id: u64) -> RequestState {
        self.pending_or_not(self.inner.shared.elicitation_state(request_id))
    }

    fn pending_or_not(&self, state: Option<(u64, bool)>) -> RequestState {
        match state {
            Some((agent, false)) if self.agent(agent).is_some() => RequestState::Pending,
            _ => RequestState::Unavailable,
        }
    }

    async fn answer_elicitation_inner(
        &self,
        request_id: u64,
        answer: std::result::Result<ElicitationAnswer, String>,
    ) -> Result<Receipt> {
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
        agents.get(&id)?.upgrade().map(Agent::from_inner)
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

/// Report a step of agent `id`: a `progress` event and a log record (`info`; `warn` when it
/// failed or keeps waiting).
pub(crate) async fn progress_to(shared: &HostShared, id: u64, p: crate::progress::Progress) {
    let level = match p.stage {
        Stage::Failed | Stage::Waiting => crate::log::Level::Warn,
        _ => crate::log::Level::Info,
    };
    shared
        .config
        .log
        .emit(level, p.phase.as_str(), Some(id), None, || {
            let mut m = format!(
                "{} {} after {} ms",
                p.phase.as_str(),
                p.stage.as_str(),
                p.elapsed.as_millis()
            );
            if let Some(msg) = &p.message {
                m.push_str(": ");
                m.push_str(msg);
            }
            m
        });
    if shared.config.progress_events && shared.bus.enabled() {
        shared
            .bus
            .emit(crate::events::PendingEvent::new(
                id,
                crate::events::EventKind::Progress,
                raw_json(&p.to_json()),
            ))
            .await;
    }
}

/// `fut`, reporting `waiting` progress every [`crate::progress::WAITING_EVERY`] until it ends.
pub(crate) async fn waiting<F: std::future::Future>(
    shared: &HostShared,
    id: u64,
    step: Step,
    what: &str,
    fut: F,
) -> F::Output {
    tokio::pin!(fut);
    let mut tick = tokio::time::interval(crate::progress::WAITING_EVERY);
    tick.tick().await;
    loop {
        tokio::select! {
            out = &mut fut => return out,
            _ = tick.tick() => {
                let p = step.report(Stage::Waiting, None, Some(format!("waiting for {what}")));
                progress_to(shared, id, p).await;
            }
        }
    }
}
